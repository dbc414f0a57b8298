/* Tests for MONeT's catalogue additions (mlsys_remat.h section 9, issue 23): the conv/linear backward algorithm
   path 'c', BatchNorm and ReLU6 output-activated paths, the BN recompute factor, the param-grad/input-grad split
   (MLSYS_REMAT_MONET_SPLIT), the ablation modes and the greedy post-optimisation to the fastest conv.

   Oracles: the brute-force DP of tests/remat_monet_brute.h (every recompute set, keep set,
   implementation, in-place choice and path, priced by the exact simulator) against the ILP on chains; a peak
   computed by hand for the split; the inclusion of the ablations' decision spaces (all ⊇ one family ⊇ NoOp); and
   the ILP's optimum as a lower bound of the greedy post-optimisation; backward paths from B nodes' measured
   impls (ILP = brute force again) and the conv workspace from shapes (a geometry computed by hand, every conv
   of two exported graphs against examples/cnn_kernels.h's buffer size). Budgets in bytes with mem_unit = 1 and
   integer costs with cost_unit = 1, so the ILP's rounding plays no part. No verdict depends on time. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"
#include "examples/cnn_kernels.h"

#include <sys/wait.h>
#include <unistd.h>

#define NEVER_BINDS 600.0

#include "tests/remat_monet_brute.h"

/* The ILP's optimum or INFINITY when infeasible; every solution is checked (valid, within budget in both
   accountings, objective = simulated cost) and lowered to a plan whose replay peaks at the eager simulation and
   whose compute steps add up to the cost (a split path's cost is counted once, at its first half). */
static int split_steps, inexact;
static double ilp_cost(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg, uint64_t budget,
                       mlsys_remat_monet_schedule *keep) {
  mlsys_remat_monet_opts o = exact_opts();
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_sim sim;
  o.no_recompute = bf_no_recompute;
  mlsys_remat_monet_plan p;
  mlsys_status st = mlsys_remat_monet_solve(sg, budget, &o, &s);
  double c, pc = 0;
  if (st == MLSYS_ERR_INFEASIBLE) return INFINITY;
  CHECK_OK(st);
  if (st != MLSYS_OK) return NAN;
  CHECK(s.optimal);
  CHECK_OK(mlsys_remat_monet_simulate(sg, &s, MLSYS_REMAT_MONET_SIM_SWEEP, &sim));
  CHECK(sim.peak <= budget && sim.peak == s.peak_sweep);
  CHECK_NEAR(sim.cost, s.objective, 1e-6);
  CHECK(s.peak <= s.peak_sweep);
  if (g) {
    CHECK_OK(mlsys_remat_monet_plan_build(g, sg, &s, &p));
    CHECK_MSG(p.peak == s.peak, "plan peak %llu, simulated %llu", (unsigned long long)p.peak, (unsigned long long)s.peak);
    for (int k = 0; k < p.nsteps; k++) {
      const mlsys_remat_monet_step *e = &p.steps[k];
      if (e->op != MLSYS_REMAT_OP_COMPUTE) continue;
      if (e->node < sg->V)
        pc += e->stage == 0 ? sg->impl[sg->impl_off[e->node] + e->impl].cost : sg->impl[sg->impl_off[e->node] + e->impl].recompute_cost;
      else if (e->half != 2)
        pc += sg->path_cost[sg->path_off[e->stage] + e->impl];
      split_steps += e->half != 0;
    }
    CHECK_NEAR(pc, s.cost, 1e-6);
    mlsys_remat_monet_plan_free(&p);
  }
  c = s.cost;
  if (keep) *keep = s; else mlsys_remat_monet_schedule_free(&s);
  return c;
}

static const layer chain_cbr[] = {   /* Linear, Conv2d, BatchNorm2d, ReLU: the path families of a ResNet block */
    {"Linear", 8, 1024, 0, {0}}, {"Conv2d", 40, 2048, 1, {0}}, {"BatchNorm2d", 4, 2048, 1, {1}}, {"ReLU", 2, 2048, 1, {2}}};
static const layer chain_mbv2[] = {   /* MobileNetV2's Conv2d, BatchNorm2d, ReLU6 */
    {"Linear", 6, 1024, 0, {0}}, {"Conv2d", 30, 3072, 1, {0}}, {"BatchNorm2d", 4, 3072, 1, {1}}, {"ReLU6", 2, 3072, 1, {2}},
    {"Linear", 10, 1024, 1, {3}}};

/* ---- the catalogue's new entries, read back from the solver graph ---- */
static int path_of(const mlsys_remat_monet_graph *sg, int graph_b, int fb, char kind) {
  int t = sg->V + (graph_b - fb) - sg->V + 1;
  for (int k = sg->path_off[t]; k < sg->path_off[t + 1]; k++) if (sg->path_kind[k] == kind) return k;
  return -1;
}
TEST(catalogue_paths_and_costs) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  int fb = 6, gconv, glin, gbn, grelu6, q;   /* chain_mbv2: F 0..4, L 5, B 6.. = g4, g3, g2, g1, g0 */
  REQUIRE_OK(build(chain_mbv2, 5, 100, &g));
  gconv = fb + 3; glin = fb + 0; gbn = fb + 2; grelu6 = fb + 1;
  REQUIRE(g.fwd_of[gconv] == 1 && g.fwd_of[gbn] == 2 && g.fwd_of[grelu6] == 3 && g.fwd_of[glin] == 4);
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  /* conv backward 'c': 0.7 x its cost, 9 x its input's bytes of workspace, the graph's deps */
  q = path_of(&sg, gconv, fb, 'c');
  REQUIRE(q >= 0);
  CHECK_NEAR(sg.path_cost[q], 0.7 * 60, 1e-9);
  CHECK(sg.path_ws[q] == 9 * 1024);
  CHECK(path_of(&sg, gconv, fb, 'g') >= 0 && sg.path_ws[path_of(&sg, gconv, fb, 'g')] == 0);
  /* linear backward 'c': a packed copy of the input */
  q = path_of(&sg, glin, fb, 'c');
  REQUIRE(q >= 0);
  CHECK(sg.path_ws[q] == 3072);
  CHECK_NEAR(sg.path_cost[q], 0.7 * 20, 1e-9);
  /* BN: 'o' reads the BN output (solver 2) instead of its input (solver 1) */
  q = path_of(&sg, gbn, fb, 'o');
  REQUIRE(q >= 0);
  {
    int has_out = 0, has_in = 0;
    for (int x = sg.pdep_off[q]; x < sg.pdep_off[q + 1]; x++) { has_out |= sg.pdep[x] == 2; has_in |= sg.pdep[x] == 1; }
    CHECK(has_out && !has_in);
  }
  /* its recomputation reuses the statistics: 0.5 x by default */
  CHECK_NEAR(sg.impl[sg.impl_off[2]].recompute_cost, 2.0, 1e-12);
  CHECK_NEAR(sg.impl[sg.impl_off[2]].cost, 4.0, 1e-12);
  /* ReLU6: 'o' from its output ('i' equals the graph's input-reading path and is dropped); no mask */
  CHECK(path_of(&sg, grelu6, fb, 'o') >= 0);
  CHECK(path_of(&sg, grelu6, fb, 'i') < 0 && path_of(&sg, grelu6, fb, 'm') < 0);
  for (int x = 0; x < sg.N; x++) CHECK(x >= sg.V || sg.parent[x] < 0);   /* no IntNode: no ReLU, no MaxPool */
  for (int k = 0; k < sg.path_off[sg.T]; k++) CHECK(!sg.path_split[k]);   /* SPLIT is not in ALL */
  mlsys_remat_monet_graph_free(&sg);
  /* factors, SPLIT */
  c.conv_bwd_fast_cost = 0.5; c.conv_bwd_ws_factor = 2; c.bn_recompute_factor = 0.25;
  c.mode = MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  q = path_of(&sg, gconv, fb, 'c');
  CHECK_NEAR(sg.path_cost[q], 30, 1e-9);
  CHECK(sg.path_ws[q] == 2 * 1024);
  CHECK_NEAR(sg.impl[sg.impl_off[2]].recompute_cost, 1.0, 1e-12);
  CHECK(sg.path_split[q] && sg.path_split[path_of(&sg, gconv, fb, 'g')] && sg.path_split[path_of(&sg, glin, fb, 'c')]);
  CHECK(!sg.path_split[path_of(&sg, gbn, fb, 'g')]);
  {   /* the last layer's backward reads the L node (dy) in both halves, its input in the first only */
    int ql = path_of(&sg, glin, fb, 'g'), first = 0, both = 0;
    for (int x = sg.pdep_off[ql]; x < sg.pdep_off[ql + 1]; x++) {
      if (sg.pdep[x] == 5) both += !sg.pdep_first[x];
      if (sg.pdep[x] == 3) first += sg.pdep_first[x];
    }
    CHECK(first == 1 && both == 1);
  }
  mlsys_remat_monet_graph_free(&sg);
  /* NoOp: one path each, the graph's costs */
  memset(&c, 0, sizeof c);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  for (int t = 1; t < sg.T; t++) CHECK_EQ_INT(sg.path_off[t + 1] - sg.path_off[t], 1);
  CHECK_NEAR(sg.impl[sg.impl_off[2]].recompute_cost, 4.0, 1e-12);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* ---- ILP = brute force on chains with the new paths ---- */
/* exact = 0 would only ask for soundness (never below the optimum). Where the ILP is dearer, the row that rejects
   the true optimum is named (a warm start): that is how the (b) rows' double count of a tensor local to j and
   read unkept by the path was found (A3.4 as written; the split made such stages binding on chain_mbv2, ILP 228
   against 210). The rows no longer count it twice, and every sweep below is exact. */
static void (*sweep_decorate)(mlsys_remat_graph *g);   /* set: applied to each graph exact_sweep builds */
static void exact_sweep(const layer *L, int n, unsigned mode, int k, int exact) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s;
  uint64_t hi, lo;
  int nbf = 0;
  memset(&c, 0, sizeof c);
  c.mode = mode;
  c.conv_fast_cost = c.conv_bwd_fast_cost = 0.5;   /* integral costs */
  REQUIRE_OK(build(L, n, 1000, &g));
  if (sweep_decorate) sweep_decorate(&g);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  REQUIRE(sg.V <= BF_MAXV);
  REQUIRE(ilp_cost(&g, &sg, (uint64_t)1 << 40, &s) < INFINITY);
  hi = s.peak_sweep;
  mlsys_remat_monet_schedule_free(&s);
  {
    uint64_t a = sg.fixed, b = hi;
    while (a < b) { uint64_t m = a + (b - a) / 2; if (brute_force(&sg, m, 1) < INFINITY) b = m; else a = m + 1; }
    lo = a > sg.fixed ? a - 1 : a;
  }
  for (int i = 0; i <= k; i++) {
    uint64_t B = i == 0 ? lo : lo + 1 + (hi - lo - 1) * (uint64_t)(i - 1) / (uint64_t)(k - 1);
    double bf = brute_force(&sg, B, 1), ilp = ilp_cost(&g, &sg, B, NULL);
    if (exact) CHECK_MSG(ilp == bf, "mode %u budget %llu: ILP %g, brute force %g", mode, (unsigned long long)B, ilp, bf);
    else CHECK_MSG(ilp >= bf, "mode %u budget %llu: ILP %g below the optimum %g", mode, (unsigned long long)B, ilp, bf);
    if (ilp != bf && bf < INFINITY) {   /* which row rejects the true optimum */
      mlsys_remat_monet_schedule w, x;
      mlsys_remat_monet_opts o = exact_opts();
      mlsys_status st;
      bf_schedule(&sg, &w);
      o.warm_start = &w;
      st = mlsys_remat_monet_solve(&sg, B, &o, &x);
      CHECK_EQ_INT(st, MLSYS_ERR_ARG);
      if (getenv("MONET_VERBOSE")) printf("    budget %llu: ILP %g, optimum %g: %s\n", (unsigned long long)B, ilp, bf, mlsys_last_error());
      inexact++;
      mlsys_remat_monet_schedule_free(&w);
      if (st == MLSYS_OK) mlsys_remat_monet_schedule_free(&x);
    }
    nbf += bf < INFINITY;
  }
  CHECK(nbf == k);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}
TEST(chain_ilp_equals_brute_force_catalogue) {
  split_steps = 0;
  inexact = 0;
  exact_sweep(chain_cbr, 4, MLSYS_REMAT_MONET_CONV | MLSYS_REMAT_MONET_OUTACT, 10, 1);
  exact_sweep(chain_cbr, 4, MLSYS_REMAT_MONET_CONV | MLSYS_REMAT_MONET_OUTACT | MLSYS_REMAT_MONET_SPLIT, 10, 1);
  exact_sweep(chain_cbr, 4, MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT, 8, 1);
  exact_sweep(chain_mbv2, 5, MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT, 5, 1);
  exact_sweep(chain_mbv2, 5, 0, 5, 1);
  exact_sweep(chain_mbv2, 5, MLSYS_REMAT_MONET_SPLIT, 8, 1);
  CHECK(split_steps > 0);   /* the split plans were lowered and replayed */
  CHECK_EQ_INT(inexact, 0);
}

/* ---- the split on a 3-op example, by hand ----
   f0 Linear (100 B), f1 Conv2d(f0) (30 B), f2 ReLU(f1) (30 B), L (30 B); fixed 1000. Backward: g2 (ReLU, reads L and
   f2, 30 B), g1 (Conv, reads g2 and f0, 100 B), g0 (Linear, reads g1, 0 B). Schedule: f2 and L stored for g2 (and,
   as the model wants of a value a backward op reads without recomputing it, kept through it into stage 2); f0
   recomputed for g1 (a stored value read by the backward would be kept through the whole op: only a recomputed
   input can be freed between the halves).
   stage 0: f0 1100, f1 1130 (f0 + f1), f2 1060 (f0 freed), L 1060                         → 1130
   stage 1 (g2): 1000 + f2, L (60) + g2 (30)                                                → 1090
   stage 2 (g1): 1000 + g2 alive (30); eager: f2, L freed at the start; f0 recomputed 1130;
                 whole: + f0 + g1 = 1230; split: param-grad 1130, input-grad (f0 freed) 1130
                 sweep: f2, L live until the recomputation passes them: f0 at 1030 + 60 + 100 = 1190
   stage 3 (g0): 1000 + g1 (100)                                                           → 1100
   Peaks: whole 1230 in both accountings; split 1130 eager (stage 0 first), 1190 sweep (stage 2).
   Cost: forward 10+20+1+1, f0 again 10, backward 1+40+20 = 103. */
static const layer three[] = {{"Linear", 10, 100, 0, {0}}, {"Conv2d", 20, 30, 1, {0}}, {"ReLU", 1, 30, 1, {1}}};
static void three_schedule(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *s) {
  int V = sg->V;
  REQUIRE_OK(mlsys_remat_monet_schedule_alloc(sg->V, sg->T, s));
  for (int v = 0; v < V; v++) { s->R[v] = 1; s->F[v] = 0; }
  s->S[1 * V + 2] = s->S[1 * V + 3] = 1;
  s->S[2 * V + 2] = s->S[2 * V + 3] = 1;
  s->R[2 * V + 0] = 1; s->F[2 * V + 0] = 0;
}
TEST(split_peak_by_hand) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph whole, split;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_sim sim;
  mlsys_remat_monet_plan p;
  int half1 = -1, half2 = -1, freed_between = 0;
  REQUIRE_OK(build(three, 3, 1000, &g));
  memset(&c, 0, sizeof c);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &whole));
  c.mode = MLSYS_REMAT_MONET_SPLIT;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &split));
  REQUIRE(whole.V == 4 && whole.T == 4 && split.V == 4);
  three_schedule(&whole, &s);
  for (int m = 0; m < 2; m++) {
    mlsys_remat_monet_sim_mode md = m ? MLSYS_REMAT_MONET_SIM_SWEEP : MLSYS_REMAT_MONET_SIM_EAGER;
    CHECK_OK(mlsys_remat_monet_simulate(&whole, &s, md, &sim));
    CHECK_EQ_INT((int)sim.peak, 1230);
    CHECK_EQ_INT(sim.peak_t, 2);
    CHECK_NEAR(sim.cost, 103, 1e-12);
    CHECK_OK(mlsys_remat_monet_simulate(&split, &s, md, &sim));
    CHECK_EQ_INT((int)sim.peak, m ? 1190 : 1130);
    CHECK_EQ_INT(sim.peak_t, m ? 2 : 0);
    CHECK_NEAR(sim.cost, 103, 1e-12);
  }
  /* the plan: param-grad, FREE f0, input-grad; replay peak = the eager 1130 */
  REQUIRE_OK(mlsys_remat_monet_plan_build(&g, &split, &s, &p));
  CHECK_EQ_INT((int)p.peak, 1130);
  for (int k = 0; k < p.nsteps; k++) {
    if (p.steps[k].op == MLSYS_REMAT_OP_COMPUTE && p.steps[k].half == 1 && half1 < 0) half1 = k;   /* g1 (g0 after) */
    if (p.steps[k].op == MLSYS_REMAT_OP_COMPUTE && p.steps[k].half == 2 && half2 < 0) half2 = k;
  }
  REQUIRE(half1 >= 0 && half2 == half1 + 2);
  freed_between = p.steps[half1 + 1].op == MLSYS_REMAT_OP_FREE && p.steps[half1 + 1].node == 0;
  CHECK(freed_between);
  /* a plan's halves are checked: wrong half, input-grad first, param-grad only */
  p.steps[half1].half = 0;
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &split, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "is split");
  p.steps[half1].half = 1;
  p.steps[half1].op = MLSYS_REMAT_OP_FREE; p.steps[half1].node = 0;   /* drop param-grad: f0 freed twice → first check */
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &split, &p, NULL), MLSYS_ERR_ARG);
  p.steps[half1].op = MLSYS_REMAT_OP_COMPUTE; p.steps[half1].node = split.V + 1;
  p.steps[half1].half = 2;
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &split, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "input-grad before param-grad");
  p.steps[half1].half = 1;
  p.steps[half2].half = 1;
  CHECK_EQ_INT(mlsys_remat_monet_plan_validate(&g, &split, &p, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "twice");
  p.steps[half2].half = 2;
  CHECK_OK(mlsys_remat_monet_plan_validate(&g, &split, &p, NULL));
  mlsys_remat_monet_plan_free(&p);
  /* the ILP at 1190: with the split, this schedule is the optimum (keeping f0 instead holds it through the whole
     op: 1230); without it nothing fits below 1230 (stage 2's op needs f0 + g1 + g2 beside the fixed memory) */
  {
    double a = ilp_cost(&g, &split, 1190, NULL), b = ilp_cost(&g, &whole, 1190, NULL);
    CHECK_NEAR(a, 103, 1e-9);
    CHECK(b == INFINITY);
    CHECK(brute_force(&split, 1190, 1) == a && brute_force(&whole, 1190, 1) == INFINITY);
    CHECK(brute_force(&whole, 1229, 0) == INFINITY && brute_force(&whole, 1230, 0) < INFINITY);
  }
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&whole);
  mlsys_remat_monet_graph_free(&split);
  mlsys_remat_graph_free(&g);
}

/* ---- ablations: all ≤ each single family ≤ NoOp (the decision spaces nest), over random small graphs ---- */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(uint64_t n) {
  rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
  return rng_state % n;
}
static int random_graph(layer *L, mlsys_remat_graph *g) {
  static const char *ops[] = {"Conv2d", "ReLU", "MaxPool2d", "Linear", "BatchNorm2d", "ReLU6"};
  int n = 3 + (int)rnd(2);
  for (int i = 0; i < n; i++) {
    L[i].op = ops[rnd(6)];
    L[i].cost = (double)(4 + 4 * rnd(10));   /* multiples of 4: the 0.5 factors keep costs integral */
    L[i].mem = 1024 * (1 + rnd(4));
    L[i].nd = i > 0; L[i].d[0] = i - 1;
    if (i > 0 && (!strcmp(L[i].op, "ReLU") || !strcmp(L[i].op, "ReLU6") || !strcmp(L[i].op, "BatchNorm2d")))
      L[i].mem = L[i - 1].mem;   /* element-wise: same size */
  }
  return build(L, n, 512, g) == MLSYS_OK ? n : 0;
}
TEST(ablation_order_random) {
  static const unsigned single[] = {MLSYS_REMAT_MONET_CONV, MLSYS_REMAT_MONET_OUTACT, MLSYS_REMAT_MONET_INTERMEDIATE,
                                    MLSYS_REMAT_MONET_INPLACE, MLSYS_REMAT_MONET_SPLIT};
  int compared = 0, feasible = 0, strict = 0;
  for (int inst = 0; inst < 10; inst++) {
    layer L[5];
    mlsys_remat_graph g;
    mlsys_remat_monet_graph noop, all, one;
    mlsys_remat_monet_catalogue c;
    mlsys_remat_monet_schedule s;
    uint64_t hi;
    REQUIRE(random_graph(L, &g) > 0);
    memset(&c, 0, sizeof c);
    c.conv_fast_cost = c.conv_bwd_fast_cost = 0.5;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &noop));
    c.mode = MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &all));
    REQUIRE(ilp_cost(NULL, &noop, (uint64_t)1 << 40, &s) < INFINITY);
    hi = s.peak_sweep;
    mlsys_remat_monet_schedule_free(&s);
    for (int k = 0; k < 3; k++) {
      uint64_t B = noop.fixed + (hi - noop.fixed) * (uint64_t)(4 + k) / 6u;
      double a = ilp_cost(&g, &all, B, NULL), z = ilp_cost(&g, &noop, B, NULL);
      for (size_t f = 0; f < sizeof single / sizeof single[0]; f++) {
        double b;
        c.mode = single[f];
        REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &one));
        b = ilp_cost(&g, &one, B, NULL);
        CHECK_MSG(a <= b && b <= z, "instance %d budget %llu mode %u: all %g, one family %g, NoOp %g", inst,
                  (unsigned long long)B, single[f], a, b, z);
        strict += b < z;
        compared++;
        mlsys_remat_monet_graph_free(&one);
      }
      feasible += z < INFINITY;
    }
    mlsys_remat_monet_graph_free(&noop); mlsys_remat_monet_graph_free(&all); mlsys_remat_graph_free(&g);
  }
  CHECK_EQ_INT(compared, 10 * 3 * 5);
  CHECK(feasible >= 10);   /* the comparisons are not all between infeasible answers */
  CHECK(strict >= 5);      /* and some family buys something */
  if (getenv("MONET_VERBOSE")) printf("    %d comparisons, NoOp feasible at %d budgets, a family strictly cheaper %d\n",
                                      compared, feasible, strict);
}

/* ---- greedy post-optimisation to the fastest conv (A4.4) ----
   A schedule solved without CONV, post-optimised on the graph with it: never over budget (both accountings), never
   dearer, and never cheaper than the ILP with CONV (exact on chains in the sweep accounting). */
TEST(post_fastest_conv_random) {
  static const unsigned modes[] = {0, MLSYS_REMAT_MONET_OUTACT, MLSYS_REMAT_MONET_INTERMEDIATE, MLSYS_REMAT_MONET_INPLACE};
  int runs = 0, improved = 0, tight = 0;
  for (int inst = 0; inst < 10; inst++) {
    layer L[5];
    mlsys_remat_graph g;
    REQUIRE(random_graph(L, &g) > 0);
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
      mlsys_remat_monet_graph base, conv;
      mlsys_remat_monet_catalogue c;
      mlsys_remat_monet_schedule s;
      uint64_t hi;
      memset(&c, 0, sizeof c);
      c.conv_fast_cost = c.conv_bwd_fast_cost = 0.5;
      c.mode = modes[m];
      REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &base));
      c.mode = modes[m] | MLSYS_REMAT_MONET_CONV;
      REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &conv));
      REQUIRE(base.V == conv.V && base.T == conv.T);
      REQUIRE(ilp_cost(NULL, &base, (uint64_t)1 << 40, &s) < INFINITY);
      hi = s.peak_sweep;
      mlsys_remat_monet_schedule_free(&s);
      for (int k = 0; k < 3; k++) {
        uint64_t B = base.fixed + (hi - base.fixed) * (uint64_t)(4 + 2 * k) / 8u;
        mlsys_remat_monet_sim e, w;
        double before, opt;
        int nch = -1;
        if (ilp_cost(NULL, &base, B, &s) == INFINITY) continue;
        CHECK_OK(mlsys_remat_monet_simulate(&conv, &s, MLSYS_REMAT_MONET_SIM_EAGER, &e));   /* BN recomputes cheaper there */
        before = e.cost;
        CHECK_OK(mlsys_remat_monet_post_fastest_conv(&conv, B, &s, &nch));
        CHECK_OK(mlsys_remat_monet_simulate(&conv, &s, MLSYS_REMAT_MONET_SIM_EAGER, &e));
        CHECK_OK(mlsys_remat_monet_simulate(&conv, &s, MLSYS_REMAT_MONET_SIM_SWEEP, &w));
        CHECK(e.peak <= B && w.peak <= B);
        CHECK(e.peak == s.peak && w.peak == s.peak_sweep && e.cost == s.cost);
        CHECK(s.cost <= before);
        CHECK((nch > 0) == (s.cost < before));
        opt = ilp_cost(NULL, &conv, B, NULL);
        CHECK_MSG(opt <= s.cost + 1e-9, "instance %d mode %u: ILP with conv %g above the greedy %g", inst, modes[m], opt, s.cost);
        improved += nch > 0;
        tight += w.peak + 1024 > B;
        runs++;
        mlsys_remat_monet_schedule_free(&s);
      }
      mlsys_remat_monet_graph_free(&base); mlsys_remat_monet_graph_free(&conv);
    }
    mlsys_remat_graph_free(&g);
  }
  CHECK(runs >= 60);
  CHECK(improved >= 10);   /* the pass does something */
  if (getenv("MONET_VERBOSE")) printf("    %d runs, %d improved, %d within 1 KiB of the budget\n", runs, improved, tight);
  {   /* a schedule over the budget is refused by name */
    mlsys_remat_graph g;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_catalogue c;
    mlsys_remat_monet_schedule s;
    memset(&c, 0, sizeof c);
    c.mode = MLSYS_REMAT_MONET_CONV;
    REQUIRE_OK(build(three, 3, 1000, &g));
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
    three_schedule(&sg, &s);
    CHECK_EQ_INT(mlsys_remat_monet_post_fastest_conv(&sg, 1229, &s, NULL), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "does not fit the budget");
    s.M[1] = 3;
    CHECK_EQ_INT(mlsys_remat_monet_post_fastest_conv(&sg, 1 << 20, &s, NULL), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "backward path 3");
    mlsys_remat_monet_schedule_free(&s);
    mlsys_remat_monet_graph_free(&sg);
    mlsys_remat_graph_free(&g);
  }
}

/* ---- bad catalogue values are named errors ---- */
TEST(bad_catalogue_factors) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_override ov;
  mlsys_remat_monet_impl im = {5, 5, 0, 0};
  REQUIRE_OK(build(chain_cbr, 4, 100, &g));
  memset(&c, 0, sizeof c);
  c.conv_bwd_fast_cost = -1;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "conv_bwd_fast_cost");
  c.conv_bwd_fast_cost = 0; c.conv_bwd_ws_factor = NAN;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "conv_bwd_ws_factor");
  c.conv_bwd_ws_factor = 0; c.bn_recompute_factor = 1.5;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "bn_recompute_factor");
  c.bn_recompute_factor = -0.5;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "bn_recompute_factor");
  c.bn_recompute_factor = 0;
  memset(&ov, 0, sizeof ov);
  ov.node = 1; ov.nimpl = 1; ov.impl = &im; ov.bwd_cost = INFINITY;
  c.noverride = 1; c.override_impl = &ov;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "backward cost");
  ov.bwd_cost = 7; ov.bwd_workspace = 333;   /* a valid backward override replaces the proxy */
  c.mode = MLSYS_REMAT_MONET_CONV;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  {
    int t = 1 + (4 + 1 + 2) - 5 - 0, found = 0;   /* graph B of f1 is id 4 + (4 - 1) = 7; stage = 7 - 5 + 1 = 3 */
    t = 3;
    for (int k = sg.path_off[t]; k < sg.path_off[t + 1]; k++)
      if (sg.path_kind[k] == 'c') found = sg.path_cost[k] == 7 && sg.path_ws[k] == 333;
    CHECK(found);
  }
  mlsys_remat_monet_graph_free(&sg);
  c.noverride = 0; c.mode = 32;
  CHECK_EQ_INT(mlsys_remat_monet_graph_build(&g, &c, &sg), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "unknown mode bits");
  mlsys_remat_graph_free(&g);
}

/* ---- the command: --monet-mode ---- */
static const char *bin(void) {
  const char *b = getenv("MLSYS_BIN");
  return b && *b ? b : "build/mlsys";
}
static int run_cli(const char *args, char **out) {
  char cmd[1024], path[] = "/tmp/mlsys_monet_catXXXXXX";
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
TEST(cli_monet_mode) {
  char *out = NULL;
  mlsys_json_doc doc;
  double cost_none, cost_all;
  int rc;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 100% --method monet --monet-mode none "
               "--json --time-limit 600", &out);
  CHECK_EQ_INT(rc, 0);
  REQUIRE(out);
  REQUIRE_OK(mlsys_json_parse(out, strlen(out), "stdout", &doc));
  CHECK_STR(mlsys_json_get(doc.root, "monet_mode")->str, "none");
  CHECK(mlsys_json_get(doc.root, "post_optimised")->i64 > 0);   /* the fast algorithms fit at 100 % */
  CHECK(mlsys_json_get(doc.root, "peak_memory")->u64 <= mlsys_json_get(doc.root, "budget")->u64);
  cost_none = mlsys_json_get(doc.root, "compute_cost")->num;
  mlsys_json_doc_free(&doc);
  mlsys_free(out);
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 100% --method monet --monet-mode "
               "conv,outact,intermediate,inplace,split --json --time-limit 600", &out);
  CHECK_EQ_INT(rc, 0);
  REQUIRE(out);
  REQUIRE_OK(mlsys_json_parse(out, strlen(out), "stdout", &doc));
  CHECK_STR(mlsys_json_get(doc.root, "monet_mode")->str, "conv,outact,intermediate,inplace,split");
  cost_all = mlsys_json_get(doc.root, "compute_cost")->num;
  CHECK(cost_all <= cost_none * (1 + 1e-6));   /* the ILP over everything is never dearer than the greedy ablation */
  {
    const mlsys_json *plan = mlsys_json_get(doc.root, "plan");
    int halves = 0;
    REQUIRE(plan);
    for (int k = 0; k < plan->count; k++) halves += mlsys_json_get(&plan->items[k], "half") != NULL;
    CHECK(halves >= 2 && halves % 2 == 0);
  }
  mlsys_json_doc_free(&doc);
  mlsys_free(out);
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 100% --method monet --monet-mode conv,bogus", &out);
  CHECK_EQ_INT(rc, 2);
  mlsys_free(out);
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 100% --method milp --monet-mode all", &out);
  CHECK_EQ_INT(rc, 2);
  mlsys_free(out);
  /* the constraint-12 ablation: at 70 % the operator choices alone fit (masks, argmax, in place) with no
     recomputation; 50 % is below what it can reach (on smallcnn full MONeT's smallest budget is the same, 63-65 %;
     the chains above have budgets only checkpointing reaches) */
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 70% --method monet --no-recompute "
               "--json --time-limit 600", &out);
  CHECK_EQ_INT(rc, 0);
  REQUIRE(out);
  REQUIRE_OK(mlsys_json_parse(out, strlen(out), "stdout", &doc));
  CHECK(mlsys_json_get(doc.root, "no_recompute")->type == MLSYS_JSON_BOOL && mlsys_json_get(doc.root, "no_recompute")->boolean);
  CHECK_EQ_INT((int)mlsys_json_get(doc.root, "recomputations")->i64, 0);
  CHECK(mlsys_json_get(doc.root, "peak_memory")->u64 <= mlsys_json_get(doc.root, "budget")->u64);
  mlsys_json_doc_free(&doc);
  mlsys_free(out);
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 50% --method monet --no-recompute "
               "--json --time-limit 600", &out);
  CHECK_EQ_INT(rc, 1);
  CHECK(out && strstr(out, "\"infeasible\""));
  mlsys_free(out);
  rc = run_cli("remat solve --graph tests/data/graphs/smallcnn_b8.json --budget 100% --method milp --no-recompute", &out);
  CHECK_EQ_INT(rc, 2);
  mlsys_free(out);
}

/* ---- A3.4 constraint 12, the ablation (no checkpointing): the ILP with it equals the brute force restricted the
   same way (no recomputation, in place wherever a ReLU can be), never beats MONeT, and its schedules hold no
   recomputation; below what storing everything needs it is infeasible where MONeT still fits ---- */
TEST(no_recompute_ablation_equals_brute_force) {
  static const unsigned modes[] = {MLSYS_REMAT_MONET_ALL, 0, MLSYS_REMAT_MONET_CONV | MLSYS_REMAT_MONET_INTERMEDIATE};
  int checked = 0, cheaper = 0, only_monet = 0;
  for (int mi = 0; mi < 3; mi++) {
    mlsys_remat_graph g;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_catalogue c;
    mlsys_remat_monet_schedule s;
    uint64_t lo, hi;
    memset(&c, 0, sizeof c);
    c.mode = modes[mi];
    c.conv_fast_cost = c.conv_bwd_fast_cost = 0.5;
    REQUIRE_OK(build(chain_cbr, 4, 1000, &g));
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
    REQUIRE(sg.V <= BF_MAXV);
    bf_no_recompute = 0;
    REQUIRE(ilp_cost(&g, &sg, (uint64_t)1 << 40, &s) < INFINITY);
    hi = s.peak_sweep + 200;
    mlsys_remat_monet_schedule_free(&s);
    lo = sg.fixed;
    for (int i = 0; i <= 12; i++) {
      uint64_t B = lo + (hi - lo) * (uint64_t)i / 12;
      double full, abl, bf;
      bf_no_recompute = 0;
      full = ilp_cost(&g, &sg, B, NULL);
      bf_no_recompute = 1;
      bf = brute_force(&sg, B, 1);
      abl = ilp_cost(&g, &sg, B, &s);
      CHECK_MSG(abl == bf, "mode %u budget %llu: ablation ILP %g, brute force %g", modes[mi], (unsigned long long)B, abl, bf);
      CHECK_MSG(abl >= full, "mode %u budget %llu: ablation %g below MONeT %g", modes[mi], (unsigned long long)B, abl, full);
      if (abl < INFINITY) {
        for (int t = 1; t < sg.T; t++)
          for (int v = 0; v < sg.V; v++) CHECK_MSG(!s.R[t * sg.V + v], "recomputed %d at stage %d", v, t);
        for (int v = 0; v < sg.V; v++)
          if (sg.inplace_of[v] >= 0) CHECK_EQ_INT(s.IP[v], s.R[v]);
        mlsys_remat_monet_schedule_free(&s);
        checked++;
        cheaper += full < abl;
      } else only_monet += full < INFINITY;
    }
    mlsys_remat_monet_graph_free(&sg);
    mlsys_remat_graph_free(&g);
  }
  bf_no_recompute = 0;
  CHECK(checked >= 12);
  CHECK(only_monet > 0);   /* budgets where only checkpointing fits */
  printf("    %d feasible ablation solves, %d where MONeT is cheaper, %d budgets only MONeT fits\n", checked, cheaper, only_monet);
}

/* ---- backward paths from the B nodes' impls (`mlsys remat calibrate` writes them) ----
   chain_cbr: F 0..3 = Linear, Conv2d, BatchNorm2d, ReLU; L 4; B 5..8 = g3, g2, g1 (conv), g0 (linear). */
static void set_impls(mlsys_remat_node_info *in, int n, const double *cost, const uint64_t *ws) {
  in->nimpl = n;
  for (int k = 0; k < n; k++) {
    snprintf(in->impl[k].name, sizeof in->impl[k].name, "a%d", k);
    in->impl[k].cost = cost[k];
    in->impl[k].workspace = ws[k];
  }
}
static void cbr_bwd_impls(mlsys_remat_graph *g) {
  /* conv backward (graph cost 80): a default that costs less than the graph says, a faster one with a small
     workspace, a fastest one with a large one; linear backward (graph cost 16): one packed variant */
  static const double cc[] = {70, 50, 30}, lc[] = {16, 12};
  static const uint64_t cw[] = {0, 700, 3000}, lw[] = {0, 300};
  REQUIRE_OK(mlsys_remat_graph_info_alloc(g));
  set_impls(&g->info[7], 3, cc, cw);
  set_impls(&g->info[8], 2, lc, lw);
}
static void expect_paths(const mlsys_remat_monet_graph *sg, int graph_b, int fb, int n, const char *kinds,
                         const double *cost, const uint64_t *ws) {
  int t = graph_b - fb + 1, k;
  CHECK_MSG(sg->path_off[t + 1] - sg->path_off[t] == n, "node %d: %d paths, want %d", graph_b,
            sg->path_off[t + 1] - sg->path_off[t], n);
  for (k = 0; k < n && sg->path_off[t] + k < sg->path_off[t + 1]; k++) {
    int q = sg->path_off[t] + k;
    CHECK_MSG(sg->path_kind[q] == kinds[k] && sg->path_cost[q] == cost[k] && sg->path_ws[q] == ws[k],
              "node %d path %d: %c %g %llu, want %c %g %llu", graph_b, k, sg->path_kind[q], sg->path_cost[q],
              (unsigned long long)sg->path_ws[q], kinds[k], cost[k], (unsigned long long)ws[k]);
  }
}

TEST(backward_impls_become_paths) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_impl fi[2] = {{40, 40, 0, 0}, {20, 20, 100, 100}};
  mlsys_remat_monet_override ov;
  const int fb = 5;
  REQUIRE_OK(build(chain_cbr, 4, 1000, &g));
  REQUIRE(g.fwd_of[7] == 1 && g.fwd_of[8] == 0 && g.dag.cost[7] == 80 && g.dag.cost[8] == 16);
  cbr_bwd_impls(&g);
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_CONV;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  {   /* impl 0 → 'g' (its cost, not the graph's), the others → 'c'; no 0.7 proxy */
    const double cc[] = {70, 50, 30}, lc[] = {16, 12};
    const uint64_t cw[] = {0, 700, 3000}, lw[] = {0, 300};
    expect_paths(&sg, 7, fb, 3, "gcc", cc, cw);
    expect_paths(&sg, 8, fb, 2, "gc", lc, lw);
  }
  mlsys_remat_monet_graph_free(&sg);
  /* NoOp (CONV off): the graph's cost, one path */
  c.mode = MLSYS_REMAT_MONET_OUTACT;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  {
    const double gc[] = {80};
    const uint64_t z[] = {0};
    expect_paths(&sg, 7, fb, 1, "g", gc, z);
  }
  mlsys_remat_monet_graph_free(&sg);
  /* an override naming a backward cost wins over the impls (then the graph's 'g' and the override's 'c') */
  memset(&ov, 0, sizeof ov);
  ov.node = 1; ov.nimpl = 2; ov.impl = fi; ov.bwd_cost = 33; ov.bwd_workspace = 444;
  c.mode = MLSYS_REMAT_MONET_CONV; c.noverride = 1; c.override_impl = &ov;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  {
    const double oc[] = {80, 33};
    const uint64_t ow[] = {0, 444};
    expect_paths(&sg, 7, fb, 2, "gc", oc, ow);
  }
  mlsys_remat_monet_graph_free(&sg);
  /* ... and one without (bwd_cost 0) leaves the backward to the impls */
  ov.bwd_cost = 0; ov.bwd_workspace = 0;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  {
    const double cc[] = {70, 50, 30};
    const uint64_t cw[] = {0, 700, 3000};
    expect_paths(&sg, 7, fb, 3, "gcc", cc, cw);
  }
  mlsys_remat_monet_graph_free(&sg);
  c.noverride = 0; c.override_impl = NULL;
  /* six impls, one repeating another: the repeat is dropped and the stage keeps MLSYS_REMAT_MONET_MAX_PATHS (4) */
  {
    const double cc[] = {70, 50, 50, 30, 20, 10}, want[] = {70, 50, 30, 20};
    const uint64_t cw[] = {0, 700, 700, 3000, 5000, 9000}, wantw[] = {0, 700, 3000, 5000};
    set_impls(&g.info[7], 6, cc, cw);
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
    CHECK_EQ_INT(MLSYS_REMAT_MONET_MAX_PATHS, 4);
    expect_paths(&sg, 7, fb, 4, "gccc", want, wantw);
    mlsys_remat_monet_graph_free(&sg);
  }
  mlsys_remat_graph_free(&g);
}

TEST(chain_ilp_equals_brute_force_backward_impls) {
  inexact = 0;
  sweep_decorate = cbr_bwd_impls;
  exact_sweep(chain_cbr, 4, MLSYS_REMAT_MONET_CONV | MLSYS_REMAT_MONET_OUTACT, 6, 1);
  exact_sweep(chain_cbr, 4, MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT, 4, 1);
  sweep_decorate = NULL;
  CHECK_EQ_INT(inexact, 0);
  {   /* the budgets make the choice: the fastest path without a budget, none with a workspace at the least */
    mlsys_remat_graph g;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_catalogue c;
    mlsys_remat_monet_schedule s;
    mlsys_remat_monet_opts o = exact_opts();
    uint64_t lo;
    REQUIRE_OK(build(chain_cbr, 4, 1000, &g));
    cbr_bwd_impls(&g);
    memset(&c, 0, sizeof c);
    c.mode = MLSYS_REMAT_MONET_CONV;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
    REQUIRE_OK(mlsys_remat_monet_solve(&sg, (uint64_t)1 << 40, &o, &s));
    CHECK_EQ_INT(s.M[7 - 5 + 1], 2);   /* conv: cost 30 */
    CHECK_EQ_INT(s.M[8 - 5 + 1], 1);   /* linear: cost 12 */
    mlsys_remat_monet_schedule_free(&s);
    {
      uint64_t a = sg.fixed, b = (uint64_t)1 << 20;
      while (a < b) { uint64_t m = a + (b - a) / 2; if (brute_force(&sg, m, 1) < INFINITY) b = m; else a = m + 1; }
      lo = a;
    }
    REQUIRE_OK(mlsys_remat_monet_solve(&sg, lo, &o, &s));
    CHECK(sg.path_ws[sg.path_off[3] + s.M[3]] < 3000);   /* the 3000-byte path never fits the least budget */
    mlsys_remat_monet_schedule_free(&s);
    mlsys_remat_monet_graph_free(&sg);
    mlsys_remat_graph_free(&g);
  }
}

/* ---- the conv workspace from shapes (a graph with shapes but no impls) ---- */
static mlsys_status parse_text(const char *text, mlsys_remat_graph *g) {
  return mlsys_remat_graph_parse(text, strlen(text), "g.json", g);
}
static uint64_t fwd_ws(const mlsys_remat_monet_graph *sg, int s, int k) { return sg->impl[sg->impl_off[s] + k].workspace; }

TEST(conv_workspace_from_shapes_by_hand) {
  /* x [2, 6, 10, 12] → conv 3x5, stride (2, 1), padding (1, 2), groups 3 → y [2, 9, 5, 12]:
     OH = (10 + 2 - 3) / 2 + 1 = 5, OW = (12 + 4 - 5) / 1 + 1 = 12; one sample's columns for one group:
     (6 / 3) · 3 · 5 rows × 5 · 12 columns = 30 × 60 = 1800 floats = 7200 bytes. The old proxy: 9 × the input's
     bytes, 0 here (the input is fixed memory, no node). The linear keeps its factor × input bytes (1 × 4320). */
  static const char *text =
      "{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"batch\": 2, \"nodes\": [\n"
      " {\"id\": 0, \"kind\": \"F\", \"name\": \"c\", \"op\": \"Conv2d\", \"cost\": 100, \"mem\": 4320, \"deps\": [],"
      "  \"shape\": [2, 9, 5, 12], \"attrs\": {\"in_shape\": [2, 6, 10, 12], \"kernel\": [3, 5], \"stride\": [2, 1],"
      "  \"padding\": [1, 2], \"dilation\": [1, 1], \"groups\": %d}},\n"
      " {\"id\": 1, \"kind\": \"F\", \"name\": \"fc\", \"op\": \"Linear\", \"cost\": 10, \"mem\": 40, \"deps\": [0],"
      "  \"shape\": [2, 5], \"attrs\": {\"in_shape\": [2, 540]}},\n"
      " {\"id\": 2, \"kind\": \"L\", \"name\": \"loss\", \"cost\": 1, \"mem\": 4, \"deps\": [1]},\n"
      " {\"id\": 3, \"kind\": \"B\", \"name\": \"gfc\", \"op\": \"LinearBackward\", \"cost\": 20, \"mem\": 4320, \"deps\": [2, 0], \"fwd_of\": 1},\n"
      " {\"id\": 4, \"kind\": \"B\", \"name\": \"gc\", \"op\": \"Conv2dBackward\", \"cost\": 200, \"mem\": 0, \"deps\": [3], \"fwd_of\": 0}\n"
      "]}\n";
  char buf[2048];
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  cnn_k_geom geo = {1, 6, 10, 12, 9, 3, 5, 2, 1, 1, 2, 1, 1, 3};
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_CONV;
  snprintf(buf, sizeof buf, text, 3);
  REQUIRE_OK(parse_text(buf, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  CHECK(cnn_k_conv_im2col_workspace(&geo) == 7200);   /* the kernels' own buffer agrees */
  REQUIRE(sg.impl_off[1] - sg.impl_off[0] == 2);
  CHECK(fwd_ws(&sg, 0, 0) == 0 && fwd_ws(&sg, 0, 1) == 7200);
  CHECK(sg.impl[sg.impl_off[0] + 1].recompute_workspace == 7200);
  CHECK(fwd_ws(&sg, 1, 1) == 4320);                  /* linear: 1 × the conv output's bytes */
  CHECK(sg.path_ws[sg.path_off[2] + 1] == 7200 && sg.path_kind[sg.path_off[2] + 1] == 'c');   /* conv backward */
  CHECK(sg.path_ws[sg.path_off[1] + 1] == 4320);                                             /* linear backward */
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
  /* groups 1: all six channels' rows, 3 × 7200; groups 4 does not divide 6: back to the proxy (0 here) */
  snprintf(buf, sizeof buf, text, 1);
  REQUIRE_OK(parse_text(buf, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  CHECK(fwd_ws(&sg, 0, 1) == 21600 && sg.path_ws[sg.path_off[2] + 1] == 21600);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
  snprintf(buf, sizeof buf, text, 4);
  REQUIRE_OK(parse_text(buf, &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  CHECK(fwd_ws(&sg, 0, 1) == 0 && sg.path_ws[sg.path_off[2] + 1] == 0);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* Every Conv2d of two exported graphs (ResNet-50: 7x7/2 stem, 1x1 and strided convs; MobileNetV2: depthwise
   groups): the catalogue's second forward implementation and the 'c' path carry the workspace that
   examples/cnn_kernels.h's im2col computes for the node's geometry at one sample. ResNet-50's first conv by hand:
   3·7·7 rows × 112·112 columns × 4 bytes = 7375872 (the proxy gave it 0: its input is fixed memory). */
TEST(conv_workspace_from_shapes_exported) {
  static const char *files[] = {"tests/data/graphs/resnet50_b2.json", "tests/data/graphs/mobilenet_v2_b2.json"};
  for (int fi = 0; fi < 2; fi++) {
    mlsys_remat_graph g;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_catalogue c;
    int *sid, nconv = 0, ngrouped = 0, first = -1;
    REQUIRE_OK(mlsys_remat_graph_load(files[fi], &g));
    REQUIRE(g.info != NULL);
    memset(&c, 0, sizeof c);
    c.mode = MLSYS_REMAT_MONET_CONV;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
    REQUIRE((sid = (int *)calloc((size_t)g.dag.n, sizeof(int))) != NULL);
    for (int s = 0; s < sg.N; s++) if (sg.src[s] >= 0) sid[sg.src[s]] = s;
    for (int v = 0; v < g.dag.n; v++) {
      const mlsys_remat_node_info *in = &g.info[v];
      cnn_k_geom geo;
      int b, s = sid[v];
      if (g.kind[v] != MLSYS_REMAT_F || strcmp(g.op[v], "Conv2d")) continue;
      if (first < 0) first = v;
      geo.N = 1; geo.C = (int)in->in_shape[1]; geo.H = (int)in->in_shape[2]; geo.W = (int)in->in_shape[3];
      geo.K = (int)in->shape[1]; geo.KH = in->kernel[0]; geo.KW = in->kernel[1];
      geo.SH = in->stride[0]; geo.SW = in->stride[1]; geo.PH = in->pad[0]; geo.PW = in->pad[1];
      geo.DH = in->dilation[0] ? in->dilation[0] : 1; geo.DW = in->dilation[1] ? in->dilation[1] : 1;
      geo.groups = in->groups ? in->groups : 1;
      CHECK_MSG(cnn_k_conv_ok(&geo) && cnn_k_oh(&geo) == in->shape[2], "%s node %d: geometry", files[fi], v);
      nconv++;
      ngrouped += geo.groups > 1;
      CHECK_MSG(sg.impl_off[s + 1] - sg.impl_off[s] == 2 && fwd_ws(&sg, s, 1) == cnn_k_conv_im2col_workspace(&geo),
                "%s node %d: workspace %llu, kernels %zu", files[fi], v, (unsigned long long)fwd_ws(&sg, s, 1),
                cnn_k_conv_im2col_workspace(&geo));
      for (b = 0; b < g.dag.n; b++)
        if (g.kind[b] == MLSYS_REMAT_B && g.fwd_of[b] == v) {
          int t = sid[b] - sg.V + 1, q, found = 0;
          for (q = sg.path_off[t]; q < sg.path_off[t + 1]; q++)
            found += sg.path_kind[q] == 'c' && sg.path_ws[q] == cnn_k_conv_im2col_workspace(&geo);
          CHECK_MSG(found == 1, "%s node %d: backward 'c' path", files[fi], b);
        }
    }
    CHECK(nconv >= 50);
    if (fi == 0) {
      REQUIRE(first >= 0);
      CHECK(fwd_ws(&sg, sid[first], 1) == 7375872);
      CHECK(g.dag.in_off[first + 1] == g.dag.in_off[first]);   /* no node input: the old proxy's 0 */
    } else {
      CHECK(ngrouped >= 10);   /* the depthwise convs */
    }
    free(sid);
    mlsys_remat_monet_graph_free(&sg);
    mlsys_remat_graph_free(&g);
  }
}

TEST_MAIN()
