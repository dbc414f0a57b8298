/* tests/test_index_baselines.c — the MAPLE baselines (spec PART B4, item 3 and the sorted array): the B+tree and the
   sorted array checked against a plain sorted-array reference written here (long random find / insert / update /
   erase / scan sequences, with mlsys_index_btree_check after every batch), at node sizes 64 (3 keys: deep trees,
   constant splits, borrows and merges), 256 and 4096; bulk loads of unsorted input with repeats; 0 and UINT64_MAX;
   1e6 ascending and descending inserts with the depth bound that the fill rule implies; erase-all and reinsert;
   memory accounting against an instrumented allocator (every byte requested through MLSYS_MALLOC / MLSYS_REALLOC is
   counted with its size, so mlsys_*_memory must equal the live bytes exactly); allocation failures; and checks that
   mlsys_index_btree_check itself catches a corrupted tree. */
#include <stddef.h>
#include <stdlib.h>
static void *counting_malloc(size_t n);
static void *counting_realloc(void *p, size_t n);
static void counting_free(void *p);
#define MLSYS_MALLOC(n) counting_malloc(n)
#define MLSYS_REALLOC(p, n) counting_realloc(p, n)
#define MLSYS_FREE(p) counting_free(p)
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "tests/test.h"

/* ---- the instrumented allocator: a 16-byte header holds the requested size ------------------------------------- */
static long fail_at = -1;   /* the allocation call number that fails; -1: none */
static long ncalls;
static size_t live_bytes;
static void *counting_malloc(size_t n) {
  size_t *p;
  if (ncalls++ == fail_at) return NULL;
  p = (size_t *)malloc(n + 16);
  if (!p) return NULL;
  p[0] = n;
  live_bytes += n;
  return (char *)p + 16;
}
static void *counting_realloc(void *q, size_t n) {
  size_t *p, old;
  if (ncalls++ == fail_at) return NULL;
  if (!q) return counting_malloc((ncalls--, n));
  old = *(size_t *)((char *)q - 16);
  p = (size_t *)realloc((char *)q - 16, n + 16);
  if (!p) return NULL;
  p[0] = n;
  live_bytes += n;
  live_bytes -= old;
  return (char *)p + 16;
}
static void counting_free(void *q) {
  if (!q) return;
  live_bytes -= *(size_t *)((char *)q - 16);
  free((char *)q - 16);
}

/* ---- the reference: a plain sorted array (textbook binary search, memmove) -------------------------------------- */
typedef struct {
  uint64_t *k, *v;
  size_t n, cap;
} ref_t;
static size_t ref_lower(const ref_t *r, uint64_t key) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->k[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
static int ref_find(const ref_t *r, uint64_t key, uint64_t *val) {
  size_t i = ref_lower(r, key);
  if (i < r->n && r->k[i] == key) {
    *val = r->v[i];
    return 1;
  }
  return 0;
}
static int ref_insert(ref_t *r, uint64_t key, uint64_t val) {
  size_t i = ref_lower(r, key);
  if (i < r->n && r->k[i] == key) return 0;
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->k = (uint64_t *)realloc(r->k, r->cap * 8);
    r->v = (uint64_t *)realloc(r->v, r->cap * 8);
  }
  memmove(r->k + i + 1, r->k + i, (r->n - i) * 8);
  memmove(r->v + i + 1, r->v + i, (r->n - i) * 8);
  r->k[i] = key, r->v[i] = val, r->n++;
  return 1;
}
static int ref_erase(ref_t *r, uint64_t key) {
  size_t i = ref_lower(r, key);
  if (i >= r->n || r->k[i] != key) return 0;
  memmove(r->k + i, r->k + i + 1, (r->n - i - 1) * 8);
  memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * 8);
  r->n--;
  return 1;
}
static void ref_free(ref_t *r) {
  free(r->k);
  free(r->v);
  memset(r, 0, sizeof *r);
}

/* keys spread over the whole 64-bit range (the top half too: a signed compare would misorder them), 0 and UINT64_MAX
   at the ends of the universe */
static uint64_t spread_key(uint64_t u, uint64_t universe) {
  if (u + 1 >= universe) return UINT64_MAX;
  return u * (UINT64_MAX / (universe - 1));
}

static size_t cap_of(size_t node_bytes) { return (node_bytes - 16) / 16; }
/* The deepest a tree of n keys may be under the fill rule: a tree of depth d ≥ 2 holds at least
   2 · min_kids^(d−2) · min_leaf keys (root with 2 children, every other node at its minimum). */
static size_t depth_bound(size_t node_bytes, size_t n) {
  double cap = (double)cap_of(node_bytes), min_leaf = floor((cap + 1) / 2), min_kids = floor((cap + 2) / 2), least = 2 * min_leaf;
  size_t d = 1;
  while (least <= (double)n) {
    d++;
    least *= min_kids;
  }
  return d;
}
/* The depth of a fully packed tree: the least possible. */
static size_t packed_depth(size_t node_bytes, size_t n) {
  double cap = (double)cap_of(node_bytes), fits = cap;
  size_t d = 1;
  while (fits < (double)n) {
    fits *= cap + 1;
    d++;
  }
  return d;
}

/* the whole content of both structures equals the reference (a full scan, keys and payloads) */
static int same_content(mlsys_index_btree *t, mlsys_index_sorted *s, const ref_t *r) {
  uint64_t *k = (uint64_t *)malloc((r->n + 1) * 8), *v = (uint64_t *)malloc((r->n + 1) * 8);
  int ok = 1;
  size_t got;
  if (t) {
    got = mlsys_index_btree_scan(t, 0, r->n + 1, k, v);
    ok = ok && got == r->n && mlsys_index_btree_size(t) == r->n && !memcmp(k, r->k, r->n * 8) && !memcmp(v, r->v, r->n * 8);
  }
  if (s) {
    got = mlsys_index_sorted_scan(s, 0, r->n + 1, k, v);
    ok = ok && got == r->n && mlsys_index_sorted_size(s) == r->n && !memcmp(k, r->k, r->n * 8) && !memcmp(v, r->v, r->n * 8);
  }
  free(k);
  free(v);
  return ok;
}

/* ---- bad arguments ------------------------------------------------------------------------------------------------ */
TEST(bad_arguments_are_named) {
  mlsys_index_btree *t = (mlsys_index_btree *)1;
  mlsys_index_sorted *s = (mlsys_index_sorted *)1;
  uint64_t k[3] = {1, 2, 3};
  CHECK_EQ_INT(mlsys_index_btree_create(63, k, NULL, 3, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "node_bytes");
  CHECK(t == NULL);
  CHECK_EQ_INT(mlsys_index_btree_create(1, k, NULL, 3, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "node_bytes = 1");
  CHECK_EQ_INT(mlsys_index_btree_create((size_t)1 << 30, k, NULL, 3, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "node_bytes");
  CHECK_EQ_INT(mlsys_index_btree_create(256, NULL, NULL, 3, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "keys is NULL");
  CHECK_EQ_INT(mlsys_index_btree_create(256, k, NULL, 3, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "out");
  CHECK_EQ_INT(mlsys_index_sorted_create(NULL, NULL, 2, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "keys is NULL");
  CHECK(s == NULL);
  CHECK_EQ_INT(mlsys_index_sorted_create(k, NULL, 3, NULL), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_index_btree_check(NULL), MLSYS_ERR_ARG);
  /* the smallest node (64 bytes: 3 keys) is accepted; 0 means 256 */
  REQUIRE_OK(mlsys_index_btree_create(64, k, NULL, 3, &t));
  CHECK_OK(mlsys_index_btree_check(t));
  mlsys_index_btree_free(t);
  mlsys_index_btree_free(NULL);
  mlsys_index_sorted_free(NULL);
}

TEST(default_node_is_256_bytes) {
  enum { N = 5000 };
  uint64_t *k = (uint64_t *)malloc(N * 8);
  mlsys_index_btree *a, *b;
  size_t i;
  for (i = 0; i < N; i++) k[i] = i * 7;
  REQUIRE_OK(mlsys_index_btree_create(0, k, NULL, N, &a));
  REQUIRE_OK(mlsys_index_btree_create(256, k, NULL, N, &b));
  CHECK_EQ_INT(mlsys_index_btree_memory(a), mlsys_index_btree_memory(b));
  CHECK_EQ_INT(mlsys_index_btree_depth(a), packed_depth(256, N));   /* 15 keys a leaf, 16 children */
  CHECK_EQ_INT(mlsys_index_btree_depth(a), 4);   /* 15·16·16 = 3840 < 5000 ≤ 15·16³ */
  mlsys_index_btree_free(a);
  mlsys_index_btree_free(b);
  free(k);
}

/* ---- small cases ---------------------------------------------------------------------------------------------------- */
static void small_cases(size_t nb) {
  mlsys_index_btree *t;
  uint64_t v = 0, ks[4], vs[4];
  size_t i;
  REQUIRE_OK(mlsys_index_btree_create(nb, NULL, NULL, 0, &t));
  CHECK_EQ_INT(mlsys_index_btree_size(t), 0);
  CHECK_EQ_INT(mlsys_index_btree_depth(t), 1);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK_EQ_INT(mlsys_index_btree_find(t, 0, &v), 0);
  CHECK_EQ_INT(mlsys_index_btree_find(t, UINT64_MAX, &v), 0);
  CHECK_EQ_INT(mlsys_index_btree_erase(t, 0), 0);
  CHECK_EQ_INT(mlsys_index_btree_update(t, 0, 1), 0);
  CHECK_EQ_INT(mlsys_index_btree_scan(t, 0, 4, ks, vs), 0);
  /* a single key, then the extremes */
  CHECK_EQ_INT(mlsys_index_btree_insert(t, UINT64_MAX, 11), 1);
  CHECK_EQ_INT(mlsys_index_btree_insert(t, UINT64_MAX, 12), 0);   /* present: unchanged */
  CHECK_EQ_INT(mlsys_index_btree_find(t, UINT64_MAX, &v), 1);
  CHECK_EQ_INT(v, 11);
  CHECK_EQ_INT(mlsys_index_btree_find(t, UINT64_MAX - 1, NULL), 0);
  CHECK_EQ_INT(mlsys_index_btree_insert(t, 0, 10), 1);
  CHECK_EQ_INT(mlsys_index_btree_insert(t, 1ull << 63, 13), 1);
  CHECK_EQ_INT(mlsys_index_btree_insert(t, (1ull << 63) - 1, 14), 1);
  CHECK_EQ_INT(mlsys_index_btree_size(t), 4);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK_EQ_INT(mlsys_index_btree_scan(t, 0, 4, ks, vs), 4);
  CHECK(ks[0] == 0 && ks[1] == (1ull << 63) - 1 && ks[2] == 1ull << 63 && ks[3] == UINT64_MAX);
  CHECK(vs[0] == 10 && vs[1] == 14 && vs[2] == 13 && vs[3] == 11);
  CHECK_EQ_INT(mlsys_index_btree_scan(t, UINT64_MAX, 4, ks, NULL), 1);
  CHECK(ks[0] == UINT64_MAX);
  CHECK_EQ_INT(mlsys_index_btree_scan(t, 1, 2, NULL, vs), 2);
  CHECK(vs[0] == 14 && vs[1] == 13);
  CHECK_EQ_INT(mlsys_index_btree_scan(t, 1, 0, ks, vs), 0);
  CHECK_EQ_INT(mlsys_index_btree_update(t, 0, 99), 1);
  CHECK_EQ_INT(mlsys_index_btree_find(t, 0, &v), 1);
  CHECK_EQ_INT(v, 99);
  {
    static const uint64_t gone[4] = {0, UINT64_MAX, 1ull << 63, (1ull << 63) - 1};
    for (i = 0; i < 4; i++) CHECK_EQ_INT(mlsys_index_btree_erase(t, gone[i]), 1);
  }
  CHECK_EQ_INT(mlsys_index_btree_size(t), 0);
  CHECK_EQ_INT(mlsys_index_btree_depth(t), 1);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK_EQ_INT(mlsys_index_btree_find(t, 0, NULL), 0);
  mlsys_index_btree_free(t);
  /* bulk load of one key, payload derived */
  ks[0] = 42;
  REQUIRE_OK(mlsys_index_btree_create(nb, ks, NULL, 1, &t));
  CHECK_EQ_INT(mlsys_index_btree_find(t, 42, &v), 1);
  CHECK(v == mlsys_index_payload_of(42));
  CHECK_EQ_INT(mlsys_index_btree_depth(t), 1);
  CHECK_OK(mlsys_index_btree_check(t));
  mlsys_index_btree_free(t);
}
TEST(btree_small_cases_64) { small_cases(64); }
TEST(btree_small_cases_256) { small_cases(256); }
TEST(btree_small_cases_4096) { small_cases(4096); }

TEST(sorted_small_cases) {
  mlsys_index_sorted *s;
  uint64_t v = 0, ks[4], vs[4];
  REQUIRE_OK(mlsys_index_sorted_create(NULL, NULL, 0, &s));
  CHECK_EQ_INT(mlsys_index_sorted_size(s), 0);
  CHECK_EQ_INT(mlsys_index_sorted_find(s, 0, &v), 0);
  CHECK_EQ_INT(mlsys_index_sorted_find(s, UINT64_MAX, &v), 0);
  CHECK_EQ_INT(mlsys_index_sorted_erase(s, 0), 0);
  CHECK_EQ_INT(mlsys_index_sorted_scan(s, 0, 4, ks, vs), 0);
  CHECK_EQ_INT(mlsys_index_sorted_insert(s, UINT64_MAX, 11), 1);
  CHECK_EQ_INT(mlsys_index_sorted_insert(s, UINT64_MAX, 12), 0);
  CHECK_EQ_INT(mlsys_index_sorted_insert(s, 0, 10), 1);
  CHECK_EQ_INT(mlsys_index_sorted_insert(s, 1ull << 63, 13), 1);
  CHECK_EQ_INT(mlsys_index_sorted_find(s, UINT64_MAX, &v), 1);
  CHECK_EQ_INT(v, 11);
  CHECK_EQ_INT(mlsys_index_sorted_scan(s, 1, 4, ks, vs), 2);
  CHECK(ks[0] == 1ull << 63 && ks[1] == UINT64_MAX && vs[0] == 13 && vs[1] == 11);
  CHECK_EQ_INT(mlsys_index_sorted_update(s, 0, 5), 1);
  CHECK_EQ_INT(mlsys_index_sorted_find(s, 0, &v), 1);
  CHECK_EQ_INT(v, 5);
  CHECK_EQ_INT(mlsys_index_sorted_erase(s, 0), 1);
  CHECK_EQ_INT(mlsys_index_sorted_erase(s, 0), 0);
  CHECK_EQ_INT(mlsys_index_sorted_erase(s, UINT64_MAX), 1);
  CHECK_EQ_INT(mlsys_index_sorted_erase(s, 1ull << 63), 1);
  CHECK_EQ_INT(mlsys_index_sorted_size(s), 0);
  CHECK_EQ_INT(mlsys_index_sorted_memory(s), sizeof(struct mlsys_index_sorted));   /* emptied: the block is returned */
  mlsys_index_sorted_free(s);
}

/* ---- bulk load: unsorted input with repeats; the first occurrence wins ------------------------------------------ */
typedef struct {
  uint64_t key, val;
  size_t idx;
} kvi;
static int kvi_cmp(const void *a, const void *b) {
  const kvi *x = (const kvi *)a, *y = (const kvi *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}
/* reference: qsort by (key, position), keep the first of each key */
static void ref_from_input(ref_t *r, const uint64_t *k, const uint64_t *v, size_t n) {
  kvi *a = (kvi *)malloc((n + 1) * sizeof *a);
  size_t i;
  memset(r, 0, sizeof *r);
  for (i = 0; i < n; i++) a[i].key = k[i], a[i].val = v ? v[i] : mlsys_index_payload_of(k[i]), a[i].idx = i;
  qsort(a, n, sizeof *a, kvi_cmp);
  for (i = 0; i < n; i++)
    if (i == 0 || a[i].key != a[i - 1].key) ref_insert(r, a[i].key, a[i].val);
  free(a);
}

/* order: 0 random, 1 ascending with repeats, 2 descending, 3 random < 2^24 */
static void bulk_case(size_t nb, size_t n, int order, int with_vals, uint64_t seed) {
  mlsys_rng rng;
  uint64_t *k = (uint64_t *)malloc((n + 1) * 8), *v = (uint64_t *)malloc((n + 1) * 8), got;
  mlsys_index_btree *t;
  mlsys_index_sorted *s;
  ref_t r;
  size_t i, miss = 0;
  mlsys_rng_seed(&rng, seed);
  for (i = 0; i < n; i++) {
    uint64_t x = mlsys_rng_u64(&rng);
    switch (order) {
      case 0: k[i] = (i % 5 == 0 && i) ? k[mlsys_rng_below(&rng, i)] : (x & 1 ? x : x >> (x % 64)); break;   /* repeats, all magnitudes */
      case 1: k[i] = i / 3 * 1000003ull; break;                                                           /* sorted, each key 3× */
      case 2: k[i] = UINT64_MAX - i * 977; break;
      default: k[i] = x & 0xffffff; break;   /* three varying bytes: an odd number of radix passes */
    }
    v[i] = x;
  }
  if (n > 2) k[n / 2] = 0, k[n / 3] = order == 3 ? 0xffffff : UINT64_MAX;
  ref_from_input(&r, k, with_vals ? v : NULL, n);
  REQUIRE_OK(mlsys_index_btree_create(nb, k, with_vals ? v : NULL, n, &t));
  REQUIRE_OK(mlsys_index_sorted_create(k, with_vals ? v : NULL, n, &s));
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK_EQ_INT(mlsys_index_btree_size(t), r.n);
  CHECK_EQ_INT(mlsys_index_btree_depth(t), packed_depth(nb, r.n));
  CHECK(same_content(t, s, &r));
  for (i = 0; i < n; i++) {   /* every input key is found with its first payload; probes next to keys are not */
    uint64_t want = 0;
    ref_find(&r, k[i], &want);
    if (!mlsys_index_btree_find(t, k[i], &got) || got != want) miss++;
    if (!mlsys_index_sorted_find(s, k[i], &got) || got != want) miss++;
    if (k[i] + 1 != 0 && mlsys_index_btree_find(t, k[i] + 1, NULL) != ref_find(&r, k[i] + 1, &want)) miss++;
  }
  CHECK_EQ_INT(miss, 0);
  mlsys_index_btree_free(t);
  mlsys_index_sorted_free(s);
  ref_free(&r);
  free(k);
  free(v);
}
TEST(bulk_load_unsorted_with_repeats) {
  static const size_t nbs[3] = {64, 256, 4096};
  static const size_t ns[6] = {2, 3, 16, 241, 5000, 100000};
  int a, b, order;
  for (a = 0; a < 3; a++)
    for (b = 0; b < 6; b++)
      for (order = 0; order < 4; order++) bulk_case(nbs[a], ns[b], order, (a + b + order) & 1, 1000 + 10 * a + b);
}
/* the packed sizes: exactly full leaves, one more key than that, ... (even spreading must keep every node legal) */
TEST(bulk_load_boundary_sizes) {
  static const size_t nbs[3] = {64, 256, 4096};
  int a;
  for (a = 0; a < 3; a++) {
    size_t cap = cap_of(nbs[a]), sizes[8], j;
    sizes[0] = cap, sizes[1] = cap + 1, sizes[2] = cap * (cap + 1), sizes[3] = cap * (cap + 1) + 1;
    sizes[4] = 2 * cap - 1, sizes[5] = 2 * cap + 1, sizes[6] = cap * (cap + 1) * 2 + 1, sizes[7] = cap * (cap + 2) + 1;
    for (j = 0; j < 8; j++) {
      uint64_t *k = (uint64_t *)malloc(sizes[j] * 8);
      mlsys_index_btree *t;
      size_t i, ok = 0;
      for (i = 0; i < sizes[j]; i++) k[i] = 2 * i + 1;
      REQUIRE_OK(mlsys_index_btree_create(nbs[a], k, NULL, sizes[j], &t));
      CHECK_OK(mlsys_index_btree_check(t));
      CHECK_EQ_INT(mlsys_index_btree_depth(t), packed_depth(nbs[a], sizes[j]));
      for (i = 0; i < sizes[j]; i++) ok += mlsys_index_btree_find(t, 2 * i + 1, NULL) && !mlsys_index_btree_find(t, 2 * i, NULL);
      CHECK_EQ_INT(ok, sizes[j]);
      mlsys_index_btree_free(t);
      free(k);
    }
  }
}

/* ---- differential: long random operation sequences ------------------------------------------------------------- */
/* The reference here is a direct-address table over the key universe (present[u], val[u] for key spread_key(u)):
   obviously right, and O(1) per operation, so long sequences on large trees stay fast. */
typedef struct {
  uint64_t universe;
  uint8_t *has;
  uint64_t *val;
  size_t n;
} tab_t;
/* the table's content as sorted arrays, compared with full scans of both structures */
static int tab_same(const tab_t *r, mlsys_index_btree *t, mlsys_index_sorted *s) {
  uint64_t *rk = (uint64_t *)malloc((r->n + 1) * 8), *rv = (uint64_t *)malloc((r->n + 1) * 8);
  uint64_t *k = (uint64_t *)malloc((r->n + 1) * 8), *v = (uint64_t *)malloc((r->n + 1) * 8);
  size_t u, m = 0, got;
  int ok = 1;
  for (u = 0; u < r->universe; u++)
    if (r->has[u]) rk[m] = spread_key(u, r->universe), rv[m] = r->val[u], m++;
  ok = m == r->n;
  got = mlsys_index_btree_scan(t, 0, r->n + 1, k, v);
  ok = ok && got == r->n && mlsys_index_btree_size(t) == r->n && !memcmp(k, rk, m * 8) && !memcmp(v, rv, m * 8);
  if (s) {
    got = mlsys_index_sorted_scan(s, 0, r->n + 1, k, v);
    ok = ok && got == r->n && mlsys_index_sorted_size(s) == r->n && !memcmp(k, rk, m * 8) && !memcmp(v, rv, m * 8);
  }
  free(rk), free(rv), free(k), free(v);
  return ok;
}

static void differential(size_t nb, uint64_t universe, size_t n_init, size_t ops, size_t batch, int with_sorted, uint64_t seed) {
  mlsys_rng rng;
  mlsys_index_btree *t;
  mlsys_index_sorted *s = NULL;
  tab_t r;
  uint64_t *init = (uint64_t *)malloc((n_init + 1) * 8), bk[64], bv[64], ck[64], cv[64], rk[64], rv[64];
  size_t i, bad = 0, bad_check = 0, bad_content = 0, max_depth_seen = 1, min_depth_after_max = 100;
  long inserted = 0, erased = 0;
  int phase_grow = 1;
  mlsys_rng_seed(&rng, seed);
  r.universe = universe, r.n = 0;
  r.has = (uint8_t *)calloc(universe, 1);
  r.val = (uint64_t *)calloc(universe, 8);
  /* start from a bulk load of random keys with repeats (so the structures start packed, not empty) */
  for (i = 0; i < n_init; i++) {
    uint64_t u = mlsys_rng_below(&rng, universe);
    init[i] = spread_key(u, universe);
    if (!r.has[u]) r.has[u] = 1, r.val[u] = mlsys_index_payload_of(init[i]), r.n++;
  }
  REQUIRE_OK(mlsys_index_btree_create(nb, init, NULL, n_init, &t));
  if (with_sorted) REQUIRE_OK(mlsys_index_sorted_create(init, NULL, n_init, &s));
  for (i = 0; i < ops; i++) {
    uint64_t u = mlsys_rng_below(&rng, universe), key, val = mlsys_rng_u64(&rng), a = 0, b = 0;
    uint32_t dice = (uint32_t)mlsys_rng_below(&rng, 100);
    int x, y, z;
    /* phases: grow towards 60 % of the universe, then shrink towards 2 % (half the erases then aim at present keys),
       so that splits, borrows and merges run through every level, and the root grows and shrinks, many times */
    if (phase_grow && r.n > universe * 6 / 10) phase_grow = 0;
    if (!phase_grow && r.n < universe / 50) phase_grow = 1;
    if (!phase_grow && dice >= 47 && dice < 92 && (dice & 1) && r.n) {
      int tries;
      for (tries = 0; tries < 1000 && !r.has[u]; tries++) u = mlsys_rng_below(&rng, universe);
    }
    key = spread_key(u, universe);
    if (dice < 20) {   /* find */
      x = mlsys_index_btree_find(t, key, &a), z = r.has[u];
      y = s ? mlsys_index_sorted_find(s, key, &b) : z, b = s ? b : r.val[u];
      if (x != z || y != z || (z && (a != r.val[u] || b != r.val[u]))) bad++;
    } else if (dice < (phase_grow ? 65u : 40u)) {   /* insert */
      x = mlsys_index_btree_insert(t, key, val), z = !r.has[u];
      y = s ? mlsys_index_sorted_insert(s, key, val) : z;
      if (z) r.has[u] = 1, r.val[u] = val, r.n++, inserted++;
      if (x != z || y != z) bad++;
    } else if (dice < (phase_grow ? 72u : 47u)) {   /* update */
      x = mlsys_index_btree_update(t, key, val), z = r.has[u];
      y = s ? mlsys_index_sorted_update(s, key, val) : z;
      if (z) r.val[u] = val;
      if (x != z || y != z) bad++;
    } else if (dice < 92) {   /* erase */
      x = mlsys_index_btree_erase(t, key), z = r.has[u];
      y = s ? mlsys_index_sorted_erase(s, key) : z;
      if (z) r.has[u] = 0, r.n--, erased++;
      if (x != z || y != z) bad++;
    } else {   /* scan from a key or from just past it */
      size_t max = (size_t)mlsys_rng_below(&rng, 64), want = 0, xs, ys, w;
      uint64_t lo = key;
      if ((dice & 1) && u + 1 < universe) lo = key + 1, u++;
      for (w = u; w < universe && want < max; w++)
        if (r.has[w]) rk[want] = spread_key(w, universe), rv[want] = r.val[w], want++;
      xs = mlsys_index_btree_scan(t, lo, max, bk, bv);
      ys = s ? mlsys_index_sorted_scan(s, lo, max, ck, cv) : want;
      if (xs != want || memcmp(bk, rk, want * 8) || memcmp(bv, rv, want * 8)) bad++;
      if (s && (ys != want || memcmp(ck, rk, want * 8) || memcmp(cv, rv, want * 8))) bad++;
    }
    if ((i + 1) % batch == 0 || i + 1 == ops) {
      size_t d = mlsys_index_btree_depth(t);
      if (mlsys_index_btree_check(t) != MLSYS_OK) {
        if (!bad_check) printf("    after op %zu: %s\n", i, mlsys_last_error());
        bad_check++;
      }
      if (!tab_same(&r, t, s)) bad_content++;
      if (d > depth_bound(nb, r.n)) bad++;
      if (d > max_depth_seen) max_depth_seen = d, min_depth_after_max = d;
      if (d < min_depth_after_max) min_depth_after_max = d;
      if (bad || bad_check || bad_content) break;
    }
  }
  if (getenv("BL_VERBOSE"))
    printf("    nb %zu: %zu ops, %ld inserted, %ld erased, depth max %zu then %zu\n", nb, i, inserted, erased, max_depth_seen,
           min_depth_after_max);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(bad_check, 0);
  CHECK_EQ_INT(bad_content, 0);
  /* the sequence really exercised the structure: many changes, at least 3 levels, and the root shrank again */
  CHECK(inserted > (long)universe / 2 && erased > (long)universe / 2);
  CHECK(max_depth_seen >= 3);
  CHECK(min_depth_after_max < max_depth_seen);
  /* erase the rest in random order, then the tree is one empty leaf */
  while (r.n) {
    uint64_t u = mlsys_rng_below(&rng, universe), key = spread_key(u, universe);
    int z = r.has[u];
    if (mlsys_index_btree_erase(t, key) != z || (s && mlsys_index_sorted_erase(s, key) != z)) bad++;
    if (z) {
      r.has[u] = 0, r.n--;
      if (r.n % 97 == 0 && mlsys_index_btree_check(t) != MLSYS_OK) bad_check++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(bad_check, 0);
  CHECK_EQ_INT(mlsys_index_btree_size(t), 0);
  CHECK_EQ_INT(mlsys_index_btree_depth(t), 1);
  CHECK_OK(mlsys_index_btree_check(t));
  if (s) CHECK_EQ_INT(mlsys_index_sorted_size(s), 0);
  mlsys_index_btree_free(t);
  mlsys_index_sorted_free(s);
  free(r.has), free(r.val), free(init);
}
TEST(differential_node_64) { differential(64, 4096, 1500, 300000, 1000, 1, 1); }
TEST(differential_node_64_dense_keys) { differential(64, 300, 100, 100000, 50, 1, 2); }   /* small universe: the root changes often */
TEST(differential_node_80_even_leaf) { differential(80, 4096, 1500, 150000, 1000, 1, 5); }   /* cap 4: even capacity */
TEST(differential_node_256) { differential(256, 8192, 3000, 300000, 2000, 1, 3); }
/* 3 levels of 4 KB nodes need more than ~45 000 keys; the sorted array (O(n) updates) sits this one out */
TEST(differential_node_4096) { differential(4096, 1 << 17, 80000, 600000, 5000, 0, 4); }

/* ---- 1e6 sequential inserts, erase everything, reinsert -------------------------------------------------------- */
static void sequential(size_t nb, size_t n, int descending) {
  mlsys_index_btree *t;
  size_t i, bad = 0;
  uint64_t v;
  REQUIRE_OK(mlsys_index_btree_create(nb, NULL, NULL, 0, &t));
  for (i = 0; i < n; i++) {
    uint64_t k = descending ? UINT64_MAX - i * 3 : i * 3;
    if (mlsys_index_btree_insert(t, k, i) != 1) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(mlsys_index_btree_size(t), n);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK(mlsys_index_btree_depth(t) <= depth_bound(nb, n));
  CHECK(mlsys_index_btree_depth(t) >= packed_depth(nb, n));
  for (i = 0; i < n; i += 7) {
    uint64_t k = descending ? UINT64_MAX - i * 3 : i * 3;
    if (!mlsys_index_btree_find(t, k, &v) || v != i || mlsys_index_btree_find(t, k + 1, NULL)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  /* erase all in the same order, checking the invariants on the way */
  for (i = 0; i < n; i++) {
    uint64_t k = descending ? UINT64_MAX - i * 3 : i * 3;
    if (mlsys_index_btree_erase(t, k) != 1) bad++;
    if (i % (n / 4) == 0 && mlsys_index_btree_check(t) != MLSYS_OK) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(mlsys_index_btree_size(t), 0);
  CHECK_EQ_INT(mlsys_index_btree_depth(t), 1);
  CHECK_OK(mlsys_index_btree_check(t));
  /* reinsert in the other direction */
  for (i = 0; i < n; i++) {
    uint64_t k = descending ? i * 3 : UINT64_MAX - i * 3;
    if (mlsys_index_btree_insert(t, k, i) != 1) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(mlsys_index_btree_size(t), n);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK(mlsys_index_btree_depth(t) <= depth_bound(nb, n));
  mlsys_index_btree_free(t);
}
TEST(sequential_1e6_node_64) { sequential(64, 1000000, 0); sequential(64, 1000000, 1); }
TEST(sequential_1e6_node_256) { sequential(256, 1000000, 0); sequential(256, 1000000, 1); }
TEST(sequential_1e6_node_4096) { sequential(4096, 1000000, 0); sequential(4096, 1000000, 1); }

TEST(sorted_sequential_inserts) {
  mlsys_index_sorted *s;
  size_t i, bad = 0, n = 1000000, nd = 20000;
  uint64_t v;
  REQUIRE_OK(mlsys_index_sorted_create(NULL, NULL, 0, &s));
  for (i = 0; i < n; i++) bad += mlsys_index_sorted_insert(s, i * 3, i) != 1;   /* appends: amortised O(1) */
  CHECK_EQ_INT(bad, 0);
  for (i = 0; i < n; i += 7) bad += !mlsys_index_sorted_find(s, i * 3, &v) || v != i || mlsys_index_sorted_find(s, i * 3 + 1, NULL);
  CHECK_EQ_INT(bad, 0);
  CHECK(mlsys_index_sorted_memory(s) <= sizeof(struct mlsys_index_sorted) + 16 * (n + n / 2 + 16));   /* 1.5× growth */
  for (i = n; i-- > 0;) bad += mlsys_index_sorted_erase(s, i * 3) != 1;   /* from the back: O(1) each, shrinking */
  CHECK(mlsys_index_sorted_memory(s) == sizeof(struct mlsys_index_sorted));
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(mlsys_index_sorted_size(s), 0);
  for (i = 0; i < nd; i++) bad += mlsys_index_sorted_insert(s, UINT64_MAX - i, i) != 1;   /* descending: O(n) each */
  CHECK_EQ_INT(bad, 0);
  for (i = 0; i < nd; i++) bad += !mlsys_index_sorted_find(s, UINT64_MAX - i, &v) || v != i;
  CHECK_EQ_INT(bad, 0);
  mlsys_index_sorted_free(s);
}

/* ---- memory accounting ------------------------------------------------------------------------------------------- */
TEST(memory_equals_live_allocated_bytes) {
  static const size_t nbs[4] = {64, 256, 4096, 200};
  int a;
  for (a = 0; a < 4; a++) {
    size_t base = live_bytes, n = 100000, i, cap = cap_of(nbs[a]), leaves;
    uint64_t *k = (uint64_t *)malloc(n * 8);
    mlsys_index_btree *t;
    mlsys_index_sorted *s;
    mlsys_rng rng;
    mlsys_rng_seed(&rng, 77 + (uint64_t)a);
    for (i = 0; i < n; i++) k[i] = mlsys_rng_u64(&rng);
    REQUIRE_OK(mlsys_index_btree_create(nbs[a], k, NULL, n, &t));
    CHECK_EQ_INT(mlsys_index_btree_memory(t), live_bytes - base);   /* the sort's scratch is gone, the rest counted */
    /* and it is what a packed tree needs: the leaves, ~1/cap more for inner nodes, one slab's alignment slack, the
       handle and the split scratch */
    leaves = (n + cap - 1) / cap;
    CHECK(mlsys_index_btree_memory(t) >= leaves * nbs[a]);
    CHECK(mlsys_index_btree_memory(t) <= (leaves + leaves / cap + 8) * ((nbs[a] + 7) / 8 * 8) + 64 * 33 + 48 * cap + 1024);
    for (i = 0; i < n; i++) mlsys_index_btree_insert(t, mlsys_rng_u64(&rng), i);
    CHECK_EQ_INT(mlsys_index_btree_memory(t), live_bytes - base);
    for (i = 0; i < n; i++) mlsys_index_btree_erase(t, k[i]);
    CHECK_EQ_INT(mlsys_index_btree_memory(t), live_bytes - base);
    CHECK_OK(mlsys_index_btree_check(t));
    mlsys_index_btree_free(t);
    CHECK_EQ_INT(live_bytes, base);
    /* the sorted array (20 000 keys: its erases move the tail, and ASan's memmove is slow): the handle and exactly the
       unique keys' two arrays */
    REQUIRE_OK(mlsys_index_sorted_create(k, NULL, 20000, &s));
    CHECK_EQ_INT(mlsys_index_sorted_memory(s), live_bytes - base);
    CHECK_EQ_INT(mlsys_index_sorted_memory(s), sizeof(struct mlsys_index_sorted) + 16 * mlsys_index_sorted_size(s));
    for (i = 0; i < 1000; i++) mlsys_index_sorted_insert(s, mlsys_rng_u64(&rng), i);
    CHECK_EQ_INT(mlsys_index_sorted_memory(s), live_bytes - base);
    for (i = 0; i < 20000; i++) mlsys_index_sorted_erase(s, k[i]);   /* shrinks on the way */
    CHECK_EQ_INT(mlsys_index_sorted_memory(s), live_bytes - base);
    CHECK(mlsys_index_sorted_memory(s) <= sizeof(struct mlsys_index_sorted) + 16 * 4 * 1000);
    mlsys_index_sorted_free(s);
    CHECK_EQ_INT(live_bytes, base);
    free(k);
  }
}

/* ---- allocation failures ------------------------------------------------------------------------------------------- */
TEST(allocation_failures_leave_things_intact) {
  uint64_t k[3000];
  size_t i, base = live_bytes;
  long at;
  int failed_inserts = 0, r;
  mlsys_index_btree *t = NULL;
  mlsys_index_sorted *s = NULL;
  for (i = 0; i < 3000; i++) k[i] = (i * 7919) % 3001;   /* unsorted: the sort's scratch is one more allocation */
  /* create fails at each allocation in turn, then succeeds */
  for (at = 0;; at++) {
    mlsys_status st;
    ncalls = 0, fail_at = at;
    st = mlsys_index_btree_create(64, k, NULL, 3000, &t);
    fail_at = -1;
    if (st == MLSYS_OK) break;
    CHECK_EQ_INT(st, MLSYS_ERR_NOMEM);
    CHECK(t == NULL);
    CHECK_EQ_INT(live_bytes, base);
    REQUIRE(at < 100);
  }
  CHECK(at >= 3);   /* handle, scratch, sort buffer, slab directory, slab */
  CHECK_OK(mlsys_index_btree_check(t));
  /* inserts with every allocation failing: those that need a new slab return -1 and change nothing */
  for (i = 0; i < 20000; i++) {
    size_t before = mlsys_index_btree_size(t);
    uint64_t key = 10000 + i;
    ncalls = 0, fail_at = 0;
    r = mlsys_index_btree_insert(t, key, i);
    fail_at = -1;
    if (r == -1) {
      failed_inserts++;
      CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_NOMEM);
      CHECK_EQ_INT(mlsys_index_btree_size(t), before);
      CHECK_EQ_INT(mlsys_index_btree_find(t, key, NULL), 0);
      CHECK_OK(mlsys_index_btree_check(t));
      CHECK_EQ_INT(mlsys_index_btree_insert(t, key, i), 1);   /* allocations work again */
    } else {
      CHECK_EQ_INT(r, 1);
    }
  }
  CHECK(failed_inserts > 5);
  CHECK_OK(mlsys_index_btree_check(t));
  CHECK_EQ_INT(mlsys_index_btree_size(t), 3000 + 20000);   /* k: 3000 distinct residues mod the prime 3001 */
  CHECK_EQ_INT(mlsys_index_btree_memory(t), live_bytes - base);
  mlsys_index_btree_free(t);
  CHECK_EQ_INT(live_bytes, base);
  /* the sorted array */
  for (at = 0;; at++) {
    mlsys_status st;
    ncalls = 0, fail_at = at;
    st = mlsys_index_sorted_create(k, NULL, 3000, &s);
    fail_at = -1;
    if (st == MLSYS_OK) break;
    CHECK_EQ_INT(st, MLSYS_ERR_NOMEM);
    CHECK(s == NULL);
    CHECK_EQ_INT(live_bytes, base);
    REQUIRE(at < 100);
  }
  failed_inserts = 0;
  for (i = 0; i < 5000; i++) {
    ncalls = 0, fail_at = 0;
    r = mlsys_index_sorted_insert(s, 10000 + i, i);
    fail_at = -1;
    if (r == -1) {
      failed_inserts++;
      CHECK_EQ_INT(mlsys_index_sorted_find(s, 10000 + i, NULL), 0);
      CHECK_EQ_INT(mlsys_index_sorted_insert(s, 10000 + i, i), 1);
    }
  }
  CHECK(failed_inserts > 2);
  CHECK_EQ_INT(mlsys_index_sorted_size(s), 3000 + 5000);
  mlsys_index_sorted_free(s);
  CHECK_EQ_INT(live_bytes, base);
}

/* ---- the checker itself catches corruption --------------------------------------------------------------------- */
TEST(check_catches_corruption) {
  enum { N = 2000 };
  uint64_t k[N], *lk, save;
  unsigned char *leaf, *next;
  uint32_t save_n;
  mlsys_index_btree *t;
  size_t i;
  for (i = 0; i < N; i++) k[i] = i * 10;
  REQUIRE_OK(mlsys_index_btree_create(256, k, NULL, N, &t));
  REQUIRE(mlsys_index_btree_depth(t) == 3);
  CHECK_OK(mlsys_index_btree_check(t));
  /* the leftmost leaf, by the documented layout: inner keys at +8, children after cap keys */
  leaf = t->root;
  for (i = 1; i < t->depth; i++) leaf = *(unsigned char **)(void *)(leaf + 8 + 8 * (size_t)t->cap);
  lk = (uint64_t *)(void *)(leaf + 16);
  /* keys out of order */
  save = lk[1], lk[1] = lk[2], lk[2] = save;
  CHECK_EQ_INT(mlsys_index_btree_check(t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not above");
  save = lk[1], lk[1] = lk[2], lk[2] = save;
  CHECK_OK(mlsys_index_btree_check(t));
  /* a key beyond its separator */
  save = lk[14], lk[14] = 1000000;
  CHECK_EQ_INT(mlsys_index_btree_check(t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "range");
  lk[14] = save;
  /* an underfull leaf */
  save_n = *(uint32_t *)(void *)leaf;
  *(uint32_t *)(void *)leaf = 3;
  CHECK_EQ_INT(mlsys_index_btree_check(t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "minimum");
  *(uint32_t *)(void *)leaf = save_n;
  /* a broken leaf chain */
  next = *(unsigned char **)(void *)(leaf + 8);
  *(unsigned char **)(void *)(leaf + 8) = NULL;
  CHECK_EQ_INT(mlsys_index_btree_check(t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "leaf chain");
  *(unsigned char **)(void *)(leaf + 8) = next;
  /* a wrong size */
  t->size++;
  CHECK_EQ_INT(mlsys_index_btree_check(t), MLSYS_ERR_ARG);
  t->size--;
  CHECK_OK(mlsys_index_btree_check(t));
  mlsys_index_btree_free(t);
}

TEST_MAIN()
