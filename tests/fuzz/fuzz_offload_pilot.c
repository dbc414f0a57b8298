/* libFuzzer target for mlsys_offload.h's pilot model loader (mlsys_offload_pilot_load_mem): a malformed file must
   give MLSYS_ERR_PARSE / UNSUPPORTED / TOO_BIG with a message and no model, never a crash or an allocation beyond
   what the file's own length implies; a model that loads must have the file's size and run features, forward and
   decode for every network type. Byte 0 is the mode: bit 0 set → the last 4 bytes of the rest are overwritten with
   its CRC-32C, so mutations reach the checks behind the CRC (config ranges, nparams against the config, catalogue
   version, non-finite weights). The rest is the file.
   Build and run: make build/fuzz/fuzz_offload_pilot && ./build/fuzz/fuzz_offload_pilot tests/fuzz/corpus/fuzz_offload_pilot
   (the seed files are written by `MLSYS_WRITE_CORPUS=1 ./build/test_offload_pilot pilot_fuzz_corpus`). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                                 \
  do {                                                                                                                \
    if (!(x)) {                                                                                                       \
      fprintf(stderr, "fuzz_offload_pilot: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                        \
    }                                                                                                                 \
  } while (0)

static void exercise(mlsys_offload_pilot *m, size_t len) {
  mlsys_offload_pilot_cfg c = mlsys_offload_pilot_config(m);
  int na = mlsys_offload_pilot_afm_dim(m), ny = c.k_max * 10, t, i;
  float *xe, *xa, *y, emb[6] = {1, -2, 0.5f, 3, 0, 1};
  int32_t *pred;
  mlsys_offload_sig rows[2];
  int nc = mlsys_offload_pilot_codebook_size(m);
  /* version 1: 72-byte header; version 2: 84 and the codes (a loaded codebook may shrink: repeats are dropped) */
  FUZZ_CHECK(len == 72 + 4 * mlsys_offload_pilot_nparams(m) + 4 ||
             (len >= 84 + 4 * mlsys_offload_pilot_nparams(m) + 4 * (size_t)nc * (size_t)(c.k_max * 10) + 4));
  FUZZ_CHECK(c.k_max >= 1 && c.e_proj >= 1 && c.d >= 1 && c.h >= 1 && c.d_out >= 1 && c.seed != 0);
  FUZZ_CHECK(na == (c.afm_full ? c.afm_rows_max * 9 : 11));
  xe = (float *)malloc(sizeof(float) * (size_t)(c.e_proj + 2 + c.len_code));
  xa = (float *)malloc(sizeof(float) * (size_t)na);
  y = (float *)malloc(sizeof(float) * (size_t)ny);
  pred = (int32_t *)malloc(sizeof(int32_t) * (size_t)ny);
  FUZZ_CHECK(xe && xa && y && pred);
  memset(rows, 0, sizeof rows);
  rows[0].idiom[0] = 1;
  rows[0].dim[0] = 7;
  mlsys_offload_pilot_features(m, emb, 2, 3, xe);
  mlsys_offload_pilot_afm_features(m, rows, 2, xa);
  for (t = 0; t < 3; t++) {
    mlsys_offload_pilot_forward(m, xe, xa, t, y);
    mlsys_offload_pilot_decode(m, y, pred);   /* weights are finite; outputs may still overflow: no crash is the point */
    for (i = 0; i < ny; i++) FUZZ_CHECK(pred[i] >= 0);
  }
  free(xe);
  free(xa);
  free(y);
  free(pred);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_offload_pilot *m = NULL;
  mlsys_status s;
  uint8_t *buf;
  size_t len;
  if (size < 1) return 0;
  len = size - 1;
  buf = (uint8_t *)malloc(len ? len : 1);
  FUZZ_CHECK(buf);
  memcpy(buf, data + 1, len);
  if ((data[0] & 1) && len >= 4) {
    uint32_t crc = mlsys_crc32c(0, buf, len - 4);
    buf[len - 4] = (uint8_t)crc; buf[len - 3] = (uint8_t)(crc >> 8); buf[len - 2] = (uint8_t)(crc >> 16); buf[len - 1] = (uint8_t)(crc >> 24);
  }
  s = mlsys_offload_pilot_load_mem(buf, len, "fuzz", &m);
  if (s == MLSYS_OK) {
    FUZZ_CHECK(m != NULL);
    exercise(m, len);
    mlsys_offload_pilot_free(m);
  } else {
    FUZZ_CHECK(m == NULL);
    FUZZ_CHECK(s == MLSYS_ERR_PARSE || s == MLSYS_ERR_UNSUPPORTED || s == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "fuzz: ", 6) == 0);
  }
  free(buf);
  return 0;
}
