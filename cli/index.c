/* cli/index.c — `mlsys index`: MAPLE, the learned index tuned per workload (mlsys_index.h). bench runs one workload on
   MAPLE's configuration (chosen by the tuner, or named) and on the baselines, with the same keys and operations; tune
   shows the tuner's candidates, predicted against measured. */
#include "mlsys_index.h"
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *index_help =
    "usage: mlsys index <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  bench --keys SPEC [--init N] [--ops N] [--insert-frac F] [--zipf S] [--config auto|NAME]\n"
    "        [--predictor cnn|none|heuristic] [--model PATH] [--top-k K] [--prefix N] [--no-baselines]\n"
    "        [--time-limit S] [--seed S] [--json]\n"
    "        Bulk-loads --init keys (default half the keys, at most 10M) of a seeded shuffle of the key set, then runs\n"
    "        --ops operations (default 1M): each inserts the next key with probability F (default 0), else looks up\n"
    "        a key inserted so far (uniformly, or Zipf with exponent S). The run stops early when the keys run out.\n"
    "        MAPLE's configuration is --config NAME (see below) or, with auto (the default), the tuner's pick on the\n"
    "        first --prefix operations (default 10 %% of them, at most 200k), measured over its top K (default 10)\n"
    "        candidates. Then the same bulk set and operations run on the baselines: ALEX (the gapped array with\n"
    "        ALEX's cost model, expected insert fraction F), ALEX-W (expected insert fraction 1), the B+tree, the\n"
    "        fragmented log alone (flog with default knobs) and, for read-only workloads, the sorted array.\n"
    "  tune --keys SPEC [--insert-frac F] [--init N] [--ops N] [--zipf S] [--predictor cnn|none] [--model PATH]\n"
    "        [--top-k K] [--seed S] [--json]\n"
    "        Runs the tuner on the workload's first --ops operations (default 200k) and prints every measured\n"
    "        candidate (predicted and measured Mops/s, memory) and the choice. --predictor none measures the whole\n"
    "        grid (the oracle).\n"
    "\n"
    "SPEC: a SOSD file (uint64 count, then the keys; a name ending _uint32 holds 4-byte keys), gen:DIST:N with DIST\n"
    "uniform, normal, lognormal, clustered, osm_like, words_like or ipv4_like (N may end in k or M), or real:cities,\n"
    "real:ipv4, real:words (real key sets; see docs/index.md).\n"
    "NAME: alex, alex-w, alex:eif=E, ga:msi=X,msh=Y[,eif=E], flog:mf=M,mnf=F,nf=N (omitted knobs: defaults).\n"
    "The CNN predictor is read from --model PATH, else $MLSYS_INDEX_MODEL, else tools/maple_predictor.bin in the\n"
    "current directory or in the repository the binary was built in.\n"
    "\n"
    "bench --json: {keys, n_keys, init, ops, insert_frac, config, tuned, mops, bytes, ops_done, exhausted,\n"
    "  baselines: {alex, alex-w, btree, flog, sorted-array} (Mops/s; null when not run), baseline_bytes: {...},\n"
    "  speedup_vs_alex, tune_s}\n"
    "tune --json: {config, predictor, candidates: [{config, predicted_mops, measured_mops, bytes}], predict_s, measure_s}\n";

/* "1000000", "10M", "200k" → count. */
static int parse_count(const char *s, size_t *out) {
  char *end;
  double d;
  if (!s || !*s) return -1;
  errno = 0;
  d = strtod(s, &end);
  if (errno || end == s || d < 0) return -1;
  if (*end == 'k' || *end == 'K') { d *= 1e3; end++; }
  else if (*end == 'M' || *end == 'm') { d *= 1e6; end++; }
  else if (*end == 'G' || *end == 'g') { d *= 1e9; end++; }
  if (*end || d != floor(d) || d > 1e12) return -1;
  *out = (size_t)d;
  return 0;
}

/* The shipped predictor: --model, $MLSYS_INDEX_MODEL, tools/maple_predictor.bin here or beside the binary's repo. */
static int index_model(const char *cmd, const char *path, mlsys_index_model **m) {
  char found[4300];
  const char *use = path;
  if (!use) use = getenv("MLSYS_INDEX_MODEL");
  if (!use || !*use) {
    cli_repo_file("tools/maple_predictor.bin", found, sizeof found);
    use = found;
  }
  if (mlsys_index_model_load(use, m))
    return cli_fail(cmd, "cannot load the MAPLE predictor: %s (give --model PATH, or --predictor heuristic or none)", mlsys_last_error());
  return CLI_OK;
}

typedef struct {
  const char *keys, *init, *ops, *frac, *zipf, *config, *predictor, *model, *topk, *prefix, *nobase, *limit, *seed, *json;
} index_args;

typedef struct {
  uint64_t *keys;
  size_t n_keys;
  mlsys_index_workload w;
  double frac, zipf, limit;
  uint64_t seed;
  int top_k;
} index_setup;

static void index_setup_free(index_setup *s) {
  mlsys_free(s->keys);
  mlsys_index_workload_free(&s->w);
}

static int index_setup_make(const char *cmd, const index_args *a, size_t dflt_ops, index_setup *s) {
  mlsys_index_workload_opts wo;
  size_t init = 0, ops = dflt_ops;
  double d;
  memset(s, 0, sizeof *s);
  memset(&wo, 0, sizeof wo);
  if (!a->keys) return cli_usage_error(cmd, "--keys is required (a SOSD file, gen:DIST:N or real:NAME)");
  if (a->init && parse_count(a->init, &init)) return cli_usage_error(cmd, "--init '%s' is not a count", a->init);
  if (a->ops && parse_count(a->ops, &ops)) return cli_usage_error(cmd, "--ops '%s' is not a count", a->ops);
  if (a->frac && (cli_parse_double(a->frac, &s->frac) || !(s->frac >= 0 && s->frac <= 1)))
    return cli_usage_error(cmd, "--insert-frac '%s' must be a number in [0, 1]", a->frac);
  if (a->zipf && (cli_parse_double(a->zipf, &s->zipf) || !(s->zipf >= 0) || !isfinite(s->zipf)))
    return cli_usage_error(cmd, "--zipf '%s' must be a number >= 0", a->zipf);
  if (a->limit && (cli_parse_double(a->limit, &s->limit) || !(s->limit > 0)))
    return cli_usage_error(cmd, "--time-limit '%s' must be a positive number of seconds", a->limit);
  if (a->seed) {
    if (cli_parse_double(a->seed, &d) || d < 0 || d != floor(d) || d > 9e15) return cli_usage_error(cmd, "--seed '%s' is not a whole number", a->seed);
    s->seed = (uint64_t)d;
  }
  s->top_k = 10;
  if (a->topk) {
    if (cli_parse_double(a->topk, &d) || d < 1 || d != floor(d) || d > 1000) return cli_usage_error(cmd, "--top-k '%s' must be 1..1000", a->topk);
    s->top_k = (int)d;
  }
  if (mlsys_index_keys_load(a->keys, s->seed, &s->keys, &s->n_keys)) return cli_fail(cmd, "%s", mlsys_last_error());
  if (!init) init = s->n_keys / 2 < 10000000 ? s->n_keys / 2 : 10000000;
  if (init > s->n_keys) {
    index_setup_free(s);
    return cli_fail(cmd, "--init %zu is more than the %zu distinct keys of %s", init, s->n_keys, a->keys);
  }
  wo.n_init = init;
  wo.n_ops = ops;
  wo.insert_frac = s->frac;
  wo.zipf = s->zipf;
  wo.seed = s->seed;
  if (mlsys_index_workload_make(s->keys, s->n_keys, &wo, &s->w)) {
    index_setup_free(s);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  return CLI_OK;
}

static void json_num_or_null(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6g", v);
  else fputs("null", f);
}

/* The tuner as the CLI runs it: the prefix of the workload, the chosen predictor. */
static int index_tune_run(const char *cmd, const index_args *a, index_setup *s, size_t prefix_ops, mlsys_index_tune_result *tr,
                          const char **pname, mlsys_index_config *chosen) {
  mlsys_index_tune_opts to;
  mlsys_index_model *model = NULL;
  mlsys_index_trace prefix = s->w.trace;
  const char *p = a->predictor ? a->predictor : "cnn";
  int rc = CLI_OK;
  memset(&to, 0, sizeof to);
  memset(tr, 0, sizeof *tr);
  if (prefix_ops < prefix.n) prefix.n = prefix_ops;
  to.top_k = s->top_k;
  *pname = p;
  if (!strcmp(p, "heuristic")) {
    *chosen = mlsys_index_tune_heuristic(&prefix);
    return CLI_OK;
  }
  if (!strcmp(p, "cnn")) {
    if ((rc = index_model(cmd, a->model, &model))) return rc;
    to.predictor = MLSYS_INDEX_PREDICT_MODEL;
    to.model = model;
  } else if (!strcmp(p, "none")) {
    to.predictor = MLSYS_INDEX_PREDICT_NONE;
  } else if (!strcmp(p, "knn")) {
    return cli_fail(cmd, "--predictor knn needs training data the command does not ship; use cnn, heuristic or none");
  } else {
    return cli_usage_error(cmd, "--predictor '%s' is not cnn, knn, heuristic or none", p);
  }
  if (mlsys_index_tune(s->w.bulk, s->w.n_bulk, &prefix, &to, tr)) rc = cli_fail(cmd, "%s", mlsys_last_error());
  else *chosen = tr->best;
  mlsys_index_model_free(model);
  return rc;
}

static int index_bench(int argc, char **argv) {
  const char *cmd = "index bench";
  index_args a;
  index_setup s;
  cli_opt opts[] = {{"--keys", 1, &a.keys},       {"--init", 1, &a.init},         {"--ops", 1, &a.ops},
                    {"--insert-frac", 1, &a.frac}, {"--zipf", 1, &a.zipf},         {"--config", 1, &a.config},
                    {"--predictor", 1, &a.predictor}, {"--model", 1, &a.model},    {"--top-k", 1, &a.topk},
                    {"--prefix", 1, &a.prefix},   {"--no-baselines", 0, &a.nobase}, {"--time-limit", 1, &a.limit},
                    {"--seed", 1, &a.seed},       {"--json", 0, &a.json}};
  static const char *bname[5] = {"alex", "alex-w", "btree", "flog", "sorted-array"};
  double bmops[5], bbytes[5], tune_s = 0;
  mlsys_index_config cfg, bcfg[5];
  mlsys_index_run_result run;
  mlsys_index_tune_result tr;
  const char *pname = "-";
  char name[128];
  int rc, tuned = 0, b;
  size_t prefix_ops;
  memset(&a, 0, sizeof a);
  memset(&tr, 0, sizeof tr);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof *opts), cmd))) return rc;
  if ((rc = index_setup_make(cmd, &a, 1000000, &s))) return rc;
  prefix_ops = s.w.trace.n / 10 < 200000 ? s.w.trace.n / 10 : 200000;
  if (prefix_ops < 1000) prefix_ops = s.w.trace.n < 1000 ? s.w.trace.n : 1000;
  if (a.prefix && parse_count(a.prefix, &prefix_ops)) { index_setup_free(&s); return cli_usage_error(cmd, "--prefix '%s' is not a count", a.prefix); }
  if (!a.config || !strcmp(a.config, "auto")) {
    double t0 = mlsys_now();
    if ((rc = index_tune_run(cmd, &a, &s, prefix_ops, &tr, &pname, &cfg))) { index_setup_free(&s); return rc; }
    tune_s = mlsys_now() - t0;
    tuned = 1;
  } else if (mlsys_index_config_parse(a.config, s.frac, &cfg)) {
    index_setup_free(&s);
    return cli_usage_error(cmd, "%s", mlsys_last_error());
  }
  if (!tuned || !strcmp(pname, "heuristic")) {
    /* an untimed warm-up: the first run of a process pays for fresh pages that later runs reuse from the heap, which
       made a named configuration up to 3x slower than the same configuration run again as a baseline */
    mlsys_index_trace warm = s.w.trace;
    mlsys_index_run_result wr;
    if (warm.n > prefix_ops) warm.n = prefix_ops;
    (void)mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &cfg, s.w.bulk, s.w.n_bulk, &warm, s.limit, &wr);
  }
  if (mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &cfg, s.w.bulk, s.w.n_bulk, &s.w.trace, s.limit, &run)) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto out;
  }
  if (run.wrong) { rc = cli_fail(cmd, "%zu operations returned wrong answers (a bug: please report it)", run.wrong); goto out; }
  memset(bcfg, 0, sizeof bcfg);
  bcfg[0].expected_insert_frac = s.frac;
  bcfg[1].expected_insert_frac = 1;
  bcfg[3].leaf = MLSYS_INDEX_FLOG;
  for (b = 0; b < 5; b++) {
    mlsys_index_run_result br;
    mlsys_index_kind kind = b == 2 ? MLSYS_INDEX_KIND_BTREE : b == 4 ? MLSYS_INDEX_KIND_SORTED : MLSYS_INDEX_KIND_MAPLE;
    bmops[b] = bbytes[b] = NAN;
    if (a.nobase) continue;
    if (kind == MLSYS_INDEX_KIND_SORTED && s.w.n_inserts) continue;
    if (mlsys_index_run(kind, &bcfg[b], s.w.bulk, s.w.n_bulk, &s.w.trace, s.limit, &br)) {
      rc = cli_fail(cmd, "baseline %s: %s", bname[b], mlsys_last_error());
      goto out;
    }
    if (br.wrong) { rc = cli_fail(cmd, "baseline %s: %zu wrong answers (a bug: please report it)", bname[b], br.wrong); goto out; }
    bmops[b] = br.mops;
    bbytes[b] = (double)br.bytes;
  }
  mlsys_index_config_format(&cfg, name, sizeof name);
  if (a.json) {
    printf("{\"keys\": ");
    cli_json_str(stdout, a.keys);
    printf(", \"n_keys\": %zu, \"init\": %zu, \"ops\": %zu, \"insert_frac\": %g, \"config\": ", s.n_keys, s.w.n_bulk, s.w.trace.n, s.frac);
    cli_json_str(stdout, name);
    printf(", \"tuned\": %s, \"predictor\": ", tuned ? "true" : "false");
    cli_json_str(stdout, tuned ? pname : "-");
    printf(", \"mops\": %.6g, \"bytes\": %zu, \"ops_done\": %zu, \"exhausted\": %s, \"baselines\": {", run.mops, run.bytes,
           run.ops_done, s.w.exhausted ? "true" : "false");
    for (b = 0; b < 5; b++) { printf("%s\"%s\": ", b ? ", " : "", bname[b]); json_num_or_null(stdout, bmops[b]); }
    printf("}, \"baseline_bytes\": {");
    for (b = 0; b < 5; b++) { printf("%s\"%s\": ", b ? ", " : "", bname[b]); json_num_or_null(stdout, bbytes[b]); }
    printf("}, \"speedup_vs_alex\": ");
    json_num_or_null(stdout, run.mops / bmops[0]);
    printf(", \"tune_s\": %.4f}\n", tune_s);
  } else {
    char bb[32];
    printf("%s: %zu keys; bulk load %zu, then %zu operations (%.0f %% inserts%s)%s\n", a.keys, s.n_keys, s.w.n_bulk, s.w.trace.n,
           100 * s.frac, s.zipf > 0 ? ", Zipf lookups" : "", s.w.exhausted ? "; the keys ran out, so the run is shorter" : "");
    if (tuned)
      printf("MAPLE's choice (%s predictor%s, %.2f s of tuning): %s\n", pname, strcmp(pname, "heuristic") ? ", top candidates measured" : "",
             tune_s, name);
    else
      printf("configuration: %s\n", name);
    printf("  %-14s %8.3f Mops/s  %10s\n", "MAPLE", run.mops, cli_fmt_bytes(run.bytes, bb, sizeof bb));
    for (b = 0; b < 5; b++) {
      if (isnan(bmops[b])) continue;
      printf("  %-14s %8.3f Mops/s  %10s   MAPLE is %.2fx\n", bname[b], bmops[b], cli_fmt_bytes((uint64_t)bbytes[b], bb, sizeof bb),
             run.mops / bmops[b]);
    }
  }
out:
  mlsys_index_tune_result_free(&tr);
  index_setup_free(&s);
  return rc;
}

static int index_tune(int argc, char **argv) {
  const char *cmd = "index tune";
  index_args a;
  index_setup s;
  cli_opt opts[] = {{"--keys", 1, &a.keys},   {"--init", 1, &a.init},         {"--ops", 1, &a.ops},    {"--insert-frac", 1, &a.frac},
                    {"--zipf", 1, &a.zipf},   {"--predictor", 1, &a.predictor}, {"--model", 1, &a.model}, {"--top-k", 1, &a.topk},
                    {"--seed", 1, &a.seed},   {"--json", 0, &a.json}};
  mlsys_index_tune_result tr;
  mlsys_index_config cfg;
  const char *pname;
  char name[128], bb[32];
  size_t i;
  int rc;
  memset(&a, 0, sizeof a);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof *opts), cmd))) return rc;
  if (a.predictor && !strcmp(a.predictor, "heuristic")) return cli_usage_error(cmd, "--predictor heuristic measures nothing; use bench");
  if ((rc = index_setup_make(cmd, &a, 200000, &s))) return rc;
  if ((rc = index_tune_run(cmd, &a, &s, s.w.trace.n, &tr, &pname, &cfg))) { index_setup_free(&s); return rc; }
  mlsys_index_config_format(&cfg, name, sizeof name);
  if (a.json) {
    printf("{\"config\": ");
    cli_json_str(stdout, name);
    printf(", \"predictor\": ");
    cli_json_str(stdout, pname);
    printf(", \"candidates\": [");
    for (i = 0; i < tr.n_cand; i++) {
      char cn[128];
      printf("%s{\"config\": ", i ? ", " : "");
      cli_json_str(stdout, mlsys_index_config_format(&tr.cand[i].cfg, cn, sizeof cn));
      printf(", \"predicted_mops\": ");
      json_num_or_null(stdout, tr.cand[i].predicted_mops);
      printf(", \"measured_mops\": %.6g, \"bytes\": %zu}", tr.cand[i].run.mops, tr.cand[i].run.bytes);
    }
    printf("], \"predict_s\": %.4f, \"measure_s\": %.4f}\n", tr.predict_s, tr.measure_s);
  } else {
    printf("%s: %zu keys; bulk load %zu, tuning trace of %zu operations (%.0f %% inserts)\n", a.keys, s.n_keys, s.w.n_bulk,
           s.w.trace.n, 100 * mlsys_index_trace_insert_frac(&s.w.trace));
    printf("  %-34s %12s %12s %10s\n", "candidate (predicted order)", "predicted", "measured", "memory");
    for (i = 0; i < tr.n_cand; i++) {
      char cn[128], pr[32];
      if (isnan(tr.cand[i].predicted_mops)) snprintf(pr, sizeof pr, "-");
      else snprintf(pr, sizeof pr, "%.3f", tr.cand[i].predicted_mops);
      printf("  %-34s %12s %12.3f %10s%s\n", mlsys_index_config_format(&tr.cand[i].cfg, cn, sizeof cn), pr, tr.cand[i].run.mops,
             cli_fmt_bytes(tr.cand[i].run.bytes, bb, sizeof bb), i == tr.best_cand ? "  <- chosen" : "");
    }
    printf("chosen: %s (prediction %.2f s, measurements %.2f s; Mops/s)\n", name, tr.predict_s, tr.measure_s);
  }
  mlsys_index_tune_result_free(&tr);
  index_setup_free(&s);
  return CLI_OK;
}

int cmd_index(int argc, char **argv) {
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
    fputs(index_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[2], "bench")) return index_bench(argc, argv);
  if (!strcmp(argv[2], "tune")) return index_tune(argc, argv);
  return cli_usage_error("index", "unknown verb '%s' (bench, tune)", argv[2]);
}
