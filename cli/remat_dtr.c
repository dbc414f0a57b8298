/* cli/remat_dtr.c — `mlsys remat import-dtr`: a DTR operator trace (simrd log) into a Checkmate graph. */
#include "mlsys_remat.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The eight traces of the DTR paper's simulated evaluation ship with the repository (tests/data/dtr/README.md: the
   simrd logs of uwsampl/dtr-prototype, kept zipped); `--trace unet-6` reads one from there with `unzip -p`. */
#define DTR_BUNDLE "tests/data/dtr/logs.zip"

/* The short name of a bundled log ("unet-6" for logs/unet-6-8000000000.0-...-default.log): up to the second '-'. */
static void dtr_short_name(const char *base, char *out, size_t len) {
  const char *d = strchr(base, '-');
  size_t k = d && strchr(d + 1, '-') ? (size_t)(strchr(d + 1, '-') - base) : strlen(base);
  snprintf(out, len, "%.*s", (int)k, base);
}

/* Reads the bundled trace NAME (a log's file name, without or with ".log", or its short name such as "unet-6")
   into *buf (malloc'd, *len bytes) and its file name into base. Returns CLI_OK, or CLI_ERR after one line on
   stderr naming the problem and the bundled names. */
int cli_dtr_read_bundled(const char *cmd, const char *name, char **buf, size_t *len, char *base, size_t blen) {
  char zip[4096], cmdline[4700], line[512], names[600] = "", match[512] = "", shortn[128];
  size_t nl = strlen(name), k, cap = 1 << 20, n = 0, r;
  int nmatch = 0;
  FILE *p;
  char *b;
  for (k = 0; k < nl; k++)
    if (!(name[k] == '-' || name[k] == '_' || name[k] == '.' || (name[k] >= '0' && name[k] <= '9') ||
          (name[k] >= 'a' && name[k] <= 'z') || (name[k] >= 'A' && name[k] <= 'Z')))
      break;
  if (nl == 0 || k < nl || name[0] == '-' || name[0] == '.')
    return cli_fail(cmd, "%s: no such file", name);
  if (!cli_repo_file(DTR_BUNDLE, zip, sizeof zip))
    return cli_fail(cmd, "%s: no such file, and no bundled traces (%s is not beside this binary's repository)",
                    name, DTR_BUNDLE);
  if (strchr(zip, '\'')) return cli_fail(cmd, "%s: cannot quote the path for unzip", zip);
  snprintf(cmdline, sizeof cmdline, "unzip -Z1 '%s' 2>/dev/null", zip);
  if (!(p = popen(cmdline, "r"))) return cli_fail(cmd, "cannot run unzip to list %s", zip);
  while (fgets(line, sizeof line, p)) {
    const char *e = line;
    size_t el;
    line[strcspn(line, "\r\n")] = 0;
    if (strncmp(e, "logs/", 5) != 0) continue;
    e += 5;
    el = strlen(e);
    if (el < 5 || strcmp(e + el - 4, ".log") != 0) continue;
    dtr_short_name(e, shortn, sizeof shortn);
    if (strlen(names) + strlen(shortn) + 3 < sizeof names)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", shortn);
    if (!strcmp(e, name) || (el == nl + 4 && !strncmp(e, name, nl)) || (el > nl && !strncmp(e, name, nl) &&
                                                                        e[nl] == '-')) {
      if (!nmatch++) snprintf(match, sizeof match, "%s", e);
    }
  }
  if (pclose(p) != 0 || !names[0])
    return cli_fail(cmd, "%s: no such file, and unzip cannot list %s (install unzip: scripts/install-deps.sh)",
                    name, zip);
  if (nmatch == 0) return cli_fail(cmd, "%s: no such file or bundled trace (bundled: %s)", name, names);
  if (nmatch > 1) return cli_fail(cmd, "%s matches %d bundled traces; name one of: %s", name, nmatch, names);
  snprintf(cmdline, sizeof cmdline, "unzip -p '%s' 'logs/%s' 2>/dev/null", zip, match);
  if (!(b = (char *)malloc(cap)) || !(p = popen(cmdline, "r"))) {
    free(b);
    return cli_fail(cmd, "cannot run unzip on %s", zip);
  }
  while ((r = fread(b + n, 1, cap - n, p)) > 0) {
    n += r;
    if (n == cap) {
      char *nb = (char *)realloc(b, cap * 2);
      if (!nb) { pclose(p); free(b); return cli_fail(cmd, "out of memory reading %s", match); }
      b = nb;
      cap *= 2;
    }
  }
  if (pclose(p) != 0 || n == 0) {
    free(b);
    return cli_fail(cmd, "unzip could not extract logs/%s from %s", match, zip);
  }
  *buf = b;
  *len = n;
  snprintf(base, blen, "%s", match);
  return CLI_OK;
}

static const char *dtr_help =
    "usage: mlsys remat import-dtr --trace FILE [--out FILE] [--to json|text] [--summary [--json]]\n"
    "                              [--whole-trace] [--keep-outputs] [--name NAME]\n"
    "\n"
    "Turns a DTR operator trace (JSON lines as written by uwsampl/dtr-prototype: CONSTANT, MEMORY, COPY, CALL,\n"
    "MUTATE, ALIAS, RELEASE, ...) into a rematerialization graph: one node per produced tensor, cost = the\n"
    "measured TIME (ns), mem = MEMORY (bytes; views 0), deps = the arguments that are nodes; constants are\n"
    "fixed memory. Forward/backward from ANNOTATE BACKWARD (else the first op named *backward*). The import\n"
    "starts at ANNOTATE START unless --whole-trace. See docs/remat.md, \"DTR traces\".\n"
    "\n"
    "  --trace FILE     the trace ('-' reads stdin), or NAME: one of the traces of the DTR paper bundled with the\n"
    "                   repository (tests/data/dtr/logs.zip, read with unzip): unet-6, resnet32-56,\n"
    "                   inceptionv4-64, transformer-10, tv_densenet121-84, treelstm-6, lstm-128, unroll_gan-512\n"
    "  --out FILE       write the graph there (default: stdout)\n"
    "  --to json|text   the graph format (default json)\n"
    "  --summary        print a report instead of the graph: counts, time, bytes, the trace's own peak and the\n"
    "                   checkpoint-all peak of the graph (--json: as one object with the keys nodes, edges,\n"
    "                   forward, backward, loss, calls, results, views, mutates, constants, unused, outputs,\n"
    "                   total_time_ns, total_bytes, fixed_bytes, output_bytes, trace_peak,\n"
    "                   trace_peak_activations, checkpoint_all_peak (activations), start_line, backward_line)\n"
    "  --whole-trace    import from line 1 even when the trace has an ANNOTATE START\n"
    "  --keep-outputs   add a node \"(outputs)\" that needs every value the program still holds at the end\n"
    "  --name NAME      the graph name (default: the file name without .log)\n"
    "\n"
    "A one-line summary always goes to stderr. Exit codes: 0 done, 1 bad trace or I/O error, 2 bad usage.\n";

int cmd_remat_import_dtr(int argc, char **argv) {
  const char *trace = NULL, *out = NULL, *to = NULL, *summary = NULL, *json = NULL, *whole = NULL, *keep = NULL;
  const char *name = NULL, *help = NULL;
  cli_opt opts[] = {
      {"--trace", 1, &trace},     {"--out", 1, &out},          {"--to", 1, &to},
      {"--summary", 0, &summary}, {"--json", 0, &json},        {"--whole-trace", 0, &whole},
      {"--keep-outputs", 0, &keep}, {"--name", 1, &name},      {"--help", 0, &help},
  };
  const char *cmd = "remat import-dtr";
  mlsys_remat_dtr_opts o;
  mlsys_remat_dtr_info in;
  mlsys_remat_graph g;
  mlsys_remat_schedule ck;
  mlsys_remat_opts ro;
  uint64_t ck_peak = 0;
  int rc, as_json = 1;
  char b1[32], b2[32], b3[32];
  FILE *f = stdout;
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd)) != CLI_OK) return rc;
  if (help) { fputs(dtr_help, stdout); return CLI_OK; }
  if (!trace) return cli_usage_error(cmd, "--trace FILE is required");
  if (to && strcmp(to, "json") && strcmp(to, "text")) return cli_usage_error(cmd, "--to must be json or text");
  if (to) as_json = !strcmp(to, "json");
  if (json && !summary) return cli_usage_error(cmd, "--json goes with --summary (the graph format is --to)");
  if (summary && (to || out)) return cli_usage_error(cmd, "--summary prints a report, not the graph: drop --to/--out");
  memset(&o, 0, sizeof o);
  o.whole_trace = whole != NULL;
  o.keep_outputs = keep != NULL;
  o.name = name;
  if (strcmp(trace, "-") != 0 && !strchr(trace, '/') && access(trace, F_OK) != 0) {
    /* no such file here: a bundled trace by name */
    char *buf = NULL, base[512];
    size_t len = 0;
    mlsys_status st;
    if ((rc = cli_dtr_read_bundled(cmd, trace, &buf, &len, base, sizeof base)) != CLI_OK) return rc;
    st = mlsys_remat_import_dtr(buf, len, base, &o, &g, &in);
    free(buf);
    if (st != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  } else if (mlsys_remat_import_dtr_file(trace, &o, &g, &in) != MLSYS_OK) {
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  fprintf(stderr, "%s: %d nodes (%d forward, %d backward%s), %d edges, %.6g ms, %s in nodes, %s fixed\n",
          g.name ? g.name : trace, in.nodes, in.forward, in.backward, in.loss >= 0 ? ", loss found" : ", no loss node",
          g.dag.nedges, in.total_time / 1e6, cli_fmt_bytes(in.total_bytes, b1, sizeof b1),
          cli_fmt_bytes(in.fixed_bytes, b2, sizeof b2));
  if (summary) {
    memset(&ro, 0, sizeof ro);
    ro.method = MLSYS_REMAT_CHECKPOINT_ALL;
    if (mlsys_remat_solve(&g, UINT64_MAX, &ro, &ck) != MLSYS_OK) {
      mlsys_remat_graph_free(&g);
      return cli_fail(cmd, "checkpoint-all: %s", mlsys_last_error());
    }
    ck_peak = ck.peak;
    mlsys_remat_schedule_free(&ck);
    if (json) {
      mlsys_json_writer w;
      mlsys_jw_init(&w, stdout, 1);
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, g.name);
      mlsys_jw_key(&w, "nodes"); mlsys_jw_i64(&w, in.nodes);
      mlsys_jw_key(&w, "edges"); mlsys_jw_i64(&w, g.dag.nedges);
      mlsys_jw_key(&w, "forward"); mlsys_jw_i64(&w, in.forward);
      mlsys_jw_key(&w, "backward"); mlsys_jw_i64(&w, in.backward);
      mlsys_jw_key(&w, "loss");
      if (in.loss >= 0) mlsys_jw_i64(&w, in.loss); else mlsys_jw_null(&w);
      mlsys_jw_key(&w, "calls"); mlsys_jw_i64(&w, in.calls);
      mlsys_jw_key(&w, "results"); mlsys_jw_i64(&w, in.results);
      mlsys_jw_key(&w, "views"); mlsys_jw_i64(&w, in.views);
      mlsys_jw_key(&w, "mutates"); mlsys_jw_i64(&w, in.mutates);
      mlsys_jw_key(&w, "constants"); mlsys_jw_i64(&w, in.constants);
      mlsys_jw_key(&w, "unused"); mlsys_jw_i64(&w, in.unused);
      mlsys_jw_key(&w, "outputs"); mlsys_jw_i64(&w, in.outputs);
      mlsys_jw_key(&w, "total_time_ns"); mlsys_jw_double(&w, in.total_time);
      mlsys_jw_key(&w, "total_bytes"); mlsys_jw_u64(&w, in.total_bytes);
      mlsys_jw_key(&w, "fixed_bytes"); mlsys_jw_u64(&w, in.fixed_bytes);
      mlsys_jw_key(&w, "output_bytes"); mlsys_jw_u64(&w, in.output_bytes);
      mlsys_jw_key(&w, "trace_peak"); mlsys_jw_u64(&w, in.trace_peak);
      mlsys_jw_key(&w, "trace_peak_activations"); mlsys_jw_u64(&w, in.trace_peak_activations);
      mlsys_jw_key(&w, "checkpoint_all_peak"); mlsys_jw_u64(&w, ck_peak);
      mlsys_jw_key(&w, "start_line"); mlsys_jw_i64(&w, in.start_line);
      mlsys_jw_key(&w, "backward_line"); mlsys_jw_i64(&w, in.backward_line);
      mlsys_jw_end(&w);
      if (mlsys_jw_finish(&w) != MLSYS_OK) { mlsys_remat_graph_free(&g); return cli_fail(cmd, "cannot write"); }
    } else {
      printf("graph %s: %d nodes, %d edges\n", g.name ? g.name : trace, in.nodes, g.dag.nedges);
      printf("  from %d CALLs (%d results, %d of them views) and %d MUTATEs; %d constants\n", in.calls, in.results,
             in.views, in.mutates, in.constants);
      printf("  %d forward, %d backward; loss node %s; split by %s\n", in.forward, in.backward,
             in.loss >= 0 ? (g.dag.name && g.dag.name[in.loss] ? g.dag.name[in.loss] : "(unnamed)") : "none",
             in.backward_line ? "ANNOTATE BACKWARD" : "op names (no BACKWARD marker)");
      printf("  %d nodes never read, %d still held at the end (%s)\n", in.unused, in.outputs,
             cli_fmt_bytes(in.output_bytes, b1, sizeof b1));
      printf("  total time %.6g ms; %s in nodes; %s fixed\n", in.total_time / 1e6,
             cli_fmt_bytes(in.total_bytes, b1, sizeof b1), cli_fmt_bytes(in.fixed_bytes, b2, sizeof b2));
      printf("  the trace's own peak %s (%s activations); checkpoint-all activation peak %s\n",
             cli_fmt_bytes(in.trace_peak, b1, sizeof b1), cli_fmt_bytes(in.trace_peak_activations, b2, sizeof b2),
             cli_fmt_bytes(ck_peak, b3, sizeof b3));
    }
    mlsys_remat_graph_free(&g);
    return CLI_OK;
  }
  if (out && !(f = fopen(out, "w"))) {
    mlsys_remat_graph_free(&g);
    return cli_fail(cmd, "%s: cannot write", out);
  }
  rc = CLI_OK;
  if (mlsys_remat_graph_write(&g, f, as_json) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
  if (f != stdout && fclose(f) != 0 && rc == CLI_OK) rc = cli_fail(cmd, "%s: write failed", out);
  mlsys_remat_graph_free(&g);
  return rc;
}
