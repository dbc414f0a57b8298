/* Tests of mlsys_common.h outside JSON and the MILP builder (which have their own files): errors and allocation,
   the RNG, the thread pool, the DAG (topological order, cycles named), CSV, file reading, the progress line, and the
   JPEG structure check's scan recording on JPEGs written here by libjpeg (the oracle: the scan script libjpeg wrote,
   its restart markers, and libjpeg decoding the first scans of a progressive file put back together). */
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include "tests/test.h"

#include <unistd.h>
#include <jpeglib.h>

TEST(status_strings_and_error_detail) {
  int s;
  for (s = 0; s < MLSYS_ERR_COUNT_; s++) {
    const char *t = mlsys_status_str((mlsys_status)s);
    CHECK(t && *t && strcmp(t, "unknown status") != 0);
  }
  CHECK_STR(mlsys_status_str((mlsys_status)999), "unknown status");
  mlsys_clear_error();
  CHECK_STR(mlsys_last_error(), "");
  CHECK_EQ_INT(mlsys_set_error(MLSYS_ERR_PARSE, "x.json:%d:%d: bad", 3, 7), MLSYS_ERR_PARSE);
  CHECK_STR(mlsys_last_error(), "x.json:3:7: bad");
  CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_prefix_error("graph %s", "g.txt"), MLSYS_ERR_PARSE);
  CHECK_STR(mlsys_last_error(), "graph g.txt: x.json:3:7: bad");
}

static void *err_thread(void *arg) {
  (void)arg;
  mlsys_set_error(MLSYS_ERR_IO, "from the other thread");
  return NULL;
}
TEST(error_detail_is_per_thread) {
  pthread_t th;
  mlsys_set_error(MLSYS_ERR_ARG, "mine");
  REQUIRE(pthread_create(&th, NULL, err_thread, NULL) == 0);
  pthread_join(th, NULL);
  CHECK_STR(mlsys_last_error(), "mine");
  CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_ARG);
}

TEST(allocation_overflow_is_an_error_not_a_crash) {
  void *p = mlsys_alloc(SIZE_MAX / 2, 4);
  CHECK(p == NULL);
  CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_NOMEM);
  CHECK_CONTAINS(mlsys_last_error(), "overflows");
  p = mlsys_realloc_array(NULL, SIZE_MAX / 8, 16);
  CHECK(p == NULL);
  p = mlsys_calloc(10, 8);
  REQUIRE(p != NULL);
  CHECK(((char *)p)[79] == 0);
  mlsys_free(p);
  mlsys_free(NULL);
}

TEST(read_file_and_missing_file) {
  char path[] = "/tmp/mlsys_test_XXXXXX", *data;
  size_t len;
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "hello\0world", 11) == 11);
  close(fd);
  REQUIRE_OK(mlsys_read_file(path, &data, &len));
  CHECK_EQ_INT(len, 11);
  CHECK(memcmp(data, "hello\0world", 11) == 0 && data[11] == 0);
  mlsys_free(data);
  unlink(path);
  CHECK_EQ_INT(mlsys_read_file("/nonexistent/dir/file.json", &data, &len), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "/nonexistent/dir/file.json");
  CHECK(data == NULL);
}

/* Golden values from an independent Python implementation of splitmix64 seeding + xoshiro256** (Blackman & Vigna's
   reference algorithm): the stream must be the same on every machine. */
TEST(rng_matches_reference_streams) {
  static const struct { uint64_t seed, v[4]; } ref[] = {
      {0, {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull, 0x1a5f849d4933e6e0ull, 0x6aa594f1262d2d2cull}},
      {42, {0x15780b2e0c2ec716ull, 0x6104d9866d113a7eull, 0xae17533239e499a1ull, 0xecb8ad4703b360a1ull}},
      {12345678901234567ull, {0x608009d9e142cbeeull, 0x5a3f4c66459aba64ull, 0x3168c368666337f6ull, 0xcc2ba4e8c36f2137ull}},
  };
  size_t i;
  int k;
  for (i = 0; i < sizeof ref / sizeof ref[0]; i++) {
    mlsys_rng r;
    mlsys_rng_seed(&r, ref[i].seed);
    for (k = 0; k < 4; k++) CHECK_MSG(mlsys_rng_u64(&r) == ref[i].v[k], "seed %llu value %d", (unsigned long long)ref[i].seed, k);
  }
}

TEST(rng_ranges_and_distribution) {
  mlsys_rng r;
  long counts[7] = {0};
  double sum = 0, sumsq = 0, chi = 0;
  int i;
  const int N = 700000;
  mlsys_rng_seed(&r, 7);
  for (i = 0; i < N; i++) {
    int v = mlsys_rng_range(&r, 3, 9);
    REQUIRE(v >= 3 && v <= 9);
    counts[v - 3]++;
  }
  for (i = 0; i < 7; i++) chi += (counts[i] - N / 7.0) * (counts[i] - N / 7.0) / (N / 7.0);
  CHECK_MSG(chi < 22.5, "chi-square %.2f over 6 degrees of freedom (p < 0.001 threshold 22.46)", chi);
  for (i = 0; i < 200000; i++) {
    double u = mlsys_rng_uniform(&r), z = mlsys_rng_normal(&r);
    REQUIRE(u >= 0 && u < 1);
    sum += z;
    sumsq += z * z;
  }
  CHECK_NEAR(sum / 200000, 0, 0.01);
  CHECK_NEAR(sumsq / 200000, 1, 0.02);
  CHECK_EQ_INT(mlsys_rng_below(&r, 0), 0);
  CHECK_EQ_INT(mlsys_rng_below(&r, 1), 0);
  CHECK_EQ_INT(mlsys_rng_range(&r, 5, 5), 5);
  CHECK_EQ_INT(mlsys_rng_range(&r, 5, 2), 5);
}

typedef struct { long *out; long calls_per_worker[64]; } pool_ctx;
static void square(void *ctx, long i, int worker) {
  pool_ctx *c = (pool_ctx *)ctx;
  c->out[i] = i * i;
  c->calls_per_worker[worker]++;
}
TEST(thread_pool_parallel_for_matches_serial) {
  mlsys_pool *p;
  pool_ctx c;
  long i, n = 100000, total = 0;
  int w, round;
  memset(&c, 0, sizeof c);
  c.out = (long *)calloc((size_t)n, sizeof(long));
  REQUIRE(c.out != NULL);
  REQUIRE_OK(mlsys_pool_create(4, &p));
  CHECK_EQ_INT(mlsys_pool_size(p), 4);
  for (round = 0; round < 20; round++) {   /* reuse the same pool many times */
    memset(c.out, 0, sizeof(long) * (size_t)n);
    CHECK_OK(mlsys_pool_for(p, n, square, &c));
    for (i = 0; i < n; i++)
      if (c.out[i] != i * i) break;   /* first wrong index, or n */
    CHECK_EQ_INT(i, n);
  }
  for (w = 0; w < 64; w++) total += c.calls_per_worker[w];
  CHECK_EQ_INT(total, 20 * n);
  CHECK_OK(mlsys_pool_for(p, 0, square, &c));
  mlsys_pool_free(p);
  /* NULL pool: serial on the caller */
  memset(&c.calls_per_worker, 0, sizeof c.calls_per_worker);
  CHECK_OK(mlsys_pool_for(NULL, 1000, square, &c));
  CHECK_EQ_INT(c.calls_per_worker[0], 1000);
  CHECK_EQ_INT(mlsys_pool_create(-1, &p), MLSYS_ERR_ARG);
  CHECK(mlsys_ncpus() >= 1);
  free(c.out);
}

TEST(dag_build_csr_and_users_sorted) {
  /* a diamond plus a tail: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4 */
  int src[] = {0, 2, 0, 1, 3}, dst[] = {1, 3, 2, 3, 4}, order[5], v, j;
  const char *names[] = {"in", "left", "right", "join", "out"};
  double cost[] = {1, 2, 3, 4, 5};
  uint64_t size[] = {10, 20, 30, 40, 50};
  mlsys_dag g, h;
  REQUIRE_OK(mlsys_dag_build(&g, 5, 5, src, dst, names, cost, size));
  CHECK_EQ_INT(g.nedges, 5);
  /* predecessors keep the order the edges were given in; successors are ascending */
  CHECK_EQ_INT(g.in_off[4] - g.in_off[3], 2);
  CHECK_EQ_INT(g.in[g.in_off[3]], 2);
  CHECK_EQ_INT(g.in[g.in_off[3] + 1], 1);
  CHECK_EQ_INT(g.out_off[1] - g.out_off[0], 2);
  CHECK_EQ_INT(g.out[g.out_off[0]], 1);
  CHECK_EQ_INT(g.out[g.out_off[0] + 1], 2);
  CHECK(mlsys_dag_has_edge(&g, 2, 3) && !mlsys_dag_has_edge(&g, 3, 2) && !mlsys_dag_has_edge(&g, 9, 1));
  CHECK_EQ_INT(mlsys_dag_find(&g, "join"), 3);
  CHECK_EQ_INT(mlsys_dag_find(&g, "nope"), -1);
  REQUIRE_OK(mlsys_dag_topo_order(&g, order));
  for (v = 0; v < 5; v++) CHECK_EQ_INT(order[v], v);   /* already sorted: ties by smallest id keep it */
  REQUIRE_OK(mlsys_dag_copy(&g, &h));
  CHECK_EQ_INT(h.n, 5);
  CHECK_STR(h.name[4], "out");
  CHECK(h.cost[2] == 3 && h.size[4] == 50);
  for (v = 0; v < 5; v++)
    for (j = g.in_off[v]; j < g.in_off[v + 1]; j++) CHECK_EQ_INT(h.in[j], g.in[j]);
  mlsys_dag_free(&h);
  mlsys_dag_free(&g);
  mlsys_dag_free(&g);   /* freeing twice is safe: the struct is zeroed */
}

TEST(dag_rejects_bad_edges) {
  int src[] = {0, 0}, dst[] = {1, 1}, bad[] = {5};
  const char *names[] = {"a", "b"};
  mlsys_dag g;
  CHECK_EQ_INT(mlsys_dag_build(&g, 2, 2, src, dst, names, NULL, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "duplicate edge a -> b");
  CHECK_EQ_INT(mlsys_dag_build(&g, 2, 1, src, bad, NULL, NULL, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "outside 0..1");
  CHECK_EQ_INT(mlsys_dag_build(&g, -1, 0, NULL, NULL, NULL, NULL, NULL), MLSYS_ERR_ARG);
  REQUIRE_OK(mlsys_dag_build(&g, 0, 0, NULL, NULL, NULL, NULL, NULL));   /* the empty graph is fine */
  CHECK_OK(mlsys_dag_topo_order(&g, NULL));
  mlsys_dag_free(&g);
}

/* A cycle's message names its nodes in edge order and closes it: every consecutive pair must be an edge. */
static void check_cycle_message(const mlsys_dag *g, const char *msg) {
  char buf[1100], *tok, *save = NULL;
  int prev = -1, first = -1, count = 0;
  REQUIRE(strncmp(msg, "cycle: ", 7) == 0);
  snprintf(buf, sizeof buf, "%s", msg + 7);
  for (tok = strtok_r(buf, " ->", &save); tok; tok = strtok_r(NULL, " ->", &save)) {
    int v = mlsys_dag_find(g, tok);
    REQUIRE(v >= 0);
    if (prev >= 0) CHECK_MSG(mlsys_dag_has_edge(g, prev, v), "no edge into %s", tok);
    else first = v;
    prev = v;
    count++;
  }
  CHECK(count >= 2);
  CHECK_EQ_INT(prev, first);
}

TEST(dag_cycles_are_named) {
  const char *names[] = {"input", "conv1", "conv2", "conv3", "out", "loop"};
  mlsys_dag g;
  /* conv1 -> conv2 -> conv3 -> conv1, reachable from input; out hangs off conv3 */
  {
    int src[] = {0, 1, 2, 3, 3}, dst[] = {1, 2, 3, 1, 4};
    REQUIRE_OK(mlsys_dag_build(&g, 5, 5, src, dst, names, NULL, NULL));
    CHECK_EQ_INT(mlsys_dag_topo_order(&g, NULL), MLSYS_ERR_CYCLE);
    CHECK_CONTAINS(mlsys_last_error(), "conv1");
    CHECK_CONTAINS(mlsys_last_error(), "conv2");
    CHECK_CONTAINS(mlsys_last_error(), "conv3");
    check_cycle_message(&g, mlsys_last_error());
    mlsys_dag_free(&g);
  }
  /* a self-loop */
  {
    int src[] = {0, 5}, dst[] = {5, 5};
    REQUIRE_OK(mlsys_dag_build(&g, 6, 2, src, dst, names, NULL, NULL));
    CHECK_EQ_INT(mlsys_dag_topo_order(&g, NULL), MLSYS_ERR_CYCLE);
    CHECK_STR(mlsys_last_error(), "cycle: loop -> loop");
    mlsys_dag_free(&g);
  }
  /* unnamed nodes are named by id */
  {
    int src[] = {1, 2}, dst[] = {2, 1};
    REQUIRE_OK(mlsys_dag_build(&g, 3, 2, src, dst, NULL, NULL, NULL));
    CHECK_EQ_INT(mlsys_dag_topo_order(&g, NULL), MLSYS_ERR_CYCLE);
    CHECK_CONTAINS(mlsys_last_error(), "#1");
    CHECK_CONTAINS(mlsys_last_error(), "#2");
    mlsys_dag_free(&g);
  }
}

/* Property over random graphs: a DAG built from a random permutation of a random topological order gets an order in
   which every edge goes forward; adding one back edge along a path always yields MLSYS_ERR_CYCLE with a valid
   named cycle. */
TEST(dag_topo_order_random_property) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 2024);
  for (trial = 0; trial < 200; trial++) {
    int n = mlsys_rng_range(&r, 2, 40), m = 0, i, j, *perm, *src, *dst, *order, *pos;
    char **names;
    mlsys_dag g;
    perm = (int *)malloc(sizeof(int) * (size_t)n);
    pos = (int *)malloc(sizeof(int) * (size_t)n);
    order = (int *)malloc(sizeof(int) * (size_t)n);
    src = (int *)malloc(sizeof(int) * (size_t)(n * n + 1));
    dst = (int *)malloc(sizeof(int) * (size_t)(n * n + 1));
    names = (char **)malloc(sizeof(char *) * (size_t)n);
    for (i = 0; i < n; i++) {
      perm[i] = i;
      names[i] = (char *)malloc(16);
      snprintf(names[i], 16, "v%d", i);
    }
    for (i = n - 1; i > 0; i--) { j = mlsys_rng_range(&r, 0, i); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    /* edges perm[a] -> perm[b] for a < b, random density; plus a guaranteed path perm[0] -> perm[1] -> ... */
    for (i = 0; i < n; i++)
      for (j = i + 1; j < n; j++)
        if (j == i + 1 || mlsys_rng_uniform(&r) < 0.2) { src[m] = perm[i]; dst[m] = perm[j]; m++; }
    REQUIRE_OK(mlsys_dag_build(&g, n, m, src, dst, (const char *const *)names, NULL, NULL));
    REQUIRE_OK(mlsys_dag_topo_order(&g, order));
    for (i = 0; i < n; i++) pos[order[i]] = i;
    for (i = 0; i < m; i++) CHECK(pos[src[i]] < pos[dst[i]]);
    mlsys_dag_free(&g);
    /* close the path into a cycle */
    src[m] = perm[n - 1];
    dst[m] = perm[0];
    REQUIRE_OK(mlsys_dag_build(&g, n, m + 1, src, dst, (const char *const *)names, NULL, NULL));
    CHECK_EQ_INT(mlsys_dag_topo_order(&g, order), MLSYS_ERR_CYCLE);
    check_cycle_message(&g, mlsys_last_error());
    mlsys_dag_free(&g);
    for (i = 0; i < n; i++) free(names[i]);
    free(names); free(perm); free(pos); free(order); free(src); free(dst);
  }
}

TEST(csv_fields_are_quoted_when_needed) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  REQUIRE(f != NULL);
  mlsys_csv_field(f, "plain");
  fputc(',', f);
  mlsys_csv_field(f, "a,b");
  fputc(',', f);
  mlsys_csv_field(f, "say \"hi\"");
  fputc(',', f);
  mlsys_csv_field(f, "two\nlines");
  fputc(',', f);
  mlsys_csv_field(f, NULL);
  fclose(f);
  CHECK_STR(buf, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",");
  free(buf);
}

TEST(progress_line_is_silent_when_not_a_terminal) {
  /* stderr is redirected to a file: nothing may be written there */
  char path[] = "/tmp/mlsys_progress_XXXXXX";
  int fd = mkstemp(path), saved;
  mlsys_progress p;
  REQUIRE(fd >= 0);
  fflush(stderr);
  saved = dup(2);
  dup2(fd, 2);
  mlsys_progress_begin(&p, "test", 1);
  mlsys_progress_update(&p, "step %d", 1);
  mlsys_progress_end(&p);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK_EQ_INT(lseek(fd, 0, SEEK_END), 0);
  CHECK_EQ_INT(p.enabled, 0);
  close(fd);
  unlink(path);
}

static int log_calls;
static char log_last[256];
static void capture_log(void *ud, int level, const char *msg) {
  (void)ud;
  (void)level;
  log_calls++;
  snprintf(log_last, sizeof log_last, "%s", msg);
}
TEST(log_hook_filters_by_level) {
  log_calls = 0;
  mlsys_log(MLSYS_LOG_ERROR, "nobody listens");
  CHECK_EQ_INT(log_calls, 0);
  mlsys_set_log(capture_log, NULL, MLSYS_LOG_INFO);
  mlsys_log(MLSYS_LOG_INFO, "value %d", 42);
  mlsys_log(MLSYS_LOG_DEBUG, "too chatty");
  CHECK_EQ_INT(log_calls, 1);
  CHECK_STR(log_last, "value 42");
  mlsys_set_log(NULL, NULL, 0);
  mlsys_log(MLSYS_LOG_ERROR, "off again");
  CHECK_EQ_INT(log_calls, 1);
}

TEST(monotonic_timer_advances) {
  double a = mlsys_now(), b;
  { struct timespec ts = {0, 20000000}; nanosleep(&ts, NULL); }
  b = mlsys_now();
  /* nanosleep sleeps at least as long as asked; no upper bound, which would depend on the machine's load */
  CHECK(b - a >= 0.0199);
}

/* CRC-32C: published check values (RFC 3720 B.4), chaining, and the table path equals the hardware path. */
TEST(crc32c_check_values_and_paths) {
  uint8_t buf[4096];
  mlsys_rng r;
  int i;
  CHECK_EQ_INT(mlsys_crc32c(0, "123456789", 9), 0xE3069283u);   /* the published check value */
  CHECK_EQ_INT(mlsys_crc32c(0, "", 0), 0);
  /* RFC 3720 B.4: 32 bytes of zeros → 0x8A9136AA, of 0xFF → 0x62A8AB43 */
  memset(buf, 0, 32);
  CHECK_EQ_INT(mlsys_crc32c(0, buf, 32), 0x8A9136AAu);
  memset(buf, 0xFF, 32);
  CHECK_EQ_INT(mlsys_crc32c(0, buf, 32), 0x62A8AB43u);
  /* chaining, and the table path equals the hardware path at every alignment and length */
  CHECK_EQ_INT(mlsys_crc32c(mlsys_crc32c(0, "12345", 5), "6789", 4), 0xE3069283u);
  mlsys_rng_seed(&r, 7);
  for (i = 0; i < (int)sizeof buf; i++) buf[i] = (uint8_t)mlsys_rng_u64(&r);
  for (i = 0; i < 300; i++) {
    size_t off = (size_t)mlsys_rng_below(&r, 16), n = (size_t)mlsys_rng_below(&r, sizeof buf - 16);
    uint32_t sw = ~mlsys__crc_sw(~0u, buf + off, n);
    CHECK_EQ_INT(mlsys_crc32c(0, buf + off, n), sw);
  }
}

/* ---- JPEG structure (section 8): scan recording ---- */

typedef struct { int ns, comp[4], ss, se, ah, al; } jscan;   /* a scan as libjpeg's script has it */

/* w × h test image (a gradient with some texture) written by libjpeg: ncomp 1 (gray) or 3 (YCbCr 4:2:0), baseline or
   libjpeg's simple progression, restart_interval MCUs per restart interval (0: none). The scan script libjpeg used
   goes to script (≤ 16). Returns a malloc'ed buffer (free()). */
static uint8_t *make_jpeg(int w, int h, int ncomp, int progressive, int restart, size_t *len, jscan *script, int *nscript) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  unsigned char *mem = NULL;
  unsigned long mlen = 0;
  uint8_t *row = (uint8_t *)malloc((size_t)w * ncomp);
  int x, y, k, j;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &mem, &mlen);
  c.image_width = (JDIMENSION)w; c.image_height = (JDIMENSION)h;
  c.input_components = ncomp;
  c.in_color_space = ncomp == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (progressive) jpeg_simple_progression(&c);
  c.restart_interval = (unsigned)restart;
  jpeg_start_compress(&c, TRUE);
  for (y = 0; y < h; y++) {
    JSAMPROW rp = row;
    for (x = 0; x < w; x++)
      for (k = 0; k < ncomp; k++) row[x * ncomp + k] = (uint8_t)((x * 7 + y * 13 + k * 50 + (x * y % 17) * 5) & 255);
    jpeg_write_scanlines(&c, &rp, 1);
  }
  *nscript = 0;
  if (c.scan_info) {
    for (j = 0; j < c.num_scans && j < 16; j++) {
      const jpeg_scan_info *si = &c.scan_info[j];
      script[j].ns = si->comps_in_scan;
      for (k = 0; k < si->comps_in_scan; k++) script[j].comp[k] = c.comp_info[si->component_index[k]].component_id;
      script[j].ss = si->Ss; script[j].se = si->Se; script[j].ah = si->Ah; script[j].al = si->Al;
    }
    *nscript = c.num_scans;
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  *len = mlen;
  return mem;
}

/* libjpeg decodes b[0, n) without an error or a warning; its size */
static int libjpeg_decodes(const uint8_t *b, size_t n, int *w, int *h) {
  struct jpeg_decompress_struct d;
  struct jpeg_error_mgr err;
  JSAMPLE *row;
  d.err = jpeg_std_error(&err);
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, b, (unsigned long)n);
  jpeg_read_header(&d, TRUE);
  jpeg_start_decompress(&d);
  row = (JSAMPLE *)malloc((size_t)d.output_width * d.output_components);
  while (d.output_scanline < d.output_height) jpeg_read_scanlines(&d, &row, 1);
  jpeg_finish_decompress(&d);
  *w = (int)d.output_width; *h = (int)d.output_height;
  free(row);
  jpeg_destroy_decompress(&d);
  return err.num_warnings == 0;
}

/* [a, b) of buf holds only complete marker segments (and fill bytes) of the given marker code */
static int only_segments(const uint8_t *buf, size_t a, size_t b, int code) {
  while (a < b) {
    size_t len;
    if (buf[a] != 0xFF) return 0;
    while (a < b && buf[a] == 0xFF) a++;
    if (a + 3 > b || buf[a] != code) return 0;
    len = (size_t)buf[a + 1] << 8 | buf[a + 2];
    a += 1 + len;
  }
  return a == b;
}

TEST(jpeg_check_baseline_one_scan) {
  jscan script[16];
  int nscript, i, w, h;
  size_t n;
  uint8_t *b = make_jpeg(64, 48, 3, 0, 0, &n, script, &nscript);
  mlsys_jpeg_info in;
  mlsys_jpeg_scan sc[4];
  REQUIRE(b);
  CHECK_EQ_INT(mlsys_image_sniff(b, n), MLSYS_IMG_JPEG);
  CHECK_STR(mlsys_image_format_name(MLSYS_IMG_JPEG), "JPEG");
  REQUIRE_OK(mlsys_jpeg_check(b, n, &in, sc, 4));
  CHECK_EQ_INT(in.width, 64); CHECK_EQ_INT(in.height, 48); CHECK_EQ_INT(in.components, 3);
  CHECK_EQ_INT(in.sof, 0xC0); CHECK_EQ_INT(in.precision, 8); CHECK_EQ_INT(in.adobe_transform, -1);
  CHECK_EQ_INT(in.nscans, 1);
  CHECK_EQ_INT(in.eoi, n - 2);
  CHECK_EQ_INT(in.first_sos, sc[0].sos);
  CHECK_EQ_INT(sc[0].end, in.eoi);
  CHECK_EQ_INT(in.last_scan_end, in.eoi);
  CHECK(b[sc[0].sos] == 0xFF && b[sc[0].sos + 1] == 0xDA);
  /* one interleaved scan of the three components (libjpeg's ids 1, 2, 3), full spectrum, no approximation */
  CHECK_EQ_INT(sc[0].ns, 3);
  for (i = 0; i < 3; i++) CHECK_EQ_INT(sc[0].comp[i], i + 1);
  CHECK_EQ_INT(sc[0].ss, 0); CHECK_EQ_INT(sc[0].se, 63); CHECK_EQ_INT(sc[0].ah, 0); CHECK_EQ_INT(sc[0].al, 0);
  /* info and scans are optional; the same walk without them */
  CHECK_OK(mlsys_jpeg_check(b, n, NULL, NULL, 0));
  CHECK_OK(mlsys_jpeg_check(b, n, NULL, NULL, 1));
  CHECK(libjpeg_decodes(b, n, &w, &h) && w == 64 && h == 48);
  free(b);
}

TEST(jpeg_check_progressive_scans_match_libjpegs_script) {
  int ncomp;
  for (ncomp = 1; ncomp <= 3; ncomp += 2) {
    jscan script[16];
    int nscript, j, k, w, h;
    size_t n, off;
    uint8_t *b = make_jpeg(64, 48, ncomp, 1, 0, &n, script, &nscript), *re;
    mlsys_jpeg_info in;
    mlsys_jpeg_scan sc[16];
    REQUIRE(b);
    REQUIRE_OK(mlsys_jpeg_check(b, n, &in, sc, 16));
    CHECK_EQ_INT(in.sof, 0xC2);
    CHECK_EQ_INT(in.nscans, ncomp == 3 ? 10 : 6);   /* jpeg_simple_progression: 10 scans for YCbCr, 6 for gray */
    CHECK_EQ_INT(in.nscans, nscript);
    /* the first scan is the DC first pass with one bit of point transform */
    CHECK_EQ_INT(sc[0].ss, 0); CHECK_EQ_INT(sc[0].se, 0); CHECK_EQ_INT(sc[0].ah, 0); CHECK_EQ_INT(sc[0].al, 1);
    CHECK_EQ_INT(sc[0].ns, ncomp);
    for (j = 0; j < in.nscans && j < nscript; j++) {
      CHECK_MSG(sc[j].ns == script[j].ns && sc[j].ss == script[j].ss && sc[j].se == script[j].se && sc[j].ah == script[j].ah &&
                sc[j].al == script[j].al, "gray %d scan %d: ns %d Ss %d Se %d Ah %d Al %d; libjpeg wrote %d %d %d %d %d", ncomp == 1, j,
                sc[j].ns, sc[j].ss, sc[j].se, sc[j].ah, sc[j].al, script[j].ns, script[j].ss, script[j].se, script[j].ah, script[j].al);
      for (k = 0; k < sc[j].ns && k < 4; k++) CHECK_EQ_INT(sc[j].comp[k], script[j].comp[k]);
      CHECK(b[sc[j].sos] == 0xFF && b[sc[j].sos + 1] == 0xDA);
      CHECK(sc[j].sos < sc[j].end);
      if (j + 1 < in.nscans) {
        /* between two scans only marker segments: libjpeg writes each progressive scan's optimised DHT before it */
        CHECK(sc[j].end <= sc[j + 1].sos);
        CHECK_MSG(only_segments(b, sc[j].end, sc[j + 1].sos, 0xC4), "scan %d: bytes [%zu, %zu) are not DHT segments", j, sc[j].end,
                  sc[j + 1].sos);
      }
    }
    CHECK_EQ_INT(in.first_sos, sc[0].sos);
    CHECK_EQ_INT(in.last_scan_end, sc[in.nscans - 1].end);
    CHECK_EQ_INT(in.last_scan_end, in.eoi);   /* libjpeg writes EOI right after the last scan */
    CHECK_EQ_INT(in.eoi, n - 2);
    /* header ‖ parts ‖ EOI is the file, where part j runs from the end of scan j − 1 (the first from first_sos) to the
       end of scan j (PCR's split, spec pcr.md §3.2) */
    re = (uint8_t *)malloc(n);
    memcpy(re, b, in.first_sos);
    off = in.first_sos;
    for (j = 0; j < in.nscans; j++) {
      size_t a = j ? sc[j - 1].end : in.first_sos;
      memcpy(re + off, b + a, sc[j].end - a);
      off += sc[j].end - a;
    }
    memcpy(re + off, b + in.last_scan_end, in.eoi + 2 - in.last_scan_end);
    off += in.eoi + 2 - in.last_scan_end;
    CHECK_EQ_INT(off, n);
    CHECK(memcmp(re, b, n) == 0);
    /* the first k parts and EOI are a JPEG of their own: the check sees k scans, libjpeg decodes it (PCR's premise) */
    for (k = 1; k <= in.nscans; k += 3) {
      mlsys_jpeg_info ik;
      size_t m = sc[k - 1].end;
      memcpy(re, b, m);
      re[m] = 0xFF; re[m + 1] = 0xD9;
      CHECK_OK(mlsys_jpeg_check(re, m + 2, &ik, NULL, 0));
      CHECK_EQ_INT(ik.nscans, k);
      CHECK_MSG(libjpeg_decodes(re, m + 2, &w, &h) && w == 64 && h == 48, "gray %d: the first %d scans do not decode", ncomp == 1, k);
    }
    free(re);
    free(b);
  }
}

TEST(jpeg_check_restart_markers_stay_inside_the_scan) {
  jscan script[16];
  int nscript, rst = 0;
  size_t n, i;
  uint8_t *b = make_jpeg(64, 48, 3, 0, 1, &n, script, &nscript);   /* a restart interval of one MCU */
  mlsys_jpeg_info in;
  mlsys_jpeg_scan sc[2];
  REQUIRE(b);
  REQUIRE_OK(mlsys_jpeg_check(b, n, &in, sc, 2));
  CHECK_EQ_INT(in.nscans, 1);
  CHECK_EQ_INT(sc[0].end, in.eoi);
  /* 4:2:0 MCUs are 16 × 16: 4 × 3 of them, so 11 RSTn markers between them, all inside the scan */
  for (i = sc[0].sos + 2; i + 1 < sc[0].end; i++) rst += b[i] == 0xFF && b[i + 1] >= 0xD0 && b[i + 1] <= 0xD7;
  CHECK_EQ_INT(rst, 11);
  free(b);
}

TEST(jpeg_check_fill_bytes_belong_to_the_next_marker) {
  jscan script[16];
  int nscript;
  size_t n, at;
  uint8_t *b = make_jpeg(64, 48, 3, 1, 0, &n, script, &nscript), *f;
  mlsys_jpeg_info in, fi;
  mlsys_jpeg_scan sc[16], fs[16];
  REQUIRE(b);
  REQUIRE_OK(mlsys_jpeg_check(b, n, &in, sc, 16));
  f = (uint8_t *)malloc(n + 4);
  /* FF FF before the marker after scan 0's data (its next DHT): scan 0 still ends where it did, at the first 0xFF */
  at = sc[0].end;
  memcpy(f, b, at); f[at] = f[at + 1] = 0xFF; memcpy(f + at + 2, b + at, n - at);
  REQUIRE_OK(mlsys_jpeg_check(f, n + 2, &fi, fs, 16));
  CHECK_EQ_INT(fi.nscans, in.nscans);
  CHECK_EQ_INT(fs[0].end, at);
  CHECK_EQ_INT(fs[1].sos, sc[1].sos + 2);
  CHECK_EQ_INT(fi.eoi, in.eoi + 2);
  CHECK_EQ_INT(fi.last_scan_end, fi.eoi);
  /* and FF FF before EOI: the last scan ends at the first fill byte, EOI two bytes later */
  at = in.eoi;
  memcpy(f, b, at); f[at] = f[at + 1] = 0xFF; memcpy(f + at + 2, b + at, n - at);
  REQUIRE_OK(mlsys_jpeg_check(f, n + 2, &fi, fs, 16));
  CHECK_EQ_INT(fi.last_scan_end, in.eoi);
  CHECK_EQ_INT(fs[fi.nscans - 1].end, in.eoi);
  CHECK_EQ_INT(fi.eoi, in.eoi + 2);
  free(f);
  free(b);
}

TEST(jpeg_check_scan_limit_and_arguments) {
  jscan script[16];
  int nscript;
  size_t n;
  uint8_t *b = make_jpeg(64, 48, 3, 1, 0, &n, script, &nscript);
  mlsys_jpeg_info in;
  mlsys_jpeg_scan sc[16];
  REQUIRE(b);
  CHECK_EQ_INT(mlsys_jpeg_check(b, n, &in, sc, 5), MLSYS_ERR_TOO_BIG);   /* 10 scans */
  CHECK_CONTAINS(mlsys_last_error(), "more than 5 scans");
  CHECK_EQ_INT(mlsys_jpeg_check(b, n, NULL, NULL, 5), MLSYS_ERR_TOO_BIG);   /* without a scans array too */
  CHECK_OK(mlsys_jpeg_check(b, n, &in, sc, 10));                            /* exactly enough room */
  CHECK_EQ_INT(mlsys_jpeg_check(b, n, NULL, NULL, -1), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_jpeg_check(b, n, NULL, sc, 0), MLSYS_ERR_ARG);        /* an array without its size */
  CHECK_EQ_INT(mlsys_jpeg_check(NULL, 5, NULL, NULL, 0), MLSYS_ERR_ARG);
  /* the structure errors are the pipeline's (tests/test_pipe_image.c checks their wording on damaged files) */
  CHECK_EQ_INT(mlsys_jpeg_check(b, n - 2, NULL, sc, 16), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated: no EOI marker after the scan data");
  CHECK_EQ_INT(mlsys_jpeg_check((const uint8_t *)"\x89PNG\r\n\x1a\n", 8, NULL, NULL, 0), MLSYS_ERR_PARSE);
  CHECK_STR(mlsys_last_error(), "not a JPEG: PNG data");
  free(b);
}

TEST_MAIN()
