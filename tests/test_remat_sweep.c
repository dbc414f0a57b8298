/* Batch scaling, the maximum batch size (thesis §3.6.4) and the `mlsys remat sweep` / `max-batch` commands.
   Oracles from outside the code under test: an independent re-export of VGG16 at batch 4 by the PyTorch exporter,
   hand-computed maximum batches on chains, the thesis's 8-layer-chain optimum (26 at budget 4), brute force over
   every batch with an independent check of each schedule by the simulator. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

#include <sys/wait.h>
#include <unistd.h>

/* A time limit for solves whose verdicts are checked: a safety net that never binds here (the slowest such solve,
   the chain-8 max-batch MILP on lp_solve, takes a few seconds), so no verdict depends on the machine's load. */
#define NEVER_BINDS 600.0

/* ---- helpers ---- */

/* The L-layer unit chain with every node `mem` bytes at batch 1, fixed `params` (not scaled) and `inputs`
   (scaled with the batch). */
static void chain_graph(int L, uint64_t mem, uint64_t params, uint64_t inputs, mlsys_remat_graph *g) {
  int v;
  REQUIRE_OK(mlsys_remat_graph_chain(L, g));
  for (v = 0; v < g->dag.n; v++) g->dag.size[v] = mem;
  g->batch = 1;
  if (params) REQUIRE_OK(mlsys_remat_graph_set_fixed(g, "params", params));
  if (inputs) REQUIRE_OK(mlsys_remat_graph_set_fixed(g, "inputs", inputs));
}

static double total_cost(const mlsys_remat_graph *g) {
  double s = 0;
  int v;
  for (v = 0; v < g->dag.n; v++) s += g->dag.cost[v];
  return s;
}

static uint64_t fixed_sum(const mlsys_remat_graph *g) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < g->nfixed; i++) s += g->fixed_bytes[i];
  return s;
}

/* Independent check of a schedule at batch b: simulate it on the graph scaled to b; it must be valid, its peak plus
   the fixed memory within `memory`, its cost within cap times the checkpoint-all cost. */
static int schedule_ok_at(const mlsys_remat_graph *g, int b, const mlsys_remat_schedule *s, uint64_t memory,
                          double cap) {
  mlsys_remat_graph gs;
  mlsys_remat_sim rep;
  int ok;
  if (mlsys_remat_graph_scale_batch(g, b, &gs) != MLSYS_OK) return 0;
  ok = mlsys_remat_simulate(&gs, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL) == MLSYS_OK &&
       rep.peak + fixed_sum(&gs) <= memory && rep.cost <= cap * total_cost(&gs) * (1 + 1e-12);
  mlsys_remat_graph_free(&gs);
  return ok;
}

/* Does method m work at batch b (a schedule within memory whose cost meets the cap), checked by the simulator? */
static int works_at(const mlsys_remat_graph *g, int b, uint64_t memory, mlsys_remat_method m, double cap) {
  mlsys_remat_graph gs;
  mlsys_remat_schedule s;
  mlsys_remat_opts o;
  int ok = 0;
  memset(&o, 0, sizeof o);
  o.method = m;
  o.time_limit = NEVER_BINDS;
  if (mlsys_remat_graph_scale_batch(g, b, &gs) != MLSYS_OK) return 0;
  if (mlsys_remat_solve(&gs, memory, &o, &s) == MLSYS_OK) ok = schedule_ok_at(g, b, &s, memory, cap);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&gs);
  return ok;
}

static char *graph_text(const mlsys_remat_graph *g) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  if (mlsys_remat_graph_write(g, f, 1) != MLSYS_OK) { fclose(f); free(buf); return NULL; }
  fclose(f);
  return buf;
}

/* ---- scaling ---- */

/* VGG16 exported at batch 2, scaled to 4, against the exporter's own batch-4 file (another run of PyTorch). Costs
   are FLOP counts, exactly linear in the batch: equal to the last bit. Bytes are equal except where the exporter
   writes a batch-independent part: the loss node's 4-byte scalar (mem = 4 + logits bytes), which linear scaling
   doubles, so scaled = exported + 4 there: tolerance 4 bytes on the loss node, 0 elsewhere. */
TEST(scale_batch_matches_reexport_vgg16) {
  mlsys_remat_graph g2, g4, s;
  int v, i, j, loss_off = 0;
  if (access("tests/data/graphs/vgg16_b4.json", R_OK) != 0) SKIP_DEP("tests/data/graphs/vgg16_b4.json missing (it is committed)");
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b2.json", &g2));
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b4.json", &g4));
  REQUIRE(g2.batch == 2 && g4.batch == 4);
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g2, 4, &s));
  CHECK_EQ_INT(s.batch, 4);
  CHECK_STR(s.name, "vgg16");
  REQUIRE(s.dag.n == g4.dag.n && s.dag.nedges == g4.dag.nedges);
  CHECK_EQ_INT(s.loss, g4.loss);
  for (v = 0; v < s.dag.n; v++) {
    uint64_t a = s.dag.size[v], b = g4.dag.size[v];
    CHECK_STR(s.dag.name[v], g4.dag.name[v]);
    CHECK_EQ_INT(s.kind[v], g4.kind[v]);
    CHECK_EQ_INT(s.flags[v], g4.flags[v]);
    CHECK_EQ_INT(s.fwd_of[v], g4.fwd_of[v]);
    REQUIRE(s.dag.in_off[v + 1] - s.dag.in_off[v] == g4.dag.in_off[v + 1] - g4.dag.in_off[v]);
    for (j = s.dag.in_off[v]; j < s.dag.in_off[v + 1]; j++) CHECK_EQ_INT(s.dag.in[j], g4.dag.in[j]);
    CHECK_MSG(s.dag.cost[v] == g4.dag.cost[v], "node %s: cost %.17g vs %.17g", s.dag.name[v], s.dag.cost[v],
              g4.dag.cost[v]);
    if (v == s.loss) {
      CHECK_MSG(a >= b && a - b <= 4, "loss node: %llu vs %llu bytes", (unsigned long long)a, (unsigned long long)b);
      loss_off = (int)(a - b);
    } else {
      CHECK_MSG(a == b, "node %s: %llu vs %llu bytes", s.dag.name[v], (unsigned long long)a, (unsigned long long)b);
    }
  }
  CHECK_EQ_INT(loss_off, 4);
  /* fixed memory: parameters and their gradients unchanged, inputs and labels doubled, as exported */
  CHECK_EQ_INT(s.nfixed, g4.nfixed);
  for (i = 0; i < g4.nfixed; i++) {
    int k, found = 0;
    for (k = 0; k < s.nfixed; k++)
      if (!strcmp(s.fixed_name[k], g4.fixed_name[i])) {
        found = 1;
        CHECK_MSG(s.fixed_bytes[k] == g4.fixed_bytes[i], "fixed %s: %llu vs %llu", g4.fixed_name[i],
                  (unsigned long long)s.fixed_bytes[k], (unsigned long long)g4.fixed_bytes[i]);
      }
    CHECK_MSG(found, "fixed category %s missing", g4.fixed_name[i]);
  }
  for (i = 0; i < g2.nfixed; i++)
    CHECK_EQ_INT(mlsys_remat_fixed_scales_with_batch(g2.fixed_name[i]),
                 !strcmp(g2.fixed_name[i], "inputs") || !strcmp(g2.fixed_name[i], "labels"));
  mlsys_remat_graph_free(&s);
  mlsys_remat_graph_free(&g2);
  mlsys_remat_graph_free(&g4);
}

TEST(scale_batch_rounds_up_and_rejects_bad_input) {
  mlsys_remat_graph g, s;
  char *a, *b;
  chain_graph(2, 3, 100, 5, &g);   /* 5 nodes of 3 bytes at batch 1 */
  g.batch = 2;                     /* say the sizes are for batch 2 */
  g.dag.cost[0] = 3;
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 3, &s));
  CHECK_EQ_INT(s.dag.size[0], 5);          /* ceil(3 * 3 / 2) = ceil(4.5) */
  CHECK_NEAR(s.dag.cost[0], 4.5, 0);
  CHECK_NEAR(s.dag.cost[1], 1.5, 0);
  CHECK_EQ_INT(fixed_sum(&s), 100 + 8);    /* params kept, inputs ceil(7.5) */
  mlsys_remat_graph_free(&s);
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 1, &s));
  CHECK_EQ_INT(s.dag.size[0], 2);          /* ceil(1.5) */
  CHECK_EQ_INT(fixed_sum(&s), 100 + 3);
  mlsys_remat_graph_free(&s);
  /* the same batch: the same graph, byte for byte in the JSON form */
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 2, &s));
  a = graph_text(&g);
  b = graph_text(&s);
  REQUIRE(a && b);
  CHECK_STR(a, b);
  free(a);
  free(b);
  mlsys_remat_graph_free(&s);
  /* errors */
  CHECK_EQ_INT(mlsys_remat_graph_scale_batch(&g, 0, &s), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_graph_scale_batch(&g, -3, &s), MLSYS_ERR_ARG);
  g.dag.size[1] = 1ull << 40;
  CHECK_EQ_INT(mlsys_remat_graph_scale_batch(&g, 1 << 20, &s), MLSYS_ERR_ARG);   /* 2^59 bytes: over the limit */
  CHECK_CONTAINS(mlsys_last_error(), "2^48");
  g.batch = 0;
  CHECK_EQ_INT(mlsys_remat_graph_scale_batch(&g, 4, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no batch size");
  CHECK_EQ_INT(s.dag.n, 0);
  mlsys_remat_graph_free(&g);
}

TEST(one_extra_forward_cap) {
  mlsys_remat_graph g;
  REQUIRE_OK(mlsys_remat_graph_chain(8, &g));
  CHECK_NEAR(mlsys_remat_one_extra_forward_cap(&g), 25.0 / 17.0, 1e-15);   /* (17 + 8 forward) / 17 */
  mlsys_remat_graph_free(&g);
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/mlp_b64.json", &g));
  /* 2·ΣC_F + ΣC_B + C_loss over ΣC, summed by kind here */
  {
    double f = 0, b = 0, l = 0;
    int v;
    for (v = 0; v < g.dag.n; v++) {
      if (g.kind[v] == MLSYS_REMAT_F) f += g.dag.cost[v];
      else if (g.kind[v] == MLSYS_REMAT_B) b += g.dag.cost[v];
      else l += g.dag.cost[v];
    }
    CHECK_NEAR(mlsys_remat_one_extra_forward_cap(&g), (2 * f + b + l) / (f + b + l), 1e-15);
  }
  mlsys_remat_graph_free(&g);
}

/* ---- maximum batch ---- */

/* Checkpoint-all on an L-layer chain keeps every forward value, the loss and the first gradient: peak (L + 2)·m
   per sample. With params P fixed and inputs I per sample, its max batch is floor((memory - P) / ((L+2)·m + I)). */
TEST(max_batch_checkpoint_all_chain_by_hand) {
  static const uint64_t memories[] = {1037, 1073, 1000 + 37 * 50 + 36, 5000, 1000 + 37 * 1000};
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  size_t k;
  int b;
  chain_graph(8, 3, 1000, 7, &g);   /* per sample: 10 values of 3 bytes + 7 input bytes = 37 */
  for (k = 0; k < sizeof memories / sizeof memories[0]; k++) {
    int expect = (int)((memories[k] - 1000) / 37);
    CHECK_OK(mlsys_remat_max_batch(&g, memories[k], MLSYS_REMAT_CHECKPOINT_ALL, 0, NULL, &b, &s));
    CHECK_MSG(b == expect, "memory %llu: batch %d, expected %d", (unsigned long long)memories[k], b, expect);
    CHECK_EQ_INT(s.peak, 30ull * (uint64_t)b);
    CHECK_EQ_INT(s.peak_total, 1000 + 37ull * (uint64_t)b);
    CHECK_NEAR(s.cost, 17.0 * b, 0);
    CHECK(schedule_ok_at(&g, b, &s, memories[k], 1.0));
    mlsys_remat_schedule_free(&s);
  }
  /* not even batch 1 */
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1036, MLSYS_REMAT_CHECKPOINT_ALL, 0, NULL, &b, &s), MLSYS_ERR_INFEASIBLE);
  CHECK_EQ_INT(b, 0);
  CHECK_EQ_INT(s.n, 0);
  /* below the single-operator bound at batch 1 (3 values + inputs + params) */
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1010, MLSYS_REMAT_MILP, 0, NULL, &b, &s), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "even at batch 1");
  mlsys_remat_graph_free(&g);
}

/* The thesis's 8-layer unit chain (L794): the optimum at budget 4 costs 26 > 25, the cost of one extra forward
   pass; a schedule within 3 units exists (the single-operator bound, 3 values). Memory 53 per batch:
   - no cap: 3 units per sample are enough, so floor(53 / 3) = 17 (18 samples need 54 > 53 even for one operator);
   - default cap: batch 11 leaves floor(53 / 11) = 4 units per sample, where the cheapest schedule costs 26 > 25,
     so the answer is 10 provided a schedule within 5 units costing ≤ 25 exists (checked by the simulator). */
TEST(max_batch_milp_chain8_thesis_numbers) {
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  mlsys_remat_opts o;
  int b;
  memset(&o, 0, sizeof o);
  /* proven on lp_solve in a few seconds (CBC, max batch's default, needs ~40 s for the capped MILP): the limit
     never binds, so the exact answers below do not depend on the machine's load */
  o.time_limit = NEVER_BINDS;
  o.backend = MLSYS_SOLVER_LPSOLVE;
  chain_graph(8, 1, 0, 0, &g);
  REQUIRE_OK(mlsys_remat_max_batch(&g, 53, MLSYS_REMAT_MILP, INFINITY, &o, &b, &s));
  CHECK_EQ_INT(b, 17);
  CHECK(schedule_ok_at(&g, b, &s, 53, INFINITY));
  mlsys_remat_schedule_free(&s);
  REQUIRE_OK(mlsys_remat_max_batch(&g, 53, MLSYS_REMAT_MILP, 0, &o, &b, &s));
  CHECK_EQ_INT(b, 10);
  CHECK(s.optimal);
  CHECK_MSG(s.milp_ran == 1 && s.source[0], "milp_ran %d, source '%s': %s", s.milp_ran, s.source, s.solver_note);
  CHECK(schedule_ok_at(&g, b, &s, 53, 25.0 / 17.0));
  CHECK(s.cost <= 25.0 * 10 + 1e-9);
  mlsys_remat_schedule_free(&s);
  /* cap 1: no recomputation allowed, so the MILP can do no better than checkpoint-all: floor(53 / 10) = 5 */
  REQUIRE_OK(mlsys_remat_max_batch(&g, 53, MLSYS_REMAT_MILP, 1.0, &o, &b, &s));
  CHECK_EQ_INT(b, 5);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

/* Every baseline on the exported MLP: the search's answer equals a brute-force scan over every batch (each probe
   checked by the simulator), which also shows the baselines are monotone in the batch here. */
TEST(max_batch_baselines_brute_force_mlp) {
  static const mlsys_remat_method ms[] = {MLSYS_REMAT_CHECKPOINT_ALL, MLSYS_REMAT_CHEN_SQRTN, MLSYS_REMAT_CHEN_GREEDY,
                                          MLSYS_REMAT_GRIEWANK,       MLSYS_REMAT_AP_SQRTN,   MLSYS_REMAT_AP_GREEDY,
                                          MLSYS_REMAT_LIN_GREEDY};
  static const double caps[] = {0, 1.1};
  const uint64_t memory = 4ull << 20;
  mlsys_remat_graph g;
  size_t k, c;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/mlp_b64.json", &g));
  for (c = 0; c < sizeof caps / sizeof caps[0]; c++) {
    double cap = caps[c] ? caps[c] : mlsys_remat_one_extra_forward_cap(&g);
    for (k = 0; k < sizeof ms / sizeof ms[0]; k++) {
      mlsys_remat_schedule s;
      int b, x, last = 0, first_fail = 0, nonmono = 0;
      mlsys_status st = mlsys_remat_max_batch(&g, memory, ms[k], caps[c], NULL, &b, &s);
      if (st == MLSYS_ERR_INFEASIBLE && caps[c] != 0) {
        /* a policy whose schedule costs more than the cap at every batch (chen-greedy: 1.2x here) */
        CHECK_EQ_INT(b, 0);
        CHECK_EQ_INT(s.n, 0);
      } else {
        CHECK_OK(st);
        CHECK_MSG(b > 64, "%s: batch %d", mlsys_remat_method_name(ms[k]), b);
        CHECK_MSG(schedule_ok_at(&g, b, &s, memory, cap), "%s at batch %d", mlsys_remat_method_name(ms[k]), b);
      }
      mlsys_remat_schedule_free(&s);
      for (x = 1; x <= (b ? b + 8 : 64); x++) {
        int ok = works_at(&g, x, memory, ms[k], cap);
        if (ok) last = x;
        if (!ok && !first_fail) first_fail = x;
        if (ok && first_fail) nonmono = 1;
      }
      CHECK_MSG(last == b, "%s cap %g: search %d, brute force %d", mlsys_remat_method_name(ms[k]), cap, b, last);
      CHECK_MSG(!nonmono && first_fail == b + 1, "%s cap %g: first failure at %d, answer %d",
                mlsys_remat_method_name(ms[k]), cap, first_fail, b);
      if (caps[c] == 0) CHECK_MSG(b > 0, "%s fails at the default cap", mlsys_remat_method_name(ms[k]));
    }
  }
  mlsys_remat_graph_free(&g);
}

/* The MILP is at least as good as every baseline (it starts from the best of them) and its answer is tight
   (batch + 1 fails); the LP rounding's schedule is valid. */
TEST(max_batch_milp_and_lp_mlp) {
  static const mlsys_remat_method ms[] = {MLSYS_REMAT_CHECKPOINT_ALL, MLSYS_REMAT_CHEN_SQRTN, MLSYS_REMAT_CHEN_GREEDY,
                                          MLSYS_REMAT_GRIEWANK, MLSYS_REMAT_LIN_GREEDY};
  const uint64_t memory = 4ull << 20;
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  mlsys_remat_opts o;
  double cap;
  int bm, bl, b;
  size_t k;
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;   /* CBC proves it in seconds: "bm + 1 fails" rests on the proof, not on the limit */
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/mlp_b64.json", &g));
  cap = mlsys_remat_one_extra_forward_cap(&g);
  REQUIRE_OK(mlsys_remat_max_batch(&g, memory, MLSYS_REMAT_MILP, 0, &o, &bm, &s));
  CHECK(schedule_ok_at(&g, bm, &s, memory, cap));
  CHECK(s.optimal);
  CHECK_MSG(s.milp_ran == 1, "milp_ran %d: %s", s.milp_ran, s.solver_note);   /* 15 nodes: the MILP runs */
  mlsys_remat_schedule_free(&s);
  CHECK(!works_at(&g, bm + 1, memory, MLSYS_REMAT_MILP, cap));
  for (k = 0; k < sizeof ms / sizeof ms[0]; k++) {
    REQUIRE_OK(mlsys_remat_max_batch(&g, memory, ms[k], 0, &o, &b, &s));
    CHECK_MSG(bm >= b, "milp %d < %s %d", bm, mlsys_remat_method_name(ms[k]), b);
    mlsys_remat_schedule_free(&s);
  }
  REQUIRE_OK(mlsys_remat_max_batch(&g, memory, MLSYS_REMAT_LP_ROUND, 0, &o, &bl, &s));
  CHECK(schedule_ok_at(&g, bl, &s, memory, cap));
  CHECK(bl <= bm);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

/* The method name at the start of a schedule's source ("griewank(s=6)" -> griewank), or -1. */
static int source_method(const char *source) {
  char name[64];
  size_t k = strcspn(source, "(");
  if (k >= sizeof name) return -1;
  memcpy(name, source, k);
  name[k] = 0;
  return mlsys_remat_method_parse(name);
}

/* The one-layer training chain f -> loss -> grad (3 nodes, 1 byte each per sample): nothing fits below 3 bytes
   per sample (the gradient reads f and the loss), and checkpoint-all needs exactly that. */
static const char chain1_text[] = "remat-graph 1\nname chain1\nbatch 1\nnodes 3\n0 F 1 1 - f :\n1 L 1 1 - loss : 0\n"
                                  "2 B 1 1 - grad : 0 1\n";

/* Where max batch's MILP answer came from (issue 19): when a baseline reaches the single-operator bound, or the
   graph is over 60 nodes, no MILP runs and the schedule is a baseline's; the result must say so (milp_ran = 0,
   source = that baseline) while a MILP that did run says milp_ran = 1. */
TEST(max_batch_milp_says_whether_a_milp_ran) {
  static const mlsys_remat_method greedy[] = {MLSYS_REMAT_LIN_GREEDY, MLSYS_REMAT_AP_GREEDY, MLSYS_REMAT_CHEN_GREEDY,
                                              MLSYS_REMAT_GRIEWANK};
  mlsys_remat_graph g;
  mlsys_remat_schedule s, bs;
  mlsys_remat_opts o;
  int b, bb, m, k, best = 0;
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS;
  /* the bound: 30 bytes hold 10 samples of 3 bytes (11 need 33), which checkpoint-all and every greedy reach */
  REQUIRE_OK(mlsys_remat_graph_parse(chain1_text, strlen(chain1_text), "chain1", &g));
  REQUIRE_OK(mlsys_remat_max_batch(&g, 30, MLSYS_REMAT_MILP, 0, &o, &b, &s));
  CHECK_EQ_INT(b, 10);
  CHECK(schedule_ok_at(&g, b, &s, 30, mlsys_remat_one_extra_forward_cap(&g)));
  CHECK_STR(s.method, "checkmate-milp");
  CHECK_MSG(s.milp_ran == 0, "milp_ran %d: %s", s.milp_ran, s.solver_note);
  m = source_method(s.source);
  CHECK_MSG(m >= 0 && m != MLSYS_REMAT_MILP && m != MLSYS_REMAT_LP_ROUND, "source '%s'", s.source);
  CHECK(s.optimal);   /* the single-operator bound proves it */
  CHECK_CONTAINS(s.solver_note, "single-operator bound");
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
  /* (a MILP that runs says milp_ran = 1: max_batch_milp_chain8_thesis_numbers, max_batch_milp_and_lp_mlp) */
  /* over 60 nodes (U-Net, n = 87) with the default limit: the best greedy baseline's batch, no MILP */
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/unet_b2.json", &g));
  REQUIRE(g.dag.n > 60);
  memset(&o, 0, sizeof o);
  o.time_limit = 60;   /* only decides that no MILP runs (600 s or less); no solve happens to depend on it */
  REQUIRE_OK(mlsys_remat_max_batch(&g, 2ull << 30, MLSYS_REMAT_MILP, 0, &o, &b, &s));
  CHECK_STR(s.method, "checkmate-milp");
  CHECK_MSG(s.milp_ran == 0, "milp_ran %d: %s", s.milp_ran, s.solver_note);
  CHECK(!s.optimal);
  m = source_method(s.source);
  CHECK_MSG(m >= 0 && m != MLSYS_REMAT_MILP && m != MLSYS_REMAT_LP_ROUND, "source '%s'", s.source);
  CHECK(schedule_ok_at(&g, b, &s, 2ull << 30, mlsys_remat_one_extra_forward_cap(&g)));
  for (k = 0; k < (int)(sizeof greedy / sizeof greedy[0]); k++) {
    mlsys_status st = mlsys_remat_max_batch(&g, 2ull << 30, greedy[k], 0, NULL, &bb, &bs);
    CHECK_MSG(st == MLSYS_OK || st == MLSYS_ERR_INFEASIBLE, "%s: %s", mlsys_remat_method_name(greedy[k]),
              mlsys_last_error());   /* chen-greedy costs more than the cap here at every batch */
    if ((int)greedy[k] == m) CHECK_MSG(bb == b, "%s reaches %d, milp says %d from it", s.source, bb, b);
    if (bb > best) best = bb;
    if (st == MLSYS_OK) mlsys_remat_schedule_free(&bs);
  }
  CHECK_MSG(b == best, "milp %d, best greedy baseline %d", b, best);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
}

TEST(max_batch_rejects_bad_input) {
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  int b = 7;
  REQUIRE_OK(mlsys_remat_graph_chain(4, &g));   /* no batch */
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1000, MLSYS_REMAT_CHECKPOINT_ALL, 0, NULL, &b, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no batch size");
  CHECK_EQ_INT(b, 0);
  g.batch = 1;
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1000, MLSYS_REMAT_CHECKPOINT_ALL, 0.5, NULL, &b, &s), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1000, MLSYS_REMAT_CHECKPOINT_ALL, NAN, NULL, &b, &s), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_max_batch(&g, 1000, (mlsys_remat_method)99, 0, NULL, &b, &s), MLSYS_ERR_ARG);
  /* nothing grows with the batch: the answer is the documented ceiling */
  {
    int v;
    for (v = 0; v < g.dag.n; v++) g.dag.size[v] = 0;
    CHECK_OK(mlsys_remat_max_batch(&g, 1000, MLSYS_REMAT_CHECKPOINT_ALL, 0, NULL, &b, &s));
    CHECK_EQ_INT(b, MLSYS_REMAT_MAX_BATCH);
    mlsys_remat_schedule_free(&s);
  }
  mlsys_remat_graph_free(&g);
}

/* ---- the commands ---- */
#include "tests/cli_run.h"

static int count_substr(const char *hay, const char *needle) {
  int c = 0;
  size_t n = strlen(needle);
  for (; hay && (hay = strstr(hay, needle)) != NULL; hay += n) c++;
  return c;
}

/* The sweep on the thesis's chain, every method: JSON and SVG. Checks: the budgets run from the single-operator
   bound to the checkpoint-all peak; no method beats the MILP where the MILP is proven optimal; the MILP finds the
   thesis's 26 at budget 4; checkpoint-all costs exactly 1x at its own peak; the SVG has one polyline per method. */
TEST(cli_sweep_json_and_svg) {
  char dir[] = "/tmp/mlsys_sweep_XXXXXX", args[1024], svgpath[600], *svg = NULL;
  run_result r;
  mlsys_json_doc doc;
  const mlsys_json *root, *budgets, *series, *milp = NULL;
  int i, j, nb;
  size_t len;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(svgpath, sizeof svgpath, "%s/chain8.svg", dir);
  snprintf(args, sizeof args, "remat sweep --graph tests/data/remat/chain8.txt --json --time-limit 600 --svg %s",
           svgpath);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  root = doc.root;
  budgets = mlsys_json_get(root, "budgets");
  series = mlsys_json_get(root, "series");
  REQUIRE(budgets && budgets->type == MLSYS_JSON_ARRAY && series && series->type == MLSYS_JSON_ARRAY);
  nb = budgets->count;
  CHECK_EQ_INT(nb, 8);   /* 3..10 bytes: 8 points */
  CHECK_EQ_INT(budgets->items[0].u64, mlsys_json_get(root, "lower_bound")->u64);
  CHECK_EQ_INT(budgets->items[nb - 1].u64, mlsys_json_get(root, "checkpoint_all_peak")->u64);
  CHECK_EQ_INT(mlsys_json_get(root, "checkpoint_all_peak")->u64, 10);
  CHECK_EQ_INT(series->count, MLSYS_REMAT_METHOD_COUNT);
  for (i = 0; i < series->count; i++) {
    const mlsys_json *m = &series->items[i];
    REQUIRE(mlsys_json_get(m, "points") && mlsys_json_get(m, "points")->count == nb);
    if (!strcmp(mlsys_json_get(m, "method")->str, "milp")) milp = m;
  }
  REQUIRE(milp);
  for (j = 0; j < nb; j++) {
    const mlsys_json *mp = &mlsys_json_get(milp, "points")->items[j];
    double best;
    if (strcmp(mlsys_json_get(mp, "status")->str, "fits") != 0 || !mlsys_json_get(mp, "optimal")->boolean) continue;
    best = mlsys_json_get(mp, "overhead")->num;
    if (budgets->items[j].u64 == 4) CHECK_NEAR(best, 26.0 / 17.0, 1e-12);
    for (i = 0; i < series->count; i++) {
      const mlsys_json *p = &mlsys_json_get(&series->items[i], "points")->items[j];
      if (strcmp(mlsys_json_get(p, "status")->str, "fits") != 0) {
        CHECK(mlsys_json_get(p, "overhead")->type == MLSYS_JSON_NULL);
        continue;
      }
      CHECK_MSG(mlsys_json_get(p, "overhead")->num >= best - 1e-12, "%s beats the optimal MILP at %llu bytes",
                mlsys_json_get(&series->items[i], "method")->str, (unsigned long long)budgets->items[j].u64);
      CHECK(mlsys_json_get(p, "peak_memory")->u64 <= budgets->items[j].u64);
    }
  }
  for (i = 0; i < series->count; i++) {
    const mlsys_json *m = &series->items[i], *p = &mlsys_json_get(m, "points")->items[nb - 1];
    if (strcmp(mlsys_json_get(m, "method")->str, "checkpoint-all") != 0) continue;
    CHECK_STR(mlsys_json_get(p, "status")->str, "fits");
    CHECK_NEAR(mlsys_json_get(p, "overhead")->num, 1.0, 0);
    CHECK_STR(mlsys_json_get(&mlsys_json_get(m, "points")->items[nb - 2], "status")->str, "infeasible");
  }
  REQUIRE_OK(mlsys_read_file(svgpath, &svg, &len));
  CHECK(len > 100 && strncmp(svg, "<svg", 4) == 0);
  CHECK(len > 8 && strcmp(svg + len - 7, "</svg>\n") == 0);
  CHECK_EQ_INT(count_substr(svg, "<polyline"), MLSYS_REMAT_METHOD_COUNT);
  CHECK_EQ_INT(count_substr(svg, "<svg"), 1);
  CHECK_EQ_INT(count_substr(svg, "<text"), count_substr(svg, "</text>"));
  CHECK_EQ_INT(count_substr(svg, "<g"), count_substr(svg, "</g>"));
  CHECK_CONTAINS(svg, "chain8");
  mlsys_free(svg);
  unlink(svgpath);
  rmdir(dir);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

TEST(cli_sweep_csv_and_table) {
  run_result r;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat sweep --graph tests/data/remat/chain8.txt --methods chen,checkpoint-all --points 3 --csv");
  CHECK_EQ_INT(r.code, 0);
  CHECK_EQ_INT(count_substr(r.out, "\n"), 1 + 2 * 3);
  CHECK(r.out && strncmp(r.out, "method,budget,status,overhead", 29) == 0);
  CHECK_CONTAINS(r.out, "checkpoint-all,10,fits,1,");
  run_free(&r);
  r = run("remat sweep --graph tests/data/remat/chain8.txt --methods chen --from 50% --to 10B --points 2");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "overhead by budget");
  CHECK_CONTAINS(r.out, "2 budgets from 5 B to 10 B");
  run_free(&r);
  r = run("remat sweep --help");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "--svg");
  run_free(&r);
}

/* max-batch through the command: the same numbers as the library, gains relative to checkpoint-all and chen. */
TEST(cli_max_batch_json) {
  run_result r;
  mlsys_json_doc doc;
  mlsys_remat_graph g;
  mlsys_remat_schedule s;
  const mlsys_json *res;
  int i, bck = 0;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/mlp_b64.json", &g));
  r = run("remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 4MiB --methods checkpoint-all,lin-greedy "
          "--json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  CHECK(mlsys_json_get(doc.root, "cost_cap_default")->boolean);
  CHECK_NEAR(mlsys_json_get(doc.root, "cost_cap")->num, mlsys_remat_one_extra_forward_cap(&g), 1e-12);
  CHECK_EQ_INT(mlsys_json_get(doc.root, "memory")->u64, 4ull << 20);
  res = mlsys_json_get(doc.root, "results");
  REQUIRE(res && res->count == 2);
  for (i = 0; i < 2; i++) {
    const mlsys_json *x = &res->items[i];
    int m = mlsys_remat_method_parse(mlsys_json_get(x, "method")->str), b;
    REQUIRE(m >= 0);
    REQUIRE_OK(mlsys_remat_max_batch(&g, 4ull << 20, (mlsys_remat_method)m, 0, NULL, &b, &s));
    mlsys_remat_schedule_free(&s);
    CHECK_STR(mlsys_json_get(x, "status")->str, "ok");
    CHECK_EQ_INT(mlsys_json_get(x, "max_batch")->i64, b);
    if (m == MLSYS_REMAT_CHECKPOINT_ALL) bck = b;
    CHECK(mlsys_json_get(x, "peak_memory")->u64 <= 4ull << 20);
  }
  REQUIRE(bck > 0);
  for (i = 0; i < 2; i++)
    CHECK_NEAR(mlsys_json_get(&res->items[i], "gain_vs_checkpoint_all")->num,
               (double)mlsys_json_get(&res->items[i], "max_batch")->i64 / bck, 1e-12);
  mlsys_json_doc_free(&doc);
  run_free(&r);
  r = run("remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 4MiB --methods chen --cost-cap 1");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "max batch");
  run_free(&r);
  mlsys_remat_graph_free(&g);
}

/* The milp row of max-batch says which method's schedule it reports and whether a MILP ran: "milp_ran": false
   and the baseline's name where none ran (a baseline at the single-operator bound; a graph over 60 nodes), true
   on a small graph. The numbers are held against the baselines' own rows and a hand-computed bound. */
static const mlsys_json *mb_row_of(const mlsys_json *res, const char *method) {
  int i;
  for (i = 0; res && i < res->count; i++)
    if (!strcmp(mlsys_json_get(&res->items[i], "method")->str, method)) return &res->items[i];
  return NULL;
}

TEST(cli_max_batch_says_whether_a_milp_ran) {
  char dir[] = "/tmp/mlsys_maxbatch_XXXXXX", path[600], args[900];
  run_result r;
  mlsys_json_doc doc;
  const mlsys_json *res, *milp, *src;
  FILE *f;
  int m;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  /* a baseline reaches the single-operator bound: 10 samples of 3 bytes in 30 bytes, proven without a MILP */
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/chain1.txt", dir);
  REQUIRE((f = fopen(path, "w")) != NULL);
  fputs(chain1_text, f);
  fclose(f);
  snprintf(args, sizeof args, "remat max-batch --graph %s --memory 30 --methods milp --json", path);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  milp = mb_row_of(mlsys_json_get(doc.root, "results"), "milp");
  REQUIRE(milp);
  CHECK_EQ_INT(mlsys_json_get(milp, "max_batch")->i64, 10);
  REQUIRE(mlsys_json_get(milp, "milp_ran") && mlsys_json_get(milp, "source"));
  CHECK(mlsys_json_get(milp, "milp_ran")->type == MLSYS_JSON_BOOL && !mlsys_json_get(milp, "milp_ran")->boolean);
  src = mlsys_json_get(milp, "source");
  CHECK_MSG(src->type == MLSYS_JSON_STRING && (m = source_method(src->str)) >= 0 && m != MLSYS_REMAT_MILP &&
                m != MLSYS_REMAT_LP_ROUND, "source %s", src->type == MLSYS_JSON_STRING ? src->str : "(not a string)");
  CHECK_CONTAINS(mlsys_json_get(milp, "note")->str, "single-operator bound");
  mlsys_json_doc_free(&doc);
  run_free(&r);
  unlink(path);
  rmdir(dir);
  /* over 60 nodes: the best greedy baseline's row, named, and the table says no MILP ran */
  r = run("remat max-batch --graph tests/data/graphs/unet_b2.json --memory 2GiB --methods "
          "lin-greedy,ap-greedy,chen-greedy,griewank,milp --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  res = mlsys_json_get(doc.root, "results");
  milp = mb_row_of(res, "milp");
  REQUIRE(milp && mlsys_json_get(milp, "milp_ran") && mlsys_json_get(milp, "source"));
  CHECK(mlsys_json_get(milp, "milp_ran")->type == MLSYS_JSON_BOOL && !mlsys_json_get(milp, "milp_ran")->boolean);
  src = mlsys_json_get(milp, "source");
  REQUIRE(src->type == MLSYS_JSON_STRING);
  m = source_method(src->str);
  CHECK_MSG(m >= 0 && m != MLSYS_REMAT_MILP && m != MLSYS_REMAT_LP_ROUND, "source %s", src->str);
  if (m >= 0) {
    const mlsys_json *row = mb_row_of(res, mlsys_remat_method_name((mlsys_remat_method)m));
    int i;
    REQUIRE(row);
    CHECK_EQ_INT(mlsys_json_get(milp, "max_batch")->i64, mlsys_json_get(row, "max_batch")->i64);
    for (i = 0; i < res->count; i++)
      CHECK(mlsys_json_get(milp, "max_batch")->i64 >= mlsys_json_get(&res->items[i], "max_batch")->i64);
  }
  mlsys_json_doc_free(&doc);
  run_free(&r);
  r = run("remat max-batch --graph tests/data/graphs/unet_b2.json --memory 2GiB --methods milp");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "(no MILP ran)");
  run_free(&r);
  /* 15 nodes: the MILP runs */
  r = run("remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 4MiB --methods milp --json "
          "--time-limit 600");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  milp = mb_row_of(mlsys_json_get(doc.root, "results"), "milp");
  REQUIRE(milp && mlsys_json_get(milp, "milp_ran"));
  CHECK(mlsys_json_get(milp, "milp_ran")->type == MLSYS_JSON_BOOL && mlsys_json_get(milp, "milp_ran")->boolean);
  CHECK(mlsys_json_get(milp, "source")->type == MLSYS_JSON_STRING);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

/* --methods monet,monet-noop on smallcnn_b8 (CBC or lp_solve; each ILP is proven within seconds, the limit never
   binds). Sweep: monet never costs more than monet-noop where both are proven optimal (its feasible set contains
   NoOp's), every peak is within its budget, and monet-noop fits at every budget at or above what store-all needs
   in the ILP's rows (the built-in start). The top budget is that requirement, checked here by giving store-all as
   the warm start (the rows reject a start that does not fit, naming the row). Max-batch: monet's largest batch is
   at least monet-noop's (every probe is proven optimal here). */
TEST(cli_sweep_and_max_batch_monet) {
  char args[1024];
  run_result r;
  mlsys_json_doc doc;
  mlsys_remat_graph g;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_schedule sa, s;
  mlsys_remat_monet_opts mo;
  const mlsys_json *budgets, *series, *pm = NULL, *pn = NULL, *res;
  uint64_t need;
  int j, nb, both = 0, mb[3] = {-1, -1, -1};
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, NULL, &sg));   /* NoOp */
  REQUIRE_OK(mlsys_remat_monet_store_all(&sg, &sa));
  /* store-all in the ILP's rows: its sweep peak plus at most one rounding unit (1 KiB) per term of a row */
  need = sa.peak_sweep + 1024ull * (uint64_t)(2 * sg.V + 8);
  memset(&mo, 0, sizeof mo);
  mo.time_limit = 600;
  mo.warm_start = &sa;
  REQUIRE_OK(mlsys_remat_monet_solve(&sg, need, &mo, &s));
  mlsys_remat_monet_schedule_free(&s);
  snprintf(args, sizeof args, "remat sweep --graph tests/data/graphs/smallcnn_b8.json --methods monet,monet-noop "
           "--points 6 --to %llu --time-limit 600 --json", (unsigned long long)need);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  budgets = mlsys_json_get(doc.root, "budgets");
  series = mlsys_json_get(doc.root, "series");
  REQUIRE(budgets && series && series->count == 2);
  nb = budgets->count;
  CHECK_EQ_INT(budgets->items[nb - 1].u64, need);
  for (j = 0; j < 2; j++) {
    const char *m = mlsys_json_get(&series->items[j], "method")->str;
    if (!strcmp(m, "monet")) pm = mlsys_json_get(&series->items[j], "points");
    if (!strcmp(m, "monet-noop")) pn = mlsys_json_get(&series->items[j], "points");
  }
  REQUIRE(pm && pn && pm->count == nb && pn->count == nb);
  for (j = 0; j < nb; j++) {
    const mlsys_json *a = &pm->items[j], *b = &pn->items[j];
    uint64_t B = budgets->items[j].u64;
    int fa = !strcmp(mlsys_json_get(a, "status")->str, "fits"), fb = !strcmp(mlsys_json_get(b, "status")->str, "fits");
    if (fa) CHECK(mlsys_json_get(a, "peak_memory")->u64 <= B);
    if (fb) CHECK(mlsys_json_get(b, "peak_memory")->u64 <= B);
    if (B >= need) CHECK_MSG(fb, "monet-noop does not fit at %llu bytes, above store-all's %llu", (unsigned long long)B,
                             (unsigned long long)need);
    if (fb) CHECK_MSG(fa, "monet does not fit at %llu bytes where monet-noop does", (unsigned long long)B);
    if (fa && fb && mlsys_json_get(a, "optimal")->boolean && mlsys_json_get(b, "optimal")->boolean) {
      both++;
      CHECK_MSG(mlsys_json_get(a, "overhead")->num <= mlsys_json_get(b, "overhead")->num + 1e-9,
                "monet %g > monet-noop %g at %llu bytes", mlsys_json_get(a, "overhead")->num,
                mlsys_json_get(b, "overhead")->num, (unsigned long long)B);
    }
  }
  CHECK(both >= 2);
  mlsys_json_doc_free(&doc);
  run_free(&r);
  r = run("remat max-batch --graph tests/data/graphs/smallcnn_b8.json --memory 4MiB "
          "--methods monet,monet-noop,checkpoint-all --time-limit 600 --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  res = mlsys_json_get(doc.root, "results");
  REQUIRE(res && res->count == 3);
  for (j = 0; j < 3; j++) {
    const mlsys_json *x = &res->items[j];
    const char *m = mlsys_json_get(x, "method")->str;
    int k = !strcmp(m, "monet") ? 0 : !strcmp(m, "monet-noop") ? 1 : 2;
    CHECK_STR(mlsys_json_get(x, "status")->str, "ok");
    CHECK(mlsys_json_get(x, "peak_memory")->u64 <= 4ull << 20);
    CHECK(mlsys_json_get(x, "overhead")->num <= mlsys_json_get(doc.root, "cost_cap")->num + 1e-12);
    mb[k] = (int)mlsys_json_get(x, "max_batch")->i64;
  }
  CHECK_MSG(mb[0] >= mb[1] && mb[1] > 0 && mb[2] > 0, "max batch monet %d, monet-noop %d, checkpoint-all %d",
            mb[0], mb[1], mb[2]);
  mlsys_json_doc_free(&doc);
  run_free(&r);
  r = run("remat sweep --graph tests/data/graphs/smallcnn_b8.json --methods monet,bogus");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  mlsys_remat_monet_schedule_free(&sa);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

TEST(cli_bad_input) {
  static const struct { const char *args, *msg; int code; } cases[] = {
      {"remat sweep --graph tests/data/remat/chain8.txt --methods chen,nosuch", "unknown method 'nosuch'", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --methods chen,,milp", "bad --methods", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --points 0", "--points", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --points 3x", "--points", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --from 12XB", "bad --from", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --to -5", "bad --to", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --from 0%", "bad --from", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --from 9 --to 4", "must not exceed", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --json --csv", "exclude", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --time-limit 0", "--time-limit", 2},
      {"remat sweep --methods chen", "--graph", 2},
      {"remat sweep --graph tests/data/remat/chain8.txt --bogus", "unknown option", 2},
      {"remat sweep --graph /nonexistent/g.json", "g.json", 1},
      {"remat max-batch --graph tests/data/graphs/mlp_b64.json", "--memory", 2},
      {"remat max-batch --graph tests/data/graphs/mlp_b64.json --memory lots", "bad --memory", 2},
      {"remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 4MiB --cost-cap 0.5", "--cost-cap", 2},
      {"remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 4MiB --methods fast", "unknown method", 2},
      {"remat max-batch --graph tests/data/remat/chain8.txt --memory 4MiB", "no batch size", 1},
      {"remat max-batch --graph tests/data/graphs/mlp_b64.json --memory 1KiB --methods chen", "even at batch 1", 1},
  };
  size_t k;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    run_result r = run(cases[k].args);
    CHECK_MSG(r.code == cases[k].code, "'%s': exit %d, expected %d", cases[k].args, r.code, cases[k].code);
    CHECK_MSG(r.err && strstr(r.err, cases[k].msg), "'%s': stderr '%s' lacks '%s'", cases[k].args,
              r.err ? r.err : "(null)", cases[k].msg);
    CHECK_MSG(r.err && strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "'%s': not one line: '%s'", cases[k].args,
              r.err ? r.err : "(null)");
    run_free(&r);
  }
}

TEST_MAIN()
