/* cli/mlsys.c — the `mlsys` command: dispatch to one subcommand per header, plus the shared CLI helpers.
   This file is also the one translation unit that holds the implementations of every mlsys header. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "mlsys_collective.h"
#include "mlsys_transfer.h"
#include "mlsys_pipeline.h"
#include "mlsys_pcr.h"   /* after mlsys_pipeline.h: its pipeline source is compiled too */
#include "mlsys_relm.h"
#include "mlsys_index.h"
#include "mlsys_offload.h"
#include "mlsys_cloud.h"
#include "mlsys_contracode.h"   /* the implementation for cli/contracode*.c */
#include "cli/cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static const char *usage =
    "usage: mlsys <system> <verb> [options]\n"
    "\n"
    "systems:\n"
    "  remat      optimal tensor rematerialization (Checkmate): solve, sweep, max-batch, import-dtr, ...\n"
    "  collective collective-algorithm synthesis from communication sketches (TACCL): synth, simulate, baselines\n"
    "  transfer   cloud bulk transfer over overlay relays (Skyplane): plan, pareto, cp, gateway\n"
    "  pipeline   input pipelines traced and tuned by their resource use (Plumber): run, trace\n"
    "  pcr        progressive compressed records, image fidelity chosen at read time (PCR): pack, info, read, tune\n"
    "  relm       regular-expression queries over language models (ReLM): query, tokenize, count, train, eval\n"
    "  index      a learned index tuned per workload (MAPLE): bench, tune\n"
    "  offload    learned CPU-GPU tensor offloading for dynamic networks (DyNN-Offload): simulate, plan, max-batch\n"
    "  cloud      cloud VMs for data-parallel training under a time limit or budget (Srift): plan, simulate\n"
    "  contracode JavaScript front end for contrastive code learning (ContraCode): parse, print, tokenize, check\n"
    "\n"
    "Run `mlsys <system> --help` for its verbs and options. Exit codes: 0 ok, 1 error, 2 bad usage.\n";

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    puts("mlsys 0.1");
    return CLI_OK;
  }
  if (!strcmp(argv[1], "remat")) return cmd_remat(argc, argv);
  if (!strcmp(argv[1], "collective")) return cmd_collective(argc, argv);
  if (!strcmp(argv[1], "transfer")) return cmd_transfer(argc, argv);
  if (!strcmp(argv[1], "pipeline")) return cmd_pipeline(argc, argv);
  if (!strcmp(argv[1], "pcr")) return cmd_pcr(argc, argv);
  if (!strcmp(argv[1], "relm")) return cmd_relm(argc, argv);
  if (!strcmp(argv[1], "index")) return cmd_index(argc, argv);
  if (!strcmp(argv[1], "offload")) return cmd_offload(argc, argv);
  if (!strcmp(argv[1], "cloud")) return cmd_cloud(argc, argv);
  if (!strcmp(argv[1], "contracode")) return cmd_contracode(argc, argv);
  fprintf(stderr, "mlsys: unknown system '%s'\n\n%s", argv[1], usage);
  return CLI_USAGE;
}

/* ---- shared helpers ---- */
int cli_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "mlsys %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_ERR;
}
int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "mlsys %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see `mlsys %s --help`)\n", cmd);
  return CLI_USAGE;
}

int cli_parse(int argc, char **argv, int first, cli_opt *opts, int nopts, const char *cmd) {
  int i, k;
  for (i = first; i < argc; i++) {
    const char *a = argv[i], *eq;
    size_t len;
    if (strncmp(a, "--", 2) != 0) return cli_usage_error(cmd, "unexpected argument '%s'", a);
    eq = strchr(a, '=');
    len = eq ? (size_t)(eq - a) : strlen(a);
    for (k = 0; k < nopts; k++)
      if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0) break;
    if (k == nopts) return cli_usage_error(cmd, "unknown option '%.*s'", (int)len, a);
    if (!opts[k].has_value) {
      if (eq) return cli_usage_error(cmd, "option %s takes no value", opts[k].name);
      *opts[k].value = "1";
    } else if (eq) {
      *opts[k].value = eq + 1;
    } else {
      if (i + 1 >= argc) return cli_usage_error(cmd, "option %s needs a value", opts[k].name);
      *opts[k].value = argv[++i];
    }
  }
  return CLI_OK;
}

/* Options and positional arguments after the verb (argv[3..]): positionals are taken out first (up to npos_max),
   then cli_parse sees only the options. */
int cli_parse_args(int argc, char **argv, cli_opt *opts, int nopts, const char *cmd, const char **pos, int npos_max, int *npos) {
  char **rest = (char **)malloc(sizeof(char *) * (size_t)(argc + 1));
  int i, j, k = 0, nrest = 0, rc;
  *npos = 0;
  if (!rest) return cli_fail(cmd, "out of memory");
  for (i = 0; i < 3 && i < argc; i++) rest[nrest++] = argv[i];
  for (i = 3; i < argc; i++) {
    int takes = 0, isopt = argv[i][0] == '-' && argv[i][1] == '-';
    if (isopt && !strchr(argv[i], '='))
      for (j = 0; j < nopts; j++) if (!strcmp(argv[i], opts[j].name)) takes = opts[j].has_value;
    if (isopt) {
      rest[nrest++] = argv[i];
      if (takes && i + 1 < argc) rest[nrest++] = argv[++i];
    } else if (k < npos_max) {
      pos[k++] = argv[i];
    } else {
      free(rest);
      return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  rest[nrest] = NULL;
  rc = cli_parse(nrest, rest, 3, opts, nopts, cmd);
  free(rest);
  *npos = k;
  return rc;
}

int cli_parse_double(const char *s, double *out) {
  char *e;
  if (!s || !*s) return -1;
  *out = strtod(s, &e);
  while (*e == ' ') e++;
  return *e == 0 && *out == *out ? 0 : -1;
}

int cli_parse_bytes(const char *s, uint64_t *out) {
  static const struct { const char *suffix; double mult; } units[] = {
      {"", 1},          {"b", 1},        {"k", 1e3},     {"kb", 1e3},    {"m", 1e6},
      {"mb", 1e6},      {"g", 1e9},      {"gb", 1e9},    {"t", 1e12},    {"tb", 1e12},
      {"kib", 1024.0},  {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  char *e, suf[8];
  double v;
  size_t i, n = 0;
  if (!s || !*s) return -1;
  v = strtod(s, &e);
  if (e == s || !(v >= 0)) return -1;
  while (*e == ' ') e++;
  while (*e && n < sizeof suf - 1) suf[n++] = (char)tolower((unsigned char)*e++);
  suf[n] = 0;
  if (*e) return -1;
  for (i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(suf, units[i].suffix)) {
      double b = v * units[i].mult;
      if (b >= 18446744073709551615.0) return -1;
      *out = (uint64_t)(b + 0.5);
      return 0;
    }
  return -1;
}

const char *cli_fmt_bytes(uint64_t b, char *buf, size_t len) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024 && i < 5) { v /= 1024; i++; }
  if (i == 0) snprintf(buf, len, "%llu B", (unsigned long long)b);
  else snprintf(buf, len, "%.2f %s", v, u[i]);
  return buf;
}

void cli_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

int cli_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_repo_file(const char *rel, char *out, size_t len) {
  char exe[4096];
  ssize_t n;
  snprintf(out, len, "%s", rel);
  if (cli_file_exists(rel)) return 1;
  if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    char *sl;
    exe[n] = 0;
    if ((sl = strrchr(exe, '/'))) {
      *sl = 0;   /* the binary's directory; the repository is its parent */
      if (snprintf(out, len, "%s/../%s", exe, rel) < (int)len && cli_file_exists(out)) return 1;
    }
  }
  snprintf(out, len, "%s", rel);
  return 0;
}
