/* cli/transfer_cp.c — `mlsys transfer cp` (copy objects between stores through the data plane, optionally along a
   plan's overlay) and `mlsys transfer gateway` (run one gateway of a plan in this process, for multi-process and
   multi-host runs). mlsys_transfer.h sections 3 and 5. */
#include "mlsys_transfer.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *cp_help =
    "usage: mlsys transfer cp SRC_URL DST_URL [--plan FILE] [--relay] [--conns N] [--chunk-mib M] [--rate-gbps R]\n"
    "                          [--endpoint URL] [--src-endpoint URL] [--dst-endpoint URL] [--round-robin]\n"
    "                          [--queue N] [--verify] [--progress] [--json]\n"
    "       mlsys transfer gateway --plan FILE --id K [--store URL] [--endpoint URL] [--timeout S] [--json]\n"
    "\n"
    "cp copies every object under SRC_URL to DST_URL through Skyplane's data plane: the source gateway splits objects\n"
    "into chunks and sends them over parallel TCP connections, relays forward them (bounded queues: hop-by-hop flow\n"
    "control), and the destination writes each part once and commits each object; CRC-32C on every hop; a dropped\n"
    "connection or relay loses nothing. All gateways run in this process on 127.0.0.1.\n"
    "URLs: file:///abs/dir or file://rel/dir, s3://bucket[/prefix] (--endpoint http://127.0.0.1:PORT for a local\n"
    "S3 such as s3rver; credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), azure://container[/prefix]\n"
    "(--endpoint http://127.0.0.1:PORT/devstoreaccount1; AZURE_STORAGE_ACCOUNT / AZURE_STORAGE_KEY), and as a source\n"
    "synthetic://N:SIZE[:SEED] (N generated objects of SIZE bytes).\n"
    "--plan FILE: the overlay of `mlsys transfer plan --plan-out FILE` (gateways, edges, connections, emulated\n"
    "rates); without it: src -> dst (or src -> relay -> dst with --relay) with --conns connections (default 8).\n"
    "--rate-gbps R sets every edge's emulated rate (token bucket; 0 = unlimited). --chunk-mib: the part size (default:\n"
    "chosen from the transfer and the overlay, 8 MiB on a direct path and smaller through relays so that the\n"
    "pipeline fills: mlsys_xfer_chunk_auto), --queue (chunks buffered per gateway, default 16), --round-robin\n"
    "(GridFTP's static assignment instead of dynamic).\n"
    "--verify re-reads both stores and compares every object byte for byte.\n"
    "\n"
    "gateway runs gateway K of a plan file (hosts and ports as written there) until the transfer ends: start the\n"
    "destination first, then relays, then the source (with --store SRC_URL; the destination with --store DST_URL).\n"
    "\n"
    "cp --json keys: status (\"ok\"), objects, bytes, chunks, chunk_bytes, seconds, gbps, resends, checksum_failures, duplicates,\n"
    "conn_failures, gateways, edges ([{from, to, connections, bytes}]), verified (true/false/null).\n";

typedef struct {
  const char *plan, *relay, *conns, *chunk, *rate, *endpoint, *src_ep, *dst_ep, *rr, *queue, *verify, *progress, *json,
      *help, *id, *store, *timeout;
} cp_args;

static int cp_open(const char *cmd, const char *url, const char *ep, int create, mlsys_xfer_store **s) {
  mlsys_xfer_store_opts o;
  memset(&o, 0, sizeof o);
  o.endpoint = ep;
  o.create_bucket = create;
  if (mlsys_xfer_store_open(url, &o, s)) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

static int cp_read_plan(const char *cmd, const char *path, mlsys_xfer_overlay *ov) {
  char *text;
  size_t len;
  mlsys_status st;
  if (mlsys_read_file(path, &text, &len)) return cli_fail(cmd, "%s", mlsys_last_error());
  st = mlsys_xfer_overlay_read_json(text, len, path, ov);
  mlsys_free(text);
  if (st) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

/* Byte-for-byte comparison of every object of two stores (the destination may hold more). */
static int cp_verify(mlsys_xfer_store *a, mlsys_xfer_store *b, char *why, size_t whylen) {
  mlsys_xfer_obj *oa = NULL, *ob = NULL;
  int na = 0, nb = 0, i, j = 0, ok = 1;
  size_t cap = 4 << 20;
  char *ba = (char *)malloc(cap), *bb = (char *)malloc(cap);
  if (!ba || !bb || a->list(a, &oa, &na) || b->list(b, &ob, &nb)) { snprintf(why, whylen, "listing: %s", mlsys_last_error()); ok = 0; goto done; }
  for (i = 0; i < na && ok; i++) {
    uint64_t off;
    while (j < nb && strcmp(ob[j].key, oa[i].key) < 0) j++;
    if (j >= nb || strcmp(ob[j].key, oa[i].key)) { snprintf(why, whylen, "'%s' missing at the destination", oa[i].key); ok = 0; break; }
    if (ob[j].size != oa[i].size) { snprintf(why, whylen, "'%s': %llu bytes, source %llu", oa[i].key, (unsigned long long)ob[j].size, (unsigned long long)oa[i].size); ok = 0; break; }
    for (off = 0; off < oa[i].size && ok; off += cap) {
      uint64_t n = oa[i].size - off < cap ? oa[i].size - off : cap;
      if (a->get_range(a, oa[i].key, off, n, ba) || b->get_range(b, ob[j].key, off, n, bb)) { snprintf(why, whylen, "reading '%s': %s", oa[i].key, mlsys_last_error()); ok = 0; }
      else if (memcmp(ba, bb, (size_t)n)) { snprintf(why, whylen, "'%s' differs in bytes [%llu, %llu)", oa[i].key, (unsigned long long)off, (unsigned long long)(off + n)); ok = 0; }
    }
  }
  if (ok) snprintf(why, whylen, "%d objects identical", na);
done:
  mlsys_xfer_objs_free(oa, na);
  mlsys_xfer_objs_free(ob, nb);
  free(ba); free(bb);
  return ok;
}

static int cp_parse_common(const char *cmd, const cp_args *a, mlsys_xfer_gw_opts *g) {
  double v;
  memset(g, 0, sizeof *g);
  if (a->chunk) {
    if (cli_parse_double(a->chunk, &v) || !(v > 0) || v > 1024) return cli_usage_error(cmd, "--chunk-mib needs a number in (0, 1024], got '%s'", a->chunk);
    g->chunk_bytes = (uint64_t)(v * 1048576.0);
    if (!g->chunk_bytes) g->chunk_bytes = 1;
  }
  if (a->queue) {
    if (cli_parse_double(a->queue, &v) || v < 1 || v > 4096 || v != floor(v)) return cli_usage_error(cmd, "--queue needs an integer in [1, 4096], got '%s'", a->queue);
    g->queue_cap = (int)v;
  }
  if (a->rr) g->assign = MLSYS_XFER_ROUND_ROBIN;
  return CLI_OK;
}

static int xfer_cp(int argc, char **argv, const cp_args *a, const char *src_url, const char *dst_url) {
  const char *cmd = "transfer cp";
  mlsys_xfer_store *src = NULL, *dst = NULL;
  mlsys_xfer_overlay ov;
  mlsys_xfer_gw gws[3];
  mlsys_xfer_edge eds[2];
  mlsys_xfer_copy_opts co;
  mlsys_xfer_copy_result r;
  int rc, conns = 8, i, have_ov = 0, verified = -1;
  double rate = -1, v;
  char why[512] = "";
  (void)argc; (void)argv;
  memset(&co, 0, sizeof co);
  memset(&ov, 0, sizeof ov);
  memset(&r, 0, sizeof r);
  if ((rc = cp_parse_common(cmd, a, &co.gw)) != CLI_OK) return rc;
  if (a->conns) {
    if (cli_parse_double(a->conns, &v) || v < 1 || v > 64 || v != floor(v)) return cli_usage_error(cmd, "--conns needs an integer in [1, 64], got '%s'", a->conns);
    conns = (int)v;
  }
  if (a->rate && (cli_parse_double(a->rate, &rate) || !(rate >= 0))) return cli_usage_error(cmd, "--rate-gbps needs a number >= 0, got '%s'", a->rate);
  if (a->plan && a->relay) return cli_usage_error(cmd, "--relay builds an overlay; a --plan brings its own");
  co.progress = a->progress != NULL;
  if ((rc = cp_open(cmd, src_url, a->src_ep ? a->src_ep : a->endpoint, 0, &src)) != CLI_OK) return rc;
  if ((rc = cp_open(cmd, dst_url, a->dst_ep ? a->dst_ep : a->endpoint, 1, &dst)) != CLI_OK) { mlsys_xfer_store_close(src); return rc; }
  if (a->plan) {
    if ((rc = cp_read_plan(cmd, a->plan, &ov)) != CLI_OK) goto out;
    have_ov = 1;
    for (i = 0; i < ov.ngw; i++) { snprintf(ov.gw[i].host, sizeof ov.gw[i].host, "127.0.0.1"); ov.gw[i].port = 0; }
  } else {
    int k = a->relay ? 3 : 2;
    memset(gws, 0, sizeof gws);
    memset(eds, 0, sizeof eds);
    for (i = 0; i < k; i++) {
      gws[i].role = i == 0 ? MLSYS_XFER_SRC : i == k - 1 ? MLSYS_XFER_DST : MLSYS_XFER_RELAY;
      snprintf(gws[i].host, sizeof gws[i].host, "127.0.0.1");
      snprintf(gws[i].region, sizeof gws[i].region, "%s", i == 0 ? "src" : i == k - 1 ? "dst" : "relay");
    }
    for (i = 0; i + 1 < k; i++) { eds[i].from = i; eds[i].to = i + 1; eds[i].nconn = conns; }
    ov.ngw = k; ov.nedge = k - 1; ov.gw = gws; ov.edge = eds;
  }
  if (rate >= 0)
    for (i = 0; i < ov.nedge; i++) ov.edge[i].rate_gbps = rate;
  if (mlsys_xfer_copy(&ov, src, dst, &co, &r)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto out; }
  if (a->verify) verified = cp_verify(src, dst, why, sizeof why);
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, verified == 0 ? "mismatch" : "ok");
    mlsys_jw_key(&w, "objects"); mlsys_jw_u64(&w, r.objects);
    mlsys_jw_key(&w, "bytes"); mlsys_jw_u64(&w, r.bytes);
    mlsys_jw_key(&w, "chunks"); mlsys_jw_u64(&w, r.chunks);
    mlsys_jw_key(&w, "chunk_bytes"); mlsys_jw_u64(&w, r.chunk_bytes);
    mlsys_jw_key(&w, "seconds"); mlsys_jw_double(&w, r.seconds);
    mlsys_jw_key(&w, "gbps"); mlsys_jw_double(&w, r.gbps);
    mlsys_jw_key(&w, "resends"); mlsys_jw_u64(&w, r.resends);
    mlsys_jw_key(&w, "checksum_failures"); mlsys_jw_u64(&w, r.checksum_failures);
    mlsys_jw_key(&w, "duplicates"); mlsys_jw_u64(&w, r.duplicates);
    mlsys_jw_key(&w, "conn_failures"); mlsys_jw_u64(&w, r.conn_failures);
    mlsys_jw_key(&w, "gateways"); mlsys_jw_i64(&w, ov.ngw);
    mlsys_jw_key(&w, "edges"); mlsys_jw_array(&w);
    for (i = 0; i < ov.nedge; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "from"); mlsys_jw_str(&w, ov.gw[ov.edge[i].from].region);
      mlsys_jw_key(&w, "to"); mlsys_jw_str(&w, ov.gw[ov.edge[i].to].region);
      mlsys_jw_key(&w, "connections"); mlsys_jw_i64(&w, ov.edge[i].nconn);
      mlsys_jw_key(&w, "bytes"); mlsys_jw_u64(&w, i < r.nedge && r.edge_bytes ? r.edge_bytes[i] : 0);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "verified"); if (verified < 0) mlsys_jw_null(&w); else mlsys_jw_bool(&w, verified);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "writing JSON: %s", mlsys_last_error());
  } else {
    printf("copied %llu objects, %.1f MB (%llu chunks of %.4g MiB) in %.2f s: %.3f Gbps over %d gateways (%llu resends, %llu checksum "
           "failures, %llu duplicates dropped)\n", (unsigned long long)r.objects, r.bytes / 1e6, (unsigned long long)r.chunks,
           r.chunk_bytes / 1048576.0, r.seconds, r.gbps, ov.ngw, (unsigned long long)r.resends,
           (unsigned long long)r.checksum_failures, (unsigned long long)r.duplicates);
    for (i = 0; i < ov.nedge; i++)
      printf("  %s -> %s: %d connections, %.1f MB\n", ov.gw[ov.edge[i].from].region, ov.gw[ov.edge[i].to].region, ov.edge[i].nconn,
             (i < r.nedge && r.edge_bytes ? r.edge_bytes[i] : 0) / 1e6);
    if (verified >= 0) printf("verify: %s\n", why);
  }
  if (verified == 0) rc = cli_fail(cmd, "verification failed: %s", why);
out:
  mlsys_xfer_copy_result_free(&r);
  if (have_ov) mlsys_xfer_overlay_free(&ov);
  mlsys_xfer_store_close(src);
  mlsys_xfer_store_close(dst);
  return rc;
}

static const char *cp_role(int r) { return r == MLSYS_XFER_SRC ? "src" : r == MLSYS_XFER_DST ? "dst" : "relay"; }

static int xfer_gateway(const cp_args *a) {
  const char *cmd = "transfer gateway";
  mlsys_xfer_overlay ov;
  mlsys_xfer_gw_opts go;
  mlsys_xfer_gw_result r;
  mlsys_xfer_store *store = NULL;
  int rc, id;
  double v;
  mlsys_status st;
  if (!a->plan || !a->id) return cli_usage_error(cmd, "--plan FILE and --id K are required");
  if ((rc = cp_parse_common(cmd, a, &go)) != CLI_OK) return rc;
  if (a->timeout) {
    if (cli_parse_double(a->timeout, &v) || !(v > 0)) return cli_usage_error(cmd, "--timeout needs a positive number, got '%s'", a->timeout);
    go.timeout_s = v;
  }
  if ((rc = cp_read_plan(cmd, a->plan, &ov)) != CLI_OK) return rc;
  if (cli_parse_double(a->id, &v) || v < 0 || v >= ov.ngw || v != floor(v)) {
    rc = cli_usage_error(cmd, "--id needs a gateway id in [0, %d], got '%s'", ov.ngw - 1, a->id);
    mlsys_xfer_overlay_free(&ov);
    return rc;
  }
  id = (int)v;
  if (ov.gw[id].role != MLSYS_XFER_RELAY) {
    if (!a->store) { mlsys_xfer_overlay_free(&ov); return cli_usage_error(cmd, "gateway %d is the %s: --store URL is required", id, cp_role(ov.gw[id].role)); }
    if ((rc = cp_open(cmd, a->store, a->endpoint, ov.gw[id].role == MLSYS_XFER_DST, &store)) != CLI_OK) { mlsys_xfer_overlay_free(&ov); return rc; }
  }
  memset(&r, 0, sizeof r);
  st = mlsys_xfer_gateway_run(&ov, id, store, &go, &r);
  if (st) rc = cli_fail(cmd, "gateway %d (%s): %s", id, cp_role(ov.gw[id].role), mlsys_last_error());
  else if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, "ok");
    mlsys_jw_key(&w, "id"); mlsys_jw_i64(&w, id);
    mlsys_jw_key(&w, "role"); mlsys_jw_str(&w, cp_role(ov.gw[id].role));
    mlsys_jw_key(&w, "objects"); mlsys_jw_u64(&w, r.objects);
    mlsys_jw_key(&w, "chunks"); mlsys_jw_u64(&w, r.chunks);
    mlsys_jw_key(&w, "bytes"); mlsys_jw_u64(&w, r.bytes);
    mlsys_jw_key(&w, "seconds"); mlsys_jw_double(&w, r.seconds);
    mlsys_jw_key(&w, "resends"); mlsys_jw_u64(&w, r.resends);
    mlsys_jw_key(&w, "duplicates"); mlsys_jw_u64(&w, r.duplicates);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "writing JSON: %s", mlsys_last_error());
  } else {
    printf("gateway %d (%s): %llu chunks, %.1f MB in %.2f s\n", id, cp_role(ov.gw[id].role), (unsigned long long)r.chunks, r.bytes / 1e6, r.seconds);
  }
  mlsys_xfer_gw_result_free(&r);
  if (store) mlsys_xfer_store_close(store);
  mlsys_xfer_overlay_free(&ov);
  return rc;
}

static int cp_parse(int argc, char **argv, cp_args *a, const char **pos, int npos_max, int *npos, const char *cmd) {
  cli_opt opts[] = {
      {"--plan", 1, &a->plan},     {"--relay", 0, &a->relay},       {"--conns", 1, &a->conns},
      {"--chunk-mib", 1, &a->chunk}, {"--rate-gbps", 1, &a->rate},  {"--endpoint", 1, &a->endpoint},
      {"--src-endpoint", 1, &a->src_ep}, {"--dst-endpoint", 1, &a->dst_ep}, {"--round-robin", 0, &a->rr},
      {"--queue", 1, &a->queue},   {"--verify", 0, &a->verify},     {"--progress", 0, &a->progress},
      {"--json", 0, &a->json},     {"--help", 0, &a->help},         {"--id", 1, &a->id},
      {"--store", 1, &a->store},   {"--timeout", 1, &a->timeout},
  };
  memset(a, 0, sizeof *a);
  /* positional arguments (the URLs) are taken out first; cli_parse sees only options */
  return cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, npos_max, npos);
}

int cmd_transfer_cp(int argc, char **argv) {
  cp_args a;
  const char *pos[2] = {NULL, NULL};
  int np, rc;
  if ((rc = cp_parse(argc, argv, &a, pos, 2, &np, "transfer cp")) != CLI_OK) return rc;
  if (a.help) { fputs(cp_help, stdout); return CLI_OK; }
  if (np != 2) return cli_usage_error("transfer cp", "needs SRC_URL and DST_URL (e.g. file:///data s3://bucket/prefix)");
  return xfer_cp(argc, argv, &a, pos[0], pos[1]);
}

int cmd_transfer_gateway(int argc, char **argv) {
  cp_args a;
  const char *pos[1];
  int np, rc;
  if ((rc = cp_parse(argc, argv, &a, pos, 0, &np, "transfer gateway")) != CLI_OK) return rc;
  if (a.help) { fputs(cp_help, stdout); return CLI_OK; }
  return xfer_gateway(&a);
}
