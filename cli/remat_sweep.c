/* cli/remat_sweep.c — `mlsys remat sweep` and `mlsys remat max-batch` (work in progress). */
#include "mlsys_remat.h"
#include "cli/cli.h"

int cmd_remat_sweep(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("remat sweep", "not built yet");
}
int cmd_remat_max_batch(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("remat max-batch", "not built yet");
}
