/* libFuzzer target for mlsys_contracode.h's SentencePiece .model reader (a protobuf ModelProto with pieces, trainer
   and normalizer specs, and a darts-clone precompiled charsmap) and the segmentation that runs on what it loads.

   For every input: a failure is MLSYS_ERR_PARSE, MLSYS_ERR_UNSUPPORTED or MLSYS_ERR_TOO_BIG with a message starting
   "contracode: "; a success encodes and samples fixed texts (spaces, user-symbol-like text, multibyte and malformed
   UTF-8) into ids that are all in range. An input that is not a model is also used as training text for a
   40-piece vocabulary (mlsys_contracode_sp_train), whose ids must be in range too.

   Build and run: make build/fuzz/fuzz_contracode_sp && ./build/fuzz/fuzz_contracode_sp -max_total_time=60 tests/fuzz/corpus/fuzz_contracode_sp */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                                      \
  do {                                                                                                     \
    if (!(x)) {                                                                                            \
      fprintf(stderr, "fuzz_contracode_sp: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                         \
      abort();                                                                                             \
    }                                                                                                      \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static const char *const texts[] = {"", "  a  b ", "function f(a) { [EOL] return a; [EOL]}", "\xe4\xb8\xad\xff\xe2\x96\x81x",
                                      "\xef\xac\x81\tA\xef\xbc\xa1 <0x41>"};
  mlsys_contracode_sp *m = NULL;
  mlsys_status st = mlsys_contracode_sp_load_mem(data, size, &m);
  size_t k, i;
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_UNSUPPORTED || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "contracode: ", 12) == 0);
    FUZZ_CHECK(m == NULL);
    /* not a model: train a tiny vocabulary on the bytes as text instead (malformed UTF-8, odd whitespace) */
    if (size <= 2048) {
      static const char *const user[] = {"[EOL]"};
      mlsys_contracode_sp_train_opts o;
      mlsys_contracode_sp_train_defaults(&o);
      o.vocab_size = 40;
      o.user = user;
      o.nuser = 1;
      st = mlsys_contracode_sp_train((const char *)data, size, &o, &m);
      FUZZ_CHECK(st == MLSYS_OK || st == MLSYS_ERR_ARG);
      if (st == MLSYS_OK) {
        int32_t *ids = NULL;
        size_t n = 0;
        FUZZ_CHECK(mlsys_contracode_sp_encode(m, (const char *)data, size > 200 ? 200 : size, &ids, &n, NULL) == MLSYS_OK);
        for (i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < mlsys_contracode_sp_size(m));
        free(ids);
        mlsys_contracode_sp_free(m);
      }
    }
    return 0;
  }
  FUZZ_CHECK(m && mlsys_contracode_sp_size(m) > 0);
  for (k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    int32_t *ids = NULL;
    size_t n = 0;
    double sc = 0;
    mlsys_rng r;
    FUZZ_CHECK(mlsys_contracode_sp_encode(m, texts[k], strlen(texts[k]), &ids, &n, &sc) == MLSYS_OK);
    for (i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < mlsys_contracode_sp_size(m));
    free(ids);
    mlsys_rng_seed(&r, k);
    FUZZ_CHECK(mlsys_contracode_sp_sample(m, texts[k], strlen(texts[k]), 0.5, &r, &ids, &n) == MLSYS_OK);
    for (i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < mlsys_contracode_sp_size(m));
    free(ids);
  }
  mlsys_contracode_sp_free(m);
  return 0;
}
