/* libFuzzer target for the GBDT model readers of mlsys_cloud.h: one loader that detects XGBoost's JSON model,
   XGBoost's text dump and our own text format, on the same bytes; inputs that start with the byte 0xFF instead
   train a tiny model on the remaining bytes read as floats (NaN, inf, denormals and huge values included).

   For every input: a failed load must be MLSYS_ERR_PARSE / MLSYS_ERR_ARG / MLSYS_ERR_UNSUPPORTED / MLSYS_ERR_TOO_BIG
   with a message that starts with the source name, and leave *out NULL. A loaded model must predict (zeros, NaNs
   and mixed rows) without reading outside a row of mlsys_cloud_gbdt_nfeatures floats, predict in a batch exactly as
   row by row, and survive a save/load round trip with bit-identical predictions. Training must succeed or fail with MLSYS_ERR_ARG. ASan reports leaks.

   Build and run: make build/fuzz/fuzz_cloud_gbdt && ./build/fuzz/fuzz_cloud_gbdt -max_total_time=60 tests/fuzz/corpus/fuzz_cloud_gbdt
   The seed corpus: small XGBoost 1.7.4 models (JSON and dump, from tools/xgb_fixtures.py --rounds 2) and one of ours. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_cloud_gbdt: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                   \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static void check_model(const mlsys_cloud_gbdt *m) {
  int nf = mlsys_cloud_gbdt_nfeatures(m), t, k;
  float *x;
  double p[3];
  FUZZ_CHECK(nf >= 0 && mlsys_cloud_gbdt_ntrees(m) >= 0);
  FUZZ_CHECK(isfinite(mlsys_cloud_gbdt_base_score(m)));
  for (t = 0; t < mlsys_cloud_gbdt_ntrees(m); t++) {
    int n = mlsys_cloud_gbdt_tree_nodes(m, t);
    FUZZ_CHECK(n >= 1);
    for (k = 0; k < n; k++) {
      mlsys_cloud_gbdt_node_info ni;
      FUZZ_CHECK(mlsys_cloud_gbdt_node(m, t, k, &ni) == MLSYS_OK);
      FUZZ_CHECK(ni.is_leaf || (ni.feature >= 0 && ni.feature < nf && ni.left > k && ni.right == ni.left + 1 &&
                                ni.right < n));
    }
  }
  if (nf > (1 << 16)) return;   /* a legal but huge declared width: rows that wide are not worth allocating */
  x = (float *)malloc(((size_t)nf + 1) * sizeof *x);
  FUZZ_CHECK(x != NULL);
  for (k = 0; k < nf; k++) x[k] = 0.0f;
  p[0] = mlsys_cloud_gbdt_predict(m, x);
  for (k = 0; k < nf; k++) x[k] = NAN;
  p[1] = mlsys_cloud_gbdt_predict(m, x);
  for (k = 0; k < nf; k++) x[k] = (float)((k * 7919) % 13) - 6.0f;
  p[2] = mlsys_cloud_gbdt_predict(m, x);
  {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mlsys_cloud_gbdt *back = NULL;
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(mlsys_cloud_gbdt_save(m, f) == MLSYS_OK);
    fclose(f);
    FUZZ_CHECK(mlsys_cloud_gbdt_load(buf, len, "saved", NAN, &back) == MLSYS_OK);
    for (k = 0; k < nf; k++) x[k] = 0.0f;
    FUZZ_CHECK(memcmp(&(double){mlsys_cloud_gbdt_predict(back, x)}, &p[0], sizeof(double)) == 0);
    for (k = 0; k < nf; k++) x[k] = NAN;
    FUZZ_CHECK(memcmp(&(double){mlsys_cloud_gbdt_predict(back, x)}, &p[1], sizeof(double)) == 0);
    for (k = 0; k < nf; k++) x[k] = (float)((k * 7919) % 13) - 6.0f;
    FUZZ_CHECK(memcmp(&(double){mlsys_cloud_gbdt_predict(back, x)}, &p[2], sizeof(double)) == 0);
    mlsys_cloud_gbdt_free(back);
    free(buf);
  }
  if (nf <= 4096) { /* the batch path (rows in blocks through each tree) gives predict's bits on 33 mixed rows */
    int r, w = nf ? nf : 1;
    float *X = (float *)malloc((size_t)33 * (size_t)w * sizeof *X);
    double *out = (double *)malloc(33 * sizeof *out);
    FUZZ_CHECK(X != NULL && out != NULL);
    for (r = 0; r < 33; r++)
      for (k = 0; k < w; k++) X[(size_t)r * w + k] = r % 3 == 1 ? NAN : (float)(((r + 1) * (k + 3) * 7919) % 13) - 6.0f;
    FUZZ_CHECK(mlsys_cloud_gbdt_predict_rows(m, X, 33, w, out) == MLSYS_OK);
    for (r = 0; r < 33; r++)
      FUZZ_CHECK(memcmp(&(double){mlsys_cloud_gbdt_predict(m, X + (size_t)r * w)}, &out[r], sizeof(double)) == 0);
    free(X);
    free(out);
  }
  free(x);
}

static void fuzz_train(const uint8_t *data, size_t size) {
  int ncol, nrow, i;
  float *v;
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  mlsys_status st;
  if (size < 3) return;
  ncol = 1 + data[0] % 4;
  mlsys_cloud_gbdt_params_default(&p);
  p.obj = data[1] & 1 ? MLSYS_CLOUD_OBJ_PSEUDO_HUBER : MLSYS_CLOUD_OBJ_SQUARED;
  p.max_depth = 1 + (data[1] >> 1) % 5;
  p.max_bin = 2 + (data[1] >> 4) * 3;
  p.min_child_weight = data[1] & 2 ? 0 : 1;
  p.subsample = data[1] & 4 ? 0.6 : 1;
  p.n_trees = 5;
  data += 2;
  size -= 2;
  nrow = (int)(size / 4 / (size_t)(ncol + 1));
  if (nrow < 1) return;
  v = (float *)malloc((size_t)nrow * (size_t)(ncol + 1) * sizeof *v);
  FUZZ_CHECK(v != NULL);
  memcpy(v, data, (size_t)nrow * (size_t)(ncol + 1) * sizeof *v);
  st = mlsys_cloud_gbdt_train(v, v + (size_t)nrow * ncol, nrow, ncol, &p, &m);
  if (st == MLSYS_OK) {
    FUZZ_CHECK(m != NULL && mlsys_cloud_gbdt_nfeatures(m) == ncol);
    for (i = 0; i < nrow; i++) (void)mlsys_cloud_gbdt_predict(m, v + (size_t)i * ncol);
    check_model(m);
  } else {
    FUZZ_CHECK(st == MLSYS_ERR_ARG && m == NULL);
  }
  mlsys_cloud_gbdt_free(m);
  {
    double lb = mlsys_cloud_mape_lower_bound(v, v + (size_t)nrow * ncol, nrow, ncol);
    FUZZ_CHECK(isnan(lb) || (lb >= 0 && lb < INFINITY));
  }
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_cloud_gbdt *m = (mlsys_cloud_gbdt *)&m;
  mlsys_status st;
  if (size > 0 && data[0] == 0xFF) {
    fuzz_train(data + 1, size - 1);
    return 0;
  }
  st = mlsys_cloud_gbdt_load((const char *)data, size, "fuzz", 0.5, &m);
  if (st == MLSYS_OK) {
    FUZZ_CHECK(m != NULL);
    check_model(m);
    mlsys_cloud_gbdt_free(m);
  } else {
    FUZZ_CHECK(m == NULL);
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG || st == MLSYS_ERR_UNSUPPORTED || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "fuzz", 4) == 0 && mlsys_last_error()[4] == ':');
  }
  return 0;
}
