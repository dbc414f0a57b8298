/* tests/test_pipe_storage.c — the storage operators of mlsys_pipeline.h (spec §2.1, §3.3, §7.6 cases 10, 16):
   files (bytes and index per file, disk counters, unreadable files failed or skipped), TFRecord files (round trip,
   damage named with file and offset), the memory and file caches (replays without running the input, incomplete
   passes discarded, a damaged cache file named), select_map, prefetch 0, knobs and cache insertion, and the token
   bucket: the analysis of a throttled source's window names the disk bound of §7.6 #16, every read goes through the
   bucket and none runs faster than it allows, and with a read latency p parallel reads overlap (p in flight at once).
   Windows are numbers of batches and the checks rest on counts and on upper bounds that a loaded machine cannot
   break (it only reads slower); the rates themselves are printed (bench/bench_pipeline.c `disk` measures them
   against W/β). Inputs are synthetic files written to a temporary directory. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static const char *tmpdir(void) {
  if (!g_dir[0]) {
    snprintf(g_dir, sizeof g_dir, "/tmp/mlsys_pipe_storage_XXXXXX");
    if (!mkdtemp(g_dir)) g_dir[0] = 0;
  }
  return g_dir;
}

/* n files of `size` bytes each, byte j of file i = (i * 7 + j) & 255; paths into out (caller frees) */
static int make_files(const char *tag, int n, size_t size, char **out) {
  int i;
  size_t j;
  for (i = 0; i < n; i++) {
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s_%04d.bin", tmpdir(), tag, i);
    if (!(f = fopen(path, "wb"))) return -1;
    for (j = 0; j < size; j++) fputc((int)((i * 7 + j) & 255), f);
    fclose(f);
    out[i] = mlsys_strdup(path);
  }
  return 0;
}
static void free_paths(char **p, int n) { int i; for (i = 0; i < n; i++) mlsys_free(p[i]); }

TEST(files_source_bytes_index_and_counters) {
  char *paths[12];
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_pipe_snapshot s;
  mlsys_pipe_source_desc sd;
  int f, end = 0, n = 0, par;
  REQUIRE(make_files("fs", 12, 1000, paths) == 0);
  for (par = 1; par <= 3; par += 2) {
    memset(&sd, 0, sizeof sd);
    sd.parallelism = par;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_files(p, (const char *const *)paths, 12, &sd, &f));
    REQUIRE_OK(mlsys_pipe_open(p, f, &it));
    for (n = 0;; n++) {
      REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
      if (end) break;
      CHECK_EQ_INT(e.ncomp, 2);
      CHECK_EQ_INT((int64_t)e.comp[0].nbytes, 1000);
      CHECK_EQ_INT(*(int64_t *)e.comp[1].data, n);
      CHECK_EQ_INT((int64_t)e.seq, n);
      CHECK_EQ_INT(((uint8_t *)e.comp[0].data)[5], (n * 7 + 5) & 255);
      mlsys_pipe_elem_release(&e);
    }
    CHECK_EQ_INT(n, 12);
    REQUIRE_OK(mlsys_pipe_snapshot_take(it, &s));
    CHECK_EQ_INT(s.op[0].kind, MLSYS_PIPE_OP_FILES);
    CHECK_NEAR(s.op[0].disk_bytes, 12000, 0);
    CHECK_EQ_INT(s.op[0].files_observed, 12);
    CHECK_EQ_INT(s.op[0].files_total, 12);
    CHECK_EQ_INT(s.op[0].parallelism, par);
    CHECK_EQ_INT(s.op[0].parallel, 1);
    mlsys_pipe_snapshot_free(&s);
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
  free_paths(paths, 12);
}

TEST(files_unreadable_fail_or_skip) {
  char *paths[6];
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_pipe_source_desc sd;
  int f, end = 0, n, par, mode;
  mlsys_status st = MLSYS_OK;
  REQUIRE(make_files("fu", 6, 10, paths) == 0);
  mlsys_free(paths[3]);
  paths[3] = mlsys_strdup("/nonexistent/mlsys/missing.jpg");
  for (mode = 0; mode < 2; mode++)
    for (par = 1; par <= 2; par++) {
      memset(&sd, 0, sizeof sd);
      sd.parallelism = par; sd.on_error = mode; sd.name = "src";
      REQUIRE_OK(mlsys_pipe_create(NULL, &p));
      REQUIRE_OK(mlsys_pipe_files(p, (const char *const *)paths, 6, &sd, &f));
      REQUIRE_OK(mlsys_pipe_open(p, f, &it));
      for (n = 0;; n++) {
        st = mlsys_pipe_next(it, &e, &end);
        if (st || end) break;
        mlsys_pipe_elem_release(&e);
      }
      if (mode == MLSYS_PIPE_ON_ERROR_FAIL) {
        CHECK_EQ_INT(st, MLSYS_ERR_IO);
        CHECK_EQ_INT(n, 3);
        CHECK_CONTAINS(mlsys_last_error(), "missing.jpg");
        CHECK_CONTAINS(mlsys_last_error(), "seq 3");
      } else {
        CHECK_OK(st);
        CHECK_EQ_INT(n, 5);
        CHECK_EQ_INT(mlsys_pipe_skipped(it, f), 1);
      }
      mlsys_pipe_close(it);
      mlsys_pipe_destroy(p);
    }
  free_paths(paths, 6);
}

/* three TFRecord files of 5, 0 and 7 records; record k of file i = "rec i k" repeated k + 1 times */
static void write_records(char **paths) {
  int i, k, r;
  static const int nrec[3] = {5, 0, 7};
  for (i = 0; i < 3; i++) {
    char path[512], buf[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/r%d.tfrecord", tmpdir(), i);
    f = fopen(path, "wb");
    for (k = 0; k < nrec[i]; k++) {
      int len = 0;
      for (r = 0; r <= k; r++) len += snprintf(buf + len, sizeof buf - (size_t)len, "rec %d %d;", i, k);
      mlsys_pipe_tfrecord_write(f, buf, (uint64_t)len);
    }
    fclose(f);
    paths[i] = mlsys_strdup(path);
  }
}

TEST(records_round_trip_and_damage) {
  char *paths[3];
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_pipe_snapshot s;
  mlsys_pipe_source_desc sd;
  int rsrc, end = 0, n = 0, mode;
  mlsys_status st;
  FILE *f;
  long sz;
  write_records(paths);
  memset(&sd, 0, sizeof sd);
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_records(p, (const char *const *)paths, 3, &sd, &rsrc));
  REQUIRE_OK(mlsys_pipe_open(p, rsrc, &it));
  for (;;) {
    char want[256];
    int i = n < 5 ? 0 : 2, k = n < 5 ? n : n - 5, r, len = 0;
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    if (end) break;
    for (r = 0; r <= k; r++) len += snprintf(want + len, sizeof want - (size_t)len, "rec %d %d;", i, k);
    CHECK_EQ_INT((int64_t)e.comp[0].nbytes, len);
    CHECK(memcmp(e.comp[0].data, want, (size_t)len) == 0);
    mlsys_pipe_elem_release(&e);
    n++;
  }
  CHECK_EQ_INT(n, 12);
  REQUIRE_OK(mlsys_pipe_snapshot_take(it, &s));
  f = fopen(paths[0], "rb"); fseek(f, 0, SEEK_END); sz = ftell(f); fclose(f);
  {
    long sz2;
    f = fopen(paths[2], "rb"); fseek(f, 0, SEEK_END); sz2 = ftell(f); fclose(f);
    CHECK_NEAR(s.op[0].disk_bytes, (double)(sz + sz2), 0);
    CHECK_NEAR(s.op[0].observed_bytes, (double)(sz + sz2), 0);
  }
  CHECK_EQ_INT(s.op[0].files_observed, 3);
  mlsys_pipe_snapshot_free(&s);
  mlsys_pipe_close(it);
  /* flip one data byte of the 3rd record of file 0: a data CRC error naming the file and the record's offset */
  {
    FILE *g = fopen(paths[0], "r+b");
    int off3 = 16 + 6 + 16 + 12 + 16 + 12 * 0;   /* records 0 and 1 are 8 and 16 bytes: record 2 starts at 24 + 32 = 56 */
    (void)off3;
    fseek(g, 56 + 12 + 3, SEEK_SET);
    fputc('X', g);
    fclose(g);
  }
  for (mode = 0; mode < 2; mode++) {
    mlsys_pipe_destroy(p);
    sd.on_error = mode;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_records(p, (const char *const *)paths, 3, &sd, &rsrc));
    REQUIRE_OK(mlsys_pipe_open(p, rsrc, &it));
    for (n = 0;; n++) {
      st = mlsys_pipe_next(it, &e, &end);
      if (st || end) break;
      mlsys_pipe_elem_release(&e);
    }
    if (mode == 0) {
      CHECK_EQ_INT(st, MLSYS_ERR_PARSE);
      CHECK_EQ_INT(n, 2);
      CHECK_CONTAINS(mlsys_last_error(), "data CRC mismatch in the record at byte 56");
      CHECK_CONTAINS(mlsys_last_error(), "r0.tfrecord");
    } else {
      CHECK_OK(st);
      CHECK_EQ_INT(n, 2 + 7);   /* the rest of the damaged file is skipped, file 2 read */
      CHECK_EQ_INT(mlsys_pipe_skipped(it, rsrc), 1);
    }
    mlsys_pipe_close(it);
  }
  mlsys_pipe_destroy(p);
  free_paths(paths, 3);
}

typedef struct { int calls; } counter;
static int count_udf(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  counter *c = (counter *)user;
  (void)rng;
  __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
  if (mlsys_pipe_elem_copy(in, out)) return -1;
  *(int64_t *)out->comp[0].data *= 10;
  return 0;
}

static int64_t run_all(mlsys_pipe *p, int root, int64_t *sum) {
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  int end = 0;
  int64_t n = 0;
  *sum = 0;
  if (mlsys_pipe_open(p, root, &it)) return -1;
  for (;;) {
    if (mlsys_pipe_next(it, &e, &end)) { mlsys_pipe_close(it); return -1; }
    if (end) break;
    *sum += *(int64_t *)e.comp[0].data * (n + 1);
    n++;
    mlsys_pipe_elem_release(&e);
  }
  mlsys_pipe_close(it);
  return n;
}

TEST(memory_cache_replays_without_the_input) {
  mlsys_pipe *p;
  mlsys_pipe_map_desc md;
  counter c = {0};
  int r, m, ca, rp, par;
  int64_t sum, want = 0, i;
  for (i = 0; i < 3 * 50; i++) want += (i % 50) * 10 * (i + 1);
  for (par = 1; par <= 3; par += 2) {
    c.calls = 0;
    memset(&md, 0, sizeof md);
    md.fn = count_udf; md.user = &c; md.parallelism = par;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_range(p, 50, &r));
    REQUIRE_OK(mlsys_pipe_map(p, r, &md, &m));
    REQUIRE_OK(mlsys_pipe_cache(p, m, NULL, &ca));
    REQUIRE_OK(mlsys_pipe_repeat(p, ca, 3, &rp));
    CHECK_EQ_INT(run_all(p, rp, &sum), 150);
    CHECK_EQ_INT(sum, want);
    CHECK_EQ_INT(c.calls, 50);       /* passes 2 and 3 come from the cache */
    mlsys_pipe_destroy(p);
  }
}

TEST(memory_cache_incomplete_pass_discarded) {
  /* take(20) above cache above repeat(2) of take: each pass reads only part of the input, so nothing is cached */
  mlsys_pipe *p;
  mlsys_pipe_map_desc md;
  counter c = {0};
  int r, m, ca, tk, rp;
  int64_t sum;
  memset(&md, 0, sizeof md);
  md.fn = count_udf; md.user = &c;
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_range(p, 50, &r));
  REQUIRE_OK(mlsys_pipe_map(p, r, &md, &m));
  REQUIRE_OK(mlsys_pipe_cache(p, m, NULL, &ca));
  REQUIRE_OK(mlsys_pipe_take(p, ca, 20, &tk));
  REQUIRE_OK(mlsys_pipe_repeat(p, tk, 3, &rp));
  CHECK_EQ_INT(run_all(p, rp, &sum), 60);
  CHECK_EQ_INT(c.calls, 60);
  mlsys_pipe_destroy(p);
}

TEST(file_cache_written_then_replayed) {
  mlsys_pipe *p;
  mlsys_pipe_map_desc md;
  counter c = {0};
  char path[512];
  int r, m, ca, rp, pass;
  int64_t sum1 = 0, sum2 = 0;
  snprintf(path, sizeof path, "%s/cache.bin", tmpdir());
  remove(path);
  for (pass = 0; pass < 2; pass++) {
    memset(&md, 0, sizeof md);
    md.fn = count_udf; md.user = &c; md.parallelism = 2;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_range(p, 40, &r));
    REQUIRE_OK(mlsys_pipe_map(p, r, &md, &m));
    REQUIRE_OK(mlsys_pipe_cache(p, m, path, &ca));
    REQUIRE_OK(mlsys_pipe_repeat(p, ca, 2, &rp));
    CHECK_EQ_INT(run_all(p, rp, pass ? &sum2 : &sum1), 80);
    mlsys_pipe_destroy(p);
    CHECK_EQ_INT(c.calls, 40);   /* second run: the file is replayed, the map never runs */
  }
  CHECK_EQ_INT(sum1, sum2);
  {
    /* an incomplete pass never lands; a damaged cache file is named */
    mlsys_pipe_iter *it;
    mlsys_pipe_elem e;
    int end, k;
    char path2[512];
    FILE *g;
    mlsys_status st = MLSYS_OK;
    snprintf(path2, sizeof path2, "%s/cache2.bin", tmpdir());
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_range(p, 40, &r));
    REQUIRE_OK(mlsys_pipe_cache(p, r, path2, &ca));
    REQUIRE_OK(mlsys_pipe_open(p, ca, &it));
    for (k = 0; k < 10; k++) { REQUIRE_OK(mlsys_pipe_next(it, &e, &end)); mlsys_pipe_elem_release(&e); }
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
    CHECK(access(path2, F_OK) != 0);
    g = fopen(path, "r+b");
    fseek(g, 200, SEEK_SET);
    fputc(0x5a, g);
    fclose(g);
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_range(p, 40, &r));
    REQUIRE_OK(mlsys_pipe_cache(p, r, path, &ca));
    REQUIRE_OK(mlsys_pipe_open(p, ca, &it));
    for (k = 0; k < 100; k++) {
      st = mlsys_pipe_next(it, &e, &end);
      if (st || end) break;
      mlsys_pipe_elem_release(&e);
    }
    CHECK_EQ_INT(st, MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "cache.bin");
    CHECK_CONTAINS(mlsys_last_error(), "CRC");
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
}

TEST(elem_encode_decode_round_trip_and_damage) {
  mlsys_pipe_elem e, d;
  uint8_t *b;
  size_t n, cut;
  memset(&e, 0, sizeof e);
  memcpy(mlsys_pipe_tensor_alloc(&e, 0, 12, MLSYS_PIPE_F32), "abcdefghijkl", 12);
  e.comp[0].ndim = 2; e.comp[0].shape[0] = 1; e.comp[0].shape[1] = 3;
  *(int64_t *)mlsys_pipe_tensor_alloc(&e, 1, 8, MLSYS_PIPE_I64) = -5;
  e.seq = 77;
  REQUIRE_OK(mlsys_pipe_elem_encode(&e, &b, &n));
  REQUIRE_OK(mlsys_pipe_elem_decode(b, n, &d));
  CHECK_EQ_INT(d.ncomp, 2);
  CHECK_EQ_INT((int64_t)d.seq, 77);
  CHECK_EQ_INT(d.comp[0].dtype, MLSYS_PIPE_F32);
  CHECK_EQ_INT(d.comp[0].shape[1], 3);
  CHECK(memcmp(d.comp[0].data, "abcdefghijkl", 12) == 0);
  CHECK_EQ_INT(*(int64_t *)d.comp[1].data, -5);
  mlsys_pipe_elem_release(&d);
  for (cut = 0; cut < n; cut++) CHECK_MSG(mlsys_pipe_elem_decode(b, cut, &d) == MLSYS_ERR_PARSE, "cut at %zu decoded", cut);
  b[8] = 9;   /* dtype 9 */
  CHECK_EQ_INT(mlsys_pipe_elem_decode(b, n, &d), MLSYS_ERR_PARSE);
  mlsys_free(b);
  mlsys_pipe_elem_release(&e);
}

TEST(select_map_runs_only_on_the_selection) {
  mlsys_pipe *p;
  mlsys_pipe_map_desc md;
  counter c = {0};
  uint8_t sel[10] = {1, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  int r, m, par;
  for (par = 1; par <= 3; par += 2) {
    mlsys_pipe_iter *it;
    mlsys_pipe_elem e;
    int end = 0;
    int64_t i = 0;
    c.calls = 0;
    memset(&md, 0, sizeof md);
    md.fn = count_udf; md.user = &c; md.parallelism = par;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_range(p, 30, &r));
    REQUIRE_OK(mlsys_pipe_select_map(p, r, sel, 10, &md, &m));
    REQUIRE_OK(mlsys_pipe_open(p, m, &it));
    for (;; i++) {
      REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
      if (end) break;
      CHECK_EQ_INT(*(int64_t *)e.comp[0].data, sel[i % 10] ? 10 * i : i);
      mlsys_pipe_elem_release(&e);
    }
    CHECK_EQ_INT(i, 30);
    CHECK_EQ_INT(c.calls, 9);
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
}

TEST(knobs_prefetch_zero_and_insert_cache) {
  mlsys_pipe *p;
  mlsys_pipe_map_desc md;
  counter c = {0};
  int r, m, pf = -1, rp, ca, kind = -1, in = -1;
  int64_t v, sum;
  memset(&md, 0, sizeof md);
  md.fn = count_udf; md.user = &c;
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_range(p, 25, &r));
  REQUIRE_OK(mlsys_pipe_map(p, r, &md, &m));
  REQUIRE_OK(mlsys_pipe_repeat(p, m, 4, &rp));
  REQUIRE_OK(mlsys_pipe_prefetch(p, rp, 0, &pf));
  REQUIRE_OK(mlsys_pipe_set_knob(p, m, MLSYS_PIPE_KNOB_PARALLELISM, 3));
  REQUIRE_OK(mlsys_pipe_get_knob(p, m, MLSYS_PIPE_KNOB_PARALLELISM, &v));
  CHECK_EQ_INT(v, 3);
  CHECK_EQ_INT(mlsys_pipe_set_knob(p, m, MLSYS_PIPE_KNOB_PARALLELISM, 0), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_set_knob(p, r, MLSYS_PIPE_KNOB_PARALLELISM, 2), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_set_knob(p, 99, MLSYS_PIPE_KNOB_BUFFER, 2), MLSYS_ERR_ARG);
  CHECK_EQ_INT(run_all(p, pf, &sum), 100);   /* prefetch 0: a pass-through */
  CHECK_EQ_INT(c.calls, 100);
  REQUIRE_OK(mlsys_pipe_set_knob(p, pf, MLSYS_PIPE_KNOB_BUFFER, 4));
  REQUIRE_OK(mlsys_pipe_insert_cache(p, m, NULL, &ca));
  REQUIRE_OK(mlsys_pipe_node_info(p, rp, &kind, &in, NULL));
  CHECK_EQ_INT(in, ca);
  REQUIRE_OK(mlsys_pipe_node_info(p, ca, &kind, &in, NULL));
  CHECK_EQ_INT(kind, MLSYS_PIPE_OP_CACHE);
  CHECK_EQ_INT(in, m);
  c.calls = 0;
  CHECK_EQ_INT(run_all(p, pf, &sum), 100);
  CHECK_EQ_INT(c.calls, 25);
  mlsys_pipe_destroy(p);
}

/* A files source (+ repeat + batch 8) through throttle t with `par` reads in flight, traced over `batches` batches after
   2: returns batches/s, bytes/s in *bps; with bottleneck_is_disk, whether the plan at 2 cores and disk_bw names the
   disk with X = W/β = 7.629 (β from the window's counts). */
static double run_throttled(char **paths, int n, mlsys_pipe_throttle *t, int par, int64_t batches, double disk_bw, double *bps,
                            int *bottleneck_is_disk) {
  mlsys_pipe *p;
  mlsys_pipe_snapshot w;
  mlsys_pipe_source_desc sd;
  mlsys_pipe_machine mc;
  mlsys_pipe_analysis an;
  mlsys_pipe_plan pl;
  int f, rp, b;
  double x;
  memset(&sd, 0, sizeof sd);
  sd.throttle = t; sd.parallelism = par;
  if (mlsys_pipe_create(NULL, &p)) return -1;
  mlsys_pipe_files(p, (const char *const *)paths, n, &sd, &f);
  mlsys_pipe_repeat(p, f, -1, &rp);
  mlsys_pipe_batch(p, rp, 8, 1, &b);
  if (mlsys_pipe_trace_elements(p, b, batches, 2, &w, NULL)) { mlsys_pipe_destroy(p); return -1; }
  x = (double)w.op[0].produced / w.seconds;
  *bps = w.op[2].disk_bytes / w.seconds;
  memset(&mc, 0, sizeof mc);
  mc.cores = 2; mc.disk_bytes_per_s = disk_bw;
  if (bottleneck_is_disk && !mlsys_pipe_analyze(&w, &mc, &an)) {
    if (!mlsys_pipe_plan_cpu(&w, &an, &mc, MLSYS_PIPE_LP_CLOSED_FORM, &pl)) {
      printf("  beta %.0f B per batch, X_disk %.4f, plan binds on %s\n", an.beta, an.x_disk,
             pl.binding_kind == MLSYS_PIPE_BIND_DISK ? "the disk" : "something else");
      *bottleneck_is_disk = pl.binding_kind == MLSYS_PIPE_BIND_DISK && fabs(pl.x_pred / 7.62939 - 1) < 0.02;
      mlsys_pipe_plan_free(&pl);
    }
    mlsys_pipe_analysis_free(&an);
  }
  mlsys_pipe_snapshot_free(&w);
  mlsys_pipe_destroy(p);
  return x;
}

TEST(throttled_source_runs_at_the_disk_bound) {
  /* §7.6 #16: W = 4 MB/s, bucket 64 KiB, 64 KiB files, batch 8 ⇒ β = 524 288 B/minibatch, X_disk = 7.62939. β and the
     plan come from the window's counts; the bucket makes 7.629 batches/s an upper bound of the measured rate (the
     window's 6.3 MB dwarf the 64 KiB burst), which a loaded machine can only stay under */
  char *paths[64];
  mlsys_pipe_throttle *t;
  mlsys_pipe_throttle_stats ts;
  double x, bps;
  int disk = 0;
  REQUIRE(make_files("thr", 64, 65536, paths) == 0);
  REQUIRE_OK(mlsys_pipe_throttle_create(4e6, 65536, 0, &t));
  x = run_throttled(paths, 64, t, 1, 12, 4e6, &bps, &disk);
  printf("  throttled: X = %.3f minibatches/s (disk bound 7.629), %.3f MB/s\n", x, bps / 1e6);
  CHECK_MSG(disk, "the plan does not name the disk as binding at X = 7.629");
  CHECK_MSG(x > 0 && x <= 7.62939 * 1.05, "X = %.3f above the bucket's 7.629", x);
  mlsys_pipe_throttle_get_stats(t, &ts);
  CHECK_EQ_INT(ts.reads, (2 + 12) * 8);          /* inline reads: exactly the batches pulled, each through the bucket */
  CHECK_NEAR(ts.bytes, (2 + 12) * 8 * 65536.0, 0);
  CHECK_EQ_INT(ts.max_in_flight, 1);
  mlsys_pipe_throttle_destroy(t);
  free_paths(paths, 64);
}

TEST(latency_source_reads_overlap_up_to_p) {
  /* §7.6 #16: read latency 10 ms overlapping a 20 MB/s bucket: the model gives 6.55, 13.1, 20, 20 MB/s for p = 1, 2, 4,
     8 (bench/bench_pipeline.c measures the curve). What holds on any machine: p reads are in flight at most, each
     takes 10 ms, so MB/s ≤ min(p · 6.55, 20); and parallel reads do overlap: with p ≥ 2, at least min(p, 3) of them
     were in flight at once (reads on the CPU workers, as before ARCHITECTURE 29, never exceeded the 2 workers) */
  char *paths[64];
  mlsys_pipe_throttle *t;
  mlsys_pipe_throttle_stats ts;
  static const int P[4] = {1, 2, 4, 8};
  static const double want[4] = {6.5536, 13.1072, 20, 20};
  int i;
  REQUIRE(make_files("lat", 64, 65536, paths) == 0);
  for (i = 0; i < 4; i++) {
    double bps, x;
    REQUIRE_OK(mlsys_pipe_throttle_create(20e6, 65536, 0.010, &t));
    x = run_throttled(paths, 64, t, P[i], 6, 0, &bps, NULL);
    mlsys_pipe_throttle_get_stats(t, &ts);
    mlsys_pipe_throttle_destroy(t);
    printf("  p = %d: %.2f MB/s (model %.2f), %d reads in flight at most\n", P[i], bps / 1e6, want[i], ts.max_in_flight);
    CHECK(x > 0);
    CHECK_MSG(bps / 1e6 <= want[i] * 1.1, "p = %d: %.2f MB/s above the %.2f that latency and bucket allow", P[i], bps / 1e6, want[i]);
    CHECK_MSG(ts.max_in_flight <= P[i], "p = %d: %d reads in flight", P[i], ts.max_in_flight);
    CHECK_MSG(ts.max_in_flight >= (P[i] < 3 ? P[i] : 3), "p = %d: at most %d reads overlapped", P[i], ts.max_in_flight);
    CHECK(ts.reads >= (2 + 6) * 8);
  }
  free_paths(paths, 64);
}

static void cleanup(void) {
  char cmd[300];
  if (g_dir[0] && strncmp(g_dir, "/tmp/mlsys_pipe_storage_", 24) == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd)) {}
  }
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  cleanup();
  return rc;
}
