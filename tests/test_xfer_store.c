/* tests/test_xfer_store.c — the object stores of mlsys_transfer.h (section 3).

   One conformance suite runs against every writable backend: file:// on a temp dir, s3:// against npm s3rver and
   azure:// against npm azurite (both started on 127.0.0.1 by scripts/xfer-services.sh in a temp dir, skipped with
   the reason when node or the package is missing). What we wrote is also checked from outside our own reader:
   s3rver's files on disk, azurite's blob database and extent files after it has been stopped. Plus: file://
   atomicity, synthetic determinism, the XML list parser, bad URLs and an unreachable endpoint. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include "tests/test.h"
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <strings.h>

/* ---------------------------------------------------------------------------------------------------------------
   helpers
   --------------------------------------------------------------------------------------------------------------- */
static unsigned char *pattern(uint64_t n, uint64_t seed) {
  unsigned char *p = (unsigned char *)malloc(n ? n : 1);
  mlsys_rng r;
  uint64_t i;
  mlsys_rng_seed(&r, seed);
  for (i = 0; i < n; i++) p[i] = (unsigned char)(mlsys_rng_u64(&r) >> 56);
  return p;
}

typedef struct {
  mlsys_xfer_store *s;
  mlsys_xfer_upload *up;
  const unsigned char *data;
  uint64_t size, pb;
  int *order, nparts, next, errors;
  pthread_mutex_t mu;
  char err[1024];
} putjob;

static void *put_worker(void *arg) {
  putjob *j = (putjob *)arg;
  for (;;) {
    int i, part;
    uint64_t off, len;
    mlsys_status st;
    pthread_mutex_lock(&j->mu);
    i = j->next++;
    pthread_mutex_unlock(&j->mu);
    if (i >= j->nparts) break;
    part = j->order[i];
    off = (uint64_t)part * j->pb;
    len = j->size == 0 ? 0 : (off + j->pb > j->size ? j->size - off : j->pb);
    st = j->s->put_part(j->s, j->up, part, j->data + off, len);
    if (st) {
      pthread_mutex_lock(&j->mu);
      j->errors++;
      snprintf(j->err, sizeof j->err, "%s", mlsys_last_error());
      pthread_mutex_unlock(&j->mu);
    }
  }
  return NULL;
}

/* Writes data as an object: parts in a random order from `nthreads` threads, then commit (or abort). */
static mlsys_status put_object(mlsys_xfer_store *s, const char *key, const unsigned char *data, uint64_t size,
                               uint64_t pb, int nthreads, uint64_t seed, int abort_instead) {
  putjob j;
  pthread_t th[8];
  mlsys_rng r;
  int i;
  mlsys_status st;
  memset(&j, 0, sizeof j);
  j.s = s;
  j.data = data;
  j.size = size;
  j.pb = pb;
  st = s->put_begin(s, key, size, pb, &j.up);
  if (st) return st;
  j.nparts = size == 0 ? 1 : (int)((size + pb - 1) / pb);
  j.order = (int *)malloc(sizeof(int) * (size_t)j.nparts);
  for (i = 0; i < j.nparts; i++) j.order[i] = i;
  mlsys_rng_seed(&r, seed);
  for (i = j.nparts - 1; i > 0; i--) {
    int k = (int)mlsys_rng_below(&r, (uint64_t)i + 1), t = j.order[i];
    j.order[i] = j.order[k];
    j.order[k] = t;
  }
  pthread_mutex_init(&j.mu, NULL);
  if (nthreads > 8) nthreads = 8;
  for (i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, put_worker, &j);
  for (i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&j.mu);
  free(j.order);
  if (j.errors) {
    s->put_abort(s, j.up);
    return mlsys_set_error(MLSYS_ERR_IO, "%d put_part errors, last: %s", j.errors, j.err);
  }
  if (abort_instead) {
    s->put_abort(s, j.up);
    return MLSYS_OK;
  }
  return s->put_commit(s, j.up);
}

static int find_obj(const mlsys_xfer_obj *o, int n, const char *key) {
  int i;
  for (i = 0; i < n; i++)
    if (!strcmp(o[i].key, key)) return i;
  return -1;
}

/* A fresh temp dir (removed by rm_rf). */
static void make_tmp(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/mlsys-xfer-test-XXXXXX");
  if (!mkdtemp(dir)) dir[0] = 0;
}
static void rm_rf(const char *dir) {
  char cmd[600];
  if (!dir[0] || strncmp(dir, "/tmp/mlsys-xfer-test-", 21) != 0) return;
  if (getenv("MLSYS_TEST_KEEP")) {   /* for debugging: leave the services' files behind */
    fprintf(stderr, "kept %s\n", dir);
    return;
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* ---------------------------------------------------------------------------------------------------------------
   services (scripts/xfer-services.sh)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  char dir[256], endpoint[256], why[512];
} svc;

/* 1: running; 0: cannot run here (why says so); -1: failed to start (why says so). */
static int svc_start(svc *v, const char *kind) {
  char cmd[1024], errf[300];
  FILE *p;
  int rc;
  memset(v, 0, sizeof *v);
  make_tmp(v->dir, sizeof v->dir);
  if (!v->dir[0]) {
    snprintf(v->why, sizeof v->why, "mkdtemp failed");
    return -1;
  }
  if (access("scripts/xfer-services.sh", R_OK) != 0) {
    snprintf(v->why, sizeof v->why, "scripts/xfer-services.sh not found (run from the repository root)");
    return -1;
  }
  snprintf(errf, sizeof errf, "%s/start.err", v->dir);
  snprintf(cmd, sizeof cmd, "MLSYS_SERVICE_OWNER=%ld bash scripts/xfer-services.sh start %s '%s' 2>'%s'",
           (long)getpid(), kind, v->dir, errf);
  p = popen(cmd, "r");
  if (!p) {
    snprintf(v->why, sizeof v->why, "popen failed");
    return -1;
  }
  if (!fgets(v->endpoint, sizeof v->endpoint, p)) v->endpoint[0] = 0;
  v->endpoint[strcspn(v->endpoint, "\r\n")] = 0;
  rc = pclose(p);
  if (rc != 0 || !v->endpoint[0]) {
    FILE *e = fopen(errf, "r");
    size_t k = e ? fread(v->why, 1, sizeof v->why - 1, e) : 0;
    if (e) fclose(e);
    v->why[k] = 0;
    v->why[strcspn(v->why, "\n")] = 0;
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) return 0;
    return -1;
  }
  return 1;
}
static void svc_stop(svc *v) {
  char cmd[600];
  if (!v->dir[0]) return;
  snprintf(cmd, sizeof cmd, "bash scripts/xfer-services.sh stop '%s'", v->dir);
  if (system(cmd) != 0) fprintf(stderr, "stopping the service in %s failed\n", v->dir);
}

/* Threads reading random ranges of one object at once, each compared with the expected bytes. */
typedef struct {
  mlsys_xfer_store *s;
  const char *key;
  const unsigned char *want;
  uint64_t size;
  int id, bad;
} readjob;
static void *read_worker(void *arg) {
  readjob *j = (readjob *)arg;
  mlsys_rng r;
  unsigned char *b = (unsigned char *)malloc(1 << 20);
  int i;
  mlsys_rng_seed(&r, 1000 + (uint64_t)j->id);
  for (i = 0; i < 8; i++) {
    uint64_t len = 1 + mlsys_rng_below(&r, 1 << 20), off = mlsys_rng_below(&r, j->size - len + 1);
    if (j->s->get_range(j->s, j->key, off, len, b) != MLSYS_OK || memcmp(b, j->want + off, len) != 0) j->bad++;
  }
  free(b);
  return NULL;
}

/* Counts the library's debug lines that contain `needle` (how an object was written: UploadPart, Put Block, ...). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[64 * 1024];
static void log_capture(void *ud, int level, const char *msg) {
  (void)ud;
  (void)level;
  pthread_mutex_lock(&log_mu);
  if (strlen(log_lines) + strlen(msg) + 2 < sizeof log_lines) {
    strcat(log_lines, msg);
    strcat(log_lines, "\n");
  }
  pthread_mutex_unlock(&log_mu);
}
static int log_count(const char *a, const char *b) {
  int n = 0;
  const char *l = log_lines;
  while (*l) {
    const char *e = strchr(l, '\n');
    size_t k = e ? (size_t)(e - l) : strlen(l);
    char line[1100];
    snprintf(line, sizeof line, "%.*s", (int)(k < 1099 ? k : 1099), l);
    if (strstr(line, a) && strstr(line, b)) n++;
    l += k + (e ? 1 : 0);
  }
  return n;
}

/* ---------------------------------------------------------------------------------------------------------------
   the conformance suite
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const char *key;
  uint64_t size, pb;
  uint64_t seed;
} objspec;

/* Runs on a store at `url` (empty at the start) and leaves the objects of `specs` in it. big: add the > 5 MiB
   multipart objects (real S3 parts, and grouped small parts). */
static void conformance(const char *url, const mlsys_xfer_store_opts *o, int big) {
  static const objspec specs[] = {
      {"a.bin", 1000, 1000, 1},                    /* one part */
      {"dir/b.bin", 300000, 65536, 2},             /* 5 parts, last short */
      {"dir/sub/c.bin", 1 << 20, 1 << 16, 3},      /* 16 parts */
      {"empty.bin", 0, 4096, 4},                   /* 0 bytes */
      {"with space/and more.txt", 777, 100, 5},
      {"unicod\xc3\xa9/\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87.bin", 5000, 1024, 6},   /* unicodé/ключ.bin */
      {"plus+sign&amp;<x>.bin", 2049, 1024, 7},     /* '+', and characters XML must escape */
      {"z~tilde%41.bin", 10, 3, 8},
  };
  static const objspec bigs[] = {
      {"big/multipart.bin", (22u << 20) + 12345, 5u << 20, 9},   /* 5 real S3 parts: 4 of 5 MiB and 2 MiB */
      {"big/grouped.bin", (21u << 20) + 7, 256u << 10, 10},     /* 85 small parts, grouped into 5 MiB S3 parts */
  };
  int ns = (int)(sizeof specs / sizeof specs[0]), nb = big ? (int)(sizeof bigs / sizeof bigs[0]) : 0;
  mlsys_xfer_store *s = NULL, *sp = NULL;
  mlsys_xfer_obj *objs = NULL;
  int n = 0, i;
  mlsys_xfer_upload *up;
  char purl[512];
  unsigned char *buf;

  log_lines[0] = 0;
  mlsys_set_log(log_capture, NULL, MLSYS_LOG_DEBUG);
  REQUIRE_OK(mlsys_xfer_store_open(url, o, &s));
  /* empty store */
  REQUIRE_OK(s->list(s, &objs, &n));
  CHECK_EQ_INT(n, 0);
  mlsys_xfer_objs_free(objs, n);

  /* write everything with 4 threads in random part order */
  for (i = 0; i < ns + nb; i++) {
    const objspec *sp_ = i < ns ? &specs[i] : &bigs[i - ns];
    unsigned char *d = pattern(sp_->size, sp_->seed);
    CHECK_OK(put_object(s, sp_->key, d, sp_->size, sp_->pb, 4, 100 + (uint64_t)i, 0));
    free(d);
  }
  /* an aborted upload leaves nothing */
  {
    unsigned char *d = pattern(300000, 77);
    CHECK_OK(put_object(s, "aborted.bin", d, 300000, 65536, 4, 5, 1));
    free(d);
  }
  /* list: sorted, sizes right, the aborted object absent */
  REQUIRE_OK(s->list(s, &objs, &n));
  CHECK_EQ_INT(n, ns + nb);
  for (i = 1; i < n; i++) CHECK_MSG(strcmp(objs[i - 1].key, objs[i].key) < 0, "%s !< %s", objs[i - 1].key, objs[i].key);
  for (i = 0; i < ns + nb; i++) {
    const objspec *sp_ = i < ns ? &specs[i] : &bigs[i - ns];
    int k = find_obj(objs, n, sp_->key);
    CHECK_MSG(k >= 0, "'%s' not listed", sp_->key);
    if (k >= 0) CHECK_EQ_INT(objs[k].size, sp_->size);
  }
  CHECK(find_obj(objs, n, "aborted.bin") < 0);
  mlsys_xfer_objs_free(objs, n);
  mlsys_set_log(NULL, NULL, 0);
  /* how the HTTP stores wrote: objects up to 16 MiB go in one PUT; S3 needs parts of >= 5 MiB, so 22 MiB in 5 MiB
     parts is 5 real parts and 21 MiB in 256 KiB parts is 5 groups of up to 20; Azure takes every part as a block */
  if (!strncmp(url, "s3://", 5)) {
    CHECK_EQ_INT(log_count("UploadPart", "'big/multipart.bin'"), 5);
    CHECK_EQ_INT(log_count("UploadPart", "'big/grouped.bin'"), 5);
    CHECK_EQ_INT(log_count("CompleteMultipartUpload", "'big/grouped.bin'"), 1);
    CHECK_EQ_INT(log_count("one PUT", "'dir/sub/c.bin'"), 1);
    CHECK_EQ_INT(log_count("UploadPart", "'dir/sub/c.bin'"), 0);
  } else if (!strncmp(url, "azure://", 8)) {
    CHECK_EQ_INT(log_count(": Put Block ", "'big/grouped.bin'"), 85);
    CHECK_EQ_INT(log_count("Put Block List", "'big/grouped.bin'"), 1);
    CHECK_EQ_INT(log_count("Put Blob", "'a.bin'"), 1);
  }

  /* read back: whole objects byte-identical */
  for (i = 0; i < ns + nb; i++) {
    const objspec *sp_ = i < ns ? &specs[i] : &bigs[i - ns];
    unsigned char *d = pattern(sp_->size, sp_->seed);
    buf = (unsigned char *)malloc(sp_->size + 1);
    CHECK_OK(s->get_range(s, sp_->key, 0, sp_->size, buf));
    CHECK_MSG(memcmp(buf, d, sp_->size) == 0, "'%s' differs after read back", sp_->key);
    free(buf);
    free(d);
  }
  /* concurrent ranged reads from 4 threads */
  {
    const objspec *sp_ = big ? &bigs[0] : &specs[2];
    unsigned char *d = pattern(sp_->size, sp_->seed);
    readjob rj[4];
    pthread_t th[4];
    for (i = 0; i < 4; i++) {
      rj[i].s = s;
      rj[i].key = sp_->key;
      rj[i].want = d;
      rj[i].size = sp_->size;
      rj[i].id = i;
      rj[i].bad = 0;
      pthread_create(&th[i], NULL, read_worker, &rj[i]);
    }
    for (i = 0; i < 4; i++) {
      pthread_join(th[i], NULL);
      CHECK_EQ_INT(rj[i].bad, 0);
    }
    free(d);
  }
  /* ranges: middle, last byte, empty at the end; beyond the end names key and size */
  {
    unsigned char *d = pattern(300000, 2), b[70000];
    CHECK_OK(s->get_range(s, "dir/b.bin", 12345, 65000, b));
    CHECK(memcmp(b, d + 12345, 65000) == 0);
    CHECK_OK(s->get_range(s, "dir/b.bin", 299999, 1, b));
    CHECK_EQ_INT(b[0], d[299999]);
    CHECK_OK(s->get_range(s, "dir/b.bin", 300000, 0, b));
    CHECK_EQ_INT(s->get_range(s, "dir/b.bin", 299990, 20, b), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "dir/b.bin");
    CHECK_CONTAINS(mlsys_last_error(), "300000");
    CHECK_EQ_INT(s->get_range(s, "dir/b.bin", 400000, 1, b), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "300000");
    CHECK_EQ_INT(s->get_range(s, "empty.bin", 0, 1, b), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "empty.bin");
    CHECK_OK(s->get_range(s, "empty.bin", 0, 0, b));
    free(d);
  }
  /* missing key */
  {
    unsigned char b[4];
    CHECK_EQ_INT(s->get_range(s, "no/such/key.bin", 0, 1, b), MLSYS_ERR_IO);
    CHECK_CONTAINS(mlsys_last_error(), "no such object 'no/such/key.bin'");
    CHECK_EQ_INT(s->get_range(s, "aborted.bin", 0, 1, b), MLSYS_ERR_IO);
    CHECK_EQ_INT(s->get_range(s, "no-such-key", 0, 0, b), MLSYS_ERR_IO);
  }
  /* bad keys and bad parts */
  CHECK_EQ_INT(s->get_range(s, "../etc/passwd", 0, 1, purl), MLSYS_ERR_ARG);
  CHECK_EQ_INT(s->put_begin(s, "/abs", 1, 1, &up), MLSYS_ERR_ARG);
  CHECK_EQ_INT(s->put_begin(s, "a//b", 1, 1, &up), MLSYS_ERR_ARG);
  CHECK_EQ_INT(s->put_begin(s, "a/./b", 1, 1, &up), MLSYS_ERR_ARG);
  CHECK_EQ_INT(s->put_begin(s, "x", 10, 0, &up), MLSYS_ERR_ARG);
  if (s->put_begin(s, "partial.bin", 100, 40, &up) == MLSYS_OK) {
    unsigned char d[40] = {0};
    CHECK_EQ_INT(s->put_part(s, up, 3, d, 20), MLSYS_ERR_ARG);     /* out of range */
    CHECK_EQ_INT(s->put_part(s, up, 0, d, 20), MLSYS_ERR_ARG);     /* wrong length */
    CHECK_OK(s->put_part(s, up, 2, d, 20));
    CHECK_EQ_INT(s->put_part(s, up, 2, d, 20), MLSYS_ERR_ARG);     /* twice */
    CHECK_EQ_INT(s->put_commit(s, up), MLSYS_ERR_ARG);             /* parts 0, 1 missing: nothing published */
    CHECK_CONTAINS(mlsys_last_error(), "2 of 3 parts missing");
    CHECK_EQ_INT(s->get_range(s, "partial.bin", 0, 0, d), MLSYS_ERR_IO);
  } else {
    CHECK_OK(mlsys_last_status());
  }

  /* a store on a prefix sees only what is below it, with relative keys; its writes land below it */
  snprintf(purl, sizeof purl, "%s%sdir", url, strchr(url + 8, '/') ? "/" : "/");
  if (!strncmp(url, "file://", 7)) snprintf(purl, sizeof purl, "%s/dir", url);
  REQUIRE_OK(mlsys_xfer_store_open(purl, o, &sp));
  REQUIRE_OK(sp->list(sp, &objs, &n));
  CHECK_EQ_INT(n, 2);
  if (n == 2) {
    CHECK_STR(objs[0].key, "b.bin");
    CHECK_STR(objs[1].key, "sub/c.bin");
  }
  mlsys_xfer_objs_free(objs, n);
  {
    unsigned char *d = pattern(1 << 20, 3), *b2 = (unsigned char *)malloc(100);
    CHECK_OK(sp->get_range(sp, "sub/c.bin", 1000, 100, b2));
    CHECK(memcmp(b2, d + 1000, 100) == 0);
    CHECK_OK(put_object(sp, "new.txt", (const unsigned char *)"hello", 5, 2, 2, 1, 0));
    CHECK_OK(s->get_range(s, "dir/new.txt", 0, 5, b2));
    CHECK(memcmp(b2, "hello", 5) == 0);
    free(d);
    free(b2);
  }
  mlsys_xfer_store_close(sp);
  /* overwriting an object replaces it whole */
  CHECK_OK(put_object(s, "dir/new.txt", (const unsigned char *)"bye", 3, 3, 1, 1, 0));
  {
    char b3[8];
    CHECK_OK(s->get_range(s, "dir/new.txt", 0, 3, b3));
    CHECK(memcmp(b3, "bye", 3) == 0);
    CHECK_EQ_INT(s->get_range(s, "dir/new.txt", 0, 4, b3), MLSYS_ERR_ARG);
  }
  mlsys_xfer_store_close(s);
}

/* ---------------------------------------------------------------------------------------------------------------
   file://
   --------------------------------------------------------------------------------------------------------------- */
TEST(file_conformance) {
  char dir[256], url[300];
  mlsys_xfer_store_opts o;
  memset(&o, 0, sizeof o);
  make_tmp(dir, sizeof dir);
  REQUIRE(dir[0]);
  snprintf(url, sizeof url, "file://%s", dir);
  conformance(url, &o, 1);
  /* an independent look: the files themselves */
  {
    char path[400];
    unsigned char *d = pattern(5000, 6), *b = (unsigned char *)malloc(6000);
    FILE *f;
    size_t k;
    snprintf(path, sizeof path, "%s/unicod\xc3\xa9/\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87.bin", dir);
    f = fopen(path, "rb");
    REQUIRE(f != NULL);
    k = fread(b, 1, 6000, f);
    fclose(f);
    CHECK_EQ_INT(k, 5000);
    CHECK(memcmp(b, d, 5000) == 0);
    free(d);
    free(b);
  }
  rm_rf(dir);
}

TEST(file_relative_url_and_create) {
  char dir[256], url[400], cwd[1024];
  mlsys_xfer_store *s;
  mlsys_xfer_store_opts o;
  mlsys_xfer_obj *objs;
  int n;
  memset(&o, 0, sizeof o);
  make_tmp(dir, sizeof dir);
  REQUIRE(dir[0]);
  REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
  snprintf(url, sizeof url, "file://%s/made/here", dir);
  CHECK_EQ_INT(mlsys_xfer_store_open(url, &o, &s), MLSYS_ERR_IO);   /* absent, not asked to create */
  CHECK_CONTAINS(mlsys_last_error(), "does not exist");
  o.create_bucket = 1;
  REQUIRE_OK(mlsys_xfer_store_open(url, &o, &s));
  CHECK_STR(s->kind, "file");
  CHECK_OK(put_object(s, "k", (const unsigned char *)"abc", 3, 3, 1, 1, 0));
  mlsys_xfer_store_close(s);
  REQUIRE(chdir(dir) == 0);
  o.create_bucket = 0;
  if (mlsys_xfer_store_open("file://made/here/", &o, &s) == MLSYS_OK) {
    CHECK_OK(s->list(s, &objs, &n));
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_STR(objs[0].key, "k");
    mlsys_xfer_objs_free(objs, n);
    mlsys_xfer_store_close(s);
  } else {
    CHECK_OK(mlsys_last_status());
  }
  REQUIRE(chdir(cwd) == 0);
  rm_rf(dir);
}

/* Everything in dir (recursively, hidden files included) as "name:size;" in sorted order. */
static void dir_listing(const char *dir, const char *rel, char *out, size_t n) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char names[64][256];
  int k = 0, i, j;
  if (!d) return;
  while ((e = readdir(d)) && k < 64)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(names[k++], 256, "%s", e->d_name);
  closedir(d);
  for (i = 0; i < k; i++)
    for (j = i + 1; j < k; j++)
      if (strcmp(names[i], names[j]) > 0) {
        char t[256];
        memcpy(t, names[i], 256);
        memcpy(names[i], names[j], 256);
        memcpy(names[j], t, 256);
      }
  for (i = 0; i < k; i++) {
    char p[600], r[600];
    struct stat sb;
    snprintf(p, sizeof p, "%.300s/%.250s", dir, names[i]);
    snprintf(r, sizeof r, "%.300s%.250s", rel, names[i]);
    if (lstat(p, &sb) != 0) continue;
    if (S_ISDIR(sb.st_mode)) {
      strncat(r, "/", sizeof r - strlen(r) - 1);
      dir_listing(p, r, out, n);
    } else {
      char item[700];
      snprintf(item, sizeof item, "%s:%lld;", r, (long long)sb.st_size);
      strncat(out, item, n - strlen(out) - 1);
    }
  }
}

TEST(file_failed_writes_never_show_or_clobber) {
  char dir[256], url[300], before[4096], after[4096], path[400];
  mlsys_xfer_store *s;
  mlsys_xfer_store_opts o;
  mlsys_xfer_upload *up;
  mlsys_xfer_obj *objs;
  unsigned char *d = pattern(100000, 42), b[16];
  int n;
  memset(&o, 0, sizeof o);
  make_tmp(dir, sizeof dir);
  REQUIRE(dir[0]);
  snprintf(url, sizeof url, "file://%s", dir);
  REQUIRE_OK(mlsys_xfer_store_open(url, &o, &s));
  REQUIRE_OK(put_object(s, "keep/me.txt", (const unsigned char *)"original", 8, 8, 1, 1, 0));
  before[0] = 0;
  dir_listing(dir, "", before, sizeof before);
  CHECK_STR(before, "keep/me.txt:8;");

  /* aborted overwrite: the old object stays, no temp file stays */
  CHECK_OK(put_object(s, "keep/me.txt", d, 100000, 4096, 4, 3, 1));
  /* commit with a missing part: error, old object intact */
  REQUIRE_OK(s->put_begin(s, "keep/me.txt", 100000, 50000, &up));
  CHECK_OK(s->put_part(s, up, 1, d + 50000, 50000));
  /* while an upload is in flight its temp file is invisible to list and the old bytes are served */
  REQUIRE_OK(s->list(s, &objs, &n));
  CHECK_EQ_INT(n, 1);
  mlsys_xfer_objs_free(objs, n);
  CHECK_OK(s->get_range(s, "keep/me.txt", 0, 8, b));
  CHECK(memcmp(b, "original", 8) == 0);
  CHECK_EQ_INT(s->put_commit(s, up), MLSYS_ERR_ARG);
  /* a write error in a part (wrong length) and then abort */
  REQUIRE_OK(s->put_begin(s, "keep/new.txt", 10, 5, &up));
  CHECK_EQ_INT(s->put_part(s, up, 0, d, 4), MLSYS_ERR_ARG);
  s->put_abort(s, up);
  /* a key whose place is taken by a directory fails up front, and nothing changes */
  CHECK_EQ_INT(s->put_begin(s, "keep", 3, 3, &up), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "directory");
  /* a key below an existing file cannot be created */
  CHECK_EQ_INT(s->put_begin(s, "keep/me.txt/x", 3, 3, &up), MLSYS_ERR_IO);
  /* commit fails at the rename (the destination became a non-empty directory meanwhile): old data intact */
  REQUIRE_OK(s->put_begin(s, "blocked", 3, 3, &up));
  CHECK_OK(s->put_part(s, up, 0, "xyz", 3));
  snprintf(path, sizeof path, "%s/blocked", dir);
  REQUIRE(mkdir(path, 0777) == 0);
  snprintf(path, sizeof path, "%s/blocked/inner", dir);
  {
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("inner", f);
    fclose(f);
  }
  CHECK_EQ_INT(s->put_commit(s, up), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "rename");
  after[0] = 0;
  dir_listing(dir, "", after, sizeof after);
  CHECK_STR(after, "blocked/inner:5;keep/me.txt:8;");
  CHECK_OK(s->get_range(s, "keep/me.txt", 0, 8, b));
  CHECK(memcmp(b, "original", 8) == 0);
  /* and a successful overwrite replaces it */
  CHECK_OK(put_object(s, "keep/me.txt", d, 100000, 4096, 4, 3, 0));
  after[0] = 0;
  dir_listing(dir, "", after, sizeof after);
  CHECK_STR(after, "blocked/inner:5;keep/me.txt:100000;");
  mlsys_xfer_store_close(s);
  free(d);
  rm_rf(dir);
}

/* ---------------------------------------------------------------------------------------------------------------
   s3:// against s3rver
   --------------------------------------------------------------------------------------------------------------- */
static int read_whole(const char *path, unsigned char **data, size_t *len) {
  char *p;
  if (mlsys_read_file(path, &p, len) != MLSYS_OK) return 0;
  *data = (unsigned char *)p;
  return 1;
}

/* svc_start for a test body: skips when the emulator cannot run here, fails (after cleaning up) when it would not
   start. SKIP and REQUIRE leave the test from inside this helper. */
static void svc_up(svc *v, const char *kind, const char *what) {
  int rc = svc_start(v, kind);
  if (rc == 0) {
    rm_rf(v->dir);
    SKIP_DEP("%s unavailable: %.200s", what, v->why);
  }
  if (rc < 0) {
    svc_stop(v);
    rm_rf(v->dir);
    REQUIRE_OK(mlsys_set_error(MLSYS_ERR_IO, "%s did not start: %s", what, v->why));
  }
}

TEST(s3_conformance_s3rver) {
  svc v;
  mlsys_xfer_store_opts o;
  svc_up(&v, "s3", "s3rver");
  memset(&o, 0, sizeof o);
  o.endpoint = v.endpoint;
  o.create_bucket = 1;
  o.timeout_s = 120;   /* per request: a hang guard for the emulator, not a speed requirement */
  {
    mlsys_xfer_store *s;
    /* without create_bucket a missing bucket is a named error */
    mlsys_xfer_store_opts o2 = o;
    o2.create_bucket = 0;
    CHECK_EQ_INT(mlsys_xfer_store_open("s3://nobucket", &o2, &s), MLSYS_ERR_IO);
    CHECK_CONTAINS(mlsys_last_error(), "does not exist");
    CHECK_CONTAINS(mlsys_last_error(), v.endpoint);
  }
  conformance("s3://test-bucket", &o, 1);
  /* independent check: s3rver keeps each object as BUCKET/KEY._S3rver_object under its directory */
  {
    static const struct { const char *key; uint64_t size, seed; } chk[] = {
        {"dir/sub/c.bin", 1 << 20, 3},
        {"with space/and more.txt", 777, 5},
        {"unicod\xc3\xa9/\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87.bin", 5000, 6},
        {"plus+sign&amp;<x>.bin", 2049, 7},
        {"big/multipart.bin", (22u << 20) + 12345, 9},
        {"big/grouped.bin", (21u << 20) + 7, 10},
        {"empty.bin", 0, 4},
    };
    size_t i;
    for (i = 0; i < sizeof chk / sizeof chk[0]; i++) {
      char path[700];
      unsigned char *got = NULL, *want = pattern(chk[i].size, chk[i].seed);
      size_t len = 0;
      snprintf(path, sizeof path, "%s/data/test-bucket/%s._S3rver_object", v.dir, chk[i].key);
      CHECK_MSG(read_whole(path, &got, &len), "s3rver has no file %s", path);
      if (got) {
        CHECK_EQ_INT(len, chk[i].size);
        CHECK_MSG(len == chk[i].size && memcmp(got, want, len) == 0, "%s: bytes on s3rver's disk differ", chk[i].key);
      }
      free(got);
      free(want);
    }
  }
  svc_stop(&v);
  rm_rf(v.dir);
}

/* Many objects: ListObjectsV2 pages of 1000 with continuation tokens. */
TEST(s3_list_pages_s3rver) {
  svc v;
  mlsys_xfer_store_opts o;
  mlsys_xfer_store *s;
  mlsys_xfer_obj *objs;
  int n, i;
  char key[64];
  svc_up(&v, "s3", "s3rver");
  memset(&o, 0, sizeof o);
  o.endpoint = v.endpoint;
  o.create_bucket = 1;
  REQUIRE_OK(mlsys_xfer_store_open("s3://pages/pre", &o, &s));
  for (i = 0; i < 1205; i++) {
    mlsys_xfer_upload *up;
    snprintf(key, sizeof key, "k%05d", i);
    REQUIRE_OK(s->put_begin(s, key, 0, 1, &up));
    REQUIRE_OK(s->put_commit(s, up));
  }
  REQUIRE_OK(s->list(s, &objs, &n));
  CHECK_EQ_INT(n, 1205);
  for (i = 0; i < n && i < 1205; i++) {
    snprintf(key, sizeof key, "k%05d", i);
    CHECK_STR(objs[i].key, key);
  }
  mlsys_xfer_objs_free(objs, n);
  mlsys_xfer_store_close(s);
  svc_stop(&v);
  rm_rf(v.dir);
}

/* ---------------------------------------------------------------------------------------------------------------
   SigV4, checked independently of libcurl: s3rver does not verify V4 signatures, so a loopback server captures
   the requests and this file recomputes each signature from the AWS specification (canonical request → string to
   sign → derived key), itself checked against the example signature AWS publishes.
   --------------------------------------------------------------------------------------------------------------- */
static void hmac256(const void *key, size_t kl, const char *msg, unsigned char out[32]) {
  unsigned int ol = 32;
  HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &ol);
}
static void sha256_hex(const void *d, size_t n, char out[65]) {
  unsigned char h[32];
  SHA256((const unsigned char *)d, n, h);
  mlsys__xfer_hex(h, 32, out);
}
/* signature = hex(HMAC(kSigning, "AWS4-HMAC-SHA256\n" date "\n" scope "\n" hex(SHA256(canonical)))) */
static void sigv4(const char *secret, const char *amzdate, const char *region, const char *canonical, char out[65]) {
  char k0[128], scope[128], sts[512], ch[65], day[9];
  unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
  snprintf(day, sizeof day, "%.8s", amzdate);
  snprintf(k0, sizeof k0, "AWS4%s", secret);
  hmac256(k0, strlen(k0), day, k1);
  hmac256(k1, 32, region, k2);
  hmac256(k2, 32, "s3", k3);
  hmac256(k3, 32, "aws4_request", k4);
  snprintf(scope, sizeof scope, "%s/%s/s3/aws4_request", day, region);
  sha256_hex(canonical, strlen(canonical), ch);
  snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope, ch);
  hmac256(k4, 32, sts, sig);
  mlsys__xfer_hex(sig, 32, out);
}

typedef struct {
  int fd, n;
  char req[8][16384];   /* raw requests (head + body) */
  size_t len[8];
} capsrv;
static void *capsrv_main(void *arg) {
  capsrv *c = (capsrv *)arg;
  static const char list_body[] = "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated>"
                                  "</ListBucketResult>";
  static const char init_body[] = "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                                  "<UploadId>up/id+1</UploadId></InitiateMultipartUploadResult>";
  while (c->n < 8) {
    int fd = accept(c->fd, NULL, NULL);
    size_t got = 0, need = (size_t)-1;
    char *b = c->req[c->n], resp[512];
    if (fd < 0) break;
    while (got < sizeof c->req[0] - 1 && got < need) {
      ssize_t k = read(fd, b + got, sizeof c->req[0] - 1 - got);
      char *e;
      if (k <= 0) break;
      got += (size_t)k;
      b[got] = 0;
      if (need == (size_t)-1 && (e = strstr(b, "\r\n\r\n")) != NULL) {
        const char *cl = strstr(b, "Content-Length: ");
        need = (size_t)(e + 4 - b) + (cl && cl < e ? (size_t)atol(cl + 16) : 0);
      }
    }
    c->len[c->n++] = got;
    {
      const char *rb = !strncmp(b, "GET ", 4) ? list_body : !strncmp(b, "POST ", 5) ? init_body : "";
      snprintf(resp, sizeof resp, "HTTP/1.1 %s\r\nETag: \"e1\"\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
               !strncmp(b, "DELETE ", 7) ? "204 No Content" : "200 OK", strlen(rb), rb);
    }
    if (write(fd, resp, strlen(resp)) < 0) break;
    close(fd);
  }
  return NULL;
}
/* Value of header `name` (lowercase) in a raw request, trimmed, into out; 0 if absent. */
static int req_header(const char *req, const char *name, char *out, size_t n) {
  const char *l = strstr(req, "\r\n"), *end = strstr(req, "\r\n\r\n");
  size_t nl = strlen(name);
  while (l && l < end) {
    const char *s0 = l + 2, *e = strstr(s0, "\r\n");
    if (!strncasecmp(s0, name, nl) && s0[nl] == ':') {
      const char *v = s0 + nl + 1;
      size_t vl;
      while (*v == ' ') v++;
      vl = (size_t)(e - v);
      while (vl && v[vl - 1] == ' ') vl--;
      snprintf(out, n, "%.*s", (int)vl, v);
      return 1;
    }
    l = e;
  }
  return 0;
}
#define STARTS(s, lit) (strncmp((s), (lit), sizeof(lit) - 1) == 0)
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
/* Recomputes the request's signature; returns 1 when it matches (why explains a mismatch). */
static int check_sigv4(const char *req, size_t len, const char *secret, char *why, size_t wn) {
  char method[16], target[4096], auth[1024], amzdate[64], phash[128], signed_h[512], sig[128], mine[65];
  char canon[16384], q[4096], *parts[64], region[64], body_hash[65];
  const char *body = strstr(req, "\r\n\r\n") + 4, *p;
  char *qs, *h, *save = NULL;
  int np = 0, i;
  if (sscanf(req, "%15s %4095s", method, target) != 2) return snprintf(why, wn, "bad request line"), 0;
  if (strlen(target) > 1000) return snprintf(why, wn, "target too long for this check"), 0;
  if (!req_header(req, "authorization", auth, sizeof auth) || !req_header(req, "x-amz-date", amzdate, sizeof amzdate) ||
      !req_header(req, "x-amz-content-sha256", phash, sizeof phash))
    return snprintf(why, wn, "missing authorization, x-amz-date or x-amz-content-sha256"), 0;
  sha256_hex(body, len - (size_t)(body - req), body_hash);
  if (strcmp(body_hash, phash)) return snprintf(why, wn, "x-amz-content-sha256 %s is not the body's %s", phash, body_hash), 0;
  p = strstr(auth, "Credential=");
  if (!p || sscanf(p, "Credential=%*[^/]/%*[^/]/%63[^/]/", region) != 1) return snprintf(why, wn, "no credential"), 0;
  p = strstr(auth, "SignedHeaders=");
  if (!p || sscanf(p, "SignedHeaders=%511[^,]", signed_h) != 1) return snprintf(why, wn, "no SignedHeaders"), 0;
  p = strstr(auth, "Signature=");
  if (!p || sscanf(p, "Signature=%127s", sig) != 1) return snprintf(why, wn, "no Signature"), 0;
  if (!strstr(signed_h, "host") || !strstr(signed_h, "x-amz-content-sha256") || !strstr(signed_h, "x-amz-date"))
    return snprintf(why, wn, "SignedHeaders %s lacks host/x-amz-content-sha256/x-amz-date", signed_h), 0;
  for (p = target; *p; p++)   /* the target must already be in canonical percent-encoding */
    if (!(isalnum((unsigned char)*p) || strchr("-_.~/?=&", *p) ||
          (*p == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2]) && !islower((unsigned char)p[1]) &&
           !islower((unsigned char)p[2]))))
      return snprintf(why, wn, "target %.300s is not canonically encoded at '%c'", target, *p), 0;
  qs = strchr(target, '?');
  q[0] = 0;
  if (qs) {
    *qs++ = 0;
    for (h = strtok_r(qs, "&", &save); h && np < 64; h = strtok_r(NULL, "&", &save)) parts[np++] = h;
    qsort(parts, (size_t)np, sizeof parts[0], cmp_str);
    for (i = 0; i < np; i++) {
      strcat(q, i ? "&" : "");
      strcat(q, parts[i]);
      if (!strchr(parts[i], '=')) strcat(q, "=");
    }
  }
  snprintf(canon, sizeof canon, "%s\n%s\n%s\n", method, target, q);
  {
    char list[512], *save2 = NULL;
    snprintf(list, sizeof list, "%s", signed_h);
    for (h = strtok_r(list, ";", &save2); h; h = strtok_r(NULL, ";", &save2)) {
      char v[1024];
      if (!req_header(req, h, v, sizeof v)) return snprintf(why, wn, "signed header %s not sent", h), 0;
      strcat(canon, h);
      strcat(canon, ":");
      strcat(canon, v);
      strcat(canon, "\n");
    }
  }
  strcat(canon, "\n");
  strcat(canon, signed_h);
  strcat(canon, "\n");
  strcat(canon, phash);
  sigv4(secret, amzdate, region, canon, mine);
  if (strcmp(mine, sig)) return snprintf(why, wn, "signature %s, expected %s for\n%.1400s", sig, mine, canon), 0;
  return 1;
}

TEST(s3_sigv4_signatures_verified) {
  /* the verifier against AWS's published example (S3 API reference, "GET Object" with a Range header) */
  {
    char out[65];
    sigv4("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524T000000Z", "us-east-1",
          "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
          "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
          "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", out);
    CHECK_STR(out, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  }
  {
    static capsrv c;
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    pthread_t th;
    mlsys_xfer_store_opts o;
    mlsys_xfer_store *s;
    mlsys_xfer_obj *objs;
    mlsys_xfer_upload *up;
    char ep[64], why[1800];
    int n, i;
    memset(&c, 0, sizeof c);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(c.fd >= 0 && bind(c.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(c.fd, 8) == 0 &&
            getsockname(c.fd, (struct sockaddr *)&a, &l) == 0);
    pthread_create(&th, NULL, capsrv_main, &c);
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", ntohs(a.sin_port));
    memset(&o, 0, sizeof o);
    o.endpoint = ep;
    o.access_key = "AKIDEXAMPLE";
    o.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY/EXAMPLE";
    o.region = "eu-west-3";
    REQUIRE_OK(mlsys_xfer_store_open("s3://sig-bucket/some prefix", &o, &s));              /* HEAD bucket */
    REQUIRE_OK(s->put_begin(s, "k\xc3\xa9y with+plus&amp=.bin", 5, 5, &up));
    CHECK_OK(s->put_part(s, up, 0, "hello", 5));
    CHECK_OK(s->put_commit(s, up));                                                        /* PUT with a body */
    CHECK_OK(s->list(s, &objs, &n));                                                       /* GET with a query */
    mlsys_xfer_objs_free(objs, n);
    REQUIRE_OK(s->put_begin(s, "m", (20u << 20) + 10, 5u << 20, &up));                     /* POST ?uploads= */
    CHECK_OK(s->put_part(s, up, 4, "0123456789", 10));                                     /* UploadPart 5 */
    s->put_abort(s, up);                                                                   /* DELETE ?uploadId= */
    mlsys_xfer_store_close(s);
    shutdown(c.fd, SHUT_RDWR);
    close(c.fd);
    pthread_join(th, NULL);
    CHECK_EQ_INT(c.n, 6);
    for (i = 0; i < c.n; i++) CHECK_MSG(check_sigv4(c.req[i], c.len[i], o.secret_key, why, sizeof why), "%.1700s", why);
    if (c.n == 6) {
      CHECK_MSG(STARTS(c.req[0], "HEAD /sig-bucket HTTP"), "%.200s", c.req[0]);
      CHECK_MSG(STARTS(c.req[1], "PUT /sig-bucket/some%20prefix/k%C3%A9y%20with%2Bplus%26amp%3D.bin HTTP"), "%.200s", c.req[1]);
      CHECK_MSG(STARTS(c.req[2], "GET /sig-bucket?list-type=2&max-keys=1000&prefix=some%20prefix%2F HTTP"), "%.200s", c.req[2]);
      CHECK_MSG(STARTS(c.req[3], "POST /sig-bucket/some%20prefix/m?uploads= HTTP"), "%.200s", c.req[3]);
      CHECK_MSG(STARTS(c.req[4], "PUT /sig-bucket/some%20prefix/m?partNumber=5&uploadId=up%2Fid%2B1 HTTP"), "%.200s", c.req[4]);
      CHECK_MSG(STARTS(c.req[5], "DELETE /sig-bucket/some%20prefix/m?uploadId=up%2Fid%2B1 HTTP"), "%.200s", c.req[5]);
    }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   azure:// against azurite
   --------------------------------------------------------------------------------------------------------------- */
/* Reads blob `name` of `container` from azurite's own files (after it stopped): the LokiJS database
   __azurite_db_blob__.json names the blob's extent ranges, __azurite_db_blob_extent__.json maps extents to
   files. Returns 1 and the bytes, or 0. */
static const mlsys_json *jget(const mlsys_json *o, const char *k) { return o ? mlsys_json_get(o, k) : NULL; }
static int azurite_read(const char *dir, const char *container, const char *name, unsigned char **out, size_t *outlen) {
  char path[600];
  char *db = NULL, *edb = NULL;
  size_t dl, el;
  mlsys_json_doc d, e;
  const mlsys_json *cols, *blobs = NULL, *exts = NULL, *blob = NULL, *pieces;
  int ok = 0, i, np;
  mlsys__xfer_buf acc = {NULL, 0, 0};
  snprintf(path, sizeof path, "%s/data/__azurite_db_blob__.json", dir);
  if (mlsys_read_file(path, &db, &dl) != MLSYS_OK) return 0;
  snprintf(path, sizeof path, "%s/data/__azurite_db_blob_extent__.json", dir);
  if (mlsys_read_file(path, &edb, &el) != MLSYS_OK) { free(db); return 0; }
  if (mlsys_json_parse(db, dl, "blobdb", &d) != MLSYS_OK) { free(db); free(edb); return 0; }
  if (mlsys_json_parse(edb, el, "extentdb", &e) != MLSYS_OK) { mlsys_json_doc_free(&d); free(db); free(edb); return 0; }
  cols = jget(d.root, "collections");
  for (i = 0; cols && mlsys_json_at(cols, i); i++) {
    const mlsys_json *c = mlsys_json_at(cols, i), *nm = jget(c, "name");
    if (nm && nm->type == MLSYS_JSON_STRING && !strcmp(nm->str, "$BLOBS_COLLECTION$")) blobs = jget(c, "data");
  }
  cols = jget(e.root, "collections");
  for (i = 0; cols && mlsys_json_at(cols, i); i++) {
    const mlsys_json *c = mlsys_json_at(cols, i), *nm = jget(c, "name");
    if (nm && nm->type == MLSYS_JSON_STRING && !strcmp(nm->str, "$EXTENTS_COLLECTION$")) exts = jget(c, "data");
  }
  for (i = 0; blobs && mlsys_json_at(blobs, i); i++) {
    const mlsys_json *b = mlsys_json_at(blobs, i), *nm = jget(b, "name"), *cn = jget(b, "containerName");
    if (nm && cn && nm->type == MLSYS_JSON_STRING && cn->type == MLSYS_JSON_STRING && !strcmp(nm->str, name) &&
        !strcmp(cn->str, container))
      blob = b;
  }
  if (!blob || !exts) goto done;
  pieces = jget(blob, "committedBlocksInOrder");
  np = 0;
  if (pieces && pieces->type == MLSYS_JSON_ARRAY && mlsys_json_at(pieces, 0)) {
    while (mlsys_json_at(pieces, np)) np++;
  } else {
    pieces = NULL;
    np = jget(blob, "persistency") ? 1 : 0;
  }
  if (!mlsys__xfer_buf_add(&acc, "", 0)) goto done;
  for (i = 0; i < np; i++) {
    const mlsys_json *ps = pieces ? jget(mlsys_json_at(pieces, i), "persistency") : jget(blob, "persistency");
    const mlsys_json *id = jget(ps, "id"), *off = jget(ps, "offset"), *cnt = jget(ps, "count");
    const char *fpath = NULL;
    int k;
    FILE *f;
    unsigned char *tmp;
    if (!id || !off || !cnt || id->type != MLSYS_JSON_STRING) goto done;
    for (k = 0; mlsys_json_at(exts, k); k++) {
      const mlsys_json *x = mlsys_json_at(exts, k), *xid = jget(x, "id"), *xp = jget(x, "path");
      if (xid && xp && xid->type == MLSYS_JSON_STRING && xp->type == MLSYS_JSON_STRING && !strcmp(xid->str, id->str))
        fpath = xp->str;
    }
    if (!fpath) goto done;
    if (fpath[0] == '/') snprintf(path, sizeof path, "%s", fpath);
    else snprintf(path, sizeof path, "%s/data/__blobstorage__/%s", dir, fpath);
    f = fopen(path, "rb");
    if (!f) goto done;
    tmp = (unsigned char *)malloc((size_t)cnt->num + 1);
    if (fseek(f, (long)off->num, SEEK_SET) != 0 || fread(tmp, 1, (size_t)cnt->num, f) != (size_t)cnt->num) {
      fclose(f);
      free(tmp);
      goto done;
    }
    fclose(f);
    mlsys__xfer_buf_add(&acc, tmp, (size_t)cnt->num);
    free(tmp);
  }
  *outlen = acc.n;
  *out = (unsigned char *)mlsys__xfer_buf_take(&acc);
  ok = 1;
done:
  mlsys__xfer_buf_free(&acc);
  mlsys_json_doc_free(&d);
  mlsys_json_doc_free(&e);
  free(db);
  free(edb);
  return ok;
}

TEST(azure_conformance_azurite) {
  svc v;
  mlsys_xfer_store_opts o;
  svc_up(&v, "azure", "azurite");
  memset(&o, 0, sizeof o);
  o.endpoint = v.endpoint;
  o.create_bucket = 1;
  o.timeout_s = 120;   /* per request: a hang guard for the emulator, not a speed requirement */
  {
    mlsys_xfer_store *s;
    mlsys_xfer_store_opts o2 = o;
    o2.create_bucket = 0;
    CHECK_EQ_INT(mlsys_xfer_store_open("azure://nocontainer", &o2, &s), MLSYS_ERR_IO);
    CHECK_CONTAINS(mlsys_last_error(), "does not exist");
    /* a wrong key is refused by the service (the signature is checked) */
    o2.create_bucket = 1;
    o2.access_key = "devstoreaccount1";
    o2.secret_key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    CHECK_EQ_INT(mlsys_xfer_store_open("azure://badkey", &o2, &s), MLSYS_ERR_IO);
    CHECK_CONTAINS(mlsys_last_error(), "403");
  }
  conformance("azure://test-container", &o, 1);
  svc_stop(&v);   /* azurite writes its database on exit */
  {
    static const struct { const char *key; uint64_t size, seed; } chk[] = {
        {"dir/sub/c.bin", 1 << 20, 3},
        {"unicod\xc3\xa9/\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87.bin", 5000, 6},
        {"plus+sign&amp;<x>.bin", 2049, 7},
        {"big/multipart.bin", (22u << 20) + 12345, 9},
        {"big/grouped.bin", (21u << 20) + 7, 10},
    };
    size_t i;
    for (i = 0; i < sizeof chk / sizeof chk[0]; i++) {
      unsigned char *got = NULL, *want = pattern(chk[i].size, chk[i].seed);
      size_t len = 0;
      CHECK_MSG(azurite_read(v.dir, "test-container", chk[i].key, &got, &len), "azurite's files do not hold '%s'",
                chk[i].key);
      if (got) {
        CHECK_EQ_INT(len, chk[i].size);
        CHECK_MSG(len == chk[i].size && memcmp(got, want, len) == 0, "%s: bytes in azurite's files differ",
                  chk[i].key);
      }
      free(got);
      free(want);
    }
  }
  rm_rf(v.dir);
}

/* ---------------------------------------------------------------------------------------------------------------
   synthetic://
   --------------------------------------------------------------------------------------------------------------- */
TEST(synthetic_deterministic_and_consistent) {
  mlsys_xfer_store *a, *b, *c;
  mlsys_xfer_obj *objs;
  mlsys_xfer_upload *up;
  int n, i;
  unsigned char *w1 = (unsigned char *)malloc(3 << 20), *w2 = (unsigned char *)malloc(3 << 20), r[1000];
  REQUIRE_OK(mlsys_xfer_store_open("synthetic://12:3M:7", NULL, &a));
  REQUIRE_OK(mlsys_xfer_store_open("synthetic://12:3MiB:7", NULL, &b));
  REQUIRE_OK(mlsys_xfer_store_open("synthetic://12:3M:8", NULL, &c));
  CHECK_STR(a->kind, "synthetic");
  REQUIRE_OK(a->list(a, &objs, &n));
  CHECK_EQ_INT(n, 12);
  if (n == 12) {
    CHECK_STR(objs[0].key, "obj-00000");
    CHECK_STR(objs[11].key, "obj-00011");
    CHECK_EQ_INT(objs[5].size, 3 << 20);
  }
  mlsys_xfer_objs_free(objs, n);
  CHECK_OK(a->get_range(a, "obj-00003", 0, 3 << 20, w1));
  CHECK_OK(b->get_range(b, "obj-00003", 0, 3 << 20, w2));
  CHECK(memcmp(w1, w2, 3 << 20) == 0);                      /* same seed, another open: same bytes */
  CHECK_OK(c->get_range(c, "obj-00003", 0, 3 << 20, w2));
  CHECK(memcmp(w1, w2, 4096) != 0);                         /* another seed: other bytes */
  CHECK_OK(a->get_range(a, "obj-00004", 0, 4096, w2));
  CHECK(memcmp(w1, w2, 4096) != 0);                         /* another object: other bytes */
  for (i = 0; i < 50; i++) {                                /* every range equals the slice of the whole */
    uint64_t off = (uint64_t)i * 62911 % ((3 << 20) - 1000), len = 1 + (uint64_t)(i * 37) % 1000;
    CHECK_OK(a->get_range(a, "obj-00003", off, len, r));
    CHECK_MSG(memcmp(r, w1 + off, len) == 0, "range [%llu,+%llu)", (unsigned long long)off, (unsigned long long)len);
  }
  mlsys_xfer_synth_fill(7, "obj-00003", 100, 900, r);
  CHECK(memcmp(r, w1 + 100, 900) == 0);
  /* bytes are not trivially constant */
  {
    int hist[256] = {0}, zeros = 0;
    for (i = 0; i < (3 << 20); i++) hist[w1[i]]++;
    for (i = 0; i < 256; i++) zeros += hist[i] == 0;
    CHECK_EQ_INT(zeros, 0);
  }
  CHECK_EQ_INT(a->get_range(a, "obj-00003", (3 << 20) - 1, 2, r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "obj-00003");
  CHECK_CONTAINS(mlsys_last_error(), "3145728");
  CHECK_EQ_INT(a->get_range(a, "obj-00012", 0, 1, r), MLSYS_ERR_IO);
  CHECK_EQ_INT(a->get_range(a, "obj-3", 0, 1, r), MLSYS_ERR_IO);
  CHECK_EQ_INT(a->put_begin(a, "x", 1, 1, &up), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "read-only");
  mlsys_xfer_store_close(a);
  mlsys_xfer_store_close(b);
  mlsys_xfer_store_close(c);
  /* widths grow past 100000 objects so that keys still sort as numbers */
  REQUIRE_OK(mlsys_xfer_store_open("synthetic://100001:0", NULL, &a));
  REQUIRE_OK(a->list(a, &objs, &n));
  CHECK_EQ_INT(n, 100001);
  if (n == 100001) {
    CHECK_STR(objs[0].key, "obj-000000");
    CHECK_STR(objs[100000].key, "obj-100000");
    for (i = 1; i < n; i++)
      if (strcmp(objs[i - 1].key, objs[i].key) >= 0) break;
    CHECK_EQ_INT(i, n);
  }
  mlsys_xfer_objs_free(objs, n);
  mlsys_xfer_store_close(a);
  free(w1);
  free(w2);
}

/* ---------------------------------------------------------------------------------------------------------------
   URLs, endpoints
   --------------------------------------------------------------------------------------------------------------- */
TEST(bad_urls_are_named) {
  static const struct { const char *url, *says; } bad[] = {
      {"ftp://host/x", "unknown scheme 'ftp'"},
      {"nonsense", "not a store URL"},
      {"", "not a store URL"},
      {"s3://", "empty bucket name"},
      {"s3:///prefix", "empty bucket name"},
      {"s3://bad bucket", "character ' '"},
      {"s3://b/../x", "'..'"},
      {"s3://b/a//x", "empty path component"},
      {"azure://", "empty container name"},
      {"azure://Upper", "character 'U'"},
      {"file://", "no directory"},
      {"synthetic://", "expected synthetic://N:SIZE"},
      {"synthetic://3", "expected synthetic://N:SIZE"},
      {"synthetic://x:10", "object count 'x'"},
      {"synthetic://-1:10", "object count '-1'"},
      {"synthetic://3:abc", "object size 'abc'"},
      {"synthetic://3:10X", "object size '10X'"},
      {"synthetic://3:", "object size ''"},
      {"synthetic://3:99999999999G", "object size"},
      {"synthetic://3:1M:seed", "seed 'seed'"},
      {"synthetic://3:1M:", "seed ''"},
  };
  mlsys_xfer_store_opts o;
  mlsys_xfer_store *s;
  size_t i;
  memset(&o, 0, sizeof o);
  o.endpoint = "http://127.0.0.1:9";   /* never reached: every URL here fails before any request */
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s = (mlsys_xfer_store *)&o;
    CHECK_EQ_INT(mlsys_xfer_store_open(bad[i].url, &o, &s), MLSYS_ERR_ARG);
    CHECK(s == NULL);
    CHECK_CONTAINS(mlsys_last_error(), bad[i].says);
    if (bad[i].url[0]) CHECK_CONTAINS(mlsys_last_error(), bad[i].url);
  }
  CHECK_EQ_INT(mlsys_xfer_store_open(NULL, &o, &s), MLSYS_ERR_ARG);
  o.endpoint = "127.0.0.1:9";
  CHECK_EQ_INT(mlsys_xfer_store_open("s3://b", &o, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not an http");
  o.endpoint = "http://example.invalid";   /* not loopback and no credentials: refused before any request */
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  CHECK_EQ_INT(mlsys_xfer_store_open("s3://b", &o, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no credentials");
  o.endpoint = "http://127.0.0.1:9/devstoreaccount1";
  o.access_key = "acct";
  o.secret_key = "not*base64";
  CHECK_EQ_INT(mlsys_xfer_store_open("azure://c", &o, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "base64");
}

static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;
  struct sockaddr_in a;
  socklen_t l = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &l) != 0)
    return 0;
  port = ntohs(a.sin_port);
  close(fd);   /* bound, never listened, now closed: connecting is refused */
  return port;
}

TEST(unreachable_endpoint_fails_fast) {
  mlsys_xfer_store_opts o;
  mlsys_xfer_store *s;
  char ep[128];
  double t0;
  int port = closed_port();
  REQUIRE(port > 0);
  memset(&o, 0, sizeof o);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", port);
  o.endpoint = ep;
  o.timeout_s = 600;   /* "fast" = on the refused connection, not after the request timeout: far apart at any load */
  t0 = mlsys_now();
  CHECK_EQ_INT(mlsys_xfer_store_open("s3://bucket", &o, &s), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), ep);
  CHECK_CONTAINS(mlsys_last_error(), "s3://bucket");
  CHECK(mlsys_now() - t0 < 300);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d/devstoreaccount1", port);
  t0 = mlsys_now();
  CHECK_EQ_INT(mlsys_xfer_store_open("azure://container", &o, &s), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), ep);
  CHECK(mlsys_now() - t0 < 300);
}

/* ---------------------------------------------------------------------------------------------------------------
   pieces: keys, the XML list parser
   --------------------------------------------------------------------------------------------------------------- */
TEST(key_rules) {
  CHECK_OK(mlsys_xfer_key_check("a"));
  CHECK_OK(mlsys_xfer_key_check("a/b c/d+e.f"));
  CHECK_OK(mlsys_xfer_key_check("..a/b.."));
  CHECK_OK(mlsys_xfer_key_check(".hidden"));
  CHECK_EQ_INT(mlsys_xfer_key_check(NULL), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check(""), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check("/a"), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check("a/"), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check("a/../b"), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check(".."), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_key_check("./a"), MLSYS_ERR_ARG);
  {
    char k[1100];
    memset(k, 'a', sizeof k);
    k[1025] = 0;
    CHECK_EQ_INT(mlsys_xfer_key_check(k), MLSYS_ERR_ARG);
    k[1024] = 0;
    CHECK_OK(mlsys_xfer_key_check(k));
  }
}

TEST(s3_list_xml_parser) {
  const char *page =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix></Prefix>"
      "<KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a &amp; b&lt;c&gt;&quot;&apos;</Key><LastModified>2020</LastModified><Size>12</Size>"
      "<Owner><ID>x</ID><DisplayName>Key</DisplayName></Owner></Contents>"
      "<Contents><Size> 0 </Size><Key>&#x43a;&#1083;+<![CDATA[<raw>&amp;]]></Key></Contents>"
      "<!-- a comment <Contents> -->"
      "<Contents><Key/><Size>5</Size></Contents>"
      "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>";
  mlsys__xfer_listpage p;
  REQUIRE_OK(mlsys__xfer_parse_list(page, strlen(page), 0, "t", &p));
  CHECK_EQ_INT(p.objs.n, 3);
  if (p.objs.n == 3) {
    CHECK_STR(p.objs.v[0].key, "a & b<c>\"'");
    CHECK_EQ_INT(p.objs.v[0].size, 12);
    CHECK_STR(p.objs.v[1].key, "\xd0\xba\xd0\xbb+<raw>&amp;");
    CHECK_EQ_INT(p.objs.v[1].size, 0);
    CHECK_STR(p.objs.v[2].key, "");
  }
  CHECK(p.truncated);
  CHECK_STR(p.next, "tok+/=");
  mlsys__xfer_listpage_free(&p);
  {
    const char *az = "\xef\xbb\xbf<?xml version=\"1.0\"?><EnumerationResults ServiceEndpoint=\"x\" ContainerName='c'>"
                     "<Blobs><Blob><Name>x/y z</Name><Properties><Content-Length>99</Content-Length></Properties>"
                     "<Metadata><Name>not a blob name</Name></Metadata></Blob></Blobs><NextMarker/></EnumerationResults>";
    REQUIRE_OK(mlsys__xfer_parse_list(az, strlen(az), 1, "t", &p));
    CHECK_EQ_INT(p.objs.n, 1);
    if (p.objs.n == 1) {
      CHECK_STR(p.objs.v[0].key, "x/y z");
      CHECK_EQ_INT(p.objs.v[0].size, 99);
    }
    CHECK(!p.truncated);
    mlsys__xfer_listpage_free(&p);
  }
  {
    static const char *bad[] = {
        "",
        "<ListBucketResult>",
        "<ListBucketResult></ListBucket>",
        "<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a&#xD800;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a & b</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult></ListBucketResult><ListBucketResult></ListBucketResult>",
        "<Error><Code>AccessDenied</Code></Error>",
        "text<ListBucketResult/>",
        "<ListBucketResult><!-- open",
        "<ListBucketResult a=\"1></ListBucketResult>",
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      CHECK_MSG(mlsys__xfer_parse_list(bad[i], strlen(bad[i]), 0, "t", &p) == MLSYS_ERR_PARSE, "accepted: %s", bad[i]);
      CHECK(p.objs.n == 0 && p.objs.v == NULL && p.next == NULL);
      CHECK(strncmp(mlsys_last_error(), "t: ", 3) == 0);
    }
  }
  {   /* nesting beyond the limit is an error, not a crash */
    char deep[4096] = "<ListBucketResult>";
    int i;
    for (i = 0; i < 40; i++) strcat(deep, "<a>");
    CHECK_EQ_INT(mlsys__xfer_parse_list(deep, strlen(deep), 0, "t", &p), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "nested too deeply");
  }
}

TEST_MAIN()
