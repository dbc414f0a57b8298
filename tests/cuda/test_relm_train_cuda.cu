// tests/cuda/test_relm_train_cuda.cu — ReLM's GPT-2 training step on the GPU (kernels/mlsys_relm_train_kernels.cuh)
// against the CPU trainer of mlsys_relm.h (issue 24). Built by `make cuda`, run by `make cuda-test` (build/gpu/run.sh);
// without a device it prints "skipped: no CUDA device" and exits 0.
//
// 1. Every kernel against the CPU function it mirrors, on random inputs with sizes that are not multiples of the
//    tiles (encoder, LayerNorm forward and backward, the tiled GEMM as matmul forward and backward, attention forward
//    and backward, GELU backward, cross-entropy with its gradient, the encoder backward, AdamW for 3 steps, the
//    squared norm): error = max |gpu − cpu| / max |cpu| per output ≤ 1e-4.
// 2. A whole step on random tiny models (L2 NH2 C64 V512 Vp520 maxT 40 with B 2 × T 32; L1 NH3 C48 V97 Vp100 maxT 20,
//    every parameter perturbed, B 3 × T 20): the loss (≤ 1e-5 relative) and each of the 16 gradient tensors against
//    mlsys_relm_gpt2_backward (≤ 1e-3 of the tensor's largest |gradient|); a second run is bitwise the first.
// 3. Three training steps (mlsys_relm_gpt2_cuda_train_step) against the arithmetic of mlsys_relm_gpt2_train on the CPU
//    (backward, global norm, clipping, mlsys_adamw_step with decay on the 2-D tensors): losses and norms ≤ 1e-4
//    relative, every parameter within 0.05·lr. eps is 1e-5 here, not 1e-8: at t = 1 Adam's update is g / (|g| + eps),
//    so with a tiny eps a gradient element within rounding of 0 may flip its update by 2·lr; a larger eps bounds
//    the update's sensitivity to a gradient's rounding by lr / eps.
// 4. Bad input: T > maxT at create and a token outside [0, V) are MLSYS_ERR_ARG.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_relm.h"
#include "kernels/mlsys_relm_kernels.cuh"
#include "kernels/mlsys_relm_train_kernels.cuh"

#include <stdlib.h>

static int failures = 0;

#define TRY(call)                                                                    \
  do {                                                                               \
    mlsys_status s_ = (call);                                                        \
    if (s_ != MLSYS_OK) {                                                            \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, mlsys_last_error()); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)
#define CU(call)                                                                                         \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));                 \
      exit(1);                                                                                           \
    }                                                                                                    \
  } while (0)

// max |a − b| / max |b| (NaN counts as worst; a reference that is all zeros needs a to be all zeros)
static double relerr(const float *a, const float *b, size_t n) {
  double w = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= w)) w = d;
    if (fabs((double)b[i]) > m) m = fabs((double)b[i]);
  }
  return m > 0 ? w / m : (w == 0 ? 0 : INFINITY);
}
static void report(const char *what, double e, double tol) {
  int ok = e <= tol;
  printf("  %-64s rel err %.2e  %s\n", what, e, ok ? "ok" : "FAIL");
  failures += !ok;
}
static float *dev(const float *h, size_t n) {
  float *d = NULL;
  CU(cudaMalloc(&d, (n ? n : 1) * sizeof(float)));
  if (h) CU(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}
static int32_t *devi(const int32_t *h, size_t n) {
  int32_t *d = NULL;
  CU(cudaMalloc(&d, n * sizeof(int32_t)));
  CU(cudaMemcpy(d, h, n * sizeof(int32_t), cudaMemcpyHostToDevice));
  return d;
}
static float *host(const float *d, size_t n) {
  float *h = (float *)malloc(n * sizeof(float));
  CU(cudaDeviceSynchronize());
  CU(cudaGetLastError());
  CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}
static float *randv(mlsys_rng *r, size_t n, double scale, double mean) {
  float *v = (float *)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) v[i] = (float)(mean + scale * mlsys_rng_normal(r));
  return v;
}

// 1. kernels vs CPU references
static void check_kernels(void) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 21);
  const unsigned TB = MLSYS_RELM_THREADS;
  {  // encoder forward and backward (the loops of mlsys_relm_gpt2_backward)
    const int B = 3, T = 11, C = 40, V = 29, N = B * T;
    int32_t tok[33];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)mlsys_rng_below(&r, 7);   // few distinct tokens: repeats accumulate
    float *wte = randv(&r, (size_t)V * C, 1, 0), *wpe = randv(&r, (size_t)T * C, 1, 0), *g = randv(&r, (size_t)N * C, 1, 0);
    float *out = (float *)malloc((size_t)N * C * 4), *dwte = randv(&r, (size_t)V * C, 1, 0), *dwpe = randv(&r, (size_t)T * C, 1, 0);
    float *d_wte = dev(wte, (size_t)V * C), *d_wpe = dev(wpe, (size_t)T * C), *d_out = dev(NULL, (size_t)N * C), *d_g = dev(g, (size_t)N * C);
    float *d_dwte = dev(dwte, (size_t)V * C), *d_dwpe = dev(dwpe, (size_t)T * C);
    int32_t *d_tok = devi(tok, N);
    for (int q = 0; q < N; q++)
      for (int i = 0; i < C; i++) out[(size_t)q * C + i] = wte[(size_t)tok[q] * C + i] + wpe[(size_t)(q % T) * C + i];
    mlsys_relm_k_encoder_fwd<<<mlsys_cuda_blocks((size_t)N * C, TB), TB>>>(d_out, d_tok, d_wte, d_wpe, N, T, C);
    float *go = host(d_out, (size_t)N * C);
    report("encoder forward (3 x 11 rows of 40)", relerr(go, out, (size_t)N * C), 1e-4);
    for (int q = 0; q < N; q++) {
      mlsys_dense_axpy(dwte + (size_t)tok[q] * C, 1.0f, g + (size_t)q * C, C);
      mlsys_dense_axpy(dwpe + (size_t)(q % T) * C, 1.0f, g + (size_t)q * C, C);
    }
    mlsys_relm_k_encoder_bwd_wte<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(d_dwte, d_g, d_tok, N, C);
    mlsys_relm_k_encoder_bwd_wpe<<<mlsys_cuda_blocks((size_t)T * C, TB), TB>>>(d_dwpe, d_g, B, T, C);
    float *gwte = host(d_dwte, (size_t)V * C), *gwpe = host(d_dwpe, (size_t)T * C);
    report("encoder backward, dwte += (repeated tokens)", relerr(gwte, dwte, (size_t)V * C), 1e-4);
    report("encoder backward, dwpe +=", relerr(gwpe, dwpe, (size_t)T * C), 1e-4);
    cudaFree(d_wte); cudaFree(d_wpe); cudaFree(d_out); cudaFree(d_g); cudaFree(d_dwte); cudaFree(d_dwpe); cudaFree(d_tok);
    free(wte); free(wpe); free(g); free(out); free(dwte); free(dwpe); free(go); free(gwte); free(gwpe);
  }
  {  // LayerNorm forward (with mean and 1/std) and backward
    const int N = 37, C = 96;
    const size_t NC = (size_t)N * C;
    float *x = randv(&r, NC, 2.0, 0.5), *w = randv(&r, C, 0.2, 1.0), *b = randv(&r, C, 0.1, 0.0), *g = randv(&r, NC, 1.0, 0);
    float *y = (float *)malloc(NC * 4), *mean = (float *)malloc(N * 4), *rstd = (float *)malloc(N * 4);
    float *dx = randv(&r, NC, 1.0, 0), *dw = randv(&r, C, 1.0, 0), *db = randv(&r, C, 1.0, 0);   // backward adds into these
    float *d_x = dev(x, NC), *d_w = dev(w, C), *d_b = dev(b, C), *d_y = dev(NULL, NC), *d_m = dev(NULL, N), *d_r = dev(NULL, N);
    float *d_g = dev(g, NC), *d_dx = dev(dx, NC), *d_dw = dev(dw, C), *d_db = dev(db, C);
    mlsys_dense_layernorm(y, mean, rstd, x, w, b, N, C);
    mlsys_relm_k_ln_fwd<<<N, TB>>>(d_y, d_m, d_r, d_x, d_w, d_b, N, C);
    float *gy = host(d_y, NC), *gm = host(d_m, N), *gr = host(d_r, N);
    report("layernorm forward, out (37 rows of 96)", relerr(gy, y, NC), 1e-4);
    report("layernorm forward, mean", relerr(gm, mean, N), 1e-4);
    report("layernorm forward, 1/std", relerr(gr, rstd, N), 1e-4);
    mlsys_dense_layernorm_backward(dx, dw, db, g, x, w, mean, rstd, N, C);
    CU(cudaMemcpy(d_m, mean, N * 4, cudaMemcpyHostToDevice));   // the backward on the CPU's saved statistics
    CU(cudaMemcpy(d_r, rstd, N * 4, cudaMemcpyHostToDevice));
    mlsys_relm_k_ln_bwd_dx<<<N, TB>>>(d_dx, d_g, d_x, d_w, d_m, d_r, N, C);
    mlsys_relm_k_ln_bwd_dwdb<<<mlsys_cuda_blocks((size_t)C, TB), TB>>>(d_dw, d_db, d_g, d_x, d_m, d_r, N, C);
    float *gdx = host(d_dx, NC), *gdw = host(d_dw, C), *gdb = host(d_db, C);
    report("layernorm backward, dinp +=", relerr(gdx, dx, NC), 1e-4);
    report("layernorm backward, dw +=", relerr(gdw, dw, C), 1e-4);
    report("layernorm backward, db +=", relerr(gdb, db, C), 1e-4);
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_b); cudaFree(d_y); cudaFree(d_m); cudaFree(d_r); cudaFree(d_g); cudaFree(d_dx); cudaFree(d_dw); cudaFree(d_db);
    free(x); free(w); free(b); free(g); free(y); free(mean); free(rstd); free(dx); free(dw); free(db); free(gy); free(gm); free(gr);
    free(gdx); free(gdw); free(gdb);
  }
  {  // the tiled GEMM as matmul forward (with and without bias) and backward (dinp =, dw +=, db +=)
    const int N = 70, C = 97, OC = 131;
    float *x = randv(&r, (size_t)N * C, 1.0, 0), *w = randv(&r, (size_t)OC * C, 0.1, 0), *b = randv(&r, OC, 0.1, 0), *g = randv(&r, (size_t)N * OC, 1, 0);
    float *y = (float *)malloc((size_t)N * OC * 4), *dx = (float *)malloc((size_t)N * C * 4), *dw = randv(&r, (size_t)OC * C, 1, 0),
          *db = randv(&r, OC, 1, 0);
    float *d_x = dev(x, (size_t)N * C), *d_w = dev(w, (size_t)OC * C), *d_b = dev(b, OC), *d_y = dev(NULL, (size_t)N * OC), *d_g = dev(g, (size_t)N * OC);
    float *d_dx = dev(NULL, (size_t)N * C), *d_dw = dev(dw, (size_t)OC * C), *d_db = dev(db, OC);
    char what[96];
    for (int withb = 0; withb < 2; withb++) {
      mlsys_dense_matmul(NULL, y, x, w, withb ? b : NULL, N, C, OC);
      mlsys_relm_cu_matmul_fwd(d_y, d_x, d_w, withb ? d_b : NULL, N, C, OC);
      float *gy = host(d_y, (size_t)N * OC);
      snprintf(what, sizeof what, "matmul forward 70x97 . (131x97)T %s bias", withb ? "with" : "without");
      report(what, relerr(gy, y, (size_t)N * OC), 1e-4);
      free(gy);
    }
    mlsys_dense_matmul_backward(NULL, dx, dw, db, g, x, w, N, C, OC);
    mlsys_relm_cu_matmul_bwd(d_dx, d_dw, d_db, d_g, d_x, d_w, N, C, OC);
    float *gdx = host(d_dx, (size_t)N * C), *gdw = host(d_dw, (size_t)OC * C), *gdb = host(d_db, OC);
    report("matmul backward, dinp = dout . w", relerr(gdx, dx, (size_t)N * C), 1e-4);
    report("matmul backward, dw += doutT . inp", relerr(gdw, dw, (size_t)OC * C), 1e-4);
    report("matmul backward, db += column sums", relerr(gdb, db, OC), 1e-4);
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_b); cudaFree(d_y); cudaFree(d_g); cudaFree(d_dx); cudaFree(d_dw); cudaFree(d_db);
    free(x); free(w); free(b); free(g); free(y); free(dx); free(dw); free(db); free(gdx); free(gdw); free(gdb);
  }
  {  // GELU backward
    const size_t n = 10007;
    float *x = randv(&r, n, 3.0, 0), *d = randv(&r, n, 1.0, 0), *d_x = dev(x, n), *d_d = dev(d, n);
    mlsys__relm_gelu_bwd(d, x, n);
    mlsys_relm_k_gelu_bwd<<<mlsys_cuda_blocks(n, TB), TB>>>(d_d, d_x, n);
    float *gd = host(d_d, n);
    report("gelu backward (10007 values)", relerr(gd, d, n), 1e-4);
    cudaFree(d_x); cudaFree(d_d); free(x); free(d); free(gd);
  }
  {  // attention forward (out, softmax weights) and backward (dqkv), B 2, T 45 (more than a warp), 3 heads of 16
    const int B = 2, T = 45, C = 48, NH = 3, N = B * T;
    const size_t NC = (size_t)N * C, natt = (size_t)B * NH * T * T;
    float *qkv = randv(&r, 3 * NC, 1.0, 0), *g = randv(&r, NC, 1.0, 0), *out = (float *)malloc(NC * 4), *att = (float *)malloc(natt * 4);
    float *dqkv = (float *)calloc(3 * NC, 4), *scratch = (float *)malloc((size_t)T * 4);
    mlsys__relm_tatt at;
    at.out = out; at.att = att; at.dqkv = NULL; at.qkv = qkv; at.dout = NULL; at.B = B; at.T = T; at.C = C; at.NH = NH; at.scratch = scratch;
    for (long i = 0; i < (long)N * NH; i++) mlsys__relm_tatt_fwd(&at, i, 0);
    at.dqkv = dqkv; at.dout = g;
    for (long i = 0; i < (long)B * NH; i++) mlsys__relm_tatt_bwd(&at, i, 0);
    float *d_qkv = dev(qkv, 3 * NC), *d_g = dev(g, NC), *d_out = dev(NULL, NC), *d_att = dev(NULL, natt), *d_dpre = dev(NULL, natt),
          *d_dqkv = dev(NULL, 3 * NC);
    mlsys_relm_k_att_fwd<<<mlsys_cuda_blocks((size_t)N * NH * 32, TB), TB>>>(d_out, d_att, d_qkv, B, T, C, NH);
    float *gout = host(d_out, NC), *gatt = host(d_att, natt);
    report("attention forward, out (2 x 45 rows, 3 heads of 16)", relerr(gout, out, NC), 1e-4);
    report("attention forward, softmax weights (zero past the row)", relerr(gatt, att, natt), 1e-4);
    CU(cudaMemcpy(d_att, att, natt * 4, cudaMemcpyHostToDevice));   // the backward on the CPU's weights
    mlsys_relm_k_att_bwd_scores<<<mlsys_cuda_blocks((size_t)N * NH * 32, TB), TB>>>(d_dpre, d_att, d_qkv, d_g, B, T, C, NH);
    mlsys_relm_k_att_bwd_qkv<<<mlsys_cuda_blocks(NC, TB), TB>>>(d_dqkv, d_dpre, d_att, d_qkv, d_g, B, T, C, NH);
    float *gd = host(d_dqkv, 3 * NC), *cq = (float *)malloc(NC * 4), *gq = (float *)malloc(NC * 4);
    const char *part[3] = {"dq", "dk", "dv"};
    for (int k = 0; k < 3; k++) {   // each third separately: dv's scale differs from dq's and dk's
      char what[96];
      for (int q = 0; q < N; q++) {
        memcpy(cq + (size_t)q * C, dqkv + (size_t)q * 3 * C + (size_t)k * C, (size_t)C * 4);
        memcpy(gq + (size_t)q * C, gd + (size_t)q * 3 * C + (size_t)k * C, (size_t)C * 4);
      }
      snprintf(what, sizeof what, "attention backward, %s", part[k]);
      report(what, relerr(gq, cq, NC), 1e-4);
    }
    cudaFree(d_qkv); cudaFree(d_g); cudaFree(d_out); cudaFree(d_att); cudaFree(d_dpre); cudaFree(d_dqkv);
    free(qkv); free(g); free(out); free(att); free(dqkv); free(scratch); free(gout); free(gatt); free(gd); free(cq); free(gq);
  }
  {  // cross-entropy: per-row loss and the gradient written over the logits
    const int N = 7, V = 50257;
    const size_t NV = (size_t)N * V;
    float *l = randv(&r, NV, 3.0, 1.0), *d_l = dev(l, NV);
    int32_t tg[7];
    double loss[7], gl[7], *d_loss = NULL;
    for (int i = 0; i < N; i++) tg[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)V);
    int32_t *d_tg = devi(tg, N);
    CU(cudaMalloc(&d_loss, N * sizeof(double)));
    mlsys__relm_ce ce;
    ce.logits = l; ce.loss = loss; ce.targets = tg; ce.V = V; ce.N = N; ce.grad = 1;
    for (long i = 0; i < N; i++) mlsys__relm_ce_task(&ce, i, 0);
    mlsys_relm_k_crossentropy<<<N, 1024>>>(d_l, d_loss, d_tg, V, N, 1);
    float *gg = host(d_l, NV);
    CU(cudaMemcpy(gl, d_loss, N * sizeof(double), cudaMemcpyDeviceToHost));
    double wl = 0;
    for (int i = 0; i < N; i++) wl = fmax(wl, fabs(gl[i] - loss[i]) / fabs(loss[i]));
    report("cross-entropy, loss per row (7 rows of 50257)", wl, 1e-5);
    report("cross-entropy, gradient (softmax - onehot) / N", relerr(gg, l, NV), 1e-4);
    cudaFree(d_l); cudaFree(d_tg); cudaFree(d_loss); free(l); free(gg);
  }
  {  // AdamW, 3 steps on the same gradients (decay on), and the squared norm
    const size_t n = 100003;
    float *p = randv(&r, n, 0.1, 0), *m = (float *)calloc(n, 4), *v = (float *)calloc(n, 4), *g0 = randv(&r, n, 0.01, 0);
    float *d_p = dev(p, n), *d_m = dev(m, n), *d_v = dev(v, n), *d_g = dev(g0, n);
    for (int t = 1; t <= 3; t++) {
      for (size_t i = 0; i < n; i++) g0[i] = (float)(0.01 * mlsys_rng_normal(&r));
      CU(cudaMemcpy(d_g, g0, n * 4, cudaMemcpyHostToDevice));
      mlsys_adamw_step(p, g0, m, v, n, t, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f);
      mlsys_relm_cu_adamw(d_p, d_g, d_m, d_v, n, t, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f);
    }
    float *gp = host(d_p, n), *gm = host(d_m, n), *gv = host(d_v, n);
    report("AdamW after 3 steps, parameters", relerr(gp, p, n), 1e-4);
    report("AdamW after 3 steps, first moments", relerr(gm, m, n), 1e-4);
    report("AdamW after 3 steps, second moments", relerr(gv, v, n), 1e-4);
    double *d_part = NULL, part[MLSYS_RELM_NORM_BLOCKS], s = 0, sc = 0;
    CU(cudaMalloc(&d_part, sizeof part));
    mlsys_relm_k_sumsq<<<MLSYS_RELM_NORM_BLOCKS, TB>>>(d_part, d_p, n);
    CU(cudaMemcpy(part, d_part, sizeof part, cudaMemcpyDeviceToHost));
    for (int b = 0; b < MLSYS_RELM_NORM_BLOCKS; b++) s += part[b];
    for (size_t i = 0; i < n; i++) sc += (double)gp[i] * gp[i];
    report("sum of squares (1024 block sums in double)", fabs(s - sc) / sc, 1e-10);
    cudaFree(d_p); cudaFree(d_m); cudaFree(d_v); cudaFree(d_g); cudaFree(d_part);
    free(p); free(m); free(v); free(g0); free(gp); free(gm); free(gv);
  }
}

// 2. and 3.: whole models
static mlsys_relm_gpt2 *make_model(mlsys_relm_gpt2_config c, uint64_t seed, int perturb) {
  mlsys_relm_gpt2_desc d = {0, 0};
  mlsys_relm_gpt2 *m = NULL;
  mlsys_rng r;
  size_t n;
  TRY(mlsys_relm_gpt2_random(&c, seed, &d, &m));
  if (!perturb) return m;
  float *p = mlsys_relm_gpt2_params(m, &n);
  mlsys_rng_seed(&r, seed ^ 0x5eed);
  for (size_t i = 0; i < n; i++) {   // LayerNorm weights off 1, biases off 0, weights larger: every path matters
    if (p[i] == 1.0f) p[i] = (float)(1.0 + 0.2 * mlsys_rng_normal(&r));
    else if (p[i] == 0.0f) p[i] = (float)(0.1 * mlsys_rng_normal(&r));
    else p[i] = (float)(p[i] * 5.0);
  }
  return m;
}
static const char *const tensor_name[16] = {"wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
                                            "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

static void check_step(const char *name, mlsys_relm_gpt2_config c, int B, int T, int perturb) {
  mlsys_relm_gpt2 *m = make_model(c, 3, perturb);
  mlsys_relm_gpt2_cuda_train *g = NULL;
  mlsys_rng r;
  size_t np, tn[16];
  float *T16[16];
  const int N = B * T;
  int32_t *in = (int32_t *)malloc((size_t)N * 4), *tg = (int32_t *)malloc((size_t)N * 4);
  mlsys_rng_seed(&r, 4);
  for (int i = 0; i < N; i++) { in[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)c.vocab_size); tg[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)c.vocab_size); }
  mlsys_relm_gpt2_params(m, &np);
  float *cg = (float *)malloc(np * 4), *gg = (float *)malloc(np * 4), *gg2 = (float *)malloc(np * 4);
  double closs, gloss, gloss2;
  TRY(mlsys_relm_gpt2_backward(m, in, tg, B, T, &closs, cg));
  TRY(mlsys_relm_gpt2_cuda_train_create(m, B, T, &g));
  TRY(mlsys_relm_gpt2_cuda_train_backward(g, in, tg, &gloss, 1));
  TRY(mlsys_relm_gpt2_cuda_train_grads(g, gg));
  char what[128];
  snprintf(what, sizeof what, "%s, B %d x T %d: loss %.6f", name, B, T, closs);
  report(what, fabs(gloss - closs) / closs, 1e-5);
  mlsys__relm_tensors(m, cg, T16, tn);
  for (int k = 0; k < 16; k++) {
    const size_t off = (size_t)(T16[k] - cg);
    snprintf(what, sizeof what, "%s: gradient %s (%zu values)", name, tensor_name[k], tn[k]);
    report(what, relerr(gg + off, cg + off, tn[k]), 1e-3);
  }
  TRY(mlsys_relm_gpt2_cuda_train_backward(g, in, tg, &gloss2, 1));
  TRY(mlsys_relm_gpt2_cuda_train_grads(g, gg2));
  int same = gloss2 == gloss && !memcmp(gg, gg2, np * 4);
  printf("  %-64s %s\n", "  a second run: loss and gradients bit-identical", same ? "ok" : "FAIL");
  failures += !same;
  mlsys_relm_gpt2_cuda_train_free(g);
  mlsys_relm_gpt2_free(m);
  free(in); free(tg); free(cg); free(gg); free(gg2);
}

static void check_training(void) {
  const mlsys_relm_gpt2_config c = {40, 512, 520, 2, 2, 64};
  const int B = 2, T = 32, N = B * T, steps = 3;
  const double lr = 1e-3, wd = 0.1, clip = 1.0, eps = 1e-5;
  mlsys_relm_gpt2 *m = make_model(c, 9, 1), *mg = make_model(c, 9, 1);
  mlsys_relm_gpt2_cuda_train *g = NULL;
  mlsys_rng r;
  size_t np, tn[16];
  float *P[16], *G[16], *M[16], *Vv[16];
  float *p = mlsys_relm_gpt2_params(m, &np);
  float *grads = (float *)malloc(np * 4), *mo = (float *)calloc(np, 4), *vo = (float *)calloc(np, 4);
  int32_t in[64], tg[64];
  mlsys__relm_tensors(m, p, P, tn);
  mlsys__relm_tensors(m, grads, G, NULL);
  mlsys__relm_tensors(m, mo, M, NULL);
  mlsys__relm_tensors(m, vo, Vv, NULL);
  TRY(mlsys_relm_gpt2_cuda_train_create(mg, B, T, &g));
  mlsys_relm_gpt2_cuda_opt o;
  memset(&o, 0, sizeof o);
  o.eps = eps; o.weight_decay = wd; o.grad_clip = clip;
  mlsys_rng_seed(&r, 10);
  printf("three training steps, L2 NH2 C64 V512, B %d x T %d, lr %g, weight decay %g, clip %g, eps %g:\n", B, T, lr, wd, clip, eps);
  for (int s = 0; s < steps; s++) {
    double closs, gloss, cn = 0, gn;
    for (int i = 0; i < N; i++) { in[i] = (int32_t)mlsys_rng_below(&r, 512); tg[i] = (int32_t)mlsys_rng_below(&r, 512); }
    // the CPU: mlsys_relm_gpt2_train's step
    TRY(mlsys_relm_gpt2_backward(m, in, tg, B, T, &closs, grads));
    for (size_t i = 0; i < np; i++) cn += (double)grads[i] * grads[i];
    cn = sqrt(cn);
    if (cn > clip) { const float sc = (float)(clip / cn); for (size_t i = 0; i < np; i++) grads[i] *= sc; }
    for (int k = 0; k < 16; k++) {
      const int two_d = k == 0 || k == 1 || k == 4 || k == 6 || k == 10 || k == 12;
      mlsys_adamw_step(P[k], G[k], M[k], Vv[k], tn[k], s + 1, (float)lr, 0.9f, 0.95f, (float)eps, two_d ? (float)wd : 0.0f);
    }
    TRY(mlsys_relm_gpt2_cuda_train_step(g, in, tg, lr, &o, &gloss, &gn));
    char what[96];
    snprintf(what, sizeof what, "step %d: loss %.6f", s + 1, closs);
    report(what, fabs(gloss - closs) / closs, 1e-4);
    snprintf(what, sizeof what, "step %d: gradient norm %.6f (%s)", s + 1, cn, cn > clip ? "clipped" : "not clipped");
    report(what, fabs(gn - cn) / cn, 1e-4);
  }
  TRY(mlsys_relm_gpt2_cuda_train_download(g, mg));
  size_t np2;
  float *pg = mlsys_relm_gpt2_params(mg, &np2);
  double worst = 0, moved = 0;
  for (size_t i = 0; i < np; i++) {
    double d = fabs((double)pg[i] - (double)p[i]);
    if (!(d <= worst)) worst = d;
  }
  {  // how far the CPU's parameters moved from the start, for scale
    mlsys_relm_gpt2 *m0 = make_model(c, 9, 1);
    float *p0 = mlsys_relm_gpt2_params(m0, &np2);
    for (size_t i = 0; i < np; i++) moved = fmax(moved, fabs((double)p[i] - (double)p0[i]));
    mlsys_relm_gpt2_free(m0);
  }
  int ok = worst <= 0.05 * lr && moved > lr;
  printf("  %-64s max |gpu - cpu| = %.2e = %.3f lr (the CPU moved up to %.2e)  %s\n", "parameters after 3 steps", worst, worst / lr, moved,
         ok ? "ok" : "FAIL");
  failures += !ok;
  mlsys_relm_gpt2_cuda_train_free(g);
  mlsys_relm_gpt2_free(m);
  mlsys_relm_gpt2_free(mg);
  free(grads); free(mo); free(vo);
}

static void check_errors(void) {
  const mlsys_relm_gpt2_config c = {20, 97, 100, 1, 3, 48};
  mlsys_relm_gpt2 *m = make_model(c, 1, 0);
  mlsys_relm_gpt2_cuda_train *g = NULL;
  int32_t in[20], tg[20];
  double loss;
  for (int i = 0; i < 20; i++) in[i] = tg[i] = i;
  int ok = mlsys_relm_gpt2_cuda_train_create(m, 1, 21, &g) == MLSYS_ERR_ARG && !g;
  printf("  %-64s %s (%s)\n", "T 21 > maxT 20 at create: MLSYS_ERR_ARG", ok ? "ok" : "FAIL", mlsys_last_error());
  failures += !ok;
  TRY(mlsys_relm_gpt2_cuda_train_create(m, 1, 20, &g));
  in[7] = 97;
  ok = mlsys_relm_gpt2_cuda_train_backward(g, in, tg, &loss, 1) == MLSYS_ERR_ARG;
  printf("  %-64s %s (%s)\n", "input token 97 with V 97: MLSYS_ERR_ARG", ok ? "ok" : "FAIL", mlsys_last_error());
  failures += !ok;
  mlsys_relm_gpt2_cuda_train_free(g);
  mlsys_relm_gpt2_free(m);
}

int main(void) {
  char desc[256];
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  if (mlsys_cuda_describe(0, desc, sizeof desc) == MLSYS_OK) printf("device: %s\n", desc);
  printf("training kernels vs CPU references (max |gpu - cpu| / max |cpu|):\n");
  check_kernels();
  printf("a whole step's loss and gradients vs mlsys_relm_gpt2_backward:\n");
  const mlsys_relm_gpt2_config a = {40, 512, 520, 2, 2, 64}, b = {20, 97, 100, 1, 3, 48};
  check_step("L2 NH2 C64 V512 Vp520", a, 2, 32, 0);
  check_step("L1 NH3 C48 V97 Vp100 (perturbed)", b, 3, 20, 1);
  check_training();
  printf("bad input:\n");
  check_errors();
  printf("%s (%d failed)\n", failures ? "FAIL" : "all ok", failures);
  return failures ? 1 : 0;
}
