/* libFuzzer target for the JPEG layer of mlsys_pcr.h: the marker walk (mlsys_pcr_jpeg_split) on arbitrary bytes, and
   the lossless transcode on inputs that split. A split that succeeds must describe contiguous parts inside the input
   that reassemble it; failures must be named errors. Build and run: make build/fuzz/fuzz_pcr_split &&
   ./build/fuzz/fuzz_pcr_split -max_total_time=60 CORPUS_DIR */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pcr.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                 \
  do {                                                                                                \
    if (!(x)) {                                                                                       \
      fprintf(stderr, "fuzz_pcr_split: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                    \
      abort();                                                                                        \
    }                                                                                                 \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  mlsys_pcr_jpeg_layout L;
  mlsys_status st = mlsys_pcr_jpeg_split(buf, len, &L);
  if (st) {
    FUZZ_CHECK((st == MLSYS_ERR_PARSE || st == MLSYS_ERR_TOO_BIG) && *mlsys_last_error());
    return 0;
  }
  {
    int j;
    FUZZ_CHECK(L.nscans >= 1 && L.nscans <= MLSYS_PCR_MAX_SCANS);
    FUZZ_CHECK(L.scan[0].begin == L.header_len && L.header_len >= 2);
    for (j = 0; j < L.nscans; j++) {
      FUZZ_CHECK(L.scan[j].begin < L.scan[j].end && L.scan[j].end <= len);
      if (j) FUZZ_CHECK(L.scan[j].begin == L.scan[j - 1].end);
    }
    FUZZ_CHECK(L.scan[L.nscans - 1].end == L.eoi_pos && L.eoi_pos + 2 <= len);
    FUZZ_CHECK(buf[L.eoi_pos] == 0xFF && buf[L.eoi_pos + 1] == 0xD9);
  }
  /* the transcode is only tried on small frames, so the fuzzer spends its time on parsing, not on huge images */
  if ((int64_t)L.width * L.height <= 1 << 20) {
    uint8_t *out;
    size_t olen;
    st = mlsys_pcr_jpeg_to_progressive(buf, len, NULL, &out, &olen);
    if (!st) {
      mlsys_pcr_jpeg_layout P;
      FUZZ_CHECK(mlsys_pcr_jpeg_split(out, olen, &P) == MLSYS_OK && P.progressive);
      mlsys_free(out);
    } else FUZZ_CHECK(*mlsys_last_error());
  }
  return 0;
}
