/* Tests for section 5 of mlsys_offload.h: the pilot MLP (spec §3.3, §7.4 case 10), its model file (§2.3(f)) and the
   mis-prediction cache (§3.6).

   The outside oracle for the network is a second implementation written here in double precision from the layout
   the public header documents: it must reproduce the library's forward pass, and its central differences are the
   reference for the library's backward pass. Allocation failures are injected through tests/oom_alloc.h.
   Run from the repository root (the corpus test reads tests/fuzz/corpus/fuzz_offload_pilot/; MLSYS_WRITE_CORPUS=1
   rewrites those seed files first). */
#include "tests/oom_alloc.h"
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"
#include "tests/pilot_file.h"

#include <unistd.h>

/* ---- helpers ---- */

static mlsys_offload_pilot_cfg small_cfg(void) {
  mlsys_offload_pilot_cfg c;
  memset(&c, 0, sizeof c);
  c.e_proj = 4; c.d = 3; c.h = 5; c.d_out = 2; c.k_max = 1;
  return c;
}

/* A random static program's AFM: op rows with catalogue-like idiom counts and shapes, some all-zero control rows. */
static int random_afm(mlsys_rng *r, mlsys_offload_sig *rows, int cap) {
  int n = 5 + (int)mlsys_rng_below(r, (uint64_t)(cap - 5)), i, k;
  for (i = 0; i < n; i++) {
    memset(&rows[i], 0, sizeof rows[i]);
    if (mlsys_rng_below(r, 6) == 0) continue;   /* a BRANCH/LOOP row */
    for (k = 0; k < MLSYS_OFFLOAD_NIDIOM; k++) rows[i].idiom[k] = (int32_t)mlsys_rng_below(r, 3);
    for (k = 0; k < 3; k++) rows[i].dim[k] = (int64_t)mlsys_rng_below(r, 1025);
  }
  return n;
}

/* A plausible label: K blocks with decreasing row counts, idiom sums ≤ 2·rows, dim sums ≤ 3·rows; zero rows after. */
static void random_label(mlsys_rng *r, int k_max, float *label) {
  int K = 1 + (int)mlsys_rng_below(r, (uint64_t)k_max), k, i, prev = 41;
  memset(label, 0, sizeof(float) * (size_t)k_max * 10);
  for (k = 0; k < K; k++) {
    int rows = 1 + (int)mlsys_rng_below(r, (uint64_t)(prev < 40 ? prev : 40));
    float *row = label + 10 * k;
    prev = rows;
    row[0] = (float)rows;
    for (i = 1; i <= 6; i++) row[i] = (float)mlsys_rng_below(r, (uint64_t)(2 * rows + 1));
    for (i = 7; i <= 9; i++) row[i] = (float)mlsys_rng_below(r, (uint64_t)(3 * rows + 1));
  }
}

/* n samples: x_e from random embeddings through the pilot's own features, x_a from one random AFM per type. */
typedef struct {
  int n, xe, xa, ny;
  float *x_e, *x_a, *label;
  int *type;
} dataset;

static void dataset_free(dataset *d) {
  free(d->x_e); free(d->x_a); free(d->label); free(d->type);
  memset(d, 0, sizeof *d);
}

/* raw_x: x_e drawn N(0,1) directly (well-conditioned random inputs for the overfit test) instead of through the
   features of random embeddings. */
static int dataset_make(mlsys_offload_pilot *m, int n, uint64_t seed, int raw_x, dataset *ds) {
  mlsys_offload_pilot_cfg c = mlsys_offload_pilot_config(m);
  mlsys_rng r;
  mlsys_offload_sig rows[64];
  float afm_x[3][4096], emb[40 * 24];
  int i, t, k;
  mlsys_rng_seed(&r, seed);
  ds->n = n;
  ds->xe = c.e_proj + 2;
  ds->xa = mlsys_offload_pilot_afm_dim(m);
  ds->ny = c.k_max * 10;
  if (ds->xa > 4096) return -1;
  ds->x_e = (float *)malloc(sizeof(float) * (size_t)n * (size_t)ds->xe);
  ds->x_a = (float *)malloc(sizeof(float) * (size_t)n * (size_t)ds->xa);
  ds->label = (float *)malloc(sizeof(float) * (size_t)n * (size_t)ds->ny);
  ds->type = (int *)malloc(sizeof(int) * (size_t)n);
  if (!ds->x_e || !ds->x_a || !ds->label || !ds->type) return -1;
  for (t = 0; t < 3; t++) {
    int nr = random_afm(&r, rows, 64);
    mlsys_offload_pilot_afm_features(m, rows, nr, afm_x[t]);
  }
  for (i = 0; i < n; i++) {
    int ntok = 1 + (int)mlsys_rng_below(&r, 40);
    for (k = 0; k < ntok * 24; k++) emb[k] = (float)mlsys_rng_normal(&r);
    if (raw_x)
      for (k = 0; k < ds->xe; k++) ds->x_e[(size_t)i * (size_t)ds->xe + (size_t)k] = (float)mlsys_rng_normal(&r);
    else
      mlsys_offload_pilot_features(m, emb, ntok, 24, ds->x_e + (size_t)i * (size_t)ds->xe);
    ds->type[i] = (int)mlsys_rng_below(&r, 3);
    memcpy(ds->x_a + (size_t)i * (size_t)ds->xa, afm_x[ds->type[i]], sizeof(float) * (size_t)ds->xa);
    random_label(&r, c.k_max, ds->label + (size_t)i * (size_t)ds->ny);
  }
  return 0;
}

/* Samples whose decoded prediction equals the label in all k_max·10 integers. */
static int exact_matches(mlsys_offload_pilot *m, const dataset *ds) {
  float y[4096];
  int32_t pred[4096];
  int i, k, hits = 0;
  for (i = 0; i < ds->n; i++) {
    int ok = 1;
    mlsys_offload_pilot_forward(m, ds->x_e + (size_t)i * (size_t)ds->xe, ds->x_a + (size_t)i * (size_t)ds->xa, ds->type[i], y);
    mlsys_offload_pilot_decode(m, y, pred);
    for (k = 0; k < ds->ny; k++) ok &= pred[k] == (int32_t)ds->label[(size_t)i * (size_t)ds->ny + (size_t)k];
    hits += ok;
  }
  return hits;
}

/* ---- the reference network (double precision, from the documented layout) ---- */

typedef struct {
  int xe, xa, d, h, o, ny;
  double leaky, w_rows;
  size_t we, be, wa, ba, w1[3], b1[3], w2[3], b2[3], w3[3], b3[3], wo, bo, n;
} ref_net;

static ref_net ref_of(mlsys_offload_pilot *m) {
  mlsys_offload_pilot_cfg c = mlsys_offload_pilot_config(m);
  ref_net r;
  size_t o = 0;
  int t;
  memset(&r, 0, sizeof r);
  r.xe = c.e_proj + 2; r.xa = mlsys_offload_pilot_afm_dim(m); r.d = c.d; r.h = c.h; r.o = c.d_out; r.ny = c.k_max * 10;
  r.leaky = c.leaky; r.w_rows = c.w_rows;
  r.we = o; o += (size_t)r.d * r.xe;
  r.be = o; o += (size_t)r.d;
  r.wa = o; o += (size_t)r.d * r.xa;
  r.ba = o; o += (size_t)r.d;
  for (t = 0; t < 3; t++) {
    r.w1[t] = o; o += (size_t)r.h * 2 * r.d;
    r.b1[t] = o; o += (size_t)r.h;
    r.w2[t] = o; o += (size_t)r.h * r.h;
    r.b2[t] = o; o += (size_t)r.h;
    r.w3[t] = o; o += (size_t)r.o * r.h;
    r.b3[t] = o; o += (size_t)r.o;
  }
  r.wo = o; o += (size_t)r.ny * r.o;
  r.bo = o; o += (size_t)r.ny;
  r.n = o;
  return r;
}

/* y = W x + b, then LReLU when act; signs (when given) records u > 0 per unit. */
static void ref_layer(const double *P, size_t w, size_t b, const double *x, int nin, int nout, int act, double leaky, double *y,
                      unsigned char **signs) {
  int i, j;
  for (j = 0; j < nout; j++) {
    double u = P[b + (size_t)j];
    for (i = 0; i < nin; i++) u += P[w + (size_t)j * nin + i] * x[i];
    if (act) {
      if (signs) *(*signs)++ = u > 0;
      u = u > 0 ? u : leaky * u;
    }
    y[j] = u;
  }
}

static double ref_loss(const ref_net *r, const double *P, const float *xe, const float *xa, int t, const float *label, double *yout,
                       unsigned char *signs) {
  double x1[4096], x2[4096], c[512], a1[512], a2[512], z[512], y[4096], loss = 0;
  int i;
  for (i = 0; i < r->xe; i++) x1[i] = xe[i];
  for (i = 0; i < r->xa; i++) x2[i] = xa[i];
  ref_layer(P, r->we, r->be, x1, r->xe, r->d, 1, r->leaky, c, signs ? &signs : NULL);
  ref_layer(P, r->wa, r->ba, x2, r->xa, r->d, 1, r->leaky, c + r->d, signs ? &signs : NULL);
  ref_layer(P, r->w1[t], r->b1[t], c, 2 * r->d, r->h, 1, r->leaky, a1, signs ? &signs : NULL);
  ref_layer(P, r->w2[t], r->b2[t], a1, r->h, r->h, 1, r->leaky, a2, signs ? &signs : NULL);
  ref_layer(P, r->w3[t], r->b3[t], a2, r->h, r->o, 1, r->leaky, z, signs ? &signs : NULL);
  ref_layer(P, r->wo, r->bo, z, r->o, r->ny, 0, 0, y, NULL);
  for (i = 0; i < r->ny; i++) {
    double e = y[i] - log1p((double)label[i]), w = i % 10 == 0 ? r->w_rows : 1.0;
    loss += w * e * e;
    if (yout) yout[i] = y[i];
  }
  return loss / r->ny;
}

/* ---- tests ---- */

TEST(pilot_nparams_formula) {
  mlsys_offload_pilot *m = NULL;
  mlsys_offload_pilot_cfg c;
  /* default, by hand: W_e 16·(32+2) + 16 = 560; W_a 16·11 + 16 = 192; per expert 32·32+32 + 32·32+32 + 32·32+32 =
     3168, three of them 9504; W_o 160·32 + 160 = 5280; total 15536 */
  REQUIRE_OK(mlsys_offload_pilot_create(NULL, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 15536);
  CHECK_EQ_INT(mlsys_offload_pilot_afm_dim(m), 11);
  c = mlsys_offload_pilot_config(m);
  CHECK(c.e_proj == 32 && c.d == 16 && c.h == 32 && c.d_out == 32 && c.k_max == 16 && c.afm_full == 0 && c.afm_rows_max == 256);
  CHECK(c.leaky == 0.01f && c.lr == 0.01f && c.w_rows == 4.0f && c.seed == 1);
  printf("    pilot nparams, default config (compact AFM): %zu (the seed paper reports 3,260)\n", mlsys_offload_pilot_nparams(m));
  mlsys_offload_pilot_free(m);
  /* full AFM: W_a becomes 16·(256·9) + 16 = 36880, so 15536 − 192 + 36880 = 52224 */
  memset(&c, 0, sizeof c);
  c.afm_full = 1;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 52224);
  CHECK_EQ_INT(mlsys_offload_pilot_afm_dim(m), 2304);
  printf("    pilot nparams, default config with the full AFM: %zu\n", mlsys_offload_pilot_nparams(m));
  mlsys_offload_pilot_free(m);
  /* e_proj 4, d 3, h 5, d_out 2, k_max 1: 3·6+3 + 3·11+3 + 3·(5·6+5 + 5·5+5 + 2·5+2) + 10·2+10 = 21+36+231+30 = 318 */
  c = small_cfg();
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 318);
  mlsys_offload_pilot_free(m);
  /* a config of the paper's size: e_proj 8, d 8, h 12, d_out 8: 88 + 96 + 3·(204+156+104) + 1440 = 3016 */
  memset(&c, 0, sizeof c);
  c.e_proj = 8; c.d = 8; c.h = 12; c.d_out = 8;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 3016);
  mlsys_offload_pilot_free(m);
}

TEST(pilot_bad_config_and_args) {
  mlsys_offload_pilot *m = (mlsys_offload_pilot *)1;
  mlsys_offload_pilot_cfg c;
  float x[64], y[160], lab[160];
  int t = 3;
  memset(&c, 0, sizeof c);
  c.d = -1;
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_ARG);
  CHECK(m == NULL);
  CHECK_CONTAINS(mlsys_last_error(), "d = -1");
  c.d = 0; c.h = MLSYS_OFFLOAD_PILOT_MAX_DIM + 1;
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "h = 4097");
  c.h = 0; c.afm_full = 2;
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "afm_full");
  c.afm_full = 0; c.leaky = -0.5f;
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "leaky");
  c.leaky = 0; c.lr = NAN;
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "lr");
  c.lr = 0; c.afm_full = 1; c.afm_rows_max = MLSYS_OFFLOAD_PILOT_MAX_ROWS; c.d = 4096;   /* 4096·589824 weights */
  CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &m), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "parameters");
  CHECK_EQ_INT(mlsys_offload_mcache_create(0, NULL), MLSYS_ERR_ARG);

  REQUIRE_OK(mlsys_offload_pilot_create(NULL, &m));
  memset(x, 0, sizeof x);
  memset(lab, 0, sizeof lab);
  mlsys_clear_error();
  mlsys_offload_pilot_forward(m, x, x, 3, y);
  CHECK(isnan(y[0]) && isnan(y[159]));
  CHECK_CONTAINS(mlsys_last_error(), "nn_type");
  CHECK(isnan(mlsys_offload_pilot_loss(m, x, x, -1, lab)));
  lab[7] = -1;
  CHECK(isnan(mlsys_offload_pilot_loss(m, x, x, 0, lab)));
  CHECK_CONTAINS(mlsys_last_error(), "negative");
  CHECK(isnan(mlsys_offload_pilot_train_epoch(m, 1, x, x, &t, lab, 1)));
  t = 0;
  CHECK(isnan(mlsys_offload_pilot_train_epoch(m, 1, x, x, &t, lab, 1)));
  CHECK_CONTAINS(mlsys_last_error(), "sample 0");
  lab[7] = 0;
  CHECK(isnan(mlsys_offload_pilot_train_epoch(m, 1, x, x, &t, lab, 0)));
  CHECK(isnan(mlsys_offload_pilot_train_epoch(m, 0, x, x, &t, lab, 1)));
  CHECK(!isnan(mlsys_offload_pilot_train_epoch(m, 1, x, x, &t, lab, 1)));
  mlsys_offload_pilot_features(m, NULL, 3, 8, x);
  CHECK(isnan(x[0]));
  mlsys_offload_pilot_afm_features(m, NULL, 2, x);
  CHECK(isnan(x[0]));
  mlsys_offload_pilot_free(m);
}

/* The library's forward pass and loss against the double-precision reference, for every type and both AFM modes. */
TEST(pilot_forward_matches_reference) {
  int mode, i, t, k;
  for (mode = 0; mode < 2; mode++) {
    mlsys_offload_pilot_cfg c;
    mlsys_offload_pilot *m;
    dataset ds;
    ref_net r;
    double *P, yr[4096], worst = 0;
    float y[4096];
    memset(&c, 0, sizeof c);
    c.afm_full = mode;
    c.afm_rows_max = 40;
    c.seed = 7;
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
    r = ref_of(m);
    REQUIRE(r.n == mlsys_offload_pilot_nparams(m));
    REQUIRE(dataset_make(m, 30, 11, 0, &ds) == 0);
    P = (double *)malloc(sizeof(double) * r.n);
    REQUIRE(P);
    mlsys_offload_pilot_train_epoch(m, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 8);   /* nonzero biases too */
    for (i = 0; i < (int)r.n; i++) P[i] = mlsys_offload_pilot_params(m)[i];
    for (i = 0; i < ds.n; i++)
      for (t = 0; t < 3; t++) {
        const float *xe = ds.x_e + (size_t)i * ds.xe, *xa = ds.x_a + (size_t)i * ds.xa, *lab = ds.label + (size_t)i * ds.ny;
        double lr = ref_loss(&r, P, xe, xa, t, lab, yr, NULL), ll = mlsys_offload_pilot_loss(m, xe, xa, t, lab);
        mlsys_offload_pilot_forward(m, xe, xa, t, y);
        for (k = 0; k < ds.ny; k++) {
          double e = fabs(y[k] - yr[k]) / (1 + fabs(yr[k]));
          if (e > worst) worst = e;
        }
        CHECK_MSG(fabs(ll - lr) <= 1e-5 * (1 + lr), "loss %.9g vs reference %.9g", ll, lr);
      }
    CHECK_MSG(worst < 1e-5, "mode %d: forward differs from the reference by %g", mode, worst);
    printf("    %s AFM: max |ŷ − reference| / (1 + |reference|) = %.2e\n", mode ? "full" : "compact", worst);
    free(P);
    dataset_free(&ds);
    mlsys_offload_pilot_free(m);
  }
}

/* d loss / d θ of the library against central differences of the double reference, θ ± 1e-4. The network is piecewise
   linear in any single parameter and the loss quadratic in ŷ, so inside one activation pattern the central difference
   is exact up to rounding (~1e-12 here); a parameter whose ±eps moves any pre-activation across 0 is skipped and
   counted. Error per element: |a − n| / max(|a|, |n|, 1e-3·max|n| over the group); all must be < 1e-3. The experts
   that did not run must get an exact zero. */
static const char *group_names[] = {"W_e", "b_e", "W_a", "b_a", "W1", "b1", "W2", "b2", "W3", "b3", "W_o", "b_o"};

static void grad_check(mlsys_offload_pilot_cfg c, const char *label_txt) {
  mlsys_offload_pilot *m;
  dataset ds;
  ref_net r;
  double *P, eps = 1e-4;
  float *G;
  unsigned char s0[4096], s1[4096], s2[4096];
  int t, gi, skipped = 0, checked = 0;
  double worst_all = 0;
  memset(s0, 0, sizeof s0);
  memset(s1, 0, sizeof s1);
  memset(s2, 0, sizeof s2);
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  r = ref_of(m);
  REQUIRE(dataset_make(m, 3, 5, 0, &ds) == 0);
  P = (double *)malloc(sizeof(double) * r.n);
  G = (float *)malloc(sizeof(float) * r.n);
  REQUIRE(P && G);
  for (t = 0; t < 3; t++) {
    const float *xe = ds.x_e + (size_t)t * ds.xe, *xa = ds.x_a + (size_t)t * ds.xa, *lab = ds.label + (size_t)t * ds.ny;
    size_t i, lo[12], hi[12];
    int u;
    for (i = 0; i < r.n; i++) P[i] = mlsys_offload_pilot_params(m)[i];
    REQUIRE_OK(mlsys_offload_pilot_grad(m, xe, xa, t, lab, G));
    lo[0] = r.we; lo[1] = r.be; lo[2] = r.wa; lo[3] = r.ba; lo[4] = r.w1[t]; lo[5] = r.b1[t]; lo[6] = r.w2[t]; lo[7] = r.b2[t];
    lo[8] = r.w3[t]; lo[9] = r.b3[t]; lo[10] = r.wo; lo[11] = r.bo;
    for (gi = 0; gi < 12; gi++) hi[gi] = gi == 11 ? r.n : gi == 9 ? lo[gi] + (size_t)r.o : lo[gi + 1];
    /* the inactive experts */
    for (u = 0; u < 3; u++) {
      if (u == t) continue;
      for (i = r.w1[u]; i < r.b3[u] + (size_t)r.o; i++)
        if (G[i] != 0.0f) { CHECK_MSG(0, "type %d: parameter %zu of expert %d has gradient %g", t, i, u, G[i]); break; }
    }
    ref_loss(&r, P, xe, xa, t, lab, NULL, s0);
    for (gi = 0; gi < 12; gi++) {
      double gmax = 0, worst = 0, *num = (double *)malloc(sizeof(double) * (hi[gi] - lo[gi]));
      int nonzero = 0;
      REQUIRE(num);
      for (i = lo[gi]; i < hi[gi]; i++) {
        double keep = P[i], lp, lm;
        P[i] = keep + eps;
        lp = ref_loss(&r, P, xe, xa, t, lab, NULL, s1);
        P[i] = keep - eps;
        lm = ref_loss(&r, P, xe, xa, t, lab, NULL, s2);
        P[i] = keep;
        if (memcmp(s0, s1, sizeof s0) || memcmp(s0, s2, sizeof s0)) { num[i - lo[gi]] = NAN; skipped++; continue; }
        num[i - lo[gi]] = (lp - lm) / (2 * eps);
        if (fabs(num[i - lo[gi]]) > gmax) gmax = fabs(num[i - lo[gi]]);
      }
      for (i = lo[gi]; i < hi[gi]; i++) {
        double n = num[i - lo[gi]], a = G[i], den, e;
        if (isnan(n)) continue;
        den = fmax(fmax(fabs(a), fabs(n)), 1e-3 * gmax);
        e = den > 0 ? fabs(a - n) / den : 0;
        if (e > worst) worst = e;
        nonzero += a != 0;
        checked++;
      }
      CHECK_MSG(worst < 1e-3, "%s type %d group %s: relative error %g", label_txt, t, group_names[gi], worst);
      CHECK_MSG(nonzero > 0, "%s type %d group %s: every gradient is zero (the check would be vacuous)", label_txt, t, group_names[gi]);
      if (worst > worst_all) worst_all = worst;
      free(num);
    }
  }
  printf("    %s: %d gradients checked, max relative error %.2e, %d skipped at a kink\n", label_txt, checked, worst_all, skipped);
  CHECK(skipped * 100 < checked);
  free(P);
  free(G);
  dataset_free(&ds);
  mlsys_offload_pilot_free(m);
}

TEST(pilot_gradient_check) {
  mlsys_offload_pilot_cfg c;
  memset(&c, 0, sizeof c);
  grad_check(c, "default config");
  memset(&c, 0, sizeof c);
  c.afm_full = 1; c.afm_rows_max = 6; c.leaky = 0.2f; c.w_rows = 2.5f; c.seed = 99; c.k_max = 3; c.h = 7;
  grad_check(c, "full AFM, leaky 0.2, k_max 3, h 7");
}

/* 64 random samples (x_e ~ N(0,1), the AFM features of one random program per type, labels of a plausible shape:
   1..k_max blocks, decreasing row counts ≤ 40, idiom sums ≤ 2·rows, dim sums ≤ 3·rows) fitted to 100% exact decoded
   match within OVERFIT_MAX_EPOCHS. Config: k_max 4, h 64, d_out 128, lr 0.02, batch 1. Why not the defaults: ŷ = W_o z
   + b_o lies in a (d_out+1)-dimensional affine subspace, so 64 generic label vectors need d_out ≥ 63 (the default
   32 can hold at most 33 arbitrary samples exactly); exact decoding of a value v needs |Δŷ| < 0.5/(v+1), and plain
   SGD reaches that precision on 160 outputs only after ~10^4 epochs (k_max 16 measured: 62/64 after 20,000 epochs
   with batch 8), too slow for a unit test. Observed: 64/64 after 425 epochs. */
#define OVERFIT_MAX_EPOCHS 1500
TEST(pilot_overfit_64) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  dataset ds;
  int ep, hits = 0;
  float first = 0, loss = 0;
  memset(&c, 0, sizeof c);
  c.k_max = 4; c.h = 64; c.d_out = 128; c.lr = 0.02f;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE(dataset_make(m, 64, 2024, 1, &ds) == 0);
  CHECK_EQ_INT(exact_matches(m, &ds), 0);
  for (ep = 1; ep <= OVERFIT_MAX_EPOCHS; ep++) {
    loss = mlsys_offload_pilot_train_epoch(m, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 1);
    if (ep == 1) first = loss;
    if (ep % 25 == 0 && (hits = exact_matches(m, &ds)) == ds.n) break;
  }
  printf("    overfit: %d/64 exact after %d epochs (limit %d); loss %.3g -> %.3g\n", hits,
         ep > OVERFIT_MAX_EPOCHS ? OVERFIT_MAX_EPOCHS : ep, OVERFIT_MAX_EPOCHS, (double)first, (double)loss);
  CHECK_EQ_INT(hits, 64);
  CHECK(loss < first / 100);
  dataset_free(&ds);
  mlsys_offload_pilot_free(m);
}

/* One epoch against SGD replayed by hand through the gradient API: n = 3 samples, batch 1 (three steps) and batch 2
   (a step on two, then one on the last): p ← p − lr · mean of the batch's gradients. The library shuffles, so its
   weights must equal the replay of exactly one of the 6 orders, and the reported loss the mean of the losses before
   each step. Over 8 epochs the orders must not all be the identity (probability 6^-8 for a working shuffle). */
static void sgd_replay(mlsys_offload_pilot *h, const dataset *ds, const int *ord, int batch, float lr, double *loss_sum) {
  size_t np = mlsys_offload_pilot_nparams(h), j;
  float *g = (float *)malloc(np * sizeof(float)), *acc = (float *)malloc(np * sizeof(float)), *p = mlsys_offload_pilot_params(h);
  int b0, i;
  *loss_sum = 0;
  for (b0 = 0; b0 < ds->n; b0 += batch) {
    int B = ds->n - b0 < batch ? ds->n - b0 : batch;
    memset(acc, 0, np * sizeof(float));
    for (i = 0; i < B; i++) {
      int s = ord[b0 + i];
      const float *xe = ds->x_e + (size_t)s * ds->xe, *xa = ds->x_a + (size_t)s * ds->xa, *lab = ds->label + (size_t)s * ds->ny;
      *loss_sum += mlsys_offload_pilot_loss(h, xe, xa, ds->type[s], lab);
      mlsys_offload_pilot_grad(h, xe, xa, ds->type[s], lab, g);
      for (j = 0; j < np; j++) acc[j] += g[j] / (float)B;   /* 1/B is exact for B = 1, 2 */
    }
    for (j = 0; j < np; j++) p[j] -= lr * acc[j];
  }
  free(g);
  free(acc);
}

TEST(pilot_sgd_step_and_shuffle) {
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m, *h;
  dataset ds;
  size_t np;
  int ep, o, batch, non_identity = 0;
  memset(&c, 0, sizeof c);
  c.lr = 0.05f;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &h));
  np = mlsys_offload_pilot_nparams(m);
  REQUIRE(dataset_make(m, 3, 31, 0, &ds) == 0);
  for (ep = 0; ep < 8; ep++) {
    float *before = (float *)malloc(np * sizeof(float));
    double want_loss = 0;
    float got_loss;
    int match = -1;
    batch = ep % 2 ? 2 : 1;
    memcpy(before, mlsys_offload_pilot_params(m), np * sizeof(float));
    got_loss = mlsys_offload_pilot_train_epoch(m, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, batch);
    for (o = 0; o < 6 && match < 0; o++) {
      double ls;
      memcpy(mlsys_offload_pilot_params(h), before, np * sizeof(float));
      sgd_replay(h, &ds, orders[o], batch, c.lr, &ls);
      if (memcmp(mlsys_offload_pilot_params(h), mlsys_offload_pilot_params(m), np * sizeof(float)) == 0) {
        match = o;
        want_loss = ls / 3;
      }
    }
    CHECK_MSG(match >= 0, "epoch %d (batch %d): no order of the 3 samples reproduces the library's weights", ep, batch);
    if (match >= 0) CHECK_NEAR(got_loss, want_loss, 1e-6 * want_loss);
    non_identity += match > 0;
    free(before);
  }
  CHECK(non_identity > 0);
  dataset_free(&ds);
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(h);
}

/* Two models with one seed agree bit for bit (weights, features, outputs, training); another seed differs. */
TEST(pilot_deterministic) {
  mlsys_offload_pilot *a, *b, *o;
  mlsys_offload_pilot_cfg c;
  dataset ds;
  float ya[160], yb[160], yo[160], fa[34], fb[34], fo[34], emb[5 * 24];
  size_t i, np, ndiff = 0;
  int s, t, ep, same_out = 0;
  mlsys_rng r;
  memset(&c, 0, sizeof c);
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &a));
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &b));
  c.seed = 2;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &o));
  np = mlsys_offload_pilot_nparams(a);
  CHECK(memcmp(mlsys_offload_pilot_params(a), mlsys_offload_pilot_params(b), np * sizeof(float)) == 0);
  for (i = 0; i < np; i++) ndiff += mlsys_offload_pilot_params(a)[i] != mlsys_offload_pilot_params(o)[i];
  CHECK_MSG(ndiff > np * 9 / 10, "seed 2 shares %zu of %zu weights with seed 1", np - ndiff, np);
  mlsys_rng_seed(&r, 3);
  for (i = 0; i < 5 * 24; i++) emb[i] = (float)mlsys_rng_normal(&r);
  mlsys_offload_pilot_features(a, emb, 5, 24, fa);
  mlsys_offload_pilot_features(b, emb, 5, 24, fb);
  mlsys_offload_pilot_features(o, emb, 5, 24, fo);
  CHECK(memcmp(fa, fb, sizeof fa) == 0);
  CHECK(memcmp(fa, fo, 32 * sizeof(float)) != 0);   /* another projection */
  CHECK(memcmp(fa + 32, fo + 32, 2 * sizeof(float)) == 0);
  REQUIRE(dataset_make(a, 40, 8, 0, &ds) == 0);
  for (ep = 0; ep < 4; ep++) {
    float la, lb;
    for (s = 0; s < ds.n; s++)
      for (t = 0; t < 3; t++) {
        const float *xe = ds.x_e + (size_t)s * ds.xe, *xa = ds.x_a + (size_t)s * ds.xa;
        mlsys_offload_pilot_forward(a, xe, xa, t, ya);
        mlsys_offload_pilot_forward(b, xe, xa, t, yb);
        mlsys_offload_pilot_forward(o, xe, xa, t, yo);
        CHECK(memcmp(ya, yb, sizeof ya) == 0);
        same_out += memcmp(ya, yo, sizeof ya) == 0;
      }
    la = mlsys_offload_pilot_train_epoch(a, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 8);
    lb = mlsys_offload_pilot_train_epoch(b, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 8);
    mlsys_offload_pilot_train_epoch(o, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 8);
    CHECK(memcmp(&la, &lb, sizeof la) == 0);
    CHECK(memcmp(mlsys_offload_pilot_params(a), mlsys_offload_pilot_params(b), np * sizeof(float)) == 0);
  }
  CHECK_EQ_INT(same_out, 0);
  /* shuffling is seeded too: the same data in another order gives other weights after one epoch */
  dataset_free(&ds);
  mlsys_offload_pilot_free(a);
  mlsys_offload_pilot_free(b);
  mlsys_offload_pilot_free(o);
}

/* x_e: exact log terms, mean pooling (order and duplication invariant, exactly linear), the projection's Gaussian
   statistics and its reconstruction from one-hot embeddings (a second way to compute the same features). */
TEST(pilot_features) {
  mlsys_offload_pilot *m, *m2;
  mlsys_offload_pilot_cfg c;
  mlsys_rng r;
  enum { E = 32, T = 10, D = 24, BIG = 512 };
  float emb[2 * T * D], perm[T * D], dup[2 * T * D], x[E + 2], y[E + 2], x2[E + 2], one[BIG], ref0[E + 2];
  static double P[BIG][E];
  double mean = 0, m2s = 0, m4 = 0, cov = 0, worst = 0;
  int i, j, k, n = BIG * E;
  memset(&c, 0, sizeof c);
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m2));
  mlsys_rng_seed(&r, 17);
  for (i = 0; i < T * D; i++) emb[i] = (float)mlsys_rng_normal(&r);
  mlsys_offload_pilot_features(m, emb, T, D, x);
  memcpy(ref0, x, sizeof x);
  CHECK(x[E] == (float)log1p(10.0));
  CHECK(x[E + 1] == (float)log1p(960.0));
  for (i = 0; i < T; i++) memcpy(perm + i * D, emb + (T - 1 - i) * D, D * sizeof(float));
  mlsys_offload_pilot_features(m, perm, T, D, y);
  for (j = 0; j < E; j++) CHECK_NEAR(y[j], x[j], 1e-6 * (1 + fabs(x[j])));
  for (i = 0; i < T; i++) {
    memcpy(dup + 2 * i * D, emb + i * D, D * sizeof(float));
    memcpy(dup + (2 * i + 1) * D, emb + i * D, D * sizeof(float));
  }
  mlsys_offload_pilot_features(m, dup, 2 * T, D, y);
  for (j = 0; j < E; j++) CHECK_NEAR(y[j], x[j], 1e-6 * (1 + fabs(x[j])));
  CHECK(y[E] == (float)log1p(20.0));
  for (i = 0; i < T * D; i++) dup[i] = 2 * emb[i];
  mlsys_offload_pilot_features(m, dup, T, D, x2);
  for (j = 0; j < E; j++) CHECK(x2[j] == 2 * x[j]);   /* scaling by 2 is exact all the way */
  mlsys_offload_pilot_features(m, NULL, 0, D, y);
  for (j = 0; j < E + 2; j++) CHECK(y[j] == 0.0f);
  /* P row by row through one-hot embeddings of width 512 */
  for (k = 0; k < BIG; k++) {
    memset(one, 0, sizeof one);
    one[k] = 1;
    mlsys_offload_pilot_features(m, one, 1, BIG, y);
    for (j = 0; j < E; j++) P[k][j] = y[j];
  }
  for (k = 0; k < BIG; k++)
    for (j = 0; j < E; j++) mean += P[k][j] * sqrt((double)BIG);
  mean /= n;
  for (k = 0; k < BIG; k++)
    for (j = 0; j < E; j++) {
      double v = P[k][j] * sqrt((double)BIG) - mean;
      m2s += v * v;
      m4 += v * v * v * v;
      if (j + 1 < E) cov += v * (P[k][j + 1] * sqrt((double)BIG) - mean);
    }
  m2s /= n;
  m4 /= n;
  cov /= (double)BIG * (E - 1);
  printf("    projection entries ×sqrt(512): mean %.4f, variance %.4f, kurtosis %.3f, neighbour correlation %.4f (N(0,1): 0, 1, 3, 0)\n",
         mean, m2s, m4 / (m2s * m2s), cov / m2s);
  CHECK(fabs(mean) < 0.04);                 /* 16384 draws: σ of the mean 0.008 */
  CHECK(fabs(m2s - 1) < 0.05);              /* σ of the variance 0.011 */
  CHECK(fabs(m4 / (m2s * m2s) - 3) < 0.25); /* a uniform projection would give 1.8 */
  CHECK(fabs(cov / m2s) < 0.05);
  /* a dense embedding of width 512, 3 tokens: features = mean · P from the rows just recovered */
  {
    static float e3[3 * BIG];
    for (i = 0; i < 3 * BIG; i++) e3[i] = (float)mlsys_rng_normal(&r);
    mlsys_offload_pilot_features(m, e3, 3, BIG, y);
    for (j = 0; j < E; j++) {
      double s = 0;
      for (k = 0; k < BIG; k++) s += P[k][j] * (((double)e3[k] + e3[BIG + k] + e3[2 * BIG + k]) / 3);
      if (fabs(s - y[j]) > worst) worst = fabs(s - y[j]);
    }
    CHECK_MSG(worst < 1e-6, "features differ from mean · P by %g", worst);
    CHECK(y[E + 1] == (float)log1p(3.0 * 512 * 4));
  }
  /* the cache: back to width 24 on the same model, and a fresh model that never saw width 512 */
  mlsys_offload_pilot_features(m, emb, T, D, y);
  CHECK(memcmp(y, ref0, sizeof y) == 0);
  mlsys_offload_pilot_features(m2, emb, T, D, y);
  CHECK(memcmp(y, ref0, sizeof y) == 0);
  /* the same numbers in a wider embedding (one extra zero column) use another projection */
  {
    float w[T * (D + 1)];
    for (i = 0; i < T; i++) {
      memcpy(w + i * (D + 1), emb + i * D, D * sizeof(float));
      w[i * (D + 1) + D] = 0;
    }
    mlsys_offload_pilot_features(m, w, T, D + 1, y);
    CHECK(memcmp(y, ref0, E * sizeof(float)) != 0);
  }
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(m2);
}

/* x_a against sums done by hand. */
TEST(pilot_afm_features) {
  mlsys_offload_pilot *m;
  mlsys_offload_pilot_cfg c;
  mlsys_offload_sig rows[4];
  float x[64];
  /* Fig. 3's matmul, a control-flow row, an op with a negative (invalid) entry, and a gather */
  static const int32_t id[4][6] = {{1, 0, 0, 1, 1, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, -3, 0, 2, 0}, {0, 1, 0, 0, 0, 0}};
  static const int64_t dm[4][3] = {{7, 9, 0}, {0, 0, 0}, {5, -2, 0}, {100, 30, 0}};
  /* column sums, negatives as 0: idioms [1,1,0,1,3,0], dims [112, 39, 0]; 3 op rows, 1 control-flow row */
  static const double want[11] = {1, 1, 0, 1, 3, 0, 112, 39, 0, 3, 1};
  int i, k;
  for (i = 0; i < 4; i++) {
    for (k = 0; k < 6; k++) rows[i].idiom[k] = id[i][k];
    for (k = 0; k < 3; k++) rows[i].dim[k] = dm[i][k];
  }
  REQUIRE_OK(mlsys_offload_pilot_create(NULL, &m));
  mlsys_offload_pilot_afm_features(m, rows, 4, x);
  for (i = 0; i < 11; i++) CHECK_MSG(x[i] == (float)log1p(want[i]), "compact x_a[%d] = %g, want log1p(%g)", i, x[i], want[i]);
  mlsys_offload_pilot_afm_features(m, rows, 0, x);
  for (i = 0; i < 11; i++) CHECK(x[i] == 0.0f);
  mlsys_offload_pilot_free(m);
  memset(&c, 0, sizeof c);
  c.afm_full = 1;
  c.afm_rows_max = 3;   /* truncates the 4-row AFM */
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_afm_dim(m), 27);
  for (i = 0; i < 64; i++) x[i] = -7;
  mlsys_offload_pilot_afm_features(m, rows, 4, x);
  CHECK(x[0] == 1 && x[3] == 1 && x[4] == 1 && x[1] == 0 && x[6] == (float)log1p(7.0) && x[7] == (float)log1p(9.0) && x[8] == 0);
  for (i = 9; i < 18; i++) CHECK(x[i] == 0);
  CHECK(x[18 + 2] == 0 && x[18 + 4] == 2 && x[18 + 6] == (float)log1p(5.0) && x[18 + 7] == 0);
  CHECK(x[27] == -7);   /* nothing written past afm_dim */
  mlsys_offload_pilot_free(m);
  c.afm_rows_max = 6;   /* pads */
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  for (i = 0; i < 64; i++) x[i] = -7;
  mlsys_offload_pilot_afm_features(m, rows, 4, x);
  CHECK(x[27 + 1] == 1 && x[27 + 6] == (float)log1p(100.0) && x[27 + 7] == (float)log1p(30.0));
  for (i = 36; i < 54; i++) CHECK(x[i] == 0);
  CHECK(x[54] == -7);
  mlsys_offload_pilot_free(m);
}

/* Decoding: hand-picked values, and the largest label a float ŷ = log1p(v) still decodes exactly. */
TEST(pilot_decode) {
  mlsys_offload_pilot *m;
  mlsys_offload_pilot_cfg c = small_cfg();   /* k_max 1: 10 outputs */
  float y[10];
  int32_t p[10];
  long v, first_bad = -1;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  y[0] = (float)log1p(5.0); y[1] = (float)log1p(5.49); y[2] = (float)log1p(5.51); y[3] = -3; y[4] = NAN;
  y[5] = 100; y[6] = 0; y[7] = (float)log(0.4); y[8] = (float)log1p(0.6); y[9] = INFINITY;
  mlsys_offload_pilot_decode(m, y, p);
  CHECK(p[0] == 5 && p[1] == 5 && p[2] == 6 && p[3] == 0 && p[4] == 0);
  CHECK(p[5] == INT32_MAX && p[6] == 0 && p[7] == 0 && p[8] == 1 && p[9] == INT32_MAX);
  for (v = 0; v <= 2000000 && first_bad < 0; v++) {
    y[0] = (float)log1p((double)v);
    mlsys_offload_pilot_decode(m, y, p);
    if (p[0] != v) first_bad = v;
  }
  printf("    decode(float(log1p(v))) == v for every v below %ld\n", first_bad);
  CHECK(first_bad > 100000);
  mlsys_offload_pilot_free(m);
}


/* Save → load: the same config, weights and outputs bit for bit; the projection rebuilt from the seed; a loaded
   model trains exactly as a new model holding the same weights. */
TEST(pilot_save_load_roundtrip) {
  mlsys_offload_pilot *m, *l, *n;
  mlsys_offload_pilot_cfg c, lc;
  dataset ds;
  float ya[160], yb[160], fa[34], fb[34], emb[7 * 30];
  const char *path = tmp_path("rt");
  size_t np, len;
  uint8_t *file;
  int s, t;
  mlsys_rng r;
  memset(&c, 0, sizeof c);
  c.seed = 12345; c.lr = 0.02f; c.w_rows = 3; c.leaky = 0.05f;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE(dataset_make(m, 48, 4, 0, &ds) == 0);
  mlsys_offload_pilot_train_epoch(m, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 16);
  mlsys_offload_pilot_train_epoch(m, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 16);
  REQUIRE_OK(mlsys_offload_pilot_save(m, path));
  file = read_all(path, &len);
  REQUIRE(file);
  np = mlsys_offload_pilot_nparams(m);
  CHECK_EQ_INT(len, 72 + 4 * np + 4);
  CHECK(memcmp(file, "MLSYSPLT", 8) == 0);
  CHECK(mlsys_crc32c(0, file, len - 4) == ((uint32_t)file[len - 4] | (uint32_t)file[len - 3] << 8 | (uint32_t)file[len - 2] << 16 | (uint32_t)file[len - 1] << 24));
  free(file);
  REQUIRE_OK(mlsys_offload_pilot_load(path, &l));
  lc = mlsys_offload_pilot_config(l);
  c = mlsys_offload_pilot_config(m);
  CHECK(memcmp(&lc, &c, sizeof c) == 0);
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(l), np);
  CHECK(memcmp(mlsys_offload_pilot_params(l), mlsys_offload_pilot_params(m), np * sizeof(float)) == 0);
  mlsys_rng_seed(&r, 77);
  for (s = 0; s < 7 * 30; s++) emb[s] = (float)mlsys_rng_normal(&r);
  mlsys_offload_pilot_features(m, emb, 7, 30, fa);
  mlsys_offload_pilot_features(l, emb, 7, 30, fb);
  CHECK(memcmp(fa, fb, sizeof fa) == 0);
  for (s = 0; s < ds.n; s++)
    for (t = 0; t < 3; t++) {
      mlsys_offload_pilot_forward(m, ds.x_e + (size_t)s * ds.xe, ds.x_a + (size_t)s * ds.xa, t, ya);
      mlsys_offload_pilot_forward(l, ds.x_e + (size_t)s * ds.xe, ds.x_a + (size_t)s * ds.xa, t, yb);
      CHECK(memcmp(ya, yb, sizeof ya) == 0);
    }
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &n));
  memcpy(mlsys_offload_pilot_params(n), mlsys_offload_pilot_params(l), np * sizeof(float));
  CHECK(mlsys_offload_pilot_train_epoch(n, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 16) ==
        mlsys_offload_pilot_train_epoch(l, ds.n, ds.x_e, ds.x_a, ds.type, ds.label, 16));
  CHECK(memcmp(mlsys_offload_pilot_params(l), mlsys_offload_pilot_params(n), np * sizeof(float)) == 0);
  mlsys_offload_pilot_free(l);
  /* I/O errors name the path */
  CHECK_EQ_INT(mlsys_offload_pilot_save(m, "/nonexistent-dir/x.plt"), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "/nonexistent-dir/x.plt");
  CHECK(mlsys_offload_pilot_load("/nonexistent-dir/x.plt", &l) != MLSYS_OK);
  CHECK(l == NULL);
  remove(path);
  dataset_free(&ds);
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(n);
}

/* Every truncation and every flipped byte of a small model file is rejected with a message naming the problem; the
   default model's file is sampled; files with a valid CRC but a broken body (a faulty writer) are named too. */
static void corrupt_expect(const uint8_t *b, size_t len, mlsys_status want, const char *words, const char *what) {
  mlsys_offload_pilot *m = (mlsys_offload_pilot *)1;
  mlsys_status s = mlsys_offload_pilot_load_mem(b, len, "pilot.bin", &m);
  CHECK_MSG(s == want, "%s: status %d, want %d (%s)", what, (int)s, (int)want, mlsys_last_error());
  CHECK_MSG(m == NULL, "%s: model not NULL", what);
  CHECK_MSG(strstr(mlsys_last_error(), "pilot.bin: ") == mlsys_last_error() && strstr(mlsys_last_error(), words), "%s: message \"%s\" lacks \"%s\"",
            what, mlsys_last_error(), words);
  if (s == MLSYS_OK) mlsys_offload_pilot_free(m);
}

TEST(pilot_file_corruption) {
  mlsys_offload_pilot *m, *l;
  mlsys_offload_pilot_cfg c = small_cfg();
  const char *path = tmp_path("bad");
  uint8_t *b, *w;
  size_t len, i, np;
  char what[64];
  mlsys_rng r;
  int pass;
  for (pass = 0; pass < 2; pass++) {
    if (pass == 1) memset(&c, 0, sizeof c);
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
    REQUIRE_OK(mlsys_offload_pilot_save(m, path));
    b = read_all(path, &len);
    REQUIRE(b);
    w = (uint8_t *)malloc(len + 1);
    REQUIRE(w);
    REQUIRE_OK(mlsys_offload_pilot_load_mem(b, len, "pilot.bin", &l));
    mlsys_offload_pilot_free(l);
    mlsys_rng_seed(&r, 5);
    for (i = 0; i < len; i++) {   /* every truncation (sampled on the default file) */
      size_t cut = pass ? (size_t)mlsys_rng_below(&r, len) : i;
      if (pass && i >= 300) break;
      memcpy(w, b, cut);
      snprintf(what, sizeof what, "cut at %zu of %zu", cut, len);
      corrupt_expect(w, cut, MLSYS_ERR_PARSE, "truncated", what);
    }
    for (i = 0; i < len; i++) {   /* every flipped byte (sampled) */
      size_t at = pass ? (size_t)mlsys_rng_below(&r, len) : i;
      const char *words = at < 8 ? "bad magic" : at < 12 ? "unsupported version" : at >= 64 && at < 72 ? "" : "CRC mismatch";
      mlsys_status want = at < 8 || at >= 12 ? MLSYS_ERR_PARSE : MLSYS_ERR_UNSUPPORTED;
      if (pass && i >= 300) break;
      memcpy(w, b, len);
      w[at] ^= (uint8_t)(1u << (i % 8)) | 0x10;
      snprintf(what, sizeof what, "byte %zu flipped", at);
      if (at >= 64 && at < 72) {   /* nparams: too big, truncated or trailing, by the value it now holds */
        mlsys_offload_pilot *x = (mlsys_offload_pilot *)1;
        mlsys_status s = mlsys_offload_pilot_load_mem(w, len, "pilot.bin", &x);
        CHECK_MSG(s == MLSYS_ERR_TOO_BIG || (s == MLSYS_ERR_PARSE && (strstr(mlsys_last_error(), "truncated") || strstr(mlsys_last_error(), "trailing"))),
                  "%s: %d %s", what, (int)s, mlsys_last_error());
        CHECK(x == NULL);
      } else {
        corrupt_expect(w, len, want, words, what);
      }
    }
    memcpy(w, b, len);
    w[len] = 0;
    corrupt_expect(w, len + 1, MLSYS_ERR_PARSE, "1 trailing bytes", "one byte appended");
    free(w);
    if (pass == 0) free(b);
    mlsys_offload_pilot_free(m);
  }
  /* b: the default model's file; damage the body and fix the CRC, as a faulty writer would */
  np = (len - 76) / 4;
  CHECK_EQ_INT(np, 15536);
  w = (uint8_t *)malloc(len);
  REQUIRE(w);
  memcpy(w, b, len); put32(w + 12, MLSYS_OFFLOAD_CATALOG_VERSION + 1); fix_crc(w, len);
  corrupt_expect(w, len, MLSYS_ERR_UNSUPPORTED, "catalogue version", "catalogue");
  memcpy(w, b, len); put32(w + 20, 0); fix_crc(w, len);
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "d = 0 is outside", "d = 0");
  memcpy(w, b, len); put32(w + 24, 31); fix_crc(w, len);   /* h 31: 15536 weights no longer fit the config */
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "holds 15536 parameters, its config needs", "h changed");
  memcpy(w, b, len); put32(w + 36, 2); fix_crc(w, len);
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "afm_full = 2", "afm_full");
  memcpy(w, b, len); put32(w + 44, 0xBF800000u); fix_crc(w, len);   /* leaky −1 */
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "leaky", "leaky");
  memcpy(w, b, len); put32(w + 56, 0); put32(w + 60, 0); fix_crc(w, len);
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "seed is 0", "seed");
  memcpy(w, b, len); put32(w + 72 + 4 * 1000, 0x7FC00000u); fix_crc(w, len);   /* NaN */
  corrupt_expect(w, len, MLSYS_ERR_PARSE, "weight 1000 is not finite", "NaN weight");
  memcpy(w, b, len); put32(w + 8, 3); fix_crc(w, len);
  corrupt_expect(w, len, MLSYS_ERR_UNSUPPORTED, "unsupported version 3", "version 3");
  corrupt_expect(b, 0, MLSYS_ERR_PARSE, "truncated", "empty");
  corrupt_expect((const uint8_t *)"MLSYSIXM", 8, MLSYS_ERR_PARSE, "bad magic", "another mlsys file");
  free(w);
  free(b);
  remove(path);
}

/* The fuzz target's seed corpus: byte 0 is the harness's mode (bit 0: recompute the CRC), the rest a file. */
#define CORPUS_DIR "tests/fuzz/corpus/fuzz_offload_pilot"
TEST(pilot_fuzz_corpus) {
  static const char *names[2] = {CORPUS_DIR "/valid_tiny", CORPUS_DIR "/fixcrc_wrong_nparams"};
  uint8_t *f[2];
  size_t len[2];
  mlsys_offload_pilot *m;
  int i;
  if (getenv("MLSYS_WRITE_CORPUS")) {
    mlsys_offload_pilot_cfg c;
    const char *path = tmp_path("corpus");
    uint8_t *b;
    size_t n;
    memset(&c, 0, sizeof c);
    c.e_proj = 2; c.d = 2; c.h = 2; c.d_out = 2; c.k_max = 1; c.seed = 3;
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
    REQUIRE_OK(mlsys_offload_pilot_save(m, path));
    mlsys_offload_pilot_free(m);
    b = read_all(path, &n);
    REQUIRE(b);
    remove(path);
    for (i = 0; i < 2; i++) {
      FILE *o = fopen(names[i], "wb");
      uint8_t mode = (uint8_t)i;
      REQUIRE(o);
      if (i == 1) put32(b + 24, 3);   /* h 3: the stored weights no longer match; the harness fixes the CRC */
      fwrite(&mode, 1, 1, o);
      fwrite(b, 1, n, o);
      fclose(o);
    }
    free(b);
  }
  for (i = 0; i < 2; i++) {
    f[i] = read_all(names[i], &len[i]);
    REQUIRE(f[i] && len[i] > 80);
  }
  CHECK(f[0][0] == 0 && f[1][0] == 1);
  REQUIRE_OK(mlsys_offload_pilot_load_mem(f[0] + 1, len[0] - 1, "valid_tiny", &m));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 130);   /* 2·4+2 + 2·11+2 + 3·(2·4+2 + 2·2+2 + 2·2+2) + 10·2+10 */
  mlsys_offload_pilot_free(m);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(f[1] + 1, len[1] - 1, "x", &m), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "CRC mismatch");
  fix_crc(f[1] + 1, len[1] - 1);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(f[1] + 1, len[1] - 1, "x", &m), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "its config needs");
  free(f[0]);
  free(f[1]);
}

/* put/get/overwrite/miss over many random keys against a brute-force list. Keys come in near-twins (one element
   apart, at any position, the last included) so that a comparison of part of the key would be caught. */
TEST(pilot_mcache) {
  enum { KM = 3, W = KM * 10, POOL = 800, OPS = 6000 };
  static int32_t pool[POOL][W], lk[POOL][W], lv[POOL][W];
  int32_t val[W], probe[W];
  mlsys_offload_mcache *c;
  mlsys_rng r;
  int nl = 0, op, i, j, overwrites = 0, misses = 0;
  mlsys_rng_seed(&r, 99);
  for (i = 0; i < POOL; i++) {
    if (i % 2 == 1) {
      memcpy(pool[i], pool[i - 1], sizeof pool[i]);
      pool[i][mlsys_rng_below(&r, W)] += 1;
    } else {
      for (j = 0; j < W; j++) pool[i][j] = (int32_t)mlsys_rng_below(&r, 4);   /* small values: many shared prefixes */
    }
  }
  REQUIRE_OK(mlsys_offload_mcache_create(KM, &c));
  CHECK(mlsys_offload_mcache_get(c, pool[0]) == NULL);
  for (op = 0; op < OPS; op++) {
    int k = (int)mlsys_rng_below(&r, op < OPS / 2 ? POOL / 2 : POOL), at = -1;
    for (j = 0; j < W; j++) val[j] = (int32_t)mlsys_rng_u64(&r);
    REQUIRE_OK(mlsys_offload_mcache_put(c, pool[k], val));
    for (i = 0; i < nl; i++)
      if (memcmp(lk[i], pool[k], sizeof lk[i]) == 0) at = i;
    if (at < 0) { at = nl++; memcpy(lk[at], pool[k], sizeof lk[at]); }
    else overwrites++;
    memcpy(lv[at], val, sizeof val);
    if (op % 250 == 249 || op == OPS - 1) {
      CHECK_EQ_INT(mlsys_offload_mcache_size(c), nl);
      for (i = 0; i < nl; i++) {
        const int32_t *g = mlsys_offload_mcache_get(c, lk[i]);
        CHECK(g && memcmp(g, lv[i], sizeof lv[i]) == 0);
      }
      for (i = 0; i < POOL; i++) {
        int in = 0;
        for (j = 0; j < nl && !in; j++) in = memcmp(lk[j], pool[i], sizeof lk[j]) == 0;
        if (!in) { CHECK(mlsys_offload_mcache_get(c, pool[i]) == NULL); misses++; }
      }
      for (i = 0; i < 50; i++) {   /* absent twins of present keys, one element off at any position */
        memcpy(probe, lk[mlsys_rng_below(&r, (uint64_t)nl)], sizeof probe);
        probe[i < 10 ? W - 1 : (int)mlsys_rng_below(&r, W)] += 1000;
        CHECK(mlsys_offload_mcache_get(c, probe) == NULL);
        misses++;
      }
      if (op == OPS - 1) printf("    cache: %d keys, %d overwrites, %d absent keys probed\n", nl, overwrites, misses);
    }
  }
  for (j = 0; j < W; j++) probe[j] = -1;
  CHECK(mlsys_offload_mcache_get(c, probe) == NULL);
  CHECK(overwrites > 1000 && nl > POOL / 2);
  mlsys_offload_mcache_free(c);
}

/* Every allocation of create, load, training and the cache made to fail in turn: a status, no leak, nothing changed;
   the projection falls back to generating on the fly with the same values. */
TEST(pilot_allocation_failures) {
  mlsys_offload_pilot *m, *ref;
  mlsys_offload_pilot_cfg c = small_cfg();
  mlsys_offload_mcache *mc;
  const char *path = tmp_path("oom");
  uint8_t *b;
  size_t len;
  long k, live;
  int fails, t = 1, i;
  float emb[3 * 48], x[6], xr[6], xa[11], lab[10], *snap;
  mlsys_status s;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &ref));
  REQUIRE_OK(mlsys_offload_pilot_save(ref, path));
  b = read_all(path, &len);
  remove(path);
  REQUIRE(b);
  for (fails = 0, k = 0;; k++) {
    live = oom_live; oom_calls = 0; oom_fail_at = k;
    m = (mlsys_offload_pilot *)1;
    s = mlsys_offload_pilot_create(&c, &m);
    oom_fail_at = -1;
    if (s == MLSYS_OK) { mlsys_offload_pilot_free(m); break; }
    fails++;
    CHECK_EQ_INT(s, MLSYS_ERR_NOMEM);
    CHECK(m == NULL);
    CHECK_EQ_INT(oom_live, live);
  }
  CHECK(fails >= 6);
  for (fails = 0, k = 0;; k++) {
    live = oom_live; oom_calls = 0; oom_fail_at = k;
    m = (mlsys_offload_pilot *)1;
    s = mlsys_offload_pilot_load_mem(b, len, "oom", &m);
    oom_fail_at = -1;
    if (s == MLSYS_OK) { mlsys_offload_pilot_free(m); break; }
    fails++;
    CHECK_EQ_INT(s, MLSYS_ERR_NOMEM);
    CHECK(m == NULL);
    CHECK_EQ_INT(oom_live, live);
  }
  CHECK(fails >= 6);
  free(b);
  /* the projection cache */
  for (i = 0; i < 3 * 48; i++) emb[i] = (float)sin(i * 0.7);
  mlsys_offload_pilot_features(ref, emb, 3, 48, xr);
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  oom_calls = 0; oom_fail_at = 0;
  mlsys_offload_pilot_features(m, emb, 3, 48, x);
  oom_fail_at = -1;
  CHECK(oom_calls == 1);   /* it did try */
  CHECK(memcmp(x, xr, sizeof x) == 0);
  /* training: the permutation */
  memset(xa, 0, sizeof xa);
  for (i = 0; i < 10; i++) lab[i] = (float)i;
  snap = (float *)malloc(sizeof(float) * mlsys_offload_pilot_nparams(m));
  REQUIRE(snap);
  memcpy(snap, mlsys_offload_pilot_params(m), sizeof(float) * mlsys_offload_pilot_nparams(m));
  oom_calls = 0; oom_fail_at = 0;
  CHECK(isnan(mlsys_offload_pilot_train_epoch(m, 1, x, xa, &t, lab, 1)));
  oom_fail_at = -1;
  CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_NOMEM);
  CHECK(memcmp(snap, mlsys_offload_pilot_params(m), sizeof(float) * mlsys_offload_pilot_nparams(m)) == 0);
  free(snap);
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(ref);
  /* the cache: a put that must grow the table fails, and the cache is as it was */
  REQUIRE_OK(mlsys_offload_mcache_create(1, &mc));
  {
    int32_t key[10], val[10];
    int n;
    memset(val, 0, sizeof val);
    for (n = 0; n < 200; n++) {
      memset(key, 0, sizeof key);
      key[9] = n;
      val[0] = n;
      oom_calls = 0; oom_fail_at = 0;
      s = mlsys_offload_mcache_put(mc, key, val);
      oom_fail_at = -1;
      if (s != MLSYS_OK) {
        CHECK_EQ_INT(s, MLSYS_ERR_NOMEM);
        CHECK_EQ_INT(mlsys_offload_mcache_size(mc), n);
        REQUIRE_OK(mlsys_offload_mcache_put(mc, key, val));
      }
      CHECK_EQ_INT(mlsys_offload_mcache_size(mc), n + 1);
    }
    for (n = 0; n < 200; n++) {
      const int32_t *g;
      memset(key, 0, sizeof key);
      key[9] = n;
      g = mlsys_offload_mcache_get(mc, key);
      CHECK(g && g[0] == n);
    }
  }
  mlsys_offload_mcache_free(mc);
}

/* Inference time, printed only (no verdict depends on the clock): the default config and one of the paper's size. */
TEST(pilot_inference_time_info) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  dataset ds;
  float y[160];
  int pass, i, reps = 2000;
  for (pass = 0; pass < 2; pass++) {
    double t0, dt;
    memset(&c, 0, sizeof c);
    if (pass) { c.e_proj = 8; c.d = 8; c.h = 12; c.d_out = 8; }
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
    REQUIRE(dataset_make(m, 16, 1, 0, &ds) == 0);
    t0 = mlsys_now();
    for (i = 0; i < reps; i++) mlsys_offload_pilot_forward(m, ds.x_e + (size_t)(i % 16) * ds.xe, ds.x_a + (size_t)(i % 16) * ds.xa, ds.type[i % 16], y);
    dt = (mlsys_now() - t0) / reps;
    printf("    forward: %.2f µs per sample, %zu parameters (the seed: 30 µs, 3,260 parameters)\n", dt * 1e6, mlsys_offload_pilot_nparams(m));
    dataset_free(&ds);
    mlsys_offload_pilot_free(m);
  }
}

TEST_MAIN()
