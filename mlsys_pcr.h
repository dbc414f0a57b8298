/* mlsys_pcr.h — Progressive Compressed Records (PCR).                                                 MIT licence.

   Implements Progressive Compressed Records (M. Kuchnik, PhD thesis, ch. 4; spec ../shared/specs/pcr.md): training
   images stored as progressive JPEGs whose scans are grouped across the images of a record, so that reading the first
   k scan groups of a record yields every image at fidelity k with a fraction of the bytes.

   STATUS (issue 8, started): the JPEG layer.
     - mlsys_pcr_jpeg_to_progressive: the lossless transcode of §3.1. It rearranges a baseline or progressive JPEG's
       DCT coefficients into libjpeg's simple progression with optimised Huffman tables. It uses libjpeg-turbo and its
       output is byte-identical to `jpegtran -copy none -optimize -progressive`.
     - mlsys_pcr_jpeg_split: the marker walk of §3.2. It gives the header and the byte range of every scan, so that
       header ‖ scan 1 ‖ … ‖ scan n ‖ EOI is the file.
   Not yet: the record format (§2.4), the writer and reader, fidelity tools (MS-SSIM), the pipeline source and the
   `mlsys pcr` command.

   USAGE: in exactly one .c file
       #define MLSYS_PCR_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_pcr.h"
   link: -ljpeg (libjpeg-turbo) -lm

   EXAMPLE
       uint8_t *prog; size_t plen; mlsys_pcr_jpeg_layout L;
       if (mlsys_pcr_jpeg_to_progressive(jpg, n, NULL, &prog, &plen) == MLSYS_OK &&
           mlsys_pcr_jpeg_split(prog, plen, &L) == MLSYS_OK)
         printf("%d scans; the first takes %u of %zu bytes\n", L.nscans, L.scan[0].end, plen);
       mlsys_free(prog);
*/
#ifndef MLSYS_PCR_H
#define MLSYS_PCR_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_PCR_IMPLEMENTATION
#define MLSYS_PCR_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLSYS_PCR_MAX_SCANS 64

/* One scan (SOS segment and its entropy-coded data): its header fields and its part's byte range [begin, end). The
   first part begins right after the JPEG header (everything before the first SOS). */
typedef struct {
  uint8_t ns, comp[4], ss, se, ah, al;   /* components in the scan (ids), spectral range, successive approximation */
  uint32_t begin, end;
} mlsys_pcr_scan;
typedef struct {
  uint32_t header_len;      /* bytes before the first SOS */
  uint32_t eoi_pos;         /* offset of the EOI marker (FF D9) */
  int width, height, ncomp;
  int progressive;          /* 1: SOF2 */
  int nscans;
  mlsys_pcr_scan scan[MLSYS_PCR_MAX_SCANS];
} mlsys_pcr_jpeg_layout;
/* The marker walk of spec §3.2 over jpg[0, n). Errors (MLSYS_ERR_PARSE, naming the byte offset): not a JPEG (no SOI),
   a segment running past the end, bytes between segments, no EOI (truncated), no scan, no frame header before the
   first scan; MLSYS_ERR_TOO_BIG: more than MLSYS_PCR_MAX_SCANS scans. Bytes after EOI are ignored. */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_split(const uint8_t *jpg, size_t n, mlsys_pcr_jpeg_layout *out);

typedef struct {
  int allow_warnings;       /* 0: a libjpeg warning on the input (premature end, corrupt data) is an error */
  int no_optimize;          /* 0: optimised Huffman tables (jpegtran -optimize) */
  int max_scans;            /* 0 → MLSYS_PCR_MAX_SCANS */
} mlsys_pcr_transcode_desc;
/* Lossless transcode to libjpeg's simple progression (spec §3.1 steps 1–3), no markers copied (EXIF and ICC dropped).
   Input: a baseline or progressive JPEG, 8-bit, grayscale or YCbCr. *out from mlsys_alloc (free with mlsys_free).
   Errors: MLSYS_ERR_PARSE (not a JPEG: the format is named by its magic bytes; libjpeg's message for damaged data),
   MLSYS_ERR_UNSUPPORTED (12-bit, lossless, RGB/CMYK/YCCK colour), MLSYS_ERR_TOO_BIG (more scans than max_scans),
   MLSYS_ERR_NOMEM. d may be NULL. */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *d, uint8_t **out,
                                                     size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PCR_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_PCR_IMPLEMENTATION
#ifndef MLSYS_PCR_IMPLEMENTATION_DONE
#define MLSYS_PCR_IMPLEMENTATION_DONE
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <jpeglib.h>

#ifdef __cplusplus
extern "C" {
#endif

static uint32_t mlsys__pcr_be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }

/* what a buffer that is not a JPEG is, for the message */
static const char *mlsys__pcr_magic(const uint8_t *b, size_t n) {
  if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return "PNG data";
  if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6))) return "GIF data";
  if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return "WebP data";
  if (n >= 2 && b[0] == 'B' && b[1] == 'M') return "BMP data";
  return n == 0 ? "empty" : "no SOI marker";
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_split(const uint8_t *b, size_t n, mlsys_pcr_jpeg_layout *L) {
  size_t p = 2;
  int have_sof = 0;
  if (!b || !L) return mlsys_set_error(MLSYS_ERR_ARG, "pcr: jpeg_split with a NULL argument");
  memset(L, 0, sizeof *L);
  if (n < 2 || b[0] != 0xFF || b[1] != 0xD8) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: not a JPEG: %s", mlsys__pcr_magic(b, n));
  if (n > 0xFFFFFFFFu) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "pcr: a JPEG of %zu bytes (part offsets are 32-bit)", n);
  for (;;) {
    uint8_t m;
    uint32_t len;
    if (p >= n) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: truncated: no EOI marker (the data ends at byte %zu)", n);
    if (b[p] != 0xFF) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: expected a marker at byte %zu, found 0x%02X", p, b[p]);
    while (p < n && b[p] == 0xFF) p++;   /* fill bytes */
    if (p >= n) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: truncated: no EOI marker (the data ends at byte %zu)", n);
    m = b[p++];
    if (m == 0xD9) { L->eoi_pos = (uint32_t)(p - 2); break; }
    if ((m >= 0xD0 && m <= 0xD7) || m == 0x01) continue;   /* standalone markers */
    if (m == 0x00) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: stuffed byte FF 00 outside a scan at byte %zu", p - 2);
    if (p + 2 > n) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: truncated: segment 0x%02X at byte %zu has no length", m, p - 2);
    len = mlsys__pcr_be16(b + p);
    if (len < 2 || p + len > n)
      return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: segment 0x%02X at byte %zu (length %u) runs past the end of the data (byte %zu)", m, p - 2,
                             len, n);
    if ((m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC) {   /* SOFn */
      if (len < 8) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: frame header at byte %zu is %u bytes", p - 2, len);
      L->height = (int)mlsys__pcr_be16(b + p + 3);
      L->width = (int)mlsys__pcr_be16(b + p + 5);
      L->ncomp = b[p + 7];
      L->progressive = m == 0xC2;
      have_sof = 1;
    }
    if (m == 0xDA) {   /* SOS: header fields, then the entropy-coded data up to the next marker */
      mlsys_pcr_scan *sc;
      size_t q = p + len;
      int k, ns;
      if (!have_sof) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: scan at byte %zu comes before any frame header", p - 2);
      if (L->nscans >= MLSYS_PCR_MAX_SCANS) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "pcr: more than %d scans", MLSYS_PCR_MAX_SCANS);
      ns = len >= 3 ? b[p + 2] : 0;
      if (ns < 1 || ns > 4 || len != (uint32_t)(6 + 2 * ns))
        return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: scan header at byte %zu: %d components in %u bytes", p - 2, ns, len);
      sc = &L->scan[L->nscans];
      sc->ns = (uint8_t)ns;
      for (k = 0; k < ns; k++) sc->comp[k] = b[p + 3 + 2 * k];
      sc->ss = b[p + 3 + 2 * ns]; sc->se = b[p + 4 + 2 * ns];
      sc->ah = b[p + 5 + 2 * ns] >> 4; sc->al = b[p + 5 + 2 * ns] & 15;
      if (L->nscans == 0) L->header_len = (uint32_t)(p - 2);
      sc->begin = L->nscans == 0 ? L->header_len : L->scan[L->nscans - 1].end;
      for (;;) {
        size_t r;
        if (q >= n) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: truncated: scan %d runs to the end of the data (byte %zu), no EOI", L->nscans + 1, n);
        if (b[q] != 0xFF) { q++; continue; }
        for (r = q + 1; r < n && b[r] == 0xFF; r++) {}
        if (r >= n) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: truncated: scan %d runs to the end of the data (byte %zu), no EOI", L->nscans + 1, n);
        if (b[r] == 0x00 || (b[r] >= 0xD0 && b[r] <= 0xD7)) { q = r + 1; continue; }   /* stuffing, restart marker */
        break;   /* q: the first FF of the next marker */
      }
      sc->end = (uint32_t)q;
      L->nscans++;
      p = q;
      continue;
    }
    p += len;
  }
  if (L->nscans == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: no scan before EOI (byte %u)", L->eoi_pos);
  if (L->scan[L->nscans - 1].end != L->eoi_pos)
    return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: %u bytes of segments between the last scan and EOI (byte %u)",
                           L->eoi_pos - L->scan[L->nscans - 1].end, L->eoi_pos);
  return MLSYS_OK;
}

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  int allow_warnings;
  char msg[JMSG_LENGTH_MAX];
} mlsys__pcr_jerr;

/* libjpeg's default error_exit calls exit(); ours returns to the transcode call */
static void mlsys__pcr_jexit(j_common_ptr ci) {
  mlsys__pcr_jerr *e = (mlsys__pcr_jerr *)ci->err;
  (*ci->err->format_message)(ci, e->msg);
  longjmp(e->jb, 1);
}
/* a warning (level −1) means damaged data that libjpeg would fill in: refuse it unless allowed (§3.1 step 1) */
static void mlsys__pcr_jemit(j_common_ptr ci, int level) {
  mlsys__pcr_jerr *e = (mlsys__pcr_jerr *)ci->err;
  if (level < 0 && !e->allow_warnings) mlsys__pcr_jexit(ci);
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *dd, uint8_t **out,
                                                     size_t *out_len) {
  struct jpeg_decompress_struct src;
  struct jpeg_compress_struct dst;
  mlsys__pcr_jerr je;
  mlsys_pcr_transcode_desc d;
  jvirt_barray_ptr *coef;
  unsigned char *volatile mem = NULL;   /* read after the longjmp */
  unsigned long mlen = 0;
  volatile int have_dst = 0;
  volatile mlsys_status st = MLSYS_OK;   /* set after the setjmp */
  int max_scans;
  if (!in || !out || !out_len) return mlsys_set_error(MLSYS_ERR_ARG, "pcr: jpeg_to_progressive with a NULL argument");
  *out = NULL; *out_len = 0;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  max_scans = d.max_scans > 0 ? d.max_scans : MLSYS_PCR_MAX_SCANS;
  if (n < 2 || in[0] != 0xFF || in[1] != 0xD8) return mlsys_set_error(MLSYS_ERR_PARSE, "pcr: not a JPEG: %s", mlsys__pcr_magic(in, n));
  memset(&src, 0, sizeof src);
  memset(&dst, 0, sizeof dst);
  src.err = jpeg_std_error(&je.pub);
  je.pub.error_exit = mlsys__pcr_jexit;
  je.pub.emit_message = mlsys__pcr_jemit;
  je.allow_warnings = d.allow_warnings;
  je.msg[0] = 0;
  if (setjmp(je.jb)) {
    st = mlsys_set_error(MLSYS_ERR_PARSE, "pcr: libjpeg: %s", je.msg);
    goto done;
  }
  jpeg_create_decompress(&src);
  jpeg_mem_src(&src, in, (unsigned long)n);
  jpeg_read_header(&src, TRUE);
  if (src.data_precision != 8) { st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "pcr: %d-bit JPEG (8-bit only)", src.data_precision); goto done; }
  if (!(src.jpeg_color_space == JCS_GRAYSCALE && src.num_components == 1) && !(src.jpeg_color_space == JCS_YCbCr && src.num_components == 3)) {
    st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "pcr: colour space %d with %d components (grayscale or YCbCr only; spec §3.1 step 2)",
                         (int)src.jpeg_color_space, src.num_components);
    goto done;
  }
  coef = jpeg_read_coefficients(&src);
  dst.err = &je.pub;
  jpeg_create_compress(&dst);
  have_dst = 1;
  jpeg_copy_critical_parameters(&src, &dst);
  jpeg_simple_progression(&dst);
  if (dst.num_scans > max_scans) {
    st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "pcr: the progression has %d scans (limit %d)", dst.num_scans, max_scans);
    goto done;
  }
  dst.optimize_coding = d.no_optimize ? FALSE : TRUE;
  jpeg_mem_dest(&dst, (unsigned char **)&mem, &mlen);
  jpeg_write_coefficients(&dst, coef);   /* no markers copied: jpegtran -copy none */
  jpeg_finish_compress(&dst);
  jpeg_finish_decompress(&src);
  if (!(*out = (uint8_t *)mlsys_alloc(mlen ? (size_t)mlen : 1, 1))) { st = MLSYS_ERR_NOMEM; goto done; }
  memcpy(*out, mem, mlen);
  *out_len = mlen;
done:
  if (have_dst) jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  free(mem);   /* jpeg_mem_dest's buffer comes from malloc */
  return st;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PCR_IMPLEMENTATION_DONE */
#endif /* MLSYS_PCR_IMPLEMENTATION */
