/* index_parts/baselines.h — part of mlsys_index.h (see its section list). Declarations first, then the implementation.

   3. Baselines (spec PART B4, items 3 and "sorted array"): the reference points MAPLE's leaves are measured against.

   mlsys_index_btree — an in-memory B+tree over uint64 keys with uint64 payloads. The thesis's Fig. 3.5 compares
     ALEX and FLog with "a traditional B+Tree index" without naming it; ALEX's paper and SOSD use STX B+Tree 0.9.
     The spec's proposal (B4.3) is an in-memory B+tree in C with 256-byte or 4 KB nodes; this is that tree, built
     the way STX is (fully packed bulk load, split in halves, borrow-or-merge on underflow) so that it is a fair
     stand-in:
       - every node is node_bytes (0 → 256) bytes; a leaf holds cap = (node_bytes − 16) / 16 keys and payloads
         (a 16-byte header: count, next-leaf link), an inner node cap keys and cap + 1 children (an 8-byte count
         header), so 256-byte nodes hold 15 keys, 4 KB nodes 255, 64-byte nodes 3 (the smallest allowed);
       - nodes come from 64-byte-aligned slabs, so 256-byte nodes sit on 4 cache lines; lookups never allocate;
       - in-node search is a branch-free count of the keys ≤ (inner) or < (leaf) the probe: a linear count when a
         node holds ≤ 32 keys (the whole node is a few cache lines; no mispredicted branches), a branch-free binary
         search above that (4 KB nodes);
       - separators: child i of an inner node with keys K holds the keys in [K[i−1], K[i]); a split copies the first
         key of the right node up;
       - bulk load (create) sorts and de-duplicates the keys (first occurrence wins), then packs leaves completely,
         spreading the keys evenly as STX 0.9's bulk_load does, so a bulk-loaded tree has the least possible depth
         and its first inserts split leaves (the behaviour of the SOSD / ALEX B+Tree baseline);
       - fill: every node but the root holds at least ceil(cap / 2) keys (leaf) or ceil((cap + 1) / 2) children
         (inner); erase restores it by borrowing one entry from a sibling under the same parent, or else merging
         with it (no lazy deletes), and shrinks the root when it has one child;
       - depth counts levels: a tree that is one leaf (also the empty tree) has depth 1.
     mlsys_index_btree_memory reports every byte the tree has allocated (the handle, the split scratch, the slab
     directory and the slabs with their alignment slack). Nodes freed by merges go to a free list and are reused;
     slabs are returned only by mlsys_index_btree_free, so the figure does not fall after erases.

   mlsys_index_sorted — keys and payloads in two sorted arrays with a branch-free binary search: the read-only lower
     bound of memory and a fair read baseline; insert and erase move the tail (O(n)) and exist for completeness.
     Capacity grows by 1.5× (at least 16), halves when under a quarter is used (above 64), and is freed when empty.

   Both: keys 0 and UINT64_MAX are ordinary keys; keys need not be sorted at create; vals NULL → payloads
   mlsys_index_payload_of(key); a repeated key keeps its first occurrence. Neither is safe for concurrent writers
   (one writer, or any number of readers). */
#ifndef MLSYS_INDEX_BASELINES_H
#define MLSYS_INDEX_BASELINES_H
/* From mlsys_index.h the shared types are already there; re-including it would re-run its part list and compile this
   part's implementation before its declarations. */
#ifndef MLSYS_INDEX_H
#include "mlsys_index.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---- B+tree ---------------------------------------------------------------------------------------------------- */
typedef struct mlsys_index_btree mlsys_index_btree;
/* Bulk-loads n keys (any order; repeats keep the first occurrence) with payloads vals (NULL → mlsys_index_payload_of).
   node_bytes: 0 → 256; 64 ≤ node_bytes ≤ 16 MiB (at least 3 keys a node). Errors: MLSYS_ERR_ARG (node_bytes, keys
   NULL with n > 0, out NULL, each named), MLSYS_ERR_NOMEM. *out is NULL on error. */
MLSYS_DEF mlsys_status mlsys_index_btree_create(size_t node_bytes, const uint64_t *keys, const uint64_t *vals, size_t n,
                                                mlsys_index_btree **out);
MLSYS_DEF int mlsys_index_btree_find(const mlsys_index_btree *t, uint64_t key, uint64_t *val);   /* 1 found (*val, if
                                                                                                     val), 0 absent */
/* 1 inserted; 0 key present (tree unchanged); -1 out of memory (tree unchanged, mlsys_last_error says so). */
MLSYS_DEF int mlsys_index_btree_insert(mlsys_index_btree *t, uint64_t key, uint64_t val);
MLSYS_DEF int mlsys_index_btree_update(mlsys_index_btree *t, uint64_t key, uint64_t val);   /* 1 updated, 0 absent */
MLSYS_DEF int mlsys_index_btree_erase(mlsys_index_btree *t, uint64_t key);                  /* 1 erased, 0 absent */
/* Copies up to max entries with key ≥ lo in ascending order into keys / vals (either may be NULL); returns how many. */
MLSYS_DEF size_t mlsys_index_btree_scan(const mlsys_index_btree *t, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_btree_size(const mlsys_index_btree *t);     /* keys held */
MLSYS_DEF size_t mlsys_index_btree_memory(const mlsys_index_btree *t);   /* every byte allocated (see above) */
MLSYS_DEF size_t mlsys_index_btree_depth(const mlsys_index_btree *t);    /* levels; 1 for a single leaf */
/* Walks the whole tree: keys strictly increasing and inside their separators' range, node fill (above), every leaf at
   the same depth, the leaf chain visiting the leaves in key order and ending in NULL, size and live node count. The
   first violation is returned as MLSYS_ERR_ARG with a message naming it ("btree: leaf at depth 3 holds 1 keys, the
   minimum is 2"). O(size). */
MLSYS_DEF mlsys_status mlsys_index_btree_check(const mlsys_index_btree *t);
MLSYS_DEF void mlsys_index_btree_free(mlsys_index_btree *t);   /* NULL is fine */

/* ---- sorted array ---------------------------------------------------------------------------------------------- */
typedef struct mlsys_index_sorted mlsys_index_sorted;   /* sorted arrays of keys and payloads; binary search */
/* Errors: MLSYS_ERR_ARG (keys NULL with n > 0, out NULL), MLSYS_ERR_NOMEM; *out is NULL on error. */
MLSYS_DEF mlsys_status mlsys_index_sorted_create(const uint64_t *keys, const uint64_t *vals, size_t n, mlsys_index_sorted **out);
MLSYS_DEF int mlsys_index_sorted_find(const mlsys_index_sorted *s, uint64_t key, uint64_t *val);      /* 1 / 0 */
MLSYS_DEF int mlsys_index_sorted_insert(mlsys_index_sorted *s, uint64_t key, uint64_t val);   /* 1 / 0 present / -1 nomem */
MLSYS_DEF int mlsys_index_sorted_update(mlsys_index_sorted *s, uint64_t key, uint64_t val);   /* 1 / 0 */
MLSYS_DEF int mlsys_index_sorted_erase(mlsys_index_sorted *s, uint64_t key);                  /* 1 / 0 */
MLSYS_DEF size_t mlsys_index_sorted_scan(const mlsys_index_sorted *s, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_sorted_size(const mlsys_index_sorted *s);
MLSYS_DEF size_t mlsys_index_sorted_memory(const mlsys_index_sorted *s);   /* the handle + 16 bytes × capacity */
MLSYS_DEF void mlsys_index_sorted_free(mlsys_index_sorted *s);            /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_INDEX_BASELINES_H */

#ifdef MLSYS_INDEX_IMPLEMENTATION
#ifndef MLSYS_INDEX_BASELINES_IMPL
#define MLSYS_INDEX_BASELINES_IMPL
#include <string.h>

/* ---- shared: sort and de-duplicate the bulk-load input ---------------------------------------------------------- */

/* Stable LSD radix sort of k (and v, when not NULL) by key, 8 bits a pass; passes whose digit is the same for every
   key are skipped (one histogram pass counts all eight digits). tk / tv are scratch of n entries. Stability is what
   makes "the first occurrence of a repeated key wins" hold after the sort. O(n) — a comparison sort of the SOSD
   sizes (10M–200M keys) would dominate the bulk load. */
static void mlsys__index_bl_radix_sort(uint64_t *k, uint64_t *v, uint64_t *tk, uint64_t *tv, size_t n) {
  size_t cnt[8][256];
  size_t i;
  int d, b;
  uint64_t *k0 = k, *v0 = v;
  memset(cnt, 0, sizeof cnt);
  for (i = 0; i < n; i++) {
    uint64_t x = k[i];
    for (d = 0; d < 8; d++) cnt[d][(x >> (8 * d)) & 255]++;
  }
  for (d = 0; d < 8; d++) {
    size_t sum = 0, *c = cnt[d];
    uint64_t *sk, *sv;
    int sh = 8 * d;
    for (b = 0; b < 256; b++)
      if (c[b] == n) break;
    if (b < 256) continue;   /* every key has this digit: the pass would not move anything */
    for (b = 0; b < 256; b++) {
      size_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    if (v) {
      for (i = 0; i < n; i++) {
        size_t p = c[(k[i] >> sh) & 255]++;
        tk[p] = k[i];
        tv[p] = v[i];
      }
    } else {
      for (i = 0; i < n; i++) tk[c[(k[i] >> sh) & 255]++] = k[i];
    }
    sk = k, k = tk, tk = sk;   /* the sorted data is now in the former scratch */
    sv = v, v = tv, tv = sv;
  }
  if (k != k0) {   /* an odd number of passes left the result in the scratch */
    memcpy(k0, k, n * sizeof *k);
    if (v) memcpy(v0, v, n * sizeof *v);
  }
}

/* The bulk-load input as ascending unique keys *ok[0, *m) with payloads *ov (NULL: derive them from the key). When
   the input is already strictly ascending (the SOSD files are) nothing is copied and *buf is NULL; otherwise the
   keys are copied to *buf (the caller frees it), sorted, and repeats dropped keeping the first occurrence. */
static mlsys_status mlsys__index_bl_unique(const uint64_t *keys, const uint64_t *vals, size_t n, uint64_t **buf,
                                        const uint64_t **ok, const uint64_t **ov, size_t *m) {
  size_t i, j, words;
  int strict = 1, nondecr = 1;
  uint64_t *k, *v;
  *buf = NULL;
  *ok = keys, *ov = vals, *m = n;
  for (i = 1; i < n && nondecr; i++) {
    if (keys[i] <= keys[i - 1]) strict = 0;
    if (keys[i] < keys[i - 1]) nondecr = 0;
  }
  if (strict) return MLSYS_OK;
  /* layout of buf: keys, vals (when given), then the radix scratch of the same size when sorting is needed */
  words = (vals ? 2 : 1) * n * (nondecr ? 1 : 2);
  *buf = (uint64_t *)mlsys_alloc(words, sizeof(uint64_t));
  if (!*buf) return mlsys_prefix_error("sorting %zu bulk-load keys", n);
  k = *buf;
  v = vals ? k + n : NULL;
  memcpy(k, keys, n * sizeof *k);
  if (v) memcpy(v, vals, n * sizeof *v);
  if (!nondecr) {
    uint64_t *tk = k + (vals ? 2 : 1) * n;
    mlsys__index_bl_radix_sort(k, v, tk, vals ? tk + n : NULL, n);
  }
  for (i = 0, j = 0; i < n; i++) {   /* keep the first of each run of equal keys (the sort is stable) */
    if (j > 0 && k[i] == k[j - 1]) continue;
    k[j] = k[i];
    if (v) v[j] = v[i];
    j++;
  }
  *ok = k, *ov = v, *m = j;
  return MLSYS_OK;
}

/* ---- B+tree ---------------------------------------------------------------------------------------------------- */

/* Node layout inside node_bytes (all offsets 8-byte aligned):
     leaf:  uint32 count | pad | next leaf (8 B) | keys[cap] | vals[cap]            16 + 16·cap ≤ node_bytes
     inner: uint32 count | pad | keys[cap] | children[cap + 1]                       16 + 16·cap ≤ node_bytes
   Nodes carry no leaf flag: the tree's depth says which level is the leaves. A node on the free list keeps its
   link at offset 8. */
#define MLSYS__BT_N(p) (*(uint32_t *)(void *)(p))
#define MLSYS__BT_NEXT(p) (*(unsigned char **)(void *)((p) + 8))
#define MLSYS__BT_LKEYS(p) ((uint64_t *)(void *)((p) + 16))
#define MLSYS__BT_LVALS(t, p) (MLSYS__BT_LKEYS(p) + (t)->cap)
#define MLSYS__BT_IKEYS(p) ((uint64_t *)(void *)((p) + 8))
#define MLSYS__BT_KIDS(t, p) ((unsigned char **)(void *)((p) + 8 + 8 * (size_t)(t)->cap))
#define MLSYS__BT_MAXD 72          /* ≥ 2 children per inner node, ≥ 2 keys per leaf: 2^64 keys fit in 64 levels */
#define MLSYS__BT_LINEAR_MAX 32    /* nodes of at most this many keys are searched by a linear count */
#define MLSYS__BT_SLAB_MAX (1u << 20)   /* slabs grow geometrically up to about this many bytes (bulk loads take one slab) */

struct mlsys_index_btree {
  unsigned char *root;
  size_t depth, size;
  uint32_t cap;          /* keys per node, leaf and inner */
  uint32_t min_leaf;     /* ceil(cap / 2): the fewest keys in a non-root leaf */
  uint32_t min_kids;     /* ceil((cap + 1) / 2): the fewest children of a non-root inner node */
  int linear;            /* cap ≤ MLSYS__BT_LINEAR_MAX */
  size_t node_bytes, stride;
  /* split scratch: cap + 1 keys, cap + 2 payloads or children */
  uint64_t *sk, *sv;
  unsigned char **sc;
  size_t scratch_bytes;
  /* slab allocator */
  unsigned char *bump;   /* next unused node of the newest slab */
  size_t bump_left;      /* nodes left there */
  unsigned char *free_list;
  size_t nfree, nodes_live, next_slab_nodes;
  void **slabs;          /* raw pointers, for free */
  size_t nslabs, slabs_cap, slab_bytes;
};

/* How many of k[0, n) are ≤ key (inner nodes: the child to descend into). */
static inline uint32_t mlsys__index_bt_count_le(const uint64_t *k, uint32_t n, uint64_t key, int linear) {
  uint32_t c = 0, i, len;
  const uint64_t *b;
  if (linear) {
    for (i = 0; i < n; i++) c += k[i] <= key;
    return c;
  }
  if (n == 0) return 0;
  b = k, len = n;
  while (len > 1) {   /* the answer stays in [b − k, b − k + len] */
    uint32_t h = len >> 1;
    b = b[h] <= key ? b + h : b;
    len -= h;
  }
  return (uint32_t)(b - k) + (*b <= key);
}
/* How many of k[0, n) are < key (leaves: the position of key, or where it would go). */
static inline uint32_t mlsys__index_bt_count_lt(const uint64_t *k, uint32_t n, uint64_t key, int linear) {
  uint32_t c = 0, i, len;
  const uint64_t *b;
  if (linear) {
    for (i = 0; i < n; i++) c += k[i] < key;
    return c;
  }
  if (n == 0) return 0;
  b = k, len = n;
  while (len > 1) {
    uint32_t h = len >> 1;
    b = b[h] < key ? b + h : b;
    len -= h;
  }
  return (uint32_t)(b - k) + (*b < key);
}

/* Makes sure k nodes can be taken without allocating, so that a split never fails halfway: the rest of the current
   slab goes to the free list and one new slab of at least k nodes is made. */
static mlsys_status mlsys__index_bt_reserve(mlsys_index_btree *t, size_t k) {
  size_t nodes, bytes;
  unsigned char *raw, *base;
  if (t->nfree + t->bump_left >= k) return MLSYS_OK;
  nodes = t->next_slab_nodes > k ? t->next_slab_nodes : k;
  if (nodes > ((size_t)-1 - 64) / t->stride) return mlsys_set_error(MLSYS_ERR_NOMEM, "btree: %zu nodes overflow", nodes);
  bytes = nodes * t->stride + 63;   /* slack for 64-byte alignment */
  if (t->nslabs == t->slabs_cap) {
    size_t nc = t->slabs_cap ? 2 * t->slabs_cap : 8;
    void **s = (void **)mlsys_realloc_array(t->slabs, nc, sizeof *s);
    if (!s) return mlsys_prefix_error("btree: slab directory");
    t->slabs = s, t->slabs_cap = nc;
  }
  raw = (unsigned char *)mlsys_alloc(bytes, 1);
  if (!raw) return mlsys_prefix_error("btree: a slab of %zu nodes", nodes);
  t->slabs[t->nslabs++] = raw;
  t->slab_bytes += bytes;
  while (t->bump_left) {   /* keep the old slab's unused nodes */
    MLSYS__BT_NEXT(t->bump) = t->free_list;
    t->free_list = t->bump;
    t->nfree++;
    t->bump += t->stride;
    t->bump_left--;
  }
  base = raw + ((64 - ((uintptr_t)raw & 63)) & 63);
  t->bump = base, t->bump_left = nodes;
  if (t->next_slab_nodes * 2 * t->stride <= MLSYS__BT_SLAB_MAX) t->next_slab_nodes *= 2;
  return MLSYS_OK;
}
/* Takes a node (after mlsys__index_bt_reserve). Bump first, so that a bulk load lays its leaves out in key order. */
static unsigned char *mlsys__index_bt_take(mlsys_index_btree *t) {
  unsigned char *p;
  if (t->bump_left) {
    p = t->bump;
    t->bump += t->stride;
    t->bump_left--;
  } else {
    p = t->free_list;
    MLSYS_ASSERT(p);
    t->free_list = MLSYS__BT_NEXT(p);
    t->nfree--;
  }
  t->nodes_live++;
  MLSYS__BT_N(p) = 0;
  return p;
}
static void mlsys__index_bt_give(mlsys_index_btree *t, unsigned char *p) {
  MLSYS__BT_NEXT(p) = t->free_list;
  t->free_list = p;
  t->nfree++;
  t->nodes_live--;
}

/* Builds the levels above the leaves from a fully sorted input (STX 0.9 bulk_load: each level packed, the entries
   spread evenly over ceil(count / capacity) nodes, so every non-root node is at least half full). */
static mlsys_status mlsys__index_bt_bulk(mlsys_index_btree *t, const uint64_t *k, const uint64_t *v, size_t m) {
  size_t cap = t->cap, nleaves, total, c, i, j, pos;
  unsigned char **lvl = NULL;
  uint64_t *mins = NULL;
  unsigned char *prev = NULL;
  nleaves = m ? (m + cap - 1) / cap : 1;
  for (total = nleaves, c = nleaves; c > 1;) {
    c = (c + cap) / (cap + 1);
    total += c;
  }
  if (mlsys__index_bt_reserve(t, total) != MLSYS_OK) return mlsys_last_status();
  if (nleaves > 1) {
    lvl = (unsigned char **)mlsys_alloc(nleaves, sizeof *lvl);
    mins = (uint64_t *)mlsys_alloc(nleaves, sizeof *mins);
    if (!lvl || !mins) {
      mlsys_free(lvl);
      mlsys_free(mins);
      return mlsys_prefix_error("btree: bulk load of %zu leaves", nleaves);
    }
  }
  for (i = 0, pos = 0; i < nleaves; i++) {   /* leaves */
    unsigned char *p = mlsys__index_bt_take(t);
    size_t cnt = m / nleaves + (i < m % nleaves);
    uint64_t *lk = MLSYS__BT_LKEYS(p), *lv = MLSYS__BT_LVALS(t, p);
    if (cnt) memcpy(lk, k + pos, cnt * sizeof *lk);   /* (k is NULL for an empty tree) */
    if (v) memcpy(lv, v + pos, cnt * sizeof *lv);
    else
      for (j = 0; j < cnt; j++) lv[j] = mlsys_index_payload_of(lk[j]);
    MLSYS__BT_N(p) = (uint32_t)cnt;
    MLSYS__BT_NEXT(p) = NULL;
    if (prev) MLSYS__BT_NEXT(prev) = p;
    prev = p;
    if (lvl) lvl[i] = p, mins[i] = cnt ? lk[0] : 0;
    pos += cnt;
  }
  t->depth = 1;
  t->size = m;
  if (!lvl) {
    t->root = prev;
    return MLSYS_OK;
  }
  for (c = nleaves; c > 1;) {   /* inner levels, built in place over lvl / mins */
    size_t np = (c + cap) / (cap + 1), from = 0;
    for (i = 0; i < np; i++) {
      unsigned char *p = mlsys__index_bt_take(t);
      size_t kids = c / np + (i < c % np);
      uint64_t *ik = MLSYS__BT_IKEYS(p);
      unsigned char **ic = MLSYS__BT_KIDS(t, p);
      uint64_t first = mins[from];
      for (j = 0; j < kids; j++) {
        ic[j] = lvl[from + j];
        if (j) ik[j - 1] = mins[from + j];
      }
      MLSYS__BT_N(p) = (uint32_t)(kids - 1);
      lvl[i] = p, mins[i] = first;
      from += kids;
    }
    c = np;
    t->depth++;
  }
  t->root = lvl[0];
  mlsys_free(lvl);
  mlsys_free(mins);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_btree_create(size_t node_bytes, const uint64_t *keys, const uint64_t *vals, size_t n,
                                                mlsys_index_btree **out) {
  mlsys_index_btree *t;
  uint64_t *buf = NULL;
  const uint64_t *k, *v;
  size_t m, cap;
  mlsys_status st;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: out is NULL");
  *out = NULL;
  if (node_bytes == 0) node_bytes = 256;
  if (node_bytes < 64)
    return mlsys_set_error(MLSYS_ERR_ARG,
                           "mlsys_index_btree_create: node_bytes = %zu is too small: a node needs 16 header bytes and 16 "
                           "per key, and at least 3 keys (node_bytes >= 64)",
                           node_bytes);
  if (node_bytes > ((size_t)1 << 24))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: node_bytes = %zu exceeds the limit of 16 MiB", node_bytes);
  if (n > 0 && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: keys is NULL but n = %zu", n);
  cap = (node_bytes - 16) / 16;
  t = (mlsys_index_btree *)mlsys_calloc(1, sizeof *t);
  if (!t) return mlsys_prefix_error("mlsys_index_btree_create");
  t->cap = (uint32_t)cap;
  t->min_leaf = (uint32_t)((cap + 1) / 2);
  t->min_kids = (uint32_t)((cap + 2) / 2);
  t->linear = cap <= MLSYS__BT_LINEAR_MAX;
  t->node_bytes = node_bytes;
  t->stride = (node_bytes + 7) & ~(size_t)7;
  t->next_slab_nodes = 4;
  t->scratch_bytes = (cap + 1) * sizeof(uint64_t) + (cap + 2) * (sizeof(uint64_t) + sizeof(unsigned char *));
  t->sk = (uint64_t *)mlsys_alloc(t->scratch_bytes, 1);
  if (!t->sk) {
    mlsys_free(t);
    return mlsys_prefix_error("mlsys_index_btree_create");
  }
  t->sv = t->sk + cap + 1;
  t->sc = (unsigned char **)(void *)(t->sv + cap + 2);
  st = mlsys__index_bl_unique(keys, vals, n, &buf, &k, &v, &m);
  if (st == MLSYS_OK) st = mlsys__index_bt_bulk(t, k, v, m);
  mlsys_free(buf);
  if (st != MLSYS_OK) {
    mlsys_index_btree_free(t);
    return mlsys_prefix_error("mlsys_index_btree_create");
  }
  *out = t;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_index_btree_free(mlsys_index_btree *t) {
  size_t i;
  if (!t) return;
  for (i = 0; i < t->nslabs; i++) mlsys_free(t->slabs[i]);
  mlsys_free(t->slabs);
  mlsys_free(t->sk);
  mlsys_free(t);
}

MLSYS_DEF int mlsys_index_btree_find(const mlsys_index_btree *t, uint64_t key, uint64_t *val) {
  const unsigned char *p = t->root;
  size_t d;
  uint32_t n, i;
  int lin = t->linear;
  for (d = t->depth; d > 1; d--) {
    const unsigned char *q = p;
    p = MLSYS__BT_KIDS(t, q)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(q), MLSYS__BT_N(q), key, lin)];
  }
  n = MLSYS__BT_N(p);
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), n, key, lin);
  if (i < n && MLSYS__BT_LKEYS(p)[i] == key) {
    if (val) *val = MLSYS__BT_LVALS(t, p)[i];
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_btree_update(mlsys_index_btree *t, uint64_t key, uint64_t val) {
  unsigned char *p = t->root;
  size_t d;
  uint32_t n, i;
  int lin = t->linear;
  for (d = t->depth; d > 1; d--) p = MLSYS__BT_KIDS(t, p)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin)];
  n = MLSYS__BT_N(p);
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), n, key, lin);
  if (i < n && MLSYS__BT_LKEYS(p)[i] == key) {
    MLSYS__BT_LVALS(t, p)[i] = val;
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_btree_insert(mlsys_index_btree *t, uint64_t key, uint64_t val) {
  unsigned char *path[MLSYS__BT_MAXD], *p = t->root, *r, *l;
  uint32_t slot[MLSYS__BT_MAXD], n, i, cap = t->cap, nl;
  uint64_t *lk, *lv, sep;
  int lev, top = (int)t->depth - 1, lin = t->linear;
  size_t need;
  for (lev = 0; lev < top; lev++) {
    uint32_t s = mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin);
    path[lev] = p, slot[lev] = s;
    p = MLSYS__BT_KIDS(t, p)[s];
  }
  n = MLSYS__BT_N(p);
  lk = MLSYS__BT_LKEYS(p), lv = MLSYS__BT_LVALS(t, p);
  i = mlsys__index_bt_count_lt(lk, n, key, lin);
  if (i < n && lk[i] == key) return 0;
  if (n < cap) {
    memmove(lk + i + 1, lk + i, (n - i) * sizeof *lk);
    memmove(lv + i + 1, lv + i, (n - i) * sizeof *lv);
    lk[i] = key, lv[i] = val;
    MLSYS__BT_N(p) = n + 1;
    t->size++;
    return 1;
  }
  /* the leaf splits; so does every full ancestor, and the root may grow a level: take the nodes first */
  need = 1;
  for (lev = top - 1; lev >= 0 && MLSYS__BT_N(path[lev]) == cap; lev--) need++;
  if (lev < 0) need++;
  if (t->depth + 1 >= MLSYS__BT_MAXD) {
    mlsys_set_error(MLSYS_ERR_TOO_BIG, "btree: depth limit %d reached", MLSYS__BT_MAXD);
    return -1;
  }
  if (mlsys__index_bt_reserve(t, need) != MLSYS_OK) return -1;
  /* leaf split: the cap + 1 entries, in order, in the scratch; left keeps floor((cap + 1) / 2) */
  memcpy(t->sk, lk, i * sizeof *lk);
  memcpy(t->sv, lv, i * sizeof *lv);
  t->sk[i] = key, t->sv[i] = val;
  memcpy(t->sk + i + 1, lk + i, (n - i) * sizeof *lk);
  memcpy(t->sv + i + 1, lv + i, (n - i) * sizeof *lv);
  nl = (cap + 1) / 2;
  r = mlsys__index_bt_take(t);
  memcpy(lk, t->sk, nl * sizeof *lk);
  memcpy(lv, t->sv, nl * sizeof *lv);
  memcpy(MLSYS__BT_LKEYS(r), t->sk + nl, (cap + 1 - nl) * sizeof *lk);
  memcpy(MLSYS__BT_LVALS(t, r), t->sv + nl, (cap + 1 - nl) * sizeof *lv);
  MLSYS__BT_N(p) = nl;
  MLSYS__BT_N(r) = cap + 1 - nl;
  MLSYS__BT_NEXT(r) = MLSYS__BT_NEXT(p);
  MLSYS__BT_NEXT(p) = r;
  sep = MLSYS__BT_LKEYS(r)[0];
  t->size++;
  /* push (sep, r) up */
  for (lev = top - 1; lev >= 0; lev--) {
    unsigned char *q = path[lev], **qc = MLSYS__BT_KIDS(t, q);
    uint64_t *qk = MLSYS__BT_IKEYS(q);
    uint32_t s = slot[lev], qn = MLSYS__BT_N(q), cl;
    if (qn < cap) {
      memmove(qk + s + 1, qk + s, (qn - s) * sizeof *qk);
      memmove(qc + s + 2, qc + s + 1, (qn - s) * sizeof *qc);
      qk[s] = sep, qc[s + 1] = r;
      MLSYS__BT_N(q) = qn + 1;
      return 1;
    }
    /* inner split: cap + 1 keys and cap + 2 children; the left keeps floor((cap + 2) / 2) children, the key between
       the halves moves up */
    memcpy(t->sk, qk, s * sizeof *qk);
    t->sk[s] = sep;
    memcpy(t->sk + s + 1, qk + s, (qn - s) * sizeof *qk);
    memcpy(t->sc, qc, (s + 1) * sizeof *qc);
    t->sc[s + 1] = r;
    memcpy(t->sc + s + 2, qc + s + 1, (qn - s) * sizeof *qc);
    cl = (cap + 2) / 2;
    l = mlsys__index_bt_take(t);
    memcpy(qk, t->sk, (cl - 1) * sizeof *qk);
    memcpy(qc, t->sc, cl * sizeof *qc);
    MLSYS__BT_N(q) = cl - 1;
    sep = t->sk[cl - 1];
    memcpy(MLSYS__BT_IKEYS(l), t->sk + cl, (cap + 1 - cl) * sizeof *qk);
    memcpy(MLSYS__BT_KIDS(t, l), t->sc + cl, (cap + 2 - cl) * sizeof *qc);
    MLSYS__BT_N(l) = cap + 1 - cl;
    r = l;
  }
  /* the root split: a new root with two children */
  l = mlsys__index_bt_take(t);
  MLSYS__BT_IKEYS(l)[0] = sep;
  MLSYS__BT_KIDS(t, l)[0] = t->root;
  MLSYS__BT_KIDS(t, l)[1] = r;
  MLSYS__BT_N(l) = 1;
  t->root = l;
  t->depth++;
  return 1;
}

/* Inner node q at path level lev has fewer than min_kids children: borrow one child through the parent from a
   sibling with more than the minimum, or merge with a sibling and remove the separator from the parent (which may
   then underflow in turn). Returns the level whose node must be looked at next, or -1 when done. */
static int mlsys__index_bt_fix_inner(mlsys_index_btree *t, unsigned char **path, const uint32_t *slot, int lev) {
  unsigned char *q = path[lev], *pp = path[lev - 1], **pc = MLSYS__BT_KIDS(t, pp), **qc = MLSYS__BT_KIDS(t, q);
  uint64_t *pk = MLSYS__BT_IKEYS(pp), *qk = MLSYS__BT_IKEYS(q);
  uint32_t s = slot[lev - 1], pn = MLSYS__BT_N(pp), qn = MLSYS__BT_N(q);
  unsigned char *left = s > 0 ? pc[s - 1] : NULL, *right = s < pn ? pc[s + 1] : NULL;
  if (left && MLSYS__BT_N(left) + 1 > t->min_kids) {   /* rotate right: left's last child comes over */
    uint32_t ln = MLSYS__BT_N(left);
    memmove(qk + 1, qk, qn * sizeof *qk);
    memmove(qc + 1, qc, (qn + 1) * sizeof *qc);
    qk[0] = pk[s - 1];
    qc[0] = MLSYS__BT_KIDS(t, left)[ln];
    pk[s - 1] = MLSYS__BT_IKEYS(left)[ln - 1];
    MLSYS__BT_N(left) = ln - 1;
    MLSYS__BT_N(q) = qn + 1;
    return -1;
  }
  if (right && MLSYS__BT_N(right) + 1 > t->min_kids) {   /* rotate left: right's first child comes over */
    uint32_t rn = MLSYS__BT_N(right);
    uint64_t *rk = MLSYS__BT_IKEYS(right);
    unsigned char **rc = MLSYS__BT_KIDS(t, right);
    qk[qn] = pk[s];
    qc[qn + 1] = rc[0];
    pk[s] = rk[0];
    memmove(rk, rk + 1, (rn - 1) * sizeof *rk);
    memmove(rc, rc + 1, rn * sizeof *rc);
    MLSYS__BT_N(right) = rn - 1;
    MLSYS__BT_N(q) = qn + 1;
    return -1;
  }
  if (left) {   /* merge q into left: left keys, separator s − 1, q keys */
    uint32_t ln = MLSYS__BT_N(left);
    uint64_t *lk = MLSYS__BT_IKEYS(left);
    unsigned char **lc = MLSYS__BT_KIDS(t, left);
    lk[ln] = pk[s - 1];
    memcpy(lk + ln + 1, qk, qn * sizeof *qk);
    memcpy(lc + ln + 1, qc, (qn + 1) * sizeof *qc);
    MLSYS__BT_N(left) = ln + 1 + qn;
    mlsys__index_bt_give(t, q);
    s -= 1;   /* remove separator s − 1 and child s: below, with s the separator index */
  } else {      /* merge right into q */
    uint32_t rn = MLSYS__BT_N(right);
    qk[qn] = pk[s];
    memcpy(qk + qn + 1, MLSYS__BT_IKEYS(right), rn * sizeof *qk);
    memcpy(qc + qn + 1, MLSYS__BT_KIDS(t, right), (rn + 1) * sizeof *qc);
    MLSYS__BT_N(q) = qn + 1 + rn;
    mlsys__index_bt_give(t, right);
  }
  /* the parent loses separator s and child s + 1 */
  memmove(pk + s, pk + s + 1, (pn - s - 1) * sizeof *pk);
  memmove(pc + s + 1, pc + s + 2, (pn - s - 1) * sizeof *pc);
  MLSYS__BT_N(pp) = pn - 1;
  return lev - 1;
}

MLSYS_DEF int mlsys_index_btree_erase(mlsys_index_btree *t, uint64_t key) {
  unsigned char *path[MLSYS__BT_MAXD], *p = t->root, *pp, **pc, *left, *right;
  uint32_t slot[MLSYS__BT_MAXD], n, i, s, pn;
  uint64_t *lk, *lv, *pk;
  int lev, top = (int)t->depth - 1, lin = t->linear;
  for (lev = 0; lev < top; lev++) {
    uint32_t c = mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin);
    path[lev] = p, slot[lev] = c;
    p = MLSYS__BT_KIDS(t, p)[c];
  }
  n = MLSYS__BT_N(p);
  lk = MLSYS__BT_LKEYS(p), lv = MLSYS__BT_LVALS(t, p);
  i = mlsys__index_bt_count_lt(lk, n, key, lin);
  if (i >= n || lk[i] != key) return 0;
  memmove(lk + i, lk + i + 1, (n - i - 1) * sizeof *lk);
  memmove(lv + i, lv + i + 1, (n - i - 1) * sizeof *lv);
  MLSYS__BT_N(p) = --n;
  t->size--;
  if (top == 0 || n >= t->min_leaf) return 1;   /* separators above may still equal the erased key: still valid bounds */
  /* leaf underflow */
  pp = path[top - 1], s = slot[top - 1], pn = MLSYS__BT_N(pp);
  pc = MLSYS__BT_KIDS(t, pp), pk = MLSYS__BT_IKEYS(pp);
  left = s > 0 ? pc[s - 1] : NULL;
  right = s < pn ? pc[s + 1] : NULL;
  if (left && MLSYS__BT_N(left) > t->min_leaf) {   /* borrow left's last entry */
    uint32_t ln = MLSYS__BT_N(left) - 1;
    memmove(lk + 1, lk, n * sizeof *lk);
    memmove(lv + 1, lv, n * sizeof *lv);
    lk[0] = MLSYS__BT_LKEYS(left)[ln];
    lv[0] = MLSYS__BT_LVALS(t, left)[ln];
    MLSYS__BT_N(left) = ln;
    MLSYS__BT_N(p) = n + 1;
    pk[s - 1] = lk[0];
    return 1;
  }
  if (right && MLSYS__BT_N(right) > t->min_leaf) {   /* borrow right's first entry */
    uint32_t rn = MLSYS__BT_N(right);
    uint64_t *rk = MLSYS__BT_LKEYS(right), *rv = MLSYS__BT_LVALS(t, right);
    lk[n] = rk[0], lv[n] = rv[0];
    memmove(rk, rk + 1, (rn - 1) * sizeof *rk);
    memmove(rv, rv + 1, (rn - 1) * sizeof *rv);
    MLSYS__BT_N(right) = rn - 1;
    MLSYS__BT_N(p) = n + 1;
    pk[s] = rk[0];
    return 1;
  }
  if (left) {   /* merge this leaf into left */
    uint32_t ln = MLSYS__BT_N(left);
    memcpy(MLSYS__BT_LKEYS(left) + ln, lk, n * sizeof *lk);
    memcpy(MLSYS__BT_LVALS(t, left) + ln, lv, n * sizeof *lv);
    MLSYS__BT_N(left) = ln + n;
    MLSYS__BT_NEXT(left) = MLSYS__BT_NEXT(p);
    mlsys__index_bt_give(t, p);
    s -= 1;
  } else {      /* merge right into this leaf */
    uint32_t rn = MLSYS__BT_N(right);
    memcpy(lk + n, MLSYS__BT_LKEYS(right), rn * sizeof *lk);
    memcpy(lv + n, MLSYS__BT_LVALS(t, right), rn * sizeof *lv);
    MLSYS__BT_N(p) = n + rn;
    MLSYS__BT_NEXT(p) = MLSYS__BT_NEXT(right);
    mlsys__index_bt_give(t, right);
  }
  memmove(pk + s, pk + s + 1, (pn - s - 1) * sizeof *pk);
  memmove(pc + s + 1, pc + s + 2, (pn - s - 1) * sizeof *pc);
  MLSYS__BT_N(pp) = pn - 1;
  /* inner underflow, up to the root */
  for (lev = top - 1; lev > 0 && MLSYS__BT_N(path[lev]) + 1 < t->min_kids;)
    lev = mlsys__index_bt_fix_inner(t, path, slot, lev);
  if (MLSYS__BT_N(t->root) == 0) {   /* a root with one child: the child becomes the root */
    unsigned char *old = t->root;
    t->root = MLSYS__BT_KIDS(t, old)[0];
    mlsys__index_bt_give(t, old);
    t->depth--;
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_btree_scan(const mlsys_index_btree *t, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  const unsigned char *p = t->root;
  size_t d, got = 0;
  uint32_t i, n;
  if (max == 0) return 0;
  for (d = t->depth; d > 1; d--) {
    const unsigned char *q = p;
    p = MLSYS__BT_KIDS(t, q)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(q), MLSYS__BT_N(q), lo, t->linear)];
  }
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), MLSYS__BT_N(p), lo, t->linear);
  while (p && got < max) {
    size_t take;
    n = MLSYS__BT_N(p);
    take = n - i;
    if (take > max - got) take = max - got;
    if (keys) memcpy(keys + got, MLSYS__BT_LKEYS(p) + i, take * sizeof *keys);
    if (vals) memcpy(vals + got, MLSYS__BT_LVALS(t, p) + i, take * sizeof *vals);
    got += take;
    p = MLSYS__BT_NEXT(p);
    i = 0;
  }
  return got;
}

MLSYS_DEF size_t mlsys_index_btree_size(const mlsys_index_btree *t) { return t->size; }
MLSYS_DEF size_t mlsys_index_btree_depth(const mlsys_index_btree *t) { return t->depth; }
MLSYS_DEF size_t mlsys_index_btree_memory(const mlsys_index_btree *t) {
  return sizeof *t + t->scratch_bytes + t->slabs_cap * sizeof(void *) + t->slab_bytes;
}

typedef struct {
  const mlsys_index_btree *t;
  const unsigned char *prev_leaf;
  size_t keys, nodes;
} mlsys__index_bt_walk;

static mlsys_status mlsys__index_bt_check_node(mlsys__index_bt_walk *w, const unsigned char *p, size_t level, int has_lo,
                                               uint64_t lo, int has_hi, uint64_t hi) {
  const mlsys_index_btree *t = w->t;
  uint32_t n = MLSYS__BT_N(p), i;
  int leaf = level + 1 == t->depth, root = level == 0;
  const uint64_t *k = leaf ? MLSYS__BT_LKEYS(p) : MLSYS__BT_IKEYS(p);
  mlsys_status st;
  w->nodes++;
  if (w->nodes > t->nodes_live)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: more nodes reachable than the %zu allocated (a cycle or a shared node)",
                           t->nodes_live);
  if (n > t->cap)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: node at depth %zu holds %u keys, over the capacity %u", level, n, t->cap);
  if (leaf && !root && n < t->min_leaf)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: leaf at depth %zu holds %u keys, the minimum is %u", level, n, t->min_leaf);
  if (!leaf && root && n < 1) return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner root has one child (should have been collapsed)");
  if (!leaf && !root && n + 1 < t->min_kids)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner node at depth %zu has %u children, the minimum is %u", level, n + 1,
                           t->min_kids);
  for (i = 0; i < n; i++) {
    if (i > 0 && k[i] <= k[i - 1])
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: %s at depth %zu: key %u (%llu) is not above key %u (%llu)",
                             leaf ? "leaf" : "inner node", level, i, (unsigned long long)k[i], i - 1, (unsigned long long)k[i - 1]);
    if ((has_lo && k[i] < lo) || (has_hi && k[i] >= hi))
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: %s at depth %zu: key %llu outside its separators' range [%llu, %llu%s",
                             leaf ? "leaf" : "inner node", level, (unsigned long long)k[i], has_lo ? (unsigned long long)lo : 0ull,
                             has_hi ? (unsigned long long)hi : 0ull, has_hi ? ")" : " .. end]");
  }
  if (leaf) {
    if (w->prev_leaf && MLSYS__BT_NEXT(w->prev_leaf) != p)
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: the leaf chain skips or misorders the leaf holding key %llu",
                             n ? (unsigned long long)k[0] : 0ull);
    w->prev_leaf = p;
    w->keys += n;
    return MLSYS_OK;
  }
  if (level + 2 > t->depth) return mlsys_set_error(MLSYS_ERR_ARG, "btree: depth inconsistent");
  for (i = 0; i <= n; i++) {
    const unsigned char *c = MLSYS__BT_KIDS(t, p)[i];
    if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner node at depth %zu has a NULL child %u", level, i);
    st = mlsys__index_bt_check_node(w, c, level + 1, i > 0 ? 1 : has_lo, i > 0 ? k[i - 1] : lo, i < n ? 1 : has_hi,
                                    i < n ? k[i] : hi);
    if (st != MLSYS_OK) return st;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_btree_check(const mlsys_index_btree *t) {
  mlsys__index_bt_walk w;
  mlsys_status st;
  if (!t) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_check: t is NULL");
  if (!t->root || t->depth < 1 || t->depth >= MLSYS__BT_MAXD)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: no root or depth %zu out of range", t->depth);
  w.t = t, w.prev_leaf = NULL, w.keys = 0, w.nodes = 0;
  st = mlsys__index_bt_check_node(&w, t->root, 0, 0, 0, 0, 0);
  if (st != MLSYS_OK) return st;
  if (MLSYS__BT_NEXT(w.prev_leaf) != NULL) return mlsys_set_error(MLSYS_ERR_ARG, "btree: the last leaf's next link is not NULL");
  if (w.keys != t->size) return mlsys_set_error(MLSYS_ERR_ARG, "btree: %zu keys in the leaves, size says %zu", w.keys, t->size);
  if (w.nodes != t->nodes_live)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: %zu nodes reachable, %zu allocated (a leak)", w.nodes, t->nodes_live);
  return MLSYS_OK;
}

/* ---- sorted array ---------------------------------------------------------------------------------------------- */

struct mlsys_index_sorted {
  uint64_t *keys, *vals;   /* one block: keys[cap] then vals[cap]; NULL when cap is 0 */
  size_t n, cap;
};

/* Position of the first key ≥ key (branch-free: the loop runs ceil(log2 n) times whatever the key, no mispredictions;
   prefetching both possible next probes, as Khuong & Morin suggest for large arrays, made no difference we could
   measure at 10M keys on our development machine, so it is left out). */
static inline size_t mlsys__index_sa_lower(const uint64_t *k, size_t n, uint64_t key) {
  const uint64_t *b = k;
  size_t len = n;
  if (n == 0) return 0;
  while (len > 1) {
    size_t h = len >> 1;
    b = b[h] < key ? b + h : b;
    len -= h;
  }
  return (size_t)(b - k) + (*b < key);
}

/* Moves the arrays into a block of newcap (≥ s->n) entries, leaving a hole at position hole (≤ n) when hole != (size_t)-1. */
static int mlsys__index_sa_realloc(mlsys_index_sorted *s, size_t newcap, size_t hole) {
  uint64_t *b = (uint64_t *)mlsys_alloc(newcap, 2 * sizeof(uint64_t));
  size_t n = s->n, h = hole == (size_t)-1 ? n : hole, gap = hole == (size_t)-1 ? 0 : 1;
  if (!b) return -1;
  if (s->keys) {
    memcpy(b, s->keys, h * sizeof *b);
    memcpy(b + h + gap, s->keys + h, (n - h) * sizeof *b);
    memcpy(b + newcap, s->vals, h * sizeof *b);
    memcpy(b + newcap + h + gap, s->vals + h, (n - h) * sizeof *b);
  }
  mlsys_free(s->keys);
  s->keys = b, s->vals = b + newcap, s->cap = newcap;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_index_sorted_create(const uint64_t *keys, const uint64_t *vals, size_t n, mlsys_index_sorted **out) {
  mlsys_index_sorted *s;
  uint64_t *buf = NULL;
  const uint64_t *k, *v;
  size_t m, i;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sorted_create: out is NULL");
  *out = NULL;
  if (n > 0 && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sorted_create: keys is NULL but n = %zu", n);
  s = (mlsys_index_sorted *)mlsys_calloc(1, sizeof *s);
  if (!s) return mlsys_prefix_error("mlsys_index_sorted_create");
  if (mlsys__index_bl_unique(keys, vals, n, &buf, &k, &v, &m) != MLSYS_OK ||
      (m > 0 && mlsys__index_sa_realloc(s, m, (size_t)-1) != 0)) {
    mlsys_free(buf);
    mlsys_free(s);
    return mlsys_prefix_error("mlsys_index_sorted_create");
  }
  if (m) {
    memcpy(s->keys, k, m * sizeof *k);
    if (v) memcpy(s->vals, v, m * sizeof *v);
    else
      for (i = 0; i < m; i++) s->vals[i] = mlsys_index_payload_of(k[i]);
  }
  s->n = m;
  mlsys_free(buf);
  *out = s;
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_index_sorted_find(const mlsys_index_sorted *s, uint64_t key, uint64_t *val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key);
  if (i < s->n && s->keys[i] == key) {
    if (val) *val = s->vals[i];
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_sorted_update(mlsys_index_sorted *s, uint64_t key, uint64_t val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key);
  if (i < s->n && s->keys[i] == key) {
    s->vals[i] = val;
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_sorted_insert(mlsys_index_sorted *s, uint64_t key, uint64_t val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key), n = s->n;
  if (i < n && s->keys[i] == key) return 0;
  if (n == s->cap) {
    size_t nc = s->cap < 16 ? 16 : s->cap + s->cap / 2;
    if (mlsys__index_sa_realloc(s, nc, i) != 0) return -1;   /* the copy opens the hole */
  } else {
    memmove(s->keys + i + 1, s->keys + i, (n - i) * sizeof *s->keys);
    memmove(s->vals + i + 1, s->vals + i, (n - i) * sizeof *s->vals);
  }
  s->keys[i] = key, s->vals[i] = val;
  s->n = n + 1;
  return 1;
}

MLSYS_DEF int mlsys_index_sorted_erase(mlsys_index_sorted *s, uint64_t key) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key), n = s->n;
  if (i >= n || s->keys[i] != key) return 0;
  memmove(s->keys + i, s->keys + i + 1, (n - i - 1) * sizeof *s->keys);
  memmove(s->vals + i, s->vals + i + 1, (n - i - 1) * sizeof *s->vals);
  s->n = n - 1;
  if (s->n == 0) {   /* empty: give everything back */
    mlsys_free(s->keys);
    s->keys = s->vals = NULL, s->cap = 0;
  } else if (s->cap > 64 && s->n < s->cap / 4) {
    (void)mlsys__index_sa_realloc(s, s->cap / 2, (size_t)-1);   /* on failure the larger block simply stays */
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_sorted_scan(const mlsys_index_sorted *s, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, lo), take = s->n - i;
  if (take > max) take = max;
  if (take) {
    if (keys) memcpy(keys, s->keys + i, take * sizeof *keys);
    if (vals) memcpy(vals, s->vals + i, take * sizeof *vals);
  }
  return take;
}

MLSYS_DEF size_t mlsys_index_sorted_size(const mlsys_index_sorted *s) { return s->n; }
MLSYS_DEF size_t mlsys_index_sorted_memory(const mlsys_index_sorted *s) { return sizeof *s + s->cap * 2 * sizeof(uint64_t); }
MLSYS_DEF void mlsys_index_sorted_free(mlsys_index_sorted *s) {
  if (!s) return;
  mlsys_free(s->keys);
  mlsys_free(s);
}

#undef MLSYS__BT_N
#undef MLSYS__BT_NEXT
#undef MLSYS__BT_LKEYS
#undef MLSYS__BT_LVALS
#undef MLSYS__BT_IKEYS
#undef MLSYS__BT_KIDS
#undef MLSYS__BT_MAXD
#undef MLSYS__BT_LINEAR_MAX
#undef MLSYS__BT_SLAB_MAX

#endif
#endif
