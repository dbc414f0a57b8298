/* examples/pcr_basics.c — a first program with mlsys_pcr.h (Progressive Compressed Records).

   Packs the 59 photographs of Debian's opencv-doc examples/data into one record, then reads it back at 1, 2, 5 and
   10 scans. A record stores scan g of every image together (scan group g), so fidelity k costs one read of the
   first R(k) bytes of the file: the bytes read grow with k, and so does the picture's quality (MS-SSIM against the
   full-fidelity image). Build: make build/examples/pcr_basics; run: build/examples/pcr_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"   /* only for mlsys_pipe_list_images: every .jpg below a directory, sorted */
#include "mlsys_pcr.h"

#include <stdio.h>
#include <unistd.h>

#define PHOTOS "/usr/share/doc/opencv-doc/examples/data"

/* mlsys calls return a status; the message in mlsys_last_error() names what went wrong */
#define TRY(call)                                                              \
  do {                                                                         \
    if ((call) != MLSYS_OK) {                                                  \
      fprintf(stderr, "pcr_basics: %s: %s\n", #call, mlsys_last_error());     \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  char **paths, path[64];
  int64_t n, i;
  mlsys_pcr_writer *w;
  mlsys_pcr_reader *r, *ref;
  mlsys_pcr_info info;
  mlsys_pcr_decode_desc dd = {0};   /* zero = defaults: stb_image, RGB */
  uint8_t *jpg, *ref_px;
  size_t len;
  int rw, rh, j;
  static const int ks[4] = {1, 2, 5, 10};

  if (access(PHOTOS, R_OK) != 0) {
    fprintf(stderr, "pcr_basics: %s is missing (Debian package opencv-doc); nothing to do\n", PHOTOS);
    return 0;
  }
  /* 1. Write: each JPEG is transcoded losslessly to a 10-scan progressive JPEG and its scans are spread over the
        record's 10 scan groups. The writer keeps the images in memory until finish_file writes the record. */
  TRY(mlsys_pipe_list_images(PHOTOS, &paths, &n));
  TRY(mlsys_pcr_writer_create(NULL, &w));   /* NULL desc: K = 10 groups, libjpeg's simple progression */
  for (i = 0; i < n; i++) {
    char *data;
    size_t size;
    TRY(mlsys_read_file(paths[i], &data, &size));
    if (mlsys_pcr_writer_add_jpeg(w, (const uint8_t *)data, size, 0 /* label */, NULL, 0) != MLSYS_OK)
      printf("skipped %s: %s\n", paths[i], mlsys_last_error());   /* e.g. a PNG named .jpg: the writer says so */
    mlsys_free(data);
  }
  mlsys_pipe_paths_free(paths, n);
  snprintf(path, sizeof path, "/tmp/pcr_basics-%ld.pcr", (long)getpid());
  TRY(mlsys_pcr_writer_finish_file(w, path));   /* path.tmp, fsync, rename: never a half-written record */
  mlsys_pcr_writer_destroy(w);

  /* 2. Open: reads only the prefix (header, group directory, image table, JPEG headers). */
  TRY(mlsys_pcr_open_file(path, NULL, &r));
  TRY(mlsys_pcr_get_info(r, &info));
  printf("%s: %u images, K = %d scan groups, %llu bytes (prefix %llu)\n", path, info.n_images, info.n_groups,
         (unsigned long long)info.file_bytes, (unsigned long long)info.prefix_bytes);

  /* 3. The reference: image 0 at full fidelity through a second reader. read_one fetches just that image's parts
        with small reads (random access), so the first reader's byte count stays what fidelity k costs. */
  TRY(mlsys_pcr_open_file(path, NULL, &ref));
  TRY(mlsys_pcr_read_one(ref, 0, info.n_groups, &jpg, &len));
  TRY(mlsys_pcr_decode(jpg, len, &dd, &ref_px, &rw, &rh));
  mlsys_pcr_free(jpg);
  mlsys_pcr_close(ref);

  /* 4. Read at increasing fidelity. load(k) reads only what is missing, R(k) − R(previous k), in one sequential read,
        and checks the CRC of every group it loads. */
  for (j = 0; j < 4; j++) {
    int k = ks[j], pw, ph;
    uint8_t *px;
    double msssim;
    if (k > info.n_groups) break;
    TRY(mlsys_pcr_load(r, k));
    /* image 0 at k scans = its JPEG header, its parts in groups 1..k, and an EOI marker: a valid JPEG */
    TRY(mlsys_pcr_image_jpeg(r, 0, k, NULL, 0, &len));   /* NULL buffer: just the size */
    if (!(jpg = (uint8_t *)mlsys_alloc(len, 1))) return 1;
    TRY(mlsys_pcr_image_jpeg(r, 0, k, jpg, len, &len));
    TRY(mlsys_pcr_decode(jpg, len, &dd, &px, &pw, &ph));   /* same size at every k: fewer scans, less detail */
    TRY(mlsys_pcr_msssim(ref_px, px, pw, ph, 3, &msssim, NULL));
    printf("k = %2d: read %8llu of %llu bytes (%5.1f%%); image 0 is %6zu bytes, %dx%d, MS-SSIM %.4f\n", k,
           (unsigned long long)mlsys_pcr_bytes_read(r), (unsigned long long)info.file_bytes,
           100.0 * (double)mlsys_pcr_bytes_read(r) / (double)info.file_bytes, len, pw, ph, msssim);
    mlsys_free(jpg);
    mlsys_pcr_free(px);
  }

  /* 5. Clean up. */
  mlsys_pcr_free(ref_px);
  mlsys_pcr_close(r);
  unlink(path);
  return 0;
}
