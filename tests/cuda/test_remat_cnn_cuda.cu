// tests/cuda/test_remat_cnn_cuda.cu — the small CNN's CUDA kernels against their CPU references, and plans run on
// the GPU by mlsys_remat_execute (built by `make cuda`, run by `make cuda-test`; without a device it prints
// "skipped: no CUDA device" and exits 0).
//
// 1. Every kernel of kernels/mlsys_remat_cnn_kernels.cuh on the network's real shapes (batch 8) with random inputs,
//    against the CPU function of examples/remat_cnn_layers.h: largest difference relative to the largest value,
//    and how many values are bit-identical.
// 2. The training step of tests/data/graphs/smallcnn_b8.json under checkpoint-all, every method at the smallest
//    feasible budget and random schedules, on the GPU: the allocator's measured peak must equal the simulator's,
//    the gradients of every GPU plan must equal the GPU checkpoint-all gradients bit for bit (deterministic
//    kernels), and the CPU reference within 1e-5 of the largest gradient (bit equality across devices is not
//    promised: see the kernels' header; the number of identical values is printed).
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_remat.h"
#include "kernels/mlsys_remat_cnn_kernels.cuh"

#include <stdlib.h>

static int failures = 0;

#define TRY(call)                                                                       \
  do {                                                                                  \
    mlsys_status s_ = (call);                                                           \
    if (s_ != MLSYS_OK) {                                                               \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, mlsys_last_error());    \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

// Compare n floats: the largest |a - b| relative to max |b|, and how many are bit-identical.
static void compare(const char *what, const float *gpu, const float *cpu, size_t n, double tol) {
  double worst = 0, scale = 0;
  size_t same = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)gpu[i] - (double)cpu[i]);
    if (d > worst || d != d) worst = d != d ? INFINITY : d;
    if (fabs((double)cpu[i]) > scale) scale = fabs((double)cpu[i]);
    same += !memcmp(&gpu[i], &cpu[i], sizeof(float));
  }
  double rel = worst / (scale > 0 ? scale : 1);
  int ok = rel <= tol;
  printf("  %-34s %8zu values  max |gpu - cpu| / max |cpu| = %.2e  bit-identical %zu/%zu  %s\n", what, n, rel, same, n,
         ok ? "ok" : "FAIL");
  failures += !ok;
}

static void *to_device(const void *host, size_t bytes) {
  void *d = NULL;
  if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    printf("FAIL: cudaMalloc/cudaMemcpy of %zu bytes\n", bytes);
    exit(1);
  }
  return d;
}
static void to_host(void *host, const void *dev, size_t bytes) {
  if (cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("FAIL: cudaMemcpy to host: %s\n", cudaGetErrorString(cudaGetLastError()));
    exit(1);
  }
}

// 1. kernels vs CPU references, layer by layer
static void check_kernels(cnn_model *m, cnn_gpu *G) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 3);
  const int N = m->batch;
  for (int li = 0; li < CNN_NLAYERS; li++) {
    const cnn_layer *L = &m->layer[li];
    size_t nin = (size_t)N * cnn_layer_in_count(L), nout = (size_t)N * cnn_layer_out_count(L);
    size_t ybytes = (size_t)cnn_forward_bytes(L, N);
    float *x = (float *)malloc(nin * 4), *dy = (float *)malloc(nout * 4), *dx = (float *)malloc(nin * 4);
    float *dxg = (float *)malloc(nin * 4);
    void *y = malloc(ybytes), *yg = malloc(ybytes);
    char what[96];
    for (size_t i = 0; i < nin; i++) x[i] = (float)mlsys_rng_normal(&r);
    for (size_t i = 0; i < nout; i++) dy[i] = (float)mlsys_rng_normal(&r);
    float *d_x = (float *)to_device(x, nin * 4), *d_dy = (float *)to_device(dy, nout * 4), *d_dx = NULL;
    void *d_y = NULL;
    TRY(cudaMalloc(&d_y, ybytes) == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
    TRY(cudaMalloc((void **)&d_dx, nin * 4) == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
    // forward
    cnn_forward(m, li, x, y);
    TRY(cnn_gpu_forward(G, li, d_x, d_y));
    to_host(yg, d_y, ybytes);
    snprintf(what, sizeof what, "%s forward", L->name);
    compare(what, (const float *)yg, (const float *)y, nout, 1e-5);
    if (L->op == CNN_OP_POOL) {
      int same = !memcmp((const float *)yg + nout, (const float *)y + nout, nout * sizeof(int64_t));
      printf("  %-34s %8zu values  %s\n", "  its int64 indices", nout, same ? "identical  ok" : "DIFFER  FAIL");
      failures += !same;
    }
    // backward: dx and, for conv/linear, the parameter gradients
    memset(m->grads, 0, m->nparams * 4);
    TRY(cudaMemset(G->grads, 0, m->nparams * 4) == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
    cnn_backward(m, li, dy, x, y, li ? dx : NULL, 1);
    TRY(cnn_gpu_backward(G, li, d_dy, d_x, d_y, li ? d_dx : NULL, 1));
    if (li) {
      to_host(dxg, d_dx, nin * 4);
      snprintf(what, sizeof what, "%s backward (input)", L->name);
      compare(what, dxg, dx, nin, 1e-5);
    }
    if (L->nw) {
      float *g = (float *)malloc(m->nparams * 4);
      to_host(g, G->grads, m->nparams * 4);
      snprintf(what, sizeof what, "%s backward (weight, bias)", L->name);
      compare(what, g + (L->dwt - m->grads), L->dwt, L->nw + L->nb, 1e-5);
      free(g);
    }
    if (L->op == CNN_OP_POOL) {   // the maxima recomputed from the input instead of read from the indices
      cnn_backward(m, li, dy, x, NULL, dx, 1);
      TRY(cnn_gpu_backward(G, li, d_dy, d_x, NULL, d_dx, 1));
      to_host(dxg, d_dx, nin * 4);
      snprintf(what, sizeof what, "%s backward (argmax from input)", L->name);
      compare(what, dxg, dx, nin, 1e-5);
    }
    cudaFree(d_x); cudaFree(d_dy); cudaFree(d_dx); cudaFree(d_y);
    free(x); free(dy); free(dx); free(dxg); free(y); free(yg);
  }
  // softmax cross-entropy
  {
    size_t nz = (size_t)N * m->classes;
    float *z = (float *)malloc(nz * 4), *out = (float *)malloc((nz + 1) * 4), *outg = (float *)malloc((nz + 1) * 4);
    for (size_t i = 0; i < nz; i++) z[i] = (float)(3.0 * mlsys_rng_normal(&r));
    out[0] = cnn_softmax_xent_forward(out + 1, z, m->labels, N, m->classes);
    float *d_z = (float *)to_device(z, nz * 4), *d_out = NULL;
    TRY(cudaMalloc((void **)&d_out, (nz + 1) * 4) == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
    cnn_k_softmax_xent_forward<<<1, 1>>>(d_out, d_z, G->labels, N, m->classes);
    to_host(outg, d_out, (nz + 1) * 4);
    compare("loss value", outg, out, 1, 1e-6);
    compare("loss backward (dlogits)", outg + 1, out + 1, nz, 1e-5);
    cudaFree(d_z); cudaFree(d_out);
    free(z); free(out); free(outg);
  }
}

// A schedule from a random S and the cheapest R for it.
static void random_schedule(mlsys_rng *r, const mlsys_remat_graph *g, double p, mlsys_remat_schedule *s) {
  int n = g->dag.n;
  TRY(mlsys_remat_schedule_alloc(n, s));
  for (int t = 1; t < n; t++)
    for (int i = 0; i < t; i++) s->S[t * n + i] = mlsys_rng_uniform(r) < p;
  mlsys_remat_min_r(g, s->S, s->R);
  s->budget = UINT64_MAX;
  TRY(mlsys_remat_evaluate(g, s));
  snprintf(s->method, sizeof s->method, "random S (p=%.2f)", p);
}

// Run s on the GPU; returns the gradients (host copy, caller frees).
static float *run_gpu(const mlsys_remat_graph *g, cnn_gpu *G, const mlsys_remat_schedule *s, double *ms) {
  mlsys_remat_plan p;
  mlsys_remat_sim rep;
  cnn_counting count;
  mlsys_remat_allocator A;
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  float *grads = (float *)malloc(G->m->nparams * 4);
  TRY(mlsys_remat_simulate(g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
  TRY(mlsys_remat_plan_build(g, s, 0, &p));
  memset(&count, 0, sizeof count);
  A.alloc = cnn_gpu_alloc;
  A.release = cnn_gpu_release;
  A.ud = &count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  TRY(cudaMemset(G->grads, 0xff, G->m->nparams * 4) == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
  memset(G->m->commits, 0, sizeof(long) * (size_t)G->m->n);
  TRY(mlsys_remat_execute(g, &p, cnn_gpu_kernel, G, &o, &st));
  TRY(cudaDeviceSynchronize() == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
  to_host(grads, G->grads, G->m->nparams * 4);
  *ms = st.seconds * 1e3;
  int ok = count.peak == rep.peak && st.peak_bytes == rep.peak && count.live == 0;
  for (int v = 0; v < G->m->n; v++) ok &= G->m->commits[v] == 1;
  printf("  %-28s simulated %7llu  measured %7llu  recomputations %3ld  %7.2f ms  %s\n", s->method,
         (unsigned long long)rep.peak, (unsigned long long)count.peak, st.recomputes, *ms, ok ? "ok" : "FAIL");
  failures += !ok;
  mlsys_remat_plan_free(&p);
  return grads;
}

int main(void) {
  char desc[256];
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  if (mlsys_cuda_describe(0, desc, sizeof desc) == MLSYS_OK) printf("device: %s\n", desc);
  mlsys_remat_graph g;
  cnn_model m;
  cnn_gpu G;
  TRY(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  TRY(cnn_model_init(&m, g.batch, 1));
  TRY(cnn_bind(&m, &g));
  TRY(cnn_gpu_init(&G, &m));

  printf("kernels vs CPU references (batch %d):\n", m.batch);
  check_kernels(&m, &G);

  // the CPU answer
  TRY(cnn_reference_step(&m));
  float *cpu = (float *)malloc(m.nparams * 4);
  memcpy(cpu, m.grads, m.nparams * 4);
  float cpu_loss = m.loss;

  printf("plans on the GPU (plan flags 0; peaks in activation bytes):\n");
  mlsys_remat_opts o;
  mlsys_remat_schedule all;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  TRY(mlsys_remat_solve(&g, UINT64_MAX, &o, &all));
  double ms;
  float *gpu_all = run_gpu(&g, &G, &all, &ms);
  compare("GPU checkpoint-all vs CPU", gpu_all, cpu, m.nparams, 1e-5);
  printf("  loss: GPU %.9g, CPU %.9g\n", m.loss, cpu_loss);
  uint64_t min_budget;
  int proven;
  mlsys_remat_schedule tight;
  memset(&o, 0, sizeof o);
  o.time_limit = 20;
  TRY(mlsys_remat_min_budget(&g, &o, &min_budget, &proven, &tight));
  mlsys_remat_schedule_free(&tight);
  mlsys_rng r;
  mlsys_rng_seed(&r, 11);
  for (int k = 0; k < MLSYS_REMAT_METHOD_COUNT + 3; k++) {
    mlsys_remat_schedule s;
    if (k < MLSYS_REMAT_METHOD_COUNT) {
      memset(&o, 0, sizeof o);
      o.method = (mlsys_remat_method)k;
      o.time_limit = 20;
      mlsys_remat_solve(&g, min_budget, &o, &s);
      if (s.n == 0) continue;
    } else {
      random_schedule(&r, &g, 0.1 * (k - MLSYS_REMAT_METHOD_COUNT + 1), &s);
    }
    float *gr = run_gpu(&g, &G, &s, &ms);
    int same = !memcmp(gr, gpu_all, m.nparams * 4);
    printf("    gradients vs GPU checkpoint-all: %s\n", same ? "bit-identical" : "DIFFER  FAIL");
    failures += !same;
    free(gr);
    mlsys_remat_schedule_free(&s);
  }
  free(gpu_all);
  free(cpu);
  mlsys_remat_schedule_free(&all);
  cnn_gpu_free(&G);
  cnn_model_free(&m);
  mlsys_remat_graph_free(&g);
  printf("%s\n", failures ? "FAILED" : "all GPU checks passed");
  return failures ? 1 : 0;
}
