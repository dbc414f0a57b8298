/* examples/remat_cnn_impls_demo.c — the cost of every implementation of every SmallCNN layer (examples/
   remat_cnn_impls.h): median seconds of each pass, its workspace and its intermediate storage, at one batch.

   build: make build/examples/remat_cnn_impls_demo
   run:   taskset -c 1 ./build/examples/remat_cnn_impls_demo [batch=8] [reps=11] */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "examples/remat_cnn_impls.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const int batch = argc > 1 ? atoi(argv[1]) : 8, reps = argc > 2 ? atoi(argv[2]) : 11;
  cnn_model m;
  cnn_impl_cost c[CNN_IMPL_MAX_COSTS];
  int n, i;
  if (cnn_model_init(&m, batch, 1) != MLSYS_OK || cnn_impl_time(&m, reps, c, CNN_IMPL_MAX_COSTS, &n) != MLSYS_OK) {
    fprintf(stderr, "remat_cnn_impls_demo: %s\n", mlsys_last_error());
    return 1;
  }
  printf("SmallCNN, batch %d, median of %d runs\n%-8s %-10s %-16s %12s %12s %14s\n", batch, reps, "layer", "impl",
         "pass", "ms", "workspace B", "intermediate B");
  for (i = 0; i < n; i++)
    printf("%-8s %-10s %-16s %12.4f %12llu %14llu\n", m.layer[c[i].layer].name, cnn_impl_name(c[i].impl),
           cnn_pass_name(c[i].pass), 1e3 * c[i].seconds, (unsigned long long)c[i].workspace,
           (unsigned long long)c[i].intermediate);
  cnn_model_free(&m);
  return 0;
}
