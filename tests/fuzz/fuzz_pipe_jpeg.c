/* libFuzzer target for the image layer of mlsys_pipeline.h: the sniffer, the strict JPEG structure check (and
   mlsys_common.h's mlsys_jpeg_check under it, with its scan recording) and both decoders (stb_image with PNG
   accepted, libjpeg-turbo at a scale picked from the input). A check must fail with MLSYS_ERR_PARSE and a message, or
   pass with a sane frame and an EOI inside the input; the recorded scans must be ordered, each an SOS segment up to
   the first 0xFF of the marker after its data, and agree with the pipeline's check (a scan limit gives
   MLSYS_ERR_TOO_BIG exactly when there are more scans); a decode must either fail
   with a message or return a buffer of exactly ⌈w/d⌉ × ⌈h/d⌉ × 3 bytes; both decoders must agree on the size of
   what they both decode. Frames over 16 Mpixel are refused before decoding (max_pixels) so the fuzzer does not run
   out of memory.
   Build and run: make build/fuzz/fuzz_pipe_jpeg && ./build/fuzz/fuzz_pipe_jpeg -max_total_time=60 <scratch copy of
   tests/fuzz/corpus/fuzz_pipe_jpeg> */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                       \
  do {                                                                                                      \
    if (!(x)) {                                                                                             \
      fprintf(stderr, "fuzz_pipe_jpeg: check failed at line %d: %s (last error: %s)\n", __LINE__, #x,       \
              mlsys_last_error());                                                                          \
      abort();                                                                                              \
    }                                                                                                       \
  } while (0)

#define FUZZ_MAX_SCANS 16

/* mlsys_jpeg_check with scans recorded agrees with the pipeline's check (st, info) and its scans are well formed */
static void check_scans(const uint8_t *buf, size_t len, mlsys_status st, const mlsys_pipe_jpeg_info *info) {
  mlsys_jpeg_scan sc[FUZZ_MAX_SCANS];
  mlsys_jpeg_info in;
  mlsys_status s2 = mlsys_jpeg_check(buf, len, &in, sc, FUZZ_MAX_SCANS);
  int j;
  if (st) {
    FUZZ_CHECK(s2 == st || s2 == MLSYS_ERR_TOO_BIG);   /* the limit may stop the walk before the damage */
    return;
  }
  if (info->nscans > FUZZ_MAX_SCANS) {
    FUZZ_CHECK(s2 == MLSYS_ERR_TOO_BIG && strstr(mlsys_last_error(), "more than 16 scans"));
    return;
  }
  FUZZ_CHECK(s2 == MLSYS_OK && in.nscans == info->nscans && in.eoi == info->eoi && in.width == info->width);
  FUZZ_CHECK(in.first_sos == sc[0].sos && in.last_scan_end == sc[in.nscans - 1].end && in.last_scan_end <= in.eoi);
  for (j = 0; j < in.nscans; j++) {
    size_t data = sc[j].sos + 8 + 2u * sc[j].ns;   /* marker, length, Ns, 2 per component, Ss, Se, Ah|Al */
    FUZZ_CHECK(buf[sc[j].sos] == 0xFF && buf[sc[j].sos + 1] == 0xDA);
    FUZZ_CHECK(sc[j].ns >= 1 && sc[j].ns <= 4 && data <= sc[j].end);
    /* the end is the first 0xFF of the run before the next marker (the scan's data, if any, does not end in 0xFF) */
    FUZZ_CHECK(buf[sc[j].end] == 0xFF && (sc[j].end == data || buf[sc[j].end - 1] != 0xFF));
    if (j + 1 < in.nscans) FUZZ_CHECK(sc[j].end <= sc[j + 1].sos);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  mlsys_pipe_jpeg_info info;
  mlsys_status st;
  int fmt = mlsys_pipe_image_sniff(buf, len), dec, sw[2] = {-1, -1}, sh[2] = {-1, -1};
  static const int scales[4] = {1, 2, 4, 8};
  FUZZ_CHECK(fmt >= MLSYS_PIPE_IMG_UNKNOWN && fmt <= MLSYS_PIPE_IMG_WEBP);
  st = mlsys_pipe_jpeg_check(buf, len, &info);
  if (st) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE && mlsys_last_error()[0]);
  } else {
    FUZZ_CHECK(fmt == MLSYS_PIPE_IMG_JPEG);
    FUZZ_CHECK(info.width > 0 && info.height > 0 && info.components > 0 && info.nscans > 0);
    FUZZ_CHECK(info.eoi + 2 <= len && buf[info.eoi] == 0xFF && buf[info.eoi + 1] == 0xD9);
  }
  check_scans(buf, len, st, &info);
  for (dec = 0; dec < 2; dec++) {
    mlsys_pipe_decode_desc d;
    uint8_t *rgb = NULL;
    int w = -1, h = -1;
    memset(&d, 0, sizeof d);
    d.decoder = dec ? MLSYS_PIPE_DEC_LIBJPEG : MLSYS_PIPE_DEC_STB;
    d.scale_denom = dec && len ? scales[buf[len - 1] & 3] : 1;   /* the last byte picks libjpeg's DCT scale */
    d.accept_png = 1;
    d.max_pixels = (int64_t)16 << 20;
    st = mlsys_pipe_jpeg_decode(buf, len, &d, &rgb, &w, &h);
    if (st) {
      FUZZ_CHECK(rgb == NULL && w == 0 && h == 0 && mlsys_last_error()[0]);
      FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_UNSUPPORTED || st == MLSYS_ERR_TOO_BIG);
      continue;
    }
    FUZZ_CHECK(rgb && w > 0 && h > 0);
    if (fmt == MLSYS_PIPE_IMG_JPEG) {
      FUZZ_CHECK(mlsys_pipe_jpeg_check(buf, len, &info) == MLSYS_OK);
      FUZZ_CHECK(w == (info.width + d.scale_denom - 1) / d.scale_denom && h == (info.height + d.scale_denom - 1) / d.scale_denom);
      sw[dec] = info.width; sh[dec] = info.height;
    } else {
      FUZZ_CHECK(fmt == MLSYS_PIPE_IMG_PNG && dec == 0 && (int64_t)w * h <= d.max_pixels);
    }
    {
      /* touch every byte: ASan flags a buffer shorter than promised */
      static volatile uint8_t sink;
      size_t i, n = (size_t)w * h * 3;
      for (i = 0; i < n; i++) sink = rgb[i];
    }
    mlsys_free(rgb);
  }
  if (sw[0] >= 0 && sw[1] >= 0) FUZZ_CHECK(sw[0] == sw[1] && sh[0] == sh[1]);
  return 0;
}
