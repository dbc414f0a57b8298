/* examples/cnn_kernels.h — general CPU kernels (any kernel size, stride, padding, dilation, groups) for the layers
   `mlsys remat calibrate` times (cli/remat_calibrate.c): Conv2d direct and by im2col + GEMM, forward and backward
   (data dx; filter dw, db); Linear forward direct and from a packed copy of its input, backward direct and from a
   transposed copy of its weight; ReLU out of place / in place / with a 1-bit mask, MaxPool2d with int64 or 8-bit
   indices. Plain C over NCHW float arrays, everything static; no dependency beyond the C library.

   Why a separate header: examples/remat_cnn_impls.h and remat_cnn_layers.h are SmallCNN's kernels (3x3, stride 1,
   2x2/2 pools) whose bit-identity with one another the MONeT executor tests rely on; they stay as they are. These
   are their generalisation, used by the CLI, and tests/test_cnn_kernels.c checks them against naive references
   (double-precision formulas written in the test; the backward also against finite differences of the forward)
   and, at SmallCNN's geometry, against the existing functions bit for bit (the same summation order: forward
   conv = b + sum over (c, r, s); pool = the first maximum, NaN wins).

   Workspace convention: the im2col kernels hold one sample's columns for one group (cnn_k_conv_im2col_workspace),
   reused across samples and groups, so their workspace does not grow with the batch; the packed Linear forward
   copies the whole input (grows with the batch), its backward the weight (does not).

   Shapes: x [N, C, H, W], w [K, C/groups, KH, KW], y [N, K, OH, OW] with OH = (H + 2 PH - DH (KH - 1) - 1) / SH + 1
   (cnn_k_out_dim), as torch.nn.Conv2d and MaxPool2d (ceil_mode = False) define them. */
#ifndef CNN_KERNELS_H
#define CNN_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  int N, C, H, W;           /* input */
  int K;                    /* output channels (pools: = C) */
  int KH, KW, SH, SW, PH, PW, DH, DW;
  int groups;               /* conv: C and K divisible by it */
} cnn_k_geom;

/* One output dimension; <= 0 when the window does not fit. */
static long cnn_k_out_dim(long in, long k, long s, long p, long d) {
  long span = d * (k - 1) + 1;
  if (s <= 0 || in + 2 * p < span) return 0;
  return (in + 2 * p - span) / s + 1;
}
static long cnn_k_oh(const cnn_k_geom *g) { return cnn_k_out_dim(g->H, g->KH, g->SH, g->PH, g->DH); }
static long cnn_k_ow(const cnn_k_geom *g) { return cnn_k_out_dim(g->W, g->KW, g->SW, g->PW, g->DW); }

/* 1 when the geometry is usable by the conv kernels (positive sizes, channels divisible by groups). */
static int cnn_k_conv_ok(const cnn_k_geom *g) {
  return g->N > 0 && g->C > 0 && g->H > 0 && g->W > 0 && g->K > 0 && g->KH > 0 && g->KW > 0 && g->SH > 0 &&
         g->SW > 0 && g->PH >= 0 && g->PW >= 0 && g->DH > 0 && g->DW > 0 && g->groups > 0 && g->C % g->groups == 0 &&
         g->K % g->groups == 0 && cnn_k_oh(g) > 0 && cnn_k_ow(g) > 0;
}

/* ---- Conv2d, direct: y[n,k,i,j] = b[k] + sum over (c, r, s) of w[k,c,r,s] x[n, g*Cg + c, i SH + r DH - PH,
   j SW + s DW - PW] (c within k's group; positions outside the plane skipped). b may be NULL (0). ---- */
static void cnn_k_conv2d_direct(float *y, const float *x, const float *w, const float *b, const cnn_k_geom *g) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  int n, k, c, r, s;
  long i, j;
  for (n = 0; n < g->N; n++)
    for (k = 0; k < g->K; k++) {
      const int c0 = (k / Kg) * Cg;
      for (i = 0; i < OH; i++)
        for (j = 0; j < OW; j++) {
          float acc = b ? b[k] : 0.0f;
          for (c = 0; c < Cg; c++)
            for (r = 0; r < g->KH; r++) {
              long h = i * g->SH + (long)r * g->DH - g->PH;
              if (h < 0 || h >= g->H) continue;
              for (s = 0; s < g->KW; s++) {
                long v = j * g->SW + (long)s * g->DW - g->PW;
                if (v < 0 || v >= g->W) continue;
                acc += w[(((size_t)k * Cg + c) * g->KH + r) * g->KW + s] *
                       x[(((size_t)n * g->C + c0 + c) * g->H + h) * g->W + v];
              }
            }
          y[(((size_t)n * g->K + k) * OH + i) * OW + j] = acc;
        }
    }
}

/* ---- Conv2d by im2col + GEMM. Workspace: one sample's column matrix for one group, Cg·KH·KW × OH·OW floats
   (Cg = C/groups), reused group after group and sample after sample (so it grows with neither N nor groups):
   col[((c KH + r) KW + s)][i OW + j] = x[c0 + c, i SH + r DH - PH, j SW + s DW - PW] (0 at padding), the input
   value the direct loop multiplies by w[k, c, r, s] for the group's output channels k. ---- */
static size_t cnn_k_conv_im2col_workspace(const cnn_k_geom *g) {
  if (!cnn_k_conv_ok(g)) return 0;
  return (size_t)(g->C / g->groups) * (size_t)g->KH * (size_t)g->KW * (size_t)cnn_k_oh(g) * (size_t)cnn_k_ow(g) *
         sizeof(float);
}
/* Channels c0 .. c0+nc-1 of one sample x (C·H·W) into col (nc·KH·KW rows of OH·OW). */
static void cnn_k_im2col(float *col, const float *x, const cnn_k_geom *g, int c0, int nc) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  int c, r, s;
  long i, j;
  for (c = 0; c < nc; c++)
    for (r = 0; r < g->KH; r++)
      for (s = 0; s < g->KW; s++) {
        float *row = col + (((size_t)c * g->KH + r) * g->KW + s) * (size_t)(OH * OW);
        for (i = 0; i < OH; i++) {
          long h = i * g->SH + (long)r * g->DH - g->PH;
          float *o = row + (size_t)(i * OW);
          const float *xr = x + ((size_t)(c0 + c) * g->H + (size_t)(h < 0 ? 0 : h)) * g->W;
          if (h < 0 || h >= g->H) {
            for (j = 0; j < OW; j++) o[j] = 0.0f;
            continue;
          }
          for (j = 0; j < OW; j++) {
            long v = j * g->SW + (long)s * g->DW - g->PW;
            o[j] = v >= 0 && v < g->W ? xr[v] : 0.0f;
          }
        }
      }
}
/* The adjoint of cnn_k_im2col: dx[c0 + c, h, v] += every col entry that im2col read from there (padding dropped). */
static void cnn_k_col2im_add(float *dx, const float *col, const cnn_k_geom *g, int c0, int nc) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  int c, r, s;
  long i, j;
  for (c = 0; c < nc; c++)
    for (r = 0; r < g->KH; r++)
      for (s = 0; s < g->KW; s++) {
        const float *row = col + (((size_t)c * g->KH + r) * g->KW + s) * (size_t)(OH * OW);
        for (i = 0; i < OH; i++) {
          long h = i * g->SH + (long)r * g->DH - g->PH;
          float *xr;
          if (h < 0 || h >= g->H) continue;
          xr = dx + ((size_t)(c0 + c) * g->H + (size_t)h) * g->W;
          for (j = 0; j < OW; j++) {
            long v = j * g->SW + (long)s * g->DW - g->PW;
            if (v >= 0 && v < g->W) xr[v] += row[i * OW + j];
          }
        }
      }
}
/* The direct loop's output (the same terms in the same (c, r, s) order, padding contributing w·0: bit-identical
   for finite weights and biases that are not -0.0, as examples/remat_cnn_impls.h §1 explains). ws: at least
   cnn_k_conv_im2col_workspace bytes; returns -1 (nothing written) when smaller, else 0. */
static int cnn_k_conv2d_im2col(float *y, const float *x, const float *w, const float *b, const cnn_k_geom *g, void *ws,
                               size_t ws_bytes) {
  const size_t P = (size_t)(cnn_k_oh(g) * cnn_k_ow(g));
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  const size_t CRSg = (size_t)Cg * g->KH * g->KW;
  float *col = (float *)ws;
  size_t q, p;
  int n, k, grp;
  if (!cnn_k_conv_ok(g) || ws_bytes < cnn_k_conv_im2col_workspace(g)) return -1;
  for (n = 0; n < g->N; n++)
    for (grp = 0; grp < g->groups; grp++) {
      cnn_k_im2col(col, x + (size_t)n * g->C * g->H * g->W, g, grp * Cg, Cg);
      for (k = grp * Kg; k < (grp + 1) * Kg; k++) {
        float *yk = y + ((size_t)n * g->K + k) * P;
        const float *wk = w + (size_t)k * CRSg;
        const float bk = b ? b[k] : 0.0f;
        for (p = 0; p < P; p++) yk[p] = bk;
        for (q = 0; q < CRSg; q++) {
          const float wq = wk[q];
          const float *cq = col + q * P;
          for (p = 0; p < P; p++) yk[p] += wq * cq[p];
        }
      }
    }
  return 0;
}

/* ---- Conv2d backward, given dy [N, K, OH, OW]: data dx = the transpose of the conv applied to dy; filter
   dw[k,c,r,s] = sum over (n, i, j) of dy[n,k,i,j] x[n, c0 + c, h, v], db[k] = sum of dy[n,k,.,.]. Every output is
   overwritten (not accumulated into); any output pointer may be NULL (e.g. no dx for a first layer).
   "direct": loops over the forward's terms, scattering (dx) or reducing (dw) each; no workspace.
   "im2col": per sample and group, dw += dy · colᵀ over im2col's columns, and dx += col2im(wᵀ · dy), the column
   matrix built in the workspace (the forward's buffer, cnn_k_conv_im2col_workspace bytes: filter then data reuse
   it in turn). The two algorithms sum in different orders: equal up to rounding, not bit for bit. ---- */
static void cnn_k_conv2d_backward_data_direct(float *dx, const float *w, const float *dy, const cnn_k_geom *g) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  int n, k, c, r, s;
  long i, j;
  memset(dx, 0, (size_t)g->N * g->C * g->H * g->W * sizeof(float));
  for (n = 0; n < g->N; n++)
    for (k = 0; k < g->K; k++) {
      const int c0 = (k / Kg) * Cg;
      for (i = 0; i < OH; i++)
        for (j = 0; j < OW; j++) {
          const float d = dy[(((size_t)n * g->K + k) * OH + i) * OW + j];
          for (c = 0; c < Cg; c++)
            for (r = 0; r < g->KH; r++) {
              long h = i * g->SH + (long)r * g->DH - g->PH;
              if (h < 0 || h >= g->H) continue;
              for (s = 0; s < g->KW; s++) {
                long v = j * g->SW + (long)s * g->DW - g->PW;
                if (v < 0 || v >= g->W) continue;
                dx[(((size_t)n * g->C + c0 + c) * g->H + h) * g->W + v] +=
                    w[(((size_t)k * Cg + c) * g->KH + r) * g->KW + s] * d;
              }
            }
        }
    }
}
static void cnn_k_conv2d_backward_filter_direct(float *dw, float *db, const float *x, const float *dy,
                                                const cnn_k_geom *g) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  int n, k, c, r, s;
  long i, j;
  for (k = 0; k < g->K; k++) {
    const int c0 = (k / Kg) * Cg;
    if (db) {
      float acc = 0.0f;
      for (n = 0; n < g->N; n++)
        for (i = 0; i < OH * OW; i++) acc += dy[((size_t)n * g->K + k) * (size_t)(OH * OW) + (size_t)i];
      db[k] = acc;
    }
    if (dw)
      for (c = 0; c < Cg; c++)
        for (r = 0; r < g->KH; r++)
          for (s = 0; s < g->KW; s++) {
            float acc = 0.0f;
            for (n = 0; n < g->N; n++)
              for (i = 0; i < OH; i++) {
                long h = i * g->SH + (long)r * g->DH - g->PH;
                if (h < 0 || h >= g->H) continue;
                for (j = 0; j < OW; j++) {
                  long v = j * g->SW + (long)s * g->DW - g->PW;
                  if (v < 0 || v >= g->W) continue;
                  acc += dy[(((size_t)n * g->K + k) * OH + i) * OW + j] *
                         x[(((size_t)n * g->C + c0 + c) * g->H + h) * g->W + v];
                }
              }
            dw[(((size_t)k * Cg + c) * g->KH + r) * g->KW + s] = acc;
          }
  }
}
static void cnn_k_conv2d_backward_direct(float *dx, float *dw, float *db, const float *x, const float *w,
                                         const float *dy, const cnn_k_geom *g) {
  if (dw || db) cnn_k_conv2d_backward_filter_direct(dw, db, x, dy, g);
  if (dx) cnn_k_conv2d_backward_data_direct(dx, w, dy, g);
}
/* ws: at least cnn_k_conv_im2col_workspace bytes; -1 (nothing written) when smaller, else 0. */
static int cnn_k_conv2d_backward_data_im2col(float *dx, const float *w, const float *dy, const cnn_k_geom *g,
                                             void *ws, size_t ws_bytes) {
  const size_t P = (size_t)(cnn_k_oh(g) * cnn_k_ow(g));
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  const size_t CRSg = (size_t)Cg * g->KH * g->KW;
  float *col = (float *)ws;
  size_t q, p;
  int n, k, grp;
  if (!cnn_k_conv_ok(g) || ws_bytes < cnn_k_conv_im2col_workspace(g)) return -1;
  memset(dx, 0, (size_t)g->N * g->C * g->H * g->W * sizeof(float));
  for (n = 0; n < g->N; n++)
    for (grp = 0; grp < g->groups; grp++) {
      memset(col, 0, CRSg * P * sizeof(float));
      for (k = grp * Kg; k < (grp + 1) * Kg; k++) {   /* col = wᵀ · dy over the group's output channels */
        const float *dk = dy + ((size_t)n * g->K + k) * P, *wk = w + (size_t)k * CRSg;
        for (q = 0; q < CRSg; q++) {
          const float wq = wk[q];
          float *cq = col + q * P;
          for (p = 0; p < P; p++) cq[p] += wq * dk[p];
        }
      }
      cnn_k_col2im_add(dx + (size_t)n * g->C * g->H * g->W, col, g, grp * Cg, Cg);
    }
  return 0;
}
static int cnn_k_conv2d_backward_filter_im2col(float *dw, float *db, const float *x, const float *dy,
                                               const cnn_k_geom *g, void *ws, size_t ws_bytes) {
  const size_t P = (size_t)(cnn_k_oh(g) * cnn_k_ow(g));
  const int Cg = g->C / g->groups, Kg = g->K / g->groups;
  const size_t CRSg = (size_t)Cg * g->KH * g->KW;
  float *col = (float *)ws;
  size_t q, p;
  int n, k, grp;
  if (!cnn_k_conv_ok(g) || ws_bytes < cnn_k_conv_im2col_workspace(g)) return -1;
  if (dw) memset(dw, 0, (size_t)g->K * CRSg * sizeof(float));
  if (db) memset(db, 0, (size_t)g->K * sizeof(float));
  for (n = 0; n < g->N; n++) {
    if (db)
      for (k = 0; k < g->K; k++) {
        const float *dk = dy + ((size_t)n * g->K + k) * P;
        for (p = 0; p < P; p++) db[k] += dk[p];
      }
    if (dw)
      for (grp = 0; grp < g->groups; grp++) {
        cnn_k_im2col(col, x + (size_t)n * g->C * g->H * g->W, g, grp * Cg, Cg);
        for (k = grp * Kg; k < (grp + 1) * Kg; k++) {   /* dw[k] += dy[k] · colᵀ */
          const float *dk = dy + ((size_t)n * g->K + k) * P;
          float *wk = dw + (size_t)k * CRSg;
          for (q = 0; q < CRSg; q++) {
            const float *cq = col + q * P;
            float acc = 0.0f;
            for (p = 0; p < P; p++) acc += dk[p] * cq[p];
            wk[q] += acc;
          }
        }
      }
  }
  return 0;
}
static int cnn_k_conv2d_backward_im2col(float *dx, float *dw, float *db, const float *x, const float *w,
                                        const float *dy, const cnn_k_geom *g, void *ws, size_t ws_bytes) {
  if (!cnn_k_conv_ok(g) || ws_bytes < cnn_k_conv_im2col_workspace(g)) return -1;
  if (dw || db) (void)cnn_k_conv2d_backward_filter_im2col(dw, db, x, dy, g, ws, ws_bytes);
  if (dx) (void)cnn_k_conv2d_backward_data_im2col(dx, w, dy, g, ws, ws_bytes);
  return 0;
}

/* ---- Linear: y[n,o] = b[o] + sum_i w[o,i] x[n,i] (w [O, I], torch's layout). "packed": the same loop over a
   copy of x in the workspace (N·I floats): what a GEMM library's packing costs in memory and time. ---- */
static void cnn_k_linear_direct(float *y, const float *x, const float *w, const float *b, long N, long I, long O) {
  long n, o, i;
  for (n = 0; n < N; n++)
    for (o = 0; o < O; o++) {
      float acc = b ? b[o] : 0.0f;
      for (i = 0; i < I; i++) acc += w[(size_t)(o * I + i)] * x[(size_t)(n * I + i)];
      y[(size_t)(n * O + o)] = acc;
    }
}
static size_t cnn_k_linear_packed_workspace(long N, long I) { return (size_t)N * (size_t)I * sizeof(float); }
static int cnn_k_linear_packed(float *y, const float *x, const float *w, const float *b, long N, long I, long O,
                               void *ws, size_t ws_bytes) {
  if (ws_bytes < cnn_k_linear_packed_workspace(N, I)) return -1;
  memcpy(ws, x, cnn_k_linear_packed_workspace(N, I));
  cnn_k_linear_direct(y, (const float *)ws, w, b, N, I, O);
  return 0;
}

/* ---- Linear backward, given dy [N, O]: dx[n,i] = sum_o dy[n,o] w[o,i], dw[o,i] = sum_n dy[n,o] x[n,i],
   db[o] = sum_n dy[n,o]; outputs overwritten, any may be NULL. "direct": one reduction per output, reading w and
   x down their columns. "packed": dx from a transposed copy of w in the workspace (I·O floats, the weight's size
   whatever the batch) so its reduction runs along contiguous rows, and dw accumulated row by row (dw[o,:] +=
   dy[n,o] x[n,:]), both streaming memory in order: the layout change a GEMM library's packing makes. ---- */
static void cnn_k_linear_backward_direct(float *dx, float *dw, float *db, const float *x, const float *w,
                                         const float *dy, long N, long I, long O) {
  long n, o, i;
  if (dx)
    for (n = 0; n < N; n++)
      for (i = 0; i < I; i++) {
        float acc = 0.0f;
        for (o = 0; o < O; o++) acc += dy[(size_t)(n * O + o)] * w[(size_t)(o * I + i)];
        dx[(size_t)(n * I + i)] = acc;
      }
  if (dw)
    for (o = 0; o < O; o++)
      for (i = 0; i < I; i++) {
        float acc = 0.0f;
        for (n = 0; n < N; n++) acc += dy[(size_t)(n * O + o)] * x[(size_t)(n * I + i)];
        dw[(size_t)(o * I + i)] = acc;
      }
  if (db)
    for (o = 0; o < O; o++) {
      float acc = 0.0f;
      for (n = 0; n < N; n++) acc += dy[(size_t)(n * O + o)];
      db[o] = acc;
    }
}
static size_t cnn_k_linear_backward_packed_workspace(long I, long O) { return (size_t)I * (size_t)O * sizeof(float); }
static int cnn_k_linear_backward_packed(float *dx, float *dw, float *db, const float *x, const float *w,
                                        const float *dy, long N, long I, long O, void *ws, size_t ws_bytes) {
  float *wt = (float *)ws;
  long n, o, i;
  if (ws_bytes < cnn_k_linear_backward_packed_workspace(I, O)) return -1;
  if (dx) {
    for (o = 0; o < O; o++)
      for (i = 0; i < I; i++) wt[(size_t)(i * O + o)] = w[(size_t)(o * I + i)];
    for (n = 0; n < N; n++)
      for (i = 0; i < I; i++) {
        const float *wi = wt + (size_t)(i * O), *dn = dy + (size_t)(n * O);
        float acc = 0.0f;
        for (o = 0; o < O; o++) acc += dn[o] * wi[o];
        dx[(size_t)(n * I + i)] = acc;
      }
  }
  if (dw) {
    memset(dw, 0, (size_t)(O * I) * sizeof(float));
    for (n = 0; n < N; n++)
      for (o = 0; o < O; o++) {
        const float d = dy[(size_t)(n * O + o)], *xn = x + (size_t)(n * I);
        float *wo = dw + (size_t)(o * I);
        for (i = 0; i < I; i++) wo[i] += d * xn[i];
      }
  }
  if (db) {
    for (o = 0; o < O; o++) db[o] = 0.0f;
    for (n = 0; n < N; n++)
      for (o = 0; o < O; o++) db[o] += dy[(size_t)(n * O + o)];
  }
  return 0;
}

/* ---- ReLU: out of place, in place (y = x), and with a packed 1-bit mask of x > 0 (ceil(n/8) bytes), which is
   all MONeT's BinaryActReLU backward needs. ---- */
static void cnn_k_relu(float *y, const float *x, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
static size_t cnn_k_relu_mask_bytes(size_t n) { return (n + 7) / 8; }
static void cnn_k_relu_mask(float *y, uint8_t *mask, const float *x, size_t n) {
  size_t i;
  for (i = 0; i < n; i += 8) {
    size_t e = n - i < 8 ? n - i : 8, t;
    unsigned byte = 0;
    for (t = 0; t < e; t++) {
      const float v = x[i + t];
      const int on = v > 0.0f;
      byte |= (unsigned)on << t;
      y[i + t] = on ? v : 0.0f;
    }
    mask[i / 8] = (uint8_t)byte;
  }
}

/* ---- MaxPool2d (any window, stride, padding, dilation; padding never wins, as in PyTorch): y = the first maximum
   of the window in row-major order, the last NaN winning (PyTorch's CPU rule); idx64 = its position h·W + v in the plane (PyTorch's indices),
   or pos8 = its index r·KW + s inside the window (KH·KW <= 256). Either index pointer may be NULL. K is unused. ---- */
static int cnn_k_pool_ok(const cnn_k_geom *g) {
  return g->N > 0 && g->C > 0 && g->H > 0 && g->W > 0 && g->KH > 0 && g->KW > 0 && g->SH > 0 && g->SW > 0 &&
         g->PH >= 0 && g->PW >= 0 && 2 * g->PH <= g->KH && 2 * g->PW <= g->KW && g->DH > 0 && g->DW > 0 &&
         cnn_k_oh(g) > 0 && cnn_k_ow(g) > 0;
}
static void cnn_k_maxpool(float *y, int64_t *idx64, uint8_t *pos8, const float *x, const cnn_k_geom *g) {
  const long OH = cnn_k_oh(g), OW = cnn_k_ow(g);
  long p, i, j;
  int r, s;
  for (p = 0; p < (long)g->N * g->C; p++) {
    const float *plane = x + (size_t)p * g->H * g->W;
    for (i = 0; i < OH; i++)
      for (j = 0; j < OW; j++) {
        float best = -INFINITY;
        int64_t at = -1;
        int win = 0;
        for (r = 0; r < g->KH; r++) {
          long h = i * g->SH + (long)r * g->DH - g->PH;
          if (h < 0 || h >= g->H) continue;
          for (s = 0; s < g->KW; s++) {
            long v = j * g->SW + (long)s * g->DW - g->PW;
            float val;
            if (v < 0 || v >= g->W) continue;
            val = plane[h * g->W + v];
            if (at < 0 || val > best || val != val) {   /* PyTorch's rule: a later NaN wins too */
              best = val;
              at = (int64_t)h * g->W + v;
              win = r * g->KW + s;
            }
          }
        }
        y[((size_t)p * OH + i) * OW + j] = best;
        if (idx64) idx64[((size_t)p * OH + i) * OW + j] = at;
        if (pos8) pos8[((size_t)p * OH + i) * OW + j] = (uint8_t)win;
      }
  }
}

#endif /* CNN_KERNELS_H */
