/* libFuzzer target for mlsys_contracode.h's MoCo checkpoint reader (mlsys_contracode_moco_load): the header (magic,
   version, both configs, step, queue pointer, RNG, parameter count), the file length it implies, the arrays and the
   CRC-32C. For every input: a failure is MLSYS_ERR_PARSE (or NOMEM for a valid header too large to allocate) with a
   message starting "contracode: "; a success saves again to the same bytes.

   Build and run: make build/fuzz/fuzz_contracode_moco && ./build/fuzz/fuzz_contracode_moco -max_total_time=60 tests/fuzz/corpus/fuzz_contracode_moco */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CHECK(x)                                                                                        \
  do {                                                                                                       \
    if (!(x)) {                                                                                              \
      fprintf(stderr, "fuzz_contracode_moco: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                           \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char in[64], out[64], *back = NULL;
  size_t n = 0;
  FILE *f;
  mlsys_contracode_moco *m = NULL;
  mlsys_status st;
  if (size > (1u << 20)) return 0;
  snprintf(in, sizeof in, "/tmp/fuzz_cc_moco_%d.in", (int)getpid());
  snprintf(out, sizeof out, "/tmp/fuzz_cc_moco_%d.out", (int)getpid());
  f = fopen(in, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  st = mlsys_contracode_moco_load(in, NULL, &m);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_NOMEM);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "contracode: ", 12) == 0);
    FUZZ_CHECK(m == NULL);
  } else {
    FUZZ_CHECK(mlsys_contracode_moco_save(m, out) == MLSYS_OK);
    FUZZ_CHECK(mlsys_read_file(out, &back, &n) == MLSYS_OK);
    FUZZ_CHECK(n == size && memcmp(back, data, size) == 0);
    free(back);
    mlsys_contracode_moco_free(m);
    unlink(out);
  }
  unlink(in);
  return 0;
}
