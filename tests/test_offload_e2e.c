/* End-to-end pieces of mlsys_offload.h (spec §3.3, §3.4, §3.6, §7.4 item 11): weights pinned on the GPU, the
   Tree-LSTM's static program, labelled pilot samples from real link-grammar parses (tests/data/offload), the runtime
   on a predicted plan, training with early stopping and the held-out evaluation with the mis-prediction cache.
   Known answers are counted by hand (the AFM, word hashes), recomputed a second way in the test (pinned bytes, the
   labels' partition, the evaluation's counts with a hand-rolled cache) or properties that could fail (the plan of a
   label is the DP's own plan; every repaired block fits). No check depends on time; the bounded work is 450 trees. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"

static mlsys_offload_tree *g_trees;
static int g_n;

static void load_trees(void) {
  char *a = NULL, *b = NULL, *all;
  size_t la = 0, lb = 0;
  if (g_trees) return;
  REQUIRE_OK(mlsys_read_file("tests/data/offload/trees.txt", &a, &la));
  REQUIRE_OK(mlsys_read_file("tests/data/offload/trees_docs.txt", &b, &lb));
  all = (char *)malloc(la + lb + 1);
  REQUIRE(all != NULL);
  memcpy(all, a, la);
  memcpy(all + la, b, lb);
  REQUIRE_OK(mlsys_offload_trees_parse(all, la + lb, "trees", &g_trees, &g_n));
  free(a);
  free(b);
  free(all);
}

static uint64_t fnv(const char *s) {
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

TEST(tree_words_are_hashed_tokens) {
  const char *txt = "(S (NP the.d dog.n) (VP ran.v (NP the.d)))\n";
  mlsys_offload_tree *t;
  int n, i, words = 0;
  REQUIRE_OK(mlsys_offload_trees_parse(txt, strlen(txt), "t", &t, &n));
  REQUIRE(n == 1 && t[0].n == 8 && t[0].word != NULL);
  /* nodes in order: S, NP, the.d, dog.n, VP, ran.v, NP, the.d */
  CHECK(t[0].word[0] == 0 && t[0].word[1] == 0 && t[0].word[4] == 0 && t[0].word[6] == 0);
  CHECK(t[0].word[2] == fnv("the.d") && t[0].word[3] == fnv("dog.n") && t[0].word[5] == fnv("ran.v"));
  CHECK(t[0].word[7] == t[0].word[2]);
  for (i = 0; i < t[0].n; i++) words += t[0].word[i] != 0;
  CHECK_EQ_INT(words, 4);
  mlsys_offload_tree_free(&t[0]);
  free(t);
  /* the real files: 600 + 2400 trees, every leaf a word */
  load_trees();
  CHECK_EQ_INT(g_n, 3000);
  for (n = 0; n < g_n; n++)
    for (i = 0; i < g_trees[n].n; i++) {
      int j, kids = 0;
      for (j = i + 1; j < g_trees[n].n && !kids; j++) kids += g_trees[n].parent[j] == i;
      if ((g_trees[n].word[i] != 0) == (kids != 0)) {
        CHECK_MSG(0, "tree %d node %d: word %llx with %d children", n, i, (unsigned long long)g_trees[n].word[i], kids);
        return;
      }
    }
}

TEST(pin_weights_moves_weights_and_their_gradients) {
  mlsys_offload_trace tr, p;
  mlsys_offload_facts f;
  int64_t want = 0;
  int i, j, sgd = 0;
  load_trees();
  REQUIRE_OK(mlsys_offload_gen_treelstm(g_trees, 4, 300, 150, NULL, &tr));
  REQUIRE_OK(mlsys_offload_trace_pin_weights(&tr, &p));
  /* second count: weights, and what each SGD op reads besides its weight */
  for (i = 0; i < tr.n_t; i++) want += tr.t[i].kind == MLSYS_OFFLOAD_T_PARAM ? tr.t[i].bytes : 0;
  for (i = 0; i < tr.n_op; i++)
    if (strcmp(mlsys_offload_op_name(&tr, i), "SGD") == 0) {
      sgd++;
      for (j = 0; j < tr.op[i].n_in; j++) {
        int t = tr.ids[tr.op[i].in0 + j];
        if (tr.t[t].kind == MLSYS_OFFLOAD_T_GRAD) want += tr.t[t].bytes;
      }
    }
  CHECK_EQ_INT(sgd, 4);
  CHECK(p.fixed_bytes == tr.fixed_bytes + want);
  CHECK_EQ_INT(p.n_op, tr.n_op);
  CHECK_EQ_INT(p.n_t, tr.n_t);
  for (i = 0; i < p.n_op; i++) {
    CHECK(p.op[i].time_us == tr.op[i].time_us && p.op[i].is_bwd == tr.op[i].is_bwd);
    for (j = 0; j < p.op[i].n_in + p.op[i].n_out; j++) {
      int t = p.ids[p.op[i].in0 + j];
      if (p.t[t].bytes == 0 && tr.t[t].bytes != 0) { CHECK_MSG(0, "op %d still touches pinned tensor %d", i, t); break; }
    }
  }
  /* the point of pinning: one sentence's iteration cannot be double-buffered below PyTorch's peak with its weights
     offloadable (the gate matrix and its gradient fill a buffer), and can with them pinned */
  {
    mlsys_offload_trace one, onep;
    mlsys_offload_hw hw;
    mlsys_offload_part_opts o;
    mlsys_offload_blocks b;
    mlsys_offload_simres r;
    int64_t peak;
    REQUIRE_OK(mlsys_offload_gen_treelstm(g_trees, 1, 300, 150, NULL, &one));
    REQUIRE_OK(mlsys_offload_trace_pin_weights(&one, &onep));
    REQUIRE_OK(mlsys_offload_trace_facts(&onep, &f));
    peak = f.peak_bytes;
    memset(&hw, 0, sizeof hw);
    memset(&o, 0, sizeof o);
    hw.gpu_bytes = f.persistent_bytes + (f.peak_bytes - f.persistent_bytes) / 2;
    mlsys_offload_facts_free(&f);
    CHECK(hw.gpu_bytes < mlsys_offload_peak_bytes(&one));
    CHECK(mlsys_offload_partition(&one, &hw, &o, &b) == MLSYS_ERR_INFEASIBLE);
    CHECK_OK(mlsys_offload_partition(&onep, &hw, &o, &b));
    CHECK(b.k >= 2);
    CHECK_OK(mlsys_offload_sim_dynn(&onep, &hw, &b, &r));
    CHECK(r.feasible && r.peak_bytes <= hw.gpu_bytes && r.time_us >= r.compute_us);
    mlsys_offload_blocks_free(&b);
    /* with room for everything, nothing moves */
    hw.gpu_bytes = peak;
    CHECK_OK(mlsys_offload_simulate(&onep, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &r));
    CHECK(r.time_us == r.compute_us && r.bytes_h2d == 0);
    mlsys_offload_trace_free(&one);
    mlsys_offload_trace_free(&onep);
  }
  mlsys_offload_trace_free(&tr);
  mlsys_offload_trace_free(&p);
}

TEST(treelstm_program_afm_counted_by_hand) {
  mlsys_offload_prog p;
  mlsys_offload_sig rows[32];
  /* 0 node loop, 1 branch, leaf: 2 MatMul 3 LSTMCell 4 Tanh, inner: 5 ReduceSum 6 MatMul 7 children loop 8 MatMul
     9 LSTMCell 10 Tanh, then 11 MatMul 12 Softmax. Idioms T G Sc R St Sn: MatMul 1 0 0 1 1 0, LSTMCell 1 0 0 2 9 0,
     Tanh (as Add) 0 0 0 0 1 0, ReduceSum 0 0 0 1 0 0, Softmax 0 0 0 2 2 0, control flow all zero. */
  static const int want[13][6] = {{0}, {0}, {1, 0, 0, 1, 1, 0}, {1, 0, 0, 2, 9, 0}, {0, 0, 0, 0, 1, 0},
                                  {0, 0, 0, 1, 0, 0}, {1, 0, 0, 1, 1, 0}, {0}, {1, 0, 0, 1, 1, 0}, {1, 0, 0, 2, 9, 0},
                                  {0, 0, 0, 0, 1, 0}, {1, 0, 0, 1, 1, 0}, {0, 0, 0, 2, 2, 0}};
  int n = 0, i, e;
  REQUIRE_OK(mlsys_offload_prog_treelstm(&p));
  CHECK_EQ_INT(p.nn_type, 1);
  REQUIRE_OK(mlsys_offload_afm(&p, rows, 32, &n));
  REQUIRE(n == 13);
  for (i = 0; i < n; i++) {
    for (e = 0; e < MLSYS_OFFLOAD_NIDIOM; e++) CHECK_MSG(rows[i].idiom[e] == want[i][e], "row %d idiom %d", i, e);
    for (e = 0; e < 3; e++) CHECK(rows[i].dim[e] == 0);
  }
  mlsys_offload_prog_free(&p);
}

static mlsys_offload_pilot *new_pilot(void) {
  mlsys_offload_pilot *m = NULL;
  REQUIRE_OK(mlsys_offload_pilot_create(NULL, &m));
  return m;
}

/* 450 trees: 300 training samples, the next 150 held out, at the median activation's half, weights pinned */
static mlsys_offload_pilot_data g_train, g_test;
static mlsys_offload_hw g_hw;
static void make_data(mlsys_offload_pilot *m) {
  mlsys_offload_data_opts o;
  if (g_train.n) return;
  load_trees();
  memset(&o, 0, sizeof o);
  o.pin_weights = 1;
  o.act_frac = 0.5;
  REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees, 300, &o, &g_train));
  memset(&g_hw, 0, sizeof g_hw);
  g_hw.gpu_bytes = g_train.gpu_bytes;
  o.act_frac = 0;
  o.hw = g_hw;
  REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees + 300, 150, &o, &g_test));
}

TEST(labels_are_the_dp_plans_of_the_sample_traces) {
  mlsys_offload_pilot *m = new_pilot();
  int s, ny, checked = 0;
  make_data(m);
  ny = g_train.k_max * 10;
  printf("    budget %lld bytes: %d training samples (%d infeasible, %d using all 16 blocks), %d held out\n",
         (long long)g_train.gpu_bytes, g_train.n, g_train.n_infeasible, g_train.n_over_k_max, g_test.n);
  CHECK(g_train.n + g_train.n_infeasible == 300);
  CHECK(g_train.n >= 150 && g_test.n >= 40);
  for (s = 0; s < g_train.n; s += 7) {
    const float *lab = g_train.label + (size_t)s * ny;
    const mlsys_offload_trace *tr = &g_train.trace[s];
    mlsys_offload_part_opts o;
    mlsys_offload_blocks b;
    float again[160];
    int k = 0, sum = 0, j;
    for (k = 0; k < g_train.k_max && lab[10 * k] > 0; k++) sum += (int)lab[10 * k];
    CHECK_EQ_INT(sum, tr->n_op);
    /* the DP again, on the stored trace */
    memset(&o, 0, sizeof o);
    o.k_max = g_train.k_max;
    REQUIRE_OK(mlsys_offload_partition(tr, &g_hw, &o, &b));
    CHECK_EQ_INT(b.k, k);
    mlsys_offload_blocks_label(tr, &b, g_train.k_max, again);
    for (j = 0; j < ny; j++) CHECK(again[j] == lab[j]);
    /* the runtime on the label itself is the DP's plan: no repair, the simulator's time */
    {
      int32_t lab32[160];
      mlsys_offload_simres r1, r2;
      for (j = 0; j < ny; j++) lab32[j] = (int32_t)lab[j];
      CHECK_OK(mlsys_offload_sim_predicted(tr, &g_hw, lab32, g_train.k_max, &r1));
      CHECK_OK(mlsys_offload_sim_dynn(tr, &g_hw, &b, &r2));
      CHECK(r1.n_faults == 0 && r1.time_us == r2.time_us && r1.n_blocks == b.k);
    }
    mlsys_offload_blocks_free(&b);
    checked++;
  }
  CHECK(checked > 20);
  mlsys_offload_pilot_free(m);
}

TEST(predicted_plans_are_repaired_to_fit) {
  mlsys_offload_pilot *m = new_pilot();
  mlsys_rng r;
  int s, trial;
  make_data(m);
  mlsys_rng_seed(&r, 7);
  for (trial = 0; trial < 200; trial++) {
    const mlsys_offload_trace *tr = &g_train.trace[mlsys_rng_below(&r, (uint64_t)g_train.n)];
    int32_t pred[160];
    mlsys_offload_simres res;
    int k = (int)mlsys_rng_below(&r, 17), j;
    memset(pred, 0, sizeof pred);
    for (j = 0; j < k; j++) pred[10 * j] = (int32_t)mlsys_rng_below(&r, (uint64_t)tr->n_op);
    for (j = 0; j < k && pred[10 * j]; j++) {}
    REQUIRE_OK(mlsys_offload_sim_predicted(tr, &g_hw, pred, 16, &res));
    /* the repaired plan runs: feasible, within the budget, never faster than its kernels */
    CHECK(res.feasible && res.peak_bytes <= g_hw.gpu_bytes && res.time_us >= res.compute_us);
    if (k == 0 || pred[0] == 0) CHECK(res.n_blocks >= 1);
  }
  /* one block for everything: it cannot fit, so pieces are fetched on demand and cost more than the DP's plan */
  for (s = 0; s < 20; s++) {
    int32_t one[160], lab[160];
    mlsys_offload_simres a, b;
    int j;
    memset(one, 0, sizeof one);
    one[0] = g_train.trace[s].n_op;
    for (j = 0; j < 160; j++) lab[j] = (int32_t)g_train.label[(size_t)s * 160 + j];
    REQUIRE_OK(mlsys_offload_sim_predicted(&g_train.trace[s], &g_hw, one, 16, &a));
    REQUIRE_OK(mlsys_offload_sim_predicted(&g_train.trace[s], &g_hw, lab, 16, &b));
    if (lab[10] > 0) CHECK(a.n_faults > 0 && a.time_us > b.time_us);
  }
  {
    int32_t p[160];
    mlsys_offload_simres res;
    memset(p, 0, sizeof p);
    CHECK(mlsys_offload_sim_predicted(&g_train.trace[0], &g_hw, NULL, 16, &res) == MLSYS_ERR_ARG);
    CHECK(mlsys_offload_sim_predicted(&g_train.trace[0], &g_hw, p, 0, &res) == MLSYS_ERR_ARG);
  }
  mlsys_offload_pilot_free(m);
}

/* The evaluation recounted: forward, decode, and a cache as a plain list of (prediction, truth) pairs. */
static void recount(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *d, int *exact, int *mis, int *mis_c) {
  static int32_t keys[512][160], vals[512][160];
  int nk = 0, s, i;
  float y[160];
  *exact = *mis = *mis_c = 0;
  for (s = 0; s < d->n; s++) {
    int32_t p[160], t[160], q[160];
    const int32_t *use = p;
    int e = 1, c = 1, cc = 1;
    for (i = 0; i < 160; i++) t[i] = (int32_t)d->label[(size_t)s * 160 + i];
    mlsys_offload_pilot_forward(m, d->x_e + (size_t)s * d->xe_dim, d->x_a + (size_t)s * d->xa_dim, d->nn_type[s], y);
    mlsys_offload_pilot_decode(m, y, p);
    /* the cache's key: the raw output rounded (the decode without a codebook), as documented */
    for (i = 0; i < 160; i++) {
      double v = expm1((double)y[i]);
      q[i] = !(v > 0) ? 0 : v >= 2147483647.0 ? INT32_MAX : (int32_t)floor(v + 0.5);
    }
    for (i = 0; i < 160; i++) e &= p[i] == t[i];
    for (i = 0; i < 16 && (p[10 * i] || t[10 * i]); i++) c &= p[10 * i] == t[10 * i];
    for (i = nk - 1; i >= 0; i--)
      if (!memcmp(keys[i], q, sizeof q)) { use = vals[i]; break; }
    for (i = 0; i < 16 && (use[10 * i] || t[10 * i]); i++) cc &= use[10 * i] == t[10 * i];
    *exact += e;
    *mis += !c;
    *mis_c += !cc;
    if (!cc && nk < 512) {
      int k;
      for (k = 0; k < nk && memcmp(keys[k], q, sizeof q); k++) {}
      memcpy(keys[k], q, sizeof q);
      memcpy(vals[k], t, sizeof t);
      if (k == nk) nk++;
    }
  }
}

TEST(fit_and_evaluate_on_held_out_trees) {
  mlsys_offload_pilot *m = new_pilot(), *m2 = new_pilot();
  mlsys_offload_fit_opts fo;
  mlsys_offload_fit_result fr, fr2;
  mlsys_offload_pilot_eval ev, ev0;
  double loss0 = 0;
  int s, e, mi, mc;
  make_data(m);
  for (s = 0; s < g_test.n; s++)
    loss0 += mlsys_offload_pilot_loss(m, g_test.x_e + (size_t)s * g_test.xe_dim, g_test.x_a + (size_t)s * g_test.xa_dim, 1,
                                      g_test.label + (size_t)s * 160) / g_test.n;
  REQUIRE_OK(mlsys_offload_pilot_evaluate(m, &g_test, &g_hw, &ev0));
  memset(&fo, 0, sizeof fo);
  fo.max_epochs = 60;
  REQUIRE_OK(mlsys_offload_pilot_fit(m, &g_train, &g_test, &fo, &fr));
  REQUIRE_OK(mlsys_offload_pilot_fit(m2, &g_train, &g_test, &fo, &fr2));
  /* deterministic for a seed, and the kept epoch beats the untrained pilot on held-out loss */
  CHECK(!memcmp(mlsys_offload_pilot_params(m), mlsys_offload_pilot_params(m2), mlsys_offload_pilot_nparams(m) * sizeof(float)));
  CHECK(fr.best_val_loss < loss0 * 0.5);
  CHECK(fr.best_epoch >= 1 && fr.best_epoch <= fr.epochs && fr.epochs <= 60);
  REQUIRE_OK(mlsys_offload_pilot_evaluate(m, &g_test, &g_hw, &ev));
  printf("    pilot %zu parameters, %d epochs (best %d): held-out loss %.3f (untrained %.3f); of %d samples: exact %d, "
         "block count right %d, mis-predicted %d (cache %d, %d hits), on-demand fetches in %d\n",
         mlsys_offload_pilot_nparams(m), fr.epochs, fr.best_epoch, fr.best_val_loss, loss0, ev.n, ev.exact, ev.k_exact,
         ev.mispred, ev.mispred_cache, ev.cache_hits, ev.faulted);
  printf("    simulated time: label plans %.0f µs, predicted %.0f µs (%.2fx), with cache %.0f µs, untrained %.0f µs "
         "(%.2fx), kernels %.0f µs\n", ev.time_oracle_us, ev.time_pred_us, ev.time_pred_us / ev.time_oracle_us,
         ev.time_cache_us, ev0.time_pred_us, ev0.time_pred_us / ev0.time_oracle_us, ev.compute_us);
  recount(m, &g_test, &e, &mi, &mc);
  CHECK_EQ_INT(ev.exact, e);
  CHECK_EQ_INT(ev.mispred, mi);
  CHECK_EQ_INT(ev.mispred_cache, mc);
  CHECK_EQ_INT(ev.n, g_test.n);
  CHECK(ev.time_oracle_us == ev0.time_oracle_us && ev.compute_us <= ev.time_oracle_us);
  CHECK(ev.time_pred_us >= ev.compute_us && ev.time_cache_us >= ev.compute_us);
  /* trained predictions must cost less than the untrained pilot's */
  CHECK(ev.time_pred_us < ev0.time_pred_us);
  CHECK(ev.k_exact > ev0.k_exact);
  /* widths that do not match the pilot's are refused */
  {
    mlsys_offload_pilot_cfg c;
    mlsys_offload_pilot *m3;
    memset(&c, 0, sizeof c);
    c.k_max = 8;
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m3));
    CHECK(mlsys_offload_pilot_fit(m3, &g_train, NULL, &fo, &fr) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "k_max");
    CHECK(mlsys_offload_pilot_evaluate(m3, &g_test, &g_hw, &ev) == MLSYS_ERR_ARG);
    mlsys_offload_pilot_free(m3);
  }
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(m2);
}

/* Goal G4 (exact match >= 0.8 on held-out samples) where the plan is a function of the input the pilot sees: var-LSTM
   documents of 4 real sentences, whose iteration depends on their length. All 3,000 sentences, split as `mlsys offload
   train-pilot` splits them: 525 documents train, 75 stop early, 150 are held out. Our pilot (length code, Adam, snapping to the training plans; docs/offload.md §6d)
   against the seed's (SGD, log1p(n) only, rounding) on the same samples. Deterministic for the seed; no time. */
TEST(ours_meets_g4_on_varlstm) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m, *seed = new_pilot();
  mlsys_offload_data_opts o;
  mlsys_offload_pilot_data tr, va, te;
  mlsys_offload_fit_opts fo;
  mlsys_offload_fit_result fr;
  mlsys_offload_pilot_eval ev, evs;
  int e, mi, mc;
  load_trees();
  memset(&c, 0, sizeof c);
  c.len_code = 32;
  c.adam = 1;
  c.lr = 0.001f;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  memset(&o, 0, sizeof o);
  o.model = "varlstm";
  o.pin_weights = 1;
  o.act_frac = 0.5;
  REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees, 2100, &o, &tr));
  o.act_frac = 0;
  o.hw.gpu_bytes = tr.gpu_bytes;
  REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees + 2100, 300, &o, &va));
  REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees + 2400, 600, &o, &te));
  printf("    varlstm samples: %d train, %d validation, %d held out (infeasible at the budget: %d, %d, %d)\n", tr.n, va.n, te.n,
         tr.n_infeasible, va.n_infeasible, te.n_infeasible);
  REQUIRE(g_n == 3000 && tr.n >= 500 && va.n >= 70 && te.n >= 140);
  memset(&fo, 0, sizeof fo);
  fo.max_epochs = 600;
  fo.patience = 100;
  fo.snap = 1;
  REQUIRE_OK(mlsys_offload_pilot_fit(m, &tr, &va, &fo, &fr));
  CHECK(mlsys_offload_pilot_codebook_size(m) >= 10 && mlsys_offload_pilot_codebook_size(m) < tr.n / 4);
  REQUIRE_OK(mlsys_offload_pilot_evaluate(m, &te, &o.hw, &ev));
  recount(m, &te, &e, &mi, &mc);
  CHECK_EQ_INT(ev.exact, e);
  CHECK_EQ_INT(ev.mispred, mi);
  CHECK_EQ_INT(ev.mispred_cache, mc);
  /* the seed's pilot on the same data (its x_e is the first e_proj + 2 features of ours: the code is appended) */
  {
    mlsys_offload_pilot_data a = tr, b = va, t2 = te;
    int s;
    float *xa = (float *)malloc(sizeof(float) * (size_t)tr.n * 34), *xb = (float *)malloc(sizeof(float) * (size_t)va.n * 34),
          *xt = (float *)malloc(sizeof(float) * (size_t)te.n * 34);
    REQUIRE(xa && xb && xt);
    for (s = 0; s < tr.n; s++) memcpy(xa + (size_t)s * 34, tr.x_e + (size_t)s * tr.xe_dim, 34 * sizeof(float));
    for (s = 0; s < va.n; s++) memcpy(xb + (size_t)s * 34, va.x_e + (size_t)s * va.xe_dim, 34 * sizeof(float));
    for (s = 0; s < te.n; s++) memcpy(xt + (size_t)s * 34, te.x_e + (size_t)s * te.xe_dim, 34 * sizeof(float));
    a.x_e = xa; b.x_e = xb; t2.x_e = xt;
    a.xe_dim = b.xe_dim = t2.xe_dim = 34;
    fo.snap = 0;
    REQUIRE_OK(mlsys_offload_pilot_fit(seed, &a, &b, &fo, &fr));
    REQUIRE_OK(mlsys_offload_pilot_evaluate(seed, &t2, &o.hw, &evs));
    free(xa);
    free(xb);
    free(xt);
  }
  printf("    varlstm, %d held-out documents: ours exact %d (%.0f %%), mis-predicted %d, time %.3fx the labels' plans; the "
         "seed's pilot exact %d, time %.3fx\n", ev.n, ev.exact, 100.0 * ev.exact / ev.n, ev.mispred,
         ev.time_pred_us / ev.time_oracle_us, evs.exact, evs.time_pred_us / evs.time_oracle_us);
  CHECK_MSG(ev.exact >= ev.n * 8 / 10, "G4: %d of %d exact", ev.exact, ev.n);
  CHECK(ev.exact > evs.exact + ev.n / 2);
  CHECK(ev.time_pred_us < evs.time_pred_us);
  mlsys_offload_pilot_data_free(&tr);
  mlsys_offload_pilot_data_free(&va);
  mlsys_offload_pilot_data_free(&te);
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(seed);
}

TEST(other_models_programs_and_labels) {
  static const struct { const char *model; int rows, nzero, zero[3], nn_type; } P[] = {
      /* varlstm: loop, MatMul, branch, (first step: nothing | MatMul), LSTMCell, Tanh, MatMul, Softmax */
      {"varlstm", 8, 2, {0, 2}, 1},
      /* varbert: loop, 10 layer ops, MatMul, Softmax */
      {"varbert", 13, 1, {0}, 2},
      /* moe: loop, 5 attention ops, router MatMul, TopK, expert loop, Gather MatMul Gelu MatMul, ScatterND, Add,
         LayerNorm, MatMul, Softmax */
      {"moe", 18, 2, {0, 8}, 2},
  };
  int c;
  mlsys_offload_prog p;
  CHECK(mlsys_offload_prog_model("cnn", &p) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "cnn");
  load_trees();
  for (c = 0; c < 3; c++) {
    mlsys_offload_sig rows[32];
    mlsys_offload_pilot *m = new_pilot();
    mlsys_offload_data_opts o;
    mlsys_offload_pilot_data d;
    int n = 0, i, e, s, z, pairs = 0;
    REQUIRE_OK(mlsys_offload_prog_model(P[c].model, &p));
    CHECK_EQ_INT(p.nn_type, P[c].nn_type);
    REQUIRE_OK(mlsys_offload_afm(&p, rows, 32, &n));
    CHECK_MSG(n == P[c].rows, "%s: %d AFM rows", P[c].model, n);
    for (z = 0; z < P[c].nzero; z++)
      for (e = 0; e < MLSYS_OFFLOAD_NIDIOM; e++) CHECK(rows[P[c].zero[z]].idiom[e] == 0);
    mlsys_offload_prog_free(&p);
    /* 12 documents of 4 sentences, small layers so the DP stays quick */
    memset(&o, 0, sizeof o);
    o.model = P[c].model;
    o.pin_weights = 1;
    o.act_frac = 1;
    o.hidden = 64;
    o.in_dim = 64;
    o.layers = 2;
    REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees, 48, &o, &d));
    CHECK(d.n + d.n_infeasible == 12 && d.n >= 6);
    for (s = 0; s < d.n; s++) {
      const float *lab = d.label + (size_t)s * 160;
      int k, sum = 0;
      CHECK_EQ_INT(d.nn_type[s], P[c].nn_type);
      CHECK_EQ_INT(d.first_tree[s] % 4, 0);
      for (k = 0; k < 16 && lab[10 * k] > 0; k++) sum += (int)lab[10 * k];
      CHECK_EQ_INT(sum, d.trace[s].n_op);
      /* varlstm and varbert: the iteration depends on the length only, so equal lengths give equal labels */
      if (strcmp(P[c].model, "moe"))
        for (i = 0; i < s; i++) {
          int li = 0, ls = 0, j, t;
          for (j = 0; j < 4; j++)
            for (t = 0; t < g_trees[d.first_tree[i] + j].n; t++) li += g_trees[d.first_tree[i] + j].word[t] != 0;
          for (j = 0; j < 4; j++)
            for (t = 0; t < g_trees[d.first_tree[s] + j].n; t++) ls += g_trees[d.first_tree[s] + j].word[t] != 0;
          if (li == ls) {
            CHECK(!memcmp(lab, d.label + (size_t)i * 160, 160 * sizeof(float)));
            pairs++;
          }
        }
    }
    if (strcmp(P[c].model, "moe")) CHECK_MSG(pairs >= 3, "%s: %d pairs of equal length", P[c].model, pairs);
    mlsys_offload_pilot_data_free(&d);
    mlsys_offload_pilot_free(m);
  }
  {
    /* MoE: the router follows the words, so the same sentences give the same trace and others differ */
    mlsys_offload_pilot *m = new_pilot();
    mlsys_offload_data_opts o;
    mlsys_offload_pilot_data a, b;
    memset(&o, 0, sizeof o);
    o.model = "moe";
    o.hidden = o.in_dim = 64;
    o.layers = 2;
    o.hw.gpu_bytes = 1LL << 30;
    REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees, 8, &o, &a));
    REQUIRE_OK(mlsys_offload_pilot_data_make(m, g_trees, 8, &o, &b));
    REQUIRE(a.n == 2 && b.n == 2);
    CHECK(a.trace[0].n_op == b.trace[0].n_op && a.trace[0].n_t == b.trace[0].n_t);
    CHECK(a.trace[0].n_op != a.trace[1].n_op || a.trace[0].n_ids != a.trace[1].n_ids);
    mlsys_offload_pilot_data_free(&a);
    mlsys_offload_pilot_data_free(&b);
    o.top_k = 20;
    CHECK(mlsys_offload_pilot_data_make(m, g_trees, 8, &o, &a) == MLSYS_ERR_ARG);
    o.top_k = 0;
    o.model = "gru";
    CHECK(mlsys_offload_pilot_data_make(m, g_trees, 8, &o, &a) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "gru");
    mlsys_offload_pilot_free(m);
  }
}

TEST(data_bad_input) {
  mlsys_offload_pilot *m = new_pilot();
  mlsys_offload_data_opts o;
  mlsys_offload_pilot_data d;
  load_trees();
  memset(&o, 0, sizeof o);
  CHECK(mlsys_offload_pilot_data_make(m, g_trees, 10, &o, &d) == MLSYS_ERR_ARG);   /* no budget */
  CHECK_CONTAINS(mlsys_last_error(), "GPU bytes");
  o.hw.gpu_bytes = 1000;   /* far too small: every sample is infeasible */
  CHECK(mlsys_offload_pilot_data_make(m, g_trees, 10, &o, &d) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "none of the 10 samples");
  CHECK(d.n == 0 && d.trace == NULL);
  o.batch = 20;
  CHECK(mlsys_offload_pilot_data_make(m, g_trees, 10, &o, &d) == MLSYS_ERR_ARG);
  mlsys_offload_pilot_free(m);
}

TEST(zz_cleanup) {
  int i;
  mlsys_offload_pilot_data_free(&g_train);
  mlsys_offload_pilot_data_free(&g_test);
  for (i = 0; i < g_n; i++) mlsys_offload_tree_free(&g_trees[i]);
  free(g_trees);
  CHECK(g_train.n == 0);
}

TEST_MAIN()
