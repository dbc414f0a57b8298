/* tests/test_pcr_jpeg.c — the JPEG layer of mlsys_pcr.h (spec pcr.md §3.1–3.2, §7.4): the lossless transcode equals
   `jpegtran -copy none -optimize -progressive` byte for byte and keeps every pixel, and the marker walk splits it so
   that header ‖ scans ‖ EOI is the file (10 scans for colour, 6 for grayscale), on the real photographs of Debian's
   opencv-doc (every 8th of the 612 JPEGs, plus all 59 of examples/data); damaged and non-JPEG inputs are named
   errors. jpegtran comes from libjpeg-turbo-progs (scripts/install-deps.sh). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pcr.h"
#include "mlsys_pipeline.h"
#include "tests/test.h"
#include <jpeglib.h>
#include <unistd.h>

#include "tests/opencv_corpus.h"

/* jpegtran's output for path, or NULL */
static uint8_t *jpegtran(const char *path, size_t *len) {
  char cmd[1024], tmp[] = "/tmp/mlsys_pcr_jt_XXXXXX";
  char *data = NULL;
  int fd = mkstemp(tmp);
  if (fd < 0) return NULL;
  close(fd);
  snprintf(cmd, sizeof cmd, "jpegtran -copy none -optimize -progressive '%s' > '%s' 2>/dev/null", path, tmp);
  if (system(cmd) != 0 || mlsys_read_file(tmp, &data, len)) data = NULL;
  unlink(tmp);
  return (uint8_t *)data;
}

/* decoded pixels (libjpeg, RGB or gray as stored) */
static uint8_t *decode(const uint8_t *b, size_t n, int *w, int *h, int *c) {
  struct jpeg_decompress_struct ci;
  struct jpeg_error_mgr jerr;
  uint8_t *px;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, b, (unsigned long)n);
  jpeg_read_header(&ci, TRUE);
  jpeg_start_decompress(&ci);
  *w = (int)ci.output_width; *h = (int)ci.output_height; *c = ci.output_components;
  px = (uint8_t *)malloc((size_t)*w * (size_t)*h * (size_t)*c);
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW row = px + (size_t)ci.output_scanline * (size_t)*w * (size_t)*c;
    jpeg_read_scanlines(&ci, &row, 1);
  }
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return px;
}

static int is_jpeg_file(const char *path, uint8_t **b, size_t *n) {
  char *d;
  if (mlsys_read_file(path, &d, n)) return 0;
  *b = (uint8_t *)d;
  if (*n >= 2 && (*b)[0] == 0xFF && (*b)[1] == 0xD8) return 1;
  mlsys_free(d);
  return 0;
}

TEST(transcode_equals_jpegtran_and_keeps_pixels) {
  int64_t i, done = 0, gray = 0;
  NEED_CORPUS();
  if (system("command -v jpegtran >/dev/null 2>&1") != 0) SKIP_DEP("jpegtran missing: run scripts/install-deps.sh (libjpeg-turbo-progs)");
  for (i = 0; i < g_n; i++) {
    uint8_t *in, *out, *ref, *p0, *p1;
    size_t n, olen, rlen;
    int w0, h0, c0, w1, h1, c1;
    mlsys_status st;
    if (!(i % 8 == 0 || strstr(g_paths[i], "examples/data/"))) continue;
    if (!is_jpeg_file(g_paths[i], &in, &n)) continue;
    st = mlsys_pcr_jpeg_to_progressive(in, n, NULL, &out, &olen);
    if (st == MLSYS_ERR_UNSUPPORTED) { mlsys_free(in); continue; }   /* RGB/CMYK JPEGs: refused by design (§3.1 step 2) */
    CHECK_MSG(st == MLSYS_OK, "%s: %s", g_paths[i], mlsys_last_error());
    if (st) { mlsys_free(in); continue; }
    ref = jpegtran(g_paths[i], &rlen);
    REQUIRE(ref);
    CHECK_MSG(rlen == olen && memcmp(ref, out, olen) == 0, "%s: %zu bytes, jpegtran %zu", g_paths[i], olen, rlen);
    p0 = decode(in, n, &w0, &h0, &c0);
    p1 = decode(out, olen, &w1, &h1, &c1);
    CHECK_MSG(w0 == w1 && h0 == h1 && c0 == c1 && memcmp(p0, p1, (size_t)w0 * (size_t)h0 * (size_t)c0) == 0, "%s: pixels differ", g_paths[i]);
    gray += c0 == 1;
    free(p0); free(p1);
    mlsys_free(ref); mlsys_free(out); mlsys_free(in);
    done++;
  }
  printf("  %lld photos transcoded (%lld grayscale), all byte-identical to jpegtran and pixel-identical to their source\n",
         (long long)done, (long long)gray);
  CHECK(done >= 100);
}

TEST(split_reassembles_the_file) {
  int64_t i, done = 0;
  NEED_CORPUS();
  for (i = 0; i < g_n; i += 5) {
    uint8_t *in, *out, *re;
    size_t n, olen, k = 0;
    mlsys_pcr_jpeg_layout L;
    int j;
    if (!is_jpeg_file(g_paths[i], &in, &n)) continue;
    if (mlsys_pcr_jpeg_to_progressive(in, n, NULL, &out, &olen)) { mlsys_free(in); continue; }
    REQUIRE_OK(mlsys_pcr_jpeg_split(out, olen, &L));
    CHECK(L.progressive);
    CHECK_EQ_INT(L.nscans, L.ncomp == 1 ? 6 : 10);   /* jpeg_simple_progression */
    CHECK(L.scan[0].ss == 0 && L.scan[0].se == 0);    /* the DC scan first */
    CHECK_EQ_INT(L.scan[0].begin, L.header_len);
    for (j = 1; j < L.nscans; j++) CHECK_EQ_INT(L.scan[j].begin, L.scan[j - 1].end);
    CHECK_EQ_INT(L.eoi_pos + 2, olen);
    /* header ‖ parts ‖ EOI == the file */
    re = (uint8_t *)mlsys_alloc(olen, 1);
    memcpy(re, out, L.header_len); k = L.header_len;
    for (j = 0; j < L.nscans; j++) { memcpy(re + k, out + L.scan[j].begin, L.scan[j].end - L.scan[j].begin); k += L.scan[j].end - L.scan[j].begin; }
    re[k++] = 0xFF; re[k++] = 0xD9;
    CHECK(k == olen && memcmp(re, out, olen) == 0);
    /* the original baseline file splits too (one scan for interleaved baseline) */
    {
      mlsys_pcr_jpeg_layout B;
      memset(&B, 0, sizeof B);
      if (mlsys_pcr_jpeg_split(in, n, &B) == MLSYS_OK) CHECK(B.nscans >= 1);
    }
    mlsys_free(re); mlsys_free(out); mlsys_free(in);
    done++;
  }
  CHECK(done >= 100);
}

TEST(bad_inputs_are_named) {
  uint8_t *in, *out, *t;
  size_t n, olen, cut, tl;
  char png[256];
  char *d;
  mlsys_pcr_jpeg_layout L;
  NEED_CORPUS();
  snprintf(png, sizeof png, "%s/opencv4/html/board.jpg", OPENCV_DIR);
  REQUIRE_OK(mlsys_read_file(png, &d, &n));
  CHECK_EQ_INT(mlsys_pcr_jpeg_to_progressive((uint8_t *)d, n, NULL, &out, &olen), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "PNG");
  CHECK_EQ_INT(mlsys_pcr_jpeg_split((uint8_t *)d, n, &L), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "PNG");
  mlsys_free(d);
  snprintf(png, sizeof png, "%s/examples/data/fruits.jpg", OPENCV_DIR);
  REQUIRE(is_jpeg_file(png, &in, &n));
  /* truncated: the first 400 bytes, and cuts through the progressive file's scans */
  CHECK_EQ_INT(mlsys_pcr_jpeg_to_progressive(in, 400, NULL, &out, &olen), MLSYS_ERR_PARSE);
  REQUIRE_OK(mlsys_pcr_jpeg_to_progressive(in, n, NULL, &out, &olen));
  for (cut = 0; cut < olen - 1; cut += olen / 37 + 1) {
    mlsys_status st = mlsys_pcr_jpeg_split(out, cut, &L);
    CHECK_MSG(st == MLSYS_ERR_PARSE, "cut at %zu: %d", cut, st);
  }
  CHECK_EQ_INT(mlsys_pcr_jpeg_split(out, olen - 1, &L), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  /* every single-byte change of the progressive file: no crash, and either a clean split or a named error */
  {
    size_t i;
    int errors = 0;
    uint8_t *copy = (uint8_t *)mlsys_alloc(olen, 1);
    for (i = 0; i < olen; i += 97) {
      memcpy(copy, out, olen);
      copy[i] ^= 0xFF;
      if (mlsys_pcr_jpeg_split(copy, olen, &L) != MLSYS_OK) { errors++; CHECK(mlsys_last_error()[0] != 0); }
      if (mlsys_pcr_jpeg_to_progressive(copy, olen, NULL, &t, &tl) == MLSYS_OK) mlsys_free(t);
    }
    printf("  %d of %zu single-byte flips refused by the marker walk\n", errors, (olen + 96) / 97);
    mlsys_free(copy);
  }
  CHECK_EQ_INT(mlsys_pcr_jpeg_split(out, 0, &L), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_jpeg_to_progressive(out, 0, NULL, &t, &tl), MLSYS_ERR_PARSE);
  mlsys_free(out);
  mlsys_free(in);
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  corpus_free();
  return rc;
}
