/* libFuzzer target for the DTR trace importer of mlsys_remat.h (section 8: mlsys_remat_import_dtr).

   Every input is imported twice: with the default options and with whole_trace + keep_outputs. A failure must be
   MLSYS_ERR_PARSE or MLSYS_ERR_TOO_BIG (or NOMEM) with a message that starts with the source name, and must leave
   the graph empty. A success is checked for the data model's invariants (schedule order, no repeated deps, views
   weigh nothing and depend on their base, at most one L node), against the info the importer returns (node count,
   Σ cost = Σ TIME, Σ mem, fixed memory, forward + backward = n, outputs and unused within range), and then:
   the JSON form reads back with the same shape; for n <= 64, checkpoint-all is valid, costs Σ TIME and peaks at
   most at the trace's own activation peak (it frees every value at its last reader; the program cannot free one
   earlier). Any violation calls abort().

   Build and run: make build/fuzz/fuzz_remat_dtr &&
     ./build/fuzz/fuzz_remat_dtr -max_total_time=60 -max_len=65536 tests/fuzz/corpus/fuzz_remat_dtr */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                          \
  do {                                                                                                         \
    if (!(x)) {                                                                                                \
      fprintf(stderr, "fuzz_remat_dtr: check failed at line %d: %s (last error: %s)\n", __LINE__, #x,          \
              mlsys_last_error());                                                                             \
      abort();                                                                                                 \
    }                                                                                                          \
  } while (0)

static void check_empty(const mlsys_remat_graph *g) {
  FUZZ_CHECK(g->dag.n == 0 && !g->dag.in && !g->dag.cost && !g->kind && !g->flags && !g->name && g->nfixed == 0);
  FUZZ_CHECK(g->loss == -1);
}

static void check_graph(const mlsys_remat_graph *g, const mlsys_remat_dtr_info *in, int keep_outputs) {
  const mlsys_dag *d = &g->dag;
  int v, j, k, nl = 0, nb = 0;
  double cost = 0;
  uint64_t mem = 0;
  FUZZ_CHECK(d->n > 0 && d->n <= MLSYS_REMAT_MAX_NODES && d->n == in->nodes);
  for (v = 0; v < d->n; v++) {
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
      FUZZ_CHECK(d->in[j] >= 0 && d->in[j] < v);
      for (k = d->in_off[v]; k < j; k++) FUZZ_CHECK(d->in[k] != d->in[j]);
    }
    FUZZ_CHECK(d->cost[v] >= 0 && d->cost[v] <= 1e30);
    FUZZ_CHECK(d->size[v] <= (1ull << 48));
    FUZZ_CHECK(g->kind[v] == MLSYS_REMAT_F || g->kind[v] == MLSYS_REMAT_L || g->kind[v] == MLSYS_REMAT_B);
    if (g->kind[v] == MLSYS_REMAT_L) nl++;
    if (g->kind[v] == MLSYS_REMAT_B) nb++;
    if (g->flags[v] & MLSYS_REMAT_ALIAS) FUZZ_CHECK(d->size[v] == 0 && d->in_off[v + 1] > d->in_off[v]);
    if (g->flags[v] & MLSYS_REMAT_INPLACE) FUZZ_CHECK(d->in_off[v + 1] > d->in_off[v]);
    FUZZ_CHECK((g->flags[v] & ~15u) == 0);
    if (d->name && d->name[v]) FUZZ_CHECK(mlsys_dag_find(d, d->name[v]) == v);
    cost += d->cost[v];
    mem += d->size[v];
  }
  FUZZ_CHECK(nl <= 1 && (nl == 0) == (g->loss < 0) && g->loss == in->loss);
  FUZZ_CHECK(nb == in->backward && d->n - nb == in->forward);
  FUZZ_CHECK(cost == in->total_time);   /* same additions in the same order */
  FUZZ_CHECK(mem == in->total_bytes);
  FUZZ_CHECK(mlsys_remat_fixed_total(g) == in->fixed_bytes);
  FUZZ_CHECK(in->trace_peak >= in->trace_peak_activations);
  FUZZ_CHECK(in->unused >= 0 && in->unused <= d->n && in->outputs >= 0 && in->outputs <= d->n);
  FUZZ_CHECK(in->results + in->mutates <= d->n && in->views <= in->results);
  if (keep_outputs) {
    int s = d->n - 1;
    FUZZ_CHECK(d->in_off[s + 1] - d->in_off[s] == in->outputs && d->cost[s] == 0 && d->size[s] == 0);
  }
}

static void roundtrip_json(const mlsys_remat_graph *g) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  mlsys_remat_graph h;
  int v;
  FUZZ_CHECK(f != NULL);
  FUZZ_CHECK(mlsys_remat_graph_write(g, f, 1) == MLSYS_OK);
  FUZZ_CHECK(fclose(f) == 0);
  if (mlsys_remat_graph_parse(buf, len, "rt.json", &h) != MLSYS_OK) {
    fprintf(stderr, "fuzz_remat_dtr: the JSON form does not read back: %s\n%.*s\n", mlsys_last_error(),
            (int)(len > 4000 ? 4000 : len), buf);
    abort();
  }
  FUZZ_CHECK(h.dag.n == g->dag.n && h.dag.nedges == g->dag.nedges && h.loss == g->loss);
  for (v = 0; v <= g->dag.n; v++) FUZZ_CHECK(h.dag.in_off[v] == g->dag.in_off[v]);
  for (v = 0; v < g->dag.n; v++) FUZZ_CHECK(h.flags[v] == g->flags[v] && h.kind[v] == g->kind[v]);
  mlsys_remat_graph_free(&h);
  free(buf);
}

static void check_ckpt_all(const mlsys_remat_graph *g, const mlsys_remat_dtr_info *in) {
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  mlsys_remat_sim rep;
  if (g->dag.n > 64) return;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  FUZZ_CHECK(mlsys_remat_solve(g, UINT64_MAX, &o, &s) == MLSYS_OK);
  FUZZ_CHECK(mlsys_remat_simulate(g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL) == MLSYS_OK && rep.valid);
  FUZZ_CHECK(s.cost == s.baseline_cost);
  if (s.peak > in->trace_peak_activations) {
    fprintf(stderr, "fuzz_remat_dtr: checkpoint-all peak %llu above the trace's own %llu\n",
            (unsigned long long)s.peak, (unsigned long long)in->trace_peak_activations);
    abort();
  }
  mlsys_remat_schedule_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int pass;
  for (pass = 0; pass < 2; pass++) {
    mlsys_remat_graph g;
    mlsys_remat_dtr_info in;
    mlsys_remat_dtr_opts o;
    mlsys_status st;
    memset(&o, 0, sizeof o);
    o.whole_trace = o.keep_outputs = pass;
    memset(&g, 0x5A, sizeof g);   /* the importer must reset whatever was there */
    st = mlsys_remat_import_dtr((const char *)data, size, "fuzz", &o, &g, &in);
    if (st != MLSYS_OK) {
      const char *msg = mlsys_last_error();
      FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_TOO_BIG || st == MLSYS_ERR_NOMEM);
      FUZZ_CHECK(strncmp(msg, "fuzz", 4) == 0 && strlen(msg) > 6);
      check_empty(&g);
      mlsys_remat_graph_free(&g);
      continue;
    }
    check_graph(&g, &in, pass);
    roundtrip_json(&g);
    check_ckpt_all(&g, &in);
    mlsys_remat_graph_free(&g);
  }
  return 0;
}
