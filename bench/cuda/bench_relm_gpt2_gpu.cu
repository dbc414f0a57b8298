// bench/cuda/bench_relm_gpt2_gpu.cu — ReLM's GPT-2 decode on the GPU (kernels/mlsys_relm_kernels.cuh), with its floors.
//
// A GPT-2 124M-shaped model (random initialisation: timing does not depend on the weights' values) decodes one
// sequence token by token against the device KV cache, as ReLM's search expands one node. For each context length
// the time per token is printed beside the two floors of that token's work:
//   bytes: every weight read once (wte as the tied output layer, the layer weights, one wpe row) + the K/V cache
//          rows read by attention + the new K/V rows written;
//   flops: 2 per weight multiply-add (the matmuls), 4·C per cached position per layer (q·k and the V sum).
// Batch-1 decode is a matrix-vector product per weight: memory-bound, so the memory floor is the one to beat.
// Also printed: the same decode with the log-probabilities copied back every step (what the search does), and the
// CPU forward of the same model (mlsys_relm.h, all host cores) per token, for scale.
// Then training (kernels/mlsys_relm_train_kernels.cuh): one step (forward, backward, gradient norm and clipping,
// AdamW) of the debian model's shape (L 4, C 256, 4 heads, T 256, V 50257; RESULTS §8.6) at B 4 and 16, tokens/s
// beside the floors: flops 6·N·tokens (N = every parameter, the tied wte included; attention's T² terms left out),
// against the fp32 CUDA-core rate the kernels can reach and the tf32 matrix-unit rate they do not use; bytes 36 per
// parameter (read once for the forward, the gradient written once, AdamW's 7 accesses; activations not counted).
//
// Run by build/gpu/run.sh (docs/gpu.md); `bench_relm_gpt2_gpu [steps]`. Without a device it says so and exits 0.
#define MLSYS_IMPLEMENTATION
#ifndef MLSYS_CUDA
#define MLSYS_CUDA
#endif
#include "mlsys_relm.h"
#include "kernels/mlsys_relm_kernels.cuh"
#include "kernels/mlsys_relm_train_kernels.cuh"
#include "bench/cuda/gpu_roofline.cuh"

#include <unistd.h>

#define TRY(call)                                                                    \
  do {                                                                               \
    mlsys_status s_ = (call);                                                        \
    if (s_ != MLSYS_OK) {                                                            \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, mlsys_last_error()); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char **argv) {
  if (mlsys_cuda_device_count() == 0) { printf("skipped: no CUDA device%s%s\n", *mlsys_last_error() ? ": " : "", mlsys_last_error()); return 0; }
  const int steps = argc > 1 ? atoi(argv[1]) : 512;
  gpu_roof roof;
  cudaError_t ce = gpu_roof_measure(&roof);
  if (ce != cudaSuccess) { printf("FAIL: measuring the ceilings: %s\n", cudaGetErrorString(ce)); return 1; }
  gpu_roof_print(&roof);

  const mlsys_relm_gpt2_config c = {1024, 50257, 50304, 12, 12, 768};
  mlsys_relm_gpt2_desc d = {0, 0};
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  d.threads = nc > 0 ? (int)nc : 1;
  mlsys_relm_gpt2 *m = NULL;
  mlsys_relm_gpt2_cuda *g = NULL;
  TRY(mlsys_relm_gpt2_random(&c, 1, &d, &m));
  TRY(mlsys_relm_gpt2_cuda_create(m, &g));
  const double C = c.n_embd, L = c.n_layer, V = c.vocab_size;
  // weights a token reads: wte (V rows used by the output layer; the embedding row is one of them), one wpe row,
  // per layer 2 LayerNorms (4C), qkv (3C·C + 3C), attention projection (C·C + C), fc (4C·C + 4C), fc projection
  // (4C·C + C), and the final LayerNorm (2C)
  const double w_layer = 4 * C + 3 * C * C + 3 * C + C * C + C + 4 * C * C + 4 * C + 4 * C * C + C;
  const double weights = V * C + C + L * w_layer + 2 * C;
  const double mac_layer = 3 * C * C + C * C + 4 * C * C + 4 * C * C;   // multiply-adds of the matmuls per layer
  printf("GPT-2 124M shape (L %d, NH %d, C %d, V %d; %.1f M weights read per token), batch 1, fp32\n", c.n_layer,
         c.n_head, c.n_embd, c.vocab_size, weights / 1e6);

  int32_t *toks = (int32_t *)malloc((size_t)steps * sizeof(int32_t));
  mlsys_rng r;
  mlsys_rng_seed(&r, 5);
  for (int t = 0; t < steps; t++) toks[t] = (int32_t)mlsys_rng_below(&r, (uint64_t)c.vocab_size);
  float *lp = (float *)malloc((size_t)c.vocab_size * sizeof(float));
  const int marks[] = {1, 64, 128, 256, 512, 1023};
  // decode without copying anything back: the device's own rate (append synchronises every step)
  for (int copy = 0; copy < 2; copy++) {
    printf(copy ? "decode, log-probabilities copied to the host every step (ReLM's use):\n"
                : "decode, nothing copied back (each step still ends with a device synchronisation):\n");
    mlsys_relm_gpt2_cuda_reset(g);
    TRY(mlsys_relm_gpt2_cuda_append(g, toks[0], NULL, copy ? lp : NULL));   // warm-up: module load, first launch
    mlsys_relm_gpt2_cuda_reset(g);
    double t0 = mlsys_now(), tprev = t0;
    int prev = 0;
    for (int t = 0; t < steps && t < c.max_seq_len; t++) {
      TRY(mlsys_relm_gpt2_cuda_append(g, toks[t], NULL, copy ? lp : NULL));
      for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++)
        if (t + 1 == marks[k] && t + 1 > prev) {
          double now = mlsys_now(), n = t + 1 - prev, per = (now - tprev) / n;
          double pm = 0.5 * (prev + t + 2);   // mean context (positions attended) over the window: p + 1 at p
          double bytes = 4 * (weights + 2 * L * pm * C + 2 * L * C) + (copy ? 4 * V : 0);
          double flops = 2 * (L * mac_layer + V * C) + 4 * L * pm * C;
          char what[96];
          snprintf(what, sizeof what, "positions %d..%d, per token (%.0f tok/s)", prev, t, 1.0 / per);
          gpu_roof_line(&roof, what, per, bytes, flops);
          prev = t + 1;
          tprev = now;
        }
    }
    printf("  mean over %d positions: %.0f tokens/s\n", prev, prev / (tprev - t0));
  }
  // the CPU forward of the same weights, per token, for scale (cached decode of 32 tokens)
  {
    mlsys_relm_gpt2_cache *cc = NULL;
    TRY(mlsys_relm_gpt2_cache_create(m, &cc));
    const int n = 32;
    double t0 = mlsys_now();
    for (int t = 0; t < n; t++) TRY(mlsys_relm_gpt2_cache_append(cc, toks[t], lp));
    double dt = mlsys_now() - t0;
    printf("CPU (mlsys_relm.h, %d threads): %.1f tokens/s over positions 0..%d; GPU/CPU at the same positions: see "
           "the first rows above\n", d.threads, n / dt, n - 1);
    mlsys_relm_gpt2_cache_free(cc);
  }
  free(toks);
  free(lp);
  mlsys_relm_gpt2_cuda_free(g);
  mlsys_relm_gpt2_free(m);

  // training steps at the debian model's shape
  {
    const mlsys_relm_gpt2_config tc = {256, 50257, 50304, 4, 4, 256};
    const int T = 256, Bs[] = {4, 16}, timed = 10;
    mlsys_relm_gpt2 *tm = NULL;
    size_t np;
    TRY(mlsys_relm_gpt2_random(&tc, 2, &d, &tm));
    mlsys_relm_gpt2_params(tm, &np);
    printf("training step (forward, backward, norm + clipping, AdamW), L %d C %d NH %d T %d V %d, %.2f M parameters, fp32:\n", tc.n_layer,
           tc.n_embd, tc.n_head, T, tc.vocab_size, (double)np / 1e6);
    for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++) {
      const int B = Bs[bi], N = B * T;
      mlsys_relm_gpt2_cuda_train *tr = NULL;
      int32_t *in = (int32_t *)malloc((size_t)N * sizeof(int32_t)), *tg = (int32_t *)malloc((size_t)N * sizeof(int32_t));
      double loss = 0, first = 0, nrm = 0;
      for (int i = 0; i < N; i++) { in[i] = (int32_t)mlsys_rng_below(&r, (uint64_t)tc.vocab_size); tg[i] = (in[i] * 7 + 1) % tc.vocab_size; }
      TRY(mlsys_relm_gpt2_cuda_train_create(tm, B, T, &tr));
      TRY(mlsys_relm_gpt2_cuda_train_step(tr, in, tg, 1e-3, NULL, &first, &nrm));   // warm-up: module load, first launches
      double t0 = mlsys_now();
      for (int s = 0; s < timed; s++) TRY(mlsys_relm_gpt2_cuda_train_step(tr, in, tg, 1e-3, NULL, &loss, &nrm));   // each step synchronises
      const double per = (mlsys_now() - t0) / timed;
      char what[96];
      snprintf(what, sizeof what, "B %d x T %d: per step (%.0f tok/s)", B, T, N / per);
      gpu_roof_line(&roof, what, per, 36.0 * (double)np, 6.0 * (double)np * N);
      printf("  B %d: %.0f training tokens/s; loss of the repeated batch %.4f -> %.4f over %d steps\n", B, N / per, first, loss, timed + 1);
      mlsys_relm_gpt2_cuda_train_free(tr);
      free(in);
      free(tg);
    }
    mlsys_relm_gpt2_free(tm);
  }
  return 0;
}
