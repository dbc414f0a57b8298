/* cli/cli.h — helpers shared by the `mlsys` subcommands: option parsing, byte sizes, errors.
   Exit codes (DESIGN.md): 0 success, 1 user error (one clear line on stderr), 2 bad usage. */
#ifndef MLSYS_CLI_H
#define MLSYS_CLI_H
#include <stdint.h>
#include <stdio.h>
#include "mlsys_common.h"

enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };

/* Option table: long name, whether it takes a value, where to store it (value or "1" for flags). */
typedef struct {
  const char *name;       /* "--graph" */
  int has_value;
  const char **value;     /* set to the argument (or "1" for a flag) */
} cli_opt;

/* Parse argv[first..argc) against opts (both "--name value" and "--name=value"). Unknown options and missing
   values print a message naming them and return CLI_USAGE. Non-option arguments are an error too. */
int cli_parse(int argc, char **argv, int first, cli_opt *opts, int nopts, const char *cmd);
/* The same after a verb (argv[3..]) with positional arguments mixed in: up to npos_max go to pos[] (*npos of them);
   one more is a usage error. */
int cli_parse_args(int argc, char **argv, cli_opt *opts, int nopts, const char *cmd, const char **pos, int npos_max, int *npos);

/* "123", "64MiB", "1.5GB", "2 GiB", "512k" → bytes. Returns 0 on success. */
int cli_parse_bytes(const char *s, uint64_t *out);
/* "1.15 GiB" / "812 B" into buf. */
const char *cli_fmt_bytes(uint64_t b, char *buf, size_t len);
int cli_parse_double(const char *s, double *out);
/* Print "mlsys <cmd>: <message>" to stderr and return CLI_ERR (or the given code). */
int cli_fail(const char *cmd, const char *fmt, ...) MLSYS__PRINTF(2, 3);
/* A JSON string literal of s on f (quote, backslash and control characters escaped). */
void cli_json_str(FILE *f, const char *s);
/* Whether path names a regular file. */
int cli_file_exists(const char *path);
/* rel (a file path relative to the repository root) as found below the current directory, else below the repository
   this binary was built in (build/mlsys → ..): the path goes to out and 1 is returned; 0 (out = rel) if neither. */
int cli_repo_file(const char *rel, char *out, size_t len);
int cli_usage_error(const char *cmd, const char *fmt, ...) MLSYS__PRINTF(2, 3);

/* One of the DTR paper's traces bundled in tests/data/dtr/logs.zip, by (short) name, into *buf (malloc'd); base gets
   its file name. CLI_OK, or CLI_ERR after a line naming the problem and the bundled names (cli/remat_dtr.c). */
int cli_dtr_read_bundled(const char *cmd, const char *name, char **buf, size_t *len, char *base, size_t blen);

int cmd_remat(int argc, char **argv);
/* Verbs with options of their own, each in its own file (argv[2] is the verb). */
int cmd_remat_sweep(int argc, char **argv);       /* cli/remat_sweep.c: sweep, max-batch */
int cmd_remat_max_batch(int argc, char **argv);   /* cli/remat_sweep.c */
int cmd_remat_import_dtr(int argc, char **argv);  /* cli/remat_dtr.c */
int cmd_remat_calibrate(int argc, char **argv);   /* cli/remat_calibrate.c */
int cmd_collective(int argc, char **argv);        /* cli/collective.c: synth, simulate, baselines */
int cmd_transfer(int argc, char **argv);          /* cli/transfer.c: plan, pareto; cli/transfer_cp.c: cp, gateway */
int cmd_pipeline(int argc, char **argv);          /* cli/pipeline.c: run, trace */
int cmd_pcr(int argc, char **argv);               /* cli/pcr.c: pack, info, read, tune */
int cmd_relm(int argc, char **argv);              /* cli/relm.c: query, tokenize, count, train, eval */
int cmd_index(int argc, char **argv);             /* cli/index.c: bench, tune, workload */
int cmd_offload(int argc, char **argv);           /* cli/offload.c: simulate, plan */
int cmd_cloud(int argc, char **argv);             /* cli/cloud.c: plan, simulate */
int cmd_contracode(int argc, char **argv);        /* cli/contracode.c: parse, print, tokenize */

#endif
