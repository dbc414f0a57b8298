/* libFuzzer target for the TACCL input readers of mlsys_collective.h (sections 1–3): the communication-sketch
   JSON (with 8 and 16 GPUs per node) and the topology-profile JSON, on the same bytes.

   For every input: a failure must be MLSYS_ERR_PARSE / MLSYS_ERR_ARG (sketch) or also MLSYS_ERR_UNSUPPORTED
   (profile) with a message that starts with the source name, and leave a zeroed output (the parser frees its
   partial output). A success must satisfy the documented ranges (nodes, chunkup, GPU ids, symmetry groups that
   divide the rank count, costs finite and >= 0). Every output is freed; ASan reports leaks.

   Build and run: make build/fuzz/fuzz_coll_sketch && ./build/fuzz/fuzz_coll_sketch -max_total_time=60 tests/fuzz/corpus/fuzz_coll_sketch
   The seed corpus holds the authors' sketches and profiles (microsoft/taccl examples, as in tests/data/taccl). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_coll_sketch: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                   \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static int is_zero(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++)
    if (c[i]) return 0;
  return 1;
}

static void check_sketch(const mlsys_coll_sketch *s, int G) {
  int i, j, N = s->nnodes * G;
  FUZZ_CHECK(s->nnodes >= 1 && s->nnodes <= 64);
  FUZZ_CHECK(s->chunkup >= 1 && s->chunkup <= 64);
  FUZZ_CHECK(s->intranode >= MLSYS_COLL_INTRA_NONE && s->intranode <= MLSYS_COLL_INTRA_MAXMIN);
  FUZZ_CHECK(s->input_bytes >= 0 && isfinite(s->input_bytes));
  FUZZ_CHECK(s->nswitch == 0 || (s->switch_n && s->switch_ranks && s->switch_policy));
  for (i = 0; i < s->nswitch; i++) {
    FUZZ_CHECK(s->switch_n[i] >= 2 && s->switch_n[i] <= G);
    FUZZ_CHECK(s->switch_policy[i] >= MLSYS_COLL_UC_FREE && s->switch_policy[i] <= MLSYS_COLL_UC_AUTO);
    for (j = 0; j < s->switch_n[i]; j++) FUZZ_CHECK(s->switch_ranks[i][j] >= 0 && s->switch_ranks[i][j] < G);
  }
  FUZZ_CHECK(!s->has_internode == !s->internode_conn);
  if (s->internode_conn)
    for (i = 0; i < G * G; i++) FUZZ_CHECK(s->internode_conn[i] <= 1);
  if (s->beta_split)
    for (i = 0; i < G; i++) FUZZ_CHECK(s->beta_split[i] >= 0 && isfinite(s->beta_split[i]));
  if (s->relay_sender)
    for (i = 0; i < G; i++) FUZZ_CHECK(s->relay_sender[i] >= -1 && s->relay_sender[i] < G);
  FUZZ_CHECK(s->nsym == 0 || s->sym);
  for (i = 0; i < s->nsym; i++) {
    FUZZ_CHECK(s->sym[i].group >= 1 && N % s->sym[i].group == 0);
    FUZZ_CHECK(s->sym[i].offset >= 0 && s->sym[i].offset < s->sym[i].group && s->sym[i].block == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int gs[2] = {8, 16};
  const char *text = (const char *)data;
  int k;
  for (k = 0; k < 2; k++) {
    mlsys_coll_sketch s;
    mlsys_status st = mlsys_coll_sketch_parse_json(text, size, "fuzz", gs[k], &s);
    if (st == MLSYS_OK) {
      check_sketch(&s, gs[k]);
    } else {
      FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG);
      FUZZ_CHECK(strncmp(mlsys_last_error(), "fuzz", 4) == 0 && mlsys_last_error()[4] == ':');
      FUZZ_CHECK(is_zero(&s, sizeof s));
    }
    mlsys_coll_sketch_free(&s);
    FUZZ_CHECK(is_zero(&s, sizeof s));
  }
  {
    mlsys_coll_profile p;
    int G = -1, nics = -1;
    char kind[16];
    mlsys_status st = mlsys_coll_profile_parse_json(text, size, "fuzz", &p, &G, &nics, kind, sizeof kind);
    if (st == MLSYS_OK) {
      FUZZ_CHECK(p.name != NULL);
      FUZZ_CHECK(G >= 1 && G <= 64 && nics >= 1 && nics <= G);
      FUZZ_CHECK(!strcmp(kind, "ndv2") || !strcmp(kind, "dgx2") || !strcmp(kind, "custom"));
      FUZZ_CHECK(isfinite(p.nvlink.alpha_us) && p.nvlink.alpha_us >= 0 && isfinite(p.nvlink.beta_us_per_mb) &&
                 p.nvlink.beta_us_per_mb >= 0);
      FUZZ_CHECK(isfinite(p.ib.alpha_us) && p.ib.alpha_us >= 0 && isfinite(p.ib.beta_us_per_mb) && p.ib.beta_us_per_mb >= 0);
    } else {
      FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG || st == MLSYS_ERR_UNSUPPORTED);
      FUZZ_CHECK(strncmp(mlsys_last_error(), "fuzz", 4) == 0 && mlsys_last_error()[4] == ':');
      FUZZ_CHECK(G == 0 && nics == 0 && kind[0] == 0 && p.name == NULL);
    }
  }
  return 0;
}
