/* libFuzzer target for the MSCCL XML reader of mlsys_collective.h (mlsys_coll_prog_read_xml).

   For every input: read it. A failure must be MLSYS_ERR_PARSE with "fuzz:LINE: ..." and a zeroed program. A
   success is written back with the writer, read again and written again: the two writes must be byte-identical.
   When the program is small, it is checked by the program verifier against the collective its header names and
   run by the CPU executor on the collective's buffers (mlsys_coll_run_cpu, in place or not); a program the verifier
   accepts must execute and give exactly the reference collective's result (the verifier's promise), and the
   executor must never crash or hang on the others.

   Build and run: make build/fuzz/fuzz_coll_xml && ./build/fuzz/fuzz_coll_xml -max_total_time=60 tests/fuzz/corpus/fuzz_coll_xml */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_coll_xml: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                   \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static void check_error_message(void) {
  const char *m = mlsys_last_error(), *p;
  FUZZ_CHECK(strncmp(m, "fuzz:", 5) == 0);
  p = m + 5;
  FUZZ_CHECK(*p >= '1' && *p <= '9');
  while (*p >= '0' && *p <= '9') p++;
  FUZZ_CHECK(p[0] == ':' && p[1] == ' ' && p[2] != 0);
}

static char *write_prog(const mlsys_coll_prog *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  FUZZ_CHECK(f != NULL);
  FUZZ_CHECK(mlsys_coll_prog_write_xml(p, f) == MLSYS_OK);
  fclose(f);
  return buf;
}

static void semantic_checks(const mlsys_coll_prog *p) {
  int g, t, C, steps = 0, chunks = 0, r, ni, no;
  mlsys_coll_def d;
  char msg[512];
  mlsys_status vs, es;
  void **in, **out, **ref;
  size_t E;
  if (p->ngpus > 16 || p->instances > 8) return;
  for (g = 0; g < p->ngpus; g++) {
    chunks += p->gpus[g].i_chunks + p->gpus[g].o_chunks + p->gpus[g].s_chunks;
    for (t = 0; t < p->gpus[g].ntbs; t++) steps += p->gpus[g].tbs[t].nsteps;
  }
  if (steps > 4000 || chunks > 20000) return;
  C = mlsys_coll_prog_chunkup(p);   /* in place or not */
  if (C < 1 || C > 64) return;
  FUZZ_CHECK(mlsys_coll_def_make(p->kind, p->ngpus, C, &d) == MLSYS_OK);
  vs = mlsys_coll_prog_verify(&d, p, msg, sizeof msg);
  FUZZ_CHECK(vs == MLSYS_OK || vs == MLSYS_ERR_INFEASIBLE || vs == MLSYS_ERR_ARG);
  if (vs != MLSYS_OK) FUZZ_CHECK(msg[0] != 0);
  /* buffers in the collective's layout: run_cpu refuses a program whose counts differ (MLSYS_ERR_ARG) */
  ni = p->kind == MLSYS_COLL_ALLGATHER ? C : p->ngpus * C;
  no = p->kind == MLSYS_COLL_REDUCESCATTER ? C : p->ngpus * C;
  E = (size_t)p->instances;
  in = (void **)calloc((size_t)p->ngpus, sizeof(void *));
  out = (void **)calloc((size_t)p->ngpus, sizeof(void *));
  ref = (void **)calloc((size_t)p->ngpus, sizeof(void *));
  FUZZ_CHECK(in && out && ref);
  for (r = 0; r < p->ngpus; r++) {
    int i;
    in[r] = calloc((size_t)ni * E + 1, sizeof(int32_t));
    out[r] = calloc((size_t)no * E + 1, sizeof(int32_t));
    ref[r] = calloc((size_t)no * E + 1, sizeof(int32_t));
    FUZZ_CHECK(in[r] && out[r] && ref[r]);
    for (i = 0; i < ni * (int)E; i++) ((int32_t *)in[r])[i] = (r + 1) * 1000 + i;
  }
  es = mlsys_coll_run_cpu(p, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, E, (uint64_t)steps);
  FUZZ_CHECK(es == MLSYS_OK || es == MLSYS_ERR_INFEASIBLE || es == MLSYS_ERR_ARG);
  if (vs == MLSYS_OK) {
    /* a verified program computes the collective, whatever the interleaving */
    FUZZ_CHECK(es == MLSYS_OK);
    FUZZ_CHECK(mlsys_coll_reference(p->kind, p->ngpus, C, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, ref, E) == MLSYS_OK);
    for (r = 0; r < p->ngpus; r++) FUZZ_CHECK(memcmp(out[r], ref[r], (size_t)no * E * sizeof(int32_t)) == 0);
  }
  for (r = 0; r < p->ngpus; r++) { free(in[r]); free(out[r]); free(ref[r]); }
  free(in); free(out); free(ref);
  mlsys_coll_def_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_coll_prog p, q;
  mlsys_status st = mlsys_coll_prog_read_xml((const char *)data, size, "fuzz", &p);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE);
    FUZZ_CHECK(p.gpus == NULL && p.ngpus == 0);
    check_error_message();
    return 0;
  }
  {
    size_t l1 = 0, l2 = 0;
    char *b1 = write_prog(&p, &l1), *b2;
    st = mlsys_coll_prog_read_xml(b1, l1, "fuzz-out", &q);
    if (st != MLSYS_OK) {
      fprintf(stderr, "fuzz_coll_xml: writer output does not read back: %s\n--- output ---\n%s\n", mlsys_last_error(), b1);
      abort();
    }
    b2 = write_prog(&q, &l2);
    if (l1 != l2 || memcmp(b1, b2, l1)) {
      fprintf(stderr, "fuzz_coll_xml: write -> read -> write changed the text\n--- first ---\n%s\n--- second ---\n%s\n", b1, b2);
      abort();
    }
    free(b1); free(b2);
    mlsys_coll_prog_free(&q);
  }
  semantic_checks(&p);
  mlsys_coll_prog_free(&p);
  return 0;
}
