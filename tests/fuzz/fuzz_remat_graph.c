/* libFuzzer target for the graph formats of mlsys_remat.h (section 1: the JSON and text parsers, the writer).

   For every input: mlsys_remat_graph_parse. A failure must be MLSYS_ERR_PARSE, _ARG, _CYCLE or _TOO_BIG with a
   message that starts with the source name, and must leave the graph empty (then freed). A success is checked for
   the invariants of the data model (schedule order, ranges, unique names, loss = first L node, CSR consistency),
   then written with mlsys_remat_graph_write in both forms (JSON and text) into memory streams; each output must
   parse back to an identical graph (n, edges in order, costs bit for bit, mem, kinds, flags, names, ops, fwd_of,
   loss, fixed memory, graph name, batch, units; for JSON also the per-node shape, attrs and impls) and writing
   that graph again must give the same bytes.
   mlsys_remat_single_op_bound is compared with a 128-bit reference, and for 1 <= n <= 12 mlsys_remat_solve with
   MLSYS_REMAT_CHECKPOINT_ALL at budget UINT64_MAX must succeed: no recomputation (cost = sum of costs), every node
   computed once, peak >= the single-op bound, peak_total = peak + fixed memory. Any violation calls abort().

   The text form cannot carry every name (blanks, '#', a lone ':', "op="/"fwd_of=" prefixes, graph names with
   '#'): for such graphs the text writer must refuse with MLSYS_ERR_ARG; otherwise its output must read back equal,
   except that unnamed nodes come back with the names the writer invented for them ("n<id>", unique).

   Build and run: make build/fuzz/fuzz_remat_graph &&
     ./build/fuzz/fuzz_remat_graph -max_total_time=120 -max_len=65536 tests/fuzz/corpus/fuzz_remat_graph */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include <float.h>
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                          \
  do {                                                                                                         \
    if (!(x)) {                                                                                                \
      fprintf(stderr, "fuzz_remat_graph: check failed at line %d: %s (last error: %s)\n", __LINE__, #x,        \
              mlsys_last_error());                                                                             \
      abort();                                                                                                 \
    }                                                                                                          \
  } while (0)


/* ---- invariants of a parsed graph ---- */

static int str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

static void check_graph(const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  int v, j, i, loss = -1;
  FUZZ_CHECK(d->n >= 0 && d->n <= MLSYS_REMAT_MAX_NODES);
  FUZZ_CHECK(d->in_off && d->out_off && d->cost && d->size && g->kind && g->flags && g->op && g->fwd_of);
  FUZZ_CHECK(d->in_off[0] == 0 && d->in_off[d->n] == d->nedges && d->out_off[0] == 0 && d->out_off[d->n] == d->nedges);
  for (v = 0; v < d->n; v++) {
    FUZZ_CHECK(d->in_off[v] <= d->in_off[v + 1] && d->out_off[v] <= d->out_off[v + 1]);
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
      int k;
      FUZZ_CHECK(d->in[j] >= 0 && d->in[j] < v);   /* schedule order */
      for (k = d->in_off[v]; k < j; k++) FUZZ_CHECK(d->in[k] != d->in[j]);
      FUZZ_CHECK(mlsys_dag_has_edge(d, d->in[j], v));
    }
    for (j = d->out_off[v]; j < d->out_off[v + 1]; j++) {
      FUZZ_CHECK(d->out[j] > v && d->out[j] < d->n);
      if (j > d->out_off[v]) FUZZ_CHECK(d->out[j - 1] < d->out[j]);
      FUZZ_CHECK(mlsys_dag_has_edge(d, v, d->out[j]));
    }
    FUZZ_CHECK(isfinite(d->cost[v]) && d->cost[v] >= 0 && d->cost[v] <= 1e30);
    FUZZ_CHECK(d->size[v] <= (1ull << 48));
    FUZZ_CHECK(g->kind[v] <= MLSYS_REMAT_O);
    FUZZ_CHECK(g->flags[v] <= 15);
    FUZZ_CHECK(g->fwd_of[v] >= -1 && g->fwd_of[v] < d->n);
    if (loss < 0 && g->kind[v] == MLSYS_REMAT_L) loss = v;
    if (d->name) {
      FUZZ_CHECK(d->name[v] != NULL);   /* partial names are completed */
      FUZZ_CHECK(mlsys_dag_find(d, d->name[v]) == v);   /* unique */
    }
  }
  FUZZ_CHECK(g->loss == loss);
  FUZZ_CHECK(g->nfixed >= 0 && g->nfixed <= MLSYS_REMAT_MAX_FIXED);
  for (i = 0; i < g->nfixed; i++) {
    FUZZ_CHECK(g->fixed_name[i] && g->fixed_name[i][0]);
    FUZZ_CHECK(g->fixed_bytes[i] <= (1ull << 48));
    for (j = 0; j < i; j++) FUZZ_CHECK(strcmp(g->fixed_name[i], g->fixed_name[j]) != 0);
  }
  FUZZ_CHECK(g->batch >= 0);
}

static void check_empty(const mlsys_remat_graph *g) {
  int i;
  FUZZ_CHECK(g->dag.n == 0 && g->dag.nedges == 0 && !g->dag.name && !g->dag.cost && !g->dag.size && !g->dag.in &&
             !g->dag.in_off && !g->dag.out && !g->dag.out_off);
  FUZZ_CHECK(!g->kind && !g->flags && !g->op && !g->fwd_of && !g->name && !g->mem_unit && !g->cost_unit && !g->info);
  FUZZ_CHECK(g->nfixed == 0 && g->loss == -1 && g->batch == 0);
  for (i = 0; i < MLSYS_REMAT_MAX_FIXED; i++) FUZZ_CHECK(!g->fixed_name[i]);
}

/* ---- comparison ---- */

enum { CMP_FWD_OF = 1, CMP_OP = 2, CMP_STRINGS = 4, CMP_ALL = 7 };

static void graph_eq(const mlsys_remat_graph *a, const mlsys_remat_graph *b, int what, const char *form) {
  const mlsys_dag *x = &a->dag, *y = &b->dag;
  int v, j;
  (void)form;
  FUZZ_CHECK(x->n == y->n && x->nedges == y->nedges);
  for (v = 0; v <= x->n; v++) FUZZ_CHECK(x->in_off[v] == y->in_off[v]);
  for (j = 0; j < x->nedges; j++) FUZZ_CHECK(x->in[j] == y->in[j]);
  for (v = 0; v < x->n; v++) {
    FUZZ_CHECK(memcmp(&x->cost[v], &y->cost[v], sizeof(double)) == 0);
    FUZZ_CHECK(x->size[v] == y->size[v]);
    FUZZ_CHECK(a->kind[v] == b->kind[v]);
    FUZZ_CHECK(a->flags[v] == b->flags[v]);
    if (what & CMP_FWD_OF) FUZZ_CHECK(a->fwd_of[v] == b->fwd_of[v]);
    if (what & CMP_OP) FUZZ_CHECK(str_eq(a->op[v], b->op[v]));
    if (what & CMP_STRINGS) FUZZ_CHECK(str_eq(x->name ? x->name[v] : NULL, y->name ? y->name[v] : NULL));
  }
  FUZZ_CHECK(a->loss == b->loss);
  FUZZ_CHECK(a->nfixed == b->nfixed);
  for (j = 0; j < a->nfixed; j++) {
    FUZZ_CHECK(a->fixed_bytes[j] == b->fixed_bytes[j]);
    if (what & CMP_STRINGS) FUZZ_CHECK(strcmp(a->fixed_name[j], b->fixed_name[j]) == 0);
  }
  FUZZ_CHECK(mlsys_remat_fixed_total(a) == mlsys_remat_fixed_total(b));
  FUZZ_CHECK(a->batch == b->batch);
  if (what & CMP_STRINGS) {
    FUZZ_CHECK(str_eq(a->name, b->name));
    FUZZ_CHECK(str_eq(a->mem_unit, b->mem_unit));
    FUZZ_CHECK(str_eq(a->cost_unit, b->cost_unit));
  }
}

/* The per-node info ("shape", "attrs", "impls"): ranges, and equality with NULL meaning every node unknown (a JSON
   round trip may turn an all-empty info, e.g. "attrs": {}, into none). */
static void check_info(const mlsys_remat_graph *g) {
  int v, k;
  if (!g->info) return;
  for (v = 0; v < g->dag.n; v++) {
    const mlsys_remat_node_info *in = &g->info[v];
    FUZZ_CHECK(in->ndim >= 0 && in->ndim <= MLSYS_REMAT_MAX_DIMS && in->in_ndim >= 0 &&
               in->in_ndim <= MLSYS_REMAT_MAX_DIMS);
    for (k = 0; k < in->ndim; k++) FUZZ_CHECK(in->shape[k] >= 0 && in->shape[k] <= (1ll << 48));
    for (k = 0; k < in->in_ndim; k++) FUZZ_CHECK(in->in_shape[k] >= 0 && in->in_shape[k] <= (1ll << 48));
    FUZZ_CHECK(in->nimpl >= 0 && in->nimpl <= MLSYS_REMAT_MONET_MAX_IMPLS);
    FUZZ_CHECK(in->nimpl == 0 || g->kind[v] == MLSYS_REMAT_F || g->kind[v] == MLSYS_REMAT_B);
    for (k = 0; k < in->nimpl; k++) {
      FUZZ_CHECK(in->impl[k].name[0] && memchr(in->impl[k].name, 0, sizeof in->impl[k].name));
      FUZZ_CHECK(isfinite(in->impl[k].cost) && in->impl[k].cost >= 0 && in->impl[k].workspace <= (1ull << 48));
      FUZZ_CHECK(in->impl[k].fixed_workspace == 0 || in->impl[k].fixed_workspace == 1);
    }
  }
}
static void info_eq(const mlsys_remat_graph *a, const mlsys_remat_graph *b) {
  static const mlsys_remat_node_info zero;
  int v, k;
  for (v = 0; v < a->dag.n; v++) {
    const mlsys_remat_node_info *x = a->info ? &a->info[v] : &zero, *y = b->info ? &b->info[v] : &zero;
    FUZZ_CHECK(x->ndim == y->ndim && x->in_ndim == y->in_ndim && x->nimpl == y->nimpl && x->groups == y->groups);
    FUZZ_CHECK(!memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)));
    FUZZ_CHECK(!memcmp(x->in_shape, y->in_shape, (size_t)x->in_ndim * sizeof(int64_t)));
    for (k = 0; k < 2; k++)
      FUZZ_CHECK(x->kernel[k] == y->kernel[k] && x->stride[k] == y->stride[k] && x->pad[k] == y->pad[k] &&
                 x->dilation[k] == y->dilation[k]);
    for (k = 0; k < x->nimpl; k++)
      FUZZ_CHECK(!strcmp(x->impl[k].name, y->impl[k].name) &&
                 !memcmp(&x->impl[k].cost, &y->impl[k].cost, sizeof(double)) &&
                 x->impl[k].workspace == y->impl[k].workspace &&
                 x->impl[k].fixed_workspace == y->impl[k].fixed_workspace);
  }
}

/* ---- what the text form can carry ---- */

/* One token of the text form: non-empty, no byte <= ' ', no '#', no DEL, not a lone ':' (mirrors the writer). */
static int text_token_ok(const char *s, int is_name) {
  const char *p;
  if (!s || !*s) return 0;
  if (is_name && (strcmp(s, ":") == 0 || strncmp(s, "op=", 3) == 0 || strncmp(s, "fwd_of=", 7) == 0)) return 0;
  for (p = s; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == '#' || *p == 0x7f) return 0;
  return 1;
}
static int text_can_hold(const mlsys_remat_graph *g) {
  int v;
  for (v = 0; v < g->dag.n; v++) {
    if (g->dag.name && g->dag.name[v] && !text_token_ok(g->dag.name[v], 1)) return 0;
    if (g->op[v] && !text_token_ok(g->op[v], 0)) return 0;
  }
  if (g->name && (!*g->name || strchr(g->name, '#') || strchr(g->name, '\n') || strchr(g->name, '\r') ||
                  g->name[0] == ' ' || g->name[strlen(g->name) - 1] == ' '))
    return 0;
  if (g->mem_unit && !text_token_ok(g->mem_unit, 0)) return 0;
  if (g->cost_unit && !text_token_ok(g->cost_unit, 0)) return 0;
  return 1;
}

/* ---- write / re-read ---- */

static char *write_mem(const mlsys_remat_graph *g, int json, size_t *len, mlsys_status *st) {
  char *buf = NULL;
  FILE *f;
  *len = 0;
  f = open_memstream(&buf, len);
  FUZZ_CHECK(f != NULL);
  *st = mlsys_remat_graph_write(g, f, json);
  FUZZ_CHECK(fclose(f) == 0);
  FUZZ_CHECK(buf != NULL);
  return buf;
}

static void roundtrip(const mlsys_remat_graph *g, int json) {
  mlsys_remat_graph h;
  size_t len, len2;
  mlsys_status st;
  char *out = write_mem(g, json, &len, &st), *out2;
  int what = CMP_ALL, v, partial_names = 0;
  if (!json && !text_can_hold(g)) {   /* the writer must refuse, naming the problem */
    FUZZ_CHECK(st == MLSYS_ERR_ARG && strstr(mlsys_last_error(), "text form"));
    free(out);
    return;
  }
  FUZZ_CHECK(st == MLSYS_OK);
  st = mlsys_remat_graph_parse(out, len, json ? "fuzz-rt.json" : "fuzz-rt.txt", &h);
  if (st != MLSYS_OK) {
    fprintf(stderr, "fuzz_remat_graph: the %s form of a valid graph does not parse back: %s\n--- output ---\n%.*s\n",
            json ? "JSON" : "text", mlsys_last_error(), (int)(len > 4000 ? 4000 : len), out);
    abort();
  }
  check_graph(&h);
  for (v = 0; v < g->dag.n; v++) partial_names |= !g->dag.name || !g->dag.name[v];
  if (!json && partial_names) {
    /* the text form names every node: given names come back, invented ones are unique "n<id>..." */
    FUZZ_CHECK(h.dag.name != NULL);
    for (v = 0; v < g->dag.n; v++)
      if (g->dag.name && g->dag.name[v]) FUZZ_CHECK(strcmp(g->dag.name[v], h.dag.name[v]) == 0);
      else FUZZ_CHECK(h.dag.name[v][0] == 'n');
    graph_eq(g, &h, CMP_FWD_OF | CMP_OP, "text");
    FUZZ_CHECK(str_eq(g->name, h.name));
    what = 0;
  } else {
    graph_eq(g, &h, what, json ? "json" : "text");
  }
  check_info(&h);
  if (json) info_eq(g, &h);
  else FUZZ_CHECK(h.info == NULL);   /* the text form carries no info */
  /* writing the re-read graph gives the same bytes (only when everything was kept) */
  if (what == CMP_ALL) {
    out2 = write_mem(&h, json, &len2, &st);
    FUZZ_CHECK(st == MLSYS_OK);
    FUZZ_CHECK(len2 == len && memcmp(out, out2, len) == 0);
    free(out2);
  }
  mlsys_remat_graph_free(&h);
  free(out);
}

static void check_bound_and_solve(const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  unsigned __int128 best = 0;
  uint64_t bound = mlsys_remat_single_op_bound(g);
  double total = 0;
  int v, j;
  for (v = 0; v < d->n; v++) {
    unsigned __int128 s = d->size[v];
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) s += d->size[d->in[j]];
    if (s > best) best = s;
    total += d->cost[v];
  }
  FUZZ_CHECK(best > (unsigned __int128)UINT64_MAX || (uint64_t)best == bound);
  if (d->n >= 1 && d->n <= 12) {
    mlsys_remat_opts o;
    mlsys_remat_schedule s;
    mlsys_status st;
    int t, i, computed;
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    st = mlsys_remat_solve(g, UINT64_MAX, &o, &s);
    FUZZ_CHECK(st == MLSYS_OK);
    FUZZ_CHECK(s.n == d->n && s.R && s.S && s.fits);
    FUZZ_CHECK(fabs(s.cost - total) <= 1e-12 * total);
    FUZZ_CHECK(s.peak >= bound);
    FUZZ_CHECK(s.peak_total == s.peak + mlsys_remat_fixed_total(g));
    for (i = 0; i < d->n; i++) {   /* no recomputation: each node is computed exactly once, in its own stage */
      for (computed = 0, t = 0; t < d->n; t++) computed += s.R[t * d->n + i] != 0;
      FUZZ_CHECK(computed == 1 && s.R[i * d->n + i]);
    }
    mlsys_remat_schedule_free(&s);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_remat_graph g;
  mlsys_status st;
  memset(&g, 0x5A, sizeof g);   /* the parser must reset whatever was there */
  st = mlsys_remat_graph_parse((const char *)data, size, "fuzz", &g);
  if (st != MLSYS_OK) {
    const char *msg = mlsys_last_error();
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG || st == MLSYS_ERR_CYCLE || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(strncmp(msg, "fuzz", 4) == 0 && strlen(msg) > 6);
    check_empty(&g);
    mlsys_remat_graph_free(&g);
    return 0;
  }
  check_graph(&g);
  check_info(&g);
  check_bound_and_solve(&g);
  roundtrip(&g, 1);
  roundtrip(&g, 0);
  mlsys_remat_graph_free(&g);
  return 0;
}
