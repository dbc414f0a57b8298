// tests/cuda/test_cloud_cuda.cu — the GPU parts of mlsys_cloud.h (Srift; docs/cloud.md §6): the CUDA timer of a
// profiling callback (MLSYS_CLOUD_WITH_CUDA) and, in the build test_cloud_cuda_nccl (-DMLSYS_HAVE_NCCL), the NCCL
// bandwidth probe (MLSYS_CLOUD_WITH_NCCL). Built by `make cuda`, run by build/gpu/run.sh (docs/gpu.md). Tests that
// need a device skip with "no CUDA device"; the host-side ones run everywhere.
//
//   host (always):  the timer's and the probe's argument and call-order errors, named before any CUDA or NCCL
//                   call; this file's profile-and-MAPE harness on synthetic steps (exact on an affine step, clearly
//                   wrong on a quadratic one); the GPU step's memory model against the hand count of its buffers.
//   GPU:            the SmallCNN's training step (kernels/mlsys_remat_cnn_kernels.cuh, straight-line: forward, loss,
//                   backward) as an mlsys_cloud_iter_fn timed by mlsys_cloud_cuda_timer, profiled by
//                   mlsys_cloud_profile over powers of two up to the Bmax that a memory limit (or a cudaMalloc
//                   failure) sets: every report positive and finite with 0 ≤ stamps ≤ t_bw non-decreasing; the
//                   ready fractions in [0, 1], non-decreasing, fc2's early and conv1's at the end; the PWL model's
//                   fw+bw MAPE at the powers of two between its samples printed beside the seed's 4.4 % (Table 6)
//                   and held under 30 % (a broken timer fails that); the gradients of one step equal the CPU
//                   reference (examples/remat_cnn_layers.h) within 1e-5 of the largest, at batch 8 and 64.
//   NCCL (GPU):     a 1-rank communicator (ncclCommInitAll): an allreduce of a small buffer equals its input; the
//                   probe from 4 B to 64 MiB with verify (rows filled, times positive, busbw 0 for n = 1, printed
//                   as CSV), and with 4 allreduces in flight.
//
// MLSYS_CLOUD_GPU_MEM_MIB (default 512) is the memory limit of the profiled step: Bmax = 1024 at 512 MiB.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#define MLSYS_CLOUD_WITH_CUDA
#ifdef MLSYS_HAVE_NCCL   // set by the Makefile's rule for test_cloud_cuda_nccl when NCCL is installed
#define MLSYS_CLOUD_WITH_NCCL
#endif
#include "mlsys_cloud.h"
#include "mlsys_remat.h"
#include "kernels/mlsys_remat_cnn_kernels.cuh"
#include "tests/test.h"

#include "tests/cuda/cuda_test.h"

#include <stdlib.h>

#define NPARAM_LAYERS 4   // fc2, fc1, conv2, conv1: the layers with parameters, in backward order

// ---------------------------------------------------------------------------------------------------------------
// The profile-and-MAPE harness (shared by the synthetic steps and the GPU step)
// ---------------------------------------------------------------------------------------------------------------
// Times fn (2 warm-ups, then the mean of 10) at every power of two strictly between 1 and Bmax that is not one of
// the PWL's sample batches, and gives the PWL model's MAPE there: forward, backward, fw+bw. Returns the number of
// batches (0 when there are none), or -1 when fn failed.
static int pwl_mape(mlsys_cloud_iter_fn fn, void *ud, const mlsys_cloud_cprof *p, int print, double mape[3]) {
  int n = 0;
  mape[0] = mape[1] = mape[2] = 0;
  if (print) printf("    %6s %10s %10s %10s %10s %9s\n", "batch", "fw ms", "PWL fw", "bw ms", "PWL bw", "fw+bw err");
  for (int B = 2; B < p->bmax; B *= 2) {
    int sample = 0;
    for (int k = 0; k < p->npts; k++) sample |= p->b[k] == B;
    if (sample) continue;
    double fw = 0, bw = 0;
    for (int it = 0; it < 12; it++) {
      double f1 = 0, b1 = 0;
      if (fn(ud, B, &f1, &b1, NULL) != 0) return -1;
      if (it >= 2) fw += f1 / 10, bw += b1 / 10;
    }
    double pf = mlsys_cloud_cprof_fw(p, B), pb = mlsys_cloud_cprof_bw(p, B), e = fabs(pf + pb - (fw + bw)) / (fw + bw);
    mape[0] += fabs(pf - fw) / fw, mape[1] += fabs(pb - bw) / bw, mape[2] += e;
    if (print) printf("    %6d %10.4f %10.4f %10.4f %10.4f %8.2f%%\n", B, 1e3 * fw, 1e3 * pf, 1e3 * bw, 1e3 * pb, 100 * e);
    n++;
  }
  for (int k = 0; n && k < 3; k++) mape[k] /= n;
  return n;
}

// Synthetic steps: t_fw = a + b·B (+ q·B²), t_bw = 2·t_fw, layer l ready at (l+1)/4 of the backward; B > 700 does
// not fit (so Bmax = 512 among powers of two).
typedef struct { double q; } synth;
static int synth_iter(void *ud, int B, double *t_fw, double *t_bw, double *stamps) {
  const synth *s = (const synth *)ud;
  if (B > 700) return 1;
  *t_fw = 1e-3 + 2e-6 * B + s->q * B * B;
  *t_bw = 2 * *t_fw;
  for (int l = 0; stamps && l < NPARAM_LAYERS; l++) stamps[l] = (l + 1) / 4.0 * *t_bw;
  return 0;
}

TEST(profile_harness_on_synthetic_steps) {
  mlsys_cloud_profile_opts o = {NPARAM_LAYERS, 4096, 1, 2, 10};
  mlsys_cloud_cprof p;
  double rf[NPARAM_LAYERS], mape[3];
  synth s = {0};
  REQUIRE_OK(mlsys_cloud_profile(synth_iter, &s, &o, &p, rf));
  CHECK_EQ_INT(p.bmax, 512);
  CHECK_EQ_INT(p.npts, 4);
  for (int l = 0; l < NPARAM_LAYERS; l++) CHECK_NEAR(rf[l], (l + 1) / 4.0, 1e-12);
  CHECK_EQ_INT(pwl_mape(synth_iter, &s, &p, 0, mape), 8);   // 2, 4, ..., 256 (none is a sample: 1, 171, 341, 512)
  for (int k = 0; k < 3; k++) CHECK_MSG(mape[k] < 1e-12, "an affine step: MAPE %d is %g", k, mape[k]);
  s.q = 1e-8;   // curved: the PWL misses between its samples
  REQUIRE_OK(mlsys_cloud_profile(synth_iter, &s, &o, &p, rf));
  CHECK_EQ_INT(pwl_mape(synth_iter, &s, &p, 0, mape), 8);
  CHECK_MSG(mape[2] > 0.01, "a quadratic step: fw+bw MAPE %g should be above 1%%", mape[2]);
}

// ---------------------------------------------------------------------------------------------------------------
// The timer's argument and call-order errors (no CUDA call is reached)
// ---------------------------------------------------------------------------------------------------------------
TEST(timer_errors_on_host) {
  mlsys_cloud_cuda_timer t;
  double fw, bw;
  memset(&t, 0, sizeof t);
  CHECK_EQ_INT(mlsys_cloud_cuda_timer_init(NULL, 1, 0), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_cuda_timer_init(&t, -1, 0), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "-1 layers");
  CHECK_EQ_INT(t.state, 0);
  CHECK_EQ_INT(mlsys_cloud_cuda_fw_start(&t), MLSYS_ERR_ARG);   // a timer never initialised
  CHECK_CONTAINS(mlsys_last_error(), "not initialised");
  CHECK_EQ_INT(mlsys_cloud_cuda_fw_start(NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no timer");
  t.state = 1, t.nlayers = 2;   // as init leaves it (the events are never reached below)
  CHECK_EQ_INT(mlsys_cloud_cuda_fw_end(&t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "fw_end while the timer is idle");
  CHECK_EQ_INT(mlsys_cloud_cuda_layer_ready(&t, 0), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_cuda_bw_end(&t), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_cuda_timer_read(&t, &fw, &bw, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "read while the timer is idle");
  t.state = 3, t.next = 0;      // in the backward pass, no layer marked yet
  CHECK_EQ_INT(mlsys_cloud_cuda_layer_ready(&t, 1), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "layer 0 of 2 is next");
  CHECK_EQ_INT(mlsys_cloud_cuda_bw_end(&t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "layer 0 of 2 was never marked ready");
  t.next = 2;
  CHECK_EQ_INT(mlsys_cloud_cuda_layer_ready(&t, 2), MLSYS_ERR_ARG);   // past the last layer
  CHECK_CONTAINS(mlsys_last_error(), "all 2 layers are marked already");
  CHECK_EQ_INT(mlsys_cloud_cuda_timer_read(&t, &fw, &bw, NULL), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_cuda_timer_read(&t, NULL, &bw, NULL), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "t_fw and t_bw are required");
  memset(&t, 0, sizeof t);
  mlsys_cloud_cuda_timer_free(&t);   // a zeroed timer: nothing to destroy
  mlsys_cloud_cuda_timer_free(NULL);
}

// ---------------------------------------------------------------------------------------------------------------
// The SmallCNN training step on the GPU as an mlsys_cloud_iter_fn
// ---------------------------------------------------------------------------------------------------------------
typedef struct {
  uint64_t mem_limit;                // bytes the step may hold; above it the batch "does not fit"
  cnn_model shape;                   // batch 1: the layer shapes, for the memory model
  int batch;                         // the batch the buffers below are for (0: none)
  cnn_model m;                       // the host model at `batch` (seed 1: the CPU reference's parameters and data)
  cnn_gpu G;                         // its parameters, gradients, input and labels on the device
  void *act[CNN_NLAYERS];            // each layer's forward output
  float *din[CNN_NLAYERS + 1];       // [i ≥ 1]: dloss/d(layer i's input); [CNN_NLAYERS]: the loss buffer [loss, dz]
  mlsys_cloud_cuda_timer tm;
  long reports, bad, ooms;           // reports made; those breaking the timer's promises; cudaMalloc failures
  char why[320];                     // the first bad report
} gpu_step;

// Bytes the step holds at batch N: parameters and their gradients, input and labels, every layer's output, every
// input gradient but conv1's (not needed), and the loss buffer.
static uint64_t step_bytes(const cnn_model *shape, int N) {
  uint64_t b = 2 * (uint64_t)shape->nparams * sizeof(float) + (uint64_t)N * 3 * 32 * 32 * sizeof(float) +
               (uint64_t)N * sizeof(int64_t) + (1 + (uint64_t)N * shape->classes) * sizeof(float);
  for (int i = 0; i < CNN_NLAYERS; i++)
    b += cnn_forward_bytes(&shape->layer[i], N) + (i ? (uint64_t)N * cnn_layer_in_count(&shape->layer[i]) * sizeof(float) : 0);
  return b;
}
// The largest power of two whose step fits in limit (what the profile's Bmax must be when no cudaMalloc fails).
static int predicted_bmax(const cnn_model *shape, uint64_t limit) {
  int b = 0;
  for (int B = 1; B <= 4096 && step_bytes(shape, B) <= limit; B *= 2) b = B;
  return b;
}

static void gpu_step_release(gpu_step *c) {
  for (int i = 0; i < CNN_NLAYERS; i++) cudaFree(c->act[i]);
  for (int i = 0; i <= CNN_NLAYERS; i++) cudaFree(c->din[i]);
  memset(c->act, 0, sizeof c->act);
  memset(c->din, 0, sizeof c->din);
  if (c->G.m) cnn_gpu_free(&c->G);
  cnn_model_free(&c->m);
  c->batch = 0;
}
static mlsys_status gpu_step_init(gpu_step *c, uint64_t mem_limit) {
  memset(c, 0, sizeof *c);
  c->mem_limit = mem_limit;
  mlsys_status st = cnn_model_init(&c->shape, 1, 1);
  if (st == MLSYS_OK) st = mlsys_cloud_cuda_timer_init(&c->tm, NPARAM_LAYERS, 0);   // the kernels' default stream
  return st;
}
static void gpu_step_free(gpu_step *c) {
  gpu_step_release(c);
  cnn_model_free(&c->shape);
  mlsys_cloud_cuda_timer_free(&c->tm);
}

// cudaMalloc; 1 when the device is out of memory (the error cleared), -1 on another error, 0 on success.
static int dev_alloc(void **p, uint64_t bytes) {
  cudaError_t e = cudaMalloc(p, (size_t)bytes);
  if (e == cudaSuccess) return 0;
  cudaGetLastError();
  *p = NULL;
  if (e == cudaErrorMemoryAllocation) return 1;
  mlsys_set_error(MLSYS_ERR_CUDA, "cudaMalloc of %llu bytes: %s", (unsigned long long)bytes, cudaGetErrorString(e));
  return -1;
}

// The buffers of batch B: 0, 1 (does not fit: over the memory limit, or a cudaMalloc failed) or -1.
static int gpu_step_setup(gpu_step *c, int B) {
  if (c->batch == B) return 0;
  gpu_step_release(c);
  if (step_bytes(&c->shape, B) > c->mem_limit) return 1;
  if (cnn_model_init(&c->m, B, 1) != MLSYS_OK) return -1;
  if (cnn_gpu_init(&c->G, &c->m) != MLSYS_OK) {
    int oom = cudaGetLastError() == cudaErrorMemoryAllocation;
    gpu_step_release(c);
    if (oom) c->ooms++, mlsys_clear_error();
    return oom ? 1 : -1;
  }
  int r = 0;
  for (int i = 0; i < CNN_NLAYERS && !r; i++) r = dev_alloc(&c->act[i], cnn_forward_bytes(&c->m.layer[i], B));
  for (int i = 1; i < CNN_NLAYERS && !r; i++)
    r = dev_alloc((void **)&c->din[i], (uint64_t)B * cnn_layer_in_count(&c->m.layer[i]) * sizeof(float));
  if (!r) r = dev_alloc((void **)&c->din[CNN_NLAYERS], (1 + (uint64_t)B * c->m.classes) * sizeof(float));
  if (r) {
    c->ooms += r > 0;
    gpu_step_release(c);
    return r;
  }
  c->batch = B;
  return 0;
}

// One training step on the default stream, timed: forward and loss, then backward with each parameter layer's
// gradient marked ready as its kernels are enqueued.
static mlsys_status gpu_step_run(gpu_step *c, double *t_fw, double *t_bw, double *stamps) {
  const cnn_gpu *G = &c->G;
  float *loss = c->din[CNN_NLAYERS];
  mlsys_status st;
  int k = 0;
  if ((st = mlsys_cloud_cuda_fw_start(&c->tm))) return st;
  for (int i = 0; i < CNN_NLAYERS; i++)
    if ((st = cnn_gpu_forward(G, i, i ? (const float *)c->act[i - 1] : G->input, c->act[i]))) return st;
  cnn_k_softmax_xent_forward<<<1, 1>>>(loss, (const float *)c->act[CNN_FC2], G->labels, c->batch, c->m.classes);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  if ((st = mlsys_cloud_cuda_fw_end(&c->tm))) return st;
  for (int i = CNN_NLAYERS - 1; i >= 0; i--) {
    const float *dy = i == CNN_NLAYERS - 1 ? loss + 1 : c->din[i + 1];   // the loss buffer: skip the loss value
    if ((st = cnn_gpu_backward(G, i, dy, i ? (const float *)c->act[i - 1] : G->input, c->act[i], i ? c->din[i] : NULL, 1)))
      return st;
    if (c->m.layer[i].nw && (st = mlsys_cloud_cuda_layer_ready(&c->tm, k++))) return st;
  }
  if ((st = mlsys_cloud_cuda_bw_end(&c->tm))) return st;
  return mlsys_cloud_cuda_timer_read(&c->tm, t_fw, t_bw, stamps);
}

// The mlsys_cloud_iter_fn, checking every report it makes: times positive and finite, 0 ≤ stamps ≤ t_bw in order
// (1e-7 s of slack: far below the events' 0.5 µs resolution).
static int gpu_iter(void *ud, int batch, double *t_fw, double *t_bw, double *stamps) {
  gpu_step *c = (gpu_step *)ud;
  double s[NPARAM_LAYERS];
  int r = gpu_step_setup(c, batch), ok;
  if (r) return r;
  if (gpu_step_run(c, t_fw, t_bw, s) != MLSYS_OK) return -1;
  ok = *t_fw > 0 && *t_bw > 0 && isfinite(*t_fw) && isfinite(*t_bw);
  for (int l = 0; l < NPARAM_LAYERS; l++) ok &= s[l] >= (l ? s[l - 1] : 0.0) && s[l] <= *t_bw + 1e-7;
  if (!ok && !c->bad++)
    snprintf(c->why, sizeof c->why, "batch %d: t_fw %g s, t_bw %g s, layers ready at %g %g %g %g s", batch, *t_fw,
             *t_bw, s[0], s[1], s[2], s[3]);
  c->reports++;
  if (stamps) memcpy(stamps, s, sizeof s);
  return 0;
}

// The memory model against the hand count: per sample 139,816 B of layer outputs (conv1 and relu1 32,768 each,
// pool1 24,576 with its int64 indices, conv2 and relu2 16,384, pool2 12,288, flatten 4,096, fc1 and relu3 256, fc2
// 40), 115,200 B of input gradients (28,800 floats), 12,288 B of input, 8 B of label, 40 B of dloss/dlogits; fixed:
// 67,642 parameters and their gradients (541,136 B) and the loss value (4 B).
TEST(gpu_step_memory_model) {
  cnn_model shape;
  REQUIRE_OK(cnn_model_init(&shape, 1, 1));
  CHECK_EQ_INT(shape.nparams, 67642);
  CHECK_EQ_INT(step_bytes(&shape, 0), 541140);
  CHECK_EQ_INT(step_bytes(&shape, 1) - step_bytes(&shape, 0), 267352);
  CHECK_EQ_INT(step_bytes(&shape, 4096) - step_bytes(&shape, 0), 4096ull * 267352);
  CHECK_EQ_INT(predicted_bmax(&shape, 512ull << 20), 1024);   // 2048 needs 548.1 MB > 536.9 MB
  CHECK_EQ_INT(predicted_bmax(&shape, 128ull << 20), 256);
  cnn_model_free(&shape);
}

static uint64_t mem_limit_option(void) {
  const char *s = getenv("MLSYS_CLOUD_GPU_MEM_MIB");
  double mib = s && *s ? atof(s) : 512;
  return (uint64_t)((mib > 1 ? mib : 1) * 1048576.0);
}

TEST(profiled_gpu_training_step) {
  NEED_DEVICE();
  gpu_step c;
  mlsys_cloud_profile_opts o = {NPARAM_LAYERS, 4096, 1, 2, 10};
  mlsys_cloud_cprof p;
  double rf[NPARAM_LAYERS], mape[3];
  REQUIRE_OK(gpu_step_init(&c, mem_limit_option()));
  int want = predicted_bmax(&c.shape, c.mem_limit);
  mlsys_status st = mlsys_cloud_profile(gpu_iter, &c, &o, &p, rf);
  CHECK_OK(st);
  if (st != MLSYS_OK) { gpu_step_free(&c); return; }
  printf("    SmallCNN step on the GPU, memory limit %.0f MiB: Bmax %d (the limit allows %d; %ld cudaMalloc failures)\n",
         c.mem_limit / 1048576.0, p.bmax, want, c.ooms);
  for (int k = 0; k < p.npts; k++)
    printf("    B = %4.0f: forward %.4f ms, backward %.4f ms\n", p.b[k], 1e3 * p.t_fw[k], 1e3 * p.t_bw[k]);
  printf("    sigma_rel %.4f; gradients ready at %.3f %.3f %.3f %.3f of the backward (fc2, fc1, conv2, conv1)\n",
         p.sigma_rel, rf[0], rf[1], rf[2], rf[3]);
  CHECK_MSG(c.ooms ? p.bmax <= want : p.bmax == want, "Bmax %d, the memory limit allows %d", p.bmax, want);
  CHECK(p.bmax >= 64);
  for (int k = 0; k < p.npts; k++)
    CHECK_MSG(p.t_fw[k] > 0 && p.t_bw[k] > 0 && isfinite(p.t_fw[k] + p.t_bw[k]), "B = %g: %g / %g s", p.b[k],
              p.t_fw[k], p.t_bw[k]);
  for (int l = 0; l < NPARAM_LAYERS; l++) {
    CHECK_MSG(rf[l] >= 0 && rf[l] <= 1, "ready fraction %d is %g", l, rf[l]);
    if (l) CHECK_MSG(rf[l] >= rf[l - 1], "ready fractions %d, %d: %g > %g", l - 1, l, rf[l - 1], rf[l]);
  }
  CHECK_MSG(rf[0] < 0.5, "fc2's gradient (the first of the backward) ready at %g of it", rf[0]);
  CHECK_MSG(rf[NPARAM_LAYERS - 1] > 0.99, "conv1's gradient (the backward's last work) ready at %g of it",
            rf[NPARAM_LAYERS - 1]);
  int n = pwl_mape(gpu_iter, &c, &p, 1, mape);
  CHECK_MSG(n > 0, "no power of two between the samples (Bmax %d)%s%s", p.bmax, n < 0 ? ": " : "",
            n < 0 ? mlsys_last_error() : "");
  if (n > 0) {
    printf("    PWL MAPE at %d powers of two between the samples: forward %.2f%%, backward %.2f%%, fw+bw %.2f%% (the "
           "seed's Table 6 on GPUs: 7.6%% / 5.5%% / 4.4%%)\n", n, 100 * mape[0], 100 * mape[1], 100 * mape[2]);
    CHECK_MSG(mape[2] < 0.30, "fw+bw MAPE %.1f%%: a timer that measures the launches, not the kernels?", 100 * mape[2]);
  }
  CHECK(c.reports > 0);
  CHECK_MSG(c.bad == 0, "%ld of %ld reports break the timer's promises; the first: %s", c.bad, c.reports, c.why);
  gpu_step_free(&c);
}

// One profiled step's gradients and loss against the CPU reference step on the same model (seed 1, same batch).
TEST(gpu_step_gradients_equal_cpu) {
  NEED_DEVICE();
  const int batches[2] = {8, 64};
  for (int bi = 0; bi < 2; bi++) {
    const int B = batches[bi];
    gpu_step c;
    cnn_model ref;
    double fw, bw, s[NPARAM_LAYERS];
    float gloss;
    REQUIRE_OK(gpu_step_init(&c, UINT64_MAX));
    REQUIRE_OK(cnn_model_init(&ref, B, 1));
    REQUIRE_OK(cnn_reference_step(&ref));
    int r = gpu_iter(&c, B, &fw, &bw, s);
    CHECK_MSG(r == 0, "batch %d: the GPU step returned %d: %s", B, r, mlsys_last_error());
    if (r == 0) {
      float *g = (float *)malloc(ref.nparams * sizeof(float));
      REQUIRE(g);
      CUDA_OK(cudaMemcpy(g, c.G.grads, ref.nparams * sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(&gloss, c.din[CNN_NLAYERS], sizeof(float), cudaMemcpyDeviceToHost));
      double worst = 0, scale = 0;
      size_t same = 0;
      for (size_t i = 0; i < ref.nparams; i++) {
        double d = fabs((double)g[i] - (double)ref.grads[i]);
        worst = d > worst || d != d ? (d != d ? INFINITY : d) : worst;
        scale = fabs((double)ref.grads[i]) > scale ? fabs((double)ref.grads[i]) : scale;
        same += !memcmp(&g[i], &ref.grads[i], sizeof(float));
      }
      double rel = worst / (scale > 0 ? scale : 1);
      printf("    batch %2d: %.3f ms forward, %.3f ms backward; gradients max |gpu - cpu| / max |cpu| = %.2e, "
             "bit-identical %zu/%zu; loss GPU %.9g, CPU %.9g\n", B, 1e3 * fw, 1e3 * bw, rel, same, ref.nparams,
             (double)gloss, (double)ref.loss);
      CHECK_MSG(rel <= 1e-5, "batch %d: gradients differ from the CPU reference by %.2e of the largest", B, rel);
      CHECK_MSG(fabs((double)gloss - ref.loss) <= 1e-5 * fabs((double)ref.loss), "batch %d: loss %.9g vs %.9g", B,
                (double)gloss, (double)ref.loss);
      free(g);
    }
    cnn_model_free(&ref);
    gpu_step_free(&c);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The NCCL probe (test_cloud_cuda_nccl only; run.sh runs its tests whose name has "nccl")
// ---------------------------------------------------------------------------------------------------------------
#ifdef MLSYS_CLOUD_WITH_NCCL
static void nccl_bad(mlsys_cloud_probe_opts o, int max_rows, mlsys_status want, const char *needle) {
  mlsys_cloud_probe_row rows[64];
  int nrows = 99;
  CHECK_EQ_INT(mlsys_cloud_probe_nccl(NULL, 0, &o, rows, max_rows, &nrows), want);   // no communicator is reached
  CHECK_CONTAINS(mlsys_last_error(), needle);
  CHECK_EQ_INT(nrows, 0);
}

TEST(nccl_probe_errors_on_host) {
  mlsys_cloud_probe_opts o, d;
  mlsys_cloud_probe_row rows[4];
  int nrows;
  mlsys_cloud_probe_opts_default(&d);
  CHECK_EQ_INT(d.n_async, 1);
  o = d, o.min_bytes = 128, o.max_bytes = 64;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "min_bytes 128 exceeds max_bytes 64");
  o = d, o.min_bytes = 2;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "at least 4 B");
  o = d, o.max_bytes = ((size_t)1 << 30) + 1;
  nccl_bad(o, 64, MLSYS_ERR_TOO_BIG, "1 GiB");
  o = d, o.iters = 0;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "iters 0");
  o = d, o.warmup = -1;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "warmup -1");
  o = d, o.timeout_s = NAN;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "timeout_s");
  o = d, o.n_async = 65;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "n_async 65");
  o = d, o.n_async = -1;
  nccl_bad(o, 64, MLSYS_ERR_ARG, "n_async -1");
  o = d;   // 4 B .. 64 MiB: 25 sizes
  nccl_bad(o, 24, MLSYS_ERR_ARG, "max_rows 24 is fewer than the 25 sizes");
  nccl_bad(o, 25, MLSYS_ERR_ARG, "no communicator");   // good options: only then the communicator
  CHECK_EQ_INT(mlsys_cloud_probe_nccl(NULL, 0, NULL, rows, 4, &nrows), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_probe_nccl(NULL, 0, &o, NULL, 4, &nrows), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_probe_nccl(NULL, 0, &o, rows, 4, NULL), MLSYS_ERR_ARG);
}

static void check_rows(const mlsys_cloud_probe_row *rows, int nrows, size_t lo, int n_async) {
  for (int i = 0; i < nrows; i++) {
    const mlsys_cloud_probe_row *w = &rows[i];
    CHECK_MSG(w->bytes == (double)(lo << i) && w->n == 1 && w->n_async == n_async, "row %d: %g B, n %d, n_async %d", i,
              w->bytes, w->n, w->n_async);
    CHECK_MSG(w->t_s > 0 && isfinite(w->t_s), "row %d (%g B): t_s %g", i, w->bytes, w->t_s);
    CHECK_MSG(w->busbw == 0, "row %d (%g B): busbw %g on one rank (2(n-1)/n = 0)", i, w->bytes, w->busbw);
    CHECK_MSG(w->algbw > 0 && fabs(w->algbw - w->bytes / w->t_s) <= 1e-12 * w->algbw, "row %d (%g B): algbw %g", i,
              w->bytes, w->algbw);
  }
}

TEST(nccl_probe_one_rank) {
  NEED_DEVICE();
  ncclComm_t comm;
  int dev = 0, ver = 0, nrows = 0;
  ncclResult_t nr = ncclCommInitAll(&comm, 1, &dev);
  CHECK_MSG(nr == ncclSuccess, "ncclCommInitAll: %s", ncclGetErrorString(nr));
  REQUIRE(nr == ncclSuccess);
  ncclGetVersion(&ver);
  printf("    NCCL %d, 1-rank communicator\n", ver);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  {   // an allreduce over one rank is the identity: the output equals the input bit for bit
    const size_t E = 1001;
    float *in = (float *)malloc(E * 4), *out = (float *)malloc(E * 4), *din = NULL, *dout = NULL;
    mlsys_rng r;
    REQUIRE(in && out);
    mlsys_rng_seed(&r, 6);
    for (size_t i = 0; i < E; i++) in[i] = (float)mlsys_rng_normal(&r);
    CUDA_OK(cudaMalloc((void **)&din, E * 4));
    CUDA_OK(cudaMalloc((void **)&dout, E * 4));
    CUDA_OK(cudaMemcpy(din, in, E * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0xff, E * 4));
    nr = ncclAllReduce(din, dout, E, ncclFloat, ncclSum, comm, s);
    CHECK_MSG(nr == ncclSuccess, "ncclAllReduce: %s", ncclGetErrorString(nr));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(out, dout, E * 4, cudaMemcpyDeviceToHost));
    CHECK_MSG(!memcmp(in, out, E * 4), "a 1-rank allreduce of %zu floats changed them", E);
    cudaFree(din); cudaFree(dout);
    free(in); free(out);
  }
  mlsys_cloud_probe_opts o;
  mlsys_cloud_probe_row rows[32];
  mlsys_cloud_probe_opts_default(&o);   // 4 B .. 64 MiB
  o.verify = 1;
  o.timeout_s = 30;   // run.sh gives an NCCL program 60 s
  CHECK_OK(mlsys_cloud_probe_nccl(comm, s, &o, rows, 32, &nrows));
  CHECK_EQ_INT(nrows, 25);
  check_rows(rows, nrows, 4, 1);
  printf("    the probe's rows (one rank):\n");
  mlsys_cloud_probe_write_csv(rows, nrows, stdout);
  o.max_bytes = 1 << 20, o.n_async = 4;   // four allreduces in flight in one NCCL group
  CHECK_OK(mlsys_cloud_probe_nccl(comm, s, &o, rows, 32, &nrows));
  CHECK_EQ_INT(nrows, 19);
  check_rows(rows, nrows, 4, 4);
  printf("    with 4 in flight: 4 B in %.2f us, 1 MiB in %.2f us per group\n", 1e6 * rows[0].t_s, 1e6 * rows[nrows - 1].t_s);
  CUDA_OK(cudaStreamDestroy(s));
  ncclCommDestroy(comm);
}
#endif

TEST_MAIN()
