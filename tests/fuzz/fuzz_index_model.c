/* libFuzzer target for mlsys_index.h's throughput-model loader (mlsys_index_model_parse, mlsys_index.h section 5): malformed
   files must give MLSYS_ERR_PARSE / UNSUPPORTED with a message naming the problem, never a crash; a file that loads
   must run the CNN and the head (on a 16x16 image, to keep each run fast) and give predictions inside the bin range or
   NaN (huge weights may overflow: no crash is the point).
   Byte 0 picks the mode: even → the remaining bytes are the whole file (a valid model is ~357 KB, so this mode tests
   the header checks); odd → a valid header (bit 2 clear) or the first 32 input bytes over it (bit 2 set), then the
   weights filled from the remaining input, the length off by a signed byte when bit 3 is set, and the CRC fixed when
   bit 1 is set (so the weight checks and the forward pass are reached).
   Build and run: make build/fuzz/fuzz_index_model && ./build/fuzz/fuzz_index_model tests/fuzz/corpus/fuzz_index_model */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                                 \
  do {                                                                                                                \
    if (!(x)) {                                                                                                       \
      fprintf(stderr, "fuzz_index_model: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                        \
    }                                                                                                                 \
  } while (0)

static void exercise(const mlsys_index_model *m) {
  static float img[2 * 16 * 16];
  mlsys__index_mdl_ws w;
  mlsys_index_config *c;
  size_t n, i;
  for (i = 0; i < 2 * 16 * 16; i++) img[i] = (float)(i % 7) / 7.f;
  FUZZ_CHECK(mlsys_index_grid_default(0.5, &c, &n) == MLSYS_OK);
  c[1] = c[7]; c[2] = c[40]; c[3] = c[n - 1];   /* ALEX, a GA and two FLog entries: enough to reach every table */
  n = 4;
  FUZZ_CHECK(mlsys__index_mdl_ws_init(&w, 16) == MLSYS_OK);
  FUZZ_CHECK(mlsys__index_mdl_ws_reserve(&w, n) == MLSYS_OK);
  mlsys__index_mdl_cnn_fwd(m, &w, img);
  mlsys__index_mdl_head_fwd(m, &w, c, n);
  for (i = 0; i < n; i++) {
    double p = mlsys__index_mdl_expect(w.lg + i * 16);
    FUZZ_CHECK(isnan(p) || (p >= MLSYS_INDEX_BIN_LO * 0.999 && p <= MLSYS_INDEX_BIN_HI * 1.001));
  }
  mlsys__index_mdl_ws_free(&w);
  mlsys_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_index_model *m = NULL;
  mlsys_status s;
  uint8_t *buf;
  size_t len, i;
  if (size < 1) return 0;
  if (!(data[0] & 1)) {
    len = size - 1;
    buf = (uint8_t *)malloc(len ? len : 1);
    memcpy(buf, data + 1, len);
  } else {
    size_t full = MLSYS__INDEX_MDL_HDR + 4 * 89184 + 4;   /* checked below against the real layout */
    long long L = (long long)full;
    int t, d;
    if ((data[0] & 8) && size > 1) L += (int8_t)data[1];
    len = (size_t)L;
    buf = (uint8_t *)calloc(len, 1);
    memcpy(buf, MLSYS__INDEX_MDL_MAGIC, 8);
    mlsys__index_mdl_wr32(buf + 8, MLSYS__INDEX_MDL_VERSION);
    mlsys__index_mdl_wr32(buf + 12, MLSYS__INDEX_MDL_NT);
    for (t = 0; t < MLSYS__INDEX_MDL_NT; t++)
      for (d = 0; d < 4; d++) mlsys__index_mdl_wr32(buf + 16 + t * 16 + d * 4, mlsys__index_mdl_tensors[t].dim[d]);
    if (data[0] & 4) memcpy(buf, data + 1, size - 1 < 32 ? size - 1 : 32);
    /* weights: the input bytes from offset 2 repeated, so a short input still fills them */
    if (size > 2)
      for (i = MLSYS__INDEX_MDL_HDR; i + 4 <= len; i++) buf[i] = data[2 + (i - MLSYS__INDEX_MDL_HDR) % (size - 2)];
    if ((data[0] & 2) && len >= 4) mlsys__index_mdl_wr32(buf + len - 4, mlsys_crc32c(0, buf, len - 4));
  }
  s = mlsys_index_model_parse(buf, len, "fuzz.bin", &m);
  if (s == MLSYS_OK) {
    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(m->np == 89184 && len == MLSYS__INDEX_MDL_HDR + 4 * m->np + 4);
    exercise(m);
    mlsys_index_model_free(m);
  } else {
    FUZZ_CHECK(m == NULL);
    FUZZ_CHECK(s == MLSYS_ERR_PARSE || s == MLSYS_ERR_UNSUPPORTED);
    FUZZ_CHECK(mlsys_last_error()[0] != 0);
  }
  free(buf);
  return 0;
}
