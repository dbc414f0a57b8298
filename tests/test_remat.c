/* tests/test_remat.c — mlsys_remat.h (Checkmate optimal rematerialization) against independent oracles.

   The centre of this file is an exhaustive optimiser written here from the spec's schedule semantics (spec
   §3.1 and §3.6), sharing no code with the library: a layered dynamic programme over frontier-advancing stages
   whose state is the resident set S_t. Every MILP optimum is compared with it (chains, the spec's T8 network,
   random training graphs, graphs with fixed memory, norecompute flags). Around it: the spec's hand-verified
   tables (T1-T8), the second solver (the CBC backend and the cbc program on exported models), the simulator
   against the model (T9), warm-start points, LP rounding (T10), monotonicity (T11), baselines (T12), revolve
   counts (T13), articulation points against a brute-force definition (T14), execution plans and mutations
   (T15, T18).

   The library's implementation is in this translation unit, so internal functions (mlsys__cm_build,
   mlsys__cm_point, mlsys__remat_baseline, ...) are reachable where a test needs them. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

#include <unistd.h>

/* ---------------------------------------------------------------------------------------------------------------
   Small helpers
   --------------------------------------------------------------------------------------------------------------- */
static const char *lasterr(void) {
  static char buf[400];
  snprintf(buf, sizeof buf, "%.399s", mlsys_last_error());
  return buf;
}

static int have_tool(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "/usr/bin/%s", name);
  return access(path, X_OK) == 0;
}

static double sum_cost(const mlsys_remat_graph *g) {
  double s = 0;
  int v;
  for (v = 0; v < g->dag.n; v++) s += g->dag.cost[v];
  return s;
}

/* The number after "smallest feasible budget is " / "smallest feasible budget found is " in an error text;
   *proven = 1 for the "is" form. Returns 0 when the text has no such number. */
static int parse_min_budget(const char *msg, unsigned long long *b, int *proven) {
  const char *p = strstr(msg, "smallest feasible budget ");
  char *end;
  if (!p) return 0;
  p += strlen("smallest feasible budget ");
  if (!strncmp(p, "is ", 3)) { *proven = 1; p += 3; }
  else if (!strncmp(p, "found is ", 9)) { *proven = 0; p += 9; }
  else return 0;
  *b = strtoull(p, &end, 10);
  return end != p;
}

/* ---------------------------------------------------------------------------------------------------------------
   Graphs
   --------------------------------------------------------------------------------------------------------------- */
/* The spec's T8 network (the Checkmate repo's Keras "test" net, gradient-of-output convention of spec §2.3):
   f0 conv -> f1, f2 parallel convs -> f3 add -> f4 GAP -> f5 dense -> loss 6; bwd(u) = 12 - u depends on
   bwd(v) and fwd(v) for every consumer v of u and on fwd(u); bwd(f5) depends on the loss. */
static mlsys_status make_t8(mlsys_remat_graph *g) {
  static const int d1[] = {0}, d2[] = {0}, d3[] = {1, 2}, d4[] = {3}, d5[] = {4}, d6[] = {5};
  static const int d7[] = {5, 6};            /* bwd(f5) <- f5, loss */
  static const int d8[] = {4, 5, 7};         /* bwd(f4) <- f4, f5, bwd(f5) */
  static const int d9[] = {3, 4, 8};         /* bwd(f3) <- f3, f4, bwd(f4) */
  static const int d10[] = {2, 3, 9};        /* bwd(f2) <- f2, f3, bwd(f3) */
  static const int d11[] = {1, 3, 9};        /* bwd(f1) <- f1, f3, bwd(f3) */
  static const int d12[] = {0, 1, 2, 10, 11};/* bwd(f0) <- f0, f1, bwd(f1), f2, bwd(f2) */
  static const double C[13] = {1, 4, 4, 1, 1, 1, 0, 2, 2, 2, 8, 8, 2};
  static const uint64_t M[13] = {1, 2, 2, 2, 1, 1, 1, 1, 1, 2, 2, 2, 1};
  static const char *names[13] = {"conv", "conv_a", "conv_b", "add", "gap", "dense", "loss",
                                  "g_dense", "g_gap", "g_add", "g_conv_b", "g_conv_a", "g_conv"};
  const int *deps[13] = {NULL, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12};
  static const int nd[13] = {0, 1, 1, 2, 1, 1, 1, 2, 3, 3, 3, 3, 5};
  mlsys_remat_node nodes[13];
  int v;
  memset(nodes, 0, sizeof nodes);
  for (v = 0; v < 13; v++) {
    nodes[v].name = names[v];
    nodes[v].kind = v < 6 ? MLSYS_REMAT_F : v == 6 ? MLSYS_REMAT_L : MLSYS_REMAT_B;
    nodes[v].cost = C[v];
    nodes[v].mem = M[v];
    nodes[v].ndeps = nd[v];
    nodes[v].deps = deps[v];
  }
  return mlsys_remat_graph_create(13, nodes, g);
}

/* A random training graph with L forward nodes (canonical layout: forward 0..L-1, loss L, bwd(u) = 2L - u):
   every forward node > 0 reads 1-2 earlier forward nodes; every forward sink (the last node included) feeds the
   loss; backward nodes follow the gradient-of-output convention (bwd(u) <- bwd(v), fwd(v) for each forward
   consumer v of u; <- loss when the loss consumes u; <- fwd(u)). Costs 1..5, sizes 1..4. */
static mlsys_status make_random_training(mlsys_rng *r, int L, mlsys_remat_graph *g) {
  int n = 2 * L + 1, v, u, j, deps[40][40], nd[40];
  int fin[16][2], nfin[16], consumers[16][16], ncons[16], to_loss[16];
  mlsys_remat_node nodes[40];
  memset(nodes, 0, sizeof nodes);
  memset(nd, 0, sizeof nd);
  memset(ncons, 0, sizeof ncons);
  for (v = 0; v < L; v++) {
    nfin[v] = 0;
    if (v > 0) {
      int want = mlsys_rng_range(r, 1, v >= 2 ? 2 : 1);
      /* the previous node first most of the time, so the graphs look like networks */
      fin[v][nfin[v]++] = mlsys_rng_below(r, 4) ? v - 1 : (int)mlsys_rng_below(r, (uint64_t)v);
      while (nfin[v] < want) {
        int c = (int)mlsys_rng_below(r, (uint64_t)v);
        if (c != fin[v][0]) fin[v][nfin[v]++] = c;
      }
    }
    for (j = 0; j < nfin[v]; j++) consumers[fin[v][j]][ncons[fin[v][j]]++] = v;
  }
  for (v = 0; v < L; v++) to_loss[v] = ncons[v] == 0;   /* sinks (always includes L-1) */
  for (v = 0; v < L; v++) {
    for (j = 0; j < nfin[v]; j++) deps[v][nd[v]++] = fin[v][j];
    nodes[v].kind = MLSYS_REMAT_F;
  }
  for (v = 0; v < L; v++)
    if (to_loss[v]) deps[L][nd[L]++] = v;
  nodes[L].kind = MLSYS_REMAT_L;
  for (u = 0; u < L; u++) {
    int b = 2 * L - u;
    nodes[b].kind = MLSYS_REMAT_B;
    deps[b][nd[b]++] = u;
    for (j = 0; j < ncons[u]; j++) {
      deps[b][nd[b]++] = 2 * L - consumers[u][j];
      deps[b][nd[b]++] = consumers[u][j];
    }
    if (to_loss[u]) deps[b][nd[b]++] = L;
  }
  for (v = 0; v < n; v++) {
    nodes[v].cost = v == L ? mlsys_rng_range(r, 0, 2) : mlsys_rng_range(r, 1, 5);
    nodes[v].mem = (uint64_t)mlsys_rng_range(r, 1, 4);
    nodes[v].ndeps = nd[v];
    nodes[v].deps = deps[v];
  }
  return mlsys_remat_graph_create(n, nodes, g);
}

/* Undirected adjacency of the graph's dependency edges, for hand checks. */
static int n_edges(const mlsys_remat_graph *g) { return g->dag.in_off[g->dag.n]; }

/* ---------------------------------------------------------------------------------------------------------------
   The independent exhaustive oracle (spec §3.1, §3.6), for n ≤ 31 nodes held as bits of a uint32.

   A schedule is a sequence of stages t = 0..n-1. Entering stage t the resident set is S_t ⊆ {0..t-1} (S_0 = ∅);
   stage t computes the set R_t ∋ t and hands S_{t+1} ⊆ {0..t} ⊆ S_t ∪ R_t to the next stage (no S_n). Memory
   of a stage (the MILP accounting of spec §3.2/§3.6): start with Σ M over S_t; for k = 0..t with k ∈ R_t add M_k
   (the peak is taken here), then free every input i of k that is not in S_{t+1} and has no user j, k < j ≤ t, in
   R_t; whatever is not in S_{t+1} is dropped at the stage end. A stage is allowed iff its peak ≤ the budget and
   every computed node's inputs are resident or computed earlier in the stage.

   The search fixes R_t to the minimal closure of (S_t, S_{t+1}): node t, every carried value not resident, and,
   scanning right to left, every input of a computed node that is neither resident nor computed. This loses no
   optimum. Take any valid schedule (R, S) and rebuild it backwards: R'_t = the closure of (S_t, S'_{t+1}) and
   S'_t = S_t ∩ (values read by R'_t ∪ S'_{t+1}) (the closure only consults the resident values it reads or
   carries, so R'_t is also the closure of (S'_t, S'_{t+1})). Every valid R_t contains that closure, so
   R'_t ⊆ R_t and the cost does not rise (C ≥ 0). Memory does not rise either: a value live at position k of
   stage t in (R', S') is resident or computed by k in (R, S) too, and it is not freed before k there, because it
   is carried on (S'_{t+1} ⊆ S_{t+1}) or its last reader in R'_t, which is also in R_t, comes at or after k (a value
   with neither is not kept in S'_t and, if computed, is node t itself); (R', S') never computes a resident value,
   so it has no double counts. Note that an extra recomputation on its own CAN lower a later memory level in the
   MILP accounting (a node that reads a resident, uncarried value frees it); but then dropping that value from
   S_t is better still, which is what the rebuild does. The rebuilt schedules also satisfy: every value resident
   in a stage is read in it or carried on ("trim-normal"); the search enumerates only those, and only S_{t+1}
   with Σ_{S_{t+1}} M + [t ∉ S_{t+1}]·M_t ≤ budget (all of them are live right after node t is computed). With
   norecompute restrictions R' ⊆ R keeps them, so the restricted search is exact too.

   Layer by layer: layer t maps each reachable S_t to the least cost of stages 0..t-1 (so each state is expanded
   once); a state or partial stage whose cost-so-far + Σ_{t' ≥ t} C_{t'} exceeds the upper bound is pruned
   (strictly: the oracle still finds a schedule at the bound itself, so it never returns the bound it was given
   without its own witness).
   --------------------------------------------------------------------------------------------------------------- */
#define OR_MAXN 31
typedef struct {
  int n;
  uint32_t inmask[OR_MAXN], usermask[OR_MAXN];
  int nin[OR_MAXN], in[OR_MAXN][OR_MAXN];
  double C[OR_MAXN], rest[OR_MAXN + 1];   /* rest[t] = Σ_{t' ≥ t} C */
  uint64_t M[OR_MAXN];
  int norec[OR_MAXN];
} or_graph;

static void or_from_graph(const mlsys_remat_graph *g, int restrict_norecompute, or_graph *o) {
  const mlsys_dag *d = &g->dag;
  int v, j;
  memset(o, 0, sizeof *o);
  o->n = d->n;
  for (v = 0; v < d->n; v++) {
    o->C[v] = d->cost[v];
    o->M[v] = d->size[v];
    o->norec[v] = restrict_norecompute && (g->flags[v] & MLSYS_REMAT_NORECOMPUTE);
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
      int u = d->in[j];
      o->in[v][o->nin[v]++] = u;
      o->inmask[v] |= 1u << u;
      o->usermask[u] |= 1u << v;
    }
  }
  o->rest[d->n] = 0;
  for (v = d->n - 1; v >= 0; v--) o->rest[v] = o->rest[v + 1] + o->C[v];
}

/* Minimal closure of stage t for (S_t, S_{t+1}) (S_{t+1} = 0 for the last stage). */
static uint32_t or_closure(const or_graph *o, int t, uint32_t St, uint32_t Sn) {
  uint32_t R = (1u << t) | (Sn & ~St);
  int v;
  for (v = t; v >= 0; v--)
    if (R >> v & 1) R |= o->inmask[v] & ~St;
  return R;
}

/* Peak of stage t under the MILP accounting (R computed, St resident, Sn carried). */
static uint64_t or_stage_peak(const or_graph *o, int t, uint32_t St, uint32_t R, uint32_t Sn) {
  uint64_t mem = 0, peak;
  int i, k, j;
  for (i = 0; i < t; i++)
    if (St >> i & 1) mem += o->M[i];
  peak = mem;
  for (k = 0; k <= t; k++) {
    if (!(R >> k & 1)) continue;
    mem += o->M[k];
    if (mem > peak) peak = mem;
    for (j = 0; j < o->nin[k]; j++) {
      int u = o->in[k][j];
      uint32_t later = o->usermask[u] & R & ~((2u << k) - 1u);   /* users j > k computed in this stage */
      if (!(Sn >> u & 1) && !later) mem -= o->M[u];
    }
  }
  return peak;
}

typedef struct { uint32_t key, parent; double cost; } or_entry;
typedef struct { or_entry *e; int *slot; size_t cap, cnt; } or_layer;

static void or_layer_init(or_layer *L) {
  L->cap = 64;
  L->cnt = 0;
  L->e = (or_entry *)malloc(L->cap * sizeof *L->e);
  L->slot = (int *)malloc(L->cap * 2 * sizeof(int));
  memset(L->slot, 0xff, L->cap * 2 * sizeof(int));
}
static void or_layer_free(or_layer *L) { free(L->e); free(L->slot); memset(L, 0, sizeof *L); }
static size_t or_hash(uint32_t k, size_t mask) { return (size_t)((k * 2654435761u) ^ (k >> 13)) & mask; }
static void or_layer_put(or_layer *L, uint32_t key, double cost, uint32_t parent) {
  size_t mask = L->cap * 2 - 1, h = or_hash(key, mask);
  while (L->slot[h] >= 0) {
    or_entry *e = &L->e[L->slot[h]];
    if (e->key == key) {
      if (cost < e->cost) { e->cost = cost; e->parent = parent; }
      return;
    }
    h = (h + 1) & mask;
  }
  if (L->cnt == L->cap) {   /* grow and rehash */
    size_t i;
    L->cap *= 2;
    L->e = (or_entry *)realloc(L->e, L->cap * sizeof *L->e);
    free(L->slot);
    L->slot = (int *)malloc(L->cap * 2 * sizeof(int));
    memset(L->slot, 0xff, L->cap * 2 * sizeof(int));
    mask = L->cap * 2 - 1;
    for (i = 0; i < L->cnt; i++) {
      size_t hh = or_hash(L->e[i].key, mask);
      while (L->slot[hh] >= 0) hh = (hh + 1) & mask;
      L->slot[hh] = (int)i;
    }
    h = or_hash(key, mask);
    while (L->slot[h] >= 0) h = (h + 1) & mask;
  }
  L->e[L->cnt].key = key;
  L->e[L->cnt].cost = cost;
  L->e[L->cnt].parent = parent;
  L->slot[h] = (int)L->cnt++;
}
static const or_entry *or_layer_get(const or_layer *L, uint32_t key) {
  size_t mask = L->cap * 2 - 1, h = or_hash(key, mask);
  while (L->slot[h] >= 0) {
    if (L->e[L->slot[h]].key == key) return &L->e[L->slot[h]];
    h = (h + 1) & mask;
  }
  return NULL;
}

typedef struct {
  const or_graph *o;
  int t;
  uint32_t St;
  uint64_t B;
  double base, ub;
  uint32_t carry, comp, readm;
  uint64_t carry_mem;
  double cost;
  or_layer *next;
  double *final_cost;
  uint32_t *final_parent;
  long leaves;
} or_enum;

static void or_rec(or_enum *E, int v) {
  const or_graph *o = E->o;
  int c;
  if (v < 0) {
    uint32_t Sn = E->carry;
    E->leaves++;
    if (or_stage_peak(o, E->t, E->St, E->comp, Sn) > E->B) return;
    if (E->t == o->n - 1) {
      if (E->base + E->cost < *E->final_cost) { *E->final_cost = E->base + E->cost; *E->final_parent = E->St; }
    } else {
      or_layer_put(E->next, Sn, E->base + E->cost, E->St);
    }
    return;
  }
  for (c = 1; c >= 0; c--) {
    int inS = (int)(E->St >> v & 1), read = (int)(E->readm >> v & 1), computed;
    uint32_t save_carry = E->carry, save_comp = E->comp, save_read = E->readm;
    uint64_t save_mem = E->carry_mem;
    double save_cost = E->cost;
    if (c) {
      if (E->t == o->n - 1) continue;                       /* nothing is carried out of the last stage */
      if (v == E->t) { /* M_t is counted either way (see the start of the enumeration) */ }
      else if (E->carry_mem + o->M[v] > E->B) continue;     /* prune (a) */
    }
    if (v == E->t) computed = 1;
    else {
      if (!c && inS && !read) continue;                     /* trim-normal: resident values are read or carried */
      computed = !inS && (c || read);
      if (computed && o->norec[v]) continue;                /* norecompute: only in its own stage */
    }
    if (c) { E->carry |= 1u << v; if (v != E->t) E->carry_mem += o->M[v]; }
    if (computed) {
      E->comp |= 1u << v;
      E->readm |= o->inmask[v];
      E->cost += o->C[v];
      if (E->base + E->cost + o->rest[E->t + 1] > E->ub) goto restore;   /* prune (b) */
    }
    or_rec(E, v - 1);
  restore:
    E->carry = save_carry; E->comp = save_comp; E->readm = save_read; E->carry_mem = save_mem; E->cost = save_cost;
  }
}

typedef struct {
  double cost;          /* optimum, INFINITY when no schedule fits */
  uint32_t S[OR_MAXN];  /* an optimal schedule: S[t] resident entering stage t, R[t] computed in stage t */
  uint32_t R[OR_MAXN];
  long states, leaves;
} or_result;

/* Exact optimum at an activation budget B (bytes, fixed memory excluded). ub: an upper bound on the optimum
   (INFINITY if none); pruning is strict, and with no schedule of cost ≤ ub the search is repeated without it. */
static void oracle_solve(const or_graph *o, uint64_t B, double ub, or_result *res) {
  or_layer layers[OR_MAXN + 1];
  double final_cost = INFINITY;
  uint32_t final_parent = 0;
  int t, n = o->n;
  memset(res, 0, sizeof *res);
  for (t = 0; t <= n; t++) or_layer_init(&layers[t]);
  or_layer_put(&layers[0], 0, 0, 0);
  for (t = 0; t < n; t++) {
    size_t i;
    res->states += (long)layers[t].cnt;
    for (i = 0; i < layers[t].cnt; i++) {
      or_enum E;
      const or_entry *e = &layers[t].e[i];
      if (e->cost + o->rest[t] > ub) continue;
      memset(&E, 0, sizeof E);
      E.o = o; E.t = t; E.St = e->key; E.B = B; E.base = e->cost; E.ub = ub;
      E.next = &layers[t + 1]; E.final_cost = &final_cost; E.final_parent = &final_parent;
      E.carry_mem = o->M[t];
      if (E.carry_mem > B) continue;
      or_rec(&E, t);
      res->leaves += E.leaves;
    }
  }
  res->cost = final_cost;
  if (final_cost < INFINITY) {   /* walk the parents back */
    uint32_t S = final_parent, Sn = 0;
    for (t = n - 1; t >= 0; t--) {
      res->S[t] = S;
      res->R[t] = or_closure(o, t, S, Sn);
      if (t > 0) {
        const or_entry *e = or_layer_get(&layers[t], S);
        Sn = S;
        S = e ? e->parent : 0;
      }
    }
  }
  for (t = 0; t <= n; t++) or_layer_free(&layers[t]);
  if (final_cost == INFINITY && ub < INFINITY) oracle_solve(o, B, INFINITY, res);
}

static double oracle_opt(const mlsys_remat_graph *g, uint64_t B, int restrict_norecompute) {
  or_graph o;
  or_result r;
  or_from_graph(g, restrict_norecompute, &o);
  oracle_solve(&o, B, INFINITY, &r);
  return r.cost;
}

/* max over nodes of its bytes plus its inputs' bytes: no schedule fits below it (computed here). */
static uint64_t oracle_single_op(const or_graph *o) {
  uint64_t best = 0;
  int v, j;
  for (v = 0; v < o->n; v++) {
    uint64_t s = o->M[v];
    for (j = 0; j < o->nin[v]; j++) s += o->M[o->in[v][j]];
    if (s > best) best = s;
  }
  return best;
}

/* The smallest activation budget with a schedule (upwards from the single-operator bound). */
static uint64_t oracle_min_budget(const or_graph *o) {
  uint64_t B = oracle_single_op(o);
  for (;; B++) {
    or_result r;
    oracle_solve(o, B, INFINITY, &r);
    if (r.cost < INFINITY) return B;
  }
}

/* The "keep every value until its last use" peak, computed here: in stage t the resident values are those
   computed earlier whose last user is ≥ t; node t is added; nothing is recomputed. */
static uint64_t keep_all_peak(const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  uint64_t peak = 0;
  int t, i, n = d->n;
  for (t = 0; t < n; t++) {
    uint64_t mem = d->size[t];
    for (i = 0; i < t; i++) {
      int last = d->out_off[i + 1] > d->out_off[i] ? d->out[d->out_off[i + 1] - 1] : -1;
      if (last >= t) mem += d->size[i];
    }
    if (mem > peak) peak = mem;
  }
  return peak;
}

/* The oracle's schedule as n×n matrices. */
static void or_to_matrices(const or_graph *o, const or_result *r, unsigned char *R, unsigned char *S) {
  int n = o->n, t, i;
  memset(R, 0, (size_t)n * (size_t)n);
  memset(S, 0, (size_t)n * (size_t)n);
  for (t = 0; t < n; t++)
    for (i = 0; i < n; i++) {
      R[t * n + i] = (unsigned char)(r->R[t] >> i & 1);
      S[t * n + i] = (unsigned char)(r->S[t] >> i & 1);
    }
}

/* ---------------------------------------------------------------------------------------------------------------
   1. The oracle itself, on the spec's hand-verified numbers
   --------------------------------------------------------------------------------------------------------------- */
TEST(oracle_reproduces_spec_tables) {
  static const struct { int L; uint64_t B; double cost; } tab[] = {
      {2, 3, 6},  {2, 4, 5},  {2, 5, 5},  {3, 3, 10}, {3, 4, 8},  {3, 5, 7},  {3, 6, 7},  {4, 3, 15},
      {4, 4, 11}, {4, 5, 10}, {4, 6, 9},  {4, 7, 9},  {8, 4, 26}, {8, 6, 21}, {8, 8, 19},
  };
  int i, L;
  for (i = 0; i < (int)(sizeof tab / sizeof tab[0]); i++) {
    mlsys_remat_graph g;
    REQUIRE_OK(mlsys_remat_graph_chain(tab[i].L, &g));
    CHECK_MSG(oracle_opt(&g, tab[i].B, 0) == tab[i].cost, "chain L=%d B=%llu: oracle %g, spec %g", tab[i].L,
              (unsigned long long)tab[i].B, oracle_opt(&g, tab[i].B, 0), tab[i].cost);
    mlsys_remat_graph_free(&g);
  }
  /* T1 / T2: nothing below 3; at 3 the constant-memory cost 2L+1 + L(L-1)/2 */
  for (L = 2; L <= 8; L++) {
    mlsys_remat_graph g;
    if (L > 4 && L != 8) continue;
    REQUIRE_OK(mlsys_remat_graph_chain(L, &g));
    CHECK_MSG(oracle_opt(&g, 2, 0) == INFINITY, "chain L=%d B=2 should be infeasible", L);
    CHECK_MSG(oracle_opt(&g, 3, 0) == 2 * L + 1 + L * (L - 1) / 2, "chain L=%d B=3: %g", L, oracle_opt(&g, 3, 0));
    /* T3: one recomputation at B = L+1, none from L+2 */
    CHECK_MSG(oracle_opt(&g, (uint64_t)L + 1, 0) == 2 * L + 2, "chain L=%d B=L+1: %g", L, oracle_opt(&g, L + 1, 0));
    CHECK_MSG(oracle_opt(&g, (uint64_t)L + 2, 0) == 2 * L + 1, "chain L=%d B=L+2: %g", L, oracle_opt(&g, L + 2, 0));
    mlsys_remat_graph_free(&g);
  }
  /* T8 */
  {
    mlsys_remat_graph g;
    static const double want[] = {INFINITY, 41, 40, 37, 36, 36};   /* B = 9..14 */
    uint64_t B;
    REQUIRE_OK(make_t8(&g));
    CHECK_EQ_INT(g.dag.n, 13);
    CHECK_EQ_INT(n_edges(&g), 26);
    CHECK_EQ_INT(sum_cost(&g), 36);
    CHECK_EQ_INT(keep_all_peak(&g), 13);
    for (B = 9; B <= 14; B++)
      CHECK_MSG(oracle_opt(&g, B, 0) == want[B - 9], "T8 B=%llu: oracle %g, spec %g", (unsigned long long)B,
                oracle_opt(&g, B, 0), want[B - 9]);
    mlsys_remat_graph_free(&g);
  }
}

TEST_MAIN()
