/* tests/pcr_fixture.h — the PCR tests' shared inputs: the 59 JPEGs of Debian opencv-doc's examples/data (32 colour
   photos, 27 grayscale; spec pcr.md §7.5), read once per test binary and packed into records. Include after
   mlsys_pcr.h, mlsys_pipeline.h and tests/test.h. */
#ifndef MLSYS_TESTS_PCR_FIXTURE_H
#define MLSYS_TESTS_PCR_FIXTURE_H
#include <sys/stat.h>
#include <unistd.h>

#define PCR_DATA_DIR "/usr/share/doc/opencv-doc/examples/data"

typedef struct {
  char *name;               /* file name, e.g. "fruits.jpg" */
  uint8_t *jpg;             /* the file */
  size_t len;
} pcr_photo;

static pcr_photo *g_ph;
static int g_nph = -1;

static int pcr_cmp_name(const void *a, const void *b) { return strcmp(((const pcr_photo *)a)->name, ((const pcr_photo *)b)->name); }

/* The JPEGs of examples/data sorted by name (0 when the package is missing). */
static int pcr_photos(void) {
  char **paths;
  int64_t n, i;
  if (g_nph >= 0) return g_nph;
  g_nph = 0;
  if (mlsys_pipe_list_images(PCR_DATA_DIR, &paths, &n)) return 0;
  g_ph = (pcr_photo *)calloc((size_t)n + 1, sizeof *g_ph);
  for (i = 0; i < n; i++) {
    char *d;
    size_t len;
    const char *base = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
    if (strchr(paths[i] + strlen(PCR_DATA_DIR) + 1, '/')) continue;   /* only examples/data itself */
    if (mlsys_read_file(paths[i], &d, &len)) continue;
    if (len < 3 || (uint8_t)d[0] != 0xFF || (uint8_t)d[1] != 0xD8) { mlsys_free(d); continue; }
    g_ph[g_nph].name = strdup(base);
    g_ph[g_nph].jpg = (uint8_t *)d;
    g_ph[g_nph].len = len;
    g_nph++;
  }
  mlsys_pipe_paths_free(paths, n);
  qsort(g_ph, (size_t)g_nph, sizeof *g_ph, pcr_cmp_name);
  return g_nph;
}
static void pcr_photos_free(void) {
  int i;
  for (i = 0; i < g_nph; i++) { free(g_ph[i].name); mlsys_free(g_ph[i].jpg); }
  free(g_ph);
  g_ph = NULL;
  g_nph = -1;
}
static int pcr_find(const char *name) {
  int i;
  for (i = 0; i < pcr_photos(); i++)
    if (!strcmp(g_ph[i].name, name)) return i;
  return -1;
}
#define NEED_PHOTOS()                                                                                                  \
  do {                                                                                                                 \
    if (pcr_photos() < 59) SKIP_DEP("%s has %d JPEGs (59 expected): run scripts/install-deps.sh (Debian opencv-doc)", PCR_DATA_DIR, g_nph); \
  } while (0)

/* A record of photos [from, to) (label = photo index) in memory; d may be NULL. */
static uint8_t *pcr_pack(int from, int to, const mlsys_pcr_writer_desc *d, size_t *len) {
  mlsys_pcr_writer *w;
  uint8_t *buf = NULL;
  int i;
  if (mlsys_pcr_writer_create(d, &w)) return NULL;
  for (i = from; i < to; i++)
    if (mlsys_pcr_writer_add_jpeg(w, g_ph[i].jpg, g_ph[i].len, i, NULL, 0)) {
      printf("    pcr_pack: %s: %s\n", g_ph[i].name, mlsys_last_error());
      mlsys_pcr_writer_destroy(w);
      return NULL;
    }
  if (mlsys_pcr_writer_finish_mem(w, &buf, len)) buf = NULL;
  mlsys_pcr_writer_destroy(w);
  return buf;
}

/* A fresh temporary directory under TMPDIR (or /tmp), removed by pcr_rmdir. */
static char *pcr_tmpdir(void) {
  const char *t = getenv("TMPDIR");
  char *p = (char *)malloc(4096);
  snprintf(p, 4096, "%s/mlsys_pcr_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(p)) { free(p); return NULL; }
  return p;
}
static void pcr_rmdir(char *dir) {
  char cmd[4200];
  if (!dir) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("    could not remove %s\n", dir);
  free(dir);
}
static int pcr_write_file(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(b, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  return ok;
}
/* a JPEG at fidelity k of image i: the caller frees it */
static uint8_t *pcr_jpeg_at(const mlsys_pcr_reader *r, uint32_t i, int k, size_t *len) {
  uint8_t *b;
  if (mlsys_pcr_image_jpeg(r, i, k, NULL, 0, len)) return NULL;
  b = (uint8_t *)malloc(*len);
  if (mlsys_pcr_image_jpeg(r, i, k, b, *len, len)) { free(b); return NULL; }
  return b;
}
#endif
