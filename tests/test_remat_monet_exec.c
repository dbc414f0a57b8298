/* Tests for mlsys_remat_monet_execute (mlsys_remat.h section 9) with SmallCNN's kernels
   (examples/remat_cnn_monet.h): MONeT plans of tests/data/graphs/smallcnn_b8.json run on real tensors.

   For every plan: the loss and every parameter gradient equal the checkpoint-all reference step
   (cnn_reference_step) bit for bit (memcmp: every implementation the glue dispatches to is bit-identical to the
   reference for this model, see examples/remat_cnn_monet.h), every graph node commits exactly once, the measured
   peak (executor-held values + workspace, plus the graph's fixed memory) equals mlsys_remat_monet_simulate's eager
   peak and the plan's replay exactly, an independent counting allocator agrees, and the executor's cost equals
   the simulated cost. Plans: MONeT (all modes) at an unbounded budget, 90 % and 80 % of the store-all peak and
   near the smallest feasible budget (bisection); MONeT-NoOp (mode 0) plans; and a hand-built schedule that uses
   every alternative (im2col forward and recomputation, packed linear, in-place ReLU, the ReLU mask, the 8-bit
   argmax, input-activated ReLU backward) at least once. No verdict depends on time: the solver's time
   limit never binds at these sizes (CBC solves each in well under a second). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "examples/remat_cnn_monet.h"
#include "tests/test.h"

#define GRAPH "tests/data/graphs/smallcnn_b8.json"
#define NEVER_BINDS 600.0

typedef struct {
  mlsys_remat_graph g;
  cnn_model m;
  mlsys_remat_monet_override ovr[4];
  mlsys_remat_monet_impl impl[8];
  int novr;
  float ref_loss;
  float *ref_grads;
} fixture;

static int fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  if (mlsys_remat_graph_load(GRAPH, &f->g) != MLSYS_OK) return 0;
  if (cnn_model_init(&f->m, 8, 7) != MLSYS_OK || cnn_bind(&f->m, &f->g) != MLSYS_OK) return 0;
  if (cnn_reference_step(&f->m) != MLSYS_OK) return 0;
  f->ref_loss = f->m.loss;
  f->novr = cnn_monet_overrides(&f->m, &f->g, 0, f->ovr, f->impl);
  if (f->novr != 4) return 0;
  f->ref_grads = (float *)mlsys_alloc(f->m.nparams, sizeof(float));
  if (!f->ref_grads) return 0;
  memcpy(f->ref_grads, f->m.grads, f->m.nparams * sizeof(float));
  return 1;
}
static void fixture_free(fixture *f) {
  cnn_model_free(&f->m);
  mlsys_remat_graph_free(&f->g);
  mlsys_free(f->ref_grads);
}

/* Execute schedule s; check results, commits, peak and cost. uses (optional) gets the glue's counts. */
static void run_schedule(fixture *f, const mlsys_remat_monet_graph *sg, const mlsys_remat_monet_schedule *s,
                         const char *what, long *uses) {
  mlsys_remat_monet_plan p;
  mlsys_remat_monet_sim sim;
  mlsys_remat_exec_stats st;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts o;
  cnn_counting cnt;
  cnn_monet x;
  mlsys_status rc;
  memset(&cnt, 0, sizeof cnt);
  A.ud = &cnt;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  CHECK_OK(mlsys_remat_monet_simulate(sg, s, MLSYS_REMAT_MONET_SIM_EAGER, &sim));
  if (mlsys_remat_monet_plan_build(&f->g, sg, s, &p) != MLSYS_OK) {
    CHECK_OK(mlsys_last_status());
    return;
  }
  if (cnn_monet_bind(&x, &f->m, &f->g, sg) != MLSYS_OK) {
    CHECK(0);
    mlsys_remat_monet_plan_free(&p);
    return;
  }
  memset(f->m.grads, 0xff, f->m.nparams * sizeof(float));   /* NaN everywhere: every gradient must be written */
  f->m.loss = -1;
  memset(f->m.evals, 0, (size_t)f->g.dag.n * sizeof(long));
  memset(f->m.commits, 0, (size_t)f->g.dag.n * sizeof(long));
  rc = mlsys_remat_monet_execute(&f->g, sg, &p, cnn_monet_kernel, &x, &o, &st);
  if (rc != MLSYS_OK) fprintf(stderr, "%s: %s\n", what, mlsys_last_error());
  CHECK_OK(rc);
  CHECK(memcmp(&f->m.loss, &f->ref_loss, sizeof(float)) == 0);
  CHECK(memcmp(f->m.grads, f->ref_grads, f->m.nparams * sizeof(float)) == 0);
  for (int v = 0; v < f->g.dag.n; v++) CHECK_EQ_INT((int)f->m.commits[v], 1);
  CHECK(st.peak_bytes + sg->fixed == sim.peak);
  CHECK(st.peak_bytes + sg->fixed == p.peak);
  CHECK(st.plan_peak == st.peak_bytes);
  CHECK(cnt.peak == st.peak_bytes);   /* the allocator's own count */
  CHECK(cnt.live == 0 && st.live_bytes == 0);
  CHECK_NEAR(st.cost, sim.cost, 1e-9 * sim.cost);
  CHECK(st.failed_step == -1);
  if (getenv("MONET_EXEC_VERBOSE"))
    fprintf(stderr, "%-28s cost %.6g peak %llu (simulated %llu) recomputes %ld\n", what, sim.cost,
            (unsigned long long)(st.peak_bytes + sg->fixed), (unsigned long long)sim.peak, st.recomputes);
  if (uses) for (int k = 0; k < CNN_MN_NUSES; k++) uses[k] += x.uses[k];
  cnn_monet_free(&x);
  mlsys_remat_monet_plan_free(&p);
}

static void catalogue(const fixture *f, unsigned mode, mlsys_remat_monet_catalogue *c) {
  memset(c, 0, sizeof *c);
  c->mode = mode;
  if (mode & MLSYS_REMAT_MONET_CONV) { c->noverride = f->novr; c->override_impl = f->ovr; }
}

static uint64_t store_all_peak(const mlsys_remat_graph *g) {
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  uint64_t pk = 0;
  memset(&c, 0, sizeof c);
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  if (mlsys_remat_monet_graph_build(g, &c, &sg) != MLSYS_OK) return 0;
  if (mlsys_remat_monet_solve(&sg, (uint64_t)1 << 40, &o, &s) == MLSYS_OK) { pk = s.peak; mlsys_remat_monet_schedule_free(&s); }
  mlsys_remat_monet_graph_free(&sg);
  return pk;
}

static void solve_and_run(fixture *f, unsigned mode, uint64_t base, long *uses) {
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  uint64_t lo, hi;
  int ran = 0;
  char what[64];
  static const int pct[] = {0, 90, 80};
  catalogue(f, mode, &c);
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&f->g, &c, &sg));
  for (int k = 0; k < 3; k++) {
    uint64_t b = pct[k] ? base / 100 * (uint64_t)pct[k] : (uint64_t)1 << 40;
    mlsys_status st = mlsys_remat_monet_solve(&sg, b, &o, &s);
    if (st == MLSYS_ERR_INFEASIBLE && mode == 0) continue;   /* NoOp cannot go as low as MONeT */
    REQUIRE_OK(st);
    CHECK(s.peak <= b);
    snprintf(what, sizeof what, "mode %u at %d%%", mode, pct[k] ? pct[k] : 100);
    run_schedule(f, &sg, &s, what, uses);
    mlsys_remat_monet_schedule_free(&s);
    ran++;
  }
  /* near the smallest feasible budget: bisection between the fixed memory (infeasible) and the store-all peak */
  lo = sg.fixed; hi = base;
  for (int it = 0; it < 6; it++) {
    uint64_t mid = lo + (hi - lo) / 2;
    mlsys_status st = mlsys_remat_monet_solve(&sg, mid, &o, &s);
    if (st == MLSYS_ERR_INFEASIBLE) { lo = mid; continue; }
    REQUIRE_OK(st);
    mlsys_remat_monet_schedule_free(&s);
    hi = mid;
  }
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, hi, &o, &s));
  CHECK(s.peak <= hi);
  snprintf(what, sizeof what, "mode %u near min (%llu)", mode, (unsigned long long)hi);
  run_schedule(f, &sg, &s, what, uses);
  mlsys_remat_monet_schedule_free(&s);
  CHECK(ran >= 1);
  mlsys_remat_monet_graph_free(&sg);
}

TEST(monet_plans_match_reference) {
  fixture f;
  long uses[CNN_MN_NUSES] = {0};
  uint64_t base;
  REQUIRE(fixture_init(&f));
  base = store_all_peak(&f.g);
  REQUIRE(base > 0);
  solve_and_run(&f, MLSYS_REMAT_MONET_ALL, base, uses);
  CHECK(uses[CNN_MN_FWD_IM2COL] > 0);   /* the unbounded optimum takes the fast algorithms */
  CHECK(uses[CNN_MN_BWD_C] > 0);        /* forward and backward */
  fixture_free(&f);
}

/* The param-grad/input-grad split (MLSYS_REMAT_MONET_SPLIT): ILP plans at every budget of solve_and_run run in
   halves, bit-identical to the reference, measured peak = simulated = replayed; and the same schedules simulated
   without the split never peak lower (the split only frees earlier). */
TEST(monet_split_plans_match_reference) {
  fixture f;
  long uses[CNN_MN_NUSES] = {0};
  uint64_t base;
  mlsys_remat_monet_graph sg, sg0;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts o;
  int lower = 0;
  REQUIRE(fixture_init(&f));
  base = store_all_peak(&f.g);
  REQUIRE(base > 0);
  solve_and_run(&f, MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT, base, uses);
  CHECK(uses[CNN_MN_BWD_HALF1] > 0 && uses[CNN_MN_BWD_HALF1] == uses[CNN_MN_BWD_HALF2]);
  catalogue(&f, MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT, &c);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&f.g, &c, &sg));
  catalogue(&f, MLSYS_REMAT_MONET_ALL, &c);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&f.g, &c, &sg0));
  REQUIRE(sg.V == sg0.V && sg.T == sg0.T && sg.path_off[sg.T] == sg0.path_off[sg0.T]);
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  for (int pct = 100; pct >= 60; pct -= 10) {
    mlsys_remat_monet_schedule s;
    mlsys_remat_monet_sim a, b;
    if (mlsys_remat_monet_solve(&sg, base / 100 * (uint64_t)pct, &o, &s) != MLSYS_OK) continue;
    CHECK_OK(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &a));
    CHECK_OK(mlsys_remat_monet_simulate(&sg0, &s, MLSYS_REMAT_MONET_SIM_EAGER, &b));
    CHECK(a.peak <= b.peak && a.cost == b.cost);
    lower += a.peak < b.peak;
    mlsys_remat_monet_schedule_free(&s);
  }
  if (getenv("MONET_EXEC_VERBOSE")) fprintf(stderr, "split lowered the peak of %d schedules\n", lower);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_monet_graph_free(&sg0);
  fixture_free(&f);
}

TEST(monet_noop_plans_match_reference) {
  fixture f;
  long uses[CNN_MN_NUSES] = {0};
  uint64_t base;
  REQUIRE(fixture_init(&f));
  base = store_all_peak(&f.g);
  REQUIRE(base > 0);
  solve_and_run(&f, 0, base, uses);
  CHECK_EQ_INT((int)(uses[CNN_MN_FWD_IM2COL] + uses[CNN_MN_FWD_MASK] + uses[CNN_MN_FWD_INPLACE]), 0);
  fixture_free(&f);
}

/* ---- a hand-built schedule that takes every alternative ---- */
static int node_of(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg, const char *name) {
  for (int v = 0; v < sg->N; v++)
    if (sg->src[v] >= 0 && !strcmp(g->dag.name[sg->src[v]], name)) return v;
  return -1;
}
static int int_of(const mlsys_remat_monet_graph *sg, int parent) {
  for (int v = 0; v < sg->V; v++) if (sg->parent[v] == parent) return v;
  return -1;
}
static int path_of(const mlsys_remat_monet_graph *sg, int b, char kind) {
  int t = b - sg->V + 1;
  for (int k = sg->path_off[t]; k < sg->path_off[t + 1]; k++) if (sg->path_kind[k] == kind) return k - sg->path_off[t];
  return -1;
}

TEST(hand_built_schedule_takes_every_alternative) {
  fixture f;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_schedule s;
  long uses[CNN_MN_NUSES] = {0};
  int conv1, relu1, pool1, conv2, relu2, fc1, fc2, relu3, V, T, t2;
  REQUIRE(fixture_init(&f));
  catalogue(&f, MLSYS_REMAT_MONET_ALL, &c);
  REQUIRE_OK(mlsys_remat_monet_graph_build(&f.g, &c, &sg));
  V = sg.V; T = sg.T;
  conv1 = node_of(&f.g, &sg, "conv1"); relu1 = node_of(&f.g, &sg, "relu1"); pool1 = node_of(&f.g, &sg, "pool1");
  conv2 = node_of(&f.g, &sg, "conv2"); relu2 = node_of(&f.g, &sg, "relu2"); fc1 = node_of(&f.g, &sg, "fc1");
  fc2 = node_of(&f.g, &sg, "fc2"); relu3 = node_of(&f.g, &sg, "relu3");
  REQUIRE(conv1 >= 0 && relu1 >= 0 && pool1 >= 0 && conv2 >= 0 && relu2 >= 0 && fc1 >= 0 && fc2 >= 0 && relu3 >= 0);
  REQUIRE(sg.inplace_of[relu1] == conv1);
  REQUIRE_OK(mlsys_remat_monet_schedule_alloc(V, T, &s));
  memset(s.F, -1, (size_t)T * V);
  /* stage 0: everything, IntNodes included; conv1/conv2/fc1 by their second implementation; relu1 in place */
  for (int v = 0; v < V; v++) { s.R[v] = 1; s.F[v] = 0; }
  s.F[conv1] = s.F[conv2] = s.F[fc1] = 1;
  s.IP[relu1] = 1;
  /* stored through every stage: all but conv1 (overwritten in place) and conv2 (recomputed where needed) */
  for (int t = 1; t < T; t++)
    for (int v = 0; v < V; v++) s.S[(size_t)t * V + v] = v != conv1 && v != conv2;
  /* paths: relu1 by its mask, pool1 by its argmax, relu2 from its input (conv2, recomputed by im2col in that
     stage); the rest by the graph's own deps */
  for (int t = 1; t < T; t++) s.M[t] = (signed char)path_of(&sg, V + t - 1, 'g');
  {
    int b1 = node_of(&f.g, &sg, "grad_relu1"), bp = node_of(&f.g, &sg, "grad_pool1"),
        b2 = node_of(&f.g, &sg, "grad_relu2"), b3 = node_of(&f.g, &sg, "grad_relu3"), bp2 = node_of(&f.g, &sg, "grad_pool2");
    REQUIRE(b1 >= 0 && bp >= 0 && b2 >= 0 && b3 >= 0 && bp2 >= 0);
    REQUIRE(path_of(&sg, b1, 'm') >= 0 && path_of(&sg, bp, 'a') >= 0 && path_of(&sg, b2, 'i') >= 0 &&
            path_of(&sg, bp2, 'a') >= 0);
    /* the exporter's ReLU backward reads the output, so 'o' duplicates 'g' and is dropped: 'g' is output-activated */
    CHECK(path_of(&sg, b3, 'o') < 0);
    REQUIRE(int_of(&sg, relu1) >= 0 && int_of(&sg, pool1) >= 0);
    s.M[b1 - V + 1] = (signed char)path_of(&sg, b1, 'm');
    s.M[bp - V + 1] = (signed char)path_of(&sg, bp, 'a');
    s.M[b2 - V + 1] = (signed char)path_of(&sg, b2, 'i');
    s.M[bp2 - V + 1] = (signed char)path_of(&sg, bp2, 'a');
    {   /* the faster backward algorithms: conv2 (im2col dw/dx) and fc1 (packed input) */
      int bc2 = node_of(&f.g, &sg, "grad_conv2"), bf1 = node_of(&f.g, &sg, "grad_fc1");
      REQUIRE(bc2 >= 0 && bf1 >= 0 && path_of(&sg, bc2, 'c') >= 0 && path_of(&sg, bf1, 'c') >= 0);
      s.M[bc2 - V + 1] = (signed char)path_of(&sg, bc2, 'c');
      s.M[bf1 - V + 1] = (signed char)path_of(&sg, bf1, 'c');
    }
    t2 = b2 - V + 1;
    s.R[(size_t)t2 * V + conv2] = 1;
    s.F[(size_t)t2 * V + conv2] = 1;
  }
  (void)fc2;
  run_schedule(&f, &sg, &s, "hand-built", uses);
  for (int k = 0; k < CNN_MN_NUSES; k++) {
    if (k == CNN_MN_BWD_O) continue;   /* never a path of its own on this graph (see above) */
    if (k == CNN_MN_BWD_HALF1 || k == CNN_MN_BWD_HALF2) continue;   /* SPLIT mode: monet_split_plans_match_reference */
    if (!uses[k]) fprintf(stderr, "alternative %d never ran\n", k);
    CHECK(uses[k] > 0);
  }
  CHECK_EQ_INT((int)uses[CNN_MN_FWD_IM2COL], 3);    /* conv1 and conv2 forward, conv2 recomputed */
  CHECK_EQ_INT((int)uses[CNN_MN_FWD_ARGMAX], 2);    /* pool1 and pool2 */
  CHECK_EQ_INT((int)uses[CNN_MN_FWD_MASK], 3);      /* relu1..3 */
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  fixture_free(&f);
}

/* A plan that the replay rejects runs nothing; a failing kernel releases everything. */
static mlsys_status failing_kernel(void *ud, const mlsys_remat_monet_call *c) {
  int *calls = (int *)ud;
  (void)c;
  if (++*calls == 5) return mlsys_set_error(MLSYS_ERR_ARG, "injected");
  return MLSYS_OK;
}
TEST(bad_plans_and_failing_kernels) {
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_plan p;
  mlsys_remat_exec_stats st;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts eo;
  cnn_counting cnt;
  int calls = 0;
  REQUIRE_OK(mlsys_remat_graph_load(GRAPH, &g));
  memset(&c, 0, sizeof c);
  c.mode = MLSYS_REMAT_MONET_ALL;
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &c, &sg));
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, (uint64_t)1 << 40, &o, &s));
  REQUIRE_OK(mlsys_remat_monet_plan_build(&g, &sg, &s, &p));
  memset(&cnt, 0, sizeof cnt);
  A.ud = &cnt;
  memset(&eo, 0, sizeof eo);
  eo.allocator = &A;
  CHECK_EQ_INT(mlsys_remat_monet_execute(&g, &sg, &p, failing_kernel, &calls, &eo, &st), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "injected");
  CHECK_EQ_INT(calls, 5);
  CHECK(st.failed_step >= 0);
  CHECK(cnt.live == 0);
  /* the limit: one byte under the measured peak fails before allocating */
  calls = -1000;
  cnt.live = cnt.peak = 0;
  eo.limit = p.peak - sg.fixed - 1;
  CHECK_EQ_INT(mlsys_remat_monet_execute(&g, &sg, &p, failing_kernel, &calls, &eo, &st), MLSYS_ERR_NOMEM);
  CHECK(cnt.live == 0);
  CHECK(cnt.peak <= eo.limit);
  /* a plan whose first step is dropped is rejected before any kernel runs */
  calls = 0;
  eo.limit = 0;
  p.steps++; p.nsteps--;
  CHECK_EQ_INT(mlsys_remat_monet_execute(&g, &sg, &p, failing_kernel, &calls, &eo, &st), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "invalid plan");
  CHECK_EQ_INT(calls, 0);
  p.steps--; p.nsteps++;
  mlsys_remat_monet_plan_free(&p);
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

TEST_MAIN()
