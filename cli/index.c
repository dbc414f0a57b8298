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
#include <sys/wait.h>
#include <unistd.h>

static const char *index_help =
    "usage: mlsys index <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  bench --keys SPEC [--init N] [--ops N] [--insert-frac F] [--zipf S] [--config auto|NAME]\n"
    "        [--predictor rule|cnn|none|heuristic] [--model PATH] [--top-k K] [--prefix N] [--no-baselines]\n"
    "        [--time-limit S] [--seed S] [--peer alex [--peer-bin PATH] [--reps N] [--workload-out PATH]] [--json]\n"
    "        Bulk-loads --init keys (default half the keys, at most 10M) of a seeded shuffle of the key set, then runs\n"
    "        --ops operations (default 1M): each inserts the next key with probability F (default 0), else looks up\n"
    "        a key inserted so far (uniformly, or Zipf with exponent S). The run stops early when the keys run out.\n"
    "        MAPLE's configuration is --config NAME (see below) or, with auto (the default), the tuner's pick on the\n"
    "        first --prefix operations (default 10 %% of them, at most 200k), measured over its top K (default 10)\n"
    "        candidates. Then the same bulk set and operations run on the baselines: ALEX (ours: the gapped array\n"
    "        with ALEX's cost model, expected insert fraction F, not microsoft/ALEX), ALEX-W (ours, expected insert\n"
    "        fraction 1), the B+tree, the fragmented log alone (flog with default knobs) and, for read-only\n"
    "        workloads, the sorted array.\n"
    "        --peer alex runs the real microsoft/ALEX instead (bench/peers/alex: --peer-bin, else $MLSYS_ALEX_DRIVER,\n"
    "        else bench/peers/alex/build/alex_driver, built by bench/peers/alex/build.sh) on the same workload, written\n"
    "        to a file: --reps rounds (default 3) of MAPLE, ALEX at its default expected insert fraction (1), ALEX at\n"
    "        the workload's, our own ALEX baseline and the B+tree, one after another on the same core; medians.\n"
    "  workload --keys SPEC --out PATH [--init N] [--ops N] [--insert-frac F] [--zipf S] [--seed S] [--json]\n"
    "        Writes the workload bench would run (the same keys, bulk load and operations for the same options) to\n"
    "        PATH, for another index to replay (format: mlsys_index.h, WORKLOAD FILES).\n"
    "  tune --keys SPEC [--insert-frac F] [--init N] [--ops N] [--zipf S] [--predictor rule|cnn|none] [--model PATH]\n"
    "        [--top-k K] [--seed S] [--json]\n"
    "        Runs the tuner on the workload's first --ops operations (default 200k) and prints every measured\n"
    "        candidate (predicted and measured Mops/s, memory) and the choice. --predictor none measures the whole\n"
    "        grid (the oracle).\n"
    "\n"
    "SPEC: a SOSD file (uint64 count, then the keys; a name ending _uint32 holds 4-byte keys), gen:DIST:N with DIST\n"
    "uniform, normal, lognormal, clustered, osm_like, words_like or ipv4_like (N may end in k or M), or real:cities,\n"
    "real:ipv4, real:words (real key sets; see docs/index.md).\n"
    "NAME: alex, alex-w, alex:eif=E, ga:msi=X,msh=Y[,eif=E], flog:mf=M,mnf=F,nf=N (omitted knobs: defaults).\n"
    "Predictors: rule (the default) ranks the grid by the insert fraction alone, from measurements built into the\n"
    "library; on held-out key sets it picks as well as cnn, the trained CNN of the thesis (docs/index.md §5), read\n"
    "from --model PATH, else $MLSYS_INDEX_MODEL, else tools/maple_predictor.bin in the current directory or in the\n"
    "repository the binary was built in (naming a model selects cnn). none measures every configuration;\n"
    "heuristic (bench only) measures nothing: the fragmented log above 50 %% inserts, else ALEX.\n"
    "\n"
    "bench --json: {keys, n_keys, init, ops, insert_frac, config, tuned, mops, bytes, ops_done, exhausted,\n"
    "  baselines: {alex, alex-w, btree, flog, sorted-array} (Mops/s; null when not run), baseline_bytes: {...},\n"
    "  speedup_vs_alex, tune_s}\n"
    "bench --peer alex --json adds: peer: {alex, alex_eif, alex_best, mine_alex (Mops/s medians), alex_bytes,\n"
    "  alex_commit, reps}, rounds: {maple, alex, alex_eif, mine_alex, btree: [Mops/s of each round]}, speedup_vs_peer\n"
    "  (MAPLE over the faster ALEX), mine_vs_peer (our ALEX over real ALEX at the same expected insert fraction),\n"
    "  memory_vs_peer\n"
    "workload --json: {out, n_bulk, ops, inserts, finds, exhausted, bytes}\n"
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
  const char *peer, *peer_bin, *reps, *wl_out, *out;
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
  const char *env = getenv("MLSYS_INDEX_MODEL");
  /* a model named by --model or $MLSYS_INDEX_MODEL means the CNN; otherwise the rule */
  const char *p = a->predictor ? a->predictor : a->model || (env && *env) ? "cnn" : "rule";
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
  if (!strcmp(p, "rule")) {
    to.predictor = MLSYS_INDEX_PREDICT_RULE;
  } else if (!strcmp(p, "cnn")) {
    if ((rc = index_model(cmd, a->model, &model))) return rc;
    to.predictor = MLSYS_INDEX_PREDICT_MODEL;
    to.model = model;
  } else if (!strcmp(p, "none")) {
    to.predictor = MLSYS_INDEX_PREDICT_NONE;
  } else if (!strcmp(p, "knn")) {
    return cli_fail(cmd, "--predictor knn needs training data the command does not ship; use rule, cnn, heuristic or none");
  } else {
    return cli_usage_error(cmd, "--predictor '%s' is not rule, cnn, knn, heuristic or none", p);
  }
  if (mlsys_index_tune(s->w.bulk, s->w.n_bulk, &prefix, &to, tr)) rc = cli_fail(cmd, "%s", mlsys_last_error());
  else *chosen = tr->best;
  mlsys_index_model_free(model);
  return rc;
}

/* ---- the real peer: microsoft/ALEX through bench/peers/alex/alex_driver (issue 21) ---- */

typedef struct {
  double mops;
  double bytes;
} peer_result;

static int alex_driver_path(const char *cmd, const char *given, char *out, size_t n) {
  const char *use = given ? given : getenv("MLSYS_ALEX_DRIVER");
  if (use && *use) snprintf(out, n, "%s", use);
  else cli_repo_file("bench/peers/alex/build/alex_driver", out, n);
  if (access(out, X_OK))
    return cli_fail(cmd, "the ALEX driver %s is missing or not executable: build it with ALEX_DIR=<a checkout of microsoft/ALEX> "
                         "sh bench/peers/alex/build.sh, or give --peer-bin",
                    out);
  return CLI_OK;
}

/* Runs the driver as a child (it inherits our CPU affinity, so both run on the same core) and reads its JSON line. */
static int alex_driver_run(const char *cmd, const char *bin, const char *wl, double eif, size_t warmup, peer_result *r) {
  char eifs[40], warms[32], buf[4096];
  size_t n = 0;
  int fd[2], status = 0, rc = CLI_OK;
  pid_t pid;
  mlsys_json_doc doc;
  snprintf(eifs, sizeof eifs, "%.17g", eif);
  snprintf(warms, sizeof warms, "%zu", warmup);
  if (pipe(fd)) return cli_fail(cmd, "cannot make a pipe to the ALEX driver: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  if ((pid = fork()) < 0) {
    close(fd[0]);
    close(fd[1]);
    return cli_fail(cmd, "cannot start the ALEX driver: %s", strerror(errno));
  }
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execl(bin, bin, wl, "--eif", eifs, "--warmup", warms, (char *)NULL);
    fprintf(stderr, "%s: cannot run %s: %s\n", cmd, bin, strerror(errno));
    _exit(127);
  }
  close(fd[1]);
  for (;;) {   /* the driver prints one short line; anything past the buffer is read and dropped */
    char sink[512];
    ssize_t got = n < sizeof buf - 1 ? read(fd[0], buf + n, sizeof buf - 1 - n) : read(fd[0], sink, sizeof sink);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (n < sizeof buf - 1) n += (size_t)got;
  }
  close(fd[0]);
  buf[n] = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status)) return cli_fail(cmd, "the ALEX driver %s was killed by signal %d", bin, WTERMSIG(status));
  if (WEXITSTATUS(status) == 3) return cli_fail(cmd, "real ALEX returned wrong answers on %s (see its output above)", wl);
  if (WEXITSTATUS(status)) return cli_fail(cmd, "the ALEX driver %s exited with status %d", bin, WEXITSTATUS(status));
  if (mlsys_json_parse(buf, n, "the ALEX driver's output", &doc)) return cli_fail(cmd, "%s", mlsys_last_error());
  if (mlsys_json_get_double(doc.root, "mops", 1, 0, 0, 1e12, &r->mops) || mlsys_json_get_double(doc.root, "bytes", 1, 0, 0, 1e18, &r->bytes))
    rc = cli_fail(cmd, "%s", mlsys_last_error());
  mlsys_json_doc_free(&doc);
  return rc;
}

static double median_of(double *v, int n) {
  int i, j;
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bench --peer alex: reps rounds of MAPLE, real ALEX (eif 1, its default; and eif = the workload's fraction), our
   ALEX and the B+tree on one workload file, alternating so that drift on the machine hits every arm alike. */
#define PEER_ARMS 5
static int index_bench_peer(const char *cmd, const index_args *a, index_setup *s, const mlsys_index_config *cfg,
                            const char *cfg_name, int tuned, const char *pname, double tune_s, size_t warmup) {
  static const char *arm[PEER_ARMS] = {"MAPLE", "ALEX (real, eif 1)", "ALEX (real, eif F)", "our ALEX (eif F)", "B+tree"};
  char bin[4300], wl[4300], commit[128] = "unknown", cpath[4400], bb[32];
  static double m[PEER_ARMS][100], raw[PEER_ARMS][100];   /* raw: each round in order, for the JSON */
  double med[PEER_ARMS], bytes[PEER_ARMS], d;
  int reps = 3, r, k, rc = CLI_OK, same_eif = s->frac == 1, keep = a->wl_out != NULL;
  mlsys_index_config ours_alex;
  memset(&ours_alex, 0, sizeof ours_alex);
  ours_alex.expected_insert_frac = s->frac;
  if (strcmp(a->peer, "alex")) return cli_usage_error(cmd, "--peer '%s' is not a known peer (alex)", a->peer);
  if (a->reps) {
    if (cli_parse_double(a->reps, &d) || d < 1 || d > 100 || d != floor(d)) return cli_usage_error(cmd, "--reps '%s' must be 1..100", a->reps);
    reps = (int)d;
  }
  if ((rc = alex_driver_path(cmd, a->peer_bin, bin, sizeof bin))) return rc;
  {
    FILE *f;
    snprintf(cpath, sizeof cpath, "%s", bin);
    if (strrchr(cpath, '/')) strcpy(strrchr(cpath, '/') + 1, "ALEX_COMMIT");
    if ((f = fopen(cpath, "r"))) {
      if (fgets(commit, sizeof commit, f)) commit[strcspn(commit, "\r\n")] = 0;
      fclose(f);
    }
  }
  if (keep) snprintf(wl, sizeof wl, "%s", a->wl_out);
  else {
    const char *tmp = getenv("TMPDIR");
    snprintf(wl, sizeof wl, "%s/mlsys-index-workload-%ld.bin", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  }
  if (mlsys_index_workload_write(wl, &s->w)) return cli_fail(cmd, "%s", mlsys_last_error());
  for (k = 0; k < PEER_ARMS; k++) bytes[k] = NAN;
  for (r = 0; r < reps && !rc; r++) {
    for (k = 0; k < PEER_ARMS && !rc; k++) {
      mlsys_index_run_result run;
      peer_result pr;
      if (k == 2 && same_eif) { m[2][r] = m[1][r]; bytes[2] = bytes[1]; continue; }
      if (k == 1 || k == 2) {
        if ((rc = alex_driver_run(cmd, bin, wl, k == 1 ? 1.0 : s->frac, warmup, &pr))) break;
        m[k][r] = pr.mops;
        bytes[k] = pr.bytes;
        continue;
      }
      if (mlsys_index_run(k == 4 ? MLSYS_INDEX_KIND_BTREE : MLSYS_INDEX_KIND_MAPLE, k == 0 ? cfg : &ours_alex, s->w.bulk, s->w.n_bulk,
                          &s->w.trace, s->limit, &run)) {
        rc = cli_fail(cmd, "%s: %s", arm[k], mlsys_last_error());
        break;
      }
      if (run.wrong) { rc = cli_fail(cmd, "%s: %zu wrong answers (a bug: please report it)", arm[k], run.wrong); break; }
      m[k][r] = run.mops;
      bytes[k] = (double)run.bytes;
    }
    if (!rc && !a->json) fprintf(stderr, "%s: round %d of %d done\n", cmd, r + 1, reps);
  }
  if (!keep) remove(wl);
  if (rc) return rc;
  memcpy(raw, m, sizeof raw);
  for (k = 0; k < PEER_ARMS; k++) med[k] = median_of(m[k], reps);
  {
    int best = med[2] > med[1] ? 2 : 1;
    double speedup = med[0] / med[best], mine = med[3] / med[2], memr = bytes[0] / bytes[best];
    if (a->json) {
      printf("{\"keys\": ");
      cli_json_str(stdout, a->keys);
      printf(", \"n_keys\": %zu, \"init\": %zu, \"ops\": %zu, \"insert_frac\": %g, \"config\": ", s->n_keys, s->w.n_bulk, s->w.trace.n, s->frac);
      cli_json_str(stdout, cfg_name);
      printf(", \"tuned\": %s, \"predictor\": ", tuned ? "true" : "false");
      cli_json_str(stdout, tuned ? pname : "-");
      printf(", \"mops\": %.6g, \"bytes\": %.0f, \"exhausted\": %s, \"baselines\": {\"alex\": %.6g, \"btree\": %.6g}, "
             "\"baseline_bytes\": {\"alex\": %.0f, \"btree\": %.0f}, \"peer\": {\"alex\": %.6g, \"alex_eif\": %.6g, \"alex_best\": %.6g, "
             "\"mine_alex\": %.6g, \"alex_bytes\": %.0f, \"alex_eif_bytes\": %.0f, \"alex_commit\": ",
             med[0], bytes[0], s->w.exhausted ? "true" : "false", med[3], med[4], bytes[3], bytes[4], med[1], med[2], med[best], med[3],
             bytes[1], bytes[2]);
      cli_json_str(stdout, commit);
      printf(", \"reps\": %d}, \"rounds\": {", reps);
      for (k = 0; k < PEER_ARMS; k++) {
        static const char *rk[PEER_ARMS] = {"maple", "alex", "alex_eif", "mine_alex", "btree"};
        printf("%s\"%s\": [", k ? ", " : "", rk[k]);
        for (r = 0; r < reps; r++) printf("%s%.6g", r ? ", " : "", raw[k][r]);
        printf("]");
      }
      printf("}, \"speedup_vs_peer\": %.6g, \"mine_vs_peer\": %.6g, \"memory_vs_peer\": %.6g, \"tune_s\": %.4f}\n", speedup, mine, memr,
             tune_s);
    } else {
      printf("%s: %zu keys; bulk load %zu, then %zu operations (%.0f %% inserts%s)%s\n", a->keys, s->n_keys, s->w.n_bulk, s->w.trace.n,
             100 * s->frac, s->zipf > 0 ? ", Zipf lookups" : "", s->w.exhausted ? "; the keys ran out, so the run is shorter" : "");
      if (tuned) printf("MAPLE's choice (%s predictor, %.2f s of tuning): %s\n", pname, tune_s, cfg_name);
      else printf("configuration: %s\n", cfg_name);
      printf("real ALEX: microsoft/ALEX %s (%s); median of %d rounds, one after another on this core\n", commit, bin, reps);
      for (k = 0; k < PEER_ARMS; k++) {
        if (k == 2 && same_eif) continue;
        printf("  %-20s %8.3f Mops/s  %10s%s\n", arm[k], med[k], cli_fmt_bytes((uint64_t)bytes[k], bb, sizeof bb),
               k == best ? "   <- the faster ALEX" : "");
      }
      printf("MAPLE / real ALEX: %.2fx throughput, %.2fx memory; our ALEX / real ALEX (eif F): %.2fx\n", speedup, memr, mine);
    }
  }
  return CLI_OK;
}

static int index_bench(int argc, char **argv) {
  const char *cmd = "index bench";
  index_args a;
  index_setup s;
  cli_opt opts[] = {{"--keys", 1, &a.keys},       {"--init", 1, &a.init},         {"--ops", 1, &a.ops},
                    {"--insert-frac", 1, &a.frac}, {"--zipf", 1, &a.zipf},         {"--config", 1, &a.config},
                    {"--predictor", 1, &a.predictor}, {"--model", 1, &a.model},    {"--top-k", 1, &a.topk},
                    {"--prefix", 1, &a.prefix},   {"--no-baselines", 0, &a.nobase}, {"--time-limit", 1, &a.limit},
                    {"--seed", 1, &a.seed},       {"--json", 0, &a.json},         {"--peer", 1, &a.peer},
                    {"--peer-bin", 1, &a.peer_bin}, {"--reps", 1, &a.reps},      {"--workload-out", 1, &a.wl_out}};
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
  if (a.peer) {
    mlsys_index_config_format(&cfg, name, sizeof name);
    rc = index_bench_peer(cmd, &a, &s, &cfg, name, tuned, pname, tune_s, prefix_ops);
    goto out;
  }
  if (a.peer_bin || a.reps || a.wl_out) {
    rc = cli_usage_error(cmd, "--peer-bin, --reps and --workload-out go with --peer alex");
    goto out;
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
      const char *label = b == 0 ? "alex (ours)" : b == 1 ? "alex-w (ours)" : bname[b];   /* not microsoft/ALEX: see --peer */
      printf("  %-14s %8.3f Mops/s  %10s   MAPLE is %.2fx\n", label, bmops[b], cli_fmt_bytes((uint64_t)bbytes[b], bb, sizeof bb),
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

/* workload: the bench's workload on disk, for a peer to replay. */
static int index_workload(int argc, char **argv) {
  const char *cmd = "index workload";
  index_args a;
  index_setup s;
  cli_opt opts[] = {{"--keys", 1, &a.keys}, {"--init", 1, &a.init}, {"--ops", 1, &a.ops}, {"--insert-frac", 1, &a.frac},
                    {"--zipf", 1, &a.zipf}, {"--seed", 1, &a.seed}, {"--out", 1, &a.out},  {"--json", 0, &a.json}};
  struct stat sb;
  int rc;
  memset(&a, 0, sizeof a);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof *opts), cmd))) return rc;
  if (!a.out) return cli_usage_error(cmd, "--out PATH is required");
  if ((rc = index_setup_make(cmd, &a, 1000000, &s))) return rc;
  if (mlsys_index_workload_write(a.out, &s.w)) {
    index_setup_free(&s);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (stat(a.out, &sb)) sb.st_size = 0;
  if (a.json) {
    printf("{\"out\": ");
    cli_json_str(stdout, a.out);
    printf(", \"n_bulk\": %zu, \"ops\": %zu, \"inserts\": %zu, \"finds\": %zu, \"exhausted\": %s, \"bytes\": %lld}\n", s.w.n_bulk,
           s.w.trace.n, s.w.n_inserts, s.w.n_finds, s.w.exhausted ? "true" : "false", (long long)sb.st_size);
  } else {
    char bb[32];
    printf("%s: bulk load %zu keys, then %zu operations (%zu inserts, %zu lookups)%s; %s written\n", a.out, s.w.n_bulk, s.w.trace.n,
           s.w.n_inserts, s.w.n_finds, s.w.exhausted ? "; the keys ran out, so the trace is shorter" : "",
           cli_fmt_bytes((uint64_t)sb.st_size, bb, sizeof bb));
  }
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
  if (!strcmp(argv[2], "workload")) return index_workload(argc, argv);
  return cli_usage_error("index", "unknown verb '%s' (bench, tune, workload)", argv[2]);
}
