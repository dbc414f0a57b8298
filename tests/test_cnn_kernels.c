/* Tests for examples/cnn_kernels.h (the general conv / linear / ReLU / max-pool kernels `mlsys remat calibrate`
   times): each against a naive double-precision reference written here from the operators' definitions (PyTorch's
   Conv2d and MaxPool2d with ceil_mode = False), over many random geometries (stride, padding, dilation, groups,
   rectangular kernels), and at SmallCNN's geometry bit for bit against the existing stride-1 kernels of
   examples/remat_cnn_impls.h. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "examples/remat_cnn_impls.h"
#include "examples/cnn_kernels.h"
#include "tests/test.h"

static int rnd(mlsys_rng *r, int lo, int hi) { return lo + (int)(mlsys_rng_u64(r) % (uint64_t)(hi - lo + 1)); }
static void fill(mlsys_rng *r, float *a, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) a[i] = (float)mlsys_rng_normal(r);
}

/* y = b + sum over the window, from the definition: input row h = i*SH - PH + r*DH */
static double ref_conv(const float *x, const float *w, const float *b, const cnn_k_geom *g, int n, int k, long i,
                       long j, double *absum) {
  int Cg = g->C / g->groups, grp = k / (g->K / g->groups), c, r, s;
  double acc = b[k];
  *absum = fabs(b[k]);
  for (c = 0; c < Cg; c++)
    for (r = 0; r < g->KH; r++)
      for (s = 0; s < g->KW; s++) {
        long h = i * g->SH - g->PH + (long)r * g->DH, v = j * g->SW - g->PW + (long)s * g->DW;
        double t;
        if (h < 0 || h >= g->H || v < 0 || v >= g->W) continue;
        t = (double)w[(((size_t)k * Cg + c) * g->KH + r) * g->KW + s] *
            x[(((size_t)n * g->C + grp * Cg + c) * g->H + h) * g->W + v];
        acc += t;
        *absum += fabs(t);
      }
  return acc;
}

static void random_geom(mlsys_rng *r, cnn_k_geom *g) {
  memset(g, 0, sizeof *g);
  do {
    g->groups = rnd(r, 1, 3);
    g->N = rnd(r, 1, 3);
    g->C = g->groups * rnd(r, 1, 3);
    g->K = g->groups * rnd(r, 1, 3);
    g->H = rnd(r, 1, 12);
    g->W = rnd(r, 1, 12);
    g->KH = rnd(r, 1, 5); g->KW = rnd(r, 1, 5);
    g->SH = rnd(r, 1, 3); g->SW = rnd(r, 1, 3);
    g->DH = rnd(r, 1, 2); g->DW = rnd(r, 1, 2);
    g->PH = rnd(r, 0, g->KH / 2); g->PW = rnd(r, 0, g->KW / 2);
  } while (!cnn_k_conv_ok(g));
}

TEST(out_dim_matches_torch_formula) {
  /* hand values: 224, k7 s2 p3 → 112 (ResNet conv1); 112, k3 s2 p1 → 56 (its pool); 32 k3 s1 p1 → 32; dilation 2 */
  CHECK_EQ_INT((int)cnn_k_out_dim(224, 7, 2, 3, 1), 112);
  CHECK_EQ_INT((int)cnn_k_out_dim(112, 3, 2, 1, 1), 56);
  CHECK_EQ_INT((int)cnn_k_out_dim(32, 3, 1, 1, 1), 32);
  CHECK_EQ_INT((int)cnn_k_out_dim(10, 3, 1, 0, 2), 6);
  CHECK_EQ_INT((int)cnn_k_out_dim(13, 3, 2, 0, 1), 6);   /* AlexNet's 3x3/2 pools: 55 → 27, 13 → 6 */
  CHECK_EQ_INT((int)cnn_k_out_dim(55, 3, 2, 0, 1), 27);
  CHECK_EQ_INT((int)cnn_k_out_dim(2, 5, 1, 0, 1), 0);    /* window larger than the padded input */
}

TEST(conv_direct_and_im2col_against_reference) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 11);
  for (t = 0; t < 300; t++) {
    cnn_k_geom g;
    long OH, OW, i, j;
    size_t nx, nw, ny, ws;
    float *x, *w, *b, *y1, *y2;
    void *buf;
    int n, k, bad = 0, diff = 0;
    random_geom(&r, &g);
    OH = cnn_k_oh(&g); OW = cnn_k_ow(&g);
    nx = (size_t)g.N * g.C * g.H * g.W;
    nw = (size_t)g.K * (g.C / g.groups) * g.KH * g.KW;
    ny = (size_t)g.N * g.K * OH * OW;
    ws = cnn_k_conv_im2col_workspace(&g);
    CHECK(ws == (size_t)g.C * g.KH * g.KW * OH * OW * 4);
    x = (float *)malloc(nx * 4); w = (float *)malloc(nw * 4); b = (float *)malloc((size_t)g.K * 4);
    y1 = (float *)malloc(ny * 4); y2 = (float *)malloc(ny * 4); buf = malloc(ws);
    REQUIRE(x && w && b && y1 && y2 && buf);
    fill(&r, x, nx); fill(&r, w, nw); fill(&r, b, (size_t)g.K);
    cnn_k_conv2d_direct(y1, x, w, b, &g);
    CHECK_EQ_INT(cnn_k_conv2d_im2col(y2, x, w, b, &g, buf, ws - 1), -1);   /* a byte short: refused */
    CHECK_EQ_INT(cnn_k_conv2d_im2col(y2, x, w, b, &g, buf, ws), 0);
    for (n = 0; n < g.N; n++)
      for (k = 0; k < g.K; k++)
        for (i = 0; i < OH; i++)
          for (j = 0; j < OW; j++) {
            double a, ref = ref_conv(x, w, b, &g, n, k, i, j, &a);
            size_t o = (((size_t)n * g.K + k) * OH + i) * OW + j;
            if (fabs(y1[o] - ref) > 1e-5 * (a + 1)) bad++;
            if (memcmp(&y1[o], &y2[o], 4)) diff++;
          }
    CHECK_MSG(bad == 0, "case %d: %d outputs off the reference", t, bad);
    CHECK_MSG(diff == 0, "case %d: im2col differs from direct in %d outputs (should be bit-identical)", t, diff);
    free(x); free(w); free(b); free(y1); free(y2); free(buf);
  }
}

TEST(conv_matches_smallcnn_kernels_bitwise) {
  static const int shapes[][4] = {{3, 32, 32, 8}, {8, 16, 16, 16}, {5, 7, 9, 4}};
  mlsys_rng r;
  size_t s;
  mlsys_rng_seed(&r, 5);
  for (s = 0; s < 3; s++) {
    cnn_k_geom g = {2, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 3, 3, 1, 1, 1, 1, 1, 1, 1};
    size_t nx = (size_t)2 * g.C * g.H * g.W, ny = (size_t)2 * g.K * g.H * g.W, nw = (size_t)g.K * g.C * 9;
    float *x = (float *)malloc(nx * 4), *w = (float *)malloc(nw * 4), *b = (float *)malloc((size_t)g.K * 4);
    float *y1 = (float *)malloc(ny * 4), *y2 = (float *)malloc(ny * 4), *y3 = (float *)malloc(ny * 4);
    size_t ws = cnn_k_conv_im2col_workspace(&g);
    void *buf = malloc(ws);
    REQUIRE(x && w && b && y1 && y2 && y3 && buf);
    CHECK(ws == cnn_conv_im2col_workspace(2, g.C, g.H, g.W, g.K, 3, 3, 1));   /* the same buffer as SmallCNN's */
    fill(&r, x, nx); fill(&r, w, nw); fill(&r, b, (size_t)g.K);
    cnn_conv2d_forward(y1, x, w, b, 2, g.C, g.H, g.W, g.K, 3, 1);
    cnn_k_conv2d_direct(y2, x, w, b, &g);
    CHECK(cnn_k_conv2d_im2col(y3, x, w, b, &g, buf, ws) == 0);
    CHECK(memcmp(y1, y2, ny * 4) == 0);
    CHECK(memcmp(y1, y3, ny * 4) == 0);
    free(x); free(w); free(b); free(y1); free(y2); free(y3); free(buf);
  }
}

TEST(linear_against_reference) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 3);
  for (t = 0; t < 50; t++) {
    long N = rnd(&r, 1, 5), I = rnd(&r, 1, 40), O = rnd(&r, 1, 20), n, o, i;
    float *x = (float *)malloc((size_t)(N * I) * 4), *w = (float *)malloc((size_t)(O * I) * 4);
    float *b = (float *)malloc((size_t)O * 4), *y1 = (float *)malloc((size_t)(N * O) * 4);
    float *y2 = (float *)malloc((size_t)(N * O) * 4), *y3 = (float *)malloc((size_t)(N * O) * 4);
    void *ws = malloc(cnn_k_linear_packed_workspace(N, I));
    int bad = 0;
    REQUIRE(x && w && b && y1 && y2 && y3 && ws);
    fill(&r, x, (size_t)(N * I)); fill(&r, w, (size_t)(O * I)); fill(&r, b, (size_t)O);
    cnn_k_linear_direct(y1, x, w, b, N, I, O);
    CHECK(cnn_k_linear_packed(y2, x, w, b, N, I, O, ws, cnn_k_linear_packed_workspace(N, I) - 1) == -1);
    CHECK(cnn_k_linear_packed(y2, x, w, b, N, I, O, ws, cnn_k_linear_packed_workspace(N, I)) == 0);
    cnn_linear_forward(y3, x, w, b, (int)N, (int)I, (int)O);
    for (n = 0; n < N; n++)
      for (o = 0; o < O; o++) {
        double acc = b[o], a = fabs(b[o]);
        for (i = 0; i < I; i++) { acc += (double)w[o * I + i] * x[n * I + i]; a += fabs((double)w[o * I + i] * x[n * I + i]); }
        if (fabs(y1[n * O + o] - acc) > 1e-5 * (a + 1)) bad++;
      }
    CHECK(bad == 0);
    CHECK(memcmp(y1, y2, (size_t)(N * O) * 4) == 0 && memcmp(y1, y3, (size_t)(N * O) * 4) == 0);
    free(x); free(w); free(b); free(y1); free(y2); free(y3); free(ws);
  }
}

TEST(relu_variants) {
  float x[37], y1[37], y2[37], y3[37];
  uint8_t m[5];
  mlsys_rng r;
  size_t i;
  mlsys_rng_seed(&r, 9);
  fill(&r, x, 37);
  x[3] = NAN; x[4] = -0.0f; x[5] = INFINITY;
  cnn_k_relu(y1, x, 37);
  memcpy(y2, x, sizeof x);
  cnn_k_relu(y2, y2, 37);                      /* in place */
  cnn_k_relu_mask(y3, m, x, 37);
  CHECK_EQ_INT((int)cnn_k_relu_mask_bytes(37), 5);
  for (i = 0; i < 37; i++) {
    float want = x[i] > 0 ? x[i] : 0.0f;      /* the definition; NaN → 0 */
    CHECK(memcmp(&y1[i], &want, 4) == 0 && memcmp(&y2[i], &want, 4) == 0 && memcmp(&y3[i], &want, 4) == 0);
    CHECK((int)((m[i / 8] >> (i % 8)) & 1) == (x[i] > 0));
  }
  CHECK((m[4] >> 5) == 0);                     /* unused bits zero */
}

TEST(maxpool_against_reference) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 21);
  for (t = 0; t < 300; t++) {
    cnn_k_geom g;
    long OH, OW, p, i, j;
    size_t nx, ny;
    float *x, *y;
    int64_t *ix;
    uint8_t *p8;
    int bad = 0;
    memset(&g, 0, sizeof g);
    do {
      g.N = rnd(&r, 1, 2); g.C = rnd(&r, 1, 3); g.H = rnd(&r, 1, 11); g.W = rnd(&r, 1, 11);
      g.KH = rnd(&r, 1, 4); g.KW = rnd(&r, 1, 4); g.SH = rnd(&r, 1, 3); g.SW = rnd(&r, 1, 3);
      g.DH = rnd(&r, 1, 2); g.DW = rnd(&r, 1, 2); g.PH = rnd(&r, 0, g.KH / 2); g.PW = rnd(&r, 0, g.KW / 2);
    } while (!cnn_k_pool_ok(&g));
    OH = cnn_k_oh(&g); OW = cnn_k_ow(&g);
    nx = (size_t)g.N * g.C * g.H * g.W; ny = (size_t)g.N * g.C * OH * OW;
    x = (float *)malloc(nx * 4); y = (float *)malloc(ny * 4); ix = (int64_t *)malloc(ny * 8); p8 = (uint8_t *)malloc(ny);
    REQUIRE(x && y && ix && p8);
    for (i = 0; i < (long)nx; i++) x[i] = (float)rnd(&r, -3, 3);   /* many ties: the first maximum must win */
    cnn_k_maxpool(y, ix, p8, x, &g);
    for (p = 0; p < (long)g.N * g.C; p++)
      for (i = 0; i < OH; i++)
        for (j = 0; j < OW; j++) {
          size_t o = ((size_t)p * OH + i) * OW + j;
          double best = -INFINITY;
          long at = -1, win = -1, rr, ss;
          for (rr = 0; rr < g.KH; rr++)
            for (ss = 0; ss < g.KW; ss++) {
              long h = i * g.SH - g.PH + rr * g.DH, v = j * g.SW - g.PW + ss * g.DW;
              if (h < 0 || h >= g.H || v < 0 || v >= g.W) continue;
              if (at < 0 || x[(size_t)p * g.H * g.W + h * g.W + v] > best) {
                best = x[(size_t)p * g.H * g.W + h * g.W + v]; at = h * g.W + v; win = rr * g.KW + ss;
              }
            }
          if (y[o] != best || ix[o] != at || p8[o] != win) bad++;
        }
    CHECK_MSG(bad == 0, "case %d: %d outputs wrong", t, bad);
    free(x); free(y); free(ix); free(p8);
  }
}

/* 2x2/2 (SmallCNN's pools): values and indices equal the existing kernels', NaN and ties included */
TEST(maxpool_matches_smallcnn_kernels) {
  cnn_k_geom g = {2, 3, 7, 10, 3, 2, 2, 2, 2, 0, 0, 1, 1, 1};
  float x[2 * 3 * 7 * 10], y1[2 * 3 * 3 * 5], y2[2 * 3 * 3 * 5];
  int64_t i1[90], i2[90];
  uint8_t p1[90], p2[90];
  mlsys_rng r;
  size_t i;
  mlsys_rng_seed(&r, 2);
  for (i = 0; i < sizeof x / 4; i++) x[i] = (float)(int)(mlsys_rng_u64(&r) % 3);
  x[0] = NAN; x[11] = NAN; x[22] = -INFINITY; x[23] = -INFINITY; x[32] = -INFINITY; x[33] = -INFINITY;
  cnn_maxpool2x2_forward(y1, i1, x, 2, 3, 7, 10);
  cnn_maxpool2x2_forward_u8(y1, p1, x, 2, 3, 7, 10);
  cnn_k_maxpool(y2, i2, p2, x, &g);
  CHECK(memcmp(y1, y2, sizeof y1) == 0);
  CHECK(memcmp(i1, i2, sizeof i1) == 0);
  CHECK(memcmp(p1, p2, sizeof p1) == 0);
}

TEST_MAIN()
