/* bench/bench_offload.c — DyNN-Offload against its baselines in simulation (bench/RESULTS.md §11).

   Traces: the eight real DTR prototype logs (tests/data/dtr/logs.zip, PyTorch runs of the DTR paper) and generated
   DyNN iterations (a child-sum Tree-LSTM over 200 link-grammar parses of real sentences, a var-LSTM over documents whose
   lengths are those sentences' word counts, var-BERT, a top-2 MoE). For each, at 1/2, 1/3, 1/4 and 1/8 of the peak
   without offloading and at PCIe 3.0 (12 GB/s) and 5.0 (50 GB/s): every policy's simulated iteration time as a
   multiple of the compute time ("-" = cannot run in that memory), and DyNN-Offload's advantage over DTR. Then the DP
   partition against the three even splits with as many blocks (seed Fig. 12, H14). Run from the repository root:
   build/bench_offload [--quick]. Prints markdown. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/dtr_logs.h"

typedef struct { const char *name; mlsys_offload_trace tr; } item;

static void row(const item *it, double frac, double gbps) {
  mlsys_offload_hw hw;
  mlsys_offload_simres r[MLSYS_OFFLOAD_POLICY_N_];
  int p;
  int64_t peak = mlsys_offload_peak_bytes(&it->tr);
  memset(&hw, 0, sizeof hw);
  hw.gpu_bytes = (int64_t)(peak * frac);
  hw.h2d_gbps = hw.d2h_gbps = gbps;
  printf("| %s | 1/%.0f | %.0f |", it->name, 1 / frac, gbps);
  for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
    if (mlsys_offload_simulate(&it->tr, &hw, p, &r[p]) != MLSYS_OK) {
      r[p].feasible = 0;
      printf(" error |");
    } else if (!r[p].feasible) printf(" - |");
    else printf(" %.2f |", r[p].time_us / r[p].compute_us);
  }
  if (r[MLSYS_OFFLOAD_POLICY_DYNN].feasible && r[MLSYS_OFFLOAD_POLICY_DTR].feasible)
    printf(" %+.0f %% |\n", 100 * (1 - r[MLSYS_OFFLOAD_POLICY_DYNN].time_us / r[MLSYS_OFFLOAD_POLICY_DTR].time_us));
  else
    printf(" |\n");
  fflush(stdout);
}

static void split_row(const item *it, double frac) {
  mlsys_offload_hw hw;
  mlsys_offload_part_opts o;
  mlsys_offload_blocks dp, b;
  int kind;
  memset(&hw, 0, sizeof hw);
  hw.gpu_bytes = (int64_t)(mlsys_offload_peak_bytes(&it->tr) * frac);
  memset(&o, 0, sizeof o);
  if (mlsys_offload_partition(&it->tr, &hw, &o, &dp) != MLSYS_OK) {
    printf("| %s | 1/%.0f | - | %s |\n", it->name, 1 / frac, mlsys_last_error());
    return;
  }
  printf("| %s | 1/%.0f | %d | %.2f |", it->name, 1 / frac, dp.k, dp.time_us / 1e3);
  for (kind = MLSYS_OFFLOAD_PART_EVEN_OPS; kind <= MLSYS_OFFLOAD_PART_EVEN_BYTES; kind++) {
    o.kind = kind;
    o.k = dp.k;
    if (mlsys_offload_partition(&it->tr, &hw, &o, &b) != MLSYS_OK) { printf(" error |"); continue; }
    printf(" %+.0f %% (%d) |", 100 * (b.time_us / dp.time_us - 1), b.k);
    mlsys_offload_blocks_free(&b);
  }
  printf("\n");
  mlsys_offload_blocks_free(&dp);
  fflush(stdout);
}

/* H5: the largest batch per policy within the seed's 200 % cap over PyTorch's time per sample at its own largest
   batch (mlsys_offload_max_batch; doubling then bisection up to `limit`). */
static void max_batch_rows(void) {
  static const struct { const char *model, *gpu_txt; int64_t gpu; int layers, seq, hidden, limit; } cfg[] = {
      {"treelstm", "8 MB", 8000000, 0, 0, 0, 1024},
      {"varbert", "16 GiB", 16LL << 30, 12, 128, 768, 8192},
      {"moe", "4 GiB", 4LL << 30, 8, 128, 0, 1024},
  };
  char *text;
  size_t len;
  mlsys_offload_tree *trees;
  int nt, c, p;
  if (mlsys_read_file("tests/data/offload/trees.txt", &text, &len) || mlsys_offload_trees_parse(text, len, "trees", &trees, &nt)) {
    fprintf(stderr, "bench_offload: %s\n", mlsys_last_error());
    return;
  }
  free(text);
  printf("\n### Largest batch within 200 %% of PyTorch's time per sample (H5; PCIe 3.0)\n\n"
         "| model | GPU | search limit | pytorch | dynn | dtr | uvm | zero | simulations |\n|---|---|---|---|---|---|---|---|---|\n");
  for (c = 0; c < (int)(sizeof cfg / sizeof cfg[0]); c++) {
    mlsys_offload_model_desc m;
    mlsys_offload_hw hw;
    mlsys_offload_max_batch_result r;
    memset(&m, 0, sizeof m);
    memset(&hw, 0, sizeof hw);
    m.model = cfg[c].model;
    m.trees = trees;
    m.n_trees = nt;
    m.layers = cfg[c].layers;
    m.seq_len = cfg[c].seq;
    m.hidden = cfg[c].hidden;
    m.seed = 1;
    hw.gpu_bytes = cfg[c].gpu;
    if (mlsys_offload_max_batch(&m, &hw, 2, cfg[c].limit, &r)) {
      printf("| %s | %s | %d | %s |\n", cfg[c].model, cfg[c].gpu_txt, cfg[c].limit, mlsys_last_error());
      continue;
    }
    printf("| %s | %s | %d |", cfg[c].model, cfg[c].gpu_txt, cfg[c].limit);
    for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++)
      if (r.batch[p]) printf(" %d (%.2fx) |", r.batch[p], (double)r.batch[p] / r.pytorch_batch);
      else printf(" - |");
    printf(" %d |\n", r.evaluations);
    fflush(stdout);
  }
  for (c = 0; c < nt; c++) mlsys_offload_tree_free(&trees[c]);
  mlsys_free(trees);
}

/* H15 / G5: mapping time on the generated networks' real programs (mlsys_offload_prog_model) and pilot inference. A
   path from decisions (varlstm: L steps; moe: layers, each with some experts), its labels cut into k even blocks,
   mapped back; the median of 201 calls per case. */
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static void map_rows(void) {
  static const struct { const char *model; int n1, n2, k; } cases[] = {
      {"varlstm", 12, 0, 4}, {"varlstm", 25, 0, 4}, {"varlstm", 48, 0, 8}, {"moe", 2, 3, 4}, {"moe", 4, 6, 8}, {"moe", 8, 5, 16},
  };
  int c, i, rep;
  double t[201];
  printf("\n### Mapper and pilot time (H15: inference 30 µs, mapping 10-15 µs; G5: mapping <= 15 µs for <= 200 rows)\n\n"
         "| program | path rows | blocks | exact | states | median µs per map |\n|---|---|---|---|---|---|\n");
  for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
    mlsys_offload_prog p;
    mlsys_offload_resolved r, m;
    int dec[64], nd = 0, k = cases[c].k, ok;
    int32_t label[160];
    if (mlsys_offload_prog_model(cases[c].model, &p)) continue;
    if (!strcmp(cases[c].model, "varlstm")) {
      dec[nd++] = cases[c].n1;
      for (i = 0; i < cases[c].n1; i++) dec[nd++] = i > 0;
    } else {
      dec[nd++] = cases[c].n1;
      for (i = 0; i < cases[c].n1; i++) dec[nd++] = cases[c].n2 + (i % 3);
    }
    if (mlsys_offload_path(&p, dec, nd, &r)) { printf("| %s | %s |\n", cases[c].model, mlsys_last_error()); mlsys_offload_prog_free(&p); continue; }
    mlsys_free(r.block_start);
    r.block_start = (int *)mlsys_alloc((size_t)k + 1, sizeof *r.block_start);
    for (i = 0; i <= k; i++) r.block_start[i] = (int)((long)r.n_rows * i / k);
    r.k = k;
    mlsys_offload_path_label(&p, &r, 16, label);
    for (rep = 0; rep < 201; rep++) {
      double t0 = mlsys_now();
      ok = mlsys_offload_map(&p, label, 16, 0, &m) == MLSYS_OK;
      t[rep] = (mlsys_now() - t0) * 1e6;
      if (rep < 200) mlsys_offload_resolved_free(&m);
    }
    qsort(t, 201, sizeof *t, cmp_dbl);
    printf("| %s (%s %d) | %d | %d | %s | %ld | %.1f |\n", cases[c].model, strcmp(cases[c].model, "moe") ? "steps" : "layers",
           cases[c].n1, r.n_rows, k, ok && m.exact ? "yes" : "no", ok ? m.states : 0L, t[100]);
    if (ok) mlsys_offload_resolved_free(&m);
    mlsys_offload_resolved_free(&r);
    mlsys_offload_prog_free(&p);
  }
  {
    /* pilot inference: the default and a configuration near the seed's 3,260 parameters */
    mlsys_offload_pilot_cfg cfg[2];
    memset(cfg, 0, sizeof cfg);
    cfg[1].d = 8; cfg[1].h = 16; cfg[1].d_out = 8; cfg[1].e_proj = 16;
    printf("\n| pilot | parameters | median µs per inference (forward + decode) |\n|---|---|---|\n");
    for (c = 0; c < 2; c++) {
      mlsys_offload_pilot *pl;
      float xe[64], xa[16], y[160];
      int32_t pr[160];
      if (mlsys_offload_pilot_create(&cfg[c], &pl)) continue;
      for (i = 0; i < 64; i++) xe[i] = (float)(i % 7) * 0.1f;
      for (i = 0; i < 16; i++) xa[i] = (float)(i % 5) * 0.2f;
      for (rep = 0; rep < 201; rep++) {
        double t0 = mlsys_now();
        for (i = 0; i < 100; i++) {
          mlsys_offload_pilot_forward(pl, xe, xa, 1, y);
          mlsys_offload_pilot_decode(pl, y, pr);
        }
        t[rep] = (mlsys_now() - t0) * 1e4;
      }
      qsort(t, 201, sizeof *t, cmp_dbl);
      printf("| %s | %zu | %.2f |\n", c ? "small (d 8, h 16, d_out 8, e_proj 16)" : "default", mlsys_offload_pilot_nparams(pl), t[100]);
      mlsys_offload_pilot_free(pl);
    }
  }
}

int main(int argc, char **argv) {
  static const char *logs[] = {"unet-6", "resnet32-56", "inceptionv4-64", "transformer-10", "tv_densenet121-84",
                               "treelstm-6", "lstm-128", "unroll_gan-512"};
  static const double fracs[] = {1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 8};
  item it[16];
  int n = 0, i, f, quick = argc > 1 && !strcmp(argv[1], "--quick");
  char *text;
  size_t len;
  mlsys_offload_tree *trees;
  int nt;
  for (i = 0; i < 8; i++) {
    if (dtr_log_extract(logs[i], &text, &len)) { fprintf(stderr, "bench_offload: cannot unzip %s\n", logs[i]); return 1; }
    if (mlsys_offload_trace_read(text, len, logs[i], MLSYS_OFFLOAD_FMT_DTR, &it[n].tr)) {
      fprintf(stderr, "bench_offload: %s\n", mlsys_last_error());
      return 1;
    }
    it[n++].name = logs[i];
    free(text);
  }
  if (mlsys_read_file("tests/data/offload/trees.txt", &text, &len) || mlsys_offload_trees_parse(text, len, "trees", &trees, &nt)) {
    fprintf(stderr, "bench_offload: %s\n", mlsys_last_error());
    return 1;
  }
  free(text);
  if (mlsys_offload_gen_treelstm(trees, 200, 300, 150, NULL, &it[n].tr) == MLSYS_OK) it[n++].name = "gen treelstm (200 trees, h 150)";
  {
    /* document lengths: the word counts of the sentences, 16 sentences per document */
    int lens[32], d, s;
    for (d = 0; d < 32; d++) {
      lens[d] = 0;
      for (s = 0; s < 16; s++) lens[d] += trees[d * 16 + s].n / 2;
    }
    if (mlsys_offload_gen_varlstm(lens, 32, 300, 256, NULL, &it[n].tr) == MLSYS_OK) it[n++].name = "gen varlstm (32 docs, h 256)";
  }
  if (mlsys_offload_gen_varbert(24, 8, 512, 1024, NULL, &it[n].tr) == MLSYS_OK) it[n++].name = "gen varbert (24 x 1024, 8 x 512)";
  if (mlsys_offload_gen_moe(8, 16, 2, 2048, 512, 1, NULL, &it[n].tr) == MLSYS_OK) it[n++].name = "gen moe (8 layers, 16 experts, top 2)";
  for (i = 0; i < nt; i++) mlsys_offload_tree_free(&trees[i]);
  mlsys_free(trees);

  printf("### Iteration time / compute time per policy\n\n| trace | GPU (of peak) | PCIe GB/s |");
  for (i = 0; i < MLSYS_OFFLOAD_POLICY_N_; i++) printf(" %s |", mlsys_offload_policy_name(i));
  printf(" DO faster than DTR |\n|---|---|---|---|---|---|---|---|---|\n");
  for (i = 0; i < n; i++)
    for (f = 0; f < 4; f++) {
      if (quick && f > 0) break;
      row(&it[i], fracs[f], 12);
      if (!quick) row(&it[i], fracs[f], 50);
    }
  printf("\n### DP partition against even splits with as many blocks (model time; PCIe 3.0)\n\n"
         "| trace | GPU | DP blocks | DP ms | even ops | even time | even bytes |\n|---|---|---|---|---|---|---|\n");
  for (i = 0; i < n; i++) split_row(&it[i], 0.5);
  for (i = 0; i < n; i++) mlsys_offload_trace_free(&it[i].tr);
  map_rows();
  if (!quick) max_batch_rows();
  return 0;
}
