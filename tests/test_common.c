/* Tests of mlsys_common.h outside JSON and the MILP builder (which have their own files): errors and allocation,
   the RNG, the thread pool, the DAG (topological order, cycles named), CSV, file reading, the progress line. */
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include "tests/test.h"

#include <unistd.h>

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
static void test_log(void *ud, int level, const char *msg) {
  (void)ud;
  (void)level;
  log_calls++;
  snprintf(log_last, sizeof log_last, "%s", msg);
}
TEST(log_hook_filters_by_level) {
  log_calls = 0;
  mlsys_log(MLSYS_LOG_ERROR, "nobody listens");
  CHECK_EQ_INT(log_calls, 0);
  mlsys_set_log(test_log, NULL, MLSYS_LOG_INFO);
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
  CHECK(b - a >= 0.015 && b - a < 1.0);
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

TEST_MAIN()
