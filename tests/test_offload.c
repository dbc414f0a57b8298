/* Tests for sections 1-4 of mlsys_offload.h: idioms and signatures (the seed's Fig. 3), the AFM rules, traces (builder,
   our JSON-lines format, the DTR prototype's logs from tests/data/dtr/logs.zip), the partition DP against brute force,
   the even-split heuristics, and the identities of the DyNN-Offload and PyTorch simulators. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"
#include "tests/dtr_logs.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- section 1 ---- */

TEST(fig3_matmul_signature) {
  /* the seed's Fig. 3: matmul((ar,ac),(br,bc)) = [1,0,0,1,1,0, ar+br, ac+bc, 0] */
  int64_t a[2] = {3, 4}, b[2] = {4, 5};
  const int64_t *sh[2] = {a, b};
  int rk[2] = {2, 2};
  mlsys_offload_sig s;
  int32_t want[6] = {1, 0, 0, 1, 1, 0};
  int k;
  REQUIRE_OK(mlsys_offload_sig_of("MatMul", 2, sh, rk, &s));
  for (k = 0; k < 6; k++) CHECK_EQ_INT(s.idiom[k], want[k]);
  CHECK_EQ_INT(s.dim[0], 7);
  CHECK_EQ_INT(s.dim[1], 9);
  CHECK_EQ_INT(s.dim[2], 0);
  /* PyTorch spellings reach the same row */
  REQUIRE_OK(mlsys_offload_sig_of("aten::mm", 2, sh, rk, &s));
  CHECK_EQ_INT(s.idiom[0], 1);
  CHECK_EQ_INT(s.dim[0], 7);
}

TEST(signature_rank_rules_and_backward) {
  /* rank 4 (NCHW): dim[2] = H*W; rank 1: dim[0] only; scalars nothing */
  int64_t x[4] = {8, 3, 32, 32}, w[4] = {16, 3, 3, 3}, bias[1] = {16};
  const int64_t *sh[3] = {x, w, bias};
  int rk[3] = {4, 4, 1}, k;
  int32_t id[6];
  mlsys_offload_sig s;
  REQUIRE_OK(mlsys_offload_sig_of("Conv", 3, sh, rk, &s));
  CHECK_EQ_INT(s.idiom[MLSYS_OFFLOAD_STENCIL], 1);
  CHECK_EQ_INT(s.dim[0], 8 + 16 + 16);
  CHECK_EQ_INT(s.dim[1], 3 + 3);
  CHECK_EQ_INT(s.dim[2], 32 * 32 + 3 * 3);
  /* MatMulBackward = 2x MatMul (spec §3.1); PyTorch's autograd names with a trailing number too */
  REQUIRE(mlsys_offload_op_idioms("MmBackward0", id));
  CHECK_EQ_INT(id[0], 2);
  CHECK_EQ_INT(id[3], 2);
  CHECK_EQ_INT(id[4], 2);
  REQUIRE(mlsys_offload_op_idioms("threshold_backward", id));
  for (k = 0; k < 6; k++) CHECK_EQ_INT(id[k], k == MLSYS_OFFLOAD_STREAM ? 2 : 0);
  CHECK(!mlsys_offload_op_idioms("frobnicate", id));
  CHECK_EQ_INT(mlsys_offload_sig_of("frobnicate", 0, NULL, NULL, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "frobnicate");
  {
    int64_t neg[2] = {3, -1};
    const int64_t *sn[1] = {neg};
    int rn[1] = {2};
    CHECK_EQ_INT(mlsys_offload_sig_of("Add", 1, sn, rn, &s), MLSYS_ERR_ARG);
  }
  /* every catalogue row is found under its own name */
  {
    int n, i;
    const mlsys_offload_idiom *c = mlsys_offload_catalog(&n);
    CHECK(n >= 19);
    for (i = 0; i < n; i++) CHECK_EQ_INT(mlsys_offload_catalog_find(c[i].op), i);
  }
}

static mlsys_offload_sig sig1(int idiom, int64_t d0) {
  mlsys_offload_sig s;
  memset(&s, 0, sizeof s);
  s.idiom[idiom] = 1;
  s.dim[0] = d0;
  return s;
}

TEST(afm_rules) {
  /* Fig. 4 shape: a Tree-CNN node = 4 operator rows and 1 control-flow row. Program: conv, relu, pool, score, then
     "activate the parent only if its score is the highest" = a branch of (matmul) or (nothing) */
  mlsys_offload_prog p;
  mlsys_offload_sig rows[16], s;
  int n = 0, ops[4], alt[2], seq[5], i;
  mlsys_offload_prog_init(&p, 0);
  for (i = 0; i < 4; i++) {
    s = sig1(i % 6, i + 1);
    ops[i] = mlsys_offload_prog_op(&p, &s);
  }
  s = sig1(MLSYS_OFFLOAD_TRANSPOSE, 9);
  alt[0] = mlsys_offload_prog_op(&p, &s);
  alt[1] = mlsys_offload_prog_seq(&p, 0, NULL);
  for (i = 0; i < 4; i++) seq[i] = ops[i];
  seq[4] = mlsys_offload_prog_branch(&p, 2, alt);
  REQUIRE(seq[4] >= 0);
  REQUIRE(mlsys_offload_prog_seq(&p, 5, seq) >= 0);
  REQUIRE_OK(mlsys_offload_afm(&p, rows, 16, &n));
  CHECK_EQ_INT(n, 6);   /* 4 ops, the branch's zero row, the alternative's op */
  for (i = 0; i < 4; i++) CHECK_EQ_INT(rows[i].dim[0], i + 1);
  {
    mlsys_offload_sig z;
    memset(&z, 0, sizeof z);
    CHECK(mlsys_offload_sig_equal(&rows[4], &z));
  }
  CHECK_EQ_INT(rows[5].idiom[MLSYS_OFFLOAD_TRANSPOSE], 1);
  CHECK_EQ_INT(rows[5].dim[0], 9);
  /* a repeated occurrence gives a repeated row; a loop gives one zero row and its body once */
  {
    int body, lp, top[3];
    top[0] = ops[0];
    body = mlsys_offload_prog_seq(&p, 1, &ops[1]);
    lp = mlsys_offload_prog_loop(&p, body, 1, 10);
    top[1] = lp;
    top[2] = ops[0];
    REQUIRE(mlsys_offload_prog_seq(&p, 3, top) >= 0);
    REQUIRE_OK(mlsys_offload_afm(&p, rows, 16, &n));
    CHECK_EQ_INT(n, 4);
    CHECK(mlsys_offload_sig_equal(&rows[0], &rows[3]));
    CHECK_EQ_INT(rows[1].dim[0], 0);
    CHECK_EQ_INT(rows[2].dim[0], 2);
    CHECK_EQ_INT(mlsys_offload_afm(&p, rows, 3, &n), MLSYS_ERR_TOO_BIG);
  }
  CHECK_EQ_INT(mlsys_offload_prog_loop(&p, 0, 5, 2), -1);
  CHECK_EQ_INT(mlsys_offload_prog_seq(&p, 1, (int[]){999}), -1);
  CHECK_CONTAINS(mlsys_last_error(), "999");
  mlsys_offload_prog_free(&p);
}

/* ---- random traces ---- */

/* A random trace: nt tensors (a few params and inputs, the rest written once each by the op that creates them,
   some updated in place), n ops reading 1-3 earlier tensors; sizes in [1, 100] bytes, times in [1, 50] µs. */
static void random_trace(mlsys_rng *g, int n, mlsys_offload_trace *tr) {
  int np = 1 + (int)mlsys_rng_below(g, 3), i, j;
  mlsys_offload_trace_init(tr);
  for (i = 0; i < np; i++) mlsys_offload_trace_tensor(tr, 1 + (int64_t)mlsys_rng_below(g, 100), i == 0 ? MLSYS_OFFLOAD_T_INPUT : MLSYS_OFFLOAD_T_PARAM);
  for (i = 0; i < n; i++) {
    int in[3], nin = 1 + (int)mlsys_rng_below(g, 3), out[2], nout = 1;
    for (j = 0; j < nin; j++) in[j] = (int)mlsys_rng_below(g, (uint64_t)tr->n_t);
    out[0] = mlsys_offload_trace_tensor(tr, 1 + (int64_t)mlsys_rng_below(g, 100),
                                        i > n / 2 ? MLSYS_OFFLOAD_T_GRAD : MLSYS_OFFLOAD_T_ACT);
    if (mlsys_rng_below(g, 5) == 0) out[nout++] = in[0];   /* an in-place update */
    mlsys_offload_trace_op(tr, i % 3 ? "Add" : "MatMul", 1 + (double)mlsys_rng_below(g, 50), nin, in, nout, out,
                           mlsys_rng_below(g, 4) == 0 ? (int64_t)mlsys_rng_below(g, 30) : 0, NULL);
  }
}

TEST(trace_builder_rejects_bad_ops) {
  mlsys_offload_trace tr;
  int a, b;
  mlsys_offload_trace_init(&tr);
  a = mlsys_offload_trace_tensor(&tr, 10, MLSYS_OFFLOAD_T_PARAM);
  b = mlsys_offload_trace_tensor(&tr, 20, MLSYS_OFFLOAD_T_ACT);
  CHECK_EQ_INT(mlsys_offload_trace_tensor(&tr, -1, MLSYS_OFFLOAD_T_ACT), -1);
  CHECK_EQ_INT(mlsys_offload_trace_op(&tr, "Add", 1, 1, &a, 1, &b, 0, NULL), 0);
  CHECK_EQ_INT(mlsys_offload_trace_op(&tr, "Add", 1, 1, (int[]){7}, 1, &b, 0, NULL), -1);
  CHECK_CONTAINS(mlsys_last_error(), "reads tensor 7");
  CHECK_EQ_INT(mlsys_offload_trace_op(&tr, "Add", -1, 1, &a, 1, &b, 0, NULL), -1);
  CHECK_EQ_INT(mlsys_offload_trace_op(&tr, "Add", NAN, 1, &a, 1, &b, 0, NULL), -1);
  CHECK_EQ_INT(tr.n_op, 1);
  mlsys_offload_trace_free(&tr);
}

TEST(facts_peak_by_hand) {
  /* param P 100 (persistent), x 10 written by op0, y 20 by op1 reading x, z 5 by op2 reading y and P, ws 7 at op1.
     live: op0 {x}=10, op1 {x,y}+7=37, op2 {y,z}=25; peak = 100 + 37 = 137 at op 1 */
  mlsys_offload_trace tr;
  mlsys_offload_facts f;
  int P, x, y, z, in2[2];
  mlsys_offload_trace_init(&tr);
  P = mlsys_offload_trace_tensor(&tr, 100, MLSYS_OFFLOAD_T_PARAM);
  x = mlsys_offload_trace_tensor(&tr, 10, MLSYS_OFFLOAD_T_ACT);
  y = mlsys_offload_trace_tensor(&tr, 20, MLSYS_OFFLOAD_T_ACT);
  z = mlsys_offload_trace_tensor(&tr, 5, MLSYS_OFFLOAD_T_ACT);
  mlsys_offload_trace_op(&tr, "Gather", 1, 1, &P, 1, &x, 0, NULL);
  mlsys_offload_trace_op(&tr, "Relu", 2, 1, &x, 1, &y, 7, NULL);
  in2[0] = y; in2[1] = P;
  mlsys_offload_trace_op(&tr, "MatMul", 3, 2, in2, 1, &z, 0, NULL);
  REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
  CHECK_EQ_INT(f.peak_bytes, 137);
  CHECK_EQ_INT(f.peak_op, 1);
  CHECK_EQ_INT(f.persistent_bytes, 100);
  CHECK_EQ_INT(f.first_write[x], 0);
  CHECK_EQ_INT(f.first_write[P], -1);
  CHECK_EQ_INT(f.last_use[P], 3);   /* a weight lives to the end */
  CHECK_EQ_INT(f.last_use[x], 1);
  CHECK_NEAR(f.compute_us, 6, 1e-12);
  mlsys_offload_facts_free(&f);
  mlsys_offload_trace_free(&tr);
}

static int traces_equal(const mlsys_offload_trace *a, const mlsys_offload_trace *b) {
  int i, j;
  if (a->n_op != b->n_op || a->n_t != b->n_t || a->fixed_bytes != b->fixed_bytes) return 0;
  for (i = 0; i < a->n_t; i++)
    if (a->t[i].bytes != b->t[i].bytes || a->t[i].kind != b->t[i].kind) return 0;
  for (i = 0; i < a->n_op; i++) {
    const mlsys_offload_op *x = &a->op[i], *y = &b->op[i];
    if (strcmp(a->names[x->name], b->names[y->name]) || x->time_us != y->time_us || x->n_in != y->n_in ||
        x->n_out != y->n_out || x->workspace != y->workspace || !mlsys_offload_sig_equal(&x->sig, &y->sig) ||
        x->afm_row != y->afm_row || x->is_bwd != y->is_bwd)
      return 0;
    for (j = 0; j < x->n_in + x->n_out; j++)
      if (a->ids[x->in0 + j] != b->ids[y->in0 + j]) return 0;
  }
  return 1;
}

static char *write_to_mem(const mlsys_offload_trace *tr, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  if (mlsys_offload_trace_write(f, tr)) { fclose(f); free(buf); return NULL; }
  fclose(f);
  return buf;
}

TEST(native_format_round_trip_and_bad_input) {
  mlsys_rng g;
  int i, bad = 0;
  mlsys_rng_seed(&g, 11);
  for (i = 0; i < 50; i++) {
    mlsys_offload_trace a, b;
    size_t len;
    char *buf;
    random_trace(&g, 1 + (int)mlsys_rng_below(&g, 40), &a);
    a.fixed_bytes = (int64_t)i * 1000;
    a.op[0].afm_row = 3;
    a.op[a.n_op - 1].is_bwd = 1;
    a.op[0].time_us = 0.1 + i / 7.0;   /* not a short decimal: the writer must round-trip doubles */
    REQUIRE((buf = write_to_mem(&a, &len)));
    if (mlsys_offload_trace_read(buf, len, "mem", MLSYS_OFFLOAD_FMT_AUTO, &b)) {
      printf("    read back failed: %s\n", mlsys_last_error());
      bad++;
    } else {
      if (!traces_equal(&a, &b)) bad++;
      mlsys_offload_trace_free(&b);
    }
    /* every truncation at a line boundary but the whole is still a valid (shorter) trace or an error, never a
       crash; truncation mid-line is an error naming the line */
    {
      size_t cut = len / 2;
      while (cut > 0 && buf[cut - 1] == '\n') cut--;
      if (cut > 0 && buf[cut] != '\n') {
        mlsys_status st = mlsys_offload_trace_read(buf, cut, "cut", MLSYS_OFFLOAD_FMT_MLSYS, &b);
        if (st == MLSYS_OK) mlsys_offload_trace_free(&b);
        else CHECK_CONTAINS(mlsys_last_error(), "cut:");
      }
    }
    free(buf);
    mlsys_offload_trace_free(&a);
  }
  CHECK_EQ_INT(bad, 0);
  {
    static const char *cases[][2] = {
        {"", "empty trace"},
        {"{\"mlsys_offload_trace\":2}\n", "version"},
        {"{\"op\":\"Add\",\"us\":1}\n", "first line"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":1,\"bytes\":4}\n", "in order"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":-4}\n", "bytes"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4,\"kind\":\"weird\"}\n", "kind"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1,\"in\":[1]}\n", "tensor 1"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":-1,\"in\":[0]}\n", "us"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1,\"sig\":[1,2]}\n", "sig"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1,\"in\":\"x\"}\n", "array"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n", "no ops"},
        {"{\"mlsys_offload_trace\":1}\n[1,2]\n", "object"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1}\n{\"t\":1,\"bytes\":4}\n", "after the first op"},
        {"{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1,\"in\":[0]\n", "mem:3"},
    };
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
      mlsys_offload_trace t;
      mlsys_status st = mlsys_offload_trace_read(cases[i][0], strlen(cases[i][0]), "mem", MLSYS_OFFLOAD_FMT_MLSYS, &t);
      CHECK_MSG(st != MLSYS_OK, "case %d accepted", i);
      if (st == MLSYS_OK) mlsys_offload_trace_free(&t);
      else CHECK_MSG(strstr(mlsys_last_error(), cases[i][1]) != NULL, "case %d: '%s' lacks '%s'", i, mlsys_last_error(), cases[i][1]);
    }
  }
}

/* ---- DTR logs ---- */


static const char *const dtr_logs[] = {
    "unet-6-8000000000.0-2020-10-1-10-57-18-default.log",
    "resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log",
    "inceptionv4-64-10000000000.0-2020-10-1-10-55-0-default.log",
    "transformer-10-8000000000.0-2020-10-1-10-56-5-default.log",
    "tv_densenet121-84-10000000000.0-2020-10-1-13-41-18-default.log",
    "treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log",
    "lstm-128-11000000000.0-2020-10-1-16-38-52-default.log",
    "unroll_gan-512-10000000000.0-2020-10-1-18-43-42-default.log",
};

TEST(dtr_logs_import_and_simulate) {
  /* each real trace: same op count, time and bytes as mlsys_remat's reader (one parser, two views); PyTorch's peak is
     at least the largest op's working set; at half the peak DyNN-Offload runs (double buffering fits every op of
     these traces) and obeys the simulator's invariants */
  int i;
  if (system("command -v unzip >/dev/null 2>&1") != 0) SKIP_DEP("unzip is not installed");
  for (i = 0; i < (int)(sizeof dtr_logs / sizeof dtr_logs[0]); i++) {
    size_t len = 0;
    char *text = NULL;
    mlsys_offload_trace tr;
    mlsys_remat_graph g;
    mlsys_remat_dtr_opts o;
    mlsys_remat_dtr_info info;
    mlsys_offload_facts f;
    mlsys_offload_hw hw;
    mlsys_offload_simres rp, rd;
    int64_t bytes = 0;
    int j;
    if (dtr_log_extract(dtr_logs[i], &text, &len)) printf("    %s has no %s\n", dtr_zip_path(), dtr_logs[i]);
    REQUIRE(text != NULL);
    REQUIRE_OK(mlsys_offload_trace_read(text, len, dtr_logs[i], MLSYS_OFFLOAD_FMT_AUTO, &tr));
    memset(&o, 0, sizeof o);
    REQUIRE_OK(mlsys_remat_import_dtr(text, len, dtr_logs[i], &o, &g, &info));
    CHECK_EQ_INT(tr.n_op, info.nodes);
    for (j = 0; j < tr.n_t; j++) bytes += tr.t[j].bytes;
    CHECK_EQ_INT(bytes, (int64_t)info.total_bytes);
    CHECK_EQ_INT(tr.fixed_bytes, (int64_t)info.fixed_bytes);
    REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
    CHECK_NEAR(f.compute_us, info.total_time / 1000.0, 1e-6 * f.compute_us + 1e-9);
    memset(&hw, 0, sizeof hw);
    hw.gpu_bytes = f.peak_bytes;
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_PYTORCH, &rp));
    CHECK(rp.feasible);
    hw.gpu_bytes = f.peak_bytes - 1;
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_PYTORCH, &rp));
    CHECK(!rp.feasible);
    hw.gpu_bytes = tr.fixed_bytes + (f.peak_bytes - tr.fixed_bytes) / 2;
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &rd));
    printf("    %-14.14s %5d ops, peak %7.1f MB, Σc %8.1f ms; DO at half: %s %8.1f ms (%d blocks, %.1f MB in)\n",
           dtr_logs[i], tr.n_op, f.peak_bytes / 1e6, f.compute_us / 1e3, rd.feasible ? "" : "infeasible", rd.time_us / 1e3,
           rd.n_blocks, rd.bytes_h2d / 1e6);
    if (rd.feasible) {
      CHECK(rd.time_us >= rd.compute_us - 1e-6);
      CHECK(rd.peak_bytes <= hw.gpu_bytes);
    } else
      CHECK_CONTAINS(rd.why, "buffer");
    mlsys_offload_facts_free(&f);
    mlsys_remat_graph_free(&g);
    mlsys_offload_trace_free(&tr);
    free(text);
  }
}

/* ---- partitions ---- */

static mlsys_offload_hw hw_of(int64_t gpu, double gbps, double lat) {
  mlsys_offload_hw hw;
  memset(&hw, 0, sizeof hw);
  hw.gpu_bytes = gpu;
  hw.reserve_frac = -1;   /* none: buffers are exactly half */
  hw.h2d_gbps = hw.d2h_gbps = gbps;
  hw.lat_us = lat;
  return hw;
}

/* minimum of plan_time over all 2^(n-1) contiguous partitions (with at most kmax blocks if kmax > 0) */
static double brute(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int kmax, int *best_k) {
  int n = tr->n_op, mask, start[32], k, i;
  double best = INFINITY;
  for (mask = 0; mask < (1 << (n - 1)); mask++) {
    double t;
    k = 0;
    start[k++] = 0;
    for (i = 1; i < n; i++)
      if (mask >> (i - 1) & 1) start[k++] = i;
    start[k] = n;
    if (kmax > 0 && k > kmax) continue;
    t = mlsys_offload_plan_time(tr, hw, start, k);
    if (t < best) { best = t; *best_k = k; }
  }
  return best;
}

TEST(dp_equals_brute_force) {
  /* 300 random traces of 2..14 ops, random capacities and bandwidths (some so small that one op does not fit):
     the DP's time equals the brute-force minimum, its partition fits and has that time; infeasible exactly when
     brute force finds nothing; with k_max, the same against partitions of at most k_max blocks */
  mlsys_rng g;
  int i, n_inf = 0, n_multi = 0, bad = 0;
  mlsys_rng_seed(&g, 2024);
  for (i = 0; i < 300; i++) {
    mlsys_offload_trace tr;
    mlsys_offload_hw hw;
    mlsys_offload_blocks b;
    mlsys_offload_part_opts o;
    mlsys_status st;
    int n = 2 + (int)mlsys_rng_below(&g, 13), bk = 0, kmax = i % 3 == 0 ? 1 + (int)mlsys_rng_below(&g, 4) : 0;
    double bt;
    random_trace(&g, n, &tr);
    hw = hw_of(200 + (int64_t)mlsys_rng_below(&g, 1500), mlsys_rng_below(&g, 2) ? 1e-3 * (1 + mlsys_rng_below(&g, 50)) : 1e-2,
               (double)mlsys_rng_below(&g, 3));
    hw.overlap_evict_prefetch = (int)mlsys_rng_below(&g, 2);
    memset(&o, 0, sizeof o);
    o.k_max = kmax;
    bt = brute(&tr, &hw, kmax, &bk);
    st = mlsys_offload_partition(&tr, &hw, &o, &b);
    if (bt == INFINITY) {
      n_inf++;
      if (st != MLSYS_ERR_INFEASIBLE) {
        bad++;
        printf("    case %d: brute force infeasible, DP %s\n", i, mlsys_status_str(st));
        if (st == MLSYS_OK) mlsys_offload_blocks_free(&b);
      }
    } else if (st != MLSYS_OK) {
      bad++;
      printf("    case %d: DP failed (%s) where brute force found %g\n", i, mlsys_last_error(), bt);
    } else {
      double pt = mlsys_offload_plan_time(&tr, &hw, b.start, b.k);
      if (fabs(b.time_us - bt) > 1e-9 * bt || fabs(pt - bt) > 1e-9 * bt || (kmax && b.k > kmax)) {
        bad++;
        printf("    case %d (n=%d kmax=%d): DP %.9g (k=%d, plan %.9g) vs brute %.9g (k=%d)\n", i, n, kmax, b.time_us, b.k, pt, bt, bk);
      }
      n_multi += b.k > 1;
      mlsys_offload_blocks_free(&b);
    }
    mlsys_offload_trace_free(&tr);
  }
  printf("    300 cases: %d infeasible, %d with more than one block\n", n_inf, n_multi);
  CHECK_EQ_INT(bad, 0);
  CHECK(n_inf > 10 && n_multi > 100);   /* the generator covers both regimes */
}

TEST(infeasible_op_is_named) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw;
  mlsys_offload_blocks b;
  int x, y;
  mlsys_offload_trace_init(&tr);
  x = mlsys_offload_trace_tensor(&tr, 60, MLSYS_OFFLOAD_T_INPUT);
  y = mlsys_offload_trace_tensor(&tr, 60, MLSYS_OFFLOAD_T_ACT);
  mlsys_offload_trace_op(&tr, "Conv", 1, 1, &x, 1, &y, 0, NULL);
  hw = hw_of(200, 1, 0);   /* buffers of 100 < 120 */
  CHECK_EQ_INT(mlsys_offload_partition(&tr, &hw, NULL, &b), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "op 0 (Conv) needs 120 bytes");
  hw.gpu_bytes = 0;
  CHECK_EQ_INT(mlsys_offload_partition(&tr, &hw, NULL, &b), MLSYS_ERR_ARG);
  mlsys_offload_trace_free(&tr);
}

/* A chain of n layers: forward op i reads act i-1 and weight i, writes act i; then backward in reverse, reading the
   saved activation and the incoming gradient; weights' gradients are results. Unit-ish sizes. */
static void chain_trace(int n, int64_t act, int64_t w, double t_us, mlsys_offload_trace *tr) {
  int i, *a = (int *)malloc(sizeof(int) * (size_t)(n + 1)), *W = (int *)malloc(sizeof(int) * (size_t)n), gcur;
  mlsys_offload_trace_init(tr);
  a[0] = mlsys_offload_trace_tensor(tr, act, MLSYS_OFFLOAD_T_INPUT);
  for (i = 0; i < n; i++) W[i] = mlsys_offload_trace_tensor(tr, w, MLSYS_OFFLOAD_T_PARAM);
  for (i = 0; i < n; i++) {
    int in[2] = {a[i], W[i]};
    a[i + 1] = mlsys_offload_trace_tensor(tr, act, MLSYS_OFFLOAD_T_ACT);
    mlsys_offload_trace_op(tr, "MatMul", t_us, 2, in, 1, &a[i + 1], 0, NULL);
  }
  gcur = a[n];
  for (i = n - 1; i >= 0; i--) {
    int in[3] = {gcur, a[i], W[i]}, out[2];
    out[0] = mlsys_offload_trace_tensor(tr, act, MLSYS_OFFLOAD_T_GRAD);   /* d act i, read by the next step */
    out[1] = mlsys_offload_trace_tensor(tr, w, MLSYS_OFFLOAD_T_GRAD);     /* d W i: a result */
    mlsys_offload_trace_op(tr, "MatMulBackward", 2 * t_us, 3, in, 2, out, 0, NULL);
    tr->op[tr->n_op - 1].is_bwd = 1;
    gcur = out[0];
  }
  free(a);
  free(W);
}

TEST(heuristics_fit_and_never_beat_the_dp) {
  /* on chains and random traces, every even split fits its buffers (splitting further when needed) and its modelled
     time is never below the DP's; the DP partition is also checked against plan_time */
  mlsys_rng g;
  int i, kind, bad = 0;
  double worst_gap[4] = {0, 0, 0, 0};
  mlsys_rng_seed(&g, 5);
  for (i = 0; i < 40; i++) {
    mlsys_offload_trace tr;
    mlsys_offload_hw hw;
    mlsys_offload_blocks dp;
    mlsys_offload_part_opts o;
    int64_t peak;
    if (i % 2) chain_trace(20 + (int)mlsys_rng_below(&g, 40), 1000, 300, 50, &tr);
    else random_trace(&g, 30 + (int)mlsys_rng_below(&g, 100), &tr);
    peak = mlsys_offload_peak_bytes(&tr);
    hw = hw_of(peak / (2 + (int64_t)mlsys_rng_below(&g, 4)), 0.01 + 0.05 * mlsys_rng_uniform(&g), 1);
    memset(&o, 0, sizeof o);
    if (mlsys_offload_partition(&tr, &hw, &o, &dp)) { mlsys_offload_trace_free(&tr); continue; }
    CHECK_NEAR(dp.time_us, mlsys_offload_plan_time(&tr, &hw, dp.start, dp.k), 1e-9 * dp.time_us);
    for (kind = MLSYS_OFFLOAD_PART_EVEN_OPS; kind <= MLSYS_OFFLOAD_PART_EVEN_BYTES; kind++) {
      mlsys_offload_blocks b;
      o.kind = kind;
      o.k = dp.k;
      REQUIRE_OK(mlsys_offload_partition(&tr, &hw, &o, &b));
      if (!(mlsys_offload_plan_time(&tr, &hw, b.start, b.k) < INFINITY) || b.time_us < dp.time_us * (1 - 1e-12)) bad++;
      if (b.time_us / dp.time_us - 1 > worst_gap[kind]) worst_gap[kind] = b.time_us / dp.time_us - 1;
      mlsys_offload_blocks_free(&b);
    }
    mlsys_offload_blocks_free(&dp);
    mlsys_offload_trace_free(&tr);
  }
  printf("    largest gap over the DP: even ops %.0f %%, even time %.0f %%, even bytes %.0f %%\n", 100 * worst_gap[1],
         100 * worst_gap[2], 100 * worst_gap[3]);
  CHECK_EQ_INT(bad, 0);
}

/* ---- simulators ---- */

TEST(simulator_identities) {
  mlsys_rng g;
  int i, bad = 0;
  mlsys_rng_seed(&g, 77);
  for (i = 0; i < 60; i++) {
    mlsys_offload_trace tr;
    mlsys_offload_hw hw;
    mlsys_offload_simres rd, rp;
    mlsys_offload_blocks b;
    mlsys_offload_facts f;
    if (i % 2) chain_trace(10 + (int)mlsys_rng_below(&g, 30), 1000, 300, 20, &tr);
    else random_trace(&g, 20 + (int)mlsys_rng_below(&g, 60), &tr);
    REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
    /* capacity at or above the peak: DyNN-Offload = PyTorch */
    hw = hw_of(f.peak_bytes + (int64_t)mlsys_rng_below(&g, 100), 12, 10);
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &rd));
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_PYTORCH, &rp));
    if (!rd.feasible || !rp.feasible || rd.time_us != rp.time_us || rp.time_us != f.compute_us) bad++;
    /* under the peak: PyTorch is out of memory, DyNN-Offload stays within capacity and above Σc */
    hw = hw_of(f.peak_bytes / 2, 0.05, 1);
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_PYTORCH, &rp));
    if (rp.feasible) bad++;
    if (mlsys_offload_partition(&tr, &hw, NULL, &b) == MLSYS_OK) {
      double S = 0;
      int k;
      REQUIRE_OK(mlsys_offload_sim_dynn(&tr, &hw, &b, &rd));
      if (!rd.feasible || rd.peak_bytes > hw.gpu_bytes || rd.time_us < f.compute_us - 1e-9) bad++;
      /* infinite bandwidth, no latency: exactly Σc (rounding aside) */
      hw.h2d_gbps = hw.d2h_gbps = hw.d2d_gbps = INFINITY;
      hw.lat_us = -1;
      REQUIRE_OK(mlsys_offload_sim_dynn(&tr, &hw, &b, &rd));
      if (fabs(rd.time_us - f.compute_us) > 1e-9 * f.compute_us) bad++;
      CHECK_NEAR(mlsys_offload_plan_time(&tr, &hw, b.start, b.k), f.compute_us, 1e-9 * f.compute_us);
      /* the model's identity: when every m(B_{i+1}) <= c(B_i), T = m(B_1) + Σc. Slow copies only for block 1:
         with a huge bandwidth the first block's copy time is its latency */
      hw.h2d_gbps = hw.d2h_gbps = 1e9;
      hw.lat_us = 1e-3;
      for (k = 0; k < b.k; k++) {
        int st1[2] = {b.start[k], b.start[k + 1]};
        (void)st1;
      }
      S = mlsys_offload_plan_time(&tr, &hw, b.start, b.k);
      if (!(S >= f.compute_us) || S > f.compute_us + 1e-3 * (tr.n_t + 1) + 1e-6) bad++;
      mlsys_offload_blocks_free(&b);
    }
    mlsys_offload_facts_free(&f);
    mlsys_offload_trace_free(&tr);
  }
  CHECK_EQ_INT(bad, 0);
}

TEST(dynn_events_by_hand) {
  /* chain of 2 layers (tests' chain_trace): f0 reads a0 (input, 100 B), W0 (50) and writes a1 (100); f1 reads a1, W1
     (50), writes a2 (100); b1 reads a2, a1, W1 and writes g1 (100), dW1 (50); b0 reads g1, a0, W0 and writes g0 (100,
     a result: nothing reads it), dW0 (50). Forward 10 µs, backward 20 µs. One block per op, GPU 800 B, no reserve:
     buffers of 400. PCIe 1 B/µs each way, no latency, serialised copies; on-GPU copies at 1.5e6 B/µs.
     Per block, what comes from outside: B1 a0 + W0 over PCIe (150); B2 a1 carried from B1's buffer (100), W1 over
     PCIe (50); B3 a2, a1, W1 all carried (250); B4 g1 carried (100), a0 + W0 over PCIe (150).
     Evictions (exact, in the simulator): B1 a1 and B2 a2 are carried on, not copied out; B3 dW1 (50: dirty, needed by
     nobody next, a result); B4 g0 + dW0 (150). Events on one copy engine:
       S1 = 150. During B1: prefetch B2 (50): 150..200; S2 = max(160, 200) + 100/1.5e6.
       During B2: evict B1 (0) + prefetch B3 (0); S3 = S2 + 10 + 250/1.5e6 = 210 + 350/1.5e6.
       During B3: evict B2 (0) + prefetch B4 (150): S3..S3+150; S4 = max(S3 + 20, S3 + 150) + 100/1.5e6 = 360 + 450/1.5e6.
       During B4: evict B3 (50): S4..S4+50. End = max(S4 + 20, S4 + 50) + 150 = 560 + 450/1.5e6.
     The cost model (DP objective) counts every dirty live tensor as evicted by its block: m(B1) = 150 + a1 100,
     m(B2) = 50 + a2 100, m(B3) = 0 + g1 + dW1 150, m(B4) = 150 + 150:
       T = 250 + max(10, 150) + max(10, 150) + max(20, 300) + 20 + 450/1.5e6 = 870 + 450/1.5e6. */
  mlsys_offload_trace tr;
  mlsys_offload_hw hw;
  mlsys_offload_blocks b;
  mlsys_offload_simres r;
  int start[5] = {0, 1, 2, 3, 4};
  chain_trace(2, 100, 50, 10, &tr);
  hw = hw_of(800, 1e-3, -1);
  b.k = 4;
  b.start = start;
  REQUIRE_OK(mlsys_offload_sim_dynn(&tr, &hw, &b, &r));
  CHECK(r.feasible);
  CHECK_NEAR(r.time_us, 560 + 450 / 1.5e6, 1e-9);
  CHECK_EQ_INT(r.bytes_h2d, 150 + 50 + 0 + 150);
  CHECK_EQ_INT(r.bytes_d2h, 50 + 150);
  CHECK_EQ_INT(r.bytes_d2d, 100 + 250 + 100);
  CHECK_EQ_INT(r.peak_bytes, 800);   /* B3 + B4 working sets: 400 + 400 */
  CHECK_NEAR(r.migration_us, 500 + 450 / 1.5e6, 1e-9);
  CHECK_NEAR(mlsys_offload_plan_time(&tr, &hw, start, 4), 870 + 450 / 1.5e6, 1e-9);
  /* buffers of 300: B3 does not fit */
  hw.gpu_bytes = 600;
  REQUIRE_OK(mlsys_offload_sim_dynn(&tr, &hw, &b, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "block 2");
  mlsys_offload_trace_free(&tr);
}

/* ---- generated DyNN traces ---- */

TEST(link_grammar_trees_parse) {
  /* tests/data/offload/trees.txt: 600 sentences parsed by Debian's link-grammar. The first tree, counted by hand:
     (S (NP adding.g (SBAR (S (NP users.n {with} {'}) (VP add{&}.v))) {user} {'})
        (VP is.v (ADJP much easier.a-c (PP than.e (NP adding.g)) {them} (ADVP manually))) .)
     11 labelled nodes (S NP SBAR S NP VP VP ADJP PP NP ADVP) and 15 words: 26 nodes */
  char *text;
  size_t len;
  mlsys_offload_tree *t;
  int n, i, leaves = 0, bad = 0;
  REQUIRE_OK(mlsys_read_file("tests/data/offload/trees.txt", &text, &len));
  REQUIRE_OK(mlsys_offload_trees_parse(text, len, "trees.txt", &t, &n));
  CHECK_EQ_INT(n, 600);
  CHECK_EQ_INT(t[0].n, 26);
  for (i = 1; i < t[0].n; i++) {
    int k, kids = 0;
    for (k = i + 1; k < t[0].n; k++) kids += t[0].parent[k] == i;
    leaves += kids == 0;
  }
  CHECK_EQ_INT(leaves, 15);
  CHECK_EQ_INT(t[0].parent[0], -1);
  for (i = 0; i < n; i++) {
    int k;
    for (k = 1; k < t[i].n; k++) bad += t[i].parent[k] < 0 || t[i].parent[k] >= k;
    mlsys_offload_tree_free(&t[i]);
  }
  CHECK_EQ_INT(bad, 0);
  mlsys_free(t);
  mlsys_free(text);
  {
    static const char *broken[] = {"(S (NP a b)\n", "(S a))\n"};
    for (i = 0; i < 2; i++) {
      CHECK_EQ_INT(mlsys_offload_trees_parse(broken[i], strlen(broken[i]), "mem", &t, &n), MLSYS_ERR_PARSE);
      CHECK_CONTAINS(mlsys_last_error(), "mem:1");
    }
  }
}

TEST(treelstm_trace_shape) {
  /* op counts from the tree shapes: a leaf is 3 forward ops, an inner node with k children 4 + k, each tree one
     classifier, the batch one loss; every forward op has one backward op (all lie on the loss's path); 4 weights
     get one SGD each. Then the simulator on it: PyTorch fits at the peak, DO at half the peak, DP never slower than
     an even split with as many blocks */
  char *text;
  size_t len;
  mlsys_offload_tree *t;
  mlsys_offload_trace tr;
  int n, i, k, want_fwd = 0, nb = 200, fwd = 0, bwd = 0, sgd = 0;
  REQUIRE_OK(mlsys_read_file("tests/data/offload/trees.txt", &text, &len));
  REQUIRE_OK(mlsys_offload_trees_parse(text, len, "trees.txt", &t, &n));
  for (i = 0; i < nb; i++) {
    for (k = 0; k < t[i].n; k++) {
      int j, kids = 0;
      for (j = k + 1; j < t[i].n; j++) kids += t[i].parent[j] == k;
      want_fwd += kids ? 4 + kids : 3;
    }
    want_fwd += 1 + (i >= 64);   /* past 64 trees, each classifier is folded into the loss with an Add */
  }
  want_fwd += 1;
  REQUIRE_OK(mlsys_offload_gen_treelstm(t, nb, 300, 1090, NULL, &tr));   /* the DTR prototype's TreeLSTM sizes */
  for (i = 0; i < tr.n_op; i++) {
    const char *nm = mlsys_offload_op_name(&tr, i);
    if (!strcmp(nm, "SGD")) sgd++;
    else if (tr.op[i].is_bwd) bwd++;
    else fwd++;
  }
  CHECK_EQ_INT(fwd, want_fwd);
  CHECK_EQ_INT(bwd, want_fwd);
  CHECK_EQ_INT(sgd, 4);
  {
    mlsys_offload_hw hw;
    mlsys_offload_simres r;
    mlsys_offload_blocks dp, ev;
    mlsys_offload_part_opts o;
    int64_t peak = mlsys_offload_peak_bytes(&tr);
    memset(&hw, 0, sizeof hw);
    hw.gpu_bytes = peak / 2;
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &r));
    CHECK(r.feasible && r.peak_bytes <= hw.gpu_bytes && r.time_us >= r.compute_us);
    memset(&o, 0, sizeof o);
    REQUIRE_OK(mlsys_offload_partition(&tr, &hw, &o, &dp));
    o.kind = MLSYS_OFFLOAD_PART_EVEN_TIME;
    o.k = dp.k;
    REQUIRE_OK(mlsys_offload_partition(&tr, &hw, &o, &ev));
    printf("    %d trees: %d ops, peak %.1f MB, Σc %.2f ms; at half the peak DO %.2f ms (%d blocks), even time %.2f ms\n", nb,
           tr.n_op, peak / 1e6, r.compute_us / 1e3, r.time_us / 1e3, dp.k, ev.time_us / 1e3);
    CHECK(ev.time_us >= dp.time_us);
    mlsys_offload_blocks_free(&dp);
    mlsys_offload_blocks_free(&ev);
  }
  mlsys_offload_trace_free(&tr);
  for (i = 0; i < n; i++) mlsys_offload_tree_free(&t[i]);
  mlsys_free(t);
  mlsys_free(text);
}

TEST(varbert_varlstm_moe_shapes) {
  mlsys_offload_trace tr, tr2;
  int i, lens[3] = {5, 1, 9}, fwd = 0;
  int64_t p1, p2;
  /* varbert: 10 forward ops per layer + classifier + loss; the peak grows with depth */
  REQUIRE_OK(mlsys_offload_gen_varbert(4, 2, 128, 256, NULL, &tr));
  for (i = 0; i < tr.n_op; i++) fwd += !tr.op[i].is_bwd;
  CHECK_EQ_INT(fwd, 4 * 10 + 2);
  CHECK_EQ_INT(tr.n_op, 2 * fwd + 4 * 4 + 1);   /* backward mirrors; SGD for 4 weights per layer + the classifier */
  p1 = mlsys_offload_peak_bytes(&tr);
  mlsys_offload_trace_free(&tr);
  REQUIRE_OK(mlsys_offload_gen_varbert(8, 2, 128, 256, NULL, &tr));
  p2 = mlsys_offload_peak_bytes(&tr);
  CHECK(p2 > p1);
  mlsys_offload_trace_free(&tr);
  /* varlstm: first step of a document has no recurrent matmul: 3 ops, later steps 4; one classifier per document */
  REQUIRE_OK(mlsys_offload_gen_varlstm(lens, 3, 300, 128, NULL, &tr));
  fwd = 0;
  for (i = 0; i < tr.n_op; i++) fwd += !tr.op[i].is_bwd;
  CHECK_EQ_INT(fwd, (3 + 4 * 4) + 3 + (3 + 8 * 4) + 3 + 1);
  mlsys_offload_trace_free(&tr);
  /* moe: the same seed gives the same trace, another seed another routing */
  REQUIRE_OK(mlsys_offload_gen_moe(3, 8, 2, 256, 128, 7, NULL, &tr));
  REQUIRE_OK(mlsys_offload_gen_moe(3, 8, 2, 256, 128, 7, NULL, &tr2));
  CHECK(traces_equal(&tr, &tr2));
  mlsys_offload_trace_free(&tr2);
  {
    int differ = 0, s;
    for (s = 8; s < 16 && !differ; s++) {
      REQUIRE_OK(mlsys_offload_gen_moe(3, 8, 2, 256, 128, (uint64_t)s, NULL, &tr2));
      differ = !traces_equal(&tr, &tr2);
      mlsys_offload_trace_free(&tr2);
    }
    CHECK(differ);
  }
  mlsys_offload_trace_free(&tr);
  CHECK_EQ_INT(mlsys_offload_gen_moe(1, 0, 1, 4, 4, 1, NULL, &tr), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_offload_gen_varlstm((int[]){0}, 1, 4, 4, NULL, &tr), MLSYS_ERR_ARG);
}

TEST(max_batch_search_equals_linear_scan) {
  /* a small var-BERT: for each policy, the searched max batch equals a linear scan's last batch before the first
     that fails (runs within the 200 % cap of PyTorch's per-sample time at PyTorch's own max batch); DyNN-Offload
     never trains less than PyTorch (it runs resident when the model fits) */
  mlsys_offload_model_desc m;
  mlsys_offload_hw hw;
  mlsys_offload_max_batch_result r;
  int p, limit = 24;
  memset(&m, 0, sizeof m);
  m.model = "varbert";
  m.layers = 3;
  m.seq_len = 64;
  m.hidden = 128;
  memset(&hw, 0, sizeof hw);
  {
    mlsys_offload_trace tr;
    REQUIRE_OK(mlsys_offload_gen_batch(&m, 4, &tr));
    hw.gpu_bytes = mlsys_offload_peak_bytes(&tr);   /* PyTorch fits batch 4, not much more */
    mlsys_offload_trace_free(&tr);
  }
  REQUIRE_OK(mlsys_offload_max_batch(&m, &hw, 2, limit, &r));
  CHECK(r.pytorch_batch >= 4);
  for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
    int b, last = 0;
    for (b = 1; b <= limit; b++) {
      mlsys_offload_trace tr;
      mlsys_offload_simres sr;
      REQUIRE_OK(mlsys_offload_gen_batch(&m, b, &tr));
      REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, p, &sr));
      mlsys_offload_trace_free(&tr);
      if (!sr.feasible) break;   /* larger batches need more memory */
      if (p != MLSYS_OFFLOAD_POLICY_PYTORCH && sr.time_us / b > r.cap_us_per_sample * (1 + 1e-12)) {
        if (last) break;   /* past the cap after passing it */
        continue;          /* small batches can miss the cap on per-sample overhead alone */
      }
      last = b;
    }
    CHECK_MSG(r.batch[p] == last, "%s: search %d, scan %d", mlsys_offload_policy_name(p), r.batch[p], last);
  }
  printf("    max batch at %.1f MB: pytorch %d, dynn %d, dtr %d, uvm %d, zero %d (%d evaluations)\n", hw.gpu_bytes / 1e6,
         r.batch[0], r.batch[1], r.batch[2], r.batch[3], r.batch[4], r.evaluations);
  CHECK(r.batch[MLSYS_OFFLOAD_POLICY_DYNN] >= r.pytorch_batch);
  m.model = "resnet";
  CHECK_EQ_INT(mlsys_offload_max_batch(&m, &hw, 2, limit, &r), MLSYS_ERR_ARG);
}

/* node i's position as the child indices from the root ("0.2.1"), for the Jaccard test */
static void tree_paths(const mlsys_offload_tree *t, char (*path)[64], int *internal) {
  int i, k, depth[512];
  for (i = 0; i < t->n; i++) internal[i] = 0;
  for (i = 0; i < t->n; i++) {
    if (t->parent[i] < 0) { snprintf(path[i], 64, "r"); depth[i] = 0; continue; }
    internal[t->parent[i]] = 1;
    {
      int idx = 0;
      for (k = 0; k < i; k++) idx += t->parent[k] == t->parent[i];
      /* depth and index among its siblings: the unrolled program's loop trip and branch at that level */
      snprintf(path[i], 64, "%d:%d", depth[i] = depth[t->parent[i]] + 1, idx);
    }
  }
}

static int path_in(char (*set)[64], int n, const char *p) {
  int i;
  for (i = 0; i < n; i++)
    if (!strcmp(set[i], p)) return 1;
  return 0;
}

TEST(jaccard_of_control_flow_across_sentences) {
  /* The seed's Table I (Tree-LSTM, 6,000 SICK samples): the Jaccard distance of each sample's taken-control-flow
     vector to the first sample's spreads out: 5 / 28 / 25 / 40 / 2 % in [0,0.2], (0.2,0.4], ..., (0.8,1]. Here the
     control flow a Tree-LSTM takes, unrolled by depth, is the set of (depth, index among siblings) positions that
     hold an inner node (the leaf-or-inner branch and the loop over children at that level); over the 600
     link-grammar parses the distance to the first tree must spread: no bin holds 90 %, and most samples lie in
     (0.2, 0.8]. (The seed does not define its vector further; ours: 0 / 10 / 36 / 42 / 12 %, docs/offload.md.) */
  char *text;
  size_t len;
  mlsys_offload_tree *t;
  int n, i, j, bins[5] = {0, 0, 0, 0, 0}, mid, a0 = 0, *internal;
  char (*path)[64], (*set0)[64];
  REQUIRE_OK(mlsys_read_file("tests/data/offload/trees.txt", &text, &len));
  REQUIRE_OK(mlsys_offload_trees_parse(text, len, "trees.txt", &t, &n));
  path = (char (*)[64])malloc(sizeof *path * 512);
  set0 = (char (*)[64])malloc(sizeof *set0 * 512);
  internal = (int *)malloc(sizeof(int) * 512);
  REQUIRE(path && set0 && internal);
  REQUIRE(t[0].n <= 512);
  tree_paths(&t[0], path, internal);
  for (j = 0; j < t[0].n; j++)
    if (internal[j] && !path_in(set0, a0, path[j])) memcpy(set0[a0++], path[j], 64);
  for (i = 1; i < n; i++) {
    int inter = 0, nb = 0, b;
    double jd;
    if (t[i].n > 512) continue;
    tree_paths(&t[i], path, internal);
    for (j = 0; j < t[i].n; j++) {
      int k, dup = 0;
      if (!internal[j]) continue;
      for (k = 0; k < j && !dup; k++) dup = internal[k] && !strcmp(path[k], path[j]);
      if (dup) continue;   /* a set: one entry per position */
      nb++;
      inter += path_in(set0, a0, path[j]);
    }
    jd = 1.0 - (double)inter / (double)(a0 + nb - inter);
    b = jd <= 0.2 ? 0 : jd <= 0.4 ? 1 : jd <= 0.6 ? 2 : jd <= 0.8 ? 3 : 4;
    bins[b]++;
  }
  mid = bins[1] + bins[2] + bins[3];
  printf("    Jaccard distance to the first parse, 599 sentences: %.0f / %.0f / %.0f / %.0f / %.0f %% (seed Table I: 5 / 28 / 25 / "
         "40 / 2 %%)\n", 100.0 * bins[0] / (n - 1), 100.0 * bins[1] / (n - 1), 100.0 * bins[2] / (n - 1),
         100.0 * bins[3] / (n - 1), 100.0 * bins[4] / (n - 1));
  for (i = 0; i < 5; i++) CHECK(bins[i] < (n - 1) * 9 / 10);
  CHECK(mid > (n - 1) / 2);
  free(path);
  free(set0);
  free(internal);
  for (i = 0; i < n; i++) mlsys_offload_tree_free(&t[i]);
  mlsys_free(t);
  mlsys_free(text);
}

TEST_MAIN()
