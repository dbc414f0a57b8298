// tests/cuda/cuda_test.h — what the tests/test.h-style CUDA tests share: whether there is a device (and why not,
// for the skip line run.sh reads), NEED_DEVICE() to skip a device test, and CUDA_OK(call) to fail one on a CUDA error.
// Include after tests/test.h and mlsys_common.h with MLSYS_CUDA.
#ifndef MLSYS_TESTS_CUDA_TEST_H
#define MLSYS_TESTS_CUDA_TEST_H

static char no_device_why[300];   // why there is no device: empty when the runtime simply found none
static int have_device(void) {
  static int n = -1;
  if (n < 0) {
    char desc[512];
    mlsys_clear_error();
    n = mlsys_cuda_device_count();
    if (n == 0 && *mlsys_last_error()) snprintf(no_device_why, sizeof no_device_why, ": %s", mlsys_last_error());
    if (n > 0 && mlsys_cuda_describe(0, desc, sizeof desc) == MLSYS_OK) printf("  device: %s\n", desc);
  }
  return n > 0;
}
#define NEED_DEVICE() \
  do { if (!have_device()) SKIP("no CUDA device%s", no_device_why); } while (0)
#define CUDA_OK(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      test__fail(__FILE__, __LINE__, "%s: %s", #call, cudaGetErrorString(e_));                         \
      longjmp(test__env, 1);                                                                           \
    }                                                                                                  \
  } while (0)

#endif
