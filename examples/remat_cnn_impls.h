/* examples/remat_cnn_impls.h — alternative implementations of SmallCNN's layers (examples/remat_cnn_layers.h), the
   operator catalogue MONeT chooses from jointly with its checkpoints (Shah's thesis ch. 4; the spec's §A3.6):

     convolution      "direct"  the existing loops: no workspace
                      "im2col"  im2col + GEMM forward, GEMM + col2im input gradient, im2col + GEMM weight gradient,
                                through a caller-supplied workspace (cnn_conv_im2col_workspace bytes)
                      "im2col_t" input gradient only: im2col of dy + GEMM with the transposed filter (bit-identical,
                                cnn_conv_im2col_t_workspace bytes)
     ReLU             "input"   the backward reads the forward's input  (the existing functions)
                      "output"  the backward reads the forward's output (cnn_relu_backward accepts either)
                      "inplace" the forward overwrites its input; the backward then reads the output
                      "mask1"   the forward also writes a packed 1-bit mask of x > 0, ceil(n/8) bytes, and the backward
                                reads only that (MONeT's BinaryActReLU, an IntNode of that size, §A3.5 item 2)
     max-pool 2x2/2   "idx64"   int64 indices h*W+v (the existing layout, PyTorch's)
                      "recompute" the backward recomputes the maxima from the input (idx NULL: existing)
                      "idx8"    one uint8 per output, the position 0..3 inside its window (numel(out) bytes)

   Every alternative computes what the existing function computes; where it is bit-identical and where it is only
   close is said at each function and checked by tests/test_remat_cnn_impls.c. Section 4 times each implementation
   of each layer (cnn_impl_time). `mlsys remat calibrate` times the general versions of these kernels (any stride,
   padding, dilation, groups) in examples/cnn_kernels.h instead; this file's stride-1 ones stay as they are.

   Include after (or instead of) examples/remat_cnn_layers.h, in one file: everything is static. C only (uses
   restrict); the GPU kernels do not depend on this file.

   SECTIONS: 1. convolution by im2col + GEMM  2. ReLU: in place, 1-bit mask  3. max-pool with 8-bit indices
   4. calibration */
#ifndef REMAT_CNN_IMPLS_H
#define REMAT_CNN_IMPLS_H

#include "examples/remat_cnn_layers.h"

/* ================================================================================================================
   1. Convolution by im2col + GEMM (stride 1, zero padding pad, R x R kernels, as cnn_conv2d_*).

   Workspace: one sample's column matrix, col[(c*R + r)*S + s][i*OW + j] = x[n, c, i+r-pad, j+s-pad] (0 outside
   the plane), C*R*S x OH*OW floats. The samples reuse it one after another, so it does not grow with the batch:
   per sample, not per batch (N and K are taken for the cuDNN-like signature and do not change the answer). All
   three passes need exactly this many bytes: the forward and the weight gradient fill it with the input's
   columns, the input gradient with the columns of dx before col2im folds them back. Every float of it is written
   (the padding zeros too), so a smaller buffer would not do; nothing beyond it is touched.

   Summation order, and so bit-identity with the direct loops:
     forward          y = b + sum over (c, r, s) in that order: the direct loop's order, with the padding positions
                      contributing w * 0 = +-0 where the direct loop skips them. Adding +-0 to a sum that is not -0
                      changes nothing (NaN stays the same NaN, inf stays inf), and the sum starts at b[k], so the
                      result is BIT-IDENTICAL whenever the weights are finite and no bias is -0.0 (x may hold
                      anything: NaN, inf, -0, denormals). Otherwise an infinite or NaN weight at a padded tap gives
                      NaN (inf * 0) where the direct loop gives a number, and a bias of -0.0 with only zero terms
                      can come out +0.0.
     weight gradient  dw[k,c,r,s] = sum over n, then (i, j) row-major: the direct loop's order (the running sum is
                      carried from sample to sample through dw), the padding again contributing dy * 0, and the sum
                      starts at +0.0, so BIT-IDENTICAL whenever dy is finite (x anything). db is the direct loop's.
     input gradient   GEMM first (dcol = W^T dy, summed over k), then col2im adds the R*S columns of each dx element:
                      sum over (r, s) of (sum over k), where the direct loop sums over k, then r, then s. The same
                      terms in a different grouping: NOT bit-identical; the difference is a few ulps of the sum of
                      |w * dy| (the test allows 1e-5 of that), and the padded taps are dropped by col2im, so NaN and
                      infinity appear exactly where the direct loop has them.
     input gradient,  "im2col_t": the input gradient as a forward convolution of dy with the transposed filter:
       transposed     im2col of dy, colT[(k*R + r)*S + s][h*W + v] = dy[n, k, h-r+pad, v-s+pad] (0 outside),
                      K*R*S x H*W floats per sample (cnn_conv_im2col_t_workspace), then dx[c, :] = sum over (k, r, s)
                      of w[k,c,r,s] * colT[(k, r, s), :]: the direct loop's order from +0.0, so BIT-IDENTICAL
                      whenever the weights are finite (dy anything), at a larger workspace than col2im's when K > C.
                      (col2im's version is bit-identical too when K = 1 or R = 1: the groupings then coincide.)
   "Bit-identical" leaves one thing out everywhere: the payload of a NaN result. When two NaNs meet in a + b, x86
   returns the first operand's, and which operand comes first is the compiler's choice, which differs between the
   scalar direct loop and the vectorised GEMM; a NaN result is NaN in both, and every other bit (the sign of zero
   included) matches. And it assumes products rounded on their own, as the project's flags give (ISO C, baseline
   x86-64): where the compiler fuses acc += w * x into one FMA (an FMA target with clang, or gcc in GNU C mode), the
   direct loop and the GEMM may be fused differently and the claims do not hold (the test turns contraction off).
   ================================================================================================================ */

/* Workspace bytes of the im2col algorithm for an N x C x H x W input, K filters of R x S, padding pad (each of the
   three passes needs the same); 0 when the output is empty. Per sample (see above). */
static size_t cnn_conv_im2col_workspace(int N, int C, int H, int W, int K, int R, int S, int pad) {
  long OH = (long)H + 2L * pad - R + 1, OW = (long)W + 2L * pad - S + 1;
  (void)N; (void)K;
  if (C <= 0 || R <= 0 || S <= 0 || OH <= 0 || OW <= 0) return 0;
  return (size_t)C * (size_t)R * (size_t)S * (size_t)OH * (size_t)OW * sizeof(float);
}

/* One sample's column matrix (layout above; S = R). Writes every float of it. */
static void cnn_im2col(float *col, const float *x, int C, int H, int W, int R, int pad) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, c, r, s, i, j;
  for (c = 0; c < C; c++)
    for (r = 0; r < R; r++)
      for (s = 0; s < R; s++) {
        float *row = col + ((size_t)(c * R + r) * R + s) * OH * OW;
        for (i = 0; i < OH; i++) {
          int h = i + r - pad;
          float *o = row + (size_t)i * OW;
          const float *xr;
          if (h < 0 || h >= H) {
            for (j = 0; j < OW; j++) o[j] = 0.0f;
            continue;
          }
          xr = x + ((size_t)c * H + h) * W;
          for (j = 0; j < OW; j++) {
            int v = j + s - pad;
            o[j] = v >= 0 && v < W ? xr[v] : 0.0f;
          }
        }
      }
}

/* The same output as cnn_conv2d_forward (bit-identical under the conditions above). ws: at least
   cnn_conv_im2col_workspace(N, C, H, W, K, R, R, pad) bytes, float-aligned; returns -1 (writing nothing) when
   ws_bytes is smaller, else 0. The GEMM runs over the output pixels innermost (y[k, :] += w[k, q] * col[q, :]), so
   each output element still receives its terms one at a time in q = (c, r, s) order while the loop vectorises
   across pixels. */
static int cnn_conv2d_forward_im2col(float *y, const float *x, const float *w, const float *b, int N, int C, int H,
                                     int W, int K, int R, int pad, void *ws, size_t ws_bytes) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k;
  size_t P, CRS = (size_t)C * R * R, q, p;
  float *col = (float *)ws;
  if (ws_bytes < cnn_conv_im2col_workspace(N, C, H, W, K, R, R, pad)) return -1;
  if (OH <= 0 || OW <= 0) return 0;
  P = (size_t)OH * OW;
  for (n = 0; n < N; n++) {
    cnn_im2col(col, x + (size_t)n * C * H * W, C, H, W, R, pad);
    for (k = 0; k < K; k++) {
      float *restrict yk = y + ((size_t)n * K + k) * P;
      const float *wk = w + (size_t)k * CRS;
      for (p = 0; p < P; p++) yk[p] = b[k];
      for (q = 0; q < CRS; q++) {
        const float wq = wk[q];
        const float *restrict cq = col + q * P;
        for (p = 0; p < P; p++) yk[p] += wq * cq[p];
      }
    }
  }
  return 0;
}

/* The same dw as cnn_conv2d_backward_params (bit-identical for finite dy) and the same db (always). Workspace as
   the forward's; -1 when too small (nothing written), else 0. Each dw element is one dot product over the
   pixels, sequential, carried across samples through dw itself (storing a float is exact). */
static int cnn_conv2d_backward_params_im2col(float *dw, float *db, const float *dy, const float *x, int N, int C,
                                             int H, int W, int K, int R, int pad, void *ws, size_t ws_bytes) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k;
  size_t P, CRS = (size_t)C * R * R, q, p;
  float *col = (float *)ws;
  if (ws_bytes < cnn_conv_im2col_workspace(N, C, H, W, K, R, R, pad)) return -1;
  P = OH > 0 && OW > 0 ? (size_t)OH * OW : 0;
  for (q = 0; q < (size_t)K * CRS; q++) dw[q] = 0.0f;
  for (n = 0; P && n < N; n++) {
    cnn_im2col(col, x + (size_t)n * C * H * W, C, H, W, R, pad);
    for (k = 0; k < K; k++) {
      const float *dyk = dy + ((size_t)n * K + k) * P;
      for (q = 0; q < CRS; q++) {
        const float *cq = col + q * P;
        float acc = dw[(size_t)k * CRS + q];
        for (p = 0; p < P; p++) acc += dyk[p] * cq[p];
        dw[(size_t)k * CRS + q] = acc;
      }
    }
  }
  for (k = 0; k < K; k++) {                             /* db: the direct loop, verbatim */
    float acc = 0.0f;
    for (n = 0; n < N; n++)
      for (p = 0; p < P; p++) acc += dy[((size_t)n * K + k) * P + p];
    db[k] = acc;
  }
  return 0;
}

/* dx as cnn_conv2d_backward_input computes it, up to rounding (the grouping differs: see the section's comment).
   Workspace as the forward's (it holds dcol = W^T dy of one sample); -1 when too small (nothing written), else 0. */
static int cnn_conv2d_backward_input_im2col(float *dx, const float *dy, const float *w, int N, int C, int H, int W,
                                            int K, int R, int pad, void *ws, size_t ws_bytes) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k, c, r, s, i, j;
  size_t P, CRS = (size_t)C * R * R, q, p;
  float *dcol = (float *)ws;
  if (ws_bytes < cnn_conv_im2col_workspace(N, C, H, W, K, R, R, pad)) return -1;
  for (p = 0; p < (size_t)N * C * H * W; p++) dx[p] = 0.0f;
  if (OH <= 0 || OW <= 0) return 0;
  P = (size_t)OH * OW;
  for (n = 0; n < N; n++) {
    const float *dyn = dy + (size_t)n * K * P;
    float *dxn = dx + (size_t)n * C * H * W;
    for (q = 0; q < CRS; q++) {                         /* GEMM: dcol[q, :] = sum_k w[k, q] * dy[k, :] */
      float *restrict dq = dcol + q * P;
      for (p = 0; p < P; p++) dq[p] = 0.0f;
      for (k = 0; k < K; k++) {
        const float wkq = w[(size_t)k * CRS + q];
        const float *restrict dyk = dyn + (size_t)k * P;
        for (p = 0; p < P; p++) dq[p] += wkq * dyk[p];
      }
    }
    for (c = 0; c < C; c++)                             /* col2im: the padded taps fall outside and are dropped */
      for (r = 0; r < R; r++)
        for (s = 0; s < R; s++) {
          const float *dq = dcol + ((size_t)(c * R + r) * R + s) * P;
          for (i = 0; i < OH; i++) {
            int h = i + r - pad;
            if (h < 0 || h >= H) continue;
            for (j = 0; j < OW; j++) {
              int v = j + s - pad;
              if (v >= 0 && v < W) dxn[((size_t)c * H + h) * W + v] += dq[(size_t)i * OW + j];
            }
          }
        }
  }
  return 0;
}

/* Workspace bytes of cnn_conv2d_backward_input_im2col_t: one sample's K*R*S x H*W transposed column matrix; 0 when
   the forward's output is empty (dx is then all zeros). Per sample, as cnn_conv_im2col_workspace. */
static size_t cnn_conv_im2col_t_workspace(int N, int C, int H, int W, int K, int R, int S, int pad) {
  long OH = (long)H + 2L * pad - R + 1, OW = (long)W + 2L * pad - S + 1;
  (void)N; (void)C;
  if (K <= 0 || R <= 0 || S <= 0 || H <= 0 || W <= 0 || OH <= 0 || OW <= 0) return 0;
  return (size_t)K * (size_t)R * (size_t)S * (size_t)H * (size_t)W * sizeof(float);
}

/* The same dx as cnn_conv2d_backward_input, bit-identical for finite weights (section comment). ws: at least
   cnn_conv_im2col_t_workspace(...) bytes, float-aligned; -1 when smaller (nothing written), else 0. */
static int cnn_conv2d_backward_input_im2col_t(float *dx, const float *dy, const float *w, int N, int C, int H, int W,
                                              int K, int R, int pad, void *ws, size_t ws_bytes) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k, c, r, s, h, v;
  size_t HW = (size_t)H * W, P, q, p;
  float *col = (float *)ws;
  if (ws_bytes < cnn_conv_im2col_t_workspace(N, C, H, W, K, R, R, pad)) return -1;
  if (OH <= 0 || OW <= 0) {
    for (p = 0; p < (size_t)N * C * HW; p++) dx[p] = 0.0f;
    return 0;
  }
  P = (size_t)OH * OW;
  for (n = 0; n < N; n++) {
    for (k = 0; k < K; k++)                             /* colT: dy's taps as seen from each input pixel */
      for (r = 0; r < R; r++)
        for (s = 0; s < R; s++) {
          float *row = col + ((size_t)(k * R + r) * R + s) * HW;
          const float *dyk = dy + ((size_t)n * K + k) * P;
          for (h = 0; h < H; h++) {
            const int i = h - r + pad;
            float *o = row + (size_t)h * W;
            if (i < 0 || i >= OH) {
              for (v = 0; v < W; v++) o[v] = 0.0f;
              continue;
            }
            for (v = 0; v < W; v++) {
              const int j = v - s + pad;
              o[v] = j >= 0 && j < OW ? dyk[(size_t)i * OW + j] : 0.0f;
            }
          }
        }
    for (c = 0; c < C; c++) {                           /* GEMM: dx[c, :] = sum_q w^T[c, q] * colT[q, :] */
      float *restrict dxc = dx + ((size_t)n * C + c) * HW;
      for (p = 0; p < HW; p++) dxc[p] = 0.0f;
      for (k = 0; k < K; k++)
        for (q = 0; q < (size_t)R * R; q++) {
          const float wq = w[((size_t)k * C + c) * R * R + q];
          const float *restrict cq = col + ((size_t)k * R * R + q) * HW;
          for (p = 0; p < HW; p++) dxc[p] += wq * cq[p];
        }
    }
  }
  return 0;
}

/* ================================================================================================================
   2. ReLU: in place, and the 1-bit mask.

   In place: cnn_relu_forward already reads x[i] before it writes y[i] and touches nothing else, so y == x is
   allowed; this names it. After it the input is gone, so the backward must read the output, which
   cnn_relu_backward accepts: relu(x) > 0 exactly where x > 0 (relu(NaN) = relu(-0) = +0), so the gradient is
   bit-identical to the one from the input. (cnn_relu_backward may also run in place, dx == dy.)

   Mask: bit i (byte i / 8, bit i % 8, least significant first) = (x[i] > 0.0f), the very comparison
   cnn_relu_backward makes. So NaN gives 0 (a comparison with NaN is false: the reference passes no gradient
   through NaN either), -0.0 and +0.0 give 0, positive denormals and +inf give 1; and the backward, dx = bit ? dy :
   0.0f, equals cnn_relu_backward bit for bit for every input. The unused bits of the last byte are written 0.
   ================================================================================================================ */
static void cnn_relu_forward_inplace(float *x, size_t count) { cnn_relu_forward(x, x, count); }

static size_t cnn_relu_mask_bytes(size_t count) { return (count + 7) / 8; }

/* y = relu(x) and the mask (cnn_relu_mask_bytes(count) bytes). y may be x (in place); y NULL writes the mask only. */
static void cnn_relu_forward_mask(float *y, uint8_t *mask, const float *x, size_t count) {
  size_t i;
  for (i = 0; i < count; i += 8) {
    size_t e = count - i < 8 ? count - i : 8, t;
    unsigned byte = 0;
    for (t = 0; t < e; t++) {
      const float v = x[i + t];
      const int on = v > 0.0f;
      byte |= (unsigned)on << t;
      if (y) y[i + t] = on ? v : 0.0f;
    }
    mask[i / 8] = (uint8_t)byte;
  }
}

/* dx = dy where the mask bit is set, else +0.0 (dx may be dy). */
static void cnn_relu_backward_mask(float *dx, const float *dy, const uint8_t *mask, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) dx[i] = (mask[i / 8] >> (i % 8)) & 1u ? dy[i] : 0.0f;
}

/* ================================================================================================================
   3. Max-pool 2x2/stride 2 with 8-bit indices: pos[o] = 2r + s, the window row r and column s of the maximum that
   cnn_pool_argmax picks (the first maximum in row-major order, NaN winning as it decides): numel(out) bytes
   instead of 8 * numel(out). The values and the gradient are bit-identical to the int64 version's.
   ================================================================================================================ */
static void cnn_maxpool2x2_forward_u8(float *y, uint8_t *pos, const float *x, int N, int C, int H, int W) {
  int OH = H / 2, OW = W / 2, p, i, j;
  for (p = 0; p < N * C; p++) {
    const float *plane = x + (size_t)p * H * W;
    for (i = 0; i < OH; i++)
      for (j = 0; j < OW; j++) {
        const int64_t at = cnn_pool_argmax(plane, W, i, j);
        const int r = (int)(at / W) - 2 * i, s = (int)(at % W) - 2 * j;
        const size_t o = ((size_t)p * OH + i) * OW + j;
        y[o] = plane[at];
        pos[o] = (uint8_t)(2 * r + s);
      }
  }
}

/* dx as cnn_maxpool2x2_backward: dy of its window where (h,v) is the window's maximum, +0.0 elsewhere (the odd
   last row and column too). */
static void cnn_maxpool2x2_backward_u8(float *dx, const float *dy, const uint8_t *pos, int N, int C, int H, int W) {
  int OH = H / 2, OW = W / 2, p, h, v;
  for (p = 0; p < N * C; p++)
    for (h = 0; h < H; h++)
      for (v = 0; v < W; v++) {
        int i = h / 2, j = v / 2;
        float g = 0.0f;
        if (i < OH && j < OW) {
          const size_t o = ((size_t)p * OH + i) * OW + j;
          if (pos[o] == 2 * (h - 2 * i) + (v - 2 * j)) g = dy[o];
        }
        dx[((size_t)p * H + h) * W + v] = g;
      }
}

/* ================================================================================================================
   4. Calibration: every implementation of every SmallCNN layer at the model's batch, each pass timed as the median
   of reps runs (mlsys_now). The rows, their order, the workspace and intermediate bytes are a function of the model's
   shapes only; the seconds are the only measured field. Inputs are normal random tensors from a fixed seed, the
   parameters the model's own; the model is not modified (weight gradients go to scratch).
   ================================================================================================================ */
typedef enum { CNN_PASS_FORWARD, CNN_PASS_BACKWARD, CNN_PASS_BACKWARD_PARAMS, CNN_PASS_BACKWARD_INPUT } cnn_pass;
typedef enum { CNN_IMPL_DIRECT, CNN_IMPL_IM2COL, CNN_IMPL_IM2COL_T, CNN_IMPL_RELU_INPUT, CNN_IMPL_RELU_OUTPUT, CNN_IMPL_RELU_INPLACE,
               CNN_IMPL_RELU_MASK1, CNN_IMPL_POOL_IDX64, CNN_IMPL_POOL_RECOMPUTE, CNN_IMPL_POOL_IDX8 } cnn_impl;

static const char *cnn_pass_name(cnn_pass p) {
  static const char *const names[] = {"forward", "backward", "backward_params", "backward_input"};
  return names[p];
}
static const char *cnn_impl_name(cnn_impl i) {
  static const char *const names[] = {"direct", "im2col", "im2col_t", "input", "output", "inplace", "mask1", "idx64",
                                      "recompute", "idx8"};
  return names[i];
}

typedef struct {
  int layer;               /* CNN_CONV1 .. CNN_FC2 */
  cnn_pass pass;           /* conv and linear: forward, backward_params, backward_input; the others: forward,
                              backward (MONeT splits the conv backward into param-grad, then input-grad) */
  cnn_impl impl;
  double seconds;          /* median of reps runs at the model's batch */
  uint64_t workspace;      /* scratch the call needs while it runs (freed after): the im2col buffers */
  uint64_t intermediate;   /* bytes the implementation keeps from forward to backward besides the layer's input
                              and output: mask1 ceil(numel/8), idx8 numel(out) (MONeT's IntNode sizes, §A3.5
                              item 2), idx64 8 numel(out) (the pool node's auxiliary output here); else 0 */
} cnn_impl_cost;

#define CNN_IMPL_MAX_COSTS 64  /* SmallCNN has 58 rows */

typedef struct {
  const cnn_model *m;
  float *x, *y, *dy, *dx, *dw, *db;
  int64_t *idx;
  uint8_t *bytes;
  void *ws;
  size_t ws_bytes;
} cnn_impl_bufs;

/* One run of (layer, pass, impl) on the buffers. The backward passes read what the same implementation's forward
   left (its output, mask or indices): the rows are timed forward first. */
static void cnn_impl_run(cnn_impl_bufs *B, int li, cnn_pass pass, cnn_impl impl) {
  const cnn_layer *L = &B->m->layer[li];
  const int N = B->m->batch;
  const size_t nin = (size_t)N * cnn_layer_in_count(L);
  int rc = 0;
  switch (L->op) {
  case CNN_OP_CONV:
    if (impl == CNN_IMPL_DIRECT) {
      if (pass == CNN_PASS_FORWARD) cnn_conv2d_forward(B->y, B->x, L->wt, L->b, N, L->c, L->h, L->w, L->k, 3, 1);
      else if (pass == CNN_PASS_BACKWARD_PARAMS)
        cnn_conv2d_backward_params(B->dw, B->db, B->dy, B->x, N, L->c, L->h, L->w, L->k, 3, 1);
      else cnn_conv2d_backward_input(B->dx, B->dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1);
    } else if (impl == CNN_IMPL_IM2COL_T) {
      rc = cnn_conv2d_backward_input_im2col_t(B->dx, B->dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1, B->ws, B->ws_bytes);
    } else {
      if (pass == CNN_PASS_FORWARD)
        rc = cnn_conv2d_forward_im2col(B->y, B->x, L->wt, L->b, N, L->c, L->h, L->w, L->k, 3, 1, B->ws, B->ws_bytes);
      else if (pass == CNN_PASS_BACKWARD_PARAMS)
        rc = cnn_conv2d_backward_params_im2col(B->dw, B->db, B->dy, B->x, N, L->c, L->h, L->w, L->k, 3, 1, B->ws,
                                               B->ws_bytes);
      else rc = cnn_conv2d_backward_input_im2col(B->dx, B->dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1, B->ws, B->ws_bytes);
    }
    break;
  case CNN_OP_RELU:
    if (pass == CNN_PASS_FORWARD) {
      if (impl == CNN_IMPL_RELU_INPLACE) cnn_relu_forward_inplace(B->y, nin);   /* y holds a copy of x */
      else if (impl == CNN_IMPL_RELU_MASK1) cnn_relu_forward_mask(B->y, B->bytes, B->x, nin);
      else cnn_relu_forward(B->y, B->x, nin);
    } else {
      if (impl == CNN_IMPL_RELU_MASK1) cnn_relu_backward_mask(B->dx, B->dy, B->bytes, nin);
      else cnn_relu_backward(B->dx, B->dy, impl == CNN_IMPL_RELU_INPUT ? B->x : B->y, nin);
    }
    break;
  case CNN_OP_POOL:
    if (pass == CNN_PASS_FORWARD) {
      if (impl == CNN_IMPL_POOL_IDX8) cnn_maxpool2x2_forward_u8(B->y, B->bytes, B->x, N, L->c, L->h, L->w);
      else cnn_maxpool2x2_forward(B->y, B->idx, B->x, N, L->c, L->h, L->w);   /* recompute: its forward is idx64's */
    } else {
      if (impl == CNN_IMPL_POOL_IDX8) cnn_maxpool2x2_backward_u8(B->dx, B->dy, B->bytes, N, L->c, L->h, L->w);
      else cnn_maxpool2x2_backward(B->dx, B->dy, impl == CNN_IMPL_POOL_IDX64 ? B->idx : NULL, B->x, N, L->c, L->h,
                                   L->w);
    }
    break;
  case CNN_OP_FLATTEN:
    memcpy(pass == CNN_PASS_FORWARD ? B->y : B->dx, pass == CNN_PASS_FORWARD ? B->x : B->dy, nin * sizeof(float));
    break;
  case CNN_OP_LINEAR:
    if (pass == CNN_PASS_FORWARD) cnn_linear_forward(B->y, B->x, L->wt, L->b, N, L->c, L->k);
    else if (pass == CNN_PASS_BACKWARD_PARAMS) cnn_linear_backward_params(B->dw, B->db, B->dy, B->x, N, L->c, L->k);
    else cnn_linear_backward_input(B->dx, B->dy, L->wt, N, L->c, L->k);
    break;
  }
  (void)rc;   /* the buffer is sized by cnn_conv_im2col_workspace: cannot fail */
}

static int cnn_impl_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Fill out[0 .. *count) (cap rows at most; SmallCNN needs 58, CNN_IMPL_MAX_COSTS is enough) with every
   (layer, pass, implementation) of m: layers in order; per layer the implementations in cnn_impl order, each with
   its forward, then its backward passes (im2col_t: its input gradient only). reps >= 1 runs per row, the median reported. MLSYS_ERR_ARG when cap is
   too small (*count then says how many rows are needed), MLSYS_ERR_NOMEM when a buffer cannot be allocated. */
static mlsys_status cnn_impl_time(const cnn_model *m, int reps, cnn_impl_cost *out, int cap, int *count) {
  static const cnn_impl conv_impls[] = {CNN_IMPL_DIRECT, CNN_IMPL_IM2COL, CNN_IMPL_IM2COL_T};
  static const cnn_impl relu_impls[] = {CNN_IMPL_RELU_INPUT, CNN_IMPL_RELU_OUTPUT, CNN_IMPL_RELU_INPLACE,
                                        CNN_IMPL_RELU_MASK1};
  static const cnn_impl pool_impls[] = {CNN_IMPL_POOL_IDX64, CNN_IMPL_POOL_RECOMPUTE, CNN_IMPL_POOL_IDX8};
  static const cnn_impl one_impl[] = {CNN_IMPL_DIRECT};
  static const cnn_pass pass_wx[] = {CNN_PASS_FORWARD, CNN_PASS_BACKWARD_PARAMS, CNN_PASS_BACKWARD_INPUT};
  static const cnn_pass pass_fb[] = {CNN_PASS_FORWARD, CNN_PASS_BACKWARD};
  const int N = m->batch;
  size_t max_in = 0, max_out = 0, max_w = 0, max_b = 0, max_ws = 0, j;
  cnn_impl_bufs B;
  double *t = NULL;
  int li, n = 0, a, b, rep;
  mlsys_status st = MLSYS_OK;
  mlsys_rng rng;
  if (reps < 1) return mlsys_set_error(MLSYS_ERR_ARG, "cnn_impl_time: reps %d < 1", reps);
  memset(&B, 0, sizeof B);
  B.m = m;
  for (li = 0; li < CNN_NLAYERS; li++) {
    const cnn_layer *L = &m->layer[li];
    size_t ni = (size_t)N * cnn_layer_in_count(L), no = (size_t)N * cnn_layer_out_count(L);
    max_in = ni > max_in ? ni : max_in;
    max_out = no > max_out ? no : max_out;
    max_w = L->nw > max_w ? L->nw : max_w;
    max_b = L->nb > max_b ? L->nb : max_b;
    if (L->op == CNN_OP_CONV) {
      size_t ws = cnn_conv_im2col_workspace(N, L->c, L->h, L->w, L->k, 3, 3, 1);
      size_t wt = cnn_conv_im2col_t_workspace(N, L->c, L->h, L->w, L->k, 3, 3, 1);
      max_ws = ws > max_ws ? ws : max_ws;
      max_ws = wt > max_ws ? wt : max_ws;
    }
  }
  /* y also holds the in-place ReLU's copy of x (ReLU: out = in) */
  B.x = (float *)mlsys_alloc(max_in, sizeof(float));
  B.y = (float *)mlsys_alloc(max_out > max_in ? max_out : max_in, sizeof(float));
  B.dy = (float *)mlsys_alloc(max_out, sizeof(float));
  B.dx = (float *)mlsys_alloc(max_in, sizeof(float));
  B.dw = (float *)mlsys_alloc(max_w + 1, sizeof(float));
  B.db = (float *)mlsys_alloc(max_b + 1, sizeof(float));
  B.idx = (int64_t *)mlsys_alloc(max_out, sizeof(int64_t));
  B.bytes = (uint8_t *)mlsys_alloc(max_in, 1);           /* the larger of a mask and 8-bit indices */
  B.ws = mlsys_alloc(max_ws + 1, 1);
  B.ws_bytes = max_ws;
  t = (double *)mlsys_alloc((size_t)reps, sizeof(double));
  if (!B.x || !B.y || !B.dy || !B.dx || !B.dw || !B.db || !B.idx || !B.bytes || !B.ws || !t) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (li = 0; li < CNN_NLAYERS; li++) {
    const cnn_layer *L = &m->layer[li];
    const size_t nin = (size_t)N * cnn_layer_in_count(L), nout = (size_t)N * cnn_layer_out_count(L);
    const cnn_impl *impls = L->op == CNN_OP_CONV ? conv_impls : L->op == CNN_OP_RELU ? relu_impls
                            : L->op == CNN_OP_POOL ? pool_impls : one_impl;
    const int nimpl = L->op == CNN_OP_CONV ? 3 : L->op == CNN_OP_RELU ? 4 : L->op == CNN_OP_POOL ? 3 : 1;
    const cnn_pass *passes = L->op == CNN_OP_CONV || L->op == CNN_OP_LINEAR ? pass_wx : pass_fb;
    const int npass = L->op == CNN_OP_CONV || L->op == CNN_OP_LINEAR ? 3 : 2;
    mlsys_rng_seed(&rng, 0x5EED0000u + (uint64_t)li);
    for (j = 0; j < nin; j++) B.x[j] = (float)mlsys_rng_normal(&rng);
    for (j = 0; j < nout; j++) B.dy[j] = (float)mlsys_rng_normal(&rng);
    for (a = 0; a < nimpl; a++)
      for (b = 0; b < npass; b++) {
        cnn_impl_cost *c;
        if (impls[a] == CNN_IMPL_IM2COL_T && passes[b] != CNN_PASS_BACKWARD_INPUT) continue;   /* input grad only */
        c = n < cap ? &out[n] : NULL;
        n++;
        if (!c) continue;
        memset(c, 0, sizeof *c);
        c->layer = li;
        c->pass = passes[b];
        c->impl = impls[a];
        if (impls[a] == CNN_IMPL_IM2COL) c->workspace = cnn_conv_im2col_workspace(N, L->c, L->h, L->w, L->k, 3, 3, 1);
        if (impls[a] == CNN_IMPL_IM2COL_T)
          c->workspace = cnn_conv_im2col_t_workspace(N, L->c, L->h, L->w, L->k, 3, 3, 1);
        if (impls[a] == CNN_IMPL_RELU_MASK1) c->intermediate = cnn_relu_mask_bytes(nin);
        if (impls[a] == CNN_IMPL_POOL_IDX8) c->intermediate = nout;
        if (impls[a] == CNN_IMPL_POOL_IDX64) c->intermediate = nout * sizeof(int64_t);
        for (rep = 0; rep < reps; rep++) {
          double t0;
          if (impls[a] == CNN_IMPL_RELU_INPLACE && passes[b] == CNN_PASS_FORWARD)
            memcpy(B.y, B.x, nin * sizeof(float));      /* untimed: give the in-place forward its input again */
          t0 = mlsys_now();
          cnn_impl_run(&B, li, passes[b], impls[a]);
          t[rep] = mlsys_now() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cnn_impl_cmp_double);
        c->seconds = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
      }
  }
  if (n > cap) st = mlsys_set_error(MLSYS_ERR_ARG, "cnn_impl_time: %d rows, room for %d", n, cap);
done:
  *count = n;
  mlsys_free(B.x); mlsys_free(B.y); mlsys_free(B.dy); mlsys_free(B.dx); mlsys_free(B.dw); mlsys_free(B.db);
  mlsys_free(B.idx); mlsys_free(B.bytes); mlsys_free(B.ws); mlsys_free(t);
  return st;
}

#endif /* REMAT_CNN_IMPLS_H */
