/* bench/bench_contracode_train.c — MoCo pre-training steps/s (mlsys_contracode.h section 6) beside PyTorch
   (bench/peers/contracode_moco_torch.py; bench/RESULTS.md §17.1).

   build/bench_contracode_train [--encoder tiny-transformer|tiny-bilstm|bow|all] [--threads N|all] [--steps N]
                                [--warmup W] [--runs R] [--B 32] [--T 128] [--K 4096] [--vocab 8000]

   One step = mlsys_contracode_moco_step on B (query, key) pairs of seeded random ids, every row full length (T), so
   padding plays no part: momentum update of the key encoder, its train-mode forward (dropout 0.1), the query
   encoder's forward and backward, InfoNCE against the K-key queue, Adam, enqueue. Per run: a fresh model, W warm-up
   steps (default 2), then N timed steps (default 20); R runs (default 3), the median run is printed. Defaults:
   all three encoders, 1 and 2 threads (1 = no pool, the CLI's choice; N ≥ 2 = an N-thread pool).

   GFLOP/s counts only the dense work, per step: query forward F, its backward 2F, key forward F, so 4F; plus
   InfoNCE (logits B×(K+1)×d_rep forward, the same again for ∂q). F = 2·(weights each token meets)·B·T + attention
   + head:
     Transformer: weights per token per layer 4d² + 2d·ff (in-projection, out-projection, FFN); attention
                  2·2·T·d per token per layer (QKᵀ and AV); embedding lookups, LayerNorm, softmax, dropout counted 0.
     BiLSTM:      per token and direction 4h·(in + h), in = d for layer 0 and 2h after (w_ih and w_hh); gates'
                  elementwise work counted 0.
     BOW:         the mean, d adds per token.
     head:        2·(P·d + d·d_rep) per sequence (P = pooled dim).
   Adam, the momentum update and the elementwise work are left out, so the GFLOP/s are a floor on the work done. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "bench/bench_machine.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* dense FLOPs of one forward of the encoder + head over B rows of T tokens (header comment) */
static double fwd_flops(const mlsys_contracode_enc_cfg *c, int B, int T) {
  double tok = (double)B * T, d = c->d_model, P = mlsys_contracode_enc_pooled_dim(c), f = 0;
  int l;
  if (c->type == MLSYS_CONTRACODE_ENC_TRANSFORMER)
    f = c->n_layers * (2.0 * (4 * d * d + 2 * d * c->d_ff) * tok + 4.0 * T * d * tok);
  else if (c->type == MLSYS_CONTRACODE_ENC_BILSTM)
    for (l = 0; l < c->n_layers; l++) f += 2 * 2.0 * 4 * d * ((l ? 2 * d : d) + d) * tok;
  else
    f = d * tok;
  return f + 2.0 * B * (P * d + d * c->d_rep);
}

static int run_one(const char *enc, int threads, int B, int T, int K, int V, int warm, int steps, double *sps,
                   double *loss, size_t *np) {
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m = NULL;
  mlsys_contracode_moco_stats st = {0, 0, 0, 0, 0};
  mlsys_pool *pool = NULL;
  mlsys_rng rng;
  int32_t *iq = (int32_t *)malloc((size_t)B * T * sizeof *iq), *ik = (int32_t *)malloc((size_t)B * T * sizeof *ik);
  int *len = (int *)malloc((size_t)B * sizeof *len), i, rc = 1;
  double tsum = 0;
  if (!iq || !ik || !len) goto done;
  if (mlsys_contracode_enc_preset(enc, V, &ec) != MLSYS_OK) goto done;
  ec.max_len = T > ec.max_len ? T : ec.max_len;
  *np = mlsys_contracode_enc_nparams(&ec, 1);
  mlsys_contracode_moco_defaults(&mc);
  mc.K = K, mc.warmup = 10, mc.total_steps = 1000000;
  if (threads > 1 && mlsys_pool_create(threads, &pool) != MLSYS_OK) goto done;
  if (mlsys_contracode_moco_new(&ec, &mc, 1, pool, &m) != MLSYS_OK) goto done;
  mlsys_rng_seed(&rng, 7);
  for (i = 0; i < B; i++) len[i] = T;
  for (i = 0; i < warm + steps; i++) {
    size_t j;
    /* fresh ids every step (ids 1..V−1; 0 is the preset's pad), drawn outside the timed call */
    for (j = 0; j < (size_t)B * T; j++) iq[j] = 1 + (int32_t)mlsys_rng_below(&rng, (uint64_t)(V - 1));
    for (j = 0; j < (size_t)B * T; j++) ik[j] = 1 + (int32_t)mlsys_rng_below(&rng, (uint64_t)(V - 1));
    if (i >= warm) {
      double t1 = now_s();
      if (mlsys_contracode_moco_step(m, iq, len, ik, len, B, T, &st) != MLSYS_OK) goto done;
      tsum += now_s() - t1;
    } else if (mlsys_contracode_moco_step(m, iq, len, ik, len, B, T, &st) != MLSYS_OK)
      goto done;
  }
  rc = 0;
done:
  if (rc) fprintf(stderr, "bench_contracode_train: %s\n", mlsys_last_error());
  mlsys_contracode_moco_free(m);
  mlsys_pool_free(pool);
  free(iq), free(ik), free(len);
  *loss = st.loss;
  *sps = rc ? 0 : steps / tsum;
  return rc;
}

int main(int argc, char **argv) {
  const char *encs[3] = {"tiny-transformer", "tiny-bilstm", "bow"}, *enc = "all";
  char model[256], date[64], load0[64], load1[64];
  int B = 32, T = 128, K = 4096, V = 8000, warm = 2, steps = 20, runs = 3, threads = 0, a, e, th;
  for (a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--encoder")) enc = argv[a + 1];
    else if (!strcmp(argv[a], "--threads")) threads = strcmp(argv[a + 1], "all") ? atoi(argv[a + 1]) : 0;
    else if (!strcmp(argv[a], "--steps")) steps = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--warmup")) warm = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--runs")) runs = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--B")) B = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--T")) T = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--K")) K = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--vocab")) V = atoi(argv[a + 1]);
    else {
      fprintf(stderr, "bench_contracode_train: unknown option %s\n", argv[a]);
      return 2;
    }
  }
  if (a < argc || B < 1 || T < 1 || K < B || K % B || V < 2 || warm < 0 || steps < 1 || runs < 1 || threads < 0) {
    fprintf(stderr, "usage: bench_contracode_train [--encoder tiny-transformer|tiny-bilstm|bow|all] [--threads N|all] "
                    "[--steps N] [--warmup W] [--runs R] [--B B] [--T T] [--K K (a multiple of B)] [--vocab V]\n");
    return 2;
  }
  bench_machine(model, sizeof model, date, sizeof date);
  bench_loadavg(load0, sizeof load0);
  printf("# bench_contracode_train: %s, %s, load %s; B %d, T %d (all rows full), K %d, V %d; %d warm-up + %d timed "
         "steps, median of %d runs\n", model, date, load0, B, T, K, V, warm, steps, runs);
  printf("%-17s %7s %10s %9s %11s %9s %10s %9s\n", "encoder", "threads", "params", "steps/s", "tokens/s", "GFLOP/s",
         "GFLOP/step", "loss");
  for (e = 0; e < 3; e++) {
    if (strcmp(enc, "all") && strcmp(enc, encs[e])) continue;
    for (th = 1; th <= 2; th++) {
      int nt = threads ? threads : th, r;
      double *sps = (double *)malloc((size_t)runs * sizeof *sps), loss = 0, med, gf;
      size_t np = 0;
      mlsys_contracode_enc_cfg ec;
      if (threads && th == 2) break;
      if (!sps) return 1;
      for (r = 0; r < runs; r++) {
        /* run_one times the step calls alone (drawing the ids is outside) */
        if (run_one(encs[e], nt, B, T, K, V, warm, steps, &sps[r], &loss, &np)) return 1;
      }
      qsort(sps, (size_t)runs, sizeof *sps, cmp_d);
      med = sps[runs / 2];
      mlsys_contracode_enc_preset(encs[e], V, &ec);
      gf = (4 * fwd_flops(&ec, B, T) + 2 * 2.0 * B * (K + 1.0) * ec.d_rep) * 1e-9;
      printf("%-17s %7d %10zu %9.3f %11.0f %9.2f %10.3f %9.4f\n", encs[e], nt, np, med, med * 2.0 * B * T, med * gf, gf,
             loss);
      fflush(stdout);
      free(sps);
    }
  }
  bench_loadavg(load1, sizeof load1);
  printf("# load at the end: %s\n", load1);
  return 0;
}
