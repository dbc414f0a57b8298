// tests/cuda/test_offload_cuda.cu — DyNN-Offload's CUDA runtime and the child-sum Tree-LSTM that runs on it
// (kernels/mlsys_offload_kernels.cuh; spec §3.6, §7.3, §7.4 item 13). Built by `make cuda`, run by build/gpu/run.sh
// from the bundle's data/ folder (it reads tests/data/offload/trees.txt). Host-side tests run everywhere; the device
// tests print "skip (no CUDA device)" without one.
//
//   host:   the driver's trace equals mlsys_offload_gen_treelstm's (ops, tensors, bytes, times) and every kernel's
//           operands are its trace op's tensors at the trace's sizes; the runtime's plans at 1/2 .. 1/8 of the
//           resident peak: T(B_k) at distinct non-overlapping offsets inside a buffer, bytes in and evicted equal to
//           mlsys_offload_blocks_costs, copies equal to mlsys_offload_sim_dynn's; the op list on the CPU equals an
//           independent straight-line Tree-LSTM (offload_treelstm_ref.h), whose gradient matches finite differences
//           in double; SGD lowers the loss; the runtime emulated on the host (its whole data flow: prefetch, carries,
//           evictions, faults; buffers poisoned with NaN before reuse) gives the plain CPU run's bits at every budget,
//           and with a dropped prefetch and a dropped carry, through on-demand fetches.
//   device: every kernel against its CPU loop (tolerance; bit-identical counts printed); one iteration (forward,
//           backward, SGD) of 32 trees resident, twice (bit-identical) and against the CPU; offloaded at 1/2, 1/4,
//           1/8 of the resident peak and with a wrong plan: loss and every updated weight bit-identical to the
//           resident run, the runtime's device bytes within the budget, faults > 0 for the wrong plan. Printed per
//           budget (not asserted: no test depends on wall-clock time): measured time, exposed wait, bytes moved, and
//           mlsys_offload_sim_dynn's prediction with bandwidths calibrated on this GPU.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_offload.h"
#include "kernels/mlsys_offload_kernels.cuh"
#include "tests/test.h"
#include "tests/cuda/offload_treelstm_ref.h"

#include <algorithm>

// The network and batch of the tests: 32 sentences, 32-dim embeddings and hidden state. Larger widths make the
// largest operator (U_iou's gradient with its weight) too big for a buffer at 1/8 of the peak.
enum { N_TREES = 32, DIM = 32, HID = 32, VOCAB = 384 };
static const float LR = 0.5f;

#include "tests/cuda/cuda_test.h"

static mlsys_offload_tree *g_trees;
static int g_ntrees;
static void load_trees(void) {
  if (g_trees) return;
  const char *path = "tests/data/offload/trees.txt";
  FILE *f = fopen(path, "rb");
  REQUIRE(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  REQUIRE(n > 0 && n < sizeof buf);
  REQUIRE_OK(mlsys_offload_trees_parse(buf, n, path, &g_trees, &g_ntrees));
  REQUIRE(g_ntrees >= N_TREES);
}

// Tensor memory for a CPU run: one host array per tensor.
struct host_mem {
  std::vector<std::vector<float>> a;
  std::vector<float *> p;
  explicit host_mem(const mlsys_offload_trace *tr) : a((size_t)tr->n_t), p((size_t)tr->n_t) {
    for (int t = 0; t < tr->n_t; t++) {
      a[t].assign((size_t)(tr->t[t].bytes / 4 + 1), nanf(""));
      p[t] = a[t].data();
    }
  }
};

// Loss and updated weights of one run (for bit comparisons).
struct result {
  float loss;
  std::vector<float> W[4];
};
static result result_of(const mlsys_offload_cuda_tl_batch *b, float *const *mem) {
  result r;
  r.loss = mem[b->loss][0];
  for (int w = 0; w < 4; w++) r.W[w].assign(mem[b->W[w]], mem[b->W[w]] + b->tr.t[b->W[w]].bytes / 4);
  return r;
}
static int same_bits(const result &x, const result &y) {
  int ok = !memcmp(&x.loss, &y.loss, 4);
  for (int w = 0; w < 4; w++) ok &= x.W[w].size() == y.W[w].size() && !memcmp(x.W[w].data(), y.W[w].data(), x.W[w].size() * 4);
  return ok;
}
// max |a - b| / max |b| over the weights, and how many floats are bit-identical
static double rel_diff(const result &a, const result &b, size_t *same, size_t *n) {
  double worst = 0, scale = 0;
  *same = *n = 0;
  for (int w = 0; w < 4; w++)
    for (size_t i = 0; i < b.W[w].size(); i++) {
      double d = fabs((double)a.W[w][i] - (double)b.W[w][i]);
      worst = d > worst || d != d ? (d != d ? INFINITY : d) : worst;
      scale = fmax(scale, fabs((double)b.W[w][i]));
      *same += !memcmp(&a.W[w][i], &b.W[w][i], 4);
      (*n)++;
    }
  return worst / (scale > 0 ? scale : 1);
}

static void build_batch(int n_trees, int D, int H, mlsys_offload_cuda_tl_batch *b) {
  load_trees();
  REQUIRE_OK(mlsys_offload_cuda_tl_build(g_trees, n_trees, D, H, VOCAB, NULL, b));
}

static result cpu_run(const mlsys_offload_cuda_tl_batch *b, const mlsys_offload_cuda_tl_model *m) {
  host_mem hm(&b->tr);
  std::vector<int> stamp((size_t)b->tr.n_t);
  mlsys_offload_cuda_tl_load(b, m, hm.p.data());
  REQUIRE_OK(mlsys_offload_cuda_tl_run_cpu(b, hm.p.data(), stamp.data(), LR));
  return result_of(b, hm.p.data());
}

// ---------------------------------------------------------------------------------------------------------------
// host: the driver's trace is the generator's
// ---------------------------------------------------------------------------------------------------------------
TEST(trace_matches_generator) {
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_trace g;
  build_batch(N_TREES, DIM, HID, &b);
  REQUIRE_OK(mlsys_offload_gen_treelstm(g_trees, N_TREES, DIM, HID, NULL, &g));
  CHECK_EQ_INT(b.tr.n_op, g.n_op);
  CHECK_EQ_INT(b.tr.n_t, g.n_t);
  CHECK_EQ_INT(b.n_op, b.tr.n_op);
  int bad_t = 0, bad_op = 0;
  for (int t = 0; t < std::min(b.tr.n_t, g.n_t); t++) bad_t += b.tr.t[t].bytes != g.t[t].bytes || b.tr.t[t].kind != g.t[t].kind;
  for (int i = 0; i < std::min(b.tr.n_op, g.n_op); i++) {
    const mlsys_offload_op *x = &b.tr.op[i], *y = &g.op[i];
    int ok = !strcmp(mlsys_offload_op_name(&b.tr, i), mlsys_offload_op_name(&g, i)) && x->n_in == y->n_in &&
             x->n_out == y->n_out && x->is_bwd == y->is_bwd && x->workspace == y->workspace &&
             fabs(x->time_us - y->time_us) <= 1e-9 * fmax(1.0, y->time_us);
    for (int q = 0; ok && q < x->n_in + x->n_out; q++) ok = b.tr.ids[x->in0 + q] == g.ids[y->in0 + q];
    if (!ok && bad_op++ < 3) printf("    op %d: ours %s, generator's %s\n", i, mlsys_offload_op_name(&b.tr, i), mlsys_offload_op_name(&g, i));
  }
  CHECK_EQ_INT(bad_t, 0);
  CHECK_EQ_INT(bad_op, 0);
  printf("    %d trees: %d ops (%d kernels), %d tensors, %d leaves, resident peak %lld bytes\n", N_TREES, b.tr.n_op,
         b.n_op, b.tr.n_t, b.n_leaf, (long long)mlsys_offload_peak_bytes(&b.tr));
  mlsys_offload_trace_free(&g);
  mlsys_offload_cuda_tl_batch_free(&b);
}

// host: each kernel's operands, at the sizes the kernel reads and writes, are its trace op's tensors
TEST(kernel_operands_match_trace) {
  mlsys_offload_cuda_tl_batch b;
  build_batch(N_TREES, DIM, HID, &b);
  const int H = HID, C = MLSYS_OFFLOAD_CUDA_TL_CLASSES;
  int bad = 0;
  for (int i = 0; i < b.n_op; i++) {
    const mlsys_offload_cuda_tl_op *o = &b.op[i];
    const mlsys_offload_op *top = &b.tr.op[i];
    std::vector<std::pair<int, int64_t>> rd, wr;   // (tensor, elements the kernel touches)
    const int *xt = b.arg_t + o->a0, *xg = b.arg_g + o->a0;
    const unsigned char *xa = b.arg_acc + o->a0;
    auto fwd_sizes = [&](const mlsys_offload_cuda_tl_op *f, std::vector<int64_t> &in, int64_t &out) {
      in.clear();
      switch (f->kind) {
        case MLSYS_OFFLOAD_CUDA_TL_MATMUL: in = {f->C, (int64_t)f->R * f->C}; out = f->R; break;
        case MLSYS_OFFLOAD_CUDA_TL_CELL: in.push_back(3 * H); for (int k = 1; k < f->n; k++) in.push_back(H); out = H; break;
        case MLSYS_OFFLOAD_CUDA_TL_HOUT: in = {H, 3 * H}; out = H; break;
        case MLSYS_OFFLOAD_CUDA_TL_SUM: in.assign((size_t)f->n, H); out = H; break;
        case MLSYS_OFFLOAD_CUDA_TL_LOSS: in.assign((size_t)f->n, C); out = 1; break;
      }
    };
    std::vector<int64_t> in;
    int64_t out = 0;
    if (o->kind == MLSYS_OFFLOAD_CUDA_TL_SGD) {
      int64_t n = b.tr.t[o->y].bytes / 4;
      rd = {{o->y, n}, {xt[0], n}};
      wr = {{o->y, n}};
    } else if (o->kind == MLSYS_OFFLOAD_CUDA_TL_BWD) {
      const mlsys_offload_cuda_tl_op *f = &b.op[o->fwd];
      fwd_sizes(f, in, out);
      if (o->y >= 0) rd.push_back({o->y, out});
      for (int k = 0; k < o->n; k++) {
        rd.push_back({xt[k], in[k]});
        if (xg[k] >= 0 && xa[k]) rd.push_back({xg[k], in[k]});
        if (xg[k] >= 0) wr.push_back({xg[k], in[k]});
      }
    } else {
      fwd_sizes(o, in, out);
      for (int k = 0; k < o->n; k++) rd.push_back({xt[k], in[k]});
      wr.push_back({o->y, out});
    }
    int ok = (int)rd.size() == top->n_in && (int)wr.size() == top->n_out;
    for (int q = 0; ok && q < top->n_in; q++)
      ok = b.tr.ids[top->in0 + q] == rd[q].first && b.tr.t[rd[q].first].bytes == 4 * rd[q].second;
    for (int q = 0; ok && q < top->n_out; q++)
      ok = b.tr.ids[top->out0 + q] == wr[q].first && b.tr.t[wr[q].first].bytes == 4 * wr[q].second;
    if (!ok && bad++ < 3) printf("    op %d (%s): the kernel's operands differ from the trace op's\n", i, mlsys_offload_op_name(&b.tr, i));
  }
  CHECK_EQ_INT(bad, 0);
  mlsys_offload_cuda_tl_batch_free(&b);
}

// ---------------------------------------------------------------------------------------------------------------
// host: the plans at 1/2 .. 1/8 of the resident peak
// ---------------------------------------------------------------------------------------------------------------
static void partition_at(const mlsys_offload_trace *tr, int64_t budget, const mlsys_offload_hw *base, mlsys_offload_blocks *blk) {
  mlsys_offload_hw hw = base ? *base : mlsys_offload_hw();
  mlsys_offload_part_opts o;
  memset(&o, 0, sizeof o);
  hw.gpu_bytes = budget;
  REQUIRE_OK(mlsys_offload_partition(tr, &hw, &o, blk));
}

TEST(plans_fit_and_agree_with_cost_model) {
  mlsys_offload_cuda_tl_batch b;
  build_batch(N_TREES, DIM, HID, &b);
  const mlsys_offload_trace *tr = &b.tr;
  int64_t peak = mlsys_offload_peak_bytes(tr);
  std::vector<unsigned char> keep((size_t)tr->n_t, 0);
  keep[b.loss] = 1;
  for (int d = 2; d <= 8; d++) {
    int64_t budget = peak / d;
    mlsys_offload_blocks blk;
    mlsys_offload_rt_plan p, pk;
    mlsys_offload_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.gpu_bytes = budget;
    partition_at(tr, budget, NULL, &blk);
    REQUIRE_OK(mlsys_offload_rt_plan_build(tr, &blk, budget, 0, NULL, &p));
    std::vector<mlsys_offload_block_cost> cost((size_t)blk.k);
    REQUIRE_OK(mlsys_offload_blocks_costs(tr, &hw, &blk, cost.data()));
    mlsys_offload_simres sim;
    REQUIRE_OK(mlsys_offload_sim_dynn(tr, &hw, &blk, &sim));
    CHECK(sim.feasible);
    CHECK(p.gpu_bytes <= budget);
    CHECK(p.buf1_off >= p.buf_bytes && p.reserve_off >= p.buf1_off + p.buf_bytes && p.reserve_off + p.reserve_bytes == p.gpu_bytes);
    CHECK(p.buf1_off % 256 == 0 && p.reserve_off % 256 == 0);
    CHECK_EQ_INT(p.buf_bytes, blk.buf_bytes);
    int bad_set = 0, bad_off = 0, bad_cost = 0;
    int64_t h2d = 0, d2d = 0, d2h = 0;
    std::vector<int> seen((size_t)tr->n_t, -1);
    for (int j = 0; j < p.k; j++) {
      // T(B_j) straight from the trace, in first-access order
      std::vector<int> T;
      for (int i = blk.start[j]; i < blk.start[j + 1]; i++)
        for (int q = 0; q < tr->op[i].n_in + tr->op[i].n_out; q++) {
          int t = tr->ids[tr->op[i].in0 + q];
          if (seen[t] != j) { seen[t] = j; T.push_back(t); }
        }
      int ne = p.e0[j + 1] - p.e0[j], n_in = 0;
      bad_set += ne != (int)T.size();
      std::vector<std::pair<int64_t, int64_t>> iv;   // [offset, end)
      for (int q = 0; q < ne && q < (int)T.size(); q++) {
        int e = p.e0[j] + q;
        bad_set += p.et[e] != T[q];
        iv.push_back({p.eoff[e], p.eoff[e] + tr->t[p.et[e]].bytes});
        bad_off += ((j % 2 ? p.buf1_off : 0) + p.eoff[e]) % 4 != 0;   // floats must be aligned on the GPU
        n_in += (p.eflag[e] & (MLSYS_OFFLOAD_RT_H2D | MLSYS_OFFLOAD_RT_D2D)) != 0;
      }
      std::sort(iv.begin(), iv.end());
      for (size_t q = 0; q < iv.size(); q++) {
        bad_off += iv[q].first < 0 || iv[q].second > p.used[j] || (q + 1 < iv.size() && iv[q].second > iv[q + 1].first);
      }
      bad_off += p.used[j] > p.buf_bytes;
      bad_cost += p.model_in[j] != cost[j].in_bytes || n_in != cost[j].n_in || p.model_ev[j] != cost[j].evict_bytes ||
                  p.used[j] != cost[j].ws_bytes;
      h2d += p.h2d[j];
      d2d += p.d2d[j];
      d2h += p.d2h[j];
    }
    CHECK_EQ_INT(bad_set, 0);
    CHECK_EQ_INT(bad_off, 0);
    CHECK_EQ_INT(bad_cost, 0);
    CHECK_EQ_INT(h2d, sim.bytes_h2d);
    CHECK_EQ_INT(d2d, sim.bytes_d2d);
    CHECK_EQ_INT(d2h, sim.bytes_d2h);
    // keeping the loss adds exactly its bytes to what is copied out
    REQUIRE_OK(mlsys_offload_rt_plan_build(tr, &blk, budget, 0, keep.data(), &pk));
    int64_t d2hk = 0;
    for (int j = 0; j < pk.k; j++) d2hk += pk.d2h[j];
    CHECK_EQ_INT(d2hk, d2h + tr->t[b.loss].bytes);
    printf("    1/%d of the peak (%7lld bytes): %4d blocks, buffers of %6lld bytes, reserve %5lld; in %7lld over PCIe + "
           "%7lld carried, out %7lld; model %.0f us\n", d, (long long)budget, p.k, (long long)p.buf_bytes,
           (long long)p.reserve_bytes, (long long)h2d, (long long)d2d, (long long)d2h, sim.time_us);
    mlsys_offload_rt_plan_free(&p);
    mlsys_offload_rt_plan_free(&pk);
    mlsys_offload_blocks_free(&blk);
  }
  // a budget whose buffers cannot hold the largest op
  {
    mlsys_offload_blocks blk;
    mlsys_offload_rt_plan p;
    partition_at(tr, peak / 4, NULL, &blk);
    CHECK(mlsys_offload_rt_plan_build(tr, &blk, peak / 64, 0, NULL, &p) == MLSYS_ERR_INFEASIBLE);
    CHECK_CONTAINS(mlsys_last_error(), "more than a buffer");
    mlsys_offload_blocks_free(&blk);
  }
  mlsys_offload_cuda_tl_batch_free(&b);
}

// ---------------------------------------------------------------------------------------------------------------
// host: the CPU reference
// ---------------------------------------------------------------------------------------------------------------
// The inputs of the straight-line reference from the batch: each leaf's embedding row, in the driver's leaf order.
static std::vector<std::vector<const float *>> leaf_inputs(const mlsys_offload_cuda_tl_batch *b, const mlsys_offload_cuda_tl_model *m) {
  std::vector<std::vector<const float *>> x((size_t)b->n_trees);
  int l = 0;
  for (int s = 0; s < b->n_trees; s++) {
    const mlsys_offload_tree *t = &g_trees[s];
    x[s].assign((size_t)t->n, (const float *)NULL);
    for (int i = t->n - 1; i >= 0; i--) {
      int leaf = 1;
      for (int k = i + 1; k < t->n; k++) leaf &= t->parent[k] != i;
      if (leaf) x[s][i] = m->emb + (size_t)b->leaf_row[l++] * m->D;
    }
  }
  return x;
}
template <typename T> static tlref_model<T> ref_model(const mlsys_offload_cuda_tl_model *m) {
  tlref_model<T> r;
  r.D = m->D;
  r.H = m->H;
  for (int w = 0; w < 4; w++) r.W[w].assign(m->W[w], m->W[w] + mlsys__otl_wsize(m->D, m->H, w));
  return r;
}

TEST(op_list_matches_straight_line_reference) {
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_cuda_tl_model m;
  build_batch(N_TREES, DIM, HID, &b);
  REQUIRE_OK(mlsys_offload_cuda_tl_model_init(&m, DIM, HID, VOCAB, 7));
  result ops = cpu_run(&b, &m);
  tlref_model<double> rm = ref_model<double>(&m);
  std::vector<double> G[4];
  double loss = tlref_loss(rm, g_trees, N_TREES, leaf_inputs(&b, &m), b.label, G);
  double worst = 0;
  for (int w = 0; w < 4; w++) {
    double scale = 0, d = 0;
    for (size_t i = 0; i < G[w].size(); i++) {
      double want = rm.W[w][i] - (double)LR * G[w][i];
      scale = fmax(scale, fabs(G[w][i]) * LR);
      d = fmax(d, fabs((double)ops.W[w][i] - want));
    }
    worst = fmax(worst, d / (scale > 0 ? scale : 1));   // the update's error relative to the largest update
  }
  printf("    loss: op list %.9g, reference (double) %.9g; updated weights: max error %.2e of the largest step\n",
         ops.loss, loss, worst);
  CHECK_NEAR(ops.loss, loss, 1e-5 * fmax(1.0, fabs(loss)));
  CHECK(worst < 1e-3);
  mlsys_offload_cuda_tl_model_free(&m);
  mlsys_offload_cuda_tl_batch_free(&b);
}

TEST(gradient_check_double) {
  // a small tree (first with 8..14 nodes) at small sizes: central differences on every weight entry
  load_trees();
  int s0 = 0;
  while (s0 < g_ntrees && (g_trees[s0].n < 8 || g_trees[s0].n > 14)) s0++;
  REQUIRE(s0 < g_ntrees);
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_cuda_tl_model m;
  REQUIRE_OK(mlsys_offload_cuda_tl_build(&g_trees[s0], 1, 6, 5, VOCAB, NULL, &b));
  REQUIRE_OK(mlsys_offload_cuda_tl_model_init(&m, 6, 5, VOCAB, 3));
  std::vector<std::vector<const float *>> x((size_t)1);
  {
    const mlsys_offload_tree *t = &g_trees[s0];
    int l = 0;
    x[0].assign((size_t)t->n, (const float *)NULL);
    for (int i = t->n - 1; i >= 0; i--) {
      int leaf = 1;
      for (int k = i + 1; k < t->n; k++) leaf &= t->parent[k] != i;
      if (leaf) x[0][i] = m.emb + (size_t)b.leaf_row[l++] * m.D;
    }
  }
  tlref_model<double> rm = ref_model<double>(&m);
  std::vector<double> G[4], G2[4];
  tlref_loss(rm, &g_trees[s0], 1, x, b.label, G);
  double worst = 0, gmax = 0;
  int n = 0;
  for (int w = 0; w < 4; w++)
    for (size_t i = 0; i < G[w].size(); i++) gmax = fmax(gmax, fabs(G[w][i]));
  // relative error per entry, entries below 1e-3 of the largest measured against that floor (differences of two
  // losses lose their digits there)
  for (int w = 0; w < 4; w++)
    for (size_t i = 0; i < rm.W[w].size(); i++) {
      const double eps = 1e-5, keep = rm.W[w][i];
      rm.W[w][i] = keep + eps;
      double lp = tlref_loss(rm, &g_trees[s0], 1, x, b.label, (std::vector<double> *)NULL);
      rm.W[w][i] = keep - eps;
      double lm = tlref_loss(rm, &g_trees[s0], 1, x, b.label, (std::vector<double> *)NULL);
      rm.W[w][i] = keep;
      double fd = (lp - lm) / (2 * eps), err = fabs(fd - G[w][i]) / fmax(1e-3 * gmax, fabs(fd) + fabs(G[w][i]));
      worst = fmax(worst, err);
      n++;
    }
  printf("    tree %d (%d nodes), D 6, H 5: %d weights, worst relative error %.2e\n", s0, g_trees[s0].n, n, worst);
  CHECK(worst < 1e-6);
  // and the op list's float gradient (through one SGD step with lr = 1) agrees with the double one
  host_mem hm(&b.tr);
  std::vector<int> stamp((size_t)b.tr.n_t);
  mlsys_offload_cuda_tl_load(&b, &m, hm.p.data());
  REQUIRE_OK(mlsys_offload_cuda_tl_run_cpu(&b, hm.p.data(), stamp.data(), 1.0f));
  double gw = 0, gs = 0;
  for (int w = 0; w < 4; w++)
    for (size_t i = 0; i < G[w].size(); i++) {
      gw = fmax(gw, fabs((double)(m.W[w][i] - hm.p[b.W[w]][i]) - G[w][i]));
      gs = fmax(gs, fabs(G[w][i]));
    }
  printf("    op list's float gradient: max error %.2e of the largest entry\n", gw / gs);
  CHECK(gw / gs < 1e-4);
  mlsys_offload_cuda_tl_model_free(&m);
  mlsys_offload_cuda_tl_batch_free(&b);
}

TEST(sgd_lowers_the_loss) {
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_cuda_tl_model m;
  build_batch(8, DIM, HID, &b);
  REQUIRE_OK(mlsys_offload_cuda_tl_model_init(&m, DIM, HID, VOCAB, 5));
  float first = 0, last = 0;
  int down = 1;
  printf("    loss over 8 steps on 8 trees:");
  for (int step = 0; step < 8; step++) {
    result r = cpu_run(&b, &m);
    for (int w = 0; w < 4; w++) memcpy(m.W[w], r.W[w].data(), r.W[w].size() * 4);
    if (step == 0) first = r.loss;
    else down &= r.loss < last;
    last = r.loss;
    printf(" %.4f", r.loss);
  }
  printf("\n");
  CHECK(down);
  CHECK(isfinite(last) && last < 0.9f * first);
  mlsys_offload_cuda_tl_model_free(&m);
  mlsys_offload_cuda_tl_batch_free(&b);
}

// ---------------------------------------------------------------------------------------------------------------
// host: the runtime's data flow, emulated (MLSYS_OFFLOAD_CUDA_HOST | POISON)
// ---------------------------------------------------------------------------------------------------------------
// One iteration through the runtime; returns the result read from the arena, stats in *st.
static result rt_run(const mlsys_offload_cuda_tl_batch *b, const mlsys_offload_cuda_tl_model *m,
                     const mlsys_offload_rt_plan *plan, const unsigned char *keep, int flags, mlsys_offload_cuda_stats *st,
                     std::vector<mlsys_offload_cuda_fault> *faults = NULL) {
  mlsys_offload_cuda *rt = NULL;
  std::vector<float *> mem((size_t)b->tr.n_t), P((size_t)b->tr.n_t);
  std::vector<int> stamp((size_t)b->tr.n_t);
  result r;
  REQUIRE_OK(mlsys_offload_cuda_create(&b->tr, plan, keep, flags, &rt));
  for (int t = 0; t < b->tr.n_t; t++) mem[t] = (float *)mlsys_offload_cuda_host(rt, t);
  mlsys_offload_cuda_tl_load(b, m, mem.data());
  mlsys_status s = mlsys_offload_cuda_tl_run_gpu(b, rt, P.data(), stamp.data(), LR, st);
  if (s) {
    test__fail(__FILE__, __LINE__, "run: %s", mlsys_last_error());
    mlsys_offload_cuda_free(rt);
    longjmp(test__env, 1);
  }
  r = result_of(b, mem.data());
  if (faults) {
    int n;
    const mlsys_offload_cuda_fault *f = mlsys_offload_cuda_faults(rt, &n);
    faults->assign(f, f + n);
  }
  mlsys_offload_cuda_free(rt);
  return r;
}

// A block in the second half with a copy-in of the given kind (for the carry: one whose newest copy is dirty on the
// GPU, so the on-demand fetch must come from the other buffer); -1 if none.
static int find_drop(const mlsys_offload_rt_plan *p, int kind, int *tensor) {
  for (int j = p->k / 2; j < p->k; j++)
    for (int e = p->e0[j]; e < p->e0[j + 1]; e++) {
      if (!(p->eflag[e] & kind)) continue;
      if (kind == MLSYS_OFFLOAD_RT_D2D) {
        int prev = -1;
        for (int q = p->e0[j - 1]; q < p->e0[j]; q++) prev = p->et[q] == p->et[e] ? q : prev;
        if (prev < 0 || !(p->eflag[prev] & MLSYS_OFFLOAD_RT_DIRTY)) continue;
      }
      *tensor = p->et[e];
      return j;
    }
  return -1;
}

TEST(emulated_runtime_is_bit_identical) {
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_cuda_tl_model m;
  build_batch(N_TREES, DIM, HID, &b);
  REQUIRE_OK(mlsys_offload_cuda_tl_model_init(&m, DIM, HID, VOCAB, 7));
  const int H = MLSYS_OFFLOAD_CUDA_HOST | MLSYS_OFFLOAD_CUDA_POISON;
  std::vector<unsigned char> keep((size_t)b.tr.n_t, 0);
  keep[b.loss] = 1;
  result ref = cpu_run(&b, &m);
  mlsys_offload_cuda_stats st;
  result res = rt_run(&b, &m, NULL, keep.data(), H, &st);
  CHECK(same_bits(res, ref));
  printf("    resident (emulated): %s\n", same_bits(res, ref) ? "bit-identical to the CPU run" : "DIFFERS");
  int64_t peak = mlsys_offload_peak_bytes(&b.tr);
  for (int d = 2; d <= 8; d *= 2) {
    mlsys_offload_blocks blk;
    mlsys_offload_rt_plan p;
    partition_at(&b.tr, peak / d, NULL, &blk);
    REQUIRE_OK(mlsys_offload_rt_plan_build(&b.tr, &blk, peak / d, 0, keep.data(), &p));
    result r = rt_run(&b, &m, &p, keep.data(), H, &st);
    int64_t h2d = 0, d2d = 0, d2h = 0;
    for (int j = 0; j < p.k; j++) { h2d += p.h2d[j]; d2d += p.d2d[j]; d2h += p.d2h[j]; }
    int same = same_bits(r, ref);
    CHECK(same);
    CHECK_EQ_INT(st.n_faults, 0);
    CHECK_EQ_INT(st.bytes_h2d, h2d);
    CHECK_EQ_INT(st.bytes_d2d, d2d);
    CHECK_EQ_INT(st.bytes_d2h, d2h);
    CHECK(st.device_bytes <= peak / d);
    printf("    1/%d (emulated): %4d blocks, %s, in %lld + carried %lld, out %lld bytes\n", d, p.k,
           same ? "bit-identical" : "DIFFERS", (long long)st.bytes_h2d, (long long)st.bytes_d2d, (long long)st.bytes_d2h);
    if (d == 4) {
      // wrong plans: a dropped prefetch (fetched from the arena) and a dropped dirty carry (from the other buffer)
      int kinds[2] = {MLSYS_OFFLOAD_RT_H2D, MLSYS_OFFLOAD_RT_D2D};
      for (int w = 0; w < 2; w++) {
        mlsys_offload_rt_plan q;
        int t = -1, j;
        REQUIRE_OK(mlsys_offload_rt_plan_build(&b.tr, &blk, peak / d, 0, keep.data(), &q));
        j = find_drop(&q, kinds[w], &t);
        REQUIRE(j >= 0);
        REQUIRE_OK(mlsys_offload_rt_plan_drop(&q, j, t));
        std::vector<mlsys_offload_cuda_fault> fl;
        result rw = rt_run(&b, &m, &q, keep.data(), H, &st, &fl);
        CHECK(same_bits(rw, ref));
        CHECK_EQ_INT(st.n_faults, 1);
        CHECK(fl.size() == 1 && fl[0].tensor == t && fl[0].block == j && fl[0].from_device == w);
        printf("    1/4 with block %d's %s of tensor %d dropped: %d fault (%s), %s\n", j, w ? "carry" : "prefetch", t,
               st.n_faults, fl.size() && fl[0].from_device ? "from the other buffer" : "from the arena",
               same_bits(rw, ref) ? "bit-identical" : "DIFFERS");
        mlsys_offload_rt_plan_free(&q);
      }
    }
    mlsys_offload_rt_plan_free(&p);
    mlsys_offload_blocks_free(&blk);
  }
  // misuse: an op that the trace says does not touch a tensor
  {
    mlsys_offload_cuda *rt;
    void *d;
    REQUIRE_OK(mlsys_offload_cuda_create(&b.tr, NULL, NULL, H, &rt));
    REQUIRE_OK(mlsys_offload_cuda_begin(rt));
    CHECK(mlsys_offload_cuda_acquire(rt, b.loss, 1, &d) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "does not write tensor");
    mlsys_offload_cuda_free(rt);
  }
  mlsys_offload_cuda_tl_model_free(&m);
  mlsys_offload_cuda_tl_batch_free(&b);
}

// ---------------------------------------------------------------------------------------------------------------
// device: kernels against their CPU loops
// ---------------------------------------------------------------------------------------------------------------
TEST(kernels_vs_cpu) {
  NEED_DEVICE();
  mlsys_offload_cuda_tl_batch b;
  build_batch(N_TREES, DIM, HID, &b);
  const mlsys_offload_trace *tr = &b.tr;
  mlsys_rng r;
  mlsys_rng_seed(&r, 11);
  // the first op of every (kind, forward kind, children) class that matters
  int done[8][8] = {{0}}, fails = 0;
  for (int i = 0; i < b.n_op; i++) {
    const mlsys_offload_cuda_tl_op *o = &b.op[i];
    int k1 = o->kind, k2 = o->kind == MLSYS_OFFLOAD_CUDA_TL_BWD ? b.op[o->fwd].kind : 7;
    int multi = o->n > 2 ? 1 : 0;
    if (done[k1][k2] & (1 << multi)) continue;
    done[k1][k2] |= 1 << multi;
    const mlsys_offload_op *op = &tr->op[i];
    std::vector<int> ts;
    for (int q = 0; q < op->n_in + op->n_out; q++) ts.push_back(tr->ids[op->in0 + q]);
    std::vector<float *> P((size_t)tr->n_t, (float *)NULL), D((size_t)tr->n_t, (float *)NULL);
    std::vector<int> stamp((size_t)tr->n_t, -1);
    std::vector<std::vector<float>> host((size_t)tr->n_t);
    for (int t : ts) {
      if (stamp[t] == i) continue;
      stamp[t] = i;
      size_t n = (size_t)(tr->t[t].bytes / 4);
      host[t].resize(n);
      for (size_t e = 0; e < n; e++) host[t][e] = (float)mlsys_rng_normal(&r);
      P[t] = host[t].data();
      CUDA_OK(cudaMalloc((void **)&D[t], n * 4));
      CUDA_OK(cudaMemcpy(D[t], P[t], n * 4, cudaMemcpyHostToDevice));
    }
    REQUIRE_OK(mlsys_offload_cuda_tl_exec(&b, i, D.data(), stamp.data(), LR, 1, 0));
    CUDA_OK(cudaDeviceSynchronize());
    REQUIRE_OK(mlsys_offload_cuda_tl_exec(&b, i, P.data(), stamp.data(), LR, 0, 0));
    double worst = 0, scale = 0;
    size_t same = 0, n = 0;
    for (int q = op->n_in; q < op->n_in + op->n_out; q++) {
      int t = tr->ids[op->in0 + q];
      std::vector<float> g(host[t].size());
      CUDA_OK(cudaMemcpy(g.data(), D[t], g.size() * 4, cudaMemcpyDeviceToHost));
      for (size_t e = 0; e < g.size(); e++) {
        double d = fabs((double)g[e] - (double)host[t][e]);
        worst = d > worst || d != d ? (d != d ? INFINITY : d) : worst;
        scale = fmax(scale, fabs((double)host[t][e]));
        same += !memcmp(&g[e], &host[t][e], 4);
        n++;
      }
    }
    double rel = worst / (scale > 0 ? scale : 1);
    int ok = rel <= 1e-5;
    fails += !ok;
    printf("    %-18s (op %5d, %d in, %d out) %6zu values  max |gpu - cpu| / max |cpu| = %.2e  bit-identical %zu/%zu  %s\n",
           mlsys_offload_op_name(tr, i), i, op->n_in, op->n_out, n, rel, same, n, ok ? "ok" : "FAIL");
    for (int t = 0; t < tr->n_t; t++)
      if (D[t]) cudaFree(D[t]);
  }
  CHECK_EQ_INT(fails, 0);
  mlsys_offload_cuda_tl_batch_free(&b);
}

// ---------------------------------------------------------------------------------------------------------------
// device: one iteration resident and offloaded
// ---------------------------------------------------------------------------------------------------------------
TEST(iteration_resident_vs_offloaded) {
  NEED_DEVICE();
  mlsys_offload_cuda_tl_batch b;
  mlsys_offload_cuda_tl_model m;
  build_batch(N_TREES, DIM, HID, &b);
  REQUIRE_OK(mlsys_offload_cuda_tl_model_init(&m, DIM, HID, VOCAB, 7));
  std::vector<unsigned char> keep((size_t)b.tr.n_t, 0);
  keep[b.loss] = 1;
  double h2d = 0, d2h = 0, lat = 0;
  REQUIRE_OK(mlsys_offload_cuda_calibrate(64 << 20, &h2d, &d2h, &lat));
  printf("    pinned copies: H2D %.1f GB/s, D2H %.1f GB/s, %.2f us per small copy\n", h2d, d2h, lat);

  mlsys_offload_cuda_stats rs, st;
  result res = rt_run(&b, &m, NULL, keep.data(), 0, &rs);
  result res2 = rt_run(&b, &m, NULL, keep.data(), 0, &st);
  CHECK(same_bits(res, res2));
  result cpu = cpu_run(&b, &m);
  size_t same = 0, n = 0;
  double rel = rel_diff(res, cpu, &same, &n);
  printf("    resident: %.3f ms (%d ops, %lld bytes on the device), rerun %s; vs CPU: loss %.9g / %.9g, weights max "
         "rel diff %.2e, bit-identical %zu/%zu\n", rs.total_ms, b.tr.n_op, (long long)rs.device_bytes,
         same_bits(res, res2) ? "bit-identical" : "DIFFERS", res.loss, cpu.loss, rel, same, n);
  CHECK(rel < 1e-4);
  CHECK_NEAR(res.loss, cpu.loss, 1e-5 * fmax(1.0, fabs(cpu.loss)));

  // the trace's times: the analytic model's, scaled so that they add up to the measured resident iteration
  mlsys_offload_facts f;
  REQUIRE_OK(mlsys_offload_trace_facts(&b.tr, &f));
  double scale = rs.total_ms * 1e3 / f.compute_us;
  for (int i = 0; i < b.tr.n_op; i++) b.tr.op[i].time_us *= scale;
  int64_t peak = f.peak_bytes;
  mlsys_offload_facts_free(&f);
  printf("    op times: analytic x %.3f (the measured resident iteration); resident peak %lld bytes\n", scale, (long long)peak);

  mlsys_offload_hw hw;
  memset(&hw, 0, sizeof hw);
  hw.h2d_gbps = h2d;
  hw.d2h_gbps = d2h;
  hw.lat_us = lat > 0 ? lat : -1;
  for (int d = 2; d <= 8; d *= 2) {
    int64_t budget = peak / d;
    mlsys_offload_blocks blk;
    mlsys_offload_rt_plan p;
    mlsys_offload_simres sim;
    partition_at(&b.tr, budget, &hw, &blk);
    REQUIRE_OK(mlsys_offload_rt_plan_build(&b.tr, &blk, budget, 0, keep.data(), &p));
    hw.gpu_bytes = budget;
    REQUIRE_OK(mlsys_offload_sim_dynn(&b.tr, &hw, &blk, &sim));
    result r = rt_run(&b, &m, &p, keep.data(), 0, &st);
    int same_b = same_bits(r, res);
    CHECK(same_b);
    CHECK(st.device_bytes <= budget);
    CHECK_EQ_INT(st.n_faults, 0);
    double exposed = st.total_ms - rs.total_ms;
    printf("    1/%d (%lld bytes): %4d blocks, %s; device %lld bytes (cudaMemGetInfo drop %lld); %.3f ms, exposed %.3f ms "
           "(compute stream waited %.3f ms); in %lld + carried %lld, out %lld bytes, %d copies | simulator: %.3f ms, "
           "exposed %.3f ms, in %lld + carried %lld, out %lld; measured / simulated exposed = %.2f\n",
           d, (long long)budget, p.k, same_b ? "bit-identical to resident" : "DIFFERS from resident",
           (long long)st.device_bytes, (long long)st.memgetinfo_bytes, st.total_ms, exposed, st.wait_ms,
           (long long)st.bytes_h2d, (long long)st.bytes_d2d, (long long)st.bytes_d2h, st.n_copies, sim.time_us / 1e3,
           sim.migration_us / 1e3, (long long)sim.bytes_h2d, (long long)sim.bytes_d2d, (long long)sim.bytes_d2h,
           sim.migration_us > 0 ? exposed * 1e3 / sim.migration_us : 0.0);
    if (d == 4) {
      int kinds[2] = {MLSYS_OFFLOAD_RT_H2D, MLSYS_OFFLOAD_RT_D2D};
      for (int w = 0; w < 2; w++) {
        mlsys_offload_rt_plan q;
        int t = -1, j;
        std::vector<mlsys_offload_cuda_fault> fl;
        REQUIRE_OK(mlsys_offload_rt_plan_build(&b.tr, &blk, budget, 0, keep.data(), &q));
        j = find_drop(&q, kinds[w], &t);
        REQUIRE(j >= 0);
        REQUIRE_OK(mlsys_offload_rt_plan_drop(&q, j, t));
        result rw = rt_run(&b, &m, &q, keep.data(), 0, &st, &fl);
        CHECK(same_bits(rw, res));
        CHECK(st.n_faults > 0);
        printf("    1/4, wrong plan (block %d's %s of tensor %d dropped): %d fault(s), %lld bytes fetched on demand "
               "(%s), %.3f ms, %s\n", j, w ? "carry" : "prefetch", t, st.n_faults, (long long)st.fault_bytes,
               fl.size() && fl[0].from_device ? "from the other buffer" : "from the arena", st.total_ms,
               same_bits(rw, res) ? "bit-identical" : "DIFFERS");
        mlsys_offload_rt_plan_free(&q);
      }
    }
    mlsys_offload_rt_plan_free(&p);
    mlsys_offload_blocks_free(&blk);
  }
  mlsys_offload_cuda_tl_model_free(&m);
  mlsys_offload_cuda_tl_batch_free(&b);
}

TEST_MAIN()
