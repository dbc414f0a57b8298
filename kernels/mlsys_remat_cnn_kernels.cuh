/* kernels/mlsys_remat_cnn_kernels.cuh — the small CNN of examples/remat_cnn_layers.h as CUDA kernels, and what
   mlsys_remat_execute needs to run a plan on the GPU: a kernel function that launches them and a device
   allocator (cudaMalloc/cudaFree with its own count of live and peak bytes).

   Include from one .cu file after mlsys_remat.h (with MLSYS_CUDA defined); tests/cuda/test_remat_cnn_cuda.cu
   compares every kernel with its CPU reference and runs plans on the GPU. The executor is the same
   mlsys_remat_execute: only the kernel function and the allocator change.

   Every kernel is the GPU version of the CPU function named in its comment: one thread per output element,
   summing in the CPU's order, with multiplies and adds kept apart (__fmul_rn/__fadd_rn: nvcc would otherwise fuse
   them into multiply-adds, which round once instead of twice). No atomics: each output is written by one thread,
   so a GPU recomputation gives the same bits, and every GPU plan gives the same gradients bit for bit. Against
   the CPU the test allows a tolerance (it also counts bit-identical values, which this design should give in
   practice), because bit equality across devices is not promised: a host compiler may contract a*b+c into an
   FMA on the CPU side (-ffp-contract=fast on FMA hardware), and the loss value uses logf, which libm and CUDA round
   differently (the gradients do not: the softmax uses the shared cnn_expf).

   Launch configuration: 256 threads per block, grid from mlsys_cuda_blocks; everything runs on the default
   stream, so consecutive kernels are ordered and cudaFree (which synchronises) never frees a buffer in use. */
#ifndef MLSYS_REMAT_CNN_KERNELS_CUH
#define MLSYS_REMAT_CNN_KERNELS_CUH

#include "examples/remat_cnn_layers.h"

#define CNN_THREADS 256

/* ---- conv2d (stride 1, zero padding) ---- */
/* cnn_conv2d_forward */
__global__ static void cnn_k_conv2d_forward(float *y, const float *x, const float *w, const float *b, int N, int C,
                                            int H, int W, int K, int R, int pad) {
  const int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * K * OH * OW) return;
  int j = (int)(t % OW), i = (int)(t / OW % OH), k = (int)(t / ((size_t)OW * OH) % K), n = (int)(t / ((size_t)OW * OH * K));
  float acc = b[k];
  for (int c = 0; c < C; c++)
    for (int r = 0; r < R; r++) {
      int h = i + r - pad;
      if (h < 0 || h >= H) continue;
      for (int s = 0; s < R; s++) {
        int v = j + s - pad;
        if (v < 0 || v >= W) continue;
        acc = __fadd_rn(acc, __fmul_rn(w[((k * C + c) * R + r) * R + s], x[((size_t)(n * C + c) * H + h) * W + v]));
      }
    }
  y[t] = acc;
}
/* cnn_conv2d_backward_input */
__global__ static void cnn_k_conv2d_backward_input(float *dx, const float *dy, const float *w, int N, int C, int H,
                                                   int W, int K, int R, int pad) {
  const int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * C * H * W) return;
  int v = (int)(t % W), h = (int)(t / W % H), c = (int)(t / ((size_t)W * H) % C), n = (int)(t / ((size_t)W * H * C));
  float acc = 0.0f;
  for (int k = 0; k < K; k++)
    for (int r = 0; r < R; r++) {
      int i = h - r + pad;
      if (i < 0 || i >= OH) continue;
      for (int s = 0; s < R; s++) {
        int j = v - s + pad;
        if (j < 0 || j >= OW) continue;
        acc = __fadd_rn(acc, __fmul_rn(w[((k * C + c) * R + r) * R + s], dy[((size_t)(n * K + k) * OH + i) * OW + j]));
      }
    }
  dx[t] = acc;
}
/* cnn_conv2d_backward_params, weights: one thread per (k, c, r, s) */
__global__ static void cnn_k_conv2d_backward_weight(float *dw, const float *dy, const float *x, int N, int C, int H,
                                                    int W, int K, int R, int pad) {
  const int OH = H + 2 * pad - R + 1, OW = W + 2 * pad - R + 1;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)K * C * R * R) return;
  int s = (int)(t % R), r = (int)(t / R % R), c = (int)(t / ((size_t)R * R) % C), k = (int)(t / ((size_t)R * R * C));
  float acc = 0.0f;
  for (int n = 0; n < N; n++)
    for (int i = 0; i < OH; i++) {
      int h = i + r - pad;
      if (h < 0 || h >= H) continue;
      for (int j = 0; j < OW; j++) {
        int v = j + s - pad;
        if (v < 0 || v >= W) continue;
        acc = __fadd_rn(acc, __fmul_rn(dy[((size_t)(n * K + k) * OH + i) * OW + j], x[((size_t)(n * C + c) * H + h) * W + v]));
      }
    }
  dw[t] = acc;
}
/* cnn_conv2d_backward_params, bias: one thread per output channel */
__global__ static void cnn_k_conv2d_backward_bias(float *db, const float *dy, int N, int K, int OHW) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= K) return;
  float acc = 0.0f;
  for (int n = 0; n < N; n++)
    for (int i = 0; i < OHW; i++) acc = __fadd_rn(acc, dy[(size_t)(n * K + k) * OHW + i]);
  db[k] = acc;
}

/* ---- ReLU ---- */
/* cnn_relu_forward */
__global__ static void cnn_k_relu_forward(float *y, const float *x, size_t count) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
/* cnn_relu_backward (a = the ReLU's input or output) */
__global__ static void cnn_k_relu_backward(float *dx, const float *dy, const float *a, size_t count) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) dx[i] = a[i] > 0.0f ? dy[i] : 0.0f;
}

/* ---- 2x2 max-pool ---- */
/* cnn_maxpool2x2_forward (cnn_pool_argmax is shared with the CPU) */
__global__ static void cnn_k_maxpool2x2_forward(float *y, int64_t *idx, const float *x, int N, int C, int H, int W) {
  const int OH = H / 2, OW = W / 2;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * C * OH * OW) return;
  int j = (int)(t % OW), i = (int)(t / OW % OH);
  size_t p = t / ((size_t)OW * OH);
  const float *plane = x + p * H * W;
  int64_t at = cnn_pool_argmax(plane, W, i, j);
  y[t] = plane[at];
  idx[t] = at;
}
/* cnn_maxpool2x2_backward (idx may be NULL: the maxima are recomputed from x) */
__global__ static void cnn_k_maxpool2x2_backward(float *dx, const float *dy, const int64_t *idx, const float *x, int N,
                                                 int C, int H, int W) {
  const int OH = H / 2, OW = W / 2;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * C * H * W) return;
  int v = (int)(t % W), h = (int)(t / W % H);
  size_t p = t / ((size_t)W * H);
  int i = h / 2, j = v / 2;
  float g = 0.0f;
  if (i < OH && j < OW) {
    size_t o = (p * OH + i) * OW + j;
    int64_t at = idx ? idx[o] : cnn_pool_argmax(x + p * H * W, W, i, j);
    if (at == (int64_t)h * W + v) g = dy[o];
  }
  dx[t] = g;
}

/* ---- linear ---- */
/* cnn_linear_forward */
__global__ static void cnn_k_linear_forward(float *y, const float *x, const float *w, const float *b, int N, int I,
                                            int O) {
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * O) return;
  int o = (int)(t % O), n = (int)(t / O);
  float acc = b[o];
  for (int i = 0; i < I; i++) acc = __fadd_rn(acc, __fmul_rn(w[(size_t)o * I + i], x[(size_t)n * I + i]));
  y[t] = acc;
}
/* cnn_linear_backward_input */
__global__ static void cnn_k_linear_backward_input(float *dx, const float *dy, const float *w, int N, int I, int O) {
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)N * I) return;
  int i = (int)(t % I), n = (int)(t / I);
  float acc = 0.0f;
  for (int o = 0; o < O; o++) acc = __fadd_rn(acc, __fmul_rn(dy[(size_t)n * O + o], w[(size_t)o * I + i]));
  dx[t] = acc;
}
/* cnn_linear_backward_params, weights: one thread per (o, i) */
__global__ static void cnn_k_linear_backward_weight(float *dw, const float *dy, const float *x, int N, int I, int O) {
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)O * I) return;
  int i = (int)(t % I), o = (int)(t / I);
  float a = 0.0f;
  for (int n = 0; n < N; n++) a = __fadd_rn(a, __fmul_rn(dy[(size_t)n * O + o], x[(size_t)n * I + i]));
  dw[t] = a;
}
/* cnn_linear_backward_params, bias */
__global__ static void cnn_k_linear_backward_bias(float *db, const float *dy, int N, int O) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= O) return;
  float acc = 0.0f;
  for (int n = 0; n < N; n++) acc = __fadd_rn(acc, dy[(size_t)n * O + o]);
  db[o] = acc;
}

/* ---- softmax cross-entropy ---- */
/* cnn_softmax_xent_forward: out = [mean loss, dloss/dz]. One thread: the batch is small, and a single thread sums
   the per-sample losses in the CPU's order. */
__global__ static void cnn_k_softmax_xent_forward(float *out, const float *z, const int64_t *labels, int N,
                                                  int classes) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float total = 0.0f;
  for (int n = 0; n < N; n++)
    total = __fadd_rn(total, cnn_xent_row(out + 1 + (size_t)n * classes, z + (size_t)n * classes, labels[n], classes, N));
  out[0] = __fdiv_rn(total, (float)N);
}

/* ================================================================================================================
   The GPU model and the mlsys_remat_kernel_fn
   ================================================================================================================ */
typedef struct {
  cnn_model *m;             /* the host model: shapes, binding, counters; m->loss receives the loss on commit */
  float *params, *grads, *input;
  int64_t *labels;
} cnn_gpu;

#define CNN_CUDA_LAUNCHED()                                                                                   \
  do {                                                                                                        \
    cudaError_t e_ = cudaGetLastError();                                                                      \
    if (e_ != cudaSuccess) return mlsys_set_error(MLSYS_ERR_CUDA, "kernel launch: %s", cudaGetErrorString(e_)); \
  } while (0)

static void cnn_gpu_free(cnn_gpu *G) {
  cudaFree(G->params);
  cudaFree(G->grads);
  cudaFree(G->input);
  cudaFree(G->labels);
  memset(G, 0, sizeof *G);
}
/* Copy the host model's parameters, input and labels to the device. */
static mlsys_status cnn_gpu_init(cnn_gpu *G, cnn_model *m) {
  size_t nin = (size_t)m->batch * 3 * 32 * 32;
  memset(G, 0, sizeof *G);
  G->m = m;
  MLSYS_CUDA_CHECK(cudaMalloc((void **)&G->params, m->nparams * sizeof(float)));
  MLSYS_CUDA_CHECK(cudaMalloc((void **)&G->grads, m->nparams * sizeof(float)));
  MLSYS_CUDA_CHECK(cudaMalloc((void **)&G->input, nin * sizeof(float)));
  MLSYS_CUDA_CHECK(cudaMalloc((void **)&G->labels, (size_t)m->batch * sizeof(int64_t)));
  MLSYS_CUDA_CHECK(cudaMemcpy(G->params, m->params, m->nparams * sizeof(float), cudaMemcpyHostToDevice));
  MLSYS_CUDA_CHECK(cudaMemcpy(G->input, m->input, nin * sizeof(float), cudaMemcpyHostToDevice));
  MLSYS_CUDA_CHECK(cudaMemcpy(G->labels, m->labels, (size_t)m->batch * sizeof(int64_t), cudaMemcpyHostToDevice));
  return MLSYS_OK;
}
/* A host pointer into m->params/m->grads mapped to the same offset on the device. */
static float *cnn_gpu_param(const cnn_gpu *G, const float *host) { return G->params + (host - G->m->params); }
static float *cnn_gpu_grad(const cnn_gpu *G, const float *host) { return G->grads + (host - G->m->grads); }

static mlsys_status cnn_gpu_forward(const cnn_gpu *G, int li, const float *x, void *out) {
  const cnn_layer *L = &G->m->layer[li];
  const int N = G->m->batch;
  float *y = (float *)out;
  size_t nout = (size_t)N * cnn_layer_out_count(L), nin = (size_t)N * cnn_layer_in_count(L);
  switch (L->op) {
  case CNN_OP_CONV:
    cnn_k_conv2d_forward<<<mlsys_cuda_blocks(nout, CNN_THREADS), CNN_THREADS>>>(
        y, x, cnn_gpu_param(G, L->wt), cnn_gpu_param(G, L->b), N, L->c, L->h, L->w, L->k, 3, 1);
    break;
  case CNN_OP_RELU: cnn_k_relu_forward<<<mlsys_cuda_blocks(nin, CNN_THREADS), CNN_THREADS>>>(y, x, nin); break;
  case CNN_OP_POOL:
    cnn_k_maxpool2x2_forward<<<mlsys_cuda_blocks(nout, CNN_THREADS), CNN_THREADS>>>(y, (int64_t *)(y + nout), x, N,
                                                                                    L->c, L->h, L->w);
    break;
  case CNN_OP_FLATTEN: MLSYS_CUDA_CHECK(cudaMemcpyAsync(y, x, nin * sizeof(float), cudaMemcpyDeviceToDevice)); break;
  case CNN_OP_LINEAR:
    cnn_k_linear_forward<<<mlsys_cuda_blocks(nout, CNN_THREADS), CNN_THREADS>>>(
        y, x, cnn_gpu_param(G, L->wt), cnn_gpu_param(G, L->b), N, L->c, L->k);
    break;
  }
  CNN_CUDA_LAUNCHED();
  return MLSYS_OK;
}

static mlsys_status cnn_gpu_backward(const cnn_gpu *G, int li, const float *dy, const float *x, const void *y,
                                     float *dx, int params) {
  const cnn_layer *L = &G->m->layer[li];
  const int N = G->m->batch;
  size_t nin = (size_t)N * cnn_layer_in_count(L), nout = (size_t)N * cnn_layer_out_count(L);
  switch (L->op) {
  case CNN_OP_CONV:
    if (dx)
      cnn_k_conv2d_backward_input<<<mlsys_cuda_blocks(nin, CNN_THREADS), CNN_THREADS>>>(
          dx, dy, cnn_gpu_param(G, L->wt), N, L->c, L->h, L->w, L->k, 3, 1);
    if (params) {
      cnn_k_conv2d_backward_weight<<<mlsys_cuda_blocks(L->nw, CNN_THREADS), CNN_THREADS>>>(
          cnn_gpu_grad(G, L->dwt), dy, x, N, L->c, L->h, L->w, L->k, 3, 1);
      cnn_k_conv2d_backward_bias<<<mlsys_cuda_blocks(L->nb, CNN_THREADS), CNN_THREADS>>>(
          cnn_gpu_grad(G, L->db), dy, N, L->k, L->oh * L->ow);
    }
    break;
  case CNN_OP_RELU:
    cnn_k_relu_backward<<<mlsys_cuda_blocks(nin, CNN_THREADS), CNN_THREADS>>>(dx, dy, x ? x : (const float *)y, nin);
    break;
  case CNN_OP_POOL:
    cnn_k_maxpool2x2_backward<<<mlsys_cuda_blocks(nin, CNN_THREADS), CNN_THREADS>>>(
        dx, dy, y ? (const int64_t *)((const float *)y + nout) : NULL, x, N, L->c, L->h, L->w);
    break;
  case CNN_OP_FLATTEN: MLSYS_CUDA_CHECK(cudaMemcpyAsync(dx, dy, nin * sizeof(float), cudaMemcpyDeviceToDevice)); break;
  case CNN_OP_LINEAR:
    if (dx)
      cnn_k_linear_backward_input<<<mlsys_cuda_blocks(nin, CNN_THREADS), CNN_THREADS>>>(
          dx, dy, cnn_gpu_param(G, L->wt), N, L->c, L->k);
    if (params) {
      cnn_k_linear_backward_weight<<<mlsys_cuda_blocks(L->nw, CNN_THREADS), CNN_THREADS>>>(
          cnn_gpu_grad(G, L->dwt), dy, x, N, L->c, L->k);
      cnn_k_linear_backward_bias<<<mlsys_cuda_blocks(L->nb, CNN_THREADS), CNN_THREADS>>>(cnn_gpu_grad(G, L->db), dy,
                                                                                          N, L->k);
    }
    break;
  }
  CNN_CUDA_LAUNCHED();
  return MLSYS_OK;
}

/* The GPU mlsys_remat_kernel_fn: the same roles as cnn_kernel, with device buffers. */
static mlsys_status cnn_gpu_kernel(void *ud, int node, void *const *in, const uint64_t *in_bytes, int nin, void *out,
                                   uint64_t out_bytes, int commit) {
  cnn_gpu *G = (cnn_gpu *)ud;
  cnn_model *m = G->m;
  const cnn_binding *B;
  (void)in_bytes;
  if (node < 0 || node >= m->n) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node %d is not bound", node);
  B = &m->bind[node];
  if (out_bytes != B->out_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: node %d gets %llu bytes, writes %llu", node,
                           (unsigned long long)out_bytes, (unsigned long long)B->out_bytes);
  m->evals[node]++;
  m->commits[node] += commit != 0;
  if (B->layer < 0) {
    if (nin != 1) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn: loss with %d inputs", nin);
    cnn_k_softmax_xent_forward<<<1, 1>>>((float *)out, (const float *)in[0], G->labels, m->batch, m->classes);
    CNN_CUDA_LAUNCHED();
    if (commit) MLSYS_CUDA_CHECK(cudaMemcpy(&m->loss, out, sizeof(float), cudaMemcpyDeviceToHost));
    return MLSYS_OK;
  }
  if (!B->backward) return cnn_gpu_forward(G, B->layer, B->x >= 0 ? (const float *)in[B->x] : G->input, out);
  {
    const float *dy = (const float *)in[B->dy];
    if (B->layer + 1 == CNN_NLAYERS) dy += 1;
    return cnn_gpu_backward(G, B->layer, dy, B->x >= 0 ? (const float *)in[B->x] : (B->layer == 0 ? G->input : NULL),
                            B->y >= 0 ? in[B->y] : NULL, (float *)out, commit);
  }
}

/* Device buffers for mlsys_remat_execute, counted like cnn_counting (requested bytes; cudaMalloc's own rounding
   is not visible here). */
static mlsys_status cnn_gpu_alloc(void *ud, uint64_t bytes, void **ptr) {
  cnn_counting *c = (cnn_counting *)ud;
  MLSYS_CUDA_CHECK(cudaMalloc(ptr, (size_t)bytes));
  c->allocs++;
  c->live += bytes;
  if (c->live > c->peak) c->peak = c->live;
  return MLSYS_OK;
}
static void cnn_gpu_release(void *ud, void *ptr, uint64_t bytes) {
  cnn_counting *c = (cnn_counting *)ud;
  c->releases++;
  c->live -= bytes;
  cudaFree(ptr);
}

#endif /* MLSYS_REMAT_CNN_KERNELS_CUH */
