/* tests/test_pipe_analysis.c — Plumber's analysis layer (mlsys_pipeline.h) against the expected answers of spec
   §7.6, cases 1–9: the worked rates example of §3.1, the CPU LP P1 and P2 (closed form = lp_solve), the disk bound,
   the piecewise fit, the cache rule with the random closure, prefetch sizing, the size estimator (exact cases and
   its sampling error over 10^4 seeded draws), tf.data AUTOTUNE's wait time; plus malformed snapshots. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"

static int rel(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)); }

/* §3.1: range → map_A(p=2) → map_B(p=1) → batch(8) → prefetch(2), T = 10 s. Indices: 0 prefetch (root), 1 batch,
   2 map_B, 3 map_A, 4 range. extra_C: add a sequential map_C (index 5) with τ = 12 s between map_B and batch. */
static void p1(mlsys_pipe_op *op, mlsys_pipe_snapshot *s, int extra_c) {
  int *nops = &s->nops;
  s->op = op; s->seconds = 10; s->process_cpu_s = 0;
  memset(op, 0, sizeof(mlsys_pipe_op) * 6);
  op[0].kind = MLSYS_PIPE_OP_PREFETCH; op[0].parent = -1; op[0].produced = 500; op[0].consumed = 500; strcpy(op[0].name, "prefetch");
  op[1].kind = MLSYS_PIPE_OP_BATCH; op[1].parent = 0; op[1].produced = 500; op[1].consumed = 4000; op[1].cpu_s = 0.05; op[1].count = 8;
  strcpy(op[1].name, "batch");
  op[2].kind = MLSYS_PIPE_OP_MAP; op[2].parent = extra_c ? 5 : 1; op[2].produced = 4000; op[2].consumed = 4000; op[2].cpu_s = 2.0;
  op[2].parallel = 1; op[2].parallelism = 1; strcpy(op[2].name, "map_B");
  op[3].kind = MLSYS_PIPE_OP_MAP; op[3].parent = 2; op[3].produced = 4000; op[3].consumed = 4000; op[3].cpu_s = 8.0;
  op[3].parallel = 1; op[3].parallelism = 2; strcpy(op[3].name, "map_A");
  op[4].kind = MLSYS_PIPE_OP_RANGE; op[4].parent = 3; op[4].produced = 4000; op[4].cpu_s = 0.04; strcpy(op[4].name, "range");
  *nops = 5;
  if (extra_c) {
    op[5].kind = MLSYS_PIPE_OP_MAP; op[5].parent = 1; op[5].produced = 4000; op[5].consumed = 4000; op[5].cpu_s = 12.0;
    strcpy(op[5].name, "map_C");
    *nops = 6;
  }
}

TEST(rates_worked_example) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  static const double V[5] = {1, 1, 8, 8, 8}, D[5] = {0, 1e-4, 0.004, 0.016, 8e-5}, R[5] = {0, 10000, 250, 62.5, 12500},
                      U[5] = {0, 0.005, 0.2, 0.8, 0.004};
  int i;
  memset(&m, 0, sizeof m);
  p1(op, &s, 0);
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  for (i = 0; i < 5; i++) {
    CHECK_MSG(rel(a.op[i].V, V[i], 1e-12), "V[%d] %.17g", i, a.op[i].V);
    CHECK_MSG(rel(a.op[i].u, U[i], 1e-12) || (U[i] == 0 && a.op[i].u == 0), "u[%d] %.17g", i, a.op[i].u);
    CHECK_MSG(rel(a.op[i].M, 500, 1e-12), "M[%d] %.17g", i, a.op[i].M);
    if (i == 0) { CHECK(!a.op[0].in_lp); CHECK(a.op[0].R >= MLSYS_PIPE_INF); continue; }   /* τ = 0: excluded */
    CHECK_MSG(rel(a.op[i].D, D[i], 1e-12), "D[%d] %.17g", i, a.op[i].D);
    CHECK_MSG(rel(a.op[i].R, R[i], 1e-12), "R[%d] %.17g", i, a.op[i].R);
  }
  CHECK(rel(a.op[3].Rp, 125, 1e-12));
  CHECK_EQ_INT(a.bottleneck, 3);   /* map_A */
  CHECK(rel(a.sumD, 0.02018, 1e-12));
  CHECK(rel(a.N, 1.009, 1e-12));
  CHECK(rel(a.x_obs, 50, 1e-12));
  mlsys_pipe_analysis_free(&a);
}

TEST(lp_p1_closed_form_and_lpsolve) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  mlsys_pipe_plan cf, lp;
  static const double theta[5] = {0, 0.0099108, 0.396432, 1.58573, 0.00792864};
  static const int par[5] = {1, 1, 1, 2, 1};
  int i;
  memset(&m, 0, sizeof m);
  m.cores = 2;
  p1(op, &s, 0);
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_CLOSED_FORM, &cf));
  REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_LPSOLVE, &lp));
  CHECK_MSG(rel(cf.x_cpu, 99.10802775, 1e-9), "X* %.10f", cf.x_cpu);
  CHECK_MSG(rel(lp.x_cpu, cf.x_cpu, 1e-6), "lp_solve %.10f vs closed form %.10f", lp.x_cpu, cf.x_cpu);
  for (i = 0; i < 5; i++) {
    CHECK_MSG(fabs(cf.theta[i] - theta[i]) <= 1e-5 * fmax(theta[i], 1e-3), "theta[%d] %.8f", i, cf.theta[i]);
    CHECK(rel(lp.theta[i], cf.theta[i], 1e-6) || cf.theta[i] == lp.theta[i]);
    CHECK_EQ_INT(cf.parallelism[i], par[i]);
  }
  CHECK_EQ_INT(cf.binding_kind, MLSYS_PIPE_BIND_CPU);
  CHECK(fabs(cf.slack_cores) < 1e-9);
  mlsys_pipe_plan_free(&cf); mlsys_pipe_plan_free(&lp);
  mlsys_pipe_analysis_free(&a);
}

TEST(lp_p2_sequential_cap) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  mlsys_pipe_plan cf, lp;
  double sum = 0;
  int i;
  memset(&m, 0, sizeof m);
  m.cores = 2;
  p1(op, &s, 1);
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  CHECK(rel(a.op[5].D, 0.024, 1e-12));
  CHECK(rel(2 / a.sumD, 45.2694, 1e-5));
  REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_CLOSED_FORM, &cf));
  REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_LPSOLVE, &lp));
  CHECK(rel(cf.x_cpu, 41.66667, 1e-6));
  CHECK(rel(lp.x_cpu, cf.x_cpu, 1e-6));
  CHECK(rel(cf.theta[5], 1, 1e-9));
  CHECK(rel(cf.theta[3], 0.666667, 1e-5));
  CHECK(rel(cf.theta[2], 0.166667, 1e-5));
  CHECK(rel(cf.theta[4], 0.00333333, 1e-5));
  CHECK(rel(cf.theta[1], 0.00416667, 1e-5));
  for (i = 0; i < 6; i++) sum += cf.theta[i];
  CHECK(rel(sum, 1.84083, 1e-5));
  CHECK(rel(cf.slack_cores, 0.15917, 1e-4));
  CHECK_EQ_INT(cf.binding_kind, MLSYS_PIPE_BIND_SEQ);
  CHECK_EQ_INT(cf.binding_op, 5);
  mlsys_pipe_plan_free(&cf); mlsys_pipe_plan_free(&lp);
  mlsys_pipe_analysis_free(&a);
}

/* property: closed form = lp_solve on random pipelines (chains of 2..8 operators, random rates and caps) */
TEST(lp_closed_form_equals_lpsolve_random) {
  mlsys_rng rng;
  int trial;
  mlsys_rng_seed(&rng, 77);
  for (trial = 0; trial < 200; trial++) {
    mlsys_pipe_op op[8];
    mlsys_pipe_snapshot s;
    mlsys_pipe_machine m;
    mlsys_pipe_analysis a;
    mlsys_pipe_plan cf, lp;
    int n = 2 + (int)mlsys_rng_below(&rng, 7), i;
    memset(op, 0, sizeof op);
    for (i = 0; i < n; i++) {
      op[i].kind = i == n - 1 ? MLSYS_PIPE_OP_RANGE : MLSYS_PIPE_OP_MAP;
      op[i].parent = i - 1;
      op[i].produced = 1000; op[i].consumed = i == n - 1 ? 0 : 1000;
      op[i].cpu_s = mlsys_rng_uniform(&rng) < 0.1 ? 0 : 0.01 + 5 * mlsys_rng_uniform(&rng);
      op[i].parallel = mlsys_rng_below(&rng, 2) && i != n - 1;
      op[i].parallelism = 1;
    }
    s.nops = n; s.op = op; s.seconds = 5; s.process_cpu_s = 0;
    memset(&m, 0, sizeof m);
    m.cores = 1 + 7 * mlsys_rng_uniform(&rng);
    REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
    if (!(a.sumD > 0)) { mlsys_pipe_analysis_free(&a); continue; }
    REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_CLOSED_FORM, &cf));
    REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_LPSOLVE, &lp));
    CHECK_MSG(rel(cf.x_cpu, lp.x_cpu, 1e-6), "trial %d: closed form %.9g, lp_solve %.9g", trial, cf.x_cpu, lp.x_cpu);
    CHECK(cf.slack_cores >= -1e-9);
    mlsys_pipe_plan_free(&cf); mlsys_pipe_plan_free(&lp);
    mlsys_pipe_analysis_free(&a);
  }
}

TEST(disk_bound) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  mlsys_pipe_plan p;
  memset(&m, 0, sizeof m);
  m.cores = 2; m.disk_bytes_per_s = 4e6;
  p1(op, &s, 0);
  op[4].kind = MLSYS_PIPE_OP_RECORDS;          /* fixed 65 536-byte records */
  op[4].disk_bytes = 4000.0 * 65536;
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  CHECK(rel(a.beta, 524288, 1e-12));
  CHECK(rel(a.x_disk, 7.62939453125, 1e-12));
  REQUIRE_OK(mlsys_pipe_plan_cpu(&s, &a, &m, MLSYS_PIPE_LP_CLOSED_FORM, &p));
  CHECK(rel(p.x_cpu, 99.10802775, 1e-9));
  CHECK(rel(p.x_pred, 7.62939453125, 1e-12));
  CHECK_EQ_INT(p.binding_kind, MLSYS_PIPE_BIND_DISK);
  mlsys_pipe_plan_free(&p);
  mlsys_pipe_analysis_free(&a);
}

TEST(piecewise_fit) {
  static const double x[6] = {1, 2, 4, 8, 16, 32}, y[6] = {6.55, 13.1, 20, 20, 20, 20};
  double f[5];
  int split, i, minp = -1;
  REQUIRE_OK(mlsys_pipe_fit_piecewise(x, y, 6, f, &split));
  CHECK_EQ_INT(split, 2);
  CHECK_NEAR(f[4], 2, 0);
  CHECK_NEAR(f[0], 6.55, 1e-12);
  CHECK_NEAR(f[1], 0, 1e-12);
  CHECK_NEAR(f[2], 0, 1e-12);
  CHECK_NEAR(f[3], 20, 1e-12);
  for (i = 0; i < 6 && minp < 0; i++) if (y[i] >= 0.95 * 20) minp = (int)x[i];
  CHECK_EQ_INT(minp, 4);
  /* bad input */
  CHECK(mlsys_pipe_fit_piecewise(x, y, 2, f, &split) == MLSYS_ERR_ARG);
  {
    double xb[3] = {1, 1, 2};
    CHECK(mlsys_pipe_fit_piecewise(xb, y, 3, f, &split) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "increase");
  }
}

/* files (1000, 100 observed, 65 536 B) → decode map (262 144 B) → random crop → batch(32) */
static void cache_pipe(mlsys_pipe_op *op, int *n, int random_below_decode) {
  int k = 0;
  memset(op, 0, sizeof(mlsys_pipe_op) * 5);
  op[0].kind = MLSYS_PIPE_OP_BATCH; op[0].parent = -1; op[0].produced = 3; op[0].consumed = 96; op[0].count = 32;
  op[0].bytes_produced = 3.0 * 32 * 150528; op[0].cpu_s = 0.01;
  op[1].kind = MLSYS_PIPE_OP_MAP; op[1].parent = 0; op[1].produced = 96; op[1].consumed = 96; op[1].rng_draws = 192;
  op[1].bytes_produced = 96.0 * 150528; op[1].cpu_s = 0.1; strcpy(op[1].name, "crop");
  op[2].kind = MLSYS_PIPE_OP_MAP; op[2].parent = 1; op[2].produced = 100; op[2].consumed = 100; op[2].bytes_produced = 100.0 * 262144;
  op[2].cpu_s = 1.0; strcpy(op[2].name, "decode");
  k = 3;
  if (random_below_decode) {
    op[3].kind = MLSYS_PIPE_OP_MAP; op[3].parent = 2; op[3].produced = 100; op[3].consumed = 100; op[3].declares_random = 1;
    op[3].bytes_produced = 100.0 * 65536; op[3].cpu_s = 0.01; strcpy(op[3].name, "jitter");
    k = 4;
  }
  op[k].kind = MLSYS_PIPE_OP_FILES; op[k].parent = k - 1; op[k].produced = 100; op[k].bytes_produced = 100.0 * 65536;
  op[k].files_total = 1000; op[k].files_observed = 100; op[k].observed_bytes = 100.0 * 65536; op[k].records_per_file = 1;
  op[k].disk_bytes = 100.0 * 65536; op[k].cpu_s = 0.02; strcpy(op[k].name, "files");
  *n = k + 1;
}

TEST(cache_rule_and_random_closure) {
  mlsys_pipe_op op[5];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  mlsys_pipe_plan p;
  memset(&m, 0, sizeof m);
  memset(&p, 0, sizeof p);
  cache_pipe(op, &s.nops, 0);
  s.op = op; s.seconds = 1; s.process_cpu_s = 0;
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  CHECK(rel(a.op[3].size_bytes, 65536000, 1e-12));
  CHECK(rel(a.op[2].size_bytes, 262144000, 1e-12));
  CHECK(a.op[1].size_bytes >= MLSYS_PIPE_INF && a.op[1].uncacheable);
  CHECK(a.op[0].size_bytes >= MLSYS_PIPE_INF && a.op[0].uncacheable);
  m.mem_free_bytes = 200.0 * 1048576;   /* budget 188 743 680 */
  REQUIRE_OK(mlsys_pipe_plan_cache(&s, &a, &m, &p));
  CHECK_EQ_INT(p.cache_after, 3);       /* after the file source */
  m.mem_free_bytes = 400.0 * 1048576;   /* budget 377 487 360 */
  REQUIRE_OK(mlsys_pipe_plan_cache(&s, &a, &m, &p));
  CHECK_EQ_INT(p.cache_after, 2);       /* after decode */
  m.mem_free_bytes = 10.0 * 1048576;
  REQUIRE_OK(mlsys_pipe_plan_cache(&s, &a, &m, &p));
  CHECK_EQ_INT(p.cache_after, -1);      /* nothing fits */
  mlsys_pipe_analysis_free(&a);
  /* a random map below decode: only the source may be cached */
  cache_pipe(op, &s.nops, 1);
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  m.mem_free_bytes = 400.0 * 1048576;
  REQUIRE_OK(mlsys_pipe_plan_cache(&s, &a, &m, &p));
  CHECK_EQ_INT(p.cache_after, 4);
  CHECK(a.op[2].uncacheable && a.op[3].uncacheable && !a.op[4].uncacheable);
  mlsys_pipe_analysis_free(&a);
}

TEST(prefetch_rule) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_machine m;
  mlsys_pipe_analysis a;
  mlsys_pipe_plan p;
  memset(&m, 0, sizeof m);
  memset(&p, 0, sizeof p);
  p1(op, &s, 0);
  REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
  CHECK(rel(a.Nstar, 2.5225, 1e-12));
  REQUIRE_OK(mlsys_pipe_plan_prefetch(&s, &a, &p));
  CHECK_EQ_INT((int)p.prefetch, 2);
  CHECK_EQ_INT(p.prefetch_set, 1);
  mlsys_pipe_analysis_free(&a);
}

TEST(size_estimator) {
  double sizes[1000], obs = 0, sum = 0, sq = 0;
  int i, t, idx[1000];
  mlsys_rng rng;
  for (i = 0; i < 1000; i++) sizes[i] = i % 2 ? 3000 : 1000;
  for (i = 0; i < 100; i++) obs += sizes[i];
  CHECK_NEAR(mlsys_pipe_estimate_size(obs, 100, 1000), 2e6, 0);
  for (obs = 0, i = 0; i < 200; i += 2) obs += sizes[i];
  CHECK_NEAR(mlsys_pipe_estimate_size(obs, 100, 1000), 1e6, 0);   /* the bias of a non-random sample */
  CHECK(mlsys_pipe_estimate_size(1, 0, 1000) < 0);
  mlsys_rng_seed(&rng, 8);
  for (t = 0; t < 10000; t++) {
    double e;
    for (i = 0; i < 1000; i++) idx[i] = i;
    for (obs = 0, i = 0; i < 100; i++) {   /* partial Fisher–Yates: 100 files without replacement */
      int j = i + (int)mlsys_rng_below(&rng, (uint64_t)(1000 - i)), tmp = idx[i];
      idx[i] = idx[j]; idx[j] = tmp;
      obs += sizes[idx[i]];
    }
    e = mlsys_pipe_estimate_size(obs, 100, 1000) / 2e6 - 1;
    sum += e; sq += e * e;
  }
  {
    double mean = sum / 10000, sd = sqrt(sq / 10000 - mean * mean);
    CHECK_MSG(fabs(sd - 0.0474) <= 0.005, "relative-error std %.4f (expected 0.0474)", sd);
    CHECK(fabs(mean) < 0.002);   /* unbiased */
  }
}

TEST(autotune_wait_time) {
  CHECK_NEAR(mlsys_pipe_autotune_wait_time(2, 1, 1), 4.0 / 3.0, 1e-12);
  CHECK_NEAR(mlsys_pipe_autotune_wait_time(1, 1, 3), 0.25, 1e-12);
  CHECK_NEAR(mlsys_pipe_autotune_wait_time(0, 1, 3), 0, 0);
  CHECK_NEAR(mlsys_pipe_autotune_wait_time(2, 0, 3), 2, 0);
}

TEST(bad_snapshots) {
  mlsys_pipe_op op[6];
  mlsys_pipe_snapshot s;
  mlsys_pipe_analysis a;
  p1(op, &s, 0);
  op[1].parent = -1;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "both roots");
  p1(op, &s, 0);
  op[0].parent = 4;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no root");
  p1(op, &s, 0);
  op[2].parent = 9;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "parent 9");
  p1(op, &s, 0);
  op[3].cpu_s = -1;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "map_A");
  p1(op, &s, 0);
  s.seconds = 0;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  /* a cycle below the root: 3 → 2 → 3 */
  p1(op, &s, 0);
  s.seconds = 10;
  op[2].parent = 3;
  CHECK(mlsys_pipe_analyze(&s, NULL, &a) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not connected");
}

/* TFRecord (spec §7.6 case 10): the framing of TensorFlow's record files. The mask is checked against its formula
   on CRC-32C's check value; records written here read back byte-identically; every kind of damage is named. */
TEST(tfrecord_roundtrip_and_damage) {
  char *buf = NULL;
  size_t blen = 0, off = 0;
  FILE *f = open_memstream(&buf, &blen);
  mlsys_rng rng;
  uint8_t payload[3][300];
  uint64_t lens[3] = {0, 1, 300}, dlen;
  const uint8_t *data;
  int i, end, k;
  REQUIRE(f != NULL);
  CHECK_EQ_INT(mlsys_crc32c(0, "123456789", 9), 0xE3069283u);
  CHECK_EQ_INT(mlsys_pipe_tfrecord_mask(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  mlsys_rng_seed(&rng, 3);
  for (i = 0; i < 3; i++) {
    for (k = 0; k < 300; k++) payload[i][k] = (uint8_t)mlsys_rng_u64(&rng);
    CHECK_OK(mlsys_pipe_tfrecord_write(f, payload[i], lens[i]));
  }
  fclose(f);
  CHECK_EQ_INT((int)blen, 3 * 16 + 0 + 1 + 300);
  for (i = 0; i < 3; i++) {
    REQUIRE_OK(mlsys_pipe_tfrecord_next((const uint8_t *)buf, blen, &off, &data, &dlen, 0, &end));
    CHECK(!end && dlen == lens[i] && (dlen == 0 || memcmp(data, payload[i], (size_t)dlen) == 0));
  }
  REQUIRE_OK(mlsys_pipe_tfrecord_next((const uint8_t *)buf, blen, &off, &data, &dlen, 0, &end));
  CHECK(end);
  /* damage: a flipped data byte, a flipped length byte, truncations */
  {
    uint8_t *b = (uint8_t *)buf;
    off = 0; b[16 + 17 + 12 + 5] ^= 1;   /* inside the third record's data */
    CHECK_OK(mlsys_pipe_tfrecord_next(b, blen, &off, &data, &dlen, 0, &end));
    CHECK_OK(mlsys_pipe_tfrecord_next(b, blen, &off, &data, &dlen, 0, &end));
    CHECK(mlsys_pipe_tfrecord_next(b, blen, &off, &data, &dlen, 0, &end) == MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "data CRC");
    CHECK_CONTAINS(mlsys_last_error(), "at byte 33");
    CHECK_OK(mlsys_pipe_tfrecord_next(b, blen, &off, &data, &dlen, 1, &end));   /* skip_crc: framing only */
    b[16 + 17 + 12 + 5] ^= 1;
    off = 0; b[0] ^= 0x40;
    CHECK(mlsys_pipe_tfrecord_next(b, blen, &off, &data, &dlen, 0, &end) == MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "length CRC");
    b[0] ^= 0x40;
    off = 0;
    CHECK(mlsys_pipe_tfrecord_next(b, 10, &off, &data, &dlen, 0, &end) == MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "truncated header");
    off = 33;
    CHECK(mlsys_pipe_tfrecord_next(b, blen - 2, &off, &data, &dlen, 0, &end) == MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "truncated record");
  }
  free(buf);
}

/* The same record written by an independent implementation (Python, bit-serial CRC; the file in the fuzz corpus,
   made by the script in its README) equals ours byte for byte. */
TEST(tfrecord_matches_independent_writer) {
  char *mine = NULL, *theirs = NULL;
  size_t ml = 0, tl = 0;
  uint8_t d[256];
  int i;
  FILE *f = open_memstream(&mine, &ml);
  REQUIRE(f != NULL);
  for (i = 0; i < 256; i++) d[i] = (uint8_t)i;
  CHECK_OK(mlsys_pipe_tfrecord_write(f, d, 256));
  fclose(f);
  REQUIRE_OK(mlsys_read_file("tests/fuzz/corpus/fuzz_pipe_tfrecord/one.tfrecord", &theirs, &tl));
  CHECK(ml == tl && memcmp(mine, theirs, ml) == 0);
  free(mine);
  mlsys_free(theirs);
}

/* ---------------- selective augmentation (spec §7.6 cases 12 and 13) ---------------- */
TEST(aug_formulas) {
  float X[3] = {1, 2, 3};
  uint8_t y[3] = {0, 1, 1};
  double th[2] = {0, 0}, sc[3];
  static const double infl[3] = {0.0714286, 0.285714, 0.642857};
  int i;
  REQUIRE_OK(mlsys_pipe_aug_scores(X, y, 3, 1, th, MLSYS_PIPE_SCORE_INFLUENCE, 0, 1, sc));
  for (i = 0; i < 3; i++) CHECK_MSG(fabs(sc[i] - infl[i]) < 5e-7, "influence %d: %.7f", i, sc[i]);
  REQUIRE_OK(mlsys_pipe_aug_scores(X, y, 3, 1, th, MLSYS_PIPE_SCORE_LOSS, 0, 1, sc));
  for (i = 0; i < 3; i++) CHECK_NEAR(sc[i], log(2.0), 1e-12);
  /* weights: |f_T| = 4, k = 2 of n = 3 */
  {
    int64_t perm[3] = {2, 0, 1};
    int naug[3] = {4, 4, 4};
    double wo[3], wa[3], sum = 0;
    REQUIRE_OK(mlsys_pipe_aug_weights(perm, 2, naug, 3, wo, wa));
    CHECK_NEAR(wo[2], 0.2, 1e-15); CHECK_NEAR(wo[0], 0.2, 1e-15); CHECK_NEAR(wo[1], 1, 0);
    for (i = 0; i < 3; i++) sum += wo[i] + naug[i] * wa[i];
    CHECK_NEAR(sum, 3, 1e-12);
    CHECK(mlsys_pipe_aug_weights(perm, 4, naug, 3, wo, wa) == MLSYS_ERR_ARG);
  }
  /* deterministic: stable descending, ties by index */
  {
    double s2[5] = {1, 3, 3, 0, 2};
    int64_t perm[5];
    static const int64_t want[5] = {1, 2, 4, 0, 3};
    REQUIRE_OK(mlsys_pipe_aug_order(s2, 5, MLSYS_PIPE_POL_DETERMINISTIC, 0, perm));
    for (i = 0; i < 5; i++) CHECK_EQ_INT((int)perm[i], (int)want[i]);
    s2[0] = -1;
    CHECK(mlsys_pipe_aug_order(s2, 5, MLSYS_PIPE_POL_DETERMINISTIC, 0, perm) == MLSYS_ERR_ARG);
  }
  /* random proportional with scores (1, 2, 7): first draws (0.1, 0.2, 0.7); second given the third (1/3, 2/3) */
  {
    double s3[3] = {1, 2, 7};
    int64_t perm[3];
    long first[3] = {0, 0, 0}, second[3] = {0, 0, 0}, given = 0;
    uint64_t seed;
    for (seed = 1; seed <= 100000; seed++) {
      REQUIRE_OK(mlsys_pipe_aug_order(s3, 3, MLSYS_PIPE_POL_RANDOM_PROP, seed, perm));
      first[perm[0]]++;
      if (perm[0] == 2) { second[perm[1]]++; given++; }
    }
    CHECK(fabs(first[0] / 1e5 - 0.1) <= 0.005 && fabs(first[1] / 1e5 - 0.2) <= 0.005 && fabs(first[2] / 1e5 - 0.7) <= 0.005);
    CHECK(fabs((double)second[0] / given - 1.0 / 3) <= 0.005 && fabs((double)second[1] / given - 2.0 / 3) <= 0.005);
  }
}

/* Koh & Liang's approximation against exact leave-one-out refits: 60 seeded points, d = 2, α = 0.5 (C = 2). The
   exact value is ℓ(z_i; θ̂_{−i}) − ℓ(z_i; θ̂); the approximation gᵀH⁻¹g. */
static double spearman(const double *a, const double *b, int n) {
  double ra[64], rb[64], d2 = 0;
  int i, j;
  for (i = 0; i < n; i++) {
    double ca = 0, cb = 0;
    for (j = 0; j < n; j++) { ca += (a[j] < a[i]) + 0.5 * (a[j] == a[i] && j != i); cb += (b[j] < b[i]) + 0.5 * (b[j] == b[i] && j != i); }
    ra[i] = ca; rb[i] = cb;
  }
  for (i = 0; i < n; i++) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / ((double)n * (n * (double)n - 1));
}
static int cmpd(const void *x, const void *y) { double a = *(const double *)x, b = *(const double *)y; return a < b ? -1 : a > b; }

TEST(aug_score_updating_reorders_the_rest) {
  /* §3.9 score updating: the augmented prefix stays; the rest is reordered by the new scores (deterministic: sorted,
     ties by the earlier position; random: a permutation of exactly the rest, reproducible by seed) */
  double sc[8] = {5, 1, 7, 0, 2, 9, 3, 4};
  int64_t perm[8] = {5, 2, 0, 7, 6, 4, 1, 3}, out[8], out2[8];
  int64_t want_det[8] = {5, 2, 0, 7, 6, 4, 1, 3};
  int j, cnt[8] = {0};
  /* new scores: the rest {7, 6, 4, 1, 3} gets 8, 1, 6, 0, 3 → descending: 7 (8), 4 (6), 3 (3), 6 (1), 1 (0) */
  double nsc[8] = {0, 0, 0, 3, 6, 0, 1, 8};
  (void)sc;
  want_det[3] = 7; want_det[4] = 4; want_det[5] = 3; want_det[6] = 6; want_det[7] = 1;
  REQUIRE_OK(mlsys_pipe_aug_reorder(nsc, 8, perm, 3, MLSYS_PIPE_POL_DETERMINISTIC, 1, out));
  for (j = 0; j < 8; j++) CHECK_MSG(out[j] == want_det[j], "position %d: %lld, want %lld", j, (long long)out[j], (long long)want_det[j]);
  REQUIRE_OK(mlsys_pipe_aug_reorder(nsc, 8, perm, 3, MLSYS_PIPE_POL_RANDOM_PROP, 42, out));
  REQUIRE_OK(mlsys_pipe_aug_reorder(nsc, 8, perm, 3, MLSYS_PIPE_POL_RANDOM_PROP, 42, out2));
  for (j = 0; j < 3; j++) CHECK_EQ_INT(out[j], perm[j]);
  for (j = 0; j < 8; j++) { CHECK_EQ_INT(out[j], out2[j]); cnt[out[j]]++; }
  for (j = 0; j < 8; j++) CHECK_EQ_INT(cnt[j], 1);
  /* in place, k = n (nothing left) and k = 0 (a fresh order) */
  memcpy(out, perm, sizeof perm);
  REQUIRE_OK(mlsys_pipe_aug_reorder(nsc, 8, out, 8, MLSYS_PIPE_POL_DETERMINISTIC, 1, out));
  for (j = 0; j < 8; j++) CHECK_EQ_INT(out[j], perm[j]);
  REQUIRE_OK(mlsys_pipe_aug_reorder(nsc, 8, perm, 0, MLSYS_PIPE_POL_DETERMINISTIC, 1, out));
  CHECK_EQ_INT(out[0], 7);
  CHECK_EQ_INT(out[1], 4);
  perm[1] = 5;   /* not a permutation */
  CHECK_EQ_INT(mlsys_pipe_aug_reorder(nsc, 8, perm, 3, MLSYS_PIPE_POL_DETERMINISTIC, 1, out), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_aug_reorder(nsc, 8, perm, 9, MLSYS_PIPE_POL_DETERMINISTIC, 1, out), MLSYS_ERR_ARG);
}

TEST(aug_influence_vs_exact_loo) {
  float X[120], Xm[118];
  uint8_t y[60], ym[59];
  double th[3], thm[3], approx[60], exact[60], relerr[60];
  mlsys_pipe_logreg_desc o;
  mlsys_rng rng;
  int i, j, k;
  mlsys_rng_seed(&rng, 13);
  for (i = 0; i < 60; i++) {
    double a = mlsys_rng_normal(&rng), b = mlsys_rng_normal(&rng);
    X[2 * i] = (float)a; X[2 * i + 1] = (float)b;
    y[i] = mlsys_rng_uniform(&rng) < 1 / (1 + exp(-(1.5 * a - b + 0.3)));
  }
  memset(&o, 0, sizeof o);
  o.C = 2;   /* α = 0.5 */
  REQUIRE_OK(mlsys_pipe_logreg_fit(X, y, 60, 2, &o, th));
  /* at the optimum the regularised gradient vanishes */
  {
    double g[3] = {0, 0, 0};
    for (i = 0; i < 60; i++) {
      double z = th[0] * X[2 * i] + th[1] * X[2 * i + 1] + th[2], r = 1 / (1 + exp(-z)) - y[i];
      g[0] += r * X[2 * i]; g[1] += r * X[2 * i + 1]; g[2] += r;
    }
    g[0] += 2 * 0.5 * th[0]; g[1] += 2 * 0.5 * th[1];
    CHECK_MSG(fabs(g[0]) + fabs(g[1]) + fabs(g[2]) < 1e-8, "gradient %.3g %.3g %.3g", g[0], g[1], g[2]);
  }
  REQUIRE_OK(mlsys_pipe_aug_scores(X, y, 60, 2, th, MLSYS_PIPE_SCORE_INFLUENCE, 0.5, 0, approx));
  for (i = 0; i < 60; i++) {
    double z0, z1, l0, l1;
    for (j = 0, k = 0; j < 60; j++) if (j != i) { Xm[2 * k] = X[2 * j]; Xm[2 * k + 1] = X[2 * j + 1]; ym[k] = y[j]; k++; }
    REQUIRE_OK(mlsys_pipe_logreg_fit(Xm, ym, 59, 2, &o, thm));
    z0 = th[0] * X[2 * i] + th[1] * X[2 * i + 1] + th[2];
    z1 = thm[0] * X[2 * i] + thm[1] * X[2 * i + 1] + thm[2];
    l0 = y[i] ? log1p(exp(-z0)) : log1p(exp(z0));
    l1 = y[i] ? log1p(exp(-z1)) : log1p(exp(z1));
    exact[i] = l1 - l0;
    relerr[i] = fabs(approx[i] - exact[i]) / fabs(exact[i]);
  }
  {
    double rho = spearman(approx, exact, 60), med;
    qsort(relerr, 60, sizeof(double), cmpd);
    med = 0.5 * (relerr[29] + relerr[30]);
    printf("    influence vs exact leave-one-out: Spearman %.4f, median relative error %.3f\n", rho, med);
    CHECK(rho >= 0.99);
    CHECK(med <= 0.10);
  }
}

TEST_MAIN()
