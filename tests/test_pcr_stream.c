/* tests/test_pcr_stream.c — PCR's epoch stream over many records (spec pcr.md §3.3 step 5, §7.4 T22), the
   throttle, concurrent readers of one loaded record, and the mlsys_pipeline.h source (the JPEG training pipeline
   over PCR records), on the real photographs of Debian's opencv-doc. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "mlsys_pcr.h"
#include "tests/test.h"
#include <pthread.h>

#include "tests/pcr_fixture.h"

/* three records of the 59 photos (20 + 20 + 19 images) in dir */
static int write_records(const char *dir, char paths[3][4300], const mlsys_pcr_writer_desc *wd) {
  int j;
  for (j = 0; j < 3; j++) {
    size_t rlen;
    uint8_t *rec = pcr_pack(j * 20, j == 2 ? 59 : j * 20 + 20, wd, &rlen);
    if (!rec) return 0;
    snprintf(paths[j], 4300, "%s/pcr-%06d.pcr", dir, j);
    if (!pcr_write_file(paths[j], rec, rlen)) return 0;
    mlsys_free(rec);
  }
  return 1;
}

/* the three records written and their R(k) (from each directory) */
static int records_with_R(const char *dir, char paths[3][4300], const char *pp[3], uint64_t R[3][11]) {
  int j, k;
  if (!write_records(dir, paths, NULL)) return 0;
  for (j = 0; j < 3; j++) {
    mlsys_pcr_reader *r;
    mlsys_pcr_info in;
    pp[j] = paths[j];
    if (mlsys_pcr_open_file(paths[j], NULL, &r)) return 0;
    mlsys_pcr_get_info(r, &in);
    for (k = 0; k <= 10; k++) R[j][k] = in.group_end[k];
    mlsys_pcr_close(r);
  }
  return 1;
}

/* one epoch: the (record, index) order, labels checked, bytes summed per record at the fidelity used */
static int epoch(mlsys_pcr_stream *s, int *order, uint64_t R[3][11], uint64_t *expect_bytes, int set_k_after, int new_k) {
  int n = 0, end = 0, seen_rec[3] = {0, 0, 0}, krec[3] = {0, 0, 0};
  mlsys_pcr_item it;
  *expect_bytes = 0;
  for (;;) {
    if (mlsys_pcr_stream_next(s, &it, &end)) { printf("    stream_next: %s\n", mlsys_last_error()); return -1; }
    if (end) break;
    if (n == set_k_after) mlsys_pcr_stream_set_k(s, new_k);
    if (it.label != (int64_t)(it.record * 20 + it.index)) { printf("    label %lld for record %u image %u\n", (long long)it.label, it.record, it.index); return -1; }
    if (it.len < 4 || it.jpg[0] != 0xFF || it.jpg[1] != 0xD8 || it.jpg[it.len - 2] != 0xFF || it.jpg[it.len - 1] != 0xD9) return -1;
    if (!seen_rec[it.record]) { seen_rec[it.record] = 1; krec[it.record] = it.k; *expect_bytes += R[it.record][it.k]; }
    else if (krec[it.record] != it.k) return -1;   /* one fidelity per record */
    order[n++] = (int)(it.record * 20 + it.index);
  }
  return n;
}

TEST(t22_stream_epochs) {
  char *dir, paths[3][4300];
  const char *pp[3];
  uint64_t R[3][11], eb;
  mlsys_pcr_stream *s;
  mlsys_pcr_stream_desc d;
  int o1[64], o2[64], o3[64], n, i;
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  REQUIRE(records_with_R(dir, paths, pp, R));
  memset(&d, 0, sizeof d);
  d.seed = 7;
  d.k = 2;
  d.buffer_records = 2;
  REQUIRE_OK(mlsys_pcr_stream_open(pp, 3, &d, &s));
  n = epoch(s, o1, R, &eb, -1, 0);
  CHECK_EQ_INT(n, 59);
  CHECK_EQ_INT(mlsys_pcr_stream_bytes_read(s), eb);   /* Σ R(2) of the records */
  CHECK_EQ_INT(eb, R[0][2] + R[1][2] + R[2][2]);
  {
    /* every image exactly once */
    int seen[59] = {0}, shuffled = 0;
    for (i = 0; i < n; i++) seen[o1[i]]++;
    for (i = 0; i < 59; i++) CHECK_EQ_INT(seen[i], 1);
    for (i = 0; i < n; i++) shuffled += o1[i] != i;
    CHECK(shuffled > 40);
  }
  mlsys_pcr_stream_close(s);
  /* the same seed, another stream with two read-ahead threads: the same order */
  d.io_threads = 2;
  REQUIRE_OK(mlsys_pcr_stream_open(pp, 3, &d, &s));
  CHECK_EQ_INT(epoch(s, o2, R, &eb, -1, 0), 59);
  CHECK(!memcmp(o1, o2, sizeof(int) * 59));
  /* the next epoch (a new seed) reshuffles, and set_k applies from the records read after it */
  REQUIRE_OK(mlsys_pcr_stream_rewind(s, 8));
  {
    uint64_t before = mlsys_pcr_stream_bytes_read(s);
    CHECK_EQ_INT(epoch(s, o3, R, &eb, 0, 10), 59);
    CHECK(memcmp(o1, o3, sizeof(int) * 59) != 0);
    CHECK_EQ_INT(mlsys_pcr_stream_bytes_read(s) - before, eb);
    /* records read ahead before the call keep k = 2 (item.k says which); the byte count follows each record's k */
  }
  /* after the change every record of the next epoch is read at 10 */
  REQUIRE_OK(mlsys_pcr_stream_rewind(s, 9));
  {
    uint64_t before = mlsys_pcr_stream_bytes_read(s);
    CHECK_EQ_INT(epoch(s, o3, R, &eb, -1, 0), 59);
    CHECK_EQ_INT(eb, R[0][10] + R[1][10] + R[2][10]);
    CHECK_EQ_INT(mlsys_pcr_stream_bytes_read(s) - before, eb);
  }
  mlsys_pcr_stream_close(s);
  /* no_shuffle: records and images in order */
  d.no_shuffle = 1;
  REQUIRE_OK(mlsys_pcr_stream_open(pp, 3, &d, &s));
  CHECK_EQ_INT(epoch(s, o3, R, &eb, -1, 0), 59);
  for (i = 0; i < 59; i++) CHECK_EQ_INT(o3[i], i);
  mlsys_pcr_stream_close(s);
  /* a damaged record fails the epoch with its name; the stream does not crash */
  {
    char *b;
    size_t len;
    int end = 0, got = 0;
    mlsys_pcr_item it;
    mlsys_status st = MLSYS_OK;
    REQUIRE_OK(mlsys_read_file(paths[1], &b, &len));
    b[len - 100] ^= 0x55;
    REQUIRE(pcr_write_file(paths[1], b, len));
    mlsys_free(b);
    d.k = 0;
    d.buffer_records = 1;   /* a window of one record: the damage surfaces when record 1's window is taken */
    REQUIRE_OK(mlsys_pcr_stream_open(pp, 3, &d, &s));
    while (!(st = mlsys_pcr_stream_next(s, &it, &end)) && !end) got++;
    CHECK_EQ_INT(st, MLSYS_ERR_PARSE);
    CHECK_EQ_INT(mlsys_pcr_last_problem(), MLSYS_PCR_P_CRC);
    CHECK_CONTAINS(mlsys_last_error(), "pcr-000001.pcr");
    CHECK_EQ_INT(got, 20);   /* record 0 came out whole before it */
    mlsys_pcr_stream_close(s);
  }
  pcr_rmdir(dir);
}

/* the throttle: a lower bound only (a busy machine can only be slower) — a record of S bytes read at 4 MB/s with a
   1 MiB burst takes at least (S − 1 MiB) / 4 MB/s */
TEST(throttle_paces_reads) {
  mlsys_pcr_reader *r;
  mlsys_pcr_reader_desc d;
  char *dir, paths[3][4300];
  double t0, dt;
  mlsys_pcr_info in;
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  REQUIRE(write_records(dir, paths, NULL));
  memset(&d, 0, sizeof d);
  d.throttle_Bps = 4e6;
  t0 = mlsys_now();
  REQUIRE_OK(mlsys_pcr_open_file(paths[0], &d, &r));
  REQUIRE_OK(mlsys_pcr_load(r, 10));
  dt = mlsys_now() - t0;
  mlsys_pcr_get_info(r, &in);
  printf("    %.2f MB at 4 MB/s in %.3f s (the bucket starts full: %.3f s expected)\n", (double)in.file_bytes / 1e6, dt,
         ((double)in.file_bytes - 1048576.0) / 4e6);
  CHECK(dt >= ((double)in.file_bytes - 1048576.0) / 4e6 * 0.98);
  mlsys_pcr_close(r);
  {
    mlsys_pcr_throttle *t;
    CHECK_EQ_INT(mlsys_pcr_throttle_create(0, 0, &t), MLSYS_ERR_ARG);
  }
  pcr_rmdir(dir);
}

/* a loaded reader is immutable: four threads reassemble and decode every image at once, with the same bytes */
typedef struct { const mlsys_pcr_reader *r; uint32_t crc; int errors; } par_arg;
static void *par_worker(void *p) {
  par_arg *a = (par_arg *)p;
  uint32_t i;
  int k;
  for (k = 1; k <= 10; k += 3)
    for (i = 0; i < 20; i++) {
      size_t n;
      uint8_t *j = pcr_jpeg_at(a->r, i, k, &n), *px;
      int w, h;
      mlsys_pcr_decode_desc dd;
      memset(&dd, 0, sizeof dd);
      dd.backend = MLSYS_PCR_DEC_LIBJPEG;
      if (!j || mlsys_pcr_decode(j, n, &dd, &px, &w, &h)) { a->errors++; free(j); continue; }
      a->crc = mlsys_crc32c(a->crc, px, (size_t)w * h * 3);
      mlsys_pcr_free(px);
      free(j);
    }
  return NULL;
}
TEST(concurrent_readers_of_one_record) {
  mlsys_pcr_reader *r;
  uint8_t *rec;
  size_t rlen;
  pthread_t th[4];
  par_arg a[4];
  int t;
  NEED_PHOTOS();
  REQUIRE((rec = pcr_pack(0, 20, NULL, &rlen)));
  REQUIRE_OK(mlsys_pcr_open_mem(rec, rlen, NULL, &r));
  REQUIRE_OK(mlsys_pcr_load(r, 10));
  for (t = 0; t < 4; t++) {
    a[t].r = r; a[t].crc = 0; a[t].errors = 0;
    pthread_create(&th[t], NULL, par_worker, &a[t]);
  }
  for (t = 0; t < 4; t++) pthread_join(th[t], NULL);
  for (t = 0; t < 4; t++) {
    CHECK_EQ_INT(a[t].errors, 0);
    CHECK_EQ_INT(a[t].crc, a[0].crc);
  }
  mlsys_pcr_close(r);
  mlsys_free(rec);
}

/* the mlsys_pipeline.h source: PCR records as a disk operator, and the JPEG training pipeline over them */
TEST(pipeline_source_over_records) {
  char *dir, paths[3][4300];
  const char *pp[3];
  uint64_t R2, R[3][11];
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pcr_pipe_desc pd;
  mlsys_pipe_desc desc;
  int src, j, n = 0, end = 0, seen[59] = {0};
  NEED_PHOTOS();
  REQUIRE((dir = pcr_tmpdir()));
  REQUIRE(records_with_R(dir, paths, pp, R));
  R2 = R[0][2] + R[1][2] + R[2][2];
  memset(&desc, 0, sizeof desc);
  desc.workers = 2;
  desc.seed = 3;
  REQUIRE_OK(mlsys_pipe_create(&desc, &p));
  memset(&pd, 0, sizeof pd);
  pd.stream.k = 2;
  pd.stream.seed = 5;
  pd.decode = 1;
  REQUIRE_OK(mlsys_pcr_pipe_source(p, pp, 3, &pd, &src));
  REQUIRE_OK(mlsys_pipe_open(p, src, &it));
  for (;;) {
    mlsys_pipe_elem e;
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    if (end) break;
    CHECK(e.ncomp == 2 && e.comp[0].ndim == 3 && e.comp[0].shape[2] == 3 && e.comp[1].dtype == MLSYS_PIPE_I64);
    {
      int64_t lab = *(int64_t *)e.comp[1].data;
      if (lab >= 0 && lab < 59) seen[lab]++;
      /* the decoded image has the photo's size */
      {
        mlsys_jpeg_info ji;
        if (!mlsys_jpeg_check(g_ph[lab].jpg, g_ph[lab].len, &ji, NULL, 0))
          CHECK(e.comp[0].shape[0] == ji.height && e.comp[0].shape[1] == ji.width);
      }
    }
    n++;
    mlsys_pipe_elem_release(&e);
  }
  CHECK_EQ_INT(n, 59);
  for (j = 0; j < 59; j++) CHECK_EQ_INT(seen[j], 1);
  {
    mlsys_pipe_snapshot sn;
    REQUIRE_OK(mlsys_pipe_snapshot_take(it, &sn));
    CHECK_EQ_INT(sn.op[0].kind, MLSYS_PIPE_OP_GENERATOR);
    CHECK_EQ_INT((uint64_t)sn.op[0].disk_bytes, R2);   /* the disk operator's bytes: Σ R(2) */
    CHECK_EQ_INT(sn.op[0].files_total, 3);
    mlsys_pipe_snapshot_free(&sn);
  }
  mlsys_pipe_close(it);
  mlsys_pipe_destroy(p);
  /* the JPEG training pipeline over the records: 2 epochs of 59 crops in batches of 16 */
  {
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nodes;
    int batches = 0, imgs = 0;
    REQUIRE_OK(mlsys_pipe_create(&desc, &p));
    memset(&jd, 0, sizeof jd);
    jd.batch = 16;
    jd.size = 64;
    jd.epochs = 2;
    pd.decode = 0;
    pd.stream.k = 5;
    REQUIRE_OK(mlsys_pcr_jpeg_pipeline(p, pp, 3, &pd, &jd, &nodes));
    REQUIRE_OK(mlsys_pipe_open(p, nodes.root, &it));
    for (;;) {
      mlsys_pipe_elem e;
      REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
      if (end) break;
      CHECK(e.comp[0].dtype == MLSYS_PIPE_F32 && e.comp[0].ndim == 4 && e.comp[0].shape[1] == 64 && e.comp[0].shape[3] == 3);
      imgs += (int)e.comp[0].shape[0];
      batches++;
      mlsys_pipe_elem_release(&e);
    }
    CHECK_EQ_INT(imgs, 2 * 59);
    CHECK_EQ_INT(batches, (2 * 59 + 15) / 16);
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
  pcr_rmdir(dir);
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  pcr_photos_free();
  return rc;
}
