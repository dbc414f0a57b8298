/* bench/bench_index.c — mlsys_index.h (MAPLE) benchmarks: the thesis's evaluation (Shah 2023, ch. 6; spec PART B5, §7.2).
   Run: make build/bench_index && ./build/bench_index <grid|sweep|ops> [options]

   1. `grid` — Fig 6.6 / 6.7. For each key set x insert fraction {1, 0.85, 0.15, 0} (write-only, write-heavy,
      read-heavy, read-only): bulk-load --init keys (default 10M, as the thesis) of a seeded shuffle of --keys keys
      (default 20M per set), then --ops operations (default 10M; the thesis ran 200M) from mlsys_index_workload_make.
      MAPLE = the tuner's pick on the first --prefix operations (default 200k; the insert-fraction rule, or with
      --predictor cnn the CNN from --model PATH or tools/maple_predictor.bin; top 10 measured), then the whole trace
      with that configuration. Against: ALEX (the
      gapped array with ALEX's cost model, expected insert fraction = the workload's), ALEX-W (expected insert fraction
      1), the B+tree, the fragmented log alone (default knobs) and, read-only, the sorted array. Every lookup of every
      run is checked (run.wrong must be 0, else exit 1). Prints one table per set and the targets, met or not.
      Without a predictor file the tuner measures a fixed 10-entry subset of the default grid (the same measuring
      budget as the top 10; no prediction) and the output says so; --predictor heuristic uses the spec's
      non-learned rule instead.
   2. `sweep` — §7.2 test 4(c) / Fig 6.4: every FLog configuration of mlsys_index_grid_default on one set (default
      gen:osm_like, --keys 4M, --init 1M), a read-only and a write-only trace of --ops operations (default 1M) each;
      read and write throughput, memory, and the Pareto front (no other configuration better on both).
   3. `ops` — per-operation latency (ns/op, best of 3) of find and insert for ALEX, ALEX-W, FLog, the B+tree and the
      sorted array with --keys keys bulk loaded (default 10M): --ops random lookups of present keys, --ops inserts of
      new keys (the sorted array: 100 inserts, each moves half of its arrays).
   Options: --keys N --init N --ops N --prefix N --sets A,B,C --model PATH --reps R (median of R runs per cell, default
   1) --predictor rule|cnn|none|heuristic --top-k K --hard A,B (sets held to the write-heavy 2x target; default
   gen:osm_like) --seed S --cpu N|none. Counts take k / M suffixes. The process pins itself to CPU --cpu (default 0)
   when it can (the thesis pinned one core with numactl); pick a core nothing else is busy on. */
#define _GNU_SOURCE
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "bench/bench_machine.h"
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  size_t keys, init, ops, prefix;
  int keys_set, init_set, ops_set;
  const char *sets, *model, *predictor, *hard;
  int reps, top_k, cpu;
  uint64_t seed;
} bopts;

/* "1000000", "10M", "200k" → count; -1 when not a whole count */
static int parse_count(const char *s, size_t *out) {
  char *end;
  double d;
  if (!s || !*s) return -1;
  errno = 0;
  d = strtod(s, &end);
  if (errno || end == s || d < 0) return -1;
  if (*end == 'k' || *end == 'K') { d *= 1e3; end++; }
  else if (*end == 'M' || *end == 'm') { d *= 1e6; end++; }
  if (*end || d != floor(d) || d > 1e12) return -1;
  *out = (size_t)d;
  return 0;
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The thesis pinned the benchmark to one core with local memory (numactl); here CPU --cpu (default 0), when allowed. */
static void pin_cpu(int cpu, char *msg, size_t n) {
  cpu_set_t set;
  if (cpu < 0) { snprintf(msg, n, "not pinned (--cpu none)"); return; }
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) == 0) snprintf(msg, n, "pinned to CPU %d (sched_setaffinity; the thesis pinned one core)", cpu);
  else snprintf(msg, n, "NOT pinned (sched_setaffinity to CPU %d: %s)", cpu, strerror(errno));
}

static void header(const char *mode, const char *pin) {
  char model[256], date[64], la[64];
  bench_machine(model, sizeof model, date, sizeof date);
  bench_loadavg(la, sizeof la);
  printf("bench_index %s\nmachine: %s; load average %s\ndate: %s\n%s\n", mode, model, la, date, pin);
}

/* "gen:osm_like" → "gen:osm_like:<n>"; anything else (gen:DIST:N, real:NAME, a SOSD file) as given */
static mlsys_status load_set(const char *set, size_t n, uint64_t seed, uint64_t **keys, size_t *n_keys) {
  char spec[512];
  if (!strncmp(set, "gen:", 4) && !strchr(set + 4, ':')) snprintf(spec, sizeof spec, "%s:%zu", set, n);
  else snprintf(spec, sizeof spec, "%s", set);
  return mlsys_index_keys_load(spec, seed, keys, n_keys);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* R runs of one arm; *out is the run with the median throughput (spec §7.2: medians on a shared 2-core box). Every
   failure and every wrong answer is fatal: a benchmark of a wrong index measures nothing. */
static int run_median(const char *what, mlsys_index_kind kind, const mlsys_index_config *cfg, const uint64_t *bulk, size_t n_bulk,
                      const mlsys_index_trace *t, int reps, mlsys_index_run_result *out) {
  mlsys_index_run_result rr[64];
  double m[64], med;
  int r;
  if (reps > 64) reps = 64;
  for (r = 0; r < reps; r++) {
    if (mlsys_index_run(kind, cfg, bulk, n_bulk, t, 0, &rr[r])) {
      fprintf(stderr, "bench_index: %s: %s\n", what, mlsys_last_error());
      return 1;
    }
    if (rr[r].wrong) {
      fprintf(stderr, "bench_index: %s: %zu of %zu operations gave wrong answers\n", what, rr[r].wrong, rr[r].ops_done);
      return 1;
    }
    m[r] = rr[r].mops;
  }
  qsort(m, (size_t)reps, sizeof *m, cmp_double);
  med = m[(reps - 1) / 2];
  for (r = 0; r < reps; r++)
    if (rr[r].mops == med) break;
  *out = rr[r < reps ? r : 0];
  return 0;
}

static double mb(size_t b) { return (double)b / 1e6; }

/* ------------------------------------------------------------------------------------------------------------------
   grid (Fig 6.6 / 6.7)
   ------------------------------------------------------------------------------------------------------------------ */

enum { ARM_MAPLE, ARM_ALEX, ARM_ALEXW, ARM_BTREE, ARM_FLOG, ARM_SORTED, N_ARMS };
static const char *arm_name[N_ARMS] = {"MAPLE", "ALEX", "ALEX-W", "B+tree", "FLog", "sorted array"};

typedef struct {
  double frac;
  char choice[128];
  double tune_s;
  size_t tune_measured;
  mlsys_index_run_result arm[N_ARMS];
  int have[N_ARMS];
  size_t ops, inserts;
  int exhausted;
} grid_cell;

static const double grid_fracs[4] = {1, 0.85, 0.15, 0};
static const char *grid_wl[4] = {"write-only", "write-heavy", "read-heavy", "read-only"};
/* thesis Fig 6.6, MAPLE relative to ALEX (spec B5) */
static const char *thesis_osm[4] = {"3.9x", "2.0x", "-4..-8 %", "-8 %"};
static const char *thesis_books[4] = {"1.88x", "~1.0x", "-4..-8 %", "-3 %"};
static const char *thesis_fb[4] = {"7.5x", "2.8x", "-4..-8 %", "-20 %"};

/* The fallback when no predictor file exists: a fixed 10-entry subset of the default grid (ALEX's cost model, three
   Msi/Msh gapped arrays, six fragmented logs across mf_size / Mnf / nf), all measured: the tuner's measuring budget
   (top 10) without the prediction step. */
static const char *fallback_grid[10] = {"alex",
                                        "ga:msi=1.5,msh=4",
                                        "ga:msi=2,msh=16",
                                        "ga:msi=4,msh=64",
                                        "flog:mf=16,mnf=64,nf=4",
                                        "flog:mf=32,mnf=16,nf=4",
                                        "flog:mf=64,mnf=64,nf=4",
                                        "flog:mf=128,mnf=16,nf=2",
                                        "flog:mf=256,mnf=64,nf=4",
                                        "flog:mf=1024,mnf=256,nf=8"};

typedef enum { TUNER_RULE, TUNER_CNN, TUNER_SUBSET, TUNER_HEURISTIC } tuner_kind;

/* MAPLE's tuner on the workload's prefix (thesis §6.3: predict, measure the top k, keep the fastest) */
static int maple_tune(tuner_kind tk, const mlsys_index_model *model, int top_k, const mlsys_index_workload *w, size_t prefix_n,
                      grid_cell *c, mlsys_index_config *chosen) {
  mlsys_index_trace prefix = w->trace;
  mlsys_index_tune_opts to;
  mlsys_index_tune_result tr;
  mlsys_index_config sub[10];
  double t0 = mlsys_now();
  size_t i;
  if (prefix_n < prefix.n) prefix.n = prefix_n;
  memset(&to, 0, sizeof to);
  to.top_k = top_k;
  if (tk == TUNER_HEURISTIC) {
    *chosen = mlsys_index_tune_heuristic(&prefix);
    c->tune_s = mlsys_now() - t0;
    c->tune_measured = 0;
    return 0;
  }
  if (tk == TUNER_RULE) {
    to.predictor = MLSYS_INDEX_PREDICT_RULE;
  } else if (tk == TUNER_CNN) {
    to.predictor = MLSYS_INDEX_PREDICT_MODEL;
    to.model = model;
  } else {
    double eif = mlsys_index_trace_insert_frac(&prefix);
    for (i = 0; i < 10; i++)
      if (mlsys_index_config_parse(fallback_grid[i], eif, &sub[i])) {
        fprintf(stderr, "bench_index: %s\n", mlsys_last_error());
        return 1;
      }
    to.predictor = MLSYS_INDEX_PREDICT_NONE;
    to.grid = sub;
    to.n_grid = 10;
  }
  if (mlsys_index_tune(w->bulk, w->n_bulk, &prefix, &to, &tr)) {
    fprintf(stderr, "bench_index: tuning: %s\n", mlsys_last_error());
    return 1;
  }
  *chosen = tr.best;
  c->tune_s = mlsys_now() - t0;
  c->tune_measured = tr.n_cand;
  mlsys_index_tune_result_free(&tr);
  return 0;
}

static void fmt_mops(const grid_cell *c, int a, char *buf, size_t n) {
  if (c->have[a]) snprintf(buf, n, "%.3f", c->arm[a].mops);
  else snprintf(buf, n, "-");
}

static int in_list(const char *list, const char *s) {
  const char *p = list;
  size_t l = strlen(s);
  while (p && *p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == l && !strncmp(p, s, l)) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

static void print_set_tables(const char *set, size_t n_keys, size_t n_init, const grid_cell *cells, int reps) {
  int f, a;
  char b[N_ARMS][32];
  printf("\n### %s (%zu keys, %zu bulk loaded; Mops/s, median of %d run(s))\n\n", set, n_keys, n_init, reps);
  printf("| workload | ops | MAPLE's choice | MAPLE Mops/s | ALEX | ALEX-W | B+tree | FLog | sorted array | MAPLE/ALEX | memory "
         "MAPLE/ALEX | thesis (osm) | tuning s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (f = 0; f < 4; f++) {
    const grid_cell *c = &cells[f];
    for (a = 0; a < N_ARMS; a++) fmt_mops(c, a, b[a], sizeof b[a]);
    printf("| %s (%.2g) | %zu%s | %s | **%s** | %s | %s | %s | %s | %s | **%.2fx** | %.3f | %s | %.1f |\n", grid_wl[f], c->frac, c->ops,
           c->exhausted ? " (keys ran out)" : "", c->choice, b[ARM_MAPLE], b[ARM_ALEX], b[ARM_ALEXW], b[ARM_BTREE], b[ARM_FLOG],
           b[ARM_SORTED], c->arm[ARM_MAPLE].mops / c->arm[ARM_ALEX].mops,
           (double)c->arm[ARM_MAPLE].bytes / (double)c->arm[ARM_ALEX].bytes, thesis_osm[f], c->tune_s);
  }
  printf("\nmemory at the end of the workload (MB, Fig 6.7):\n\n| workload | MAPLE | ALEX | ALEX-W | B+tree | FLog | sorted array |\n"
         "|---|---|---|---|---|---|---|\n");
  for (f = 0; f < 4; f++) {
    const grid_cell *c = &cells[f];
    printf("| %s |", grid_wl[f]);
    for (a = 0; a < N_ARMS; a++)
      if (c->have[a]) printf(" %.1f |", mb(c->arm[a].bytes));
      else printf(" - |");
    printf("\n");
  }
  fflush(stdout);
}

static int bench_grid(const bopts *o, const char *pin) {
  const char *sets = o->sets ? o->sets : "gen:osm_like,gen:words_like,gen:ipv4_like,gen:lognormal";
  const char *hard = o->hard ? o->hard : "gen:osm_like";
  size_t keys_n = o->keys_set ? o->keys : 20000000, init = o->init_set ? o->init : 10000000, ops = o->ops_set ? o->ops : 10000000;
  size_t prefix_n = o->prefix ? o->prefix : 200000;
  mlsys_index_model *model = NULL;
  tuner_kind tk;
  char tuner_desc[600], setbuf[512];
  const char *p;
  int rc = 0, n_sets = 0;
  /* every cell of every set, kept for the summary against the targets */
  enum { MAXSETS = 32 };
  static grid_cell all[MAXSETS][4];
  static char set_names[MAXSETS][512];
  header("grid (thesis Fig 6.6 / 6.7; spec B5)", pin);

  /* the predictor: --model PATH or $MLSYS_INDEX_MODEL (must load), else tools/maple_predictor.bin here or beside the binary's
     repository (as `mlsys index bench`), else the measured subset */
  if (o->predictor && !strcmp(o->predictor, "heuristic")) {
    tk = TUNER_HEURISTIC;
    snprintf(tuner_desc, sizeof tuner_desc, "MAPLE = the spec's heuristic (FLog when > 50 %% of the prefix inserts, else ALEX), no measuring");
  } else if (o->predictor && !strcmp(o->predictor, "none")) {
    tk = TUNER_SUBSET;
    snprintf(tuner_desc, sizeof tuner_desc, "MAPLE = the fastest of a fixed 10-entry subset of the grid, all measured on the prefix (no predictor)");
  } else if ((!o->predictor && !o->model) || (o->predictor && !strcmp(o->predictor, "rule"))) {
    tk = TUNER_RULE;
    snprintf(tuner_desc, sizeof tuner_desc, "MAPLE = the insert-fraction rule (the default predictor), top %d measured on the prefix", o->top_k);
  } else if (o->predictor && strcmp(o->predictor, "cnn")) {
    fprintf(stderr, "bench_index: --predictor '%s' is not rule, cnn, none or heuristic\n", o->predictor);
    return 2;
  } else {
    char cand[4400], exe[4096];
    const char *use = o->model, *env = getenv("MLSYS_INDEX_MODEL");
    int explicit_path = o->model || (env && *env);
    if (!use && env && *env) use = env;
    if (!use) {
      ssize_t n;
      use = "tools/maple_predictor.bin";
      if (!file_exists(use) && (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
        char *s;
        exe[n] = 0;
        if ((s = strrchr(exe, '/'))) {
          *s = 0;
          snprintf(cand, sizeof cand, "%s/../tools/maple_predictor.bin", exe);
          if (file_exists(cand)) use = cand;
        }
      }
    }
    if (!explicit_path && !file_exists(use)) {
      tk = TUNER_SUBSET;
      snprintf(tuner_desc, sizeof tuner_desc,
               "NO PREDICTOR (tools/maple_predictor.bin not found): MAPLE = the fastest of a fixed 10-entry subset of the grid, all "
               "measured on the prefix");
    } else if (mlsys_index_model_load(use, &model)) {
      fprintf(stderr, "bench_index: cannot load the predictor: %s\n", mlsys_last_error());
      return 1;
    } else {
      tk = TUNER_CNN;
      snprintf(tuner_desc, sizeof tuner_desc, "MAPLE = CNN predictor %.400s, top %d measured on the prefix", use, o->top_k);
    }
  }
  printf("key sets: %s; %zu keys per generated set, bulk load %zu, %zu operations, tuning prefix %zu operations, seed %llu, "
         "median of %d run(s) per cell\n%s\n",
         sets, keys_n, init, ops, prefix_n, (unsigned long long)o->seed, o->reps, tuner_desc);
  if (tk == TUNER_SUBSET) {
    int i;
    printf("subset:");
    for (i = 0; i < 10; i++) printf(" %s", fallback_grid[i]);
    printf(" (GA entries with eif = the prefix's insert fraction)\n");
  }
  printf("thesis (Fig 6.6, MAPLE vs ALEX; 200M ops on SOSD books / fb / osm): write-only 1.88x / 7.5x / 3.9x, write-heavy ~1.0x / 2.8x "
         "/ 2.0x, read-heavy -4..-8 %% on all three, read-only -3 %% / -20 %% / -8 %%. Our sets are osm/words/ipv4-like, so the tables "
         "quote the osm column.\n");
  fflush(stdout);

  for (p = sets; p && *p && rc == 0;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    uint64_t *keys = NULL;
    size_t n_keys = 0, set_init;
    int f;
    double t0 = mlsys_now();
    if (l >= sizeof setbuf) l = sizeof setbuf - 1;
    memcpy(setbuf, p, l);
    setbuf[l] = 0;
    p = e ? e + 1 : NULL;
    if (!l) continue;
    if (n_sets >= MAXSETS) { fprintf(stderr, "bench_index: more than %d sets\n", MAXSETS); rc = 2; break; }
    if (load_set(setbuf, keys_n, o->seed, &keys, &n_keys)) {
      fprintf(stderr, "bench_index: %s: %s\n", setbuf, mlsys_last_error());
      rc = 1;
      break;
    }
    set_init = init;
    if (set_init >= n_keys) {
      set_init = n_keys / 2 ? n_keys / 2 : 1;
      printf("note: %s holds %zu keys; bulk load cut to %zu\n", setbuf, n_keys, set_init);
    }
    fprintf(stderr, "[%s] %zu keys loaded in %.1f s\n", setbuf, n_keys, mlsys_now() - t0);
    snprintf(set_names[n_sets], sizeof set_names[n_sets], "%s", setbuf);
    for (f = 0; f < 4 && rc == 0; f++) {
      grid_cell *c = &all[n_sets][f];
      mlsys_index_workload_opts wo;
      mlsys_index_workload w;
      mlsys_index_config cfg[N_ARMS];
      char what[700];
      int a;
      memset(c, 0, sizeof *c);
      memset(&wo, 0, sizeof wo);
      memset(&w, 0, sizeof w);
      memset(cfg, 0, sizeof cfg);
      c->frac = grid_fracs[f];
      wo.n_init = set_init;
      wo.n_ops = ops;
      wo.insert_frac = c->frac;
      wo.seed = o->seed;
      if (mlsys_index_workload_make(keys, n_keys, &wo, &w)) {
        fprintf(stderr, "bench_index: %s: workload: %s\n", setbuf, mlsys_last_error());
        mlsys_index_workload_free(&w);
        rc = 1;
        break;
      }
      c->ops = w.trace.n;
      c->inserts = w.n_inserts;
      c->exhausted = w.exhausted;
      if (maple_tune(tk, model, o->top_k, &w, prefix_n, c, &cfg[ARM_MAPLE])) { rc = 1; mlsys_index_workload_free(&w); break; }
      cfg[ARM_ALEX].expected_insert_frac = c->frac;
      {
        /* a choice identical to the ALEX arm is marked: their ratio is then run-to-run noise */
        char an[128];
        mlsys_index_config_format(&cfg[ARM_MAPLE], c->choice, sizeof c->choice);
        if (!strcmp(c->choice, mlsys_index_config_format(&cfg[ARM_ALEX], an, sizeof an)) && strlen(c->choice) + 10 < sizeof c->choice)
          strcat(c->choice, " (= ALEX)");
      }
      fprintf(stderr, "[%s f=%.2g] tuned in %.1f s: %s\n", setbuf, c->frac, c->tune_s, c->choice);
      cfg[ARM_ALEXW].expected_insert_frac = 1;
      cfg[ARM_FLOG].leaf = MLSYS_INDEX_FLOG;
      for (a = 0; a < N_ARMS; a++) {
        mlsys_index_kind kind = a == ARM_BTREE ? MLSYS_INDEX_KIND_BTREE : a == ARM_SORTED ? MLSYS_INDEX_KIND_SORTED : MLSYS_INDEX_KIND_MAPLE;
        if (a == ARM_SORTED && w.n_inserts) continue;
        snprintf(what, sizeof what, "%s, %s, %s", setbuf, grid_wl[f], arm_name[a]);
        if (run_median(what, kind, &cfg[a], w.bulk, w.n_bulk, &w.trace, o->reps, &c->arm[a])) { rc = 1; break; }
        c->have[a] = 1;
        fprintf(stderr, "[%s f=%.2g] %-12s %8.3f Mops/s %8.1f MB\n", setbuf, c->frac, arm_name[a], c->arm[a].mops, mb(c->arm[a].bytes));
      }
      mlsys_index_workload_free(&w);
    }
    if (rc == 0) {
      print_set_tables(setbuf, n_keys, set_init, all[n_sets], o->reps);
      n_sets++;
    }
    mlsys_free(keys);
  }
  mlsys_index_model_free(model);
  if (rc) return rc;

  /* the targets (spec B5 / §7.2 test 4): met or not, per cell */
  {
    int s, f;
    int met = 0, total = 0;
    printf("\n### Against the issue's targets (MAPLE/ALEX throughput; memory = MAPLE's bytes / ALEX's at the end, lower is fine)\n\n");
    printf("| set | write-only >= 1.9x | write-heavy >= 1x (2x on hard sets) | read-heavy (thesis -4..-8 %%; no target) | read-only within 5 %% "
           "| memory <= 1.10x ALEX (4 workloads) |\n|---|---|---|---|---|---|\n");
    for (s = 0; s < n_sets; s++) {
      const grid_cell *c = all[s];
      double r[4];
      int h = in_list(hard, set_names[s]), ok, mem_ok = 1;
      char memcell[200];
      size_t ml = 0;
      for (f = 0; f < 4; f++) r[f] = c[f].arm[ARM_MAPLE].mops / c[f].arm[ARM_ALEX].mops;
      printf("| %s%s |", set_names[s], h ? " (hard)" : "");
      ok = r[0] >= 1.9;
      met += ok; total++;
      printf(" %.2fx %s |", r[0], ok ? "met" : "**not met**");
      ok = r[1] >= (h ? 2.0 : 1.0);
      met += ok; total++;
      printf(" %.2fx %s (>= %s) |", r[1], ok ? "met" : "**not met**", h ? "2x" : "1x");
      printf(" %.2fx |", r[2]);
      ok = r[3] >= 0.95;
      met += ok; total++;
      printf(" %.2fx %s |", r[3], ok ? "met" : "**not met**");
      memcell[0] = 0;
      for (f = 0; f < 4; f++) {
        double m = (double)c[f].arm[ARM_MAPLE].bytes / (double)c[f].arm[ARM_ALEX].bytes;
        ok = m <= 1.10;
        mem_ok &= ok;
        met += ok; total++;
        ml += (size_t)snprintf(memcell + ml, sizeof memcell - ml, "%s%.2f%s", f ? " / " : "", m, ok ? "" : " (over)");
      }
      printf(" %s: %s |\n", memcell, mem_ok ? "met" : "**not met**");
    }
    printf("\n%d of %d target cells met. Every run's lookups were checked: 0 wrong answers. Thesis, for comparison (books / fb / osm): "
           "write-only %s / %s / %s, write-heavy %s / %s / %s, read-only %s / %s / %s.\n",
           met, total, thesis_books[0], thesis_fb[0], thesis_osm[0], thesis_books[1], thesis_fb[1], thesis_osm[1], thesis_books[3],
           thesis_fb[3], thesis_osm[3]);
    (void)thesis_books[2];
    (void)thesis_fb[2];
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------------------------------
   sweep (Fig 6.4; §7.2 test 4(c))
   ------------------------------------------------------------------------------------------------------------------ */

typedef struct {
  mlsys_index_config cfg;
  mlsys_index_run_result rd, wr;
  int front;
} sweep_row;

static int bench_sweep(const bopts *o, const char *pin) {
  const char *set = o->sets ? o->sets : "gen:osm_like";
  size_t keys_n = o->keys_set ? o->keys : 4000000, init = o->init_set ? o->init : 1000000, ops = o->ops_set ? o->ops : 1000000;
  mlsys_index_config *grid = NULL;
  size_t n_grid = 0, i, j, n = 0, n_front = 0;
  uint64_t *keys = NULL;
  size_t n_keys = 0;
  mlsys_index_workload wr, ww;
  mlsys_index_workload_opts wo;
  sweep_row *rows = NULL, ref[2];
  char name[128];
  int rc = 0;
  double t0 = mlsys_now();
  header("sweep (thesis Fig 6.4; spec §7.2 test 4(c))", pin);
  memset(&wr, 0, sizeof wr);
  memset(&ww, 0, sizeof ww);
  if (strchr(set, ',')) { fprintf(stderr, "bench_index: sweep takes one set (--sets %s)\n", set); return 2; }
  if (load_set(set, keys_n, o->seed, &keys, &n_keys)) { fprintf(stderr, "bench_index: %s: %s\n", set, mlsys_last_error()); return 1; }
  if (init >= n_keys) init = n_keys / 2 ? n_keys / 2 : 1;
  memset(&wo, 0, sizeof wo);
  wo.n_init = init;
  wo.n_ops = ops;
  wo.seed = o->seed;
  wo.insert_frac = 0;
  if (mlsys_index_workload_make(keys, n_keys, &wo, &wr)) { fprintf(stderr, "bench_index: %s\n", mlsys_last_error()); rc = 1; goto out; }
  wo.insert_frac = 1;
  if (mlsys_index_workload_make(keys, n_keys, &wo, &ww)) { fprintf(stderr, "bench_index: %s\n", mlsys_last_error()); rc = 1; goto out; }
  if (mlsys_index_grid_default(0, &grid, &n_grid)) { fprintf(stderr, "bench_index: %s\n", mlsys_last_error()); rc = 1; goto out; }
  rows = (sweep_row *)calloc(n_grid, sizeof *rows);
  if (!rows) { rc = 1; goto out; }
  printf("set %s: %zu keys, bulk load %zu; read-only trace %zu lookups, write-only trace %zu inserts%s; median of %d\n", set, n_keys, wr.n_bulk,
         wr.trace.n, ww.trace.n, ww.exhausted ? " (keys ran out)" : "", o->reps);
  fflush(stdout);
  for (i = 0; i < n_grid; i++) {
    char what[300];
    if (grid[i].leaf != MLSYS_INDEX_FLOG) continue;
    rows[n].cfg = grid[i];
    mlsys_index_config_format(&grid[i], name, sizeof name);
    snprintf(what, sizeof what, "%s read-only", name);
    if (run_median(what, MLSYS_INDEX_KIND_MAPLE, &grid[i], wr.bulk, wr.n_bulk, &wr.trace, o->reps, &rows[n].rd)) { rc = 1; goto out; }
    snprintf(what, sizeof what, "%s write-only", name);
    if (run_median(what, MLSYS_INDEX_KIND_MAPLE, &grid[i], ww.bulk, ww.n_bulk, &ww.trace, o->reps, &rows[n].wr)) { rc = 1; goto out; }
    fprintf(stderr, "[sweep %zu] %-28s read %7.3f write %7.3f Mops/s\n", n + 1, name, rows[n].rd.mops, rows[n].wr.mops);
    n++;
  }
  /* references, outside the front: ALEX (eif 0 on the reads, 1 on the writes: its best setting for each) */
  memset(ref, 0, sizeof ref);
  if (run_median("ALEX read-only", MLSYS_INDEX_KIND_MAPLE, &ref[0].cfg, wr.bulk, wr.n_bulk, &wr.trace, o->reps, &ref[0].rd)) { rc = 1; goto out; }
  ref[1].cfg.expected_insert_frac = 1;
  if (run_median("ALEX-W write-only", MLSYS_INDEX_KIND_MAPLE, &ref[1].cfg, ww.bulk, ww.n_bulk, &ww.trace, o->reps, &ref[0].wr)) { rc = 1; goto out; }
  if (run_median("B+tree read-only", MLSYS_INDEX_KIND_BTREE, &ref[1].cfg, wr.bulk, wr.n_bulk, &wr.trace, o->reps, &ref[1].rd)) { rc = 1; goto out; }
  if (run_median("B+tree write-only", MLSYS_INDEX_KIND_BTREE, &ref[1].cfg, ww.bulk, ww.n_bulk, &ww.trace, o->reps, &ref[1].wr)) { rc = 1; goto out; }

  /* Pareto front over (read Mops/s, write Mops/s), both higher-is-better: a configuration is off the front when another
     is at least as fast on both and strictly faster on one */
  for (i = 0; i < n; i++) {
    int dom = 0;
    for (j = 0; j < n && !dom; j++)
      dom = j != i && rows[j].rd.mops >= rows[i].rd.mops && rows[j].wr.mops >= rows[i].wr.mops &&
            (rows[j].rd.mops > rows[i].rd.mops || rows[j].wr.mops > rows[i].wr.mops);
    rows[i].front = !dom;
    n_front += !dom;
  }
  printf("\n| FLog configuration | read Mops/s | write Mops/s | read ns/op | write ns/op | memory after bulk load MB | after the writes MB | "
         "Pareto |\n|---|---|---|---|---|---|---|---|\n");
  for (i = 0; i < n; i++)
    printf("| %s | %.3f | %.3f | %.0f | %.0f | %.1f | %.1f | %s |\n", mlsys_index_config_format(&rows[i].cfg, name, sizeof name), rows[i].rd.mops,
           rows[i].wr.mops, 1e3 / rows[i].rd.mops, 1e3 / rows[i].wr.mops, mb(rows[i].rd.bytes), mb(rows[i].wr.bytes),
           rows[i].front ? "**front**" : "");
  printf("| (reference) ALEX eif 0 reads / ALEX-W writes | %.3f | %.3f | %.0f | %.0f | %.1f | %.1f | |\n", ref[0].rd.mops, ref[0].wr.mops,
         1e3 / ref[0].rd.mops, 1e3 / ref[0].wr.mops, mb(ref[0].rd.bytes), mb(ref[0].wr.bytes));
  printf("| (reference) B+tree | %.3f | %.3f | %.0f | %.0f | %.1f | %.1f | |\n", ref[1].rd.mops, ref[1].wr.mops, 1e3 / ref[1].rd.mops,
         1e3 / ref[1].wr.mops, mb(ref[1].rd.bytes), mb(ref[1].wr.bytes));
  printf("\nPareto front (read-fastest first):\n\n| configuration | read Mops/s | write Mops/s |\n|---|---|---|\n");
  {
    /* selection by read throughput, descending (n is small) */
    int *done = (int *)calloc(n ? n : 1, sizeof *done);
    size_t k;
    for (k = 0; done && k < n_front; k++) {
      size_t best = n;
      for (i = 0; i < n; i++)
        if (rows[i].front && !done[i] && (best == n || rows[i].rd.mops > rows[best].rd.mops)) best = i;
      if (best == n) break;
      done[best] = 1;
      printf("| %s | %.3f | %.3f |\n", mlsys_index_config_format(&rows[best].cfg, name, sizeof name), rows[best].rd.mops, rows[best].wr.mops);
    }
    free(done);
  }
  {
    double rlo = 1e30, rhi = 0, wlo = 1e30, whi = 0;
    for (i = 0; i < n; i++) {
      if (rows[i].rd.mops < rlo) rlo = rows[i].rd.mops;
      if (rows[i].rd.mops > rhi) rhi = rows[i].rd.mops;
      if (rows[i].wr.mops < wlo) wlo = rows[i].wr.mops;
      if (rows[i].wr.mops > whi) whi = rows[i].wr.mops;
    }
    printf("\n%zu of %zu FLog configurations are on the read/write Pareto front (spec §7.2 4(c): a non-trivial front, i.e. more than one "
           "and far from all: %s). Reads span %.2f..%.2f Mops/s (%.1fx), writes %.2f..%.2f Mops/s (%.1fx). Sweep took %.0f s.\n",
           n_front, n, n_front > 1 && n_front * 2 < n ? "met" : "**not met**", rlo, rhi, rhi / rlo, wlo, whi, whi / wlo, mlsys_now() - t0);
  }
out:
  free(rows);
  mlsys_free(grid);
  mlsys_index_workload_free(&wr);
  mlsys_index_workload_free(&ww);
  mlsys_free(keys);
  return rc;
}

/* ------------------------------------------------------------------------------------------------------------------
   ops (per-operation latency)
   ------------------------------------------------------------------------------------------------------------------ */

enum { OPS_ALEX, OPS_ALEXW, OPS_FLOG, OPS_BTREE, OPS_SORTED, N_OPS_ARMS };
static const char *ops_name[N_OPS_ARMS] = {"ALEX (GA, cost model, eif 0)", "ALEX-W (GA, eif 1)", "FLog (default knobs)", "B+tree (256-byte nodes)",
                                           "sorted array"};

typedef struct {
  int kind;   /* OPS_* */
  mlsys_index *ix;
  mlsys_index_btree *bt;
  mlsys_index_sorted *sa;
} ops_handle;

static mlsys_status ops_create(int kind, const uint64_t *bulk, size_t n, ops_handle *h) {
  mlsys_index_config c;
  memset(h, 0, sizeof *h);
  memset(&c, 0, sizeof c);
  h->kind = kind;
  if (kind == OPS_ALEXW) c.expected_insert_frac = 1;
  if (kind == OPS_FLOG) c.leaf = MLSYS_INDEX_FLOG;
  if (kind == OPS_BTREE) return mlsys_index_btree_create(0, bulk, NULL, n, &h->bt);
  if (kind == OPS_SORTED) return mlsys_index_sorted_create(bulk, NULL, n, &h->sa);
  return mlsys_index_create(&c, bulk, NULL, n, &h->ix);
}

static void ops_free(ops_handle *h) {
  mlsys_index_free(h->ix);
  mlsys_index_btree_free(h->bt);
  mlsys_index_sorted_free(h->sa);
  memset(h, 0, sizeof *h);
}

static size_t ops_memory(const ops_handle *h) {
  if (h->ix) return mlsys_index_memory(h->ix);
  if (h->bt) return mlsys_index_btree_memory(h->bt);
  return mlsys_index_sorted_memory(h->sa);
}

/* the timed loops, one per structure (no dispatch inside: thesis §6.4 measured 14 % for virtual calls); each returns the
   number of lookups that missed or returned another payload / inserts refused */
static size_t ops_finds(const ops_handle *h, const uint64_t *k, size_t m) {
  size_t i, bad = 0;
  uint64_t v = 0;
  if (h->ix)
    for (i = 0; i < m; i++) {
      int f = mlsys_index_find(h->ix, k[i], &v);   /* a statement of its own: v is read after the call */
      bad += !f | (v != mlsys_index_payload_of(k[i]));
    }
  else if (h->bt)
    for (i = 0; i < m; i++) {
      int f = mlsys_index_btree_find(h->bt, k[i], &v);   /* a statement of its own: v is read after the call */
      bad += !f | (v != mlsys_index_payload_of(k[i]));
    }
  else
    for (i = 0; i < m; i++) {
      int f = mlsys_index_sorted_find(h->sa, k[i], &v);   /* a statement of its own: v is read after the call */
      bad += !f | (v != mlsys_index_payload_of(k[i]));
    }
  return bad;
}

static size_t ops_inserts(ops_handle *h, const uint64_t *k, size_t m) {
  size_t i, bad = 0;
  if (h->ix)
    for (i = 0; i < m; i++) bad += mlsys_index_insert(h->ix, k[i], mlsys_index_payload_of(k[i])) != 1;
  else if (h->bt)
    for (i = 0; i < m; i++) bad += mlsys_index_btree_insert(h->bt, k[i], mlsys_index_payload_of(k[i])) != 1;
  else
    for (i = 0; i < m; i++) bad += mlsys_index_sorted_insert(h->sa, k[i], mlsys_index_payload_of(k[i])) != 1;
  return bad;
}

static int bench_ops(const bopts *o, const char *pin) {
  const char *set = o->sets ? o->sets : "gen:osm_like";
  size_t n = o->keys_set ? o->keys : 10000000, m = o->ops_set ? o->ops : 1000000;
  size_t n_all = 0, i, n_sorted_ins;
  uint64_t *all = NULL, *bulk = NULL, *look = NULL;
  const uint64_t *ins;
  mlsys_rng rng;
  int a, r, rc = 0, reps = 3;
  header("ops (per-operation latency)", pin);
  if (strchr(set, ',')) { fprintf(stderr, "bench_index: ops takes one set (--sets %s)\n", set); return 2; }
  if (load_set(set, n + m, o->seed, &all, &n_all)) { fprintf(stderr, "bench_index: %s: %s\n", set, mlsys_last_error()); return 1; }
  if (n_all < 2) { fprintf(stderr, "bench_index: %s holds %zu keys\n", set, n_all); mlsys_free(all); return 1; }
  if (n + m > n_all) {   /* a real set smaller than asked: half loaded, half inserted */
    n = n_all / 2;
    m = n_all - n;
  }
  /* a seeded shuffle: the first n keys are bulk loaded (sorted), the next m inserted in random order; lookups are m
     keys drawn uniformly from the bulk load */
  mlsys_rng_seed(&rng, o->seed);
  for (i = n_all - 1; i > 0; i--) {
    size_t j = (size_t)mlsys_rng_below(&rng, i + 1);
    uint64_t t = all[i];
    all[i] = all[j];
    all[j] = t;
  }
  bulk = (uint64_t *)malloc(n * sizeof *bulk);
  look = (uint64_t *)malloc(m * sizeof *look);
  if (!bulk || !look) { fprintf(stderr, "bench_index: out of memory\n"); rc = 1; goto out; }
  memcpy(bulk, all, n * sizeof *bulk);
  mlsys_index_keys_dedup(bulk, n);   /* sorts (keys are already distinct) */
  ins = all + n;
  for (i = 0; i < m; i++) look[i] = all[mlsys_rng_below(&rng, n)];
  n_sorted_ins = m < 100 ? m : 100;
  printf("set %s: %zu keys bulk loaded; %zu uniform lookups of present keys, %zu inserts of new keys in random order (sorted array: %zu); "
         "best of %d (a fresh bulk load before each insert run)\n\n",
         set, n, m, m, n_sorted_ins, reps);
  printf("| structure | bulk load s | find ns/op | insert ns/op | memory after bulk load MB | after the inserts MB |\n|---|---|---|---|---|---|\n");
  for (a = 0; a < N_OPS_ARMS; a++) {
    double best_f = 1e30, best_i = 1e30, build = 1e30;
    size_t mem0 = 0, mem1 = 0, m_ins = a == OPS_SORTED ? n_sorted_ins : m;
    for (r = 0; r < reps; r++) {
      ops_handle h;
      double t0 = mlsys_now(), t1;
      size_t bad;
      if (ops_create(a, bulk, n, &h)) { fprintf(stderr, "bench_index: %s: %s\n", ops_name[a], mlsys_last_error()); rc = 1; goto out; }
      t1 = mlsys_now();
      if (t1 - t0 < build) build = t1 - t0;
      mem0 = ops_memory(&h);
      t0 = mlsys_now();
      bad = ops_finds(&h, look, m);
      t1 = mlsys_now();
      if (bad) { fprintf(stderr, "bench_index: %s: %zu of %zu lookups wrong\n", ops_name[a], bad, m); ops_free(&h); rc = 1; goto out; }
      if ((t1 - t0) / (double)m < best_f) best_f = (t1 - t0) / (double)m;
      t0 = mlsys_now();
      bad = ops_inserts(&h, ins, m_ins);
      t1 = mlsys_now();
      if (bad) { fprintf(stderr, "bench_index: %s: %zu of %zu inserts refused\n", ops_name[a], bad, m_ins); ops_free(&h); rc = 1; goto out; }
      if ((t1 - t0) / (double)m_ins < best_i) best_i = (t1 - t0) / (double)m_ins;
      /* the inserted keys must now be found (spot check of every 64th) */
      for (i = 0; i < m_ins; i += 64) {
        uint64_t v = 0;
        int f = h.ix ? mlsys_index_find(h.ix, ins[i], &v) : h.bt ? mlsys_index_btree_find(h.bt, ins[i], &v) : mlsys_index_sorted_find(h.sa, ins[i], &v);
        if (!f || v != mlsys_index_payload_of(ins[i])) {
          fprintf(stderr, "bench_index: %s: inserted key %llu not found\n", ops_name[a], (unsigned long long)ins[i]);
          ops_free(&h);
          rc = 1;
          goto out;
        }
      }
      mem1 = ops_memory(&h);
      ops_free(&h);
    }
    printf("| %s | %.2f | %.0f | %.0f%s | %.1f | %.1f |\n", ops_name[a], build, best_f * 1e9, best_i * 1e9,
           a == OPS_SORTED ? " (100 inserts)" : "", mb(mem0), mb(mem1));
    fflush(stdout);
  }
out:
  free(bulk);
  free(look);
  mlsys_free(all);
  return rc;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_index grid|sweep|ops [--keys N] [--init N] [--ops N] [--prefix N] [--sets A,B] [--model PATH] [--reps R]\n"
          "                   [--predictor rule|cnn|none|heuristic] [--top-k K] [--hard A,B] [--seed S] [--cpu N|none]\n"
          "  grid:  --keys 20M --init 10M --ops 10M --prefix 200k --sets gen:osm_like,gen:words_like,gen:ipv4_like,gen:lognormal\n"
          "  sweep: --keys 4M --init 1M --ops 1M --sets gen:osm_like\n"
          "  ops:   --keys 10M (bulk loaded) --ops 1M --sets gen:osm_like\n");
}

int main(int argc, char **argv) {
  bopts o;
  char pin[200];
  const char *mode;
  int i;
  memset(&o, 0, sizeof o);
  o.reps = 1;
  o.top_k = 10;
  o.seed = 42;
  if (argc < 2 || (strcmp(argv[1], "grid") && strcmp(argv[1], "sweep") && strcmp(argv[1], "ops"))) { usage(); return 2; }
  mode = argv[1];
  for (i = 2; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t c;
    if (!v) { fprintf(stderr, "bench_index: %s needs a value\n", k); usage(); return 2; }
    i++;
    if (!strcmp(k, "--keys") || !strcmp(k, "--init") || !strcmp(k, "--ops") || !strcmp(k, "--prefix") || !strcmp(k, "--reps") ||
        !strcmp(k, "--top-k") || !strcmp(k, "--seed")) {
      if (parse_count(v, &c)) { fprintf(stderr, "bench_index: %s '%s' is not a count\n", k, v); return 2; }
      if (!strcmp(k, "--keys")) { o.keys = c; o.keys_set = 1; }
      else if (!strcmp(k, "--init")) { o.init = c; o.init_set = 1; }
      else if (!strcmp(k, "--ops")) { o.ops = c; o.ops_set = 1; }
      else if (!strcmp(k, "--prefix")) o.prefix = c;
      else if (!strcmp(k, "--reps")) {
        if (c < 1 || c > 64) { fprintf(stderr, "bench_index: --reps must be 1..64\n"); return 2; }
        o.reps = (int)c;
      } else if (!strcmp(k, "--top-k")) {
        if (c < 1 || c > 1000) { fprintf(stderr, "bench_index: --top-k must be 1..1000\n"); return 2; }
        o.top_k = (int)c;
      } else o.seed = (uint64_t)c;
      if ((!strcmp(k, "--keys") || !strcmp(k, "--ops") || !strcmp(k, "--prefix")) && c == 0) {
        fprintf(stderr, "bench_index: %s must be > 0\n", k);
        return 2;
      }
    } else if (!strcmp(k, "--sets")) o.sets = v;
    else if (!strcmp(k, "--model")) o.model = v;
    else if (!strcmp(k, "--predictor")) o.predictor = v;
    else if (!strcmp(k, "--hard")) o.hard = v;
    else if (!strcmp(k, "--cpu")) {
      if (!strcmp(v, "none")) o.cpu = -1;
      else if (parse_count(v, &c) || c >= CPU_SETSIZE) { fprintf(stderr, "bench_index: --cpu '%s' is not a CPU number or none\n", v); return 2; }
      else o.cpu = (int)c;
    }
    else { fprintf(stderr, "bench_index: unknown option '%s'\n", k); usage(); return 2; }
  }
  pin_cpu(o.cpu, pin, sizeof pin);
  if (!strcmp(mode, "grid")) return bench_grid(&o, pin);
  if (!strcmp(mode, "sweep")) return bench_sweep(&o, pin);
  return bench_ops(&o, pin);
}
