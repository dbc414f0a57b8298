/* kernels/mlsys_relm_kernels.cuh — the GPT-2 forward of ReLM's built-in LM as CUDA kernels (spec relm.md §3.15,
   §7.2), and a small GPU runner that decodes one sequence token by token against a KV cache on the device.

   Include from one .cu file after mlsys_relm.h (MLSYS_CUDA defined; the implementation in that file too, for
   the CPU references): tests/cuda/test_relm_gpt2_cuda.cu compares every kernel with its CPU reference and the runner's
   logits with the CPU forward (max |Δ| ≤ 1e-3). Every kernel names the CPU function of mlsys_relm.h it
   mirrors. GEMMs are hand kernels (one warp per output, coalesced over the weight row): `make cuda` links no cuBLAS.
   Summation orders differ from the CPU's (warp and block trees), so agreement is to a tolerance, not bitwise; each
   kernel is deterministic (no atomics), so the GPU repeats itself bit for bit.

   Launch configuration: MLSYS_RELM_THREADS (256) per block; everything on the default stream, in order.

   NOT DONE (spec §7.2 lists them): batched ragged sequences, the tree-structured KV cache on the device, cuBLAS /
   tensor-core GEMMs, on-device top-k. The runner serves one sequence. */
#ifndef MLSYS_RELM_KERNELS_CUH
#define MLSYS_RELM_KERNELS_CUH

#include "mlsys_relm.h"
#include <math.h>

#define MLSYS_RELM_THREADS 256

/* ---- reductions (blockDim.x a multiple of 32, ≤ 1024; every thread of the block calls them; all get the result) */
__device__ static inline float mlsys_relm_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ static inline float mlsys_relm_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ static inline float mlsys_relm_block_sum(float v, float *sh /* 32 floats of shared memory */) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = mlsys_relm_warp_sum(v);
  __syncthreads();   /* sh may still be read by a previous reduction */
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0f;
  return mlsys_relm_warp_sum(v);
}
__device__ static inline float mlsys_relm_block_max(float v, float *sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = mlsys_relm_warp_max(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : -INFINITY;
  return mlsys_relm_warp_max(v);
}

/* ---- kernels ---- */
/* mlsys__relm_encoder (one row): out = wte[tok] + wpe[pos] */
__global__ static void mlsys_relm_k_encoder(float *out, int tok, int pos, const float *wte, const float *wpe, int C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < C) out[i] = wte[(size_t)tok * C + i] + wpe[(size_t)pos * C + i];
}

/* mlsys_dense_layernorm (mlsys_common.h): one block per row */
__global__ static void mlsys_relm_k_layernorm(float *out, const float *inp, const float *w, const float *b, int N, int C) {
  __shared__ float sh[32];
  const int r = blockIdx.x;
  if (r >= N) return;   /* the whole block */
  const float *x = inp + (size_t)r * C;
  float *o = out + (size_t)r * C;
  float s = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[i];
  const float m = mlsys_relm_block_sum(s, sh) / (float)C;
  float v = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) { float d = x[i] - m; v += d * d; }
  v = mlsys_relm_block_sum(v, sh) / (float)C;
  const float rs = 1.0f / sqrtf(v + 1e-5f);
  for (int i = threadIdx.x; i < C; i += blockDim.x) o[i] = (x[i] - m) * rs * w[i] + b[i];
}

/* mlsys_dense_matmul (mlsys_common.h): out[r][o] = bias[o] + inp[r] · w[o] (w OC×C row-major); one warp per output */
__global__ static void mlsys_relm_k_matmul(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
  const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= (size_t)N * OC) return;   /* uniform within the warp */
  const int r = (int)(warp / OC), o = (int)(warp % OC);
  const float *x = inp + (size_t)r * C, *wr = w + (size_t)o * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += 32) s += x[i] * wr[i];
  s = mlsys_relm_warp_sum(s);
  if (lane == 0) out[(size_t)r * OC + o] = (bias ? bias[o] : 0.0f) + s;
}

/* mlsys__relm_gelu (tanh approximation), in place */
__global__ static void mlsys_relm_k_gelu(float *x, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}

/* mlsys__relm_residual: x += y */
__global__ static void mlsys_relm_k_residual(float *x, const float *y, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

/* The K and V of the new token (from its qkv row) into this layer's caches kc, vc ([maxT][C]) at position p. */
__global__ static void mlsys_relm_k_store_kv(float *kc, float *vc, const float *qkv, int p, int C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < C) {
    kc[(size_t)p * C + i] = qkv[C + i];
    vc[(size_t)p * C + i] = qkv[2 * C + i];
  }
}

/* mlsys__relm_attention_task for one new token at position p against the cache: one block per head, the p + 1
   scores in dynamic shared memory; softmax(q·k / sqrt(hs)) with max subtraction, then the weighted sum of V. */
__global__ static void mlsys_relm_k_attention1(float *out, const float *qkv, const float *kc, const float *vc, int p, int C, int NH) {
  extern __shared__ float sc[];
  __shared__ float red[32];
  const int h = blockIdx.x, hs = C / NH;
  const float *q = qkv + (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  float mx = -INFINITY, sum = 0.0f;
  for (int t = threadIdx.x; t <= p; t += blockDim.x) {
    const float *k = kc + (size_t)t * C + (size_t)h * hs;
    float s = 0.0f;
    for (int i = 0; i < hs; i++) s += q[i] * k[i];
    s *= scale;
    sc[t] = s;
    mx = fmaxf(mx, s);
  }
  mx = mlsys_relm_block_max(mx, red);
  for (int t = threadIdx.x; t <= p; t += blockDim.x) {
    float e = expf(sc[t] - mx);
    sc[t] = e;
    sum += e;
  }
  sum = mlsys_relm_block_sum(sum, red);   /* its barriers also publish sc */
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < hs; j += blockDim.x) {
    float o = 0.0f;
    for (int t = 0; t <= p; t++) o += sc[t] * vc[(size_t)t * C + (size_t)h * hs + j];
    out[(size_t)h * hs + j] = o * inv;
  }
}

/* mlsys_relm_log_softmax: one block per row of V */
__global__ static void mlsys_relm_k_log_softmax(float *logp, const float *logits, int V) {
  __shared__ float red[32];
  const float *x = logits + (size_t)blockIdx.x * V;
  float *y = logp + (size_t)blockIdx.x * V;
  float mx = -INFINITY, s = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, x[i]);
  mx = mlsys_relm_block_max(mx, red);
  for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(x[i] - mx);
  s = mlsys_relm_block_sum(s, red);
  const float lse = mx + logf(s);
  for (int i = threadIdx.x; i < V; i += blockDim.x) y[i] = x[i] - lse;
}

/* ---- the runner: one sequence, decoded token by token against a device KV cache ---- */
typedef struct {
  mlsys_relm_gpt2_config cfg;
  float *params;            /* device copy, llm.c's layout */
  const float *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb, *lnfw, *lnfb;
  float *kc, *vc;           /* [L][maxT][C] */
  float *x, *ln, *qkv, *atty, *tmp, *fch, *logits, *logp;
  int len;
} mlsys_relm_gpt2_cuda;

static inline void mlsys_relm_gpt2_cuda_free(mlsys_relm_gpt2_cuda *g) {
  if (!g) return;
  cudaFree(g->params); cudaFree(g->kc); cudaFree(g->vc); cudaFree(g->x); cudaFree(g->ln); cudaFree(g->qkv);
  cudaFree(g->atty); cudaFree(g->tmp); cudaFree(g->fch); cudaFree(g->logits); cudaFree(g->logp);
  mlsys_free(g);
}

/* Uploads m's parameters; the cache starts empty. */
static inline mlsys_status mlsys_relm_gpt2_cuda_create(mlsys_relm_gpt2 *m, mlsys_relm_gpt2_cuda **out) {
  size_t np;
  const float *hp = mlsys_relm_gpt2_params(m, &np);
  mlsys_relm_gpt2_cuda *g;
  *out = NULL;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda: no model");
  g = (mlsys_relm_gpt2_cuda *)mlsys_calloc(1, sizeof *g);
  if (!g) return MLSYS_ERR_NOMEM;
  g->cfg = mlsys_relm_gpt2_get_config(m);
  const size_t C = (size_t)g->cfg.n_embd, L = (size_t)g->cfg.n_layer, T = (size_t)g->cfg.max_seq_len, V = (size_t)g->cfg.vocab_size;
  if (T * sizeof(float) + 32 * sizeof(float) > 48 * 1024) {   /* the scores, plus the kernel's static red[32] */
    mlsys_free(g);
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "gpt2 cuda: max_seq_len %zu needs more than 48 KB of attention scores per block", T);
  }
#define MLSYS__RELM_CU(call)                        \
  do {                                              \
    cudaError_t e_ = (call);                        \
    if (e_ != cudaSuccess) {                        \
      mlsys_relm_gpt2_cuda_free(g);                 \
      return mlsys_set_error(MLSYS_ERR_CUDA, "gpt2 cuda: %s: %s", #call, cudaGetErrorString(e_)); \
    }                                               \
  } while (0)
  MLSYS__RELM_CU(cudaMalloc(&g->params, np * sizeof(float)));
  MLSYS__RELM_CU(cudaMemcpy(g->params, hp, np * sizeof(float), cudaMemcpyHostToDevice));
  MLSYS__RELM_CU(cudaMalloc(&g->kc, L * T * C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->vc, L * T * C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->x, C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->ln, C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->qkv, 3 * C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->atty, C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->tmp, C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->fch, 4 * C * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->logits, V * sizeof(float)));
  MLSYS__RELM_CU(cudaMalloc(&g->logp, V * sizeof(float)));
#undef MLSYS__RELM_CU
  /* the same offsets as mlsys__relm_gpt2_point */
  const float *p = g->params;
  g->wte = p; p += (size_t)g->cfg.padded_vocab_size * C;
  g->wpe = p; p += T * C;
  g->ln1w = p; p += L * C;
  g->ln1b = p; p += L * C;
  g->qkvw = p; p += L * 3 * C * C;
  g->qkvb = p; p += L * 3 * C;
  g->attprojw = p; p += L * C * C;
  g->attprojb = p; p += L * C;
  g->ln2w = p; p += L * C;
  g->ln2b = p; p += L * C;
  g->fcw = p; p += L * 4 * C * C;
  g->fcb = p; p += L * 4 * C;
  g->fcprojw = p; p += L * C * 4 * C;
  g->fcprojb = p; p += L * C;
  g->lnfw = p; p += C;
  g->lnfb = p; p += C;
  *out = g;
  return MLSYS_OK;
}

static inline void mlsys_relm_gpt2_cuda_reset(mlsys_relm_gpt2_cuda *g) { g->len = 0; }

static inline void mlsys__relm_cu_matmul(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
  mlsys_relm_k_matmul<<<mlsys_cuda_blocks((size_t)N * OC * 32, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(out, inp, w, bias, N, C, OC);
}

/* Runs tok at the next position; logits and logp (host, V floats each, either may be NULL) of the next token. */
static inline mlsys_status mlsys_relm_gpt2_cuda_append(mlsys_relm_gpt2_cuda *g, int32_t tok, float *logits, float *logp) {
  const int C = g->cfg.n_embd, L = g->cfg.n_layer, NH = g->cfg.n_head, V = g->cfg.vocab_size, T = g->cfg.max_seq_len, p = g->len;
  const unsigned TB = MLSYS_RELM_THREADS, cb = mlsys_cuda_blocks((size_t)C, TB);
  if (p >= T) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda: %d positions exceed max_seq_len %d", p + 1, T);
  if (tok < 0 || tok >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda: token %d outside [0, %d)", (int)tok, V);
  mlsys_relm_k_encoder<<<cb, TB>>>(g->x, (int)tok, p, g->wte, g->wpe, C);
  for (int l = 0; l < L; l++) {
    const size_t lc = (size_t)l * C;
    float *kc = g->kc + (size_t)l * T * C, *vc = g->vc + (size_t)l * T * C;
    mlsys_relm_k_layernorm<<<1, TB>>>(g->ln, g->x, g->ln1w + lc, g->ln1b + lc, 1, C);
    mlsys__relm_cu_matmul(g->qkv, g->ln, g->qkvw + lc * 3 * C, g->qkvb + lc * 3, 1, C, 3 * C);
    mlsys_relm_k_store_kv<<<cb, TB>>>(kc, vc, g->qkv, p, C);
    mlsys_relm_k_attention1<<<NH, 128, (size_t)(p + 1) * sizeof(float)>>>(g->atty, g->qkv, kc, vc, p, C, NH);
    mlsys__relm_cu_matmul(g->tmp, g->atty, g->attprojw + lc * C, g->attprojb + lc, 1, C, C);
    mlsys_relm_k_residual<<<cb, TB>>>(g->x, g->tmp, (size_t)C);
    mlsys_relm_k_layernorm<<<1, TB>>>(g->ln, g->x, g->ln2w + lc, g->ln2b + lc, 1, C);
    mlsys__relm_cu_matmul(g->fch, g->ln, g->fcw + lc * 4 * C, g->fcb + lc * 4, 1, C, 4 * C);
    mlsys_relm_k_gelu<<<mlsys_cuda_blocks((size_t)4 * C, TB), TB>>>(g->fch, (size_t)4 * C);
    mlsys__relm_cu_matmul(g->tmp, g->fch, g->fcprojw + lc * 4 * C, g->fcprojb + lc, 1, 4 * C, C);
    mlsys_relm_k_residual<<<cb, TB>>>(g->x, g->tmp, (size_t)C);
  }
  mlsys_relm_k_layernorm<<<1, TB>>>(g->ln, g->x, g->lnfw, g->lnfb, 1, C);
  mlsys__relm_cu_matmul(g->logits, g->ln, g->wte, NULL, 1, C, V);
  mlsys_relm_k_log_softmax<<<1, 1024>>>(g->logp, g->logits, V);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  if (logits) MLSYS_CUDA_CHECK(cudaMemcpy(logits, g->logits, (size_t)V * sizeof(float), cudaMemcpyDeviceToHost));
  if (logp) MLSYS_CUDA_CHECK(cudaMemcpy(logp, g->logp, (size_t)V * sizeof(float), cudaMemcpyDeviceToHost));
  MLSYS_CUDA_CHECK(cudaDeviceSynchronize());
  g->len++;
  return MLSYS_OK;
}

#endif /* MLSYS_RELM_KERNELS_CUH */
