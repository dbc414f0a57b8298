/* tests/test_relm_train.c — GPT-2 training in C (mlsys_relm.h section 3.6, issue 24): the backward pass against
   central finite differences of a double-precision reference written here (its own loops and offsets), the loss
   against the forward's logits, thread-count independence, one AdamW step against hand arithmetic, the cosine
   schedule, loss decreasing on a tiny corpus, resume equal to an uninterrupted run, damaged checkpoint files. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include <unistd.h>

/* ---- the reference: mean cross-entropy of a GPT-2 in double over double parameters (llm.c's order) ---- */
typedef struct { int maxT, V, L, NH, C, Vp; } cfg_t;

static void r_ln(double *o, const double *x, const double *w, const double *b, int C) {
  double mu = 0, var = 0;
  for (int i = 0; i < C; i++) mu += x[i];
  mu /= C;
  for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
  var /= C;
  for (int i = 0; i < C; i++) o[i] = (x[i] - mu) / sqrt(var + 1e-5) * w[i] + b[i];
}
static void r_lin(double *y, const double *x, const double *W, const double *b, int in, int out) {
  for (int o = 0; o < out; o++) {
    double s = b ? b[o] : 0;
    for (int i = 0; i < in; i++) s += W[(size_t)o * in + i] * x[i];
    y[o] = s;
  }
}
static double r_gelu(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))); }

static double ref_loss(const double *P, cfg_t g, const int32_t *in, const int32_t *tg, int B, int T) {
  const int C = g.C, L = g.L, NH = g.NH, hs = C / NH, V = g.V;
  const double *wte = P, *wpe = wte + (size_t)g.Vp * C, *ln1w = wpe + (size_t)g.maxT * C, *ln1b = ln1w + L * C, *qkvw = ln1b + L * C,
               *qkvb = qkvw + (size_t)L * 3 * C * C, *apw = qkvb + L * 3 * C, *apb = apw + (size_t)L * C * C, *ln2w = apb + L * C,
               *ln2b = ln2w + L * C, *fcw = ln2b + L * C, *fcb = fcw + (size_t)L * 4 * C * C, *fpw = fcb + L * 4 * C,
               *fpb = fpw + (size_t)L * 4 * C * C, *lnfw = fpb + L * C, *lnfb = lnfw + C;
  double *h = malloc(sizeof(double) * T * C), *a = malloc(sizeof(double) * T * C), *qkv = malloc(sizeof(double) * T * 3 * C),
         *att = malloc(sizeof(double) * T * C), *u = malloc(sizeof(double) * 4 * C), *y = malloc(sizeof(double) * C),
         *w = malloc(sizeof(double) * T), *lg = malloc(sizeof(double) * V), total = 0;
  for (int b = 0; b < B; b++) {
    const int32_t *tk = in + b * T;
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++) h[t * C + c] = wte[(size_t)tk[t] * C + c] + wpe[t * C + c];
    for (int l = 0; l < L; l++) {
      for (int t = 0; t < T; t++) {
        r_ln(a + t * C, h + t * C, ln1w + l * C, ln1b + l * C, C);
        r_lin(qkv + t * 3 * C, a + t * C, qkvw + (size_t)l * 3 * C * C, qkvb + l * 3 * C, C, 3 * C);
      }
      for (int t = 0; t < T; t++)
        for (int hd = 0; hd < NH; hd++) {
          double mx = -1e300, sum = 0;
          for (int s = 0; s <= t; s++) {
            double d = 0;
            for (int i = 0; i < hs; i++) d += qkv[t * 3 * C + hd * hs + i] * qkv[s * 3 * C + C + hd * hs + i];
            w[s] = d / sqrt((double)hs);
            if (w[s] > mx) mx = w[s];
          }
          for (int s = 0; s <= t; s++) { w[s] = exp(w[s] - mx); sum += w[s]; }
          for (int i = 0; i < hs; i++) {
            double o = 0;
            for (int s = 0; s <= t; s++) o += w[s] / sum * qkv[s * 3 * C + 2 * C + hd * hs + i];
            att[t * C + hd * hs + i] = o;
          }
        }
      for (int t = 0; t < T; t++) {
        r_lin(y, att + t * C, apw + (size_t)l * C * C, apb + l * C, C, C);
        for (int c = 0; c < C; c++) h[t * C + c] += y[c];
        r_ln(a + t * C, h + t * C, ln2w + l * C, ln2b + l * C, C);
        r_lin(u, a + t * C, fcw + (size_t)l * 4 * C * C, fcb + l * 4 * C, C, 4 * C);
        for (int i = 0; i < 4 * C; i++) u[i] = r_gelu(u[i]);
        r_lin(y, u, fpw + (size_t)l * 4 * C * C, fpb + l * C, 4 * C, C);
        for (int c = 0; c < C; c++) h[t * C + c] += y[c];
      }
    }
    for (int t = 0; t < T; t++) {
      double mx = -1e300, z = 0;
      r_ln(a, h + t * C, lnfw, lnfb, C);
      r_lin(lg, a, wte, NULL, C, V);
      for (int v = 0; v < V; v++) if (lg[v] > mx) mx = lg[v];
      for (int v = 0; v < V; v++) z += exp(lg[v] - mx);
      total += mx + log(z) - lg[tg[b * T + t]];
    }
  }
  free(h); free(a); free(qkv); free(att); free(u); free(y); free(w); free(lg);
  return total / (B * T);
}

static mlsys_relm_gpt2 *make_model(cfg_t g, uint64_t seed, double scale, int threads) {
  mlsys_relm_gpt2_config c = {g.maxT, g.V, g.Vp, g.L, g.NH, g.C};
  mlsys_relm_gpt2_desc d = {threads, 0};
  mlsys_relm_gpt2 *m = NULL;
  if (mlsys_relm_gpt2_random(&c, seed, &d, &m)) return NULL;
  if (scale > 0) {   /* every parameter random (LayerNorm weights around 1), large enough for the nonlinearities to matter */
    size_t n;
    float *p = mlsys_relm_gpt2_params(m, &n);
    mlsys_rng r;
    mlsys_rng_seed(&r, seed + 99);
    for (size_t i = 0; i < n; i++) p[i] = (float)(p[i] == 1.0f ? 1.0 + 0.2 * mlsys_rng_normal(&r) : scale * mlsys_rng_normal(&r));
  }
  return m;
}
static void rand_toks(int32_t *t, int n, int V, uint64_t seed) {
  mlsys_rng r;
  mlsys_rng_seed(&r, seed);
  for (int i = 0; i < n; i++) t[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)V);
}

static const cfg_t TINY = {12, 64, 2, 2, 16, 72};   /* maxT, V, L, NH, C, Vp: padded rows and unused positions */

/* The analytic gradient of 400 random coordinates (plus every tensor's first) against central differences of the
   double reference with h = 1e-5: truncation h²·f'''/6 and rounding 1e-16/h are both below 1e-9, so what remains is
   the float backward's own rounding, ~1e-6 relative to the gradient's scale. Bound: |g − fd| ≤ 2e-3·|fd| +
   2e-5·max|fd|; a missing term or a wrong factor (errors ≥ 1 %) fails it. */
static void fd_check(cfg_t g, int B, int T, uint64_t seed) {
  int32_t in[64], tg[64];
  mlsys_relm_gpt2 *m = make_model(g, seed, 0.3, 2);
  REQUIRE(m && B * T <= 64);
  size_t n;
  float *p = mlsys_relm_gpt2_params(m, &n);
  float *gr = malloc(n * sizeof(float));
  double *pd = malloc(n * sizeof(double)), loss;
  rand_toks(in, B * T, g.V, seed + 1);
  rand_toks(tg, B * T, g.V, seed + 2);
  REQUIRE_OK(mlsys_relm_gpt2_backward(m, in, tg, B, T, &loss, gr));
  for (size_t i = 0; i < n; i++) pd[i] = p[i];
  CHECK_NEAR(loss, ref_loss(pd, g, in, tg, B, T), 1e-5 * loss);
  /* coordinates: 400 random, plus the first element of each of the 16 tensors */
  const size_t C = g.C, L = g.L, off[16] = {0, (size_t)g.Vp * C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  size_t idx[416], sizes[16] = {(size_t)g.Vp * C, (size_t)g.maxT * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C, L * C, L * C, L * 4 * C * C,
                                L * 4 * C, L * 4 * C * C, L * C, C, C};
  size_t o = 0, firsts[16];
  (void)off;
  for (int k = 0; k < 16; k++) { firsts[k] = o; o += sizes[k]; }
  REQUIRE(o == n);
  mlsys_rng r;
  mlsys_rng_seed(&r, seed + 77);
  for (int k = 0; k < 400; k++) idx[k] = (size_t)mlsys_rng_below(&r, n);
  for (int k = 0; k < 16; k++) idx[400 + k] = firsts[k];
  double fd[416], mx = 0;
  for (int k = 0; k < 416; k++) {
    const double h = 1e-5, keep = pd[idx[k]];
    pd[idx[k]] = keep + h;
    double lp = ref_loss(pd, g, in, tg, B, T);
    pd[idx[k]] = keep - h;
    double lm = ref_loss(pd, g, in, tg, B, T);
    pd[idx[k]] = keep;
    fd[k] = (lp - lm) / (2 * h);
    if (fabs(fd[k]) > mx) mx = fabs(fd[k]);
  }
  REQUIRE(mx > 1e-3);
  int bad = 0, nonzero = 0;
  for (int k = 0; k < 416; k++) {
    double err = fabs(gr[idx[k]] - fd[k]);
    if (fd[k] != 0) nonzero++;
    if (!(err <= 2e-3 * fabs(fd[k]) + 2e-5 * mx)) {
      if (bad++ < 5) printf("    coordinate %zu: backward %.9g, finite difference %.9g\n", idx[k], gr[idx[k]], fd[k]);
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(nonzero > 100);
  /* padded wte rows and positions ≥ T do not touch the loss: exactly zero */
  for (size_t i = (size_t)g.V * C; i < (size_t)g.Vp * C; i++) CHECK(gr[i] == 0.0f);
  for (size_t i = (size_t)g.Vp * C + (size_t)T * C; i < (size_t)g.Vp * C + (size_t)g.maxT * C; i++) CHECK(gr[i] == 0.0f);
  free(gr); free(pd);
  mlsys_relm_gpt2_free(m);
}
TEST(backward_matches_finite_differences) { fd_check(TINY, 2, 8, 5); }
/* sizes that are not multiples of the kernels' blocks (4 rows, 16 or 8 columns, 64-row/32-output tiles): every tail */
TEST(backward_matches_finite_differences_odd_sizes) {
  const cfg_t odd = {9, 37, 2, 3, 12, 40};
  fd_check(odd, 1, 7, 6);
  fd_check(odd, 3, 9, 7);
}

/* The loss is the mean cross-entropy of mlsys_relm_gpt2_forward's logits (same arithmetic: equal to rounding of the
   final double sums), and loss-only calls give the same number. */
TEST(loss_equals_forward_cross_entropy) {
  const cfg_t g = {32, 50, 3, 4, 32, 64};
  const int B = 3, T = 20;
  int32_t in[60], tg[60];
  mlsys_relm_gpt2 *m = make_model(g, 9, 0.1, 2);
  REQUIRE(m);
  rand_toks(in, 60, g.V, 3);
  rand_toks(tg, 60, g.V, 4);
  float *lg = malloc(sizeof(float) * T * g.V);
  double want = 0, loss, loss2;
  for (int b = 0; b < B; b++) {
    REQUIRE_OK(mlsys_relm_gpt2_forward(m, in + b * T, T, lg));
    for (int t = 0; t < T; t++) {
      float mx = -INFINITY;
      double z = 0;
      for (int v = 0; v < g.V; v++) if (lg[t * g.V + v] > mx) mx = lg[t * g.V + v];
      for (int v = 0; v < g.V; v++) z += exp((double)(lg[t * g.V + v] - mx));
      want += (double)mx + log(z) - lg[t * g.V + tg[b * T + t]];
    }
  }
  want /= B * T;
  size_t n;
  mlsys_relm_gpt2_params(m, &n);
  float *gr = malloc(n * sizeof(float));
  REQUIRE_OK(mlsys_relm_gpt2_backward(m, in, tg, B, T, &loss, gr));
  REQUIRE_OK(mlsys_relm_gpt2_backward(m, in, tg, B, T, &loss2, NULL));
  CHECK_NEAR(loss, want, 1e-12 * want);
  CHECK(loss == loss2);
  /* argument errors name the problem */
  tg[5] = g.V;
  CHECK_EQ_INT(mlsys_relm_gpt2_backward(m, in, tg, B, T, &loss, gr), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "target 5");
  CHECK_EQ_INT(mlsys_relm_gpt2_backward(m, in, tg, B, g.maxT + 1, &loss, gr), MLSYS_ERR_ARG);
  free(gr); free(lg);
  mlsys_relm_gpt2_free(m);
}

/* Loss and every gradient bit are the same on 1, 2 and 3 threads (fixed summation orders). */
TEST(backward_independent_of_threads) {
  const cfg_t g = {40, 300, 2, 4, 64, 320};
  const int B = 3, T = 37;
  int32_t in[111], tg[111];
  rand_toks(in, 111, g.V, 5);
  rand_toks(tg, 111, g.V, 6);
  float *ref = NULL;
  double l0 = 0;
  size_t n = 0;
  for (int th = 1; th <= 3; th++) {
    mlsys_relm_gpt2 *m = make_model(g, 11, 0.05, th);
    REQUIRE(m);
    mlsys_relm_gpt2_params(m, &n);
    float *gr = malloc(n * sizeof(float));
    double l;
    REQUIRE_OK(mlsys_relm_gpt2_backward(m, in, tg, B, T, &l, gr));
    if (!ref) { ref = gr; l0 = l; }
    else {
      CHECK(l == l0);
      CHECK(memcmp(gr, ref, n * sizeof(float)) == 0);
      free(gr);
    }
    mlsys_relm_gpt2_free(m);
  }
  free(ref);
}

/* One and two AdamW steps against the update worked by hand (t = 1: m̂ = g, v̂ = g², so the step is lr·(g/(|g| + eps)
   + wd·p)). */
TEST(adamw_step_by_hand) {
  float p[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.5f, -0.25f, 0.0f}, mm[3] = {0}, vv[3] = {0};
  mlsys_adamw_step(p, g, mm, vv, 3, 1, 0.1f, 0.9f, 0.95f, 1e-8f, 0.01f);
  /* p0: 1 − 0.1·(0.5/0.5 + 0.01·1) = 0.899 ; p1: −2 − 0.1·(−1 + 0.01·(−2)) = −1.898 ; p2: 0.5 − 0.1·(0 + 0.005) = 0.4995 */
  CHECK_NEAR(p[0], 0.899, 1e-6);
  CHECK_NEAR(p[1], -1.898, 1e-6);
  CHECK_NEAR(p[2], 0.4995, 1e-6);
  CHECK_NEAR(mm[0], 0.05, 1e-7);   /* float arithmetic: 0.1f · 0.5f */
  CHECK_NEAR(vv[0], 0.0125, 1e-8);   /* 0.05 · 0.25 */
  /* step 2, g = 0.1 on p0: m = 0.9·0.05 + 0.1·0.1 = 0.055, v = 0.95·0.0125 + 0.05·0.01 = 0.012375;
     m̂ = 0.055 / 0.19 = 0.289473684, v̂ = 0.012375 / 0.0975 = 0.126923077, sqrt = 0.356262651;
     p = 0.899 − 0.1·(0.289473684 / 0.356262651 + 0.01·0.899) = 0.899 − 0.1·(0.8125289 + 0.00899) = 0.8168481 */
  float g2[1] = {0.1f};
  mlsys_adamw_step(p, g2, mm, vv, 1, 2, 0.1f, 0.9f, 0.95f, 1e-8f, 0.01f);
  double mh = 0.055 / 0.19, vh = 0.012375 / 0.0975, want = 0.899 - 0.1 * (mh / (sqrt(vh) + 1e-8) + 0.01 * 0.899);
  CHECK_NEAR(want, 0.8168481, 1e-6);   /* the arithmetic above, done once more by hand */
  CHECK_NEAR(p[0], want, 2e-6);
}

TEST(cosine_schedule) {
  CHECK_NEAR(mlsys_relm_lr_cosine(0, 100, 10, 1.0, 0.1), 0.1, 1e-12);     /* warm-up: (s + 1)/warmup */
  CHECK_NEAR(mlsys_relm_lr_cosine(9, 100, 10, 1.0, 0.1), 1.0, 1e-12);
  CHECK_NEAR(mlsys_relm_lr_cosine(10, 100, 10, 1.0, 0.1), 1.0, 1e-12);    /* cosine starts at the peak */
  CHECK_NEAR(mlsys_relm_lr_cosine(100, 100, 10, 1.0, 0.1), 0.1, 1e-12);   /* reaches lr·min_frac at s = steps */
  CHECK_NEAR(mlsys_relm_lr_cosine(99, 100, 10, 1.0, 0.1), 0.1 + 0.45 * (1 + cos(3.14159265358979323846 * 89.0 / 90.0)), 1e-12);
  CHECK(mlsys_relm_lr_cosine(99, 100, 10, 1.0, 0.1) > 0.1);              /* the last step still moves */
  CHECK_NEAR(mlsys_relm_lr_cosine(5, 10, 0, 2.0, 0.0), 1.0, 1e-12);       /* the midpoint (5/10) of a schedule without warm-up */
}

/* ---- the train loop ---- */
/* a tiny corpus with structure: repeated "sentences" over 40 token ids */
static int32_t *corpus(size_t n, uint64_t seed) {
  int32_t *t = malloc(n * sizeof(int32_t));
  mlsys_rng r;
  mlsys_rng_seed(&r, seed);
  for (size_t i = 0; i < n;) {
    int s = (int)mlsys_rng_below(&r, 4);
    for (int k = 0; k < 8 && i < n; k++) t[i++] = (int32_t)((s * 7 + k * 3) % 40);
  }
  return t;
}
typedef struct { int stop_at; double first, last; int calls; } cb_state;
static int cb(void *ud, const mlsys_relm_gpt2_train_progress *p) {
  cb_state *s = ud;
  if (s->calls++ == 0) s->first = p->loss;
  s->last = p->loss;
  return s->stop_at && p->step == s->stop_at;
}

TEST(loss_decreases_on_a_tiny_corpus) {
  const cfg_t g = {16, 40, 2, 2, 32, 48};
  int32_t *tr = corpus(4000, 1), *va = corpus(600, 2);
  mlsys_relm_gpt2 *m = make_model(g, 3, 0, 1);
  REQUIRE(m);
  double v0;
  size_t pr;
  REQUIRE_OK(mlsys_relm_gpt2_eval(m, va, 600, &v0, &pr));
  v0 /= (double)pr;
  mlsys_relm_gpt2_train_desc d = {0};
  cb_state st = {0, 0, 0, 0};
  d.train = tr; d.ntrain = 4000; d.val = va; d.nval = 600; d.batch = 8; d.seq_len = 16; d.steps = 60; d.lr = 1e-2; d.warmup = 5;
  d.weight_decay = 0.01; d.seed = 7; d.val_every = 20; d.progress = cb; d.ud = &st;
  mlsys_relm_gpt2_train_result r;
  REQUIRE_OK(mlsys_relm_gpt2_train(m, &d, &r));
  CHECK_EQ_INT(r.steps_done, 60);
  CHECK_EQ_INT(st.calls, 60);
  printf("    loss %.3f -> %.3f, val %.3f (untrained %.3f, uniform %.3f)\n", st.first, r.last_loss, r.last_val_loss, v0, log(40.0));
  /* untrained ≈ ln 40 = 3.69; the corpus's next token is fixed except at 1 in 8 positions (4 choices): the floor
     is about ln(4)/8 = 0.17 nats (measured: 0.21 after 60 steps); 60 steps must get below 0.5 */
  CHECK(st.first > 3.0);
  CHECK(r.last_loss < 0.5);
  CHECK(r.last_val_loss < 0.5);
  double v1;
  REQUIRE_OK(mlsys_relm_gpt2_eval(m, va, 600, &v1, &pr));
  CHECK(v1 / (double)pr < 0.5);
  CHECK_EQ_INT(pr, 600 - 600 / 16 - (600 % 16 ? 1 : 0));   /* each window's first token is not predicted */
  free(tr); free(va);
  mlsys_relm_gpt2_free(m);
}

static char tmpdir[64];
static const char *tmp_path(const char *name) {
  static char buf[4][128];
  static int k;
  if (!tmpdir[0]) { strcpy(tmpdir, "/tmp/relm_train_XXXXXX"); if (!mkdtemp(tmpdir)) return NULL; }
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static void run_train(mlsys_relm_gpt2 *m, const int32_t *tr, size_t n, const char *ckpt, int stop_at, int resume, int ckpt_every,
                      mlsys_relm_gpt2_train_result *r) {
  mlsys_relm_gpt2_train_desc d = {0};
  cb_state st = {stop_at, 0, 0, 0};
  d.train = tr; d.ntrain = n; d.batch = 3; d.seq_len = 10; d.steps = 12; d.lr = 2e-3; d.warmup = 3; d.weight_decay = 0.1;
  d.seed = 42; d.ckpt = ckpt; d.ckpt_every = ckpt_every; d.resume = resume; d.progress = cb; d.ud = &st;
  CHECK_OK(mlsys_relm_gpt2_train(m, &d, r));
}

/* Run 12 steps straight; run again with checkpoints every 4 steps, "killed" after step 10 (the callback stops it:
   steps 9-10 are lost), resumed from step 8 with another thread count: parameters bitwise equal. (12 steps × 3
   windows > the 29 windows of the corpus: an epoch boundary is crossed after the resume.) */
TEST(resume_equals_uninterrupted) {
  const cfg_t g = {10, 40, 2, 2, 16, 40};
  int32_t *tr = corpus(300, 5);
  mlsys_relm_gpt2_train_result r;
  mlsys_relm_gpt2 *a = make_model(g, 8, 0, 1), *b = make_model(g, 8, 0, 2);
  REQUIRE(a && b);
  const char *ck = tmp_path("m.bin");
  run_train(a, tr, 300, NULL, 0, 0, 0, &r);
  CHECK_EQ_INT(r.steps_done, 12);
  run_train(b, tr, 300, ck, 10, 1, 4, &r);   /* nothing to resume: starts fresh */
  CHECK_EQ_INT(r.resumed_from, -1);
  CHECK_EQ_INT(r.steps_done, 10);
  mlsys_relm_gpt2_free(b);
  b = make_model(g, 1234, 0, 3);   /* another initialisation: the checkpoint must replace it */
  run_train(b, tr, 300, ck, 0, 1, 4, &r);
  CHECK_EQ_INT(r.resumed_from, 8);
  CHECK_EQ_INT(r.steps_done, 12);
  size_t n;
  float *pa = mlsys_relm_gpt2_params(a, &n), *pb = mlsys_relm_gpt2_params(b, NULL);
  CHECK(memcmp(pa, pb, n * sizeof(float)) == 0);
  /* the final checkpoint is an llm.c file the loader reads, equal to the trained model */
  mlsys_relm_gpt2 *c = NULL;
  REQUIRE_OK(mlsys_relm_gpt2_load(ck, NULL, &c));
  CHECK(memcmp(mlsys_relm_gpt2_params(c, NULL), pa, n * sizeof(float)) == 0);
  /* resuming a finished run does nothing more */
  run_train(c, tr, 300, ck, 0, 1, 4, &r);
  CHECK_EQ_INT(r.resumed_from, 12);
  CHECK(memcmp(mlsys_relm_gpt2_params(c, NULL), pa, n * sizeof(float)) == 0);
  mlsys_relm_gpt2_free(a); mlsys_relm_gpt2_free(b); mlsys_relm_gpt2_free(c);
  free(tr);
}

static int copy_file(const char *from, const char *to, long truncate_to, long flip) {
  FILE *f = fopen(from, "rb"), *g;
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(b); return 1; }
  fclose(f);
  if (flip >= 0 && flip < n) b[flip] ^= 0x10;
  if (truncate_to >= 0 && truncate_to < n) n = truncate_to;
  g = fopen(to, "wb");
  fwrite(b, 1, (size_t)n, g);
  fclose(g);
  free(b);
  return 0;
}

/* Damaged, truncated, foreign or mismatched checkpoint files are named errors, and the model is left alone. */
TEST(damaged_checkpoints_are_named_errors) {
  const cfg_t g = {10, 40, 2, 2, 16, 40};
  int32_t *tr = corpus(300, 5);
  mlsys_relm_gpt2_train_result r;
  mlsys_relm_gpt2 *a = make_model(g, 8, 0, 1);
  REQUIRE(a);
  const char *ck = tmp_path("good.bin");
  run_train(a, tr, 300, ck, 4, 1, 4, &r);
  CHECK_EQ_INT(r.steps_done, 4);
  char st[200], bad[160], bads[200];
  snprintf(st, sizeof st, "%s.state", ck);
  snprintf(bad, sizeof bad, "%s", tmp_path("bad.bin"));
  snprintf(bads, sizeof bads, "%s.state", bad);
  struct { long trunc, flip; const char *msg; int model; } cases[] = {
      {-1, 0, "bad magic", 0},   {100, -1, "truncated", 0}, {-1, 5000, "CRC mismatch", 0}, {-1, 17, "CRC mismatch", 0},
      {-1, 3000, "not the ones", 1},   /* a flipped bit in the model file's parameters */
      {2000, -1, "expected", 1},       /* a truncated model file */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    remove(bad); remove(bads);
    CHECK(copy_file(ck, bad, cases[k].model ? cases[k].trunc : -1, cases[k].model ? cases[k].flip : -1) == 0);
    CHECK(copy_file(st, bads, cases[k].model ? -1 : cases[k].trunc, cases[k].model ? -1 : cases[k].flip) == 0);
    mlsys_relm_gpt2 *b = make_model(g, 8, 0, 1);
    mlsys_relm_gpt2_train_desc d = {0};
    d.train = tr; d.ntrain = 300; d.batch = 3; d.seq_len = 10; d.steps = 12; d.seed = 42; d.ckpt = bad; d.resume = 1;
    mlsys_status s = mlsys_relm_gpt2_train(b, &d, &r);
    CHECK_MSG(s == MLSYS_ERR_PARSE, "case %zu: status %d: %s", k, (int)s, mlsys_last_error());
    CHECK_CONTAINS(mlsys_last_error(), cases[k].msg);
    mlsys_relm_gpt2_free(b);
  }
  /* another seed or batch: the state file is of another run */
  remove(bad); remove(bads);
  copy_file(ck, bad, -1, -1);
  copy_file(st, bads, -1, -1);
  {
    mlsys_relm_gpt2 *b = make_model(g, 8, 0, 1);
    mlsys_relm_gpt2_train_desc d = {0};
    d.train = tr; d.ntrain = 300; d.batch = 3; d.seq_len = 10; d.steps = 12; d.seed = 43; d.ckpt = bad; d.resume = 1;
    CHECK_EQ_INT(mlsys_relm_gpt2_train(b, &d, &r), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "seed 42");
    d.seed = 42; d.batch = 4;
    CHECK_EQ_INT(mlsys_relm_gpt2_train(b, &d, &r), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "another model configuration, batch");
    d.batch = 3; d.steps = 0;
    CHECK_EQ_INT(mlsys_relm_gpt2_train(b, &d, &r), MLSYS_ERR_ARG);
    d.steps = 12; d.ntrain = 10;
    CHECK_EQ_INT(mlsys_relm_gpt2_train(b, &d, &r), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "training tokens");
    mlsys_relm_gpt2_free(b);
  }
  /* an unwritable checkpoint directory is an I/O error */
  {
    mlsys_relm_gpt2 *b = make_model(g, 8, 0, 1);
    CHECK_EQ_INT(mlsys_relm_gpt2_save(b, "/nonexistent-dir/x.bin"), MLSYS_ERR_IO);
    CHECK_CONTAINS(mlsys_last_error(), "/nonexistent-dir/x.bin.tmp");
    mlsys_relm_gpt2_free(b);
  }
  remove(bad); remove(bads); remove(ck); remove(st);
  mlsys_relm_gpt2_free(a);
  free(tr);
}

TEST_MAIN()
