/* tests/test_remat_coarsen.c — graph coarsening (fused conv-bn-relu) and the expansion of coarse schedules.

   The coarse graph must keep every node's cost and the graph's structure; a coarse schedule must expand to a valid
   fine schedule that costs no more and peaks no higher than the coarse accounting plus the in-group transient;
   and LP rounding through the coarse graph must beat the baselines on the real ResNet-50 graph while an
   expansion can never beat the proven fine optimum (tests/data/graphs/smallcnn_b8.json). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

/* The limit of solves whose outcome is checked: a safety net that never binds (smallcnn's MILP takes well under
   a second, ResNet-50's coarse LP rounding ~50 s), so no verdict depends on the machine's load. */
#define NEVER_BINDS 600.0

#include <math.h>

static const char *const graphs[] = {"alexnet_b32", "vgg16_b2", "vgg19_b2", "resnet50_b2", "mobilenet_v2_b2",
                                     "unet_b2", "gpt2_b4", "smallcnn_b8", "mlp_b64"};

static int load(const char *name, mlsys_remat_graph *g) {
  char path[256];
  snprintf(path, sizeof path, "tests/data/graphs/%s.json", name);
  return mlsys_remat_graph_load(path, g) == MLSYS_OK;
}

static uint64_t ckpt_peak(const mlsys_remat_graph *g, double *cost) {
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  uint64_t p;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  if (mlsys_remat_solve(g, UINT64_MAX, &o, &s) != MLSYS_OK) return 0;
  p = s.peak;
  if (cost) *cost = s.cost;
  mlsys_remat_schedule_free(&s);
  return p;
}

TEST(coarsen_keeps_costs_order_and_kinds) {
  /* this coarsener's node counts (the fused forms of the spec's 81 / 351 / 307-node graphs) */
  static const struct { const char *g; int n; } expect[] = {
      {"vgg16_b2", 45}, {"resnet50_b2", 145}, {"mobilenet_v2_b2", 129}, {"smallcnn_b8", 13}, {"mlp_b64", 9}};
  size_t k;
  for (k = 0; k < sizeof graphs / sizeof graphs[0]; k++) {
    mlsys_remat_graph g, c;
    int *grp, v, j;
    uint64_t tr = 0;
    double fc = 0, cc = 0;
    REQUIRE(load(graphs[k], &g));
    grp = (int *)malloc(sizeof(int) * (size_t)g.dag.n);
    CHECK_OK(mlsys_remat_coarsen(&g, &c, grp, &tr));
    for (v = 0; v < g.dag.n; v++) fc += g.dag.cost[v];
    for (v = 0; v < c.dag.n; v++) cc += c.dag.cost[v];
    CHECK_NEAR(cc / fc, 1.0, 1e-12);
    CHECK(grp[0] == 0);
    for (v = 1; v < g.dag.n; v++) CHECK(grp[v] == grp[v - 1] || grp[v] == grp[v - 1] + 1);   /* contiguous */
    CHECK_EQ_INT(grp[g.dag.n - 1] + 1, c.dag.n);
    for (v = 0; v < g.dag.n; v++) {
      CHECK(c.kind[grp[v]] == g.kind[v]);
      /* every dependency crossing groups is a coarse dependency */
      for (j = g.dag.in_off[v]; j < g.dag.in_off[v + 1]; j++) {
        int u = g.dag.in[j], q, found = grp[u] == grp[v];
        for (q = c.dag.in_off[grp[v]]; !found && q < c.dag.in_off[grp[v] + 1]; q++) found = c.dag.in[q] == grp[u];
        CHECK_MSG(found, "%s: edge %d -> %d lost", graphs[k], u, v);
      }
      if (g.kind[v] == MLSYS_REMAT_B && g.fwd_of[v] >= 0 && v > 0 && grp[v] == grp[v - 1])
        CHECK(grp[g.fwd_of[v]] == grp[g.fwd_of[v - 1]]);
    }
    /* a group's bytes never exceed its members' sum, and the checkpoint-all peaks stay within the transient */
    {
      uint64_t pf = ckpt_peak(&g, NULL), pc = ckpt_peak(&c, NULL);
      CHECK_MSG(pf <= pc + tr, "%s: fine checkpoint-all peak %llu > coarse %llu + transient %llu", graphs[k],
                (unsigned long long)pf, (unsigned long long)pc, (unsigned long long)tr);
    }
    for (j = 0; j < (int)(sizeof expect / sizeof expect[0]); j++)
      if (!strcmp(expect[j].g, graphs[k])) CHECK_EQ_INT(c.dag.n, expect[j].n);
    free(grp);
    mlsys_remat_graph_free(&c);
    mlsys_remat_graph_free(&g);
  }
}

TEST(coarsen_leaves_graphs_without_operators_alone) {
  mlsys_remat_graph g, c;
  int grp[64];
  uint64_t tr = 1;
  CHECK_OK(mlsys_remat_graph_chain(8, &g));
  CHECK_OK(mlsys_remat_coarsen(&g, &c, grp, &tr));
  CHECK_EQ_INT(c.dag.n, g.dag.n);
  CHECK(tr == 0);
  mlsys_remat_graph_free(&c);
  mlsys_remat_graph_free(&g);
}

/* Random coarse schedules (random carries, R = min_r) expand to valid fine schedules that cost no more, and peak no
   higher than the coarse accounting plus the largest in-group transient. */
TEST(expand_random_coarse_schedules) {
  static const char *const some[] = {"smallcnn_b8", "alexnet_b32", "vgg16_b2", "resnet50_b2", "unet_b2"};
  mlsys_rng rng;
  size_t k;
  mlsys_rng_seed(&rng, 7);
  for (k = 0; k < sizeof some / sizeof some[0]; k++) {
    mlsys_remat_graph g, c;
    int *grp, trial, n;
    uint64_t tr;
    REQUIRE(load(some[k], &g));
    grp = (int *)malloc(sizeof(int) * (size_t)g.dag.n);
    REQUIRE(mlsys_remat_coarsen(&g, &c, grp, &tr) == MLSYS_OK);
    n = c.dag.n;
    for (trial = 0; trial < 12; trial++) {
      mlsys_remat_schedule cs, fs;
      double p = mlsys_rng_uniform(&rng);
      int t, i;
      REQUIRE(mlsys_remat_schedule_alloc(n, &cs) == MLSYS_OK);
      for (t = 1; t < n; t++)
        for (i = 0; i < t; i++) cs.S[(size_t)t * (size_t)n + (size_t)i] = mlsys_rng_uniform(&rng) < p;
      CHECK_OK(mlsys_remat_trim(&c, cs.S, cs.R));
      cs.budget = UINT64_MAX;
      CHECK_OK(mlsys_remat_evaluate(&c, &cs));
      if (mlsys_remat_expand(&g, &c, grp, &cs, &fs) != MLSYS_OK) {
        CHECK_MSG(0, "%s trial %d: %s", some[k], trial, mlsys_last_error());
      } else {
        CHECK_MSG(fs.cost <= cs.cost * (1 + 1e-12), "%s trial %d: fine cost %.6g > coarse %.6g", some[k], trial,
                  fs.cost, cs.cost);
        CHECK_MSG(fs.peak <= cs.peak + tr, "%s trial %d: fine peak %llu > coarse %llu + %llu", some[k], trial,
                  (unsigned long long)fs.peak, (unsigned long long)cs.peak, (unsigned long long)tr);
        mlsys_remat_schedule_free(&fs);
      }
      mlsys_remat_schedule_free(&cs);
    }
    free(grp);
    mlsys_remat_graph_free(&c);
    mlsys_remat_graph_free(&g);
  }
}

/* An expanded schedule is a schedule of the real graph: it can never beat the proven optimum there. */
TEST(coarse_lp_never_beats_the_fine_optimum_smallcnn) {
  mlsys_remat_graph g;
  mlsys_remat_opts o;
  uint64_t peak, fixed, budgets[3];
  int b, coarse_used = 0;
  REQUIRE(load("smallcnn_b8", &g));
  peak = ckpt_peak(&g, NULL);
  fixed = mlsys_remat_fixed_total(&g);
  budgets[0] = fixed + peak;
  budgets[1] = fixed + peak - peak / 32;
  budgets[2] = fixed + mlsys_remat_single_op_bound(&g);
  for (b = 0; b < 3; b++) {
    mlsys_remat_schedule opt, lp;
    memset(&o, 0, sizeof o);
    o.time_limit = NEVER_BINDS;
    REQUIRE(mlsys_remat_solve(&g, budgets[b], &o, &opt) == MLSYS_OK);
    CHECK(opt.optimal);
    o.method = MLSYS_REMAT_LP_ROUND;
    o.coarsen = MLSYS_REMAT_COARSEN_ON;
    if (mlsys_remat_solve(&g, budgets[b], &o, &lp) == MLSYS_OK) {
      CHECK(lp.fits);
      CHECK(lp.cost >= opt.cost * (1 - 1e-12));
      if (strstr(lp.solver_note, "coarsened")) {
        CHECK(isnan(lp.bound));   /* a coarse LP bounds nothing about the real graph */
        coarse_used++;
      } else {
        /* near the single-operator bound the fused form has no room; the fine LP took over: a true bound */
        CHECK(!isnan(lp.bound) && lp.bound <= opt.cost * (1 + 1e-9));
      }
    }
    mlsys_remat_schedule_free(&lp);
    mlsys_remat_schedule_free(&opt);
  }
  CHECK(coarse_used >= 1);   /* at least the checkpoint-all budget expands from the coarse LP */
  mlsys_remat_graph_free(&g);
}

/* The point of coarsening: the op-level ResNet-50 (n = 351) LP, which Clp does not finish in minutes, solved on
   the fused graph; the rounding fits and beats every baseline at 70% of the way from the single-operator bound
   to the checkpoint-all peak (measured: 1.044x against 1.095x for the best baseline). */
TEST(lp_on_resnet50_via_coarsening_beats_the_baselines) {
  mlsys_remat_graph g;
  mlsys_remat_opts o;
  mlsys_remat_schedule lp;
  uint64_t lb, peak, budget;
  double base = 0, best = INFINITY;
  int m;
  REQUIRE(load("resnet50_b2", &g));
  peak = ckpt_peak(&g, &base);
  lb = mlsys_remat_single_op_bound(&g);
  budget = mlsys_remat_fixed_total(&g) + lb + (uint64_t)((double)(peak - lb) * 0.7);
  for (m = MLSYS_REMAT_CHECKPOINT_ALL; m < MLSYS_REMAT_METHOD_COUNT; m++) {
    mlsys_remat_schedule s;
    memset(&o, 0, sizeof o);
    o.method = (mlsys_remat_method)m;
    if (mlsys_remat_solve(&g, budget, &o, &s) == MLSYS_OK && s.cost < best) best = s.cost;
    mlsys_remat_schedule_free(&s);
  }
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_LP_ROUND;
  o.time_limit = NEVER_BINDS;   /* ~50 s on an idle 2-core machine */
  REQUIRE(mlsys_remat_solve(&g, budget, &o, &lp) == MLSYS_OK);
  CHECK(lp.fits && lp.peak_total <= budget);
  CHECK_MSG(lp.cost < best, "LP rounding %.4fx, best baseline %.4fx", lp.cost / base, best / base);
  CHECK_CONTAINS(lp.solver_note, "coarsened to 145 nodes");
  mlsys_remat_schedule_free(&lp);
  mlsys_remat_graph_free(&g);
}

TEST_MAIN()
