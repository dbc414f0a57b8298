/* bench/bench_transfer_plan.c — the Skyplane planner on the real grid (tests/data/skyplane):
     time     one min-cost solve and a 100-sample Pareto sweep on the thesis's routes (target < 0.5 s and < 5 s)
     overlay  throughput with the overlay vs the direct path at the same VM count per region (Fig. 4.10, thesis
              2.08x geomean inter-continental, 1.03x intra-continental), and at an equal cost ceiling
     gap      LP relaxation vs integer MILP cost over many routes (thesis: "<= 1 %")
     bottle   where the direct path and the overlay are bottlenecked (Fig. 4.8, utilisation > 99 %)
   Usage: bench_transfer_plan [time|overlay|gap|bottle|all] [--stride K] (every K-th region pair; default 7;
   1 = all 3,906 pairs). Prints markdown tables. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define GRID "tests/data/skyplane/throughput_premium.csv"
#define PRICES "tests/data/skyplane/aws_transfer_costs.csv"

static mlsys_xfer_grid G;

static int find(const char *k) {
  int i = mlsys_xfer_grid_find(&G, k);
  if (i < 0) { fprintf(stderr, "region %s not in the grid\n", k); exit(1); }
  return i;
}

static void bench_time(void) {
  static const char *routes[][2] = {
      {"azure:canadacentral", "gcp:asia-northeast1-a"},   /* Fig 4.1 */
      {"azure:eastus", "aws:ap-northeast-1"},             /* Table 4.2 */
      {"azure:westus", "aws:eu-west-1"},                  /* Fig 4.9c: considerable benefit */
      {"gcp:asia-east1-a", "aws:sa-east-1"},              /* Fig 4.9c: good */
      {"aws:af-south-1", "aws:ap-southeast-2"},           /* Fig 4.9c: minimal */
  };
  size_t r;
  printf("\n### Planner time (lp_solve, exact integer VMs)\n\n");
  printf("| route | VMs/region | max Gbps | one min-cost solve s (at 80 %% of max) | 100-sample Pareto s | sweep max-throughput s (ceiling 1.2x direct) |\n|---|---|---|---|---|---|\n");
  for (r = 0; r < sizeof routes / sizeof routes[0]; r++) {
    int lims[2] = {1, 8}, li;
    for (li = 0; li < 2; li++) {
      mlsys_xfer_problem p;
      mlsys_xfer_plan pl, pts[100], d;
      double hi, t0, t1, t2, goals[100];
      int i;
      mlsys_xfer_problem_default(&p, find(routes[r][0]), find(routes[r][1]));
      p.vm_limit = lims[li];
      if (mlsys_xfer_max_flow(&G, &p, NULL, &hi)) { printf("| %s -> %s | %d | error: %s |\n", routes[r][0], routes[r][1], lims[li], mlsys_last_error()); continue; }
      p.goal_gbps = 0.8 * hi;
      t0 = mlsys_now();
      if (mlsys_xfer_plan_min_cost(&G, &p, &pl)) { printf("| %s -> %s | error %s |\n", routes[r][0], routes[r][1], mlsys_last_error()); continue; }
      t0 = mlsys_now() - t0;
      mlsys_xfer_plan_free(&pl);
      for (i = 0; i < 100; i++) goals[i] = hi * (i + 1) / 100.0 * (1 - 1e-9);
      t1 = mlsys_now();
      if (mlsys_xfer_pareto(&G, &p, goals, 100, pts) == MLSYS_OK)
        for (i = 0; i < 100; i++) mlsys_xfer_plan_free(&pts[i]);
      t1 = mlsys_now() - t1;
      t2 = NAN;
      if (mlsys_xfer_plan_direct(&G, &p, lims[li], &d) == MLSYS_OK) {
        p.max_cost_per_gb = 1.2 * d.cost_per_gb;
        t2 = mlsys_now();
        if (mlsys_xfer_plan_max_tput(&G, &p, &pl) == MLSYS_OK) mlsys_xfer_plan_free(&pl);
        t2 = mlsys_now() - t2;
        mlsys_xfer_plan_free(&d);
      }
      printf("| %s -> %s | %d | %.2f | %.3f | %.2f | %.2f |\n", routes[r][0], routes[r][1], lims[li], hi, t0, t1, t2);
      fflush(stdout);
    }
  }
}

static int inter_continental(int s, int t) { return strcmp(G.r[s].continent, G.r[t].continent) != 0; }

static void bench_overlay(int stride) {
  int s, t, k, vm[4] = {1, 2, 4, 8}, npair = 0, cnt[2] = {0, 0}, ccnt[2] = {0, 0}, ccnt2[2] = {0, 0};
  double lg[2] = {0, 0}, lgc[2] = {0, 0}, lgc2[2] = {0, 0}, mx[2] = {0, 0}, t0 = mlsys_now();
  long pair = 0;
  for (s = 0; s < G.n; s++)
    for (t = 0; t < G.n; t++) {
      double l = 0, lc = 0, lc2 = 0;
      int ok = 1, okc = 1, okc2 = 1;
      if (s == t || !(G.tput[s * G.n + t] > 0)) continue;
      if (pair++ % stride) continue;
      for (k = 0; k < 4 && ok; k++) {
        mlsys_xfer_problem p;
        mlsys_xfer_plan d, o;
        double ov = 0, di = 0;
        mlsys_xfer_problem_default(&p, s, t);
        p.vm_limit = vm[k];
        if (mlsys_xfer_max_flow(&G, &p, NULL, &ov)) { ok = 0; break; }
        p.direct_only = 1;
        if (mlsys_xfer_max_flow(&G, &p, NULL, &di) || !(di > 0)) { ok = 0; break; }
        l += log(ov / di);
        /* equal cost ceiling: the overlay may spend what the direct path with the same VMs costs per GB */
        p.direct_only = 0;
        if (okc && mlsys_xfer_plan_direct(&G, &p, vm[k], &d) == MLSYS_OK) {
          p.max_cost_per_gb = d.cost_per_gb * (1 + 1e-9);
          if (mlsys_xfer_plan_max_tput_lp(&G, &p, &o) == MLSYS_OK) { lc += log(fmax(o.tput_gbps, di) / d.tput_gbps); mlsys_xfer_plan_free(&o); }
          else okc = 0;
          /* and at 1.25x the direct path's price (Fig. 4.1: 2x the throughput at 1.2x the price) */
          p.max_cost_per_gb = d.cost_per_gb * 1.25;
          if (mlsys_xfer_plan_max_tput_lp(&G, &p, &o) == MLSYS_OK) { lc2 += log(fmax(o.tput_gbps, di) / d.tput_gbps); mlsys_xfer_plan_free(&o); }
          else okc2 = 0;
          mlsys_xfer_plan_free(&d);
        } else okc = 0;
      }
      if (!ok) continue;
      npair++;
      {
        int ic = inter_continental(s, t);
        lg[ic] += l / 4; cnt[ic]++;
        if (exp(l / 4) > mx[ic]) mx[ic] = exp(l / 4);
        if (okc) { lgc[ic] += lc / 4; ccnt[ic]++; }
        if (okc && okc2) { lgc2[ic] += lc2 / 4; ccnt2[ic]++; }
      }
    }
  printf("\n### Overlay vs direct path, same VMs per region (Fig. 4.10), VM counts 1, 2, 4, 8\n\n");
  printf("%d route pairs (every %d-th measured pair), %.1f s. Per route: geomean over the VM counts of max-throughput with the\n"
         "overlay / with the direct path only; then the geomean over routes. Equal cost: the overlay's max throughput (exact\n"
         "LP, fractional VMs) with the direct path's $/GB as the ceiling.\n\n", npair, stride, mlsys_now() - t0);
  printf("| routes | n | overlay / direct, same VMs (geomean) | max | thesis | at equal $/GB (geomean) | at 1.25x the direct $/GB |\n|---|---|---|---|---|---|---|\n");
  printf("| inter-continental | %d | %.2fx | %.2fx | 2.08x (one route) | %.2fx | %.2fx |\n", cnt[1], cnt[1] ? exp(lg[1] / cnt[1]) : NAN, mx[1],
         ccnt[1] ? exp(lgc[1] / ccnt[1]) : NAN, ccnt2[1] ? exp(lgc2[1] / ccnt2[1]) : NAN);
  printf("| intra-continental | %d | %.2fx | %.2fx | 1.03x (one route) | %.2fx | %.2fx |\n", cnt[0], cnt[0] ? exp(lg[0] / cnt[0]) : NAN, mx[0],
         ccnt[0] ? exp(lgc[0] / ccnt[0]) : NAN, ccnt2[0] ? exp(lgc2[0] / ccnt2[0]) : NAN);
}

static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static void bench_gap(int stride) {
  int s, t, n = 0, lims[2] = {2, 8}, li;
  long pair = 0;
  double *gaps = (double *)malloc(sizeof(double) * (size_t)G.n * G.n * 2), t0 = mlsys_now(), tmax = 0;
  for (s = 0; s < G.n; s++)
    for (t = 0; t < G.n; t++) {
      if (s == t || pair++ % stride) continue;
      for (li = 0; li < 2; li++) {
        mlsys_xfer_problem p;
        mlsys_xfer_plan ex;
        double hi, t1;
        mlsys_xfer_problem_default(&p, s, t);
        p.vm_limit = lims[li];
        p.time_limit_s = 20;
        if (mlsys_xfer_max_flow(&G, &p, NULL, &hi) || !(hi > 0)) continue;
        p.goal_gbps = hi * (0.35 + 0.3 * li);
        t1 = mlsys_now();
        if (mlsys_xfer_plan_min_cost(&G, &p, &ex)) continue;
        t1 = mlsys_now() - t1;
        if (t1 > tmax) tmax = t1;
        gaps[n++] = (ex.cost_per_gb - ex.lp_bound_per_gb) / ex.cost_per_gb;
        mlsys_xfer_plan_free(&ex);
      }
    }
  qsort(gaps, (size_t)n, sizeof(double), cmpd);
  printf("\n### LP relaxation vs integer MILP (thesis §4.5.1: within 1 %%)\n\n");
  printf("%d solves (every %d-th pair, VM limits 2 and 8, goals 35 %% / 65 %% of the max), %.1f s, slowest solve %.2f s.\n\n", n, stride, mlsys_now() - t0, tmax);
  if (n) {
    int w = 0, i;
    for (i = 0; i < n; i++) w += gaps[i] <= 0.01;
    printf("| median gap | 90th pct | max | within 1 %% |\n|---|---|---|---|\n| %.3f %% | %.3f %% | %.3f %% | %d of %d (%.1f %%) |\n",
           100 * gaps[n / 2], 100 * gaps[(int)(0.9 * (n - 1))], 100 * gaps[n - 1], w, n, 100.0 * w / n);
  }
  free(gaps);
}

static void bench_bottle(int stride) {
  int s, t, n = 0, src_direct = 0, src_over = 0;
  long pair = 0;
  for (s = 0; s < G.n; s++)
    for (t = 0; t < G.n; t++) {
      mlsys_xfer_problem p;
      mlsys_xfer_plan d, o;
      double hi;
      if (s == t || pair++ % stride) continue;
      mlsys_xfer_problem_default(&p, s, t);
      p.vm_limit = 1;
      if (mlsys_xfer_plan_direct(&G, &p, 1, &d)) continue;
      if (mlsys_xfer_max_flow(&G, &p, NULL, &hi) || !(hi > 0)) { mlsys_xfer_plan_free(&d); continue; }
      p.goal_gbps = hi * (1 - 1e-9);
      p.rounding = MLSYS_XFER_RELAXED;
      if (mlsys_xfer_plan_min_cost(&G, &p, &o)) { mlsys_xfer_plan_free(&d); continue; }
      n++;
      src_direct += (mlsys_xfer_plan_bottlenecks(&G, &p, &d, 0.99) & (MLSYS_XFER_BN_SRC_LINK)) != 0;
      src_over += (mlsys_xfer_plan_bottlenecks(&G, &p, &o, 0.99) & (MLSYS_XFER_BN_SRC_LINK)) != 0;
      mlsys_xfer_plan_free(&d); mlsys_xfer_plan_free(&o);
    }
  printf("\n### Bottlenecks (Fig. 4.8; one VM per region, utilisation > 99 %%)\n\n");
  printf("| plans | source link saturated: direct | overlay (max throughput) | reduction | thesis |\n|---|---|---|---|---|\n");
  printf("| %d | %d (%.0f %%) | %d (%.0f %%) | %.0f %% | 32 %% |\n", n, src_direct, 100.0 * src_direct / (n ? n : 1), src_over,
         100.0 * src_over / (n ? n : 1), src_direct ? 100.0 * (src_direct - src_over) / src_direct : 0.0);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "quick";
  int stride = 7, i;
  for (i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], "--stride")) stride = atoi(argv[i + 1]);
  if (stride < 1) stride = 1;
  if (mlsys_xfer_grid_load(GRID, PRICES, NULL, &G)) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
  printf("## Skyplane planner on the real grid (%d regions; SI Gbps)\n", G.n);
  if (!strcmp(what, "quick")) { stride = 61; what = "all"; }
  if (!strcmp(what, "time") || !strcmp(what, "all")) bench_time();
  if (!strcmp(what, "overlay") || !strcmp(what, "all")) bench_overlay(stride);
  if (!strcmp(what, "gap") || !strcmp(what, "all")) bench_gap(stride);
  if (!strcmp(what, "bottle") || !strcmp(what, "all")) bench_bottle(stride);
  mlsys_xfer_grid_free(&G);
  return 0;
}
