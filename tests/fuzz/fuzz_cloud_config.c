/* libFuzzer target for mlsys_cloud.h's configuration parser ("4xp3.8xlarge@1024+8g3@128", the `--config` of
   `mlsys cloud simulate`), over the seed's case-study types (long and short names).

   For every input: a failure is MLSYS_ERR_PARSE or MLSYS_ERR_ARG with a message naming the configuration; a success
   has at least one VM, counts and batches in range, and formats back to a string that parses to the same mix.

   Build and run: make build/fuzz/fuzz_cloud_config && ./build/fuzz/fuzz_cloud_config -max_total_time=60 tests/fuzz/corpus/fuzz_cloud_config */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                                   \
  do {                                                                                                  \
    if (!(x)) {                                                                                         \
      fprintf(stderr, "fuzz_cloud_config: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                      \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static mlsys_cloud_itype ty[4];
  static const char *const nm[4][2] = {{"p3.8xlarge", "p3"}, {"g3.8xlarge", "g3"}, {"g4dn.8xlarge", "g4dn"}, {"x1.large", ""}};
  mlsys_cloud_sim s;
  mlsys_cloud_plan pl;
  char *text = (char *)malloc(size + 1), buf[512];
  int c[4], b[4], c2[4], b2[4], i, any = 0;
  mlsys_status st;
  for (i = 0; i < 4; i++) {
    snprintf(ty[i].name, sizeof ty[i].name, "%s", nm[i][0]);
    snprintf(ty[i].short_name, sizeof ty[i].short_name, "%s", nm[i][1]);
  }
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  st = mlsys_cloud_parse_config(ty, 4, text, c, b);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "cloud: ", 7) == 0);
  } else {
    memset(&s, 0, sizeof s);
    memset(&pl, 0, sizeof pl);
    s.ntypes = 4, s.types = ty, pl.ntypes = 4;
    for (i = 0; i < 4; i++) {
      FUZZ_CHECK(c[i] >= 0 && c[i] <= 1000000 && b[i] >= 0 && b[i] <= 100000000);
      FUZZ_CHECK((c[i] == 0) == (b[i] == 0));
      any |= c[i] > 0;
      pl.counts[i] = c[i], pl.batches[i] = b[i];
    }
    FUZZ_CHECK(any);
    FUZZ_CHECK(mlsys_cloud_plan_format(&s, &pl, buf, sizeof buf) < (int)sizeof buf);
    FUZZ_CHECK(mlsys_cloud_parse_config(ty, 4, buf, c2, b2) == MLSYS_OK);
    FUZZ_CHECK(memcmp(c, c2, sizeof c) == 0 && memcmp(b, b2, sizeof b) == 0);
  }
  free(text);
  return 0;
}
