/* cli/cloud.c — `mlsys cloud`: Srift's plan (the cheapest or fastest mix of cloud VMs for data-parallel training
   under a time limit and/or a budget, beside the CAP and TAP baselines) and the simulation of a given mix. */
#include "mlsys_cloud.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *cloud_help =
    "usage: mlsys cloud <verb> [options]      (verbs: plan, simulate, fit, dnns, gbdt train|predict, probe)\n"
    "\n"
    "verbs:\n"
    "  plan      --dnn NAME|--profile FILE --global-batch B --iters N [--time-limit S] [--budget USD] [--goal cost|time]\n"
    "            [--types NAME[:CAP],...] [--spot] [--catalog CSV] [--eager [--eager-k K] [--solve-budget S]]\n"
    "            [--max-types K] [--json] (and the simulation options)\n"
    "            Searches every mix of the types (counts up to CAP, power-of-two per-VM batches up to each type's\n"
    "            Bmax, the per-VM batches adding up to B) for the cheapest one that runs N iterations within the time\n"
    "            limit and budget (--goal cost, the default unless only --budget is given) or the fastest (--goal\n"
    "            time), and prints it beside CAP (cheapest types first, every VM at Bmax) and TAP (fastest first).\n"
    "            Exit 1 when no mix meets the limits (CAP and TAP are still printed).\n"
    "  simulate  --dnn NAME|--profile FILE --config \"4xp3.8xlarge@1024+8xg3.8xlarge@128\" [--iters N] [--spot] [--catalog CSV]\n"
    "            [--json] (and the simulation options)\n"
    "            Predicts one mix: seconds per iteration (forward, backward, the allreduce tail), and its cost.\n"
    "  fit       --timings CSV [--layers CSV] [--name DNN] [--out FILE] [--json]\n"
    "            A profile from measurements: CSV columns type, batch, t_fw, t_bw (seconds, any batches, repeats\n"
    "            welcome) and optionally bmax; each type's piecewise-linear curve by least squares, sigma_rel from\n"
    "            the repeats at Bmax. --layers: grad_bytes and ready_frac per layer in backward order (the format\n"
    "            of tests/data/cloud/layers_*.csv). Writes the JSON --profile reads to FILE (default stdout) and\n"
    "            prints each type's error against its timings beside one straight line's (Eq. 1).\n"
    "  dnns      [--json]\n"
    "            Lists the built-in profiles --dnn takes, each with the command that replays its experiment.\n"
    "\n"
    "  gbdt train   --data CSV --out MODEL [--label COL] [--objective squared|pseudohuber] [--trees N] [--depth D]\n"
    "               [--eta E] [--lambda L] [--gamma G] [--min-child-weight W] [--huber-slope D] [--max-bin B]\n"
    "               [--base-score X] [--seed N]\n"
    "            Trains a gradient-boosted regressor (XGBoost's hist method and defaults; base score the label median\n"
    "            unless given) on a CSV with a header: every column but the label (default: the last) is a feature,\n"
    "            nan or an empty field is missing. Writes our model format.\n"
    "  gbdt predict --model FILE [--features CSV] [--base-score X]\n"
    "            One prediction per CSV row (default stdin), 9 significant digits, one per line. FILE is our format,\n"
    "            XGBoost's JSON model (save_model) or its text dump (dump_model; give its --base-score). The first N\n"
    "            columns are the features (N = the model's); later ones are ignored.\n"
    "  probe     [--world 2..8] [--min BYTES] [--max BYTES] [--iters N] [--verify] [--out CSV] [--json]\n"
    "            Ring allreduce among --world forked processes over TCP on 127.0.0.1 (default 2..8 in powers of two,\n"
    "            4 B to 64 MiB): one row of bus bandwidth per size and world size, the rows a bandwidth model trains on.\n"
    "\n"
    "--profile: a DNN's compute profiles per instance type (JSON; docs/cloud.md §6, e.g.\n"
    "tests/data/cloud/profile_shufflenet_case3.json). --dnn: a built-in one, calibrated on the seed paper's\n"
    "figures (mlsys cloud dnns): inception_v3, vgg19, shufflenet_v2_x2_0, resnet50. --catalog: instance types and prices (CSV; default\n"
    "tests/data/cloud/instances.csv, the seed's types with AWS on-demand and the seed's spot prices); --spot takes the\n"
    "spot prices. --types picks types (default: every profiled type in the catalogue) with availability CAP\n"
    "(default unknown: up to the global batch); the order is the eager mode's preference.\n"
    "\n"
    "simulation options: --straggler-iters N (Monte Carlo iterations, default 1000; 0 = the exact expectation)\n"
    "--seed N --share eq2|waterfill (how transfers share a VM's bandwidth cap; default eq2, the paper's Eq. 2)\n"
    "--b-cap GBPS (the per-VM cap; default the bandwidth model's at 512 MiB). The bandwidth model is an alpha-beta\n"
    "ring from each type's rated Gbps, or with --bw-model LARGE[,SMALL] the learned one: GBDTs (any format gbdt\n"
    "predict reads; --base-score for a dump) over the features of docs/cloud.md, SMALL for buffers up to the MTU;\n"
    "--bw-types NAME,... is the type-code dictionary they were trained with (code 0 first; others go down the\n"
    "trees' default branches).\n"
    "\n"
    "plan --json: {goal, global_batch, iters, time_limit_s, budget, srift, cap, tap} where each plan is {config,\n"
    "feasible, t_iter, total_time_s, total_cost, cost_per_hour, counts: {type: n}, batches: {type: b}} or {error};\n"
    "srift adds sims, candidates, complete, solve_s. simulate --json: {config, n, t_iter, t_fw, t_bw, t_pe,\n"
    "t_compute, b_cap, cost_per_hour, cost_per_iter, iters, total_time_s, total_cost}.\n";

typedef struct {
  const char *dnn, *profile, *catalog, *spot, *types, *config, *batch, *iters, *tlim, *budget, *goal, *eager, *eager_k,
      *solve_budget, *max_types, *json, *straggler, *seed, *share, *bcap, *help;
  const char *data, *out, *label, *objective, *trees, *depth, *eta, *lambda, *gamma, *mcw, *huber, *max_bin, *base,
      *model, *features, *world, *min, *max, *verify, *bw_model, *bw_types, *timings, *layers, *name;
} cloud_args;

typedef struct {
  mlsys_cloud_dnn dnn;
  mlsys_cloud_itype *cat, ty[MLSYS_CLOUD_MAX_TYPES];
  mlsys_cloud_cprof pr[MLSYS_CLOUD_MAX_TYPES];
  int ncat, nty;
  mlsys_cloud_sim sim;
  mlsys_cloud_bwmodel bw;
  char bw_names[MLSYS_CLOUD_MAX_TYPES * 4][32];
} cloud_setup;

static int cloud_num(const char *cmd, const char *opt, const char *v, double lo, double hi, int integer, double *out) {
  double d;
  if (!v) return CLI_OK;
  if (cli_parse_double(v, &d) || !(d >= lo && d <= hi) || (integer && d != floor(d)))
    return cli_usage_error(cmd, "%s must be %s in %g..%g", opt, integer ? "an integer" : "a number", lo, hi);
  *out = d;
  return CLI_OK;
}

static void cloud_setup_free(cloud_setup *c) {
  mlsys_cloud_dnn_free(&c->dnn);
  mlsys_free(c->cat);
  mlsys_cloud_gbdt_free(c->bw.large);
  mlsys_cloud_gbdt_free(c->bw.small);
}

/* --bw-model LARGE[,SMALL] [--bw-types NAME,...] [--base-score X]: the learned bandwidth model behind the sim */
static int cloud_bw_setup(const char *cmd, const cloud_args *a, cloud_setup *c) {
  char large[1024], *comma;
  double base = NAN;
  int rc;
  if (!a->bw_model) return CLI_OK;
  snprintf(large, sizeof large, "%s", a->bw_model);
  comma = strchr(large, ',');
  if (comma) *comma = 0;
  if ((rc = cloud_num(cmd, "--base-score", a->base, -1e30, 1e30, 0, &base))) return rc;
  if (mlsys_cloud_gbdt_load_file(large, base, &c->bw.large) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if (comma && mlsys_cloud_gbdt_load_file(comma + 1, base, &c->bw.small) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if ((c->bw.large && mlsys_cloud_gbdt_nfeatures(c->bw.large) > MLSYS_CLOUD_BW_NFEAT) ||
      (c->bw.small && mlsys_cloud_gbdt_nfeatures(c->bw.small) > MLSYS_CLOUD_BW_NFEAT))
    return cli_fail(cmd, "--bw-model: a bandwidth model takes %d features (docs/cloud.md); this one uses more", MLSYS_CLOUD_BW_NFEAT);
  if (a->bw_types) { /* the type-code dictionary the model was trained with, code 0 first */
    const char *p = a->bw_types;
    while (*p && c->bw.ntypes < (int)(sizeof c->bw_names / sizeof *c->bw_names)) {
      size_t k = 0;
      while (*p && *p != ',' && k + 1 < 32) c->bw_names[c->bw.ntypes][k++] = *p++;
      c->bw_names[c->bw.ntypes++][k] = 0;
      if (*p == ',') p++;
    }
    c->bw.type_name = (const char(*)[32])c->bw_names;
  }
  c->sim.bw = mlsys_cloud_bw_gbdt, c->sim.bw_ud = &c->bw;
  return CLI_OK;
}


/* The built-in profiles: the seed's four experiments, each calibrated on its printed figures by
   tools/cloud_case_profiles.py (docs/cloud.md §6). They are files of the repository, found beside this binary the
   way the default catalogue is, so one copy serves the tests, the benchmarks and --dnn. */
typedef struct {
  const char *name, *alias, *file, *what, *replay;
} cloud_builtin;

static const cloud_builtin cloud_builtins[] = {
    {"inception_v3", "inception", "tests/data/cloud/profile_inception_v3_case1.json",
     "case study 1, minimum time (g4dn.8xlarge; Bmax 64: the one reading of the seed's table under which its CAP plan follows CAP's rule)",
     "plan --dnn inception_v3 --spot --types g4dn.8xlarge:16 --global-batch 512 --iters 1000 --goal time"},
    {"vgg19", NULL, "tests/data/cloud/profile_vgg19_case2.json",
     "case study 2, minimum cost (g4dn.8xlarge, g3.8xlarge)",
     "plan --dnn vgg19 --spot --types g4dn.8xlarge:16,g3.8xlarge:16 --global-batch 1024 --iters 1000"},
    {"shufflenet_v2_x2_0", "shufflenet", "tests/data/cloud/profile_shufflenet_case3.json",
     "case study 3, time limit and budget (p3.8xlarge, g3.8xlarge, g4dn.8xlarge)",
     "plan --dnn shufflenet_v2_x2_0 --spot --types p3.8xlarge:4,g3.8xlarge:8,g4dn.8xlarge:8 --global-batch 6144 "
     "--iters 1000 --time-limit 600 --budget 3"},
    {"resnet50", NULL, "tests/data/cloud/profile_resnet50_s54.json",
     "the interruption run of the seed's section 5.4 (p3.8xlarge, g3.8xlarge, g4dn.8xlarge)",
     "plan --dnn resnet50 --spot --types p3.8xlarge,g3.8xlarge,g4dn.8xlarge --global-batch 1024 --iters 400 "
     "--time-limit 350 --eager --solve-budget 1"},
};
#define CLOUD_NBUILTIN ((int)(sizeof cloud_builtins / sizeof *cloud_builtins))

/* --dnn NAME into the path of its profile */
static int cloud_builtin_path(const char *cmd, const char *name, char *path, size_t n) {
  int i;
  for (i = 0; i < CLOUD_NBUILTIN; i++)
    if (!strcmp(name, cloud_builtins[i].name) || (cloud_builtins[i].alias && !strcmp(name, cloud_builtins[i].alias))) {
      if (!cli_repo_file(cloud_builtins[i].file, path, n))
        return cli_fail(cmd, "--dnn %s: %s is not beside this binary's repository (use --profile FILE)", name,
                        cloud_builtins[i].file);
      return CLI_OK;
    }
  return cli_usage_error(cmd, "--dnn: no built-in profile '%s' (inception_v3, vgg19, shufflenet_v2_x2_0, resnet50; "
                         "others need --profile FILE)", name);
}

static int cloud_dnns(const cloud_args *a) {
  int i;
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 0);
    mlsys_jw_array(&w);
    for (i = 0; i < CLOUD_NBUILTIN; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "name"), mlsys_jw_str(&w, cloud_builtins[i].name);
      mlsys_jw_key(&w, "file"), mlsys_jw_str(&w, cloud_builtins[i].file);
      mlsys_jw_key(&w, "experiment"), mlsys_jw_str(&w, cloud_builtins[i].what);
      mlsys_jw_key(&w, "replay"), mlsys_jw_str(&w, cloud_builtins[i].replay);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
    return CLI_OK;
  }
  printf("built-in profiles (--dnn NAME), calibrated on the seed paper's figures (tools/cloud_case_profiles.py):\n");
  for (i = 0; i < CLOUD_NBUILTIN; i++)
    printf("  %-19s %s\n  %-19s %s\n  %-19s mlsys cloud %s\n", cloud_builtins[i].name, cloud_builtins[i].what, "",
           cloud_builtins[i].file, "", cloud_builtins[i].replay);
  return CLI_OK;
}

static int cloud_read(const char *cmd, const char *path, char **buf, size_t *len) {
  if (mlsys_read_file(path, buf, len) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

/* the profile, the catalogue and the chosen types, into a sim */
static int cloud_setup_make(const char *cmd, const cloud_args *a, cloud_setup *c) {
  char *buf = NULL, path[1024];
  size_t len;
  int rc, i;
  double v;
  const char *prof = a->profile;
  memset(c, 0, sizeof *c);
  if (a->dnn && a->profile) return cli_usage_error(cmd, "give --dnn NAME or --profile FILE, not both");
  if (!a->dnn && !a->profile) return cli_usage_error(cmd, "--dnn NAME or --profile FILE is required");
  if (a->dnn) {
    if ((rc = cloud_builtin_path(cmd, a->dnn, path, sizeof path))) return rc;
    prof = path;
  }
  if ((rc = cloud_read(cmd, prof, &buf, &len))) return rc;
  if (mlsys_cloud_dnn_load(buf, len, prof, &c->dnn) != MLSYS_OK) {
    mlsys_free(buf);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  mlsys_free(buf);
  if (a->catalog) snprintf(path, sizeof path, "%s", a->catalog);
  else if (!cli_repo_file("tests/data/cloud/instances.csv", path, sizeof path))
    return cli_fail(cmd, "no catalogue: tests/data/cloud/instances.csv was not found; give --catalog CSV");
  if ((rc = cloud_read(cmd, path, &buf, &len))) return rc;
  if (mlsys_cloud_catalog_load(buf, len, path, a->spot != NULL, &c->cat, &c->ncat) != MLSYS_OK) {
    mlsys_free(buf);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  mlsys_free(buf);
  if (a->types) { /* NAME[:CAP],... in preference order */
    const char *p = a->types;
    while (*p) {
      char name[64];
      size_t k = 0;
      int cap = -1, j;
      while (*p && *p != ',' && *p != ':' && k + 1 < sizeof name) name[k++] = *p++;
      name[k] = 0;
      if (*p == ':') {
        char *e;
        long l = strtol(p + 1, &e, 10);
        if (e == p + 1 || l < 0 || l > 1000000 || (*e && *e != ',')) return cli_usage_error(cmd, "--types: bad count after %s:", name);
        cap = (int)l, p = e;
      }
      if (*p == ',') p++;
      if (!name[0]) return cli_usage_error(cmd, "--types: an empty type name");
      if (c->nty == MLSYS_CLOUD_MAX_TYPES) return cli_usage_error(cmd, "--types: at most %d types", MLSYS_CLOUD_MAX_TYPES);
      for (j = 0; j < c->ncat && strcmp(c->cat[j].name, name) && strcmp(c->cat[j].short_name, name); j++) {}
      if (j == c->ncat) return cli_fail(cmd, "--types: %s is not in the catalogue %s", name, path);
      c->ty[c->nty] = c->cat[j];
      c->ty[c->nty].cap = cap;
      c->ty[c->nty].pref_rank = c->nty;
      c->nty++;
    }
  } else { /* every profiled type the catalogue knows, in the profile's order */
    for (i = 0; i < c->dnn.ntypes && c->nty < MLSYS_CLOUD_MAX_TYPES; i++) {
      int j;
      for (j = 0; j < c->ncat && strcmp(c->cat[j].name, c->dnn.type_name[i]); j++) {}
      if (j == c->ncat) continue;
      c->ty[c->nty] = c->cat[j];
      c->ty[c->nty].pref_rank = c->nty;
      c->nty++;
    }
    if (!c->nty) return cli_fail(cmd, "none of the profile's types is in the catalogue %s", path);
  }
  for (i = 0; i < c->nty; i++) {
    const mlsys_cloud_cprof *p = mlsys_cloud_dnn_find(&c->dnn, c->ty[i].name);
    if (!p) return cli_fail(cmd, "%s has no profile for %s (%s profiles %d types)", a->profile, c->ty[i].name, c->dnn.dnn, c->dnn.ntypes);
    if (!isfinite(c->ty[i].price_per_hour))
      return cli_fail(cmd, "%s has no %s price in %s", c->ty[i].name, a->spot ? "spot" : "on-demand", path);
    c->pr[i] = *p;
  }
  c->sim.ntypes = c->nty, c->sim.types = c->ty, c->sim.prof = c->pr;
  v = -2;
  if ((rc = cloud_num(cmd, "--straggler-iters", a->straggler, 0, 1e7, 1, &v))) return rc;
  if (a->straggler) c->sim.straggler_iters = v == 0 ? -1 : (int)v;
  v = 0;
  if ((rc = cloud_num(cmd, "--seed", a->seed, 0, 9e15, 1, &v))) return rc;
  c->sim.seed = (uint64_t)v;
  v = 0;
  if ((rc = cloud_num(cmd, "--b-cap", a->bcap, 1e-6, 1e6, 0, &v))) return rc;
  c->sim.b_cap = v * 1e9 / 8;
  if (a->share && strcmp(a->share, "eq2") && strcmp(a->share, "waterfill")) return cli_usage_error(cmd, "--share is eq2 or waterfill");
  c->sim.share_mode = a->share && !strcmp(a->share, "waterfill");
  return cloud_bw_setup(cmd, a, c);
}

static void cloud_plan_text(const cloud_setup *c, const char *who, mlsys_status st, const mlsys_cloud_plan *pl,
                            const char *err) {
  char cfg[512];
  if (st != MLSYS_OK) {
    printf("  %-6s %s\n", who, err);
    return;
  }
  mlsys_cloud_plan_format(&c->sim, pl, cfg, sizeof cfg);
  printf("  %-6s %-44s %8.3f s/iter %10.1f s  $%9.3f  %s\n", who, cfg, pl->t_iter, pl->total_time_s, pl->total_cost,
         pl->feasible ? "meets the limits" : "breaks the limits");
}

static void cloud_plan_json(mlsys_json_writer *w, const cloud_setup *c, mlsys_status st, const mlsys_cloud_plan *pl,
                            const char *err, int srift) {
  char cfg[512];
  int i;
  mlsys_jw_object(w);
  if (st != MLSYS_OK) {
    mlsys_jw_key(w, "error"), mlsys_jw_str(w, err);
    if (srift) mlsys_jw_key(w, "sims"), mlsys_jw_i64(w, pl->sims), mlsys_jw_key(w, "complete"), mlsys_jw_bool(w, pl->complete);
    mlsys_jw_end(w);
    return;
  }
  mlsys_cloud_plan_format(&c->sim, pl, cfg, sizeof cfg);
  mlsys_jw_key(w, "config"), mlsys_jw_str(w, cfg);
  mlsys_jw_key(w, "feasible"), mlsys_jw_bool(w, pl->feasible);
  mlsys_jw_key(w, "t_iter"), mlsys_jw_double(w, pl->t_iter);
  mlsys_jw_key(w, "total_time_s"), mlsys_jw_double(w, pl->total_time_s);
  mlsys_jw_key(w, "total_cost"), mlsys_jw_double(w, pl->total_cost);
  mlsys_jw_key(w, "cost_per_hour"), mlsys_jw_double(w, pl->cost_per_hour);
  mlsys_jw_key(w, "counts"), mlsys_jw_object(w);
  for (i = 0; i < c->nty; i++)
    if (pl->counts[i]) mlsys_jw_key(w, c->ty[i].name), mlsys_jw_i64(w, pl->counts[i]);
  mlsys_jw_end(w);
  mlsys_jw_key(w, "batches"), mlsys_jw_object(w);
  for (i = 0; i < c->nty; i++)
    if (pl->counts[i]) mlsys_jw_key(w, c->ty[i].name), mlsys_jw_i64(w, pl->batches[i]);
  mlsys_jw_end(w);
  if (srift) {
    mlsys_jw_key(w, "sims"), mlsys_jw_i64(w, pl->sims);
    mlsys_jw_key(w, "candidates"), mlsys_jw_i64(w, pl->candidates);
    mlsys_jw_key(w, "complete"), mlsys_jw_bool(w, pl->complete);
    mlsys_jw_key(w, "solve_s"), mlsys_jw_double(w, pl->solve_s);
  }
  mlsys_jw_end(w);
}

static int cloud_plan(const cloud_args *a) {
  const char *cmd = "cloud plan";
  cloud_setup c;
  mlsys_cloud_problem p;
  mlsys_cloud_plan ps, pc, pt;
  mlsys_status ss, sc, st;
  char es[512] = "", ec[512] = "", et[512] = "";
  double v;
  int rc;
  memset(&p, 0, sizeof p);
  if (!a->batch || !a->iters) return cli_usage_error(cmd, "--global-batch B and --iters N are required");
  if ((rc = cloud_num(cmd, "--global-batch", a->batch, 1, 1e8, 1, &v))) return rc;
  p.global_batch = (int)v;
  if ((rc = cloud_num(cmd, "--iters", a->iters, 1, 1e12, 1, &v))) return rc;
  p.iters = (long)v;
  if ((rc = cloud_num(cmd, "--time-limit", a->tlim, 1e-9, 1e12, 0, &p.time_limit_s))) return rc;
  if ((rc = cloud_num(cmd, "--budget", a->budget, 1e-9, 1e12, 0, &p.budget))) return rc;
  if (a->goal && strcmp(a->goal, "cost") && strcmp(a->goal, "time")) return cli_usage_error(cmd, "--goal is cost or time");
  p.goal = a->goal ? (!strcmp(a->goal, "time") ? MLSYS_CLOUD_MIN_TIME : MLSYS_CLOUD_MIN_COST)
                   : (a->budget && !a->tlim ? MLSYS_CLOUD_MIN_TIME : MLSYS_CLOUD_MIN_COST);
  p.eager = a->eager != NULL;
  v = 0;
  if ((rc = cloud_num(cmd, "--eager-k", a->eager_k, 1, 1e6, 1, &v))) return rc;
  p.eager_k = (int)v;
  if ((rc = cloud_num(cmd, "--solve-budget", a->solve_budget, 1e-6, 1e9, 0, &p.solve_budget_s))) return rc;
  v = 0;
  if ((rc = cloud_num(cmd, "--max-types", a->max_types, 1, MLSYS_CLOUD_MAX_TYPES, 1, &v))) return rc;
  p.max_types = (int)v;
  if ((rc = cloud_setup_make(cmd, a, &c))) {
    cloud_setup_free(&c);
    return rc;
  }
  ss = mlsys_cloud_optimize(&c.sim, &p, &ps);
  if (ss != MLSYS_OK) snprintf(es, sizeof es, "%s", mlsys_last_error());
  if (ss != MLSYS_OK && ss != MLSYS_ERR_INFEASIBLE) {
    cloud_setup_free(&c);
    return cli_fail(cmd, "%s", es);
  }
  sc = mlsys_cloud_plan_cap(&c.sim, &p, &pc);
  if (sc != MLSYS_OK) snprintf(ec, sizeof ec, "%s", mlsys_last_error());
  st = mlsys_cloud_plan_tap(&c.sim, &p, &pt);
  if (st != MLSYS_OK) snprintf(et, sizeof et, "%s", mlsys_last_error());
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 0);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "dnn"), mlsys_jw_str(&w, c.dnn.dnn);
    mlsys_jw_key(&w, "goal"), mlsys_jw_str(&w, p.goal == MLSYS_CLOUD_MIN_TIME ? "time" : "cost");
    mlsys_jw_key(&w, "global_batch"), mlsys_jw_i64(&w, p.global_batch);
    mlsys_jw_key(&w, "iters"), mlsys_jw_i64(&w, p.iters);
    mlsys_jw_key(&w, "time_limit_s"), p.time_limit_s > 0 ? mlsys_jw_double(&w, p.time_limit_s) : mlsys_jw_null(&w);
    mlsys_jw_key(&w, "budget"), p.budget > 0 ? mlsys_jw_double(&w, p.budget) : mlsys_jw_null(&w);
    mlsys_jw_key(&w, "srift"), cloud_plan_json(&w, &c, ss, &ps, es, 1);
    mlsys_jw_key(&w, "cap"), cloud_plan_json(&w, &c, sc, &pc, ec, 0);
    mlsys_jw_key(&w, "tap"), cloud_plan_json(&w, &c, st, &pt, et, 0);
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
  } else {
    printf("%s, global batch %d, %ld iterations, minimum %s", c.dnn.dnn, p.global_batch, p.iters,
           p.goal == MLSYS_CLOUD_MIN_TIME ? "time" : "cost");
    if (p.time_limit_s > 0) printf(", time limit %g s", p.time_limit_s);
    if (p.budget > 0) printf(", budget $%g", p.budget);
    printf("\n");
    cloud_plan_text(&c, "Srift", ss, &ps, es);
    cloud_plan_text(&c, "CAP", sc, &pc, ec);
    cloud_plan_text(&c, "TAP", st, &pt, et);
    if (ss == MLSYS_OK) {
      printf("  searched %ld mixes, simulated %ld, in %.3f s%s\n", ps.candidates, ps.sims, ps.solve_s,
             ps.complete ? "" : " (stopped at the solve budget)");
      if (sc == MLSYS_OK)
        printf("  Srift vs CAP: %.2fx the throughput, %.2fx cheaper\n", pc.t_iter / ps.t_iter, pc.total_cost / ps.total_cost);
      if (st == MLSYS_OK)
        printf("  Srift vs TAP: %.2fx the throughput, %.2fx cheaper\n", pt.t_iter / ps.t_iter, pt.total_cost / ps.total_cost);
    }
  }
  cloud_setup_free(&c);
  if (ss != MLSYS_OK) {
    fprintf(stderr, "mlsys %s: %s\n", cmd, es);
    return CLI_ERR;
  }
  return CLI_OK;
}

static int cloud_simulate(const cloud_args *a) {
  const char *cmd = "cloud simulate";
  cloud_setup c;
  int counts[MLSYS_CLOUD_MAX_TYPES], batches[MLSYS_CLOUD_MAX_TYPES], rc, i;
  mlsys_cloud_simres r;
  double iters = 1, price = 0;
  char cfg[512];
  mlsys_cloud_plan pl;
  if (!a->config) return cli_usage_error(cmd, "--config \"4xp3.8xlarge@1024+...\" is required");
  if ((rc = cloud_num(cmd, "--iters", a->iters, 1, 1e12, 1, &iters))) return rc;
  if ((rc = cloud_setup_make(cmd, a, &c))) {
    cloud_setup_free(&c);
    return rc;
  }
  if (mlsys_cloud_parse_config(c.ty, c.nty, a->config, counts, batches) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s (types: --types or the profile's)", mlsys_last_error());
    cloud_setup_free(&c);
    return rc;
  }
  if (mlsys_cloud_simulate(&c.sim, counts, batches, &r) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    cloud_setup_free(&c);
    return rc;
  }
  for (i = 0; i < c.nty; i++) price += counts[i] * c.ty[i].price_per_hour;
  memset(&pl, 0, sizeof pl);
  pl.ntypes = c.nty;
  for (i = 0; i < c.nty; i++) pl.counts[i] = counts[i], pl.batches[i] = batches[i];
  mlsys_cloud_plan_format(&c.sim, &pl, cfg, sizeof cfg);
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 0);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "dnn"), mlsys_jw_str(&w, c.dnn.dnn);
    mlsys_jw_key(&w, "config"), mlsys_jw_str(&w, cfg);
    mlsys_jw_key(&w, "n"), mlsys_jw_i64(&w, r.n);
    mlsys_jw_key(&w, "t_iter"), mlsys_jw_double(&w, r.t_iter);
    mlsys_jw_key(&w, "t_fw"), mlsys_jw_double(&w, r.t_fw);
    mlsys_jw_key(&w, "t_bw"), mlsys_jw_double(&w, r.t_bw);
    mlsys_jw_key(&w, "t_pe"), mlsys_jw_double(&w, r.t_pe);
    mlsys_jw_key(&w, "t_compute"), mlsys_jw_double(&w, r.t_compute);
    mlsys_jw_key(&w, "b_cap"), mlsys_jw_double(&w, r.b_cap);
    mlsys_jw_key(&w, "cost_per_hour"), mlsys_jw_double(&w, price);
    mlsys_jw_key(&w, "cost_per_iter"), mlsys_jw_double(&w, r.t_iter * price / 3600);
    mlsys_jw_key(&w, "iters"), mlsys_jw_double(&w, iters);
    mlsys_jw_key(&w, "total_time_s"), mlsys_jw_double(&w, r.t_iter * iters);
    mlsys_jw_key(&w, "total_cost"), mlsys_jw_double(&w, r.t_iter * iters * price / 3600);
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
  } else {
    printf("%s on %s (%d VMs)\n", c.dnn.dnn, cfg, r.n);
    printf("  t_iter %.4f s = t_fw %.4f + max(t_bw %.4f, t_pe %.4f)   (slowest compute %.4f s)\n", r.t_iter, r.t_fw,
           r.t_bw, r.t_pe, r.t_compute);
    if (r.n > 1) printf("  bandwidth cap %.3f Gbps per VM\n", r.b_cap * 8 / 1e9);
    printf("  $%.4f/h, $%.6f per iteration; %.0f iterations: %.1f s, $%.4f\n", price, r.t_iter * price / 3600, iters,
           r.t_iter * iters, r.t_iter * iters * price / 3600);
  }
  cloud_setup_free(&c);
  return CLI_OK;
}

/* ---- gbdt train | predict ---------------------------------------------------------------------------------- */
/* A CSV of numbers with a header: *cols names, rows of floats (nan or empty = NaN) into *v (row-major). */
static int cloud_csv(const char *cmd, const char *path, float **v, int *nrow, int *ncol, char ***names) {
  char *buf = NULL, *p, *line;
  size_t len;
  int cap = 0, n = 0, c, nc = 0, lineno = 1;
  float *x = NULL;
  if (path) {
    if (mlsys_read_file(path, &buf, &len) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  } else { /* stdin */
    size_t cap2 = 1 << 16, got;
    buf = (char *)malloc(cap2 + 1), len = 0;
    while (buf && (got = fread(buf + len, 1, cap2 - len, stdin)) > 0) {
      len += got;
      if (len == cap2) {
        char *nb = (char *)realloc(buf, 2 * cap2 + 1);
        if (!nb) break;
        buf = nb, cap2 *= 2;
      }
    }
    if (!buf) return cli_fail(cmd, "out of memory reading stdin");
    path = "stdin";
  }
  buf[len] = 0;
  for (p = buf; *p && *p != '\n'; p++) nc += *p == ',';
  nc += 1;
  if (names) {
    char *q = buf;
    *names = (char **)calloc((size_t)nc, sizeof **names);
    for (c = 0; c < nc && *names; c++) {
      char *e = q;
      while (*e && *e != ',' && *e != '\n' && *e != '\r') e++;
      (*names)[c] = strndup(q, (size_t)(e - q));
      q = *e == ',' ? e + 1 : e;
    }
  }
  line = *p ? p + 1 : p;
  while (*line) {
    char *e;
    lineno++;
    if (*line == '\n' || *line == '\r') { line++; continue; }
    if (n == cap) {
      float *nx = (float *)realloc(x, (size_t)(cap ? 2 * cap : 1024) * (size_t)nc * sizeof *x);
      if (!nx) { free(x); free(buf); return cli_fail(cmd, "out of memory reading %s", path); }
      x = nx, cap = cap ? 2 * cap : 1024;
    }
    for (c = 0; c < nc; c++) {
      while (*line == ' ') line++;
      if (*line == ',' || *line == '\n' || *line == '\r' || !*line || !strncmp(line, "nan", 3)) {
        x[(size_t)n * nc + c] = NAN;
        if (!strncmp(line, "nan", 3)) line += 3;
      } else {
        double d = strtod(line, &e);
        if (e == line || !isfinite(d)) {
          free(x); free(buf);
          return cli_fail(cmd, "%s:%d: field %d is not a number", path, lineno, c + 1);
        }
        x[(size_t)n * nc + c] = (float)d, line = e;
      }
      while (*line == ' ' || *line == '\r') line++;
      if (c + 1 < nc) {
        if (*line != ',') { free(x); free(buf); return cli_fail(cmd, "%s:%d: %d fields, the header has %d", path, lineno, c + 1, nc); }
        line++;
      }
    }
    if (*line && *line != '\n') { free(x); free(buf); return cli_fail(cmd, "%s:%d: more fields than the header's %d", path, lineno, nc); }
    if (*line) line++;
    n++;
  }
  free(buf);
  if (!n) { free(x); return cli_fail(cmd, "%s: no rows after the header", path); }
  *v = x, *nrow = n, *ncol = nc;
  return CLI_OK;
}

static int cloud_gbdt_train(const cloud_args *a) {
  const char *cmd = "cloud gbdt train";
  mlsys_cloud_gbdt_params gp;
  mlsys_cloud_gbdt *m = NULL;
  float *v, *X, *y;
  char **names = NULL;
  int nrow, ncol, rc, lab, i, j;
  double d;
  FILE *f;
  if (!a->data || !a->out) return cli_usage_error(cmd, "--data CSV and --out MODEL are required");
  mlsys_cloud_gbdt_params_default(&gp);
  if (a->objective && strcmp(a->objective, "squared") && strcmp(a->objective, "pseudohuber"))
    return cli_usage_error(cmd, "--objective is squared or pseudohuber");
  gp.obj = a->objective && !strcmp(a->objective, "pseudohuber") ? MLSYS_CLOUD_OBJ_PSEUDO_HUBER : MLSYS_CLOUD_OBJ_SQUARED;
#define GP(opt, field, lo, hi, integer)                                       \
  d = NAN;                                                                     \
  if ((rc = cloud_num(cmd, opt, a->field, lo, hi, integer, &d))) return rc; \
  if (a->field)
  GP("--trees", trees, 1, 100000, 1) gp.n_trees = (int)d;
  GP("--depth", depth, 1, 30, 1) gp.max_depth = (int)d;
  GP("--eta", eta, 1e-9, 1, 0) gp.eta = d;
  GP("--lambda", lambda, 0, 1e9, 0) gp.lambda = d;
  GP("--gamma", gamma, 0, 1e30, 0) gp.gamma = d;
  GP("--min-child-weight", mcw, 0, 1e30, 0) gp.min_child_weight = d;
  GP("--huber-slope", huber, 1e-30, 1e30, 0) gp.huber_slope = d;
  GP("--max-bin", max_bin, 2, 65535, 1) gp.max_bin = (int)d;
  GP("--base-score", base, -1e30, 1e30, 0) gp.base_score = d;
  GP("--seed", seed, 0, 9e15, 1) gp.seed = (uint64_t)d;
#undef GP
  if ((rc = cloud_csv(cmd, a->data, &v, &nrow, &ncol, &names))) return rc;
  lab = ncol - 1;
  if (a->label) {
    for (lab = 0; lab < ncol && names && strcmp(names[lab], a->label); lab++) {}
    if (lab == ncol) rc = cli_fail(cmd, "%s has no column \"%s\"", a->data, a->label);
  }
  if (!rc && ncol < 2) rc = cli_fail(cmd, "%s: a label and at least one feature are needed", a->data);
  X = rc ? NULL : (float *)malloc((size_t)nrow * (size_t)(ncol - 1) * sizeof *X);
  y = rc ? NULL : (float *)malloc((size_t)nrow * sizeof *y);
  if (!rc && (!X || !y)) rc = cli_fail(cmd, "out of memory");
  if (!rc) {
    for (i = 0; i < nrow; i++) {
      int k = 0;
      for (j = 0; j < ncol; j++)
        if (j == lab) y[i] = v[(size_t)i * ncol + j];
        else X[(size_t)i * (ncol - 1) + k++] = v[(size_t)i * ncol + j];
    }
    if (mlsys_cloud_gbdt_train(X, y, nrow, ncol - 1, &gp, &m) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (!rc) {
    if (!(f = fopen(a->out, "w"))) rc = cli_fail(cmd, "cannot write %s", a->out);
    else if (mlsys_cloud_gbdt_save(m, f) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
    if (f && fclose(f) != 0 && !rc) rc = cli_fail(cmd, "writing %s failed", a->out);
  }
  if (!rc) {
    double mape = 0;
    int np = 0;
    for (i = 0; i < nrow; i++)
      if (y[i] != 0) mape += fabs(mlsys_cloud_gbdt_predict(m, X + (size_t)i * (ncol - 1)) - y[i]) / fabs(y[i]), np++;
    fprintf(stderr, "mlsys %s: %d rows, %d features, label \"%s\": %d trees; training MAPE %.4f; wrote %s\n", cmd, nrow,
            ncol - 1, names && names[lab] ? names[lab] : "?", mlsys_cloud_gbdt_ntrees(m), np ? mape / np : NAN, a->out);
  }
  for (i = 0; names && i < ncol; i++) free(names[i]);
  free(names);
  free(v), free(X), free(y);
  mlsys_cloud_gbdt_free(m);
  return rc;
}

static int cloud_gbdt_predict(const cloud_args *a) {
  const char *cmd = "cloud gbdt predict";
  mlsys_cloud_gbdt *m = NULL;
  float *v = NULL;
  double base = NAN;
  int nrow, ncol, rc, i, nf;
  if (!a->model) return cli_usage_error(cmd, "--model FILE is required");
  if ((rc = cloud_num(cmd, "--base-score", a->base, -1e30, 1e30, 0, &base))) return rc;
  if (mlsys_cloud_gbdt_load_file(a->model, base, &m) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  nf = mlsys_cloud_gbdt_nfeatures(m);
  if ((rc = cloud_csv(cmd, a->features, &v, &nrow, &ncol, NULL))) {
    mlsys_cloud_gbdt_free(m);
    return rc;
  }
  if (ncol < nf) rc = cli_fail(cmd, "%s has %d columns, the model uses %d features", a->features ? a->features : "stdin", ncol, nf);
  if (!rc) { /* the batch call: rows in blocks through each tree, the row-by-row bits */
    double *out = (double *)malloc((size_t)(nrow ? nrow : 1) * sizeof *out);
    if (!out) rc = cli_fail(cmd, "out of memory for %d predictions", nrow);
    else if (mlsys_cloud_gbdt_predict_rows(m, v, nrow, ncol, out) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
    for (i = 0; !rc && i < nrow; i++) printf("%.9g\n", out[i]);
    free(out);
  }
  free(v);
  mlsys_cloud_gbdt_free(m);
  return rc;
}

/* ---- probe --------------------------------------------------------------------------------------------------- */
static int cloud_probe(const cloud_args *a) {
  const char *cmd = "cloud probe";
  mlsys_cloud_probe_opts o;
  mlsys_cloud_probe_row *rows = NULL, *all = NULL;
  int lo = 2, hi = 8, n, rc = CLI_OK, nall = 0, cap = 0, got;
  uint64_t bytes;
  FILE *f = NULL;
  mlsys_cloud_probe_opts_default(&o);
  if (a->world) {
    char *e;
    long l = strtol(a->world, &e, 10), h = l;
    if (*e == '.' && e[1] == '.') h = strtol(e + 2, &e, 10);
    if (*e || l < 2 || h < l || h > 64) return cli_usage_error(cmd, "--world is N or LO..HI within 2..64");
    lo = (int)l, hi = (int)h;
  }
  if (a->min) {
    if (cli_parse_bytes(a->min, &bytes) || bytes < 4) return cli_usage_error(cmd, "--min must be a size of at least 4 bytes");
    o.min_bytes = (size_t)bytes;
  }
  if (a->max) {
    if (cli_parse_bytes(a->max, &bytes) || bytes < o.min_bytes) return cli_usage_error(cmd, "--max must be a size of at least --min");
    o.max_bytes = (size_t)bytes;
  }
  if (a->iters) {
    double d;
    if ((rc = cloud_num(cmd, "--iters", a->iters, 1, 1e6, 1, &d))) return rc;
    o.iters = (int)d;
  }
  o.verify = a->verify != NULL;
  cap = mlsys_cloud_probe_nsizes(o.min_bytes, o.max_bytes);
  if (cap < 1) return cli_usage_error(cmd, "--min/--max: no sizes");
  rows = (mlsys_cloud_probe_row *)malloc((size_t)cap * sizeof *rows);
  all = (mlsys_cloud_probe_row *)malloc((size_t)cap * 64 * sizeof *all);
  if (!rows || !all) { free(rows); free(all); return cli_fail(cmd, "out of memory"); }
  /* world sizes: LO, then powers of two above it, then HI (2..8 → 2, 4, 8) */
  for (n = lo; n <= hi && !rc; n = n * 2 <= hi || n == hi ? n * 2 : hi) {
    o.nranks = n;
    if (mlsys_cloud_probe_tcp(&o, rows, cap, &got) != MLSYS_OK) rc = cli_fail(cmd, "world %d: %s", n, mlsys_last_error());
    else memcpy(all + nall, rows, (size_t)got * sizeof *rows), nall += got;
    if (n == hi) break;
  }
  if (!rc && a->out) {
    if (!(f = fopen(a->out, "w")) || mlsys_cloud_probe_write_csv(all, nall, f) != MLSYS_OK) rc = cli_fail(cmd, "cannot write %s", a->out);
    if (f && fclose(f) != 0 && !rc) rc = cli_fail(cmd, "writing %s failed", a->out);
  }
  if (!rc && a->json) {
    mlsys_json_writer w;
    int i;
    mlsys_jw_init(&w, stdout, 0);
    mlsys_jw_array(&w);
    for (i = 0; i < nall; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "bytes"), mlsys_jw_double(&w, all[i].bytes);
      mlsys_jw_key(&w, "n"), mlsys_jw_i64(&w, all[i].n);
      mlsys_jw_key(&w, "t_s"), mlsys_jw_double(&w, all[i].t_s);
      mlsys_jw_key(&w, "busbw_gbps"), mlsys_jw_double(&w, all[i].busbw * 8 / 1e9);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
  } else if (!rc) {
    int i;
    printf("%12s %4s %12s %12s\n", "bytes", "n", "seconds", "busbw Gbps");
    for (i = 0; i < nall; i++) printf("%12.0f %4d %12.6f %12.4f\n", all[i].bytes, all[i].n, all[i].t_s, all[i].busbw * 8 / 1e9);
  }
  free(rows);
  free(all);
  return rc;
}

/* mlsys cloud fit: measured timings (and a layer list) into a profile, with each type's fit error */
static int cloud_fit(const cloud_args *a) {
  const char *cmd = "cloud fit";
  char *tb = NULL, *lb = NULL;
  size_t tl = 0, ll = 0;
  mlsys_cloud_dnn d;
  mlsys_cloud_fit_stat *st = NULL;
  mlsys_json_writer w;
  FILE *f = NULL;
  int rc = CLI_OK, t;
  if (!a->timings) return cli_usage_error(cmd, "--timings CSV is required");
  if ((rc = cloud_read(cmd, a->timings, &tb, &tl))) return rc;
  if (a->layers && (rc = cloud_read(cmd, a->layers, &lb, &ll))) {
    mlsys_free(tb);
    return rc;
  }
  if (mlsys_cloud_dnn_fit(a->name ? a->name : "dnn", tb, tl, a->timings, lb, ll, a->layers, &d, &st) != MLSYS_OK) {
    mlsys_free(tb), mlsys_free(lb);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (a->out) {
    if (!(f = fopen(a->out, "w")) || mlsys_cloud_dnn_write(&d, f) != MLSYS_OK) rc = cli_fail(cmd, "cannot write %s", a->out);
    if (f && fclose(f) != 0 && !rc) rc = cli_fail(cmd, "writing %s failed", a->out);
  } else if (mlsys_cloud_dnn_write(&d, stdout) != MLSYS_OK) {
    rc = cli_fail(cmd, "writing the profile failed");
  }
  if (!rc && a->out) { /* each type's error against its own timings: the curve's and one least-squares line's */
    if (a->json) mlsys_jw_init(&w, stdout, 0), mlsys_jw_array(&w);
    else printf("%-20s %6s %7s %10s %10s %10s\n", "type", "bmax", "timings", "fit MAPE", "line MAPE", "sigma_rel");
    for (t = 0; t < d.ntypes; t++) {
      const mlsys_cloud_cprof *p = &d.prof[t];
      if (a->json) {
        mlsys_jw_object(&w);
        mlsys_jw_key(&w, "type"), mlsys_jw_str(&w, d.type_name[t]);
        mlsys_jw_key(&w, "bmax"), mlsys_jw_i64(&w, p->bmax);
        mlsys_jw_key(&w, "timings"), mlsys_jw_i64(&w, st[t].n);
        mlsys_jw_key(&w, "fit_mape"), mlsys_jw_double(&w, st[t].fit_mape);
        mlsys_jw_key(&w, "line_mape"), mlsys_jw_double(&w, st[t].line_mape);
        mlsys_jw_key(&w, "sigma_rel"), mlsys_jw_double(&w, p->sigma_rel);
        mlsys_jw_end(&w);
      } else {
        printf("%-20s %6d %7d %9.1f%% %9.1f%% %10.4f\n", d.type_name[t], p->bmax, st[t].n, 100 * st[t].fit_mape,
               100 * st[t].line_mape, p->sigma_rel);
      }
    }
    if (a->json) mlsys_jw_end(&w), mlsys_jw_finish(&w);
    else printf("wrote %s (%d types, %d layers)\n", a->out, d.ntypes, d.nlayers);
  }
  mlsys_free(st);
  mlsys_cloud_dnn_free(&d);
  mlsys_free(tb), mlsys_free(lb);
  return rc;
}

int cmd_cloud(int argc, char **argv) {
  cloud_args a;
  const char *verb = argc > 2 ? argv[2] : NULL;
  cli_opt opts[] = {{"--dnn", 1, &a.dnn},               {"--profile", 1, &a.profile},       {"--catalog", 1, &a.catalog},   {"--spot", 0, &a.spot},
                    {"--types", 1, &a.types},           {"--config", 1, &a.config},     {"--global-batch", 1, &a.batch},
                    {"--iters", 1, &a.iters},           {"--time-limit", 1, &a.tlim},   {"--budget", 1, &a.budget},
                    {"--goal", 1, &a.goal},             {"--eager", 0, &a.eager},       {"--eager-k", 1, &a.eager_k},
                    {"--solve-budget", 1, &a.solve_budget}, {"--max-types", 1, &a.max_types}, {"--json", 0, &a.json},
                    {"--straggler-iters", 1, &a.straggler}, {"--seed", 1, &a.seed},     {"--share", 1, &a.share},
                    {"--b-cap", 1, &a.bcap},            {"--help", 0, &a.help},         {"--data", 1, &a.data},
                    {"--out", 1, &a.out},               {"--label", 1, &a.label},       {"--objective", 1, &a.objective},
                    {"--trees", 1, &a.trees},           {"--depth", 1, &a.depth},       {"--eta", 1, &a.eta},
                    {"--lambda", 1, &a.lambda},         {"--gamma", 1, &a.gamma},       {"--min-child-weight", 1, &a.mcw},
                    {"--huber-slope", 1, &a.huber},     {"--max-bin", 1, &a.max_bin},   {"--base-score", 1, &a.base},
                    {"--model", 1, &a.model},           {"--features", 1, &a.features}, {"--world", 1, &a.world},
                    {"--min", 1, &a.min},               {"--max", 1, &a.max},           {"--verify", 0, &a.verify},
                    {"--bw-model", 1, &a.bw_model},     {"--bw-types", 1, &a.bw_types}, {"--timings", 1, &a.timings},
                    {"--layers", 1, &a.layers},         {"--name", 1, &a.name}};
  int rc;
  memset(&a, 0, sizeof a);
  if (!verb || !strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
    fputs(cloud_help, verb ? stdout : stderr);
    return verb ? CLI_OK : CLI_USAGE;
  }
  if (!strcmp(verb, "gbdt")) { /* mlsys cloud gbdt train|predict [options] */
    const char *sub = argc > 3 ? argv[3] : "";
    if (strcmp(sub, "train") && strcmp(sub, "predict")) return cli_usage_error("cloud", "gbdt takes train or predict");
    if ((rc = cli_parse(argc, argv, 4, opts, (int)(sizeof opts / sizeof *opts), "cloud gbdt"))) return rc;
    if (a.help) {
      fputs(cloud_help, stdout);
      return CLI_OK;
    }
    return !strcmp(sub, "train") ? cloud_gbdt_train(&a) : cloud_gbdt_predict(&a);
  }
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof *opts), "cloud"))) return rc;
  if (a.help) {
    fputs(cloud_help, stdout);
    return CLI_OK;
  }
  if (!strcmp(verb, "plan")) return cloud_plan(&a);
  if (!strcmp(verb, "simulate")) return cloud_simulate(&a);
  if (!strcmp(verb, "probe")) return cloud_probe(&a);
  if (!strcmp(verb, "dnns")) return cloud_dnns(&a);
  if (!strcmp(verb, "fit")) return cloud_fit(&a);
  return cli_usage_error("cloud", "unknown verb '%s' (plan, simulate, fit, dnns, gbdt, probe)", verb);
}
