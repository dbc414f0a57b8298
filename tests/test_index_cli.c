/* `mlsys index`: bench --json on small workloads (every documented key present and well typed, the configuration
   echoed by its canonical name, the sorted array run exactly when the workload is read-only, ops_done and exhausted
   against the workload the library builds for the same seed, speedup_vs_alex = mops / baselines.alex, MAPLE and the
   baseline of the same configuration building the same index), tune --json (the oracle measures the whole 136-entry
   grid and keeps the fastest; the CNN path with a saved random model and with the shipped predictor when it
   exists), the real key sets and a SOSD file written here, and bad input (exit 1, a message naming the problem) and
   bad usage (exit 2). Runs the binary named by $MLSYS_BIN (default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#include <sys/stat.h>

/* the workloads below: 200k lognormal keys, 100k bulk loaded, 50k operations (each run ~0.15 s) */
#define SMALL "--keys gen:lognormal:200k --init 100k --ops 50k"

static const char *bname[5] = {"alex", "alex-w", "btree", "flog", "sorted-array"};

static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static const char *str(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_STRING ? v->str : "";
}
static int is_type(const mlsys_json *o, const char *key, mlsys_json_type t) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == t;
}
static int is_null(const mlsys_json *o, const char *key) { return is_type(o, key, MLSYS_JSON_NULL); }
static int boolean(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_BOOL ? v->boolean : -1;
}
/* a count: a non-negative integer written without fraction or exponent */
static int is_count(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER && v->is_u64;
}
static int rel_near(double a, double b, double rel) { return isfinite(a) && isfinite(b) && fabs(a - b) <= rel * fabs(b); }

/* The canonical name the command must echo for `--config s` on a workload with insert fraction f. */
static const char *canonical(const char *s, double f, char *buf, size_t len) {
  mlsys_index_config c;
  if (mlsys_index_config_parse(s, f, &c)) return "(parse failed)";
  return mlsys_index_config_format(&c, buf, len);
}

/* `mlsys index ARGS` must exit 0 and print one JSON document. */
static int run_json(const char *args, mlsys_json_doc *doc) {
  run_result r = run(args);
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", doc) == MLSYS_OK;
  if (!ok) printf("    mlsys %s: exit %d, stderr: %s\n", args, r.code, r.err ? r.err : "(none)");
  run_free(&r);
  return ok;
}

/* bench --json: all 16 documented keys and nothing else, each of its documented type (checked, not assumed). */
static void check_bench_schema(const mlsys_json *root) {
  static const char *top[16] = {"keys", "n_keys", "init", "ops", "insert_frac", "config", "tuned", "predictor",
                                "mops", "bytes", "ops_done", "exhausted", "baselines", "baseline_bytes",
                                "speedup_vs_alex", "tune_s"};
  const mlsys_json *bl = mlsys_json_get(root, "baselines"), *bb = mlsys_json_get(root, "baseline_bytes");
  int i;
  REQUIRE(root && root->type == MLSYS_JSON_OBJECT);
  CHECK_EQ_INT(root->count, 16);
  for (i = 0; i < 16; i++) CHECK_MSG(mlsys_json_get(root, top[i]) != NULL, "bench --json lacks \"%s\"", top[i]);
  CHECK(is_type(root, "keys", MLSYS_JSON_STRING));
  CHECK(is_count(root, "n_keys") && is_count(root, "init") && is_count(root, "ops"));
  CHECK(is_count(root, "bytes") && num(root, "bytes") > 0);
  CHECK(is_count(root, "ops_done"));
  CHECK(num(root, "insert_frac") >= 0 && num(root, "insert_frac") <= 1);
  CHECK(is_type(root, "config", MLSYS_JSON_STRING) && strlen(str(root, "config")) > 0);
  CHECK(is_type(root, "tuned", MLSYS_JSON_BOOL));
  CHECK(is_type(root, "predictor", MLSYS_JSON_STRING));
  CHECK(isfinite(num(root, "mops")) && num(root, "mops") > 0);
  CHECK(is_type(root, "exhausted", MLSYS_JSON_BOOL));
  CHECK(num(root, "tune_s") >= 0);
  CHECK(is_type(root, "speedup_vs_alex", MLSYS_JSON_NUMBER) || is_null(root, "speedup_vs_alex"));
  REQUIRE(bl && bl->type == MLSYS_JSON_OBJECT && bb && bb->type == MLSYS_JSON_OBJECT);
  CHECK_EQ_INT(bl->count, 5);
  CHECK_EQ_INT(bb->count, 5);
  for (i = 0; i < 5; i++) {
    CHECK_MSG((is_type(bl, bname[i], MLSYS_JSON_NUMBER) && num(bl, bname[i]) > 0) || is_null(bl, bname[i]),
              "baselines.%s is neither a positive number nor null", bname[i]);
    CHECK_MSG((is_type(bb, bname[i], MLSYS_JSON_NUMBER) && num(bb, bname[i]) > 0) || is_null(bb, bname[i]),
              "baseline_bytes.%s is neither a positive number nor null", bname[i]);
    /* a baseline that ran has both its rate and its memory */
    CHECK_MSG(is_null(bl, bname[i]) == is_null(bb, bname[i]), "baselines.%s and baseline_bytes.%s disagree", bname[i], bname[i]);
  }
  /* speedup_vs_alex is MAPLE's rate over ALEX's (each printed to 6 significant digits) */
  if (!is_null(bl, "alex")) CHECK_MSG(rel_near(num(root, "speedup_vs_alex"), num(root, "mops") / num(bl, "alex"), 1e-5),
                                      "speedup_vs_alex %g, mops / alex %g", num(root, "speedup_vs_alex"), num(root, "mops") / num(bl, "alex"));
  else CHECK(is_null(root, "speedup_vs_alex"));
}

/* The workload the command builds for (spec, seed, init, ops, frac): the library's own, as a reference. */
static int reference_workload(const char *spec, uint64_t seed, size_t init, size_t ops, double frac, mlsys_index_workload *w,
                              size_t *n_keys) {
  uint64_t *keys;
  mlsys_index_workload_opts o;
  mlsys_status st;
  memset(w, 0, sizeof *w);
  if (mlsys_index_keys_load(spec, seed, &keys, n_keys)) return 0;
  memset(&o, 0, sizeof o);
  o.n_init = init;
  o.n_ops = ops;
  o.insert_frac = frac;
  o.seed = seed;
  st = mlsys_index_workload_make(keys, *n_keys, &o, w);
  mlsys_free(keys);
  return st == MLSYS_OK;
}

TEST(bench_json_named_configs_read_only) {
  static const char *cfgs[3] = {"flog", "alex", "ga:msi=2,msh=16"};
  /* the canonical names, written out once so that a parse/format bug shared by both sides still shows */
  static const char *expect[3] = {"flog:mf=64,mnf=64,nf=4", "alex:eif=0", "ga:msi=2,msh=16,eif=0"};
  int c;
  for (c = 0; c < 3; c++) {
    char args[256], name[128];
    mlsys_json_doc doc;
    const mlsys_json *root, *bl, *bb;
    int i;
    snprintf(args, sizeof args, "index bench --json " SMALL " --config %s", cfgs[c]);
    REQUIRE(run_json(args, &doc));
    root = doc.root;
    check_bench_schema(root);
    bl = mlsys_json_get(root, "baselines");
    bb = mlsys_json_get(root, "baseline_bytes");
    CHECK_STR(str(root, "keys"), "gen:lognormal:200k");
    CHECK_EQ_INT((int64_t)num(root, "n_keys"), 200000);
    CHECK_EQ_INT((int64_t)num(root, "init"), 100000);
    CHECK_EQ_INT((int64_t)num(root, "ops"), 50000);
    CHECK_EQ_INT((int64_t)num(root, "ops_done"), 50000);
    CHECK_EQ_INT(boolean(root, "exhausted"), 0);
    CHECK(num(root, "insert_frac") == 0);
    CHECK_STR(str(root, "config"), canonical(cfgs[c], 0, name, sizeof name));
    CHECK_STR(str(root, "config"), expect[c]);
    CHECK_EQ_INT(boolean(root, "tuned"), 0);
    CHECK_STR(str(root, "predictor"), "-");
    CHECK(num(root, "tune_s") == 0);
    /* read-only: every baseline ran, the sorted array included */
    for (i = 0; i < 5; i++) CHECK_MSG(is_type(bl, bname[i], MLSYS_JSON_NUMBER), "baselines.%s is not a number", bname[i]);
    /* the sorted array holds 16 bytes per key and nothing much else */
    CHECK(num(bb, "sorted-array") >= 16.0 * 100000 && num(bb, "sorted-array") < 16.0 * 100000 * 1.6);
    /* MAPLE with flog's defaults is the flog baseline, and MAPLE with alex (eif = the workload's 0) is the alex
       baseline: the same deterministic index, so the same memory (the baseline's printed to 6 digits) */
    if (c == 0) CHECK_MSG(rel_near(num(root, "bytes"), num(bb, "flog"), 1e-5), "%g vs %g", num(root, "bytes"), num(bb, "flog"));
    if (c == 1) CHECK_MSG(rel_near(num(root, "bytes"), num(bb, "alex"), 1e-5), "%g vs %g", num(root, "bytes"), num(bb, "alex"));
    mlsys_json_doc_free(&doc);
  }
}

TEST(bench_json_write_heavy_named_config) {
  mlsys_json_doc doc;
  mlsys_index_workload w;
  size_t nk;
  char name[128];
  const mlsys_json *root;
  REQUIRE(run_json("index bench --json " SMALL " --insert-frac 0.5 --config ga:msi=2,msh=16", &doc));
  root = doc.root;
  check_bench_schema(root);
  CHECK(num(root, "insert_frac") == 0.5);
  /* eif defaults to the workload's insert fraction */
  CHECK_STR(str(root, "config"), canonical("ga:msi=2,msh=16", 0.5, name, sizeof name));
  CHECK_STR(str(root, "config"), "ga:msi=2,msh=16,eif=0.5");
  CHECK_EQ_INT((int64_t)num(root, "ops_done"), 50000);
  CHECK_EQ_INT(boolean(root, "exhausted"), 0);
  /* the workload inserts, so the sorted array did not run; everything else did */
  CHECK(is_null(mlsys_json_get(root, "baselines"), "sorted-array"));
  CHECK(is_null(mlsys_json_get(root, "baseline_bytes"), "sorted-array"));
  CHECK(is_type(mlsys_json_get(root, "baselines"), "btree", MLSYS_JSON_NUMBER));
  /* the index grew by the workload's inserts: more memory than the read-only sorted array of the bulk set */
  REQUIRE(reference_workload("gen:lognormal:200k", 0, 100000, 50000, 0.5, &w, &nk));
  CHECK(w.n_inserts > 20000 && w.n_inserts < 30000);
  CHECK(num(root, "bytes") > 16.0 * (double)(100000 + w.n_inserts));
  mlsys_index_workload_free(&w);
  mlsys_json_doc_free(&doc);
}

/* sorted-array is null exactly when the trace holds an insert: a tiny insert fraction gives traces with and without
   one depending on the seed; the library's workload for the same seed says which. */
TEST(bench_sorted_array_null_iff_inserts) {
  int found[2] = {0, 0}, tried = 0;
  uint64_t seed;
  for (seed = 1; seed < 40 && !(found[0] && found[1]); seed++) {
    mlsys_index_workload w;
    size_t nk;
    int has;
    REQUIRE(reference_workload("gen:uniform:20k", seed, 10000, 5000, 0.0002, &w, &nk));
    has = w.n_inserts > 0;
    CHECK_EQ_INT(w.trace.n, 5000);
    mlsys_index_workload_free(&w);
    if (found[has]) continue;
    found[has] = 1;
    {
      char args[256];
      mlsys_json_doc doc;
      snprintf(args, sizeof args, "index bench --json --keys gen:uniform:20k --init 10k --ops 5k --insert-frac 0.0002 "
               "--config alex --seed %llu", (unsigned long long)seed);
      REQUIRE(run_json(args, &doc));
      check_bench_schema(doc.root);
      CHECK_MSG(is_null(mlsys_json_get(doc.root, "baselines"), "sorted-array") == has,
                "seed %llu: the trace %s inserts but sorted-array is %s", (unsigned long long)seed, has ? "has" : "has no",
                has ? "a number" : "null");
      mlsys_json_doc_free(&doc);
      tried++;
    }
  }
  CHECK_EQ_INT(tried, 2);   /* both cases were seen (P[no insert] = e^-1 per seed) */
}

TEST(bench_json_tuned_heuristic_and_oracle) {
  mlsys_json_doc doc;
  mlsys_index_config *grid;
  size_t n_grid, i;
  int in_grid = 0;
  /* the heuristic: ALEX (eif = the prefix's insert fraction) when at most half the operations insert ... */
  REQUIRE(run_json("index bench --json " SMALL " --predictor heuristic", &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT(boolean(doc.root, "tuned"), 1);
  CHECK_STR(str(doc.root, "predictor"), "heuristic");
  CHECK_STR(str(doc.root, "config"), "alex:eif=0");
  mlsys_json_doc_free(&doc);
  /* ... and the fragmented log with default knobs when more do */
  REQUIRE(run_json("index bench --json " SMALL " --insert-frac 0.9 --predictor heuristic", &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT(boolean(doc.root, "tuned"), 1);
  CHECK_STR(str(doc.root, "config"), "flog:mf=64,mnf=64,nf=4");
  CHECK(is_null(mlsys_json_get(doc.root, "baselines"), "sorted-array"));
  mlsys_json_doc_free(&doc);
  /* the oracle: every grid entry measured on the tuning prefix (here 2k operations); the choice is a grid entry */
  REQUIRE(run_json("index bench --json --keys gen:lognormal:40k --init 20k --ops 20k --predictor none", &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT(boolean(doc.root, "tuned"), 1);
  CHECK_STR(str(doc.root, "predictor"), "none");
  CHECK(num(doc.root, "tune_s") > 0);
  REQUIRE_OK(mlsys_index_grid_default(0, &grid, &n_grid));
  for (i = 0; i < n_grid; i++) {
    char name[128];
    if (!strcmp(str(doc.root, "config"), mlsys_index_config_format(&grid[i], name, sizeof name))) in_grid = 1;
  }
  CHECK_MSG(in_grid, "the oracle chose %s, not a grid entry", str(doc.root, "config"));
  mlsys_free(grid);
  mlsys_json_doc_free(&doc);
}

/* write-only with more operations than keys left: the run stops when the keys run out (spec §8 risk 7) */
TEST(bench_exhausted_keys) {
  mlsys_json_doc doc;
  REQUIRE(run_json("index bench --json --keys gen:uniform:20k --init 15k --ops 10k --insert-frac 1 --config flog", &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT(boolean(doc.root, "exhausted"), 1);
  CHECK_EQ_INT((int64_t)num(doc.root, "ops_done"), 5000);   /* 20k keys - 15k bulk loaded */
  CHECK_EQ_INT((int64_t)num(doc.root, "ops"), 5000);
  CHECK(is_null(mlsys_json_get(doc.root, "baselines"), "sorted-array"));
  /* every baseline saw the same 5000 inserts: the flog baseline is the same index as MAPLE's flog here */
  CHECK(rel_near(num(doc.root, "bytes"), num(mlsys_json_get(doc.root, "baseline_bytes"), "flog"), 1e-5));
  mlsys_json_doc_free(&doc);
}

TEST(tune_oracle_measures_whole_grid) {
  mlsys_json_doc doc;
  const mlsys_json *cand, *best = NULL;
  mlsys_index_workload w;
  mlsys_index_config *grid;
  size_t n_grid, nk, i;
  int j, matched = 0;
  double best_mops = -1;
  REQUIRE(run_json("index tune --json --predictor none --keys gen:uniform:20k --init 10k --ops 5k --insert-frac 0.5", &doc));
  REQUIRE(doc.root && doc.root->type == MLSYS_JSON_OBJECT);
  CHECK_EQ_INT(doc.root->count, 5);
  CHECK_STR(str(doc.root, "predictor"), "none");
  CHECK(num(doc.root, "predict_s") >= 0 && num(doc.root, "measure_s") > 0);
  cand = mlsys_json_get(doc.root, "candidates");
  REQUIRE(cand && cand->type == MLSYS_JSON_ARRAY);
  CHECK_EQ_INT(cand->count, 136);
  /* the grid the tuner must have used: the default one at the trace's insert fraction (the library's workload for
     the same seed gives that fraction) */
  REQUIRE(reference_workload("gen:uniform:20k", 0, 10000, 5000, 0.5, &w, &nk));
  REQUIRE_OK(mlsys_index_grid_default(mlsys_index_trace_insert_frac(&w.trace), &grid, &n_grid));
  mlsys_index_workload_free(&w);
  CHECK_EQ_INT(n_grid, 136);
  for (i = 0; i < n_grid; i++) {   /* every grid entry appears exactly once */
    char name[128];
    int seen = 0;
    mlsys_index_config_format(&grid[i], name, sizeof name);
    for (j = 0; j < cand->count; j++) seen += !strcmp(str(mlsys_json_at(cand, j), "config"), name);
    CHECK_MSG(seen == 1, "grid entry %s appears %d times among the candidates", name, seen);
    matched += seen == 1;
  }
  CHECK_EQ_INT(matched, 136);
  mlsys_free(grid);
  for (j = 0; j < cand->count; j++) {
    const mlsys_json *c = mlsys_json_at(cand, j);
    CHECK(c->count == 4 && is_null(c, "predicted_mops"));
    CHECK(num(c, "measured_mops") > 0 && is_count(c, "bytes") && num(c, "bytes") > 0);
    if (num(c, "measured_mops") > best_mops) { best_mops = num(c, "measured_mops"); best = c; }
  }
  REQUIRE(best);
  /* the choice is the fastest measured candidate (ties: any of the fastest) */
  for (j = 0; j < cand->count; j++) {
    const mlsys_json *c = mlsys_json_at(cand, j);
    if (!strcmp(str(c, "config"), str(doc.root, "config"))) CHECK(num(c, "measured_mops") == best_mops);
  }
  mlsys_json_doc_free(&doc);
}

/* A temporary directory for the files the tests write (the names below), removed at exit even after a failure. */
static char g_tmp[64];
static const char *g_tmp_names[4] = {"random_model.bin", "keys_30k_uint64", "keys_uint32", "short_uint64"};
static void tmp_clean(void) {
  char p[128];
  int i;
  for (i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", g_tmp, g_tmp_names[i]);
    unlink(p);
  }
  rmdir(g_tmp);
}
static const char *tmp_dir(void) {
  if (!g_tmp[0]) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/mlsys_index_cli_XXXXXX");
    if (!mkdtemp(g_tmp)) g_tmp[0] = 0;
    else atexit(tmp_clean);
  }
  return g_tmp;
}
static void tmp_path(const char *name, char *buf, size_t len) { snprintf(buf, len, "%s/%s", tmp_dir(), name); }

/* The CNN path end to end with a model file written here (random weights: the predictions mean nothing, but the
   command must load it, score the grid, measure the top k in predicted order and keep the fastest). */
static void check_tune(const char *args, const char *predictor, int want) {
  mlsys_json_doc doc;
  const mlsys_json *cand;
  double best = -1, prev = INFINITY;
  int j, k, chosen_seen = 0;
  REQUIRE(run_json(args, &doc));
  CHECK_STR(str(doc.root, "predictor"), predictor);
  cand = mlsys_json_get(doc.root, "candidates");
  REQUIRE(cand && cand->type == MLSYS_JSON_ARRAY);
  CHECK_EQ_INT(cand->count, want);
  for (j = 0; j < cand->count; j++) {
    const mlsys_json *c = mlsys_json_at(cand, j);
    double p = num(c, "predicted_mops");
    /* CNN predictions are exp(E[log bin centre]) over bins centred on [0.1, 50] Mops/s; the rule's are geometric
       means of the training set's measurements, inside the same range */
    CHECK_MSG(isfinite(p) && p >= 0.1 * 0.999 && p <= 50 * 1.001, "candidate %d predicted %g", j, p);
    CHECK_MSG(p <= prev, "candidate %d (%g) out of predicted order (previous %g)", j, p, prev);
    prev = p;
    for (k = 0; k < j; k++) CHECK(strcmp(str(c, "config"), str(mlsys_json_at(cand, k), "config")) != 0);
    if (num(c, "measured_mops") > best) best = num(c, "measured_mops");
  }
  for (j = 0; j < cand->count; j++)
    if (!strcmp(str(mlsys_json_at(cand, j), "config"), str(doc.root, "config"))) {
      chosen_seen = 1;
      CHECK(num(mlsys_json_at(cand, j), "measured_mops") == best);
    }
  CHECK_MSG(chosen_seen, "the choice %s is not a measured candidate", str(doc.root, "config"));
  mlsys_json_doc_free(&doc);
}

TEST(tune_cnn_with_model_file) {
  mlsys_index_model *m;
  char model[128], args[512];
  REQUIRE(tmp_dir()[0]);
  tmp_path("random_model.bin", model, sizeof model);
  REQUIRE_OK(mlsys_index_model_create(7, &m));
  REQUIRE_OK(mlsys_index_model_save(m, model));
  mlsys_index_model_free(m);
  snprintf(args, sizeof args, "index tune --json --keys gen:clustered:20k --init 10k --ops 5k --insert-frac 0.3 "
           "--predictor cnn --model %s", model);
  check_tune(args, "cnn", 10);
  snprintf(args, sizeof args, "index tune --json --keys gen:clustered:20k --init 10k --ops 5k --top-k 3 --model %s", model);
  check_tune(args, "cnn", 3);
  /* $MLSYS_INDEX_MODEL names the model when --model does not */
  setenv("MLSYS_INDEX_MODEL", model, 1);
  check_tune("index tune --json --keys gen:clustered:20k --init 10k --ops 5k --top-k 2", "cnn", 2);
  unsetenv("MLSYS_INDEX_MODEL");
  /* bench with the CNN: tuned, and its choice runs */
  {
    mlsys_json_doc doc;
    snprintf(args, sizeof args, "index bench --json --keys gen:clustered:20k --init 10k --ops 10k --insert-frac 0.3 "
             "--top-k 3 --model %s", model);
    REQUIRE(run_json(args, &doc));
    check_bench_schema(doc.root);
    CHECK_EQ_INT(boolean(doc.root, "tuned"), 1);
    CHECK_STR(str(doc.root, "predictor"), "cnn");
    CHECK(num(doc.root, "tune_s") > 0);
    mlsys_json_doc_free(&doc);
  }
  unlink(model);
}

/* Where the command looks for its default predictor (cli/index.c): $MLSYS_INDEX_MODEL, tools/maple_predictor.bin
   here, then beside the binary's repository. */
static int default_model_exists(void) {
  struct stat st;
  char p[4200];
  const char *b = bin(), *slash = strrchr(b, '/');
  if (getenv("MLSYS_INDEX_MODEL") && *getenv("MLSYS_INDEX_MODEL")) return stat(getenv("MLSYS_INDEX_MODEL"), &st) == 0;
  if (stat("tools/maple_predictor.bin", &st) == 0) return 1;
  if (!slash) return 0;
  snprintf(p, sizeof p, "%.*s/../tools/maple_predictor.bin", (int)(slash - b), b);
  return stat(p, &st) == 0;
}

/* The default predictor is the insert-fraction rule (issue 21): built in, no model file needed. */
TEST(tune_default_predictor_is_the_rule) {
  check_tune("index tune --json --keys gen:lognormal:20k --init 10k --ops 5k --insert-frac 0.85", "rule", 10);
  check_tune("index tune --json --keys gen:lognormal:20k --init 10k --ops 5k --predictor rule --top-k 4", "rule", 4);
}

TEST(tune_shipped_cnn) {
  if (!default_model_exists())
    SKIP_DEP("tools/maple_predictor.bin is not there yet (tools/maple_train.sh trains it)");
  check_tune("index tune --json --keys gen:lognormal:20k --init 10k --ops 5k --insert-frac 0.85 --predictor cnn", "cnn", 10);
}

TEST(real_key_sets) {
  mlsys_json_doc doc;
  int i;
  /* the committed files under tests/data (counts from mlsys_index.h section 4: distinct keys) */
  REQUIRE(run_json("index bench --json --keys real:cities --init 50k --ops 20k --insert-frac 0.5 --config flog", &doc));
  check_bench_schema(doc.root);
  CHECK_STR(str(doc.root, "keys"), "real:cities");
  CHECK_EQ_INT((int64_t)num(doc.root, "n_keys"), 171038);
  CHECK_EQ_INT((int64_t)num(doc.root, "init"), 50000);
  CHECK_EQ_INT((int64_t)num(doc.root, "ops_done"), 20000);
  mlsys_json_doc_free(&doc);
  /* --no-baselines: every baseline null, and so the speedup */
  REQUIRE(run_json("index bench --json --keys real:ipv4 --init 50k --ops 20k --config alex --no-baselines", &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT((int64_t)num(doc.root, "n_keys"), 207937);
  CHECK_EQ_INT((int64_t)num(doc.root, "ops_done"), 20000);
  for (i = 0; i < 5; i++) CHECK(is_null(mlsys_json_get(doc.root, "baselines"), bname[i]));
  CHECK(is_null(doc.root, "speedup_vs_alex"));
  mlsys_json_doc_free(&doc);
}

TEST(sosd_file_as_keys) {
  uint64_t *keys;
  char p64[128], p32[128], args[512];
  mlsys_json_doc doc;
  size_t i, n = 30000;
  REQUIRE(tmp_dir()[0]);
  REQUIRE_OK(mlsys_index_keys_generate(MLSYS_INDEX_DIST_UNIFORM, n, 5, &keys));
  /* SOSD files are sorted and may repeat keys: 100 repeats, which the loader removes */
  for (i = 0; i < 100; i++) keys[n - 100 + i] = keys[i];
  tmp_path("keys_30k_uint64", p64, sizeof p64);
  REQUIRE_OK(mlsys_index_sosd_write(p64, keys, n));
  snprintf(args, sizeof args, "index bench --json --keys %s --init 10k --ops 5k --insert-frac 0.5 --config alex", p64);
  REQUIRE(run_json(args, &doc));
  check_bench_schema(doc.root);
  CHECK_STR(str(doc.root, "keys"), p64);
  CHECK_EQ_INT((int64_t)num(doc.root, "n_keys"), n - 100);
  CHECK_EQ_INT((int64_t)num(doc.root, "ops_done"), 5000);
  mlsys_json_doc_free(&doc);
  /* 4-byte keys (a name ending _uint32) */
  for (i = 0; i < n; i++) keys[i] = (uint32_t)(i * 2654435761u);
  tmp_path("keys_uint32", p32, sizeof p32);
  REQUIRE_OK(mlsys_index_sosd_write(p32, keys, n));
  snprintf(args, sizeof args, "index bench --json --keys %s --init 10k --ops 5k --config flog:mf=32,mnf=16,nf=2", p32);
  REQUIRE(run_json(args, &doc));
  check_bench_schema(doc.root);
  CHECK_EQ_INT((int64_t)num(doc.root, "n_keys"), n);   /* i * 2654435761 mod 2^32 is a bijection (odd factor) */
  CHECK_STR(str(doc.root, "config"), "flog:mf=32,mnf=16,nf=2");
  mlsys_json_doc_free(&doc);
  mlsys_free(keys);
  unlink(p64);
  unlink(p32);
}

TEST(bad_input_exit_1) {
  run_result r;
  char path[128], args[512];
  uint64_t keys[1000];
  int i;
  r = run("index bench --keys /nonexistent/mlsys_keys_uint64 --config alex");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/mlsys_keys_uint64");
  run_free(&r);
  /* a SOSD file cut short: the header promises 1000 keys, 999.5 follow */
  REQUIRE(tmp_dir()[0]);
  for (i = 0; i < 1000; i++) keys[i] = (uint64_t)i * 1000;
  tmp_path("short_uint64", path, sizeof path);
  REQUIRE_OK(mlsys_index_sosd_write(path, keys, 1000));
  REQUIRE(truncate(path, 8 + 8 * 1000 - 4) == 0);
  snprintf(args, sizeof args, "index bench --keys %s --config alex", path);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, path);
  run_free(&r);
  unlink(path);
  r = run("index bench --keys gen:uniform:10k --init 20k --config alex");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "20000");
  run_free(&r);
  r = run("index bench --keys gen:uniform:10k --predictor cnn --model /nonexistent/maple_model.bin");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/maple_model.bin");
  run_free(&r);
  r = run("index tune --keys gen:uniform:10k --model /nonexistent/maple_model.bin");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/maple_model.bin");
  run_free(&r);
  r = run("index bench --keys real:nosuchset --config alex");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "nosuchset");
  run_free(&r);
}

TEST(bad_usage_exit_2) {
  run_result r;
  r = run("index bench --keys gen:uniform:10k --config bogus");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "bogus");
  run_free(&r);
  r = run("index bench --keys gen:uniform:10k --insert-frac 1.5");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "1.5");
  run_free(&r);
  r = run("index bench --keys gen:uniform:10k --predictor oracle");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "oracle");
  run_free(&r);
  r = run("index tune --keys gen:uniform:10k --predictor heuristic");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("index bench --keys gen:uniform:10k --ops lots");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "lots");
  run_free(&r);
  r = run("index frobnicate");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "frobnicate");
  run_free(&r);
  r = run("index bench --config alex");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--keys");
  run_free(&r);
  r = run("index tune");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--keys");
  run_free(&r);
  r = run("index");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  /* --help documents the JSON keys the tests above check */
  r = run("index --help");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "speedup_vs_alex");
  CHECK_CONTAINS(r.out, "predicted_mops");
  run_free(&r);
}

TEST_MAIN()
