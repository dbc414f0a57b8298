// tools/cuda_emu/emu.h — a CPU emulation of the small CUDA subset the ReLM kernels use, to run their tests where no
// GPU is lent (tools/cuda_emu/run.sh; tools/README.md). Each CUDA thread of a launch is an OS thread that walks the
// grid block by block (a barrier between blocks, which reuse the function-static "shared" arrays); __syncthreads and
// __syncwarp are pthread barriers, the xor shuffle goes through per-warp slots. Device memory is host memory (filled
// with 0xff bytes, NaN, so a read of something never written shows). It checks indexing, bounds and
// synchronisation, not the GPU's roundings (FMA contraction, its math library). Slow: a few minutes per test.
#pragma once
#include <thread>
#include <vector>
#include <functional>
#include <pthread.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static pthread_barrier_t emu_blk;
static pthread_barrier_t emu_warp[32];
static double emu_slots[32][32];
#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(x)
#define __restrict__
static inline void __syncthreads() { pthread_barrier_wait(&emu_blk); }
static inline void __syncwarp(unsigned = 0xffffffffu) { pthread_barrier_wait(&emu_warp[threadIdx.x / 32]); }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  emu_slots[w][l] = (double)v;
  pthread_barrier_wait(&emu_warp[w]);
  T r = (T)emu_slots[w][l ^ o];
  pthread_barrier_wait(&emu_warp[w]);
  return r;
}
static void emu_launch(std::function<void()> fn, dim3 g, dim3 b) {
  gridDim = g; blockDim = b;
  pthread_barrier_init(&emu_blk, NULL, b.x);
  for (unsigned w = 0; w < (b.x + 31) / 32; w++) pthread_barrier_init(&emu_warp[w], NULL, b.x - 32 * w < 32 ? b.x - 32 * w : 32);
  std::vector<std::thread> th;
  th.reserve(b.x);
  for (unsigned t = 0; t < b.x; t++)
    th.emplace_back([=] {
      threadIdx = dim3(t);
      for (unsigned by = 0; by < g.y; by++)
        for (unsigned bx = 0; bx < g.x; bx++) {
          blockIdx = dim3(bx, by);
          fn();
          pthread_barrier_wait(&emu_blk);   /* the block's statics (shared memory) are reused by the next block */
        }
    });
  for (auto &x : th) x.join();
  pthread_barrier_destroy(&emu_blk);
  for (unsigned w = 0; w < (b.x + 31) / 32; w++) pthread_barrier_destroy(&emu_warp[w]);
}
// the runtime
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
template <class T> static cudaError_t cudaMalloc(T **p, size_t n) { *p = (T *)malloc(n); memset(*p, 0xff, n); return 0; }   // garbage (NaN) fill
static cudaError_t cudaFree(void *p) { free(p); return 0; }
static cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int) { memcpy(d, s, n); return 0; }
static cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int) { memcpy(d, s, n); return 0; }
static cudaError_t cudaMemset(void *d, int v, size_t n) { memset(d, v, n); return 0; }
static cudaError_t cudaMemsetAsync(void *d, int v, size_t n) { memset(d, v, n); return 0; }
static cudaError_t cudaGetLastError() { return 0; }
static cudaError_t cudaDeviceSynchronize() { return 0; }
static const char *cudaGetErrorString(cudaError_t) { return "emu"; }
#define MLSYS_CUDA_CHECK(call) do { if ((call) != 0) return mlsys_set_error(MLSYS_ERR_CUDA, "emu"); } while (0)
static inline unsigned mlsys_cuda_blocks(size_t n, unsigned threads) { size_t b = (n + threads - 1) / threads; if (b < 1) b = 1; if (b > 2147483647u) b = 2147483647u; return (unsigned)b; }
static int mlsys_cuda_device_count(void) { return 1; }
static mlsys_status mlsys_cuda_describe(int, char *d, size_t n) { snprintf(d, n, "CPU emulation"); return MLSYS_OK; }
static void emu_launch(std::function<void()> fn, dim3 g, dim3 b, size_t) { emu_launch(fn, g, b); }
