/* cli/transfer.c — `mlsys transfer`: Skyplane's overlay planner on the measured cloud grid (plan, pareto); the
   data-plane verbs (cp, gateway) are in cli/transfer_cp.c. */
#include "mlsys_transfer.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *xfer_help =
    "usage: mlsys transfer <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  plan     --src P:REGION --dst P:REGION [--goal-gbps G | --max-cost-per-gb C] [--max-vms N] [--json]\n"
    "           [--volume-gb V] [--rounding exact|relaxed|round-up|round-down] [--max-relays 0|1] [--direct-only]\n"
    "           [--grid FILE] [--prices FILE] [--units si|skyplane] [--vm-cost-per-hr X] [--time-limit S]\n"
    "           [--plan-out FILE] [--emulate-scale S] [--base-port P] [--host A]\n"
    "           The cheapest overlay plan that delivers G Gbps (thesis eq. 4.4), or the fastest one costing at most\n"
    "           C $/GB (the Pareto sweep of §4.5.2); with neither, the fastest plan the VM limits allow. Compares it\n"
    "           with the direct path and with RON's best single relay at the same number of VMs per region.\n"
    "  pareto   --src P:REGION --dst P:REGION [--samples K] [--max-vms N] [--json] (and the grid options)\n"
    "           Min-cost plans at K throughput goals up to the maximum: the throughput / price frontier (Fig. 4.9c).\n"
    "  cp       SRC_URL DST_URL [--plan FILE] ...   copy objects through the data plane (`mlsys transfer cp --help`)\n"
    "  gateway  --plan FILE --id K ...               run one gateway of a plan (`mlsys transfer gateway --help`)\n"
    "\n"
    "Regions are provider:region keys of the grid: aws:us-east-1, gcp:asia-northeast1-a (GCP with zone),\n"
    "azure:canadacentral. --grid is the authors' measured throughput CSV (iperf3, 64 connections, one VM per end;\n"
    "default: $MLSYS_SKYPLANE_GRID, else the repository's tests/data/skyplane/throughput_premium.csv, found from\n"
    "the working directory or beside the mlsys binary); --prices the AWS egress table (default: aws_transfer_costs.csv\n"
    "beside the grid); GCP and Azure prices follow the 2022 rules. --units skyplane reads bits/s / 2^30 as Gbps, as the\n"
    "thesis's figures do (default si: 1e9). --max-vms caps VMs per region (default 8, thesis §4.7.2);\n"
    "--vm-cost-per-hr defaults to 0.54 $/h. --rounding: exact (integer VMs, default), relaxed (fractional VMs: the\n"
    "LP), round-up, round-down (the thesis's relaxation). --plan-out writes the plan and its gateway overlay (JSON,\n"
    "docs/transfer.md) for `cp --plan`; --emulate-scale S sets each overlay edge's emulated rate to S x its Gbps;\n"
    "--base-port P numbers the gateways' ports P, P+1, ... and --host A sets their address (default 127.0.0.1),\n"
    "for running them as separate processes with `mlsys transfer gateway`.\n"
    "\n"
    "plan --json keys: status (\"ok\"), src, dst, mode (min-cost | max-throughput), throughput_gbps, cost_per_gb,\n"
    "egress_per_gb, vm_per_gb, lp_bound_per_gb, vms (region -> VMs), paths ([{hops: [regions], gbps}]),\n"
    "solve_seconds, solves, direct_gbps, direct_cost_per_gb, ron_gbps, ron_cost_per_gb, speedup_vs_direct,\n"
    "bottlenecks (list of: src_vm, src_link, relay_vm, relay_link, dst_vm, dst_link, vm_limit).\n"
    "pareto --json: {status, src, dst, points: [{goal_gbps, feasible, throughput_gbps, cost_per_gb}]}.\n";

typedef struct {
  const char *src, *dst, *goal, *ceiling, *max_vms, *json, *help, *volume, *rounding, *max_relays, *direct_only,
      *grid, *prices, *units, *vm_cost, *time_limit, *plan_out, *emulate, *samples, *base_port, *host;
} xfer_args;

/* Up to three grid keys a missing one was probably meant as (GCP keys carry a zone: gcp:asia-northeast1-a). */
static void xfer_suggest(const mlsys_xfer_grid *g, const char *key, char *out, size_t len) {
  size_t o = 0, kl = strlen(key), cut;
  int v, k = 0, pass;
  out[0] = 0;
  /* keys extending the given one first; failing that, keys sharing all but its last two characters */
  for (pass = 0; pass < 2 && !k; pass++) {
    if (pass && (kl < 6 || !strchr(key, ':'))) break;
    cut = pass ? kl - 2 : kl;
    for (v = 0; v < g->n && k < 3; v++)
      if (!strncmp(g->r[v].key, key, cut)) {
        int w = snprintf(out + o, len - o, "%s%s", k ? ", " : "did you mean ", g->r[v].key);
        if (w < 0 || (size_t)w >= len - o) break;
        o += (size_t)w;
        k++;
      }
  }
  if (k && o + 1 < len) snprintf(out + o, len - o, "?");
}

/* Loads the grid and resolves the two regions into a problem. */
static int xfer_setup(const char *cmd, const xfer_args *a, mlsys_xfer_grid *g, mlsys_xfer_problem *p) {
  mlsys_xfer_grid_opts go;
  const char *grid = a->grid, *prices = a->prices;
  char pbuf[1024], gbuf[4096];
  double v;
  int s, t;
  memset(&go, 0, sizeof go);
  if (!a->src || !a->dst) return cli_usage_error(cmd, "--src and --dst are required (provider:region, e.g. aws:us-east-1)");
  if (!grid) grid = getenv("MLSYS_SKYPLANE_GRID");
  if (!grid) {   /* the committed grid: from the working directory, else the repository the binary was built in */
    cli_repo_file("tests/data/skyplane/throughput_premium.csv", gbuf, sizeof gbuf);
    grid = gbuf;
  }
  if (!prices) {
    const char *slash = strrchr(grid, '/');
    snprintf(pbuf, sizeof pbuf, "%.*saws_transfer_costs.csv", slash ? (int)(slash - grid + 1) : 0, grid);
    prices = cli_file_exists(pbuf) ? pbuf : NULL;
  }
  if (a->units) {
    if (!strcmp(a->units, "skyplane")) go.units_skyplane = 1;
    else if (strcmp(a->units, "si")) return cli_usage_error(cmd, "--units si|skyplane, got '%s'", a->units);
  }
  if (a->vm_cost) {
    if (cli_parse_double(a->vm_cost, &v) || !(v >= 0)) return cli_usage_error(cmd, "--vm-cost-per-hr needs a number >= 0, got '%s'", a->vm_cost);
    go.vm_cost_per_hr = v > 0 ? v : 1e-300;
  }
  if (mlsys_xfer_grid_load(grid, prices, &go, g)) return cli_fail(cmd, "%s", mlsys_last_error());
  s = mlsys_xfer_grid_find(g, a->src);
  t = mlsys_xfer_grid_find(g, a->dst);
  if (s < 0 || t < 0) {   /* name every missing region of the pair, and what the grid has instead */
    const char *keys = "keys look like aws:us-east-1, gcp:us-east4-a, azure:eastus";
    char hs[512], ht[512];
    xfer_suggest(g, a->src, hs, sizeof hs);
    xfer_suggest(g, a->dst, ht, sizeof ht);
    if (s < 0 && t < 0)
      cli_fail(cmd, "neither --src '%s'%s%s%s nor --dst '%s'%s%s%s is a region of the grid %s (%d regions; %s)", a->src, *hs ? " (" : "", hs,
               *hs ? ")" : "", a->dst, *ht ? " (" : "", ht, *ht ? ")" : "", grid, g->n, keys);
    else
      cli_fail(cmd, "%s '%s' is not a region of the grid %s (%d regions; %s)", s < 0 ? "--src" : "--dst", s < 0 ? a->src : a->dst, grid,
               g->n, *(s < 0 ? hs : ht) ? (s < 0 ? hs : ht) : keys);
    mlsys_xfer_grid_free(g);
    return CLI_ERR;
  }
  mlsys_xfer_problem_default(p, s, t);
  p->vm_limit = 8;
  if (a->max_vms) {
    if (cli_parse_double(a->max_vms, &v) || v < 1 || v > 1000 || v != floor(v)) { mlsys_xfer_grid_free(g); return cli_usage_error(cmd, "--max-vms needs an integer in [1, 1000], got '%s'", a->max_vms); }
    p->vm_limit = (int)v;
  }
  if (a->volume) {
    if (cli_parse_double(a->volume, &v) || !(v > 0)) { mlsys_xfer_grid_free(g); return cli_usage_error(cmd, "--volume-gb needs a positive number, got '%s'", a->volume); }
    p->volume_gb = v;
  }
  if (a->rounding) {
    if (!strcmp(a->rounding, "exact")) p->rounding = MLSYS_XFER_EXACT;
    else if (!strcmp(a->rounding, "relaxed")) p->rounding = MLSYS_XFER_RELAXED;
    else if (!strcmp(a->rounding, "round-up")) p->rounding = MLSYS_XFER_ROUND_UP;
    else if (!strcmp(a->rounding, "round-down")) p->rounding = MLSYS_XFER_ROUND_DOWN;
    else { mlsys_xfer_grid_free(g); return cli_usage_error(cmd, "--rounding exact|relaxed|round-up|round-down, got '%s'", a->rounding); }
  }
  if (a->max_relays) {
    if (!strcmp(a->max_relays, "1")) p->max_relays = 1;
    else if (strcmp(a->max_relays, "0")) { mlsys_xfer_grid_free(g); return cli_usage_error(cmd, "--max-relays 0 (any path) or 1, got '%s'", a->max_relays); }
  }
  if (a->direct_only) p->direct_only = 1;
  if (a->time_limit) {
    if (cli_parse_double(a->time_limit, &v) || !(v > 0)) { mlsys_xfer_grid_free(g); return cli_usage_error(cmd, "--time-limit needs a positive number, got '%s'", a->time_limit); }
    p->time_limit_s = v;
  }
  return CLI_OK;
}

static void xfer_bottlenecks(mlsys_json_writer *w, int bits) {
  static const char *names[] = {"src_vm", "src_link", "relay_vm", "relay_link", "dst_vm", "dst_link", "vm_limit"};
  int i;
  mlsys_jw_array(w);
  for (i = 0; i < 7; i++) if (bits & (1 << i)) mlsys_jw_str(w, names[i]);
  mlsys_jw_end(w);
}

static int xfer_plan(const xfer_args *a) {
  const char *cmd = "transfer plan";
  mlsys_xfer_grid g;
  mlsys_xfer_problem p;
  mlsys_xfer_plan pl, d, r;
  mlsys_xfer_path *paths = NULL;
  int rc, np = 0, i, j, v, have_d, have_r, bn;
  double goal = 0, ceil_ = 0, t0 = mlsys_now();
  mlsys_status st;
  const char *mode;
  if (a->goal && a->ceiling) return cli_usage_error(cmd, "give --goal-gbps or --max-cost-per-gb, not both");
  if (a->goal && (cli_parse_double(a->goal, &goal) || !(goal > 0))) return cli_usage_error(cmd, "--goal-gbps needs a positive number, got '%s'", a->goal);
  if (a->ceiling && (cli_parse_double(a->ceiling, &ceil_) || !(ceil_ > 0))) return cli_usage_error(cmd, "--max-cost-per-gb needs a positive number, got '%s'", a->ceiling);
  if ((rc = xfer_setup(cmd, a, &g, &p)) != CLI_OK) return rc;
  if (a->ceiling) {
    mode = "max-throughput";
    p.max_cost_per_gb = ceil_;
    st = mlsys_xfer_plan_max_tput(&g, &p, &pl);
  } else {
    mode = "min-cost";
    if (!a->goal) {
      if ((st = mlsys_xfer_max_flow(&g, &p, NULL, &goal))) goto fail;
      goal *= 1 - 1e-9;
    }
    p.goal_gbps = goal;
    st = mlsys_xfer_plan_min_cost(&g, &p, &pl);
  }
  if (st) goto fail;
  pl.solve_seconds = mlsys_now() - t0;
  have_d = mlsys_xfer_plan_direct(&g, &p, p.vm_limit, &d) == MLSYS_OK;
  have_r = mlsys_xfer_plan_ron(&g, &p, p.vm_limit, &r) == MLSYS_OK;
  if (mlsys_xfer_plan_paths(&pl, &paths, &np)) { st = MLSYS_ERR_NOMEM; goto fail2; }
  bn = mlsys_xfer_plan_bottlenecks(&g, &p, &pl, 0.99);
  if (a->plan_out) {
    mlsys_xfer_overlay ov;
    double sc = 0;
    FILE *f;
    if (a->emulate && (cli_parse_double(a->emulate, &sc) || !(sc >= 0))) { rc = cli_usage_error(cmd, "--emulate-scale needs a number >= 0, got '%s'", a->emulate); goto out; }
    if ((st = mlsys_xfer_plan_compile(&g, &pl, sc, 64, &ov))) goto fail2;
    if (a->base_port || a->host) {
      double bp = 0;
      int k;
      if (a->base_port && (cli_parse_double(a->base_port, &bp) || bp < 1024 || bp + ov.ngw > 65536 || bp != floor(bp))) {
        mlsys_xfer_overlay_free(&ov);
        rc = cli_usage_error(cmd, "--base-port needs an integer port in [1024, %d], got '%s'", 65536 - ov.ngw, a->base_port);
        goto out;
      }
      for (k = 0; k < ov.ngw; k++) {
        if (a->base_port) ov.gw[k].port = (int)bp + k;
        if (a->host) snprintf(ov.gw[k].host, sizeof ov.gw[k].host, "%s", a->host);
      }
    }
    if (!(f = fopen(a->plan_out, "w"))) { mlsys_xfer_overlay_free(&ov); rc = cli_fail(cmd, "%s: cannot write", a->plan_out); goto out; }
    st = mlsys_xfer_plan_write_json(&g, &pl, &ov, f);
    if (fclose(f) != 0 && !st) st = mlsys_set_error(MLSYS_ERR_IO, "%s: write failed", a->plan_out);
    mlsys_xfer_overlay_free(&ov);
    if (st) { rc = cli_fail(cmd, "%s: %s", a->plan_out, mlsys_last_error()); goto out; }
  }
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, pl.feasible ? "ok" : "short");
    mlsys_jw_key(&w, "src"); mlsys_jw_str(&w, g.r[p.src].key);
    mlsys_jw_key(&w, "dst"); mlsys_jw_str(&w, g.r[p.dst].key);
    mlsys_jw_key(&w, "mode"); mlsys_jw_str(&w, mode);
    mlsys_jw_key(&w, "throughput_gbps"); mlsys_jw_double(&w, pl.tput_gbps);
    mlsys_jw_key(&w, "cost_per_gb"); mlsys_jw_double(&w, pl.cost_per_gb);
    mlsys_jw_key(&w, "egress_per_gb"); mlsys_jw_double(&w, pl.cost_egress / (p.volume_gb > 0 ? p.volume_gb : 1));
    mlsys_jw_key(&w, "vm_per_gb"); mlsys_jw_double(&w, pl.cost_vm / (p.volume_gb > 0 ? p.volume_gb : 1));
    mlsys_jw_key(&w, "lp_bound_per_gb"); mlsys_jw_double(&w, pl.lp_bound_per_gb);
    mlsys_jw_key(&w, "vms"); mlsys_jw_object(&w);
    for (v = 0; v < g.n; v++) if (pl.vms[v] > 1e-9) { mlsys_jw_key(&w, g.r[v].key); mlsys_jw_double(&w, pl.vms[v]); }
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "paths"); mlsys_jw_array(&w);
    for (i = 0; i < np; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "hops"); mlsys_jw_array(&w);
      for (j = 0; j < paths[i].len; j++) mlsys_jw_str(&w, g.r[paths[i].r[j]].key);
      mlsys_jw_end(&w);
      mlsys_jw_key(&w, "gbps"); mlsys_jw_double(&w, paths[i].gbps);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "solve_seconds"); mlsys_jw_double(&w, pl.solve_seconds);
    mlsys_jw_key(&w, "solves"); mlsys_jw_i64(&w, pl.solves);
    mlsys_jw_key(&w, "direct_gbps"); if (have_d) mlsys_jw_double(&w, d.tput_gbps); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "direct_cost_per_gb"); if (have_d) mlsys_jw_double(&w, d.cost_per_gb); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "ron_gbps"); if (have_r) mlsys_jw_double(&w, r.tput_gbps); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "ron_cost_per_gb"); if (have_r) mlsys_jw_double(&w, r.cost_per_gb); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "speedup_vs_direct"); if (have_d) mlsys_jw_double(&w, pl.tput_gbps / d.tput_gbps); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "bottlenecks"); xfer_bottlenecks(&w, bn);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "writing JSON: %s", mlsys_last_error());
  } else {
    printf("%s -> %s (%s, at most %d VMs per region)\n", g.r[p.src].key, g.r[p.dst].key, mode, p.vm_limit);
    printf("  plan:    %.3f Gbps at $%.4f/GB (egress $%.4f, VMs $%.4f)%s\n", pl.tput_gbps, pl.cost_per_gb,
           pl.cost_egress / (p.volume_gb > 0 ? p.volume_gb : 1), pl.cost_vm / (p.volume_gb > 0 ? p.volume_gb : 1),
           pl.feasible ? "" : "  [short of the goal: round-down lost capacity]");
    for (i = 0; i < np; i++) {
      printf("    %7.3f Gbps:", paths[i].gbps);
      for (j = 0; j < paths[i].len; j++) printf(" %s%s", j ? "-> " : "", g.r[paths[i].r[j]].key);
      putchar('\n');
    }
    printf("  VMs:    ");
    for (v = 0; v < g.n; v++) if (pl.vms[v] > 1e-9) printf(" %s=%g", g.r[v].key, pl.vms[v]);
    putchar('\n');
    if (have_d) printf("  direct:  %.3f Gbps at $%.4f/GB  -> plan is %.2fx faster at %.2fx the price\n", d.tput_gbps, d.cost_per_gb,
                       pl.tput_gbps / d.tput_gbps, pl.cost_per_gb / d.cost_per_gb);
    if (have_r) printf("  RON:     %.3f Gbps at $%.4f/GB\n", r.tput_gbps, r.cost_per_gb);
    printf("  solved in %.3f s (%d LP/MILP solves)\n", pl.solve_seconds, pl.solves);
  }
out:
  mlsys_xfer_paths_free(paths, np);
  if (have_d) mlsys_xfer_plan_free(&d);
  if (have_r) mlsys_xfer_plan_free(&r);
  mlsys_xfer_plan_free(&pl);
  mlsys_xfer_grid_free(&g);
  return rc;
fail2:
  rc = cli_fail(cmd, "%s", mlsys_last_error());
  goto out;
fail:
  rc = cli_fail(cmd, "%s", mlsys_last_error());
  mlsys_xfer_grid_free(&g);
  return rc;
}

static int xfer_pareto(const xfer_args *a) {
  const char *cmd = "transfer pareto";
  mlsys_xfer_grid g;
  mlsys_xfer_problem p;
  mlsys_xfer_plan *pts = NULL;
  double hi = 0, *goals = NULL, v;
  int rc, K = 20, i;
  if (a->samples) {
    if (cli_parse_double(a->samples, &v) || v < 2 || v > 1000 || v != floor(v)) return cli_usage_error(cmd, "--samples needs an integer in [2, 1000], got '%s'", a->samples);
    K = (int)v;
  }
  if ((rc = xfer_setup(cmd, a, &g, &p)) != CLI_OK) return rc;
  if (mlsys_xfer_max_flow(&g, &p, NULL, &hi)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); mlsys_xfer_grid_free(&g); return rc; }
  goals = (double *)calloc((size_t)K, sizeof(double));
  pts = (mlsys_xfer_plan *)calloc((size_t)K, sizeof *pts);
  if (!goals || !pts) { free(goals); free(pts); mlsys_xfer_grid_free(&g); return cli_fail(cmd, "out of memory"); }
  for (i = 0; i < K; i++) goals[i] = hi * (i + 1) / K * (1 - 1e-9);
  if (mlsys_xfer_pareto(&g, &p, goals, K, pts)) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
  } else if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, "ok");
    mlsys_jw_key(&w, "src"); mlsys_jw_str(&w, g.r[p.src].key);
    mlsys_jw_key(&w, "dst"); mlsys_jw_str(&w, g.r[p.dst].key);
    mlsys_jw_key(&w, "points"); mlsys_jw_array(&w);
    for (i = 0; i < K; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "goal_gbps"); mlsys_jw_double(&w, goals[i]);
      mlsys_jw_key(&w, "feasible"); mlsys_jw_bool(&w, pts[i].feasible);
      mlsys_jw_key(&w, "throughput_gbps"); mlsys_jw_double(&w, pts[i].tput_gbps);
      mlsys_jw_key(&w, "cost_per_gb"); if (pts[i].flow) mlsys_jw_double(&w, pts[i].cost_per_gb); else mlsys_jw_null(&w);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "writing JSON: %s", mlsys_last_error());
  } else {
    printf("%s -> %s: min-cost plans, at most %d VMs per region\n  %10s %10s\n", g.r[p.src].key, g.r[p.dst].key, p.vm_limit, "Gbps", "$/GB");
    for (i = 0; i < K; i++)
      if (pts[i].flow) printf("  %10.3f %10.5f%s\n", pts[i].tput_gbps, pts[i].cost_per_gb, pts[i].feasible ? "" : " (short)");
  }
  for (i = 0; i < K; i++) mlsys_xfer_plan_free(&pts[i]);
  free(goals); free(pts);
  mlsys_xfer_grid_free(&g);
  return rc;
}

int cmd_transfer_cp(int argc, char **argv);        /* cli/transfer_cp.c */
int cmd_transfer_gateway(int argc, char **argv);   /* cli/transfer_cp.c */

int cmd_transfer(int argc, char **argv) {
  xfer_args a;
  const char *verb;
  int rc;
  cli_opt opts[] = {
      {"--src", 1, &a.src},           {"--dst", 1, &a.dst},                 {"--goal-gbps", 1, &a.goal},
      {"--max-cost-per-gb", 1, &a.ceiling}, {"--max-vms", 1, &a.max_vms},   {"--json", 0, &a.json},
      {"--help", 0, &a.help},         {"--volume-gb", 1, &a.volume},        {"--rounding", 1, &a.rounding},
      {"--max-relays", 1, &a.max_relays}, {"--direct-only", 0, &a.direct_only}, {"--grid", 1, &a.grid},
      {"--prices", 1, &a.prices},     {"--units", 1, &a.units},             {"--vm-cost-per-hr", 1, &a.vm_cost},
      {"--time-limit", 1, &a.time_limit}, {"--plan-out", 1, &a.plan_out},   {"--emulate-scale", 1, &a.emulate},
      {"--samples", 1, &a.samples},   {"--base-port", 1, &a.base_port},     {"--host", 1, &a.host},
  };
  memset(&a, 0, sizeof a);
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
    fputs(xfer_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  verb = argv[2];
  if (!strcmp(verb, "cp")) return cmd_transfer_cp(argc, argv);
  if (!strcmp(verb, "gateway")) return cmd_transfer_gateway(argc, argv);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), "transfer")) != CLI_OK) return rc;
  if (a.help) { fputs(xfer_help, stdout); return CLI_OK; }
  if (!strcmp(verb, "plan")) return xfer_plan(&a);
  if (!strcmp(verb, "pareto")) return xfer_pareto(&a);
  fprintf(stderr, "mlsys transfer: unknown verb '%s'\n\n%s", verb, xfer_help);
  return CLI_USAGE;
}
