/* ================================================================================================================
   DTR simulator (spec §4.3; simrd RuntimeV2Optimized with eager eviction, CheckpointPool's sampling)
   ================================================================================================================ */
static const char *const mlsys__offload_heur_names[MLSYS_OFFLOAD_H_N_] = {"dtr_eq", "dtr", "dtr_local", "lru",
                                                                         "size", "msps", "random"};
MLSYS_DEF const char *mlsys_offload_dtr_heur_name(int heuristic) {
  return heuristic >= 0 && heuristic < MLSYS_OFFLOAD_H_N_ ? mlsys__offload_heur_names[heuristic] : "?";
}

/* One PerformOp in flight: k < 0 before its inputs are locked, then the input being made resident; target is the
   storage a re-run restores (-1 for the trace's own op). Producers precede consumers, so an op is on the stack at
   most once and the stack never holds more than n_op frames. */
typedef struct { int op, k, target; } mlsys__offload_dtr_frame;

#define MLSYS__DTR_LOCKED 1   /* slot flag: this input is locked by its op's frame */
#define MLSYS__DTR_SKIP 2     /* slot flag: an output that allocates nothing (pinned, or listed twice) */

typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_dtr_opts *o;
  int heur, nv;
  /* storages (tensor versions) */
  int *vt, *prod, *last_use, *lock, *ecn;
  int64_t *m;
  double *c, *last_access;
  unsigned char *state, *pinned, *in_pool;   /* state: 0 not computed yet, 1 resident, 2 evicted */
  /* per entry of tr->ids: its storage, and the flags above */
  int *slot_v;
  unsigned char *slot_f;
  int *rd0, *rd;                 /* ops that read storage v: rd[rd0[v] .. rd0[v+1]) */
  /* union-find of evicted storages (h_DTR^eq's classes): a node per eviction */
  int *uf_par, *uf_seen, n_uf, cap_uf, uf_stamp;
  double *uf_val;
  int *pool, n_pool;
  double size_sum;
  long size_cnt;
  int *seen, stamp, *stk;        /* graph searches */
  mlsys__offload_dtr_frame *fr;
  mlsys_rng rng;
  int64_t budget, mem, peak;
  double clock, recompute;
  long n_remat, n_evict, remat_limit;
  int stopped;                   /* infeasible: r->why says why */
  mlsys_offload_simres *r;
} mlsys__offload_dtr;

static void mlsys__offload_dtr_free(mlsys__offload_dtr *D) {
  mlsys_free(D->vt); mlsys_free(D->prod); mlsys_free(D->last_use); mlsys_free(D->lock); mlsys_free(D->ecn);
  mlsys_free(D->m); mlsys_free(D->c); mlsys_free(D->last_access); mlsys_free(D->state); mlsys_free(D->pinned);
  mlsys_free(D->in_pool); mlsys_free(D->slot_v); mlsys_free(D->slot_f); mlsys_free(D->rd0); mlsys_free(D->rd);
  mlsys_free(D->uf_par); mlsys_free(D->uf_seen); mlsys_free(D->uf_val); mlsys_free(D->pool); mlsys_free(D->seen);
  mlsys_free(D->stk); mlsys_free(D->fr);
}

static void mlsys__offload_dtr_event(mlsys__offload_dtr *D, int kind, int op, int v, double h) {
  mlsys_offload_dtr_event e;
  memset(&e, 0, sizeof e);
  e.kind = kind;
  e.op = op;
  e.tensor = D->vt[v];
  e.clock = D->clock;
  e.h = h;
  D->o->on_event(D->o->event_ctx, &e);
}

static int mlsys__offload_dtr_find(mlsys__offload_dtr *D, int x) {
  while (D->uf_par[x] >= 0) {
    int p = D->uf_par[x];
    if (D->uf_par[p] >= 0) D->uf_par[x] = D->uf_par[p];   /* path halving */
    x = p;
  }
  return x;
}

/* BODY runs with u bound to each evicted neighbour of v: the inputs of v's producer, and the outputs of v's
   consumers (only those that have run can be evicted). Macros, so every search shares the two loops. */
#define MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, BODY)                                                          \
  do {                                                                                                         \
    if ((D)->prod[v] >= 0) {                                                                                   \
      const mlsys_offload_op *mlsys__po = &(D)->tr->op[(D)->prod[v]];                                          \
      int mlsys__i;                                                                                            \
      for (mlsys__i = 0; mlsys__i < mlsys__po->n_in; mlsys__i++) {                                             \
        int u = (D)->slot_v[mlsys__po->in0 + mlsys__i];                                                        \
        if ((D)->state[u] == 2) { BODY; }                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)
#define MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, BODY)                                                         \
  do {                                                                                                         \
    int mlsys__a, mlsys__i;                                                                                    \
    for (mlsys__a = (D)->rd0[v]; mlsys__a < (D)->rd0[(v) + 1]; mlsys__a++) {                                   \
      const mlsys_offload_op *mlsys__co = &(D)->tr->op[(D)->rd[mlsys__a]];                                     \
      for (mlsys__i = 0; mlsys__i < mlsys__co->n_out; mlsys__i++) {                                            \
        int u = (D)->slot_v[mlsys__co->out0 + mlsys__i];                                                       \
        if ((D)->state[u] == 2) { BODY; }                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)

static void mlsys__offload_dtr_next_stamp(int **seen, int *stamp, size_t n) {
  if (*stamp == INT_MAX) {
    memset(*seen, 0, n * sizeof **seen);
    *stamp = 0;
  }
  ++*stamp;
}

/* Pushes v's unvisited evicted parents (dir 0) or children (dir 1) on the search stack; returns its new height. */
static int mlsys__offload_dtr_push(mlsys__offload_dtr *D, int v, int dir, int sp) {
#define MLSYS__DTR_VISIT(u)                                                                                    \
  do {                                                                                                         \
    if (D->seen[u] != D->stamp) { D->seen[u] = D->stamp; D->stk[sp++] = u; }                                  \
  } while (0)
  if (dir == 0) MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, MLSYS__DTR_VISIT(u));
  else MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, MLSYS__DTR_VISIT(u));
#undef MLSYS__DTR_VISIT
  return sp;
}

/* Σ c over the evicted ancestors of v reachable through evicted storages (simrd's region_rev), plus with both the
   evicted descendants reachable the same way (region): e*(v). In a DAG the two sets are disjoint. */
static double mlsys__offload_dtr_estar(mlsys__offload_dtr *D, int v, int both) {
  double sum = 0;
  int sp, dir;
  for (dir = 0; dir < (both ? 2 : 1); dir++) {
    mlsys__offload_dtr_next_stamp(&D->seen, &D->stamp, (size_t)D->nv);
    sp = mlsys__offload_dtr_push(D, v, dir, 0);
    while (sp > 0) {
      int w = D->stk[--sp];
      sum += D->c[w];
      sp = mlsys__offload_dtr_push(D, w, dir, sp);
    }
  }
  return sum;
}

/* Σ value(E) over the distinct classes E of v's evicted neighbours. */
static double mlsys__offload_dtr_classes(mlsys__offload_dtr *D, int v) {
  double sum = 0;
  mlsys__offload_dtr_next_stamp(&D->uf_seen, &D->uf_stamp, (size_t)D->cap_uf);
#define MLSYS__DTR_ADD_CLASS(u)                                                                                \
  do {                                                                                                         \
    int mlsys__r = mlsys__offload_dtr_find(D, D->ecn[u]);                                                      \
    if (D->uf_seen[mlsys__r] != D->uf_stamp) { D->uf_seen[mlsys__r] = D->uf_stamp; sum += D->uf_val[mlsys__r]; } \
  } while (0)
  MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, MLSYS__DTR_ADD_CLASS(u));
  MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, MLSYS__DTR_ADD_CLASS(u));
#undef MLSYS__DTR_ADD_CLASS
  return sum;
}

static double mlsys__offload_dtr_ratio(double num, double den) { return den > 0 ? num / den : INFINITY; }

/* h(v) under heuristic k (the table of §4.3; the minimum is evicted). */
static double mlsys__offload_dtr_h(mlsys__offload_dtr *D, int k, int v) {
  double den = (double)D->m[v] * (D->clock - D->last_access[v]);
  switch (k) {
    case MLSYS_OFFLOAD_H_DTR_EQ: return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_classes(D, v), den);
    case MLSYS_OFFLOAD_H_DTR: return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_estar(D, v, 1), den);
    case MLSYS_OFFLOAD_H_DTR_LOCAL: return mlsys__offload_dtr_ratio(D->c[v], den);
    case MLSYS_OFFLOAD_H_LRU: return D->last_access[v];
    case MLSYS_OFFLOAD_H_SIZE: return mlsys__offload_dtr_ratio(1.0, (double)D->m[v]);
    case MLSYS_OFFLOAD_H_MSPS:
      return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_estar(D, v, 0), (double)D->m[v]);
    default: return mlsys_rng_uniform(&D->rng);
  }
}

/* CheckpointPool::evict's scan: the storage to evict for op, or -1 when nothing in the pool is evictable. */
static int mlsys__offload_dtr_choose(mlsys__offload_dtr *D, int op, double *h_out) {
  int pass;
  for (pass = 0; pass < 2; pass++) {
    int i = 0, best = -1, smax = 1;
    double hb = 0;
    if (!D->o->exhaustive && pass == 0) {
      smax = (int)floor(sqrt((double)D->n_pool));
      if (smax < 1) smax = 1;
    }
    while (i < D->n_pool) {
      int v = D->pool[i];
      if (D->state[v] != 1) {   /* evicted since it entered: swap-remove */
        D->pool[i] = D->pool[--D->n_pool];
        D->in_pool[v] = 0;
        continue;
      }
      if (D->lock[v] == 0) {
        double h = mlsys__offload_dtr_h(D, D->heur, v);
        if (D->o->on_event) {
          mlsys_offload_dtr_event e;
          memset(&e, 0, sizeof e);
          e.kind = MLSYS_OFFLOAD_DTR_EV_SCORE;
          e.op = op;
          e.tensor = D->vt[v];
          e.clock = D->clock;
          e.h = h;
          e.h_eq = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR_EQ, v);
          e.h_dtr = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR, v);
          e.h_local = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR_LOCAL, v);
          D->o->on_event(D->o->event_ctx, &e);
        }
        if (best < 0 || h < hb) { best = v; hb = h; }
        if (h <= 0) break;
      }
      i += smax > 1 ? mlsys_rng_range(&D->rng, 1, smax) : 1;
    }
    if (best >= 0) { *h_out = hb; return best; }
    if (smax == 1) break;   /* that was a full scan */
  }
  return -1;
}

/* Evict v (or free it eagerly): its memory goes, and it joins the classes of its evicted neighbours. */
static int mlsys__offload_dtr_evict(mlsys__offload_dtr *D, int v) {
  int node, r;
  if (D->n_uf == D->cap_uf) {
    int nc, *p, *s;
    double *val;
    if (D->cap_uf > INT_MAX / 4) {
      mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: more than %d evictions", D->cap_uf);
      return 0;
    }
    nc = D->cap_uf ? 2 * D->cap_uf : 1024;
    if (!(p = (int *)mlsys_realloc_array(D->uf_par, (size_t)nc, sizeof(int)))) return 0;
    D->uf_par = p;
    if (!(val = (double *)mlsys_realloc_array(D->uf_val, (size_t)nc, sizeof(double)))) return 0;
    D->uf_val = val;
    if (!(s = (int *)mlsys_realloc_array(D->uf_seen, (size_t)nc, sizeof(int)))) return 0;
    memset(s + D->cap_uf, 0, (size_t)(nc - D->cap_uf) * sizeof(int));
    D->uf_seen = s;
    D->cap_uf = nc;
  }
  D->state[v] = 2;
  D->mem -= D->m[v];
  node = D->n_uf++;
  D->uf_par[node] = -1;
  D->uf_val[node] = D->c[v];
  D->ecn[v] = node;
  /* simrd's EqClassNode.merge(neighbour's class, v's class): the neighbour's root hangs under v's */
#define MLSYS__DTR_MERGE(u)                                                                                    \
  do {                                                                                                         \
    int mlsys__l = mlsys__offload_dtr_find(D, D->ecn[u]);                                                      \
    r = mlsys__offload_dtr_find(D, node);                                                                      \
    if (mlsys__l != r) { D->uf_par[mlsys__l] = r; D->uf_val[r] += D->uf_val[mlsys__l]; }                       \
  } while (0)
  MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, if (u != v) MLSYS__DTR_MERGE(u));
  MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, if (u != v) MLSYS__DTR_MERGE(u));
#undef MLSYS__DTR_MERGE
  return 1;
}

static void mlsys__offload_dtr_pool_add(mlsys__offload_dtr *D, int v) {
  double mean = D->size_cnt ? D->size_sum / (double)D->size_cnt : 0;
  int ok = D->m[v] > 0 && (D->o->keep_small || D->size_cnt == 0 || (double)D->m[v] >= 0.01 * mean);
  D->size_sum += (double)D->m[v];
  D->size_cnt++;
  if (ok && !D->in_pool[v]) {
    D->pool[D->n_pool++] = v;
    D->in_pool[v] = 1;
  }
}

static void mlsys__offload_dtr_stop(mlsys__offload_dtr *D, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static void mlsys__offload_dtr_stop(mlsys__offload_dtr *D, const char *fmt, ...) {
  va_list ap;
  D->stopped = 1;
  D->r->feasible = 0;
  va_start(ap, fmt);
  vsnprintf(D->r->why, sizeof D->r->why, fmt, ap);
  va_end(ap);
}

/* PerformOp(top) with its rematerialisations (spec §4.3's core loop). */
static mlsys_status mlsys__offload_dtr_perform(mlsys__offload_dtr *D, int top) {
  const mlsys_offload_trace *tr = D->tr;
  int sp = 0, s;
  D->fr[sp].op = top;
  D->fr[sp].k = -1;
  D->fr[sp].target = -1;
  sp = 1;
  while (sp > 0) {
    mlsys__offload_dtr_frame *F = &D->fr[sp - 1];
    const mlsys_offload_op *op = &tr->op[F->op];
    int64_t need;
    int pushed = 0;
    if (F->k < 0) {
      for (s = op->in0; s < op->in0 + op->n_in; s++) D->last_access[D->slot_v[s]] = D->clock;
      for (s = op->in0; s < op->in0 + op->n_in; s++) {
        int v = D->slot_v[s];
        D->slot_f[s] &= (unsigned char)~MLSYS__DTR_LOCKED;
        if (!D->pinned[v] && D->state[v] == 1) { D->lock[v]++; D->slot_f[s] |= MLSYS__DTR_LOCKED; }
      }
      F->k = 0;
    }
    for (; F->k < op->n_in; F->k++) {
      int v = D->slot_v[op->in0 + F->k];
      if (D->pinned[v] || (D->slot_f[op->in0 + F->k] & MLSYS__DTR_LOCKED)) continue;
      if (D->state[v] == 1) {   /* restored meanwhile (a sibling of an earlier re-run) */
        D->lock[v]++;
        D->slot_f[op->in0 + F->k] |= MLSYS__DTR_LOCKED;
        continue;
      }
      if (D->state[v] != 2 || D->prod[v] < 0 || D->prod[v] >= F->op)
        return mlsys_set_error(MLSYS_ERR_ARG, "DTR: op %d reads tensor %d before any op writes it", F->op, D->vt[v]);
      if (D->n_remat >= D->remat_limit) {
        mlsys__offload_dtr_stop(D, "more than %ld rematerialisations (op %d needs tensor %d again)", D->remat_limit,
                                F->op, D->vt[v]);
        return MLSYS_OK;
      }
      D->n_remat++;
      if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_REMAT, D->prod[v], v, 0);
      D->fr[sp].op = D->prod[v];
      D->fr[sp].k = -1;
      D->fr[sp].target = v;
      sp++;
      pushed = 1;
      break;
    }
    if (pushed) continue;
    need = op->workspace;
    for (s = op->out0; s < op->out0 + op->n_out; s++)
      if (!(D->slot_f[s] & MLSYS__DTR_SKIP)) need += D->m[D->slot_v[s]];
    while (need > D->budget - D->mem) {
      double h = 0;
      int v = mlsys__offload_dtr_choose(D, F->op, &h);
      if (v < 0) {
        mlsys__offload_dtr_stop(D, "out of memory at op %d (%s)%s: it needs %lld bytes; nothing evictable is left in "
                                "the %lld of the %lld-byte budget in use", F->op, mlsys_offload_op_name(tr, F->op),
                                F->target >= 0 ? " (a rematerialisation)" : "", (long long)need, (long long)D->mem,
                                (long long)D->budget);
        return MLSYS_OK;
      }
      if (!mlsys__offload_dtr_evict(D, v)) return mlsys_last_status();
      D->n_evict++;
      if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_EVICT, F->op, v, h);
    }
    D->clock += op->time_us;
    if (F->target >= 0) D->recompute += op->time_us;
    if (D->o->on_event) {
      mlsys_offload_dtr_event e;
      memset(&e, 0, sizeof e);
      e.kind = MLSYS_OFFLOAD_DTR_EV_RUN;
      e.op = F->op;
      e.tensor = F->target >= 0 ? D->vt[F->target] : -1;
      e.clock = D->clock;
      D->o->on_event(D->o->event_ctx, &e);
    }
    D->mem += need;
    if (D->mem > D->peak) D->peak = D->mem;
    D->mem -= op->workspace;
    for (s = op->out0; s < op->out0 + op->n_out; s++) {
      int v = D->slot_v[s];
      if (D->slot_f[s] & MLSYS__DTR_SKIP) continue;
      if (D->state[v] == 1) { D->mem -= D->m[v]; continue; }   /* a re-run's duplicate of a resident sibling */
      if (D->state[v] == 2) {   /* restored: it leaves its class, which keeps the others' value */
        int root = mlsys__offload_dtr_find(D, D->ecn[v]);
        D->uf_val[root] -= D->c[v];
        D->ecn[v] = -1;
      } else {
        D->last_access[v] = D->clock;   /* simrd stamps a new tensor; a re-run keeps its outputs' stamps */
      }
      D->state[v] = 1;
      mlsys__offload_dtr_pool_add(D, v);
    }
    for (s = op->in0; s < op->in0 + op->n_in; s++)
      if (D->slot_f[s] & MLSYS__DTR_LOCKED) {
        D->lock[D->slot_v[s]]--;
        D->slot_f[s] &= (unsigned char)~MLSYS__DTR_LOCKED;
      }
    if (F->target < 0 && !D->o->no_eager) {
      int a;
      for (a = 0; a < op->n_in + op->n_out; a++) {
        int v = D->slot_v[a < op->n_in ? op->in0 + a : op->out0 + a - op->n_in];
        if (!D->pinned[v] && D->state[v] == 1 && D->last_use[v] == F->op && D->lock[v] == 0) {
          if (!mlsys__offload_dtr_evict(D, v)) return mlsys_last_status();
          if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_FREE, F->op, v, 0);
        }
      }
    }
    sp--;
  }
  return MLSYS_OK;
}

/* Storages, their producers, consumers and last uses (module comment in the API). */
static mlsys_status mlsys__offload_dtr_build(mlsys__offload_dtr *D, const mlsys_offload_facts *f) {
  const mlsys_offload_trace *tr = D->tr;
  int *pv = NULL, *cur = NULL, i, j, nv = 0;
  long s, nw = 0;
  unsigned char *pin_t = NULL;
  mlsys_status st = MLSYS_OK;
  if (tr->n_ids > INT_MAX / 2) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: a trace of %ld operands", tr->n_ids);
  pin_t = (unsigned char *)mlsys_calloc((size_t)tr->n_t + 1, 1);
  pv = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  cur = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  if (!pin_t || !pv || !cur) { st = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < tr->n_t; i++) {
    int k = tr->t[i].kind;
    pin_t[i] = k == MLSYS_OFFLOAD_T_PARAM || k == MLSYS_OFFLOAD_T_INPUT || k == MLSYS_OFFLOAD_T_OPT ||
               f->first_write[i] < 0;
  }
  for (j = 0; j < tr->n_op; j++)
    for (i = 0; i < tr->op[j].n_in; i++) {
      int t = tr->ids[tr->op[j].in0 + i];
      if (f->first_write[t] == j) pin_t[t] = 1;   /* read by its first writer: it existed before */
    }
  for (i = 0; i < tr->n_t; i++) {
    pv[i] = pin_t[i] ? nv++ : -1;
    cur[i] = -1;
  }
  for (j = 0; j < tr->n_op; j++) nw += tr->op[j].n_out;
  if (nw + nv > INT_MAX / 2) { st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: too many tensor writes"); goto done; }
  nw += nv + 1;   /* + 1: no zero-sized allocations for an empty trace */
  D->vt = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->prod = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->last_use = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->lock = (int *)mlsys_calloc((size_t)nw, sizeof(int));
  D->ecn = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->m = (int64_t *)mlsys_alloc((size_t)nw, sizeof(int64_t));
  D->c = (double *)mlsys_alloc((size_t)nw, sizeof(double));
  D->last_access = (double *)mlsys_calloc((size_t)nw, sizeof(double));
  D->state = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->pinned = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->in_pool = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->pool = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->seen = (int *)mlsys_calloc((size_t)nw, sizeof(int));
  D->stk = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->rd0 = (int *)mlsys_calloc((size_t)nw + 1, sizeof(int));
  D->slot_v = (int *)mlsys_alloc((size_t)tr->n_ids + 1, sizeof(int));
  D->slot_f = (unsigned char *)mlsys_calloc((size_t)tr->n_ids + 1, 1);
  D->rd = (int *)mlsys_alloc((size_t)tr->n_ids + 1, sizeof(int));
  D->fr = (mlsys__offload_dtr_frame *)mlsys_alloc((size_t)tr->n_op + 1, sizeof *D->fr);
  if (!D->vt || !D->prod || !D->last_use || !D->lock || !D->ecn || !D->m || !D->c || !D->last_access || !D->state ||
      !D->pinned || !D->in_pool || !D->pool || !D->seen || !D->stk || !D->rd0 || !D->slot_v || !D->slot_f || !D->rd ||
      !D->fr) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (i = 0; i < tr->n_t; i++)
    if (pv[i] >= 0) {
      int v = pv[i];
      D->vt[v] = i;
      D->prod[v] = -1;
      D->last_use[v] = tr->n_op;
      D->m[v] = tr->t[i].bytes;
      D->c[v] = 0;
      D->ecn[v] = -1;
      D->state[v] = 1;
      D->pinned[v] = 1;
    }
  for (j = 0; j < tr->n_op; j++) {
    const mlsys_offload_op *o = &tr->op[j];
    for (s = o->in0; s < o->in0 + o->n_in; s++) {
      int t = tr->ids[s], v = pin_t[t] ? pv[t] : cur[t];
      if (v < 0) {   /* facts would have made it pinned: a defensive check */
        st = mlsys_set_error(MLSYS_ERR_ARG, "DTR: op %d reads tensor %d before it exists", j, t);
        goto done;
      }
      D->slot_v[s] = v;
      D->last_use[v] = j;
    }
    for (s = o->out0; s < o->out0 + o->n_out; s++) {
      int t = tr->ids[s], v;
      if (pin_t[t]) {
        v = pv[t];
        D->slot_f[s] = MLSYS__DTR_SKIP;
      } else if (cur[t] >= 0 && D->prod[cur[t]] == j) {
        v = cur[t];
        D->slot_f[s] = MLSYS__DTR_SKIP;
      } else {
        v = cur[t] = nv++;
        D->vt[v] = t;
        D->prod[v] = j;
        D->last_use[v] = j;
        D->m[v] = tr->t[t].bytes;
        D->c[v] = o->time_us;
        D->ecn[v] = -1;
      }
      D->slot_v[s] = v;
    }
  }
  /* the last version of a tensor lives as long as facts say (a gradient nothing reads: to the end) */
  for (i = 0; i < tr->n_t; i++)
    if (cur[i] >= 0 && f->last_use[i] > D->last_use[cur[i]]) D->last_use[cur[i]] = f->last_use[i];
  /* consumers, each op once per storage */
  for (j = 0; j < tr->n_op; j++)
    for (s = tr->op[j].in0; s < tr->op[j].in0 + tr->op[j].n_in; s++) {
      int v = D->slot_v[s];
      if (D->seen[v] != j + 1) { D->seen[v] = j + 1; D->rd0[v + 1]++; }
    }
  for (i = 0; i < nv; i++) D->rd0[i + 1] += D->rd0[i];
  memset(D->seen, 0, (size_t)nv * sizeof(int));
  memcpy(D->stk, D->rd0, (size_t)nv * sizeof(int));   /* fill cursors */
  for (j = 0; j < tr->n_op; j++)
    for (s = tr->op[j].in0; s < tr->op[j].in0 + tr->op[j].n_in; s++) {
      int v = D->slot_v[s];
      if (D->seen[v] != j + 1) { D->seen[v] = j + 1; D->rd[D->stk[v]++] = j; }
    }
  memset(D->seen, 0, (size_t)nv * sizeof(int));
  D->nv = nv;
done:
  mlsys_free(pin_t);
  mlsys_free(pv);
  mlsys_free(cur);
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "DTR: out of memory for a trace of %d ops", tr->n_op);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_dtr(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_dtr_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_dtr D;
  mlsys_offload_dtr_opts def;
  mlsys_offload_facts f;
  mlsys_status st;
  int j, v;
  int64_t pinned = 0;
  memset(r, 0, sizeof *r);
  memset(&D, 0, sizeof D);
  if (!o) {
    memset(&def, 0, sizeof def);
    o = &def;
  }
  if (o->heuristic < 0 || o->heuristic >= MLSYS_OFFLOAD_H_N_)
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: unknown heuristic %d (0..%d)", o->heuristic, MLSYS_OFFLOAD_H_N_ - 1);
  if (o->budget < 0 || o->remat_limit < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: budget %lld bytes and remat limit %ld must be ≥ 0", (long long)o->budget,
                           o->remat_limit);
  if (!o->budget && (!hw || hw->gpu_bytes <= 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: no budget and no GPU memory size (hw->gpu_bytes)");
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  D.tr = tr;
  D.o = o;
  D.r = r;
  D.heur = o->heuristic;
  D.budget = o->budget ? o->budget : hw->gpu_bytes - tr->fixed_bytes;
  if (D.budget < 0) D.budget = 0;
  D.remat_limit = o->remat_limit ? o->remat_limit : 100000000L;
  mlsys_rng_seed(&D.rng, o->seed);
  r->feasible = 1;
  r->compute_us = f.compute_us;
  r->n_blocks = 1;
  if ((st = mlsys__offload_dtr_build(&D, &f))) goto done;
  for (v = 0; v < D.nv; v++)
    if (D.pinned[v]) pinned += D.m[v];
  D.mem = D.peak = pinned;
  if (pinned > D.budget) {
    mlsys__offload_dtr_stop(&D, "out of memory before op 0: the pinned tensors (weights, inputs, optimizer state) "
                            "need %lld bytes, the budget is %lld", (long long)pinned, (long long)D.budget);
  }
  for (j = 0; j < tr->n_op && !D.stopped; j++)
    if ((st = mlsys__offload_dtr_perform(&D, j))) goto done;
  r->time_us = D.clock;
  r->recompute_us = D.recompute;
  r->n_remat = (int)(D.n_remat < INT_MAX ? D.n_remat : INT_MAX);
  r->n_evictions = (int)(D.n_evict < INT_MAX ? D.n_evict : INT_MAX);
  r->peak_bytes = tr->fixed_bytes + D.peak;
done:
  mlsys__offload_dtr_free(&D);
  mlsys_offload_facts_free(&f);
  if (st) memset(r, 0, sizeof *r);
  return st;
}

#undef MLSYS__DTR_FOR_EVICTED_PARENTS
#undef MLSYS__DTR_FOR_EVICTED_CHILDREN
#undef MLSYS__DTR_LOCKED
#undef MLSYS__DTR_SKIP
