/* libFuzzer target for the PCR dataset index reader (spec pcr.md §2.5): any bytes parsed as index.pcri. A parse that
   succeeds gives record sizes that are non-decreasing in k and a total that matches; failures are named errors. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pcr.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                              \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      fprintf(stderr, "fuzz_pcr_index: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)

static void fuzz_index(const uint8_t *buf, size_t len) {
  mlsys_pcr_index *ix = (mlsys_pcr_index *)mlsys_calloc(1, sizeof *ix);
  mlsys_status st;
  ix->dir = mlsys_strdup("/data");
  st = mlsys__pcr_index_parse(buf, len, "fuzz.pcri", ix);   /* the parser index_open runs on a file's bytes */
  if (st) {
    FUZZ_CHECK(*mlsys_last_error());
  } else {
    int j, k;
    uint64_t tot = 0;
    double mean[MLSYS_PCR_MAX_GROUPS + 1];
    for (j = 0; j < ix->n; j++) {
      const uint64_t *R;
      const char *p;
      uint32_t ni;
      int K;
      FUZZ_CHECK(mlsys_pcr_index_record(ix, j, &p, &ni, &K, &R) == MLSYS_OK && p && *p);
      for (k = 1; k <= ix->Kmax; k++) FUZZ_CHECK(R[k] >= R[k - 1]);
      tot += ni;
    }
    FUZZ_CHECK(tot == mlsys_pcr_index_images(ix));
    FUZZ_CHECK(mlsys_pcr_index_mean_bytes(ix, mean) == MLSYS_OK);
  }
  mlsys_pcr_index_close(ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  fuzz_index(buf, len);
  /* and resealed: the trailing CRC recomputed, so mutations reach the structure checks behind it */
  if (len >= 40) {
    uint8_t *c = (uint8_t *)malloc(len);
    uint32_t crc;
    memcpy(c, buf, len);
    crc = mlsys_crc32c(0, c, len - 4);
    c[len - 4] = (uint8_t)crc; c[len - 3] = (uint8_t)(crc >> 8); c[len - 2] = (uint8_t)(crc >> 16); c[len - 1] = (uint8_t)(crc >> 24);
    fuzz_index(c, len);
    free(c);
  }
  return 0;
}
