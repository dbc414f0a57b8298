/* tests/test_pipe_generator.c — the user-defined source of mlsys_pipeline.h (mlsys_pipe_generator) and the JPEG
   pipeline above any source (mlsys_pipe_jpeg_pipeline_from): order, seq and the end; open/close once per pass under
   a repeat (epochs 0, 1, 2) and not at all while a cache replays; the disk counters in snapshots and what the analysis
   makes of them (x_disk = W / β, the materialised size of Appendix 2, the cache rule); errors failed naming the node
   and seq, or skipped and counted; and a generator reading real photographs (Debian's opencv-doc) that gives the same
   batches, byte for byte, as mlsys_pipe_jpeg_pipeline over the same files with the same seed. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"

#include "tests/opencv_corpus.h"

/* ---- a counting generator of int64 elements ---- */
typedef struct {
  int64_t n;                /* elements per pass */
  int64_t fail_at;          /* next fails on this element (−1: never) */
  int open_fail;            /* open returns MLSYS_ERR_IO */
  double bytes;             /* disk bytes (and unit bytes) per element */
  int opens, closes;
  uint64_t epoch[8];
} gen_user;
typedef struct { int64_t i; uint64_t epoch; } gen_state;

static int g_open(void *user, uint64_t epoch, void **state) {
  gen_user *u = (gen_user *)user;
  gen_state *s;
  if (u->open_fail) return mlsys_set_error(MLSYS_ERR_IO, "the store is offline");
  if (!(s = (gen_state *)mlsys_calloc(1, sizeof *s))) return MLSYS_ERR_NOMEM;
  s->epoch = epoch;
  if (u->opens < 8) u->epoch[u->opens] = epoch;
  u->opens++;
  *state = s;
  return 0;
}
static int g_next(void *user, void *state, mlsys_pipe_elem *out, int *end, mlsys_pipe_gen_io *io) {
  gen_user *u = (gen_user *)user;
  gen_state *s = (gen_state *)state;
  int64_t i;
  if (s->i >= u->n) { *end = 1; return 0; }
  i = s->i++;
  io->disk_bytes = u->bytes; io->units_done = 1; io->units_bytes = u->bytes;
  if (i == u->fail_at) return mlsys_set_error(MLSYS_ERR_PARSE, "record %lld is damaged", (long long)i);
  if (!mlsys_pipe_tensor_alloc(out, 0, 8, MLSYS_PIPE_I64)) return MLSYS_ERR_NOMEM;
  *(int64_t *)out->comp[0].data = i + 1000 * (int64_t)s->epoch;
  return 0;
}
/* for a generator without close: its state is not allocated */
static gen_state g_static;
static int g_open_static(void *user, uint64_t epoch, void **state) {
  memset(&g_static, 0, sizeof g_static);
  g_static.epoch = epoch;
  ((gen_user *)user)->opens++;
  *state = &g_static;
  return 0;
}
static void g_close(void *user, void *state) {
  ((gen_user *)user)->closes++;
  mlsys_free(state);
}
static void gen_desc(mlsys_pipe_generator_desc *d, gen_user *u) {
  memset(d, 0, sizeof *d);
  d->open = g_open; d->next = g_next; d->close = g_close; d->user = u;
}
static void gen_user_init(gen_user *u, int64_t n) {
  memset(u, 0, sizeof *u);
  u->n = n; u->fail_at = -1;
}

TEST(generator_order_seq_and_end) {
  gen_user u;
  mlsys_pipe_generator_desc d;
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_pipe_snapshot s;
  const char *name;
  int g, kind = -1, in = 0, end = 0;
  int64_t i;
  gen_user_init(&u, 10);
  gen_desc(&d, &u);
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
  REQUIRE_OK(mlsys_pipe_node_info(p, g, &kind, &in, &name));
  CHECK_EQ_INT(kind, MLSYS_PIPE_OP_GENERATOR);
  CHECK_EQ_INT(in, -1);
  CHECK_STR(name, "generator");
  CHECK_STR(mlsys_pipe_kind_name(MLSYS_PIPE_OP_GENERATOR), "generator");
  CHECK_STR(mlsys_pipe_kind_name(MLSYS_PIPE_OP_TAKE), "take");   /* the kinds before it keep their values */
  CHECK_EQ_INT(mlsys_pipe_set_knob(p, g, MLSYS_PIPE_KNOB_PARALLELISM, 2), MLSYS_ERR_ARG);   /* no knobs */
  REQUIRE_OK(mlsys_pipe_open(p, g, &it));
  CHECK_EQ_INT(u.opens, 1);
  CHECK_EQ_INT(u.epoch[0], 0);
  for (i = 0;; i++) {
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    if (end) break;
    CHECK_EQ_INT(e.ncomp, 1);
    CHECK_EQ_INT(*(int64_t *)e.comp[0].data, i);
    CHECK_EQ_INT((int64_t)e.seq, i);
    mlsys_pipe_elem_release(&e);
  }
  CHECK_EQ_INT(i, 10);
  CHECK_EQ_INT(u.closes, 1);   /* closed after the end, not only at mlsys_pipe_close */
  REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
  CHECK_EQ_INT(end, 1);
  REQUIRE_OK(mlsys_pipe_snapshot_take(it, &s));
  CHECK_EQ_INT(s.nops, 1);
  CHECK_EQ_INT(s.op[0].kind, MLSYS_PIPE_OP_GENERATOR);
  CHECK_STR(s.op[0].name, "generator");
  CHECK_EQ_INT(s.op[0].produced, 10);
  CHECK_NEAR(s.op[0].bytes_produced, 80, 0);
  CHECK_EQ_INT(s.op[0].parallel, 0);
  CHECK_EQ_INT(s.op[0].parallelism, 1);
  CHECK_NEAR(s.op[0].disk_bytes, 0, 0);   /* disk = 0: a plain source */
  CHECK_EQ_INT(s.op[0].files_total, 0);
  CHECK(s.op[0].cpu_s >= 0);
  mlsys_pipe_snapshot_free(&s);
  mlsys_pipe_close(it);
  CHECK_EQ_INT(u.closes, 1);
  CHECK_EQ_INT(u.opens, 1);
  /* closed once at mlsys_pipe_close when the pass did not end */
  REQUIRE_OK(mlsys_pipe_open(p, g, &it));
  REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
  mlsys_pipe_elem_release(&e);
  mlsys_pipe_close(it);
  CHECK_EQ_INT(u.opens, 2);
  CHECK_EQ_INT(u.closes, 2);
  /* a named generator without close; an empty one ends at once */
  {
    int g2;
    d.open = g_open_static; d.close = NULL; d.name = "pcr";
    gen_user_init(&u, 0);
    REQUIRE_OK(mlsys_pipe_generator(p, &d, &g2));
    REQUIRE_OK(mlsys_pipe_node_info(p, g2, NULL, NULL, &name));
    CHECK_STR(name, "pcr");
    REQUIRE_OK(mlsys_pipe_open(p, g2, &it));
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    CHECK_EQ_INT(end, 1);
    mlsys_pipe_close(it);
    CHECK_EQ_INT(u.opens, 1);
    CHECK_EQ_INT(u.closes, 0);
  }
  mlsys_pipe_destroy(p);
}

static int g_destroyed;
static void g_destroy(void *user) { g_destroyed++; mlsys_free(user); }

TEST(generator_destroy_hands_user_to_the_pipe) {
  /* a library builds a generator over a context it allocated (mlsys_pcr_pipe_source does): the pipe frees it once */
  mlsys_pipe *p;
  mlsys_pipe_generator_desc d;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  gen_user *u = (gen_user *)mlsys_calloc(1, sizeof *u);
  int g, end = 0, n = 0;
  REQUIRE(u);
  gen_user_init(u, 3);
  gen_desc(&d, u);
  d.destroy = g_destroy;
  g_destroyed = 0;
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
  REQUIRE_OK(mlsys_pipe_open(p, g, &it));
  while (!mlsys_pipe_next(it, &e, &end) && !end) { mlsys_pipe_elem_release(&e); n++; }
  mlsys_pipe_close(it);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(g_destroyed, 0);
  mlsys_pipe_destroy(p);
  CHECK_EQ_INT(g_destroyed, 1);
  /* a desc that is refused does not take the context */
  u = (gen_user *)mlsys_calloc(1, sizeof *u);
  REQUIRE(u);
  gen_desc(&d, u);
  d.destroy = g_destroy; d.on_error = 9;
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  CHECK_EQ_INT(mlsys_pipe_generator(p, &d, &g), MLSYS_ERR_ARG);
  mlsys_pipe_destroy(p);
  CHECK_EQ_INT(g_destroyed, 1);
  mlsys_free(u);
}

TEST(generator_bad_descs) {
  mlsys_pipe *p;
  mlsys_pipe_generator_desc d;
  gen_user u;
  int g = 7;
  gen_user_init(&u, 1);
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  CHECK_EQ_INT(mlsys_pipe_generator(p, NULL, &g), MLSYS_ERR_ARG);
  gen_desc(&d, &u); d.open = NULL;
  CHECK_EQ_INT(mlsys_pipe_generator(p, &d, &g), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "open and next");
  gen_desc(&d, &u); d.next = NULL;
  CHECK_EQ_INT(mlsys_pipe_generator(p, &d, &g), MLSYS_ERR_ARG);
  gen_desc(&d, &u); d.on_error = 5;
  CHECK_EQ_INT(mlsys_pipe_generator(p, &d, &g), MLSYS_ERR_ARG);
  gen_desc(&d, &u); d.units_total = -1;
  CHECK_EQ_INT(mlsys_pipe_generator(p, &d, &g), MLSYS_ERR_ARG);
  gen_desc(&d, &u);
  CHECK_EQ_INT(mlsys_pipe_generator(NULL, &d, &g), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_pipe_nodes(p), 0);
  mlsys_pipe_destroy(p);
}

TEST(generator_under_repeat_opens_each_epoch) {
  gen_user u;
  mlsys_pipe_generator_desc d;
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  int g, r, c, r2, end = 0, k;
  int64_t i;
  gen_user_init(&u, 5);
  gen_desc(&d, &u);
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
  REQUIRE_OK(mlsys_pipe_repeat(p, g, 3, &r));
  REQUIRE_OK(mlsys_pipe_open(p, r, &it));
  for (i = 0;; i++) {
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    if (end) break;
    /* pass i / 5, element i % 5: seq restarts every pass, and the pass's epoch reached next */
    CHECK_EQ_INT((int64_t)e.seq, i % 5);
    CHECK_EQ_INT(*(int64_t *)e.comp[0].data, i % 5 + 1000 * (i / 5));
    mlsys_pipe_elem_release(&e);
  }
  CHECK_EQ_INT(i, 15);
  mlsys_pipe_close(it);
  CHECK_EQ_INT(u.opens, 3);
  CHECK_EQ_INT(u.closes, 3);
  for (k = 0; k < 3; k++) CHECK_EQ_INT(u.epoch[k], k);
  /* under a cache and a repeat: one pass through the generator, two replays */
  gen_user_init(&u, 5);
  REQUIRE_OK(mlsys_pipe_cache(p, g, NULL, &c));
  REQUIRE_OK(mlsys_pipe_repeat(p, c, 3, &r2));
  REQUIRE_OK(mlsys_pipe_open(p, r2, &it));
  for (i = 0;; i++) {
    REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
    if (end) break;
    CHECK_EQ_INT(*(int64_t *)e.comp[0].data, i % 5);   /* replayed: epoch 0's elements */
    mlsys_pipe_elem_release(&e);
  }
  CHECK_EQ_INT(i, 15);
  mlsys_pipe_close(it);
  CHECK_EQ_INT(u.opens, 1);
  CHECK_EQ_INT(u.closes, 1);
  mlsys_pipe_destroy(p);
}

TEST(generator_disk_counters_and_the_analysis) {
  /* 100 records of 1000 bytes, batch 10: β = 10 000 bytes per minibatch, so W = 1 MB/s bounds X at 100 minibatches/s;
     the materialised size of the generator's output is 100 × 1000 bytes (Appendix 2), and the cache rule picks it */
  gen_user u;
  mlsys_pipe_generator_desc d;
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_pipe_snapshot s;
  mlsys_pipe_analysis a;
  mlsys_pipe_machine m;
  mlsys_pipe_plan pl;
  int g, b, end = 0, disk, n = 0;
  for (disk = 1; disk >= 0; disk--) {
    gen_user_init(&u, 100);
    u.bytes = 1000;
    gen_desc(&d, &u);
    d.disk = disk; d.units_total = 100; d.name = "reader";
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
    REQUIRE_OK(mlsys_pipe_batch(p, g, 10, 0, &b));
    REQUIRE_OK(mlsys_pipe_open(p, b, &it));
    for (n = 0;; n++) {
      REQUIRE_OK(mlsys_pipe_next(it, &e, &end));
      if (end) break;
      mlsys_pipe_elem_release(&e);
    }
    CHECK_EQ_INT(n, 10);
    REQUIRE_OK(mlsys_pipe_snapshot_take(it, &s));
    mlsys_pipe_close(it);
    REQUIRE(s.nops == 2);
    CHECK_EQ_INT(s.op[1].kind, MLSYS_PIPE_OP_GENERATOR);
    CHECK_STR(s.op[1].name, "reader");
    CHECK_EQ_INT(s.op[1].produced, 100);
    CHECK_NEAR(s.op[1].disk_bytes, disk ? 100000 : 0, 0);
    CHECK_EQ_INT(s.op[1].files_total, disk ? 100 : 0);
    CHECK_EQ_INT(s.op[1].files_observed, disk ? 100 : 0);
    CHECK_NEAR(s.op[1].observed_bytes, disk ? 100000 : 0, 0);
    memset(&m, 0, sizeof m);
    m.cores = 1; m.disk_bytes_per_s = 1e6; m.mem_free_bytes = 1e9;
    s.seconds = 1;   /* the window's length does not enter β or the sizes; fix it so the test is timing-free */
    REQUIRE_OK(mlsys_pipe_analyze(&s, &m, &a));
    if (disk) {
      CHECK_NEAR(a.beta, 10000, 1e-9);
      CHECK_NEAR(a.x_disk, 100, 1e-9);
      CHECK_NEAR(a.op[1].size_bytes, 100000, 1e-6);
      CHECK_NEAR(a.op[1].n_elems, 100, 1e-9);
    } else {
      CHECK_NEAR(a.beta, 0, 0);
      CHECK(a.x_disk >= MLSYS_PIPE_INF);
      CHECK(a.op[1].size_bytes < 0);   /* a plain source of unknown size */
    }
    memset(&pl, 0, sizeof pl);
    pl.cache_after = -1;
    REQUIRE_OK(mlsys_pipe_plan_cache(&s, &a, &m, &pl));
    CHECK_EQ_INT(pl.cache_after, disk ? 1 : -1);
    mlsys_pipe_analysis_free(&a);
    mlsys_pipe_snapshot_free(&s);
    mlsys_pipe_destroy(p);
  }
}

/* spins 20 µs of this thread's CPU per element so that the tuner sees work (CPU time, not wall time: a preempted
   spin still does the same work) */
static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int spin_map(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  double t0 = thread_cpu();
  (void)user; (void)rng;
  while (thread_cpu() - t0 < 20e-6) {}
  return mlsys_pipe_elem_copy(in, out) ? -1 : 0;
}

TEST(generator_in_a_tuned_pipeline) {
  /* generator (disk) → map → repeat → batch: Plumber's loop runs over it; the generator is never given a parallelism,
     and with memory to spare the cache goes below the repeat (after the map, the closest to the root that fits) */
  gen_user u;
  mlsys_pipe_generator_desc d;
  mlsys_pipe_map_desc md;
  mlsys_pipe_tune_desc td;
  mlsys_pipe_tune_result r;
  mlsys_pipe *p;
  int g, mp, rp, b, kind = -1;
  gen_user_init(&u, 400);
  u.bytes = 512;
  gen_desc(&d, &u);
  d.disk = 1; d.units_total = 400;
  memset(&md, 0, sizeof md);
  md.fn = spin_map; md.name = "spin";
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
  REQUIRE_OK(mlsys_pipe_map(p, g, &md, &mp));
  REQUIRE_OK(mlsys_pipe_repeat(p, mp, -1, &rp));
  REQUIRE_OK(mlsys_pipe_batch(p, rp, 8, 0, &b));
  memset(&td, 0, sizeof td);
  td.method = MLSYS_PIPE_TUNE_PLUMBER; td.trace_elements = 20; td.warmup_elements = 5; td.passes = 1;   /* batches, not seconds */
  td.machine.cores = 2; td.machine.mem_free_bytes = 1e9;
  REQUIRE_OK(mlsys_pipe_tune(p, b, &td, &r, NULL));
  CHECK(r.x_measured > 0);
  CHECK_EQ_INT(r.last.op[0].produced, 20);
  CHECK_EQ_INT(r.cache_after, mp);
  REQUIRE_OK(mlsys_pipe_node_info(p, g, &kind, NULL, NULL));
  CHECK_EQ_INT(kind, MLSYS_PIPE_OP_GENERATOR);
  CHECK(u.opens >= 1 && u.opens == u.closes);   /* every pass the tuner opened was closed */
  mlsys_pipe_tune_result_free(&r);
  mlsys_pipe_destroy(p);
}

TEST(generator_errors_fail_or_skip) {
  gen_user u;
  mlsys_pipe_generator_desc d;
  mlsys_pipe *p;
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  mlsys_status st;
  int g, mode, end = 0, n;
  int64_t seqs[16];
  for (mode = 0; mode < 2; mode++) {
    gen_user_init(&u, 8);
    u.fail_at = 3;
    gen_desc(&d, &u);
    d.on_error = mode; d.name = "rec";
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
    REQUIRE_OK(mlsys_pipe_open(p, g, &it));
    for (n = 0;; n++) {
      st = mlsys_pipe_next(it, &e, &end);
      if (st || end) break;
      if (n < 16) seqs[n] = (int64_t)e.seq;
      mlsys_pipe_elem_release(&e);
    }
    if (mode == MLSYS_PIPE_ON_ERROR_FAIL) {
      CHECK_EQ_INT(st, MLSYS_ERR_PARSE);   /* the generator's status */
      CHECK_EQ_INT(n, 3);
      CHECK_CONTAINS(mlsys_last_error(), "generator 'rec' (node 0)");
      CHECK_CONTAINS(mlsys_last_error(), "seq 3");
      CHECK_CONTAINS(mlsys_last_error(), "record 3 is damaged");
      /* and the same again */
      CHECK_EQ_INT(mlsys_pipe_next(it, &e, &end), MLSYS_ERR_PARSE);
    } else {
      CHECK_OK(st);
      CHECK_EQ_INT(n, 7);
      CHECK_EQ_INT(mlsys_pipe_skipped(it, g), 1);
      CHECK_EQ_INT(seqs[2], 2);
      CHECK_EQ_INT(seqs[3], 4);   /* the failed call used up seq 3, as a skipped file does */
    }
    mlsys_pipe_close(it);
    CHECK_EQ_INT(u.opens, 1);
    CHECK_EQ_INT(u.closes, 1);
    mlsys_pipe_destroy(p);
  }
  /* a failing open fails the open, naming the node and the epoch */
  gen_user_init(&u, 8);
  u.open_fail = 1;
  gen_desc(&d, &u);
  REQUIRE_OK(mlsys_pipe_create(NULL, &p));
  REQUIRE_OK(mlsys_pipe_generator(p, &d, &g));
  CHECK_EQ_INT(mlsys_pipe_open(p, g, &it), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "generator 'generator' (node 0): open for epoch 0 failed");
  CHECK_CONTAINS(mlsys_last_error(), "the store is offline");
  CHECK(it == NULL);
  CHECK_EQ_INT(u.closes, 0);
  mlsys_pipe_destroy(p);
}

/* ---- a generator of JPEG bytes read from files, the same elements a files source makes ---- */
typedef struct {
  char **paths;
  int64_t n;
  int label;                /* 1: component 1 = the index (I64 scalar), as mlsys_pipe_files has it */
  int opens;
} jpg_user;
static int j_open(void *user, uint64_t epoch, void **state) {
  int64_t *pos = (int64_t *)mlsys_calloc(1, sizeof *pos);
  (void)epoch;
  if (!pos) return MLSYS_ERR_NOMEM;
  ((jpg_user *)user)->opens++;
  *state = pos;
  return 0;
}
static int j_next(void *user, void *state, mlsys_pipe_elem *out, int *end, mlsys_pipe_gen_io *io) {
  jpg_user *u = (jpg_user *)user;
  int64_t *pos = (int64_t *)state, i;
  char *data;
  size_t len;
  mlsys_status st;
  uint8_t *b;
  if (*pos >= u->n) { *end = 1; return 0; }
  i = (*pos)++;
  if ((st = mlsys_read_file(u->paths[i], &data, &len))) return st;
  io->disk_bytes = (double)len; io->units_done = 1; io->units_bytes = (double)len;
  if (!(b = (uint8_t *)mlsys_pipe_tensor_alloc(out, 0, len, MLSYS_PIPE_U8))) { mlsys_free(data); return MLSYS_ERR_NOMEM; }
  memcpy(b, data, len);
  mlsys_free(data);
  if (u->label) {
    if (!mlsys_pipe_tensor_alloc(out, 1, 8, MLSYS_PIPE_I64)) return MLSYS_ERR_NOMEM;
    *(int64_t *)out->comp[1].data = i;
    out->comp[1].ndim = 0; out->comp[1].shape[0] = 0;
  }
  return 0;
}
static void j_close(void *user, void *state) { (void)user; mlsys_free(state); }

/* every batch of the pipeline at root, concatenated (components in order) into *buf; shapes of the first batch */
static int collect(mlsys_pipe *p, int root, uint8_t **buf, size_t *len, int64_t *nb, mlsys_pipe_elem *first) {
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  int end = 0, c;
  size_t cap = 0;
  *buf = NULL; *len = 0; *nb = 0;
  memset(first, 0, sizeof *first);
  if (mlsys_pipe_open(p, root, &it)) return -1;
  for (;;) {
    if (mlsys_pipe_next(it, &e, &end)) { mlsys_pipe_close(it); return -1; }
    if (end) break;
    for (c = 0; c < e.ncomp; c++) {
      if (*len + e.comp[c].nbytes > cap) {
        cap = 2 * (*len + e.comp[c].nbytes);
        *buf = (uint8_t *)realloc(*buf, cap);
      }
      memcpy(*buf + *len, e.comp[c].data, e.comp[c].nbytes);
      *len += e.comp[c].nbytes;
    }
    if (!*nb) { *first = e; for (c = 0; c < 4; c++) first->comp[c].data = NULL; }
    (*nb)++;
    mlsys_pipe_elem_release(&e);
  }
  mlsys_pipe_close(it);
  return 0;
}

TEST(jpeg_pipeline_from_a_generator_matches_the_files_pipeline) {
  /* 20 real JPEGs, 2 epochs, batch 8: decode → crop 96 → flip → normalize, and the fused
     variant; seed 11 on both sides. The files pipeline and the generator pipeline give the same bytes. */
  char *paths[20];
  int64_t k = 0, i;
  int fused;
  NEED_CORPUS();
  for (i = 0; i < g_n && k < 20; i++) {
    char *data;
    size_t len;
    if (mlsys_read_file(g_paths[i], &data, &len)) continue;
    if (mlsys_image_sniff((const uint8_t *)data, len) == MLSYS_IMG_JPEG && mlsys_jpeg_check((const uint8_t *)data, len, NULL, NULL, 0) == MLSYS_OK)
      paths[k++] = g_paths[i];
    mlsys_free(data);
  }
  REQUIRE(k == 20);
  for (fused = 0; fused < 2; fused++) {
    mlsys_pipe *pf, *pg;
    mlsys_pipe_desc pd;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nf, ng;
    mlsys_pipe_generator_desc gd;
    jpg_user ju;
    int src;
    uint8_t *bf, *bg;
    size_t lf, lg;
    int64_t nbf, nbg;
    mlsys_pipe_elem ef, eg;
    memset(&pd, 0, sizeof pd);
    pd.seed = 11; pd.workers = 2;
    memset(&jd, 0, sizeof jd);
    jd.batch = 8; jd.size = 96; jd.epochs = 2; jd.fused = fused; jd.fail_on_error = 1;
    REQUIRE_OK(mlsys_pipe_create(&pd, &pf));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(pf, (const char *const *)paths, 20, &jd, &nf));
    memset(&ju, 0, sizeof ju);
    ju.paths = paths; ju.n = 20; ju.label = 1;
    memset(&gd, 0, sizeof gd);
    gd.open = j_open; gd.next = j_next; gd.close = j_close; gd.user = &ju; gd.disk = 1; gd.units_total = 20;
    gd.on_error = MLSYS_PIPE_ON_ERROR_FAIL; gd.name = "jpegs";
    REQUIRE_OK(mlsys_pipe_create(&pd, &pg));
    REQUIRE_OK(mlsys_pipe_generator(pg, &gd, &src));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline_from(pg, src, &jd, &ng));
    CHECK_EQ_INT(ng.files, src);
    CHECK_EQ_INT(ng.root, nf.root);
    CHECK_EQ_INT(ng.batch, nf.batch);
    CHECK_EQ_INT(ng.decode, nf.decode);
    /* the map with parallelism: the generator is pulled by the map's runner thread */
    if (!fused) REQUIRE_OK(mlsys_pipe_set_knob(pg, ng.decode, MLSYS_PIPE_KNOB_PARALLELISM, 2));
    REQUIRE(collect(pf, nf.root, &bf, &lf, &nbf, &ef) == 0);
    REQUIRE(collect(pg, ng.root, &bg, &lg, &nbg, &eg) == 0);
    CHECK_EQ_INT(nbf, 5);   /* 2 × 20 images in batches of 8 (the repeat sits below the batch) */
    CHECK_EQ_INT(nbg, nbf);
    CHECK_EQ_INT(ju.opens, 2);
    /* batch shape: {8, 96, 96, 3} floats and 8 labels */
    CHECK_EQ_INT(eg.ncomp, 2);
    CHECK_EQ_INT(eg.comp[0].dtype, MLSYS_PIPE_F32);
    CHECK_EQ_INT(eg.comp[0].ndim, 4);
    CHECK(eg.comp[0].shape[0] == 8 && eg.comp[0].shape[1] == 96 && eg.comp[0].shape[2] == 96 && eg.comp[0].shape[3] == 3);
    CHECK_EQ_INT(eg.comp[1].dtype, MLSYS_PIPE_I64);
    CHECK_EQ_INT(eg.comp[1].shape[0], 8);
    CHECK_EQ_INT(lg, lf);
    CHECK_EQ_INT(lf, (size_t)2 * (20 * 96 * 96 * 3 * 4 + 20 * 8));
    CHECK_MSG(lf == lg && memcmp(bf, bg, lf) == 0, "fused %d: the generator's batches differ from the files pipeline's", fused);
    free(bf); free(bg);
    mlsys_pipe_destroy(pf);
    mlsys_pipe_destroy(pg);
  }
  {
    /* without a label the batches carry the images only; a source that is not a node is an argument error */
    mlsys_pipe *p;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nd;
    mlsys_pipe_generator_desc gd;
    jpg_user ju;
    int src;
    uint8_t *b;
    size_t l;
    int64_t nb;
    mlsys_pipe_elem e0;
    memset(&ju, 0, sizeof ju);
    ju.paths = paths; ju.n = 5;
    memset(&gd, 0, sizeof gd);
    gd.open = j_open; gd.next = j_next; gd.close = j_close; gd.user = &ju;
    memset(&jd, 0, sizeof jd);
    jd.batch = 5; jd.size = 32; jd.epochs = 1; jd.no_normalize = 1;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_generator(p, &gd, &src));
    CHECK_EQ_INT(mlsys_pipe_jpeg_pipeline_from(p, src + 1, &jd, &nd), MLSYS_ERR_ARG);
    CHECK_EQ_INT(nd.files, -1);
    CHECK_EQ_INT(mlsys_pipe_jpeg_pipeline_from(NULL, src, &jd, &nd), MLSYS_ERR_ARG);
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline_from(p, src, &jd, &nd));
    REQUIRE(collect(p, nd.root, &b, &l, &nb, &e0) == 0);
    CHECK_EQ_INT(nb, 1);
    CHECK_EQ_INT(e0.ncomp, 1);
    CHECK_EQ_INT(e0.comp[0].dtype, MLSYS_PIPE_U8);
    CHECK_EQ_INT(l, 5 * 32 * 32 * 3);
    free(b);
    mlsys_pipe_destroy(p);
  }
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  corpus_free();
  return rc;
}
