/* tests/test_index_core.c — the MAPLE index core (spec PART B3.1-B3.3, §7.2 small real tests 1-3): differential runs
   against a sorted-array reference on both leaf kinds and extreme configurations, invariants after SMOs, adversarial
   key orders (ascending, powers of two, fb-like outliers), exact memory accounting through an instrumented
   allocator, SMO counters, AVX2 against scalar fragment scans, configuration checks. */
#include <stdlib.h>
#include <string.h>

/* instrumented allocator: a 16-byte header holds the size, g_live counts live bytes; g_fail_after injects failure */
static size_t g_live;
static long g_fail_after = -1;
static void *t_malloc(size_t n) {
  size_t *p;
  if (g_fail_after == 0) return NULL;
  if (g_fail_after > 0) g_fail_after--;
  p = (size_t *)malloc(n + 16);
  if (!p) return NULL;
  p[0] = n;
  g_live += n;
  return (char *)p + 16;
}
static void t_free(void *q) {
  size_t *p;
  if (!q) return;
  p = (size_t *)(void *)((char *)q - 16);
  g_live -= p[0];
  free(p);
}
static void *t_realloc(void *q, size_t n) {
  size_t *p, old;
  if (!q) return t_malloc(n);
  if (g_fail_after == 0) return NULL;
  if (g_fail_after > 0) g_fail_after--;
  old = ((size_t *)(void *)((char *)q - 16))[0];
  p = (size_t *)realloc((char *)q - 16, n + 16);
  if (!p) return NULL;
  p[0] = n;
  g_live = g_live - old + n;
  return (char *)p + 16;
}
#define MLSYS_MALLOC(n) t_malloc(n)
#define MLSYS_REALLOC(p, n) t_realloc(p, n)
#define MLSYS_FREE(p) t_free(p)

#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"

/* sanitizer builds run shorter sequences (ASan makes the per-leaf allocations of check() slow) */
#if defined(__SANITIZE_ADDRESS__)
#define OPS_SCALE 2
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPS_SCALE 2
#endif
#endif
#ifndef OPS_SCALE
#define OPS_SCALE 1
#endif
#include "tests/test.h"

/* ---- the reference: a sorted array with binary search ---------------------------------------------------------- */
typedef struct {
  uint64_t *k, *v;
  size_t n, cap;
} ref_map;
static size_t ref_lb(const ref_map *r, uint64_t key) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (r->k[m] < key) lo = m + 1;
    else hi = m;
  }
  return lo;
}
static int ref_find(const ref_map *r, uint64_t key, uint64_t *v) {
  size_t i = ref_lb(r, key);
  if (i < r->n && r->k[i] == key) { if (v) *v = r->v[i]; return 1; }
  return 0;
}
static int ref_insert(ref_map *r, uint64_t key, uint64_t v) {
  size_t i = ref_lb(r, key);
  if (i < r->n && r->k[i] == key) return 0;
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 1024;
    r->k = (uint64_t *)realloc(r->k, r->cap * 8);
    r->v = (uint64_t *)realloc(r->v, r->cap * 8);
  }
  memmove(r->k + i + 1, r->k + i, (r->n - i) * 8);
  memmove(r->v + i + 1, r->v + i, (r->n - i) * 8);
  r->k[i] = key;
  r->v[i] = v;
  r->n++;
  return 1;
}
static int ref_erase(ref_map *r, uint64_t key) {
  size_t i = ref_lb(r, key);
  if (i >= r->n || r->k[i] != key) return 0;
  memmove(r->k + i, r->k + i + 1, (r->n - i - 1) * 8);
  memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * 8);
  r->n--;
  return 1;
}
static void ref_free(ref_map *r) { free(r->k); free(r->v); memset(r, 0, sizeof *r); }

static uint64_t smo_total(const mlsys_index *ix) {
  return ix->smo_expand + ix->smo_side + ix->smo_down + ix->smo_fexp + ix->smo_fmul + ix->smo_rootexp;
}

/* key generators: 0 uniform 64-bit, 1 dense small range, 2 clustered, 3 mixed with 0/MAX/outliers */
static uint64_t gen_key(mlsys_rng *g, int dist) {
  switch (dist) {
    case 0: return mlsys_rng_u64(g);
    case 1: return mlsys_rng_below(g, 20000);
    case 2: return (mlsys_rng_below(g, 8) << 40) + mlsys_rng_below(g, 1u << 20);
    default: {
      uint64_t r = mlsys_rng_below(g, 100);
      if (r == 0) return 0;
      if (r == 1) return UINT64_MAX;
      if (r == 2) return UINT64_MAX - mlsys_rng_below(g, 4);
      if (r < 6) return (1ull << 63) + mlsys_rng_below(g, 1ull << 62);
      return mlsys_rng_below(g, 1ull << 30);
    }
  }
}

/* full comparison of index and reference: size, every key, a few scans */
static int compare_all(const mlsys_index *ix, const ref_map *r, mlsys_rng *g) {
  size_t i, bad = 0, m;
  uint64_t *sk, *sv;
  if (mlsys_index_size(ix) != r->n) return 0;
  for (i = 0; i < r->n && bad < 3; i++) {
    uint64_t v;
    if (!mlsys_index_find(ix, r->k[i], &v) || v != r->v[i]) bad++;
  }
  sk = (uint64_t *)malloc((r->n + 1) * 8);
  sv = (uint64_t *)malloc((r->n + 1) * 8);
  m = mlsys_index_scan(ix, 0, r->n + 1, sk, sv);
  if (m != r->n || (m && (memcmp(sk, r->k, m * 8) || memcmp(sv, r->v, m * 8)))) bad++;
  (void)g;
  free(sk);
  free(sv);
  return bad == 0;
}

/* one differential run: bulk load n0 keys, then ops random operations; returns the number of failed checks */
static void diff_run(const char *name, mlsys_index_config cfg, size_t n0, size_t ops, int dist, uint64_t seed,
                     int force_scalar) {
  mlsys_rng g;
  ref_map r;
  mlsys_index *ix = NULL;
  uint64_t *bk, *bv, last_smo;
  size_t i, fails = 0, checks = 0, scans = 0;
  memset(&r, 0, sizeof r);
  mlsys_rng_seed(&g, seed);
  bk = (uint64_t *)malloc((n0 + 1) * 8);
  bv = (uint64_t *)malloc((n0 + 1) * 8);
  for (i = 0; i < n0; i++) {
    bk[i] = gen_key(&g, dist);
    bv[i] = mlsys_rng_u64(&g);
    ref_insert(&r, bk[i], bv[i]); /* the first occurrence wins, as in the index */
  }
  if (mlsys_index_create(&cfg, bk, bv, n0, &ix) != MLSYS_OK) {
    CHECK_MSG(0, "%s: create failed: %s", name, mlsys_last_error());
    goto done;
  }
  if (force_scalar) ix->avx2 = 0;
  CHECK_MSG(mlsys_index_check(ix) == MLSYS_OK, "%s: after bulk load: %s", name, mlsys_last_error());
  CHECK_MSG(compare_all(ix, &r, &g), "%s: after bulk load the contents differ", name);
  last_smo = smo_total(ix);
  for (i = 0; i < ops && fails < 5; i++) {
    uint64_t op = mlsys_rng_below(&g, 100), key, val = mlsys_rng_u64(&g), a, b;
    int x, y;
    if (r.n && mlsys_rng_below(&g, 2)) key = r.k[mlsys_rng_below(&g, r.n)];
    else key = gen_key(&g, dist);
    if (op < 40) {
      x = mlsys_index_insert(ix, key, val);
      y = ref_insert(&r, key, val);
      if (x != y) { fails++; CHECK_MSG(0, "%s op %zu: insert(%llu) = %d, want %d", name, i, (unsigned long long)key, x, y); }
    } else if (op < 60) {
      a = b = 0;
      x = mlsys_index_find(ix, key, &a);
      y = ref_find(&r, key, &b);
      if (x != y || a != b) { fails++; CHECK_MSG(0, "%s op %zu: find(%llu) = %d/%llu, want %d/%llu", name, i, (unsigned long long)key, x, (unsigned long long)a, y, (unsigned long long)b); }
    } else if (op < 70) {
      x = mlsys_index_update(ix, key, val);
      y = ref_find(&r, key, NULL);
      if (y) r.v[ref_lb(&r, key)] = val;
      if (x != y) { fails++; CHECK_MSG(0, "%s op %zu: update(%llu) = %d, want %d", name, i, (unsigned long long)key, x, y); }
    } else if (op < 90) {
      x = mlsys_index_erase(ix, key);
      y = ref_erase(&r, key);
      if (x != y) { fails++; CHECK_MSG(0, "%s op %zu: erase(%llu) = %d, want %d", name, i, (unsigned long long)key, x, y); }
    } else {
      uint64_t sk[64], sv[64];
      size_t mx = (size_t)mlsys_rng_below(&g, 65), got, j = ref_lb(&r, key), want = r.n - j < mx ? r.n - j : mx;
      got = mlsys_index_scan(ix, key, mx, sk, sv);
      scans++;
      if (got != want || (got && (memcmp(sk, r.k + j, got * 8) || memcmp(sv, r.v + j, got * 8)))) {
        fails++;
        CHECK_MSG(0, "%s op %zu: scan(%llu, %zu) returned %zu pairs, want %zu (or different pairs)", name, i,
                  (unsigned long long)key, mx, got, want);
      }
    }
    if (mlsys_index_size(ix) != r.n) { fails++; CHECK_MSG(0, "%s op %zu: size %zu, want %zu", name, i, mlsys_index_size(ix), r.n); }
    if (smo_total(ix) != last_smo) { /* invariants after every SMO (sparser once the index is big) */
      last_smo = smo_total(ix);
      if (checks < 150 || (r.n < 1500 && i % 16 == 0) || i % 256 == 0) {
        checks++;
        if (mlsys_index_check(ix) != MLSYS_OK) { fails++; CHECK_MSG(0, "%s op %zu: check after SMO: %s", name, i, mlsys_last_error()); }
      }
    }
  }
  CHECK_MSG(mlsys_index_check(ix) == MLSYS_OK, "%s: final check: %s", name, mlsys_last_error());
  CHECK_MSG(compare_all(ix, &r, &g), "%s: final contents differ", name);
  CHECK(mlsys_index_memory(ix) == sizeof(mlsys_index) + ix->bytes_model + ix->bytes_leaf + ix->bytes_meta);
done:
  mlsys_index_free(ix);
  ref_free(&r);
  free(bk);
  free(bv);
}

static mlsys_index_config mkcfg(int leaf, double eif, double msi, double msh, uint32_t mf, uint32_t mnf, uint32_t nf,
                                uint32_t mlb, int every) {
  mlsys_index_config c;
  memset(&c, 0, sizeof c);
  c.leaf = (mlsys_index_leaf)leaf;
  c.expected_insert_frac = eif;
  c.msi = msi;
  c.msh = msh;
  c.mf_size = mf;
  c.mnf = mnf;
  c.nf = nf;
  c.max_leaf_bytes = mlb;
  c.smo_check_every_insert = every;
  return c;
}

TEST(differential_ga_configs) {
  static const struct { double eif, msi, msh; uint32_t mlb; int every; } C[] = {
      {0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {0.5, 0, 0, 4096, 0}, {0, 1, 1, 4096, 0}, {0, 1.5, 16, 8192, 1},
      {1, 0, 0, 4096, 1}, {0, 0.01, 0.01, 4096, 1}, {0.15, 8, 128, 0, 0},
  };
  size_t i;
  int dist;
  for (i = 0; i < sizeof C / sizeof C[0]; i++)
    for (dist = 0; dist < 4; dist++) {
      char name[96];
      snprintf(name, sizeof name, "GA cfg %zu dist %d", i, dist);
      diff_run(name, mkcfg(0, C[i].eif, C[i].msi, C[i].msh, 0, 0, 0, C[i].mlb, C[i].every),
               (size_t)(i * 700 + dist * 300) % 3000, 12000 / OPS_SCALE, dist, 1000 + i * 10 + (uint64_t)dist, 0);
    }
}

TEST(differential_flog_configs) {
  static const struct { uint32_t mf, mnf, nf, mlb; } C[] = {
      {0, 0, 0, 0}, {1, 1, 1, 0}, {2, 1, 1, 0}, {1, 4, 2, 4096}, {2, 2, 2, 4096}, {16, 4, 1, 4096},
      {64, 64, 4, 4096}, {100, 3, 2, 0}, {1024, 256, 8, 0}, {16, 16, 16, 0},
  };
  size_t i;
  int dist;
  for (i = 0; i < sizeof C / sizeof C[0]; i++)
    for (dist = 0; dist < 4; dist++) {
      char name[96];
      snprintf(name, sizeof name, "FLog cfg %zu dist %d", i, dist);
      diff_run(name, mkcfg(1, 0, 0, 0, C[i].mf, C[i].mnf, C[i].nf, C[i].mlb, 0), (size_t)(i * 500 + dist * 250) % 2500,
               12000 / OPS_SCALE, dist, 2000 + i * 10 + (uint64_t)dist, (int)(i & 1));
    }
}

TEST(differential_long_run) { /* one longer sequence per leaf kind at the defaults */
  diff_run("GA long", mkcfg(0, 0, 0, 0, 0, 0, 0, 0, 0), 50000, 150000 / OPS_SCALE, 3, 77, 0);
  diff_run("FLog long", mkcfg(1, 0, 0, 0, 0, 0, 0, 0, 0), 50000, 150000 / OPS_SCALE, 3, 78, 0);
}

TEST(empty_and_single_key) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 0, 0, 0, 0, 0);
    mlsys_index *ix;
    uint64_t k = 42, v = 0, sk[4];
    REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
    CHECK_EQ_INT(mlsys_index_size(ix), 0);
    CHECK_EQ_INT(mlsys_index_find(ix, 0, NULL), 0);
    CHECK_EQ_INT(mlsys_index_find(ix, UINT64_MAX, NULL), 0);
    CHECK_EQ_INT(mlsys_index_erase(ix, 5), 0);
    CHECK_EQ_INT(mlsys_index_update(ix, 5, 1), 0);
    CHECK_EQ_INT(mlsys_index_scan(ix, 0, 4, sk, NULL), 0);
    CHECK_OK(mlsys_index_check(ix));
    CHECK_EQ_INT(mlsys_index_insert(ix, 7, 70), 1);
    CHECK_EQ_INT(mlsys_index_find(ix, 7, &v), 1);
    CHECK_EQ_INT(v, 70);
    mlsys_index_free(ix);
    REQUIRE_OK(mlsys_index_create(&c, &k, NULL, 1, &ix));
    CHECK_EQ_INT(mlsys_index_find(ix, 42, &v), 1);
    CHECK(v == mlsys_index_payload_of(42));
    CHECK_EQ_INT(mlsys_index_find(ix, 41, NULL), 0);
    CHECK_EQ_INT(mlsys_index_scan(ix, 43, 4, sk, NULL), 0);
    CHECK_EQ_INT(mlsys_index_scan(ix, 0, 4, sk, NULL), 1);
    CHECK_EQ_INT(mlsys_index_erase(ix, 42), 1);
    CHECK_EQ_INT(mlsys_index_size(ix), 0);
    CHECK_OK(mlsys_index_check(ix));
    mlsys_index_free(ix);
  }
  mlsys_index_free(NULL);
}

TEST(extreme_keys_duplicates_unsorted) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 0, 0, 0, 0, 0);
    uint64_t keys[] = {UINT64_MAX, 5, 0, 1ull << 63, 5, UINT64_MAX - 1, 0, 17};
    uint64_t vals[] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t want_k[] = {0, 5, 17, 1ull << 63, UINT64_MAX - 1, UINT64_MAX}, want_v[] = {3, 2, 8, 4, 6, 1};
    uint64_t sk[8], sv[8], v;
    mlsys_index *ix;
    size_t m;
    REQUIRE_OK(mlsys_index_create(&c, keys, vals, 8, &ix));
    CHECK_EQ_INT(mlsys_index_size(ix), 6);
    m = mlsys_index_scan(ix, 0, 8, sk, sv);
    CHECK_EQ_INT(m, 6);
    CHECK(memcmp(sk, want_k, sizeof want_k) == 0);
    CHECK(memcmp(sv, want_v, sizeof want_v) == 0); /* first occurrence's payload */
    CHECK_EQ_INT(mlsys_index_insert(ix, UINT64_MAX, 99), 0);
    CHECK_EQ_INT(mlsys_index_insert(ix, 0, 99), 0);
    CHECK(mlsys_index_find(ix, UINT64_MAX, &v) && v == 1);
    CHECK(mlsys_index_find(ix, 0, &v) && v == 3);
    CHECK_EQ_INT(mlsys_index_scan(ix, UINT64_MAX, 8, sk, NULL), 1);
    CHECK_EQ_INT(mlsys_index_erase(ix, UINT64_MAX), 1);
    CHECK_EQ_INT(mlsys_index_find(ix, UINT64_MAX, NULL), 0);
    CHECK_EQ_INT(mlsys_index_scan(ix, UINT64_MAX, 8, sk, NULL), 0);
    CHECK_EQ_INT(mlsys_index_insert(ix, UINT64_MAX, 11), 1);
    CHECK(mlsys_index_find(ix, UINT64_MAX, &v) && v == 11);
    CHECK_EQ_INT(mlsys_index_erase(ix, 0), 1);
    CHECK_EQ_INT(mlsys_index_insert(ix, 0, 12), 1);
    CHECK(mlsys_index_find(ix, 0, &v) && v == 12);
    CHECK_OK(mlsys_index_check(ix));
    mlsys_index_free(ix);
  }
}

/* ALEX issue #10: a sorted-ascending stream must keep the depth bounded */
TEST(sorted_ascending_inserts_depth) {
  int leaf, mode;
  for (leaf = 0; leaf < 2; leaf++)
    for (mode = 0; mode < 2; mode++) {
      mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 0, 0, 0, mode ? 1u << 16 : 0, 0);
      mlsys_index *ix;
      mlsys_index_stats st;
      uint64_t bulk[1000], i, n = 1000000;
      double t0 = mlsys_now();
      for (i = 0; i < 1000; i++) bulk[i] = i * 1000;
      REQUIRE_OK(mlsys_index_create(&c, bulk, NULL, 1000, &ix));
      for (i = 1000; i < n; i++)
        if (mlsys_index_insert(ix, i * 1000 + (i & 7), i) != 1) break;
      CHECK_EQ_INT(i, n);
      t0 = mlsys_now() - t0;
      mlsys_index_get_stats(ix, &st);
      printf("    %s mlb=%u: %llu ascending inserts in %.3f s, depth %zu, %zu leaves, %zu model nodes, root exp %llu\n",
             leaf ? "FLog" : "GA", c.max_leaf_bytes, (unsigned long long)n, t0, st.depth_max, st.n_leaves,
             st.n_model_nodes, (unsigned long long)st.smo_root_expand);
      CHECK_MSG(st.depth_max <= 4, "depth %zu after ascending inserts", st.depth_max);
      CHECK(st.smo_root_expand > 0);
      CHECK_EQ_INT(st.n_keys, n);
      CHECK(mlsys_index_find(ix, 999999 * 1000 + 7, NULL) == 1);
      CHECK(mlsys_index_find(ix, 500 * 1000, NULL) == 1);
      CHECK_OK(mlsys_index_check(ix));
      mlsys_index_free(ix);
    }
  { /* descending too (left domain expansion), smaller */
    mlsys_index_config c = mkcfg(0, 0, 0, 0, 0, 0, 0, 1u << 16, 0);
    mlsys_index *ix;
    mlsys_index_stats st;
    uint64_t i;
    REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
    for (i = 300000; i-- > 0;) CHECK(mlsys_index_insert(ix, (1ull << 40) + i * 3, i) == 1);
    mlsys_index_get_stats(ix, &st);
    CHECK_MSG(st.depth_max <= 4, "depth %zu after descending inserts", st.depth_max);
    CHECK_OK(mlsys_index_check(ix));
    mlsys_index_free(ix);
  }
}

/* FLog worst case (§6.2.2): keys growing like powers of two */
TEST(powers_of_two) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 4, 4, 2, 0, 0);
    mlsys_index *ix;
    ref_map r;
    unsigned i, j;
    uint64_t bulk[20];
    memset(&r, 0, sizeof r);
    for (i = 0; i < 20; i++) { bulk[i] = 1ull << i; ref_insert(&r, bulk[i], mlsys_index_payload_of(bulk[i])); }
    REQUIRE_OK(mlsys_index_create(&c, bulk, NULL, 20, &ix));
    for (i = 0; i < 64; i++)
      for (j = 0; j < 3; j++) {
        uint64_t k = (1ull << i) + j;
        CHECK_EQ_INT(mlsys_index_insert(ix, k, mlsys_index_payload_of(k)), ref_insert(&r, k, mlsys_index_payload_of(k)));
      }
    CHECK_OK(mlsys_index_check(ix));
    CHECK(compare_all(ix, &r, NULL));
    ref_free(&r);
    mlsys_index_free(ix);
  }
}

/* fb-like: a few keys near 2^63..2^64 among small keys, in the bulk load and inserted later */
TEST(fb_like_outliers) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 0, 0, 0, 0, 0);
    mlsys_index *ix;
    mlsys_index_stats st;
    mlsys_rng g;
    size_t n = 200000, i, found = 0;
    uint64_t *k = (uint64_t *)malloc(n * 8);
    double t0;
    mlsys_rng_seed(&g, 5);
    for (i = 0; i < n; i++) k[i] = mlsys_rng_below(&g, 1ull << 36);
    for (i = 0; i < 8; i++) k[i * 1000] = (1ull << 63) + mlsys_rng_below(&g, 1ull << 63);
    REQUIRE_OK(mlsys_index_create(&c, k, NULL, n / 2, &ix));
    t0 = mlsys_now();
    for (i = n / 2; i < n; i++) {
      if (i % 10000 == 0) k[i] = UINT64_MAX - i; /* more outliers in the stream */
      mlsys_index_insert(ix, k[i], 1);
    }
    for (i = 0; i < n; i++) found += (size_t)mlsys_index_find(ix, k[i], NULL);
    t0 = mlsys_now() - t0;
    mlsys_index_get_stats(ix, &st);
    printf("    %s: fb-like 100k bulk + 100k inserts + 200k finds %.3f s, depth %zu, %zu leaves\n", leaf ? "FLog" : "GA",
           t0, st.depth_max, st.n_leaves);
    CHECK_EQ_INT(found, n);
    CHECK_MSG(st.depth_max <= 6, "depth %zu with outliers", st.depth_max);
    CHECK_OK(mlsys_index_check(ix));
    mlsys_index_free(ix);
    free(k);
  }
}

/* §7.2 test 3: mlsys_index_memory equals the bytes the instrumented allocator sees */
TEST(memory_accounting) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 16, 8, 2, 4096, 0);
    mlsys_index *ix;
    mlsys_index_stats st;
    mlsys_rng g;
    size_t base = g_live, i;
    uint64_t k[5000];
    mlsys_rng_seed(&g, 9);
    for (i = 0; i < 5000; i++) k[i] = mlsys_rng_u64(&g) >> 20;
    REQUIRE_OK(mlsys_index_create(&c, k, NULL, 5000, &ix));
    CHECK_EQ_INT(g_live - base, mlsys_index_memory(ix));
    for (i = 0; i < 20000; i++) {
      uint64_t key = mlsys_rng_u64(&g) >> 20;
      if (i % 3 == 2) mlsys_index_erase(ix, k[i % 5000]);
      else mlsys_index_insert(ix, key, key);
      if (i % 997 == 0) CHECK_EQ_INT(g_live - base, mlsys_index_memory(ix));
    }
    CHECK_EQ_INT(g_live - base, mlsys_index_memory(ix));
    mlsys_index_get_stats(ix, &st);
    CHECK_EQ_INT(mlsys_index_memory(ix),
                 sizeof(mlsys_index) + st.bytes_model_nodes + st.bytes_leaves + st.bytes_flog_metadata);
    CHECK_EQ_INT(st.bytes_flog_metadata, 21 * st.n_fragments);
    if (leaf) CHECK(st.n_fragments > 0);
    mlsys_index_free(ix);
    CHECK_EQ_INT(g_live, base);
  }
}

/* an allocation failure inside an SMO returns -1 and leaves the index valid and unchanged */
TEST(out_of_memory_during_smo) {
  int leaf;
  for (leaf = 0; leaf < 2; leaf++) {
    mlsys_index_config c = mkcfg(leaf, 0, 0, 0, 4, 2, 1, 4096, 0);
    mlsys_index *ix;
    size_t i, fails = 0, base = g_live;
    REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
    for (i = 0; i < 3000; i++) {
      uint64_t key = i * 2654435761u % 100003, before = mlsys_index_size(ix);
      int had = mlsys_index_find(ix, key, NULL), r;
      g_fail_after = (long)(i % 4);
      r = mlsys_index_insert(ix, key, key);
      g_fail_after = -1;
      if (r < 0) {
        fails++;
        CHECK_EQ_INT(mlsys_index_size(ix), before);
        CHECK_EQ_INT(mlsys_index_find(ix, key, NULL), had);
        CHECK_EQ_INT(g_live - base, mlsys_index_memory(ix));
        if (fails < 50) CHECK_OK(mlsys_index_check(ix));
      }
    }
    CHECK(fails > 0);
    CHECK_OK(mlsys_index_check(ix));
    CHECK_EQ_INT(g_live - base, mlsys_index_memory(ix));
    mlsys_index_free(ix);
    CHECK_EQ_INT(g_live, base);
  }
}

TEST(smo_counters_move) {
  mlsys_index_stats a, b, d;
  mlsys_index *ix;
  mlsys_index_config c = mkcfg(0, 0, 0, 0, 0, 0, 0, 4096, 0);
  mlsys_rng g;
  size_t i;
  mlsys_rng_seed(&g, 3);
  REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
  for (i = 0; i < 20000; i++) mlsys_index_insert(ix, mlsys_rng_u64(&g), 1);
  mlsys_index_get_stats(ix, &a);
  CHECK(a.smo_expand > 0);
  CHECK(a.smo_split_sideways + a.smo_split_down > 0);
  CHECK(a.n_leaves > 20000 / 250);
  CHECK(a.avg_search_iters >= 0 && a.avg_shifts > 0);
  mlsys_index_free(ix);
  /* a tiny Msi/Msh splits where ALEX's rule expands */
  c = mkcfg(0, 0, 0.001, 0.001, 0, 0, 0, 0, 0);
  REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
  mlsys_rng_seed(&g, 3);
  for (i = 0; i < 20000; i++) mlsys_index_insert(ix, mlsys_rng_u64(&g), 1);
  mlsys_index_get_stats(ix, &b);
  mlsys_index_free(ix);
  c = mkcfg(0, 0, 0, 0, 0, 0, 0, 0, 0);
  REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
  mlsys_rng_seed(&g, 3);
  for (i = 0; i < 20000; i++) mlsys_index_insert(ix, mlsys_rng_u64(&g), 1);
  mlsys_index_get_stats(ix, &d);
  mlsys_index_free(ix);
  printf("    Msi=Msh=0.001: %llu splits %llu expands; ALEX rule: %llu splits %llu expands\n",
         (unsigned long long)(b.smo_split_sideways + b.smo_split_down), (unsigned long long)b.smo_expand,
         (unsigned long long)(d.smo_split_sideways + d.smo_split_down), (unsigned long long)d.smo_expand);
  CHECK(b.smo_split_sideways + b.smo_split_down > d.smo_split_sideways + d.smo_split_down);
  /* FLog: fragment expansion, multiplication and leaf splits */
  c = mkcfg(1, 0, 0, 0, 8, 8, 2, 0, 0);
  REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
  for (i = 0; i < 20000; i++) mlsys_index_insert(ix, mlsys_rng_u64(&g), 1);
  mlsys_index_get_stats(ix, &a);
  CHECK(a.smo_frag_expand > 0);
  CHECK(a.smo_frag_multiply > 0);
  CHECK(a.smo_split_sideways + a.smo_split_down > 0);
  CHECK(a.n_fragments >= 20000 / 8);
  CHECK_OK(mlsys_index_check(ix));
  mlsys_index_free(ix);
}

/* The FLog fragment probe (fingerprint bytes, then the key) against a plain scan for the first equal key, on both
   the AVX2 and the scalar path: lengths 0..599 cover the 32-byte loop, the overlapping last load and short tails;
   keys are drawn from a few values plus ones whose fingerprint collides with the probe's, so the key comparison
   behind a matching byte must reject them. */
TEST(fingerprint_scan_matches_linear_scan) {
  mlsys_rng g;
  static uint64_t buf[600], coll[64];
  uint8_t fp[600];
  int t, checked = 0, collided = 0, avx2 = mlsys__index_cpu_avx2();
  size_t nc = 0;
  uint64_t x;
  mlsys_rng_seed(&g, 11);
  for (x = 1000; nc < 64; x++) /* keys that share key 7's fingerprint but are not 7 */
    if (mlsys__index_fp(x) == mlsys__index_fp(7)) coll[nc++] = x;
  for (t = 0; t < 20000; t++) {
    uint32_t n = (uint32_t)mlsys_rng_below(&g, t < 10000 ? 80 : 600), i;
    uint64_t key;
    ptrdiff_t want = -1, got;
    for (i = 0; i < n; i++) {
      uint64_t r = mlsys_rng_below(&g, 4);
      buf[i] = r == 0 ? coll[mlsys_rng_below(&g, 64)] : mlsys_rng_below(&g, 40) + (r == 1 ? UINT64_MAX - 50 : 0);
      fp[i] = mlsys__index_fp(buf[i]);
    }
    key = mlsys_rng_below(&g, 3) == 0 ? (mlsys_rng_below(&g, 2) ? 7 : (uint64_t)mlsys_rng_u64(&g))
                                      : buf[n ? mlsys_rng_below(&g, n) : 0];
    for (i = 0; i < n && want < 0; i++)
      if (buf[i] == key) want = (ptrdiff_t)i;
    for (i = 0; i < n; i++) collided += buf[i] != key && fp[i] == mlsys__index_fp(key);
    got = mlsys__index_fpscan_scalar(buf, fp, n, key);
    if (got != want) {
      CHECK_MSG(0, "scalar: n=%u key=%llu: got %td, want %td", n, (unsigned long long)key, got, want);
      break;
    }
#ifdef MLSYS__INDEX_X86
    if (avx2 && (got = mlsys__index_fpscan_avx2(buf, fp, n, key)) != want) {
      CHECK_MSG(0, "avx2: n=%u key=%llu: got %td, want %td", n, (unsigned long long)key, got, want);
      break;
    }
#endif
    checked++;
  }
  (void)avx2;
  CHECK(checked == 20000);
  CHECK(collided > 1000); /* the rejection path ran */
}

/* Every FLog operation keeps each key's fingerprint beside it (mlsys_index_check verifies them): inserts through
   fragment expansion, multiplication and splits, erases (swap with the last key) and a re-insert of erased keys,
   compared with a brute-force set at every step. */
TEST(flog_fingerprints_survive_every_operation) {
  mlsys_index_config c = mkcfg(1, 0, 0, 0, 64, 8, 2, 0, 0);
  mlsys_index *ix = NULL;
  mlsys_rng g;
  static uint64_t keys[30000];
  static unsigned char in[30000];
  size_t i, n = 30000, live = 0;
  mlsys_index_stats st;
  mlsys_rng_seed(&g, 5);
  for (i = 0; i < n; i++) keys[i] = mlsys_rng_u64(&g) >> 8;
  REQUIRE_OK(mlsys_index_create(&c, NULL, NULL, 0, &ix));
  for (i = 0; i < 120000; i++) {
    size_t j = (size_t)mlsys_rng_below(&g, n);
    uint64_t v = 0;
    int op = (int)mlsys_rng_below(&g, 3), r;
    if (op == 0) {
      r = mlsys_index_insert(ix, keys[j], j);
      if (r != (in[j] ? 0 : 1)) { CHECK_MSG(0, "insert %zu returned %d (present %d)", j, r, in[j]); break; }
      live += !in[j];
      in[j] = 1;
    } else if (op == 1) {
      r = mlsys_index_erase(ix, keys[j]);
      if (r != in[j]) { CHECK_MSG(0, "erase %zu returned %d (present %d)", j, r, in[j]); break; }
      live -= in[j];
      in[j] = 0;
    } else {
      r = mlsys_index_find(ix, keys[j], &v);
      if (r != in[j] || (r && v != j)) { CHECK_MSG(0, "find %zu returned %d v=%llu", j, r, (unsigned long long)v); break; }
    }
    if (i % 20000 == 19999) CHECK_OK(mlsys_index_check(ix));
  }
  CHECK_EQ_INT(mlsys_index_size(ix), live);
  CHECK_OK(mlsys_index_check(ix));
  mlsys_index_get_stats(ix, &st);
  CHECK(st.smo_frag_expand > 0 && st.smo_frag_multiply > 0 && st.smo_split_sideways + st.smo_split_down > 0);
  mlsys_index_free(ix);
}

TEST(config_check_names_field) {
  mlsys_index_config c;
  mlsys_index *ix = NULL;
  uint64_t k = 1;
#define BAD(field, val, name)                                           \
  do {                                                                  \
    memset(&c, 0, sizeof c);                                            \
    c.field = val;                                                      \
    CHECK_EQ_INT(mlsys_index_config_check(&c), MLSYS_ERR_ARG);          \
    CHECK_CONTAINS(mlsys_last_error(), name);                           \
    CHECK_EQ_INT(mlsys_index_create(&c, &k, NULL, 1, &ix), MLSYS_ERR_ARG); \
    CHECK(ix == NULL);                                                  \
  } while (0)
  BAD(expected_insert_frac, 1.5, "expected_insert_frac");
  BAD(expected_insert_frac, -0.1, "expected_insert_frac");
  BAD(expected_insert_frac, NAN, "expected_insert_frac");
  BAD(msi, -1, "msi");
  BAD(msi, INFINITY, "msi");
  BAD(msh, NAN, "msh");
  BAD(mf_size, 65537, "mf_size");
  BAD(mnf, 70000, "mnf");
  BAD(max_leaf_bytes, 4095, "max_leaf_bytes");
  BAD(leaf, (mlsys_index_leaf)7, "leaf");
  memset(&c, 0, sizeof c);
  c.mnf = 2;
  c.nf = 3;
  CHECK_EQ_INT(mlsys_index_config_check(&c), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "nf = 3");
#undef BAD
  memset(&c, 0, sizeof c);
  CHECK_OK(mlsys_index_config_check(&c));
  CHECK_OK(mlsys_index_config_check(NULL));
  c = mlsys_index_config_resolved(NULL);
  CHECK_EQ_INT(c.mf_size, 64);
  CHECK_EQ_INT(c.mnf, 64);
  CHECK_EQ_INT(c.nf, 4);
  CHECK_EQ_INT(c.max_leaf_bytes, 1u << 24);
  memset(&c, 0, sizeof c);
  c.mnf = 2;
  CHECK_EQ_INT(mlsys_index_config_resolved(&c).nf, 2);
  c.mf_size = 1;
  c.nf = 1;
  c.mnf = 1;
  c.max_leaf_bytes = 4096;
  CHECK_OK(mlsys_index_config_check(&c));
  CHECK_EQ_INT(mlsys_index_create(NULL, NULL, NULL, 3, &ix), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "keys");
}

/* check() must be able to fail: corrupt a copy of the invariants and restore them */
TEST(check_detects_corruption) {
  mlsys_index *ix;
  mlsys__index_leaf *L;
  uint64_t k[3000], save;
  size_t i;
  for (i = 0; i < 3000; i++) k[i] = i * 10;
  REQUIRE_OK(mlsys_index_create(NULL, k, NULL, 3000, &ix));
  L = mlsys__index_descend(ix, 0);
  REQUIRE(L->h.type == MLSYS__IX_GA && L->u.ga.cap > 2);
  i = mlsys__index_next_clear(L->u.ga.bitmap, 0, L->u.ga.cap);
  REQUIRE(i < L->u.ga.cap);
  save = L->u.ga.keys[i];
  L->u.ga.keys[i] = save + 1;
  CHECK_EQ_INT(mlsys_index_check(ix), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "gap slot");
  L->u.ga.keys[i] = save;
  CHECK_OK(mlsys_index_check(ix));
  ix->n++;
  CHECK_EQ_INT(mlsys_index_check(ix), MLSYS_ERR_ARG);
  ix->n--;
  mlsys_index_free(ix);
}

TEST_MAIN()
