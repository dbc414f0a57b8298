/* libFuzzer target for the augmentation of mlsys_contracode.h (section 4, Alg. 1).

   The first byte picks a seed and the preset; the rest is JavaScript (a script). Parse failures must be
   MLSYS_ERR_PARSE with an empty set. Otherwise augment_variants (8 samples) must succeed, put the input first, hold
   pairwise distinct strings, and every variant made without line subsampling must parse again. Line subsampling
   is also run alone on the raw bytes: its output never has more bytes than the input.

   Build and run: make build/fuzz/fuzz_contracode_augment &&
     ./build/fuzz/fuzz_contracode_augment -max_total_time=120 tests/fuzz/corpus/fuzz_contracode_augment */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                     \
  do {                                                                                                    \
    if (!(x)) {                                                                                           \
      fprintf(stderr, "fuzz_contracode_augment: check failed at line %d: %s (last error: %s)\n", __LINE__, \
              #x, mlsys_last_error());                                                                    \
      abort();                                                                                            \
    }                                                                                                     \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_contracode_aug_cfg c;
  mlsys_contracode_strset v;
  mlsys_status st;
  mlsys_rng r;
  const char *src;
  char *o;
  size_t n, on;
  int i, j, ap;
  if (size < 1 || size > 1 << 14) return 0;
  src = (const char *)data + 1;
  n = size - 1;
  mlsys_rng_seed(&r, data[0]);
  FUZZ_CHECK(mlsys_contracode_sample_lines(src, n, 0.5 + (data[0] & 1) * 0.5, 0.9, &r, &o, &on, &ap) == MLSYS_OK);
  FUZZ_CHECK(on <= n && o[on] == 0);
  free(o);
  mlsys_contracode_aug_preset((data[0] & 2) ? MLSYS_CONTRACODE_AUG_SAFE : MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE, &c);
  st = mlsys_contracode_augment_variants(src, n, &c, 8, data[0], &v);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(v.n == 0);
    return 0;
  }
  FUZZ_CHECK(v.n >= 1 && v.len[0] == n && (n == 0 || !memcmp(v.s[0], src, n)));
  for (i = 0; i < v.n; i++) {
    for (j = i + 1; j < v.n; j++) FUZZ_CHECK(!(v.len[i] == v.len[j] && !memcmp(v.s[i], v.s[j], v.len[i])));
    if (i && !(v.applied[i] & MLSYS_CONTRACODE_AUG_APPLIED_LINES)) {
      mlsys_contracode_js_ast a;
      if (mlsys_contracode_js_parse(v.s[i], v.len[i], 0, &a) != MLSYS_OK) {
        fprintf(stderr, "fuzz_contracode_augment: variant %d does not parse: %s\n--- input ---\n%.*s\n--- output ---\n%s\n",
                i, mlsys_last_error(), (int)n, src, v.s[i]);
        abort();
      }
      mlsys_contracode_js_free(&a);
    }
  }
  mlsys_contracode_strset_free(&v);
  return 0;
}
