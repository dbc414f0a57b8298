/* bench/bench_remat_monet.c — MONeT vs MONeT-NoOp vs Checkmate on the real graphs (the shape of the MONeT thesis's
   Tab. 4.2 and Tab. 4.5; spec monet_maple.md §A5).

   For each graph at the thesis's batch (mlsys_remat_graph_scale_batch): the ILP sizes as built (rows, columns,
   nonzeros; the thesis's Tab. 4.5 counts are after Gurobi presolve, these are before any presolve), and for budgets
   as fractions of the store-all (Checkmate checkpoint-all) peak, each method's compute overhead over store-all
   (cost / Σ cost − 1) and its simulated peak; from those, the smallest peak at ≤ 10 % overhead per method.

   Costs are the graphs' FLOP proxies and the conv/linear algorithm catalogue is the documented proxy (im2col+GEMM:
   0.7× cost, workspace 9× input bytes; docs/remat.md "MONeT"), so MONeT's overhead can be negative. These are not
   the thesis's P100 timings. Checkmate is mlsys_remat_solve's MILP for graphs under 120 nodes and its LP rounding
   (on the coarsened graph) above; every ILP/MILP gets the same time limit and relative gap.

   usage: build/bench_remat_monet [--quick] [--time-limit S] [--gap G] [--fracs 1,0.8,...] [graph.json:batch ...]
          (no graphs: smallcnn_b8, vgg16@176, unet@11; mobilenet_v2@256, resnet50@184 and googlenet@320 only when
           named, e.g. tests/data/graphs/resnet50_b2.json:184, because their ILPs overrun the time limit (bench/RESULTS.md
           §14); --quick: smallcnn_b8 and vgg16@176, 10 s limit) */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_machine.h"

#define NFRAC_MAX 8
#define GB 1e9
static double U = 1e9;          /* print unit: GB, or MB for graphs whose store-all peak is under 1 GB */
static const char *UN = "GB";

typedef struct {
  int status, optimal;
  double cost, seconds, gap;
  uint64_t peak;
  char note[48];
} cellr;

typedef struct {
  double limit, gap;
} cfg;

static void cell_print(const cellr *c, double base) {
  if (c->status == MLSYS_ERR_INFEASIBLE) { printf(" infeasible (%.1f s) |", c->seconds); return; }
  if (c->status == MLSYS_ERR_TIMEOUT) { printf(" time limit, none (%.0f s) |", c->seconds); return; }
  if (c->status != MLSYS_OK) { printf(" error: %s (%.1f s) |", c->note, c->seconds); return; }
  printf(" %+.1f %% / %.2f %s%s (%.1f s) |", 100 * (c->cost / base - 1), (double)c->peak / U, UN,
         c->optimal ? "" : " TL", c->seconds);
}

/* nonzeros of an ILP from the first line of its MPS dump ("* mlsys MILP: V variables, R rows, NZ nonzeros") */
static int read_mps_header(const char *path, long *vars, long *rows, long *nnz) {
  FILE *f = fopen(path, "r");
  int ok = 0;
  if (f) {
    ok = fscanf(f, "* mlsys MILP: %ld variables, %ld rows, %ld nonzeros", vars, rows, nnz) == 3;
    fclose(f);
  }
  return ok;
}

static cellr run_checkmate(const mlsys_remat_graph *g, uint64_t budget, const cfg *c) {
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  cellr r;
  double t0 = mlsys_now();
  memset(&o, 0, sizeof o);
  memset(&r, 0, sizeof r);
  memset(&s, 0, sizeof s);
  o.method = g->dag.n < 120 ? MLSYS_REMAT_MILP : MLSYS_REMAT_LP_ROUND;
  o.backend = mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? MLSYS_SOLVER_CBC : MLSYS_SOLVER_LPSOLVE;
  o.time_limit = c->limit;
  o.mip_gap_rel = c->gap;
  r.status = mlsys_remat_solve(g, budget, &o, &s);
  r.seconds = mlsys_now() - t0;
  if (r.status == MLSYS_OK) {
    r.cost = s.cost;
    r.peak = s.peak_total;
    /* LP rounding has no optimality claim; the MILP is "done" when optimal or within the gap */
    r.optimal = o.method == MLSYS_REMAT_LP_ROUND ? 1 : (s.optimal || (isfinite(s.gap) && s.gap <= c->gap + 1e-9));
  } else {
    snprintf(r.note, sizeof r.note, "%.40s", mlsys_last_error());
  }
  mlsys_remat_schedule_free(&s);
  return r;
}

/* NoOp's schedule as a schedule of the full MONeT solver graph (same stages; IntNodes not computed, every op its
   default implementation, every backward op its graph path 0): feasible for MONeT, used as its MIP start. */
static int noop_to_full(const mlsys_remat_monet_graph *s0, const mlsys_remat_monet_schedule *a,
                        const mlsys_remat_monet_graph *s1, mlsys_remat_monet_schedule *b) {
  int t, v, u, *map;
  if (s0->T != s1->T || mlsys_remat_monet_schedule_alloc(s1->V, s1->T, b) != MLSYS_OK) return 0;
  map = (int *)calloc((size_t)s1->V, sizeof(int));
  for (v = 0; v < s1->V; v++) {
    map[v] = -1;
    for (u = 0; u < s0->V && s1->src[v] >= 0; u++) if (s0->src[u] == s1->src[v]) map[v] = u;
  }
  for (t = 0; t < s1->T; t++) {
    b->M[t] = 0;
    for (v = 0; v < s1->V; v++) {
      b->R[t * s1->V + v] = map[v] >= 0 ? a->R[t * s0->V + map[v]] : 0;
      b->IP[t * s1->V + v] = 0;
      b->F[t * s1->V + v] = b->R[t * s1->V + v] ? 0 : -1;
    }
  }
  for (t = 0; t <= s1->T; t++)
    for (v = 0; v < s1->V; v++) b->S[t * s1->V + v] = map[v] >= 0 ? a->S[t * s0->V + map[v]] : 0;
  free(map);
  return 1;
}

static cellr run_monet(const mlsys_remat_monet_graph *sg, uint64_t budget, const cfg *c, const char *dump,
                       const mlsys_remat_monet_schedule *warm, mlsys_remat_monet_schedule *keep) {
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  cellr r;
  double t0 = mlsys_now();
  memset(&o, 0, sizeof o);
  memset(&r, 0, sizeof r);
  memset(&s, 0, sizeof s);
  o.time_limit = c->limit;
  o.mip_gap_rel = c->gap;
  o.dump_model = dump;
  o.warm_start = warm;
  r.status = mlsys_remat_monet_solve(sg, budget, &o, &s);
  if (r.status == MLSYS_ERR_ARG && warm) {   /* a start the rows reject: report it and solve cold */
    fprintf(stderr, "warm start rejected: %s\n", mlsys_last_error());
    o.warm_start = NULL;
    r.status = mlsys_remat_monet_solve(sg, budget, &o, &s);
  }
  r.seconds = mlsys_now() - t0;
  if (r.status == MLSYS_OK) {
    r.cost = s.cost;
    r.peak = s.peak;
    r.optimal = s.optimal || (isfinite(s.bound) && s.objective > 0 && (s.objective - s.bound) / s.objective <= c->gap + 1e-9);
  } else {
    snprintf(r.note, sizeof r.note, "%.40s", mlsys_last_error());
  }
  if (keep && r.status == MLSYS_OK) *keep = s;
  else if (s.R) mlsys_remat_monet_schedule_free(&s);
  return r;
}

static void bench_graph(const char *path, int batch, const double *fracs, int nf, const cfg *c) {
  mlsys_remat_graph g0, g;
  mlsys_remat_monet_graph sg[2];
  mlsys_remat_monet_catalogue cat;
  mlsys_remat_opts o;
  mlsys_remat_schedule all;
  mlsys_remat_model_size ms;
  mlsys_remat_monet_schedule noop, warm;
  cellr res[3][NFRAC_MAX];
  long mv[2] = {-1, -1}, mr[2] = {-1, -1}, mz[2] = {-1, -1};
  const char *mname[3] = {"Checkmate", "MONeT-NoOp", "MONeT"};
  double base = 0;
  uint64_t peak_all;
  char label[96], dump[64];
  int i, k, v, built[2] = {0, 0};
  if (mlsys_remat_graph_load(path, &g0) != MLSYS_OK) { printf("\n%s: %s\n", path, mlsys_last_error()); return; }
  if (batch > 0 && batch != g0.batch) {
    if (mlsys_remat_graph_scale_batch(&g0, batch, &g) != MLSYS_OK) {
      printf("\n%s: %s\n", path, mlsys_last_error());
      mlsys_remat_graph_free(&g0);
      return;
    }
    mlsys_remat_graph_free(&g0);
  } else {
    g = g0;
  }
  {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(label, sizeof label, "%.*s @ batch %d", (int)(strcspn(b, ".")), b, g.batch);
  }
  for (v = 0; v < g.dag.n; v++) base += g.dag.cost[v];
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  if (mlsys_remat_solve(&g, UINT64_MAX, &o, &all) != MLSYS_OK) {
    printf("\n%s: checkpoint-all: %s\n", label, mlsys_last_error());
    mlsys_remat_graph_free(&g);
    return;
  }
  peak_all = all.peak_total;
  if (peak_all >= GB) { U = GB; UN = "GB"; } else { U = 1e6; UN = "MB"; }
  mlsys_remat_schedule_free(&all);
  for (k = 0; k < 2; k++) {
    memset(&cat, 0, sizeof cat);
    cat.mode = k ? MLSYS_REMAT_MONET_ALL : 0;
    if (mlsys_remat_monet_graph_build(&g, &cat, &sg[k]) != MLSYS_OK)
      printf("\n%s: MONeT graph (%s): %s\n", label, mname[k + 1], mlsys_last_error());
    else built[k] = 1;
  }
  printf("\n### %s — %d graph nodes, fixed memory %.2f %s, store-all peak %.2f %s, Checkmate = %s\n\n", label,
         g.dag.n, (double)mlsys_remat_fixed_total(&g) / U, UN, (double)peak_all / U, UN,
         g.dag.n < 120 ? "MILP (CBC)" : "LP rounding (coarsened graph)");
  fflush(stdout);
  for (i = 0; i < nf; i++) {
    uint64_t budget = (uint64_t)((double)peak_all * fracs[i]);
    res[0][i] = run_checkmate(&g, budget, c);
    memset(&noop, 0, sizeof noop);
    memset(&warm, 0, sizeof warm);
    for (k = 0; k < 2; k++) {
      const mlsys_remat_monet_schedule *ws = NULL;
      if (!built[k]) { res[k + 1][i].status = MLSYS_ERR_ARG; snprintf(res[k + 1][i].note, 48, "no solver graph"); continue; }
      /* MONeT starts from NoOp's schedule at the same budget (feasible for it: the catalogue keeps "default") */
      if (k == 1 && noop.R && noop_to_full(&sg[0], &noop, &sg[1], &warm)) ws = &warm;
      /* the ILP's size: dumped once, at the first budget (the rows do not depend on the budget) */
      snprintf(dump, sizeof dump, "/tmp/bench_monet_%d_%d.mps", (int)getpid(), k);
      res[k + 1][i] = run_monet(&sg[k], budget, c, i == 0 ? dump : NULL, ws, k == 0 ? &noop : NULL);
      if (i == 0) {
        read_mps_header(dump, &mv[k], &mr[k], &mz[k]);
        unlink(dump);
      }
    }
    if (noop.R) mlsys_remat_monet_schedule_free(&noop);
    if (warm.R) mlsys_remat_monet_schedule_free(&warm);
    fprintf(stderr, "%s frac %.2f done\n", label, fracs[i]);
  }
  printf("ILP sizes as built (before any presolve; the thesis's Tab. 4.5 counts are after Gurobi presolve):\n\n");
  printf("| method | solver nodes (fwd V / stages T) | columns | rows | nonzeros |\n|---|---|---|---|---|\n");
  if (mlsys_remat_milp_size(&g, 0, &ms) == MLSYS_OK)
    printf("| Checkmate MILP | %d | %ld | %ld | %ld |\n", g.dag.n, ms.binaries + ms.continuous, ms.rows, ms.nonzeros);
  for (k = 0; k < 2; k++)
    if (built[k])
      printf("| %s | %d / %d | %ld | %ld | %ld |\n", mname[k + 1], sg[k].V, sg[k].T, mv[k], mr[k], mz[k]);
  if (g.dag.n >= 120) printf("\n(Checkmate's MILP is listed for size only: this bench runs its LP rounding here.)\n");
  printf("\nOverhead over store-all (cost / Σ cost − 1) / simulated peak incl. fixed memory (solve time). TL = time "
         "limit hit before the %.0f %% gap:\n\n", 100 * c->gap);
  printf("| budget / store-all peak | budget %s | Checkmate | MONeT-NoOp | MONeT |\n|---|---|---|---|---|\n", UN);
  for (i = 0; i < nf; i++) {
    printf("| %.2f | %.2f |", fracs[i], (double)peak_all * fracs[i] / U);
    for (k = 0; k < 3; k++) cell_print(&res[k][i], base);
    printf("\n");
  }
  printf("\nSmallest simulated peak at ≤ 10 %% overhead over the budgets above (an upper bound on Tab. 4.2's "
         "figure; the grid is coarse):\n\n| graph | Checkmate | MONeT-NoOp | MONeT |\n|---|---|---|---|\n| %s |", label);
  for (k = 0; k < 3; k++) {
    uint64_t best = UINT64_MAX;
    for (i = 0; i < nf; i++)
      if (res[k][i].status == MLSYS_OK && res[k][i].cost / base - 1 <= 0.10 + 1e-12 && res[k][i].peak < best)
        best = res[k][i].peak;
    if (best == UINT64_MAX) printf(" none |");
    else printf(" %.2f %s (%.2f×) |", (double)best / U, UN, (double)best / (double)peak_all);
  }
  printf("\n");
  fflush(stdout);
  for (k = 0; k < 2; k++) if (built[k]) mlsys_remat_monet_graph_free(&sg[k]);
  mlsys_remat_graph_free(&g);
}

int main(int argc, char **argv) {
  static const char *def_path[] = {"tests/data/graphs/smallcnn_b8.json", "tests/data/graphs/vgg16_b2.json",
                                   "tests/data/graphs/unet_b2.json", "tests/data/graphs/mobilenet_v2_b2.json",
                                   "tests/data/graphs/resnet50_b2.json", "tests/data/graphs/googlenet_b2.json"};
  static const int def_batch[] = {0, 176, 11, 256, 184, 320};
  double fracs[NFRAC_MAX] = {1.0, 0.8, 0.6, 0.5, 0.4, 0.33};
  cfg c = {60, 0.05};
  int i, quick = 0, ngraph = 0, ndef = 3, nf = 6;   /* default: the three graphs whose solves end near their limits
                                                      (mobilenet_v2, resnet50, googlenet overrun them: name them) */
  char model[256], date[64], load[64];
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) c.limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "--gap") && i + 1 < argc) c.gap = atof(argv[++i]);
    else if (!strcmp(argv[i], "--fracs") && i + 1 < argc) {   /* e.g. 1,0.6,0.4 */
      char *p = argv[++i], *e;
      for (nf = 0; nf < NFRAC_MAX && *p; p = *e ? e + 1 : e) {
        fracs[nf] = strtod(p, &e);
        if (e == p) break;
        nf++;
      }
    }
    else if (argv[i][0] != '-') ngraph++;
  }
  if (quick) { ndef = 2; if (c.limit > 10) c.limit = 10; }
  bench_machine(model, sizeof model, date, sizeof date);
  bench_loadavg(load, sizeof load);
  printf("## MONeT vs MONeT-NoOp vs Checkmate (%s; %s; load %s; %d CPUs)\n\n", model, date, load, mlsys_ncpus());
  printf("Time limit %.0f s per solve, relative gap %.0f %%, CBC %s. Costs are the graphs' FLOP proxies; the\n"
         "conv/linear forward and backward algorithms are the documented proxy (0.7× cost; a Conv2d's workspace is one\n"
         "sample's im2col columns from the shapes, else 9× input bytes) unless the graph carries calibrated impls:\n"
         "these are not the thesis's P100 times. Peaks are the simulators'\n"
         "(Checkmate's; MONeT's eager Alg. 4), fixed memory (params, grads, inputs) included. Budgets are fractions of\n"
         "Checkmate's checkpoint-all peak. MONeT's ILP is given MONeT-NoOp's schedule at the same budget as its\n"
         "cutoff (NoOp's feasible set is contained in MONeT's); without one, each solve starts from the built-in\n"
         "store-all / Chen schedules that fit its rows. CBC runs in a child process killed 0.5 s after the limit.\n",
         c.limit, 100 * c.gap, mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? "compiled in" : "absent (lp_solve)");
  fflush(stdout);
  if (ngraph) {
    for (i = 1; i < argc; i++) {
      char path[512], *colon;
      int batch = 0;
      if (argv[i][0] == '-') {
        if (!strcmp(argv[i], "--time-limit") || !strcmp(argv[i], "--gap") || !strcmp(argv[i], "--fracs")) i++;
        continue;
      }
      snprintf(path, sizeof path, "%s", argv[i]);
      if ((colon = strrchr(path, ':')) != NULL) { batch = atoi(colon + 1); *colon = 0; }
      bench_graph(path, batch, fracs, nf, &c);
    }
  } else {
    for (i = 0; i < ndef; i++) bench_graph(def_path[i], def_batch[i], fracs, nf, &c);
  }
  return 0;
}
