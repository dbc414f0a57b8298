/* libFuzzer target for every parser in mlsys_transfer.h section 5 that reads bytes from the network.

   The first input byte picks what the rest is fed to (the rest is "the bytes on the wire"):
     bit 0 clear: one header and one ack, from the same bytes. mlsys_xfer_wire_unpack must either fail with
       MLSYS_ERR_PARSE / MLSYS_ERR_TOO_BIG and a message starting "wire: ", or succeed — then packing the result
       gives back exactly the bytes it consumed, and mlsys_xfer_wire_header_len agrees on the length. The same for
       mlsys_xfer_ack_unpack / mlsys_xfer_ack_pack.
     bit 0 set: a byte stream read the way a gateway's receiver reads a connection (the receiver's own header
       reader, mlsys__xfer_dp_recv_header, over a memory reader), payloads checked against their CRC-32C, and every
       intact DATA frame delivered to a destination's part bookkeeping (mlsys__xfer_dp_deliver) over a store that
       checks each part's range and counts writes: no part may be written twice.
     bit 1 set: the header checksums (and, in stream mode, the payload CRCs) are recomputed before parsing, so that
       mutations reach the field checks behind them instead of stopping at a checksum mismatch.

   Build and run: make build/fuzz/fuzz_xfer_wire && ./build/fuzz/fuzz_xfer_wire -max_total_time=60 tests/fuzz/corpus/fuzz_xfer_wire */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                 \
  do {                                                                                                \
    if (!(x)) {                                                                                       \
      fprintf(stderr, "fuzz_xfer_wire: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                    \
      abort();                                                                                        \
    }                                                                                                 \
  } while (0)


/* ---- a store that keeps no bytes: it checks ranges and counts part writes ---- */
typedef struct fz_upload { uint64_t size, part_bytes, nparts; uint8_t *seen; } fz_upload;
static long fz_open;
static mlsys_status fz_begin(mlsys_xfer_store *s, const char *key, uint64_t size, uint64_t pb, mlsys_xfer_upload **up) {
  fz_upload *u = (fz_upload *)calloc(1, sizeof *u);
  (void)s; (void)key;
  FUZZ_CHECK(u && pb > 0);
  u->size = size;
  u->part_bytes = pb;
  u->nparts = size / pb + (size % pb != 0);
  FUZZ_CHECK(u->nparts <= MLSYS_XFER_MAX_PARTS);
  u->seen = (uint8_t *)calloc(u->nparts ? (size_t)u->nparts : 1, 1);
  FUZZ_CHECK(u->seen);
  fz_open++;
  *up = (mlsys_xfer_upload *)u;
  return MLSYS_OK;
}
static mlsys_status fz_part(mlsys_xfer_store *s, mlsys_xfer_upload *up, int part, const void *buf, uint64_t len) {
  fz_upload *u = (fz_upload *)up;
  uint64_t off;
  (void)s; (void)buf;
  FUZZ_CHECK(part >= 0 && (uint64_t)part < u->nparts);
  off = (uint64_t)part * u->part_bytes;
  FUZZ_CHECK(len == (u->size - off < u->part_bytes ? u->size - off : u->part_bytes));
  FUZZ_CHECK(!u->seen[part]);   /* exactly once */
  u->seen[part] = 1;
  return MLSYS_OK;
}
static mlsys_status fz_commit(mlsys_xfer_store *s, mlsys_xfer_upload *up) {
  fz_upload *u = (fz_upload *)up;
  uint64_t i;
  (void)s;
  for (i = 0; i < u->nparts; i++) FUZZ_CHECK(u->seen[i]);
  free(u->seen); free(u);
  fz_open--;
  return MLSYS_OK;
}
static void fz_abort(mlsys_xfer_store *s, mlsys_xfer_upload *up) { fz_upload *u = (fz_upload *)up; (void)s; free(u->seen); free(u); fz_open--; }

/* ---- the bytes on the wire, as a receiver reads them ---- */
typedef struct { const uint8_t *p; size_t n, off; } memrd;
static int mem_read(void *ctx, void *buf, size_t n, double timeout_s, int first) {
  memrd *m = (memrd *)ctx;
  size_t k = m->n - m->off < n ? m->n - m->off : n;
  (void)timeout_s;
  memcpy(buf, m->p + m->off, k);
  m->off += k;
  if (k == n) return 1;
  if (k == 0 && first) return 0;
  return -4;
}

static void fix_header_crc(uint8_t *b, size_t n) {
  size_t total;
  if (n >= MLSYS_XFER_WIRE_PREFIX_LEN && mlsys_xfer_wire_header_len(b, n, &total) == MLSYS_OK && total <= n)
    mlsys__xfer_dp_put32(b + total - 4, mlsys_xfer_crc32c(0, b, total - 4));
}

static void one_header(uint8_t *b, size_t n, int fix) {
  mlsys_xfer_wire_hdr *h = (mlsys_xfer_wire_hdr *)malloc(sizeof *h);
  uint8_t out[MLSYS_XFER_WIRE_MAX_LEN];
  size_t used = 0, len = 0, total = 0;
  mlsys_status st;
  mlsys_xfer_ack a;
  uint8_t ab[MLSYS_XFER_ACK_LEN];
  FUZZ_CHECK(h);
  if (fix) fix_header_crc(b, n);
  st = mlsys_xfer_wire_unpack(b, n, h, &used);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "wire: ", 6) == 0);
  } else {
    FUZZ_CHECK(used >= MLSYS_XFER_WIRE_MIN_LEN && used <= MLSYS_XFER_WIRE_MAX_LEN && used <= n);
    FUZZ_CHECK(mlsys_xfer_wire_header_len(b, n, &total) == MLSYS_OK && total == used);
    FUZZ_CHECK(mlsys_xfer_wire_pack(h, out, sizeof out, &len) == MLSYS_OK);
    FUZZ_CHECK(len == used && memcmp(out, b, len) == 0);
  }
  free(h);
  if (fix && n >= MLSYS_XFER_ACK_LEN) mlsys__xfer_dp_put32(b + 24, mlsys_xfer_crc32c(0, b, 24));
  st = mlsys_xfer_ack_unpack(b, n, &a);
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE && strncmp(mlsys_last_error(), "ack: ", 5) == 0);
  } else {
    mlsys_xfer_ack_pack(&a, ab);
    FUZZ_CHECK(memcmp(ab, b, MLSYS_XFER_ACK_LEN) == 0);
  }
}

static void stream(uint8_t *b, size_t n, int fix) {
  static mlsys_xfer_store store;
  struct mlsys_xfer_gateway *g = (struct mlsys_xfer_gateway *)calloc(1, sizeof *g);
  mlsys_xfer_wire_hdr *h = (mlsys_xfer_wire_hdr *)malloc(sizeof *h);
  uint8_t hb[MLSYS_XFER_WIRE_MAX_LEN];
  char why[600];
  memrd m;
  int valid = 0, frames = 0;
  size_t j;
  FUZZ_CHECK(g && h);
  store.kind = "fuzz";
  store.put_begin = fz_begin;
  store.put_part = fz_part;
  store.put_commit = fz_commit;
  store.put_abort = fz_abort;
  g->store = &store;
  g->role = MLSYS_XFER_DST;
  pthread_mutex_init(&g->dmu, NULL);
  pthread_cond_init(&g->dcv, NULL);
  m.p = b; m.n = n; m.off = 0;
  while (frames++ < 4096) {
    int r;
    size_t start = m.off;
    why[0] = 0;
    if (fix) fix_header_crc(b + start, n - start);
    r = mlsys__xfer_dp_recv_header(mem_read, &m, valid, 1.0, hb, h, why, sizeof why);
    if (r != 1) {
      FUZZ_CHECK(r == 0 || (r == -1 && why[0]));
      FUZZ_CHECK(r != 0 || valid);
      break;
    }
    valid = 1;
    FUZZ_CHECK(h->data_len <= MLSYS_XFER_DATA_MAX);
    if (h->type != MLSYS_XFER_FRAME_DATA) { FUZZ_CHECK(h->data_len == 0); continue; }
    if (h->data_len > n - m.off) break;   /* the payload is cut short: a receiver drops the connection */
    if (fix) h->crc = mlsys_xfer_crc32c(0, b + m.off, (size_t)h->data_len);
    if (mlsys_xfer_crc32c(0, b + m.off, (size_t)h->data_len) == h->crc) {
      int st = mlsys__xfer_dp_deliver(g, h, b + m.off);
      FUZZ_CHECK(st == MLSYS_XFER_ACK_OK || st == MLSYS_XFER_ACK_ERROR);
    }
    m.off += (size_t)h->data_len;
  }
  for (j = 0; j < g->dcap; j++) {
    mlsys__xfer_dp_dobj *o = g->dtab[j];
    if (!o) continue;
    FUZZ_CHECK(o->nwritten <= o->nparts);
    FUZZ_CHECK(!o->committed || o->nwritten == o->nparts);
    if (o->up) fz_abort(&store, o->up);
    free(o->key); free(o->state); free(o);
  }
  free(g->dtab);
  FUZZ_CHECK(fz_open == 0);
  pthread_mutex_destroy(&g->dmu);
  pthread_cond_destroy(&g->dcv);
  free(g);
  free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *b;
  int mode;
  if (size < 1) return 0;
  mode = data[0];
  b = (uint8_t *)malloc(size);   /* a copy the checksum fix-up may write into */
  FUZZ_CHECK(b);
  memcpy(b, data + 1, size - 1);
  if (mode & 1) stream(b, size - 1, mode & 2);
  else one_header(b, size - 1, mode & 2);
  free(b);
  return 0;
}
