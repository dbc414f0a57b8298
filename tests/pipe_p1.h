/* tests/pipe_p1.h — the spin-UDF pipeline P1 of the spec (§7.6 #14), shared by the pipeline tests and
   bench/bench_pipeline.c: range → src 10 µs (sequential) → map_A 2 ms (p = pa) → map_B 0.5 ms (p = pb) → batch 8 →
   batch_cost 100 µs (sequential) → prefetch 0 (the root). Each UDF spins until its thread's CPU clock advanced by
   its cost, so the per-core rates are known: 12 500, 500, 2 000 elements/s and 10 000 batches/s; the LP at 2 cores
   gives X* = 99.11 minibatches/s, θ_A = 1.59, θ_B = 0.40 (§7.6 #2). Synthetic by design. Include after
   mlsys_pipeline.h. */
#ifndef MLSYS_TESTS_PIPE_P1_H
#define MLSYS_TESTS_PIPE_P1_H
#include <string.h>
#include <time.h>

static double tcpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* spins until this thread has used s seconds of CPU */
static void burn(double s) {
  double t0 = tcpu();
  while (tcpu() - t0 < s) {}
}
/* user = const double *: the cost per call in CPU seconds; the element passes through */
static int spin_udf(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  (void)rng;
  burn(*(const double *)user);
  return mlsys_pipe_elem_copy(in, out) ? -1 : 0;
}

static double p1_c_src = 10e-6, p1_c_a = 2e-3, p1_c_b = 0.5e-3, p1_c_batch = 100e-6;
typedef struct { int range, src, a, b, batch, cost, root; } p1_nodes;

static mlsys_pipe *build_p1(int pa, int pb, int workers, p1_nodes *n) {
  mlsys_pipe *p;
  mlsys_pipe_desc d;
  mlsys_pipe_map_desc md;
  memset(&d, 0, sizeof d); memset(&md, 0, sizeof md);
  d.workers = workers;
  if (mlsys_pipe_create(&d, &p)) return NULL;
  mlsys_pipe_range(p, 100000000, &n->range);
  md.fn = spin_udf; md.sequential = 1;
  md.user = &p1_c_src; md.name = "src";
  mlsys_pipe_map(p, n->range, &md, &n->src);
  md.sequential = 0;
  md.user = &p1_c_a; md.name = "map_A"; md.parallelism = pa;
  mlsys_pipe_map(p, n->src, &md, &n->a);
  md.user = &p1_c_b; md.name = "map_B"; md.parallelism = pb;
  mlsys_pipe_map(p, n->a, &md, &n->b);
  mlsys_pipe_batch(p, n->b, 8, 0, &n->batch);
  md.user = &p1_c_batch; md.name = "batch_cost"; md.parallelism = 1; md.sequential = 1;
  mlsys_pipe_map(p, n->batch, &md, &n->cost);
  mlsys_pipe_prefetch(p, n->cost, 0, &n->root);
  return p;
}
#endif
