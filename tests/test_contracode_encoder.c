/* tests/test_contracode_encoder.c — mlsys_contracode.h section 6b (issue 25): the Transformer encoder body, called
   through mlsys__enc_transformer_body. Oracles: the parameter counts of §7.4 test 17; an independent forward in double
   written here (its own loops over the documented layout, PyTorch's nn.TransformerEncoderLayer arithmetic); central
   finite differences of Σ pooled·R against the analytic backward for every parameter tensor (both pools, with and
   without dropout, §7.4 test 18); invariances (padding ids, thread count, a fixed rng seed); bad input. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"

static const mlsys__enc_body *TF = &mlsys__enc_transformer_body;

static mlsys_contracode_enc_cfg tf_cfg(int V, int d, int L, int H, int F, int pool, float drop) {
  mlsys_contracode_enc_cfg c;
  memset(&c, 0, sizeof c);
  c.type = MLSYS_CONTRACODE_ENC_TRANSFORMER;
  c.vocab = V; c.d_model = d; c.n_layers = L; c.n_heads = H; c.d_ff = F; c.d_rep = 8; c.max_len = 64; c.pad_id = 0;
  c.pool = pool; c.dropout = drop;
  return c;
}

TEST(transformer_nparams) {
  mlsys_contracode_enc_cfg paper = tf_cfg(8000, 512, 6, 8, 2048, 0, 0.1f), tiny = tf_cfg(8000, 128, 2, 4, 512, 0, 0.1f), bad = tiny;
  CHECK_EQ_INT(TF->nparams(&paper), 23011328);
  CHECK_EQ_INT(TF->nparams(&tiny), 1420800);
  bad.n_heads = 3;   /* 128 is not a multiple of 3 */
  CHECK_EQ_INT(TF->nparams(&bad), 0);
}

/* Offsets of layer l's tensors, computed here from the documented layout. */
enum { P_INW, P_INB, P_OW, P_OB, P_L1W, P_L1B, P_F1W, P_F1B, P_F2W, P_F2B, P_L2W, P_L2B, P_NT };
static size_t lay_off(const mlsys_contracode_enc_cfg *c, int l, int which, size_t *len) {
  const size_t d = c->d_model, F = c->d_ff;
  const size_t sz[P_NT] = {3 * d * d, 3 * d, d * d, d, d, d, F * d, F, d * F, d, d, d};
  size_t o = (size_t)c->vocab * d;
  for (int k = 0; k < l; k++)
    for (int j = 0; j < P_NT; j++) o += sz[j];
  for (int j = 0; j < which; j++) o += sz[j];
  if (len) *len = sz[which];
  return o;
}

static void r_ln(double *x, const double *w, const double *b, int C) {   /* in place */
  double mu = 0, var = 0;
  for (int i = 0; i < C; i++) mu += x[i];
  mu /= C;
  for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
  var /= C;
  for (int i = 0; i < C; i++) x[i] = (x[i] - mu) / sqrt(var + 1e-5) * w[i] + b[i];
}
/* The reference forward (no dropout) in double: one sequence at a time. */
static void ref_forward_d(const mlsys_contracode_enc_cfg *c, const double *P, const int32_t *ids, const int *lens, int B, int T,
                          double *pooled) {
  const int d = c->d_model, F = c->d_ff, H = c->n_heads, hs = d / H;
  const size_t np = TF->nparams(c);
  double *x = malloc(sizeof(double) * T * d), *q = malloc(sizeof(double) * T * d),
         *k = malloc(sizeof(double) * T * d), *v = malloc(sizeof(double) * T * d), *o = malloc(sizeof(double) * T * d),
         *hid = malloc(sizeof(double) * F), *sc = malloc(sizeof(double) * T), *y = malloc(sizeof(double) * d);
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++)
      for (int i = 0; i < d; i++) {
        const double div = exp(-(double)(i - i % 2) * log(10000.0) / d), pe = i % 2 ? cos(t * div) : sin(t * div);
        x[t * d + i] = P[(size_t)ids[b * T + t] * d + i] * sqrt((double)d) + pe;
      }
    for (int l = 0; l < c->n_layers; l++) {
      const double *inw = P + lay_off(c, l, P_INW, 0), *inb = P + lay_off(c, l, P_INB, 0), *ow = P + lay_off(c, l, P_OW, 0),
                   *ob = P + lay_off(c, l, P_OB, 0), *f1w = P + lay_off(c, l, P_F1W, 0), *f1b = P + lay_off(c, l, P_F1B, 0),
                   *f2w = P + lay_off(c, l, P_F2W, 0), *f2b = P + lay_off(c, l, P_F2B, 0);
      for (int t = 0; t < T; t++)
        for (int r = 0; r < d; r++) {
          double sq = inb[r], sk = inb[d + r], sv = inb[2 * d + r];
          for (int i = 0; i < d; i++) {
            sq += inw[(size_t)r * d + i] * x[t * d + i];
            sk += inw[(size_t)(d + r) * d + i] * x[t * d + i];
            sv += inw[(size_t)(2 * d + r) * d + i] * x[t * d + i];
          }
          q[t * d + r] = sq; k[t * d + r] = sk; v[t * d + r] = sv;
        }
      for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
          double mx = -1e300, sum = 0;
          for (int u = 0; u < lens[b]; u++) {
            double s = 0;
            for (int j = 0; j < hs; j++) s += q[t * d + h * hs + j] * k[u * d + h * hs + j];
            sc[u] = s / sqrt((double)hs);
            if (sc[u] > mx) mx = sc[u];
          }
          for (int u = 0; u < lens[b]; u++) sum += (sc[u] = exp(sc[u] - mx));
          for (int j = 0; j < hs; j++) {
            double s = 0;
            for (int u = 0; u < lens[b]; u++) s += sc[u] / sum * v[u * d + h * hs + j];
            o[t * d + h * hs + j] = s;
          }
        }
      for (int t = 0; t < T; t++) {
        for (int r = 0; r < d; r++) {
          double s = ob[r];
          for (int i = 0; i < d; i++) s += ow[(size_t)r * d + i] * o[t * d + i];
          y[r] = s;
        }
        for (int r = 0; r < d; r++) x[t * d + r] += y[r];
        r_ln(x + t * d, P + lay_off(c, l, P_L1W, 0), P + lay_off(c, l, P_L1B, 0), d);
        for (int f = 0; f < F; f++) {
          double s = f1b[f];
          for (int i = 0; i < d; i++) s += f1w[(size_t)f * d + i] * x[t * d + i];
          hid[f] = s > 0 ? s : 0;
        }
        for (int r = 0; r < d; r++) {
          double s = f2b[r];
          for (int f = 0; f < F; f++) s += f2w[(size_t)r * F + f] * hid[f];
          y[r] = s;
        }
        for (int r = 0; r < d; r++) x[t * d + r] += y[r];
        r_ln(x + t * d, P + lay_off(c, l, P_L2W, 0), P + lay_off(c, l, P_L2B, 0), d);
      }
    }
    const int cnt = c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : lens[b];
    for (int i = 0; i < d; i++) pooled[b * d + i] = 0;
    for (int t = 0; t < T; t++) {
      r_ln(x + t * d, P + np - 2 * d, P + np - d, d);
      if (t < cnt)
        for (int i = 0; i < d; i++) pooled[b * d + i] += x[t * d + i] / cnt;
    }
  }
  free(x); free(q); free(k); free(v); free(o); free(hid); free(sc); free(y);
}
static void ref_forward(const mlsys_contracode_enc_cfg *c, const float *pf, const int32_t *ids, const int *lens, int B, int T,
                        double *pooled) {
  const size_t np = TF->nparams(c);
  double *P = malloc(np * sizeof(double));
  for (size_t i = 0; i < np; i++) P[i] = pf[i];
  ref_forward_d(c, P, ids, lens, B, T, pooled);
  free(P);
}

static float *new_params(const mlsys_contracode_enc_cfg *c, uint64_t seed) {
  mlsys_rng r;
  float *p = malloc(TF->nparams(c) * sizeof(float));
  mlsys_rng_seed(&r, seed);
  TF->init(c, p, &r);
  return p;
}
/* Makes LayerNorm weights and biases non-trivial so their gradients are exercised away from 1/0. */
static void jitter_ln(const mlsys_contracode_enc_cfg *c, float *p, uint64_t seed) {
  mlsys_rng r;
  const size_t np = TF->nparams(c), d = c->d_model;
  mlsys_rng_seed(&r, seed);
  for (int l = 0; l < c->n_layers; l++)
    for (int w = P_L1W; w <= P_L2B; w++) {
      if (w != P_L1W && w != P_L1B && w != P_L2W && w != P_L2B) continue;
      size_t len, o = lay_off(c, l, w, &len);
      for (size_t i = 0; i < len; i++) p[o + i] += (float)(0.2 * mlsys_rng_normal(&r));
    }
  for (size_t i = np - 2 * d; i < np; i++) p[i] += (float)(0.2 * mlsys_rng_normal(&r));
  for (int l = 0; l < c->n_layers; l++) {   /* and the zero-initialized biases */
    size_t len, o = lay_off(c, l, P_INB, &len);
    for (size_t i = 0; i < len; i++) p[o + i] = (float)(0.1 * mlsys_rng_normal(&r));
    o = lay_off(c, l, P_OB, &len);
    for (size_t i = 0; i < len; i++) p[o + i] = (float)(0.1 * mlsys_rng_normal(&r));
  }
}

TEST(transformer_forward_matches_double_reference) {
  const int B = 3, T = 7, lens[3] = {7, 4, 1};
  for (int pm = 0; pm < 2; pm++) {
    mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 2, 2, 24, pm ? MLSYS_CONTRACODE_POOL_MEAN_ALL : MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.1f);
    float *p = new_params(&c, 7), out[48];
    double ref[48], maxerr = 0;
    int32_t ids[21];
    void *st = NULL;
    mlsys_rng r;
    jitter_ln(&c, p, 8);
    mlsys_rng_seed(&r, 9);
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, 30);
    REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out));   /* train 0: dropout off */
    ref_forward(&c, p, ids, lens, B, T, ref);
    for (int i = 0; i < B * 16; i++) maxerr = fmax(maxerr, fabs(out[i] - ref[i]));
    CHECK_MSG(maxerr < 2e-5, "pool %d: max |float − double| %g", pm, maxerr);
    TF->free_state(st);
    free(p);
  }
}

/* loss = Σ pooled·R in double */
static double loss_of(const mlsys_contracode_enc_cfg *c, const float *p, const int32_t *ids, const int *lens, int B, int T,
                      int train, uint64_t seed, const double *R, void **st) {
  float out[64 * 16];
  mlsys_rng r;
  double s = 0;
  mlsys_rng_seed(&r, seed);
  if (TF->forward(c, p, st, NULL, ids, lens, B, T, train, &r, out) != MLSYS_OK) return NAN;
  for (int i = 0; i < B * c->d_model; i++) s += out[i] * R[i];
  return s;
}

/* Central differences for ~20 entries of every tensor; returns the number of entries outside tolerance and the worst
   ratio |analytic − numeric| / tol. */
static int grad_check(const mlsys_contracode_enc_cfg *c, double *worst, int *nchecked, int flip_sign_of_tensor) {
  const int B = 3, T = 7, lens[3] = {7, 4, 1}, d = c->d_model;
  const size_t np = TF->nparams(c);
  float *p = new_params(c, 11), *g = calloc(np, sizeof(float)), dpooled[48];
  double R[48];
  int32_t ids[21];
  void *st = NULL;
  mlsys_rng r;
  const int train = 1;   /* without dropout (cfg) it is the eval forward, and it keeps the state */
  int bad = 0;
  jitter_ln(c, p, 12);
  mlsys_rng_seed(&r, 13);
  for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)c->vocab);
  for (int i = 0; i < B * d; i++) { R[i] = mlsys_rng_normal(&r); dpooled[i] = (float)R[i]; }
  loss_of(c, p, ids, lens, B, T, train, 99, R, &st);
  if (TF->backward(c, p, g, st, NULL, dpooled) != MLSYS_OK) { free(p); free(g); TF->free_state(st); return -1; }
  *worst = 0;
  *nchecked = 0;
  /* tensors: the embedding (rows of ids in use and others), every layer tensor, the final LN */
  for (int tsr = -1; tsr <= c->n_layers * P_NT; tsr++) {
    size_t off, len;
    if (tsr < 0) { off = 0; len = (size_t)c->vocab * d; }
    else if (tsr == c->n_layers * P_NT) { off = np - 2 * (size_t)d; len = 2 * (size_t)d; }
    else off = lay_off(c, tsr / P_NT, tsr % P_NT, &len);
    if (flip_sign_of_tensor >= -1 && tsr != flip_sign_of_tensor) continue;   /* only the mutated tensor */
    for (int s = 0; s < 20; s++) {
      size_t i;
      if (tsr < 0) {   /* mostly rows that are used */
        const int32_t id = s < 16 ? ids[mlsys_rng_below(&r, (uint64_t)(B * T))] : (int32_t)mlsys_rng_below(&r, (uint64_t)c->vocab);
        i = (size_t)id * d + mlsys_rng_below(&r, (uint64_t)d);
      } else {
        i = off + mlsys_rng_below(&r, len);
      }
      const float p0 = p[i], eps = 2e-3f;
      p[i] = p0 + eps;
      const double lp = loss_of(c, p, ids, lens, B, T, train, 99, R, &st);
      p[i] = p0 - eps;
      const double lm = loss_of(c, p, ids, lens, B, T, train, 99, R, &st);
      p[i] = p0;
      const double num = (lp - lm) / ((double)(p0 + eps) - (double)(p0 - eps));
      const double an = (tsr == flip_sign_of_tensor ? -1.0 : 1.0) * g[i];
      const double tol = 2e-3 + 2e-2 * fabs(num);
      if (fabs(an - num) > tol) {
        if (bad < 5 && flip_sign_of_tensor < -1) printf("    tensor %d entry %zu: analytic %.6g numeric %.6g\n", tsr, i, an, num);
        bad++;
      }
      *worst = fmax(*worst, fabs(an - num) / tol);
      ++*nchecked;
    }
  }
  free(p); free(g);
  TF->free_state(st);
  return bad;
}

TEST(transformer_gradient_check) {
  const int pools[2] = {MLSYS_CONTRACODE_POOL_MEAN_NONPAD, MLSYS_CONTRACODE_POOL_MEAN_ALL};
  for (int k = 0; k < 3; k++) {
    /* k 0, 1: both pools without dropout; k 2: dropout 0.2 (the masks fixed by re-seeding before each forward) */
    mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 2, 2, 24, pools[k == 1], k == 2 ? 0.2f : 0.0f);
    double worst;
    int n, bad = grad_check(&c, &worst, &n, -2);
    CHECK_MSG(bad == 0, "case %d: %d of %d entries off (worst %.3g × tol)", k, bad, n, worst);
    CHECK_EQ_INT(n, (2 * P_NT + 2) * 20);
    printf("    case %d: %d entries, worst |analytic − numeric| = %.3g × tolerance\n", k, n, worst);
  }
}

/* The float backward against central differences of the double reference forward (eps 1e-5 in double, so the
   numeric gradient is good to ~1e-8): an oracle independent of the float forward, with a tighter tolerance. */
TEST(transformer_gradient_vs_double_reference) {
  const int B = 3, T = 7, lens[3] = {7, 4, 1}, d = 16;
  for (int pm = 0; pm < 2; pm++) {
    mlsys_contracode_enc_cfg c = tf_cfg(30, d, 2, 2, 24, pm ? MLSYS_CONTRACODE_POOL_MEAN_ALL : MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.0f);
    const size_t np = TF->nparams(&c);
    float *p = new_params(&c, 71), *g = calloc(np, sizeof(float)), out[48], dp[48];
    double R[48], ref[48], worst = 0;
    int32_t ids[21];
    void *st = NULL;
    mlsys_rng r;
    int bad = 0, n = 0;
    jitter_ln(&c, p, 72);
    mlsys_rng_seed(&r, 73);
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, 30);
    for (int i = 0; i < B * d; i++) { R[i] = mlsys_rng_normal(&r); dp[i] = (float)R[i]; }
    REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
    REQUIRE_OK(TF->backward(&c, p, g, st, NULL, dp));
    double *P = malloc(np * sizeof(double));
    for (size_t i = 0; i < np; i++) P[i] = p[i];
    for (int k = 0; k < 400; k++) {   /* entries over the whole array, a third of them in embedding rows in use */
      const size_t i = k % 3 == 0 ? (size_t)ids[mlsys_rng_below(&r, 21)] * d + mlsys_rng_below(&r, (uint64_t)d)
                                  : (size_t)(30 * d) + mlsys_rng_below(&r, np - 30 * d);
      const double eps = 1e-5;
      double lp = 0, lm = 0;
      P[i] = p[i] + eps;
      ref_forward_d(&c, P, ids, lens, B, T, ref);
      for (int j = 0; j < B * d; j++) lp += ref[j] * R[j];
      P[i] = p[i] - eps;
      ref_forward_d(&c, P, ids, lens, B, T, ref);
      for (int j = 0; j < B * d; j++) lm += ref[j] * R[j];
      P[i] = p[i];
      const double num = (lp - lm) / (2 * eps), tol = 1e-5 + 1e-4 * fabs(num);
      if (fabs(g[i] - num) > tol) {
        if (bad < 5) printf("    entry %zu: analytic %.8g numeric %.8g\n", i, (double)g[i], num);
        bad++;
      }
      worst = fmax(worst, fabs(g[i] - num) / tol);
      n++;
    }
    CHECK_MSG(bad == 0, "pool %d: %d of %d entries off (worst %.3g × tol)", pm, bad, n, worst);
    printf("    pool %d: %d entries, worst |analytic − numeric| = %.3g × (1e-5 + 1e-4·|g|)\n", pm, n, worst);
    free(P);
    TF->free_state(st);
    free(p); free(g);
  }
}

/* The check has teeth: a gradient with one tensor's sign flipped fails it, for every tensor (embedding = −1,
   the final LN = 2·P_NT). */
TEST(transformer_gradient_check_catches_wrong_sign) {
  mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 2, 2, 24, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.0f);
  for (int tsr = -1; tsr <= 2 * P_NT; tsr++) {
    double worst;
    int n, bad = grad_check(&c, &worst, &n, tsr);
    CHECK_EQ_INT(n, 20);
    CHECK_MSG(bad > 0, "tensor %d: a flipped sign passed", tsr);
  }
}

TEST(transformer_padding_invariance) {
  const int B = 3, T = 7, lens[3] = {7, 4, 1}, d = 16;
  mlsys_contracode_enc_cfg c = tf_cfg(30, d, 2, 2, 24, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.0f);
  const size_t np = TF->nparams(&c);
  float *p = new_params(&c, 21), *g = calloc(np, sizeof(float)), o1[48], o2[48], dp[48];
  int32_t ids[21], ids2[21];
  void *st = NULL;
  mlsys_rng r;
  mlsys_rng_seed(&r, 22);
  /* real tokens use ids 0..19, padding 20..29, so the padding rows are not shared with real tokens */
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      ids[b * T + t] = (int32_t)(t < lens[b] ? mlsys_rng_below(&r, 20) : 20 + mlsys_rng_below(&r, 10));
      ids2[b * T + t] = t < lens[b] ? ids[b * T + t] : (int32_t)(20 + mlsys_rng_below(&r, 10));
    }
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, o1));
  for (int i = 0; i < B * d; i++) dp[i] = (float)mlsys_rng_normal(&r);
  REQUIRE_OK(TF->backward(&c, p, g, st, NULL, dp));
  for (int i = 20 * d; i < 30 * d; i++) CHECK(g[i] == 0.0f);
  {
    int nz = 0;
    for (int i = 0; i < 20 * d; i++) nz += g[i] != 0.0f;
    CHECK(nz > 0);
  }
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids2, lens, B, T, 0, NULL, o2));
  CHECK(memcmp(o1, o2, sizeof o1) == 0);
  /* with MEAN_ALL the padding does count */
  c.pool = MLSYS_CONTRACODE_POOL_MEAN_ALL;
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, o1));
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids2, lens, B, T, 0, NULL, o2));
  CHECK(memcmp(o1 + 16, o2 + 16, 32 * sizeof(float)) != 0);
  TF->free_state(st);
  free(p); free(g);
}

/* Serial and 2 / 4 threads: bitwise equal pooled outputs and gradients, with dropout. Sizes cross the dense kernels'
   tiles (64 rows, 32 outputs). */
TEST(transformer_thread_independence) {
  const int B = 4, T = 40, d = 64, lens[4] = {40, 17, 1, 33};
  mlsys_contracode_enc_cfg c = tf_cfg(50, d, 2, 4, 96, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.1f);
  const size_t np = TF->nparams(&c);
  float *p = new_params(&c, 31), *g[3], out[3][4 * 64], dp[4 * 64];
  int32_t ids[160];
  mlsys_rng r;
  const int nth[3] = {0, 2, 4};
  mlsys_rng_seed(&r, 32);
  for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, 50);
  for (int i = 0; i < B * d; i++) dp[i] = (float)mlsys_rng_normal(&r);
  for (int k = 0; k < 3; k++) {
    mlsys_pool *pool = NULL;
    void *st = NULL;
    if (nth[k]) REQUIRE_OK(mlsys_pool_create(nth[k], &pool));
    g[k] = calloc(np, sizeof(float));
    mlsys_rng_seed(&r, 33);
    REQUIRE_OK(TF->forward(&c, p, &st, pool, ids, lens, B, T, 1, &r, out[k]));
    REQUIRE_OK(TF->backward(&c, p, g[k], st, pool, dp));
    TF->free_state(st);
    mlsys_pool_free(pool);
  }
  for (int k = 1; k < 3; k++) {
    CHECK(memcmp(out[0], out[k], sizeof out[0]) == 0);
    CHECK(memcmp(g[0], g[k], np * sizeof(float)) == 0);
  }
  for (int k = 0; k < 3; k++) free(g[k]);
  free(p);
}

TEST(transformer_dropout) {
  const int B = 3, T = 7, lens[3] = {7, 4, 1};
  mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 2, 2, 24, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.3f);
  float *p = new_params(&c, 41), a[48], b[48], e[48], z[48], z2[48];
  int32_t ids[21];
  void *st = NULL;
  mlsys_rng r;
  mlsys_rng_seed(&r, 42);
  for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, 30);
  mlsys_rng_seed(&r, 5);
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, a));
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, e));   /* the rng moved on: new masks */
  mlsys_rng_seed(&r, 5);
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, b));
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, &r, z));
  c.dropout = 0;   /* train 1 without dropout is the eval forward and draws nothing */
  REQUIRE_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, z2));
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK(memcmp(a, e, sizeof a) != 0);
  CHECK(memcmp(a, z, sizeof a) != 0);
  CHECK(memcmp(z, z2, sizeof z) == 0);
  TF->free_state(st);
  free(p);
}

/* One state reused across batch shapes and dropout settings gives what a fresh state gives. */
TEST(transformer_state_reuse) {
  const int shapes[4][2] = {{3, 7}, {4, 9}, {2, 5}, {4, 9}};
  const float drops[4] = {0.0f, 0.2f, 0.0f, 0.3f};
  mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 2, 2, 24, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.0f);
  const size_t np = TF->nparams(&c);
  float *p = new_params(&c, 81), *g1 = malloc(np * sizeof(float)), *g2 = malloc(np * sizeof(float)), o1[64], o2[64], dp[64];
  int32_t ids[36];
  int lens[4];
  void *shared = NULL;
  mlsys_rng r;
  mlsys_rng_seed(&r, 82);
  for (int k = 0; k < 4; k++) {
    const int B = shapes[k][0], T = shapes[k][1];
    void *fresh = NULL;
    c.dropout = drops[k];
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)mlsys_rng_below(&r, 30);
    for (int b = 0; b < B; b++) lens[b] = 1 + (int)mlsys_rng_below(&r, (uint64_t)T);
    for (int i = 0; i < B * 16; i++) dp[i] = (float)mlsys_rng_normal(&r);
    memset(g1, 0, np * sizeof(float));
    memset(g2, 0, np * sizeof(float));
    mlsys_rng r1, r2;
    mlsys_rng_seed(&r1, 100 + k);
    mlsys_rng_seed(&r2, 100 + k);
    REQUIRE_OK(TF->forward(&c, p, &shared, NULL, ids, lens, B, T, 1, &r1, o1));
    REQUIRE_OK(TF->backward(&c, p, g1, shared, NULL, dp));
    REQUIRE_OK(TF->forward(&c, p, &fresh, NULL, ids, lens, B, T, 1, &r2, o2));
    REQUIRE_OK(TF->backward(&c, p, g2, fresh, NULL, dp));
    CHECK(memcmp(o1, o2, (size_t)B * 16 * sizeof(float)) == 0);
    CHECK(memcmp(g1, g2, np * sizeof(float)) == 0);
    TF->free_state(fresh);
  }
  TF->free_state(shared);
  free(p); free(g1); free(g2);
}

TEST(transformer_init) {
  mlsys_contracode_enc_cfg c = tf_cfg(100, 64, 2, 4, 96, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.1f);
  const size_t np = TF->nparams(&c);
  float *p = new_params(&c, 51), *q = new_params(&c, 51);
  double m = 0, v = 0, mx;
  size_t len, o;
  CHECK(memcmp(p, q, np * sizeof(float)) == 0);   /* seeded */
  for (int i = 0; i < 100 * 64; i++) { m += p[i]; v += (double)p[i] * p[i]; }
  m /= 6400; v = v / 6400 - m * m;
  CHECK_NEAR(m, 0, 0.05);   /* N(0,1): sd of the mean 0.0125 */
  CHECK_NEAR(v, 1, 0.1);
  struct { int w; double bound; } u[] = {{P_INW, sqrt(6.0 / 256)}, {P_OW, 1 / 8.0}, {P_F1W, 1 / 8.0}, {P_F1B, 1 / 8.0},
                                         {P_F2W, 1 / sqrt(96.0)}, {P_F2B, 1 / sqrt(96.0)}};
  for (int k = 0; k < 6; k++) {
    o = lay_off(&c, 1, u[k].w, &len);
    mx = 0;
    for (size_t i = 0; i < len; i++) mx = fmax(mx, fabs(p[o + i]));
    CHECK_MSG(mx <= u[k].bound && mx > 0.8 * u[k].bound, "tensor %d: max %g, bound %g", u[k].w, mx, u[k].bound);
  }
  for (int l = 0; l < 2; l++) {
    o = lay_off(&c, l, P_INB, &len);
    for (size_t i = 0; i < len; i++) CHECK(p[o + i] == 0);
    o = lay_off(&c, l, P_OB, &len);
    for (size_t i = 0; i < len; i++) CHECK(p[o + i] == 0);
    o = lay_off(&c, l, P_L1W, &len);
    for (size_t i = 0; i < len; i++) CHECK(p[o + i] == 1 && p[o + len + i] == 0);
    o = lay_off(&c, l, P_L2W, &len);
    for (size_t i = 0; i < len; i++) CHECK(p[o + i] == 1 && p[o + len + i] == 0);
  }
  for (size_t i = 0; i < 64; i++) CHECK(p[np - 128 + i] == 1 && p[np - 64 + i] == 0);
  free(p); free(q);
}

TEST(transformer_bad_input) {
  const int B = 2, T = 5;
  mlsys_contracode_enc_cfg c = tf_cfg(30, 16, 1, 2, 24, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.1f);
  float *p = new_params(&c, 61), out[32], dp[32] = {0};
  int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  int lens[2] = {5, 3};
  void *st = NULL;
  mlsys_rng r;
  mlsys_rng_seed(&r, 1);
  CHECK_EQ_INT(TF->backward(&c, p, NULL, st, NULL, dp), MLSYS_ERR_ARG);   /* no forward yet */
  CHECK_CONTAINS(mlsys_last_error(), "without a training forward");
  c.max_len = 4;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "max_len");
  c.max_len = 64;
  lens[1] = 0;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "lens[1] = 0");
  lens[1] = 6;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "lens[1] = 6");
  lens[1] = 3;
  ids[7] = 30;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "id 30 at [1][2]");
  ids[7] = -1;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "vocabulary");
  ids[7] = 8;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out), MLSYS_ERR_ARG);   /* dropout, no rng */
  CHECK_CONTAINS(mlsys_last_error(), "rng");
  c.pool = MLSYS_CONTRACODE_POOL_LSTM_HIDDEN;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "pool mode");
  c.pool = MLSYS_CONTRACODE_POOL_MEAN_NONPAD;
  c.n_heads = 3;
  CHECK_EQ_INT(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "multiple of the heads");
  c.n_heads = 2;
  CHECK_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out));
  CHECK_EQ_INT(TF->backward(&c, p, NULL, st, NULL, dp), MLSYS_ERR_ARG);   /* an eval forward keeps nothing for it */
  CHECK_OK(TF->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, out));
  TF->free_state(st);
  free(p);
}

TEST_MAIN()
