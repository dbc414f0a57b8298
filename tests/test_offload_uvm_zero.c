/* Tests for the UVM and ZeRO-Offload simulators of mlsys_offload.h (spec §4.2, §4.4, §7.4 case 9).

   UVM: known answers worked out by hand in the comments (a 3-op trace, an LRU case where eviction by migration
   time and by access time part ways), a second simulator written here as plainly as possible (page arrays, a
   linear scan for the victim, lifetimes recomputed from the trace) held against the library on random traces,
   and properties: no warm faults when the footprint fits, faults and time growing as the GPU shrinks, the 2x
   oversubscription cap. ZeRO-Offload: the §4.4 formula evaluated by hand on a 2-parameter-tensor trace, the
   infinite-bandwidth limit, and the GPU bytes without optimizer state. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define PG (64 * KIB)

static int T(mlsys_offload_trace *tr, int64_t bytes, mlsys_offload_tkind k) {
  int t = mlsys_offload_trace_tensor(tr, bytes, k);
  if (t < 0) { fprintf(stderr, "tensor: %s\n", mlsys_last_error()); exit(2); }
  return t;
}

static int OP(mlsys_offload_trace *tr, const char *name, double us, int n_in, const int *in, int n_out, const int *out,
              int64_t ws) {
  int i = mlsys_offload_trace_op(tr, name, us, n_in, in, n_out, out, ws, NULL);
  if (i < 0) { fprintf(stderr, "op: %s\n", mlsys_last_error()); exit(2); }
  return i;
}

static mlsys_offload_hw hw_of(int64_t gpu) {
  mlsys_offload_hw h;
  memset(&h, 0, sizeof h);
  h.gpu_bytes = gpu;
  return h;
}

/* ---- a training-step generator: L layers, forward, loss, backward, Adam ----
   Sizes are whole 64 KiB pages when `paged`, so the page-rounded footprint equals facts.peak_bytes. */
typedef struct {
  int64_t param_bytes, opt_bytes;
  double t_fwd, t_bwd, t_opt;
} gen_info;

static void gen_train(mlsys_offload_trace *tr, uint64_t seed, int L, int paged, gen_info *gi) {
  mlsys_rng rng;
  int l, W[16], Mo[16], V[16], A[17], GA[17], GW[16];
  mlsys_rng_seed(&rng, seed);
  memset(gi, 0, sizeof *gi);
  mlsys_offload_trace_init(tr);
  for (l = 0; l < L; l++) {
    int64_t wb = paged ? PG * mlsys_rng_range(&rng, 4, 40) : mlsys_rng_range(&rng, 1000, 3000000);
    W[l] = T(tr, wb, MLSYS_OFFLOAD_T_PARAM);
    Mo[l] = T(tr, 2 * wb, MLSYS_OFFLOAD_T_OPT);
    V[l] = T(tr, 2 * wb, MLSYS_OFFLOAD_T_OPT);
    gi->param_bytes += wb;
    gi->opt_bytes += 4 * wb;
  }
  A[0] = T(tr, paged ? PG * mlsys_rng_range(&rng, 2, 20) : mlsys_rng_range(&rng, 1000, 2000000), MLSYS_OFFLOAD_T_INPUT);
  for (l = 0; l < L; l++) {   /* forward */
    int in[2] = {A[l], W[l]};
    double us = 20 + 200 * mlsys_rng_uniform(&rng);
    A[l + 1] = T(tr, paged ? PG * mlsys_rng_range(&rng, 2, 40) : mlsys_rng_range(&rng, 1000, 4000000), MLSYS_OFFLOAD_T_ACT);
    OP(tr, "MatMul", us, 2, in, 1, &A[l + 1], paged ? PG * mlsys_rng_range(&rng, 0, 4) : 0);
    gi->t_fwd += us;
  }
  GA[L] = T(tr, tr->t[A[L]].bytes, MLSYS_OFFLOAD_T_GRAD);
  OP(tr, "SoftmaxCrossEntropyLoss", 15, 1, &A[L], 1, &GA[L], 0);
  gi->t_fwd += 15;
  for (l = L - 1; l >= 0; l--) {   /* backward */
    int in[3] = {GA[l + 1], A[l], W[l]}, out[2];
    double us = 40 + 400 * mlsys_rng_uniform(&rng);
    int o;
    GA[l] = T(tr, tr->t[A[l]].bytes, MLSYS_OFFLOAD_T_GRAD);
    GW[l] = T(tr, tr->t[W[l]].bytes, MLSYS_OFFLOAD_T_GRAD);
    out[0] = GA[l];
    out[1] = GW[l];
    o = OP(tr, "MatMulBackward", us, 3, in, 2, out, 0);
    tr->op[o].is_bwd = 1;
    gi->t_bwd += us;
  }
  for (l = 0; l < L; l++) {   /* optimizer */
    int in[4] = {W[l], GW[l], Mo[l], V[l]}, out[3] = {W[l], Mo[l], V[l]};
    int o = OP(tr, "Adam", 5, 4, in, 3, out, 0);
    tr->op[o].is_bwd = 1;
    gi->t_opt += 5;
  }
}

/* ---- a second UVM simulator, plain: one state per page, a linear scan over chunks for the victim ----
   Lifetimes are recomputed here from the trace with the rules facts documents (a tensor read before its first
   write, never written, PARAM or OPT persists; a gradient nothing reads lives to the end of the iteration).
   by_access = 1 replaces LRU-by-migration with LRU-by-access (every op's touch refreshes its chunks), the rule
   the driver does NOT follow: it is here only to show that a test can tell the two apart. */
typedef struct {
  int n_faults, n_evict, feasible;
  int64_t in_pages, out_pages, peak_pages;
  double mig_us, time_us;
} ref_res;

static void ref_uvm(const mlsys_offload_trace *tr, int64_t gpu, int64_t page, int64_t chunk, double fault_us,
                    double bw_bytes_per_us, int iters, int by_access, ref_res *out) {
  int n = tr->n_op, nt = tr->n_t, i, j, t, it;
  int *fw = (int *)malloc(sizeof(int) * (size_t)nt), *fr = (int *)malloc(sizeof(int) * (size_t)nt);
  int *lu = (int *)malloc(sizeof(int) * (size_t)nt), *pers = (int *)malloc(sizeof(int) * (size_t)nt);
  int64_t *p0 = (int64_t *)malloc(sizeof(int64_t) * (size_t)nt), *w0 = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
  int64_t npg = 0, cap = gpu > tr->fixed_bytes ? (gpu - tr->fixed_bytes) / page : 0, ppc = chunk / page, resident = 0;
  int64_t clock = 0, p, nch;
  unsigned char *st, *pin;   /* 0 free, 1 host, 2 fresh, 3 gpu */
  int64_t *key;
  double sumc = 0;
#define NP(b) (((b) + page - 1) / page)
  memset(out, 0, sizeof *out);
  out->feasible = 1;
  for (t = 0; t < nt; t++) fw[t] = fr[t] = lu[t] = -1;
  for (i = 0; i < n; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    for (j = 0; j < o->n_in; j++) { t = tr->ids[o->in0 + j]; if (fr[t] < 0) fr[t] = i; lu[t] = i; }
    for (j = 0; j < o->n_out; j++) { t = tr->ids[o->out0 + j]; if (fw[t] < 0) fw[t] = i; lu[t] = i; }
    sumc += o->time_us;
  }
  for (t = 0; t < nt; t++) {
    int k = tr->t[t].kind;
    pers[t] = k == MLSYS_OFFLOAD_T_PARAM || k == MLSYS_OFFLOAD_T_OPT || fw[t] < 0 || (fr[t] >= 0 && fr[t] < fw[t]);
    if (!pers[t] && k == MLSYS_OFFLOAD_T_GRAD && fr[t] < 0) lu[t] = n;
  }
  for (t = 0; t < nt; t++) { p0[t] = -1; if (pers[t]) { p0[t] = npg; npg += NP(tr->t[t].bytes); } }
  for (i = 0; i < n; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    for (j = 0; j < o->n_out; j++) { t = tr->ids[o->out0 + j]; if (p0[t] < 0) { p0[t] = npg; npg += NP(tr->t[t].bytes); } }
    w0[i] = npg;
    npg += NP(o->workspace);
  }
  nch = npg / ppc + 1;
  st = (unsigned char *)calloc((size_t)npg + 1, 1);
  pin = (unsigned char *)calloc((size_t)npg + 1, 1);
  key = (int64_t *)calloc((size_t)nch, sizeof(int64_t));
  for (t = 0; t < nt; t++) if (pers[t]) for (p = p0[t]; p < p0[t] + NP(tr->t[t].bytes); p++) st[p] = 1;
  for (it = 0; it < iters; it++) {
    if (it == iters - 1) { out->n_faults = out->n_evict = 0; out->in_pages = out->out_pages = 0; out->mig_us = 0; out->peak_pages = resident; }
    for (i = 0; i < n; i++) {
      const mlsys_offload_op *o = &tr->op[i];
      int64_t host = 0, fresh = 0, need = 0, ev = 0, a[64], c[64];
      int k = 0, q, dup;
      for (j = 0; j < o->n_out; j++) {
        t = tr->ids[o->out0 + j];
        if (!pers[t] && fw[t] == i) for (p = p0[t]; p < p0[t] + NP(tr->t[t].bytes); p++) if (st[p] == 0) st[p] = 2;
      }
      for (j = 0; j < o->n_in + o->n_out; j++) {   /* touched ranges, in order, without repeats */
        t = j < o->n_in ? tr->ids[o->in0 + j] : tr->ids[o->out0 + j - o->n_in];
        for (dup = 0, q = 0; q < k; q++) if (a[q] == p0[t] && c[q] == NP(tr->t[t].bytes)) dup = 1;
        if (dup) continue;
        a[k] = p0[t]; c[k++] = NP(tr->t[t].bytes);
      }
      a[k] = w0[i]; c[k++] = NP(o->workspace);
      for (p = a[k - 1]; p < a[k - 1] + c[k - 1]; p++) st[p] = 2;
      for (q = 0; q < k; q++)
        for (p = a[q]; p < a[q] + c[q]; p++) { pin[p] = 1; need++; if (st[p] == 1) host++; else if (st[p] != 3) fresh++; }
      if (need > cap) { out->feasible = 0; goto end; }
      while (resident + host + fresh > cap) {   /* victim: the oldest chunk with a resident page not pinned */
        int64_t best = -1, ch;
        for (ch = 0; ch < nch; ch++) {
          int has = 0;
          for (p = ch * ppc; p < (ch + 1) * ppc && p < npg; p++) if (st[p] == 3 && !pin[p]) has = 1;
          if (has && (best < 0 || key[ch] < key[best])) best = ch;
        }
        if (best < 0) { out->feasible = 0; goto end; }
        for (p = best * ppc; p < (best + 1) * ppc && p < npg; p++) if (st[p] == 3 && !pin[p]) { st[p] = 1; ev++; resident--; }
        out->n_evict++;
      }
      if (host || ev) { out->n_faults++; out->mig_us += fault_us + (double)(host * page) / bw_bytes_per_us + (double)(ev * page) / bw_bytes_per_us; }
      out->in_pages += host;
      out->out_pages += ev;
      for (q = 0; q < k; q++)
        for (p = a[q]; p < a[q] + c[q]; p++) {
          if (st[p] != 3) { st[p] = 3; resident++; key[p / ppc] = ++clock; }
          else if (by_access) key[p / ppc] = ++clock;
          pin[p] = 0;
        }
      if (resident > out->peak_pages) out->peak_pages = resident;
      for (p = a[k - 1]; p < a[k - 1] + c[k - 1]; p++) { if (st[p] == 3) resident--; st[p] = 0; }
      for (j = 0; j < o->n_in + o->n_out; j++) {
        t = j < o->n_in ? tr->ids[o->in0 + j] : tr->ids[o->out0 + j - o->n_in];
        if (!pers[t] && lu[t] == i) for (p = p0[t]; p < p0[t] + NP(tr->t[t].bytes); p++) { if (st[p] == 3) resident--; st[p] = 0; }
      }
    }
    for (t = 0; t < nt; t++)
      if (!pers[t]) for (p = p0[t]; p < p0[t] + NP(tr->t[t].bytes); p++) { if (st[p] == 3) resident--; st[p] = 0; }
  }
  out->time_us = sumc + out->mig_us;
end:
#undef NP
  free(fw); free(fr); free(lu); free(pers); free(p0); free(w0); free(st); free(pin); free(key);
}

static mlsys_offload_uvm_opts uvm_opts(int iters) {
  mlsys_offload_uvm_opts o;
  memset(&o, 0, sizeof o);
  o.iterations = iters;
  return o;
}

/* 2 MiB over 12 GB/s (12,000 bytes/µs), the default PCIe bandwidth */
#define US_2MIB (2.0 * MIB / 12000.0)

/* ---- UVM: hand-computed 3-op case ----
   Tensors (defaults: 64 KiB pages, 32 pages a chunk): W PARAM 2 MiB, X INPUT 100 KiB (2 pages: 128 KiB move),
   H, Y ACT 1 MiB, L ACT 64 KiB. op0 mm(W, X) -> H 100 µs; op1 relu(H) -> Y 50 µs; op2 loss(Y, W) -> L 20 µs.
   GPU 4 MiB = 64 pages, fixed 0. Layout in allocation order: W pages 0-31 (chunk 0), X 32-33, H 34-49, Y 50-65,
   L 66: chunk 1 = pages 32-63, chunk 2 = 64-95.
   Footprint (facts): W + X = 2,199,552; op1 holds H + Y = 2 MiB more: 4,296,704 <= 2 x 4 MiB, so within the cap.
   Cold iteration:
     op0: W (32) and X (2) are on the host, H (16) is new: 50 pages <= 64, no eviction. Fault 1:
          30 + 34·65536/12000 = 30 + 185.685 µs. Chunk times: 0 (W) < 1 (X, H).
     op1: Y is 16 new pages: 50 + 16 = 66 > 64: evict the oldest migration, chunk 0 (W, not used by op1): 32 pages
          written back. Fault 2: 30 + 2 MiB/12000 = 30 + 174.763 µs (no bytes in). H dies: 34 - 16 = 18 resident.
     op2: W is on the host again (32 pages), L new (1): 18 + 33 = 51 <= 64. Fault 3: 30 + 174.763 µs.
     faults 3, evictions 1, H2D 66 pages = 4,325,376 B, D2H 32 pages = 2,097,152 B,
     time = 170 + 90 + 4,325,376/12000 + 2,097,152/12000 = 795.21067 µs; peak 51 pages = 3,342,336 B.
   Warm iteration (W and X resident from the cold one; chunk 0's time is from op2, chunk 1's from op1, and op0
     populates H into chunk 1 again, making it newer): op0 no fault (W, X resident, H new, 50 pages); op1 needs
     room again and chunk 0 is the oldest migration: the same eviction (fault 1, 2 MiB out); op2 faults W back in
     (fault 2, 2 MiB in). faults 2, evictions 1, 2 MiB each way, time = 170 + 60 + 2·174.763 = 579.52533 µs. */
static void hand3(mlsys_offload_trace *tr) {
  int W, X, H, Y, L, in[2];
  mlsys_offload_trace_init(tr);
  W = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_PARAM);
  X = T(tr, 100 * KIB, MLSYS_OFFLOAD_T_INPUT);
  H = T(tr, 1 * MIB, MLSYS_OFFLOAD_T_ACT);
  Y = T(tr, 1 * MIB, MLSYS_OFFLOAD_T_ACT);
  L = T(tr, 64 * KIB, MLSYS_OFFLOAD_T_ACT);
  in[0] = W; in[1] = X;
  OP(tr, "mm", 100, 2, in, 1, &H, 0);
  OP(tr, "relu", 50, 1, &H, 1, &Y, 0);
  in[0] = Y; in[1] = W;
  OP(tr, "loss", 20, 2, in, 1, &L, 0);
}

TEST(uvm_hand_three_ops) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = hw_of(4 * MIB);
  mlsys_offload_uvm_opts o = uvm_opts(1);
  mlsys_offload_simres r, cold;
  hand3(&tr);
  CHECK_EQ_INT(mlsys_offload_peak_bytes(&tr), 4296704);
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  CHECK_EQ_INT(r.n_faults, 3);
  CHECK_EQ_INT(r.n_evictions, 1);
  CHECK_EQ_INT(r.bytes_h2d, 4325376);
  CHECK_EQ_INT(r.bytes_d2h, 2097152);
  CHECK_NEAR(r.compute_us, 170, 1e-9);
  CHECK_NEAR(r.migration_us, 90 + 4325376 / 12000.0 + 2097152 / 12000.0, 1e-9);
  CHECK_NEAR(r.time_us, 795.2106666666667, 1e-9);
  CHECK_EQ_INT(r.peak_bytes, 3342336);
  cold = r;
  o.iterations = 2;
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK_EQ_INT(r.n_faults, 2);
  CHECK_EQ_INT(r.n_evictions, 1);
  CHECK_EQ_INT(r.bytes_h2d, 2 * MIB);
  CHECK_EQ_INT(r.bytes_d2h, 2 * MIB);
  CHECK_NEAR(r.time_us, 170 + 60 + 2 * US_2MIB, 1e-9);
  CHECK_NEAR(r.time_us, 579.5253333333333, 1e-9);
  printf("    3 ops, 4 MiB: cold %d faults %.3f us, warm %d faults %.3f us\n", cold.n_faults, cold.time_us, r.n_faults, r.time_us);
  mlsys_offload_trace_free(&tr);
}

/* ---- UVM: LRU by migration time, not by access time ----
   GPU 4 MiB = 2 chunks. A, B, C are 2 MiB PARAM tensors, one chunk each. Ops read A, B, A, C, A (10 µs each); one
   (cold) iteration.
   By migration (the driver): A in (t1), B in (t2), A hit, C needs a chunk: A migrated first, so A goes although
   it was just used; then A is missing again and B (t2) goes. Faults 4 (A, B, C, A), evictions 2.
   By access: at C, B is the least recently used, so B goes and the last A hits. Faults 3, evictions 1.
   time (migration) = 50 + 4·30 + 6·2,097,152/12,000 = 50 + 120 + 1048.576 = 1218.576 µs. */
TEST(uvm_lru_by_migration_not_access) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = hw_of(4 * MIB);
  mlsys_offload_uvm_opts o = uvm_opts(1);
  mlsys_offload_simres r;
  ref_res ra, rm;
  int A, B, C, seq[5], i;
  mlsys_offload_trace_init(&tr);
  A = T(&tr, 2 * MIB, MLSYS_OFFLOAD_T_PARAM);
  B = T(&tr, 2 * MIB, MLSYS_OFFLOAD_T_PARAM);
  C = T(&tr, 2 * MIB, MLSYS_OFFLOAD_T_PARAM);
  seq[0] = A; seq[1] = B; seq[2] = A; seq[3] = C; seq[4] = A;
  for (i = 0; i < 5; i++) OP(&tr, "use", 10, 1, &seq[i], 0, NULL, 0);
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  CHECK_EQ_INT(r.n_faults, 4);
  CHECK_EQ_INT(r.n_evictions, 2);
  CHECK_EQ_INT(r.bytes_h2d, 8 * MIB);
  CHECK_EQ_INT(r.bytes_d2h, 4 * MIB);
  CHECK_NEAR(r.time_us, 50 + 4 * 30 + 6 * US_2MIB, 1e-9);
  CHECK_NEAR(r.time_us, 1218.576, 1e-9);
  /* the two rules really differ here (the reference with each), and the library follows migration order */
  ref_uvm(&tr, 4 * MIB, PG, 2 * MIB, 30, 12000, 1, 1, &ra);
  ref_uvm(&tr, 4 * MIB, PG, 2 * MIB, 30, 12000, 1, 0, &rm);
  CHECK_EQ_INT(ra.n_faults, 3);
  CHECK_EQ_INT(ra.n_evict, 1);
  CHECK_EQ_INT(rm.n_faults, r.n_faults);
  CHECK(r.n_faults != ra.n_faults);
  mlsys_offload_trace_free(&tr);
}

/* The footprint in whole pages: what UVM must hold at the peak. Each tensor is its own run of pages, so small
   tensors cost a page each (the bytes of facts.peak_bytes understate it for traces of many small tensors). */
static int64_t paged_peak(const mlsys_offload_trace *tr, int64_t page) {
  mlsys_offload_facts f;
  int64_t pers = 0, live = 0, most = 0, *delta;
  int i, t;
  if (mlsys_offload_trace_facts(tr, &f)) return -1;
  delta = (int64_t *)calloc((size_t)tr->n_op + 2, sizeof(int64_t));
  for (t = 0; t < tr->n_t; t++) {
    int64_t np = (tr->t[t].bytes + page - 1) / page;
    if (tr->t[t].kind == MLSYS_OFFLOAD_T_PARAM || tr->t[t].kind == MLSYS_OFFLOAD_T_OPT || f.first_write[t] < 0) pers += np;
    else if (f.last_use[t] >= 0) { delta[f.first_write[t]] += np; delta[f.last_use[t] + 1] -= np; }
  }
  for (i = 0; i < tr->n_op; i++) {
    int64_t here = (live += delta[i]) + (tr->op[i].workspace + page - 1) / page;
    if (here > most) most = here;
  }
  free(delta);
  mlsys_offload_facts_free(&f);
  return tr->fixed_bytes + (pers + most) * page;
}

/* ---- UVM: no faults after warm-up when the footprint fits; the warm iteration runs at Σc ----
   Generated steps with whole-page tensors (paged footprint = facts.peak_bytes) and with arbitrary sizes. */
TEST(uvm_fits_no_warm_faults) {
  int s;
  for (s = 0; s < 40; s++) {
    mlsys_offload_trace tr;
    gen_info gi;
    mlsys_offload_simres r, cold, tight;
    mlsys_offload_uvm_opts o = uvm_opts(2), o1 = uvm_opts(1);
    mlsys_offload_facts f;
    mlsys_offload_hw hw;
    int64_t touched = 0, fit;
    int t, paged = s < 20;
    gen_train(&tr, 100 + (uint64_t)s, 2 + s % 6, paged, &gi);
    if (s % 3 == 1) tr.fixed_bytes = 3 * MIB;   /* resident capacity = gpu - fixed */
    REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
    fit = paged_peak(&tr, PG);
    if (paged) CHECK_EQ_INT(fit, f.peak_bytes);
    else CHECK(fit > f.peak_bytes);
    for (t = 0; t < tr.n_t; t++)   /* persistent tensors some op touches: the cold iteration brings them in */
      if ((tr.t[t].kind == MLSYS_OFFLOAD_T_PARAM || tr.t[t].kind == MLSYS_OFFLOAD_T_OPT || f.first_write[t] < 0) && f.last_use[t] >= 0)
        touched += (tr.t[t].bytes + PG - 1) / PG * PG;
    hw = hw_of(fit);
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
    CHECK(r.feasible);
    CHECK_EQ_INT(r.n_faults, 0);
    CHECK_EQ_INT(r.n_evictions, 0);
    CHECK_EQ_INT(r.bytes_h2d + r.bytes_d2h, 0);
    CHECK_NEAR(r.time_us, f.compute_us, 1e-6);
    CHECK_EQ_INT(r.peak_bytes, fit);   /* warm: everything resident at the peak, nothing more */
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o1, &cold));
    CHECK(cold.n_faults > 0);
    CHECK_EQ_INT(cold.n_evictions, 0);
    CHECK_EQ_INT(cold.bytes_h2d, touched);
    /* one page less and the warm iteration must fault */
    hw.gpu_bytes -= PG;
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &tight));
    CHECK(tight.n_faults > 0);
    CHECK(tight.time_us > f.compute_us);
    mlsys_offload_facts_free(&f);
    mlsys_offload_trace_free(&tr);
  }
}

/* ---- UVM: the library against the plain simulator on random traces (page and chunk sizes shrunk so tensors
   share chunks and straddle them, random in-place writes, workspaces, fixed bytes, 1-3 iterations) ---- */
TEST(uvm_matches_plain_simulator) {
  int s, compared = 0, infeasible = 0, faulted = 0;
  for (s = 0; s < 300; s++) {
    mlsys_rng rng;
    mlsys_offload_trace tr;
    mlsys_offload_uvm_opts o;
    mlsys_offload_hw hw;
    mlsys_offload_simres r;
    ref_res rr;
    int nt, nop, i, t;
    int64_t peak;
    mlsys_rng_seed(&rng, 7000 + (uint64_t)s);
    mlsys_offload_trace_init(&tr);
    nt = mlsys_rng_range(&rng, 2, 14);
    nop = mlsys_rng_range(&rng, 1, 24);
    for (t = 0; t < nt; t++) T(&tr, mlsys_rng_range(&rng, 0, 9000), (mlsys_offload_tkind)mlsys_rng_range(&rng, 0, 5));
    for (i = 0; i < nop; i++) {
      int in[4], out[3], ni = mlsys_rng_range(&rng, 0, 4), no = mlsys_rng_range(&rng, 0, 3), j;
      for (j = 0; j < ni; j++) in[j] = mlsys_rng_range(&rng, 0, nt - 1);
      for (j = 0; j < no; j++) out[j] = mlsys_rng_range(&rng, 0, nt - 1);
      OP(&tr, "op", 1 + mlsys_rng_range(&rng, 0, 50), ni, in, no, out, mlsys_rng_below(&rng, 3) ? 0 : mlsys_rng_range(&rng, 1, 5000));
    }
    tr.fixed_bytes = mlsys_rng_below(&rng, 2) ? 0 : mlsys_rng_range(&rng, 1, 3000);
    peak = mlsys_offload_peak_bytes(&tr);
    memset(&o, 0, sizeof o);
    o.fault_page = 1024;
    o.evict_chunk = 1024 * mlsys_rng_range(&rng, 1, 4);
    o.fault_us = 5;
    o.iterations = mlsys_rng_range(&rng, 1, 3);
    o.oversub_max = INFINITY;
    hw = hw_of(tr.fixed_bytes + 1 + (int64_t)((double)peak * (0.3 + mlsys_rng_uniform(&rng))));
    hw.h2d_gbps = hw.d2h_gbps = 2;
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
    ref_uvm(&tr, hw.gpu_bytes, 1024, o.evict_chunk, 5, 2000, o.iterations, 0, &rr);
    CHECK_EQ_INT(r.feasible, rr.feasible);
    if (!r.feasible) {
      infeasible++;
      CHECK_CONTAINS(r.why, "more than");
    } else {
      CHECK_MSG(r.n_faults == rr.n_faults && r.n_evictions == rr.n_evict, "seed %d: faults %d/%d evictions %d/%d", s, r.n_faults,
                rr.n_faults, r.n_evictions, rr.n_evict);
      CHECK_EQ_INT(r.bytes_h2d, rr.in_pages * 1024);
      CHECK_EQ_INT(r.bytes_d2h, rr.out_pages * 1024);
      CHECK_EQ_INT(r.peak_bytes, tr.fixed_bytes + rr.peak_pages * 1024);
      CHECK_NEAR(r.time_us, rr.time_us, 1e-6 * (1 + rr.time_us));
      CHECK(r.peak_bytes <= hw.gpu_bytes);
      compared++;
      faulted += r.n_evictions > 0;
    }
    mlsys_offload_trace_free(&tr);
  }
  printf("    300 random traces: %d compared (%d with evictions), %d with an op larger than the GPU\n", compared, faulted,
         infeasible);
  CHECK(compared > 150);
  CHECK(faulted > 50);
}

/* ---- UVM: faults and time grow as the GPU shrinks ----
   Not pointwise in general: eviction by migration time is FIFO, which is not a stack algorithm (a smaller memory
   can evict a chunk earlier, re-migrate it and so refresh its time: Belady's anomaly), whole-chunk eviction and
   one batch per op add their own non-monotone steps (two ops' misses merge into one batch). So the hand-built
   chain, whose every step removes exactly one chunk, is held to pointwise growth; the generated steps are held to
   the trend (Spearman rank correlation of oversubscription with time and with bytes moved), to zero faults at 1x
   and faults at every point above, and every point is held against the plain simulator. */

/* chain: x0, then per layer a 2 MiB weight and activation; loss; backward through the weights with SGD */
static void hand_chain(mlsys_offload_trace *tr) {
  int i, in[2], x[5], g;
  mlsys_offload_trace_init(tr);
  x[0] = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_INPUT);
  for (i = 0; i < 4; i++) {
    int w = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_PARAM);
    x[i + 1] = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_ACT);
    in[0] = x[i];
    in[1] = w;
    OP(tr, "fwd", 100, 2, in, 1, &x[i + 1], 0);
  }
  g = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_GRAD);
  OP(tr, "loss", 10, 1, &x[4], 1, &g, 0);
  for (i = 3; i >= 0; i--) {
    int g2 = T(tr, 2 * MIB, MLSYS_OFFLOAD_T_GRAD), w = 1 + 2 * i;   /* tensor ids: x0, then (w, x) per layer */
    in[0] = g;
    in[1] = x[i];
    OP(tr, "bwd", 200, 2, in, 1, &g2, 0);
    in[0] = g2;
    in[1] = w;
    OP(tr, "sgd", 5, 2, in, 1, &w, 0);
    g = g2;
  }
}

/* rank correlation (ties averaged) */
static double spearman(const double *x, const double *y, int n) {
  double rx[128], ry[128], mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  int i, j;
  for (i = 0; i < n; i++) {
    double lx = 0, ex = 0, ly = 0, ey = 0;
    for (j = 0; j < n; j++) {
      lx += x[j] < x[i];
      ex += x[j] == x[i];
      ly += y[j] < y[i];
      ey += y[j] == y[i];
    }
    rx[i] = lx + (ex + 1) / 2;
    ry[i] = ly + (ey + 1) / 2;
    mx += rx[i] / n;
    my += ry[i] / n;
  }
  for (i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

/* one point of a sweep, also run through the plain simulator */
static void sweep_point(const mlsys_offload_trace *tr, int64_t gpu, mlsys_offload_simres *r) {
  mlsys_offload_hw hw = hw_of(gpu);
  mlsys_offload_uvm_opts o = uvm_opts(2);
  ref_res rr;
  REQUIRE_OK(mlsys_offload_sim_uvm(tr, &hw, &o, r));
  ref_uvm(tr, gpu, PG, 2 * MIB, 30, 12000, 2, 0, &rr);
  CHECK_EQ_INT(r->feasible, rr.feasible);
  CHECK_MSG(!r->feasible || (r->n_faults == rr.n_faults && fabs(r->time_us - rr.time_us) <= 1e-6 * rr.time_us),
            "at %lld bytes: %d faults %.3f us, the plain simulator %d faults %.3f us", (long long)gpu, r->n_faults, r->time_us,
            rr.n_faults, rr.time_us);
}

TEST(uvm_faults_grow_as_gpu_shrinks_hand_chain) {
  mlsys_offload_trace tr;
  int64_t peak, gpu;
  int prev_f = -1;
  double prev_t = -1;
  hand_chain(&tr);
  peak = mlsys_offload_peak_bytes(&tr);
  CHECK_EQ_INT(peak, 20 * MIB);   /* x0 + 4 weights + x1..x4 + the loss gradient */
  printf("    hand-built chain, 20 MiB footprint, faults/us:");
  for (gpu = peak; gpu >= peak / 2; gpu -= 2 * MIB) {
    mlsys_offload_simres r;
    sweep_point(&tr, gpu, &r);
    CHECK(r.feasible);
    CHECK_MSG(r.n_faults > prev_f && r.time_us > prev_t, "at %lld MiB: %d faults %.1f us; one chunk more: %d faults %.1f us",
              (long long)(gpu / MIB), r.n_faults, r.time_us, prev_f, prev_t);
    printf(" %lld MiB %d/%.0f", (long long)(gpu / MIB), r.n_faults, r.time_us);
    prev_f = r.n_faults;
    prev_t = r.time_us;
  }
  printf("\n");
  CHECK_EQ_INT(prev_f, 9);
  mlsys_offload_trace_free(&tr);
}

TEST(uvm_faults_grow_as_gpu_shrinks_generated) {
  int s, drops = 0, steps = 0;
  double worst_t = 1, worst_b = 1, worst_drop = 0;
  for (s = 0; s < 20; s++) {
    mlsys_offload_trace tr;
    gen_info gi;
    double q[33], t[33], b[33], sumc;
    int k, n = 0;
    int64_t peak;
    gen_train(&tr, 500 + (uint64_t)s, 2 + s % 7, 1, &gi);
    peak = mlsys_offload_peak_bytes(&tr);
    sumc = gi.t_fwd + gi.t_bwd + gi.t_opt;
    for (k = 0; k <= 32; k++) {   /* oversubscription 1x .. 2x */
      mlsys_offload_simres r;
      double ratio = 1.0 + k / 32.0;
      sweep_point(&tr, (int64_t)ceil((double)peak / ratio), &r);
      if (!r.feasible) {   /* one op larger than the GPU: the sweep ends here */
        CHECK_CONTAINS(r.why, "more than");
        break;
      }
      if (k == 0) {
        CHECK_EQ_INT(r.n_faults, 0);
        CHECK_NEAR(r.time_us, sumc, 1e-6 * sumc);
      } else {
        CHECK(r.n_faults > 0);
        CHECK(r.time_us > sumc);
      }
      if (n && r.time_us < t[n - 1]) {
        drops++;
        if ((t[n - 1] - r.time_us) / t[n - 1] > worst_drop) worst_drop = (t[n - 1] - r.time_us) / t[n - 1];
      }
      steps += n > 0;
      q[n] = ratio;
      t[n] = r.time_us;
      b[n++] = (double)(r.bytes_h2d + r.bytes_d2h);
    }
    if (n >= 8) {
      double rt = spearman(q, t, n), rb = spearman(q, b, n);
      CHECK_MSG(rt >= 0.9 && rb >= 0.9, "seed %d: rank correlation of oversubscription with time %.3f, bytes %.3f", 500 + s, rt, rb);
      if (rt < worst_t) worst_t = rt;
      if (rb < worst_b) worst_b = rb;
    }
    if (s == 0) {
      printf("    seed 500 (%d ops) faults/us from 1x to 2x:", tr.n_op);
      for (k = 0; k < n; k += 4) {
        mlsys_offload_simres r;
        sweep_point(&tr, (int64_t)ceil((double)peak / q[k]), &r);
        printf(" %.2fx %d/%.0f", q[k], r.n_faults, r.time_us);
      }
      printf("\n");
    }
    mlsys_offload_trace_free(&tr);
  }
  printf("    20 generated steps: rank correlation >= %.3f (time), %.3f (bytes); %d of %d steps to a smaller GPU were faster"
         " (largest %.1f%%)\n", worst_t, worst_b, drops, steps, 100 * worst_drop);
}

/* ---- UVM: above 2x oversubscription the policy refuses ----
   The hand chain: footprint 20 MiB, at most 6 MiB touched by one op. */
TEST(uvm_oversubscription_cap) {
  mlsys_offload_trace tr;
  mlsys_offload_simres r;
  mlsys_offload_uvm_opts o = uvm_opts(2);
  mlsys_offload_hw hw = hw_of(10 * MIB);   /* exactly 2x: allowed */
  hand_chain(&tr);
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  CHECK(r.n_faults > 0);
  hw.gpu_bytes = 10 * MIB - 1;   /* just above 2x */
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "exceeds UVM cap");
  CHECK(r.n_faults > 0 && r.time_us > r.compute_us);   /* what UVM would do is still reported */
  printf("    %s\n", r.why);
  hw.gpu_bytes = 20 * MIB / 3;   /* 3x */
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "exceeds UVM cap of 2x");
  o.oversub_max = 3.5;   /* a looser cap lets 3x run */
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  o.oversub_max = INFINITY;
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  mlsys_offload_trace_free(&tr);
}

TEST(uvm_op_larger_than_gpu_and_bad_args) {
  mlsys_offload_trace tr;
  mlsys_offload_simres r;
  mlsys_offload_uvm_opts o;
  mlsys_offload_hw hw = hw_of(4 * MIB);
  int a, b, in[1];
  mlsys_offload_trace_init(&tr);
  a = T(&tr, 3 * MIB, MLSYS_OFFLOAD_T_PARAM);
  b = T(&tr, 2 * MIB, MLSYS_OFFLOAD_T_ACT);
  in[0] = a;
  OP(&tr, "small", 1, 1, in, 0, NULL, 0);
  OP(&tr, "big", 1, 1, in, 1, &b, 0);   /* 5 MiB at once on a 4 MiB GPU (footprint 1.25x: under the cap) */
  memset(&o, 0, sizeof o);
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "op 1 (big)");
  CHECK_EQ_INT(r.time_us, 0);
  hw.gpu_bytes = 5 * MIB;
  REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  o.evict_chunk = 100 * KIB;   /* not a multiple of the page */
  CHECK_EQ_INT(mlsys_offload_sim_uvm(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "multiple");
  o.evict_chunk = 0;
  o.iterations = -1;
  CHECK_EQ_INT(mlsys_offload_sim_uvm(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  hw.gpu_bytes = 0;
  CHECK_EQ_INT(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r), MLSYS_ERR_ARG);
  mlsys_offload_trace_free(&tr);
}

/* ---- UVM on real operator traces: the DTR prototype's logs (tests/data/dtr/logs.zip, see its README) ----
   Tree-LSTM (7,079 ops, a dynamic network) and U-Net (360 ops, 8 GB): the plain simulator agrees at every point;
   the paged footprint fits with no warm fault; the time grows with oversubscription (rank correlation); ZeRO-
   Offload does not apply (a DTR log keeps its weights as constants: no PARAM tensors). */
static int read_dtr(const char *name, mlsys_offload_trace *tr) {
  char cmd[512], *buf;
  size_t cap = 1 << 22, n = 0, got;
  FILE *p;
  mlsys_status st;
  snprintf(cmd, sizeof cmd, "unzip -p tests/data/dtr/logs.zip 'logs/%s' 2>/dev/null", name);
  if (!(buf = (char *)malloc(cap)) || !(p = popen(cmd, "r"))) { free(buf); return -1; }
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *nb = (char *)realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
  }
  if (pclose(p) != 0 || n == 0) { free(buf); return -1; }
  st = mlsys_offload_trace_from_dtr(buf, n, name, tr);
  free(buf);
  return st ? -2 : 0;
}

TEST(uvm_real_dtr_traces) {
  static const char *const logs[] = {"treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log",
                                     "unet-6-8000000000.0-2020-10-1-10-57-18-default.log"};
  static const char *const label[] = {"treelstm", "unet"};
  int l, k;
  if (system("unzip -v >/dev/null 2>&1") != 0) SKIP_DEP("unzip not installed (scripts/install-deps.sh)");
  for (l = 0; l < 2; l++) {
    mlsys_offload_trace tr;
    mlsys_offload_simres r;
    mlsys_offload_hw hw;
    int64_t peak, fit;
    double q[9], t[9];
    int rc = read_dtr(logs[l], &tr);
    if (rc == -1) SKIP_DEP("tests/data/dtr/logs.zip: %s not readable", logs[l]);
    REQUIRE(rc == 0);
    peak = mlsys_offload_peak_bytes(&tr);
    fit = paged_peak(&tr, PG);
    printf("    %s: %d ops, footprint %.1f MiB (%.1f MiB in pages); faults/ms:", label[l], tr.n_op, (double)peak / MIB,
           (double)fit / MIB);
    hw = hw_of(fit);
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
    CHECK_EQ_INT(r.n_faults, 0);
    CHECK_NEAR(r.time_us, r.compute_us, 1e-6 * r.compute_us);
    for (k = 0; k <= 8; k++) {   /* 1x .. 2x of the byte footprint; the plain simulator at 1x, 1.5x and 2x */
      q[k] = 1 + k / 8.0;
      if (k % 4 == 0 && (l == 0 || k == 4)) sweep_point(&tr, (int64_t)ceil((double)peak / q[k]), &r);
      else {
        hw = hw_of((int64_t)ceil((double)peak / q[k]));
        REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
      }
      CHECK(r.feasible);
      t[k] = r.time_us;
      if (k % 2 == 0) printf(" %.2fx %d/%.0f", q[k], r.n_faults, r.time_us / 1e3);
    }
    printf(" (sum c %.0f ms)\n", r.compute_us / 1e3);
    CHECK(spearman(q, t, 9) >= 0.9);
    CHECK(t[8] > 1.2 * r.compute_us);
    hw = hw_of(peak / 2 - 1);
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
    CHECK_CONTAINS(r.why, "exceeds UVM cap");
    hw = hw_of(1LL << 40);
    REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
    CHECK(!r.feasible);
    CHECK_CONTAINS(r.why, "no parameters in the trace");
    mlsys_offload_trace_free(&tr);
  }
}

/* ---- both simulators on the core's generated workloads (var-BERT, MoE; fp32, SGD) ----
   UVM: the paged footprint runs with no warm fault, the time grows with oversubscription, the plain simulator
   agrees. ZeRO: the §4.4 formula re-evaluated here from the trace's own sums (SGD ops are the optimizer). */
TEST(core_generated_workloads) {
  int w;
  for (w = 0; w < 2; w++) {
    mlsys_offload_trace tr;
    mlsys_offload_simres r;
    mlsys_offload_hw hw;
    mlsys_offload_facts f;
    mlsys_offload_zero_opts zo;
    int64_t peak, fit, pbytes = 0;
    double q[9], t[9], tfb = 0, tbwd = 0, M, want;
    int k, i;
    if (w == 0) REQUIRE_OK(mlsys_offload_gen_varbert(4, 2, 128, 256, NULL, &tr));
    else REQUIRE_OK(mlsys_offload_gen_moe(2, 4, 2, 256, 128, 7, NULL, &tr));
    peak = mlsys_offload_peak_bytes(&tr);
    fit = paged_peak(&tr, PG);
    hw = hw_of(fit);
    REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
    CHECK_EQ_INT(r.n_faults, 0);
    printf("    %s: %d ops, footprint %.1f MiB; UVM faults/us:", w ? "moe" : "varbert", tr.n_op, (double)peak / MIB);
    for (k = 0; k <= 8; k++) {
      q[k] = 1 + k / 8.0;
      if (k % 4 == 0) sweep_point(&tr, (int64_t)ceil((double)peak / q[k]), &r);
      else {
        hw = hw_of((int64_t)ceil((double)peak / q[k]));
        REQUIRE_OK(mlsys_offload_sim_uvm(&tr, &hw, NULL, &r));
      }
      CHECK(r.feasible);
      t[k] = r.time_us;
      if (k % 2 == 0) printf(" %.2fx %d/%.0f", q[k], r.n_faults, r.time_us);
    }
    CHECK(spearman(q, t, 9) >= 0.9);
    /* ZeRO, fp32 parameters */
    for (i = 0; i < tr.n_t; i++)
      if (tr.t[i].kind == MLSYS_OFFLOAD_T_PARAM) pbytes += tr.t[i].bytes;
    for (i = 0; i < tr.n_op; i++)
      if (strcmp(mlsys_offload_op_name(&tr, i), "SGD") != 0) {
        tfb += tr.op[i].time_us;
        if (tr.op[i].is_bwd) tbwd += tr.op[i].time_us;
      }
    M = (double)pbytes / 4;
    want = tfb + fmax(0, 2 * M / 12000 - tbwd) + M / 1000 + 2 * M / 12000;
    memset(&zo, 0, sizeof zo);
    zo.param_bytes = 4;
    hw = hw_of(1LL << 40);
    REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &zo, &r));
    CHECK_NEAR(r.time_us, want, 1e-9 * want);
    CHECK_NEAR(r.compute_us, tfb, 1e-9 * tfb);
    CHECK_EQ_INT(r.bytes_h2d, pbytes / 2);
    REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
    if (strcmp(mlsys_offload_op_name(&tr, f.peak_op), "SGD") != 0) CHECK_EQ_INT(r.peak_bytes, f.peak_bytes);   /* no optimizer state */
    CHECK(r.peak_bytes <= f.peak_bytes);
    printf("; ZeRO %.0f us (GPU ops %.0f us, M = %.0f)\n", r.time_us, tfb, M);
    mlsys_offload_facts_free(&f);
    mlsys_offload_trace_free(&tr);
  }
}

/* ---- ZeRO-Offload ---- */
/* Two PARAM tensors of 2,000,000 and 4,000,000 bytes: 6e6 fp16 bytes, M = 3e6 parameters. Forward 1000 µs (two
   ops), backward 300 µs (is_bwd), Adam 50 µs (on the CPU under ZeRO: not GPU time). PCIe 12 GB/s:
   2M/BW_d2h = 6e6/12000 = 500 µs; 2M/BW_h2d = 500 µs; CPU Adam 1000 params/µs: 3000 µs.
   no DPU: T = 1300 + max(0, 500 − 300) + 3000 + 500 = 5000 (migration 700, other 3000).
   DPU:    T = max(1300, 500 + 3000 + 500) = 4000; exposed tail 2700 split 3:1 → other 2025, migration 675.
   Infinite CPU: no DPU 1300 + 200 + 500 = 2000; DPU max(1300, 1000) = 1300 (nothing exposed).
   Overlap 0.5: exposed D2H 500 − 150 = 350 → 5150. */
static void zero_trace(mlsys_offload_trace *tr, int64_t adam_ws) {
  int w1, w2, m1, m2, x, h, y, gy, gh, g1, g2, in[4], out[3], o;
  mlsys_offload_trace_init(tr);
  w1 = T(tr, 2000000, MLSYS_OFFLOAD_T_PARAM);
  w2 = T(tr, 4000000, MLSYS_OFFLOAD_T_PARAM);
  m1 = T(tr, 24000000, MLSYS_OFFLOAD_T_OPT);   /* fp32 master + m + v: 12 bytes a parameter */
  m2 = T(tr, 48000000, MLSYS_OFFLOAD_T_OPT);
  x = T(tr, 1000000, MLSYS_OFFLOAD_T_INPUT);
  h = T(tr, 3000000, MLSYS_OFFLOAD_T_ACT);
  y = T(tr, 500000, MLSYS_OFFLOAD_T_ACT);
  gy = T(tr, 500000, MLSYS_OFFLOAD_T_GRAD);
  gh = T(tr, 3000000, MLSYS_OFFLOAD_T_GRAD);
  g1 = T(tr, 2000000, MLSYS_OFFLOAD_T_GRAD);
  g2 = T(tr, 4000000, MLSYS_OFFLOAD_T_GRAD);
  in[0] = x; in[1] = w1;
  OP(tr, "MatMul", 600, 2, in, 1, &h, 0);
  in[0] = h; in[1] = w2;
  OP(tr, "MatMul", 400, 2, in, 1, &y, 0);
  OP(tr, "loss_backward", 0, 1, &y, 1, &gy, 0);   /* 0 µs: keeps the sums round */
  tr->op[2].is_bwd = 1;
  in[0] = gy; in[1] = h; in[2] = w2;
  out[0] = gh; out[1] = g2;
  o = OP(tr, "MatMulBackward", 200, 3, in, 2, out, 0);
  tr->op[o].is_bwd = 1;
  in[0] = gh; in[1] = x; in[2] = w1;
  o = OP(tr, "MatMulBackward", 100, 3, in, 1, &g1, 0);
  tr->op[o].is_bwd = 1;
  in[0] = w1; in[1] = g1; in[2] = m1;
  out[0] = w1; out[1] = m1;
  o = OP(tr, "FusedAdam", 30, 3, in, 2, out, adam_ws);
  tr->op[o].is_bwd = 1;
  in[0] = w2; in[1] = g2; in[2] = m2;   /* m2 only read: state that exists before the first op */
  out[0] = w2;
  o = OP(tr, "FusedAdam", 20, 3, in, 1, out, 0);
  tr->op[o].is_bwd = 1;
}

TEST(zero_hand_two_params) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = hw_of(1LL << 40);
  mlsys_offload_zero_opts o;
  mlsys_offload_simres r;
  zero_trace(&tr, 0);
  memset(&o, 0, sizeof o);
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK(r.feasible);
  CHECK_NEAR(r.compute_us, 1300, 1e-9);
  CHECK_NEAR(r.time_us, 5000, 1e-9);
  CHECK_NEAR(r.migration_us, 700, 1e-9);
  CHECK_NEAR(r.other_us, 3000, 1e-9);
  CHECK_EQ_INT(r.bytes_d2h, 6000000);
  CHECK_EQ_INT(r.bytes_h2d, 6000000);
  o.dpu = 1;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK_NEAR(r.time_us, 4000, 1e-9);
  CHECK_NEAR(r.other_us, 2025, 1e-9);
  CHECK_NEAR(r.migration_us, 675, 1e-9);
  CHECK_NEAR(r.compute_us + r.migration_us + r.other_us, r.time_us, 1e-9);
  o.cpu_adam_params_per_us = INFINITY;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK_NEAR(r.time_us, 1300, 1e-9);
  CHECK_NEAR(r.migration_us + r.other_us, 0, 1e-12);
  o.dpu = 0;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK_NEAR(r.time_us, 2000, 1e-9);
  o.cpu_adam_params_per_us = 0;
  o.overlap_bwd_frac = 0.5;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK_NEAR(r.time_us, 5150, 1e-9);
  o.overlap_bwd_frac = -1;   /* no overlap: all 500 µs of D2H exposed */
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
  CHECK_NEAR(r.time_us, 5300, 1e-9);
  printf("    2 params, M = 3e6: %.0f us (no DPU), 4000 us (DPU)\n", 5000.0);
  mlsys_offload_trace_free(&tr);
}

/* With infinite PCIe and an infinitely fast CPU the step costs the GPU's ops only: Σc of the trace minus the
   optimizer's ops (none in the second case: then exactly facts.compute_us). */
TEST(zero_infinite_bandwidth_is_sum_c) {
  int s;
  for (s = 0; s < 10; s++) {
    mlsys_offload_trace tr;
    gen_info gi;
    mlsys_offload_hw hw = hw_of(1LL << 50);
    mlsys_offload_zero_opts o;
    mlsys_offload_simres r;
    int dpu;
    gen_train(&tr, 900 + (uint64_t)s, 1 + s % 7, 0, &gi);
    hw.h2d_gbps = hw.d2h_gbps = INFINITY;
    memset(&o, 0, sizeof o);
    o.cpu_adam_params_per_us = INFINITY;
    for (dpu = 0; dpu < 2; dpu++) {
      o.dpu = dpu;
      REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
      CHECK_NEAR(r.time_us, gi.t_fwd + gi.t_bwd, 1e-9 * (gi.t_fwd + gi.t_bwd));
      CHECK_NEAR(r.time_us, r.compute_us, 0);
    }
    /* finite bandwidth costs more without DPU; DPU never costs more than no DPU */
    hw.h2d_gbps = hw.d2h_gbps = 0;
    o.cpu_adam_params_per_us = 0;
    o.dpu = 0;
    REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
    {
      double nodpu = r.time_us;
      CHECK(nodpu > gi.t_fwd + gi.t_bwd);
      o.dpu = 1;
      REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
      CHECK(r.time_us <= nodpu + 1e-9);
      CHECK(r.time_us >= gi.t_fwd + gi.t_bwd - 1e-9);
    }
    mlsys_offload_trace_free(&tr);
  }
  {   /* no optimizer ops at all: exactly Σc */
    mlsys_offload_trace tr;
    mlsys_offload_hw hw = hw_of(1LL << 40);
    mlsys_offload_zero_opts o;
    mlsys_offload_simres r;
    mlsys_offload_facts f;
    int w, x, y, in[2];
    mlsys_offload_trace_init(&tr);
    w = T(&tr, 1000, MLSYS_OFFLOAD_T_PARAM);
    x = T(&tr, 1000, MLSYS_OFFLOAD_T_INPUT);
    y = T(&tr, 1000, MLSYS_OFFLOAD_T_ACT);
    in[0] = x; in[1] = w;
    OP(&tr, "MatMul", 12.5, 2, in, 1, &y, 0);
    OP(&tr, "Relu", 7.25, 1, &y, 0, NULL, 0);
    hw.h2d_gbps = hw.d2h_gbps = INFINITY;
    memset(&o, 0, sizeof o);
    o.cpu_adam_params_per_us = INFINITY;
    REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
    REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
    CHECK_NEAR(r.time_us, f.compute_us, 0);
    CHECK_NEAR(r.time_us, 19.75, 0);
    CHECK_EQ_INT(r.peak_bytes, f.peak_bytes);   /* no optimizer state: the same bytes as PyTorch */
    mlsys_offload_facts_free(&f);
    mlsys_offload_trace_free(&tr);
  }
}

/* GPU bytes: the fp16 parameters and every activation and gradient stay; the optimizer state (72 MB here) and the
   optimizer ops' own memory leave. zero_trace by hand: persistent on the GPU W1 + W2 + X = 7,000,000; the live
   others peak at op 3, the first MatMulBackward (H 3e6, GY 0.5e6, GH 3e6, G2 4e6; Y died at op 2) = 10,500,000,
   so 17,500,000 bytes; PyTorch (facts) holds the 72e6 of OPT too: 89,500,000. */
TEST(zero_gpu_bytes_exclude_optimizer_state) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = hw_of(1LL << 40);
  mlsys_offload_simres r, pt;
  mlsys_offload_facts f;
  zero_trace(&tr, 0);
  REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
  CHECK_EQ_INT(f.peak_bytes, 89500000);
  CHECK_EQ_INT(f.peak_op, 3);
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK_EQ_INT(r.peak_bytes, 17500000);
  CHECK_EQ_INT(r.peak_bytes, f.peak_bytes - 72000000);
  /* feasible exactly up to that; PyTorch would need the optimizer state too */
  hw.gpu_bytes = 17500000;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK(r.feasible);
  REQUIRE_OK(mlsys_offload_sim_pytorch(&tr, &hw, &pt));
  CHECK(!pt.feasible);
  hw.gpu_bytes = 17499999;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "op 3 (MatMulBackward)");
  CHECK_NEAR(r.time_us, 5000, 1e-9);   /* the model's numbers are still there */
  mlsys_offload_facts_free(&f);
  mlsys_offload_trace_free(&tr);
  /* a 100 MB workspace in the CPU Adam moves the PyTorch peak there; ZeRO's GPU bytes do not change */
  zero_trace(&tr, 100000000);
  REQUIRE_OK(mlsys_offload_trace_facts(&tr, &f));
  CHECK_EQ_INT(f.peak_op, 5);
  CHECK(f.peak_bytes > 172000000);
  hw.gpu_bytes = 1LL << 40;
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK_EQ_INT(r.peak_bytes, 17500000);
  mlsys_offload_facts_free(&f);
  mlsys_offload_trace_free(&tr);
}

TEST(zero_not_applicable_and_bad_args) {
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = hw_of(1LL << 30);
  mlsys_offload_zero_opts o;
  mlsys_offload_simres r;
  int x, y;
  mlsys_offload_trace_init(&tr);
  x = T(&tr, 1000, MLSYS_OFFLOAD_T_INPUT);
  y = T(&tr, 1000, MLSYS_OFFLOAD_T_ACT);
  OP(&tr, "Relu", 1, 1, &x, 1, &y, 0);
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK(!r.feasible);
  CHECK_CONTAINS(r.why, "no parameters in the trace");
  T(&tr, 2, MLSYS_OFFLOAD_T_PARAM);
  REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, NULL, &r));
  CHECK(r.feasible);
  memset(&o, 0, sizeof o);
  o.cpu_adam_params_per_us = -1;
  CHECK_EQ_INT(mlsys_offload_sim_zero(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  o.cpu_adam_params_per_us = NAN;
  CHECK_EQ_INT(mlsys_offload_sim_zero(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  o.cpu_adam_params_per_us = 0;
  o.overlap_bwd_frac = 1.5;
  CHECK_EQ_INT(mlsys_offload_sim_zero(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  o.overlap_bwd_frac = 0;
  o.param_bytes = -2;
  CHECK_EQ_INT(mlsys_offload_sim_zero(&tr, &hw, &o, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "bytes a parameter");
  CHECK_EQ_INT(mlsys_offload_sim_zero(NULL, &hw, NULL, &r), MLSYS_ERR_ARG);
  mlsys_offload_trace_free(&tr);
}

/* The optimizer-op rule: a name with adam/sgd/optim in any case, or a write to an OPT tensor. */
TEST(zero_optimizer_ops_recognised) {
  static const char *const names[] = {"Adam", "aten::_fused_adamw_", "SGD", "optimizer.step", "MyOptimStep", "Mul"};
  static const int is_opt[] = {1, 1, 1, 1, 1, 0};
  int i;
  for (i = 0; i < 7; i++) {
    mlsys_offload_trace tr;
    mlsys_offload_hw hw = hw_of(1LL << 30);
    mlsys_offload_zero_opts o;
    mlsys_offload_simres r;
    int w, s;
    mlsys_offload_trace_init(&tr);
    w = T(&tr, 1000, MLSYS_OFFLOAD_T_PARAM);
    s = T(&tr, 1000, MLSYS_OFFLOAD_T_OPT);
    OP(&tr, "fwd", 10, 1, &w, 0, NULL, 0);
    if (i < 6) OP(&tr, names[i], 100, 1, &w, 1, &w, 0);
    else OP(&tr, "Mul", 100, 1, &w, 1, &s, 0);   /* writes optimizer state: an optimizer op by that alone */
    hw.h2d_gbps = hw.d2h_gbps = INFINITY;
    memset(&o, 0, sizeof o);
    o.cpu_adam_params_per_us = INFINITY;
    REQUIRE_OK(mlsys_offload_sim_zero(&tr, &hw, &o, &r));
    CHECK_MSG(fabs(r.time_us - ((i < 6 && !is_opt[i]) ? 110 : 10)) < 1e-9, "op %d: %.1f us", i, r.time_us);
    mlsys_offload_trace_free(&tr);
  }
}

TEST_MAIN()
