/* tests/test_contracode_moco.c — ContraCode encoders and MoCo (mlsys_contracode.h section 6, issue 25): InfoNCE against
   the spec's hand-computed cases (§7.4 test 15) and its gradient against central differences on random inputs; the
   momentum update and the queue pointer (test 16); the linear warm-up/decay schedule at given steps; the head + BOW
   gradient through the public API against central differences (with and without dropout); parameter counts of the
   paper's encoders (test 17, closed form); a tiny MoCo run on the functions of underscore.js (loss falls, acc@1 rises,
   two runs with one seed are bitwise equal, save at step 30 + load + continue = uninterrupted, 3 threads = serial);
   damaged and truncated checkpoints are named MLSYS_ERR_PARSE; `mlsys contracode train|embed` output, bitwise
   --stop-at/--resume, and error exits (needs build/mlsys). About 2 s. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#include <unistd.h>

#define DATA "tests/data/contracode/"

TEST(infonce_spec_cases) {
  float q1[] = {1, 0}, k1[] = {1, 0}, qu1[] = {0, 1, -1, 0};
  float q2[] = {.6f, .8f}, k2[] = {.8f, .6f}, qu2[] = {1, 0, 0, 1, -.6f, -.8f}, dq[2];
  double a1, a5, L;
  L = mlsys_contracode_infonce(q1, k1, qu1, 1, 2, 2, 1.0f, NULL, &a1, &a5);
  CHECK_NEAR(L, log(1 + exp(-1.0) + exp(-2.0)), 1e-7);
  CHECK_NEAR(L, 0.407606, 1e-5);
  CHECK_NEAR(a1, 1, 0);
  L = mlsys_contracode_infonce(q2, k2, qu2, 1, 3, 2, 0.5f, dq, &a1, &a5);
  CHECK_NEAR(L, 0.803231, 1e-5);
  CHECK_NEAR(dq[0], -0.458043, 1e-5);
  CHECK_NEAR(dq[1], -0.026308, 1e-5);
  CHECK_NEAR(a1, 1, 0);
  CHECK_NEAR(a5, 1, 0);
  /* a negative above the positive: acc@1 0, acc@5 1 */
  L = mlsys_contracode_infonce(q2, qu2 + 4, qu2, 1, 3, 2, 0.5f, NULL, &a1, &a5);
  CHECK(L > 3);
  CHECK_NEAR(a1, 0, 0);
  CHECK_NEAR(a5, 1, 0);
  CHECK(isnan(mlsys_contracode_infonce(q1, k1, qu1, 1, 2, 2, 0.0f, NULL, NULL, NULL)));
  CHECK(isnan(mlsys_contracode_infonce(NULL, k1, qu1, 1, 2, 2, 1.0f, NULL, NULL, NULL)));
}

TEST(infonce_gradient_matches_finite_differences) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 5);
  for (trial = 0; trial < 20; trial++) {
    int B = 1 + (int)mlsys_rng_below(&r, 4), K = (int)mlsys_rng_below(&r, 9), d = 1 + (int)mlsys_rng_below(&r, 6), i;
    float q[4 * 6], k[4 * 6], qu[8 * 6], dq[4 * 6], T = 0.05f + (float)mlsys_rng_uniform(&r);
    const float h = 1.0f / 1024;
    double worst = 0;
    for (i = 0; i < B * d; i++) q[i] = (float)mlsys_rng_normal(&r) * 0.5f, k[i] = (float)mlsys_rng_normal(&r) * 0.5f;
    for (i = 0; i < K * d; i++) qu[i] = (float)mlsys_rng_normal(&r) * 0.5f;
    mlsys_contracode_infonce(q, k, qu, B, K, d, T, dq, NULL, NULL);
    for (i = 0; i < B * d; i++) {
      float s = q[i];
      double lp, lm, fd;
      q[i] = s + h, lp = mlsys_contracode_infonce(q, k, qu, B, K, d, T, NULL, NULL, NULL);
      q[i] = s - h, lm = mlsys_contracode_infonce(q, k, qu, B, K, d, T, NULL, NULL, NULL);
      q[i] = s;
      fd = (lp - lm) / (2 * h);
      if (fabs(fd - dq[i]) / (1 + fabs(fd)) > worst) worst = fabs(fd - dq[i]) / (1 + fabs(fd));
    }
    CHECK_MSG(worst < 2e-4, "trial %d (B %d K %d d %d T %g): worst relative error %g", trial, B, K, d, T, worst);
  }
}

TEST(momentum_and_queue_pointer) {
  float pk = 1, pq = 0, queue[6];
  float keys[8];
  int n, ptr = 0, seq[4], i;
  for (n = 1; n <= 693; n++) {
    mlsys__moco_momentum(&pk, &pq, 1, 0.999f);
    if (n == 1) CHECK_NEAR(pk, 0.999, 1e-7);
  }
  CHECK_NEAR(pk, pow(0.999, 693), 1e-5);
  CHECK_NEAR(pk, 0.5, 1e-3);
  for (i = 0; i < 8; i++) keys[i] = (float)(i + 1);
  for (i = 0; i < 6; i++) queue[i] = 0;
  for (i = 0; i < 4; i++) seq[i] = ptr = mlsys__moco_enqueue(queue, 6, 1, ptr, keys + 2 * i, 2);
  CHECK_EQ_INT(seq[0], 2);
  CHECK_EQ_INT(seq[1], 4);
  CHECK_EQ_INT(seq[2], 0);
  CHECK_EQ_INT(seq[3], 2);
  {
    const float want[6] = {7, 8, 3, 4, 5, 6};
    for (i = 0; i < 6; i++) CHECK_NEAR(queue[i], want[i], 0);
  }
}

/* Through moco_step: the pointer walks 0→2→4→0, the enqueued rows are unit keys, the key encoder moves by momentum
   before the keys, and K not a multiple of B is refused. */
TEST(moco_step_queue_and_momentum) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m;
  mlsys_contracode_moco_stats st;
  int32_t ids[2 * 3] = {1, 2, 3, 4, 5, 0};
  int lens[2] = {3, 2}, s, i;
  double gap = 0;
  CHECK_OK(mlsys_contracode_enc_preset("bow", 10, &ec));
  ec.d_model = 8, ec.d_rep = 4;
  mlsys_contracode_moco_defaults(&mc);
  mc.K = 6, mc.lr = 0, mc.warmup = 0;
  REQUIRE(mlsys_contracode_moco_new(&ec, &mc, 1, NULL, &m) == MLSYS_OK);
  for (i = 0; i < (int)m->k.nparams; i++) m->k.params[i] = m->q.params[i] + 1;
  for (s = 0; s < 3; s++) {
    CHECK_OK(mlsys_contracode_moco_step(m, ids, lens, ids, lens, 2, 3, &st));
    CHECK_EQ_INT(st.queue_ptr, (2 * (s + 1)) % 6);
  }
  for (i = 0; i < (int)m->k.nparams; i++) gap = fmax(gap, fabs(m->k.params[i] - m->q.params[i] - pow(0.999, 3)));
  CHECK_MSG(gap < 1e-5, "key - query after 3 steps differs from 0.999^3 by %g", gap);
  for (i = 0; i < 6; i++) {
    double n2 = 0;
    int c;
    for (c = 0; c < 4; c++) n2 += (double)m->queue[i * 4 + c] * m->queue[i * 4 + c];
    CHECK_NEAR(n2, 1, 1e-5);
  }
  CHECK(mlsys_contracode_moco_step(m, ids, lens, ids, lens, 4, 1, &st) == MLSYS_ERR_ARG);  /* 6 % 4 */
  CHECK(strstr(mlsys_last_error(), "multiple") != NULL);
  lens[1] = 0;
  CHECK(mlsys_contracode_moco_step(m, ids, lens, ids, lens, 2, 3, &st) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "lens[1]") != NULL);
  mlsys_contracode_moco_free(m);
}

/* The query side of a MoCo step (encoder, L2 normalization, InfoNCE against fixed keys and queue): its gradient
   against central differences of the loss in every parameter. */
TEST(moco_query_gradient_matches_finite_differences) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m;
  int32_t ids[3 * 4] = {1, 2, 3, 0, 4, 4, 5, 6, 7, 1, 0, 0};
  int lens[3] = {3, 4, 2}, i, bad = 0;
  float keys[3 * 3], nk[3];
  double loss, a1, a5;
  mlsys_rng r;
  const float h = 1.0f / 2048;
  mlsys_contracode_enc_preset("bow", 9, &ec);
  ec.d_model = 4, ec.d_rep = 3, ec.dropout = 0;
  mlsys_contracode_moco_defaults(&mc);
  mc.K = 6, mc.T = 0.5f;
  REQUIRE(mlsys_contracode_moco_new(&ec, &mc, 4, NULL, &m) == MLSYS_OK);
  mlsys_rng_seed(&r, 8);
  for (i = 0; i < 9; i++) keys[i] = (float)mlsys_rng_normal(&r);
  mlsys__moco_normalize(keys, nk, 3, 3);
  CHECK_OK(mlsys__moco_query_grad(m, ids, lens, 3, 4, keys, &loss, &a1, &a5));
  for (i = 0; i < (int)m->q.nparams; i++) {
    float s = m->q.params[i], g = m->q.grads[i];
    double lp, lm, fd;
    m->q.params[i] = s + h;
    mlsys__moco_query_grad(m, ids, lens, 3, 4, keys, &lp, &a1, &a5);
    m->q.params[i] = s - h;
    mlsys__moco_query_grad(m, ids, lens, 3, 4, keys, &lm, &a1, &a5);
    m->q.params[i] = s;
    fd = (lp - lm) / (2 * h);
    if (fabs(fd - g) > 3e-3 * (1 + fabs(fd)) && bad++ < 5) CHECK_MSG(0, "param %d: analytic %g, finite difference %g", i, g, fd);
  }
  mlsys_contracode_moco_free(m);
}

TEST(linear_schedule_values) {
  mlsys_contracode_moco_cfg c;
  mlsys_contracode_moco_defaults(&c);
  c.lr = 1, c.warmup = 10, c.total_steps = 110;
  CHECK_NEAR(mlsys__moco_lr(&c, 0), 0, 0);
  CHECK_NEAR(mlsys__moco_lr(&c, 5), 0.5, 1e-12);
  CHECK_NEAR(mlsys__moco_lr(&c, 10), 1, 1e-12);
  CHECK_NEAR(mlsys__moco_lr(&c, 60), 0.5, 1e-12);
  CHECK_NEAR(mlsys__moco_lr(&c, 109), 0.01, 1e-12);
  CHECK_NEAR(mlsys__moco_lr(&c, 110), 0, 0);
  CHECK_NEAR(mlsys__moco_lr(&c, 500), 0, 0);
  mlsys_contracode_moco_defaults(&c);
  CHECK_NEAR(mlsys__moco_lr(&c, 2500), 0.5 * c.lr, 1e-15);
  CHECK_NEAR(mlsys__moco_lr(&c, 302500), 0.5 * c.lr, 1e-15);
}

/* L = Σ out·w for the head + BOW body; the analytic gradient of every parameter against central differences. The
   model is piecewise quadratic in each parameter, so a central difference is exact away from ReLU kinks. */
static void enc_fd(float dropout, int project, int pool) {
  mlsys_contracode_enc_cfg c;
  mlsys_contracode_enc e;
  mlsys_rng r;
  int32_t ids[3 * 5] = {1, 4, 4, 2, 0, 7, 7, 7, 7, 7, 3, 2, 0, 1, 6};
  int lens[3] = {4, 5, 2}, B = 3, T = 5, od, i, bad = 0;
  float out[3 * 8], w[3 * 8];
  const float h = 1.0f / 256;
  CHECK_OK(mlsys_contracode_enc_preset("bow", 8, &c));
  c.d_model = 5, c.d_rep = 3, c.dropout = dropout, c.pool = pool;
  REQUIRE(mlsys_contracode_enc_init(&e, &c, 3, NULL) == MLSYS_OK);
  od = project ? c.d_rep : mlsys_contracode_enc_pooled_dim(&c);
  mlsys_rng_seed(&r, 9);
  for (i = 0; i < B * od; i++) w[i] = (float)mlsys_rng_normal(&r);
  mlsys_rng_seed(&r, 77);
  CHECK_OK(mlsys_contracode_enc_forward(&e, ids, lens, B, T, project, 1, &r, out));
  mlsys_contracode_enc_zero_grad(&e);
  CHECK_OK(mlsys_contracode_enc_backward(&e, w));
  for (i = 0; i < (int)e.nparams; i++) {
    float s = e.params[i];
    double lp = 0, lm = 0, fd;
    int j;
    e.params[i] = s + h;
    mlsys_rng_seed(&r, 77);
    mlsys_contracode_enc_forward(&e, ids, lens, B, T, project, 1, &r, out);
    for (j = 0; j < B * od; j++) lp += (double)out[j] * w[j];
    e.params[i] = s - h;
    mlsys_rng_seed(&r, 77);
    mlsys_contracode_enc_forward(&e, ids, lens, B, T, project, 1, &r, out);
    for (j = 0; j < B * od; j++) lm += (double)out[j] * w[j];
    e.params[i] = s;
    fd = (lp - lm) / (2 * h);
    if (fabs(fd - e.grads[i]) > 2e-3 * (1 + fabs(fd)) && bad++ < 5)
      CHECK_MSG(0, "param %d: analytic %g, finite difference %g", i, e.grads[i], fd);
  }
  /* padding rows (id 0 at a masked position) and unused ids get nothing under MEAN_NONPAD */
  if (pool == MLSYS_CONTRACODE_POOL_MEAN_NONPAD)
    for (i = 0; i < 5; i++) CHECK_NEAR(e.grads[0 * 5 + i], 0, 0);
  mlsys_contracode_enc_free(&e);
}
TEST(head_and_bow_gradient_matches_finite_differences) {
  enc_fd(0, 1, MLSYS_CONTRACODE_POOL_MEAN_NONPAD);
  enc_fd(0.3f, 1, MLSYS_CONTRACODE_POOL_MEAN_NONPAD);
  enc_fd(0.3f, 1, MLSYS_CONTRACODE_POOL_MEAN_ALL);
  enc_fd(0, 0, MLSYS_CONTRACODE_POOL_MEAN_NONPAD);
}

TEST(encoder_errors_are_named) {
  mlsys_contracode_enc_cfg c;
  mlsys_contracode_enc e;
  int32_t ids[4] = {1, 2, 9, 0};
  int lens[2] = {2, 1};
  float out[2 * 64];
  CHECK(mlsys_contracode_enc_preset("lstm", 100, &c) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "'lstm'") != NULL);
  CHECK_OK(mlsys_contracode_enc_preset("bow", 9, &c));
  c.max_len = 2;
  REQUIRE(mlsys_contracode_enc_init(&e, &c, 1, NULL) == MLSYS_OK);
  CHECK(mlsys_contracode_enc_forward(&e, ids, lens, 2, 2, 1, 0, NULL, out) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "ids[1][0] = 9") != NULL);
  ids[2] = 3;
  CHECK(mlsys_contracode_enc_forward(&e, ids, lens, 1, 4, 1, 0, NULL, out) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "max_len") != NULL);
  lens[1] = 3;
  CHECK(mlsys_contracode_enc_forward(&e, ids, lens, 2, 2, 1, 0, NULL, out) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "lens[1] = 3") != NULL);
  CHECK(mlsys_contracode_enc_backward(&e, out) == MLSYS_ERR_ARG); /* no train forward */
  mlsys_contracode_enc_free(&e);
  /* every body is built in, and its own parameter count is the closed form enc_nparams reports (enc_init checks it) */
  {
    static const char *const names[] = {"tiny-transformer", "tiny-bilstm", "bow"};
    int k;
    for (k = 0; k < 3; k++) {
      CHECK_OK(mlsys_contracode_enc_preset(names[k], 100, &c));
      CHECK_OK(mlsys_contracode_enc_init(&e, &c, 1, NULL));
      CHECK(e.nparams == mlsys_contracode_enc_nparams(&c, 1));
      mlsys_contracode_enc_free(&e);
    }
  }
}

TEST(parameter_counts_test17) {
  mlsys_contracode_enc_cfg c;
  CHECK_OK(mlsys_contracode_enc_preset("transformer", 8000, &c));
  CHECK(mlsys_contracode_enc_nparams(&c, 0) == 23011328);
  CHECK(mlsys_contracode_enc_nparams(&c, 1) == 23011328 + 328320);
  CHECK_OK(mlsys_contracode_enc_preset("bilstm", 8000, &c));
  CHECK_EQ_INT(mlsys_contracode_enc_pooled_dim(&c), 2048);
  CHECK(mlsys_contracode_enc_nparams(&c, 0) == 14598144);
  CHECK(mlsys_contracode_enc_nparams(&c, 1) == 14598144 + 1114752);
  CHECK_OK(mlsys_contracode_enc_preset("tiny-transformer", 8000, &c));
  CHECK(mlsys_contracode_enc_nparams(&c, 0) == 1420800);
  CHECK(mlsys_contracode_enc_nparams(&c, 1) == 1420800 + 24768);
  CHECK_OK(mlsys_contracode_enc_preset("bow", 1000, &c));
  CHECK(mlsys_contracode_enc_nparams(&c, 1) == 1000 * 128 + 128 * 128 + 128 + 64 * 128 + 64);
  c.pool = MLSYS_CONTRACODE_POOL_LSTM_HIDDEN;
  CHECK(mlsys_contracode_enc_nparams(&c, 1) == 0);
}

/* ---- the tiny MoCo run: the functions of underscore.js, 3 SAFE variants each, Viterbi ids, BOW ---- */
#define NV 4
#define TT 48
typedef struct {
  int n;
  int32_t (*ids)[NV][TT];
  int (*len)[NV];
} corpus_t;
static corpus_t corpus;
static int corpus_ready;

static int load_corpus(void) {
  char *src = NULL;
  size_t n;
  mlsys_contracode_js_ast ast;
  mlsys_contracode_fn_span *fs = NULL;
  mlsys_contracode_sp *sp = NULL;
  mlsys_contracode_aug_cfg ac;
  int nf = 0, i, cap = 160;
  if (corpus_ready) return corpus.n > 0;
  corpus_ready = 1;
  if (mlsys_read_file(DATA "train_underscore.js", &src, &n) != MLSYS_OK) return 0;
  if (mlsys_contracode_sp_load(DATA "js_identity_1k.model", &sp) != MLSYS_OK) return 0;
  if (mlsys_contracode_js_parse(src, n, MLSYS_CONTRACODE_JS_SCRIPT, &ast) != MLSYS_OK) return 0;
  mlsys_contracode_js_functions(&ast, &fs, &nf);
  mlsys_contracode_aug_preset(MLSYS_CONTRACODE_AUG_SAFE, &ac);
  corpus.ids = calloc((size_t)cap, sizeof *corpus.ids);
  corpus.len = calloc((size_t)cap, sizeof *corpus.len);
  for (i = 0; i < nf && corpus.n < cap; i++) {
    char *u;
    size_t un;
    mlsys_contracode_strset vs;
    int v;
    if (fs[i].nlines < 3 || mlsys_contracode_fn_unit(src, n, &fs[i], &u, &un) != MLSYS_OK) continue;
    if (mlsys_contracode_augment_variants(u, un, &ac, 8, 7, &vs) == MLSYS_OK && vs.n >= 2) {
      for (v = 0; v < NV; v++) {
        char *norm;
        size_t nn, ni, t;
        int32_t *ids;
        const char *s = vs.s[v % vs.n];
        mlsys_contracode_normalize_program(s, strlen(s), &norm, &nn);
        mlsys_contracode_sp_encode(sp, norm, nn, &ids, &ni, NULL);
        if (ni > TT) ni = TT;
        for (t = 0; t < TT; t++) corpus.ids[corpus.n][v][t] = t < ni ? ids[t] : 3;
        corpus.len[corpus.n][v] = ni ? (int)ni : 1;
        free(ids);
        free(norm);
      }
      corpus.n++;
    }
    if (vs.s) mlsys_contracode_strset_free(&vs);
    free(u);
  }
  free(fs);
  mlsys_contracode_js_free(&ast);
  mlsys_contracode_sp_free(sp);
  free(src);
  return corpus.n > 0;
}

/* Steps [from, to) of a run: the batch of step s is drawn from an RNG seeded by s alone, so a resumed run sees the
   same data. */
static void run_steps(mlsys_contracode_moco *m, int from, int to, double *loss, double *acc) {
  int32_t iq[8 * TT], ik[8 * TT];
  int lq[8], lk[8], s, b;
  for (s = from; s < to; s++) {
    mlsys_rng r;
    mlsys_contracode_moco_stats st;
    mlsys_rng_seed(&r, 1000 + (uint64_t)s);
    for (b = 0; b < 8; b++) {
      int f = (int)mlsys_rng_below(&r, (uint64_t)corpus.n), v1 = (int)mlsys_rng_below(&r, NV), v2 = (v1 + 1 + (int)mlsys_rng_below(&r, NV - 1)) % NV;
      memcpy(iq + b * TT, corpus.ids[f][v1], sizeof(int32_t) * TT), lq[b] = corpus.len[f][v1];
      memcpy(ik + b * TT, corpus.ids[f][v2], sizeof(int32_t) * TT), lk[b] = corpus.len[f][v2];
    }
    CHECK_OK(mlsys_contracode_moco_step(m, iq, lq, ik, lk, 8, TT, &st));
    loss[s] = st.loss, acc[s] = st.acc1;
  }
}
static mlsys_contracode_moco *tiny_moco_pool(mlsys_pool *pool);
static mlsys_contracode_moco *tiny_moco(void) { return tiny_moco_pool(NULL); }
static mlsys_contracode_moco *tiny_moco_pool(mlsys_pool *pool) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m = NULL;
  mlsys_contracode_enc_preset("bow", 1000, &ec);
  ec.d_model = 32, ec.d_rep = 16, ec.max_len = TT, ec.pad_id = 3;
  mlsys_contracode_moco_defaults(&mc);
  mc.K = 64, mc.lr = 3e-2f, mc.warmup = 5, mc.total_steps = 60, mc.m = 0.99f;
  if (mlsys_contracode_moco_new(&ec, &mc, 42, pool, &m) != MLSYS_OK) return NULL;
  return m;
}

TEST(tiny_moco_learns_and_resumes_bitwise) {
  double l1[60], a1[60], l2[60], a2[60], first = 0, last = 0, af = 0, al = 0;
  mlsys_contracode_moco *m, *m2;
  char path[64];
  int i;
  if (!load_corpus()) SKIP_DEP("tests/data/contracode fixtures missing (run from the repository root)");
  printf("    %d functions\n", corpus.n);
  REQUIRE((m = tiny_moco()) != NULL);
  run_steps(m, 0, 60, l1, a1);
  if (getenv("MOCO_CURVE")) for (i = 0; i < 60; i++) printf("    %d %.4f %.3f\n", i, l1[i], a1[i]);
  /* the start is step K/B = 8, the first whose queue holds only real keys: before it the queue's random vectors are
     easy negatives and the loss rises as they leave, whatever the encoder learns */
  for (i = 0; i < 5; i++) first += l1[8 + i] / 5, last += l1[55 + i] / 5;
  for (i = 0; i < 10; i++) af += a1[8 + i] / 10, al += a1[50 + i] / 10;
  printf("    loss (steps 8-12 -> 55-59) %.4f -> %.4f, acc@1 (8-17 -> 50-59) %.3f -> %.3f\n", first, last, af, al);
  CHECK(last < first);
  CHECK(al > af);
  /* again with the same seed, saving at step 30 and resuming from the file */
  snprintf(path, sizeof path, "/tmp/mlsys_moco_%d.ckpt", (int)getpid());
  REQUIRE((m2 = tiny_moco()) != NULL);
  run_steps(m2, 0, 30, l2, a2);
  CHECK_OK(mlsys_contracode_moco_save(m2, path));
  mlsys_contracode_moco_free(m2);
  REQUIRE(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_OK);
  run_steps(m2, 30, 60, l2, a2);
  CHECK(memcmp(l1, l2, sizeof l1) == 0);
  CHECK(memcmp(m->q.params, m2->q.params, m->q.nparams * sizeof(float)) == 0);
  CHECK(memcmp(m->k.params, m2->k.params, m->k.nparams * sizeof(float)) == 0);
  CHECK(memcmp(m->queue, m2->queue, (size_t)64 * 16 * sizeof(float)) == 0);
  mlsys_contracode_moco_free(m2);
  unlink(path);
  mlsys_contracode_moco_free(m);
}

/* the head's matmuls on 3 threads: the same bits as serial */
TEST(tiny_moco_threads_bitwise) {
  double l1[12], a1[12], l2[12], a2[12];
  mlsys_contracode_moco *m, *m2;
  mlsys_pool *pool;
  if (!load_corpus()) SKIP_DEP("tests/data/contracode fixtures missing (run from the repository root)");
  REQUIRE(mlsys_pool_create(3, &pool) == MLSYS_OK);
  REQUIRE((m = tiny_moco()) != NULL);
  REQUIRE((m2 = tiny_moco_pool(pool)) != NULL);
  run_steps(m, 0, 12, l1, a1);
  run_steps(m2, 0, 12, l2, a2);
  CHECK(memcmp(l1, l2, sizeof l1) == 0);
  CHECK(memcmp(m->q.params, m2->q.params, m->q.nparams * sizeof(float)) == 0);
  mlsys_contracode_moco_free(m);
  mlsys_contracode_moco_free(m2);
  mlsys_pool_free(pool);
}

/* MoCo over the Transformer and BiLSTM bodies through the API (their gradients are checked in
   test_contracode_encoder.c and test_contracode_bilstm.c): finite losses, a resume from a checkpoint and a
   2-thread pool give the same bits as one serial run */
static mlsys_contracode_moco *small_moco(const char *preset, mlsys_pool *pool) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m = NULL;
  if (mlsys_contracode_enc_preset(preset, 1000, &ec) != MLSYS_OK) return NULL;
  ec.d_model = 16, ec.d_rep = 8, ec.n_layers = 1, ec.n_heads = 2, ec.d_ff = 32, ec.max_len = TT, ec.pad_id = 3;
  mlsys_contracode_moco_defaults(&mc);
  mc.K = 16, mc.lr = 1e-2f, mc.warmup = 2, mc.total_steps = 8, mc.m = 0.9f;
  if (mlsys_contracode_moco_new(&ec, &mc, 7, pool, &m) != MLSYS_OK) return NULL;
  return m;
}
TEST(moco_transformer_and_bilstm_resume_and_threads_bitwise) {
  static const char *const presets[] = {"tiny-transformer", "tiny-bilstm"};
  mlsys_pool *pool;
  int k, i;
  if (!load_corpus()) SKIP_DEP("tests/data/contracode fixtures missing (run from the repository root)");
  REQUIRE(mlsys_pool_create(2, &pool) == MLSYS_OK);
  for (k = 0; k < 2; k++) {
    double l1[8], a1[8], l2[8], a2[8], l3[8], a3[8];
    mlsys_contracode_moco *m, *m2, *m3;
    char path[80];
    REQUIRE((m = small_moco(presets[k], NULL)) != NULL);
    REQUIRE((m3 = small_moco(presets[k], pool)) != NULL);
    run_steps(m, 0, 8, l1, a1);
    run_steps(m3, 0, 8, l3, a3);
    for (i = 0; i < 8; i++) CHECK(isfinite(l1[i]) && l1[i] > 0);
    printf("    %s: loss %.4f -> %.4f\n", presets[k], l1[0], l1[7]);
    CHECK(memcmp(l1, l3, sizeof l1) == 0);
    CHECK(memcmp(m->q.params, m3->q.params, m->q.nparams * sizeof(float)) == 0);
    snprintf(path, sizeof path, "/tmp/mlsys_moco_%s_%d.ckpt", presets[k], (int)getpid());
    REQUIRE((m2 = small_moco(presets[k], NULL)) != NULL);
    run_steps(m2, 0, 4, l2, a2);
    CHECK_OK(mlsys_contracode_moco_save(m2, path));
    mlsys_contracode_moco_free(m2);
    REQUIRE(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_OK);
    run_steps(m2, 4, 8, l2, a2);
    CHECK(memcmp(l1, l2, sizeof l1) == 0);
    CHECK(memcmp(m->q.params, m2->q.params, m->q.nparams * sizeof(float)) == 0);
    CHECK(memcmp(m->k.params, m2->k.params, m->k.nparams * sizeof(float)) == 0);
    unlink(path);
    mlsys_contracode_moco_free(m);
    mlsys_contracode_moco_free(m2);
    mlsys_contracode_moco_free(m3);
  }
  mlsys_pool_free(pool);
}

TEST(damaged_checkpoints_are_named_errors) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m, *m2 = NULL;
  char path[64], *data;
  size_t n;
  FILE *f;
  mlsys_contracode_enc_preset("bow", 20, &ec);
  ec.d_model = 4, ec.d_rep = 3;
  mlsys_contracode_moco_defaults(&mc);
  mc.K = 4;
  REQUIRE(mlsys_contracode_moco_new(&ec, &mc, 1, NULL, &m) == MLSYS_OK);
  snprintf(path, sizeof path, "/tmp/mlsys_moco_bad_%d.ckpt", (int)getpid());
  CHECK_OK(mlsys_contracode_moco_save(m, path));
  REQUIRE(mlsys_read_file(path, &data, &n) == MLSYS_OK);
  /* a flipped byte in the queue */
  data[n - 10] ^= 1;
  f = fopen(path, "wb"), fwrite(data, 1, n, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "checksum") != NULL);
  data[n - 10] ^= 1;
  /* truncated inside the parameters */
  f = fopen(path, "wb"), fwrite(data, 1, 200, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "truncated in the query encoder") != NULL);
  f = fopen(path, "wb"), fwrite(data, 1, n - 2, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "truncated in the checksum") != NULL);
  f = fopen(path, "wb"), fwrite(data, 1, 30, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "truncated in the configs") != NULL);
  /* a temperature of 0 (the moco config's T, after the 13 ints and dropout, momentum) */
  {
    char *d2 = malloc(n);
    float zero = 0;
    memcpy(d2, data, n);
    memcpy(d2 + 12 + 13 * 4 + 2 * 4, &zero, 4);
    f = fopen(path, "wb"), fwrite(d2, 1, n, f), fclose(f);
    CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
    CHECK_MSG(strstr(mlsys_last_error(), "damaged header") && strstr(mlsys_last_error(), "temperature"), "%s", mlsys_last_error());
    free(d2);
  }
  /* a nonsense config (d_model 0) */
  data[20] = 0, data[21] = data[22] = data[23] = 0;
  f = fopen(path, "wb"), fwrite(data, 1, n, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "damaged header") != NULL);
  data[0] = 'X';
  f = fopen(path, "wb"), fwrite(data, 1, n, f), fclose(f);
  CHECK(mlsys_contracode_moco_load(path, NULL, &m2) == MLSYS_ERR_PARSE);
  CHECK(strstr(mlsys_last_error(), "magic") != NULL);
  CHECK(m2 == NULL);
  CHECK(mlsys_contracode_moco_load("/nonexistent/x.ckpt", NULL, &m2) == MLSYS_ERR_IO);
  unlink(path);
  free(data);
  mlsys_contracode_moco_free(m);
}

/* ---- the CLI ---- */
static int count_of(const char *s, const char *sub) {
  int n = 0;
  while (s && (s = strstr(s, sub))) n++, s++;
  return n;
}
#define TRAIN_ARGS "contracode train --functions " DATA "train_underscore.js --vocab " DATA "js_identity_1k.model --batch 4 --queue 16 --max-len 40 --lr 0.01 --seed 3"

TEST(cli_train_resume_and_embed) {
  char a[160], b[160], args[1200];
  char *da = NULL, *db = NULL;
  size_t na = 0, nb = 0;
  run_result r;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  if (access(DATA "train_underscore.js", R_OK) != 0) SKIP_DEP("run from the repository root");
  snprintf(a, sizeof a, "/tmp/mlsys_cc_train_a_%d.ckpt", (int)getpid());
  snprintf(b, sizeof b, "/tmp/mlsys_cc_train_b_%d.ckpt", (int)getpid());
  snprintf(args, sizeof args, TRAIN_ARGS " --steps 12 --warmup 1 --out %s --json", a);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK(r.out && strstr(r.out, "\"steps\": 12") && strstr(r.out, "\"first_loss\"") && strstr(r.out, "\"functions\": "));
  CHECK_EQ_INT(count_of(r.out, "\"step\": "), 12);
  run_free(&r);
  /* two runs with one seed: the same checkpoint, byte for byte */
  snprintf(args, sizeof args, TRAIN_ARGS " --steps 12 --warmup 1 --out %s", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  CHECK(mlsys_read_file(a, &da, &na) == MLSYS_OK && mlsys_read_file(b, &db, &nb) == MLSYS_OK);
  CHECK_MSG(na == nb && da && db && !memcmp(da, db, na), "two runs with one seed differ");
  free(da), free(db), da = db = NULL;
  unlink(b);
  /* stopped at step 5 (checkpoints every 2 steps on the way), then --resume to 12: the uninterrupted checkpoint */
  snprintf(args, sizeof args, TRAIN_ARGS " --steps 12 --warmup 1 --out %s --stop-at 5 --ckpt-every 2", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  snprintf(args, sizeof args, TRAIN_ARGS " --steps 12 --warmup 1 --out %s --resume --json", b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK(r.out && strstr(r.out, "\"start_step\": 5"));
  run_free(&r);
  CHECK(mlsys_read_file(a, &da, &na) == MLSYS_OK && mlsys_read_file(b, &db, &nb) == MLSYS_OK);
  CHECK_MSG(na == nb && da && db && !memcmp(da, db, na), "6 steps + --resume to 12 differs from 12 steps");
  free(da), free(db);
  /* embed: one vector per function, pooled (128) or projected (64) */
  snprintf(args, sizeof args, "contracode embed --model %s --vocab " DATA "js_identity_1k.model " DATA "train_underscore.js --json", a);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK(r.out && strstr(r.out, "{\"dim\": 128, \"projected\": false"));
  CHECK(count_of(r.out, "\"vector\"") > 100);
  run_free(&r);
  snprintf(args, sizeof args, "contracode embed --model %s --vocab " DATA "js_identity_1k.model " DATA "train_underscore.js --project", a);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK(r.out && strstr(r.out, DATA "train_underscore.js:") == r.out);
  if (r.out) {
    const char *tab = strchr(r.out, '\t'), *nl = strchr(r.out, '\n');
    int nums = 1;
    for (; tab && tab < nl; tab++) nums += *tab == ' ';
    CHECK_EQ_INT(nums, 64);
  }
  run_free(&r);
  /* the trained encoder and its untrained twin as clone-detection scorers (the offline set of Debian's lodash-es,
     underscore and ramda, installed by scripts/install-deps.sh) */
  if (access("/usr/share/nodejs/ramda/es", R_OK) == 0) {
    snprintf(args, sizeof args, "contracode eval --scorer model:%s --vocab " DATA "js_identity_1k.model --json", a);
    r = run(args);
    CHECK_EQ_INT(r.code, 0);
    CHECK(r.out && strstr(r.out, "\"scorer\": \"model:") && strstr(r.out, "\"programs\": 395"));
    run_free(&r);
    snprintf(args, sizeof args, "contracode eval --scorer untrained:%s --vocab " DATA "js_identity_1k.model --json", a);
    r = run(args);
    CHECK_EQ_INT(r.code, 0);
    CHECK(r.out && strstr(r.out, "\"scorer\": \"untrained:"));
    run_free(&r);
    /* a vocabulary of another size than the encoder's is a named error, not a crash */
    snprintf(args, sizeof args, "contracode eval --scorer model:%s --vocab tools/contracode_js8k.model", a);
    r = run(args);
    CHECK_EQ_INT(r.code, 1);
    CHECK(r.err && strstr(r.err, "was trained with 1000 pieces"));
    run_free(&r);
    r = run("contracode eval --scorer model:/nonexistent.ckpt");
    CHECK_EQ_INT(r.code, 1);
    CHECK(r.err && strstr(r.err, "/nonexistent.ckpt"));
    run_free(&r);
    r = run("contracode eval --scorer modle:x");
    CHECK_EQ_INT(r.code, 2);
    run_free(&r);
  } else if (getenv("CI")) {
    CHECK_MSG(0, "node-ramda is not installed (scripts/install-deps.sh installs it)");
  }
  unlink(a);
  unlink(b);
}

TEST(cli_train_embed_errors) {
  char args[1200], bad[160];
  run_result r;
  FILE *f;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  snprintf(bad, sizeof bad, "/tmp/mlsys_cc_bad_%d.jsonl", (int)getpid());
  r = run(TRAIN_ARGS " --steps 2");
  CHECK_EQ_INT(r.code, 2);
  CHECK(r.err && strstr(r.err, "--out"));
  run_free(&r);
  r = run(TRAIN_ARGS " --steps 2 --queue 10 --out /tmp/x.ckpt");
  CHECK_EQ_INT(r.code, 2);
  CHECK(r.err && strstr(r.err, "multiple"));
  run_free(&r);
  r = run(TRAIN_ARGS " --steps 2 --encoder lstm --out /tmp/x.ckpt");
  CHECK_EQ_INT(r.code, 2);
  CHECK(r.err && strstr(r.err, "'lstm'"));
  run_free(&r);
  r = run("contracode train --functions /nonexistent.js --vocab " DATA "js_identity_1k.model --out /tmp/x.ckpt");
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "nonexistent"));
  run_free(&r);
  f = fopen(bad, "w");
  fputs("{\"src\": \"function f(a) { return a + 1; }\"}\n{\"pkg\": \"x\"}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "contracode train --functions %s --vocab " DATA "js_identity_1k.model --out /tmp/x.ckpt", bad);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "line 2") && strstr(r.err, "\"src\""));
  run_free(&r);
  f = fopen(bad, "w");
  fputs("not a checkpoint at all", f);
  fclose(f);
  snprintf(args, sizeof args, "contracode embed --model %s --vocab " DATA "js_identity_1k.model " DATA "train_underscore.js", bad);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "magic"));
  run_free(&r);
  r = run("contracode embed --vocab " DATA "js_identity_1k.model " DATA "train_underscore.js");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  unlink(bad);
}

TEST_MAIN()
