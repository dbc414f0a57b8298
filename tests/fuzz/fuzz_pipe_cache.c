/* libFuzzer target for the file-cache and TFRecord-file readers of mlsys_pipeline.h: the input is read as a stream of
   TFRecords (the reader behind mlsys_pipe_records and file caches, with and without CRCs), and every record, and the
   whole input, is decoded as a cached element. A failure must be MLSYS_ERR_PARSE with a message; an element that
   decodes must encode back to the same bytes.
   Build and run: make build/fuzz/fuzz_pipe_cache && ./build/fuzz/fuzz_pipe_cache -max_total_time=60 CORPUS_DIR */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                 \
  do {                                                                                                \
    if (!(x)) {                                                                                       \
      fprintf(stderr, "fuzz_pipe_cache: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                    \
      abort();                                                                                        \
    }                                                                                                 \
  } while (0)

static void element(const uint8_t *b, size_t n) {
  mlsys_pipe_elem e;
  mlsys_status st = mlsys_pipe_elem_decode(b, n, &e);
  if (st) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE && *mlsys_last_error());
    return;
  }
  {
    uint8_t *again;
    size_t m;
    FUZZ_CHECK(mlsys_pipe_elem_encode(&e, &again, &m) == MLSYS_OK);
    FUZZ_CHECK(m == n && memcmp(again, b, n) == 0);
    mlsys_free(again);
  }
  mlsys_pipe_elem_release(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  int skip;
  element(buf, len);
  for (skip = 0; skip < 2; skip++) {
    FILE *f = fmemopen((void *)buf, len ? len : 1, "rb");
    uint64_t off = 0;
    FUZZ_CHECK(f);
    if (len == 0) { fclose(f); break; }
    for (;;) {
      uint8_t *d;
      uint64_t n, before = off;
      int eof;
      mlsys_status st = mlsys__pipe_rec_read(f, "fuzz", NULL, &off, skip, &d, &n, &eof);
      if (st) { FUZZ_CHECK((st == MLSYS_ERR_PARSE || st == MLSYS_ERR_NOMEM) && *mlsys_last_error()); break; }
      if (eof) break;
      FUZZ_CHECK(off == before + 16 + n && off <= len);
      element(d, (size_t)n);
      mlsys_free(d);
    }
    fclose(f);
  }
  return 0;
}
