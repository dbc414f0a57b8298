// bench/cuda/bench_collective_gpu.cu — mlsys_collective.h's GPU side (kernels/mlsys_collective_kernels.cuh) timed
// against its floors.
//
//   1. the elementwise kernels (copy, reduce) on 256 MiB: bytes = read + written;
//   2. the emulated executor (every rank of a program on one device): NCCL-style ring ALLGATHER, REDUCESCATTER and
//      ALLREDUCE and direct ALLTOALL on 8 ranks, 1 MiB and 64 MiB per rank, float sum. bytes = every transfer,
//      copy and reduction of the program's plan, each input read once and each output written once (a transfer is
//      a device-to-device copy here); flops = one per reduced element. On one GPU all ranks share its memory
//      bandwidth, so the memory floor is the emulation's floor;
//   3. (built with NCCL: bench_collective_gpu_nccl, argument "nccl") the NCCL executor on a 1-rank communicator
//      against stock NCCL on the same communicator and sizes: mlsys_coll_exec_nccl of a lowered 1-rank ALLGATHER
//      (chunkup 4) against ncclAllGather, and of the local program of the tests against ncclAllReduce.
//
// Run by build/gpu/run.sh (docs/gpu.md). Without a device it says so and exits 0.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#define MLSYS_COLLECTIVE_CUDA
#ifdef MLSYS_HAVE_NCCL
#define MLSYS_COLLECTIVE_NCCL
#endif
#include "mlsys_collective.h"
#include "kernels/mlsys_collective_kernels.cuh"
#include "bench/cuda/gpu_roofline.cuh"

#include <stdlib.h>

#define TRY(call)                                                                    \
  do {                                                                               \
    mlsys_status s_ = (call);                                                        \
    if (s_ != MLSYS_OK) {                                                            \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, mlsys_last_error()); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)
#define CU(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));         \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

// Median seconds of `reps` runs of launch() on the default stream, after one warm-up.
template <typename F> static double timed(F launch, int reps) {
  double s = 0;
  CU(gpu_roof_time(launch, reps, &s));
  return s;
}

static void bench_kernels(const gpu_roof *roof) {
  const size_t bytes = (size_t)256 << 20;
  char *a, *b;
  CU(cudaMalloc((void **)&a, bytes));
  CU(cudaMalloc((void **)&b, bytes));
  CU(cudaMemset(a, 0, bytes));   // zeros are valid floats; the kernels' speed does not depend on values
  CU(cudaMemset(b, 0, bytes));
  printf("elementwise kernels, 256 MiB:\n");
  const size_t nf = bytes / 4, nd = bytes / 8;
  gpu_roof_line(roof, "cudaMemcpy device-to-device", timed([&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }, 9), 2.0 * bytes, 0);
  gpu_roof_line(roof, "copy kernel (float)", timed([&] { TRY(mlsys_coll_cuda_copy(b, a, nf, MLSYS_COLL_F32, 0)); }, 9), 2.0 * bytes, 0);
  gpu_roof_line(roof, "reduce float sum (b += a)", timed([&] { TRY(mlsys_coll_cuda_reduce(b, a, nf, MLSYS_COLL_F32, MLSYS_COLL_SUM, 0)); }, 9), 3.0 * bytes, (double)nf);
  gpu_roof_line(roof, "reduce double max (b = max(b, a))", timed([&] { TRY(mlsys_coll_cuda_reduce(b, a, nd, MLSYS_COLL_F64, MLSYS_COLL_MAX, 0)); }, 9), 3.0 * bytes, (double)nd);
  gpu_roof_line(roof, "reduce int64 prod", timed([&] { TRY(mlsys_coll_cuda_reduce(b, a, nd, MLSYS_COLL_I64, MLSYS_COLL_PROD, 0)); }, 9), 3.0 * bytes, (double)nd);
  cudaFree(a);
  cudaFree(b);
}

// The plan's minimal traffic: a transfer or copy reads and writes n elements, a reduction reads 2n and writes n.
static void plan_work(const mlsys_coll_prog *p, size_t E, size_t es, double *bytes, double *flops) {
  mlsys__cx_plan pl;
  TRY(mlsys__cx_plan_build(p, &pl));
  *bytes = *flops = 0;
  for (int i = 0; i < pl.nops; i++) {
    double n = (double)pl.ops[i].cnt * (double)E;
    *bytes += (pl.ops[i].kind == MLSYS__CX_RED ? 3.0 : 2.0) * n * (double)es;
    if (pl.ops[i].kind == MLSYS__CX_RED) *flops += n;
  }
  mlsys__cx_plan_free(&pl);
}

static void program(int kind, int N, mlsys_coll_def *d, mlsys_coll_prog *p) {
  mlsys_coll_algo a;
  if (kind == MLSYS_COLL_ALLTOALL) {
    mlsys_coll_topo t;
    mlsys_coll_cost c = {1.0, 10.0};
    TRY(mlsys_coll_topo_full(N, 0, c, &t));
    TRY(mlsys_coll_algo_direct(kind, &t, 1, 65536.0, &a));
    mlsys_coll_topo_free(&t);
  } else {
    int *ring = (int *)malloc((size_t)N * sizeof(int));
    for (int i = 0; i < N; i++) ring[i] = i;
    TRY(mlsys_coll_algo_ring(kind, N, ring, 1, 1, 65536.0, &a));
    free(ring);
  }
  TRY(mlsys_coll_def_make(kind, N, a.chunkup, d));
  TRY(mlsys_coll_lower(d, &a, 1, p));
  mlsys_coll_algo_free(&a);
}

static void bench_emulated(const gpu_roof *roof) {
  const int N = 8, kinds[4] = {MLSYS_COLL_ALLGATHER, MLSYS_COLL_REDUCESCATTER, MLSYS_COLL_ALLREDUCE, MLSYS_COLL_ALLTOALL};
  const size_t sizes[2] = {(size_t)1 << 20, (size_t)64 << 20};
  printf("emulated executor, %d ranks on one device, float sum (bytes per rank = its input buffer):\n", N);
  for (int k = 0; k < 4; k++) {
    mlsys_coll_def d;
    mlsys_coll_prog p;
    program(kinds[k], N, &d, &p);
    for (int si = 0; si < 2; si++) {
      const int ic = p.gpus[0].i_chunks;
      const size_t E = sizes[si] / 4 / (size_t)ic;   // elements per slot (instances = 1)
      void **din = (void **)calloc((size_t)N, sizeof(void *)), **dout = (void **)calloc((size_t)N, sizeof(void *));
      for (int g = 0; g < N; g++) {
        CU(cudaMalloc(&din[g], (size_t)p.gpus[g].i_chunks * E * 4 + 16));
        CU(cudaMalloc(&dout[g], (size_t)p.gpus[g].o_chunks * E * 4 + 16));
        CU(cudaMemset(din[g], 0, (size_t)p.gpus[g].i_chunks * E * 4));
      }
      double bytes, flops;
      plan_work(&p, E, 4, &bytes, &flops);
      double s = timed([&] { TRY(mlsys_coll_exec_emul_cuda(&p, MLSYS_COLL_F32, MLSYS_COLL_SUM, din, dout, E, 0)); }, 7);
      char what[96];
      snprintf(what, sizeof what, "%s ring/direct, %zu MiB per rank", mlsys_coll_kind_name(kinds[k]), sizes[si] >> 20);
      gpu_roof_line(roof, what, s, bytes, flops);
      for (int g = 0; g < N; g++) { cudaFree(din[g]); cudaFree(dout[g]); }
      free(din);
      free(dout);
    }
    mlsys_coll_prog_free(&p);
    mlsys_coll_def_free(&d);
  }
}

#ifdef MLSYS_COLLECTIVE_NCCL
static void bench_nccl(const gpu_roof *roof) {
  ncclComm_t comm;
  int dev = 0, ver = 0;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) { printf("FAIL: ncclCommInitAll\n"); exit(1); }
  ncclGetVersion(&ver);
  printf("NCCL %d, 1-rank communicator (one GPU: every transfer is local):\n", ver);
  mlsys_coll_def d;
  mlsys_coll_prog p;
  mlsys_coll_algo a;
  TRY(mlsys_coll_def_make(MLSYS_COLL_ALLGATHER, 1, 4, &d));
  TRY(mlsys_coll_algo_init(&a, MLSYS_COLL_ALLGATHER, 1, 4, 4096.0));
  TRY(mlsys_coll_lower(&d, &a, 1, &p));
  mlsys_coll_algo_free(&a);
  const size_t sizes[2] = {(size_t)1 << 20, (size_t)64 << 20};
  for (int si = 0; si < 2; si++) {
    const size_t n = sizes[si] / 4, E = n / (size_t)p.gpus[0].i_chunks;
    void *in, *out;
    CU(cudaMalloc(&in, sizes[si]));
    CU(cudaMalloc(&out, sizes[si]));
    CU(cudaMemset(in, 0, sizes[si]));
    double bytes, flops;
    plan_work(&p, E, 4, &bytes, &flops);
    char what[96];
    snprintf(what, sizeof what, "mlsys_coll_exec_nccl ALLGATHER, %zu MiB", sizes[si] >> 20);
    gpu_roof_line(roof, what, timed([&] { TRY(mlsys_coll_exec_nccl(&p, 0, comm, 0, in, out, E, ncclFloat32, ncclSum)); }, 9), bytes, flops);
    snprintf(what, sizeof what, "ncclAllGather (stock), %zu MiB", sizes[si] >> 20);
    gpu_roof_line(roof, what, timed([&] { ncclAllGather(in, out, n, ncclFloat32, comm, 0); }, 9), 2.0 * sizes[si], 0);
    snprintf(what, sizeof what, "ncclAllReduce (stock), %zu MiB", sizes[si] >> 20);
    gpu_roof_line(roof, what, timed([&] { ncclAllReduce(in, out, n, ncclFloat32, ncclSum, comm, 0); }, 9), 2.0 * sizes[si], 0);
    cudaFree(in);
    cudaFree(out);
  }
  mlsys_coll_prog_free(&p);
  mlsys_coll_def_free(&d);
  ncclCommDestroy(comm);
}
#endif

int main(int argc, char **argv) {
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  {   // keep freed scratch mapped: the default pool's release threshold of 0 would unmap it after every timed run
    cudaMemPool_t mp;
    uint64_t thr = UINT64_MAX;
    if (cudaDeviceGetDefaultMemPool(&mp, 0) == cudaSuccess) cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &thr);
    cudaGetLastError();
  }
  gpu_roof roof;
  CU(gpu_roof_measure(&roof));
  gpu_roof_print(&roof);
  if (argc > 1 && !strcmp(argv[1], "nccl")) {
#ifdef MLSYS_COLLECTIVE_NCCL
    bench_nccl(&roof);
    return 0;
#else
    printf("skipped: built without NCCL\n");
    return 0;
#endif
  }
  bench_kernels(&roof);
  bench_emulated(&roof);
  return 0;
}
