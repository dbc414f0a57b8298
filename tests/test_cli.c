/* The `mlsys` command: exit codes, --json keys, the execution plan it prints (replayed here independently), errors
   on stdin and bad files. Runs the binary named by $MLSYS_BIN (scripts/run-tests.sh sets it; default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

#include <sys/wait.h>

typedef struct { int code; char *out, *err; } run_result;

static const char *bin(void) {
  const char *b = getenv("MLSYS_BIN");
  return b && *b ? b : "build/mlsys";
}

/* Run "mlsys ARGS" with stdin from in_text (or /dev/null); capture stdout and stderr. */
static run_result run(const char *args, const char *in_text) {
  run_result r;
  char cmd[4096], outp[] = "/tmp/mlsys_cli_outXXXXXX", errp[] = "/tmp/mlsys_cli_errXXXXXX",
       inp[] = "/tmp/mlsys_cli_inXXXXXX";
  int fo = mkstemp(outp), fe = mkstemp(errp), fi = mkstemp(inp), status;
  size_t len;
  memset(&r, 0, sizeof r);
  if (in_text && write(fi, in_text, strlen(in_text)) < 0) r.code = -1;
  close(fo); close(fe); close(fi);
  snprintf(cmd, sizeof cmd, "%s %s <%s >%s 2>%s", bin(), args, inp, outp, errp);
  status = system(cmd);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (mlsys_read_file(outp, &r.out, &len) != MLSYS_OK) r.out = NULL;
  if (mlsys_read_file(errp, &r.err, &len) != MLSYS_OK) r.err = NULL;
  unlink(outp); unlink(errp); unlink(inp);
  return r;
}
static void run_free(run_result *r) { mlsys_free(r->out); mlsys_free(r->err); }

TEST(cli_exists) {
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  {
    run_result r = run("--help", NULL);
    CHECK_EQ_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "remat");
    run_free(&r);
  }
}

/* The thesis instance through the command: optimum 26, and the plan it prints, replayed with the graph in hand,
   computes every node, reads only live registers and peaks at the reported 4 units. */
TEST(cli_solve_json_keys_and_plan_replay) {
  run_result r;
  mlsys_json_doc doc;
  mlsys_remat_graph g;
  const mlsys_json *o, *plan;
  static const char *keys[] = {"status", "method", "schedule", "source", "milp_ran", "compute_cost", "baseline_cost",
                               "overhead", "peak_memory", "budget", "optimal", "gap", "solve_seconds", "plan"};
  size_t k;
  int i, *live_reg_node, maxreg = 0;
  uint64_t live = 0, peak = 0;
  unsigned char *computed;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget 4 --json --time-limit 600", NULL);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  o = doc.root;
  REQUIRE(o->type == MLSYS_JSON_OBJECT);
  for (k = 0; k < sizeof keys / sizeof keys[0]; k++) CHECK_MSG(mlsys_json_get(o, keys[k]) != NULL, "key %s", keys[k]);
  CHECK_STR(mlsys_json_get(o, "status")->str, "optimal");
  CHECK_STR(mlsys_json_get(o, "method")->str, "milp");
  CHECK_NEAR(mlsys_json_get(o, "compute_cost")->num, 26, 0);
  CHECK_NEAR(mlsys_json_get(o, "baseline_cost")->num, 17, 0);
  CHECK_NEAR(mlsys_json_get(o, "overhead")->num, 26.0 / 17.0, 1e-12);
  CHECK_EQ_INT(mlsys_json_get(o, "peak_memory")->u64, 4);
  CHECK_EQ_INT(mlsys_json_get(o, "budget")->u64, 4);
  CHECK(mlsys_json_get(o, "optimal")->boolean);
  /* LP rounding gives 33 and the LP bound 23 proves nothing: branch and bound ran */
  if (mlsys_json_get(o, "milp_ran")) CHECK(mlsys_json_get(o, "milp_ran")->boolean);
  CHECK_STR(mlsys_json_get(o, "schedule")->str, "checkmate-milp");
  plan = mlsys_json_get(o, "plan");
  REQUIRE(plan && plan->type == MLSYS_JSON_ARRAY && plan->count > 17);
  /* replay */
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/remat/chain8.txt", &g));
  for (i = 0; i < plan->count; i++) {
    const mlsys_json *reg = mlsys_json_get(&plan->items[i], "reg");
    REQUIRE(reg && reg->is_int);
    if (reg->i64 > maxreg) maxreg = (int)reg->i64;
  }
  live_reg_node = (int *)calloc((size_t)maxreg + 1, sizeof(int));
  computed = (unsigned char *)calloc((size_t)g.dag.n, 1);
  REQUIRE(live_reg_node && computed);
  for (i = 0; i <= maxreg; i++) live_reg_node[i] = -1;
  for (i = 0; i < plan->count; i++) {
    const mlsys_json *step = &plan->items[i];
    const char *op = mlsys_json_get(step, "op")->str, *node = mlsys_json_get(step, "node")->str;
    int reg = (int)mlsys_json_get(step, "reg")->i64, v = mlsys_dag_find(&g.dag, node), j;
    REQUIRE(v >= 0);
    if (!strcmp(op, "compute")) {
      /* each input must be held by some live register */
      for (j = g.dag.in_off[v]; j < g.dag.in_off[v + 1]; j++) {
        int q, found = 0;
        for (q = 0; q <= maxreg; q++) found |= live_reg_node[q] == g.dag.in[j];
        CHECK_MSG(found, "step %d computes %s without its input %s", i, node, g.dag.name[g.dag.in[j]]);
      }
      CHECK(live_reg_node[reg] == -1);
      live_reg_node[reg] = v;
      computed[v] = 1;
      live += g.dag.size[v];
      if (live > peak) peak = live;
    } else {
      CHECK_STR(op, "free");
      CHECK_EQ_INT(live_reg_node[reg], v);
      live_reg_node[reg] = -1;
      live -= g.dag.size[v];
    }
  }
  for (i = 0; i < g.dag.n; i++) CHECK(computed[i]);
  CHECK_EQ_INT(peak, 4);
  CHECK_EQ_INT(live, 0);
  free(live_reg_node);
  free(computed);
  mlsys_remat_graph_free(&g);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

/* At the checkpoint-all peak the MILP's answer is checkpoint-all's schedule, settled without a MILP: the JSON
   says so ("source", "milp_ran") under the MILP's label. */
TEST(cli_solve_json_names_the_schedules_source) {
  run_result r;
  mlsys_json_doc doc;
  const mlsys_json *src, *ran;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget 10 --json", NULL);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  CHECK_STR(mlsys_json_get(doc.root, "schedule")->str, "checkmate-milp");
  src = mlsys_json_get(doc.root, "source");
  ran = mlsys_json_get(doc.root, "milp_ran");
  REQUIRE(src && ran);
  CHECK(src->type == MLSYS_JSON_STRING && !strcmp(src->str, "checkpoint-all"));
  CHECK(ran->type == MLSYS_JSON_BOOL && !ran->boolean);
  CHECK_NEAR(mlsys_json_get(doc.root, "overhead")->num, 1.0, 0);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

TEST(cli_infeasible_budget_names_the_minimum) {
  run_result r;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget 2", NULL);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "infeasible");
  CHECK_CONTAINS(r.err, "the smallest feasible budget is 3 bytes");
  run_free(&r);
  /* the same through --json: status "infeasible", the message in "error" */
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget 2 --json", NULL);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.out, "\"status\": \"infeasible\"");
  CHECK_CONTAINS(r.out, "smallest feasible budget is 3 bytes");
  run_free(&r);
}

TEST(cli_method_all_gives_one_object_per_method) {
  run_result r;
  mlsys_json_doc doc;
  int i;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat solve --graph tests/data/remat/t8.json --budget 11 --method all --json --time-limit 600", NULL);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc));
  REQUIRE(doc.root->type == MLSYS_JSON_ARRAY);
  CHECK_EQ_INT(doc.root->count, MLSYS_REMAT_METHOD_COUNT);
  for (i = 0; i < doc.root->count; i++) {
    const mlsys_json *o = &doc.root->items[i], *st = mlsys_json_get(o, "status");
    REQUIRE(st && st->type == MLSYS_JSON_STRING);
    CHECK_STR(mlsys_json_get(o, "method")->str, mlsys_remat_method_name((mlsys_remat_method)i));
    if (!strcmp(st->str, "optimal") || !strcmp(st->str, "feasible"))
      CHECK(mlsys_json_get(o, "peak_memory")->u64 <= 11);
    else
      CHECK_STR(st->str, "over_budget");
  }
  /* T8 at budget 11: the optimum is 40 (test case T8; tests/test_remat.c's exhaustive oracle agrees) */
  CHECK_STR(mlsys_json_get(&doc.root->items[0], "status")->str, "optimal");
  CHECK_NEAR(mlsys_json_get(&doc.root->items[0], "compute_cost")->num, 40, 0);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

TEST(cli_usage_and_input_errors) {
  run_result r;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat solve --graph tests/data/remat/chain8.txt", NULL);   /* no budget */
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--budget");
  run_free(&r);
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget 4 --method fastest", NULL);
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "unknown method 'fastest'");
  run_free(&r);
  r = run("remat solve --graph tests/data/remat/chain8.txt --budget lots", NULL);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("remat frobnicate", NULL);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("nosuchsystem", NULL);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("remat solve --graph /nonexistent.json --budget 4", NULL);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent.json");
  run_free(&r);
  /* a malformed graph on stdin: the message has the position */
  r = run("remat solve --graph - --budget 4", "{\"nodes\": [{\"id\": 0, \"cost\": 1, \"mem\": 1,}]}");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "<stdin>:1:");
  run_free(&r);
  /* a cyclic graph is named as such */
  r = run("remat info --graph -", "remat-graph 1\nnodes 2\n0 F 1 1 - a : b\n1 F 1 1 - b : a\n");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "cycle: ");
  run_free(&r);
}

TEST(cli_info_min_budget_convert) {
  run_result r;
  mlsys_remat_graph a, b;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", bin());
  r = run("remat info --graph tests/data/remat/chain8.txt --json", NULL);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "\"nodes\": 17");
  CHECK_CONTAINS(r.out, "\"checkpoint_all_peak\": 10");
  CHECK_CONTAINS(r.out, "\"lower_bound\": 3");
  run_free(&r);
  r = run("remat min-budget --graph tests/data/remat/chain8.txt --json", NULL);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "\"min_budget\": 3");
  CHECK_CONTAINS(r.out, "\"proven\": true");
  run_free(&r);
  /* text → JSON → the same graph */
  r = run("remat convert --graph tests/data/remat/t8.txt --to json", NULL);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  REQUIRE_OK(mlsys_remat_graph_parse(r.out, strlen(r.out), "converted", &a));
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/remat/t8.txt", &b));
  CHECK_EQ_INT(a.dag.n, b.dag.n);
  CHECK_EQ_INT(a.dag.nedges, b.dag.nedges);
  mlsys_remat_graph_free(&a);
  mlsys_remat_graph_free(&b);
  run_free(&r);
  /* percentage budgets: 100% is the checkpoint-all peak → zero overhead */
  r = run("remat solve --graph tests/data/graphs/alexnet_b32.json --budget 100% --json", NULL);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "\"overhead\": 1,");
  CHECK_CONTAINS(r.out, "\"status\": \"optimal\"");
  run_free(&r);
}

TEST_MAIN()
