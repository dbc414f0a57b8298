/* libFuzzer target for the SOSD key-file parser of mlsys_index.h (spec B2): any bytes parsed as 4- and 8-byte keys.
   A parse that succeeds gives exactly (len - 8) / width keys equal to the little-endian words of the input; a failure
   is a named error. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                              \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      fprintf(stderr, "fuzz_index_sosd: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)

static void fuzz_width(const uint8_t *buf, size_t len, int width) {
  uint64_t *keys = NULL;
  size_t n = 7, i;
  mlsys_status st = mlsys_index_sosd_parse(buf, len, width, "fuzz_uint64", &keys, &n);
  if (st) {
    FUZZ_CHECK(*mlsys_last_error() && keys == NULL && n == 0);
    return;
  }
  FUZZ_CHECK(keys != NULL && len >= 8 && n == (len - 8) / (size_t)width && 8 + n * (size_t)width == len);
  for (i = 0; i < n; i++) {
    uint64_t v = 0;
    int b;
    for (b = width - 1; b >= 0; b--) v = v << 8 | buf[8 + i * (size_t)width + (size_t)b];
    FUZZ_CHECK(keys[i] == v);
  }
  /* and the dedup of what was read is sorted and distinct */
  n = mlsys_index_keys_dedup(keys, n);
  for (i = 1; i < n; i++) FUZZ_CHECK(keys[i - 1] < keys[i]);
  mlsys_free(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  fuzz_width(buf, len, 8);
  fuzz_width(buf, len, 4);
  /* with the header rewritten to match the length, so mutations reach the key decoding behind the size check */
  if (len >= 8) {
    uint8_t *c = (uint8_t *)malloc(len);
    int w;
    for (w = 4; w <= 8; w += 4) {
      uint64_t N = (uint64_t)(len - 8) / (uint64_t)w;
      int b;
      memcpy(c, buf, len);
      for (b = 0; b < 8; b++) c[b] = (uint8_t)(N >> (8 * b));
      fuzz_width(c, 8 + (size_t)N * (size_t)w, w);
    }
    free(c);
  }
  return 0;
}
