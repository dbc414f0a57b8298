/* bench/bench_remat.c — Checkmate solve times on this machine, lp_solve vs CBC, MILP vs LP rounding.

   For unit chains (the thesis's running example) and for the real graphs in tests/data/graphs/, at several
   budgets: the MILP's time to a proven optimum (or its gap at the time limit), the LP relaxation + two-phase
   rounding's time and cost, the rounding's ratio to the MILP optimum where one is proven, and the best baseline.
   Every figure is a ratio or time measured in this one run. Prints a markdown table for bench/RESULTS.md.

   usage: build/bench_remat [--time-limit S] [--quick] [graph.json ...]     (make bench runs it with defaults) */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

typedef struct {
  double seconds, cost;
  int status, optimal;
  double gap;
} result;

static result run(const mlsys_remat_graph *g, uint64_t budget, mlsys_remat_method m, mlsys_milp_backend b,
                  double limit) {
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  result r;
  double t0 = mlsys_now();
  memset(&o, 0, sizeof o);
  o.method = m;
  o.backend = b;
  o.time_limit = limit;
  r.status = mlsys_remat_solve(g, budget, &o, &s);
  r.seconds = mlsys_now() - t0;
  r.cost = s.n ? s.cost : NAN;
  r.optimal = r.status == MLSYS_OK && s.optimal;
  r.gap = s.n ? s.gap : NAN;
  if (r.status != MLSYS_OK) r.cost = NAN;
  mlsys_remat_schedule_free(&s);
  return r;
}

static void cell(const result *r, double base) {
  if (r->status == MLSYS_ERR_INFEASIBLE) { printf(" infeasible (%.2f s) |", r->seconds); return; }
  if (r->status != MLSYS_OK) { printf(" no schedule (%.1f s) |", r->seconds); return; }
  printf(" %.4fx%s %.2f s |", r->cost / base, r->optimal ? "*" : (r->gap > 0 ? "" : ""), r->seconds);
}

static void bench_graph(const char *label, const mlsys_remat_graph *g, const double *fracs, int nf, double limit,
                        int cbc) {
  mlsys_remat_schedule ck;
  mlsys_remat_opts o;
  uint64_t fixed = mlsys_remat_fixed_total(g), lb = mlsys_remat_single_op_bound(g);
  double base = 0;
  int i, v;
  for (v = 0; v < g->dag.n; v++) base += g->dag.cost[v];
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  mlsys_remat_solve(g, UINT64_MAX, &o, &ck);
  for (i = 0; i < nf; i++) {
    /* budgets between the single-operator bound and the checkpoint-all peak (activations) */
    uint64_t act = lb + (uint64_t)((double)(ck.peak - lb) * fracs[i]), budget = act + fixed;
    result milp = run(g, budget, MLSYS_REMAT_MILP, MLSYS_SOLVER_LPSOLVE, limit);
    result lp = run(g, budget, MLSYS_REMAT_LP_ROUND, MLSYS_SOLVER_LPSOLVE, limit);
    result best = {0, INFINITY, 1, 0, 0};
    int m;
    for (m = MLSYS_REMAT_CHECKPOINT_ALL; m < MLSYS_REMAT_METHOD_COUNT; m++) {
      result b = run(g, budget, (mlsys_remat_method)m, MLSYS_SOLVER_LPSOLVE, limit);
      if (b.status == MLSYS_OK && b.cost < best.cost) best = b;
    }
    printf("| %s | %d | %.2f |", label, g->dag.n, fracs[i]);
    cell(&milp, base);
    if (cbc) {
      result c = run(g, budget, MLSYS_REMAT_MILP, MLSYS_SOLVER_CBC, limit);
      cell(&c, base);
    }
    cell(&lp, base);
    if (cbc) {
      result c = run(g, budget, MLSYS_REMAT_LP_ROUND, MLSYS_SOLVER_CBC, limit);
      cell(&c, base);
    }
    if (milp.optimal && lp.status == MLSYS_OK) printf(" %.3f |", lp.cost / milp.cost);
    else printf(" - |");
    if (best.status == MLSYS_OK && best.cost < INFINITY) printf(" %.4fx |\n", best.cost / base);
    else printf(" none fits |\n");
    fflush(stdout);
  }
  mlsys_remat_schedule_free(&ck);
}

int main(int argc, char **argv) {
  double limit = 60, fracs_chain[] = {0.0, 0.25, 0.5, 0.75}, fracs_real[] = {0.1, 0.4, 0.7, 0.9};
  int chains[] = {4, 8, 12, 16, 24, 32}, nch = 6, quick = 0, i, cbc = mlsys_milp_has_backend(MLSYS_SOLVER_CBC);
  struct utsname u;
  time_t now = time(NULL);
  char date[32];
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
  }
  if (quick) { nch = 3; limit = limit > 10 ? 10 : limit; }
  uname(&u);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  printf("## Checkmate solve times (%s, %s %s, %d CPUs, time limit %.0f s per solve)\n\n", date, u.machine,
         u.release, mlsys_ncpus(), limit);
  printf("Budget = single-operator lower bound + frac × (checkpoint-all peak − lower bound). Cells: compute cost\n"
         "relative to checkpoint-all (`*` = proven optimal) and wall time including the heuristics. LP/MILP = the\n"
         "rounding's cost over the proven MILP optimum.\n\n");
  printf("| graph | n | frac | MILP lp_solve |%s LP-round lp_solve |%s LP/MILP | best baseline |\n",
         cbc ? " MILP CBC |" : "", cbc ? " LP-round Clp |" : "");
  printf("|---|---|---|---|%s---|%s---|---|\n", cbc ? "---|" : "", cbc ? "---|" : "");
  for (i = 0; i < nch; i++) {
    mlsys_remat_graph g;
    char label[32];
    if (mlsys_remat_graph_chain(chains[i], &g) != MLSYS_OK) continue;
    snprintf(label, sizeof label, "chain L=%d", chains[i]);
    bench_graph(label, &g, fracs_chain, 4, limit, cbc);
    mlsys_remat_graph_free(&g);
  }
  for (i = 1; i < argc; i++) {
    mlsys_remat_graph g;
    if (argv[i][0] == '-') { if (!strcmp(argv[i], "--time-limit")) i++; continue; }
    if (mlsys_remat_graph_load(argv[i], &g) != MLSYS_OK) { fprintf(stderr, "%s\n", mlsys_last_error()); continue; }
    bench_graph(g.name ? g.name : argv[i], &g, fracs_real, 4, limit, cbc);
    mlsys_remat_graph_free(&g);
  }
  return 0;
}
