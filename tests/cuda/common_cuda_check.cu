// Compiled by `make cuda`: the CUDA helpers of mlsys_common.h (MLSYS_CUDA) with nvcc, and a tiny kernel checked
// against its CPU reference. Without a GPU it reports that and exits 0.
#define MLSYS_COMMON_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_common.h"

__global__ static void scale_kernel(float *x, size_t n, float a) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
static void scale_cpu(float *x, size_t n, float a) {
  for (size_t i = 0; i < n; i++) x[i] *= a;
}
static mlsys_status run(int *mismatches) {
  const size_t n = 1 << 20;
  float *h = (float *)mlsys_alloc(n, sizeof(float)), *ref = (float *)mlsys_alloc(n, sizeof(float)), *d = NULL;
  if (!h || !ref) return MLSYS_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) h[i] = ref[i] = (float)i * 0.5f;
  MLSYS_CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
  MLSYS_CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  scale_kernel<<<mlsys_cuda_blocks(n, 256), 256>>>(d, n, 3.0f);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  MLSYS_CUDA_CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  MLSYS_CUDA_CHECK(cudaFree(d));
  scale_cpu(ref, n, 3.0f);
  *mismatches = 0;
  for (size_t i = 0; i < n; i++) *mismatches += h[i] != ref[i];
  mlsys_free(h);
  mlsys_free(ref);
  return MLSYS_OK;
}
int main(void) {
  char desc[256];
  int bad = 0;
  if (mlsys_cuda_device_count() == 0) { printf("no CUDA device: skipped%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  if (mlsys_cuda_describe(0, desc, sizeof desc) == MLSYS_OK) printf("device: %s\n", desc);
  if (run(&bad) != MLSYS_OK) { printf("error: %s\n", mlsys_last_error()); return 1; }
  printf("scale kernel vs CPU reference: %d mismatches\n", bad);
  return bad != 0;
}
