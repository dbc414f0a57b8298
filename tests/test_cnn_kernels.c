/* Tests for examples/cnn_kernels.h (the general conv / linear / ReLU / max-pool kernels `mlsys remat calibrate`
   times): each against a naive double-precision reference written here from the operators' definitions (PyTorch's
   Conv2d and MaxPool2d with ceil_mode = False), over many random geometries (stride, padding, dilation, groups,
   rectangular kernels), and at SmallCNN's geometry bit for bit against the existing stride-1 kernels of
   examples/remat_cnn_impls.h. The backward kernels (conv data and filter, linear) against double-precision
   references of their formulas over random geometries, and against central finite differences of the forward
   kernels (the gradient of L = sum(dy · y), which is exact for these linear maps up to float rounding). */
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
    CHECK(ws == (size_t)(g.C / g.groups) * g.KH * g.KW * OH * OW * 4);   /* one group of one sample */
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

/* Double-precision references of the conv backward from the forward's definition: each forward term
   w[k,c,r,s]·x[n,c0+c,h,v] contributes dy·w to dx[n,c0+c,h,v] and dy·x to dw[k,c,r,s]; absolute sums for the
   tolerance. */
static void ref_conv_backward(const float *x, const float *w, const float *dy, const cnn_k_geom *g, double *dx,
                              double *dxa, double *dw, double *dwa, double *db, double *dba) {
  long OH = cnn_k_oh(g), OW = cnn_k_ow(g), i, j;
  int Cg = g->C / g->groups, Kg = g->K / g->groups, n, k, c, r, s;
  size_t nx = (size_t)g->N * g->C * g->H * g->W, nw = (size_t)g->K * Cg * g->KH * g->KW, t;
  for (t = 0; t < nx; t++) dx[t] = dxa[t] = 0;
  for (t = 0; t < nw; t++) dw[t] = dwa[t] = 0;
  for (k = 0; k < g->K; k++) db[k] = dba[k] = 0;
  for (n = 0; n < g->N; n++)
    for (k = 0; k < g->K; k++)
      for (i = 0; i < OH; i++)
        for (j = 0; j < OW; j++) {
          double d = dy[(((size_t)n * g->K + k) * OH + i) * OW + j];
          db[k] += d; dba[k] += fabs(d);
          for (c = 0; c < Cg; c++)
            for (r = 0; r < g->KH; r++)
              for (s = 0; s < g->KW; s++) {
                long h = i * g->SH - g->PH + (long)r * g->DH, v = j * g->SW - g->PW + (long)s * g->DW;
                size_t xi, wi;
                if (h < 0 || h >= g->H || v < 0 || v >= g->W) continue;
                xi = (((size_t)n * g->C + (k / Kg) * Cg + c) * g->H + h) * g->W + v;
                wi = (((size_t)k * Cg + c) * g->KH + r) * g->KW + s;
                dx[xi] += d * w[wi]; dxa[xi] += fabs(d * w[wi]);
                dw[wi] += d * x[xi]; dwa[wi] += fabs(d * x[xi]);
              }
        }
}

static int count_off(const float *a, const double *ref, const double *abs_sum, size_t n) {
  size_t i;
  int bad = 0;
  for (i = 0; i < n; i++)
    if (!(fabs(a[i] - ref[i]) <= 1e-5 * (abs_sum[i] + 1))) bad++;
  return bad;
}

TEST(conv_backward_against_reference) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 17);
  for (t = 0; t < 200; t++) {
    cnn_k_geom g;
    size_t nx, nw, ny, ws;
    float *x, *w, *dy, *dx1, *dw1, *db1, *dx2, *dw2, *db2;
    double *rx, *rxa, *rw, *rwa, *rb, *rba;
    void *buf;
    random_geom(&r, &g);
    nx = (size_t)g.N * g.C * g.H * g.W;
    nw = (size_t)g.K * (g.C / g.groups) * g.KH * g.KW;
    ny = (size_t)g.N * g.K * cnn_k_oh(&g) * cnn_k_ow(&g);
    ws = cnn_k_conv_im2col_workspace(&g);
    x = (float *)malloc(nx * 4); w = (float *)malloc(nw * 4); dy = (float *)malloc(ny * 4);
    dx1 = (float *)malloc(nx * 4); dw1 = (float *)malloc(nw * 4); db1 = (float *)malloc((size_t)g.K * 4);
    dx2 = (float *)malloc(nx * 4); dw2 = (float *)malloc(nw * 4); db2 = (float *)malloc((size_t)g.K * 4);
    rx = (double *)malloc(nx * 8); rxa = (double *)malloc(nx * 8); rw = (double *)malloc(nw * 8);
    rwa = (double *)malloc(nw * 8); rb = (double *)malloc((size_t)g.K * 8); rba = (double *)malloc((size_t)g.K * 8);
    buf = malloc(ws);
    REQUIRE(x && w && dy && dx1 && dw1 && db1 && dx2 && dw2 && db2 && rx && rxa && rw && rwa && rb && rba && buf);
    fill(&r, x, nx); fill(&r, w, nw); fill(&r, dy, ny);
    /* stale garbage in the outputs: every kernel must overwrite, not accumulate */
    fill(&r, dx1, nx); fill(&r, dw1, nw); fill(&r, db1, (size_t)g.K);
    fill(&r, dx2, nx); fill(&r, dw2, nw); fill(&r, db2, (size_t)g.K);
    ref_conv_backward(x, w, dy, &g, rx, rxa, rw, rwa, rb, rba);
    cnn_k_conv2d_backward_direct(dx1, dw1, db1, x, w, dy, &g);
    CHECK_EQ_INT(cnn_k_conv2d_backward_im2col(dx2, dw2, db2, x, w, dy, &g, buf, ws - 1), -1);   /* a byte short */
    CHECK_EQ_INT(cnn_k_conv2d_backward_im2col(dx2, dw2, db2, x, w, dy, &g, buf, ws), 0);
    CHECK_MSG(count_off(dx1, rx, rxa, nx) == 0, "case %d: direct dx off in %d", t, count_off(dx1, rx, rxa, nx));
    CHECK_MSG(count_off(dw1, rw, rwa, nw) == 0, "case %d: direct dw off in %d", t, count_off(dw1, rw, rwa, nw));
    CHECK_MSG(count_off(db1, rb, rba, (size_t)g.K) == 0, "case %d: direct db", t);
    CHECK_MSG(count_off(dx2, rx, rxa, nx) == 0, "case %d: im2col dx off in %d", t, count_off(dx2, rx, rxa, nx));
    CHECK_MSG(count_off(dw2, rw, rwa, nw) == 0, "case %d: im2col dw off in %d", t, count_off(dw2, rw, rwa, nw));
    CHECK_MSG(count_off(db2, rb, rba, (size_t)g.K) == 0, "case %d: im2col db", t);
    /* the halves alone, NULL outputs skipped */
    fill(&r, dx2, nx);
    CHECK_EQ_INT(cnn_k_conv2d_backward_im2col(dx2, NULL, NULL, x, w, dy, &g, buf, ws), 0);
    CHECK(count_off(dx2, rx, rxa, nx) == 0);
    fill(&r, dw2, nw);
    CHECK_EQ_INT(cnn_k_conv2d_backward_filter_im2col(dw2, NULL, x, dy, &g, buf, ws), 0);
    CHECK(count_off(dw2, rw, rwa, nw) == 0);
    free(x); free(w); free(dy); free(dx1); free(dw1); free(db1); free(dx2); free(dw2); free(db2);
    free(rx); free(rxa); free(rw); free(rwa); free(rb); free(rba); free(buf);
  }
}

/* L(x, w, b) = sum dy · conv(x, w, b) in double over the float forward kernel; central differences of L at a few
   coordinates against the backward kernels' gradient. The map is linear in each argument, so the difference
   quotient is exact up to the forward's float rounding. */
static double conv_loss(const float *x, const float *w, const float *b, const float *dy, const cnn_k_geom *g,
                        float *y) {
  size_t ny = (size_t)g->N * g->K * cnn_k_oh(g) * cnn_k_ow(g), i;
  double L = 0;
  cnn_k_conv2d_direct(y, x, w, b, g);
  for (i = 0; i < ny; i++) L += (double)dy[i] * y[i];
  return L;
}

TEST(conv_backward_finite_differences) {
  mlsys_rng r;
  int t, bad = 0, checked = 0;
  mlsys_rng_seed(&r, 23);
  for (t = 0; t < 40; t++) {
    cnn_k_geom g;
    size_t nx, nw, ny, ws;
    float *x, *w, *b, *dy, *y, *gx, *gw, *gb;
    void *buf;
    int q, which;
    random_geom(&r, &g);
    nx = (size_t)g.N * g.C * g.H * g.W;
    nw = (size_t)g.K * (g.C / g.groups) * g.KH * g.KW;
    ny = (size_t)g.N * g.K * cnn_k_oh(&g) * cnn_k_ow(&g);
    ws = cnn_k_conv_im2col_workspace(&g);
    x = (float *)malloc(nx * 4); w = (float *)malloc(nw * 4); b = (float *)malloc((size_t)g.K * 4);
    dy = (float *)malloc(ny * 4); y = (float *)malloc(ny * 4); gx = (float *)malloc(nx * 4);
    gw = (float *)malloc(nw * 4); gb = (float *)malloc((size_t)g.K * 4); buf = malloc(ws);
    REQUIRE(x && w && b && dy && y && gx && gw && gb && buf);
    fill(&r, x, nx); fill(&r, w, nw); fill(&r, b, (size_t)g.K); fill(&r, dy, ny);
    REQUIRE(cnn_k_conv2d_backward_im2col(gx, gw, gb, x, w, dy, &g, buf, ws) == 0);
    for (which = 0; which < 3; which++)
      for (q = 0; q < 4; q++) {
        float *p = which == 0 ? x : which == 1 ? w : b, *gp = which == 0 ? gx : which == 1 ? gw : gb;
        size_t cnt = which == 0 ? nx : which == 1 ? nw : (size_t)g.K, at = (size_t)(mlsys_rng_u64(&r) % cnt);
        const float h = 0.25f, keep = p[at];   /* a power of two: x ± h is exact for |x| < 2^21 */
        double lp, lm, fd;
        p[at] = keep + h; lp = conv_loss(x, w, b, dy, &g, y);
        p[at] = keep - h; lm = conv_loss(x, w, b, dy, &g, y);
        p[at] = keep;
        fd = (lp - lm) / (2.0 * h);
        checked++;
        if (!(fabs(fd - gp[at]) <= 1e-3 * (1 + fabs(fd)) + 1e-5 * (double)ny)) {
          bad++;
          if (bad < 5) printf("    case %d arg %d[%zu]: fd %.7g, backward %.7g\n", t, which, at, fd, gp[at]);
        }
      }
    free(x); free(w); free(b); free(dy); free(y); free(gx); free(gw); free(gb); free(buf);
  }
  CHECK_MSG(bad == 0, "%d of %d finite differences disagree", bad, checked);
}

TEST(linear_backward_against_reference) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 31);
  for (t = 0; t < 60; t++) {
    long N = rnd(&r, 1, 6), I = rnd(&r, 1, 40), O = rnd(&r, 1, 20), n, o, i, k;
    size_t nx = (size_t)(N * I), nw = (size_t)(O * I), ny = (size_t)(N * O), wsb = cnn_k_linear_backward_packed_workspace(I, O);
    float *x = (float *)malloc(nx * 4), *w = (float *)malloc(nw * 4), *dy = (float *)malloc(ny * 4);
    float *g1[3], *g2[3];
    double *ref[3], *ra[3];
    size_t cnt[3];
    void *ws = malloc(wsb);
    int a;
    cnt[0] = nx; cnt[1] = nw; cnt[2] = (size_t)O;
    REQUIRE(x && w && dy && ws);
    for (a = 0; a < 3; a++) {
      g1[a] = (float *)malloc(cnt[a] * 4); g2[a] = (float *)malloc(cnt[a] * 4);
      ref[a] = (double *)calloc(cnt[a], 8); ra[a] = (double *)calloc(cnt[a], 8);
      REQUIRE(g1[a] && g2[a] && ref[a] && ra[a]);
      fill(&r, g1[a], cnt[a]); fill(&r, g2[a], cnt[a]);   /* garbage: must be overwritten */
    }
    CHECK_EQ_INT((int)wsb, (int)(I * O * 4));
    fill(&r, x, nx); fill(&r, w, nw); fill(&r, dy, ny);
    for (n = 0; n < N; n++)
      for (o = 0; o < O; o++) {
        double d = dy[n * O + o];
        ref[2][o] += d; ra[2][o] += fabs(d);
        for (i = 0; i < I; i++) {
          ref[0][n * I + i] += d * w[o * I + i]; ra[0][n * I + i] += fabs(d * w[o * I + i]);
          ref[1][o * I + i] += d * x[n * I + i]; ra[1][o * I + i] += fabs(d * x[n * I + i]);
        }
      }
    cnn_k_linear_backward_direct(g1[0], g1[1], g1[2], x, w, dy, N, I, O);
    CHECK(cnn_k_linear_backward_packed(g2[0], g2[1], g2[2], x, w, dy, N, I, O, ws, wsb - 1) == -1);
    CHECK(cnn_k_linear_backward_packed(g2[0], g2[1], g2[2], x, w, dy, N, I, O, ws, wsb) == 0);
    for (a = 0; a < 3; a++) {
      CHECK_MSG(count_off(g1[a], ref[a], ra[a], cnt[a]) == 0, "case %d: direct output %d", t, a);
      CHECK_MSG(count_off(g2[a], ref[a], ra[a], cnt[a]) == 0, "case %d: packed output %d", t, a);
    }
    /* central differences of sum dy · linear(x) at one x and one w coordinate */
    for (a = 0; a < 2; a++) {
      float *p = a == 0 ? x : w, *y = (float *)malloc(ny * 4), *b0 = (float *)calloc((size_t)O, 4);
      size_t at = (size_t)(mlsys_rng_u64(&r) % cnt[a]);
      const float h = 0.25f, keep = p[at];
      double L[2];
      REQUIRE(y && b0);
      for (k = 0; k < 2; k++) {
        size_t q;
        p[at] = keep + (k ? -h : h);
        cnn_k_linear_direct(y, x, w, b0, N, I, O);
        L[k] = 0;
        for (q = 0; q < ny; q++) L[k] += (double)dy[q] * y[q];
      }
      p[at] = keep;
      CHECK_MSG(fabs((L[0] - L[1]) / (2 * h) - g2[a][at]) <= 1e-3 * (1 + fabs(g2[a][at])) + 1e-5 * (double)ny,
                "case %d: finite difference %g vs %g", t, (L[0] - L[1]) / (2 * h), g2[a][at]);
      free(y); free(b0);
    }
    for (a = 0; a < 3; a++) { free(g1[a]); free(g2[a]); free(ref[a]); free(ra[a]); }
    free(x); free(w); free(dy); free(ws);
  }
}

TEST_MAIN()
