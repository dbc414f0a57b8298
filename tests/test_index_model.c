/* tests/test_index_model.c — MAPLE's throughput predictor (mlsys_index.h section 5; thesis §6.3.3, spec B3.5): the
   configuration grid, the trace image, summary features, every layer's gradient against central finite differences,
   the CNN against a naive direct-loop reference, the model file (round trip, damage named), thread-count invariance,
   and training on a SYNTHETIC dataset (traces of varying insert fraction and lookup skew whose "throughput" per
   configuration is a known function of them plus noise; no measured data) where the held-out error must beat both the
   per-configuration-mean baseline and the untrained model, and the k-NN fallback must be within a bound. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "tests/test.h"
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define IXT_SAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IXT_SAN 1
#endif
#endif
#ifndef IXT_SAN
#define IXT_SAN 0
#endif

#define IMGN (2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG)

/* ---------------------------------------------------------------------------------------------------------------
   grid
   --------------------------------------------------------------------------------------------------------------- */
TEST(grid_contents) {
  mlsys_index_config *c;
  size_t n, i, j, ga = 0, fl = 0, alex = 0;
  REQUIRE_OK(mlsys_index_grid_default(0.85, &c, &n));
  CHECK_EQ_INT(n, 136);   /* 1 + 30 + 105 (the brief's 143 counts nf = 8 with mnf = 4, which is not a valid FLog) */
  for (i = 0; i < n; i++) {
    if (c[i].leaf == MLSYS_INDEX_GA) {
      CHECK(c[i].expected_insert_frac == 0.85);
      if (c[i].msi == 0 && c[i].msh == 0) alex++; else ga++;
      CHECK(c[i].mf_size == 0 && c[i].mnf == 0 && c[i].nf == 0);
    } else {
      CHECK_EQ_INT(c[i].leaf, MLSYS_INDEX_FLOG);
      fl++;
      CHECK(c[i].nf <= c[i].mnf);
      CHECK(c[i].mf_size >= 16 && c[i].mf_size <= 1024 && (c[i].mf_size & (c[i].mf_size - 1)) == 0);
    }
    for (j = 0; j < i; j++) CHECK(memcmp(&c[i], &c[j], sizeof c[i]) != 0);
  }
  CHECK_EQ_INT(alex, 1);
  CHECK_EQ_INT(ga, 30);
  CHECK_EQ_INT(fl, 105);
  CHECK(c[0].leaf == MLSYS_INDEX_GA && c[0].msi == 0 && c[0].msh == 0);
  mlsys_free(c);
  CHECK_EQ_INT(mlsys_index_grid_default(1.5, &c, &n), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "insert fraction");
}

/* ---------------------------------------------------------------------------------------------------------------
   trace image and features
   --------------------------------------------------------------------------------------------------------------- */
TEST(trace_image_placement_and_counts) {
  /* sample of 255 keys (so rank r is row r exactly) whose last key is a huge outlier: a value scale would squash
     every other key into row 0; the rank scale keeps them apart */
  uint64_t sample[255], keys[512];
  uint8_t ops[512];
  float *img = (float *)malloc(sizeof(float) * IMGN);
  mlsys_index_trace tr = {ops, keys, 512};
  size_t i;
  double mx, tot[2] = {0, 0};
  for (i = 0; i < 254; i++) sample[i] = 10 * (i + 1);
  sample[254] = UINT64_MAX - 5;
  for (i = 0; i < 512; i++) {
    ops[i] = (uint8_t)(i % 3 == 0);
    keys[i] = i < 256 ? 10 * (i % 200) + 5 : 10 * 7;   /* second half: all the same key, rank 7 */
  }
  keys[0] = UINT64_MAX;   /* above the outlier: rank 255 */
  REQUIRE(img);
  REQUIRE_OK(mlsys_index_trace_image(&tr, sample, 255, img));
  /* the densest pixel: x bins hold 2 ops each; the second half puts both ops of a bin on row 7, one channel or both */
  for (i = 0; i < (size_t)IMGN; i++) CHECK(img[i] >= 0 && img[i] <= 1);
  /* max count is 2 (two ops of the same kind in one pixel), so pixel = log1p(c)/log1p(2) */
  mx = log1p(2.0);
  for (i = 0; i < (size_t)IMGN; i++) tot[i / (IMGN / 2)] += img[i] > 0 ? expm1(img[i] * mx) : 0;
  CHECK_NEAR(tot[0], 512 - (512 + 2) / 3, 1e-3);   /* lookups */
  CHECK_NEAR(tot[1], (512 + 2) / 3, 1e-3);         /* inserts */
  /* op 0 (insert, key above everything) at x = 0, y = 255 in channel 1 */
  CHECK(img[IMGN / 2 + 255 * 256 + 0] > 0);
  /* op 1 (lookup, key 15 → rank 1) shares x bin 0 with op 0; op 2 (lookup, key 25 → rank 2) is in x bin 1 */
  CHECK(img[1 * 256 + 0] > 0 && img[2 * 256 + 1] > 0 && img[2 * 256 + 0] == 0);
  CHECK_NEAR(img[1 * 256 + 0], log1p(1.0) / mx, 1e-6);
  /* op 300 (lookup of key 70 → rank 6 → row 6 since keys are 10*(i+1): 70 is sample[6]) at x = 150 */
  CHECK(img[6 * 256 + 150] > 0);
  CHECK(img[7 * 256 + 150] == 0);
  /* empty trace → zero image */
  tr.n = 0;
  img[5] = 3;
  REQUIRE_OK(mlsys_index_trace_image(&tr, sample, 255, img));
  for (i = 0; i < (size_t)IMGN; i++) if (img[i] != 0) break;
  CHECK_EQ_INT(i, IMGN);
  /* bad input named */
  tr.n = 512;
  sample[3] = 1;
  CHECK_EQ_INT(mlsys_index_trace_image(&tr, sample, 255, img), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not sorted");
  sample[3] = 40;
  ops[9] = 7;
  CHECK_EQ_INT(mlsys_index_trace_image(&tr, sample, 255, img), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "op[9]");
  free(img);
}

TEST(trace_features) {
  enum { M = 4096, N = 8000 };
  uint64_t *s = (uint64_t *)malloc(sizeof(uint64_t) * M), *k = (uint64_t *)malloc(sizeof(uint64_t) * N);
  uint8_t *op = (uint8_t *)malloc(N);
  mlsys_index_trace tr = {op, k, N};
  float f[8], g[8];
  size_t i;
  mlsys_rng r;
  mlsys_rng_seed(&r, 5);
  for (i = 0; i < M; i++) s[i] = 1000 + 7 * i;   /* linear keys: one PLA segment, one gap size */
  for (i = 0; i < N; i++) { op[i] = (uint8_t)(i % 4 == 0); k[i] = op[i] ? 2000000 + i : s[mlsys_rng_below(&r, M)]; }
  mlsys_index_trace_features(&tr, s, M, f);
  CHECK_NEAR(f[0], 0.25, 1e-6);
  CHECK(f[1] < 0.05);                 /* uniform lookups: no skew */
  CHECK(f[2] > 0.95);                 /* every insert beyond the sample: one rank bin */
  CHECK_NEAR(f[3], 0, 1e-6);          /* a single gap size */
  CHECK_NEAR(f[4], 1, 1e-6);          /* log2(1 + 1 segment) */
  CHECK_NEAR(f[5], 1, 1e-6);          /* all inserts out of range */
  /* random keys need several PLA segments at eps 32 (each about 32^2 keys long); skewed lookups raise f[1] */
  for (i = 0; i < M; i++) s[i] = mlsys_rng_u64(&r) >> 1;
  for (i = 1; i < M; i++) { uint64_t x = s[i], j = i; while (j > 0 && s[j - 1] > x) { s[j] = s[j - 1]; j--; } s[j] = x; }
  for (i = 0; i < N; i++) { double u = mlsys_rng_uniform(&r); op[i] = 0; k[i] = s[(size_t)(u * u * u * u * M)]; }
  mlsys_index_trace_features(&tr, s, M, g);
  CHECK_NEAR(g[0], 0, 1e-9);
  CHECK(g[1] > f[1] + 0.05);
  CHECK(g[3] > 0.1);
  CHECK(g[4] > 1.5);
  mlsys_index_trace_features(NULL, s, M, g);   /* never fails */
  CHECK(g[0] == 0 && g[4] > 1.5);
  free(s); free(k); free(op);
}

/* ---------------------------------------------------------------------------------------------------------------
   layer gradients against central finite differences (internal functions; loss = sum(r * out) for random r)
   --------------------------------------------------------------------------------------------------------------- */
static void fill(float *x, size_t n, mlsys_rng *r, double sd) { size_t i; for (i = 0; i < n; i++) x[i] = (float)(sd * mlsys_rng_normal(r)); }
static double dotf(const float *a, const float *b, size_t n) { double s = 0; size_t i; for (i = 0; i < n; i++) s += (double)a[i] * b[i]; return s; }
/* relative error of two gradient vectors */
static double relerr(const double *a, const double *b, int n) {
  double d = 0, s = 0;
  int i;
  for (i = 0; i < n; i++) { d += (a[i] - b[i]) * (a[i] - b[i]); s += a[i] * a[i] + b[i] * b[i]; }
  return sqrt(d / (s > 1e-30 ? s : 1e-30));
}

TEST(grad_conv_layer) {
  enum { CI = 3, CO = 4, S = 8, K = CI * 9, SS = S * S };
  float in[CI * SS], W[CO * K], b[CO], out[CO * SS], r[CO * SS], col[K * SS], dW[CO * K], db[CO], din[CI * SS], wt[K * CO], dcol[K * SS];
  double an[3][16], fd[3][16];
  mlsys_rng g;
  int i, c, y, x, ky, kx, ci;
  mlsys_rng_seed(&g, 11);
  fill(in, CI * SS, &g, 1); fill(W, CO * K, &g, 0.3); fill(b, CO, &g, 0.3); fill(r, CO * SS, &g, 1);
  mlsys__index_mdl_conv_fwd(in, CI, CO, S, W, b, col, out);
  /* naive direct convolution */
  for (c = 0; c < CO; c++)
    for (y = 0; y < S; y++)
      for (x = 0; x < S; x++) {
        double s = b[c];
        for (ci = 0; ci < CI; ci++)
          for (ky = 0; ky < 3; ky++)
            for (kx = 0; kx < 3; kx++) {
              int yy = y + ky - 1, xx = x + kx - 1;
              if (yy >= 0 && yy < S && xx >= 0 && xx < S) s += (double)W[((c * CI + ci) * 3 + ky) * 3 + kx] * in[(ci * S + yy) * S + xx];
            }
        CHECK_NEAR(out[(c * S + y) * S + x], s, 1e-5);
      }
  memset(dW, 0, sizeof dW); memset(db, 0, sizeof db);
  mlsys__index_mdl_im2col(in, CI, S, col);
  mlsys__index_mdl_conv_bwd(r, col, CI, CO, S, W, dW, db, din, wt, dcol);
  for (i = 0; i < 16; i++) {
    int pw = (i * 37) % (CO * K), pi = (i * 53) % (CI * SS), pb = i % CO;
    float *ps[3] = {&W[pw], &in[pi], &b[pb]};
    int t;
    an[0][i] = dW[pw]; an[1][i] = din[pi]; an[2][i] = db[pb];
    for (t = 0; t < 3; t++) {
      float keep = *ps[t];
      double lp, lm, h = 1e-2;
      *ps[t] = keep + (float)h; mlsys__index_mdl_conv_fwd(in, CI, CO, S, W, b, col, out); lp = dotf(out, r, CO * SS);
      *ps[t] = keep - (float)h; mlsys__index_mdl_conv_fwd(in, CI, CO, S, W, b, col, out); lm = dotf(out, r, CO * SS);
      *ps[t] = keep;
      fd[t][i] = (lp - lm) / (2 * h);
    }
  }
  CHECK_MSG(relerr(an[0], fd[0], 16) < 1e-3, "conv dW rel err %g", relerr(an[0], fd[0], 16));
  CHECK_MSG(relerr(an[1], fd[1], 16) < 1e-3, "conv dx rel err %g", relerr(an[1], fd[1], 16));
  CHECK_MSG(relerr(an[2], fd[2], 16) < 1e-3, "conv db rel err %g", relerr(an[2], fd[2], 16));
}

TEST(grad_pool_and_linear) {
  enum { C = 3, S = 8, H = S / 2 };
  float in[C * S * S], out[C * H * H], r[C * H * H], din[C * S * S];
  uint8_t arg[C * H * H];
  float x[3 * 10], W[7 * 10], b[7], y[3 * 7], ry[3 * 7], dW[7 * 10], db[7], dx[3 * 10];
  double an[32], fd[32];
  mlsys_rng g;
  int i;
  mlsys_rng_seed(&g, 12);
  fill(in, C * S * S, &g, 1); fill(r, C * H * H, &g, 1);
  mlsys__index_mdl_pool_fwd(in, C, S, out, arg);
  mlsys__index_mdl_pool_bwd(r, out, arg, C, S, din);
  for (i = 0; i < 32; i++) {
    int p = (i * 29 + 3) % (C * S * S);
    float keep = in[p];
    double lp, lm, h = 1e-3;
    an[i] = din[p];
    in[p] = keep + (float)h; mlsys__index_mdl_pool_fwd(in, C, S, out, arg); lp = dotf(out, r, C * H * H);
    in[p] = keep - (float)h; mlsys__index_mdl_pool_fwd(in, C, S, out, arg); lm = dotf(out, r, C * H * H);
    in[p] = keep;
    fd[i] = (lp - lm) / (2 * h);
  }
  CHECK_MSG(relerr(an, fd, 32) < 1e-3, "relu+maxpool rel err %g", relerr(an, fd, 32));
  /* the ReLU zeroes: a pooled value ≤ 0 passes no gradient */
  for (i = 0; i < C * H * H; i++) if (out[i] == 0) break;
  CHECK(i < C * H * H);
  /* linear */
  fill(x, 30, &g, 1); fill(W, 70, &g, 0.5); fill(b, 7, &g, 0.5); fill(ry, 21, &g, 1);
  memset(dW, 0, sizeof dW); memset(db, 0, sizeof db);
  mlsys__index_mdl_linear_bwd(x, ry, 3, 10, 7, W, dW, db, dx);
  for (i = 0; i < 24; i++) {
    float *pp = i < 10 ? &W[i * 7 % 70] : i < 17 ? &b[i - 10] : &x[(i - 17) * 4 % 30];
    double a = i < 10 ? dW[i * 7 % 70] : i < 17 ? db[i - 10] : dx[(i - 17) * 4 % 30], lp, lm, h = 1e-2;
    float keep = *pp;
    *pp = keep + (float)h; mlsys__index_mdl_linear_fwd(x, 3, 10, 7, W, b, y); lp = dotf(y, ry, 21);
    *pp = keep - (float)h; mlsys__index_mdl_linear_fwd(x, 3, 10, 7, W, b, y); lm = dotf(y, ry, 21);
    *pp = keep;
    an[i] = a; fd[i] = (lp - lm) / (2 * h);
  }
  CHECK_MSG(relerr(an, fd, 24) < 1e-3, "linear rel err %g", relerr(an, fd, 24));
}

/* Whole model (CNN with GAP, embeddings, MLP, softmax cross-entropy) on a 32x32 image: for every tensor, the
   directional derivative of the loss along (a) the tensor's own gradient and (b) that plus a random direction, by
   central differences, against the analytic gradient. (Single deep-layer entries have derivatives near float
   rounding of the loss; a direction over the whole tensor has a large, checkable one.) */
TEST(grad_whole_model) {
  enum { H = 32 };
  mlsys_index_model *m;
  mlsys_index_config *cfg;
  size_t ncfg, i;
  mlsys__index_mdl_ws w;
  float img[2 * H * H], *g, *g2, *keep;
  double mops[6];
  mlsys_index_config sel[6];
  mlsys_rng r;
  int t;
  REQUIRE_OK(mlsys_index_model_create(3, &m));
  REQUIRE_OK(mlsys_index_grid_default(0.3, &cfg, &ncfg));
  for (i = 0; i < 6; i++) { sel[i] = cfg[i * 23 % ncfg]; mops[i] = 0.5 + 3.0 * (double)i; }
  mlsys_rng_seed(&r, 4);
  for (i = 0; i < 2 * H * H; i++) img[i] = (float)mlsys_rng_uniform(&r);
  g = (float *)calloc(m->np, sizeof(float));
  g2 = (float *)calloc(m->np, sizeof(float));
  keep = (float *)malloc(m->np * sizeof(float));
  REQUIRE(g && g2 && keep);
  memcpy(keep, m->p, m->np * sizeof(float));
  REQUIRE_OK(mlsys__index_mdl_ws_init(&w, H));
  REQUIRE_OK(mlsys__index_mdl_ws_reserve(&w, 6));
  mlsys__index_mdl_loss_grad(m, &w, img, sel, mops, 6, 1.0f, g);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) {
    size_t o = m->off[t], sz = m->off[t + 1] - m->off[t];
    double an[2], fd[2], gn = 0, rn = 0, e;
    double *v = (double *)malloc(sz * sizeof(double)), *rv = (double *)malloc(sz * sizeof(double));
    int d;
    for (i = 0; i < sz; i++) { gn += (double)g[o + i] * g[o + i]; rv[i] = mlsys_rng_normal(&r); rn += rv[i] * rv[i]; }
    gn = sqrt(gn); rn = sqrt(rn);
    CHECK_MSG(gn > 1e-6, "tensor %s has a zero gradient", mlsys__index_mdl_tensors[t].name);
    for (d = 0; d < 2; d++) {
      double vn = 0, lp, lm, h = 1e-3;
      for (i = 0; i < sz; i++) { v[i] = g[o + i] / gn + (d ? rv[i] / rn : 0); vn += v[i] * v[i]; }
      vn = sqrt(vn);
      an[d] = 0;
      for (i = 0; i < sz; i++) { v[i] /= vn; an[d] += g[o + i] * v[i]; }
      for (i = 0; i < sz; i++) m->p[o + i] = (float)(keep[o + i] + h * v[i]);
      lp = mlsys__index_mdl_loss_grad(m, &w, img, sel, mops, 6, 1.0f, g2);
      for (i = 0; i < sz; i++) m->p[o + i] = (float)(keep[o + i] - h * v[i]);
      lm = mlsys__index_mdl_loss_grad(m, &w, img, sel, mops, 6, 1.0f, g2);
      memcpy(m->p + o, keep + o, sz * sizeof(float));
      fd[d] = (lp - lm) / (2 * h);
    }
    e = relerr(an, fd, 2);
    CHECK_MSG(e < 1e-2, "tensor %s: directional derivatives %.6g %.6g vs finite differences %.6g %.6g (rel err %g)",
              mlsys__index_mdl_tensors[t].name, an[0], an[1], fd[0], fd[1], e);
    free(v); free(rv);
  }
  mlsys__index_mdl_ws_free(&w);
  free(g); free(g2); free(keep);
  mlsys_free(cfg);
  mlsys_index_model_free(m);
}

/* The CNN on a 32x32 image against a naive direct-loop reference (conv, ReLU, maxpool, GAP in double). */
TEST(cnn_forward_matches_naive) {
  enum { H = 32 };
  mlsys_index_model *m;
  mlsys__index_mdl_ws w;
  static double a[64 * H * H], bq[64 * H * H];
  float img[2 * H * H];
  mlsys_rng r;
  int l, S = H, C = 2, i, c;
  REQUIRE_OK(mlsys_index_model_create(9, &m));
  mlsys_rng_seed(&r, 8);
  for (i = 0; i < 2 * H * H; i++) img[i] = (float)mlsys_rng_uniform(&r);
  for (i = 0; i < 2 * H * H; i++) a[i] = img[i];
  for (l = 0; l < 4; l++, S /= 2) {
    int Co = mlsys__index_mdl_co[l], y, x, ci, ky, kx;
    const float *W = m->p + m->off[2 * l], *b = m->p + m->off[2 * l + 1];
    for (c = 0; c < Co; c++)
      for (y = 0; y < S; y++)
        for (x = 0; x < S; x++) {
          double s = b[c];
          for (ci = 0; ci < C; ci++)
            for (ky = 0; ky < 3; ky++)
              for (kx = 0; kx < 3; kx++) {
                int yy = y + ky - 1, xx = x + kx - 1;
                if (yy >= 0 && yy < S && xx >= 0 && xx < S) s += W[((c * C + ci) * 3 + ky) * 3 + kx] * a[(ci * S + yy) * S + xx];
              }
          bq[(c * S + y) * S + x] = s > 0 ? s : 0;
        }
    for (c = 0; c < Co; c++)
      for (y = 0; y < S / 2; y++)
        for (x = 0; x < S / 2; x++) {
          double v = bq[(c * S + 2 * y) * S + 2 * x];
          if (bq[(c * S + 2 * y) * S + 2 * x + 1] > v) v = bq[(c * S + 2 * y) * S + 2 * x + 1];
          if (bq[(c * S + 2 * y + 1) * S + 2 * x] > v) v = bq[(c * S + 2 * y + 1) * S + 2 * x];
          if (bq[(c * S + 2 * y + 1) * S + 2 * x + 1] > v) v = bq[(c * S + 2 * y + 1) * S + 2 * x + 1];
          a[(c * (S / 2) + y) * (S / 2) + x] = v;
        }
    C = Co;
  }
  REQUIRE_OK(mlsys__index_mdl_ws_init(&w, H));
  mlsys__index_mdl_cnn_fwd(m, &w, img);
  for (c = 0; c < 64; c++) {
    double s = 0;
    for (i = 0; i < (H / 16) * (H / 16); i++) s += a[c * (H / 16) * (H / 16) + i];
    s /= (H / 16) * (H / 16);
    CHECK_NEAR(w.emb[c], s, 1e-4 * (1 + fabs(s)));
  }
  mlsys__index_mdl_ws_free(&w);
  mlsys_index_model_free(m);
}

/* ---------------------------------------------------------------------------------------------------------------
   synthetic dataset (NOT measured: a known function of insert fraction, lookup skew and configuration plus noise)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  float *img;
  mlsys_index_config *cfgs;
  double *mops;
  size_t n;
  float feat[8];
  double f;
  int skew;
} ds_item;

static double synth_mops(double f, int skew, const mlsys_index_config *c) {
  double rd, wr;
  if (c->leaf == MLSYS_INDEX_GA) {
    double msi = c->msi > 0 ? c->msi : 2.5, msh = c->msh > 0 ? c->msh : 32;
    rd = 0.25 + 0.02 * log2(msh);
    wr = 1.0 + 0.8 / msi + 0.1 * log2(msh);
  } else {
    rd = 0.3 + 0.06 * log2((double)c->mf_size) + 0.04 * log2((double)c->mnf) - 0.02 * log2((double)c->nf);
    wr = 0.12 + 0.04 * c->nf + 0.01 * log2((double)c->mf_size);
  }
  if (skew) rd *= 0.7;
  return 1.0 / ((1 - f) * rd + f * wr);
}

static void ds_make(ds_item *it, double f, int skew, uint64_t seed) {
  enum { M = 2048, N = 16384 };
  uint64_t *s = (uint64_t *)malloc(sizeof(uint64_t) * M), *k = (uint64_t *)malloc(sizeof(uint64_t) * N);
  uint8_t *op = (uint8_t *)malloc(N);
  mlsys_index_trace tr = {op, k, N};
  mlsys_rng r;
  size_t i, j;
  mlsys_rng_seed(&r, seed);
  for (i = 0; i < M; i++) s[i] = mlsys_rng_u64(&r) >> 2;
  for (i = 1; i < M; i++) { uint64_t x = s[i]; j = i; while (j > 0 && s[j - 1] > x) { s[j] = s[j - 1]; j--; } s[j] = x; }
  for (i = 0; i < N; i++) {
    op[i] = (uint8_t)(mlsys_rng_uniform(&r) < f);
    if (op[i]) k[i] = mlsys_rng_u64(&r) >> 2;
    else { double u = mlsys_rng_uniform(&r); k[i] = s[(size_t)((skew ? u * u * u * u : u) * M)]; }
  }
  it->img = (float *)malloc(sizeof(float) * IMGN);
  mlsys_index_trace_image(&tr, s, M, it->img);
  mlsys_index_trace_features(&tr, s, M, it->feat);
  mlsys_index_grid_default(f, &it->cfgs, &it->n);
  it->mops = (double *)malloc(sizeof(double) * it->n);
  for (i = 0; i < it->n; i++) it->mops[i] = synth_mops(f, skew, &it->cfgs[i]) * exp(0.03 * mlsys_rng_normal(&r));
  it->f = f; it->skew = skew;
  free(s); free(k); free(op);
}
static void ds_free(ds_item *it, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) { free(it[i].img); mlsys_free(it[i].cfgs); free(it[i].mops); }
}
static void ds_items(const ds_item *d, size_t n, mlsys_index_train_item *out) {
  size_t i;
  for (i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].img = d[i].img; out[i].cfgs = d[i].cfgs; out[i].mops = d[i].mops; out[i].n = d[i].n;
    memcpy(out[i].features, d[i].feat, sizeof out[i].features);
  }
}
/* mean |log pred - log true| over the items' configurations (leaf < 0: all; else only that leaf type) */
static double model_mae(const mlsys_index_model *m, const ds_item *d, size_t n, int leaf) {
  double e = 0, *p;
  size_t i, j, k = 0;
  for (i = 0; i < n; i++) {
    p = (double *)malloc(sizeof(double) * d[i].n);
    if (mlsys_index_model_predict(m, d[i].img, d[i].cfgs, d[i].n, p) != MLSYS_OK) { free(p); return INFINITY; }
    for (j = 0; j < d[i].n; j++)
      if (leaf < 0 || (int)d[i].cfgs[j].leaf == leaf) { e += fabs(log(p[j]) - log(d[i].mops[j])); k++; }
    free(p);
  }
  return e / (double)k;
}
/* the trivial baseline: each configuration's mean log throughput over the training traces (same grid order) */
static double baseline_mae(const ds_item *tr, size_t ntr, const ds_item *d, size_t n, int leaf) {
  double e = 0;
  size_t i, j, t, k = 0;
  for (i = 0; i < n; i++)
    for (j = 0; j < d[i].n; j++) {
      double mu = 0;
      if (leaf >= 0 && (int)d[i].cfgs[j].leaf != leaf) continue;
      for (t = 0; t < ntr; t++) mu += log(tr[t].mops[j]);
      e += fabs(mu / (double)ntr - log(d[i].mops[j]));
      k++;
    }
  return e / (double)k;
}

#define NTRAIN 22
#define NHOLD 6
static ds_item ds[NTRAIN + NHOLD];
static int ds_ready;
/* freed at exit (so leak checkers stay quiet) rather than by a test that could not fail */
static void ds_cleanup(void) {
  if (ds_ready) ds_free(ds, NTRAIN + NHOLD);
  ds_ready = 0;
}
static void ds_build(void) {
  size_t i;
  if (ds_ready) return;
  atexit(ds_cleanup);
  for (i = 0; i < NTRAIN; i++) ds_make(&ds[i], (double)(i % 11) / 10.0, (int)(i / 11), 100 + i);
  for (i = 0; i < NHOLD; i++) ds_make(&ds[NTRAIN + i], (double)(2 * i + 1) / 10.0 - (i == 5 ? 0.6 : 0), (int)(i % 2), 900 + i);
  ds_ready = 1;
}

TEST(train_beats_baselines_on_synthetic_data) {
  mlsys_index_model *m, *m0;
  mlsys_index_train_item items[NTRAIN + NHOLD];
  mlsys_index_train_opts o;
  mlsys_index_train_report rep;
  double e0, e1, eb, f1, fb, t0 = mlsys_now();
  ds_build();
  ds_items(ds, NTRAIN + NHOLD, items);
  REQUIRE_OK(mlsys_index_model_create(7, &m));
  REQUIRE_OK(mlsys_index_model_create(7, &m0));
  memset(&o, 0, sizeof o);
  o.epochs = 40;
  o.cnn_epochs = IXT_SAN ? 1 : 2;
  o.batch = 4;
  o.lr = 3e-3;
  o.threads = 2;
  o.holdout = (double)NHOLD / (NTRAIN + NHOLD);
  REQUIRE_OK(mlsys_index_model_train(m, items, NTRAIN + NHOLD, &o, &rep));
  e0 = model_mae(m0, ds + NTRAIN, NHOLD, -1);
  e1 = model_mae(m, ds + NTRAIN, NHOLD, -1);
  eb = baseline_mae(ds, NTRAIN, ds + NTRAIN, NHOLD, -1);
  f1 = model_mae(m, ds + NTRAIN, NHOLD, MLSYS_INDEX_FLOG);
  fb = baseline_mae(ds, NTRAIN, ds + NTRAIN, NHOLD, MLSYS_INDEX_FLOG);
  printf("    synthetic: held-out MAE(log) trained %.3f, untrained %.3f, per-config mean %.3f; FLog only %.3f vs %.3f; "
         "report %.3f / %.3f, loss %.3f, %.1f s\n", e1, e0, eb, f1, fb, rep.heldout_mae_log, rep.baseline_mae_log, rep.train_loss,
         mlsys_now() - t0);
  CHECK_EQ_INT(rep.epochs_run, o.epochs);
  CHECK_NEAR(rep.heldout_mae_log, e1, 1e-9);
  CHECK_NEAR(rep.baseline_mae_log, eb, 1e-9);
  CHECK(e1 < 0.6 * eb);
  CHECK(e1 < 0.5 * e0);
  /* FLog entries carry no insert fraction: beating the baseline there needs the trace embedding */
  CHECK(f1 < 0.7 * fb);
  mlsys_index_model_free(m);
  mlsys_index_model_free(m0);
}

TEST(knn_on_synthetic_data) {
  mlsys_index_train_item items[NTRAIN];
  mlsys_index_knn *kn;
  double e = 0, eb;
  size_t i, j, k = 0;
  ds_build();
  ds_items(ds, NTRAIN, items);
  REQUIRE_OK(mlsys_index_knn_fit(items, NTRAIN, 2, &kn));
  for (i = NTRAIN; i < NTRAIN + NHOLD; i++) {
    double *p = (double *)malloc(sizeof(double) * ds[i].n);
    REQUIRE_OK(mlsys_index_knn_predict(kn, ds[i].feat, ds[i].cfgs, ds[i].n, p));
    for (j = 0; j < ds[i].n; j++) { e += fabs(log(p[j]) - log(ds[i].mops[j])); k++; }
    free(p);
  }
  e /= (double)k;
  eb = baseline_mae(ds, NTRAIN, ds + NTRAIN, NHOLD, -1);
  printf("    synthetic: k-NN held-out MAE(log) %.3f, per-config mean %.3f\n", e, eb);
  CHECK(e < 0.15);
  CHECK(e < 0.5 * eb);
  /* an off-grid configuration falls back to the nearest measured one */
  {
    mlsys_index_config c = {MLSYS_INDEX_FLOG, 0, 0, 0, 100, 60, 3, 0, 0};
    double p;
    REQUIRE_OK(mlsys_index_knn_predict(kn, ds[0].feat, &c, 1, &p));
    CHECK(p > 0 && isfinite(p));
    c.leaf = (mlsys_index_leaf)5;
    CHECK_EQ_INT(mlsys_index_knn_predict(kn, ds[0].feat, &c, 1, &p), MLSYS_ERR_ARG);
  }
  mlsys_index_knn_free(kn);
}

/* ---------------------------------------------------------------------------------------------------------------
   thread-count invariance, file round trip, damage
   --------------------------------------------------------------------------------------------------------------- */
TEST(training_is_thread_count_invariant) {
  mlsys_index_train_item items[4];
  mlsys_index_model *a, *b;
  mlsys_index_train_opts o;
  double pa[136], pb[136];
  ds_build();
  ds_items(ds, 4, items);
  REQUIRE_OK(mlsys_index_model_create(5, &a));
  REQUIRE_OK(mlsys_index_model_create(5, &b));
  memset(&o, 0, sizeof o);
  o.epochs = 2; o.cnn_epochs = 1; o.batch = 4; o.threads = 1;
  REQUIRE_OK(mlsys_index_model_train(a, items, 4, &o, NULL));
  o.threads = 3;
  REQUIRE_OK(mlsys_index_model_train(b, items, 4, &o, NULL));
  CHECK(memcmp(a->p, b->p, sizeof(float) * a->np) == 0);
  REQUIRE_OK(mlsys_index_model_predict(a, ds[5].img, ds[5].cfgs, ds[5].n, pa));
  REQUIRE_OK(mlsys_index_model_predict(b, ds[5].img, ds[5].cfgs, ds[5].n, pb));
  CHECK(memcmp(pa, pb, sizeof pa) == 0);
  mlsys_index_model_free(a);
  mlsys_index_model_free(b);
}

static char tmp_path[256];
static const char *tmpfile_path(const char *tag) {
  snprintf(tmp_path, sizeof tmp_path, "/tmp/test_index_model_%d_%s.bin", (int)getpid(), tag);
  return tmp_path;
}

TEST(save_load_round_trip_and_damage) {
  mlsys_index_model *m, *l = NULL;
  mlsys_index_config *c;
  size_t n, len, i;
  double p0[136], p1[136];
  char *buf, *bad, path[256];
  float img[IMGN];
  static const struct { size_t at; const char *msg; } flips[] = {{0, "bad magic"}, {8, "unsupported version"},
                                                                 {12, "wrong shape"}, {16 + 2 * 16 + 1, "wrong shape"},
                                                                 {300, "CRC mismatch"}, {100000, "CRC mismatch"}};
  mlsys_rng r;
  mlsys_rng_seed(&r, 1);
  for (i = 0; i < (size_t)IMGN; i++) img[i] = (float)mlsys_rng_uniform(&r);
  REQUIRE_OK(mlsys_index_model_create(21, &m));
  REQUIRE_OK(mlsys_index_grid_default(0.5, &c, &n));
  snprintf(path, sizeof path, "%s", tmpfile_path("rt"));
  REQUIRE_OK(mlsys_index_model_save(m, path));
  REQUIRE_OK(mlsys_index_model_load(path, &l));
  CHECK(memcmp(m->p, l->p, sizeof(float) * m->np) == 0);
  REQUIRE_OK(mlsys_index_model_predict(m, img, c, n, p0));
  REQUIRE_OK(mlsys_index_model_predict(l, img, c, n, p1));
  CHECK(memcmp(p0, p1, sizeof p0) == 0);
  for (i = 0; i < n; i++) CHECK(p0[i] >= MLSYS_INDEX_BIN_LO * 0.999 && p0[i] <= MLSYS_INDEX_BIN_HI * 1.001);
  mlsys_index_model_free(l);
  REQUIRE_OK(mlsys_read_file(path, &buf, &len));
  CHECK_EQ_INT(len, 8 + 8 + 15 * 16 + 4 * m->np + 4);
  bad = (char *)malloc(len + 8);
  for (i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    memcpy(bad, buf, len);
    bad[flips[i].at] ^= 0x10;
    l = (mlsys_index_model *)1;
    CHECK(mlsys_index_model_parse(bad, len, "m.bin", &l) != MLSYS_OK);
    CHECK(l == NULL);
    CHECK_CONTAINS(mlsys_last_error(), flips[i].msg);
    CHECK_CONTAINS(mlsys_last_error(), "m.bin");
  }
  CHECK_EQ_INT(mlsys_index_model_parse(buf, len - 1, "m.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  CHECK_EQ_INT(mlsys_index_model_parse(buf, 100, "m.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  CHECK_EQ_INT(mlsys_index_model_parse(buf, 5, "m.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  memcpy(bad, buf, len);
  memset(bad + len, 0, 8);
  CHECK_EQ_INT(mlsys_index_model_parse(bad, len + 3, "m.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "trailing");
  /* a NaN weight with a valid CRC */
  {
    uint32_t nanbits = 0x7fc00000u, crc;
    size_t at = 8 + 8 + 15 * 16 + 4 * 5;
    memcpy(bad, buf, len);
    for (i = 0; i < 4; i++) bad[at + i] = (char)(nanbits >> (8 * i));
    crc = mlsys_crc32c(0, bad, len - 4);
    for (i = 0; i < 4; i++) bad[len - 4 + i] = (char)(crc >> (8 * i));
    CHECK_EQ_INT(mlsys_index_model_parse(bad, len, "m.bin", &l), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "non-finite weight 5 of tensor conv1.weight");
  }
  CHECK_EQ_INT(mlsys_index_model_load("/nonexistent/dir/m.bin", &l), MLSYS_ERR_IO);
  CHECK_EQ_INT(mlsys_index_model_save(m, "/nonexistent/dir/m.bin"), MLSYS_ERR_IO);
  remove(path);
  free(bad);
  mlsys_free(buf);
  mlsys_free(c);
  mlsys_index_model_free(m);
}

TEST(bad_arguments_named) {
  mlsys_index_model *m;
  mlsys_index_config c = {MLSYS_INDEX_GA, 0, 0, 0, 0, 0, 0, 0, 0};
  mlsys_index_train_item it;
  static float img[IMGN];
  double mops = -1, p;
  REQUIRE_OK(mlsys_index_model_create(1, &m));
  c.leaf = (mlsys_index_leaf)9;
  CHECK_EQ_INT(mlsys_index_model_predict(m, img, &c, 1, &p), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "leaf type 9");
  c.leaf = MLSYS_INDEX_GA;
  memset(&it, 0, sizeof it);
  it.img = img; it.cfgs = &c; it.mops = &mops; it.n = 1;
  CHECK_EQ_INT(mlsys_index_model_train(m, &it, 1, NULL, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not a positive number");
  mops = 2;
  it.img = NULL;
  CHECK_EQ_INT(mlsys_index_model_train(m, &it, 1, NULL, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "item 0");
  /* bucketing: off-grid values go to the nearest bucket; 0 means the default */
  {
    int b1[7], b2[7];
    mlsys_index_config x = {MLSYS_INDEX_FLOG, 0.4, 3, 3, 70, 0, 0, 0, 0}, y = {MLSYS_INDEX_FLOG, 0, 0, 0, 64, 64, 4, 0, 0};
    mlsys__index_mdl_buckets(&x, b1);
    mlsys__index_mdl_buckets(&y, b2);
    CHECK(memcmp(b1, b2, sizeof b1) == 0);
    x.leaf = y.leaf = MLSYS_INDEX_GA;
    x.msi = 1.4; y.msi = 1.5; x.msh = 100; y.msh = 128; x.expected_insert_frac = 0.86; y.expected_insert_frac = 0.9;
    mlsys__index_mdl_buckets(&x, b1);
    mlsys__index_mdl_buckets(&y, b2);
    CHECK(memcmp(b1, b2, sizeof b1) == 0);
    x.msi = 0;
    mlsys__index_mdl_buckets(&x, b1);
    CHECK(b1[1] != b2[1]);   /* ALEX's cost model is its own bucket */
  }
  mlsys_index_model_free(m);
}

TEST_MAIN()
