/* kernels/mlsys_collective_kernels.cuh — the GPU side of mlsys_collective.h (TACCL, spec §3.11, §5.3):
     1. elementwise kernels, each beside the plain C++ loop it must equal bit for bit:
          mlsys_coll_cuda_copy / _reduce / _reduce3      (int32, int64, float, double × sum, prod, min, max)
          mlsys_coll_cpu_copy  / _reduce / _reduce3      (the CPU references)
     2. mlsys_coll_exec_emul_cuda: every rank of a program on ONE device (the only way to run programs on the one-GPU
        machines available here);
     3. with MLSYS_COLLECTIVE_NCCL: mlsys_coll_exec_nccl (one rank of a program through stock NCCL point-to-point,
        spec §3.11) and mlsys_coll_profile_link (the α–β profiler of §5.3, feeding mlsys_coll_fit_alpha_beta).

   Use from a .cu file (nvcc -std=c++17; link -lnccl for part 3):
       #define MLSYS_CUDA                  // before the first mlsys header: the CUDA helpers of mlsys_common.h
       #define MLSYS_COLLECTIVE_CUDA
       #define MLSYS_COLLECTIVE_NCCL       // optional
       #include "mlsys_collective.h"       // with MLSYS_IMPLEMENTATION in one file of the program
       #include "kernels/mlsys_collective_kernels.cuh"
   Everything here is static (the file may be included by several .cu files). Only public functions of the
   headers are used, so the implementation of mlsys_collective.h may live in another file.
   tests/cuda/test_collective_cuda.cu is the test (`make cuda-test`).

   Both executors share one host-side plan (section 2): the program is interpreted on the host in a deterministic
   legal order, with the same slot semantics as mlsys_coll_exec_cpu, and every data movement becomes a device
   operation placed in a "phase": even phases are communication (one NCCL group: the matched send/recv pairs),
   odd phases are local kernels (copies, reductions). An operation goes into the earliest phase that respects every
   read/write hazard on the slots it touches, so the plan is an NCCL round schedule (spec §3.11: "a chunk received in
   round k is sendable in round k+1"), and running the phases in order on one stream is a legal sequential execution
   of the program — the emulated executor therefore also tests the NCCL executor's rounds on one GPU. */
#ifndef MLSYS_COLLECTIVE_KERNELS_CUH
#define MLSYS_COLLECTIVE_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#ifdef MLSYS_COLLECTIVE_NCCL
#include <nccl.h>
#endif

#ifndef MLSYS_CUDA_CHECK
#error "define MLSYS_CUDA before including mlsys_common.h / mlsys_collective.h (it enables MLSYS_CUDA_CHECK)"
#endif

#define MLSYS_COLL_CUDA_THREADS 256

/* ================================================================================================================
   1. Elementwise kernels and their CPU references
   ================================================================================================================ */
/* Bytes of one element of a MLSYS_COLL_* dtype, 0 if unknown. */
static inline size_t mlsys_coll_cuda_esize(int dtype) {
  switch (dtype) {
    case MLSYS_COLL_I32: case MLSYS_COLL_F32: return 4;
    case MLSYS_COLL_I64: case MLSYS_COLL_F64: return 8;
    default: return 0;
  }
}

/* The reduction operators, shared by host and device so both sides compute the same expression. Integers wrap
   (two's complement, computed in unsigned arithmetic: signed overflow is undefined in C++). min/max are written
   as comparisons, not fmin/fmax: identical on both sides for every input, NaN included (the same expressions
   as mlsys_coll_exec_cpu's element loops: a < b ? a : b, so the order of the operands matters only there). Sums
   and products are identical too except for the bits of a NaN: an invalid operation gives the GPU's canonical
   +NaN and x86's negative default NaN, and x86 keeps a NaN operand's payload.
   dst = op(dst, src) is computed as op(a = dst, b = src). */
template <typename T> struct mlsys__coll_uns { typedef T type; };
template <> struct mlsys__coll_uns<int32_t> { typedef uint32_t type; };
template <> struct mlsys__coll_uns<int64_t> { typedef uint64_t type; };
template <typename T, int OP> __host__ __device__ __forceinline__ T mlsys__coll_apply(T a, T b) {
  typedef typename mlsys__coll_uns<T>::type U;
  if (OP == MLSYS_COLL_SUM) return (T)((U)a + (U)b);
  if (OP == MLSYS_COLL_PROD) return (T)((U)a * (U)b);
  if (OP == MLSYS_COLL_MIN) return a < b ? a : b;
  return a > b ? a : b;
}

/* 16-byte vectors for the aligned body of a buffer. */
template <typename T> struct alignas(16) mlsys__coll_vec { T v[16 / sizeof(T)]; };

/* out[i] = op(a[i], b[i]) for i < n (out may equal a or b, but not overlap them otherwise): the share of thread
   `tid` of `stride` threads. The body [head, head + nvec·V) is done with 16-byte loads and stores (the launcher
   picks head so that out, a and b are all 16-byte aligned there, or sets nvec = 0); the elements before and after
   it one by one. __host__ too, so that the split can be checked on a machine without a GPU. */
template <typename T, int OP>
__host__ __device__ static inline void mlsys__coll_reduce_part(T *out, const T *a, const T *b, size_t n, size_t head,
                                                               size_t nvec, size_t tid, size_t stride) {
  const int V = 16 / sizeof(T);
  size_t i;
  for (i = tid; i < nvec; i += stride) {
    mlsys__coll_vec<T> x = ((const mlsys__coll_vec<T> *)(a + head))[i];
    mlsys__coll_vec<T> y = ((const mlsys__coll_vec<T> *)(b + head))[i];
#pragma unroll
    for (int k = 0; k < V; k++) x.v[k] = mlsys__coll_apply<T, OP>(x.v[k], y.v[k]);
    ((mlsys__coll_vec<T> *)(out + head))[i] = x;
  }
  {
    size_t tail0 = head + nvec * V, nscal = head + (n - tail0);
    for (i = tid; i < nscal; i += stride) {
      size_t k = i < head ? i : tail0 + (i - head);
      out[k] = mlsys__coll_apply<T, OP>(a[k], b[k]);
    }
  }
}
/* out[i] = a[i], the same split into scalar head, vector body and scalar tail. */
template <typename T>
__host__ __device__ static inline void mlsys__coll_copy_part(T *out, const T *a, size_t n, size_t head, size_t nvec,
                                                             size_t tid, size_t stride) {
  const int V = 16 / sizeof(T);
  size_t i;
  for (i = tid; i < nvec; i += stride)
    ((mlsys__coll_vec<T> *)(out + head))[i] = ((const mlsys__coll_vec<T> *)(a + head))[i];
  {
    size_t tail0 = head + nvec * V, nscal = head + (n - tail0);
    for (i = tid; i < nscal; i += stride) {
      size_t k = i < head ? i : tail0 + (i - head);
      out[k] = a[k];
    }
  }
}
template <typename T, int OP>
__global__ static void mlsys__coll_k_reduce(T *out, const T *a, const T *b, size_t n, size_t head, size_t nvec) {
  mlsys__coll_reduce_part<T, OP>(out, a, b, n, head, nvec, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                                 (size_t)gridDim.x * blockDim.x);
}
template <typename T>
__global__ static void mlsys__coll_k_copy(T *out, const T *a, size_t n, size_t head, size_t nvec) {
  mlsys__coll_copy_part<T>(out, a, n, head, nvec, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                           (size_t)gridDim.x * blockDim.x);
}

/* The vector split for pointers p[0..np) of elements of `es` bytes: head elements until p[0] is 16-byte aligned,
   provided every pointer is then aligned too (they share their address modulo 16); otherwise all scalar. */
static inline void mlsys__coll_split(const void *const *p, int np, size_t es, size_t n, size_t *head, size_t *nvec) {
  uintptr_t m = (uintptr_t)p[0] & 15;
  int i;
  *head = 0; *nvec = 0;
  for (i = 1; i < np; i++)
    if (((uintptr_t)p[i] & 15) != m) return;
  if (m % es) return;
  {
    size_t h = m ? (16 - m) / es : 0, V = 16 / es;
    if (h >= n) return;
    *head = h;
    *nvec = (n - h) / V;
  }
}
/* Blocks for a kernel whose threads take one vector each, or one scalar of the head and tail. */
static inline unsigned mlsys__coll_grid(size_t n, size_t nvec, size_t V) {
  size_t nscal = n - nvec * V, work = nvec > nscal ? nvec : nscal;
  unsigned g = mlsys_cuda_blocks(work, MLSYS_COLL_CUDA_THREADS);
  return g > 65535u * 16u ? 65535u * 16u : g;   /* grid-stride beyond ~268M threads */
}

template <typename T, int OP>
static void mlsys__coll_launch_reduce(void *out, const void *a, const void *b, size_t n, cudaStream_t s) {
  const void *p[3] = {out, a, b};
  size_t head, nvec;
  mlsys__coll_split(p, 3, sizeof(T), n, &head, &nvec);
  mlsys__coll_k_reduce<T, OP><<<mlsys__coll_grid(n, nvec, 16 / sizeof(T)), MLSYS_COLL_CUDA_THREADS, 0, s>>>((T *)out, (const T *)a, (const T *)b, n, head, nvec);
}
template <typename T>
static void mlsys__coll_launch_copy(void *out, const void *a, size_t n, cudaStream_t s) {
  const void *p[2] = {out, a};
  size_t head, nvec;
  mlsys__coll_split(p, 2, sizeof(T), n, &head, &nvec);
  mlsys__coll_k_copy<T><<<mlsys__coll_grid(n, nvec, 16 / sizeof(T)), MLSYS_COLL_CUDA_THREADS, 0, s>>>((T *)out, (const T *)a, n, head, nvec);
}

#define MLSYS__COLL_LAUNCHED()                                                                                   \
  do {                                                                                                           \
    cudaError_t e_ = cudaGetLastError();                                                                         \
    if (e_ != cudaSuccess) return mlsys_set_error(MLSYS_ERR_CUDA, "collective kernel launch: %s", cudaGetErrorString(e_)); \
  } while (0)

/* out = op(a, b) elementwise on the device (count elements of dtype; out may equal a or b), enqueued on s. */
static mlsys_status mlsys_coll_cuda_reduce3(void *out, const void *a, const void *b, size_t count, int dtype, int redop,
                                            cudaStream_t s) {
  if (redop < MLSYS_COLL_SUM || redop > MLSYS_COLL_MAX) return mlsys_set_error(MLSYS_ERR_ARG, "unknown reduction operator %d", redop);
  if (!mlsys_coll_cuda_esize(dtype)) return mlsys_set_error(MLSYS_ERR_ARG, "unknown data type %d", dtype);
  if (!count) return MLSYS_OK;
#define MLSYS__COLL_R(T)                                                                    \
  switch (redop) {                                                                          \
    case MLSYS_COLL_SUM: mlsys__coll_launch_reduce<T, MLSYS_COLL_SUM>(out, a, b, count, s); break;   \
    case MLSYS_COLL_PROD: mlsys__coll_launch_reduce<T, MLSYS_COLL_PROD>(out, a, b, count, s); break; \
    case MLSYS_COLL_MIN: mlsys__coll_launch_reduce<T, MLSYS_COLL_MIN>(out, a, b, count, s); break;   \
    default: mlsys__coll_launch_reduce<T, MLSYS_COLL_MAX>(out, a, b, count, s); break;              \
  }
  switch (dtype) {
    case MLSYS_COLL_I32: MLSYS__COLL_R(int32_t) break;
    case MLSYS_COLL_I64: MLSYS__COLL_R(int64_t) break;
    case MLSYS_COLL_F32: MLSYS__COLL_R(float) break;
    default: MLSYS__COLL_R(double) break;
  }
#undef MLSYS__COLL_R
  MLSYS__COLL_LAUNCHED();
  return MLSYS_OK;
}
/* dst = op(dst, src) on the device. */
static mlsys_status mlsys_coll_cuda_reduce(void *dst, const void *src, size_t count, int dtype, int redop, cudaStream_t s) {
  return mlsys_coll_cuda_reduce3(dst, dst, src, count, dtype, redop, s);
}
/* dst = src (count elements of dtype) on the device with the copy kernel (not cudaMemcpy: the test measures it). */
static mlsys_status mlsys_coll_cuda_copy(void *dst, const void *src, size_t count, int dtype, cudaStream_t s) {
  size_t es = mlsys_coll_cuda_esize(dtype);
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "unknown data type %d", dtype);
  if (!count) return MLSYS_OK;
  if (es == 4) mlsys__coll_launch_copy<uint32_t>(dst, src, count, s);
  else mlsys__coll_launch_copy<uint64_t>(dst, src, count, s);
  MLSYS__COLL_LAUNCHED();
  return MLSYS_OK;
}

/* CPU references: the same expressions in plain loops. */
template <typename T, int OP> static void mlsys__coll_cpu_reduce3_t(T *out, const T *a, const T *b, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = mlsys__coll_apply<T, OP>(a[i], b[i]);
}
static mlsys_status mlsys_coll_cpu_reduce3(void *out, const void *a, const void *b, size_t count, int dtype, int redop) {
  if (redop < MLSYS_COLL_SUM || redop > MLSYS_COLL_MAX) return mlsys_set_error(MLSYS_ERR_ARG, "unknown reduction operator %d", redop);
#define MLSYS__COLL_C(T)                                                                                         \
  switch (redop) {                                                                                               \
    case MLSYS_COLL_SUM: mlsys__coll_cpu_reduce3_t<T, MLSYS_COLL_SUM>((T *)out, (const T *)a, (const T *)b, count); break;   \
    case MLSYS_COLL_PROD: mlsys__coll_cpu_reduce3_t<T, MLSYS_COLL_PROD>((T *)out, (const T *)a, (const T *)b, count); break; \
    case MLSYS_COLL_MIN: mlsys__coll_cpu_reduce3_t<T, MLSYS_COLL_MIN>((T *)out, (const T *)a, (const T *)b, count); break;   \
    default: mlsys__coll_cpu_reduce3_t<T, MLSYS_COLL_MAX>((T *)out, (const T *)a, (const T *)b, count); break;              \
  }
  switch (dtype) {
    case MLSYS_COLL_I32: MLSYS__COLL_C(int32_t) break;
    case MLSYS_COLL_I64: MLSYS__COLL_C(int64_t) break;
    case MLSYS_COLL_F32: MLSYS__COLL_C(float) break;
    case MLSYS_COLL_F64: MLSYS__COLL_C(double) break;
    default: return mlsys_set_error(MLSYS_ERR_ARG, "unknown data type %d", dtype);
  }
#undef MLSYS__COLL_C
  return MLSYS_OK;
}
static mlsys_status mlsys_coll_cpu_reduce(void *dst, const void *src, size_t count, int dtype, int redop) {
  return mlsys_coll_cpu_reduce3(dst, dst, src, count, dtype, redop);
}
static mlsys_status mlsys_coll_cpu_copy(void *dst, const void *src, size_t count, int dtype) {
  size_t es = mlsys_coll_cuda_esize(dtype);
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "unknown data type %d", dtype);
  if (es == 4) for (size_t i = 0; i < count; i++) ((uint32_t *)dst)[i] = ((const uint32_t *)src)[i];
  else for (size_t i = 0; i < count; i++) ((uint64_t *)dst)[i] = ((const uint64_t *)src)[i];
  return MLSYS_OK;
}


/* ================================================================================================================
   2. The plan: a program interpreted on the host, as phases of device operations
   ================================================================================================================ */
/* Buffers of a rank: the program's three and a staging area (received data waiting to be reduced, and snapshots of
   data sent but overwritten on the sender before the receiver took it). */
enum { MLSYS__CX_IN = MLSYS_COLL_BUF_IN, MLSYS__CX_OUT = MLSYS_COLL_BUF_OUT, MLSYS__CX_SCR = MLSYS_COLL_BUF_SCRATCH,
       MLSYS__CX_STG = 3, MLSYS__CX_NBUF = 4 };
enum { MLSYS__CX_XFER = 0, MLSYS__CX_COPY = 1, MLSYS__CX_RED = 2 };

/* One device operation. XFER: cnt slots from (rank, abuf, aoff) to (peer, dbuf, doff): a matched ncclSend/ncclRecv
   pair, or one cudaMemcpyAsync in the emulation. COPY: d = a on rank. RED: d = a ⊕ b on rank. Offsets and counts
   are in program slots of chunk_elems / instances elements (the lowering already split every chunk into `instances`
   sub-slots, as mlsys_coll_exec_cpu reads them). */
typedef struct {
  int kind, phase, seq, rank, peer;
  unsigned char abuf, bbuf, dbuf;
  long long aoff, boff, doff, cnt;
} mlsys__cx_op;

typedef struct {
  int ngpus;
  long long *nslots;      /* [ngpus·4] slots of each buffer (IN, OUT, SCRATCH, STAGING) of each rank */
  int nops, cap;
  mlsys__cx_op *ops;      /* sorted by (phase, seq) once built */
  int nphases;            /* phases 0..nphases-1: even = communication, odd = kernels */
  int ncomm;              /* communication phases holding a transfer (= NCCL groups issued in total) */
  int nkern;              /* kernel phases holding a kernel */
  int nsnap;              /* sends whose data had to be snapshot (overwritten before the receive) */
} mlsys__cx_plan;

static void mlsys__cx_plan_free(mlsys__cx_plan *pl) {
  mlsys_free(pl->nslots);
  mlsys_free(pl->ops);
  memset(pl, 0, sizeof *pl);
}

/* Last phase that wrote / read each slot of one buffer of one rank (-1 = never). */
typedef struct { int *lw, *lr; long long n, cap; } mlsys__cx_haz;
/* A message in flight: cnt slots of (from, buf, off), sent when its data was complete at phase `ready`. */
typedef struct { int from, to; unsigned char buf; long long off, cnt; int ready, consumed; } mlsys__cx_msg;
/* A growable list of ints (FIFOs of message ids, pending sends of a rank). */
typedef struct { int *v, n, cap, head; } mlsys__cx_ivec;

static int mlsys__cx_ivec_push(mlsys__cx_ivec *q, int x) {
  if (q->n == q->cap) {
    int nc = q->cap ? 2 * q->cap : 8;
    int *nv = (int *)mlsys_realloc_array(q->v, (size_t)nc, sizeof(int));
    if (!nv) return 0;
    q->v = nv; q->cap = nc;
  }
  q->v[q->n++] = x;
  return 1;
}

typedef struct {
  const mlsys_coll_prog *p;
  mlsys__cx_plan *pl;
  mlsys__cx_haz *haz;       /* [ngpus·4] */
  mlsys__cx_msg *msg;
  int nmsg, capmsg;
  mlsys__cx_ivec *fifo;     /* [global tb] messages waiting for this receiving threadblock */
  mlsys__cx_ivec *pend;     /* [ngpus] unconsumed messages whose data is still in a program buffer of the rank */
  int seq;
} mlsys__cx_sim;

static mlsys_status mlsys__cx_haz_grow(mlsys__cx_haz *h, long long n) {
  if (n > h->cap) {
    long long nc = h->cap ? h->cap : 16;
    while (nc < n) nc *= 2;
    int *a = (int *)mlsys_realloc_array(h->lw, (size_t)nc, sizeof(int));
    if (!a) return MLSYS_ERR_NOMEM;
    h->lw = a;
    a = (int *)mlsys_realloc_array(h->lr, (size_t)nc, sizeof(int));
    if (!a) return MLSYS_ERR_NOMEM;
    h->lr = a;
    h->cap = nc;
  }
  for (long long i = h->n; i < n; i++) h->lw[i] = h->lr[i] = -1;
  if (n > h->n) h->n = n;
  return MLSYS_OK;
}
/* Largest last-write (and, with lr, last-read) phase over slots [off, off+cnt). */
static int mlsys__cx_last(const mlsys__cx_haz *h, long long off, long long cnt, int reads_too) {
  int m = -1;
  for (long long i = off; i < off + cnt; i++) {
    if (h->lw[i] > m) m = h->lw[i];
    if (reads_too && h->lr[i] > m) m = h->lr[i];
  }
  return m;
}
static void mlsys__cx_mark(mlsys__cx_haz *h, long long off, long long cnt, int phase, int write) {
  for (long long i = off; i < off + cnt; i++) {
    int *x = write ? &h->lw[i] : &h->lr[i];
    if (*x < phase) *x = phase;
  }
}
static mlsys__cx_haz *mlsys__cx_h(mlsys__cx_sim *S, int rank, int buf) { return &S->haz[rank * MLSYS__CX_NBUF + buf]; }
/* Smallest kernel (odd) phase ≥ t, smallest communication (even) phase > t. */
static int mlsys__cx_kphase(int t) { return t < 1 ? 1 : (t | 1); }
static int mlsys__cx_cphase(int t) { return t < 0 ? 0 : (t + 2) & ~1; }

static mlsys_status mlsys__cx_emit(mlsys__cx_sim *S, int kind, int phase, int rank, int peer, int abuf, long long aoff,
                                   int bbuf, long long boff, int dbuf, long long doff, long long cnt) {
  mlsys__cx_plan *pl = S->pl;
  mlsys__cx_op *o;
  if (pl->nops == pl->cap) {
    int nc = pl->cap ? 2 * pl->cap : 64;
    mlsys__cx_op *no = (mlsys__cx_op *)mlsys_realloc_array(pl->ops, (size_t)nc, sizeof *no);
    if (!no) return MLSYS_ERR_NOMEM;
    pl->ops = no; pl->cap = nc;
  }
  o = &pl->ops[pl->nops++];
  o->kind = kind; o->phase = phase; o->seq = S->seq++; o->rank = rank; o->peer = peer;
  o->abuf = (unsigned char)abuf; o->aoff = aoff; o->bbuf = (unsigned char)bbuf; o->boff = boff;
  o->dbuf = (unsigned char)dbuf; o->doff = doff; o->cnt = cnt;
  if (phase + 1 > pl->nphases) pl->nphases = phase + 1;
  return MLSYS_OK;
}
/* cnt fresh staging slots on rank. */
static mlsys_status mlsys__cx_stage(mlsys__cx_sim *S, int rank, long long cnt, long long *off) {
  long long *n = &S->pl->nslots[rank * MLSYS__CX_NBUF + MLSYS__CX_STG];
  *off = *n;
  *n += cnt;
  return mlsys__cx_haz_grow(mlsys__cx_h(S, rank, MLSYS__CX_STG), *n);
}
/* Before (rank, buf, [off, off+cnt)) is written: every message sent from those slots and not yet received takes a
   snapshot of its data (a copy kernel right after the data was complete), so the send no longer reads the slots. */
static mlsys_status mlsys__cx_protect(mlsys__cx_sim *S, int rank, int buf, long long off, long long cnt) {
  mlsys__cx_ivec *q = &S->pend[rank];
  int i, k = 0;
  mlsys_status st;
  for (i = 0; i < q->n; i++) {
    mlsys__cx_msg *m = &S->msg[q->v[i]];
    if (m->consumed || m->buf == MLSYS__CX_STG) continue;       /* dropped from the list */
    if (m->buf == buf && m->off < off + cnt && off < m->off + m->cnt) {
      long long so;
      int t;
      if ((st = mlsys__cx_stage(S, rank, m->cnt, &so))) return st;
      t = mlsys__cx_kphase(mlsys__cx_last(mlsys__cx_h(S, rank, m->buf), m->off, m->cnt, 0));
      if ((st = mlsys__cx_emit(S, MLSYS__CX_COPY, t, rank, -1, m->buf, m->off, 0, 0, MLSYS__CX_STG, so, m->cnt))) return st;
      mlsys__cx_mark(mlsys__cx_h(S, rank, m->buf), m->off, m->cnt, t, 0);
      mlsys__cx_mark(mlsys__cx_h(S, rank, MLSYS__CX_STG), so, m->cnt, t, 1);
      m->buf = MLSYS__CX_STG; m->off = so; m->ready = t;
      S->pl->nsnap++;
      continue;
    }
    q->v[k++] = q->v[i];
  }
  q->n = k;
  return MLSYS_OK;
}
/* A local kernel on rank: d = a (COPY) or d = a ⊕ b (RED); returns its phase. */
static mlsys_status mlsys__cx_kernel(mlsys__cx_sim *S, int kind, int rank, int abuf, long long aoff, int bbuf,
                                     long long boff, int dbuf, long long doff, long long cnt, int *phase) {
  mlsys_status st;
  int t;
  if ((st = mlsys__cx_protect(S, rank, dbuf, doff, cnt))) return st;
  t = mlsys__cx_last(mlsys__cx_h(S, rank, abuf), aoff, cnt, 0);
  if (kind == MLSYS__CX_RED) {
    int u = mlsys__cx_last(mlsys__cx_h(S, rank, bbuf), boff, cnt, 0);
    if (u > t) t = u;
  }
  {
    int u = mlsys__cx_last(mlsys__cx_h(S, rank, dbuf), doff, cnt, 1);
    if (u > t) t = u;
  }
  t = mlsys__cx_kphase(t);
  if ((st = mlsys__cx_emit(S, kind, t, rank, -1, abuf, aoff, bbuf, boff, dbuf, doff, cnt))) return st;
  mlsys__cx_mark(mlsys__cx_h(S, rank, abuf), aoff, cnt, t, 0);
  if (kind == MLSYS__CX_RED) mlsys__cx_mark(mlsys__cx_h(S, rank, bbuf), boff, cnt, t, 0);
  mlsys__cx_mark(mlsys__cx_h(S, rank, dbuf), doff, cnt, t, 1);
  *phase = t;
  return MLSYS_OK;
}
/* A send of (rank, buf, [off, off+cnt)) to the threadblock with global index rtb on rank `to`. */
static mlsys_status mlsys__cx_send(mlsys__cx_sim *S, int rank, int to, int rtb, int buf, long long off, long long cnt) {
  mlsys__cx_msg *m;
  if (S->nmsg == S->capmsg) {
    int nc = S->capmsg ? 2 * S->capmsg : 64;
    mlsys__cx_msg *nm = (mlsys__cx_msg *)mlsys_realloc_array(S->msg, (size_t)nc, sizeof *nm);
    if (!nm) return MLSYS_ERR_NOMEM;
    S->msg = nm; S->capmsg = nc;
  }
  m = &S->msg[S->nmsg];
  m->from = rank; m->to = to; m->buf = (unsigned char)buf; m->off = off; m->cnt = cnt; m->consumed = 0;
  m->ready = mlsys__cx_last(mlsys__cx_h(S, rank, buf), off, cnt, 0);
  if (!mlsys__cx_ivec_push(&S->fifo[rtb], S->nmsg)) return MLSYS_ERR_NOMEM;
  if (buf != MLSYS__CX_STG && !mlsys__cx_ivec_push(&S->pend[rank], S->nmsg)) return MLSYS_ERR_NOMEM;
  S->nmsg++;
  return MLSYS_OK;
}
/* The receive of message mi into (rank, dbuf, [doff, doff+cnt)): one transfer in the first communication phase
   after the data was complete at the sender and the destination is free. */
static mlsys_status mlsys__cx_recv(mlsys__cx_sim *S, int mi, int rank, int dbuf, long long doff, int *phase) {
  mlsys__cx_msg *m = &S->msg[mi];
  mlsys_status st;
  int t;
  if ((st = mlsys__cx_protect(S, rank, dbuf, doff, m->cnt))) return st;
  m = &S->msg[mi];
  t = mlsys__cx_last(mlsys__cx_h(S, rank, dbuf), doff, m->cnt, 1);
  if (m->ready > t) t = m->ready;
  t = mlsys__cx_cphase(t);
  if ((st = mlsys__cx_emit(S, MLSYS__CX_XFER, t, m->from, rank, m->buf, m->off, 0, 0, dbuf, doff, m->cnt))) return st;
  mlsys__cx_mark(mlsys__cx_h(S, m->from, m->buf), m->off, m->cnt, t, 0);
  mlsys__cx_mark(mlsys__cx_h(S, rank, dbuf), doff, m->cnt, t, 1);
  m->consumed = 1;
  *phase = t;
  return MLSYS_OK;
}

static int mlsys__cx_cmp(const void *x, const void *y) {
  const mlsys__cx_op *a = (const mlsys__cx_op *)x, *b = (const mlsys__cx_op *)y;
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Builds the plan of program p (all ranks). Deterministic, so every rank of the NCCL executor computes the same
   rounds. The threadblocks are interpreted in a fixed legal order — round robin over GPUs and threadblocks, each
   running until it blocks on a dependency or an empty receive FIFO — with mlsys_coll_exec_cpu's step semantics:
     s     send src                          r     dst = recv
     rcs   dst = recv, send dst              rrs   send (recv ⊕ src), nothing stored
     rrc   dst = recv ⊕ src                  rrcs  dst = recv ⊕ src, send dst
     cpy   dst = src                         re    dst = dst ⊕ src               nop  wait for the dependency
   Sends never block (the data is taken when the send runs: a later overwrite on the sender snapshots it first);
   a receive takes the oldest message of its (sender, receiver, channel) FIFO. A reduced receive lands in staging
   and is folded in by a kernel after its communication phase (NCCL cannot reduce on receive). */
static mlsys_status mlsys__cx_plan_build(const mlsys_coll_prog *p, mlsys__cx_plan *pl) {
  mlsys__cx_sim S;
  mlsys_status st = MLSYS_OK;
  int G, g, t, ntb = 0, *base = NULL, *rtb = NULL, *pc = NULL;
  long long remaining = 0;
  memset(pl, 0, sizeof *pl);
  memset(&S, 0, sizeof S);
  if (!p || !p->gpus || p->ngpus < 1) return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: program has no GPUs");
  if (p->instances < 1) return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: instances %d must be positive", p->instances);
  G = p->ngpus;
  /* structural checks of what the interpretation relies on */
  for (g = 0; g < G; g++) {
    const mlsys_coll_gpu *gp = &p->gpus[g];
    if (gp->i_chunks < 0 || gp->o_chunks < 0 || gp->s_chunks < 0 || gp->ntbs < 0 || (gp->ntbs && !gp->tbs))
      return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d has bad buffer or threadblock counts", g);
    for (t = 0; t < gp->ntbs; t++) {
      const mlsys_coll_tb *tb = &gp->tbs[t];
      if (tb->send < -1 || tb->send >= G || tb->send == g || tb->recv < -1 || tb->recv >= G || tb->recv == g)
        return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d: peers send=%d recv=%d out of range", g, t, tb->send, tb->recv);
      if (tb->nsteps < 0 || (tb->nsteps && !tb->steps))
        return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d: bad step count %d", g, t, tb->nsteps);
      for (int k = 0; k < tb->nsteps; k++) {
        const mlsys_coll_step *sp = &tb->steps[k];
        int op = sp->op;
        if (op > MLSYS_COLL_OP_NOP || sp->srcbuf > 2 || sp->dstbuf > 2)
          return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d: unknown step type or buffer", g, t, k);
        if (sp->depid < -1 || sp->depid >= gp->ntbs || sp->depid == t ||
            (sp->depid >= 0 && (sp->deps < 0 || sp->deps >= gp->tbs[sp->depid].nsteps)))
          return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d: dependency (tb %d, step %d) does not exist", g, t, k, sp->depid, sp->deps);
        remaining++;
        if (op == MLSYS_COLL_OP_NOP) continue;
        if (sp->cnt < 1) return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d: count %d", g, t, k, sp->cnt);
        {
          int sends = op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRCS;
          int recvs = op >= MLSYS_COLL_OP_RECV && op <= MLSYS_COLL_OP_RRCS;
          int rsrc = op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRC || op == MLSYS_COLL_OP_RRCS ||
                     op == MLSYS_COLL_OP_COPY || op == MLSYS_COLL_OP_REDUCE;
          int wdst = op != MLSYS_COLL_OP_SEND && op != MLSYS_COLL_OP_RRS;
          int nsrc = sp->srcbuf == 0 ? gp->i_chunks : sp->srcbuf == 1 ? gp->o_chunks : gp->s_chunks;
          int ndst = sp->dstbuf == 0 ? gp->i_chunks : sp->dstbuf == 1 ? gp->o_chunks : gp->s_chunks;
          if (sends && tb->send < 0) return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d sends without a send peer", g, t, k);
          if (recvs && tb->recv < 0) return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d receives without a recv peer", g, t, k);
          if (rsrc && (sp->srcoff < 0 || (long long)sp->srcoff + sp->cnt > nsrc))
            return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d: source slots [%d, %d) outside the buffer's %d", g, t, k, sp->srcoff, sp->srcoff + sp->cnt, nsrc);
          if (wdst && (sp->dstoff < 0 || (long long)sp->dstoff + sp->cnt > ndst))
            return mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d tb %d step %d: destination slots [%d, %d) outside the buffer's %d", g, t, k, sp->dstoff, sp->dstoff + sp->cnt, ndst);
        }
      }
    }
    ntb += gp->ntbs;
  }
  S.p = p; S.pl = pl;
  pl->ngpus = G;
  pl->nslots = (long long *)mlsys_calloc((size_t)G * MLSYS__CX_NBUF, sizeof(long long));
  S.haz = (mlsys__cx_haz *)mlsys_calloc((size_t)G * MLSYS__CX_NBUF, sizeof *S.haz);
  S.fifo = (mlsys__cx_ivec *)mlsys_calloc((size_t)ntb + 1, sizeof *S.fifo);
  S.pend = (mlsys__cx_ivec *)mlsys_calloc((size_t)G, sizeof *S.pend);
  base = (int *)mlsys_alloc((size_t)G + 1, sizeof(int));
  rtb = (int *)mlsys_alloc((size_t)ntb + 1, sizeof(int));
  pc = (int *)mlsys_calloc((size_t)ntb + 1, sizeof(int));
  if (!pl->nslots || !S.haz || !S.fifo || !S.pend || !base || !rtb || !pc) { st = MLSYS_ERR_NOMEM; goto done; }
  for (g = 0, base[0] = 0; g < G; g++) base[g + 1] = base[g] + p->gpus[g].ntbs;
  for (g = 0; g < G; g++) {
    const mlsys_coll_gpu *gp = &p->gpus[g];
    long long n3[3] = {gp->i_chunks, gp->o_chunks, gp->s_chunks};
    for (int b = 0; b < 3; b++) {
      pl->nslots[g * MLSYS__CX_NBUF + b] = n3[b];
      if ((st = mlsys__cx_haz_grow(&S.haz[g * MLSYS__CX_NBUF + b], n3[b]))) goto done;
    }
    /* the receiving threadblock of every sending one: (sender, receiver, channel) names one connection */
    for (t = 0; t < gp->ntbs; t++) {
      const mlsys_coll_tb *tb = &gp->tbs[t];
      int u, found = -1;
      rtb[base[g] + t] = -1;
      if (tb->send < 0) continue;
      for (u = 0; u < p->gpus[tb->send].ntbs; u++) {
        const mlsys_coll_tb *o = &p->gpus[tb->send].tbs[u];
        if (o->recv == g && o->chan == tb->chan) {
          if (found >= 0) {
            st = mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d has two threadblocks (%d, %d) receiving from gpu %d on channel %d", tb->send, found, u, g, tb->chan);
            goto done;
          }
          found = u;
        }
      }
      for (u = 0; u < t; u++)
        if (gp->tbs[u].send == tb->send && gp->tbs[u].chan == tb->chan) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "collective executor: gpu %d has two threadblocks (%d, %d) sending to gpu %d on channel %d", g, u, t, tb->send, tb->chan);
          goto done;
        }
      if (found < 0) {
        int has_send = 0;
        for (u = 0; u < tb->nsteps; u++) {
          int op = tb->steps[u].op;
          has_send |= op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRCS;
        }
        if (has_send) {
          st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "collective executor: unmatched send: gpu %d tb %d sends to gpu %d on channel %d, where no threadblock receives from gpu %d", g, t, tb->send, tb->chan, g);
          goto done;
        }
        continue;
      }
      rtb[base[g] + t] = base[tb->send] + found;
    }
  }
  /* the interpretation */
  while (remaining > 0) {
    int progress = 0;
    for (g = 0; g < G; g++) {
      const mlsys_coll_gpu *gp = &p->gpus[g];
      for (t = 0; t < gp->ntbs; t++) {
        const mlsys_coll_tb *tb = &gp->tbs[t];
        int gt = base[g] + t;
        while (pc[gt] < tb->nsteps) {
          const mlsys_coll_step *sp = &tb->steps[pc[gt]];
          int op = sp->op, recvs = op >= MLSYS_COLL_OP_RECV && op <= MLSYS_COLL_OP_RRCS, mi = -1, ph;
          long long so = sp->srcoff, dof = sp->dstoff, cnt = sp->cnt;
          if (sp->depid >= 0 && pc[base[g] + sp->depid] <= sp->deps) break;
          if (recvs) {
            mlsys__cx_ivec *q = &S.fifo[gt];
            if (q->head == q->n) break;
            mi = q->v[q->head];
            if (S.msg[mi].cnt != cnt) {
              st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "collective executor: count mismatch: gpu %d tb %d step %d receives %d slots, but gpu %d sent %lld", g, t, pc[gt],
                                   sp->cnt, S.msg[mi].from, S.msg[mi].cnt);
              goto done;
            }
            q->head++;
          }
          switch (op) {
            case MLSYS_COLL_OP_SEND: st = mlsys__cx_send(&S, g, tb->send, rtb[gt], sp->srcbuf, so, cnt); break;
            case MLSYS_COLL_OP_RECV: st = mlsys__cx_recv(&S, mi, g, sp->dstbuf, dof, &ph); break;
            case MLSYS_COLL_OP_RCS:
              if (!(st = mlsys__cx_recv(&S, mi, g, sp->dstbuf, dof, &ph))) st = mlsys__cx_send(&S, g, tb->send, rtb[gt], sp->dstbuf, dof, cnt);
              break;
            case MLSYS_COLL_OP_RRS:
            case MLSYS_COLL_OP_RRC:
            case MLSYS_COLL_OP_RRCS: {
              long long sg;
              if ((st = mlsys__cx_stage(&S, g, cnt, &sg))) break;
              if ((st = mlsys__cx_recv(&S, mi, g, MLSYS__CX_STG, sg, &ph))) break;
              if (op == MLSYS_COLL_OP_RRS) {   /* the sum stays in staging and is sent from there */
                if (!(st = mlsys__cx_kernel(&S, MLSYS__CX_RED, g, MLSYS__CX_STG, sg, sp->srcbuf, so, MLSYS__CX_STG, sg, cnt, &ph)))
                  st = mlsys__cx_send(&S, g, tb->send, rtb[gt], MLSYS__CX_STG, sg, cnt);
              } else {
                if (!(st = mlsys__cx_kernel(&S, MLSYS__CX_RED, g, MLSYS__CX_STG, sg, sp->srcbuf, so, sp->dstbuf, dof, cnt, &ph)) &&
                    op == MLSYS_COLL_OP_RRCS)
                  st = mlsys__cx_send(&S, g, tb->send, rtb[gt], sp->dstbuf, dof, cnt);
              }
              break;
            }
            case MLSYS_COLL_OP_COPY:
            case MLSYS_COLL_OP_REDUCE: {
              int sb = sp->srcbuf;
              long long sof = so;
              /* source and destination partly overlapping (hand-written programs only): copy the source aside
                 first, as memmove does (a parallel kernel cannot run in place on shifted ranges) */
              if (sp->srcbuf == sp->dstbuf && so != dof && so < dof + cnt && dof < so + cnt) {
                if ((st = mlsys__cx_stage(&S, g, cnt, &sof))) break;
                if ((st = mlsys__cx_kernel(&S, MLSYS__CX_COPY, g, sp->srcbuf, so, 0, 0, MLSYS__CX_STG, sof, cnt, &ph))) break;
                sb = MLSYS__CX_STG;
              }
              if (op == MLSYS_COLL_OP_COPY) st = mlsys__cx_kernel(&S, MLSYS__CX_COPY, g, sb, sof, 0, 0, sp->dstbuf, dof, cnt, &ph);
              else st = mlsys__cx_kernel(&S, MLSYS__CX_RED, g, sp->dstbuf, dof, sb, sof, sp->dstbuf, dof, cnt, &ph);
              break;
            }
            default: break;   /* nop */
          }
          if (st) goto done;
          pc[gt]++;
          remaining--;
          progress = 1;
        }
      }
    }
    if (!progress) break;
  }
  /* everything ran? (nops only wait; a tb stuck behind one counts too) */
  for (g = 0; g < G && !st; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      int gt = base[g] + t;
      if (pc[gt] < p->gpus[g].tbs[t].nsteps) {
        const mlsys_coll_step *sp = &p->gpus[g].tbs[t].steps[pc[gt]];
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "collective executor: the program deadlocks: gpu %d tb %d is stuck at step %d (%s)", g, t, pc[gt],
                             sp->depid >= 0 && pc[base[g] + sp->depid] <= sp->deps ? "waiting for its dependency" : "waiting for a message");
        goto done;
      }
      if (S.fifo[gt].head != S.fifo[gt].n) {
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "collective executor: gpu %d tb %d ends with %d unreceived messages", g, t, S.fifo[gt].n - S.fifo[gt].head);
        goto done;
      }
    }
  /* order by phase; count the phases that hold something */
  if (pl->nops) qsort(pl->ops, (size_t)pl->nops, sizeof *pl->ops, mlsys__cx_cmp);
  for (int i = 0; i < pl->nops; i++)
    if (i == 0 || pl->ops[i].phase != pl->ops[i - 1].phase) {
      if (pl->ops[i].phase & 1) pl->nkern++;
      else pl->ncomm++;
    }
done:
  if (S.haz) for (g = 0; g < G * MLSYS__CX_NBUF; g++) { mlsys_free(S.haz[g].lw); mlsys_free(S.haz[g].lr); }
  if (S.fifo) for (t = 0; t < ntb; t++) mlsys_free(S.fifo[t].v);
  if (S.pend) for (g = 0; g < G; g++) mlsys_free(S.pend[g].v);
  mlsys_free(S.haz); mlsys_free(S.fifo); mlsys_free(S.pend); mlsys_free(S.msg);
  mlsys_free(base); mlsys_free(rtb); mlsys_free(pc);
  if (st) {
    if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "collective executor: out of memory");
    mlsys__cx_plan_free(pl);
  }
  return st;
}

/* Scratch and staging: stream-ordered (cudaMallocAsync, served from the device's pool after the first call) where
   the device has memory pools, else plain cudaMalloc, freed after the stream has drained. Pools exist on every
   CUDA 11.2+ GPU, but a sandbox or a driver may not offer them; the executors must not fail for that. */
static int mlsys__cx_pools(void) {
  int dev = 0, pools = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return pools;
}
static cudaError_t mlsys__cx_malloc(void **p, size_t n, cudaStream_t s) {
  return mlsys__cx_pools() ? cudaMallocAsync(p, n, s) : cudaMalloc(p, n);
}
static cudaError_t mlsys__cx_free(void *p, cudaStream_t s) {
  cudaError_t e;
  if (mlsys__cx_pools()) return cudaFreeAsync(p, s);
  if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return e;
  return cudaFree(p);
}

/* Device pointers of every (rank, buffer) for one execution: IN/OUT are the caller's, SCRATCH and STAGING live in one
   stream-ordered allocation. */
typedef struct { char **base; size_t slot_bytes; void *arena; } mlsys__cx_mem;
static void *mlsys__cx_ptr(const mlsys__cx_mem *M, int rank, int buf, long long off) {
  return M->base[rank * MLSYS__CX_NBUF + buf] + (size_t)off * M->slot_bytes;
}

/* ================================================================================================================
   3. The emulated executor: every rank of the program on one device
   ================================================================================================================ */
/* Runs program p for all p->ngpus ranks on the current device: d_in[r] / d_out[r] are device buffers of rank r with
   i_chunks·chunk_elems/instances and o_chunks·chunk_elems/instances elements (the layout of mlsys_coll_exec_cpu:
   chunk_elems elements per chunk of the collective, a multiple of p->instances); scratch and staging
   are allocated on stream s (cudaMallocAsync; cudaMalloc where the device has no memory pools) and freed on it.
   A transfer is a cudaMemcpyAsync device-to-device, a
   local copy the copy kernel, a reduction the reduce kernel — all on s, in the plan's phase order (a legal
   sequential execution), so the outputs equal mlsys_coll_exec_cpu's (bit for bit for integer types; for floating
   point too, since every slot sees the same reductions in the same operand order). Returns when everything is
   enqueued; synchronise s before reading the outputs. */
static mlsys_status mlsys_coll_exec_emul_cuda(const mlsys_coll_prog *p, int dtype, int redop, void *const *d_in,
                                              void *const *d_out, size_t chunk_elems, cudaStream_t s) {
  mlsys__cx_plan pl;
  mlsys__cx_mem M;
  mlsys_status st = MLSYS_OK;
  size_t es = mlsys_coll_cuda_esize(dtype), total = 0, E;
  int g, i;
  cudaError_t ce;
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "emulated executor: unknown data type %d", dtype);
  if (redop < MLSYS_COLL_SUM || redop > MLSYS_COLL_MAX) return mlsys_set_error(MLSYS_ERR_ARG, "emulated executor: unknown reduction operator %d", redop);
  if (!p || p->instances < 1 || chunk_elems == 0 || chunk_elems % (size_t)p->instances || chunk_elems > ((size_t)1 << 40) / es)
    return mlsys_set_error(MLSYS_ERR_ARG, "emulated executor: chunk_elems %zu is not a positive multiple of the program's %d instances (or too large)",
                           chunk_elems, p ? p->instances : 0);
  if (!d_in || !d_out) return mlsys_set_error(MLSYS_ERR_ARG, "emulated executor: NULL buffer array");
  E = chunk_elems / (size_t)p->instances;
  if ((st = mlsys__cx_plan_build(p, &pl))) return st;
  memset(&M, 0, sizeof M);
  M.slot_bytes = E * es;
  M.base = (char **)mlsys_calloc((size_t)pl.ngpus * MLSYS__CX_NBUF, sizeof(char *));
  if (!M.base) { mlsys__cx_plan_free(&pl); return MLSYS_ERR_NOMEM; }
  for (g = 0; g < pl.ngpus; g++) {
    const long long *n = &pl.nslots[g * MLSYS__CX_NBUF];
    if ((n[MLSYS__CX_IN] && !d_in[g]) || (n[MLSYS__CX_OUT] && !d_out[g])) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "emulated executor: NULL input or output buffer for rank %d", g);
      goto done;
    }
    M.base[g * MLSYS__CX_NBUF + MLSYS__CX_IN] = (char *)d_in[g];
    M.base[g * MLSYS__CX_NBUF + MLSYS__CX_OUT] = (char *)d_out[g];
    total += (size_t)(n[MLSYS__CX_SCR] + n[MLSYS__CX_STG]) * M.slot_bytes;
  }
  if (total) {
    size_t at = 0;
    if ((ce = mlsys__cx_malloc(&M.arena, total, s)) != cudaSuccess) {
      M.arena = NULL;
      st = mlsys_set_error(MLSYS_ERR_CUDA, "emulated executor: allocating %zu bytes of scratch and staging: %s", total, cudaGetErrorString(ce));
      goto done;
    }
    for (g = 0; g < pl.ngpus; g++)
      for (int b = MLSYS__CX_SCR; b <= MLSYS__CX_STG; b++) {
        M.base[g * MLSYS__CX_NBUF + b] = (char *)M.arena + at;
        at += (size_t)pl.nslots[g * MLSYS__CX_NBUF + b] * M.slot_bytes;
      }
  }
  for (i = 0; i < pl.nops && !st; i++) {
    const mlsys__cx_op *o = &pl.ops[i];
    size_t n = (size_t)o->cnt * E;
    void *d = mlsys__cx_ptr(&M, o->kind == MLSYS__CX_XFER ? o->peer : o->rank, o->dbuf, o->doff);
    const void *a = mlsys__cx_ptr(&M, o->rank, o->abuf, o->aoff);
    if (o->kind == MLSYS__CX_XFER) {
      if ((ce = cudaMemcpyAsync(d, a, n * es, cudaMemcpyDeviceToDevice, s)) != cudaSuccess)
        st = mlsys_set_error(MLSYS_ERR_CUDA, "emulated executor: transfer %d → %d: %s", o->rank, o->peer, cudaGetErrorString(ce));
    } else if (o->kind == MLSYS__CX_COPY) {
      st = mlsys_coll_cuda_copy(d, a, n, dtype, s);
    } else {
      st = mlsys_coll_cuda_reduce3(d, a, mlsys__cx_ptr(&M, o->rank, o->bbuf, o->boff), n, dtype, redop, s);
    }
  }
done:
  if (M.arena) {
    ce = mlsys__cx_free(M.arena, s);
    if (ce != cudaSuccess && !st) st = mlsys_set_error(MLSYS_ERR_CUDA, "emulated executor: freeing scratch and staging: %s", cudaGetErrorString(ce));
  }
  mlsys_free(M.base);
  mlsys__cx_plan_free(&pl);
  return st;
}

/* ================================================================================================================
   4. NCCL: one rank of a program through point-to-point sends and receives (spec §3.11), and the link profiler (§5.3)
   ================================================================================================================ */
#ifdef MLSYS_COLLECTIVE_NCCL
#define MLSYS__NCCL_CHECK(comm, call)                                                                          \
  do {                                                                                                         \
    ncclResult_t r_ = (call);                                                                                  \
    if (r_ != ncclSuccess) {                                                                                   \
      const char *l_ = (comm) ? ncclGetLastError(comm) : NULL;                                                 \
      st = mlsys_set_error(MLSYS_ERR_CUDA, "%s: %s%s%s", #call, ncclGetErrorString(r_), l_ && *l_ ? ": " : "", \
                           l_ && *l_ ? l_ : "");                                                               \
      goto done;                                                                                               \
    }                                                                                                          \
  } while (0)

static int mlsys__cx_nccl_dtype(ncclDataType_t dt) {
  switch (dt) {
    case ncclInt32: return MLSYS_COLL_I32;
    case ncclInt64: return MLSYS_COLL_I64;
    case ncclFloat32: return MLSYS_COLL_F32;
    case ncclFloat64: return MLSYS_COLL_F64;
    default: return -1;
  }
}
static int mlsys__cx_nccl_op(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return MLSYS_COLL_SUM;
    case ncclProd: return MLSYS_COLL_PROD;
    case ncclMin: return MLSYS_COLL_MIN;
    case ncclMax: return MLSYS_COLL_MAX;
    default: return -1;
  }
}

/* Runs rank `rank` of program p on communicator comm (p->ngpus ranks) and stream s: sendbuf holds the rank's
   i_chunks·chunk_elems/instances elements, recvbuf receives o_chunks·chunk_elems/instances (chunk_elems per chunk
   of the collective, a multiple of p->instances, as in mlsys_coll_exec_cpu). Every rank builds the same plan from the
   global program; per communication phase that involves this rank it issues one ncclGroupStart … ncclGroupEnd
   with its sends and receives in the plan's global order (so the k-th send a→b on a meets the k-th receive from a on
   b), then the phase's reduce/copy kernels. Scratch and staging are allocated on s (cudaMallocAsync, served from the
   device's memory pool after the first call) and freed on s. Returns once everything is enqueued. */
static mlsys_status mlsys_coll_exec_nccl(const mlsys_coll_prog *p, int rank, ncclComm_t comm, cudaStream_t s,
                                         const void *sendbuf, void *recvbuf, size_t chunk_elems, ncclDataType_t dt,
                                         ncclRedOp_t op) {
  mlsys__cx_plan pl;
  mlsys__cx_mem M;
  mlsys_status st = MLSYS_OK;
  int dtype = mlsys__cx_nccl_dtype(dt), redop = mlsys__cx_nccl_op(op), nranks = 0, me = -1, i, in_group = 0, gphase = -1;
  size_t es, total = 0, at = 0, E;
  char *base[MLSYS__CX_NBUF];
  cudaError_t ce;
  memset(&pl, 0, sizeof pl);
  memset(&M, 0, sizeof M);
  if (dtype < 0) return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: data type %d not supported (int32, int64, float32, float64)", (int)dt);
  if (redop < 0) return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: reduction %d not supported (sum, prod, min, max)", (int)op);
  es = mlsys_coll_cuda_esize(dtype);
  if (!comm) return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: NULL communicator");
  if (!p || p->instances < 1 || chunk_elems == 0 || chunk_elems % (size_t)p->instances || chunk_elems > ((size_t)1 << 40) / es)
    return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: chunk_elems %zu is not a positive multiple of the program's %d instances (or too large)",
                           chunk_elems, p ? p->instances : 0);
  E = chunk_elems / (size_t)p->instances;
  MLSYS__NCCL_CHECK(comm, ncclCommCount(comm, &nranks));
  MLSYS__NCCL_CHECK(comm, ncclCommUserRank(comm, &me));
  if (!p || p->ngpus != nranks) return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: program for %d ranks on a communicator of %d", p ? p->ngpus : 0, nranks);
  if (rank != me) return mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: called as rank %d on the communicator's rank %d", rank, me);
  if ((st = mlsys__cx_plan_build(p, &pl))) return st;
  {
    const long long *n = &pl.nslots[rank * MLSYS__CX_NBUF];
    if ((n[MLSYS__CX_IN] && !sendbuf) || (n[MLSYS__CX_OUT] && !recvbuf)) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "NCCL executor: NULL send or receive buffer");
      goto done;
    }
    M.slot_bytes = E * es;
    total = (size_t)(n[MLSYS__CX_SCR] + n[MLSYS__CX_STG]) * M.slot_bytes;
    if (total && (ce = mlsys__cx_malloc(&M.arena, total, s)) != cudaSuccess) {
      M.arena = NULL;
      st = mlsys_set_error(MLSYS_ERR_CUDA, "NCCL executor: allocating %zu bytes of scratch and staging: %s", total, cudaGetErrorString(ce));
      goto done;
    }
    base[MLSYS__CX_IN] = (char *)sendbuf;
    base[MLSYS__CX_OUT] = (char *)recvbuf;
    base[MLSYS__CX_SCR] = (char *)M.arena;
    at = (size_t)n[MLSYS__CX_SCR] * M.slot_bytes;
    base[MLSYS__CX_STG] = (char *)M.arena + at;
  }
  for (i = 0; i < pl.nops; i++) {
    const mlsys__cx_op *o = &pl.ops[i];
    size_t n = (size_t)o->cnt * E;
    if (in_group && o->phase != gphase) {   /* the communication phase is over */
      in_group = 0;
      MLSYS__NCCL_CHECK(comm, ncclGroupEnd());
    }
    if (o->kind == MLSYS__CX_XFER) {
      if (o->rank != rank && o->peer != rank) continue;
      if (!in_group) { MLSYS__NCCL_CHECK(comm, ncclGroupStart()); in_group = 1; gphase = o->phase; }
      if (o->rank == rank)
        MLSYS__NCCL_CHECK(comm, ncclSend(base[o->abuf] + (size_t)o->aoff * M.slot_bytes, n, dt, o->peer, comm, s));
      else
        MLSYS__NCCL_CHECK(comm, ncclRecv(base[o->dbuf] + (size_t)o->doff * M.slot_bytes, n, dt, o->rank, comm, s));
    } else {
      if (o->rank != rank) continue;
      if (o->kind == MLSYS__CX_COPY)
        st = mlsys_coll_cuda_copy(base[o->dbuf] + (size_t)o->doff * M.slot_bytes, base[o->abuf] + (size_t)o->aoff * M.slot_bytes, n, dtype, s);
      else
        st = mlsys_coll_cuda_reduce3(base[o->dbuf] + (size_t)o->doff * M.slot_bytes, base[o->abuf] + (size_t)o->aoff * M.slot_bytes,
                                     base[o->bbuf] + (size_t)o->boff * M.slot_bytes, n, dtype, redop, s);
      if (st) goto done;
    }
  }
  if (in_group) {
    in_group = 0;
    MLSYS__NCCL_CHECK(comm, ncclGroupEnd());
  }
done:
  if (in_group) ncclGroupEnd();   /* closes the group after a failed call; its own error is already recorded */
  if (M.arena) {
    ce = mlsys__cx_free(M.arena, s);
    if (ce != cudaSuccess && !st) st = mlsys_set_error(MLSYS_ERR_CUDA, "NCCL executor: freeing scratch and staging: %s", cudaGetErrorString(ce));
  }
  mlsys__cx_plan_free(&pl);
  return st;
}

/* The §5.3 profiler for the link rank → peer (both ranks call it, each with its own rank; the lower rank sends).
   For each size sizes[i] (bytes) it times, with cudaEvents on s, nburst sends of sizes[i] one after the other
   (each its own NCCL operation: T_seq = n·(α + β·s)) and one send of nburst·sizes[i] bytes (T_bat = α + n·β·s);
   t_seq_us[i], t_bat_us[i] are means over 5 repetitions after one warm-up, in µs. Feed them, with n = nburst
   and sizes in MB, to mlsys_coll_fit_alpha_beta. Synchronises s. Each rank must be driven by its own process or
   thread: the sends and receives are not grouped, so one thread calling it for both ranks would deadlock. */
static mlsys_status mlsys_coll_profile_link(ncclComm_t comm, int rank, int peer, const size_t *sizes, int nsizes,
                                            int nburst, cudaStream_t s, double *t_seq_us, double *t_bat_us) {
  const int reps = 5;
  mlsys_status st = MLSYS_OK;
  int nranks = 0, me = -1, i, k, r, sender;
  size_t maxs = 0;
  char *buf = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaError_t ce;
  if (!comm || !sizes || !t_seq_us || !t_bat_us || nsizes < 1 || nburst < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "link profiler: needs a communicator, at least one size, nburst ≥ 1 and output arrays");
  MLSYS__NCCL_CHECK(comm, ncclCommCount(comm, &nranks));
  MLSYS__NCCL_CHECK(comm, ncclCommUserRank(comm, &me));
  if (rank != me) return mlsys_set_error(MLSYS_ERR_ARG, "link profiler: called as rank %d on the communicator's rank %d", rank, me);
  if (peer < 0 || peer >= nranks || peer == rank)
    return mlsys_set_error(MLSYS_ERR_ARG, "link profiler: peer %d must be another rank of the %d-rank communicator (this is rank %d)", peer, nranks, rank);
  for (i = 0; i < nsizes; i++) {
    if (sizes[i] == 0 || sizes[i] > ((size_t)1 << 34) / (size_t)nburst)
      return mlsys_set_error(MLSYS_ERR_ARG, "link profiler: size %zu × burst %d out of range (1 B … 16 GiB)", sizes[i], nburst);
    if (sizes[i] > maxs) maxs = sizes[i];
  }
  sender = rank < peer;
#define MLSYS__PROF_CUDA(call)                                                                                  \
  do {                                                                                                        \
    if ((ce = (call)) != cudaSuccess) {                                                                       \
      st = mlsys_set_error(MLSYS_ERR_CUDA, "link profiler: %s: %s", #call, cudaGetErrorString(ce));           \
      goto done;                                                                                              \
    }                                                                                                         \
  } while (0)
  MLSYS__PROF_CUDA(cudaMalloc((void **)&buf, maxs * (size_t)nburst));
  MLSYS__PROF_CUDA(cudaMemset(buf, 0, maxs * (size_t)nburst));
  MLSYS__PROF_CUDA(cudaEventCreate(&e0));
  MLSYS__PROF_CUDA(cudaEventCreate(&e1));
  for (i = 0; i < nsizes; i++) {
    size_t sz = sizes[i];
    for (int batched = 0; batched < 2; batched++) {
      float ms = 0;
      for (r = -1; r < reps; r++) {      /* r = -1: warm-up (connection setup, first-touch) */
        if (r == 0) MLSYS__PROF_CUDA(cudaEventRecord(e0, s));
        if (batched) {
          if (sender) MLSYS__NCCL_CHECK(comm, ncclSend(buf, sz * (size_t)nburst, ncclInt8, peer, comm, s));
          else MLSYS__NCCL_CHECK(comm, ncclRecv(buf, sz * (size_t)nburst, ncclInt8, peer, comm, s));
        } else {
          for (k = 0; k < nburst; k++) {
            if (sender) MLSYS__NCCL_CHECK(comm, ncclSend(buf + (size_t)k * sz, sz, ncclInt8, peer, comm, s));
            else MLSYS__NCCL_CHECK(comm, ncclRecv(buf + (size_t)k * sz, sz, ncclInt8, peer, comm, s));
          }
        }
      }
      MLSYS__PROF_CUDA(cudaEventRecord(e1, s));
      MLSYS__PROF_CUDA(cudaEventSynchronize(e1));
      MLSYS__PROF_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      (batched ? t_bat_us : t_seq_us)[i] = 1e3 * (double)ms / reps;
    }
  }
#undef MLSYS__PROF_CUDA
done:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (buf) { cudaStreamSynchronize(s); cudaFree(buf); }
  return st;
}
#endif /* MLSYS_COLLECTIVE_NCCL */

#endif /* MLSYS_COLLECTIVE_KERNELS_CUH */
