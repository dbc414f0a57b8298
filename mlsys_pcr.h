/* mlsys_pcr.h — Progressive Compressed Records (PCR): prefix-readable progressive-JPEG records.      MIT licence.

   Implements Progressive Compressed Records (M. Kuchnik, G. Amvrosiadis, V. Smith, "Progressive Compressed Records:
   Taking a Byte out of Deep Learning Data", VLDB 14, 2021; M. Kuchnik, PhD thesis CMU-CS-23-119, ch. 4); docs/pcr.md is
   the guide. Section numbers (§) in the comments are those of the design specification the header was written from
   (not shipped with it). A record stores N images as progressive JPEGs re-laid out so that scan group g holds scan g
   of every image. Reading the first R(k) bytes of a record gives every image at fidelity k (k scans); reading all K
   groups gives the exact coefficients of the source JPEG (a lossless transcode). Fidelity is chosen at read time.

   CONTENTS
     1. JPEG layer (§3.1–3.2): the lossless progressive transcode (byte-identical to
        `jpegtran -copy none -optimize -progressive`), the scan split, EXIF orientation, a baseline encoder and the
        quality search used by the static re-encode baseline (§4.3).
     2. Writer (§2.4, §3.1): records of N images, scan group g = scan g of every image, a directory with R(k), per-group
        CRC-32C, labels and opaque per-image metadata; written to path.tmp, fsync'ed, renamed. Grayscale scans map to
        luma-aligned groups (§3.1 step 5). `store_as_is` keeps the input JPEGs whole in one group: the plain JPEG record
        baseline (TFRecord-like) on the same reader.
     3. Reader (§2.6, §3.3): open a record by pread, mmap or O_DIRECT (or from memory), load the first k groups with one
        sequential read (two in all with the open), verify every loaded group's CRC, reassemble image i at fidelity k
        (header ‖ parts 1..k ‖ EOI). A token-bucket throttle emulates slow storage. Damage is an error naming the
        record, group and image: never a silently degraded image.
     4. Dataset index (§2.5) and the epoch stream (§3.3 step 5): shuffled record order and a shuffle pool of records,
        read-ahead threads, fidelity changes at record boundaries.
     5. Decoding (stb_image or libjpeg-turbo with DCT scaling; every input passes the strict T.81 walk of
        mlsys_common.h first and at most max_scans scans), MS-SSIM exactly as §3.6 defines it, PSNR.
     6. The I/O model (§3.4, Theorem 4.4.1) and the fidelity choosers (§3.7): the MS-SSIM threshold rule, the
        gradient-similarity autotuner through a user callback, the I/O-model rule.
     7. A source for mlsys_pipeline.h (when that header is included first): PCR records as the input of the JPEG
        training pipeline.
   The `mlsys pcr pack|info|read|tune` command (cli/pcr.c) and docs/pcr.md are the tour.

   USAGE: in exactly one .c file
       #define MLSYS_PCR_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for every header)
       #include "mlsys_pcr.h"
   link: -ljpeg (libjpeg-turbo, Debian libjpeg62-turbo-dev) -lpthread -lm, and what mlsys_common.h's implementation
         needs: -llpsolve55 -lcolamd -ldl (or define MLSYS_NO_LPSOLVE where no MILP is solved)
   stb_image (Debian libstb-dev) is compiled into the implementation as static functions (JPEG and PNG); a program
   holding mlsys_pipeline.h's implementation too shares one copy.

   EXAMPLE (examples/pcr_basics.c)
       mlsys_pcr_writer *w; mlsys_pcr_reader *r; mlsys_pcr_info info;
       mlsys_pcr_writer_create(NULL, &w);                        // K = 10 groups (libjpeg's simple progression)
       for (i = 0; i < n; i++) mlsys_pcr_writer_add_jpeg(w, jpg[i], len[i], label[i], NULL, 0);
       mlsys_pcr_writer_finish_file(w, "train-000000.pcr");
       mlsys_pcr_writer_destroy(w);
       mlsys_pcr_open_file("train-000000.pcr", NULL, &r);
       mlsys_pcr_load(r, 2);                                     // one read of R(2) bytes: every image at 2 scans
       mlsys_pcr_get_info(r, &info);
       mlsys_pcr_image_jpeg(r, 0, 2, NULL, 0, &need);            // then a buffer of `need` bytes, or mlsys_pcr_decode
       mlsys_pcr_close(r);

   ERRORS: every call that can fail returns an mlsys_status and sets mlsys_last_error() to a sentence naming the
   problem ("pcr: rec.pcr: group 3 (image 17 of 59): CRC-32C 0x1234abcd, expected 0x9f00e1c2"); mlsys_pcr_last_problem()
   says which of the spec's error kinds it was (FORMAT, VERSION, CRC, TRUNCATED, NOT_JPEG, BAD_JPEG, LIMIT, RANGE, ...)
   for programs that act on it (docs/ARCHITECTURE.md 34).

   THREADS: a loaded reader is immutable: image_jpeg, image_segments and decode may run from many threads; load,
   read_one and close need the reader to themselves. A stream is driven by one thread (it owns read-ahead threads).
   A throttle is thread-safe and may be shared by readers.

   NOT DONE: nvJPEG decoding (MLSYS_PCR_DEC_NVJPEG is UNSUPPORTED: the CUDA 13 toolkit here has no nvJPEG); importing
   the authors' protobuf records; CMYK/YCCK inputs other than through reencode_nonstandard; arithmetic-coded output.
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

#define MLSYS_PCR_MAX_GROUPS 64
#define MLSYS_PCR_MAX_SCANS 64
#define MLSYS_PCR_MAX_IMAGES (1u << 24)

/* The spec's error kinds (§7.2), for programs that act on them; the status and message say the rest. */
typedef enum {
  MLSYS_PCR_P_NONE = 0,
  MLSYS_PCR_P_FORMAT,       /* a record or index violates the format (magic, sizes, directory, lengths) */
  MLSYS_PCR_P_VERSION,      /* version_major ≠ 1 or unknown flag bits */
  MLSYS_PCR_P_CRC,          /* a CRC-32C mismatch (prefix, group or full image) */
  MLSYS_PCR_P_TRUNCATED,    /* the file ends before the bytes needed */
  MLSYS_PCR_P_NOT_JPEG,     /* input is not a JPEG (the format is named by its magic bytes) */
  MLSYS_PCR_P_BAD_JPEG,     /* a damaged JPEG (libjpeg's or the T.81 walk's message) */
  MLSYS_PCR_P_UNSUPPORTED,  /* a valid JPEG the lossless path does not take (12-bit, RGB/CMYK colour, ...) */
  MLSYS_PCR_P_LIMIT,        /* more scans, images or groups than the limits */
  MLSYS_PCR_P_DECODE,       /* a decoder failed on bytes that passed the checks */
  MLSYS_PCR_P_RANGE,        /* k or an image index out of range, or groups not loaded */
  MLSYS_PCR_P_IO,           /* a system call failed */
  MLSYS_PCR_P_NOBACKEND     /* the requested backend is not in this build */
} mlsys_pcr_problem;
/* This thread's kind of the last PCR failure (reset at the start of each PCR call that can fail). */
MLSYS_DEF mlsys_pcr_problem mlsys_pcr_last_problem(void);
MLSYS_DEF const char *mlsys_pcr_problem_name(mlsys_pcr_problem p);   /* "FORMAT", "CRC", ... */
MLSYS_DEF void mlsys_pcr_free(void *p);                              /* frees what PCR calls allocate for you */

/* ---------------------------------------------------------------------------------------------------------------
   1. JPEG layer
   --------------------------------------------------------------------------------------------------------------- */
/* One scan (SOS segment and its entropy-coded data): its header fields and its part's byte range [begin, end). The
   first part begins right after the JPEG header (everything before the first SOS); part j > 1 begins where part j−1
   ends (so it starts with that scan's DHT, if any, then its SOS). */
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
/* The marker walk of spec §3.2 over jpg[0, n), on mlsys_jpeg_check (the strict T.81 walk: tables defined before use,
   Huffman tables of at most 256 codes). Errors: MLSYS_ERR_PARSE (NOT_JPEG: no SOI, the format named; BAD_JPEG: the
   walk's message with the byte offset, truncation, segments between the last scan and EOI); MLSYS_ERR_TOO_BIG (LIMIT:
   more than MLSYS_PCR_MAX_SCANS scans). Bytes after EOI are ignored. header ‖ part 1 ‖ … ‖ part n ‖ FF D9 == jpg. */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_split(const uint8_t *jpg, size_t n, mlsys_pcr_jpeg_layout *out);

/* A scan of a progression script: component indices 0..ncomp−1 (not ids), spectral range, successive approximation. */
typedef struct { int ncomp, comp[4], ss, se, ah, al; } mlsys_pcr_scan_spec;
/* Progression scripts (the header's script_id): libjpeg's jpeg_simple_progression (10 scans for YCbCr, 6 for gray),
   spectral selection only (5 for YCbCr: DC; Y 1–5; Cr 1–63; Cb 1–63; Y 6–63 — 3 for gray: DC; 1–5; 6–63), whose
   full decode costs about the instructions of a baseline JPEG (§3.5; measured here: libjpeg-turbo 0.83× the baseline
   rate, twice the simple script's 0.43×, stb_image 1.17×; bench/RESULTS.md §7.2), or a custom list. */
enum { MLSYS_PCR_SCRIPT_SIMPLE = 1, MLSYS_PCR_SCRIPT_SPECTRAL = 2, MLSYS_PCR_SCRIPT_CUSTOM = 255 };
typedef struct {
  int script;               /* 0 → MLSYS_PCR_SCRIPT_SIMPLE */
  const mlsys_pcr_scan_spec *custom; int ncustom;   /* for MLSYS_PCR_SCRIPT_CUSTOM (≤ max_scans entries) */
  int no_optimize;          /* 0: optimised Huffman tables (jpegtran -optimize) */
  int allow_warnings;       /* 0: a libjpeg warning on the input (premature end, corrupt data) is an error */
  int reencode_nonstandard; /* 0: RGB/CMYK/YCCK input is UNSUPPORTED; 1: decoded and re-encoded as YCbCr (lossy) */
  int quality;              /* quality of that re-encode (0 → 95) */
  int max_scans;            /* 0 → MLSYS_PCR_MAX_SCANS */
} mlsys_pcr_transcode_desc;
/* Lossless transcode of a baseline or progressive JPEG to the progression script (spec §3.1 steps 1–3): the DCT
   coefficients are kept, no markers are copied (EXIF and ICC dropped). With the default desc the output is
   byte-identical to `jpegtran -copy none -optimize -progressive`. *out from mlsys_alloc (free with mlsys_pcr_free).
   d may be NULL. *reencoded (may be NULL) = 1 when the input was re-encoded (reencode_nonstandard). Errors:
   MLSYS_ERR_PARSE (NOT_JPEG; BAD_JPEG with libjpeg's message), MLSYS_ERR_UNSUPPORTED (12-bit, lossless, RGB/CMYK/YCCK
   colour), MLSYS_ERR_TOO_BIG (LIMIT: more scans than max_scans), MLSYS_ERR_ARG (a bad custom script), NOMEM. */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *d, uint8_t **out,
                                                     size_t *out_len);
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive_ex(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *d, uint8_t **out,
                                                        size_t *out_len, int *reencoded);
/* The EXIF orientation (1..8) of a JPEG's APP1 Exif segment, 0 when there is none or it cannot be read. */
MLSYS_DEF int mlsys_pcr_jpeg_orientation(const uint8_t *jpg, size_t n);
/* Encodes 8-bit pixels (ncomp 1 gray or 3 RGB, rows top to bottom) as a baseline (progressive = 0) or simple-
   progressive JPEG at quality 1..100 with optimised Huffman tables, 4:2:0 for colour (libjpeg's defaults). */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_encode(const uint8_t *px, int width, int height, int ncomp, int quality, int progressive,
                                             uint8_t **out, size_t *out_len);
/* The static re-encode baseline at matched bytes (§4.3): decodes jpg (libjpeg) and re-encodes it as a baseline JPEG
   at the highest quality in [1, 100] whose size is ≤ target_bytes (binary search; quality 1 when even that is larger).
   *quality and *out (free with mlsys_pcr_free). */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_requality(const uint8_t *jpg, size_t n, size_t target_bytes, int *quality, uint8_t **out,
                                                size_t *out_len);

/* ---------------------------------------------------------------------------------------------------------------
   2. Writer (record format v1, spec §2.4)
   --------------------------------------------------------------------------------------------------------------- */
/* Image flags (the image table's iflags). */
enum { MLSYS_PCR_IF_REENCODED = 1, MLSYS_PCR_IF_GRAY_MAPPED = 2, MLSYS_PCR_IF_HAS_ORIENT = 4 };
typedef struct {
  int n_groups;             /* K; 0 → the script's colour scan count (10 simple, 5 spectral; custom: its length), 1 with store_as_is */
  mlsys_pcr_transcode_desc transcode;
  const uint8_t *gray_map; int gray_map_len;   /* 1-based groups for a 1-component image's scans, strictly increasing;
                                                  NULL → {1,2,5,6,7,10} (simple, K = 10), {1,2,5} (spectral, K = 5),
                                                  else scan j → group j */
  int align_log2;           /* 0: packed; 9..21: groups start at multiples of 2^align_log2 (for O_DIRECT readers) */
  uint32_t max_images;      /* 0 → MLSYS_PCR_MAX_IMAGES */
  int keep_progressive_input; /* 1: a progressive input whose scans map as they are is stored without re-transcoding */
  int store_as_is;          /* 1: store every input JPEG unchanged, its scans all in group 1 (K = 1): the plain JPEG
                               record baseline; any JPEG the T.81 walk accepts (baseline, progressive, RGB) */
} mlsys_pcr_writer_desc;
typedef struct mlsys_pcr_writer mlsys_pcr_writer;
MLSYS_DEF mlsys_status mlsys_pcr_writer_create(const mlsys_pcr_writer_desc *d /* NULL: defaults */, mlsys_pcr_writer **w);
/* Transcodes (§3.1), splits (§3.2) and buffers one image; extra (≤ 16 MiB, may be NULL) is copied. Errors: those of
   the transcode and split, MLSYS_ERR_TOO_BIG (LIMIT: max_images, more scans than groups), MLSYS_ERR_ARG. On error the
   image is not added and the writer stays usable. */
MLSYS_DEF mlsys_status mlsys_pcr_writer_add_jpeg(mlsys_pcr_writer *w, const uint8_t *jpg, size_t n, int64_t label, const void *extra,
                                                 uint32_t extra_len);
/* Encodes pixels (ncomp 1 or 3) as a JPEG at transcode.quality (0 → 95), then adds it (iflags REENCODED). */
MLSYS_DEF mlsys_status mlsys_pcr_writer_add_pixels(mlsys_pcr_writer *w, const uint8_t *px, int width, int height, int ncomp,
                                                   int64_t label, const void *extra, uint32_t extra_len);
MLSYS_DEF uint32_t mlsys_pcr_writer_count(const mlsys_pcr_writer *w);
/* Lays the record out and writes it to path.tmp, fsync, rename to path (the directory is fsync'ed too). A record holds
   at least one image. The writer is emptied and can take the next record's images. */
MLSYS_DEF mlsys_status mlsys_pcr_writer_finish_file(mlsys_pcr_writer *w, const char *path);
MLSYS_DEF mlsys_status mlsys_pcr_writer_finish_mem(mlsys_pcr_writer *w, uint8_t **buf, size_t *len);   /* free with mlsys_pcr_free */
MLSYS_DEF void mlsys_pcr_writer_destroy(mlsys_pcr_writer *w);

/* ---------------------------------------------------------------------------------------------------------------
   3. Reader (§2.6, §3.3)
   --------------------------------------------------------------------------------------------------------------- */
/* A token bucket shared by the readers it is given: a read of b bytes takes b tokens, refilled at bytes_per_s up to
   burst_bytes (0 → 1 MiB); reads wait for their tokens (the spec's slow-storage emulation, [repo] posix_throttle). */
typedef struct mlsys_pcr_throttle mlsys_pcr_throttle;
MLSYS_DEF mlsys_status mlsys_pcr_throttle_create(double bytes_per_s, double burst_bytes, mlsys_pcr_throttle **t);
MLSYS_DEF void mlsys_pcr_throttle_take(mlsys_pcr_throttle *t, uint64_t bytes);   /* blocks until the bytes may be read */
MLSYS_DEF void mlsys_pcr_throttle_destroy(mlsys_pcr_throttle *t);

enum { MLSYS_PCR_IO_PREAD = 0, MLSYS_PCR_IO_MMAP = 1, MLSYS_PCR_IO_DIRECT = 2 };
typedef struct {
  int io;                   /* MLSYS_PCR_IO_*: pread (default), mmap, O_DIRECT (4 KiB-aligned reads; a filesystem
                               without O_DIRECT gives MLSYS_ERR_UNSUPPORTED) */
  int skip_crc;             /* 1: no CRC checks (the structure is still checked). Damage then decodes silently (§3.3) */
  double throttle_Bps;      /* > 0: a private token bucket at this rate (burst 1 MiB) */
  mlsys_pcr_throttle *throttle;  /* a shared bucket (takes precedence over throttle_Bps) */
  uint32_t max_images;      /* refuse records with more images (0 → MLSYS_PCR_MAX_IMAGES) */
  int max_groups;           /* refuse records with more groups (0 → MLSYS_PCR_MAX_GROUPS) */
  int load_k;               /* open_file: also load groups 1..load_k in the same read as the prefix (0: prefix only) */
} mlsys_pcr_reader_desc;
typedef struct {
  uint32_t n_images;
  int n_groups;             /* K */
  int script_id;            /* 0 unknown (store_as_is), 1 simple, 2 spectral, 255 custom */
  uint32_t flags;
  int align_log2;
  uint64_t prefix_bytes;    /* P = R(0) */
  uint64_t file_bytes;      /* the record's size */
  uint64_t group_end[MLSYS_PCR_MAX_GROUPS + 1];   /* group_end[k] = R(k), the bytes to read for fidelity k */
  uint64_t group_payload[MLSYS_PCR_MAX_GROUPS + 1];/* [g] = Σ part lengths of group g (from the directory: bytes − 16 − 4N) */
  int loaded_k;             /* groups loaded and verified so far */
} mlsys_pcr_info;
typedef struct {
  int64_t label;
  uint32_t width, height;
  uint32_t src_bytes;       /* size of the writer's input */
  uint32_t full_crc;        /* CRC-32C of the fully reassembled JPEG */
  uint32_t jhdr_len;        /* its JPEG header (before the first SOS) */
  uint8_t ncomp, nscans;
  uint16_t iflags;          /* MLSYS_PCR_IF_*; bits 8..11 the EXIF orientation (1..8) when HAS_ORIENT */
  const uint8_t *extra; uint32_t extra_len;   /* points into the reader */
} mlsys_pcr_image;
typedef struct mlsys_pcr_reader mlsys_pcr_reader;
/* Opens a record: reads the first min(4096, size) bytes, then the rest of the prefix (and groups up to load_k), and
   validates the header, directory, image table and prefix CRC (§2.6). A file shorter than the record opens when the
   prefix is whole (loads past the end give TRUNCATED). Errors: MLSYS_ERR_IO (IO), MLSYS_ERR_PARSE (FORMAT, VERSION,
   CRC, TRUNCATED), MLSYS_ERR_TOO_BIG (LIMIT), MLSYS_ERR_UNSUPPORTED (O_DIRECT refused by the filesystem). */
MLSYS_DEF mlsys_status mlsys_pcr_open_file(const char *path, const mlsys_pcr_reader_desc *d, mlsys_pcr_reader **r);
/* The same over a record in memory; buf is not copied and must outlive the reader. */
MLSYS_DEF mlsys_status mlsys_pcr_open_mem(const uint8_t *buf, size_t len, const mlsys_pcr_reader_desc *d, mlsys_pcr_reader **r);
MLSYS_DEF mlsys_status mlsys_pcr_get_info(const mlsys_pcr_reader *r, mlsys_pcr_info *out);
/* Makes bytes [0, R(k)) resident with one sequential read of what is missing and verifies groups ≤ k (magic, index,
   N, Σ lengths, sizes, CRC; first-group parts non-empty). k > K is RANGE; k ≤ loaded is free. Errors name the file,
   the group and, for lengths, the image: MLSYS_ERR_PARSE (TRUNCATED, FORMAT, CRC), MLSYS_ERR_ARG (RANGE), IO. A
   failed load leaves the groups loaded before it usable. */
MLSYS_DEF mlsys_status mlsys_pcr_load(mlsys_pcr_reader *r, int k);
MLSYS_DEF mlsys_status mlsys_pcr_image_info(const mlsys_pcr_reader *r, uint32_t i, mlsys_pcr_image *out);
/* Image i at fidelity k (1 ≤ k ≤ loaded): header ‖ parts of groups 1..k ‖ FF D9 into dst[0, cap); dst NULL → only
   *len (the size needed). Errors: RANGE (i, k, not loaded), MLSYS_ERR_TOO_BIG when cap is short (with *len set). */
MLSYS_DEF mlsys_status mlsys_pcr_image_jpeg(const mlsys_pcr_reader *r, uint32_t i, int k, uint8_t *dst, size_t cap, size_t *len);
/* The same as a list of at most k + 2 segments pointing into the reader (header, the non-empty parts, EOI). */
MLSYS_DEF mlsys_status mlsys_pcr_image_segments(const mlsys_pcr_reader *r, uint32_t i, int k, const uint8_t **ptr, size_t *len,
                                                int *nseg);
/* Image i at fidelity k without loading groups: reads the length tables of groups ≤ k (once per reader) and the k parts
   (small preads; for random access). CRCs of groups cannot be checked without reading them whole: at k = K the
   image's full_crc is checked instead. *jpg from mlsys_alloc (free with mlsys_pcr_free). */
MLSYS_DEF mlsys_status mlsys_pcr_read_one(mlsys_pcr_reader *r, uint32_t i, int k, uint8_t **jpg, size_t *len);
MLSYS_DEF uint64_t mlsys_pcr_bytes_read(const mlsys_pcr_reader *r);   /* bytes made resident (logical; O_DIRECT rounds reads up to 4 KiB) */
MLSYS_DEF void mlsys_pcr_close(mlsys_pcr_reader *r);

/* ---------------------------------------------------------------------------------------------------------------
   4. Dataset index (§2.5) and the epoch stream (§3.3 step 5)
   --------------------------------------------------------------------------------------------------------------- */
/* index.pcri: the R(k) of every record, so E[s_k] (§3.4) needs no record opened. Paths are stored relative to the
   index's directory. */
typedef struct mlsys_pcr_index mlsys_pcr_index;
MLSYS_DEF mlsys_status mlsys_pcr_index_build(const char *const *record_paths, int n, const char *index_path);
MLSYS_DEF mlsys_status mlsys_pcr_index_open(const char *path, mlsys_pcr_index **ix);
MLSYS_DEF int mlsys_pcr_index_records(const mlsys_pcr_index *ix);
MLSYS_DEF int mlsys_pcr_index_max_groups(const mlsys_pcr_index *ix);   /* K_max */
MLSYS_DEF uint64_t mlsys_pcr_index_images(const mlsys_pcr_index *ix);
/* Record j: its path (resolved against the index's directory), images, K, and R[0..K_max] (R[k] = R(K) for k > K). */
MLSYS_DEF mlsys_status mlsys_pcr_index_record(const mlsys_pcr_index *ix, int j, const char **path, uint32_t *n_images, int *K,
                                              const uint64_t **R);
/* E[s_k] = Σ_records R(k) / Σ N for k = 0..K_max (mean_bytes has K_max + 1 entries). */
MLSYS_DEF mlsys_status mlsys_pcr_index_mean_bytes(const mlsys_pcr_index *ix, double *mean_bytes);
MLSYS_DEF void mlsys_pcr_index_close(mlsys_pcr_index *ix);

typedef struct {
  int k;                    /* fidelity; 0 → K of each record; above a record's K → its K */
  uint64_t seed;            /* epoch 0's shuffle seed (rewind gives later ones) */
  int no_shuffle;           /* 1: records and images in order */
  int buffer_records;       /* shuffle pool in records; 0 → 4 ([repo] random_buff_mult) */
  int io_threads;           /* read-ahead threads; 0 → 1 */
  mlsys_pcr_reader_desc io; /* throttle_Bps > 0 makes one bucket shared by the stream's reads */
} mlsys_pcr_stream_desc;
typedef struct {
  const uint8_t *jpg; size_t len;   /* valid until the next call */
  int64_t label;
  uint32_t record, index;   /* record position in the paths given, image index in it */
  int k;                    /* the fidelity it was read at */
  uint32_t record_images;   /* images in its record */
  uint64_t record_bytes;    /* bytes read for its record (R(k) with pread) */
} mlsys_pcr_item;
typedef struct mlsys_pcr_stream mlsys_pcr_stream;
MLSYS_DEF mlsys_status mlsys_pcr_stream_open(const char *const *paths, int n, const mlsys_pcr_stream_desc *d, mlsys_pcr_stream **s);
/* One image (*end = 0) or the end of the epoch (*end = 1). A damaged record fails with its error (named record and group). */
MLSYS_DEF mlsys_status mlsys_pcr_stream_next(mlsys_pcr_stream *s, mlsys_pcr_item *it, int *end);
/* Fidelity for records read from now on (records already read ahead keep theirs: see mlsys_pcr_item.k). */
MLSYS_DEF mlsys_status mlsys_pcr_stream_set_k(mlsys_pcr_stream *s, int k);
/* Starts the next epoch (or restarts this one) with a new shuffle seed. */
MLSYS_DEF mlsys_status mlsys_pcr_stream_rewind(mlsys_pcr_stream *s, uint64_t epoch_seed);
MLSYS_DEF uint64_t mlsys_pcr_stream_bytes_read(const mlsys_pcr_stream *s);   /* Σ bytes made resident by its readers */
MLSYS_DEF void mlsys_pcr_stream_close(mlsys_pcr_stream *s);

/* ---------------------------------------------------------------------------------------------------------------
   5. Decoding and fidelity metrics
   --------------------------------------------------------------------------------------------------------------- */
enum { MLSYS_PCR_DEC_STB = 0, MLSYS_PCR_DEC_LIBJPEG = 1, MLSYS_PCR_DEC_NVJPEG = 2 };
typedef struct {
  int backend;              /* MLSYS_PCR_DEC_* (0: stb_image) */
  int channels;             /* 0 → 3 (RGB); 1: luminance */
  int scale_denom;          /* libjpeg: 1, 2, 4, 8 (DCT-domain downscaling); stb_image: 1 only. 0 → 1 */
  int max_scans;            /* 0 → MLSYS_PCR_MAX_SCANS: more scans are refused before decoding (LIMIT) */
  int64_t max_pixels;       /* 0 → 2^26 */
} mlsys_pcr_decode_desc;
/* Decodes a JPEG to 8-bit pixels (rows top to bottom, channels interleaved); *px from mlsys_alloc (mlsys_pcr_free).
   The bytes pass mlsys_jpeg_check first (a damaged or hostile stream is refused before a decoder sees it); libjpeg
   warnings are errors. Errors: MLSYS_ERR_PARSE (NOT_JPEG, BAD_JPEG, DECODE), MLSYS_ERR_TOO_BIG (LIMIT), UNSUPPORTED
   (NOBACKEND for nvJPEG; scale_denom ≠ 1 with stb_image), MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_pcr_decode(const uint8_t *jpg, size_t n, const mlsys_pcr_decode_desc *d, uint8_t **px, int *w, int *h);
/* MS-SSIM of img against the reference ref (w × h × c, 8-bit), exactly §3.6 (the TF-models msssim.py the authors use:
   5 levels, Gaussian window min(11, H_l, W_l) with σ = 1.5·s/11, valid filtering, 2×2 box downsampling with the last
   row/column replicated, weights 0.0448 0.2856 0.3001 0.2363 0.1333). cs and ssim are clamped at 0 before the power
   (the reference gives NaN there). *ssim1 (may be NULL) = the level-1 SSIM. msssim(a, a) = 1 exactly. */
MLSYS_DEF mlsys_status mlsys_pcr_msssim(const uint8_t *ref, const uint8_t *img, int w, int h, int c, double *msssim, double *ssim1);
MLSYS_DEF double mlsys_pcr_psnr(const uint8_t *a, const uint8_t *b, size_t n);   /* dB over n values; +inf when equal */

/* ---------------------------------------------------------------------------------------------------------------
   6. I/O model (§3.4) and fidelity selection (§3.7)
   --------------------------------------------------------------------------------------------------------------- */
/* E[s_k] = Σ_r R_r(k) / Σ_r N_r for k = 0..K_max over loaded-or-not readers (R from their directories). */
MLSYS_DEF mlsys_status mlsys_pcr_mean_bytes(mlsys_pcr_reader *const *recs, int nrec, double *mean_bytes /* [K_max + 1] */);
/* Theorem 4.4.1: S_max = E[s_from] / E[s_to]. */
MLSYS_DEF double mlsys_pcr_max_speedup(const double *mean_bytes, int k_from, int k_to);
typedef struct {
  double bandwidth_Bps;     /* W (0: unbounded) */
  double accel_img_s;       /* the consumer's rate X_acc (0: unbounded) */
  int cores;                /* C (0 → 1) */
  const double *dec_img_s_core;  /* [K+1] single-core decode rate at k (NULL: unbounded) */
} mlsys_pcr_sys;
/* X(k) = min(X_acc, W / E[s_k], C · r_dec(k)) images/s (§3.4, Little's law). */
MLSYS_DEF double mlsys_pcr_predict_rate(const mlsys_pcr_sys *s, const double *mean_bytes, int k);
/* §3.7(c): the largest k in [k_floor, K] that is not I/O-bound (W / E[s_k] ≥ min(X_acc, C · r_dec(k))); k_floor when
   every k ≥ k_floor is I/O-bound. */
MLSYS_DEF int mlsys_pcr_select_k_io(const mlsys_pcr_sys *s, const double *mean_bytes, int K, int k_floor);

/* The gradient of a frozen model's loss on a batch: n decoded images (px[i] is w[i] × h[i] × c) with their labels;
   write the flattened gradient (dim floats). Return 0, or nonzero (the tuning fails with it). */
typedef int (*mlsys_pcr_grad_fn)(void *ctx, const uint8_t *const *px, const int *w, const int *h, int c, const int64_t *labels, int n,
                                 float *grad, size_t dim);
typedef struct {
  double threshold; int threshold_set;   /* threshold_set = 0 → 0.8 (the thesis's) */
  const int *candidates; int ncand;      /* NULL → {1, 2, 5, K} ([repo]) */
  int n_images;             /* images scored (0 → 2560, the thesis's protocol); capped at the records' images */
  int batch;                /* 0 → 256 */
  int start_epoch, every;   /* mlsys_pcr_autotune_due: 0 → 5 and 20; start_epoch −1 → 0 */
  mlsys_pcr_decode_desc decode;
} mlsys_pcr_autotune_desc;
/* 1 when the autotuner should run at `epoch` (never before start_epoch; then at start_epoch and every `every` epochs
   after the last tuning; last_tuned_epoch < 0: never tuned). */
MLSYS_DEF int mlsys_pcr_autotune_due(const mlsys_pcr_autotune_desc *d, int epoch, int last_tuned_epoch);
/* §3.7(b): score(k) = cos(g_K, g_k) with g_k = Σ over batches of the gradient on the same images decoded at k
   (accumulated in double); score[K] = 1 exactly; non-candidates score 0. *k_sel = the smallest candidate with
   score > threshold (strict, as [repo]), K when none. Loads to their K the records that hold the images scored.
   score has K + 1 entries. */
MLSYS_DEF mlsys_status mlsys_pcr_grad_similarity(mlsys_pcr_reader *const *recs, int nrec, const mlsys_pcr_autotune_desc *d,
                                                 mlsys_pcr_grad_fn fn, void *ctx, size_t dim, double *score, int *k_sel);
/* Mean MS-SSIM over the first n_images images (0 → all; records in order) of each k = 1..K against k = K, one decoder
   (d's backend); mean_msssim[0] = 0. Records must share K; those holding the images scored are loaded to K. */
MLSYS_DEF mlsys_status mlsys_pcr_msssim_profile(mlsys_pcr_reader *const *recs, int nrec, int n_images, const mlsys_pcr_decode_desc *d,
                                                double *mean_msssim /* [K+1] */);
/* Progress of long work: called with the units done so far and the total (here: images scored, 1..n); return nonzero
   to stop (the call then fails with MLSYS_ERR_CANCELED). It runs in the caller's thread. */
typedef int (*mlsys_pcr_progress_fn)(void *user, uint64_t done, uint64_t total);
/* mlsys_pcr_msssim_profile calling fn (NULL: none) after each image is scored at every k: the profile of N images
   decodes each K times and computes K − 1 MS-SSIMs, tens of ms per photo, so N = 256 takes minutes. */
MLSYS_DEF mlsys_status mlsys_pcr_msssim_profile_progress(mlsys_pcr_reader *const *recs, int nrec, int n_images, const mlsys_pcr_decode_desc *d,
                                                         double *mean_msssim, mlsys_pcr_progress_fn fn, void *user);
/* §3.7(a): the smallest k with mean_msssim[k] ≥ tau (0 → 0.95); K when none. */
MLSYS_DEF int mlsys_pcr_select_k_msssim(const double *mean_msssim, int K, double tau);
/* §3.7(b)'s rule alone: the smallest candidate k in 1..K with score[k] > threshold (strict, as [repo]); K when none. */
MLSYS_DEF int mlsys_pcr_select_k_scores(const double *score, int K, const int *candidates, int ncand, double threshold);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PCR_H */

/* ---------------------------------------------------------------------------------------------------------------
   7. A source for mlsys_pipeline.h (declared when mlsys_pipeline.h was included before this header)
   --------------------------------------------------------------------------------------------------------------- */
#if defined(MLSYS_PIPELINE_H) && !defined(MLSYS_PCR_PIPE_H)
#define MLSYS_PCR_PIPE_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
  mlsys_pcr_stream_desc stream;   /* fidelity, shuffling, read-ahead, throttle */
  int decode;               /* 0: elements are {JPEG bytes (U8), label (I64)}; 1: {RGB8 image {h, w, 3}, label} */
  mlsys_pcr_decode_desc dec;/* for decode = 1 */
  const char *name;         /* NULL → "pcr" */
} mlsys_pcr_pipe_desc;
/* A generator source over the records (one pass = one epoch of the stream; each pass reshuffles with seed + epoch).
   A disk operator: the bytes its readers make resident count for Plumber's disk bound. */
MLSYS_DEF mlsys_status mlsys_pcr_pipe_source(mlsys_pipe *p, const char *const *paths, int n, const mlsys_pcr_pipe_desc *d, int *out);
/* The JPEG training pipeline of mlsys_pipeline.h (decode → repeat → crop → flip → normalize → batch → prefetch) over
   PCR records read at fidelity d->stream.k. */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_pipeline(mlsys_pipe *p, const char *const *paths, int n, const mlsys_pcr_pipe_desc *d,
                                               const mlsys_pipe_jpeg_desc *jd, mlsys_pipe_jpeg_nodes *nodes);
#ifdef __cplusplus
}
#endif
#endif

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_PCR_IMPLEMENTATION
#ifndef MLSYS_PCR_IMPLEMENTATION_DONE
#define MLSYS_PCR_IMPLEMENTATION_DONE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jpeglib.h>
#include <jerror.h>

/* stb_image, compiled once per translation unit by whichever of mlsys_pcr.h and mlsys_pipeline.h comes first, with
   the same options (JPEG and PNG, static, allocating through the mlsys hooks). */
#ifndef MLSYS__STBI_COMPILED
#ifdef STBI_INCLUDE_STB_IMAGE_H
#error "mlsys_pcr.h: stb_image.h was included before the implementation; include it after, or in another file"
#endif
#define MLSYS__STBI_COMPILED
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_MALLOC(n) MLSYS_MALLOC(n)
#define STBI_REALLOC(p, n) MLSYS_REALLOC(p, n)
#define STBI_FREE(p) MLSYS_FREE(p)
#define STBI_ASSERT(x) MLSYS_ASSERT(x)
#include <stb/stb_image.h>
#undef STB_IMAGE_IMPLEMENTATION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors: the status and message go through mlsys_common.h; the spec's error kind is kept beside them ---- */
#if defined(__cplusplus)
#define MLSYS__PCR_TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define MLSYS__PCR_TLS _Thread_local
#else
#define MLSYS__PCR_TLS __thread
#endif
static MLSYS__PCR_TLS mlsys_pcr_problem mlsys__pcr_prob;

MLSYS_DEF mlsys_pcr_problem mlsys_pcr_last_problem(void) { return mlsys__pcr_prob; }
MLSYS_DEF const char *mlsys_pcr_problem_name(mlsys_pcr_problem p) {
  static const char *const names[] = {"NONE", "FORMAT", "VERSION", "CRC", "TRUNCATED", "NOT_JPEG", "BAD_JPEG",
                                      "UNSUPPORTED", "LIMIT", "DECODE", "RANGE", "IO", "NOBACKEND"};
  return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}
MLSYS_DEF void mlsys_pcr_free(void *p) { mlsys_free(p); }

static mlsys_status mlsys__pcr_fail(mlsys_pcr_problem p, mlsys_status s, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static mlsys_status mlsys__pcr_fail(mlsys_pcr_problem p, mlsys_status s, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mlsys__pcr_prob = p;
  return mlsys_set_error(s, "pcr: %s", msg);
}
static mlsys_status mlsys__pcr_nomem(void) {
  mlsys__pcr_prob = MLSYS_PCR_P_NONE;
  return mlsys_set_error(MLSYS_ERR_NOMEM, "pcr: out of memory");
}
#define MLSYS__PCR_ENTER() (mlsys__pcr_prob = MLSYS_PCR_P_NONE)

static uint16_t mlsys__pcr_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t mlsys__pcr_le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t mlsys__pcr_le64(const uint8_t *p) { return (uint64_t)mlsys__pcr_le32(p) | (uint64_t)mlsys__pcr_le32(p + 4) << 32; }
static void mlsys__pcr_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void mlsys__pcr_put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void mlsys__pcr_put64(uint8_t *p, uint64_t v) { mlsys__pcr_put32(p, (uint32_t)v); mlsys__pcr_put32(p + 4, (uint32_t)(v >> 32)); }
static uint64_t mlsys__pcr_align(uint64_t x, int log2) { return log2 ? (x + ((uint64_t)1 << log2) - 1) & ~(((uint64_t)1 << log2) - 1) : x; }
static void mlsys__pcr_sleep(double s) {
  struct timespec ts;
  if (!(s > 0)) return;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ================================================================================================================
   1. JPEG layer
   ================================================================================================================ */
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_split(const uint8_t *b, size_t n, mlsys_pcr_jpeg_layout *L) {
  mlsys_jpeg_scan sc[MLSYS_PCR_MAX_SCANS];
  mlsys_jpeg_info in;
  mlsys_status st;
  int j;
  MLSYS__PCR_ENTER();
  if (!b || !L) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "jpeg_split with a NULL argument");
  memset(L, 0, sizeof *L);
  if (n > 0xFFFFFFFFu) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "a JPEG of %zu bytes (part offsets are 32-bit)", n);
  st = mlsys_jpeg_check(b, n, &in, sc, MLSYS_PCR_MAX_SCANS);
  if (st == MLSYS_ERR_TOO_BIG) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, st, "%s", mlsys_last_error());
  if (st) return mlsys__pcr_fail(n >= 2 && b[0] == 0xFF && b[1] == 0xD8 ? MLSYS_PCR_P_BAD_JPEG : MLSYS_PCR_P_NOT_JPEG, st, "%s", mlsys_last_error());
  if (in.last_scan_end != in.eoi)
    return mlsys__pcr_fail(MLSYS_PCR_P_BAD_JPEG, MLSYS_ERR_PARSE, "%zu bytes of segments between the last scan and EOI (byte %zu)",
                           in.eoi - in.last_scan_end, in.eoi);
  L->header_len = (uint32_t)in.first_sos;
  L->eoi_pos = (uint32_t)in.eoi;
  L->width = in.width; L->height = in.height; L->ncomp = in.components;
  L->progressive = in.sof == 0xC2;
  L->nscans = in.nscans;
  for (j = 0; j < in.nscans; j++) {
    mlsys_pcr_scan *s = &L->scan[j];
    s->ns = sc[j].ns;
    memcpy(s->comp, sc[j].comp, 4);
    s->ss = sc[j].ss; s->se = sc[j].se; s->ah = sc[j].ah; s->al = sc[j].al;
    s->begin = j ? L->scan[j - 1].end : L->header_len;
    s->end = (uint32_t)sc[j].end;
  }
  return MLSYS_OK;
}

/* what a buffer that is not a JPEG is, for the message */
static mlsys_status mlsys__pcr_not_jpeg(const uint8_t *b, size_t n) {
  int f = mlsys_image_sniff(b, n);
  if (f != MLSYS_IMG_UNKNOWN) return mlsys__pcr_fail(MLSYS_PCR_P_NOT_JPEG, MLSYS_ERR_PARSE, "not a JPEG: %s data", mlsys_image_format_name(f));
  return mlsys__pcr_fail(MLSYS_PCR_P_NOT_JPEG, MLSYS_ERR_PARSE, "not a JPEG: %s", n == 0 ? "empty input" : "no SOI marker");
}

/* libjpeg's default error_exit calls exit(); ours longjmps back to the call */
typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  int allow_warnings;
  char msg[JMSG_LENGTH_MAX];
} mlsys__pcr_jerr;
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
static void mlsys__pcr_jinit(mlsys__pcr_jerr *e, int allow_warnings) {
  jpeg_std_error(&e->pub);
  e->pub.error_exit = mlsys__pcr_jexit;
  e->pub.emit_message = mlsys__pcr_jemit;
  e->allow_warnings = allow_warnings;
  e->msg[0] = 0;
}

/* The progression scripts as tables (libjpeg jcparam.c's jpeg_simple_progression for 1 and 3 components, and the
   spectral-selection script of §3.5), so the writer can compare a progressive input's scans with them. */
static int mlsys__pcr_script(int id, int ncomp, mlsys_pcr_scan_spec *s) {
  static const int simple3[10][6] = {{3, 0, 0, 0, 0, 1}, {1, 0, 1, 5, 0, 2}, {1, 2, 1, 63, 0, 1}, {1, 1, 1, 63, 0, 1},
                                     {1, 0, 6, 63, 0, 2}, {1, 0, 1, 63, 2, 1}, {3, 0, 0, 0, 1, 0},  {1, 2, 1, 63, 1, 0},
                                     {1, 1, 1, 63, 1, 0}, {1, 0, 1, 63, 1, 0}};
  static const int simple1[6][6] = {{1, 0, 0, 0, 0, 1}, {1, 0, 1, 5, 0, 2}, {1, 0, 6, 63, 0, 2},
                                    {1, 0, 1, 63, 2, 1}, {1, 0, 0, 0, 1, 0}, {1, 0, 1, 63, 1, 0}};
  static const int spec3[5][6] = {{3, 0, 0, 0, 0, 0}, {1, 0, 1, 5, 0, 0}, {1, 2, 1, 63, 0, 0}, {1, 1, 1, 63, 0, 0}, {1, 0, 6, 63, 0, 0}};
  static const int spec1[3][6] = {{1, 0, 0, 0, 0, 0}, {1, 0, 1, 5, 0, 0}, {1, 0, 6, 63, 0, 0}};
  const int(*t)[6];
  int n, i, c;
  if (id == MLSYS_PCR_SCRIPT_SIMPLE) { t = ncomp == 3 ? simple3 : simple1; n = ncomp == 3 ? 10 : 6; }
  else if (id == MLSYS_PCR_SCRIPT_SPECTRAL) { t = ncomp == 3 ? spec3 : spec1; n = ncomp == 3 ? 5 : 3; }
  else return 0;
  if (ncomp != 1 && ncomp != 3) return 0;
  for (i = 0; i < n; i++) {
    /* rows: {components in the scan, the component when there is one, Ss, Se, Ah, Al}; DC scans take them all */
    s[i].ncomp = t[i][0];
    for (c = 0; c < 4; c++) s[i].comp[c] = c < s[i].ncomp ? (s[i].ncomp > 1 ? c : t[i][1]) : 0;
    s[i].ss = t[i][2]; s[i].se = t[i][3]; s[i].ah = t[i][4]; s[i].al = t[i][5];
  }
  return n;
}

/* libjpeg decode to 8-bit pixels (channels 1: luminance, 3: RGB; CMYK/YCCK converted from Adobe's inverted CMYK as
   stb_image does), at 1/scale_denom in the DCT domain. Used by the decoder backend, the re-encodes and requality. */
static mlsys_status mlsys__pcr_ljdecode(const uint8_t *b, size_t n, int channels, int scale_denom, int64_t max_px, int allow_warnings,
                                        uint8_t **px, int *w, int *h) {
  struct jpeg_decompress_struct ci;
  mlsys__pcr_jerr je;
  uint8_t *volatile out = NULL;
  uint8_t *volatile row4 = NULL;
  volatile mlsys_status st = MLSYS_OK;
  int cmyk;
  *px = NULL;
  memset(&ci, 0, sizeof ci);
  mlsys__pcr_jinit(&je, allow_warnings);
  ci.err = &je.pub;
  if (setjmp(je.jb)) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_DECODE, MLSYS_ERR_PARSE, "libjpeg: %s", je.msg);
    goto done;
  }
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, b, (unsigned long)n);
  jpeg_read_header(&ci, TRUE);
  if ((int64_t)ci.image_width * ci.image_height > max_px) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "a %u x %u image is over the %lld-pixel limit", ci.image_width, ci.image_height,
                         (long long)max_px);
    goto done;
  }
  cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
  ci.out_color_space = cmyk ? JCS_CMYK : channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  ci.scale_num = 1;
  ci.scale_denom = (unsigned)scale_denom;
  jpeg_start_decompress(&ci);
  *w = (int)ci.output_width; *h = (int)ci.output_height;
  if (!(out = (uint8_t *)mlsys_alloc((size_t)*w * (size_t)*h, (size_t)channels)) ||
      (cmyk && !(row4 = (uint8_t *)mlsys_alloc((size_t)*w, 4)))) {
    st = mlsys__pcr_nomem();
    goto done;
  }
  while (ci.output_scanline < ci.output_height) {
    uint8_t *dst = out + (size_t)ci.output_scanline * (size_t)*w * (size_t)channels;
    JSAMPROW row = cmyk ? row4 : dst;
    jpeg_read_scanlines(&ci, &row, 1);
    if (cmyk) {
      int x;
      for (x = 0; x < *w; x++) {
        const uint8_t *q = row4 + 4 * x;
        int r = q[0] * q[3] / 255, g = q[1] * q[3] / 255, bl = q[2] * q[3] / 255;
        if (channels == 1) dst[x] = (uint8_t)((r * 77 + g * 150 + bl * 29) >> 8);
        else { dst[3 * x] = (uint8_t)r; dst[3 * x + 1] = (uint8_t)g; dst[3 * x + 2] = (uint8_t)bl; }
      }
    }
  }
  jpeg_finish_decompress(&ci);
done:
  jpeg_destroy_decompress(&ci);
  mlsys_free(row4);
  if (st) mlsys_free(out);
  else *px = out;
  return st;
}

/* A libjpeg destination writing into a buffer we own. jpeg_mem_dest's grows by malloc and publishes the new buffer
   only at the end, so an error after a growth leaves the caller's pointer on a freed buffer (fuzz_pcr_split found the
   double free); here the buffer is always reachable through the struct, and freed by whoever allocated the struct. */
typedef struct {
  struct jpeg_destination_mgr pub;
  uint8_t *buf;
  size_t cap, len;
} mlsys__pcr_jdst;
static void mlsys__pcr_dinit(j_compress_ptr ci) {
  mlsys__pcr_jdst *d = (mlsys__pcr_jdst *)ci->dest;
  d->pub.next_output_byte = d->buf;
  d->pub.free_in_buffer = d->cap;
}
static boolean mlsys__pcr_dempty(j_compress_ptr ci) {
  mlsys__pcr_jdst *d = (mlsys__pcr_jdst *)ci->dest;
  size_t nc = d->cap * 2;
  uint8_t *nb = nc > d->cap ? (uint8_t *)MLSYS_REALLOC(d->buf, nc) : NULL;
  if (!nb) {
    ci->err->msg_code = JERR_OUT_OF_MEMORY;
    (*ci->err->error_exit)((j_common_ptr)ci);
  }
  d->buf = nb;
  d->pub.next_output_byte = nb + d->cap;   /* the whole old buffer is full (libjpeg's contract) */
  d->pub.free_in_buffer = nc - d->cap;
  d->cap = nc;
  return TRUE;
}
static void mlsys__pcr_dterm(j_compress_ptr ci) {
  mlsys__pcr_jdst *d = (mlsys__pcr_jdst *)ci->dest;
  d->len = d->cap - d->pub.free_in_buffer;
}
/* a destination with a 64 KiB first buffer, or NULL */
static mlsys__pcr_jdst *mlsys__pcr_jdst_new(void) {
  mlsys__pcr_jdst *d = (mlsys__pcr_jdst *)mlsys_calloc(1, sizeof *d);
  if (!d) return NULL;
  d->cap = 65536;
  if (!(d->buf = (uint8_t *)MLSYS_MALLOC(d->cap))) { mlsys_free(d); return NULL; }
  d->pub.init_destination = mlsys__pcr_dinit;
  d->pub.empty_output_buffer = mlsys__pcr_dempty;
  d->pub.term_destination = mlsys__pcr_dterm;
  return d;
}
static void mlsys__pcr_jdst_free(mlsys__pcr_jdst *d) {
  if (!d) return;
  if (d->buf) MLSYS_FREE(d->buf);
  mlsys_free(d);
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_encode(const uint8_t *px, int w, int h, int ncomp, int quality, int progressive, uint8_t **out,
                                             size_t *out_len) {
  struct jpeg_compress_struct ci;
  mlsys__pcr_jerr je;
  mlsys__pcr_jdst *volatile dest = NULL;
  volatile mlsys_status st = MLSYS_OK;
  MLSYS__PCR_ENTER();
  if (!px || !out || !out_len || w <= 0 || h <= 0 || w > 65500 || h > 65500 || (ncomp != 1 && ncomp != 3) || quality < 1 || quality > 100)
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "jpeg_encode: %d x %d x %d pixels at quality %d (1 or 3 channels, sides 1..65500, quality 1..100)",
                           w, h, ncomp, quality);
  *out = NULL; *out_len = 0;
  if (!(dest = mlsys__pcr_jdst_new())) return mlsys__pcr_nomem();
  memset(&ci, 0, sizeof ci);
  mlsys__pcr_jinit(&je, 1);
  ci.err = &je.pub;
  if (setjmp(je.jb)) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_DECODE, MLSYS_ERR_PARSE, "libjpeg (encoding): %s", je.msg);
    goto done;
  }
  jpeg_create_compress(&ci);
  ci.dest = &dest->pub;
  ci.image_width = (JDIMENSION)w; ci.image_height = (JDIMENSION)h;
  ci.input_components = ncomp;
  ci.in_color_space = ncomp == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, quality, TRUE);
  ci.optimize_coding = TRUE;
  if (progressive) jpeg_simple_progression(&ci);
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)ci.next_scanline * (size_t)w * (size_t)ncomp);
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  *out = dest->buf;
  *out_len = dest->len;
  dest->buf = NULL;
done:
  ci.dest = NULL;
  jpeg_destroy_compress(&ci);
  mlsys__pcr_jdst_free(dest);
  return st;
}

/* EXIF (APP1 "Exif\0\0" + a TIFF header): tag 0x0112 of IFD0 */
MLSYS_DEF int mlsys_pcr_jpeg_orientation(const uint8_t *b, size_t n) {
  size_t p = 2;
  if (!b || n < 4 || b[0] != 0xFF || b[1] != 0xD8) return 0;
  while (p + 4 <= n && b[p] == 0xFF) {
    int m = b[p + 1];
    size_t len = (size_t)b[p + 2] << 8 | b[p + 3];
    if (m == 0xDA || m == 0xD9 || len < 2 || p + 2 + len > n) return 0;
    if (m == 0xE1 && len >= 2 + 6 + 8 && !memcmp(b + p + 4, "Exif\0\0", 6)) {
      const uint8_t *t = b + p + 10;
      size_t tl = len - 8, ifd, cnt, i;
      int le;
      if (t[0] == 'I' && t[1] == 'I') le = 1;
      else if (t[0] == 'M' && t[1] == 'M') le = 0;
      else return 0;
#define MLSYS__PCR_T16(q) (le ? (unsigned)(q)[0] | (unsigned)(q)[1] << 8 : (unsigned)(q)[0] << 8 | (unsigned)(q)[1])
#define MLSYS__PCR_T32(q) (le ? (size_t)mlsys__pcr_le32(q) : (size_t)(q)[0] << 24 | (size_t)(q)[1] << 16 | (size_t)(q)[2] << 8 | (q)[3])
      ifd = MLSYS__PCR_T32(t + 4);
      if (ifd > tl || tl - ifd < 2) return 0;
      cnt = MLSYS__PCR_T16(t + ifd);
      for (i = 0; i < cnt && ifd + 2 + 12 * (i + 1) <= tl; i++) {
        const uint8_t *e = t + ifd + 2 + 12 * i;
        if (MLSYS__PCR_T16(e) == 0x0112 && MLSYS__PCR_T16(e + 2) == 3) {
          unsigned v = MLSYS__PCR_T16(e + 8);
          return v >= 1 && v <= 8 ? (int)v : 0;
        }
      }
#undef MLSYS__PCR_T16
#undef MLSYS__PCR_T32
      return 0;
    }
    p += 2 + len;
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive_ex(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *dd, uint8_t **out,
                                                        size_t *out_len, int *reencoded) {
  struct jpeg_decompress_struct src;
  struct jpeg_compress_struct dst;
  mlsys__pcr_jerr je;
  mlsys_pcr_transcode_desc d;
  jpeg_scan_info si[MLSYS_PCR_MAX_SCANS];
  mlsys_pcr_scan_spec spec[MLSYS_PCR_MAX_SCANS];
  jvirt_barray_ptr *coef;
  mlsys__pcr_jdst *volatile dest = NULL;
  volatile int have_dst = 0, writing = 0, nonstandard = 0;
  volatile mlsys_status st = MLSYS_OK;
  int max_scans, script, i, c;
  volatile int nsi = 0;
  MLSYS__PCR_ENTER();
  if (!in || !out || !out_len) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "jpeg_to_progressive with a NULL argument");
  *out = NULL; *out_len = 0;
  if (reencoded) *reencoded = 0;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  max_scans = d.max_scans > 0 ? d.max_scans : MLSYS_PCR_MAX_SCANS;
  script = d.script ? d.script : MLSYS_PCR_SCRIPT_SIMPLE;
  if (script != MLSYS_PCR_SCRIPT_SIMPLE && script != MLSYS_PCR_SCRIPT_SPECTRAL && script != MLSYS_PCR_SCRIPT_CUSTOM)
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "unknown progression script %d (1 simple, 2 spectral, 255 custom)", script);
  if (script == MLSYS_PCR_SCRIPT_CUSTOM && (!d.custom || d.ncustom < 1 || d.ncustom > max_scans))
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "a custom script of %d scans (1..%d)", d.ncustom, max_scans);
  if (n < 2 || in[0] != 0xFF || in[1] != 0xD8) return mlsys__pcr_not_jpeg(in, n);
  /* the strict walk names structural damage (a segment cut short, an undefined table) before libjpeg reads it;
     allow_warnings asks for libjpeg's repairs instead */
  if (!d.allow_warnings && (st = mlsys_jpeg_check(in, n, NULL, NULL, 0))) return mlsys__pcr_fail(MLSYS_PCR_P_BAD_JPEG, st, "%s", mlsys_last_error());
  memset(&src, 0, sizeof src);
  memset(&dst, 0, sizeof dst);
  mlsys__pcr_jinit(&je, d.allow_warnings);
  src.err = &je.pub;
  if (setjmp(je.jb)) {
    if (writing && script == MLSYS_PCR_SCRIPT_CUSTOM) st = mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "the custom script: libjpeg: %s", je.msg);
    else st = mlsys__pcr_fail(MLSYS_PCR_P_BAD_JPEG, MLSYS_ERR_PARSE, "libjpeg: %s", je.msg);
    goto done;
  }
  jpeg_create_decompress(&src);
  jpeg_mem_src(&src, in, (unsigned long)n);
  jpeg_read_header(&src, TRUE);
  if (src.data_precision != 8) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_UNSUPPORTED, MLSYS_ERR_UNSUPPORTED, "%d-bit JPEG (8-bit only)", src.data_precision);
    goto done;
  }
  if (!(src.jpeg_color_space == JCS_GRAYSCALE && src.num_components == 1) && !(src.jpeg_color_space == JCS_YCbCr && src.num_components == 3)) {
    if (!d.reencode_nonstandard) {
      st = mlsys__pcr_fail(MLSYS_PCR_P_UNSUPPORTED, MLSYS_ERR_UNSUPPORTED,
                           "colour space %d with %d components (grayscale or YCbCr only without reencode_nonstandard; spec §3.1 step 2)",
                           (int)src.jpeg_color_space, src.num_components);
      goto done;
    }
    nonstandard = 1;
    goto done;
  }
  if (script == MLSYS_PCR_SCRIPT_CUSTOM) {
    for (i = 0; i < d.ncustom; i++) {
      const mlsys_pcr_scan_spec *s = &d.custom[i];
      int bad = s->ncomp < 1 || s->ncomp > 4 || s->ss < 0 || s->se > 63 || s->ss > s->se || s->ah < 0 || s->ah > 13 || s->al < 0 || s->al > 13;
      for (c = 0; !bad && c < s->ncomp; c++) bad = s->comp[c] < 0 || s->comp[c] >= src.num_components;
      if (bad) {
        st = mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "custom script scan %d: %d components, Ss %d, Se %d, Ah %d, Al %d (for a %d-component image)", i + 1,
                             s->ncomp, s->ss, s->se, s->ah, s->al, src.num_components);
        goto done;
      }
      spec[i] = *s;
    }
    nsi = d.ncustom;
  } else if (script == MLSYS_PCR_SCRIPT_SPECTRAL) {
    nsi = mlsys__pcr_script(script, src.num_components, spec);
  }
  for (i = 0; i < nsi; i++) {
    si[i].comps_in_scan = spec[i].ncomp;
    for (c = 0; c < 4; c++) si[i].component_index[c] = c < spec[i].ncomp ? spec[i].comp[c] : 0;
    si[i].Ss = spec[i].ss; si[i].Se = spec[i].se; si[i].Ah = spec[i].ah; si[i].Al = spec[i].al;
  }
  coef = jpeg_read_coefficients(&src);
  dst.err = &je.pub;
  jpeg_create_compress(&dst);
  have_dst = 1;
  jpeg_copy_critical_parameters(&src, &dst);
  if (script == MLSYS_PCR_SCRIPT_SIMPLE) jpeg_simple_progression(&dst);   /* exactly jpegtran -progressive */
  else { dst.scan_info = si; dst.num_scans = nsi; }
  if (dst.num_scans > max_scans) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "the progression has %d scans (limit %d)", dst.num_scans, max_scans);
    goto done;
  }
  dst.optimize_coding = d.no_optimize ? FALSE : TRUE;
  if (!(dest = mlsys__pcr_jdst_new())) { st = mlsys__pcr_nomem(); goto done; }
  dst.dest = &dest->pub;
  writing = 1;
  jpeg_write_coefficients(&dst, coef);   /* no markers copied: jpegtran -copy none */
  jpeg_finish_compress(&dst);
  writing = 0;
  jpeg_finish_decompress(&src);
  *out = dest->buf;
  *out_len = dest->len;
  dest->buf = NULL;
done:
  if (have_dst) {
    dst.dest = NULL;
    jpeg_destroy_compress(&dst);
  }
  jpeg_destroy_decompress(&src);
  mlsys__pcr_jdst_free(dest);
  if (!st && nonstandard) {
    /* RGB/CMYK/YCCK: decode to RGB and re-encode as YCbCr (lossy), then the lossless path (§3.1 step 2) */
    uint8_t *px, *jpg;
    size_t jl;
    int w, h;
    mlsys_pcr_transcode_desc d2 = d;
    if ((st = mlsys__pcr_ljdecode(in, n, 3, 1, (int64_t)1 << 28, d.allow_warnings, &px, &w, &h))) {
      if (mlsys__pcr_prob == MLSYS_PCR_P_DECODE) mlsys__pcr_prob = MLSYS_PCR_P_BAD_JPEG;
      return st;
    }
    st = mlsys_pcr_jpeg_encode(px, w, h, 3, d.quality > 0 ? d.quality : 95, 0, &jpg, &jl);
    mlsys_free(px);
    if (st) return st;
    d2.reencode_nonstandard = 0;
    st = mlsys_pcr_jpeg_to_progressive_ex(jpg, jl, &d2, out, out_len, NULL);
    mlsys_free(jpg);
    if (!st && reencoded) *reencoded = 1;
  }
  return st;
}
MLSYS_DEF mlsys_status mlsys_pcr_jpeg_to_progressive(const uint8_t *in, size_t n, const mlsys_pcr_transcode_desc *d, uint8_t **out,
                                                     size_t *out_len) {
  return mlsys_pcr_jpeg_to_progressive_ex(in, n, d, out, out_len, NULL);
}

/* the component count of a JPEG's frame (0 when libjpeg cannot read the header) */
static int mlsys__pcr_ncomp(const uint8_t *jpg, size_t n) {
  struct jpeg_decompress_struct ci;
  mlsys__pcr_jerr je;
  volatile int c = 0;
  memset(&ci, 0, sizeof ci);
  mlsys__pcr_jinit(&je, 1);
  ci.err = &je.pub;
  if (!setjmp(je.jb)) {
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, jpg, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    c = ci.num_components;
  }
  jpeg_destroy_decompress(&ci);
  return c;
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_requality(const uint8_t *jpg, size_t n, size_t target, int *quality, uint8_t **out, size_t *out_len) {
  uint8_t *px, *best = NULL;
  size_t best_len = 0;
  int w, h, lo = 1, hi = 100, best_q = 0, c;
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if (!jpg || !quality || !out || !out_len) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "jpeg_requality with a NULL argument");
  *out = NULL; *out_len = 0; *quality = 0;
  if (n < 2 || jpg[0] != 0xFF || jpg[1] != 0xD8) return mlsys__pcr_not_jpeg(jpg, n);
  if ((st = mlsys_jpeg_check(jpg, n, NULL, NULL, MLSYS_PCR_MAX_SCANS)))
    return mlsys__pcr_fail(st == MLSYS_ERR_TOO_BIG ? MLSYS_PCR_P_LIMIT : MLSYS_PCR_P_BAD_JPEG, st, "%s", mlsys_last_error());
  c = mlsys__pcr_ncomp(jpg, n) == 1 ? 1 : 3;
  if ((st = mlsys__pcr_ljdecode(jpg, n, c, 1, (int64_t)1 << 28, 0, &px, &w, &h))) return st;
  /* the size grows with quality (monotone in practice; the search keeps the best size ≤ target it has seen) */
  while (lo <= hi) {
    int q = (lo + hi) / 2;
    uint8_t *e;
    size_t el;
    if ((st = mlsys_pcr_jpeg_encode(px, w, h, c, q, 0, &e, &el))) { mlsys_free(px); mlsys_free(best); return st; }
    if (el <= target) {
      if (q > best_q) { mlsys_free(best); best = e; best_len = el; best_q = q; }
      else mlsys_free(e);
      lo = q + 1;
    } else {
      mlsys_free(e);
      hi = q - 1;
    }
  }
  if (!best) {
    best_q = 1;
    if ((st = mlsys_pcr_jpeg_encode(px, w, h, c, 1, 0, &best, &best_len))) { mlsys_free(px); return st; }
  }
  mlsys_free(px);
  *quality = best_q; *out = best; *out_len = best_len;
  return MLSYS_OK;
}

/* ================================================================================================================
   2. Writer (§2.4, §3.1)
   ================================================================================================================ */
#define MLSYS__PCR_HDR 64
#define MLSYS__PCR_DIRENT 16
#define MLSYS__PCR_IMGENT 48
#define MLSYS__PCR_GHDR 16
#define MLSYS__PCR_MAX_EXTRA (16u << 20)

typedef struct {
  uint8_t *jpg;             /* the progressive (or stored) JPEG: header ‖ parts ‖ FF D9 */
  uint32_t hdr_len;
  uint32_t *poff, *plen;    /* [K]: part of group g+1 at jpg + poff[g], plen[g] bytes (0: none) */
  int64_t label;
  uint8_t *extra;
  uint32_t extra_len, width, height, src_bytes, full_crc;
  uint8_t ncomp, nscans;
  uint16_t iflags;
} mlsys__pcr_wimg;

struct mlsys_pcr_writer {
  mlsys_pcr_writer_desc d;
  int K, script_id, script;
  uint8_t gray_map[MLSYS_PCR_MAX_GROUPS];
  int gray_len;
  mlsys__pcr_wimg *img;
  uint32_t n, cap, max_images;
};

MLSYS_DEF mlsys_status mlsys_pcr_writer_create(const mlsys_pcr_writer_desc *dd, mlsys_pcr_writer **out) {
  mlsys_pcr_writer *w;
  mlsys_pcr_writer_desc d;
  int K, i, script;
  MLSYS__PCR_ENTER();
  if (!out) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "writer_create with a NULL argument");
  *out = NULL;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  script = d.transcode.script ? d.transcode.script : MLSYS_PCR_SCRIPT_SIMPLE;
  if (d.store_as_is) K = 1;
  else if (script == MLSYS_PCR_SCRIPT_SIMPLE) K = 10;
  else if (script == MLSYS_PCR_SCRIPT_SPECTRAL) K = 5;
  else if (script == MLSYS_PCR_SCRIPT_CUSTOM) K = d.transcode.ncustom;
  else return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "unknown progression script %d (1 simple, 2 spectral, 255 custom)", script);
  if (d.n_groups) K = d.n_groups;
  if (K < 1 || K > MLSYS_PCR_MAX_GROUPS || (d.store_as_is && K != 1))
    return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_ARG, "%d scan groups (1..%d; store_as_is records have 1)", K, MLSYS_PCR_MAX_GROUPS);
  if (d.align_log2 && (d.align_log2 < 9 || d.align_log2 > 21))
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "align_log2 %d (0, or 9..21)", d.align_log2);
  if (!(w = (mlsys_pcr_writer *)mlsys_calloc(1, sizeof *w))) return mlsys__pcr_nomem();
  w->d = d;
  w->d.gray_map = NULL;
  w->K = K;
  w->script = script;
  w->script_id = d.store_as_is ? 0 : script;
  w->max_images = d.max_images && d.max_images < MLSYS_PCR_MAX_IMAGES ? d.max_images : MLSYS_PCR_MAX_IMAGES;
  if (d.gray_map) {
    if (d.gray_map_len < 1 || d.gray_map_len > K) {
      mlsys_free(w);
      return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "a gray map of %d entries for %d groups", d.gray_map_len, K);
    }
    for (i = 0; i < d.gray_map_len; i++)
      if (d.gray_map[i] < 1 || d.gray_map[i] > K || (i && d.gray_map[i] <= d.gray_map[i - 1]) || (i == 0 && d.gray_map[0] != 1)) {
        mlsys_free(w);
        return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "gray map entry %d is %d: the map must start at group 1 and increase strictly up to %d", i,
                               d.gray_map[i], K);
      }
    memcpy(w->gray_map, d.gray_map, (size_t)d.gray_map_len);
    w->gray_len = d.gray_map_len;
  } else if (!d.store_as_is && script == MLSYS_PCR_SCRIPT_SIMPLE && K == 10) {
    /* luma-aligned (§3.1 step 5): gray scan j goes where the colour script has the same luma refinement */
    static const uint8_t g6[6] = {1, 2, 5, 6, 7, 10};
    memcpy(w->gray_map, g6, 6);
    w->gray_len = 6;
  } else if (!d.store_as_is && script == MLSYS_PCR_SCRIPT_SPECTRAL && K == 5) {
    static const uint8_t g3[3] = {1, 2, 5};
    memcpy(w->gray_map, g3, 3);
    w->gray_len = 3;
  }
  *out = w;
  return MLSYS_OK;
}

MLSYS_DEF uint32_t mlsys_pcr_writer_count(const mlsys_pcr_writer *w) { return w ? w->n : 0; }

static void mlsys__pcr_wimg_free(mlsys__pcr_wimg *m) {
  mlsys_free(m->jpg);
  mlsys_free(m->poff);
  mlsys_free(m->extra);
  memset(m, 0, sizeof *m);
}

/* the component indices of a frame's components, by id (SOF), for comparing scan scripts */
static int mlsys__pcr_comp_index(const uint8_t *b, size_t hdr_len, int id) {
  size_t p = 2;
  while (p + 4 <= hdr_len && b[p] == 0xFF) {
    int m = b[p + 1];
    size_t len = (size_t)b[p + 2] << 8 | b[p + 3];
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && len >= 8 && p + 2 + len <= hdr_len) {
      int nc = b[p + 9], c;
      for (c = 0; c < nc && 10 + 3 * (size_t)c < len + 2; c++)
        if (b[p + 10 + 3 * c] == id) return c;
      return -1;
    }
    p += 2 + len;
  }
  return -1;
}
/* 1 when the layout's scans are exactly script `id` for its component count */
static int mlsys__pcr_layout_is_script(const uint8_t *jpg, const mlsys_pcr_jpeg_layout *L, int id) {
  mlsys_pcr_scan_spec s[MLSYS_PCR_MAX_SCANS];
  int n = mlsys__pcr_script(id, L->ncomp, s), j, c;
  if (!n || n != L->nscans || !L->progressive) return 0;
  for (j = 0; j < n; j++) {
    const mlsys_pcr_scan *a = &L->scan[j];
    if (a->ns != s[j].ncomp || a->ss != s[j].ss || a->se != s[j].se || a->ah != s[j].ah || a->al != s[j].al) return 0;
    for (c = 0; c < a->ns; c++)
      if (mlsys__pcr_comp_index(jpg, L->header_len, a->comp[c]) != s[j].comp[c]) return 0;
  }
  return 1;
}

MLSYS_DEF mlsys_status mlsys_pcr_writer_add_jpeg(mlsys_pcr_writer *w, const uint8_t *jpg, size_t n, int64_t label, const void *extra,
                                                 uint32_t extra_len) {
  mlsys__pcr_wimg m;
  mlsys_pcr_jpeg_layout *L = NULL;
  mlsys_status st = MLSYS_OK;
  uint8_t map[MLSYS_PCR_MAX_SCANS];
  int j, orient, reenc = 0;
  size_t plen = 0;
  MLSYS__PCR_ENTER();
  if (!w || (!jpg && n) || (!extra && extra_len)) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "writer_add_jpeg with a NULL argument");
  if (w->n >= w->max_images) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "the record already holds %u images (max_images)", w->n);
  if (extra_len > MLSYS__PCR_MAX_EXTRA) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "%u bytes of extra data (at most 16 MiB per image)", extra_len);
  if (n > 0xFFFFFFF0u) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "a JPEG of %zu bytes", n);
  if (n < 2 || jpg[0] != 0xFF || jpg[1] != 0xD8) return mlsys__pcr_not_jpeg(jpg, n);
  memset(&m, 0, sizeof m);
  if (!(L = (mlsys_pcr_jpeg_layout *)mlsys_alloc(1, sizeof *L))) return mlsys__pcr_nomem();
  orient = mlsys_pcr_jpeg_orientation(jpg, n);
  if (w->d.store_as_is) {
    /* the plain JPEG record baseline: the file unchanged, every scan in group 1 */
    mlsys_jpeg_info in;
    if ((st = mlsys_jpeg_check(jpg, n, &in, NULL, MLSYS_PCR_MAX_SCANS))) {
      st = mlsys__pcr_fail(st == MLSYS_ERR_TOO_BIG ? MLSYS_PCR_P_LIMIT : MLSYS_PCR_P_BAD_JPEG, st, "%s", mlsys_last_error());
      goto fail;
    }
    if (in.components != 1 && in.components != 3 && in.components != 4) {
      st = mlsys__pcr_fail(MLSYS_PCR_P_UNSUPPORTED, MLSYS_ERR_UNSUPPORTED, "a JPEG with %d components", in.components);
      goto fail;
    }
    plen = in.eoi + 2;
    if (!(m.jpg = (uint8_t *)mlsys_alloc(plen, 1))) { st = mlsys__pcr_nomem(); goto fail; }
    memcpy(m.jpg, jpg, plen);
    L->header_len = (uint32_t)in.first_sos;
    L->eoi_pos = (uint32_t)in.eoi;
    L->width = in.width; L->height = in.height; L->ncomp = in.components;
    L->nscans = in.nscans;
    map[0] = 1;
  } else {
    int keep = 0;
    if (w->d.keep_progressive_input && w->script != MLSYS_PCR_SCRIPT_CUSTOM && mlsys_pcr_jpeg_split(jpg, n, L) == MLSYS_OK &&
        mlsys__pcr_layout_is_script(jpg, L, w->script))
      keep = 1;
    if (keep) {
      plen = L->eoi_pos + 2;
      if (!(m.jpg = (uint8_t *)mlsys_alloc(plen, 1))) { st = mlsys__pcr_nomem(); goto fail; }
      memcpy(m.jpg, jpg, plen);
    } else {
      if ((st = mlsys_pcr_jpeg_to_progressive_ex(jpg, n, &w->d.transcode, &m.jpg, &plen, &reenc))) goto fail;
      if ((st = mlsys_pcr_jpeg_split(m.jpg, plen, L))) { mlsys_prefix_error("the transcoded image"); goto fail; }
    }
    /* scan → group (§3.1 step 5): grayscale luma-aligned, otherwise scan j → group j */
    if (L->ncomp == 1 && w->gray_len && L->nscans == w->gray_len) {
      memcpy(map, w->gray_map, (size_t)w->gray_len);
      m.iflags |= MLSYS_PCR_IF_GRAY_MAPPED;
    } else if (L->nscans <= w->K) {
      for (j = 0; j < L->nscans; j++) map[j] = (uint8_t)(j + 1);
    } else {
      st = mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "the image has %d scans and the record %d groups", L->nscans, w->K);
      goto fail;
    }
  }
  if (!(m.poff = (uint32_t *)mlsys_calloc(2 * (size_t)w->K, sizeof(uint32_t)))) { st = mlsys__pcr_nomem(); goto fail; }
  m.plen = m.poff + w->K;
  m.hdr_len = L->header_len;
  if (w->d.store_as_is) {
    m.poff[0] = L->header_len;
    m.plen[0] = L->eoi_pos - L->header_len;
  } else {
    for (j = 0; j < L->nscans; j++) {
      m.poff[map[j] - 1] = L->scan[j].begin;
      m.plen[map[j] - 1] = L->scan[j].end - L->scan[j].begin;
    }
  }
  if (extra_len) {
    if (!(m.extra = (uint8_t *)mlsys_alloc(extra_len, 1))) { st = mlsys__pcr_nomem(); goto fail; }
    memcpy(m.extra, extra, extra_len);
  }
  m.extra_len = extra_len;
  m.label = label;
  m.width = (uint32_t)L->width; m.height = (uint32_t)L->height;
  m.ncomp = (uint8_t)L->ncomp; m.nscans = (uint8_t)L->nscans;
  m.src_bytes = (uint32_t)n;
  m.full_crc = mlsys_crc32c(0, m.jpg, plen);
  if (reenc) m.iflags |= MLSYS_PCR_IF_REENCODED;
  if (orient) m.iflags |= (uint16_t)(MLSYS_PCR_IF_HAS_ORIENT | orient << 8);
  if (w->n == w->cap) {
    uint32_t nc = w->cap ? 2 * w->cap : 64;
    mlsys__pcr_wimg *q = (mlsys__pcr_wimg *)mlsys_realloc_array(w->img, nc, sizeof *q);
    if (!q) { st = mlsys__pcr_nomem(); goto fail; }
    w->img = q; w->cap = nc;
  }
  w->img[w->n++] = m;
  mlsys_free(L);
  return MLSYS_OK;
fail:
  mlsys_free(L);
  mlsys__pcr_wimg_free(&m);
  return st;
}

MLSYS_DEF mlsys_status mlsys_pcr_writer_add_pixels(mlsys_pcr_writer *w, const uint8_t *px, int width, int height, int ncomp, int64_t label,
                                                   const void *extra, uint32_t extra_len) {
  uint8_t *jpg;
  size_t n;
  mlsys_status st;
  if (!w) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "writer_add_pixels with a NULL writer");
  if ((st = mlsys_pcr_jpeg_encode(px, width, height, ncomp, w->d.transcode.quality > 0 ? w->d.transcode.quality : 95, 0, &jpg, &n))) return st;
  st = mlsys_pcr_writer_add_jpeg(w, jpg, n, label, extra, extra_len);
  mlsys_free(jpg);
  if (!st) w->img[w->n - 1].iflags |= MLSYS_PCR_IF_REENCODED;
  return st;
}

/* The record's layout: sections A–E, then the groups (§2.4). */
typedef struct {
  uint64_t P, file_bytes, extra_bytes, jhdr_bytes;
  uint64_t goff[MLSYS_PCR_MAX_GROUPS + 1], gbytes[MLSYS_PCR_MAX_GROUPS + 1], payload[MLSYS_PCR_MAX_GROUPS + 1];
  uint32_t gcrc[MLSYS_PCR_MAX_GROUPS + 1];
} mlsys__pcr_plan;

static mlsys_status mlsys__pcr_plan_layout(mlsys_pcr_writer *w, mlsys__pcr_plan *pl) {
  uint32_t i;
  int g, K = w->K;
  uint64_t N = w->n, end;
  memset(pl, 0, sizeof *pl);
  for (i = 0; i < w->n; i++) {
    pl->extra_bytes += w->img[i].extra_len;
    pl->jhdr_bytes += w->img[i].hdr_len;
    for (g = 0; g < K; g++) pl->payload[g + 1] += w->img[i].plen[g];
  }
  if (pl->extra_bytes > 0xFFFFFFFFu || pl->jhdr_bytes > 0xFFFFFFFFu)
    return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "the record's extra data or JPEG headers exceed 4 GiB: use fewer images per record");
  pl->P = mlsys__pcr_align(MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (uint64_t)K + MLSYS__PCR_IMGENT * N + pl->extra_bytes + pl->jhdr_bytes, w->d.align_log2);
  end = pl->P;
  for (g = 1; g <= K; g++) {
    pl->gbytes[g] = MLSYS__PCR_GHDR + 4 * N + pl->payload[g];
    if (pl->gbytes[g] > 0xFFFFFFFFu)
      return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "scan group %d would hold %llu bytes (at most 4 GiB - 1): use fewer images per record", g,
                             (unsigned long long)pl->gbytes[g]);
    pl->goff[g] = end;
    end = mlsys__pcr_align(end + pl->gbytes[g], w->d.align_log2);
  }
  pl->file_bytes = end;
  return MLSYS_OK;
}

/* the 16-byte group header and the length table of group g */
static uint8_t *mlsys__pcr_group_head(mlsys_pcr_writer *w, const mlsys__pcr_plan *pl, int g) {
  uint8_t *h = (uint8_t *)mlsys_calloc(MLSYS__PCR_GHDR + 4 * (size_t)w->n, 1);
  uint32_t i;
  if (!h) return NULL;
  memcpy(h, "PCRG", 4);
  mlsys__pcr_put16(h + 4, (uint16_t)g);
  mlsys__pcr_put32(h + 8, w->n);
  mlsys__pcr_put32(h + 12, (uint32_t)pl->payload[g]);
  for (i = 0; i < w->n; i++) mlsys__pcr_put32(h + 16 + 4 * i, w->img[i].plen[g - 1]);
  return h;
}

/* sections A–E with the directory's CRCs (pl->gcrc filled first) */
static mlsys_status mlsys__pcr_build_prefix(mlsys_pcr_writer *w, const mlsys__pcr_plan *pl, uint8_t **out) {
  uint8_t *b = (uint8_t *)mlsys_calloc((size_t)pl->P, 1), *c;
  uint64_t eoff = 0, hoff = 0, sec_d, sec_e;
  uint32_t i;
  int g, K = w->K;
  if (!b) return mlsys__pcr_nomem();
  memcpy(b, "MLSYSPCR", 8);
  mlsys__pcr_put16(b + 8, 1);
  mlsys__pcr_put16(b + 10, 0);
  mlsys__pcr_put32(b + 12, (pl->extra_bytes ? 1u : 0u) | (w->d.align_log2 ? 2u : 0u));
  mlsys__pcr_put32(b + 16, w->n);
  mlsys__pcr_put16(b + 20, (uint16_t)K);
  mlsys__pcr_put16(b + 22, (uint16_t)w->d.align_log2);
  mlsys__pcr_put64(b + 24, pl->P);
  mlsys__pcr_put64(b + 32, pl->file_bytes);
  mlsys__pcr_put32(b + 40, (uint32_t)pl->extra_bytes);
  mlsys__pcr_put32(b + 44, (uint32_t)pl->jhdr_bytes);
  mlsys__pcr_put32(b + 48, (uint32_t)w->script_id);
  for (g = 1; g <= K; g++) {
    uint8_t *e = b + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (g - 1);
    mlsys__pcr_put64(e, pl->goff[g]);
    mlsys__pcr_put32(e + 8, (uint32_t)pl->gbytes[g]);
    mlsys__pcr_put32(e + 12, pl->gcrc[g]);
  }
  c = b + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * K;
  sec_d = MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (uint64_t)K + MLSYS__PCR_IMGENT * (uint64_t)w->n;
  sec_e = sec_d + pl->extra_bytes;
  for (i = 0; i < w->n; i++) {
    const mlsys__pcr_wimg *m = &w->img[i];
    uint8_t *e = c + MLSYS__PCR_IMGENT * (size_t)i;
    mlsys__pcr_put64(e, (uint64_t)m->label);
    mlsys__pcr_put32(e + 8, m->width);
    mlsys__pcr_put32(e + 12, m->height);
    e[16] = m->ncomp;
    e[17] = m->nscans;
    mlsys__pcr_put16(e + 18, m->iflags);
    mlsys__pcr_put32(e + 20, (uint32_t)hoff);
    mlsys__pcr_put32(e + 24, m->hdr_len);
    mlsys__pcr_put32(e + 28, (uint32_t)eoff);
    mlsys__pcr_put32(e + 32, m->extra_len);
    mlsys__pcr_put32(e + 36, m->src_bytes);
    mlsys__pcr_put32(e + 40, m->full_crc);
    if (m->extra_len) memcpy(b + sec_d + eoff, m->extra, m->extra_len);
    memcpy(b + sec_e + hoff, m->jpg, m->hdr_len);
    eoff += m->extra_len;
    hoff += m->hdr_len;
  }
  mlsys__pcr_put32(b + 60, mlsys_crc32c(0, b, (size_t)pl->P));   /* computed with its own 4 bytes zero */
  *out = b;
  return MLSYS_OK;
}

/* Writes the record through emit(ctx, bytes, n): prefix, then each group with its padding. */
typedef mlsys_status (*mlsys__pcr_emit_fn)(void *ctx, const void *p, size_t n);
static mlsys_status mlsys__pcr_write_record(mlsys_pcr_writer *w, mlsys__pcr_emit_fn emit, void *ctx) {
  mlsys__pcr_plan pl;
  uint8_t *prefix = NULL, *head = NULL, zero[4096];
  uint64_t pos;
  mlsys_status st;
  uint32_t i;
  int g;
  if (!w->n) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "a record needs at least one image");
  if ((st = mlsys__pcr_plan_layout(w, &pl))) return st;
  /* group CRCs first: they live in the prefix */
  for (g = 1; g <= w->K; g++) {
    uint32_t crc;
    if (!(head = mlsys__pcr_group_head(w, &pl, g))) return mlsys__pcr_nomem();
    crc = mlsys_crc32c(0, head, MLSYS__PCR_GHDR + 4 * (size_t)w->n);
    for (i = 0; i < w->n; i++) crc = mlsys_crc32c(crc, w->img[i].jpg + w->img[i].poff[g - 1], w->img[i].plen[g - 1]);
    pl.gcrc[g] = crc;
    mlsys_free(head);
    head = NULL;
  }
  if ((st = mlsys__pcr_build_prefix(w, &pl, &prefix))) return st;
  memset(zero, 0, sizeof zero);
  st = emit(ctx, prefix, (size_t)pl.P);
  pos = pl.P;
  mlsys_free(prefix);
  for (g = 1; g <= w->K && !st; g++) {
    uint64_t next = g < w->K ? pl.goff[g + 1] : pl.file_bytes;
    if (!(head = mlsys__pcr_group_head(w, &pl, g))) return mlsys__pcr_nomem();
    st = emit(ctx, head, MLSYS__PCR_GHDR + 4 * (size_t)w->n);
    mlsys_free(head);
    for (i = 0; i < w->n && !st; i++)
      if (w->img[i].plen[g - 1]) st = emit(ctx, w->img[i].jpg + w->img[i].poff[g - 1], w->img[i].plen[g - 1]);
    pos += pl.gbytes[g];
    while (!st && pos < next) {
      size_t k = next - pos > sizeof zero ? sizeof zero : (size_t)(next - pos);
      st = emit(ctx, zero, k);
      pos += k;
    }
  }
  return st;
}

static void mlsys__pcr_writer_reset(mlsys_pcr_writer *w) {
  uint32_t i;
  for (i = 0; i < w->n; i++) mlsys__pcr_wimg_free(&w->img[i]);
  w->n = 0;
}

typedef struct { FILE *f; const char *path; } mlsys__pcr_fctx;
static mlsys_status mlsys__pcr_emit_file(void *ctx, const void *p, size_t n) {
  mlsys__pcr_fctx *c = (mlsys__pcr_fctx *)ctx;
  if (n && fwrite(p, 1, n, c->f) != n) return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "writing '%s': %s", c->path, strerror(errno));
  return MLSYS_OK;
}
typedef struct { uint8_t *b; size_t n, cap; } mlsys__pcr_mctx;
static mlsys_status mlsys__pcr_emit_mem(void *ctx, const void *p, size_t n) {
  mlsys__pcr_mctx *c = (mlsys__pcr_mctx *)ctx;
  if (c->n + n > c->cap) {
    size_t nc = c->cap ? c->cap : 65536;
    uint8_t *q;
    while (nc < c->n + n) nc *= 2;
    if (!(q = (uint8_t *)MLSYS_REALLOC(c->b, nc))) return mlsys__pcr_nomem();
    c->b = q; c->cap = nc;
  }
  memcpy(c->b + c->n, p, n);
  c->n += n;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_writer_finish_mem(mlsys_pcr_writer *w, uint8_t **buf, size_t *len) {
  mlsys__pcr_mctx c = {NULL, 0, 0};
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if (!w || !buf || !len) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "writer_finish_mem with a NULL argument");
  *buf = NULL; *len = 0;
  if ((st = mlsys__pcr_write_record(w, mlsys__pcr_emit_mem, &c))) { MLSYS_FREE(c.b); return st; }
  mlsys__pcr_writer_reset(w);
  *buf = c.b; *len = c.n;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_writer_finish_file(mlsys_pcr_writer *w, const char *path) {
  mlsys__pcr_fctx c;
  char *tmp;
  size_t pl;
  mlsys_status st;
  int bad;
  MLSYS__PCR_ENTER();
  if (!w || !path || !*path) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "writer_finish_file with a NULL argument");
  if (!w->n) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "'%s': a record needs at least one image", path);
  pl = strlen(path);
  if (!(tmp = (char *)mlsys_alloc(pl + 8, 1))) return mlsys__pcr_nomem();
  snprintf(tmp, pl + 8, "%s.tmp", path);
  if (!(c.f = fopen(tmp, "wb"))) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    mlsys_free(tmp);
    return st;
  }
  c.path = tmp;
  st = mlsys__pcr_write_record(w, mlsys__pcr_emit_file, &c);
  /* durable before visible: data and the rename reach the disk in that order */
  bad = fflush(c.f) != 0 || fsync(fileno(c.f)) != 0;
  if (fclose(c.f) != 0) bad = 1;
  if (!st && bad) st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "writing '%s': %s", tmp, strerror(errno));
  if (!st && rename(tmp, path) != 0) st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  if (st) {
    remove(tmp);
    mlsys_free(tmp);
    return st;
  }
  {
    /* the directory entry */
    char *dir = mlsys_strdup(path), *sl;
    int fd;
    if (dir) {
      sl = strrchr(dir, '/');
      if (sl) *(sl == dir ? sl + 1 : sl) = 0;
      fd = open(sl ? dir : ".", O_RDONLY);
      if (fd >= 0) { (void)fsync(fd); close(fd); }
      mlsys_free(dir);
    }
  }
  mlsys_free(tmp);
  mlsys__pcr_writer_reset(w);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_pcr_writer_destroy(mlsys_pcr_writer *w) {
  if (!w) return;
  mlsys__pcr_writer_reset(w);
  mlsys_free(w->img);
  mlsys_free(w);
}

/* ================================================================================================================
   3. Reader (§2.6, §3.3)
   ================================================================================================================ */
struct mlsys_pcr_throttle {
  pthread_mutex_t mu;
  double rate, burst, tokens, last;
};
MLSYS_DEF mlsys_status mlsys_pcr_throttle_create(double bytes_per_s, double burst_bytes, mlsys_pcr_throttle **out) {
  mlsys_pcr_throttle *t;
  MLSYS__PCR_ENTER();
  if (!out || !(bytes_per_s > 0) || !isfinite(bytes_per_s) || burst_bytes < 0)
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "throttle at %g bytes/s with a burst of %g bytes (rate > 0)", bytes_per_s, burst_bytes);
  if (!(t = (mlsys_pcr_throttle *)mlsys_calloc(1, sizeof *t))) return mlsys__pcr_nomem();
  pthread_mutex_init(&t->mu, NULL);
  t->rate = bytes_per_s;
  t->burst = burst_bytes > 0 ? burst_bytes : 1048576.0;
  t->tokens = t->burst;
  t->last = mlsys_now();
  *out = t;
  return MLSYS_OK;
}
/* Tokens may go negative: a request waits for its own debt, so concurrent readers share the rate fairly and the
   long-run rate is exact. */
MLSYS_DEF void mlsys_pcr_throttle_take(mlsys_pcr_throttle *t, uint64_t bytes) {
  double wait, now;
  if (!t || !bytes) return;
  pthread_mutex_lock(&t->mu);
  now = mlsys_now();
  t->tokens += (now - t->last) * t->rate;
  if (t->tokens > t->burst) t->tokens = t->burst;
  t->last = now;
  t->tokens -= (double)bytes;
  wait = t->tokens < 0 ? -t->tokens / t->rate : 0;
  pthread_mutex_unlock(&t->mu);
  mlsys__pcr_sleep(wait);
}
MLSYS_DEF void mlsys_pcr_throttle_destroy(mlsys_pcr_throttle *t) {
  if (!t) return;
  pthread_mutex_destroy(&t->mu);
  mlsys_free(t);
}

struct mlsys_pcr_reader {
  char *name;               /* for messages: the path, or "(memory)" */
  int fd, io, skip_crc;
  mlsys_pcr_throttle *thr;
  int own_thr;
  const uint8_t *data;      /* the record's bytes: user memory, a mapping, or buf */
  uint8_t *buf;             /* pread / O_DIRECT buffer */
  size_t cap;
  void *map;
  size_t map_len;
  uint64_t real_size;       /* the file's size */
  uint64_t resident;        /* bytes [0, resident) are valid in data */
  uint64_t bytes_read;
  /* the prefix */
  uint32_t N, flags, extra_bytes, jhdr_bytes;
  int K, align_log2, script_id;
  uint64_t P, file_bytes;
  uint64_t goff[MLSYS_PCR_MAX_GROUPS + 1];
  uint32_t gbytes[MLSYS_PCR_MAX_GROUPS + 1], gcrc[MLSYS_PCR_MAX_GROUPS + 1];
  int loaded_k;
  uint64_t *poff;           /* [K][N]: file offset of image i's part in group g (rows g − 1 for loaded groups) */
  uint32_t *plen;           /* [K][N] */
  /* read_one: length tables read on demand */
  int tab_k;
};

#define MLSYS__PCR_DIRECT_ALIGN 4096

/* section C's entry i (computed each time: the buffer moves when a load grows it) */
static const uint8_t *mlsys__pcr_img(const mlsys_pcr_reader *r, uint32_t i) {
  return r->data + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (size_t)r->K + MLSYS__PCR_IMGENT * (size_t)i;
}

/* grows buf to hold [0, need) (aligned for O_DIRECT), keeping the resident bytes */
static mlsys_status mlsys__pcr_reserve(mlsys_pcr_reader *r, uint64_t need) {
  uint8_t *nb;
  size_t cap;
  if (r->map || r->fd < 0) return MLSYS_OK;
  if (need <= r->cap) return MLSYS_OK;
  if (need > (uint64_t)SIZE_MAX / 2) return mlsys__pcr_nomem();
  cap = (size_t)mlsys__pcr_align(need, 12);
  if (r->io == MLSYS_PCR_IO_DIRECT) {
    void *p = NULL;
    if (posix_memalign(&p, MLSYS__PCR_DIRECT_ALIGN, cap) != 0) return mlsys__pcr_nomem();
    nb = (uint8_t *)p;
    if (r->resident) memcpy(nb, r->buf, (size_t)r->resident);
    free(r->buf);
  } else if (!(nb = (uint8_t *)MLSYS_REALLOC(r->buf, cap))) {
    return mlsys__pcr_nomem();
  }
  r->buf = nb;
  r->cap = cap;
  r->data = nb;
  return MLSYS_OK;
}

/* makes [resident, to) resident (to ≤ real_size): reads in 1 MiB steps, each paid to the throttle first */
static mlsys_status mlsys__pcr_fill(mlsys_pcr_reader *r, uint64_t to) {
  const uint64_t step = 1u << 20;
  mlsys_status st;
  if (to > r->real_size) to = r->real_size;
  if (to <= r->resident) return MLSYS_OK;
  if (r->fd < 0) {   /* memory: nothing to transfer */
    r->bytes_read += to - r->resident;
    r->resident = to;
    return MLSYS_OK;
  }
  if (r->map) {
    /* touch every page so the bytes are in memory when load returns (what a read would have done) */
    uint64_t p = r->resident;
    volatile uint8_t sink = 0;
    (void)posix_madvise((uint8_t *)r->map + (r->resident & ~(uint64_t)4095), (size_t)(to - (r->resident & ~(uint64_t)4095)), POSIX_MADV_WILLNEED);
    while (p < to) {
      uint64_t e = p + step < to ? p + step : to, q;
      mlsys_pcr_throttle_take(r->thr, e - p);
      for (q = p; q < e; q += 4096) sink ^= r->data[q];
      sink ^= r->data[e - 1];
      p = e;
    }
    (void)sink;
    r->bytes_read += to - r->resident;
    r->resident = to;
    return MLSYS_OK;
  }
  if ((st = mlsys__pcr_reserve(r, r->io == MLSYS_PCR_IO_DIRECT ? mlsys__pcr_align(to, 12) : to))) return st;
  {
    uint64_t p = r->io == MLSYS_PCR_IO_DIRECT ? r->resident & ~(uint64_t)(MLSYS__PCR_DIRECT_ALIGN - 1) : r->resident;
    uint64_t end = r->io == MLSYS_PCR_IO_DIRECT ? mlsys__pcr_align(to, 12) : to;
    while (p < end) {
      uint64_t want = end - p < step ? end - p : step;
      ssize_t got;
      mlsys_pcr_throttle_take(r->thr, want);
      got = pread(r->fd, r->buf + p, (size_t)want, (off_t)p);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "%s: reading bytes %llu..%llu: %s", r->name, (unsigned long long)p,
                                          (unsigned long long)(p + want), strerror(errno));
      if (got == 0) break;   /* end of file (O_DIRECT reads past it are short) */
      p += (uint64_t)got;
    }
    if (p < to) return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: the file ended at byte %llu while reading to %llu (it shrank?)",
                                       r->name, (unsigned long long)p, (unsigned long long)to);
  }
  r->bytes_read += to - r->resident;
  r->resident = to;
  return MLSYS_OK;
}

static uint64_t mlsys__pcr_R(const mlsys_pcr_reader *r, int k) { return k <= 0 ? r->P : r->goff[k] + r->gbytes[k]; }

/* §2.6: the 64-byte header (needs 64 resident bytes) */
static mlsys_status mlsys__pcr_parse_header(mlsys_pcr_reader *r, uint32_t max_images, int max_groups) {
  const uint8_t *b = r->data;
  uint16_t vmaj;
  uint64_t minp;
  if (r->resident < 8 || memcmp(b, "MLSYSPCR", 8) != 0) {
    if (r->resident >= 8 || (r->resident && memcmp(b, "MLSYSPCR", (size_t)r->resident) != 0))
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: not a PCR record (no MLSYSPCR magic)", r->name);
    return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: %llu bytes, shorter than the 64-byte header", r->name,
                           (unsigned long long)r->real_size);
  }
  if (r->resident < MLSYS__PCR_HDR)
    return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: %llu bytes, shorter than the 64-byte header", r->name,
                           (unsigned long long)r->real_size);
  vmaj = mlsys__pcr_le16(b + 8);
  if (vmaj != 1) return mlsys__pcr_fail(MLSYS_PCR_P_VERSION, MLSYS_ERR_UNSUPPORTED, "%s: format version %u (this reader reads version 1)", r->name, vmaj);
  r->flags = mlsys__pcr_le32(b + 12);
  if (r->flags & 0xFFFCu)
    return mlsys__pcr_fail(MLSYS_PCR_P_VERSION, MLSYS_ERR_UNSUPPORTED, "%s: unknown flag bits 0x%04x (a newer writer)", r->name, r->flags & 0xFFFCu);
  r->N = mlsys__pcr_le32(b + 16);
  r->K = mlsys__pcr_le16(b + 20);
  r->align_log2 = mlsys__pcr_le16(b + 22);
  r->P = mlsys__pcr_le64(b + 24);
  r->file_bytes = mlsys__pcr_le64(b + 32);
  r->extra_bytes = mlsys__pcr_le32(b + 40);
  r->jhdr_bytes = mlsys__pcr_le32(b + 44);
  r->script_id = (int)mlsys__pcr_le32(b + 48);
  if (r->N < 1 || r->N > MLSYS_PCR_MAX_IMAGES) return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %u images (1..2^24)", r->name, r->N);
  if (r->K < 1 || r->K > MLSYS_PCR_MAX_GROUPS) return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %d scan groups (1..64)", r->name, r->K);
  if (r->N > max_images) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "%s: %u images (the reader's limit is %u)", r->name, r->N, max_images);
  if (r->K > max_groups) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "%s: %d groups (the reader's limit is %d)", r->name, r->K, max_groups);
  if ((r->align_log2 && (r->align_log2 < 9 || r->align_log2 > 21)) || (!r->align_log2) != !(r->flags & 2u))
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: alignment 2^%d with the ALIGNED flag %s", r->name, r->align_log2,
                           r->flags & 2u ? "set" : "clear");
  if (!r->extra_bytes != !(r->flags & 1u))
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %u extra bytes with the HAS_EXTRA flag %s", r->name, r->extra_bytes,
                           r->flags & 1u ? "set" : "clear");
  minp = MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (uint64_t)r->K + MLSYS__PCR_IMGENT * (uint64_t)r->N + r->extra_bytes + r->jhdr_bytes;
  if (r->P < minp || r->P != mlsys__pcr_align(minp, r->align_log2) || r->P > r->file_bytes)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: prefix of %llu bytes (its sections need %llu; the record is %llu)", r->name,
                           (unsigned long long)r->P, (unsigned long long)minp, (unsigned long long)r->file_bytes);
  if (r->real_size > r->file_bytes)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %llu bytes after the end of the record (%llu bytes)", r->name,
                           (unsigned long long)(r->real_size - r->file_bytes), (unsigned long long)r->file_bytes);
  if (r->real_size < r->P)
    return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: truncated inside the prefix (%llu of %llu bytes)", r->name,
                           (unsigned long long)r->real_size, (unsigned long long)r->P);
  return MLSYS_OK;
}

/* §2.6: directory, image table, sections D and E, prefix CRC (the prefix resident) */
static mlsys_status mlsys__pcr_parse_prefix(mlsys_pcr_reader *r) {
  const uint8_t *b = r->data;
  uint64_t end = r->P, secd, sece;
  uint32_t i;
  int g;
  if (!r->skip_crc) {
    uint8_t z[4] = {0, 0, 0, 0};
    uint32_t want = mlsys__pcr_le32(b + 60), crc;
    crc = mlsys_crc32c(0, b, 60);
    crc = mlsys_crc32c(crc, z, 4);
    crc = mlsys_crc32c(crc, b + 64, (size_t)(r->P - 64));
    if (crc != want)
      return mlsys__pcr_fail(MLSYS_PCR_P_CRC, MLSYS_ERR_PARSE, "%s: prefix CRC-32C 0x%08x, expected 0x%08x (the header, directory or image table is damaged)",
                             r->name, crc, want);
  }
  for (g = 1; g <= r->K; g++) {
    const uint8_t *e = b + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (g - 1);
    r->goff[g] = mlsys__pcr_le64(e);
    r->gbytes[g] = mlsys__pcr_le32(e + 8);
    r->gcrc[g] = mlsys__pcr_le32(e + 12);
    if (r->goff[g] != end || (uint64_t)r->gbytes[g] < MLSYS__PCR_GHDR + 4 * (uint64_t)r->N || r->goff[g] + r->gbytes[g] > r->file_bytes)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: directory entry of group %d: offset %llu (expected %llu), %u bytes (at least %llu), record of %llu bytes",
                             r->name, g, (unsigned long long)r->goff[g], (unsigned long long)end, r->gbytes[g],
                             (unsigned long long)(MLSYS__PCR_GHDR + 4 * (uint64_t)r->N), (unsigned long long)r->file_bytes);
    end = mlsys__pcr_align(r->goff[g] + r->gbytes[g], r->align_log2);
  }
  if (end != r->file_bytes)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: the groups end at byte %llu, the header says the record has %llu", r->name,
                           (unsigned long long)end, (unsigned long long)r->file_bytes);
  secd = MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (uint64_t)r->K + MLSYS__PCR_IMGENT * (uint64_t)r->N;
  sece = secd + r->extra_bytes;
  for (i = 0; i < r->N; i++) {
    const uint8_t *e = mlsys__pcr_img(r, i);
    uint32_t w = mlsys__pcr_le32(e + 8), h = mlsys__pcr_le32(e + 12), jo = mlsys__pcr_le32(e + 20), jl = mlsys__pcr_le32(e + 24);
    uint32_t xo = mlsys__pcr_le32(e + 28), xl = mlsys__pcr_le32(e + 32);
    uint16_t fl = mlsys__pcr_le16(e + 18);
    int nc = e[16], ns = e[17];
    if (!w || !h || w > 65535 || h > 65535 || nc < 1 || nc > 4 || ns < 1 || ns > MLSYS_PCR_MAX_SCANS || (fl & 0xF0F8u))
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: image %u: %u x %u, %d components, %d scans, flags 0x%04x", r->name, i, w, h, nc, ns, fl);
    if (jl < 4 || (uint64_t)jo + jl > r->jhdr_bytes || (uint64_t)xo + xl > r->extra_bytes)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: image %u: JPEG header [%u, +%u) or extra data [%u, +%u) outside their sections (%u, %u bytes)",
                             r->name, i, jo, jl, xo, xl, r->jhdr_bytes, r->extra_bytes);
    if (b[sece + jo] != 0xFF || b[sece + jo + 1] != 0xD8)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: image %u: its JPEG header does not start with SOI", r->name, i);
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__pcr_reader_new(const char *name, const mlsys_pcr_reader_desc *dd, mlsys_pcr_reader **out) {
  mlsys_pcr_reader *r = (mlsys_pcr_reader *)mlsys_calloc(1, sizeof *r);
  if (!r || !(r->name = mlsys_strdup(name))) { mlsys_free(r); return mlsys__pcr_nomem(); }
  r->fd = -1;
  if (dd) {
    r->io = dd->io;
    r->skip_crc = dd->skip_crc;
    r->thr = dd->throttle;
    if (!r->thr && dd->throttle_Bps > 0) {
      mlsys_status st = mlsys_pcr_throttle_create(dd->throttle_Bps, 0, &r->thr);
      if (st) { mlsys_free(r->name); mlsys_free(r); return st; }
      r->own_thr = 1;
    }
  }
  *out = r;
  return MLSYS_OK;
}

static mlsys_status mlsys__pcr_open_common(mlsys_pcr_reader *r, const mlsys_pcr_reader_desc *d) {
  mlsys_status st;
  uint32_t maxi = d && d->max_images ? d->max_images : MLSYS_PCR_MAX_IMAGES;
  int maxg = d && d->max_groups ? d->max_groups : MLSYS_PCR_MAX_GROUPS;
  int load_k = d ? d->load_k : 0;
  /* first read: the header and directory always fit in 4 KiB (§3.3 step 1) */
  if ((st = mlsys__pcr_fill(r, r->real_size < 4096 ? r->real_size : 4096))) return st;
  if ((st = mlsys__pcr_parse_header(r, maxi, maxg))) return st;
  if (load_k > r->K) load_k = r->K;
  /* second read: the rest of the prefix, and the groups wanted, in one go (R(load_k) from the raw directory entry,
     which lies in the first 4 KiB; parse_prefix validates it after the read) */
  {
    uint64_t want = r->P;
    if (load_k > 0 && r->resident >= MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (uint64_t)load_k) {
      const uint8_t *e = r->data + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (size_t)(load_k - 1);
      uint64_t end = mlsys__pcr_le64(e) + mlsys__pcr_le32(e + 8);
      if (end > want && end <= r->file_bytes) want = end;
    }
    if ((st = mlsys__pcr_fill(r, want))) return st;
  }
  if ((st = mlsys__pcr_parse_prefix(r))) return st;
  if (!(r->poff = (uint64_t *)mlsys_alloc((size_t)r->K * r->N, sizeof(uint64_t))) ||
      !(r->plen = (uint32_t *)mlsys_alloc((size_t)r->K * r->N, sizeof(uint32_t))))
    return mlsys__pcr_nomem();
  if (load_k > 0) return mlsys_pcr_load(r, load_k);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_open_file(const char *path, const mlsys_pcr_reader_desc *d, mlsys_pcr_reader **out) {
  mlsys_pcr_reader *r;
  mlsys_status st;
  struct stat sb;
  int io = d ? d->io : 0, flags = O_RDONLY;
  MLSYS__PCR_ENTER();
  if (!path || !out) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "open_file with a NULL argument");
  *out = NULL;
  if (io < 0 || io > 2) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "unknown I/O mode %d (0 pread, 1 mmap, 2 O_DIRECT)", io);
  if ((st = mlsys__pcr_reader_new(path, d, &r))) return st;
#if defined(O_DIRECT)
  if (io == MLSYS_PCR_IO_DIRECT) flags |= O_DIRECT;
#elif defined(__O_DIRECT)
  if (io == MLSYS_PCR_IO_DIRECT) flags |= __O_DIRECT;   /* glibc without _GNU_SOURCE */
#else
  if (io == MLSYS_PCR_IO_DIRECT) { mlsys_pcr_close(r); return mlsys__pcr_fail(MLSYS_PCR_P_NOBACKEND, MLSYS_ERR_UNSUPPORTED, "O_DIRECT is not available on this system"); }
#endif
  r->fd = open(path, flags);
  if (r->fd < 0) {
    int e = errno;
    mlsys_pcr_close(r);
    if (io == MLSYS_PCR_IO_DIRECT && e == EINVAL)
      return mlsys__pcr_fail(MLSYS_PCR_P_NOBACKEND, MLSYS_ERR_UNSUPPORTED, "'%s': the filesystem refuses O_DIRECT", path);
    return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot open '%s': %s", path, strerror(e));
  }
  if (fstat(r->fd, &sb) != 0) {
    st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    mlsys_pcr_close(r);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    mlsys_pcr_close(r);
    return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "'%s' is not a regular file", path);
  }
  r->real_size = (uint64_t)sb.st_size;
  if (io == MLSYS_PCR_IO_MMAP && r->real_size) {
    r->map = mmap(NULL, (size_t)r->real_size, PROT_READ, MAP_PRIVATE, r->fd, 0);
    if (r->map == MAP_FAILED) {
      r->map = NULL;
      st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
      mlsys_pcr_close(r);
      return st;
    }
    r->map_len = (size_t)r->real_size;
    r->data = (const uint8_t *)r->map;
    (void)posix_madvise(r->map, r->map_len, POSIX_MADV_SEQUENTIAL);
  }
  if (!r->real_size) {
    mlsys_pcr_close(r);
    return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: an empty file", path);
  }
  if ((st = mlsys__pcr_open_common(r, d))) {
    if (st == MLSYS_ERR_IO && io == MLSYS_PCR_IO_DIRECT && errno == EINVAL)
      st = mlsys__pcr_fail(MLSYS_PCR_P_NOBACKEND, MLSYS_ERR_UNSUPPORTED, "'%s': the filesystem refuses O_DIRECT reads", path);
    mlsys_pcr_close(r);
    return st;
  }
  *out = r;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_open_mem(const uint8_t *buf, size_t len, const mlsys_pcr_reader_desc *d, mlsys_pcr_reader **out) {
  mlsys_pcr_reader *r;
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if ((!buf && len) || !out) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "open_mem with a NULL argument");
  *out = NULL;
  if ((st = mlsys__pcr_reader_new("(memory)", d, &r))) return st;
  r->data = buf;
  r->real_size = len;
  if (!len) { mlsys_pcr_close(r); return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "(memory): an empty record"); }
  if ((st = mlsys__pcr_open_common(r, d))) { mlsys_pcr_close(r); return st; }
  *out = r;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_get_info(const mlsys_pcr_reader *r, mlsys_pcr_info *o) {
  int g;
  if (!r || !o) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "get_info with a NULL argument");
  memset(o, 0, sizeof *o);
  o->n_images = r->N;
  o->n_groups = r->K;
  o->script_id = r->script_id;
  o->flags = r->flags;
  o->align_log2 = r->align_log2;
  o->prefix_bytes = r->P;
  o->file_bytes = r->file_bytes;
  o->loaded_k = r->loaded_k;
  o->group_end[0] = r->P;
  for (g = 1; g <= r->K; g++) {
    o->group_end[g] = mlsys__pcr_R(r, g);
    o->group_payload[g] = r->gbytes[g] - MLSYS__PCR_GHDR - 4 * (uint64_t)r->N;
  }
  return MLSYS_OK;
}

/* §2.6 for group g (resident): header fields, CRC, part lengths; fills its row of poff/plen */
static mlsys_status mlsys__pcr_verify_group(mlsys_pcr_reader *r, int g) {
  const uint8_t *h = r->data + r->goff[g];
  uint64_t payload = (uint64_t)r->gbytes[g] - MLSYS__PCR_GHDR - 4 * (uint64_t)r->N, sum = 0, off;
  uint32_t i, *len = r->plen + (size_t)(g - 1) * r->N;
  uint64_t *po = r->poff + (size_t)(g - 1) * r->N;
  if (memcmp(h, "PCRG", 4) != 0 || mlsys__pcr_le16(h + 4) != g || mlsys__pcr_le32(h + 8) != r->N || mlsys__pcr_le32(h + 12) != payload)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d at byte %llu: header says magic %.4s, group %u, %u images, %u payload bytes (expected PCRG, %d, %u, %llu)",
                           r->name, g, (unsigned long long)r->goff[g], memcmp(h, "PCRG", 4) ? "????" : "PCRG", mlsys__pcr_le16(h + 4),
                           mlsys__pcr_le32(h + 8), mlsys__pcr_le32(h + 12), g, r->N, (unsigned long long)payload);
  if (!r->skip_crc) {
    uint32_t crc = mlsys_crc32c(0, h, r->gbytes[g]);
    if (crc != r->gcrc[g])
      return mlsys__pcr_fail(MLSYS_PCR_P_CRC, MLSYS_ERR_PARSE, "%s: group %d (bytes %llu..%llu): CRC-32C 0x%08x, expected 0x%08x (damaged data)", r->name,
                             g, (unsigned long long)r->goff[g], (unsigned long long)(r->goff[g] + r->gbytes[g]), crc, r->gcrc[g]);
  }
  off = r->goff[g] + MLSYS__PCR_GHDR + 4 * (uint64_t)r->N;
  for (i = 0; i < r->N; i++) {
    uint32_t l = mlsys__pcr_le32(h + MLSYS__PCR_GHDR + 4 * (size_t)i);
    if (g == 1 && l == 0)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group 1: image %u has an empty first part (every image has a first scan)", r->name, i);
    sum += l;
    if (sum > payload)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d: the part lengths pass the payload (%llu bytes) at image %u", r->name, g,
                             (unsigned long long)payload, i);
    len[i] = l;
    po[i] = off;
    off += l;
  }
  if (sum != payload)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d: the part lengths sum to %llu, the payload is %llu bytes", r->name, g,
                           (unsigned long long)sum, (unsigned long long)payload);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_load(mlsys_pcr_reader *r, int k) {
  mlsys_status st;
  uint64_t want;
  MLSYS__PCR_ENTER();
  if (!r) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "load with a NULL reader");
  if (k < 0 || k > r->K) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: fidelity %d (the record has %d scan groups)", r->name, k, r->K);
  if (k <= r->loaded_k) return MLSYS_OK;
  want = mlsys__pcr_R(r, k);
  /* one sequential read of what is missing (§3.3 step 2); a short file gives the groups it holds */
  if ((st = mlsys__pcr_fill(r, want))) return st;
  while (r->loaded_k < k) {
    int g = r->loaded_k + 1;
    if (r->goff[g] + r->gbytes[g] > r->resident)
      return mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: truncated: group %d needs bytes up to %llu, the file has %llu", r->name, g,
                             (unsigned long long)(r->goff[g] + r->gbytes[g]), (unsigned long long)r->real_size);
    if ((st = mlsys__pcr_verify_group(r, g))) return st;
    r->loaded_k = g;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_image_info(const mlsys_pcr_reader *r, uint32_t i, mlsys_pcr_image *o) {
  const uint8_t *e;
  MLSYS__PCR_ENTER();
  if (!r || !o) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "image_info with a NULL argument");
  if (i >= r->N) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: image %u (the record has %u)", r->name, i, r->N);
  e = mlsys__pcr_img(r, i);
  o->label = (int64_t)mlsys__pcr_le64(e);
  o->width = mlsys__pcr_le32(e + 8);
  o->height = mlsys__pcr_le32(e + 12);
  o->ncomp = e[16];
  o->nscans = e[17];
  o->iflags = mlsys__pcr_le16(e + 18);
  o->jhdr_len = mlsys__pcr_le32(e + 24);
  o->extra_len = mlsys__pcr_le32(e + 32);
  o->extra = r->data + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (size_t)r->K + MLSYS__PCR_IMGENT * (size_t)r->N + mlsys__pcr_le32(e + 28);
  o->src_bytes = mlsys__pcr_le32(e + 36);
  o->full_crc = mlsys__pcr_le32(e + 40);
  return MLSYS_OK;
}

static const uint8_t *mlsys__pcr_jhdr(const mlsys_pcr_reader *r, uint32_t i, uint32_t *len) {
  const uint8_t *e = mlsys__pcr_img(r, i);
  *len = mlsys__pcr_le32(e + 24);
  return r->data + MLSYS__PCR_HDR + MLSYS__PCR_DIRENT * (size_t)r->K + MLSYS__PCR_IMGENT * (size_t)r->N + r->extra_bytes + mlsys__pcr_le32(e + 20);
}

static mlsys_status mlsys__pcr_check_ik(const mlsys_pcr_reader *r, uint32_t i, int k) {
  if (i >= r->N) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: image %u (the record has %u)", r->name, i, r->N);
  if (k < 1 || k > r->K) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: fidelity %d (1..%d)", r->name, k, r->K);
  if (k > r->loaded_k) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: fidelity %d but only %d groups are loaded (call mlsys_pcr_load)", r->name, k, r->loaded_k);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_image_segments(const mlsys_pcr_reader *r, uint32_t i, int k, const uint8_t **ptr, size_t *len, int *nseg) {
  static const uint8_t eoi[2] = {0xFF, 0xD9};
  uint32_t hl;
  mlsys_status st;
  int g, n = 0;
  MLSYS__PCR_ENTER();
  if (!r || !ptr || !len || !nseg) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "image_segments with a NULL argument");
  if ((st = mlsys__pcr_check_ik(r, i, k))) return st;
  ptr[n] = mlsys__pcr_jhdr(r, i, &hl);
  len[n++] = hl;
  for (g = 1; g <= k; g++) {
    size_t idx = (size_t)(g - 1) * r->N + i;
    if (!r->plen[idx]) continue;
    ptr[n] = r->data + r->poff[idx];
    len[n++] = r->plen[idx];
  }
  ptr[n] = eoi;   /* parts never hold the EOI: always append it (a prefix without it fails in stb_image, §3.3) */
  len[n++] = 2;
  *nseg = n;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_image_jpeg(const mlsys_pcr_reader *r, uint32_t i, int k, uint8_t *dst, size_t cap, size_t *len) {
  const uint8_t *p[MLSYS_PCR_MAX_GROUPS + 2];
  size_t l[MLSYS_PCR_MAX_GROUPS + 2], need = 0, o = 0;
  int n, s;
  mlsys_status st;
  if (!len) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "image_jpeg with a NULL length");
  if ((st = mlsys_pcr_image_segments(r, i, k, p, l, &n))) return st;
  for (s = 0; s < n; s++) need += l[s];
  *len = need;
  if (!dst) return MLSYS_OK;
  if (cap < need) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_TOO_BIG, "%s: image %u at fidelity %d needs %zu bytes, the buffer has %zu", r->name, i, k, need, cap);
  for (s = 0; s < n; s++) { memcpy(dst + o, p[s], l[s]); o += l[s]; }
  return MLSYS_OK;
}

/* pread for read_one: [off, off + n) into dst (or from memory), paid to the throttle */
static mlsys_status mlsys__pcr_pread(mlsys_pcr_reader *r, uint64_t off, uint8_t *dst, size_t n, int *short_file) {
  *short_file = 0;
  if (off + n > r->real_size) { *short_file = 1; return MLSYS_OK; }
  if (off + n <= r->resident || r->fd < 0 || r->map) {
    memcpy(dst, r->data + off, n);
  } else if (r->io == MLSYS_PCR_IO_DIRECT) {
    /* O_DIRECT needs aligned transfers: read the aligned span into a bounce buffer */
    uint64_t a = off & ~(uint64_t)(MLSYS__PCR_DIRECT_ALIGN - 1), e = mlsys__pcr_align(off + n, 12), p = a;
    void *bb = NULL;
    if (posix_memalign(&bb, MLSYS__PCR_DIRECT_ALIGN, (size_t)(e - a)) != 0) return mlsys__pcr_nomem();
    mlsys_pcr_throttle_take(r->thr, e - a);
    while (p < e) {
      ssize_t got = pread(r->fd, (uint8_t *)bb + (p - a), (size_t)(e - p), (off_t)p);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) { free(bb); return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "%s: reading at %llu: %s", r->name, (unsigned long long)p, strerror(errno)); }
      if (got == 0) break;
      p += (uint64_t)got;
    }
    if (p < off + n) { free(bb); *short_file = 1; return MLSYS_OK; }
    memcpy(dst, (uint8_t *)bb + (off - a), n);
    free(bb);
    r->bytes_read += n;
    return MLSYS_OK;
  } else {
    size_t got = 0;
    mlsys_pcr_throttle_take(r->thr, n);
    while (got < n) {
      ssize_t g = pread(r->fd, dst + got, n - got, (off_t)(off + got));
      if (g < 0 && errno == EINTR) continue;
      if (g < 0) return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "%s: reading at %llu: %s", r->name, (unsigned long long)(off + got), strerror(errno));
      if (g == 0) { *short_file = 1; return MLSYS_OK; }
      got += (size_t)g;
    }
  }
  if (r->map) mlsys_pcr_throttle_take(r->thr, n);
  r->bytes_read += n;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_read_one(mlsys_pcr_reader *r, uint32_t i, int k, uint8_t **jpg, size_t *len) {
  uint8_t *out = NULL, *tab = NULL;
  uint32_t hl;
  const uint8_t *hdr;
  size_t need, o = 0;
  mlsys_status st = MLSYS_OK;
  int g, sf;
  MLSYS__PCR_ENTER();
  if (!r || !jpg || !len) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "read_one with a NULL argument");
  *jpg = NULL; *len = 0;
  if (i >= r->N || k < 1 || k > r->K) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s: image %u at fidelity %d (%u images, %d groups)", r->name, i, k, r->N, r->K);
  /* the length tables of groups ≤ k (kept: later calls read only the parts) */
  for (g = r->tab_k > r->loaded_k ? r->tab_k + 1 : r->loaded_k + 1; g <= k; g++) {
    size_t tl = MLSYS__PCR_GHDR + 4 * (size_t)r->N;
    uint64_t sum = 0, payload = (uint64_t)r->gbytes[g] - tl, off = r->goff[g] + tl;
    uint32_t j, *lr = r->plen + (size_t)(g - 1) * r->N;
    uint64_t *po = r->poff + (size_t)(g - 1) * r->N;
    if (!(tab = (uint8_t *)mlsys_alloc(tl, 1))) return mlsys__pcr_nomem();
    if ((st = mlsys__pcr_pread(r, r->goff[g], tab, tl, &sf))) goto done;
    if (sf) { st = mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: truncated: group %d's length table is past the end of the file", r->name, g); goto done; }
    if (memcmp(tab, "PCRG", 4) != 0 || mlsys__pcr_le16(tab + 4) != g || mlsys__pcr_le32(tab + 8) != r->N || mlsys__pcr_le32(tab + 12) != payload) {
      st = mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d at byte %llu: a damaged group header", r->name, g, (unsigned long long)r->goff[g]);
      goto done;
    }
    for (j = 0; j < r->N; j++) {
      uint32_t l = mlsys__pcr_le32(tab + MLSYS__PCR_GHDR + 4 * (size_t)j);
      if ((g == 1 && !l) || (sum += l) > payload) {
        st = mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d: a damaged length table (image %u)", r->name, g, j);
        goto done;
      }
      lr[j] = l; po[j] = off; off += l;
    }
    if (sum != payload) { st = mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: group %d: the part lengths sum to %llu, the payload is %llu bytes", r->name, g, (unsigned long long)sum, (unsigned long long)payload); goto done; }
    mlsys_free(tab);
    tab = NULL;
    r->tab_k = g;
  }
  hdr = mlsys__pcr_jhdr(r, i, &hl);
  need = hl + 2;
  for (g = 1; g <= k; g++) need += r->plen[(size_t)(g - 1) * r->N + i];
  if (!(out = (uint8_t *)mlsys_alloc(need, 1))) return mlsys__pcr_nomem();
  memcpy(out, hdr, hl);
  o = hl;
  for (g = 1; g <= k; g++) {
    size_t idx = (size_t)(g - 1) * r->N + i;
    if (!r->plen[idx]) continue;
    if ((st = mlsys__pcr_pread(r, r->poff[idx], out + o, r->plen[idx], &sf))) goto done;
    if (sf) { st = mlsys__pcr_fail(MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE, "%s: truncated: image %u's part in group %d is past the end of the file", r->name, i, g); goto done; }
    o += r->plen[idx];
  }
  out[o++] = 0xFF;
  out[o++] = 0xD9;
  if (k == r->K && !r->skip_crc) {
    uint32_t want = mlsys__pcr_le32(mlsys__pcr_img(r, i) + 40), crc = mlsys_crc32c(0, out, o);
    if (crc != want) { st = mlsys__pcr_fail(MLSYS_PCR_P_CRC, MLSYS_ERR_PARSE, "%s: image %u: CRC-32C 0x%08x of the whole image, expected 0x%08x", r->name, i, crc, want); goto done; }
  }
done:
  mlsys_free(tab);
  if (st) { mlsys_free(out); return st; }
  *jpg = out;
  *len = o;
  return MLSYS_OK;
}

MLSYS_DEF uint64_t mlsys_pcr_bytes_read(const mlsys_pcr_reader *r) { return r ? r->bytes_read : 0; }

MLSYS_DEF void mlsys_pcr_close(mlsys_pcr_reader *r) {
  if (!r) return;
  if (r->map) munmap(r->map, r->map_len);
  if (r->fd >= 0) close(r->fd);
  if (r->own_thr) mlsys_pcr_throttle_destroy(r->thr);
  if (r->buf) {
    if (r->io == MLSYS_PCR_IO_DIRECT) free(r->buf);   /* posix_memalign */
    else MLSYS_FREE(r->buf);
  }
  mlsys_free(r->poff);
  mlsys_free(r->plen);
  mlsys_free(r->name);
  mlsys_free(r);
}

/* ================================================================================================================
   4. Dataset index (§2.5) and the epoch stream (§3.3 step 5)
   ================================================================================================================ */
struct mlsys_pcr_index {
  char *dir;                /* the index's directory, for relative names */
  int n, Kmax;
  uint64_t total;
  uint32_t *nimg;
  int *K;
  uint64_t *R;              /* [n][Kmax + 1] */
  char **path;              /* resolved */
};

static char *mlsys__pcr_dirname(const char *path) {
  const char *sl = strrchr(path, '/');
  char *d;
  size_t n;
  if (!sl) return mlsys_strdup(".");
  n = sl == path ? 1 : (size_t)(sl - path);
  if (!(d = (char *)mlsys_alloc(n + 1, 1))) return NULL;
  memcpy(d, path, n);
  d[n] = 0;
  return d;
}

/* the name stored for a record: relative to the index's directory when it lies below it (the dataset can move), else
   absolute (from the working directory) */
static char *mlsys__pcr_record_name(const char *dir, const char *path) {
  size_t dl = strlen(dir), pl = strlen(path);
  char cwd[4096], *s;
  if (path[0] == '/') {
    if (dir[0] == '/' && !strncmp(path, dir, dl) && path[dl] == '/') return mlsys_strdup(path + dl + 1);
    return mlsys_strdup(path);
  }
  if (!strcmp(dir, ".")) return mlsys_strdup(path[0] == '.' && path[1] == '/' ? path + 2 : path);
  if (dir[0] != '/' && !strncmp(path, dir, dl) && path[dl] == '/') return mlsys_strdup(path + dl + 1);
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  if (!(s = (char *)mlsys_alloc(strlen(cwd) + pl + 2, 1))) return NULL;
  sprintf(s, "%s/%s", cwd, path);
  return s;
}

MLSYS_DEF mlsys_status mlsys_pcr_index_build(const char *const *paths, int n, const char *index_path) {
  mlsys_pcr_info *inf = NULL;
  char **names = NULL, *dir = NULL;
  uint8_t *b = NULL;
  size_t names_bytes = 0, total, o;
  uint64_t nimg = 0;
  mlsys_status st = MLSYS_OK;
  int i, k, Kmax = 0;
  FILE *f = NULL;
  MLSYS__PCR_ENTER();
  if (!paths || n < 1 || !index_path) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "index_build needs at least one record and a path");
  if (!(inf = (mlsys_pcr_info *)mlsys_calloc((size_t)n, sizeof *inf)) || !(names = (char **)mlsys_calloc((size_t)n, sizeof *names)) ||
      !(dir = mlsys__pcr_dirname(index_path))) { st = mlsys__pcr_nomem(); goto done; }
  for (i = 0; i < n; i++) {
    mlsys_pcr_reader *r;
    if (!paths[i]) { st = mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "index_build: path %d is NULL", i); goto done; }
    if ((st = mlsys_pcr_open_file(paths[i], NULL, &r))) goto done;
    mlsys_pcr_get_info(r, &inf[i]);
    mlsys_pcr_close(r);
    if (!(names[i] = mlsys__pcr_record_name(dir, paths[i]))) { st = mlsys__pcr_nomem(); goto done; }
    names_bytes += strlen(names[i]);
    if (inf[i].n_groups > Kmax) Kmax = inf[i].n_groups;
    nimg += inf[i].n_images;
  }
  if (names_bytes > 0xFFFFFFFFu) { st = mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "record names of %zu bytes", names_bytes); goto done; }
  total = 32 + (size_t)n * (16 + 8 * ((size_t)Kmax + 1)) + names_bytes + 4;
  if (!(b = (uint8_t *)mlsys_calloc(total, 1))) { st = mlsys__pcr_nomem(); goto done; }
  memcpy(b, "MLSYSPCI", 8);
  mlsys__pcr_put16(b + 8, 1);
  mlsys__pcr_put32(b + 12, (uint32_t)n);
  mlsys__pcr_put16(b + 16, (uint16_t)Kmax);
  mlsys__pcr_put32(b + 20, (uint32_t)names_bytes);
  mlsys__pcr_put64(b + 24, nimg);
  o = 32;
  {
    size_t no = 0, nb = 32 + (size_t)n * (16 + 8 * ((size_t)Kmax + 1));
    for (i = 0; i < n; i++) {
      size_t l = strlen(names[i]);
      mlsys__pcr_put32(b + o, (uint32_t)no);
      mlsys__pcr_put32(b + o + 4, (uint32_t)l);
      mlsys__pcr_put32(b + o + 8, inf[i].n_images);
      mlsys__pcr_put32(b + o + 12, (uint32_t)inf[i].n_groups);
      for (k = 0; k <= Kmax; k++) mlsys__pcr_put64(b + o + 16 + 8 * k, inf[i].group_end[k <= inf[i].n_groups ? k : inf[i].n_groups]);
      memcpy(b + nb + no, names[i], l);
      no += l;
      o += 16 + 8 * ((size_t)Kmax + 1);
    }
  }
  mlsys__pcr_put32(b + total - 4, mlsys_crc32c(0, b, total - 4));
  {
    size_t pl = strlen(index_path) + 8;
    char *tmp = (char *)mlsys_alloc(pl, 1);
    if (!tmp) { st = mlsys__pcr_nomem(); goto done; }
    snprintf(tmp, pl, "%s.tmp", index_path);
    if (!(f = fopen(tmp, "wb")) || fwrite(b, 1, total, f) != total || fflush(f) != 0 || fsync(fileno(f)) != 0) {
      st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "writing '%s': %s", tmp, strerror(errno));
      if (f) fclose(f);
      f = NULL;
      remove(tmp);
    } else {
      if (fclose(f) != 0) st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "writing '%s': %s", tmp, strerror(errno));
      f = NULL;
      if (!st && rename(tmp, index_path) != 0) st = mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "cannot rename '%s': %s", tmp, strerror(errno));
      if (st) remove(tmp);
    }
    mlsys_free(tmp);
  }
done:
  if (names) for (i = 0; i < n; i++) mlsys_free(names[i]);
  mlsys_free(names);
  mlsys_free(inf);
  mlsys_free(dir);
  mlsys_free(b);
  return st;
}

MLSYS_DEF void mlsys_pcr_index_close(mlsys_pcr_index *ix) {
  int i;
  if (!ix) return;
  if (ix->path) for (i = 0; i < ix->n; i++) mlsys_free(ix->path[i]);
  mlsys_free(ix->path);
  mlsys_free(ix->nimg);
  mlsys_free(ix->K);
  mlsys_free(ix->R);
  mlsys_free(ix->dir);
  mlsys_free(ix);
}

/* parses an index held in memory (the fuzz target calls it through index_open on a file) */
static mlsys_status mlsys__pcr_index_parse(const uint8_t *b, size_t len, const char *name, mlsys_pcr_index *ix) {
  uint32_t n, nb;
  uint64_t total, nimg = 0, fixed;
  int i, k, Kmax;
  if (len < 36 || memcmp(b, "MLSYSPCI", 8) != 0)
    return mlsys__pcr_fail(len >= 8 && memcmp(b, "MLSYSPCI", 8) ? MLSYS_PCR_P_FORMAT : MLSYS_PCR_P_TRUNCATED, MLSYS_ERR_PARSE,
                           "%s: not a PCR index (no MLSYSPCI magic, or shorter than 36 bytes)", name);
  if (mlsys__pcr_le16(b + 8) != 1) return mlsys__pcr_fail(MLSYS_PCR_P_VERSION, MLSYS_ERR_UNSUPPORTED, "%s: index version %u (reads 1)", name, mlsys__pcr_le16(b + 8));
  n = mlsys__pcr_le32(b + 12);
  Kmax = mlsys__pcr_le16(b + 16);
  nb = mlsys__pcr_le32(b + 20);
  if (n < 1 || n > (1u << 24) || Kmax < 1 || Kmax > MLSYS_PCR_MAX_GROUPS)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %u records with up to %d groups", name, n, Kmax);
  fixed = 32 + (uint64_t)n * (16 + 8 * ((uint64_t)Kmax + 1));
  total = fixed + nb + 4;
  if (total != len)
    return mlsys__pcr_fail(total > len ? MLSYS_PCR_P_TRUNCATED : MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: %zu bytes, its header describes %llu", name, len,
                           (unsigned long long)total);
  if (mlsys_crc32c(0, b, len - 4) != mlsys__pcr_le32(b + len - 4)) return mlsys__pcr_fail(MLSYS_PCR_P_CRC, MLSYS_ERR_PARSE, "%s: CRC-32C mismatch", name);
  ix->n = (int)n;
  ix->Kmax = Kmax;
  if (!(ix->nimg = (uint32_t *)mlsys_calloc(n, sizeof(uint32_t))) || !(ix->K = (int *)mlsys_calloc(n, sizeof(int))) ||
      !(ix->R = (uint64_t *)mlsys_calloc((size_t)n * ((size_t)Kmax + 1), sizeof(uint64_t))) || !(ix->path = (char **)mlsys_calloc(n, sizeof(char *))))
    return mlsys__pcr_nomem();
  for (i = 0; i < (int)n; i++) {
    const uint8_t *e = b + 32 + (size_t)i * (16 + 8 * ((size_t)Kmax + 1));
    uint32_t no = mlsys__pcr_le32(e), nl = mlsys__pcr_le32(e + 4);
    char *p;
    ix->nimg[i] = mlsys__pcr_le32(e + 8);
    ix->K[i] = (int)mlsys__pcr_le32(e + 12);
    if (ix->nimg[i] < 1 || ix->nimg[i] > MLSYS_PCR_MAX_IMAGES || ix->K[i] < 1 || ix->K[i] > Kmax || (uint64_t)no + nl > nb || nl == 0 || nl > 4096)
      return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: record %d: %u images, %d groups, name [%u, +%u) of %u bytes", name, i, ix->nimg[i], ix->K[i],
                             no, nl, nb);
    for (k = 0; k <= Kmax; k++) {
      uint64_t v = mlsys__pcr_le64(e + 16 + 8 * k);
      if ((k && v < ix->R[(size_t)i * (Kmax + 1) + k - 1]) || (k > ix->K[i] && v != ix->R[(size_t)i * (Kmax + 1) + ix->K[i]]))
        return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: record %d: R(%d) = %llu is not a valid prefix size", name, i, k, (unsigned long long)v);
      ix->R[(size_t)i * (Kmax + 1) + k] = v;
    }
    if (memchr(b + fixed + no, 0, nl)) return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: record %d's name holds a NUL byte", name, i);
    if (b[fixed + no] == '/') {
      if (!(p = (char *)mlsys_alloc(nl + 1, 1))) return mlsys__pcr_nomem();
      memcpy(p, b + fixed + no, nl);
      p[nl] = 0;
    } else {
      size_t dl = strlen(ix->dir);
      if (!(p = (char *)mlsys_alloc(dl + nl + 2, 1))) return mlsys__pcr_nomem();
      memcpy(p, ix->dir, dl);
      p[dl] = '/';
      memcpy(p + dl + 1, b + fixed + no, nl);
      p[dl + 1 + nl] = 0;
    }
    ix->path[i] = p;
    nimg += ix->nimg[i];
  }
  ix->total = mlsys__pcr_le64(b + 24);
  if (ix->total != nimg)
    return mlsys__pcr_fail(MLSYS_PCR_P_FORMAT, MLSYS_ERR_PARSE, "%s: the header counts %llu images, the records %llu", name, (unsigned long long)ix->total,
                           (unsigned long long)nimg);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_index_open(const char *path, mlsys_pcr_index **out) {
  mlsys_pcr_index *ix;
  char *data;
  size_t len;
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if (!path || !out) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "index_open with a NULL argument");
  *out = NULL;
  if ((st = mlsys_read_file(path, &data, &len))) { mlsys__pcr_prob = MLSYS_PCR_P_IO; return st; }
  if (!(ix = (mlsys_pcr_index *)mlsys_calloc(1, sizeof *ix)) || !(ix->dir = mlsys__pcr_dirname(path))) {
    mlsys_free(ix);
    mlsys_free(data);
    return mlsys__pcr_nomem();
  }
  st = mlsys__pcr_index_parse((const uint8_t *)data, len, path, ix);
  mlsys_free(data);
  if (st) { mlsys_pcr_index_close(ix); return st; }
  *out = ix;
  return MLSYS_OK;
}
MLSYS_DEF int mlsys_pcr_index_records(const mlsys_pcr_index *ix) { return ix ? ix->n : 0; }
MLSYS_DEF int mlsys_pcr_index_max_groups(const mlsys_pcr_index *ix) { return ix ? ix->Kmax : 0; }
MLSYS_DEF uint64_t mlsys_pcr_index_images(const mlsys_pcr_index *ix) { return ix ? ix->total : 0; }
MLSYS_DEF mlsys_status mlsys_pcr_index_record(const mlsys_pcr_index *ix, int j, const char **path, uint32_t *n_images, int *K, const uint64_t **R) {
  if (!ix || j < 0 || j >= ix->n) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "index record %d (%d records)", j, ix ? ix->n : 0);
  if (path) *path = ix->path[j];
  if (n_images) *n_images = ix->nimg[j];
  if (K) *K = ix->K[j];
  if (R) *R = ix->R + (size_t)j * (ix->Kmax + 1);
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_pcr_index_mean_bytes(const mlsys_pcr_index *ix, double *mean) {
  int i, k;
  if (!ix || !mean) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "index_mean_bytes with a NULL argument");
  for (k = 0; k <= ix->Kmax; k++) {
    double s = 0;
    for (i = 0; i < ix->n; i++) s += (double)ix->R[(size_t)i * (ix->Kmax + 1) + k];
    mean[k] = s / (double)ix->total;
  }
  return MLSYS_OK;
}

/* ---- the stream: records read ahead by threads into a ring of slots; the consumer takes a window of
   buffer_records records, shuffles their images together ([repo] random_buff_mult) and hands them out ---- */
typedef struct {
  mlsys_pcr_reader *r;
  mlsys_status st;
  mlsys_pcr_problem prob;
  char *msg;
  int ready, k;
  uint32_t rec;
} mlsys__pcr_slot;

struct mlsys_pcr_stream {
  char **paths;
  int n;
  mlsys_pcr_stream_desc d;
  mlsys_pcr_throttle *thr;
  int own_thr;
  mlsys_rng rng;
  int *order;
  /* read-ahead (under mu) */
  pthread_mutex_t mu;
  pthread_cond_t cv_ready, cv_space;
  pthread_t *th;
  int nth, started, stop, k_cur;
  int issue, take;          /* positions in order */
  mlsys__pcr_slot *slot;
  int nslot;
  /* the consumer's window */
  mlsys__pcr_slot *win;
  int nwin;
  uint32_t *items;          /* the window slot of each item, in the shuffled order */
  uint32_t *item_img;       /* and its image index */
  uint64_t nitems, pos, itemcap;
  uint8_t *buf;
  size_t cap;
  uint64_t bytes_done;      /* readers closed so far */
  mlsys_status failed;
};

static void *mlsys__pcr_stream_worker(void *arg) {
  mlsys_pcr_stream *s = (mlsys_pcr_stream *)arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    int pos, k;
    mlsys__pcr_slot res;
    mlsys_pcr_reader_desc rd;
    while (!s->stop && s->issue < s->n && s->issue - s->take >= s->nslot) pthread_cond_wait(&s->cv_space, &s->mu);
    if (s->stop || s->issue >= s->n) break;
    pos = s->issue++;
    k = s->k_cur;
    pthread_mutex_unlock(&s->mu);
    memset(&res, 0, sizeof res);
    res.rec = (uint32_t)s->order[pos];
    rd = s->d.io;
    rd.throttle = s->thr;
    rd.load_k = k > 0 ? k : MLSYS_PCR_MAX_GROUPS;   /* open clamps to the record's K: prefix and groups in one read */
    res.st = mlsys_pcr_open_file(s->paths[res.rec], &rd, &res.r);
    if (res.st) {
      res.prob = mlsys_pcr_last_problem();
      res.msg = mlsys_strdup(mlsys_last_error());
      mlsys_pcr_close(res.r);
      res.r = NULL;
    } else {
      res.k = res.r->loaded_k;
    }
    res.ready = 1;
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
      mlsys_pcr_close(res.r);
      mlsys_free(res.msg);
      continue;
    }
    s->slot[pos % s->nslot] = res;
    pthread_cond_broadcast(&s->cv_ready);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static void mlsys__pcr_slot_clear(mlsys__pcr_slot *sl) {
  mlsys_pcr_close(sl->r);
  mlsys_free(sl->msg);
  memset(sl, 0, sizeof *sl);
}

static void mlsys__pcr_stream_stop(mlsys_pcr_stream *s) {
  int i;
  if (s->started) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv_space);
    pthread_mutex_unlock(&s->mu);
    for (i = 0; i < s->nth; i++) pthread_join(s->th[i], NULL);
    s->started = 0;
  }
  for (i = 0; i < s->nslot; i++) mlsys__pcr_slot_clear(&s->slot[i]);
  for (i = 0; i < s->nwin; i++) {
    if (s->win[i].r) s->bytes_done += s->win[i].r->bytes_read;
    mlsys__pcr_slot_clear(&s->win[i]);
  }
  s->nwin = 0;
  s->nitems = s->pos = 0;
}

static mlsys_status mlsys__pcr_stream_start(mlsys_pcr_stream *s, uint64_t seed) {
  int i;
  mlsys_rng_seed(&s->rng, seed);
  for (i = 0; i < s->n; i++) s->order[i] = i;
  if (!s->d.no_shuffle)
    for (i = s->n - 1; i > 0; i--) {
      int j = (int)mlsys_rng_below(&s->rng, (uint64_t)i + 1), t = s->order[i];
      s->order[i] = s->order[j];
      s->order[j] = t;
    }
  s->issue = s->take = 0;
  s->stop = 0;
  s->failed = MLSYS_OK;
  for (i = 0; i < s->nth; i++)
    if (pthread_create(&s->th[i], NULL, mlsys__pcr_stream_worker, s) != 0) {
      s->nth = i;
      s->started = i > 0;
      if (!i) return mlsys__pcr_fail(MLSYS_PCR_P_IO, MLSYS_ERR_IO, "stream: cannot start a read-ahead thread");
      break;
    }
  s->started = 1;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_stream_open(const char *const *paths, int n, const mlsys_pcr_stream_desc *dd, mlsys_pcr_stream **out) {
  mlsys_pcr_stream *s;
  mlsys_status st;
  int i;
  MLSYS__PCR_ENTER();
  if (!paths || n < 1 || !out) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream_open needs at least one record");
  *out = NULL;
  if (!(s = (mlsys_pcr_stream *)mlsys_calloc(1, sizeof *s))) return mlsys__pcr_nomem();
  if (dd) s->d = *dd;
  if (s->d.k < 0 || s->d.k > MLSYS_PCR_MAX_GROUPS || s->d.buffer_records < 0 || s->d.io_threads < 0 || s->d.io_threads > 64) {
    mlsys_free(s);
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream: fidelity %d, buffer of %d records, %d threads", dd->k, dd->buffer_records, dd->io_threads);
  }
  if (!s->d.buffer_records) s->d.buffer_records = 4;
  s->nth = s->d.io_threads ? s->d.io_threads : 1;
  s->n = n;
  s->k_cur = s->d.k;
  s->nslot = s->d.buffer_records + s->nth;   /* one window ahead, plus one record per thread */
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_ready, NULL);
  pthread_cond_init(&s->cv_space, NULL);
  if (!(s->paths = (char **)mlsys_calloc((size_t)n, sizeof(char *))) || !(s->order = (int *)mlsys_alloc((size_t)n, sizeof(int))) ||
      !(s->th = (pthread_t *)mlsys_calloc((size_t)s->nth, sizeof(pthread_t))) ||
      !(s->slot = (mlsys__pcr_slot *)mlsys_calloc((size_t)s->nslot, sizeof *s->slot)) ||
      !(s->win = (mlsys__pcr_slot *)mlsys_calloc((size_t)s->d.buffer_records, sizeof *s->win))) {
    mlsys_pcr_stream_close(s);
    return mlsys__pcr_nomem();
  }
  for (i = 0; i < n; i++)
    if (!paths[i] || !(s->paths[i] = mlsys_strdup(paths[i]))) {
      mlsys_pcr_stream_close(s);
      return paths[i] ? mlsys__pcr_nomem() : mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream: path %d is NULL", i);
    }
  if (s->d.io.throttle) s->thr = s->d.io.throttle;
  else if (s->d.io.throttle_Bps > 0) {
    if ((st = mlsys_pcr_throttle_create(s->d.io.throttle_Bps, 0, &s->thr))) { mlsys_pcr_stream_close(s); return st; }
    s->own_thr = 1;
  }
  s->d.io.throttle_Bps = 0;
  if ((st = mlsys__pcr_stream_start(s, s->d.seed))) { mlsys_pcr_stream_close(s); return st; }
  *out = s;
  return MLSYS_OK;
}

/* takes the next window of records (waiting for the read-ahead) and lays out its shuffled image order */
static mlsys_status mlsys__pcr_stream_window(mlsys_pcr_stream *s) {
  int i;
  uint64_t tot = 0, j;
  for (i = 0; i < s->nwin; i++) {
    if (s->win[i].r) s->bytes_done += s->win[i].r->bytes_read;
    mlsys__pcr_slot_clear(&s->win[i]);
  }
  s->nwin = 0;
  pthread_mutex_lock(&s->mu);
  while (s->nwin < s->d.buffer_records && s->take < s->n) {
    mlsys__pcr_slot *sl = &s->slot[s->take % s->nslot];
    while (!sl->ready) pthread_cond_wait(&s->cv_ready, &s->mu);
    s->win[s->nwin++] = *sl;
    memset(sl, 0, sizeof *sl);
    s->take++;
    pthread_cond_broadcast(&s->cv_space);
  }
  pthread_mutex_unlock(&s->mu);
  for (i = 0; i < s->nwin; i++)
    if (s->win[i].st) {
      mlsys__pcr_prob = s->win[i].prob;
      return mlsys_set_error(s->win[i].st, "%s", s->win[i].msg ? s->win[i].msg : "pcr: stream: a record failed");
    }
  for (i = 0; i < s->nwin; i++) tot += s->win[i].r->N;
  if (tot > s->itemcap) {
    uint32_t *a = (uint32_t *)mlsys_realloc_array(s->items, (size_t)tot, sizeof(uint32_t));
    uint32_t *b;
    if (!a) return mlsys__pcr_nomem();
    s->items = a;
    if (!(b = (uint32_t *)mlsys_realloc_array(s->item_img, (size_t)tot, sizeof(uint32_t)))) return mlsys__pcr_nomem();
    s->item_img = b;
    s->itemcap = tot;
  }
  j = 0;
  for (i = 0; i < s->nwin; i++) {
    uint32_t m;
    for (m = 0; m < s->win[i].r->N; m++) { s->items[j] = (uint32_t)i; s->item_img[j] = m; j++; }
  }
  if (!s->d.no_shuffle)
    for (j = tot; j > 1; j--) {
      uint64_t q = mlsys_rng_below(&s->rng, j);
      uint32_t a = s->items[j - 1], b = s->item_img[j - 1];
      s->items[j - 1] = s->items[q]; s->item_img[j - 1] = s->item_img[q];
      s->items[q] = a; s->item_img[q] = b;
    }
  s->nitems = tot;
  s->pos = 0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_stream_next(mlsys_pcr_stream *s, mlsys_pcr_item *it, int *end) {
  mlsys__pcr_slot *sl;
  mlsys_status st;
  size_t need;
  uint32_t img;
  MLSYS__PCR_ENTER();
  if (!s || !it || !end) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream_next with a NULL argument");
  *end = 0;
  if (s->failed) return mlsys_set_error(s->failed, "%s", "pcr: the stream failed earlier (rewind to start again)");
  while (s->pos >= s->nitems) {
    if (s->take >= s->n) {
      int i;
      for (i = 0; i < s->nwin; i++) {
        if (s->win[i].r) s->bytes_done += s->win[i].r->bytes_read;
        mlsys__pcr_slot_clear(&s->win[i]);
      }
      s->nwin = 0;
      *end = 1;
      return MLSYS_OK;
    }
    if ((st = mlsys__pcr_stream_window(s))) { s->failed = st; return st; }
  }
  sl = &s->win[s->items[s->pos]];
  img = s->item_img[s->pos];
  if ((st = mlsys_pcr_image_jpeg(sl->r, img, sl->k, NULL, 0, &need))) return st;
  if (need > s->cap) {
    uint8_t *b = (uint8_t *)MLSYS_REALLOC(s->buf, need);
    if (!b) return mlsys__pcr_nomem();
    s->buf = b;
    s->cap = need;
  }
  if ((st = mlsys_pcr_image_jpeg(sl->r, img, sl->k, s->buf, s->cap, &need))) return st;
  memset(it, 0, sizeof *it);
  it->jpg = s->buf;
  it->len = need;
  it->label = (int64_t)mlsys__pcr_le64(mlsys__pcr_img(sl->r, img));
  it->record = sl->rec;
  it->index = img;
  it->k = sl->k;
  it->record_images = sl->r->N;
  it->record_bytes = sl->r->bytes_read;
  s->pos++;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_stream_set_k(mlsys_pcr_stream *s, int k) {
  if (!s || k < 0 || k > MLSYS_PCR_MAX_GROUPS) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream_set_k: fidelity %d (0 = all, 1..64)", k);
  pthread_mutex_lock(&s->mu);
  s->k_cur = k;
  pthread_mutex_unlock(&s->mu);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_stream_rewind(mlsys_pcr_stream *s, uint64_t epoch_seed) {
  if (!s) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "stream_rewind with a NULL stream");
  mlsys__pcr_stream_stop(s);
  return mlsys__pcr_stream_start(s, epoch_seed);
}

MLSYS_DEF uint64_t mlsys_pcr_stream_bytes_read(const mlsys_pcr_stream *s) {
  uint64_t b;
  int i;
  if (!s) return 0;
  b = s->bytes_done;
  for (i = 0; i < s->nwin; i++)
    if (s->win[i].r) b += s->win[i].r->bytes_read;
  return b;
}

MLSYS_DEF void mlsys_pcr_stream_close(mlsys_pcr_stream *s) {
  int i;
  if (!s) return;
  if (s->slot && s->win) mlsys__pcr_stream_stop(s);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_ready);
  pthread_cond_destroy(&s->cv_space);
  if (s->paths) for (i = 0; i < s->n; i++) mlsys_free(s->paths[i]);
  mlsys_free(s->paths);
  mlsys_free(s->order);
  mlsys_free(s->th);
  mlsys_free(s->slot);
  mlsys_free(s->win);
  mlsys_free(s->items);
  mlsys_free(s->item_img);
  if (s->buf) MLSYS_FREE(s->buf);
  if (s->own_thr) mlsys_pcr_throttle_destroy(s->thr);
  mlsys_free(s);
}

/* ================================================================================================================
   5. Decoding and fidelity metrics
   ================================================================================================================ */
MLSYS_DEF mlsys_status mlsys_pcr_decode(const uint8_t *jpg, size_t n, const mlsys_pcr_decode_desc *dd, uint8_t **px, int *w, int *h) {
  mlsys_pcr_decode_desc d;
  mlsys_jpeg_info in;
  mlsys_status st;
  int ch, sd, ms;
  int64_t maxp;
  MLSYS__PCR_ENTER();
  if (!jpg || !px || !w || !h) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "decode with a NULL argument");
  *px = NULL; *w = *h = 0;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  ch = d.channels ? d.channels : 3;
  sd = d.scale_denom ? d.scale_denom : 1;
  ms = d.max_scans > 0 ? d.max_scans : MLSYS_PCR_MAX_SCANS;
  maxp = d.max_pixels > 0 ? d.max_pixels : (int64_t)1 << 26;
  if ((ch != 1 && ch != 3) || (sd != 1 && sd != 2 && sd != 4 && sd != 8))
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "decode: %d channels, scale 1/%d (1 or 3 channels; scale 1, 2, 4 or 8)", ch, sd);
  if (d.backend == MLSYS_PCR_DEC_NVJPEG)
    return mlsys__pcr_fail(MLSYS_PCR_P_NOBACKEND, MLSYS_ERR_UNSUPPORTED, "decode: nvJPEG is not in this build (the CUDA toolkit here ships no nvJPEG)");
  if (d.backend != MLSYS_PCR_DEC_STB && d.backend != MLSYS_PCR_DEC_LIBJPEG)
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "decode: unknown backend %d (0 stb_image, 1 libjpeg-turbo)", d.backend);
  if (n < 2 || jpg[0] != 0xFF || jpg[1] != 0xD8) return mlsys__pcr_not_jpeg(jpg, n);
  if (n > 0x7FFFFFFF) return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "decode: a JPEG of %zu bytes", n);
  /* the strict walk first: stb_image trusts table references and has no scan limit (§3.3 step 4, risk 5) */
  if ((st = mlsys_jpeg_check(jpg, n, &in, NULL, ms)))
    return mlsys__pcr_fail(st == MLSYS_ERR_TOO_BIG ? MLSYS_PCR_P_LIMIT : MLSYS_PCR_P_BAD_JPEG, st, "%s", mlsys_last_error());
  if (in.precision != 8) return mlsys__pcr_fail(MLSYS_PCR_P_UNSUPPORTED, MLSYS_ERR_UNSUPPORTED, "decode: %d-bit samples (8 only)", in.precision);
  if ((int64_t)in.width * in.height > maxp)
    return mlsys__pcr_fail(MLSYS_PCR_P_LIMIT, MLSYS_ERR_TOO_BIG, "decode: a %d x %d image is over the %lld-pixel limit", in.width, in.height, (long long)maxp);
  if (d.backend == MLSYS_PCR_DEC_LIBJPEG) return mlsys__pcr_ljdecode(jpg, n, ch, sd, maxp, 0, px, w, h);
  if (sd != 1) return mlsys__pcr_fail(MLSYS_PCR_P_NOBACKEND, MLSYS_ERR_UNSUPPORTED, "decode: stb_image has no DCT scaling (use the libjpeg backend)");
  {
    int comp;
    uint8_t *p = stbi_load_from_memory(jpg, (int)n, w, h, &comp, ch);
    if (!p) return mlsys__pcr_fail(MLSYS_PCR_P_DECODE, MLSYS_ERR_PARSE, "stb_image: %s", stbi_failure_reason());
    *px = p;   /* allocated through the mlsys hooks: mlsys_pcr_free releases it */
  }
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_pcr_psnr(const uint8_t *a, const uint8_t *b, size_t n) {
  double se = 0;
  size_t i;
  if (!a || !b || !n) return 0;
  for (i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    se += d * d;
  }
  if (se == 0) return INFINITY;
  return 10.0 * log10(255.0 * 255.0 / (se / (double)n));
}

#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__PCR_RESTRICT __restrict
#else
#define MLSYS__PCR_RESTRICT
#endif
/* dst[j] += g·(a[j] + b[j]) and dst[j] = g·a[j] for j < n: the inner loops of the filter. With GCC or Clang two
   lanes at a time through vector extensions (SSE2 on x86-64; -O2 does not vectorise these loops by itself): the same
   operations per element in the same order, so the results are bit-identical to the scalar loop. */
#if defined(__GNUC__) || defined(__clang__)
typedef double mlsys__pcr_v2 __attribute__((vector_size(16)));
#endif
static void mlsys__pcr_axpy2(double *MLSYS__PCR_RESTRICT dst, const double *a, const double *b, double g, int n) {
  int j = 0;
#if defined(__GNUC__) || defined(__clang__)
  mlsys__pcr_v2 gv = {g, g};
  for (; j + 2 <= n; j += 2) {
    mlsys__pcr_v2 x, y, d;
    memcpy(&x, a + j, 16); memcpy(&y, b + j, 16); memcpy(&d, dst + j, 16);
    d += gv * (x + y);
    memcpy(dst + j, &d, 16);
  }
#endif
  for (; j < n; j++) dst[j] += g * (a[j] + b[j]);
}
static void mlsys__pcr_scale(double *MLSYS__PCR_RESTRICT dst, const double *a, double g, int n) {
  int j = 0;
#if defined(__GNUC__) || defined(__clang__)
  mlsys__pcr_v2 gv = {g, g};
  for (; j + 2 <= n; j += 2) {
    mlsys__pcr_v2 x;
    memcpy(&x, a + j, 16);
    x = gv * x;
    memcpy(dst + j, &x, 16);
  }
#endif
  for (; j < n; j++) dst[j] = g * a[j];
}

/* 'valid' filtering of one h × w plane with the separable s-tap window g (rows, then columns). The window is
   symmetric (g[t] = g[s−1−t]), so taps are taken in pairs (half the multiplications), and the inner loops run along
   rows; row: h × (w − s + 1) scratch, out: (h − s + 1) × (w − s + 1). */
static void mlsys__pcr_filter(const double *MLSYS__PCR_RESTRICT in, int w, int h, const double *g, int s, double *MLSYS__PCR_RESTRICT row,
                              double *MLSYS__PCR_RESTRICT out) {
  int wv = w - s + 1, hv = h - s + 1, half = s / 2, i, t;
  for (i = 0; i < h; i++) {
    const double *src = in + (size_t)i * w;
    double *dst = row + (size_t)i * wv;
    if (s & 1) mlsys__pcr_scale(dst, src + half, g[half], wv);
    else memset(dst, 0, sizeof(double) * (size_t)wv);
    for (t = 0; t < half; t++) mlsys__pcr_axpy2(dst, src + t, src + s - 1 - t, g[t], wv);
  }
  for (i = 0; i < hv; i++) {
    double *dst = out + (size_t)i * wv;
    if (s & 1) mlsys__pcr_scale(dst, row + (size_t)(i + half) * wv, g[half], wv);
    else memset(dst, 0, sizeof(double) * (size_t)wv);
    for (t = 0; t < half; t++) mlsys__pcr_axpy2(dst, row + (size_t)(i + t) * wv, row + (size_t)(i + s - 1 - t) * wv, g[t], wv);
  }
}

/* One level of §3.6 on planes x, y (c planes of h × w doubles): the level's SSIM and cs (means over pixels and
   channels) with the s-tap Gaussian, s = min(11, h, w), σ = 1.5·s/11 (separable: the normalised 2-D window is the
   product of two normalised 1-D ones). tmp: room for 3·h·w + h·w + 5·h·w doubles. */
static void mlsys__pcr_ssim_level(const double *x, const double *y, int w, int h, int c, double *tmp, double *ssim, double *cs) {
  int s = w < h ? w : h, r, t, ch;
  size_t np = (size_t)w * h, nv, q;
  double g[11], sum = 0, sigma, ssum = 0, csum = 0;
  const double C1 = (0.01 * 255) * (0.01 * 255), C2 = (0.03 * 255) * (0.03 * 255);
  double *xx = tmp, *yy = xx + np, *xy = yy + np, *row = xy + np, *mx = row + np, *my, *sxx, *syy, *sxy;
  if (s > 11) s = 11;
  sigma = 1.5 * s / 11.0;
  r = s / 2;
  for (t = 0; t < s; t++) {
    double u = -r + t + (s % 2 == 0 ? 0.5 : 0.0);   /* even windows are centred between samples (_FSpecialGauss) */
    g[t] = exp(-(u * u) / (2.0 * sigma * sigma));
    sum += g[t];
  }
  for (t = 0; t < s; t++) g[t] /= sum;
  nv = (size_t)(w - s + 1) * (size_t)(h - s + 1);
  my = mx + nv; sxx = my + nv; syy = sxx + nv; sxy = syy + nv;
  for (ch = 0; ch < c; ch++) {
    const double *X = x + (size_t)ch * np, *Y = y + (size_t)ch * np;
    for (q = 0; q < np; q++) { xx[q] = X[q] * X[q]; yy[q] = Y[q] * Y[q]; xy[q] = X[q] * Y[q]; }
    mlsys__pcr_filter(X, w, h, g, s, row, mx);
    mlsys__pcr_filter(Y, w, h, g, s, row, my);
    mlsys__pcr_filter(xx, w, h, g, s, row, sxx);
    mlsys__pcr_filter(yy, w, h, g, s, row, syy);
    mlsys__pcr_filter(xy, w, h, g, s, row, sxy);
    for (q = 0; q < nv; q++) {
      double mxx = mx[q] * mx[q], myy = my[q] * my[q], mxy = mx[q] * my[q];
      double v1 = 2.0 * (sxy[q] - mxy) + C2, v2 = (sxx[q] - mxx) + (syy[q] - myy) + C2;
      ssum += ((2.0 * mxy + C1) * v1) / ((mxx + myy + C1) * v2);
      csum += v1 / v2;
    }
  }
  *ssim = ssum / ((double)nv * c);
  *cs = csum / ((double)nv * c);
}

MLSYS_DEF mlsys_status mlsys_pcr_msssim(const uint8_t *ref, const uint8_t *img, int w, int h, int c, double *msssim, double *ssim1) {
  static const double wt[5] = {0.0448, 0.2856, 0.3001, 0.2363, 0.1333};
  double *x, *y, *tmp, cs[5], ss[5], out = 1;
  size_t np;
  int l, i, j, ch;
  MLSYS__PCR_ENTER();
  if (!ref || !img || !msssim || w < 1 || h < 1 || c < 1 || c > 4 || (int64_t)w * h > ((int64_t)1 << 28))
    return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "msssim of a %d x %d x %d image", w, h, c);
  np = (size_t)w * h;
  x = (double *)mlsys_alloc(np * c, sizeof(double));
  y = (double *)mlsys_alloc(np * c, sizeof(double));
  tmp = (double *)mlsys_alloc(np * 9, sizeof(double));
  if (!x || !y || !tmp) { mlsys_free(x); mlsys_free(y); mlsys_free(tmp); return mlsys__pcr_nomem(); }
  for (ch = 0; ch < c; ch++)
    for (i = 0; i < (int)np; i++) {
      x[(size_t)ch * np + i] = ref[(size_t)i * c + ch];
      y[(size_t)ch * np + i] = img[(size_t)i * c + ch];
    }
  for (l = 0; l < 5; l++) {
    int w2 = (w + 1) / 2, h2 = (h + 1) / 2;
    mlsys__pcr_ssim_level(x, y, w, h, c, tmp, &ss[l], &cs[l]);
    if (l == 4) break;
    /* 2×2 box with the last row/column repeated (scipy convolve, mode reflect), then every second sample */
    for (ch = 0; ch < c; ch++) {
      double *X = x + (size_t)ch * w * h, *Y = y + (size_t)ch * w * h, *X2 = x + (size_t)ch * w2 * h2, *Y2 = y + (size_t)ch * w2 * h2;
      for (i = 0; i < h2; i++)
        for (j = 0; j < w2; j++) {
          int i0 = 2 * i, i1 = 2 * i + 1 < h ? 2 * i + 1 : h - 1, j0 = 2 * j, j1 = 2 * j + 1 < w ? 2 * j + 1 : w - 1;
          double a = (X[(size_t)i0 * w + j0] + X[(size_t)i0 * w + j1] + X[(size_t)i1 * w + j0] + X[(size_t)i1 * w + j1]) / 4.0;
          double b = (Y[(size_t)i0 * w + j0] + Y[(size_t)i0 * w + j1] + Y[(size_t)i1 * w + j0] + Y[(size_t)i1 * w + j1]) / 4.0;
          /* in place is safe: (i, j) never lies after (2i, 2j) in the plane, and planes shrink in order */
          X2[(size_t)i * w2 + j] = a;
          Y2[(size_t)i * w2 + j] = b;
        }
    }
    w = w2;
    h = h2;
  }
  for (l = 0; l < 4; l++) out *= pow(cs[l] > 0 ? cs[l] : 0.0, wt[l]);
  out *= pow(ss[4] > 0 ? ss[4] : 0.0, wt[4]);
  *msssim = out;
  if (ssim1) *ssim1 = ss[0];
  mlsys_free(x);
  mlsys_free(y);
  mlsys_free(tmp);
  return MLSYS_OK;
}

/* ================================================================================================================
   6. I/O model (§3.4) and fidelity selection (§3.7)
   ================================================================================================================ */
MLSYS_DEF mlsys_status mlsys_pcr_mean_bytes(mlsys_pcr_reader *const *recs, int nrec, double *mean) {
  int i, k, Kmax = 0;
  double nimg = 0;
  MLSYS__PCR_ENTER();
  if (!recs || nrec < 1 || !mean) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "mean_bytes needs at least one reader");
  for (i = 0; i < nrec; i++) {
    if (!recs[i]) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "mean_bytes: reader %d is NULL", i);
    if (recs[i]->K > Kmax) Kmax = recs[i]->K;
    nimg += recs[i]->N;
  }
  for (k = 0; k <= Kmax; k++) {
    double s = 0;
    for (i = 0; i < nrec; i++) s += (double)mlsys__pcr_R(recs[i], k < recs[i]->K ? k : recs[i]->K);
    mean[k] = s / nimg;   /* Theorem 4.4.1's E[s_k], record overhead included */
  }
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_pcr_max_speedup(const double *mean, int k_from, int k_to) {
  if (!mean || !(mean[k_to] > 0)) return 0;
  return mean[k_from] / mean[k_to];
}

MLSYS_DEF double mlsys_pcr_predict_rate(const mlsys_pcr_sys *s, const double *mean, int k) {
  double x = INFINITY;
  if (!s || !mean) return 0;
  if (s->accel_img_s > 0 && s->accel_img_s < x) x = s->accel_img_s;
  if (s->bandwidth_Bps > 0 && mean[k] > 0 && s->bandwidth_Bps / mean[k] < x) x = s->bandwidth_Bps / mean[k];
  if (s->dec_img_s_core && s->dec_img_s_core[k] > 0) {
    double d = (s->cores > 0 ? s->cores : 1) * s->dec_img_s_core[k];
    if (d < x) x = d;
  }
  return x;
}

MLSYS_DEF int mlsys_pcr_select_k_io(const mlsys_pcr_sys *s, const double *mean, int K, int k_floor) {
  int k;
  if (k_floor < 1) k_floor = 1;
  if (k_floor > K) k_floor = K;
  if (!s || !mean) return k_floor;
  for (k = K; k >= k_floor; k--) {
    double io = s->bandwidth_Bps > 0 && mean[k] > 0 ? s->bandwidth_Bps / mean[k] : INFINITY, other = INFINITY;
    if (s->accel_img_s > 0) other = s->accel_img_s;
    if (s->dec_img_s_core && s->dec_img_s_core[k] > 0) {
      double d = (s->cores > 0 ? s->cores : 1) * s->dec_img_s_core[k];
      if (d < other) other = d;
    }
    if (io >= other) return k;   /* the highest fidelity that storage keeps up with */
  }
  return k_floor;
}

MLSYS_DEF int mlsys_pcr_select_k_msssim(const double *mean_msssim, int K, double tau) {
  int k;
  if (!(tau > 0)) tau = 0.95;
  if (!mean_msssim) return K;
  for (k = 1; k <= K; k++)
    if (mean_msssim[k] >= tau) return k;
  return K;
}

MLSYS_DEF int mlsys_pcr_autotune_due(const mlsys_pcr_autotune_desc *d, int epoch, int last) {
  int start = 5, every = 20;
  if (d) {
    if (d->start_epoch > 0) start = d->start_epoch;
    else if (d->start_epoch < 0) start = 0;
    if (d->every > 0) every = d->every;
  }
  if (epoch < start) return 0;   /* the model is still unstable (§4.4.3: epochs 0–4 at full fidelity) */
  if (last < 0) return 1;
  return epoch - last >= every;
}

MLSYS_DEF int mlsys_pcr_select_k_scores(const double *score, int K, const int *cand, int ncand, double threshold) {
  int best = K, i;
  if (!score) return K;
  for (i = 0; i < ncand; i++) {
    int k = cand[i];
    if (k >= 1 && k <= K && score[k] > threshold && k < best) best = k;   /* strict >, as [repo] */
  }
  return best;
}

/* the candidate set: given, or {1, 2, 5, K}; within 1..K, sorted, unique */
static int mlsys__pcr_candidates(const mlsys_pcr_autotune_desc *d, int K, int *out) {
  int tmp[MLSYS_PCR_MAX_GROUPS + 4], n = 0, i, j, m = 0;
  if (d && d->candidates && d->ncand > 0) {
    for (i = 0; i < d->ncand && n < MLSYS_PCR_MAX_GROUPS; i++) tmp[n++] = d->candidates[i];
  } else {
    tmp[n++] = 1; tmp[n++] = 2; tmp[n++] = 5; tmp[n++] = K;
  }
  for (i = 0; i < n; i++) {
    int v = tmp[i], dup = 0;
    if (v < 1 || v > K) continue;
    for (j = 0; j < m; j++) dup |= out[j] == v;
    if (!dup) out[m++] = v;
  }
  for (i = 1; i < m; i++)
    for (j = i; j > 0 && out[j - 1] > out[j]; j--) { int t = out[j]; out[j] = out[j - 1]; out[j - 1] = t; }
  return m;
}

/* image q of the readers taken in order: its reader and index */
static int mlsys__pcr_nth(mlsys_pcr_reader *const *recs, int nrec, uint64_t q, uint32_t *idx) {
  int i;
  for (i = 0; i < nrec; i++) {
    if (q < recs[i]->N) { *idx = (uint32_t)q; return i; }
    q -= recs[i]->N;
  }
  return -1;
}

static mlsys_status mlsys__pcr_decode_at(mlsys_pcr_reader *r, uint32_t i, int k, const mlsys_pcr_decode_desc *d, uint8_t **px, int *w, int *h) {
  uint8_t *jpg;
  size_t len;
  mlsys_status st;
  if ((st = mlsys_pcr_load(r, r->K))) return st;   /* free once loaded */
  if ((st = mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &len))) return st;
  if (!(jpg = (uint8_t *)mlsys_alloc(len, 1))) return mlsys__pcr_nomem();
  if (!(st = mlsys_pcr_image_jpeg(r, i, k, jpg, len, &len))) st = mlsys_pcr_decode(jpg, len, d, px, w, h);
  if (st) mlsys_prefix_error("%s: image %u at fidelity %d", r->name, i, k);
  mlsys_free(jpg);
  return st;
}

/* the records' common K (they must share it) and their images; records are loaded only when an image is used */
static mlsys_status mlsys__pcr_common_K(mlsys_pcr_reader *const *recs, int nrec, int *K, uint64_t *total) {
  int i;
  *total = 0;
  if (!recs || nrec < 1) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "no records");
  for (i = 0; i < nrec; i++) {
    if (!recs[i]) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "reader %d is NULL", i);
    if (recs[i]->K != recs[0]->K)
      return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "%s has %d scan groups and %s %d: fidelities are not comparable", recs[0]->name,
                             recs[0]->K, recs[i]->name, recs[i]->K);
    *total += recs[i]->N;
  }
  *K = recs[0]->K;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pcr_grad_similarity(mlsys_pcr_reader *const *recs, int nrec, const mlsys_pcr_autotune_desc *d, mlsys_pcr_grad_fn fn,
                                                 void *ctx, size_t dim, double *score, int *k_sel) {
  int K, cand[MLSYS_PCR_MAX_GROUPS], nc, ci, b, k;
  uint64_t total, nimg, q0;
  int batch = d && d->batch > 0 ? d->batch : 256;
  double thr = d && d->threshold_set ? d->threshold : 0.8;
  double *acc = NULL, *accK = NULL;
  float *g = NULL;
  uint8_t **px = NULL;
  int *w = NULL, *h = NULL;
  int64_t *lab = NULL;
  mlsys_pcr_decode_desc dec;
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if (!fn || !dim || !score || !k_sel) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "grad_similarity needs a gradient function, dim > 0, score and k_sel");
  if ((st = mlsys__pcr_common_K(recs, nrec, &K, &total))) return st;
  memset(&dec, 0, sizeof dec);
  if (d) dec = d->decode;
  nimg = d && d->n_images > 0 ? (uint64_t)d->n_images : 2560;
  if (nimg > total) nimg = total;
  nc = mlsys__pcr_candidates(d, K, cand);
  for (k = 0; k <= K; k++) score[k] = 0;
  acc = (double *)mlsys_calloc((size_t)(K + 1) * dim, sizeof(double));
  g = (float *)mlsys_alloc(dim, sizeof(float));
  px = (uint8_t **)mlsys_calloc((size_t)batch, sizeof(uint8_t *));
  w = (int *)mlsys_calloc((size_t)batch, sizeof(int));
  h = (int *)mlsys_calloc((size_t)batch, sizeof(int));
  lab = (int64_t *)mlsys_calloc((size_t)batch, sizeof(int64_t));
  if (!acc || !g || !px || !w || !h || !lab) { st = mlsys__pcr_nomem(); goto done; }
  accK = acc + (size_t)K * dim;
  /* g_k = Σ over batches of ∇L on the same images at fidelity k (§3.7(b)); the reference k = K first */
  for (q0 = 0; q0 < nimg; q0 += (uint64_t)batch) {
    int nb = nimg - q0 < (uint64_t)batch ? (int)(nimg - q0) : batch;
    for (ci = -1; ci < nc; ci++) {
      int kk = ci < 0 ? K : cand[ci];
      double *a = acc + (size_t)kk * dim;
      size_t j;
      int rc;
      if (ci >= 0 && kk == K) continue;
      for (b = 0; b < nb; b++) {
        uint32_t idx = 0;
        int ri = mlsys__pcr_nth(recs, nrec, q0 + (uint64_t)b, &idx);
        lab[b] = (int64_t)mlsys__pcr_le64(mlsys__pcr_img(recs[ri], idx));
        if ((st = mlsys__pcr_decode_at(recs[ri], idx, kk, &dec, &px[b], &w[b], &h[b]))) goto done;
      }
      memset(g, 0, dim * sizeof(float));
      rc = fn(ctx, (const uint8_t *const *)px, w, h, dec.channels ? dec.channels : 3, lab, nb, g, dim);
      for (b = 0; b < nb; b++) { mlsys_free(px[b]); px[b] = NULL; }
      if (rc) {
        st = mlsys_last_status() ? mlsys_last_status() : MLSYS_ERR_CANCELED;
        mlsys_prefix_error("pcr: grad_similarity: the gradient function failed (%d) at fidelity %d", rc, kk);
        goto done;
      }
      for (j = 0; j < dim; j++) a[j] += (double)g[j];
    }
  }
  {
    double nK = 0;
    size_t j;
    for (j = 0; j < dim; j++) nK += accK[j] * accK[j];
    if (!(nK > 0)) { st = mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "grad_similarity: the gradient at full fidelity is zero"); goto done; }
    for (ci = 0; ci < nc; ci++) {
      int kk = cand[ci];
      double dot = 0, n2 = 0;
      const double *a = acc + (size_t)kk * dim;
      if (kk == K) continue;
      for (j = 0; j < dim; j++) { dot += accK[j] * a[j]; n2 += a[j] * a[j]; }
      score[kk] = n2 > 0 ? dot / sqrt(nK * n2) : 0;
      if (score[kk] > 1) score[kk] = 1;
      if (score[kk] < -1) score[kk] = -1;
    }
    score[K] = 1.0;   /* identical pixels: exactly 1 */
  }
  *k_sel = mlsys_pcr_select_k_scores(score, K, cand, nc, thr);
  st = MLSYS_OK;
done:
  if (px) for (b = 0; b < batch; b++) mlsys_free(px[b]);
  mlsys_free(px); mlsys_free(w); mlsys_free(h); mlsys_free(lab);
  mlsys_free(acc); mlsys_free(g);
  return st;
}

MLSYS_DEF mlsys_status mlsys_pcr_msssim_profile(mlsys_pcr_reader *const *recs, int nrec, int n_images, const mlsys_pcr_decode_desc *d,
                                                double *mean) {
  return mlsys_pcr_msssim_profile_progress(recs, nrec, n_images, d, mean, NULL, NULL);
}

MLSYS_DEF mlsys_status mlsys_pcr_msssim_profile_progress(mlsys_pcr_reader *const *recs, int nrec, int n_images, const mlsys_pcr_decode_desc *d,
                                                         double *mean, mlsys_pcr_progress_fn fn, void *user) {
  int K, k;
  uint64_t total, nimg, q;
  mlsys_pcr_decode_desc dec;
  mlsys_status st;
  MLSYS__PCR_ENTER();
  if (!mean) return mlsys__pcr_fail(MLSYS_PCR_P_RANGE, MLSYS_ERR_ARG, "msssim_profile with a NULL output");
  if ((st = mlsys__pcr_common_K(recs, nrec, &K, &total))) return st;
  memset(&dec, 0, sizeof dec);
  if (d) dec = *d;
  nimg = n_images > 0 && (uint64_t)n_images < total ? (uint64_t)n_images : total;
  for (k = 0; k <= K; k++) mean[k] = 0;
  for (q = 0; q < nimg; q++) {
    uint32_t idx = 0;
    int ri = mlsys__pcr_nth(recs, nrec, q, &idx), w0, h0, c = dec.channels ? dec.channels : 3;
    uint8_t *ref;
    if ((st = mlsys__pcr_decode_at(recs[ri], idx, K, &dec, &ref, &w0, &h0))) return st;
    for (k = 1; k <= K; k++) {
      uint8_t *px;
      int w, h;
      double m;
      if (k == K) { mean[k] += 1.0; continue; }
      if ((st = mlsys__pcr_decode_at(recs[ri], idx, k, &dec, &px, &w, &h))) { mlsys_free(ref); return st; }
      st = w == w0 && h == h0 ? mlsys_pcr_msssim(ref, px, w, h, c, &m, NULL)
                              : mlsys__pcr_fail(MLSYS_PCR_P_DECODE, MLSYS_ERR_PARSE, "image %u decodes to %d x %d at fidelity %d and %d x %d at %d", idx, w, h, k, w0, h0, K);
      mlsys_free(px);
      if (st) { mlsys_free(ref); return st; }
      mean[k] += m;
    }
    mlsys_free(ref);
    if (fn && fn(user, q + 1, nimg))
      return mlsys__pcr_fail(MLSYS_PCR_P_NONE, MLSYS_ERR_CANCELED, "msssim_profile: stopped by the progress callback after %llu of %llu images",
                             (unsigned long long)(q + 1), (unsigned long long)nimg);
  }
  for (k = 1; k <= K; k++) mean[k] /= (double)nimg;
  return MLSYS_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PCR_IMPLEMENTATION_DONE */
#endif /* MLSYS_PCR_IMPLEMENTATION */

/* ================================================================================================================
   7. The mlsys_pipeline.h source (compiled when mlsys_pipeline.h was included before this implementation)
   ================================================================================================================ */
#if defined(MLSYS_PCR_IMPLEMENTATION) && defined(MLSYS_PIPELINE_H) && !defined(MLSYS_PCR_PIPE_IMPLEMENTATION_DONE)
#define MLSYS_PCR_PIPE_IMPLEMENTATION_DONE
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
  mlsys_pcr_pipe_desc d;
  char **paths;
  int n;
} mlsys__pcr_psrc;
typedef struct {
  mlsys_pcr_stream *s;
  uint64_t last_bytes;
  uint64_t images_in_rec;   /* images out since the last record was counted done (records leave whole windows) */
} mlsys__pcr_pstate;

static void mlsys__pcr_psrc_free(void *user) {
  mlsys__pcr_psrc *u = (mlsys__pcr_psrc *)user;
  int i;
  if (!u) return;
  for (i = 0; i < u->n; i++) mlsys_free(u->paths[i]);
  mlsys_free(u->paths);
  mlsys_free(u);
}
static int mlsys__pcr_popen(void *user, uint64_t epoch, void **state) {
  mlsys__pcr_psrc *u = (mlsys__pcr_psrc *)user;
  mlsys__pcr_pstate *ps = (mlsys__pcr_pstate *)mlsys_calloc(1, sizeof *ps);
  mlsys_pcr_stream_desc sd = u->d.stream;
  mlsys_status st;
  if (!ps) return MLSYS_ERR_NOMEM;
  sd.seed = u->d.stream.seed + epoch * 0x9E3779B97F4A7C15ull;   /* each pass reshuffles */
  if ((st = mlsys_pcr_stream_open((const char *const *)u->paths, u->n, &sd, &ps->s))) { mlsys_free(ps); return (int)st; }
  *state = ps;
  return 0;
}
static int mlsys__pcr_pnext(void *user, void *state, mlsys_pipe_elem *out, int *end, mlsys_pipe_gen_io *io) {
  mlsys__pcr_psrc *u = (mlsys__pcr_psrc *)user;
  mlsys__pcr_pstate *ps = (mlsys__pcr_pstate *)state;
  mlsys_pcr_item it;
  mlsys_status st;
  uint64_t b;
  int64_t *lab;
  if ((st = mlsys_pcr_stream_next(ps->s, &it, end))) return (int)st;
  b = mlsys_pcr_stream_bytes_read(ps->s);
  io->disk_bytes = (double)(b > ps->last_bytes ? b - ps->last_bytes : 0);
  ps->last_bytes = b;
  if (*end) return 0;
  if (u->d.decode) {
    uint8_t *px, *dst;
    int w, h, c = u->d.dec.channels ? u->d.dec.channels : 3;
    if ((st = mlsys_pcr_decode(it.jpg, it.len, &u->d.dec, &px, &w, &h))) return (int)st;
    if (!(dst = (uint8_t *)mlsys_pipe_tensor_alloc(out, 0, (size_t)w * h * c, MLSYS_PIPE_U8))) { mlsys_free(px); return MLSYS_ERR_NOMEM; }
    memcpy(dst, px, (size_t)w * h * c);
    mlsys_free(px);
    out->comp[0].ndim = 3;
    out->comp[0].shape[0] = h; out->comp[0].shape[1] = w; out->comp[0].shape[2] = c;
  } else {
    uint8_t *dst = (uint8_t *)mlsys_pipe_tensor_alloc(out, 0, it.len, MLSYS_PIPE_U8);
    if (!dst) return MLSYS_ERR_NOMEM;
    memcpy(dst, it.jpg, it.len);
  }
  if (!(lab = (int64_t *)mlsys_pipe_tensor_alloc(out, 1, sizeof(int64_t), MLSYS_PIPE_I64))) return MLSYS_ERR_NOMEM;
  *lab = it.label;
  out->comp[1].ndim = 0;
  out->comp[1].shape[0] = 0;
  if (++ps->images_in_rec >= it.record_images) {   /* approximate when records differ in size */
    io->units_done = 1;
    io->units_bytes = (double)it.record_bytes;
    ps->images_in_rec = 0;
  }
  return 0;
}
static void mlsys__pcr_pclose(void *user, void *state) {
  mlsys__pcr_pstate *ps = (mlsys__pcr_pstate *)state;
  (void)user;
  if (!ps) return;
  mlsys_pcr_stream_close(ps->s);
  mlsys_free(ps);
}

MLSYS_DEF mlsys_status mlsys_pcr_pipe_source(mlsys_pipe *p, const char *const *paths, int n, const mlsys_pcr_pipe_desc *d, int *out) {
  mlsys__pcr_psrc *u;
  mlsys_pipe_generator_desc g;
  mlsys_status st;
  int i;
  if (!p || !paths || n < 1 || !out) return mlsys_set_error(MLSYS_ERR_ARG, "pcr: pipe_source needs a pipe and at least one record");
  if (!(u = (mlsys__pcr_psrc *)mlsys_calloc(1, sizeof *u)) || !(u->paths = (char **)mlsys_calloc((size_t)n, sizeof(char *)))) {
    mlsys_free(u);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "pcr: out of memory");
  }
  if (d) u->d = *d;
  u->d.stream.io.throttle = d ? d->stream.io.throttle : NULL;
  u->n = n;
  for (i = 0; i < n; i++)
    if (!paths[i] || !(u->paths[i] = mlsys_strdup(paths[i]))) {
      mlsys__pcr_psrc_free(u);
      return mlsys_set_error(MLSYS_ERR_ARG, "pcr: pipe_source: path %d is NULL or out of memory", i);
    }
  memset(&g, 0, sizeof g);
  g.open = mlsys__pcr_popen;
  g.next = mlsys__pcr_pnext;
  g.close = mlsys__pcr_pclose;
  g.destroy = mlsys__pcr_psrc_free;
  g.user = u;
  g.disk = 1;
  g.units_total = n;
  g.name = d && d->name ? d->name : "pcr";
  if ((st = mlsys_pipe_generator(p, &g, out))) mlsys__pcr_psrc_free(u);
  return st;
}

MLSYS_DEF mlsys_status mlsys_pcr_jpeg_pipeline(mlsys_pipe *p, const char *const *paths, int n, const mlsys_pcr_pipe_desc *d,
                                               const mlsys_pipe_jpeg_desc *jd, mlsys_pipe_jpeg_nodes *nodes) {
  mlsys_pcr_pipe_desc dd;
  int src;
  mlsys_status st;
  memset(&dd, 0, sizeof dd);
  if (d) dd = *d;
  dd.decode = 0;   /* the pipeline's decode operator decodes (in parallel, traced) */
  if ((st = mlsys_pcr_pipe_source(p, paths, n, &dd, &src))) return st;
  return mlsys_pipe_jpeg_pipeline_from(p, src, jd, nodes);
}
#ifdef __cplusplus
}
#endif
#endif
