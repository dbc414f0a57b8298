/* Allocation-failure tests for mlsys_remat.h: the k-th allocation through MLSYS_MALLOC/MLSYS_REALLOC fails, for
   k = 0, 1, 2, ... until a call needs no more than k allocations. Every earlier run must fail cleanly: an error
   status, an empty output, and every block it allocated freed (counted here; `make ... SAN=1` adds ASan's leak
   checker). Covered: both graph parsers, mlsys_remat_graph_create/chain, and mlsys_remat_solve with the
   checkpoint-all and linearized-greedy baselines. */
#include "tests/oom_alloc.h"
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

static void inject(long k) {
  oom_fail_at = k;
  oom_calls = 0;
  oom_live = 0;
}

/* ---- inputs ---- */

/* A JSON graph that reaches every allocation site of the JSON path: > 256 deps and > 64 deps by name (the staging
   arrays grow), names, ops, flags, fwd_of by id and by name, units, a name, fixed memory (three categories). */
static char *make_json(int nodes) {
  size_t cap = (size_t)nodes * 256 + 1024, o = 0;
  char *s = (char *)malloc(cap);
  int v;
  o += (size_t)snprintf(s + o, cap - o,
                        "{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"name\": \"oom\", \"batch\": 4,\n"
                        " \"units\": {\"mem\": \"byte\", \"cost\": \"flop\"},\n"
                        " \"fixed\": {\"params\": 1000, \"param_grads\": 1000, \"inputs\": 24},\n \"nodes\": [\n");
  for (v = 0; v < nodes; v++) {
    o += (size_t)snprintf(s + o, cap - o, "  {\"id\": %d, \"kind\": \"%s\", \"name\": \"node_%d\", \"op\": \"Op%d\", "
                          "\"cost\": %d.5, \"mem\": %d", v, v == nodes / 2 ? "L" : v > nodes / 2 ? "B" : "F", v,
                          v % 7, v, 100 + v);
    if (v > 0) {
      o += (size_t)snprintf(s + o, cap - o, ", \"deps\": [\"node_%d\"", v - 1);   /* by name */
      if (v > 1) o += (size_t)snprintf(s + o, cap - o, ", %d", v / 2 - 1);   /* by id; < v - 1 */
      o += (size_t)snprintf(s + o, cap - o, "]");
    }
    if (v % 5 == 0) o += (size_t)snprintf(s + o, cap - o, ", \"flags\": [\"rng\", \"inplace\"]");
    if (v > nodes / 2) {
      if (v % 2) o += (size_t)snprintf(s + o, cap - o, ", \"fwd_of\": %d", nodes - 1 - v);
      else o += (size_t)snprintf(s + o, cap - o, ", \"fwd_of\": \"node_%d\"", nodes - 1 - v);
    }
    o += (size_t)snprintf(s + o, cap - o, "}%s\n", v + 1 < nodes ? "," : "");
  }
  snprintf(s + o, cap - o, " ]}\n");
  return s;
}

/* The same shape in the text form: deps by name and by id, flags, every header line. */
static char *make_text(int nodes) {
  size_t cap = (size_t)nodes * 128 + 1024, o = 0;
  char *s = (char *)malloc(cap);
  int v;
  o += (size_t)snprintf(s + o, cap - o, "remat-graph 1\nname oom\nbatch 4\nunits mem=byte cost=flop\n"
                                        "fixed params=1000 param_grads=1000 inputs=24\nnodes %d\n", nodes);
  for (v = 0; v < nodes; v++) {
    o += (size_t)snprintf(s + o, cap - o, "%d %s %d.5 %d %s node_%d :", v,
                          v == nodes / 2 ? "L" : v > nodes / 2 ? "B" : "F", v, 100 + v,
                          v % 5 == 0 ? "rng,inplace" : "-", v);
    if (v > 0) o += (size_t)snprintf(s + o, cap - o, " node_%d", v - 1);
    if (v > 2) o += (size_t)snprintf(s + o, cap - o, " %d", v / 2 - 1);
    o += (size_t)snprintf(s + o, cap - o, "\n");
  }
  return s;
}

/* ---- the injection loop ---- */

typedef struct {
  long runs;             /* failing runs before the first success */
  long succeeded_at;     /* k of the first success, -1 if none */
  long leaks;            /* failing runs that left blocks allocated */
  long not_empty;        /* failing runs whose output was not reset */
  long ok_status;        /* runs that failed an allocation yet returned MLSYS_OK */
  long not_nomem;        /* failing runs whose status was not MLSYS_ERR_NOMEM */
  long first_not_nomem_k;
  int first_not_nomem_status;
  char first_not_nomem_msg[300];
  long leak_k;           /* first k that leaked */
} oom_stats;

/* op(ctx) runs the call under test and returns its status; it must release whatever it produced (and set
   *empty = 1 if the output was in its reset state right after a failure). */
typedef mlsys_status (*oom_op)(void *ctx, int *empty, int *check_ok);

static void run_oom(oom_op op, void *ctx, oom_stats *r) {
  long k;
  memset(r, 0, sizeof *r);
  r->succeeded_at = -1;
  r->first_not_nomem_k = -1;
  r->leak_k = -1;
  for (k = 0; k < 1000000; k++) {
    int empty = 1, check_ok = 1;
    mlsys_status st;
    inject(k);
    mlsys_clear_error();
    st = op(ctx, &empty, &check_ok);
    oom_fail_at = -1;
    if (st == MLSYS_OK) {
      if (oom_calls > k) r->ok_status++;   /* an allocation failed and nobody noticed */
      if (oom_live != 0 && r->leak_k < 0) r->leak_k = k;
      if (oom_live != 0) r->leaks++;
      if (!check_ok) r->not_empty++;
      if (oom_calls <= k) { r->succeeded_at = k; return; }
      continue;
    }
    r->runs++;
    if (oom_live != 0) {
      r->leaks++;
      if (r->leak_k < 0) r->leak_k = k;
    }
    if (!empty) r->not_empty++;
    if (st != MLSYS_ERR_NOMEM) {
      if (r->not_nomem++ == 0) {
        r->first_not_nomem_k = k;
        r->first_not_nomem_status = st;
        snprintf(r->first_not_nomem_msg, sizeof r->first_not_nomem_msg, "%.280s", mlsys_last_error());
      }
    }
  }
}

static int graph_is_empty(const mlsys_remat_graph *g) {
  return g->dag.n == 0 && !g->dag.name && !g->dag.cost && !g->dag.size && !g->dag.in && !g->dag.in_off &&
         !g->dag.out && !g->dag.out_off && !g->kind && !g->flags && !g->op && !g->fwd_of && g->nfixed == 0 &&
         !g->name && !g->mem_unit && !g->cost_unit && g->loss == -1;
}

typedef struct { const char *text; int nodes; } parse_ctx;

static mlsys_status op_parse(void *vctx, int *empty, int *check_ok) {
  parse_ctx *c = (parse_ctx *)vctx;
  mlsys_remat_graph g;
  mlsys_status st = mlsys_remat_graph_parse(c->text, strlen(c->text), "oom", &g);
  if (st != MLSYS_OK) *empty = graph_is_empty(&g);
  else *check_ok = g.dag.n == c->nodes && g.nfixed == 3 && g.name && strcmp(g.name, "oom") == 0;
  mlsys_remat_graph_free(&g);   /* safe either way */
  return st;
}

static mlsys_status op_chain(void *vctx, int *empty, int *check_ok) {
  mlsys_remat_graph g;
  mlsys_status st = mlsys_remat_graph_chain(*(int *)vctx, &g);
  if (st != MLSYS_OK) *empty = graph_is_empty(&g);
  else *check_ok = g.dag.n == 2 * *(int *)vctx + 1 && g.name != NULL;
  mlsys_remat_graph_free(&g);
  return st;
}

static mlsys_status op_create(void *vctx, int *empty, int *check_ok) {
  static const int d1[] = {0}, d2[] = {0, 1}, d3[] = {2, 1};
  mlsys_remat_node nd[4];
  mlsys_remat_graph g;
  mlsys_status st;
  (void)vctx;
  memset(nd, 0, sizeof nd);
  nd[0].name = "a"; nd[0].op = "Conv"; nd[0].cost = 1; nd[0].mem = 2;
  nd[1].name = "b"; nd[1].op = "Relu"; nd[1].ndeps = 1; nd[1].deps = d1;
  nd[2].name = "loss"; nd[2].kind = MLSYS_REMAT_L; nd[2].ndeps = 2; nd[2].deps = d2;
  nd[3].name = "gb"; nd[3].kind = MLSYS_REMAT_B; nd[3].ndeps = 2; nd[3].deps = d3;
  st = mlsys_remat_graph_create(4, nd, &g);
  if (st != MLSYS_OK) *empty = graph_is_empty(&g);
  else *check_ok = g.dag.n == 4 && g.loss == 2;
  mlsys_remat_graph_free(&g);
  return st;
}

typedef struct { const mlsys_remat_graph *g; mlsys_remat_method method; } solve_ctx;

static mlsys_status op_solve(void *vctx, int *empty, int *check_ok) {
  solve_ctx *c = (solve_ctx *)vctx;
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  mlsys_status st;
  memset(&o, 0, sizeof o);
  o.method = c->method;
  st = mlsys_remat_solve(c->g, UINT64_MAX, &o, &s);
  if (st != MLSYS_OK) *empty = s.n == 0 && !s.R && !s.S;
  else *check_ok = s.n == c->g->dag.n && s.fits && s.R && s.S;
  mlsys_remat_schedule_free(&s);
  return st;
}

#define CHECK_OOM(r, what)                                                                                  \
  do {                                                                                                      \
    CHECK_MSG((r).succeeded_at >= 0, "%s never succeeded", what);                                          \
    CHECK_MSG((r).leaks == 0, "%s: %ld runs leaked (first at k = %ld)", what, (r).leaks, (r).leak_k);       \
    CHECK_MSG((r).not_empty == 0, "%s: %ld runs left a non-empty output", what, (r).not_empty);            \
    CHECK_MSG((r).ok_status == 0, "%s: %ld runs returned OK after a failed allocation", what, (r).ok_status); \
  } while (0)
#define CHECK_NOMEM(r, what)                                                                                \
  CHECK_MSG((r).not_nomem == 0, "%s: %ld of %ld failing runs did not return MLSYS_ERR_NOMEM; first at k = %ld: " \
            "status %d, \"%s\"", what, (r).not_nomem, (r).runs, (r).first_not_nomem_k,                     \
            (r).first_not_nomem_status, (r).first_not_nomem_msg)

/* ---- tests ---- */

TEST(oom_parse_json) {
  parse_ctx c;
  oom_stats r;
  char *text = make_json(300);
  mlsys_remat_graph g;
  REQUIRE_OK(mlsys_remat_graph_parse(text, strlen(text), "oom", &g));   /* the input itself is valid */
  CHECK_EQ_INT(g.dag.n, 300);
  CHECK_EQ_INT(g.fwd_of[299], 0);
  CHECK_EQ_INT(g.fwd_of[298], 1);
  mlsys_remat_graph_free(&g);
  c.text = text;
  c.nodes = 300;
  run_oom(op_parse, &c, &r);
  CHECK_OOM(r, "JSON parse");
  CHECK(r.runs > 50);
  printf("    JSON parse: %ld allocations\n", r.succeeded_at);
  free(text);
}

TEST(oom_parse_text) {
  parse_ctx c;
  oom_stats r;
  char *text = make_text(300);
  mlsys_remat_graph g;
  REQUIRE_OK(mlsys_remat_graph_parse(text, strlen(text), "oom", &g));
  CHECK_EQ_INT(g.dag.n, 300);
  mlsys_remat_graph_free(&g);
  c.text = text;
  c.nodes = 300;
  run_oom(op_parse, &c, &r);
  CHECK_OOM(r, "text parse");
  CHECK(r.runs > 50);
  printf("    text parse: %ld allocations\n", r.succeeded_at);
  free(text);
}

/* Out of memory must be reported as such (MLSYS_ERR_NOMEM), not as a parse error about the input. */
TEST(oom_parse_reports_nomem) {
  parse_ctx c;
  oom_stats r;
  char *text = make_json(300);
  c.text = text;
  c.nodes = 300;
  run_oom(op_parse, &c, &r);
  CHECK_NOMEM(r, "JSON parse");
  free(text);
  text = make_text(300);
  c.text = text;
  run_oom(op_parse, &c, &r);
  CHECK_NOMEM(r, "text parse");
  free(text);
}

TEST(oom_create_and_chain) {
  oom_stats r;
  int L = 6;
  run_oom(op_create, NULL, &r);
  CHECK_OOM(r, "graph_create");
  CHECK_NOMEM(r, "graph_create");
  run_oom(op_chain, &L, &r);
  CHECK_OOM(r, "graph_chain");
  CHECK_NOMEM(r, "graph_chain");
}

TEST(oom_solve_checkpoint_all) {
  mlsys_remat_graph g;
  solve_ctx c;
  oom_stats r;
  REQUIRE_OK(mlsys_remat_graph_chain(4, &g));
  c.g = &g;
  c.method = MLSYS_REMAT_CHECKPOINT_ALL;
  run_oom(op_solve, &c, &r);
  CHECK_OOM(r, "solve checkpoint-all");
  CHECK_NOMEM(r, "solve checkpoint-all");
  printf("    checkpoint-all: %ld allocations\n", r.succeeded_at);
  mlsys_remat_graph_free(&g);
}

TEST(oom_solve_lin_greedy) {
  mlsys_remat_graph g;
  solve_ctx c;
  oom_stats r;
  REQUIRE_OK(mlsys_remat_graph_chain(4, &g));
  c.g = &g;
  c.method = MLSYS_REMAT_LIN_GREEDY;
  run_oom(op_solve, &c, &r);
  CHECK_OOM(r, "solve lin-greedy");
  CHECK_NOMEM(r, "solve lin-greedy");
  printf("    lin-greedy: %ld allocations\n", r.succeeded_at);
  mlsys_remat_graph_free(&g);
}

/* The harness itself: a run with no injection allocates and frees in balance, and the k-th call does fail. */
TEST(oom_harness_sanity) {
  mlsys_remat_graph g;
  inject(-1);
  REQUIRE_OK(mlsys_remat_graph_chain(3, &g));
  CHECK(oom_calls > 5);
  CHECK(oom_live > 0);
  mlsys_remat_graph_free(&g);
  CHECK_EQ_INT(oom_live, 0);
  inject(0);
  CHECK_EQ_INT(mlsys_remat_graph_chain(3, &g), MLSYS_ERR_NOMEM);
  CHECK_EQ_INT(oom_live, 0);
  oom_fail_at = -1;
}

TEST_MAIN()
