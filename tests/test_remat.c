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
  double *min_cut;     /* the least cost-so-far + Σ remaining C that the bound cut off */
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
      if (v == E->t || (o->inmask[E->t] >> v & 1)) { /* counted from the start (see oracle_pass) */ }
      else if (E->carry_mem + o->M[v] > E->B) continue;     /* prune (a) */
    }
    if (v == E->t) computed = 1;
    else {
      if (!c && inS && !read) continue;                     /* trim-normal: resident values are read or carried */
      computed = !inS && (c || read);
      if (computed && o->norec[v]) continue;                /* norecompute: only in its own stage */
    }
    if (c) { E->carry |= 1u << v; if (v != E->t && !(o->inmask[E->t] >> v & 1)) E->carry_mem += o->M[v]; }
    if (computed) {
      E->comp |= 1u << v;
      E->readm |= o->inmask[v];
      E->cost += o->C[v];
      if (E->base + E->cost + o->rest[E->t + 1] > E->ub) {   /* prune (b) */
        if (E->base + E->cost + o->rest[E->t + 1] < *E->min_cut) *E->min_cut = E->base + E->cost + o->rest[E->t + 1];
        goto restore;
      }
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
  double min_cut;       /* the least lower bound the pass's bound cut off (INFINITY: nothing was cut, so
                           "nothing found" is conclusive) */
} or_result;

/* One pass at an activation budget B (bytes, fixed memory excluded), exploring every schedule of cost ≤ ub:
   res->cost is the optimum when it is ≤ ub, else INFINITY. */
static void oracle_pass(const or_graph *o, uint64_t B, double ub, or_result *res) {
  or_layer layers[OR_MAXN + 1];
  double final_cost = INFINITY;
  uint32_t final_parent = 0;
  int t, n = o->n;
  memset(res, 0, sizeof *res);
  res->min_cut = INFINITY;
  for (t = 0; t <= n; t++) or_layer_init(&layers[t]);
  or_layer_put(&layers[0], 0, 0, 0);
  for (t = 0; t < n; t++) {
    size_t i;
    int j;
    res->states += (long)layers[t].cnt;
    for (i = 0; i < layers[t].cnt; i++) {
      or_enum E;
      const or_entry *e = &layers[t].e[i];
      if (e->cost + o->rest[t] > ub) { if (e->cost + o->rest[t] < res->min_cut) res->min_cut = e->cost + o->rest[t]; continue; }
      memset(&E, 0, sizeof E);
      E.o = o; E.t = t; E.St = e->key; E.B = B; E.base = e->cost; E.ub = ub; E.min_cut = &res->min_cut;
      E.next = &layers[t + 1]; E.final_cost = &final_cost; E.final_parent = &final_parent;
      /* prune (a): right after node t is computed, t, its inputs and everything carried on are all live */
      E.carry_mem = o->M[t];
      for (j = 0; j < o->nin[t]; j++) E.carry_mem += o->M[o->in[t][j]];
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
}

/* The exact optimum at activation budget B (INFINITY when nothing fits). Every schedule of cost ≤ ub is
   explored by a pass, so the first pass that finds one has the optimum; the bound grows Σ C + 0, 1, 2, 4, ...
   (each pass is exact on its own; the growth only saves time). A pass that finds nothing and cut nothing off
   has seen every reachable state: the budget is infeasible. */
static int or_strategy = 2;
static double or_growth = 2;
static void oracle_solve(const or_graph *o, uint64_t B, or_result *res) {
  double delta = 0, ub = o->rest[0];
  long states = 0, leaves = 0;
  for (;;) {
    oracle_pass(o, B, ub, res);
    states += res->states;
    leaves += res->leaves;
    if (res->cost < INFINITY || res->min_cut == INFINITY) break;
    if (or_strategy == 0) { delta = delta == 0 ? 1 : delta * 2; ub = o->rest[0] + delta; }
    else if (or_strategy == 1) ub = res->min_cut;
    else { double d = (ub - o->rest[0]) * or_growth; ub = fmax(res->min_cut, o->rest[0] + d); }
  }
  res->states = states;
  res->leaves = leaves;
}

static double oracle_opt(const mlsys_remat_graph *g, uint64_t B, int restrict_norecompute) {
  or_graph o;
  or_result r;
  or_from_graph(g, restrict_norecompute, &o);
  oracle_solve(&o, B, &r);
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

/* The smallest activation budget with a schedule, upwards from the single-operator bound; *at receives the
   oracle's result there (may be NULL). hi is a budget known to be feasible. */
static uint64_t oracle_min_budget(const or_graph *o, uint64_t hi, or_result *at) {
  uint64_t B = oracle_single_op(o);
  or_result r;
  for (;; B++) {
    oracle_solve(o, B, &r);
    if (r.cost < INFINITY || B >= hi) break;
  }
  if (at) *at = r;
  return B;
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

/* An independent check of any schedule (n×n matrices) against the rules of spec §3.1, with the MILP memory
   accounting of or_stage_peak: 1 when valid, with its cost and peak; 0 with the first violation in why. */
static int indep_eval(const or_graph *o, const unsigned char *R, const unsigned char *S, double *cost, uint64_t *peak,
                      char *why, size_t len) {
  int n = o->n, t, k;
  uint32_t Rm[OR_MAXN], Sm[OR_MAXN];
  *cost = 0;
  *peak = 0;
  for (t = 0; t < n; t++) {
    Rm[t] = Sm[t] = 0;
    for (k = 0; k < n; k++) {
      if (R[t * n + k]) Rm[t] |= 1u << k;
      if (S[t * n + k]) Sm[t] |= 1u << k;
    }
  }
  for (t = 0; t < n; t++) {
    uint32_t below_t = (1u << t) - 1u;
    uint64_t p;
    if (!(Rm[t] >> t & 1)) { snprintf(why, len, "stage %d does not compute node %d", t, t); return 0; }
    if (Rm[t] & ~(below_t | 1u << t)) { snprintf(why, len, "stage %d computes a node ahead of it", t); return 0; }
    if (Sm[t] & ~below_t) { snprintf(why, len, "stage %d keeps a value not yet computed", t); return 0; }
    if (t > 0 && (Sm[t] & ~(Sm[t - 1] | Rm[t - 1]))) {
      snprintf(why, len, "stage %d keeps a value neither kept nor computed in stage %d", t, t - 1);
      return 0;
    }
    for (k = 0; k <= t; k++)
      if (Rm[t] >> k & 1) {
        uint32_t avail = Sm[t] | (Rm[t] & ((1u << k) - 1u));
        if (o->inmask[k] & ~avail) { snprintf(why, len, "stage %d computes %d without its inputs", t, k); return 0; }
        *cost += o->C[k];
      }
    p = or_stage_peak(o, t, Sm[t], Rm[t], t + 1 < n ? Sm[t + 1] : 0);
    if (p > *peak) *peak = p;
  }
  return 1;
}

/* ---------------------------------------------------------------------------------------------------------------
   The instance set shared by the MILP, CBC, model, baseline and plan tests: chains L = 2..8 at budgets 2..L+2,
   the T8 network at 9..14, and 30 random training graphs (4..8 forward nodes, n ≤ 17; three of them with fixed
   memory) at budgets around the oracle's minimum and the keep-all peak. Built once, on first use; every optimum
   comes from the oracle.
   --------------------------------------------------------------------------------------------------------------- */
#define MAXB 10
typedef struct {
  char name[48];
  mlsys_remat_graph g;
  or_graph o;
  uint64_t fixed;              /* fixed bytes (budgets below are activation bytes; the library gets B + fixed) */
  uint64_t minB, peak_all;     /* oracle's smallest feasible activation budget; keep-everything peak */
  int chain_L;                 /* > 0 for chains */
  int nb;
  uint64_t B[MAXB];            /* activation budgets, ascending */
  double opt[MAXB];            /* oracle optimum, INFINITY if infeasible */
  or_result sched[MAXB];       /* the oracle's optimal schedule */
} inst;
static inst *insts;
static int ninst;
static double insts_seconds;

static void inst_add_budget(inst *I, uint64_t B) {
  int i;
  for (i = 0; i < I->nb; i++)
    if (I->B[i] == B) return;
  if (I->nb == MAXB) return;
  I->B[I->nb++] = B;
  for (i = I->nb - 1; i > 0 && I->B[i] < I->B[i - 1]; i--) { uint64_t x = I->B[i]; I->B[i] = I->B[i - 1]; I->B[i - 1] = x; }
}

static void inst_finish_known(inst *I, uint64_t minB, const or_result *at_minB) {
  int i;
  or_result at = *at_minB;
  or_from_graph(&I->g, 0, &I->o);
  I->peak_all = keep_all_peak(&I->g);
  I->minB = minB;
  for (i = 0; i < I->nb; i++) {
    if (I->B[i] < I->minB) { I->opt[i] = INFINITY; memset(&I->sched[i], 0, sizeof I->sched[i]); continue; }
    if (I->B[i] == I->minB) I->sched[i] = at;
    else oracle_solve(&I->o, I->B[i], &I->sched[i]);
    I->opt[i] = I->sched[i].cost;
  }
}

static void inst_finish(inst *I) {
  or_result at;
  uint64_t minB;
  or_from_graph(&I->g, 0, &I->o);
  minB = oracle_min_budget(&I->o, keep_all_peak(&I->g), &at);
  inst_finish_known(I, minB, &at);
}

static void build_instances(void) {
  mlsys_rng rng;
  int L, i;
  double t0 = mlsys_now();
  if (insts) return;
  insts = (inst *)calloc(64, sizeof *insts);
  for (L = 2; L <= 8; L++) {
    inst *I = &insts[ninst++];
    uint64_t B;
    snprintf(I->name, sizeof I->name, "chain L=%d", L);
    if (mlsys_remat_graph_chain(L, &I->g) != MLSYS_OK) { fprintf(stderr, "chain: %s\n", lasterr()); abort(); }
    I->chain_L = L;
    for (B = 2; B <= (uint64_t)L + 2; B++) inst_add_budget(I, B);
    inst_finish(I);
  }
  {
    inst *I = &insts[ninst++];
    uint64_t B;
    snprintf(I->name, sizeof I->name, "T8");
    if (make_t8(&I->g) != MLSYS_OK) { fprintf(stderr, "T8: %s\n", lasterr()); abort(); }
    for (B = 9; B <= 14; B++) inst_add_budget(I, B);
    inst_finish(I);
  }
  mlsys_rng_seed(&rng, 20200302);   /* MLSys 2020 */
  for (i = 0; i < 30; i++) {
    inst *I = &insts[ninst++];
    uint64_t lo, hi;
    L = 4 + i % 5;
    snprintf(I->name, sizeof I->name, "random#%d L=%d", i, L);
    if (make_random_training(&rng, L, &I->g) != MLSYS_OK) { fprintf(stderr, "random: %s\n", lasterr()); abort(); }
    if (i % 10 == 3) {
      I->fixed = 7 + (uint64_t)i + 3;
      mlsys_remat_graph_set_fixed(&I->g, "params", 7 + (uint64_t)i);
      mlsys_remat_graph_set_fixed(&I->g, "param_grads", 3);
      snprintf(I->name, sizeof I->name, "random#%d L=%d fixed=%llu", i, L, (unsigned long long)I->fixed);
    }
    {
      or_result at;
      or_from_graph(&I->g, 0, &I->o);
      hi = keep_all_peak(&I->g);
      lo = oracle_min_budget(&I->o, hi, &at);
      if (lo > 1) inst_add_budget(I, lo - 1);
      inst_add_budget(I, lo);
      inst_add_budget(I, lo + (hi - lo) / 3);
      inst_add_budget(I, lo + 2 * (hi - lo) / 3);
      if (hi > lo) inst_add_budget(I, hi - 1);
      inst_add_budget(I, hi);
      inst_finish_known(I, lo, &at);
    }
  }
  insts_seconds = mlsys_now() - t0;
}

static int count_budgets(int feasible_only) {
  int i, b, c = 0;
  for (i = 0; i < ninst; i++)
    for (b = 0; b < insts[i].nb; b++) c += !feasible_only || insts[i].opt[b] < INFINITY;
  return c;
}

/* Every schedule the library returns is checked here by indep_eval as well as by the library's simulator. */
static void check_schedule_indep(const inst *I, const mlsys_remat_schedule *s, const char *what) {
  double c;
  uint64_t p;
  char why[160];
  mlsys_remat_sim rep;
  int ok = indep_eval(&I->o, s->R, s->S, &c, &p, why, sizeof why);
  CHECK_MSG(ok, "%s %s: independent check: %s", I->name, what, why);
  CHECK_MSG(mlsys_remat_simulate(&I->g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL) == MLSYS_OK,
            "%s %s: simulator: %s", I->name, what, lasterr());
  if (!ok) return;
  CHECK_MSG(c == s->cost, "%s %s: cost %g, independently %g", I->name, what, s->cost, c);
  CHECK_MSG(p == s->peak, "%s %s: peak %llu, independently %llu", I->name, what, (unsigned long long)s->peak,
            (unsigned long long)p);
  CHECK_MSG(rep.cost == c && rep.peak == p, "%s %s: simulator cost %g peak %llu, independently %g %llu", I->name,
            what, rep.cost, (unsigned long long)rep.peak, c, (unsigned long long)p);
  CHECK_MSG(s->peak_total == s->peak + I->fixed, "%s %s: peak_total %llu, peak %llu + fixed %llu", I->name, what,
            (unsigned long long)s->peak_total, (unsigned long long)s->peak, (unsigned long long)I->fixed);
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

TEST(oracle_self_consistency_and_simulator_agreement) {
  int i, b, nsched = 0;
  build_instances();
  printf("    %d graphs, %d (graph, budget) instances (%d feasible); oracle work %.1f s\n", ninst, count_budgets(0),
         count_budgets(1), insts_seconds);
  for (i = 0; i < ninst; i++) {
    inst *I = &insts[i];
    double prev = INFINITY, total = sum_cost(&I->g);
    int allpos = 1, v;
    for (v = 0; v < I->g.dag.n; v++) allpos &= I->g.dag.cost[v] > 0;
    CHECK_MSG(I->minB >= oracle_single_op(&I->o) && I->minB <= I->peak_all, "%s: min budget %llu", I->name,
              (unsigned long long)I->minB);
    CHECK_MSG(oracle_single_op(&I->o) == mlsys_remat_single_op_bound(&I->g), "%s: single-op bound", I->name);
    for (b = 0; b < I->nb; b++) {
      mlsys_remat_schedule s;
      double c;
      uint64_t p;
      char why[160];
      mlsys_remat_sim rep;
      /* budgets ascending: the optimum never rises */
      CHECK_MSG(I->opt[b] <= prev || prev == INFINITY, "%s: opt(%llu) = %g > opt at a smaller budget %g", I->name,
                (unsigned long long)I->B[b], I->opt[b], prev);
      prev = I->opt[b];
      if (I->B[b] == I->peak_all) CHECK_MSG(I->opt[b] == total, "%s: at the keep-all peak %g, Σ C %g", I->name, I->opt[b], total);
      if (I->B[b] + 1 == I->peak_all && allpos && I->B[b] >= I->minB)
        CHECK_MSG(I->opt[b] > total, "%s: below the keep-all peak, no recomputation (%g)", I->name, I->opt[b]);
      if (I->opt[b] == INFINITY) continue;
      /* the oracle's own schedule: valid by the independent rules, its cost and peak as claimed */
      REQUIRE_OK(mlsys_remat_schedule_alloc(I->g.dag.n, &s));
      or_to_matrices(&I->o, &I->sched[b], s.R, s.S);
      CHECK_MSG(indep_eval(&I->o, s.R, s.S, &c, &p, why, sizeof why), "%s B=%llu: oracle schedule: %s", I->name,
                (unsigned long long)I->B[b], why);
      CHECK_MSG(c == I->opt[b] && p <= I->B[b], "%s B=%llu: oracle schedule cost %g peak %llu", I->name,
                (unsigned long long)I->B[b], c, (unsigned long long)p);
      /* ... and the library's simulator agrees with the independent accounting on it */
      CHECK_MSG(mlsys_remat_simulate(&I->g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL) == MLSYS_OK,
                "%s B=%llu: simulator rejects the oracle's schedule: %s", I->name, (unsigned long long)I->B[b], lasterr());
      CHECK_MSG(rep.cost == c && rep.peak == p, "%s B=%llu: simulator cost %g peak %llu, independently %g %llu",
                I->name, (unsigned long long)I->B[b], rep.cost, (unsigned long long)rep.peak, c,
                (unsigned long long)p);
      CHECK_EQ_INT(rep.redundant, 0);
      nsched++;
      mlsys_remat_schedule_free(&s);
    }
  }
  printf("    %d oracle schedules re-checked by the library simulator\n", nsched);
}

/* The infeasibility message names the oracle's smallest feasible budget (total bytes). */
static void check_infeasible_message(const inst *I, uint64_t total, int restricted_minB_known, uint64_t minB) {
  unsigned long long mb = 0;
  int proven = 0;
  const char *msg = lasterr();
  uint64_t want = (restricted_minB_known ? minB : I->minB) + I->fixed;
  CHECK_MSG(parse_min_budget(msg, &mb, &proven), "%s budget %llu: no smallest feasible budget in \"%s\"", I->name,
            (unsigned long long)total, msg);
  CHECK_MSG(mb == want, "%s budget %llu: message names %llu, the oracle's smallest feasible budget is %llu (\"%s\")",
            I->name, (unsigned long long)total, mb, (unsigned long long)want, msg);
  CHECK_MSG(proven, "%s budget %llu: smallest budget not proven (\"%s\")", I->name, (unsigned long long)total, msg);
}

typedef struct { int feasible, infeasible; double seconds, worst; char worst_name[96]; } solve_stats;

static void solve_and_compare(inst *I, int b, const mlsys_remat_opts *op, const char *tag, solve_stats *ss) {
  mlsys_remat_schedule s;
  uint64_t total = I->B[b] + I->fixed;
  double t0 = mlsys_now(), dt;
  mlsys_status st = mlsys_remat_solve(&I->g, total, op, &s);
  dt = mlsys_now() - t0;
  ss->seconds += dt;
  if (getenv("REMAT_TEST_VERBOSE") && dt > 0.3)
    printf("      %s %s B=%llu: %.2f s\n", tag, I->name, (unsigned long long)I->B[b], dt);
  if (dt > ss->worst) {
    ss->worst = dt;
    snprintf(ss->worst_name, sizeof ss->worst_name, "%s B=%llu", I->name, (unsigned long long)I->B[b]);
  }
  if (I->opt[b] == INFINITY) {
    CHECK_MSG(st == MLSYS_ERR_INFEASIBLE, "%s %s B=%llu: status %d (%s), the oracle says infeasible", tag, I->name,
              (unsigned long long)I->B[b], st, lasterr());
    if (st == MLSYS_ERR_INFEASIBLE) check_infeasible_message(I, total, 0, 0);
    if (s.n) CHECK_MSG(!s.fits, "%s %s: infeasible but the returned schedule fits", tag, I->name);
    ss->infeasible++;
  } else {
    CHECK_MSG(st == MLSYS_OK, "%s %s B=%llu: status %d (%s), oracle optimum %g", tag, I->name,
              (unsigned long long)I->B[b], st, lasterr(), I->opt[b]);
    if (st == MLSYS_OK) {
      char what[64];
      snprintf(what, sizeof what, "%s B=%llu", tag, (unsigned long long)I->B[b]);
      CHECK_MSG(s.cost == I->opt[b], "%s %s B=%llu: cost %g, oracle optimum %g (%s)", tag, I->name,
                (unsigned long long)I->B[b], s.cost, I->opt[b], s.solver_note);
      CHECK_MSG(s.optimal == 1, "%s %s B=%llu: not proven optimal (%s)", tag, I->name, (unsigned long long)I->B[b],
                s.solver_note);
      CHECK_MSG(s.fits && s.peak_total <= total && s.budget == total, "%s %s B=%llu: peak %llu over budget", tag,
                I->name, (unsigned long long)I->B[b], (unsigned long long)s.peak_total);
      CHECK_MSG(s.baseline_cost == sum_cost(&I->g), "%s %s: baseline_cost %g", tag, I->name, s.baseline_cost);
      CHECK_MSG(!(s.bound > s.cost + 1e-9), "%s %s: bound %g above cost %g", tag, I->name, s.bound, s.cost);
      check_schedule_indep(I, &s, what);
    }
    ss->feasible++;
  }
  mlsys_remat_schedule_free(&s);
}

/* 2. The MILP (lp_solve) against the oracle on every instance. */
TEST(milp_matches_oracle) {
  solve_stats ss;
  int i, b;
  memset(&ss, 0, sizeof ss);
  build_instances();
  for (i = 0; i < ninst; i++)
    for (b = 0; b < insts[i].nb; b++) {
      mlsys_remat_opts op;
      memset(&op, 0, sizeof op);
      op.time_limit = 60;
      solve_and_compare(&insts[i], b, &op, "milp", &ss);
    }
  printf("    %d optima and %d infeasible budgets match the oracle; %.1f s, slowest %.2f s (%s)\n", ss.feasible,
         ss.infeasible, ss.seconds, ss.worst, ss.worst_name);
}

/* T4: the thesis's aggregated FREE rows (3.7c) give the same optima on small chains. */
TEST(milp_aggregated_free_rows_small_chains) {
  solve_stats ss;
  int i, b;
  memset(&ss, 0, sizeof ss);
  build_instances();
  for (i = 0; i < ninst; i++) {
    if (!insts[i].chain_L || insts[i].chain_L > 4) continue;
    for (b = 0; b < insts[i].nb; b++) {
      mlsys_remat_opts op;
      memset(&op, 0, sizeof op);
      op.time_limit = 60;
      op.aggregated_free = 1;
      op.raw = 1;   /* always solve the model */
      solve_and_compare(&insts[i], b, &op, "milp-aggregated", &ss);
    }
  }
  printf("    %d optima, %d infeasible; %.2f s\n", ss.feasible, ss.infeasible, ss.seconds);
}

/* 4 (T9). With raw = 1 the schedule is the MILP's own (R, S): its simulated cost and peak are the model's
   objective and max U; the EAGER peak is never above the MILP-mode peak. */
TEST(milp_raw_solution_equals_simulator) {
  int i, b, n = 0, redundant = 0;
  double secs = 0;
  build_instances();
  for (i = 0; i < ninst; i++)
    for (b = 0; b < insts[i].nb; b++) {
      inst *I = &insts[i];
      mlsys_remat_opts op;
      mlsys_remat_schedule s;
      mlsys_remat_sim eager, milp;
      mlsys_status st;
      double t0 = mlsys_now();
      if (I->opt[b] == INFINITY) continue;
      memset(&op, 0, sizeof op);
      op.time_limit = 60;
      op.raw = 1;
      st = mlsys_remat_solve(&I->g, I->B[b] + I->fixed, &op, &s);
      secs += mlsys_now() - t0;
      CHECK_MSG(st == MLSYS_OK, "%s B=%llu raw: %s", I->name, (unsigned long long)I->B[b], lasterr());
      if (st != MLSYS_OK) { mlsys_remat_schedule_free(&s); continue; }
      CHECK_MSG(s.cost == I->opt[b] && s.optimal, "%s B=%llu raw: cost %g optimal %d, oracle %g", I->name,
                (unsigned long long)I->B[b], s.cost, s.optimal, I->opt[b]);
      CHECK_MSG(fabs(s.cost - s.model_cost) <= 1e-9 * fmax(1, s.cost), "%s B=%llu raw: cost %.17g, model %.17g",
                I->name, (unsigned long long)I->B[b], s.cost, s.model_cost);
      CHECK_MSG(s.peak == s.model_peak, "%s B=%llu raw: peak %llu, model max U %llu", I->name,
                (unsigned long long)I->B[b], (unsigned long long)s.peak, (unsigned long long)s.model_peak);
      check_schedule_indep(I, &s, "raw");
      CHECK_OK(mlsys_remat_simulate(&I->g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &milp, NULL));
      CHECK_OK(mlsys_remat_simulate(&I->g, s.R, s.S, MLSYS_REMAT_SIM_EAGER, &eager, NULL));
      CHECK_MSG(eager.peak <= milp.peak, "%s B=%llu: EAGER peak %llu > MILP peak %llu", I->name,
                (unsigned long long)I->B[b], (unsigned long long)eager.peak, (unsigned long long)milp.peak);
      CHECK_MSG(eager.cost == milp.cost, "%s: EAGER cost %g vs %g", I->name, eager.cost, milp.cost);
      redundant += milp.redundant;
      n++;
      mlsys_remat_schedule_free(&s);
    }
  printf("    %d raw MILP solutions (%d redundant recomputations among them), %.1f s\n", n, redundant, secs);
}

TEST_MAIN()
