/* libFuzzer target for mlsys_relm.h's llm.c checkpoint loader (mlsys_relm_gpt2_load_mem): malformed headers and
   blobs must give MLSYS_ERR_PARSE / UNSUPPORTED / TOO_BIG with a message, never a crash, and never an allocation
   beyond the desc's parameter limit (2^16 floats here); a checkpoint that loads must run a forward pass and an LM call.
   Byte 0 picks the mode: even → the remaining bytes are the whole file; odd → they give header fields h[0..7]
   (bit 1 forces the magic, bit 2 version 3), then a parameter blob of the size that header implies (when it is
   small), off by a signed byte when bit 3 is set, filled from the remaining input.
   Build and run: make build/fuzz/fuzz_relm_gpt2_ckpt && ./build/fuzz/fuzz_relm_gpt2_ckpt tests/fuzz/corpus/fuzz_relm_gpt2_ckpt */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                                 \
  do {                                                                                                                \
    if (!(x)) {                                                                                                       \
      fprintf(stderr, "fuzz_relm_gpt2_ckpt: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, mlsys_last_error()); \
      abort();                                                                                                        \
    }                                                                                                                 \
  } while (0)

#define MAXP (1 << 16)

static void exercise(mlsys_relm_gpt2 *m, const int32_t *h) {
  mlsys_relm_gpt2_config c = mlsys_relm_gpt2_get_config(m);
  int32_t toks[3] = {0, 0, 0};
  int n = c.max_seq_len < 3 ? c.max_seq_len : 3, i, len = 1;
  float *lg;
  mlsys_relm_lm lm;
  FUZZ_CHECK(c.max_seq_len == h[2] && c.vocab_size == h[3] && c.n_layer == h[4] && c.n_head == h[5] && c.n_embd == h[6] &&
             c.padded_vocab_size == h[7]);
  for (i = 0; i < n; i++) toks[i] = (int32_t)(i % c.vocab_size);
  lg = (float *)malloc((size_t)n * (size_t)c.vocab_size * sizeof(float));
  FUZZ_CHECK(lg);
  FUZZ_CHECK(mlsys_relm_gpt2_forward(m, toks, n, lg) == MLSYS_OK);   /* NaN weights may give NaN: no crash is the point */
  FUZZ_CHECK(mlsys_relm_gpt2_lm(m, NULL, &lm) == MLSYS_OK);
  if (c.max_seq_len >= 2) {
    const int32_t *s = toks;
    FUZZ_CHECK(lm.next_logprobs(lm.ctx, 1, &s, &len, lg) == 0);
  }
  mlsys_relm_gpt2_lm_free(&lm);
  free(lg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_relm_gpt2_desc d = {1, MAXP};
  mlsys_relm_gpt2 *m = NULL;
  mlsys_status s;
  uint8_t *buf;
  size_t len;
  int32_t h[256];
  if (size < 1) return 0;
  memset(h, 0, sizeof h);
  if (!(data[0] & 1)) {
    len = size - 1;
    buf = (uint8_t *)malloc(len ? len : 1);
    memcpy(buf, data + 1, len);
    if (len >= 1024) memcpy(h, buf, sizeof h);
  } else {
    size_t hb = size - 1 < 32 ? size - 1 : 32, np = 0, i;
    long long C, L, blob;
    memcpy(h, data + 1, hb);
    if (data[0] & 2) h[0] = 20240326;
    if (data[0] & 4) h[1] = 3;
    C = h[6]; L = h[4];
    if (h[2] > 0 && h[3] > 0 && h[4] > 0 && h[5] > 0 && h[6] > 0 && h[7] > 0 && h[2] < MAXP && h[4] < MAXP && h[6] < 256 && h[7] < MAXP)
      np = (size_t)(((long long)h[7] + h[2] + 2) * C + L * (12 * C * C + 13 * C));
    blob = (long long)np * 4;
    if ((data[0] & 8) && size > 33) blob += (int8_t)data[33];
    if (blob < 0) blob = 0;
    if (blob > 4 * MAXP + 64) blob = 4 * MAXP + 64;
    len = 1024 + (size_t)blob;
    buf = (uint8_t *)malloc(len);
    memcpy(buf, h, sizeof h);
    for (i = 0; i < (size_t)blob; i++) buf[1024 + i] = size > 34 ? data[34 + i % (size - 34)] : 0;
  }
  s = mlsys_relm_gpt2_load_mem(buf, len, &d, &m);
  if (s == MLSYS_OK) {
    FUZZ_CHECK(m != NULL);
    exercise(m, h);
    mlsys_relm_gpt2_free(m);
  } else {
    FUZZ_CHECK(m == NULL);
    FUZZ_CHECK(s == MLSYS_ERR_PARSE || s == MLSYS_ERR_UNSUPPORTED || s == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(mlsys_last_error()[0] != 0);
  }
  free(buf);
  return 0;
}
