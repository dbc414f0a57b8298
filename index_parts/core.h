/* index_parts/core.h — part of mlsys_index.h (see its section list). Declarations first, then the implementation.

   2. THE INDEX (thesis ch. 6; spec PART B3.1-B3.3, B3.6)
   An ALEX-style tree: inner "model nodes" route a key with a linear model to one of 2^k child slots (a child may own
   2^d consecutive, aligned slots so that it can later be split sideways); leaves are either gapped arrays (GA, ALEX's
   data node with MAPLE's Msi/Msh trigger) or fragmented logs (FLog, unsorted append-only fragments under a linear
   fragment model). One leaf struct with a type tag and a switch: the thesis measured 14 % for virtual dispatch (§6.4).
   Lookups never change the structure or any counter (§6.4: monitoring lookups cost up to 3 %).

   Choices where the spec says [proposal] (documented in the helper report and here):
   - bulk-load fanout: the smallest-cost power of two under 20·depth + 5e-7·model_bytes + Σ leaf_cost·keys/N, with
     leaf_cost = 20·E[iters] + 0.5·E[shifts]·eif for GA (estimated by simulating the 0.7-density placement) and 0 for
     FLog (so FLog picks the smallest fanout whose partitions fit); a partition too big for a leaf adds 20 + its own
     leaf cost. Sparse neighbouring slots are merged into one child (aligned power-of-two blocks).
   - FLog after a load, a multiply or a split: max(nf, ceil(n / max(1, mf_size/2))) fragments (≤ Mnf), so fragments
     start about half full; fragment capacity is min(mf_size, next power of two ≥ its keys), empty fragments hold
     no arrays. Multiply: nfrag' = min(2·nfrag, Mnf). Split: n_new = max(2, ceil(n / (nf·mf_size·0.5))).
   - An FLog leaf also respects max_leaf_bytes: at most max(1, max_leaf_bytes/16) keys.
   - GA SMO decision at the expansion threshold (n+1 > 0.8·cap); with smo_check_every_insert also after every insert
     once the leaf has seen 16 inserts. Lookups are not monitored, so the "fraction of inserts" in ALEX's empirical
     cost is expected_insert_frac.
   - Keys outside a model node's domain are clamped to its first/last slot. When the edge leaf of a model node must
     split and most of its keys are beyond the domain (an ascending or descending insert stream, ALEX issue #10), the
     node's domain is doubled (up to 16x per SMO, within the max fanout) instead of growing the tree downward (ALEX
     "root expansion", here for any model node). A few outliers (fb) do not trigger it.
   - Erase never merges: empty leaves stay (as ALEX without contraction). */
/* Include order: mlsys_index.h includes its parts after its own guard, so a part must not include it back in the
   middle of its declarations (the nested pass would compile this file's implementation before its declarations).
   Included on its own, this file lets mlsys_index.h include it back, and does nothing itself. */
#ifndef MLSYS_INDEX_H
#include "mlsys_index.h"
#else
#ifndef MLSYS_INDEX_CORE_H
#define MLSYS_INDEX_CORE_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlsys_index mlsys_index;
typedef struct {
  size_t n_keys, n_model_nodes, n_leaves, n_fragments, depth_max;   /* depth: model nodes on the longest path */
  uint64_t smo_expand, smo_split_sideways, smo_split_down, smo_frag_expand, smo_frag_multiply, smo_root_expand;
  double avg_search_iters, avg_shifts;          /* GA, over inserts since bulk load */
  size_t bytes_model_nodes, bytes_leaves, bytes_flog_metadata;   /* flog metadata = 21 bytes x fragments exactly */
} mlsys_index_stats;

/* Bulk load; keys need not be sorted; vals NULL -> mlsys_index_payload_of(key); a repeated key keeps its first
   occurrence's payload (the index is a map of unique keys). cfg NULL -> all defaults. */
MLSYS_DEF mlsys_status mlsys_index_create(const mlsys_index_config *cfg, const uint64_t *keys, const uint64_t *vals,
                                          size_t n, mlsys_index **out);
MLSYS_DEF int mlsys_index_find(const mlsys_index *ix, uint64_t key, uint64_t *val);   /* 1 found (val may be NULL), 0 not */
MLSYS_DEF int mlsys_index_insert(mlsys_index *ix, uint64_t key, uint64_t val);  /* 1 inserted, 0 key present (payload unchanged), -1 out of memory (mlsys_last_error) */
MLSYS_DEF int mlsys_index_update(mlsys_index *ix, uint64_t key, uint64_t val);  /* 1 updated, 0 absent */
MLSYS_DEF int mlsys_index_erase(mlsys_index *ix, uint64_t key);                 /* 1 erased, 0 absent, -1 out of memory */
/* ordered iteration: up to max pairs with key >= lo, ascending; returns the count (keys/vals may be NULL) */
MLSYS_DEF size_t mlsys_index_scan(const mlsys_index *ix, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_size(const mlsys_index *ix);
/* every byte the index allocated (its own struct, model nodes, child arrays, leaves, key/payload/bitmap arrays,
   fragment arrays, FLog metadata); the requested sizes, not the allocator's rounding */
MLSYS_DEF size_t mlsys_index_memory(const mlsys_index *ix);
MLSYS_DEF void mlsys_index_get_stats(const mlsys_index *ix, mlsys_index_stats *st);
/* full invariant check (spec §7.2 test 2); MLSYS_ERR_ARG with a message naming the leaf/fragment and the invariant */
MLSYS_DEF mlsys_status mlsys_index_check(const mlsys_index *ix);
MLSYS_DEF void mlsys_index_free(mlsys_index *ix);
/* ranges: eif in [0,1], msi/msh >= 0 finite, mf_size 1..65536, mnf 1..65536, nf 1..mnf (after defaults),
   max_leaf_bytes >= 4096 */
MLSYS_DEF mlsys_status mlsys_index_config_check(const mlsys_index_config *c);
/* zero fields -> defaults (mf_size 64, mnf 64, nf min(4, mnf), max_leaf_bytes 1<<24) */
MLSYS_DEF mlsys_index_config mlsys_index_config_resolved(const mlsys_index_config *c);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_INDEX_CORE_H */

#ifdef MLSYS_INDEX_IMPLEMENTATION
#ifndef MLSYS_INDEX_CORE_IMPL
#define MLSYS_INDEX_CORE_IMPL

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MLSYS__INDEX_X86 1
#endif

/* ALEX constants (alex_base.h / alex_nodes.h; spec B3.1-B3.2) */
#define MLSYS__IX_W_ITERS 20.0
#define MLSYS__IX_W_SHIFTS 0.5
#define MLSYS__IX_W_NODE 20.0
#define MLSYS__IX_W_MODEL 5e-7
#define MLSYS__IX_INIT_DENSITY 0.7
#define MLSYS__IX_MAX_DENSITY 0.8
#define MLSYS__IX_MIN_DENSITY 0.6
#define MLSYS__IX_GA_MIN_CAP 4

enum { MLSYS__IX_MODEL = 0, MLSYS__IX_GA = 1, MLSYS__IX_FLOG = 2 };

/* A linear model pos = b + a·(key − base), evaluated on the exact uint64 difference so that keys near 2^64 keep
   53 bits of resolution relative to the node's own range. Both branches are monotone (round-to-nearest is
   monotone), so routing is monotone in the key: leaves stay ordered and find/insert use the same function. */
typedef struct {
  uint64_t base;
  double a, b;
} mlsys__index_lm;

static inline double mlsys__index_lm_pos(const mlsys__index_lm *m, uint64_t k) {
  return k >= m->base ? m->b + m->a * (double)(k - m->base) : m->b - m->a * (double)(m->base - k);
}
static inline size_t mlsys__index_lm_clamp(const mlsys__index_lm *m, uint64_t k, size_t n) {
  double p = mlsys__index_lm_pos(m, k);
  if (!(p > 0)) return 0;
  if (p >= (double)(n - 1)) return n - 1;
  return (size_t)p;
}

struct mlsys__index_model;
typedef struct mlsys__index_node {
  uint8_t type; /* MLSYS__IX_MODEL / GA / FLOG */
  uint8_t dup;  /* log2 of the slots this node owns in its parent (ALEX duplication factor) */
  struct mlsys__index_model *parent;
} mlsys__index_node;

/* Inner node: slot = off + floor(pos) for pos in [lo, hi), clamped to the first/last slot outside. The integer
   offset lets a node grow its domain to the left without re-rounding the old slot boundaries. */
typedef struct mlsys__index_model {
  mlsys__index_node h;
  uint32_t log2c;
  int64_t off;
  double lo, hi; /* -off, C - off */
  mlsys__index_lm m;
  mlsys__index_node **child;
} mlsys__index_model;

typedef struct mlsys__index_leaf {
  mlsys__index_node h;
  struct mlsys__index_leaf *prev, *next; /* leaves in key order (scans) */
  mlsys__index_lm m;                     /* GA: key → slot; FLog: key → fragment */
  size_t n;
  union {
    struct {
      uint64_t *keys, *vals, *bitmap; /* gaps hold the next real key to the right (UINT64_MAX past the end) */
      size_t cap, thresh;             /* thresh = floor(0.8·cap) */
      uint64_t ins, iters, shifts;    /* since this leaf was built (inserts only) */
      double exp_iters, exp_shifts;   /* from the build placement */
    } ga;
    struct {
      void *meta; /* one block of exactly 21·nfrag bytes: key ptrs, val ptrs, tails (u32), log2 capacities (u8) */
      uint64_t **fk, **fv;
      uint32_t *tail;
      uint8_t *lcap;
      uint32_t nfrag;
    } fl;
  } u;
} mlsys__index_leaf;

struct mlsys_index {
  mlsys_index_config cfg; /* resolved */
  mlsys__index_model *root;
  size_t n;
  size_t bytes_model, bytes_leaf, bytes_meta;
  uint64_t smo_expand, smo_side, smo_down, smo_fexp, smo_fmul, smo_rootexp;
  uint64_t ga_ins, ga_iters, ga_shifts;
  size_t max_fanout, ga_max_cap, flog_t, flog_max_keys, flog_bulk_max;
  size_t bulk_n; /* keys of the bulk load: the "total keys" of ALEX's model-size cost while building */
  int avx2;
};

/* ---- allocation: every index byte goes through these, so mlsys_index_memory is exact ---------------------- */
static void *mlsys__index_alloc(size_t *ctr, size_t bytes) {
  void *p = mlsys_alloc(1, bytes);
  if (p) *ctr += bytes;
  return p;
}
static void *mlsys__index_zalloc(size_t *ctr, size_t bytes) {
  void *p = mlsys_calloc(1, bytes);
  if (p) *ctr += bytes;
  return p;
}
static void mlsys__index_release(size_t *ctr, void *p, size_t bytes) {
  if (p) {
    mlsys_free(p);
    *ctr -= bytes;
  }
}

static inline size_t mlsys__index_pow2ceil(size_t x) {
  size_t p = 1;
  while (p < x) p <<= 1;
  return p;
}
static inline unsigned mlsys__index_log2(size_t x) { /* floor */
  unsigned r = 0;
  while (x > 1) { x >>= 1; r++; }
  return r;
}
static inline unsigned mlsys__index_bitlen(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

/* ---- configuration ---------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_index_config mlsys_index_config_resolved(const mlsys_index_config *c) {
  mlsys_index_config r;
  if (c) r = *c;
  else memset(&r, 0, sizeof r);
  if (!r.mf_size) r.mf_size = 64;
  if (!r.mnf) r.mnf = 64;
  if (!r.nf) r.nf = r.mnf < 4 ? r.mnf : 4;
  if (!r.max_leaf_bytes) r.max_leaf_bytes = 1u << 24;
  return r;
}

MLSYS_DEF mlsys_status mlsys_index_config_check(const mlsys_index_config *c) {
  mlsys_index_config r = mlsys_index_config_resolved(c);
  if (r.leaf != MLSYS_INDEX_GA && r.leaf != MLSYS_INDEX_FLOG)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: leaf = %d is neither GA (0) nor FLOG (1)", (int)r.leaf);
  if (!(r.expected_insert_frac >= 0 && r.expected_insert_frac <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: expected_insert_frac = %g is outside [0, 1]",
                           r.expected_insert_frac);
  if (!(r.msi >= 0 && r.msi <= 1e300))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: msi = %g must be a finite number >= 0", r.msi);
  if (!(r.msh >= 0 && r.msh <= 1e300))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: msh = %g must be a finite number >= 0", r.msh);
  if (r.mf_size > 65536)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: mf_size = %u is outside 1..65536", r.mf_size);
  if (r.mnf > 65536)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: mnf = %u is outside 1..65536", r.mnf);
  if (r.nf > r.mnf)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: nf = %u is outside 1..mnf (mnf = %u)", r.nf, r.mnf);
  if (r.max_leaf_bytes < 4096)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: max_leaf_bytes = %u is below 4096", r.max_leaf_bytes);
  return MLSYS_OK;
}

/* ---- sorting (bulk load and SMO gathers): LSD radix on (key, val), stable, skipping constant bytes ----------- */
static void mlsys__index_sort_pairs(uint64_t *k, uint64_t *v, size_t n, uint64_t *tk, uint64_t *tv) {
  size_t cnt[8][256], i;
  int pass, odd = 0;
  uint64_t *sk = k, *sv = v, *dk = tk, *dv = tv;
  if (n <= 48) {
    for (i = 1; i < n; i++) {
      uint64_t x = k[i], y = v[i];
      size_t j = i;
      while (j > 0 && k[j - 1] > x) { k[j] = k[j - 1]; v[j] = v[j - 1]; j--; }
      k[j] = x;
      v[j] = y;
    }
    return;
  }
  memset(cnt, 0, sizeof cnt);
  for (i = 0; i < n; i++)
    for (pass = 0; pass < 8; pass++) cnt[pass][(k[i] >> (8 * pass)) & 255]++;
  for (pass = 0; pass < 8; pass++) {
    size_t sum = 0, b, *c = cnt[pass];
    uint64_t *t;
    if (c[(k[0] >> (8 * pass)) & 255] == n) continue; /* every key has this byte equal */
    for (b = 0; b < 256; b++) { size_t x = c[b]; c[b] = sum; sum += x; }
    for (i = 0; i < n; i++) {
      size_t d = c[(sk[i] >> (8 * pass)) & 255]++;
      dk[d] = sk[i];
      dv[d] = sv[i];
    }
    t = sk; sk = dk; dk = t;
    t = sv; sv = dv; dv = t;
    odd ^= 1;
  }
  if (odd) {
    memcpy(k, sk, n * sizeof *k);
    memcpy(v, sv, n * sizeof *v);
  }
}

/* least squares of y = rank·scale on (key − k[0]); two-pass for stability */
static void mlsys__index_fit(const uint64_t *k, size_t n, double scale, mlsys__index_lm *m) {
  double mx = 0, my = 0, sxy = 0, sxx = 0;
  size_t i;
  m->base = n ? k[0] : 0;
  m->a = 0;
  m->b = 0;
  if (n <= 1) return;
  for (i = 0; i < n; i++) { mx += (double)(k[i] - k[0]); my += (double)i; }
  mx /= (double)n;
  my /= (double)n;
  for (i = 0; i < n; i++) {
    double dx = (double)(k[i] - k[0]) - mx;
    sxy += dx * ((double)i - my);
    sxx += dx * dx;
  }
  if (sxx > 0) m->a = sxy / sxx;
  m->b = my - m->a * mx;
  m->a *= scale;
  m->b *= scale;
}

/* ---- model nodes -------------------------------------------------------------------------------------------- */
static inline size_t mlsys__index_route_raw(const mlsys__index_lm *m, int64_t off, double lo, double hi, size_t cmask,
                                             uint64_t k) {
  double p = mlsys__index_lm_pos(m, k);
  int64_t f;
  if (!(p >= lo)) return 0;
  if (p >= hi) return cmask;
  f = (int64_t)p;
  f -= (double)f > p; /* floor for negative p */
  return (size_t)(f + off);
}
static inline size_t mlsys__index_route(const mlsys__index_model *M, uint64_t k) {
  return mlsys__index_route_raw(&M->m, M->off, M->lo, M->hi, ((size_t)1 << M->log2c) - 1, k);
}

static inline mlsys__index_leaf *mlsys__index_descend(const mlsys_index *ix, uint64_t k) {
  const mlsys__index_node *nd = &ix->root->h;
  while (nd->type == MLSYS__IX_MODEL) {
    const mlsys__index_model *M = (const mlsys__index_model *)nd;
    nd = M->child[mlsys__index_route(M, k)];
  }
  return (mlsys__index_leaf *)nd;
}

/* ---- GA leaf helpers ---------------------------------------------------------------------------------------- */
static inline int mlsys__index_bit(const uint64_t *bm, size_t i) { return (int)((bm[i >> 6] >> (i & 63)) & 1); }
/* first set bit >= i, or cap */
static size_t mlsys__index_next_set(const uint64_t *bm, size_t i, size_t cap) {
  size_t w;
  uint64_t x;
  if (i >= cap) return cap;
  w = i >> 6;
  x = bm[w] & (~0ull << (i & 63));
  for (;;) {
    if (x) { size_t r = (w << 6) + (size_t)__builtin_ctzll(x); return r < cap ? r : cap; }
    if (++w << 6 >= cap) return cap;
    x = bm[w];
  }
}
/* first clear bit >= i, or cap */
static size_t mlsys__index_next_clear(const uint64_t *bm, size_t i, size_t cap) {
  size_t w;
  uint64_t x;
  if (i >= cap) return cap;
  w = i >> 6;
  x = ~bm[w] & (~0ull << (i & 63));
  for (;;) {
    if (x) { size_t r = (w << 6) + (size_t)__builtin_ctzll(x); return r < cap ? r : cap; }
    if (++w << 6 >= cap) return cap;
    x = ~bm[w];
  }
}
/* last set bit <= i (i may be -1), or -1 */
static ptrdiff_t mlsys__index_prev_set(const uint64_t *bm, ptrdiff_t i) {
  ptrdiff_t w;
  uint64_t x;
  if (i < 0) return -1;
  w = i >> 6;
  x = bm[w] & (~0ull >> (63 - (i & 63)));
  for (;;) {
    if (x) return (w << 6) + 63 - __builtin_clzll(x);
    if (--w < 0) return -1;
    x = bm[w];
  }
}
static ptrdiff_t mlsys__index_prev_clear(const uint64_t *bm, ptrdiff_t i) {
  ptrdiff_t w;
  uint64_t x;
  if (i < 0) return -1;
  w = i >> 6;
  x = ~bm[w] & (~0ull >> (63 - (i & 63)));
  for (;;) {
    if (x) return (w << 6) + 63 - __builtin_clzll(x);
    if (--w < 0) return -1;
    x = ~bm[w];
  }
}

/* exponential search from p: the first index with keys[i] > key (cap if none). Gaps hold copies of the next key,
   so the array is non-decreasing and the search ignores the bitmap (B3.2). */
static inline size_t mlsys__index_ga_upper(const uint64_t *keys, size_t cap, size_t p, uint64_t key) {
  size_t lo, hi, b = 1;
  if (keys[p] > key) {
    while (b <= p && keys[p - b] > key) b <<= 1;
    lo = b > p ? 0 : p - b + 1;
    hi = p - (b >> 1); /* keys[hi] > key */
  } else {
    while (p + b < cap && keys[p + b] <= key) b <<= 1;
    lo = p + (b >> 1) + 1; /* keys[lo-1] <= key */
    hi = p + b < cap ? p + b : cap;
  }
  while (lo < hi) {
    size_t mid = lo + ((hi - lo) >> 1);
    if (keys[mid] > key) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* the slot of `key` in a GA leaf, or -1 */
static inline ptrdiff_t mlsys__index_ga_pos(const mlsys__index_leaf *L, uint64_t key) {
  size_t cap = L->u.ga.cap, p, ub;
  if (!L->n) return -1;
  p = mlsys__index_lm_clamp(&L->m, key, cap);
  ub = mlsys__index_ga_upper(L->u.ga.keys, cap, p, key);
  if (ub == 0) return -1;
  if (L->u.ga.keys[ub - 1] != key) return -1;
  if (mlsys__index_bit(L->u.ga.bitmap, ub - 1)) return (ptrdiff_t)(ub - 1);
  if (key == UINT64_MAX) { /* trailing gaps also hold UINT64_MAX: the real one, if any, is the last set bit */
    ptrdiff_t r = mlsys__index_prev_set(L->u.ga.bitmap, (ptrdiff_t)ub - 1);
    if (r >= 0 && L->u.ga.keys[r] == key) return r;
  }
  return -1;
}

/* ---- FLog fragment scan: AVX2 (4 keys per compare) with a scalar fallback (B3.3, B3.6) -------------------------- */
static ptrdiff_t mlsys__index_scan_scalar(const uint64_t *k, uint32_t n, uint64_t key) {
  uint32_t i;
  for (i = 0; i < n; i++)
    if (k[i] == key) return (ptrdiff_t)i;
  return -1;
}
#ifdef MLSYS__INDEX_X86
__attribute__((target("avx2"))) static ptrdiff_t mlsys__index_scan_avx2(const uint64_t *k, uint32_t n, uint64_t key) {
  __m256i q = _mm256_set1_epi64x((long long)key);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i e0 = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(k + i)), q);
    __m256i e1 = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(k + i + 4)), q);
    int m = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_or_si256(e0, e1)));
    if (m) {
      int m0 = _mm256_movemask_pd(_mm256_castsi256_pd(e0));
      if (m0) return (ptrdiff_t)(i + (uint32_t)__builtin_ctz((unsigned)m0));
      return (ptrdiff_t)(i + 4 + (uint32_t)__builtin_ctz((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(e1))));
    }
  }
  if (i + 4 <= n) {
    int m = _mm256_movemask_pd(
        _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(k + i)), q)));
    if (m) return (ptrdiff_t)(i + (uint32_t)__builtin_ctz((unsigned)m));
    i += 4;
  }
  for (; i < n; i++)
    if (k[i] == key) return (ptrdiff_t)i;
  return -1;
}
#endif
static int mlsys__index_cpu_avx2(void) {
#ifdef MLSYS__INDEX_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}
static inline ptrdiff_t mlsys__index_scan(int avx2, const uint64_t *k, uint32_t n, uint64_t key) {
#ifdef MLSYS__INDEX_X86
  if (avx2) return mlsys__index_scan_avx2(k, n, key);
#else
  (void)avx2;
#endif
  return mlsys__index_scan_scalar(k, n, key);
}

static inline size_t mlsys__index_fcap(const mlsys_index *ix, const mlsys__index_leaf *L, uint32_t f) {
  size_t c;
  if (!L->u.fl.fk[f]) return 0;
  c = (size_t)1 << L->u.fl.lcap[f];
  return c < ix->cfg.mf_size ? c : ix->cfg.mf_size;
}

/* ---- leaf construction and destruction ------------------------------------------------------------------------ */
static size_t mlsys__index_ga_bytes(size_t cap) { return 16 * cap + 8 * ((cap + 63) / 64); }

static void mlsys__index_leaf_free(mlsys_index *ix, mlsys__index_leaf *L) {
  if (!L) return;
  if (L->h.type == MLSYS__IX_GA) {
    size_t cap = L->u.ga.cap;
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.keys, 8 * cap);
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.vals, 8 * cap);
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.bitmap, 8 * ((cap + 63) / 64));
  } else {
    uint32_t f;
    if (L->u.fl.meta) {
      for (f = 0; f < L->u.fl.nfrag; f++) {
        size_t c = mlsys__index_fcap(ix, L, f);
        mlsys__index_release(&ix->bytes_leaf, L->u.fl.fk[f], 8 * c);
        mlsys__index_release(&ix->bytes_leaf, L->u.fl.fv[f], 8 * c);
      }
      mlsys__index_release(&ix->bytes_meta, L->u.fl.meta, 21 * (size_t)L->u.fl.nfrag);
    }
  }
  mlsys__index_release(&ix->bytes_leaf, L, sizeof *L);
}

/* GA build (B3.2): model-based placement at the given capacity, pos_i = max(model(k_i), pos_{i-1}+1) but never
   beyond cap − (n − i); expected iterations/shifts from the placement (ALEX's expected cost). */
static mlsys__index_leaf *mlsys__index_ga_build(mlsys_index *ix, const uint64_t *k, const uint64_t *v, size_t n,
                                                size_t cap) {
  mlsys__index_leaf *L;
  size_t i, nw, run = 0;
  ptrdiff_t prev = -1;
  double it = 0, sh = 0;
  uint64_t fill;
  if (cap < MLSYS__IX_GA_MIN_CAP) cap = MLSYS__IX_GA_MIN_CAP;
  nw = (cap + 63) / 64;
  L = (mlsys__index_leaf *)mlsys__index_zalloc(&ix->bytes_leaf, sizeof *L);
  if (!L) return NULL;
  L->h.type = MLSYS__IX_GA;
  L->u.ga.cap = cap;
  L->u.ga.keys = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
  L->u.ga.vals = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
  L->u.ga.bitmap = (uint64_t *)mlsys__index_zalloc(&ix->bytes_leaf, 8 * nw);
  if (!L->u.ga.keys || !L->u.ga.vals || !L->u.ga.bitmap) {
    mlsys__index_leaf_free(ix, L);
    return NULL;
  }
  L->u.ga.thresh = (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap);
  mlsys__index_fit(k, n, n ? (double)cap / (double)n : 0, &L->m);
  for (i = 0; i < n; i++) {
    size_t pr = mlsys__index_lm_clamp(&L->m, k[i], cap);
    ptrdiff_t pos = (ptrdiff_t)pr;
    if (pos <= prev) pos = prev + 1;
    if (pos > (ptrdiff_t)(cap - (n - i))) pos = (ptrdiff_t)(cap - (n - i));
    it += mlsys__index_bitlen((uint64_t)(pos > (ptrdiff_t)pr ? pos - (ptrdiff_t)pr : (ptrdiff_t)pr - pos));
    if (pos == prev + 1 && i > 0) run++;
    else {
      sh += (double)run * (double)run;
      run = 1;
    }
    L->u.ga.keys[pos] = k[i];
    L->u.ga.vals[pos] = v[i];
    L->u.ga.bitmap[pos >> 6] |= 1ull << (pos & 63);
    prev = pos;
  }
  sh += (double)run * (double)run;
  fill = UINT64_MAX;
  for (i = cap; i-- > 0;) {
    if (mlsys__index_bit(L->u.ga.bitmap, i)) fill = L->u.ga.keys[i];
    else L->u.ga.keys[i] = fill;
  }
  L->n = n;
  L->u.ga.exp_iters = n ? it / (double)n : 0;
  L->u.ga.exp_shifts = n ? sh / (4.0 * (double)n) : 0; /* a run of r keys costs ≈ r/4 shifts, hit with prob ∝ r */
  return L;
}

/* FLog build (B3.3) from sorted keys with at least min_frag fragments: fit the fragment model by rank, doubling
   the fragment count (≤ Mnf) until no fragment exceeds mf_size. Returns 0 ok, 1 impossible (skew), -1 no memory. */
static int mlsys__index_flog_build(mlsys_index *ix, const uint64_t *k, const uint64_t *v, size_t n, size_t min_frag,
                                   mlsys__index_leaf **out) {
  size_t mf = ix->cfg.mf_size, mnf = ix->cfg.mnf, F, i, *bnd = NULL;
  mlsys__index_lm m;
  mlsys__index_leaf *L;
  unsigned char *meta;
  *out = NULL;
  F = (n + ix->flog_t - 1) / ix->flog_t;
  if (F < min_frag) F = min_frag;
  if (F < 1) F = 1;
  if (F > mnf) F = mnf;
  for (;;) {
    size_t f, maxc = 0, prevb = 0;
    mlsys_free(bnd);
    bnd = (size_t *)mlsys_alloc(F + 1, sizeof *bnd);
    if (!bnd) return -1;
    mlsys__index_fit(k, n, n ? (double)F / (double)n : 0, &m);
    f = 0;
    bnd[0] = 0;
    for (i = 0; i < n; i++) {
      size_t s = mlsys__index_lm_clamp(&m, k[i], F);
      while (f < s) bnd[++f] = i;
    }
    while (f < F) bnd[++f] = n;
    for (f = 0; f < F; f++) {
      size_t c = bnd[f + 1] - prevb;
      prevb = bnd[f + 1];
      if (c > maxc) maxc = c;
    }
    if (maxc <= mf) break;
    if (F >= mnf) { mlsys_free(bnd); return 1; }
    F = F * 2 < mnf ? F * 2 : mnf;
  }
  L = (mlsys__index_leaf *)mlsys__index_zalloc(&ix->bytes_leaf, sizeof *L);
  meta = L ? (unsigned char *)mlsys__index_zalloc(&ix->bytes_meta, 21 * F) : NULL;
  if (!meta) {
    mlsys__index_release(&ix->bytes_leaf, L, sizeof *L);
    mlsys_free(bnd);
    return -1;
  }
  L->h.type = MLSYS__IX_FLOG;
  L->m = m;
  L->n = n;
  L->u.fl.meta = meta;
  L->u.fl.nfrag = (uint32_t)F;
  L->u.fl.fk = (uint64_t **)(void *)meta;
  L->u.fl.fv = (uint64_t **)(void *)(meta + 8 * F);
  L->u.fl.tail = (uint32_t *)(void *)(meta + 16 * F);
  L->u.fl.lcap = meta + 20 * F;
  for (i = 0; i < F; i++) {
    size_t c = bnd[i + 1] - bnd[i], cap;
    if (!c) continue;
    cap = mlsys__index_pow2ceil(c);
    L->u.fl.lcap[i] = (uint8_t)mlsys__index_log2(cap);
    if (cap > mf) cap = mf;
    L->u.fl.fk[i] = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
    if (!L->u.fl.fk[i]) break;
    L->u.fl.fv[i] = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
    if (!L->u.fl.fv[i]) { /* keep the pair consistent for leaf_free */
      mlsys__index_release(&ix->bytes_leaf, L->u.fl.fk[i], 8 * cap);
      L->u.fl.fk[i] = NULL;
      break;
    }
    memcpy(L->u.fl.fk[i], k + bnd[i], 8 * c);
    memcpy(L->u.fl.fv[i], v + bnd[i], 8 * c);
    L->u.fl.tail[i] = (uint32_t)c;
  }
  mlsys_free(bnd);
  if (i < F) {
    mlsys__index_leaf_free(ix, L);
    return -1;
  }
  *out = L;
  return 0;
}

/* ---- subtree construction (bulk load, downward/sideways splits) -------------------------------------------- */
typedef struct {
  mlsys_index *ix;
  mlsys__index_leaf *head, *tail; /* the leaves built, in key order */
} mlsys__index_bctx;

static void mlsys__index_node_free(mlsys_index *ix, mlsys__index_node *nd);

static size_t mlsys__index_ga_bulk_cap(size_t n) {
  size_t c = (size_t)ceil((double)n / MLSYS__IX_INIT_DENSITY);
  if (c <= n) c = n + 1;
  return c < MLSYS__IX_GA_MIN_CAP ? MLSYS__IX_GA_MIN_CAP : c;
}
static int mlsys__index_fits_leaf(const mlsys_index *ix, size_t n) {
  if (ix->cfg.leaf == MLSYS_INDEX_GA) return mlsys__index_ga_bulk_cap(n) <= ix->ga_max_cap;
  return n <= ix->flog_bulk_max;
}

/* GA leaf cost (spec B3.2 expected cost) of keys k[0..n) at initial density, by simulating the placement */
static double mlsys__index_ga_cost(const mlsys_index *ix, const uint64_t *k, size_t n) {
  mlsys__index_lm m;
  size_t i, cap, run = 0;
  ptrdiff_t prev = -1;
  double it = 0, sh = 0;
  if (n <= 1) return 0;
  cap = mlsys__index_ga_bulk_cap(n);
  mlsys__index_fit(k, n, (double)cap / (double)n, &m);
  for (i = 0; i < n; i++) {
    size_t pr = mlsys__index_lm_clamp(&m, k[i], cap);
    ptrdiff_t pos = (ptrdiff_t)pr;
    if (pos <= prev) pos = prev + 1;
    if (pos > (ptrdiff_t)(cap - (n - i))) pos = (ptrdiff_t)(cap - (n - i));
    it += mlsys__index_bitlen((uint64_t)(pos > (ptrdiff_t)pr ? pos - (ptrdiff_t)pr : (ptrdiff_t)pr - pos));
    if (pos == prev + 1 && i > 0) run++;
    else { sh += (double)run * (double)run; run = 1; }
    prev = pos;
  }
  sh += (double)run * (double)run;
  return MLSYS__IX_W_ITERS * it / (double)n +
         MLSYS__IX_W_SHIFTS * sh / (4.0 * (double)n) * ix->cfg.expected_insert_frac;
}

static void mlsys__index_set_fanout(mlsys__index_model *M, unsigned log2c, int64_t off) {
  M->log2c = log2c;
  M->off = off;
  M->lo = -(double)off;
  M->hi = (double)((int64_t)((size_t)1 << log2c) - off);
}

/* choose the fanout of a model node over sorted keys (spec B3.1 proposal); fills m/log2c. A model whose
   partition would put every key in one slot is replaced by the median split (always makes progress). */
static void mlsys__index_choose_model(mlsys_index *ix, const uint64_t *k, size_t n, unsigned min_log2,
                                      mlsys__index_model *M) {
  unsigned j, best_j = min_log2, max_j = mlsys__index_log2(ix->max_fanout), since_best = 0;
  double best = HUGE_VAL;
  int any_fit = 0;
  mlsys__index_lm bm;
  memset(&bm, 0, sizeof bm);
  for (j = min_log2; j <= max_j; j++) {
    size_t F = (size_t)1 << j, i = 0, maxp = 0;
    mlsys__index_lm m;
    /* ALEX's traversal cost (alex_fanout_tree.h compute_level): kModelSizeWeight · fanout · (data-node struct +
       pointer) · total_keys / num_keys. The total/num factor makes a child pointer expensive in a small subtree, so a
       downward split of a small leaf does not get a huge fanout (without it, word-prefix keys grew model nodes of
       ~80k pointers and 500 bytes per key). */
    double total = (double)(ix->n > ix->bulk_n ? ix->n : ix->bulk_n);
    double cost = MLSYS__IX_W_MODEL * (double)(sizeof(mlsys__index_leaf) + sizeof(void *)) * (double)F *
                  (total > (double)n ? total : (double)n) / (double)n;
    int all_fit = 1;
    if (j > min_log2 && F > 4 * n + 4) break;
    mlsys__index_fit(k, n, (double)F / (double)n, &m);
    while (i < n) { /* partitions are contiguous because routing is monotone */
      size_t s = mlsys__index_lm_clamp(&m, k[i], F), e = i + 1, cnt;
      double c;
      while (e < n && mlsys__index_lm_clamp(&m, k[e], F) == s) e++;
      cnt = e - i;
      if (cnt > maxp) maxp = cnt;
      c = ix->cfg.leaf == MLSYS_INDEX_GA ? mlsys__index_ga_cost(ix, k + i, cnt) : 0;
      if (!mlsys__index_fits_leaf(ix, cnt)) { c += MLSYS__IX_W_NODE; all_fit = 0; }
      cost += c * (double)cnt / (double)n;
      i = e;
    }
    if (F >= 2 && maxp == n) cost = HUGE_VAL; /* no progress */
    if (cost < best) { best = cost; best_j = j; bm = m; since_best = 0; }
    else since_best++;
    if (all_fit) any_fit = 1;
    if (any_fit && since_best >= 2) break;
  }
  if (best == HUGE_VAL) { /* median split: keys < k[n/2] → slot 0, the rest → slot 1 */
    best_j = 1;
    bm.base = k[n / 2];
    bm.a = 1.0;
    bm.b = 1.0;
  }
  M->m = bm;
  mlsys__index_set_fanout(M, best_j, 0);
}

static mlsys__index_node *mlsys__index_build(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                             unsigned min_log2);

static void mlsys__index_link(mlsys__index_bctx *b, mlsys__index_leaf *L) {
  L->prev = b->tail;
  L->next = NULL;
  if (b->tail) b->tail->next = L;
  else b->head = L;
  b->tail = L;
}

/* a leaf for k[0..n) (n fits), or NULL: *oom says why */
static mlsys__index_node *mlsys__index_build_leaf(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                                  int *oom) {
  mlsys_index *ix = b->ix;
  mlsys__index_leaf *L = NULL;
  *oom = 0;
  if (ix->cfg.leaf == MLSYS_INDEX_GA) {
    L = mlsys__index_ga_build(ix, k, v, n, mlsys__index_ga_bulk_cap(n));
    if (!L) *oom = 1;
  } else {
    int r = mlsys__index_flog_build(ix, k, v, n, ix->cfg.nf, &L);
    if (r < 0) *oom = 1;
  }
  if (!L) return NULL;
  mlsys__index_link(b, L);
  return &L->h;
}

/* fill slots [s, s+len) of M from keys k[bnd[s]..bnd[s+len)), merging sparse neighbours into one child */
static int mlsys__index_assign(mlsys__index_bctx *b, mlsys__index_model *M, const uint64_t *k, const uint64_t *v,
                               const size_t *bnd, size_t s, size_t len, size_t merge_limit) {
  size_t C = (size_t)1 << M->log2c, cnt = bnd[s + len] - bnd[s], i;
  /* never merge every key of the node into one child: the recursion must shrink */
  if (len > 1 && (cnt > merge_limit || !mlsys__index_fits_leaf(b->ix, cnt) || (cnt && cnt == bnd[C]))) {
    if (mlsys__index_assign(b, M, k, v, bnd, s, len / 2, merge_limit)) return -1;
    return mlsys__index_assign(b, M, k, v, bnd, s + len / 2, len / 2, merge_limit);
  } else {
    mlsys__index_node *c = mlsys__index_build(b, k + bnd[s], v + bnd[s], cnt, 0);
    if (!c) return -1;
    c->dup = (uint8_t)mlsys__index_log2(len);
    c->parent = M;
    for (i = 0; i < len; i++) M->child[s + i] = c;
    return 0;
  }
}

/* slot boundaries: bnd[s] = first key index routed to slot >= s */
static void mlsys__index_bounds(const mlsys__index_model *M, const uint64_t *k, size_t n, size_t *bnd) {
  size_t C = (size_t)1 << M->log2c, f = 0, i;
  bnd[0] = 0;
  for (i = 0; i < n; i++) {
    size_t s = mlsys__index_route(M, k[i]);
    while (f < s) bnd[++f] = i;
  }
  while (f < C) bnd[++f] = n;
}

/* the subtree for sorted, unique k[0..n): a leaf if it fits (and min_log2 == 0), else a model node */
static mlsys__index_node *mlsys__index_build(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                             unsigned min_log2) {
  mlsys_index *ix = b->ix;
  mlsys__index_model *M;
  size_t C, *bnd, merge_limit;
  if (min_log2 == 0 && (mlsys__index_fits_leaf(ix, n) || n <= 1)) {
    int oom;
    mlsys__index_node *nd = mlsys__index_build_leaf(b, k, v, n, &oom);
    if (nd || oom) return nd; /* else: FLog skew, fall through to a model node */
  }
  M = (mlsys__index_model *)mlsys__index_zalloc(&ix->bytes_model, sizeof *M);
  if (!M) return NULL;
  M->h.type = MLSYS__IX_MODEL;
  if (n < 2) { /* only reached with min_log2 > 0 and no keys to separate */
    M->m.base = n ? k[0] : 0;
    mlsys__index_set_fanout(M, min_log2, 0);
  } else {
    mlsys__index_choose_model(ix, k, n, min_log2 ? min_log2 : 1, M);
  }
  C = (size_t)1 << M->log2c;
  M->child = (mlsys__index_node **)mlsys__index_zalloc(&ix->bytes_model, C * sizeof *M->child);
  bnd = (size_t *)mlsys_alloc(C + 1, sizeof *bnd);
  if (!M->child || !bnd) {
    mlsys_free(bnd);
    mlsys__index_node_free(ix, &M->h);
    return NULL;
  }
  mlsys__index_bounds(M, k, n, bnd);
  if (ix->cfg.leaf == MLSYS_INDEX_GA) {
    merge_limit = n / C;
    if (merge_limit < 64) merge_limit = 64;
  } else {
    merge_limit = (size_t)ix->cfg.nf * ix->flog_t;
  }
  if (mlsys__index_assign(b, M, k, v, bnd, 0, C, merge_limit)) {
    mlsys_free(bnd);
    mlsys__index_node_free(ix, &M->h);
    return NULL;
  }
  mlsys_free(bnd);
  return &M->h;
}

static void mlsys__index_node_free(mlsys_index *ix, mlsys__index_node *nd) {
  if (!nd) return;
  if (nd->type == MLSYS__IX_MODEL) {
    mlsys__index_model *M = (mlsys__index_model *)nd;
    size_t C = (size_t)1 << M->log2c, i = 0;
    if (M->child) {
      while (i < C) {
        mlsys__index_node *c = M->child[i];
        if (!c) { i++; continue; }
        i += (size_t)1 << c->dup;
        mlsys__index_node_free(ix, c);
      }
      mlsys__index_release(&ix->bytes_model, M->child, C * sizeof *M->child);
    }
    mlsys__index_release(&ix->bytes_model, M, sizeof *M);
  } else {
    mlsys__index_leaf_free(ix, (mlsys__index_leaf *)nd);
  }
}

/* ---- create / free ------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_index_create(const mlsys_index_config *cfg, const uint64_t *keys, const uint64_t *vals,
                                          size_t n, mlsys_index **out) {
  mlsys_index *ix;
  uint64_t *k = NULL, *v = NULL, *tk = NULL, *tv = NULL;
  size_t i, m = 0;
  mlsys__index_bctx b;
  mlsys__index_node *nd;
  mlsys_status st;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_create: out is NULL");
  *out = NULL;
  if (n && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_create: keys is NULL but n = %zu", n);
  if ((st = mlsys_index_config_check(cfg)) != MLSYS_OK) return st;
  ix = (mlsys_index *)mlsys_calloc(1, sizeof *ix);
  if (!ix) return MLSYS_ERR_NOMEM;
  ix->cfg = mlsys_index_config_resolved(cfg);
  ix->max_fanout = (size_t)1 << mlsys__index_log2(ix->cfg.max_leaf_bytes / 8);
  ix->ga_max_cap = (size_t)ix->cfg.max_leaf_bytes * 8 / 129;
  while (mlsys__index_ga_bytes(ix->ga_max_cap) > ix->cfg.max_leaf_bytes) ix->ga_max_cap--;
  ix->flog_t = ix->cfg.mf_size / 2 ? ix->cfg.mf_size / 2 : 1;
  ix->flog_max_keys = (size_t)ix->cfg.mnf * ix->cfg.mf_size;
  if (ix->flog_max_keys > ix->cfg.max_leaf_bytes / 16) ix->flog_max_keys = ix->cfg.max_leaf_bytes / 16;
  ix->flog_bulk_max = (size_t)ix->cfg.mnf * ix->flog_t;
  if (ix->flog_bulk_max > ix->flog_max_keys / 2) ix->flog_bulk_max = ix->flog_max_keys / 2;
  if (ix->flog_bulk_max < 1) ix->flog_bulk_max = 1;
  ix->avx2 = mlsys__index_cpu_avx2();
  if (n) {
    k = (uint64_t *)mlsys_alloc(n, 8);
    v = (uint64_t *)mlsys_alloc(n, 8);
    tk = (uint64_t *)mlsys_alloc(n, 8);
    tv = (uint64_t *)mlsys_alloc(n, 8);
    if (!k || !v || !tk || !tv) goto oom;
    memcpy(k, keys, n * 8);
    for (i = 0; i < n; i++) v[i] = vals ? vals[i] : mlsys_index_payload_of(keys[i]);
    mlsys__index_sort_pairs(k, v, n, tk, tv); /* stable: the first occurrence of a key comes first */
    for (i = 0; i < n; i++)
      if (i == 0 || k[i] != k[m - 1]) { k[m] = k[i]; v[m] = v[i]; m++; }
    mlsys_free(tk);
    mlsys_free(tv);
    tk = tv = NULL;
  }
  ix->bulk_n = m;
  b.ix = ix;
  b.head = b.tail = NULL;
  /* the root is always a model node (so every leaf has a parent); fanout 1 when everything fits one leaf */
  {
    mlsys__index_model *R = (mlsys__index_model *)mlsys__index_zalloc(&ix->bytes_model, sizeof *R);
    if (!R) goto oom;
    R->h.type = MLSYS__IX_MODEL;
    ix->root = R;
    if (m >= 2) mlsys__index_choose_model(ix, k, m, 0, R);
    else mlsys__index_set_fanout(R, 0, 0);
    {
      size_t C = (size_t)1 << R->log2c, *bnd;
      size_t merge_limit = ix->cfg.leaf == MLSYS_INDEX_GA ? (m / C > 64 ? m / C : 64)
                                                          : (size_t)ix->cfg.nf * ix->flog_t;
      R->child = (mlsys__index_node **)mlsys__index_zalloc(&ix->bytes_model, C * sizeof *R->child);
      bnd = (size_t *)mlsys_alloc(C + 1, sizeof *bnd);
      if (!R->child || !bnd) { mlsys_free(bnd); goto oom; }
      mlsys__index_bounds(R, k, m, bnd);
      if (C == 1) { /* a single leaf (or a subtree if the keys do not fit one) below a 1-slot root */
        nd = mlsys__index_build(&b, k, v, m, 0);
        if (!nd) { mlsys_free(bnd); goto oom; }
        nd->dup = 0;
        nd->parent = R;
        R->child[0] = nd;
      } else if (mlsys__index_assign(&b, R, k, v, bnd, 0, C, merge_limit)) {
        mlsys_free(bnd);
        goto oom;
      }
      mlsys_free(bnd);
    }
  }
  ix->n = m;
  mlsys_free(k);
  mlsys_free(v);
  *out = ix;
  return MLSYS_OK;
oom:
  mlsys_free(k);
  mlsys_free(v);
  mlsys_free(tk);
  mlsys_free(tv);
  mlsys_index_free(ix);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "mlsys_index_create: out of memory bulk-loading %zu keys", n);
}

MLSYS_DEF void mlsys_index_free(mlsys_index *ix) {
  if (!ix) return;
  mlsys__index_node_free(ix, (mlsys__index_node *)ix->root);
  mlsys_free(ix);
}

/* ---- lookups (no counters, no SMOs: §6.4) --------------------------------------------------------------------- */
MLSYS_DEF int mlsys_index_find(const mlsys_index *ix, uint64_t key, uint64_t *val) {
  const mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  switch (L->h.type) {
    case MLSYS__IX_GA: {
      ptrdiff_t p = mlsys__index_ga_pos(L, key);
      if (p < 0) return 0;
      if (val) *val = L->u.ga.vals[p];
      return 1;
    }
    default: {
      size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
      ptrdiff_t p;
      if (!L->u.fl.tail[f]) return 0;
      p = mlsys__index_scan(ix->avx2, L->u.fl.fk[f], L->u.fl.tail[f], key);
      if (p < 0) return 0;
      if (val) *val = L->u.fl.fv[f][p];
      return 1;
    }
  }
}

MLSYS_DEF int mlsys_index_update(mlsys_index *ix, uint64_t key, uint64_t val) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  if (L->h.type == MLSYS__IX_GA) {
    ptrdiff_t p = mlsys__index_ga_pos(L, key);
    if (p < 0) return 0;
    L->u.ga.vals[p] = val;
  } else {
    size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
    ptrdiff_t p = L->u.fl.tail[f] ? mlsys__index_scan(ix->avx2, L->u.fl.fk[f], L->u.fl.tail[f], key) : -1;
    if (p < 0) return 0;
    L->u.fl.fv[f][p] = val;
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_size(const mlsys_index *ix) { return ix ? ix->n : 0; }
MLSYS_DEF size_t mlsys_index_memory(const mlsys_index *ix) {
  return ix ? sizeof *ix + ix->bytes_model + ix->bytes_leaf + ix->bytes_meta : 0;
}

/* ---- SMO machinery ----------------------------------------------------------------------------------------------- */
/* the leaf's keys in ascending order (plus `key` if has_new), in fresh arrays the caller frees */
static int mlsys__index_gather(const mlsys_index *ix, const mlsys__index_leaf *L, int has_new, uint64_t key,
                               uint64_t val, uint64_t **ko, uint64_t **vo, size_t *no) {
  size_t n = L->n + (has_new ? 1 : 0), j = 0;
  uint64_t *k = (uint64_t *)mlsys_alloc(n ? n : 1, 8), *v = (uint64_t *)mlsys_alloc(n ? n : 1, 8);
  *ko = k;
  *vo = v;
  *no = n;
  if (!k || !v) return -1;
  if (L->h.type == MLSYS__IX_GA) {
    size_t i = mlsys__index_next_set(L->u.ga.bitmap, 0, L->u.ga.cap);
    for (; i < L->u.ga.cap; i = mlsys__index_next_set(L->u.ga.bitmap, i + 1, L->u.ga.cap)) {
      k[j] = L->u.ga.keys[i];
      v[j++] = L->u.ga.vals[i];
    }
  } else {
    uint32_t f;
    size_t maxt = 0;
    uint64_t *tk, *tv;
    for (f = 0; f < L->u.fl.nfrag; f++)
      if (L->u.fl.tail[f] > maxt) maxt = L->u.fl.tail[f];
    tk = (uint64_t *)mlsys_alloc(maxt ? maxt : 1, 8);
    tv = (uint64_t *)mlsys_alloc(maxt ? maxt : 1, 8);
    if (!tk || !tv) { mlsys_free(tk); mlsys_free(tv); return -1; }
    for (f = 0; f < L->u.fl.nfrag; f++) { /* fragments are ordered between each other: sort each, concatenate */
      uint32_t t = L->u.fl.tail[f];
      if (!t) continue;
      memcpy(k + j, L->u.fl.fk[f], 8 * (size_t)t);
      memcpy(v + j, L->u.fl.fv[f], 8 * (size_t)t);
      mlsys__index_sort_pairs(k + j, v + j, t, tk, tv);
      j += t;
    }
    mlsys_free(tk);
    mlsys_free(tv);
  }
  (void)ix;
  if (has_new) { /* insert in order */
    size_t p = j;
    while (p > 0 && k[p - 1] > key) { k[p] = k[p - 1]; v[p] = v[p - 1]; p--; }
    k[p] = key;
    v[p] = val;
  }
  return 0;
}

/* replace leaf L in its parent's slots by the subtree nd whose leaves are b->head..b->tail; frees L */
static size_t mlsys__index_block_of(const mlsys__index_leaf *L, const uint64_t *k, size_t n);
static void mlsys__index_swap_in(mlsys_index *ix, mlsys__index_leaf *L, mlsys__index_node *nd,
                                 mlsys__index_bctx *b, const uint64_t *k, size_t n) {
  mlsys__index_model *P = L->h.parent;
  size_t len = (size_t)1 << L->h.dup, s0 = mlsys__index_block_of(L, k, n), i;
  nd->dup = L->h.dup;
  nd->parent = P;
  for (i = 0; i < len; i++) P->child[s0 + i] = nd;
  b->head->prev = L->prev;
  if (L->prev) L->prev->next = b->head;
  b->tail->next = L->next;
  if (L->next) L->next->prev = b->tail;
  mlsys__index_leaf_free(ix, L);
}

/* the aligned block of L in P (by pointer, valid for empty leaves too): via routing a key when possible */
static size_t mlsys__index_block_of(const mlsys__index_leaf *L, const uint64_t *k, size_t n) {
  const mlsys__index_model *P = L->h.parent;
  size_t len = (size_t)1 << L->h.dup, C = (size_t)1 << P->log2c, i;
  if (n) {
    size_t s = mlsys__index_route(P, k[0]) & ~(len - 1);
    if (P->child[s] == &L->h) return s;
  }
  for (i = 0; i < C; i += len)
    if (P->child[i] == &L->h) return i;
  return 0;
}

/* free the leaves built into a chain that was not committed (and their model nodes, via the roots) */
static void mlsys__index_free_built(mlsys_index *ix, mlsys__index_node **roots, size_t nroots) {
  size_t i;
  for (i = 0; i < nroots; i++)
    if (roots[i]) mlsys__index_node_free(ix, roots[i]);
}

/* planning a sideways split: cut [s, s+len) into aligned pieces of at most `limit` keys (a one-slot piece may
   hold more; the caller then rejects the plan), never one piece with all keys */
#define MLSYS__IX_MAX_PIECES 128
typedef struct {
  size_t s, len, i0, i1;
} mlsys__index_piece;
typedef struct {
  mlsys__index_lm m;
  int64_t off;
  double lo, hi;
  size_t cmask;
  const uint64_t *k;
  size_t n, limit;
  mlsys__index_piece *pc;
  size_t *np;
} mlsys__index_plan;

static int mlsys__index_plan_block(const mlsys__index_plan *pl, size_t i0, size_t i1, size_t s, size_t len) {
  size_t cnt = i1 - i0;
  if (len == 1 || (cnt <= pl->limit && cnt < pl->n)) {
    mlsys__index_piece *p;
    if (*pl->np >= MLSYS__IX_MAX_PIECES) return -1;
    p = &pl->pc[(*pl->np)++];
    p->s = s;
    p->len = len;
    p->i0 = i0;
    p->i1 = i1;
    return 0;
  } else {
    size_t mid = s + len / 2, lo = i0, hi = i1; /* first key routed to a slot >= mid */
    while (lo < hi) {
      size_t m = lo + (hi - lo) / 2;
      if (mlsys__index_route_raw(&pl->m, pl->off, pl->lo, pl->hi, pl->cmask, pl->k[m]) >= mid) hi = m;
      else lo = m + 1;
    }
    if (mlsys__index_plan_block(pl, i0, lo, s, len / 2)) return -1;
    return mlsys__index_plan_block(pl, lo, i1, mid, len / 2);
  }
}

/* Split leaf L (B3.2 split sideways/downward, B3.3 case 3) into nodes holding the sorted keys k[0..n), which
   include the key being inserted. n_new: leaves wanted (2 for GA). Returns 0 or -1 (no memory; index unchanged). */
static int mlsys__index_split(mlsys_index *ix, mlsys__index_leaf *L, const uint64_t *k, const uint64_t *v, size_t n,
                              size_t n_new) {
  mlsys__index_model *P = L->h.parent;
  size_t C = (size_t)1 << P->log2c, len = (size_t)1 << L->h.dup, s0 = mlsys__index_block_of(L, k, n), i;
  mlsys__index_bctx b;
  b.ix = ix;
  b.head = b.tail = NULL;

  /* (0) a one-slot root is rebuilt over the keys: the "downward" split without adding a level */
  if (P == ix->root && C == 1) {
    mlsys__index_node *Q = mlsys__index_build(&b, k, v, n, 1);
    mlsys__index_model *R;
    if (!Q) return -1;
    R = (mlsys__index_model *)Q;
    R->h.parent = NULL;
    R->h.dup = 0;
    mlsys__index_leaf_free(ix, L);
    mlsys__index_release(&ix->bytes_model, P->child, sizeof *P->child);
    mlsys__index_release(&ix->bytes_model, P, sizeof *P);
    ix->root = R;
    ix->smo_down++;
    return 0;
  }

  /* (A) domain expansion of P when most keys lie beyond its edge (ascending/descending streams) */
  if (n >= 2 && C * 2 <= ix->max_fanout && (s0 + len == C || s0 == 0)) {
    int right = s0 + len == C;
    size_t out = 0;
    for (i = 0; i < n; i++) {
      double p = mlsys__index_lm_pos(&P->m, k[i]);
      if (right ? p >= P->hi : !(p >= P->lo)) out++;
    }
    /* expand when a real share of the keys is beyond the edge and a bounded growth covers the median of them;
       a few far outliers (fb) fail the second test and are split normally */
    if (out && out * 8 >= n) {
      /* grow by doubling (≤ 16x) until the median out-of-domain key is inside */
      double pmed = mlsys__index_lm_pos(&P->m, right ? k[n - 1 - out / 2] : k[out / 2]);
      size_t C2 = C;
      while (C2 * 2 <= ix->max_fanout && C2 < 16 * C &&
             (right ? pmed >= (double)((int64_t)C2 - P->off) : pmed < -(double)(P->off + (int64_t)(C2 - C))))
        C2 *= 2;
      int covered = right ? pmed < (double)((int64_t)C2 - P->off) : pmed >= -(double)(P->off + (int64_t)(C2 - C));
      if (covered && C2 * 2 <= ix->max_fanout && C2 < 16 * C) C2 *= 2; /* headroom for the stream */
      if (covered && C2 > C && C2 <= ix->max_fanout) {
        int64_t off2 = right ? P->off : P->off + (int64_t)(C2 - C);
        double lo2 = -(double)off2, hi2 = (double)((int64_t)C2 - off2);
        size_t shift = right ? 0 : C2 - C, nb = 0, bs[80], bl[80], maxp = 0, e, *bb;
        mlsys__index_node **nc, *roots[80];
        /* blocks: L's (moved by shift) + the new aligned power-of-two blocks */
        bs[nb] = s0 + shift; bl[nb++] = len;
        if (right) {
          size_t s = C;
          while (s < C2) { bs[nb] = s; bl[nb++] = s; s *= 2; } /* [C,2C), [2C,4C), ... */
        } else {
          size_t e2 = C2 - C, sz = C; /* [C2-2C, C2-C), [C2-4C, C2-2C), ... down to 0 */
          while (e2 > 0) { bs[nb] = e2 - sz; bl[nb++] = sz; e2 -= sz; sz *= 2; }
        }
        /* partition keys by the expanded routing into the blocks (contiguous, monotone) */
        bb = (size_t *)mlsys_alloc(nb + 1, sizeof *bb);
        if (!bb) return -1;
        {
          size_t *cnt = bb;
          memset(cnt, 0, (nb + 1) * sizeof *cnt);
          for (i = 0; i < n; i++) {
            size_t s = mlsys__index_route_raw(&P->m, off2, lo2, hi2, C2 - 1, k[i]), q;
            for (q = 0; q < nb; q++)
              if (s >= bs[q] && s < bs[q] + bl[q]) { cnt[q]++; break; }
          }
        }
        for (i = 0; i < nb; i++) if (bb[i] > maxp) maxp = bb[i];
        if (maxp < n) {
          /* keys are sorted and blocks are ordered by slot; sort block indices by start to take runs */
          size_t order[80], st = 0, q, r;
          for (q = 0; q < nb; q++) order[q] = q;
          for (q = 1; q < nb; q++)
            for (r = q; r > 0 && bs[order[r - 1]] > bs[order[r]]; r--) { e = order[r]; order[r] = order[r - 1]; order[r - 1] = e; }
          nc = (mlsys__index_node **)mlsys__index_alloc(&ix->bytes_model, C2 * sizeof *nc);
          if (!nc) { mlsys_free(bb); return -1; }
          memset(roots, 0, sizeof roots);
          for (q = 0; q < nb; q++) {
            size_t bi = order[q];
            roots[bi] = mlsys__index_build(&b, k + st, v + st, bb[bi], 0);
            if (!roots[bi]) {
              mlsys__index_free_built(ix, roots, nb);
              mlsys__index_release(&ix->bytes_model, nc, C2 * sizeof *nc);
              mlsys_free(bb);
              return -1;
            }
            st += bb[bi];
          }
          /* commit */
          memcpy(nc + shift, P->child, C * sizeof *nc);
          for (q = 0; q < nb; q++) {
            roots[q]->dup = (uint8_t)mlsys__index_log2(bl[q]);
            roots[q]->parent = P;
            for (r = 0; r < bl[q]; r++) nc[bs[q] + r] = roots[q];
          }
          mlsys__index_release(&ix->bytes_model, P->child, C * sizeof *nc);
          P->child = nc;
          P->log2c = mlsys__index_log2(C2);
          P->off = off2;
          P->lo = lo2;
          P->hi = hi2;
          b.head->prev = L->prev;
          if (L->prev) L->prev->next = b.head;
          b.tail->next = L->next;
          if (L->next) L->next->prev = b.tail;
          mlsys__index_leaf_free(ix, L);
          mlsys_free(bb);
          ix->smo_rootexp++;
          return 0;
        }
        mlsys_free(bb);
      }
    }
  }

  /* (B) sideways: cut L's block into aligned sub-blocks, after refining P by 2^e (e = 0.. while the fanout allows;
     doubling is exact: pos' = 2·pos, so old slot s maps to {2s, 2s+1}). Accept the first e whose pieces hold at
     most `limit` keys each; otherwise split downward. */
  {
    size_t parts = mlsys__index_pow2ceil(n_new), limit = (3 * n) / (2 * parts), e, nd = 0, cap_ptr;
    mlsys__index_piece pc[MLSYS__IX_MAX_PIECES];
    if (limit < 1) limit = 1;
    /* Refining P doubles every child's pointers, used or not. On clustered keys (word prefixes) repeated
       refinements multiplied pointer arrays to ~80k slots per model node and hundreds of bytes per key, so P may
       grow only while it has at most 32 pointers per distinct child (after this split); beyond that the leaf
       splits downward, where ALEX's model-size cost picks a fanout for its own keys. */
    for (i = 0; i < C; i += (size_t)1 << P->child[i]->dup) nd++;
    cap_ptr = 32 * (nd + parts);
    if (cap_ptr < C) cap_ptr = C;
    for (e = len >= 2 ? 0 : 1; e <= 6 && (C << e) <= ix->max_fanout && (C << e) <= cap_ptr; e++) {
      mlsys__index_plan pl;
      size_t np = 0, q, maxp = 0;
      pl.m = P->m;
      pl.m.a = ldexp(pl.m.a, (int)e);
      pl.m.b = ldexp(pl.m.b, (int)e);
      pl.off = P->off * ((int64_t)1 << e);
      pl.lo = ldexp(P->lo, (int)e);
      pl.hi = ldexp(P->hi, (int)e);
      pl.cmask = (C << e) - 1;
      pl.k = k;
      pl.n = n;
      pl.limit = limit;
      pl.pc = pc;
      pl.np = &np;
      if (mlsys__index_plan_block(&pl, 0, n, s0 << e, len << e)) continue;
      for (q = 0; q < np; q++) if (pc[q].i1 - pc[q].i0 > maxp) maxp = pc[q].i1 - pc[q].i0;
      if (maxp > limit && !(maxp < n && e == 6)) continue;
      {
        mlsys__index_node *roots[MLSYS__IX_MAX_PIECES], **nc = NULL;
        memset(roots, 0, sizeof roots);
        for (q = 0; q < np; q++) {
          roots[q] = mlsys__index_build(&b, k + pc[q].i0, v + pc[q].i0, pc[q].i1 - pc[q].i0, 0);
          if (!roots[q]) { mlsys__index_free_built(ix, roots, np); return -1; }
        }
        if (e) {
          size_t f = (size_t)1 << e, r;
          nc = (mlsys__index_node **)mlsys__index_alloc(&ix->bytes_model, (C << e) * sizeof *nc);
          if (!nc) { mlsys__index_free_built(ix, roots, np); return -1; }
          for (i = 0; i < C; i++)
            for (r = 0; r < f; r++) nc[i * f + r] = P->child[i];
          for (i = 0; i < C;) { /* every child now owns 2^e times the slots */
            mlsys__index_node *c = P->child[i];
            i += (size_t)1 << c->dup;
            c->dup = (uint8_t)(c->dup + e);
          }
          mlsys__index_release(&ix->bytes_model, P->child, C * sizeof *nc);
          P->child = nc;
          P->m = pl.m;
          mlsys__index_set_fanout(P, P->log2c + (unsigned)e, pl.off);
        }
        for (q = 0; q < np; q++) {
          size_t r;
          roots[q]->dup = (uint8_t)mlsys__index_log2(pc[q].len);
          roots[q]->parent = P;
          for (r = 0; r < pc[q].len; r++) P->child[pc[q].s + r] = roots[q];
        }
        b.head->prev = L->prev;
        if (L->prev) L->prev->next = b.head;
        b.tail->next = L->next;
        if (L->next) L->next->prev = b.tail;
        mlsys__index_leaf_free(ix, L);
        ix->smo_side++;
        return 0;
      }
    }
  }

  /* (D) downward: a new model node over the keys, in L's slots */
  {
    unsigned ml = mlsys__index_log2(mlsys__index_pow2ceil(n_new));
    mlsys__index_node *Q = mlsys__index_build(&b, k, v, n, ml ? ml : 1);
    if (!Q) return -1;
    mlsys__index_swap_in(ix, L, Q, &b, k, n);
    ix->smo_down++;
    return 0;
  }
}

/* rebuild L as one leaf (GA expand, FLog multiply). Returns 0, 1 (cannot: FLog skew), -1 (no memory). */
static int mlsys__index_rebuild_leaf(mlsys_index *ix, mlsys__index_leaf *L, const uint64_t *k, const uint64_t *v,
                                     size_t n, size_t ga_cap, size_t min_frag) {
  mlsys__index_bctx b;
  mlsys__index_leaf *N = NULL;
  b.ix = ix;
  b.head = b.tail = NULL;
  if (L->h.type == MLSYS__IX_GA) {
    N = mlsys__index_ga_build(ix, k, v, n, ga_cap);
    if (!N) return -1;
  } else {
    int r = mlsys__index_flog_build(ix, k, v, n, min_frag, &N);
    if (r) return r;
  }
  mlsys__index_link(&b, N);
  mlsys__index_swap_in(ix, L, &N->h, &b, k, n);
  return 0;
}

/* ---- insert --------------------------------------------------------------------------------------------------- */
static int mlsys__index_ga_should_split(const mlsys_index *ix, const mlsys__index_leaf *L) {
  double ins = (double)L->u.ga.ins, ai, as;
  if (L->u.ga.ins == 0) return 0;
  ai = (double)L->u.ga.iters / ins;
  as = (double)L->u.ga.shifts / ins;
  if (ix->cfg.msi == 0 && ix->cfg.msh == 0) { /* ALEX's cost model (alex_nodes.h) */
    double eif = ix->cfg.expected_insert_frac;
    double expected = MLSYS__IX_W_ITERS * L->u.ga.exp_iters + MLSYS__IX_W_SHIFTS * L->u.ga.exp_shifts * eif;
    double emp = MLSYS__IX_W_ITERS * ai + MLSYS__IX_W_SHIFTS * as * eif;
    if (emp > MLSYS__IX_W_NODE && emp > 1.5 * expected) return 1; /* significant_cost_deviation */
    if (as > 100 || L->u.ga.exp_shifts > 100) return 1;          /* catastrophic_cost */
    return 0;
  }
  /* MAPLE (§6.2.1) */
  return ai > (L->u.ga.exp_iters > ix->cfg.msi ? L->u.ga.exp_iters : ix->cfg.msi) ||
         as > (L->u.ga.exp_shifts > ix->cfg.msh ? L->u.ga.exp_shifts : ix->cfg.msh);
}

/* SMO for a GA leaf: expand (rebuild at density 0.6) or split; the new key is included when has_new */
static int mlsys__index_ga_smo(mlsys_index *ix, mlsys__index_leaf *L, int has_new, uint64_t key, uint64_t val,
                               int force_split) {
  uint64_t *k, *v;
  size_t n;
  int split = force_split || mlsys__index_ga_should_split(ix, L), r;
  if (mlsys__index_gather(ix, L, has_new, key, val, &k, &v, &n)) {
    mlsys_free(k);
    mlsys_free(v);
    return -1;
  }
  if (!split) {
    size_t cap = (size_t)ceil((double)n / MLSYS__IX_MIN_DENSITY);
    if (cap <= L->u.ga.cap) cap = 2 * L->u.ga.cap; /* tiny leaves: the minimum capacity already exceeds n/0.6 */
    if (cap <= ix->ga_max_cap && (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap) >= n + 1 && cap > L->u.ga.cap) {
      r = mlsys__index_rebuild_leaf(ix, L, k, v, n, cap, 0);
      if (!r) ix->smo_expand++;
      mlsys_free(k);
      mlsys_free(v);
      return r ? -1 : 0;
    }
  }
  r = mlsys__index_split(ix, L, k, v, n, 2);
  mlsys_free(k);
  mlsys_free(v);
  return r;
}

static int mlsys__index_ga_insert(mlsys_index *ix, mlsys__index_leaf *L, uint64_t key, uint64_t val) {
  uint64_t *keys = L->u.ga.keys, *vals = L->u.ga.vals, *bm = L->u.ga.bitmap;
  size_t cap = L->u.ga.cap, p = mlsys__index_lm_clamp(&L->m, key, cap), ub, ins, nr, pos;
  ptrdiff_t r;
  uint64_t shifts = 0;
  ub = mlsys__index_ga_upper(keys, cap, p, key);
  r = (ub > 0 && mlsys__index_bit(bm, ub - 1)) ? (ptrdiff_t)ub - 1 : mlsys__index_prev_set(bm, (ptrdiff_t)ub - 1);
  if (r >= 0 && keys[r] == key) return 0;
  if (L->n + 1 > L->u.ga.thresh) return mlsys__index_ga_smo(ix, L, 1, key, val, 0) < 0 ? -1 : 1;
  ins = (size_t)(r + 1);
  nr = mlsys__index_next_set(bm, ins, cap);
  if (ins < nr) { /* a gap run (ins..nr): place at the predicted slot inside it (keeps the model accurate) */
    size_t i;
    pos = p < ins ? ins : p >= nr ? nr - 1 : p;
    for (i = ins; i < pos; i++) keys[i] = key;
  } else { /* shift toward the nearest gap */
    size_t gr = mlsys__index_next_clear(bm, ins, cap);
    ptrdiff_t gl = mlsys__index_prev_clear(bm, (ptrdiff_t)ins - 1);
    if (gr < cap && (gl < 0 || gr - ins <= ins - 1 - (size_t)gl)) {
      memmove(keys + ins + 1, keys + ins, (gr - ins) * 8);
      memmove(vals + ins + 1, vals + ins, (gr - ins) * 8);
      bm[gr >> 6] |= 1ull << (gr & 63);
      shifts = gr - ins;
      pos = ins;
    } else {
      size_t g = (size_t)gl;
      memmove(keys + g, keys + g + 1, (ins - 1 - g) * 8);
      memmove(vals + g, vals + g + 1, (ins - 1 - g) * 8);
      bm[g >> 6] |= 1ull << (g & 63);
      shifts = ins - 1 - g;
      pos = ins - 1;
    }
  }
  keys[pos] = key;
  vals[pos] = val;
  bm[pos >> 6] |= 1ull << (pos & 63);
  L->n++;
  {
    uint64_t it = mlsys__index_bitlen((uint64_t)(pos > p ? pos - p : p - pos));
    L->u.ga.ins++;
    L->u.ga.iters += it;
    L->u.ga.shifts += shifts;
    ix->ga_ins++;
    ix->ga_iters += it;
    ix->ga_shifts += shifts;
  }
  ix->n++; /* counted here; the SMO path below must not count again */
  if (ix->cfg.smo_check_every_insert && L->u.ga.ins >= 16 && mlsys__index_ga_should_split(ix, L)) {
    /* the key is in either way; a split that fails for lack of memory leaves the index valid */
    (void)mlsys__index_ga_smo(ix, L, 0, 0, 0, 1);
  }
  return 2;
}

static int mlsys__index_flog_insert(mlsys_index *ix, mlsys__index_leaf *L, uint64_t key, uint64_t val) {
  size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag), cap;
  uint32_t t = L->u.fl.tail[f];
  if (t && mlsys__index_scan(ix->avx2, L->u.fl.fk[f], t, key) >= 0) return 0;
  cap = mlsys__index_fcap(ix, L, (uint32_t)f);
  if (L->n + 1 <= ix->flog_max_keys) {
    if (t < cap) goto append;
    if (cap < ix->cfg.mf_size) { /* case 1: expand the fragment by doubling (≤ mf_size) */
      size_t nc = cap ? 2 * cap : 1;
      uint64_t *nk, *nv;
      if (nc > ix->cfg.mf_size) nc = ix->cfg.mf_size;
      nk = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * nc);
      nv = nk ? (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * nc) : NULL;
      if (!nv) { mlsys__index_release(&ix->bytes_leaf, nk, 8 * nc); return -1; }
      if (t) {
        memcpy(nk, L->u.fl.fk[f], 8 * (size_t)t);
        memcpy(nv, L->u.fl.fv[f], 8 * (size_t)t);
      }
      mlsys__index_release(&ix->bytes_leaf, L->u.fl.fk[f], 8 * cap);
      mlsys__index_release(&ix->bytes_leaf, L->u.fl.fv[f], 8 * cap);
      L->u.fl.fk[f] = nk;
      L->u.fl.fv[f] = nv;
      L->u.fl.lcap[f] = (uint8_t)mlsys__index_log2(mlsys__index_pow2ceil(nc));
      ix->smo_fexp++;
      goto append;
    }
  }
  {
    uint64_t *k, *v;
    size_t n;
    int r = 1;
    if (mlsys__index_gather(ix, L, 1, key, val, &k, &v, &n)) {
      mlsys_free(k);
      mlsys_free(v);
      return -1;
    }
    if (n <= ix->flog_max_keys && L->u.fl.nfrag < ix->cfg.mnf) { /* case 2: multiply the fragments */
      size_t nf2 = 2 * (size_t)L->u.fl.nfrag;
      if (nf2 > ix->cfg.mnf) nf2 = ix->cfg.mnf;
      r = mlsys__index_rebuild_leaf(ix, L, k, v, n, 0, nf2);
      if (r == 0) ix->smo_fmul++;
    }
    if (r > 0) { /* case 3: split the leaf into n_new leaves of nf fragments */
      double per = (double)ix->cfg.nf * (double)ix->cfg.mf_size * 0.5;
      size_t n_new = (size_t)ceil((double)n / (per > 0 ? per : 1));
      r = mlsys__index_split(ix, L, k, v, n, n_new < 2 ? 2 : n_new);
    }
    mlsys_free(k);
    mlsys_free(v);
    return r < 0 ? -1 : 1;
  }
append:
  L->u.fl.fk[f][t] = key;
  L->u.fl.fv[f][t] = val;
  L->u.fl.tail[f] = t + 1;
  L->n++;
  return 1;
}

MLSYS_DEF int mlsys_index_insert(mlsys_index *ix, uint64_t key, uint64_t val) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  int r;
  if (L->h.type == MLSYS__IX_GA) {
    r = mlsys__index_ga_insert(ix, L, key, val);
    if (r == 2) return 1; /* plain insert, already counted */
  } else {
    r = mlsys__index_flog_insert(ix, L, key, val);
  }
  if (r == 1) ix->n++;
  return r;
}

/* ---- erase ---------------------------------------------------------------------------------------------------- */
MLSYS_DEF int mlsys_index_erase(mlsys_index *ix, uint64_t key) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  if (L->h.type == MLSYS__IX_GA) {
    ptrdiff_t p = mlsys__index_ga_pos(L, key), j;
    uint64_t fill, *keys = L->u.ga.keys, *bm = L->u.ga.bitmap;
    if (p < 0) return 0;
    bm[p >> 6] &= ~(1ull << (p & 63));
    fill = (size_t)p + 1 < L->u.ga.cap ? keys[p + 1] : UINT64_MAX; /* the next real key (or the gap copy of it) */
    for (j = p; j >= 0 && !mlsys__index_bit(bm, (size_t)j); j--) keys[j] = fill;
  } else {
    size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
    uint32_t t = L->u.fl.tail[f];
    ptrdiff_t p = t ? mlsys__index_scan(ix->avx2, L->u.fl.fk[f], t, key) : -1;
    if (p < 0) return 0;
    L->u.fl.fk[f][p] = L->u.fl.fk[f][t - 1]; /* swap with the last key (B3.3 delete) */
    L->u.fl.fv[f][p] = L->u.fl.fv[f][t - 1];
    L->u.fl.tail[f] = t - 1;
  }
  L->n--;
  ix->n--;
  return 1;
}

/* ---- scan ----------------------------------------------------------------------------------------------------- */
static int mlsys__index_pair_cmp(const void *a, const void *b) {
  uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
  return x < y ? -1 : x > y;
}

MLSYS_DEF size_t mlsys_index_scan(const mlsys_index *ix, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  const mlsys__index_leaf *L;
  size_t got = 0;
  uint64_t stackbuf[2 * 512], *scratch = stackbuf;
  if (!ix || !max) return 0;
  if (ix->cfg.leaf == MLSYS_INDEX_FLOG && ix->cfg.mf_size > 512) {
    scratch = (uint64_t *)mlsys_alloc(2 * (size_t)ix->cfg.mf_size, 8);
    if (!scratch) return 0;
  }
  L = mlsys__index_descend(ix, lo);
  for (; L && got < max; L = L->next) {
    if (L->h.type == MLSYS__IX_GA) {
      size_t cap = L->u.ga.cap, i;
      if (!L->n) continue;
      i = mlsys__index_ga_upper(L->u.ga.keys, cap, mlsys__index_lm_clamp(&L->m, lo, cap), lo);
      /* upper bound of lo: step back to include lo itself */
      if (i > 0 && L->u.ga.keys[i - 1] == lo) {
        ptrdiff_t r = mlsys__index_prev_set(L->u.ga.bitmap, (ptrdiff_t)i - 1);
        if (r >= 0 && L->u.ga.keys[r] == lo) i = (size_t)r;
      }
      for (i = mlsys__index_next_set(L->u.ga.bitmap, i, cap); i < cap && got < max;
           i = mlsys__index_next_set(L->u.ga.bitmap, i + 1, cap)) {
        if (L->u.ga.keys[i] < lo) continue;
        if (keys) keys[got] = L->u.ga.keys[i];
        if (vals) vals[got] = L->u.ga.vals[i];
        got++;
      }
    } else {
      uint32_t f;
      for (f = 0; f < L->u.fl.nfrag && got < max; f++) {
        uint32_t t = L->u.fl.tail[f], i, c = 0;
        for (i = 0; i < t; i++)
          if (L->u.fl.fk[f][i] >= lo) {
            scratch[2 * c] = L->u.fl.fk[f][i];
            scratch[2 * c + 1] = L->u.fl.fv[f][i];
            c++;
          }
        if (c > 1) qsort(scratch, c, 16, mlsys__index_pair_cmp);
        for (i = 0; i < c && got < max; i++) {
          if (keys) keys[got] = scratch[2 * i];
          if (vals) vals[got] = scratch[2 * i + 1];
          got++;
        }
      }
    }
  }
  if (scratch != stackbuf) mlsys_free(scratch);
  return got;
}

/* ---- stats ----------------------------------------------------------------------------------------------------- */
static void mlsys__index_stats_walk(const mlsys__index_node *nd, size_t depth, mlsys_index_stats *st) {
  if (nd->type == MLSYS__IX_MODEL) {
    const mlsys__index_model *M = (const mlsys__index_model *)nd;
    size_t C = (size_t)1 << M->log2c, i = 0;
    st->n_model_nodes++;
    while (i < C) {
      const mlsys__index_node *c = M->child[i];
      mlsys__index_stats_walk(c, depth + 1, st);
      i += (size_t)1 << c->dup;
    }
  } else {
    const mlsys__index_leaf *L = (const mlsys__index_leaf *)nd;
    st->n_leaves++;
    if (L->h.type == MLSYS__IX_FLOG) st->n_fragments += L->u.fl.nfrag;
    if (depth > st->depth_max) st->depth_max = depth;
  }
}

MLSYS_DEF void mlsys_index_get_stats(const mlsys_index *ix, mlsys_index_stats *st) {
  memset(st, 0, sizeof *st);
  if (!ix) return;
  mlsys__index_stats_walk(&ix->root->h, 0, st);
  st->n_keys = ix->n;
  st->smo_expand = ix->smo_expand;
  st->smo_split_sideways = ix->smo_side;
  st->smo_split_down = ix->smo_down;
  st->smo_frag_expand = ix->smo_fexp;
  st->smo_frag_multiply = ix->smo_fmul;
  st->smo_root_expand = ix->smo_rootexp;
  st->avg_search_iters = ix->ga_ins ? (double)ix->ga_iters / (double)ix->ga_ins : 0;
  st->avg_shifts = ix->ga_ins ? (double)ix->ga_shifts / (double)ix->ga_ins : 0;
  st->bytes_model_nodes = ix->bytes_model;
  st->bytes_leaves = ix->bytes_leaf;
  st->bytes_flog_metadata = ix->bytes_meta;
}

/* ---- invariant check (spec §7.2 test 2) -------------------------------------------------------------------- */
typedef struct {
  const mlsys_index *ix;
  const mlsys__index_leaf *expect; /* the chain must visit leaves in tree order */
  size_t leaf_no, total;
  int have_prev;
  uint64_t prev_key;
  uint64_t *tk, *tv; /* scratch for sorting a FLog leaf */
  size_t tcap;
} mlsys__index_chk;

static mlsys_status mlsys__index_check_leaf(mlsys__index_chk *c, const mlsys__index_leaf *L, size_t depth) {
  const mlsys_index *ix = c->ix;
  size_t no = c->leaf_no, i;
  const char *kind = L->h.type == MLSYS__IX_GA ? "GA" : "FLog";
  uint64_t *k, *v;
  size_t n;
  if (L != c->expect)
    return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s, depth %zu): the leaf chain is out of tree order", no, kind,
                           depth);
  c->expect = L->next;
  if (L->next && L->next->prev != L)
    return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): next->prev does not point back", no, kind);
  if (L->h.type == MLSYS__IX_GA) {
    size_t cap = L->u.ga.cap, cnt = 0;
    uint64_t fill = UINT64_MAX;
    if (L->n > L->u.ga.thresh || L->u.ga.thresh != (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap))
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): %zu keys in %zu slots exceeds density 0.8", no, L->n, cap);
    for (i = cap; i-- > 0;) {
      if (mlsys__index_bit(L->u.ga.bitmap, i)) {
        if (cnt && L->u.ga.keys[i] >= fill)
          return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): keys not strictly increasing at slot %zu", no, i);
        fill = L->u.ga.keys[i];
        cnt++;
      } else if (L->u.ga.keys[i] != fill) {
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): gap slot %zu holds %llu, not the next key %llu", no, i,
                               (unsigned long long)L->u.ga.keys[i], (unsigned long long)fill);
      }
    }
    for (i = cap; i < ((cap + 63) / 64) * 64; i++)
      if (mlsys__index_bit(L->u.ga.bitmap, i))
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): bitmap bit %zu set beyond capacity", no, i);
    if (cnt != L->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): bitmap has %zu keys, count says %zu", no, cnt, L->n);
  } else {
    uint32_t f;
    size_t sum = 0;
    if (L->u.fl.nfrag < 1 || L->u.fl.nfrag > ix->cfg.mnf)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): %u fragments outside 1..Mnf (%u)", no, L->u.fl.nfrag,
                             ix->cfg.mnf);
    if (L->n > ix->flog_max_keys)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): %zu keys exceed the leaf limit %zu", no, L->n,
                             ix->flog_max_keys);
    for (f = 0; f < L->u.fl.nfrag; f++) {
      size_t cap = mlsys__index_fcap(ix, L, f), t = L->u.fl.tail[f];
      if (!!L->u.fl.fk[f] != !!L->u.fl.fv[f])
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: key/value arrays disagree", no, f);
      if (t > cap || cap > ix->cfg.mf_size)
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: tail %zu > cap %zu or cap > mf_size %u", no, f,
                               t, cap, ix->cfg.mf_size);
      for (i = 0; i < t; i++)
        if (mlsys__index_lm_clamp(&L->m, L->u.fl.fk[f][i], L->u.fl.nfrag) != f)
          return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: key %llu belongs to fragment %zu", no, f,
                                 (unsigned long long)L->u.fl.fk[f][i],
                                 mlsys__index_lm_clamp(&L->m, L->u.fl.fk[f][i], L->u.fl.nfrag));
      sum += t;
    }
    if (sum != L->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): tails sum to %zu, count says %zu", no, sum, L->n);
  }
  /* global order and routing: every key ascends across the chain and descends from the root to this leaf */
  if (mlsys__index_gather(ix, L, 0, 0, 0, &k, &v, &n)) {
    mlsys_free(k);
    mlsys_free(v);
    return MLSYS_ERR_NOMEM;
  }
  for (i = 0; i < n; i++) {
    if (c->have_prev && k[i] <= c->prev_key) {
      mlsys_free(k);
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): key %llu not above the previous key %llu", no, kind,
                             (unsigned long long)k[i], (unsigned long long)c->prev_key);
    }
    c->have_prev = 1;
    c->prev_key = k[i];
    if (mlsys__index_descend(ix, k[i]) != L) {
      mlsys_free(k);
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): key %llu is not routed to its leaf", no, kind,
                             (unsigned long long)k[i]);
    }
  }
  mlsys_free(k);
  mlsys_free(v);
  c->total += L->n;
  c->leaf_no++;
  return MLSYS_OK;
}

static mlsys_status mlsys__index_check_node(mlsys__index_chk *c, const mlsys__index_node *nd, size_t depth) {
  const mlsys__index_model *M;
  size_t C, i = 0;
  if (nd->type != MLSYS__IX_MODEL) return mlsys__index_check_leaf(c, (const mlsys__index_leaf *)nd, depth);
  M = (const mlsys__index_model *)nd;
  C = (size_t)1 << M->log2c;
  if (C > c->ix->max_fanout && C > 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: %zu children exceed the max fanout %zu", depth, C,
                           c->ix->max_fanout);
  if (M->lo != -(double)M->off || M->hi != (double)((int64_t)C - M->off))
    return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: domain bounds disagree with the offset", depth);
  while (i < C) {
    const mlsys__index_node *ch = M->child[i];
    size_t len, j;
    mlsys_status st;
    if (!ch) return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: slot %zu is empty", depth, i);
    len = (size_t)1 << ch->dup;
    if (i % len || i + len > C)
      return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: child at slot %zu owns %zu unaligned slots",
                             depth, i, len);
    for (j = 1; j < len; j++)
      if (M->child[i + j] != ch)
        return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: slot %zu should repeat slot %zu", depth,
                               i + j, i);
    if (ch->parent != M)
      return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: child at slot %zu has a wrong parent", depth, i);
    if ((st = mlsys__index_check_node(c, ch, depth + 1)) != MLSYS_OK) return st;
    i += len;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_check(const mlsys_index *ix) {
  mlsys__index_chk c;
  mlsys_status st;
  mlsys_index_stats s;
  if (!ix) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_check: index is NULL");
  memset(&c, 0, sizeof c);
  c.ix = ix;
  { /* the leftmost leaf (slot 0 all the way down; key 0 need not route there when slot 0 is unreachable) */
    const mlsys__index_node *nd = &ix->root->h;
    while (nd->type == MLSYS__IX_MODEL) nd = ((const mlsys__index_model *)nd)->child[0];
    c.expect = (const mlsys__index_leaf *)nd;
  }
  if (c.expect->prev) return mlsys_set_error(MLSYS_ERR_ARG, "leaf 0: the first leaf has a predecessor");
  if (ix->root->h.parent) return mlsys_set_error(MLSYS_ERR_ARG, "root: has a parent");
  if ((st = mlsys__index_check_node(&c, &ix->root->h, 1)) != MLSYS_OK) return st;
  if (c.expect) return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu: the chain has leaves the tree does not", c.leaf_no);
  if (c.total != ix->n)
    return mlsys_set_error(MLSYS_ERR_ARG, "index: leaves hold %zu keys, size says %zu", c.total, ix->n);
  mlsys_index_get_stats(ix, &s);
  if (s.bytes_flog_metadata != 21 * s.n_fragments)
    return mlsys_set_error(MLSYS_ERR_ARG, "index: FLog metadata is %zu bytes for %zu fragments (want 21 each)",
                           s.bytes_flog_metadata, s.n_fragments);
  return MLSYS_OK;
}

#endif
#endif
#endif /* MLSYS_INDEX_H */
