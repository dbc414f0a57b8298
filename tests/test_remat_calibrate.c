/* `mlsys remat calibrate` (cli/remat_calibrate.c) on tests/data/graphs/smallcnn_b8.json (exported with shapes): the
   structure of what it writes, not the times (which depend on the machine): every Conv2d gets direct + im2col with
   the im2col workspace computed here from the node's attrs (C·KH·KW·OH·OW·4), every Linear direct + packed
   (workspace = its input's bytes), ReLU three and MaxPool2d two implementations, the B node of each conv (direct +
   im2col, the forward's column buffer) and linear (direct + packed, the weight's bytes) two, dx computed only
   where the B node has output bytes, the default implementation's cost
   equals the graph's, all costs > 0, the output re-reads with every other field unchanged, and MONeT takes the conv
   impls (forward) and the B nodes' impls (backward paths, the cheapest chosen when memory does not bind). Bad input: named errors, exit 1; a scanned node whose attrs our kernels cannot reproduce is skipped. Runs build/mlsys (or $MLSYS_BIN) from the repository root. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#define SMALLCNN "tests/data/graphs/smallcnn_b8.json"

static void tmp_path(char *buf, size_t len, const char *tag) {
  snprintf(buf, len, "/tmp/mlsys_cal_%s_%d.json", tag, (int)getpid());
}

/* every field but info: equal */
static int same_graph(const mlsys_remat_graph *a, const mlsys_remat_graph *b) {
  int v, j;
  if (a->dag.n != b->dag.n || a->batch != b->batch || a->nfixed != b->nfixed || a->loss != b->loss) return 0;
  if (strcmp(a->cost_unit, b->cost_unit) || strcmp(a->name, b->name)) return 0;
  for (j = 0; j < a->nfixed; j++)
    if (strcmp(a->fixed_name[j], b->fixed_name[j]) || a->fixed_bytes[j] != b->fixed_bytes[j]) return 0;
  for (v = 0; v < a->dag.n; v++) {
    if (a->dag.cost[v] != b->dag.cost[v] || a->dag.size[v] != b->dag.size[v] || a->kind[v] != b->kind[v] ||
        a->flags[v] != b->flags[v] || a->fwd_of[v] != b->fwd_of[v] || strcmp(a->dag.name[v], b->dag.name[v]) ||
        strcmp(a->op[v], b->op[v]) || a->dag.in_off[v + 1] != b->dag.in_off[v + 1])
      return 0;
    for (j = a->dag.in_off[v]; j < a->dag.in_off[v + 1]; j++)
      if (a->dag.in[j] != b->dag.in[j]) return 0;
    /* shapes and attrs carried over */
    if (a->info[v].ndim != b->info[v].ndim || memcmp(a->info[v].shape, b->info[v].shape, sizeof a->info[v].shape) ||
        a->info[v].in_ndim != b->info[v].in_ndim || a->info[v].kernel[0] != b->info[v].kernel[0] ||
        a->info[v].pad[1] != b->info[v].pad[1] || a->info[v].stride[0] != b->info[v].stride[0])
      return 0;
  }
  return 1;
}

static void check_calibrated(const mlsys_remat_graph *g, const mlsys_remat_graph *c) {
  int v, k, nconv = 0, nlin = 0, nrelu = 0, npool = 0, nbwd = 0;
  for (v = 0; v < c->dag.n; v++) {
    const mlsys_remat_node_info *in = &c->info[v];
    const char *op = c->op[v];
    if (c->kind[v] == MLSYS_REMAT_B && c->fwd_of[v] >= 0 &&
        (!strcmp(c->op[c->fwd_of[v]], "Conv2d") || !strcmp(c->op[c->fwd_of[v]], "Linear"))) {
      /* the backward of a conv / linear: direct + im2col (the forward's column buffer) or direct + packed (the
         weight transposed, out_f·in_f·4 bytes); the default costs the graph's cost */
      const mlsys_remat_node_info *fi = &c->info[c->fwd_of[v]];
      int conv = !strcmp(c->op[c->fwd_of[v]], "Conv2d");
      nbwd++;
      REQUIRE(in->nimpl == 2);
      CHECK_STR(in->impl[0].name, "direct");
      CHECK_STR(in->impl[1].name, conv ? "im2col" : "packed");
      CHECK(in->impl[0].cost == g->dag.cost[v] && in->impl[0].workspace == 0);
      CHECK(in->impl[1].cost > 0 && isfinite(in->impl[1].cost));
      if (conv) CHECK(in->impl[1].workspace == fi->impl[1].workspace);
      else CHECK(in->impl[1].workspace == (uint64_t)(fi->in_shape[1] * fi->shape[1] * 4));
      CHECK(!in->impl[0].fixed_workspace && in->impl[1].fixed_workspace);   /* neither buffer grows with N */
      continue;
    }
    if (c->kind[v] != MLSYS_REMAT_F || (strcmp(op, "Conv2d") && strcmp(op, "Linear") && strcmp(op, "ReLU") &&
                                        strcmp(op, "MaxPool2d"))) {
      CHECK_MSG(in->nimpl == 0, "node %d (%s) got impls", v, op);
      continue;
    }
    for (k = 0; k < in->nimpl; k++) CHECK_MSG(in->impl[k].cost > 0 && isfinite(in->impl[k].cost), "node %d impl %d", v, k);
    CHECK(in->impl[0].cost == g->dag.cost[v] && in->impl[0].workspace == 0);   /* default = the graph's cost */
    if (!strcmp(op, "Conv2d")) {
      /* OH, OW from the torch formula with the attrs; one sample's and one group's columns */
      int64_t OH = (in->in_shape[2] + 2 * in->pad[0] - in->dilation[0] * (in->kernel[0] - 1) - 1) / in->stride[0] + 1;
      int64_t OW = (in->in_shape[3] + 2 * in->pad[1] - in->dilation[1] * (in->kernel[1] - 1) - 1) / in->stride[1] + 1;
      uint64_t ws = (uint64_t)(in->in_shape[1] / (in->groups ? in->groups : 1) * in->kernel[0] * in->kernel[1] * OH *
                               OW * 4);
      nconv++;
      CHECK_EQ_INT(in->nimpl, 2);
      CHECK_STR(in->impl[0].name, "direct");
      CHECK_STR(in->impl[1].name, "im2col");
      CHECK_MSG(in->impl[1].workspace == ws, "node %d: workspace %llu, formula %llu", v,
                (unsigned long long)in->impl[1].workspace, (unsigned long long)ws);
      CHECK(in->impl[1].fixed_workspace);   /* one sample's columns */
    } else if (!strcmp(op, "Linear")) {
      nlin++;
      CHECK_EQ_INT(in->nimpl, 2);
      CHECK_STR(in->impl[1].name, "packed");
      CHECK(in->impl[1].workspace == (uint64_t)(in->in_shape[0] * in->in_shape[1] * 4));
      CHECK(!in->impl[1].fixed_workspace);  /* a copy of the whole batch's input */
    } else if (!strcmp(op, "ReLU")) {
      nrelu++;
      CHECK_EQ_INT(in->nimpl, 3);
      CHECK(!strcmp(in->impl[0].name, "out-of-place") && !strcmp(in->impl[1].name, "inplace") &&
            !strcmp(in->impl[2].name, "mask"));
    } else {
      npool++;
      CHECK_EQ_INT(in->nimpl, 2);
      CHECK(!strcmp(in->impl[0].name, "idx64") && !strcmp(in->impl[1].name, "idx8"));
    }
  }
  CHECK(nconv == 2 && nlin == 2 && nrelu == 3 && npool == 2 && nbwd == 4);
}

TEST(calibrate_smallcnn) {
  char out[128], arg[512];
  mlsys_remat_graph g, c;
  mlsys_json_doc doc;
  run_result r;
  tmp_path(out, sizeof out, "a");
  snprintf(arg, sizeof arg, "remat calibrate --graph " SMALLCNN " --out %s --reps 1 --json", out);
  r = run(arg);
  CHECK_MSG(r.code == 0, "exit %d: %s", r.code, r.err ? r.err : "");
  REQUIRE_OK(mlsys_remat_graph_load(SMALLCNN, &g));
  REQUIRE_OK(mlsys_remat_graph_load(out, &c));
  REQUIRE(c.info != NULL);
  CHECK(same_graph(&g, &c));
  check_calibrated(&g, &c);
  /* the JSON report: 9 nodes, each impl with its measured µs and the cost written */
  REQUIRE(r.out != NULL);
  if (mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK) {
    const mlsys_json *nodes = mlsys_json_get(doc.root, "nodes");
    const mlsys_json *bw;
    int i, k, nimpl = 0, nbimpl = 0;
    REQUIRE(nodes && nodes->type == MLSYS_JSON_ARRAY);
    CHECK_EQ_INT(nodes->count, 9);
    for (i = 0; i < nodes->count; i++) {
      const mlsys_json *im = mlsys_json_get(&nodes->items[i], "impls");
      int v = mlsys_dag_find(&c.dag, mlsys_json_get(&nodes->items[i], "node")->str);
      REQUIRE(im && v >= 0);
      for (k = 0; k < im->count; k++, nimpl++) {
        CHECK(mlsys_json_get(&im->items[k], "us")->num > 0);
        CHECK(mlsys_json_get(&im->items[k], "cost")->num == c.info[v].impl[k].cost);
      }
      if ((bw = mlsys_json_get(&nodes->items[i], "backward")) != NULL) {   /* conv / linear: their B node's */
        const mlsys_json *bim = mlsys_json_get(bw, "impls"), *dx = mlsys_json_get(bw, "dx");
        int b = mlsys_dag_find(&c.dag, mlsys_json_get(bw, "node")->str);
        REQUIRE(bim && dx && b >= 0 && c.fwd_of[b] == v);
        /* grad_conv1 has no output bytes (its input is fixed memory): no dx computed */
        CHECK(dx->type == MLSYS_JSON_BOOL && dx->boolean == (c.dag.size[b] > 0));
        for (k = 0; k < bim->count; k++, nbimpl++) {
          CHECK(mlsys_json_get(&bim->items[k], "us")->num > 0);
          CHECK(mlsys_json_get(&bim->items[k], "cost")->num == c.info[b].impl[k].cost);
        }
      }
    }
    CHECK_EQ_INT(nimpl, 21);
    CHECK_EQ_INT(nbimpl, 8);
    mlsys_json_doc_free(&doc);
  } else {
    CHECK_MSG(0, "stdout is not JSON: %s", mlsys_last_error());
  }
  /* MONeT (conv algorithms on) takes the conv/linear impls as they are */
  {
    mlsys_remat_monet_catalogue cat;
    mlsys_remat_monet_graph sg;
    int v;
    memset(&cat, 0, sizeof cat);
    cat.mode = MLSYS_REMAT_MONET_ALL;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&c, &cat, &sg));
    for (v = 0; v < sg.V; v++) {
      int src = sg.src[v];
      if (src < 0 || c.kind[src] != MLSYS_REMAT_F || strcmp(c.op[src], "Conv2d")) continue;
      CHECK_EQ_INT(sg.impl_off[v + 1] - sg.impl_off[v], 2);
      CHECK(sg.impl[sg.impl_off[v] + 1].cost == c.info[src].impl[1].cost);
      CHECK(sg.impl[sg.impl_off[v] + 1].workspace == c.info[src].impl[1].workspace);
    }
    mlsys_remat_monet_graph_free(&sg);
  }
  /* ... and its backward paths are the B nodes' impls, exactly: solved without a binding budget, every conv /
     linear backward stage runs the impl of least cost, and the schedule's backward cost is the sum of the file's
     costs of the chosen impls (and the graph's costs elsewhere) */
  {
    mlsys_remat_monet_catalogue cat;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_schedule s;
    mlsys_remat_monet_opts o;
    mlsys_remat_monet_sim sim;
    double bwd = 0;
    int t, nb = 0;
    memset(&cat, 0, sizeof cat);
    cat.mode = MLSYS_REMAT_MONET_ALL;
    REQUIRE_OK(mlsys_remat_monet_graph_build(&c, &cat, &sg));
    memset(&o, 0, sizeof o);
    o.time_limit = 600;
    o.cost_unit = 1;   /* costs are whole flops scaled by measured ratios: exact enough at 1 flop */
    REQUIRE_OK(mlsys_remat_monet_solve(&sg, (uint64_t)1 << 40, &o, &s));
    REQUIRE_OK(mlsys_remat_monet_simulate(&sg, &s, MLSYS_REMAT_MONET_SIM_EAGER, &sim));
    for (t = 1; t < sg.T; t++) {
      int b = sg.src[sg.V + t - 1], k, q = sg.path_off[t] + s.M[t];
      const mlsys_remat_node_info *bi = &c.info[b];
      if (bi->nimpl == 0) { bwd += c.dag.cost[b]; continue; }
      nb++;
      REQUIRE(sg.path_off[t + 1] - sg.path_off[t] == bi->nimpl);
      for (k = 0; k < bi->nimpl; k++) {
        CHECK(sg.path_cost[sg.path_off[t] + k] == bi->impl[k].cost);
        CHECK(sg.path_ws[sg.path_off[t] + k] == bi->impl[k].workspace);
        CHECK(sg.path_kind[sg.path_off[t] + k] == (k ? 'c' : 'g'));
      }
      CHECK_MSG(sg.path_cost[q] == fmin(bi->impl[0].cost, bi->impl[1].cost), "%s: path %d of cost %g",
                c.dag.name[b], s.M[t], sg.path_cost[q]);
      bwd += bi->impl[s.M[t]].cost;
    }
    CHECK_EQ_INT(nb, 4);
    CHECK(sim.valid);
    CHECK_NEAR(sim.bwd_cost, bwd, 1e-9 * bwd);
    mlsys_remat_monet_schedule_free(&s);
    mlsys_remat_monet_graph_free(&sg);
  }
  run_free(&r);
  /* at another timed batch and restricted to two nodes: the same structure for those, nothing for the others */
  snprintf(arg, sizeof arg, "remat calibrate --graph " SMALLCNN " --out %s --reps 1 --batch 2 --nodes conv2,pool1",
           out);
  r = run(arg);
  CHECK_MSG(r.code == 0, "exit %d: %s", r.code, r.err ? r.err : "");
  {
    mlsys_remat_graph d;
    int v;
    REQUIRE_OK(mlsys_remat_graph_load(out, &d));
    for (v = 0; v < d.dag.n; v++) {
      int want = !strcmp(d.dag.name[v], "conv2") || !strcmp(d.dag.name[v], "pool1") ||
                 !strcmp(d.dag.name[v], "grad_conv2") ? 2 : 0;
      CHECK_MSG(d.info[v].nimpl == want, "node %s: %d impls", d.dag.name[v], d.info[v].nimpl);
      if (want) CHECK(d.info[v].impl[1].workspace == c.info[v].impl[1].workspace);
    }
    mlsys_remat_graph_free(&d);
  }
  run_free(&r);
  unlink(out);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&c);
}

TEST(calibrate_bad_input) {
  static const struct { const char *args; int code; const char *want; } cases[] = {
      {"--graph tests/data/remat/t8.json --out %s", 1, "has no shapes"},
      {"--graph " SMALLCNN " --out %s --nodes conv1,nosuch", 1, "'nosuch', which is not a node"},
      {"--graph " SMALLCNN " --out %s --nodes loss", 1, "node 10 'loss'"},
      {"--graph " SMALLCNN " --out %s --nodes flatten", 1, "has no C implementation"},
      {"--graph %s.bad --out %s --nodes conv1", 1, "node 0 'conv1' (Conv2d): output 32x32, but the attrs give 16x16"},
      {"--graph %s.bad --out %s", 0, "skipping node 0 'conv1' (Conv2d): output 32x32, but the attrs give 16x16"},
      {"--graph " SMALLCNN " --out %s --reps 0", 2, "--reps"},
      {"--graph " SMALLCNN, 2, "--out FILE is required"},
      {"--graph /nonexistent.json --out %s", 1, "nonexistent"},
  };
  char out[128], bad[160], arg[600], fmt[300];
  size_t i;
  FILE *f;
  char *text;
  size_t len;
  tmp_path(out, sizeof out, "b");
  /* a copy of SmallCNN whose conv1 claims stride 2 while its output stays 32x32 */
  snprintf(bad, sizeof bad, "%s.bad", out);
  REQUIRE_OK(mlsys_read_file(SMALLCNN, &text, &len));
  {
    char *p = strstr(text, "\"stride\": [1, 1]");
    REQUIRE(p != NULL);
    memcpy(p, "\"stride\": [2, 2]", 16);
  }
  REQUIRE((f = fopen(bad, "w")) != NULL);
  fwrite(text, 1, len, f);
  fclose(f);
  mlsys_free(text);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r;
    if (strstr(cases[i].args, "%s.bad")) snprintf(fmt, sizeof fmt, cases[i].args, out, out);
    else snprintf(fmt, sizeof fmt, cases[i].args, out);
    snprintf(arg, sizeof arg, "remat calibrate %s", fmt);
    r = run(arg);
    CHECK_MSG(r.code == cases[i].code, "case %zu: exit %d, want %d (%s)", i, r.code, cases[i].code, r.err ? r.err : "");
    CHECK_MSG(r.err && strstr(r.err, cases[i].want), "case %zu: stderr '%s' lacks '%s'", i, r.err ? r.err : "",
              cases[i].want);
    run_free(&r);
    if (cases[i].code == 0) {   /* the skip: conv1 and its backward keep no impls; the other eight forward nodes
                                   and the backward nodes of conv2, fc1 and fc2 got theirs */
      mlsys_remat_graph d;
      int v, n = 0;
      REQUIRE_OK(mlsys_remat_graph_load(out, &d));
      for (v = 0; v < d.dag.n; v++) n += d.info[v].nimpl > 0;
      CHECK(d.info[0].nimpl == 0 && d.info[20].nimpl == 0 && n == 11);
      mlsys_remat_graph_free(&d);
    }
  }
  unlink(bad);
  unlink(out);
}

TEST_MAIN()
