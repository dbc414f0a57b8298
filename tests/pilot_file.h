/* tests/pilot_file.h — helpers the binary-file tests share (test_offload_pilot.c, test_offload_pilot_ours.c, and
   test_index_peer.c for workload files):
   a per-process temporary path, a whole file read into memory, little-endian u32 access and the trailing CRC-32C
   fixed after an edit (so that mutations reach the checks behind the CRC). Include after mlsys_common.h. */
#ifndef MLSYS_TESTS_PILOT_FILE_H
#define MLSYS_TESTS_PILOT_FILE_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *tmp_path(const char *tag) {
  static char buf[4][256];
  static int k;
  char *p = buf[k++ & 3];
  snprintf(p, 256, "/tmp/mlsys_pilot_%s_%ld", tag, (long)getpid());
  return p;
}

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *b;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = (uint8_t *)malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void put32(uint8_t *b, uint32_t v) { b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24); }
static uint32_t get32(const uint8_t *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24; }
static void fix_crc(uint8_t *b, size_t len) { put32(b + len - 4, mlsys_crc32c(0, b, len - 4)); }
#endif
