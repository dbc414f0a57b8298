/* tests/test_xfer_dataplane.c — the data plane of mlsys_transfer.h (section 5): CRC-32C against its
   published check value, the wire format, chunking, and whole transfers over loopback (127.0.0.1, ephemeral or
   freshly picked ports) through chains and diamonds, with injected connection kills, payload corruption, a relay
   process killed with SIGKILL (and restarted), slow links, stragglers and garbage clients.

   The stores are in-memory and live here (the real ones, section 3, have their own tests): the destination store counts
   put_part calls per part, so a part written twice is caught, and every byte is compared with the source. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include "tests/test.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#define KiB 1024ull
#define MiB (1024ull * 1024ull)


/* ---------------------------------------------------------------------------------------------------------------
   In-memory store
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { char *key; uint8_t *data; uint64_t size; } mobj;
typedef struct mstore mstore;
/* A store of one's own keeps its upload state in its own struct behind the opaque mlsys_xfer_upload pointer. */
typedef struct ms_upload {
  char *key;
  uint64_t size, part_bytes, nparts;
  uint8_t *data;
  int *count;
} ms_upload;
struct mstore {
  mlsys_xfer_store base;
  pthread_mutex_t mu;
  mobj *o;
  int n, cap;
  long puts, dup_writes, begins, commits, aborts, open_uploads, max_part_count, gets;
  const char *poison;     /* put_part of a key containing this fails */
  /* A gate instead of a race against the clock: with gate_after > 0, put_part blocks once that many parts are in
     until ms_gate_open, so a test can act on a transfer that is certainly not finished, at any machine speed. */
  long gate_after;
  int gate_open;
  pthread_cond_t gate_cv;
};

static mobj *ms_find(mstore *s, const char *key) {
  int i;
  for (i = 0; i < s->n; i++) if (strcmp(s->o[i].key, key) == 0) return &s->o[i];
  return NULL;
}
static void ms_set(mstore *s, const char *key, uint8_t *data, uint64_t size) {   /* takes data */
  mobj *o = ms_find(s, key);
  if (o) { free(o->data); o->data = data; o->size = size; return; }
  if (s->n == s->cap) { s->cap = s->cap ? s->cap * 2 : 16; s->o = (mobj *)realloc(s->o, (size_t)s->cap * sizeof *s->o); }
  s->o[s->n].key = strdup(key);
  s->o[s->n].data = data;
  s->o[s->n].size = size;
  s->n++;
}
static int ms_cmp(const void *a, const void *b) { return strcmp(((const mobj *)a)->key, ((const mobj *)b)->key); }

static mlsys_status ms_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mstore *s = (mstore *)st->impl;
  int i;
  pthread_mutex_lock(&s->mu);
  if (s->n) qsort(s->o, (size_t)s->n, sizeof *s->o, ms_cmp);
  *objs = (mlsys_xfer_obj *)mlsys_calloc(s->n ? (size_t)s->n : 1, sizeof **objs);
  for (i = 0; i < s->n; i++) { (*objs)[i].key = mlsys_strdup(s->o[i].key); (*objs)[i].size = s->o[i].size; }
  *n = s->n;
  pthread_mutex_unlock(&s->mu);
  return MLSYS_OK;
}
static mlsys_status ms_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len, void *buf) {
  mstore *s = (mstore *)st->impl;
  mobj *o;
  pthread_mutex_lock(&s->mu);
  o = ms_find(s, key);
  if (!o || off + len > o->size) {
    pthread_mutex_unlock(&s->mu);
    return mlsys_set_error(MLSYS_ERR_IO, "mem: '%s' has no range [%llu, +%llu)", key, (unsigned long long)off, (unsigned long long)len);
  }
  memcpy(buf, o->data + off, (size_t)len);
  s->gets++;
  pthread_mutex_unlock(&s->mu);
  return MLSYS_OK;
}
static mlsys_status ms_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb, mlsys_xfer_upload **up) {
  mstore *s = (mstore *)st->impl;
  ms_upload *u = (ms_upload *)calloc(1, sizeof *u);
  u->key = strdup(key);
  u->size = size;
  u->part_bytes = pb;
  u->nparts = (size + pb - 1) / pb;   /* a 0-byte object has no parts */
  u->data = (uint8_t *)malloc(size ? (size_t)size : 1);
  u->count = (int *)calloc(u->nparts ? (size_t)u->nparts : 1, sizeof(int));
  pthread_mutex_lock(&s->mu);
  s->begins++;
  s->open_uploads++;
  pthread_mutex_unlock(&s->mu);
  *up = (mlsys_xfer_upload *)u;
  return MLSYS_OK;
}
static mlsys_status ms_part(mlsys_xfer_store *st, mlsys_xfer_upload *up, int part, const void *buf, uint64_t len) {
  mstore *s = (mstore *)st->impl;
  ms_upload *u = (ms_upload *)up;
  uint64_t off = (uint64_t)part * u->part_bytes, want;
  if (part < 0 || (uint64_t)part >= u->nparts) return mlsys_set_error(MLSYS_ERR_ARG, "mem: part %d of %llu", part, (unsigned long long)u->nparts);
  want = u->size - off < u->part_bytes ? u->size - off : u->part_bytes;
  if (len != want) return mlsys_set_error(MLSYS_ERR_ARG, "mem: part %d has %llu bytes, want %llu", part, (unsigned long long)len, (unsigned long long)want);
  if (s->poison && strstr(u->key, s->poison)) return mlsys_set_error(MLSYS_ERR_IO, "mem: disk full (poisoned key '%s')", u->key);
  pthread_mutex_lock(&s->mu);
  while (s->gate_after > 0 && s->puts >= s->gate_after && !s->gate_open) pthread_cond_wait(&s->gate_cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  memcpy(u->data + off, buf, (size_t)len);
  pthread_mutex_lock(&s->mu);
  s->puts++;
  if (++u->count[part] > 1) s->dup_writes++;
  if (u->count[part] > s->max_part_count) s->max_part_count = u->count[part];
  pthread_mutex_unlock(&s->mu);
  return MLSYS_OK;
}
static void ms_upfree(ms_upload *u) { free(u->key); free(u->data); free(u->count); free(u); }
static mlsys_status ms_commit(mlsys_xfer_store *st, mlsys_xfer_upload *up) {
  mstore *s = (mstore *)st->impl;
  ms_upload *u = (ms_upload *)up;
  uint64_t i;
  for (i = 0; i < u->nparts; i++)
    if (!u->count[i]) { mlsys_status e = mlsys_set_error(MLSYS_ERR_IO, "mem: '%s' part %llu missing", u->key, (unsigned long long)i); ms_upfree(u); return e; }
  pthread_mutex_lock(&s->mu);
  ms_set(s, u->key, u->data, u->size);
  u->data = NULL;
  s->commits++;
  s->open_uploads--;
  pthread_mutex_unlock(&s->mu);
  ms_upfree(u);
  return MLSYS_OK;
}
static void ms_abort(mlsys_xfer_store *st, mlsys_xfer_upload *up) {
  mstore *s = (mstore *)st->impl;
  ms_upload *u = (ms_upload *)up;
  pthread_mutex_lock(&s->mu);
  s->aborts++;
  s->open_uploads--;
  pthread_mutex_unlock(&s->mu);
  ms_upfree(u);
}
static void ms_close(mlsys_xfer_store *st) {
  mstore *s = (mstore *)st->impl;
  int i;
  for (i = 0; i < s->n; i++) { free(s->o[i].key); free(s->o[i].data); }
  free(s->o);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->gate_cv);
  free(s);
}
static void ms_gate_open(mstore *s) {
  pthread_mutex_lock(&s->mu);
  s->gate_open = 1;
  pthread_cond_broadcast(&s->gate_cv);
  pthread_mutex_unlock(&s->mu);
}
static long ms_counter(mstore *s, const long *c) {
  long v;
  pthread_mutex_lock(&s->mu);
  v = *c;
  pthread_mutex_unlock(&s->mu);
  return v;
}
/* Polls until *c >= want; the 120 s cap is a hang guard that no run at any load comes near (the work it waits for
   is bounded: a gated transfer cannot finish meanwhile). Returns the last value. */
static long ms_wait_for(mstore *s, const long *c, long want) {
  double t0 = mlsys_now();
  long v;
  while ((v = ms_counter(s, c)) < want && mlsys_now() - t0 < 120) mlsys__xfer_dp_sleep(0.002);
  return v;
}
static mstore *ms_new(void) {
  mstore *s = (mstore *)calloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->gate_cv, NULL);
  s->base.kind = "memory";
  s->base.list = ms_list;
  s->base.get_range = ms_get;
  s->base.put_begin = ms_begin;
  s->base.put_part = ms_part;
  s->base.put_commit = ms_commit;
  s->base.put_abort = ms_abort;
  s->base.close = ms_close;
  s->base.impl = s;
  return s;
}
static long ms_parts_written(mstore *s) {
  long n;
  pthread_mutex_lock(&s->mu);
  n = s->puts;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* ~n objects with the sizes the brief asks for (0, 1, one chunk, chunk+1, several chunks) and random ones. */
static uint64_t fill_store(mstore *s, int n, uint64_t chunk, uint64_t max_size, uint64_t seed) {
  mlsys_rng r;
  uint64_t fixed[6], total = 0;
  int i;
  fixed[0] = 0; fixed[1] = 1; fixed[2] = chunk; fixed[3] = chunk + 1; fixed[4] = 3 * chunk + 5; fixed[5] = chunk - 1;
  mlsys_rng_seed(&r, seed);
  for (i = 0; i < n; i++) {
    char key[64];
    uint64_t size = i < 6 ? fixed[i] : mlsys_rng_below(&r, max_size + 1), j;
    uint8_t *d = (uint8_t *)malloc(size ? (size_t)size : 1);
    for (j = 0; j < size; j++) d[j] = (uint8_t)(mlsys_rng_u64(&r) >> 56);
    snprintf(key, sizeof key, "dir%d/obj-%03d.bin", i % 4, i);
    ms_set(s, key, d, size);
    total += size;
  }
  return total;
}
static uint64_t fill_big(mstore *s, int n, uint64_t size, uint64_t seed) {
  int i;
  uint64_t j;
  mlsys_rng r;
  mlsys_rng_seed(&r, seed);
  for (i = 0; i < n; i++) {
    char key[64];
    uint64_t *d = (uint64_t *)malloc((size_t)size + 8);
    for (j = 0; j < size / 8 + 1; j++) d[j] = mlsys_rng_u64(&r);
    snprintf(key, sizeof key, "big/%d", i);
    ms_set(s, key, (uint8_t *)d, size);
  }
  return (uint64_t)n * size;
}

/* Byte-identical, every part written exactly once, no upload left open. Returns 1 when all hold. */
static int same_stores(mstore *a, mstore *b) {
  int i, ok = 1;
  pthread_mutex_lock(&a->mu);
  pthread_mutex_lock(&b->mu);
  if (a->n != b->n) { printf("    objects: %d at the source, %d at the destination\n", a->n, b->n); ok = 0; }
  for (i = 0; i < a->n && ok; i++) {
    mobj *x = &a->o[i], *y = ms_find(b, x->key);
    if (!y) { printf("    '%s' missing at the destination\n", x->key); ok = 0; }
    else if (x->size != y->size || (x->size && memcmp(x->data, y->data, (size_t)x->size))) {
      printf("    '%s' differs\n", x->key);
      ok = 0;
    }
  }
  if (b->dup_writes) { printf("    %ld duplicate part writes\n", b->dup_writes); ok = 0; }
  if (b->open_uploads) { printf("    %ld uploads left open\n", b->open_uploads); ok = 0; }
  pthread_mutex_unlock(&b->mu);
  pthread_mutex_unlock(&a->mu);
  return ok;
}

/* ---------------------------------------------------------------------------------------------------------------
   Overlays
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_xfer_overlay ov;
  mlsys_xfer_gw gw[8];
  mlsys_xfer_edge e[16];
} ovl;
static void ov_gw(ovl *o, int role) {
  mlsys_xfer_gw *g = &o->gw[o->ov.ngw++];
  memset(g, 0, sizeof *g);
  g->role = role;
  snprintf(g->host, sizeof g->host, "127.0.0.1");
  snprintf(g->region, sizeof g->region, "test:%d", o->ov.ngw - 1);
}
static void ov_edge(ovl *o, int from, int to, int nconn, double gbps) {
  mlsys_xfer_edge *e = &o->e[o->ov.nedge++];
  memset(e, 0, sizeof *e);
  e->from = from; e->to = to; e->nconn = nconn; e->rate_gbps = gbps;
}
static void ov_init(ovl *o) {
  memset(o, 0, sizeof *o);
  o->ov.gw = o->gw;
  o->ov.edge = o->e;
}
/* src(0) -> relay(1) -> dst(2) */
static void ov_chain(ovl *o, int nconn, double r01, double r12) {
  ov_init(o);
  ov_gw(o, MLSYS_XFER_SRC); ov_gw(o, MLSYS_XFER_RELAY); ov_gw(o, MLSYS_XFER_DST);
  ov_edge(o, 0, 1, nconn, r01); ov_edge(o, 1, 2, nconn, r12);
}
/* src(0) -> {relay1(1), relay2(2)} -> dst(3), plus src -> dst */
static void ov_diamond(ovl *o, int nconn, double rate) {
  ov_init(o);
  ov_gw(o, MLSYS_XFER_SRC); ov_gw(o, MLSYS_XFER_RELAY); ov_gw(o, MLSYS_XFER_RELAY); ov_gw(o, MLSYS_XFER_DST);
  ov_edge(o, 0, 1, nconn, rate); ov_edge(o, 0, 2, nconn, rate); ov_edge(o, 0, 3, nconn, rate);
  ov_edge(o, 1, 3, nconn, rate); ov_edge(o, 2, 3, nconn, rate);
}
static void ov_direct(ovl *o, int nconn, double rate) {
  ov_init(o);
  ov_gw(o, MLSYS_XFER_SRC); ov_gw(o, MLSYS_XFER_DST);
  ov_edge(o, 0, 1, nconn, rate);
}

/* A port nobody listens on right now (for gateways in other processes, whose port must be known up front). */
static int pick_port(void) {
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, (struct sockaddr *)&sa, sizeof sa);
  getsockname(fd, (struct sockaddr *)&sa, &sl);
  port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}
/* An exited thread's /proc entry can outlive its join by a moment: poll until the baseline is back (at once when
   nothing lags; the 60 s cap is a hang guard, not a time window a loaded machine could miss). */
static int settle(const char *path, int want) {
  int i, n = count_dir(path);
  for (i = 0; i < 6000 && n != want; i++) { mlsys__xfer_dp_sleep(0.01); n = count_dir(path); }
  return n;
}
static int count_fds(void) { return count_dir("/proc/self/fd"); }
static int count_threads(void) { return count_dir("/proc/self/task"); }

static mlsys_xfer_copy_opts copts(uint64_t chunk) {
  mlsys_xfer_copy_opts o;
  memset(&o, 0, sizeof o);
  o.gw.chunk_bytes = chunk;
  o.timeout_s = 300;   /* a hang guard: these copies take seconds at most, however loaded the machine */
  return o;
}

/* Copies src to a fresh store over ov; checks the copy; returns the destination (caller closes). */
static mstore *run_copy(const ovl *o, mstore *src, const mlsys_xfer_copy_opts *co, mlsys_xfer_copy_result *r,
                        mlsys_status *st) {
  mstore *dst = ms_new();
  *st = mlsys_xfer_copy(&o->ov, &src->base, &dst->base, co, r);
  if (*st != MLSYS_OK) printf("    copy: %s\n", mlsys_last_error());
  return dst;
}

/* ---------------------------------------------------------------------------------------------------------------
   CRC, wire, chunking, overlay checks
   --------------------------------------------------------------------------------------------------------------- */
TEST(crc32c_is_the_common_one) {
  /* the wire format's CRC is mlsys_common.h's (tested in test_common.c) */
  CHECK_EQ_INT(mlsys_xfer_crc32c(0, "123456789", 9), 0xE3069283u);
  CHECK_EQ_INT(mlsys_xfer_crc32c(0, "0123456789abcdef", 16), mlsys_crc32c(0, "0123456789abcdef", 16));
}

static void sample_hdr(mlsys_xfer_wire_hdr *h) {
  memset(h, 0, sizeof *h);
  h->type = MLSYS_XFER_FRAME_DATA;
  mlsys_xfer_chunk_id(0x1122334455667788ull, 3, 2, h->chunk_id);
  h->obj_size = 2500;
  h->part_bytes = 1000;
  h->part = 2;
  h->data_len = 500;
  h->n_left = 7;
  h->gw = 3;
  h->crc = 0xDEADBEEF;
  h->job_id = 0x1122334455667788ull;
  snprintf(h->key, sizeof h->key, "a/b/c.txt");
}

TEST(wire_roundtrip) {
  mlsys_xfer_wire_hdr h, u;
  uint8_t b[MLSYS_XFER_WIRE_MAX_LEN];
  size_t n = 0, used = 0, total = 0;
  mlsys_xfer_ack a, a2;
  uint8_t ab[MLSYS_XFER_ACK_LEN];
  sample_hdr(&h);
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, b, sizeof b, &n));
  CHECK_EQ_INT(n, 87 + 9);
  CHECK(memcmp(b, "SKY_LARK", 8) == 0);
  /* Skyplane's 45-byte base header at its offsets */
  CHECK_EQ_INT(mlsys__xfer_dp_get32(b + 8), 4);
  CHECK(memcmp(b + 12, h.chunk_id, 16) == 0);
  CHECK_EQ_INT(mlsys__xfer_dp_get64(b + 28), 500);
  CHECK_EQ_INT(b[36], 0);
  CHECK_EQ_INT(mlsys__xfer_dp_get64(b + 37), 7);
  CHECK_EQ_INT(MLSYS_XFER_WIRE_BASE_LEN, 45);
  CHECK_EQ_INT(b[45], MLSYS_XFER_FRAME_DATA);
  REQUIRE_OK(mlsys_xfer_wire_header_len(b, MLSYS_XFER_WIRE_PREFIX_LEN, &total));
  CHECK_EQ_INT(total, n);
  REQUIRE_OK(mlsys_xfer_wire_unpack(b, n, &u, &used));
  CHECK_EQ_INT(used, n);
  CHECK(memcmp(u.chunk_id, h.chunk_id, 16) == 0);
  CHECK_EQ_INT(u.data_len, 500);
  CHECK_EQ_INT(u.n_left, 7);
  CHECK_EQ_INT(u.type, MLSYS_XFER_FRAME_DATA);
  CHECK_EQ_INT(u.gw, 3);
  CHECK_EQ_INT(u.crc, 0xDEADBEEFu);
  CHECK_EQ_INT(u.job_id, 0x1122334455667788ull);
  CHECK_EQ_INT(u.obj_size, 2500);
  CHECK_EQ_INT(u.part_bytes, 1000);
  CHECK_EQ_INT(u.part, 2);
  CHECK_STR(u.key, "a/b/c.txt");
  /* FIN and HELLO frames have no key and no payload */
  memset(&h, 0, sizeof h);
  h.type = MLSYS_XFER_FRAME_FIN;
  h.flags = MLSYS_XFER_FIN_ABORTED;
  h.job_id = 9;
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, b, sizeof b, &n));
  CHECK_EQ_INT(n, MLSYS_XFER_WIRE_MIN_LEN);
  REQUIRE_OK(mlsys_xfer_wire_unpack(b, n, &u, NULL));
  CHECK_EQ_INT(u.type, MLSYS_XFER_FRAME_FIN);
  CHECK_EQ_INT(u.flags, MLSYS_XFER_FIN_ABORTED);
  /* a key of exactly 1024 bytes */
  sample_hdr(&h);
  memset(h.key, 'k', MLSYS_XFER_KEY_MAX);
  h.key[MLSYS_XFER_KEY_MAX] = 0;
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, b, sizeof b, &n));
  CHECK_EQ_INT(n, MLSYS_XFER_WIRE_MAX_LEN);
  REQUIRE_OK(mlsys_xfer_wire_unpack(b, n, &u, NULL));
  CHECK_EQ_INT(strlen(u.key), MLSYS_XFER_KEY_MAX);
  /* acks */
  mlsys_xfer_chunk_id(5, 6, 7, a.chunk_id);
  a.status = MLSYS_XFER_ACK_BAD_CHECKSUM;
  mlsys_xfer_ack_pack(&a, ab);
  CHECK(memcmp(ab, "SKYA", 4) == 0);
  REQUIRE_OK(mlsys_xfer_ack_unpack(ab, sizeof ab, &a2));
  CHECK_EQ_INT(a2.status, MLSYS_XFER_ACK_BAD_CHECKSUM);
  CHECK(memcmp(a2.chunk_id, a.chunk_id, 16) == 0);
}

TEST(wire_rejects_bad_input) {
  mlsys_xfer_wire_hdr h, u;
  uint8_t b[MLSYS_XFER_WIRE_MAX_LEN + 8], c[MLSYS_XFER_WIRE_MAX_LEN + 8];
  size_t n = 0, cut;
  mlsys_xfer_ack a;
  uint8_t ab[MLSYS_XFER_ACK_LEN];
  sample_hdr(&h);
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, b, sizeof b, &n));
  /* wrong magic */
  memcpy(c, b, n); c[0] ^= 1;
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "bad magic");
  /* wrong version (a Skyplane v3 peer) */
  memcpy(c, b, n); c[11] = 3;
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "unsupported protocol version 3");
  /* oversized data_len (2 GiB), oversized key length */
  memcpy(c, b, n); mlsys__xfer_dp_put64(c + 28, 2ull << 30);
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "data_len 2147483648 exceeds the 1 GiB limit");
  memcpy(c, b, n); mlsys__xfer_dp_put16(c + 81, 5000);
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "key length 5000 exceeds 1024");
  /* truncated anywhere */
  for (cut = 0; cut < n; cut++) {
    CHECK_EQ_INT(mlsys_xfer_wire_unpack(b, cut, &u, NULL), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "truncated header");
  }
  /* a flipped bit after the magic and version: the header checksum */
  memcpy(c, b, n); c[60] ^= 0x10;
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "header checksum mismatch");
  /* a NUL inside the key of any frame type (found by fuzz_xfer_wire: a HELLO whose key did not round-trip) */
  memset(&h, 0, sizeof h); h.type = MLSYS_XFER_FRAME_HELLO;
  snprintf(h.key, sizeof h.key, "abcdef");
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, c, sizeof c, &n));
  c[85] = 0;
  mlsys__xfer_dp_put32(c + n - 4, mlsys_xfer_crc32c(0, c, n - 4));
  CHECK_EQ_INT(mlsys_xfer_wire_unpack(c, n, &u, NULL), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "key contains a NUL byte");
  /* inconsistent fields (caught by pack too) */
  sample_hdr(&h); h.data_len = 499;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "has data_len 499");
  sample_hdr(&h); h.part = 3;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "past its 3 parts");
  sample_hdr(&h); h.obj_size = 1ull << 40; h.part_bytes = 1; h.part = 0; h.data_len = 1;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "more than 1048576 parts");
  sample_hdr(&h); h.is_compressed = 1;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "compressed");
  sample_hdr(&h); h.key[0] = 0;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "without an object key");
  memset(&h, 0, sizeof h); h.type = MLSYS_XFER_FRAME_HELLO; h.data_len = 5;
  CHECK_EQ_INT(mlsys_xfer_wire_pack(&h, c, sizeof c, &n), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "HELLO frame carries 5 payload bytes");
  /* acks */
  memset(&a, 0, sizeof a);
  mlsys_xfer_ack_pack(&a, ab);
  CHECK_EQ_INT(mlsys_xfer_ack_unpack(ab, 27, &a), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "truncated");
  ab[1] ^= 1;
  CHECK_EQ_INT(mlsys_xfer_ack_unpack(ab, sizeof ab, &a), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "bad magic");
  ab[1] ^= 1; ab[10] ^= 1;
  CHECK_EQ_INT(mlsys_xfer_ack_unpack(ab, sizeof ab, &a), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "checksum");
}

TEST(chunking) {
  mlsys_xfer_obj objs[5];
  char *keys[5] = {(char *)"a", (char *)"b", (char *)"c", (char *)"d", (char *)"e"};
  uint64_t sizes[5] = {0, 1, 100, 101, 300}, n = 0, n2 = 0, i, j;
  mlsys_xfer_chunk *c = NULL, *c2 = NULL;
  int k;
  for (k = 0; k < 5; k++) { objs[k].key = keys[k]; objs[k].size = sizes[k]; }
  REQUIRE_OK(mlsys_xfer_chunk_objects(objs, 5, 100, 42, &c, &n));
  CHECK_EQ_INT(n, 1 + 1 + 1 + 2 + 3);
  CHECK_EQ_INT(c[0].len, 0);            /* a 0-byte object is one empty chunk */
  CHECK_EQ_INT(c[0].nparts, 1);
  CHECK_EQ_INT(c[1].len, 1);
  CHECK_EQ_INT(c[2].len, 100);
  CHECK_EQ_INT(c[3].len, 100);
  CHECK_EQ_INT(c[4].len, 1);            /* chunk + 1: the last chunk is short */
  CHECK_EQ_INT(c[4].offset, 100);
  CHECK_EQ_INT(c[7].len, 100);
  CHECK_EQ_INT(c[7].part, 2);
  CHECK_EQ_INT(c[7].obj, 4);
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++) CHECK(memcmp(c[i].id, c[j].id, 16) != 0);
  REQUIRE_OK(mlsys_xfer_chunk_objects(objs, 5, 100, 42, &c2, &n2));   /* deterministic */
  CHECK_EQ_INT(n2, n);
  for (i = 0; i < n; i++) CHECK(memcmp(c[i].id, c2[i].id, 16) == 0);
  CHECK(mlsys_xfer_job_id(objs, 5, 100) == mlsys_xfer_job_id(objs, 5, 100));
  CHECK(mlsys_xfer_job_id(objs, 5, 100) != mlsys_xfer_job_id(objs, 5, 101));
  mlsys_free(c);
  mlsys_free(c2);
  mlsys_free(NULL);
  REQUIRE_OK(mlsys_xfer_chunk_objects(objs, 0, 0, 1, &c, &n));
  CHECK_EQ_INT(n, 0);
  mlsys_free(c);
}

/* The longest source-to-destination path in edges, by depth-first search over every path (small overlays only). */
static int longest_path(const mlsys_xfer_overlay *ov, int at, int depth) {
  int i, best = ov->gw[at].role == MLSYS_XFER_DST ? depth : -1;
  for (i = 0; i < ov->nedge; i++)
    if (ov->edge[i].from == at) {
      int l = longest_path(ov, ov->edge[i].to, depth + 1);
      if (l > best) best = l;
    }
  return best;
}

/* The chunk-size rule (issue 19 item 7): relays store and forward whole chunks and a chunk holds its source slot
   until the destination has it, so after the last chunk leaves the source about queue_cap chunks still cross each
   hop. The rule must keep that tail, queue_cap x chunk x hops, under 1/12 of the transfer whenever 64 KiB chunks
   allow it (the pipeline model then predicts >= 12/13 of the rate), leave direct paths at Skyplane's 8 MiB, and stay
   within the wire's limits. Checked over random overlays and object lists against hops found here by brute force. */
TEST(chunk_auto_rule) {
  mlsys_rng rng;
  mlsys_xfer_obj objs[40];
  char keys[40][16];
  int trial, k;
  ovl o;
  mlsys_rng_seed(&rng, 7);
  for (k = 0; k < 40; k++) { snprintf(keys[k], sizeof keys[k], "o%d", k); objs[k].key = keys[k]; }
  /* the case: 16 objects of 8 MiB through one relay, queue 16: 128 MiB / (12 * 16 * 2) -> 320 KiB */
  for (k = 0; k < 16; k++) objs[k].size = 8 * MiB;
  ov_chain(&o, 30, 0, 0);
  CHECK_EQ_INT(mlsys_xfer_chunk_auto(&o.ov, 16, objs, 16), 320 * KiB);
  CHECK_EQ_INT(mlsys_xfer_chunk_auto(&o.ov, 0, objs, 16), 320 * KiB);   /* queue_cap 0 is the default 16 */
  ov_direct(&o, 30, 0);
  CHECK_EQ_INT(mlsys_xfer_chunk_auto(&o.ov, 16, objs, 16), 8 * MiB);   /* no relay: no pipeline to fill */
  for (trial = 0; trial < 300; trial++) {
    int n = 1 + (int)mlsys_rng_below(&rng, 40), q = 1 + (int)mlsys_rng_below(&rng, 64), hops, shape = trial % 4;
    uint64_t c, bytes = 0, nchunks = 0, biggest = 0;
    for (k = 0; k < n; k++) {
      /* sizes from bytes to gigabytes, and now and then a 16 TiB object (needs > 8 MiB parts) */
      objs[k].size = trial % 50 == 49 && k == 0 ? 16ull << 40 : mlsys_rng_below(&rng, 1ull << (10 + mlsys_rng_below(&rng, 22)));
      bytes += objs[k].size;
      if (objs[k].size > biggest) biggest = objs[k].size;
    }
    if (shape == 0) ov_direct(&o, 4, 0);
    else if (shape == 1) ov_chain(&o, 4, 0, 0);
    else if (shape == 2) ov_diamond(&o, 2, 0);
    else {   /* a chain of 2..6 relays with a shortcut from the source to the destination */
      int r = 2 + (int)mlsys_rng_below(&rng, 5), i;
      ov_init(&o);
      ov_gw(&o, MLSYS_XFER_SRC);
      for (i = 0; i < r; i++) ov_gw(&o, MLSYS_XFER_RELAY);
      ov_gw(&o, MLSYS_XFER_DST);
      for (i = 0; i <= r; i++) ov_edge(&o, i, i + 1, 1, 0);
      ov_edge(&o, 0, r + 1, 1, 0);
    }
    REQUIRE_OK(mlsys_xfer_overlay_check(&o.ov));
    hops = longest_path(&o.ov, 0, 0);
    c = mlsys_xfer_chunk_auto(&o.ov, q, objs, n);
    for (k = 0; k < n; k++) nchunks += objs[k].size ? (objs[k].size + c - 1) / c : 1;
    CHECK_MSG(c >= 64 * KiB && c % (64 * KiB) == 0 && c <= MLSYS_XFER_DATA_MAX, "trial %d: chunk %llu", trial, (unsigned long long)c);
    CHECK_MSG((biggest + c - 1) / c <= MLSYS_XFER_MAX_PARTS, "trial %d: %llu parts", trial, (unsigned long long)((biggest + c - 1) / c));
    if (biggest <= (8 * MiB) * (uint64_t)MLSYS_XFER_MAX_PARTS) CHECK(c <= 8 * MiB);
    if (hops == 1 && biggest <= (8 * MiB) * (uint64_t)MLSYS_XFER_MAX_PARTS) CHECK_EQ_INT(c, 8 * MiB);
    if (hops >= 2 && bytes >= 12ull * q * hops * 64 * KiB && biggest <= (64 * KiB) * (uint64_t)MLSYS_XFER_MAX_PARTS) {
      /* the tail the last window leaves is at most 1/12 of the transfer, and no smaller chunk than needed */
      CHECK_MSG((uint64_t)q * c * hops * 12 <= bytes, "trial %d: %d x %llu x %d hops > 1/12 of %llu bytes", trial, q,
                (unsigned long long)c, hops, (unsigned long long)bytes);
      CHECK_MSG(c == 8 * MiB || (uint64_t)q * (c + 64 * KiB) * hops * 12 > bytes, "trial %d: chunk %llu smaller than needed", trial,
                (unsigned long long)c);
      CHECK(nchunks >= 12ull * q * hops || c == 8 * MiB);
    }
  }
}

/* A source with chunk_bytes 0 uses the rule; every byte still arrives. */
TEST(copy_uses_chunk_auto) {
  ovl o;
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(0);
  mlsys_xfer_copy_result r;
  mlsys_xfer_obj *objs = NULL;
  mlsys_status st;
  uint64_t want, nch = 0;
  int n = 0, k;
  fill_big(src, 6, 2 * MiB + 1000, 4);
  ov_chain(&o, 3, 0, 0);
  REQUIRE_OK(src->base.list(&src->base, &objs, &n));
  want = mlsys_xfer_chunk_auto(&o.ov, 16, objs, n);
  for (k = 0; k < n; k++) nch += (objs[k].size + want - 1) / want;
  mlsys_xfer_objs_free(objs, n);
  CHECK_EQ_INT(want, 64 * KiB);   /* 12 MB / (12 * 16 * 2) = 31 KiB -> the 64 KiB floor */
  dst = run_copy(&o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  CHECK_EQ_INT(r.chunk_bytes, want);
  CHECK_EQ_INT(r.chunks, nch);
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

TEST(overlay_check_rejects) {
  ovl o;
  ov_chain(&o, 2, 0, 0);
  CHECK_OK(mlsys_xfer_overlay_check(&o.ov));
  o.gw[1].role = MLSYS_XFER_SRC;
  CHECK_EQ_INT(mlsys_xfer_overlay_check(&o.ov), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "2 source");
  ov_chain(&o, 2, 0, 0);
  snprintf(o.gw[2].host, sizeof o.gw[2].host, "example.com");
  CHECK_EQ_INT(mlsys_xfer_overlay_check(&o.ov), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not an IPv4 address");
  ov_diamond(&o, 1, 0);
  ov_edge(&o, 2, 1, 1, 0); ov_edge(&o, 1, 2, 1, 0);   /* relay1 <-> relay2 */
  CHECK_EQ_INT(mlsys_xfer_overlay_check(&o.ov), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "cycle");
  ov_chain(&o, 40, 0, 0);
  ov_edge(&o, 0, 2, 40, 0);
  CHECK_EQ_INT(mlsys_xfer_overlay_check(&o.ov), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "more than 64");
  ov_init(&o);
  ov_gw(&o, MLSYS_XFER_SRC); ov_gw(&o, MLSYS_XFER_RELAY); ov_gw(&o, MLSYS_XFER_DST);
  ov_edge(&o, 0, 2, 1, 0); ov_edge(&o, 0, 1, 1, 0);
  CHECK_EQ_INT(mlsys_xfer_overlay_check(&o.ov), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "relay 1 has no outgoing");
}

/* ---------------------------------------------------------------------------------------------------------------
   Whole copies
   --------------------------------------------------------------------------------------------------------------- */
static void copy_case(const ovl *o, int assign, uint64_t seed) {
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(64 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  uint64_t total = fill_store(src, 50, 64 * KiB, 300 * KiB, seed);
  int i, ndst = o->ov.ngw - 1, fds0 = count_fds(), th0 = count_threads();
  co.gw.assign = assign;
  co.gw.queue_cap = 8;
  dst = run_copy(o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK_EQ_INT(settle("/proc/self/fd", fds0), fds0);        /* every gateway closed its sockets */
  CHECK_EQ_INT(settle("/proc/self/task", th0), th0);     /* and joined its threads */
  CHECK(same_stores(src, dst));
  CHECK_EQ_INT(r.bytes, total);
  CHECK_EQ_INT(r.objects, 50);
  CHECK_EQ_INT(dst->begins, 50);    /* put_begin once per object, lazily */
  CHECK_EQ_INT(dst->commits, 50);
  CHECK_EQ_INT(r.gw[ndst].objects, 50);
  CHECK_EQ_INT(r.resends, 0);
  CHECK_EQ_INT(r.checksum_failures, 0);
  {
    uint64_t into_dst = 0;
    for (i = 0; i < o->ov.nedge; i++) if (o->e[i].to == ndst) into_dst += r.edge_bytes[i];
    CHECK_EQ_INT(into_dst, total);   /* no faults: every byte crosses into the destination once */
  }
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

TEST(copy_chain_dynamic) { ovl o; ov_chain(&o, 3, 0, 0); copy_case(&o, MLSYS_XFER_DYNAMIC, 1); }
TEST(copy_chain_round_robin) { ovl o; ov_chain(&o, 3, 0, 0); copy_case(&o, MLSYS_XFER_ROUND_ROBIN, 2); }
TEST(copy_diamond_dynamic) { ovl o; ov_diamond(&o, 2, 0); copy_case(&o, MLSYS_XFER_DYNAMIC, 3); }
TEST(copy_diamond_round_robin) { ovl o; ov_diamond(&o, 2, 0); copy_case(&o, MLSYS_XFER_ROUND_ROBIN, 4); }

TEST(copy_empty_source) {
  ovl o;
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(0);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  ov_chain(&o, 2, 0, 0);
  dst = run_copy(&o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK_EQ_INT(r.chunks, 0);
  CHECK_EQ_INT(dst->n, 0);
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

static void faults_case(const ovl *o, int assign) {
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(64 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  int fds0 = count_fds(), th0 = count_threads();
  fill_store(src, 50, 64 * KiB, 300 * KiB, 11);
  co.gw.assign = assign;
  co.gw.faults.kill_every = 13;
  co.gw.faults.corrupt_every = 7;
  co.gw.faults.seed = 5;
  dst = run_copy(o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  CHECK(dst->max_part_count == 1);
  CHECK(r.resends > 0);
  CHECK(r.checksum_failures > 0);
  CHECK(r.conn_failures > 0);
  CHECK_EQ_INT(settle("/proc/self/fd", fds0), fds0);
  CHECK_EQ_INT(settle("/proc/self/task", th0), th0);
  printf("    %llu resends, %llu checksum failures, %llu connection failures, %llu duplicates dropped at the destination\n",
         (unsigned long long)r.resends, (unsigned long long)r.checksum_failures, (unsigned long long)r.conn_failures,
         (unsigned long long)r.duplicates);
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}
TEST(faults_chain_kills_and_corruption) { ovl o; ov_chain(&o, 3, 0, 0); faults_case(&o, MLSYS_XFER_DYNAMIC); }
TEST(faults_diamond_round_robin) { ovl o; ov_diamond(&o, 2, 0); faults_case(&o, MLSYS_XFER_ROUND_ROBIN); }

TEST(destination_store_failure_aborts) {
  ovl o;
  mstore *src = ms_new(), *dst = ms_new();
  mlsys_xfer_copy_opts co = copts(64 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  fill_store(src, 20, 64 * KiB, 200 * KiB, 5);
  dst->poison = "obj-007";
  ov_chain(&o, 2, 0, 0);
  st = mlsys_xfer_copy(&o.ov, &src->base, &dst->base, &co, &r);
  CHECK_EQ_INT(st, MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "could not store 'dir3/obj-007.bin'");
  CHECK_EQ_INT(dst->open_uploads, 0);   /* the aborted job's uploads were aborted */
  CHECK(!ms_find(dst, "dir3/obj-007.bin"));
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

/* ---------------------------------------------------------------------------------------------------------------
   A relay in another process: a launcher forked while this process has no threads forks the relay on request,
   so the relay never inherits locks held by this process's threads.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { int cmd, resp; pid_t pid; } launcher;

static void launcher_loop(int cmd, int resp, const mlsys_xfer_overlay *ov, int id) {
  pid_t relay = -1;
  char c, ok = 'k';
  while (read(cmd, &c, 1) == 1) {
    if (c == 'S') {
      relay = fork();
      if (relay == 0) {
        mlsys_xfer_gw_opts go;
        mlsys_status st;
        close(cmd); close(resp);
        memset(&go, 0, sizeof go);
        go.timeout_s = 300;   /* a hang guard only */
        st = mlsys_xfer_gateway_run(ov, id, NULL, &go, NULL);
        _exit(st == MLSYS_OK ? 0 : 1);
      }
    } else if (c == 'K' && relay > 0) {
      kill(relay, SIGKILL);
      waitpid(relay, NULL, 0);
      relay = -1;
    } else if (c == 'W' && relay > 0) {   /* wait (hang guard: 300 s) for the relay to exit; '0' on a clean exit */
      int status = 0, i;
      ok = 't';
      for (i = 0; i < 30000; i++) {
        if (waitpid(relay, &status, WNOHANG) == relay) { ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? '0' : 'x'; relay = -1; break; }
        mlsys__xfer_dp_sleep(0.01);
      }
    } else if (c == 'Q') break;
    if (write(resp, &ok, 1) != 1) break;
    ok = 'k';
  }
  if (relay > 0) { kill(relay, SIGKILL); waitpid(relay, NULL, 0); }
  _exit(0);
}

static int launcher_start(launcher *l, const mlsys_xfer_overlay *ov, int id) {
  int a[2], b[2], fd;
  if (pipe(a) || pipe(b)) return -1;
  fflush(stdout);
  l->pid = fork();
  if (l->pid < 0) return -1;
  if (l->pid == 0) {
    for (fd = 3; fd < 256; fd++) if (fd != a[0] && fd != b[1]) close(fd);
    launcher_loop(a[0], b[1], ov, id);
  }
  close(a[0]); close(b[1]);
  l->cmd = a[1];
  l->resp = b[0];
  return 0;
}
static char launcher_do(launcher *l, char c) {
  char r = 0;
  if (write(l->cmd, &c, 1) != 1 || read(l->resp, &r, 1) != 1) return 0;
  return r;
}
static void launcher_end(launcher *l) {
  launcher_do(l, 'Q');
  close(l->cmd); close(l->resp);
  waitpid(l->pid, NULL, 0);
}

typedef struct {
  const ovl *o;
  mstore *src, *dst;
  mlsys_xfer_copy_opts co;
  mlsys_xfer_copy_result r;
  mlsys_status st;
  char err[512];
} copy_job;
static void *copy_thread(void *arg) {
  copy_job *j = (copy_job *)arg;
  j->st = mlsys_xfer_copy(&j->o->ov, &j->src->base, &j->dst->base, &j->co, &j->r);
  snprintf(j->err, sizeof j->err, "%.500s", mlsys_last_error());
  return NULL;
}

static void relay_kill_case(int restart) {
  ovl o;
  launcher l;
  copy_job j;
  pthread_t th;
  long parts_total = 0, i;
  int relay = 1;
  uint64_t total;
  if (restart) ov_chain(&o, 2, 0, 0.2);   /* src -> relay -> dst, the last edge at 25 MB/s */
  else ov_diamond(&o, 2, 0.1);            /* every edge at 12.5 MB/s */
  o.gw[relay].port = pick_port();
  o.gw[o.ov.ngw - 1].port = pick_port();
  memset(&j, 0, sizeof j);
  j.o = &o;
  j.src = ms_new();
  j.dst = ms_new();
  total = fill_big(j.src, 16, 1 * MiB, 21);
  for (i = 0; i < j.src->n; i++) parts_total += (long)((j.src->o[i].size + 128 * KiB - 1) / (128 * KiB));
  j.co = copts(128 * KiB);
  j.co.external_mask = 1ull << relay;
  /* the destination's writes stop at a quarter until the relay is dead: it dies mid-transfer on any machine */
  j.dst->gate_after = parts_total / 4;
  REQUIRE(launcher_start(&l, &o.ov, relay) == 0);
  CHECK(launcher_do(&l, 'S') == 'k');
  REQUIRE(pthread_create(&th, NULL, copy_thread, &j) == 0);
  CHECK(ms_wait_for(j.dst, &j.dst->puts, parts_total / 4) == parts_total / 4);
  CHECK(launcher_do(&l, 'K') == 'k');
  ms_gate_open(j.dst);
  if (restart) CHECK(launcher_do(&l, 'S') == 'k');
  pthread_join(th, NULL);
  if (j.st != MLSYS_OK) printf("    copy: %s\n", j.err);
  CHECK_OK(j.st);
  CHECK(same_stores(j.src, j.dst));
  CHECK(j.dst->max_part_count == 1);
  CHECK_EQ_INT(j.r.bytes, total);
  CHECK(j.r.resends > 0 || j.r.conn_failures > 0);
  if (restart) CHECK(launcher_do(&l, 'W') == '0');   /* the restarted relay got the FIN and exited cleanly */
  printf("    %.2f s, %llu resends, %llu connection failures, %llu duplicates dropped at the destination\n", j.r.seconds,
         (unsigned long long)j.r.resends, (unsigned long long)j.r.conn_failures, (unsigned long long)j.r.duplicates);
  launcher_end(&l);
  mlsys_xfer_copy_result_free(&j.r);
  ms_close(&j.src->base);
  ms_close(&j.dst->base);
}
TEST(relay_killed_and_restarted) { relay_kill_case(1); }
TEST(relay_killed_other_path_finishes) { relay_kill_case(0); }

/* ---------------------------------------------------------------------------------------------------------------
   Flow control, token buckets, stragglers, throughput
   --------------------------------------------------------------------------------------------------------------- */
/* Hop-by-hop flow control: with the destination's writes held (a gate, not a slow link, so the outcome does not
   depend on the machine's speed), the window fills: the relay and the source each come to hold exactly queue_cap
   chunks and no gateway ever holds more than its bound. The gateways run one by one so the relay can be watched. */
TEST(flow_control_relay_buffer_bound) {
  ovl o;
  mstore *src = ms_new(), *dst = ms_new();
  mlsys_xfer_gw_opts go;
  mlsys_xfer_gateway *gw[3] = {NULL, NULL, NULL};
  mlsys_xfer_gw_result res[3], live;
  double t0;
  int i;
  fill_big(src, 6, 1 * MiB, 3);
  ov_chain(&o, 4, 0, 0);
  memset(&go, 0, sizeof go);
  go.chunk_bytes = 128 * KiB;
  go.queue_cap = 4;
  dst->gate_after = 1;
  for (i = 2; i >= 0; i--) {   /* downstream first: each needs its downstream's port */
    go.store = i == 0 ? &src->base : i == 2 ? &dst->base : NULL;
    REQUIRE_OK(mlsys_xfer_gateway_start(&o.ov, i, &go, &gw[i]));
    o.gw[i].port = mlsys_xfer_gateway_port(gw[i]);
  }
  /* the relay fills to its bound while the destination cannot write (hang guard: 120 s) */
  t0 = mlsys_now();
  do {
    mlsys_xfer_gateway_stats(gw[1], &live);
    mlsys_xfer_gw_result_free(&live);
    if (live.peak_buffered >= 4 * 128 * KiB) break;
    mlsys__xfer_dp_sleep(0.002);
  } while (mlsys_now() - t0 < 120);
  CHECK_EQ_INT(live.peak_buffered, 4 * 128 * KiB);
  ms_gate_open(dst);
  for (i = 0; i < 3; i++) CHECK_OK(mlsys_xfer_gateway_wait(gw[i], 300, &res[i]));
  CHECK(same_stores(src, dst));
  for (i = 0; i < 3; i++) {
    CHECK(res[i].buffer_bound == 4 * 128 * KiB);
    CHECK_MSG(res[i].peak_buffered <= res[i].buffer_bound, "gateway %d peak %llu > bound %llu", i,
              (unsigned long long)res[i].peak_buffered, (unsigned long long)res[i].buffer_bound);
  }
  /* the relay really filled up (the bound was what held it back), and so did the source behind it */
  CHECK_EQ_INT(res[1].peak_buffered, 4 * 128 * KiB);
  CHECK_EQ_INT(res[0].peak_buffered, 4 * 128 * KiB);
  printf("    peak buffered: source %llu, relay %llu, destination %llu bytes (bound %llu)\n",
         (unsigned long long)res[0].peak_buffered, (unsigned long long)res[1].peak_buffered,
         (unsigned long long)res[2].peak_buffered, (unsigned long long)res[1].buffer_bound);
  for (i = 0; i < 3; i++) { mlsys_xfer_gw_result_free(&res[i]); mlsys_xfer_gateway_free(gw[i]); }
  ms_close(&src->base);
  ms_close(&dst->base);
}

static double rate_case(const ovl *o, uint64_t bytes_each, int nobj, double *seconds, uint64_t *bytes) {
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(256 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  double gbps;
  fill_big(src, nobj, bytes_each, 9);
  dst = run_copy(o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  gbps = r.gbps;
  *seconds = r.seconds;
  *bytes = r.bytes;
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
  return gbps;
}

/* The token bucket's arithmetic on a simulated clock (no sleeping, so no machine speed in the verdict): senders that
   wait exactly what it says move rate x time + burst bytes, alone or four at once sharing one bucket, and an idle
   bucket saves at most one burst. */
TEST(token_bucket_arithmetic) {
  mlsys__xfer_dp_tb tb;
  const double rate = 25e6, piece = 64 * KiB, total = 20 * MiB;
  double now = 0, t[4] = {0, 0, 0, 0}, sent = 0, w;
  int k;
  mlsys__xfer_dp_tb_init(&tb, rate, piece);
  tb.last = 0;
  for (sent = 0; sent < total; sent += piece) now += mlsys__xfer_dp_tb_debit(&tb, (size_t)piece, now);
  CHECK_NEAR(now, (total - piece) / rate, 1e-9);   /* the first piece rides on the initial burst */
  /* four senders, each waiting its own turn: together they get the one rate */
  for (sent = 0; sent < total; sent += piece) {
    int first = 0;
    for (k = 1; k < 4; k++) if (t[k] < t[first]) first = k;
    t[first] = (t[first] > now ? t[first] : now);
    w = mlsys__xfer_dp_tb_debit(&tb, (size_t)piece, t[first]);
    t[first] += w;
  }
  for (now = t[0], k = 1; k < 4; k++) if (t[k] > now) now = t[k];
  CHECK_MSG(now >= (2 * total - piece) / rate * (1 - 1e-9) && now <= (2 * total - piece) / rate + 4 * piece / rate,
            "4 senders finished at %.6f s, the rate allows %.6f s", now, (2 * total - piece) / rate);
  /* ten idle seconds buy one burst, not 250 MB */
  now += 10;
  CHECK_NEAR(mlsys__xfer_dp_tb_debit(&tb, (size_t)piece, now), 0, 1e-12);
  CHECK_NEAR(mlsys__xfer_dp_tb_debit(&tb, (size_t)piece, now), piece / rate, 1e-12);
  pthread_mutex_destroy(&tb.mu);
}

/* End to end, a rate-limited edge never carries more than rate x time + one burst: a bound that holds however
   slow the machine is (a loaded machine only moves fewer bytes). */
TEST(token_bucket_rate) {
  ovl o;
  double g1, g2, s1, s2;
  uint64_t b1, b2;
  ov_direct(&o, 4, 0.2);
  g1 = rate_case(&o, 4 * MiB, 5, &s1, &b1);   /* 20 MiB at 25 MB/s: ~0.84 s */
  CHECK_MSG(b1 <= 0.2e9 / 8 * s1 + 64 * KiB, "one edge at 0.2 Gbps moved %llu bytes in %.4f s (%.4f Gbps)", (unsigned long long)b1, s1, g1);
  ov_chain(&o, 4, 0.4, 0.2);        /* two hops: the slower one decides */
  g2 = rate_case(&o, 4 * MiB, 5, &s2, &b2);
  CHECK_MSG(b2 <= 0.2e9 / 8 * s2 + 64 * KiB, "0.4 then 0.2 Gbps moved %llu bytes in %.4f s (%.4f Gbps)", (unsigned long long)b2, s2, g2);
  printf("    one edge at 0.200 Gbps: %.4f Gbps (%+.1f %%); 0.4 -> 0.2 Gbps path: %.4f Gbps (%+.1f %%)\n", g1,
         (g1 / 0.2 - 1) * 100, g2, (g2 / 0.2 - 1) * 100);
}

/* One straggler among 4 connections (connection 0 at 1/50 of its fair share: 64 KiB in 0.26 s). The verdicts rest on
   bytes and on the straggler's own token bucket, not on how fast the machine is: round robin deals connection 0
   exactly a quarter of the chunks, so it cannot finish before that quarter crawls through (a lower bound that any
   slowness only raises); dynamic assignment lets connection 0 take a chunk only when it is free, so it carries far
   less than a quarter (the others would have to run 50x slower than their share for it to get half of one). */
static void straggler_case(int assign, double *seconds, uint64_t *slow_bytes, uint64_t *total) {
  ovl o;
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(64 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_status st;
  *total = fill_big(src, 2, 1 * MiB, 17);
  ov_direct(&o, 4, 0.4);   /* 50 MB/s shared; connection 0 gets 1/50 of its 12.5 MB/s share */
  co.gw.assign = assign;
  co.gw.faults.slow_conn = 1;
  co.gw.faults.slow_factor = 50;
  dst = run_copy(&o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  CHECK_EQ_INT(r.resends, 0);
  *seconds = r.seconds;
  *slow_bytes = r.gw[0].nconn == 4 ? r.gw[0].conn_bytes[0] : 0;
  CHECK_EQ_INT(r.gw[0].nconn, 4);
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

TEST(dynamic_beats_round_robin_with_straggler) {
  double dyn, rr, slow_rate = 0.4e9 / 8 / 4 / 50;
  uint64_t dyn_slow, rr_slow, total;
  straggler_case(MLSYS_XFER_DYNAMIC, &dyn, &dyn_slow, &total);
  straggler_case(MLSYS_XFER_ROUND_ROBIN, &rr, &rr_slow, &total);
  printf("    one of 4 connections 50x slower: round robin gave it %llu of %llu bytes and took %.3f s (at least %.3f s); "
         "dynamic gave it %llu bytes, %.3f s\n", (unsigned long long)rr_slow, (unsigned long long)total, rr,
         (double)(total / 4 - 64 * KiB) / slow_rate, (unsigned long long)dyn_slow, dyn);
  CHECK_EQ_INT(rr_slow, total / 4);
  CHECK_MSG(rr >= (double)(total / 4 - 64 * KiB) / slow_rate * (1 - 1e-3), "round robin %.3f s", rr);   /* less its burst */
  CHECK_MSG(dyn_slow <= total / 8, "dynamic gave the straggler %llu of %llu bytes", (unsigned long long)dyn_slow, (unsigned long long)total);
}

TEST(loopback_throughput_unlimited) {
  ovl o;
  mstore *src = ms_new(), *dst;
  mlsys_xfer_copy_opts co = copts(0);   /* 8 MiB chunks */
  mlsys_xfer_copy_result r;
  mlsys_status st;
  fill_big(src, 8, 8 * MiB, 1);
  ov_direct(&o, 4, 0);
  dst = run_copy(&o, src, &co, &r, &st);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  printf("    64 MiB over 4 connections, 1 hop, no rate limit: %.3f s, %.2f Gbps\n", r.seconds, r.gbps);
  mlsys_xfer_copy_result_free(&r);
  ms_close(&src->base);
  ms_close(&dst->base);
}

/* ---------------------------------------------------------------------------------------------------------------
   Garbage on a gateway's port
   --------------------------------------------------------------------------------------------------------------- */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_drops;
static char log_text[8192];
static void log_capture(void *ud, int level, const char *msg) {
  (void)ud; (void)level;
  pthread_mutex_lock(&log_mu);
  if (strstr(msg, "dropping connection")) log_drops++;
  if (strlen(log_text) + strlen(msg) + 2 < sizeof log_text) { strcat(log_text, msg); strcat(log_text, "\n"); }
  pthread_mutex_unlock(&log_mu);
}

static int dial(int port) {
  int fd = mlsys__xfer_dp_connect("127.0.0.1", port, 2.0);
  return fd;
}

TEST(garbage_clients_are_dropped) {
  ovl o;
  mstore *src = ms_new(), *dst = ms_new();
  mlsys_xfer_gw_opts go;
  mlsys_xfer_gateway *gd = NULL;
  mlsys_xfer_copy_opts co = copts(64 * KiB);
  mlsys_xfer_copy_result r;
  mlsys_xfer_gw_result gr;
  mlsys_xfer_wire_hdr h;
  uint8_t junk[4096], hb[MLSYS_XFER_WIRE_MAX_LEN];
  size_t hl = 0;
  int port, fds[8], nf = 0, i;
  mlsys_rng rng;
  mlsys_status st;
  fill_store(src, 30, 64 * KiB, 200 * KiB, 8);
  ov_direct(&o, 2, 0.1);
  memset(&go, 0, sizeof go);
  go.store = &dst->base;
  go.hello_timeout_s = 0.3;
  go.io_timeout_s = 0.5;
  log_drops = 0;
  log_text[0] = 0;
  mlsys_set_log(log_capture, NULL, MLSYS_LOG_WARN);
  REQUIRE_OK(mlsys_xfer_gateway_start(&o.ov, 1, &go, &gd));
  port = mlsys_xfer_gateway_port(gd);
  o.gw[1].port = port;
  mlsys_rng_seed(&rng, 3);
  for (i = 0; i < (int)sizeof junk; i++) junk[i] = (uint8_t)mlsys_rng_u64(&rng);
  /* 1: random bytes */
  fds[nf] = dial(port); CHECK(write(fds[nf], junk, sizeof junk) > 0); nf++;
  /* 2: a header cut short, then silence */
  sample_hdr(&h); h.data_len = 0; h.obj_size = 0; h.part = 0;
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, hb, sizeof hb, &hl));
  fds[nf] = dial(port); CHECK(write(fds[nf], hb, 50) == 50); nf++;
  /* 3: connects and never says anything */
  fds[nf++] = dial(port);
  /* 4: a 2 GiB data_len */
  memcpy(junk, hb, hl); mlsys__xfer_dp_put64(junk + 28, 2ull << 30);
  fds[nf] = dial(port); CHECK(write(fds[nf], junk, hl) == (ssize_t)hl); nf++;
  /* 5: a valid DATA header of another job with a payload that never comes */
  sample_hdr(&h);
  REQUIRE_OK(mlsys_xfer_wire_pack(&h, hb, sizeof hb, &hl));
  fds[nf] = dial(port); CHECK(write(fds[nf], hb, hl) == (ssize_t)hl); nf++;
  /* 6: a Skyplane v3 header */
  memcpy(junk, hb, hl); junk[11] = 3;
  fds[nf] = dial(port); CHECK(write(fds[nf], junk, hl) == (ssize_t)hl); nf++;
  {   /* until all six are dropped (each by its rule or its timeout); the cap is a hang guard, not a window */
    double t0 = mlsys_now();
    mlsys_xfer_gw_result live;
    do {
      mlsys_xfer_gateway_stats(gd, &live);
      mlsys_xfer_gw_result_free(&live);
      if (live.dropped_clients >= 6) break;
      mlsys__xfer_dp_sleep(0.01);
    } while (mlsys_now() - t0 < 120);
    CHECK_MSG(live.dropped_clients >= 6, "dropped %llu of the 6 clients before the copy", (unsigned long long)live.dropped_clients);
  }
  {
    copy_job j;
    pthread_t th;
    memset(&j, 0, sizeof j);
    j.o = &o; j.src = src; j.dst = dst; j.co = co;
    j.co.external_mask = 1ull << 1;
    REQUIRE(pthread_create(&th, NULL, copy_thread, &j) == 0);
    /* and more while the transfer runs (it takes ~0.3 s at 0.1 Gbps) */
    fds[nf] = dial(port); CHECK(write(fds[nf], junk + 100, 1000) > 0); nf++;
    fds[nf] = dial(port); if (fds[nf] >= 0) close(fds[nf]); fds[nf] = -1; nf++;
    pthread_join(th, NULL);
    if (j.st != MLSYS_OK) printf("    copy: %s\n", j.err);
    CHECK_OK(j.st);
    r = j.r;
  }
  st = mlsys_xfer_gateway_wait(gd, 10, &gr);
  CHECK_OK(st);
  CHECK(same_stores(src, dst));
  /* the two clients during the copy may or may not be seen before the job ends; the copy was not disturbed */
  CHECK_MSG(gr.dropped_clients >= 6, "dropped %llu clients; log:\n%.1500s", (unsigned long long)gr.dropped_clients, log_text);
  pthread_mutex_lock(&log_mu);
  CHECK(log_drops >= 6);
  CHECK_CONTAINS(log_text, "bad magic");
  CHECK_CONTAINS(log_text, "no valid frame within the hello timeout");
  CHECK_CONTAINS(log_text, "exceeds the 1 GiB limit");
  CHECK_CONTAINS(log_text, "unsupported protocol version 3");
  CHECK_CONTAINS(log_text, "timed out");
  pthread_mutex_unlock(&log_mu);
  mlsys_set_log(NULL, NULL, 0);
  for (i = 0; i < nf; i++) if (fds[i] >= 0) close(fds[i]);
  mlsys_xfer_gw_result_free(&gr);
  mlsys_xfer_copy_result_free(&r);
  mlsys_xfer_gateway_free(gd);
  ms_close(&src->base);
  ms_close(&dst->base);
}

TEST(gateway_run_times_out_and_start_errors) {
  ovl o;
  mlsys_xfer_gw_opts go;
  mlsys_xfer_gw_result gr;
  mlsys_xfer_gateway *g = NULL;
  mlsys_status st;
  ov_chain(&o, 1, 0, 0);
  memset(&go, 0, sizeof go);
  /* a relay with no downstream port yet */
  CHECK_EQ_INT(mlsys_xfer_gateway_start(&o.ov, 1, &go, &g), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "has no port yet");
  /* a destination without a store */
  CHECK_EQ_INT(mlsys_xfer_gateway_start(&o.ov, 2, &go, &g), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "needs an object store");
  /* a relay nobody talks to gives up after timeout_s, cleanly */
  o.gw[2].port = pick_port();
  go.timeout_s = 0.3;
  st = mlsys_xfer_gateway_run(&o.ov, 1, NULL, &go, &gr);
  CHECK_EQ_INT(st, MLSYS_ERR_TIMEOUT);
  mlsys_xfer_gw_result_free(&gr);
}

TEST_MAIN()
