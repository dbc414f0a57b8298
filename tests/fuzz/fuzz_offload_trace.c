/* libFuzzer target for the readers of mlsys_offload.h: our JSON-lines trace format and the bracketed constituency
   trees. A trace that parses is well formed (every id in range, times finite and >= 0), writes back and reads back
   to the same ops; a failure is a named error. Trees that parse have every parent before its child. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                              \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      fprintf(stderr, "fuzz_offload_trace: check failed at line %d: %s (last error: %s)\n", __LINE__, #x,         \
              mlsys_last_error());                                                                                 \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)

static void check_trace(const char *text, size_t len) {
  mlsys_offload_trace tr, back;
  int i, j;
  char *buf = NULL;
  size_t blen = 0;
  FILE *f;
  if (mlsys_offload_trace_read(text, len, "fuzz", MLSYS_OFFLOAD_FMT_MLSYS, &tr) != MLSYS_OK) {
    FUZZ_CHECK(*mlsys_last_error());
    return;
  }
  FUZZ_CHECK(tr.n_op > 0);
  for (i = 0; i < tr.n_op; i++) {
    FUZZ_CHECK(tr.op[i].time_us >= 0 && isfinite(tr.op[i].time_us));
    for (j = 0; j < tr.op[i].n_in + tr.op[i].n_out; j++) FUZZ_CHECK(tr.ids[tr.op[i].in0 + j] >= 0 && tr.ids[tr.op[i].in0 + j] < tr.n_t);
  }
  FUZZ_CHECK(mlsys_offload_peak_bytes(&tr) >= 0);
  if ((f = open_memstream(&buf, &blen))) {
    FUZZ_CHECK(mlsys_offload_trace_write(f, &tr) == MLSYS_OK);
    fclose(f);
    FUZZ_CHECK(mlsys_offload_trace_read(buf, blen, "back", MLSYS_OFFLOAD_FMT_MLSYS, &back) == MLSYS_OK);
    FUZZ_CHECK(back.n_op == tr.n_op && back.n_t == tr.n_t && back.n_ids == tr.n_ids);
    for (i = 0; i < tr.n_op; i++) FUZZ_CHECK(back.op[i].time_us == tr.op[i].time_us);
    mlsys_offload_trace_free(&back);
    free(buf);
  }
  mlsys_offload_trace_free(&tr);
}

static void check_trees(const char *text, size_t len) {
  mlsys_offload_tree *t;
  int n, i, k;
  if (mlsys_offload_trees_parse(text, len, "fuzz", &t, &n) != MLSYS_OK) {
    FUZZ_CHECK(*mlsys_last_error());
    return;
  }
  for (i = 0; i < n; i++) {
    FUZZ_CHECK(t[i].n >= 1 && t[i].parent[0] == -1);
    for (k = 1; k < t[i].n; k++) FUZZ_CHECK(t[i].parent[k] >= 0 && t[i].parent[k] < k);
    /* a word (hashed, never 0) has no children; a labelled node may have none either ("(NP)") */
    FUZZ_CHECK(t[i].word != NULL);
    for (k = 0; k < t[i].n; k++) {
      int c, kids = 0;
      for (c = k + 1; c < t[i].n && !kids; c++) kids = t[i].parent[c] == k;
      FUZZ_CHECK(t[i].word[k] == 0 || !kids);
    }
    mlsys_offload_tree_free(&t[i]);
  }
  mlsys_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  check_trace((const char *)buf, len);
  check_trees((const char *)buf, len);
  return 0;
}
