/* examples/contracode_basics.c — a first program with mlsys_contracode.h (ContraCode: contrastive code representations).

   ContraCode learns a code encoder from programs rewritten by semantics-preserving transforms: two rewrites of one
   function are a positive pair, other functions are negatives (MoCo). This program shows the pieces on two small
   functions: the variants Alg. 1 makes of the first (SAFE preset: every variant behaves like the original), their
   SentencePiece ids under the shipped 8k vocabulary, and how two scorers of clone detection see them: the paper's
   edit-distance baseline and the cosine of an encoder's pooled representation (here an untrained tiny Transformer:
   `mlsys contracode train` makes a trained one, `mlsys contracode eval --scorer model:CKPT` evaluates it).
   Build: make build/examples/contracode_basics; run from the repository root: build/examples/contracode_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mlsys calls return a status; the message in mlsys_last_error() names what went wrong */
#define TRY(call)                                                                  \
  do {                                                                             \
    if ((call) != MLSYS_OK) {                                                      \
      fprintf(stderr, "contracode_basics: %s: %s\n", #call, mlsys_last_error());  \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

static const char *const fn_a =
    "function sumPositive(values) {\n"
    "  var total = 0;\n"
    "  for (var i = 0; i < values.length; i++) {\n"
    "    if (values[i] > 0) { total += values[i]; }\n"
    "  }\n"
    "  return total;\n"
    "}\n";
static const char *const fn_b =
    "function capitalize(word) {\n"
    "  if (!word) return '';\n"
    "  return word.charAt(0).toUpperCase() + word.slice(1);\n"
    "}\n";

/* normalize_program (newlines become [EOL]), then the Viterbi segmentation */
static int ids_of(const mlsys_contracode_sp *sp, const char *src, int32_t **ids, size_t *n) {
  char *norm;
  size_t nn;
  if (mlsys_contracode_normalize_program(src, strlen(src), &norm, &nn) != MLSYS_OK) return 0;
  if (mlsys_contracode_sp_encode(sp, norm, nn, ids, n, NULL) != MLSYS_OK) { free(norm); return 0; }
  free(norm);
  return 1;
}

static double cosine(const float *x, const float *y, int d) {
  double xy = 0, xx = 0, yy = 0;
  int i;
  for (i = 0; i < d; i++) xy += (double)x[i] * y[i], xx += (double)x[i] * x[i], yy += (double)y[i] * y[i];
  return xy / sqrt(xx * yy);
}

int main(void) {
  mlsys_contracode_aug_cfg cfg;
  mlsys_contracode_strset vars;
  mlsys_contracode_sp *sp;
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_enc enc;
  int32_t *ia, *ib, *iv, row[256];
  size_t na, nb, nv;
  float ea[128], eb[128], ev[128];
  int i, d, len;

  /* 1. Alg. 1: up to 4 distinct variants of fn_a; the first entry is the original */
  TRY(mlsys_contracode_aug_preset(MLSYS_CONTRACODE_AUG_SAFE, &cfg));
  TRY(mlsys_contracode_augment_variants(fn_a, strlen(fn_a), &cfg, 4, 1, &vars));
  printf("%d distinct programs (the original first):\n", vars.n);
  for (i = 0; i < vars.n; i++) printf("--- %d\n%s\n", i, vars.s[i]);

  /* 2. the 8k vocabulary trained on Debian's JavaScript (tools/contracode_js8k.model) and an untrained encoder */
  TRY(mlsys_contracode_sp_load("tools/contracode_js8k.model", &sp));
  TRY(mlsys_contracode_enc_preset("tiny-transformer", mlsys_contracode_sp_size(sp), &ec));
  ec.max_len = 256;
  TRY(mlsys_contracode_enc_init(&enc, &ec, 1, NULL));
  d = mlsys_contracode_enc_pooled_dim(&ec);

  /* 3. fn_a against its last variant and against fn_b, as the two scorers see them */
  if (!ids_of(sp, fn_a, &ia, &na) || !ids_of(sp, fn_b, &ib, &nb) || !ids_of(sp, vars.s[vars.n - 1], &iv, &nv)) {
    fprintf(stderr, "contracode_basics: %s\n", mlsys_last_error());
    return 1;
  }
  printf("tokens: fn_a %zu, its variant %zu, fn_b %zu\n", na, nv, nb);
#define EMBED(ids, n, out)                                                         \
  len = (int)((n) < 256 ? (n) : 256);                                              \
  memcpy(row, ids, (size_t)len * sizeof(int32_t));                                 \
  TRY(mlsys_contracode_enc_forward(&enc, row, &len, 1, len, 0, 0, NULL, out))
  EMBED(ia, na, ea);
  EMBED(iv, nv, ev);
  EMBED(ib, nb, eb);
  printf("edit similarity: variant %.3f, other function %.3f\n", mlsys_contracode_lev_similarity(ia, (int)na, iv, (int)nv),
         mlsys_contracode_lev_similarity(ia, (int)na, ib, (int)nb));
  printf("untrained encoder cosine (%d dims): variant %.3f, other function %.3f\n", d, cosine(ea, ev, d), cosine(ea, eb, d));

  free(ia), free(ib), free(iv);
  mlsys_contracode_enc_free(&enc);
  mlsys_contracode_sp_free(sp);
  mlsys_contracode_strset_free(&vars);
  return 0;
}
