/* libFuzzer target for mlsys_cloud.h's file readers (section 6), on the same bytes: the instance catalogue (CSV,
   on-demand and spot prices), a DNN's profiles (JSON), and measured timings and a layer list (CSV, through
   mlsys_cloud_dnn_fit: the bytes as the timings, then as the layers beside fixed timings).

   For every input: a failure is MLSYS_ERR_PARSE or MLSYS_ERR_ARG (never anything else: inputs are small, so no
   NOMEM) with a message naming the source, and leaves nothing allocated; a success satisfies the documented ranges:
   every type named, non-negative numbers, and each profile passes mlsys_cloud_cprof_check and can be evaluated at
   its Bmax. ASan reports leaks.

   Build and run: make build/fuzz/fuzz_cloud_files && ./build/fuzz/fuzz_cloud_files -max_total_time=60 tests/fuzz/corpus/fuzz_cloud_files
   The seed corpus holds tests/data/cloud/instances.csv, profile_shufflenet_case3.json (shortened) and the first rows
   of timings_smallcnn_cpu.csv and layers_resnet18.csv. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                                  \
  do {                                                                                                 \
    if (!(x)) {                                                                                        \
      fprintf(stderr, "fuzz_cloud_files: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                     \
      abort();                                                                                         \
    }                                                                                                  \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  const char *text = (const char *)data;
  mlsys_cloud_itype *t = NULL;
  mlsys_cloud_dnn d;
  mlsys_status st;
  int n = 0, i, spot;
  for (spot = 0; spot < 2; spot++) {
    st = mlsys_cloud_catalog_load(text, size, "cat.csv", spot, &t, &n);
    if (st != MLSYS_OK) {
      FUZZ_CHECK(st == MLSYS_ERR_PARSE);
      FUZZ_CHECK(strncmp(mlsys_last_error(), "cat.csv", 7) == 0);
      FUZZ_CHECK(t == NULL);
      continue;
    }
    FUZZ_CHECK(n >= 1 && t != NULL);
    for (i = 0; i < n; i++) {
      FUZZ_CHECK(t[i].name[0] && strlen(t[i].name) < sizeof t[i].name);
      FUZZ_CHECK(isnan(t[i].price_per_hour) || t[i].price_per_hour >= 0);
      FUZZ_CHECK(t[i].rated_gbps >= 0 && t[i].mem_gib >= 0 && t[i].cap == -1);
    }
    mlsys_free(t);
    t = NULL;
  }
  {
    static const char tim[] = "type,batch,t_fw,t_bw\na,1,0.01,0.02\na,3,0.03,0.05\na,5,0.04,0.09\na,8,0.07,0.1\n";
    mlsys_cloud_fit_stat *fs = NULL;
    int pass;
    for (pass = 0; pass < 2; pass++) {
      st = pass ? mlsys_cloud_dnn_fit("f", tim, sizeof tim - 1, "t.csv", text, size, "l.csv", &d, &fs)
                : mlsys_cloud_dnn_fit("f", text, size, "t.csv", NULL, 0, NULL, &d, &fs);
      if (st != MLSYS_OK) {
        FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG);
        FUZZ_CHECK(strncmp(mlsys_last_error(), pass ? "l.csv" : "t.csv", 5) == 0);
        FUZZ_CHECK(d.prof == NULL && d.type_name == NULL && d.grad_bytes == NULL && fs == NULL);
        continue;
      }
      FUZZ_CHECK(d.ntypes >= 1 && fs != NULL);
      for (i = 0; i < d.ntypes; i++) {
        const mlsys_cloud_cprof *p = &d.prof[i];
        FUZZ_CHECK(mlsys_cloud_cprof_check(p, "fuzz fit") == MLSYS_OK);
        FUZZ_CHECK(isfinite(mlsys_cloud_cprof_fw(p, p->bmax)) && isfinite(mlsys_cloud_cprof_bw(p, p->bmax)));
        FUZZ_CHECK(fs[i].n >= 1 && fs[i].fit_mape >= 0 && fs[i].line_mape >= 0);
      }
      mlsys_free(fs);
      fs = NULL;
      mlsys_cloud_dnn_free(&d);
    }
  }
  st = mlsys_cloud_dnn_load(text, size, "p.json", &d);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG);
    FUZZ_CHECK(strstr(mlsys_last_error(), "p.json") != NULL);
    FUZZ_CHECK(d.prof == NULL && d.type_name == NULL && d.grad_bytes == NULL);
    return 0;
  }
  FUZZ_CHECK(d.ntypes >= 1);
  for (i = 0; i < d.ntypes; i++) {
    const mlsys_cloud_cprof *p = &d.prof[i];
    FUZZ_CHECK(mlsys_cloud_dnn_find(&d, d.type_name[i]) != NULL);
    FUZZ_CHECK(mlsys_cloud_cprof_check(p, "fuzz") == MLSYS_OK);
    FUZZ_CHECK(isfinite(mlsys_cloud_cprof_fw(p, p->bmax)) && isinf(mlsys_cloud_cprof_bw(p, p->bmax + 1)));
    FUZZ_CHECK(p->nlayers == d.nlayers);
  }
  mlsys_cloud_dnn_free(&d);
  return 0;
}
