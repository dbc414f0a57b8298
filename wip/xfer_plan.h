/* wip/xfer_plan.h — the Skyplane planner part of mlsys_transfer.h (merged into it at the end).
   Declarations first, implementation under MLSYS_XFER_PLAN_IMPLEMENTATION. */
#ifndef MLSYS_XFER_PLAN_H
#define MLSYS_XFER_PLAN_H
#include "mlsys_common.h"
#include "wip/xfer_api.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   Regions, the throughput grid and the price grid (thesis §4.3; spec §2.2–2.4)
   ================================================================================================================ */
enum { MLSYS_XFER_AWS = 0, MLSYS_XFER_GCP = 1, MLSYS_XFER_AZURE = 2, MLSYS_XFER_OTHER = 3 };

typedef struct {
  char key[64];              /* "aws:us-east-1", "gcp:us-east4-a", "azure:eastus" */
  int provider;              /* MLSYS_XFER_AWS / GCP / AZURE / OTHER */
  char continent[24];        /* "north-america", "europe", "asia", "oceania", "south-america", "middle-east", "africa" */
  double egress_gbps;        /* LIMIT^egress per VM: AWS 5, GCP 7, Azure 16 (thesis §4.3.2) */
  double ingress_gbps;       /* LIMIT^ingress per VM: AWS 10, GCP 16, Azure 16 */
  double vm_cost_per_hr;     /* COST^VM in $/h (default 0.54, the authors' spot m5.8xlarge price) */
  int vm_limit;              /* LIMIT^VM: VMs allowed in this region */
} mlsys_xfer_region;

typedef struct {
  int n;                     /* regions */
  mlsys_xfer_region *r;
  double *tput;              /* [n*n] Gbps between one VM in u and one in v at conn_per_vm connections; 0 = no link */
  double *price;             /* [n*n] $/GB egress u → v; diagonal 0 */
  int conn_per_vm;           /* LIMIT^conn (64) */
} mlsys_xfer_grid;

typedef struct {
  const char *src_tier, *dst_tier;  /* rows kept: NULL → "PREMIUM" both (the authors' solver) */
  int units_skyplane;        /* 1 → Gbps = bits/s ÷ 2^30 as the authors' code and the thesis's figures; 0 → SI 1e9 */
  double vm_cost_per_hr;     /* 0 → 0.54 */
  int vm_limit;              /* 0 → 8 (thesis §4.7.2: at most 8 VMs per region) */
  int conn_per_vm;           /* 0 → 64 */
} mlsys_xfer_grid_opts;

/* Loads the authors' throughput CSV (header names located by name: src_region, dst_region, src_tier, dst_tier,
   throughput_sent, success; other columns ignored). Duplicate (src, dst) rows are averaged; rows with success !=
   True are skipped. aws_prices_csv (columns src,dst,cost with dst "internet") may be NULL: then AWS sources price
   with the 2022 defaults of mlsys_xfer_price_aws_default. GCP and Azure prices follow the 2022 rules (spec §2.4). */
MLSYS_DEF mlsys_status mlsys_xfer_grid_load(const char *throughput_csv, const char *aws_prices_csv,
                                            const mlsys_xfer_grid_opts *o, mlsys_xfer_grid *g);
/* An empty grid of named regions (for hand-made grids and tests): tput 0, prices from the rules. */
MLSYS_DEF mlsys_status mlsys_xfer_grid_make(int n, const char *const *keys, const mlsys_xfer_grid_opts *o,
                                            mlsys_xfer_grid *g);
MLSYS_DEF void mlsys_xfer_grid_free(mlsys_xfer_grid *g);
MLSYS_DEF int mlsys_xfer_grid_find(const mlsys_xfer_grid *g, const char *key);    /* index or -1 */
/* A region key's provider, continent and per-VM caps (MLSYS_ERR_ARG for a malformed key). */
MLSYS_DEF mlsys_status mlsys_xfer_region_init(const char *key, mlsys_xfer_region *r);

/* Egress prices in $/GB, the 2022 public rules of the authors' code (spec §2.4). */
MLSYS_DEF double mlsys_xfer_price_gcp(const char *src_key, const char *dst_key, int premium_tier);
MLSYS_DEF double mlsys_xfer_price_azure(const char *src_key, const char *dst_key);
/* Reads aws_transfer_costs.csv into the grid's AWS rows (missing AWS→AWS pair: the largest of that source's
   AWS→AWS prices, as the authors' code; AWS→other cloud: the source's "internet" row). */
MLSYS_DEF mlsys_status mlsys_xfer_grid_load_aws_prices(mlsys_xfer_grid *g, const char *csv_path);

/* ================================================================================================================
   The planner (thesis §4.5, eq. 4.4; spec §3.2–3.7)
   ================================================================================================================ */
typedef enum {
  MLSYS_XFER_EXACT = 0,       /* integer VMs (branch and bound), the authors' MILP */
  MLSYS_XFER_ROUND_DOWN = 1,  /* the thesis's relaxation: LP, then N ← ⌊N⌋ and the flow re-solved (may miss the goal) */
  MLSYS_XFER_ROUND_UP = 2,    /* LP, then N ← ⌈N⌉ and the cost re-optimised (always meets the goal) */
  MLSYS_XFER_RELAXED = 3      /* the LP itself, fractional VMs (a lower bound) */
} mlsys_xfer_rounding;

typedef struct {
  int src, dst;                   /* grid indices */
  double volume_gb;               /* 0 → 1 (costs are then per GB) */
  double goal_gbps;               /* min-cost mode: the throughput to deliver */
  double max_cost_per_gb;         /* max-throughput mode: the ceiling, $/GB (egress + VMs) */
  mlsys_xfer_rounding rounding;
  int direct_only;                /* 1 → only the edge src→dst ("Skyplane without overlay") */
  int max_relays;                 /* 0 → any path; 1 → paths with at most one relay (RON-like) */
  int keep_conn_vars;             /* 1 → the thesis's form with connection variables M (eq. 4.4b, h, i) */
  int integer_conns;              /* with keep_conn_vars: M integer, as the thesis writes it */
  int vm_limit;                   /* > 0 → overrides every region's vm_limit */
  double vm_cost_multiplier;      /* 0 → 1 */
  double provision_time_s;        /* VM time billed on top of the transfer (default 0) */
  int sweep_samples;              /* max-throughput sweep: goals tried (0 → 100, the thesis's number) */
  double time_limit_s;            /* per solve, 0 → 60 */
  mlsys_milp_backend backend;     /* 0 → lp_solve */
} mlsys_xfer_problem;

typedef struct {
  int feasible;                   /* 1 → the plan meets the goal (min-cost) / the ceiling (max-throughput) */
  int n, src, dst;
  double tput_gbps;               /* delivered throughput Σ_u F[u,dst] */
  double runtime_s;               /* volume·8 / tput */
  double cost_egress, cost_vm, cost_total;   /* $ for the volume */
  double cost_per_gb;             /* cost_total / volume */
  double lp_bound_per_gb;         /* the relaxation's cost per GB at the same goal (min-cost modes), else NaN */
  double *flow;                   /* [n*n] F, Gbps */
  double *conns;                  /* [n*n] M = conn_per_vm · F / tput (continuous) */
  double *vms;                    /* [n] N */
  double solve_seconds;
  int solves;                     /* LP/MILP solves it took */
  mlsys_milp_status milp_status;  /* of the last solve */
  double milp_gap;
} mlsys_xfer_plan;

/* Minimum cost for problem->goal_gbps (eq. 4.4 with the equalities of spec §3.8 #1). An unreachable goal is
   MLSYS_ERR_INFEASIBLE with the largest throughput the VM limits allow named. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* Maximum throughput with cost per GB ≤ problem->max_cost_per_gb: the thesis's sweep of min-cost solves over
   sweep_samples goals, refined by bisection next to the best feasible sample (§4.5.2). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* The same problem with fractional VMs solved exactly as one LP (Charnes–Cooper substitution, spec §3.6); needs
   provision_time_s = 0. An upper bound for the sweep. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput_lp(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* The largest throughput with the VM counts vms[] fixed (or, vms = NULL, up to the VM limits, fractional). */
MLSYS_DEF mlsys_status mlsys_xfer_max_flow(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *vms, double *gbps);
/* Writes the min-cost model at problem->goal_gbps (integer VMs unless rounding is RELAXED) to path (".mps" →
   MPS, else LP format) for an independent solver; its objective is the cost per GB × 1000. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_export(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const char *path);
/* Min-cost plans at k goals (the Pareto frontier, Fig. 4.9c); out[i].feasible = 0 where a goal cannot be met. */
MLSYS_DEF mlsys_status mlsys_xfer_pareto(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *goals, int k,
                                         mlsys_xfer_plan *out);
/* Baselines (spec §4): the direct path with `vms` VMs at each end; RON = the best single relay by the bottleneck
   min(g[s,r], g[r,t]) (or direct when better), `vms` VMs in every region of the path, price ignored. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_direct(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int vms, mlsys_xfer_plan *out);
MLSYS_DEF mlsys_status mlsys_xfer_plan_ron(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int vms, mlsys_xfer_plan *out);
/* Checks every constraint of eq. 4.4 on a plan (conservation, source/sink, caps, connection budgets, VM limits,
   no flow on unmeasured links) within tol (relative); MLSYS_ERR_INFEASIBLE naming the first violated one. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_check(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const mlsys_xfer_plan *pl, double tol);
/* Bottlenecks (thesis §4.7.4, utilisation > threshold, 0 → 0.99): bit set of the kinds below. */
enum { MLSYS_XFER_BN_SRC_VM = 1, MLSYS_XFER_BN_SRC_LINK = 2, MLSYS_XFER_BN_RELAY_VM = 4, MLSYS_XFER_BN_RELAY_LINK = 8,
       MLSYS_XFER_BN_DST_VM = 16, MLSYS_XFER_BN_DST_LINK = 32, MLSYS_XFER_BN_VM_LIMIT = 64 };
MLSYS_DEF int mlsys_xfer_plan_bottlenecks(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const mlsys_xfer_plan *pl,
                                          double threshold);
MLSYS_DEF void mlsys_xfer_plan_free(mlsys_xfer_plan *pl);
/* The plan's flow split into source→destination paths (largest first): regions r[0] = src … r[len-1] = dst. */
typedef struct { int len; int *r; double gbps; } mlsys_xfer_path;
MLSYS_DEF mlsys_status mlsys_xfer_plan_paths(const mlsys_xfer_plan *pl, mlsys_xfer_path **paths, int *np);
MLSYS_DEF void mlsys_xfer_paths_free(mlsys_xfer_path *paths, int np);
MLSYS_DEF void mlsys_xfer_problem_default(mlsys_xfer_problem *p, int src, int dst);

/* Instance-level plan (spec §3.7): ⌈N_v⌉ VMs per region, each region pair's connections (⌈M⌉) packed onto VM
   pairs so that no VM has more than conn_per_vm outgoing or incoming connections. */
typedef struct { int src_region, src_inst, dst_region, dst_inst, conns; } mlsys_xfer_inst_edge;
MLSYS_DEF mlsys_status mlsys_xfer_plan_instances(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl,
                                                 mlsys_xfer_inst_edge **edges, int *nedges);
/* The overlay the data plane runs: one gateway per region of the plan (a region's VMs act as one gateway: its
   connections and rate are the region's sums), edge connections ∝ M with at most max_conns (0 → 64) leaving or
   entering a gateway, edge rate = F · rate_scale Gbps (rate_scale 0 → no emulated rate). Host 127.0.0.1, port 0. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_compile(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                               int max_conns, mlsys_xfer_overlay *ov);
MLSYS_DEF void mlsys_xfer_overlay_free(mlsys_xfer_overlay *ov);
/* Plan files: the region-level plan and its overlay as JSON (format in docs/transfer.md). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_write_json(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl,
                                                  const mlsys_xfer_overlay *ov, FILE *f);
MLSYS_DEF mlsys_status mlsys_xfer_overlay_read_json(const char *text, size_t len, const char *source_name,
                                                    mlsys_xfer_overlay *ov);
/* Roles (one source, one destination), ids, 1..64 connections per edge and per gateway each way, every relay
   with an in- and an out-edge, no cycles; MLSYS_ERR_PARSE naming the problem. */
MLSYS_DEF mlsys_status mlsys_xfer_overlay_validate(const mlsys_xfer_overlay *ov, const char *source_name);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_PLAN_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_XFER_PLAN_IMPLEMENTATION
#ifndef MLSYS_XFER_PLAN_IMPLEMENTATION_DONE
#define MLSYS_XFER_PLAN_IMPLEMENTATION_DONE
#include <string.h>
#include <math.h>
#include <ctype.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- regions and prices (2022 snapshot of the authors' price rules; spec §2.4) ---- */
static const char *const mlsys__xfer_azure_cont[][2] = {
    {"australiaeast", "oceania"}, {"australiacentral", "oceania"}, {"australiasoutheast", "oceania"},
    {"australiacentral2", "oceania"}, {"eastasia", "asia"}, {"japaneast", "asia"}, {"japanwest", "asia"},
    {"koreacentral", "asia"}, {"koreasouth", "asia"}, {"southeastasia", "asia"}, {"southindia", "asia"},
    {"centralindia", "asia"}, {"westindia", "asia"}, {"jioindiacentral", "asia"}, {"jioindiawest", "asia"},
    {"canadacentral", "north-america"}, {"canadaeast", "north-america"}, {"centralus", "north-america"},
    {"eastus", "north-america"}, {"eastus2", "north-america"}, {"northcentralus", "north-america"},
    {"westus", "north-america"}, {"westus2", "north-america"}, {"westus3", "north-america"},
    {"southcentralus", "north-america"}, {"westcentralus", "north-america"}, {"brazilsouth", "south-america"},
    {"brazilsoutheast", "south-america"}, {"francecentral", "europe"}, {"germanywestcentral", "europe"},
    {"northeurope", "europe"}, {"norwayeast", "europe"}, {"swedencentral", "europe"}, {"switzerlandnorth", "europe"},
    {"switzerlandwest", "europe"}, {"westeurope", "europe"}, {"uksouth", "europe"}, {"ukwest", "europe"},
    {"francesouth", "europe"}, {"germanynorth", "europe"}, {"norwaywest", "europe"},
    {"southafricanorth", "africa"}, {"southafricawest", "africa"}, {"uaenorth", "middle-east"},
    {"uaecentral", "middle-east"}};

static const char *mlsys__xfer_name(const char *key) {
  const char *c = strchr(key, ':');
  return c ? c + 1 : key;
}
static int mlsys__xfer_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static const char *mlsys__xfer_azure_continent(const char *name) {
  size_t i;
  for (i = 0; i < sizeof mlsys__xfer_azure_cont / sizeof mlsys__xfer_azure_cont[0]; i++)
    if (!strcmp(mlsys__xfer_azure_cont[i][0], name)) return mlsys__xfer_azure_cont[i][1];
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_xfer_region_init(const char *key, mlsys_xfer_region *r) {
  const char *name, *cont = NULL;
  size_t plen;
  memset(r, 0, sizeof *r);
  if (!key || !strchr(key, ':') || strlen(key) >= sizeof r->key)
    return mlsys_set_error(MLSYS_ERR_ARG, "region '%s': expected provider:region (aws:us-east-1, gcp:us-east4-a, azure:eastus)", key ? key : "(null)");
  name = mlsys__xfer_name(key);
  plen = (size_t)(name - 1 - key);
  if (!*name) return mlsys_set_error(MLSYS_ERR_ARG, "region '%s': empty region name", key);
  snprintf(r->key, sizeof r->key, "%s", key);
  r->vm_cost_per_hr = 0.54;
  r->vm_limit = 8;
  if (plen == 3 && !strncmp(key, "aws", 3)) {
    r->provider = MLSYS_XFER_AWS; r->egress_gbps = 5; r->ingress_gbps = 10;
    if (mlsys__xfer_prefix(name, "us-") || mlsys__xfer_prefix(name, "ca-")) cont = "north-america";
    else if (mlsys__xfer_prefix(name, "eu-")) cont = "europe";
    else if (mlsys__xfer_prefix(name, "ap-southeast-2") || mlsys__xfer_prefix(name, "ap-southeast-4")) cont = "oceania";
    else if (mlsys__xfer_prefix(name, "ap-")) cont = "asia";
    else if (mlsys__xfer_prefix(name, "sa-")) cont = "south-america";
    else if (mlsys__xfer_prefix(name, "me-")) cont = "middle-east";
    else if (mlsys__xfer_prefix(name, "af-")) cont = "africa";
  } else if (plen == 3 && !strncmp(key, "gcp", 3)) {
    r->provider = MLSYS_XFER_GCP; r->egress_gbps = 7; r->ingress_gbps = 16;
    if (mlsys__xfer_prefix(name, "us-") || mlsys__xfer_prefix(name, "northamerica-")) cont = "north-america";
    else if (mlsys__xfer_prefix(name, "europe-")) cont = "europe";
    else if (mlsys__xfer_prefix(name, "asia-")) cont = "asia";
    else if (mlsys__xfer_prefix(name, "australia-")) cont = "oceania";
    else if (mlsys__xfer_prefix(name, "southamerica-")) cont = "south-america";
    else if (mlsys__xfer_prefix(name, "me-")) cont = "middle-east";
    else if (mlsys__xfer_prefix(name, "africa-")) cont = "africa";
  } else if (plen == 5 && !strncmp(key, "azure", 5)) {
    r->provider = MLSYS_XFER_AZURE; r->egress_gbps = 16; r->ingress_gbps = 16;
    cont = mlsys__xfer_azure_continent(name);
  } else {
    r->provider = MLSYS_XFER_OTHER; r->egress_gbps = 10; r->ingress_gbps = 10;
  }
  snprintf(r->continent, sizeof r->continent, "%s", cont ? cont : "unknown");
  return MLSYS_OK;
}

/* "asia-northeast1-a" → continent "asia", region "northeast1", zone "a" (the authors split on '-') */
static void mlsys__xfer_gcp_split(const char *key, char *cont, char *reg, char *zone) {
  const char *n = mlsys__xfer_name(key), *d1 = strchr(n, '-'), *d2 = d1 ? strchr(d1 + 1, '-') : NULL;
  cont[0] = reg[0] = zone[0] = 0;
  if (!d1) { snprintf(cont, 32, "%s", n); return; }
  snprintf(cont, 32, "%.*s", (int)(d1 - n), n);
  if (!d2) { snprintf(reg, 32, "%s", d1 + 1); return; }
  snprintf(reg, 32, "%.*s", (int)(d2 - d1 - 1), d1 + 1);
  snprintf(zone, 32, "%s", d2 + 1);
}
static int mlsys__xfer_is_australia(const char *key) {
  const char *n = mlsys__xfer_name(key);
  if (mlsys__xfer_prefix(key, "aws:")) return !strcmp(n, "ap-southeast-2");
  if (mlsys__xfer_prefix(key, "azure:")) return mlsys__xfer_prefix(n, "australia");
  if (mlsys__xfer_prefix(key, "gcp:")) return mlsys__xfer_prefix(n, "australia");
  return 0;
}

MLSYS_DEF double mlsys_xfer_price_gcp(const char *src_key, const char *dst_key, int premium_tier) {
  char sc[32], sr[32], sz[32], dc[32], dr[32], dz[32];
  mlsys__xfer_gcp_split(src_key, sc, sr, sz);
  if (mlsys__xfer_prefix(dst_key, "gcp:")) {
    mlsys__xfer_gcp_split(dst_key, dc, dr, dz);
    if (!strcmp(sc, dc) && !strcmp(sr, dr) && !strcmp(sz, dz)) return 0.0;
    if (!strcmp(sc, dc) && !strcmp(sr, dr)) return 0.01;
    if (!strcmp(sc, dc)) {
      if (!strcmp(sc, "us") || !strcmp(sc, "northamerica")) return 0.01;
      if (!strcmp(sc, "europe")) return 0.02;
      if (!strcmp(sc, "asia")) return 0.05;
      return 0.08;   /* southamerica, australia and the rest */
    }
    if ((!strcmp(sc, "asia") && !strcmp(sr, "southeast2")) || (!strcmp(dc, "asia") && !strcmp(dr, "southeast2")) ||
        !strcmp(sc, "australia") || !strcmp(dc, "australia"))
      return 0.15;
    return 0.08;
  }
  if (premium_tier) {
    int aus = mlsys__xfer_is_australia(dst_key);
    if (!strcmp(sc, "asia") && (!strcmp(sr, "southeast2") || !strcmp(sr, "northeast1") || !strcmp(sr, "northeast2")))
      return aus ? 0.19 : 0.14;
    if ((!strcmp(sc, "asia") && !strcmp(sr, "southeast1")) || !strcmp(sc, "australia")) return 0.19;
    if (!strcmp(sc, "asia") && !strcmp(sr, "northeast3")) return aus ? 0.19 : 0.147;
    return aus ? 0.19 : 0.12;
  }
  if (!strcmp(sc, "us") || !strcmp(sc, "europe") || !strcmp(sc, "northamerica")) return 0.085;
  if (!strcmp(sc, "southamerica") || !strcmp(sc, "australia")) return 0.12;
  return 0.11;
}

/* the authors' price groups: NA/EU, SA, the rest (asia, oceania, middle east, africa) */
static int mlsys__xfer_az_group(const char *cont) {
  if (!cont) return 2;
  if (!strcmp(cont, "north-america") || !strcmp(cont, "europe")) return 0;
  if (!strcmp(cont, "south-america")) return 1;
  return 2;
}
MLSYS_DEF double mlsys_xfer_price_azure(const char *src_key, const char *dst_key) {
  const char *sn = mlsys__xfer_name(src_key), *dn = mlsys__xfer_name(dst_key);
  const char *scont = mlsys__xfer_azure_continent(sn);
  int gs = mlsys__xfer_az_group(scont);
  if (!mlsys__xfer_prefix(dst_key, "azure:")) return gs == 0 ? 0.0875 : gs == 1 ? 0.181 : 0.12;
  if (!strcmp(sn, dn)) return 0.0;
  if (scont && mlsys__xfer_azure_continent(dn) && !strcmp(scont, mlsys__xfer_azure_continent(dn)))
    return gs == 0 ? 0.02 : gs == 1 ? 0.181 : 0.08;
  return gs == 0 ? 0.05 : gs == 1 ? 0.16 : 0.08;
}

/* AWS without the price table: the common 2022 rates (0.02 to AWS, 0.09 to the internet) */
static double mlsys__xfer_price_aws_default(const char *dst_key) {
  return mlsys__xfer_prefix(dst_key, "aws:") ? 0.02 : 0.09;
}

static double mlsys__xfer_price_rule(const mlsys_xfer_region *s, const mlsys_xfer_region *d) {
  if (!strcmp(s->key, d->key)) return 0.0;
  switch (s->provider) {
    case MLSYS_XFER_AWS: return mlsys__xfer_price_aws_default(d->key);
    case MLSYS_XFER_GCP: return mlsys_xfer_price_gcp(s->key, d->key, 1);
    case MLSYS_XFER_AZURE: return mlsys_xfer_price_azure(s->key, d->key);
    default: return 0.09;
  }
}

/* ---- grids ---- */
static void mlsys__xfer_grid_apply_opts(mlsys_xfer_grid *g, const mlsys_xfer_grid_opts *o) {
  int i;
  g->conn_per_vm = o && o->conn_per_vm > 0 ? o->conn_per_vm : 64;
  for (i = 0; i < g->n; i++) {
    if (o && o->vm_cost_per_hr > 0) g->r[i].vm_cost_per_hr = o->vm_cost_per_hr;
    if (o && o->vm_limit > 0) g->r[i].vm_limit = o->vm_limit;
  }
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_make(int n, const char *const *keys, const mlsys_xfer_grid_opts *o, mlsys_xfer_grid *g) {
  int i, j;
  mlsys_status st;
  memset(g, 0, sizeof *g);
  if (n < 2 || n > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "grid: %d regions (need 2..4096)", n);
  g->n = n;
  g->r = (mlsys_xfer_region *)mlsys_calloc((size_t)n, sizeof *g->r);
  g->tput = (double *)mlsys_calloc((size_t)n * n, sizeof(double));
  g->price = (double *)mlsys_calloc((size_t)n * n, sizeof(double));
  if (!g->r || !g->tput || !g->price) { mlsys_xfer_grid_free(g); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (i = 0; i < n; i++) {
    if ((st = mlsys_xfer_region_init(keys[i], &g->r[i]))) { mlsys_xfer_grid_free(g); return st; }
    for (j = 0; j < i; j++)
      if (!strcmp(g->r[j].key, keys[i])) { mlsys_xfer_grid_free(g); return mlsys_set_error(MLSYS_ERR_ARG, "grid: region '%s' given twice", keys[i]); }
  }
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) g->price[(size_t)i * n + j] = i == j ? 0 : mlsys__xfer_price_rule(&g->r[i], &g->r[j]);
  mlsys__xfer_grid_apply_opts(g, o);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_xfer_grid_free(mlsys_xfer_grid *g) {
  if (!g) return;
  mlsys_free(g->r); mlsys_free(g->tput); mlsys_free(g->price);
  memset(g, 0, sizeof *g);
}

MLSYS_DEF int mlsys_xfer_grid_find(const mlsys_xfer_grid *g, const char *key) {
  int i;
  for (i = 0; i < g->n; i++)
    if (!strcmp(g->r[i].key, key)) return i;
  return -1;
}

/* Splits one CSV line in place (no quoting in these files; a quoted field is refused by the caller's checks). */
static int mlsys__xfer_csv_split(char *line, char **f, int maxf) {
  int n = 0;
  char *p = line;
  while (n < maxf) {
    f[n++] = p;
    while (*p && *p != ',') p++;
    if (!*p) break;
    *p++ = 0;
  }
  return n;
}
static char *mlsys__xfer_next_line(char **pos, int *lineno) {
  char *s = *pos, *e;
  if (!s || !*s) return NULL;
  e = strchr(s, '\n');
  if (e) { *e = 0; *pos = e + 1; } else *pos = s + strlen(s);
  if (e && e > s && e[-1] == '\r') e[-1] = 0;
  (*lineno)++;
  return s;
}

typedef struct { char key[64]; } mlsys__xfer_key;
static int mlsys__xfer_key_cmp(const void *a, const void *b) {
  return strcmp(((const mlsys__xfer_key *)a)->key, ((const mlsys__xfer_key *)b)->key);
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_load(const char *throughput_csv, const char *aws_prices_csv,
                                            const mlsys_xfer_grid_opts *o, mlsys_xfer_grid *g) {
  char *text = NULL, *pos, *line, *f[32];
  size_t len;
  int lineno = 0, nf, c_src = -1, c_dst = -1, c_st = -1, c_dt = -1, c_tp = -1, c_ok = -1, i, nk = 0, capk = 0;
  mlsys__xfer_key *keys = NULL;
  double *sum = NULL;
  int *cnt = NULL;
  const char *stier = o && o->src_tier ? o->src_tier : "PREMIUM", *dtier = o && o->dst_tier ? o->dst_tier : "PREMIUM";
  double div = o && o->units_skyplane ? 1073741824.0 : 1e9;
  mlsys_status st = MLSYS_OK;
  int pass;
  memset(g, 0, sizeof *g);
  if ((st = mlsys_read_file(throughput_csv, &text, &len))) return st;
  /* two passes over the rows: the region keys, then the sums */
  for (pass = 0; pass < 2; pass++) {
    char *copy = (char *)mlsys_alloc(len + 1, 1);
    if (!copy) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
    memcpy(copy, text, len); copy[len] = 0;
    pos = copy; lineno = 0;
    line = mlsys__xfer_next_line(&pos, &lineno);
    if (!line) { mlsys_free(copy); st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: empty file", throughput_csv); goto done; }
    nf = mlsys__xfer_csv_split(line, f, 32);
    for (i = 0; i < nf; i++) {
      if (!strcmp(f[i], "src_region")) c_src = i;
      else if (!strcmp(f[i], "dst_region")) c_dst = i;
      else if (!strcmp(f[i], "src_tier")) c_st = i;
      else if (!strcmp(f[i], "dst_tier")) c_dt = i;
      else if (!strcmp(f[i], "throughput_sent")) c_tp = i;
      else if (!strcmp(f[i], "success")) c_ok = i;
    }
    if (c_src < 0 || c_dst < 0 || c_tp < 0) {
      mlsys_free(copy);
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: header lacks %s", throughput_csv, c_src < 0 ? "src_region" : c_dst < 0 ? "dst_region" : "throughput_sent");
      goto done;
    }
    while ((line = mlsys__xfer_next_line(&pos, &lineno))) {
      int a, b, need = c_src > c_dst ? c_src : c_dst;
      double v;
      char *end;
      if (!*line) continue;
      nf = mlsys__xfer_csv_split(line, f, 32);
      if (c_tp > need) need = c_tp;
      if (c_st > need) need = c_st;
      if (c_dt > need) need = c_dt;
      if (c_ok > need) need = c_ok;
      if (nf <= need) { mlsys_free(copy); st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %d fields, the header needs %d", throughput_csv, lineno, nf, need + 1); goto done; }
      if (c_ok >= 0 && strcmp(f[c_ok], "True")) continue;
      if (c_st >= 0 && strcmp(f[c_st], stier)) continue;
      if (c_dt >= 0 && strcmp(f[c_dt], dtier)) continue;
      if (!strchr(f[c_src], ':') || !strchr(f[c_dst], ':') || strlen(f[c_src]) >= 64 || strlen(f[c_dst]) >= 64) {
        mlsys_free(copy);
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: region keys '%s', '%s' are not provider:region", throughput_csv, lineno, f[c_src], f[c_dst]);
        goto done;
      }
      if (pass == 0) {
        int k, found[2] = {0, 0};
        for (k = 0; k < nk; k++) {
          if (!strcmp(keys[k].key, f[c_src])) found[0] = 1;
          if (!strcmp(keys[k].key, f[c_dst])) found[1] = 1;
        }
        for (k = 0; k < 2; k++) {
          const char *key = k ? f[c_dst] : f[c_src];
          if (found[k] || (k == 1 && !strcmp(f[c_src], f[c_dst]))) continue;
          if (nk == capk) {
            mlsys__xfer_key *nkp = (mlsys__xfer_key *)mlsys_realloc_array(keys, (size_t)(capk ? capk * 2 : 64), sizeof *keys);
            if (!nkp) { mlsys_free(copy); st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
            keys = nkp; capk = capk ? capk * 2 : 64;
          }
          snprintf(keys[nk++].key, 64, "%s", key);
        }
        continue;
      }
      v = strtod(f[c_tp], &end);
      if (end == f[c_tp] || *end || !(v >= 0) || !isfinite(v)) {
        mlsys_free(copy);
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: throughput_sent '%s' is not a non-negative number", throughput_csv, lineno, f[c_tp]);
        goto done;
      }
      a = mlsys_xfer_grid_find(g, f[c_src]); b = mlsys_xfer_grid_find(g, f[c_dst]);
      if (a < 0 || b < 0 || a == b) continue;
      sum[(size_t)a * g->n + b] += v; cnt[(size_t)a * g->n + b]++;
    }
    mlsys_free(copy);
    if (pass == 0) {
      const char **kp;
      if (nk < 2) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: fewer than two regions in rows with tiers %s/%s", throughput_csv, stier, dtier); goto done; }
      qsort(keys, (size_t)nk, sizeof *keys, mlsys__xfer_key_cmp);
      kp = (const char **)mlsys_alloc((size_t)nk, sizeof *kp);
      if (!kp) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
      for (i = 0; i < nk; i++) kp[i] = keys[i].key;
      st = mlsys_xfer_grid_make(nk, kp, o, g);
      mlsys_free(kp);
      if (st) { mlsys_prefix_error("%s", throughput_csv); goto done; }
      sum = (double *)mlsys_calloc((size_t)nk * nk, sizeof(double));
      cnt = (int *)mlsys_calloc((size_t)nk * nk, sizeof(int));
      if (!sum || !cnt) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
    }
  }
  for (i = 0; i < g->n * g->n; i++) g->tput[i] = cnt[i] ? sum[i] / cnt[i] / div : 0;
  if (aws_prices_csv) st = mlsys_xfer_grid_load_aws_prices(g, aws_prices_csv);
done:
  mlsys_free(text); mlsys_free(keys); mlsys_free(sum); mlsys_free(cnt);
  if (st) mlsys_xfer_grid_free(g);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_load_aws_prices(mlsys_xfer_grid *g, const char *csv_path) {
  char *text = NULL, *pos, *line, *f[8];
  size_t len;
  int lineno = 0, i, j, n = g->n;
  double *to_aws = NULL, *inet = NULL, *maxaws = NULL;
  mlsys_status st;
  if ((st = mlsys_read_file(csv_path, &text, &len))) return st;
  to_aws = (double *)mlsys_alloc((size_t)n * n, sizeof(double));
  inet = (double *)mlsys_alloc((size_t)n, sizeof(double));
  maxaws = (double *)mlsys_alloc((size_t)n, sizeof(double));
  if (!to_aws || !inet || !maxaws) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < n * n; i++) to_aws[i] = -1;
  for (i = 0; i < n; i++) inet[i] = maxaws[i] = -1;
  pos = text;
  line = mlsys__xfer_next_line(&pos, &lineno);
  if (!line || mlsys__xfer_csv_split(line, f, 8) < 3 || strcmp(f[0], "src") || strcmp(f[1], "dst") || strcmp(f[2], "cost")) {
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: expected the header src,dst,cost", csv_path);
    goto done;
  }
  while ((line = mlsys__xfer_next_line(&pos, &lineno))) {
    char key[80], *end;
    double v;
    int a, b;
    if (!*line) continue;
    if (mlsys__xfer_csv_split(line, f, 8) != 3) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: expected 3 fields", csv_path, lineno); goto done; }
    v = strtod(f[2], &end);
    if (end == f[2] || *end || !(v >= 0) || !isfinite(v)) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: cost '%s' is not a non-negative number", csv_path, lineno, f[2]); goto done; }
    snprintf(key, sizeof key, "aws:%s", f[0]);
    a = mlsys_xfer_grid_find(g, key);
    if (a < 0) continue;
    if (!strcmp(f[1], "internet")) { inet[a] = v; continue; }
    if (v > maxaws[a]) maxaws[a] = v;
    snprintf(key, sizeof key, "aws:%s", f[1]);
    b = mlsys_xfer_grid_find(g, key);
    if (b >= 0) to_aws[(size_t)a * n + b] = v;
  }
  for (i = 0; i < n; i++) {
    if (g->r[i].provider != MLSYS_XFER_AWS) continue;
    for (j = 0; j < n; j++) {
      double v;
      if (i == j) continue;
      if (g->r[j].provider == MLSYS_XFER_AWS) v = to_aws[(size_t)i * n + j] >= 0 ? to_aws[(size_t)i * n + j] : maxaws[i];
      else v = inet[i];
      if (v >= 0) g->price[(size_t)i * n + j] = v;
    }
  }
done:
  mlsys_free(text); mlsys_free(to_aws); mlsys_free(inet); mlsys_free(maxaws);
  return st;
}

/* ---- the LP / MILP (eq. 4.4) ---- */
#define MLSYS__XFER_OBJ_SCALE 1000.0   /* objective in $ per 1000 GB: keeps coefficients near 1 for lp_solve */
#define MLSYS__XFER_MIN_GBPS 0.05      /* links slower than this are dropped (spec §8 risk 2: tiny 1/g) */

enum { MLSYS__XFER_MINCOST = 0, MLSYS__XFER_MAXFLOW = 1, MLSYS__XFER_CC = 2 };

typedef struct {
  mlsys_milp *m;
  int n, ne;
  int *eu, *ev;        /* edges */
  int *fcol, *mcol;    /* per edge */
  int *ncol;           /* per region, -1 when the region touches no edge */
  int tcol, sigcol;
} mlsys__xfer_model;

static void mlsys__xfer_model_free(mlsys__xfer_model *md) {
  mlsys_milp_free(md->m);
  mlsys_free(md->eu); mlsys_free(md->ev); mlsys_free(md->fcol); mlsys_free(md->mcol); mlsys_free(md->ncol);
  memset(md, 0, sizeof *md);
}

static int mlsys__xfer_vm_limit(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int v) {
  return p->vm_limit > 0 ? p->vm_limit : g->r[v].vm_limit;
}
static double mlsys__xfer_vm_mult(const mlsys_xfer_problem *p) { return p->vm_cost_multiplier > 0 ? p->vm_cost_multiplier : 1.0; }
static double mlsys__xfer_volume(const mlsys_xfer_problem *p) { return p->volume_gb > 0 ? p->volume_gb : 1.0; }

/* Edges the plan may use: measured (≥ MIN_GBPS), none into the source or out of the destination, regions with a
   VM limit above 0, and the path restriction of the problem. */
static int mlsys__xfer_edge_ok(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int u, int v) {
  int s = p->src, t = p->dst;
  if (u == v || v == s || u == t) return 0;
  if (!(g->tput[(size_t)u * g->n + v] >= MLSYS__XFER_MIN_GBPS)) return 0;
  if (mlsys__xfer_vm_limit(g, p, u) <= 0 || mlsys__xfer_vm_limit(g, p, v) <= 0) return 0;
  if (p->direct_only) return u == s && v == t;
  if (p->max_relays == 1) return u == s || v == t;
  return 1;
}

/* Per-GB objective coefficients at goal T: egress p/T per Gbps of F; per VM c/3600·mult·(8/T + prov/volume). */
static double mlsys__xfer_vm_coef(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int v, double T) {
  return g->r[v].vm_cost_per_hr / 3600.0 * mlsys__xfer_vm_mult(p) * (8.0 / T + p->provision_time_s / mlsys__xfer_volume(p));
}

/* fixed_n: NULL → N free in [0, limit] (integer when `integer`), else N fixed to fixed_n[v] (upper = lower). */
static mlsys_status mlsys__xfer_build(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int mode, double T,
                                      const double *fixed_n, int integer, double budget, mlsys__xfer_model *md) {
  int n = g->n, u, v, e, s = p->src, t = p->dst, c = g->conn_per_vm;
  int *cols = NULL;
  double *vals = NULL;
  mlsys_status st = MLSYS_OK;
  int keepm = p->keep_conn_vars && mode != MLSYS__XFER_CC;
  memset(md, 0, sizeof *md);
  md->n = n; md->tcol = md->sigcol = -1;
  if ((st = mlsys_milp_create(&md->m))) return st;
  md->ncol = (int *)mlsys_alloc((size_t)n, sizeof(int));
  md->eu = (int *)mlsys_alloc((size_t)n * n + 1, sizeof(int));
  md->ev = (int *)mlsys_alloc((size_t)n * n + 1, sizeof(int));
  md->fcol = (int *)mlsys_alloc((size_t)n * n + 1, sizeof(int));
  md->mcol = (int *)mlsys_alloc((size_t)n * n + 1, sizeof(int));
  cols = (int *)mlsys_alloc((size_t)2 * n * n + 8, sizeof(int));
  vals = (double *)mlsys_alloc((size_t)2 * n * n + 8, sizeof(double));
  if (!md->ncol || !md->eu || !md->ev || !md->fcol || !md->mcol || !cols || !vals) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (v = 0; v < n; v++) md->ncol[v] = -1;
  for (u = 0; u < n; u++)
    for (v = 0; v < n; v++)
      if (mlsys__xfer_edge_ok(g, p, u, v)) { md->eu[md->ne] = u; md->ev[md->ne] = v; md->ne++; }
  if (md->ne == 0) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no measured link leaves %s or reaches %s within the allowed paths", g->r[s].key, g->r[t].key); goto done; }
  /* columns */
  if (mode == MLSYS__XFER_MAXFLOW) md->tcol = mlsys_milp_add_var(md->m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 1.0, "T");
  if (mode == MLSYS__XFER_CC) md->sigcol = mlsys_milp_add_var(md->m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 1.0, "sigma");
  if (mode == MLSYS__XFER_MAXFLOW) mlsys_milp_set_maximize(md->m, 1);
  for (e = 0; e < md->ne; e++) {
    double obj = mode == MLSYS__XFER_MINCOST ? MLSYS__XFER_OBJ_SCALE * g->price[(size_t)md->eu[e] * n + md->ev[e]] / T : 0;
    md->fcol[e] = mlsys_milp_add_var(md->m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, obj, NULL);
    md->mcol[e] = keepm ? mlsys_milp_add_var(md->m, p->integer_conns ? MLSYS_VAR_INTEGER : MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 0, NULL) : -1;
    if (md->fcol[e] < 0 || (keepm && md->mcol[e] < 0)) { st = MLSYS_ERR_NOMEM; goto done; }
  }
  for (e = 0; e < md->ne; e++)
    for (u = 0; u < 2; u++) {
      int r = u ? md->ev[e] : md->eu[e];
      double lim = mlsys__xfer_vm_limit(g, p, r), lo = 0, hi = lim, obj = 0;
      if (md->ncol[r] >= 0) continue;
      if (fixed_n) lo = hi = fixed_n[r] < lim ? fixed_n[r] : lim;
      if (mode == MLSYS__XFER_MINCOST) obj = MLSYS__XFER_OBJ_SCALE * mlsys__xfer_vm_coef(g, p, r, T);
      if (mode == MLSYS__XFER_CC) { hi = MLSYS_INF; obj = 0; }
      md->ncol[r] = mlsys_milp_add_var(md->m, integer && !fixed_n && mode == MLSYS__XFER_MINCOST ? MLSYS_VAR_INTEGER : MLSYS_VAR_CONTINUOUS, lo, hi, obj, NULL);
      if (md->ncol[r] < 0) { st = MLSYS_ERR_NOMEM; goto done; }
    }
  /* source out-flow and sink in-flow (eqs. 4.4c/d as equalities, spec §3.8 #1) */
  {
    int k = 0, k2 = 0;
    double rhs = mode == MLSYS__XFER_MINCOST ? T : mode == MLSYS__XFER_CC ? 1.0 : 0.0;
    for (e = 0; e < md->ne; e++) if (md->eu[e] == s) { cols[k] = md->fcol[e]; vals[k++] = 1; }
    if (mode == MLSYS__XFER_MAXFLOW) { cols[k] = md->tcol; vals[k++] = -1; }
    if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_EQ, rhs, "src_out"))) goto done;
    for (e = 0; e < md->ne; e++) if (md->ev[e] == t) { cols[k2] = md->fcol[e]; vals[k2++] = 1; }
    if (mode == MLSYS__XFER_MAXFLOW) { cols[k2] = md->tcol; vals[k2++] = -1; }
    if ((st = mlsys_milp_add_row(md->m, k2, cols, vals, MLSYS_ROW_EQ, rhs, "dst_in"))) goto done;
  }
  for (v = 0; v < n; v++) {
    int k, nv = md->ncol[v];
    char name[48];
    if (nv < 0) continue;
    /* conservation (4.4e) */
    if (v != s && v != t) {
      k = 0;
      for (e = 0; e < md->ne; e++) {
        if (md->ev[e] == v) { cols[k] = md->fcol[e]; vals[k++] = 1; }
        if (md->eu[e] == v) { cols[k] = md->fcol[e]; vals[k++] = -1; }
      }
      snprintf(name, sizeof name, "cons_%d", v);
      if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_EQ, 0, name))) goto done;
    }
    /* per-VM egress (4.4g) and ingress (4.4f) caps */
    k = 0;
    for (e = 0; e < md->ne; e++) if (md->eu[e] == v) { cols[k] = md->fcol[e]; vals[k++] = 1; }
    if (k) {
      cols[k] = nv; vals[k++] = -g->r[v].egress_gbps;
      snprintf(name, sizeof name, "egress_%d", v);
      if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_LE, 0, name))) goto done;
    }
    k = 0;
    for (e = 0; e < md->ne; e++) if (md->ev[e] == v) { cols[k] = md->fcol[e]; vals[k++] = 1; }
    if (k) {
      cols[k] = nv; vals[k++] = -g->r[v].ingress_gbps;
      snprintf(name, sizeof name, "ingress_%d", v);
      if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_LE, 0, name))) goto done;
    }
    /* connection budgets: with M (4.4h/i, the corrected indices of spec §3.8 #2) or with M eliminated (§3.4:
       Σ F/g ≤ N, c cancels) */
    for (u = 0; u < 2; u++) {
      k = 0;
      for (e = 0; e < md->ne; e++)
        if ((u ? md->ev[e] : md->eu[e]) == v) {
          if (keepm) { cols[k] = md->mcol[e]; vals[k++] = 1; }
          else { cols[k] = md->fcol[e]; vals[k++] = 1.0 / g->tput[(size_t)md->eu[e] * n + md->ev[e]]; }
        }
      if (!k) continue;
      cols[k] = nv; vals[k++] = keepm ? -(double)c : -1.0;
      snprintf(name, sizeof name, "%s_%d", u ? "conn_in" : "conn_out", v);
      if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_LE, 0, name))) goto done;
    }
    if (mode == MLSYS__XFER_CC) {   /* n_v ≤ LIMIT^VM · σ */
      cols[0] = nv; vals[0] = 1; cols[1] = md->sigcol; vals[1] = -(double)mlsys__xfer_vm_limit(g, p, v);
      snprintf(name, sizeof name, "vmlim_%d", v);
      if ((st = mlsys_milp_add_row(md->m, 2, cols, vals, MLSYS_ROW_LE, 0, name))) goto done;
    }
  }
  if (keepm)   /* F ≤ g·M/c (4.4b) */
    for (e = 0; e < md->ne; e++) {
      cols[0] = md->fcol[e]; vals[0] = 1;
      cols[1] = md->mcol[e]; vals[1] = -g->tput[(size_t)md->eu[e] * n + md->ev[e]] / c;
      if ((st = mlsys_milp_add_row(md->m, 2, cols, vals, MLSYS_ROW_LE, 0, NULL))) goto done;
    }
  if (mode == MLSYS__XFER_CC) {      /* per-GB cost of the unit flow ≤ budget */
    int k = 0;
    for (e = 0; e < md->ne; e++) { cols[k] = md->fcol[e]; vals[k++] = g->price[(size_t)md->eu[e] * n + md->ev[e]]; }
    for (v = 0; v < n; v++)
      if (md->ncol[v] >= 0) { cols[k] = md->ncol[v]; vals[k++] = 8.0 * g->r[v].vm_cost_per_hr * mlsys__xfer_vm_mult(p) / 3600.0; }
    if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_LE, budget, "budget"))) goto done;
  }
done:
  mlsys_free(cols); mlsys_free(vals);
  if (st) {
    if (st == MLSYS_ERR_NOMEM && !strstr(mlsys_last_error(), "memory")) mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    mlsys__xfer_model_free(md);
  }
  return st;
}

static void mlsys__xfer_opts(const mlsys_xfer_problem *p, int relax, mlsys_milp_opts *mo) {
  memset(mo, 0, sizeof *mo);
  mo->backend = p->backend;
  mo->time_limit = p->time_limit_s > 0 ? p->time_limit_s : 60;
  mo->relax = relax;
  mo->mip_gap_rel = 1e-9;
  /* ceiling branch first: a rounded-up VM count is always feasible (every row with N is an upper bound on flow),
     so the search finds good incumbents at once — 10x faster on the real grid than floor-first */
  mo->branch_ceiling = 1;
}

static mlsys_status mlsys__xfer_plan_alloc(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *pl) {
  memset(pl, 0, sizeof *pl);
  pl->n = g->n; pl->src = p->src; pl->dst = p->dst; pl->lp_bound_per_gb = NAN;
  pl->flow = (double *)mlsys_calloc((size_t)g->n * g->n, sizeof(double));
  pl->conns = (double *)mlsys_calloc((size_t)g->n * g->n, sizeof(double));
  pl->vms = (double *)mlsys_calloc((size_t)g->n, sizeof(double));
  if (!pl->flow || !pl->conns || !pl->vms) { mlsys_xfer_plan_free(pl); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_xfer_plan_free(mlsys_xfer_plan *pl) {
  if (!pl) return;
  mlsys_free(pl->flow); mlsys_free(pl->conns); mlsys_free(pl->vms);
  memset(pl, 0, sizeof *pl);
}

/* throughput, connections and costs from F and N (spec §3.2) */
static void mlsys__xfer_plan_finish(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *pl) {
  int n = g->n, u, v;
  double T = 0, eg = 0, vm = 0, V = mlsys__xfer_volume(p);
  for (u = 0; u < n; u++) T += pl->flow[(size_t)u * n + p->dst];
  for (u = 0; u < n; u++)
    for (v = 0; v < n; v++) {
      size_t k = (size_t)u * n + v;
      eg += pl->flow[k] * g->price[k];
      pl->conns[k] = pl->flow[k] > 0 && g->tput[k] > 0 ? g->conn_per_vm * pl->flow[k] / g->tput[k] : 0;
    }
  pl->tput_gbps = T;
  if (T > 0) {
    for (v = 0; v < n; v++) vm += pl->vms[v] * mlsys__xfer_vm_coef(g, p, v, T);
    pl->runtime_s = V * 8.0 / T;
    pl->cost_egress = V * eg / T;
    pl->cost_vm = V * vm;
  } else {
    pl->runtime_s = INFINITY; pl->cost_egress = pl->cost_vm = 0;
  }
  pl->cost_total = pl->cost_egress + pl->cost_vm;
  pl->cost_per_gb = pl->cost_total / V;
}

/* Solves a built model and copies F, N into the plan. */
static mlsys_status mlsys__xfer_solve(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys__xfer_model *md, int relax,
                                      mlsys_xfer_plan *pl, double *obj) {
  mlsys_milp_opts mo;
  mlsys_milp_result res;
  mlsys_status st;
  int e, v, n = g->n;
  mlsys__xfer_opts(p, relax, &mo);
  st = mlsys_milp_solve(md->m, &mo, &res);
  pl->solves++;
  pl->solve_seconds += res.seconds;
  pl->milp_status = res.status;
  pl->milp_gap = res.gap;
  if (st) { mlsys_milp_result_free(&res); return st; }
  memset(pl->flow, 0, (size_t)n * n * sizeof(double));
  memset(pl->vms, 0, (size_t)n * sizeof(double));
  for (e = 0; e < md->ne; e++) {
    double f = res.x[md->fcol[e]];
    pl->flow[(size_t)md->eu[e] * n + md->ev[e]] = f > 1e-9 ? f : 0;
  }
  for (v = 0; v < n; v++)
    if (md->ncol[v] >= 0) pl->vms[v] = res.x[md->ncol[v]] > 1e-9 ? res.x[md->ncol[v]] : 0;
  if (obj) *obj = res.objective;
  mlsys_milp_result_free(&res);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_xfer_problem_default(mlsys_xfer_problem *p, int src, int dst) {
  memset(p, 0, sizeof *p);
  p->src = src; p->dst = dst;
}

static mlsys_status mlsys__xfer_check_problem(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p) {
  if (!g || !p || !g->n) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: no grid or problem");
  if (p->src < 0 || p->src >= g->n || p->dst < 0 || p->dst >= g->n)
    return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: src %d / dst %d out of range (grid of %d regions)", p->src, p->dst, g->n);
  if (p->src == p->dst) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: source and destination are both %s (an intra-region copy needs no plan)", g->r[p->src].key);
  if (p->volume_gb < 0 || !isfinite(p->volume_gb)) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: volume %g GB", p->volume_gb);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_max_flow(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *vms, double *gbps) {
  mlsys__xfer_model md;
  mlsys_xfer_plan pl;
  mlsys_status st;
  double obj = 0;
  *gbps = 0;
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if ((st = mlsys__xfer_plan_alloc(g, p, &pl))) return st;
  if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_MAXFLOW, 0, vms, 0, 0, &md))) { mlsys_xfer_plan_free(&pl); return st; }
  st = mlsys__xfer_solve(g, p, &md, 1, &pl, &obj);
  if (!st) *gbps = obj > 0 ? obj : 0;
  mlsys__xfer_model_free(&md);
  mlsys_xfer_plan_free(&pl);
  return st;
}

/* Min cost at goal T with N free (mode = integer or relaxed) or fixed. */
static mlsys_status mlsys__xfer_min_cost_at(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double T, const double *fixed_n,
                                            int integer, mlsys_xfer_plan *pl, double *obj_per_gb) {
  mlsys__xfer_model md;
  mlsys_status st;
  double obj = 0;
  if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_MINCOST, T, fixed_n, integer, 0, &md))) return st;
  st = mlsys__xfer_solve(g, p, &md, !integer, pl, &obj);
  mlsys__xfer_model_free(&md);
  if (!st && obj_per_gb) *obj_per_gb = obj / MLSYS__XFER_OBJ_SCALE + p->provision_time_s * 0;
  return st;
}

/* known_max: the problem's max flow when the caller has it (sweeps), < 0 → computed here */
static mlsys_status mlsys__xfer_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double known_max, mlsys_xfer_plan *out);
MLSYS_DEF mlsys_status mlsys_xfer_plan_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out) {
  return mlsys__xfer_min_cost(g, p, -1, out);
}
static mlsys_status mlsys__xfer_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double known_max, mlsys_xfer_plan *out) {
  mlsys_status st;
  double T = p ? p->goal_gbps : 0, tmax = known_max, lpobj = NAN;
  int n;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  n = g->n;
  if (!(T > 0) || !isfinite(T)) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: throughput goal %g Gbps (must be > 0)", T);
  if (tmax < 0 && (st = mlsys_xfer_max_flow(g, p, NULL, &tmax))) return st;
  if (T > tmax * (1 + 1e-9) + 1e-12)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "goal %.4g Gbps from %s to %s is above the %.4g Gbps that %s allow", T, g->r[p->src].key,
                           g->r[p->dst].key, tmax, p->direct_only ? "the direct link and the VM limits" : "the grid and the VM limits");
  if ((st = mlsys__xfer_plan_alloc(g, p, out))) return st;
  if (p->rounding == MLSYS_XFER_EXACT) {
    mlsys_xfer_plan lp;
    double ex;
    /* the relaxation's value for the report (and the gap the thesis's ≤ 1 % claim is about) */
    if (!mlsys__xfer_plan_alloc(g, p, &lp)) {
      if (!mlsys__xfer_min_cost_at(g, p, T, NULL, 0, &lp, &lpobj)) out->lp_bound_per_gb = lpobj;
      out->solves += lp.solves; out->solve_seconds += lp.solve_seconds;
      mlsys_xfer_plan_free(&lp);
    }
    if ((st = mlsys__xfer_min_cost_at(g, p, T, NULL, 1, out, &ex))) goto fail;
    mlsys__xfer_plan_finish(g, p, out);
    out->feasible = 1;
    return MLSYS_OK;
  }
  if ((st = mlsys__xfer_min_cost_at(g, p, T, NULL, 0, out, &lpobj))) goto fail;
  out->lp_bound_per_gb = lpobj;
  if (p->rounding == MLSYS_XFER_RELAXED) {
    mlsys__xfer_plan_finish(g, p, out);
    out->feasible = 1;
    return MLSYS_OK;
  }
  {
    double *nv = (double *)mlsys_alloc((size_t)n, sizeof(double)), T2 = T;
    int v, used = 0;
    if (!nv) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto fail; }
    for (v = 0; v < n; v++) {
      double x = out->vms[v], lim = mlsys__xfer_vm_limit(g, p, v);
      nv[v] = p->rounding == MLSYS_XFER_ROUND_UP ? ceil(x - 1e-6) : floor(x + 1e-6);
      if (nv[v] > lim) nv[v] = lim;
      if (nv[v] < 0) nv[v] = 0;
      used += nv[v] > 0;
    }
    if (p->rounding == MLSYS_XFER_ROUND_DOWN) {
      /* ⌊N⌋ may not carry the goal: the most it carries, then the cheapest flow at that rate */
      double tm = 0;
      if (used && (st = mlsys_xfer_max_flow(g, p, nv, &tm))) { mlsys_free(nv); goto fail; }
      out->solves++;
      if (tm < T * (1 - 1e-9)) T2 = tm;
    }
    if (T2 > 1e-9) {
      st = mlsys__xfer_min_cost_at(g, p, T2, nv, 0, out, NULL);
      if (st) { mlsys_free(nv); goto fail; }
      for (v = 0; v < n; v++) out->vms[v] = nv[v];  /* regions the flow no longer uses still hold their VMs */
      mlsys__xfer_plan_finish(g, p, out);
    } else {
      memset(out->flow, 0, (size_t)n * n * sizeof(double));
      for (v = 0; v < n; v++) out->vms[v] = nv[v];
      mlsys__xfer_plan_finish(g, p, out);
    }
    out->feasible = T2 >= T * (1 - 1e-9);
    mlsys_free(nv);
  }
  return MLSYS_OK;
fail:
  {
    int ns = out->solves;
    double ss = out->solve_seconds;
    mlsys_xfer_plan_free(out);
    out->solves = ns; out->solve_seconds = ss;
  }
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_export(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const char *path) {
  mlsys__xfer_model md;
  mlsys_status st;
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if (!(p->goal_gbps > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "export: goal %g Gbps", p->goal_gbps);
  if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_MINCOST, p->goal_gbps, NULL, p->rounding != MLSYS_XFER_RELAXED, 0, &md))) return st;
  st = mlsys_milp_write(md.m, path);
  mlsys__xfer_model_free(&md);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput_lp(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out) {
  mlsys__xfer_model md;
  mlsys_milp_opts mo;
  mlsys_milp_result res;
  mlsys_status st;
  int e, v, n;
  double sigma;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  n = g->n;
  if (!(p->max_cost_per_gb > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: cost ceiling %g $/GB (must be > 0)", p->max_cost_per_gb);
  if (p->provision_time_s > 0) return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "the exact max-throughput LP needs provision_time_s = 0 (the VM term is then linear in the unit flow)");
  /* Charnes–Cooper (spec §3.6): F = T·f, n = N/T, σ = 1/T; min σ */
  if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_CC, 0, NULL, 0, p->max_cost_per_gb, &md))) return st;
  if ((st = mlsys__xfer_plan_alloc(g, p, out))) { mlsys__xfer_model_free(&md); return st; }
  mlsys__xfer_opts(p, 1, &mo);
  st = mlsys_milp_solve(md.m, &mo, &res);
  out->solves = 1; out->solve_seconds = res.seconds; out->milp_status = res.status;
  if (st) {
    mlsys__xfer_model_free(&md); mlsys_milp_result_free(&res); mlsys_xfer_plan_free(out);
    if (st == MLSYS_ERR_INFEASIBLE)
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no plan from %s to %s costs at most $%.4g/GB (egress alone on the cheapest path is dearer)", g->r[p->src].key, g->r[p->dst].key, p->max_cost_per_gb);
    return st;
  }
  sigma = res.x[md.sigcol];
  if (!(sigma > 1e-12)) {
    mlsys__xfer_model_free(&md); mlsys_milp_result_free(&res); mlsys_xfer_plan_free(out);
    return mlsys_set_error(MLSYS_ERR_SOLVER, "max-throughput LP: σ = %g (unbounded throughput?)", sigma);
  }
  for (e = 0; e < md.ne; e++) {
    double f = res.x[md.fcol[e]] / sigma;
    out->flow[(size_t)md.eu[e] * n + md.ev[e]] = f > 1e-9 ? f : 0;
  }
  for (v = 0; v < n; v++)
    if (md.ncol[v] >= 0) out->vms[v] = res.x[md.ncol[v]] / sigma > 1e-9 ? res.x[md.ncol[v]] / sigma : 0;
  mlsys__xfer_model_free(&md);
  mlsys_milp_result_free(&res);
  mlsys__xfer_plan_finish(g, p, out);
  out->feasible = 1;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out) {
  mlsys_status st;
  mlsys_xfer_problem q;
  mlsys_xfer_plan cur;
  double hi = 0, best_T = 0, next_T = 0, C, cheapest = INFINITY, t0 = mlsys_now(), maxflow;
  int K, i, have = 0, solves = 0;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  C = p->max_cost_per_gb;
  if (!(C > 0) || !isfinite(C)) return mlsys_set_error(MLSYS_ERR_ARG, "transfer planner: cost ceiling %g $/GB (must be > 0)", C);
  K = p->sweep_samples > 0 ? p->sweep_samples : 100;
  if ((st = mlsys_xfer_max_flow(g, p, NULL, &hi))) return st;
  solves++;
  if (!(hi > 0)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no path from %s to %s", g->r[p->src].key, g->r[p->dst].key);
  maxflow = hi;
  if (p->provision_time_s <= 0) {
    /* the exact relaxed optimum bounds every integer plan: infeasible there means infeasible, and the sweep
       only needs to sample up to it (finer samples where the answer lies) */
    mlsys_xfer_plan lp;
    st = mlsys_xfer_plan_max_tput_lp(g, p, &lp);
    solves++;
    if (st) return st;
    if (lp.tput_gbps < hi) hi = lp.tput_gbps * (1 + 1e-9);
    mlsys_xfer_plan_free(&lp);
  }
  q = *p;
  /* the sweep, from the top: the first goal that fits the ceiling is the sweep's answer */
  for (i = K; i >= 1; i--) {
    double T = hi * i / K;
    q.goal_gbps = T;
    st = mlsys__xfer_min_cost(g, &q, maxflow, &cur);
    solves += cur.solves;
    if (st == MLSYS_ERR_INFEASIBLE) continue;
    if (st) return st;
    if (cur.cost_per_gb < cheapest) cheapest = cur.cost_per_gb;
    if (cur.feasible && cur.cost_per_gb <= C * (1 + 1e-9)) {
      *out = cur; best_T = T; next_T = i < K ? hi * (i + 1) / K : T; have = 1;
      break;
    }
    mlsys_xfer_plan_free(&cur);
  }
  if (!have)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no plan from %s to %s costs at most $%.4g/GB: the cheapest of %d sampled goals costs $%.4g/GB",
                           g->r[p->src].key, g->r[p->dst].key, C, K, cheapest);
  /* refine between the best feasible sample and the next (infeasible) one; every accepted point is feasible,
     so a non-monotone cost curve (spec §3.6) only costs optimality, never validity */
  for (i = 0; i < 24 && next_T > best_T * (1 + 1e-6); i++) {
    double T = 0.5 * (best_T + next_T);
    q.goal_gbps = T;
    st = mlsys__xfer_min_cost(g, &q, maxflow, &cur);
    solves += cur.solves;
    if (st == MLSYS_OK && cur.feasible && cur.cost_per_gb <= C * (1 + 1e-9)) {
      mlsys_xfer_plan_free(out);
      *out = cur; best_T = T;
    } else {
      if (st == MLSYS_OK) mlsys_xfer_plan_free(&cur);
      else if (st != MLSYS_ERR_INFEASIBLE) { mlsys_xfer_plan_free(out); return st; }
      next_T = T;
    }
  }
  out->solves = solves;
  out->solve_seconds = mlsys_now() - t0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_pareto(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *goals, int k,
                                         mlsys_xfer_plan *out) {
  int i;
  mlsys_xfer_problem q;
  mlsys_status st;
  double hi;
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if ((st = mlsys_xfer_max_flow(g, p, NULL, &hi))) return st;
  q = *p;
  for (i = 0; i < k; i++) {
    q.goal_gbps = goals[i];
    st = mlsys__xfer_min_cost(g, &q, hi, &out[i]);
    if (st == MLSYS_ERR_INFEASIBLE) { memset(&out[i], 0, sizeof out[i]); out[i].tput_gbps = goals[i]; continue; }
    if (st) {
      while (i-- > 0) mlsys_xfer_plan_free(&out[i]);
      return st;
    }
  }
  return MLSYS_OK;
}

/* ---- baselines (spec §4) ---- */
static mlsys_status mlsys__xfer_path_plan(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const int *path, int len, int vms,
                                          mlsys_xfer_plan *out) {
  int n = g->n, i;
  double T = INFINITY;
  mlsys_status st;
  if ((st = mlsys__xfer_plan_alloc(g, p, out))) return st;
  for (i = 0; i + 1 < len; i++) {
    int u = path[i], v = path[i + 1];
    double b = g->tput[(size_t)u * n + v];
    if (g->r[u].egress_gbps < b) b = g->r[u].egress_gbps;
    if (g->r[v].ingress_gbps < b) b = g->r[v].ingress_gbps;
    if (b < T) T = b;
  }
  T *= vms;
  for (i = 0; i < len; i++) out->vms[path[i]] = vms;
  for (i = 0; i + 1 < len; i++) out->flow[(size_t)path[i] * n + path[i + 1]] = T;
  mlsys__xfer_plan_finish(g, p, out);
  out->feasible = T > 0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_direct(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int vms, mlsys_xfer_plan *out) {
  int path[2];
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if (vms < 1) return mlsys_set_error(MLSYS_ERR_ARG, "direct baseline: %d VMs", vms);
  if (!(g->tput[(size_t)p->src * g->n + p->dst] > 0))
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "direct baseline: the grid has no measurement %s -> %s", g->r[p->src].key, g->r[p->dst].key);
  path[0] = p->src; path[1] = p->dst;
  return mlsys__xfer_path_plan(g, p, path, 2, vms, out);
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_ron(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int vms, mlsys_xfer_plan *out) {
  int n, r, s, t, path[3], len = 2;
  double best;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if (vms < 1) return mlsys_set_error(MLSYS_ERR_ARG, "RON baseline: %d VMs", vms);
  n = g->n; s = p->src; t = p->dst;
  best = g->tput[(size_t)s * n + t];
  path[0] = s; path[1] = t;
  for (r = 0; r < n; r++) {
    double b;
    if (r == s || r == t) continue;
    b = fmin(g->tput[(size_t)s * n + r], g->tput[(size_t)r * n + t]);
    if (b > best) { best = b; path[1] = r; path[2] = t; len = 3; }
  }
  if (!(best > 0)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "RON baseline: no direct or one-relay path %s -> %s", g->r[s].key, g->r[t].key);
  return mlsys__xfer_path_plan(g, p, path, len, vms, out);
}

/* ---- checks, bottlenecks, paths ---- */
MLSYS_DEF mlsys_status mlsys_xfer_plan_check(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const mlsys_xfer_plan *pl, double tol) {
  int n = g->n, u, v, s = p->src, t = p->dst;
  double T = pl->tput_gbps, sc = fmax(1.0, T);
  if (tol <= 0) tol = 1e-6;
#define MLSYS__XFER_CK(cond, ...) do { if (!(cond)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, __VA_ARGS__); } while (0)
  for (u = 0; u < n; u++) {
    double in = 0, out = 0, cin = 0, cout = 0, lim = mlsys__xfer_vm_limit(g, p, u), N = pl->vms[u];
    MLSYS__XFER_CK(N >= -tol && N <= lim + tol, "%s: %g VMs outside [0, %g]", g->r[u].key, N, lim);
    if (p->rounding == MLSYS_XFER_EXACT || p->rounding == MLSYS_XFER_ROUND_UP || p->rounding == MLSYS_XFER_ROUND_DOWN)
      MLSYS__XFER_CK(fabs(N - floor(N + 0.5)) <= 1e-6, "%s: %g VMs is not an integer", g->r[u].key, N);
    for (v = 0; v < n; v++) {
      double f = pl->flow[(size_t)u * n + v], fi = pl->flow[(size_t)v * n + u];
      MLSYS__XFER_CK(f >= -tol * sc, "flow %s -> %s is negative (%g)", g->r[u].key, g->r[v].key, f);
      if (f > tol * sc) MLSYS__XFER_CK(g->tput[(size_t)u * n + v] > 0 && u != v, "flow %g Gbps on %s -> %s, which has no measured link", f, g->r[u].key, g->r[v].key);
      out += f; in += fi;
      if (f > 0) cout += f / g->tput[(size_t)u * n + v];
      if (fi > 0) cin += fi / g->tput[(size_t)v * n + u];
    }
    if (u == s) { MLSYS__XFER_CK(in <= tol * sc, "flow into the source %s (%g)", g->r[u].key, in); MLSYS__XFER_CK(fabs(out - T) <= tol * sc, "source out-flow %g != throughput %g", out, T); }
    else if (u == t) MLSYS__XFER_CK(fabs(in - T) <= tol * sc, "destination in-flow %g != throughput %g", in, T);
    else MLSYS__XFER_CK(fabs(in - out) <= tol * sc, "%s: in-flow %g != out-flow %g", g->r[u].key, in, out);
    MLSYS__XFER_CK(out <= g->r[u].egress_gbps * N + tol * sc, "%s: egress %g Gbps above %g VMs x %g", g->r[u].key, out, N, g->r[u].egress_gbps);
    MLSYS__XFER_CK(in <= g->r[u].ingress_gbps * N + tol * sc, "%s: ingress %g Gbps above %g VMs x %g", g->r[u].key, in, N, g->r[u].ingress_gbps);
    MLSYS__XFER_CK(cout <= N + tol * sc, "%s: outgoing connections use %g VMs' worth, %g VMs", g->r[u].key, cout, N);
    MLSYS__XFER_CK(cin <= N + tol * sc, "%s: incoming connections use %g VMs' worth, %g VMs", g->r[u].key, cin, N);
  }
  if (p->goal_gbps > 0 && pl->feasible && p->max_cost_per_gb <= 0)
    MLSYS__XFER_CK(T >= p->goal_gbps * (1 - 1e-6), "throughput %g below the goal %g", T, p->goal_gbps);
  if (p->max_cost_per_gb > 0 && pl->feasible)
    MLSYS__XFER_CK(pl->cost_per_gb <= p->max_cost_per_gb * (1 + 1e-6), "cost $%g/GB above the ceiling $%g/GB", pl->cost_per_gb, p->max_cost_per_gb);
#undef MLSYS__XFER_CK
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_xfer_plan_bottlenecks(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const mlsys_xfer_plan *pl, double th) {
  int n = g->n, u, v, bits = 0;
  if (th <= 0) th = 0.99;
  for (u = 0; u < n; u++) {
    double in = 0, out = 0, cin = 0, cout = 0, N = pl->vms[u];
    if (N <= 0) continue;
    for (v = 0; v < n; v++) {
      double f = pl->flow[(size_t)u * n + v], fi = pl->flow[(size_t)v * n + u];
      out += f; in += fi;
      if (f > 0) cout += f / g->tput[(size_t)u * n + v];
      if (fi > 0) cin += fi / g->tput[(size_t)v * n + u];
    }
    if (out + in <= 0) continue;
    if (u == p->src) {
      if (out >= th * g->r[u].egress_gbps * N) bits |= MLSYS_XFER_BN_SRC_VM;
      if (cout >= th * N) bits |= MLSYS_XFER_BN_SRC_LINK;
    } else if (u == p->dst) {
      if (in >= th * g->r[u].ingress_gbps * N) bits |= MLSYS_XFER_BN_DST_VM;
      if (cin >= th * N) bits |= MLSYS_XFER_BN_DST_LINK;
    } else {
      if (out >= th * g->r[u].egress_gbps * N || in >= th * g->r[u].ingress_gbps * N) bits |= MLSYS_XFER_BN_RELAY_VM;
      if (cout >= th * N || cin >= th * N) bits |= MLSYS_XFER_BN_RELAY_LINK;
    }
    if (N >= mlsys__xfer_vm_limit(g, p, u) - 1e-9) bits |= MLSYS_XFER_BN_VM_LIMIT;
  }
  return bits;
}

static int mlsys__xfer_path_cmp(const void *a, const void *b) {
  double x = ((const mlsys_xfer_path *)a)->gbps, y = ((const mlsys_xfer_path *)b)->gbps;
  return x > y ? -1 : x < y;
}

MLSYS_DEF void mlsys_xfer_paths_free(mlsys_xfer_path *paths, int np) {
  int i;
  if (!paths) return;
  for (i = 0; i < np; i++) mlsys_free(paths[i].r);
  mlsys_free(paths);
}

/* Flow decomposition: repeatedly follow the largest remaining out-flow from the source to the destination
   (min-cost plans carry no cycles; a cycle found anyway is cancelled and skipped). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_paths(const mlsys_xfer_plan *pl, mlsys_xfer_path **paths, int *np) {
  int n = pl->n, cap = 8, cnt = 0, *seen = NULL, *walk = NULL, iter;
  double *f = NULL, eps = 1e-9 * fmax(1.0, pl->tput_gbps);
  mlsys_xfer_path *ps = NULL;
  *paths = NULL; *np = 0;
  f = (double *)mlsys_alloc((size_t)n * n, sizeof(double));
  seen = (int *)mlsys_alloc((size_t)n, sizeof(int));
  walk = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  ps = (mlsys_xfer_path *)mlsys_calloc((size_t)cap, sizeof *ps);
  if (!f || !seen || !walk || !ps) goto nomem;
  memcpy(f, pl->flow, (size_t)n * n * sizeof(double));
  for (iter = 0; iter < n * n + 16; iter++) {
    int len = 0, u = pl->src, i, cyc = -1;
    double b = INFINITY;
    for (i = 0; i < n; i++) seen[i] = -1;
    walk[len++] = u; seen[u] = 0;
    while (u != pl->dst) {
      int v, bv = -1;
      for (v = 0; v < n; v++) if (f[(size_t)u * n + v] > eps && (bv < 0 || f[(size_t)u * n + v] > f[(size_t)u * n + bv])) bv = v;
      if (bv < 0) break;
      if (seen[bv] >= 0) { cyc = seen[bv]; walk[len++] = bv; break; }
      seen[bv] = len; walk[len++] = bv; u = bv;
    }
    if (cyc >= 0) {   /* cancel the cycle walk[cyc..len-1] */
      for (i = cyc; i + 1 < len; i++) b = fmin(b, f[(size_t)walk[i] * n + walk[i + 1]]);
      for (i = cyc; i + 1 < len; i++) f[(size_t)walk[i] * n + walk[i + 1]] -= b;
      continue;
    }
    if (u != pl->dst || len < 2) break;
    for (i = 0; i + 1 < len; i++) b = fmin(b, f[(size_t)walk[i] * n + walk[i + 1]]);
    for (i = 0; i + 1 < len; i++) f[(size_t)walk[i] * n + walk[i + 1]] -= b;
    if (cnt == cap) {
      mlsys_xfer_path *np2 = (mlsys_xfer_path *)mlsys_realloc_array(ps, (size_t)cap * 2, sizeof *ps);
      if (!np2) goto nomem;
      ps = np2; cap *= 2;
    }
    ps[cnt].len = len; ps[cnt].gbps = b;
    ps[cnt].r = (int *)mlsys_alloc((size_t)len, sizeof(int));
    if (!ps[cnt].r) goto nomem;
    memcpy(ps[cnt].r, walk, (size_t)len * sizeof(int));
    cnt++;
  }
  qsort(ps, (size_t)cnt, sizeof *ps, mlsys__xfer_path_cmp);
  mlsys_free(f); mlsys_free(seen); mlsys_free(walk);
  *paths = ps; *np = cnt;
  return MLSYS_OK;
nomem:
  mlsys_free(f); mlsys_free(seen); mlsys_free(walk);
  mlsys_xfer_paths_free(ps, cnt);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
}

/* ---- instance-level plan and overlay ---- */
MLSYS_DEF mlsys_status mlsys_xfer_plan_instances(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl,
                                                 mlsys_xfer_inst_edge **edges, int *nedges) {
  int n = g->n, u, v, i, j, cap = 16, ne = 0, c = g->conn_per_vm, total_inst = 0;
  int *ninst = NULL, *base = NULL, *outc = NULL, *inc = NULL;
  mlsys_xfer_inst_edge *e = NULL;
  *edges = NULL; *nedges = 0;
  ninst = (int *)mlsys_calloc((size_t)n, sizeof(int));
  base = (int *)mlsys_calloc((size_t)n, sizeof(int));
  e = (mlsys_xfer_inst_edge *)mlsys_alloc((size_t)cap, sizeof *e);
  if (!ninst || !base || !e) goto nomem;
  for (v = 0; v < n; v++) {
    ninst[v] = pl->vms[v] > 1e-6 ? (int)ceil(pl->vms[v] - 1e-6) : 0;
    base[v] = total_inst; total_inst += ninst[v];
  }
  outc = (int *)mlsys_calloc((size_t)total_inst + 1, sizeof(int));
  inc = (int *)mlsys_calloc((size_t)total_inst + 1, sizeof(int));
  if (!outc || !inc) goto nomem;
  for (u = 0; u < n; u++)
    for (v = 0; v < n; v++) {
      double m = pl->conns[(size_t)u * n + v];
      int todo = m > 1e-9 ? (int)ceil(m - 1e-6) : 0;
      if (todo <= 0 || !ninst[u] || !ninst[v]) continue;
      /* greedy: the VM of u with the most free out-connections to the VM of v with the most free in-connections */
      while (todo > 0) {
        int bi = 0, bj = 0, k;
        for (i = 1; i < ninst[u]; i++) if (outc[base[u] + i] < outc[base[u] + bi]) bi = i;
        for (j = 1; j < ninst[v]; j++) if (inc[base[v] + j] < inc[base[v] + bj]) bj = j;
        k = c - outc[base[u] + bi];
        if (c - inc[base[v] + bj] < k) k = c - inc[base[v] + bj];
        if (k <= 0) break;   /* rounding up overflowed the budget: the last connections are dropped */
        if (k > todo) k = todo;
        /* split evenly when several VMs are free, so each VM pair carries a share */
        if (ninst[u] > 1 || ninst[v] > 1) {
          int share = (int)ceil((double)((int)ceil(m - 1e-6)) / (ninst[u] > ninst[v] ? ninst[u] : ninst[v]));
          if (share >= 1 && k > share) k = share;
        }
        if (ne == cap) {
          mlsys_xfer_inst_edge *ne2 = (mlsys_xfer_inst_edge *)mlsys_realloc_array(e, (size_t)cap * 2, sizeof *e);
          if (!ne2) goto nomem;
          e = ne2; cap *= 2;
        }
        e[ne].src_region = u; e[ne].src_inst = bi; e[ne].dst_region = v; e[ne].dst_inst = bj; e[ne].conns = k;
        ne++;
        outc[base[u] + bi] += k; inc[base[v] + bj] += k; todo -= k;
      }
    }
  mlsys_free(ninst); mlsys_free(base); mlsys_free(outc); mlsys_free(inc);
  *edges = e; *nedges = ne;
  return MLSYS_OK;
nomem:
  mlsys_free(ninst); mlsys_free(base); mlsys_free(outc); mlsys_free(inc); mlsys_free(e);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
}

MLSYS_DEF void mlsys_xfer_overlay_free(mlsys_xfer_overlay *ov) {
  if (!ov) return;
  mlsys_free(ov->gw); mlsys_free(ov->edge);
  memset(ov, 0, sizeof *ov);
}

MLSYS_DEF mlsys_status mlsys_xfer_plan_compile(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                               int max_conns, mlsys_xfer_overlay *ov) {
  int n = g->n, u, v, *id = NULL, k, e;
  double *load = NULL, eps = 1e-9 * fmax(1.0, pl->tput_gbps);
  memset(ov, 0, sizeof *ov);
  if (max_conns <= 0) max_conns = 64;
  if (!(pl->tput_gbps > 0)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "plan carries no flow");
  id = (int *)mlsys_alloc((size_t)n, sizeof(int));
  load = (double *)mlsys_calloc((size_t)n * 2, sizeof(double));
  ov->gw = (mlsys_xfer_gw *)mlsys_calloc((size_t)n, sizeof *ov->gw);
  ov->edge = (mlsys_xfer_edge *)mlsys_calloc((size_t)n * n, sizeof *ov->edge);
  if (!id || !load || !ov->gw || !ov->edge) goto nomem;
  /* gateways: source first, destination last, relays in grid order between */
  for (v = 0; v < n; v++) id[v] = -1;
  for (k = 0; k < 3; k++)
    for (v = 0; v < n; v++) {
      int used = 0, role = v == pl->src ? MLSYS_XFER_SRC : v == pl->dst ? MLSYS_XFER_DST : MLSYS_XFER_RELAY;
      if ((k == 0) != (role == MLSYS_XFER_SRC) || (k == 2) != (role == MLSYS_XFER_DST)) continue;
      for (u = 0; u < n; u++) used |= pl->flow[(size_t)u * n + v] > eps || pl->flow[(size_t)v * n + u] > eps;
      if (!used) continue;
      id[v] = ov->ngw;
      ov->gw[ov->ngw].role = role;
      snprintf(ov->gw[ov->ngw].region, sizeof ov->gw[0].region, "%s", g->r[v].key);
      snprintf(ov->gw[ov->ngw].host, sizeof ov->gw[0].host, "127.0.0.1");
      ov->ngw++;
    }
  /* connections ∝ M, scaled so that no gateway exceeds max_conns out or in */
  for (u = 0; u < n; u++)
    for (v = 0; v < n; v++)
      if (pl->flow[(size_t)u * n + v] > eps) { load[2 * u] += pl->conns[(size_t)u * n + v]; load[2 * v + 1] += pl->conns[(size_t)u * n + v]; }
  {
    double mx = 0, scale;
    for (v = 0; v < 2 * n; v++) if (load[v] > mx) mx = load[v];
    scale = mx > max_conns ? max_conns / mx : 1.0;
    for (u = 0; u < n; u++)
      for (v = 0; v < n; v++) {
        double f = pl->flow[(size_t)u * n + v];
        mlsys_xfer_edge *ed;
        int c;
        if (!(f > eps)) continue;
        c = (int)floor(pl->conns[(size_t)u * n + v] * scale);
        if (c < 1) c = 1;
        ed = &ov->edge[ov->nedge++];
        ed->from = id[u]; ed->to = id[v]; ed->nconn = c; ed->plan_gbps = f; ed->rate_gbps = f * rate_scale;
      }
  }
  /* flooring to ≥ 1 can still push a gateway over the limit with many thin edges: trim the largest */
  for (k = 0; k < ov->ngw; k++) {
    int dir;
    for (dir = 0; dir < 2; dir++) {
      int tot = 0;
      for (e = 0; e < ov->nedge; e++) if ((dir ? ov->edge[e].to : ov->edge[e].from) == k) tot += ov->edge[e].nconn;
      while (tot > max_conns) {
        int be = -1;
        for (e = 0; e < ov->nedge; e++)
          if ((dir ? ov->edge[e].to : ov->edge[e].from) == k && ov->edge[e].nconn > 1 && (be < 0 || ov->edge[e].nconn > ov->edge[be].nconn)) be = e;
        if (be < 0) break;
        ov->edge[be].nconn--; tot--;
      }
    }
  }
  mlsys_free(id); mlsys_free(load);
  return MLSYS_OK;
nomem:
  mlsys_free(id); mlsys_free(load);
  mlsys_xfer_overlay_free(ov);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
}

/* ---- plan files ---- */
static const char *mlsys__xfer_role_name(int r) { return r == MLSYS_XFER_SRC ? "src" : r == MLSYS_XFER_DST ? "dst" : "relay"; }

MLSYS_DEF mlsys_status mlsys_xfer_plan_write_json(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl,
                                                  const mlsys_xfer_overlay *ov, FILE *f) {
  mlsys_json_writer w;
  int n = g->n, u, v, i;
  mlsys_jw_init(&w, f, 1);
  mlsys_jw_object(&w);
  mlsys_jw_key(&w, "format"); mlsys_jw_str(&w, "mlsys-transfer-plan");
  mlsys_jw_key(&w, "version"); mlsys_jw_i64(&w, 1);
  mlsys_jw_key(&w, "src"); mlsys_jw_str(&w, g->r[pl->src].key);
  mlsys_jw_key(&w, "dst"); mlsys_jw_str(&w, g->r[pl->dst].key);
  mlsys_jw_key(&w, "throughput_gbps"); mlsys_jw_double(&w, pl->tput_gbps);
  mlsys_jw_key(&w, "cost_per_gb"); mlsys_jw_double(&w, pl->cost_per_gb);
  mlsys_jw_key(&w, "vms"); mlsys_jw_object(&w);
  for (v = 0; v < n; v++) if (pl->vms[v] > 1e-9) { mlsys_jw_key(&w, g->r[v].key); mlsys_jw_double(&w, pl->vms[v]); }
  mlsys_jw_end(&w);
  mlsys_jw_key(&w, "flows"); mlsys_jw_array(&w);
  for (u = 0; u < n; u++)
    for (v = 0; v < n; v++)
      if (pl->flow[(size_t)u * n + v] > 1e-9) {
        mlsys_jw_object(&w);
        mlsys_jw_key(&w, "src"); mlsys_jw_str(&w, g->r[u].key);
        mlsys_jw_key(&w, "dst"); mlsys_jw_str(&w, g->r[v].key);
        mlsys_jw_key(&w, "gbps"); mlsys_jw_double(&w, pl->flow[(size_t)u * n + v]);
        mlsys_jw_key(&w, "connections"); mlsys_jw_double(&w, pl->conns[(size_t)u * n + v]);
        mlsys_jw_end(&w);
      }
  mlsys_jw_end(&w);
  if (ov) {
    mlsys_jw_key(&w, "gateways"); mlsys_jw_array(&w);
    for (i = 0; i < ov->ngw; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "id"); mlsys_jw_i64(&w, i);
      mlsys_jw_key(&w, "role"); mlsys_jw_str(&w, mlsys__xfer_role_name(ov->gw[i].role));
      mlsys_jw_key(&w, "region"); mlsys_jw_str(&w, ov->gw[i].region);
      mlsys_jw_key(&w, "host"); mlsys_jw_str(&w, ov->gw[i].host);
      mlsys_jw_key(&w, "port"); mlsys_jw_i64(&w, ov->gw[i].port);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "edges"); mlsys_jw_array(&w);
    for (i = 0; i < ov->nedge; i++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "from"); mlsys_jw_i64(&w, ov->edge[i].from);
      mlsys_jw_key(&w, "to"); mlsys_jw_i64(&w, ov->edge[i].to);
      mlsys_jw_key(&w, "connections"); mlsys_jw_i64(&w, ov->edge[i].nconn);
      mlsys_jw_key(&w, "rate_gbps"); mlsys_jw_double(&w, ov->edge[i].rate_gbps);
      mlsys_jw_key(&w, "plan_gbps"); mlsys_jw_double(&w, ov->edge[i].plan_gbps);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
  }
  mlsys_jw_end(&w);
  return mlsys_jw_finish(&w);
}

/* Validates an overlay: roles, ids, connection counts, reachability, no cycles. */
MLSYS_DEF mlsys_status mlsys_xfer_overlay_validate(const mlsys_xfer_overlay *ov, const char *src) {
  int i, nsrc = 0, ndst = 0, s = -1, t = -1, *indeg = NULL, *q = NULL, qh = 0, qt = 0, *outc = NULL, *inc = NULL;
  mlsys_status st = MLSYS_OK;
  if (!src) src = "overlay";
  if (ov->ngw < 2) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %d gateways (need a source and a destination)", src, ov->ngw);
  for (i = 0; i < ov->ngw; i++) {
    if (ov->gw[i].role == MLSYS_XFER_SRC) { nsrc++; s = i; }
    else if (ov->gw[i].role == MLSYS_XFER_DST) { ndst++; t = i; }
    else if (ov->gw[i].role != MLSYS_XFER_RELAY) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d: unknown role %d", src, i, ov->gw[i].role);
    if (ov->gw[i].port < 0 || ov->gw[i].port > 65535) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d: port %d", src, i, ov->gw[i].port);
    if (!ov->gw[i].host[0]) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d: empty host", src, i);
  }
  if (nsrc != 1 || ndst != 1) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %d source and %d destination gateways (need exactly one of each)", src, nsrc, ndst);
  indeg = (int *)mlsys_calloc((size_t)ov->ngw, sizeof(int));
  outc = (int *)mlsys_calloc((size_t)ov->ngw, sizeof(int));
  inc = (int *)mlsys_calloc((size_t)ov->ngw, sizeof(int));
  q = (int *)mlsys_alloc((size_t)ov->ngw, sizeof(int));
  if (!indeg || !q || !outc || !inc) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < ov->nedge; i++) {
    const mlsys_xfer_edge *e = &ov->edge[i];
    if (e->from < 0 || e->from >= ov->ngw || e->to < 0 || e->to >= ov->ngw) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: gateway ids %d -> %d outside 0..%d", src, i, e->from, e->to, ov->ngw - 1); goto done; }
    if (e->from == e->to) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: a gateway sends to itself (%d)", src, i, e->from); goto done; }
    if (e->to == s) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: sends into the source gateway", src, i); goto done; }
    if (e->from == t) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: sends out of the destination gateway", src, i); goto done; }
    if (e->nconn < 1 || e->nconn > 64) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: %d connections (1..64)", src, i, e->nconn); goto done; }
    if (!(e->rate_gbps >= 0) || !isfinite(e->rate_gbps)) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: edge %d: rate %g Gbps", src, i, e->rate_gbps); goto done; }
    indeg[e->to]++; outc[e->from] += e->nconn; inc[e->to] += e->nconn;
  }
  for (i = 0; i < ov->ngw; i++) {
    if (outc[i] > 64 || inc[i] > 64) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d has %d outgoing / %d incoming connections (at most 64 each)", src, i, outc[i], inc[i]); goto done; }
    if (i != t && outc[i] == 0) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d (%s) has no outgoing edge", src, i, mlsys__xfer_role_name(ov->gw[i].role)); goto done; }
    if (i != s && inc[i] == 0) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: gateway %d (%s) has no incoming edge", src, i, mlsys__xfer_role_name(ov->gw[i].role)); goto done; }
  }
  /* acyclic (Kahn), so no chunk can circulate */
  for (i = 0; i < ov->ngw; i++) if (!indeg[i]) q[qt++] = i;
  while (qh < qt) {
    int u = q[qh++], e;
    for (e = 0; e < ov->nedge; e++) if (ov->edge[e].from == u && --indeg[ov->edge[e].to] == 0) q[qt++] = ov->edge[e].to;
  }
  if (qt < ov->ngw) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: the edges form a cycle (a chunk could circulate forever)", src); goto done; }
done:
  mlsys_free(indeg); mlsys_free(q); mlsys_free(outc); mlsys_free(inc);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_overlay_read_json(const char *text, size_t len, const char *src, mlsys_xfer_overlay *ov) {
  mlsys_json_doc doc;
  const mlsys_json *gws = NULL, *eds = NULL;
  mlsys_status st;
  int i;
  memset(ov, 0, sizeof *ov);
  if (!src) src = "plan";
  if ((st = mlsys_json_parse(text, len, src, &doc))) return st;
  if (doc.root->type != MLSYS_JSON_OBJECT) { st = mlsys_json_error_at(doc.root, "a plan file is a JSON object"); goto done; }
  if ((st = mlsys_json_get_typed(doc.root, "gateways", MLSYS_JSON_ARRAY, 1, &gws))) goto done;
  if ((st = mlsys_json_get_typed(doc.root, "edges", MLSYS_JSON_ARRAY, 1, &eds))) goto done;
  if (gws->count > 4096 || eds->count > 65536) { st = mlsys_json_error_at(gws, "too many gateways (%d) or edges (%d)", gws->count, eds->count); goto done; }
  ov->gw = (mlsys_xfer_gw *)mlsys_calloc((size_t)gws->count + 1, sizeof *ov->gw);
  ov->edge = (mlsys_xfer_edge *)mlsys_calloc((size_t)eds->count + 1, sizeof *ov->edge);
  if (!ov->gw || !ov->edge) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < gws->count; i++) {
    const mlsys_json *o = mlsys_json_at(gws, i);
    const char *role, *region, *host;
    int64_t id, port;
    if (o->type != MLSYS_JSON_OBJECT) { st = mlsys_json_error_at(o, "gateway %d is not an object", i); goto done; }
    if ((st = mlsys_json_get_i64(o, "id", 1, 0, 0, gws->count - 1, &id))) goto done;
    if (id != i) { st = mlsys_json_error_at(o, "gateway ids must be 0..%d in order; entry %d has id %lld", gws->count - 1, i, (long long)id); goto done; }
    if ((st = mlsys_json_get_str(o, "role", 1, NULL, &role))) goto done;
    if ((st = mlsys_json_get_str(o, "region", 0, "", &region))) goto done;
    if ((st = mlsys_json_get_str(o, "host", 0, "127.0.0.1", &host))) goto done;
    if ((st = mlsys_json_get_i64(o, "port", 0, 0, 0, 65535, &port))) goto done;
    if (!strcmp(role, "src")) ov->gw[i].role = MLSYS_XFER_SRC;
    else if (!strcmp(role, "dst")) ov->gw[i].role = MLSYS_XFER_DST;
    else if (!strcmp(role, "relay")) ov->gw[i].role = MLSYS_XFER_RELAY;
    else { st = mlsys_json_error_at(mlsys_json_get(o, "role"), "role '%s' (src, relay or dst)", role); goto done; }
    if (strlen(region) >= sizeof ov->gw[i].region || strlen(host) >= sizeof ov->gw[i].host || !*host) {
      st = mlsys_json_error_at(o, "gateway %d: region or host empty or longer than %d bytes", i, (int)sizeof ov->gw[i].host - 1);
      goto done;
    }
    snprintf(ov->gw[i].region, sizeof ov->gw[i].region, "%s", region);
    snprintf(ov->gw[i].host, sizeof ov->gw[i].host, "%s", host);
    ov->gw[i].port = (int)port;
    ov->ngw++;
  }
  for (i = 0; i < eds->count; i++) {
    const mlsys_json *o = mlsys_json_at(eds, i);
    int64_t a, b, c;
    double r, pg;
    if (o->type != MLSYS_JSON_OBJECT) { st = mlsys_json_error_at(o, "edge %d is not an object", i); goto done; }
    if ((st = mlsys_json_get_i64(o, "from", 1, 0, 0, 1 << 20, &a))) goto done;
    if ((st = mlsys_json_get_i64(o, "to", 1, 0, 0, 1 << 20, &b))) goto done;
    if ((st = mlsys_json_get_i64(o, "connections", 0, 1, 1, 64, &c))) goto done;
    if ((st = mlsys_json_get_double(o, "rate_gbps", 0, 0, 0, 1e6, &r))) goto done;
    if ((st = mlsys_json_get_double(o, "plan_gbps", 0, 0, 0, 1e6, &pg))) goto done;
    ov->edge[i].from = (int)a; ov->edge[i].to = (int)b; ov->edge[i].nconn = (int)c;
    ov->edge[i].rate_gbps = r; ov->edge[i].plan_gbps = pg;
    ov->nedge++;
  }
  st = mlsys_xfer_overlay_validate(ov, src);
done:
  mlsys_json_doc_free(&doc);
  if (st) mlsys_xfer_overlay_free(ov);
  return st;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_PLAN_IMPLEMENTATION_DONE */
#endif /* MLSYS_XFER_PLAN_IMPLEMENTATION */
