/* mlsys_remat.h: the MILP's size against the table the project's specification measured (docs/remat.md, "The
   model as built", quotes the chain L=8 row), the real exported graphs (load, validate, solve with every method),
   and the LP bound/rounding relations on them. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

/* The limit of solves whose outcome is checked: a safety net that never binds here (AlexNet's LP on lp_solve
   takes a few seconds), so no verdict depends on the machine's load. */
#define NEVER_BINDS 600.0

/* Spec §3.2 "Counts" (measured with the authors' formulation): binaries, U columns, rows M1-M6, for the model
   without our dominance rows. */
TEST(model_size_matches_spec_table_chains) {
  static const struct { int L; long bin, ucols, rows; } t[] = {
      {8, 436, 153, 918}, {16, 1704, 561, 3690}, {32, 6736, 2145, 14802}, {64, 26784, 8385, 59298}};
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    mlsys_remat_graph g;
    mlsys_remat_model_size z, zd;
    REQUIRE_OK(mlsys_remat_graph_chain(t[i].L, &g));
    REQUIRE_OK(mlsys_remat_milp_size(&g, MLSYS_REMAT_MODEL_NO_DOMINANCE, &z));
    CHECK_EQ_INT(z.binaries, t[i].bin);
    CHECK_EQ_INT(z.continuous, t[i].ucols);
    CHECK_EQ_INT(z.rows, t[i].rows);
    /* the default model adds only rows (two dominance rows per (t, i) that node t does not read) */
    REQUIRE_OK(mlsys_remat_milp_size(&g, 0, &zd));
    CHECK_EQ_INT(zd.binaries, z.binaries);
    CHECK_EQ_INT(zd.continuous, z.continuous);
    CHECK(zd.rows > z.rows);
    mlsys_remat_graph_free(&g);
  }
}

/* The spec's table also lists the exported VGG16 (batch 2): n = 81, 116 edges, 10,382 binaries, 3,321 U columns,
   22,766 rows. Our exporter reproduces the graph's counts (tools/README.md), so the model must match too. */
TEST(model_size_matches_spec_table_vgg16) {
  mlsys_remat_graph g;
  mlsys_remat_model_size z;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b2.json", &g));
  CHECK_EQ_INT(g.dag.n, 81);
  CHECK_EQ_INT(g.dag.nedges, 116);
  REQUIRE_OK(mlsys_remat_milp_size(&g, MLSYS_REMAT_MODEL_NO_DOMINANCE, &z));
  CHECK_EQ_INT(z.binaries, 10382);
  CHECK_EQ_INT(z.continuous, 3321);
  CHECK_EQ_INT(z.rows, 22766);
  mlsys_remat_graph_free(&g);
}

/* Every real exported graph loads, is in schedule order with a canonical layout, and every method gives a valid
   schedule; checkpoint-all costs exactly Σ C; and at the checkpoint-all peak the MILP needs no recomputation. */
TEST(real_graphs_all_methods_valid) {
  static const char *files[] = {"tests/data/graphs/mlp_b64.json", "tests/data/graphs/alexnet_b32.json",
                                "tests/data/graphs/vgg16_b2.json"};
  size_t f;
  for (f = 0; f < sizeof files / sizeof files[0]; f++) {
    mlsys_remat_graph g;
    mlsys_remat_schedule ck;
    mlsys_remat_opts o;
    double total = 0;
    int v, m, L = 0;
    REQUIRE_OK(mlsys_remat_graph_load(files[f], &g));
    for (v = 0; v < g.dag.n; v++) { total += g.dag.cost[v]; L += g.kind[v] == MLSYS_REMAT_F; }
    CHECK_EQ_INT(g.dag.n, 2 * L + 1);
    CHECK_EQ_INT(g.loss, L);
    for (v = L + 1; v < g.dag.n; v++) CHECK_EQ_INT(g.fwd_of[v], g.dag.n - 1 - v);
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    REQUIRE_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &ck));
    CHECK_NEAR(ck.cost, total, 1e-9 * total);
    for (m = 0; m < MLSYS_REMAT_METHOD_COUNT; m++) {
      mlsys_remat_schedule s;
      mlsys_remat_sim rep;
      mlsys_status st;
      /* halfway between the single-operator bound and the checkpoint-all peak */
      uint64_t budget = mlsys_remat_fixed_total(&g) + mlsys_remat_single_op_bound(&g) +
                        (ck.peak - mlsys_remat_single_op_bound(&g)) / 2;
      memset(&o, 0, sizeof o);
      o.method = (mlsys_remat_method)m;
      o.time_limit = 10;
      st = mlsys_remat_solve(&g, budget, &o, &s);
      CHECK_MSG(st == MLSYS_OK || st == MLSYS_ERR_INFEASIBLE || st == MLSYS_ERR_TIMEOUT, "%s %s: %s", files[f],
                mlsys_remat_method_name((mlsys_remat_method)m), mlsys_last_error());
      if (s.n) {
        CHECK_OK(mlsys_remat_simulate(&g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
        CHECK_EQ_INT(rep.peak, s.peak);
        CHECK(s.cost >= total * (1 - 1e-12));
        if (st == MLSYS_OK) CHECK(s.peak_total <= budget);
      }
      /* Checkmate's cost is never above any baseline that fits the same budget */
      if (m == MLSYS_REMAT_MILP && st == MLSYS_OK) {
        int b;
        for (b = MLSYS_REMAT_CHECKPOINT_ALL; b < MLSYS_REMAT_METHOD_COUNT; b++) {
          mlsys_remat_schedule bs;
          mlsys_remat_opts bo;
          memset(&bo, 0, sizeof bo);
          bo.method = (mlsys_remat_method)b;
          if (mlsys_remat_solve(&g, budget, &bo, &bs) == MLSYS_OK)
            CHECK_MSG(s.cost <= bs.cost * (1 + 1e-9), "%s: milp %.6g > %s %.6g", files[f], s.cost,
                      mlsys_remat_method_name((mlsys_remat_method)b), bs.cost);
          mlsys_remat_schedule_free(&bs);
        }
      }
      mlsys_remat_schedule_free(&s);
    }
    /* zero overhead at the checkpoint-all peak */
    {
      mlsys_remat_schedule s;
      memset(&o, 0, sizeof o);
      REQUIRE_OK(mlsys_remat_solve(&g, ck.peak_total, &o, &s));
      CHECK_NEAR(s.cost, total, 1e-9 * total);
      CHECK(s.optimal);
      mlsys_remat_schedule_free(&s);
    }
    mlsys_remat_schedule_free(&ck);
    mlsys_remat_graph_free(&g);
  }
}

/* The LP relaxation's bound is below every feasible schedule's cost, on both LP backends, and they agree on it. */
TEST(lp_bound_below_every_schedule_and_backends_agree) {
  mlsys_remat_graph g;
  mlsys_remat_schedule ck, lp1, lp2;
  mlsys_remat_opts o;
  uint64_t budget;
  int m;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/alexnet_b32.json", &g));
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  REQUIRE_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &ck));
  budget = mlsys_remat_fixed_total(&g) + mlsys_remat_single_op_bound(&g) + (ck.peak - mlsys_remat_single_op_bound(&g)) / 4;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_LP_ROUND;
  o.backend = MLSYS_SOLVER_LPSOLVE;
  o.time_limit = NEVER_BINDS;   /* the LP must finish: its bound is the oracle below */
  REQUIRE_OK(mlsys_remat_solve(&g, budget, &o, &lp1));
  REQUIRE(!isnan(lp1.bound));
  if (mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) {
    o.backend = MLSYS_SOLVER_CBC;
    REQUIRE_OK(mlsys_remat_solve(&g, budget, &o, &lp2));
    CHECK_NEAR(lp2.bound, lp1.bound, 1e-6 * lp1.bound);
    mlsys_remat_schedule_free(&lp2);
  }
  for (m = 0; m < MLSYS_REMAT_METHOD_COUNT; m++) {
    mlsys_remat_schedule s;
    memset(&o, 0, sizeof o);
    o.method = (mlsys_remat_method)m;
    o.time_limit = 20;
    if (mlsys_remat_solve(&g, budget, &o, &s) == MLSYS_OK)
      CHECK_MSG(s.cost >= lp1.bound * (1 - 1e-9), "%s cost %.9g below the LP bound %.9g",
                mlsys_remat_method_name((mlsys_remat_method)m), s.cost, lp1.bound);
    mlsys_remat_schedule_free(&s);
  }
  mlsys_remat_schedule_free(&lp1);
  mlsys_remat_schedule_free(&ck);
  mlsys_remat_graph_free(&g);
}

TEST_MAIN()
