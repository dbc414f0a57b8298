/* cli/pipeline.c — `mlsys pipeline`: the JPEG training input pipeline over a directory of photographs, traced and
   tuned by Plumber or one of the baselines (run), or traced at a fixed configuration (trace). */
#include "mlsys_pipeline.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *pipe_help =
    "usage: mlsys pipeline <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  run    --images DIR [--batch N] [--tune plumber|plumber-nocache|autotune|naive|heuristic|local|random_walk]\n"
    "         [--seconds S | --batches N] [--vs-naive] [--json] [--verbose] (and the pipeline options)\n"
    "         Builds files -> decode -> repeat -> random-resized-crop -> flip -> normalize -> batch -> prefetch over\n"
    "         every .jpg/.jpeg below DIR, configures it with the chosen method (default plumber: trace, the CPU LP,\n"
    "         the cache rule, prefetch sizing), then measures it for S seconds (default 3; each tuning window too).\n"
    "         --batches N makes every window N batches (after a warm-up of N/4) instead: the same work on any\n"
    "         machine, so the decisions that rest on counts (the cache rule's sizes) do not move with its load.\n"
    "         --vs-naive also measures the NAIVE configuration and prints the speedup. --verbose prints every\n"
    "         tuning step's rate table and decision.\n"
    "  trace  --images DIR [--batch N] [--parallelism P] [--seconds S | --batches N] [--json] (and the pipeline options)\n"
    "         Runs the pipeline with every map at parallelism P (default 1) for S seconds (or N batches) and prints the\n"
    "         per-operator rate table: elements, per-core rate R, R*p, cores used, the bottleneck, random and stale\n"
    "         operators.\n"
    "\n"
    "Images that cannot be read or decoded are skipped (--on-error skip, the default): the command then warns on\n"
    "stderr with their number and the first few files and reasons (over the final measurement, its warm-up included).\n"
    "When no batch can be made at all (every image failed), it exits 1 naming the files and why, and prints no\n"
    "throughput. --on-error fail stops at the first such file (exit 1, naming it).\n"
    "\n"
    "pipeline options: --decoder libjpeg|stb (default libjpeg) --size N (crop side, default 224) --fused (decode,\n"
    "crop and flip in one operator, decoding at a DCT scale) --workers N (worker threads, default online CPUs)\n"
    "--cores N (the LP's core budget, default online CPUs) --mem-free BYTES (for the cache rule, default\n"
    "MemAvailable) --on-error skip|fail (undecodable files; default skip) --seed N.\n"
    "\n"
    "run --json keys: method, images, throughput (batches/s), images_per_s, predicted (the LP bound at --cores),\n"
    "predicted_at_cores_used, cpu_cores_used, bottleneck, cache_after (operator name or null), config (per operator\n"
    "from the root: name, kind, parallelism, prefetch, cache), skipped_images and skip_errors (the first few messages),\n"
    "naive_throughput and speedup_vs_naive (with --vs-naive).\n"
    "trace --json: {seconds, batches, x_obs, cpu_cores_used, bottleneck, skipped_images, skip_errors, ops: [{name, kind,\n"
    "parallelism, elements, skipped, rate_per_core, rate, cores, random, stale}]}.\n";

typedef struct {
  const char *images, *batch, *tune, *seconds, *batches, *vs_naive, *json, *verbose, *decoder, *size, *fused, *workers, *cores,
      *mem_free, *on_error, *seed, *parallelism, *help;
} pipe_args;

typedef struct {
  char **paths;
  int64_t n;
  mlsys_pipe *p;
  mlsys_pipe_jpeg_nodes nodes;
  int batch;
} pipe_setup;

static void pipe_setup_free(pipe_setup *s) {
  mlsys_pipe_destroy(s->p);
  mlsys_pipe_paths_free(s->paths, s->n);
  memset(s, 0, sizeof *s);
}

static int pipe_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out) {
  double d;
  if (!v) return CLI_OK;
  if (cli_parse_double(v, &d) || d != floor(d) || d < lo || d > hi) return cli_usage_error(cmd, "%s must be an integer in %d..%d", opt, lo, hi);
  *out = (int)d;
  return CLI_OK;
}

/* lists the images and builds the pipeline (and a second copy for --vs-naive) */
static int pipe_build(const char *cmd, const pipe_args *a, pipe_setup *s) {
  mlsys_pipe_desc pd;
  mlsys_pipe_jpeg_desc jd;
  mlsys_status st;
  int workers = 0, size = 224, rc;
  memset(&pd, 0, sizeof pd);
  memset(&jd, 0, sizeof jd);
  if (!a->images) return cli_usage_error(cmd, "--images DIR is required (e.g. /usr/share/doc/opencv-doc)");
  s->batch = 32;
  if ((rc = pipe_int(cmd, "--batch", a->batch, 1, 1 << 16, &s->batch))) return rc;
  if ((rc = pipe_int(cmd, "--size", a->size, 8, 8192, &size))) return rc;
  if ((rc = pipe_int(cmd, "--workers", a->workers, 1, 4096, &workers))) return rc;
  if (a->seed) {
    double v;
    if (cli_parse_double(a->seed, &v) || v < 0) return cli_usage_error(cmd, "--seed must be a non-negative integer");
    pd.seed = (uint64_t)v;
  }
  if (a->decoder && strcmp(a->decoder, "libjpeg") && strcmp(a->decoder, "stb")) return cli_usage_error(cmd, "--decoder is libjpeg or stb");
  if (a->on_error && strcmp(a->on_error, "skip") && strcmp(a->on_error, "fail")) return cli_usage_error(cmd, "--on-error is skip or fail");
  if ((st = mlsys_pipe_list_images(a->images, &s->paths, &s->n))) return cli_fail(cmd, "%s", mlsys_last_error());
  if (s->n == 0) return cli_fail(cmd, "no .jpg or .jpeg files below '%s'", a->images);
  pd.workers = workers;
  if ((st = mlsys_pipe_create(&pd, &s->p))) return cli_fail(cmd, "%s", mlsys_last_error());
  jd.batch = s->batch; jd.size = size; jd.fused = a->fused != NULL;
  jd.decoder = a->decoder && !strcmp(a->decoder, "stb") ? MLSYS_PIPE_DEC_STB : MLSYS_PIPE_DEC_LIBJPEG;
  jd.fail_on_error = a->on_error && !strcmp(a->on_error, "fail");
  jd.drop_remainder = 1;
  if ((st = mlsys_pipe_jpeg_pipeline(s->p, (const char *const *)s->paths, s->n, &jd, &s->nodes))) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

static int pipe_machine(const char *cmd, const pipe_args *a, mlsys_pipe_machine *m) {
  memset(m, 0, sizeof *m);
  if (a->cores) {
    double v;
    if (cli_parse_double(a->cores, &v) || !(v >= 1) || v > 4096) return cli_usage_error(cmd, "--cores must be a number >= 1");
    m->cores = v;
  }
  if (a->mem_free) {
    uint64_t b;
    if (cli_parse_bytes(a->mem_free, &b) || b == 0) return cli_usage_error(cmd, "--mem-free must be a size (e.g. 64MiB)");
    m->mem_free_bytes = (double)b;
  }
  mlsys_pipe_machine_detect(m);
  return CLI_OK;
}

/* the configuration from the root down: name, kind, parallelism, prefetch buffer, cache */
static void print_config(FILE *f, const mlsys_pipe *p, int root, int json) {
  int v, first = 1;
  if (json) fprintf(f, "[");
  else fprintf(f, "configuration (root first):\n");
  for (v = root; v >= 0;) {
    int kind, in;
    const char *name;
    int64_t par = 0, buf = -1;
    mlsys_pipe_node_info(p, v, &kind, &in, &name);
    mlsys_pipe_get_knob(p, v, MLSYS_PIPE_KNOB_PARALLELISM, &par);
    if (kind == MLSYS_PIPE_OP_PREFETCH) mlsys_pipe_get_knob(p, v, MLSYS_PIPE_KNOB_BUFFER, &buf);
    if (json) {
      fprintf(f, "%s{\"name\": ", first ? "" : ", ");
      cli_json_str(f, name);
      fprintf(f, ", \"kind\": \"%s\", \"parallelism\": %lld, \"prefetch\": %lld, \"cache\": %s}", mlsys_pipe_kind_name(kind),
              (long long)(par > 0 ? par : 1), (long long)(buf > 0 ? buf : 0), kind == MLSYS_PIPE_OP_CACHE ? "true" : "false");
    } else {
      fprintf(f, "  %-20s %-10s", name, mlsys_pipe_kind_name(kind));
      if (par > 0) fprintf(f, " parallelism %lld", (long long)par);
      if (kind == MLSYS_PIPE_OP_PREFETCH) fprintf(f, " buffer %lld", (long long)buf);
      fprintf(f, "\n");
    }
    first = 0;
    v = in;
  }
  if (json) fprintf(f, "]");
}

/* --seconds S or --batches N (not both): *secs, or *batches > 0 */
static int pipe_window(const char *cmd, const pipe_args *a, double *secs, int64_t *batches) {
  double v;
  *batches = 0;
  if (a->seconds && a->batches) return cli_usage_error(cmd, "--seconds and --batches are two ways to size a window: give one");
  if (a->seconds && (cli_parse_double(a->seconds, secs) || !(*secs >= 0.1) || *secs > 3600)) return cli_usage_error(cmd, "--seconds must be 0.1..3600");
  if (a->batches) {
    if (cli_parse_double(a->batches, &v) || v != floor(v) || v < 1 || v > 1e9) return cli_usage_error(cmd, "--batches must be an integer >= 1");
    *batches = (int64_t)v;
  }
  return CLI_OK;
}

/* Images skipped on errors (since the window's open): a warning on stderr naming the first few, or JSON keys. */
static void pipe_skips_warn(const char *cmd, const mlsys_pipe_snapshot *w) {
  int i, shown = w->nskip_log < 3 ? w->nskip_log : 3;
  if (w->skipped_distinct <= 0) return;
  fprintf(stderr, "mlsys %s: warning: %lld image%s could not be read or decoded and %s skipped: ", cmd, (long long)w->skipped_distinct,
          w->skipped_distinct == 1 ? "" : "s", w->skipped_distinct == 1 ? "was" : "were");
  for (i = 0; i < shown; i++)   /* the library's messages without their "pipeline: " prefix */
    fprintf(stderr, "%s%s", i ? "; " : "", w->skip_log[i] + (strncmp(w->skip_log[i], "pipeline: ", 10) ? 0 : 10));
  if (w->skipped_distinct > shown) fprintf(stderr, "; and %lld more", (long long)(w->skipped_distinct - shown));
  fprintf(stderr, "\n");
}
static void pipe_skips_json(FILE *f, const mlsys_pipe_snapshot *w) {
  int i;
  fprintf(f, ", \"skipped_images\": %lld, \"skip_errors\": [", (long long)w->skipped_distinct);
  for (i = 0; i < w->nskip_log; i++) {
    if (i) fprintf(f, ", ");
    cli_json_str(f, w->skip_log[i]);
  }
  fprintf(f, "]");
}

static int tune_method(const char *s, int *m, int *nocache) {
  static const struct { const char *name; int m, nocache; } t[] = {
      {"plumber", MLSYS_PIPE_TUNE_PLUMBER, 0}, {"plumber-nocache", MLSYS_PIPE_TUNE_PLUMBER, 1}, {"naive", MLSYS_PIPE_TUNE_NAIVE, 0},
      {"heuristic", MLSYS_PIPE_TUNE_HEURISTIC, 0}, {"autotune", MLSYS_PIPE_TUNE_AUTOTUNE, 0}, {"local", MLSYS_PIPE_TUNE_LOCAL, 0},
      {"random_walk", MLSYS_PIPE_TUNE_RANDOM_WALK, 0}};
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(s, t[i].name)) { *m = t[i].m; *nocache = t[i].nocache; return 0; }
  return -1;
}

static int pipe_run(int argc, char **argv, const char *cmd) {
  pipe_args a;
  pipe_setup s, sn;
  mlsys_pipe_tune_desc td;
  mlsys_pipe_tune_result r;
  mlsys_pipe_machine m;
  mlsys_status st;
  double secs = 3, naive_x = -1;
  int64_t batches = 0;
  char window[64];
  int rc, method = MLSYS_PIPE_TUNE_PLUMBER, nocache = 0;
  cli_opt opts[] = {{"--images", 1, &a.images}, {"--batch", 1, &a.batch}, {"--tune", 1, &a.tune}, {"--seconds", 1, &a.seconds},
                    {"--batches", 1, &a.batches}, {"--vs-naive", 0, &a.vs_naive}, {"--json", 0, &a.json}, {"--verbose", 0, &a.verbose},
                    {"--decoder", 1, &a.decoder}, {"--size", 1, &a.size}, {"--fused", 0, &a.fused}, {"--workers", 1, &a.workers}, {"--cores", 1, &a.cores},
                    {"--mem-free", 1, &a.mem_free}, {"--on-error", 1, &a.on_error}, {"--seed", 1, &a.seed}, {"--help", 0, &a.help}};
  memset(&a, 0, sizeof a);
  memset(&s, 0, sizeof s); memset(&sn, 0, sizeof sn);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd))) return rc;
  if (a.help) { fputs(pipe_help, stdout); return CLI_OK; }
  if (a.tune && tune_method(a.tune, &method, &nocache)) return cli_usage_error(cmd, "--tune: unknown method '%s'", a.tune);
  if ((rc = pipe_window(cmd, &a, &secs, &batches))) return rc;
  if ((rc = pipe_machine(cmd, &a, &m))) return rc;
  if ((rc = pipe_build(cmd, &a, &s))) { pipe_setup_free(&s); return rc; }
  memset(&td, 0, sizeof td);
  td.trace_seconds = secs; td.warmup_seconds = fmin(1.0, secs / 3); td.machine = m; td.method = method; td.no_cache = nocache;
  td.trace_elements = batches;   /* the root's elements are batches */
  if (batches > 0) snprintf(window, sizeof window, "%lld batches", (long long)batches);
  else snprintf(window, sizeof window, "%.1f s", secs);
  if (a.vs_naive && method != MLSYS_PIPE_TUNE_NAIVE) {
    mlsys_pipe_tune_desc nd = td;
    mlsys_pipe_tune_result nr;
    if ((rc = pipe_build(cmd, &a, &sn))) { pipe_setup_free(&s); pipe_setup_free(&sn); return rc; }
    nd.method = MLSYS_PIPE_TUNE_NAIVE;
    if (!a.json) printf("measuring NAIVE (every parallelism 1, no prefetch) for %s ...\n", window);
    if ((st = mlsys_pipe_tune(sn.p, sn.nodes.root, &nd, &nr, a.verbose && !a.json ? stdout : NULL))) {
      pipe_setup_free(&s); pipe_setup_free(&sn);
      return cli_fail(cmd, "%s", mlsys_last_error());
    }
    naive_x = nr.x_measured;
    mlsys_pipe_tune_result_free(&nr);
    pipe_setup_free(&sn);
  }
  if (!a.json) printf("%s over %lld images (batch %d): tuning and measuring, %s per window ...\n", a.tune ? a.tune : "plumber",
                      (long long)s.n, s.batch, window);
  if ((st = mlsys_pipe_tune(s.p, s.nodes.root, &td, &r, a.verbose && !a.json ? stdout : NULL))) {
    pipe_setup_free(&s);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (a.json) {
    const char *ca = NULL;
    if (r.cache_after >= 0) mlsys_pipe_node_info(s.p, r.cache_after, NULL, NULL, &ca);
    printf("{\"method\": \"%s\", \"images\": %lld, \"batch\": %d, \"throughput\": %.4f, \"images_per_s\": %.2f, \"predicted\": %.4f, "
           "\"predicted_at_cores_used\": %.4f, \"cpu_cores_used\": %.3f, \"cores\": %.2f, \"bottleneck\": ",
           a.tune ? a.tune : "plumber", (long long)s.n, s.batch, r.x_measured, r.x_measured * s.batch, r.x_pred, r.x_hat, r.cores_used, m.cores);
    cli_json_str(stdout, r.bottleneck);
    printf(", \"cache_after\": ");
    if (ca) cli_json_str(stdout, ca); else printf("null");
    printf(", \"config\": ");
    print_config(stdout, s.p, r.root, 1);
    pipe_skips_json(stdout, &r.last);
    if (naive_x >= 0) printf(", \"naive_throughput\": %.4f, \"speedup_vs_naive\": %.3f", naive_x, naive_x > 0 ? r.x_measured / naive_x : 0);
    printf("}\n");
  } else {
    print_config(stdout, s.p, r.root, 0);
    if (r.cache_after >= 0) {
      const char *ca;
      mlsys_pipe_node_info(s.p, r.cache_after, NULL, NULL, &ca);
      printf("cache: after %s (its materialised output fits in memory; everything above is random)\n", ca);
    }
    printf("throughput: %.2f batches/s (%.0f images/s) using %.2f cores\n", r.x_measured, r.x_measured * s.batch, r.cores_used);
    printf("predicted:  %.2f batches/s at %.0f cores (LP), %.2f at the %.2f cores obtained\n", r.x_pred, m.cores, r.x_hat, r.cores_used);
    printf("bottleneck: %s\n", r.bottleneck);
    if (naive_x >= 0) printf("naive:      %.2f batches/s -> speedup %.2fx\n", naive_x, naive_x > 0 ? r.x_measured / naive_x : 0);
  }
  pipe_skips_warn(cmd, &r.last);
  mlsys_pipe_tune_result_free(&r);
  pipe_setup_free(&s);
  return CLI_OK;
}

static int pipe_trace(int argc, char **argv, const char *cmd) {
  pipe_args a;
  pipe_setup s;
  mlsys_pipe_machine m;
  mlsys_pipe_snapshot w;
  mlsys_pipe_analysis an;
  mlsys_status st;
  double secs = 3;
  int64_t batches = 0;
  int rc, par = 1, v, i;
  cli_opt opts[] = {{"--images", 1, &a.images}, {"--batch", 1, &a.batch}, {"--seconds", 1, &a.seconds}, {"--batches", 1, &a.batches},
                    {"--parallelism", 1, &a.parallelism},
                    {"--json", 0, &a.json}, {"--decoder", 1, &a.decoder}, {"--size", 1, &a.size}, {"--fused", 0, &a.fused},
                    {"--workers", 1, &a.workers}, {"--cores", 1, &a.cores}, {"--mem-free", 1, &a.mem_free}, {"--on-error", 1, &a.on_error},
                    {"--seed", 1, &a.seed}, {"--help", 0, &a.help}};
  memset(&a, 0, sizeof a);
  memset(&s, 0, sizeof s);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd))) return rc;
  if (a.help) { fputs(pipe_help, stdout); return CLI_OK; }
  if ((rc = pipe_window(cmd, &a, &secs, &batches))) return rc;
  if ((rc = pipe_int(cmd, "--parallelism", a.parallelism, 1, 4096, &par))) return rc;
  if ((rc = pipe_machine(cmd, &a, &m))) return rc;
  if ((rc = pipe_build(cmd, &a, &s))) { pipe_setup_free(&s); return rc; }
  for (v = 0; v < mlsys_pipe_nodes(s.p); v++) {
    int kind;
    mlsys_pipe_node_info(s.p, v, &kind, NULL, NULL);
    if (kind == MLSYS_PIPE_OP_MAP && par > 1) mlsys_pipe_set_knob(s.p, v, MLSYS_PIPE_KNOB_PARALLELISM, par);
  }
  st = batches > 0 ? mlsys_pipe_trace_elements(s.p, s.nodes.root, batches, (batches + 3) / 4, &w, NULL)
                   : mlsys_pipe_trace(s.p, s.nodes.root, secs, fmin(1.0, secs / 3), &w, NULL);
  if (st || (st = mlsys_pipe_analyze(&w, &m, &an))) {
    mlsys_pipe_snapshot_free(&w);
    pipe_setup_free(&s);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (a.json) {
    printf("{\"seconds\": %.3f, \"batches\": %lld, \"x_obs\": %.4f, \"cpu_cores_used\": %.3f, \"bottleneck\": ", w.seconds,
           (long long)w.op[0].produced, an.x_obs,
           w.seconds > 0 ? w.process_cpu_s / w.seconds : 0);
    cli_json_str(stdout, an.bottleneck >= 0 ? w.op[an.bottleneck].name : "-");
    pipe_skips_json(stdout, &w);
    printf(", \"ops\": [");
    for (i = 0; i < w.nops; i++) {
      printf("%s{\"name\": ", i ? ", " : "");
      cli_json_str(stdout, w.op[i].name);
      printf(", \"kind\": \"%s\", \"parallelism\": %d, \"elements\": %lld, \"skipped\": %lld, \"rate_per_core\": %.4f, \"rate\": %.4f, "
             "\"cores\": %.4f, \"random\": %s, \"stale\": %s}", mlsys_pipe_kind_name(w.op[i].kind), w.op[i].parallelism,
             (long long)w.op[i].produced, (long long)w.op[i].skipped,
             an.op[i].in_lp ? an.op[i].R : 0, an.op[i].in_lp ? an.op[i].Rp : 0, an.op[i].u, an.op[i].random ? "true" : "false",
             an.op[i].stale ? "true" : "false");
    }
    printf("]}\n");
  } else {
    printf("%lld images, batch %d, every map at parallelism %d, %.1f s window of %lld batches (R in minibatches/s per core):\n",
           (long long)s.n, s.batch, par, w.seconds, (long long)w.op[0].produced);
    mlsys_pipe_print_rates(stdout, &w, &an);
    printf("bottleneck: %s\n", an.bottleneck >= 0 ? w.op[an.bottleneck].name : "-");
  }
  pipe_skips_warn(cmd, &w);
  mlsys_pipe_analysis_free(&an);
  mlsys_pipe_snapshot_free(&w);
  pipe_setup_free(&s);
  return CLI_OK;
}

int cmd_pipeline(int argc, char **argv) {
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
    fputs(pipe_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[2], "run")) return pipe_run(argc, argv, "pipeline run");
  if (!strcmp(argv[2], "trace")) return pipe_trace(argc, argv, "pipeline trace");
  return cli_usage_error("pipeline", "unknown verb '%s' (run, trace)", argv[2]);
}
