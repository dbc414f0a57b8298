/* tests/test_remat_exec.c — mlsys_remat_execute: plans run on real buffers.

   Two kinds of kernels. A mock kernel on synthetic graphs fills every output with a pattern derived from a hash of
   the node and of its inputs' hashes (computed here from the graph alone), and checks that each input buffer holds
   exactly the pattern of the producer the graph names, with that producer's byte count: a wrong register, a
   buffer freed too early and reused, or a recomputation that differs would all show. Then the small CNN of
   examples/remat_cnn_layers.h on its exported PyTorch graph: parameter gradients of every schedule equal, bit for
   bit, those of a straight-line implementation of the step, which itself agrees with finite differences (and,
   outside this test, with PyTorch: tools/check_smallcnn_grads.py).

   For every run the peak the allocator measured must equal the simulator's (plans with flags 0) or the plan's
   (optimised plans), and a failure (kernel, allocator, limit, inconsistent plan) must return its status with the
   problem named and leave nothing allocated. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

/* The limit of solves whose outcome is checked (a MILP schedule at the smallest budget, the smallest budget
   itself): a safety net that never binds on the 21-node CNN graph (each solve well under a second), so no
   verdict depends on the machine's load. */
#define NEVER_BINDS 600.0
#include "examples/remat_cnn_layers.h"

#define CNN_GRAPH "tests/data/graphs/smallcnn_b8.json"
#ifndef FD_H
#define FD_H 1e-3f
#endif

static const char *lasterr(void) {
  static char buf[600];
  snprintf(buf, sizeof buf, "%.599s", mlsys_last_error());
  return buf;
}

/* ---------------------------------------------------------------------------------------------------------------
   The mock kernel
   --------------------------------------------------------------------------------------------------------------- */
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}
static unsigned char pattern_byte(uint64_t e, uint64_t i) { return (unsigned char)((e >> ((i % 8) * 8)) ^ (i * 131u)); }

typedef struct {
  const mlsys_remat_graph *g;
  uint64_t *E;              /* the value every node must produce: mix of its id and its inputs' values */
  long *evals, *commits;
  long calls;
  int fail_node;            /* >= 0: fail this node's fail_eval-th evaluation (1-based) */
  int fail_eval;
  int fail_quietly;         /* return the status without mlsys_set_error */
  int bad;                  /* input mismatches seen */
  char why[256];
} mock;

static mlsys_status mock_init(mock *M, const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  int v, j;
  memset(M, 0, sizeof *M);
  M->g = g;
  M->fail_node = -1;
  M->E = (uint64_t *)calloc((size_t)d->n + 1, sizeof(uint64_t));
  M->evals = (long *)calloc((size_t)d->n + 1, sizeof(long));
  M->commits = (long *)calloc((size_t)d->n + 1, sizeof(long));
  if (!M->E || !M->evals || !M->commits) return MLSYS_ERR_NOMEM;
  for (v = 0; v < d->n; v++) {
    uint64_t h = mix(0x1234, (uint64_t)v + 1);
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) h = mix(h, M->E[d->in[j]]);
    M->E[v] = h;
  }
  return MLSYS_OK;
}
static void mock_reset(mock *M) {
  memset(M->evals, 0, sizeof(long) * (size_t)M->g->dag.n);
  memset(M->commits, 0, sizeof(long) * (size_t)M->g->dag.n);
  M->calls = 0;
  M->bad = 0;
  M->why[0] = 0;
}
static void mock_free(mock *M) { free(M->E); free(M->evals); free(M->commits); }

static void mock_bad(mock *M, const char *fmt, int a, int b) {
  if (!M->bad++) snprintf(M->why, sizeof M->why, fmt, a, b);
}

static mlsys_status mock_kernel(void *ud, int node, void *const *in, const uint64_t *in_bytes, int nin, void *out,
                                uint64_t out_bytes, int commit) {
  mock *M = (mock *)ud;
  const mlsys_dag *d = &M->g->dag;
  int j;
  uint64_t i;
  M->calls++;
  M->evals[node]++;
  M->commits[node] += commit != 0;
  if (node == M->fail_node && M->evals[node] == M->fail_eval) {
    if (M->fail_quietly) return MLSYS_ERR_UNSUPPORTED;
    return mlsys_set_error(MLSYS_ERR_CUDA, "mock failure in node %d", node);
  }
  if (nin != d->in_off[node + 1] - d->in_off[node]) mock_bad(M, "node %d: %d inputs", node, nin);
  if (out_bytes != d->size[node] || (out_bytes == 0) != (out == NULL)) mock_bad(M, "node %d: output %d", node, (int)out_bytes);
  for (j = 0; j < nin; j++) {
    int u = d->in[d->in_off[node] + j];
    const unsigned char *b = (const unsigned char *)in[j];
    if (in_bytes[j] != d->size[u] || (d->size[u] == 0) != (b == NULL)) { mock_bad(M, "node %d: input %d size", node, j); continue; }
    for (i = 0; i < d->size[u]; i++)
      if (b[i] != pattern_byte(M->E[u], i)) { mock_bad(M, "node %d: input %d holds the wrong bytes", node, j); break; }
  }
  for (i = 0; i < out_bytes; i++) ((unsigned char *)out)[i] = pattern_byte(M->E[node], i);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   Graphs and schedules
   --------------------------------------------------------------------------------------------------------------- */
/* A random DAG: 0-3 inputs per node (mostly recent ones), 0-64 bytes (some zero), costs 0-5. */
static mlsys_status make_dag(mlsys_rng *r, int n, mlsys_remat_graph *g) {
  mlsys_remat_node nodes[64];
  int deps[64][4], v, j;
  memset(nodes, 0, sizeof nodes);
  for (v = 0; v < n; v++) {
    int want = v == 0 ? 0 : mlsys_rng_range(r, v == 1 ? 1 : 0, v < 3 ? v : 3);
    while (nodes[v].ndeps < want) {
      int c = mlsys_rng_below(r, 3) ? v - 1 - (int)mlsys_rng_below(r, (uint64_t)(v < 3 ? v : 3))
                                    : (int)mlsys_rng_below(r, (uint64_t)v), dup = 0;
      for (j = 0; j < nodes[v].ndeps; j++) dup |= deps[v][j] == c;
      if (!dup) deps[v][nodes[v].ndeps++] = c;
    }
    nodes[v].deps = deps[v];
    nodes[v].kind = MLSYS_REMAT_F;
    nodes[v].cost = mlsys_rng_range(r, 0, 5);
    nodes[v].mem = mlsys_rng_below(r, 5) == 0 ? 0 : (uint64_t)mlsys_rng_range(r, 1, 64);
  }
  return mlsys_remat_graph_create(n, nodes, g);
}

/* A valid schedule from a random S (density p) and the cheapest R for it; with redundant = 1 also some values
   recomputed while resident (the raw MILP's double allocations), wherever their inputs are at hand. */
static mlsys_status random_schedule(mlsys_rng *r, const mlsys_remat_graph *g, double p, int redundant,
                                    mlsys_remat_schedule *s) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, t, i, j;
  mlsys_status st = mlsys_remat_schedule_alloc(n, s);
  if (st != MLSYS_OK) return st;
  for (t = 1; t < n; t++)
    for (i = 0; i < t; i++) s->S[t * n + i] = mlsys_rng_uniform(r) < p;
  mlsys_remat_min_r(g, s->S, s->R);
  if (redundant)
    for (t = 1; t < n; t++)
      for (i = 0; i < t; i++)
        if (s->S[t * n + i] && !s->R[t * n + i] && mlsys_rng_below(r, 4) == 0) {
          int ok = 1;
          for (j = d->in_off[i]; j < d->in_off[i + 1]; j++) {
            int u = d->in[j];
            ok &= s->S[t * n + u] || s->R[t * n + u];
          }
          if (ok) s->R[t * n + i] = 1;
        }
  s->budget = UINT64_MAX;
  return mlsys_remat_evaluate(g, s);
}

/* Execute plan p with the mock kernel and a counting allocator; check the contract. Returns the measured peak. */
static uint64_t run_mock(const mlsys_remat_graph *g, mock *M, const mlsys_remat_plan *p, const char *what) {
  cnn_counting count;
  mlsys_remat_allocator A;
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  int v, computes = 0;
  mlsys_status rc;
  memset(&count, 0, sizeof count);
  A.alloc = cnn_counting_alloc;
  A.release = cnn_counting_release;
  A.ud = &count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  mock_reset(M);
  rc = mlsys_remat_execute(g, p, mock_kernel, M, &o, &st);
  CHECK_MSG(rc == MLSYS_OK, "%s: %s", what, lasterr());
  CHECK_MSG(!M->bad, "%s: %d bad inputs, first: %s", what, M->bad, M->why);
  CHECK_MSG(count.live == 0 && count.allocs == count.releases, "%s: %llu bytes left, %ld allocs, %ld releases", what,
            (unsigned long long)count.live, count.allocs, count.releases);
  CHECK_MSG(count.peak == st.peak_bytes && st.peak_bytes == st.plan_peak && st.plan_peak == p->peak,
            "%s: allocator %llu, executor %llu, replay %llu, plan %llu", what, (unsigned long long)count.peak,
            (unsigned long long)st.peak_bytes, (unsigned long long)st.plan_peak, (unsigned long long)p->peak);
  CHECK_EQ_INT(st.allocations, count.allocs);
  CHECK_EQ_INT(st.frees, count.releases);
  CHECK_EQ_INT(st.live_bytes, 0);
  CHECK_EQ_INT(st.failed_step, -1);
  for (v = 0; v < p->nops; v++) computes += p->ops[v].op == MLSYS_REMAT_OP_COMPUTE;
  CHECK_EQ_INT(st.computes, computes);
  CHECK_EQ_INT(M->calls, computes);
  for (v = 0; v < g->dag.n; v++) CHECK_MSG(M->commits[v] == 1, "%s: node %d committed %ld times", what, v, M->commits[v]);
  CHECK_EQ_INT(st.recomputes, computes - g->dag.n);
  return count.peak;
}

/* Flags 0 must reach exactly the simulator's MILP peak and cost; the optimised flags exactly the plan's peak, which
   is never above it. Returns 1 when the fully optimised plan's peak equals the EAGER simulation. */
static int check_schedule_mock(const mlsys_remat_graph *g, mock *M, const mlsys_remat_schedule *s, const char *what) {
  mlsys_remat_sim milp, eager;
  mlsys_remat_plan p;
  uint64_t peak, eager_plan = 0;
  unsigned flags;
  char w[160];
  REQUIRE_OK(mlsys_remat_simulate(g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &milp, NULL));
  REQUIRE_OK(mlsys_remat_simulate(g, s->R, s->S, MLSYS_REMAT_SIM_EAGER, &eager, NULL));
  for (flags = 0; flags <= 3; flags++) {
    snprintf(w, sizeof w, "%s, plan flags %u", what, flags);
    REQUIRE_OK(mlsys_remat_plan_build(g, s, flags, &p));
    peak = run_mock(g, M, &p, w);
    if (flags == 0) {
      CHECK_MSG(peak == milp.peak, "%s: measured %llu, simulated %llu", w, (unsigned long long)peak,
                (unsigned long long)milp.peak);
      CHECK_MSG(p.peak == milp.peak, "%s: plan %llu, simulated %llu", w, (unsigned long long)p.peak,
                (unsigned long long)milp.peak);
    } else {
      CHECK_MSG(peak <= milp.peak, "%s: measured %llu above the faithful %llu", w, (unsigned long long)peak,
                (unsigned long long)milp.peak);
    }
    if (flags == 3) eager_plan = peak;
    mlsys_remat_plan_free(&p);
  }
  return eager_plan == eager.peak;
}

TEST(mock_random_schedules_measured_peak_equals_simulator) {
  mlsys_rng r;
  int k, runs = 0, eager_equal = 0, nonzero_recompute = 0;
  static const double dens[4] = {0.0, 0.15, 0.4, 0.8};
  mlsys_rng_seed(&r, 7);
  for (k = 0; k < 60; k++) {
    mlsys_remat_graph g;
    mock M;
    int n = mlsys_rng_range(&r, 2, 40), q, q2;
    REQUIRE_OK(make_dag(&r, n, &g));
    REQUIRE_OK(mock_init(&M, &g));
    for (q = 0; q < 8; q++) {
      mlsys_remat_schedule s;
      char what[96];
      REQUIRE_OK(random_schedule(&r, &g, dens[q % 4], q >= 4, &s));
      snprintf(what, sizeof what, "dag #%d (n=%d) S density %.2f%s", k, n, dens[q % 4], q >= 4 ? " + redundant" : "");
      q2 = check_schedule_mock(&g, &M, &s, what);
      eager_equal += q2;
      /* min-R schedules: the optimised plan is exactly the EAGER simulation. With values recomputed while
         resident and read by nobody in the stage, it is not: EARLY_FREE drops them at the stage start, the
         recomputation allocates them again, and the plan (unlike the simulator) keeps them to the stage end */
      if (q < 4) CHECK_MSG(q2, "%s: optimised plan peak differs from the EAGER simulation", what);
      nonzero_recompute += s.cost > s.baseline_cost;
      runs++;
      mlsys_remat_schedule_free(&s);
    }
    mock_free(&M);
    mlsys_remat_graph_free(&g);
  }
  printf("    %d schedules x 4 plan variants; %d recompute; optimised plan peak = EAGER simulation in %d\n", runs,
         nonzero_recompute, eager_equal);
  CHECK(nonzero_recompute > runs / 2);
}

/* Every method on chains and on the thesis's chain at several budgets. */
TEST(mock_methods_on_chains) {
  int L, m, f;
  for (L = 2; L <= 12; L += 2) {
    mlsys_remat_graph g;
    mlsys_remat_schedule all;
    mlsys_remat_opts o;
    mock M;
    REQUIRE_OK(mlsys_remat_graph_chain(L, &g));
    REQUIRE_OK(mock_init(&M, &g));
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    REQUIRE_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &all));
    for (f = 0; f <= 4; f++) {
      uint64_t B = all.peak_total * (uint64_t)(4 + f) / 8;
      for (m = 0; m < MLSYS_REMAT_METHOD_COUNT; m++) {
        mlsys_remat_schedule s;
        char what[160];
        memset(&o, 0, sizeof o);
        o.method = (mlsys_remat_method)m;
        o.time_limit = 10;
        if (mlsys_remat_solve(&g, B, &o, &s) == MLSYS_OK || s.n > 0) {
          snprintf(what, sizeof what, "chain L=%d B=%llu %s", L, (unsigned long long)B, s.method);
          check_schedule_mock(&g, &M, &s, what);
        }
        mlsys_remat_schedule_free(&s);
      }
    }
    mlsys_remat_schedule_free(&all);
    mock_free(&M);
    mlsys_remat_graph_free(&g);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   Failures
   --------------------------------------------------------------------------------------------------------------- */
/* A schedule with recomputation on a 6-layer chain (Chen's sqrt(n)): node ids for failures in both kinds of
   evaluation. */
static void chain_plan(mlsys_remat_graph *g, mlsys_remat_schedule *s, mlsys_remat_plan *p) {
  mlsys_remat_opts o;
  REQUIRE_OK(mlsys_remat_graph_chain(6, g));
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHEN_SQRTN;
  mlsys_remat_solve(g, UINT64_MAX, &o, s);
  REQUIRE(s->n == g->dag.n && s->cost > s->baseline_cost);
  REQUIRE_OK(mlsys_remat_plan_build(g, s, 0, p));
}

TEST(kernel_failure_propagates_and_leaks_nothing) {
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  mlsys_remat_plan p;
  mock M;
  int v, quiet, recomputed = -1, k;
  chain_plan(&g, &s, &p);
  REQUIRE_OK(mock_init(&M, &g));
  for (k = 0; k < p.nops; k++)
    if (p.ops[k].op == MLSYS_REMAT_OP_COMPUTE && !p.ops[k].commit) { recomputed = p.ops[k].node; break; }
  REQUIRE(recomputed >= 0);
  for (quiet = 0; quiet <= 1; quiet++)
    for (v = 0; v <= g.dag.n; v++) {
      cnn_counting count;
      mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
      mlsys_remat_exec_opts o;
      mlsys_remat_exec_stats st;
      mlsys_status rc;
      int node = v < g.dag.n ? v : recomputed, eval = v < g.dag.n ? 1 : 2;
      memset(&count, 0, sizeof count);
      A.ud = &count;
      memset(&o, 0, sizeof o);
      o.allocator = &A;
      mock_reset(&M);
      M.fail_node = node;
      M.fail_eval = eval;
      M.fail_quietly = quiet;
      rc = mlsys_remat_execute(&g, &p, mock_kernel, &M, &o, &st);
      CHECK_EQ_INT(rc, quiet ? MLSYS_ERR_UNSUPPORTED : MLSYS_ERR_CUDA);
      CHECK_EQ_INT(mlsys_last_status(), rc);
      CHECK_CONTAINS(lasterr(), "the kernel of");
      CHECK_CONTAINS(lasterr(), quiet ? "returned 'unsupported" : "mock failure in node");
      if (eval == 2) CHECK_CONTAINS(lasterr(), "(recomputation)");
      CHECK_MSG(count.live == 0 && count.allocs == count.releases, "node %d: %llu bytes leaked", node,
                (unsigned long long)count.live);
      CHECK(st.failed_step >= 0 && st.failed_step < p.nops && p.ops[st.failed_step].node == node);
      CHECK_EQ_INT(M.calls, st.computes);   /* nothing ran after the failure */
    }
  mock_free(&M);
  mlsys_remat_plan_free(&p);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

TEST(allocation_failures_and_limits_leak_nothing) {
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  mlsys_remat_plan p;
  mock M;
  long k, total;
  cnn_counting count;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  chain_plan(&g, &s, &p);
  REQUIRE_OK(mock_init(&M, &g));
  memset(&count, 0, sizeof count);
  A.ud = &count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  REQUIRE_OK(mlsys_remat_execute(&g, &p, mock_kernel, &M, &o, &st));
  total = count.allocs;
  REQUIRE(total > 3);
  for (k = 1; k <= total; k++) {   /* every allocation fails in turn */
    memset(&count, 0, sizeof count);
    count.fail_at = k;
    mock_reset(&M);
    CHECK_EQ_INT(mlsys_remat_execute(&g, &p, mock_kernel, &M, &o, &st), MLSYS_ERR_NOMEM);
    CHECK_CONTAINS(lasterr(), "(injected)");
    CHECK_CONTAINS(lasterr(), "allocating");
    CHECK_MSG(count.live == 0 && count.allocs == count.releases, "allocation %ld: %llu bytes leaked", k,
              (unsigned long long)count.live);
    CHECK_EQ_INT(count.allocs, k - 1);
  }
  /* a live-byte limit: the plan's peak runs, one byte less does not */
  memset(&count, 0, sizeof count);
  o.limit = p.peak;
  CHECK_OK(mlsys_remat_execute(&g, &p, mock_kernel, &M, &o, &st));
  o.limit = p.peak - 1;
  CHECK_EQ_INT(mlsys_remat_execute(&g, &p, mock_kernel, &M, &o, &st), MLSYS_ERR_NOMEM);
  CHECK_CONTAINS(lasterr(), "over the limit of");
  CHECK_EQ_INT(count.live, 0);
  CHECK(st.peak_bytes <= p.peak - 1);
  /* default allocator (malloc), no stats, no opts */
  mock_reset(&M);
  CHECK_OK(mlsys_remat_execute(&g, &p, mock_kernel, &M, NULL, NULL));
  CHECK(!M.bad);
  mock_free(&M);
  mlsys_remat_plan_free(&p);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

/* Inconsistent plans: rejected with MLSYS_ERR_ARG and the step named, before any kernel runs. */
static void expect_rejected(const mlsys_remat_graph *g, const mlsys_remat_plan *q, mock *M, const char *what,
                            const char *needle) {
  cnn_counting count;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  memset(&count, 0, sizeof count);
  A.ud = &count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  mock_reset(M);
  CHECK_MSG(mlsys_remat_execute(g, q, mock_kernel, M, &o, &st) == MLSYS_ERR_ARG, "%s: not rejected", what);
  CHECK_MSG(strstr(lasterr(), "invalid plan") && strstr(lasterr(), needle), "%s: message \"%s\" lacks \"%s\"", what,
            lasterr(), needle);
  CHECK_MSG(M->calls == 0 && count.allocs == 0, "%s: %ld kernel calls, %ld allocations", what, M->calls, count.allocs);
}

TEST(inconsistent_plans_rejected_before_running) {
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  mlsys_remat_plan p, q;
  mock M;
  mlsys_remat_op *ops;
  int *in;
  int k, nin_total, first_free = -1, first_recompute = -1, first_with_input = -1;
  chain_plan(&g, &s, &p);
  REQUIRE_OK(mock_init(&M, &g));
  ops = (mlsys_remat_op *)malloc(sizeof *ops * (size_t)(p.nops + 1));
  for (k = 0, nin_total = 0; k < p.nops; k++)
    if (p.ops[k].op == MLSYS_REMAT_OP_COMPUTE && p.ops[k].in_off + p.ops[k].nin > nin_total)
      nin_total = p.ops[k].in_off + p.ops[k].nin;
  in = (int *)malloc(sizeof(int) * (size_t)(nin_total + 1));
  REQUIRE(ops && in);
  for (k = 0; k < p.nops; k++) {
    if (p.ops[k].op == MLSYS_REMAT_OP_FREE && first_free < 0) first_free = k;
    if (p.ops[k].op == MLSYS_REMAT_OP_COMPUTE && !p.ops[k].commit && first_recompute < 0) first_recompute = k;
    if (p.ops[k].op == MLSYS_REMAT_OP_COMPUTE && p.ops[k].nin > 0 && first_with_input < 0) first_with_input = k;
  }
  REQUIRE(first_free >= 0 && first_recompute >= 0 && first_with_input >= 0);
#define RESET() (memcpy(ops, p.ops, sizeof *ops * (size_t)p.nops), q = p, q.ops = ops)
  RESET();   /* a FREE repeated right away: double free */
  memmove(ops + first_free + 1, ops + first_free, sizeof *ops * (size_t)(p.nops - first_free));
  q.nops = p.nops + 1;
  expect_rejected(&g, &q, &M, "double free", "not live");
  RESET();   /* the first compute with inputs moved to the front: its input is not live yet */
  ops[0] = p.ops[first_with_input];
  expect_rejected(&g, &q, &M, "use before compute", "step 0");
  RESET();   /* a register out of range */
  ops[first_free].reg = p.nregs + 5;
  expect_rejected(&g, &q, &M, "bad register", "out of range");
  RESET();   /* a recomputation marked commit: side effects twice */
  ops[first_recompute].commit = 1;
  expect_rejected(&g, &q, &M, "commit twice", "again");
  RESET();   /* no commit at all for node 0 */
  ops[0].commit = 0;
  expect_rejected(&g, &q, &M, "never committed", "never commits");
  RESET();   /* an input register holding another node's value */
  memcpy(in, p.in_regs, sizeof(int) * (size_t)nin_total);
  q.in_regs = in;
  for (k = 0; k < p.nops; k++)
    if (p.ops[k].op == MLSYS_REMAT_OP_COMPUTE && p.ops[k].nin >= 2) { in[p.ops[k].in_off] = in[p.ops[k].in_off + 1]; break; }
  expect_rejected(&g, &q, &M, "wrong input", "holds another value");
  RESET();   /* the last compute dropped: a node never computed (the plan's frees of it dropped too) */
  q.nops = 0;
  for (k = 0; k < p.nops; k++)
    if (!(p.ops[k].node == g.dag.n - 1)) ops[q.nops++] = p.ops[k];
  expect_rejected(&g, &q, &M, "node never computed", "never computes");
#undef RESET
  /* arguments */
  CHECK_EQ_INT(mlsys_remat_execute(&g, &p, NULL, &M, NULL, NULL), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_execute(NULL, &p, mock_kernel, &M, NULL, NULL), MLSYS_ERR_ARG);
  free(ops);
  free(in);
  mock_free(&M);
  mlsys_remat_plan_free(&p);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

/* ---------------------------------------------------------------------------------------------------------------
   The CNN
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_remat_graph g;
  cnn_model m;
  float *ref_grads;
  float ref_loss;
  uint64_t fixed, act_all, min_budget;
  int ok;
} cnn_fixture;
static cnn_fixture F;

static cnn_fixture *cnn_setup(void) {
  mlsys_remat_schedule s;
  mlsys_remat_opts o;
  int proven;
  if (F.ok) return &F;
  REQUIRE_OK(mlsys_remat_graph_load(CNN_GRAPH, &F.g));
  REQUIRE_OK(cnn_model_init(&F.m, F.g.batch, 1));
  REQUIRE_OK(cnn_bind(&F.m, &F.g));
  REQUIRE_OK(cnn_reference_step(&F.m));
  F.ref_grads = (float *)malloc(F.m.nparams * sizeof(float));
  REQUIRE(F.ref_grads);
  memcpy(F.ref_grads, F.m.grads, F.m.nparams * sizeof(float));
  F.ref_loss = F.m.loss;
  F.fixed = mlsys_remat_fixed_total(&F.g);
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  REQUIRE_OK(mlsys_remat_solve(&F.g, UINT64_MAX, &o, &s));
  F.act_all = s.peak;
  mlsys_remat_schedule_free(&s);
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;   /* min_budget must be the minimum: checks below rest on it */
  REQUIRE_OK(mlsys_remat_min_budget(&F.g, &o, &F.min_budget, &proven, &s));
  mlsys_remat_schedule_free(&s);
  F.ok = 1;
  return &F;
}

/* Run schedule s on the CNN with plan flags; check gradients (bitwise), loss, commits, and peaks. */
static void check_cnn_schedule(cnn_fixture *f, const mlsys_remat_schedule *s, unsigned flags, uint64_t budget,
                               const char *what) {
  mlsys_remat_plan p;
  mlsys_remat_sim rep;
  cnn_counting count;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts o;
  mlsys_remat_exec_stats st;
  int v;
  REQUIRE_OK(mlsys_remat_simulate(&f->g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
  REQUIRE_OK(mlsys_remat_plan_build(&f->g, s, flags, &p));
  memset(&count, 0, sizeof count);
  A.ud = &count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  memset(f->m.grads, 0xff, f->m.nparams * sizeof(float));
  f->m.loss = NAN;
  memset(f->m.evals, 0, sizeof(long) * (size_t)f->m.n);
  memset(f->m.commits, 0, sizeof(long) * (size_t)f->m.n);
  CHECK_MSG(mlsys_remat_execute(&f->g, &p, cnn_kernel, &f->m, &o, &st) == MLSYS_OK, "%s: %s", what, lasterr());
  CHECK_MSG(!memcmp(f->m.grads, f->ref_grads, f->m.nparams * sizeof(float)), "%s: gradients differ", what);
  CHECK_MSG(!memcmp(&f->m.loss, &f->ref_loss, sizeof(float)), "%s: loss %.9g vs %.9g", what, f->m.loss, f->ref_loss);
  for (v = 0; v < f->m.n; v++) CHECK_MSG(f->m.commits[v] == 1, "%s: node %d committed %ld times", what, v, f->m.commits[v]);
  CHECK_MSG(count.peak == st.peak_bytes && count.peak == p.peak && count.live == 0, "%s: allocator %llu, executor "
            "%llu, plan %llu, left %llu", what, (unsigned long long)count.peak, (unsigned long long)st.peak_bytes,
            (unsigned long long)p.peak, (unsigned long long)count.live);
  if (flags == 0) {
    CHECK_MSG(count.peak == rep.peak, "%s: measured %llu, simulated %llu", what, (unsigned long long)count.peak,
              (unsigned long long)rep.peak);
    CHECK_NEAR(st.cost, rep.cost, 1e-6 * rep.cost);
  }
  CHECK_MSG(count.peak + f->fixed <= budget, "%s: %llu + %llu fixed over the budget %llu", what,
            (unsigned long long)count.peak, (unsigned long long)f->fixed, (unsigned long long)budget);
  mlsys_remat_plan_free(&p);
}

/* The layers one by one. Conv and linear layers are linear in their input and in their weights, so the backward is
   checked exactly (up to float rounding) by the adjoint identity <f(x'), dy> = <x', f^T dy> with random x' and dy,
   accumulated in double; ReLU and max-pool by finite differences away from their kinks (there the forward is
   locally linear); the softmax cross-entropy by central differences (it is smooth). */
static void fill_random(mlsys_rng *r, float *a, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) a[i] = (float)mlsys_rng_normal(r);
}
static double dotf(const float *a, const float *b, size_t n) {
  double s = 0;
  size_t i;
  for (i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
  return s;
}
#define REL_CLOSE(a, b, tol) (fabs((a) - (b)) <= (tol) * (fabs(a) + fabs(b) + 1e-30))

TEST(cnn_layers_adjoint_and_finite_difference_checks) {
  enum { N = 2, C = 3, H = 6, W = 6, K = 4, I = 20, O = 7, CLS = 5 };
  mlsys_rng r;
  float x[N * C * H * W], x2[N * C * H * W], w[K * C * 9], w2[K * C * 9], b[K], b2[K], zero[K * C * 9 > I * O ? K * C * 9 : I * O];
  float y[N * K * H * W], dy[N * K * H * W], dx[N * C * H * W], dw[K * C * 9], db[K];
  float lx[N * I], lx2[N * I], lw[O * I], lw2[O * I], lb[O], lb2[O], ly[N * O], ldy[N * O], ldx[N * I], ldw[O * I], ldb[O];
  float px[N * C * H * W], py[N * C * (H / 2) * (W / 2)], pdy[N * C * (H / 2) * (W / 2)], pdx[N * C * H * W];
  int64_t pidx[N * C * (H / 2) * (W / 2)];
  float z[N * CLS], dz[N * CLS];
  int64_t lab[N] = {3, 0};
  size_t i;
  int checked = 0;
  mlsys_rng_seed(&r, 5);
  memset(zero, 0, sizeof zero);
  fill_random(&r, x, sizeof x / 4); fill_random(&r, x2, sizeof x2 / 4); fill_random(&r, w, sizeof w / 4);
  fill_random(&r, w2, sizeof w2 / 4); fill_random(&r, b, K); fill_random(&r, b2, K); fill_random(&r, dy, sizeof dy / 4);
  /* conv: input, weight and bias adjoints */
  cnn_conv2d_backward_input(dx, dy, w, N, C, H, W, K, 3, 1);
  cnn_conv2d_backward_params(dw, db, dy, x, N, C, H, W, K, 3, 1);
  cnn_conv2d_forward(y, x2, w, zero, N, C, H, W, K, 3, 1);
  CHECK_MSG(REL_CLOSE(dotf(y, dy, sizeof y / 4), dotf(x2, dx, sizeof dx / 4), 1e-5), "conv dx: %.9g vs %.9g",
            dotf(y, dy, sizeof y / 4), dotf(x2, dx, sizeof dx / 4));
  cnn_conv2d_forward(y, x, w2, zero, N, C, H, W, K, 3, 1);
  CHECK_MSG(REL_CLOSE(dotf(y, dy, sizeof y / 4), dotf(w2, dw, sizeof dw / 4), 1e-5), "conv dw: %.9g vs %.9g",
            dotf(y, dy, sizeof y / 4), dotf(w2, dw, sizeof dw / 4));
  cnn_conv2d_forward(y, x, zero, b2, N, C, H, W, K, 3, 1);
  CHECK_MSG(REL_CLOSE(dotf(y, dy, sizeof y / 4), dotf(b2, db, K), 1e-5), "conv db");
  /* the forward against its definition at one output (n=1, k=2, i=0, j=5: touches the padding) */
  cnn_conv2d_forward(y, x, w, b, N, C, H, W, K, 3, 1);
  {
    double acc = b[2];
    int c, rr, ss;
    for (c = 0; c < C; c++)
      for (rr = 0; rr < 3; rr++)
        for (ss = 0; ss < 3; ss++) {
          int h = 0 + rr - 1, v = 5 + ss - 1;
          if (h >= 0 && h < H && v >= 0 && v < W) acc += (double)w[(2 * C + c) * 9 + rr * 3 + ss] * x[((1 * C + c) * H + h) * W + v];
        }
    CHECK_NEAR(y[((1 * K + 2) * H + 0) * W + 5], acc, 1e-5);
  }
  /* linear */
  fill_random(&r, lx, sizeof lx / 4); fill_random(&r, lx2, sizeof lx2 / 4); fill_random(&r, lw, sizeof lw / 4);
  fill_random(&r, lw2, sizeof lw2 / 4); fill_random(&r, lb2, O); fill_random(&r, ldy, sizeof ldy / 4);
  memset(lb, 0, sizeof lb);
  cnn_linear_backward_input(ldx, ldy, lw, N, I, O);
  cnn_linear_backward_params(ldw, ldb, ldy, lx, N, I, O);
  cnn_linear_forward(ly, lx2, lw, lb, N, I, O);
  CHECK(REL_CLOSE(dotf(ly, ldy, N * O), dotf(lx2, ldx, N * I), 1e-5));
  cnn_linear_forward(ly, lx, lw2, lb, N, I, O);
  CHECK(REL_CLOSE(dotf(ly, ldy, N * O), dotf(lw2, ldw, O * I), 1e-5));
  cnn_linear_forward(ly, lx, zero, lb2, N, I, O);
  CHECK(REL_CLOSE(dotf(ly, ldy, N * O), dotf(lb2, ldb, O), 1e-5));
  /* ReLU and max-pool: d<f(x), dy>/dx_i by central differences where no kink is within h */
  fill_random(&r, px, sizeof px / 4);
  fill_random(&r, pdy, sizeof pdy / 4);
  cnn_maxpool2x2_forward(py, pidx, px, N, C, H, W);
  cnn_maxpool2x2_backward(pdx, pdy, pidx, px, N, C, H, W);
  {
    float pdx2[N * C * H * W];
    cnn_maxpool2x2_backward(pdx2, pdy, NULL, px, N, C, H, W);   /* indices recomputed from the input: same */
    CHECK(!memcmp(pdx, pdx2, sizeof pdx));
  }
  for (i = 0; i < sizeof px / 4; i++) {
    const float h = 1e-3f, x0 = px[i];
    float yp[sizeof py / 4];
    int64_t ip[sizeof py / 4];
    double fp, fm;
    int near = 0, q;
    for (q = 0; q < 4; q++) {   /* the other members of i's window */
      size_t base = (i / (H * W)) * H * W + ((i % (H * W)) / W / 2 * 2) * W + (i % W) / 2 * 2;
      size_t j = base + (size_t)(q / 2) * W + (size_t)(q % 2);
      if (j != i && fabsf(px[j] - x0) < 4 * h) near = 1;
    }
    if (near) continue;
    px[i] = x0 + h; cnn_maxpool2x2_forward(yp, ip, px, N, C, H, W); fp = dotf(yp, pdy, sizeof py / 4);
    px[i] = x0 - h; cnn_maxpool2x2_forward(yp, ip, px, N, C, H, W); fm = dotf(yp, pdy, sizeof py / 4);
    px[i] = x0;
    CHECK_NEAR((fp - fm) / (2.0 * h), pdx[i], 2e-3);
    checked++;
  }
  {
    float rx[64], ry[64], rdy[64], rdx[64], rdx2[64];
    fill_random(&r, rx, 64);
    fill_random(&r, rdy, 64);
    cnn_relu_forward(ry, rx, 64);
    cnn_relu_backward(rdx, rdy, rx, 64);
    cnn_relu_backward(rdx2, rdy, ry, 64);   /* from the output: the same */
    CHECK(!memcmp(rdx, rdx2, sizeof rdx));
    for (i = 0; i < 64; i++) {
      const float h = 1e-3f, x0 = rx[i];
      float a, c2;
      if (fabsf(x0) < 4 * h) continue;
      rx[i] = x0 + h; cnn_relu_forward(&a, &rx[i], 1);
      rx[i] = x0 - h; cnn_relu_forward(&c2, &rx[i], 1);
      rx[i] = x0;
      CHECK_NEAR((double)rdy[i] * ((double)a - (double)c2) / (2.0 * h), rdx[i], 1e-3 * fabs(rdy[i]) + 1e-6);
      checked++;
    }
  }
  /* softmax cross-entropy: smooth; central differences on every logit */
  fill_random(&r, z, N * CLS);
  cnn_softmax_xent_forward(dz, z, lab, N, CLS);
  for (i = 0; i < N * CLS; i++) {
    float d2[N * CLS], z0 = z[i], h = 1e-2f;
    double lp, lm;
    z[i] = z0 + h; lp = cnn_softmax_xent_forward(d2, z, lab, N, CLS);
    z[i] = z0 - h; lm = cnn_softmax_xent_forward(d2, z, lab, N, CLS);
    z[i] = z0;
    CHECK_NEAR((lp - lm) / (2.0 * h), dz[i], 2e-4);
    checked++;
  }
  /* cnn_expf against libm's exp over the range softmax uses */
  {
    double worst = 0;
    float t;
    for (t = -87.0f; t <= 10.0f; t += 0.013f) {
      double e = exp((double)t), rel = fabs((double)cnn_expf(t) - e) / e;
      if (rel > worst) worst = rel;
    }
    CHECK_MSG(worst < 3e-7, "cnn_expf: relative error %.3g", worst);
  }
  printf("    %d finite-difference coordinates checked\n", checked);
}

/* The whole network by central differences in float. ReLU and max-pool kinks crossed inside [w-h, w+h] and float
   rounding of the loss limit this to a few percent of the largest gradient (the exact checks are the adjoint
   tests above and, against PyTorch, tools/check_smallcnn_grads.py: about 7e-7); it catches a wrong sign, a
   transposed weight or a wrong index, which is what it is for. */
TEST(cnn_graph_binds_and_reference_agrees_with_finite_differences) {
  cnn_fixture *f = cnn_setup();
  int li, q, checked = 0;
  double worst = 0;
  float *saved = (float *)malloc(f->m.nparams * sizeof(float));
  REQUIRE(saved);
  CHECK(f->ref_loss > 2.0f && f->ref_loss < 2.7f);   /* ~ln 10 for 10 classes at initialisation */
  memcpy(saved, f->m.params, f->m.nparams * sizeof(float));
  /* central differences on each parameter tensor's 3 largest-gradient coordinates and 2 fixed others */
  for (li = 0; li < CNN_NLAYERS; li++) {
    cnn_layer *L = &f->m.layer[li];
    int part;
    if (!L->nw) continue;
    for (part = 0; part < 2; part++) {
      float *w = part ? L->b : L->wt;
      const float *gr = f->ref_grads + (w - f->m.params);
      size_t cnt = part ? L->nb : L->nw, pick[5], j;
      float gmax = 0;
      for (j = 0; j < cnt; j++) gmax = fabsf(gr[j]) > gmax ? fabsf(gr[j]) : gmax;
      for (q = 0; q < 3; q++) {   /* the 3 largest |grad| */
        size_t best = 0, b2;
        float bv = -1;
        for (j = 0; j < cnt; j++) {
          int used = 0;
          for (b2 = 0; b2 < (size_t)q; b2++) used |= pick[b2] == j;
          if (!used && fabsf(gr[j]) > bv) { bv = fabsf(gr[j]); best = j; }
        }
        pick[q] = best;
      }
      pick[3] = cnt / 3;
      pick[4] = (cnt * 7) / 9;
      for (q = 0; q < 5; q++) {
        float lp, lm, h = FD_H, w0 = w[pick[q]];
        double fd, err;
        w[pick[q]] = w0 + h;
        REQUIRE_OK(cnn_reference_loss(&f->m, &lp));
        w[pick[q]] = w0 - h;
        REQUIRE_OK(cnn_reference_loss(&f->m, &lm));
        w[pick[q]] = w0;
        fd = ((double)lp - (double)lm) / (2.0 * ((double)(w0 + h) - (double)w0));
        err = fabs(fd - gr[pick[q]]) / gmax;
        if (err > worst) worst = err;
        CHECK_MSG(err < 6e-2, "%s.%s[%zu]: finite difference %.6g, backward %.6g (max |grad| %.3g)", L->name,
                  part ? "bias" : "weight", pick[q], fd, gr[pick[q]], gmax);
        checked++;
      }
    }
  }
  CHECK(!memcmp(saved, f->m.params, f->m.nparams * sizeof(float)));
  printf("    %d coordinates, worst |finite difference - backward| / max |grad| = %.2e\n", checked, worst);
  free(saved);
}

TEST(cnn_gradients_bit_identical_across_methods_and_budgets) {
  cnn_fixture *f = cnn_setup();
  static const double grid[5] = {1.0, 0.75, 0.5, 0.25, 0};
  int b, m, runs = 0, recomputing = 0;
  mlsys_remat_opts o;
  mlsys_remat_schedule all;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  REQUIRE_OK(mlsys_remat_solve(&f->g, UINT64_MAX, &o, &all));
  check_cnn_schedule(f, &all, 0, UINT64_MAX, "checkpoint-all");
  mlsys_remat_schedule_free(&all);
  for (b = 0; b < 5; b++) {
    uint64_t B = f->min_budget + (uint64_t)(grid[b] * (double)(f->fixed + f->act_all - f->min_budget));
    for (m = 0; m < MLSYS_REMAT_METHOD_COUNT; m++) {
      mlsys_remat_schedule s;
      mlsys_status rc;
      unsigned flags;
      memset(&o, 0, sizeof o);
      o.method = (mlsys_remat_method)m;
      o.time_limit = NEVER_BINDS;
      rc = mlsys_remat_solve(&f->g, B, &o, &s);
      if (m == MLSYS_REMAT_MILP || m == MLSYS_REMAT_LP_ROUND)
        CHECK_MSG(rc == MLSYS_OK, "%s at %llu: %s", mlsys_remat_method_name((mlsys_remat_method)m), (unsigned long long)B,
                  lasterr());
      if (s.n > 0)
        for (flags = 0; flags <= 3; flags += 3) {
          char what[128];
          snprintf(what, sizeof what, "%s at budget %llu, flags %u", s.method, (unsigned long long)B, flags);
          check_cnn_schedule(f, &s, flags, rc == MLSYS_OK ? B : UINT64_MAX, what);
          runs++;
          recomputing += s.cost > s.baseline_cost || s.cost < s.baseline_cost;
        }
      mlsys_remat_schedule_free(&s);
    }
  }
  printf("    %d runs (%d recompute), budgets %llu..%llu\n", runs, recomputing, (unsigned long long)f->min_budget,
         (unsigned long long)(f->fixed + f->act_all));
  CHECK(recomputing > 0);
}

/* Random S: heavy recomputation, of backward nodes too (evaluated with commit = 0, so they must not touch the
   parameter gradients), and raw-MILP-style double allocations. */
TEST(cnn_random_schedules_recompute_backward_nodes) {
  cnn_fixture *f = cnn_setup();
  mlsys_rng r;
  int k, bwd_recomputed = 0;
  mlsys_rng_seed(&r, 99);
  for (k = 0; k < 24; k++) {
    mlsys_remat_schedule s;
    char what[96];
    int t, v, n = f->g.dag.n;
    REQUIRE_OK(random_schedule(&r, &f->g, 0.05 + 0.04 * (k % 8), k >= 16, &s));
    for (t = 0; t < n; t++)
      for (v = f->g.loss + 1; v < t; v++) bwd_recomputed += s.R[t * n + v];
    snprintf(what, sizeof what, "random schedule #%d", k);
    check_cnn_schedule(f, &s, (unsigned)(k % 4), UINT64_MAX, what);
    mlsys_remat_schedule_free(&s);
  }
  printf("    %d recomputations of backward nodes\n", bwd_recomputed);
  CHECK(bwd_recomputed > 0);
}

TEST(cnn_allocation_failures_and_budget_limit) {
  cnn_fixture *f = cnn_setup();
  mlsys_remat_schedule all, tight;
  mlsys_remat_plan p;
  mlsys_remat_opts o;
  cnn_counting count;
  mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
  mlsys_remat_exec_opts eo;
  mlsys_remat_exec_stats st;
  long k;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  REQUIRE_OK(mlsys_remat_solve(&f->g, UINT64_MAX, &o, &all));
  REQUIRE_OK(mlsys_remat_plan_build(&f->g, &all, 0, &p));
  A.ud = &count;
  memset(&eo, 0, sizeof eo);
  eo.allocator = &A;
  for (k = 1; k <= 20; k++) {
    memset(&count, 0, sizeof count);
    count.fail_at = k;
    CHECK_EQ_INT(mlsys_remat_execute(&f->g, &p, cnn_kernel, &f->m, &eo, &st), MLSYS_ERR_NOMEM);
    CHECK_MSG(count.live == 0 && count.allocs == count.releases, "allocation %ld: %llu bytes leaked", k,
              (unsigned long long)count.live);
  }
  /* checkpoint-all needs more than the smallest budget's activation bytes; the MILP's schedule fits them */
  memset(&count, 0, sizeof count);
  eo.limit = f->min_budget - f->fixed;
  CHECK_EQ_INT(mlsys_remat_execute(&f->g, &p, cnn_kernel, &f->m, &eo, &st), MLSYS_ERR_NOMEM);
  CHECK_CONTAINS(lasterr(), "over the limit");
  CHECK_EQ_INT(count.live, 0);
  mlsys_remat_plan_free(&p);
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_solve(&f->g, f->min_budget, &o, &tight));
  REQUIRE_OK(mlsys_remat_plan_build(&f->g, &tight, 0, &p));
  memset(&count, 0, sizeof count);
  memset(f->m.grads, 0xff, f->m.nparams * sizeof(float));
  CHECK_OK(mlsys_remat_execute(&f->g, &p, cnn_kernel, &f->m, &eo, &st));
  CHECK(!memcmp(f->m.grads, f->ref_grads, f->m.nparams * sizeof(float)));
  CHECK_EQ_INT(count.peak, f->min_budget - f->fixed);
  mlsys_remat_plan_free(&p);
  mlsys_remat_schedule_free(&tight);
  mlsys_remat_schedule_free(&all);
}

/* Graphs the layers do not fit are refused at start-up, naming the node. */
/* The nodes of g as mlsys_remat_graph_create takes them (names and deps point into g), to build altered copies. */
static void graph_nodes(const mlsys_remat_graph *g, mlsys_remat_node *nodes) {
  const mlsys_dag *d = &g->dag;
  int v;
  for (v = 0; v < d->n; v++) {
    nodes[v].name = d->name[v];
    nodes[v].kind = (mlsys_remat_kind)g->kind[v];
    nodes[v].cost = d->cost[v];
    nodes[v].mem = d->size[v];
    nodes[v].ndeps = d->in_off[v + 1] - d->in_off[v];
    nodes[v].deps = d->in + d->in_off[v];
    nodes[v].flags = g->flags[v];
  }
}

TEST(cnn_binding_rejects_graphs_that_differ) {
  cnn_fixture *f = cnn_setup();
  const mlsys_dag *d = &f->g.dag;
  mlsys_remat_node nodes[64];
  int variant;
  REQUIRE(d->n <= 64);
  for (variant = 0; variant < 4; variant++) {
    mlsys_remat_graph h;
    cnn_model m;
    memset(nodes, 0, sizeof nodes);
    graph_nodes(&f->g, nodes);
    if (variant == 0) nodes[2].mem = 65536;                  /* pool1 without its int64 indices */
    if (variant == 1) nodes[6].mem = 0;                      /* flatten exported with --alias-mem zero */
    if (variant == 2) nodes[12].ndeps = 1;                   /* grad_relu3 without the ReLU's output */
    if (variant == 3) nodes[13].name = "grad_fc9";           /* a name the model does not have */
    REQUIRE_OK(mlsys_remat_graph_create(d->n, nodes, &h));
    REQUIRE_OK(cnn_model_init(&m, 8, 1));
    CHECK_EQ_INT(cnn_bind(&m, &h), MLSYS_ERR_ARG);
    CHECK_CONTAINS(lasterr(), variant == 0 ? "'pool1' has 65536 bytes"
                              : variant == 1 ? "--alias-mem bytes"
                              : variant == 2 ? "needs the layer's input or output"
                                             : "grad_fc9");
    cnn_model_free(&m);
    mlsys_remat_graph_free(&h);
  }
}

/* The exporter counts the max-pool's int64 indices in the pool node but does not make the pool's backward depend
   on it (the backward reads the pool's input, relu2, and recomputes the maxima). A graph where it does depend on
   the pool node binds too, and the kernels then read the saved indices: same gradients, bit for bit. */
TEST(cnn_pool_backward_reading_saved_indices) {
  cnn_fixture *f = cnn_setup();
  const mlsys_dag *d = &f->g.dag;
  mlsys_remat_node nodes[64];
  int deps15[4], deps18[4], m;
  mlsys_remat_graph h;
  cnn_fixture f2;
  REQUIRE(d->n <= 64 && !strcmp(d->name[15], "grad_pool2") && !strcmp(d->name[18], "grad_pool1"));
  memset(nodes, 0, sizeof nodes);
  graph_nodes(&f->g, nodes);
  memcpy(deps15, nodes[15].deps, sizeof(int) * (size_t)nodes[15].ndeps);
  memcpy(deps18, nodes[18].deps, sizeof(int) * (size_t)nodes[18].ndeps);
  deps15[nodes[15].ndeps++] = 5;   /* grad_pool2 <- pool2 */
  deps18[nodes[18].ndeps++] = 2;   /* grad_pool1 <- pool1 */
  nodes[15].deps = deps15;
  nodes[18].deps = deps18;
  REQUIRE_OK(mlsys_remat_graph_create(d->n, nodes, &h));
  REQUIRE_OK(mlsys_remat_graph_set_fixed(&h, "all", f->fixed));
  f2 = *f;                                      /* the same parameters and data; a binding of its own */
  f2.g = h;
  f2.m.bind = NULL;
  f2.m.evals = f2.m.commits = NULL;
  REQUIRE_OK(cnn_bind(&f2.m, &h));
  CHECK(f2.m.bind[15].y >= 0 && f2.m.bind[18].y >= 0);
  for (m = 0; m < 3; m++) {
    mlsys_remat_schedule s;
    mlsys_remat_opts o;
    memset(&o, 0, sizeof o);
    o.method = m == 0 ? MLSYS_REMAT_CHECKPOINT_ALL : m == 1 ? MLSYS_REMAT_CHEN_SQRTN : MLSYS_REMAT_MILP;
    o.time_limit = 20;
    mlsys_remat_solve(&h, m == 2 ? f->fixed + f->act_all * 98 / 100 : UINT64_MAX, &o, &s);
    REQUIRE(s.n > 0);
    check_cnn_schedule(&f2, &s, 0, s.fits ? s.budget : UINT64_MAX, s.method);
    mlsys_remat_schedule_free(&s);
  }
  mlsys_free(f2.m.bind);
  mlsys_free(f2.m.evals);
  mlsys_free(f2.m.commits);
  mlsys_remat_graph_free(&h);
}

TEST_MAIN()
