/* tests/cli_run.h — running the `mlsys` binary from a test: exit code, stdout and stderr captured.
   The binary is $MLSYS_BIN (scripts/run-tests.sh sets it) or build/mlsys. Include after mlsys_common.h. */
#ifndef MLSYS_TESTS_CLI_RUN_H
#define MLSYS_TESTS_CLI_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct { int code; char *out, *err; } run_result;

static const char *bin(void) {
  const char *b = getenv("MLSYS_BIN");
  return b && *b ? b : "build/mlsys";
}

/* A shell command line with stdin from /dev/null; out/err are NULL when unreadable. Free with run_free. */
static run_result run_shell(const char *cmdline) {
  run_result r;
  char cmd[4600], outp[] = "/tmp/mlsys_cli_outXXXXXX", errp[] = "/tmp/mlsys_cli_errXXXXXX";
  int fo = mkstemp(outp), fe = mkstemp(errp), status;
  size_t len;
  memset(&r, 0, sizeof r);
  if (fo >= 0) close(fo);
  if (fe >= 0) close(fe);
  snprintf(cmd, sizeof cmd, "%s </dev/null >%s 2>%s", cmdline, outp, errp);
  status = system(cmd);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (mlsys_read_file(outp, &r.out, &len) != MLSYS_OK) r.out = NULL;
  if (mlsys_read_file(errp, &r.err, &len) != MLSYS_OK) r.err = NULL;
  unlink(outp);
  unlink(errp);
  return r;
}

/* `mlsys ARGS`, as run_shell. */
static run_result run(const char *args) {
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "%s %s", bin(), args);
  return run_shell(cmd);
}
static void run_free(run_result *r) { mlsys_free(r->out); mlsys_free(r->err); }
#endif
