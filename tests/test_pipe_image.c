/* tests/test_pipe_image.c — the image layer of mlsys_pipeline.h (spec §7.4–7.6, cases 17–18): magic-byte sniffing,
   the strict JPEG structure check, stb_image and libjpeg-turbo on the real photos of opencv-doc (§7.5: 612 JPEGs and 3
   PNGs named .jpg) with DCT-domain downscaling, truncated and damaged files, CMYK refusal, RandomResizedCrop's box,
   bilinear resizing against a double-precision reference, flip and normalisation, the UDFs through the runtime
   (shapes, determinism across seeds, workers and parallelism, skipping damaged files), the fused UDF, and the file
   listing (sorting, links, errors). The corpus comes from the opencv-doc package (scripts/install-deps.sh). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"
#include <jpeglib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CORPUS "/usr/share/doc/opencv-doc"
#define PHOTOS CORPUS "/examples/data"

static const mlsys_pipe_decode_desc STB = {MLSYS_PIPE_DEC_STB, 1, 0, 0};
static const mlsys_pipe_decode_desc LIBJPEG = {MLSYS_PIPE_DEC_LIBJPEG, 1, 0, 0};

/* the corpus listing, made once; a missing package fails the test that needs it */
static char **corpus;
static int64_t ncorpus = -1;
static int corpus_ok(void) {
  struct stat st;
  if (ncorpus < 0) {
    if (stat(CORPUS, &st) != 0) {
      test__fail(__FILE__, __LINE__, "%s is missing: run scripts/install-deps.sh (Debian package opencv-doc)", CORPUS);
      return 0;
    }
    if (mlsys_pipe_list_images(CORPUS, &corpus, &ncorpus) != MLSYS_OK) {
      test__fail(__FILE__, __LINE__, "list_images(%s): %s", CORPUS, mlsys_last_error());
      ncorpus = -1;
      return 0;
    }
  }
  return 1;
}
static const char *base(const char *p) { const char *s = strrchr(p, '/'); return s ? s + 1 : p; }
static uint8_t *slurp(const char *path, size_t *n) {
  char *b = NULL;
  if (mlsys_read_file(path, &b, n) != MLSYS_OK) test__fail(__FILE__, __LINE__, "read %s: %s", path, mlsys_last_error());
  return (uint8_t *)b;
}

TEST(sniff_magic_bytes) {
  static const uint8_t jpg[] = {0xFF, 0xD8, 0xFF, 0xE0}, png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0};
  uint8_t bmp[26] = {'B', 'M'}, webp[12];
  CHECK_EQ_INT(mlsys_pipe_image_sniff(jpg, sizeof jpg), MLSYS_PIPE_IMG_JPEG);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(jpg, 2), MLSYS_PIPE_IMG_UNKNOWN);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(png, sizeof png), MLSYS_PIPE_IMG_PNG);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(png, 7), MLSYS_PIPE_IMG_UNKNOWN);
  CHECK_EQ_INT(mlsys_pipe_image_sniff((const uint8_t *)"GIF89a..", 8), MLSYS_PIPE_IMG_GIF);
  CHECK_EQ_INT(mlsys_pipe_image_sniff((const uint8_t *)"GIF88a..", 8), MLSYS_PIPE_IMG_UNKNOWN);
  memcpy(webp, "RIFF\x10\0\0\0WEBP", 12);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(webp, 12), MLSYS_PIPE_IMG_WEBP);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(bmp, sizeof bmp), MLSYS_PIPE_IMG_UNKNOWN);   /* "BM" without a DIB header */
  bmp[14] = 40;
  CHECK_EQ_INT(mlsys_pipe_image_sniff(bmp, sizeof bmp), MLSYS_PIPE_IMG_BMP);
  CHECK_EQ_INT(mlsys_pipe_image_sniff(NULL, 0), MLSYS_PIPE_IMG_UNKNOWN);
  CHECK_STR(mlsys_pipe_image_format_name(MLSYS_PIPE_IMG_PNG), "PNG");
  CHECK_STR(mlsys_pipe_image_format_name(MLSYS_PIPE_IMG_WEBP), "WebP");
  CHECK_STR(mlsys_pipe_image_format_name(99), "unknown");
}

TEST(list_images_opencv_corpus) {
  static const char *const pngs[3] = {"opencv4/html/board.jpg", "opencv4/html/charucoboard.jpg",
                                      "opencv4/html/checkershadow_illusion4med_proof.jpg"};
  int64_t i, njpeg = 0, npng = 0;
  REQUIRE(corpus_ok());
  CHECK_MSG(ncorpus >= 600, "%lld images", (long long)ncorpus);
  for (i = 1; i < ncorpus; i++) CHECK_MSG(strcmp(corpus[i - 1], corpus[i]) < 0, "%s before %s", corpus[i - 1], corpus[i]);
  for (i = 0; i < ncorpus; i++) {
    size_t n;
    uint8_t *b = slurp(corpus[i], &n);
    int fmt = mlsys_pipe_image_sniff(b, n);
    if (fmt == MLSYS_PIPE_IMG_PNG) {
      int k, known = 0;
      for (k = 0; k < 3; k++) known |= !strcmp(corpus[i] + strlen(CORPUS) + 1, pngs[k]);
      CHECK_MSG(known, "unexpected PNG %s", corpus[i]);
      npng++;
    } else {
      mlsys_pipe_jpeg_info info;
      CHECK_MSG(fmt == MLSYS_PIPE_IMG_JPEG, "%s sniffs as %s", corpus[i], mlsys_pipe_image_format_name(fmt));
      CHECK_MSG(mlsys_pipe_jpeg_check(b, n, &info) == MLSYS_OK, "%s: %s", corpus[i], mlsys_last_error());
      njpeg++;
    }
    mlsys_free(b);
  }
  CHECK_EQ_INT(npng, 3);
  CHECK_EQ_INT(njpeg, ncorpus - 3);
  printf("    %lld files: %lld JPEG, %lld PNG\n", (long long)ncorpus, (long long)njpeg, (long long)npng);
}

/* a scratch directory tree: a.jpg, B.JPEG, c.txt, sub/d.jpeg, sub/e.jpg.txt, link.jpg → a.jpg (the same file),
   subdir_link → sub (not entered), dangling.jpg → nowhere, sub/hard.jpg = a hard link to sub/d.jpeg */
TEST(list_images_links_and_errors) {
  char root[] = "/tmp/mlsys_list_XXXXXX", p[512], **paths = NULL;
  static const char *const files[] = {"a.jpg", "B.JPEG", "c.txt", "sub/d.jpeg", "sub/e.jpg.txt"};
  int64_t n = -1;
  size_t i;
  REQUIRE(mkdtemp(root));
  snprintf(p, sizeof p, "%s/sub", root);
  REQUIRE(mkdir(p, 0700) == 0);
  for (i = 0; i < sizeof files / sizeof files[0]; i++) {
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", root, files[i]);
    REQUIRE((f = fopen(p, "wb")) != NULL);
    fputs(files[i], f);
    fclose(f);
  }
  snprintf(p, sizeof p, "%s/link.jpg", root); CHECK(symlink("a.jpg", p) == 0);
  snprintf(p, sizeof p, "%s/subdir_link", root); CHECK(symlink("sub", p) == 0);
  snprintf(p, sizeof p, "%s/dangling.jpg", root); CHECK(symlink("nowhere.jpg", p) == 0);
  {
    char q[512];
    snprintf(p, sizeof p, "%s/sub/d.jpeg", root);
    snprintf(q, sizeof q, "%s/sub/hard.jpg", root);
    CHECK(link(p, q) == 0);
  }
  CHECK_OK(mlsys_pipe_list_images(root, &paths, &n));
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    char want[512];
    snprintf(want, sizeof want, "%s/B.JPEG", root); CHECK_STR(paths[0], want);   /* strcmp order: 'B' < 'a' */
    snprintf(want, sizeof want, "%s/a.jpg", root); CHECK_STR(paths[1], want);    /* link.jpg is the same file */
    snprintf(want, sizeof want, "%s/sub/d.jpeg", root); CHECK_STR(paths[2], want); /* hard.jpg is too; subdir_link skipped */
  }
  mlsys_pipe_paths_free(paths, n);
  /* a trailing slash does not double the separator */
  snprintf(p, sizeof p, "%s/sub/", root);
  CHECK_OK(mlsys_pipe_list_images(p, &paths, &n));
  CHECK_EQ_INT(n, 1);
  if (n == 1) { CHECK(strstr(paths[0], "//") == NULL); CHECK_STR(base(paths[0]), "d.jpeg"); }
  mlsys_pipe_paths_free(paths, n);
  /* missing: an I/O error naming the directory; no image: n = 0 */
  snprintf(p, sizeof p, "%s/missing", root);
  CHECK_EQ_INT(mlsys_pipe_list_images(p, &paths, &n), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), p);
  CHECK(paths == NULL && n == 0);
  snprintf(p, sizeof p, "%s/empty", root);
  REQUIRE(mkdir(p, 0700) == 0);
  CHECK_OK(mlsys_pipe_list_images(p, &paths, &n));
  CHECK_EQ_INT(n, 0);
  mlsys_pipe_paths_free(paths, n);
  {
    static const char *const rm[] = {"a.jpg", "B.JPEG", "c.txt", "sub/d.jpeg", "sub/e.jpg.txt", "sub/hard.jpg", "link.jpg",
                                     "subdir_link", "dangling.jpg"};
    for (i = 0; i < sizeof rm / sizeof rm[0]; i++) { snprintf(p, sizeof p, "%s/%s", root, rm[i]); unlink(p); }
    snprintf(p, sizeof p, "%s/sub", root); rmdir(p);
    snprintf(p, sizeof p, "%s/empty", root); rmdir(p);
    rmdir(root);
  }
}

/* mean |a − b| of the means of the 8 × 8 blocks of two s × s RGB images: aliasing averages out, misplaced content does not */
static double block_mean_diff(const uint8_t *a, const uint8_t *b, int s) {
  double sum = 0;
  int bx, by, x, y, c;
  for (by = 0; by < s / 8; by++)
    for (bx = 0; bx < s / 8; bx++)
      for (c = 0; c < 3; c++) {
        double d = 0;
        for (y = by * 8; y < by * 8 + 8; y++)
          for (x = bx * 8; x < bx * 8 + 8; x++) d += (double)a[(y * s + x) * 3 + c] - (double)b[(y * s + x) * 3 + c];
        sum += fabs(d) / 64;
      }
  return sum / ((s / 8) * (s / 8) * 3);
}

static double mean_abs_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  double s = 0;
  size_t i;
  for (i = 0; i < n; i++) s += abs((int)a[i] - (int)b[i]);
  return n ? s / (double)n : 0;
}

/* Every JPEG of the corpus through both decoders: same size as the frame header says, nearly the same pixels (both
   use an integer IDCT and triangle ("fancy") chroma upsampling; they differ in rounding), gray frames replicated. */
TEST(decoders_agree_on_corpus) {
  int64_t i, ndec = 0, ngray = 0;
  double worst = 0, sum = 0;
  const char *worst_name = "";
  REQUIRE(corpus_ok());
  for (i = 0; i < ncorpus; i++) {
    size_t n;
    uint8_t *b = slurp(corpus[i], &n), *p1 = NULL, *p2 = NULL;
    int w1, h1, w2, h2;
    mlsys_pipe_jpeg_info info;
    if (mlsys_pipe_image_sniff(b, n) != MLSYS_PIPE_IMG_JPEG) { mlsys_free(b); continue; }
    CHECK_OK(mlsys_pipe_jpeg_check(b, n, &info));
    CHECK_MSG(mlsys_pipe_jpeg_decode(b, n, &STB, &p1, &w1, &h1) == MLSYS_OK, "stb %s: %s", corpus[i], mlsys_last_error());
    CHECK_MSG(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, &p2, &w2, &h2) == MLSYS_OK, "libjpeg %s: %s", corpus[i], mlsys_last_error());
    if (p1 && p2) {
      double d;
      CHECK_MSG(w1 == w2 && h1 == h2 && w1 == info.width && h1 == info.height, "%s: stb %dx%d, libjpeg %dx%d, SOF %dx%d",
                corpus[i], w1, h1, w2, h2, info.width, info.height);
      if (w1 == w2 && h1 == h2) {
        d = mean_abs_diff(p1, p2, (size_t)w1 * h1 * 3);
        sum += d;
        if (d > worst) { worst = d; worst_name = corpus[i]; }
        CHECK_MSG(d <= 1.0, "%s: mean |stb - libjpeg| = %.3f", corpus[i], d);
      }
      if (info.components == 1) {
        size_t k, bad = 0;
        for (k = 0; k < (size_t)w1 * h1; k++) bad += p1[3 * k] != p1[3 * k + 1] || p1[3 * k] != p1[3 * k + 2] ||
                                                     p2[3 * k] != p2[3 * k + 1] || p2[3 * k] != p2[3 * k + 2];
        CHECK_MSG(bad == 0, "%s: gray decoded with %zu non-gray pixels", corpus[i], bad);
        ngray++;
      }
      ndec++;
    }
    mlsys_free(p1); mlsys_free(p2); mlsys_free(b);
  }
  CHECK_EQ_INT(ndec, ncorpus - 3);
  CHECK(ngray > 0);
  printf("    %lld JPEGs (%lld gray): mean |stb - libjpeg| per image: max %.4f (%s), average %.4f\n", (long long)ndec,
         (long long)ngray, worst, base(worst_name), ndec ? sum / (double)ndec : 0.0);
}

/* scale_denom d: ⌈w/d⌉ × ⌈h/d⌉ from both decoders (libjpeg in the DCT domain on every file, stb's box average on every
   10th), and the two close to each other */
TEST(decode_scaled_sizes) {
  static const int ds[3] = {2, 4, 8};
  int64_t i;
  double worst[3] = {0, 0, 0};
  REQUIRE(corpus_ok());
  for (i = 0; i < ncorpus; i++) {
    size_t n;
    uint8_t *b = slurp(corpus[i], &n);
    mlsys_pipe_jpeg_info info;
    int k;
    if (mlsys_pipe_jpeg_check(b, n, &info) != MLSYS_OK) { mlsys_free(b); continue; }
    for (k = 0; k < 3; k++) {
      mlsys_pipe_decode_desc dl = LIBJPEG, ds_ = STB;
      uint8_t *p1 = NULL, *p2 = NULL;
      int w, h, w2, h2, d = ds[k];
      dl.scale_denom = ds_.scale_denom = d;
      CHECK_MSG(mlsys_pipe_jpeg_decode(b, n, &dl, &p1, &w, &h) == MLSYS_OK, "%s /%d: %s", corpus[i], d, mlsys_last_error());
      CHECK_MSG(w == (info.width + d - 1) / d && h == (info.height + d - 1) / d, "%s /%d: libjpeg %dx%d from %dx%d", corpus[i], d,
                w, h, info.width, info.height);
      if (i % 10 == 0) {
        CHECK_MSG(mlsys_pipe_jpeg_decode(b, n, &ds_, &p2, &w2, &h2) == MLSYS_OK, "%s /%d: %s", corpus[i], d, mlsys_last_error());
        CHECK(w2 == w && h2 == h);
        if (p1 && p2 && w2 == w && h2 == h) {
          double diff = mean_abs_diff(p1, p2, (size_t)w * h * 3);
          if (diff > worst[k]) worst[k] = diff;
          CHECK_MSG(diff <= 10.0, "%s /%d: mean |stb box - libjpeg DCT| = %.3f", corpus[i], d, diff);
        }
      }
      mlsys_free(p1); mlsys_free(p2);
    }
    mlsys_free(b);
  }
  printf("    max mean |stb box average - libjpeg DCT scaling|: /2 %.3f, /4 %.3f, /8 %.3f\n", worst[0], worst[1], worst[2]);
}

TEST(png_named_jpg) {
  static const struct { const char *name; int w, h; } pngs[3] = {
      {"board.jpg", 560, 780}, {"charucoboard.jpg", 1160, 1560}, {"checkershadow_illusion4med_proof.jpg", 84, 26}};
  int k;
  REQUIRE(corpus_ok());
  for (k = 0; k < 3; k++) {
    char path[256];
    size_t n;
    uint8_t *b, *p = NULL;
    int w, h;
    mlsys_pipe_decode_desc png = STB, png_lj = LIBJPEG;
    snprintf(path, sizeof path, "%s/opencv4/html/%s", CORPUS, pngs[k].name);
    b = slurp(path, &n);
    REQUIRE(b);
    CHECK_EQ_INT(mlsys_pipe_jpeg_check(b, n, NULL), MLSYS_ERR_PARSE);
    CHECK_STR(mlsys_last_error(), "not a JPEG: PNG data");
    CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, &p, &w, &h), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "PNG");
    CHECK(p == NULL);
    CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, NULL, &p, &w, &h), MLSYS_ERR_PARSE);   /* stb by default refuses too */
    CHECK_CONTAINS(mlsys_last_error(), "PNG");
    png_lj.accept_png = 1;   /* libjpeg never decodes PNG */
    CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &png_lj, &p, &w, &h), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "PNG");
    png.accept_png = 1;
    CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &png, &p, &w, &h));
    CHECK_MSG(w == pngs[k].w && h == pngs[k].h, "%s: %dx%d", pngs[k].name, w, h);
    mlsys_free(p);
    p = NULL;
    CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n - 20, &png, &p, &w, &h), MLSYS_ERR_PARSE);   /* cut inside the image data */
    CHECK_CONTAINS(mlsys_last_error(), "truncated: PNG");
    png.scale_denom = 4;
    CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &png, &p, &w, &h));
    CHECK(w == (pngs[k].w + 3) / 4 && h == (pngs[k].h + 3) / 4);
    mlsys_free(p);
    mlsys_free(b);
  }
}

/* status and message of both decoders on buf */
static void expect_fail_both(const uint8_t *b, size_t n, const char *needle, const char *what) {
  int d;
  for (d = 0; d < 2; d++) {
    uint8_t *p = (uint8_t *)1;
    int w = -1, h = -1;
    mlsys_status st = mlsys_pipe_jpeg_decode(b, n, d ? &LIBJPEG : &STB, &p, &w, &h);
    CHECK_MSG(st == MLSYS_ERR_PARSE, "%s (%s): status %d: %s", what, d ? "libjpeg" : "stb", (int)st, mlsys_last_error());
    CHECK_MSG(p == NULL && w == 0 && h == 0, "%s: outputs not cleared", what);
    if (needle) CHECK_MSG(strstr(mlsys_last_error(), needle) != NULL, "%s (%s): \"%s\" lacks \"%s\"", what, d ? "libjpeg" : "stb",
                          mlsys_last_error(), needle);
    mlsys_free(p == (uint8_t *)1 ? NULL : p);
  }
}

/* spec §7.6 test 18: a cut file fails on both paths, naming the truncation (the decoders alone would pad the scan) */
TEST(truncated_files_fail_on_both) {
  static const char *const photos[] = {"baboon.jpg", "fruits.jpg", "messi5.jpg", "starry_night.jpg", "Blender_Suzanne1.jpg", "ela_original.jpg"};
  static const double cuts[] = {0.25, 0.5, 0.9, 0.999};
  size_t i, k, nprog = 0;
  for (i = 0; i < sizeof photos / sizeof photos[0]; i++) {
    char path[256], what[320];
    size_t n;
    uint8_t *b;
    mlsys_pipe_jpeg_info info;
    snprintf(path, sizeof path, "%s/%s", PHOTOS, photos[i]);
    REQUIRE(corpus_ok());
    b = slurp(path, &n);
    REQUIRE(b);
    REQUIRE_OK(mlsys_pipe_jpeg_check(b, n, &info));
    nprog += info.sof == 0xC2;
    snprintf(what, sizeof what, "%s first 400 bytes", photos[i]);
    expect_fail_both(b, 400, "truncated", what);
    for (k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      size_t cut = (size_t)(cuts[k] * (double)n);
      snprintf(what, sizeof what, "%s cut at byte %zu of %zu", photos[i], cut, n);
      expect_fail_both(b, cut, "truncated", what);
    }
    /* without its last byte the EOI marker is gone */
    CHECK_EQ_INT(mlsys_pipe_jpeg_check(b, info.eoi + 1, NULL), MLSYS_ERR_PARSE);
    {
      char want[128];
      snprintf(want, sizeof want, "truncated: no EOI marker after the scan data (file ends at byte %zu)", info.eoi + 1);
      CHECK_STR(mlsys_last_error(), want);
    }
    mlsys_free(b);
  }
  printf("    %zu of %zu photos progressive\n", nprog, sizeof photos / sizeof photos[0]);
}

/* appending junk after EOI is allowed (bytes after EOI are not decoded) */
TEST(trailing_bytes_after_eoi) {
  size_t n;
  uint8_t *b, *b2, *p1 = NULL, *p2 = NULL;
  int w1, h1, w2, h2;
  REQUIRE(corpus_ok());
  b = slurp(PHOTOS "/baboon.jpg", &n);
  REQUIRE(b);
  b2 = (uint8_t *)malloc(n + 100);
  memcpy(b2, b, n);
  memset(b2 + n, 0xAB, 100);
  CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, &p1, &w1, &h1));
  CHECK_OK(mlsys_pipe_jpeg_decode(b2, n + 100, &LIBJPEG, &p2, &w2, &h2));
  CHECK(p1 && p2 && w1 == w2 && h1 == h2 && !memcmp(p1, p2, (size_t)w1 * h1 * 3));
  mlsys_free(p1); mlsys_free(p2);
  CHECK_OK(mlsys_pipe_jpeg_decode(b2, n + 100, &STB, &p2, &w2, &h2));
  mlsys_free(p2);
  free(b2);
  mlsys_free(b);
}

TEST(damaged_headers_fail_cleanly) {
  static const uint8_t soi[] = {0xFF, 0xD8}, soi_eoi[] = {0xFF, 0xD8, 0xFF, 0xD9}, one[] = {0xFF};
  static const uint8_t no_sof[] = {0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02, 0x00, 0xFF, 0xD9};
  static const uint8_t zero_size[] = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 8, 0, 0, 0, 16, 1, 1, 0x11, 0, 0xFF, 0xD9};
  static const char *const photos[] = {"baboon.jpg", "fruits.jpg", "aloeL.jpg", "left01.jpg"};
  size_t i;
  expect_fail_both(soi, 0, "empty", "empty");
  expect_fail_both(one, 1, "1 byte", "one byte");
  expect_fail_both(soi, 2, "truncated", "SOI only");
  expect_fail_both(soi_eoi, 4, "before any scan", "SOI EOI");
  expect_fail_both(no_sof, sizeof no_sof, "before any frame header", "SOS without SOF");
  expect_fail_both(zero_size, sizeof zero_size, "zero", "0 x 16 frame");
  expect_fail_both((const uint8_t *)"hello, world", 12, "no SOI", "text");
  CHECK_STR(mlsys_last_error(), "not a JPEG: no SOI marker (starts with 0x68 0x65)");
  {
    /* a DHT table of 16 × 17 = 272 codes (stb_image 2.27 would write past its tables) */
    uint8_t dht[4 + 2 + 17 + 272] = {0xFF, 0xD8, 0xFF, 0xC4, (uint8_t)((2 + 17 + 272) >> 8), (uint8_t)(2 + 17 + 272), 0x00};
    memset(dht + 7, 17, 16);
    expect_fail_both(dht, sizeof dht, "272 codes", "DHT of 272 codes");
  }
  REQUIRE(corpus_ok());
  for (i = 0; i < sizeof photos / sizeof photos[0]; i++) {
    char path[256], what[320];
    size_t n, pos = 2;
    uint8_t *b;
    int seg;
    snprintf(path, sizeof path, "%s/%s", PHOTOS, photos[i]);
    b = slurp(path, &n);
    REQUIRE(b);
    /* each header segment's length, high and low byte, XOR 0x40 and 0xFF */
    for (seg = 0; pos + 4 <= n && b[pos] == 0xFF && b[pos + 1] != 0xDA; seg++) {
      size_t len = (size_t)b[pos + 2] << 8 | b[pos + 3], k;
      for (k = 2; k < 4; k++) {
        static const uint8_t flips[2] = {0x40, 0xFF};
        int f;
        for (f = 0; f < 2; f++) {
          b[pos + k] ^= flips[f];
          snprintf(what, sizeof what, "%s: segment 0x%02X at byte %zu, length byte %zu ^ 0x%02X", photos[i], b[pos + 1], pos, k - 2, flips[f]);
          expect_fail_both(b, n, NULL, what);
          b[pos + k] ^= flips[f];
        }
      }
      pos += 2 + len;
    }
    CHECK(seg >= 3);
    if (pos + 6 <= n && b[pos + 1] == 0xDA) {
      /* the scan's first component selects Huffman tables 3 (never defined): refused before stb_image reads them */
      uint8_t keep = b[pos + 6];
      b[pos + 6] = 0x33;
      snprintf(what, sizeof what, "%s: SOS using undefined tables", photos[i]);
      expect_fail_both(b, n, "is not defined (no DHT)", what);
      b[pos + 6] = keep;
    }
    mlsys_free(b);
  }
}

/* a small JPEG written with libjpeg (the corpus has no CMYK, arithmetic-coded or restart-marker file) */
enum { ENC_ARITH = 1, ENC_RESTART = 2 };
static uint8_t *encode(J_COLOR_SPACE cs, int comps, int w, int h, int flags, unsigned long *n) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr je;
  unsigned char *out = NULL;
  uint8_t *row = (uint8_t *)malloc((size_t)w * comps), *copy;
  int x, y;
  ci.err = jpeg_std_error(&je);
  jpeg_create_compress(&ci);
  *n = 0;
  jpeg_mem_dest(&ci, &out, n);
  ci.image_width = (JDIMENSION)w; ci.image_height = (JDIMENSION)h; ci.input_components = comps; ci.in_color_space = cs;
  jpeg_set_defaults(&ci);
  if (flags & ENC_ARITH) ci.arith_code = TRUE;
  if (flags & ENC_RESTART) ci.restart_interval = 1;
  jpeg_start_compress(&ci, TRUE);
  for (y = 0; y < h; y++) {
    for (x = 0; x < w * comps; x++) row[x] = (uint8_t)(x * 7 + y * 3);
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  free(row);
  copy = (uint8_t *)malloc(*n);
  memcpy(copy, out, *n);
  free(out);
  return copy;
}

TEST(cmyk_gray_arithmetic_restart) {
  unsigned long n;
  uint8_t *b = encode(JCS_CMYK, 4, 33, 17, 0, &n), *p = NULL, *q = NULL;
  int w, h, d, w2, h2;
  mlsys_pipe_jpeg_info info;
  CHECK_OK(mlsys_pipe_jpeg_check(b, n, &info));
  CHECK(info.components == 4 && info.width == 33 && info.height == 17 && info.adobe_transform == 0);
  for (d = 0; d < 2; d++) {
    CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, d ? &LIBJPEG : &STB, &p, &w, &h), MLSYS_ERR_UNSUPPORTED);
    CHECK_CONTAINS(mlsys_last_error(), "CMYK");
  }
  free(b);
  /* gray: replicated into R = G = B */
  b = encode(JCS_GRAYSCALE, 1, 40, 24, 0, &n);
  for (d = 0; d < 2; d++) {
    int k, bad = 0;
    CHECK_OK(mlsys_pipe_jpeg_decode(b, n, d ? &LIBJPEG : &STB, &p, &w, &h));
    REQUIRE(p);
    CHECK(w == 40 && h == 24);
    for (k = 0; k < w * h; k++) bad += p[3 * k] != p[3 * k + 1] || p[3 * k] != p[3 * k + 2];
    CHECK_EQ_INT(bad, 0);
    mlsys_free(p);
  }
  free(b);
  /* arithmetic coding: libjpeg-turbo decodes it, stb_image refuses it by name */
  b = encode(JCS_RGB, 3, 24, 16, ENC_ARITH, &n);
  CHECK_OK(mlsys_pipe_jpeg_check(b, n, &info));
  CHECK_EQ_INT(info.sof, 0xC9);
  CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, &p, &w, &h));
  CHECK(w == 24 && h == 16);
  mlsys_free(p);
  CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &STB, &p, &w, &h), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "arithmetic");
  free(b);
  /* restart markers inside the scan data are skipped by the check; both decoders agree */
  b = encode(JCS_RGB, 3, 64, 48, ENC_RESTART, &n);
  {
    size_t k, nrst = 0;
    for (k = 0; k + 1 < n; k++) nrst += b[k] == 0xFF && b[k + 1] >= 0xD0 && b[k + 1] <= 0xD7;
    CHECK(nrst >= 5);
  }
  CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, &p, &w, &h));
  CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &STB, &q, &w2, &h2));
  CHECK(p && q && w == w2 && h == h2 && mean_abs_diff(p, q, (size_t)w * h * 3) < 1.0);
  mlsys_free(p); mlsys_free(q);
  free(b);
}

TEST(decode_options_and_limits) {
  size_t n;
  uint8_t *b, *p = NULL;
  int w, h;
  mlsys_pipe_decode_desc o = LIBJPEG;
  REQUIRE(corpus_ok());
  b = slurp(PHOTOS "/baboon.jpg", &n);   /* 512 × 512 */
  REQUIRE(b);
  o.max_pixels = 512 * 512 - 1;
  CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &o, &p, &w, &h), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "512 x 512");
  o.max_pixels = 512 * 512;
  CHECK_OK(mlsys_pipe_jpeg_decode(b, n, &o, &p, &w, &h));
  mlsys_free(p);
  o.scale_denom = 3;
  CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &o, &p, &w, &h), MLSYS_ERR_ARG);
  o.scale_denom = 1; o.decoder = 7;
  CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &o, &p, &w, &h), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_jpeg_decode(b, n, &LIBJPEG, NULL, &w, &h), MLSYS_ERR_ARG);
  mlsys_free(b);
}

/* torchvision's RandomResizedCrop.get_params, transcribed with the same RNG calls in the same order */
static void ref_get_params(int width, int height, double s0, double s1, double r0, double r1, mlsys_rng *r, int box[4], int *fb) {
  double area = (double)height * width, lr0 = log(r0), lr1 = log(r1), in_ratio;
  int attempt, w, h;
  for (attempt = 0; attempt < 10; attempt++) {
    double target_area = area * (s0 + (s1 - s0) * mlsys_rng_uniform(r));
    double aspect_ratio = exp(lr0 + (lr1 - lr0) * mlsys_rng_uniform(r));
    w = (int)nearbyint(sqrt(target_area * aspect_ratio));
    h = (int)nearbyint(sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int i = mlsys_rng_range(r, 0, height - h), j = mlsys_rng_range(r, 0, width - w);
      box[0] = j; box[1] = i; box[2] = w; box[3] = h; *fb = 0;
      return;
    }
  }
  in_ratio = (double)width / height;
  if (in_ratio < r0) { w = width; h = (int)nearbyint(w / r0); }
  else if (in_ratio > r1) { h = height; w = (int)nearbyint(h * r1); }
  else { w = width; h = height; }
  box[0] = (width - w) / 2; box[1] = (height - h) / 2; box[2] = w; box[3] = h; *fb = 1;
}

TEST(rrc_box_matches_torchvision) {
  static const int sizes[][2] = {{500, 375}, {1000, 100}, {37, 1200}, {3, 2}};
  mlsys_rng a, b;
  size_t s;
  int i, mismatch = 0;
  mlsys_rng_seed(&a, 99); mlsys_rng_seed(&b, 99);
  for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (i = 0; i < 10000; i++) {
      int b1[4], b2[4], f1, f2;
      REQUIRE_OK(mlsys_pipe_rrc_box(sizes[s][0], sizes[s][1], NULL, &a, b1, &f1));
      ref_get_params(sizes[s][0], sizes[s][1], 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, &b, b2, &f2);
      mismatch += memcmp(b1, b2, sizeof b1) != 0 || f1 != f2;
    }
  CHECK_EQ_INT(mismatch, 0);
  CHECK(!memcmp(&a, &b, sizeof a));
}

TEST(rrc_box_properties) {
  static const int sizes[][2] = {{500, 375}, {375, 500}, {224, 224}, {1000, 100}, {37, 1200}, {3, 2}};
  mlsys_rng r;
  size_t s;
  int box[4], fb, i;
  mlsys_pipe_crop_desc d;
  mlsys_rng_seed(&r, 11);
  for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int w = sizes[s][0], h = sizes[s][1], nfb = 0, bad = 0;
    double fmin_ = 2, fmax_ = 0, rmin = 9, rmax = 0;
    for (i = 0; i < 10000; i++) {
      double cw, ch;
      REQUIRE_OK(mlsys_pipe_rrc_box(w, h, NULL, &r, box, &fb));
      bad += box[0] < 0 || box[1] < 0 || box[2] < 1 || box[3] < 1 || box[0] + box[2] > w || box[1] + box[3] > h;
      if (fb) { nfb++; continue; }
      /* sides are the rounded √(A·r), √(A/r): the drawn A/(w·h) ∈ [0.08, 1] and r ∈ [3/4, 4/3] are within half a pixel */
      cw = box[2]; ch = box[3];
      bad += (cw + 0.5) * (ch + 0.5) < 0.08 * w * h || (cw - 0.5) * (ch - 0.5) > (double)w * h;
      bad += (cw + 0.5) / (ch - 0.5) < 0.75 || (cw - 0.5) / (ch + 0.5) > 4.0 / 3.0;
      fmin_ = fmin(fmin_, cw * ch / ((double)w * h)); fmax_ = fmax(fmax_, cw * ch / ((double)w * h));
      rmin = fmin(rmin, cw / ch); rmax = fmax(rmax, cw / ch);
    }
    CHECK_MSG(bad == 0, "%dx%d: %d boxes outside the image or the ranges", w, h, bad);
    if (w >= 224 && h >= 224) {   /* the draws cover the ranges */
      CHECK_MSG(fmin_ < 0.09 && fmax_ > 0.97 && rmin < 0.77 && rmax > 1.3, "%dx%d: area %.3f..%.3f, ratio %.3f..%.3f", w, h, fmin_,
                fmax_, rmin, rmax);
      CHECK_MSG(nfb < 100, "%dx%d: %d fallbacks", w, h, nfb);
    }
    printf("    %dx%d: %d of 10000 fell back to the centre crop\n", w, h, nfb);
  }
  /* fallback: a 1000 × 10 strip with scale (0.9, 1): no 3/4..4/3 box fits, so the centre crop clamped to ratio 4/3 */
  memset(&d, 0, sizeof d);
  d.scale_lo = 0.9; d.scale_hi = 1.0;
  for (i = 0; i < 100; i++) {
    REQUIRE_OK(mlsys_pipe_rrc_box(1000, 10, &d, &r, box, &fb));
    CHECK(fb == 1 && box[0] == 493 && box[1] == 0 && box[2] == 13 && box[3] == 10);   /* round(10 · 4/3) = 13 */
  }
  REQUIRE_OK(mlsys_pipe_rrc_box(10, 1000, &d, &r, box, &fb));
  CHECK(fb == 1 && box[0] == 0 && box[1] == 493 && box[2] == 10 && box[3] == 13);      /* round(10 / (3/4)) = 13 */
  d.ratio_lo = 0.01; d.ratio_hi = 1000;   /* the ratio range holds the image's: the whole image */
  d.scale_lo = 1.5; d.scale_hi = 2;
  REQUIRE_OK(mlsys_pipe_rrc_box(1000, 10, &d, &r, box, &fb));
  CHECK(fb == 1 && box[0] == 0 && box[1] == 0 && box[2] == 1000 && box[3] == 10);
  /* the same seed gives the same boxes */
  {
    mlsys_rng a, b;
    int ba[4], bb[4], same = 1;
    mlsys_rng_seed(&a, 5); mlsys_rng_seed(&b, 5);
    for (i = 0; i < 1000; i++) {
      mlsys_pipe_rrc_box(640, 480, NULL, &a, ba, NULL);
      mlsys_pipe_rrc_box(640, 480, NULL, &b, bb, NULL);
      same &= !memcmp(ba, bb, sizeof ba);
    }
    CHECK(same);
  }
  /* bad arguments */
  memset(&d, 0, sizeof d);
  CHECK_EQ_INT(mlsys_pipe_rrc_box(0, 10, NULL, &r, box, NULL), MLSYS_ERR_ARG);
  d.scale_lo = 0.5; d.scale_hi = 0.1;
  CHECK_EQ_INT(mlsys_pipe_rrc_box(10, 10, &d, &r, box, NULL), MLSYS_ERR_ARG);
  d.scale_lo = 0; d.scale_hi = 0; d.ratio_lo = -1; d.ratio_hi = 1;
  CHECK_EQ_INT(mlsys_pipe_rrc_box(10, 10, &d, &r, box, NULL), MLSYS_ERR_ARG);
}

/* the textbook formula in double precision: half-pixel centres, clamped to the box, rounded to nearest */
static void resize_ref(const uint8_t *src, int sw, int x, int y, int cw, int ch, uint8_t *dst, int dw, int dh) {
  int i, j, c;
  for (i = 0; i < dh; i++)
    for (j = 0; j < dw; j++) {
      double sy = fmin(fmax((i + 0.5) * ch / dh - 0.5, 0), ch - 1), sx = fmin(fmax((j + 0.5) * cw / dw - 0.5, 0), cw - 1);
      int y0 = (int)floor(sy), x0 = (int)floor(sx), y1 = y0 + 1 < ch ? y0 + 1 : y0, x1 = x0 + 1 < cw ? x0 + 1 : x0;
      double fy = sy - y0, fx = sx - x0;
      for (c = 0; c < 3; c++) {
#define PX(yy, xx) ((double)src[((size_t)(y + (yy)) * sw + (x + (xx))) * 3 + c])
        double v = (1 - fy) * ((1 - fx) * PX(y0, x0) + fx * PX(y0, x1)) + fy * ((1 - fx) * PX(y1, x0) + fx * PX(y1, x1));
#undef PX
        dst[((size_t)i * dw + j) * 3 + c] = (uint8_t)floor(v + 0.5);
      }
    }
}

TEST(resize_bilinear_properties) {
  enum { W = 61, H = 47 };
  static uint8_t src[W * H * 3], out[200 * 200 * 3], ref[200 * 200 * 3];
  mlsys_rng r;
  int i, t, x, c, worst = 0;
  mlsys_rng_seed(&r, 3);
  for (i = 0; i < W * H * 3; i++) src[i] = (uint8_t)mlsys_rng_below(&r, 256);
  /* identity */
  CHECK_OK(mlsys_pipe_resize_bilinear(src, W, H, 0, 0, W, H, out, W, H));
  CHECK(!memcmp(src, out, sizeof src));
  /* a constant image stays constant */
  {
    static uint8_t k[W * H * 3];
    memset(k, 173, sizeof k);
    CHECK_OK(mlsys_pipe_resize_bilinear(k, W, H, 3, 5, 40, 30, out, 97, 13));
    for (i = 0; i < 97 * 13 * 3; i++) if (out[i] != 173) break;
    CHECK_EQ_INT(i, 97 * 13 * 3);
  }
  /* a horizontal gradient stays monotone along rows, up- and downscaled */
  {
    static uint8_t g[W * H * 3];
    int sizes[2] = {150, 20}, s, bad = 0;
    for (i = 0; i < W * H; i++) for (c = 0; c < 3; c++) g[i * 3 + c] = (uint8_t)((i % W) * 4);
    for (s = 0; s < 2; s++) {
      CHECK_OK(mlsys_pipe_resize_bilinear(g, W, H, 0, 0, W, H, out, sizes[s], 9));
      for (i = 0; i < 9; i++)
        for (x = 1; x < sizes[s]; x++) bad += out[(i * sizes[s] + x) * 3] < out[(i * sizes[s] + x - 1) * 3];
    }
    CHECK_EQ_INT(bad, 0);
  }
  /* random boxes and sizes against the double-precision reference */
  for (t = 0; t < 300; t++) {
    int cw = 1 + (int)mlsys_rng_below(&r, W), ch = 1 + (int)mlsys_rng_below(&r, H);
    int bx = (int)mlsys_rng_below(&r, (uint64_t)(W - cw + 1)), by = (int)mlsys_rng_below(&r, (uint64_t)(H - ch + 1));
    int dw = 1 + (int)mlsys_rng_below(&r, 200), dh = 1 + (int)mlsys_rng_below(&r, 200);
    REQUIRE_OK(mlsys_pipe_resize_bilinear(src, W, H, bx, by, cw, ch, out, dw, dh));
    resize_ref(src, W, bx, by, cw, ch, ref, dw, dh);
    for (i = 0; i < dw * dh * 3; i++) { int e = abs((int)out[i] - (int)ref[i]); if (e > worst) worst = e; }
  }
  CHECK_MSG(worst <= 1, "max |resize - reference| = %d", worst);
  /* boxes outside the image */
  CHECK_EQ_INT(mlsys_pipe_resize_bilinear(src, W, H, 1, 0, W, H, out, 5, 5), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_resize_bilinear(src, W, H, 0, -1, 4, 4, out, 5, 5), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_resize_bilinear(src, W, H, 0, 0, 4, 4, out, 0, 5), MLSYS_ERR_ARG);
}

TEST(flip_and_normalize) {
  enum { W = 7, H = 3 };
  uint8_t img[W * H * 3], orig[W * H * 3];
  float f[W * H * 3];
  int i, c;
  mlsys_pipe_norm_desc nd;
  for (i = 0; i < W * H * 3; i++) orig[i] = img[i] = (uint8_t)(i * 37 + 1);
  mlsys_pipe_hflip(img, W, H);
  for (i = 0; i < W * H; i++)
    for (c = 0; c < 3; c++) CHECK_EQ_INT(img[i * 3 + c], orig[((i / W) * W + (W - 1 - i % W)) * 3 + c]);
  mlsys_pipe_hflip(img, W, H);
  CHECK(!memcmp(img, orig, sizeof img));
  /* ImageNet defaults: pixel (0, 128, 255) */
  img[0] = 0; img[1] = 128; img[2] = 255;
  CHECK_OK(mlsys_pipe_normalize(img, W * H, NULL, f));
  CHECK_EQ_INT(f[0] == (float)((0 / 255.0 - 0.485) / 0.229), 1);
  CHECK_EQ_INT(f[1] == (float)((128 / 255.0 - 0.456) / 0.224), 1);
  CHECK_EQ_INT(f[2] == (float)((255 / 255.0 - 0.406) / 0.225), 1);
  CHECK_NEAR(f[2], 2.64, 1e-6);
  for (i = 0; i < W * H * 3; i++) {
    static const double m[3] = {0.485, 0.456, 0.406}, s[3] = {0.229, 0.224, 0.225};
    if (f[i] != (float)((img[i] / 255.0 - m[i % 3]) / s[i % 3])) break;
  }
  CHECK_EQ_INT(i, W * H * 3);
  memset(&nd, 0, sizeof nd);
  nd.mean[0] = nd.mean[1] = nd.mean[2] = 0.5;
  nd.std[0] = nd.std[1] = nd.std[2] = 0.5;
  CHECK_OK(mlsys_pipe_normalize(img, 1, &nd, f));
  CHECK(f[0] == -1.0f && f[2] == 1.0f);
  nd.std[1] = 0;
  CHECK_EQ_INT(mlsys_pipe_normalize(img, 1, &nd, f), MLSYS_ERR_ARG);
}

/* element: component 0 = n bytes of data (1-D, or shaped {shape[0], shape[1], shape[2]}), component 1 = an I64 label */
static void make_elem(mlsys_pipe_elem *e, const void *data, size_t n, int dtype, const int64_t *shape3, int64_t label) {
  memset(e, 0, sizeof *e);
  memcpy(mlsys_pipe_tensor_alloc(e, 0, n, dtype), data, n);
  if (shape3) { e->comp[0].ndim = 3; memcpy(e->comp[0].shape, shape3, 3 * sizeof(int64_t)); }
  *(int64_t *)mlsys_pipe_tensor_alloc(e, 1, 8, MLSYS_PIPE_I64) = label;
}

TEST(udfs_check_inputs_and_pass_labels) {
  mlsys_pipe_elem in, out;
  mlsys_pipe_rng rng;
  uint8_t px[4 * 5 * 3] = {0};
  int64_t shape[3] = {4, 5, 3}, bad_shape[3] = {4, 5, 4}, flat[1] = {60};
  mlsys_pipe_crop_desc cd;
  memset(&cd, 0, sizeof cd);
  cd.size = 8;
  mlsys_rng_seed(&rng.r, 1);
  memset(&out, 0, sizeof out);
  make_elem(&in, px, sizeof px, MLSYS_PIPE_U8, shape, 42);
  CHECK_EQ_INT(mlsys_pipe_udf_random_resized_crop(&cd, &in, &out, &rng), 0);
  CHECK(out.ncomp == 2 && out.comp[0].ndim == 3 && out.comp[0].shape[0] == 8 && out.comp[0].shape[1] == 8 && out.comp[0].shape[2] == 3);
  CHECK(out.comp[0].nbytes == 8 * 8 * 3 && out.comp[1].dtype == MLSYS_PIPE_I64 && *(int64_t *)out.comp[1].data == 42);
  mlsys_pipe_elem_release(&out);
  {
    /* flip: exactly one uniform per call, mirroring when it is < 0.5 */
    int t, nflip = 0;
    for (t = 0; t < 64; t++) {
      mlsys_pipe_rng before = rng;
      mlsys_pipe_elem pix;
      uint8_t img[4 * 5 * 3];
      int flipped;
      for (flipped = 0; flipped < (int)sizeof img; flipped++) img[flipped] = (uint8_t)(flipped * 11 + t);
      make_elem(&pix, img, sizeof img, MLSYS_PIPE_U8, shape, 7);
      REQUIRE(mlsys_pipe_udf_flip(NULL, &pix, &out, &rng) == 0);
      flipped = mlsys_rng_uniform(&before.r) < 0.5;
      CHECK(!memcmp(&before.r, &rng.r, sizeof rng.r));
      mlsys_pipe_hflip(img, 5, 4);
      CHECK(memcmp(out.comp[0].data, flipped ? img : (uint8_t *)pix.comp[0].data, sizeof img) == 0);
      CHECK(*(int64_t *)out.comp[1].data == 7);
      nflip += flipped;
      mlsys_pipe_elem_release(&out);
      mlsys_pipe_elem_release(&pix);
    }
    CHECK(nflip > 10 && nflip < 54);
  }
  CHECK_EQ_INT(mlsys_pipe_udf_normalize(NULL, &in, &out, &rng), 0);
  CHECK(out.comp[0].dtype == MLSYS_PIPE_F32 && out.comp[0].nbytes == sizeof px * 4 && out.comp[0].shape[1] == 5);
  mlsys_pipe_elem_release(&out);
  mlsys_pipe_elem_release(&in);
  /* not {h, w, 3} U8 */
  make_elem(&in, px, sizeof px, MLSYS_PIPE_U8, bad_shape, 0);
  CHECK_EQ_INT(mlsys_pipe_udf_random_resized_crop(&cd, &in, &out, &rng), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "random_resized_crop: component 0 must be an RGB8 image (U8 {h, w, 3}), got U8 {4, 5, 4}");
  CHECK(out.ncomp == 0 && out.comp[0].data == NULL);
  mlsys_pipe_elem_release(&in);
  make_elem(&in, px, sizeof px, MLSYS_PIPE_U8, NULL, 0);
  CHECK_EQ_INT(mlsys_pipe_udf_flip(NULL, &in, &out, &rng), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "flip: component 0 must be an RGB8 image");
  /* decode wants bytes, and names the file problem */
  CHECK_EQ_INT(mlsys_pipe_udf_decode(NULL, &in, &out, &rng), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "decode: not a JPEG");
  mlsys_pipe_elem_release(&in);
  make_elem(&in, flat, 8, MLSYS_PIPE_I64, NULL, 0);
  CHECK_EQ_INT(mlsys_pipe_udf_decode(NULL, &in, &out, &rng), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "decode: component 0 must be the file's bytes (U8)");
  mlsys_pipe_elem_release(&in);
}

/* the first n JPEG photos of examples/data as elements {bytes, label = index} */
static int load_photos(mlsys_pipe_elem *e, int n) {
  char **paths;
  int64_t np, i;
  int k = 0;
  if (!corpus_ok() || mlsys_pipe_list_images(PHOTOS, &paths, &np) != MLSYS_OK) return 0;
  for (i = 0; i < np && k < n; i++) {
    size_t len;
    uint8_t *b = slurp(paths[i], &len);
    if (mlsys_pipe_image_sniff(b, len) == MLSYS_PIPE_IMG_JPEG) { make_elem(&e[k], b, len, MLSYS_PIPE_U8, NULL, k); k++; }
    mlsys_free(b);
  }
  mlsys_pipe_paths_free(paths, np);
  return k;
}

/* from_memory(photos) → decode → random_resized_crop 224 → flip → batch 4; all bytes of all batches into *out */
static mlsys_status run_pipeline(const mlsys_pipe_elem *e, int n, uint64_t seed, int workers, int par, int fused, uint8_t **out,
                                 size_t *nout, int64_t *labels) {
  mlsys_pipe_desc pd;
  memset(&pd, 0, sizeof pd);
  pd.workers = workers; pd.seed = seed;
  mlsys_pipe_map_desc md;
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem b;
  static mlsys_pipe_decode_crop_flip_desc fd;
  int a, m1, m2, m3, root, end = 0;
  mlsys_status st;
  size_t cap = 0;
  *out = NULL; *nout = 0;
  if ((st = mlsys_pipe_create(&pd, &p))) return st;
  memset(&md, 0, sizeof md);
  md.parallelism = par;
  if ((st = mlsys_pipe_from_memory(p, e, n, &a))) goto done;
  if (fused) {
    md.fn = mlsys_pipe_udf_decode_crop_flip; md.user = &fd;
    if ((st = mlsys_pipe_map(p, a, &md, &m3))) goto done;
  } else {
    md.fn = mlsys_pipe_udf_decode; md.name = "decode";
    if ((st = mlsys_pipe_map(p, a, &md, &m1))) goto done;
    md.fn = mlsys_pipe_udf_random_resized_crop; md.name = "crop";
    if ((st = mlsys_pipe_map(p, m1, &md, &m2))) goto done;
    md.fn = mlsys_pipe_udf_flip; md.name = "flip";
    if ((st = mlsys_pipe_map(p, m2, &md, &m3))) goto done;
  }
  if ((st = mlsys_pipe_batch(p, m3, 4, 0, &root))) goto done;
  if ((st = mlsys_pipe_open(p, root, &it))) goto done;
  for (;;) {
    if ((st = mlsys_pipe_next(it, &b, &end)) || end) break;
    if (b.comp[0].ndim != 4 || b.comp[0].shape[0] != 4 || b.comp[0].shape[1] != 224 || b.comp[0].shape[2] != 224 ||
        b.comp[0].shape[3] != 3 || b.comp[0].nbytes != (size_t)4 * 224 * 224 * 3 || b.ncomp != 2 || b.comp[1].nbytes != 32) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "batch of shape %d-D {%lld, %lld, %lld, %lld}", b.comp[0].ndim, (long long)b.comp[0].shape[0],
                           (long long)b.comp[0].shape[1], (long long)b.comp[0].shape[2], (long long)b.comp[0].shape[3]);
      mlsys_pipe_elem_release(&b);
      break;
    }
    if (*nout + b.comp[0].nbytes > cap) { cap = 2 * cap + b.comp[0].nbytes; *out = (uint8_t *)realloc(*out, cap); }
    memcpy(*out + *nout, b.comp[0].data, b.comp[0].nbytes);
    memcpy(labels + *nout / ((size_t)224 * 224 * 3), b.comp[1].data, 32);
    *nout += b.comp[0].nbytes;
    mlsys_pipe_elem_release(&b);
  }
  mlsys_pipe_close(it);
done:
  mlsys_pipe_destroy(p);
  return st;
}

/* spec §7.6 test 17 on 20 photos: shapes, labels in order, identical bytes for the same seed whatever the workers and
   parallelism, different bytes for another seed */
TEST(udf_pipeline_deterministic) {
  mlsys_pipe_elem e[20];
  uint8_t *ref = NULL, *o = NULL;
  size_t nref = 0, no = 0;
  int64_t labels[20], i;
  int n, cfg;
  static const int cfgs[3][2] = {{1, 1}, {2, 3}, {4, 3}};   /* workers, parallelism */
  n = load_photos(e, 20);
  REQUIRE(n == 20);
  REQUIRE_OK(run_pipeline(e, n, 7, 1, 1, 0, &ref, &nref, labels));
  CHECK_EQ_INT(nref, (size_t)20 * 224 * 224 * 3);
  for (i = 0; i < 20; i++) CHECK_EQ_INT(labels[i], i);
  for (cfg = 0; cfg < 3; cfg++) {
    CHECK_OK(run_pipeline(e, n, 7, cfgs[cfg][0], cfgs[cfg][1], 0, &o, &no, labels));
    CHECK_MSG(no == nref && o && !memcmp(o, ref, nref), "workers %d parallelism %d differ", cfgs[cfg][0], cfgs[cfg][1]);
    free(o);
  }
  CHECK_OK(run_pipeline(e, n, 8, 1, 1, 0, &o, &no, labels));
  CHECK(no == nref && o && memcmp(o, ref, nref) != 0);
  free(o);
  /* the fused UDF: same shapes, deterministic too */
  CHECK_OK(run_pipeline(e, n, 7, 1, 1, 1, &o, &no, labels));
  CHECK_EQ_INT(no, nref);
  free(ref);
  CHECK_OK(run_pipeline(e, n, 7, 2, 3, 1, &ref, &nref, labels));
  CHECK(no == nref && o && ref && !memcmp(o, ref, nref));
  free(o); free(ref);
  for (i = 0; i < n; i++) mlsys_pipe_elem_release(&e[i]);
}

/* spec §7.6 test 18 through the runtime: a truncated photo fails the pipeline naming its seq; with on_error = SKIP
   it and the PNG are dropped and counted */
TEST(udf_pipeline_damaged_elements) {
  mlsys_pipe_elem e[6];
  int n, skip;
  n = load_photos(e, 4);
  REQUIRE(n == 4);
  {
    size_t len;
    uint8_t *png = slurp(CORPUS "/opencv4/html/checkershadow_illusion4med_proof.jpg", &len);
    REQUIRE(png);
    make_elem(&e[4], png, len, MLSYS_PIPE_U8, NULL, 4);
    mlsys_free(png);
    make_elem(&e[5], e[0].comp[0].data, 400, MLSYS_PIPE_U8, NULL, 5);   /* the first photo's first 400 bytes */
  }
  for (skip = 0; skip < 2; skip++) {
    mlsys_pipe *p;
    mlsys_pipe_iter *it;
    mlsys_pipe_map_desc md;
    mlsys_pipe_elem out;
    int a, m, end = 0, count = 0;
    mlsys_status st;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_from_memory(p, e, 6, &a));
    memset(&md, 0, sizeof md);
    md.fn = mlsys_pipe_udf_decode; md.name = "decode"; md.on_error = skip;
    REQUIRE_OK(mlsys_pipe_map(p, a, &md, &m));
    REQUIRE_OK(mlsys_pipe_open(p, m, &it));
    for (;;) {
      if ((st = mlsys_pipe_next(it, &out, &end)) || end) break;
      CHECK(out.comp[0].ndim == 3 && out.comp[0].shape[2] == 3);
      mlsys_pipe_elem_release(&out);
      count++;
    }
    if (skip) {
      CHECK_OK(st);
      CHECK_EQ_INT(count, 4);
      CHECK_EQ_INT(mlsys_pipe_skipped(it, m), 2);
    } else {
      CHECK(st != MLSYS_OK);
      CHECK_EQ_INT(count, 4);
      CHECK_CONTAINS(mlsys_last_error(), "seq 4");
      CHECK_CONTAINS(mlsys_last_error(), "decode: not a JPEG: PNG data");
    }
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
  for (n = 0; n < 6; n++) mlsys_pipe_elem_release(&e[n]);
}

/* the fused UDF equals decode, then crop and flip drawing from one RNG; with auto_scale it decodes at a DCT scale
   that keeps the box at least the output size (96 here) and stays close to the full-size result */
TEST(fused_decode_crop_flip) {
  mlsys_pipe_elem e[8];
  int n, i, nscaled = 0;
  double worst = 0;
  n = load_photos(e, 8);
  REQUIRE(n == 8);
  for (i = 0; i < n; i++) {
    mlsys_pipe_decode_crop_flip_desc fd;
    mlsys_pipe_elem dec, crop, flip, fused, fused2;
    mlsys_pipe_rng r1, r2;
    memset(&fd, 0, sizeof fd);
    memset(&dec, 0, sizeof dec); memset(&crop, 0, sizeof crop); memset(&flip, 0, sizeof flip);
    memset(&fused, 0, sizeof fused); memset(&fused2, 0, sizeof fused2);
    fd.decode.decoder = MLSYS_PIPE_DEC_LIBJPEG;
    fd.crop.size = 96;
    fd.crop.scale_lo = 0.5; fd.crop.scale_hi = 1;   /* large boxes, so that auto_scale has room */
    mlsys_rng_seed(&r1.r, 100 + (uint64_t)i);
    r2 = r1;
    REQUIRE(mlsys_pipe_udf_decode(&fd.decode, &e[i], &dec, &r1) == 0);
    REQUIRE(mlsys_pipe_udf_random_resized_crop(&fd.crop, &dec, &crop, &r1) == 0);
    REQUIRE(mlsys_pipe_udf_flip(NULL, &crop, &flip, &r1) == 0);
    REQUIRE(mlsys_pipe_udf_decode_crop_flip(&fd, &e[i], &fused, &r2) == 0);
    CHECK(!memcmp(&r1.r, &r2.r, sizeof r1.r));   /* the same draws */
    CHECK(fused.ncomp == 2 && *(int64_t *)fused.comp[1].data == i);
    CHECK(fused.comp[0].nbytes == flip.comp[0].nbytes && !memcmp(fused.comp[0].data, flip.comp[0].data, flip.comp[0].nbytes));
    fd.auto_scale = 1;
    mlsys_rng_seed(&r2.r, 100 + (uint64_t)i);
    REQUIRE(mlsys_pipe_udf_decode_crop_flip(&fd, &e[i], &fused2, &r2) == 0);
    CHECK(!memcmp(&r1.r, &r2.r, sizeof r1.r));
    CHECK(fused2.comp[0].nbytes == fused.comp[0].nbytes);
    if (fused2.comp[0].nbytes == fused.comp[0].nbytes) {
      double d = block_mean_diff((const uint8_t *)fused.comp[0].data, (const uint8_t *)fused2.comp[0].data, 96);
      if (d > worst) worst = d;
      nscaled += memcmp(fused.comp[0].data, fused2.comp[0].data, fused.comp[0].nbytes) != 0;
      CHECK_MSG(d <= 3.0, "photo %d: 8 x 8 block means differ by %.3f on average (auto-scaled vs full-size)", i, d);
    }
    mlsys_pipe_elem_release(&dec); mlsys_pipe_elem_release(&crop); mlsys_pipe_elem_release(&flip);
    mlsys_pipe_elem_release(&fused); mlsys_pipe_elem_release(&fused2);
  }
  CHECK(nscaled > 0);
  printf("    auto_scale changed %d of %d crops; 8 x 8 block means of auto-scaled vs full-size differ by at most %.3f\n", nscaled, n, worst);
  for (i = 0; i < n; i++) mlsys_pipe_elem_release(&e[i]);
}

TEST_MAIN()
