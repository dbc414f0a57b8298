/* examples/cloud_basics.c — a first program with mlsys_cloud.h (Srift: which cloud VMs to rent for data-parallel
   training, under a time limit and a budget).

   The seed paper's case study 3: train ShuffleNet v2 for 1000 iterations at global batch 6144 on spot VMs, with 4
   p3.8xlarge, 8 g3.8xlarge and 8 g4dn.8xlarge available, within 10 minutes and $3. The profiles
   (tests/data/cloud/profile_shufflenet_case3.json) hold the network's real layer list and compute curves calibrated
   to two of the paper's predictions (tools/cloud_case_profiles.py); the catalogue (tests/data/cloud/instances.csv)
   holds the paper's spot prices. The program loads both, simulates one mix, then asks Srift for the cheapest mix
   that meets both limits and compares it with the cost-aware (CAP) and throughput-aware (TAP) policies.
   Build: make build/examples/cloud_basics; run from the repository root: build/examples/cloud_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"

#include <stdio.h>
#include <string.h>

#define TRY(call)                                                             \
  do {                                                                        \
    if ((call) != MLSYS_OK) {                                                 \
      fprintf(stderr, "cloud_basics: %s: %s\n", #call, mlsys_last_error());   \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(void) {
  static const char *const want[3] = {"p3.8xlarge", "g3.8xlarge", "g4dn.8xlarge"};
  static const int avail[3] = {4, 8, 8};
  char *text, cfg[256];
  size_t len;
  mlsys_cloud_dnn dnn;
  mlsys_cloud_itype *cat, ty[3];
  mlsys_cloud_cprof pr[3];
  mlsys_cloud_sim sim;
  mlsys_cloud_problem prob;
  mlsys_cloud_simres r;
  mlsys_cloud_plan srift, cap, tap;
  int ncat, i, j, counts[3] = {4, 8, 8}, batches[3] = {1024, 128, 128};

  TRY(mlsys_read_file("tests/data/cloud/profile_shufflenet_case3.json", &text, &len));
  TRY(mlsys_cloud_dnn_load(text, len, "profile_shufflenet_case3.json", &dnn));
  mlsys_free(text);
  TRY(mlsys_read_file("tests/data/cloud/instances.csv", &text, &len));
  TRY(mlsys_cloud_catalog_load(text, len, "instances.csv", 1 /* spot prices */, &cat, &ncat));
  mlsys_free(text);
  for (i = 0; i < 3; i++) { /* the three offers, their availability and the network's profile on each */
    for (j = 0; j < ncat && strcmp(cat[j].name, want[i]); j++) {}
    if (j == ncat || !mlsys_cloud_dnn_find(&dnn, want[i])) {
      fprintf(stderr, "cloud_basics: %s missing from the catalogue or the profile\n", want[i]);
      return 1;
    }
    ty[i] = cat[j];
    ty[i].cap = avail[i];
    pr[i] = *mlsys_cloud_dnn_find(&dnn, want[i]);
  }
  memset(&sim, 0, sizeof sim); /* Monte Carlo stragglers (1000 iterations), Eq. 2 bandwidth sharing */
  sim.ntypes = 3, sim.types = ty, sim.prof = pr;

  TRY(mlsys_cloud_simulate(&sim, counts, batches, &r));
  printf("%s, %d layers. One mix, 4 p3 at 1024 + 8 g3 and 8 g4dn at 128 per VM:\n", dnn.dnn, dnn.nlayers);
  printf("  %.3f s/iter = forward %.3f + max(backward %.3f, allreduce tail %.3f)\n\n", r.t_iter, r.t_fw, r.t_bw, r.t_pe);

  memset(&prob, 0, sizeof prob);
  prob.global_batch = 6144, prob.iters = 1000, prob.time_limit_s = 600, prob.budget = 3;
  prob.goal = MLSYS_CLOUD_MIN_COST;
  TRY(mlsys_cloud_optimize(&sim, &prob, &srift));
  TRY(mlsys_cloud_plan_cap(&sim, &prob, &cap));
  TRY(mlsys_cloud_plan_tap(&sim, &prob, &tap));
  printf("1000 iterations at global batch 6144 within 600 s and $3 (the paper predicted 378 s and $2.72 for Srift):\n");
  mlsys_cloud_plan_format(&sim, &srift, cfg, sizeof cfg);
  printf("  Srift %-34s %6.0f s  $%.2f  %s\n", cfg, srift.total_time_s, srift.total_cost, srift.feasible ? "ok" : "over");
  mlsys_cloud_plan_format(&sim, &cap, cfg, sizeof cfg);
  printf("  CAP   %-34s %6.0f s  $%.2f  %s\n", cfg, cap.total_time_s, cap.total_cost, cap.feasible ? "ok" : "over");
  mlsys_cloud_plan_format(&sim, &tap, cfg, sizeof cfg);
  printf("  TAP   %-34s %6.0f s  $%.2f  %s\n", cfg, tap.total_time_s, tap.total_cost, tap.feasible ? "ok" : "over");
  printf("  Srift: %.2fx CAP's throughput at %.2fx less cost (the paper: 1.99x, 1.42x)\n", cap.t_iter / srift.t_iter,
         cap.total_cost / srift.total_cost);

  mlsys_free(cat);
  mlsys_cloud_dnn_free(&dnn);
  return 0;
}
