/* tests/test_contracode_bilstm.c — the BiLSTM encoder body of mlsys_contracode.h section 6 (issue 25, §3.6, §7.4
   tests 17–18), called through mlsys__enc_bilstm_body. Oracles: the paper's parameter count and its closed form;
   central finite differences of Σ pooled·R for every parameter tensor (with and without dropout, every pool mode);
   a plain double-precision LSTM written here (its own loops and offsets, from the documented layout); invariants
   (padding ids never matter, a sequence's result is the same alone or in a batch, any thread count gives the same
   bits); bad input. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"

static const mlsys__enc_body *const BODY = &mlsys__enc_bilstm_body;

static mlsys_contracode_enc_cfg cfg_of(int V, int d, int L, int pool, float dropout) {
  mlsys_contracode_enc_cfg c;
  memset(&c, 0, sizeof c);
  c.type = MLSYS_CONTRACODE_ENC_BILSTM;
  c.vocab = V; c.d_model = d; c.n_layers = L; c.d_rep = 8; c.max_len = 64; c.pad_id = 0; c.pool = pool; c.dropout = dropout;
  return c;
}
static int pooled_dim(const mlsys_contracode_enc_cfg *c) {
  return c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN ? 2 * c->n_layers * c->d_model : 2 * c->d_model;
}
static float *new_params(const mlsys_contracode_enc_cfg *c, uint64_t seed) {
  size_t n = BODY->nparams(c);
  float *p = (float *)malloc(n * sizeof(float));
  mlsys_rng r;
  mlsys_rng_seed(&r, seed);
  BODY->init(c, p, &r);
  return p;
}
/* ids 1..V−1 at real positions, 0 (the pad id) past lens, so row 0 of the embedding is never read */
static void make_batch(int32_t *ids, const int *lens, int B, int T, int V, uint64_t seed) {
  mlsys_rng r;
  mlsys_rng_seed(&r, seed);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) ids[b * T + t] = t < lens[b] ? (int32_t)(1 + mlsys_rng_below(&r, (uint64_t)V - 1)) : 0;
}

TEST(bilstm_nparams) {
  mlsys_contracode_enc_cfg c = cfg_of(8000, 512, 2, MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, 0.1f);
  CHECK_EQ_INT(BODY->nparams(&c), 14598144); /* §7.4 test 17 */
  CHECK_EQ_INT(mlsys__enc_lstm_pooled_dim(&c), 2048);
  c.pool = MLSYS_CONTRACODE_POOL_MEAN_NONPAD;
  CHECK_EQ_INT(mlsys__enc_lstm_pooled_dim(&c), 1024);
  c.pool = 17;
  CHECK_EQ_INT(mlsys__enc_lstm_pooled_dim(&c), 0);
  /* closed form: V·h + 2·(4h·h + 4h·h + 8h) for layer 0 + 2·(4h·2h + 4h·h + 8h) for each further layer */
  for (int V = 1; V <= 40; V += 13)
    for (int h = 1; h <= 9; h += 4)
      for (int L = 1; L <= 4; L++) {
        c = cfg_of(V, h, L, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0);
        long want = (long)V * h + 2L * (8L * h * h + 8 * h) + 2L * (L - 1) * (12L * h * h + 8 * h);
        CHECK_EQ_INT(BODY->nparams(&c), want);
      }
  c = cfg_of(30, 12, 2, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0);
  CHECK_EQ_INT(BODY->nparams(&c), 30 * 12 + 2 * (4 * 12 * 12 + 4 * 12 * 12 + 8 * 12) + 2 * (4 * 12 * 24 + 4 * 12 * 12 + 8 * 12));
  c.d_model = 0;
  CHECK_EQ_INT(BODY->nparams(&c), 0);
  c = cfg_of(30, 12, 0, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0);
  CHECK_EQ_INT(BODY->nparams(&c), 0);
}

TEST(bilstm_init_distribution) {
  /* Embedding N(0,1), every LSTM tensor U(±1/√h): moments over many draws, bounds exactly */
  mlsys_contracode_enc_cfg c = cfg_of(400, 25, 2, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0);
  float *p = new_params(&c, 5);
  size_t n = BODY->nparams(&c), ne = 400 * 25;
  double s = 0, s2 = 0, a = 1.0 / 5, mx = 0, u2 = 0;
  for (size_t i = 0; i < ne; i++) { s += p[i]; s2 += (double)p[i] * p[i]; }
  CHECK_NEAR(s / ne, 0, 0.04);
  CHECK_NEAR(s2 / ne, 1, 0.05);
  for (size_t i = ne; i < n; i++) { if (fabs(p[i]) > mx) mx = fabs(p[i]); u2 += (double)p[i] * p[i]; }
  CHECK(mx <= a);
  CHECK(mx > 0.99 * a);
  CHECK_NEAR(u2 / (double)(n - ne), a * a / 3, 0.03 * a * a); /* variance of U(−a, a) */
  free(p);
}

static double loss_of(const mlsys_contracode_enc_cfg *c, const float *p, const int32_t *ids, const int *lens, int B, int T,
                      const double *R, float *pooled, uint64_t drop_seed) {
  mlsys_rng r;
  void *st = NULL;
  mlsys_rng_seed(&r, drop_seed);
  /* a train forward reseeded each time draws the same dropout masks, so the loss is a smooth function of p */
  if (BODY->forward(c, p, &st, NULL, ids, lens, B, T, c->dropout > 0, &r, pooled) != MLSYS_OK) return NAN;
  BODY->free_state(st);
  double L = 0;
  for (int i = 0; i < B * pooled_dim(c); i++) L += R[i] * pooled[i];
  return L;
}

/* Central differences for ~20 entries of each tensor (emb rows that occur, w_ih, w_hh, b_ih, b_hh of every layer and
   direction); every emb row that never occurs at a real position must get exactly zero gradient. */
#define TOL_ABS 2e-4
static void grad_check(int pool, float dropout) {
  enum { B = 3, T = 6, V = 30, D = 12, L = 2 };
  const int lens[B] = {6, 3, 1};
  mlsys_contracode_enc_cfg c = cfg_of(V, D, L, pool, dropout);
  float *p = new_params(&c, 11);
  size_t n = BODY->nparams(&c);
  float *g = (float *)calloc(n, sizeof(float)), *pooled = (float *)malloc(sizeof(float) * B * 2 * L * D);
  int pd = pooled_dim(&c);
  double *R = (double *)malloc(sizeof(double) * B * pd);
  float *Rf = (float *)malloc(sizeof(float) * B * pd);
  int32_t ids[B * T];
  mlsys_rng r;
  void *st = NULL;
  make_batch(ids, lens, B, T, V, 3);
  ids[0] = 7; ids[1] = 7; /* a repeated id sums two contributions */
  mlsys_rng_seed(&r, 99);
  for (int i = 0; i < B * pd; i++) { R[i] = 2 * mlsys_rng_uniform(&r) - 1; Rf[i] = (float)R[i]; }
  mlsys_rng_seed(&r, 1234);
  REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, pooled));
  REQUIRE_OK(BODY->backward(&c, p, g, st, NULL, Rf));
  BODY->free_state(st);

  int used[V] = {0};
  for (int b = 0; b < B; b++)
    for (int t = 0; t < lens[b]; t++) used[ids[b * T + t]] = 1;
  for (int v = 0; v < V; v++)
    if (!used[v])
      for (int k = 0; k < D; k++) CHECK_MSG(g[v * D + k] == 0.0f, "emb row %d (never at a real position) got %g", v, g[v * D + k]);

  /* tensor list: [start, length) */
  size_t start[1 + 8 * L], len[1 + 8 * L];
  int nt = 0;
  start[nt] = 0; len[nt++] = (size_t)V * D;
  for (int l = 0; l < L; l++)
    for (int dir = 0; dir < 2; dir++) {
      size_t in = l ? 2 * D : D, o = mlsys__enc_lstm_off(&c, l, dir);
      start[nt] = o; len[nt++] = 4 * D * in;
      start[nt] = o + 4 * D * in; len[nt++] = 4 * D * D;
      start[nt] = o + 4 * D * in + 4 * D * D; len[nt++] = 4 * D;
      start[nt] = o + 4 * D * in + 4 * D * D + 4 * D; len[nt++] = 4 * D;
    }
  CHECK_EQ_INT(start[nt - 1] + len[nt - 1], n);
  double worst = 0;
  for (int ti = 0; ti < nt; ti++) {
    int big = 0;
    for (int s = 0; s < 20; s++) {
      size_t i;
      if (ti == 0) {
        int v;
        do v = (int)mlsys_rng_below(&r, V); while (!used[v]);
        i = (size_t)v * D + mlsys_rng_below(&r, D);
      } else {
        i = start[ti] + mlsys_rng_below(&r, len[ti]);
      }
      float orig = p[i];
      const float eps = 1e-2f;
      p[i] = orig + eps;
      float up = p[i];
      double lp = loss_of(&c, p, ids, lens, B, T, R, pooled, 1234);
      p[i] = orig - eps;
      float dn = p[i];
      double lm = loss_of(&c, p, ids, lens, B, T, R, pooled, 1234);
      p[i] = orig;
      double num = (lp - lm) / ((double)up - dn), err = fabs(num - g[i]);
      double tol = TOL_ABS + 1e-2 * fabs(num);
      if (err / tol > worst) worst = err / tol;
      if (fabs(num) > 10 * TOL_ABS) big++;
      if (getenv("GC_VERBOSE")) printf("      t%d %zu num %.4g err %.3g\n", ti, i, num, err);
      CHECK_MSG(err <= tol, "pool %d dropout %g tensor %d entry %zu: analytic %.7g numeric %.7g", pool, (double)dropout, ti, i,
                (double)g[i], num);
    }
    /* each tensor's sample must include gradients well above the tolerance, or the check would be vacuous */
    CHECK_MSG(big >= 3, "pool %d tensor %d: only %d sampled gradients above %g", pool, ti, big, 10 * TOL_ABS);
  }
  printf("    pool %d dropout %.1f: worst error / tolerance %.3f\n", pool, (double)dropout, worst);
  free(p); free(g); free(pooled); free(R); free(Rf);
}

TEST(bilstm_gradcheck_hidden) { grad_check(MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, 0); }
TEST(bilstm_gradcheck_mean_nonpad) { grad_check(MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0); }
TEST(bilstm_gradcheck_mean_all) { grad_check(MLSYS_CONTRACODE_POOL_MEAN_ALL, 0); }
TEST(bilstm_gradcheck_dropout) {
  grad_check(MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, 0.3f);
  grad_check(MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.3f);
}

/* ---- the reference: one sequence through a plain double-precision BiLSTM ---- */
static double sig(double x) { return 1 / (1 + exp(-x)); }
/* run one direction of one layer over x (n × in), writing h (n × H) at the positions it visits */
static void ref_dir(const float *P, size_t off, int in, int H, const double *x, int n, int reverse, double *hout) {
  const float *Wih = P + off, *Whh = Wih + (size_t)4 * H * in, *bih = Whh + (size_t)4 * H * H, *bhh = bih + 4 * H;
  double h[64] = {0}, c[64] = {0}, z[256];
  for (int s = 0; s < n; s++) {
    int t = reverse ? n - 1 - s : s;
    for (int r = 0; r < 4 * H; r++) {
      double a = (double)bih[r] + bhh[r];
      for (int k = 0; k < in; k++) a += (double)Wih[r * in + k] * x[t * in + k];
      for (int k = 0; k < H; k++) a += (double)Whh[r * H + k] * h[k];
      z[r] = a;
    }
    for (int k = 0; k < H; k++) {
      double i = sig(z[k]), f = sig(z[H + k]), gg = tanh(z[2 * H + k]), o = sig(z[3 * H + k]);
      c[k] = f * c[k] + i * gg;
      h[k] = o * tanh(c[k]);
      hout[t * H + k] = h[k];
    }
  }
}
/* pooled output of sequence ids[0..n) under cfg c (no dropout), T the padded length (MEAN_ALL divides by it) */
static void ref_pooled(const mlsys_contracode_enc_cfg *c, const float *P, const int32_t *ids, int n, int T, double *out) {
  int H = c->d_model, L = c->n_layers, V = c->vocab;
  double *x = (double *)malloc(sizeof(double) * n * 2 * H), *y = (double *)malloc(sizeof(double) * n * 2 * H),
         *hf = (double *)malloc(sizeof(double) * n * H), *hb = (double *)malloc(sizeof(double) * n * H);
  for (int t = 0; t < n; t++)
    for (int k = 0; k < H; k++) {
      double pe = k % 2 == 0 ? sin(t / pow(10000.0, (double)k / H)) : cos(t / pow(10000.0, (double)(k - 1) / H));
      x[t * H + k] = (double)P[ids[t] * H + k] * sqrt((double)H) + pe;
    }
  size_t off = (size_t)V * H;
  int in = H;
  for (int l = 0; l < L; l++) {
    size_t per = (size_t)4 * H * in + (size_t)4 * H * H + 8 * H;
    ref_dir(P, off, in, H, x, n, 0, hf);
    ref_dir(P, off + per, in, H, x, n, 1, hb);
    off += 2 * per;
    for (int t = 0; t < n; t++)
      for (int k = 0; k < H; k++) { y[t * 2 * H + k] = hf[t * H + k]; y[t * 2 * H + H + k] = hb[t * H + k]; }
    if (c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN)
      for (int k = 0; k < H; k++) { out[2 * l * H + k] = hf[(n - 1) * H + k]; out[(2 * l + 1) * H + k] = hb[k]; }
    memcpy(x, y, sizeof(double) * n * 2 * H);
    in = 2 * H;
  }
  if (c->pool != MLSYS_CONTRACODE_POOL_LSTM_HIDDEN)
    for (int k = 0; k < 2 * H; k++) {
      double s = 0;
      for (int t = 0; t < n; t++) s += y[t * 2 * H + k];
      out[k] = s / (c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : n);
    }
  free(x); free(y); free(hf); free(hb);
}

TEST(bilstm_matches_reference) {
  /* even and odd widths, 1–3 layers, all pool modes; each row of a padded batch against the reference */
  const int shapes[][3] = {{30, 12, 2}, {17, 7, 3}, {9, 4, 1}};
  const int pools[] = {MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, MLSYS_CONTRACODE_POOL_MEAN_ALL};
  enum { B = 3, T = 8 };
  const int lens[B] = {8, 5, 1};
  for (int si = 0; si < 3; si++)
    for (int pi = 0; pi < 3; pi++) {
      mlsys_contracode_enc_cfg c = cfg_of(shapes[si][0], shapes[si][1], shapes[si][2], pools[pi], 0.1f);
      float *p = new_params(&c, 40 + si);
      int pd = pooled_dim(&c);
      float *pooled = (float *)malloc(sizeof(float) * B * pd);
      double *ref = (double *)malloc(sizeof(double) * pd);
      int32_t ids[B * T];
      make_batch(ids, lens, B, T, c.vocab, 7 + si);
      /* train = 0: no dropout although cfg.dropout is set */
      REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids, lens, B, T, 0, NULL, pooled));
      for (int b = 0; b < B; b++) {
        double mx = 0, err = 0;
        ref_pooled(&c, p, ids + b * T, lens[b], T, ref);
        for (int k = 0; k < pd; k++) {
          if (fabs(ref[k]) > mx) mx = fabs(ref[k]);
          if (fabs(pooled[b * pd + k] - ref[k]) > err) err = fabs(pooled[b * pd + k] - ref[k]);
        }
        CHECK(mx > 1e-2);
        CHECK_MSG(err <= 1e-5 * mx, "shape %d pool %d row %d: max error %.3g (max |ref| %.3g)", si, pools[pi], b, err, mx);
      }
      free(p); free(pooled); free(ref);
    }
}

TEST(bilstm_packing) {
  enum { B = 3, T = 6 };
  const int lens[B] = {6, 3, 1};
  const int pools[] = {MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, MLSYS_CONTRACODE_POOL_MEAN_ALL};
  for (int pi = 0; pi < 3; pi++) {
    mlsys_contracode_enc_cfg c = cfg_of(30, 12, 2, pools[pi], 0);
    float *p = new_params(&c, 8);
    int pd = pooled_dim(&c);
    float a[B * 48], bq[B * 48], one[48];
    int32_t ids[B * T], ids2[B * T];
    make_batch(ids, lens, B, T, 30, 4);
    memcpy(ids2, ids, sizeof ids);
    for (int b = 0; b < B; b++)
      for (int t = lens[b]; t < T; t++) ids2[b * T + t] = (int32_t)(1 + (b * 7 + t * 3) % 29);
    REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids, lens, B, T, 0, NULL, a));
    REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids2, lens, B, T, 0, NULL, bq));
    CHECK(memcmp(a, bq, sizeof(float) * B * pd) == 0);
    for (int b = 0; b < B; b++) {
      /* alone, with the same padded length */
      REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids2 + b * T, lens + b, 1, T, 0, NULL, one));
      CHECK_MSG(memcmp(one, a + b * pd, sizeof(float) * pd) == 0, "pool %d row %d differs alone", pools[pi], b);
      /* alone and unpadded (MEAN_ALL divides by T, so only the other modes) */
      if (pools[pi] != MLSYS_CONTRACODE_POOL_MEAN_ALL) {
        REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids + b * T, lens + b, 1, lens[b], 0, NULL, one));
        CHECK_MSG(memcmp(one, a + b * pd, sizeof(float) * pd) == 0, "pool %d row %d differs unpadded", pools[pi], b);
      }
    }
    /* a sequence's gradient is its own: the batch's gradient = the sum of the rows' gradients (to rounding) */
    {
      size_t n = BODY->nparams(&c);
      float *g = (float *)calloc(n, sizeof(float)), *gs = (float *)calloc(n, sizeof(float)), dp[B * 48];
      void *st = NULL;
      double mx = 0, err = 0;
      for (int i = 0; i < B * pd; i++) dp[i] = (float)sin(1.0 + i);
      REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, a));
      REQUIRE_OK(BODY->backward(&c, p, g, st, NULL, dp));
      for (int b = 0; b < B; b++) {
        REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids + b * T, lens + b, 1, T, 1, NULL, a));
        REQUIRE_OK(BODY->backward(&c, p, gs, st, NULL, dp + b * pd));
      }
      BODY->free_state(st);
      for (size_t i = 0; i < n; i++) {
        if (fabs(gs[i]) > mx) mx = fabs(gs[i]);
        if (fabs(g[i] - gs[i]) > err) err = fabs(g[i] - gs[i]);
      }
      CHECK(mx > 0.1);
      CHECK_MSG(err <= 1e-5 * mx, "pool %d: batch gradient vs per-row sum: %.3g", pools[pi], err);
      free(g); free(gs);
    }
    free(p);
  }
}

TEST(bilstm_threads_bitwise) {
  enum { B = 7, T = 11, D = 20 };
  int lens[B];
  mlsys_contracode_enc_cfg c = cfg_of(50, D, 2, MLSYS_CONTRACODE_POOL_LSTM_HIDDEN, 0.2f);
  float *p = new_params(&c, 21);
  size_t n = BODY->nparams(&c);
  int pd = pooled_dim(&c);
  int32_t ids[B * T];
  float *out[3], *g[3], *dp = (float *)malloc(sizeof(float) * B * pd);
  mlsys_pool *pools[3] = {NULL, NULL, NULL};
  REQUIRE_OK(mlsys_pool_create(1, &pools[1]));
  REQUIRE_OK(mlsys_pool_create(2, &pools[2]));
  for (int b = 0; b < B; b++) lens[b] = 1 + (b * 5) % T;
  make_batch(ids, lens, B, T, 50, 6);
  for (int i = 0; i < B * pd; i++) dp[i] = (float)cos(0.3 * i);
  for (int k = 0; k < 3; k++) {
    mlsys_rng r;
    void *st = NULL;
    mlsys_rng_seed(&r, 77);
    out[k] = (float *)malloc(sizeof(float) * B * pd);
    g[k] = (float *)calloc(n, sizeof(float));
    REQUIRE_OK(BODY->forward(&c, p, &st, pools[k], ids, lens, B, T, 1, &r, out[k]));
    REQUIRE_OK(BODY->backward(&c, p, g[k], st, pools[k], dp));
    BODY->free_state(st);
  }
  for (int k = 1; k < 3; k++) {
    CHECK(memcmp(out[0], out[k], sizeof(float) * B * pd) == 0);
    CHECK(memcmp(g[0], g[k], sizeof(float) * n) == 0);
  }
  for (int k = 0; k < 3; k++) { free(out[k]); free(g[k]); mlsys_pool_free(pools[k]); }
  free(dp); free(p);
}

TEST(bilstm_dropout_train_only) {
  enum { B = 2, T = 5 };
  const int lens[B] = {5, 4};
  mlsys_contracode_enc_cfg c = cfg_of(20, 8, 2, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0.5f);
  float *p = new_params(&c, 2), e1[B * 16], e2[B * 16], t1[B * 16], t2[B * 16], t3[B * 16];
  int32_t ids[B * T];
  mlsys_rng r;
  void *st = NULL;
  make_batch(ids, lens, B, T, 20, 9);
  REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids, lens, B, T, 0, NULL, e1));
  c.dropout = 0;
  REQUIRE_OK(BODY->forward(&c, p, NULL, NULL, ids, lens, B, T, 0, NULL, e2));
  CHECK(memcmp(e1, e2, sizeof e1) == 0); /* eval ignores dropout */
  c.dropout = 0.5f;
  mlsys_rng_seed(&r, 1);
  REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, t1));
  REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, t2));
  mlsys_rng_seed(&r, 1);
  REQUIRE_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, &r, t3));
  CHECK(memcmp(t1, t3, sizeof t1) == 0); /* the same draws give the same masks */
  CHECK(memcmp(t1, t2, sizeof t1) != 0);
  CHECK(memcmp(t1, e1, sizeof t1) != 0);
  BODY->free_state(st);
  free(p);
}

TEST(bilstm_bad_input) {
  enum { B = 2, T = 4 };
  int lens[B] = {4, 2};
  mlsys_contracode_enc_cfg c = cfg_of(10, 4, 2, MLSYS_CONTRACODE_POOL_MEAN_NONPAD, 0);
  float *p = new_params(&c, 1), out[B * 16], *g = (float *)calloc(BODY->nparams(&c), sizeof(float));
  int32_t ids[B * T] = {1, 2, 3, 4, 5, 6, 0, 0};
  void *st = NULL;
  mlsys_status s;
#define BAD(call)                                          \
  do {                                                     \
    s = (call);                                            \
    CHECK_EQ_INT(s, MLSYS_ERR_ARG);                        \
    CHECK(strstr(mlsys_last_error(), "bilstm") != NULL);   \
  } while (0)
  BAD(BODY->backward(&c, p, g, NULL, NULL, out)); /* no train forward */
  ids[7] = 10;                                      /* out of the vocabulary, even in padding */
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  ids[7] = -1;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  ids[7] = 0;
  lens[1] = 0;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  lens[1] = 5;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  lens[1] = 2;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, 0, T, 1, NULL, out));
  c.max_len = 3;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  c.max_len = 64;
  BAD(BODY->forward(&c, p, &st, NULL, NULL, lens, B, T, 1, NULL, out));
  BAD(BODY->forward(&c, p, &st, NULL, ids, NULL, B, T, 1, NULL, out));
  BAD(BODY->forward(&c, p, NULL, NULL, ids, lens, B, T, 1, NULL, out)); /* train without a state slot */
  c.pool = 9;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out));
  c.pool = MLSYS_CONTRACODE_POOL_MEAN_NONPAD;
  c.dropout = 0.5f;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out)); /* dropout needs an rng */
  c.dropout = 1.0f;
  BAD(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 0, NULL, out));
  c.dropout = 0;
  CHECK(st == NULL);
  /* a valid train forward, then its one backward; a second backward is refused */
  CHECK_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  CHECK_OK(BODY->backward(&c, p, g, st, NULL, out));
  BAD(BODY->backward(&c, p, g, st, NULL, out));
  CHECK_OK(BODY->forward(&c, p, &st, NULL, ids, lens, B, T, 1, NULL, out));
  c.pool = MLSYS_CONTRACODE_POOL_LSTM_HIDDEN; /* a backward under another config */
  BAD(BODY->backward(&c, p, g, st, NULL, out));
  BODY->free_state(st);
#undef BAD
  free(p); free(g);
}

TEST_MAIN()
