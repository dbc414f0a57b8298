/* The training graphs exported from PyTorch by tools/export_torch_graph.py (tests/data/graphs/): they load, have
   the node and edge counts measured on the Checkmate repository's exports by the project's specification (VGG16
   81/116, VGG19 93/134, ResNet-50 351/539, MobileNetV2 307/466) or that this exporter gives (the others), keep
   the canonical layout of mlsys_remat_graph_chain (forward 0..L-1, loss L, bwd(i) = 2L - i with fwd_of = i), are
   scheduled validly by checkpoint-all, and scale linearly with the batch (vgg16_b2 against vgg16_b4). Regenerate
   the files with the commands in tools/README.md. Run from the repository root. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "tests/test.h"

typedef struct {
  const char *file;
  int n, nedges;      /* expected node and dependency counts */
  int spec;           /* 1: the counts are the spec's (§2.4); 0: this exporter's */
  int batch;
} real_graph;

static const real_graph graphs[] = {
    {"tests/data/graphs/vgg16_b2.json", 81, 116, 1, 2},
    {"tests/data/graphs/vgg16_b4.json", 81, 116, 1, 4},
    {"tests/data/graphs/vgg19_b2.json", 93, 134, 1, 2},
    {"tests/data/graphs/resnet50_b2.json", 351, 539, 1, 2},
    {"tests/data/graphs/mobilenet_v2_b2.json", 307, 466, 1, 2},
    {"tests/data/graphs/googlenet_b2.json", 395, 633, 0, 2},   /* MONeT's Tab. 4.5 counts 215 forward ops: ours 197 + the two auxiliary classifiers' 9 */
    {"tests/data/graphs/alexnet_b32.json", 45, 62, 0, 32},
    {"tests/data/graphs/mlp_b64.json", 15, 20, 0, 64},
    {"tests/data/graphs/smallcnn_b8.json", 21, 28, 0, 8},
    {"tests/data/graphs/unet_b2.json", 87, 128, 0, 2},
    {"tests/data/graphs/gpt2_b4.json", 227, 296, 0, 4},
};
#define NGRAPHS ((int)(sizeof graphs / sizeof graphs[0]))

/* The canonical layout (mlsys_remat_graph_chain's) and the fwd_of links; returns the number of violations (each
   one reported). */
static int check_layout(const mlsys_remat_graph *g, const char *file) {
  int n = g->dag.n, L = (n - 1) / 2, v, bad = 0;
  CHECK_MSG(n % 2 == 1 && g->loss == L, "%s: n = %d, loss = %d: not 2L+1 with the loss at L", file, n, g->loss);
  if (n % 2 != 1 || g->loss != L) return 1;
  for (v = 0; v < n; v++) {
    int want = v < L ? MLSYS_REMAT_F : v == L ? MLSYS_REMAT_L : MLSYS_REMAT_B;
    if (g->kind[v] != want) {
      CHECK_MSG(0, "%s: node %d has kind %d, the layout wants %d", file, v, g->kind[v], want);
      bad++;
      continue;
    }
    if (want == MLSYS_REMAT_B) {
      int f = g->fwd_of[v];
      /* fwd_of must name a forward node, and the canonical one: bwd(i) = 2L - i */
      if (f < 0 || f >= n || g->kind[f] != MLSYS_REMAT_F || f != 2 * L - v) {
        CHECK_MSG(0, "%s: backward node %d has fwd_of %d (want forward node %d)", file, v, f, 2 * L - v);
        bad++;
      }
    } else if (g->fwd_of[v] != -1) {
      CHECK_MSG(0, "%s: non-backward node %d has fwd_of %d", file, v, g->fwd_of[v]);
      bad++;
    }
  }
  return bad;
}

TEST(real_graphs_counts_and_layout) {
  int i;
  for (i = 0; i < NGRAPHS; i++) {
    mlsys_remat_graph g;
    REQUIRE_OK(mlsys_remat_graph_load(graphs[i].file, &g));
    CHECK_MSG(g.dag.n == graphs[i].n, "%s: n = %d, %s count is %d", graphs[i].file, g.dag.n,
              graphs[i].spec ? "the spec's" : "this exporter's", graphs[i].n);
    CHECK_MSG(g.dag.nedges == graphs[i].nedges, "%s: %d edges, %s count is %d", graphs[i].file, g.dag.nedges,
              graphs[i].spec ? "the spec's" : "this exporter's", graphs[i].nedges);
    CHECK_MSG(g.batch == graphs[i].batch, "%s: batch %d, want %d", graphs[i].file, g.batch, graphs[i].batch);
    CHECK_STR(g.mem_unit, "byte");
    CHECK_STR(g.cost_unit, "flop");
    CHECK(mlsys_remat_fixed_total(&g) > 0);
    check_layout(&g, graphs[i].file);
    mlsys_remat_graph_free(&g);
  }
}

/* Checkpoint-all at an unlimited budget: a valid schedule (the simulator and the execution plan agree), every node
   computed exactly once (cost = Σ C), and a peak no lower than the single-operator bound (a node and its inputs
   resident together). */
TEST(real_graphs_checkpoint_all) {
  int i;
  for (i = 0; i < NGRAPHS; i++) {
    mlsys_remat_graph g;
    mlsys_remat_opts o;
    mlsys_remat_schedule s;
    mlsys_remat_sim rep;
    mlsys_remat_plan p;
    uint64_t bound, plan_peak = 0;
    double sum = 0;
    int v;
    REQUIRE_OK(mlsys_remat_graph_load(graphs[i].file, &g));
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    REQUIRE_OK(mlsys_remat_solve(&g, UINT64_MAX, &o, &s));
    CHECK_OK(mlsys_remat_simulate(&g, s.R, s.S, MLSYS_REMAT_SIM_MILP, &rep, NULL));
    CHECK_MSG(rep.valid, "%s: checkpoint-all schedule invalid: %s", graphs[i].file, rep.why);
    CHECK_EQ_INT(rep.peak, s.peak);
    for (v = 0; v < g.dag.n; v++) sum += g.dag.cost[v];
    CHECK_MSG(s.cost == sum && s.baseline_cost == sum, "%s: cost %.17g, baseline %.17g, sum C %.17g",
              graphs[i].file, s.cost, s.baseline_cost, sum);
    bound = mlsys_remat_single_op_bound(&g);
    CHECK_MSG(bound > 0 && s.peak >= bound, "%s: peak %llu below the single-op bound %llu", graphs[i].file,
              (unsigned long long)s.peak, (unsigned long long)bound);
    CHECK_EQ_INT(s.peak_total, s.peak + mlsys_remat_fixed_total(&g));
    CHECK(s.fits);
    REQUIRE_OK(mlsys_remat_plan_build(&g, &s, 0, &p));
    CHECK_OK(mlsys_remat_plan_validate(&g, &p, &plan_peak));
    CHECK_EQ_INT(plan_peak, s.peak);
    mlsys_remat_plan_free(&p);
    mlsys_remat_schedule_free(&s);
    mlsys_remat_graph_free(&g);
  }
}

static int find_node(const mlsys_remat_graph *g, const char *name) {
  int v;
  for (v = 0; v < g->dag.n; v++)
    if (g->dag.name && g->dag.name[v] && strcmp(g->dag.name[v], name) == 0) return v;
  return -1;
}

/* smallcnn is the network a plain-C executor implements layer by layer: the node names are its contract. It was
   exported with --alias-mem bytes, so the flatten view carries its bytes (it is a real copy there). */
TEST(real_graphs_smallcnn_names) {
  static const char *fwd[] = {"conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1", "relu3",
                              "fc2"};
  mlsys_remat_graph g;
  int i, L = 10;
  char buf[64];
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/smallcnn_b8.json", &g));
  REQUIRE(g.dag.n == 2 * L + 1);
  for (i = 0; i < L; i++) {
    CHECK_STR(g.dag.name[i], fwd[i]);
    snprintf(buf, sizeof buf, "grad_%s", fwd[i]);
    CHECK_STR(g.dag.name[2 * L - i], buf);
  }
  CHECK_STR(g.dag.name[L], "loss");
  CHECK(g.flags[6] & MLSYS_REMAT_ALIAS);
  CHECK_EQ_INT(g.dag.size[6], 8 * 16 * 8 * 8 * 4);   /* [8, 1024] fp32 */
  /* conv1: 2·k·k·C_in·numel(out) = 2·9·3·(8·8·32·32) FLOPs; its output [8, 8, 32, 32] fp32 */
  CHECK(g.dag.cost[0] == 2.0 * 9 * 3 * (8 * 8 * 32 * 32));
  CHECK_EQ_INT(g.dag.size[0], 8 * 8 * 32 * 32 * 4);
  /* pool1 keeps its int64 indices for the backward: output + indices = [8, 8, 16, 16] · (4 + 8) bytes */
  CHECK_EQ_INT(g.dag.size[2], 8 * 8 * 16 * 16 * (4 + 8));
  mlsys_remat_graph_free(&g);
}

/* gpt2 was exported with the default --alias-mem zero: views (split, getitem, reshape of a contiguous tensor,
   permute, transpose) are zero-byte, zero-cost alias nodes; the head-merging reshape of a permuted tensor is a
   real copy. The attention matmul Q·K^T costs 2·d_head·numel(out). */
TEST(real_graphs_gpt2_views) {
  mlsys_remat_graph g;
  int v, nalias = 0, mm;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/gpt2_b4.json", &g));
  for (v = 0; v < g.loss; v++)
    if (g.flags[v] & MLSYS_REMAT_ALIAS) {
      nalias++;
      CHECK_EQ_INT(g.dag.size[v], 0);
      CHECK(g.dag.cost[v] == 0);
    }
  CHECK_EQ_INT(nalias, 4 * 12);   /* per block: split, 3 getitem, 3 reshape, 4 permute, 1 transpose */
  v = find_node(&g, "reshape_3");   /* merge heads of block 0: a copy of [4, 128, 256] fp32 */
  REQUIRE(v >= 0);
  CHECK(!(g.flags[v] & MLSYS_REMAT_ALIAS));
  CHECK_EQ_INT(g.dag.size[v], 4 * 128 * 256 * 4);
  mm = find_node(&g, "matmul");
  REQUIRE(mm >= 0);
  CHECK(g.dag.cost[mm] == 2.0 * 64 * (4 * 4 * 128 * 128));
  mlsys_remat_graph_free(&g);
}

/* Batch linearity: every node's cost and bytes at batch 4 are exactly twice those at batch 2 (tolerance 0: FLOPs
   and bytes are integers, exactly proportional to the batch), except the loss node's bytes, which hold a 4-byte
   scalar besides the logits (mem = 4 + logits). VGG16 has no BatchNorm, so no node carries per-channel
   auxiliary tensors (their bytes would not scale); its auxiliary tensors (max-pool indices, dropout masks) are
   per-sample. Parameters do not scale; inputs and labels do. */
TEST(real_graphs_batch_linearity_vgg16) {
  mlsys_remat_graph a, b;
  int v, j, bad = 0;
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b2.json", &a));
  REQUIRE_OK(mlsys_remat_graph_load("tests/data/graphs/vgg16_b4.json", &b));
  REQUIRE(a.batch == 2 && b.batch == 4);
  REQUIRE(a.dag.n == b.dag.n && a.dag.nedges == b.dag.nedges);
  for (v = 0; v < a.dag.n; v++) {
    uint64_t want = v == a.loss ? 2 * (a.dag.size[v] - 4) + 4 : 2 * a.dag.size[v];
    CHECK_STR(a.dag.name[v], b.dag.name[v]);
    CHECK_EQ_INT(a.dag.in_off[v + 1], b.dag.in_off[v + 1]);
    for (j = a.dag.in_off[v]; j < a.dag.in_off[v + 1] && j < b.dag.in_off[v + 1]; j++) CHECK(a.dag.in[j] == b.dag.in[j]);
    if (b.dag.cost[v] != 2 * a.dag.cost[v] || b.dag.size[v] != want) {
      if (bad++ < 5)
        CHECK_MSG(0, "node %d %s: cost %.17g -> %.17g, mem %llu -> %llu (want %llu)", v, a.dag.name[v],
                  a.dag.cost[v], b.dag.cost[v], (unsigned long long)a.dag.size[v],
                  (unsigned long long)b.dag.size[v], (unsigned long long)want);
    }
  }
  CHECK_EQ_INT(bad, 0);
  REQUIRE(a.nfixed == b.nfixed);
  for (j = 0; j < a.nfixed; j++) {
    uint64_t k = mlsys_remat_fixed_scales_with_batch(a.fixed_name[j]) ? 2 : 1;
    CHECK_STR(a.fixed_name[j], b.fixed_name[j]);
    CHECK_MSG(b.fixed_bytes[j] == k * a.fixed_bytes[j], "fixed %s: %llu -> %llu", a.fixed_name[j],
              (unsigned long long)a.fixed_bytes[j], (unsigned long long)b.fixed_bytes[j]);
  }
  /* the library's batch scaling reproduces the real b4 graph from b2 up to the loss scalar */
  {
    mlsys_remat_graph s;
    REQUIRE_OK(mlsys_remat_graph_scale_batch(&a, 4, &s));
    for (v = 0; v < a.dag.n; v++) {
      if (v == a.loss) CHECK_EQ_INT(s.dag.size[v], b.dag.size[v] + 4);   /* over-estimates the scalar */
      else CHECK_EQ_INT(s.dag.size[v], b.dag.size[v]);
      CHECK(s.dag.cost[v] == b.dag.cost[v]);
    }
    CHECK_EQ_INT(mlsys_remat_fixed_total(&s), mlsys_remat_fixed_total(&b));
    mlsys_remat_graph_free(&s);
  }
  mlsys_remat_graph_free(&a);
  mlsys_remat_graph_free(&b);
}

TEST_MAIN()
