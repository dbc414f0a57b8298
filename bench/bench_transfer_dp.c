/* bench/bench_transfer_dp.c — the Skyplane data plane (mlsys_transfer.h section 5) measured:
     loopback  mlsys_xfer_copy of synthetic data over a direct overlay (src→dst) and through one relay
               (src→relay→dst), 1/4/16/32 connections per edge, into a null sink (network only) and into a file://
               directory; beside it the profiler's raw TCP goodput at the same connections. Then one straggler
               connection (10x slower): dynamic chunk assignment (Skyplane) vs round robin (GridFTP).
     rclone    file:// → s3:// (npm s3rver on 127.0.0.1) through the data plane vs `rclone copy` of the same
               directory to the same s3rver (target: ours ≥ 1x rclone); file→file copies of both as the ceiling
               without s3rver. Needs node + s3rver (scripts/install-deps.sh) and rclone (Debian `rclone`).
     netns     the thesis's Fig. 4.1 route emulated with network namespaces (scripts/xfer-netns.sh; root):
               azure:canadacentral → gcp:asia-northeast1-a direct vs via azure:westus2, link rates = the grid's
               rows × 20 Mbit/s per Gbps, one gateway process per namespace; measured speedup vs the planner's
               predicted speedup (target: within 15 %).
   Usage: bench_transfer_dp [loopback|rclone|netns|all] [--quick]   (no arguments = all --quick, for `make bench`).
   Prints markdown tables. Only loopback and the namespaces this program creates carry traffic. */
#define _GNU_SOURCE
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <sys/resource.h>

#define GRID "tests/data/skyplane/throughput_premium.csv"
#define PRICES "tests/data/skyplane/aws_transfer_costs.csv"
#define NETNS "scripts/xfer-netns.sh"
#define SERVICES "scripts/xfer-services.sh"
#define MiB (1ull << 20)

static int g_quick;
static char g_tmp[256];   /* this run's scratch directory under /tmp */

/* ------------------------------------------------------------------------------------------------ helpers */

static int run_capture(const char *cmd, char *out, size_t cap) {
  char full[4096];
  size_t n = 0;
  FILE *p;
  int st;
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  fflush(stdout);
  p = popen(full, "r");
  if (!p) { snprintf(out, cap, "popen failed"); return -1; }
  while (n + 1 < cap && fgets(out + n, (int)(cap - n), p)) n += strlen(out + n);
  out[n] = 0;
  while (n && out[n - 1] == '\n') out[--n] = 0;
  st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void rm_rf(const char *path) {
  char cmd[600];
  if (!path[0] || strncmp(path, "/tmp/", 5) != 0) return;   /* never anything outside /tmp */
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  fflush(stdout);
  if (system(cmd) != 0) fprintf(stderr, "'%s' failed\n", cmd);
}

static void make_tmp(void) {
  if (g_tmp[0]) return;
  snprintf(g_tmp, sizeof g_tmp, "/tmp/bench_xfer_dp.XXXXXX");
  if (!mkdtemp(g_tmp)) { perror("mkdtemp"); exit(1); }
}

/* ------------------------------------------------------------- a sink store: counts (and optionally checks) */
/* Writes nothing: the destination of network-only runs. With verify, every part is compared with what
   synthetic://…:SEED serves for that key and range (so a run proves the bytes arrived intact, in place). */
typedef struct {
  mlsys_xfer_store base;
  int verify;
  uint64_t seed;
  pthread_mutex_t mu;
  uint64_t bytes, parts, objects, bad_parts;
} sink_store;
typedef struct { char key[MLSYS_XFER_KEY_MAX + 1]; uint64_t size, part_bytes; } sink_up;

static mlsys_status sink_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) { (void)st; *objs = NULL; *n = 0; return MLSYS_OK; }
static mlsys_status sink_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len, void *buf) {
  (void)st; (void)off; (void)len; (void)buf;
  return mlsys_set_error(MLSYS_ERR_IO, "sink: no such object '%s'", key);
}
static mlsys_status sink_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb, mlsys_xfer_upload **up) {
  sink_up *u = (sink_up *)calloc(1, sizeof *u);
  (void)st;
  if (!u) return mlsys_set_error(MLSYS_ERR_NOMEM, "sink: out of memory");
  snprintf(u->key, sizeof u->key, "%s", key);
  u->size = size;
  u->part_bytes = pb;
  *up = (mlsys_xfer_upload *)u;
  return MLSYS_OK;
}
static mlsys_status sink_part(mlsys_xfer_store *st, mlsys_xfer_upload *up, int part, const void *buf, uint64_t len) {
  sink_store *s = (sink_store *)st->impl;
  sink_up *u = (sink_up *)up;
  int bad = 0;
  if (s->verify && len) {
    void *want = malloc((size_t)len);
    if (!want) return mlsys_set_error(MLSYS_ERR_NOMEM, "sink: out of memory");
    mlsys_xfer_synth_fill(s->seed, u->key, (uint64_t)part * u->part_bytes, len, want);
    bad = memcmp(want, buf, (size_t)len) != 0;
    free(want);
  }
  pthread_mutex_lock(&s->mu);
  s->bytes += len;
  s->parts++;
  s->bad_parts += (uint64_t)bad;
  pthread_mutex_unlock(&s->mu);
  return MLSYS_OK;
}
static mlsys_status sink_commit(mlsys_xfer_store *st, mlsys_xfer_upload *up) {
  sink_store *s = (sink_store *)st->impl;
  pthread_mutex_lock(&s->mu);
  s->objects++;
  pthread_mutex_unlock(&s->mu);
  free(up);
  return MLSYS_OK;
}
static void sink_abort(mlsys_xfer_store *st, mlsys_xfer_upload *up) { (void)st; free(up); }
static void sink_close(mlsys_xfer_store *st) {
  sink_store *s = (sink_store *)st->impl;
  pthread_mutex_destroy(&s->mu);
  free(s);
}
static sink_store *sink_new(int verify, uint64_t seed) {
  sink_store *s = (sink_store *)calloc(1, sizeof *s);
  if (!s) exit(1);
  pthread_mutex_init(&s->mu, NULL);
  s->verify = verify;
  s->seed = seed;
  s->base.kind = "sink";
  s->base.list = sink_list;
  s->base.get_range = sink_get;
  s->base.put_begin = sink_begin;
  s->base.put_part = sink_part;
  s->base.put_commit = sink_commit;
  s->base.put_abort = sink_abort;
  s->base.close = sink_close;
  s->base.impl = s;
  return s;
}

static mlsys_xfer_store *open_store(const char *url, const mlsys_xfer_store_opts *o) {
  mlsys_xfer_store *s = NULL;
  mlsys_xfer_store_opts z;
  memset(&z, 0, sizeof z);
  if (mlsys_xfer_store_open(url, o ? o : &z, &s) != MLSYS_OK) { fprintf(stderr, "open %s: %s\n", url, mlsys_last_error()); exit(1); }
  return s;
}

/* ------------------------------------------------------------------------------------------ hand-made overlays */
typedef struct { mlsys_xfer_gw gw[4]; mlsys_xfer_edge edge[4]; mlsys_xfer_overlay ov; } ovl;

static void ov_init(ovl *o, int ngw) {
  int i;
  memset(o, 0, sizeof *o);
  o->ov.gw = o->gw;
  o->ov.edge = o->edge;
  o->ov.ngw = ngw;
  for (i = 0; i < ngw; i++) {
    o->gw[i].role = i == 0 ? MLSYS_XFER_SRC : i == ngw - 1 ? MLSYS_XFER_DST : MLSYS_XFER_RELAY;
    snprintf(o->gw[i].host, sizeof o->gw[i].host, "127.0.0.1");
    snprintf(o->gw[i].region, sizeof o->gw[i].region, "%s", i == 0 ? "src" : i == ngw - 1 ? "dst" : "relay");
  }
}
static void ov_edge(ovl *o, int from, int to, int nconn, double rate) {
  mlsys_xfer_edge *e = &o->edge[o->ov.nedge++];
  e->from = from; e->to = to; e->nconn = nconn; e->rate_gbps = rate;
}
static void ov_direct(ovl *o, int nconn, double rate) { ov_init(o, 2); ov_edge(o, 0, 1, nconn, rate); }
static void ov_relay(ovl *o, int nconn, double rate) { ov_init(o, 3); ov_edge(o, 0, 1, nconn, rate); ov_edge(o, 1, 2, nconn, rate); }

/* ================================================================================================== loopback */

/* Checks a file:// copy of synthetic://n:size: every object present with its size; the first and last MiB and
   one MiB in the middle of every object compared with the generator. Returns the number of problems. */
static int verify_file_copy(const char *dir, int n, uint64_t size, uint64_t *bytes_out) {
  char url[512];
  mlsys_xfer_store *d;
  mlsys_xfer_obj *objs = NULL;
  int nobj = 0, i, bad = 0;
  uint64_t total = 0;
  unsigned char *a = (unsigned char *)malloc(MiB), *b = (unsigned char *)malloc(MiB);
  snprintf(url, sizeof url, "file://%s", dir);
  d = open_store(url, NULL);
  if (d->list(d, &objs, &nobj) != MLSYS_OK) { fprintf(stderr, "list %s: %s\n", url, mlsys_last_error()); return 1; }
  if (nobj != n) bad++;
  for (i = 0; i < nobj; i++) {
    uint64_t offs[3], len = size < MiB ? size : MiB;
    int k;
    total += objs[i].size;
    if (objs[i].size != size) { bad++; continue; }
    offs[0] = 0; offs[1] = size / 2; offs[2] = size - len;
    for (k = 0; k < 3; k++) {
      if (d->get_range(d, objs[i].key, offs[k], len, a) != MLSYS_OK) { bad++; continue; }
      mlsys_xfer_synth_fill(0, objs[i].key, offs[k], len, b);
      if (memcmp(a, b, (size_t)len)) bad++;
    }
  }
  mlsys_xfer_objs_free(objs, nobj);
  mlsys_xfer_store_close(d);
  free(a); free(b);
  if (bytes_out) *bytes_out = total;
  return bad;
}

typedef struct { double wall, gbps, seconds; uint64_t bytes, resends; int ok; } run_res;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static run_res copy_run(const ovl *o, mlsys_xfer_store *src, mlsys_xfer_store *dst, const mlsys_xfer_copy_opts *co) {
  run_res rr;
  mlsys_xfer_copy_result r;
  double t0 = mlsys_now();
  mlsys_status st = mlsys_xfer_copy(&o->ov, src, dst, co, &r);
  memset(&rr, 0, sizeof rr);
  rr.wall = mlsys_now() - t0;
  if (st != MLSYS_OK) { fprintf(stderr, "copy: %s\n", mlsys_last_error()); return rr; }
  rr.ok = 1;
  rr.gbps = r.gbps;
  rr.seconds = r.seconds;
  rr.bytes = r.bytes;
  rr.resends = r.resends;
  mlsys_xfer_copy_result_free(&r);
  return rr;
}

static double tcp_goodput(int nconn, double seconds) {
  mlsys_xfer_profile_server *srv;
  mlsys_xfer_profile_result r;
  int port = 0;
  double g = NAN;
  if (mlsys_xfer_profile_serve("127.0.0.1", 0, &port, &srv) != MLSYS_OK) return NAN;
  if (mlsys_xfer_profile_pair("127.0.0.1", port, nconn, seconds, &r) == MLSYS_OK) g = r.recv_gbps;
  mlsys_xfer_profile_stop(srv);
  return g;
}

static double straggler(int assign, int nconn, int slow, uint64_t *bytes) {
  ovl o;
  char url[64];
  mlsys_xfer_store *src;
  sink_store *dst = sink_new(0, 0);
  mlsys_xfer_copy_opts co;
  run_res r;
  int nobj = g_quick ? 8 : 16;
  snprintf(url, sizeof url, "synthetic://%d:4M", nobj);   /* 32 or 64 MiB in 1 MiB chunks */
  src = open_store(url, NULL);
  ov_direct(&o, nconn, 1.0);                               /* a 1 Gbps edge shared by its connections */
  memset(&co, 0, sizeof co);
  co.gw.chunk_bytes = 1 * MiB;
  co.gw.assign = assign;
  if (slow) { co.gw.faults.slow_conn = 1; co.gw.faults.slow_factor = 10; }
  r = copy_run(&o, src, &dst->base, &co);
  if (!r.ok || dst->bytes != (uint64_t)nobj * 4 * MiB) { fprintf(stderr, "straggler copy failed\n"); exit(1); }
  *bytes = dst->bytes;
  mlsys_xfer_store_close(src);
  mlsys_xfer_store_close(&dst->base);
  return r.seconds;
}

static void bench_loopback(void) {
  static const int conns[] = {1, 4, 16, 32};
  int nconn = g_quick ? 3 : 4, ci, topo, sinkk, nobj = g_quick ? 4 : 16;
  uint64_t osize = 64 * MiB, total = (uint64_t)nobj * osize;
  char url[64], outdir[400];
  double raw[4];
  make_tmp();
  snprintf(url, sizeof url, "synthetic://%d:64M", nobj);
  snprintf(outdir, sizeof outdir, "%s/out", g_tmp);
  for (ci = 0; ci < nconn; ci++) raw[ci] = tcp_goodput(conns[ci], 2.0);
  printf("\n### Loopback throughput (mlsys_xfer_copy, all gateways as threads of one process)\n\n");
  printf("Source %s (%.2f GiB), 8 MiB chunks, queue 16, 4 readers, dynamic assignment, no emulated rate. Null sink =\n"
         "a store that discards (network + CRC only); file = file://%s (pwrite, fsync, rename per object), then checked\n"
         "(every object's size; 3 MiB per object compared with the generator). Raw TCP = the profiler's memory-to-memory\n"
         "goodput at the same connection count (2 s), the ceiling for one hop on this box.\n\n", url,
         (double)total / (1ull << 30), outdir);
  {
    /* what one core does per byte here: the ceiling for a 2-core box that generates, checksums (every hop) and copies */
    size_t n = 64 * MiB;
    unsigned char *a = (unsigned char *)malloc(n), *b = (unsigned char *)malloc(n);
    double t, gen, crc, cpy;
    volatile uint32_t c;
    mlsys_xfer_synth_fill(0, "obj-00000", 0, n, a);
    t = mlsys_now(); mlsys_xfer_synth_fill(0, "obj-00001", 0, n, a); gen = n * 8 / (mlsys_now() - t) / 1e9;
    t = mlsys_now(); c = mlsys_xfer_crc32c(0, a, n); crc = n * 8 / (mlsys_now() - t) / 1e9;
    memcpy(b, a, n);
    t = mlsys_now(); memcpy(b, a, n); __asm__ __volatile__("" : : "r"(b) : "memory"); cpy = n * 8 / (mlsys_now() - t) / 1e9;
    (void)c;
    printf("One core, per byte: synthetic generator %.1f Gbps, CRC-32C %.1f Gbps, memcpy %.1f Gbps.\n\n", gen, crc, cpy);
    free(a); free(b);
  }
  printf("| overlay | connections / edge | sink | copy s | Gbps, median (min–max) of 3 | raw TCP Gbps | of raw | check |\n|---|---|---|---|---|---|---|---|\n");
  for (topo = 0; topo < 2; topo++)
    for (ci = 0; ci < nconn; ci++)
      for (sinkk = 0; sinkk < 2; sinkk++) {
        double g[3], sec[3];
        int rep, nrep = 3, fails = 0;
        char check[64] = "ok";
        for (rep = 0; rep < nrep; rep++) {
          ovl o;
          mlsys_xfer_store *src = open_store(url, NULL), *dst;
          sink_store *sk = NULL;
          mlsys_xfer_copy_opts co;
          run_res r;
          if (topo == 0) ov_direct(&o, conns[ci], 0); else ov_relay(&o, conns[ci], 0);
          memset(&co, 0, sizeof co);
          if (sinkk == 0) { sk = sink_new(0, 0); dst = &sk->base; }
          else {
            char du[512];
            mlsys_xfer_store_opts so;
            memset(&so, 0, sizeof so);
            so.create_bucket = 1;
            rm_rf(outdir);
            snprintf(du, sizeof du, "file://%s", outdir);
            dst = open_store(du, &so);
          }
          r = copy_run(&o, src, dst, &co);
          if (!r.ok) fails++;
          if (sk && (sk->bytes != total || sk->objects != (uint64_t)nobj)) fails++;
          mlsys_xfer_store_close(dst);
          if (!sk) {
            uint64_t got = 0;
            if (verify_file_copy(outdir, nobj, osize, &got) || got != total) fails++;
            rm_rf(outdir);
          }
          mlsys_xfer_store_close(src);
          g[rep] = r.gbps;
          sec[rep] = r.seconds;
        }
        if (fails) snprintf(check, sizeof check, "**FAILED** (%d)", fails);
        qsort(g, 3, sizeof g[0], cmp_double);
        qsort(sec, 3, sizeof sec[0], cmp_double);
        printf("| %s | %d | %s | %.2f | **%.2f** (%.2f–%.2f) | %.1f | %.0f %% | %s |\n", topo ? "src→relay→dst" : "src→dst", conns[ci],
               sinkk ? "file" : "null", sec[1], g[1], g[0], g[2], raw[ci], 100 * g[1] / raw[ci], check);
        fflush(stdout);
      }
  /* the disk alone: the same objects through the store API, no network, one thread */
  {
    mlsys_xfer_store *src = open_store(url, NULL), *dst;
    mlsys_xfer_store_opts so;
    mlsys_xfer_obj *objs;
    int n, i;
    char du[512];
    void *buf = malloc(8 * MiB);
    double t0;
    uint64_t got = 0;
    memset(&so, 0, sizeof so);
    so.create_bucket = 1;
    rm_rf(outdir);
    snprintf(du, sizeof du, "file://%s", outdir);
    dst = open_store(du, &so);
    t0 = mlsys_now();
    if (src->list(src, &objs, &n) != MLSYS_OK) exit(1);
    for (i = 0; i < n; i++) {
      mlsys_xfer_upload *up;
      uint64_t off, np = (objs[i].size + 8 * MiB - 1) / (8 * MiB);
      if (dst->put_begin(dst, objs[i].key, objs[i].size, 8 * MiB, &up)) exit(1);
      for (off = 0; off < np; off++) {
        uint64_t len = objs[i].size - off * 8 * MiB < 8 * MiB ? objs[i].size - off * 8 * MiB : 8 * MiB;
        if (src->get_range(src, objs[i].key, off * 8 * MiB, len, buf) || dst->put_part(dst, up, (int)off, buf, len)) exit(1);
      }
      if (dst->put_commit(dst, up)) { fprintf(stderr, "%s\n", mlsys_last_error()); exit(1); }
    }
    t0 = mlsys_now() - t0;
    mlsys_xfer_objs_free(objs, n);
    mlsys_xfer_store_close(dst);
    mlsys_xfer_store_close(src);
    free(buf);
    printf("| (no network) store API, one thread | – | file | %.2f | %.2f | – | – | %s |\n", t0, (double)total * 8 / t0 / 1e9,
           verify_file_copy(outdir, nobj, osize, &got) == 0 && got == total ? "ok" : "FAIL");
    rm_rf(outdir);
  }

  /* straggler: one connection of the edge at 1/10 of its fair share */
  printf("\n### One straggler connection: dynamic assignment (Skyplane) vs round robin (GridFTP)\n\n");
  printf("Direct overlay, one 1 Gbps edge (token bucket shared by its connections), 1 MiB chunks, %d MiB; connection 0\n"
         "throttled to 1/10 of its fair share (`faults.slow_conn = 1, slow_factor = 10`). Time = source start → last ack.\n\n",
         (g_quick ? 8 : 16) * 4);
  printf("| connections | no straggler s | dynamic s | round robin s | round robin / dynamic | dynamic vs no straggler |\n|---|---|---|---|---|---|\n");
  {
    static const int sc[] = {4, 16};
    int k;
    for (k = 0; k < 2; k++) {
      uint64_t b;
      double base = straggler(MLSYS_XFER_DYNAMIC, sc[k], 0, &b), dyn = straggler(MLSYS_XFER_DYNAMIC, sc[k], 1, &b),
             rr = straggler(MLSYS_XFER_ROUND_ROBIN, sc[k], 1, &b);
      printf("| %d | %.2f | %.2f | %.2f | **%.1fx** | %+.0f %% |\n", sc[k], base, dyn, rr, rr / dyn, (dyn / base - 1) * 100);
      fflush(stdout);
    }
  }
}

/* ==================================================================================================== rclone */

/* user+sys CPU seconds of this process and its waited-for children */
static double cpu_self_children(void) {
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  getrusage(RUSAGE_CHILDREN, &b);
  return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) +
         (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) / 1e6;
}
/* user+sys CPU seconds of another process (from /proc/PID/stat), 0 when unknown */
static double cpu_of_pid(long pid) {
  char path[64], buf[2048], *p;
  FILE *f;
  unsigned long ut = 0, st = 0;
  size_t n;
  if (pid <= 0) return 0;
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  if (!(f = fopen(path, "r"))) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  p = strrchr(buf, ')');   /* the command name may hold spaces */
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}


static uint64_t xs_state;
static inline uint64_t xs(void) { xs_state ^= xs_state << 13; xs_state ^= xs_state >> 7; xs_state ^= xs_state << 17; return xs_state; }

static uint64_t write_random_file(const char *path, uint64_t size) {
  FILE *f = fopen(path, "wb");
  uint64_t buf[8192], done = 0;
  if (!f) { perror(path); exit(1); }
  while (done < size) {
    size_t i, n = sizeof buf;
    for (i = 0; i < 8192; i++) buf[i] = xs();
    if (n > size - done) n = (size_t)(size - done);
    if (fwrite(buf, 1, n, f) != n) { perror(path); exit(1); }
    done += n;
  }
  fclose(f);
  return size;
}

/* Checks bucket (s3://bucket at ep) against the local directory: same object count and bytes; full content of
   `sample` objects (spread over the key order). Prints into msg; returns 0 when all agree. */
static int verify_bucket(const char *ep, const char *bucket, const char *datadir, int want_n, uint64_t want_bytes,
                         char *msg, size_t cap) {
  char url[256], src_url[512];
  mlsys_xfer_store_opts so;
  mlsys_xfer_store *s, *l;
  mlsys_xfer_obj *objs = NULL;
  int n = 0, i, bad = 0, sampled = 0;
  uint64_t bytes = 0;
  memset(&so, 0, sizeof so);
  so.endpoint = ep;
  snprintf(url, sizeof url, "s3://%s", bucket);
  snprintf(src_url, sizeof src_url, "file://%s", datadir);
  if (mlsys_xfer_store_open(url, &so, &s) != MLSYS_OK) { snprintf(msg, cap, "open: %.200s", mlsys_last_error()); return 1; }
  l = open_store(src_url, NULL);
  if (s->list(s, &objs, &n) != MLSYS_OK) { snprintf(msg, cap, "list: %.200s", mlsys_last_error()); mlsys_xfer_store_close(s); return 1; }
  for (i = 0; i < n; i++) bytes += objs[i].size;
  for (i = 0; i < n; i += n / 8 > 0 ? n / 8 : 1) {
    void *a = malloc(objs[i].size + 1), *b = malloc(objs[i].size + 1);
    if (s->get_range(s, objs[i].key, 0, objs[i].size, a) || l->get_range(l, objs[i].key, 0, objs[i].size, b) ||
        memcmp(a, b, (size_t)objs[i].size))
      bad++;
    sampled++;
    free(a); free(b);
  }
  snprintf(msg, cap, "%d objects, %.1f MB; %d sampled, %d differ", n, (double)bytes / 1e6, sampled, bad);
  mlsys_xfer_objs_free(objs, n);
  mlsys_xfer_store_close(s);
  mlsys_xfer_store_close(l);
  return !(n == want_n && bytes == want_bytes && bad == 0);
}

static void bench_rclone(void) {
  char svc[400], data[400], out[4096], ep[256], cmd[2048], conf[400];
  int nbig = g_quick ? 16 : 64, nsmall = g_quick ? 32 : 128, i, rc;
  uint64_t total = 0;
  double t0;
  make_tmp();
  printf("\n### Data plane vs rclone into the same s3rver (loopback)\n\n");
  rc = run_capture("rclone version | head -1", out, sizeof out);
  if (rc != 0) { printf("skipped: rclone is not installed (Debian: apt-get install rclone): %s\n", out); return; }
  printf("%s. ", out);
  snprintf(svc, sizeof svc, "%s/s3", g_tmp);
  snprintf(data, sizeof data, "%s/data", g_tmp);
  {
    char env[32];
    snprintf(env, sizeof env, "%d", (int)getpid());
    setenv("MLSYS_SERVICE_OWNER", env, 1);   /* the service's watchdog stops s3rver if this process dies */
  }
  snprintf(cmd, sizeof cmd, "%s start s3 %s", SERVICES, svc);
  rc = run_capture(cmd, out, sizeof out);
  if (rc != 0) { printf("skipped: s3rver did not start (exit %d): %.300s\n", rc, out); return; }
  {
    char *last = strrchr(out, '\n');
    snprintf(ep, sizeof ep, "%.200s", last ? last + 1 : out);
  }
  /* the data: nbig x 16 MiB + nsmall small files (1..64 KiB) of random bytes, in two directory levels */
  xs_state = 0x9E3779B97F4A7C15ull;
  mkdir(data, 0755);
  {
    char p[512];
    snprintf(p, sizeof p, "%s/big", data); mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/small", data); mkdir(p, 0755);
    for (i = 0; i < nbig; i++) { snprintf(p, sizeof p, "%s/big/f%03d.bin", data, i); total += write_random_file(p, 16 * MiB); }
    for (i = 0; i < nsmall; i++) { snprintf(p, sizeof p, "%s/small/s%03d.bin", data, i); total += write_random_file(p, 1024 + xs() % (63 * 1024)); }
  }
  snprintf(conf, sizeof conf, "%s/rclone.conf", g_tmp);
  { FILE *f = fopen(conf, "w"); if (f) fclose(f); }
  {
    char nv[64];
    if (run_capture("node --version", nv, sizeof nv) != 0) snprintf(nv, sizeof nv, "?");
    printf("s3rver (npm, node %s) at %s; %d files x 16 MiB + %d files of 1–64 KiB = %.1f MB of random bytes in %s\n"
         "(in the page cache). Ours: `mlsys_xfer_copy` file:// → s3://BUCKET, direct overlay (source and destination gateways\n"
         "as threads of this process, TCP over loopback between them), 8 MiB chunks unless noted. rclone: `rclone copy %s\n"
         ":s3:BUCKET --s3-provider Other --s3-endpoint %s --s3-access-key-id S3RVER --s3-secret-access-key S3RVER\n"
         "--s3-force-path-style --s3-region us-east-1` (empty config file; AWS_CA_BUNDLE, set in this environment, removed:\n"
         "with it rclone 1.60 fails with LoadCustomCABundleError before any request). Each copy goes into a fresh bucket; time = wall clock of the whole copy\n"
         "(listing, bucket creation, every upload). MB = 1e6 bytes.\n\n",
         nv, ep, nbig, nsmall, (double)total / 1e6, data, data, ep);
  }
  {
    typedef struct { const char *name; int rclone; int nconn; uint64_t chunk; const char *extra; int tofile; } row;
    row rows[] = {
        {"ours, 16 connections, 8 MiB chunks (default)", 0, 16, 0, "", 0},
        {"rclone (defaults: --transfers 4)", 1, 0, 0, "", 0},
        {"ours, 16 connections, 16 MiB chunks (one PUT per 16 MiB file)", 0, 16, 16 * MiB, "", 0},
        {"rclone --transfers 16", 1, 0, 0, "--transfers 16", 0},
        {"ours, 64 connections, 8 MiB chunks", 0, 64, 0, "", 0},
        {"ours, 16 connections, 8 MiB chunks", 0, 16, 0, "", 1},
        {"rclone --transfers 16 (local → local)", 1, 0, 0, "--transfers 16", 1},
    };
    enum { NR = (int)(sizeof rows / sizeof rows[0]), MAXREP = 3 };
    double secs[NR][MAXREP], cpu_client[NR], cpu_s3[NR], mean[NR];
    int okv[NR], r, rep, nrep = g_quick ? 1 : MAXREP, nfiles = nbig + nsmall, runs = 0;
    char checks[NR][300];
    long s3pid = 0;
    {
      char pf[600];
      FILE *f;
      snprintf(pf, sizeof pf, "%s/service.pid", svc);
      if ((f = fopen(pf, "r"))) { if (fscanf(f, "%ld", &s3pid) != 1) s3pid = 0; fclose(f); }
    }
    memset(cpu_client, 0, sizeof cpu_client);
    memset(cpu_s3, 0, sizeof cpu_s3);
    for (r = 0; r < NR; r++) { okv[r] = 1; checks[r][0] = 0; }
    /* the s3rver rows interleaved, repeated nrep times; then the file rows */
    for (rep = 0; rep < nrep; rep++)
      for (r = 0; r < NR; r++) {
        char bucket[64], dest[512], check[300] = "";
        int ok = 1, fr = rows[r].tofile;
        double c0 = cpu_self_children(), s0 = cpu_of_pid(s3pid);
        if (fr && rep != nrep - 1) continue;   /* the file rows once, after the last s3rver round */
        snprintf(bucket, sizeof bucket, "b%02d", runs++);
        if (fr) snprintf(dest, sizeof dest, "%s/fileout%02d", g_tmp, r);
        else snprintf(dest, sizeof dest, "s3://%s", bucket);
        if (rows[r].rclone) {
          snprintf(cmd, sizeof cmd,
                   "env -u AWS_CA_BUNDLE RCLONE_CONFIG=%s rclone copy %s %s%s %s --s3-provider Other --s3-endpoint %s --s3-access-key-id S3RVER "
                   "--s3-secret-access-key S3RVER --s3-force-path-style --s3-region us-east-1",
                   conf, data, fr ? "" : ":s3:", fr ? dest : bucket, rows[r].extra, ep);
          t0 = mlsys_now();
          rc = run_capture(cmd, out, sizeof out);
          secs[r][rep] = mlsys_now() - t0;
          if (rc != 0) { ok = 0; snprintf(check, sizeof check, "rclone exit %d: %.200s", rc, out); }
        } else {
          mlsys_xfer_store_opts so;
          mlsys_xfer_store *src, *dst;
          mlsys_xfer_copy_opts co;
          ovl o;
          char su[512], du[600];
          mlsys_status st;
          mlsys_xfer_copy_result res;
          memset(&so, 0, sizeof so);
          so.endpoint = ep;
          so.create_bucket = 1;
          snprintf(su, sizeof su, "file://%s", data);
          snprintf(du, sizeof du, "%s%s", fr ? "file://" : "", dest);
          t0 = mlsys_now();
          src = open_store(su, NULL);
          dst = open_store(du, &so);
          ov_direct(&o, rows[r].nconn, 0);
          memset(&co, 0, sizeof co);
          co.gw.chunk_bytes = rows[r].chunk;
          st = mlsys_xfer_copy(&o.ov, src, dst, &co, &res);
          mlsys_xfer_store_close(dst);
          mlsys_xfer_store_close(src);
          secs[r][rep] = mlsys_now() - t0;
          if (st != MLSYS_OK) { ok = 0; snprintf(check, sizeof check, "copy failed: %.200s", mlsys_last_error()); }
          else mlsys_xfer_copy_result_free(&res);
        }
        cpu_client[r] += cpu_self_children() - c0;
        cpu_s3[r] += cpu_of_pid(s3pid) - s0;
        if (ok) {
          if (fr) {
            /* compare the whole tree byte for byte */
            snprintf(cmd, sizeof cmd, "diff -r -q %s %s && find %s -type f | wc -l", data, dest, dest);
            rc = run_capture(cmd, out, sizeof out);
            ok = rc == 0 && atoi(out) == nfiles;
            snprintf(check, sizeof check, "%.20s files, diff -r %s", out, ok ? "identical" : "DIFFERS");
            rm_rf(dest);
          } else ok = verify_bucket(ep, bucket, data, nfiles, total, check, sizeof check) == 0;
        }
        if (!ok || !checks[r][0]) snprintf(checks[r], sizeof checks[r], "%s", check);
        okv[r] &= ok;
        fprintf(stderr, "  rclone bench: %s: %.2f s %s\n", rows[r].name, secs[r][rep], check);
        /* drop the bucket's files so s3rver's directory does not grow over the run */
        if (!fr) { char bd[600]; snprintf(bd, sizeof bd, "%s/data/%s", svc, bucket); rm_rf(bd); }
      }
    printf("| copy | destination | runs | s, mean (min–max) | MB/s (of the mean) | ours / rclone defaults | ours / rclone --transfers 16 | client CPU s | s3rver CPU s (%% of wall) | check |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (r = 0; r < NR; r++) {
      int n = rows[r].tofile ? 1 : nrep, k0 = rows[r].tofile ? nrep - 1 : 0, k;
      double mn = 1e300, mx = 0, sum = 0;
      for (k = k0; k < k0 + n; k++) { sum += secs[r][k]; mn = fmin(mn, secs[r][k]); mx = fmax(mx, secs[r][k]); }
      mean[r] = sum / n;
      cpu_client[r] /= n;
      cpu_s3[r] /= n;
    }
    for (r = 0; r < NR; r++) {
      int n = rows[r].tofile ? 1 : nrep, k0 = rows[r].tofile ? nrep - 1 : 0, k;
      double mn = 1e300, mx = 0;
      char r1[32] = "–", r2[32] = "–", s3c[48] = "–";
      for (k = k0; k < k0 + n; k++) { mn = fmin(mn, secs[r][k]); mx = fmax(mx, secs[r][k]); }
      if (!rows[r].rclone && !rows[r].tofile) {
        snprintf(r1, sizeof r1, "**%.2fx**", mean[1] / mean[r]);
        snprintf(r2, sizeof r2, "%.2fx", mean[3] / mean[r]);
      }
      if (rows[r].tofile && !rows[r].rclone) snprintf(r2, sizeof r2, "%.2fx (local → local)", mean[6] / mean[r]);
      if (!rows[r].tofile && s3pid) snprintf(s3c, sizeof s3c, "%.2f (%.0f %%)", cpu_s3[r], 100 * cpu_s3[r] / mean[r]);
      printf("| %s | %s | %d | %.2f (%.2f–%.2f) | %.0f | %s | %s | %.2f | %s | %s%s |\n", rows[r].name,
             rows[r].tofile ? "file (local dir)" : "s3rver", n, mean[r], mn, mx, (double)total / 1e6 / mean[r], r1, r2,
             cpu_client[r], s3c, okv[r] ? "every run: " : "**FAILED** ", checks[r]);
    }
    printf("\nClient CPU = user+sys of this process (ours: both gateways, the store code, curl) or of rclone (a child), per\n"
           "run; s3rver CPU from /proc/PID/stat (node: one JavaScript thread plus libuv/GC threads, so it can exceed 100 %%).\n");
  }
  snprintf(cmd, sizeof cmd, "%s stop %s", SERVICES, svc);
  run_capture(cmd, out, sizeof out);
  rm_rf(data);
  rm_rf(svc);
  unlink(conf);
}

/* ===================================================================================================== netns */

#define SCALE_MBIT_PER_GBPS 20.0
#define TBF_OVERHEAD (1514.0 / 1448.0)   /* tbf counts frames; goodput is TCP payload (docs/transfer-netns.md) */

static char g_prefix[32];
static pid_t g_kids[8];
static int g_nkids;

static void kids_kill(void) {
  int i;
  for (i = 0; i < g_nkids; i++)
    if (g_kids[i] > 0) { kill(g_kids[i], SIGKILL); waitpid(g_kids[i], NULL, 0); }
  g_nkids = 0;
}
static void ns_down(void) {
  char cmd[256], out[1024];
  kids_kill();
  if (!g_prefix[0]) return;
  snprintf(cmd, sizeof cmd, "%s down %s", NETNS, g_prefix);
  if (run_capture(cmd, out, sizeof out) != 0) fprintf(stderr, "'%s': %s\n", cmd, out);
  g_prefix[0] = 0;
}

typedef struct {
  int id, role;
  mlsys_status st;
  char err[400];
  double seconds;
  uint64_t bytes, chunks, resends, conn_failures;
  uint64_t sink_bytes, sink_objects, sink_bad;
  int nedge;
  uint64_t edge_bytes[8];
} gw_report;

typedef struct { int ready_fd, res_fd; pid_t pid; } gw_child;

static const char *gw_node(const mlsys_xfer_overlay *ov, int id) {
  return ov->gw[id].role == MLSYS_XFER_SRC ? "src" : ov->gw[id].role == MLSYS_XFER_DST ? "dst" : "relay";
}

/* Forks a child that enters PREFIX-node, starts gateway `id` of ov, reports "started" and then its result. */
static int gw_spawn(const mlsys_xfer_overlay *ov, int id, const char *node, const char *src_url, uint64_t chunk,
                    int queue_cap, gw_child *c) {
  int rp[2], dp[2];
  char path[128];
  if (pipe(rp) || pipe(dp)) return -1;
  snprintf(path, sizeof path, "/run/netns/%s-%s", g_prefix, node);
  fflush(stdout);
  fflush(stderr);
  c->pid = fork();
  if (c->pid < 0) return -1;
  if (c->pid == 0) {
    gw_report rep;
    mlsys_xfer_gw_opts go;
    mlsys_xfer_gateway *g = NULL;
    mlsys_xfer_store *store = NULL;
    sink_store *sk = NULL;
    mlsys_xfer_gw_result res;
    char ok = 'r';
    int fd = open(path, O_RDONLY | O_CLOEXEC), i;
    close(rp[0]); close(dp[0]);
    memset(&rep, 0, sizeof rep);
    rep.id = id;
    rep.role = ov->gw[id].role;
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(98);
    close(fd);
    memset(&go, 0, sizeof go);
    go.chunk_bytes = chunk;
    go.queue_cap = queue_cap;
    go.timeout_s = 120;
    go.io_timeout_s = 30;
    if (ov->gw[id].role == MLSYS_XFER_SRC) store = open_store(src_url, NULL);
    if (ov->gw[id].role == MLSYS_XFER_DST) { sk = sink_new(1, 0); store = &sk->base; }
    go.store = store;
    rep.st = mlsys_xfer_gateway_start(ov, id, &go, &g);
    if (rep.st != MLSYS_OK) {
      snprintf(rep.err, sizeof rep.err, "start: %.380s", mlsys_last_error());
      ok = 'x';
    }
    if (write(dp[1], &ok, 1) != 1) _exit(97);
    if (rep.st == MLSYS_OK) {
      rep.st = mlsys_xfer_gateway_wait(g, 120, &res);
      if (rep.st != MLSYS_OK) snprintf(rep.err, sizeof rep.err, "%.390s", mlsys_last_error());
      rep.seconds = res.seconds;
      rep.bytes = res.bytes;
      rep.chunks = res.chunks;
      rep.resends = res.resends;
      rep.conn_failures = res.conn_failures;
      rep.nedge = res.nedge < 8 ? res.nedge : 8;
      for (i = 0; i < rep.nedge && res.edge_bytes; i++) rep.edge_bytes[i] = res.edge_bytes[i];
      mlsys_xfer_gw_result_free(&res);
      mlsys_xfer_gateway_free(g);
    }
    if (sk) { rep.sink_bytes = sk->bytes; rep.sink_objects = sk->objects; rep.sink_bad = sk->bad_parts; }
    if (store) mlsys_xfer_store_close(store);
    _exit(write(rp[1], &rep, sizeof rep) == (ssize_t)sizeof rep ? 0 : 97);
  }
  close(rp[1]); close(dp[1]);
  c->ready_fd = dp[0];
  c->res_fd = rp[0];
  if (g_nkids < 8) g_kids[g_nkids++] = c->pid;
  return 0;
}

/* Runs every gateway of ov in its namespace (downstream first), returns the reports (reps[id]). */
static int ns_transfer(const mlsys_xfer_overlay *ov, const char *const *node_of_gw, const char *src_url, uint64_t chunk,
                       int queue_cap, gw_report *reps) {
  gw_child c[4];
  int i, ok = 1;
  for (i = ov->ngw - 1; i >= 0; i--) {   /* destination first, the source last */
    char r = 0;
    if (gw_spawn(ov, i, node_of_gw[i], src_url, chunk, queue_cap, &c[i]) != 0) { perror("fork"); return 0; }
    if (read(c[i].ready_fd, &r, 1) != 1 || r != 'r') { ok = 0; }
    close(c[i].ready_fd);
  }
  for (i = 0; i < ov->ngw; i++) {
    memset(&reps[i], 0, sizeof reps[i]);
    if (read(c[i].res_fd, &reps[i], sizeof reps[i]) != (ssize_t)sizeof reps[i]) {
      reps[i].st = MLSYS_ERR_IO;
      snprintf(reps[i].err, sizeof reps[i].err, "gateway %d's process died", i);
    }
    close(c[i].res_fd);
    waitpid(c[i].pid, NULL, 0);
    if (reps[i].st != MLSYS_OK) { ok = 0; fprintf(stderr, "gateway %d (%s): %s\n", i, node_of_gw[i], reps[i].err); }
  }
  g_nkids = 0;
  return ok;
}

static void bench_netns(void) {
  static const char *keys[3] = {"azure:canadacentral", "azure:westus2", "gcp:asia-northeast1-a"};
  static const char *nodes[3] = {"src", "relay", "dst"};
  static const int links[3][2] = {{0, 2}, {0, 1}, {1, 2}};   /* direct, first hop, second hop */
  mlsys_xfer_grid G, g;
  mlsys_xfer_grid_opts go;
  mlsys_xfer_problem p;
  mlsys_xfer_plan pl_ov, pl_di;
  mlsys_xfer_overlay ov_plan, ov_di;
  double tput[3], mbit[3], mf_ov = 0, mf_di = 0, pred_speedup, t_all = mlsys_now();
  char out[4096], cmd[1024], spec[400], a_dst[64], a_relay[64], a_src_d[64], a_src_r[64], a_dst_r[64];
  int i, gi[3], nobj = g_quick ? 16 : 64;
  char src_url[64];
  uint64_t total = (uint64_t)nobj * 4 * MiB, chunk = 1 * MiB;
  int queue_cap = 32;
  printf("\n### Emulated WAN: the thesis's Fig. 4.1 route in network namespaces\n\n");
  if (geteuid() != 0) { printf("skipped: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN for `ip netns` and tc)\n"); return; }
  if (run_capture(NETNS " check", out, sizeof out) != 0) { printf("skipped: `%s check`: %.300s\n", NETNS, out); return; }
  {
    char *nm = strstr(out, "netem ");
    printf("`%s check`: %s.\n\n", NETNS, nm ? nm : "?");
  }
  snprintf(src_url, sizeof src_url, "synthetic://%d:4M", nobj);
  /* the planner on the real grid (Skyplane units: bits/s / 2^30) restricted to the three regions and links */
  memset(&go, 0, sizeof go);
  go.units_skyplane = 1;
  if (mlsys_xfer_grid_load(GRID, PRICES, &go, &G) || mlsys_xfer_grid_make(3, keys, &go, &g)) { printf("grid: %s\n", mlsys_last_error()); return; }
  for (i = 0; i < 3; i++) if ((gi[i] = mlsys_xfer_grid_find(&G, keys[i])) < 0) { printf("region %s missing\n", keys[i]); return; }
  for (i = 0; i < 3; i++) {
    int a = links[i][0], b = links[i][1];
    tput[i] = G.tput[(size_t)gi[a] * G.n + gi[b]];
    g.tput[a * 3 + b] = tput[i];
    g.price[a * 3 + b] = G.price[(size_t)gi[a] * G.n + gi[b]];
    mbit[i] = tput[i] * SCALE_MBIT_PER_GBPS * TBF_OVERHEAD;
  }
  mlsys_xfer_problem_default(&p, 0, 2);
  p.vm_limit = 1;
  p.max_cost_per_gb = 1.0;   /* allows the relay (its egress is $0.02 + $0.0875 per GB) */
  if (mlsys_xfer_max_flow(&g, &p, NULL, &mf_ov) || mlsys_xfer_plan_max_tput(&g, &p, &pl_ov)) { printf("planner: %s\n", mlsys_last_error()); return; }
  p.direct_only = 1;
  if (mlsys_xfer_max_flow(&g, &p, NULL, &mf_di) || mlsys_xfer_plan_max_tput(&g, &p, &pl_di)) { printf("planner: %s\n", mlsys_last_error()); return; }
  pred_speedup = pl_ov.tput_gbps / pl_di.tput_gbps;
  if (mlsys_xfer_plan_compile(&g, &pl_ov, 0, 64, &ov_plan) || mlsys_xfer_plan_compile(&g, &pl_di, 0, 64, &ov_di)) { printf("compile: %s\n", mlsys_last_error()); return; }
  printf("Grid rows (%s, PREMIUM, Skyplane units = bits/s / 2^30) and the emulated links (%g Mbit/s per Gbps; tbf rate ×\n"
         "1514/1448 so that TCP goodput, not frames, equals the scaled grid number):\n\n", GRID, SCALE_MBIT_PER_GBPS);
  printf("| link | namespaces | grid Gbps | goodput target Mbit/s | tbf rate Mbit/s |\n|---|---|---|---|---|\n");
  for (i = 0; i < 3; i++)
    printf("| %s → %s | %s → %s | %.3f | %.1f | %.1f |\n", keys[links[i][0]], keys[links[i][1]], nodes[links[i][0]],
           nodes[links[i][1]], tput[i], tput[i] * SCALE_MBIT_PER_GBPS, mbit[i]);
  printf("\nPlanner (one VM per region, a three-region grid with only these links, `mlsys_xfer_plan_max_tput` with a $1/GB\n"
         "ceiling; `mlsys_xfer_max_flow` agrees: overlay %.3f, direct %.3f Gbps): overlay plan %.3f Gbps at $%.4f/GB, direct-only\n"
         "plan %.3f Gbps at $%.4f/GB, **predicted speedup %.3fx**. The overlay plan's flows:", mf_ov, mf_di, pl_ov.tput_gbps,
         pl_ov.cost_per_gb, pl_di.tput_gbps, pl_di.cost_per_gb, pred_speedup);
  for (i = 0; i < 3; i++) {
    int a = links[i][0], b = links[i][1];
    printf(" %s→%s %.4g Gbps (M = %.3g conns)%s", nodes[a], nodes[b], pl_ov.flow[a * 3 + b], pl_ov.conns[a * 3 + b], i < 2 ? ";" : ".");
  }
  printf("\nThe direct link is left idle because one VM's 64 connections are the binding constraint at the destination:\n"
         "relay→dst needs all 64 of them for 12.38 Gbps (M = 64·F/tput). ");
  /* compile keeps edges with a vanishing flow as 1-connection edges; in the emulation one TCP connection fills a
     link (no per-connection rate), so such an edge would carry far more than planned: drop them */
  {
    int e, k = 0, dropped = 0;
    for (e = 0; e < ov_plan.nedge; e++) {
      if (ov_plan.edge[e].plan_gbps < 1e-3 * pl_ov.tput_gbps) {
        printf("`mlsys_xfer_plan_compile` made an edge %s→%s with %d connection(s) for a planned %.3g Gbps; dropped here\n"
               "(one TCP connection fills an emulated link, so it would carry ~%.1f Gbps instead of ~0). ",
               gw_node(&ov_plan, ov_plan.edge[e].from), gw_node(&ov_plan, ov_plan.edge[e].to), ov_plan.edge[e].nconn, ov_plan.edge[e].plan_gbps, tput[0]);
        dropped++;
        continue;
      }
      ov_plan.edge[k++] = ov_plan.edge[e];
    }
    ov_plan.nedge = k;
    (void)dropped;
  }
  printf("\n\n");
  /* the WAN */
  make_tmp();
  snprintf(spec, sizeof spec, "%s/fig41.spec", g_tmp);
  {
    FILE *f = fopen(spec, "w");
    if (!f) { perror(spec); return; }
    fprintf(f, "# Fig 4.1 route, written by bench/bench_transfer_dp.c: %g Mbit/s per grid Gbps, x 1514/1448 (tbf frames)\n"
               "node src\nnode relay\nnode dst\n", SCALE_MBIT_PER_GBPS);
    for (i = 0; i < 3; i++)
      fprintf(f, "link %s %s rate=%.3f   # %s -> %s %.3f Gbps\n", nodes[links[i][0]], nodes[links[i][1]], mbit[i],
              keys[links[i][0]], keys[links[i][1]], tput[i]);
    fclose(f);
  }
  snprintf(g_prefix, sizeof g_prefix, "xdp%d", (int)getpid() % 1000000);
  snprintf(cmd, sizeof cmd, "%s up %s %s --owner %d", NETNS, spec, g_prefix, (int)getpid());
  if (run_capture(cmd, out, sizeof out) != 0) { printf("`%s` failed: %.500s\n", cmd, out); g_prefix[0] = 0; return; }
  atexit(ns_down);
#define ADDR(a, b, dst)                                                                        \
  do {                                                                                         \
    snprintf(cmd, sizeof cmd, "%s addr %s %s %s", NETNS, g_prefix, a, b);                      \
    if (run_capture(cmd, dst, sizeof dst) != 0) { printf("%s: %s\n", cmd, dst); ns_down(); return; } \
  } while (0)
  ADDR("src", "dst", a_dst);       /* dst's address on the src–dst link: every gateway connects to dst here */
  ADDR("src", "relay", a_relay);   /* relay's address on the src–relay link */
  ADDR("dst", "src", a_src_d);
  ADDR("relay", "src", a_src_r);
  ADDR("relay", "dst", a_dst_r);
#undef ADDR
  /* An overlay names one address per gateway, but a namespace has one per link: the relay reaches dst's
     src-link address through its own link to dst (dst answers ARP for any of its addresses). */
  snprintf(cmd, sizeof cmd, "ip -n %s-relay route add %s/32 dev to-dst", g_prefix, a_dst);
  if (run_capture(cmd, out, sizeof out) != 0) { printf("`%s` failed: %s\n", cmd, out); ns_down(); return; }
  printf("Namespaces %s-{src,relay,dst}; dst listens on %s (its src–dst link address; the relay routes it over its own\n"
         "link to dst, whose address there is %s), the relay on %s. One process per gateway (fork + setns +\n"
         "`mlsys_xfer_gateway_start/wait`; `mlsys transfer gateway --plan F --id K` is the CLI equivalent). Source\n"
         "%s (%.0f MiB), %llu MiB chunks, queue %d, dynamic assignment, no token bucket (the links are the tbfs); the\n"
         "destination is a sink that compares every part with the generator. Throughput = the source gateway's bytes /\n"
         "its start→last-ack time; cloud Gbps = measured Mbit/s ÷ %g. No link delays: this kernel has no sch_netem.\n\n",
         g_prefix, a_dst, a_dst_r, a_relay, src_url, (double)total / MiB, (unsigned long long)(chunk / MiB), queue_cap,
         SCALE_MBIT_PER_GBPS);
  {
    /* the overlays with the namespaces' addresses and fixed ports */
    mlsys_xfer_overlay *ovs[3];
    ovl both;
    const char *names[3] = {"direct only (planner, `direct_only = 1`)", "overlay (planner's plan)",
                            "both paths (not a plan: direct + relay path)"};
    double meas[3] = {NAN, NAN, NAN}, pred[3];
    int order[5] = {0, 1, 2, 0, 1}, oi, nrun = g_quick ? 3 : 5, nmeas[3] = {0, 0, 0};
    double sum[3] = {0, 0, 0};
    ov_init(&both, 3);
    ov_edge(&both, 0, 2, 16, 0);
    for (i = 0; i < ov_plan.nedge; i++) ov_edge(&both, ov_plan.edge[i].from, ov_plan.edge[i].to, ov_plan.edge[i].nconn, 0);
    ovs[0] = &ov_di; ovs[1] = &ov_plan; ovs[2] = &both.ov;
    pred[0] = pl_di.tput_gbps; pred[1] = pl_ov.tput_gbps; pred[2] = tput[0] + fmin(tput[1], tput[2]);
    printf("| run | gateways (namespace) | edges: connections | s | measured Mbit/s | cloud Gbps | predicted Gbps | measured / predicted | bytes per edge | check |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (oi = 0; oi < nrun; oi++) {
      int run = order[oi];
      mlsys_xfer_overlay *ov = ovs[run];
      const char *node_of_gw[4];
      gw_report reps[4];
      char edges[200] = "", eb[200] = "", check[200];
      int k, ok;
      for (k = 0; k < ov->ngw; k++) {
        int role = ov->gw[k].role;
        node_of_gw[k] = role == MLSYS_XFER_SRC ? "src" : role == MLSYS_XFER_DST ? "dst" : "relay";
        snprintf(ov->gw[k].host, sizeof ov->gw[k].host, "%s",
                 role == MLSYS_XFER_SRC ? a_src_d : role == MLSYS_XFER_DST ? a_dst : a_relay);
        ov->gw[k].port = role == MLSYS_XFER_SRC ? 0 : 47100 + k;
      }
      for (k = 0; k < ov->nedge; k++) {
        size_t l = strlen(edges);
        snprintf(edges + l, sizeof edges - l, "%s%s→%s: %d", k ? ", " : "", node_of_gw[ov->edge[k].from], node_of_gw[ov->edge[k].to], ov->edge[k].nconn);
        ov->edge[k].rate_gbps = 0;
      }
      if (mlsys_xfer_overlay_check(ov) != MLSYS_OK) { printf("| %s | overlay check: %s |\n", names[run], mlsys_last_error()); continue; }
      ok = ns_transfer(ov, node_of_gw, src_url, chunk, queue_cap, reps);
      {
        gw_report *s = &reps[0], *d = &reps[ov->ngw - 1];
        double mb = s->seconds > 0 ? (double)s->bytes * 8 / s->seconds / 1e6 : 0;
        for (k = 0; k < ov->nedge; k++) {
          size_t l = strlen(eb);
          uint64_t b = 0;
          int j;
          for (j = 0; j < ov->ngw; j++) b += reps[j].nedge > k ? reps[j].edge_bytes[k] : 0;
          snprintf(eb + l, sizeof eb - l, "%s%s→%s %.0f MB", k ? ", " : "", node_of_gw[ov->edge[k].from], node_of_gw[ov->edge[k].to], (double)b / 1e6);
        }
        ok = ok && s->bytes == total && d->sink_bytes == total && d->sink_objects == (uint64_t)nobj && d->sink_bad == 0;
        snprintf(check, sizeof check, "%s: %llu objects, %.1f MB at dst, %llu bad parts, %llu resends", ok ? "ok" : "**FAILED**",
                 (unsigned long long)d->sink_objects, (double)d->sink_bytes / 1e6, (unsigned long long)d->sink_bad,
                 (unsigned long long)s->resends);
        if (ok) { sum[run] += mb / SCALE_MBIT_PER_GBPS; nmeas[run]++; meas[run] = sum[run] / nmeas[run]; }
        printf("| %s | %s | %s | %.2f | %.1f | **%.3f** | %.3f | %.3f | %s | %s |\n", names[run],
               ov->ngw == 2 ? "src, dst" : "src, relay, dst", edges, s->seconds, mb, mb / SCALE_MBIT_PER_GBPS, pred[run],
               mb / SCALE_MBIT_PER_GBPS / pred[run], eb, check);
        fflush(stdout);
      }
    }
    {
      double ms = meas[1] / meas[0], err = ms / pred_speedup - 1;
      printf("\nMeans over the runs: direct %.3f, overlay %.3f, both paths %.3f cloud Gbps.\n", meas[0], meas[1], meas[2]);
      printf("\n**Speedup overlay / direct: measured %.3fx, predicted %.3fx → %+.1f %% (target: within 15 %%: %s).**", ms,
             pred_speedup, 100 * err, fabs(err) <= 0.15 ? "met" : "NOT met");
      printf(" Both paths / direct: measured %.3fx, link-capacity max flow %.3fx (%+.1f %%).\n", meas[2] / meas[0],
             pred[2] / pred[0], 100 * ((meas[2] / meas[0]) / (pred[2] / pred[0]) - 1));
    }
  }
  ns_down();
  printf("\nWAN part: %.0f s wall.\n", mlsys_now() - t_all);
  mlsys_xfer_overlay_free(&ov_plan);
  mlsys_xfer_overlay_free(&ov_di);
  mlsys_xfer_plan_free(&pl_ov);
  mlsys_xfer_plan_free(&pl_di);
  mlsys_xfer_grid_free(&g);
  mlsys_xfer_grid_free(&G);
}

/* ====================================================================================================== main */

static void cleanup(void) {
  if (g_tmp[0]) rm_rf(g_tmp);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
  int i;
  for (i = 1; i < argc; i++) if (!strcmp(argv[i], "--quick")) g_quick = 1;
  if (!what) { what = "all"; g_quick = 1; }
  if (strcmp(what, "loopback") && strcmp(what, "rclone") && strcmp(what, "netns") && strcmp(what, "all")) {
    fprintf(stderr, "usage: %s [loopback|rclone|netns|all] [--quick]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  atexit(cleanup);
  printf("bench_transfer_dp %s%s: %ld CPUs online\n", what, g_quick ? " --quick" : "", sysconf(_SC_NPROCESSORS_ONLN));
  /* netns forks gateway processes: run it while this process has no threads (the others join all theirs) */
  if (!strcmp(what, "netns") || !strcmp(what, "all")) bench_netns();
  if (!strcmp(what, "loopback") || !strcmp(what, "all")) bench_loopback();
  if (!strcmp(what, "rclone") || !strcmp(what, "all")) bench_rclone();
  return 0;
}
