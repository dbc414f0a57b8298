/* tests/dtr_logs.h — the DTR prototype's eight PyTorch traces (tests/data/dtr/logs.zip; $MLSYS_DTR_LOGS overrides
   the path), unpacked with `unzip -p` when a test or benchmark runs. One copy for the tests of mlsys_remat.h and
   mlsys_offload.h and for bench/bench_offload.c. */
#ifndef MLSYS_TESTS_DTR_LOGS_H
#define MLSYS_TESTS_DTR_LOGS_H
#include <stdio.h>
#include <stdlib.h>

static const char *dtr_zip_path(void) {
  const char *z = getenv("MLSYS_DTR_LOGS");
  return z && *z ? z : "tests/data/dtr/logs.zip";
}

/* The log whose name starts with `name` (a full file name or its model-batch prefix, "unet-6") into a malloc'd,
   NUL-terminated buffer; 0 on success, -1 when the zip, the member or unzip is missing. */
static int dtr_log_extract(const char *name, char **buf, size_t *len) {
  char cmd[1024];
  size_t cap = 1 << 20, n = 0, r;
  FILE *p;
  char *b = (char *)malloc(cap);
  snprintf(cmd, sizeof cmd, "unzip -p '%s' 'logs/%s*' 2>/dev/null", dtr_zip_path(), name);
  if (!b || !(p = popen(cmd, "r"))) { free(b); return -1; }
  while ((r = fread(b + n, 1, cap - n - 1, p)) > 0) {
    n += r;
    if (cap - n - 1 == 0) {
      char *nb = (char *)realloc(b, cap * 2);
      if (!nb) { pclose(p); free(b); return -1; }
      b = nb;
      cap *= 2;
    }
  }
  if (pclose(p) != 0 || n == 0) { free(b); return -1; }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}
#endif
