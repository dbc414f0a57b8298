/* cli/remat_dtr.c — `mlsys remat import-dtr` (work in progress). */
#include "mlsys_remat.h"
#include "cli/cli.h"

int cmd_remat_import_dtr(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("remat import-dtr", "not built yet");
}
