/* libFuzzer target for the planner's readers in mlsys_transfer.h (section 2): the plan-file reader
   (mlsys_xfer_overlay_read_json) and the throughput-grid and AWS-price CSV parsers, on the same bytes.

   For every input: a failure must be MLSYS_ERR_PARSE / MLSYS_ERR_ARG with a message, and leave a zeroed output;
   a plan that is read must pass mlsys_xfer_overlay_check and survive a write/read round trip unchanged; a grid
   that is parsed has finite, non-negative throughputs and prices and a zero diagonal. Outputs are freed (ASan
   reports leaks).
   Build and run: make build/fuzz/fuzz_xfer_plan && ./build/fuzz/fuzz_xfer_plan -max_total_time=60 tests/fuzz/corpus/fuzz_xfer_plan */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_xfer_plan: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                   \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static void check_plan(const char *text, size_t len) {
  mlsys_xfer_overlay ov, back;
  mlsys_status st = mlsys_xfer_overlay_read_json(text, len, "fuzz", &ov);
  if (st) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_NOMEM);
    FUZZ_CHECK(ov.gw == NULL && ov.edge == NULL && ov.ngw == 0);
    return;
  }
  FUZZ_CHECK(mlsys_xfer_overlay_check(&ov) == MLSYS_OK);
  {
    /* round trip: the writer needs a grid and a plan only for the header fields; write a minimal one */
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    const char *keys[2] = {"aws:us-east-1", "aws:us-west-2"};
    mlsys_xfer_grid g;
    mlsys_xfer_plan pl;
    int i;
    FUZZ_CHECK(f);
    FUZZ_CHECK(mlsys_xfer_grid_make(2, keys, NULL, &g) == MLSYS_OK);
    memset(&pl, 0, sizeof pl);
    pl.n = 2; pl.src = 0; pl.dst = 1;
    pl.flow = (double *)calloc(4, sizeof(double)); pl.conns = (double *)calloc(4, sizeof(double)); pl.vms = (double *)calloc(2, sizeof(double));
    FUZZ_CHECK(mlsys_xfer_plan_write_json(&g, &pl, &ov, f) == MLSYS_OK);
    fclose(f);
    FUZZ_CHECK(mlsys_xfer_overlay_read_json(buf, blen, "roundtrip", &back) == MLSYS_OK);
    FUZZ_CHECK(back.ngw == ov.ngw && back.nedge == ov.nedge);
    for (i = 0; i < ov.ngw; i++)
      FUZZ_CHECK(back.gw[i].role == ov.gw[i].role && back.gw[i].port == ov.gw[i].port && !strcmp(back.gw[i].host, ov.gw[i].host) &&
                 !strcmp(back.gw[i].region, ov.gw[i].region));
    for (i = 0; i < ov.nedge; i++)
      FUZZ_CHECK(back.edge[i].from == ov.edge[i].from && back.edge[i].to == ov.edge[i].to && back.edge[i].nconn == ov.edge[i].nconn &&
                 back.edge[i].rate_gbps == ov.edge[i].rate_gbps);
    mlsys_xfer_overlay_free(&back);
    free(buf); free(pl.flow); free(pl.conns); free(pl.vms);
    mlsys_xfer_grid_free(&g);
  }
  mlsys_xfer_overlay_free(&ov);
}

static void check_grid(const char *text, size_t len) {
  mlsys_xfer_grid g;
  mlsys_status st = mlsys_xfer_grid_parse(text, len, "fuzz.csv", NULL, &g);
  int i, j;
  if (st) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG || st == MLSYS_ERR_NOMEM);
    FUZZ_CHECK(g.n == 0 && g.tput == NULL);
    return;
  }
  FUZZ_CHECK(g.n >= 2);
  for (i = 0; i < g.n; i++)
    for (j = 0; j < g.n; j++) {
      double t = g.tput[i * g.n + j], p = g.price[i * g.n + j];
      FUZZ_CHECK(t >= 0 && isfinite(t) && p >= 0 && isfinite(p));
      if (i == j) FUZZ_CHECK(t == 0 && p == 0);
    }
  /* the same bytes as an AWS price table on this grid */
  st = mlsys_xfer_grid_parse_aws_prices(&g, text, len, "fuzz_prices.csv");
  FUZZ_CHECK(st == MLSYS_OK || st == MLSYS_ERR_PARSE);
  for (i = 0; i < g.n * g.n; i++) FUZZ_CHECK(g.price[i] >= 0 && isfinite(g.price[i]));
  mlsys_xfer_grid_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 16)) return 0;
  check_plan((const char *)data, size);
  check_grid((const char *)data, size);
  return 0;
}
