/* Tests for section 9 of mlsys_remat.h: MONeT (solver graph and catalogue, exact simulator, staged ILP).

   Oracles from outside the ILP: a dynamic program over stages that tries every recompute set, keep set, forward
   implementation, in-place choice and backward path (the ILP's whole decision space) and prices each stage with
   the exact simulator of Alg. 3/4; the Checkmate MILP and simulator on the lowered schedule; and sums computed
   here from the catalogue. Budgets are in bytes with mem_unit = 1 and integer costs with cost_unit = 1, so the
   ILP's rounding (A3.8.4) plays no part in the exact comparisons. No verdict depends on time: the limits below
   never bind on these sizes. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

#include <sys/wait.h>
#include <unistd.h>

#define NEVER_BINDS 600.0

#include "tests/remat_monet_brute.h"

/* The ILP's answer or INFINITY when it proves infeasibility; checks soundness (valid, peak ≤ budget, simulated
   cost = objective) on every solution. */
static const mlsys_remat_graph *plan_graph;   /* when set, every solution is also lowered to a plan and replayed */
static int plans_checked;
static double ilp_cost(const mlsys_remat_monet_graph *sg, uint64_t budget, mlsys_remat_monet_schedule *keep) {
  mlsys_remat_monet_opts o = exact_opts();
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_sim sim;
  mlsys_status st = mlsys_remat_monet_solve(sg, budget, &o, &s);
  double c;
  if (st == MLSYS_ERR_INFEASIBLE) { CHECK_CONTAINS(mlsys_last_error(), "no schedule fits"); return INFINITY; }
  CHECK_OK(st);
  if (st != MLSYS_OK) return NAN;
  CHECK(s.optimal);
  CHECK_OK(mlsys_remat_monet_simulate(sg, &s, MLSYS_REMAT_MONET_SIM_SWEEP, &sim));
  CHECK(sim.peak == s.peak_sweep);
  CHECK(sim.valid);
  CHECK(sim.peak <= budget);
  CHECK_NEAR(sim.cost, s.objective, 1e-6);
  CHECK_NEAR(sim.cost, s.cost, 1e-6);
  CHECK_OK(mlsys_remat_monet_simulate(sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim));
  CHECK(sim.peak == s.peak && s.peak <= s.peak_sweep);
  CHECK_NEAR(sim.cost, s.cost, 1e-6);
  if (plan_graph) {   /* the plan's own replay (liveness from its steps) peaks where the eager simulator does */
    mlsys_remat_monet_plan p;
    double pc = 0;
    CHECK_OK(mlsys_remat_monet_plan_build(plan_graph, sg, &s, &p));
    CHECK_MSG(p.peak == s.peak, "plan peak %llu, simulated %llu", (unsigned long long)p.peak, (unsigned long long)s.peak);
    for (int k = 0; k < p.nsteps; k++) {
      const mlsys_remat_monet_step *e = &p.steps[k];
      if (e->op != MLSYS_REMAT_OP_COMPUTE) continue;
      if (e->node < sg->V) {
        CHECK(e->impl == s.F[e->stage * sg->V + e->node] && e->in_place == s.IP[e->stage * sg->V + e->node]);
        pc += e->stage == 0 ? sg->impl[sg->impl_off[e->node] + e->impl].cost : sg->impl[sg->impl_off[e->node] + e->impl].recompute_cost;
      } else {
        CHECK(e->impl == s.M[e->stage]);
        pc += sg->path_cost[sg->path_off[e->stage] + e->impl];
      }
    }
    CHECK_NEAR(pc, s.cost, 1e-6);   /* the plan runs exactly the schedule's ops */
    plans_checked++;
    mlsys_remat_monet_plan_free(&p);
  }
  c = s.cost;
  if (keep) *keep = s; else mlsys_remat_monet_schedule_free(&s);
  return c;
}

/* the first three layers of tests/data/graphs/smallcnn_b8.json (sizes and FLOPs), then a small classifier head */
static const layer smallcnn3[] = {
    {"Conv2d", 3538944, 262144, 0, {0}}, {"ReLU", 65536, 262144, 1, {0}}, {"MaxPool2d", 16384, 196608, 1, {1}}};
static const layer chain_a[] = {
    {"Conv2d", 40, 4096, 0, {0}}, {"ReLU", 4, 4096, 1, {0}}, {"Conv2d", 30, 2048, 1, {1}}, {"ReLU", 3, 2048, 1, {2}}};
static const layer chain_b[] = {
    {"Linear", 20, 1024, 0, {0}}, {"ReLU", 2, 1024, 1, {0}}, {"MaxPool2d", 2, 512, 1, {1}}};
static const layer chain_c[] = {   /* six equal layers: Checkmate's unit chain with operator names */
    {"Linear", 10, 1024, 0, {0}}, {"ReLU", 1, 1024, 1, {0}}, {"Linear", 10, 1024, 1, {1}},
    {"ReLU", 1, 1024, 1, {2}},    {"Linear", 10, 1024, 1, {3}}, {"ReLU", 1, 1024, 1, {4}}};
static const layer dag_b[] = {   /* two skips over a chain of six */
    {"Linear", 10, 1024, 0, {0}}, {"ReLU", 1, 1024, 1, {0}}, {"Linear", 10, 1024, 1, {1}},
    {"Add", 1, 1024, 2, {1, 2}},   {"Linear", 10, 1024, 1, {3}}, {"Add", 1, 1024, 2, {3, 4}}};
static const layer dag_a[] = {   /* a skip connection: f3 reads f0 and f2 */
    {"Conv2d", 10, 2048, 0, {0}}, {"ReLU", 2, 2048, 1, {0}}, {"Conv2d", 10, 2048, 1, {1}}, {"Add", 1, 2048, 2, {0, 2}}};

/* budgets from fixed memory to the store-all peak (the unbounded ILP's simulated peak), in k steps */
static void exact_sweep(const layer *L, int n, unsigned mode, int k, int exact) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s;
  uint64_t hi, lo;
  int compared = 0, feasible = 0, nbf = 0, traded = 0, eager_better = 0;
  double base, prev = INFINITY;
  memset(&c, 0, sizeof c);
  c.mode = mode;
  REQUIRE_OK(build(L, n, 1000, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  REQUIRE(sg.V <= BF_MAXV);
  plan_graph = &g;
  REQUIRE(ilp_cost(&sg, (uint64_t)1 << 40, &s) < INFINITY);
  hi = s.peak;
  base = s.cost;
  mlsys_remat_monet_schedule_free(&s);
  {   /* the smallest budget with any schedule (bisection on the brute force); sweep from just below it */
    uint64_t a = sg.fixed, b = hi;
    while (a < b) { uint64_t m = a + (b - a) / 2; if (brute_force(&sg, m, 1) < INFINITY) b = m; else a = m + 1; }
    lo = a > sg.fixed ? a - 1 : a;
  }
  CHECK(lo < hi);
  for (int i = 0; i <= k; i++) {
    uint64_t B = i == 0 ? lo : lo + 1 + (hi - lo - 1) * (uint64_t)(i - 1) / (uint64_t)(k - 1);
    double bf = brute_force(&sg, B, 1), ilp = ilp_cost(&sg, B, NULL), bfe = brute_force(&sg, B, 0);
    if (exact) CHECK_MSG(ilp == bf, "mode %u budget %llu: ILP %g, brute force %g", mode, (unsigned long long)B, ilp, bf);
    else CHECK_MSG(ilp >= bf, "mode %u budget %llu: ILP %g below the optimum %g", mode, (unsigned long long)B, ilp, bf);
    CHECK(bfe <= bf);   /* eager freeing never needs more memory than the sweep accounting */
    eager_better += bfe < bf;
    if (ilp != bf && bf < INFINITY && getenv("MONET_VERBOSE")) {   /* which row rejects the true optimum */
      mlsys_remat_monet_schedule w, x;
      mlsys_remat_monet_opts o = exact_opts();
      bf_schedule(&sg, &w);
      o.warm_start = &w;
      printf("    warm start: %s\n", mlsys_remat_monet_solve(&sg, B, &o, &x) == MLSYS_OK ? "accepted" : mlsys_last_error());
      for (int t = 0; t < sg.T; t++) {
        printf("      t%d M%d R", t, w.M[t]);
        for (int v = 0; v < sg.V; v++) printf("%d", w.R[t * sg.V + v]);
        printf(" S");
        for (int v = 0; v < sg.V; v++) printf("%d", w.S[t * sg.V + v]);
        printf("\n");
      }
      mlsys_remat_monet_schedule_free(&w); mlsys_remat_monet_schedule_free(&x);
    }
    CHECK_MSG(ilp <= prev, "budget %llu: cost %g above the smaller budget's %g", (unsigned long long)B, ilp, prev);
    prev = ilp;   /* budgets ascend: the optimum never rises (spec 7.1 test 4) */
    compared++;
    feasible += ilp < INFINITY;
    nbf += bf < INFINITY;
    traded += ilp < INFINITY && ilp > base;
  }
  CHECK(compared == k + 1);
  CHECK(nbf == k);          /* all but the first budget (just below the minimum) have a schedule */
  if (exact) CHECK(feasible == nbf);
  if (getenv("MONET_VERBOSE"))
    printf("    mode %u V %d T %d budgets %llu..%llu: brute force feasible %d, ILP feasible %d, with recomputation %d, "
           "eager optimum below the ILP's %d\n", mode, sg.V, sg.T, (unsigned long long)lo, (unsigned long long)hi, nbf,
           feasible, traded, eager_better);
  plan_graph = NULL;
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

TEST(chain_ilp_equals_brute_force_noop) {
  exact_sweep(chain_a, 4, 0, 12, 1);
  exact_sweep(chain_b, 3, 0, 12, 1);
  exact_sweep(smallcnn3, 3, 0, 12, 1);
  exact_sweep(chain_c, 6, 0, 12, 1);
}
TEST(chain_ilp_equals_brute_force_monet) {
  exact_sweep(chain_b, 3, MLSYS_REMAT_MONET_ALL, 12, 1);
  exact_sweep(smallcnn3, 3, MLSYS_REMAT_MONET_ALL, 12, 1);
  exact_sweep(chain_a, 4, MLSYS_REMAT_MONET_CONV | MLSYS_REMAT_MONET_OUTACT | MLSYS_REMAT_MONET_INPLACE, 10, 1);
}
TEST(dag_ilp_sound) {
  plans_checked = 0;
  exact_sweep(dag_a, 4, 0, 10, 0);
  exact_sweep(dag_a, 4, MLSYS_REMAT_MONET_ALL, 10, 0);
  exact_sweep(dag_b, 6, 0, 10, 0);
  CHECK(plans_checked >= 25);   /* every feasible solution was lowered and replayed */
}

/* A plan with a step removed or reordered is rejected with the reason. */
TEST(plan_validation_names_problems) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_plan p;
  int first_compute = -1, first_free = -1;
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(build(chain_a, 4, 100, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  REQUIRE(ilp_cost(&sg, (uint64_t)1 << 40, &s) < INFINITY);
  REQUIRE_OK(mlsys_remat_monet_plan_build(&g, &sg, &s, &p));
  CHECK_OK(mlsys_remat_monet_plan_validate(&g, &sg, &p, NULL));
  for (int k = 0; k < p.nsteps; k++) {
    if (p.steps[k].op == MLSYS_REMAT_OP_COMPUTE && first_compute < 0) first_compute = k;
    if (p.steps[k].op == MLSYS_REMAT_OP_FREE && first_free < 0) first_free = k;
  }
  REQUIRE(first_compute == 0 && first_free > 0);
  p.steps[0].impl = 7;
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &sg, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "has no implementation 7");
  p.steps[0].impl = 0;
  p.steps[first_free].op = MLSYS_REMAT_OP_COMPUTE;   /* recompute a live value instead of freeing it */
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &sg, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "over a live copy");
  p.steps[first_free].op = MLSYS_REMAT_OP_FREE;
  p.nsteps--;   /* the last backward node never runs (its step is last or followed only by frees) */
  while (p.nsteps > 0 && p.steps[p.nsteps - 1].op == MLSYS_REMAT_OP_FREE) p.nsteps--;
  if (p.nsteps > 0) p.nsteps--;
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &sg, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "never runs");
  mlsys_remat_monet_plan_free(&p);
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}


/* A warm start: an optimal schedule is accepted and returned at the same cost; one the memory rows reject is a
   named error that says which row (the tool that located the eager/sweep difference in docs/remat.md). */
TEST(warm_start) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s, loose, t;
  mlsys_remat_monet_opts o = exact_opts();
  uint64_t B;
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(build(chain_a, 4, 100, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  REQUIRE(ilp_cost(&sg, (uint64_t)1 << 40, &loose) < INFINITY);
  B = loose.peak_sweep - 1024;
  REQUIRE(ilp_cost(&sg, B, &s) < INFINITY);
  o.warm_start = &s;
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, B, &o, &t));
  CHECK_NEAR(t.cost, s.cost, 1e-9);
  mlsys_remat_monet_schedule_free(&t);
  o.warm_start = &loose;   /* the unbounded optimum peaks above B */
  CHECK_EQ_INT(mlsys_remat_monet_solve(&sg, B, &o, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "violates row c11");
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_schedule_free(&loose);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* ---- (2) MONeT never needs more than MONeT-NoOp: its catalogue contains NoOp's choices ---- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(uint64_t n) {
  rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
  return rng_state % n;
}
TEST(monet_at_most_noop_random) {
  static const char *ops[] = {"Conv2d", "ReLU", "MaxPool2d", "Linear"};
  int instances = 0, solved = 0, strictly = 0;
  for (int inst = 0; inst < 14; inst++) {
    layer L[5];
    int n = 3 + (int)rnd(3);
    mlsys_remat_graph g;
    mlsys_remat_monet_graph noop, full;
    mlsys_remat_monet_catalogue c0, c1;
    mlsys_remat_monet_schedule s;
    uint64_t hi;
    for (int i = 0; i < n; i++) {
      L[i].op = ops[rnd(4)];
      L[i].cost = (double)(2 + 2 * rnd(20));   /* even, so that the fast algorithm's half cost stays integral */
      L[i].mem = 1024 * (1 + rnd(4));
      L[i].nd = i > 0; L[i].d[0] = i - 1;
      if (strcmp(L[i].op, "ReLU") == 0 && i > 0) L[i].mem = L[i - 1].mem;   /* element-wise: same size */
    }
    memset(&c0, 0, sizeof c0); memset(&c1, 0, sizeof c1);
    c1.mode = MLSYS_REMAT_MONET_ALL;
    c1.conv_fast_cost = 0.5;
    REQUIRE_OK(build(L, n, 512, &g));
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c0, &noop));
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c1, &full));
    REQUIRE(ilp_cost(&noop, (uint64_t)1 << 40, &s) < INFINITY);
    hi = s.peak_sweep;
    mlsys_remat_monet_schedule_free(&s);
    for (int k = 0; k < 4; k++) {
      uint64_t B = noop.fixed + (hi - noop.fixed) * (uint64_t)(4 + k) / 7u;
      double a = ilp_cost(&noop, B, NULL), b = ilp_cost(&full, B, NULL);
      CHECK_MSG(b <= a, "instance %d budget %llu: MONeT %g above NoOp %g", inst, (unsigned long long)B, b, a);
      solved += a < INFINITY;
      strictly += b < a && a < INFINITY;
    }
    instances++;
    mlsys_remat_monet_graph_free(&noop); mlsys_remat_monet_graph_free(&full); mlsys_remat_graph_free(&g);
  }
  CHECK(instances == 14);
  CHECK(solved >= 14);    /* the top budgets are NoOp-feasible: the comparison is not vacuous */
  CHECK(strictly >= 5);   /* and the catalogue does buy something on these */
  if (getenv("MONET_VERBOSE")) printf("    %d NoOp-feasible budgets, MONeT strictly cheaper at %d\n", solved, strictly);
}

/* ---- (3) MONeT-NoOp against Checkmate on the same graph ---- */
TEST(noop_against_checkmate) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_schedule s;
  uint64_t hi;
  int lowered = 0, cm_better = 0;
  REQUIRE_OK(build(chain_c, 6, 1000, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, NULL, &sg));
  REQUIRE(ilp_cost(&sg, (uint64_t)1 << 40, &s) < INFINITY);
  hi = s.peak_sweep;
  {   /* unbounded: both run every node once */
    mlsys_remat_opts co;
    mlsys_remat_schedule cs;
    memset(&co, 0, sizeof co);
    co.time_limit = NEVER_BINDS;
    REQUIRE_OK(mlsys_remat_solve(&g, (uint64_t)1 << 40, &co, &cs));
    CHECK_NEAR(cs.cost, s.cost, 1e-9);
    CHECK_NEAR(cs.cost, cs.baseline_cost, 1e-9);
    mlsys_remat_schedule_free(&cs);
  }
  mlsys_remat_monet_schedule_free(&s);
  for (uint64_t B = hi; B + 256 > sg.fixed + 3 * 1024; B -= 256) {
    mlsys_remat_schedule low, cs;
    mlsys_remat_opts co;
    mlsys_status st;
    if (!(ilp_cost(&sg, B, &s) < INFINITY)) break;
    /* the lowered schedule is a valid Checkmate schedule of the same cost */
    REQUIRE_OK(mlsys_remat_monet_to_checkmate(&g, &sg, &s, &low));
    CHECK_NEAR(low.cost, s.cost, 1e-9);
    lowered++;
    /* so the Checkmate MILP at the lowered schedule's (Checkmate-accounted) peak is at most as expensive */
    memset(&co, 0, sizeof co);
    co.time_limit = NEVER_BINDS;
    st = mlsys_remat_solve(&g, low.peak_total, &co, &cs);
    CHECK_OK(st);
    if (st == MLSYS_OK) {
      CHECK_MSG(cs.cost <= s.cost + 1e-9, "budget %llu: Checkmate %g above the lowered MONeT-NoOp %g",
                (unsigned long long)low.peak_total, cs.cost, s.cost);
      cm_better += cs.cost < s.cost - 1e-9;
      mlsys_remat_schedule_free(&cs);
    }
    mlsys_remat_schedule_free(&low);
    mlsys_remat_monet_schedule_free(&s);
  }
  CHECK(lowered >= 3);
  if (getenv("MONET_VERBOSE")) printf("    %d budgets lowered, Checkmate cheaper at %d\n", lowered, cm_better);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* ---- (4) unbounded and infeasible budgets on the real smallcnn graph ---- */
TEST(smallcnn_unbounded_and_infeasible) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  mlsys_status st;
  double want = 0;
  int ints = 0, convs = 0;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  CHECK_EQ_INT(sg.V, 11 + 5);   /* 3 ReLU masks, 2 MaxPool indices */
  CHECK_EQ_INT(sg.T, 11);
  for (int v = 0; v < sg.V; v++) {
    double m = INFINITY;
    if (sg.parent[v] >= 0) {   /* the pool node's bytes hold its float output and PyTorch's int64 indices: 12/element */
      ints++;
      CHECK(sg.mem[v] == (sg.int_kind[v] == 'm' ? sg.mem[sg.parent[v]] / 32 : sg.mem[sg.parent[v]] / 12));
      continue;
    }
    convs += sg.impl_off[v + 1] - sg.impl_off[v] == 2;
    for (int l = sg.impl_off[v]; l < sg.impl_off[v + 1]; l++) if (sg.impl[l].cost < m) m = sg.impl[l].cost;
    want += m;
  }
  CHECK_EQ_INT(ints, 5);
  CHECK_EQ_INT(convs, 4);   /* conv1, conv2, fc1, fc2 */
  for (int t = 1; t < sg.T; t++) {
    double m = INFINITY;
    for (int k = sg.path_off[t]; k < sg.path_off[t + 1]; k++) if (sg.path_cost[k] < m) m = sg.path_cost[k];
    want += m;
  }
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, (uint64_t)1 << 40, &o, &s));
  CHECK(s.optimal);
  CHECK_NEAR(s.cost, want, 1e-6 * want);
  for (int t = 1; t < sg.T; t++)
    for (int v = 0; v < sg.V; v++)
      if (s.R[t * sg.V + v]) CHECK(sg.impl[sg.impl_off[v] + s.F[t * sg.V + v]].recompute_cost == 0);   /* only free ops */
  for (int v = 0; v < sg.V; v++)
    if (sg.impl_off[v + 1] - sg.impl_off[v] == 2) CHECK_EQ_INT(s.F[v], 1);   /* the faster algorithm */
  mlsys_remat_monet_schedule_free(&s);
  {   /* a tight budget on the real graph: the plan of the solution replays to the simulated peak */
    mlsys_remat_monet_plan p;
    mlsys_remat_monet_sim sim;
    REQUIRE_OK(mlsys_remat_monet_solve(&sg, 1286672, &o, &s));   /* the CLI's 80 % budget, rounded to its peak */
    CHECK(s.peak <= 1286672);
    REQUIRE_OK(mlsys_remat_monet_plan_build(&g, &sg, &s, &p));
    CHECK(p.peak == s.peak);
    CHECK_OK(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim));
    CHECK(sim.peak == p.peak);
    mlsys_remat_monet_plan_free(&p);
    mlsys_remat_monet_schedule_free(&s);
  }
  st = mlsys_remat_monet_solve(&sg, sg.fixed + 1000, &o, &s);
  CHECK_EQ_INT(st, MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "no schedule fits");
  CHECK(s.R == NULL);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* ---- (5) bad input is a named error ---- */
TEST(bad_catalogue_and_schedules) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_override ov[2];
  mlsys_remat_monet_impl im[2] = {{5, 5, 0, 0}, {-1, 3, 0, 0}};
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_sim sim;
  REQUIRE_OK(build(chain_a, 4, 100, &g));
  memset(&c, 0, sizeof c);
  c.mode = 64;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "unknown mode bits");
  c.mode = 0; c.conv_fast_cost = -1;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "conv_fast_cost");
  c.conv_fast_cost = 0;
  ov[0].node = 5; ov[0].nimpl = 1; ov[0].impl = im;   /* node 5 is a B node */
  c.noverride = 1; c.override_impl = ov;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not an F node");
  ov[0].node = 0; ov[0].nimpl = 0;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "0 implementations");
  ov[0].nimpl = 2;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "implementation 1 has cost -1");
  ov[0].nimpl = 1; ov[1] = ov[0]; c.noverride = 2;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "overridden twice");
  /* a valid override is used as given */
  c.noverride = 1;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  CHECK(sg.impl[sg.impl_off[0]].cost == 5 && sg.impl_off[1] - sg.impl_off[0] == 1);
  /* schedules the simulator rejects, each with its reason */
  REQUIRE_OK(mlsys_remat_monet_schedule_alloc(sg.V, sg.T, &s));
  CHECK_EQ_INT(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim), MLSYS_ERR_ARG);
  CHECK(!sim.valid);
  CHECK_CONTAINS(sim.why, "stage 0: forward node 0 not computed");
  for (int v = 0; v < sg.V; v++) { s.R[v] = 1; s.F[v] = 0; }
  s.R[sg.V + 2] = 1; s.F[sg.V + 2] = 0;   /* stage 1 recomputes f2 without its input f1 */
  CHECK_EQ_INT(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim), MLSYS_ERR_ARG);
  CHECK_CONTAINS(sim.why, "stage 1: node 2 needs x_1");
  s.R[sg.V + 2] = 0;
  CHECK_EQ_INT(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim), MLSYS_ERR_ARG);
  CHECK_CONTAINS(sim.why, "backward path 0 needs x_");   /* nothing kept for the first backward op */
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
  {   /* graphs MONeT cannot stage */
    mlsys_remat_graph h;
    const char *txt = "remat-graph 1\nnodes 3\n0 F 1 8 - a :\n1 O 1 8 - b : 0\n2 L 1 8 - l : 1\n";
    REQUIRE_OK(mlsys_remat_graph_parse(txt, strlen(txt), "t", &h));
    CHECK_EQ_INT(mlsys_remat_monet_graph_build(&h, NULL, &sg), MLSYS_ERR_UNSUPPORTED);
    CHECK_CONTAINS(mlsys_last_error(), "kind O");
    mlsys_remat_graph_free(&h);
  }
}

/* ---- baselines as MONeT schedules: store-all against Checkmate's checkpoint-all, Chen's √n ---- */
static const char *real_graphs[] = {"smallcnn_b8", "alexnet_b32", "googlenet_b2", "gpt2_b4", "mlp_b64",
                                    "mobilenet_v2_b2", "resnet50_b2", "unet_b2", "vgg16_b2", "vgg19_b2"};
/* Σ forward (default implementations, IntNodes aside) and Σ backward (graph paths) */
static void fwd_bwd(const mlsys_remat_monet_graph *sg, double *fwd, double *bwd) {
  *fwd = *bwd = 0;
  for (int v = 0; v < sg->V; v++) if (sg->parent[v] < 0) *fwd += sg->impl[sg->impl_off[v]].cost;
  for (int t = 1; t < sg->T; t++) *bwd += sg->path_cost[sg->path_off[t]];
}
static void check_baseline_plan(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                const mlsys_remat_monet_schedule *s, const char *what) {
  mlsys_remat_monet_plan p;
  uint64_t peak = 0;
  double cost = 0;
  REQUIRE_OK(mlsys_remat_monet_plan_build(g, sg, s, &p));
  CHECK_OK(mlsys_remat_monet_plan_validate(g, sg, &p, &peak));
  CHECK_MSG(peak == s->peak, "%s: replay peak %llu, simulated %llu", what, (unsigned long long)peak,
            (unsigned long long)s->peak);
  for (int k = 0; k < p.nsteps; k++) {
    const mlsys_remat_monet_step *e = &p.steps[k];
    if (e->op != MLSYS_REMAT_OP_COMPUTE) continue;
    if (e->node < sg->V) cost += e->stage == 0 ? sg->impl[sg->impl_off[e->node] + e->impl].cost
                                               : sg->impl[sg->impl_off[e->node] + e->impl].recompute_cost;
    else cost += sg->path_cost[sg->path_off[e->stage] + e->impl];
  }
  CHECK_NEAR(cost, s->cost, 1e-9 * s->cost);
  mlsys_remat_monet_plan_free(&p);
}
/* Tab. 4.5's shape on the exported graphs (sizes do not depend on the batch): MONeT-NoOp's ILP is smaller than
   Checkmate's MILP in columns and rows, and MONeT's adds the catalogue's columns and rows to NoOp's. The thesis's
   figures (after Gurobi's presolve) are printed beside ours. */
TEST(ilp_sizes_tab_4_5_shape) {
  static const struct { const char *graph; long cm_cons, cm_vars, noop_cons, noop_vars, mn_cons, mn_vars; } tab[] = {
      {"googlenet_b2", 719327, 519252, 221630, 104673, 781747, 362640},
      {"resnet50_b2", 473592, 344659, 344652, 167238, 487842, 229431},
      {"mobilenet_v2_b2", 337316, 247033, 153828, 74579, 241478, 115047},
      {"unet_b2", 65715, 48744, 32273, 15982, 73624, 36548},
      {"vgg16_b2", 25334, 18968, 12772, 6306, 21918, 11234}};
  printf("\n  %-16s %22s %22s %22s   thesis (cons / vars): Checkmate, NoOp, MONeT\n", "graph",
         "Checkmate cols/rows", "NoOp cols/rows", "MONeT cols/rows");
  for (size_t gi = 0; gi < sizeof tab / sizeof tab[0]; gi++) {
    char path[128];
    mlsys_remat_graph g;
    mlsys_remat_model_size cm, sz[2];
    snprintf(path, sizeof path, "tests/data/graphs/%s.json", tab[gi].graph);
    REQUIRE_OK(mlsys_remat_graph_load(path, &g));
    REQUIRE_OK(mlsys_remat_milp_size(&g, 0, &cm));
    for (int k = 0; k < 2; k++) {
      mlsys_remat_monet_catalogue c;
      mlsys_remat_monet_graph sg;
      mlsys_remat_monet_opts o;
      mlsys_remat_monet_schedule s;
      memset(&c, 0, sizeof c);
      c.mode = k ? MLSYS_REMAT_MONET_ALL : 0;
      REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
      memset(&o, 0, sizeof o);
      o.size_only = &sz[k];
      REQUIRE_OK(mlsys_remat_monet_solve(&sg, UINT64_MAX / 4, &o, &s));
      CHECK(s.R == NULL);   /* nothing solved */
      mlsys_remat_monet_graph_free(&sg);
    }
    printf("  %-16s %10ld / %-10ld %10ld / %-10ld %10ld / %-10ld   %ld / %ld, %ld / %ld, %ld / %ld\n", tab[gi].graph,
           cm.binaries + cm.continuous, cm.rows, sz[0].binaries + sz[0].continuous, sz[0].rows,
           sz[1].binaries + sz[1].continuous, sz[1].rows, tab[gi].cm_cons, tab[gi].cm_vars, tab[gi].noop_cons,
           tab[gi].noop_vars, tab[gi].mn_cons, tab[gi].mn_vars);
    CHECK_MSG(sz[0].binaries + sz[0].continuous < cm.binaries + cm.continuous && sz[0].rows < cm.rows,
              "%s: NoOp's ILP is not smaller than Checkmate's", tab[gi].graph);
    CHECK_MSG(sz[0].binaries < sz[1].binaries && sz[0].rows < sz[1].rows, "%s: MONeT's ILP is not larger than NoOp's",
              tab[gi].graph);
    CHECK(sz[0].nonzeros > 0 && sz[1].nonzeros > sz[0].nonzeros);
    mlsys_remat_graph_free(&g);
  }
}

TEST(baselines_store_all_chen) {
  int compared = 0;
  for (size_t gi = 0; gi < sizeof real_graphs / sizeof real_graphs[0]; gi++) {
    char path[128];
    mlsys_remat_graph g;
    mlsys_remat_opts o;
    mlsys_remat_schedule all, low;
    snprintf(path, sizeof path, "tests/data/graphs/%s.json", real_graphs[gi]);
    REQUIRE_OK(mlsys_remat_graph_load(path, &g));
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    REQUIRE_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &all));
    for (int k = 0; k < 2; k++) {
      mlsys_remat_monet_catalogue c;
      mlsys_remat_monet_graph sg;
      mlsys_remat_monet_schedule sa, ch, c1, cn;
      double fwd, bwd;
      memset(&c, 0, sizeof c);
      c.mode = k ? MLSYS_REMAT_MONET_ALL : 0;
      if (mlsys_remat_monet_graph_build(&g, &c, &sg) != MLSYS_OK) {   /* e.g. O nodes: nothing to stage */
        CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_UNSUPPORTED);
        continue;
      }
      fwd_bwd(&sg, &fwd, &bwd);
      REQUIRE_OK(mlsys_remat_monet_store_all(&sg, &sa));
      CHECK_STR(sa.method, "store-all");
      CHECK_NEAR(sa.cost, fwd + bwd, 1e-9 * sa.cost);   /* nothing recomputed */
      CHECK(sa.peak <= sa.peak_sweep);
      check_baseline_plan(&g, &sg, &sa, real_graphs[gi]);
      if (k == 0) {   /* Checkmate's evaluator on the lowered schedule, and its checkpoint-all peak */
        REQUIRE_OK(mlsys_remat_monet_to_checkmate(&g, &sg, &sa, &low));
        CHECK_NEAR(low.cost, sa.cost, 1e-9 * sa.cost);
        CHECK_MSG(sa.peak == all.peak_total, "%s: store-all peak %llu, checkpoint-all %llu (lowered: %llu)",
                  real_graphs[gi], (unsigned long long)sa.peak, (unsigned long long)all.peak_total,
                  (unsigned long long)low.peak_total);
        compared++;
        mlsys_remat_schedule_free(&low);
      }
      REQUIRE_OK(mlsys_remat_monet_chen(&sg, 0, &ch));
      CHECK_STR(ch.method, "chen");
      CHECK_MSG(ch.cost <= 2 * fwd + bwd + 1e-9 * ch.cost, "%s: chen cost %g > 2·%g + %g", real_graphs[gi], ch.cost,
                fwd, bwd);
      CHECK(ch.cost >= sa.cost - 1e-9 * sa.cost);
      check_baseline_plan(&g, &sg, &ch, real_graphs[gi]);
      /* one segment per op keeps everything: store-all's cost; one segment recomputes from the inputs */
      REQUIRE_OK(mlsys_remat_monet_chen(&sg, 100000, &cn));
      CHECK_NEAR(cn.cost, sa.cost, 1e-9 * sa.cost);
      REQUIRE_OK(mlsys_remat_monet_chen(&sg, 1, &c1));
      CHECK(c1.cost <= 2 * fwd + bwd + 1e-9 * c1.cost);
      check_baseline_plan(&g, &sg, &c1, real_graphs[gi]);
      if (k == 0) printf("  %-16s store-all %.1f MiB (= checkpoint-all), chen %.1f MiB at %.3fx cost\n", real_graphs[gi],
                         sa.peak / 1048576.0, ch.peak / 1048576.0, ch.cost / sa.cost);
      mlsys_remat_monet_schedule_free(&sa); mlsys_remat_monet_schedule_free(&ch);
      mlsys_remat_monet_schedule_free(&c1); mlsys_remat_monet_schedule_free(&cn);
      mlsys_remat_monet_graph_free(&sg);
    }
    mlsys_remat_schedule_free(&all);
    mlsys_remat_graph_free(&g);
  }
  CHECK(compared >= 8);
  CHECK_EQ_INT(mlsys_remat_monet_chen(NULL, 0, NULL), MLSYS_ERR_ARG);
}

/* The built-in starts: without a warm start, every budget at or above what store-all needs in the ILP's rows gives
   a schedule, however early the solver is stopped. The stop here is a node limit of 1 (machine-independent: the
   root node runs, no branching), at store-all's requirement (its sweep peak plus at most one 1 KiB rounding unit
   per row term; checked by passing store-all as the warm start, which the rows would reject by name), for NoOp and
   full MONeT (whose NoOp pre-solve is stopped the same way). The schedule is never dearer than store-all. */
TEST(builtin_start_gives_a_schedule) {
  /* mobilenet_v2's full ILP (its NoOp root LP alone: minutes, 3.7 GB) is too big for a unit test; bench/RESULTS.md
     §14 has it returning a schedule at store-all's peak where it returned none before */
  static const char *graphs[] = {"tests/data/graphs/smallcnn_b8.json", "tests/data/graphs/mlp_b64.json"};
  for (int gi = 0; gi < 2; gi++) {
    mlsys_remat_graph g;
    REQUIRE_OK(mlsys_remat_graph_load(graphs[gi], &g));
    for (int k = 0; k < 2; k++) {
      mlsys_remat_monet_catalogue c;
      mlsys_remat_monet_graph sg;
      mlsys_remat_monet_schedule sa, s;
      mlsys_remat_monet_opts o;
      uint64_t need;
      memset(&c, 0, sizeof c);
      c.mode = k ? MLSYS_REMAT_MONET_ALL : 0;
      REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
      REQUIRE_OK(mlsys_remat_monet_store_all(&sg, &sa));
      need = sa.peak_sweep + 1024ull * (uint64_t)(2 * sg.V + 8);
      memset(&o, 0, sizeof o);
      o.time_limit = NEVER_BINDS;
      o.max_nodes = 1;
      o.warm_start = &sa;
      CHECK_OK(mlsys_remat_monet_solve(&sg, need, &o, &s));   /* the rows accept store-all there */
      if (s.R) mlsys_remat_monet_schedule_free(&s);
      o.warm_start = NULL;
      CHECK_OK(mlsys_remat_monet_solve(&sg, need, &o, &s));
      if (s.R) {
        CHECK(s.peak <= need && s.peak_sweep <= need);
        CHECK_MSG(s.cost <= sa.cost * (1 + 1e-4), "%s mode %u: %g, store-all %g", graphs[gi], c.mode, s.cost, sa.cost);
        mlsys_remat_monet_schedule_free(&s);
      }
      o.max_nodes = -1;
      CHECK_EQ_INT(mlsys_remat_monet_solve(&sg, need, &o, &s), MLSYS_ERR_ARG);
      CHECK_CONTAINS(mlsys_last_error(), "node limit");
      mlsys_remat_monet_schedule_free(&sa);
      mlsys_remat_monet_graph_free(&sg);
    }
    mlsys_remat_graph_free(&g);
  }
}

/* ---- the command: mlsys remat solve --method monet|monet-noop ---- */
static const char *bin(void) {
  const char *b = getenv("MLSYS_BIN");
  return b && *b ? b : "build/mlsys";
}
static int run_cli(const char *args, char **out) {
  char cmd[1024], path[] = "/tmp/mlsys_monet_outXXXXXX";
  size_t len;
  int fd = mkstemp(path), status;
  if (fd < 0) return -1;
  close(fd);
  snprintf(cmd, sizeof cmd, "%s %s >%s 2>/dev/null", bin(), args, path);
  status = system(cmd);
  if (mlsys_read_file(path, out, &len) != MLSYS_OK) *out = NULL;
  unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
TEST(cli_monet_json) {
  char *out = NULL;
  mlsys_json_doc doc;
  const mlsys_json *o, *impl;
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts mo;
  mlsys_remat_monet_schedule s;
  uint64_t budget;
  int rc, nondefault = 0;
  static const char *keys[] = {"status", "method", "compute_cost", "baseline_cost", "overhead", "peak_memory",
                               "peak_memory_ilp", "fixed_memory", "budget", "optimal", "recomputations",
                               "implementations"};
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 80% --method monet --json "
               "--time-limit 600", &out);
  CHECK_EQ_INT(rc, 0);
  REQUIRE(out);
  REQUIRE_OK(mlsys_json_parse(out, strlen(out), "stdout", &doc));
  o = doc.root;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) CHECK_MSG(mlsys_json_get(o, keys[k]) != NULL, "key %s", keys[k]);
  CHECK_STR(mlsys_json_get(o, "status")->str, "optimal");
  CHECK_STR(mlsys_json_get(o, "method")->str, "monet");
  budget = mlsys_json_get(o, "budget")->u64;
  CHECK(mlsys_json_get(o, "peak_memory")->u64 <= budget);
  CHECK(mlsys_json_get(o, "peak_memory")->u64 <= mlsys_json_get(o, "peak_memory_ilp")->u64);
  impl = mlsys_json_get(o, "implementations");
  REQUIRE(impl && impl->type == MLSYS_JSON_ARRAY);
  CHECK_EQ_INT(impl->count, 21);   /* one per graph node; IntNodes are implementation details */
  for (int k = 0; k < impl->count; k++) {
    const mlsys_json *e = &impl->items[k], *f = mlsys_json_get(e, "forward"), *b = mlsys_json_get(e, "backward");
    CHECK(f || b);
    nondefault += (f && strcmp(f->str, "default") != 0) || (b && strcmp(b->str, "graph") != 0);
  }
  CHECK(nondefault >= 1);
  {   /* the plan: one compute step per backward node, every forward node computed in stage 0 */
    const mlsys_json *plan = mlsys_json_get(o, "plan");
    int bwd = 0, fwd0 = 0;
    REQUIRE(plan && plan->type == MLSYS_JSON_ARRAY);
    for (int k = 0; k < plan->count; k++) {
      const mlsys_json *e = &plan->items[k];
      if (strcmp(mlsys_json_get(e, "op")->str, "compute") != 0) continue;
      CHECK(mlsys_json_get(e, "impl") != NULL);
      bwd += strncmp(mlsys_json_get(e, "node")->str, "grad_", 5) == 0;
      fwd0 += mlsys_json_get(e, "stage")->i64 == 0 && strchr(mlsys_json_get(e, "node")->str, '.') == NULL;
    }
    CHECK_EQ_INT(bwd, 10);
    CHECK_EQ_INT(fwd0, 11);
  }
  /* the library at the same budget agrees (same ILP; costs up to the default cost unit's rounding) */
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  memset(&mo, 0, sizeof mo);
  mo.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, budget, &mo, &s));
  CHECK_NEAR(mlsys_json_get(o, "compute_cost")->num, s.cost, 1e-4 * s.cost);
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
  mlsys_json_doc_free(&doc);
  mlsys_free(out);
  /* NoOp does not fit there (the catalogue is what makes it fit): exit 1, status infeasible */
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 80% --method monet-noop --json "
               "--time-limit 600", &out);
  CHECK_EQ_INT(rc, 1);
  REQUIRE(out);
  REQUIRE_OK(mlsys_json_parse(out, strlen(out), "stdout", &doc));
  CHECK_STR(mlsys_json_get(doc.root, "status")->str, "infeasible");
  CHECK_CONTAINS(mlsys_json_get(doc.root, "error")->str, "no schedule fits");
  mlsys_json_doc_free(&doc);
  mlsys_free(out);
}

TEST_MAIN()
