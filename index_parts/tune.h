/* index_parts/tune.h — part of mlsys_index.h: configuration names, the runner (one workload on any index kind, timed and
   checked) and MAPLE's tuner (thesis §6.3, spec B3.5: score the grid with the predictor, run the top k for real, keep the
   fastest). */
#ifndef MLSYS_INDEX_TUNE_H
#define MLSYS_INDEX_TUNE_H
#include "mlsys_index.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration names ----
   "alex"                      the gapped array with ALEX's cost model, expected insert fraction = dflt_eif
   "alex-w"                    the same with expected insert fraction 1 (ALEX-W, thesis Fig 3.5)
   "alex:eif=0.5"              an explicit expected insert fraction
   "ga:msi=2,msh=16[,eif=E]"   MAPLE's gapped array with the Msi/Msh trigger (eif defaults to dflt_eif)
   "flog:mf=64,mnf=16,nf=4"    the fragmented log (omitted knobs take the defaults)
   Every form also accepts max_leaf=BYTES and (ga) every_insert=1. */
MLSYS_DEF mlsys_status mlsys_index_config_parse(const char *s, double dflt_eif, mlsys_index_config *out);
/* The canonical name of a configuration (parse(format(c)) == c for the knobs above; eif is printed to 6 significant
   digits). Returns buf. */
MLSYS_DEF const char *mlsys_index_config_format(const mlsys_index_config *c, char *buf, size_t len);

/* ---- the runner ---- */
typedef enum {
  MLSYS_INDEX_KIND_MAPLE = 0,   /* mlsys_index with the given configuration (ALEX, ALEX-W, FLog alone are configurations) */
  MLSYS_INDEX_KIND_BTREE,       /* mlsys_index_btree, 256-byte nodes */
  MLSYS_INDEX_KIND_SORTED       /* mlsys_index_sorted: read-only traces only */
} mlsys_index_kind;
typedef struct {
  double build_s;               /* bulk load */
  double seconds;               /* the operations alone */
  double mops;                  /* ops_done / seconds / 1e6 */
  size_t ops_done, finds, inserts;
  size_t wrong;                 /* lookups that missed an inserted key or returned another payload, inserts refused */
  size_t bytes;                 /* the index's memory at the end */
  int cut_short;                /* time_limit_s reached before the trace's end */
} mlsys_index_run_result;
/* Bulk-load bulk[0..n_bulk) (sorted, distinct; payload mlsys_index_payload_of) into an index of the given kind and run
   the trace on it, checking every lookup. time_limit_s > 0 stops early (checked every 4096 operations).
   MLSYS_ERR_UNSUPPORTED for the sorted array on a trace with inserts. */
MLSYS_DEF mlsys_status mlsys_index_run(mlsys_index_kind kind, const mlsys_index_config *cfg, const uint64_t *bulk, size_t n_bulk,
                                       const mlsys_index_trace *t, double time_limit_s, mlsys_index_run_result *r);

/* ---- the tuner ---- */
typedef enum {
  MLSYS_INDEX_PREDICT_MODEL = 0,  /* the trained CNN predictor (opts.model) */
  MLSYS_INDEX_PREDICT_KNN,        /* the k-NN fallback (opts.knn) */
  MLSYS_INDEX_PREDICT_NONE        /* no prediction: measure every grid entry (the oracle; slow) */
} mlsys_index_predictor;
typedef struct {
  mlsys_index_predictor predictor;
  const mlsys_index_model *model;
  const mlsys_index_knn *knn;
  const mlsys_index_config *grid; size_t n_grid;   /* NULL → mlsys_index_grid_default(insert fraction of the prefix) */
  int top_k;                      /* candidates measured (0 → 10, thesis §6.5.4) */
  size_t sample;                  /* keys of the bulk set used to place keys in the trace image (0 → 65,536) */
  double time_limit_s;            /* per candidate run (0 → none) */
} mlsys_index_tune_opts;
typedef struct {
  mlsys_index_config cfg;
  double predicted_mops;          /* NaN with MLSYS_INDEX_PREDICT_NONE */
  mlsys_index_run_result run;
} mlsys_index_candidate;
typedef struct {
  mlsys_index_config best;
  size_t n_cand;                  /* measured candidates, in predicted order */
  mlsys_index_candidate *cand;    /* free with mlsys_index_tune_result_free */
  size_t best_cand;
  double predict_s, measure_s;
} mlsys_index_tune_result;
MLSYS_DEF mlsys_status mlsys_index_tune(const uint64_t *bulk, size_t n_bulk, const mlsys_index_trace *prefix,
                                        const mlsys_index_tune_opts *o, mlsys_index_tune_result *r);
MLSYS_DEF void mlsys_index_tune_result_free(mlsys_index_tune_result *r);
/* The spec's non-learned baseline (risk 4): the fragmented log when more than half the prefix's operations insert,
   else ALEX. */
MLSYS_DEF mlsys_index_config mlsys_index_tune_heuristic(const mlsys_index_trace *prefix);
/* The fraction of a trace's operations that insert. */
MLSYS_DEF double mlsys_index_trace_insert_frac(const mlsys_index_trace *t);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_INDEX_TUNE_H */

#ifdef MLSYS_INDEX_IMPLEMENTATION
#ifndef MLSYS_INDEX_TUNE_IMPL
#define MLSYS_INDEX_TUNE_IMPL
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mlsys__index_knob(const char *s, size_t n, const char *name, const char **val) {
  size_t l = strlen(name);
  if (n > l && !strncmp(s, name, l) && s[l] == '=') { *val = s + l + 1; return 1; }
  return 0;
}

static mlsys_status mlsys__index_knob_double(const char *cfgname, const char *knob, const char *v, size_t vn, double *out) {
  char buf[64], *end;
  double d;
  if (vn == 0 || vn >= sizeof buf) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s needs a number", cfgname, knob);
  memcpy(buf, v, vn);
  buf[vn] = 0;
  d = strtod(buf, &end);
  if (*end || !isfinite(d)) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s=%s is not a number", cfgname, knob, buf);
  *out = d;
  return MLSYS_OK;
}

static mlsys_status mlsys__index_knob_u32(const char *cfgname, const char *knob, const char *v, size_t vn, uint32_t *out) {
  double d;
  mlsys_status st = mlsys__index_knob_double(cfgname, knob, v, vn, &d);
  if (st) return st;
  if (d < 0 || d > 4294967295.0 || d != floor(d))
    return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s must be a whole number in [0, 2^32)", cfgname, knob);
  *out = (uint32_t)d;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_config_parse(const char *s, double dflt_eif, mlsys_index_config *out) {
  mlsys_index_config c;
  const char *p, *colon;
  size_t kind_len;
  int alex = 0;
  if (!s || !out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config_parse: NULL argument");
  memset(&c, 0, sizeof c);
  colon = strchr(s, ':');
  kind_len = colon ? (size_t)(colon - s) : strlen(s);
  if (kind_len == 4 && !strncmp(s, "alex", 4)) { alex = 1; c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = dflt_eif; }
  else if (kind_len == 6 && !strncmp(s, "alex-w", 6)) { alex = 1; c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = 1; }
  else if (kind_len == 2 && !strncmp(s, "ga", 2)) { c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = dflt_eif; }
  else if (kind_len == 4 && !strncmp(s, "flog", 4)) c.leaf = MLSYS_INDEX_FLOG;
  else
    return mlsys_set_error(MLSYS_ERR_ARG, "unknown index configuration '%s' (expected alex, alex-w, ga:msi=..,msh=.. or flog:mf=..,mnf=..,nf=..)", s);
  for (p = colon ? colon + 1 : s + kind_len; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *v = NULL;
    mlsys_status st;
    size_t vn;
#define MLSYS__KNOB(name) (mlsys__index_knob(p, n, name, &v) && (vn = n - (size_t)(v - p), 1))
    if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': empty knob", s);
    if (MLSYS__KNOB("eif") && c.leaf == MLSYS_INDEX_GA) st = mlsys__index_knob_double(s, "eif", v, vn, &c.expected_insert_frac);
    else if (MLSYS__KNOB("msi") && c.leaf == MLSYS_INDEX_GA && !alex) st = mlsys__index_knob_double(s, "msi", v, vn, &c.msi);
    else if (MLSYS__KNOB("msh") && c.leaf == MLSYS_INDEX_GA && !alex) st = mlsys__index_knob_double(s, "msh", v, vn, &c.msh);
    else if (MLSYS__KNOB("every_insert") && c.leaf == MLSYS_INDEX_GA) {
      double d;
      st = mlsys__index_knob_double(s, "every_insert", v, vn, &d);
      c.smo_check_every_insert = d != 0;
    } else if (MLSYS__KNOB("mf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "mf", v, vn, &c.mf_size);
    else if (MLSYS__KNOB("mnf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "mnf", v, vn, &c.mnf);
    else if (MLSYS__KNOB("nf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "nf", v, vn, &c.nf);
    else if (MLSYS__KNOB("max_leaf")) st = mlsys__index_knob_u32(s, "max_leaf", v, vn, &c.max_leaf_bytes);
    else
      return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': unknown knob '%.*s' for %.*s", s, (int)n, p, (int)kind_len, s);
#undef MLSYS__KNOB
    if (st) return st;
    p += n;
    if (*p == ',') p++;
  }
  {
    mlsys_status st = mlsys_index_config_check(&c);
    if (st) return mlsys_prefix_error("configuration '%s'", s);
  }
  *out = c;
  return MLSYS_OK;
}

MLSYS_DEF const char *mlsys_index_config_format(const mlsys_index_config *c, char *buf, size_t len) {
  char extra[64] = "";
  if (!buf || !len) return buf;
  if (!c) { snprintf(buf, len, "-"); return buf; }
  if (c->max_leaf_bytes) snprintf(extra, sizeof extra, ",max_leaf=%u", c->max_leaf_bytes);
  if (c->leaf == MLSYS_INDEX_FLOG) {
    mlsys_index_config r = mlsys_index_config_resolved(c);
    snprintf(buf, len, "flog:mf=%u,mnf=%u,nf=%u%s", r.mf_size, r.mnf, r.nf, extra);
  } else if (c->msi == 0 && c->msh == 0) {
    snprintf(buf, len, "alex:eif=%.6g%s%s", c->expected_insert_frac, extra, c->smo_check_every_insert ? ",every_insert=1" : "");
  } else {
    snprintf(buf, len, "ga:msi=%.6g,msh=%.6g,eif=%.6g%s%s", c->msi, c->msh, c->expected_insert_frac, extra,
             c->smo_check_every_insert ? ",every_insert=1" : "");
  }
  return buf;
}

MLSYS_DEF double mlsys_index_trace_insert_frac(const mlsys_index_trace *t) {
  size_t i, ins = 0;
  if (!t || !t->n) return 0;
  for (i = 0; i < t->n; i++) ins += t->op[i] == MLSYS_INDEX_OP_INSERT;
  return (double)ins / (double)t->n;
}

/* The three index kinds behind one switch (no function pointers in the timed loop: thesis §6.4 measured 14 % for
   virtual dispatch, and the baselines deserve the same treatment as MAPLE). */
#define MLSYS__INDEX_RUN_LOOP(FIND, INSERT)                                                                              \
  for (i = 0; i < t->n; i++) {                                                                                          \
    uint64_t k = t->key[i], v = 0;                                                                                      \
    if (t->op[i] == MLSYS_INDEX_OP_INSERT) {                                                                            \
      int rc = INSERT;                                                                                                  \
      if (rc < 0) { st = mlsys_prefix_error("operation %zu (insert %llu)", i, (unsigned long long)k); break; }          \
      wrong += rc != 1;                                                                                                 \
      inserts++;                                                                                                        \
    } else {                                                                                                            \
      int f = FIND;                                                                                                     \
      wrong += !f | (v != mlsys_index_payload_of(k));                                                                   \
      finds++;                                                                                                          \
    }                                                                                                                   \
    if ((i & 4095) == 4095 && time_limit_s > 0 && mlsys_now() - t0 > time_limit_s) { i++; cut = 1; break; }            \
  }

MLSYS_DEF mlsys_status mlsys_index_run(mlsys_index_kind kind, const mlsys_index_config *cfg, const uint64_t *bulk, size_t n_bulk,
                                       const mlsys_index_trace *t, double time_limit_s, mlsys_index_run_result *r) {
  mlsys_status st = MLSYS_OK;
  size_t i = 0, wrong = 0, finds = 0, inserts = 0;
  int cut = 0;
  double t0, tb;
  if (!r || !t || (n_bulk && !bulk) || (t->n && (!t->op || !t->key)))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_run: NULL argument");
  memset(r, 0, sizeof *r);
  tb = mlsys_now();
  if (kind == MLSYS_INDEX_KIND_MAPLE) {
    mlsys_index *ix;
    if ((st = mlsys_index_create(cfg, bulk, NULL, n_bulk, &ix))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_find(ix, k, &v), mlsys_index_insert(ix, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_memory(ix);
    mlsys_index_free(ix);
  } else if (kind == MLSYS_INDEX_KIND_BTREE) {
    mlsys_index_btree *bt;
    if ((st = mlsys_index_btree_create(0, bulk, NULL, n_bulk, &bt))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_btree_find(bt, k, &v), mlsys_index_btree_insert(bt, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_btree_memory(bt);
    mlsys_index_btree_free(bt);
  } else if (kind == MLSYS_INDEX_KIND_SORTED) {
    mlsys_index_sorted *sa;
    for (i = 0; i < t->n; i++)
      if (t->op[i] == MLSYS_INDEX_OP_INSERT)
        return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "the sorted-array baseline runs read-only workloads only (operation %zu inserts)", i);
    if ((st = mlsys_index_sorted_create(bulk, NULL, n_bulk, &sa))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_sorted_find(sa, k, &v), mlsys_index_sorted_insert(sa, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_sorted_memory(sa);
    mlsys_index_sorted_free(sa);
  } else {
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_run: unknown index kind %d", (int)kind);
  }
  r->ops_done = i;
  r->finds = finds;
  r->inserts = inserts;
  r->wrong = wrong;
  r->cut_short = cut;
  r->mops = r->seconds > 0 ? (double)i / r->seconds / 1e6 : 0;
  return st;
}
#undef MLSYS__INDEX_RUN_LOOP

MLSYS_DEF mlsys_index_config mlsys_index_tune_heuristic(const mlsys_index_trace *prefix) {
  mlsys_index_config c;
  double f = mlsys_index_trace_insert_frac(prefix);
  memset(&c, 0, sizeof c);
  if (f > 0.5) c.leaf = MLSYS_INDEX_FLOG;
  else c.expected_insert_frac = f;
  return c;
}

MLSYS_DEF void mlsys_index_tune_result_free(mlsys_index_tune_result *r) {
  if (!r) return;
  mlsys_free(r->cand);
  r->cand = NULL;
  r->n_cand = 0;
}

typedef struct { double score; size_t i; } mlsys__index_scored;
static int mlsys__index_scored_cmp(const void *a, const void *b) {
  const mlsys__index_scored *x = (const mlsys__index_scored *)a, *y = (const mlsys__index_scored *)b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;   /* descending; ties by grid order */
  return x->i < y->i ? -1 : x->i > y->i;
}

/* select_config of spec B3.5: image → scores → top k → run each on this machine → the fastest. */
MLSYS_DEF mlsys_status mlsys_index_tune(const uint64_t *bulk, size_t n_bulk, const mlsys_index_trace *prefix,
                                        const mlsys_index_tune_opts *o, mlsys_index_tune_result *r) {
  mlsys_index_tune_opts opt;
  mlsys_index_config *own_grid = NULL;
  const mlsys_index_config *grid;
  size_t n_grid, i, k, m, stride;
  double *pred = NULL, t0;
  mlsys__index_scored *sc = NULL;
  uint64_t *sample = NULL;
  float *img = NULL;
  mlsys_status st = MLSYS_OK;
  if (!r || !prefix || (n_bulk && !bulk)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: NULL argument");
  memset(r, 0, sizeof *r);
  memset(&opt, 0, sizeof opt);
  if (o) opt = *o;
  if (!opt.top_k) opt.top_k = 10;
  if (opt.top_k < 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: top_k %d < 0", opt.top_k);
  if (!opt.sample) opt.sample = 65536;
  if (opt.predictor == MLSYS_INDEX_PREDICT_MODEL && !opt.model)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: the CNN predictor was asked for but no model was given");
  if (opt.predictor == MLSYS_INDEX_PREDICT_KNN && !opt.knn)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: the k-NN predictor was asked for but none was given");
  if (opt.grid) { grid = opt.grid; n_grid = opt.n_grid; }
  else {
    if ((st = mlsys_index_grid_default(mlsys_index_trace_insert_frac(prefix), &own_grid, &n_grid))) return st;
    grid = own_grid;
  }
  if (!n_grid) { mlsys_free(own_grid); return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: empty configuration grid"); }
  pred = (double *)mlsys_alloc(n_grid, sizeof *pred);
  sc = (mlsys__index_scored *)mlsys_alloc(n_grid, sizeof *sc);
  if (!pred || !sc) { st = MLSYS_ERR_NOMEM; goto done; }
  t0 = mlsys_now();
  if (opt.predictor == MLSYS_INDEX_PREDICT_NONE) {
    for (i = 0; i < n_grid; i++) pred[i] = NAN;
  } else {
    /* the bulk set's sample places the trace's keys by rank (spec B3.5: rank, not value) */
    m = n_bulk < opt.sample ? n_bulk : opt.sample;
    stride = m ? n_bulk / m : 1;
    sample = (uint64_t *)mlsys_alloc(m ? m : 1, sizeof *sample);
    if (!sample) { st = MLSYS_ERR_NOMEM; goto done; }
    for (i = 0; i < m; i++) sample[i] = bulk[i * stride];
    if (opt.predictor == MLSYS_INDEX_PREDICT_MODEL) {
      img = (float *)mlsys_alloc(2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG, sizeof *img);
      if (!img) { st = MLSYS_ERR_NOMEM; goto done; }
      if ((st = mlsys_index_trace_image(prefix, sample, m, img))) goto done;
      if ((st = mlsys_index_model_predict(opt.model, img, grid, n_grid, pred))) goto done;
    } else {
      float feat[8];
      mlsys_index_trace_features(prefix, sample, m, feat);
      if ((st = mlsys_index_knn_predict(opt.knn, feat, grid, n_grid, pred))) goto done;
    }
  }
  r->predict_s = mlsys_now() - t0;
  for (i = 0; i < n_grid; i++) { sc[i].score = isnan(pred[i]) ? 0 : pred[i]; sc[i].i = i; }
  qsort(sc, n_grid, sizeof *sc, mlsys__index_scored_cmp);
  k = opt.predictor == MLSYS_INDEX_PREDICT_NONE ? n_grid : ((size_t)opt.top_k < n_grid ? (size_t)opt.top_k : n_grid);
  r->cand = (mlsys_index_candidate *)mlsys_calloc(k, sizeof *r->cand);
  if (!r->cand) { st = MLSYS_ERR_NOMEM; goto done; }
  t0 = mlsys_now();
  for (i = 0; i < k; i++) {
    mlsys_index_candidate *c = &r->cand[i];
    char name[96];
    c->cfg = grid[sc[i].i];
    c->predicted_mops = pred[sc[i].i];
    if ((st = mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &c->cfg, bulk, n_bulk, prefix, opt.time_limit_s, &c->run))) {
      mlsys_prefix_error("tuning, candidate %s", mlsys_index_config_format(&c->cfg, name, sizeof name));
      goto done;
    }
    if (c->run.wrong) {
      st = mlsys_set_error(MLSYS_ERR_SOLVER, "tuning, candidate %s: %zu operations gave wrong answers",
                           mlsys_index_config_format(&c->cfg, name, sizeof name), c->run.wrong);
      goto done;
    }
    r->n_cand = i + 1;
    if (c->run.mops > r->cand[r->best_cand].run.mops) r->best_cand = i;
  }
  r->measure_s = mlsys_now() - t0;
  r->best = r->cand[r->best_cand].cfg;
done:
  if (st) mlsys_index_tune_result_free(r);
  mlsys_free(own_grid);
  mlsys_free(pred);
  mlsys_free(sc);
  mlsys_free(sample);
  mlsys_free(img);
  return st;
}

#endif
#endif
