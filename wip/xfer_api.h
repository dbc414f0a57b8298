/* wip/xfer_api.h — the shared interface of mlsys_transfer.h's parts while they are built separately.
   At merge time this file, wip/xfer_store.h, wip/xfer_dataplane.h and the planner become one header,
   mlsys_transfer.h; nothing here is final until then. Prefix: mlsys_xfer_ (public), mlsys__xfer_ (internal).

   Needs mlsys_common.h (mlsys_status, mlsys_set_error, mlsys_last_error, mlsys_alloc/free, JSON, RNG, timer). */
#ifndef MLSYS_XFER_API_H
#define MLSYS_XFER_API_H
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>

/* ================================================================================================================
   Object stores (wip/xfer_store.h). A store is a flat key space (keys are '/'-separated paths, no leading '/').
   Every function is thread-safe on one store object: the data plane calls get_range / put_part from many
   threads at once.
   ================================================================================================================ */
typedef struct { char *key; uint64_t size; } mlsys_xfer_obj;   /* key relative to the store's root/prefix */

typedef struct mlsys_xfer_store mlsys_xfer_store;
typedef struct mlsys_xfer_upload mlsys_xfer_upload;           /* one object being written (opaque) */

struct mlsys_xfer_store {
  const char *kind;                                            /* "file", "s3", "azure", "synthetic" */
  /* every object under the store's prefix, sorted by key; *objs freed with mlsys_xfer_objs_free */
  mlsys_status (*list)(mlsys_xfer_store *s, mlsys_xfer_obj **objs, int *n);
  /* read [off, off+len) of key into buf; a short object is an error naming key and sizes */
  mlsys_status (*get_range)(mlsys_xfer_store *s, const char *key, uint64_t off, uint64_t len, void *buf);
  /* writing: begin an object of `size` bytes that will arrive as `nparts` parts (part i covers
     [i*part_bytes, min(size, (i+1)*part_bytes))), parts in any order and from any thread, each exactly once;
     commit makes the object visible atomically (a reader never sees a partial object); abort discards it. */
  mlsys_status (*put_begin)(mlsys_xfer_store *s, const char *key, uint64_t size, uint64_t part_bytes,
                            mlsys_xfer_upload **up);
  mlsys_status (*put_part)(mlsys_xfer_store *s, mlsys_xfer_upload *up, int part, const void *buf, uint64_t len);
  mlsys_status (*put_commit)(mlsys_xfer_store *s, mlsys_xfer_upload *up);   /* frees up */
  void (*put_abort)(mlsys_xfer_store *s, mlsys_xfer_upload *up);              /* frees up */
  void (*close)(mlsys_xfer_store *s);                                         /* frees s */
  void *impl;
};

typedef struct {
  const char *endpoint;     /* s3: "http://127.0.0.1:4568" (default: $MLSYS_S3_ENDPOINT, else AWS) ;
                               azure: "http://127.0.0.1:10000/devstoreaccount1" (default $MLSYS_AZURE_ENDPOINT) */
  const char *access_key;   /* s3: default $AWS_ACCESS_KEY_ID ; azure: account name (default $AZURE_STORAGE_ACCOUNT) */
  const char *secret_key;   /* s3: default $AWS_SECRET_ACCESS_KEY ; azure: base64 account key ($AZURE_STORAGE_KEY) */
  const char *region;       /* s3 SigV4 region, default "us-east-1" */
  double timeout_s;         /* per request, default 60 */
  int create_bucket;        /* 1 → create the bucket / container when it does not exist (for a destination) */
} mlsys_xfer_store_opts;

/* URL forms: file:///abs/dir or file://rel/dir (a directory; objects are the regular files below it),
   s3://bucket[/prefix], azure://container[/prefix], synthetic://N:SIZE[:SEED] (N procedurally generated objects
   of SIZE bytes, read-only, for network-only runs). Bad URLs are MLSYS_ERR_ARG naming the URL and the problem. */
MLSYS_DEF mlsys_status mlsys_xfer_store_open(const char *url, const mlsys_xfer_store_opts *o, mlsys_xfer_store **out);
MLSYS_DEF void mlsys_xfer_store_close(mlsys_xfer_store *s);
MLSYS_DEF void mlsys_xfer_objs_free(mlsys_xfer_obj *objs, int n);

/* ================================================================================================================
   Overlay: the instance-level plan the data plane runs (made by the planner's compile step, or by hand).
   Gateway ids are 0..ngw-1. Exactly one source and one destination gateway role per transfer; relays forward.
   ================================================================================================================ */
enum { MLSYS_XFER_SRC = 0, MLSYS_XFER_RELAY = 1, MLSYS_XFER_DST = 2 };

typedef struct {
  int role;                 /* MLSYS_XFER_SRC / RELAY / DST */
  char region[64];          /* "aws:us-east-1" (informational) */
  char host[64];            /* address to listen on / connect to; "127.0.0.1" in tests (never anything else) */
  int port;                 /* 0 → ephemeral (in-process runs) */
} mlsys_xfer_gw;

typedef struct {
  int from, to;             /* gateway ids */
  int nconn;                /* parallel TCP connections on this edge (≥ 1, ≤ 64 per gateway in total) */
  double rate_gbps;         /* emulated link rate for the whole edge (token bucket), 0 = unlimited */
  double plan_gbps;         /* the planner's F on this edge (informational) */
} mlsys_xfer_edge;

typedef struct {
  int ngw, nedge;
  mlsys_xfer_gw *gw;
  mlsys_xfer_edge *edge;
} mlsys_xfer_overlay;

#endif
