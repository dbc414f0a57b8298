/* bench/cuda/gpu_roofline.cuh — the two ceilings every GPU benchmark states its time against (docs/gpu.md).

   A result means little without the hardware's limit beside it. Each benchmark measures, once, on the device it
   runs on (datasheet rates are only leads, and clocks, ECC and MIG change them):
     - memory bandwidth: a large device-to-device copy, bytes read plus bytes written over the time;
     - the fp32 rate of the CUDA cores: independent FMA chains in registers (what every mlsys kernel uses today:
       they are plain fp32 SIMT code, no tensor cores);
     - the matrix-unit rates: warp-level mma (WMMA) in registers, tf32 (the matrix unit's fp32 mode) and bf16.
       WMMA issues mma.sync; Hopper's wgmma (cuBLAS, CUTLASS) reaches about 1.3-1.6x more, so these are the rates
       a warp-level kernel can reach, not the datasheet's dense peak.
   and prints, for a piece of work of `bytes` (the fewest bytes it must move: each input read once, each output
   written once) and `flops`, the floors bytes / bandwidth and flops / rate beside the measured time.

   Header-only, static, for the .cu benchmarks under bench/cuda/ (nvcc -std=c++17 -arch=sm_90: WMMA bf16/tf32 need
   sm_80 or newer). Everything returns a cudaError_t-style status; nothing exits. */
#ifndef MLSYS_GPU_ROOFLINE_CUH
#define MLSYS_GPU_ROOFLINE_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char device[256];
  double bw;          /* bytes/s, device-to-device copy, read + written */
  double fp32;        /* flop/s, fp32 FMA on the CUDA cores (an FMA counts 2) */
  double tf32_mma;    /* flop/s, WMMA m16n16k8 tf32 with fp32 accumulation */
  double bf16_mma;    /* flop/s, WMMA m16n16k16 bf16 with fp32 accumulation */
} gpu_roof;

/* ---- the probes ---- */
__global__ static void gpu_roof_fma_kernel(float *out, int iters, float a, float b) {
  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
  for (int i = 0; i < iters; i++) {   /* eight independent chains hide the FMA latency */
    x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
    x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
  }
  float s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  if (s == 12345.678f) out[0] = s;   /* keeps the loop alive; never true for these inputs */
}

__global__ static void gpu_roof_bf16_kernel(float *out, int iters) {
  using namespace nvcuda;
  __shared__ __align__(32) __nv_bfloat16 tile[16 * 16];   /* WMMA loads need 256-bit alignment */
  for (int i = threadIdx.x; i < 256; i += blockDim.x) tile[i] = __float2bfloat16(0.001f * (float)(i % 7));
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1, c2, c3;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  wmma::fill_fragment(c0, 0.0f); wmma::fill_fragment(c1, 0.0f); wmma::fill_fragment(c2, 0.0f); wmma::fill_fragment(c3, 0.0f);
  for (int i = 0; i < iters; i++) {   /* four independent accumulators */
    wmma::mma_sync(c0, a, b, c0); wmma::mma_sync(c1, a, b, c1); wmma::mma_sync(c2, a, b, c2); wmma::mma_sync(c3, a, b, c3);
  }
  float s = 0;
  for (int i = 0; i < c0.num_elements; i++) s += c0.x[i] + c1.x[i] + c2.x[i] + c3.x[i];
  if (s == 12345.678f) out[0] = s;
}

__global__ static void gpu_roof_tf32_kernel(float *out, int iters) {
  using namespace nvcuda;
  __shared__ __align__(32) float tile[16 * 8];
  for (int i = threadIdx.x; i < 128; i += blockDim.x) tile[i] = 0.001f * (float)(i % 7);
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> c0, c1, c2, c3;
  wmma::load_matrix_sync(a, tile, 8);
  wmma::load_matrix_sync(b, tile, 8);
  for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
  for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
  wmma::fill_fragment(c0, 0.0f); wmma::fill_fragment(c1, 0.0f); wmma::fill_fragment(c2, 0.0f); wmma::fill_fragment(c3, 0.0f);
  for (int i = 0; i < iters; i++) {
    wmma::mma_sync(c0, a, b, c0); wmma::mma_sync(c1, a, b, c1); wmma::mma_sync(c2, a, b, c2); wmma::mma_sync(c3, a, b, c3);
  }
  float s = 0;
  for (int i = 0; i < c0.num_elements; i++) s += c0.x[i] + c1.x[i] + c2.x[i] + c3.x[i];
  if (s == 12345.678f) out[0] = s;
}

/* Median of `reps` timed launches of what `launch` enqueues (after one warm-up), in seconds. */
template <typename F> static cudaError_t gpu_roof_time(F launch, int reps, double *seconds) {
  cudaEvent_t e0, e1;
  cudaError_t e;
  float t[32];
  if (reps > 32) reps = 32;
  if ((e = cudaEventCreate(&e0)) || (e = cudaEventCreate(&e1))) return e;
  launch();
  if ((e = cudaDeviceSynchronize())) return e;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    if ((e = cudaEventSynchronize(e1))) return e;
    cudaEventElapsedTime(&t[r], e0, e1);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (int i = 1; i < reps; i++)   /* insertion sort: reps is small */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { float x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
  *seconds = 1e-3 * (double)t[reps / 2];
  return cudaGetLastError();
}

/* Measures the four ceilings on the current device (about a second). */
static cudaError_t gpu_roof_measure(gpu_roof *r) {
  cudaDeviceProp p;
  cudaError_t e;
  int dev = 0;
  double s;
  memset(r, 0, sizeof *r);
  if ((e = cudaGetDevice(&dev)) || (e = cudaGetDeviceProperties(&p, dev))) return e;
  snprintf(r->device, sizeof r->device, "%s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor,
           p.multiProcessorCount, (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  /* bandwidth: 1 GiB copied (far beyond the L2), counting what is read and what is written */
  const size_t bytes = (size_t)1 << 30;
  char *a = NULL, *b = NULL;
  if ((e = cudaMalloc(&a, bytes)) || (e = cudaMalloc(&b, bytes))) { cudaFree(a); return e; }
  cudaMemset(a, 1, bytes);
  cudaMemset(b, 2, bytes);
  e = gpu_roof_time([&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }, 9, &s);
  cudaFree(a);
  cudaFree(b);
  if (e) return e;
  r->bw = 2.0 * (double)bytes / s;
  /* compute: enough blocks to fill every SM several times over */
  float *out = NULL;
  if ((e = cudaMalloc(&out, sizeof(float)))) return e;
  const int blocks = p.multiProcessorCount * 8, threads = 256, it = 1 << 14;
  const double warps = (double)blocks * (threads / 32);
  e = gpu_roof_time([&] { gpu_roof_fma_kernel<<<blocks, threads>>>(out, it, 0.999f, 0.001f); }, 5, &s);
  if (!e) r->fp32 = (double)blocks * threads * it * 8 * 2 / s;
  if (!e) e = gpu_roof_time([&] { gpu_roof_tf32_kernel<<<blocks, threads>>>(out, it / 4); }, 5, &s);
  if (!e) r->tf32_mma = warps * (it / 4) * 4 * (2.0 * 16 * 16 * 8) / s;
  if (!e) e = gpu_roof_time([&] { gpu_roof_bf16_kernel<<<blocks, threads>>>(out, it / 4); }, 5, &s);
  if (!e) r->bf16_mma = warps * (it / 4) * 4 * (2.0 * 16 * 16 * 16) / s;
  cudaFree(out);
  return e;
}

static void gpu_roof_print(const gpu_roof *r) {
  printf("device: %s\n", r->device);
  printf("ceilings (measured here): memory %.0f GB/s (device-to-device copy, read + written); fp32 FMA %.1f TFLOP/s; "
         "matrix unit (WMMA mma.sync) tf32 %.1f, bf16 %.1f TFLOP/s\n",
         r->bw / 1e9, r->fp32 / 1e12, r->tf32_mma / 1e12, r->bf16_mma / 1e12);
}

/* One line: the work's measured time and its floors. The kernels here are fp32 CUDA-core code, so the fp32 floor
   is the one they can reach; the tf32 floor is what the same flops would need on the matrix unit. `of floor` is the
   measured time over the larger of the memory floor and the fp32 floor. */
static void gpu_roof_line(const gpu_roof *r, const char *what, double seconds, double bytes, double flops) {
  double fb = bytes / r->bw, ff = flops / r->fp32, ft = flops / r->tf32_mma, fl = fb > ff ? fb : ff;
  printf("  %-44s %10.3f us | floors: memory %9.3f us (%.3g MB)  fp32 %9.3f us  tf32-mma %9.3f us (%.3g GFLOP) "
         "| %.1fx the floor (%s-bound)\n",
         what, seconds * 1e6, fb * 1e6, bytes / 1e6, ff * 1e6, ft * 1e6, flops / 1e9, fl > 0 ? seconds / fl : 0.0,
         fb >= ff ? "memory" : "compute");
}

#endif /* MLSYS_GPU_ROOFLINE_CUH */
