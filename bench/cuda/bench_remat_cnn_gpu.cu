// bench/cuda/bench_remat_cnn_gpu.cu — Checkmate's plans executed on the GPU: the small CNN's training step
// (tests/data/graphs/smallcnn_b8.json, kernels/mlsys_remat_cnn_kernels.cuh) under checkpoint-all and under the
// MILP's schedules at tighter budgets, with the step time, its overhead against checkpoint-all, the measured
// activation peak, and the two floors of the step's work:
//   bytes: per kernel call of the plan, its inputs read once and its output written once (the graph's bytes),
//          plus the layer's parameters read (forward, backward) and its gradients written (the commit call);
//   flops: the graph's per-node FLOP costs summed over the plan's kernel calls (recomputations included).
// Buffers come from a caching allocator (freed blocks are reused by size, as PyTorch's allocator does), so the
// step time is the kernels' and the executor's, not cudaMalloc's; the first (warm-up) step fills the cache.
//
// Run by build/gpu/run.sh (docs/gpu.md): `bench_remat_cnn_gpu [batch ...]` (default 8 and 256; the graph is scaled
// with mlsys_remat_graph_scale_batch). Without a device it says so and exits 0.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_remat.h"
#include "kernels/mlsys_remat_cnn_kernels.cuh"
#include "bench/cuda/gpu_roofline.cuh"

#include <stdlib.h>

#define TRY(call)                                                                    \
  do {                                                                               \
    mlsys_status s_ = (call);                                                        \
    if (s_ != MLSYS_OK) {                                                            \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, mlsys_last_error()); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

// ---- a caching allocator: blocks freed by the executor are kept and handed out again for the same size ----
typedef struct { void *p; uint64_t bytes; } cblock;
typedef struct {
  cblock *free_list;
  int nfree, cap;
  uint64_t live, peak;
  long mallocs;
} caching;
static mlsys_status caching_alloc(void *ud, uint64_t bytes, void **ptr) {
  caching *c = (caching *)ud;
  for (int i = c->nfree - 1; i >= 0; i--)
    if (c->free_list[i].bytes == bytes) {
      *ptr = c->free_list[i].p;
      c->free_list[i] = c->free_list[--c->nfree];
      goto got;
    }
  MLSYS_CUDA_CHECK(cudaMalloc(ptr, (size_t)bytes));
  c->mallocs++;
got:
  c->live += bytes;
  if (c->live > c->peak) c->peak = c->live;
  return MLSYS_OK;
}
static void caching_release(void *ud, void *ptr, uint64_t bytes) {
  caching *c = (caching *)ud;
  c->live -= bytes;
  if (c->nfree == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->free_list = (cblock *)realloc(c->free_list, (size_t)c->cap * sizeof(cblock));
  }
  c->free_list[c->nfree].p = ptr;
  c->free_list[c->nfree++].bytes = bytes;
}
static void caching_free(caching *c) {
  for (int i = 0; i < c->nfree; i++) cudaFree(c->free_list[i].p);
  free(c->free_list);
  memset(c, 0, sizeof *c);
}

// The floors' work of plan p on graph g bound to model m.
static void plan_work(const mlsys_remat_graph *g, const cnn_model *m, const mlsys_remat_plan *p, double *bytes,
                      double *flops) {
  *bytes = *flops = 0;
  for (int i = 0; i < p->nops; i++) {
    const mlsys_remat_op *o = &p->ops[i];
    if (o->op != MLSYS_REMAT_OP_COMPUTE) continue;
    const int v = o->node;
    const cnn_binding *B = &m->bind[v];
    *flops += g->dag.cost[v];
    *bytes += (double)g->dag.size[v];
    for (int k = 0; k < o->nin; k++) *bytes += (double)g->dag.size[p->reg_node[p->in_regs[o->in_off + k]]];
    // conv1 reads the input (fixed memory, not a dep) in its forward and in its backward (weight gradient)
    if (B->layer >= 0 && B->x < 0 && (!B->backward || B->layer == 0)) *bytes += 4.0 * m->batch * cnn_layer_in_count(&m->layer[B->layer]);
    if (B->layer >= 0) {
      const cnn_layer *L = &m->layer[B->layer];
      *bytes += 4.0 * (double)(L->nw + L->nb);                                 // parameters read
      if (B->backward && o->commit) *bytes += 4.0 * (double)(L->nw + L->nb);   // gradients written
    }
  }
}

// Median step time of schedule s over `reps` steps after one warm-up; prints one line.
static double run_plan(const gpu_roof *roof, const mlsys_remat_graph *g, cnn_gpu *G, const mlsys_remat_schedule *s,
                       const char *label, double base_ms) {
  mlsys_remat_plan p;
  mlsys_remat_allocator A;
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  caching c;
  const int reps = 15;
  double t[reps];
  memset(&c, 0, sizeof c);
  TRY(mlsys_remat_plan_build(g, s, 0, &p));
  A.alloc = caching_alloc;
  A.release = caching_release;
  A.ud = &c;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  for (int r = -1; r < reps; r++) {
    memset(G->m->commits, 0, sizeof(long) * (size_t)G->m->n);
    cudaDeviceSynchronize();
    double t0 = mlsys_now();
    TRY(mlsys_remat_execute(g, &p, cnn_gpu_kernel, G, &o, &st));
    TRY(cudaDeviceSynchronize() == cudaSuccess ? MLSYS_OK : MLSYS_ERR_CUDA);
    if (r >= 0) t[r] = mlsys_now() - t0;
  }
  for (int i = 1; i < reps; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
  double bytes, flops, med = t[reps / 2];
  plan_work(g, G->m, &p, &bytes, &flops);
  char what[160];
  snprintf(what, sizeof what, "%s: peak %.2f MB, %ld recomputed, %ld launches", label, st.peak_bytes / 1e6,
           st.recomputes, st.computes);
  gpu_roof_line(roof, what, med, bytes, flops);
  if (base_ms > 0) printf("      overhead against checkpoint-all: %.3fx the step time\n", med * 1e3 / base_ms);
  if (st.peak_bytes != p.peak) printf("      NOTE: measured peak %llu differs from the plan's %llu\n",
                                      (unsigned long long)st.peak_bytes, (unsigned long long)p.peak);
  mlsys_remat_plan_free(&p);
  caching_free(&c);
  return med * 1e3;
}

static void bench_batch(const gpu_roof *roof, const mlsys_remat_graph *g8, int batch) {
  mlsys_remat_graph g;
  cnn_model m;
  cnn_gpu G;
  if (batch == g8->batch) {
    TRY(mlsys_remat_graph_scale_batch(g8, g8->batch, &g));   // a copy
  } else {
    TRY(mlsys_remat_graph_scale_batch(g8, batch, &g));
  }
  TRY(cnn_model_init(&m, batch, 1));
  // the loss node's 4-byte scalar does not scale with the batch (mlsys_remat_graph_scale_batch rounds it up):
  // give it the bytes the kernel writes
  for (int v = 0; v < g.dag.n; v++)
    if (g.kind[v] == MLSYS_REMAT_L) g.dag.size[v] = sizeof(float) * (1 + (uint64_t)batch * m.classes);
  TRY(cnn_bind(&m, &g));
  TRY(cnn_gpu_init(&G, &m));
  printf("smallcnn, batch %d (%d nodes): one training step per plan, median of 15\n", batch, g.dag.n);
  mlsys_remat_opts o;
  mlsys_remat_schedule all, tight;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  TRY(mlsys_remat_solve(&g, UINT64_MAX, &o, &all));
  double base = run_plan(roof, &g, &G, &all, "checkpoint-all", 0);
  uint64_t minb;
  int proven = 0;
  memset(&o, 0, sizeof o);
  o.time_limit = 20;
  TRY(mlsys_remat_min_budget(&g, &o, &minb, &proven, &tight));
  // three budgets between the MILP's minimum and checkpoint-all's peak
  for (int k = 0; k < 3; k++) {
    uint64_t budget = k == 0 ? minb : minb + (all.peak_total - minb) * (uint64_t)k / 3;
    mlsys_remat_schedule s;
    char label[96];
    memset(&o, 0, sizeof o);
    o.time_limit = 20;
    if (mlsys_remat_solve(&g, budget, &o, &s) != MLSYS_OK || s.n == 0) {
      printf("  milp at %.2f MB: %s\n", budget / 1e6, mlsys_last_error());
      continue;
    }
    snprintf(label, sizeof label, "milp, budget %.2f MB%s", budget / 1e6, k == 0 ? (proven ? " (proven minimum)" : " (minimum found)") : "");
    run_plan(roof, &g, &G, &s, label, base);
    mlsys_remat_schedule_free(&s);
  }
  mlsys_remat_schedule_free(&all);
  mlsys_remat_schedule_free(&tight);
  cnn_gpu_free(&G);
  cnn_model_free(&m);
  mlsys_remat_graph_free(&g);
}

int main(int argc, char **argv) {
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  gpu_roof roof;
  cudaError_t ce = gpu_roof_measure(&roof);
  if (ce != cudaSuccess) { printf("FAIL: measuring the ceilings: %s\n", cudaGetErrorString(ce)); return 1; }
  gpu_roof_print(&roof);
  mlsys_remat_graph g8;
  TRY(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g8));
  if (argc > 1)
    for (int i = 1; i < argc; i++) bench_batch(&roof, &g8, atoi(argv[i]));
  else {
    bench_batch(&roof, &g8, 8);
    bench_batch(&roof, &g8, 256);
  }
  mlsys_remat_graph_free(&g8);
  return 0;
}
