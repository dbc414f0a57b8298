// tests/cuda/test_relm_gpt2_cuda.cu — ReLM's GPT-2 on the GPU (kernels/mlsys_relm_kernels.cuh) against the CPU forward of
// mlsys_relm.h (spec relm.md §7.2, §7.3 test 15: CUDA vs CPU ≤ 1e-3). Built by `make cuda`, run by
// `make cuda-test`; without a device it prints "skipped: no CUDA device" and exits 0.
//
// 1. Every kernel against its CPU reference on random inputs (LayerNorm, matmul, GELU, residual, one-token attention
//    against a cache, log-softmax): max |gpu − cpu|.
// 2. Random tiny models (L2 NH2 C64 V512 Vp520 and L1 NH3 C48 V97 Vp100, every parameter perturbed, as in
//    tests/test_relm_gpt2.c) and a GPT-2 124M-shaped random model: the runner decodes a random sequence token by
//    token; its logits at every position against the CPU forward (max |Δ| ≤ 1e-3), its log-probabilities against the
//    CPU log-softmax (≤ 1e-3); then the GPU's decode rate (report only).
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_relm.h"
#include "kernels/mlsys_relm_kernels.cuh"

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

static double maxdiff(const float *a, const float *b, size_t n) {
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= w)) w = d;   // NaN counts as worst
  }
  return w;
}
static void report(const char *what, double d, double tol) {
  int ok = d <= tol;
  printf("  %-58s max |gpu - cpu| = %.2e  %s\n", what, d, ok ? "ok" : "FAIL");
  failures += !ok;
}
static float *dev(const float *h, size_t n) {
  float *d = NULL;
  CU(cudaMalloc(&d, n * sizeof(float)));
  if (h) CU(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}
static void host(float *h, const float *d, size_t n) { CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost)); }
static float *randv(mlsys_rng *r, size_t n, double scale, double mean) {
  float *v = (float *)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) v[i] = (float)(mean + scale * mlsys_rng_normal(r));
  return v;
}

// 1. kernels vs CPU references
static void check_kernels(void) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 1);
  const int N = 5, C = 96, OC = 200, V = 50257, T = 37, NH = 4;
  char what[96];
  {  // LayerNorm
    float *x = randv(&r, (size_t)N * C, 2.0, 0.5), *w = randv(&r, C, 0.2, 1.0), *b = randv(&r, C, 0.1, 0.0);
    float *y = (float *)malloc((size_t)N * C * 4), *yg = (float *)malloc((size_t)N * C * 4);
    float *dx = dev(x, (size_t)N * C), *dw = dev(w, C), *db = dev(b, C), *dy = dev(NULL, (size_t)N * C);
    mlsys_dense_layernorm(y, NULL, NULL, x, w, b, N, C);
    mlsys_relm_k_layernorm<<<N, MLSYS_RELM_THREADS>>>(dy, dx, dw, db, N, C);
    CU(cudaGetLastError());
    host(yg, dy, (size_t)N * C);
    report("layernorm (5 rows of 96)", maxdiff(yg, y, (size_t)N * C), 1e-4);
    cudaFree(dx); cudaFree(dw); cudaFree(db); cudaFree(dy); free(x); free(w); free(b); free(y); free(yg);
  }
  {  // matmul, with and without bias
    float *x = randv(&r, (size_t)N * C, 1.0, 0), *w = randv(&r, (size_t)OC * C, 0.1, 0), *b = randv(&r, OC, 0.1, 0);
    float *y = (float *)malloc((size_t)N * OC * 4), *yg = (float *)malloc((size_t)N * OC * 4);
    float *dx = dev(x, (size_t)N * C), *dw = dev(w, (size_t)OC * C), *db = dev(b, OC), *dy = dev(NULL, (size_t)N * OC);
    for (int withb = 0; withb < 2; withb++) {
      mlsys_dense_matmul(NULL, y, x, w, withb ? b : NULL, N, C, OC);
      mlsys__relm_cu_matmul(dy, dx, dw, withb ? db : NULL, N, C, OC);
      CU(cudaGetLastError());
      host(yg, dy, (size_t)N * OC);
      snprintf(what, sizeof what, "matmul 5x96 · (200x96)T %s bias", withb ? "with" : "without");
      report(what, maxdiff(yg, y, (size_t)N * OC), 1e-4);
    }
    cudaFree(dx); cudaFree(dw); cudaFree(db); cudaFree(dy); free(x); free(w); free(b); free(y); free(yg);
  }
  {  // GELU and residual
    const size_t n = 10000;
    float *x = randv(&r, n, 3.0, 0), *y = randv(&r, n, 1.0, 0), *xg = (float *)malloc(n * 4);
    float *dx = dev(x, n), *dy = dev(y, n);
    mlsys__relm_gelu(x, n);
    mlsys_relm_k_gelu<<<mlsys_cuda_blocks(n, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(dx, n);
    host(xg, dx, n);
    report("gelu (10000 values)", maxdiff(xg, x, n), 1e-5);
    mlsys__relm_residual(x, y, n);
    mlsys_relm_k_residual<<<mlsys_cuda_blocks(n, MLSYS_RELM_THREADS), MLSYS_RELM_THREADS>>>(dx, dy, n);
    CU(cudaGetLastError());
    host(xg, dx, n);
    report("residual (10000 values)", maxdiff(xg, x, n), 1e-5);
    cudaFree(dx); cudaFree(dy); free(x); free(y); free(xg);
  }
  {  // attention of one token at position T−1 against a cache of T positions (one layer)
    float *qkv = randv(&r, (size_t)3 * C, 1.5, 0), *kc = randv(&r, (size_t)T * C, 1.5, 0), *vc = randv(&r, (size_t)T * C, 1.0, 0);
    float *kv = (float *)malloc((size_t)T * 2 * C * 4), **rows = (float **)malloc(T * sizeof(float *));
    float *o = (float *)malloc((size_t)C * 4), *og = (float *)malloc((size_t)C * 4), *scores = (float *)malloc((size_t)T * 4);
    for (int t = 0; t < T; t++) {   // the CPU cache layout: [t][layer 0][K, V][C]
      memcpy(kv + (size_t)t * 2 * C, kc + (size_t)t * C, (size_t)C * 4);
      memcpy(kv + (size_t)t * 2 * C + C, vc + (size_t)t * C, (size_t)C * 4);
      rows[t] = kv + (size_t)t * 2 * C;
    }
    memcpy(qkv + C, kc + (size_t)(T - 1) * C, (size_t)C * 4);   // the new token's K and V are the last cached
    memcpy(qkv + 2 * C, vc + (size_t)(T - 1) * C, (size_t)C * 4);
    float *const *rowp = rows;
    int pos = T - 1;
    mlsys__relm_att a;
    a.out = o; a.qkv = qkv; a.kv = &rowp; a.pos = &pos; a.l = 0; a.C = C; a.NH = NH; a.maxlen = T; a.scores = scores;
    for (int h = 0; h < NH; h++) mlsys__relm_attention_task(&a, h, 0);
    float *dq = dev(qkv, (size_t)3 * C), *dk = dev(kc, (size_t)T * C), *dv = dev(vc, (size_t)T * C), *dout = dev(NULL, C);
    mlsys_relm_k_attention1<<<NH, 128, (size_t)T * sizeof(float)>>>(dout, dq, dk, dv, T - 1, C, NH);
    CU(cudaGetLastError());
    host(og, dout, C);
    report("attention, 1 token vs 37 cached, 4 heads of 24", maxdiff(og, o, C), 1e-5);
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout);
    free(qkv); free(kc); free(vc); free(kv); free(rows); free(o); free(og); free(scores);
  }
  {  // log-softmax over GPT-2's vocabulary, 2 rows
    float *x = randv(&r, (size_t)2 * V, 4.0, 10.0), *y = (float *)malloc((size_t)2 * V * 4), *yg = (float *)malloc((size_t)2 * V * 4);
    float *dx = dev(x, (size_t)2 * V), *dy = dev(NULL, (size_t)2 * V);
    mlsys_relm_log_softmax(x, V, y);
    mlsys_relm_log_softmax(x + V, V, y + V);
    mlsys_relm_k_log_softmax<<<2, 1024>>>(dy, dx, V);
    CU(cudaGetLastError());
    host(yg, dy, (size_t)2 * V);
    report("log-softmax (2 rows of 50257)", maxdiff(yg, y, (size_t)2 * V), 1e-4);
    cudaFree(dx); cudaFree(dy); free(x); free(y); free(yg);
  }
}

// 2. whole models
static mlsys_relm_gpt2 *make_model(mlsys_relm_gpt2_config c, uint64_t seed, double scale, int perturb) {
  mlsys_relm_gpt2_desc d = {0, 0};
  mlsys_relm_gpt2 *m = NULL;
  mlsys_rng r;
  size_t n;
  TRY(mlsys_relm_gpt2_random(&c, seed, &d, &m));
  if (!perturb) return m;
  float *p = mlsys_relm_gpt2_params(m, &n);
  mlsys_rng_seed(&r, seed ^ 0x5eed);
  for (size_t i = 0; i < n; i++) {
    if (p[i] == 1.0f) p[i] = (float)(1.0 + 0.2 * mlsys_rng_normal(&r));
    else if (p[i] == 0.0f) p[i] = (float)(0.1 * mlsys_rng_normal(&r));
    else p[i] = (float)(p[i] * scale);
  }
  return m;
}

static void check_model(const char *name, mlsys_relm_gpt2_config c, int T, int perturb, int timed) {
  mlsys_relm_gpt2 *m = make_model(c, 7, 5.0, perturb);
  mlsys_relm_gpt2_cuda *g;
  mlsys_rng r;
  const int V = c.vocab_size;
  int32_t *toks = (int32_t *)malloc((size_t)T * sizeof(int32_t));
  float *full = (float *)malloc((size_t)T * V * 4), *lg = (float *)malloc((size_t)V * 4), *lp = (float *)malloc((size_t)V * 4);
  float *cpu_lp = (float *)malloc((size_t)V * 4);
  double worst = 0, worst_lp = 0;
  char what[128];
  mlsys_rng_seed(&r, 8);
  for (int t = 0; t < T; t++) toks[t] = (int32_t)mlsys_rng_below(&r, (uint64_t)V);
  double t0 = mlsys_now();
  TRY(mlsys_relm_gpt2_forward(m, toks, T, full));
  double cpu_s = mlsys_now() - t0;
  TRY(mlsys_relm_gpt2_cuda_create(m, &g));
  for (int t = 0; t < T; t++) {
    TRY(mlsys_relm_gpt2_cuda_append(g, toks[t], lg, lp));
    double d = maxdiff(lg, full + (size_t)t * V, (size_t)V);
    if (!(d <= worst)) worst = d;
    mlsys_relm_log_softmax(full + (size_t)t * V, V, cpu_lp);
    d = maxdiff(lp, cpu_lp, (size_t)V);
    if (!(d <= worst_lp)) worst_lp = d;
  }
  snprintf(what, sizeof what, "%s: logits at %d positions", name, T);
  report(what, worst, 1e-3);
  snprintf(what, sizeof what, "%s: log-probabilities", name);
  report(what, worst_lp, 1e-3);
  // the same sequence again gives the same bits (deterministic kernels)
  {
    float *lg2 = (float *)malloc((size_t)V * 4);
    mlsys_relm_gpt2_cuda_reset(g);
    int same = 1;
    for (int t = 0; t < T; t++) {
      TRY(mlsys_relm_gpt2_cuda_append(g, toks[t], lg2, NULL));
      if (t == T - 1) same = !memcmp(lg, lg2, (size_t)V * 4);
    }
    printf("  %-58s %s\n", "  rerun bit-identical", same ? "ok" : "FAIL");
    failures += !same;
    free(lg2);
  }
  if (timed) {
    const int steps = c.max_seq_len < 257 ? c.max_seq_len : 257;
    mlsys_relm_gpt2_cuda_reset(g);
    TRY(mlsys_relm_gpt2_cuda_append(g, 0, NULL, lp));
    t0 = mlsys_now();
    for (int t = 1; t < steps; t++) TRY(mlsys_relm_gpt2_cuda_append(g, toks[t % T], NULL, lp));
    double dt = mlsys_now() - t0;
    printf("  %s: GPU decode %.0f tokens/s (positions 1..%d, log-probs copied back each step); CPU forward of %d tokens %.2f s\n",
           name, (steps - 1) / dt, steps - 1, T, cpu_s);
  }
  mlsys_relm_gpt2_cuda_free(g);
  mlsys_relm_gpt2_free(m);
  free(toks); free(full); free(lg); free(lp); free(cpu_lp);
}

int main(void) {
  char desc[256];
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  if (mlsys_cuda_describe(0, desc, sizeof desc) == MLSYS_OK) printf("device: %s\n", desc);
  printf("kernels vs CPU references:\n");
  check_kernels();
  printf("GPU runner vs CPU forward:\n");
  mlsys_relm_gpt2_config a = {40, 512, 520, 2, 2, 64}, b = {20, 97, 100, 1, 3, 48}, g124 = {1024, 50257, 50304, 12, 12, 768};
  check_model("L2 NH2 C64 V512 Vp520", a, 32, 1, 0);
  check_model("L1 NH3 C48 V97 Vp100", b, 20, 1, 0);
  check_model("GPT-2 124M shape (random init)", g124, 16, 0, 1);
  printf("%s (%d failed)\n", failures ? "FAIL" : "all ok", failures);
  return failures ? 1 : 0;
}
