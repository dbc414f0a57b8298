/* examples/remat_basics.c — the first program to read for mlsys_remat.h.

   Builds the training graph of an 8-layer chain network in code (forward, loss, backward: the Checkmate
   thesis's running example, unit costs and sizes), asks Checkmate for the cheapest schedule that fits in 4 units
   of memory instead of the 10 that keeping everything needs, and prints the execution plan a runtime would run.

   build: make build/examples/remat_basics   (or: cc -I. examples/remat_basics.c -llpsolve55 -lcolamd -ldl -lm -lpthread)
   run:   ./build/examples/remat_basics */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"

int main(void) {
  enum { L = 8, N = 2 * L + 1 };
  mlsys_remat_node nodes[N];
  int deps[N][2], v;
  char names[N][16];
  mlsys_remat_graph g;
  mlsys_remat_schedule all, s;
  mlsys_remat_opts o;
  mlsys_remat_plan p;

  /* forward layers f0..f7, the loss, and the gradient steps b7..b0 (bwd(i) = 2L - i reads x_i and the incoming
     gradient); mlsys_remat_graph_chain(L, &g) builds the same graph in one call */
  memset(nodes, 0, sizeof nodes);
  for (v = 0; v < N; v++) {
    nodes[v].cost = 1;
    nodes[v].mem = 1;
    nodes[v].deps = deps[v];
    nodes[v].name = names[v];
    if (v < L) {
      nodes[v].kind = MLSYS_REMAT_F;
      snprintf(names[v], sizeof names[v], "f%d", v);
      if (v > 0) { deps[v][0] = v - 1; nodes[v].ndeps = 1; }
    } else if (v == L) {
      nodes[v].kind = MLSYS_REMAT_L;
      snprintf(names[v], sizeof names[v], "loss");
      deps[v][0] = v - 1;
      nodes[v].ndeps = 1;
    } else {
      nodes[v].kind = MLSYS_REMAT_B;
      snprintf(names[v], sizeof names[v], "b%d", N - 1 - v);
      deps[v][0] = N - 1 - v;   /* the forward activation this gradient step needs */
      deps[v][1] = v - 1;       /* the gradient flowing back */
      nodes[v].ndeps = 2;
    }
  }
  if (mlsys_remat_graph_create(N, nodes, &g) != MLSYS_OK) {
    fprintf(stderr, "graph: %s\n", mlsys_last_error());
    return 1;
  }

  /* what keeping everything costs */
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  mlsys_remat_solve(&g, UINT64_MAX, &o, &all);
  printf("keep everything: compute %g, peak memory %llu\n", all.cost, (unsigned long long)all.peak_total);

  /* Checkmate at a budget of 4 (the thesis's instance: optimum 26) */
  memset(&o, 0, sizeof o);                       /* zero = defaults: the exact MILP on lp_solve */
  o.time_limit = 30;
  if (mlsys_remat_solve(&g, 4, &o, &s) != MLSYS_OK) {
    fprintf(stderr, "solve: %s\n", mlsys_last_error());
    return 1;
  }
  printf("checkmate at budget 4: compute %g (%.2fx), peak %llu, %s\n", s.cost, s.cost / s.baseline_cost,
         (unsigned long long)s.peak_total, s.optimal ? "proven optimal" : "not proven optimal");

  /* the plan: compute and free steps over virtual registers */
  if (mlsys_remat_plan_build(&g, &s, 0, &p) == MLSYS_OK) {
    printf("execution plan, %d steps:\n", p.nops);
    mlsys_remat_plan_write(&g, &p, stdout);
    mlsys_remat_plan_free(&p);
  }
  mlsys_remat_schedule_free(&s);
  mlsys_remat_schedule_free(&all);
  mlsys_remat_graph_free(&g);
  return 0;
}
