/* libFuzzer target for the TFRecord reader of mlsys_pipeline.h: walks every record of the input, with and without
   CRC checks. A record must lie inside the input and advance the offset; a failure must be MLSYS_ERR_PARSE with a
   message naming the byte offset; re-writing the records read and walking the result must give them back.
   Build and run: make build/fuzz/fuzz_pipe_tfrecord && ./build/fuzz/fuzz_pipe_tfrecord -max_total_time=60 tests/fuzz/corpus/fuzz_pipe_tfrecord */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                 \
  do {                                                                                                \
    if (!(x)) {                                                                                       \
      fprintf(stderr, "fuzz_pipe_tfrecord: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                    \
      abort();                                                                                        \
    }                                                                                                 \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  int skip;
  for (skip = 0; skip < 2; skip++) {
    size_t off = 0, nrec = 0;
    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    FUZZ_CHECK(f);
    for (;;) {
      const uint8_t *d;
      uint64_t n;
      int end;
      size_t before = off;
      mlsys_status st = mlsys_pipe_tfrecord_next(buf, len, &off, &d, &n, skip, &end);
      if (st) {
        FUZZ_CHECK(st == MLSYS_ERR_PARSE && strstr(mlsys_last_error(), "TFRecord at byte"));
        FUZZ_CHECK(off == before);
        break;
      }
      if (end) { FUZZ_CHECK(off >= len); break; }
      FUZZ_CHECK(off > before && off <= len && d >= buf && d + n <= buf + len);
      FUZZ_CHECK(mlsys_pipe_tfrecord_write(f, d, n) == MLSYS_OK);
      nrec++;
    }
    fclose(f);
    {
      /* what was read, written again, reads back as the same number of valid records */
      size_t o2 = 0, k = 0;
      for (;;) {
        const uint8_t *d;
        uint64_t n;
        int end;
        FUZZ_CHECK(mlsys_pipe_tfrecord_next((const uint8_t *)out, olen, &o2, &d, &n, 0, &end) == MLSYS_OK);
        if (end) break;
        k++;
      }
      FUZZ_CHECK(k == nrec);
    }
    free(out);
  }
  return 0;
}
