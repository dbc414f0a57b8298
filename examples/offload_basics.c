/* examples/offload_basics.c — a first program with mlsys_offload.h (DyNN-Offload: CPU<->GPU tensor offloading for
   dynamic networks).

   A dynamic network runs a different operator sequence for every input: a Tree-LSTM follows the sentence's parse
   tree. DyNN-Offload (HPCA 2024) splits one training iteration into execution blocks and keeps two GPU buffers:
   while block i+1 computes, block i's dirty tensors go out to CPU memory and block i+2's come in.

   This program parses real sentences' constituency trees (tests/data/offload/trees.txt: Debian package descriptions
   parsed by link-grammar), builds the trace of one Tree-LSTM training iteration over 200 of them, partitions it for a
   GPU with half the memory the iteration needs, compares the exact partition with an even split, and simulates
   DyNN-Offload against plain PyTorch (and every other policy the header has). Build: make build/examples/offload_basics;
   run from the repository root: build/examples/offload_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"

#include <stdio.h>
#include <stdlib.h>

#define TRY(call)                                                               \
  do {                                                                          \
    if ((call) != MLSYS_OK) {                                                   \
      fprintf(stderr, "offload_basics: %s: %s\n", #call, mlsys_last_error());   \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

int main(void) {
  char *text;
  size_t len;
  mlsys_offload_tree *trees;
  mlsys_offload_trace tr;
  mlsys_offload_hw hw = {0};
  mlsys_offload_part_opts po = {0};
  mlsys_offload_blocks dp, even;
  mlsys_offload_simres r;
  int n, i, p, ntrees = 200;
  int64_t peak;

  TRY(mlsys_read_file("tests/data/offload/trees.txt", &text, &len));
  TRY(mlsys_offload_trees_parse(text, len, "trees.txt", &trees, &n));
  if (n < ntrees) ntrees = n;
  /* child-sum Tree-LSTM, 300-wide GloVe vectors, 150-wide state (Tai et al. 2015 on SICK) */
  TRY(mlsys_offload_gen_treelstm(trees, ntrees, 300, 150, NULL, &tr));
  peak = mlsys_offload_peak_bytes(&tr);
  printf("Tree-LSTM over %d parsed sentences: %d operators, %d tensors, %.1f MB at the peak without offloading\n",
         ntrees, tr.n_op, tr.n_t, peak / 1e6);

  hw.gpu_bytes = peak / 2;   /* a GPU with half that; PCIe 3.0 (12 GB/s) by default */
  TRY(mlsys_offload_partition(&tr, &hw, &po, &dp));
  po.kind = MLSYS_OFFLOAD_PART_EVEN_TIME;
  po.k = dp.k;
  TRY(mlsys_offload_partition(&tr, &hw, &po, &even));
  printf("GPU %.1f MB = two buffers of %.1f MB. Exact partition: %d blocks, %.2f ms modelled; an even split by time "
         "into as many: %.2f ms (%+.0f %%)\n",
         hw.gpu_bytes / 1e6, dp.buf_bytes / 1e6, dp.k, dp.time_us / 1e3, even.time_us / 1e3,
         100 * (even.time_us / dp.time_us - 1));

  printf("\n%-8s %10s %12s %14s  %s\n", "policy", "time ms", "compute ms", "GPU peak MB", "");
  for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
    if (mlsys_offload_simulate(&tr, &hw, p, &r) != MLSYS_OK) {
      printf("%-8s %s\n", mlsys_offload_policy_name(p), mlsys_last_error());
      continue;
    }
    if (!r.feasible) printf("%-8s %10s %12s %14s  %s\n", mlsys_offload_policy_name(p), "-", "-", "-", r.why);
    else
      printf("%-8s %10.2f %12.2f %14.1f  %.2fx compute\n", mlsys_offload_policy_name(p), r.time_us / 1e3, r.compute_us / 1e3,
             r.peak_bytes / 1e6, r.time_us / r.compute_us);
  }

  mlsys_offload_blocks_free(&dp);
  mlsys_offload_blocks_free(&even);
  mlsys_offload_trace_free(&tr);
  for (i = 0; i < n; i++) mlsys_offload_tree_free(&trees[i]);
  mlsys_free(trees);
  mlsys_free(text);
  return 0;
}
