/* Tests for the optional per-node information of remat graphs (mlsys_remat.h section 1, GRAPH FORMATS: "shape",
   "attrs", "impls" → mlsys_remat_node_info): JSON round trip, every named reader error, batch scaling, what the
   other graph builders do with it, the exported SmallCNN's shapes against its definition, and MONeT's use of an F
   node's impls (section 9), and the impls' optional "fixed_workspace" (read, written only when true, kept by
   batch scaling). Run from the repository root. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

/* node 0 gets X0 appended, node 2 (the B node) X2, node 1 (L) X1 */
static char *graph_text(const char *x0, const char *x1, const char *x2) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "{\"format\": \"mlsys-remat-graph\", \"version\": 1, \"batch\": 2, \"units\": {\"cost\": \"flop\"},\n"
           " \"nodes\": [\n"
           "  {\"id\": 0, \"kind\": \"F\", \"name\": \"c\", \"op\": \"Conv2d\", \"cost\": 100, \"mem\": 64, \"deps\": []%s},\n"
           "  {\"id\": 1, \"kind\": \"L\", \"name\": \"loss\", \"cost\": 1, \"mem\": 4, \"deps\": [0]%s},\n"
           "  {\"id\": 2, \"kind\": \"B\", \"name\": \"gc\", \"cost\": 200, \"mem\": 0, \"deps\": [0, 1], \"fwd_of\": 0%s}\n"
           "]}\n",
           x0, x1, x2);
  return buf;
}

static mlsys_status parse(const char *text, mlsys_remat_graph *g) {
  return mlsys_remat_graph_parse(text, strlen(text), "g.json", g);
}

static const char *RICH0 =
    ", \"shape\": [2, 8, 30, 30], \"attrs\": {\"in_shape\": [2, 3, 32, 32], \"kernel\": [3, 5], \"stride\": [1, 2], "
    "\"padding\": [0, 1], \"dilation\": [1, 1], \"groups\": 1}, \"impls\": [{\"name\": \"direct\", \"cost\": 100, "
    "\"workspace\": 0}, {\"name\": \"im2col\", \"cost\": 62.5, \"workspace\": 5400}]";
static const char *RICH2 = ", \"impls\": [{\"name\": \"bwd_a\", \"cost\": 190.25}]";

static int info_eq(const mlsys_remat_node_info *a, const mlsys_remat_node_info *b) {
  int k;
  if (a->ndim != b->ndim || a->in_ndim != b->in_ndim || a->nimpl != b->nimpl || a->groups != b->groups) return 0;
  if (memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) ||
      memcmp(a->in_shape, b->in_shape, (size_t)a->in_ndim * sizeof(int64_t)))
    return 0;
  for (k = 0; k < 2; k++)
    if (a->kernel[k] != b->kernel[k] || a->stride[k] != b->stride[k] || a->pad[k] != b->pad[k] ||
        a->dilation[k] != b->dilation[k])
      return 0;
  for (k = 0; k < a->nimpl; k++)
    if (strcmp(a->impl[k].name, b->impl[k].name) || memcmp(&a->impl[k].cost, &b->impl[k].cost, sizeof(double)) ||
        a->impl[k].workspace != b->impl[k].workspace || a->impl[k].fixed_workspace != b->impl[k].fixed_workspace)
      return 0;
  return 1;
}

static char *write_mem(const mlsys_remat_graph *g, int json, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  if (mlsys_remat_graph_write(g, f, json) != MLSYS_OK) { fclose(f); free(buf); return NULL; }
  fclose(f);
  return buf;
}

TEST(parse_reads_every_field) {
  mlsys_remat_graph g;
  const mlsys_remat_node_info *c;
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  REQUIRE(g.info != NULL);
  c = &g.info[0];
  CHECK_EQ_INT(c->ndim, 4);
  CHECK(c->shape[0] == 2 && c->shape[1] == 8 && c->shape[2] == 30 && c->shape[3] == 30);
  CHECK_EQ_INT(c->in_ndim, 4);
  CHECK(c->in_shape[1] == 3 && c->in_shape[3] == 32);
  CHECK(c->kernel[0] == 3 && c->kernel[1] == 5 && c->stride[0] == 1 && c->stride[1] == 2);
  CHECK(c->pad[0] == 0 && c->pad[1] == 1 && c->dilation[0] == 1 && c->groups == 1);
  CHECK_EQ_INT(c->nimpl, 2);
  CHECK_STR(c->impl[1].name, "im2col");
  CHECK(c->impl[1].cost == 62.5 && c->impl[1].workspace == 5400 && c->impl[0].workspace == 0);
  CHECK_EQ_INT(g.info[1].ndim + g.info[1].nimpl + g.info[1].in_ndim, 0);   /* the L node: nothing */
  CHECK_EQ_INT(g.info[2].nimpl, 1);
  CHECK_STR(g.info[2].impl[0].name, "bwd_a");
  CHECK(g.info[2].impl[0].cost == 190.25 && g.info[2].impl[0].workspace == 0);   /* default workspace 0 */
  mlsys_remat_graph_free(&g);
}

TEST(files_without_the_keys_have_no_info) {
  mlsys_remat_graph g;
  REQUIRE_OK(parse(graph_text("", "", ""), &g));
  CHECK(g.info == NULL);
  mlsys_remat_graph_free(&g);
  /* null counts as absent */
  REQUIRE_OK(parse(graph_text(", \"shape\": null", "", ""), &g));
  CHECK(g.info == NULL);
  mlsys_remat_graph_free(&g);
}

/* write → parse → write: the info survives and the second text equals the first byte for byte */
TEST(json_round_trip) {
  mlsys_remat_graph g, h, k;
  size_t l1, l2;
  char *t1, *t2;
  int v;
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  REQUIRE((t1 = write_mem(&g, 1, &l1)) != NULL);
  REQUIRE_OK(mlsys_remat_graph_parse(t1, l1, "w1", &h));
  REQUIRE(h.info != NULL);
  for (v = 0; v < 3; v++) CHECK_MSG(info_eq(&g.info[v], &h.info[v]), "node %d differs after the round trip", v);
  REQUIRE((t2 = write_mem(&h, 1, &l2)) != NULL);
  CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
  /* awkward values: 6 dims, zero dims, the largest dim, max impls, a cost that needs 17 digits */
  {
    char x0[2048], x2[1024];
    int i, n = 0;
    n += snprintf(x0 + n, sizeof x0 - (size_t)n, ", \"shape\": [1, 0, 3, 4, 5, 281474976710656], \"impls\": [");
    for (i = 0; i < MLSYS_REMAT_MONET_MAX_IMPLS; i++)
      n += snprintf(x0 + n, sizeof x0 - (size_t)n, "%s{\"name\": \"impl_%d_abcdefg\", \"cost\": %.17g, \"workspace\": %d}",
                    i ? ", " : "", i, 0.1 * (i + 1), i * 1000);
    snprintf(x0 + n, sizeof x0 - (size_t)n, "]");
    snprintf(x2, sizeof x2, ", \"attrs\": {\"padding\": [0, 0]}");
    REQUIRE_OK(parse(graph_text(x0, "", x2), &k));
    free(t1);
    REQUIRE((t1 = write_mem(&k, 1, &l1)) != NULL);
    mlsys_remat_graph_free(&h);
    REQUIRE_OK(mlsys_remat_graph_parse(t1, l1, "w3", &h));
    for (v = 0; v < 3; v++) CHECK_MSG(info_eq(&k.info[v], &h.info[v]), "node %d differs (awkward values)", v);
    CHECK_EQ_INT(h.info[0].nimpl, MLSYS_REMAT_MONET_MAX_IMPLS);
    CHECK_STR(h.info[0].impl[7].name, "impl_7_abcdefg");
    CHECK(h.info[0].shape[5] == 281474976710656ll);
    mlsys_remat_graph_free(&k);
  }
  free(t1); free(t2);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
}

TEST(text_form_drops_info) {
  mlsys_remat_graph g, h;
  size_t l;
  char *t;
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  REQUIRE((t = write_mem(&g, 0, &l)) != NULL);
  REQUIRE_OK(mlsys_remat_graph_parse(t, l, "txt", &h));
  CHECK(h.info == NULL);
  CHECK_EQ_INT(h.dag.n, 3);
  free(t);
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
}

/* Every named error: which node, where (line:col of the offending value) and what. */
TEST(named_errors) {
  static const struct { const char *x0, *x1, *x2, *want; } cases[] = {
      {", \"shape\": 5", "", "", "g.json:3:"},
      {", \"shape\": 5", "", "", "node 0: \"shape\" must be an array of integers, got number"},
      {", \"shape\": [1, 2, 3, 4, 5, 6, 7]", "", "", "node 0: \"shape\" has 7 dims; the limit is 6"},
      {", \"shape\": [2, -1]", "", "", "node 0: \"shape\"[1] is -1; it must be >= 0"},
      {", \"shape\": [2, 1.5]", "", "", "node 0: \"shape\"[1] must be an integer"},
      {", \"shape\": [2, \"8\"]", "", "", "node 0: \"shape\"[1] must be an integer"},
      {", \"shape\": [281474976710657]", "", "", "node 0: \"shape\"[0] is 281474976710657, over the limit"},
      {", \"attrs\": []", "", "", "'attrs' must be"},
      {", \"attrs\": {\"in_shape\": [1, 2, 3, 4, 5, 6, 7]}", "", "", "node 0: \"in_shape\" has 7 dims"},
      {", \"attrs\": {\"in_shape\": [-3]}", "", "", "node 0: \"in_shape\"[0] is -3"},
      {", \"attrs\": {\"kernel\": [3]}", "", "", "node 0: \"kernel\" has 1 dims; it needs exactly 2"},
      {", \"attrs\": {\"kernel\": [0, 3]}", "", "", "node 0: \"kernel\"[0] is 0; it must be >= 1"},
      {", \"attrs\": {\"stride\": [1, 0]}", "", "", "node 0: \"stride\"[1] is 0; it must be >= 1"},
      {", \"attrs\": {\"padding\": [-1, 0]}", "", "", "node 0: \"padding\"[0] is -1; it must be >= 0"},
      {", \"attrs\": {\"dilation\": [1, 2.5]}", "", "", "node 0: \"dilation\"[1] must be an integer"},
      {", \"attrs\": {\"groups\": 0}", "", "", "'groups' must be an integer in [1, 65536], got 0"},
      {", \"attrs\": {\"kernel\": [3, 70000]}", "", "", "node 0: \"kernel\"[1] is 70000, over the limit of 65536"},
      {", \"impls\": {}", "", "", "'impls' must be"},
      {", \"impls\": [1]", "", "", "node 0: impl 0 must be an object, got number"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": 1}, {\"name\": \"b\", \"cost\": 1}, {\"name\": \"c\", \"cost\": 1}, "
       "{\"name\": \"d\", \"cost\": 1}, {\"name\": \"e\", \"cost\": 1}, {\"name\": \"f\", \"cost\": 1}, "
       "{\"name\": \"g\", \"cost\": 1}, {\"name\": \"h\", \"cost\": 1}, {\"name\": \"i\", \"cost\": 1}]",
       "", "", "node 0: 9 impls; the limit is 8"},
      {", \"impls\": [{\"name\": \"direct\"}]", "", "", "node 0: impl 0 'direct' has no \"cost\""},
      {", \"impls\": [{\"cost\": 1}]", "", "", "missing required member 'name'"},
      {", \"impls\": [{\"name\": \"\", \"cost\": 1}]", "", "", "node 0: impl 0: the name must be 1-15 bytes"},
      {", \"impls\": [{\"name\": \"a_name_of_16_byt\", \"cost\": 1}]", "", "", "the name must be 1-15 bytes"},
      {", \"impls\": [{\"name\": 7, \"cost\": 1}]", "", "", "'name' must be a string"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": \"1\"}]", "", "", "'cost' must be a number, got string"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": -1}]", "", "", "'cost' must be a number in [0,"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": -8}]", "", "",
       "node 0: impl 0 'a' has a negative workspace"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": 1.5}]", "", "",
       "'workspace' must be a non-negative integer"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": true}]", "", "",
       "'workspace' must be a non-negative integer, got bool"},
      {", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": 281474976710657}]", "", "",
       "node 0: impl 0 'a': workspace over the limit of 2^48 bytes"},
      {"", ", \"impls\": [{\"name\": \"a\", \"cost\": 1}]", "", "node 1: \"impls\" are allowed on F and B nodes only"},
      {"", "", ", \"shape\": [2, 3, -4]", "g.json:5:"},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mlsys_remat_graph g;
    mlsys_status st = parse(graph_text(cases[i].x0, cases[i].x1, cases[i].x2), &g);
    CHECK_MSG(st == MLSYS_ERR_PARSE, "case %zu: status %d", i, (int)st);
    CHECK_MSG(strstr(mlsys_last_error(), cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i,
              mlsys_last_error(), cases[i].want);
    CHECK(g.info == NULL && g.dag.n == 0);
  }
}

/* scale_batch scales dim 0 of both shapes and the impls (cost linearly, workspace rounded up), as mem and cost */
TEST(batch_scaling) {
  mlsys_remat_graph g, s, back;
  int b;
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 6, &s));
  REQUIRE(s.info != NULL);
  CHECK(s.info[0].shape[0] == 6 && s.info[0].shape[1] == 8 && s.info[0].shape[3] == 30);
  CHECK(s.info[0].in_shape[0] == 6 && s.info[0].in_shape[1] == 3);
  CHECK(s.info[0].impl[0].cost == 300 && s.info[0].impl[1].cost == 187.5);
  CHECK(s.info[0].impl[1].workspace == 16200 && s.info[0].impl[0].workspace == 0);
  CHECK(s.info[2].impl[0].cost == 190.25 * 3);
  CHECK(s.dag.cost[0] == 300 && s.dag.size[0] == 192);   /* the node's own fields, for comparison */
  CHECK(s.info[0].kernel[1] == 5 && s.info[0].stride[1] == 2 && s.info[0].pad[1] == 1);   /* geometry unchanged */
  /* batch 1: halves; the workspace rounds up (5400 / 2 exact, 1 byte of ws would become 1) */
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 1, &back));
  CHECK(back.info[0].shape[0] == 1 && back.info[0].impl[1].workspace == 2700 && back.info[0].impl[1].cost == 31.25);
  mlsys_remat_graph_free(&back);
  /* the per-sample graph scaled to b gives the same info as scaling the original to b, for many b */
  for (b = 1; b <= 40; b++) {
    mlsys_remat_graph x, y, one;
    int v;
    REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, b, &x));
    REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 2, &one));   /* same batch: identity */
    REQUIRE_OK(mlsys_remat_graph_scale_batch(&one, b, &y));
    for (v = 0; v < 3; v++) CHECK_MSG(info_eq(&x.info[v], &y.info[v]), "b %d node %d", b, v);
    CHECK(x.info[0].shape[0] == b && x.info[0].impl[1].workspace == (uint64_t)(2700 * b));
    mlsys_remat_graph_free(&x); mlsys_remat_graph_free(&y); mlsys_remat_graph_free(&one);
  }
  /* overflow is a named error, not a wrap */
  {
    mlsys_remat_graph big;
    REQUIRE_OK(parse(graph_text(", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": 281474976710656}]", "",
                                ""), &big));
    mlsys_remat_graph sb;
    CHECK_EQ_INT(mlsys_remat_graph_scale_batch(&big, 3, &sb), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "node 0 'c'");
    mlsys_remat_graph_free(&big);
  }
  mlsys_remat_graph_free(&s);
  mlsys_remat_graph_free(&g);
}

TEST(coarsen_drops_info) {
  mlsys_remat_graph g, c;
  int group[3];
  uint64_t transient[3];
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  REQUIRE_OK(mlsys_remat_coarsen(&g, &c, group, transient));
  CHECK(c.info == NULL);
  mlsys_remat_graph_free(&c);
  mlsys_remat_graph_free(&g);
}

/* The exported SmallCNN (tools/export_torch_graph.py): shapes from the model's definition in the exporter
   (conv 3→8→16, 3x3 pad 1, 2x2 pools, 32x32 input, fc 1024→64→10), not from the exporter's own arithmetic. */
TEST(smallcnn_export_shapes) {
  mlsys_remat_graph g;
  int v, nconv = 0;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  REQUIRE(g.info != NULL);
  for (v = 0; v < g.dag.n; v++) {
    const mlsys_remat_node_info *in = &g.info[v];
    uint64_t numel = 1;
    int k;
    if (g.kind[v] != MLSYS_REMAT_F) continue;
    CHECK_MSG(in->ndim >= 2 && in->shape[0] == 8, "node %d: shape", v);
    for (k = 0; k < in->ndim; k++) numel *= (uint64_t)in->shape[k];
    if (!strcmp(g.op[v], "MaxPool2d")) numel *= 3;   /* + int64 indices: mem = 4·numel + 8·numel */
    CHECK_MSG(numel * 4 == g.dag.size[v], "node %d: 4·numel(shape) %llu != mem %llu", v,
              (unsigned long long)numel * 4, (unsigned long long)g.dag.size[v]);
    if (!strcmp(g.op[v], "Conv2d")) {
      nconv++;
      CHECK(in->kernel[0] == 3 && in->kernel[1] == 3 && in->pad[0] == 1 && in->stride[0] == 1 && in->groups == 1);
      CHECK(in->in_ndim == 4 && in->in_shape[1] == (nconv == 1 ? 3 : 8) && in->in_shape[2] == (nconv == 1 ? 32 : 16));
      CHECK(in->shape[1] == (nconv == 1 ? 8 : 16));
    }
    if (!strcmp(g.op[v], "MaxPool2d")) CHECK(in->kernel[0] == 2 && in->stride[0] == 2 && in->pad[0] == 0);
    if (!strcmp(g.op[v], "Linear")) CHECK(in->in_ndim == 2 && (in->in_shape[1] == 1024 || in->in_shape[1] == 64));
  }
  CHECK_EQ_INT(nconv, 2);
  mlsys_remat_graph_free(&g);
}

/* MONeT's IntNodes take their size from the shapes: a 1-bit mask per ReLU element and one byte per MaxPool2d output
   element, where the pool node's bytes also hold PyTorch's int64 indices (so bytes/4 would be 3× the argmax). */
TEST(monet_intnode_sizes_from_shapes) {
  mlsys_remat_graph g;
  mlsys_remat_monet_catalogue cat;
  mlsys_remat_monet_graph sg;
  int q, nm = 0, na = 0;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b2.json", &g));
  REQUIRE(g.info != NULL);
  memset(&cat, 0, sizeof cat);
  cat.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &cat, &sg));
  for (q = 0; q < sg.V; q++) {
    int p, k;
    uint64_t numel = 1;
    if (!sg.int_kind[q]) continue;
    p = sg.src[sg.parent[q]];
    for (k = 0; k < g.info[p].ndim; k++) numel *= (uint64_t)g.info[p].shape[k];
    if (sg.int_kind[q] == 'm') { nm++; CHECK_MSG(sg.mem[q] == (numel + 7) / 8, "mask of node %d", p); }
    else {
      na++;
      CHECK_MSG(g.dag.size[p] == 12 * numel, "pool node %d: bytes %llu, 12·numel %llu", p,
                (unsigned long long)g.dag.size[p], (unsigned long long)(12 * numel));
      CHECK_MSG(sg.mem[q] == numel, "argmax of node %d: %llu bytes, numel %llu", p, (unsigned long long)sg.mem[q],
                (unsigned long long)numel);
    }
  }
  CHECK_EQ_INT(na, 5);   /* VGG-16's five max-pools */
  CHECK(nm >= 12);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* MONeT: an F node's impls replace the catalogue's conv/linear algorithms (CONV mode); NoOp keeps one default. */
TEST(monet_uses_graph_impls) {
  mlsys_remat_graph g;
  mlsys_remat_monet_catalogue cat;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_impl o = {77, 77, 5, 5};
  mlsys_remat_monet_override ov;
  memset(&ov, 0, sizeof ov);
  ov.node = 0; ov.nimpl = 1; ov.impl = &o;
  REQUIRE_OK(parse(graph_text(RICH0, "", RICH2), &g));
  memset(&cat, 0, sizeof cat);
  cat.mode = MLSYS_REMAT_MONET_ALL;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &cat, &sg));
  CHECK_EQ_INT(sg.impl_off[1] - sg.impl_off[0], 2);
  CHECK(sg.impl[sg.impl_off[0]].cost == 100 && sg.impl[sg.impl_off[0]].recompute_cost == 100);
  CHECK(sg.impl[sg.impl_off[0] + 1].cost == 62.5 && sg.impl[sg.impl_off[0] + 1].recompute_cost == 62.5);
  CHECK(sg.impl[sg.impl_off[0] + 1].workspace == 5400 && sg.impl[sg.impl_off[0] + 1].recompute_workspace == 5400);
  mlsys_remat_monet_graph_free(&sg);
  cat.mode = 0;   /* NoOp: one implementation, the graph's cost */
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &cat, &sg));
  CHECK_EQ_INT(sg.impl_off[1] - sg.impl_off[0], 1);
  CHECK(sg.impl[0].cost == 100 && sg.impl[0].workspace == 0);
  mlsys_remat_monet_graph_free(&sg);
  cat.mode = MLSYS_REMAT_MONET_ALL;   /* an explicit override wins */
  cat.noverride = 1;
  cat.override_impl = &ov;
  REQUIRE_OK(mlsys_remat_monet_graph_build(&g, &cat, &sg));
  CHECK_EQ_INT(sg.impl_off[1] - sg.impl_off[0], 1);
  CHECK(sg.impl[0].cost == 77 && sg.impl[0].workspace == 5);
  mlsys_remat_monet_graph_free(&sg);
  mlsys_remat_graph_free(&g);
}

/* "fixed_workspace": true keeps an impl's workspace at every batch (a per-sample or weight-sized buffer); absent
   (false) it scales as before. Written only when true, so files without it are written back byte for byte. */
TEST(fixed_workspace_key) {
  static const char *X0 =
      ", \"impls\": [{\"name\": \"direct\", \"cost\": 100}, {\"name\": \"im2col\", \"cost\": 60, \"workspace\": 5400, "
      "\"fixed_workspace\": true}, {\"name\": \"batched\", \"cost\": 50, \"workspace\": 1000, \"fixed_workspace\": "
      "false}]";
  mlsys_remat_graph g, h, s;
  size_t l1, l2;
  char *t1, *t2;
  REQUIRE_OK(parse(graph_text(X0, "", RICH2), &g));
  REQUIRE(g.info[0].nimpl == 3);
  CHECK(!g.info[0].impl[0].fixed_workspace && g.info[0].impl[1].fixed_workspace && !g.info[0].impl[2].fixed_workspace);
  REQUIRE((t1 = write_mem(&g, 1, &l1)) != NULL);
  CHECK(strstr(t1, "\"fixed_workspace\": true") != NULL && strstr(t1, "\"fixed_workspace\": false") == NULL);
  REQUIRE_OK(mlsys_remat_graph_parse(t1, l1, "w1", &h));
  CHECK(info_eq(&g.info[0], &h.info[0]) && info_eq(&g.info[2], &h.info[2]));
  REQUIRE((t2 = write_mem(&h, 1, &l2)) != NULL);
  CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
  free(t1); free(t2);
  /* batch 2 → 7: costs scale, the fixed workspace stays, the other scales (1000 · 7 / 2 = 3500) */
  REQUIRE_OK(mlsys_remat_graph_scale_batch(&g, 7, &s));
  CHECK(s.info[0].impl[1].workspace == 5400 && s.info[0].impl[1].fixed_workspace);
  CHECK(s.info[0].impl[2].workspace == 3500 && s.info[0].impl[1].cost == 210);
  mlsys_remat_graph_free(&s);
  /* not even an overflow: a fixed 2^48-byte workspace scales to any batch */
  {
    mlsys_remat_graph big;
    REQUIRE_OK(parse(graph_text(", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"workspace\": 281474976710656, "
                                "\"fixed_workspace\": true}]", "", ""), &big));
    REQUIRE_OK(mlsys_remat_graph_scale_batch(&big, 1000, &s));
    CHECK(s.info[0].impl[0].workspace == 281474976710656ull);
    mlsys_remat_graph_free(&s);
    mlsys_remat_graph_free(&big);
  }
  /* a non-boolean is a named error */
  CHECK_EQ_INT(parse(graph_text(", \"impls\": [{\"name\": \"a\", \"cost\": 1, \"fixed_workspace\": 1}]", "", ""), &s),
               MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "'fixed_workspace' must be true or false");
  mlsys_remat_graph_free(&g);
  mlsys_remat_graph_free(&h);
}

TEST_MAIN()
