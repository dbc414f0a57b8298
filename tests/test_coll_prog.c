/* Tests for the program part of mlsys_collective.h (§5.6; spec §3.10–3.13): lowering hand-built algorithms to
   MSCCL-style programs, the program verifier, the CPU executor against the naive reference collective, the MSCCL
   XML writer/reader (round trip, the authors' style, malformed input). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"
#include "tests/test.h"
#include "tests/coll_xml.h"

enum { AG = MLSYS_COLL_ALLGATHER, A2A = MLSYS_COLL_ALLTOALL, RS = MLSYS_COLL_REDUCESCATTER, AR = MLSYS_COLL_ALLREDUCE };
enum { CP = MLSYS_COLL_XF_COPY, RD = MLSYS_COLL_XF_REDUCE };

/* ---------------- hand-built algorithms ---------------- */
typedef void (*builder_fn)(mlsys_coll_algo *a, int N, int C);

/* Ring ALLGATHER: at round j rank r forwards the chunk that originated at r−j to r+1. */
static void build_ring_ag(mlsys_coll_algo *a, int N, int C) {
  int j, r, k;
  mlsys_coll_algo_init(a, AG, N, C, 1024);
  for (j = 0; j < N - 1; j++)
    for (r = 0; r < N; r++)
      for (k = 0; k < C; k++) mlsys_coll_algo_push(a, ((r - j + N) % N) * C + k, r, (r + 1) % N, CP, -1);
}
/* Direct ALLGATHER: every rank sends its chunks to every other rank. */
static void build_direct_ag(mlsys_coll_algo *a, int N, int C) {
  int r, d, k;
  mlsys_coll_algo_init(a, AG, N, C, 1024);
  for (r = 0; r < N; r++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++)
        if (d != r) mlsys_coll_algo_push(a, r * C + k, r, d, CP, -1);
}
/* Direct ALLTOALL; the C chunks of one (s, d) pair form one merge group. */
static void build_direct_a2a(mlsys_coll_algo *a, int N, int C) {
  int s, d, k;
  mlsys_coll_algo_init(a, A2A, N, C, 1024);
  for (s = 0; s < N; s++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++)
        if (d != s) mlsys_coll_algo_push(a, (s * N + d) * C + k, s, d, CP, s * N + d);
}
/* ALLTOALL relayed through a third rank m = s+1 (when m ≠ d): the relay keeps the chunk in scratch. Second hops
   out of a relay to one destination are merged. */
static void build_relay_a2a(mlsys_coll_algo *a, int N, int C) {
  int s, d, k;
  mlsys_coll_algo_init(a, A2A, N, C, 1024);
  for (s = 0; s < N; s++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++) {
        int m = (s + 1) % N, c = (s * N + d) * C + k;
        if (d == s) continue;
        mlsys_coll_algo_push(a, c, s, m == d ? d : m, CP, -1);
      }
  for (s = 0; s < N; s++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++) {
        int m = (s + 1) % N, c = (s * N + d) * C + k;
        if (d == s || m == d) continue;
        mlsys_coll_algo_push(a, c, m, d, CP, 1000 + m * N + d);
      }
}
/* Two "nodes" of N/2 ranks; inter-node chunks go s → gateway(s) → gateway(d) → d, all chunks on a gateway link
   in one merge group (a TACCL IB relay, §3.10 aid_IB_contig). */
static void build_hier_a2a(mlsys_coll_algo *a, int N, int C) {
  int s, d, k, G = N / 2;
  mlsys_coll_algo_init(a, A2A, N, C, 1024);
  for (s = 0; s < N; s++)   /* intra-node direct, and first hops to the local gateway */
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++) {
        int c = (s * N + d) * C + k, gs = (s / G) * G;
        if (d == s) continue;
        if (s / G == d / G) mlsys_coll_algo_push(a, c, s, d, CP, -1);
        else if (s != gs) mlsys_coll_algo_push(a, c, s, gs, CP, -1);
      }
  for (s = 0; s < N; s++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++) {
        int c = (s * N + d) * C + k, gs = (s / G) * G, gd = (d / G) * G;
        if (s / G != d / G) mlsys_coll_algo_push(a, c, gs, gd, CP, 7);
      }
  for (s = 0; s < N; s++)
    for (d = 0; d < N; d++)
      for (k = 0; k < C; k++) {
        int c = (s * N + d) * C + k, gd = (d / G) * G;
        if (s / G != d / G && d != gd) mlsys_coll_algo_push(a, c, gd, d, CP, -1);
      }
}
/* Ring REDUCESCATTER: the partial of chunk o·C+k starts at o+1 and is reduced along the ring into its owner o. */
static void push_ring_rs(mlsys_coll_algo *a, int N, int C) {
  int j, o, k;
  for (j = 0; j < N - 1; j++)
    for (o = 0; o < N; o++)
      for (k = 0; k < C; k++) mlsys_coll_algo_push(a, o * C + k, (o + 1 + j) % N, (o + 2 + j) % N, RD, -1);
}
static void build_ring_rs(mlsys_coll_algo *a, int N, int C) {
  mlsys_coll_algo_init(a, RS, N, C, 1024);
  push_ring_rs(a, N, C);
}
/* ALLREDUCE = ring REDUCESCATTER then ring ALLGATHER of the reduced chunks (§5.7). */
static void build_ring_ar(mlsys_coll_algo *a, int N, int C) {
  int j, o, k;
  mlsys_coll_algo_init(a, AR, N, C, 1024);
  push_ring_rs(a, N, C);
  for (j = 0; j < N - 1; j++)
    for (o = 0; o < N; o++)
      for (k = 0; k < C; k++) mlsys_coll_algo_push(a, o * C + k, (o + j) % N, (o + j + 1) % N, CP, -1);
}
/* Direct REDUCESCATTER: everyone reduces into the owner (several recv threadblocks accumulate one slot). */
static void build_direct_rs(mlsys_coll_algo *a, int N, int C) {
  int o, r, k;
  mlsys_coll_algo_init(a, RS, N, C, 1024);
  for (o = 0; o < N; o++)
    for (r = 0; r < N; r++)
      for (k = 0; k < C; k++)
        if (r != o) mlsys_coll_algo_push(a, o * C + k, r, o, RD, -1);
}
/* Direct ALLREDUCE: reduce into the owner, then the owner copies the result to everyone (merged per peer). */
static void build_direct_ar(mlsys_coll_algo *a, int N, int C) {
  int o, r, k;
  mlsys_coll_algo_init(a, AR, N, C, 1024);
  for (o = 0; o < N; o++)
    for (r = 0; r < N; r++)
      for (k = 0; k < C; k++)
        if (r != o) mlsys_coll_algo_push(a, o * C + k, r, o, RD, 100 + r);
  for (o = 0; o < N; o++)
    for (r = 0; r < N; r++)
      for (k = 0; k < C; k++)
        if (r != o) mlsys_coll_algo_push(a, o * C + k, o, r, CP, 200 + r);
}
/* Ring ALLREDUCE over a tree-ish reduce: chunk partials go r → r+1 ... but the chunk's owner forwards the final
   value in the other direction (tests rrcs and copies into partial slots). */
static void build_bidir_ar(mlsys_coll_algo *a, int N, int C) {
  int j, o, k;
  mlsys_coll_algo_init(a, AR, N, C, 1024);
  push_ring_rs(a, N, C);
  for (j = 0; j < N - 1; j++)
    for (o = 0; o < N; o++)
      for (k = 0; k < C; k++) mlsys_coll_algo_push(a, o * C + k, (o - j + N) % N, (o - j - 1 + 2 * N) % N, CP, -1);
}

/* ---------------- helpers ---------------- */
static void ibufs(int kind, int N, int C, int *ni, int *no) {
  *ni = kind == AG ? C : N * C;
  *no = kind == RS ? C : N * C;
}
static void **alloc_bufs(int N, size_t bytes) {
  void **b = (void **)calloc((size_t)N, sizeof(void *));
  int r;
  for (r = 0; r < N; r++) b[r] = calloc(bytes ? bytes : 1, 1);
  return b;
}
static void free_bufs(void **b, int N) {
  int r;
  for (r = 0; r < N; r++) free(b[r]);
  free(b);
}
/* Random small values: exact in float and never overflowing for sums; products in [-3, 3]. */
static void fill_inputs(void **in, int N, size_t count, int dtype, int redop, uint64_t seed) {
  mlsys_rng g;
  int r;
  size_t i;
  mlsys_rng_seed(&g, seed);
  for (r = 0; r < N; r++)
    for (i = 0; i < count; i++) {
      int v = redop == MLSYS_COLL_PROD ? mlsys_rng_range(&g, -3, 3) : mlsys_rng_range(&g, -50, 50);
      switch (dtype) {
        case MLSYS_COLL_I32: ((int32_t *)in[r])[i] = v; break;
        case MLSYS_COLL_I64: ((int64_t *)in[r])[i] = (int64_t)v * 1000003; break;
        case MLSYS_COLL_F32: ((float *)in[r])[i] = (float)v; break;
        default: ((double *)in[r])[i] = v; break;
      }
    }
}
static size_t esize(int dtype) { return dtype == MLSYS_COLL_I32 || dtype == MLSYS_COLL_F32 ? 4 : 8; }

/* exec_cpu(p) == reference on random data, for one dtype/redop and a few seeds; returns #mismatching runs. */
static int exec_matches(const mlsys_coll_prog *p, int kind, int N, int C, int dtype, int redop, int nseeds) {
  int ni, no, s, r, bad = 0;
  size_t E = 3 * (size_t)p->instances, es = esize(dtype);
  void **in, **out, **ref;
  ibufs(kind, N, C, &ni, &no);
  in = alloc_bufs(N, ni * E * es); out = alloc_bufs(N, no * E * es); ref = alloc_bufs(N, no * E * es);
  for (s = 0; s < nseeds; s++) {
    fill_inputs(in, N, ni * E, dtype, redop, 1000 + s);
    CHECK_OK(mlsys_coll_reference(kind, N, C, dtype, redop, in, ref, E));
    for (r = 0; r < N; r++) memset(out[r], 0x5a, no * E * es);
    if (mlsys_coll_exec_cpu(p, dtype, redop, in, out, E, 77 + 13 * (uint64_t)s) != MLSYS_OK) {
      printf("    exec_cpu failed: %s\n", mlsys_last_error());
      bad++;
      continue;
    }
    for (r = 0; r < N; r++)
      if (memcmp(out[r], ref[r], no * E * es)) { bad++; break; }
  }
  free_bufs(in, N); free_bufs(out, N); free_bufs(ref, N);
  return bad;
}
static int count_steps(const mlsys_coll_prog *p, int op, int mincnt) {
  int g, t, s, n = 0;
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++)
      for (s = 0; s < p->gpus[g].tbs[t].nsteps; s++)
        if ((op < 0 || p->gpus[g].tbs[t].steps[s].op == op) && p->gpus[g].tbs[t].steps[s].cnt >= mincnt) n++;
  return n;
}
/* MSCCL constraints the lowering must meet: ≤ 1 send peer and ≤ 1 recv peer per threadblock (by construction of
   the struct), steps of a peer-less type only in blocks with that peer, a step waits on at most one step. */
static int tb_peers_ok(const mlsys_coll_prog *p) {
  int g, t, s;
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
      for (s = 0; s < tb->nsteps; s++) {
        int op = tb->steps[s].op;
        int sends = op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRCS;
        int recvs = op == MLSYS_COLL_OP_RECV || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRC || op == MLSYS_COLL_OP_RRCS;
        if ((sends && tb->send < 0) || (recvs && tb->recv < 0)) return 0;
      }
    }
  return 1;
}

/* The full check of one algorithm: lower → verify → exec vs reference (several dtypes, redops, seeds) → XML
   write/read/write byte-identical → the re-read program verifies and executes identically. */
static void check_algo(int kind, int N, int C, int inst, builder_fn build, mlsys_coll_prog *keep) {
  mlsys_coll_def d;
  mlsys_coll_algo a;
  mlsys_coll_prog p, q;
  char msg[1024];
  size_t l1 = 0, l2 = 0;
  char *x1, *x2;
  REQUIRE_OK(mlsys_coll_def_make(kind, N, C, &d));
  build(&a, N, C);
  REQUIRE_OK(mlsys_coll_lower(&d, &a, inst, &p));
  CHECK_EQ_INT(p.ngpus, N);
  CHECK_EQ_INT(p.instances, inst);
  CHECK_EQ_INT(p.nchannels, inst);
  CHECK(tb_peers_ok(&p));
  if (mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) != MLSYS_OK)
    CHECK_MSG(0, "%s N=%d C=%d inst=%d: verify: %s", mlsys_coll_kind_name(kind), N, C, inst, msg);
  CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I32, MLSYS_COLL_SUM, 3), 0);
  if (d.combining) {
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I64, MLSYS_COLL_PROD, 2), 0);
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I64, MLSYS_COLL_MIN, 2), 0);
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I64, MLSYS_COLL_MAX, 2), 0);
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_F32, MLSYS_COLL_SUM, 2), 0);
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_F64, MLSYS_COLL_MAX, 1), 0);
  } else {
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_F64, MLSYS_COLL_SUM, 1), 0);
  }
  x1 = xml_of(&p, &l1);
  REQUIRE(x1 != NULL);
  CHECK_CONTAINS(x1, "nchunksperloop=");
  CHECK_CONTAINS(x1, "outofplace=\"1\"");
  CHECK_CONTAINS(x1, "minBytes=\"0\" maxBytes=\"0\"");
  CHECK(strncmp(x1, "<algo ", 6) == 0);   /* the runtime reads the first node as <algo> */
  REQUIRE_OK(mlsys_coll_prog_read_xml(x1, l1, "rt.xml", &q));
  x2 = xml_of(&q, &l2);
  REQUIRE(x2 != NULL);
  CHECK(l1 == l2 && memcmp(x1, x2, l1) == 0);
  CHECK_OK(mlsys_coll_prog_verify(&d, &q, msg, sizeof msg));
  CHECK_EQ_INT(exec_matches(&q, kind, N, C, MLSYS_COLL_I32, MLSYS_COLL_SUM, 2), 0);
  free(x1); free(x2);
  mlsys_coll_prog_free(&q);
  if (keep) *keep = p; else mlsys_coll_prog_free(&p);
  mlsys_coll_algo_free(&a);
  mlsys_coll_def_free(&d);
}

/* ---------------- positive cases ---------------- */
TEST(ring_allgather_4_8) {
  int inst, C;
  for (inst = 1; inst <= 4; inst *= 2)
    for (C = 1; C <= 2; C++) {
      mlsys_coll_prog p;
      check_algo(AG, 4, C, inst, build_ring_ag, &p);
      /* the relays fuse into recv-copy-send steps (§3.10) */
      CHECK(count_steps(&p, MLSYS_COLL_OP_RCS, 1) > 0);
      mlsys_coll_prog_free(&p);
      check_algo(AG, 8, C, inst, build_ring_ag, NULL);
    }
}
TEST(direct_allgather) {
  mlsys_coll_prog p;
  check_algo(AG, 4, 1, 1, build_direct_ag, &p);
  /* every chunk goes straight from its owner: nothing is relayed, so no recv-copy-send step exists */
  CHECK_EQ_INT(count_steps(&p, MLSYS_COLL_OP_RCS, 1), 0);
  mlsys_coll_prog_free(&p);
  check_algo(AG, 5, 2, 2, build_direct_ag, NULL);
  check_algo(AG, 3, 3, 4, build_direct_ag, NULL);
  check_algo(AG, 1, 2, 1, build_direct_ag, NULL);   /* one rank: only the local copy */
}
TEST(alltoall_direct_merged) {
  int inst;
  for (inst = 1; inst <= 4; inst *= 2) {
    mlsys_coll_prog p;
    check_algo(A2A, 4, 2, inst, build_direct_a2a, &p);
    /* each (s, d) group of 2 chunks is one step of cnt 2 on both sides */
    CHECK_EQ_INT(count_steps(&p, MLSYS_COLL_OP_SEND, 2), 12 * inst);
    CHECK_EQ_INT(count_steps(&p, MLSYS_COLL_OP_RECV, 2), 12 * inst);
    mlsys_coll_prog_free(&p);
  }
  check_algo(A2A, 3, 1, 1, build_direct_a2a, NULL);
  /* a send and a recv connection share a threadblock (ncclize; MSCCL allows ≤ 32 per channel): N−1 per channel */
  {
    mlsys_coll_prog p;
    int g, t, ch, worst = 0;
    check_algo(A2A, 8, 1, 2, build_direct_a2a, &p);
    for (g = 0; g < p.ngpus; g++)
      for (ch = 0; ch < p.nchannels; ch++) {
        int n = 0;
        for (t = 0; t < p.gpus[g].ntbs; t++) n += p.gpus[g].tbs[t].chan == ch && (p.gpus[g].tbs[t].send >= 0 || p.gpus[g].tbs[t].recv >= 0);
        if (n > worst) worst = n;
      }
    CHECK_EQ_INT(worst, 7);
    mlsys_coll_prog_free(&p);
  }
}
TEST(alltoall_relay_scratch) {
  int inst;
  for (inst = 1; inst <= 4; inst *= 2) {
    mlsys_coll_prog p;
    int g, scr = 0;
    check_algo(A2A, 4, 1, inst, build_relay_a2a, &p);
    for (g = 0; g < p.ngpus; g++) scr += p.gpus[g].s_chunks;
    CHECK(scr > 0);   /* relayed chunks live in scratch */
    mlsys_coll_prog_free(&p);
    check_algo(A2A, 5, 2, inst, build_relay_a2a, &p);
    CHECK(count_steps(&p, -1, 2) > 0);   /* merged relay groups stay contiguous in scratch */
    mlsys_coll_prog_free(&p);
  }
}
TEST(alltoall_gateway_merged_relays) {
  int inst;
  for (inst = 1; inst <= 2; inst++) {
    mlsys_coll_prog p;
    check_algo(A2A, 4, 2, inst, build_hier_a2a, &p);
    CHECK(count_steps(&p, -1, 2) > 0);
    mlsys_coll_prog_free(&p);
    check_algo(A2A, 6, 1, inst, build_hier_a2a, &p);
    CHECK(count_steps(&p, -1, 2) > 0);
    mlsys_coll_prog_free(&p);
  }
}
TEST(reducescatter_ring_and_direct) {
  int inst, N;
  for (inst = 1; inst <= 4; inst *= 2)
    for (N = 2; N <= 5; N++) {
      mlsys_coll_prog p;
      check_algo(RS, N, 1, inst, build_ring_rs, &p);
      if (N > 2) CHECK(count_steps(&p, MLSYS_COLL_OP_RRS, 1) > 0);   /* partials forwarded without a local copy */
      mlsys_coll_prog_free(&p);
      check_algo(RS, N, 2, inst, build_direct_rs, NULL);
    }
}
TEST(allreduce_ring_direct_bidir) {
  int inst;
  for (inst = 1; inst <= 4; inst *= 2) {
    mlsys_coll_prog p;
    check_algo(AR, 4, 2, inst, build_ring_ar, &p);
    CHECK(count_steps(&p, MLSYS_COLL_OP_RRCS, 1) > 0);   /* the owner's last reduce forwards the result */
    mlsys_coll_prog_free(&p);
    check_algo(AR, 8, 1, inst, build_ring_ar, NULL);
    check_algo(AR, 4, 2, inst, build_direct_ar, NULL);
    check_algo(AR, 5, 1, inst, build_bidir_ar, NULL);
  }
}

/* Dependencies and nops: rank 0 receives chunk 1 from rank 1 and chunk 2 from rank 2 in two threadblocks and
   forwards both to rank 3 in one merged send, which therefore waits on two threadblocks (a nop carries the extra
   dependency, as msccl-tools' ncclize does); every dependency target sets hasdep. */
static void build_gather_forward_ag(mlsys_coll_algo *a, int N, int C) {
  int r, d;
  (void)C;
  mlsys_coll_algo_init(a, AG, N, 1, 1024);
  mlsys_coll_algo_push(a, 1, 1, 0, CP, -1);
  mlsys_coll_algo_push(a, 2, 2, 0, CP, -1);
  mlsys_coll_algo_push(a, 1, 0, 3, CP, 9);
  mlsys_coll_algo_push(a, 2, 0, 3, CP, 9);
  for (r = 0; r < N; r++)
    for (d = 0; d < N; d++)
      if (d != r && !((r == 1 || r == 2) && (d == 0 || d == 3))) mlsys_coll_algo_push(a, r, r, d, CP, -1);
}
TEST(lowering_dependencies_and_nops) {
  mlsys_coll_prog p;
  int g, t, s, nops = 0, deps = 0, inst;
  for (inst = 1; inst <= 2; inst++) {
    check_algo(AG, 4, 1, inst, build_gather_forward_ag, &p);
    for (g = 0; g < p.ngpus; g++)
      for (t = 0; t < p.gpus[g].ntbs; t++)
        for (s = 0; s < p.gpus[g].tbs[t].nsteps; s++) {
          const mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
          if (st->op == MLSYS_COLL_OP_NOP) { nops++; CHECK(st->depid >= 0 && s + 1 < p.gpus[g].tbs[t].nsteps && st[1].depid >= 0); }
          if (st->depid >= 0) {
            deps++;
            CHECK(st->depid != t);
            CHECK(p.gpus[g].tbs[st->depid].steps[st->deps].hasdep == 1);
            CHECK(p.gpus[g].tbs[st->depid].steps[st->deps].op != MLSYS_COLL_OP_NOP);
          }
        }
    CHECK(count_steps(&p, MLSYS_COLL_OP_SEND, 2) >= inst);
    mlsys_coll_prog_free(&p);
  }
  CHECK(deps > 0);
  CHECK(nops > 0);
  check_algo(AR, 5, 2, 1, build_direct_ar, NULL);
}

/* A chunk delivered twice to rank 1 (from 0, then from 2) while rank 1 forwards the first copy to 3 and 4: the
   second recv (another threadblock) must wait until the (unfused) forward to 4 has read the slot — a
   write-after-read dependency that no message chain implies. */
static void build_double_delivery_ag(mlsys_coll_algo *a, int N, int C) {
  int r, d;
  (void)C;
  mlsys_coll_algo_init(a, AG, N, 1, 1024);
  mlsys_coll_algo_push(a, 0, 0, 1, CP, -1);
  mlsys_coll_algo_push(a, 0, 0, 2, CP, -1);
  mlsys_coll_algo_push(a, 0, 1, 3, CP, -1);
  mlsys_coll_algo_push(a, 0, 1, 4, CP, -1);
  mlsys_coll_algo_push(a, 0, 2, 1, CP, -1);
  for (r = 1; r < N; r++)
    for (d = 0; d < N; d++)
      if (d != r) mlsys_coll_algo_push(a, r, r, d, CP, -1);
}
TEST(lowering_write_after_read) {
  mlsys_coll_prog p;
  int t, s, war = 0;
  check_algo(AG, 5, 1, 1, build_double_delivery_ag, &p);
  for (t = 0; t < p.gpus[1].ntbs; t++)
    if (p.gpus[1].tbs[t].recv == 2)
      for (s = 0; s < p.gpus[1].tbs[t].nsteps; s++)
        if (p.gpus[1].tbs[t].steps[s].depid >= 0) war++;
  CHECK(war > 0);
  mlsys_coll_prog_free(&p);
  check_algo(AG, 5, 1, 2, build_double_delivery_ag, NULL);
}

/* Rank 1 receives chunks 0 then 1 from rank 0 and forwards them to 2 in the opposite order: fusing must not
   reorder the receives of one connection, so only chunk 1's recv fuses (rcs) and the program stays correct. */
static void build_reverse_forward_ag(mlsys_coll_algo *a, int N, int C) {
  int r, d, k;
  (void)C;
  mlsys_coll_algo_init(a, AG, N, 2, 1024);
  mlsys_coll_algo_push(a, 0, 0, 1, CP, -1);
  mlsys_coll_algo_push(a, 1, 0, 1, CP, -1);
  mlsys_coll_algo_push(a, 1, 1, 2, CP, -1);
  mlsys_coll_algo_push(a, 0, 1, 2, CP, -1);
  for (r = 1; r < N; r++)
    for (d = 0; d < N; d++)
      for (k = 0; k < 2; k++)
        if (d != r) mlsys_coll_algo_push(a, r * 2 + k, r, d, CP, -1);
}
TEST(fusion_keeps_connection_order) {
  mlsys_coll_prog p;
  int t, s, rcs = 0;
  check_algo(AG, 3, 2, 1, build_reverse_forward_ag, &p);
  for (t = 0; t < p.gpus[1].ntbs; t++)
    for (s = 0; s < p.gpus[1].tbs[t].nsteps; s++) rcs += p.gpus[1].tbs[t].steps[s].op == MLSYS_COLL_OP_RCS;
  CHECK_EQ_INT(rcs, 1);
  mlsys_coll_prog_free(&p);
  check_algo(AG, 3, 2, 2, build_reverse_forward_ag, NULL);
}

/* The executor's result does not depend on the interleaving, and its interleavings differ by seed. */
TEST(exec_many_seeds) {
  mlsys_coll_def d;
  mlsys_coll_algo a;
  mlsys_coll_prog p;
  REQUIRE_OK(mlsys_coll_def_make(AR, 6, 2, &d));
  build_bidir_ar(&a, 6, 2);
  REQUIRE_OK(mlsys_coll_lower(&d, &a, 2, &p));
  CHECK_EQ_INT(exec_matches(&p, AR, 6, 2, MLSYS_COLL_I32, MLSYS_COLL_SUM, 25), 0);
  mlsys_coll_prog_free(&p);
  mlsys_coll_algo_free(&a);
  mlsys_coll_def_free(&d);
}

TEST(reference_known_answer) {
  /* 2 ranks, C = 1, one element: AR sum of 3 and 4 is 7 everywhere; RS gives each owner its sum; A2A swaps. */
  int32_t i0[2] = {3, 10}, i1[2] = {4, 20}, o0[2], o1[2];
  void *in[2] = {i0, i1}, *out[2] = {o0, o1};
  CHECK_OK(mlsys_coll_reference(AR, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 1));
  CHECK(o0[0] == 7 && o0[1] == 30 && o1[0] == 7 && o1[1] == 30);
  CHECK_OK(mlsys_coll_reference(RS, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_MAX, in, out, 1));
  CHECK(o0[0] == 4 && o1[0] == 20);
  CHECK_OK(mlsys_coll_reference(A2A, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 1));
  CHECK(o0[0] == 3 && o0[1] == 4 && o1[0] == 10 && o1[1] == 20);
  CHECK_OK(mlsys_coll_reference(AG, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 1));
  CHECK(o0[0] == 3 && o0[1] == 4 && o1[0] == 3 && o1[1] == 4);
  CHECK(mlsys_coll_reference(7, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 1) == MLSYS_ERR_ARG);
}

/* ---------------- negative cases: program mutations ---------------- */
static void lower_or_die(int kind, int N, int C, int inst, builder_fn b, mlsys_coll_def *d, mlsys_coll_prog *p) {
  mlsys_coll_algo a;
  REQUIRE_OK(mlsys_coll_def_make(kind, N, C, d));
  b(&a, N, C);
  REQUIRE_OK(mlsys_coll_lower(d, &a, inst, p));
  mlsys_coll_algo_free(&a);
}
static int exec_status(const mlsys_coll_prog *p, int kind, int N, int C) {
  int ni, no, st;
  void **in, **out;
  ibufs(kind, N, C, &ni, &no);
  in = alloc_bufs(N, ni * 4 * (size_t)p->instances * 4);
  out = alloc_bufs(N, no * 4 * (size_t)p->instances * 4);
  st = mlsys_coll_exec_cpu(p, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 4 * (size_t)p->instances, 1);
  free_bufs(in, N); free_bufs(out, N);
  return st;
}

TEST(verify_rejects_dropped_send) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  char msg[1024];
  int g, t, s, found = 0;
  lower_or_die(AG, 4, 1, 1, build_direct_ag, &d, &p);
  for (g = 0; g < p.ngpus && !found; g++)
    for (t = 0; t < p.gpus[g].ntbs && !found; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps && !found; s++)
        if (p.gpus[g].tbs[t].steps[s].op == MLSYS_COLL_OP_SEND) {
          mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
          st->op = MLSYS_COLL_OP_NOP; st->cnt = 0;   /* drop it, keeping the step indices */
          found = 1;
        }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(msg, "deadlock");
  CHECK_CONTAINS(msg, "waits for a message");
  CHECK(exec_status(&p, AG, 4, 1) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "deadlock");
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

TEST(verify_rejects_changed_recv_offset) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  char msg[1024];
  int g, t, s, found = 0;
  lower_or_die(AG, 4, 1, 1, build_direct_ag, &d, &p);
  for (g = 0; g < p.ngpus && !found; g++)
    for (t = 0; t < p.gpus[g].ntbs && !found; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps && !found; s++) {
        mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
        if (st->op == MLSYS_COLL_OP_RECV) {
          st->dstoff = (st->dstoff + 1) % 4;
          if (st->dstoff == g) st->dstoff = (st->dstoff + 1) % 4;   /* not the own-chunk slot (a copy writes it) */
          found = 1;
        }
      }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK(strstr(msg, "post-condition") != NULL || strstr(msg, "concurrently") != NULL);
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
  /* a changed offset that keeps the data flowing but puts it in the wrong output slot: post-condition */
  lower_or_die(AG, 3, 1, 1, build_ring_ag, &d, &p);
  found = 0;
  for (g = 0; g < p.ngpus && !found; g++)
    for (t = 0; t < p.gpus[g].ntbs && !found; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps && !found; s++) {
        mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
        if (st->op == MLSYS_COLL_OP_RECV) { st->dstoff = g; found = 1; }   /* onto the own chunk's slot */
      }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK(strstr(msg, "post-condition") != NULL || strstr(msg, "concurrently") != NULL);
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

/* Removing the dependency of a send on the recv (in another threadblock) that fills its slot: verify must see
   that the send may read an empty slot, whatever order it happens to run the threadblocks in. */
TEST(verify_rejects_missing_dependency) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  char msg[1024];
  int g, t, s, tried = 0;
  lower_or_die(A2A, 4, 1, 1, build_relay_a2a, &d, &p);
  for (g = 0; g < p.ngpus; g++)
    for (t = 0; t < p.gpus[g].ntbs; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps; s++) {
        mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
        const mlsys_coll_step *dep;
        int saved_id, saved_s;
        if (st->op != MLSYS_COLL_OP_SEND || st->depid < 0) continue;
        if (s > 0 && p.gpus[g].tbs[t].steps[s - 1].op == MLSYS_COLL_OP_NOP) continue;
        dep = &p.gpus[g].tbs[st->depid].steps[st->deps];
        if (dep->op != MLSYS_COLL_OP_RECV || dep->dstbuf != st->srcbuf || dep->dstoff != st->srcoff) continue;
        saved_id = st->depid; saved_s = st->deps;
        st->depid = -1; st->deps = -1;
        CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
        CHECK_CONTAINS(msg, "empty");
        st->depid = saved_id; st->deps = saved_s;
        tried++;
      }
  CHECK(tried >= 2);
  CHECK_OK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg));   /* restored: fine again */
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

/* A local reduce of the owner's own contribution appended after its last accumulation: double counted. */
TEST(verify_rejects_double_counted_reduce) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  char msg[1024];
  int t, s, found = 0, N = 3;
  lower_or_die(RS, N, 1, 1, build_ring_rs, &d, &p);
  for (t = 0; t < p.gpus[0].ntbs && !found; t++) {
    mlsys_coll_tb *tb = &p.gpus[0].tbs[t];
    for (s = 0; s < tb->nsteps; s++) {
      mlsys_coll_step *st = &tb->steps[s];
      if ((st->op == MLSYS_COLL_OP_RRC || st->op == MLSYS_COLL_OP_RRCS) && st->dstbuf == MLSYS_COLL_BUF_OUT && st->dstoff == 0) {
        mlsys_coll_step *ns = (mlsys_coll_step *)realloc(tb->steps, (size_t)(tb->nsteps + 1) * sizeof *ns);
        REQUIRE(ns != NULL);
        tb->steps = ns;
        memset(&ns[tb->nsteps], 0, sizeof *ns);
        ns[tb->nsteps].op = MLSYS_COLL_OP_REDUCE;
        ns[tb->nsteps].srcbuf = MLSYS_COLL_BUF_IN; ns[tb->nsteps].srcoff = 0;   /* rank 0's contribution to chunk 0 */
        ns[tb->nsteps].dstbuf = MLSYS_COLL_BUF_OUT; ns[tb->nsteps].dstoff = 0;
        ns[tb->nsteps].cnt = 1; ns[tb->nsteps].depid = -1; ns[tb->nsteps].deps = -1;
        tb->nsteps++;
        found = 1;
        break;
      }
    }
  }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(msg, "double-counted contribution of rank 0");
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

TEST(verify_rejects_count_mismatch_and_hasdep) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  char msg[1024];
  int g, t, s, found = 0;
  lower_or_die(A2A, 3, 2, 1, build_direct_a2a, &d, &p);
  for (g = 0; g < p.ngpus && !found; g++)
    for (t = 0; t < p.gpus[g].ntbs && !found; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps && !found; s++) {
        mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
        if (st->op == MLSYS_COLL_OP_RECV && st->cnt == 2) { st->cnt = 1; found = 1; }
      }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(msg, "count mismatch");
  CHECK(exec_status(&p, A2A, 3, 2) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "count mismatch");
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
  /* a dependency on a step without hasdep=1 would hang the MSCCL runtime */
  lower_or_die(A2A, 4, 1, 1, build_relay_a2a, &d, &p);
  found = 0;
  for (g = 0; g < p.ngpus && !found; g++)
    for (t = 0; t < p.gpus[g].ntbs && !found; t++)
      for (s = 0; s < p.gpus[g].tbs[t].nsteps && !found; s++) {
        mlsys_coll_step *st = &p.gpus[g].tbs[t].steps[s];
        if (st->depid >= 0) { p.gpus[g].tbs[st->depid].steps[st->deps].hasdep = 0; found = 1; }
      }
  REQUIRE(found);
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(msg, "hasdep");
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

TEST(verify_rejects_wrong_shape) {
  mlsys_coll_def d, d2;
  mlsys_coll_prog p;
  char msg[1024];
  lower_or_die(AG, 4, 1, 2, build_ring_ag, &d, &p);
  REQUIRE_OK(mlsys_coll_def_make(AG, 4, 2, &d2));   /* other chunkup: chunk counts differ */
  CHECK(mlsys_coll_prog_verify(&d2, &p, msg, sizeof msg) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(msg, "chunks");
  mlsys_coll_def_free(&d2);
  REQUIRE_OK(mlsys_coll_def_make(A2A, 4, 1, &d2));
  CHECK(mlsys_coll_prog_verify(&d2, &p, msg, sizeof msg) == MLSYS_ERR_ARG);
  mlsys_coll_def_free(&d2);
  /* exec: chunk_elems must split into the instances */
  {
    void **in = alloc_bufs(4, 64), **out = alloc_bufs(4, 256);
    CHECK(mlsys_coll_exec_cpu(&p, MLSYS_COLL_I32, MLSYS_COLL_SUM, in, out, 3, 1) == MLSYS_ERR_ARG);
    CHECK(mlsys_coll_exec_cpu(&p, 9, MLSYS_COLL_SUM, in, out, 2, 1) == MLSYS_ERR_ARG);
    free_bufs(in, 4); free_bufs(out, 4);
  }
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

/* ---------------- negative cases: algorithm mutations ---------------- */
TEST(lower_rejects_broken_algorithms) {
  mlsys_coll_def d;
  mlsys_coll_algo a, b;
  mlsys_coll_prog p;
  char msg[1024];
  int i, st, caught = 0, tried = 0;
  REQUIRE_OK(mlsys_coll_def_make(AG, 4, 1, &d));
  build_ring_ag(&a, 4, 1);
  /* every single missing transfer makes lower fail or verify reject */
  for (i = 0; i < a.nxfer; i++) {
    REQUIRE_OK(mlsys_coll_algo_copy(&a, &b));
    memmove(&b.x[i], &b.x[i + 1], (size_t)(b.nxfer - i - 1) * sizeof *b.x);
    b.nxfer--;
    tried++;
    st = mlsys_coll_lower(&d, &b, 1, &p);
    if (st != MLSYS_OK) { caught++; CHECK(st == MLSYS_ERR_INFEASIBLE); CHECK_CONTAINS(mlsys_last_error(), "chunk"); }
    else { if (mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) != MLSYS_OK) caught++; mlsys_coll_prog_free(&p); }
    mlsys_coll_algo_free(&b);
  }
  CHECK_EQ_INT(caught, tried);
  /* reduce in a non-combining collective, out-of-range transfer, mismatched collective */
  REQUIRE_OK(mlsys_coll_algo_copy(&a, &b));
  b.x[0].op = RD;
  CHECK(mlsys_coll_lower(&d, &b, 1, &p) == MLSYS_ERR_ARG);
  b.x[0].op = CP; b.x[0].dst = b.x[0].src;
  CHECK(mlsys_coll_lower(&d, &b, 1, &p) == MLSYS_ERR_ARG);
  mlsys_coll_algo_free(&b);
  CHECK(mlsys_coll_lower(&d, &a, 0, &p) == MLSYS_ERR_ARG);
  mlsys_coll_algo_free(&a);
  build_ring_rs(&a, 4, 1);
  CHECK(mlsys_coll_lower(&d, &a, 1, &p) == MLSYS_ERR_ARG);
  mlsys_coll_algo_free(&a);
  mlsys_coll_def_free(&d);
  /* a duplicated reduce transfer: lowering works, the program double counts */
  REQUIRE_OK(mlsys_coll_def_make(RS, 4, 1, &d));
  build_direct_rs(&a, 4, 1);
  mlsys_coll_algo_push(&a, a.x[0].chunk, a.x[0].src, a.x[0].dst, RD, -1);
  REQUIRE_OK(mlsys_coll_lower(&d, &a, 1, &p));
  CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(msg, "double-counted");
  mlsys_coll_prog_free(&p);
  mlsys_coll_algo_free(&a);
  /* a ring RS missing one hop: the owner misses contributions (post-condition), or lowering sees it */
  build_ring_rs(&a, 4, 1);
  memmove(&a.x[0], &a.x[1], (size_t)(a.nxfer - 1) * sizeof *a.x);
  a.nxfer--;
  st = mlsys_coll_lower(&d, &a, 1, &p);
  if (st == MLSYS_OK) {
    CHECK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) == MLSYS_ERR_INFEASIBLE);
    CHECK_CONTAINS(msg, "contributions");
    mlsys_coll_prog_free(&p);
  }
  mlsys_coll_algo_free(&a);
  mlsys_coll_def_free(&d);
}

/* A merge group whose later member needs data that depends on its earlier member cannot be one send: the
   lowering falls back to separate sends and stays correct. */
TEST(lower_unmergeable_group_falls_back) {
  mlsys_coll_def d;
  mlsys_coll_algo a;
  mlsys_coll_prog p;
  char msg[1024];
  REQUIRE_OK(mlsys_coll_def_make(AG, 3, 1, &d));
  mlsys_coll_algo_init(&a, AG, 3, 1, 1024);
  mlsys_coll_algo_push(&a, 0, 0, 1, CP, 5);    /* group 5 on 0→1: chunk 0 ... */
  mlsys_coll_algo_push(&a, 0, 1, 2, CP, -1);   /* 1 forwards chunk 0 to 2 */
  mlsys_coll_algo_push(&a, 2, 2, 0, CP, -1);   /* 2 sends chunk 2 to 0 — after it got chunk 0 (link order) */
  mlsys_coll_algo_push(&a, 2, 0, 1, CP, 5);    /* ... and chunk 2, which 0 only has after the above */
  mlsys_coll_algo_push(&a, 1, 1, 0, CP, -1);
  mlsys_coll_algo_push(&a, 1, 1, 2, CP, -1);
  REQUIRE_OK(mlsys_coll_lower(&d, &a, 1, &p));
  CHECK_OK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg));
  CHECK_EQ_INT(exec_matches(&p, AG, 3, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, 3), 0);
  mlsys_coll_prog_free(&p);
  mlsys_coll_algo_free(&a);
  mlsys_coll_def_free(&d);
}

/* ---------------- XML: the authors' style and malformed input ---------------- */
/* A 2-GPU ALLREDUCE written by hand the way msccl-tools' ncclize writes files (comment header, extra attributes
   such as redop, a cross-threadblock dependency, a nop), with single quotes and shuffled attribute order. */
static const char *const authors_xml =
    "<?xml version=\"1.0\"?>\n"
    "<!-- Copyright (c) Microsoft Corporation. -->\n"
    "<!-- Licensed under the MIT License. -->\n"
    "<algo name=\"allreduce_pairs_2\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"allreduce\" inplace=\"0\" outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\" redop=\"sum\">\n"
    "  <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "    <tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"1\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" depid=\"1\" deps=\"0\" hasdep=\"0\"/>\n"
    "      <step s=\"2\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"1\" deps=\"0\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "    <tb recv='1' id='1' chan='0' send='-1' extra='ignored'>\n"
    "      <step type='rrc' s='0' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='1'/>\n"
    "      <step s='1' type='r' srcbuf='o' srcoff='1' dstbuf='o' dstoff='1' cnt='1' depid='-1' deps='-1' hasdep='0'></step>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "  <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"1\">\n"
    "    <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"2\" type=\"cpy\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"3\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"4\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "</algo>\n";

TEST(read_authors_style_xml) {
  mlsys_coll_prog p, q;
  mlsys_coll_def d;
  char msg[1024];
  char *x1, *x2;
  size_t l1, l2;
  REQUIRE_OK(mlsys_coll_prog_read_xml(authors_xml, strlen(authors_xml), "authors.xml", &p));
  CHECK_STR(p.name, "allreduce_pairs_2");
  CHECK_STR(p.proto, "Simple");
  CHECK_EQ_INT(p.kind, AR);
  CHECK_EQ_INT(p.ngpus, 2);
  CHECK_EQ_INT(p.instances, 1);
  CHECK_EQ_INT(p.gpus[0].ntbs, 2);
  CHECK_EQ_INT(p.gpus[0].tbs[1].recv, 1);
  CHECK_EQ_INT(p.gpus[0].tbs[1].steps[0].op, MLSYS_COLL_OP_RRC);
  CHECK_EQ_INT(p.gpus[0].tbs[0].steps[2].depid, 1);
  CHECK_EQ_INT(p.gpus[1].s_chunks, 1);
  REQUIRE_OK(mlsys_coll_def_make(AR, 2, 1, &d));
  CHECK_OK(mlsys_coll_prog_verify(&d, &p, msg, sizeof msg));
  CHECK_EQ_INT(exec_matches(&p, AR, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, 4), 0);
  CHECK_EQ_INT(exec_matches(&p, AR, 2, 1, MLSYS_COLL_I64, MLSYS_COLL_MIN, 2), 0);
  x1 = xml_of(&p, &l1);
  REQUIRE(x1 != NULL);
  REQUIRE_OK(mlsys_coll_prog_read_xml(x1, l1, "rt.xml", &q));
  x2 = xml_of(&q, &l2);
  REQUIRE(x2 != NULL);
  CHECK(l1 == l2 && !memcmp(x1, x2, l1));
  CHECK(strstr(x1, "redop") == NULL);
  free(x1); free(x2);
  mlsys_coll_prog_free(&q);
  mlsys_coll_prog_free(&p);
  /* TACCL's own ncclize writes coll="reduce_scatter" */
  {
    const char *rs =
        "<algo name='x' proto='LL' nchannels='1' nchunksperloop='2' ngpus='2' coll='reduce_scatter' inplace='0' outofplace='1' minBytes='0' maxBytes='0' redop='nop'>\n"
        " <gpu id='0' i_chunks='2' o_chunks='1' s_chunks='0'>\n"
        "  <tb id='0' send='1' recv='1' chan='0'>\n"
        "   <step s='0' type='s' srcbuf='i' srcoff='1' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'/>\n"
        "   <step s='1' type='rrc' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'/>\n"
        "  </tb>\n"
        " </gpu>\n"
        " <gpu id='1' i_chunks='2' o_chunks='1' s_chunks='0'>\n"
        "  <tb id='0' send='0' recv='0' chan='0'>\n"
        "   <step s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'/>\n"
        "   <step s='1' type='rrc' srcbuf='i' srcoff='1' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'/>\n"
        "  </tb>\n"
        " </gpu>\n"
        "</algo>\n";
    mlsys_coll_def d2;
    REQUIRE_OK(mlsys_coll_prog_read_xml(rs, strlen(rs), "rs.xml", &p));
    CHECK_EQ_INT(p.kind, RS);
    CHECK_STR(p.proto, "LL");
    REQUIRE_OK(mlsys_coll_def_make(RS, 2, 1, &d2));
    CHECK_OK(mlsys_coll_prog_verify(&d2, &p, msg, sizeof msg));
    CHECK_EQ_INT(exec_matches(&p, RS, 2, 1, MLSYS_COLL_I32, MLSYS_COLL_SUM, 2), 0);
    mlsys_coll_def_free(&d2);
    mlsys_coll_prog_free(&p);
  }
  mlsys_coll_def_free(&d);
}

/* Each malformed input: MLSYS_ERR_PARSE, "bad.xml:LINE:" and words naming the problem. */
static void expect_parse_error(const char *text, int line, const char *words) {
  mlsys_coll_prog p;
  char want[64];
  mlsys_status st = mlsys_coll_prog_read_xml(text, strlen(text), "bad.xml", &p);
  CHECK_MSG(st == MLSYS_ERR_PARSE, "expected a parse error for [%s], got %d", text, (int)st);
  if (st == MLSYS_OK) { mlsys_coll_prog_free(&p); return; }
  snprintf(want, sizeof want, "bad.xml:%d: ", line);
  CHECK_MSG(strncmp(mlsys_last_error(), want, strlen(want)) == 0, "message \"%s\" does not start with \"%s\"", mlsys_last_error(), want);
  CHECK_CONTAINS(mlsys_last_error(), words);
  CHECK(p.gpus == NULL && p.ngpus == 0);
}
#define HEAD "<algo name='a' proto='Simple' nchannels='1' nchunksperloop='2' ngpus='2' coll='allgather' inplace='0' outofplace='1' minBytes='0' maxBytes='0'>\n"
#define GPU0 " <gpu id='0' i_chunks='1' o_chunks='2' s_chunks='0'>\n"
#define GPU1 " <gpu id='1' i_chunks='1' o_chunks='2' s_chunks='0'>\n  <tb id='0' send='-1' recv='0' chan='0'>\n   <step s='0' type='r' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'/>\n  </tb>\n </gpu>\n"
#define TB0 "  <tb id='0' send='1' recv='-1' chan='0'>\n"
#define STEP(x) "   <step " x "/>\n"
#define OKSTEP "s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'"
#define TAIL "  </tb>\n </gpu>\n" GPU1 "</algo>\n"

TEST(read_xml_malformed) {
  mlsys_coll_prog p;
  /* the base document is fine */
  const char *good = HEAD GPU0 TB0 STEP(OKSTEP) TAIL;
  REQUIRE_OK(mlsys_coll_prog_read_xml(good, strlen(good), "good.xml", &p));
  mlsys_coll_prog_free(&p);
  expect_parse_error("", 1, "no <algo>");
  expect_parse_error("<!-- only a comment -->\n", 2, "no <algo>");
  expect_parse_error("<algo name='a' proto='Simple' nchannels='1' nchunksperloop='2' coll='allgather' inplace='0' outofplace='1' minBytes='0' maxBytes='0'>\n</algo>\n",
                     1, "\"ngpus\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='abc' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "cnt=\"abc\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1'") TAIL, 4, "\"hasdep\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='xx' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "step type \"xx\"");
  expect_parse_error(HEAD GPU0 "  <tb id='0' send='5' recv='-1' chan='0'>\n" STEP(OKSTEP) TAIL, 3, "send=\"5\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='3' deps='0' hasdep='0'") TAIL, 4, "threadblock 3");
  expect_parse_error(HEAD GPU0 TB0 STEP(OKSTEP) STEP("s='1' type='nop' srcbuf='i' srcoff='-1' dstbuf='o' dstoff='-1' cnt='0' depid='0' deps='0' hasdep='0'") TAIL, 5, "own threadblock");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='-1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "cnt=\"-1\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='1' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "beyond the 1 chunks");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='x' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "srcbuf=\"x\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='3' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "out of order");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='r' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "no recv peer");
  expect_parse_error(HEAD GPU0 TB0 "   <foo a='1'/>\n" TAIL, 4, "unknown element <foo>");
  expect_parse_error(HEAD GPU0 TB0 STEP(OKSTEP) "  </gpu>\n", 5, "mismatched closing tag </gpu>");
  expect_parse_error(HEAD GPU0 TB0 STEP(OKSTEP), 5, "end of input inside <tb>");
  expect_parse_error(HEAD "<!-- open comment\n\n", 2, "unterminated comment");
  expect_parse_error(HEAD GPU0 TB0 "   <step s='0' type='s'\n", 4, "unterminated <step>");
  expect_parse_error(HEAD GPU0 TB0 "   <step s='0 type='s'/>\n" TAIL, 4, "malformed attribute");
  expect_parse_error(HEAD "hello\n" GPU0, 2, "unexpected text \"hello\"");
  expect_parse_error("<algo name='a' proto='Simple' nchannels='1' nchunksperloop='2' ngpus='100000' coll='allgather' inplace='0' outofplace='1' minBytes='0' maxBytes='0'/>", 1, "ngpus=\"100000\" of <algo> out of range");
  expect_parse_error("<algo name='a' proto='Simple' nchannels='1' nchunksperloop='2' ngpus='2' coll='allgather' inplace='0' outofplace='1' minBytes='0' maxBytes='0'>\n" GPU0 " </gpu>\n</algo>\n", 1, "no <gpu id=\"1\">");
  expect_parse_error(HEAD GPU0 " </gpu>\n" GPU1 GPU1 "</algo>\n", 9, "gpu id 1 appears twice");
  expect_parse_error("<algo name='a' proto='Fast' nchannels='1' nchunksperloop='2' ngpus='2' coll='allgather' inplace='0' outofplace='1' minBytes='0' maxBytes='0'/>", 1, "unknown proto");
  expect_parse_error("<algo name='a' proto='Simple' nchannels='1' nchunksperloop='2' ngpus='2' coll='broadcast' inplace='0' outofplace='1' minBytes='0' maxBytes='0'/>", 1, "unsupported collective");
  expect_parse_error("<algo name='a' name='b'/>", 1, "duplicate attribute name");
  expect_parse_error(HEAD GPU0 "  <tb id='1' send='1' recv='-1' chan='0'>\n" STEP(OKSTEP) TAIL, 3, "leaves a gap");
  expect_parse_error(HEAD GPU0 TB0 STEP(OKSTEP) "  </tb>\n  <tb id='1' send='1' recv='-1' chan='0'>\n  </tb>\n </gpu>\n" GPU1 "</algo>\n", 6, "both send to gpu 1");
  expect_parse_error(HEAD GPU0 "  <tb id='0' send='1' recv='-1' chan='4'>\n" STEP(OKSTEP) TAIL, 3, "chan=\"4\"");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='1' depid='-1' deps='-1' hasdep='0' x='&bogus;'") TAIL, 4, "entity");
  expect_parse_error("<step s='0'/>", 1, "<step> must be inside <tb>");
  expect_parse_error(HEAD GPU0 TB0 STEP(OKSTEP) TAIL "<algo/>", 13, "a second <algo>");
  expect_parse_error(HEAD GPU0 TB0 STEP("s='0' type='s' srcbuf='i' srcoff='0' dstbuf='o' dstoff='0' cnt='99999999999999999999' depid='-1' deps='-1' hasdep='0'") TAIL, 4, "out of range");
}

TEST(write_xml_escapes_and_rejects) {
  mlsys_coll_def d;
  mlsys_coll_prog p, q;
  char *x;
  size_t l;
  lower_or_die(AG, 2, 1, 1, build_ring_ag, &d, &p);
  snprintf(p.name, sizeof p.name, "a<b>&\"c'");
  x = xml_of(&p, &l);
  REQUIRE(x != NULL);
  CHECK_CONTAINS(x, "name=\"a&lt;b&gt;&amp;&quot;c&apos;\"");
  REQUIRE_OK(mlsys_coll_prog_read_xml(x, l, "esc.xml", &q));
  CHECK_STR(q.name, "a<b>&\"c'");
  free(x);
  mlsys_coll_prog_free(&q);
  snprintf(p.proto, sizeof p.proto, "Turbo");
  CHECK(xml_of(&p, &l) == NULL);
  CHECK_CONTAINS(mlsys_last_error(), "protocol");
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

/* ---------------- random algorithms (property test) ---------------- */
/* A random valid algorithm: AG chunks spread along random broadcast trees, A2A chunks along random relay paths,
   RS partials along random in-trees to their owner, AR = random RS tree then random broadcast from the owner;
   chunks interleave at random and about a third of the transfers carry one of 3 merge-group ids (so some
   consecutive transfers on a link merge, some merges are impossible and must fall back). */
static int rand_group(mlsys_rng *g) { return mlsys_rng_below(g, 3) == 0 ? (int)mlsys_rng_below(g, 3) : -1; }
static void build_random(mlsys_coll_algo *a, int kind, int N, int C, mlsys_rng *g) {
  int nch = kind == A2A ? N * N * C : N * C, c, r, i, left;
  int *phase = (int *)calloc((size_t)nch, sizeof(int));          /* per chunk: progress counter */
  unsigned char *has = (unsigned char *)calloc((size_t)nch * N, 1);
  int *order = (int *)calloc((size_t)nch * N, sizeof(int));      /* per chunk: rank order (tree / path) */
  int *len = (int *)calloc((size_t)nch, sizeof(int));
  mlsys_coll_algo_init(a, kind, N, C, 1024);
  for (c = 0; c < nch; c++) {
    int *o = order + (size_t)c * N, owner = kind == A2A ? c / C / N : c / C;
    for (i = 0; i < N; i++) o[i] = i;
    for (i = N - 1; i > 0; i--) { int j = (int)mlsys_rng_below(g, (uint64_t)i + 1), tmp = o[i]; o[i] = o[j]; o[j] = tmp; }
    for (i = 0; i < N; i++) if (o[i] == owner) { o[i] = o[0]; o[0] = owner; }   /* owner / origin first */
    if (kind == A2A) {   /* path s → up to 2 random relays → d */
      int d = (c / C) % N, nr = (int)mlsys_rng_below(g, 3), k = 1;
      if (d == owner) { len[c] = 0; continue; }
      for (i = 1; i < N && k <= nr; i++) if (o[i] != d) o[k++] = o[i];
      o[k++] = d;
      len[c] = k;
    } else len[c] = N;
    has[(size_t)c * N + owner] = 1;
  }
  left = 0;
  for (c = 0; c < nch; c++) left += kind == AR ? 2 * (N - 1) : kind == A2A ? (len[c] ? len[c] - 1 : 0) : N - 1;
  while (left > 0) {
    int *o;
    c = (int)mlsys_rng_below(g, (uint64_t)nch);
    o = order + (size_t)c * N;
    if (kind == AG || (kind == AR && phase[c] >= N - 1)) {   /* broadcast: a random holder to a random non-holder */
      int to = -1, from, tries;
      if ((kind == AG && phase[c] >= N - 1) || (kind == AR && phase[c] >= 2 * (N - 1))) continue;
      for (tries = 0; tries < 4 * N && to < 0; tries++) { r = (int)mlsys_rng_below(g, (uint64_t)N); if (!has[(size_t)c * N + r]) to = r; }
      if (to < 0) for (r = 0; r < N; r++) if (!has[(size_t)c * N + r]) { to = r; break; }
      do from = (int)mlsys_rng_below(g, (uint64_t)N); while (!has[(size_t)c * N + from]);
      mlsys_coll_algo_push(a, c, from, to, CP, rand_group(g));
      has[(size_t)c * N + to] = 1;
    } else if (kind == A2A) {
      if (phase[c] >= len[c] - 1) continue;
      mlsys_coll_algo_push(a, c, o[phase[c]], o[phase[c] + 1], CP, rand_group(g));
    } else {   /* reduce tree: o[k] (k ≥ 1, from the end) sends its partial to a random earlier o[j] */
      int k = N - 1 - phase[c], j;
      if (phase[c] >= N - 1) continue;
      j = (int)mlsys_rng_below(g, (uint64_t)k);
      mlsys_coll_algo_push(a, c, o[k], o[j], RD, rand_group(g));
      if (kind == AR && phase[c] == N - 2) for (r = 0; r < N; r++) has[(size_t)c * N + r] = r == o[0];
    }
    phase[c]++;
    left--;
  }
  free(phase); free(has); free(order); free(len);
}

TEST(random_algorithms_lower_verify_exec) {
  mlsys_rng g;
  int it, fails = 0, merged = 0;
  mlsys_rng_seed(&g, 20240601);
  for (it = 0; it < 160; it++) {
    int kind = it % 4, N = mlsys_rng_range(&g, 2, 6), C = mlsys_rng_range(&g, 1, 3), inst = mlsys_rng_range(&g, 1, 3);
    mlsys_coll_def d;
    mlsys_coll_algo a;
    mlsys_coll_prog p;
    char msg[1024];
    REQUIRE_OK(mlsys_coll_def_make(kind, N, C, &d));
    build_random(&a, kind, N, C, &g);
    REQUIRE_OK(mlsys_coll_lower(&d, &a, inst, &p));
    if (mlsys_coll_prog_verify(&d, &p, msg, sizeof msg) != MLSYS_OK) {
      if (fails++ < 3) printf("    it %d %s N=%d C=%d inst=%d: %s\n", it, mlsys_coll_kind_name(kind), N, C, inst, msg);
    }
    CHECK(tb_peers_ok(&p));
    CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I32, MLSYS_COLL_SUM, 2), 0);
    if (d.combining) CHECK_EQ_INT(exec_matches(&p, kind, N, C, MLSYS_COLL_I64, MLSYS_COLL_PROD, 1), 0);
    merged += count_steps(&p, -1, 2) > 0;
    mlsys_coll_prog_free(&p);
    mlsys_coll_algo_free(&a);
    mlsys_coll_def_free(&d);
  }
  CHECK_EQ_INT(fails, 0);
  CHECK(merged > 10);
}

TEST_MAIN()
