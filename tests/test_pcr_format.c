/* tests/test_pcr_format.c — the PCR record format v1 (spec pcr.md §2.4–2.6, §3.1–3.3) on the real photographs of
   Debian's opencv-doc: the §7.4 cases T1–T3, T7–T10, T12–T17, T20, T21 with their expected answers (the fruits.jpg
   numbers are the spec's, measured with Debian libjpeg-turbo 2.1.5 and stb_image 2.27), plus the writer's options
   (alignment, store_as_is, spectral script, gray map, orientation, re-encodes) and bad input named by kind. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "mlsys_pcr.h"
#include "tests/test.h"
#include <jpeglib.h>

#include "tests/pcr_fixture.h"

/* T1 */
TEST(t1_crc32c_check_value) { CHECK_EQ_INT(mlsys_crc32c(0, "123456789", 9), 0xE3069283u); }

/* a deterministic 64×48 gradient (T2/T3), encoded by libjpeg itself with the given colour space and simple progression */
static uint8_t *gradient_jpeg(int ncomp, J_COLOR_SPACE cs, size_t *len) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr je;
  unsigned char *mem = NULL;
  unsigned long ml = 0;
  uint8_t px[64 * 48 * 3], *out;
  int x, y;
  for (y = 0; y < 48; y++)
    for (x = 0; x < 64; x++) {
      uint8_t *p = px + (y * 64 + x) * ncomp;
      p[0] = (uint8_t)(x * 4);
      if (ncomp == 3) { p[1] = (uint8_t)(y * 5); p[2] = (uint8_t)((x + y) * 2); }
    }
  ci.err = jpeg_std_error(&je);
  jpeg_create_compress(&ci);
  jpeg_mem_dest(&ci, &mem, &ml);
  ci.image_width = 64; ci.image_height = 48; ci.input_components = ncomp;
  ci.in_color_space = ncomp == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci);
  if (cs != JCS_UNKNOWN) jpeg_set_colorspace(&ci, cs);
  jpeg_set_quality(&ci, 90, TRUE);
  ci.optimize_coding = TRUE;
  jpeg_simple_progression(&ci);
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < 48) {
    JSAMPROW row = px + ci.next_scanline * 64 * ncomp;
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  out = (uint8_t *)malloc(ml);
  memcpy(out, mem, ml);
  free(mem);
  *len = ml;
  return out;
}

/* T2/T3: the scan scripts of §2.2 */
TEST(t2_t3_scan_scripts) {
  static const int colour[10][6] = {{3, 0, 0, 0, 0, 1}, {1, 1, 1, 5, 0, 2}, {1, 3, 1, 63, 0, 1}, {1, 2, 1, 63, 0, 1}, {1, 1, 6, 63, 0, 2},
                                    {1, 1, 1, 63, 2, 1}, {3, 0, 0, 0, 1, 0}, {1, 3, 1, 63, 1, 0}, {1, 2, 1, 63, 1, 0}, {1, 1, 1, 63, 1, 0}};
  static const int gray[6][5] = {{0, 0, 0, 1}, {1, 5, 0, 2}, {6, 63, 0, 2}, {1, 63, 2, 1}, {0, 0, 1, 0}, {1, 63, 1, 0}};
  mlsys_pcr_jpeg_layout L;
  size_t n;
  uint8_t *j;
  int s;
  j = gradient_jpeg(3, JCS_UNKNOWN, &n);
  REQUIRE_OK(mlsys_pcr_jpeg_split(j, n, &L));
  CHECK_EQ_INT(L.nscans, 10);
  for (s = 0; s < 10 && s < L.nscans; s++) {
    CHECK_EQ_INT(L.scan[s].ns, colour[s][0]);
    if (colour[s][0] == 1) CHECK_EQ_INT(L.scan[s].comp[0], colour[s][1]);   /* JFIF ids: 1 Y, 2 Cb, 3 Cr */
    CHECK_EQ_INT(L.scan[s].ss, colour[s][2]);
    CHECK_EQ_INT(L.scan[s].se, colour[s][3]);
    CHECK_EQ_INT(L.scan[s].ah, colour[s][4]);
    CHECK_EQ_INT(L.scan[s].al, colour[s][5]);
  }
  free(j);
  j = gradient_jpeg(1, JCS_UNKNOWN, &n);
  REQUIRE_OK(mlsys_pcr_jpeg_split(j, n, &L));
  CHECK_EQ_INT(L.nscans, 6);
  for (s = 0; s < 6 && s < L.nscans; s++) {
    CHECK(L.scan[s].ss == gray[s][0] && L.scan[s].se == gray[s][1] && L.scan[s].ah == gray[s][2] && L.scan[s].al == gray[s][3]);
  }
  free(j);
  /* RGB colour space: libjpeg's rule 2 + 4·3 = 14 scans; the lossless path refuses it, store_as_is keeps it */
  j = gradient_jpeg(3, JCS_RGB, &n);
  REQUIRE_OK(mlsys_pcr_jpeg_split(j, n, &L));
  CHECK_EQ_INT(L.nscans, 14);
  {
    uint8_t *o;
    size_t ol;
    int re = 0;
    mlsys_pcr_transcode_desc td;
    CHECK_EQ_INT(mlsys_pcr_jpeg_to_progressive(j, n, NULL, &o, &ol), MLSYS_ERR_UNSUPPORTED);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_UNSUPPORTED);
    memset(&td, 0, sizeof td);
    td.reencode_nonstandard = 1;
    REQUIRE_OK(mlsys_pcr_jpeg_to_progressive_ex(j, n, &td, &o, &ol, &re));
    CHECK(re == 1);
    REQUIRE_OK(mlsys_pcr_jpeg_split(o, ol, &L));
    CHECK_EQ_INT(L.nscans, 10);   /* re-encoded as YCbCr */
    mlsys_free(o);
  }
  free(j);
}

/* T7: fruits.jpg's split, MS-SSIM (stb_image) and PSNR per k */
TEST(t7_fruits_reference) {
  static const uint32_t ends[10] = {5670, 14283, 17867, 23345, 32775, 45060, 46038, 50726, 57627, 77208};
  static const double ms[10] = {.7955, .9171, .9269, .9563, .9812, .9869, .9872, .9908, .9971, 1};
  mlsys_pcr_jpeg_layout L;
  mlsys_pcr_writer *w;
  mlsys_pcr_reader *r;
  uint8_t *prog, *rec, *ref = NULL;
  size_t plen, rlen;
  int f, k, rw, rh;
  NEED_PHOTOS();
  REQUIRE((f = pcr_find("fruits.jpg")) >= 0);
  REQUIRE_OK(mlsys_pcr_jpeg_to_progressive(g_ph[f].jpg, g_ph[f].len, NULL, &prog, &plen));
  CHECK_EQ_INT(plen, 77210);
  REQUIRE_OK(mlsys_pcr_jpeg_split(prog, plen, &L));
  CHECK_EQ_INT(L.header_len, 236);
  REQUIRE(L.nscans == 10);
  for (k = 0; k < 10; k++) CHECK_EQ_INT(L.scan[k].end, ends[k]);
  mlsys_free(prog);
  /* the same through a record of one image */
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  REQUIRE_OK(mlsys_pcr_writer_add_jpeg(w, g_ph[f].jpg, g_ph[f].len, 7, NULL, 0));
  REQUIRE_OK(mlsys_pcr_writer_finish_mem(w, &rec, &rlen));
  mlsys_pcr_writer_destroy(w);
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_load(r, 10));
  for (k = 10; k >= 1; k--) {
    size_t n;
    uint8_t *j = pcr_jpeg_at(r, 0, k, &n), *px;
    int w2, h2;
    double m, s1;
    REQUIRE(j);
    CHECK_EQ_INT(n, 236 + (ends[k - 1] - 236) + 2);   /* header + parts 1..k + EOI: the cumulative end + 2 */
    REQUIRE_OK(mlsys_pcr_decode(j, n, NULL, &px, &w2, &h2));
    if (k == 10) { ref = px; rw = w2; rh = h2; CHECK(rw == 512 && rh == 480); free(j); continue; }
    REQUIRE(w2 == rw && h2 == rh);
    REQUIRE_OK(mlsys_pcr_msssim(ref, px, rw, rh, 3, &m, &s1));
    CHECK_NEAR(m, ms[k - 1], 0.003);
    if (k == 1) CHECK_NEAR(mlsys_pcr_psnr(ref, px, (size_t)rw * rh * 3), 24.80, 0.05);
    if (k == 5) CHECK_NEAR(mlsys_pcr_psnr(ref, px, (size_t)rw * rh * 3), 34.27, 0.05);
    printf("    k=%d: %zu bytes, MS-SSIM %.4f (spec %.4f), SSIM %.4f, PSNR %.2f dB\n", k, n, m, ms[k - 1], s1, mlsys_pcr_psnr(ref, px, (size_t)rw * rh * 3));
    mlsys_free(px);
    free(j);
  }
  mlsys_free(ref);
  mlsys_pcr_close(r);
  mlsys_free(rec);
}

/* decode with libjpeg (the reference backend) */
static uint8_t *decode_lj(const uint8_t *j, size_t n, int *w, int *h) {
  mlsys_pcr_decode_desc d;
  uint8_t *px;
  memset(&d, 0, sizeof d);
  d.backend = MLSYS_PCR_DEC_LIBJPEG;
  return mlsys_pcr_decode(j, n, &d, &px, w, h) ? NULL : px;
}

/* T8 round trip, T9 bytes for k, T10 gray mapping, on one record of all 59 photos */
TEST(t8_t9_t10_record_of_59_photos) {
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  uint8_t *rec;
  size_t rlen;
  uint32_t i;
  int k, grays = 0;
  uint64_t sum;
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(0, 59, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  CHECK_EQ_INT(in.n_images, 59);
  CHECK_EQ_INT(in.n_groups, 10);
  CHECK_EQ_INT(in.script_id, MLSYS_PCR_SCRIPT_SIMPLE);
  CHECK_EQ_INT(in.file_bytes, rlen);
  /* T9: R(k) = P + Σ_{g ≤ k} (16 + 4N + payload_g), and bytes_read after load(k) is R(k) */
  sum = in.prefix_bytes;
  CHECK_EQ_INT(in.group_end[0], in.prefix_bytes);
  for (k = 1; k <= 10; k++) {
    sum += 16 + 4 * 59 + in.group_payload[k];
    CHECK_EQ_INT(in.group_end[k], sum);
    REQUIRE_OK(mlsys_pcr_load(r, k));
    CHECK_EQ_INT(mlsys_pcr_bytes_read(r), in.group_end[k]);
  }
  CHECK_EQ_INT(sum, rlen);
  for (i = 0; i < 59; i++) {
    mlsys_pcr_image im;
    mlsys_pcr_jpeg_layout L;
    uint8_t *prog, *full, *p0, *p1;
    size_t plen, flen;
    int w0, h0, w1, h1, gray;
    REQUIRE_OK(mlsys_pcr_image_info(r, i, &im));
    CHECK_EQ_INT(im.label, i);
    CHECK_EQ_INT(im.src_bytes, g_ph[i].len);
    REQUIRE_OK(mlsys_pcr_jpeg_to_progressive(g_ph[i].jpg, g_ph[i].len, NULL, &prog, &plen));
    REQUIRE_OK(mlsys_pcr_jpeg_split(prog, plen, &L));
    gray = L.ncomp == 1;
    grays += gray;
    CHECK_EQ_INT(im.nscans, L.nscans);
    CHECK_EQ_INT(im.iflags & MLSYS_PCR_IF_GRAY_MAPPED, gray ? MLSYS_PCR_IF_GRAY_MAPPED : 0);
    /* T8: all groups give the transcoded file byte for byte; its CRC is the directory's */
    REQUIRE((full = pcr_jpeg_at(r, i, 10, &flen)));
    CHECK_MSG(flen == plen && !memcmp(full, prog, plen), "%s: the reassembled image differs from its transcode", g_ph[i].name);
    CHECK_EQ_INT(mlsys_crc32c(0, full, flen), im.full_crc);
    p0 = decode_lj(g_ph[i].jpg, g_ph[i].len, &w0, &h0);
    p1 = decode_lj(full, flen, &w1, &h1);
    CHECK_MSG(p0 && p1 && w0 == w1 && h0 == h1 && !memcmp(p0, p1, (size_t)w0 * h0 * 3), "%s: pixels differ from the original", g_ph[i].name);
    mlsys_pcr_free(p0);
    mlsys_pcr_free(p1);
    free(full);
    /* T9 per image: the k-prefix is the file's cumulative scan end at the mapped scan count */
    for (k = 1; k <= 10; k++) {
      static const int gmap[6] = {1, 2, 5, 6, 7, 10};
      int scans = 0, s;
      size_t n;
      for (s = 0; s < L.nscans; s++) scans += (gray ? gmap[s] : s + 1) <= k;
      REQUIRE_OK(mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &n));
      CHECK_EQ_INT(n, L.scan[scans - 1].end + 2);
    }
    /* T10: a gray image has parts only in groups 1, 2, 5, 6, 7, 10; k = 3, 4 decode like 2, and 8, 9 like 7 */
    if (gray && grays == 1) {
      size_t a, b;
      uint8_t *ja, *jb;
      int pairs[4][2] = {{3, 2}, {4, 2}, {8, 7}, {9, 7}}, q;
      for (q = 0; q < 4; q++) {
        ja = pcr_jpeg_at(r, i, pairs[q][0], &a);
        jb = pcr_jpeg_at(r, i, pairs[q][1], &b);
        CHECK(ja && jb && a == b && !memcmp(ja, jb, a));
        p0 = decode_lj(ja, a, &w0, &h0);
        p1 = decode_lj(jb, b, &w1, &h1);
        CHECK(p0 && p1 && !memcmp(p0, p1, (size_t)w0 * h0 * 3));
        mlsys_pcr_free(p0); mlsys_pcr_free(p1); free(ja); free(jb);
      }
      for (k = 1; k <= 10; k++) {
        size_t nk = 0, nk1 = 0;
        mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &nk);
        if (k > 1) {
          mlsys_pcr_image_jpeg(r, i, k - 1, NULL, 0, &nk1);
          CHECK_EQ_INT(nk > nk1, k == 2 || k == 5 || k == 6 || k == 7 || k == 10);
        }
      }
    }
    mlsys_free(prog);
  }
  CHECK_EQ_INT(grays, 27);
  printf("    59 photos (27 gray): R(1..10) = %llu .. %llu bytes; all-scan images byte-identical to their transcodes\n",
         (unsigned long long)in.group_end[1], (unsigned long long)in.group_end[10]);
  mlsys_pcr_close(r);
  mlsys_free(rec);
}

/* T5 on libjxl-testdata's 18 codings of one photo (unpacked by scripts/install-deps.sh into .deps/libjxl): subsampling
   4:2:0/4:2:2/4:4:0/4:4:4/asymmetric, gray, non-/partially-interleaved, restart markers, progressive. Lossless
   transcode is pixel-identical per backend; the RGB-colour-space files are refused (14 scans) or re-encoded on request. */
TEST(t5_libjxl_codings) {
  char **paths;
  int64_t n, i;
  int done = 0, refused = 0;
  mlsys_pcr_writer *w;
  if (mlsys_pipe_list_images(".deps/libjxl", &paths, &n) || n < 18)
    SKIP_DEP(".deps/libjxl has no JPEGs: scripts/install-deps.sh unpacks them from Debian's libjxl-testdata");
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  for (i = 0; i < n; i++) {
    char *d;
    size_t len, plen;
    uint8_t *prog;
    mlsys_status st;
    int be;
    REQUIRE_OK(mlsys_read_file(paths[i], &d, &len));
    st = mlsys_pcr_jpeg_to_progressive((uint8_t *)d, len, NULL, &prog, &plen);
    if (strstr(paths[i], "_rgb")) {
      mlsys_pcr_transcode_desc td;
      CHECK_EQ_INT(st, MLSYS_ERR_UNSUPPORTED);
      CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_UNSUPPORTED);
      memset(&td, 0, sizeof td);
      td.reencode_nonstandard = 1;
      CHECK_OK(mlsys_pcr_jpeg_to_progressive((uint8_t *)d, len, &td, &prog, &plen));
      mlsys_pcr_free(prog);
      refused++;
      mlsys_free(d);
      continue;
    }
    CHECK_MSG(st == MLSYS_OK, "%s: %s", paths[i], mlsys_last_error());
    if (st) { mlsys_free(d); continue; }
    for (be = 0; be <= 1; be++) {
      mlsys_pcr_decode_desc dd;
      uint8_t *p0, *p1;
      int w0, h0, w1, h1;
      memset(&dd, 0, sizeof dd);
      dd.backend = be;
      REQUIRE_OK(mlsys_pcr_decode((uint8_t *)d, len, &dd, &p0, &w0, &h0));
      REQUIRE_OK(mlsys_pcr_decode(prog, plen, &dd, &p1, &w1, &h1));
      CHECK_MSG(w0 == w1 && h0 == h1 && !memcmp(p0, p1, (size_t)w0 * h0 * 3), "%s: backend %d pixels differ", paths[i], be);
      mlsys_pcr_free(p0);
      mlsys_pcr_free(p1);
    }
    CHECK_OK(mlsys_pcr_writer_add_jpeg(w, (uint8_t *)d, len, i, NULL, 0));
    mlsys_pcr_free(prog);
    mlsys_free(d);
    done++;
  }
  {
    /* and through a record: every image reassembles to its transcode */
    uint8_t *rec;
    size_t rlen;
    mlsys_pcr_reader *r;
    uint32_t k;
    REQUIRE_OK(mlsys_pcr_writer_finish_mem(w, &rec, &rlen));
    REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
    REQUIRE_OK(mlsys_pcr_load(r, 10));
    for (k = 0; k < (uint32_t)done; k++) {
      mlsys_pcr_image im;
      size_t fl;
      uint8_t *full = pcr_jpeg_at(r, k, 10, &fl);
      mlsys_pcr_image_info(r, k, &im);
      CHECK(full && mlsys_crc32c(0, full, fl) == im.full_crc);
      free(full);
    }
    mlsys_pcr_close(r);
    mlsys_free(rec);
  }
  printf("    %d libjxl codings lossless on both decoders, %d RGB-colour-space files refused (re-encoded on request)\n", done, refused);
  CHECK(done >= 15 && refused == 2);
  mlsys_pcr_writer_destroy(w);
  mlsys_pipe_paths_free(paths, n);
}

/* T12: Theorem 4.4.1 on readers, and the E-ratio of the 32 colour photos beside the spec's measurement */
TEST(t12_theorem_441) {
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  uint8_t *rec;
  size_t rlen;
  double mean[11], full = 0, cum[11] = {0};
  int k, i, ncol = 0;
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(0, 59, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  REQUIRE_OK(mlsys_pcr_mean_bytes(&r, 1, mean));
  REQUIRE_OK(mlsys_pcr_load(r, 10));
  for (k = 0; k <= 10; k++) {
    CHECK(mean[k] == (double)in.group_end[k] / 59.0);
    if (k) CHECK(mlsys_pcr_max_speedup(mean, 10, k) == mean[10] / mean[k]);
  }
  /* colour photos, from the images' own sizes (the spec's "Σ full / Σ cum(k)") */
  for (i = 0; i < 59; i++) {
    mlsys_pcr_image im;
    size_t n = 0;
    mlsys_pcr_image_info(r, (uint32_t)i, &im);
    if (im.ncomp != 3) continue;
    ncol++;
    for (k = 1; k <= 10; k++) {
      mlsys_pcr_image_jpeg(r, (uint32_t)i, k, NULL, 0, &n);
      cum[k] += (double)n;
    }
  }
  full = cum[10];
  CHECK_EQ_INT(ncol, 32);
  printf("    colour E-ratio k=1/2/5: %.2f / %.2f / %.2f (spec measured 14.79 / 5.59 / 2.42; thesis ImageNet 16 / 7 / 2)\n", full / cum[1],
         full / cum[2], full / cum[5]);
  CHECK(fabs(full / cum[1] / 14.8 - 1) <= 0.10);
  CHECK(fabs(full / cum[2] / 5.6 - 1) <= 0.10);
  CHECK(fabs(full / cum[5] / 2.4 - 1) <= 0.10);
  mlsys_pcr_close(r);
  mlsys_free(rec);
}

/* T13 truncation, T14 corruption, on a file (pread) and in memory */
TEST(t13_t14_truncation_and_corruption) {
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  mlsys_pcr_reader_desc rd;
  uint8_t *rec, *copy;
  size_t rlen, n;
  char *dir, path[4300];
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(0, 12, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  mlsys_pcr_close(r);
  REQUIRE((dir = pcr_tmpdir()));
  snprintf(path, sizeof path, "%s/cut.pcr", dir);
  /* cut inside group 3 */
  n = (size_t)(in.group_end[2] + (in.group_end[3] - in.group_end[2]) / 2);
  REQUIRE(pcr_write_file(path, rec, n));
  REQUIRE_OK(mlsys_pcr_open_file(path, NULL, &r));
  CHECK_OK(mlsys_pcr_load(r, 1));
  CHECK_OK(mlsys_pcr_load(r, 2));
  CHECK_EQ_INT(mlsys_pcr_load(r, 3), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
  CHECK_CONTAINS(mlsys_last_error(), "group 3");
  CHECK_CONTAINS(mlsys_last_error(), "cut.pcr");
  {
    size_t l;
    CHECK_OK(mlsys_pcr_image_jpeg(r, 5, 2, NULL, 0, &l));   /* the groups loaded before stay usable */
    CHECK_EQ_INT(mlsys_pcr_image_jpeg(r, 5, 3, NULL, 0, &l), MLSYS_ERR_ARG);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_RANGE);
  }
  mlsys_pcr_close(r);
  /* cut inside the prefix */
  REQUIRE(pcr_write_file(path, rec, (size_t)in.prefix_bytes - 10));
  CHECK_EQ_INT(mlsys_pcr_open_file(path, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
  /* short files: 0, 10, 63 bytes */
  REQUIRE(pcr_write_file(path, rec, 0));
  CHECK_EQ_INT(mlsys_pcr_open_file(path, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
  REQUIRE(pcr_write_file(path, rec, 10));
  CHECK_EQ_INT(mlsys_pcr_open_file(path, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
  CHECK_EQ_INT(mlsys_pcr_open_mem(rec, 63, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
  /* T14: one payload byte of group 2 flipped */
  copy = (uint8_t *)malloc(rlen);
  memcpy(copy, rec, rlen);
  copy[in.group_end[1] + 16 + 4 * 12 + 100] ^= 0x10;
  REQUIRE_OK(mlsys_pcr_open_mem(copy, rlen, NULL, &r));
  CHECK_OK(mlsys_pcr_load(r, 1));
  CHECK_EQ_INT(mlsys_pcr_load(r, 2), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_CRC);
  CHECK_CONTAINS(mlsys_last_error(), "group 2");
  mlsys_pcr_close(r);
  /* with skip_crc the damaged image still decodes with stb_image: silently wrong, which is why CRCs are on */
  memset(&rd, 0, sizeof rd);
  rd.skip_crc = 1;
  REQUIRE_OK(mlsys_pcr_open_mem(copy, rlen, &rd, &r));
  REQUIRE_OK(mlsys_pcr_load(r, 2));
  {
    size_t l;
    uint8_t *j = pcr_jpeg_at(r, 0, 2, &l), *px;
    int w, h;
    REQUIRE(j);
    CHECK_OK(mlsys_pcr_decode(j, l, NULL, &px, &w, &h));
    mlsys_pcr_free(px);
    free(j);
  }
  mlsys_pcr_close(r);
  /* a flipped byte in the image table: the prefix CRC */
  memcpy(copy, rec, rlen);
  copy[64 + 16 * 10 + 48 * 3 + 8] ^= 1;
  CHECK_EQ_INT(mlsys_pcr_open_mem(copy, rlen, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_CRC);
  /* one byte too many */
  {
    uint8_t *longer = (uint8_t *)calloc(rlen + 1, 1);
    memcpy(longer, rec, rlen);
    CHECK_EQ_INT(mlsys_pcr_open_mem(longer, rlen + 1, NULL, &r), MLSYS_ERR_PARSE);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
    free(longer);
  }
  free(copy);
  pcr_rmdir(dir);
  mlsys_free(rec);
}

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
/* re-seal a modified record: group g's CRC in the directory, then the prefix CRC */
static void reseal(uint8_t *b, int K, int g) {
  uint64_t off = (uint64_t)get32(b + 64 + 16 * (g - 1)) | (uint64_t)get32(b + 64 + 16 * (g - 1) + 4) << 32;
  uint32_t bytes = get32(b + 64 + 16 * (g - 1) + 8), P = get32(b + 24);
  (void)K;
  put32(b + 64 + 16 * (g - 1) + 12, mlsys_crc32c(0, b + off, bytes));
  put32(b + 60, 0);
  put32(b + 60, mlsys_crc32c(0, b, P));
}

/* T15: structure errors by kind */
TEST(t15_structure_errors) {
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  uint8_t *rec, *c;
  size_t rlen;
  uint64_t g2;
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(20, 26, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  /* k = K + 1 */
  CHECK_EQ_INT(mlsys_pcr_load(r, 11), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_RANGE);
  mlsys_pcr_close(r);
  c = (uint8_t *)malloc(rlen);
  /* bad magic */
  memcpy(c, rec, rlen);
  c[3] = 'x';
  CHECK_EQ_INT(mlsys_pcr_open_mem(c, rlen, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
  /* version_major 2 */
  memcpy(c, rec, rlen);
  c[8] = 2;
  CHECK_EQ_INT(mlsys_pcr_open_mem(c, rlen, NULL, &r), MLSYS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_VERSION);
  /* flag bit 5 */
  memcpy(c, rec, rlen);
  c[12] |= 1 << 5;
  CHECK_EQ_INT(mlsys_pcr_open_mem(c, rlen, NULL, &r), MLSYS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_VERSION);
  /* a length of group 2 changed so that Σ len ≠ payload_bytes, CRCs recomputed */
  memcpy(c, rec, rlen);
  g2 = in.group_end[1];
  put32(c + g2 + 16 + 4, get32(c + g2 + 16 + 4) - 1);
  reseal(c, 10, 2);
  REQUIRE_OK(mlsys_pcr_open_mem(c, rlen, NULL, &r));
  CHECK_OK(mlsys_pcr_load(r, 1));
  CHECK_EQ_INT(mlsys_pcr_load(r, 2), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
  CHECK_CONTAINS(mlsys_last_error(), "sum to");
  mlsys_pcr_close(r);
  /* len_i = 0 in group 1 (its bytes moved to image 1 so the sum still holds) */
  memcpy(c, rec, rlen);
  {
    uint64_t g1 = in.prefix_bytes;
    uint32_t l0 = get32(c + g1 + 16), l1 = get32(c + g1 + 20);
    put32(c + g1 + 16, 0);
    put32(c + g1 + 20, l0 + l1);
    reseal(c, 10, 1);
  }
  REQUIRE_OK(mlsys_pcr_open_mem(c, rlen, NULL, &r));
  CHECK_EQ_INT(mlsys_pcr_load(r, 1), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
  CHECK_CONTAINS(mlsys_last_error(), "image 0");
  mlsys_pcr_close(r);
  /* an oversized count: 2^24 + 1 images */
  memcpy(c, rec, rlen);
  put32(c + 16, (1u << 24) + 1);
  CHECK_EQ_INT(mlsys_pcr_open_mem(c, rlen, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
  /* within the format, above the reader's limit */
  {
    mlsys_pcr_reader_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.max_images = 3;
    CHECK_EQ_INT(mlsys_pcr_open_mem(rec, rlen, &rd, &r), MLSYS_ERR_TOO_BIG);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_LIMIT);
  }
  /* a directory offset out of place */
  memcpy(c, rec, rlen);
  put32(c + 64 + 16, get32(c + 64 + 16) + 4);
  reseal(c, 10, 1);
  CHECK_EQ_INT(mlsys_pcr_open_mem(c, rlen, NULL, &r), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_FORMAT);
  free(c);
  mlsys_free(rec);
}

/* T16: bad inputs to the writer, by kind; the writer stays usable */
TEST(t16_bad_inputs) {
  mlsys_pcr_writer *w;
  char *d;
  size_t n, ol;
  uint8_t *o;
  int f;
  NEED_PHOTOS();
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  /* a PNG named .jpg (opencv-doc ships three) */
  REQUIRE_OK(mlsys_read_file("/usr/share/doc/opencv-doc/opencv4/html/board.jpg", &d, &n));
  CHECK_EQ_INT(mlsys_pcr_writer_add_jpeg(w, (uint8_t *)d, n, 0, NULL, 0), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_NOT_JPEG);
  CHECK_CONTAINS(mlsys_last_error(), "PNG");
  mlsys_free(d);
  /* a JPEG cut at byte 400, inside its DHT (as python3-skimage's truncated.jpg is) */
  REQUIRE((f = pcr_find("fruits.jpg")) >= 0);
  CHECK_EQ_INT(mlsys_pcr_writer_add_jpeg(w, g_ph[f].jpg, 400, 0, NULL, 0), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_BAD_JPEG);
  printf("    fruits.jpg cut at 400: %s\n", mlsys_last_error());
  /* the real 400-byte file, when install-deps has extracted it from python3-skimage */
  if (!mlsys_read_file(".deps/skimage/truncated.jpg", &d, &n)) {
    CHECK_EQ_INT(n, 400);
    CHECK_EQ_INT(mlsys_pcr_writer_add_jpeg(w, (uint8_t *)d, n, 0, NULL, 0), MLSYS_ERR_PARSE);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_BAD_JPEG);
    printf("    skimage truncated.jpg: %s\n", mlsys_last_error());
    mlsys_free(d);
  } else {
    printf("    (python3-skimage's truncated.jpg not extracted: scripts/install-deps.sh does it)\n");
  }
  /* a crafted JPEG with 65 scans: a real progressive file with its second part repeated */
  REQUIRE_OK(mlsys_pcr_jpeg_to_progressive(g_ph[f].jpg, g_ph[f].len, NULL, &o, &ol));
  {
    mlsys_pcr_jpeg_layout L;
    uint8_t *big;
    size_t bl = 0, p2;
    int s;
    REQUIRE_OK(mlsys_pcr_jpeg_split(o, ol, &L));
    p2 = L.scan[1].end - L.scan[1].begin;
    big = (uint8_t *)malloc(ol + 60 * p2);
    memcpy(big, o, L.scan[1].end);
    bl = L.scan[1].end;
    for (s = 0; s < 60; s++) { memcpy(big + bl, o + L.scan[1].begin, p2); bl += p2; }
    memcpy(big + bl, o + L.scan[1].end, ol - L.scan[1].end);
    bl += ol - L.scan[1].end;
    CHECK_EQ_INT(mlsys_pcr_jpeg_split(big, bl, &L), MLSYS_ERR_TOO_BIG);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_LIMIT);
    {
      uint8_t *px;
      int w2, h2;
      CHECK_EQ_INT(mlsys_pcr_decode(big, bl, NULL, &px, &w2, &h2), MLSYS_ERR_TOO_BIG);   /* refused before stb_image sees it */
      CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_LIMIT);
    }
    free(big);
  }
  mlsys_free(o);
  /* the writer still works */
  CHECK_OK(mlsys_pcr_writer_add_jpeg(w, g_ph[f].jpg, g_ph[f].len, 1, NULL, 0));
  CHECK_EQ_INT(mlsys_pcr_writer_count(w), 1);
  /* an empty record */
  mlsys_pcr_writer_destroy(w);
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  CHECK_EQ_INT(mlsys_pcr_writer_finish_mem(w, &o, &ol), MLSYS_ERR_ARG);
  mlsys_pcr_writer_destroy(w);
}

/* T17: the EOI guard */
TEST(t17_eoi_guard) {
  mlsys_pcr_reader *r;
  uint8_t *rec, *j, *px;
  size_t rlen, n;
  int k, w, h;
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(0, 3, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_load(r, 10));
  for (k = 1; k <= 10; k++) {
    REQUIRE((j = pcr_jpeg_at(r, 0, k, &n)));
    CHECK(j[n - 2] == 0xFF && j[n - 1] == 0xD9);
    if (k == 2) {
      /* without the EOI: stb_image itself fails ("expected marker"), and mlsys_pcr_decode names the truncation */
      int c;
      uint8_t *sp = stbi_load_from_memory(j, (int)n - 2, &w, &h, &c, 3);
      CHECK(sp == NULL);
      if (sp) stbi_image_free(sp);
      CHECK_EQ_INT(mlsys_pcr_decode(j, n - 2, NULL, &px, &w, &h), MLSYS_ERR_PARSE);
      CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_BAD_JPEG);
      CHECK_CONTAINS(mlsys_last_error(), "truncated");
    }
    free(j);
  }
  mlsys_pcr_close(r);
  mlsys_free(rec);
}

/* T20: pread, mmap, O_DIRECT and memory readers give the same bytes; read_one equals image_jpeg */
TEST(t20_readers_agree) {
  mlsys_pcr_reader *rd[4], *one;
  mlsys_pcr_reader_desc d;
  mlsys_pcr_writer_desc wd;
  uint8_t *rec;
  size_t rlen;
  char *dir, path[4300];
  int m, k, nreaders = 0, align;
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  for (align = 0; align <= 12; align += 12) {
    memset(&wd, 0, sizeof wd);
    wd.align_log2 = align;
    REQUIRE((rec = pcr_pack(30, 45, &wd, &rlen)));
    snprintf(path, sizeof path, "%s/r%d.pcr", dir, align);
    REQUIRE(pcr_write_file(path, rec, rlen));
    nreaders = 0;
    for (m = 0; m < 3; m++) {
      mlsys_status st;
      memset(&d, 0, sizeof d);
      d.io = m;
      d.load_k = m == 1 ? 3 : 0;
      st = mlsys_pcr_open_file(path, &d, &rd[nreaders]);
      if (m == MLSYS_PCR_IO_DIRECT && st == MLSYS_ERR_UNSUPPORTED) {
        printf("    O_DIRECT: %s (not compared here)\n", mlsys_last_error());
        continue;
      }
      REQUIRE_OK(st);
      nreaders++;
    }
    REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &rd[nreaders++]));
    for (k = 1; k <= 10; k++) {
      uint32_t i;
      for (m = 0; m < nreaders; m++) {
        REQUIRE_OK(mlsys_pcr_load(rd[m], k));
        if (m < nreaders - 1) {
          mlsys_pcr_info in;
          mlsys_pcr_get_info(rd[m], &in);
          CHECK_EQ_INT(mlsys_pcr_bytes_read(rd[m]), in.group_end[m == 1 && k < 3 ? 3 : k]);   /* the mmap reader loaded 3 at open */
        }
      }
      for (i = 0; i < 15; i++) {
        size_t n0, n1;
        uint8_t *a = pcr_jpeg_at(rd[nreaders - 1], i, k, &n0);
        for (m = 0; m < nreaders - 1; m++) {
          uint8_t *b = pcr_jpeg_at(rd[m], i, k, &n1);
          CHECK(a && b && n0 == n1 && !memcmp(a, b, n0));
          free(b);
        }
        free(a);
      }
    }
    for (m = 0; m < nreaders; m++) mlsys_pcr_close(rd[m]);
    /* read_one: a fresh reader that never loads groups */
    for (m = 0; m < 3; m++) {
      uint32_t i;
      memset(&d, 0, sizeof d);
      d.io = m;
      if (mlsys_pcr_open_file(path, &d, &one)) continue;
      REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &rd[0]));
      REQUIRE_OK(mlsys_pcr_load(rd[0], 10));
      for (i = 0; i < 15; i += 4)
        for (k = 1; k <= 10; k += 3) {
          uint8_t *a, *b;
          size_t na, nb;
          REQUIRE_OK(mlsys_pcr_read_one(one, i, k, &a, &na));
          b = pcr_jpeg_at(rd[0], i, k, &nb);
          CHECK(b && na == nb && !memcmp(a, b, na));
          mlsys_pcr_free(a);
          free(b);
        }
      mlsys_pcr_close(rd[0]);
      mlsys_pcr_close(one);
    }
    mlsys_free(rec);
  }
  pcr_rmdir(dir);
}

/* T21: the dataset index over 3 records */
TEST(t21_index) {
  const char *names[3];
  char *dir, paths[3][4300], ipath[4300];
  mlsys_pcr_index *ix;
  mlsys_pcr_reader *rd[3];
  double m1[11], m2[11];
  int j, k;
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  for (j = 0; j < 3; j++) {
    size_t rlen;
    uint8_t *rec = pcr_pack(j * 15, j * 15 + 10 + j, NULL, &rlen);
    REQUIRE(rec);
    snprintf(paths[j], sizeof paths[j], "%s/pcr-%06d.pcr", dir, j);
    REQUIRE(pcr_write_file(paths[j], rec, rlen));
    names[j] = paths[j];
    mlsys_free(rec);
  }
  snprintf(ipath, sizeof ipath, "%s/index.pcri", dir);
  REQUIRE_OK(mlsys_pcr_index_build(names, 3, ipath));
  REQUIRE_OK(mlsys_pcr_index_open(ipath, &ix));
  CHECK_EQ_INT(mlsys_pcr_index_records(ix), 3);
  CHECK_EQ_INT(mlsys_pcr_index_images(ix), 10 + 11 + 12);
  for (j = 0; j < 3; j++) {
    const char *p;
    const uint64_t *R;
    uint32_t ni;
    int K;
    mlsys_pcr_info in;
    REQUIRE_OK(mlsys_pcr_index_record(ix, j, &p, &ni, &K, &R));
    CHECK_STR(p, paths[j]);   /* stored relative, resolved against the index's directory */
    REQUIRE_OK(mlsys_pcr_open_file(p, NULL, &rd[j]));
    mlsys_pcr_get_info(rd[j], &in);
    CHECK_EQ_INT(ni, in.n_images);
    CHECK_EQ_INT(K, in.n_groups);
    for (k = 0; k <= 10; k++) CHECK_EQ_INT(R[k], in.group_end[k]);
  }
  REQUIRE_OK(mlsys_pcr_index_mean_bytes(ix, m1));
  REQUIRE_OK(mlsys_pcr_mean_bytes(rd, 3, m2));
  for (k = 0; k <= 10; k++) CHECK(m1[k] == m2[k]);
  mlsys_pcr_index_close(ix);
  /* a damaged index: CRC; a cut one: truncated */
  {
    char *b;
    size_t n;
    REQUIRE_OK(mlsys_read_file(ipath, &b, &n));
    b[40] ^= 1;
    REQUIRE(pcr_write_file(ipath, b, n));
    CHECK_EQ_INT(mlsys_pcr_index_open(ipath, &ix), MLSYS_ERR_PARSE);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_CRC);
    REQUIRE(pcr_write_file(ipath, b, n - 7));
    CHECK_EQ_INT(mlsys_pcr_index_open(ipath, &ix), MLSYS_ERR_PARSE);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_TRUNCATED);
    mlsys_free(b);
  }
  for (j = 0; j < 3; j++) mlsys_pcr_close(rd[j]);
  pcr_rmdir(dir);
}

/* the writer's options: store_as_is (the plain JPEG record), the spectral script, keep_progressive_input, extra data,
   add_pixels, orientation, requality */
TEST(writer_options) {
  mlsys_pcr_writer_desc wd;
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  uint8_t *rec;
  size_t rlen;
  int i, f;
  NEED_PHOTOS();
  /* store_as_is: every file unchanged in group 1 */
  memset(&wd, 0, sizeof wd);
  wd.store_as_is = 1;
  REQUIRE((rec = pcr_pack(0, 59, &wd, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  CHECK_EQ_INT(in.n_groups, 1);
  CHECK_EQ_INT(in.script_id, 0);
  REQUIRE_OK(mlsys_pcr_load(r, 1));
  for (i = 0; i < 59; i++) {
    size_t n;
    uint8_t *j = pcr_jpeg_at(r, (uint32_t)i, 1, &n);
    mlsys_jpeg_info ji;
    REQUIRE(j && !mlsys_jpeg_check(g_ph[i].jpg, g_ph[i].len, &ji, NULL, 0));
    CHECK_MSG(n == ji.eoi + 2 && !memcmp(j, g_ph[i].jpg, n), "%s stored as is differs", g_ph[i].name);
    free(j);
  }
  {
    size_t src = 0;
    for (i = 0; i < 59; i++) src += g_ph[i].len;
    printf("    plain JPEG record: %zu bytes for %zu bytes of files\n", rlen, src);
  }
  mlsys_pcr_close(r);
  mlsys_free(rec);
  /* the spectral-selection script: 5 groups for colour, gray mapped to {1, 2, 5} */
  memset(&wd, 0, sizeof wd);
  wd.transcode.script = MLSYS_PCR_SCRIPT_SPECTRAL;
  REQUIRE((rec = pcr_pack(0, 59, &wd, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_get_info(r, &in));
  CHECK_EQ_INT(in.n_groups, 5);
  CHECK_EQ_INT(in.script_id, MLSYS_PCR_SCRIPT_SPECTRAL);
  REQUIRE_OK(mlsys_pcr_load(r, 5));
  for (i = 0; i < 59; i++) {
    size_t n;
    uint8_t *j = pcr_jpeg_at(r, (uint32_t)i, 5, &n);
    int w0, h0, w1, h1;
    uint8_t *p0 = decode_lj(g_ph[i].jpg, g_ph[i].len, &w0, &h0), *p1 = decode_lj(j, n, &w1, &h1);
    mlsys_pcr_image im;
    mlsys_pcr_image_info(r, (uint32_t)i, &im);
    CHECK_EQ_INT(im.nscans, im.ncomp == 3 ? 5 : 3);
    CHECK_MSG(p0 && p1 && w0 == w1 && h0 == h1 && !memcmp(p0, p1, (size_t)w0 * h0 * 3), "%s: spectral script not lossless", g_ph[i].name);
    mlsys_pcr_free(p0); mlsys_pcr_free(p1); free(j);
  }
  mlsys_pcr_close(r);
  mlsys_free(rec);
  /* keep_progressive_input: a simple-progressive input is stored byte for byte */
  REQUIRE((f = pcr_find("fruits.jpg")) >= 0);
  {
    uint8_t *prog, *back;
    size_t plen, bl;
    mlsys_pcr_writer *w;
    const char *meta = "{\"name\":\"fruits\"}";
    mlsys_pcr_image im;
    REQUIRE_OK(mlsys_pcr_jpeg_to_progressive(g_ph[f].jpg, g_ph[f].len, NULL, &prog, &plen));
    memset(&wd, 0, sizeof wd);
    wd.keep_progressive_input = 1;
    REQUIRE_OK(mlsys_pcr_writer_create(&wd, &w));
    REQUIRE_OK(mlsys_pcr_writer_add_jpeg(w, prog, plen, -5, meta, (uint32_t)strlen(meta)));
    REQUIRE_OK(mlsys_pcr_writer_finish_mem(w, &rec, &rlen));
    mlsys_pcr_writer_destroy(w);
    REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
    REQUIRE_OK(mlsys_pcr_load(r, 10));
    back = pcr_jpeg_at(r, 0, 10, &bl);
    CHECK(back && bl == plen && !memcmp(back, prog, plen));
    REQUIRE_OK(mlsys_pcr_image_info(r, 0, &im));
    CHECK_EQ_INT(im.label, -5);
    CHECK(im.extra_len == strlen(meta) && !memcmp(im.extra, meta, im.extra_len));
    mlsys_pcr_get_info(r, &in);
    CHECK(in.flags & 1u);   /* HAS_EXTRA */
    free(back);
    mlsys_pcr_close(r);
    mlsys_free(rec);
    mlsys_free(prog);
  }
  /* add_pixels (REENCODED) and requality */
  {
    uint8_t *px, *rq;
    int w0, h0, q;
    size_t rql;
    mlsys_pcr_writer *w;
    mlsys_pcr_image im;
    REQUIRE((px = decode_lj(g_ph[f].jpg, g_ph[f].len, &w0, &h0)));
    REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
    REQUIRE_OK(mlsys_pcr_writer_add_pixels(w, px, w0, h0, 3, 3, NULL, 0));
    REQUIRE_OK(mlsys_pcr_writer_finish_mem(w, &rec, &rlen));
    mlsys_pcr_writer_destroy(w);
    REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
    REQUIRE_OK(mlsys_pcr_image_info(r, 0, &im));
    CHECK(im.iflags & MLSYS_PCR_IF_REENCODED);
    mlsys_pcr_close(r);
    mlsys_free(rec);
    REQUIRE_OK(mlsys_pcr_jpeg_requality(g_ph[f].jpg, g_ph[f].len, 20000, &q, &rq, &rql));
    CHECK(rql <= 20000 && q >= 1 && q < 90);
    {
      /* one quality step up would not fit */
      uint8_t *up;
      size_t ul;
      if (q < 100) {
        REQUIRE_OK(mlsys_pcr_jpeg_encode(px, w0, h0, 3, q + 1, 0, &up, &ul));
        CHECK(ul > 20000);
        mlsys_pcr_free(up);
      }
    }
    printf("    fruits.jpg re-encoded to <= 20000 bytes: quality %d, %zu bytes\n", q, rql);
    mlsys_pcr_free(rq);
    mlsys_pcr_free(px);
  }
}

/* EXIF orientation: an APP1 Exif segment spliced into a real photo is read and kept in iflags */
TEST(exif_orientation) {
  static const uint8_t app1[] = {0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                                 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0};
  uint8_t *j, *rec;
  size_t n, rlen;
  int f;
  mlsys_pcr_writer *w;
  mlsys_pcr_reader *r;
  mlsys_pcr_image im;
  NEED_PHOTOS();
  REQUIRE((f = pcr_find("fruits.jpg")) >= 0);
  n = g_ph[f].len + sizeof app1;
  j = (uint8_t *)malloc(n);
  memcpy(j, g_ph[f].jpg, 2);
  memcpy(j + 2, app1, sizeof app1);
  memcpy(j + 2 + sizeof app1, g_ph[f].jpg + 2, g_ph[f].len - 2);
  CHECK_EQ_INT(mlsys_pcr_jpeg_orientation(j, n), 6);
  CHECK_EQ_INT(mlsys_pcr_jpeg_orientation(g_ph[f].jpg, g_ph[f].len), 0);
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  REQUIRE_OK(mlsys_pcr_writer_add_jpeg(w, j, n, 0, NULL, 0));
  REQUIRE_OK(mlsys_pcr_writer_finish_mem(w, &rec, &rlen));
  mlsys_pcr_writer_destroy(w);
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_image_info(r, 0, &im));
  CHECK(im.iflags & MLSYS_PCR_IF_HAS_ORIENT);
  CHECK_EQ_INT(im.iflags >> 8 & 15, 6);
  mlsys_pcr_close(r);
  mlsys_free(rec);
  free(j);
}

/* a record written to a file: tmp + rename, and finish errors */
TEST(finish_file) {
  mlsys_pcr_writer *w;
  mlsys_pcr_reader *r;
  char *dir, path[4300];
  int f;
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  REQUIRE((f = pcr_find("baboon.jpg")) >= 0);
  REQUIRE_OK(mlsys_pcr_writer_create(NULL, &w));
  REQUIRE_OK(mlsys_pcr_writer_add_jpeg(w, g_ph[f].jpg, g_ph[f].len, 1, NULL, 0));
  snprintf(path, sizeof path, "%s/no/such/dir/x.pcr", dir);
  CHECK_EQ_INT(mlsys_pcr_writer_finish_file(w, path), MLSYS_ERR_IO);
  CHECK_EQ_INT(mlsys_pcr_writer_count(w), 1);   /* nothing lost: the images are still there */
  snprintf(path, sizeof path, "%s/x.pcr", dir);
  REQUIRE_OK(mlsys_pcr_writer_finish_file(w, path));
  CHECK_EQ_INT(mlsys_pcr_writer_count(w), 0);
  snprintf(path, sizeof path, "%s/x.pcr.tmp", dir);
  CHECK(access(path, F_OK) != 0);
  snprintf(path, sizeof path, "%s/x.pcr", dir);
  REQUIRE_OK(mlsys_pcr_open_file(path, NULL, &r));
  CHECK_OK(mlsys_pcr_load(r, 10));
  mlsys_pcr_close(r);
  CHECK_EQ_INT(mlsys_pcr_open_file(dir, NULL, &r), MLSYS_ERR_IO);   /* a directory */
  mlsys_pcr_writer_destroy(w);
  pcr_rmdir(dir);
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  pcr_photos_free();
  return rc;
}
