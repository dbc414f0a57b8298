// tests/cuda/test_collective_cuda.cu — the GPU side of mlsys_collective.h (kernels/mlsys_collective_kernels.cuh),
// built by `make cuda`, run by `make cuda-test`. Tests that need a device print "skip (no CUDA device)" without
// one; the host-side ones (the plan that both executors follow) run everywhere.
//
//   host (always):   the CPU references of the kernels equal mlsys_coll_exec_cpu's element loops; the plan of every
//                    test program, executed on the host with each communication phase done "concurrently" (all
//                    sources read before any destination is written, as inside one NCCL group), equals
//                    mlsys_coll_exec_cpu — so the NCCL rounds are race-free and correct;
//   (a) kernels:     copy / reduce for int32, int64, float, double × sum, prod, min, max on odd sizes and misaligned
//                    offsets against the CPU references, bit for bit (special values included: ±0, NaN, ±inf; only a
//                    NaN's own bits may differ: same_elems, checked on the host);
//   (b) emulation:   programs lowered from ring / direct / relay algorithms (ALLGATHER, ALLTOALL, REDUCESCATTER,
//                    ALLREDUCE) for 8, 16 and 32 ranks, 1 and 2 instances, run by mlsys_coll_exec_emul_cuda on one
//                    device: bit-identical to mlsys_coll_exec_cpu, and (integers) to mlsys_coll_reference;
//   (c) bandwidth:   moved to bench/cuda/bench_collective_gpu.cu (a speed is a measurement, not a test verdict);
//   (d) NCCL:        a 1-rank communicator (ncclCommInitAll) runs local-only programs through mlsys_coll_exec_nccl.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#define MLSYS_COLLECTIVE_CUDA
#ifdef MLSYS_HAVE_NCCL   // set by the Makefile's cuda rule when NCCL's header and library are installed
#define MLSYS_COLLECTIVE_NCCL
#endif
#include "mlsys_collective.h"
#include "kernels/mlsys_collective_kernels.cuh"
#include "tests/test.h"

#include "tests/cuda/cuda_test.h"

static const char *dtype_name[4] = {"int32", "int64", "float", "double"};
static const char *op_name[4] = {"sum", "prod", "min", "max"};

// Random elements of dtype: integers over the full range (wrapping sums and products), floats from a normal
// distribution with a few special values (±0, ±inf, NaN) when `special`.
static void fill(mlsys_rng *r, void *p, size_t n, int dtype, int special) {
  for (size_t i = 0; i < n; i++) {
    double u = mlsys_rng_uniform(r);
    switch (dtype) {
      case MLSYS_COLL_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)mlsys_rng_u64(r); break;
      case MLSYS_COLL_I64: ((int64_t *)p)[i] = (int64_t)mlsys_rng_u64(r); break;
      case MLSYS_COLL_F32: {
        float v = (float)mlsys_rng_normal(r);
        if (special && u < 0.02) v = u < 0.004 ? 0.0f : u < 0.008 ? -0.0f : u < 0.012 ? INFINITY : u < 0.016 ? -INFINITY : NAN;
        ((float *)p)[i] = v;
        break;
      }
      default: {
        double v = mlsys_rng_normal(r);
        if (special && u < 0.02) v = u < 0.004 ? 0.0 : u < 0.008 ? -0.0 : u < 0.012 ? INFINITY : u < 0.016 ? -INFINITY : NAN;
        ((double *)p)[i] = v;
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// host: the CPU references against mlsys_coll_exec_cpu's element loops
// ---------------------------------------------------------------------------------------------------------------
TEST(cpu_references_match_exec_cpu_loops) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 1);
  const size_t n = 1001;
  for (int dt = 0; dt < 4; dt++) {
    size_t es = mlsys_coll_cuda_esize(dt);
    char *a = (char *)malloc(n * es), *b = (char *)malloc(n * es), *x = (char *)malloc(n * es), *y = (char *)malloc(n * es);
    REQUIRE(a && b && x && y);
    fill(&r, a, n, dt, 1);
    fill(&r, b, n, dt, 1);
    for (int op = 0; op < 4; op++) {
      CHECK_OK(mlsys_coll_cpu_reduce3(x, a, b, n, dt, op));
      mlsys__coll_reduce_elems(y, a, b, n, dt, op);
      CHECK_MSG(!memcmp(x, y, n * es), "%s %s differs from the executor's loop", dtype_name[dt], op_name[op]);
    }
    CHECK_OK(mlsys_coll_cpu_copy(x, a, n, dt));
    CHECK(!memcmp(x, a, n * es));
    free(a); free(b); free(x); free(y);
  }
  CHECK(mlsys_coll_cpu_reduce3(NULL, NULL, NULL, 0, 7, 0) == MLSYS_ERR_ARG);
  CHECK(mlsys_coll_cpu_reduce3(NULL, NULL, NULL, 0, 0, 9) == MLSYS_ERR_ARG);
}

// host: the kernels' work split (scalar head, 16-byte vector body, scalar tail, grid-stride) run by a simulated grid
template <typename T, int OP> static void split_run(void *out, const void *a, const void *b, size_t n, size_t stride, int copy) {
  const void *ptr[3] = {out, a, b};
  size_t head, nvec;
  mlsys__coll_split(ptr, copy ? 2 : 3, sizeof(T), n, &head, &nvec);
  for (size_t tid = 0; tid < stride; tid++) {
    if (copy) mlsys__coll_copy_part<T>((T *)out, (const T *)a, n, head, nvec, tid, stride);
    else mlsys__coll_reduce_part<T, OP>((T *)out, (const T *)a, (const T *)b, n, head, nvec, tid, stride);
  }
}
template <typename T> static void split_run_op(int op, void *out, const void *a, const void *b, size_t n, size_t stride) {
  switch (op) {
    case MLSYS_COLL_SUM: split_run<T, MLSYS_COLL_SUM>(out, a, b, n, stride, 0); break;
    case MLSYS_COLL_PROD: split_run<T, MLSYS_COLL_PROD>(out, a, b, n, stride, 0); break;
    case MLSYS_COLL_MIN: split_run<T, MLSYS_COLL_MIN>(out, a, b, n, stride, 0); break;
    case MLSYS_COLL_MAX: split_run<T, MLSYS_COLL_MAX>(out, a, b, n, stride, 0); break;
    default: split_run<T, 0>(out, a, NULL, n, stride, 1); break;
  }
}
TEST(kernel_work_split_on_host) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 5);
  const size_t maxn = 1100;
  int cases = 0, vec = 0;
  for (int dt = 0; dt < 4; dt++) {
    size_t es = mlsys_coll_cuda_esize(dt);
    // 16-byte aligned host buffers, so the offsets below decide the alignment
    char *ha = (char *)aligned_alloc(16, maxn * es), *hb = (char *)aligned_alloc(16, maxn * es);
    char *hc = (char *)aligned_alloc(16, maxn * es), *ref = (char *)aligned_alloc(16, maxn * es);
    REQUIRE(ha && hb && hc && ref);
    fill(&r, ha, maxn, dt, 1);
    fill(&r, hb, maxn, dt, 1);
    for (size_t n = 1; n <= 1001; n += n < 40 ? 1 : 320)
      for (int off = 0; off < 5; off++)
        for (size_t stride = 1; stride <= 64; stride *= 4)
          for (int op = 0; op <= 4; op++) {
            size_t oo = off == 0 ? 0 : off == 1 ? 1 : off == 2 ? 3 : off == 3 ? 2 : 16 / es;
            size_t oa = off == 3 ? 1 : oo, ob = off == 3 ? 0 : oo;
            const void *ptr[3] = {hc + oo * es, ha + oa * es, hb + ob * es};
            size_t head, nvec;
            mlsys__coll_split(ptr, op == 4 ? 2 : 3, es, n, &head, &nvec);
            vec += nvec > 0;
            memset(hc, 0x77, maxn * es);
            memset(ref, 0x77, maxn * es);
            if (op == 4) mlsys_coll_cpu_copy(ref + oo * es, ha + oa * es, n, dt);
            else mlsys_coll_cpu_reduce3(ref + oo * es, ha + oa * es, hb + ob * es, n, dt, op);
            switch (dt) {
              case MLSYS_COLL_I32: split_run_op<int32_t>(op, hc + oo * es, ha + oa * es, hb + ob * es, n, stride); break;
              case MLSYS_COLL_I64: split_run_op<int64_t>(op, hc + oo * es, ha + oa * es, hb + ob * es, n, stride); break;
              case MLSYS_COLL_F32: split_run_op<float>(op, hc + oo * es, ha + oa * es, hb + ob * es, n, stride); break;
              default: split_run_op<double>(op, hc + oo * es, ha + oa * es, hb + ob * es, n, stride); break;
            }
            cases++;
            CHECK_MSG(!memcmp(hc, ref, maxn * es), "%s %s n=%zu offsets (%zu,%zu,%zu) stride %zu: split differs", dtype_name[dt],
                      op < 4 ? op_name[op] : "copy", n, oo, oa, ob, stride);
          }
    free(ha); free(hb); free(hc); free(ref);
  }
  CHECK(vec > cases / 3);   // the vector body is used where the alignment allows
}

// ---------------------------------------------------------------------------------------------------------------
// Test programs: algorithms built by hand, lowered with mlsys_coll_lower
// ---------------------------------------------------------------------------------------------------------------
// By hand: ring, ring with the C chunks of a step merged into one send, direct, ALLTOALL relayed through s+1;
// the library baselines: mlsys_coll_algo_ring (2 rings: identity and a shuffled one), mlsys_coll_algo_direct on a
// fully connected topology and on a bidirectional ring (multi-hop trees through scratch).
enum { ALG_RING, ALG_RING_MERGED, ALG_DIRECT, ALG_RELAY, ALG_LIB_RING, ALG_LIB_DIRECT_FULL, ALG_LIB_DIRECT_RING, ALG_COUNT };
static const char *alg_name[ALG_COUNT] = {"ring", "ring-merged", "direct", "relay", "algo_ring x2", "algo_direct full",
                                          "algo_direct ring"};

static void push(mlsys_coll_algo *a, int c, int s, int d, int op, int group, int step) {
  REQUIRE_OK(mlsys_coll_algo_push(a, c, s, d, op, group));
  a->x[a->nxfer - 1].t_send = step;
  a->x[a->nxfer - 1].t_arrive = step + 1;
}
// Allgather phase over a ring 0→1→…→N−1→0 (chunk c of owner o travels o, o+1, …) or direct (owner → everyone).
static void ag_part(mlsys_coll_algo *a, int N, int C, int alg, int step0) {
  int gid = 1000000 * (step0 + 1);
  if (alg == ALG_DIRECT) {
    for (int k = 1; k < N; k++)
      for (int o = 0; o < N; o++)
        for (int j = 0; j < C; j++) push(a, o * C + j, o, (o + k) % N, MLSYS_COLL_XF_COPY, -1, step0 + k - 1);
    return;
  }
  for (int k = 0; k < N - 1; k++)
    for (int o = 0; o < N; o++) {
      int g = alg == ALG_RING_MERGED ? gid++ : -1;
      for (int j = 0; j < C; j++) push(a, o * C + j, (o + k) % N, (o + k + 1) % N, MLSYS_COLL_XF_COPY, g, step0 + k);
    }
}
// Reduce-scatter phase: ring (the partial of chunk o starts at o+1 and ends at o) or direct (everyone → owner).
static void rs_part(mlsys_coll_algo *a, int N, int C, int alg) {
  int gid = 1;
  if (alg == ALG_DIRECT) {
    for (int k = 1; k < N; k++)
      for (int o = 0; o < N; o++)
        for (int j = 0; j < C; j++) push(a, o * C + j, (o + k) % N, o, MLSYS_COLL_XF_REDUCE, -1, k - 1);
    return;
  }
  for (int k = 0; k < N - 1; k++)
    for (int o = 0; o < N; o++) {
      int g = alg == ALG_RING_MERGED ? gid++ : -1;
      for (int j = 0; j < C; j++) push(a, o * C + j, (o + 1 + k) % N, (o + 2 + k) % N, MLSYS_COLL_XF_REDUCE, g, k);
    }
}
// Builds and lowers (kind, alg) for N ranks; returns 0 if the combination is not built (relay: ALLTOALL only).
static int make_program(int kind, int alg, int N, int C, int instances, mlsys_coll_def *d, mlsys_coll_prog *p) {
  mlsys_coll_algo a;
  if (alg == ALG_RELAY && kind != MLSYS_COLL_ALLTOALL) return 0;
  if (kind == MLSYS_COLL_ALLTOALL && (alg == ALG_RING || alg == ALG_RING_MERGED || alg == ALG_LIB_RING)) return 0;
  if (alg >= ALG_LIB_RING) {
    mlsys_status st;
    if (alg == ALG_LIB_RING) {
      int *ring = (int *)malloc(2 * (size_t)N * sizeof(int));
      mlsys_rng r;
      mlsys_rng_seed(&r, (uint64_t)N);
      for (int i = 0; i < N; i++) ring[i] = ring[N + i] = i;
      for (int i = N - 1; i > 0; i--) {   // Fisher-Yates on the second ring
        int j = (int)mlsys_rng_below(&r, (uint64_t)i + 1), t = ring[N + i];
        ring[N + i] = ring[N + j]; ring[N + j] = t;
      }
      st = mlsys_coll_algo_ring(kind, N, ring, 2, C, 65536.0, &a);
      free(ring);
    } else {
      mlsys_coll_topo t;
      mlsys_coll_cost c = {1.0, 10.0};
      st = alg == ALG_LIB_DIRECT_FULL ? mlsys_coll_topo_full(N, 0, c, &t) : mlsys_coll_topo_ring(N, 1, c, &t);
      CHECK_OK(st);
      if (st) return 0;
      st = mlsys_coll_algo_direct(kind, &t, C, 65536.0, &a);
      mlsys_coll_topo_free(&t);
    }
    CHECK_MSG(st == MLSYS_OK, "%s %s N=%d: %s", alg_name[alg], mlsys_coll_kind_name(kind), N, mlsys_last_error());
    if (st) return 0;
    REQUIRE_OK(mlsys_coll_def_make(kind, N, a.chunkup, d));
    st = mlsys_coll_lower(d, &a, instances, p);
    mlsys_coll_algo_free(&a);
    CHECK_MSG(st == MLSYS_OK, "lowering %s %s N=%d: %s", alg_name[alg], mlsys_coll_kind_name(kind), N, mlsys_last_error());
    if (st) { mlsys_coll_def_free(d); return 0; }
    return 1;
  }
  REQUIRE_OK(mlsys_coll_def_make(kind, N, C, d));
  REQUIRE_OK(mlsys_coll_algo_init(&a, kind, N, C, 1024.0));
  switch (kind) {
    case MLSYS_COLL_ALLGATHER: ag_part(&a, N, C, alg, 0); break;
    case MLSYS_COLL_REDUCESCATTER: rs_part(&a, N, C, alg); break;
    case MLSYS_COLL_ALLREDUCE: rs_part(&a, N, C, alg); ag_part(&a, N, C, alg, N); break;
    default:   // ALLTOALL: chunk (s·N + d)·C + j; relay: through s+1 unless that is the destination
      for (int s = 0; s < N; s++)
        for (int dd = 0; dd < N; dd++)
          for (int j = 0; j < C; j++) {
            int c = (s * N + dd) * C + j, m = (s + 1) % N;
            if (dd == s) continue;
            if (alg == ALG_RELAY && dd != m) {
              push(&a, c, s, m, MLSYS_COLL_XF_COPY, -1, 0);
            } else push(&a, c, s, dd, MLSYS_COLL_XF_COPY, -1, 0);
          }
      if (alg == ALG_RELAY)
        for (int s = 0; s < N; s++)
          for (int dd = 0; dd < N; dd++)
            for (int j = 0; j < C; j++) {
              int m = (s + 1) % N;
              if (dd != s && dd != m) push(&a, (s * N + dd) * C + j, m, dd, MLSYS_COLL_XF_COPY, -1, 1);
            }
      break;
  }
  mlsys_status st = mlsys_coll_lower(d, &a, instances, p);
  mlsys_coll_algo_free(&a);
  CHECK_OK(st);
  if (st) { mlsys_coll_def_free(d); return 0; }
  return 1;
}

// Host buffers of every rank for one program; E = elements of one program slot (chunk_elems / instances).
typedef struct {
  int N;
  size_t es, E;
  void **in, **out;
} bufs;
static void bufs_make(bufs *B, const mlsys_coll_prog *p, int dtype, size_t E, mlsys_rng *r) {
  B->N = p->ngpus; B->es = mlsys_coll_cuda_esize(dtype); B->E = E;
  B->in = (void **)calloc((size_t)B->N, sizeof(void *));
  B->out = (void **)calloc((size_t)B->N, sizeof(void *));
  for (int g = 0; g < B->N; g++) {
    size_t ni = (size_t)p->gpus[g].i_chunks * E, no = (size_t)p->gpus[g].o_chunks * E;
    B->in[g] = malloc(ni * B->es + 1);
    B->out[g] = malloc(no * B->es + 1);
    if (r) fill(r, B->in[g], ni, dtype, 0);
    memset(B->out[g], 0x5a, no * B->es);
  }
}
static void bufs_free(bufs *B) {
  for (int g = 0; g < B->N; g++) { free(B->in[g]); free(B->out[g]); }
  free(B->in); free(B->out);
}
static int bufs_same(const bufs *x, const bufs *y, const mlsys_coll_prog *p) {
  for (int g = 0; g < x->N; g++)
    if (memcmp(x->out[g], y->out[g], (size_t)p->gpus[g].o_chunks * x->E * x->es)) return 0;
  return 1;
}

// The plan executed on the host: every communication phase "concurrently" (all sources copied out first, then
// all destinations written: what one NCCL group may do), kernels in order.
static mlsys_status run_plan_host(const mlsys__cx_plan *pl, int dtype, int redop, const bufs *B) {
  size_t sb = B->E * B->es;
  char **base = (char **)calloc((size_t)pl->ngpus * MLSYS__CX_NBUF, sizeof(char *));
  char **tmp = (char **)calloc((size_t)pl->nops + 1, sizeof(char *));
  for (int g = 0; g < pl->ngpus; g++) {
    base[g * MLSYS__CX_NBUF + 0] = (char *)B->in[g];
    base[g * MLSYS__CX_NBUF + 1] = (char *)B->out[g];
    base[g * MLSYS__CX_NBUF + 2] = (char *)malloc((size_t)pl->nslots[g * MLSYS__CX_NBUF + 2] * sb + 1);
    base[g * MLSYS__CX_NBUF + 3] = (char *)malloc((size_t)pl->nslots[g * MLSYS__CX_NBUF + 3] * sb + 1);
  }
#define AT(rank, buf, off) (base[(rank) * MLSYS__CX_NBUF + (buf)] + (size_t)(off) * sb)
  for (int i = 0; i < pl->nops;) {
    int j = i;
    while (j < pl->nops && pl->ops[j].phase == pl->ops[i].phase) j++;
    if (!(pl->ops[i].phase & 1)) {
      for (int k = i; k < j; k++) {
        const mlsys__cx_op *o = &pl->ops[k];
        tmp[k] = (char *)malloc((size_t)o->cnt * sb);
        memcpy(tmp[k], AT(o->rank, o->abuf, o->aoff), (size_t)o->cnt * sb);
      }
      for (int k = i; k < j; k++) {
        const mlsys__cx_op *o = &pl->ops[k];
        memcpy(AT(o->peer, o->dbuf, o->doff), tmp[k], (size_t)o->cnt * sb);
        free(tmp[k]);
      }
    } else {
      for (int k = i; k < j; k++) {
        const mlsys__cx_op *o = &pl->ops[k];
        size_t n = (size_t)o->cnt * B->E;
        if (o->kind == MLSYS__CX_COPY) memmove(AT(o->rank, o->dbuf, o->doff), AT(o->rank, o->abuf, o->aoff), n * B->es);
        else mlsys_coll_cpu_reduce3(AT(o->rank, o->dbuf, o->doff), AT(o->rank, o->abuf, o->aoff), AT(o->rank, o->bbuf, o->boff), n, dtype, redop);
      }
    }
    i = j;
  }
#undef AT
  for (int g = 0; g < pl->ngpus; g++) { free(base[g * MLSYS__CX_NBUF + 2]); free(base[g * MLSYS__CX_NBUF + 3]); }
  free(base); free(tmp);
  return MLSYS_OK;
}
// No slot is written by two operations of one communication phase, nor read and written in it.
static int phases_race_free(const mlsys__cx_plan *pl) {
  for (int i = 0; i < pl->nops;) {
    int j = i;
    while (j < pl->nops && pl->ops[j].phase == pl->ops[i].phase) j++;
    if (!(pl->ops[i].phase & 1))
      for (int x = i; x < j; x++)
        for (int y = i; y < j; y++) {
          const mlsys__cx_op *a = &pl->ops[x], *b = &pl->ops[y];
          if (x != y && a->peer == b->peer && a->dbuf == b->dbuf && a->doff < b->doff + b->cnt && b->doff < a->doff + a->cnt) return 0;
          if (a->peer == b->rank && a->dbuf == b->abuf && a->doff < b->aoff + b->cnt && b->aoff < a->doff + a->cnt) return 0;
        }
    i = j;
  }
  return 1;
}

static const int dtypes_ops[][2] = {{MLSYS_COLL_I32, MLSYS_COLL_SUM}, {MLSYS_COLL_I64, MLSYS_COLL_PROD},
                                    {MLSYS_COLL_I32, MLSYS_COLL_MIN}, {MLSYS_COLL_I64, MLSYS_COLL_MAX},
                                    {MLSYS_COLL_F32, MLSYS_COLL_SUM}, {MLSYS_COLL_F64, MLSYS_COLL_MAX}};

// Runs the check `fn` on every test program; prints one line per (N, kind) with the plan's size.
typedef void (*prog_check)(const mlsys_coll_def *d, const mlsys_coll_prog *p, int alg, int instances, mlsys_rng *r);
static void for_each_program(prog_check fn, int full) {
  const int Ns[3] = {8, 16, 32};
  mlsys_rng r;
  mlsys_rng_seed(&r, 7);
  for (int ni = 0; ni < 3; ni++)
    for (int kind = 0; kind < 4; kind++) {
      int progs = 0, rounds = 0, kern = 0, snaps = 0;
      for (int alg = 0; alg < ALG_COUNT; alg++)
        for (int inst = 1; inst <= 2; inst++) {
          int C = alg == ALG_RING_MERGED ? 2 : 1;
          mlsys_coll_def d;
          mlsys_coll_prog p;
          if (!full && (Ns[ni] == 32 || inst == 2) && alg != ALG_RING) continue;
          if (!make_program(kind, alg, Ns[ni], C, inst, &d, &p)) continue;
          mlsys__cx_plan pl;
          if (mlsys__cx_plan_build(&p, &pl) == MLSYS_OK) {
            rounds += pl.ncomm; kern += pl.nkern; snaps += pl.nsnap; progs++;
            mlsys__cx_plan_free(&pl);
          }
          fn(&d, &p, alg, inst, &r);
          mlsys_coll_prog_free(&p);
          mlsys_coll_def_free(&d);
        }
      printf("    N=%2d %-14s %2d programs: %4d communication rounds, %4d kernel phases, %d snapshots\n", Ns[ni],
             mlsys_coll_kind_name(kind), progs, rounds, kern, snaps);
    }
}

// E elements per program slot: chunk_elems = E·instances for the executors and mlsys_coll_reference.
static void check_plan_host(const mlsys_coll_def *d, const mlsys_coll_prog *p, int alg, int inst, mlsys_rng *r) {
  mlsys__cx_plan pl;
  const size_t E = 3;
  mlsys_status st = mlsys__cx_plan_build(p, &pl);
  CHECK_MSG(st == MLSYS_OK, "%s %s N=%d: %s", mlsys_coll_kind_name(d->kind), alg_name[alg], d->nranks, mlsys_last_error());
  if (st) return;
  CHECK_MSG(phases_race_free(&pl), "%s %s N=%d instances %d: a communication phase reads and writes one slot",
            mlsys_coll_kind_name(d->kind), alg_name[alg], d->nranks, inst);
  for (size_t q = 0; q < sizeof dtypes_ops / sizeof dtypes_ops[0]; q++) {
    int dt = dtypes_ops[q][0], op = dtypes_ops[q][1];
    bufs A, B;
    bufs_make(&A, p, dt, E, r);
    bufs_make(&B, p, dt, E, NULL);
    for (int g = 0; g < A.N; g++) memcpy(B.in[g], A.in[g], (size_t)p->gpus[g].i_chunks * E * A.es);
    CHECK_OK(mlsys_coll_exec_cpu(p, dt, op, A.in, A.out, E * (size_t)p->instances, 11));
    run_plan_host(&pl, dt, op, &B);
    CHECK_MSG(bufs_same(&A, &B, p), "%s %s N=%d instances %d %s %s: plan on the host differs from mlsys_coll_exec_cpu",
              mlsys_coll_kind_name(d->kind), alg_name[alg], d->nranks, inst, dtype_name[dt], op_name[op]);
    if (dt == MLSYS_COLL_I32 || dt == MLSYS_COLL_I64) {   // and the plan computes the collective
      bufs R;
      bufs_make(&R, p, dt, E, NULL);
      for (int g = 0; g < A.N; g++) memcpy(R.in[g], A.in[g], (size_t)p->gpus[g].i_chunks * E * A.es);
      CHECK_OK(mlsys_coll_reference(d->kind, d->nranks, d->chunkup, dt, op, R.in, R.out, E * (size_t)inst));
      CHECK_MSG(bufs_same(&R, &B, p), "%s %s N=%d instances %d %s %s: plan on the host differs from mlsys_coll_reference",
                mlsys_coll_kind_name(d->kind), alg_name[alg], d->nranks, inst, dtype_name[dt], op_name[op]);
      bufs_free(&R);
    }
    bufs_free(&A); bufs_free(&B);
  }
  mlsys__cx_plan_free(&pl);
}
TEST(plan_on_host_equals_exec_cpu) { for_each_program(check_plan_host, 1); }

// ---------------------------------------------------------------------------------------------------------------
// Hand-written programs for the corners the lowering does not produce
// ---------------------------------------------------------------------------------------------------------------
static void prog_new(mlsys_coll_prog *p, int ngpus, int ni, int no, int ns) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "hand");
  snprintf(p->proto, sizeof p->proto, "Simple");
  p->kind = MLSYS_COLL_ALLGATHER; p->ngpus = ngpus; p->nchannels = 1; p->instances = 1; p->outofplace = 1;
  p->gpus = (mlsys_coll_gpu *)mlsys_calloc((size_t)ngpus, sizeof(mlsys_coll_gpu));
  for (int g = 0; g < ngpus; g++) {
    p->gpus[g].id = g; p->gpus[g].i_chunks = ni; p->gpus[g].o_chunks = no; p->gpus[g].s_chunks = ns;
    p->gpus[g].tbs = (mlsys_coll_tb *)mlsys_calloc(8, sizeof(mlsys_coll_tb));
  }
}
static int tb_add(mlsys_coll_prog *p, int g, int send, int recv) {
  mlsys_coll_gpu *gp = &p->gpus[g];
  mlsys_coll_tb *tb = &gp->tbs[gp->ntbs];
  tb->id = gp->ntbs; tb->send = send; tb->recv = recv; tb->chan = 0;
  tb->steps = (mlsys_coll_step *)mlsys_calloc(16, sizeof(mlsys_coll_step));
  return gp->ntbs++;
}
static void step_add(mlsys_coll_prog *p, int g, int t, int op, int sb, int so, int db, int dof, int cnt, int depid, int deps) {
  mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
  mlsys_coll_step *sp = &tb->steps[tb->nsteps++];
  sp->op = (unsigned char)op; sp->srcbuf = (unsigned char)sb; sp->srcoff = so; sp->dstbuf = (unsigned char)db;
  sp->dstoff = dof; sp->cnt = cnt; sp->depid = depid; sp->deps = deps;
  if (depid >= 0) p->gpus[g].tbs[depid].steps[deps].hasdep = 1;
}
enum { I_ = MLSYS_COLL_BUF_IN, O_ = MLSYS_COLL_BUF_OUT, S_ = MLSYS_COLL_BUF_SCRATCH };
enum { SP_SNAP_COPY, SP_SNAP_RECV, SP_OVERLAP, SP_DEADLOCK, SP_MISMATCH, SP_COUNT };
static const char *sp_name[SP_COUNT] = {"sent data overwritten by a copy", "sent data overwritten by a receive",
                                        "overlapping copies and reduce", "deadlock", "count mismatch"};
static void special_program(int which, mlsys_coll_prog *p) {
  int t0, t1;
  switch (which) {
    case SP_SNAP_COPY:   // gpu 0 sends i[0], then overwrites it before gpu 1 (held by a dependency) receives it
      prog_new(p, 2, 2, 2, 1);
      t0 = tb_add(p, 0, 1, -1); step_add(p, 0, t0, MLSYS_COLL_OP_SEND, I_, 0, O_, 0, 1, -1, -1);
      t1 = tb_add(p, 0, -1, -1); step_add(p, 0, t1, MLSYS_COLL_OP_COPY, I_, 1, I_, 0, 1, t0, 0);
      step_add(p, 0, t1, MLSYS_COLL_OP_COPY, I_, 0, O_, 0, 2, -1, -1);
      t0 = tb_add(p, 1, -1, -1); step_add(p, 1, t0, MLSYS_COLL_OP_COPY, I_, 0, S_, 0, 1, -1, -1);
      step_add(p, 1, t0, MLSYS_COLL_OP_COPY, S_, 0, O_, 1, 1, -1, -1);
      t1 = tb_add(p, 1, -1, 0); step_add(p, 1, t1, MLSYS_COLL_OP_RECV, I_, 0, O_, 0, 1, t0, 1);
      break;
    case SP_SNAP_RECV:   // gpu 0 sends i[0] and receives into i[0] before gpu 1 takes the first message (gpu 1
                         // waits for a message on channel 1 that gpu 0 sends only after its receive)
      prog_new(p, 2, 2, 2, 0);
      p->nchannels = 2;
      t0 = tb_add(p, 0, 1, 1); step_add(p, 0, t0, MLSYS_COLL_OP_SEND, I_, 0, O_, 0, 1, -1, -1);
      step_add(p, 0, t0, MLSYS_COLL_OP_RECV, I_, 0, I_, 0, 1, -1, -1);
      t1 = tb_add(p, 0, -1, -1); step_add(p, 0, t1, MLSYS_COLL_OP_COPY, I_, 0, O_, 0, 2, t0, 1);
      t1 = tb_add(p, 0, 1, -1); p->gpus[0].tbs[t1].chan = 1; step_add(p, 0, t1, MLSYS_COLL_OP_SEND, I_, 1, O_, 0, 1, t0, 1);
      t0 = tb_add(p, 1, 0, -1); step_add(p, 1, t0, MLSYS_COLL_OP_SEND, I_, 1, O_, 0, 1, -1, -1);
      t0 = tb_add(p, 1, -1, 0); p->gpus[1].tbs[t0].chan = 1; step_add(p, 1, t0, MLSYS_COLL_OP_RECV, I_, 0, O_, 1, 1, -1, -1);
      t1 = tb_add(p, 1, -1, 0); step_add(p, 1, t1, MLSYS_COLL_OP_RECV, I_, 0, O_, 0, 1, t0, 0);
      t0 = tb_add(p, 1, -1, -1); step_add(p, 1, t0, MLSYS_COLL_OP_NOP, I_, -1, O_, -1, 0, t1, 0);
      step_add(p, 1, t0, MLSYS_COLL_OP_REDUCE, I_, 0, O_, 0, 2, -1, -1);
      break;
    case SP_OVERLAP:     // memmove-like copies up and down one buffer, and a reduce from a later part of it
      prog_new(p, 1, 4, 5, 0);
      t0 = tb_add(p, 0, -1, -1);
      step_add(p, 0, t0, MLSYS_COLL_OP_COPY, I_, 0, O_, 0, 4, -1, -1);
      step_add(p, 0, t0, MLSYS_COLL_OP_COPY, O_, 0, O_, 1, 3, -1, -1);
      step_add(p, 0, t0, MLSYS_COLL_OP_COPY, O_, 2, O_, 1, 3, -1, -1);
      step_add(p, 0, t0, MLSYS_COLL_OP_REDUCE, O_, 1, O_, 0, 3, -1, -1);
      break;
    case SP_DEADLOCK:    // both wait for a message first
      prog_new(p, 2, 1, 1, 0);
      for (int g = 0; g < 2; g++) {
        t0 = tb_add(p, g, 1 - g, 1 - g);
        step_add(p, g, t0, MLSYS_COLL_OP_RECV, I_, 0, O_, 0, 1, -1, -1);
        step_add(p, g, t0, MLSYS_COLL_OP_SEND, I_, 0, O_, 0, 1, -1, -1);
      }
      break;
    default:             // 2 slots sent, 1 received
      prog_new(p, 2, 2, 2, 0);
      t0 = tb_add(p, 0, 1, -1); step_add(p, 0, t0, MLSYS_COLL_OP_SEND, I_, 0, O_, 0, 2, -1, -1);
      t0 = tb_add(p, 1, -1, 0); step_add(p, 1, t0, MLSYS_COLL_OP_RECV, I_, 0, O_, 0, 1, -1, -1);
      break;
  }
}

TEST(special_programs_on_host) {
  mlsys_rng r;
  mlsys_rng_seed(&r, 3);
  int snaps = 0;
  for (int w = 0; w < SP_COUNT; w++) {
    mlsys_coll_prog p;
    mlsys__cx_plan pl;
    special_program(w, &p);
    mlsys_status se = mlsys__cx_plan_build(&p, &pl);
    bufs A, B;
    bufs_make(&A, &p, MLSYS_COLL_I64, 5, &r);
    bufs_make(&B, &p, MLSYS_COLL_I64, 5, NULL);
    for (int g = 0; g < A.N; g++) memcpy(B.in[g], A.in[g], (size_t)p.gpus[g].i_chunks * 5 * A.es);
    mlsys_status sc = mlsys_coll_exec_cpu(&p, MLSYS_COLL_I64, MLSYS_COLL_SUM, A.in, A.out, 5, 3);
    CHECK_MSG(se == sc, "%s: plan status %d, exec_cpu status %d (%s)", sp_name[w], (int)se, (int)sc, mlsys_last_error());
    if (w >= SP_DEADLOCK) CHECK_MSG(se == MLSYS_ERR_INFEASIBLE, "%s: status %d", sp_name[w], (int)se);
    if (se == MLSYS_OK) {
      snaps += pl.nsnap;
      CHECK(phases_race_free(&pl));
      run_plan_host(&pl, MLSYS_COLL_I64, MLSYS_COLL_SUM, &B);
      CHECK_MSG(bufs_same(&A, &B, &p), "%s: plan on the host differs from mlsys_coll_exec_cpu", sp_name[w]);
      mlsys__cx_plan_free(&pl);
    }
    bufs_free(&A); bufs_free(&B);
    mlsys_coll_prog_free(&p);
  }
  CHECK(snaps >= 1);   // at least the send overwritten by a receive must be snapshot (else the NCCL group races)
}

// The checks above can fail: the ring ALLREDUCE's plan with every transfer squeezed into one phase (and every
// kernel into the next) must be caught, as a race or as a wrong result.
TEST(plan_checks_catch_a_squeezed_plan) {
  mlsys_coll_def d;
  mlsys_coll_prog p;
  mlsys__cx_plan pl;
  mlsys_rng r;
  mlsys_rng_seed(&r, 9);
  REQUIRE(make_program(MLSYS_COLL_ALLREDUCE, ALG_RING, 8, 1, 1, &d, &p));
  REQUIRE_OK(mlsys__cx_plan_build(&p, &pl));
  for (int i = 0; i < pl.nops; i++) pl.ops[i].phase = pl.ops[i].kind == MLSYS__CX_XFER ? 0 : 1;
  qsort(pl.ops, (size_t)pl.nops, sizeof *pl.ops, mlsys__cx_cmp);
  bufs A, B;
  bufs_make(&A, &p, MLSYS_COLL_I32, 4, &r);
  bufs_make(&B, &p, MLSYS_COLL_I32, 4, NULL);
  for (int g = 0; g < A.N; g++) memcpy(B.in[g], A.in[g], (size_t)p.gpus[g].i_chunks * 4 * A.es);
  CHECK_OK(mlsys_coll_exec_cpu(&p, MLSYS_COLL_I32, MLSYS_COLL_SUM, A.in, A.out, 4, 1));
  run_plan_host(&pl, MLSYS_COLL_I32, MLSYS_COLL_SUM, &B);
  CHECK(!phases_race_free(&pl));
  CHECK(!bufs_same(&A, &B, &p));
  bufs_free(&A); bufs_free(&B);
  mlsys__cx_plan_free(&pl);
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
}

// Bit for bit, except that any NaN equals any NaN: an invalid operation (inf - inf, 0 * inf) gives the GPU's
// canonical +NaN but x86's negative default NaN, and NaN + x keeps the operand's payload on x86. Only the bits of a
// NaN may differ; everything else, and where NaNs appear, must be identical.
static int same_elems(const void *x, const void *y, size_t n, int dtype) {
  size_t es = mlsys_coll_cuda_esize(dtype);
  for (size_t i = 0; i < n; i++) {
    const char *a = (const char *)x + i * es, *b = (const char *)y + i * es;
    if (!memcmp(a, b, es)) continue;
    if (dtype == MLSYS_COLL_F32) { float u, v; memcpy(&u, a, 4); memcpy(&v, b, 4); if (u != u && v != v) continue; }
    if (dtype == MLSYS_COLL_F64) { double u, v; memcpy(&u, a, 8); memcpy(&v, b, 8); if (u != u && v != v) continue; }
    return 0;
  }
  return 1;
}

TEST(same_elems_forgives_only_nan_bits) {   // host: the comparison the kernel test relies on
  const uint32_t gpu_nan = 0x7fffffffu, x86_nan = 0xffc00000u, one = 0x3f800000u, minus_zero = 0x80000000u;
  uint32_t a[3] = {one, gpu_nan, minus_zero}, b[3] = {one, x86_nan, minus_zero};
  CHECK(same_elems(a, b, 3, MLSYS_COLL_F32));
  b[2] = 0;   // +0 against -0: equal as numbers, different bits: a difference
  CHECK(!same_elems(a, b, 3, MLSYS_COLL_F32));
  b[2] = minus_zero; b[1] = one;   // NaN against a number
  CHECK(!same_elems(a, b, 3, MLSYS_COLL_F32));
  CHECK(!same_elems(a, b, 3, MLSYS_COLL_I32));   // integers: bits only
  const uint64_t dn1 = 0x7ff8000000000001ull, dn2 = 0xfff8000000000000ull, d1 = 0x3ff0000000000000ull;
  uint64_t c[2] = {dn1, d1}, e[2] = {dn2, d1};
  CHECK(same_elems(c, e, 2, MLSYS_COLL_F64));
  CHECK(!same_elems(c, e, 2, MLSYS_COLL_I64));
  {   // and the CPU reference really produces x86's NaN where the GPU gives its own
    float x = INFINITY, y = -INFINITY, z;
    CHECK_OK(mlsys_coll_cpu_reduce3(&z, &x, &y, 1, MLSYS_COLL_F32, MLSYS_COLL_SUM));
    CHECK(z != z);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// (a) kernels against the CPU references
// ---------------------------------------------------------------------------------------------------------------
TEST(kernels_match_cpu_references) {
  NEED_DEVICE();
  const size_t sizes[] = {1, 2, 3, 7, 17, 255, 4097, 100003, 1000001};
  mlsys_rng r;
  mlsys_rng_seed(&r, 2);
  const size_t maxn = 1000001 + 8;
  int cases = 0, bad = 0;
  for (int dt = 0; dt < 4; dt++) {
    size_t es = mlsys_coll_cuda_esize(dt);
    char *ha = (char *)malloc(maxn * es), *hb = (char *)malloc(maxn * es), *hc = (char *)malloc(maxn * es);
    char *ref = (char *)malloc(maxn * es), *got = (char *)malloc(maxn * es);
    char *da, *db, *dc;
    REQUIRE(ha && hb && hc && ref && got);
    CUDA_OK(cudaMalloc((void **)&da, maxn * es));
    CUDA_OK(cudaMalloc((void **)&db, maxn * es));
    CUDA_OK(cudaMalloc((void **)&dc, maxn * es));
    fill(&r, ha, maxn, dt, 1);
    fill(&r, hb, maxn, dt, 1);
    fill(&r, hc, maxn, dt, 1);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int off = 0; off < 4; off++) {
        size_t n = sizes[si], nn = n + 8;   // the buffers compared: the range and a margin after it
        // offsets (elements) of out, a, b: aligned, all equally misaligned, all different
        size_t oo = off == 0 ? 0 : off == 1 ? 1 : off == 2 ? 3 : 2, oa = off == 3 ? 1 : oo, ob = off == 3 ? 0 : oo;
        for (int op = 0; op <= 4; op++) {   // op 4 = copy
          CUDA_OK(cudaMemcpy(da, ha, nn * es, cudaMemcpyHostToDevice));
          CUDA_OK(cudaMemcpy(db, hb, nn * es, cudaMemcpyHostToDevice));
          CUDA_OK(cudaMemcpy(dc, hc, nn * es, cudaMemcpyHostToDevice));
          memcpy(ref, hc, nn * es);
          if (op == 4) {
            CHECK_OK(mlsys_coll_cuda_copy(dc + oo * es, da + oa * es, n, dt, 0));
            mlsys_coll_cpu_copy(ref + oo * es, ha + oa * es, n, dt);
          } else {
            CHECK_OK(mlsys_coll_cuda_reduce3(dc + oo * es, da + oa * es, db + ob * es, n, dt, op, 0));
            mlsys_coll_cpu_reduce3(ref + oo * es, ha + oa * es, hb + ob * es, n, dt, op);
          }
          CUDA_OK(cudaMemcpy(got, dc, nn * es, cudaMemcpyDeviceToHost));
          cases++;
          if (!same_elems(got, ref, nn, dt)) {   // nothing outside [oo, oo+n) may change either
            bad++;
            CHECK_MSG(0, "%s %s n=%zu offsets (%zu,%zu,%zu): GPU differs from the CPU reference", dtype_name[dt],
                      op < 4 ? op_name[op] : "copy", n, oo, oa, ob);
          }
        }
        // in place: dst = op(dst, src) with dst = a
        for (int op = 0; op < 4; op++) {
          CUDA_OK(cudaMemcpy(da, ha, nn * es, cudaMemcpyHostToDevice));
          CUDA_OK(cudaMemcpy(db, hb, nn * es, cudaMemcpyHostToDevice));
          memcpy(ref, ha, nn * es);
          CHECK_OK(mlsys_coll_cuda_reduce(da + oa * es, db + ob * es, n, dt, op, 0));
          mlsys_coll_cpu_reduce(ref + oa * es, hb + ob * es, n, dt, op);
          CUDA_OK(cudaMemcpy(got, da, nn * es, cudaMemcpyDeviceToHost));
          cases++;
          if (!same_elems(got, ref, nn, dt)) {
            bad++;
            CHECK_MSG(0, "%s %s in place n=%zu: GPU differs from the CPU reference", dtype_name[dt], op_name[op], n);
          }
        }
      }
    cudaFree(da); cudaFree(db); cudaFree(dc);
    free(ha); free(hb); free(hc); free(ref); free(got);
  }
  printf("    %d kernel cases (4 types x 4 ops + copy, 9 sizes, 4 alignments), %d differ\n", cases, bad);
  CHECK(mlsys_coll_cuda_reduce3(NULL, NULL, NULL, 1, 9, 0, 0) == MLSYS_ERR_ARG);
}

// ---------------------------------------------------------------------------------------------------------------
// (b) the emulated executor against mlsys_coll_exec_cpu and mlsys_coll_reference
// ---------------------------------------------------------------------------------------------------------------
static void check_emul(const mlsys_coll_def *d, const mlsys_coll_prog *p, int alg, int inst, mlsys_rng *r) {
  const size_t E = 37;   // odd: slots start at misaligned addresses
  int N = p->ngpus;
  for (size_t q = 0; q < sizeof dtypes_ops / sizeof dtypes_ops[0]; q++) {
    int dt = dtypes_ops[q][0], op = dtypes_ops[q][1];
    bufs A, B, R;
    bufs_make(&A, p, dt, E, r);
    bufs_make(&B, p, dt, E, NULL);
    bufs_make(&R, p, dt, E, NULL);
    void **din = (void **)calloc((size_t)N, sizeof(void *)), **dout = (void **)calloc((size_t)N, sizeof(void *));
    for (int g = 0; g < N; g++) {
      size_t ni = (size_t)p->gpus[g].i_chunks * E * A.es, no = (size_t)p->gpus[g].o_chunks * E * A.es;
      CUDA_OK(cudaMalloc(&din[g], ni + 1));
      CUDA_OK(cudaMalloc(&dout[g], no + 1));
      CUDA_OK(cudaMemcpy(din[g], A.in[g], ni, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(dout[g], 0x5a, no));
      memcpy(R.in[g], A.in[g], ni);
    }
    CHECK_OK(mlsys_coll_exec_cpu(p, dt, op, A.in, A.out, E * (size_t)inst, 5));
    CHECK_OK(mlsys_coll_exec_emul_cuda(p, dt, op, din, dout, E * (size_t)inst, 0));
    CUDA_OK(cudaDeviceSynchronize());
    for (int g = 0; g < N; g++)
      CUDA_OK(cudaMemcpy(B.out[g], dout[g], (size_t)p->gpus[g].o_chunks * E * A.es, cudaMemcpyDeviceToHost));
    CHECK_MSG(bufs_same(&A, &B, p), "%s %s N=%d instances %d %s %s: emulated executor differs from mlsys_coll_exec_cpu",
              mlsys_coll_kind_name(d->kind), alg_name[alg], N, inst, dtype_name[dt], op_name[op]);
    if (dt == MLSYS_COLL_I32 || dt == MLSYS_COLL_I64) {   // exact for integers: wrapping ⊕ is associative
      CHECK_OK(mlsys_coll_reference(d->kind, N, d->chunkup, dt, op, R.in, R.out, E * (size_t)inst));
      CHECK_MSG(bufs_same(&R, &B, p), "%s %s N=%d instances %d %s %s: emulated executor differs from mlsys_coll_reference",
                mlsys_coll_kind_name(d->kind), alg_name[alg], N, inst, dtype_name[dt], op_name[op]);
    }
    for (int g = 0; g < N; g++) { cudaFree(din[g]); cudaFree(dout[g]); }
    free(din); free(dout);
    bufs_free(&A); bufs_free(&B); bufs_free(&R);
  }
}
TEST(emulated_executor_equals_exec_cpu) {
  NEED_DEVICE();
  for_each_program(check_emul, 1);
}

// ---------------------------------------------------------------------------------------------------------------
// (d) NCCL with one rank
// ---------------------------------------------------------------------------------------------------------------
// A 1-GPU program with local steps only: cpy i[0..2)→s[0..2); re s[0] ⊕= i[2]; cpy s[0..2)→o[1..3) (tb 0);
// tb 1 waits for tb 0's last step, then cpy i[2]→o[0] and re o[1] ⊕= i[1].
static void local_program(mlsys_coll_prog *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "local");
  snprintf(p->proto, sizeof p->proto, "Simple");
  p->kind = MLSYS_COLL_ALLREDUCE; p->ngpus = 1; p->nchannels = 1; p->instances = 1; p->outofplace = 1;
  p->gpus = (mlsys_coll_gpu *)mlsys_calloc(1, sizeof(mlsys_coll_gpu));
  mlsys_coll_gpu *g = p->gpus;
  g->i_chunks = 3; g->o_chunks = 3; g->s_chunks = 2; g->ntbs = 2;
  g->tbs = (mlsys_coll_tb *)mlsys_calloc(2, sizeof(mlsys_coll_tb));
  const mlsys_coll_step s0[3] = {{MLSYS_COLL_OP_COPY, 0, 2, 0, 0, 0, 2, -1, -1},
                                 {MLSYS_COLL_OP_REDUCE, 0, 2, 0, 2, 0, 1, -1, -1},
                                 {MLSYS_COLL_OP_COPY, 2, 1, 1, 0, 1, 2, -1, -1}};
  const mlsys_coll_step s1[2] = {{MLSYS_COLL_OP_COPY, 0, 1, 0, 2, 0, 1, 0, 2},
                                 {MLSYS_COLL_OP_REDUCE, 0, 1, 0, 1, 1, 1, -1, -1}};
  for (int t = 0; t < 2; t++) {
    g->tbs[t].id = t; g->tbs[t].send = g->tbs[t].recv = -1; g->tbs[t].chan = 0; g->tbs[t].nsteps = t ? 2 : 3;
    g->tbs[t].steps = (mlsys_coll_step *)mlsys_calloc(3, sizeof(mlsys_coll_step));
    memcpy(g->tbs[t].steps, t ? s1 : s0, (t ? 2 : 3) * sizeof(mlsys_coll_step));
  }
}
// which = 0: local_program; 1: a lowered 1-rank ALLGATHER with chunkup 3 (input → output copies only).
static void one_rank_program(int which, mlsys_coll_prog *p, mlsys_coll_def *d) {
  memset(d, 0, sizeof *d);
  if (which == 0) { local_program(p); return; }
  mlsys_coll_algo a;
  REQUIRE_OK(mlsys_coll_def_make(MLSYS_COLL_ALLGATHER, 1, 3, d));
  REQUIRE_OK(mlsys_coll_algo_init(&a, MLSYS_COLL_ALLGATHER, 1, 3, 4096.0));
  REQUIRE_OK(mlsys_coll_lower(d, &a, 1, p));
  mlsys_coll_algo_free(&a);
}
// o = [i2, i0 + i2 + i1, i1] for local_program (int32 sum), o = i for the 1-rank ALLGATHER.
static int one_rank_expected(int which, const bufs *A, const int32_t *o) {
  const int32_t *in = (const int32_t *)A->in[0];
  size_t E = A->E;
  int ok = 1;
  for (size_t e = 0; e < (which ? 3 * E : E); e++) {
    if (which) { ok &= o[e] == in[e]; continue; }
    ok &= o[e] == in[2 * E + e];
    ok &= o[E + e] == (int32_t)((uint32_t)in[e] + (uint32_t)in[2 * E + e] + (uint32_t)in[E + e]);
    ok &= o[2 * E + e] == in[E + e];
  }
  return ok;
}
TEST(one_rank_programs_on_host) {   // the programs of the NCCL test, checked here against the hand answer
  mlsys_rng r;
  mlsys_rng_seed(&r, 8);
  for (int which = 0; which < 2; which++) {
    mlsys_coll_prog p;
    mlsys_coll_def d;
    mlsys__cx_plan pl;
    one_rank_program(which, &p, &d);
    bufs A, B;
    bufs_make(&A, &p, MLSYS_COLL_I32, 7, &r);
    bufs_make(&B, &p, MLSYS_COLL_I32, 7, NULL);
    memcpy(B.in[0], A.in[0], (size_t)p.gpus[0].i_chunks * 7 * 4);
    CHECK_OK(mlsys_coll_exec_cpu(&p, MLSYS_COLL_I32, MLSYS_COLL_SUM, A.in, A.out, 7, 2));
    CHECK_MSG(one_rank_expected(which, &A, (const int32_t *)A.out[0]), "program %d: exec_cpu differs from the hand answer", which);
    REQUIRE_OK(mlsys__cx_plan_build(&p, &pl));
    CHECK_EQ_INT(pl.ncomm, 0);
    run_plan_host(&pl, MLSYS_COLL_I32, MLSYS_COLL_SUM, &B);
    CHECK_MSG(one_rank_expected(which, &B, (const int32_t *)B.out[0]), "program %d: plan differs from the hand answer", which);
    mlsys__cx_plan_free(&pl);
    bufs_free(&A); bufs_free(&B);
    mlsys_coll_prog_free(&p);
    mlsys_coll_def_free(&d);
  }
}
TEST(nccl_one_rank) {
#ifndef MLSYS_COLLECTIVE_NCCL
  SKIP("built without NCCL");
#else
  NEED_DEVICE();
  ncclComm_t comm;
  int dev = 0, ver = 0;
  ncclResult_t nr = ncclCommInitAll(&comm, 1, &dev);
  CHECK_MSG(nr == ncclSuccess, "ncclCommInitAll: %s", ncclGetErrorString(nr));
  REQUIRE(nr == ncclSuccess);
  ncclGetVersion(&ver);
  printf("    NCCL %d, 1-rank communicator\n", ver);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  const size_t E = 1001;
  mlsys_rng r;
  mlsys_rng_seed(&r, 4);
  for (int which = 0; which < 2; which++) {
    mlsys_coll_prog p;
    mlsys_coll_def d;
    one_rank_program(which, &p, &d);
    for (int q = 0; q < 4; q++) {
      int dt = q < 2 ? MLSYS_COLL_I32 : MLSYS_COLL_F64, op = q % 2 ? MLSYS_COLL_MAX : MLSYS_COLL_SUM;
      ncclDataType_t ndt = dt == MLSYS_COLL_I32 ? ncclInt32 : ncclFloat64;
      ncclRedOp_t nop = op == MLSYS_COLL_MAX ? ncclMax : ncclSum;
      bufs A, B;
      bufs_make(&A, &p, dt, E, &r);
      bufs_make(&B, &p, dt, E, NULL);
      size_t ni = (size_t)p.gpus[0].i_chunks * E * A.es, no = (size_t)p.gpus[0].o_chunks * E * A.es;
      void *din, *dout;
      CUDA_OK(cudaMalloc(&din, ni));
      CUDA_OK(cudaMalloc(&dout, no));
      CUDA_OK(cudaMemcpy(din, A.in[0], ni, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(dout, 0x5a, no));
      CHECK_OK(mlsys_coll_exec_cpu(&p, dt, op, A.in, A.out, E, 1));
      CHECK_OK(mlsys_coll_exec_nccl(&p, 0, comm, s, din, dout, E, ndt, nop));
      CUDA_OK(cudaStreamSynchronize(s));
      CUDA_OK(cudaMemcpy(B.out[0], dout, no, cudaMemcpyDeviceToHost));
      CHECK_MSG(bufs_same(&A, &B, &p), "program %d %s %s: NCCL executor differs from mlsys_coll_exec_cpu", which,
                dtype_name[dt], op_name[op]);
      if (dt == MLSYS_COLL_I32 && op == MLSYS_COLL_SUM)
        CHECK_MSG(one_rank_expected(which, &B, (const int32_t *)B.out[0]), "program %d: NCCL executor output differs from the hand answer", which);
      cudaFree(din); cudaFree(dout);
      bufs_free(&A); bufs_free(&B);
    }
    // argument errors: another rank, an unsupported type
    CHECK(mlsys_coll_exec_nccl(&p, 1, comm, s, NULL, NULL, E, ncclInt32, ncclSum) == MLSYS_ERR_ARG);
    CHECK(mlsys_coll_exec_nccl(&p, 0, comm, s, NULL, NULL, E, ncclUint8, ncclSum) == MLSYS_ERR_ARG);
    mlsys_coll_prog_free(&p);
    mlsys_coll_def_free(&d);
  }
  {   // a program for 2 ranks on the 1-rank communicator
    mlsys_coll_prog p2;
    special_program(SP_MISMATCH, &p2);
    CHECK(mlsys_coll_exec_nccl(&p2, 0, comm, s, NULL, NULL, E, ncclInt32, ncclSum) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "2 ranks");
    mlsys_coll_prog_free(&p2);
  }
  {   // the profiler needs a peer: a 1-rank communicator has none
    size_t sz = 4096;
    double ts, tb;
    CHECK(mlsys_coll_profile_link(comm, 0, 0, &sz, 1, 4, s, &ts, &tb) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "peer");
  }
  cudaStreamDestroy(s);
  ncclCommDestroy(comm);
#endif
}

TEST_MAIN()
