/* tests/test_relm_gpt2.c — ReLM's language models (mlsys_relm.h; spec relm.md §3.15, §7.1, §7.2, §7.3 test 15):
   the GPT-2 forward against a naive double-precision reference written here from the equations of §3.15 (its own
   parameter offsets, straight loops, nothing shared with the header); KV-cached, forked, batched and prefix-cached
   logits against full recomputation; thread counts; llm.c's checkpoint format written here byte by byte and read
   back, and every malformed-header error; the table bigram LM. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include <unistd.h>

/* ---- the reference: GPT-2 in double, from spec §3.15 ---- */
typedef struct { int maxT, V, L, NH, C, Vp; } ref_cfg;

static double ref_gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))); }
static void ref_ln(double *out, const double *x, const float *w, const float *b, int C) {
  double mean = 0, var = 0;
  for (int i = 0; i < C; i++) mean += x[i];
  mean /= C;
  for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= C;
  for (int i = 0; i < C; i++) out[i] = (x[i] - mean) / sqrt(var + 1e-5) * w[i] + b[i];
}
/* y[o] = b[o] + Σ_i W[o][i] x[i] */
static void ref_lin(double *y, const double *x, const float *W, const float *b, int in, int out) {
  for (int o = 0; o < out; o++) {
    double s = b ? b[o] : 0.0;
    for (int i = 0; i < in; i++) s += (double)W[(size_t)o * in + i] * x[i];
    y[o] = s;
  }
}
/* logits[t * V + v] for every position of toks[0, T) */
static void ref_forward(const float *P, ref_cfg g, const int32_t *toks, int T, double *logits) {
  const int C = g.C, L = g.L, NH = g.NH, hs = C / NH;
  /* offsets, llm.c's order */
  const float *wte = P, *wpe = wte + (size_t)g.Vp * C, *ln1w = wpe + (size_t)g.maxT * C, *ln1b = ln1w + L * C,
              *qkvw = ln1b + L * C, *qkvb = qkvw + (size_t)L * 3 * C * C, *apw = qkvb + L * 3 * C, *apb = apw + (size_t)L * C * C,
              *ln2w = apb + L * C, *ln2b = ln2w + L * C, *fcw = ln2b + L * C, *fcb = fcw + (size_t)L * 4 * C * C,
              *fpw = fcb + L * 4 * C, *fpb = fpw + (size_t)L * 4 * C * C, *lnfw = fpb + L * C, *lnfb = lnfw + C;
  double *h = calloc((size_t)T * C, sizeof(double)), *a = calloc((size_t)T * C, sizeof(double)),
         *qkv = calloc((size_t)T * 3 * C, sizeof(double)), *att = calloc((size_t)T * C, sizeof(double)),
         *u = calloc((size_t)4 * C, sizeof(double)), *y = calloc((size_t)C, sizeof(double)), *w = calloc((size_t)T, sizeof(double));
  for (int t = 0; t < T; t++)
    for (int c = 0; c < C; c++) h[t * C + c] = (double)wte[(size_t)toks[t] * C + c] + wpe[(size_t)t * C + c];
  for (int l = 0; l < L; l++) {
    for (int t = 0; t < T; t++) {
      ref_ln(a + t * C, h + t * C, ln1w + l * C, ln1b + l * C, C);
      ref_lin(qkv + (size_t)t * 3 * C, a + t * C, qkvw + (size_t)l * 3 * C * C, qkvb + l * 3 * C, C, 3 * C);
    }
    for (int t = 0; t < T; t++)
      for (int hd = 0; hd < NH; hd++) {
        double mx = -1e300, sum = 0;
        for (int s = 0; s <= t; s++) {
          double d = 0;
          for (int i = 0; i < hs; i++) d += qkv[(size_t)t * 3 * C + hd * hs + i] * qkv[(size_t)s * 3 * C + C + hd * hs + i];
          w[s] = d / sqrt((double)hs);
          if (w[s] > mx) mx = w[s];
        }
        for (int s = 0; s <= t; s++) { w[s] = exp(w[s] - mx); sum += w[s]; }
        for (int i = 0; i < hs; i++) {
          double o = 0;
          for (int s = 0; s <= t; s++) o += w[s] / sum * qkv[(size_t)s * 3 * C + 2 * C + hd * hs + i];
          att[t * C + hd * hs + i] = o;
        }
      }
    for (int t = 0; t < T; t++) {
      ref_lin(y, att + t * C, apw + (size_t)l * C * C, apb + l * C, C, C);
      for (int c = 0; c < C; c++) h[t * C + c] += y[c];
      ref_ln(a + t * C, h + t * C, ln2w + l * C, ln2b + l * C, C);
      ref_lin(u, a + t * C, fcw + (size_t)l * 4 * C * C, fcb + l * 4 * C, C, 4 * C);
      for (int i = 0; i < 4 * C; i++) u[i] = ref_gelu(u[i]);
      ref_lin(y, u, fpw + (size_t)l * 4 * C * C, fpb + l * C, 4 * C, C);
      for (int c = 0; c < C; c++) h[t * C + c] += y[c];
    }
  }
  for (int t = 0; t < T; t++) {
    ref_ln(a + t * C, h + t * C, lnfw, lnfb, C);
    ref_lin(logits + (size_t)t * g.V, a + t * C, wte, NULL, C, g.V);
  }
  free(h); free(a); free(qkv); free(att); free(u); free(y); free(w);
}

/* A random model whose every parameter is perturbed (LayerNorm weights 1 ± 0.2, biases N(0, 0.1), weights ×scale),
   so biases, LayerNorm affine parts and peaked attention all matter. */
static mlsys_relm_gpt2 *make_model(ref_cfg g, uint64_t seed, double scale, int threads) {
  mlsys_relm_gpt2_config c = {g.maxT, g.V, g.Vp, g.L, g.NH, g.C};
  mlsys_relm_gpt2_desc d = {threads, 0};
  mlsys_relm_gpt2 *m = NULL;
  mlsys_rng r;
  size_t n;
  if (mlsys_relm_gpt2_random(&c, seed, &d, &m)) return NULL;
  float *p = mlsys_relm_gpt2_params(m, &n);
  mlsys_rng_seed(&r, seed ^ 0x5eed);
  for (size_t i = 0; i < n; i++) {
    if (p[i] == 1.0f) p[i] = (float)(1.0 + 0.2 * mlsys_rng_normal(&r));
    else if (p[i] == 0.0f) p[i] = (float)(0.1 * mlsys_rng_normal(&r));
    else p[i] = (float)(p[i] * scale);
  }
  return m;
}

static const ref_cfg CFG_A = {40, 512, 2, 2, 64, 520};   /* spec test 15 */
static const ref_cfg CFG_B = {20, 97, 1, 3, 48, 100};    /* odd: 3 heads of 16, V = 97 */

static void random_tokens(mlsys_rng *r, int32_t *t, int n, int V) {
  for (int i = 0; i < n; i++) t[i] = (int32_t)mlsys_rng_below(r, (uint64_t)V);
}

static double check_vs_reference(ref_cfg g, uint64_t seed, double scale, int T) {
  mlsys_relm_gpt2 *m = make_model(g, seed, scale, 1);
  mlsys_rng r;
  double worst = 0;
  if (!m) return 1e30;
  int32_t *toks = malloc((size_t)T * sizeof(int32_t));
  float *lg = malloc((size_t)T * g.V * sizeof(float));
  double *ref = malloc((size_t)T * g.V * sizeof(double));
  mlsys_rng_seed(&r, seed + 1);
  random_tokens(&r, toks, T, g.V);
  if (mlsys_relm_gpt2_forward(m, toks, T, lg)) worst = 1e30;
  else {
    ref_forward(mlsys_relm_gpt2_params(m, NULL), g, toks, T, ref);
    for (size_t i = 0; i < (size_t)T * g.V; i++) {
      double d = fabs(lg[i] - ref[i]);
      if (!(d <= worst)) worst = d;
    }
  }
  free(toks); free(lg); free(ref);
  mlsys_relm_gpt2_free(m);
  return worst;
}

TEST(forward_matches_double_reference) {   /* spec §7.3 test 15 */
  double e;
  e = check_vs_reference(CFG_A, 1, 1.0, 32);   /* GPT-2's own initialisation */
  CHECK_MSG(e <= 1e-4, "L2 NH2 C64 V512 Vp520 init: max |Δ logit| = %g", e);
  e = check_vs_reference(CFG_A, 2, 5.0, 32);   /* weights N(0, 0.1): logits of several units, peaked attention */
  CHECK_MSG(e <= 1e-4, "L2 NH2 C64 V512 Vp520 ×5: max |Δ logit| = %g", e);
  e = check_vs_reference(CFG_B, 3, 5.0, 20);   /* all maxT positions */
  CHECK_MSG(e <= 1e-4, "L1 NH3 C48 V97 Vp100 ×5: max |Δ logit| = %g", e);
}

TEST(forward_matches_reference_on_random_shapes) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 42);
  for (int k = 0; k < 12; k++) {
    ref_cfg g;
    g.L = 1 + (int)mlsys_rng_below(&r, 3);
    g.NH = 1 + (int)mlsys_rng_below(&r, 4);
    g.C = g.NH * (1 + (int)mlsys_rng_below(&r, 19));   /* head sizes 1..19: dot-product tails */
    g.V = 2 + (int)mlsys_rng_below(&r, 60);
    g.Vp = g.V + (int)mlsys_rng_below(&r, 5);
    g.maxT = 1 + (int)mlsys_rng_below(&r, 24);
    double e = check_vs_reference(g, 100 + k, 3.0, 1 + (int)mlsys_rng_below(&r, (uint64_t)g.maxT));
    CHECK_MSG(e <= 1e-4, "L%d NH%d C%d V%d Vp%d: max |Δ logit| = %g", g.L, g.NH, g.C, g.V, g.Vp, e);
  }
}

static double maxdiff(const float *a, const float *b, size_t n) {
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= w)) w = d;
  }
  return w;
}

TEST(kv_cache_incremental_equals_full_recompute) {
  const ref_cfg cfgs[2] = {CFG_A, CFG_B};
  for (int ci = 0; ci < 2; ci++) {
    ref_cfg g = cfgs[ci];
    mlsys_relm_gpt2 *m = make_model(g, 7 + ci, 5.0, 1);
    mlsys_relm_gpt2_cache *c, *c2;
    mlsys_rng r;
    const int T = g.maxT;
    REQUIRE(m);
    int32_t *toks = malloc((size_t)T * sizeof(int32_t));
    float *full = malloc((size_t)T * g.V * sizeof(float)), *lg = malloc((size_t)g.V * sizeof(float));
    mlsys_rng_seed(&r, 9);
    random_tokens(&r, toks, T, g.V);
    REQUIRE_OK(mlsys_relm_gpt2_forward(m, toks, T, full));
    /* one token at a time */
    REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c));
    double worst = 0;
    for (int t = 0; t < T; t++) {
      REQUIRE_OK(mlsys_relm_gpt2_cache_append(c, toks[t], lg));
      CHECK_EQ_INT(mlsys_relm_gpt2_cache_len(c), t + 1);
      double d = maxdiff(lg, full + (size_t)t * g.V, (size_t)g.V);
      if (d > worst) worst = d;
    }
    CHECK_MSG(worst <= 1e-5, "config %d: one token at a time: max |Δ| = %g", ci, worst);
    /* the cache is full: one more position is an error */
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_append(c, 0, lg), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "max_seq_len");
    mlsys_relm_gpt2_cache_free(c);
    /* chunks of random sizes */
    REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c2));
    worst = 0;
    for (int t = 0; t < T;) {
      int n = 1 + (int)mlsys_rng_below(&r, 7);
      if (n > T - t) n = T - t;
      REQUIRE_OK(mlsys_relm_gpt2_cache_extend(c2, toks + t, n, lg));
      t += n;
      double d = maxdiff(lg, full + (size_t)(t - 1) * g.V, (size_t)g.V);
      if (d > worst) worst = d;
    }
    CHECK_MSG(worst <= 1e-5, "config %d: chunks: max |Δ| = %g", ci, worst);
    mlsys_relm_gpt2_cache_free(c2);
    CHECK_EQ_INT(mlsys_relm_gpt2_kv_bytes(m), 0);   /* every block released */
    free(toks); free(full); free(lg);
    mlsys_relm_gpt2_free(m);
  }
}

/* logits after toks[0, n) by full recomputation */
static void last_logits(mlsys_relm_gpt2 *m, const int32_t *toks, int n, int V, float *out) {
  float *all = malloc((size_t)n * V * sizeof(float));
  if (mlsys_relm_gpt2_forward(m, toks, n, all)) memset(out, 0xff, (size_t)V * sizeof(float));   /* NaN: fails */
  else memcpy(out, all + (size_t)(n - 1) * V, (size_t)V * sizeof(float));
  free(all);
}

TEST(forked_caches_equal_recomputed_prefixes) {
  ref_cfg g = CFG_A;
  mlsys_relm_gpt2 *m = make_model(g, 11, 5.0, 1);
  mlsys_rng r;
  REQUIRE(m);
  float *lg = malloc((size_t)g.V * sizeof(float)), *ref = malloc((size_t)g.V * sizeof(float));
  mlsys_rng_seed(&r, 12);
  for (int trial = 0; trial < 6; trial++) {
    int32_t base[40], seq[4][40];
    int k = 1 + (int)mlsys_rng_below(&r, 12), len[4];
    mlsys_relm_gpt2_cache *root, *f[4];
    random_tokens(&r, base, k, g.V);
    REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &root));
    REQUIRE_OK(mlsys_relm_gpt2_cache_extend(root, base, k, NULL));
    /* four forks extended in turn, some by one token (in place for the first, a new block for the others), some
       by several; then the root itself continues after its forks */
    for (int j = 0; j < 4; j++) {
      int add = j % 2 ? 1 : 1 + (int)mlsys_rng_below(&r, 6);
      REQUIRE_OK(mlsys_relm_gpt2_cache_fork(root, &f[j]));
      memcpy(seq[j], base, (size_t)k * sizeof(int32_t));
      random_tokens(&r, seq[j] + k, add, g.V);
      len[j] = k + add;
      REQUIRE_OK(mlsys_relm_gpt2_cache_extend(f[j], seq[j] + k, add, lg));
      last_logits(m, seq[j], len[j], g.V, ref);
      CHECK_MSG(maxdiff(lg, ref, (size_t)g.V) <= 1e-5, "trial %d fork %d: |Δ| = %g", trial, j, maxdiff(lg, ref, (size_t)g.V));
    }
    /* forks of forks, after their parents moved on */
    for (int j = 0; j < 4; j++) {
      mlsys_relm_gpt2_cache *ff;
      int32_t s2[40];
      REQUIRE_OK(mlsys_relm_gpt2_cache_fork(f[j], &ff));
      memcpy(s2, seq[j], (size_t)len[j] * sizeof(int32_t));
      s2[len[j]] = (int32_t)mlsys_rng_below(&r, (uint64_t)g.V);
      seq[j][len[j]] = (int32_t)mlsys_rng_below(&r, (uint64_t)g.V);
      REQUIRE_OK(mlsys_relm_gpt2_cache_append(f[j], seq[j][len[j]], NULL));   /* the parent first */
      REQUIRE_OK(mlsys_relm_gpt2_cache_append(ff, s2[len[j]], lg));
      last_logits(m, s2, len[j] + 1, g.V, ref);
      CHECK_MSG(maxdiff(lg, ref, (size_t)g.V) <= 1e-5, "trial %d fork of fork %d", trial, j);
      len[j]++;
      mlsys_relm_gpt2_cache_free(ff);
    }
    base[k] = (int32_t)mlsys_rng_below(&r, (uint64_t)g.V);
    REQUIRE_OK(mlsys_relm_gpt2_cache_append(root, base[k], lg));
    last_logits(m, base, k + 1, g.V, ref);
    CHECK_MSG(maxdiff(lg, ref, (size_t)g.V) <= 1e-5, "trial %d root after its forks", trial);
    mlsys_relm_gpt2_cache_free(root);
    /* the forks still work after the root is gone */
    for (int j = 0; j < 4; j++) {
      seq[j][len[j]] = (int32_t)mlsys_rng_below(&r, (uint64_t)g.V);
      REQUIRE_OK(mlsys_relm_gpt2_cache_append(f[j], seq[j][len[j]], lg));
      last_logits(m, seq[j], len[j] + 1, g.V, ref);
      CHECK_MSG(maxdiff(lg, ref, (size_t)g.V) <= 1e-5, "trial %d fork %d after the root is freed", trial, j);
      mlsys_relm_gpt2_cache_free(f[j]);
    }
    CHECK_EQ_INT(mlsys_relm_gpt2_kv_bytes(m), 0);
  }
  free(lg); free(ref);
  mlsys_relm_gpt2_free(m);
}

TEST(batched_extension_equals_one_by_one) {
  ref_cfg g = CFG_B;
  mlsys_relm_gpt2 *m = make_model(g, 13, 5.0, 1);
  mlsys_rng r;
  enum { B = 5 };
  mlsys_relm_gpt2_cache *c[B], *c1;
  int32_t toks[B][20];
  const int32_t *tp[B];
  int n[B];
  REQUIRE(m);
  float *lg = malloc((size_t)B * g.V * sizeof(float)), *one = malloc((size_t)g.V * sizeof(float));
  mlsys_rng_seed(&r, 14);
  REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c1));
  REQUIRE_OK(mlsys_relm_gpt2_cache_extend(c1, (const int32_t[]){1, 2, 3}, 3, NULL));
  for (int b = 0; b < B; b++) {
    if (b < 3) REQUIRE_OK(mlsys_relm_gpt2_cache_fork(c1, &c[b]));   /* three share a tail block */
    else REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c[b]));
    n[b] = 1 + (int)mlsys_rng_below(&r, 8);
    random_tokens(&r, toks[b], n[b], g.V);
    tp[b] = toks[b];
  }
  REQUIRE_OK(mlsys_relm_gpt2_cache_extend_batch(B, c, tp, n, lg));
  for (int b = 0; b < B; b++) {
    int32_t s[30];
    int k = 0;
    if (b < 3) { s[0] = 1; s[1] = 2; s[2] = 3; k = 3; }
    memcpy(s + k, toks[b], (size_t)n[b] * sizeof(int32_t));
    last_logits(m, s, k + n[b], g.V, one);
    CHECK_MSG(maxdiff(lg + (size_t)b * g.V, one, (size_t)g.V) == 0, "batch row %d differs from its own recomputation", b);
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_len(c[b]), k + n[b]);
  }
  /* the same cache twice, a bad token, a zero-length extension: errors, and no cache changed */
  {
    mlsys_relm_gpt2_cache *cc[2] = {c[0], c[0]};
    int nn[2] = {1, 1};
    const int32_t *tt[2] = {toks[0], toks[1]};
    int before = mlsys_relm_gpt2_cache_len(c[0]);
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_extend_batch(2, cc, tt, nn, NULL), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "twice");
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_append(c[0], g.V, NULL), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "outside");
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_extend(c[0], toks[0], 0, NULL), MLSYS_ERR_ARG);
    CHECK_EQ_INT(mlsys_relm_gpt2_cache_len(c[0]), before);
  }
  for (int b = 0; b < B; b++) mlsys_relm_gpt2_cache_free(c[b]);
  mlsys_relm_gpt2_cache_free(c1);
  CHECK_EQ_INT(mlsys_relm_gpt2_kv_bytes(m), 0);
  free(lg); free(one);
  mlsys_relm_gpt2_free(m);
}

TEST(thread_count_does_not_change_results) {
  ref_cfg g = CFG_A;
  mlsys_relm_gpt2 *m = make_model(g, 15, 5.0, 1);
  mlsys_rng r;
  const int T = 32;
  int32_t toks[32];
  REQUIRE(m);
  float *a = malloc((size_t)T * g.V * sizeof(float)), *b = malloc((size_t)T * g.V * sizeof(float));
  float *ia = malloc((size_t)g.V * sizeof(float)), *ib = malloc((size_t)g.V * sizeof(float));
  mlsys_rng_seed(&r, 16);
  random_tokens(&r, toks, T, g.V);
  REQUIRE_OK(mlsys_relm_gpt2_forward(m, toks, T, a));
  {
    mlsys_relm_gpt2_cache *c;
    REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c));
    REQUIRE_OK(mlsys_relm_gpt2_cache_extend(c, toks, 20, NULL));
    REQUIRE_OK(mlsys_relm_gpt2_cache_append(c, toks[20], ia));
    mlsys_relm_gpt2_cache_free(c);
  }
  for (int th = 2; th <= 4; th++) {
    mlsys_relm_gpt2_cache *c;
    REQUIRE_OK(mlsys_relm_gpt2_set_threads(m, th));
    REQUIRE_OK(mlsys_relm_gpt2_forward(m, toks, T, b));
    CHECK_MSG(!memcmp(a, b, (size_t)T * g.V * sizeof(float)), "%d threads: forward logits differ (max %g)", th,
              maxdiff(a, b, (size_t)T * g.V));
    REQUIRE_OK(mlsys_relm_gpt2_cache_create(m, &c));
    REQUIRE_OK(mlsys_relm_gpt2_cache_extend(c, toks, 20, NULL));
    REQUIRE_OK(mlsys_relm_gpt2_cache_append(c, toks[20], ib));
    CHECK_MSG(!memcmp(ia, ib, (size_t)g.V * sizeof(float)), "%d threads: cached logits differ", th);
    mlsys_relm_gpt2_cache_free(c);
  }
  /* a model created with threads in its desc gives the same too */
  {
    mlsys_relm_gpt2 *m2 = make_model(g, 15, 5.0, 2);
    REQUIRE(m2);
    REQUIRE_OK(mlsys_relm_gpt2_forward(m2, toks, T, b));
    CHECK(!memcmp(a, b, (size_t)T * g.V * sizeof(float)));
    mlsys_relm_gpt2_free(m2);
  }
  CHECK_EQ_INT(mlsys_relm_gpt2_set_threads(m, -1), MLSYS_ERR_ARG);
  free(a); free(b); free(ia); free(ib);
  mlsys_relm_gpt2_free(m);
}

/* random prefixes drawn from a few stems, so that they share parts; lengths 0..maxT−1 */
static int random_prefix(mlsys_rng *r, int32_t stems[4][40], int maxlen, int V, int32_t *out) {
  int n = (int)mlsys_rng_below(r, (uint64_t)maxlen + 1);
  const int32_t *s = stems[mlsys_rng_below(r, 4)];
  int keep = (int)mlsys_rng_below(r, (uint64_t)n + 1);
  memcpy(out, s, (size_t)keep * sizeof(int32_t));
  random_tokens(r, out + keep, n - keep, mlsys_rng_below(r, 2) ? 3 : V);   /* few distinct tails: repeats too */
  return n;
}

static void lm_against_no_cache(ref_cfg g, size_t budget, int threads, uint64_t seed) {
  mlsys_relm_gpt2 *m = make_model(g, seed, 5.0, threads);
  mlsys_relm_lm lc, ln;
  mlsys_relm_gpt2_lm_desc dc = {budget, 0, 0, 0}, dn = {0, 1, 0, 0};
  mlsys_relm_gpt2_lm_stats st;
  mlsys_rng r;
  int32_t stems[4][40];
  enum { BMAX = 6 };
  int32_t seq[BMAX][40];
  const int32_t *sp[BMAX];
  int lens[BMAX];
  double worst = 0, worst_sum = 0, worst_ref = 0;
  if (!m) { CHECK(m); return; }
  float *a = malloc((size_t)BMAX * g.V * sizeof(float)), *b = malloc((size_t)BMAX * g.V * sizeof(float));
  float *ref = malloc((size_t)g.V * sizeof(float));
  REQUIRE_OK(mlsys_relm_gpt2_lm(m, &dc, &lc));
  REQUIRE_OK(mlsys_relm_gpt2_lm(m, &dn, &ln));
  CHECK_EQ_INT(lc.vocab_size, g.V);
  CHECK_EQ_INT(lc.bos, g.V - 1);
  CHECK_EQ_INT(lc.eos, g.V - 1);
  CHECK_EQ_INT(lc.max_seq_len, g.maxT);
  mlsys_rng_seed(&r, seed + 1);
  for (int s = 0; s < 4; s++) random_tokens(&r, stems[s], 40, g.V);
  for (int call = 0; call < 40; call++) {
    int B = 1 + (int)mlsys_rng_below(&r, BMAX);
    for (int k = 0; k < B; k++) {
      lens[k] = call == 0 && k == 0 ? 0 : random_prefix(&r, stems, g.maxT - 1, g.V, seq[k]);
      sp[k] = seq[k];
    }
    REQUIRE_OK(lc.next_logprobs(lc.ctx, B, sp, lens, a));
    REQUIRE_OK(ln.next_logprobs(ln.ctx, B, sp, lens, b));
    for (int k = 0; k < B; k++) {
      double d = maxdiff(a + (size_t)k * g.V, b + (size_t)k * g.V, (size_t)g.V), sum = 0;
      int32_t full[41];
      if (d > worst) worst = d;
      for (int v = 0; v < g.V; v++) sum += exp((double)a[(size_t)k * g.V + v]);
      if (fabs(sum - 1) > worst_sum) worst_sum = fabs(sum - 1);
      /* and the log-softmax of the full forward over BOS + prefix */
      full[0] = g.V - 1;
      memcpy(full + 1, seq[k], (size_t)lens[k] * sizeof(int32_t));
      last_logits(m, full, lens[k] + 1, g.V, ref);
      mlsys_relm_log_softmax(ref, g.V, ref);
      d = maxdiff(a + (size_t)k * g.V, ref, (size_t)g.V);
      if (d > worst_ref) worst_ref = d;
    }
  }
  CHECK_MSG(worst <= 1e-5, "cached vs uncached log-probs: max |Δ| = %g", worst);
  CHECK_MSG(worst_sum <= 1e-4, "|Σ exp(logp) − 1| up to %g", worst_sum);
  CHECK_MSG(worst_ref <= 1e-5, "cached vs full forward: max |Δ| = %g", worst_ref);
  mlsys_relm_gpt2_lm_stats_get(&lc, &st);
  CHECK(st.hits > 0);
  CHECK(st.tokens_computed < st.tokens_asked);
  if (budget) {
    CHECK(st.evicted > 0);
    CHECK(st.kv_bytes <= budget);
  }
  /* a child of the node just expanded costs one token */
  {
    long before;
    int32_t q[3] = {5, 6, 7};
    const int32_t *qp = q;
    int n = 2;
    REQUIRE(lc.next_logprobs(lc.ctx, 1, &qp, &n, a) == 0);
    mlsys_relm_gpt2_lm_stats_get(&lc, &st);
    before = st.tokens_computed;
    n = 3;
    REQUIRE(lc.next_logprobs(lc.ctx, 1, &qp, &n, a) == 0);
    mlsys_relm_gpt2_lm_stats_get(&lc, &st);
    CHECK_EQ_INT(st.tokens_computed - before, 1);
    REQUIRE(lc.next_logprobs(lc.ctx, 1, &qp, &n, b) == 0);   /* the same prefix again: one token again, same answer */
    mlsys_relm_gpt2_lm_stats_get(&lc, &st);
    CHECK_EQ_INT(st.tokens_computed - before, 2);
    CHECK(!memcmp(a, b, (size_t)g.V * sizeof(float)));
  }
  /* bad input: an error with a message, not a crash */
  {
    int32_t q[1] = {g.V};
    const int32_t *qp = q;
    int n = 1;
    CHECK(lc.next_logprobs(lc.ctx, 1, &qp, &n, a) != 0);
    CHECK_CONTAINS(mlsys_last_error(), "outside");
    n = g.maxT;
    CHECK(lc.next_logprobs(lc.ctx, 1, &qp, &n, a) != 0);
    CHECK_CONTAINS(mlsys_last_error(), "max_seq_len");
  }
  mlsys_relm_gpt2_lm_free(&lc);
  mlsys_relm_gpt2_lm_free(&ln);
  CHECK(lc.next_logprobs == NULL);
  CHECK_EQ_INT(mlsys_relm_gpt2_kv_bytes(m), 0);
  free(a); free(b); free(ref);
  mlsys_relm_gpt2_free(m);
}

TEST(lm_prefix_cache_equals_recomputation) { lm_against_no_cache(CFG_B, 0, 1, 21); }
TEST(lm_prefix_cache_under_a_small_budget) { lm_against_no_cache(CFG_B, 40 * 1024, 2, 22); }   /* ~53 positions */
TEST(lm_prefix_cache_spec_config) { lm_against_no_cache(CFG_A, 0, 2, 23); }

TEST(log_softmax_is_normalised) {
  float x[1000], y[1000];
  mlsys_rng r;
  mlsys_rng_seed(&r, 3);
  for (int i = 0; i < 1000; i++) x[i] = (float)(50 * mlsys_rng_normal(&r)) + 1000.0f;   /* large: needs the max */
  mlsys_relm_log_softmax(x, 1000, y);
  double mx = -1e300, s = 0;
  for (int i = 0; i < 1000; i++) if (x[i] > mx) mx = x[i];
  for (int i = 0; i < 1000; i++) s += exp((double)x[i] - mx);
  for (int i = 0; i < 1000; i++) CHECK_NEAR(y[i], (double)x[i] - mx - log(s), 1e-4);
  s = 0;
  for (int i = 0; i < 1000; i++) s += exp((double)y[i]);
  CHECK_NEAR(s, 1.0, 1e-5);
}

/* ---- llm.c's checkpoint, written here from spec §2.4 ---- */
static size_t write_ckpt(const char *path, const int32_t *hdr8, const float *p, size_t np, long trunc) {
  int32_t h[256] = {0};
  FILE *f = fopen(path, "wb");
  size_t bytes;
  if (!f) return 0;
  memcpy(h, hdr8, 8 * sizeof(int32_t));
  fwrite(h, sizeof h, 1, f);
  if (np) fwrite(p, sizeof(float), np, f);
  fclose(f);
  bytes = sizeof h + np * sizeof(float);
  if (trunc) { bytes = (size_t)((long)bytes + trunc); if (truncate(path, (off_t)bytes)) return 0; }
  return bytes;
}

TEST(checkpoint_roundtrip) {
  ref_cfg g = CFG_B;
  mlsys_relm_gpt2 *m = make_model(g, 31, 5.0, 1), *m2 = NULL, *m3 = NULL;
  char path[] = "/tmp/test_relm_gpt2_XXXXXX";
  int fd = mkstemp(path);
  size_t np, np2;
  int32_t toks[20];
  REQUIRE(m && fd >= 0);
  close(fd);
  float *p = mlsys_relm_gpt2_params(m, &np);
  /* the count from the spec's tensor list */
  size_t C = (size_t)g.C, L = (size_t)g.L;
  CHECK_EQ_INT(np, (size_t)g.Vp * C + (size_t)g.maxT * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C);
  int32_t hdr[8] = {20240326, 3, g.maxT, g.V, g.L, g.NH, g.C, g.Vp};
  REQUIRE(write_ckpt(path, hdr, p, np, 0) == 1024 + 4 * np);
  REQUIRE_OK(mlsys_relm_gpt2_load(path, NULL, &m2));
  mlsys_relm_gpt2_config c = mlsys_relm_gpt2_get_config(m2);
  CHECK(c.max_seq_len == g.maxT && c.vocab_size == g.V && c.n_layer == g.L && c.n_head == g.NH && c.n_embd == g.C &&
        c.padded_vocab_size == g.Vp);
  CHECK(!memcmp(mlsys_relm_gpt2_params(m2, &np2), p, np * sizeof(float)) && np2 == np);
  for (int i = 0; i < 20; i++) toks[i] = (int32_t)((i * 37) % g.V);
  float *a = malloc((size_t)20 * g.V * sizeof(float)), *b = malloc((size_t)20 * g.V * sizeof(float));
  REQUIRE_OK(mlsys_relm_gpt2_forward(m, toks, 20, a));
  REQUIRE_OK(mlsys_relm_gpt2_forward(m2, toks, 20, b));
  CHECK(!memcmp(a, b, (size_t)20 * g.V * sizeof(float)));
  /* from memory */
  {
    char *buf;
    size_t len;
    REQUIRE_OK(mlsys_read_file(path, &buf, &len));
    REQUIRE_OK(mlsys_relm_gpt2_load_mem(buf, len, NULL, &m3));
    REQUIRE_OK(mlsys_relm_gpt2_forward(m3, toks, 20, b));
    CHECK(!memcmp(a, b, (size_t)20 * g.V * sizeof(float)));
    free(buf);
  }
  free(a); free(b);
  mlsys_relm_gpt2_free(m);
  mlsys_relm_gpt2_free(m2);
  mlsys_relm_gpt2_free(m3);
  unlink(path);
}

static mlsys_status load_hdr(const char *path, const int32_t *hdr, size_t np, long trunc, int64_t max_params) {
  float *p = calloc(np ? np : 1, sizeof(float));
  mlsys_relm_gpt2 *m = NULL;
  mlsys_relm_gpt2_desc d = {0, max_params};
  mlsys_status s;
  write_ckpt(path, hdr, p, np, trunc);
  s = mlsys_relm_gpt2_load(path, &d, &m);
  if (s == MLSYS_OK) mlsys_relm_gpt2_free(m);
  /* the memory loader agrees */
  {
    char *buf;
    size_t len;
    if (mlsys_read_file(path, &buf, &len) == MLSYS_OK) {
      char err[1024];
      snprintf(err, sizeof err, "%s", mlsys_last_error());
      mlsys_status s2 = mlsys_relm_gpt2_load_mem(buf, len, &d, &m);
      if (s2 == MLSYS_OK) mlsys_relm_gpt2_free(m);
      CHECK_EQ_INT(s2, s);
      free(buf);
      mlsys_set_error(s, "%s", err);
    }
  }
  free(p);
  return s;
}

TEST(checkpoint_errors_are_named) {
  char path[] = "/tmp/test_relm_gpt2_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  /* a valid tiny shape: maxT 4, V 5, L 1, NH 2, C 4, Vp 6 → 6·4 + 4·4 + 12·16 + 13·4 + 2·4 = 292 parameters */
  int32_t ok[8] = {20240326, 3, 4, 5, 1, 2, 4, 6};
  const size_t np = 292;
  CHECK_OK(load_hdr(path, ok, np, 0, 0));
  CHECK_EQ_INT(load_hdr(path, ok, np, -4, 0), MLSYS_ERR_PARSE);   /* truncated */
  CHECK_CONTAINS(mlsys_last_error(), "expected 2192 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "2188");
  CHECK_EQ_INT(load_hdr(path, ok, np, 1, 0), MLSYS_ERR_PARSE);    /* one byte too many */
  CHECK_CONTAINS(mlsys_last_error(), "2193");
  CHECK_EQ_INT(load_hdr(path, ok, 0, -100, 0), MLSYS_ERR_PARSE);  /* not even a header */
  CHECK_CONTAINS(mlsys_last_error(), "header");
  int32_t h[8];
  memcpy(h, ok, sizeof h); h[0] = 20240327;
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "magic");
  memcpy(h, ok, sizeof h); h[1] = 5;
  CHECK_EQ_INT(load_hdr(path, h, np / 2, 0, 0), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "version 5");
  CHECK_CONTAINS(mlsys_last_error(), "bf16");
  memcpy(h, ok, sizeof h); h[1] = 2;
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "version 2");
  memcpy(h, ok, sizeof h); h[7] = 4;   /* Vp < V */
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "Vp");
  memcpy(h, ok, sizeof h); h[5] = 3;   /* C % NH */
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "multiple of n_head");
  memcpy(h, ok, sizeof h); h[4] = 0;
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "n_layer");
  memcpy(h, ok, sizeof h); h[3] = -5;
  CHECK_EQ_INT(load_hdr(path, h, np, 0, 0), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "vocab_size");
  CHECK_EQ_INT(load_hdr(path, ok, np, 0, 291), MLSYS_ERR_TOO_BIG);   /* the desc's limit */
  CHECK_CONTAINS(mlsys_last_error(), "292");
  int32_t huge[8] = {20240326, 3, 1 << 30, 1 << 30, 1 << 30, 1 << 20, 1 << 30, 1 << 30};
  CHECK_EQ_INT(load_hdr(path, huge, 0, 0, 0), MLSYS_ERR_TOO_BIG);   /* default limit, no overflow */
  {
    mlsys_relm_gpt2 *m = (mlsys_relm_gpt2 *)1;
    CHECK_EQ_INT(mlsys_relm_gpt2_load("/nonexistent/gpt2.bin", NULL, &m), MLSYS_ERR_IO);
    CHECK(m == NULL);
    CHECK_CONTAINS(mlsys_last_error(), "/nonexistent/gpt2.bin");
  }
  unlink(path);
  /* random configs are checked too */
  {
    mlsys_relm_gpt2_config c = {8, 10, 0, 1, 3, 16};
    mlsys_relm_gpt2 *m;
    CHECK_EQ_INT(mlsys_relm_gpt2_random(&c, 1, NULL, &m), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "multiple of n_head");
  }
}

TEST(random_model_is_deterministic_gpt2_init) {
  mlsys_relm_gpt2_config c = {8, 10, 12, 1, 2, 8};
  mlsys_relm_gpt2 *a, *b, *d;
  size_t n, i;
  REQUIRE_OK(mlsys_relm_gpt2_random(&c, 5, NULL, &a));
  REQUIRE_OK(mlsys_relm_gpt2_random(&c, 5, NULL, &b));
  REQUIRE_OK(mlsys_relm_gpt2_random(&c, 6, NULL, &d));
  float *pa = mlsys_relm_gpt2_params(a, &n), *pb = mlsys_relm_gpt2_params(b, NULL), *pd = mlsys_relm_gpt2_params(d, NULL);
  CHECK(!memcmp(pa, pb, n * sizeof(float)));
  CHECK(memcmp(pa, pd, n * sizeof(float)) != 0);
  /* wte rows V..Vp−1 are zero; ln1w (after wte and wpe) is 1, ln1b 0; the weights have std ≈ 0.02 */
  for (i = 10 * 8; i < 12 * 8; i++) CHECK(pa[i] == 0.0f);
  size_t ln1 = 12 * 8 + 8 * 8;
  for (i = 0; i < 8; i++) CHECK(pa[ln1 + i] == 1.0f && pa[ln1 + 8 + i] == 0.0f);
  double s2 = 0;
  for (i = 0; i < 10 * 8; i++) s2 += (double)pa[i] * pa[i];
  CHECK_NEAR(sqrt(s2 / 80), 0.02, 0.006);
  mlsys_relm_gpt2_free(a); mlsys_relm_gpt2_free(b); mlsys_relm_gpt2_free(d);
}

TEST(bigram_lm_returns_its_rows) {
  enum { V = 7 };
  float t[V * V], t0[V], out[3 * V];
  mlsys_relm_lm lm;
  for (int i = 0; i < V * V; i++) t[i] = -(float)i;
  for (int i = 0; i < V; i++) t0[i] = 100.0f + (float)i;
  REQUIRE_OK(mlsys_relm_lm_bigram(V, t, t0, &lm));
  t[0] = 12345;   /* copied: later changes do not matter */
  CHECK_EQ_INT(lm.vocab_size, V);
  int32_t s1[3] = {1, 2, 4}, s2[1] = {6};
  const int32_t *seqs[3] = {NULL, s1, s2};
  int lens[3] = {0, 3, 1};
  REQUIRE(lm.next_logprobs(lm.ctx, 3, seqs, lens, out) == 0);
  for (int v = 0; v < V; v++) {
    CHECK(out[v] == 100.0f + (float)v);                 /* empty: logp0 */
    CHECK(out[V + v] == -(float)(4 * V + v));           /* last token 4 */
    CHECK(out[2 * V + v] == -(float)(6 * V + v));       /* last token 6 */
  }
  s2[0] = V;
  CHECK(lm.next_logprobs(lm.ctx, 3, seqs, lens, out) != 0);
  CHECK_CONTAINS(mlsys_last_error(), "outside");
  mlsys_relm_lm_bigram_free(&lm);
  CHECK(lm.ctx == NULL);
  CHECK_EQ_INT(mlsys_relm_lm_bigram(0, t, t0, &lm), MLSYS_ERR_ARG);
}

TEST_MAIN()
