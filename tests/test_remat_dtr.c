/* Tests for section 8 of mlsys_remat.h: importing DTR operator traces (mlsys_remat_import_dtr).

   The real traces are the simrd logs of uwsampl/dtr-prototype (Kirisame et al., "Dynamic Tensor
   Rematerialization", ICLR 2021), committed as tests/data/dtr/logs.zip (its README names source and licence;
   $MLSYS_DTR_LOGS overrides the path); they are unpacked with `unzip -p` at test time. Each import
   is held against an independent scan of the same trace written here (counts, Σ MEMORY, Σ TIME, the program's
   own memory replay), against the checkpoint-all schedule of the simulator, and, for a synthetic trace of the
   canonical chain, against mlsys_remat_graph_chain. Run from the repository root. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"
#include "tests/dtr_logs.h"

/* The limit of solves whose outcome is checked: a safety net that never binds (the 8-layer chain is proven in
   well under a second), so no verdict depends on the machine's load. */
#define NEVER_BINDS 600.0

#include <limits.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the real traces ---- */

static const char *const dtr_logs[] = {
    "unet-6-8000000000.0-2020-10-1-10-57-18-default.log",            /* smallest: 360 nodes */
    "resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log",
    "inceptionv4-64-10000000000.0-2020-10-1-10-55-0-default.log",
    "transformer-10-8000000000.0-2020-10-1-10-56-5-default.log",
    "tv_densenet121-84-10000000000.0-2020-10-1-13-41-18-default.log",
    "treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log",
    "lstm-128-11000000000.0-2020-10-1-16-38-52-default.log",
    "unroll_gan-512-10000000000.0-2020-10-1-18-43-42-default.log",   /* no BACKWARD marker */
};
#define NLOGS ((int)(sizeof dtr_logs / sizeof dtr_logs[0]))


/* The traces are part of the repository: a missing file is a failure, not a skip. Only a missing unzip program
   (a tool, like the cbc program elsewhere) skips. */
#define NEED_LOGS()                                                                                     \
  do {                                                                                                  \
    CHECK_MSG(access(dtr_zip_path(), R_OK) == 0, "the DTR traces are not at %s (run from the repository root)",  \
              dtr_zip_path());                                                                              \
    REQUIRE(access(dtr_zip_path(), R_OK) == 0);                                                             \
    if (system("unzip -v >/dev/null 2>&1") != 0) SKIP_DEP("unzip not installed (scripts/install-deps.sh)");    \
  } while (0)

/* ---- an independent scan of a trace: the numbers the import must reproduce ----
   Written against DTR's format directly: names are "x<digits>" in these logs, so arrays indexed by the number
   stand in for a name table. Memory follows the program: a storage lives while some name refers to it (or to a
   view of it); MUTATE gives the mutated name a fresh storage of the same size (DTR's simulator does the same). */
typedef struct {
  int n, n_fwd, calls, mutates, views;
  double time;
  uint64_t mem, fixed, peak, peak_act;
  int loss_origin;        /* number of the CALL result the first op after BACKWARD reads first; -1 */
  int has_marker;
} scan_t;

typedef struct { uint64_t bytes; long refs; int is_const; } scan_storage;
typedef struct { scan_storage *s; int n, cap; uint64_t live, live_act; } scan_mem;

static int scan_new(scan_mem *m, uint64_t bytes, int is_const) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 4096;
    m->s = (scan_storage *)realloc(m->s, (size_t)m->cap * sizeof *m->s);
  }
  m->s[m->n].bytes = bytes;
  m->s[m->n].refs = 0;
  m->s[m->n].is_const = is_const;
  m->live += bytes;
  if (!is_const) m->live_act += bytes;
  return m->n++;
}
static void scan_unref(scan_mem *m, int i) {
  if (--m->s[i].refs == 0) {
    m->live -= m->s[i].bytes;
    if (!m->s[i].is_const) m->live_act -= m->s[i].bytes;
  }
}
static void scan_peak(const scan_mem *m, scan_t *sc) {
  if (m->live > sc->peak) sc->peak = m->live;
  if (m->live_act > sc->peak_act) sc->peak_act = m->live_act;
}

static int name_no(const char *s) {
  long v;
  char *e;
  if (!s || s[0] != 'x') return -1;
  v = strtol(s + 1, &e, 10);
  return *e || v < 0 || v > 10000000 ? -1 : (int)v;
}

static int scan_trace(const char *text, size_t len, scan_t *sc) {
  const char *p = text, *end = text + len;
  mlsys_json_doc *lines = NULL;
  int nl = 0, cl = 0, i, j, maxno = 0, bwd = 0, loss_pending = 0, ok = 1;
  int *stor, *origin;
  unsigned char *defined;
  scan_mem M;
  memset(&M, 0, sizeof M);
  memset(sc, 0, sizeof *sc);
  sc->loss_origin = -1;
  /* all lines first (a CALL's MEMORY/ALIAS lines are read ahead) */
  while (p < end) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    if (e > p) {
      if (nl == cl) { cl = cl ? 2 * cl : 4096; lines = (mlsys_json_doc *)realloc(lines, (size_t)cl * sizeof *lines); }
      if (mlsys_json_parse(p, (size_t)(e - p), "scan", &lines[nl]) != MLSYS_OK) return 0;
      nl++;
    }
    p = e + 1;
  }
  for (i = 0; i < nl; i++) {   /* the largest name number */
    static const char *keys[] = {"NAME", "DST", "SRC"};
    const mlsys_json *o = lines[i].root, *r = mlsys_json_get(o, "RESULT"), *a = mlsys_json_get(o, "ARGS");
    size_t k;
    for (k = 0; k < 3; k++) {
      const mlsys_json *v = mlsys_json_get(o, keys[k]);
      if (v && v->type == MLSYS_JSON_STRING && name_no(v->str) > maxno) maxno = name_no(v->str);
    }
    for (j = 0; r && j < r->count; j++) if (name_no(r->items[j].str) > maxno) maxno = name_no(r->items[j].str);
    for (j = 0; a && j < a->count; j++) if (name_no(a->items[j].str) > maxno) maxno = name_no(a->items[j].str);
  }
  stor = (int *)calloc((size_t)maxno + 1, sizeof(int));
  origin = (int *)calloc((size_t)maxno + 1, sizeof(int));
  defined = (unsigned char *)calloc((size_t)maxno + 1, 1);
  for (i = 0; i < nl; i++)
    if (strstr(mlsys_json_get(lines[i].root, "INSTRUCTION")->str, "ANNOTATE") &&
        !strcmp(mlsys_json_get(lines[i].root, "ANNOTATION")->str, "BACKWARD"))
      sc->has_marker = 1;
  for (i = 0; i < nl && ok; i++) {
    const mlsys_json *o = lines[i].root;
    const char *in = mlsys_json_get(o, "INSTRUCTION")->str;
    if (!strcmp(in, "ANNOTATE")) {
      const char *an = mlsys_json_get(o, "ANNOTATION")->str;
      if (!strcmp(an, "START")) ok = i == 0;   /* these logs start with it: nothing comes before */
      if (!strcmp(an, "BACKWARD")) { bwd = 1; loss_pending = 1; }
    } else if (!strcmp(in, "CONSTANT")) {
      int x = name_no(mlsys_json_get(o, "NAME")->str);
      uint64_t b = strtoull(mlsys_json_get(lines[i + 1].root, "MEMORY")->str, NULL, 10);
      stor[x] = scan_new(&M, b, 1);
      M.s[stor[x]].refs = 1; defined[x] = 1; origin[x] = -1;
      sc->fixed += b;
      scan_peak(&M, sc);
      i++;
    } else if (!strcmp(in, "COPY")) {
      int d = name_no(mlsys_json_get(o, "DST")->str), s = name_no(mlsys_json_get(o, "SRC")->str);
      stor[d] = stor[s]; origin[d] = origin[s]; defined[d] = 1; M.s[stor[s]].refs++;
    } else if (!strcmp(in, "COPY_FROM")) {
      int d = name_no(mlsys_json_get(o, "DST")->str), s = name_no(mlsys_json_get(o, "SRC")->str), old = stor[d];
      stor[d] = stor[s]; origin[d] = origin[s]; M.s[stor[s]].refs++;
      scan_unref(&M, old);
    } else if (!strcmp(in, "RELEASE")) {
      int x = name_no(mlsys_json_get(o, "NAME")->str);
      if (x >= 0 && defined[x]) scan_unref(&M, stor[x]);
    } else if (!strcmp(in, "CALL") || !strcmp(in, "MUTATE")) {
      const mlsys_json *args = mlsys_json_get(o, "ARGS");
      const char *op = mlsys_json_get(o, "NAME")->str;
      int k;
      if (!sc->has_marker && strstr(op, "backward")) bwd = 1;
      if (loss_pending) { loss_pending = 0; if (args->count) sc->loss_origin = origin[name_no(args->items[0].str)]; }
      sc->time += strtod(mlsys_json_get(o, "TIME")->str, NULL);
      if (!strcmp(in, "CALL")) {
        const mlsys_json *res = mlsys_json_get(o, "RESULT");
        k = res->count;
        for (j = 0; j < k; j++) {
          int x = name_no(res->items[j].str);
          uint64_t b = strtoull(mlsys_json_get(lines[i + 1 + 2 * j].root, "MEMORY")->str, NULL, 10);
          int al = atoi(mlsys_json_get(lines[i + 2 + 2 * j].root, "ALIAS")->str);
          if (al >= 0) { stor[x] = stor[name_no(args->items[al].str)]; sc->views++; }
          else { stor[x] = scan_new(&M, b, 0); sc->mem += b; }
          M.s[stor[x]].refs++; defined[x] = 1; origin[x] = x;
        }
        scan_peak(&M, sc);
        sc->calls++;
        i += 2 * k;
      } else {
        const mlsys_json *mut = mlsys_json_get(o, "MUTATE");
        int olds[16];
        k = mut->count;
        ok = k <= 16;
        for (j = 0; j < k && ok; j++) {
          int x = name_no(args->items[mut->items[j].i64].str);
          uint64_t b = M.s[stor[x]].bytes;
          olds[j] = stor[x];
          stor[x] = scan_new(&M, b, 0);
          M.s[stor[x]].refs = 1; origin[x] = -2;   /* a new version: no CALL result */
          sc->mem += b;
        }
        scan_peak(&M, sc);
        for (j = 0; j < k && ok; j++) scan_unref(&M, olds[j]);
        sc->mutates++;
      }
      sc->n += k;
      if (!bwd) sc->n_fwd += k;
    }
  }
  for (i = 0; i < nl; i++) mlsys_json_doc_free(&lines[i]);
  free(lines); free(stor); free(origin); free(defined); free(M.s);
  return ok;
}

/* ---- helpers ---- */

static mlsys_status import_text(const char *text, const char *src, const mlsys_remat_dtr_opts *o,
                                mlsys_remat_graph *g, mlsys_remat_dtr_info *in) {
  return mlsys_remat_import_dtr(text, strlen(text), src, o, g, in);
}

static mlsys_status ckpt_all(const mlsys_remat_graph *g, mlsys_remat_schedule *s) {
  mlsys_remat_opts o;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  return mlsys_remat_solve(g, UINT64_MAX, &o, s);
}

static int node_id(const mlsys_remat_graph *g, const char *name) { return mlsys_dag_find(&g->dag, name); }

static int has_dep(const mlsys_remat_graph *g, int v, int u) {
  int j;
  for (j = g->dag.in_off[v]; j < g->dag.in_off[v + 1]; j++) if (g->dag.in[j] == u) return 1;
  return 0;
}

/* ---- the real traces against the independent scan ---- */

/* Every trace: node count = CALL results + MUTATE outputs, Σ mem = Σ MEMORY of the non-view results (+ the
   mutated storages), Σ cost = Σ TIME, fixed = Σ CONSTANT MEMORY, the forward part = the nodes before the marker,
   the loss = what ones_like reads, and the replay of the program's own allocations and RELEASEs agrees. */
TEST(dtr_traces_match_an_independent_scan) {
  int t;
  NEED_LOGS();
  for (t = 0; t < NLOGS; t++) {
    char *buf;
    size_t len;
    scan_t sc;
    mlsys_remat_graph g;
    mlsys_remat_dtr_info in;
    int v, nf = 0, nl = 0, nb = 0;
    double cost = 0;
    uint64_t mem = 0;
    REQUIRE(dtr_log_extract(dtr_logs[t], &buf, &len) == 0);
    REQUIRE(scan_trace(buf, len, &sc));
    REQUIRE_OK(mlsys_remat_import_dtr(buf, len, dtr_logs[t], NULL, &g, &in));
    CHECK_EQ_INT(g.dag.n, sc.n);
    CHECK_EQ_INT(in.nodes, sc.n);
    CHECK_EQ_INT(in.calls, sc.calls);
    CHECK_EQ_INT(in.mutates, sc.mutates);
    CHECK_EQ_INT(in.views, sc.views);
    for (v = 0; v < g.dag.n; v++) {
      cost += g.dag.cost[v];
      mem += g.dag.size[v];
      if (g.kind[v] == MLSYS_REMAT_F) nf++;
      else if (g.kind[v] == MLSYS_REMAT_L) nl++;
      else if (g.kind[v] == MLSYS_REMAT_B) nb++;
      if (g.flags[v] & MLSYS_REMAT_ALIAS) CHECK(g.dag.size[v] == 0 && g.dag.in_off[v + 1] > g.dag.in_off[v]);
    }
    CHECK_EQ_INT(mem, sc.mem);
    CHECK_NEAR(cost, sc.time, 0);
    CHECK_NEAR(in.total_time, sc.time, 0);
    CHECK_EQ_INT(mlsys_remat_fixed_total(&g), sc.fixed);
    CHECK_EQ_INT(nf + nl, sc.n_fwd);
    CHECK_EQ_INT(nb, sc.n - sc.n_fwd);
    CHECK_EQ_INT(nf + nl + nb, g.dag.n);
    if (sc.has_marker) {   /* the loss is what autograd seeds: a forward CALL result */
      char want[32];
      REQUIRE(sc.loss_origin >= 0 && nl == 1 && g.loss >= 0);
      snprintf(want, sizeof want, "x%d", sc.loss_origin);
      CHECK_STR(g.dag.name[g.loss], want);
    } else {
      CHECK(nl == 0 && g.loss == -1);
    }
    CHECK_EQ_INT(in.trace_peak, sc.peak);
    CHECK_EQ_INT(in.trace_peak_activations, sc.peak_act);
    printf("    %-16.16s n %5d  edges %5d  F %4d L %d B %4d  time %8.2f ms  nodes %7.1f MiB  fixed %6.1f MiB  "
           "trace peak %7.1f MiB (act %7.1f)\n", dtr_logs[t], g.dag.n, g.dag.nedges, nf, nl, nb, cost / 1e6,
           mem / 1048576.0, mlsys_remat_fixed_total(&g) / 1048576.0, sc.peak / 1048576.0, sc.peak_act / 1048576.0);
    mlsys_remat_graph_free(&g);
    free(buf);
  }
}

/* Checkpoint-all on the imported graph is a valid schedule that costs Σ TIME, and its activation peak is at most
   the trace's own: it frees each value right after its last reader, while the program can only have freed a
   value after its last use (a name read later is still held); views, the values that share a storage in the
   trace, weigh nothing in the graph. The margin is what the program holds past the last use. */
TEST(dtr_checkpoint_all_is_within_the_traces_own_peak) {
  int t;
  NEED_LOGS();
  for (t = 0; t < NLOGS; t++) {
    char *buf;
    size_t len;
    scan_t sc;
    mlsys_remat_graph g;
    mlsys_remat_schedule s;
    mlsys_remat_sim rep;
    REQUIRE(dtr_log_extract(dtr_logs[t], &buf, &len) == 0);
    REQUIRE(scan_trace(buf, len, &sc));
    REQUIRE_OK(mlsys_remat_import_dtr(buf, len, dtr_logs[t], NULL, &g, NULL));
    REQUIRE_OK(ckpt_all(&g, &s));
    CHECK_OK(mlsys_remat_simulate(&g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
    CHECK(rep.valid);
    CHECK_NEAR(s.cost, sc.time, 0);
    CHECK_EQ_INT(rep.peak, s.peak);
    CHECK_MSG(s.peak <= sc.peak_act, "%s: checkpoint-all %llu > trace %llu", dtr_logs[t],
              (unsigned long long)s.peak, (unsigned long long)sc.peak_act);
    CHECK(s.peak >= mlsys_remat_single_op_bound(&g));
    printf("    %-16.16s checkpoint-all peak %8.1f MiB, the trace's own %8.1f MiB (%.3f)\n", dtr_logs[t],
           s.peak / 1048576.0, sc.peak_act / 1048576.0, (double)s.peak / (double)sc.peak_act);
    mlsys_remat_schedule_free(&s);
    mlsys_remat_graph_free(&g);
    free(buf);
  }
}

/* With keep_outputs the sink holds what the program still holds at the end: one more node, the checkpoint-all
   peak can only grow, and it stays within the trace's own peak (those values are alive at the end there too). */
TEST(dtr_keep_outputs_adds_a_sink) {
  char *buf;
  size_t len;
  scan_t sc;
  mlsys_remat_graph g, h;
  mlsys_remat_dtr_info in, ih;
  mlsys_remat_dtr_opts o;
  mlsys_remat_schedule s1, s2;
  int sink;
  NEED_LOGS();
  REQUIRE(dtr_log_extract(dtr_logs[1], &buf, &len) == 0);
  REQUIRE(scan_trace(buf, len, &sc));
  memset(&o, 0, sizeof o);
  REQUIRE_OK(mlsys_remat_import_dtr(buf, len, "resnet32", NULL, &g, &in));
  o.keep_outputs = 1;
  REQUIRE_OK(mlsys_remat_import_dtr(buf, len, "resnet32", &o, &h, &ih));
  sink = h.dag.n - 1;
  CHECK_EQ_INT(h.dag.n, g.dag.n + 1);
  CHECK_STR(h.dag.name[sink], "(outputs)");
  CHECK_EQ_INT(h.dag.in_off[sink + 1] - h.dag.in_off[sink], in.outputs);
  CHECK(in.outputs > 0 && in.outputs == ih.outputs && in.unused == ih.unused);
  CHECK(h.dag.cost[sink] == 0 && h.dag.size[sink] == 0);
  REQUIRE_OK(ckpt_all(&g, &s1));
  REQUIRE_OK(ckpt_all(&h, &s2));
  CHECK(s2.peak >= s1.peak);
  CHECK(s2.peak <= sc.peak_act);
  mlsys_remat_schedule_free(&s1);
  mlsys_remat_schedule_free(&s2);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
  free(buf);
}

/* On the smallest trace a baseline finds a valid schedule at 80% of the checkpoint-all activation peak, and its
   execution plan replays (every input live, the last node computed). */
TEST(dtr_baseline_fits_80_percent_of_checkpoint_all) {
  char *buf;
  size_t len;
  mlsys_remat_graph g;
  mlsys_remat_schedule ck, s;
  mlsys_remat_opts o;
  mlsys_remat_sim rep;
  mlsys_remat_plan p;
  uint64_t budget, fixed, ppeak;
  NEED_LOGS();
  REQUIRE(dtr_log_extract(dtr_logs[0], &buf, &len) == 0);
  REQUIRE_OK(mlsys_remat_import_dtr(buf, len, dtr_logs[0], NULL, &g, NULL));
  REQUIRE_OK(ckpt_all(&g, &ck));
  fixed = mlsys_remat_fixed_total(&g);
  budget = fixed + ck.peak / 10 * 8;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_LIN_GREEDY;
  REQUIRE_OK(mlsys_remat_solve(&g, budget, &o, &s));
  CHECK(s.fits && s.peak_total <= budget);
  CHECK_OK(mlsys_remat_simulate(&g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
  CHECK(rep.valid && rep.peak + fixed <= budget);
  CHECK(s.cost >= ck.cost);
  REQUIRE_OK(mlsys_remat_plan_build(&g, &s, 0, &p));
  CHECK_OK(mlsys_remat_plan_validate(&g, &p, &ppeak));
  CHECK(ppeak + fixed <= budget);
  printf("    unet: %s at 80%% of checkpoint-all: overhead %.3fx\n", s.method, s.cost / ck.cost);
  mlsys_remat_plan_free(&p);
  mlsys_remat_schedule_free(&s);
  mlsys_remat_schedule_free(&ck);
  mlsys_remat_graph_free(&g);
  free(buf);
}

/* ---- a synthetic trace of the canonical chain: its import is mlsys_remat_graph_chain ---- */

static char *chain_trace(int L) {
  size_t cap = 4096 + (size_t)L * 1024, n = 0;
  char *t = (char *)malloc(cap);
  int v;
#define EMIT(...) (n += (size_t)snprintf(t + n, cap - n, __VA_ARGS__))
  EMIT("{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n");
  for (v = 0; v <= 2 * L; v++) {
    if (v == L + 1) EMIT("{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"BACKWARD\"}\n");
    if (v == 0) EMIT("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[],\"RESULT\":[\"x0\"],\"TIME\":\"1\"}\n");
    else if (v <= L)
      EMIT("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"%s\",\"ARGS\":[\"x%d\"],\"RESULT\":[\"x%d\"],\"TIME\":\"1\"}\n",
           v == L ? "loss" : "f", v - 1, v);
    else   /* the incoming gradient first (ones_like reads the loss first), then the forward value */
      EMIT("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f_backward\",\"ARGS\":[\"x%d\",\"x%d\"],\"RESULT\":[\"x%d\"],"
           "\"TIME\":\"1\"}\n", v - 1, 2 * L - v, v);
    EMIT("{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x%d\",\"MEMORY\":\"1\"}\n", v);
    EMIT("{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x%d\",\"ALIAS\":\"-1\"}\n", v);
  }
#undef EMIT
  return t;
}

/* Same nodes, kinds, costs, sizes and dependency sets as the built-in chain; so the MILP and the LP rounding run on
   the import and find the chain's optimum. */
TEST(dtr_chain_trace_imports_as_the_chain_graph) {
  const int L = 8;
  char *t = chain_trace(L);
  mlsys_remat_graph g, c;
  mlsys_remat_schedule sg, sc, lp;
  mlsys_remat_opts o;
  uint64_t budget = 6;
  int v, j;
  REQUIRE_OK(import_text(t, "chain", NULL, &g, NULL));
  REQUIRE_OK(mlsys_remat_graph_chain(L, &c));
  REQUIRE(g.dag.n == c.dag.n);
  CHECK_EQ_INT(g.loss, L);
  for (v = 0; v < g.dag.n; v++) {
    CHECK_EQ_INT(g.kind[v], c.kind[v]);
    CHECK(g.dag.cost[v] == c.dag.cost[v] && g.dag.size[v] == c.dag.size[v]);
    CHECK_EQ_INT(g.dag.in_off[v + 1] - g.dag.in_off[v], c.dag.in_off[v + 1] - c.dag.in_off[v]);
    for (j = c.dag.in_off[v]; j < c.dag.in_off[v + 1]; j++) CHECK(has_dep(&g, v, c.dag.in[j]));
  }
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_MILP;
  o.time_limit = NEVER_BINDS;
  REQUIRE_OK(mlsys_remat_solve(&g, budget, &o, &sg));
  REQUIRE_OK(mlsys_remat_solve(&c, budget, &o, &sc));
  CHECK(sg.optimal && sc.optimal);
  CHECK_NEAR(sg.cost, sc.cost, 1e-9);
  o.method = MLSYS_REMAT_LP_ROUND;
  REQUIRE_OK(mlsys_remat_solve(&g, budget, &o, &lp));
  CHECK(lp.fits && lp.cost >= sg.cost - 1e-9);
  mlsys_remat_schedule_free(&sg);
  mlsys_remat_schedule_free(&sc);
  mlsys_remat_schedule_free(&lp);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&c);
  free(t);
}

/* ---- the mapping, rule by rule, on a hand-written trace ---- */

static const char *const mapping_trace =
    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"                                            /* 1 before START */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"100\"}\n"
    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"tmp\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"tmp\",\"MEMORY\":\"7\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"tmp\"}\n"                                           /* 5 gone by START */
    "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"40\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"conv\",\"ARGS\":[\"x\",\"w\"],\"RESULT\":[\"a\"],\"TIME\":\"10\"}\n"  /* 9 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"64\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"t\",\"ARGS\":[\"w\"],\"RESULT\":[\"wt\"],\"TIME\":1}\n"   /* 12: view of w */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"wt\",\"MEMORY\":100}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"wt\",\"ALIAS\":0}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"ARGS\":[\"a\"],\"RESULT\":[\"av\"],\"TIME\":\"2\"}\n"  /* 15 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"av\",\"MEMORY\":\"64\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"av\",\"ALIAS\":\"0\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"batch_norm\",\"ARGS\":[\"av\",\"wt\",\"x\"],\"RESULT\":[\"b0\",\"b1\","
    "\"b2\"],\"TIME\":\"30\"}\n"                                                                 /* 18 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b0\",\"MEMORY\":\"64\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b0\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b1\",\"MEMORY\":\"8\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b1\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b2\",\"MEMORY\":\"0\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b2\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"COPY\",\"SRC\":\"b0\",\"DST\":\"b0c\"}\n"                                 /* 25 */
    "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"relu_\",\"ARGS\":[\"b0\"],\"MUTATE\":[0],\"TIME\":\"5\"}\n"   /* 26 */
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"_fused_dropout\",\"ARGS\":[\"b0\"],\"RESULT\":[\"d\",\"m\"],"
    "\"TIME\":\"4\"}\n"                                                                          /* 27 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"64\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"d\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"m\",\"MEMORY\":\"16\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"m\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"sum\",\"ARGS\":[\"d\"],\"RESULT\":[\"loss\"],\"TIME\":\"1\"}\n"  /* 32 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"loss\",\"MEMORY\":\"4\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"loss\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"d\"}\n"                                              /* 35 */
    "\n"
    "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"BACKWARD\"}\n"                                /* 37 */
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"ones_like\",\"ARGS\":[\"loss\"],\"RESULT\":[\"g\"],\"TIME\":\"1\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"g\",\"MEMORY\":\"4\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"g\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"dropout_backward\",\"ARGS\":[\"g\",\"m\"],\"RESULT\":[\"gd\"],"
    "\"TIME\":\"3\"}\n"                                                                          /* 41 */
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"gd\",\"MEMORY\":\"64\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"gd\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"PIN\",\"NAME\":\"gd\"}\n"
    "{\"INSTRUCTION\":\"COPY_FROM\",\"SRC\":\"gd\",\"DST\":\"b0c\"}\n"                            /* 45 */
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"loss\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"never_defined\"}\n";

TEST(dtr_mapping_rules) {
  mlsys_remat_graph g;
  mlsys_remat_dtr_info in;
  int a, wt, av, b0, b1, b2, r, d, m, loss, gg, gd, j;
  double cost = 0;
  uint64_t mem = 0;
  REQUIRE_OK(import_text(mapping_trace, "map.log", NULL, &g, &in));
  REQUIRE(g.dag.n == 12);
  a = node_id(&g, "a"); wt = node_id(&g, "wt"); av = node_id(&g, "av"); b0 = node_id(&g, "b0");
  b1 = node_id(&g, "b1"); b2 = node_id(&g, "b2"); r = node_id(&g, "b0$26"); d = node_id(&g, "d");
  m = node_id(&g, "m"); loss = node_id(&g, "loss"); gg = node_id(&g, "g"); gd = node_id(&g, "gd");
  /* trace order */
  CHECK(a == 0 && wt == 1 && av == 2 && b0 == 3 && b1 == 4 && b2 == 5 && r == 6 && d == 7 && m == 8 && loss == 9 &&
        gg == 10 && gd == 11);
  CHECK_STR(g.name, "map");
  CHECK_STR(g.op[b1], "batch_norm");
  CHECK_STR(g.cost_unit, "ns");
  /* constants are fixed memory; a view of one weighs nothing and depends on nothing */
  CHECK_EQ_INT(g.dag.in_off[a + 1] - g.dag.in_off[a], 0);
  CHECK(g.dag.size[wt] == 0 && g.dag.in_off[wt + 1] == g.dag.in_off[wt] && !(g.flags[wt] & MLSYS_REMAT_ALIAS));
  /* a view of a node: zero bytes, flagged, its base first */
  CHECK(g.dag.size[av] == 0 && (g.flags[av] & MLSYS_REMAT_ALIAS) && g.dag.in[g.dag.in_off[av]] == a);
  /* a multi-output op: the time once, on the first result; later results need it */
  CHECK(g.dag.cost[b0] == 30 && g.dag.cost[b1] == 0 && g.dag.cost[b2] == 0);
  CHECK(g.dag.size[b0] == 64 && g.dag.size[b1] == 8 && g.dag.size[b2] == 0);
  CHECK_EQ_INT(g.dag.in_off[b0 + 1] - g.dag.in_off[b0], 2);
  CHECK(has_dep(&g, b0, av) && has_dep(&g, b0, wt));
  CHECK(g.dag.in[g.dag.in_off[b1]] == b0 && has_dep(&g, b1, av) && has_dep(&g, b1, wt));
  CHECK_EQ_INT(g.dag.in_off[b1 + 1] - g.dag.in_off[b1], 3);
  /* MUTATE: a new version of the storage's size, flagged inplace, the old version first; the name moves to it */
  CHECK(g.dag.size[r] == 64 && g.dag.cost[r] == 5 && (g.flags[r] & MLSYS_REMAT_INPLACE));
  CHECK_STR(g.op[r], "relu_");
  CHECK(g.dag.in[g.dag.in_off[r]] == b0 && g.dag.in_off[r + 1] - g.dag.in_off[r] == 1);
  CHECK(has_dep(&g, d, r) && !has_dep(&g, d, b0));
  /* random ops are flagged rng (not their backward) */
  CHECK((g.flags[d] & MLSYS_REMAT_RNG) && (g.flags[m] & MLSYS_REMAT_RNG) && !(g.flags[gd] & MLSYS_REMAT_RNG));
  CHECK(g.dag.cost[m] == 0 && g.dag.in[g.dag.in_off[m]] == d);
  /* kinds: F before the marker, B after; the loss is what ones_like reads; PIN → norecompute */
  for (j = 0; j < 9; j++) CHECK_EQ_INT(g.kind[j], MLSYS_REMAT_F);
  CHECK_EQ_INT(g.kind[loss], MLSYS_REMAT_L);
  CHECK_EQ_INT(g.loss, loss);
  CHECK(g.kind[gg] == MLSYS_REMAT_B && g.kind[gd] == MLSYS_REMAT_B);
  CHECK(has_dep(&g, gd, gg) && has_dep(&g, gd, m));
  CHECK(g.flags[gd] & MLSYS_REMAT_NORECOMPUTE);
  /* totals, fixed memory: x after START; w alive at START; tmp was released before it */
  for (j = 0; j < g.dag.n; j++) { cost += g.dag.cost[j]; mem += g.dag.size[j]; }
  CHECK_NEAR(cost, 57, 0);
  CHECK_EQ_INT(mem, 352);
  CHECK_EQ_INT(g.nfixed, 2);
  CHECK(!strcmp(g.fixed_name[0], "constants") && g.fixed_bytes[0] == 40);
  CHECK(!strcmp(g.fixed_name[1], "before_start") && g.fixed_bytes[1] == 100);
  /* info: counted by hand from the trace above */
  CHECK_EQ_INT(in.start_line, 6);
  CHECK_EQ_INT(in.backward_line, 37);
  CHECK_EQ_INT(in.lines, 47);
  CHECK(in.calls == 8 && in.results == 11 && in.views == 2 && in.mutates == 1 && in.constants == 1);
  CHECK(in.copies == 2 && in.releases == 2 && in.releases_ignored == 1 && in.pins == 1);
  CHECK(in.forward == 10 && in.backward == 2 && in.loss == loss);
  CHECK_EQ_INT(in.unused, 3);              /* b1, b2 and gd: nothing reads them */
  CHECK_EQ_INT(in.outputs, 9);             /* all but b0 (its names moved on), d and loss (released) */
  CHECK_EQ_INT(in.output_bytes, 220);      /* a (shared with av), b1, b2, the relu version, m, g, gd */
  CHECK_EQ_INT(in.fixed_bytes, 140);
  CHECK_EQ_INT(in.trace_peak, 428);        /* at dropout_backward: 140 constants + 288 */
  CHECK_EQ_INT(in.trace_peak_activations, 288);
  CHECK_EQ_INT(in.trace_peak_line, 41);
  mlsys_remat_graph_free(&g);
}

/* whole_trace: START is ignored, so every CONSTANT is a constant (w, tmp, x) and nothing is "before_start". */
TEST(dtr_whole_trace_option) {
  mlsys_remat_graph g;
  mlsys_remat_dtr_info in;
  mlsys_remat_dtr_opts o;
  memset(&o, 0, sizeof o);
  o.whole_trace = 1;
  o.name = "mapping";
  REQUIRE_OK(import_text(mapping_trace, "map.log", &o, &g, &in));
  CHECK_EQ_INT(g.dag.n, 12);
  CHECK_EQ_INT(g.nfixed, 1);
  CHECK_EQ_INT(mlsys_remat_fixed_total(&g), 147);
  CHECK_EQ_INT(in.constants, 3);
  CHECK_EQ_INT(in.start_line, 0);
  CHECK_STR(g.name, "mapping");
  mlsys_remat_graph_free(&g);
}

/* Without a BACKWARD marker: backward from the first op named *backward* (DTR's simulator rule), no loss node. */
TEST(dtr_split_by_names_without_marker) {
  static const char *t =
      "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[],\"RESULT\":[\"x1\"],\"TIME\":\"1\"}\n"
      "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x1\",\"MEMORY\":\"4\"}\n"
      "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x1\",\"ALIAS\":\"-1\"}\n"
      "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu_backward\",\"ARGS\":[\"x1\"],\"RESULT\":[\"x2\"],\"TIME\":\"1\"}\n"
      "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x2\",\"MEMORY\":\"4\"}\n"
      "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x2\",\"ALIAS\":\"-1\"}\n"
      "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[\"x2\"],\"RESULT\":[\"x3\"],\"TIME\":\"1\"}\n"
      "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x3\",\"MEMORY\":\"4\"}\n"
      "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x3\",\"ALIAS\":\"-1\"}\n";
  mlsys_remat_graph g;
  mlsys_remat_dtr_info in;
  REQUIRE_OK(import_text(t, "-", NULL, &g, &in));
  CHECK(g.kind[0] == MLSYS_REMAT_F && g.kind[1] == MLSYS_REMAT_B && g.kind[2] == MLSYS_REMAT_B);
  CHECK(g.loss == -1 && in.backward_line == 0 && in.start_line == 0);
  CHECK(g.name == NULL || strcmp(g.name, "-") == 0);
  mlsys_remat_graph_free(&g);
}

/* The imported graph survives both file forms unchanged. */
TEST(dtr_graph_round_trips_through_json_and_text) {
  mlsys_remat_graph g, h;
  int json, v, j;
  REQUIRE_OK(import_text(mapping_trace, "map.log", NULL, &g, NULL));
  for (json = 0; json < 2; json++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    REQUIRE_OK(mlsys_remat_graph_write(&g, f, json));
    fclose(f);
    REQUIRE_OK(mlsys_remat_graph_parse(buf, len, "rt", &h));
    REQUIRE(h.dag.n == g.dag.n && h.dag.nedges == g.dag.nedges && h.loss == g.loss);
    for (v = 0; v < g.dag.n; v++) {
      CHECK(h.kind[v] == g.kind[v] && h.flags[v] == g.flags[v] && h.dag.cost[v] == g.dag.cost[v] &&
            h.dag.size[v] == g.dag.size[v]);
      CHECK_STR(h.dag.name[v], g.dag.name[v]);
      for (j = g.dag.in_off[v]; j < g.dag.in_off[v + 1]; j++) CHECK_EQ_INT(h.dag.in[j], g.dag.in[j]);
    }
    CHECK_EQ_INT(mlsys_remat_fixed_total(&h), mlsys_remat_fixed_total(&g));
    mlsys_remat_graph_free(&h);
    free(buf);
  }
  mlsys_remat_graph_free(&g);
}

/* ---- malformed input: the right status and a message naming the line ---- */

static void expect_error(const char *text, size_t len, mlsys_status want, const char *msg_part) {
  mlsys_remat_graph g;
  mlsys_remat_dtr_info in;
  mlsys_status st = mlsys_remat_import_dtr(text, len, "bad.log", NULL, &g, &in);
  CHECK_MSG(st == want, "status %d (%s), wanted %d for [%.60s]", st, mlsys_last_error(), want, text);
  CHECK_CONTAINS(mlsys_last_error(), msg_part);
  CHECK(g.dag.n == 0);
  if (st == MLSYS_OK) mlsys_remat_graph_free(&g);
}
#define BAD(text, want, part) expect_error((text), strlen(text), (want), (part))

#define L_CALL(args, res, extra) \
  "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"op\",\"ARGS\":[" args "],\"RESULT\":[" res "]" extra "}\n"
#define L_MEM(n, b) "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"" n "\",\"MEMORY\":\"" b "\"}\n"
#define L_ALIAS(n, a) "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"" n "\",\"ALIAS\":\"" a "\"}\n"
#define L_OK(n) L_CALL("", "\"" n "\"", ",\"TIME\":\"1\"") L_MEM(n, "4") L_ALIAS(n, "-1")

TEST(dtr_malformed_inputs) {
  /* truncation: mid-CALL (its ALIAS line missing), and in the middle of a line */
  BAD(L_OK("a") L_CALL("\"a\"", "\"b\",\"c\"", ",\"TIME\":\"1\"") L_MEM("b", "4") L_ALIAS("b", "-1") L_MEM("c", "4"),
      MLSYS_ERR_PARSE, "bad.log:4: the trace ends before the ALIAS line of 'c'");
  BAD(L_OK("a") "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"op\",\"ARG", MLSYS_ERR_PARSE, "bad.log:4:");
  /* garbage */
  BAD("\x01\x02 not json {{\n", MLSYS_ERR_PARSE, "bad.log:1:");
  BAD("[1, 2]\n", MLSYS_ERR_PARSE, "bad.log:1: expected a JSON object, got array");
  BAD("{\"NAME\":\"a\"}\n", MLSYS_ERR_PARSE, "bad.log:1: the line has no 'INSTRUCTION'");
  BAD("{\"INSTRUCTION\":\"FROB\"}\n", MLSYS_ERR_PARSE, "bad.log:1: unknown instruction 'FROB'");
  /* names: unknown, used by its own op (a cycle), defined twice, used after RELEASE, released twice */
  BAD(L_CALL("\"ghost\"", "\"a\"", ",\"TIME\":\"1\""), MLSYS_ERR_PARSE,
      "bad.log:1: CALL uses 'ghost', which is not defined before this line");
  BAD(L_CALL("\"a\"", "\"a\"", ",\"TIME\":\"1\"") L_MEM("a", "4") L_ALIAS("a", "-1"), MLSYS_ERR_PARSE,
      "uses 'a', which is not defined before this line");
  BAD(L_OK("a") L_OK("a"), MLSYS_ERR_PARSE, "bad.log:4: 'a' is defined a second time (first on line 1)");
  BAD(L_OK("a") "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n" L_CALL("\"a\"", "\"b\"", ",\"TIME\":\"1\""),
      MLSYS_ERR_PARSE, "bad.log:5: CALL uses 'a' after its RELEASE on line 4");
  BAD(L_OK("a") "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n",
      MLSYS_ERR_PARSE, "bad.log:5: RELEASE of 'a', already released on line 4");
  BAD("{\"INSTRUCTION\":\"COPY\",\"SRC\":\"nope\",\"DST\":\"b\"}\n", MLSYS_ERR_PARSE, "COPY uses 'nope'");
  /* missing or malformed fields */
  BAD(L_CALL("", "\"a\"", ""), MLSYS_ERR_PARSE, "bad.log:1: CALL without 'TIME'");
  BAD("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"op\",\"ARGS\":[],\"TIME\":\"1\"}\n", MLSYS_ERR_PARSE,
      "CALL without 'RESULT'");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"fast\""), MLSYS_ERR_PARSE, "'TIME' must be a number");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"-3\""), MLSYS_ERR_PARSE, "'TIME' must be a number");
  BAD(L_CALL("", "7", ",\"TIME\":\"1\""), MLSYS_ERR_PARSE, "'RESULT' must hold strings, got number");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"1\"") L_MEM("a", "12x"), MLSYS_ERR_PARSE,
      "bad.log:2: MEMORY: 'MEMORY' must be an integer");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"1\"") L_MEM("a", "-5"), MLSYS_ERR_PARSE, "outside [0, ");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"1\"") L_MEM("a", "4") L_ALIAS("a", "0"), MLSYS_ERR_PARSE,
      "bad.log:3: ALIAS: 'ALIAS' is 0, outside [-1, -1]");
  /* DTR's order: MEMORY then ALIAS for each result, right after the CALL */
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"1\"") L_MEM("b", "4"), MLSYS_ERR_PARSE,
      "bad.log:2: expected the MEMORY line of 'a' (line 1), got one for 'b'");
  BAD(L_CALL("", "\"a\"", ",\"TIME\":\"1\"") L_ALIAS("a", "-1"), MLSYS_ERR_PARSE,
      "bad.log:2: expected the MEMORY line of 'a' (a result of the CALL on line 1), got ALIAS");
  BAD(L_MEM("a", "4"), MLSYS_ERR_PARSE, "bad.log:1: MEMORY line without a CONSTANT or CALL before it");
  BAD(L_OK("a") "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"a\"],\"MUTATE\":[1],\"TIME\":\"1\"}\n",
      MLSYS_ERR_PARSE, "bad.log:4: MUTATE: entry 0 of 'MUTATE' must be an argument index in [0, 1)");
  BAD(L_OK("a") "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"a\",\"a\"],\"MUTATE\":[0,1],"
      "\"TIME\":\"1\"}\n", MLSYS_ERR_PARSE, "MUTATE mutates 'a' twice");
  /* nothing to import */
  BAD("", MLSYS_ERR_PARSE, "nothing to import");
  BAD("{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n", MLSYS_ERR_PARSE,
      "no CALL or MUTATE after the ANNOTATE START");
}

/* Size limits: a line over 1 MiB, and more nodes than a remat graph takes. */
TEST(dtr_size_limits) {
  size_t n = (1u << 20) + 100, k = 0;
  char *t = (char *)malloc(n + 1);
  int i;
  memset(t, ' ', n);
  memcpy(t + n - 2, "{}", 2);
  t[n] = 0;
  expect_error(t, n, MLSYS_ERR_TOO_BIG, "bad.log:1: line of");
  free(t);
  n = (size_t)(MLSYS_REMAT_MAX_NODES + 1) * 200;
  t = (char *)malloc(n);
  for (i = 0; i <= MLSYS_REMAT_MAX_NODES; i++)
    k += (size_t)snprintf(t + k, n - k, L_CALL("", "\"x%d\"", ",\"TIME\":\"1\"") "{\"INSTRUCTION\":\"MEMORY\","
                          "\"NAME\":\"x%d\",\"MEMORY\":\"4\"}\n{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x%d\","
                          "\"ALIAS\":\"-1\"}\n", i, i, i);
  expect_error(t, k, MLSYS_ERR_TOO_BIG, "more than 16384 nodes");
  free(t);
}

/* A real trace cut anywhere is either rejected with a line number or imported as a valid graph (a cut at a line
   boundary between two ops); it never crashes. */
TEST(dtr_truncated_real_trace) {
  char *buf;
  size_t len, cut;
  int ok = 0, bad = 0;
  NEED_LOGS();
  REQUIRE(dtr_log_extract(dtr_logs[0], &buf, &len) == 0);
  for (cut = 1000; cut < len; cut += len / 97) {
    mlsys_remat_graph g;
    mlsys_status st = mlsys_remat_import_dtr(buf, cut, "cut.log", NULL, &g, NULL);
    if (st == MLSYS_OK) { ok++; mlsys_remat_graph_free(&g); }
    else {
      bad++;
      CHECK_EQ_INT(st, MLSYS_ERR_PARSE);
      CHECK_CONTAINS(mlsys_last_error(), "cut.log:");
    }
  }
  CHECK(bad > 0);
  printf("    %d cuts imported, %d rejected\n", ok, bad);
  free(buf);
}

/* ---- the command ---- */

static const char *mlsys_bin(void) {
  const char *b = getenv("MLSYS_BIN");
  return b && *b ? b : "build/mlsys";
}

static int run_cmd(const char *args, char **out, char **err) {
  char cmd[2048], op[] = "/tmp/mlsys_dtr_outXXXXXX", ep[] = "/tmp/mlsys_dtr_errXXXXXX";
  int fo = mkstemp(op), fe = mkstemp(ep), status;
  size_t len;
  close(fo);
  close(fe);
  snprintf(cmd, sizeof cmd, "%s %s </dev/null >%s 2>%s", mlsys_bin(), args, op, ep);
  status = system(cmd);
  if (mlsys_read_file(op, out, &len) != MLSYS_OK) *out = NULL;
  if (mlsys_read_file(ep, err, &len) != MLSYS_OK) *err = NULL;
  unlink(op);
  unlink(ep);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(dtr_cli_import) {
  char *buf, *out, *err, path[] = "/tmp/mlsys_dtr_traceXXXXXX", bad[] = "/tmp/mlsys_dtr_badXXXXXX", args[512];
  size_t len;
  int fd, rc;
  mlsys_json_doc doc;
  mlsys_remat_graph g;
  if (access(mlsys_bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", mlsys_bin());
  NEED_LOGS();
  REQUIRE(dtr_log_extract(dtr_logs[0], &buf, &len) == 0);
  REQUIRE((fd = mkstemp(path)) >= 0);
  REQUIRE(write(fd, buf, len) == (ssize_t)len);
  close(fd);
  REQUIRE((fd = mkstemp(bad)) >= 0);
  REQUIRE(write(fd, "{\"INSTRUCTION\":\"CALL\"}\n", 23) == 23);
  close(fd);
  /* the report as JSON, the one-line summary on stderr */
  snprintf(args, sizeof args, "remat import-dtr --trace %s --summary --json", path);
  rc = run_cmd(args, &out, &err);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(err, "360 nodes (186 forward, 174 backward");
  REQUIRE(out && mlsys_json_parse(out, strlen(out), "out", &doc) == MLSYS_OK);
  CHECK_EQ_INT(mlsys_json_get(doc.root, "nodes")->i64, 360);
  CHECK(mlsys_json_get(doc.root, "checkpoint_all_peak")->u64 <= mlsys_json_get(doc.root, "trace_peak_activations")->u64);
  mlsys_json_doc_free(&doc);
  free(out); free(err);
  /* the graph, in the text form, reads back */
  snprintf(args, sizeof args, "remat import-dtr --trace %s --to text", path);
  rc = run_cmd(args, &out, &err);
  CHECK_EQ_INT(rc, 0);
  REQUIRE(out);
  CHECK_OK(mlsys_remat_graph_parse(out, strlen(out), "cli", &g));
  CHECK_EQ_INT(g.dag.n, 360);
  mlsys_remat_graph_free(&g);
  free(out); free(err);
  /* a bad trace: exit 1 and the line; bad usage: exit 2 */
  snprintf(args, sizeof args, "remat import-dtr --trace %s", bad);
  rc = run_cmd(args, &out, &err);
  CHECK_EQ_INT(rc, 1);
  CHECK_CONTAINS(err, ":1: CALL without 'NAME'");
  free(out); free(err);
  rc = run_cmd("remat import-dtr --to yaml --trace x", &out, &err);
  CHECK_EQ_INT(rc, 2);
  free(out); free(err);
  rc = run_cmd("remat import-dtr --help", &out, &err);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(out, "--keep-outputs");
  free(out); free(err);
  unlink(path);
  unlink(bad);
  free(buf);
}

/* A bundled trace by name: the same graph as the file, found beside the binary's repository from any directory;
   an unknown name lists the bundled ones. */
TEST(dtr_cli_import_bundled_trace) {
  char *out, *err, args[PATH_MAX + 300], exe[PATH_MAX + 100], cwd[PATH_MAX];
  int rc;
  mlsys_json_doc doc;
  if (access(mlsys_bin(), X_OK) != 0) SKIP_DEP("%s not built (make test builds it)", mlsys_bin());
  NEED_LOGS();
  rc = run_cmd("remat import-dtr --trace unet-6 --summary --json", &out, &err);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(err, "360 nodes (186 forward, 174 backward");
  REQUIRE(out && mlsys_json_parse(out, strlen(out), "out", &doc) == MLSYS_OK);
  CHECK_EQ_INT(mlsys_json_get(doc.root, "nodes")->i64, 360);
  CHECK_STR(mlsys_json_get(doc.root, "name")->str, "unet-6-8000000000.0-2020-10-1-10-57-18-default");
  mlsys_json_doc_free(&doc);
  free(out); free(err);
  /* from another directory, through the binary's own path */
  if (mlsys_bin()[0] == '/') snprintf(exe, sizeof exe, "%s", mlsys_bin());
  else {
    REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(exe, sizeof exe, "%s/%s", cwd, mlsys_bin());
  }
  snprintf(args, sizeof args, "cd /tmp && '%s' remat import-dtr --trace resnet32-56 --to text >/dev/null 2>&1", exe);
  CHECK_EQ_INT(system(args), 0);
  rc = run_cmd("remat import-dtr --trace nosuch-7", &out, &err);
  CHECK_EQ_INT(rc, 1);
  CHECK_CONTAINS(err, "nosuch-7");
  CHECK_CONTAINS(err, "bundled: ");
  CHECK_CONTAINS(err, "unet-6");
  free(out); free(err);
  rc = run_cmd("remat import-dtr --trace lstm --summary", &out, &err);   /* the prefix of one: lstm-128 */
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(err, "lstm-128");
  free(out); free(err);
}

TEST_MAIN()
