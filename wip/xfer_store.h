/* wip/xfer_store.h — the object stores of mlsys_transfer.h (Skyplane, NSDI 2023): where a transfer reads its
   objects and where it writes them. A fragment of mlsys_transfer.h until the merge; the interface is in
   wip/xfer_api.h (struct mlsys_xfer_store: list, get_range, put_begin/put_part/put_commit/put_abort, close).

   In ONE .c file:
       #define MLSYS_IMPLEMENTATION            // or MLSYS_XFER_STORE_IMPLEMENTATION + MLSYS_COMMON_IMPLEMENTATION
       #include "wip/xfer_store.h"
   link: -lcurl -lcrypto -lpthread            (Debian: libcurl4-openssl-dev, libssl-dev)

   EXAMPLE (copy every object of one store into another, one part per object)
       mlsys_xfer_store_opts o = {0};                 // zero = defaults (endpoints from the environment)
       mlsys_xfer_store *src, *dst;  mlsys_xfer_obj *objs;  int n;
       if (mlsys_xfer_store_open("synthetic://4:1M", &o, &src) ||
           mlsys_xfer_store_open("file:///tmp/out", &o, &dst) || src->list(src, &objs, &n))
         { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
       for (int i = 0; i < n; i++) {
         void *buf = malloc(objs[i].size + 1);  mlsys_xfer_upload *up;
         src->get_range(src, objs[i].key, 0, objs[i].size, buf);
         dst->put_begin(dst, objs[i].key, objs[i].size, objs[i].size, &up);
         dst->put_part(dst, up, 0, buf, objs[i].size);
         if (dst->put_commit(dst, up)) fprintf(stderr, "%s\n", mlsys_last_error());
         free(buf);
       }
       mlsys_xfer_objs_free(objs, n);  mlsys_xfer_store_close(src);  mlsys_xfer_store_close(dst);

   URLS (anything else is MLSYS_ERR_ARG naming the URL and what is wrong)
     file:///abs/dir, file://rel/dir   a directory; the objects are the regular files below it (recursively; symlinks
                                       to files count, symlinked directories are not followed), keys relative, '/'.
     s3://bucket[/prefix]              S3 REST, path-style requests to opts.endpoint, SigV4 signed by libcurl.
     azure://container[/prefix]        Azure Blob REST, SharedKey signed (HMAC-SHA256, OpenSSL libcrypto).
     synthetic://N:SIZE[:SEED]         N read-only objects "obj-00000".. of SIZE bytes (suffix K, M, G, T = 2^10..,
                                       optionally followed by "iB" or "B"), SEED default 0. Byte b of object k is a
                                       fixed function of (SEED, k, b): mlsys_xfer_synth_fill regenerates any range.

   KEYS are '/'-separated paths: non-empty, at most 1024 bytes, no leading '/', no empty, "." or ".." component
   (so a key can never leave a file:// root and means the same file everywhere). Listing an S3/Azure store that
   holds a key outside these rules fails with MLSYS_ERR_UNSUPPORTED naming it, rather than skipping data silently;
   zero-byte "directory markers" (keys ending in '/') are skipped.

   ERRORS: a missing object is MLSYS_ERR_IO ("no such object 'k'"); a range beyond the end of an object is
   MLSYS_ERR_ARG naming the key, the range and the object's size; HTTP failures are MLSYS_ERR_IO with the method,
   the key, the endpoint, the HTTP status and the service's error code and message; an endpoint that cannot be
   reached is MLSYS_ERR_IO after at most the connect timeout (min(timeout_s, 10) s; a closed port fails at once).

   WRITES: put_begin(key, size, part_bytes) → put_part(i) for every part i (any order, any thread, each once) →
   put_commit (the object appears whole, or not at all) or put_abort. Commit and abort free the upload, also when
   commit fails (then nothing was published). A 0-byte object has one empty part 0, which may be left out.
     file   parts are pwrite()n into a hidden temporary file (".mlsys-tmp-*", never listed) in the object's
            directory; commit fsyncs it and renames it over the key, so a failed or aborted write never leaves a
            partial object and never touches an existing one; abort unlinks it. Parent directories are created.
     s3     objects of ≤ 16 MiB sent as ONE group are buffered and PUT once at commit. Otherwise multipart upload:
            S3 needs every part but the last to be ≥ 5 MiB, so when part_bytes < 5 MiB consecutive parts are
            grouped into S3 parts of ⌈5 MiB / part_bytes⌉ parts each (and, beyond 10,000 S3 parts, larger groups);
            a group is buffered until all its parts are in, then uploaded. With part_bytes ≥ 5 MiB each part is
            uploaded straight from the caller's buffer. Abort sends AbortMultipartUpload (best effort: s3rver does
            not implement it; its leftover parts are invisible).
     azure  the same with Put Blob (one group ≤ 16 MiB) or Put Block per group + Put Block List at commit (no
            minimum block size; grouping only beyond 50,000 blocks). Uncommitted blocks of an abort are never
            visible; Azure drops them after a week.

   OPTIONS (mlsys_xfer_store_opts in wip/xfer_api.h; zero = default)
     endpoint    s3: $MLSYS_S3_ENDPOINT, else https://s3.REGION.amazonaws.com ; azure: $MLSYS_AZURE_ENDPOINT, else
                 https://ACCOUNT.blob.core.windows.net (for azurite: http://127.0.0.1:PORT/devstoreaccount1)
     access_key  s3: $AWS_ACCESS_KEY_ID ; azure: the account, $AZURE_STORAGE_ACCOUNT
     secret_key  s3: $AWS_SECRET_ACCESS_KEY ; azure: the base64 account key, $AZURE_STORAGE_KEY
                 On a loopback endpoint (127.x, localhost, [::1]) the emulators' well-known credentials are the last
                 fallback: s3rver's S3RVER/S3RVER, azurite's devstoreaccount1 and its published key.
     region      SigV4 region, "us-east-1"          timeout_s  per request, 60
     create_bucket  create the bucket / container (or the file:// directory) when it does not exist

   COMPILE-TIME OPTIONS
     MLSYS_XFER_NO_HTTP   build without libcurl/libcrypto: s3:// and azure:// are then MLSYS_ERR_UNSUPPORTED.

   THREADS: every function may be called from many threads on one store. libcurl is initialised once
   (pthread_once); each request uses its own easy handle (no shared connection cache).

   NOT DONE: gs://; HTTPS proxies and custom CA options (libcurl's defaults apply); virtual-host-style S3 URLs;
   retries beyond 3 attempts of a request that failed in transport or with HTTP 500/503; server-side checksums
   (Content-MD5) — the data plane verifies its own chunk hashes. */
#ifndef MLSYS_XFER_STORE_H
#define MLSYS_XFER_STORE_H
/* xfer_api.h has no extern "C" of its own: include the common header (and its implementation, which pulls in
   C++-aware system headers) first, then give the shared declarations C linkage so C++ builds link with C ones. */
#include "mlsys_common.h"
#ifdef __cplusplus
extern "C" {
#endif
#include "xfer_api.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Fill buf with bytes [off, off+len) of the synthetic object `key` under `seed` (what synthetic:// serves). */
MLSYS_DEF void mlsys_xfer_synth_fill(uint64_t seed, const char *key, uint64_t off, uint64_t len, void *buf);
/* MLSYS_OK if key follows the KEYS rules above, else MLSYS_ERR_ARG saying which rule it breaks. */
MLSYS_DEF mlsys_status mlsys_xfer_key_check(const char *key);

#define MLSYS_XFER_S3_MIN_PART (5ull << 20)      /* S3's smallest part except the last */
#define MLSYS_XFER_SINGLE_PUT_MAX (16ull << 20)  /* one-group objects up to this size are buffered and PUT once */

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_STORE_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#if defined(MLSYS_IMPLEMENTATION) && !defined(MLSYS_XFER_STORE_IMPLEMENTATION)
#define MLSYS_XFER_STORE_IMPLEMENTATION
#endif
#ifdef MLSYS_XFER_STORE_IMPLEMENTATION
#ifndef MLSYS_XFER_STORE_IMPLEMENTATION_DONE
#define MLSYS_XFER_STORE_IMPLEMENTATION_DONE

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifndef MLSYS_XFER_NO_HTTP
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { MLSYS__XFER_FILE = 1, MLSYS__XFER_S3, MLSYS__XFER_AZURE, MLSYS__XFER_SYNTH };
#define MLSYS__XFER_KEY_MAX 1024
#define MLSYS__XFER_TMP_PREFIX ".mlsys-tmp-"

typedef struct {
  mlsys_xfer_store pub;   /* first, so the caller's pointer is also ours */
  int type;
  char *url;              /* as given, for messages */
  /* file */
  char *root;
  /* synthetic */
  uint64_t n, size, seed;
  int width;
  /* s3 / azure */
  char *endpoint;         /* no trailing '/' */
  char *bucket;           /* or container */
  char *prefix;           /* "" or "some/prefix/" */
  char *base;             /* endpoint + "/" + bucket */
  char *auth_path;        /* azure: "/" + account + endpoint path + "/" + container (canonicalized resource) */
  char *access, *secret;  /* s3 credentials; azure: account name and base64 key */
  unsigned char azkey[128];
  int azkey_len;
  char sigv4[160];
  long timeout_ms, connect_ms;
} mlsys__xfer_st;

struct mlsys_xfer_upload {
  char *key;              /* relative key (for messages) */
  uint64_t size, pb;
  int nparts;
  pthread_mutex_t mu;
  unsigned char *got;     /* per part: set once it was accepted */
  int failed;
  /* file */
  int fd;
  char *tmp, *dst;
  /* s3 / azure */
  char *url;              /* object URL */
  char *rpath;            /* azure: canonicalized resource of the object */
  int m, ngroups, single; /* parts per group, groups, one buffered PUT at commit */
  uint64_t *gfill;        /* bytes received per group */
  char **gbuf;            /* group buffers (grouped or single mode) */
  char **etag;            /* s3: per group */
  char *upload_id;        /* s3 multipart */
};

/* ---------------------------------------------------------------------------------------------------------------
   Small helpers
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { char *p; size_t n, cap; } mlsys__xfer_buf;

static int mlsys__xfer_buf_add(mlsys__xfer_buf *b, const void *d, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    char *q;
    while (nc < b->n + n + 1) {
      if (nc > SIZE_MAX / 2) return 0;
      nc *= 2;
    }
    q = (char *)MLSYS_REALLOC(b->p, nc);
    if (!q) return 0;
    b->p = q;
    b->cap = nc;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
  b->p[b->n] = 0;
  return 1;
}
static int mlsys__xfer_buf_str(mlsys__xfer_buf *b, const char *s) { return mlsys__xfer_buf_add(b, s, strlen(s)); }
static int mlsys__xfer_buf_fmt(mlsys__xfer_buf *b, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static int mlsys__xfer_buf_fmt(mlsys__xfer_buf *b, const char *fmt, ...) {
  char tmp[512];
  int k;
  va_list ap;
  va_start(ap, fmt);
  k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof tmp) return 0;
  return mlsys__xfer_buf_add(b, tmp, (size_t)k);
}
static void mlsys__xfer_buf_free(mlsys__xfer_buf *b) {
  MLSYS_FREE(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}
/* Takes the buffer's string (never NULL on success). */
static char *mlsys__xfer_buf_take(mlsys__xfer_buf *b) {
  char *p;
  if (!b->p && !mlsys__xfer_buf_add(b, "", 0)) return NULL;
  p = b->p;
  b->p = NULL;
  b->n = b->cap = 0;
  return p;
}
static mlsys_status mlsys__xfer_oom(void) { return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }

static char *mlsys__xfer_strndup(const char *s, size_t n) {
  char *d = (char *)mlsys_alloc(n + 1, 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}
static char *mlsys__xfer_cat(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *d = (char *)mlsys_alloc(na + nb + 1, 1);
  if (d) {
    memcpy(d, a, na);
    memcpy(d + na, b, nb + 1);
  }
  return d;
}

MLSYS_DEF mlsys_status mlsys_xfer_key_check(const char *key) {
  const char *p, *c;
  size_t n;
  if (!key) return mlsys_set_error(MLSYS_ERR_ARG, "key is NULL");
  n = strlen(key);
  if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "empty key");
  if (n > MLSYS__XFER_KEY_MAX)
    return mlsys_set_error(MLSYS_ERR_ARG, "key '%.60s...' is %zu bytes (at most %d)", key, n, MLSYS__XFER_KEY_MAX);
  if (key[0] == '/') return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' is absolute (starts with '/')", key);
  for (p = key;; p = c + 1) {
    size_t len;
    c = strchr(p, '/');
    len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0) return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' has an empty path component", key);
    if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
      return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' has a '%.*s' path component", key, (int)len, p);
    if (!c) break;
  }
  return MLSYS_OK;
}

/* Parses "123", "5M", "1.5G" is not accepted: sizes are integers with an optional binary suffix. */
static int mlsys__xfer_parse_u64(const char *s, size_t n, uint64_t *out, int allow_suffix) {
  uint64_t v = 0, mul = 1;
  size_t i = 0;
  if (n == 0) return 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == 0) return 0;
  if (i < n) {
    const char *r = s + i;
    size_t rn = n - i;
    if (!allow_suffix) return 0;
    switch (toupper((unsigned char)r[0])) {
      case 'K': mul = 1ull << 10; break;
      case 'M': mul = 1ull << 20; break;
      case 'G': mul = 1ull << 30; break;
      case 'T': mul = 1ull << 40; break;
      default: return 0;
    }
    if (!(rn == 1 || (rn == 2 && toupper((unsigned char)r[1]) == 'B') ||
          (rn == 3 && r[1] == 'i' && toupper((unsigned char)r[2]) == 'B')))
      return 0;
    if (v > UINT64_MAX / mul) return 0;
    v *= mul;
  }
  *out = v;
  return 1;
}

/* ---------------------------------------------------------------------------------------------------------------
   Synthetic data: a splitmix64 stream per object, keyed by FNV-1a(key) and the seed
   --------------------------------------------------------------------------------------------------------------- */
static uint64_t mlsys__xfer_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
MLSYS_DEF void mlsys_xfer_synth_fill(uint64_t seed, const char *key, uint64_t off, uint64_t len, void *buf) {
  uint64_t h = 0xcbf29ce484222325ull, end = off + len, o = off;
  unsigned char *out = (unsigned char *)buf;
  const unsigned char *k;
  for (k = (const unsigned char *)key; *k; k++) h = (h ^ *k) * 0x100000001b3ull;
  h ^= mlsys__xfer_mix(seed + 0x9e3779b97f4a7c15ull);
  while (o < end) {
    uint64_t w = mlsys__xfer_mix(h + (o / 8 + 1) * 0x9e3779b97f4a7c15ull);
    unsigned b = (unsigned)(o % 8);
    if (b == 0 && end - o >= 8) {
      int i;
      for (i = 0; i < 8; i++) out[i] = (unsigned char)(w >> (8 * i));   /* little-endian on every host */
      out += 8;
      o += 8;
    } else {
      for (; b < 8 && o < end; b++, o++) *out++ = (unsigned char)(w >> (8 * b));
    }
  }
}

static mlsys_status mlsys__xfer_synth_find(mlsys__xfer_st *s, const char *key, uint64_t *idx) {
  uint64_t v;
  char want[64];
  if (strncmp(key, "obj-", 4) != 0 || !mlsys__xfer_parse_u64(key + 4, strlen(key + 4), &v, 0) || v >= s->n)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  snprintf(want, sizeof want, "obj-%0*llu", s->width, (unsigned long long)v);
  if (strcmp(want, key) != 0) return mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  *idx = v;
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_synth_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys_xfer_obj *o;
  uint64_t i;
  *objs = NULL;
  *n = 0;
  o = (mlsys_xfer_obj *)mlsys_calloc(s->n ? (size_t)s->n : 1, sizeof *o);
  if (!o) return MLSYS_ERR_NOMEM;
  for (i = 0; i < s->n; i++) {
    char k[64];
    snprintf(k, sizeof k, "obj-%0*llu", s->width, (unsigned long long)i);
    o[i].key = mlsys_strdup(k);
    o[i].size = s->size;
    if (!o[i].key) {
      mlsys_xfer_objs_free(o, (int)i);
      return MLSYS_ERR_NOMEM;
    }
  }
  *objs = o;
  *n = (int)s->n;
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_range_error(const char *url, const char *key, uint64_t off, uint64_t len,
                                            uint64_t size) {
  return mlsys_set_error(MLSYS_ERR_ARG, "%s: range [%llu, %llu) is beyond the end of '%s' (%llu bytes)", url,
                         (unsigned long long)off, (unsigned long long)(off + len), key, (unsigned long long)size);
}
static mlsys_status mlsys__xfer_synth_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                          void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  uint64_t idx;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (mlsys__xfer_synth_find(s, key, &idx)) return MLSYS_ERR_IO;
  if (off > s->size || len > s->size - off) return mlsys__xfer_range_error(s->url, key, off, len, s->size);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  mlsys_xfer_synth_fill(s->seed, key, off, len, buf);
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_synth_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                                mlsys_xfer_upload **up) {
  (void)key; (void)size; (void)pb;
  if (up) *up = NULL;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static mlsys_status mlsys__xfer_synth_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *up, int part,
                                               const void *buf, uint64_t len) {
  (void)up; (void)part; (void)buf; (void)len;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static mlsys_status mlsys__xfer_synth_commit(mlsys_xfer_store *st, mlsys_xfer_upload *up) {
  (void)up;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static void mlsys__xfer_synth_abort(mlsys_xfer_store *st, mlsys_xfer_upload *up) { (void)st; (void)up; }

/* ---------------------------------------------------------------------------------------------------------------
   Listing helpers shared by every backend
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_xfer_obj *v;
  int n, cap;
} mlsys__xfer_objv;

static int mlsys__xfer_objv_push(mlsys__xfer_objv *a, char *key, uint64_t size) {
  if (a->n == a->cap) {
    int nc = a->cap ? a->cap * 2 : 64;
    mlsys_xfer_obj *q;
    if (a->cap > INT_MAX / 2) return 0;
    q = (mlsys_xfer_obj *)MLSYS_REALLOC(a->v, (size_t)nc * sizeof *q);
    if (!q) return 0;
    a->v = q;
    a->cap = nc;
  }
  a->v[a->n].key = key;
  a->v[a->n].size = size;
  a->n++;
  return 1;
}
static int mlsys__xfer_obj_cmp(const void *a, const void *b) {
  return strcmp(((const mlsys_xfer_obj *)a)->key, ((const mlsys_xfer_obj *)b)->key);
}

MLSYS_DEF void mlsys_xfer_objs_free(mlsys_xfer_obj *objs, int n) {
  int i;
  if (!objs) return;
  for (i = 0; i < n; i++) MLSYS_FREE(objs[i].key);
  MLSYS_FREE(objs);
}

/* ---------------------------------------------------------------------------------------------------------------
   file://
   --------------------------------------------------------------------------------------------------------------- */
static char *mlsys__xfer_path(const char *root, const char *key) {
  size_t nr = strlen(root), nk = strlen(key);
  char *p = (char *)mlsys_alloc(nr + nk + 2, 1);
  if (!p) return NULL;
  memcpy(p, root, nr);
  p[nr] = '/';
  memcpy(p + nr + 1, key, nk + 1);
  return p;
}

static mlsys_status mlsys__xfer_walk(mlsys__xfer_st *s, const char *dir, const char *rel, mlsys__xfer_objv *out,
                                     int depth) {
  DIR *d;
  struct dirent *e;
  mlsys_status st = MLSYS_OK;
  if (depth > 64) return mlsys_set_error(MLSYS_ERR_IO, "%s: directories nested deeper than 64 at '%s'", s->url, rel);
  d = opendir(dir);
  if (!d) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot list '%s': %s", s->url, dir, strerror(errno));
  while ((e = readdir(d)) != NULL) {
    struct stat sb;
    char *full, *key;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!strncmp(e->d_name, MLSYS__XFER_TMP_PREFIX, strlen(MLSYS__XFER_TMP_PREFIX))) continue;  /* uploads */
    full = mlsys__xfer_path(dir, e->d_name);
    key = rel[0] ? mlsys__xfer_path(rel, e->d_name) : mlsys_strdup(e->d_name);
    if (!full || !key) {
      MLSYS_FREE(full);
      MLSYS_FREE(key);
      st = MLSYS_ERR_NOMEM;
      break;
    }
    if (lstat(full, &sb) != 0) {
      if (errno != ENOENT) st = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot stat '%s': %s", s->url, full, strerror(errno));
    } else if (S_ISDIR(sb.st_mode)) {
      st = mlsys__xfer_walk(s, full, key, out, depth + 1);
    } else {
      /* a symlink counts when it points at a regular file; symlinked directories are not followed (loops) */
      int reg = S_ISREG(sb.st_mode) || (S_ISLNK(sb.st_mode) && stat(full, &sb) == 0 && S_ISREG(sb.st_mode));
      if (reg && strlen(key) <= MLSYS__XFER_KEY_MAX) {
        if (!mlsys__xfer_objv_push(out, key, (uint64_t)sb.st_size)) st = mlsys__xfer_oom();
        else key = NULL;
      }
    }
    MLSYS_FREE(full);
    MLSYS_FREE(key);
    if (st) break;
  }
  closedir(d);
  return st;
}
static mlsys_status mlsys__xfer_file_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys__xfer_objv a = {NULL, 0, 0};
  mlsys_status r;
  *objs = NULL;
  *n = 0;
  r = mlsys__xfer_walk(s, s->root, "", &a, 0);
  if (r) {
    mlsys_xfer_objs_free(a.v, a.n);
    return r;
  }
  if (a.n > 1) qsort(a.v, (size_t)a.n, sizeof *a.v, mlsys__xfer_obj_cmp);
  *objs = a.v;
  *n = a.n;
  return MLSYS_OK;
}

static mlsys_status mlsys__xfer_file_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                         void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  char *path;
  int fd;
  struct stat sb;
  uint64_t done = 0;
  mlsys_status r = MLSYS_OK;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  path = mlsys__xfer_path(s->root, key);
  if (!path) return MLSYS_ERR_NOMEM;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r = errno == ENOENT || errno == ENOTDIR
            ? mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key)
            : mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open '%s': %s", s->url, path, strerror(errno));
    MLSYS_FREE(path);
    return r;
  }
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s' (not a regular file)", s->url, key);
  } else if (off > (uint64_t)sb.st_size || len > (uint64_t)sb.st_size - off) {
    r = mlsys__xfer_range_error(s->url, key, off, len, (uint64_t)sb.st_size);
  } else {
    while (done < len) {
      size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
      ssize_t k = pread(fd, (char *)buf + done, want, (off_t)(off + done));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        r = mlsys_set_error(MLSYS_ERR_IO, "%s: reading '%s' at %llu: %s", s->url, key,
                            (unsigned long long)(off + done), k < 0 ? strerror(errno) : "file shrank while reading");
        break;
      }
      done += (uint64_t)k;
    }
  }
  close(fd);
  MLSYS_FREE(path);
  return r;
}

/* mkdir -p for the directories of `key` below the root (the root itself exists). */
static mlsys_status mlsys__xfer_mkparents(mlsys__xfer_st *s, const char *path, size_t rootlen) {
  char *p = mlsys_strdup(path), *c;
  mlsys_status r = MLSYS_OK;
  if (!p) return MLSYS_ERR_NOMEM;
  for (c = p + rootlen + 1; (c = strchr(c, '/')) != NULL; c++) {
    struct stat sb;
    *c = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, p, strerror(errno));
    } else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: '%s' exists and is not a directory", s->url, p);
    }
    *c = '/';
    if (r) break;
  }
  MLSYS_FREE(p);
  return r;
}

static int mlsys__xfer_nparts(uint64_t size, uint64_t pb, int *nparts) {
  uint64_t n;
  if (size == 0) {
    *nparts = 1;
    return 1;
  }
  if (pb == 0) return 0;
  n = size / pb + (size % pb != 0);
  if (n > (uint64_t)(INT_MAX / 2)) return 0;
  *nparts = (int)n;
  return 1;
}
static uint64_t mlsys__xfer_part_len(const mlsys_xfer_upload *u, int i) {
  uint64_t a = (uint64_t)i * u->pb, b = a + u->pb;
  if (u->size == 0) return 0;
  return (b > u->size ? u->size : b) - a;
}

static mlsys_xfer_upload *mlsys__xfer_upload_new(const char *key, uint64_t size, uint64_t pb, int nparts) {
  mlsys_xfer_upload *u = (mlsys_xfer_upload *)mlsys_calloc(1, sizeof *u);
  if (!u) return NULL;
  u->fd = -1;
  u->key = mlsys_strdup(key);
  u->got = (unsigned char *)mlsys_calloc((size_t)nparts, 1);
  u->size = size;
  u->pb = pb;
  u->nparts = nparts;
  pthread_mutex_init(&u->mu, NULL);
  if (!u->key || !u->got) {
    MLSYS_FREE(u->key);
    MLSYS_FREE(u->got);
    pthread_mutex_destroy(&u->mu);
    MLSYS_FREE(u);
    return NULL;
  }
  return u;
}
static void mlsys__xfer_upload_free(mlsys_xfer_upload *u) {
  int g;
  if (!u) return;
  if (u->gbuf)
    for (g = 0; g < u->ngroups; g++) MLSYS_FREE(u->gbuf[g]);
  if (u->etag)
    for (g = 0; g < u->ngroups; g++) MLSYS_FREE(u->etag[g]);
  MLSYS_FREE(u->gbuf);
  MLSYS_FREE(u->etag);
  MLSYS_FREE(u->gfill);
  MLSYS_FREE(u->upload_id);
  MLSYS_FREE(u->url);
  MLSYS_FREE(u->rpath);
  MLSYS_FREE(u->tmp);
  MLSYS_FREE(u->dst);
  MLSYS_FREE(u->got);
  MLSYS_FREE(u->key);
  pthread_mutex_destroy(&u->mu);
  MLSYS_FREE(u);
}

/* Common argument checks of put_begin. */
static mlsys_status mlsys__xfer_begin_check(mlsys__xfer_st *s, const char *key, uint64_t size, uint64_t pb,
                                            mlsys_xfer_upload **up, int *nparts) {
  if (!up) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_begin without an upload pointer", s->url);
  *up = NULL;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (!mlsys__xfer_nparts(size, pb, nparts))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': %llu bytes in parts of %llu bytes %s", s->url, key,
                           (unsigned long long)size, (unsigned long long)pb,
                           pb == 0 ? "(part_bytes must be > 0)" : "are too many parts");
  return MLSYS_OK;
}

/* Common checks of put_part; marks the part taken (a second put of it is an error). */
static mlsys_status mlsys__xfer_part_take(mlsys__xfer_st *s, mlsys_xfer_upload *u, int part, const void *buf,
                                          uint64_t len) {
  mlsys_status r = MLSYS_OK;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_part on a NULL upload", s->url);
  if (part < 0 || part >= u->nparts)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d out of range (the object has %d parts)", s->url,
                           u->key, part, u->nparts);
  if (len != mlsys__xfer_part_len(u, part))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d has %llu bytes, expected %llu", s->url, u->key,
                           part, (unsigned long long)len, (unsigned long long)mlsys__xfer_part_len(u, part));
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d from a NULL buffer", s->url, u->key, part);
  pthread_mutex_lock(&u->mu);
  if (u->failed)
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': an earlier part failed; abort the upload", s->url, u->key);
  else if (u->got[part])
    r = mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d was already written", s->url, u->key, part);
  else
    u->got[part] = 1;
  pthread_mutex_unlock(&u->mu);
  return r;
}
static mlsys_status mlsys__xfer_all_parts(mlsys__xfer_st *s, mlsys_xfer_upload *u) {
  int i, missing = 0, first = -1;
  if (u->failed) return mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': a part failed; nothing was written", s->url, u->key);
  if (u->size == 0) return MLSYS_OK;
  for (i = 0; i < u->nparts; i++)
    if (!u->got[i]) {
      if (first < 0) first = i;
      missing++;
    }
  if (missing)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: commit '%s': %d of %d parts missing (first: part %d); nothing was written",
                           s->url, u->key, missing, u->nparts, first);
  return MLSYS_OK;
}
static void mlsys__xfer_fail(mlsys_xfer_upload *u) {
  pthread_mutex_lock(&u->mu);
  u->failed = 1;
  pthread_mutex_unlock(&u->mu);
}

static mlsys_status mlsys__xfer_file_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                               mlsys_xfer_upload **up) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  static unsigned long counter;
  mlsys_xfer_upload *u;
  struct stat sb;
  int nparts, tries;
  char *slash;
  mlsys_status r = mlsys__xfer_begin_check(s, key, size, pb, up, &nparts);
  if (r) return r;
  u = mlsys__xfer_upload_new(key, size, pb, nparts);
  if (!u) return MLSYS_ERR_NOMEM;
  u->dst = mlsys__xfer_path(s->root, key);
  if (!u->dst) goto oom;
  if ((r = mlsys__xfer_mkparents(s, u->dst, strlen(s->root))) != MLSYS_OK) goto fail;
  if (stat(u->dst, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': a directory of that name exists", s->url, key);
    goto fail;
  }
  slash = strrchr(u->dst, '/');
  for (tries = 0; tries < 100; tries++) {
    mlsys__xfer_buf b = {NULL, 0, 0};
    unsigned long c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    if (!mlsys__xfer_buf_add(&b, u->dst, (size_t)(slash - u->dst) + 1) ||
        !mlsys__xfer_buf_fmt(&b, MLSYS__XFER_TMP_PREFIX "%ld-%lu-%lx", (long)getpid(), c,
                             (unsigned long)(mlsys_now() * 1e9))) {
      mlsys__xfer_buf_free(&b);
      goto oom;
    }
    /* 0666 so that the published file gets the permissions umask gives any new file */
    u->fd = open(b.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (u->fd >= 0) {
      u->tmp = mlsys__xfer_buf_take(&b);
      break;
    }
    mlsys__xfer_buf_free(&b);
    if (errno != EEXIST) break;
  }
  if (u->fd < 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': cannot create a temporary file beside it: %s", s->url, key,
                        strerror(errno));
    goto fail;
  }
  if (size && ftruncate(u->fd, (off_t)size) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': cannot size the temporary file to %llu bytes: %s", s->url,
                        key, (unsigned long long)size, strerror(errno));
    goto fail;
  }
  *up = u;
  return MLSYS_OK;
oom:
  r = mlsys__xfer_oom();
fail:
  if (u->fd >= 0) close(u->fd);
  if (u->tmp) unlink(u->tmp);
  mlsys__xfer_upload_free(u);
  return r;
}
static mlsys_status mlsys__xfer_file_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *u, int part, const void *buf,
                                              uint64_t len) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  uint64_t done = 0, off;
  mlsys_status r = mlsys__xfer_part_take(s, u, part, buf, len);
  if (r) return r;
  off = (uint64_t)part * u->pb;
  while (done < len) {
    size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
    ssize_t k = pwrite(u->fd, (const char *)buf + done, want, (off_t)(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      mlsys__xfer_fail(u);
      return mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': writing part %d: %s", s->url, u->key, part,
                             k < 0 ? strerror(errno) : "no progress");
    }
    done += (uint64_t)k;
  }
  return MLSYS_OK;
}
static void mlsys__xfer_file_put_abort(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  (void)st;
  if (!u) return;
  if (u->fd >= 0) close(u->fd);
  if (u->tmp) unlink(u->tmp);
  mlsys__xfer_upload_free(u);
}
static mlsys_status mlsys__xfer_file_put_commit(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys_status r;
  int fd;
  char *slash;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_commit on a NULL upload", s->url);
  if ((r = mlsys__xfer_all_parts(s, u)) != MLSYS_OK) {
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  /* data first, then the name: after a crash the key holds the old object or the whole new one */
  if (fsync(u->fd) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': fsync: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  fd = u->fd;
  u->fd = -1;
  if (close(fd) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': close: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  if (rename(u->tmp, u->dst) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': rename into place: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  slash = strrchr(u->dst, '/');
  *slash = 0;
  fd = open(u->dst, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);   /* makes the rename durable; not all file systems allow it on a directory */
    close(fd);
  }
  MLSYS_FREE(u->tmp);
  u->tmp = NULL;
  mlsys__xfer_upload_free(u);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   A small XML reader for the services' answers (list pages, errors, upload ids). Well-formedness is checked as
   far as it matters here (tags balance, one root, entities valid); namespaces are ignored; DTDs are skipped and
   never expanded. The callback sees every open tag and every close tag with the text directly before it.
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__XFER_XML_DEPTH 32
typedef struct {
  char name[MLSYS__XFER_XML_DEPTH][64];   /* longer names are cut (they then match no name we look for) */
  int depth;                             /* name[depth-1] is the innermost open element */
} mlsys__xfer_xml_path;
typedef mlsys_status (*mlsys__xfer_xml_cb)(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *text,
                                           size_t tlen);

static int mlsys__xfer_xml_is(const mlsys__xfer_xml_path *p, int level, const char *name) {
  return level >= 1 && level <= p->depth && strcmp(p->name[level - 1], name) == 0;
}
static size_t mlsys__xfer_find(const char *x, size_t n, size_t from, const char *pat) {
  size_t k = strlen(pat), i;
  if (n < k) return (size_t)-1;
  for (i = from; i + k <= n; i++)
    if (x[i] == pat[0] && memcmp(x + i, pat, k) == 0) return i;
  return (size_t)-1;
}
static int mlsys__xfer_utf8(mlsys__xfer_buf *b, unsigned long c) {
  unsigned char u[4];
  size_t k;
  if (c < 0x80) { u[0] = (unsigned char)c; k = 1; }
  else if (c < 0x800) { u[0] = (unsigned char)(0xC0 | (c >> 6)); u[1] = (unsigned char)(0x80 | (c & 0x3F)); k = 2; }
  else if (c < 0x10000) {
    u[0] = (unsigned char)(0xE0 | (c >> 12)); u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (c & 0x3F)); k = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | (c >> 18)); u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)); u[3] = (unsigned char)(0x80 | (c & 0x3F)); k = 4;
  }
  return mlsys__xfer_buf_add(b, u, k);
}
static int mlsys__xfer_xml_namech(char c) {
  return c && !isspace((unsigned char)c) && c != '/' && c != '>' && c != '<' && c != '=' && c != '"' && c != '\'';
}

static mlsys_status mlsys__xfer_xml_walk(const char *x, size_t n, const char *what, mlsys__xfer_xml_cb cb, void *ctx) {
  mlsys__xfer_xml_path path;
  mlsys__xfer_buf text = {NULL, 0, 0};
  size_t i = 0;
  int seen_root = 0;
  mlsys_status r = MLSYS_OK;
  const char *err = NULL;
  path.depth = 0;
  if (n >= 3 && (unsigned char)x[0] == 0xEF && (unsigned char)x[1] == 0xBB && (unsigned char)x[2] == 0xBF) i = 3;
  while (i < n && !err && !r) {
    char c = x[i];
    if (c == 0) { err = "NUL byte"; break; }
    if (c != '<') {
      if (path.depth == 0) {
        if (!isspace((unsigned char)c)) err = "text outside the root element";
        i++;
        continue;
      }
      if (c == '&') {
        size_t j = i + 1, e;
        unsigned long v = 0;
        while (j < n && j - i < 12 && x[j] != ';') j++;
        if (j >= n || x[j] != ';') { err = "'&' without a ';'"; break; }
        e = j - i - 1;   /* entity name length */
        if (e == 2 && !memcmp(x + i + 1, "lt", 2)) v = '<';
        else if (e == 2 && !memcmp(x + i + 1, "gt", 2)) v = '>';
        else if (e == 3 && !memcmp(x + i + 1, "amp", 3)) v = '&';
        else if (e == 4 && !memcmp(x + i + 1, "quot", 4)) v = '"';
        else if (e == 4 && !memcmp(x + i + 1, "apos", 4)) v = '\'';
        else if (e >= 2 && x[i + 1] == '#') {
          size_t k = i + 2;
          int hex = x[k] == 'x' || x[k] == 'X';
          if (hex) k++;
          if (k == j) { err = "empty character reference"; break; }
          for (; k < j; k++) {
            int d = x[k] >= '0' && x[k] <= '9' ? x[k] - '0'
                    : hex && x[k] >= 'a' && x[k] <= 'f' ? x[k] - 'a' + 10
                    : hex && x[k] >= 'A' && x[k] <= 'F' ? x[k] - 'A' + 10 : -1;
            if (d < 0) break;
            v = v * (hex ? 16 : 10) + (unsigned long)d;
            if (v > 0x10FFFF) break;
          }
          if (k != j || v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { err = "bad character reference"; break; }
        } else { err = "unknown entity"; break; }
        if (!mlsys__xfer_utf8(&text, v)) { r = mlsys__xfer_oom(); break; }
        i = j + 1;
        continue;
      }
      if (!mlsys__xfer_buf_add(&text, &c, 1)) { r = mlsys__xfer_oom(); break; }
      i++;
      continue;
    }
    /* markup */
    if (n - i >= 2 && x[i + 1] == '?') {
      size_t e = mlsys__xfer_find(x, n, i + 2, "?>");
      if (e == (size_t)-1) { err = "unterminated processing instruction"; break; }
      i = e + 2;
    } else if (n - i >= 4 && !memcmp(x + i, "<!--", 4)) {
      size_t e = mlsys__xfer_find(x, n, i + 4, "-->");
      if (e == (size_t)-1) { err = "unterminated comment"; break; }
      i = e + 3;
    } else if (n - i >= 9 && !memcmp(x + i, "<![CDATA[", 9)) {
      size_t e = mlsys__xfer_find(x, n, i + 9, "]]>");
      if (path.depth == 0) { err = "CDATA outside the root element"; break; }
      if (e == (size_t)-1) { err = "unterminated CDATA section"; break; }
      if (memchr(x + i + 9, 0, e - i - 9)) { err = "NUL byte"; break; }
      if (!mlsys__xfer_buf_add(&text, x + i + 9, e - i - 9)) { r = mlsys__xfer_oom(); break; }
      i = e + 3;
    } else if (n - i >= 2 && x[i + 1] == '!') {
      int br = 0;
      size_t j = i + 2;
      if (path.depth > 0 || seen_root) { err = "declaration inside the document"; break; }
      for (; j < n; j++) {
        if (x[j] == '[') br++;
        else if (x[j] == ']') br--;
        else if (x[j] == '>' && br <= 0) break;
      }
      if (j >= n) { err = "unterminated declaration"; break; }
      i = j + 1;
    } else if (n - i >= 2 && x[i + 1] == '/') {
      size_t j = i + 2, s0 = j, nl;
      while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
      nl = j - s0;
      while (j < n && isspace((unsigned char)x[j])) j++;
      if (j >= n || x[j] != '>') { err = "malformed close tag"; break; }
      if (path.depth == 0) { err = "close tag without an open element"; break; }
      {
        const char *top = path.name[path.depth - 1];
        size_t tl = strlen(top), cut = nl < 63 ? nl : 63;
        if (nl == 0 || tl != cut || memcmp(top, x + s0, cut) != 0) { err = "close tag does not match the open element"; break; }
      }
      r = cb(ctx, &path, 0, text.p ? text.p : "", text.n);
      text.n = 0;
      path.depth--;
      i = j + 1;
    } else {
      size_t j = i + 1, s0 = j, nl;
      int self = 0;
      while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
      nl = j - s0;
      if (nl == 0) { err = "malformed tag"; break; }
      for (;;) {   /* attributes are skipped */
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n) break;
        if (x[j] == '>') break;
        if (x[j] == '/' && j + 1 < n && x[j + 1] == '>') { self = 1; j++; break; }
        if (!mlsys__xfer_xml_namech(x[j])) { j = n; break; }
        while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n || x[j] != '=') { j = n; break; }
        j++;
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n || (x[j] != '"' && x[j] != '\'')) { j = n; break; }
        {
          char q = x[j];
          const char *e = (const char *)memchr(x + j + 1, q, n - j - 1);
          if (!e) { j = n; break; }
          j = (size_t)(e - x) + 1;
        }
      }
      if (j >= n) { err = "malformed tag"; break; }
      if (path.depth == 0 && seen_root) { err = "a second root element"; break; }
      if (path.depth == MLSYS__XFER_XML_DEPTH) { err = "elements nested too deeply"; break; }
      {
        size_t cut = nl < 63 ? nl : 63;
        memcpy(path.name[path.depth], x + s0, cut);
        path.name[path.depth][cut] = 0;
      }
      path.depth++;
      seen_root = 1;
      text.n = 0;
      r = cb(ctx, &path, 1, "", 0);
      if (!r && self) {
        r = cb(ctx, &path, 0, "", 0);
        path.depth--;
      }
      i = j + 1;
    }
  }
  if (!err && !r) {
    if (path.depth > 0) err = "unterminated element";
    else if (!seen_root) err = "no root element";
  }
  mlsys__xfer_buf_free(&text);
  if (err) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: byte %zu: %s", what, i, err);
  return r;
}

/* One page of ListObjectsV2 (S3: ListBucketResult/Contents/{Key,Size}, IsTruncated, NextContinuationToken) or
   List Blobs (Azure: EnumerationResults/Blobs/Blob/{Name,Properties/Content-Length}, NextMarker). Keys are the
   service's full keys (prefix included). */
typedef struct {
  int azure;
  const char *what;
  mlsys__xfer_objv objs;
  char *key;
  uint64_t size;
  int has_key, has_size;
  int truncated;
  char *next;
} mlsys__xfer_listpage;

static void mlsys__xfer_listpage_free(mlsys__xfer_listpage *p) {
  mlsys_xfer_objs_free(p->objs.v, p->objs.n);
  p->objs.v = NULL;
  p->objs.n = p->objs.cap = 0;
  MLSYS_FREE(p->key);
  MLSYS_FREE(p->next);
  p->key = p->next = NULL;
}
static int mlsys__xfer_trim(const char **t, size_t *n) {
  while (*n && isspace((unsigned char)(*t)[0])) { (*t)++; (*n)--; }
  while (*n && isspace((unsigned char)(*t)[*n - 1])) (*n)--;
  return 1;
}
static mlsys_status mlsys__xfer_list_cb(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *t, size_t tn) {
  mlsys__xfer_listpage *L = (mlsys__xfer_listpage *)ctx;
  const char *rec = L->azure ? "Blob" : "Contents";
  int rl = L->azure ? 3 : 2;   /* depth of a record element */
  if (open) {
    if (p->depth == 1 && !mlsys__xfer_xml_is(p, 1, L->azure ? "EnumerationResults" : "ListBucketResult"))
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: unexpected root element <%s>", L->what, p->name[0]);
    if (p->depth == rl && mlsys__xfer_xml_is(p, rl, rec) && (!L->azure || mlsys__xfer_xml_is(p, 2, "Blobs"))) {
      MLSYS_FREE(L->key);
      L->key = NULL;
      L->has_key = L->has_size = 0;
    }
    return MLSYS_OK;
  }
  if (p->depth == rl + 1 && mlsys__xfer_xml_is(p, rl, rec) && mlsys__xfer_xml_is(p, rl + 1, L->azure ? "Name" : "Key")) {
    MLSYS_FREE(L->key);
    L->key = mlsys__xfer_strndup(t, tn);
    if (!L->key) return MLSYS_ERR_NOMEM;
    L->has_key = 1;
  } else if ((!L->azure && p->depth == 3 && mlsys__xfer_xml_is(p, 2, "Contents") && mlsys__xfer_xml_is(p, 3, "Size")) ||
             (L->azure && p->depth == 5 && mlsys__xfer_xml_is(p, 3, "Blob") && mlsys__xfer_xml_is(p, 4, "Properties") &&
              mlsys__xfer_xml_is(p, 5, "Content-Length"))) {
    mlsys__xfer_trim(&t, &tn);
    if (!mlsys__xfer_parse_u64(t, tn, &L->size, 0) || L->size > (uint64_t)INT64_MAX)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: object size '%.*s' is not a byte count", L->what,
                             (int)(tn > 40 ? 40 : tn), t);
    L->has_size = 1;
  } else if (p->depth == rl && mlsys__xfer_xml_is(p, rl, rec) && (!L->azure || mlsys__xfer_xml_is(p, 2, "Blobs"))) {
    if (!L->has_key || !L->has_size)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: <%s> without <%s>", L->what, rec,
                             !L->has_key ? (L->azure ? "Name" : "Key") : (L->azure ? "Content-Length" : "Size"));
    if (!mlsys__xfer_objv_push(&L->objs, L->key, L->size)) return mlsys__xfer_oom();
    L->key = NULL;
    L->has_key = L->has_size = 0;
  } else if (!L->azure && p->depth == 2 && mlsys__xfer_xml_is(p, 2, "IsTruncated")) {
    mlsys__xfer_trim(&t, &tn);
    L->truncated = tn == 4 && !memcmp(t, "true", 4);
  } else if (p->depth == 2 && mlsys__xfer_xml_is(p, 2, L->azure ? "NextMarker" : "NextContinuationToken")) {
    mlsys__xfer_trim(&t, &tn);
    MLSYS_FREE(L->next);
    L->next = tn ? mlsys__xfer_strndup(t, tn) : NULL;
    if (tn && !L->next) return MLSYS_ERR_NOMEM;
    if (L->azure) L->truncated = tn > 0;
  }
  return MLSYS_OK;
}
/* Parses one list page; on failure *page is empty. */
static mlsys_status mlsys__xfer_parse_list(const char *xml, size_t n, int azure, const char *what,
                                           mlsys__xfer_listpage *page) {
  mlsys_status r;
  memset(page, 0, sizeof *page);
  page->azure = azure;
  page->what = what;
  r = mlsys__xfer_xml_walk(xml, n, what, mlsys__xfer_list_cb, page);
  MLSYS_FREE(page->key);
  page->key = NULL;
  if (r) mlsys__xfer_listpage_free(page);
  return r;
}

/* The text of the first element `name` whose parent is `parent` (e.g. Error/Code), or NULL. */
typedef struct { const char *parent, *name; char *out; } mlsys__xfer_pick;
static mlsys_status mlsys__xfer_pick_cb(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *t, size_t tn) {
  mlsys__xfer_pick *k = (mlsys__xfer_pick *)ctx;
  if (!open && !k->out && p->depth >= 2 && mlsys__xfer_xml_is(p, p->depth, k->name) &&
      mlsys__xfer_xml_is(p, p->depth - 1, k->parent)) {
    mlsys__xfer_trim(&t, &tn);
    k->out = mlsys__xfer_strndup(t, tn);
  }
  return MLSYS_OK;
}
static char *mlsys__xfer_xml_pick(const char *xml, size_t n, const char *parent, const char *name) {
  mlsys__xfer_pick k;
  char saved[1024];
  mlsys_status st = mlsys_last_status();
  k.parent = parent;
  k.name = name;
  k.out = NULL;
  snprintf(saved, sizeof saved, "%s", mlsys_last_error());
  if (mlsys__xfer_xml_walk(xml, n, "response", mlsys__xfer_pick_cb, &k) != MLSYS_OK) {
    MLSYS_FREE(k.out);
    k.out = NULL;
  }
  mlsys_set_error(st, "%s", saved);   /* picking is best effort: keep the caller's error detail */
  return k.out;
}

/* Strip the store's prefix from listed keys, drop directory markers, check the rest, sort. */
static mlsys_status mlsys__xfer_list_finish(mlsys__xfer_st *s, mlsys__xfer_objv *a) {
  size_t pl = strlen(s->prefix);
  int i, w = 0;
  mlsys_status r = MLSYS_OK;
  for (i = 0; i < a->n; i++) {
    char *k = a->v[i].key;
    size_t kl = strlen(k);
    if (r || strncmp(k, s->prefix, pl) != 0 || kl == pl || (k[kl - 1] == '/' && a->v[i].size == 0)) {
      MLSYS_FREE(k);
      continue;
    }
    if (mlsys_xfer_key_check(k + pl) != MLSYS_OK) {
      r = mlsys_set_error(MLSYS_ERR_UNSUPPORTED,
                          "%s: object '%s' has a key this library refuses (empty, '.' or '..' component, or too long)",
                          s->url, k);
      MLSYS_FREE(k);
      continue;
    }
    memmove(k, k + pl, kl - pl + 1);
    a->v[w++] = a->v[i];
  }
  a->n = w;
  if (!r && a->n > 1) qsort(a->v, (size_t)a->n, sizeof *a->v, mlsys__xfer_obj_cmp);
  return r;
}

/* ---------------------------------------------------------------------------------------------------------------
   HTTP (libcurl) shared by s3:// and azure://
   --------------------------------------------------------------------------------------------------------------- */
#ifndef MLSYS_XFER_NO_HTTP
static pthread_once_t mlsys__xfer_curl_once = PTHREAD_ONCE_INIT;
static CURLcode mlsys__xfer_curl_rc = CURLE_OK;
static void mlsys__xfer_curl_init(void) { mlsys__xfer_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Percent-encoding as SigV4 wants it (and Azure accepts): unreserved bytes stay, '/' stays when keep_slash. */
static int mlsys__xfer_enc(mlsys__xfer_buf *b, const char *s, int keep_slash) {
  static const char hx[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      if (!mlsys__xfer_buf_add(b, s, 1)) return 0;
    } else {
      char e[3];
      e[0] = '%';
      e[1] = hx[c >> 4];
      e[2] = hx[c & 15];
      if (!mlsys__xfer_buf_add(b, e, 3)) return 0;
    }
  }
  return 1;
}

typedef struct {
  mlsys__xfer_st *s;
  const char *method, *url, *key;  /* key: for messages ("" for bucket-level requests) */
  struct curl_slist *hdr;
  const char *body;
  size_t body_len;
  int has_body;
  /* a ranged GET lands here */
  char *dst;
  uint64_t dst_len, dst_got, range_off;
  int ranged;
  /* everything else (and error bodies) here, at most 64 MiB */
  mlsys__xfer_buf resp;
  CURL *h;
  long status;
  char etag[256];
  uint64_t total;       /* from Content-Range: bytes a-b/TOTAL */
  int have_total;
  curl_off_t clen;      /* Content-Length of the answer, -1 if none */
  char cerr[CURL_ERROR_SIZE];
} mlsys__xfer_req;

static size_t mlsys__xfer_write_cb(char *p, size_t sz, size_t nm, void *ud) {
  mlsys__xfer_req *r = (mlsys__xfer_req *)ud;
  size_t n = sz * nm;
  long code = 0;
  curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
  if (r->dst && code >= 200 && code < 300) {
    size_t i = 0;
    /* a server that ignores Range answers 200 with the whole object: skip to the offset */
    uint64_t skip = code == 200 && r->ranged ? r->range_off : 0;
    for (; i < n; ) {
      uint64_t pos = r->dst_got;   /* position in the response body */
      size_t take;
      if (pos < skip) {
        uint64_t k = skip - pos;
        take = k < (uint64_t)(n - i) ? (size_t)k : n - i;
      } else {
        uint64_t at = pos - skip;
        take = n - i;
        if (at < r->dst_len) {
          uint64_t room = r->dst_len - at;
          size_t c = room < (uint64_t)take ? (size_t)room : take;
          memcpy(r->dst + at, p + i, c);
        }
      }
      r->dst_got += take;
      i += take;
    }
    return n;
  }
  if (r->resp.n + n > (64u << 20)) return 0;   /* no answer we parse is that big */
  if (!mlsys__xfer_buf_add(&r->resp, p, n)) return 0;
  return n;
}
static size_t mlsys__xfer_header_cb(char *p, size_t sz, size_t nm, void *ud) {
  mlsys__xfer_req *r = (mlsys__xfer_req *)ud;
  size_t n = sz * nm, k;
  if (n > 5 && !strncmp(p, "HTTP/", 5)) {   /* a new response (after a redirect or 100): forget the old one */
    r->etag[0] = 0;
    r->have_total = 0;
  } else if (n > 5 && !strncasecmp(p, "ETag:", 5)) {
    const char *v = p + 5;
    size_t vn = n - 5;
    mlsys__xfer_trim(&v, &vn);
    k = vn < sizeof r->etag - 1 ? vn : sizeof r->etag - 1;
    memcpy(r->etag, v, k);
    r->etag[k] = 0;
  } else if (n > 14 && !strncasecmp(p, "Content-Range:", 14)) {
    const char *sl = (const char *)memchr(p, '/', n);
    if (sl) {
      const char *v = sl + 1;
      size_t vn = n - (size_t)(v - p);
      mlsys__xfer_trim(&v, &vn);
      r->have_total = mlsys__xfer_parse_u64(v, vn, &r->total, 0);
    }
  }
  return n;
}

static int mlsys__xfer_retryable(CURLcode c, long status) {
  return c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
         (c == CURLE_OK && (status == 500 || status == 503));
}

/* Runs the request (up to 3 attempts for transport failures and 500/503). MLSYS_OK means an HTTP answer came
   (any status); otherwise MLSYS_ERR_IO naming the endpoint. */
static mlsys_status mlsys__xfer_perform(mlsys__xfer_req *r) {
  mlsys__xfer_st *s = r->s;
  CURLcode c = CURLE_OK;
  int attempt;
  if (pthread_once(&mlsys__xfer_curl_once, mlsys__xfer_curl_init) != 0 || mlsys__xfer_curl_rc != CURLE_OK)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: curl_global_init failed", s->url);
  for (attempt = 0; attempt < 3; attempt++) {
    r->h = curl_easy_init();
    if (!r->h) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: curl_easy_init failed", s->url);
    r->resp.n = 0;
    r->dst_got = 0;
    r->status = 0;
    r->etag[0] = 0;
    r->have_total = 0;
    r->cerr[0] = 0;
    curl_easy_setopt(r->h, CURLOPT_URL, r->url);
    curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->cerr);
    curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, mlsys__xfer_write_cb);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, mlsys__xfer_header_cb);
    curl_easy_setopt(r->h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdr);
    curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!strcmp(r->method, "HEAD")) {
      curl_easy_setopt(r->h, CURLOPT_NOBODY, 1L);
    } else if (r->has_body) {
      curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body ? r->body : "");
      curl_easy_setopt(r->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
      curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcmp(r->method, "GET") != 0) {
      curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, r->method);
    }
    if (s->type == MLSYS__XFER_S3) {
      curl_easy_setopt(r->h, CURLOPT_AWS_SIGV4, s->sigv4);
      curl_easy_setopt(r->h, CURLOPT_USERNAME, s->access);
      curl_easy_setopt(r->h, CURLOPT_PASSWORD, s->secret);
    }
    c = curl_easy_perform(r->h);
    r->clen = -1;
    if (c == CURLE_OK) {
      curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
      curl_easy_getinfo(r->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->clen);
    }
    curl_easy_cleanup(r->h);
    r->h = NULL;
    if (!mlsys__xfer_retryable(c, r->status) || attempt == 2) break;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 50000000L << attempt;
      nanosleep(&ts, NULL);
    }
  }
  if (c != CURLE_OK)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: %s %s%s%s at %s failed: %s", s->url, r->method, r->key[0] ? "'" : "",
                           r->key, r->key[0] ? "'" : "", s->endpoint, r->cerr[0] ? r->cerr : curl_easy_strerror(c));
  return MLSYS_OK;
}

/* An HTTP error as MLSYS_ERR_IO (or `st`) with the service's error code and message. */
static mlsys_status mlsys__xfer_http_error(mlsys__xfer_req *r, mlsys_status st, const char *what) {
  char *code = NULL, *msg = NULL;
  mlsys_status out;
  if (r->resp.n) {
    code = mlsys__xfer_xml_pick(r->resp.p, r->resp.n, "Error", "Code");
    msg = mlsys__xfer_xml_pick(r->resp.p, r->resp.n, "Error", "Message");
  }
  out = mlsys_set_error(st, "%s: %s %s%s%s at %s: HTTP %ld%s%s%s%.200s%s", r->s->url, what ? what : r->method,
                        r->key[0] ? "'" : "", r->key, r->key[0] ? "'" : "", r->s->endpoint, r->status,
                        code ? " " : "", code ? code : "", msg ? " (" : "", msg ? msg : "", msg ? ")" : "");
  MLSYS_FREE(code);
  MLSYS_FREE(msg);
  return out;
}

static void mlsys__xfer_req_init(mlsys__xfer_req *r, mlsys__xfer_st *s, const char *method, const char *url,
                                 const char *key) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->method = method;
  r->url = url;
  r->key = key ? key : "";
}
static void mlsys__xfer_req_done(mlsys__xfer_req *r) {
  curl_slist_free_all(r->hdr);
  r->hdr = NULL;
  mlsys__xfer_buf_free(&r->resp);
}
static int mlsys__xfer_hdr(mlsys__xfer_req *r, const char *h) {
  struct curl_slist *n = curl_slist_append(r->hdr, h);
  if (!n) return 0;
  r->hdr = n;
  return 1;
}

/* ---- signing ---- */
static void mlsys__xfer_hex(const unsigned char *d, size_t n, char *out) {
  static const char hx[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) {
    out[2 * i] = hx[d[i] >> 4];
    out[2 * i + 1] = hx[d[i] & 15];
  }
  out[2 * n] = 0;
}
/* S3: the payload's SHA-256 in x-amz-content-sha256. libcurl's SigV4 either takes the header's value or hashes
   the body itself, depending on its version; with the true hash both agree and S3 can check the payload. */
static mlsys_status mlsys__xfer_s3_headers(mlsys__xfer_req *r) {
  unsigned char d[32];
  char h[96];
  SHA256((const unsigned char *)(r->body ? r->body : ""), r->has_body ? r->body_len : 0, d);
  memcpy(h, "x-amz-content-sha256: ", 22);
  mlsys__xfer_hex(d, 32, h + 22);
  if (!mlsys__xfer_hdr(r, h) || !mlsys__xfer_hdr(r, "Expect:") ||
      (r->has_body && !mlsys__xfer_hdr(r, "Content-Type: application/octet-stream")))
    return mlsys__xfer_oom();
  return MLSYS_OK;
}

/* Azure SharedKey: HMAC-SHA256 over the verb, the standard headers, the x-ms-* headers and the canonicalized
   resource ("/account/path" + sorted "name:value" query lines, values decoded). */
typedef struct { const char *name, *value; } mlsys__xfer_kv;
static int mlsys__xfer_kv_cmp(const void *a, const void *b) {
  return strcmp(((const mlsys__xfer_kv *)a)->name, ((const mlsys__xfer_kv *)b)->name);
}
static mlsys_status mlsys__xfer_az_sign(mlsys__xfer_req *r, const char *rpath, mlsys__xfer_kv *q, int nq,
                                        const char *range, const char *blob_type) {
  static const char *wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  mlsys__xfer_st *s = r->s;
  mlsys__xfer_buf sts = {NULL, 0, 0}, h = {NULL, 0, 0};
  char date[64], clen[32];
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int maclen = 0;
  unsigned char b64[128];
  time_t now = time(NULL);
  struct tm tmv;
  int i, ok;
  gmtime_r(&now, &tmv);
  snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tmv.tm_wday], tmv.tm_mday, mo[tmv.tm_mon],
           tmv.tm_year + 1900, tmv.tm_hour, tmv.tm_min, tmv.tm_sec);
  clen[0] = 0;
  if (r->has_body && r->body_len) snprintf(clen, sizeof clen, "%zu", r->body_len);
  if (nq > 1) qsort(q, (size_t)nq, sizeof *q, mlsys__xfer_kv_cmp);
  ok = mlsys__xfer_buf_str(&sts, r->method) && mlsys__xfer_buf_str(&sts, "\n\n\n") &&   /* encoding, language */
       mlsys__xfer_buf_str(&sts, clen) && mlsys__xfer_buf_str(&sts, "\n\n") &&          /* length, md5 */
       mlsys__xfer_buf_str(&sts, r->has_body ? "application/octet-stream" : "") &&
       mlsys__xfer_buf_str(&sts, "\n\n\n\n\n\n") &&                                    /* date .. unmodified */
       mlsys__xfer_buf_str(&sts, "\n");                                                /* Range (x-ms-range used) */
  if (ok && blob_type) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-blob-type:%s\n", blob_type);
  if (ok) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-date:%s\n", date);
  if (ok && range) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-range:%s\n", range);
  if (ok) ok = mlsys__xfer_buf_str(&sts, "x-ms-version:2021-08-06\n") && mlsys__xfer_buf_str(&sts, rpath);
  for (i = 0; ok && i < nq; i++)
    ok = mlsys__xfer_buf_fmt(&sts, "\n%s:", q[i].name) && mlsys__xfer_buf_str(&sts, q[i].value);
  if (!ok) goto oom;
  if (!HMAC(EVP_sha256(), s->azkey, s->azkey_len, (const unsigned char *)sts.p, sts.n, mac, &maclen)) {
    mlsys__xfer_buf_free(&sts);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: HMAC-SHA256 failed", s->url);
  }
  EVP_EncodeBlock(b64, mac, (int)maclen);
  mlsys__xfer_buf_free(&sts);
  ok = mlsys__xfer_buf_fmt(&h, "Authorization: SharedKey %s:%s", s->access, (const char *)b64) &&
       mlsys__xfer_hdr(r, h.p);
  h.n = 0;
  ok = ok && mlsys__xfer_buf_fmt(&h, "x-ms-date: %s", date) && mlsys__xfer_hdr(r, h.p) &&
       mlsys__xfer_hdr(r, "x-ms-version: 2021-08-06") && mlsys__xfer_hdr(r, "Expect:");
  if (ok && range) {
    h.n = 0;
    ok = mlsys__xfer_buf_fmt(&h, "x-ms-range: %s", range) && mlsys__xfer_hdr(r, h.p);
  }
  if (ok && blob_type) {
    h.n = 0;
    ok = mlsys__xfer_buf_fmt(&h, "x-ms-blob-type: %s", blob_type) && mlsys__xfer_hdr(r, h.p);
  }
  if (ok && r->has_body) ok = mlsys__xfer_hdr(r, "Content-Type: application/octet-stream");
  mlsys__xfer_buf_free(&h);
  if (!ok) return mlsys__xfer_oom();
  return MLSYS_OK;
oom:
  mlsys__xfer_buf_free(&sts);
  mlsys__xfer_buf_free(&h);
  return mlsys__xfer_oom();
}

/* URL of an object: base + "/" + encoded(prefix + key) [+ "?" + query]; *rpath gets the Azure canonical path. */
static char *mlsys__xfer_obj_url(mlsys__xfer_st *s, const char *key, char **rpath) {
  mlsys__xfer_buf b = {NULL, 0, 0}, e = {NULL, 0, 0};
  if (rpath) *rpath = NULL;
  if (!mlsys__xfer_enc(&e, s->prefix, 1) || !mlsys__xfer_enc(&e, key, 1) || !mlsys__xfer_buf_str(&b, s->base) ||
      !mlsys__xfer_buf_str(&b, "/") || !mlsys__xfer_buf_str(&b, e.p)) {
    mlsys__xfer_buf_free(&b);
    mlsys__xfer_buf_free(&e);
    return NULL;
  }
  if (rpath) {
    mlsys__xfer_buf rp = {NULL, 0, 0};
    if (!mlsys__xfer_buf_str(&rp, s->auth_path) || !mlsys__xfer_buf_str(&rp, "/") || !mlsys__xfer_buf_str(&rp, e.p)) {
      mlsys__xfer_buf_free(&rp);
      mlsys__xfer_buf_free(&b);
      mlsys__xfer_buf_free(&e);
      return NULL;
    }
    *rpath = mlsys__xfer_buf_take(&rp);
  }
  mlsys__xfer_buf_free(&e);
  return mlsys__xfer_buf_take(&b);
}
/* url + "?" + sorted, encoded query (SigV4 wants it canonical; empty values keep their '='). */
static char *mlsys__xfer_with_query(const char *url, mlsys__xfer_kv *q, int nq) {
  mlsys__xfer_buf b = {NULL, 0, 0};
  int i, ok;
  if (nq > 1) qsort(q, (size_t)nq, sizeof *q, mlsys__xfer_kv_cmp);
  ok = mlsys__xfer_buf_str(&b, url);
  for (i = 0; ok && i < nq; i++)
    ok = mlsys__xfer_buf_str(&b, i ? "&" : "?") && mlsys__xfer_enc(&b, q[i].name, 0) && mlsys__xfer_buf_str(&b, "=") &&
         mlsys__xfer_enc(&b, q[i].value, 0);
  if (!ok) {
    mlsys__xfer_buf_free(&b);
    return NULL;
  }
  return mlsys__xfer_buf_take(&b);
}

/* Sends one request: builds the URL from base_url + query, signs, performs. The caller inspects r->status. */
static mlsys_status mlsys__xfer_send(mlsys__xfer_req *r, const char *base_url, const char *rpath, mlsys__xfer_kv *q,
                                     int nq, const char *range, const char *blob_type) {
  mlsys_status st;
  char *url = mlsys__xfer_with_query(base_url, q, nq);
  char hb[96];
  if (!url) return mlsys__xfer_oom();
  r->url = url;
  if (r->s->type == MLSYS__XFER_S3) {
    st = mlsys__xfer_s3_headers(r);
    if (!st && range) {
      snprintf(hb, sizeof hb, "Range: %s", range);
      if (!mlsys__xfer_hdr(r, hb)) st = mlsys__xfer_oom();
    }
  } else {
    st = mlsys__xfer_az_sign(r, rpath, q, nq, range, blob_type);
  }
  if (!st) st = mlsys__xfer_perform(r);
  r->url = NULL;
  MLSYS_FREE(url);
  return st;
}

/* ---- list ---- */
static mlsys_status mlsys__xfer_http_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, pages = 0;
  mlsys__xfer_objv all = {NULL, 0, 0};
  char *token = NULL;
  mlsys_status r = MLSYS_OK;
  *objs = NULL;
  *n = 0;
  for (;;) {
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[6];
    mlsys__xfer_listpage page;
    char what[64];
    int nq = 0, i;
    if (az) {
      kv[nq].name = "restype"; kv[nq++].value = "container";
      kv[nq].name = "comp"; kv[nq++].value = "list";
      kv[nq].name = "maxresults"; kv[nq++].value = "5000";
      if (token) { kv[nq].name = "marker"; kv[nq++].value = token; }
    } else {
      kv[nq].name = "list-type"; kv[nq++].value = "2";
      kv[nq].name = "max-keys"; kv[nq++].value = "1000";
      if (token) { kv[nq].name = "continuation-token"; kv[nq++].value = token; }
    }
    if (s->prefix[0]) { kv[nq].name = "prefix"; kv[nq++].value = s->prefix; }
    mlsys__xfer_req_init(&q, s, "GET", NULL, "");
    r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, nq, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "list");
    pages++;
    snprintf(what, sizeof what, "%s list response page %d", az ? "azure" : "s3", pages);
    if (!r) r = mlsys__xfer_parse_list(q.resp.p ? q.resp.p : "", q.resp.n, az, what, &page);
    mlsys__xfer_req_done(&q);
    if (r) {
      if (r == MLSYS_ERR_PARSE) mlsys_prefix_error("%s", s->url);
      break;
    }
    for (i = 0; i < page.objs.n && !r; i++) {
      if (!mlsys__xfer_objv_push(&all, page.objs.v[i].key, page.objs.v[i].size)) r = mlsys__xfer_oom();
      else page.objs.v[i].key = NULL;
    }
    if (!r && page.truncated && (!page.next || (token && !strcmp(token, page.next))))
      r = mlsys_set_error(MLSYS_ERR_PARSE, "%s: list page %d is truncated but gives no new continuation token", s->url,
                          pages);
    MLSYS_FREE(token);
    token = NULL;
    if (!r && page.truncated) {
      token = page.next;
      page.next = NULL;
    }
    mlsys__xfer_listpage_free(&page);
    if (r || !token) break;
  }
  MLSYS_FREE(token);
  if (!r) r = mlsys__xfer_list_finish(s, &all);
  if (r) {
    mlsys_xfer_objs_free(all.v, all.n);
    return r;
  }
  *objs = all.v;
  *n = all.n;
  return MLSYS_OK;
}

/* Size of an object by HEAD (Azure: Get Blob Properties); MLSYS_ERR_IO "no such object" when absent. */
static mlsys_status mlsys__xfer_http_size(mlsys__xfer_st *s, const char *key, uint64_t *size) {
  mlsys__xfer_req q;
  char *rpath = NULL, *url = mlsys__xfer_obj_url(s, key, s->type == MLSYS__XFER_AZURE ? &rpath : NULL);
  mlsys_status r;
  if (!url) return mlsys__xfer_oom();
  mlsys__xfer_req_init(&q, s, "HEAD", NULL, key);
  r = mlsys__xfer_send(&q, url, rpath, NULL, 0, NULL, NULL);
  if (!r && q.status == 404) r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  else if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, NULL);
  else if (!r && q.clen < 0)
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: HEAD '%s' at %s gave no Content-Length", s->url, key, s->endpoint);
  if (!r) *size = (uint64_t)q.clen;
  mlsys__xfer_req_done(&q);
  MLSYS_FREE(url);
  MLSYS_FREE(rpath);
  return r;
}

/* ---- get ---- */
static mlsys_status mlsys__xfer_http_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                         void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys__xfer_req q;
  char *rpath = NULL, *url;
  char range[96];
  mlsys_status r;
  uint64_t size;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  if (len == 0) {   /* an empty range is no HTTP range: check that the object exists and is long enough */
    if ((r = mlsys__xfer_http_size(s, key, &size)) != MLSYS_OK) return r;
    if (off > size) return mlsys__xfer_range_error(s->url, key, off, len, size);
    return MLSYS_OK;
  }
  if (off > UINT64_MAX - len) return mlsys__xfer_range_error(s->url, key, off, len, 0);
  url = mlsys__xfer_obj_url(s, key, s->type == MLSYS__XFER_AZURE ? &rpath : NULL);
  if (!url) return mlsys__xfer_oom();
  snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)off, (unsigned long long)(off + len - 1));
  mlsys__xfer_req_init(&q, s, "GET", NULL, key);
  q.dst = (char *)buf;
  q.dst_len = len;
  q.range_off = off;
  q.ranged = 1;
  r = mlsys__xfer_send(&q, url, rpath, NULL, 0, range, NULL);
  if (!r) {
    if (q.status == 404) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
    } else if (q.status == 416) {
      r = mlsys__xfer_http_size(s, key, &size);
      if (!r) r = mlsys__xfer_range_error(s->url, key, off, len, size);
    } else if (q.status != 200 && q.status != 206) {
      r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, NULL);
    } else {
      uint64_t got = q.status == 200 ? (q.dst_got > off ? q.dst_got - off : 0) : q.dst_got;
      if (got < len) {
        /* the object ends inside the range (206 with fewer bytes, or a whole 200 body that is too short) */
        size = q.have_total ? q.total : (q.status == 200 ? q.dst_got : off + got);
        r = mlsys__xfer_range_error(s->url, key, off, len, size);
      }
    }
  }
  mlsys__xfer_req_done(&q);
  MLSYS_FREE(url);
  MLSYS_FREE(rpath);
  return r;
}

/* ---- put ---- */
static mlsys_status mlsys__xfer_http_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                               mlsys_xfer_upload **up) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, nparts, maxg = az ? 50000 : 10000;
  uint64_t minpart = az ? 0 : MLSYS_XFER_S3_MIN_PART;
  mlsys_xfer_upload *u;
  mlsys_status r = mlsys__xfer_begin_check(s, key, size, pb, up, &nparts);
  if (r) return r;
  u = mlsys__xfer_upload_new(key, size, pb, nparts);
  if (!u) return MLSYS_ERR_NOMEM;
  u->url = mlsys__xfer_obj_url(s, key, az ? &u->rpath : NULL);
  if (!u->url) goto oom;
  u->m = pb >= minpart || size == 0 ? 1 : (int)((minpart + pb - 1) / pb);
  if ((nparts + u->m - 1) / u->m > maxg) u->m = (nparts + maxg - 1) / maxg;
  u->ngroups = (nparts + u->m - 1) / u->m;
  if (u->ngroups == 1 && size <= MLSYS_XFER_SINGLE_PUT_MAX) {
    u->single = 1;
    u->m = nparts;
  }
  u->gfill = (uint64_t *)mlsys_calloc((size_t)u->ngroups, sizeof *u->gfill);
  u->gbuf = (char **)mlsys_calloc((size_t)u->ngroups, sizeof *u->gbuf);
  u->etag = (char **)mlsys_calloc((size_t)u->ngroups, sizeof *u->etag);
  if (!u->gfill || !u->gbuf || !u->etag) goto oom;
  if (!u->single && !az) {   /* CreateMultipartUpload */
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[1];
    kv[0].name = "uploads";
    kv[0].value = "";
    mlsys__xfer_req_init(&q, s, "POST", NULL, key);
    q.has_body = 1;
    r = mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CreateMultipartUpload");
    if (!r) {
      u->upload_id = mlsys__xfer_xml_pick(q.resp.p ? q.resp.p : "", q.resp.n, "InitiateMultipartUploadResult", "UploadId");
      if (!u->upload_id || !u->upload_id[0])
        r = mlsys_set_error(MLSYS_ERR_IO, "%s: CreateMultipartUpload of '%s' at %s gave no UploadId", s->url, key,
                            s->endpoint);
    }
    mlsys__xfer_req_done(&q);
    if (r) goto fail;
  }
  *up = u;
  return MLSYS_OK;
oom:
  r = mlsys__xfer_oom();
fail:
  mlsys__xfer_upload_free(u);
  return r;
}

static void mlsys__xfer_blockid(int g, char *out /* 32 bytes */) {
  char raw[32];
  snprintf(raw, sizeof raw, "mlsys-block-%06d", g);   /* 18 bytes → 24 base64 characters, no padding */
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)raw, 18);
}

/* Uploads group g (S3 part g+1, Azure block g). */
static mlsys_status mlsys__xfer_send_group(mlsys__xfer_st *s, mlsys_xfer_upload *u, int g, const char *data,
                                           uint64_t len) {
  mlsys__xfer_req q;
  mlsys__xfer_kv kv[2];
  char num[32], bid[40];
  mlsys_status r;
  mlsys__xfer_req_init(&q, s, "PUT", NULL, u->key);
  q.has_body = 1;
  q.body = data;
  q.body_len = (size_t)len;
  if (s->type == MLSYS__XFER_AZURE) {
    mlsys__xfer_blockid(g, bid);
    kv[0].name = "comp"; kv[0].value = "block";
    kv[1].name = "blockid"; kv[1].value = bid;
    r = mlsys__xfer_send(&q, u->url, u->rpath, kv, 2, NULL, NULL);
    if (!r && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "Put Block");
  } else {
    snprintf(num, sizeof num, "%d", g + 1);
    kv[0].name = "partNumber"; kv[0].value = num;
    kv[1].name = "uploadId"; kv[1].value = u->upload_id;
    r = mlsys__xfer_send(&q, u->url, NULL, kv, 2, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "UploadPart");
    if (!r && !q.etag[0])
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: UploadPart %d of '%s' at %s returned no ETag", s->url, g + 1, u->key,
                          s->endpoint);
    if (!r) {
      pthread_mutex_lock(&u->mu);
      MLSYS_FREE(u->etag[g]);
      u->etag[g] = mlsys_strdup(q.etag);
      if (!u->etag[g]) r = MLSYS_ERR_NOMEM;
      pthread_mutex_unlock(&u->mu);
    }
  }
  mlsys__xfer_req_done(&q);
  if (r) mlsys__xfer_fail(u);
  return r;
}

static uint64_t mlsys__xfer_group_len(const mlsys_xfer_upload *u, int g) {
  uint64_t a = (uint64_t)g * (uint64_t)u->m * u->pb, b = a + (uint64_t)u->m * u->pb;
  if (u->size == 0) return 0;
  return (b > u->size ? u->size : b) - a;
}

static mlsys_status mlsys__xfer_http_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *u, int part, const void *buf,
                                              uint64_t len) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int g;
  uint64_t glen, at;
  char *gb;
  int complete;
  mlsys_status r = mlsys__xfer_part_take(s, u, part, buf, len);
  if (r) return r;
  if (u->size == 0) return MLSYS_OK;
  g = part / u->m;
  if (u->m == 1 && !u->single) return mlsys__xfer_send_group(s, u, g, (const char *)buf, len);
  glen = mlsys__xfer_group_len(u, g);
  at = (uint64_t)(part - g * u->m) * u->pb;
  pthread_mutex_lock(&u->mu);
  if (!u->gbuf[g]) u->gbuf[g] = (char *)mlsys_alloc((size_t)glen, 1);
  gb = u->gbuf[g];
  if (!gb) {
    u->got[part] = 0;
    pthread_mutex_unlock(&u->mu);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: put '%s': out of memory buffering %llu bytes", s->url, u->key,
                           (unsigned long long)glen);
  }
  pthread_mutex_unlock(&u->mu);
  memcpy(gb + at, buf, (size_t)len);   /* parts of a group cover disjoint bytes */
  pthread_mutex_lock(&u->mu);
  u->gfill[g] += len;
  complete = u->gfill[g] == glen;
  pthread_mutex_unlock(&u->mu);
  if (!complete || u->single) return MLSYS_OK;
  r = mlsys__xfer_send_group(s, u, g, gb, glen);
  pthread_mutex_lock(&u->mu);
  MLSYS_FREE(u->gbuf[g]);
  u->gbuf[g] = NULL;
  pthread_mutex_unlock(&u->mu);
  return r;
}

static void mlsys__xfer_http_put_abort(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  if (!u) return;
  if (u->upload_id) {   /* best effort; a failure leaves invisible parts behind */
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[1];
    char saved[1024];
    mlsys_status ls = mlsys_last_status();
    snprintf(saved, sizeof saved, "%s", mlsys_last_error());
    kv[0].name = "uploadId";
    kv[0].value = u->upload_id;
    mlsys__xfer_req_init(&q, s, "DELETE", NULL, u->key);
    if (mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL) == MLSYS_OK && q.status != 204 && q.status != 200)
      mlsys_log(MLSYS_LOG_DEBUG, "%s: AbortMultipartUpload of '%s' answered HTTP %ld", s->url, u->key, q.status);
    mlsys__xfer_req_done(&q);
    mlsys_set_error(ls, "%s", saved);
  }
  mlsys__xfer_upload_free(u);
}

static mlsys_status mlsys__xfer_http_put_commit(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, g;
  mlsys__xfer_req q;
  mlsys__xfer_buf body = {NULL, 0, 0};
  mlsys__xfer_kv kv[1];
  mlsys_status r;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_commit on a NULL upload", s->url);
  if ((r = mlsys__xfer_all_parts(s, u)) != MLSYS_OK) {
    mlsys__xfer_http_put_abort(st, u);
    return r;
  }
  mlsys__xfer_req_init(&q, s, "PUT", NULL, u->key);
  q.has_body = 1;
  if (u->single) {
    q.body = u->gbuf[0];
    q.body_len = (size_t)u->size;
    r = mlsys__xfer_send(&q, u->url, u->rpath, NULL, 0, NULL, az ? "BlockBlob" : NULL);
    if (!r && q.status != 200 && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Put Blob" : "PUT");
  } else if (az) {
    int ok = mlsys__xfer_buf_str(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for (g = 0; ok && g < u->ngroups; g++) {
      char bid[40];
      mlsys__xfer_blockid(g, bid);
      ok = mlsys__xfer_buf_fmt(&body, "<Latest>%s</Latest>", bid);
    }
    ok = ok && mlsys__xfer_buf_str(&body, "</BlockList>");
    if (!ok) r = mlsys__xfer_oom();
    else {
      kv[0].name = "comp";
      kv[0].value = "blocklist";
      q.body = body.p;
      q.body_len = body.n;
      r = mlsys__xfer_send(&q, u->url, u->rpath, kv, 1, NULL, NULL);
      if (!r && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "Put Block List");
    }
  } else {
    int ok = mlsys__xfer_buf_str(&body, "<CompleteMultipartUpload>");
    for (g = 0; ok && g < u->ngroups; g++) {
      const char *e = u->etag[g] ? u->etag[g] : "";
      ok = mlsys__xfer_buf_fmt(&body, "<Part><PartNumber>%d</PartNumber><ETag>", g + 1);
      for (; ok && *e; e++)   /* ETags are quoted hex; escape anyway */
        ok = *e == '&' ? mlsys__xfer_buf_str(&body, "&amp;") : *e == '<' ? mlsys__xfer_buf_str(&body, "&lt;")
                                                             : mlsys__xfer_buf_add(&body, e, 1);
      ok = ok && mlsys__xfer_buf_str(&body, "</ETag></Part>");
    }
    ok = ok && mlsys__xfer_buf_str(&body, "</CompleteMultipartUpload>");
    if (!ok) r = mlsys__xfer_oom();
    else {
      kv[0].name = "uploadId";
      kv[0].value = u->upload_id;
      q.method = "POST";
      q.body = body.p;
      q.body_len = body.n;
      r = mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL);
      if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CompleteMultipartUpload");
      /* S3 may answer 200 and still fail: the error is then in the body */
      if (!r && q.resp.n && mlsys__xfer_find(q.resp.p, q.resp.n, 0, "<Error>") != (size_t)-1)
        r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CompleteMultipartUpload");
    }
  }
  mlsys__xfer_req_done(&q);
  mlsys__xfer_buf_free(&body);
  if (r) {
    mlsys__xfer_http_put_abort(st, u);
    return r;
  }
  mlsys__xfer_upload_free(u);
  return MLSYS_OK;
}

/* Bucket / container: check that it exists; create it when asked. */
static mlsys_status mlsys__xfer_http_bucket(mlsys__xfer_st *s, int create) {
  int az = s->type == MLSYS__XFER_AZURE;
  mlsys__xfer_req q;
  mlsys__xfer_kv kv[1];
  mlsys_status r;
  long status;
  kv[0].name = "restype";
  kv[0].value = "container";
  mlsys__xfer_req_init(&q, s, az ? "GET" : "HEAD", NULL, "");
  r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, az ? 1 : 0, NULL, NULL);
  status = q.status;
  if (!r && status != 200 && status != 404) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Get Container Properties" : "HeadBucket");
  mlsys__xfer_req_done(&q);
  if (r || status == 200) return r;
  if (!create)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: %s '%s' does not exist at %s (set create_bucket to create it)", s->url,
                           az ? "container" : "bucket", s->bucket, s->endpoint);
  mlsys__xfer_req_init(&q, s, "PUT", NULL, "");
  q.has_body = 1;
  {
    char cfg[256];
    const char *reg = strstr(s->sigv4, "amz:") + 4;
    char rg[64];
    size_t k = strcspn(reg, ":");
    snprintf(rg, sizeof rg, "%.*s", (int)(k < 63 ? k : 63), reg);
    if (!az && strcmp(rg, "us-east-1") != 0) {   /* us-east-1 is the only region that takes no body */
      snprintf(cfg, sizeof cfg,
               "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
               "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>", rg);
      q.body = cfg;
      q.body_len = strlen(cfg);
    }
    r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, az ? 1 : 0, NULL, NULL);
  }
  if (!r && q.status != 200 && q.status != 201 && q.status != 409)
    r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Create Container" : "CreateBucket");
  mlsys__xfer_req_done(&q);
  return r;
}
#endif /* MLSYS_XFER_NO_HTTP */

/* ---------------------------------------------------------------------------------------------------------------
   Opening
   --------------------------------------------------------------------------------------------------------------- */
static void mlsys__xfer_close(mlsys_xfer_store *st) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  if (!s) return;
  MLSYS_FREE(s->url);
  MLSYS_FREE(s->root);
  MLSYS_FREE(s->endpoint);
  MLSYS_FREE(s->bucket);
  MLSYS_FREE(s->prefix);
  MLSYS_FREE(s->base);
  MLSYS_FREE(s->auth_path);
  MLSYS_FREE(s->access);
  MLSYS_FREE(s->secret);
  MLSYS_FREE(s);
}
MLSYS_DEF void mlsys_xfer_store_close(mlsys_xfer_store *s) {
  if (s && s->close) s->close(s);
}

static mlsys_status mlsys__xfer_open_file(mlsys__xfer_st *s, const char *rest, const mlsys_xfer_store_opts *o) {
  struct stat sb;
  size_t n = strlen(rest);
  if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: no directory after file://", s->url);
  s->root = mlsys_strdup(rest);
  if (!s->root) return MLSYS_ERR_NOMEM;
  while (n > 1 && s->root[n - 1] == '/') s->root[--n] = 0;
  if (stat(s->root, &sb) != 0) {
    if (errno == ENOENT && o->create_bucket) {
      char *c;
      for (c = s->root + 1; (c = strchr(c, '/')) != NULL; c++) {
        *c = 0;
        if (mkdir(s->root, 0777) != 0 && errno != EEXIST) {
          mlsys_status r = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, s->root,
                                           strerror(errno));
          *c = '/';
          return r;
        }
        *c = '/';
      }
      if (mkdir(s->root, 0777) != 0 && errno != EEXIST)
        return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, s->root, strerror(errno));
      if (stat(s->root, &sb) != 0)
        return mlsys_set_error(MLSYS_ERR_IO, "%s: '%s': %s", s->url, s->root, strerror(errno));
    } else {
      return mlsys_set_error(MLSYS_ERR_IO, "%s: directory '%s' %s", s->url, s->root,
                             errno == ENOENT ? "does not exist (set create_bucket to create it)" : strerror(errno));
    }
  }
  if (!S_ISDIR(sb.st_mode)) return mlsys_set_error(MLSYS_ERR_ARG, "%s: '%s' is not a directory", s->url, s->root);
  s->pub.list = mlsys__xfer_file_list;
  s->pub.get_range = mlsys__xfer_file_get;
  s->pub.put_begin = mlsys__xfer_file_put_begin;
  s->pub.put_part = mlsys__xfer_file_put_part;
  s->pub.put_commit = mlsys__xfer_file_put_commit;
  s->pub.put_abort = mlsys__xfer_file_put_abort;
  return MLSYS_OK;
}

static mlsys_status mlsys__xfer_open_synth(mlsys__xfer_st *s, const char *rest) {
  const char *c1 = strchr(rest, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  uint64_t v;
  if (!c1) return mlsys_set_error(MLSYS_ERR_ARG, "%s: expected synthetic://N:SIZE[:SEED]", s->url);
  if (!mlsys__xfer_parse_u64(rest, (size_t)(c1 - rest), &s->n, 0) || s->n > 100000000ull)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: object count '%.*s' is not an integer in [0, 100000000]", s->url,
                           (int)(c1 - rest), rest);
  if (!mlsys__xfer_parse_u64(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1), &s->size, 1) ||
      s->size > (uint64_t)INT64_MAX)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: object size '%.*s' is not a byte count (integer, suffix K/M/G/T)",
                           s->url, (int)(c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)), c1 + 1);
  if (c2 && !mlsys__xfer_parse_u64(c2 + 1, strlen(c2 + 1), &s->seed, 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: seed '%s' is not an unsigned integer", s->url, c2 + 1);
  s->width = 5;
  for (v = s->n ? s->n - 1 : 0; v >= 100000; v /= 10) s->width++;   /* keys sort as numbers */
  s->pub.list = mlsys__xfer_synth_list;
  s->pub.get_range = mlsys__xfer_synth_get;
  s->pub.put_begin = mlsys__xfer_synth_put_begin;
  s->pub.put_part = mlsys__xfer_synth_put_part;
  s->pub.put_commit = mlsys__xfer_synth_commit;
  s->pub.put_abort = mlsys__xfer_synth_abort;
  return MLSYS_OK;
}

/* bucket[/prefix] → s->bucket, s->prefix ("" or "p/q/") */
static mlsys_status mlsys__xfer_bucket_prefix(mlsys__xfer_st *s, const char *rest, int az) {
  const char *sl = strchr(rest, '/');
  size_t bl = sl ? (size_t)(sl - rest) : strlen(rest), i;
  const char *what = az ? "container" : "bucket";
  if (bl == 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: empty %s name", s->url, what);
  if (bl > 255) return mlsys_set_error(MLSYS_ERR_ARG, "%s: %s name longer than 255 characters", s->url, what);
  for (i = 0; i < bl; i++) {
    char c = rest[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (!az && (c == '.' || c == '_' || (c >= 'A' && c <= 'Z')));
    if (!ok)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: %s name '%.*s' has the character '%c' (allowed: %s)", s->url, what,
                             (int)bl, rest, c, az ? "a-z 0-9 -" : "letters, digits, '.', '-', '_'");
  }
  s->bucket = mlsys__xfer_strndup(rest, bl);
  if (!s->bucket) return MLSYS_ERR_NOMEM;
  if (sl && sl[1]) {
    size_t pl = strlen(sl + 1);
    char *p = mlsys__xfer_strndup(sl + 1, pl);
    if (!p) return MLSYS_ERR_NOMEM;
    while (pl && p[pl - 1] == '/') p[--pl] = 0;
    if (pl && mlsys_xfer_key_check(p) != MLSYS_OK) {
      mlsys_status r = mlsys_prefix_error("%s: prefix", s->url);
      MLSYS_FREE(p);
      return r == MLSYS_OK ? MLSYS_ERR_ARG : r;
    }
    s->prefix = pl ? mlsys__xfer_cat(p, "/") : mlsys_strdup("");
    MLSYS_FREE(p);
  } else {
    s->prefix = mlsys_strdup("");
  }
  return s->prefix ? MLSYS_OK : MLSYS_ERR_NOMEM;
}

static int mlsys__xfer_loopback(const char *endpoint) {
  const char *h = strstr(endpoint, "://");
  h = h ? h + 3 : endpoint;
  return !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
}

#ifndef MLSYS_XFER_NO_HTTP
static mlsys_status mlsys__xfer_open_http(mlsys__xfer_st *s, const char *rest, const mlsys_xfer_store_opts *o, int az) {
  const char *ep = o->endpoint && o->endpoint[0] ? o->endpoint : getenv(az ? "MLSYS_AZURE_ENDPOINT" : "MLSYS_S3_ENDPOINT");
  const char *region = o->region && o->region[0] ? o->region : "us-east-1";
  const char *ak = o->access_key && o->access_key[0] ? o->access_key : getenv(az ? "AZURE_STORAGE_ACCOUNT" : "AWS_ACCESS_KEY_ID");
  const char *sk = o->secret_key && o->secret_key[0] ? o->secret_key : getenv(az ? "AZURE_STORAGE_KEY" : "AWS_SECRET_ACCESS_KEY");
  double t = o->timeout_s > 0 ? o->timeout_s : 60;
  mlsys__xfer_buf b = {NULL, 0, 0};
  size_t n;
  mlsys_status r = mlsys__xfer_bucket_prefix(s, rest, az);
  if (r) return r;
  if (ep && !ep[0]) ep = NULL;
  if (!ep && az && !(ak && ak[0]))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: no endpoint and no account (set opts.endpoint, $MLSYS_AZURE_ENDPOINT or "
                           "$AZURE_STORAGE_ACCOUNT)", s->url);
  if (ep) {
    s->endpoint = mlsys_strdup(ep);
  } else {
    if (!mlsys__xfer_buf_fmt(&b, az ? "https://%s.blob.core.windows.net" : "https://s3.%s.amazonaws.com", az ? ak : region))
      return mlsys__xfer_oom();
    s->endpoint = mlsys__xfer_buf_take(&b);
  }
  if (!s->endpoint) return MLSYS_ERR_NOMEM;
  n = strlen(s->endpoint);
  while (n && s->endpoint[n - 1] == '/') s->endpoint[--n] = 0;
  if (strncmp(s->endpoint, "http://", 7) != 0 && strncmp(s->endpoint, "https://", 8) != 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: endpoint '%s' is not an http:// or https:// URL", s->url, s->endpoint);
  if (strchr(s->endpoint, '?') || strchr(s->endpoint, '#'))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: endpoint '%s' must not have a query or fragment", s->url, s->endpoint);
  if (!(ak && ak[0]) || !(sk && sk[0])) {
    if (!mlsys__xfer_loopback(s->endpoint))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: no credentials (set opts.access_key/secret_key or %s)", s->url,
                             az ? "$AZURE_STORAGE_ACCOUNT/$AZURE_STORAGE_KEY" : "$AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY");
    /* the emulators' published development credentials */
    ak = az ? "devstoreaccount1" : "S3RVER";
    sk = az ? "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==" : "S3RVER";
  }
  s->access = mlsys_strdup(ak);
  s->secret = mlsys_strdup(sk);
  if (!s->access || !s->secret) return MLSYS_ERR_NOMEM;
  if (!mlsys__xfer_buf_str(&b, s->endpoint) || !mlsys__xfer_buf_str(&b, "/") || !mlsys__xfer_buf_str(&b, s->bucket))
    return mlsys__xfer_oom();
  s->base = mlsys__xfer_buf_take(&b);
  if (az) {
    const char *path = strstr(s->endpoint, "://") + 3;
    size_t kl = strlen(sk);
    int dl;
    path = strchr(path, '/');
    if (!mlsys__xfer_buf_fmt(&b, "/%s", s->access) || (path && !mlsys__xfer_buf_str(&b, path)) ||
        !mlsys__xfer_buf_fmt(&b, "/%s", s->bucket))
      return mlsys__xfer_oom();
    s->auth_path = mlsys__xfer_buf_take(&b);
    if (kl == 0 || kl % 4 != 0 || kl / 4 * 3 > sizeof s->azkey)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: the account key is not base64 of at most %zu bytes", s->url, sizeof s->azkey);
    dl = EVP_DecodeBlock(s->azkey, (const unsigned char *)sk, (int)kl);
    if (dl < 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: the account key is not valid base64", s->url);
    if (sk[kl - 1] == '=') dl--;   /* EVP_DecodeBlock counts padding as data */
    if (kl > 1 && sk[kl - 2] == '=') dl--;
    s->azkey_len = dl;
  } else {
    s->auth_path = mlsys_strdup("");
    if (strlen(region) > 64 || strchr(region, ':'))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: bad region '%s'", s->url, region);
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);
  }
  if (!s->base || !s->auth_path) return MLSYS_ERR_NOMEM;
  s->timeout_ms = (long)(t * 1000);
  s->connect_ms = (long)((t < 10 ? t : 10) * 1000);
  if (s->connect_ms < 1) s->connect_ms = 1;
  s->pub.list = mlsys__xfer_http_list;
  s->pub.get_range = mlsys__xfer_http_get;
  s->pub.put_begin = mlsys__xfer_http_put_begin;
  s->pub.put_part = mlsys__xfer_http_put_part;
  s->pub.put_commit = mlsys__xfer_http_put_commit;
  s->pub.put_abort = mlsys__xfer_http_put_abort;
  return mlsys__xfer_http_bucket(s, o->create_bucket);
}
#endif

MLSYS_DEF mlsys_status mlsys_xfer_store_open(const char *url, const mlsys_xfer_store_opts *opts, mlsys_xfer_store **out) {
  mlsys_xfer_store_opts zero;
  const mlsys_xfer_store_opts *o = opts;
  mlsys__xfer_st *s;
  mlsys_status r;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_xfer_store_open: out is NULL");
  *out = NULL;
  if (!url) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_xfer_store_open: url is NULL");
  if (!o) {
    memset(&zero, 0, sizeof zero);
    o = &zero;
  }
  s = (mlsys__xfer_st *)mlsys_calloc(1, sizeof *s);
  if (!s) return MLSYS_ERR_NOMEM;
  s->url = mlsys_strdup(url);
  if (!s->url) {
    MLSYS_FREE(s);
    return MLSYS_ERR_NOMEM;
  }
  s->pub.close = mlsys__xfer_close;
  s->pub.impl = s;
  if (!strncmp(url, "file://", 7)) {
    s->type = MLSYS__XFER_FILE;
    s->pub.kind = "file";
    r = mlsys__xfer_open_file(s, url + 7, o);
  } else if (!strncmp(url, "synthetic://", 12)) {
    s->type = MLSYS__XFER_SYNTH;
    s->pub.kind = "synthetic";
    r = mlsys__xfer_open_synth(s, url + 12);
  } else if (!strncmp(url, "s3://", 5) || !strncmp(url, "azure://", 8)) {
    int az = url[0] == 'a';
    s->type = az ? MLSYS__XFER_AZURE : MLSYS__XFER_S3;
    s->pub.kind = az ? "azure" : "s3";
#ifndef MLSYS_XFER_NO_HTTP
    r = mlsys__xfer_open_http(s, url + (az ? 8 : 5), o, az);
#else
    r = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: built with MLSYS_XFER_NO_HTTP (no libcurl)", url);
#endif
  } else {
    const char *c = strstr(url, "://");
    r = c ? mlsys_set_error(MLSYS_ERR_ARG, "%s: unknown scheme '%.*s' (file, s3, azure, synthetic)", url,
                            (int)(c - url > 20 ? 20 : c - url), url)
          : mlsys_set_error(MLSYS_ERR_ARG, "'%s' is not a store URL (file://DIR, s3://BUCKET, azure://CONTAINER, "
                            "synthetic://N:SIZE)", url);
  }
  if (r) {
    mlsys__xfer_close(&s->pub);
    return r;
  }
  *out = &s->pub;
  return MLSYS_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_STORE_IMPLEMENTATION_DONE */
#endif /* MLSYS_XFER_STORE_IMPLEMENTATION */
