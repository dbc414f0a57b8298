/* kernels/mlsys_relm_train_kernels.cuh — the GPT-2 training step of mlsys_relm.h (section 3.6, issue 24) on the GPU:
   the forward with its saved activations, llm.c's backward pass, the global gradient norm with clipping, and AdamW,
   as CUDA kernels, with a host driver that runs one step on a (B, T) batch with everything on the device.

   Include from one .cu file after mlsys_relm.h and kernels/mlsys_relm_kernels.cuh (MLSYS_CUDA defined; the
   implementation in that file too, for the CPU references). Every kernel names the CPU function of mlsys_relm.h it
   mirrors; tests/cuda/test_relm_train_cuda.cu compares each with it on random inputs (max |Δ| / max |cpu| ≤ 1e-4),
   a whole step's loss and 16 gradient tensors with mlsys_relm_gpt2_backward on tiny models, and three full training
   steps' parameters with mlsys_relm_gpt2_train's arithmetic (backward, norm, clipping, mlsys_adamw_step).

   Determinism: no atomics. Every sum a kernel makes has one fixed order (a sum over rows runs in one thread, rows
   ascending, as the CPU does; the attention backward is split into per-row and per-column kernels so no two threads
   write one element; the gradient norm sums fixed blocks in double and the host adds the block sums in order), so a
   step repeats itself bit for bit. Summation orders inside a dot product or a row reduction differ from the CPU's
   (tiles, warp and block trees), so agreement with the CPU is to a tolerance, not bitwise.

   GEMMs: one tiled fp32 kernel (64×64 tiles, 16-deep, 4×4 outputs per thread) with arbitrary strides serves the
   forward (inp·wᵀ), dinp (dout·w) and dw (doutᵀ·inp, accumulated). It is plain CUDA-core fp32: no cuBLAS (its
   100+ MB library does not fit the GPU bundle) and no tensor cores, so the fp32 ceiling of bench/cuda/gpu_roofline.cuh
   is the one it can reach.

   NOT DONE: tensor-core (tf32/bf16) GEMMs, fused kernels (flash-style attention, fused LayerNorm + residual),
   mixed precision, gradient accumulation, the data loader and checkpoints on the device path (mlsys_relm_gpt2_train
   stays the CPU trainer; this driver is the step it would call). */
#ifndef MLSYS_RELM_TRAIN_KERNELS_CUH
#define MLSYS_RELM_TRAIN_KERNELS_CUH

#include "kernels/mlsys_relm_kernels.cuh"

/* a block-wide double sum (blockDim.x a multiple of 32; every thread calls it; all get the result) */
__device__ static inline double mlsys_relm_block_sum_d(double v, double *sh /* 32 doubles of shared memory */) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

#define MLSYS__RELM_GRID_STRIDE(i, n) \
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- forward ---- */
/* the encoder rows of mlsys_relm_gpt2_backward: out[r] = wte[inp[r]] + wpe[r mod T] */
__global__ static void mlsys_relm_k_encoder_fwd(float *out, const int32_t *inp, const float *wte, const float *wpe, int N, int T, int C) {
  MLSYS__RELM_GRID_STRIDE(i, (size_t)N * C) {
    const size_t r = i / (size_t)C, c = i % (size_t)C;
    out[i] = wte[(size_t)inp[r] * C + c] + wpe[(r % (size_t)T) * C + c];
  }
}

/* mlsys_dense_layernorm (mlsys_common.h): one block per row, keeping the row's mean and 1/std */
__global__ static void mlsys_relm_k_ln_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N, int C) {
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
  if (threadIdx.x == 0) { mean[r] = m; rstd[r] = rs; }
}

/* Y[i·ldy + j] = (acc ? Y[i·ldy + j] : 0) + (bias ? bias[j] : 0) + Σ_k A[i·sai + k·sak] · X[k·sxk + j·sxj], i < M, j < Nc,
   k < K ascending. 256 threads compute a 64×64 tile of Y, 16 values of k at a time through shared memory; a thread
   owns rows ty + 16a and columns tx + 16b (a, b < 4), so its shared-memory reads are conflict-free broadcasts. The
   tile loads walk whichever index of A and X is contiguous (sak or sai == 1, sxj or sxk == 1), so they coalesce. */
#define MLSYS_RELM_GEMM_TILE 64
#define MLSYS_RELM_GEMM_K 16
__global__ static void __launch_bounds__(256) mlsys_relm_k_gemm(float *Y, size_t ldy, const float *A, size_t sai, size_t sak, const float *X,
                                                                size_t sxk, size_t sxj, int M, int Nc, int K, const float *bias, int acc) {
  __shared__ float As[MLSYS_RELM_GEMM_K][MLSYS_RELM_GEMM_TILE + 1];   /* + 1: the k-contiguous loads' stores hit distinct banks */
  __shared__ float Xs[MLSYS_RELM_GEMM_K][MLSYS_RELM_GEMM_TILE + 1];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const int i0 = blockIdx.y * MLSYS_RELM_GEMM_TILE, j0 = blockIdx.x * MLSYS_RELM_GEMM_TILE;
  float s[4][4];
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) s[a][b] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += MLSYS_RELM_GEMM_K) {
    for (int q = 0; q < 4; q++) {
      const int idx = tid + 256 * q;
      int ii, kk, jj, kx;
      if (sak == 1) { kk = idx & 15; ii = idx >> 4; } else { ii = idx & 63; kk = idx >> 6; }
      if (sxj == 1) { jj = idx & 63; kx = idx >> 6; } else { kx = idx & 15; jj = idx >> 4; }
      As[kk][ii] = (i0 + ii < M && k0 + kk < K) ? A[(size_t)(i0 + ii) * sai + (size_t)(k0 + kk) * sak] : 0.0f;
      Xs[kx][jj] = (j0 + jj < Nc && k0 + kx < K) ? X[(size_t)(k0 + kx) * sxk + (size_t)(j0 + jj) * sxj] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < MLSYS_RELM_GEMM_K; kk++) {
      float av[4], xv[4];
      for (int a = 0; a < 4; a++) av[a] = As[kk][ty + 16 * a];
      for (int b = 0; b < 4; b++) xv[b] = Xs[kk][tx + 16 * b];
      for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) s[a][b] += av[a] * xv[b];
    }
    __syncthreads();
  }
  for (int a = 0; a < 4; a++) {
    const int i = i0 + ty + 16 * a;
    if (i >= M) continue;
    for (int b = 0; b < 4; b++) {
      const int j = j0 + tx + 16 * b;
      if (j >= Nc) continue;
      float *y = Y + (size_t)i * ldy + j;
      *y = (acc ? *y : 0.0f) + ((bias ? bias[j] : 0.0f) + s[a][b]);
    }
  }
}
static inline void mlsys__relm_cu_gemm(float *Y, size_t ldy, const float *A, size_t sai, size_t sak, const float *X, size_t sxk, size_t sxj, int M,
                                       int Nc, int K, const float *bias, int acc) {
  const dim3 grid((unsigned)((Nc + MLSYS_RELM_GEMM_TILE - 1) / MLSYS_RELM_GEMM_TILE), (unsigned)((M + MLSYS_RELM_GEMM_TILE - 1) / MLSYS_RELM_GEMM_TILE));
  mlsys_relm_k_gemm<<<grid, 256>>>(Y, ldy, A, sai, sak, X, sxk, sxj, M, Nc, K, bias, acc);
}
/* mlsys_dense_matmul (mlsys_common.h): out = inp·wᵀ + bias (inp N×C, w OC×C) */
static inline void mlsys_relm_cu_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
  mlsys__relm_cu_gemm(out, (size_t)OC, inp, (size_t)C, 1, w, 1, (size_t)C, N, OC, C, bias, 0);
}

/* mlsys__relm_tatt_fwd: one warp per (row, head), i = (b·T + t)·NH + h as on the CPU; the softmax weights of row t
   in att[b][h][t][0..T) (0 past t), the head's output in out */
__global__ static void mlsys_relm_k_att_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
  const size_t wid = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31, hs = C / NH;
  if (wid >= (size_t)B * T * NH) return;   /* uniform within the warp */
  const int h = (int)(wid % NH), t = (int)((wid / NH) % T), b = (int)(wid / NH / T);
  const size_t row = (size_t)b * T + t;
  const float *q = qkv + row * 3 * C + (size_t)h * hs;
  float *w = att + (((size_t)b * NH + h) * T + t) * T, *o = out + row * C + (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  float mx = -INFINITY, sum = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += 32) {
    const float *k = qkv + ((size_t)b * T + t2) * 3 * C + C + (size_t)h * hs;
    float s = 0.0f;
    for (int i = 0; i < hs; i++) s += q[i] * k[i];
    s *= scale;
    w[t2] = s;
    mx = fmaxf(mx, s);
  }
  mx = mlsys_relm_warp_max(mx);
  for (int t2 = lane; t2 <= t; t2 += 32) { float e = expf(w[t2] - mx); w[t2] = e; sum += e; }
  sum = mlsys_relm_warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int t2 = lane; t2 < T; t2 += 32) w[t2] = t2 <= t ? w[t2] * inv : 0.0f;
  __syncwarp();   /* the weights other lanes wrote, read below */
  for (int j = lane; j < hs; j += 32) {
    float acc = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) acc += w[t2] * qkv[((size_t)b * T + t2) * 3 * C + 2 * (size_t)C + (size_t)h * hs + j];
    o[j] = acc;
  }
}

/* ---- loss ---- */
/* mlsys__relm_ce_task: one block per row; loss[r] = lse − logit[target] in double; with grad the row becomes
   (softmax − onehot) / N, from exp(l − max) rounded to float first, as the CPU keeps it */
__global__ static void mlsys_relm_k_crossentropy(float *logits, double *loss, const int32_t *targets, int V, int N, int grad) {
  __shared__ float red[32];
  __shared__ double redd[32];
  const int r = blockIdx.x;
  if (r >= N) return;
  float *l = logits + (size_t)r * V;
  const int tg = targets[r];
  const float lt = l[tg];
  float mx = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, l[v]);
  mx = mlsys_relm_block_max(mx, red);   /* its barriers also order the read of lt before the writes below */
  double sum = 0.0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const double e = exp((double)(l[v] - mx));
    sum += e;
    if (grad) l[v] = (float)e;
  }
  sum = mlsys_relm_block_sum_d(sum, redd);
  if (threadIdx.x == 0) loss[r] = (double)mx + log(sum) - (double)lt;
  if (grad) {
    const double inv = 1.0 / sum;
    for (int v = threadIdx.x; v < V; v += blockDim.x) l[v] = (float)(((double)l[v] * inv - (v == tg ? 1.0 : 0.0)) / N);
  }
}

/* ---- backward ---- */
/* db[o] += Σ_r dout[r][o], rows ascending in one thread (mlsys__relm_mmb_dw's bias sum) */
__global__ static void mlsys_relm_k_colsum(float *db, const float *dout, int N, int OC) {
  MLSYS__RELM_GRID_STRIDE(o, (size_t)OC) {
    float s = 0.0f;
    for (int r = 0; r < N; r++) s += dout[(size_t)r * OC + o];
    db[o] += s;
  }
}
/* mlsys_dense_matmul_backward (mlsys_common.h): dinp = dout·w (overwritten; skipped when NULL), dw += doutᵀ·inp, db += Σ_r dout (skipped
   when NULL) */
static inline void mlsys_relm_cu_matmul_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int N, int C,
                                            int OC) {
  if (dinp) mlsys__relm_cu_gemm(dinp, (size_t)C, dout, (size_t)OC, 1, w, (size_t)C, 1, N, C, OC, NULL, 0);
  mlsys__relm_cu_gemm(dw, (size_t)C, dout, 1, (size_t)OC, inp, (size_t)C, 1, OC, C, N, NULL, 1);
  if (db) mlsys_relm_k_colsum<<<mlsys_cuda_blocks((size_t)OC, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(db, dout, N, OC);
}

/* mlsys__relm_gelu_bwd: d ← d · gelu'(x) */
__global__ static void mlsys_relm_k_gelu_bwd(float *d, const float *x, size_t n) {
  const float s = 0.7978845608028654f;
  MLSYS__RELM_GRID_STRIDE(i, n) {
    float v = x[i], a = s * (v + 0.044715f * v * v * v), th = tanhf(a), ch = coshf(a), sech = 1.0f / (ch * ch);
    d[i] *= 0.5f * (1.0f + th) + v * 0.5f * sech * s * (1.0f + 3.0f * 0.044715f * v * v);
  }
}

/* mlsys_dense_layernorm_backward (mlsys_common.h), the per-row part: dinp += rstd·(w·dout − mean(w·dout) − x̂·mean(w·dout·x̂)); one block per row */
__global__ static void mlsys_relm_k_ln_bwd_dx(float *dinp, const float *dout, const float *inp, const float *w, const float *mean, const float *rstd,
                                              int N, int C) {
  __shared__ float sh[32];
  const int r = blockIdx.x;
  if (r >= N) return;
  const float *x = inp + (size_t)r * C, *g = dout + (size_t)r * C;
  float *dx = dinp + (size_t)r * C;
  const float mu = mean[r], rs = rstd[r];
  float dm = 0.0f, dnm = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    float nn = (x[i] - mu) * rs, dn = w[i] * g[i];
    dm += dn;
    dnm += dn * nn;
  }
  dm = mlsys_relm_block_sum(dm, sh) / (float)C;
  dnm = mlsys_relm_block_sum(dnm, sh) / (float)C;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    float nn = (x[i] - mu) * rs, dn = w[i] * g[i];
    dx[i] += (dn - dm - nn * dnm) * rs;
  }
}
/* mlsys_dense_layernorm_backward (mlsys_common.h), the weight part: dw[i] += Σ_r x̂·dout, db[i] += Σ_r dout, rows ascending in one thread, each
   product added to dw[i] itself as the CPU does */
__global__ static void mlsys_relm_k_ln_bwd_dwdb(float *dw, float *db, const float *dout, const float *inp, const float *mean, const float *rstd, int N,
                                                int C) {
  MLSYS__RELM_GRID_STRIDE(i, (size_t)C) {
    float sw = dw[i], sb = db[i];
    for (int r = 0; r < N; r++) {
      const float g = dout[(size_t)r * C + i], nn = (inp[(size_t)r * C + i] - mean[r]) * rstd[r];
      sb += g;
      sw += nn * g;
    }
    dw[i] = sw;
    db[i] = sb;
  }
}

/* mlsys__relm_tatt_bwd, split so that no two threads write one element. This kernel, one warp per (b, h, t):
   datt[t2] = v[t2]·dout[t], then dpre[b][h][t][t2] = w·(datt − Σ w·datt)·scale for t2 ≤ t (the gradient of the
   pre-softmax score). */
__global__ static void mlsys_relm_k_att_bwd_scores(float *dpre, const float *att, const float *qkv, const float *dout, int B, int T, int C, int NH) {
  const size_t wid = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31, hs = C / NH;
  if (wid >= (size_t)B * NH * T) return;
  const int t = (int)(wid % T), h = (int)((wid / T) % NH), b = (int)(wid / T / NH);
  const size_t row = (size_t)b * T + t, wo = (((size_t)b * NH + h) * T + t) * T;
  const float *w = att + wo, *g = dout + row * C + (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  float *dp = dpre + wo, s = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += 32) {
    const float *v = qkv + ((size_t)b * T + t2) * 3 * C + 2 * (size_t)C + (size_t)h * hs;
    float d = 0.0f;
    for (int i = 0; i < hs; i++) d += v[i] * g[i];
    dp[t2] = d;
    s += w[t2] * d;
  }
  s = mlsys_relm_warp_sum(s);
  for (int t2 = lane; t2 < T; t2 += 32) dp[t2] = t2 <= t ? w[t2] * (dp[t2] - s) * scale : 0.0f;
}
/* ... and this one, one thread per (row, channel) c = h·hs + j, writes (not adds) that row's dq, dk, dv:
   dq[t] = Σ_{t2 ≤ t} dpre[t][t2]·k[t2], dk[t] = Σ_{t' ≥ t} dpre[t'][t]·q[t'], dv[t] = Σ_{t' ≥ t} w[t'][t]·dout[t'] */
__global__ static void mlsys_relm_k_att_bwd_qkv(float *dqkv, const float *dpre, const float *att, const float *qkv, const float *dout, int B, int T,
                                                int C, int NH) {
  const int hs = C / NH;
  MLSYS__RELM_GRID_STRIDE(i, (size_t)B * T * C) {
    const int c = (int)(i % C), t = (int)((i / C) % T), b = (int)(i / C / T), h = c / hs;
    const size_t base = (size_t)b * T, hb = ((size_t)b * NH + h) * T;
    float dq = 0.0f, dk = 0.0f, dv = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) dq += dpre[(hb + t) * T + t2] * qkv[(base + t2) * 3 * C + C + c];
    for (int t1 = t; t1 < T; t1++) {
      dk += dpre[(hb + t1) * T + t] * qkv[(base + t1) * 3 * C + c];
      dv += att[(hb + t1) * T + t] * dout[(base + t1) * C + c];
    }
    float *d = dqkv + (base + t) * 3 * C + c;
    d[0] = dq;
    d[C] = dk;
    d[2 * (size_t)C] = dv;
  }
}

/* the encoder of mlsys_relm_gpt2_backward: dwte[inp[r]] += dres[r], dwpe[r mod T] += dres[r], rows ascending. A row's
   token can repeat anywhere, so dwte runs one thread per channel over all rows; dwpe one thread per (t, channel)
   over the B rows at position t. */
__global__ static void mlsys_relm_k_encoder_bwd_wte(float *dwte, const float *dres, const int32_t *inp, int N, int C) {
  MLSYS__RELM_GRID_STRIDE(c, (size_t)C)
    for (int r = 0; r < N; r++) dwte[(size_t)inp[r] * C + c] += dres[(size_t)r * C + c];
}
__global__ static void mlsys_relm_k_encoder_bwd_wpe(float *dwpe, const float *dres, int B, int T, int C) {
  MLSYS__RELM_GRID_STRIDE(i, (size_t)T * C) {
    float s = dwpe[i];
    for (int b = 0; b < B; b++) s += dres[(size_t)b * T * C + i];
    dwpe[i] = s;
  }
}

/* ---- the optimizer ---- */
/* Σ g² in double over fixed blocks (block b sums the grid-stride elements b·blockDim + tid + k·stride): part[b]; the
   host adds the parts in order, so the norm has one summation order */
#define MLSYS_RELM_NORM_BLOCKS 1024
__global__ static void mlsys_relm_k_sumsq(double *part, const float *g, size_t n) {
  __shared__ double sh[32];
  double s = 0.0;
  MLSYS__RELM_GRID_STRIDE(i, n) s += (double)g[i] * g[i];
  s = mlsys_relm_block_sum_d(s, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
__global__ static void mlsys_relm_k_scale(float *g, size_t n, float sc) {
  MLSYS__RELM_GRID_STRIDE(i, n) g[i] *= sc;
}
/* mlsys_adamw_step with its bias corrections c1 = 1 − β1^t, c2 = 1 − β2^t computed by the host as it does */
__global__ static void mlsys_relm_k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                                          float wd, float c1, float c2) {
  MLSYS__RELM_GRID_STRIDE(i, n) {
    const float gi = g[i], mi = beta1 * m[i] + (1.0f - beta1) * gi, vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    const float mh = mi / c1, vh = vi / c2;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
  }
}
static inline void mlsys_relm_cu_adamw(float *p, const float *g, float *m, float *v, size_t n, int64_t t, float lr, float beta1, float beta2,
                                       float eps, float wd) {
  const float c1 = (float)(1.0 - pow((double)beta1, (double)t)), c2 = (float)(1.0 - pow((double)beta2, (double)t));
  mlsys_relm_k_adamw<<<mlsys_cuda_blocks(n, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(p, g, m, v, n, lr, beta1, beta2, eps, wd, c1, c2);
}

/* ---- the driver ---- */
typedef struct {
  double lr, beta1, beta2, eps;   /* 0 → 3e-4, 0.9, 0.95, 1e-8 (mlsys_relm_gpt2_train_desc's defaults) */
  double weight_decay;            /* on the 2-D tensors (wte, wpe, qkvw, attprojw, fcw, fcprojw); ≤ 0 → none */
  double grad_clip;               /* global-norm threshold (0 → 1.0; < 0 → none) */
} mlsys_relm_gpt2_cuda_opt;

typedef struct {
  mlsys_relm_gpt2_config cfg;
  int B, T;
  size_t np, tn[16];        /* parameters, and the 16 tensors' sizes (llm.c's order) */
  size_t to[16];            /* the tensors' offsets */
  float *params, *grads, *m, *v;
  float *acts;              /* the activations of one (B, T) batch (the layout below) */
  double *loss, *hloss, *norm_part;
  int32_t *inp, *tgt;
  size_t layer, x0, lnf, lnfm, lnfr, logits, dres, dtmp, dbig, dqkv, datty, dpre;   /* offsets into acts, in floats */
  size_t ln1, ln1m, ln1r, qkv, atty, att, res2, ln2, ln2m, ln2r, fch, fchg, res3;     /* per layer: x0 + N·C + l·layer + field */
  int64_t t;                /* AdamW steps taken */
} mlsys_relm_gpt2_cuda_train;

static inline void mlsys_relm_gpt2_cuda_train_free(mlsys_relm_gpt2_cuda_train *g) {
  if (!g) return;
  cudaFree(g->params); cudaFree(g->grads); cudaFree(g->m); cudaFree(g->v); cudaFree(g->acts); cudaFree(g->loss);
  cudaFree(g->norm_part); cudaFree(g->inp); cudaFree(g->tgt);
  mlsys_free(g->hloss);
  mlsys_free(g);
}

/* Uploads m's parameters (Adam's moments start at 0) and allocates the activations of (B, T) batches. Errors:
   MLSYS_ERR_ARG (no model, B < 1, T outside [1, maxT]), MLSYS_ERR_NOMEM, MLSYS_ERR_CUDA (allocation, copy). */
static inline mlsys_status mlsys_relm_gpt2_cuda_train_create(mlsys_relm_gpt2 *m, int B, int T, mlsys_relm_gpt2_cuda_train **out) {
  mlsys_relm_gpt2_cuda_train *g;
  size_t np;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: no output");
  *out = NULL;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: no model");
  const mlsys_relm_gpt2_config cfg = mlsys_relm_gpt2_get_config(m);
  if (B < 1 || T < 1 || T > cfg.max_seq_len)
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: B = %d and T = %d must be ≥ 1 with T ≤ max_seq_len %d", B, T, cfg.max_seq_len);
  const float *hp = mlsys_relm_gpt2_params(m, &np);
  g = (mlsys_relm_gpt2_cuda_train *)mlsys_calloc(1, sizeof *g);
  if (!g) return MLSYS_ERR_NOMEM;
  g->cfg = cfg; g->B = B; g->T = T; g->np = np;
  const size_t C = (size_t)cfg.n_embd, L = (size_t)cfg.n_layer, NH = (size_t)cfg.n_head, V = (size_t)cfg.vocab_size, N = (size_t)B * T;
  {  /* mlsys__relm_tensors' layout */
    const size_t sz[16] = {(size_t)cfg.padded_vocab_size * C, (size_t)cfg.max_seq_len * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
                           L * C, L * C, L * 4 * C * C, L * 4 * C, L * 4 * C * C, L * C, C, C};
    size_t o = 0;
    for (int k = 0; k < 16; k++) { g->to[k] = o; g->tn[k] = sz[k]; o += sz[k]; }
    if (o != np) {
      mlsys_free(g);
      return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: %zu parameters, the configuration implies %zu", np, o);
    }
  }
  {  /* mlsys__relm_tlayout_make's layout, plus dpre (the attention backward's scores) */
    size_t o = 0;
    g->ln1 = 0; g->ln1m = g->ln1 + N * C; g->ln1r = g->ln1m + N; g->qkv = g->ln1r + N; g->atty = g->qkv + 3 * N * C;
    g->att = g->atty + N * C; g->res2 = g->att + (size_t)B * NH * T * T; g->ln2 = g->res2 + N * C; g->ln2m = g->ln2 + N * C;
    g->ln2r = g->ln2m + N; g->fch = g->ln2r + N; g->fchg = g->fch + 4 * N * C; g->res3 = g->fchg + 4 * N * C; g->layer = g->res3 + N * C;
    g->x0 = o; o += N * C;
    o += L * g->layer;
    g->lnf = o; o += N * C;
    g->lnfm = o; o += N;
    g->lnfr = o; o += N;
    g->logits = o; o += N * V;
    g->dres = o; o += N * C;
    g->dtmp = o; o += N * C;
    g->dbig = o; o += 4 * N * C;
    g->dqkv = o; o += 3 * N * C;
    g->datty = o; o += N * C;
    g->dpre = o; o += (size_t)B * NH * T * T;
#define MLSYS__RELM_CT(call)                                                                       \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      mlsys_relm_gpt2_cuda_train_free(g);                                                          \
      return mlsys_set_error(MLSYS_ERR_CUDA, "gpt2 cuda train: %s: %s", #call, cudaGetErrorString(e_)); \
    }                                                                                              \
  } while (0)
    MLSYS__RELM_CT(cudaMalloc(&g->acts, o * sizeof(float)));
  }
  g->hloss = (double *)mlsys_alloc(N + MLSYS_RELM_NORM_BLOCKS, sizeof(double));
  if (!g->hloss) { mlsys_relm_gpt2_cuda_train_free(g); return MLSYS_ERR_NOMEM; }
  MLSYS__RELM_CT(cudaMalloc(&g->params, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMemcpy(g->params, hp, np * sizeof(float), cudaMemcpyHostToDevice));
  MLSYS__RELM_CT(cudaMalloc(&g->grads, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMalloc(&g->m, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMalloc(&g->v, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMemset(g->m, 0, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMemset(g->v, 0, np * sizeof(float)));
  MLSYS__RELM_CT(cudaMalloc(&g->loss, N * sizeof(double)));
  MLSYS__RELM_CT(cudaMalloc(&g->norm_part, MLSYS_RELM_NORM_BLOCKS * sizeof(double)));
  MLSYS__RELM_CT(cudaMalloc(&g->inp, N * sizeof(int32_t)));
  MLSYS__RELM_CT(cudaMalloc(&g->tgt, N * sizeof(int32_t)));
#undef MLSYS__RELM_CT
  *out = g;
  return MLSYS_OK;
}

/* mlsys_relm_gpt2_backward on the device for the (B, T) batch of create: *loss = mean cross-entropy (nats, summed in
   double on the host, rows in order); with grads != 0 the device gradients (g->grads, llm.c's order) are overwritten
   with ∂loss/∂param. Errors: MLSYS_ERR_ARG (ids outside [0, V)), MLSYS_ERR_CUDA. */
static inline mlsys_status mlsys_relm_gpt2_cuda_train_backward(mlsys_relm_gpt2_cuda_train *g, const int32_t *inputs, const int32_t *targets,
                                                               double *loss, int grads) {
  if (!g || !inputs || !targets || !loss) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: needs the runner, inputs, targets and a loss");
  const int C = g->cfg.n_embd, L = g->cfg.n_layer, NH = g->cfg.n_head, V = g->cfg.vocab_size, B = g->B, T = g->T, N = B * T;
  const unsigned TB = MLSYS_RELM_THREADS;
  for (int r = 0; r < N; r++) {
    if (inputs[r] < 0 || inputs[r] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: input %d = %d is outside [0, %d)", r, (int)inputs[r], V);
    if (targets[r] < 0 || targets[r] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: target %d = %d is outside [0, %d)", r, (int)targets[r], V);
  }
  MLSYS_CUDA_CHECK(cudaMemcpy(g->inp, inputs, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice));
  MLSYS_CUDA_CHECK(cudaMemcpy(g->tgt, targets, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice));
  float *A = g->acts, *P[16], *G[16];
  for (int k = 0; k < 16; k++) { P[k] = g->params + g->to[k]; G[k] = g->grads + g->to[k]; }
  const size_t NC = (size_t)N * C;
  const unsigned ew = mlsys_cuda_blocks(NC, TB), rows_w = mlsys_cuda_blocks((size_t)N * NH * 32, TB);
  /* ---- forward ---- */
  mlsys_relm_k_encoder_fwd<<<ew, TB>>>(A + g->x0, g->inp, P[0], P[1], N, T, C);
  for (int l = 0; l < L; l++) {
    float *Y = A + g->x0 + NC + (size_t)l * g->layer;
    const float *res1 = l ? Y - g->layer + g->res3 : A + g->x0;
    const size_t lc = (size_t)l * C;
    mlsys_relm_k_ln_fwd<<<N, TB>>>(Y + g->ln1, Y + g->ln1m, Y + g->ln1r, res1, P[2] + lc, P[3] + lc, N, C);
    mlsys_relm_cu_matmul_fwd(Y + g->qkv, Y + g->ln1, P[4] + lc * 3 * C, P[5] + lc * 3, N, C, 3 * C);
    mlsys_relm_k_att_fwd<<<rows_w, TB>>>(Y + g->atty, Y + g->att, Y + g->qkv, B, T, C, NH);
    mlsys_relm_cu_matmul_fwd(Y + g->res2, Y + g->atty, P[6] + lc * C, P[7] + lc, N, C, C);
    mlsys_relm_k_residual<<<ew, TB>>>(Y + g->res2, res1, NC);
    mlsys_relm_k_ln_fwd<<<N, TB>>>(Y + g->ln2, Y + g->ln2m, Y + g->ln2r, Y + g->res2, P[8] + lc, P[9] + lc, N, C);
    mlsys_relm_cu_matmul_fwd(Y + g->fch, Y + g->ln2, P[10] + lc * 4 * C, P[11] + lc * 4, N, C, 4 * C);
    MLSYS_CUDA_CHECK(cudaMemcpyAsync(Y + g->fchg, Y + g->fch, 4 * NC * sizeof(float), cudaMemcpyDeviceToDevice));
    mlsys_relm_k_gelu<<<mlsys_cuda_blocks(4 * NC, TB), TB>>>(Y + g->fchg, 4 * NC);
    mlsys_relm_cu_matmul_fwd(Y + g->res3, Y + g->fchg, P[12] + lc * 4 * C, P[13] + lc, N, 4 * C, C);
    mlsys_relm_k_residual<<<ew, TB>>>(Y + g->res3, Y + g->res2, NC);
  }
  const float *last = A + g->x0 + NC + (size_t)(L - 1) * g->layer + g->res3;
  mlsys_relm_k_ln_fwd<<<N, TB>>>(A + g->lnf, A + g->lnfm, A + g->lnfr, last, P[14], P[15], N, C);
  mlsys_relm_cu_matmul_fwd(A + g->logits, A + g->lnf, P[0], NULL, N, C, V);
  mlsys_relm_k_crossentropy<<<N, 1024>>>(A + g->logits, g->loss, g->tgt, V, N, grads != 0);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  MLSYS_CUDA_CHECK(cudaMemcpy(g->hloss, g->loss, (size_t)N * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int r = 0; r < N; r++) sum += g->hloss[r];
  *loss = sum / N;
  if (!grads) return MLSYS_OK;
  /* ---- backward (llm.c's gpt2_backward); dres = ∂loss/∂(the residual stream) ---- */
  MLSYS_CUDA_CHECK(cudaMemsetAsync(g->grads, 0, g->np * sizeof(float)));
  mlsys_relm_cu_matmul_bwd(A + g->dtmp, G[0], NULL, A + g->logits, A + g->lnf, P[0], N, C, V);
  MLSYS_CUDA_CHECK(cudaMemsetAsync(A + g->dres, 0, NC * sizeof(float)));
  mlsys_relm_k_ln_bwd_dx<<<N, TB>>>(A + g->dres, A + g->dtmp, last, P[14], A + g->lnfm, A + g->lnfr, N, C);
  mlsys_relm_k_ln_bwd_dwdb<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(G[14], G[15], A + g->dtmp, last, A + g->lnfm, A + g->lnfr, N, C);
  for (int l = L - 1; l >= 0; l--) {
    float *Y = A + g->x0 + NC + (size_t)l * g->layer;
    const float *res1 = l ? Y - g->layer + g->res3 : A + g->x0;
    const size_t lc = (size_t)l * C;
    float *dres = A + g->dres, *dtmp = A + g->dtmp, *dbig = A + g->dbig;
    mlsys_relm_cu_matmul_bwd(dbig, G[12] + lc * 4 * C, G[13] + lc, dres, Y + g->fchg, P[12] + lc * 4 * C, N, 4 * C, C);
    mlsys_relm_k_gelu_bwd<<<mlsys_cuda_blocks(4 * NC, TB), TB>>>(dbig, Y + g->fch, 4 * NC);
    mlsys_relm_cu_matmul_bwd(dtmp, G[10] + lc * 4 * C, G[11] + lc * 4, dbig, Y + g->ln2, P[10] + lc * 4 * C, N, C, 4 * C);
    mlsys_relm_k_ln_bwd_dx<<<N, TB>>>(dres, dtmp, Y + g->res2, P[8] + lc, Y + g->ln2m, Y + g->ln2r, N, C);
    mlsys_relm_k_ln_bwd_dwdb<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(G[8] + lc, G[9] + lc, dtmp, Y + g->res2, Y + g->ln2m, Y + g->ln2r, N, C);
    mlsys_relm_cu_matmul_bwd(A + g->datty, G[6] + lc * C, G[7] + lc, dres, Y + g->atty, P[6] + lc * C, N, C, C);
    mlsys_relm_k_att_bwd_scores<<<rows_w, TB>>>(A + g->dpre, Y + g->att, Y + g->qkv, A + g->datty, B, T, C, NH);
    mlsys_relm_k_att_bwd_qkv<<<ew, TB>>>(A + g->dqkv, A + g->dpre, Y + g->att, Y + g->qkv, A + g->datty, B, T, C, NH);
    mlsys_relm_cu_matmul_bwd(dtmp, G[4] + lc * 3 * C, G[5] + lc * 3, A + g->dqkv, Y + g->ln1, P[4] + lc * 3 * C, N, C, 3 * C);
    mlsys_relm_k_ln_bwd_dx<<<N, TB>>>(dres, dtmp, res1, P[2] + lc, Y + g->ln1m, Y + g->ln1r, N, C);
    mlsys_relm_k_ln_bwd_dwdb<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(G[2] + lc, G[3] + lc, dtmp, res1, Y + g->ln1m, Y + g->ln1r, N, C);
  }
  mlsys_relm_k_encoder_bwd_wte<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(G[0], A + g->dres, g->inp, N, C);
  mlsys_relm_k_encoder_bwd_wpe<<<mlsys_cuda_blocks((size_t)T * C, TB), TB>>>(G[1], A + g->dres, B, T, C);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  MLSYS_CUDA_CHECK(cudaDeviceSynchronize());
  return MLSYS_OK;
}

/* One training step as mlsys_relm_gpt2_train takes it: the backward, the global gradient norm (*grad_norm, before
   clipping; may be NULL), clipping to o->grad_clip, and AdamW at learning rate lr (the caller's schedule) with step
   count t + 1, decay on the 2-D tensors only. Everything stays on the device. o may be NULL (the defaults). */
static inline mlsys_status mlsys_relm_gpt2_cuda_train_step(mlsys_relm_gpt2_cuda_train *g, const int32_t *inputs, const int32_t *targets, double lr,
                                                           const mlsys_relm_gpt2_cuda_opt *o, double *loss, double *grad_norm) {
  mlsys_relm_gpt2_cuda_opt d;
  mlsys_status s;
  if (o) d = *o; else memset(&d, 0, sizeof d);
  if (d.beta1 == 0) d.beta1 = 0.9;
  if (d.beta2 == 0) d.beta2 = 0.95;
  if (d.eps == 0) d.eps = 1e-8;
  if (d.weight_decay < 0) d.weight_decay = 0;
  if (d.grad_clip == 0) d.grad_clip = 1.0;
  if (lr == 0) lr = 3e-4;
  if (!(lr > 0) || !(d.beta1 > 0 && d.beta1 < 1) || !(d.beta2 > 0 && d.beta2 < 1) || !(d.eps > 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: lr %g, beta1 %g, beta2 %g, eps %g: need lr > 0, betas in (0, 1), eps > 0", lr, d.beta1, d.beta2,
                           d.eps);
  if ((s = mlsys_relm_gpt2_cuda_train_backward(g, inputs, targets, loss, 1))) return s;
  mlsys_relm_k_sumsq<<<MLSYS_RELM_NORM_BLOCKS, MLSYS_RELM_THREADS>>>(g->norm_part, g->grads, g->np);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  MLSYS_CUDA_CHECK(cudaMemcpy(g->hloss, g->norm_part, MLSYS_RELM_NORM_BLOCKS * sizeof(double), cudaMemcpyDeviceToHost));
  double nrm = 0;
  for (int b = 0; b < MLSYS_RELM_NORM_BLOCKS; b++) nrm += g->hloss[b];
  nrm = sqrt(nrm);
  if (grad_norm) *grad_norm = nrm;
  if (d.grad_clip > 0 && nrm > d.grad_clip)
    mlsys_relm_k_scale<<<mlsys_cuda_blocks(g->np, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(g->grads, g->np, (float)(d.grad_clip / nrm));
  g->t++;
  for (int k = 0; k < 16; k++) {
    const int two_d = k == 0 || k == 1 || k == 4 || k == 6 || k == 10 || k == 12;
    mlsys_relm_cu_adamw(g->params + g->to[k], g->grads + g->to[k], g->m + g->to[k], g->v + g->to[k], g->tn[k], g->t, (float)lr, (float)d.beta1,
                        (float)d.beta2, (float)d.eps, two_d ? (float)d.weight_decay : 0.0f);
  }
  MLSYS_CUDA_CHECK(cudaGetLastError());
  MLSYS_CUDA_CHECK(cudaDeviceSynchronize());
  return MLSYS_OK;
}

/* Copies the device parameters (after steps) into m, or the last gradients into grads (np floats). MLSYS_ERR_CUDA. */
static inline mlsys_status mlsys_relm_gpt2_cuda_train_download(const mlsys_relm_gpt2_cuda_train *g, mlsys_relm_gpt2 *m) {
  size_t np;
  float *hp = mlsys_relm_gpt2_params(m, &np);
  if (np != g->np) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 cuda train: the model has %zu parameters, the device %zu", np, g->np);
  MLSYS_CUDA_CHECK(cudaMemcpy(hp, g->params, np * sizeof(float), cudaMemcpyDeviceToHost));
  return MLSYS_OK;
}
static inline mlsys_status mlsys_relm_gpt2_cuda_train_grads(const mlsys_relm_gpt2_cuda_train *g, float *grads) {
  MLSYS_CUDA_CHECK(cudaMemcpy(grads, g->grads, g->np * sizeof(float), cudaMemcpyDeviceToHost));
  return MLSYS_OK;
}

#endif /* MLSYS_RELM_TRAIN_KERNELS_CUH */
