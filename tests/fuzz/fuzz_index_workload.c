/* libFuzzer target for the workload-file reader of mlsys_index.h (WORKLOAD FILES; issue 21). Any bytes parsed as
   given, and again framed: the header's counts set to fit the length and the CRC fixed, so that mutations reach
   the checks behind the size and CRC (operation codes, insert count, bulk-key order). A parse that succeeds gives
   sorted distinct bulk keys, operation codes 0/1 and counts that add up; a failure is a named error with nothing
   handed out. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                              \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      fprintf(stderr, "fuzz_index_workload: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)

static void put_le(uint8_t *p, uint64_t v, int n) {
  int i;
  for (i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void parse_one(const uint8_t *buf, size_t len) {
  mlsys_index_workload w;
  size_t i, ins = 0;
  if (mlsys_index_workload_parse(buf, len, "fuzz", &w)) {
    FUZZ_CHECK(*mlsys_last_error() && w.bulk == NULL && w.trace.key == NULL && w.trace.op == NULL);
    return;
  }
  FUZZ_CHECK(len == 40 + 8 * w.n_bulk + 9 * w.trace.n + 4);
  for (i = 1; i < w.n_bulk; i++) FUZZ_CHECK(w.bulk[i - 1] < w.bulk[i]);
  for (i = 0; i < w.trace.n; i++) {
    FUZZ_CHECK(w.trace.op[i] <= 1);
    ins += w.trace.op[i];
  }
  FUZZ_CHECK(ins == w.n_inserts && w.n_inserts + w.n_finds == w.trace.n);
  mlsys_index_workload_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  parse_one(buf, len);
  if (len >= 44) {
    /* framed: the counts set to fit the length */
    size_t body = len - 44, nb = 0, no, i, ins = 0;
    uint8_t *c = (uint8_t *)malloc(len);
    if (!c) return 0;
    memcpy(c, buf, len);
    int found = 0;
    /* the most operations that leave a whole number of bulk keys */
    for (no = body / 9;; no--) {
      if ((body - 9 * no) % 8 == 0) { nb = (body - 9 * no) / 8; found = 1; break; }
      if (no == 0) break;
    }
    if (found) {
      if (buf[0] & 1) { /* half the time, the ops made valid and the insert count right, to reach the bulk-order check */
        for (i = 0; i < no; i++) c[40 + 8 * nb + 8 * no + i] &= 1;
      }
      for (i = 0; i < no; i++) ins += c[40 + 8 * nb + 8 * no + i];
      memcpy(c, "MLSYSIWL", 8);
      put_le(c + 8, 1, 4);
      c[12] &= 1;
      c[13] = c[14] = c[15] = 0;
      put_le(c + 16, nb, 8);
      put_le(c + 24, no, 8);
      put_le(c + 32, ins, 8);
      put_le(c + len - 4, mlsys_crc32c(0, c, len - 4), 4);
      parse_one(c, len);
    }
    free(c);
  }
  return 0;
}
