/* examples/remat_cnn_layers.h — a small CNN's training step in plain C, one graph node at a time, for
   mlsys_remat_execute. Included by examples/remat_cnn.c, tests/test_remat_exec.c and (as the CPU reference of
   the GPU kernels) kernels/mlsys_remat_cnn_kernels.cuh; everything is static, so include it in one file.

   The network is tools/export_torch_graph.py's "smallcnn" (the PyTorch module SmallCNN there):
       input [N,3,32,32] -> conv1 Conv2d(3,8,3,padding=1) -> relu1 -> pool1 MaxPool2d(2)
       -> conv2 Conv2d(8,16,3,padding=1) -> relu2 -> pool2 MaxPool2d(2) -> flatten -> fc1 Linear(1024,64)
       -> relu3 -> fc2 Linear(64,10) -> loss (mean softmax cross-entropy) -> grad_fc2 ... grad_conv1
   whose training graph, exported with --alias-mem bytes, is tests/data/graphs/smallcnn_b8.json. The code takes
   the graph's word for what each node reads (its deps) and how many bytes it writes (its mem), and checks at
   start-up (cnn_bind) that the layers agree: a graph exported differently fails with a sentence, not a crash.

   What each node's buffer holds (NCHW float32 unless said otherwise):
     conv, relu, fc       the layer's output
     pool                 the max values, then their int64 indices (h*W + w within the input plane, as PyTorch's
                          max_pool2d_with_indices): the exporter counts the indices as the pool's auxiliary output
     flatten              a copy of the pool's values (the graph gives views their full bytes: --alias-mem bytes)
     loss                 the mean loss (one float), then dloss/dlogits [N,classes] (the exporter's loss node
                          also produces the seed the backward consumes)
     grad_<layer>         dloss/d(the layer's input); 0 bytes for conv1, whose input needs no gradient
   Parameter gradients are not node outputs: they live in the model (fixed memory), and the backward node that
   owns them writes them (never accumulates) on its commit evaluation only.

   Determinism: every output element is one sum in a fixed order, computed from the node's inputs and the
   parameters only, so any recomputation produces the same bits, and every schedule yields the same gradients.

   SECTIONS: 1. layers  2. the model  3. binding to the graph  4. the kernel for mlsys_remat_execute and a
   straight-line reference step  5. a counting allocator (measures what the executor holds) */
#ifndef REMAT_CNN_LAYERS_H
#define REMAT_CNN_LAYERS_H

#include "mlsys_remat.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ================================================================================================================
   1. Layers. Flat arrays; N = batch. Each function is the CPU reference of the GPU kernel of the same name in
      kernels/mlsys_remat_cnn_kernels.cuh, which sums in the same order.
   ================================================================================================================ */
#ifdef __CUDACC__
#define CNN_HD __host__ __device__
#else
#define CNN_HD
#endif
/* On the GPU a*b+c would become one fused multiply-add (different rounding); these keep the two apart there. */
#if defined(__CUDA_ARCH__)
#define CNN_MUL(a, b) __fmul_rn((a), (b))
#define CNN_ADD(a, b) __fadd_rn((a), (b))
#define CNN_DIV(a, b) __fdiv_rn((a), (b))
#else
#define CNN_MUL(a, b) ((a) * (b))
#define CNN_ADD(a, b) ((a) + (b))
#define CNN_DIV(a, b) ((a) / (b))
#endif

/* exp(x) from +, x and floor only (Cody-Waite reduction and the Cephes expf polynomial, relative error about
   1e-7), so that the CPU and the GPU compute the same bits; libm's expf and CUDA's expf differ in the last bit. */
static CNN_HD inline float cnn_expf(float x) {
  float k, r, z, p, scale;
  uint32_t bits;
  if (x < -87.0f) return 0.0f;   /* below the smallest normal result (softmax only passes x <= 0) */
  if (x > 88.0f) x = 88.0f;
  k = floorf(CNN_ADD(CNN_MUL(x, 1.44269504088896341f), 0.5f));
  r = CNN_ADD(x, -CNN_MUL(k, 0.693359375f));     /* k * 0.693359375 is exact: 9 significant bits times |k| < 128 */
  r = CNN_ADD(r, CNN_MUL(k, 2.12194440e-4f));
  z = CNN_MUL(r, r);
  p = 1.9875691500e-4f;
  p = CNN_ADD(CNN_MUL(p, r), 1.3981999507e-3f);
  p = CNN_ADD(CNN_MUL(p, r), 8.3334519073e-3f);
  p = CNN_ADD(CNN_MUL(p, r), 4.1665795894e-2f);
  p = CNN_ADD(CNN_MUL(p, r), 1.6666665459e-1f);
  p = CNN_ADD(CNN_MUL(p, r), 5.0000001201e-1f);
  p = CNN_ADD(CNN_ADD(CNN_MUL(p, z), r), 1.0f);
  bits = (uint32_t)((int)k + 127) << 23;         /* 2^k, k in [-126, 127] */
  memcpy(&scale, &bits, sizeof scale);
  return CNN_MUL(p, scale);
}

/* y[n,k,i,j] = b[k] + sum_c sum_r sum_s w[k,c,r,s] * x[n,c,i+r-pad,j+s-pad]   (stride 1, zero padding) */
static void cnn_conv2d_forward(float *y, const float *x, const float *w, const float *b, int N, int C, int H, int W,
                               int K, int R, int pad) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k, i, j, c, r, s;
  for (n = 0; n < N; n++)
    for (k = 0; k < K; k++)
      for (i = 0; i < OH; i++)
        for (j = 0; j < OW; j++) {
          float acc = b[k];
          for (c = 0; c < C; c++)
            for (r = 0; r < R; r++) {
              int h = i + r - pad;
              if (h < 0 || h >= H) continue;
              for (s = 0; s < R; s++) {
                int v = j + s - pad;
                if (v < 0 || v >= W) continue;
                acc += w[((k * C + c) * R + r) * R + s] * x[((size_t)(n * C + c) * H + h) * W + v];
              }
            }
          y[((size_t)(n * K + k) * OH + i) * OW + j] = acc;
        }
}

/* dx[n,c,h,v] = sum_k sum_r sum_s w[k,c,r,s] * dy[n,k,h-r+pad,v-s+pad]   (the adjoint of the forward) */
static void cnn_conv2d_backward_input(float *dx, const float *dy, const float *w, int N, int C, int H, int W, int K,
                                      int R, int pad) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k, h, v, c, r, s;
  for (n = 0; n < N; n++)
    for (c = 0; c < C; c++)
      for (h = 0; h < H; h++)
        for (v = 0; v < W; v++) {
          float acc = 0.0f;
          for (k = 0; k < K; k++)
            for (r = 0; r < R; r++) {
              int i = h - r + pad;
              if (i < 0 || i >= OH) continue;
              for (s = 0; s < R; s++) {
                int j = v - s + pad;
                if (j < 0 || j >= OW) continue;
                acc += w[((k * C + c) * R + r) * R + s] * dy[((size_t)(n * K + k) * OH + i) * OW + j];
              }
            }
          dx[((size_t)(n * C + c) * H + h) * W + v] = acc;
        }
}

/* dw[k,c,r,s] = sum_n sum_i sum_j dy[n,k,i,j] * x[n,c,i+r-pad,j+s-pad];  db[k] = sum_n sum_i sum_j dy[n,k,i,j] */
static void cnn_conv2d_backward_params(float *dw, float *db, const float *dy, const float *x, int N, int C, int H,
                                       int W, int K, int R, int pad) {
  int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1, n, k, i, j, c, r, s;
  for (k = 0; k < K; k++)
    for (c = 0; c < C; c++)
      for (r = 0; r < R; r++)
        for (s = 0; s < R; s++) {
          float acc = 0.0f;
          for (n = 0; n < N; n++)
            for (i = 0; i < OH; i++) {
              int h = i + r - pad;
              if (h < 0 || h >= H) continue;
              for (j = 0; j < OW; j++) {
                int v = j + s - pad;
                if (v < 0 || v >= W) continue;
                acc += dy[((size_t)(n * K + k) * OH + i) * OW + j] * x[((size_t)(n * C + c) * H + h) * W + v];
              }
            }
          dw[((k * C + c) * R + r) * R + s] = acc;
        }
  for (k = 0; k < K; k++) {
    float acc = 0.0f;
    for (n = 0; n < N; n++)
      for (i = 0; i < OH * OW; i++) acc += dy[(size_t)(n * K + k) * OH * OW + i];
    db[k] = acc;
  }
}

static void cnn_relu_forward(float *y, const float *x, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
/* dx = dy where the ReLU passed its input. a is either its input or its output: both are > 0 at exactly the
   same places, so the graph may hand the backward either (PyTorch saves the output). */
static void cnn_relu_backward(float *dx, const float *dy, const float *a, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) dx[i] = a[i] > 0.0f ? dy[i] : 0.0f;
}

/* The position of the maximum of window (i,j) of a 2x2/stride-2 max-pool over an H x W plane, h*W + v: the first
   maximum in row-major order, NaN winning, as PyTorch's CPU kernel decides. */
static CNN_HD inline int64_t cnn_pool_argmax(const float *plane, int W, int i, int j) {
  float best = -INFINITY;
  int64_t at = (int64_t)(2 * i) * W + 2 * j;
  int r, s;
  for (r = 0; r < 2; r++)
    for (s = 0; s < 2; s++) {
      int64_t q = (int64_t)(2 * i + r) * W + (2 * j + s);
      float v = plane[q];
      if (v > best || v != v) { best = v; at = q; }
    }
  return at;
}
/* y[n,c,i,j] = max of the 2x2 window; idx = where it was (int64, PyTorch's layout). Odd edges are dropped. */
static void cnn_maxpool2x2_forward(float *y, int64_t *idx, const float *x, int N, int C, int H, int W) {
  int OH = H / 2, OW = W / 2, p, i, j;
  for (p = 0; p < N * C; p++) {
    const float *plane = x + (size_t)p * H * W;
    for (i = 0; i < OH; i++)
      for (j = 0; j < OW; j++) {
        int64_t at = cnn_pool_argmax(plane, W, i, j);
        y[((size_t)p * OH + i) * OW + j] = plane[at];
        idx[((size_t)p * OH + i) * OW + j] = at;
      }
  }
}
/* dx[n,c,h,v] = dy of the window containing (h,v) if (h,v) was its maximum, else 0 (windows do not overlap, so
   each element receives at most one term). The maxima come from the saved indices when the graph gives the
   backward the pool's output (idx != NULL), else they are recomputed from the pool's input x, which gives the
   same positions because the forward's rule is applied to the same bits. */
static void cnn_maxpool2x2_backward(float *dx, const float *dy, const int64_t *idx, const float *x, int N, int C, int H,
                                    int W) {
  int OH = H / 2, OW = W / 2, p, h, v;
  for (p = 0; p < N * C; p++)
    for (h = 0; h < H; h++)
      for (v = 0; v < W; v++) {
        int i = h / 2, j = v / 2;
        float g = 0.0f;
        if (i < OH && j < OW) {
          size_t o = ((size_t)p * OH + i) * OW + j;
          int64_t at = idx ? idx[o] : cnn_pool_argmax(x + (size_t)p * H * W, W, i, j);
          if (at == (int64_t)h * W + v) g = dy[o];
        }
        dx[((size_t)p * H + h) * W + v] = g;
      }
}

/* y[n,o] = b[o] + sum_i w[o,i] * x[n,i]   (w is [O, I], as torch.nn.Linear stores it) */
static void cnn_linear_forward(float *y, const float *x, const float *w, const float *b, int N, int I, int O) {
  int n, o, i;
  for (n = 0; n < N; n++)
    for (o = 0; o < O; o++) {
      float acc = b[o];
      for (i = 0; i < I; i++) acc += w[(size_t)o * I + i] * x[(size_t)n * I + i];
      y[(size_t)n * O + o] = acc;
    }
}
/* dx[n,i] = sum_o dy[n,o] * w[o,i] */
static void cnn_linear_backward_input(float *dx, const float *dy, const float *w, int N, int I, int O) {
  int n, o, i;
  for (n = 0; n < N; n++)
    for (i = 0; i < I; i++) {
      float acc = 0.0f;
      for (o = 0; o < O; o++) acc += dy[(size_t)n * O + o] * w[(size_t)o * I + i];
      dx[(size_t)n * I + i] = acc;
    }
}
/* dw[o,i] = sum_n dy[n,o] * x[n,i];  db[o] = sum_n dy[n,o] */
static void cnn_linear_backward_params(float *dw, float *db, const float *dy, const float *x, int N, int I, int O) {
  int n, o, i;
  for (o = 0; o < O; o++) {
    float acc = 0.0f;
    for (i = 0; i < I; i++) {
      float a = 0.0f;
      for (n = 0; n < N; n++) a += dy[(size_t)n * O + o] * x[(size_t)n * I + i];
      dw[(size_t)o * I + i] = a;
    }
    for (n = 0; n < N; n++) acc += dy[(size_t)n * O + o];
    db[o] = acc;
  }
}

/* One sample's softmax cross-entropy: returns log(sum_c exp(z_c)) - z_label and writes
   dz_c = (softmax(z)_c - [c == label]) / N, the gradient of the batch mean. */
static CNN_HD inline float cnn_xent_row(float *dz, const float *z, int64_t label, int classes, int N) {
  float mx = z[0], sum = 0.0f;
  int c;
  for (c = 1; c < classes; c++) mx = z[c] > mx ? z[c] : mx;
  for (c = 0; c < classes; c++) sum = CNN_ADD(sum, cnn_expf(CNN_ADD(z[c], -mx)));
  for (c = 0; c < classes; c++) {
    float p = CNN_DIV(cnn_expf(CNN_ADD(z[c], -mx)), sum);
    dz[c] = CNN_DIV(CNN_ADD(p, c == label ? -1.0f : 0.0f), (float)N);
  }
  return CNN_ADD(CNN_ADD(logf(sum), mx), -z[label]);
}
/* The batch mean of the per-sample losses (summed in sample order) and dloss/dz for all N rows. */
static float cnn_softmax_xent_forward(float *dz, const float *z, const int64_t *labels, int N, int classes) {
  float total = 0.0f;
  int n;
  for (n = 0; n < N; n++)
    total += cnn_xent_row(dz + (size_t)n * classes, z + (size_t)n * classes, labels[n], classes, N);
  return total / (float)N;
}

/* ================================================================================================================
   2. The model: what the graph calls fixed memory (parameters, their gradients, the input, the labels)
   ================================================================================================================ */
enum { CNN_CONV1, CNN_RELU1, CNN_POOL1, CNN_CONV2, CNN_RELU2, CNN_POOL2, CNN_FLATTEN, CNN_FC1, CNN_RELU3, CNN_FC2,
       CNN_NLAYERS };
typedef enum { CNN_OP_CONV, CNN_OP_RELU, CNN_OP_POOL, CNN_OP_FLATTEN, CNN_OP_LINEAR } cnn_op;

typedef struct {
  const char *name;         /* the graph's node name (the PyTorch attribute name) */
  cnn_op op;
  int c, h, w;              /* input per sample: channels (features for linear layers), height, width */
  int k, oh, ow;            /* output per sample */
  size_t nw, nb;            /* parameter counts: weight, bias (0 for layers without) */
  float *wt, *b;            /* parameters, pointing into cnn_model.params */
  float *dwt, *db;          /* their gradients, pointing into cnn_model.grads */
} cnn_layer;

/* What one graph node is: a layer's forward or backward, or the loss; and where its inputs are in its deps. */
typedef struct {
  int layer;                /* CNN_* or -1 for the loss node */
  int backward;
  int dy, x, y;             /* dep positions of: the incoming gradient, the layer's input, its output; -1 absent */
  uint64_t out_bytes;       /* what the node writes: must equal the graph's mem */
} cnn_binding;

typedef struct {
  int batch, classes;
  cnn_layer layer[CNN_NLAYERS];
  size_t nparams;
  float *params, *grads;    /* all parameters / gradients, in PyTorch's state_dict order */
  float *input;             /* [N,3,32,32] */
  int64_t *labels;          /* [N] */
  float loss;               /* written by the loss node's commit evaluation */
  int n;                    /* graph nodes bound (0 before cnn_bind) */
  cnn_binding *bind;        /* [n] */
  long *evals, *commits;    /* [n] kernel calls per node (the tests check recomputation and commits) */
} cnn_model;

static size_t cnn_layer_in_count(const cnn_layer *L) { return (size_t)L->c * L->h * L->w; }
static size_t cnn_layer_out_count(const cnn_layer *L) { return (size_t)L->k * L->oh * L->ow; }

static void cnn_model_free(cnn_model *m) {
  mlsys_free(m->params);
  mlsys_free(m->grads);
  mlsys_free(m->input);
  mlsys_free(m->labels);
  mlsys_free(m->bind);
  mlsys_free(m->evals);
  mlsys_free(m->commits);
  memset(m, 0, sizeof *m);
}

/* SmallCNN at batch N (32x32 RGB input, 10 classes), initialised from seed as PyTorch initialises it:
   weights and biases uniform in +-1/sqrt(fan_in), input N(0,1), labels uniform over the classes. */
static mlsys_status cnn_model_init(cnn_model *m, int batch, uint64_t seed) {
  static const struct { const char *name; cnn_op op; int k; } spec[CNN_NLAYERS] = {
      {"conv1", CNN_OP_CONV, 8},  {"relu1", CNN_OP_RELU, 0},    {"pool1", CNN_OP_POOL, 0},
      {"conv2", CNN_OP_CONV, 16}, {"relu2", CNN_OP_RELU, 0},    {"pool2", CNN_OP_POOL, 0},
      {"flatten", CNN_OP_FLATTEN, 0}, {"fc1", CNN_OP_LINEAR, 64}, {"relu3", CNN_OP_RELU, 0},
      {"fc2", CNN_OP_LINEAR, 10}};
  int c = 3, h = 32, w = 32, i;
  size_t off = 0, j;
  mlsys_rng rng;
  memset(m, 0, sizeof *m);
  if (batch <= 0 || batch > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: batch %d out of range", batch);
  m->batch = batch;
  m->classes = 10;
  for (i = 0; i < CNN_NLAYERS; i++) {
    cnn_layer *L = &m->layer[i];
    L->name = spec[i].name;
    L->op = spec[i].op;
    L->c = c; L->h = h; L->w = w;
    switch (L->op) {
    case CNN_OP_CONV: L->k = spec[i].k; L->oh = h; L->ow = w; L->nw = (size_t)L->k * c * 9; L->nb = L->k; break;
    case CNN_OP_RELU: L->k = c; L->oh = h; L->ow = w; break;
    case CNN_OP_POOL: L->k = c; L->oh = h / 2; L->ow = w / 2; break;
    case CNN_OP_FLATTEN: L->k = c * h * w; L->oh = L->ow = 1; break;
    case CNN_OP_LINEAR: L->k = spec[i].k; L->oh = L->ow = 1; L->nw = (size_t)L->k * c; L->nb = L->k; break;
    }
    c = L->k; h = L->oh; w = L->ow;
    m->nparams += L->nw + L->nb;
  }
  m->params = (float *)mlsys_calloc(m->nparams, sizeof(float));
  m->grads = (float *)mlsys_calloc(m->nparams, sizeof(float));
  m->input = (float *)mlsys_alloc((size_t)batch * 3 * 32 * 32, sizeof(float));
  m->labels = (int64_t *)mlsys_alloc((size_t)batch, sizeof(int64_t));
  if (!m->params || !m->grads || !m->input || !m->labels) { cnn_model_free(m); return MLSYS_ERR_NOMEM; }
  mlsys_rng_seed(&rng, seed);
  for (i = 0; i < CNN_NLAYERS; i++) {
    cnn_layer *L = &m->layer[i];
    float bound = L->op == CNN_OP_CONV ? 1.0f / sqrtf((float)(L->c * 9)) : 1.0f / sqrtf((float)L->c);
    if (!L->nw) continue;
    L->wt = m->params + off; L->dwt = m->grads + off; off += L->nw;
    L->b = m->params + off; L->db = m->grads + off; off += L->nb;
    for (j = 0; j < L->nw; j++) L->wt[j] = (float)((2.0 * mlsys_rng_uniform(&rng) - 1.0) * bound);
    for (j = 0; j < L->nb; j++) L->b[j] = (float)((2.0 * mlsys_rng_uniform(&rng) - 1.0) * bound);
  }
  for (j = 0; j < (size_t)batch * 3 * 32 * 32; j++) m->input[j] = (float)mlsys_rng_normal(&rng);
  for (j = 0; j < (size_t)batch; j++) m->labels[j] = (int64_t)mlsys_rng_below(&rng, (uint64_t)m->classes);
  return MLSYS_OK;
}

/* Bytes of a layer's forward output as a graph node: pools add their int64 indices. */
static uint64_t cnn_forward_bytes(const cnn_layer *L, int N) {
  uint64_t n = (uint64_t)N * cnn_layer_out_count(L);
  return L->op == CNN_OP_POOL ? n * (sizeof(float) + sizeof(int64_t)) : n * sizeof(float);
}

/* ================================================================================================================
   3. Binding to the graph
   ================================================================================================================ */
static int cnn_layer_by_name(const cnn_model *m, const char *name) {
  int i;
  for (i = 0; name && i < CNN_NLAYERS; i++)
    if (!strcmp(m->layer[i].name, name)) return i;
  return -1;
}

/* Map every node of g to a layer and check it against the layers: node names, which deps a node has (forward
   nodes read their predecessor layer; backward nodes the gradient from the next layer or the loss, plus the
   saved tensors the layer needs: conv and linear their input, relu and pool their input or output), and every
   node's mem against the bytes the layer writes. The first mismatch is the error, in a sentence. */
static mlsys_status cnn_bind(cnn_model *m, const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  int fwd[CNN_NLAYERS], bwd[CNN_NLAYERS], loss = -1, v, i, j;
  const int N = m->batch;
  char a[48], b2[48], c3[48];
  mlsys_free(m->bind); mlsys_free(m->evals); mlsys_free(m->commits);
  m->n = 0;
  m->bind = (cnn_binding *)mlsys_calloc((size_t)d->n + 1, sizeof(cnn_binding));
  m->evals = (long *)mlsys_calloc((size_t)d->n + 1, sizeof(long));
  m->commits = (long *)mlsys_calloc((size_t)d->n + 1, sizeof(long));
  if (!m->bind || !m->evals || !m->commits) return MLSYS_ERR_NOMEM;
  if (g->batch && g->batch != N)
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: the graph is for batch %d, the model has %d", g->batch, N);
  for (i = 0; i < CNN_NLAYERS; i++) fwd[i] = bwd[i] = -1;
  /* pass 1: who is who */
  for (v = 0; v < d->n; v++) {
    cnn_binding *B = &m->bind[v];
    const char *name = d->name ? d->name[v] : NULL;
    B->dy = B->x = B->y = -1;
    if (g->kind[v] == MLSYS_REMAT_L) {
      if (loss >= 0) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: two loss nodes (%d and %d)", loss, v);
      B->layer = -1;
      loss = v;
    } else if (g->kind[v] == MLSYS_REMAT_F) {
      if ((i = cnn_layer_by_name(m, name)) < 0 || fwd[i] >= 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: forward node %d '%s' is not a layer of the model, or a "
                               "second node for one", v, mlsys_remat_node_name(g, v, a, sizeof a));
      B->layer = i;
      fwd[i] = v;
    } else if (g->kind[v] == MLSYS_REMAT_B) {
      i = g->fwd_of && g->fwd_of[v] >= 0 && g->fwd_of[v] < d->n && d->name
              ? cnn_layer_by_name(m, d->name[g->fwd_of[v]])
              : (name && !strncmp(name, "grad_", 5) ? cnn_layer_by_name(m, name + 5) : -1);
      if (i < 0 || bwd[i] >= 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: backward node %d '%s' differentiates no layer of the "
                               "model, or a second node for one", v, mlsys_remat_node_name(g, v, a, sizeof a));
      B->layer = i;
      B->backward = 1;
      bwd[i] = v;
    } else {
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node %d '%s' has kind O, which this model does not have", v,
                             mlsys_remat_node_name(g, v, a, sizeof a));
    }
  }
  if (loss < 0) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: the graph has no loss node");
  for (i = 0; i < CNN_NLAYERS; i++)
    if (fwd[i] < 0 || bwd[i] < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: layer '%s' has no %s node in the graph", m->layer[i].name,
                             fwd[i] < 0 ? "forward" : "backward");
  /* pass 2: deps and bytes */
  for (v = 0; v < d->n; v++) {
    cnn_binding *B = &m->bind[v];
    const cnn_layer *L = B->layer >= 0 ? &m->layer[B->layer] : NULL;
    int nd = d->in_off[v + 1] - d->in_off[v];
    const int *dep = d->in + d->in_off[v];
    if (!L) {                                                       /* loss <- fc2 */
      if (nd != 1 || dep[0] != fwd[CNN_FC2])
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: the loss node must read exactly the logits ('%s')",
                               m->layer[CNN_FC2].name);
      B->x = 0;
      B->out_bytes = sizeof(float) * (1 + (uint64_t)N * m->classes);
    } else if (!B->backward) {                                      /* F <- the previous layer (conv1: input) */
      int want = B->layer == 0 ? 0 : 1;
      if (nd != want || (want && dep[0] != fwd[B->layer - 1]))
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: forward node '%s' must read %s", L->name,
                               want ? m->layer[B->layer - 1].name : "only the input (fixed memory)");
      B->x = want ? 0 : -1;
      B->out_bytes = cnn_forward_bytes(L, N);
    } else {
      int next = B->layer + 1 < CNN_NLAYERS ? bwd[B->layer + 1] : loss;
      for (j = 0; j < nd; j++) {
        int u = dep[j], *role = NULL;
        if (u == next) role = &B->dy;
        else if (u == fwd[B->layer]) role = &B->y;
        else if (B->layer > 0 && u == fwd[B->layer - 1]) role = &B->x;
        if (!role || *role >= 0)
          return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: backward node '%s' reads '%s', which is not the "
                                 "gradient from '%s', the layer's input or its output",
                                 mlsys_remat_node_name(g, v, a, sizeof a), mlsys_remat_node_name(g, u, b2, sizeof b2),
                                 mlsys_remat_node_name(g, next, c3, sizeof c3));
        *role = j;
      }
      if (B->dy < 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: backward node '%s' does not read the incoming gradient",
                               mlsys_remat_node_name(g, v, a, sizeof a));
      if ((L->op == CNN_OP_CONV || L->op == CNN_OP_LINEAR) && B->layer > 0 && B->x < 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: '%s' needs the layer's input for the weight gradient",
                               mlsys_remat_node_name(g, v, a, sizeof a));
      if ((L->op == CNN_OP_RELU || L->op == CNN_OP_POOL) && B->x < 0 && B->y < 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: '%s' needs the layer's input or output",
                               mlsys_remat_node_name(g, v, a, sizeof a));
      B->out_bytes = B->layer == 0 ? 0 : (uint64_t)N * cnn_layer_in_count(L) * sizeof(float);
    }
    if (d->size[v] != B->out_bytes)
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node '%s' has %llu bytes in the graph; the layer writes "
                             "%llu%s", mlsys_remat_node_name(g, v, a, sizeof a), (unsigned long long)d->size[v],
                             (unsigned long long)B->out_bytes,
                             L && L->op == CNN_OP_FLATTEN ? " (export with --alias-mem bytes: views are copies here)"
                                                          : "");
    if (L && L->op == CNN_OP_POOL && !B->backward && (N * cnn_layer_out_count(L)) % 2)
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: '%s' has an odd number of values; its int64 indices "
                             "would be misaligned", L->name);
  }
  m->n = d->n;
  return MLSYS_OK;
}

/* ================================================================================================================
   4. The kernel for mlsys_remat_execute, and the straight-line reference
   ================================================================================================================ */
/* A layer's forward from input x into the node's buffer out. */
static void cnn_forward(const cnn_model *m, int li, const float *x, void *out) {
  const cnn_layer *L = &m->layer[li];
  const int N = m->batch;
  float *y = (float *)out;
  switch (L->op) {
  case CNN_OP_CONV: cnn_conv2d_forward(y, x, L->wt, L->b, N, L->c, L->h, L->w, L->k, 3, 1); break;
  case CNN_OP_RELU: cnn_relu_forward(y, x, (size_t)N * cnn_layer_in_count(L)); break;
  case CNN_OP_POOL:
    cnn_maxpool2x2_forward(y, (int64_t *)(y + (size_t)N * cnn_layer_out_count(L)), x, N, L->c, L->h, L->w);
    break;
  case CNN_OP_FLATTEN: memcpy(y, x, (size_t)N * cnn_layer_in_count(L) * sizeof(float)); break;
  case CNN_OP_LINEAR: cnn_linear_forward(y, x, L->wt, L->b, N, L->c, L->k); break;
  }
}

/* A layer's backward: dx (NULL for the first layer) from dy and the saved tensors x (the layer's input) and y (its
   forward node's buffer); the parameter gradients too when params = 1. */
static void cnn_backward(const cnn_model *m, int li, const float *dy, const float *x, const void *y, float *dx,
                         int params) {
  const cnn_layer *L = &m->layer[li];
  const int N = m->batch;
  const size_t nin = (size_t)N * cnn_layer_in_count(L);
  switch (L->op) {
  case CNN_OP_CONV:
    if (dx) cnn_conv2d_backward_input(dx, dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1);
    if (params) cnn_conv2d_backward_params(L->dwt, L->db, dy, x, N, L->c, L->h, L->w, L->k, 3, 1);
    break;
  case CNN_OP_RELU: cnn_relu_backward(dx, dy, x ? x : (const float *)y, nin); break;
  case CNN_OP_POOL:
    cnn_maxpool2x2_backward(dx, dy, y ? (const int64_t *)((const float *)y + (size_t)N * cnn_layer_out_count(L)) : NULL,
                            x, N, L->c, L->h, L->w);
    break;
  case CNN_OP_FLATTEN: memcpy(dx, dy, nin * sizeof(float)); break;
  case CNN_OP_LINEAR:
    if (dx) cnn_linear_backward_input(dx, dy, L->wt, N, L->c, L->k);
    if (params) cnn_linear_backward_params(L->dwt, L->db, dy, x, N, L->c, L->k);
    break;
  }
}

/* The mlsys_remat_kernel_fn: node -> layer, inputs -> tensors (by the roles cnn_bind found). */
static mlsys_status cnn_kernel(void *ud, int node, void *const *in, const uint64_t *in_bytes, int nin, void *out,
                               uint64_t out_bytes, int commit) {
  cnn_model *m = (cnn_model *)ud;
  const cnn_binding *B;
  (void)in_bytes;
  if (node < 0 || node >= m->n) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node %d is not bound", node);
  B = &m->bind[node];
  if (out_bytes != B->out_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node %d gets %llu bytes, writes %llu", node,
                           (unsigned long long)out_bytes, (unsigned long long)B->out_bytes);
  m->evals[node]++;
  m->commits[node] += commit != 0;
  if (B->layer < 0) {                                   /* loss: [mean loss, dloss/dlogits] */
    float *o = (float *)out, loss;
    if (nin != 1) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: loss with %d inputs", nin);
    loss = cnn_softmax_xent_forward(o + 1, (const float *)in[0], m->labels, m->batch, m->classes);
    o[0] = loss;
    if (commit) m->loss = loss;
  } else if (!B->backward) {
    cnn_forward(m, B->layer, B->x >= 0 ? (const float *)in[B->x] : m->input, out);
  } else {
    const float *dy = (const float *)in[B->dy];
    if (B->layer + 1 == CNN_NLAYERS) dy += 1;          /* the loss node's buffer: skip the loss value */
    cnn_backward(m, B->layer, dy, B->x >= 0 ? (const float *)in[B->x] : (B->layer == 0 ? m->input : NULL),
                 B->y >= 0 ? in[B->y] : NULL, (float *)out, commit);
  }
  return MLSYS_OK;
}

/* The training step written out layer by layer, without a graph or an executor: the answer every schedule must
   reproduce bit for bit. Writes m->grads and m->loss. */
static mlsys_status cnn_reference_step(cnn_model *m) {
  void *act[CNN_NLAYERS + 1];
  float *g[CNN_NLAYERS + 1];
  int i;
  mlsys_status st = MLSYS_OK;
  const int N = m->batch;
  memset(act, 0, sizeof act);
  memset(g, 0, sizeof g);
  for (i = 0; i < CNN_NLAYERS; i++)
    if (!(act[i] = mlsys_alloc((size_t)cnn_forward_bytes(&m->layer[i], N), 1))) st = MLSYS_ERR_NOMEM;
  for (i = 0; i < CNN_NLAYERS; i++)
    if (!(g[i] = (float *)mlsys_alloc((size_t)N * cnn_layer_in_count(&m->layer[i]), sizeof(float)))) st = MLSYS_ERR_NOMEM;
  g[CNN_NLAYERS] = (float *)mlsys_alloc((size_t)N * m->classes, sizeof(float));
  if (!g[CNN_NLAYERS]) st = MLSYS_ERR_NOMEM;
  if (st == MLSYS_OK) {
    for (i = 0; i < CNN_NLAYERS; i++) cnn_forward(m, i, i ? (const float *)act[i - 1] : m->input, act[i]);
    m->loss = cnn_softmax_xent_forward(g[CNN_NLAYERS], (const float *)act[CNN_FC2], m->labels, N, m->classes);
    for (i = CNN_NLAYERS - 1; i >= 0; i--)
      cnn_backward(m, i, g[i + 1], i ? (const float *)act[i - 1] : m->input, act[i], i ? g[i] : NULL, 1);
  }
  for (i = 0; i <= CNN_NLAYERS; i++) { if (i < CNN_NLAYERS) mlsys_free(act[i]); mlsys_free(g[i]); }
  return st;
}

/* The forward pass only: the loss at the current parameters (for finite differences). */
static mlsys_status cnn_reference_loss(cnn_model *m, float *loss) {
  void *act[CNN_NLAYERS];
  float *dz;
  int i;
  mlsys_status st = MLSYS_OK;
  memset(act, 0, sizeof act);
  for (i = 0; i < CNN_NLAYERS; i++)
    if (!(act[i] = mlsys_alloc((size_t)cnn_forward_bytes(&m->layer[i], m->batch), 1))) st = MLSYS_ERR_NOMEM;
  dz = (float *)mlsys_alloc((size_t)m->batch * m->classes, sizeof(float));
  if (!dz) st = MLSYS_ERR_NOMEM;
  if (st == MLSYS_OK) {
    for (i = 0; i < CNN_NLAYERS; i++) cnn_forward(m, i, i ? (const float *)act[i - 1] : m->input, act[i]);
    *loss = cnn_softmax_xent_forward(dz, (const float *)act[CNN_FC2], m->labels, m->batch, m->classes);
  }
  for (i = 0; i < CNN_NLAYERS; i++) mlsys_free(act[i]);
  mlsys_free(dz);
  return st;
}

/* ================================================================================================================
   5. A counting allocator: host memory, and its own count of live and peak bytes (independent of the
      executor's), optionally failing the k-th allocation (to test that failures leak nothing)
   ================================================================================================================ */
typedef struct {
  uint64_t live, peak;
  long allocs, releases;
  long fail_at;             /* > 0: the fail_at-th allocation fails with MLSYS_ERR_NOMEM */
} cnn_counting;

static mlsys_status cnn_counting_alloc(void *ud, uint64_t bytes, void **ptr) {
  cnn_counting *c = (cnn_counting *)ud;
  if (c->fail_at > 0 && c->allocs + 1 == c->fail_at)
    return mlsys_set_error(MLSYS_ERR_NOMEM, "allocation %ld refused (injected)", c->fail_at);
  if (!(*ptr = mlsys_alloc((size_t)bytes, 1))) return MLSYS_ERR_NOMEM;
  c->allocs++;
  c->live += bytes;
  if (c->live > c->peak) c->peak = c->live;
  return MLSYS_OK;
}
static void cnn_counting_release(void *ud, void *ptr, uint64_t bytes) {
  cnn_counting *c = (cnn_counting *)ud;
  c->releases++;
  c->live -= bytes;
  mlsys_free(ptr);
}

#endif /* REMAT_CNN_LAYERS_H */
