/* tests/opencv_corpus.h — the real photographs the image tests run on: every .jpg/.jpeg below Debian's opencv-doc
   (615 files: 612 JPEGs and 3 PNGs named .jpg; spec plumber.md §7.5), installed by scripts/install-deps.sh. Listed
   once per test binary; a test that needs them skips, naming the fix, when the package is missing. Include after
   mlsys_pipeline.h and tests/test.h; call corpus_free() at exit. */
#ifndef MLSYS_TESTS_OPENCV_CORPUS_H
#define MLSYS_TESTS_OPENCV_CORPUS_H

#define OPENCV_DIR "/usr/share/doc/opencv-doc"

static char **g_paths;
static int64_t g_n = -1;

static int corpus(void) {
  if (g_n < 0 && mlsys_pipe_list_images(OPENCV_DIR, &g_paths, &g_n)) g_n = 0;
  return g_n >= 600;
}
static void corpus_free(void) {
  if (g_n > 0) mlsys_pipe_paths_free(g_paths, g_n);
  g_n = -1;
}
#define NEED_CORPUS() \
  do { if (!corpus()) SKIP_DEP("%s has no photographs: run scripts/install-deps.sh (Debian package opencv-doc)", OPENCV_DIR); } while (0)
#endif
