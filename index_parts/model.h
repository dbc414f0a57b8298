/* index_parts/model.h — part of mlsys_index.h (see its section list). Declarations first, then the implementation.

   5. The throughput predictor (thesis §6.3.3, spec B3.5).
   The thesis states only the shape of MAPLE's predictor: a CNN turns "a subset of the trace as an image" (256x256,
   §6.5.1) into a trace embedding; the configuration knobs are "discretised into buckets" and embedded; the two are
   added/concatenated and a "multi-layered neural network classifier" predicts the throughput of the pair. Everything
   concrete here is the spec's B3.5 proposal:
     - trace image: 2 channels (lookups, inserts) x 256 x 256; x = time (operation index), y = key RANK among the
       bulk-loaded sample (the thesis blames fb's misprediction on outlier keys breaking a value scale); pixel =
       log1p(count) / max;
     - CNN: 4 x [conv3x3 pad 1 -> ReLU -> maxpool 2] with 16, 32, 64, 64 channels, global average pool -> 64-d;
     - configuration embedding: the sum of one 64-d table per knob (node type, msi, msh, mf_size, mnf, nf,
       expected_insert_frac), each knob bucketed on the grid values, with an "n/a" bucket for knobs the leaf type does
       not use and a "cost model" bucket for ALEX's rule (msi/msh = 0); off-grid values go to the nearest bucket;
     - MLP on [trace 64 | config 64]: 128 -> 128 ReLU -> 64 ReLU -> 16 logits over log-spaced throughput bins on
       [0.1, 50] Mops/s, softmax cross-entropy against a soft target (the mass split between the two bins around
       log(mops)); the prediction is exp(E[log bin centre]);
     - Adam (lr 1e-3, 30 epochs by default).
   Plus the spec's cheaper fallback, a k-NN over summary features of the trace (insert fraction, skew, key-gap entropy,
   PLA segments at eps = 32 as in GRE's hardness metric), and the default configuration grid.

   Training cost: the CNN is ~0.4 GFLOP forward per 256x256 image; all configurations of a trace share one CNN
   forward/backward per step. Convolutions are im2col + a register-tiled GEMM written with GCC/Clang vector extensions
   (plain loops elsewhere). Images of a batch may run on mlsys_pool threads; every image's gradient goes to its own
   buffer and the buffers are summed in image order, so the result is bit-identical for any thread count.
   `cnn_epochs` lets the last epochs train only the embedding tables and the MLP on cached trace embeddings
   (a cheap head fit; the CNN is frozen then). */
#ifndef MLSYS_INDEX_MODEL_H
#define MLSYS_INDEX_MODEL_H
/* Only when this part is included on its own: from mlsys_index.h the shared types are already there, and including it
   again would re-enter this part (its part includes sit outside its guard) and compile the implementation below before
   these declarations. */
#ifndef MLSYS_INDEX_H
#include "mlsys_index.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

#define MLSYS_INDEX_IMG 256        /* trace image side (thesis §6.5.1) */
#define MLSYS_INDEX_NBINS 16       /* throughput classes (spec B3.5) */
#define MLSYS_INDEX_BIN_LO 0.1     /* Mops/s, centre of the lowest bin */
#define MLSYS_INDEX_BIN_HI 50.0    /* Mops/s, centre of the highest bin */

/* The configuration grid of spec B3.5: ALEX's cost-model GA (msi = msh = 0) first, then GA msi {1,1.5,2,3,4,8} x
   msh {1,4,16,64,128} (30), then FLog mf_size {16..1024 powers of 2} x mnf {4,16,64,256} x nf {1,2,4,8} with
   nf <= mnf (105: nf = 8 with mnf = 4 is not a valid FLog); 136 entries. GA entries carry expected_insert_frac = eif
   (the workload's insert fraction, as the thesis runs ALEX). Caller frees *cfgs with mlsys_free. */
MLSYS_DEF mlsys_status mlsys_index_grid_default(double eif, mlsys_index_config **cfgs, size_t *n);

/* Trace image (spec B3.5): img[c*256*256 + y*256 + x], channel c = 0 lookups, 1 inserts; x = operation index i of the
   prefix in 256 bins (i*256/n); y = rank of the key among sorted_sample (lower bound, 0..m) in 256 bins
   (rank*256/(m+1)); pixel = log1p(count) / (max log1p(count) over the image); an empty prefix gives a zero image.
   sorted_sample must be non-decreasing (checked); m = 0 puts every key in row 0. */
MLSYS_DEF mlsys_status mlsys_index_trace_image(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m,
                                               float *img /* 2*256*256 */);

typedef struct mlsys_index_model mlsys_index_model;
MLSYS_DEF mlsys_status mlsys_index_model_create(uint64_t seed, mlsys_index_model **out);   /* random init (He) */
/* Model file (little-endian): "MLSYSIXM", u32 version (1), u32 tensor count (15), 15 x u32[4] shapes, the float32
   weights in that order, u32 CRC-32C of everything before it. The loader checks each of these and names the first
   problem (bad magic, unsupported version, wrong shape, truncated, trailing bytes, CRC mismatch, non-finite weight). */
MLSYS_DEF mlsys_status mlsys_index_model_load(const char *path, mlsys_index_model **out);
MLSYS_DEF mlsys_status mlsys_index_model_parse(const void *buf, size_t len, const char *name, mlsys_index_model **out);
MLSYS_DEF mlsys_status mlsys_index_model_save(const mlsys_index_model *m, const char *path);  /* path.tmp + rename */
MLSYS_DEF void mlsys_index_model_free(mlsys_index_model *m);
/* Predicted throughput in Mops/s of each configuration on the trace whose image is img (the CNN runs once). */
MLSYS_DEF mlsys_status mlsys_index_model_predict(const mlsys_index_model *m, const float *img, const mlsys_index_config *cfgs,
                                                 size_t n, double *mops);

typedef struct {                      /* one training trace: its image and measured throughput per configuration */
  const float *img;                   /* 2*256*256 (mlsys_index_trace_image) */
  const mlsys_index_config *cfgs; const double *mops; size_t n;   /* mops > 0 */
  float features[8];                  /* summary features for the k-NN fallback (mlsys_index_trace_features) */
} mlsys_index_train_item;
typedef struct {
  int epochs;          /* 0 → 30 */
  double lr;           /* Adam step; 0 → 1e-3 */
  int batch;           /* traces (images) per Adam step, all their configurations included; 0 → 32 */
  uint64_t seed;       /* shuffling; 0 → 1 */
  int threads;         /* images of a batch in parallel; 0 → 1. Results do not depend on it. */
  /* added beyond the B3.5 brief: */
  double holdout;      /* the LAST round(holdout * n_items) items are held out (put held-out datasets last) and
                          reported on; 0 → none (the held-out fields of the report are then NaN) */
  int cnn_epochs;      /* epochs (the first ones) that also train the CNN; the others train the embedding tables and
                          the MLP on cached trace embeddings, ~100x cheaper. 0 → all epochs, < 0 → none */
} mlsys_index_train_opts;
typedef struct {
  double train_loss;        /* mean cross-entropy over the last epoch's steps (per trace) */
  double heldout_mae_log;   /* mean |log pred - log measured| over held-out (trace, config) pairs */
  double baseline_mae_log;  /* the same for "each configuration's mean log throughput over the training traces" */
  int epochs_run;
} mlsys_index_train_report;
MLSYS_DEF mlsys_status mlsys_index_model_train(mlsys_index_model *m, const mlsys_index_train_item *items, size_t n_items,
                                               const mlsys_index_train_opts *o, mlsys_index_train_report *rep);

/* k-NN fallback (spec B3.5 "cheaper fallback") over 8 summary features of a trace prefix and its bulk-load sample:
   [0] insert fraction, [1] lookup skew (1 - normalised entropy of lookup ranks in 64 bins), [2] insert skew (same for
   inserts), [3] key-gap entropy of the sample (normalised entropy of floor(log2 gap)), [4] log2(1 + PLA segments of
   the sample at eps = 32, greedy cone), [5] fraction of inserts outside the sample's key range, [6] correlation of
   operation index and key rank, [7] mean |rank change| between consecutive operations / (m + 1). Never fails: bad
   input gives zeros. */
MLSYS_DEF void mlsys_index_trace_features(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m,
                                          float features[8]);
typedef struct mlsys_index_knn mlsys_index_knn;
/* k ≤ 0 → 5. Distance: Euclidean over the features on fixed scales ([4] divided by 16, the rest as they are). A
   configuration's prediction is the geometric mean of its measured throughput on the k nearest items that measured it
   (the grid entry, its expected_insert_frac ignored: the insert-fraction feature carries it); a configuration no item
   measured uses the nearest measured one by bucket distance. */
MLSYS_DEF mlsys_status mlsys_index_knn_fit(const mlsys_index_train_item *items, size_t n_items, int k, mlsys_index_knn **out);
MLSYS_DEF mlsys_status mlsys_index_knn_predict(const mlsys_index_knn *kn, const float features[8], const mlsys_index_config *cfgs,
                                               size_t n, double *mops);
MLSYS_DEF void mlsys_index_knn_free(mlsys_index_knn *kn);

#ifdef __cplusplus
}
#endif
#define MLSYS_INDEX_MODEL_DECLS_DONE
#endif /* MLSYS_INDEX_MODEL_H */

#if defined(MLSYS_INDEX_IMPLEMENTATION) && defined(MLSYS_INDEX_MODEL_DECLS_DONE)
#ifndef MLSYS_INDEX_MODEL_IMPL
#define MLSYS_INDEX_MODEL_IMPL
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
   5.1 Parameters: one float array, 15 tensors in file order
   --------------------------------------------------------------------------------------------------------------- */
/* Embedding rows per knob (spec B3.5 buckets = grid values, plus "n/a" and "cost model"):
   type 2 | msi: n/a, cost, 1,1.5,2,3,4,8 | msh: n/a, cost, 1,4,16,64,128 | mf_size: n/a, 16..1024 | mnf: n/a, 4,16,64,256
   | nf: n/a, 1,2,4,8 | eif: n/a, 0, 0.1, ..., 1 */
#define MLSYS__INDEX_MDL_NKNOB 7
#define MLSYS__INDEX_MDL_EMB_ROWS 47
#define MLSYS__INDEX_MDL_E 64    /* embedding width */
#define MLSYS__INDEX_MDL_NT 15   /* tensors */
static const int mlsys__index_mdl_knob_base[MLSYS__INDEX_MDL_NKNOB] = {0, 2, 10, 17, 25, 30, 35};
static const double mlsys__index_mdl_msi_v[6] = {1, 1.5, 2, 3, 4, 8};
static const double mlsys__index_mdl_msh_v[5] = {1, 4, 16, 64, 128};
static const double mlsys__index_mdl_mf_v[7] = {16, 32, 64, 128, 256, 512, 1024};
static const double mlsys__index_mdl_mnf_v[4] = {4, 16, 64, 256};
static const double mlsys__index_mdl_nf_v[4] = {1, 2, 4, 8};
/* CNN blocks: input channels, output channels */
static const int mlsys__index_mdl_ci[4] = {2, 16, 32, 64}, mlsys__index_mdl_co[4] = {16, 32, 64, 64};

typedef struct { const char *name; uint32_t dim[4]; uint32_t fan_in; } mlsys__index_mdl_tensor;
static const mlsys__index_mdl_tensor mlsys__index_mdl_tensors[MLSYS__INDEX_MDL_NT] = {
    {"conv1.weight", {16, 2, 3, 3}, 18},   {"conv1.bias", {16, 1, 1, 1}, 0},
    {"conv2.weight", {32, 16, 3, 3}, 144}, {"conv2.bias", {32, 1, 1, 1}, 0},
    {"conv3.weight", {64, 32, 3, 3}, 288}, {"conv3.bias", {64, 1, 1, 1}, 0},
    {"conv4.weight", {64, 64, 3, 3}, 576}, {"conv4.bias", {64, 1, 1, 1}, 0},
    {"config_embedding", {MLSYS__INDEX_MDL_EMB_ROWS, 64, 1, 1}, 0},
    {"fc1.weight", {128, 128, 1, 1}, 128}, {"fc1.bias", {128, 1, 1, 1}, 0},
    {"fc2.weight", {64, 128, 1, 1}, 128},  {"fc2.bias", {64, 1, 1, 1}, 0},
    {"fc3.weight", {16, 64, 1, 1}, 64},    {"fc3.bias", {16, 1, 1, 1}, 0}};
enum { MLSYS__INDEX_MDL_T_C1W = 0, MLSYS__INDEX_MDL_T_EMB = 8, MLSYS__INDEX_MDL_T_F1W = 9 };

struct mlsys_index_model {
  float *p;                       /* all parameters */
  size_t np;
  size_t off[MLSYS__INDEX_MDL_NT + 1];   /* tensor offsets into p */
};

static size_t mlsys__index_mdl_tensor_size(int t) {
  const uint32_t *d = mlsys__index_mdl_tensors[t].dim;
  return (size_t)d[0] * d[1] * d[2] * d[3];
}
static mlsys_index_model *mlsys__index_mdl_model_alloc(void) {
  mlsys_index_model *m = (mlsys_index_model *)mlsys_calloc(1, sizeof *m);
  int t;
  if (!m) return NULL;
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) m->off[t + 1] = m->off[t] + mlsys__index_mdl_tensor_size(t);
  m->np = m->off[MLSYS__INDEX_MDL_NT];
  m->p = (float *)mlsys_calloc(m->np, sizeof(float));
  if (!m->p) { mlsys_free(m); return NULL; }
  return m;
}

MLSYS_DEF void mlsys_index_model_free(mlsys_index_model *m) {
  if (!m) return;
  mlsys_free(m->p);
  mlsys_free(m);
}

MLSYS_DEF mlsys_status mlsys_index_model_create(uint64_t seed, mlsys_index_model **out) {
  mlsys_index_model *m;
  mlsys_rng r;
  int t;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "index model: out is NULL");
  *out = NULL;
  m = mlsys__index_mdl_model_alloc();
  if (!m) return MLSYS_ERR_NOMEM;
  mlsys_rng_seed(&r, seed);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) {
    size_t i, n = mlsys__index_mdl_tensor_size(t);
    float *w = m->p + m->off[t];
    /* He init for weights feeding a ReLU (biases 0); the 7 summed embedding rows get std 1/sqrt(7) so their sum has
       unit variance like the trace half of the MLP input. */
    double sd = mlsys__index_mdl_tensors[t].fan_in ? sqrt(2.0 / mlsys__index_mdl_tensors[t].fan_in) : t == MLSYS__INDEX_MDL_T_EMB ? 1.0 / sqrt(7.0) : 0;
    for (i = 0; i < n; i++) w[i] = (float)(sd * mlsys_rng_normal(&r));
  }
  *out = m;
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.2 Kernels: GEMMs (row-major) with GCC/Clang vector extensions; element-wise per output, so any vector width
   gives the same result for a given summation order
   --------------------------------------------------------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__INDEX_MDL_VEC 1
typedef float mlsys__index_mdl_v8 __attribute__((vector_size(32)));
/* macros, not functions: a 32-byte vector passed by value would change the ABI without AVX (-Wpsabi) */
#define mlsys__index_mdl_ldv(v, p) memcpy(&(v), (p), sizeof(mlsys__index_mdl_v8))
#define mlsys__index_mdl_st(p, v) memcpy((p), &(v), sizeof(mlsys__index_mdl_v8))
#define mlsys__index_mdl_bc(a) ((mlsys__index_mdl_v8){0, 0, 0, 0, 0, 0, 0, 0} + (a))
#define mlsys__index_mdl_hsum(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))
#endif

/* C[M x N] (+)= A[M x K] B[K x N]. Columns in strips of 16 (so a strip of B stays in L1 across all rows), rows in
   blocks of 4 with 8-wide accumulators in registers. */
static void mlsys__index_mdl_gemm_nn(int M, int N, int K, const float *A, const float *B, float *C, int accumulate) {
  int i, j, k;
  j = 0;
#ifdef MLSYS__INDEX_MDL_VEC
  for (; j + 8 <= N; j += 8) {
    for (i = 0; i + 4 <= M; i += 4) {
      const float *a0 = A + (size_t)i * K, *a1 = a0 + K, *a2 = a1 + K, *a3 = a2 + K;
      mlsys__index_mdl_v8 c0, c1, c2, c3;
      if (accumulate) {
        mlsys__index_mdl_ldv(c0, C + (size_t)i * N + j); mlsys__index_mdl_ldv(c1, C + (size_t)(i + 1) * N + j);
        mlsys__index_mdl_ldv(c2, C + (size_t)(i + 2) * N + j); mlsys__index_mdl_ldv(c3, C + (size_t)(i + 3) * N + j);
      } else {
        c0 = c1 = c2 = c3 = mlsys__index_mdl_bc(0.f);
      }
      for (k = 0; k < K; k++) {
        mlsys__index_mdl_v8 b;
        mlsys__index_mdl_ldv(b, B + (size_t)k * N + j);
        c0 += mlsys__index_mdl_bc(a0[k]) * b; c1 += mlsys__index_mdl_bc(a1[k]) * b;
        c2 += mlsys__index_mdl_bc(a2[k]) * b; c3 += mlsys__index_mdl_bc(a3[k]) * b;
      }
      mlsys__index_mdl_st(C + (size_t)i * N + j, c0); mlsys__index_mdl_st(C + (size_t)(i + 1) * N + j, c1);
      mlsys__index_mdl_st(C + (size_t)(i + 2) * N + j, c2); mlsys__index_mdl_st(C + (size_t)(i + 3) * N + j, c3);
    }
    for (; i < M; i++) {
      const float *a0 = A + (size_t)i * K;
      mlsys__index_mdl_v8 c0 = mlsys__index_mdl_bc(0.f), b;
      if (accumulate) mlsys__index_mdl_ldv(c0, C + (size_t)i * N + j);
      for (k = 0; k < K; k++) {
        mlsys__index_mdl_ldv(b, B + (size_t)k * N + j);
        c0 += mlsys__index_mdl_bc(a0[k]) * b;
      }
      mlsys__index_mdl_st(C + (size_t)i * N + j, c0);
    }
  }
#endif
  for (; j < N; j++)
    for (i = 0; i < M; i++) {
      float c = accumulate ? C[(size_t)i * N + j] : 0.f;
      for (k = 0; k < K; k++) c += A[(size_t)i * K + k] * B[(size_t)k * N + j];
      C[(size_t)i * N + j] = c;
    }
}

/* C[M x N] += A[M x L] B[N x L]^T: dot products along L (the conv weight gradient: L = pixels), L in blocks of 512 so
   the A and B blocks stay in cache; 2 x 2 tiles of 8-wide partial sums. */
static void mlsys__index_mdl_gemm_nt(int M, int N, int L, const float *A, const float *B, float *C) {
  int i, j, l0, l;
  for (l0 = 0; l0 < L; l0 += 512) {
    int l1 = l0 + 512 < L ? l0 + 512 : L;
    for (i = 0; i < M; i += 2) {
      int i2 = i + 1 < M;
      for (j = 0; j < N; j += 2) {
        int j2 = j + 1 < N;
        const float *a0 = A + (size_t)i * L, *a1 = A + (size_t)(i + i2) * L;
        const float *b0 = B + (size_t)j * L, *b1 = B + (size_t)(j + j2) * L;
        float s00 = 0, s01 = 0, s10 = 0, s11 = 0;
        l = l0;
#ifdef MLSYS__INDEX_MDL_VEC
        {
          mlsys__index_mdl_v8 v00 = mlsys__index_mdl_bc(0.f), v01 = v00, v10 = v00, v11 = v00;
          for (; l + 8 <= l1; l += 8) {
            mlsys__index_mdl_v8 x0, x1, y0, y1;
            mlsys__index_mdl_ldv(x0, a0 + l); mlsys__index_mdl_ldv(x1, a1 + l); mlsys__index_mdl_ldv(y0, b0 + l); mlsys__index_mdl_ldv(y1, b1 + l);
            v00 += x0 * y0; v01 += x0 * y1; v10 += x1 * y0; v11 += x1 * y1;
          }
          s00 = mlsys__index_mdl_hsum(v00); s01 = mlsys__index_mdl_hsum(v01); s10 = mlsys__index_mdl_hsum(v10); s11 = mlsys__index_mdl_hsum(v11);
        }
#endif
        for (; l < l1; l++) {
          s00 += a0[l] * b0[l]; s01 += a0[l] * b1[l]; s10 += a1[l] * b0[l]; s11 += a1[l] * b1[l];
        }
        C[(size_t)i * N + j] += s00;
        if (j2) C[(size_t)i * N + j + 1] += s01;
        if (i2) {
          C[(size_t)(i + 1) * N + j] += s10;
          if (j2) C[(size_t)(i + 1) * N + j + 1] += s11;
        }
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   5.3 CNN layers: im2col / col2im (3x3, pad 1), conv, ReLU+maxpool 2 fused (they commute), global average pool
   --------------------------------------------------------------------------------------------------------------- */
/* col[(c*9 + ky*3 + kx) * S*S + y*S + x] = in[c][y+ky-1][x+kx-1] (0 outside) */
static void mlsys__index_mdl_im2col(const float *in, int C, int S, float *col) {
  int c, ky, kx, y;
  size_t SS = (size_t)S * S;
  for (c = 0; c < C; c++)
    for (ky = 0; ky < 3; ky++)
      for (kx = 0; kx < 3; kx++) {
        float *dst = col + ((size_t)c * 9 + ky * 3 + kx) * SS;
        for (y = 0; y < S; y++) {
          int sy = y + ky - 1;
          float *d = dst + (size_t)y * S;
          const float *s;
          if (sy < 0 || sy >= S) { memset(d, 0, sizeof(float) * (size_t)S); continue; }
          s = in + ((size_t)c * S + sy) * S;
          if (kx == 0) { d[0] = 0; memcpy(d + 1, s, sizeof(float) * (size_t)(S - 1)); }
          else if (kx == 1) memcpy(d, s, sizeof(float) * (size_t)S);
          else { memcpy(d, s + 1, sizeof(float) * (size_t)(S - 1)); d[S - 1] = 0; }
        }
      }
}
/* the adjoint: din = sum over taps of col shifted back */
static void mlsys__index_mdl_col2im(const float *col, int C, int S, float *din) {
  int c, ky, kx, y, x;
  size_t SS = (size_t)S * S;
  memset(din, 0, sizeof(float) * (size_t)C * SS);
  for (c = 0; c < C; c++)
    for (ky = 0; ky < 3; ky++)
      for (kx = 0; kx < 3; kx++) {
        const float *src = col + ((size_t)c * 9 + ky * 3 + kx) * SS;
        for (y = 0; y < S; y++) {
          int sy = y + ky - 1;
          const float *s = src + (size_t)y * S;
          float *d;
          if (sy < 0 || sy >= S) continue;
          d = din + ((size_t)c * S + sy) * S;
          if (kx == 0) for (x = 1; x < S; x++) d[x - 1] += s[x];
          else if (kx == 1) for (x = 0; x < S; x++) d[x] += s[x];
          else for (x = 0; x + 1 < S; x++) d[x + 1] += s[x];
        }
      }
}
/* out[co][y][x] = b[co] + sum W[co][ci][ky][kx] in[ci][y+ky-1][x+kx-1]; col is scratch (Ci*9 x S*S) */
static void mlsys__index_mdl_conv_fwd(const float *in, int Ci, int Co, int S, const float *W, const float *b, float *col, float *out) {
  int co;
  size_t i, SS = (size_t)S * S;
  mlsys__index_mdl_im2col(in, Ci, S, col);
  for (co = 0; co < Co; co++)
    for (i = 0; i < SS; i++) out[(size_t)co * SS + i] = b[co];
  mlsys__index_mdl_gemm_nn(Co, (int)SS, Ci * 9, W, col, out, 1);
}
/* dW += dout col^T, db += row sums of dout, din = col2im(W^T dout) when din != NULL. col must hold im2col(in);
   wt (Ci*9 x Co) and dcol (Ci*9 x S*S) are scratch. */
static void mlsys__index_mdl_conv_bwd(const float *dout, const float *col, int Ci, int Co, int S, const float *W, float *dW, float *db,
                               float *din, float *wt, float *dcol) {
  int co, k, K = Ci * 9;
  size_t i, SS = (size_t)S * S;
  for (co = 0; co < Co; co++) {
    float s = 0;
    for (i = 0; i < SS; i++) s += dout[(size_t)co * SS + i];
    db[co] += s;
  }
  mlsys__index_mdl_gemm_nt(Co, K, (int)SS, dout, col, dW);
  if (!din) return;
  for (co = 0; co < Co; co++)
    for (k = 0; k < K; k++) wt[(size_t)k * Co + co] = W[(size_t)co * K + k];
  mlsys__index_mdl_gemm_nn(K, (int)SS, Co, wt, dout, dcol, 0);
  mlsys__index_mdl_col2im(dcol, Ci, S, din);
}
/* out = relu(maxpool2(in)) over C x S x S; arg = which of the 4 (first on ties) */
static void mlsys__index_mdl_pool_fwd(const float *in, int C, int S, float *out, uint8_t *arg) {
  int c, y, x, h = S / 2;
  for (c = 0; c < C; c++)
    for (y = 0; y < h; y++)
      for (x = 0; x < h; x++) {
        const float *p = in + ((size_t)c * S + 2 * y) * S + 2 * x;
        float v[4];
        int a = 0, q;
        v[0] = p[0]; v[1] = p[1]; v[2] = p[S]; v[3] = p[S + 1];
        for (q = 1; q < 4; q++) if (v[q] > v[a]) a = q;
        out[((size_t)c * h + y) * h + x] = v[a] > 0 ? v[a] : 0;
        arg[((size_t)c * h + y) * h + x] = (uint8_t)a;
      }
}
static void mlsys__index_mdl_pool_bwd(const float *dout, const float *out, const uint8_t *arg, int C, int S, float *din) {
  int c, y, x, h = S / 2;
  memset(din, 0, sizeof(float) * (size_t)C * S * S);
  for (c = 0; c < C; c++)
    for (y = 0; y < h; y++)
      for (x = 0; x < h; x++) {
        size_t o = ((size_t)c * h + y) * h + x;
        int a = arg[o];
        if (out[o] > 0) din[((size_t)c * S + 2 * y + (a >> 1)) * S + 2 * x + (a & 1)] = dout[o];
      }
}

/* Per-thread workspace for one image of side H (a multiple of 16). */
typedef struct {
  int H;
  const float *act0;        /* the image */
  float *act[5];            /* act[l+1] = pooled output of block l */
  uint8_t *arg[4];
  float *conv, *col, *dcol, *wt, *dact[2];
  float emb[MLSYS__INDEX_MDL_E];   /* trace embedding */
  /* MLP scratch for ncap configurations */
  size_t ncap;
  float *x, *z1, *z2, *lg, *dz1, *dz2, *dlg, *dx;
  int (*bk)[MLSYS__INDEX_MDL_NKNOB];
} mlsys__index_mdl_ws;

static void mlsys__index_mdl_ws_free(mlsys__index_mdl_ws *w) {
  int l;
  if (!w) return;
  for (l = 1; l < 5; l++) mlsys_free(w->act[l]);
  for (l = 0; l < 4; l++) mlsys_free(w->arg[l]);
  mlsys_free(w->conv); mlsys_free(w->col); mlsys_free(w->dcol); mlsys_free(w->wt);
  mlsys_free(w->dact[0]); mlsys_free(w->dact[1]);
  mlsys_free(w->x); mlsys_free(w->z1); mlsys_free(w->z2); mlsys_free(w->lg);
  mlsys_free(w->dz1); mlsys_free(w->dz2); mlsys_free(w->dlg); mlsys_free(w->dx); mlsys_free(w->bk);
  memset(w, 0, sizeof *w);
}
static mlsys_status mlsys__index_mdl_ws_init(mlsys__index_mdl_ws *w, int H) {
  int l, S = H;
  size_t maxconv = 0, maxcol = 0, maxact = 0;
  memset(w, 0, sizeof *w);
  w->H = H;
  for (l = 0; l < 4; l++, S /= 2) {
    size_t SS = (size_t)S * S, h2 = SS / 4;
    size_t conv = (size_t)mlsys__index_mdl_co[l] * SS, col = (size_t)mlsys__index_mdl_ci[l] * 9 * SS;
    if (conv > maxconv) maxconv = conv;
    if (col > maxcol) maxcol = col;
    if ((size_t)mlsys__index_mdl_ci[l] * SS > maxact) maxact = (size_t)mlsys__index_mdl_ci[l] * SS;
    w->act[l + 1] = (float *)mlsys_alloc((size_t)mlsys__index_mdl_co[l] * h2, sizeof(float));
    w->arg[l] = (uint8_t *)mlsys_alloc((size_t)mlsys__index_mdl_co[l] * h2, 1);
    if (!w->act[l + 1] || !w->arg[l]) goto fail;
  }
  if (maxconv > maxact) maxact = maxconv;
  w->conv = (float *)mlsys_alloc(maxconv, sizeof(float));
  w->col = (float *)mlsys_alloc(maxcol, sizeof(float));
  w->dcol = (float *)mlsys_alloc(maxcol, sizeof(float));
  w->wt = (float *)mlsys_alloc(64 * 9 * 64, sizeof(float));
  w->dact[0] = (float *)mlsys_alloc(maxact, sizeof(float));
  w->dact[1] = (float *)mlsys_alloc(maxact, sizeof(float));
  if (!w->conv || !w->col || !w->dcol || !w->wt || !w->dact[0] || !w->dact[1]) goto fail;
  return MLSYS_OK;
fail:
  mlsys__index_mdl_ws_free(w);
  return MLSYS_ERR_NOMEM;
}
static mlsys_status mlsys__index_mdl_ws_reserve(mlsys__index_mdl_ws *w, size_t n) {
  float **bufs[8] = {&w->x, &w->z1, &w->z2, &w->lg, &w->dz1, &w->dz2, &w->dlg, &w->dx};
  const size_t width[8] = {128, 128, 64, 16, 128, 64, 16, 128};
  int i;
  void *b;
  if (n <= w->ncap) return MLSYS_OK;
  for (i = 0; i < 8; i++) {
    float *q = (float *)mlsys_realloc_array(*bufs[i], n, width[i] * sizeof(float));
    if (!q) return MLSYS_ERR_NOMEM;
    *bufs[i] = q;
  }
  b = mlsys_realloc_array((void *)w->bk, n, sizeof *w->bk);
  if (!b) return MLSYS_ERR_NOMEM;
  w->bk = (int (*)[MLSYS__INDEX_MDL_NKNOB])b;
  w->ncap = n;
  return MLSYS_OK;
}

/* CNN forward of an image of side w->H: fills act/arg and w->emb. */
static void mlsys__index_mdl_cnn_fwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *img) {
  int l, c, S = w->H;
  const float *in = img;
  size_t i, P;
  w->act0 = img;
  for (l = 0; l < 4; l++, S /= 2) {
    const float *W = m->p + m->off[2 * l], *b = m->p + m->off[2 * l + 1];
    mlsys__index_mdl_conv_fwd(in, mlsys__index_mdl_ci[l], mlsys__index_mdl_co[l], S, W, b, w->col, w->conv);
    mlsys__index_mdl_pool_fwd(w->conv, mlsys__index_mdl_co[l], S, w->act[l + 1], w->arg[l]);
    in = w->act[l + 1];
  }
  P = (size_t)S * S;   /* S = H/16 */
  for (c = 0; c < MLSYS__INDEX_MDL_E; c++) {
    double s = 0;
    for (i = 0; i < P; i++) s += in[(size_t)c * P + i];
    w->emb[c] = (float)(s / (double)P);
  }
}
/* CNN backward from demb (64) into the gradient g (same layout as m->p); needs the activations of cnn_fwd. */
static void mlsys__index_mdl_cnn_bwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *demb, float *g) {
  int l, c, S = w->H / 16, cur = 0;
  size_t i, P = (size_t)S * S;
  float *dout = w->dact[0];
  for (c = 0; c < MLSYS__INDEX_MDL_E; c++)
    for (i = 0; i < P; i++) dout[(size_t)c * P + i] = demb[c] / (float)P;
  for (l = 3; l >= 0; l--) {
    int Sl = w->H >> l;
    const float *in = l ? w->act[l] : w->act0;
    float *din = l ? w->dact[cur ^ 1] : NULL;
    mlsys__index_mdl_pool_bwd(dout, w->act[l + 1], w->arg[l], mlsys__index_mdl_co[l], Sl, w->conv);
    mlsys__index_mdl_im2col(in, mlsys__index_mdl_ci[l], Sl, w->col);
    mlsys__index_mdl_conv_bwd(w->conv, w->col, mlsys__index_mdl_ci[l], mlsys__index_mdl_co[l], Sl, m->p + m->off[2 * l], g + m->off[2 * l],
                       g + m->off[2 * l + 1], din, w->wt, w->dcol);
    cur ^= 1;
    dout = din;
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   5.4 Configuration buckets, the MLP head, bins
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__index_mdl_nearest_log(double v, const double *vals, int n) {
  int i, best = 0;
  double lv = log(v), bd = INFINITY;
  for (i = 0; i < n; i++) {
    double d = fabs(lv - log(vals[i]));
    if (d < bd) { bd = d; best = i; }
  }
  return best;
}
/* embedding rows of a configuration's 7 knobs (absolute row indices) */
static void mlsys__index_mdl_buckets(const mlsys_index_config *c, int b[MLSYS__INDEX_MDL_NKNOB]) {
  const int *B = mlsys__index_mdl_knob_base;
  int ga = c->leaf == MLSYS_INDEX_GA;
  b[0] = B[0] + (ga ? 0 : 1);
  if (ga) {
    double e = c->expected_insert_frac;
    b[1] = B[1] + (c->msi > 0 ? 2 + mlsys__index_mdl_nearest_log(c->msi, mlsys__index_mdl_msi_v, 6) : 1);
    b[2] = B[2] + (c->msh > 0 ? 2 + mlsys__index_mdl_nearest_log(c->msh, mlsys__index_mdl_msh_v, 5) : 1);
    b[3] = B[3]; b[4] = B[4]; b[5] = B[5];
    if (!(e > 0)) e = 0;
    if (e > 1) e = 1;
    b[6] = B[6] + 1 + (int)floor(e * 10 + 0.5);
  } else {
    b[1] = B[1]; b[2] = B[2]; b[6] = B[6];
    b[3] = B[3] + 1 + mlsys__index_mdl_nearest_log(c->mf_size ? c->mf_size : 64, mlsys__index_mdl_mf_v, 7);
    b[4] = B[4] + 1 + mlsys__index_mdl_nearest_log(c->mnf ? c->mnf : 64, mlsys__index_mdl_mnf_v, 4);
    b[5] = B[5] + 1 + mlsys__index_mdl_nearest_log(c->nf ? c->nf : 4, mlsys__index_mdl_nf_v, 4);
  }
}
static mlsys_status mlsys__index_mdl_check_cfgs(const mlsys_index_config *cfgs, size_t n, const char *who) {
  size_t i;
  if (n && !cfgs) return mlsys_set_error(MLSYS_ERR_ARG, "%s: %zu configurations but cfgs is NULL", who, n);
  for (i = 0; i < n; i++)
    if (cfgs[i].leaf != MLSYS_INDEX_GA && cfgs[i].leaf != MLSYS_INDEX_FLOG)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: configuration %zu has leaf type %d (neither GA nor FLog)", who, i, (int)cfgs[i].leaf);
  return MLSYS_OK;
}
static double mlsys__index_mdl_logc(int k) {   /* log of bin k's centre */
  return log(MLSYS_INDEX_BIN_LO) + k * (log(MLSYS_INDEX_BIN_HI) - log(MLSYS_INDEX_BIN_LO)) / (MLSYS_INDEX_NBINS - 1);
}
/* soft target: the mass split linearly (in log space) between the two bins around log(mops), clamped to the ends */
static void mlsys__index_mdl_target(double mops, float t[MLSYS_INDEX_NBINS]) {
  double u = (log(mops) - mlsys__index_mdl_logc(0)) / (mlsys__index_mdl_logc(1) - mlsys__index_mdl_logc(0));
  int k;
  memset(t, 0, sizeof(float) * MLSYS_INDEX_NBINS);
  if (!(u > 0)) u = 0;
  if (u > MLSYS_INDEX_NBINS - 1) u = MLSYS_INDEX_NBINS - 1;
  k = (int)floor(u);
  if (k >= MLSYS_INDEX_NBINS - 1) { t[MLSYS_INDEX_NBINS - 1] = 1; return; }
  t[k] = (float)(1 - (u - k));
  t[k + 1] = (float)(u - k);
}
/* y[n x O] = x[n x I] W^T + b, W is O x I */
static void mlsys__index_mdl_linear_fwd(const float *x, size_t n, int I, int O, const float *W, const float *b, float *y) {
  size_t r;
  int o, i;
  for (r = 0; r < n; r++)
    for (o = 0; o < O; o++) {
      const float *xr = x + r * I, *wr = W + (size_t)o * I;
      float s = b[o];
      for (i = 0; i < I; i++) s += xr[i] * wr[i];
      y[r * O + o] = s;
    }
}
/* dW += dy^T x, db += column sums of dy, dx = dy W (when dx) */
static void mlsys__index_mdl_linear_bwd(const float *x, const float *dy, size_t n, int I, int O, const float *W, float *dW, float *db, float *dx) {
  size_t r;
  int o, i;
  for (r = 0; r < n; r++)
    for (o = 0; o < O; o++) {
      float d = dy[r * O + o];
      float *dwr = dW + (size_t)o * I;
      const float *xr = x + r * I;
      db[o] += d;
      if (d != 0) for (i = 0; i < I; i++) dwr[i] += d * xr[i];
    }
  if (!dx) return;
  for (r = 0; r < n; r++) {
    float *dxr = dx + r * I;
    memset(dxr, 0, sizeof(float) * (size_t)I);
    for (o = 0; o < O; o++) {
      float d = dy[r * O + o];
      const float *wr = W + (size_t)o * I;
      if (d != 0) for (i = 0; i < I; i++) dxr[i] += d * wr[i];
    }
  }
}
/* The head on w->emb for n configurations: fills x, z1 (pre-ReLU), z2, lg (logits). */
static void mlsys__index_mdl_head_fwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const mlsys_index_config *cfgs, size_t n) {
  size_t r;
  int k, j;
  const float *E = m->p + m->off[MLSYS__INDEX_MDL_T_EMB];
  float *h1, *h2;
  for (r = 0; r < n; r++) {
    float *xr = w->x + r * 128;
    memcpy(xr, w->emb, sizeof(float) * MLSYS__INDEX_MDL_E);
    mlsys__index_mdl_buckets(&cfgs[r], w->bk[r]);
    for (j = 0; j < MLSYS__INDEX_MDL_E; j++) {
      float s = 0;
      for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) s += E[(size_t)w->bk[r][k] * MLSYS__INDEX_MDL_E + j];
      xr[MLSYS__INDEX_MDL_E + j] = s;
    }
  }
  /* h1 = relu(z1) and h2 = relu(z2) live in dz1/dz2 during the forward (overwritten by the backward) */
  h1 = w->dz1; h2 = w->dz2;
  mlsys__index_mdl_linear_fwd(w->x, n, 128, 128, m->p + m->off[9], m->p + m->off[10], w->z1);
  for (r = 0; r < n * 128; r++) h1[r] = w->z1[r] > 0 ? w->z1[r] : 0;
  mlsys__index_mdl_linear_fwd(h1, n, 128, 64, m->p + m->off[11], m->p + m->off[12], w->z2);
  for (r = 0; r < n * 64; r++) h2[r] = w->z2[r] > 0 ? w->z2[r] : 0;
  mlsys__index_mdl_linear_fwd(h2, n, 64, 16, m->p + m->off[13], m->p + m->off[14], w->lg);
}
static void mlsys__index_mdl_softmax(const float *lg, double *p) {
  double mx = lg[0], s = 0;
  int k;
  for (k = 1; k < MLSYS_INDEX_NBINS; k++) if (lg[k] > mx) mx = lg[k];
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) s += p[k] = exp(lg[k] - mx);
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) p[k] /= s;
}
static double mlsys__index_mdl_expect(const float *lg) {
  double p[MLSYS_INDEX_NBINS], e = 0;
  int k;
  mlsys__index_mdl_softmax(lg, p);
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) e += p[k] * mlsys__index_mdl_logc(k);
  return exp(e);
}
/* Loss of one trace = mean over its n configurations of the cross-entropy; its gradient (times `scale`) is added to g.
   If demb is non-NULL the gradient wrt the trace embedding is returned there instead of running the CNN backward. */
static double mlsys__index_mdl_head_loss_bwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const mlsys_index_config *cfgs, const double *mops,
                                      size_t n, float scale, float *g, float *demb) {
  size_t r;
  int k, j;
  double loss = 0;
  float *h1 = w->dz1, *h2 = w->dz2, *E = g + m->off[MLSYS__INDEX_MDL_T_EMB];
  mlsys__index_mdl_head_fwd(m, w, cfgs, n);
  for (r = 0; r < n; r++) {
    double p[MLSYS_INDEX_NBINS];
    float t[MLSYS_INDEX_NBINS];
    mlsys__index_mdl_softmax(w->lg + r * 16, p);
    mlsys__index_mdl_target(mops[r], t);
    for (k = 0; k < MLSYS_INDEX_NBINS; k++) {
      if (t[k] > 0) loss -= t[k] * log(p[k] > 1e-300 ? p[k] : 1e-300);
      w->dlg[r * 16 + k] = (float)((p[k] - t[k]) * scale / (double)n);
    }
  }
  mlsys__index_mdl_linear_bwd(h2, w->dlg, n, 64, 16, m->p + m->off[13], g + m->off[13], g + m->off[14], w->dx);
  /* dx (n x 64 used) -> dz2 = dh2 * [z2 > 0]; h2 is no longer needed, so dz2 overwrites it */
  for (r = 0; r < n * 64; r++) w->dz2[r] = w->z2[r] > 0 ? w->dx[r] : 0;
  mlsys__index_mdl_linear_bwd(h1, w->dz2, n, 128, 64, m->p + m->off[11], g + m->off[11], g + m->off[12], w->dx);
  for (r = 0; r < n * 128; r++) w->dz1[r] = w->z1[r] > 0 ? w->dx[r] : 0;
  mlsys__index_mdl_linear_bwd(w->x, w->dz1, n, 128, 128, m->p + m->off[9], g + m->off[9], g + m->off[10], w->dx);
  if (demb) memset(demb, 0, sizeof(float) * MLSYS__INDEX_MDL_E);
  for (r = 0; r < n; r++) {
    const float *dxr = w->dx + r * 128;
    if (demb) for (j = 0; j < MLSYS__INDEX_MDL_E; j++) demb[j] += dxr[j];
    for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) {
      float *er = E + (size_t)w->bk[r][k] * MLSYS__INDEX_MDL_E;
      for (j = 0; j < MLSYS__INDEX_MDL_E; j++) er[j] += dxr[MLSYS__INDEX_MDL_E + j];
    }
  }
  return loss / (double)n;
}
/* Full loss and gradient of one trace (CNN included) on an image of side w->H; returns the loss. */
static double mlsys__index_mdl_loss_grad(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *img, const mlsys_index_config *cfgs,
                                  const double *mops, size_t n, float scale, float *g) {
  float demb[MLSYS__INDEX_MDL_E];
  double loss;
  mlsys__index_mdl_cnn_fwd(m, w, img);
  loss = mlsys__index_mdl_head_loss_bwd(m, w, cfgs, mops, n, scale, g, demb);
  mlsys__index_mdl_cnn_bwd(m, w, demb, g);
  return loss;
}

MLSYS_DEF mlsys_status mlsys_index_model_predict(const mlsys_index_model *m, const float *img, const mlsys_index_config *cfgs,
                                                 size_t n, double *mops) {
  mlsys__index_mdl_ws w;
  mlsys_status s;
  size_t r;
  if (!m || !img || (n && !mops)) return mlsys_set_error(MLSYS_ERR_ARG, "index model predict: NULL model, image or output");
  if ((s = mlsys__index_mdl_check_cfgs(cfgs, n, "index model predict")) != MLSYS_OK) return s;
  if (!n) return MLSYS_OK;
  if ((s = mlsys__index_mdl_ws_init(&w, MLSYS_INDEX_IMG)) != MLSYS_OK) return s;
  if ((s = mlsys__index_mdl_ws_reserve(&w, n)) != MLSYS_OK) { mlsys__index_mdl_ws_free(&w); return s; }
  mlsys__index_mdl_cnn_fwd(m, &w, img);
  mlsys__index_mdl_head_fwd(m, &w, cfgs, n);
  for (r = 0; r < n; r++) mops[r] = mlsys__index_mdl_expect(w.lg + r * 16);
  mlsys__index_mdl_ws_free(&w);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.5 Training (Adam; one CNN forward/backward per image per step; per-image gradient buffers summed in order)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const mlsys_index_model *m;
  const mlsys_index_train_item *items;
  const size_t *idx;          /* the batch's item indices */
  mlsys__index_mdl_ws *ws;           /* one per worker */
  float *g;                   /* batch x np */
  double *loss;               /* batch */
  const float *cache;         /* cached embeddings (n_items x 64) when the CNN is frozen, else NULL */
  float *cache_out;           /* embedding pass: where to write */
  mlsys_status *err;          /* per worker */
  float scale;
} mlsys__index_mdl_job;

static void mlsys__index_mdl_job_grad(void *ctx, long b, int worker) {
  mlsys__index_mdl_job *J = (mlsys__index_mdl_job *)ctx;
  const mlsys_index_train_item *it = &J->items[J->idx[b]];
  mlsys__index_mdl_ws *w = &J->ws[worker];
  float *g = J->g + (size_t)b * J->m->np;
  memset(g, 0, sizeof(float) * J->m->np);
  if (mlsys__index_mdl_ws_reserve(w, it->n) != MLSYS_OK) { J->err[worker] = MLSYS_ERR_NOMEM; J->loss[b] = 0; return; }
  if (J->cache) {
    memcpy(w->emb, J->cache + J->idx[b] * MLSYS__INDEX_MDL_E, sizeof w->emb);
    J->loss[b] = mlsys__index_mdl_head_loss_bwd(J->m, w, it->cfgs, it->mops, it->n, J->scale, g, NULL);
  } else {
    J->loss[b] = mlsys__index_mdl_loss_grad(J->m, w, it->img, it->cfgs, it->mops, it->n, J->scale, g);
  }
}
static void mlsys__index_mdl_job_embed(void *ctx, long b, int worker) {
  mlsys__index_mdl_job *J = (mlsys__index_mdl_job *)ctx;
  mlsys__index_mdl_ws *w = &J->ws[worker];
  mlsys__index_mdl_cnn_fwd(J->m, w, J->items[J->idx[b]].img);
  memcpy(J->cache_out + J->idx[b] * MLSYS__INDEX_MDL_E, w->emb, sizeof w->emb);
}
static mlsys_status mlsys__index_mdl_run(mlsys_pool *pool, long n, void (*fn)(void *, long, int), mlsys__index_mdl_job *J, int nw) {
  int i;
  mlsys_status s = mlsys_pool_for(pool, n, fn, J);
  if (s != MLSYS_OK) return s;
  for (i = 0; i < nw; i++)
    if (J->err[i] != MLSYS_OK) return mlsys_set_error(J->err[i], "index model train: out of memory in a worker");
  return MLSYS_OK;
}

/* a configuration's bucket tuple as one key (8 bits a knob); with_eif = 0 drops expected_insert_frac, so the grid
   entry is the same across traces: the "ignore the trace" baseline must not see the workload's insert fraction that
   grid_default copies into GA entries */
static uint64_t mlsys__index_mdl_ckey2(const mlsys_index_config *c, int with_eif) {
  int b[MLSYS__INDEX_MDL_NKNOB], k;
  uint64_t key = 0;
  mlsys__index_mdl_buckets(c, b);
  if (!with_eif) b[6] = mlsys__index_mdl_knob_base[6];
  for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) key = key << 8 | (uint64_t)b[k];
  return key;
}

MLSYS_DEF mlsys_status mlsys_index_model_train(mlsys_index_model *m, const mlsys_index_train_item *items, size_t n_items,
                                               const mlsys_index_train_opts *o, mlsys_index_train_report *rep) {
  mlsys_index_train_opts op;
  mlsys_index_train_report R;
  mlsys_status s = MLSYS_OK;
  size_t i, j, n_hold = 0, n_train, *order = NULL, maxn = 0, t_adam = 0;
  float *g = NULL, *gsum = NULL, *am = NULL, *av = NULL, *cache = NULL;
  double *loss = NULL;
  mlsys__index_mdl_ws *ws = NULL;
  mlsys_status *werr = NULL;
  mlsys_pool *pool = NULL;
  mlsys_rng rng;
  int nw = 1, ep, cache_ok = 0;
  memset(&R, 0, sizeof R);
  R.heldout_mae_log = R.baseline_mae_log = NAN;
  if (rep) *rep = R;
  if (!m || (n_items && !items)) return mlsys_set_error(MLSYS_ERR_ARG, "index model train: NULL model or items");
  if (o) op = *o; else memset(&op, 0, sizeof op);
  if (op.epochs == 0) op.epochs = 30;
  if (op.lr == 0) op.lr = 1e-3;
  if (op.batch == 0) op.batch = 32;
  if (op.seed == 0) op.seed = 1;
  if (op.threads == 0) op.threads = 1;
  if (op.epochs < 0 || op.batch < 0 || op.threads < 0 || !(op.lr > 0) || !(op.holdout >= 0 && op.holdout < 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "index model train: bad options (epochs %d, lr %g, batch %d, threads %d, holdout %g)",
                           op.epochs, op.lr, op.batch, op.threads, op.holdout);
  if (op.cnn_epochs == 0 || op.cnn_epochs > op.epochs) op.cnn_epochs = op.epochs;
  if (op.cnn_epochs < 0) op.cnn_epochs = 0;
  for (i = 0; i < n_items; i++) {
    const mlsys_index_train_item *it = &items[i];
    if (!it->img || !it->cfgs || !it->mops || !it->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "index model train: item %zu has no image, configurations or throughputs", i);
    if ((s = mlsys__index_mdl_check_cfgs(it->cfgs, it->n, "index model train")) != MLSYS_OK) return mlsys_prefix_error("item %zu", i);
    for (j = 0; j < it->n; j++)
      if (!(it->mops[j] > 0) || !isfinite(it->mops[j]))
        return mlsys_set_error(MLSYS_ERR_ARG, "index model train: item %zu configuration %zu: throughput %g is not a positive number",
                               i, j, it->mops[j]);
    if (it->n > maxn) maxn = it->n;
  }
  if (op.holdout > 0 && n_items >= 2) {
    n_hold = (size_t)floor(op.holdout * (double)n_items + 0.5);
    if (n_hold < 1) n_hold = 1;
    if (n_hold > n_items - 1) n_hold = n_items - 1;
  }
  n_train = n_items - n_hold;
  if (n_train == 0) return mlsys_set_error(MLSYS_ERR_ARG, "index model train: no training items");
  if ((size_t)op.batch > n_train) op.batch = (int)n_train;
  if (op.threads > 1 && (s = mlsys_pool_create(op.threads, &pool)) != MLSYS_OK) return s;
  nw = mlsys_pool_size(pool);
  ws = (mlsys__index_mdl_ws *)mlsys_calloc((size_t)nw, sizeof *ws);
  werr = (mlsys_status *)mlsys_calloc((size_t)nw, sizeof *werr);
  order = (size_t *)mlsys_alloc(n_train, sizeof *order);
  g = (float *)mlsys_alloc((size_t)op.batch * m->np, sizeof(float));
  gsum = (float *)mlsys_alloc(m->np, sizeof(float));
  am = (float *)mlsys_calloc(m->np, sizeof(float));
  av = (float *)mlsys_calloc(m->np, sizeof(float));
  loss = (double *)mlsys_alloc((size_t)op.batch, sizeof(double));
  cache = (float *)mlsys_alloc(n_train, MLSYS__INDEX_MDL_E * sizeof(float));
  if (!ws || !werr || !order || !g || !gsum || !am || !av || !loss || !cache) { s = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < (size_t)nw; i++)
    if ((s = mlsys__index_mdl_ws_init(&ws[i], MLSYS_INDEX_IMG)) != MLSYS_OK || (s = mlsys__index_mdl_ws_reserve(&ws[i], maxn)) != MLSYS_OK) goto done;
  for (i = 0; i < n_train; i++) order[i] = i;
  mlsys_rng_seed(&rng, op.seed);
  for (ep = 0; ep < op.epochs; ep++) {
    int cnn_on = ep < op.cnn_epochs;
    size_t b0, first = cnn_on ? 0 : m->off[MLSYS__INDEX_MDL_T_EMB];
    double eloss = 0;
    mlsys__index_mdl_job J;
    memset(&J, 0, sizeof J);
    J.m = m; J.items = items; J.ws = ws; J.g = g; J.loss = loss; J.err = werr;
    if (!cnn_on && !cache_ok) {   /* embeddings of the frozen CNN, once */
      for (i = 0; i < n_train; i++) order[i] = i;
      J.idx = order; J.cache_out = cache;
      if ((s = mlsys__index_mdl_run(pool, (long)n_train, mlsys__index_mdl_job_embed, &J, nw)) != MLSYS_OK) goto done;
      cache_ok = 1;
    }
    J.cache = cnn_on ? NULL : cache;
    for (i = n_train; i > 1; i--) {   /* Fisher-Yates */
      size_t k = (size_t)mlsys_rng_below(&rng, i), tmp = order[i - 1];
      order[i - 1] = order[k]; order[k] = tmp;
    }
    for (b0 = 0; b0 < n_train; b0 += (size_t)op.batch) {
      size_t B = n_train - b0 < (size_t)op.batch ? n_train - b0 : (size_t)op.batch, p;
      double b1 = 0.9, b2 = 0.999, c1, c2, lr = op.lr;
      J.idx = order + b0;
      J.scale = (float)(1.0 / (double)B);
      if ((s = mlsys__index_mdl_run(pool, (long)B, mlsys__index_mdl_job_grad, &J, nw)) != MLSYS_OK) goto done;
      memcpy(gsum, g, sizeof(float) * m->np);
      for (i = 1; i < B; i++) {
        const float *gi = g + i * m->np;
        for (p = first; p < m->np; p++) gsum[p] += gi[p];
      }
      for (i = 0; i < B; i++) eloss += loss[i];
      t_adam++;
      c1 = 1 - pow(b1, (double)t_adam);
      c2 = 1 - pow(b2, (double)t_adam);
      for (p = first; p < m->np; p++) {
        float gp = gsum[p];
        am[p] = (float)(b1 * am[p] + (1 - b1) * gp);
        av[p] = (float)(b2 * av[p] + (1 - b2) * gp * gp);
        m->p[p] -= (float)(lr * (am[p] / c1) / (sqrt(av[p] / c2) + 1e-8));
      }
      if (cnn_on) cache_ok = 0;
    }
    R.train_loss = eloss / (double)n_train;
    R.epochs_run = ep + 1;
  }
  if (n_hold) {   /* held-out error of the model and of the per-configuration mean */
    uint64_t *keys = NULL;
    double *sum = NULL, *pred = NULL, err = 0, berr = 0, gsum_log = 0;
    size_t *cnt = NULL, nk = 0, cap = 0, npairs = 0, tot = 0;
    for (i = 0; i < n_train && s == MLSYS_OK; i++)
      for (j = 0; j < items[i].n; j++) {
        uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
        size_t q;
        for (q = 0; q < nk && keys[q] != key; q++) {}
        if (q == nk) {
          if (nk == cap) {
            size_t nc = cap ? 2 * cap : 64;
            uint64_t *k2 = (uint64_t *)mlsys_realloc_array(keys, nc, sizeof *keys);
            double *s2 = k2 ? (double *)mlsys_realloc_array(sum, nc, sizeof *sum) : NULL;
            size_t *c2 = s2 ? (size_t *)mlsys_realloc_array(cnt, nc, sizeof *cnt) : NULL;
            if (k2) keys = k2;
            if (s2) sum = s2;
            if (!c2) { s = MLSYS_ERR_NOMEM; break; }
            cnt = c2; cap = nc;
          }
          keys[nk] = key; sum[nk] = 0; cnt[nk] = 0; nk++;
        }
        sum[q] += log(items[i].mops[j]); cnt[q]++;
        gsum_log += log(items[i].mops[j]); tot++;
      }
    pred = s == MLSYS_OK ? (double *)mlsys_alloc(maxn, sizeof *pred) : NULL;
    if (s == MLSYS_OK && !pred) s = MLSYS_ERR_NOMEM;
    for (i = n_train; i < n_items && s == MLSYS_OK; i++) {
      if ((s = mlsys_index_model_predict(m, items[i].img, items[i].cfgs, items[i].n, pred)) != MLSYS_OK) break;
      for (j = 0; j < items[i].n; j++) {
        uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
        size_t q;
        double lt = log(items[i].mops[j]), base = gsum_log / (double)(tot ? tot : 1);
        for (q = 0; q < nk && keys[q] != key; q++) {}
        if (q < nk) base = sum[q] / (double)cnt[q];
        err += fabs(log(pred[j]) - lt);
        berr += fabs(base - lt);
        npairs++;
      }
    }
    if (s == MLSYS_OK && npairs) { R.heldout_mae_log = err / (double)npairs; R.baseline_mae_log = berr / (double)npairs; }
    mlsys_free(keys); mlsys_free(sum); mlsys_free(cnt); mlsys_free(pred);
  }
done:
  if (ws) for (i = 0; i < (size_t)nw; i++) mlsys__index_mdl_ws_free(&ws[i]);
  mlsys_free(ws); mlsys_free(werr); mlsys_free(order); mlsys_free(g); mlsys_free(gsum); mlsys_free(am); mlsys_free(av);
  mlsys_free(loss); mlsys_free(cache);
  mlsys_pool_free(pool);
  if (rep) *rep = R;
  return s;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.6 Model file
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__INDEX_MDL_MAGIC "MLSYSIXM"
#define MLSYS__INDEX_MDL_VERSION 1u
#define MLSYS__INDEX_MDL_HDR (8 + 4 + 4 + MLSYS__INDEX_MDL_NT * 16)
static uint32_t mlsys__index_mdl_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void mlsys__index_mdl_wr32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

MLSYS_DEF mlsys_status mlsys_index_model_parse(const void *buf, size_t len, const char *name, mlsys_index_model **out) {
  const uint8_t *b = (const uint8_t *)buf;
  mlsys_index_model *m;
  size_t need, i, np = 0;
  uint32_t v, crc, want;
  int t, d;
  if (!name) name = "index model";
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: out is NULL", name);
  *out = NULL;
  if (!b && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: NULL buffer", name);
  if (len < 16) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__INDEX_MDL_HDR);
  if (memcmp(b, MLSYS__INDEX_MDL_MAGIC, 8) != 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: bad magic (not an mlsys index model file)", name);
  v = mlsys__index_mdl_rd32(b + 8);
  if (v != MLSYS__INDEX_MDL_VERSION)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: unsupported version %u (this build reads version %u)", name, v, MLSYS__INDEX_MDL_VERSION);
  v = mlsys__index_mdl_rd32(b + 12);
  if (v != MLSYS__INDEX_MDL_NT) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: wrong shape: %u tensors, expected %d", name, v, MLSYS__INDEX_MDL_NT);
  if (len < MLSYS__INDEX_MDL_HDR) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__INDEX_MDL_HDR);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) {
    const uint32_t *e = mlsys__index_mdl_tensors[t].dim;
    uint32_t got[4];
    for (d = 0; d < 4; d++) got[d] = mlsys__index_mdl_rd32(b + 16 + t * 16 + d * 4);
    if (memcmp(got, e, sizeof got) != 0)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: wrong shape: tensor %d (%s) is %ux%ux%ux%u, expected %ux%ux%ux%u", name, t,
                             mlsys__index_mdl_tensors[t].name, got[0], got[1], got[2], got[3], e[0], e[1], e[2], e[3]);
    np += mlsys__index_mdl_tensor_size(t);
  }
  need = MLSYS__INDEX_MDL_HDR + np * 4 + 4;
  if (len < need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, expected %zu", name, len, need);
  if (len > need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu trailing bytes after the CRC", name, len - need);
  crc = mlsys__index_mdl_rd32(b + need - 4);
  want = mlsys_crc32c(0, b, need - 4);
  if (crc != want)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch: stored 0x%08x, computed 0x%08x (the file is damaged)", name, crc, want);
  m = mlsys__index_mdl_model_alloc();
  if (!m) return MLSYS_ERR_NOMEM;
  for (i = 0; i < np; i++) {
    uint32_t u = mlsys__index_mdl_rd32(b + MLSYS__INDEX_MDL_HDR + i * 4);
    float f;
    memcpy(&f, &u, 4);
    if (!isfinite(f)) {
      size_t at;
      for (t = 0; t + 1 < MLSYS__INDEX_MDL_NT && m->off[t + 1] <= i; t++) {}
      at = i - m->off[t];
      mlsys_index_model_free(m);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: non-finite weight %zu of tensor %s", name, at, mlsys__index_mdl_tensors[t].name);
    }
    m->p[i] = f;
  }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_model_load(const char *path, mlsys_index_model **out) {
  char *data;
  size_t len;
  mlsys_status s;
  if (out) *out = NULL;
  if (!path) return mlsys_set_error(MLSYS_ERR_ARG, "index model load: path is NULL");
  if ((s = mlsys_read_file(path, &data, &len)) != MLSYS_OK) return s;
  s = mlsys_index_model_parse(data, len, path, out);
  mlsys_free(data);
  return s;
}

MLSYS_DEF mlsys_status mlsys_index_model_save(const mlsys_index_model *m, const char *path) {
  size_t len, i;
  uint8_t *b;
  char *tmp;
  FILE *f;
  int t, d, ok;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "index model save: NULL model or path");
  len = MLSYS__INDEX_MDL_HDR + m->np * 4 + 4;
  b = (uint8_t *)mlsys_alloc(len, 1);
  tmp = (char *)mlsys_alloc(strlen(path) + 5, 1);
  if (!b || !tmp) { mlsys_free(b); mlsys_free(tmp); return MLSYS_ERR_NOMEM; }
  memcpy(b, MLSYS__INDEX_MDL_MAGIC, 8);
  mlsys__index_mdl_wr32(b + 8, MLSYS__INDEX_MDL_VERSION);
  mlsys__index_mdl_wr32(b + 12, MLSYS__INDEX_MDL_NT);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++)
    for (d = 0; d < 4; d++) mlsys__index_mdl_wr32(b + 16 + t * 16 + d * 4, mlsys__index_mdl_tensors[t].dim[d]);
  for (i = 0; i < m->np; i++) {
    uint32_t u;
    memcpy(&u, &m->p[i], 4);
    mlsys__index_mdl_wr32(b + MLSYS__INDEX_MDL_HDR + i * 4, u);
  }
  mlsys__index_mdl_wr32(b + len - 4, mlsys_crc32c(0, b, len - 4));
  strcpy(tmp, path);
  strcat(tmp, ".tmp");
  f = fopen(tmp, "wb");
  if (!f) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    mlsys_free(b); mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  ok = fwrite(b, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write the model: %s", path, strerror(errno));
    remove(tmp);
    mlsys_free(b); mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  mlsys_free(b); mlsys_free(tmp);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.7 Trace image and summary features
   --------------------------------------------------------------------------------------------------------------- */
static size_t mlsys__index_mdl_rank(const uint64_t *s, size_t m, uint64_t key) {   /* lower bound */
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}
static size_t mlsys__index_mdl_bin(size_t v, size_t range, size_t nb) {   /* v in [0, range) → [0, nb) */
  size_t b = (size_t)((double)v * (double)nb / (double)range);
  return b >= nb ? nb - 1 : b;
}

MLSYS_DEF mlsys_status mlsys_index_trace_image(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m, float *img) {
  const size_t S = MLSYS_INDEX_IMG, P = S * S;
  uint32_t *cnt;
  size_t i;
  double mx = 0;
  if (!prefix || !img) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: NULL trace or image");
  if (m && !sorted_sample) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: sample of %zu keys is NULL", m);
  if (prefix->n && (!prefix->op || !prefix->key)) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: trace of %zu operations has NULL arrays", prefix->n);
  for (i = 1; i < m; i++)
    if (sorted_sample[i] < sorted_sample[i - 1])
      return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: the sample is not sorted (key %zu < key %zu)", i, i - 1);
  for (i = 0; i < prefix->n; i++)
    if (prefix->op[i] != MLSYS_INDEX_OP_FIND && prefix->op[i] != MLSYS_INDEX_OP_INSERT)
      return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: op[%zu] = %u is neither FIND nor INSERT", i, (unsigned)prefix->op[i]);
  cnt = (uint32_t *)mlsys_calloc(2 * P, sizeof *cnt);
  if (!cnt) return MLSYS_ERR_NOMEM;
  for (i = 0; i < prefix->n; i++) {
    size_t x = mlsys__index_mdl_bin(i, prefix->n, S), y = mlsys__index_mdl_bin(mlsys__index_mdl_rank(sorted_sample, m, prefix->key[i]), m + 1, S);
    uint32_t *c = &cnt[(size_t)prefix->op[i] * P + y * S + x];
    if (*c < UINT32_MAX) (*c)++;
  }
  for (i = 0; i < 2 * P; i++) if (cnt[i] && log1p((double)cnt[i]) > mx) mx = log1p((double)cnt[i]);
  for (i = 0; i < 2 * P; i++) img[i] = cnt[i] ? (float)(log1p((double)cnt[i]) / mx) : 0.f;
  mlsys_free(cnt);
  return MLSYS_OK;
}

static double mlsys__index_mdl_norm_entropy(const double *h, int nb) {
  double tot = 0, e = 0;
  int i;
  for (i = 0; i < nb; i++) tot += h[i];
  if (tot <= 0) return 0;
  for (i = 0; i < nb; i++) if (h[i] > 0) e -= h[i] / tot * log(h[i] / tot);
  return e / log((double)nb);
}
/* greedy shrinking-cone PLA over (key, rank) with max error eps: the segment count (GRE's hardness uses the optimal
   PLA; the greedy cone is within a small factor of it and is one pass) */
static size_t mlsys__index_mdl_pla_segments(const uint64_t *s, size_t m, double eps) {
  size_t i, segs = 0, i0 = 0;
  double lo = -INFINITY, hi = INFINITY;
  if (!m) return 0;
  segs = 1;
  for (i = 1; i < m; i++) {
    double dx = (double)(s[i] - s[i0]), dy = (double)(i - i0);
    if (dx == 0) {
      if (dy > eps) { segs++; i0 = i; lo = -INFINITY; hi = INFINITY; }
      continue;
    }
    {
      double l = (dy - eps) / dx, h = (dy + eps) / dx;
      double nl = l > lo ? l : lo, nh = h < hi ? h : hi;
      if (nl > nh) { segs++; i0 = i; lo = -INFINITY; hi = INFINITY; }
      else { lo = nl; hi = nh; }
    }
  }
  return segs;
}

MLSYS_DEF void mlsys_index_trace_features(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m, float features[8]) {
  double hl[64], hi[64], hg[65];
  size_t i, nins = 0, nlook = 0, out = 0, prev = 0;
  double st = 0, sr = 0, stt = 0, srr = 0, str = 0, loc = 0, n;
  int k;
  if (!features) return;
  memset(features, 0, sizeof(float) * 8);
  if (m && !sorted_sample) return;
  memset(hl, 0, sizeof hl); memset(hi, 0, sizeof hi); memset(hg, 0, sizeof hg);
  for (i = 1; i < m; i++) {
    uint64_t gap = sorted_sample[i] >= sorted_sample[i - 1] ? sorted_sample[i] - sorted_sample[i - 1] : 0;
    int b = 0;
    while (gap) { b++; gap >>= 1; }
    hg[b] += 1;
  }
  features[3] = (float)mlsys__index_mdl_norm_entropy(hg, 65);
  features[4] = (float)log2(1.0 + (double)mlsys__index_mdl_pla_segments(sorted_sample, m, 32));
  if (!prefix || !prefix->n || !prefix->op || !prefix->key) return;
  n = (double)prefix->n;
  for (i = 0; i < prefix->n; i++) {
    size_t r = mlsys__index_mdl_rank(sorted_sample, m, prefix->key[i]);
    double x = (double)i / n, y = (double)r / (double)(m + 1);
    size_t b = mlsys__index_mdl_bin(r, m + 1, 64);
    if (prefix->op[i] == MLSYS_INDEX_OP_INSERT) {
      nins++; hi[b] += 1;
      if (!m || prefix->key[i] < sorted_sample[0] || prefix->key[i] > sorted_sample[m - 1]) out++;
    } else {
      nlook++; hl[b] += 1;
    }
    st += x; sr += y; stt += x * x; srr += y * y; str += x * y;
    if (i) loc += fabs((double)r - (double)prev) / (double)(m + 1);
    prev = r;
  }
  features[0] = (float)((double)nins / n);
  features[1] = nlook ? (float)(1 - mlsys__index_mdl_norm_entropy(hl, 64)) : 0.f;
  features[2] = nins ? (float)(1 - mlsys__index_mdl_norm_entropy(hi, 64)) : 0.f;
  features[5] = nins ? (float)((double)out / (double)nins) : 0.f;
  {
    double vt = stt / n - (st / n) * (st / n), vr = srr / n - (sr / n) * (sr / n), c = str / n - (st / n) * (sr / n);
    features[6] = vt > 1e-12 && vr > 1e-12 ? (float)(c / sqrt(vt * vr)) : 0.f;
  }
  features[7] = prefix->n > 1 ? (float)(loc / (n - 1)) : 0.f;
  for (k = 0; k < 8; k++) if (!isfinite(features[k])) features[k] = 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.8 k-NN fallback
   --------------------------------------------------------------------------------------------------------------- */
struct mlsys_index_knn {
  int k;
  size_t n_items, nkeys;
  float mu[8], sd[8];  /* feature offset and scale */
  float *feat;        /* n_items x 8, scaled */
  uint64_t *keys;     /* distinct configuration bucket keys (without expected_insert_frac: the grid entry) */
  double *val;        /* nkeys x n_items: mean log throughput, NaN where the item did not measure that key */
};

MLSYS_DEF void mlsys_index_knn_free(mlsys_index_knn *kn) {
  if (!kn) return;
  mlsys_free(kn->feat); mlsys_free(kn->keys); mlsys_free(kn->val);
  mlsys_free(kn);
}

MLSYS_DEF mlsys_status mlsys_index_knn_fit(const mlsys_index_train_item *items, size_t n_items, int k, mlsys_index_knn **out) {
  mlsys_index_knn *kn;
  size_t i, j, q, cap = 0, *cnt = NULL;
  mlsys_status s;
  int f;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: out is NULL");
  *out = NULL;
  if (!items || !n_items) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: no items");
  for (i = 0; i < n_items; i++) {
    if (!items[i].n || !items[i].mops) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: item %zu has no throughputs", i);
    if ((s = mlsys__index_mdl_check_cfgs(items[i].cfgs, items[i].n, "index knn fit")) != MLSYS_OK) return mlsys_prefix_error("item %zu", i);
    for (j = 0; j < items[i].n; j++)
      if (!(items[i].mops[j] > 0) || !isfinite(items[i].mops[j]))
        return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: item %zu configuration %zu: throughput %g is not a positive number", i, j,
                               items[i].mops[j]);
  }
  kn = (mlsys_index_knn *)mlsys_calloc(1, sizeof *kn);
  if (!kn) return MLSYS_ERR_NOMEM;
  kn->k = k > 0 ? k : 5;
  kn->n_items = n_items;
  kn->feat = (float *)mlsys_alloc(n_items, 8 * sizeof(float));
  if (!kn->feat) goto nomem;
  /* fixed scales, not standardisation: a feature that barely varies over the training items (say the key-gap entropy
     of one dataset's samples) would be blown up to unit spread and its noise would drown the informative ones. Every
     feature lies in [0, 1] or [-1, 1] except [4] (log2 segments), which counts a factor 2^16 as one unit. */
  for (f = 0; f < 8; f++) { kn->mu[f] = 0; kn->sd[f] = f == 4 ? 16.f : 1.f; }
  for (i = 0; i < n_items; i++)
    for (f = 0; f < 8; f++) kn->feat[i * 8 + f] = isfinite(items[i].features[f]) ? (items[i].features[f] - kn->mu[f]) / kn->sd[f] : 0.f;
  for (i = 0; i < n_items; i++)
    for (j = 0; j < items[i].n; j++) {
      uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
      for (q = 0; q < kn->nkeys && kn->keys[q] != key; q++) {}
      if (q == kn->nkeys) {
        if (q == cap) {
          size_t nc = cap ? 2 * cap : 64;
          uint64_t *k2 = (uint64_t *)mlsys_realloc_array(kn->keys, nc, sizeof *k2);
          if (!k2) goto nomem;
          kn->keys = k2; cap = nc;
        }
        kn->keys[kn->nkeys++] = key;
      }
    }
  kn->val = (double *)mlsys_calloc(kn->nkeys * n_items, sizeof(double));
  cnt = (size_t *)mlsys_calloc(kn->nkeys * n_items, sizeof(size_t));
  if (!kn->val || !cnt) goto nomem;
  for (i = 0; i < n_items; i++)
    for (j = 0; j < items[i].n; j++) {
      uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
      for (q = 0; kn->keys[q] != key; q++) {}
      kn->val[q * n_items + i] += log(items[i].mops[j]);   /* configurations sharing buckets are averaged */
      cnt[q * n_items + i]++;
    }
  for (q = 0; q < kn->nkeys * n_items; q++) kn->val[q] = cnt[q] ? kn->val[q] / (double)cnt[q] : NAN;
  mlsys_free(cnt);
  *out = kn;
  return MLSYS_OK;
nomem:
  mlsys_free(cnt);
  mlsys_index_knn_free(kn);
  return MLSYS_ERR_NOMEM;
}

MLSYS_DEF mlsys_status mlsys_index_knn_predict(const mlsys_index_knn *kn, const float features[8], const mlsys_index_config *cfgs,
                                               size_t n, double *mops) {
  size_t r, i, q;
  double *dist, z[8];
  size_t *sel;
  mlsys_status s;
  int f;
  if (!kn || !features || (n && !mops)) return mlsys_set_error(MLSYS_ERR_ARG, "index knn predict: NULL model, features or output");
  if ((s = mlsys__index_mdl_check_cfgs(cfgs, n, "index knn predict")) != MLSYS_OK) return s;
  if (!n) return MLSYS_OK;
  dist = (double *)mlsys_alloc(kn->n_items, sizeof *dist);
  sel = (size_t *)mlsys_alloc(kn->n_items, sizeof *sel);
  if (!dist || !sel) { mlsys_free(dist); mlsys_free(sel); return MLSYS_ERR_NOMEM; }
  for (f = 0; f < 8; f++) z[f] = isfinite(features[f]) ? (features[f] - kn->mu[f]) / kn->sd[f] : 0;
  for (i = 0; i < kn->n_items; i++) {
    double d = 0;
    for (f = 0; f < 8; f++) d += (z[f] - kn->feat[i * 8 + f]) * (z[f] - kn->feat[i * 8 + f]);
    dist[i] = d;
  }
  for (r = 0; r < n; r++) {
    uint64_t key = mlsys__index_mdl_ckey2(&cfgs[r], 0);
    size_t ns = 0, a, b;
    double acc = 0;
    for (q = 0; q < kn->nkeys && kn->keys[q] != key; q++) {}
    if (q == kn->nkeys) {   /* never measured: the nearest measured configuration by bucket distance, same leaf first */
      int bb[MLSYS__INDEX_MDL_NKNOB], best = -1, bd = 1 << 30, t;
      mlsys__index_mdl_buckets(&cfgs[r], bb);
      for (a = 0; a < kn->nkeys; a++) {
        int d = 0;
        for (t = 0; t < MLSYS__INDEX_MDL_NKNOB; t++) {
          int kb = (int)((kn->keys[a] >> (8 * (MLSYS__INDEX_MDL_NKNOB - 1 - t))) & 0xff);
          d += (t == 0 ? 1000 : 1) * (kb > bb[t] ? kb - bb[t] : bb[t] - kb);
        }
        if (d < bd) { bd = d; best = (int)a; }
      }
      q = (size_t)best;
    }
    for (i = 0; i < kn->n_items; i++)   /* insertion into the sorted selection: ties keep item order */
      if (!isnan(kn->val[q * kn->n_items + i])) {
        for (a = ns; a > 0 && dist[sel[a - 1]] > dist[i]; a--) sel[a] = sel[a - 1];
        sel[a] = i;
        ns++;
        if (ns > (size_t)kn->k) ns = (size_t)kn->k;
      }
    for (b = 0; b < ns; b++) acc += kn->val[q * kn->n_items + sel[b]];
    mops[r] = ns ? exp(acc / (double)ns) : NAN;
  }
  mlsys_free(dist); mlsys_free(sel);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.9 The default grid (spec B3.5)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_index_grid_default(double eif, mlsys_index_config **cfgs, size_t *n) {
  mlsys_index_config *c;
  size_t k = 0;
  int a, b, d;
  if (!cfgs || !n) return mlsys_set_error(MLSYS_ERR_ARG, "index grid: NULL output");
  *cfgs = NULL; *n = 0;
  if (!(eif >= 0 && eif <= 1)) return mlsys_set_error(MLSYS_ERR_ARG, "index grid: expected insert fraction %g is not in [0, 1]", eif);
  c = (mlsys_index_config *)mlsys_calloc(1 + 30 + 105, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  c[k].leaf = MLSYS_INDEX_GA; c[k].expected_insert_frac = eif; k++;   /* ALEX's cost model */
  for (a = 0; a < 6; a++)
    for (b = 0; b < 5; b++) {
      c[k].leaf = MLSYS_INDEX_GA; c[k].expected_insert_frac = eif;
      c[k].msi = mlsys__index_mdl_msi_v[a]; c[k].msh = mlsys__index_mdl_msh_v[b];
      k++;
    }
  for (a = 0; a < 7; a++)
    for (b = 0; b < 4; b++)
      for (d = 0; d < 4; d++) {
        if (mlsys__index_mdl_nf_v[d] > mlsys__index_mdl_mnf_v[b]) continue;
        c[k].leaf = MLSYS_INDEX_FLOG;
        c[k].mf_size = (uint32_t)mlsys__index_mdl_mf_v[a]; c[k].mnf = (uint32_t)mlsys__index_mdl_mnf_v[b]; c[k].nf = (uint32_t)mlsys__index_mdl_nf_v[d];
        k++;
      }
  *cfgs = c; *n = k;
  return MLSYS_OK;
}

#endif
#endif
