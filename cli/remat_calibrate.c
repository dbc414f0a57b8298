/* cli/remat_calibrate.c — `mlsys remat calibrate`: time our C kernels (examples/cnn_kernels.h) for every forward
   node of a graph that has shapes (tools/export_torch_graph.py writes them) and write their costs into the graph
   as per-node "impls" (mlsys_remat.h, GRAPH FORMATS), which MONeT's catalogue then uses (section 9). Conv2d and
   Linear nodes also get their backward kernels timed, written as their B node's impls. */
#include "mlsys_remat.h"
#include "cli/cli.h"
#include "examples/cnn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *calibrate_help =
    "usage: mlsys remat calibrate --graph G --out G2 [--reps N] [--batch B] [--nodes NAME,...] [--max-seconds S]\n"
    "                             [--json]\n"
    "\n"
    "Times this machine's C implementations (examples/cnn_kernels.h) of every forward node with shapes whose\n"
    "operator we have, and writes G2: G with each such node's \"impls\" (name, cost, workspace) set, every other\n"
    "field unchanged. Implementations:\n"
    "  Conv2d     direct (no workspace), im2col (im2col + GEMM; workspace = the kernel's column buffer,\n"
    "             (C/groups)*KH*KW*OH*OW*4 bytes, one sample's and group's, reused across the batch)   any\n"
    "             kernel/stride/padding/dilation/groups\n"
    "  Linear     direct, packed (the same loop over a copy of its input: workspace = the input's bytes)\n"
    "  ReLU       out-of-place, inplace, mask (the forward that also writes MONeT's 1-bit mask)\n"
    "  MaxPool2d  idx64 (int64 indices, PyTorch's), idx8 (8-bit window positions; windows of <= 256)\n"
    "Conv2d and Linear nodes also get their backward timed: the B node whose fwd_of is the node (when exactly one)\n"
    "gets \"impls\" direct and im2col (conv: dw, db by im2col, dx by col2im; the same column buffer) or direct and\n"
    "packed (linear: dx from a transposed copy of the weight, workspace = the weight's bytes). dx is computed only\n"
    "when the B node has output bytes (a first layer's backward makes no input gradient).\n"
    "Workspaces that do not grow with the batch (the im2col buffers, the backward's weight copy) are written with\n"
    "\"fixed_workspace\": true, so batch scaling (mlsys_remat_graph_scale_batch, e.g. sweep's max-batch search)\n"
    "leaves them as they are.\n"
    "The first of each is the default implementation: the one the graph's cost describes. Costs are written in\n"
    "the graph's own cost unit as graph_cost * t_impl / t_default (so they stay consistent when the unit is\n"
    "flops). Each implementation runs at B samples (default 1; the ratio is taken as batch-independent), the\n"
    "median of N runs (default 3) after one untimed warm-up. --nodes restricts the work to the named nodes (each\n"
    "must have shapes and a supported operator). --max-seconds S: once S seconds are spent, the remaining nodes\n"
    "get one timed run each (every node is still calibrated; only the repetitions shrink).\n"
    "A node found by the scan whose shapes our kernels cannot reproduce (e.g. a ceil_mode pool) is skipped with\n"
    "a line on stderr and listed under \"skipped\"; a node named in --nodes is an error instead.\n"
    "MONeT (--method monet) uses the impls of Conv2d and Linear nodes as their algorithms (forward) and those of\n"
    "their B nodes as the backward paths; the ReLU and pool impls are measurements for reference (the\n"
    "catalogue models those variants through IntNodes and in-place).\n"
    "--json prints {graph, out, batch_timed, reps, nodes: [{node, op, impls: [{name, us, cost, workspace}],\n"
    "backward (conv/linear with a B node): {node, dx, impls: [...]}}],\n"
    "skipped: [{node, why}]}\n"
    "(us: the measured microseconds at batch_timed). Progress lines go to stderr every few seconds.\n"
    "Exit codes: 0 done, 1 bad input (no shapes in the graph, an unknown node, inconsistent shapes), 2 bad usage.\n";

enum { CAL_CONV, CAL_LINEAR, CAL_RELU, CAL_POOL };

typedef struct {
  int node, op, nimpl;
  int bnode, bnimpl, bdx;   /* conv / linear: the B node (fwd_of = node) or -1; whether its kernels make dx */
  cnn_k_geom geom;          /* conv / pool, at the timed batch */
  long rows, in_f, out_f;   /* linear: rows at the timed batch, features */
  size_t count;             /* relu: elements at the timed batch */
  const char *name[4];
  uint64_t ws[4];           /* workspace written to the graph (at the graph's batch) */
  int wsfix[4], bwsfix[2];  /* the workspace does not grow with the batch ("fixed_workspace") */
  double us[4];
  const char *bname[2];
  uint64_t bws[2];
  double bus[2];
} cal_node;

static int cal_op(const mlsys_remat_graph *g, int v) {
  const char *op = g->op ? g->op[v] : NULL;
  if (!op) return -1;
  if (!strcmp(op, "Conv2d")) return CAL_CONV;
  if (!strcmp(op, "Linear")) return CAL_LINEAR;
  if (!strcmp(op, "ReLU") || !strcmp(op, "relu")) return CAL_RELU;
  if (!strcmp(op, "MaxPool2d")) return CAL_POOL;
  return -1;
}

static int64_t cal_numel(const int64_t *s, int nd) {
  int64_t n = 1;
  int k;
  for (k = 0; k < nd; k++) n *= s[k];
  return n;
}

/* The B node differentiating forward node v, when exactly one has fwd_of = v (else none is calibrated). Its
   kernels compute dw and db always, dx only when the node has output bytes: the exporter gives a B node 0 bytes
   when no input gradient is made (a first layer, whose input is fixed memory). */
static void cal_find_bwd(const mlsys_remat_graph *g, int v, cal_node *c) {
  int b, found = -1, count = 0;
  for (b = 0; b < g->dag.n && g->fwd_of; b++)
    if (g->kind[b] == MLSYS_REMAT_B && g->fwd_of[b] == v) { found = b; count++; }
  if (count != 1) return;
  c->bnode = found;
  c->bnimpl = 2;
  c->bdx = g->dag.size[found] > 0;
}

/* Fill c for node v from its info; 0 ok, else a message in why (the node is unusable). */
static int cal_setup(const mlsys_remat_graph *g, int v, int batch, cal_node *c, char *why, size_t wl) {
  const mlsys_remat_node_info *in = &g->info[v];
  const int gb = g->batch > 0 ? g->batch : (in->ndim > 0 ? (int)in->shape[0] : 0);
  memset(c, 0, sizeof *c);
  c->node = v;
  c->bnode = -1;
  c->op = cal_op(g, v);
  if (g->kind[v] != MLSYS_REMAT_F) { snprintf(why, wl, "not a forward node"); return 1; }
  if (c->op < 0) { snprintf(why, wl, "operator '%s' has no C implementation here", g->op && g->op[v] ? g->op[v] : "?"); return 1; }
  if (in->ndim == 0) { snprintf(why, wl, "no \"shape\""); return 1; }
  if (gb <= 0 || in->shape[0] != gb) {
    snprintf(why, wl, "shape[0] = %lld is not the graph's batch %d", (long long)in->shape[0], gb);
    return 1;
  }
  if (c->op == CAL_CONV || c->op == CAL_POOL) {
    cnn_k_geom *G = &c->geom;
    if (in->ndim != 4 || in->in_ndim != 4 || !in->kernel[0]) {
      snprintf(why, wl, "needs a 4-d \"shape\" and \"attrs\" with a 4-d in_shape and the kernel");
      return 1;
    }
    if (in->in_shape[0] != in->shape[0] || in->in_shape[1] > 1 << 20 || in->in_shape[2] > 1 << 20 ||
        in->in_shape[3] > 1 << 20 || in->shape[1] > 1 << 20) {
      snprintf(why, wl, "in_shape and shape disagree on the batch or are too large");
      return 1;
    }
    G->N = batch;
    G->C = (int)in->in_shape[1]; G->H = (int)in->in_shape[2]; G->W = (int)in->in_shape[3];
    G->K = (int)in->shape[1];
    G->KH = in->kernel[0]; G->KW = in->kernel[1];
    G->SH = in->stride[0] ? in->stride[0] : 1; G->SW = in->stride[1] ? in->stride[1] : 1;
    G->PH = in->pad[0]; G->PW = in->pad[1];
    G->DH = in->dilation[0] ? in->dilation[0] : 1; G->DW = in->dilation[1] ? in->dilation[1] : 1;
    G->groups = in->groups ? in->groups : 1;
    if (c->op == CAL_POOL && (G->K != G->C)) { snprintf(why, wl, "a pool must keep the channels"); return 1; }
    if (c->op == CAL_CONV ? !cnn_k_conv_ok(G) : !cnn_k_pool_ok(G)) {
      snprintf(why, wl, "the kernel geometry is not valid (channels / groups, window, padding)");
      return 1;
    }
    if (cnn_k_oh(G) != in->shape[2] || cnn_k_ow(G) != in->shape[3]) {
      snprintf(why, wl, "output %lldx%lld, but the attrs give %ldx%ld", (long long)in->shape[2],
               (long long)in->shape[3], cnn_k_oh(G), cnn_k_ow(G));
      return 1;
    }
    if (c->op == CAL_CONV) {
      c->nimpl = 2;
      c->name[0] = "direct"; c->name[1] = "im2col";
      c->ws[1] = cnn_k_conv_im2col_workspace(G);   /* per sample and group: the same at any batch */
      c->wsfix[1] = c->bwsfix[1] = 1;
      cal_find_bwd(g, v, c);
      c->bname[0] = "direct"; c->bname[1] = "im2col";
      c->bws[1] = c->ws[1];   /* the backward reuses the forward's column buffer (filter, then data) */
    } else {
      c->nimpl = G->KH * G->KW <= 256 ? 2 : 1;
      c->name[0] = "idx64"; c->name[1] = "idx8";
    }
    return 0;
  }
  if (c->op == CAL_LINEAR) {
    int64_t nin, nout;
    if (in->in_ndim < 1 || in->in_shape[0] != in->shape[0] || in->ndim != in->in_ndim) {
      snprintf(why, wl, "needs \"attrs\": {\"in_shape\"} of the same rank and batch as \"shape\"");
      return 1;
    }
    c->in_f = (long)in->in_shape[in->in_ndim - 1];
    c->out_f = (long)in->shape[in->ndim - 1];
    nin = cal_numel(in->in_shape, in->in_ndim);
    nout = cal_numel(in->shape, in->ndim);
    if (c->in_f <= 0 || c->out_f <= 0 || nin / c->in_f != nout / c->out_f || (nin / c->in_f) % gb) {
      snprintf(why, wl, "in_shape and shape disagree on the rows");
      return 1;
    }
    c->rows = (long)(nin / c->in_f / gb) * batch;
    c->nimpl = 2;
    c->name[0] = "direct"; c->name[1] = "packed";
    c->ws[1] = (uint64_t)nin * sizeof(float);   /* a copy of the input, at the graph's batch */
    cal_find_bwd(g, v, c);
    c->bname[0] = "direct"; c->bname[1] = "packed";
    c->bws[1] = cnn_k_linear_backward_packed_workspace(c->in_f, c->out_f);   /* the weight, transposed */
    c->bwsfix[1] = 1;
    return 0;
  }
  /* ReLU */
  {
    int64_t n = cal_numel(in->shape, in->ndim);
    if (n <= 0 || n % gb) { snprintf(why, wl, "empty shape"); return 1; }
    c->count = (size_t)(n / gb) * (size_t)batch;
    c->nimpl = 3;
    c->name[0] = "out-of-place"; c->name[1] = "inplace"; c->name[2] = "mask";
    return 0;
  }
}

static int cal_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Buffers sized for the node; each implementation once untimed, then reps timed runs; the median in µs. */
static int cal_time(cal_node *c, int reps, mlsys_rng *rng) {
  size_t nx = 0, ny = 0, nw = 0, nb = 0, ws = 0, i;
  float *x = NULL, *y = NULL, *w = NULL, *b = NULL, *dx = NULL, *dw = NULL, *db = NULL;
  void *wsb = NULL;
  int64_t *idx = NULL;
  uint8_t *u8 = NULL;
  double t[64];
  int a, r, ok = 1;
  if (c->op == CAL_CONV || c->op == CAL_POOL) {
    const cnn_k_geom *G = &c->geom;
    nx = (size_t)G->N * G->C * G->H * G->W;
    ny = (size_t)G->N * G->K * cnn_k_oh(G) * cnn_k_ow(G);
    if (c->op == CAL_CONV) {
      nw = (size_t)G->K * (G->C / G->groups) * G->KH * G->KW;
      nb = (size_t)G->K;
      ws = cnn_k_conv_im2col_workspace(G);
    }
  } else if (c->op == CAL_LINEAR) {
    nx = (size_t)c->rows * c->in_f;
    ny = (size_t)c->rows * c->out_f;
    nw = (size_t)c->in_f * c->out_f;
    nb = (size_t)c->out_f;
    ws = cnn_k_linear_packed_workspace(c->rows, c->in_f);
    if (c->bnode >= 0 && cnn_k_linear_backward_packed_workspace(c->in_f, c->out_f) > ws)
      ws = cnn_k_linear_backward_packed_workspace(c->in_f, c->out_f);
  } else {
    nx = ny = c->count;
  }
  x = (float *)malloc((nx + 1) * sizeof(float));
  y = (float *)malloc((ny + 1) * sizeof(float));
  w = (float *)malloc((nw + 1) * sizeof(float));
  b = (float *)malloc((nb + 1) * sizeof(float));
  wsb = malloc(ws + 1);
  if (c->bnode >= 0) {   /* the backward's outputs (y doubles as dy: the kernels only read it) */
    dx = (float *)malloc((nx + 1) * sizeof(float));
    dw = (float *)malloc((nw + 1) * sizeof(float));
    db = (float *)malloc((nb + 1) * sizeof(float));
    if (!dx || !dw || !db) { ok = 0; goto done; }
  }
  if (c->op == CAL_POOL) idx = (int64_t *)malloc((ny + 1) * sizeof(int64_t));
  if (c->op == CAL_POOL || c->op == CAL_RELU) u8 = (uint8_t *)malloc(ny + 1);
  if (!x || !y || !w || !b || !wsb || (c->op == CAL_POOL && !idx) || ((c->op == CAL_POOL || c->op == CAL_RELU) && !u8)) {
    ok = 0;
    goto done;
  }
  for (i = 0; i < nx; i++) x[i] = (float)mlsys_rng_normal(rng);
  for (i = 0; i < nw; i++) w[i] = (float)(mlsys_rng_normal(rng) * 0.1);
  for (i = 0; i < nb; i++) b[i] = (float)mlsys_rng_normal(rng);
  if (reps > 64) reps = 64;
  for (a = 0; a < c->nimpl; a++) {
    for (r = -1; r < reps; r++) {   /* r = -1: the untimed warm-up */
      double t0;
      if (c->op == CAL_RELU && a == 1) memcpy(y, x, nx * sizeof(float));   /* untimed: the in-place input again */
      t0 = mlsys_now();
      switch (c->op) {
      case CAL_CONV:
        if (a == 0) cnn_k_conv2d_direct(y, x, w, b, &c->geom);
        else (void)cnn_k_conv2d_im2col(y, x, w, b, &c->geom, wsb, ws);
        break;
      case CAL_LINEAR:
        if (a == 0) cnn_k_linear_direct(y, x, w, b, c->rows, c->in_f, c->out_f);
        else (void)cnn_k_linear_packed(y, x, w, b, c->rows, c->in_f, c->out_f, wsb, ws);
        break;
      case CAL_RELU:
        if (a == 0) cnn_k_relu(y, x, c->count);
        else if (a == 1) cnn_k_relu(y, y, c->count);
        else cnn_k_relu_mask(y, u8, x, c->count);
        break;
      default:
        cnn_k_maxpool(y, a == 0 ? idx : NULL, a == 1 ? u8 : NULL, x, &c->geom);
      }
      if (r >= 0) t[r] = (mlsys_now() - t0) * 1e6;
    }
    qsort(t, (size_t)reps, sizeof t[0], cal_cmp);
    c->us[a] = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    if (!(c->us[a] > 0)) c->us[a] = 1e-3;   /* below the clock's resolution: 1 ns, so ratios stay finite */
  }
  for (a = 0; a < (c->bnode >= 0 ? c->bnimpl : 0); a++) {   /* the B node: dy = the forward's last output */
    float *dxp = c->bdx ? dx : NULL;
    for (r = -1; r < reps; r++) {
      double t0 = mlsys_now();
      if (c->op == CAL_CONV) {
        if (a == 0) cnn_k_conv2d_backward_direct(dxp, dw, db, x, w, y, &c->geom);
        else (void)cnn_k_conv2d_backward_im2col(dxp, dw, db, x, w, y, &c->geom, wsb, ws);
      } else {
        if (a == 0) cnn_k_linear_backward_direct(dxp, dw, db, x, w, y, c->rows, c->in_f, c->out_f);
        else (void)cnn_k_linear_backward_packed(dxp, dw, db, x, w, y, c->rows, c->in_f, c->out_f, wsb, ws);
      }
      if (r >= 0) t[r] = (mlsys_now() - t0) * 1e6;
    }
    qsort(t, (size_t)reps, sizeof t[0], cal_cmp);
    c->bus[a] = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    if (!(c->bus[a] > 0)) c->bus[a] = 1e-3;
  }
done:
  free(x); free(y); free(w); free(b); free(wsb); free(idx); free(u8); free(dx); free(dw); free(db);
  return ok;
}

static int cal_in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  const char *p = list;
  while (p && *p) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !strncmp(p, name, n)) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

int cmd_remat_calibrate(int argc, char **argv) {
  static const char *cmd = "remat calibrate";
  const char *graph = NULL, *out = NULL, *reps_s = NULL, *batch_s = NULL, *json = NULL, *help = NULL,
             *nodes_s = NULL, *maxs_s = NULL;
  cli_opt opts[] = {
      {"--graph", 1, &graph}, {"--out", 1, &out},     {"--reps", 1, &reps_s},     {"--batch", 1, &batch_s},
      {"--json", 0, &json},   {"--help", 0, &help},   {"--nodes", 1, &nodes_s},   {"--max-seconds", 1, &maxs_s},
  };
  mlsys_remat_graph g;
  cal_node *cn = NULL;
  int reps = 3, batch = 1, v, k, nc = 0, rc = CLI_OK, total = 0;
  double max_seconds = INFINITY, t0, last;
  char why[256], nb[64], skip_why[64][256];
  int skip[64], nskip = 0;
  FILE *f;
  mlsys_rng rng;
  if (cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd) != CLI_OK) return CLI_USAGE;
  if (help) { fputs(calibrate_help, stdout); return CLI_OK; }
  if (!graph) return cli_usage_error(cmd, "--graph FILE is required");
  if (!out) return cli_usage_error(cmd, "--out FILE is required (the calibrated graph)");
  if (reps_s) {
    char *e;
    long x = strtol(reps_s, &e, 10);
    if (e == reps_s || *e || x < 1 || x > 64) return cli_usage_error(cmd, "--reps needs 1..64, got '%s'", reps_s);
    reps = (int)x;
  }
  if (batch_s) {
    char *e;
    long x = strtol(batch_s, &e, 10);
    if (e == batch_s || *e || x < 1 || x > 4096) return cli_usage_error(cmd, "--batch needs 1..4096, got '%s'", batch_s);
    batch = (int)x;
  }
  if (maxs_s && (cli_parse_double(maxs_s, &max_seconds) || !(max_seconds >= 0)))
    return cli_usage_error(cmd, "--max-seconds needs a number >= 0, got '%s'", maxs_s);
  if (mlsys_remat_graph_load(graph, &g) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if (!g.info) {
    mlsys_remat_graph_free(&g);
    return cli_fail(cmd, "%s: the graph has no shapes (no node has \"shape\"); export it with "
                    "tools/export_torch_graph.py", graph);
  }
  if (nodes_s) {   /* every listed name must be a node */
    const char *p = nodes_s;
    while (p && *p) {
      const char *e = strchr(p, ',');
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
      if (mlsys_dag_find(&g.dag, name) < 0) {
        mlsys_remat_graph_free(&g);
        return cli_fail(cmd, "%s: --nodes names '%s', which is not a node of the graph", graph, name);
      }
      p = e ? e + 1 : NULL;
    }
  }
  if (!(cn = (cal_node *)calloc((size_t)g.dag.n + 1, sizeof *cn))) {
    mlsys_remat_graph_free(&g);
    return cli_fail(cmd, "out of memory");
  }
  for (v = 0; v < g.dag.n; v++) {
    const char *name = mlsys_remat_node_name(&g, v, nb, sizeof nb);
    int listed = nodes_s && cal_in_list(nodes_s, name);
    if (nodes_s && !listed) continue;
    if (!listed && (g.kind[v] != MLSYS_REMAT_F || cal_op(&g, v) < 0 || g.info[v].ndim == 0)) continue;
    if (cal_setup(&g, v, batch, &cn[nc], why, sizeof why)) {
      if (listed) {   /* asked for by name: an error */
        rc = cli_fail(cmd, "%s: node %d '%s' (%s): %s", graph, v, name, g.op && g.op[v] ? g.op[v] : "no op", why);
        goto done;
      }
      /* found by the scan: skipped with the reason (e.g. GoogLeNet's ceil_mode pools, whose output the floor
         formula of our kernels does not give); the node keeps what it had */
      fprintf(stderr, "calibrate: skipping node %d '%s' (%s): %s\n", v, name, g.op[v], why);
      if (nskip < 64) { skip[nskip] = v; snprintf(skip_why[nskip], sizeof skip_why[nskip], "%s", why); }
      nskip++;
      continue;
    }
    nc++;
  }
  if (nc == 0) {
    rc = cli_fail(cmd, "%s: no forward Conv2d, Linear, ReLU or MaxPool2d node has a usable shape%s", graph,
                  nskip ? " (see the skipped nodes above)" : "");
    goto done;
  }
  mlsys_rng_seed(&rng, 0xCA11B8A7Eull);
  t0 = last = mlsys_now();
  for (k = 0; k < nc; k++) {
    double now = mlsys_now();
    int r = now - t0 >= max_seconds ? 1 : reps;
    if (now - last >= 5) {
      fprintf(stderr, "calibrate: node %d of %d (%s), %.0f s\n", k + 1, nc,
              mlsys_remat_node_name(&g, cn[k].node, nb, sizeof nb), now - t0);
      last = now;
    }
    if (!cal_time(&cn[k], r, &rng)) {
      rc = cli_fail(cmd, "out of memory timing node '%s'", mlsys_remat_node_name(&g, cn[k].node, nb, sizeof nb));
      goto done;
    }
  }
  for (k = 0; k < nc; k++) {
    mlsys_remat_node_info *in = &g.info[cn[k].node];
    double cost = g.dag.cost[cn[k].node];
    in->nimpl = cn[k].nimpl;
    for (v = 0; v < cn[k].nimpl; v++) {
      memset(&in->impl[v], 0, sizeof in->impl[v]);
      snprintf(in->impl[v].name, sizeof in->impl[v].name, "%s", cn[k].name[v]);
      in->impl[v].cost = v == 0 ? cost : cost * cn[k].us[v] / cn[k].us[0];
      in->impl[v].workspace = cn[k].ws[v];
      in->impl[v].fixed_workspace = cn[k].wsfix[v];
    }
    total += cn[k].nimpl;
    if (cn[k].bnode >= 0) {   /* the B node's, scaled the same way from its own graph cost */
      mlsys_remat_node_info *bi = &g.info[cn[k].bnode];
      double bcost = g.dag.cost[cn[k].bnode];
      bi->nimpl = cn[k].bnimpl;
      for (v = 0; v < cn[k].bnimpl; v++) {
        memset(&bi->impl[v], 0, sizeof bi->impl[v]);
        snprintf(bi->impl[v].name, sizeof bi->impl[v].name, "%s", cn[k].bname[v]);
        bi->impl[v].cost = v == 0 ? bcost : bcost * cn[k].bus[v] / cn[k].bus[0];
        bi->impl[v].workspace = cn[k].bws[v];
        bi->impl[v].fixed_workspace = cn[k].bwsfix[v];
      }
      total += cn[k].bnimpl;
    }
  }
  if (!(f = fopen(out, "w"))) { rc = cli_fail(cmd, "%s: cannot write", out); goto done; }
  if (mlsys_remat_graph_write(&g, f, 1) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
  if (fclose(f) != 0 && rc == CLI_OK) rc = cli_fail(cmd, "%s: write failed", out);
  if (rc != CLI_OK) goto done;
  if (json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "graph"); mlsys_jw_str(&w, graph);
    mlsys_jw_key(&w, "out"); mlsys_jw_str(&w, out);
    mlsys_jw_key(&w, "batch_timed"); mlsys_jw_i64(&w, batch);
    mlsys_jw_key(&w, "reps"); mlsys_jw_i64(&w, reps);
    mlsys_jw_key(&w, "nodes");
    mlsys_jw_array(&w);
    for (k = 0; k < nc; k++) {
      const mlsys_remat_node_info *in = &g.info[cn[k].node];
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "node"); mlsys_jw_str(&w, mlsys_remat_node_name(&g, cn[k].node, nb, sizeof nb));
      mlsys_jw_key(&w, "op"); mlsys_jw_str(&w, g.op[cn[k].node]);
      mlsys_jw_key(&w, "impls");
      mlsys_jw_array(&w);
      for (v = 0; v < cn[k].nimpl; v++) {
        mlsys_jw_object(&w);
        mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, cn[k].name[v]);
        mlsys_jw_key(&w, "us"); mlsys_jw_double(&w, cn[k].us[v]);
        mlsys_jw_key(&w, "cost"); mlsys_jw_double(&w, in->impl[v].cost);
        mlsys_jw_key(&w, "workspace"); mlsys_jw_u64(&w, in->impl[v].workspace);
        mlsys_jw_end(&w);
      }
      mlsys_jw_end(&w);
      if (cn[k].bnode >= 0) {
        const mlsys_remat_node_info *bi = &g.info[cn[k].bnode];
        mlsys_jw_key(&w, "backward");
        mlsys_jw_object(&w);
        mlsys_jw_key(&w, "node"); mlsys_jw_str(&w, mlsys_remat_node_name(&g, cn[k].bnode, nb, sizeof nb));
        mlsys_jw_key(&w, "dx"); mlsys_jw_bool(&w, cn[k].bdx);
        mlsys_jw_key(&w, "impls");
        mlsys_jw_array(&w);
        for (v = 0; v < cn[k].bnimpl; v++) {
          mlsys_jw_object(&w);
          mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, cn[k].bname[v]);
          mlsys_jw_key(&w, "us"); mlsys_jw_double(&w, cn[k].bus[v]);
          mlsys_jw_key(&w, "cost"); mlsys_jw_double(&w, bi->impl[v].cost);
          mlsys_jw_key(&w, "workspace"); mlsys_jw_u64(&w, bi->impl[v].workspace);
          mlsys_jw_end(&w);
        }
        mlsys_jw_end(&w);
        mlsys_jw_end(&w);
      }
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "skipped");
    mlsys_jw_array(&w);
    for (k = 0; k < nskip && k < 64; k++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "node"); mlsys_jw_str(&w, mlsys_remat_node_name(&g, skip[k], nb, sizeof nb));
      mlsys_jw_key(&w, "why"); mlsys_jw_str(&w, skip_why[k]);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w) != MLSYS_OK) rc = cli_fail(cmd, "writing the JSON failed");
  } else {
    printf("%-24s %-10s %-13s %12s %14s %12s\n", "node", "op", "impl", "us", "cost", "workspace");
    for (k = 0; k < nc; k++) {
      for (v = 0; v < cn[k].nimpl; v++)
        printf("%-24s %-10s %-13s %12.2f %14.6g %12llu\n",
               v ? "" : mlsys_remat_node_name(&g, cn[k].node, nb, sizeof nb), v ? "" : g.op[cn[k].node],
               cn[k].name[v], cn[k].us[v], g.info[cn[k].node].impl[v].cost,
               (unsigned long long)g.info[cn[k].node].impl[v].workspace);
      for (v = 0; v < (cn[k].bnode >= 0 ? cn[k].bnimpl : 0); v++)
        printf("%-24s %-10s %-13s %12.2f %14.6g %12llu\n",
               v ? "" : mlsys_remat_node_name(&g, cn[k].bnode, nb, sizeof nb), v ? "" : "(backward)",
               cn[k].bname[v], cn[k].bus[v], g.info[cn[k].bnode].impl[v].cost,
               (unsigned long long)g.info[cn[k].bnode].impl[v].workspace);
    }
    printf("%d nodes, %d implementations timed at batch %d (median of %d), %d skipped; cost unit %s -> %s\n", nc,
           total, batch, reps, nskip, g.cost_unit ? g.cost_unit : "?", out);
  }
done:
  free(cn);
  mlsys_remat_graph_free(&g);
  return rc;
}
