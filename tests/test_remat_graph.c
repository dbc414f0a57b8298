/* Tests for section 1 of mlsys_remat.h: the graph data model, its JSON and text formats, validation and messages.

   Fixtures: tests/data/remat/ (t8.* = the Checkmate repository's Keras "test" network, test case T8 of the
   project's specification, in both forms; vgg16_mini.* = the JSON header shape of the doc block with realistic
   byte and FLOP counts). Run from the repository root. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

#define CMP_FWD_OF 1   /* compare fwd_of */
#define CMP_OP 2       /* compare op names */
#define CMP_ALL (CMP_FWD_OF | CMP_OP)

static int str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* First difference between two graphs, or NULL when they are equal (costs compared bit for bit). */
static const char *graph_diff(const mlsys_remat_graph *a, const mlsys_remat_graph *b, int what) {
  static char why[256];
  const mlsys_dag *x = &a->dag, *y = &b->dag;
  int v, j;
  if (x->n != y->n) { snprintf(why, sizeof why, "n %d vs %d", x->n, y->n); return why; }
  if (x->nedges != y->nedges) { snprintf(why, sizeof why, "nedges %d vs %d", x->nedges, y->nedges); return why; }
  for (v = 0; v < x->n; v++) {
    if (x->in_off[v + 1] != y->in_off[v + 1]) { snprintf(why, sizeof why, "node %d: dep count", v); return why; }
    for (j = x->in_off[v]; j < x->in_off[v + 1]; j++)
      if (x->in[j] != y->in[j]) { snprintf(why, sizeof why, "node %d: dep %d vs %d", v, x->in[j], y->in[j]); return why; }
    if (memcmp(&x->cost[v], &y->cost[v], sizeof(double)) != 0) {
      snprintf(why, sizeof why, "node %d: cost %.17g vs %.17g", v, x->cost[v], y->cost[v]);
      return why;
    }
    if (x->size[v] != y->size[v]) { snprintf(why, sizeof why, "node %d: mem", v); return why; }
    if (a->kind[v] != b->kind[v]) { snprintf(why, sizeof why, "node %d: kind %d vs %d", v, a->kind[v], b->kind[v]); return why; }
    if (a->flags[v] != b->flags[v]) { snprintf(why, sizeof why, "node %d: flags %u vs %u", v, a->flags[v], b->flags[v]); return why; }
    if (!str_eq(x->name ? x->name[v] : NULL, y->name ? y->name[v] : NULL)) {
      snprintf(why, sizeof why, "node %d: name '%s' vs '%s'", v, x->name && x->name[v] ? x->name[v] : "(null)",
               y->name && y->name[v] ? y->name[v] : "(null)");
      return why;
    }
    if ((what & CMP_FWD_OF) && a->fwd_of[v] != b->fwd_of[v]) {
      snprintf(why, sizeof why, "node %d: fwd_of %d vs %d", v, a->fwd_of[v], b->fwd_of[v]);
      return why;
    }
    if ((what & CMP_OP) && !str_eq(a->op ? a->op[v] : NULL, b->op ? b->op[v] : NULL)) {
      snprintf(why, sizeof why, "node %d: op '%s' vs '%s'", v, a->op && a->op[v] ? a->op[v] : "(null)",
               b->op && b->op[v] ? b->op[v] : "(null)");
      return why;
    }
  }
  if (a->loss != b->loss) { snprintf(why, sizeof why, "loss %d vs %d", a->loss, b->loss); return why; }
  if (a->nfixed != b->nfixed) { snprintf(why, sizeof why, "nfixed %d vs %d", a->nfixed, b->nfixed); return why; }
  for (j = 0; j < a->nfixed; j++)
    if (strcmp(a->fixed_name[j], b->fixed_name[j]) != 0 || a->fixed_bytes[j] != b->fixed_bytes[j]) {
      snprintf(why, sizeof why, "fixed %d: %s=%llu vs %s=%llu", j, a->fixed_name[j],
               (unsigned long long)a->fixed_bytes[j], b->fixed_name[j], (unsigned long long)b->fixed_bytes[j]);
      return why;
    }
  if (!str_eq(a->name, b->name)) { snprintf(why, sizeof why, "graph name '%s' vs '%s'", a->name ? a->name : "(null)", b->name ? b->name : "(null)"); return why; }
  if (a->batch != b->batch) { snprintf(why, sizeof why, "batch %d vs %d", a->batch, b->batch); return why; }
  if (!str_eq(a->mem_unit, b->mem_unit)) return "mem unit differs";
  if (!str_eq(a->cost_unit, b->cost_unit)) return "cost unit differs";
  return NULL;
}
#define CHECK_GRAPH_EQ(a, b, what)                                          \
  do {                                                                      \
    const char *d_ = graph_diff((a), (b), (what));                          \
    CHECK_MSG(d_ == NULL, "graphs differ: %s", d_ ? d_ : "");               \
  } while (0)

/* A graph written to a string (free() it). */
static char *graph_to_string(const mlsys_remat_graph *g, int json, mlsys_status *st) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) { *st = MLSYS_ERR_IO; return NULL; }
  *st = mlsys_remat_graph_write(g, f, json);
  fclose(f);
  return buf;
}

/* write → parse. */
static mlsys_status roundtrip(const mlsys_remat_graph *g, int json, mlsys_remat_graph *out) {
  mlsys_status st;
  char *s = graph_to_string(g, json, &st);
  if (st == MLSYS_OK) st = mlsys_remat_graph_parse(s, strlen(s), json ? "rt.json" : "rt.txt", out);
  else memset(out, 0, sizeof *out);
  free(s);
  return st;
}

static mlsys_status parse_str(const char *s, const char *src, mlsys_remat_graph *g) {
  return mlsys_remat_graph_parse(s, strlen(s), src, g);
}

/* A graph left by a failed call must be empty: every pointer NULL, loss -1. */
static int graph_is_empty(const mlsys_remat_graph *g) {
  int i;
  if (g->dag.n || g->dag.nedges || g->dag.name || g->dag.cost || g->dag.size || g->dag.in || g->dag.in_off ||
      g->dag.out || g->dag.out_off)
    return 0;
  if (g->kind || g->flags || g->op || g->fwd_of || g->nfixed || g->name || g->mem_unit || g->cost_unit) return 0;
  for (i = 0; i < MLSYS_REMAT_MAX_FIXED; i++)
    if (g->fixed_name[i]) return 0;
  return g->loss == -1 && g->batch == 0;
}

/* Parse `text` (len bytes) as source "t" and expect status `want`, a message starting with `prefix` (may be NULL)
   and containing `needle`; the output graph must be empty and safe to free. NULL when all holds, else why not. */
static const char *expect_err_(const char *text, size_t len, mlsys_status want, const char *prefix, const char *needle) {
  static char why[1400];
  mlsys_remat_graph g;
  mlsys_status st;
  const char *msg;
  memset(&g, 0x5A, sizeof g);   /* garbage in: parse must reset it */
  st = mlsys_remat_graph_parse(text, len, "t", &g);
  msg = mlsys_last_error();
  if (st == MLSYS_OK) {
    mlsys_remat_graph_free(&g);
    return "parse succeeded";
  }
  if (st != want) {
    snprintf(why, sizeof why, "status %d (%s), wanted %d: %s", st, mlsys_status_str(st), want, msg);
    mlsys_remat_graph_free(&g);
    return why;
  }
  if (prefix && strncmp(msg, prefix, strlen(prefix)) != 0) {
    snprintf(why, sizeof why, "message \"%s\" does not start with \"%s\"", msg, prefix);
    mlsys_remat_graph_free(&g);
    return why;
  }
  if (needle && !strstr(msg, needle)) {
    snprintf(why, sizeof why, "message \"%s\" lacks \"%s\"", msg, needle);
    mlsys_remat_graph_free(&g);
    return why;
  }
  if (!graph_is_empty(&g)) {
    mlsys_remat_graph_free(&g);
    return "the output graph was not reset after the failure";
  }
  mlsys_remat_graph_free(&g);   /* must be safe */
  return NULL;
}
#define EXPECT_ERR(text, want, prefix, needle)                                        \
  do {                                                                                \
    const char *w_ = expect_err_((text), strlen(text), (want), (prefix), (needle));   \
    CHECK_MSG(w_ == NULL, "%s", w_ ? w_ : "");                                        \
  } while (0)

static const char *data_path(const char *name) {
  static char buf[512];
  FILE *f;
  snprintf(buf, sizeof buf, "tests/data/remat/%s", name);
  if ((f = fopen(buf, "rb"))) { fclose(f); return buf; }
  snprintf(buf, sizeof buf, "../tests/data/remat/%s", name);
  return buf;
}

/* Load through stdin ("-"): a child process writes `text` into a pipe that replaces fd 0 for the call. */
static mlsys_status load_via_stdin(const char *text, size_t len, mlsys_remat_graph *g) {
  int fds[2], saved, status;
  pid_t pid;
  mlsys_status st;
  memset(g, 0, sizeof *g);
  if (pipe(fds) != 0) return mlsys_set_error(MLSYS_ERR_IO, "pipe failed");
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) return mlsys_set_error(MLSYS_ERR_IO, "fork failed");
  if (pid == 0) {
    size_t off = 0;
    close(fds[0]);
    while (off < len) {
      ssize_t k = write(fds[1], text + off, len - off);
      if (k <= 0) _exit(1);
      off += (size_t)k;
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  clearerr(stdin);
  st = mlsys_remat_graph_load("-", g);
  dup2(saved, 0);
  close(saved);
  clearerr(stdin);
  waitpid(pid, &status, 0);
  return st;
}

/* The hand-written graph used by several round trips: every attribute the formats carry. */
static mlsys_status make_rich_graph(mlsys_remat_graph *g) {
  static const int d1[] = {0}, d2[] = {1, 0}, d3[] = {2}, d4[] = {3, 2, 0}, d5[] = {4, 1};
  mlsys_remat_node nd[6];
  mlsys_status st;
  memset(nd, 0, sizeof nd);
  nd[0].name = "input_embed"; nd[0].op = "Embedding"; nd[0].cost = 0.1; nd[0].mem = 4096;
  nd[1].name = "attn"; nd[1].op = "Attention"; nd[1].cost = 1.0 / 3.0; nd[1].mem = 1ull << 48;
  nd[1].ndeps = 1; nd[1].deps = d1; nd[1].flags = MLSYS_REMAT_RNG;
  nd[2].name = "view"; nd[2].cost = 0; nd[2].mem = 0; nd[2].ndeps = 2; nd[2].deps = d2;
  nd[2].flags = MLSYS_REMAT_ALIAS | MLSYS_REMAT_INPLACE;
  nd[3].name = "loss"; nd[3].kind = MLSYS_REMAT_L; nd[3].cost = 1e30; nd[3].mem = 4; nd[3].ndeps = 1; nd[3].deps = d3;
  nd[4].name = "grad_view"; nd[4].kind = MLSYS_REMAT_B; nd[4].cost = 1e-7; nd[4].mem = 123456789;
  nd[4].ndeps = 3; nd[4].deps = d4; nd[4].flags = MLSYS_REMAT_NORECOMPUTE;
  nd[5].name = "opt_step"; nd[5].op = "SGD"; nd[5].kind = MLSYS_REMAT_O; nd[5].cost = 7.25e12; nd[5].mem = 1;
  nd[5].ndeps = 2; nd[5].deps = d5;
  nd[5].flags = MLSYS_REMAT_NORECOMPUTE | MLSYS_REMAT_RNG | MLSYS_REMAT_ALIAS | MLSYS_REMAT_INPLACE;
  if ((st = mlsys_remat_graph_create(6, nd, g)) != MLSYS_OK) return st;
  g->fwd_of[4] = 2;
  g->batch = 7;
  g->name = mlsys_strdup("rich");
  g->mem_unit = mlsys_strdup("byte");
  g->cost_unit = mlsys_strdup("us");
  if ((st = mlsys_remat_graph_set_fixed(g, "params", 1000)) != MLSYS_OK) return st;
  if ((st = mlsys_remat_graph_set_fixed(g, "param_grads", 1000)) != MLSYS_OK) return st;
  return mlsys_remat_graph_set_fixed(g, "inputs", 1ull << 48);
}

/* ---- data model: chain, create, fixed memory, single-op bound ---- */

TEST(chain_shape) {
  int L;
  for (L = 1; L <= 9; L++) {
    mlsys_remat_graph g;
    int v, n = 2 * L + 1;
    char nm[24];
    REQUIRE_OK(mlsys_remat_graph_chain(L, &g));
    CHECK_EQ_INT(g.dag.n, n);
    CHECK_EQ_INT(g.dag.nedges, 3 * L);
    CHECK_EQ_INT(g.loss, L);
    CHECK_STR(g.name, "chain");
    for (v = 0; v < n; v++) {
      CHECK_EQ_INT(g.kind[v], v < L ? MLSYS_REMAT_F : v == L ? MLSYS_REMAT_L : MLSYS_REMAT_B);
      CHECK(g.dag.cost[v] == 1.0);
      CHECK_EQ_INT(g.dag.size[v], 1);
      CHECK_EQ_INT(g.flags[v], 0);
      if (v < L) snprintf(nm, sizeof nm, "f%d", v);
      else if (v == L) snprintf(nm, sizeof nm, "loss");
      else snprintf(nm, sizeof nm, "b%d", 2 * L - v);
      CHECK_STR(g.dag.name[v], nm);
      CHECK_EQ_INT(g.fwd_of[v], v > L ? 2 * L - v : -1);
    }
    /* edges (i, i+1) for i < 2L and (i, 2L-i) for i < L: every node but 0 depends on its predecessor */
    for (v = 1; v < n; v++) CHECK(mlsys_dag_has_edge(&g.dag, v - 1, v));
    for (v = 0; v < L; v++) CHECK(mlsys_dag_has_edge(&g.dag, v, 2 * L - v));
    /* deps in ascending order: the forward value first, then the incoming gradient */
    for (v = L + 1; v < n; v++) {
      REQUIRE(g.dag.in_off[v + 1] - g.dag.in_off[v] == 2);
      CHECK_EQ_INT(g.dag.in[g.dag.in_off[v]], 2 * L - v);
      CHECK_EQ_INT(g.dag.in[g.dag.in_off[v] + 1], v - 1);
    }
    CHECK_EQ_INT(mlsys_remat_single_op_bound(&g), 3);   /* b_i reads x_i and the incoming gradient */
    mlsys_remat_graph_free(&g);
  }
}

TEST(chain_bad_lengths) {
  mlsys_remat_graph g;
  memset(&g, 0x5A, sizeof g);
  CHECK_EQ_INT(mlsys_remat_graph_chain(0, &g), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "chain length 0");
  CHECK(graph_is_empty(&g));
  mlsys_remat_graph_free(&g);
  CHECK_EQ_INT(mlsys_remat_graph_chain(-1, &g), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "chain length -1");
  CHECK(graph_is_empty(&g));
  mlsys_remat_graph_free(&g);
  CHECK_EQ_INT(mlsys_remat_graph_chain(8192, &g), MLSYS_ERR_ARG);   /* 2L+1 = 16385 nodes */
  CHECK(graph_is_empty(&g));
  mlsys_remat_graph_free(&g);
  REQUIRE_OK(mlsys_remat_graph_chain(8191, &g));                      /* 16383 nodes: the largest */
  CHECK_EQ_INT(g.dag.n, 16383);
  CHECK_EQ_INT(g.dag.nedges, 3 * 8191);
  mlsys_remat_graph_free(&g);
}

TEST(create_keeps_everything) {
  mlsys_remat_graph g;
  int v;
  REQUIRE_OK(make_rich_graph(&g));
  CHECK_EQ_INT(g.dag.n, 6);
  CHECK_EQ_INT(g.dag.nedges, 9);
  CHECK_EQ_INT(g.loss, 3);
  CHECK_STR(g.op[0], "Embedding");
  CHECK(g.op[2] == NULL);
  CHECK_EQ_INT(g.flags[5], 15);
  CHECK_EQ_INT(g.kind[5], MLSYS_REMAT_O);
  /* deps keep argument order; users (out) are ascending */
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[4]], 3);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[4] + 1], 2);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[4] + 2], 0);
  for (v = 0; v < g.dag.n; v++) {
    int j;
    for (j = g.dag.out_off[v] + 1; j < g.dag.out_off[v + 1]; j++) CHECK(g.dag.out[j - 1] < g.dag.out[j]);
  }
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 2000 + (1ull << 48));
  mlsys_remat_graph_free(&g);
  CHECK(graph_is_empty(&g));
  mlsys_remat_graph_free(&g);   /* twice is fine */
}

TEST(create_bad_arrays) {
  static const int d0[] = {0}, d5[] = {5}, dm[] = {-1}, d12[] = {1, 2}, d00[] = {0, 0}, d10[] = {1, 0};
  mlsys_remat_node nd[3];
  mlsys_remat_graph g;
#define RESET() (memset(nd, 0, sizeof nd), nd[0].name = "a", nd[1].name = "b", nd[2].name = "c")
#define EXPECT_CREATE(want, needle)                                        \
  do {                                                                     \
    memset(&g, 0x5A, sizeof g);                                            \
    CHECK_EQ_INT(mlsys_remat_graph_create(3, nd, &g), (want));             \
    CHECK_CONTAINS(mlsys_last_error(), (needle));                          \
    CHECK(graph_is_empty(&g));                                             \
    mlsys_remat_graph_free(&g);                                            \
  } while (0)
  RESET(); nd[1].ndeps = -1; nd[1].deps = d0;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 1: -1 dependencies");
  RESET(); nd[2].ndeps = 1; nd[2].deps = NULL;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 2: 1 dependencies but no list");
  RESET(); nd[2].ndeps = 1; nd[2].deps = d5;
  EXPECT_CREATE(MLSYS_ERR_ARG, "depends on node 5, outside 0..2");
  RESET(); nd[1].ndeps = 1; nd[1].deps = dm;
  EXPECT_CREATE(MLSYS_ERR_ARG, "depends on node -1, outside 0..2");
  RESET(); nd[0].ndeps = 2; nd[0].deps = d12;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 0 'a' depends on node 1 'b', which comes later");
  RESET(); nd[1].ndeps = 1; nd[1].deps = d0; nd[0].ndeps = 1; nd[0].deps = d0;
  EXPECT_CREATE(MLSYS_ERR_CYCLE, "cycle: a -> a");
  RESET(); nd[2].ndeps = 2; nd[2].deps = d00;
  EXPECT_CREATE(MLSYS_ERR_ARG, "duplicate edge a -> c");
  RESET(); nd[1].cost = -1;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 1 'b' has cost -1");
  RESET(); nd[1].cost = NAN;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 1 'b' has cost nan");
  RESET(); nd[2].cost = INFINITY;
  EXPECT_CREATE(MLSYS_ERR_ARG, "costs must be finite");
  RESET(); nd[2].cost = 2e30;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 2 'c' has cost 2e+30");
  RESET(); nd[0].mem = (1ull << 48) + 1;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 0 'a' has 281474976710657 bytes, over the limit of 2^48");
  RESET(); nd[1].kind = (mlsys_remat_kind)7;
  EXPECT_CREATE(MLSYS_ERR_ARG, "node 1: unknown kind 7");
  RESET(); nd[2].name = "a";
  EXPECT_CREATE(MLSYS_ERR_ARG, "nodes 0 and 2 are both named 'a'");
  /* counts */
  RESET();
  memset(&g, 0x5A, sizeof g);
  CHECK_EQ_INT(mlsys_remat_graph_create(-1, nd, &g), MLSYS_ERR_ARG);
  CHECK(graph_is_empty(&g));
  CHECK_EQ_INT(mlsys_remat_graph_create(2, NULL, &g), MLSYS_ERR_ARG);
  CHECK(graph_is_empty(&g));
  CHECK_EQ_INT(mlsys_remat_graph_create(MLSYS_REMAT_MAX_NODES + 1, nd, &g), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "16385 nodes; the limit is 16384");
  CHECK(graph_is_empty(&g));
  mlsys_remat_graph_free(&g);
  /* and a valid one at the end: the checks above are about the arrays, not the graph */
  RESET(); nd[1].ndeps = 1; nd[1].deps = d0; nd[2].ndeps = 2; nd[2].deps = d10;
  CHECK_OK(mlsys_remat_graph_create(3, nd, &g));
  CHECK_EQ_INT(g.dag.nedges, 3);
  mlsys_remat_graph_free(&g);
#undef RESET
#undef EXPECT_CREATE
}

TEST(fixed_memory_set_and_total) {
  mlsys_remat_graph g;
  int i;
  char nm[32];
  REQUIRE_OK(mlsys_remat_graph_chain(2, &g));
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 0);
  CHECK_OK(mlsys_remat_graph_set_fixed(&g, "params", 100));
  CHECK_OK(mlsys_remat_graph_set_fixed(&g, "param_grads", 100));
  CHECK_OK(mlsys_remat_graph_set_fixed(&g, "inputs", 7));
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 207);
  CHECK_OK(mlsys_remat_graph_set_fixed(&g, "params", 50));   /* overwrite, no new category */
  CHECK_EQ_INT(g.nfixed, 3);
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 157);
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, "", 1), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, NULL, 1), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, "huge", (1ull << 48) + 1), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "fixed memory 'huge' of 281474976710657 bytes is over the limit of 2^48");
  for (i = 3; i < MLSYS_REMAT_MAX_FIXED; i++) {
    snprintf(nm, sizeof nm, "cat%d", i);
    CHECK_OK(mlsys_remat_graph_set_fixed(&g, nm, 1ull << 48));
  }
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, "one_too_many", 1), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "more than 16 fixed-memory categories");
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 157 + 13 * (1ull << 48));
  mlsys_remat_graph_free(&g);
}

TEST(single_op_bound_hand_computed) {
  /* mem 5, 7, 3, 11; 1 <- 0; 2 <- 0, 1; 3 <- 2: per node 5, 7+5, 3+5+7, 11+3 → 15 */
  static const int d1[] = {0}, d2[] = {0, 1}, d3[] = {2};
  mlsys_remat_node nd[4];
  mlsys_remat_graph g;
  memset(nd, 0, sizeof nd);
  nd[0].mem = 5; nd[1].mem = 7; nd[2].mem = 3; nd[3].mem = 11;
  nd[1].ndeps = 1; nd[1].deps = d1; nd[2].ndeps = 2; nd[2].deps = d2; nd[3].ndeps = 1; nd[3].deps = d3;
  REQUIRE_OK(mlsys_remat_graph_create(4, nd, &g));
  CHECK_EQ_INT(mlsys_remat_single_op_bound(&g), 15);
  CHECK(g.dag.name == NULL);
  mlsys_remat_graph_free(&g);
  nd[3].mem = 16;   /* now the last node dominates: 16 + 3 */
  REQUIRE_OK(mlsys_remat_graph_create(4, nd, &g));
  CHECK_EQ_INT(mlsys_remat_single_op_bound(&g), 19);
  mlsys_remat_graph_free(&g);
  /* T8: grad_conv0 (1 byte) reads conv0, conv1a, conv1b and their two gradients: 1 + 1 + 2 + 2 + 2 + 2 = 10 */
  REQUIRE_OK(mlsys_remat_graph_load(data_path("t8.txt"), &g));
  CHECK_EQ_INT(mlsys_remat_single_op_bound(&g), 10);
  mlsys_remat_graph_free(&g);
  /* vgg16-mini: grad_features_1 (411041792) reads features_1 (411041792) and grad_features_2 (411041792) */
  REQUIRE_OK(mlsys_remat_graph_load(data_path("vgg16_mini.json"), &g));
  CHECK_EQ_INT(mlsys_remat_single_op_bound(&g), 3ull * 411041792);
  mlsys_remat_graph_free(&g);
}

/* Every node may hold 2^48 bytes and a node may have up to 16383 inputs: the limit keeps the bound's sum (and every
   peak) below 2^63, so it is exact. A node reading 4097 inputs of 2^48 bytes each is the case that wrapped when the
   limit was 2^52. */
TEST(single_op_bound_does_not_wrap) {
  int n = 4098, v;
  mlsys_remat_node *nd = (mlsys_remat_node *)calloc((size_t)n, sizeof *nd);
  int *deps = (int *)malloc(sizeof(int) * (size_t)n);
  mlsys_remat_graph g;
  mlsys_status st;
  REQUIRE(nd && deps);
  for (v = 0; v < n; v++) { nd[v].mem = 1ull << 48; nd[v].cost = 1; deps[v] = v; }
  nd[n - 1].ndeps = n - 1;
  nd[n - 1].deps = deps;
  st = mlsys_remat_graph_create(n, nd, &g);
  free(nd);
  free(deps);
  if (st != MLSYS_OK) {   /* rejecting the graph is a valid fix */
    CHECK(st == MLSYS_ERR_ARG || st == MLSYS_ERR_TOO_BIG);
    return;
  }
  CHECK_MSG(mlsys_remat_single_op_bound(&g) == 4098ull << 48, "single_op_bound = %llu, want 4098 * 2^48",
            (unsigned long long)mlsys_remat_single_op_bound(&g));
  mlsys_remat_graph_free(&g);
}

/* ---- round trips ---- */

TEST(roundtrip_chain_json) {
  int L;
  for (L = 1; L <= 12; L++) {
    mlsys_remat_graph g, h;
    REQUIRE_OK(mlsys_remat_graph_chain(L, &g));
    REQUIRE_OK(mlsys_remat_graph_set_fixed(&g, "params", (uint64_t)L * 1000));
    CHECK_OK(roundtrip(&g, 1, &h));
    CHECK_GRAPH_EQ(&g, &h, CMP_ALL);
    mlsys_remat_graph_free(&g);
    mlsys_remat_graph_free(&h);
  }
}

/* Everything the text form has a field for: n, edges in order, costs, mem, kinds, flags, names, fixed memory,
   graph name, batch, units. (fwd_of and op: see text_roundtrip_keeps_fwd_of_and_op.) */
TEST(roundtrip_chain_text) {
  int L;
  for (L = 1; L <= 12; L++) {
    mlsys_remat_graph g, h;
    REQUIRE_OK(mlsys_remat_graph_chain(L, &g));
    REQUIRE_OK(mlsys_remat_graph_set_fixed(&g, "params", (uint64_t)L * 1000));
    CHECK_OK(roundtrip(&g, 0, &h));
    CHECK_GRAPH_EQ(&g, &h, 0);
    mlsys_remat_graph_free(&g);
    mlsys_remat_graph_free(&h);
  }
}

TEST(roundtrip_rich_graph_json) {
  mlsys_remat_graph g, h, k;
  REQUIRE_OK(make_rich_graph(&g));
  REQUIRE_OK(roundtrip(&g, 1, &h));
  CHECK_GRAPH_EQ(&g, &h, CMP_ALL);
  CHECK(h.dag.cost[1] == 1.0 / 3.0);
  CHECK(h.dag.cost[0] == 0.1);
  CHECK(h.dag.cost[3] == 1e30);
  CHECK_EQ_INT(h.dag.size[1], 1ull << 48);
  CHECK_EQ_INT(h.fwd_of[4], 2);
  /* twice: the output is a fixed point */
  REQUIRE_OK(roundtrip(&h, 1, &k));
  CHECK_GRAPH_EQ(&h, &k, CMP_ALL);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
  mlsys_remat_graph_free(&k);
}

TEST(roundtrip_rich_graph_text) {
  mlsys_remat_graph g, h;
  REQUIRE_OK(make_rich_graph(&g));
  REQUIRE_OK(roundtrip(&g, 0, &h));
  CHECK_GRAPH_EQ(&g, &h, 0);
  CHECK(h.dag.cost[1] == 1.0 / 3.0);
  CHECK(h.dag.cost[4] == 1e-7);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
}

/* Writing what was read gives the same bytes again (both forms), and JSON → text → JSON keeps the text fields. */
TEST(write_is_stable) {
  mlsys_remat_graph g, h;
  mlsys_status st;
  char *a, *b;
  int json;
  REQUIRE_OK(make_rich_graph(&g));
  for (json = 0; json <= 1; json++) {
    a = graph_to_string(&g, json, &st);
    CHECK_OK(st);
    REQUIRE(a);
    REQUIRE_OK(parse_str(a, "a", &h));
    b = graph_to_string(&h, json, &st);
    CHECK_OK(st);
    REQUIRE(b);
    CHECK_STR(a, b);   /* JSON carries everything; text gives back identically what it carries */
    free(a);
    free(b);
    mlsys_remat_graph_free(&h);
  }
  mlsys_remat_graph_free(&g);
}

/* The text form has no field for fwd_of or op: writing a graph as text and reading it back loses them. */
TEST(text_roundtrip_keeps_fwd_of_and_op) {
  mlsys_remat_graph g, h;
  REQUIRE_OK(mlsys_remat_graph_chain(3, &g));
  REQUIRE_OK(roundtrip(&g, 0, &h));
  CHECK_GRAPH_EQ(&g, &h, CMP_FWD_OF);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
  REQUIRE_OK(make_rich_graph(&g));
  REQUIRE_OK(roundtrip(&g, 0, &h));
  CHECK_GRAPH_EQ(&g, &h, CMP_ALL);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
}

/* A graph without names (mlsys_remat_graph_create with no names, or JSON nodes without "name") must survive both
   forms. The text writer prints such nodes as "#0", "#1", ... and '#' starts a comment in the text form. */
TEST(roundtrip_unnamed_graph) {
  static const int d1[] = {0}, d2[] = {0, 1};
  mlsys_remat_node nd[3];
  mlsys_remat_graph g, h;
  mlsys_status st;
  memset(nd, 0, sizeof nd);
  nd[0].cost = 1; nd[0].mem = 10;
  nd[1].cost = 2; nd[1].mem = 20; nd[1].ndeps = 1; nd[1].deps = d1; nd[1].kind = MLSYS_REMAT_L;
  nd[2].cost = 3; nd[2].mem = 30; nd[2].ndeps = 2; nd[2].deps = d2; nd[2].kind = MLSYS_REMAT_B;
  REQUIRE_OK(mlsys_remat_graph_create(3, nd, &g));
  CHECK(g.dag.name == NULL);
  REQUIRE_OK(roundtrip(&g, 1, &h));
  CHECK_GRAPH_EQ(&g, &h, CMP_ALL);
  mlsys_remat_graph_free(&h);
  st = roundtrip(&g, 0, &h);
  CHECK_MSG(st == MLSYS_OK, "text round trip of an unnamed graph: %.400s", mlsys_last_error());
  if (st == MLSYS_OK) {
    /* names may be invented for the text form, but the structure must come back */
    CHECK_EQ_INT(h.dag.n, 3);
    CHECK_EQ_INT(h.dag.nedges, 3);
    CHECK_EQ_INT(h.loss, 1);
  }
  mlsys_remat_graph_free(&h);
  mlsys_remat_graph_free(&g);
}

TEST(fixtures_text_equals_json) {
  static const char *pairs[][2] = {{"t8.txt", "t8.json"}, {"vgg16_mini.txt", "vgg16_mini.json"}};
  int i;
  for (i = 0; i < 2; i++) {
    mlsys_remat_graph t, j, h;
    REQUIRE_OK(mlsys_remat_graph_load(data_path(pairs[i][0]), &t));
    REQUIRE_OK(mlsys_remat_graph_load(data_path(pairs[i][1]), &j));
    CHECK_GRAPH_EQ(&t, &j, 0);
    /* and each survives its own and the other form */
    REQUIRE_OK(roundtrip(&j, 1, &h));
    CHECK_GRAPH_EQ(&j, &h, CMP_ALL);
    mlsys_remat_graph_free(&h);
    REQUIRE_OK(roundtrip(&t, 1, &h));
    CHECK_GRAPH_EQ(&t, &h, CMP_ALL);
    mlsys_remat_graph_free(&h);
    REQUIRE_OK(roundtrip(&j, 0, &h));
    CHECK_GRAPH_EQ(&j, &h, 0);
    mlsys_remat_graph_free(&h);
    mlsys_remat_graph_free(&t);
    mlsys_remat_graph_free(&j);
  }
}

TEST(fixture_t8_contents) {
  static const double C[13] = {1, 4, 4, 1, 1, 1, 0, 2, 2, 2, 8, 8, 2};
  static const uint64_t M[13] = {1, 2, 2, 2, 1, 1, 1, 1, 1, 2, 2, 2, 1};
  static const int fwd[13] = {-1, -1, -1, -1, -1, -1, -1, 5, 4, 3, 2, 1, 0};
  mlsys_remat_graph g;
  double total = 0;
  int v;
  REQUIRE_OK(mlsys_remat_graph_load(data_path("t8.json"), &g));
  CHECK_EQ_INT(g.dag.n, 13);
  CHECK_EQ_INT(g.dag.nedges, 26);
  CHECK_EQ_INT(g.loss, 6);
  CHECK_STR(g.name, "keras-test-net");
  CHECK_STR(g.mem_unit, "unit");
  CHECK_STR(g.cost_unit, "unit");
  CHECK_EQ_INT(g.nfixed, 0);
  CHECK_EQ_INT(g.batch, 0);
  for (v = 0; v < 13; v++) {
    CHECK(g.dag.cost[v] == C[v]);
    CHECK_EQ_INT(g.dag.size[v], M[v]);
    CHECK_EQ_INT(g.fwd_of[v], fwd[v]);
    CHECK_EQ_INT(g.kind[v], v < 6 ? MLSYS_REMAT_F : v == 6 ? MLSYS_REMAT_L : MLSYS_REMAT_B);
    total += g.dag.cost[v];
  }
  CHECK(total == 36);
  CHECK_STR(g.op[4], "GlobalAveragePooling2D");
  CHECK(g.op[7] == NULL);
  /* grad_conv0's deps in argument order, names resolved */
  CHECK_EQ_INT(g.dag.in_off[13] - g.dag.in_off[12], 5);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[12] + 0], 11);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[12] + 1], 1);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[12] + 2], 10);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[12] + 3], 2);
  CHECK_EQ_INT(g.dag.in[g.dag.in_off[12] + 4], 0);
  /* checkpoint-all never recomputes: cost = sum C = 36 and (spec T8) the peak is 13 */
  {
    mlsys_remat_opts o;
    mlsys_remat_schedule s;
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    CHECK_OK(mlsys_remat_solve(&g, 13, &o, &s));
    CHECK(s.cost == 36);
    CHECK_EQ_INT(s.peak, 13);
    mlsys_remat_schedule_free(&s);
  }
  mlsys_remat_graph_free(&g);
}

TEST(fixture_vgg16_mini_contents) {
  mlsys_remat_graph g;
  int src;
  for (src = 0; src < 2; src++) {
    REQUIRE_OK(mlsys_remat_graph_load(data_path(src ? "vgg16_mini.json" : "vgg16_mini.txt"), &g));
    CHECK_STR(g.name, "vgg16-mini");
    CHECK_EQ_INT(g.batch, 32);
    CHECK_STR(g.mem_unit, "byte");
    CHECK_STR(g.cost_unit, "flop");
    REQUIRE(g.nfixed == 5);
    CHECK_STR(g.fixed_name[0], "inputs");
    CHECK_STR(g.fixed_name[4], "reserve");
    CHECK_EQ_INT(g.fixed_bytes[1], 3211275168ull);
    CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 19267584ull + 2 * 3211275168ull);
    CHECK_EQ_INT(g.dag.n, 12);
    CHECK_EQ_INT(g.dag.nedges, 16);
    CHECK_EQ_INT(g.loss, 6);
    CHECK(g.dag.cost[4] == 51380224000.0);
    CHECK_EQ_INT(g.dag.size[0], 411041792);
    CHECK_EQ_INT(g.flags[1], MLSYS_REMAT_INPLACE);
    CHECK_EQ_INT(g.flags[3], MLSYS_REMAT_ALIAS);
    CHECK_EQ_INT(g.flags[5], MLSYS_REMAT_RNG);
    CHECK_EQ_INT(g.flags[10], MLSYS_REMAT_NORECOMPUTE);
    CHECK_EQ_INT(g.flags[11], MLSYS_REMAT_NORECOMPUTE | MLSYS_REMAT_RNG | MLSYS_REMAT_ALIAS | MLSYS_REMAT_INPLACE);
    CHECK_STR(g.dag.name[8], "grad_classifier_0");
    CHECK_EQ_INT(g.dag.in[g.dag.in_off[8]], 3);   /* "flatten" in the text form */
    if (src) {
      CHECK_EQ_INT(g.fwd_of[7], 5);
      CHECK_EQ_INT(g.fwd_of[8], 4);
      CHECK_EQ_INT(g.fwd_of[11], 0);
    }
    mlsys_remat_graph_free(&g);
  }
}

TEST(load_from_path_and_stdin) {
  mlsys_remat_graph a, b, c;
  FILE *f;
  char *text;
  long len;
  mlsys_status st;
  REQUIRE_OK(mlsys_remat_graph_load(data_path("t8.txt"), &a));
  f = fopen(data_path("t8.txt"), "rb");
  REQUIRE(f);
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char *)malloc((size_t)len + 1);
  REQUIRE(text && fread(text, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  text[len] = 0;
  CHECK_OK(load_via_stdin(text, (size_t)len, &b));
  CHECK_GRAPH_EQ(&a, &b, CMP_ALL);
  free(text);
  mlsys_remat_graph_free(&b);
  mlsys_remat_graph_free(&a);
  /* a large JSON graph (several read() calls) through stdin */
  REQUIRE_OK(mlsys_remat_graph_chain(3000, &a));
  text = graph_to_string(&a, 1, &st);
  REQUIRE_OK(st);
  REQUIRE(strlen(text) > 200000);
  CHECK_OK(load_via_stdin(text, strlen(text), &c));
  CHECK_GRAPH_EQ(&a, &c, CMP_ALL);
  free(text);
  mlsys_remat_graph_free(&c);
  mlsys_remat_graph_free(&a);
  /* errors name "<stdin>" */
  memset(&b, 0x5A, sizeof b);
  {
    static const char bad[] = "remat-graph 1\nnodes 1\n0 F 1 1 - a : zz\n";
    CHECK_EQ_INT(load_via_stdin(bad, sizeof bad - 1, &b), MLSYS_ERR_PARSE);
  }
  CHECK_CONTAINS(mlsys_last_error(), "<stdin>:3:15: node 0 'a' uses unknown input 'zz'");
  CHECK(graph_is_empty(&b));
  mlsys_remat_graph_free(&b);
  /* a missing file */
  memset(&b, 0x5A, sizeof b);
  CHECK_EQ_INT(mlsys_remat_graph_load("tests/data/remat/no_such_graph.json", &b), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "no_such_graph.json: cannot open");
  CHECK(graph_is_empty(&b));
  mlsys_remat_graph_free(&b);
  /* errors in a file name the file */
  {
    char path[] = "/tmp/test_remat_graph_XXXXXX";
    static const char bad[] = "remat-graph 1\nnodes 1\n0 F 1 1 - a : 0\n";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bad, sizeof bad - 1) == (ssize_t)(sizeof bad - 1));
    close(fd);
    memset(&b, 0x5A, sizeof b);
    CHECK_EQ_INT(mlsys_remat_graph_load(path, &b), MLSYS_ERR_CYCLE);
    CHECK_CONTAINS(mlsys_last_error(), path);
    CHECK_CONTAINS(mlsys_last_error(), ": cycle: a -> a");
    CHECK(graph_is_empty(&b));
    mlsys_remat_graph_free(&b);
    remove(path);
  }
}

/* ---- what the parsers read ---- */

TEST(deps_by_name_and_id_mixed) {
  static const char *txt =
      "remat-graph 1\n"
      "nodes 5\n"
      "0 F 1 1 - a :\n"
      "1 F 1 1 - b : a\n"
      "2 F 1 1 - c : 0 b\n"
      "3 F 1 1 - 17 : c 0 1\n"          /* a node may be named with digits; deps that are integers are ids */
      "4 F 1 1 - d : 17 3\n";           /* "17" is id 17 → out of range */
  static const char *txt_ok =
      "remat-graph 1\n"
      "nodes 5\n"
      "0 F 1 1 - a :\n"
      "1 F 1 1 - b : a\n"
      "2 F 1 1 - c : 0 b\n"
      "3 F 1 1 - 17 : c 0 1\n"
      "4 F 1 1 - d : 3 a   # comment after deps\n";
  static const char *js =
      "{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"nodes\": [\n"
      " {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 1},\n"
      " {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 1, \"deps\": [\"a\"]},\n"
      " {\"id\": 2, \"name\": \"c\", \"cost\": 1, \"mem\": 1, \"deps\": [0, \"b\"]},\n"
      " {\"id\": 3, \"name\": \"17\", \"cost\": 1, \"mem\": 1, \"deps\": [\"c\", 0, 1]},\n"
      " {\"id\": 4, \"name\": \"d\", \"cost\": 1, \"mem\": 1, \"deps\": [\"17\", \"a\"]}]}\n";
  mlsys_remat_graph t, j;
  EXPECT_ERR(txt, MLSYS_ERR_PARSE, "t:7:15:", "node 4 uses input 17, but the graph has only 5 nodes");
  REQUIRE_OK(parse_str(txt_ok, "t", &t));
  REQUIRE_OK(parse_str(js, "j", &j));
  CHECK_GRAPH_EQ(&t, &j, CMP_ALL);
  CHECK_EQ_INT(t.dag.nedges, 8);
  CHECK_EQ_INT(t.dag.in[t.dag.in_off[2]], 0);
  CHECK_EQ_INT(t.dag.in[t.dag.in_off[2] + 1], 1);
  CHECK_EQ_INT(t.dag.in[t.dag.in_off[3]], 2);
  CHECK_EQ_INT(j.dag.in[j.dag.in_off[4]], 3);   /* the string "17" is a name */
  CHECK_EQ_INT(j.dag.in[j.dag.in_off[4] + 1], 0);
  mlsys_remat_graph_free(&t);
  mlsys_remat_graph_free(&j);
}

TEST(header_fields_kept) {
  static const char *txt =
      "\n  # leading comment and blank lines\n\n"
      "remat-graph 1   # trailing comment\n"
      "name resnet50\n"
      "batch 256\n"
      "units mem=byte cost=us\n"
      "fixed params=102228128 param_grads=102228128 inputs=154140672\n"
      "fixed optimizer=204456256 params=1\n"   /* a second line adds; a repeated category is overwritten */
      "nodes 2\n"
      "0\tforward\t3.5\t8\t-\tx\t:\r\n"          /* tabs, CRLF and the long kind names */
      "1 loss 0 4 - y : x\n";
  mlsys_remat_graph g;
  REQUIRE_OK(parse_str(txt, "t", &g));
  CHECK_STR(g.name, "resnet50");
  CHECK_EQ_INT(g.batch, 256);
  CHECK_STR(g.mem_unit, "byte");
  CHECK_STR(g.cost_unit, "us");
  CHECK_EQ_INT(g.nfixed, 4);
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 1 + 102228128ull + 154140672ull + 204456256ull);
  CHECK_EQ_INT(g.kind[0], MLSYS_REMAT_F);
  CHECK_EQ_INT(g.kind[1], MLSYS_REMAT_L);
  CHECK_EQ_INT(g.loss, 1);
  CHECK(g.dag.cost[0] == 3.5);
  mlsys_remat_graph_free(&g);
}

TEST(json_fields_flags_fwd_of_loss) {
  static const char *js =
      "{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"name\": \"g\", \"batch\": 8,\n"
      " \"units\": {\"mem\": \"byte\", \"cost\": \"flop\", \"extra\": 1}, \"unknown_member\": [1, 2, {}],\n"
      " \"fixed\": {\"params\": 10, \"param_grads\": 20, \"inputs\": 30},\n"
      " \"nodes\": [\n"
      "  {\"id\": 0, \"kind\": \"F\", \"name\": \"x\", \"op\": \"Linear\", \"cost\": 1e9, \"mem\": 4e3, \"flags\": [\"rng\"]},\n"
      "  {\"id\": 1, \"kind\": \"O\", \"name\": \"y\", \"cost\": 0.5, \"mem\": 0, \"deps\": [\"x\"],\n"
      "   \"flags\": [\"alias\", \"inplace\"], \"fwd_of\": null, \"note\": \"ignored\"},\n"
      "  {\"id\": 2, \"kind\": \"L\", \"name\": \"l\", \"cost\": 0, \"mem\": 4, \"deps\": [1]},\n"
      "  {\"id\": 3, \"kind\": \"B\", \"name\": \"gy\", \"cost\": 1, \"mem\": 0, \"deps\": [2, 1], \"fwd_of\": \"y\",\n"
      "   \"flags\": [\"norecompute\"]},\n"
      "  {\"id\": 4, \"kind\": \"B\", \"name\": \"gx\", \"cost\": 2e9, \"mem\": 4000, \"deps\": [3, 0], \"fwd_of\": 0,\n"
      "   \"flags\": [\"norecompute\", \"rng\", \"alias\", \"inplace\"]}]}\n";
  mlsys_remat_graph g;
  REQUIRE_OK(parse_str(js, "j", &g));
  CHECK_STR(g.name, "g");
  CHECK_EQ_INT(g.batch, 8);
  CHECK_STR(g.mem_unit, "byte");
  CHECK_STR(g.cost_unit, "flop");
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 60);
  CHECK_EQ_INT(g.loss, 2);
  CHECK_EQ_INT(g.flags[0], MLSYS_REMAT_RNG);
  CHECK_EQ_INT(g.flags[1], MLSYS_REMAT_ALIAS | MLSYS_REMAT_INPLACE);
  CHECK_EQ_INT(g.flags[2], 0);
  CHECK_EQ_INT(g.flags[3], MLSYS_REMAT_NORECOMPUTE);
  CHECK_EQ_INT(g.flags[4], 15);
  CHECK_EQ_INT(g.kind[1], MLSYS_REMAT_O);
  CHECK_EQ_INT(g.fwd_of[0], -1);
  CHECK_EQ_INT(g.fwd_of[1], -1);
  CHECK_EQ_INT(g.fwd_of[3], 1);
  CHECK_EQ_INT(g.fwd_of[4], 0);
  CHECK_EQ_INT(g.dag.size[0], 4000);
  CHECK_STR(g.op[0], "Linear");
  mlsys_remat_graph_free(&g);
  /* no L node: loss = -1; default kind F; partial names get "n<id>" */
  REQUIRE_OK(parse_str("{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"nodes\": [{\"id\": 0, \"cost\": 0, "
                       "\"mem\": 0}, {\"id\": 1, \"name\": \"q\", \"cost\": 0, \"mem\": 0, \"deps\": [\"n0\"]}]}",
                       "j", &g));
  CHECK_EQ_INT(g.loss, -1);
  CHECK_EQ_INT(g.kind[0], MLSYS_REMAT_F);
  CHECK_STR(g.dag.name[0], "n0");
  CHECK_EQ_INT(g.dag.in[0], 0);
  mlsys_remat_graph_free(&g);
  /* format and version may be left out */
  REQUIRE_OK(parse_str("  {\"nodes\": []}", "j", &g));
  CHECK_EQ_INT(g.dag.n, 0);
  mlsys_remat_graph_free(&g);
}

TEST(text_flags_all_four) {
  static const char *txt =
      "remat-graph 1\nnodes 5\n"
      "0 F 1 1 norecompute a :\n"
      "1 F 1 1 rng b : 0\n"
      "2 F 1 1 alias c : 1\n"
      "3 F 1 1 inplace d : 2\n"
      "4 O 1 1 inplace,alias,rng,norecompute e : 3\n";
  mlsys_remat_graph g;
  REQUIRE_OK(parse_str(txt, "t", &g));
  CHECK_EQ_INT(g.flags[0], MLSYS_REMAT_NORECOMPUTE);
  CHECK_EQ_INT(g.flags[1], MLSYS_REMAT_RNG);
  CHECK_EQ_INT(g.flags[2], MLSYS_REMAT_ALIAS);
  CHECK_EQ_INT(g.flags[3], MLSYS_REMAT_INPLACE);
  CHECK_EQ_INT(g.flags[4], 15);
  CHECK_EQ_INT(g.kind[4], MLSYS_REMAT_O);
  CHECK_EQ_INT(g.loss, -1);
  mlsys_remat_graph_free(&g);
}

/* ---- bad input: text form (source "t"; positions are line:column, both 1-based) ---- */

#define H2 "remat-graph 1\nnodes 2\n"

TEST(text_errors_positions) {
  EXPECT_ERR("", MLSYS_ERR_PARSE, "t:1:1: ", "empty graph file");
  EXPECT_ERR("   \n\t\n", MLSYS_ERR_PARSE, "t:3:1: ", "empty graph file");
  EXPECT_ERR("nodes 1\n0 F 1 1 - a :\n", MLSYS_ERR_PARSE, "t:1:1: ", "expected 'remat-graph 1'");
  EXPECT_ERR("\n# c\n  remat-graph 7\nnodes 0\n", MLSYS_ERR_PARSE, "t:3:15: ", "unsupported version");
  EXPECT_ERR("remat-graph\nnodes 0\n", MLSYS_ERR_PARSE, "t:1:12: ", "unsupported version");
  EXPECT_ERR("remat-graph 1\nname g\n", MLSYS_ERR_PARSE, "t:3:1: ", "missing 'nodes N' line");
  EXPECT_ERR("remat-graph 1\nname\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:5: ", "'name' needs a value");
  EXPECT_ERR("remat-graph 1\nfoo 3\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:1: ", "unknown header line");
  EXPECT_ERR("remat-graph 1\nbatch -3\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:7: ", "'batch' needs a non-negative integer");
  EXPECT_ERR("remat-graph 1\nnodes many\n", MLSYS_ERR_PARSE, "t:2:7: ", "'nodes' needs a count");
  EXPECT_ERR("remat-graph 1\nfixed params=1 grads=x\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:22: ",
             "fixed memory 'grads' must be a non-negative integer");
  EXPECT_ERR("remat-graph 1\nfixed params\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:7: ", "expected key=value");
  EXPECT_ERR("remat-graph 1\nfixed params=281474976710657\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:7: ",
             "over the limit of 2^48");
  EXPECT_ERR("remat-graph 1\nunits =byte\nnodes 0\n", MLSYS_ERR_PARSE, "t:2:7: ", "expected key=value");
  /* node lines */
  EXPECT_ERR(H2 "1 F 1 1 - a :\n", MLSYS_ERR_PARSE, "t:3:1: ", "expected node id 0");
  EXPECT_ERR(H2 "0 X 1 1 - a :\n", MLSYS_ERR_PARSE, "t:3:3: ", "expected a node kind (F, L, B or O)");
  EXPECT_ERR(H2 "0 F -1 1 - a :\n", MLSYS_ERR_PARSE, "t:3:5: ", "node 0: cost must be a finite number >= 0");
  EXPECT_ERR(H2 "0 F nan 1 - a :\n", MLSYS_ERR_PARSE, "t:3:5: ", "cost must be a finite number");
  EXPECT_ERR(H2 "0 F inf 1 - a :\n", MLSYS_ERR_PARSE, "t:3:5: ", "cost must be a finite number");
  EXPECT_ERR(H2 "0 F 1e31 1 - a :\n", MLSYS_ERR_PARSE, "t:3:5: ", "cost must be a finite number");
  EXPECT_ERR(H2 "0 F 1 1.5 - a :\n", MLSYS_ERR_PARSE, "t:3:7: ", "node 0: mem must be a non-negative integer");
  EXPECT_ERR(H2 "0 F 1 -8 - a :\n", MLSYS_ERR_PARSE, "t:3:7: ", "mem must be a non-negative integer");
  EXPECT_ERR(H2 "0 F 1 281474976710657 - a :\n", MLSYS_ERR_PARSE, "t:3:7: ", "(< 2^48)");
  EXPECT_ERR(H2 "0 F 1 99999999999999999999999 - a :\n", MLSYS_ERR_PARSE, "t:3:7: ", "mem must be");
  EXPECT_ERR(H2 "0 F 1 1\n", MLSYS_ERR_PARSE, "t:3:8: ", "node 0: expected flags");
  EXPECT_ERR(H2 "0 F 1 1 rng,fast a :\n", MLSYS_ERR_PARSE, "t:3:13: ", "node 0: unknown flag");
  EXPECT_ERR(H2 "0 F 1 1 - :\n", MLSYS_ERR_PARSE, "t:3:11: ", "node 0: expected a name");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 L 0 4 - loss 0\n", MLSYS_ERR_PARSE, "t:4:16: ",
             "node 1: expected ':' before the dependencies");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 F 1 1 - b : a conv9\n", MLSYS_ERR_PARSE, "t:4:17: ",
             "node 1 'b' uses unknown input 'conv9'");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 F 1 1 - b : 5\n", MLSYS_ERR_PARSE, "t:4:15: ",
             "node 1 uses input 5, but the graph has only 2 nodes");
  /* counts */
  EXPECT_ERR("remat-graph 1\nnodes 3\n0 F 1 1 - a :\n1 F 1 1 - b : 0\n", MLSYS_ERR_PARSE, "t:5:1: ",
             "file ends after 2 of 3 nodes");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 F 1 1 - b : 0\n\n# fine\n2 F 1 1 - c : 1\n", MLSYS_ERR_PARSE, "t:7:1: ",
             "unexpected text after the 2 nodes the header announced");
}

/* The end of a file that does not end in a newline is on its last line, after its last character. */
TEST(text_eof_position_without_final_newline) {
  EXPECT_ERR("  \n\n  ", MLSYS_ERR_PARSE, "t:3:3: ", "empty graph file");
  EXPECT_ERR("remat-graph 1\nnodes 3\n0 F 1 1 - a :\n1 F 1 1 - b : 0", MLSYS_ERR_PARSE, "t:4:16: ",
             "file ends after 2 of 3 nodes");
}

TEST(text_structural_errors) {
  EXPECT_ERR(H2 "0 F 1 1 - a : b\n1 F 1 1 - b : a\n", MLSYS_ERR_CYCLE, "t: ", "cycle: a -> b -> a");
  EXPECT_ERR(H2 "0 F 1 1 - a : 0\n1 F 1 1 - b : 0\n", MLSYS_ERR_CYCLE, "t: ", "cycle: a -> a");
  EXPECT_ERR(H2 "0 F 1 1 - a : 1\n1 F 1 1 - b :\n", MLSYS_ERR_ARG, "t: ",
             "node 0 'a' depends on node 1 'b', which comes later");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 F 1 1 - b : 0 a\n", MLSYS_ERR_ARG, "t: ", "duplicate edge a -> b");
  EXPECT_ERR(H2 "0 F 1 1 - a :\n1 F 1 1 - a : 0\n", MLSYS_ERR_ARG, "t: ",
             "nodes 0 and 1 are both named 'a'; names must be unique");
}

TEST(text_too_big) {
  EXPECT_ERR("remat-graph 1\nnodes 20000\n", MLSYS_ERR_TOO_BIG, "t:2: ", "20000 nodes; the limit is 16384");
  EXPECT_ERR("remat-graph 1\nnodes 99999999999999999999\n", MLSYS_ERR_PARSE, "t:2:7: ", "'nodes' needs a count");
}

TEST(nul_byte) {
  static const char txt[] = "remat-graph 1\nnodes 1\n0 F 1 1 - a\0b :\n";
  static const char js[] = "{\"format\": \"mlsys-remat-graph\", \"nodes\": []}\0";
  const char *w = expect_err_(txt, sizeof txt - 1, MLSYS_ERR_PARSE, "t: ", "contains a NUL byte");
  CHECK_MSG(w == NULL, "%s", w ? w : "");
  w = expect_err_(js, sizeof js - 1, MLSYS_ERR_PARSE, "t: ", "NUL byte");
  CHECK_MSG(w == NULL, "%s", w ? w : "");
  w = expect_err_("\0", 1, MLSYS_ERR_PARSE, "t: ", "NUL byte");
  CHECK_MSG(w == NULL, "%s", w ? w : "");
}

TEST(null_text_and_source) {
  mlsys_remat_graph g;
  memset(&g, 0x5A, sizeof g);
  CHECK_EQ_INT(mlsys_remat_graph_parse(NULL, 0, "x", &g), MLSYS_ERR_ARG);
  CHECK(graph_is_empty(&g));
  /* no source name: messages say "<graph>" */
  CHECK_EQ_INT(mlsys_remat_graph_parse("nodes", 5, NULL, &g), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "<graph>:1:1: ");
  mlsys_remat_graph_free(&g);
}

/* ---- bad input: JSON form ---- */

#define JH "{\"format\": \"mlsys-remat-graph\", \"version\": 1,\n \"nodes\": [\n"
/* line 3: node a; line 4: node b */
#define JA "  {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 8},\n"

TEST(json_errors_positions) {
  /* JSON syntax (reported by the reader) */
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8}\n ]\n", MLSYS_ERR_PARSE, "t:6:1: ",
             "expected ',' or '}' after an object member, found end of input");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8},\n ]}\n", MLSYS_ERR_PARSE, "t:5:2: ",
             "trailing commas are not allowed");
  EXPECT_ERR(JH "  {\"id\": 0, \"cost\": 1, \"mem\": 8,}]}", MLSYS_ERR_PARSE, "t:3:33: ",
             "trailing commas are not allowed");
  EXPECT_ERR(JH "  {\"id\": 0, \"cost\": NaN, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:3:21: ",
             "NaN and Infinity are not JSON numbers");
  EXPECT_ERR(JH "  {\"id\": 0, \"cost\": 1e400, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:3:21: ", "number out of range");
  /* the graph's own rules */
  /* JSON is recognised by its first non-blank character ('{' or '['); anything else is read as text */
  EXPECT_ERR(" [1, 2]", MLSYS_ERR_PARSE, "t:1:2: ", "a remat graph must be a JSON object, got array");
  EXPECT_ERR("{\"format\": \"onnx\", \"nodes\": []}", MLSYS_ERR_PARSE, "t:1:12: ",
             "format is 'onnx', expected 'mlsys-remat-graph'");
  EXPECT_ERR("{\"format\": \"mlsys-remat-graph\",\n  \"version\": 2, \"nodes\": []}", MLSYS_ERR_PARSE, "t:2:14: ",
             "version 2 is not supported");
  EXPECT_ERR("{\"format\": \"mlsys-remat-graph\", \"version\": \"1\", \"nodes\": []}", MLSYS_ERR_PARSE, "t:1:44: ",
             "'version' must be an integer, got string");
  EXPECT_ERR("{\"format\": \"mlsys-remat-graph\", \"version\": 1}", MLSYS_ERR_PARSE, "t:1:1: ",
             "missing required member 'nodes'");
  EXPECT_ERR("{\"format\": \"mlsys-remat-graph\",\n\"nodes\": {}}", MLSYS_ERR_PARSE, "t:2:10: ",
             "'nodes' must be an array, got object");
  EXPECT_ERR(JH "  7]}", MLSYS_ERR_PARSE, "t:3:3: ", "node 0 must be an object, got number");
  EXPECT_ERR(JH JA "  {\"id\": 2, \"name\": \"b\", \"cost\": 1, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:4:10: ",
             "node at position 1 has id 2; ids must be 0..n-1 in order");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": -1, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:4:34: ",
             "'cost' must be a number in [0, 1e+30], got -1");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1e31, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:4:34: ",
             "'cost' must be a number in [0, 1e+30]");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:4:3: ",
             "missing required member 'cost'");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1,\n   \"mem\": 281474976710657}]}", MLSYS_ERR_PARSE,
             "t:5:11: ", "node 1: 281474976710657 bytes is over the limit of 2^48");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": -8}]}", MLSYS_ERR_PARSE, "t:4:44: ",
             "'mem' must be a non-negative integer, got -8");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 1.5}]}", MLSYS_ERR_PARSE, "t:4:44: ",
             "'mem' must be a non-negative integer, got 1.5");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"kind\": \"Q\", \"cost\": 1, \"mem\": 8}]}", MLSYS_ERR_PARSE, "t:4:21: ",
             "node 1: unknown kind 'Q' (F, L, B or O)");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"flags\": [\"rng\", \"fast\"]}]}", MLSYS_ERR_PARSE,
             "t:4:51: ", "node 1: unknown flag (norecompute, rng, alias or inplace)");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"flags\": \"rng\"}]}", MLSYS_ERR_PARSE, "t:4:43: ",
             "'flags' must be an array, got string");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8,\n   \"deps\": [\"a\", \"conv9\"]}]}",
             MLSYS_ERR_PARSE, "t:5:18: ", "node 1 'b' uses unknown input 'conv9'");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"deps\": [0, 9]}]}", MLSYS_ERR_PARSE, "t:4:46: ",
             "node 1 uses input 9, but the graph has only 2 nodes");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"deps\": [-1]}]}", MLSYS_ERR_PARSE, "t:4:43: ",
             "node 1: a dependency must be a node id or name");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"deps\": [true]}]}", MLSYS_ERR_PARSE, "t:4:43: ",
             "a dependency must be a node id or name");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"fwd_of\": true}]}", MLSYS_ERR_PARSE, "t:4:44: ",
             "node 1: fwd_of must be a node id, a name or null");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"fwd_of\": 5}]}", MLSYS_ERR_PARSE, "t:4:44: ",
             "fwd_of must be a node id");
  EXPECT_ERR(JH "  {\"id\": 0, \"cost\": 1, \"mem\": 8, \"deps\": [\"x\"]}]}", MLSYS_ERR_PARSE, "t:3:43: ",
             "unknown input 'x' (no node has a name)");
  EXPECT_ERR("{\"nodes\": [], \"name\": 5}", MLSYS_ERR_PARSE, "t:1:23: ", "'name' must be a string, got number");
  EXPECT_ERR("{\"nodes\": [], \"batch\": -1}", MLSYS_ERR_PARSE, "t:1:24: ", "'batch' must be an integer in [0,");
  EXPECT_ERR("{\"nodes\": [],\n \"fixed\": {\"params\": 281474976710657}}", MLSYS_ERR_PARSE, "t:2:22: ",
             "fixed memory 'params' of 281474976710657 bytes is over the limit of 2^48");
  EXPECT_ERR("{\"nodes\": [], \"fixed\": {\"params\": -1}}", MLSYS_ERR_PARSE, "t:1:35: ",
             "'params' must be a non-negative integer");
  EXPECT_ERR("{\"nodes\": [], \"fixed\": [1]}", MLSYS_ERR_PARSE, "t:1:24: ", "'fixed' must be an object");
}

TEST(json_fixed_too_many_categories) {
  char buf[1024];
  size_t o = 0;
  int i;
  o += (size_t)snprintf(buf + o, sizeof buf - o, "{\"nodes\": [], \"fixed\": {");
  for (i = 0; i < 17; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"c%d\": %d", i ? ", " : "", i, i);
  snprintf(buf + o, sizeof buf - o, "}}");
  EXPECT_ERR(buf, MLSYS_ERR_TOO_BIG, "t:1:", "more than 16 fixed-memory categories");
  o = 0;   /* 16 is fine */
  o += (size_t)snprintf(buf + o, sizeof buf - o, "{\"nodes\": [], \"fixed\": {");
  for (i = 0; i < 16; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"c%d\": %d", i ? ", " : "", i, i);
  snprintf(buf + o, sizeof buf - o, "}}");
  {
    mlsys_remat_graph g;
    REQUIRE_OK(parse_str(buf, "t", &g));
    CHECK_EQ_INT(g.nfixed, 16);
    CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 120);
    mlsys_remat_graph_free(&g);
  }
}

TEST(json_structural_errors) {
  EXPECT_ERR(JH "  {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 8, \"deps\": [\"b\"]},\n"
                "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8, \"deps\": [\"a\"]}]}",
             MLSYS_ERR_CYCLE, "t: ", "cycle: a -> b -> a");
  EXPECT_ERR(JH "  {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 8, \"deps\": [\"a\"]}]}", MLSYS_ERR_CYCLE, "t: ",
             "cycle: a -> a");
  EXPECT_ERR(JH "  {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 8, \"deps\": [0]}]}", MLSYS_ERR_CYCLE, "t: ",
             "cycle: a -> a");
  EXPECT_ERR(JH "  {\"id\": 0, \"name\": \"a\", \"cost\": 1, \"mem\": 8, \"deps\": [1]},\n"
                "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8}]}",
             MLSYS_ERR_ARG, "t: ", "node 0 'a' depends on node 1 'b', which comes later");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8, \"deps\": [\"a\", 0]}]}", MLSYS_ERR_ARG,
             "t: ", "duplicate edge a -> b");
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"a\", \"cost\": 1, \"mem\": 8}]}", MLSYS_ERR_ARG, "t: ",
             "nodes 0 and 1 are both named 'a'; names must be unique");
  /* a three-node cycle through names, reported by name */
  EXPECT_ERR(JH "  {\"id\": 0, \"name\": \"p\", \"cost\": 1, \"mem\": 8, \"deps\": [\"r\"]},\n"
                "  {\"id\": 1, \"name\": \"q\", \"cost\": 1, \"mem\": 8, \"deps\": [\"p\"]},\n"
                "  {\"id\": 2, \"name\": \"r\", \"cost\": 1, \"mem\": 8, \"deps\": [\"q\"]}]}",
             MLSYS_ERR_CYCLE, "t: ", "cycle: p -> q -> r -> p");
}

/* A fwd_of name that matches no node: the message should say where (like every other parse error). */
TEST(json_fwd_of_unknown_name_has_position) {
  EXPECT_ERR(JH JA "  {\"id\": 1, \"name\": \"b\", \"cost\": 1, \"mem\": 8, \"fwd_of\": \"zz\"}]}", MLSYS_ERR_PARSE,
             "t:4:57: ", "fwd_of names unknown node 'zz'");
}

/* Nodes without a name are called "n<id>" when others have names; that invented name must not clash with a name
   the file gave to another node (the file is valid: its own names are unique). */
TEST(json_invented_names_do_not_clash) {
  mlsys_remat_graph g;
  mlsys_status st = parse_str(JH "  {\"id\": 0, \"name\": \"n1\", \"cost\": 1, \"mem\": 8},\n"
                                 "  {\"id\": 1, \"cost\": 1, \"mem\": 8, \"deps\": [0]}]}",
                              "t", &g);
  CHECK_MSG(st == MLSYS_OK, "%.400s", mlsys_last_error());
  if (st == MLSYS_OK) CHECK_STR(g.dag.name[0], "n1");
  mlsys_remat_graph_free(&g);
}

TEST(json_too_big) {
  size_t n = MLSYS_REMAT_MAX_NODES + 1, o = 0, i;
  char *buf = (char *)malloc(n * 3 + 64);
  REQUIRE(buf);
  o += (size_t)sprintf(buf, "{\"nodes\": [");
  for (i = 0; i < n; i++) { memcpy(buf + o, i ? ",{}" : "{}", i ? 3 : 2); o += i ? 3 : 2; }
  o += (size_t)sprintf(buf + o, "]}");
  {
    const char *w = expect_err_(buf, o, MLSYS_ERR_TOO_BIG, "t:1:11: ", "16385 nodes; the limit is 16384");
    CHECK_MSG(w == NULL, "%s", w ? w : "");
  }
  free(buf);
}

/* A text graph whose costs are below DBL_MIN (subnormal) is valid JSON and a valid graph; the text form must read
   what the text writer writes for it. */
TEST(text_reads_tiny_costs) {
  mlsys_remat_graph g, h;
  mlsys_status st;
  REQUIRE_OK(parse_str("{\"nodes\": [{\"id\": 0, \"name\": \"a\", \"cost\": 1e-310, \"mem\": 1}]}", "j", &g));
  CHECK(g.dag.cost[0] == 1e-310);
  st = roundtrip(&g, 0, &h);
  CHECK_MSG(st == MLSYS_OK, "%.400s", mlsys_last_error());
  if (st == MLSYS_OK) CHECK_GRAPH_EQ(&g, &h, 0);
  mlsys_remat_graph_free(&h);
  mlsys_remat_graph_free(&g);
}

/* Names the text form cannot hold as one token (spaces, '#', a lone ':', empty) must not be written as if it could:
   the writer should refuse (an error) rather than write a file that does not read back, or reads back as a
   different graph. */
TEST(text_writer_rejects_unrepresentable_names) {
  static const char *bad[] = {"conv 1", "a#b", "", ":", "x\ny"};
  int i;
  for (i = 0; i < 5; i++) {
    mlsys_remat_node nd[1];
    mlsys_remat_graph g, h;
    mlsys_status st;
    char *text;
    memset(nd, 0, sizeof nd);
    nd[0].name = bad[i];
    nd[0].cost = 1;
    nd[0].mem = 1;
    REQUIRE_OK(mlsys_remat_graph_create(1, nd, &g));
    text = graph_to_string(&g, 0, &st);
    if (st == MLSYS_OK) {
      st = parse_str(text, "rt.txt", &h);
      CHECK_MSG(st == MLSYS_OK, "name \"%s\": the writer accepted it but its output does not parse: %.300s", bad[i],
                mlsys_last_error());
      if (st == MLSYS_OK) {
        const char *d = graph_diff(&g, &h, 0);
        CHECK_MSG(d == NULL, "name \"%s\": the text form read back a different graph (%s)", bad[i], d);
      }
      mlsys_remat_graph_free(&h);
    }
    free(text);
    mlsys_remat_graph_free(&g);
  }
  /* the graph name too: "name VGG 16" reads back as "VGG" */
  {
    mlsys_remat_graph g, h;
    REQUIRE_OK(mlsys_remat_graph_chain(1, &g));
    mlsys_free(g.name);
    g.name = mlsys_strdup("VGG 16");
    if (roundtrip(&g, 0, &h) == MLSYS_OK) CHECK_STR(h.name, "VGG 16");
    mlsys_remat_graph_free(&h);
    mlsys_remat_graph_free(&g);
  }
}

/* Fixed-memory category names are 1-63 bytes without spaces, '#' or '=' so that both forms can carry them: longer
   or odd names are refused where they enter (set_fixed, either parser), and the longest allowed one round-trips
   through the text form (keys over 127 bytes once broke the text reader). */
TEST(text_reads_long_fixed_names) {
  mlsys_remat_graph g, h;
  char key[201];
  memset(key, 'k', 200);
  key[200] = 0;
  REQUIRE_OK(mlsys_remat_graph_chain(1, &g));
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, key, 42), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "must be 1-63 bytes");
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, "two words", 42), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_remat_graph_set_fixed(&g, "a=b", 42), MLSYS_ERR_ARG);
  key[63] = 0;
  REQUIRE_OK(mlsys_remat_graph_set_fixed(&g, key, 42));
  REQUIRE_OK(roundtrip(&g, 1, &h));
  CHECK_GRAPH_EQ(&g, &h, CMP_ALL);
  mlsys_remat_graph_free(&h);
  REQUIRE_OK(roundtrip(&g, 0, &h));
  CHECK_GRAPH_EQ(&g, &h, 0);
  mlsys_remat_graph_free(&h);
  mlsys_remat_graph_free(&g);
  /* a JSON file with a 64-byte category is a parse error at the key's value */
  key[63] = 'k';
  key[64] = 0;
  {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"nodes\": [], \"fixed\": {\"%s\": 1}}", key);
    CHECK_EQ_INT(parse_str(doc, "t", &g), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "t:1:");
    CHECK_CONTAINS(mlsys_last_error(), "must be 1-63 bytes");
    mlsys_remat_graph_free(&g);
  }
}

TEST(write_to_failing_stream) {
  mlsys_remat_graph g;
  int json;
  REQUIRE_OK(mlsys_remat_graph_chain(4, &g));
  for (json = 0; json <= 1; json++) {
    FILE *f = fopen("/dev/full", "w");
    if (!f) SKIP("no /dev/full");
    setvbuf(f, NULL, _IONBF, 0);
    CHECK_EQ_INT(mlsys_remat_graph_write(&g, f, json), MLSYS_ERR_IO);
    fclose(f);
  }
  mlsys_remat_graph_free(&g);
}

/* Last in the file: under SAN=1 it currently aborts the binary (see below). */
/* Every graph the parsers accept must be solvable by checkpoint-all at an unlimited budget, also one without
   forward nodes or a loss (the schedule is trivial). Under SAN=1 this caught a heap-buffer-overflow read in
   mlsys__remat_checkpoints_s (pos_id[npos - 1] with npos = 0). */
TEST(checkpoint_all_without_forward_or_loss) {
  static const char *graphs[] = {"remat-graph 1\nnodes 1\n0 B 3 0 - a :\n",
                                 "remat-graph 1\nnodes 2\n0 O 1 8 - a :\n1 B 2 8 - b : a\n"};
  int i;
  for (i = 0; i < 2; i++) {
    mlsys_remat_graph g;
    mlsys_remat_opts o;
    mlsys_remat_schedule s;
    REQUIRE_OK(parse_str(graphs[i], "t", &g));
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    CHECK_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &s));
    CHECK(s.cost == 3);
    mlsys_remat_schedule_free(&s);
    mlsys_remat_graph_free(&g);
  }
}

TEST_MAIN()
