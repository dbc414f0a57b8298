/* tests/test_remat_cnn_impls.c — examples/remat_cnn_impls.h: each alternative implementation against the layer of
   examples/remat_cnn_layers.h it replaces, on random tensors over many small shapes (odd sizes, 1x1, N 1..4, C/K
   1..8, H/W 1..9) and with special values (+-0, NaN, +-inf, denormals).

   Bit for bit (memcmp; NaN payloads aside where NaNs meet, see same_bits_nan) wherever the header claims it: the
   im2col forward (finite weights, biases not -0), the im2col weight gradient (finite dy), the transposed-im2col
   input gradient (finite weights), the in-place ReLU and the backward from its output, the 1-bit mask ReLU, the 8-bit
   max-pool. The im2col input gradient groups its sum differently (over k inside, over the taps outside), so it is
   checked within 1e-5 of the sum of |terms| (and bit for bit when K = 1 or R = 1, where the groupings coincide),
   with NaN and infinities exactly where the reference has them. The cases the header says differ are checked to
   differ as it says. The workspace size is checked against the bytes the im2col passes touch (two canaries: every
   byte of it written, none beyond), and a buffer one float smaller is refused. The calibration is smoke-tested:
   its rows, workspace and intermediate bytes exactly, its times only for being positive and finite. */
/* The header's bit-identity claims assume products rounded on their own (no fused multiply-add), which is what the
   project's flags give: ISO C mode (gcc then never contracts) on baseline x86-64 (no FMA unit for clang to
   contract into). Built with an FMA target and contraction (clang -march=native, gcc -std=gnu11 -march=native),
   the direct loops and the GEMMs may fuse different sums, so this file turns contraction off for everything it
   compiles, the reference layers included: the tests then check the claims as stated, under any flags. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"
#include "examples/remat_cnn_impls.h"

#include <float.h>

static float bits_f(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

/* p in [0,1]: the chance that an element is a special value instead of N(0,1) */
static float rand_val(mlsys_rng *rng, double p) {
  if (mlsys_rng_uniform(rng) < p) {
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFFC00000u, 0x7FC12345u,
                                       0x7F800000u, 0xFF800000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                                       0x807FFFFFu, 0x00800000u, 0x3F800000u, 0xBF800000u};
    return bits_f(special[mlsys_rng_below(rng, sizeof special / sizeof special[0])]);
  }
  return (float)mlsys_rng_normal(rng);
}
static float *rand_tensor(mlsys_rng *rng, size_t n, double p) {
  float *t = (float *)mlsys_alloc(n ? n : 1, sizeof(float));
  size_t i;
  for (i = 0; i < n; i++) t[i] = rand_val(rng, p);
  return t;
}
/* finite, and never -0.0 */
static float *rand_finite(mlsys_rng *rng, size_t n) {
  float *t = (float *)mlsys_alloc(n ? n : 1, sizeof(float));
  size_t i;
  for (i = 0; i < n; i++) t[i] = (float)mlsys_rng_normal(rng) + 0.0f;
  return t;
}
static float *fabs_copy(const float *a, size_t n) {
  float *t = (float *)mlsys_alloc(n ? n : 1, sizeof(float));
  size_t i;
  for (i = 0; i < n; i++) t[i] = fabsf(a[i]);
  return t;
}
static int same_bits(const float *a, const float *b, size_t n) { return n == 0 || !memcmp(a, b, n * sizeof(float)); }
/* Bit for bit, except that any NaN equals any NaN: when two NaNs meet in a + b, x86 returns the first operand's
   payload, and which operand is first is the compiler's choice (the scalar loop and the vectorised one differ),
   so the payload of a NaN result is not a property of the summation order. Every other bit, the sign of zero
   included, must match. */
static int same_bits_nan(const float *a, const float *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) && !(isnan(a[i]) && isnan(b[i]))) return 0;
  return 1;
}

typedef struct { int N, C, H, W, K, R, pad; } shape;

/* the i-th random conv shape: N 1..4, C/K 1..8, H/W 1..9, R 3 (pad 1, the SmallCNN case) mostly, else R 1 or 3
   with pad 0 or 1, skipping those whose output would be empty */
static shape conv_shape(mlsys_rng *rng, int i) {
  shape s;
  do {
    s.N = mlsys_rng_range(rng, 1, 4);
    s.C = mlsys_rng_range(rng, 1, 8);
    s.K = mlsys_rng_range(rng, 1, 8);
    s.H = mlsys_rng_range(rng, 1, 9);
    s.W = mlsys_rng_range(rng, 1, 9);
    s.R = i % 4 == 3 ? 2 * mlsys_rng_range(rng, 0, 1) + 1 : 3;
    s.pad = i % 4 == 3 ? mlsys_rng_range(rng, 0, 1) : 1;
  } while (s.H + 2 * s.pad - s.R + 1 <= 0 || s.W + 2 * s.pad - s.R + 1 <= 0);
  if (i == 0) { s.N = 1; s.C = 1; s.K = 1; s.H = 1; s.W = 1; }        /* 1x1 with a 3x3 kernel: all but one tap pad */
  if (i == 1) { s.N = 4; s.C = 8; s.K = 8; s.H = 9; s.W = 9; }
  return s;
}
static size_t out_count(shape s) { return (size_t)s.N * s.K * (s.H + 2 * s.pad - s.R + 1) * (s.W + 2 * s.pad - s.R + 1); }
static size_t in_count(shape s) { return (size_t)s.N * s.C * s.H * s.W; }
static size_t w_count(shape s) { return (size_t)s.K * s.C * s.R * s.R; }
static size_t ws_of(shape s) { return cnn_conv_im2col_workspace(s.N, s.C, s.H, s.W, s.K, s.R, s.R, s.pad); }

TEST(conv_workspace_formula) {
  /* SmallCNN: conv1 3x32x32 -> 8, conv2 8x16x16 -> 16, 3x3 pad 1: C*9*H*W floats, whatever N and K */
  CHECK_EQ_INT(cnn_conv_im2col_workspace(8, 3, 32, 32, 8, 3, 3, 1), 3 * 9 * 32 * 32 * 4);
  CHECK_EQ_INT(cnn_conv_im2col_workspace(64, 3, 32, 32, 8, 3, 3, 1), 110592);
  CHECK_EQ_INT(cnn_conv_im2col_workspace(1, 8, 16, 16, 16, 3, 3, 1), 73728);
  CHECK_EQ_INT(cnn_conv_im2col_workspace(1, 2, 5, 7, 1, 3, 3, 0), 2 * 9 * 3 * 5 * 4);
  CHECK_EQ_INT(cnn_conv_im2col_workspace(1, 2, 5, 7, 1, 1, 3, 0), 2 * 3 * 5 * 5 * 4);   /* R x S = 1 x 3 */
  CHECK_EQ_INT(cnn_conv_im2col_workspace(1, 2, 1, 1, 1, 3, 3, 0), 0);                   /* empty output */
  /* the transposed one: K*R*S*H*W floats */
  CHECK_EQ_INT(cnn_conv_im2col_t_workspace(8, 3, 32, 32, 8, 3, 3, 1), 8 * 9 * 32 * 32 * 4);
  CHECK_EQ_INT(cnn_conv_im2col_t_workspace(64, 8, 16, 16, 16, 3, 3, 1), 147456);
  CHECK_EQ_INT(cnn_conv_im2col_t_workspace(1, 2, 5, 7, 3, 1, 3, 0), 3 * 3 * 5 * 7 * 4);
  CHECK_EQ_INT(cnn_conv_im2col_t_workspace(1, 2, 1, 1, 1, 3, 3, 0), 0);
}

TEST(conv_forward_im2col_bit_identical) {
  mlsys_rng rng;
  int t;
  mlsys_rng_seed(&rng, 11);
  for (t = 0; t < 300; t++) {
    shape s = conv_shape(&rng, t);
    /* x: anything (a third of the tests with 20% special values); w and b finite, b never -0 */
    float *x = rand_tensor(&rng, in_count(s), t % 3 == 2 ? 0.2 : 0.0), *w = rand_finite(&rng, w_count(s));
    float *b = rand_finite(&rng, (size_t)s.K);
    float *y0 = (float *)mlsys_alloc(out_count(s), sizeof(float)), *y1 = (float *)mlsys_alloc(out_count(s), sizeof(float));
    void *ws = mlsys_alloc(ws_of(s) + 1, 1);
    size_t i;
    if (t % 3 == 1)                                             /* zero weights: 0 * inf, 0 * NaN at real taps */
      for (i = 0; i < w_count(s); i += 3) w[i] = i % 2 ? -0.0f : 0.0f;
    cnn_conv2d_forward(y0, x, w, b, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    CHECK_EQ_INT(cnn_conv2d_forward_im2col(y1, x, w, b, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, ws_of(s)), 0);
    CHECK_MSG((t % 3 == 2 ? same_bits_nan : same_bits)(y0, y1, out_count(s)), "shape %d: N%d C%d H%d W%d K%d R%d pad%d", t, s.N, s.C, s.H, s.W, s.K,
              s.R, s.pad);
    mlsys_free(x); mlsys_free(w); mlsys_free(b); mlsys_free(y0); mlsys_free(y1); mlsys_free(ws);
  }
}

/* The two exceptions the header names: an infinite weight on a padded tap, a -0 bias with only zero terms. */
TEST(conv_forward_im2col_documented_differences) {
  float x = -0.0f, w[9], b = -0.0f, y0, y1, ws[9];
  int i;
  for (i = 0; i < 9; i++) w[i] = 1.0f;
  /* 1x1 input, 3x3 kernel, pad 1: only the centre tap is real. -0 + 1 * -0 = -0 directly; im2col adds 1 * (+0)
     for the first padded tap first: +0. Equal as numbers, different bits. */
  cnn_conv2d_forward(&y0, &x, w, &b, 1, 1, 1, 1, 1, 3, 1);
  CHECK_EQ_INT(cnn_conv2d_forward_im2col(&y1, &x, w, &b, 1, 1, 1, 1, 1, 3, 1, ws, sizeof ws), 0);
  CHECK(y0 == 0.0f && signbit(y0) && y1 == 0.0f && !signbit(y1));
  /* an infinite weight on a padded tap: skipped directly, inf * 0 = NaN by im2col */
  x = 2.0f; b = 0.5f; w[0] = INFINITY;
  cnn_conv2d_forward(&y0, &x, w, &b, 1, 1, 1, 1, 1, 3, 1);
  CHECK_EQ_INT(cnn_conv2d_forward_im2col(&y1, &x, w, &b, 1, 1, 1, 1, 1, 3, 1, ws, sizeof ws), 0);
  CHECK(y0 == 2.5f && isnan(y1));
}

TEST(conv_backward_params_im2col_bit_identical) {
  mlsys_rng rng;
  int t;
  mlsys_rng_seed(&rng, 12);
  for (t = 0; t < 300; t++) {
    shape s = conv_shape(&rng, t);
    float *x = rand_tensor(&rng, in_count(s), t % 3 == 2 ? 0.2 : 0.0), *dy = rand_finite(&rng, out_count(s));
    float *dw0 = (float *)mlsys_alloc(w_count(s), sizeof(float)), *dw1 = (float *)mlsys_alloc(w_count(s), sizeof(float));
    float *db0 = (float *)mlsys_alloc((size_t)s.K, sizeof(float)), *db1 = (float *)mlsys_alloc((size_t)s.K, sizeof(float));
    void *ws = mlsys_alloc(ws_of(s) + 1, 1);
    size_t i;
    if (t % 3 == 1)
      for (i = 0; i < out_count(s); i += 4) dy[i] = i % 8 ? -0.0f : 0.0f;
    memset(dw1, 0xA5, w_count(s) * sizeof(float));            /* must be overwritten, not accumulated into */
    cnn_conv2d_backward_params(dw0, db0, dy, x, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    CHECK_EQ_INT(cnn_conv2d_backward_params_im2col(dw1, db1, dy, x, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, ws_of(s)), 0);
    CHECK_MSG((t % 3 == 2 ? same_bits_nan : same_bits)(dw0, dw1, w_count(s)) && same_bits(db0, db1, (size_t)s.K), "shape %d: N%d C%d H%d W%d K%d R%d "
              "pad%d", t, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    mlsys_free(x); mlsys_free(dy); mlsys_free(dw0); mlsys_free(dw1); mlsys_free(db0); mlsys_free(db1); mlsys_free(ws);
  }
}

/* The header's exception: an infinite dy meets a padding zero (inf * 0 = NaN) where the direct loop skips it. */
TEST(conv_backward_params_im2col_documented_difference) {
  float x = 3.0f, dy = INFINITY, dw0[9], dw1[9], db0, db1, ws[9];
  cnn_conv2d_backward_params(dw0, &db0, &dy, &x, 1, 1, 1, 1, 1, 3, 1);
  CHECK_EQ_INT(cnn_conv2d_backward_params_im2col(dw1, &db1, &dy, &x, 1, 1, 1, 1, 1, 3, 1, ws, sizeof ws), 0);
  CHECK(dw0[0] == 0.0f && isnan(dw1[0]));                     /* tap (0,0) is padding for the single pixel */
  CHECK(dw0[4] == INFINITY && dw1[4] == INFINITY && db0 == INFINITY && db1 == INFINITY);
}

TEST(conv_backward_input_im2col_close) {
  mlsys_rng rng;
  int t, exact_shapes = 0;
  mlsys_rng_seed(&rng, 13);
  for (t = 0; t < 300; t++) {
    shape s = conv_shape(&rng, t);
    const int special = t % 3 == 2;
    float *dy = rand_tensor(&rng, out_count(s), special ? 0.1 : 0.0), *w = rand_tensor(&rng, w_count(s), special ? 0.05 : 0.0);
    float *ady = fabs_copy(dy, out_count(s)), *aw = fabs_copy(w, w_count(s));
    float *dx0 = (float *)mlsys_alloc(in_count(s), sizeof(float)), *dx1 = (float *)mlsys_alloc(in_count(s), sizeof(float));
    float *mag = (float *)mlsys_alloc(in_count(s), sizeof(float));
    void *ws = mlsys_alloc(ws_of(s) + 1, 1);
    size_t i, bad = 0;
    cnn_conv2d_backward_input(dx0, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    cnn_conv2d_backward_input(mag, ady, aw, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);   /* sum of |terms| */
    memset(dx1, 0xA5, in_count(s) * sizeof(float));
    CHECK_EQ_INT(cnn_conv2d_backward_input_im2col(dx1, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, ws_of(s)), 0);
    for (i = 0; i < in_count(s); i++) {
      const float a = dx0[i], b = dx1[i];
      if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) bad += !(isnan(a) && isnan(b)) && a != b;
      else bad += !(fabs((double)a - b) <= 1e-5 * mag[i]);  /* rounding of a regrouped sum: ulps of sum |terms| */
    }
    CHECK_MSG(bad == 0, "shape %d: %zu elements off", t, bad);
    /* the same grouping: the same bits */
    if (s.K == 1 || s.R == 1) {
      exact_shapes++;
      CHECK_MSG((special ? same_bits_nan : same_bits)(dx0, dx1, in_count(s)), "shape %d (K%d R%d) not bit-identical", t, s.K, s.R);
    }
    mlsys_free(dy); mlsys_free(w); mlsys_free(ady); mlsys_free(aw); mlsys_free(dx0); mlsys_free(dx1); mlsys_free(mag);
    mlsys_free(ws);
  }
  CHECK(exact_shapes > 20);
}

static size_t wst_of(shape s) { return cnn_conv_im2col_t_workspace(s.N, s.C, s.H, s.W, s.K, s.R, s.R, s.pad); }

TEST(conv_backward_input_im2col_t_bit_identical) {
  mlsys_rng rng;
  int t;
  mlsys_rng_seed(&rng, 15);
  for (t = 0; t < 300; t++) {
    shape s = conv_shape(&rng, t);
    const int special = t % 3 == 2;
    /* dy anything, w finite (with zeros of both signs in a third of the shapes) */
    float *dy = rand_tensor(&rng, out_count(s), special ? 0.2 : 0.0), *w = rand_finite(&rng, w_count(s));
    float *dx0 = (float *)mlsys_alloc(in_count(s), sizeof(float)), *dx1 = (float *)mlsys_alloc(in_count(s), sizeof(float));
    void *ws = mlsys_alloc(wst_of(s) + 1, 1);
    size_t i;
    if (t % 3 == 1)
      for (i = 0; i < w_count(s); i += 3) w[i] = i % 2 ? -0.0f : 0.0f;
    memset(dx1, 0xA5, in_count(s) * sizeof(float));
    cnn_conv2d_backward_input(dx0, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    CHECK_EQ_INT(cnn_conv2d_backward_input_im2col_t(dx1, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wst_of(s)), 0);
    CHECK_MSG((special ? same_bits_nan : same_bits)(dx0, dx1, in_count(s)), "shape %d: N%d C%d H%d W%d K%d R%d pad%d",
              t, s.N, s.C, s.H, s.W, s.K, s.R, s.pad);
    mlsys_free(dy); mlsys_free(w); mlsys_free(dx0); mlsys_free(dx1); mlsys_free(ws);
  }
}

/* The header's exception: an infinite weight on a tap that only meets padding (inf * 0 = NaN). */
TEST(conv_backward_input_im2col_t_documented_difference) {
  float dy = 2.0f, w[9], dx0, dx1, ws[9];
  int i;
  for (i = 0; i < 9; i++) w[i] = 1.0f;
  w[0] = INFINITY;                                             /* 1x1 input, pad 1: only the centre tap is real */
  cnn_conv2d_backward_input(&dx0, &dy, w, 1, 1, 1, 1, 1, 3, 1);
  CHECK_EQ_INT(cnn_conv2d_backward_input_im2col_t(&dx1, &dy, w, 1, 1, 1, 1, 1, 3, 1, ws, sizeof ws), 0);
  CHECK(dx0 == 2.0f && isnan(dx1));
}

/* Every float of the reported workspace is written (so no smaller buffer would do) and nothing beyond it; one float
   less is refused without touching the output. Each pass, shapes of all kinds. */
TEST(conv_im2col_workspace_is_exact) {
  mlsys_rng rng;
  int t, pass;
  const size_t extra = 64;
  mlsys_rng_seed(&rng, 14);
  for (t = 0; t < 60; t++) {
    shape s = conv_shape(&rng, t);
    const size_t wsmax = ws_of(s) > wst_of(s) ? ws_of(s) : wst_of(s);
    float *x = rand_finite(&rng, in_count(s)), *w = rand_finite(&rng, w_count(s)), *b = rand_finite(&rng, (size_t)s.K);
    float *dy = rand_finite(&rng, out_count(s));
    float *o = (float *)mlsys_alloc(in_count(s) + out_count(s) + w_count(s), sizeof(float));
    float *db = (float *)mlsys_alloc((size_t)s.K, sizeof(float));
    unsigned char *ws = (unsigned char *)mlsys_alloc(wsmax + extra, 1), *after[2];
    REQUIRE(ws_of(s) % sizeof(float) == 0 && ws_of(s) > 0 && wst_of(s) % sizeof(float) == 0 && wst_of(s) > 0);
    for (pass = 0; pass < 4; pass++) {
      const size_t wsb = pass == 3 ? wst_of(s) : ws_of(s);
      int c, rc;
      size_t i, unwritten = 0, beyond = 0;
      for (c = 0; c < 2; c++) {                                 /* two canaries: a float equal to one isn't to both */
        memset(ws, c ? 0x5A : 0xA5, wsb + extra);
        rc = pass == 0   ? cnn_conv2d_forward_im2col(o, x, w, b, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb)
             : pass == 1 ? cnn_conv2d_backward_params_im2col(o, db, dy, x, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb)
             : pass == 2 ? cnn_conv2d_backward_input_im2col(o, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb)
                         : cnn_conv2d_backward_input_im2col_t(o, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb);
        CHECK_EQ_INT(rc, 0);
        after[c] = (unsigned char *)mlsys_alloc(wsb + extra, 1);
        memcpy(after[c], ws, wsb + extra);
      }
      for (i = 0; i < wsb; i += 4) {
        static const unsigned char A[4] = {0xA5, 0xA5, 0xA5, 0xA5}, B[4] = {0x5A, 0x5A, 0x5A, 0x5A};
        unwritten += !memcmp(after[0] + i, A, 4) && !memcmp(after[1] + i, B, 4);
      }
      for (i = wsb; i < wsb + extra; i++) beyond += after[0][i] != 0xA5 || after[1][i] != 0x5A;
      CHECK_MSG(unwritten == 0 && beyond == 0, "shape %d pass %d: %zu floats of the workspace unwritten, %zu bytes "
                "beyond it written", t, pass, unwritten, beyond);
      mlsys_free(after[0]); mlsys_free(after[1]);
      /* one float short: refused, output untouched */
      memset(o, 0x77, (in_count(s) + out_count(s) + w_count(s)) * sizeof(float));
      rc = pass == 0   ? cnn_conv2d_forward_im2col(o, x, w, b, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb - 4)
           : pass == 1 ? cnn_conv2d_backward_params_im2col(o, db, dy, x, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb - 4)
           : pass == 2 ? cnn_conv2d_backward_input_im2col(o, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb - 4)
                       : cnn_conv2d_backward_input_im2col_t(o, dy, w, s.N, s.C, s.H, s.W, s.K, s.R, s.pad, ws, wsb - 4);
      CHECK_EQ_INT(rc, -1);
      CHECK(((unsigned char *)o)[0] == 0x77);
    }
    mlsys_free(x); mlsys_free(w); mlsys_free(b); mlsys_free(dy); mlsys_free(o); mlsys_free(db); mlsys_free(ws);
  }
}

/* An empty output (kernel larger than the padded input): no workspace, nothing to do, and the same zeros as the
   direct loops for the gradients. */
TEST(conv_im2col_empty_output) {
  /* 2 x 1 x 3 input, 3x3 kernel, no padding: OH = -1 */
  float x[6] = {1, 2, 3, 4, 5, 6}, w[9 * 2], b[1] = {0.5f}, dw0[18], dw1[18], db0, db1, dx0[6], dx1[6], dy[1] = {1.0f};
  int i;
  for (i = 0; i < 18; i++) w[i] = 1.0f;
  CHECK_EQ_INT(cnn_conv_im2col_workspace(1, 2, 1, 3, 1, 3, 3, 0), 0);
  CHECK_EQ_INT(cnn_conv2d_forward_im2col(dy, x, w, b, 1, 2, 1, 3, 1, 3, 0, NULL, 0), 0);
  CHECK(dy[0] == 1.0f);                                        /* nothing written */
  cnn_conv2d_backward_params(dw0, &db0, dy, x, 1, 2, 1, 3, 1, 3, 0);
  CHECK_EQ_INT(cnn_conv2d_backward_params_im2col(dw1, &db1, dy, x, 1, 2, 1, 3, 1, 3, 0, NULL, 0), 0);
  CHECK(same_bits(dw0, dw1, 18) && same_bits(&db0, &db1, 1));
  cnn_conv2d_backward_input(dx0, dy, w, 1, 2, 1, 3, 1, 3, 0);
  CHECK_EQ_INT(cnn_conv2d_backward_input_im2col(dx1, dy, w, 1, 2, 1, 3, 1, 3, 0, NULL, 0), 0);
  CHECK(same_bits(dx0, dx1, 6));
  CHECK_EQ_INT(cnn_conv_im2col_t_workspace(1, 2, 1, 3, 1, 3, 3, 0), 0);
  memset(dx1, 0xA5, sizeof dx1);
  CHECK_EQ_INT(cnn_conv2d_backward_input_im2col_t(dx1, dy, w, 1, 2, 1, 3, 1, 3, 0, NULL, 0), 0);
  CHECK(same_bits(dx0, dx1, 6));
}

/* ---- ReLU ------------------------------------------------------------------------------------------------- */
static const size_t relu_counts[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4097};

TEST(relu_inplace_and_output_activated) {
  mlsys_rng rng;
  size_t t, i;
  mlsys_rng_seed(&rng, 21);
  for (t = 0; t < sizeof relu_counts / sizeof relu_counts[0]; t++) {
    const size_t n = relu_counts[t];
    float *x = rand_tensor(&rng, n, 0.3), *dy = rand_tensor(&rng, n, 0.3);
    float *y = (float *)mlsys_alloc(n + 1, sizeof(float)), *xy = (float *)mlsys_alloc(n + 1, sizeof(float));
    float *dx0 = (float *)mlsys_alloc(n + 1, sizeof(float)), *dx1 = (float *)mlsys_alloc(n + 1, sizeof(float));
    cnn_relu_forward(y, x, n);
    memcpy(xy, x, n * sizeof(float));
    cnn_relu_forward_inplace(xy, n);                         /* y overwrites x */
    CHECK(same_bits(y, xy, n));
    for (i = 0; i < n; i++) CHECK(!signbit(xy[i]) && !isnan(xy[i]));   /* relu(-0) = relu(NaN) = +0 */
    cnn_relu_backward(dx0, dy, x, n);                          /* input-activated */
    cnn_relu_backward(dx1, dy, xy, n);                         /* output-activated, after the in-place forward */
    CHECK(same_bits(dx0, dx1, n));
    memcpy(dx1, dy, n * sizeof(float));
    cnn_relu_backward(dx1, dx1, xy, n);                        /* and dx may overwrite dy */
    CHECK(same_bits(dx0, dx1, n));
    mlsys_free(x); mlsys_free(dy); mlsys_free(y); mlsys_free(xy); mlsys_free(dx0); mlsys_free(dx1);
  }
}

TEST(relu_mask_special_values) {
  /* every special value as input: bit = (x > 0); NaN of either sign and -0 give 0, denormals > 0 give 1 */
  const uint32_t in[] = {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u,
                         0xFF800000u, 0x00000001u, 0x80000001u, 0x3F800000u, 0xBF800000u};
  const int want[] = {0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0};
  float x[11], dy[11], y0[11], y1[11], dx0[11], dx1[11];
  uint8_t mask[3] = {0xEE, 0xEE, 0xEE};
  int i;
  for (i = 0; i < 11; i++) { x[i] = bits_f(in[i]); dy[i] = bits_f(0x7FC00000u | (uint32_t)i); }   /* NaN dy too */
  cnn_relu_forward(y0, x, 11);
  cnn_relu_forward_mask(y1, mask, x, 11);
  CHECK(same_bits(y0, y1, 11));
  for (i = 0; i < 11; i++) CHECK_MSG(((mask[i / 8] >> (i % 8)) & 1) == want[i], "element %d (0x%08x)", i, in[i]);
  CHECK_EQ_INT(mask[1] >> 3, 0);                               /* tail bits 0 */
  CHECK_EQ_INT(mask[2], 0xEE);                                 /* nothing past ceil(11/8) = 2 bytes */
  cnn_relu_backward(dx0, dy, x, 11);
  cnn_relu_backward_mask(dx1, dy, mask, 11);
  CHECK(same_bits(dx0, dx1, 11));
}

TEST(relu_mask_random) {
  mlsys_rng rng;
  size_t t, i;
  mlsys_rng_seed(&rng, 22);
  for (t = 0; t < sizeof relu_counts / sizeof relu_counts[0]; t++) {
    const size_t n = relu_counts[t], nb = cnn_relu_mask_bytes(n);
    float *x = rand_tensor(&rng, n, 0.3), *dy = rand_tensor(&rng, n, 0.3);
    float *y0 = (float *)mlsys_alloc(n + 1, sizeof(float)), *y1 = (float *)mlsys_alloc(n + 1, sizeof(float));
    float *dx0 = (float *)mlsys_alloc(n + 1, sizeof(float)), *dx1 = (float *)mlsys_alloc(n + 1, sizeof(float));
    uint8_t *mask = (uint8_t *)mlsys_alloc(nb + 4, 1), *mask2 = (uint8_t *)mlsys_alloc(nb + 4, 1);
    CHECK_EQ_INT(nb, (n + 7) / 8);
    memset(mask, 0xEE, nb + 4);
    memset(mask2, 0x11, nb + 4);
    cnn_relu_forward(y0, x, n);
    cnn_relu_forward_mask(y1, mask, x, n);
    CHECK(same_bits(y0, y1, n));
    for (i = 0; i < n; i++) CHECK(((mask[i / 8] >> (i % 8)) & 1) == (x[i] > 0.0f));
    if (n % 8) CHECK_EQ_INT(mask[nb - 1] >> (n % 8), 0);     /* tail bits 0 */
    for (i = nb; i < nb + 4; i++) CHECK_EQ_INT(mask[i], 0xEE);
    cnn_relu_forward_mask(NULL, mask2, x, n);                  /* mask only */
    CHECK(nb == 0 || !memcmp(mask, mask2, nb));
    cnn_relu_backward(dx0, dy, x, n);
    cnn_relu_backward_mask(dx1, dy, mask, n);
    CHECK(same_bits(dx0, dx1, n));
    memcpy(y1, x, n * sizeof(float));                          /* in place + mask, then backward in place */
    cnn_relu_forward_mask(y1, mask2, y1, n);
    CHECK(same_bits(y0, y1, n) && (nb == 0 || !memcmp(mask, mask2, nb)));
    memcpy(dx1, dy, n * sizeof(float));
    cnn_relu_backward_mask(dx1, dx1, mask2, n);
    CHECK(same_bits(dx0, dx1, n));
    mlsys_free(x); mlsys_free(dy); mlsys_free(y0); mlsys_free(y1); mlsys_free(dx0); mlsys_free(dx1);
    mlsys_free(mask); mlsys_free(mask2);
  }
}

/* ---- max-pool --------------------------------------------------------------------------------------------- */
/* values from a small set (ties are common), a fifth of them special */
static float pool_val(mlsys_rng *rng) {
  static const float small[] = {-1.0f, 0.0f, 1.0f, 2.0f};
  if (mlsys_rng_uniform(rng) < 0.2) return rand_val(rng, 1.0);
  return small[mlsys_rng_below(rng, 4)];
}

TEST(maxpool_u8_equals_int64) {
  mlsys_rng rng;
  int t;
  mlsys_rng_seed(&rng, 31);
  for (t = 0; t < 400; t++) {
    const int N = mlsys_rng_range(&rng, 1, 4), C = mlsys_rng_range(&rng, 1, 8);
    const int H = t < 81 ? t / 9 + 1 : mlsys_rng_range(&rng, 1, 9), W = t < 81 ? t % 9 + 1 : mlsys_rng_range(&rng, 1, 9);
    const int OH = H / 2, OW = W / 2;
    const size_t nin = (size_t)N * C * H * W, nout = (size_t)N * C * OH * OW;
    float *x = (float *)mlsys_alloc(nin, sizeof(float)), *dy = rand_tensor(&rng, nout, 0.2);
    float *y0 = (float *)mlsys_alloc(nout + 1, sizeof(float)), *y1 = (float *)mlsys_alloc(nout + 1, sizeof(float));
    float *dx0 = (float *)mlsys_alloc(nin, sizeof(float)), *dx1 = (float *)mlsys_alloc(nin, sizeof(float));
    float *dx2 = (float *)mlsys_alloc(nin, sizeof(float));
    int64_t *idx = (int64_t *)mlsys_alloc(nout + 1, sizeof(int64_t));
    uint8_t *pos = (uint8_t *)mlsys_alloc(nout + 4, 1);
    size_t i, badpos = 0;
    int p, a, b2;
    for (i = 0; i < nin; i++) x[i] = t % 2 ? pool_val(&rng) : rand_val(&rng, 0.3);
    memset(pos, 0xEE, nout + 4);
    cnn_maxpool2x2_forward(y0, idx, x, N, C, H, W);
    cnn_maxpool2x2_forward_u8(y1, pos, x, N, C, H, W);
    CHECK(same_bits(y0, y1, nout));
    for (p = 0; p < N * C; p++)                                /* pos = the int64 index relative to the window */
      for (a = 0; a < OH; a++)
        for (b2 = 0; b2 < OW; b2++) {
          size_t o = ((size_t)p * OH + a) * OW + b2;
          badpos += pos[o] > 3 || (int64_t)(2 * a + pos[o] / 2) * W + 2 * b2 + pos[o] % 2 != idx[o];
        }
    CHECK_MSG(badpos == 0, "shape %d (N%d C%d H%d W%d): %zu indices differ", t, N, C, H, W, badpos);
    for (i = nout; i < nout + 4; i++) CHECK_EQ_INT(pos[i], 0xEE);   /* numel(out) bytes, no more */
    memset(dx1, 0xA5, nin * sizeof(float));
    cnn_maxpool2x2_backward(dx0, dy, idx, NULL, N, C, H, W);
    cnn_maxpool2x2_backward(dx2, dy, NULL, x, N, C, H, W);
    cnn_maxpool2x2_backward_u8(dx1, dy, pos, N, C, H, W);
    CHECK(same_bits(dx0, dx1, nin) && same_bits(dx2, dx1, nin));
    mlsys_free(x); mlsys_free(dy); mlsys_free(y0); mlsys_free(y1); mlsys_free(dx0); mlsys_free(dx1); mlsys_free(dx2);
    mlsys_free(idx); mlsys_free(pos);
  }
}

TEST(maxpool_u8_rules) {
  /* first maximum on ties; NaN wins (the last NaN, as cnn_pool_argmax scans); -inf only: position 0 */
  const float win[][4] = {{1, 3, 3, 2}, {5, 5, 5, 5}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                          {1, NAN, 2, NAN}, {-0.0f, 0.0f, -1, -1}, {0.0f, -0.0f, -1, -1}};
  const int want[] = {1, 0, 0, 3, 0, 0};
  size_t k;
  for (k = 0; k < sizeof want / sizeof want[0]; k++) {
    float x[4], y, dy = 7.0f, dx[4];
    uint8_t pos;
    int i;
    x[0] = win[k][0]; x[1] = win[k][1]; x[2] = win[k][2]; x[3] = win[k][3];   /* [1,1,2,2] plane */
    cnn_maxpool2x2_forward_u8(&y, &pos, x, 1, 1, 2, 2);
    CHECK_MSG(pos == want[k], "window %zu: position %d, want %d", k, pos, want[k]);
    cnn_maxpool2x2_backward_u8(dx, &dy, &pos, 1, 1, 2, 2);
    for (i = 0; i < 4; i++) CHECK(dx[i] == (i == want[k] ? 7.0f : 0.0f) && !signbit(dx[i]));
  }
}

/* ---- calibration ------------------------------------------------------------------------------------------ */
TEST(calibration_rows_and_bytes) {
  cnn_model m;
  cnn_impl_cost c[CNN_IMPL_MAX_COSTS];
  float *params;
  int n = -1, i, seen_conv_im2col = 0, seen_conv_im2col_t = 0;
  const int N = 2;
  REQUIRE_OK(cnn_model_init(&m, N, 5));
  params = (float *)mlsys_alloc(m.nparams, sizeof(float));
  memcpy(params, m.params, m.nparams * sizeof(float));
  CHECK_EQ_INT(cnn_impl_time(&m, 3, c, 10, &n), MLSYS_ERR_ARG);   /* too little room: says how much */
  CHECK_EQ_INT(n, 58);
  REQUIRE_OK(cnn_impl_time(&m, 3, c, CNN_IMPL_MAX_COSTS, &n));
  REQUIRE(n == 58);
  CHECK(!memcmp(params, m.params, m.nparams * sizeof(float)));
  for (i = 0; i < n; i++) {
    const cnn_layer *L = &m.layer[c[i].layer];
    const uint64_t nin = (uint64_t)N * cnn_layer_in_count(L), nout = (uint64_t)N * cnn_layer_out_count(L);
    const int conv1 = c[i].layer == CNN_CONV1;
    CHECK_MSG(c[i].seconds > 0 && isfinite(c[i].seconds), "row %d: %g s", i, c[i].seconds);
    CHECK(i == 0 || c[i].layer >= c[i - 1].layer);
    CHECK_EQ_INT(c[i].workspace, c[i].impl == CNN_IMPL_IM2COL     ? (conv1 ? 3 * 9 * 32 * 32 * 4 : 8 * 9 * 16 * 16 * 4)
                                 : c[i].impl == CNN_IMPL_IM2COL_T ? (conv1 ? 8 * 9 * 32 * 32 * 4 : 16 * 9 * 16 * 16 * 4)
                                                                  : 0);
    CHECK_EQ_INT(c[i].intermediate, c[i].impl == CNN_IMPL_RELU_MASK1 ? (nin + 7) / 8
                                    : c[i].impl == CNN_IMPL_POOL_IDX8 ? nout
                                    : c[i].impl == CNN_IMPL_POOL_IDX64 ? 8 * nout : 0);
    seen_conv_im2col += c[i].impl == CNN_IMPL_IM2COL;
    seen_conv_im2col_t += c[i].impl == CNN_IMPL_IM2COL_T;
    if (c[i].impl == CNN_IMPL_IM2COL_T) CHECK(c[i].pass == CNN_PASS_BACKWARD_INPUT);
  }
  CHECK_EQ_INT(seen_conv_im2col, 6);                          /* 2 convs x (forward, param-grad, input-grad) */
  CHECK_EQ_INT(seen_conv_im2col_t, 2);                        /* 2 convs x input-grad */
  /* the first rows: conv1 direct forward, param-grad, input-grad, then im2col's, then im2col_t's input-grad;
     relu1 starts at row 7 */
  CHECK(c[0].layer == CNN_CONV1 && c[0].impl == CNN_IMPL_DIRECT && c[0].pass == CNN_PASS_FORWARD);
  CHECK(c[2].pass == CNN_PASS_BACKWARD_INPUT && c[3].impl == CNN_IMPL_IM2COL && c[6].impl == CNN_IMPL_IM2COL_T);
  CHECK(c[7].layer == CNN_RELU1 && c[7].impl == CNN_IMPL_RELU_INPUT && c[14].impl == CNN_IMPL_RELU_MASK1);
  CHECK(c[14].intermediate == (uint64_t)N * 8 * 32 * 32 / 8 && c[15].layer == CNN_POOL1);
  CHECK_STR(cnn_impl_name(c[14].impl), "mask1");
  CHECK_STR(cnn_pass_name(c[14].pass), "backward");
  CHECK_STR(cnn_impl_name(c[6].impl), "im2col_t");
  CHECK_EQ_INT(cnn_impl_time(&m, 0, c, CNN_IMPL_MAX_COSTS, &n), MLSYS_ERR_ARG);
  mlsys_free(params);
  cnn_model_free(&m);
}

TEST_MAIN()
