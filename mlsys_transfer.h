/* mlsys_transfer.h — bulk data transfer between cloud regions over overlay relays (Skyplane).     MIT licence.

   Implements Skyplane (P. Jain et al., "Skyplane: Optimizing Transfer Cost and Throughput Using Cloud-Aware
   Overlays", NSDI 2023; P. Jain, PhD thesis, UCB/EECS-2023-180, ch. 4); the guide is docs/transfer.md in the
   mlsys repository (the "spec §" numbers below are those of the project's design specification, which that page
   follows):
     1. the PLANNER (thesis §4.5, eq. 4.4; docs/transfer.md "Planner"): from a measured throughput grid
        (the authors' iperf3 CSV: one VM per end, 64 TCP connections) and egress prices (AWS table, GCP and Azure
        2022 rules), choose flows F per region pair, VMs N per region and connections M so that a throughput goal
        is met at minimum egress + VM cost — the MILP with integer VMs, its LP relaxation with the thesis's
        round-down (and round-up), the max-throughput mode under a $/GB ceiling as the thesis's Pareto sweep and as
        one exact LP (Charnes–Cooper), the direct-path and RON (best single relay) baselines, a constraint checker,
        bottleneck analysis, path decomposition, instance-level packing and plan files;
     2. the DATA PLANE (§4.3.3, §4.6): gateways at the source, the relays and the destination; objects split into
        chunks; up to 64 parallel TCP connections per gateway; dynamic chunk-to-connection assignment (or GridFTP's
        round robin); hop-by-hop flow control with bounded queues; CRC-32C on every hop; end-to-end acks so a
        killed connection or relay loses no chunk and the destination writes none twice; a token bucket per edge to
        emulate link rates; Skyplane's wire header (version 4 = v3 + our extension);
     3. OBJECT STORES: local directories, S3 (libcurl, AWS SigV4), Azure Blob (SharedKey) and a synthetic source;
     4. a PROFILER: Skyplane's iperf3-like goodput probe (loopback and private addresses only).
   scripts/xfer-netns.sh builds emulated WANs from grid rows with network namespaces and tc for the experiments.

   USAGE: in exactly one .c file
       #define MLSYS_TRANSFER_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_transfer.h"
   link: -llpsolve55 -lcolamd -ldl -lm -lpthread -lcurl -lcrypto   (+ cbc/clp with -DMLSYS_MILP_CBC)
   Debian: liblpsolve55-dev libcurl4-openssl-dev libssl-dev. -DMLSYS_XFER_NO_HTTP builds without curl/OpenSSL
   (s3:// and azure:// then return MLSYS_ERR_UNSUPPORTED).

   EXAMPLE (examples/transfer_basics.c has the whole program)
       mlsys_xfer_grid g;  mlsys_xfer_problem p;  mlsys_xfer_plan pl;  mlsys_xfer_overlay ov;
       mlsys_xfer_grid_load("throughput.csv", "aws_transfer_costs.csv", NULL, &g);   // the authors' grid
       mlsys_xfer_problem_default(&p, mlsys_xfer_grid_find(&g, "azure:canadacentral"),
                                      mlsys_xfer_grid_find(&g, "gcp:asia-northeast1-a"));
       p.max_cost_per_gb = 0.11;                                // fastest plan costing at most $0.11/GB
       if (mlsys_xfer_plan_max_tput(&g, &p, &pl)) puts(mlsys_last_error());
       else printf("%.2f Gbps at $%.4f/GB\n", pl.tput_gbps, pl.cost_per_gb);
       mlsys_xfer_plan_compile(&g, &pl, 0, 64, &ov);            // one gateway per region of the plan
       mlsys_xfer_copy_opts co = {0};  mlsys_xfer_copy_result r;  // run it: src/dst are mlsys_xfer_store_open()ed
       mlsys_xfer_copy(&ov, src, dst, &co, &r);

   UNITS. Gbps are 1e9 bit/s unless the grid is loaded with units_skyplane = 1 (bits/s ÷ 2^30, as the authors'
   code and the thesis's figures: Fig. 4.1's 6.2 / 12.4 / 13.9 Gbps are those); GB = 1e9 bytes for prices.

   NOT IMPLEMENTED. Provisioning real VMs (the data plane runs its gateways as threads of one process or as
   processes on hosts you start); compression and end-to-end encryption of chunks (the header's is_compressed is
   always 0); GCS (gs://) and virtual-host-style S3 URLs; HTTPS and proxies are untested; a per-VM NIC cap shared
   across links in the namespace emulation; delays on kernels without sch_netem.

   Sections: 1 interfaces shared by the parts (overlay, object-store vtable) · 2 planner · 3 object stores ·
   4 profiler · 5 data plane. Each has its declarations, then its implementation under the implementation macro.
   docs/transfer.md has the formulation, the plan-file format and what differs from the thesis. */
#if defined(MLSYS_IMPLEMENTATION) || defined(MLSYS_TRANSFER_IMPLEMENTATION)
#ifndef MLSYS_XFER_PLAN_IMPLEMENTATION
#define MLSYS_XFER_PLAN_IMPLEMENTATION
#endif
#ifndef MLSYS_XFER_STORE_IMPLEMENTATION
#define MLSYS_XFER_STORE_IMPLEMENTATION
#endif
#ifndef MLSYS_XFER_PROFILE_IMPLEMENTATION
#define MLSYS_XFER_PROFILE_IMPLEMENTATION
#endif
#ifndef MLSYS_XFER_DATAPLANE_IMPLEMENTATION
#define MLSYS_XFER_DATAPLANE_IMPLEMENTATION
#endif
#endif

/* ================================================================================================================
   1. Interfaces shared by the parts
   ================================================================================================================ */
/* The types the sections share: the object-store vtable (section 3 implements it; a caller may write a store of
   its own: its upload state lives in its own struct behind the opaque mlsys_xfer_upload pointer) and the overlay
   the data plane runs (section 2 compiles one from a plan). Prefix: mlsys_xfer_ (public), mlsys__xfer_ (internal).

   Needs mlsys_common.h (mlsys_status, mlsys_set_error, mlsys_last_error, mlsys_alloc/free, JSON, RNG, timer). */
#ifndef MLSYS_XFER_API_H
#define MLSYS_XFER_API_H
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   Object stores (section 3). A store is a flat key space (keys are '/'-separated paths, no leading '/').
   Every function is thread-safe on one store object: the data plane calls get_range / put_part from many
   threads at once.
   ================================================================================================================ */
typedef struct { char *key; uint64_t size; } mlsys_xfer_obj;   /* key relative to the store's root/prefix */

typedef struct mlsys_xfer_store mlsys_xfer_store;
typedef struct mlsys_xfer_upload mlsys_xfer_upload;           /* one object being written (opaque) */

struct mlsys_xfer_store {
  const char *kind;                                            /* "file", "s3", "azure", "synthetic" */
  /* every object under the store's prefix, sorted by key; *objs freed with mlsys_xfer_objs_free */
  mlsys_status (*list)(mlsys_xfer_store *s, mlsys_xfer_obj **objs, int *n);
  /* read [off, off+len) of key into buf; a short object is an error naming key and sizes */
  mlsys_status (*get_range)(mlsys_xfer_store *s, const char *key, uint64_t off, uint64_t len, void *buf);
  /* writing: begin an object of `size` bytes that will arrive as `nparts` parts (part i covers
     [i*part_bytes, min(size, (i+1)*part_bytes))), parts in any order and from any thread, each exactly once;
     commit makes the object visible atomically (a reader never sees a partial object); abort discards it. */
  mlsys_status (*put_begin)(mlsys_xfer_store *s, const char *key, uint64_t size, uint64_t part_bytes,
                            mlsys_xfer_upload **up);
  mlsys_status (*put_part)(mlsys_xfer_store *s, mlsys_xfer_upload *up, int part, const void *buf, uint64_t len);
  mlsys_status (*put_commit)(mlsys_xfer_store *s, mlsys_xfer_upload *up);   /* frees up */
  void (*put_abort)(mlsys_xfer_store *s, mlsys_xfer_upload *up);              /* frees up */
  void (*close)(mlsys_xfer_store *s);                                         /* frees s */
  void *impl;
};

typedef struct {
  const char *endpoint;     /* s3: "http://127.0.0.1:4568" (default: $MLSYS_S3_ENDPOINT, else AWS) ;
                               azure: "http://127.0.0.1:10000/devstoreaccount1" (default $MLSYS_AZURE_ENDPOINT) */
  const char *access_key;   /* s3: default $AWS_ACCESS_KEY_ID ; azure: account name (default $AZURE_STORAGE_ACCOUNT) */
  const char *secret_key;   /* s3: default $AWS_SECRET_ACCESS_KEY ; azure: base64 account key ($AZURE_STORAGE_KEY) */
  const char *region;       /* s3 SigV4 region, default "us-east-1" */
  double timeout_s;         /* per request, default 60 */
  int create_bucket;        /* 1 → create the bucket / container when it does not exist (for a destination) */
} mlsys_xfer_store_opts;

/* URL forms: file:///abs/dir or file://rel/dir (a directory; objects are the regular files below it),
   s3://bucket[/prefix], azure://container[/prefix], synthetic://N:SIZE[:SEED] (N procedurally generated objects
   of SIZE bytes, read-only, for network-only runs). Bad URLs are MLSYS_ERR_ARG naming the URL and the problem. */
MLSYS_DEF mlsys_status mlsys_xfer_store_open(const char *url, const mlsys_xfer_store_opts *o, mlsys_xfer_store **out);
MLSYS_DEF void mlsys_xfer_store_close(mlsys_xfer_store *s);
MLSYS_DEF void mlsys_xfer_objs_free(mlsys_xfer_obj *objs, int n);

/* ================================================================================================================
   Overlay: the instance-level plan the data plane runs (made by the planner's compile step, or by hand).
   Gateway ids are 0..ngw-1. Exactly one source and one destination gateway role per transfer; relays forward.
   ================================================================================================================ */
enum { MLSYS_XFER_SRC = 0, MLSYS_XFER_RELAY = 1, MLSYS_XFER_DST = 2 };

typedef struct {
  int role;                 /* MLSYS_XFER_SRC / RELAY / DST */
  char region[64];          /* "aws:us-east-1" (informational) */
  char host[64];            /* address to listen on / connect to; "127.0.0.1" in tests (never anything else) */
  int port;                 /* 0 → ephemeral (in-process runs) */
} mlsys_xfer_gw;

typedef struct {
  int from, to;             /* gateway ids */
  int nconn;                /* parallel TCP connections on this edge (≥ 1, ≤ 64 per gateway in total) */
  double rate_gbps;         /* emulated link rate for the whole edge (token bucket), 0 = unlimited */
  double plan_gbps;         /* the planner's F on this edge (informational) */
} mlsys_xfer_edge;

typedef struct {
  int ngw, nedge;
  mlsys_xfer_gw *gw;
  mlsys_xfer_edge *edge;
} mlsys_xfer_overlay;

#ifdef __cplusplus
}
#endif
#endif

/* ================================================================================================================
   2. The planner
   ================================================================================================================ */
/* The planner: grids, prices, the eq. 4.4 MILP and its relaxations, sweeps, baselines, checks and plan files.
   Declarations first, implementation under MLSYS_XFER_PLAN_IMPLEMENTATION. */
#ifndef MLSYS_XFER_PLAN_H
#define MLSYS_XFER_PLAN_H
#include "mlsys_common.h"
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
/* The same from text in memory (source_name names it in errors); a NUL byte ends the text. */
MLSYS_DEF mlsys_status mlsys_xfer_grid_parse(const char *text, size_t len, const char *source_name,
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
MLSYS_DEF mlsys_status mlsys_xfer_grid_parse_aws_prices(mlsys_xfer_grid *g, const char *text, size_t len, const char *source_name);

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
   MLSYS_ERR_INFEASIBLE with the largest throughput the VM limits allow named (a goal above it by at most 1e-9
   relative is planned at it). A solver failure is retried (lp_solve with another scaling, CBC/Clp when compiled in,
   the model with flows in Gbps) and as a last resort the max-flow plan scaled to the goal is returned (milp_status
   FEASIBLE): on its own grid the planner does not fail numerically. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* Maximum throughput with cost per GB ≤ problem->max_cost_per_gb: the thesis's sweep of min-cost solves over
   sweep_samples goals, refined by bisection next to the best feasible sample (§4.5.2). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* The same problem with fractional VMs solved exactly as one LP (Charnes–Cooper substitution, spec §3.6); needs
   provision_time_s = 0. An upper bound for the sweep. */
MLSYS_DEF mlsys_status mlsys_xfer_plan_max_tput_lp(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out);
/* The largest throughput with the VM counts vms[] fixed (or, vms = NULL, up to the VM limits, fractional). With
   vms = NULL a route with no path at all is MLSYS_ERR_INFEASIBLE naming the pair and what the grid holds for it
   (no row between them, a region with no measured link out or in, the path restrictions). */
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
   entering a gateway, edge rate = F · rate_scale Gbps (rate_scale 0 → no emulated rate). Host 127.0.0.1, port 0.
   Paths carrying under 5 % of the throughput are dropped and their flow spread over the others (a chunk handed to
   such a path would arrive long after the rest: dynamic assignment moves whole chunks). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_compile(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                               int max_conns, mlsys_xfer_overlay *ov);
MLSYS_DEF void mlsys_xfer_overlay_free(mlsys_xfer_overlay *ov);
/* Plan files: the region-level plan and its overlay as JSON (format in docs/transfer.md). */
MLSYS_DEF mlsys_status mlsys_xfer_plan_write_json(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl,
                                                  const mlsys_xfer_overlay *ov, FILE *f);
MLSYS_DEF mlsys_status mlsys_xfer_overlay_read_json(const char *text, size_t len, const char *source_name,
                                                    mlsys_xfer_overlay *ov);
/* The reader checks what mlsys_xfer_overlay_check (section 5) checks and reports it as MLSYS_ERR_PARSE naming
   the file. */

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
  char *text = NULL;
  size_t len;
  mlsys_status st;
  memset(g, 0, sizeof *g);
  if ((st = mlsys_read_file(throughput_csv, &text, &len))) return st;
  st = mlsys_xfer_grid_parse(text, len, throughput_csv, o, g);
  mlsys_free(text);
  if (!st && aws_prices_csv && (st = mlsys_xfer_grid_load_aws_prices(g, aws_prices_csv))) mlsys_xfer_grid_free(g);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_parse(const char *text, size_t len, const char *throughput_csv,
                                             const mlsys_xfer_grid_opts *o, mlsys_xfer_grid *g) {
  char *pos, *line, *f[32];
  int lineno = 0, nf, c_src = -1, c_dst = -1, c_st = -1, c_dt = -1, c_tp = -1, c_ok = -1, i, nk = 0, capk = 0;
  mlsys__xfer_key *keys = NULL;
  double *sum = NULL;
  int *cnt = NULL;
  const char *stier = o && o->src_tier ? o->src_tier : "PREMIUM", *dtier = o && o->dst_tier ? o->dst_tier : "PREMIUM";
  double div = o && o->units_skyplane ? 1073741824.0 : 1e9;
  mlsys_status st = MLSYS_OK;
  int pass;
  memset(g, 0, sizeof *g);
  if (!throughput_csv) throughput_csv = "grid";
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
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: header lacks %s", throughput_csv, c_src < 0 ? "src_region" : c_dst < 0 ? "dst_region" : "throughput_sent");   /* before freeing: the message quotes the line */
      mlsys_free(copy);
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
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: region keys '%s', '%s' are not provider:region", throughput_csv, lineno, f[c_src], f[c_dst]);   /* before freeing: the message quotes the line */
        mlsys_free(copy);
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
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: throughput_sent '%s' is not a non-negative number", throughput_csv, lineno, f[c_tp]);   /* before freeing: the message quotes the line */
        mlsys_free(copy);
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
done:
  mlsys_free(keys); mlsys_free(sum); mlsys_free(cnt);
  if (st) mlsys_xfer_grid_free(g);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_load_aws_prices(mlsys_xfer_grid *g, const char *csv_path) {
  char *text = NULL;
  size_t len;
  mlsys_status st;
  if ((st = mlsys_read_file(csv_path, &text, &len))) return st;
  st = mlsys_xfer_grid_parse_aws_prices(g, text, len, csv_path);
  mlsys_free(text);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_grid_parse_aws_prices(mlsys_xfer_grid *g, const char *text_in, size_t len, const char *csv_path) {
  char *text = NULL, *pos, *line, *f[8];
  int lineno = 0, i, j, n = g->n;
  double *to_aws = NULL, *inet = NULL, *maxaws = NULL;
  mlsys_status st = MLSYS_OK;
  if (!csv_path) csv_path = "prices";
  text = (char *)mlsys_alloc(len + 1, 1);
  if (!text) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  memcpy(text, text_in, len); text[len] = 0;
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

enum { MLSYS__XFER_MINCOST = 0, MLSYS__XFER_MAXFLOW = 1, MLSYS__XFER_CC = 2,
       MLSYS__XFER_GBPS = 16 /* with MINCOST: flow columns in Gbps, the other scaling (a retry's) */ };

typedef struct {
  mlsys_milp *m;
  int n, ne;
  int *eu, *ev;        /* edges */
  int *fcol, *mcol;    /* per edge */
  int *ncol;           /* per region, -1 when the region touches no edge */
  int tcol, sigcol;
  double fscale;       /* F[e] = fscale · x[fcol[e]]: the goal T in min-cost models (flows as fractions of it), else 1 */
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

/* A route the plan cannot use at all: MLSYS_ERR_INFEASIBLE naming the pair as given and what the grid holds for
   it (its direct row, whether either region has any measured link out / in, the path restrictions), instead of the
   "goal 0 Gbps" a zero max flow would lead to (issue 19 item 6). */
static mlsys_status mlsys__xfer_no_path(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p) {
  int n = g->n, s = p->src, t = p->dst, u, v, head = 0, tail = 0, nout = 0, nin = 0, nfwd = 0, nbwd = 0, found = 1;
  double d = g->tput[(size_t)s * n + t];
  char direct[320];
  unsigned char *seen;
  int *queue;
  for (v = 0; v < n; v++) {
    if (v == s || v == t) continue;
    nout += g->tput[(size_t)s * n + v] >= MLSYS__XFER_MIN_GBPS;
    nin += g->tput[(size_t)v * n + t] >= MLSYS__XFER_MIN_GBPS;
  }
  if (d >= MLSYS__XFER_MIN_GBPS) snprintf(direct, sizeof direct, "its row %s -> %s (%.3g Gbps)", g->r[s].key, g->r[t].key, d);
  else if (d > 0) snprintf(direct, sizeof direct, "its row %s -> %s measured %.3g Gbps, under the %.2g Gbps the planner uses", g->r[s].key, g->r[t].key, d, MLSYS__XFER_MIN_GBPS);
  else snprintf(direct, sizeof direct, "the grid has no row %s -> %s", g->r[s].key, g->r[t].key);
  if (mlsys__xfer_vm_limit(g, p, s) <= 0 || mlsys__xfer_vm_limit(g, p, t) <= 0)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no path from %s to %s: %s has a VM limit of 0", g->r[s].key, g->r[t].key,
                           g->r[mlsys__xfer_vm_limit(g, p, s) <= 0 ? s : t].key);
  if (p->direct_only)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no direct path from %s to %s: %s (and direct_only rules out relays)", g->r[s].key, g->r[t].key, direct);
  if (!nout && d < MLSYS__XFER_MIN_GBPS)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no path from %s to %s: %s, and %s has no measured link to any other region of the grid (%d regions)",
                           g->r[s].key, g->r[t].key, direct, g->r[s].key, n);
  if (!nin && d < MLSYS__XFER_MIN_GBPS)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no path from %s to %s: %s, and no region of the grid (%d regions) has a measured link to %s",
                           g->r[s].key, g->r[t].key, direct, n, g->r[t].key);
  /* regions reachable from s, and regions that reach t, over the links the plan may use */
  seen = (unsigned char *)mlsys_calloc((size_t)n, 1);
  queue = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (seen && queue) {
    for (found = 0, seen[s] = 1, queue[tail++] = s; head < tail;)
      for (u = queue[head++], v = 0; v < n; v++)
        if (!seen[v] && mlsys__xfer_edge_ok(g, p, u, v)) { seen[v] = 1; queue[tail++] = v; if (v == t) found = 1; else nfwd++; }
    memset(seen, 0, (size_t)n);
    for (head = tail = 0, seen[t] = 1, queue[tail++] = t; head < tail;)
      for (v = queue[head++], u = 0; u < n; u++)
        if (!seen[u] && mlsys__xfer_edge_ok(g, p, u, v)) { seen[u] = 1; queue[tail++] = u; if (u != s) nbwd++; }
  }
  mlsys_free(seen);
  mlsys_free(queue);
  if (found) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no flow from %s to %s within the VM limits", g->r[s].key, g->r[t].key);
  return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no path from %s to %s: %s, and no chain of measured links joins them%s (%s reaches %d other "
                         "regions, %d reach %s)", g->r[s].key, g->r[t].key, direct, p->max_relays == 1 ? " through one relay (max_relays = 1)" : "",
                         g->r[s].key, nfwd, nbwd, g->r[t].key);
}

/* fixed_n: NULL → N free in [0, limit] (integer when `integer`), else N fixed to fixed_n[v] (upper = lower).
   Numerics (issue 19 item 12): a min-cost model's flow columns are fractions of the goal (F = T·f, so the source
   row is Σ f = 1) and every cap row is in VMs (Σ F/E ≤ N, Σ F/g ≤ N), so the planner's relative tolerances are the
   solver's absolute ones. At goals 1e-9 above the max flow on 174 real-grid models, lp_solve failed (NUMFAILURE or
   a wrong INFEASIBLE) on 76 with F in Gbps and on 6 in this form; the rest is done by clamping such goals to the
   max flow (mlsys__xfer_min_cost) and by the retries of mlsys__xfer_run and mlsys__xfer_min_cost_at. */
static mlsys_status mlsys__xfer_build(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, int mode, double T,
                                      const double *fixed_n, int integer, double budget, mlsys__xfer_model *md) {
  int n = g->n, u, v, e, s = p->src, t = p->dst, c = g->conn_per_vm;
  int *cols = NULL;
  double *vals = NULL;
  mlsys_status st = MLSYS_OK;
  int keepm, gbps = (mode & MLSYS__XFER_GBPS) != 0;
  mode &= ~MLSYS__XFER_GBPS;
  keepm = p->keep_conn_vars && mode != MLSYS__XFER_CC;
  memset(md, 0, sizeof *md);
  md->n = n; md->tcol = md->sigcol = -1;
  md->fscale = mode == MLSYS__XFER_MINCOST && !gbps ? T : 1.0;
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
  if (md->ne == 0) { st = mlsys__xfer_no_path(g, p); goto done; }
  /* columns */
  if (mode == MLSYS__XFER_MAXFLOW) md->tcol = mlsys_milp_add_var(md->m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 1.0, "T");
  if (mode == MLSYS__XFER_CC) md->sigcol = mlsys_milp_add_var(md->m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 1.0, "sigma");
  if (mode == MLSYS__XFER_MAXFLOW) mlsys_milp_set_maximize(md->m, 1);
  for (e = 0; e < md->ne; e++) {
    double obj = mode == MLSYS__XFER_MINCOST ? MLSYS__XFER_OBJ_SCALE * g->price[(size_t)md->eu[e] * n + md->ev[e]] * md->fscale / T : 0;
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
    /* min-cost: Σ f = 1 with F = T·f (Σ F = T in Gbps); CC: the unit flow; max flow: Σ F = T, a column */
    double rhs = mode == MLSYS__XFER_MINCOST ? T / md->fscale : mode == MLSYS__XFER_CC ? 1.0 : 0.0;
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
    /* per-VM egress (4.4g) and ingress (4.4f) caps, in VMs: Σ F/E ≤ N */
    k = 0;
    for (e = 0; e < md->ne; e++) if (md->eu[e] == v) { cols[k] = md->fcol[e]; vals[k++] = md->fscale / g->r[v].egress_gbps; }
    if (k) {
      cols[k] = nv; vals[k++] = -1.0;
      snprintf(name, sizeof name, "egress_%d", v);
      if ((st = mlsys_milp_add_row(md->m, k, cols, vals, MLSYS_ROW_LE, 0, name))) goto done;
    }
    k = 0;
    for (e = 0; e < md->ne; e++) if (md->ev[e] == v) { cols[k] = md->fcol[e]; vals[k++] = md->fscale / g->r[v].ingress_gbps; }
    if (k) {
      cols[k] = nv; vals[k++] = -1.0;
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
          else { cols[k] = md->fcol[e]; vals[k++] = md->fscale / g->tput[(size_t)md->eu[e] * n + md->ev[e]]; }
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
      cols[0] = md->fcol[e]; vals[0] = md->fscale;
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

/* Runs the solver on a built model, counting the solves in pl. A numerical failure (MLSYS_ERR_SOLVER), or an
   "infeasible" for a model the caller knows to be feasible, is not an answer: lp_solve is retried with geometric
   scaling only (its default, 196, adds equilibration and integer-column scaling; on the real grid each mode fails
   on models the other solves), then the model goes to CBC/Clp when compiled in. */
static mlsys_status mlsys__xfer_run(const mlsys_xfer_problem *p, mlsys__xfer_model *md, int relax, int known_feasible,
                                    mlsys_milp_result *res, mlsys_xfer_plan *pl) {
  mlsys_milp_opts mo;
  mlsys_status st = MLSYS_OK;
  int attempt;
  mlsys__xfer_opts(p, relax, &mo);
  for (attempt = 0; attempt < 3; attempt++) {
    if (attempt == 1) {   /* lp_solve again, another scaling */
      if (res->backend != MLSYS_SOLVER_LPSOLVE) continue;
      mo.backend = MLSYS_SOLVER_LPSOLVE;
      mo.lpsolve_scaling = 4;   /* SCALE_GEOMETRIC */
    }
    if (attempt == 2) {
      if (mo.backend == MLSYS_SOLVER_CBC || !mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) break;
      mo.backend = MLSYS_SOLVER_CBC;
    }
    if (attempt) {
      mlsys_log(MLSYS_LOG_INFO, "transfer planner: %s; retrying on %s%s", mlsys_last_error(), mlsys_milp_backend_name(mo.backend),
                attempt == 1 ? " with geometric scaling" : "");
      mlsys_milp_result_free(res);
    }
    st = mlsys_milp_solve(md->m, &mo, res);
    pl->solves++;
    pl->solve_seconds += res->seconds;
    if (st != MLSYS_ERR_SOLVER && !(st == MLSYS_ERR_INFEASIBLE && known_feasible)) break;
  }
  pl->milp_status = res->status;
  pl->milp_gap = res->gap;
  if (st) mlsys_milp_result_free(res);
  return st;
}

/* Solves a built model and copies F, N into the plan. */
static mlsys_status mlsys__xfer_solve(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys__xfer_model *md, int relax,
                                      int known_feasible, mlsys_xfer_plan *pl, double *obj) {
  mlsys_milp_result res;
  mlsys_status st;
  int e, v, n = g->n;
  if ((st = mlsys__xfer_run(p, md, relax, known_feasible, &res, pl))) return st;
  memset(pl->flow, 0, (size_t)n * n * sizeof(double));
  memset(pl->vms, 0, (size_t)n * sizeof(double));
  for (e = 0; e < md->ne; e++) {
    double f = res.x[md->fcol[e]] * md->fscale;
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

/* The largest flow with VMs fixed to vms (NULL: up to the limits, fractional) into pl (allocated by the caller):
   its F and N, and the flow as *gbps. The model is always feasible (zero flow is a solution). */
static mlsys_status mlsys__xfer_max_flow_plan(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *vms,
                                              mlsys_xfer_plan *pl, double *gbps) {
  mlsys__xfer_model md;
  mlsys_status st;
  double obj = 0;
  *gbps = 0;
  if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_MAXFLOW, 0, vms, 0, 0, &md))) return st;
  st = mlsys__xfer_solve(g, p, &md, 1, 1, pl, &obj);
  if (!st) *gbps = obj > 0 ? obj : 0;
  mlsys__xfer_model_free(&md);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_max_flow(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, const double *vms, double *gbps) {
  mlsys_xfer_plan pl;
  mlsys_status st;
  *gbps = 0;
  if ((st = mlsys__xfer_check_problem(g, p))) return st;
  if ((st = mlsys__xfer_plan_alloc(g, p, &pl))) return st;
  st = mlsys__xfer_max_flow_plan(g, p, vms, &pl, gbps);
  mlsys_xfer_plan_free(&pl);
  if (!st && !vms && !(*gbps > 0)) st = mlsys__xfer_no_path(g, p);
  return st;
}

/* The last resort when every solve of a reachable goal T failed: the max-flow plan scaled down to T. Every row of
   eq. 4.4 is homogeneous in (F, N), so F·T/Tmax with N·T/Tmax (rounded up for integer VMs, capped by the limits;
   or the fixed VMs themselves) meets every constraint. Not the cheapest plan: milp_status says FEASIBLE. */
static mlsys_status mlsys__xfer_scaled_max_flow(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double T,
                                                const double *fixed_n, int integer, mlsys_xfer_plan *pl) {
  mlsys_status st;
  double tmax = 0, r;
  int n = g->n, v;
  size_t k;
  if ((st = mlsys__xfer_max_flow_plan(g, p, fixed_n, pl, &tmax))) return st;
  if (!(tmax >= T * (1 - 1e-9)) || !(tmax > 0))
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "goal %.6g Gbps from %s to %s is above the %.6g Gbps these VMs carry", T,
                           g->r[p->src].key, g->r[p->dst].key, tmax);
  r = T < tmax ? T / tmax : 1.0;
  for (k = 0; k < (size_t)n * n; k++) pl->flow[k] *= r;
  for (v = 0; v < n; v++) {
    double x = fixed_n ? fixed_n[v] : pl->vms[v] * r, lim = mlsys__xfer_vm_limit(g, p, v);
    if (integer && !fixed_n) x = ceil(x - 1e-9);
    pl->vms[v] = x < lim ? x : lim;
  }
  pl->milp_status = MLSYS_MILP_FEASIBLE;
  pl->milp_gap = INFINITY;
  return MLSYS_OK;
}

/* Min cost at goal T with N free (mode = integer or relaxed) or fixed. Every caller asks for a goal the max flow
   shows reachable with those VMs, so the model is feasible and a failure is numerical. lp_solve then retries on
   CBC/Clp (mlsys__xfer_solve), and both again on the model with flows in Gbps, the other scaling: on the real grid
   each form has goals near the maximum where lp_solve alone fails. If all of that fails, the scaled max-flow plan. */
static mlsys_status mlsys__xfer_min_cost_at(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double T, const double *fixed_n,
                                            int integer, mlsys_xfer_plan *pl, double *obj_per_gb) {
  mlsys__xfer_model md;
  mlsys_status st = MLSYS_OK;
  double obj = 0;
  int form;
  for (form = 0; form < 2; form++) {
    if ((st = mlsys__xfer_build(g, p, MLSYS__XFER_MINCOST | (form ? MLSYS__XFER_GBPS : 0), T, fixed_n, integer, 0, &md))) return st;
    st = mlsys__xfer_solve(g, p, &md, !integer, 1, pl, &obj);
    mlsys__xfer_model_free(&md);
    if (st != MLSYS_ERR_SOLVER && st != MLSYS_ERR_INFEASIBLE) break;
    mlsys_log(MLSYS_LOG_INFO, "transfer planner: %s at %.9g Gbps (%s form): %s", integer ? "MILP" : "LP", T,
              form ? "Gbps" : "scaled", mlsys_last_error());
  }
  if (st == MLSYS_ERR_SOLVER || st == MLSYS_ERR_INFEASIBLE) {
    if ((st = mlsys__xfer_scaled_max_flow(g, p, T, fixed_n, integer, pl))) return st;
    mlsys__xfer_plan_finish(g, p, pl);
    obj = NAN;   /* not an optimum: no bound to report */
  }
  if (!st && obj_per_gb) *obj_per_gb = obj / MLSYS__XFER_OBJ_SCALE;
  return st;
}

/* known_max: the problem's max flow when the caller has it (sweeps), < 0 → computed here. want_bound: also solve
   the relaxation for lp_bound_per_gb in EXACT mode (the max-throughput sweep asks only for its answer's). */
static mlsys_status mlsys__xfer_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double known_max, int want_bound,
                                         mlsys_xfer_plan *out);
MLSYS_DEF mlsys_status mlsys_xfer_plan_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, mlsys_xfer_plan *out) {
  return mlsys__xfer_min_cost(g, p, -1, 1, out);
}
static mlsys_status mlsys__xfer_min_cost(const mlsys_xfer_grid *g, const mlsys_xfer_problem *p, double known_max, int want_bound,
                                         mlsys_xfer_plan *out) {
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
  /* a goal within the tolerance above the maximum is the maximum: asked of a solver as it is, it is infeasible by
     less than the solver can resolve (lp_solve: NUMFAILURE, issue 19 item 12) */
  if (T > tmax) T = tmax;
  if ((st = mlsys__xfer_plan_alloc(g, p, out))) return st;
  if (p->rounding == MLSYS_XFER_EXACT) {
    mlsys_xfer_plan lp;
    double ex;
    /* the relaxation's value for the report (and the gap the thesis's ≤ 1 % claim is about) */
    if (want_bound && !mlsys__xfer_plan_alloc(g, p, &lp)) {
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
  st = mlsys__xfer_run(p, &md, 1, 0, &res, out);
  if (st) {
    mlsys__xfer_model_free(&md); mlsys_xfer_plan_free(out);
    if (st == MLSYS_ERR_INFEASIBLE)
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no plan from %s to %s costs at most $%.4g/GB (not even with fractional VMs: the exact LP is infeasible)", g->r[p->src].key, g->r[p->dst].key, p->max_cost_per_gb);
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
    if (st == MLSYS_ERR_SOLVER) {
      /* a bound the sweep can do without: sample up to the max flow instead */
      mlsys_log(MLSYS_LOG_WARN, "transfer planner: the exact max-throughput LP failed (%s); sweeping up to the max flow", mlsys_last_error());
    } else if (st) {
      return st;
    } else {
      /* never above the max flow: a goal beyond it by less than the solver's tolerance is what made lp_solve fail
         (NUMFAILURE) whenever the ceiling did not bind (issue 19 item 12) */
      if (lp.tput_gbps * (1 + 1e-9) < hi) hi = lp.tput_gbps * (1 + 1e-9);
      mlsys_xfer_plan_free(&lp);
    }
  }
  q = *p;
  /* the sweep, from the top: the first goal that fits the ceiling is the sweep's answer */
  for (i = K; i >= 1; i--) {
    double T = hi * i / K;
    q.goal_gbps = T;
    st = mlsys__xfer_min_cost(g, &q, maxflow, 0, &cur);
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
    st = mlsys__xfer_min_cost(g, &q, maxflow, 0, &cur);
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
  if (p->rounding == MLSYS_XFER_EXACT) {   /* the relaxation's cost at the answer (skipped at every sample) */
    mlsys_xfer_plan lp;
    double lpobj = NAN;
    if (!mlsys__xfer_plan_alloc(g, p, &lp)) {
      if (!mlsys__xfer_min_cost_at(g, p, best_T < maxflow ? best_T : maxflow, NULL, 0, &lp, &lpobj)) out->lp_bound_per_gb = lpobj;
      solves += lp.solves;
      mlsys_xfer_plan_free(&lp);
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
    st = mlsys__xfer_min_cost(g, &q, hi, 1, &out[i]);
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

static mlsys_status mlsys__xfer_compile_raw(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                            int max_conns, mlsys_xfer_overlay *ov);
/* Paths with less than this share of the plan's throughput are left out of the overlay, their flow spread over
   the rest: with dynamic assignment such a path still takes whole chunks, and the transfer then waits for the
   last chunk sent down a path that carries a few percent of the rate. */
#define MLSYS__XFER_MIN_PATH_SHARE 0.05

MLSYS_DEF mlsys_status mlsys_xfer_plan_compile(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                               int max_conns, mlsys_xfer_overlay *ov) {
  mlsys_xfer_path *ps = NULL;
  mlsys_xfer_plan q;
  int np = 0, i, k, n = g->n;
  double kept = 0;
  mlsys_status st;
  memset(ov, 0, sizeof *ov);
  if (!(pl->tput_gbps > 0)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "plan carries no flow");
  if ((st = mlsys_xfer_plan_paths(pl, &ps, &np))) return st;
  for (i = 0; i < np; i++) if (ps[i].gbps >= MLSYS__XFER_MIN_PATH_SHARE * pl->tput_gbps) kept += ps[i].gbps;
  if (!(kept > 0) || kept >= pl->tput_gbps * (1 - 1e-9)) {
    mlsys_xfer_paths_free(ps, np);
    return mlsys__xfer_compile_raw(g, pl, rate_scale, max_conns, ov);
  }
  q = *pl;
  q.flow = (double *)mlsys_calloc((size_t)n * n, sizeof(double));
  q.conns = (double *)mlsys_calloc((size_t)n * n, sizeof(double));
  if (!q.flow || !q.conns) { mlsys_free(q.flow); mlsys_free(q.conns); mlsys_xfer_paths_free(ps, np); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (i = 0; i < np; i++) {
    if (ps[i].gbps < MLSYS__XFER_MIN_PATH_SHARE * pl->tput_gbps) continue;
    for (k = 0; k + 1 < ps[i].len; k++) q.flow[(size_t)ps[i].r[k] * n + ps[i].r[k + 1]] += ps[i].gbps * pl->tput_gbps / kept;
  }
  for (i = 0; i < n * n; i++) q.conns[i] = q.flow[i] > 0 && g->tput[i] > 0 ? g->conn_per_vm * q.flow[i] / g->tput[i] : 0;
  st = mlsys__xfer_compile_raw(g, &q, rate_scale, max_conns, ov);
  mlsys_free(q.flow); mlsys_free(q.conns);
  mlsys_xfer_paths_free(ps, np);
  return st;
}

static mlsys_status mlsys__xfer_compile_raw(const mlsys_xfer_grid *g, const mlsys_xfer_plan *pl, double rate_scale,
                                            int max_conns, mlsys_xfer_overlay *ov) {
  int n = g->n, u, v, *id = NULL, k, e;
  /* solver residue (a 1e-6 Gbps edge) must not become an edge: one TCP connection would fill its emulated link */
  double *load = NULL, eps = 1e-4 * pl->tput_gbps;
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
MLSYS_DEF mlsys_status mlsys_xfer_overlay_check(const mlsys_xfer_overlay *ov);   /* section 5 */
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
  if ((st = mlsys_xfer_overlay_check(ov))) {
    char why[1024];
    snprintf(why, sizeof why, "%s", mlsys_last_error());   /* the message buffer is reused by set_error */
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: %s", src, why);
  }
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

/* ================================================================================================================
   3. Object stores
   ================================================================================================================ */
/* The object stores: where a transfer reads its objects and where it writes them. The interface is in section 1
   (struct mlsys_xfer_store: list, get_range, put_begin/put_part/put_commit/put_abort, close).
   link: -lcurl -lcrypto -lpthread            (Debian: libcurl4-openssl-dev, libssl-dev)

   EXAMPLE (copy every object of one store into another, one part per object)
       mlsys_xfer_store_opts o = {0};                 // zero = defaults (endpoints from the environment)
       mlsys_xfer_store *src, *dst;  mlsys_xfer_obj *objs;  int n;
       if (mlsys_xfer_store_open("synthetic://4:1M", &o, &src) ||
           mlsys_xfer_store_open("file:///tmp/out", &o, &dst) || src->list(src, &objs, &n))
         { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
       for (int i = 0; i < n; i++) {
         void *buf = malloc(objs[i].size + 1);  mlsys_xfer_upload *up;
         src->get_range(src, objs[i].key, 0, objs[i].size, buf);
         dst->put_begin(dst, objs[i].key, objs[i].size, objs[i].size, &up);
         dst->put_part(dst, up, 0, buf, objs[i].size);
         if (dst->put_commit(dst, up)) fprintf(stderr, "%s\n", mlsys_last_error());
         free(buf);
       }
       mlsys_xfer_objs_free(objs, n);  mlsys_xfer_store_close(src);  mlsys_xfer_store_close(dst);

   URLS (anything else is MLSYS_ERR_ARG naming the URL and what is wrong)
     file:///abs/dir, file://rel/dir   a directory; the objects are the regular files below it (recursively; symlinks
                                       to files count, symlinked directories are not followed), keys relative, '/'.
     s3://bucket[/prefix]              S3 REST, path-style requests to opts.endpoint, SigV4 signed by libcurl.
     azure://container[/prefix]        Azure Blob REST, SharedKey signed (HMAC-SHA256, OpenSSL libcrypto).
     synthetic://N:SIZE[:SEED]         N read-only objects "obj-00000".. of SIZE bytes (suffix K, M, G, T = 2^10..,
                                       optionally followed by "iB" or "B"), SEED default 0. Byte b of object k is a
                                       fixed function of (SEED, k, b): mlsys_xfer_synth_fill regenerates any range.

   KEYS are '/'-separated paths: non-empty, at most 1024 bytes, no leading '/', no empty, "." or ".." component
   (so a key can never leave a file:// root and means the same file everywhere). Listing an S3/Azure store that
   holds a key outside these rules fails with MLSYS_ERR_UNSUPPORTED naming it, rather than skipping data silently;
   zero-byte "directory markers" (keys ending in '/') are skipped.

   ERRORS: a missing object is MLSYS_ERR_IO ("no such object 'k'"); a range beyond the end of an object is
   MLSYS_ERR_ARG naming the key, the range and the object's size; HTTP failures are MLSYS_ERR_IO with the method,
   the key, the endpoint, the HTTP status and the service's error code and message; an endpoint that cannot be
   reached is MLSYS_ERR_IO after at most the connect timeout (min(timeout_s, 10) s; a closed port fails at once).

   WRITES: put_begin(key, size, part_bytes) → put_part(i) for every part i (any order, any thread, each once) →
   put_commit (the object appears whole, or not at all) or put_abort. Commit and abort free the upload, also when
   commit fails (then nothing was published). A 0-byte object has one empty part 0, which may be left out.
     file   parts are pwrite()n into a hidden temporary file (".mlsys-tmp-*", never listed) in the object's
            directory; commit fsyncs it and renames it over the key, so a failed or aborted write never leaves a
            partial object and never touches an existing one; abort unlinks it. Parent directories are created.
     s3     objects of ≤ 16 MiB are buffered and PUT once at commit. Otherwise multipart upload:
            S3 needs every part but the last to be ≥ 5 MiB, so when part_bytes < 5 MiB consecutive parts are
            grouped into S3 parts of ⌈5 MiB / part_bytes⌉ parts each (and, beyond 10,000 S3 parts, larger groups);
            a group is buffered until all its parts are in, then uploaded. With part_bytes ≥ 5 MiB each part is
            uploaded straight from the caller's buffer. Abort sends AbortMultipartUpload (best effort: s3rver does
            not implement it; its leftover parts are invisible).
     azure  the same with Put Blob (≤ 16 MiB) or Put Block per group + Put Block List at commit (no
            minimum block size; grouping only beyond 50,000 blocks). Uncommitted blocks of an abort are never
            visible; Azure drops them after a week.

   OPTIONS (mlsys_xfer_store_opts in section 1; zero = default)
     endpoint    s3: $MLSYS_S3_ENDPOINT, else https://s3.REGION.amazonaws.com ; azure: $MLSYS_AZURE_ENDPOINT, else
                 https://ACCOUNT.blob.core.windows.net (for azurite: http://127.0.0.1:PORT/devstoreaccount1)
     access_key  s3: $AWS_ACCESS_KEY_ID ; azure: the account, $AZURE_STORAGE_ACCOUNT
     secret_key  s3: $AWS_SECRET_ACCESS_KEY ; azure: the base64 account key, $AZURE_STORAGE_KEY
                 On a loopback endpoint (127.x, localhost, [::1]) the emulators' well-known credentials are the last
                 fallback: s3rver's S3RVER/S3RVER, azurite's devstoreaccount1 and its published key.
     region      SigV4 region, "us-east-1"          timeout_s  per request, 60
     create_bucket  create the bucket / container (or the file:// directory) when it does not exist

   COMPILE-TIME OPTIONS
     MLSYS_XFER_NO_HTTP   build without libcurl/libcrypto: s3:// and azure:// are then MLSYS_ERR_UNSUPPORTED.

   THREADS: every function may be called from many threads on one store. libcurl is initialised once
   (pthread_once); each request uses its own easy handle (no shared connection cache).

   NOT DONE: gs://; HTTPS proxies and custom CA options (libcurl's defaults apply); virtual-host-style S3 URLs;
   retries beyond 3 attempts of a request that failed in transport or with HTTP 500/503; server-side checksums
   (Content-MD5) — the data plane verifies its own chunk hashes. */
#ifndef MLSYS_XFER_STORE_H
#define MLSYS_XFER_STORE_H
/* xfer_api.h has no extern "C" of its own: include the common header (and its implementation, which pulls in
   C++-aware system headers) first, then give the shared declarations C linkage so C++ builds link with C ones. */
#include "mlsys_common.h"
#ifdef __cplusplus
extern "C" {
#endif
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Fill buf with bytes [off, off+len) of the synthetic object `key` under `seed` (what synthetic:// serves). */
MLSYS_DEF void mlsys_xfer_synth_fill(uint64_t seed, const char *key, uint64_t off, uint64_t len, void *buf);
/* MLSYS_OK if key follows the KEYS rules above, else MLSYS_ERR_ARG saying which rule it breaks. */
MLSYS_DEF mlsys_status mlsys_xfer_key_check(const char *key);

#define MLSYS_XFER_S3_MIN_PART (5ull << 20)      /* S3's smallest part except the last */
#define MLSYS_XFER_SINGLE_PUT_MAX (16ull << 20)  /* objects up to this size are buffered and PUT once */

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_STORE_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#if defined(MLSYS_IMPLEMENTATION) && !defined(MLSYS_XFER_STORE_IMPLEMENTATION)
#define MLSYS_XFER_STORE_IMPLEMENTATION
#endif
#ifdef MLSYS_XFER_STORE_IMPLEMENTATION
#ifndef MLSYS_XFER_STORE_IMPLEMENTATION_DONE
#define MLSYS_XFER_STORE_IMPLEMENTATION_DONE

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifndef MLSYS_XFER_NO_HTTP
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { MLSYS__XFER_FILE = 1, MLSYS__XFER_S3, MLSYS__XFER_AZURE, MLSYS__XFER_SYNTH };
#define MLSYS__XFER_KEY_MAX 1024
#define MLSYS__XFER_TMP_PREFIX ".mlsys-tmp-"

typedef struct {
  mlsys_xfer_store pub;   /* first, so the caller's pointer is also ours */
  int type;
  char *url;              /* as given, for messages */
  /* file */
  char *root;
  /* synthetic */
  uint64_t n, size, seed;
  int width;
  /* s3 / azure */
  char *endpoint;         /* no trailing '/' */
  char *bucket;           /* or container */
  char *prefix;           /* "" or "some/prefix/" */
  char *base;             /* endpoint + "/" + bucket */
  char *auth_path;        /* azure: "/" + account + endpoint path + "/" + container (canonicalized resource) */
  char *access, *secret;  /* s3 credentials; azure: account name and base64 key */
  unsigned char azkey[128];
  int azkey_len;
  char sigv4[160], region[72];
  long timeout_ms, connect_ms;
} mlsys__xfer_st;

struct mlsys_xfer_upload {
  char *key;              /* relative key (for messages) */
  uint64_t size, pb;
  int nparts;
  pthread_mutex_t mu;
  unsigned char *got;     /* per part: set once it was accepted */
  int failed;
  /* file */
  int fd;
  char *tmp, *dst;
  /* s3 / azure */
  char *url;              /* object URL */
  char *rpath;            /* azure: canonicalized resource of the object */
  int m, ngroups, single; /* parts per group, groups, one buffered PUT at commit */
  uint64_t *gfill;        /* bytes received per group */
  char **gbuf;            /* group buffers (grouped or single mode) */
  char **etag;            /* s3: per group */
  char *upload_id;        /* s3 multipart */
};

/* ---------------------------------------------------------------------------------------------------------------
   Small helpers
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { char *p; size_t n, cap; } mlsys__xfer_buf;

static int mlsys__xfer_buf_add(mlsys__xfer_buf *b, const void *d, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    char *q;
    while (nc < b->n + n + 1) {
      if (nc > SIZE_MAX / 2) return 0;
      nc *= 2;
    }
    q = (char *)MLSYS_REALLOC(b->p, nc);
    if (!q) return 0;
    b->p = q;
    b->cap = nc;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
  b->p[b->n] = 0;
  return 1;
}
static int mlsys__xfer_buf_str(mlsys__xfer_buf *b, const char *s) { return mlsys__xfer_buf_add(b, s, strlen(s)); }
static int mlsys__xfer_buf_fmt(mlsys__xfer_buf *b, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static int mlsys__xfer_buf_fmt(mlsys__xfer_buf *b, const char *fmt, ...) {
  char tmp[512];
  int k;
  va_list ap;
  va_start(ap, fmt);
  k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof tmp) return 0;
  return mlsys__xfer_buf_add(b, tmp, (size_t)k);
}
static void mlsys__xfer_buf_free(mlsys__xfer_buf *b) {
  MLSYS_FREE(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}
/* Takes the buffer's string (never NULL on success). */
static char *mlsys__xfer_buf_take(mlsys__xfer_buf *b) {
  char *p;
  if (!b->p && !mlsys__xfer_buf_add(b, "", 0)) return NULL;
  p = b->p;
  b->p = NULL;
  b->n = b->cap = 0;
  return p;
}
static mlsys_status mlsys__xfer_oom(void) { return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }

static char *mlsys__xfer_strndup(const char *s, size_t n) {
  char *d = (char *)mlsys_alloc(n + 1, 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}
static char *mlsys__xfer_cat(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *d = (char *)mlsys_alloc(na + nb + 1, 1);
  if (d) {
    memcpy(d, a, na);
    memcpy(d + na, b, nb + 1);
  }
  return d;
}

MLSYS_DEF mlsys_status mlsys_xfer_key_check(const char *key) {
  const char *p, *c;
  size_t n;
  if (!key) return mlsys_set_error(MLSYS_ERR_ARG, "key is NULL");
  n = strlen(key);
  if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "empty key");
  if (n > MLSYS__XFER_KEY_MAX)
    return mlsys_set_error(MLSYS_ERR_ARG, "key '%.60s...' is %zu bytes (at most %d)", key, n, MLSYS__XFER_KEY_MAX);
  if (key[0] == '/') return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' is absolute (starts with '/')", key);
  for (p = key;; p = c + 1) {
    size_t len;
    c = strchr(p, '/');
    len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0) return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' has an empty path component", key);
    if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
      return mlsys_set_error(MLSYS_ERR_ARG, "key '%s' has a '%.*s' path component", key, (int)len, p);
    if (!c) break;
  }
  return MLSYS_OK;
}

/* Parses "123", "5M", "1.5G" is not accepted: sizes are integers with an optional binary suffix. */
static int mlsys__xfer_parse_u64(const char *s, size_t n, uint64_t *out, int allow_suffix) {
  uint64_t v = 0, mul = 1;
  size_t i = 0;
  if (n == 0) return 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == 0) return 0;
  if (i < n) {
    const char *r = s + i;
    size_t rn = n - i;
    if (!allow_suffix) return 0;
    switch (toupper((unsigned char)r[0])) {
      case 'K': mul = 1ull << 10; break;
      case 'M': mul = 1ull << 20; break;
      case 'G': mul = 1ull << 30; break;
      case 'T': mul = 1ull << 40; break;
      default: return 0;
    }
    if (!(rn == 1 || (rn == 2 && toupper((unsigned char)r[1]) == 'B') ||
          (rn == 3 && r[1] == 'i' && toupper((unsigned char)r[2]) == 'B')))
      return 0;
    if (v > UINT64_MAX / mul) return 0;
    v *= mul;
  }
  *out = v;
  return 1;
}

/* ---------------------------------------------------------------------------------------------------------------
   Synthetic data: a splitmix64 stream per object, keyed by FNV-1a(key) and the seed
   --------------------------------------------------------------------------------------------------------------- */
static uint64_t mlsys__xfer_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
MLSYS_DEF void mlsys_xfer_synth_fill(uint64_t seed, const char *key, uint64_t off, uint64_t len, void *buf) {
  uint64_t h = 0xcbf29ce484222325ull, end = off + len, o = off;
  unsigned char *out = (unsigned char *)buf;
  const unsigned char *k;
  for (k = (const unsigned char *)key; *k; k++) h = (h ^ *k) * 0x100000001b3ull;
  h ^= mlsys__xfer_mix(seed + 0x9e3779b97f4a7c15ull);
  while (o < end) {
    uint64_t w = mlsys__xfer_mix(h + (o / 8 + 1) * 0x9e3779b97f4a7c15ull);
    unsigned b = (unsigned)(o % 8);
    if (b == 0 && end - o >= 8) {
      int i;
      for (i = 0; i < 8; i++) out[i] = (unsigned char)(w >> (8 * i));   /* little-endian on every host */
      out += 8;
      o += 8;
    } else {
      for (; b < 8 && o < end; b++, o++) *out++ = (unsigned char)(w >> (8 * b));
    }
  }
}

static mlsys_status mlsys__xfer_synth_find(mlsys__xfer_st *s, const char *key, uint64_t *idx) {
  uint64_t v;
  char want[64];
  if (strncmp(key, "obj-", 4) != 0 || !mlsys__xfer_parse_u64(key + 4, strlen(key + 4), &v, 0) || v >= s->n)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  snprintf(want, sizeof want, "obj-%0*llu", s->width, (unsigned long long)v);
  if (strcmp(want, key) != 0) return mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  *idx = v;
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_synth_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys_xfer_obj *o;
  uint64_t i;
  *objs = NULL;
  *n = 0;
  o = (mlsys_xfer_obj *)mlsys_calloc(s->n ? (size_t)s->n : 1, sizeof *o);
  if (!o) return MLSYS_ERR_NOMEM;
  for (i = 0; i < s->n; i++) {
    char k[64];
    snprintf(k, sizeof k, "obj-%0*llu", s->width, (unsigned long long)i);
    o[i].key = mlsys_strdup(k);
    o[i].size = s->size;
    if (!o[i].key) {
      mlsys_xfer_objs_free(o, (int)i);
      return MLSYS_ERR_NOMEM;
    }
  }
  *objs = o;
  *n = (int)s->n;
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_range_error(const char *url, const char *key, uint64_t off, uint64_t len,
                                            uint64_t size) {
  return mlsys_set_error(MLSYS_ERR_ARG, "%s: range [%llu, %llu) is beyond the end of '%s' (%llu bytes)", url,
                         (unsigned long long)off, (unsigned long long)(off + len), key, (unsigned long long)size);
}
static mlsys_status mlsys__xfer_synth_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                          void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  uint64_t idx;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (mlsys__xfer_synth_find(s, key, &idx)) return MLSYS_ERR_IO;
  if (off > s->size || len > s->size - off) return mlsys__xfer_range_error(s->url, key, off, len, s->size);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  mlsys_xfer_synth_fill(s->seed, key, off, len, buf);
  return MLSYS_OK;
}
static mlsys_status mlsys__xfer_synth_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                                mlsys_xfer_upload **up) {
  (void)key; (void)size; (void)pb;
  if (up) *up = NULL;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static mlsys_status mlsys__xfer_synth_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *up, int part,
                                               const void *buf, uint64_t len) {
  (void)up; (void)part; (void)buf; (void)len;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static mlsys_status mlsys__xfer_synth_commit(mlsys_xfer_store *st, mlsys_xfer_upload *up) {
  (void)up;
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: synthetic stores are read-only", ((mlsys__xfer_st *)st)->url);
}
static void mlsys__xfer_synth_abort(mlsys_xfer_store *st, mlsys_xfer_upload *up) { (void)st; (void)up; }

/* ---------------------------------------------------------------------------------------------------------------
   Listing helpers shared by every backend
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_xfer_obj *v;
  int n, cap;
} mlsys__xfer_objv;

static int mlsys__xfer_objv_push(mlsys__xfer_objv *a, char *key, uint64_t size) {
  if (a->n == a->cap) {
    int nc = a->cap ? a->cap * 2 : 64;
    mlsys_xfer_obj *q;
    if (a->cap > INT_MAX / 2) return 0;
    q = (mlsys_xfer_obj *)MLSYS_REALLOC(a->v, (size_t)nc * sizeof *q);
    if (!q) return 0;
    a->v = q;
    a->cap = nc;
  }
  a->v[a->n].key = key;
  a->v[a->n].size = size;
  a->n++;
  return 1;
}
static int mlsys__xfer_obj_cmp(const void *a, const void *b) {
  return strcmp(((const mlsys_xfer_obj *)a)->key, ((const mlsys_xfer_obj *)b)->key);
}

MLSYS_DEF void mlsys_xfer_objs_free(mlsys_xfer_obj *objs, int n) {
  int i;
  if (!objs) return;
  for (i = 0; i < n; i++) MLSYS_FREE(objs[i].key);
  MLSYS_FREE(objs);
}

/* ---------------------------------------------------------------------------------------------------------------
   file://
   --------------------------------------------------------------------------------------------------------------- */
static char *mlsys__xfer_path(const char *root, const char *key) {
  size_t nr = strlen(root), nk = strlen(key);
  char *p = (char *)mlsys_alloc(nr + nk + 2, 1);
  if (!p) return NULL;
  memcpy(p, root, nr);
  p[nr] = '/';
  memcpy(p + nr + 1, key, nk + 1);
  return p;
}

static mlsys_status mlsys__xfer_walk(mlsys__xfer_st *s, const char *dir, const char *rel, mlsys__xfer_objv *out,
                                     int depth) {
  DIR *d;
  struct dirent *e;
  mlsys_status st = MLSYS_OK;
  if (depth > 64) return mlsys_set_error(MLSYS_ERR_IO, "%s: directories nested deeper than 64 at '%s'", s->url, rel);
  d = opendir(dir);
  if (!d) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot list '%s': %s", s->url, dir, strerror(errno));
  while ((e = readdir(d)) != NULL) {
    struct stat sb;
    char *full, *key;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!strncmp(e->d_name, MLSYS__XFER_TMP_PREFIX, strlen(MLSYS__XFER_TMP_PREFIX))) continue;  /* uploads */
    full = mlsys__xfer_path(dir, e->d_name);
    key = rel[0] ? mlsys__xfer_path(rel, e->d_name) : mlsys_strdup(e->d_name);
    if (!full || !key) {
      MLSYS_FREE(full);
      MLSYS_FREE(key);
      st = MLSYS_ERR_NOMEM;
      break;
    }
    if (lstat(full, &sb) != 0) {
      if (errno != ENOENT) st = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot stat '%s': %s", s->url, full, strerror(errno));
    } else if (S_ISDIR(sb.st_mode)) {
      st = mlsys__xfer_walk(s, full, key, out, depth + 1);
    } else {
      /* a symlink counts when it points at a regular file; symlinked directories are not followed (loops) */
      int reg = S_ISREG(sb.st_mode) || (S_ISLNK(sb.st_mode) && stat(full, &sb) == 0 && S_ISREG(sb.st_mode));
      if (reg && strlen(key) <= MLSYS__XFER_KEY_MAX) {
        if (!mlsys__xfer_objv_push(out, key, (uint64_t)sb.st_size)) st = mlsys__xfer_oom();
        else key = NULL;
      }
    }
    MLSYS_FREE(full);
    MLSYS_FREE(key);
    if (st) break;
  }
  closedir(d);
  return st;
}
static mlsys_status mlsys__xfer_file_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys__xfer_objv a = {NULL, 0, 0};
  mlsys_status r;
  *objs = NULL;
  *n = 0;
  r = mlsys__xfer_walk(s, s->root, "", &a, 0);
  if (r) {
    mlsys_xfer_objs_free(a.v, a.n);
    return r;
  }
  if (a.n > 1) qsort(a.v, (size_t)a.n, sizeof *a.v, mlsys__xfer_obj_cmp);
  *objs = a.v;
  *n = a.n;
  return MLSYS_OK;
}

static mlsys_status mlsys__xfer_file_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                         void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  char *path;
  int fd;
  struct stat sb;
  uint64_t done = 0;
  mlsys_status r = MLSYS_OK;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  path = mlsys__xfer_path(s->root, key);
  if (!path) return MLSYS_ERR_NOMEM;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r = errno == ENOENT || errno == ENOTDIR
            ? mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key)
            : mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open '%s': %s", s->url, path, strerror(errno));
    MLSYS_FREE(path);
    return r;
  }
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s' (not a regular file)", s->url, key);
  } else if (off > (uint64_t)sb.st_size || len > (uint64_t)sb.st_size - off) {
    r = mlsys__xfer_range_error(s->url, key, off, len, (uint64_t)sb.st_size);
  } else {
    while (done < len) {
      size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
      ssize_t k = pread(fd, (char *)buf + done, want, (off_t)(off + done));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        r = mlsys_set_error(MLSYS_ERR_IO, "%s: reading '%s' at %llu: %s", s->url, key,
                            (unsigned long long)(off + done), k < 0 ? strerror(errno) : "file shrank while reading");
        break;
      }
      done += (uint64_t)k;
    }
  }
  close(fd);
  MLSYS_FREE(path);
  return r;
}

/* mkdir -p for the directories of `key` below the root (the root itself exists). */
static mlsys_status mlsys__xfer_mkparents(mlsys__xfer_st *s, const char *path, size_t rootlen) {
  char *p = mlsys_strdup(path), *c;
  mlsys_status r = MLSYS_OK;
  if (!p) return MLSYS_ERR_NOMEM;
  for (c = p + rootlen + 1; (c = strchr(c, '/')) != NULL; c++) {
    struct stat sb;
    *c = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, p, strerror(errno));
    } else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: '%s' exists and is not a directory", s->url, p);
    }
    *c = '/';
    if (r) break;
  }
  MLSYS_FREE(p);
  return r;
}

static int mlsys__xfer_nparts(uint64_t size, uint64_t pb, int *nparts) {
  uint64_t n;
  if (size == 0) {
    *nparts = 1;
    return 1;
  }
  if (pb == 0) return 0;
  n = size / pb + (size % pb != 0);
  if (n > (uint64_t)(INT_MAX / 2)) return 0;
  *nparts = (int)n;
  return 1;
}
static uint64_t mlsys__xfer_part_len(const mlsys_xfer_upload *u, int i) {
  uint64_t a = (uint64_t)i * u->pb, b = a + u->pb;
  if (u->size == 0) return 0;
  return (b > u->size ? u->size : b) - a;
}

static mlsys_xfer_upload *mlsys__xfer_upload_new(const char *key, uint64_t size, uint64_t pb, int nparts) {
  mlsys_xfer_upload *u = (mlsys_xfer_upload *)mlsys_calloc(1, sizeof *u);
  if (!u) return NULL;
  u->fd = -1;
  u->key = mlsys_strdup(key);
  u->got = (unsigned char *)mlsys_calloc((size_t)nparts, 1);
  u->size = size;
  u->pb = pb;
  u->nparts = nparts;
  pthread_mutex_init(&u->mu, NULL);
  if (!u->key || !u->got) {
    MLSYS_FREE(u->key);
    MLSYS_FREE(u->got);
    pthread_mutex_destroy(&u->mu);
    MLSYS_FREE(u);
    return NULL;
  }
  return u;
}
static void mlsys__xfer_upload_free(mlsys_xfer_upload *u) {
  int g;
  if (!u) return;
  if (u->gbuf)
    for (g = 0; g < u->ngroups; g++) MLSYS_FREE(u->gbuf[g]);
  if (u->etag)
    for (g = 0; g < u->ngroups; g++) MLSYS_FREE(u->etag[g]);
  MLSYS_FREE(u->gbuf);
  MLSYS_FREE(u->etag);
  MLSYS_FREE(u->gfill);
  MLSYS_FREE(u->upload_id);
  MLSYS_FREE(u->url);
  MLSYS_FREE(u->rpath);
  MLSYS_FREE(u->tmp);
  MLSYS_FREE(u->dst);
  MLSYS_FREE(u->got);
  MLSYS_FREE(u->key);
  pthread_mutex_destroy(&u->mu);
  MLSYS_FREE(u);
}

/* Common argument checks of put_begin. */
static mlsys_status mlsys__xfer_begin_check(mlsys__xfer_st *s, const char *key, uint64_t size, uint64_t pb,
                                            mlsys_xfer_upload **up, int *nparts) {
  if (!up) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_begin without an upload pointer", s->url);
  *up = NULL;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (!mlsys__xfer_nparts(size, pb, nparts))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': %llu bytes in parts of %llu bytes %s", s->url, key,
                           (unsigned long long)size, (unsigned long long)pb,
                           pb == 0 ? "(part_bytes must be > 0)" : "are too many parts");
  return MLSYS_OK;
}

/* Common checks of put_part; marks the part taken (a second put of it is an error). */
static mlsys_status mlsys__xfer_part_take(mlsys__xfer_st *s, mlsys_xfer_upload *u, int part, const void *buf,
                                          uint64_t len) {
  mlsys_status r = MLSYS_OK;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_part on a NULL upload", s->url);
  if (part < 0 || part >= u->nparts)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d out of range (the object has %d parts)", s->url,
                           u->key, part, u->nparts);
  if (len != mlsys__xfer_part_len(u, part))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d has %llu bytes, expected %llu", s->url, u->key,
                           part, (unsigned long long)len, (unsigned long long)mlsys__xfer_part_len(u, part));
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d from a NULL buffer", s->url, u->key, part);
  pthread_mutex_lock(&u->mu);
  if (u->failed)
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': an earlier part failed; abort the upload", s->url, u->key);
  else if (u->got[part])
    r = mlsys_set_error(MLSYS_ERR_ARG, "%s: put '%s': part %d was already written", s->url, u->key, part);
  else
    u->got[part] = 1;
  pthread_mutex_unlock(&u->mu);
  return r;
}
static mlsys_status mlsys__xfer_all_parts(mlsys__xfer_st *s, mlsys_xfer_upload *u) {
  int i, missing = 0, first = -1;
  if (u->failed) return mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': a part failed; nothing was written", s->url, u->key);
  if (u->size == 0) return MLSYS_OK;
  for (i = 0; i < u->nparts; i++)
    if (!u->got[i]) {
      if (first < 0) first = i;
      missing++;
    }
  if (missing)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: commit '%s': %d of %d parts missing (first: part %d); nothing was written",
                           s->url, u->key, missing, u->nparts, first);
  return MLSYS_OK;
}
static void mlsys__xfer_fail(mlsys_xfer_upload *u) {
  pthread_mutex_lock(&u->mu);
  u->failed = 1;
  pthread_mutex_unlock(&u->mu);
}

static mlsys_status mlsys__xfer_file_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                               mlsys_xfer_upload **up) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  static unsigned long counter;
  mlsys_xfer_upload *u;
  struct stat sb;
  int nparts = 0, tries;
  char *slash;
  mlsys_status r = mlsys__xfer_begin_check(s, key, size, pb, up, &nparts);
  if (r) return r;
  u = mlsys__xfer_upload_new(key, size, pb, nparts);
  if (!u) return MLSYS_ERR_NOMEM;
  u->dst = mlsys__xfer_path(s->root, key);
  if (!u->dst) goto oom;
  if ((r = mlsys__xfer_mkparents(s, u->dst, strlen(s->root))) != MLSYS_OK) goto fail;
  if (stat(u->dst, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': a directory of that name exists", s->url, key);
    goto fail;
  }
  slash = strrchr(u->dst, '/');
  for (tries = 0; tries < 100; tries++) {
    mlsys__xfer_buf b = {NULL, 0, 0};
    unsigned long c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    if (!mlsys__xfer_buf_add(&b, u->dst, (size_t)(slash - u->dst) + 1) ||
        !mlsys__xfer_buf_fmt(&b, MLSYS__XFER_TMP_PREFIX "%ld-%lu-%lx", (long)getpid(), c,
                             (unsigned long)(mlsys_now() * 1e9))) {
      mlsys__xfer_buf_free(&b);
      goto oom;
    }
    /* 0666 so that the published file gets the permissions umask gives any new file */
    u->fd = open(b.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (u->fd >= 0) {
      u->tmp = mlsys__xfer_buf_take(&b);
      break;
    }
    mlsys__xfer_buf_free(&b);
    if (errno != EEXIST) break;
  }
  if (u->fd < 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': cannot create a temporary file beside it: %s", s->url, key,
                        strerror(errno));
    goto fail;
  }
  if (size && ftruncate(u->fd, (off_t)size) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': cannot size the temporary file to %llu bytes: %s", s->url,
                        key, (unsigned long long)size, strerror(errno));
    goto fail;
  }
  *up = u;
  return MLSYS_OK;
oom:
  r = mlsys__xfer_oom();
fail:
  if (u->fd >= 0) close(u->fd);
  if (u->tmp) unlink(u->tmp);
  mlsys__xfer_upload_free(u);
  return r;
}
static mlsys_status mlsys__xfer_file_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *u, int part, const void *buf,
                                              uint64_t len) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  uint64_t done = 0, off;
  mlsys_status r = mlsys__xfer_part_take(s, u, part, buf, len);
  if (r) return r;
  off = (uint64_t)part * u->pb;
  while (done < len) {
    size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
    ssize_t k = pwrite(u->fd, (const char *)buf + done, want, (off_t)(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      mlsys__xfer_fail(u);
      return mlsys_set_error(MLSYS_ERR_IO, "%s: put '%s': writing part %d: %s", s->url, u->key, part,
                             k < 0 ? strerror(errno) : "no progress");
    }
    done += (uint64_t)k;
  }
  return MLSYS_OK;
}
static void mlsys__xfer_file_put_abort(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  (void)st;
  if (!u) return;
  if (u->fd >= 0) close(u->fd);
  if (u->tmp) unlink(u->tmp);
  mlsys__xfer_upload_free(u);
}
static mlsys_status mlsys__xfer_file_put_commit(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys_status r;
  int fd;
  char *slash;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_commit on a NULL upload", s->url);
  if ((r = mlsys__xfer_all_parts(s, u)) != MLSYS_OK) {
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  /* data first, then the name: after a crash the key holds the old object or the whole new one */
  if (fsync(u->fd) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': fsync: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  fd = u->fd;
  u->fd = -1;
  if (close(fd) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': close: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  if (rename(u->tmp, u->dst) != 0) {
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: commit '%s': rename into place: %s", s->url, u->key, strerror(errno));
    mlsys__xfer_file_put_abort(st, u);
    return r;
  }
  slash = strrchr(u->dst, '/');
  *slash = 0;
  fd = open(u->dst, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);   /* makes the rename durable; not all file systems allow it on a directory */
    close(fd);
  }
  MLSYS_FREE(u->tmp);
  u->tmp = NULL;
  mlsys__xfer_upload_free(u);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   A small XML reader for the services' answers (list pages, errors, upload ids). Well-formedness is checked as
   far as it matters here (tags balance, one root, entities valid); namespaces are ignored; DTDs are skipped and
   never expanded. The callback sees every open tag and every close tag with the text directly before it.
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__XFER_XML_DEPTH 32
typedef struct {
  char name[MLSYS__XFER_XML_DEPTH][64];   /* longer names are cut (they then match no name we look for) */
  int depth;                             /* name[depth-1] is the innermost open element */
} mlsys__xfer_xml_path;
typedef mlsys_status (*mlsys__xfer_xml_cb)(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *text,
                                           size_t tlen);

static int mlsys__xfer_xml_is(const mlsys__xfer_xml_path *p, int level, const char *name) {
  return level >= 1 && level <= p->depth && strcmp(p->name[level - 1], name) == 0;
}
static size_t mlsys__xfer_find(const char *x, size_t n, size_t from, const char *pat) {
  size_t k = strlen(pat), i;
  if (n < k) return (size_t)-1;
  for (i = from; i + k <= n; i++)
    if (x[i] == pat[0] && memcmp(x + i, pat, k) == 0) return i;
  return (size_t)-1;
}
static int mlsys__xfer_utf8(mlsys__xfer_buf *b, unsigned long c) {
  unsigned char u[4];
  size_t k;
  if (c < 0x80) { u[0] = (unsigned char)c; k = 1; }
  else if (c < 0x800) { u[0] = (unsigned char)(0xC0 | (c >> 6)); u[1] = (unsigned char)(0x80 | (c & 0x3F)); k = 2; }
  else if (c < 0x10000) {
    u[0] = (unsigned char)(0xE0 | (c >> 12)); u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (c & 0x3F)); k = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | (c >> 18)); u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)); u[3] = (unsigned char)(0x80 | (c & 0x3F)); k = 4;
  }
  return mlsys__xfer_buf_add(b, u, k);
}
static int mlsys__xfer_xml_namech(char c) {
  return c && !isspace((unsigned char)c) && c != '/' && c != '>' && c != '<' && c != '=' && c != '"' && c != '\'';
}

static mlsys_status mlsys__xfer_xml_walk(const char *x, size_t n, const char *what, mlsys__xfer_xml_cb cb, void *ctx) {
  mlsys__xfer_xml_path path;
  mlsys__xfer_buf text = {NULL, 0, 0};
  size_t i = 0;
  int seen_root = 0;
  mlsys_status r = MLSYS_OK;
  const char *err = NULL;
  path.depth = 0;
  if (n >= 3 && (unsigned char)x[0] == 0xEF && (unsigned char)x[1] == 0xBB && (unsigned char)x[2] == 0xBF) i = 3;
  while (i < n && !err && !r) {
    char c = x[i];
    if (c == 0) { err = "NUL byte"; break; }
    if (c != '<') {
      if (path.depth == 0) {
        if (!isspace((unsigned char)c)) err = "text outside the root element";
        i++;
        continue;
      }
      if (c == '&') {
        size_t j = i + 1, e;
        unsigned long v = 0;
        while (j < n && j - i < 12 && x[j] != ';') j++;
        if (j >= n || x[j] != ';') { err = "'&' without a ';'"; break; }
        e = j - i - 1;   /* entity name length */
        if (e == 2 && !memcmp(x + i + 1, "lt", 2)) v = '<';
        else if (e == 2 && !memcmp(x + i + 1, "gt", 2)) v = '>';
        else if (e == 3 && !memcmp(x + i + 1, "amp", 3)) v = '&';
        else if (e == 4 && !memcmp(x + i + 1, "quot", 4)) v = '"';
        else if (e == 4 && !memcmp(x + i + 1, "apos", 4)) v = '\'';
        else if (e >= 2 && x[i + 1] == '#') {
          size_t k = i + 2;
          int hex = x[k] == 'x' || x[k] == 'X';
          if (hex) k++;
          if (k == j) { err = "empty character reference"; break; }
          for (; k < j; k++) {
            int d = x[k] >= '0' && x[k] <= '9' ? x[k] - '0'
                    : hex && x[k] >= 'a' && x[k] <= 'f' ? x[k] - 'a' + 10
                    : hex && x[k] >= 'A' && x[k] <= 'F' ? x[k] - 'A' + 10 : -1;
            if (d < 0) break;
            v = v * (hex ? 16 : 10) + (unsigned long)d;
            if (v > 0x10FFFF) break;
          }
          if (k != j || v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { err = "bad character reference"; break; }
        } else { err = "unknown entity"; break; }
        if (!mlsys__xfer_utf8(&text, v)) { r = mlsys__xfer_oom(); break; }
        i = j + 1;
        continue;
      }
      if (!mlsys__xfer_buf_add(&text, &c, 1)) { r = mlsys__xfer_oom(); break; }
      i++;
      continue;
    }
    /* markup */
    if (n - i >= 2 && x[i + 1] == '?') {
      size_t e = mlsys__xfer_find(x, n, i + 2, "?>");
      if (e == (size_t)-1) { err = "unterminated processing instruction"; break; }
      i = e + 2;
    } else if (n - i >= 4 && !memcmp(x + i, "<!--", 4)) {
      size_t e = mlsys__xfer_find(x, n, i + 4, "-->");
      if (e == (size_t)-1) { err = "unterminated comment"; break; }
      i = e + 3;
    } else if (n - i >= 9 && !memcmp(x + i, "<![CDATA[", 9)) {
      size_t e = mlsys__xfer_find(x, n, i + 9, "]]>");
      if (path.depth == 0) { err = "CDATA outside the root element"; break; }
      if (e == (size_t)-1) { err = "unterminated CDATA section"; break; }
      if (memchr(x + i + 9, 0, e - i - 9)) { err = "NUL byte"; break; }
      if (!mlsys__xfer_buf_add(&text, x + i + 9, e - i - 9)) { r = mlsys__xfer_oom(); break; }
      i = e + 3;
    } else if (n - i >= 2 && x[i + 1] == '!') {
      int br = 0;
      size_t j = i + 2;
      if (path.depth > 0 || seen_root) { err = "declaration inside the document"; break; }
      for (; j < n; j++) {
        if (x[j] == '[') br++;
        else if (x[j] == ']') br--;
        else if (x[j] == '>' && br <= 0) break;
      }
      if (j >= n) { err = "unterminated declaration"; break; }
      i = j + 1;
    } else if (n - i >= 2 && x[i + 1] == '/') {
      size_t j = i + 2, s0 = j, nl;
      while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
      nl = j - s0;
      while (j < n && isspace((unsigned char)x[j])) j++;
      if (j >= n || x[j] != '>') { err = "malformed close tag"; break; }
      if (path.depth == 0) { err = "close tag without an open element"; break; }
      {
        const char *top = path.name[path.depth - 1];
        size_t tl = strlen(top), cut = nl < 63 ? nl : 63;
        if (nl == 0 || tl != cut || memcmp(top, x + s0, cut) != 0) { err = "close tag does not match the open element"; break; }
      }
      r = cb(ctx, &path, 0, text.p ? text.p : "", text.n);
      text.n = 0;
      path.depth--;
      i = j + 1;
    } else {
      size_t j = i + 1, s0 = j, nl;
      int self = 0;
      while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
      nl = j - s0;
      if (nl == 0) { err = "malformed tag"; break; }
      for (;;) {   /* attributes are skipped */
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n) break;
        if (x[j] == '>') break;
        if (x[j] == '/' && j + 1 < n && x[j + 1] == '>') { self = 1; j++; break; }
        if (!mlsys__xfer_xml_namech(x[j])) { j = n; break; }
        while (j < n && mlsys__xfer_xml_namech(x[j])) j++;
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n || x[j] != '=') { j = n; break; }
        j++;
        while (j < n && isspace((unsigned char)x[j])) j++;
        if (j >= n || (x[j] != '"' && x[j] != '\'')) { j = n; break; }
        {
          char q = x[j];
          const char *e = (const char *)memchr(x + j + 1, q, n - j - 1);
          if (!e) { j = n; break; }
          j = (size_t)(e - x) + 1;
        }
      }
      if (j >= n) { err = "malformed tag"; break; }
      if (path.depth == 0 && seen_root) { err = "a second root element"; break; }
      if (path.depth == MLSYS__XFER_XML_DEPTH) { err = "elements nested too deeply"; break; }
      {
        size_t cut = nl < 63 ? nl : 63;
        memcpy(path.name[path.depth], x + s0, cut);
        path.name[path.depth][cut] = 0;
      }
      path.depth++;
      seen_root = 1;
      text.n = 0;
      r = cb(ctx, &path, 1, "", 0);
      if (!r && self) {
        r = cb(ctx, &path, 0, "", 0);
        path.depth--;
      }
      i = j + 1;
    }
  }
  if (!err && !r) {
    if (path.depth > 0) err = "unterminated element";
    else if (!seen_root) err = "no root element";
  }
  mlsys__xfer_buf_free(&text);
  if (err) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: byte %zu: %s", what, i, err);
  return r;
}

/* One page of ListObjectsV2 (S3: ListBucketResult/Contents/{Key,Size}, IsTruncated, NextContinuationToken) or
   List Blobs (Azure: EnumerationResults/Blobs/Blob/{Name,Properties/Content-Length}, NextMarker). Keys are the
   service's full keys (prefix included). */
typedef struct {
  int azure;
  const char *what;
  mlsys__xfer_objv objs;
  char *key;
  uint64_t size;
  int has_key, has_size;
  int truncated;
  char *next;
} mlsys__xfer_listpage;

static void mlsys__xfer_listpage_free(mlsys__xfer_listpage *p) {
  mlsys_xfer_objs_free(p->objs.v, p->objs.n);
  p->objs.v = NULL;
  p->objs.n = p->objs.cap = 0;
  MLSYS_FREE(p->key);
  MLSYS_FREE(p->next);
  p->key = p->next = NULL;
}
static int mlsys__xfer_trim(const char **t, size_t *n) {
  while (*n && isspace((unsigned char)(*t)[0])) { (*t)++; (*n)--; }
  while (*n && isspace((unsigned char)(*t)[*n - 1])) (*n)--;
  return 1;
}
static mlsys_status mlsys__xfer_list_cb(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *t, size_t tn) {
  mlsys__xfer_listpage *L = (mlsys__xfer_listpage *)ctx;
  const char *rec = L->azure ? "Blob" : "Contents";
  int rl = L->azure ? 3 : 2;   /* depth of a record element */
  if (open) {
    if (p->depth == 1 && !mlsys__xfer_xml_is(p, 1, L->azure ? "EnumerationResults" : "ListBucketResult"))
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: unexpected root element <%s>", L->what, p->name[0]);
    if (p->depth == rl && mlsys__xfer_xml_is(p, rl, rec) && (!L->azure || mlsys__xfer_xml_is(p, 2, "Blobs"))) {
      MLSYS_FREE(L->key);
      L->key = NULL;
      L->has_key = L->has_size = 0;
    }
    return MLSYS_OK;
  }
  if (p->depth == rl + 1 && mlsys__xfer_xml_is(p, rl, rec) && mlsys__xfer_xml_is(p, rl + 1, L->azure ? "Name" : "Key")) {
    MLSYS_FREE(L->key);
    L->key = mlsys__xfer_strndup(t, tn);
    if (!L->key) return MLSYS_ERR_NOMEM;
    L->has_key = 1;
  } else if ((!L->azure && p->depth == 3 && mlsys__xfer_xml_is(p, 2, "Contents") && mlsys__xfer_xml_is(p, 3, "Size")) ||
             (L->azure && p->depth == 5 && mlsys__xfer_xml_is(p, 3, "Blob") && mlsys__xfer_xml_is(p, 4, "Properties") &&
              mlsys__xfer_xml_is(p, 5, "Content-Length"))) {
    mlsys__xfer_trim(&t, &tn);
    if (!mlsys__xfer_parse_u64(t, tn, &L->size, 0) || L->size > (uint64_t)INT64_MAX)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: object size '%.*s' is not a byte count", L->what,
                             (int)(tn > 40 ? 40 : tn), t);
    L->has_size = 1;
  } else if (p->depth == rl && mlsys__xfer_xml_is(p, rl, rec) && (!L->azure || mlsys__xfer_xml_is(p, 2, "Blobs"))) {
    if (!L->has_key || !L->has_size)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: <%s> without <%s>", L->what, rec,
                             !L->has_key ? (L->azure ? "Name" : "Key") : (L->azure ? "Content-Length" : "Size"));
    if (!mlsys__xfer_objv_push(&L->objs, L->key, L->size)) return mlsys__xfer_oom();
    L->key = NULL;
    L->has_key = L->has_size = 0;
  } else if (!L->azure && p->depth == 2 && mlsys__xfer_xml_is(p, 2, "IsTruncated")) {
    mlsys__xfer_trim(&t, &tn);
    L->truncated = tn == 4 && !memcmp(t, "true", 4);
  } else if (p->depth == 2 && mlsys__xfer_xml_is(p, 2, L->azure ? "NextMarker" : "NextContinuationToken")) {
    mlsys__xfer_trim(&t, &tn);
    MLSYS_FREE(L->next);
    L->next = tn ? mlsys__xfer_strndup(t, tn) : NULL;
    if (tn && !L->next) return MLSYS_ERR_NOMEM;
    if (L->azure) L->truncated = tn > 0;
  }
  return MLSYS_OK;
}
/* Parses one list page; on failure *page is empty. */
static mlsys_status mlsys__xfer_parse_list(const char *xml, size_t n, int azure, const char *what,
                                           mlsys__xfer_listpage *page) {
  mlsys_status r;
  memset(page, 0, sizeof *page);
  page->azure = azure;
  page->what = what;
  r = mlsys__xfer_xml_walk(xml, n, what, mlsys__xfer_list_cb, page);
  MLSYS_FREE(page->key);
  page->key = NULL;
  if (r) mlsys__xfer_listpage_free(page);
  return r;
}

/* The text of the first element `name` whose parent is `parent` (e.g. Error/Code), or NULL. */
typedef struct { const char *parent, *name; char *out; } mlsys__xfer_pick;
static mlsys_status mlsys__xfer_pick_cb(void *ctx, const mlsys__xfer_xml_path *p, int open, const char *t, size_t tn) {
  mlsys__xfer_pick *k = (mlsys__xfer_pick *)ctx;
  if (!open && !k->out && p->depth >= 2 && mlsys__xfer_xml_is(p, p->depth, k->name) &&
      mlsys__xfer_xml_is(p, p->depth - 1, k->parent)) {
    mlsys__xfer_trim(&t, &tn);
    k->out = mlsys__xfer_strndup(t, tn);
  }
  return MLSYS_OK;
}
static char *mlsys__xfer_xml_pick(const char *xml, size_t n, const char *parent, const char *name) {
  mlsys__xfer_pick k;
  char saved[1024];
  mlsys_status st = mlsys_last_status();
  k.parent = parent;
  k.name = name;
  k.out = NULL;
  snprintf(saved, sizeof saved, "%s", mlsys_last_error());
  if (mlsys__xfer_xml_walk(xml, n, "response", mlsys__xfer_pick_cb, &k) != MLSYS_OK) {
    MLSYS_FREE(k.out);
    k.out = NULL;
  }
  mlsys_set_error(st, "%s", saved);   /* picking is best effort: keep the caller's error detail */
  return k.out;
}

/* Strip the store's prefix from listed keys, drop directory markers, check the rest, sort. */
static mlsys_status mlsys__xfer_list_finish(mlsys__xfer_st *s, mlsys__xfer_objv *a) {
  size_t pl = strlen(s->prefix);
  int i, w = 0;
  mlsys_status r = MLSYS_OK;
  for (i = 0; i < a->n; i++) {
    char *k = a->v[i].key;
    size_t kl = strlen(k);
    if (r || strncmp(k, s->prefix, pl) != 0 || kl == pl || (k[kl - 1] == '/' && a->v[i].size == 0)) {
      MLSYS_FREE(k);
      continue;
    }
    if (mlsys_xfer_key_check(k + pl) != MLSYS_OK) {
      r = mlsys_set_error(MLSYS_ERR_UNSUPPORTED,
                          "%s: object '%s' has a key this library refuses (empty, '.' or '..' component, or too long)",
                          s->url, k);
      MLSYS_FREE(k);
      continue;
    }
    memmove(k, k + pl, kl - pl + 1);
    a->v[w++] = a->v[i];
  }
  a->n = w;
  if (!r && a->n > 1) qsort(a->v, (size_t)a->n, sizeof *a->v, mlsys__xfer_obj_cmp);
  return r;
}

/* ---------------------------------------------------------------------------------------------------------------
   HTTP (libcurl) shared by s3:// and azure://
   --------------------------------------------------------------------------------------------------------------- */
#ifndef MLSYS_XFER_NO_HTTP
static pthread_once_t mlsys__xfer_curl_once = PTHREAD_ONCE_INIT;
static CURLcode mlsys__xfer_curl_rc = CURLE_OK;
static void mlsys__xfer_curl_init(void) { mlsys__xfer_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Percent-encoding as SigV4 wants it (and Azure accepts): unreserved bytes stay, '/' stays when keep_slash. */
static int mlsys__xfer_enc(mlsys__xfer_buf *b, const char *s, int keep_slash) {
  static const char hx[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      if (!mlsys__xfer_buf_add(b, s, 1)) return 0;
    } else {
      char e[3];
      e[0] = '%';
      e[1] = hx[c >> 4];
      e[2] = hx[c & 15];
      if (!mlsys__xfer_buf_add(b, e, 3)) return 0;
    }
  }
  return 1;
}

typedef struct {
  mlsys__xfer_st *s;
  const char *method, *url, *key;  /* key: for messages ("" for bucket-level requests) */
  struct curl_slist *hdr;
  const char *body;
  size_t body_len;
  int has_body;
  /* a ranged GET lands here */
  char *dst;
  uint64_t dst_len, dst_got, range_off;
  int ranged;
  /* everything else (and error bodies) here, at most 64 MiB */
  mlsys__xfer_buf resp;
  CURL *h;
  long status;
  char etag[256];
  uint64_t total;       /* from Content-Range: bytes a-b/TOTAL */
  int have_total;
  int stopped;          /* the header callback ended the transfer on purpose (see there) */
  curl_off_t clen;      /* Content-Length of the answer, -1 if none */
  char cerr[CURL_ERROR_SIZE];
} mlsys__xfer_req;

static size_t mlsys__xfer_write_cb(char *p, size_t sz, size_t nm, void *ud) {
  mlsys__xfer_req *r = (mlsys__xfer_req *)ud;
  size_t n = sz * nm;
  long code = 0;
  curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
  if (r->dst && code >= 200 && code < 300) {
    size_t i = 0;
    /* a server that ignores Range answers 200 with the whole object: skip to the offset */
    uint64_t skip = code == 200 && r->ranged ? r->range_off : 0;
    for (; i < n; ) {
      uint64_t pos = r->dst_got;   /* position in the response body */
      size_t take;
      if (pos < skip) {
        uint64_t k = skip - pos;
        take = k < (uint64_t)(n - i) ? (size_t)k : n - i;
      } else {
        uint64_t at = pos - skip;
        take = n - i;
        if (at < r->dst_len) {
          uint64_t room = r->dst_len - at;
          size_t c = room < (uint64_t)take ? (size_t)room : take;
          memcpy(r->dst + at, p + i, c);
        }
      }
      r->dst_got += take;
      i += take;
    }
    return n;
  }
  if (r->resp.n + n > (64u << 20)) return 0;   /* no answer we parse is that big */
  if (!mlsys__xfer_buf_add(&r->resp, p, n)) return 0;
  return n;
}
static size_t mlsys__xfer_header_cb(char *p, size_t sz, size_t nm, void *ud) {
  mlsys__xfer_req *r = (mlsys__xfer_req *)ud;
  size_t n = sz * nm, k;
  if (n > 5 && !strncmp(p, "HTTP/", 5)) {   /* a new response (after a redirect or 100): forget the old one */
    r->etag[0] = 0;
    r->have_total = 0;
  } else if (n > 5 && !strncasecmp(p, "ETag:", 5)) {
    const char *v = p + 5;
    size_t vn = n - 5;
    mlsys__xfer_trim(&v, &vn);
    k = vn < sizeof r->etag - 1 ? vn : sizeof r->etag - 1;
    memcpy(r->etag, v, k);
    r->etag[k] = 0;
  } else if (n > 14 && !strncasecmp(p, "Content-Range:", 14)) {
    const char *sl = (const char *)memchr(p, '/', n);
    if (sl) {
      const char *v = sl + 1;
      size_t vn = n - (size_t)(v - p);
      mlsys__xfer_trim(&v, &vn);
      r->have_total = mlsys__xfer_parse_u64(v, vn, &r->total, 0);
      /* "bytes 0-0/0": no byte of the range exists, so the answer is known. Stop here: s3rver sends such a 206
         for an empty object with Content-Length 1 and no body, which would hang until the timeout. */
      if (r->have_total && r->ranged && r->total <= r->range_off) {
        r->stopped = 1;
        return 0;
      }
    }
  }
  return n;
}

static int mlsys__xfer_retryable(CURLcode c, long status) {
  return c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
         (c == CURLE_OK && (status == 500 || status == 503));
}

/* Runs the request (up to 3 attempts for transport failures and 500/503). MLSYS_OK means an HTTP answer came
   (any status); otherwise MLSYS_ERR_IO naming the endpoint. */
static mlsys_status mlsys__xfer_perform(mlsys__xfer_req *r) {
  mlsys__xfer_st *s = r->s;
  CURLcode c = CURLE_OK;
  int attempt;
  if (pthread_once(&mlsys__xfer_curl_once, mlsys__xfer_curl_init) != 0 || mlsys__xfer_curl_rc != CURLE_OK)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: curl_global_init failed", s->url);
  for (attempt = 0; attempt < 3; attempt++) {
    r->h = curl_easy_init();
    if (!r->h) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: curl_easy_init failed", s->url);
    r->resp.n = 0;
    r->dst_got = 0;
    r->status = 0;
    r->etag[0] = 0;
    r->have_total = 0;
    r->cerr[0] = 0;
    curl_easy_setopt(r->h, CURLOPT_URL, r->url);
    curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->cerr);
    curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, mlsys__xfer_write_cb);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, mlsys__xfer_header_cb);
    curl_easy_setopt(r->h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdr);
    curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!strcmp(r->method, "HEAD")) {
      curl_easy_setopt(r->h, CURLOPT_NOBODY, 1L);
    } else if (r->has_body) {
      curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body ? r->body : "");
      curl_easy_setopt(r->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
      curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcmp(r->method, "GET") != 0) {
      curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, r->method);
    }
    if (s->type == MLSYS__XFER_S3) {
      curl_easy_setopt(r->h, CURLOPT_AWS_SIGV4, s->sigv4);
      curl_easy_setopt(r->h, CURLOPT_USERNAME, s->access);
      curl_easy_setopt(r->h, CURLOPT_PASSWORD, s->secret);
    }
    r->stopped = 0;
    c = curl_easy_perform(r->h);
    if (c == CURLE_WRITE_ERROR && r->stopped) c = CURLE_OK;
    r->clen = -1;
    if (c == CURLE_OK) {
      curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
      curl_easy_getinfo(r->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->clen);
    }
    curl_easy_cleanup(r->h);
    r->h = NULL;
    if (!mlsys__xfer_retryable(c, r->status) || attempt == 2) break;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 50000000L << attempt;
      nanosleep(&ts, NULL);
    }
  }
  if (c != CURLE_OK)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: %s %s%s%s at %s failed: %s", s->url, r->method, r->key[0] ? "'" : "",
                           r->key, r->key[0] ? "'" : "", s->endpoint, r->cerr[0] ? r->cerr : curl_easy_strerror(c));
  return MLSYS_OK;
}

/* An HTTP error as MLSYS_ERR_IO (or `st`) with the service's error code and message. */
static mlsys_status mlsys__xfer_http_error(mlsys__xfer_req *r, mlsys_status st, const char *what) {
  char *code = NULL, *msg = NULL;
  mlsys_status out;
  if (r->resp.n) {
    code = mlsys__xfer_xml_pick(r->resp.p, r->resp.n, "Error", "Code");
    msg = mlsys__xfer_xml_pick(r->resp.p, r->resp.n, "Error", "Message");
  }
  out = mlsys_set_error(st, "%s: %s %s%s%s at %s: HTTP %ld%s%s%s%.200s%s", r->s->url, what ? what : r->method,
                        r->key[0] ? "'" : "", r->key, r->key[0] ? "'" : "", r->s->endpoint, r->status,
                        code ? " " : "", code ? code : "", msg ? " (" : "", msg ? msg : "", msg ? ")" : "");
  MLSYS_FREE(code);
  MLSYS_FREE(msg);
  return out;
}

static void mlsys__xfer_req_init(mlsys__xfer_req *r, mlsys__xfer_st *s, const char *method, const char *url,
                                 const char *key) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->method = method;
  r->url = url;
  r->key = key ? key : "";
}
static void mlsys__xfer_req_done(mlsys__xfer_req *r) {
  curl_slist_free_all(r->hdr);
  r->hdr = NULL;
  mlsys__xfer_buf_free(&r->resp);
}
static int mlsys__xfer_hdr(mlsys__xfer_req *r, const char *h) {
  struct curl_slist *n = curl_slist_append(r->hdr, h);
  if (!n) return 0;
  r->hdr = n;
  return 1;
}

/* ---- signing ---- */
static void mlsys__xfer_hex(const unsigned char *d, size_t n, char *out) {
  static const char hx[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) {
    out[2 * i] = hx[d[i] >> 4];
    out[2 * i + 1] = hx[d[i] & 15];
  }
  out[2 * n] = 0;
}
/* S3: the payload's SHA-256 in x-amz-content-sha256. libcurl's SigV4 either takes the header's value or hashes
   the body itself, depending on its version; with the true hash both agree and S3 can check the payload.
   No "Expect:" to suppress 100-continue here: libcurl 7.88 lists such a removed header among the signed headers
   without sending it, and S3 would reject the signature (tests/test_xfer_store.c checks every signature). */
static mlsys_status mlsys__xfer_s3_headers(mlsys__xfer_req *r) {
  unsigned char d[32];
  char h[96];
  SHA256((const unsigned char *)(r->body ? r->body : ""), r->has_body ? r->body_len : 0, d);
  memcpy(h, "x-amz-content-sha256: ", 22);
  mlsys__xfer_hex(d, 32, h + 22);
  if (!mlsys__xfer_hdr(r, h) ||
      (r->has_body && !mlsys__xfer_hdr(r, "Content-Type: application/octet-stream")))
    return mlsys__xfer_oom();
  return MLSYS_OK;
}

/* Azure SharedKey: HMAC-SHA256 over the verb, the standard headers, the x-ms-* headers and the canonicalized
   resource ("/account/path" + sorted "name:value" query lines, values decoded). */
typedef struct { const char *name, *value; } mlsys__xfer_kv;
static int mlsys__xfer_kv_cmp(const void *a, const void *b) {
  return strcmp(((const mlsys__xfer_kv *)a)->name, ((const mlsys__xfer_kv *)b)->name);
}
static mlsys_status mlsys__xfer_az_sign(mlsys__xfer_req *r, const char *rpath, mlsys__xfer_kv *q, int nq,
                                        const char *range, const char *blob_type) {
  static const char *wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  mlsys__xfer_st *s = r->s;
  mlsys__xfer_buf sts = {NULL, 0, 0}, h = {NULL, 0, 0};
  char date[64], clen[32];
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int maclen = 0;
  unsigned char b64[128];
  time_t now = time(NULL);
  struct tm tmv;
  int i, ok;
  gmtime_r(&now, &tmv);
  snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tmv.tm_wday], tmv.tm_mday, mo[tmv.tm_mon],
           tmv.tm_year + 1900, tmv.tm_hour, tmv.tm_min, tmv.tm_sec);
  clen[0] = 0;
  if (r->has_body && r->body_len) snprintf(clen, sizeof clen, "%zu", r->body_len);
  if (nq > 1) qsort(q, (size_t)nq, sizeof *q, mlsys__xfer_kv_cmp);
  ok = mlsys__xfer_buf_str(&sts, r->method) && mlsys__xfer_buf_str(&sts, "\n\n\n") &&   /* encoding, language */
       mlsys__xfer_buf_str(&sts, clen) && mlsys__xfer_buf_str(&sts, "\n\n") &&          /* length, md5 */
       mlsys__xfer_buf_str(&sts, r->has_body ? "application/octet-stream" : "") &&
       mlsys__xfer_buf_str(&sts, "\n\n\n\n\n\n") &&                                    /* date .. unmodified */
       mlsys__xfer_buf_str(&sts, "\n");                                                /* Range (x-ms-range used) */
  if (ok && blob_type) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-blob-type:%s\n", blob_type);
  if (ok) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-date:%s\n", date);
  if (ok && range) ok = mlsys__xfer_buf_fmt(&sts, "x-ms-range:%s\n", range);
  if (ok) ok = mlsys__xfer_buf_str(&sts, "x-ms-version:2021-08-06\n") && mlsys__xfer_buf_str(&sts, rpath);
  for (i = 0; ok && i < nq; i++)
    ok = mlsys__xfer_buf_fmt(&sts, "\n%s:", q[i].name) && mlsys__xfer_buf_str(&sts, q[i].value);
  if (!ok) goto oom;
  if (!HMAC(EVP_sha256(), s->azkey, s->azkey_len, (const unsigned char *)sts.p, sts.n, mac, &maclen)) {
    mlsys__xfer_buf_free(&sts);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: HMAC-SHA256 failed", s->url);
  }
  EVP_EncodeBlock(b64, mac, (int)maclen);
  mlsys__xfer_buf_free(&sts);
  ok = mlsys__xfer_buf_fmt(&h, "Authorization: SharedKey %s:%s", s->access, (const char *)b64) &&
       mlsys__xfer_hdr(r, h.p);
  h.n = 0;
  ok = ok && mlsys__xfer_buf_fmt(&h, "x-ms-date: %s", date) && mlsys__xfer_hdr(r, h.p) &&
       mlsys__xfer_hdr(r, "x-ms-version: 2021-08-06") && mlsys__xfer_hdr(r, "Expect:");
  if (ok && range) {
    h.n = 0;
    ok = mlsys__xfer_buf_fmt(&h, "x-ms-range: %s", range) && mlsys__xfer_hdr(r, h.p);
  }
  if (ok && blob_type) {
    h.n = 0;
    ok = mlsys__xfer_buf_fmt(&h, "x-ms-blob-type: %s", blob_type) && mlsys__xfer_hdr(r, h.p);
  }
  if (ok && r->has_body) ok = mlsys__xfer_hdr(r, "Content-Type: application/octet-stream");
  mlsys__xfer_buf_free(&h);
  if (!ok) return mlsys__xfer_oom();
  return MLSYS_OK;
oom:
  mlsys__xfer_buf_free(&sts);
  mlsys__xfer_buf_free(&h);
  return mlsys__xfer_oom();
}

/* URL of an object: base + "/" + encoded(prefix + key) [+ "?" + query]; *rpath gets the Azure canonical path. */
static char *mlsys__xfer_obj_url(mlsys__xfer_st *s, const char *key, char **rpath) {
  mlsys__xfer_buf b = {NULL, 0, 0}, e = {NULL, 0, 0};
  if (rpath) *rpath = NULL;
  if (!mlsys__xfer_enc(&e, s->prefix, 1) || !mlsys__xfer_enc(&e, key, 1) || !mlsys__xfer_buf_str(&b, s->base) ||
      !mlsys__xfer_buf_str(&b, "/") || !mlsys__xfer_buf_str(&b, e.p)) {
    mlsys__xfer_buf_free(&b);
    mlsys__xfer_buf_free(&e);
    return NULL;
  }
  if (rpath) {
    mlsys__xfer_buf rp = {NULL, 0, 0};
    if (!mlsys__xfer_buf_str(&rp, s->auth_path) || !mlsys__xfer_buf_str(&rp, "/") || !mlsys__xfer_buf_str(&rp, e.p)) {
      mlsys__xfer_buf_free(&rp);
      mlsys__xfer_buf_free(&b);
      mlsys__xfer_buf_free(&e);
      return NULL;
    }
    *rpath = mlsys__xfer_buf_take(&rp);
  }
  mlsys__xfer_buf_free(&e);
  return mlsys__xfer_buf_take(&b);
}
/* url + "?" + sorted, encoded query (SigV4 wants it canonical; empty values keep their '='). */
static char *mlsys__xfer_with_query(const char *url, mlsys__xfer_kv *q, int nq) {
  mlsys__xfer_buf b = {NULL, 0, 0};
  int i, ok;
  if (nq > 1) qsort(q, (size_t)nq, sizeof *q, mlsys__xfer_kv_cmp);
  ok = mlsys__xfer_buf_str(&b, url);
  for (i = 0; ok && i < nq; i++)
    ok = mlsys__xfer_buf_str(&b, i ? "&" : "?") && mlsys__xfer_enc(&b, q[i].name, 0) && mlsys__xfer_buf_str(&b, "=") &&
         mlsys__xfer_enc(&b, q[i].value, 0);
  if (!ok) {
    mlsys__xfer_buf_free(&b);
    return NULL;
  }
  return mlsys__xfer_buf_take(&b);
}

/* Sends one request: builds the URL from base_url + query, signs, performs. The caller inspects r->status. */
static mlsys_status mlsys__xfer_send(mlsys__xfer_req *r, const char *base_url, const char *rpath, mlsys__xfer_kv *q,
                                     int nq, const char *range, const char *blob_type) {
  mlsys_status st;
  char *url = mlsys__xfer_with_query(base_url, q, nq);
  char hb[96];
  if (!url) return mlsys__xfer_oom();
  r->url = url;
  if (r->s->type == MLSYS__XFER_S3) {
    st = mlsys__xfer_s3_headers(r);
    if (!st && range) {
      snprintf(hb, sizeof hb, "Range: %s", range);
      if (!mlsys__xfer_hdr(r, hb)) st = mlsys__xfer_oom();
    }
  } else {
    st = mlsys__xfer_az_sign(r, rpath, q, nq, range, blob_type);
  }
  if (!st) st = mlsys__xfer_perform(r);
  r->url = NULL;
  MLSYS_FREE(url);
  return st;
}

/* ---- list ---- */
static mlsys_status mlsys__xfer_http_list(mlsys_xfer_store *st, mlsys_xfer_obj **objs, int *n) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, pages = 0;
  mlsys__xfer_objv all = {NULL, 0, 0};
  char *token = NULL;
  mlsys_status r = MLSYS_OK;
  *objs = NULL;
  *n = 0;
  for (;;) {
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[6];
    mlsys__xfer_listpage page;
    char what[64];
    int nq = 0, i;
    if (az) {
      kv[nq].name = "restype"; kv[nq++].value = "container";
      kv[nq].name = "comp"; kv[nq++].value = "list";
      kv[nq].name = "maxresults"; kv[nq++].value = "5000";
      if (token) { kv[nq].name = "marker"; kv[nq++].value = token; }
    } else {
      kv[nq].name = "list-type"; kv[nq++].value = "2";
      kv[nq].name = "max-keys"; kv[nq++].value = "1000";
      if (token) { kv[nq].name = "continuation-token"; kv[nq++].value = token; }
    }
    if (s->prefix[0]) { kv[nq].name = "prefix"; kv[nq++].value = s->prefix; }
    mlsys__xfer_req_init(&q, s, "GET", NULL, "");
    r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, nq, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "list");
    pages++;
    snprintf(what, sizeof what, "%s list response page %d", az ? "azure" : "s3", pages);
    if (!r) r = mlsys__xfer_parse_list(q.resp.p ? q.resp.p : "", q.resp.n, az, what, &page);
    mlsys__xfer_req_done(&q);
    if (r) {
      if (r == MLSYS_ERR_PARSE) mlsys_prefix_error("%s", s->url);
      break;
    }
    for (i = 0; i < page.objs.n && !r; i++) {
      if (!mlsys__xfer_objv_push(&all, page.objs.v[i].key, page.objs.v[i].size)) r = mlsys__xfer_oom();
      else page.objs.v[i].key = NULL;
    }
    if (!r && page.truncated && (!page.next || (token && !strcmp(token, page.next))))
      r = mlsys_set_error(MLSYS_ERR_PARSE, "%s: list page %d is truncated but gives no new continuation token", s->url,
                          pages);
    MLSYS_FREE(token);
    token = NULL;
    if (!r && page.truncated) {
      token = page.next;
      page.next = NULL;
    }
    mlsys__xfer_listpage_free(&page);
    if (r || !token) break;
  }
  MLSYS_FREE(token);
  if (!r) r = mlsys__xfer_list_finish(s, &all);
  if (r) {
    mlsys_xfer_objs_free(all.v, all.n);
    return r;
  }
  *objs = all.v;
  *n = all.n;
  return MLSYS_OK;
}

/* Size of an object by HEAD (Azure: Get Blob Properties); MLSYS_ERR_IO "no such object" when absent. */
static mlsys_status mlsys__xfer_http_size(mlsys__xfer_st *s, const char *key, uint64_t *size) {
  mlsys__xfer_req q;
  char *rpath = NULL, *url = mlsys__xfer_obj_url(s, key, s->type == MLSYS__XFER_AZURE ? &rpath : NULL);
  mlsys_status r;
  if (!url) return mlsys__xfer_oom();
  mlsys__xfer_req_init(&q, s, "HEAD", NULL, key);
  r = mlsys__xfer_send(&q, url, rpath, NULL, 0, NULL, NULL);
  if (!r && q.status == 404) r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
  else if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, NULL);
  else if (!r && q.clen < 0)
    r = mlsys_set_error(MLSYS_ERR_IO, "%s: HEAD '%s' at %s gave no Content-Length", s->url, key, s->endpoint);
  if (!r) *size = (uint64_t)q.clen;
  mlsys__xfer_req_done(&q);
  MLSYS_FREE(url);
  MLSYS_FREE(rpath);
  return r;
}

/* ---- get ---- */
static mlsys_status mlsys__xfer_http_get(mlsys_xfer_store *st, const char *key, uint64_t off, uint64_t len,
                                         void *buf) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  mlsys__xfer_req q;
  char *rpath = NULL, *url;
  char range[96];
  mlsys_status r;
  uint64_t size;
  if (mlsys_xfer_key_check(key)) return mlsys_prefix_error("%s", s->url);
  if (len && !buf) return mlsys_set_error(MLSYS_ERR_ARG, "%s: get_range of '%s' into a NULL buffer", s->url, key);
  if (len == 0) {   /* an empty range is no HTTP range: check that the object exists and is long enough */
    if ((r = mlsys__xfer_http_size(s, key, &size)) != MLSYS_OK) return r;
    if (off > size) return mlsys__xfer_range_error(s->url, key, off, len, size);
    return MLSYS_OK;
  }
  if (off > UINT64_MAX - len) return mlsys__xfer_range_error(s->url, key, off, len, 0);
  url = mlsys__xfer_obj_url(s, key, s->type == MLSYS__XFER_AZURE ? &rpath : NULL);
  if (!url) return mlsys__xfer_oom();
  snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)off, (unsigned long long)(off + len - 1));
  mlsys__xfer_req_init(&q, s, "GET", NULL, key);
  q.dst = (char *)buf;
  q.dst_len = len;
  q.range_off = off;
  q.ranged = 1;
  r = mlsys__xfer_send(&q, url, rpath, NULL, 0, range, NULL);
  if (!r) {
    if (q.status == 404) {
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: no such object '%s'", s->url, key);
    } else if (q.status == 416) {
      r = mlsys__xfer_http_size(s, key, &size);
      if (!r) r = mlsys__xfer_range_error(s->url, key, off, len, size);
    } else if (q.status != 200 && q.status != 206) {
      r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, NULL);
    } else {
      uint64_t got = q.status == 200 ? (q.dst_got > off ? q.dst_got - off : 0) : q.dst_got;
      if (got < len) {
        /* the object ends inside the range (206 with fewer bytes, or a whole 200 body that is too short) */
        size = q.have_total ? q.total : (q.status == 200 ? q.dst_got : off + got);
        r = mlsys__xfer_range_error(s->url, key, off, len, size);
      }
    }
  }
  mlsys__xfer_req_done(&q);
  MLSYS_FREE(url);
  MLSYS_FREE(rpath);
  return r;
}

/* ---- put ---- */
static mlsys_status mlsys__xfer_http_put_begin(mlsys_xfer_store *st, const char *key, uint64_t size, uint64_t pb,
                                               mlsys_xfer_upload **up) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, nparts = 0, maxg = az ? 50000 : 10000;
  uint64_t minpart = az ? 0 : MLSYS_XFER_S3_MIN_PART;
  mlsys_xfer_upload *u;
  mlsys_status r = mlsys__xfer_begin_check(s, key, size, pb, up, &nparts);
  if (r) return r;
  u = mlsys__xfer_upload_new(key, size, pb, nparts);
  if (!u) return MLSYS_ERR_NOMEM;
  u->url = mlsys__xfer_obj_url(s, key, az ? &u->rpath : NULL);
  if (!u->url) goto oom;
  u->m = pb >= minpart || size == 0 ? 1 : (int)((minpart + pb - 1) / pb);
  if ((nparts + u->m - 1) / u->m > maxg) u->m = (nparts + maxg - 1) / maxg;
  u->ngroups = (nparts + u->m - 1) / u->m;
  if (size <= MLSYS_XFER_SINGLE_PUT_MAX) {   /* one request instead of create + parts + complete */
    u->single = 1;
    u->m = nparts > 0 ? nparts : 1;
    u->ngroups = 1;
  }
  u->gfill = (uint64_t *)mlsys_calloc((size_t)u->ngroups, sizeof *u->gfill);
  u->gbuf = (char **)mlsys_calloc((size_t)u->ngroups, sizeof *u->gbuf);
  u->etag = (char **)mlsys_calloc((size_t)u->ngroups, sizeof *u->etag);
  if (!u->gfill || !u->gbuf || !u->etag) goto oom;
  if (!u->single && !az) {   /* CreateMultipartUpload */
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[1];
    kv[0].name = "uploads";
    kv[0].value = "";
    mlsys__xfer_req_init(&q, s, "POST", NULL, key);
    q.has_body = 1;
    r = mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CreateMultipartUpload");
    if (!r) {
      u->upload_id = mlsys__xfer_xml_pick(q.resp.p ? q.resp.p : "", q.resp.n, "InitiateMultipartUploadResult", "UploadId");
      if (!u->upload_id || !u->upload_id[0])
        r = mlsys_set_error(MLSYS_ERR_IO, "%s: CreateMultipartUpload of '%s' at %s gave no UploadId", s->url, key,
                            s->endpoint);
    }
    mlsys__xfer_req_done(&q);
    if (r) goto fail;
  }
  *up = u;
  return MLSYS_OK;
oom:
  r = mlsys__xfer_oom();
fail:
  mlsys__xfer_upload_free(u);
  return r;
}

static void mlsys__xfer_blockid(int g, char *out /* 32 bytes */) {
  char raw[32];
  snprintf(raw, sizeof raw, "mlsys-block-%06d", g);   /* 18 bytes → 24 base64 characters, no padding */
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)raw, 18);
}

/* Uploads group g (S3 part g+1, Azure block g). */
static mlsys_status mlsys__xfer_send_group(mlsys__xfer_st *s, mlsys_xfer_upload *u, int g, const char *data,
                                           uint64_t len) {
  mlsys__xfer_req q;
  mlsys__xfer_kv kv[2];
  char num[32], bid[40];
  mlsys_status r;
  mlsys__xfer_req_init(&q, s, "PUT", NULL, u->key);
  q.has_body = 1;
  q.body = data;
  q.body_len = (size_t)len;
  if (s->type == MLSYS__XFER_AZURE) {
    mlsys__xfer_blockid(g, bid);
    kv[0].name = "comp"; kv[0].value = "block";
    kv[1].name = "blockid"; kv[1].value = bid;
    r = mlsys__xfer_send(&q, u->url, u->rpath, kv, 2, NULL, NULL);
    if (!r && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "Put Block");
  } else {
    snprintf(num, sizeof num, "%d", g + 1);
    kv[0].name = "partNumber"; kv[0].value = num;
    kv[1].name = "uploadId"; kv[1].value = u->upload_id;
    r = mlsys__xfer_send(&q, u->url, NULL, kv, 2, NULL, NULL);
    if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "UploadPart");
    if (!r && !q.etag[0])
      r = mlsys_set_error(MLSYS_ERR_IO, "%s: UploadPart %d of '%s' at %s returned no ETag", s->url, g + 1, u->key,
                          s->endpoint);
    if (!r) {
      pthread_mutex_lock(&u->mu);
      MLSYS_FREE(u->etag[g]);
      u->etag[g] = mlsys_strdup(q.etag);
      if (!u->etag[g]) r = MLSYS_ERR_NOMEM;
      pthread_mutex_unlock(&u->mu);
    }
  }
  mlsys__xfer_req_done(&q);
  if (r) mlsys__xfer_fail(u);
  else
    mlsys_log(MLSYS_LOG_DEBUG, "%s: %s %d of '%s': %llu bytes", s->url,
              s->type == MLSYS__XFER_AZURE ? "Put Block" : "UploadPart", g + 1, u->key, (unsigned long long)len);
  return r;
}

static uint64_t mlsys__xfer_group_len(const mlsys_xfer_upload *u, int g) {
  uint64_t a = (uint64_t)g * (uint64_t)u->m * u->pb, b = a + (uint64_t)u->m * u->pb;
  if (u->size == 0) return 0;
  return (b > u->size ? u->size : b) - a;
}

static mlsys_status mlsys__xfer_http_put_part(mlsys_xfer_store *st, mlsys_xfer_upload *u, int part, const void *buf,
                                              uint64_t len) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int g;
  uint64_t glen, at;
  char *gb;
  int complete;
  mlsys_status r = mlsys__xfer_part_take(s, u, part, buf, len);
  if (r) return r;
  if (u->size == 0) return MLSYS_OK;
  g = part / u->m;
  if (u->m == 1 && !u->single) return mlsys__xfer_send_group(s, u, g, (const char *)buf, len);
  glen = mlsys__xfer_group_len(u, g);
  at = (uint64_t)(part - g * u->m) * u->pb;
  pthread_mutex_lock(&u->mu);
  if (!u->gbuf[g]) u->gbuf[g] = (char *)mlsys_alloc((size_t)glen, 1);
  gb = u->gbuf[g];
  if (!gb) {
    u->got[part] = 0;
    pthread_mutex_unlock(&u->mu);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: put '%s': out of memory buffering %llu bytes", s->url, u->key,
                           (unsigned long long)glen);
  }
  pthread_mutex_unlock(&u->mu);
  memcpy(gb + at, buf, (size_t)len);   /* parts of a group cover disjoint bytes */
  pthread_mutex_lock(&u->mu);
  u->gfill[g] += len;
  complete = u->gfill[g] == glen;
  pthread_mutex_unlock(&u->mu);
  if (!complete || u->single) return MLSYS_OK;
  r = mlsys__xfer_send_group(s, u, g, gb, glen);
  pthread_mutex_lock(&u->mu);
  MLSYS_FREE(u->gbuf[g]);
  u->gbuf[g] = NULL;
  pthread_mutex_unlock(&u->mu);
  return r;
}

static void mlsys__xfer_http_put_abort(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  if (!u) return;
  if (u->upload_id) {   /* best effort; a failure leaves invisible parts behind */
    mlsys__xfer_req q;
    mlsys__xfer_kv kv[1];
    char saved[1024];
    mlsys_status ls = mlsys_last_status();
    snprintf(saved, sizeof saved, "%s", mlsys_last_error());
    kv[0].name = "uploadId";
    kv[0].value = u->upload_id;
    mlsys__xfer_req_init(&q, s, "DELETE", NULL, u->key);
    if (mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL) == MLSYS_OK && q.status != 204 && q.status != 200)
      mlsys_log(MLSYS_LOG_DEBUG, "%s: AbortMultipartUpload of '%s' answered HTTP %ld", s->url, u->key, q.status);
    mlsys__xfer_req_done(&q);
    mlsys_set_error(ls, "%s", saved);
  }
  mlsys__xfer_upload_free(u);
}

static mlsys_status mlsys__xfer_http_put_commit(mlsys_xfer_store *st, mlsys_xfer_upload *u) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  int az = s->type == MLSYS__XFER_AZURE, g;
  mlsys__xfer_req q;
  mlsys__xfer_buf body = {NULL, 0, 0};
  mlsys__xfer_kv kv[1];
  mlsys_status r;
  if (!u) return mlsys_set_error(MLSYS_ERR_ARG, "%s: put_commit on a NULL upload", s->url);
  if ((r = mlsys__xfer_all_parts(s, u)) != MLSYS_OK) {
    mlsys__xfer_http_put_abort(st, u);
    return r;
  }
  mlsys__xfer_req_init(&q, s, "PUT", NULL, u->key);
  q.has_body = 1;
  if (u->single) {
    q.body = u->gbuf[0];
    q.body_len = (size_t)u->size;
    r = mlsys__xfer_send(&q, u->url, u->rpath, NULL, 0, NULL, az ? "BlockBlob" : NULL);
    if (!r && q.status != 200 && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Put Blob" : "PUT");
  } else if (az) {
    int ok = mlsys__xfer_buf_str(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for (g = 0; ok && g < u->ngroups; g++) {
      char bid[40];
      mlsys__xfer_blockid(g, bid);
      ok = mlsys__xfer_buf_fmt(&body, "<Latest>%s</Latest>", bid);
    }
    ok = ok && mlsys__xfer_buf_str(&body, "</BlockList>");
    if (!ok) r = mlsys__xfer_oom();
    else {
      kv[0].name = "comp";
      kv[0].value = "blocklist";
      q.body = body.p;
      q.body_len = body.n;
      r = mlsys__xfer_send(&q, u->url, u->rpath, kv, 1, NULL, NULL);
      if (!r && q.status != 201) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "Put Block List");
    }
  } else {
    int ok = mlsys__xfer_buf_str(&body, "<CompleteMultipartUpload>");
    for (g = 0; ok && g < u->ngroups; g++) {
      const char *e = u->etag[g] ? u->etag[g] : "";
      ok = mlsys__xfer_buf_fmt(&body, "<Part><PartNumber>%d</PartNumber><ETag>", g + 1);
      for (; ok && *e; e++)   /* ETags are quoted hex; escape anyway */
        ok = *e == '&' ? mlsys__xfer_buf_str(&body, "&amp;") : *e == '<' ? mlsys__xfer_buf_str(&body, "&lt;")
                                                             : mlsys__xfer_buf_add(&body, e, 1);
      ok = ok && mlsys__xfer_buf_str(&body, "</ETag></Part>");
    }
    ok = ok && mlsys__xfer_buf_str(&body, "</CompleteMultipartUpload>");
    if (!ok) r = mlsys__xfer_oom();
    else {
      kv[0].name = "uploadId";
      kv[0].value = u->upload_id;
      q.method = "POST";
      q.body = body.p;
      q.body_len = body.n;
      r = mlsys__xfer_send(&q, u->url, NULL, kv, 1, NULL, NULL);
      if (!r && q.status != 200) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CompleteMultipartUpload");
      /* S3 may answer 200 and still fail: the error is then in the body */
      if (!r && q.resp.n && mlsys__xfer_find(q.resp.p, q.resp.n, 0, "<Error>") != (size_t)-1)
        r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, "CompleteMultipartUpload");
    }
  }
  mlsys__xfer_req_done(&q);
  mlsys__xfer_buf_free(&body);
  if (r) {
    mlsys__xfer_http_put_abort(st, u);
    return r;
  }
  mlsys_log(MLSYS_LOG_DEBUG, "%s: committed '%s' (%llu bytes) by %s", s->url, u->key, (unsigned long long)u->size,
            u->single ? (az ? "Put Blob" : "one PUT") : (az ? "Put Block List" : "CompleteMultipartUpload"));
  mlsys__xfer_upload_free(u);
  return MLSYS_OK;
}

/* Bucket / container: check that it exists; create it when asked. */
static mlsys_status mlsys__xfer_http_bucket(mlsys__xfer_st *s, int create) {
  int az = s->type == MLSYS__XFER_AZURE;
  mlsys__xfer_req q;
  mlsys__xfer_kv kv[1];
  mlsys_status r;
  long status;
  kv[0].name = "restype";
  kv[0].value = "container";
  mlsys__xfer_req_init(&q, s, az ? "GET" : "HEAD", NULL, "");
  r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, az ? 1 : 0, NULL, NULL);
  status = q.status;
  if (!r && status != 200 && status != 404) r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Get Container Properties" : "HeadBucket");
  mlsys__xfer_req_done(&q);
  if (r || status == 200) return r;
  if (!create)
    return mlsys_set_error(MLSYS_ERR_IO, "%s: %s '%s' does not exist at %s (set create_bucket to create it)", s->url,
                           az ? "container" : "bucket", s->bucket, s->endpoint);
  mlsys__xfer_req_init(&q, s, "PUT", NULL, "");
  q.has_body = 1;
  {
    char cfg[256];
    if (!az && strcmp(s->region, "us-east-1") != 0) {   /* us-east-1 is the only region that takes no body */
      snprintf(cfg, sizeof cfg,
               "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
               "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>", s->region);
      q.body = cfg;
      q.body_len = strlen(cfg);
    }
    r = mlsys__xfer_send(&q, s->base, s->auth_path, kv, az ? 1 : 0, NULL, NULL);
  }
  if (!r && q.status != 200 && q.status != 201 && q.status != 409)
    r = mlsys__xfer_http_error(&q, MLSYS_ERR_IO, az ? "Create Container" : "CreateBucket");
  mlsys__xfer_req_done(&q);
  return r;
}
#endif /* MLSYS_XFER_NO_HTTP */

/* ---------------------------------------------------------------------------------------------------------------
   Opening
   --------------------------------------------------------------------------------------------------------------- */
static void mlsys__xfer_close(mlsys_xfer_store *st) {
  mlsys__xfer_st *s = (mlsys__xfer_st *)st;
  if (!s) return;
  MLSYS_FREE(s->url);
  MLSYS_FREE(s->root);
  MLSYS_FREE(s->endpoint);
  MLSYS_FREE(s->bucket);
  MLSYS_FREE(s->prefix);
  MLSYS_FREE(s->base);
  MLSYS_FREE(s->auth_path);
  MLSYS_FREE(s->access);
  MLSYS_FREE(s->secret);
  MLSYS_FREE(s);
}
MLSYS_DEF void mlsys_xfer_store_close(mlsys_xfer_store *s) {
  if (s && s->close) s->close(s);
}

static mlsys_status mlsys__xfer_open_file(mlsys__xfer_st *s, const char *rest, const mlsys_xfer_store_opts *o) {
  struct stat sb;
  size_t n = strlen(rest);
  if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: no directory after file://", s->url);
  s->root = mlsys_strdup(rest);
  if (!s->root) return MLSYS_ERR_NOMEM;
  while (n > 1 && s->root[n - 1] == '/') s->root[--n] = 0;
  if (stat(s->root, &sb) != 0) {
    if (errno == ENOENT && o->create_bucket) {
      char *c;
      for (c = s->root + 1; (c = strchr(c, '/')) != NULL; c++) {
        *c = 0;
        if (mkdir(s->root, 0777) != 0 && errno != EEXIST) {
          mlsys_status r = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, s->root,
                                           strerror(errno));
          *c = '/';
          return r;
        }
        *c = '/';
      }
      if (mkdir(s->root, 0777) != 0 && errno != EEXIST)
        return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create directory '%s': %s", s->url, s->root, strerror(errno));
      if (stat(s->root, &sb) != 0)
        return mlsys_set_error(MLSYS_ERR_IO, "%s: '%s': %s", s->url, s->root, strerror(errno));
    } else {
      return mlsys_set_error(MLSYS_ERR_IO, "%s: directory '%s' %s", s->url, s->root,
                             errno == ENOENT ? "does not exist (set create_bucket to create it)" : strerror(errno));
    }
  }
  if (!S_ISDIR(sb.st_mode)) return mlsys_set_error(MLSYS_ERR_ARG, "%s: '%s' is not a directory", s->url, s->root);
  s->pub.list = mlsys__xfer_file_list;
  s->pub.get_range = mlsys__xfer_file_get;
  s->pub.put_begin = mlsys__xfer_file_put_begin;
  s->pub.put_part = mlsys__xfer_file_put_part;
  s->pub.put_commit = mlsys__xfer_file_put_commit;
  s->pub.put_abort = mlsys__xfer_file_put_abort;
  return MLSYS_OK;
}

static mlsys_status mlsys__xfer_open_synth(mlsys__xfer_st *s, const char *rest) {
  const char *c1 = strchr(rest, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  uint64_t v;
  if (!c1) return mlsys_set_error(MLSYS_ERR_ARG, "%s: expected synthetic://N:SIZE[:SEED]", s->url);
  if (!mlsys__xfer_parse_u64(rest, (size_t)(c1 - rest), &s->n, 0) || s->n > 100000000ull)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: object count '%.*s' is not an integer in [0, 100000000]", s->url,
                           (int)(c1 - rest), rest);
  if (!mlsys__xfer_parse_u64(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1), &s->size, 1) ||
      s->size > (uint64_t)INT64_MAX)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: object size '%.*s' is not a byte count (integer, suffix K/M/G/T)",
                           s->url, (int)(c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)), c1 + 1);
  if (c2 && !mlsys__xfer_parse_u64(c2 + 1, strlen(c2 + 1), &s->seed, 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: seed '%s' is not an unsigned integer", s->url, c2 + 1);
  s->width = 5;
  for (v = s->n ? s->n - 1 : 0; v >= 100000; v /= 10) s->width++;   /* keys sort as numbers */
  s->pub.list = mlsys__xfer_synth_list;
  s->pub.get_range = mlsys__xfer_synth_get;
  s->pub.put_begin = mlsys__xfer_synth_put_begin;
  s->pub.put_part = mlsys__xfer_synth_put_part;
  s->pub.put_commit = mlsys__xfer_synth_commit;
  s->pub.put_abort = mlsys__xfer_synth_abort;
  return MLSYS_OK;
}

/* bucket[/prefix] → s->bucket, s->prefix ("" or "p/q/") */
static mlsys_status mlsys__xfer_bucket_prefix(mlsys__xfer_st *s, const char *rest, int az) {
  const char *sl = strchr(rest, '/');
  size_t bl = sl ? (size_t)(sl - rest) : strlen(rest), i;
  const char *what = az ? "container" : "bucket";
  if (bl == 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: empty %s name", s->url, what);
  if (bl > 255) return mlsys_set_error(MLSYS_ERR_ARG, "%s: %s name longer than 255 characters", s->url, what);
  for (i = 0; i < bl; i++) {
    char c = rest[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (!az && (c == '.' || c == '_' || (c >= 'A' && c <= 'Z')));
    if (!ok)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: %s name '%.*s' has the character '%c' (allowed: %s)", s->url, what,
                             (int)bl, rest, c, az ? "a-z 0-9 -" : "letters, digits, '.', '-', '_'");
  }
  s->bucket = mlsys__xfer_strndup(rest, bl);
  if (!s->bucket) return MLSYS_ERR_NOMEM;
  if (sl && sl[1]) {
    size_t pl = strlen(sl + 1);
    char *p = mlsys__xfer_strndup(sl + 1, pl);
    if (!p) return MLSYS_ERR_NOMEM;
    while (pl && p[pl - 1] == '/') p[--pl] = 0;
    if (pl && mlsys_xfer_key_check(p) != MLSYS_OK) {
      mlsys_status r = mlsys_prefix_error("%s: prefix", s->url);
      MLSYS_FREE(p);
      return r == MLSYS_OK ? MLSYS_ERR_ARG : r;
    }
    s->prefix = pl ? mlsys__xfer_cat(p, "/") : mlsys_strdup("");
    MLSYS_FREE(p);
  } else {
    s->prefix = mlsys_strdup("");
  }
  return s->prefix ? MLSYS_OK : MLSYS_ERR_NOMEM;
}

static int mlsys__xfer_loopback(const char *endpoint) {
  const char *h = strstr(endpoint, "://");
  h = h ? h + 3 : endpoint;
  return !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
}

#ifndef MLSYS_XFER_NO_HTTP
static mlsys_status mlsys__xfer_open_http(mlsys__xfer_st *s, const char *rest, const mlsys_xfer_store_opts *o, int az) {
  const char *ep = o->endpoint && o->endpoint[0] ? o->endpoint : getenv(az ? "MLSYS_AZURE_ENDPOINT" : "MLSYS_S3_ENDPOINT");
  const char *region = o->region && o->region[0] ? o->region : "us-east-1";
  const char *ak = o->access_key && o->access_key[0] ? o->access_key : getenv(az ? "AZURE_STORAGE_ACCOUNT" : "AWS_ACCESS_KEY_ID");
  const char *sk = o->secret_key && o->secret_key[0] ? o->secret_key : getenv(az ? "AZURE_STORAGE_KEY" : "AWS_SECRET_ACCESS_KEY");
  double t = o->timeout_s > 0 ? o->timeout_s : 60;
  mlsys__xfer_buf b = {NULL, 0, 0};
  size_t n;
  mlsys_status r = mlsys__xfer_bucket_prefix(s, rest, az);
  if (r) return r;
  if (ep && !ep[0]) ep = NULL;
  if (!ep && az && !(ak && ak[0]))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: no endpoint and no account (set opts.endpoint, $MLSYS_AZURE_ENDPOINT or "
                           "$AZURE_STORAGE_ACCOUNT)", s->url);
  if (ep) {
    s->endpoint = mlsys_strdup(ep);
  } else {
    if (!mlsys__xfer_buf_fmt(&b, az ? "https://%s.blob.core.windows.net" : "https://s3.%s.amazonaws.com", az ? ak : region))
      return mlsys__xfer_oom();
    s->endpoint = mlsys__xfer_buf_take(&b);
  }
  if (!s->endpoint) return MLSYS_ERR_NOMEM;
  n = strlen(s->endpoint);
  while (n && s->endpoint[n - 1] == '/') s->endpoint[--n] = 0;
  if (strncmp(s->endpoint, "http://", 7) != 0 && strncmp(s->endpoint, "https://", 8) != 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: endpoint '%s' is not an http:// or https:// URL", s->url, s->endpoint);
  if (strchr(s->endpoint, '?') || strchr(s->endpoint, '#'))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: endpoint '%s' must not have a query or fragment", s->url, s->endpoint);
  if (!(ak && ak[0]) || !(sk && sk[0])) {
    if (!mlsys__xfer_loopback(s->endpoint))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: no credentials (set opts.access_key/secret_key or %s)", s->url,
                             az ? "$AZURE_STORAGE_ACCOUNT/$AZURE_STORAGE_KEY" : "$AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY");
    /* the emulators' published development credentials */
    ak = az ? "devstoreaccount1" : "S3RVER";
    sk = az ? "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==" : "S3RVER";
  }
  s->access = mlsys_strdup(ak);
  s->secret = mlsys_strdup(sk);
  if (!s->access || !s->secret) return MLSYS_ERR_NOMEM;
  if (!mlsys__xfer_buf_str(&b, s->endpoint) || !mlsys__xfer_buf_str(&b, "/") || !mlsys__xfer_buf_str(&b, s->bucket))
    return mlsys__xfer_oom();
  s->base = mlsys__xfer_buf_take(&b);
  if (az) {
    const char *path = strstr(s->endpoint, "://") + 3;
    size_t kl = strlen(sk);
    int dl;
    path = strchr(path, '/');
    if (!mlsys__xfer_buf_fmt(&b, "/%s", s->access) || (path && !mlsys__xfer_buf_str(&b, path)) ||
        !mlsys__xfer_buf_fmt(&b, "/%s", s->bucket))
      return mlsys__xfer_oom();
    s->auth_path = mlsys__xfer_buf_take(&b);
    if (kl == 0 || kl % 4 != 0 || kl / 4 * 3 > sizeof s->azkey)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: the account key is not base64 of at most %zu bytes", s->url, sizeof s->azkey);
    dl = EVP_DecodeBlock(s->azkey, (const unsigned char *)sk, (int)kl);
    if (dl < 0) return mlsys_set_error(MLSYS_ERR_ARG, "%s: the account key is not valid base64", s->url);
    if (sk[kl - 1] == '=') dl--;   /* EVP_DecodeBlock counts padding as data */
    if (kl > 1 && sk[kl - 2] == '=') dl--;
    s->azkey_len = dl;
  } else {
    s->auth_path = mlsys_strdup("");
    if (strlen(region) > 64 || strchr(region, ':'))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: bad region '%s'", s->url, region);
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);
    snprintf(s->region, sizeof s->region, "%s", region);
  }
  if (!s->base || !s->auth_path) return MLSYS_ERR_NOMEM;
  s->timeout_ms = (long)(t * 1000);
  s->connect_ms = (long)((t < 10 ? t : 10) * 1000);
  if (s->connect_ms < 1) s->connect_ms = 1;
  s->pub.list = mlsys__xfer_http_list;
  s->pub.get_range = mlsys__xfer_http_get;
  s->pub.put_begin = mlsys__xfer_http_put_begin;
  s->pub.put_part = mlsys__xfer_http_put_part;
  s->pub.put_commit = mlsys__xfer_http_put_commit;
  s->pub.put_abort = mlsys__xfer_http_put_abort;
  return mlsys__xfer_http_bucket(s, o->create_bucket);
}
#endif

MLSYS_DEF mlsys_status mlsys_xfer_store_open(const char *url, const mlsys_xfer_store_opts *opts, mlsys_xfer_store **out) {
  mlsys_xfer_store_opts zero;
  const mlsys_xfer_store_opts *o = opts;
  mlsys__xfer_st *s;
  mlsys_status r;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_xfer_store_open: out is NULL");
  *out = NULL;
  if (!url) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_xfer_store_open: url is NULL");
  if (!o) {
    memset(&zero, 0, sizeof zero);
    o = &zero;
  }
  s = (mlsys__xfer_st *)mlsys_calloc(1, sizeof *s);
  if (!s) return MLSYS_ERR_NOMEM;
  s->url = mlsys_strdup(url);
  if (!s->url) {
    MLSYS_FREE(s);
    return MLSYS_ERR_NOMEM;
  }
  s->pub.close = mlsys__xfer_close;
  s->pub.impl = s;
  if (!strncmp(url, "file://", 7)) {
    s->type = MLSYS__XFER_FILE;
    s->pub.kind = "file";
    r = mlsys__xfer_open_file(s, url + 7, o);
  } else if (!strncmp(url, "synthetic://", 12)) {
    s->type = MLSYS__XFER_SYNTH;
    s->pub.kind = "synthetic";
    r = mlsys__xfer_open_synth(s, url + 12);
  } else if (!strncmp(url, "s3://", 5) || !strncmp(url, "azure://", 8)) {
    int az = url[0] == 'a';
    s->type = az ? MLSYS__XFER_AZURE : MLSYS__XFER_S3;
    s->pub.kind = az ? "azure" : "s3";
#ifndef MLSYS_XFER_NO_HTTP
    r = mlsys__xfer_open_http(s, url + (az ? 8 : 5), o, az);
#else
    r = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: built with MLSYS_XFER_NO_HTTP (no libcurl)", url);
#endif
  } else {
    const char *c = strstr(url, "://");
    r = c ? mlsys_set_error(MLSYS_ERR_ARG, "%s: unknown scheme '%.*s' (file, s3, azure, synthetic)", url,
                            (int)(c - url > 20 ? 20 : c - url), url)
          : mlsys_set_error(MLSYS_ERR_ARG, "'%s' is not a store URL (file://DIR, s3://BUCKET, azure://CONTAINER, "
                            "synthetic://N:SIZE)", url);
  }
  if (r) {
    mlsys__xfer_close(&s->pub);
    return r;
  }
  *out = &s->pub;
  return MLSYS_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_STORE_IMPLEMENTATION_DONE */
#endif /* MLSYS_XFER_STORE_IMPLEMENTATION */

/* ================================================================================================================
   4. The profiler
   ================================================================================================================ */
/* Skyplane's network profiler (thesis §4.3.2, spec §3.9): an iperf3-like memory-to-memory TCP goodput probe
   between two hosts.

   Skyplane profiles every ordered region pair with iperf3 (64 parallel connections, 5 s, CUBIC) and feeds the
   measured throughput_sent grid to its planner. This is the same measurement without iperf3: a server that
   accepts any number of parallel connections and discards what it reads, and a client that streams from N
   connections for a fixed time. The number that matters is GOODPUT: bytes the server says it received, over the
   server's own receive interval, not bytes the client managed to push into its socket buffers (on a slow link the
   send buffers alone hold seconds of data; sent_gbps shows that difference).

   In exactly one C file:

       #define MLSYS_IMPLEMENTATION                   // or MLSYS_TRANSFER_IMPLEMENTATION
       #include "mlsys_transfer.h"

       mlsys_xfer_profile_server *srv;
       int port;
       mlsys_xfer_profile_serve("127.0.0.1", 0, &port, &srv);        // port 0 → any free port
       mlsys_xfer_profile_result r;
       if (mlsys_xfer_profile_pair("127.0.0.1", port, 8, 2.0, &r) == MLSYS_OK)
         printf("%.2f Gbps goodput, %.2f Gbps into sockets, RTT %.2f ms\n", r.recv_gbps, r.sent_gbps,
                r.connect_ms_min);
       else puts(mlsys_last_error());
       mlsys_xfer_profile_stop(srv);

   SAFETY GUARD: both ends refuse every address that is not loopback (127.0.0.0/8, ::1, "localhost") or private
   IPv4 (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16: the emulated WAN of scripts/xfer-netns.sh). Host names are
   never resolved (no DNS traffic): only numeric addresses and the literal "localhost" are accepted.

   WIRE (all integers big-endian):
     client → server, once per connection: "SKYPROF1" u32 version=1, u32 conn index, u32 nconn, u32 omit_ms,
       u64 session id (32 bytes); then payload until the client shuts down its write side.
     server → client, after EOF: "SKYPROFR" u64 bytes_total, u64 bytes_measured, i64 measure_start_ns,
       i64 last_byte_ns (40 bytes; the two times on the server's monotonic clock, which every connection of one
       server shares, so the client can put the per-connection windows on one time line).

   NOT DONE: UDP, reverse mode (server sends), CPU utilisation (the grid's cpu_utilization column), IPv6 private
   ranges, TLS. The profile of a whole region grid is the planner's business (it calls pair() per ordered pair).
*/
#ifndef MLSYS_XFER_PROFILE_H
#define MLSYS_XFER_PROFILE_H
#include "mlsys_common.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int nconn;          /* parallel TCP connections; 0 → 8 (Skyplane's grid used 64) */
  double seconds;     /* sending time; 0 → 5 (Skyplane's grid) */
  double omit_s;      /* leading seconds left out of recv_gbps (TCP slow start); 0 → min(1, seconds / 5);
                         < 0 → none (iperf3's default) */
  double timeout_s;   /* limit on connect and on any one blocked send/receive; 0 → 10 */
  int buf_bytes;      /* bytes per send() call; 0 → 128 KiB */
  const char *congestion;   /* TCP congestion control of the client's sockets ("cubic", as in Skyplane's grid;
                               Linux only); NULL → the system default */
} mlsys_xfer_profile_opts;

typedef struct {
  int nconn;                   /* connections that ran */
  double seconds;              /* the client's sending time, first send to last send */
  double omit_s;               /* the omit interval that was applied */
  uint64_t bytes_sent;         /* written into sockets by the client */
  uint64_t bytes_received;     /* counted by the server until EOF (equals bytes_sent on success) */
  uint64_t bytes_measured;     /* the part of bytes_received that arrived after the omit interval */
  double sent_gbps;            /* bytes_sent*8/seconds/1e9: socket-buffer fill included, so optimistic */
  double recv_gbps;            /* goodput: bytes_measured*8 / the server's receive window / 1e9 */
  double recv_window_s;        /* that window: first measured byte of any connection to the last byte of all */
  double connect_ms_min;       /* fastest TCP handshake: one round trip (+ setup cost) */
  double connect_ms_mean;
  double rtt_ms;               /* mean smoothed RTT of the connections at the end of sending (Linux
                                  TCP_INFO; 0 where unavailable) */
} mlsys_xfer_profile_result;

typedef struct mlsys_xfer_profile_server mlsys_xfer_profile_server;

/* Listens on host:port (port 0 → any free port; *bound_port receives the port, may be NULL) and serves every
   connection on its own thread until mlsys_xfer_profile_stop. Refuses non-loopback, non-private hosts. */
MLSYS_DEF mlsys_status mlsys_xfer_profile_serve(const char *host, int port, int *bound_port,
                                                mlsys_xfer_profile_server **out);
MLSYS_DEF int mlsys_xfer_profile_server_port(const mlsys_xfer_profile_server *s);
/* Connections the server has completed (a reply sent), for tests and logs. */
MLSYS_DEF long mlsys_xfer_profile_server_completed(const mlsys_xfer_profile_server *s);
/* Stops listening, cuts every open connection, joins every thread and frees s. NULL is a no-op. */
MLSYS_DEF void mlsys_xfer_profile_stop(mlsys_xfer_profile_server *s);

/* Streams from nconn (≥ 1) connections to a profile server for `seconds` (0 → 5) and fills *r; _ex takes every
   option (a NULL or zeroed opts gives the defaults). */
MLSYS_DEF mlsys_status mlsys_xfer_profile_pair(const char *host, int port, int nconn, double seconds,
                                               mlsys_xfer_profile_result *r);
MLSYS_DEF mlsys_status mlsys_xfer_profile_pair_ex(const char *host, int port, const mlsys_xfer_profile_opts *o,
                                                  mlsys_xfer_profile_result *r);

/* MLSYS_OK when host may be probed (see SAFETY GUARD); else MLSYS_ERR_ARG naming the host and the rule. */
MLSYS_DEF mlsys_status mlsys_xfer_profile_check_host(const char *host);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_PROFILE_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#if defined(MLSYS_IMPLEMENTATION) && !defined(MLSYS_XFER_PROFILE_IMPLEMENTATION)
#define MLSYS_XFER_PROFILE_IMPLEMENTATION
#endif
#if defined(MLSYS_XFER_PROFILE_IMPLEMENTATION) && !defined(MLSYS__XFER_PROFILE_DONE)
#define MLSYS__XFER_PROFILE_DONE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MLSYS__XFER_PROF_HELLO 32
#define MLSYS__XFER_PROF_REPLY 40
#define MLSYS__XFER_PROF_RECVBUF (256 * 1024)

static void mlsys__xfer_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}
static void mlsys__xfer_put64(unsigned char *p, uint64_t v) {
  mlsys__xfer_put32(p, (uint32_t)(v >> 32));
  mlsys__xfer_put32(p + 4, (uint32_t)v);
}
static uint32_t mlsys__xfer_get32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static uint64_t mlsys__xfer_get64(const unsigned char *p) {
  return ((uint64_t)mlsys__xfer_get32(p) << 32) | mlsys__xfer_get32(p + 4);
}

/* Nanoseconds on the monotonic clock: the server's timestamps go over the wire as integers. */
static int64_t mlsys__xfer_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The guard. getaddrinfo is deliberately not used: resolving a name is already traffic to a DNS server. */
typedef struct {
  int family;
  struct sockaddr_in v4;
  struct sockaddr_in6 v6;
} mlsys__xfer_addr;

static mlsys_status mlsys__xfer_parse_host(const char *host, int port, mlsys__xfer_addr *a) {
  static const char *rule = "the profiler only talks to loopback (127.0.0.0/8, ::1, localhost) or private "
                            "addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16: emulated namespaces); "
                            "host names are not resolved";
  memset(a, 0, sizeof *a);
  if (!host || !*host) return mlsys_set_error(MLSYS_ERR_ARG, "profile: empty host refused: %s", rule);
  if (port < 0 || port > 65535) return mlsys_set_error(MLSYS_ERR_ARG, "profile: port %d out of range", port);
  const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, h, &a->v4.sin_addr) == 1) {
    uint32_t ip = ntohl(a->v4.sin_addr.s_addr);
    int ok = (ip >> 24) == 127 || (ip >> 24) == 10 || (ip >> 20) == ((172u << 4) | 1u) ||
             (ip >> 16) == ((192u << 8) | 168u);
    if (!ok) return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: %s", host, rule);
    a->family = AF_INET;
    a->v4.sin_family = AF_INET;
    a->v4.sin_port = htons((uint16_t)port);
    return MLSYS_OK;
  }
  if (inet_pton(AF_INET6, h, &a->v6.sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&a->v6.sin6_addr))
      return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: %s", host, rule);
    a->family = AF_INET6;
    a->v6.sin6_family = AF_INET6;
    a->v6.sin6_port = htons((uint16_t)port);
    return MLSYS_OK;
  }
  return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: not a numeric address; %s", host, rule);
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_check_host(const char *host) {
  mlsys__xfer_addr a;
  return mlsys__xfer_parse_host(host, 0, &a);
}

static const struct sockaddr *mlsys__xfer_sa(const mlsys__xfer_addr *a, socklen_t *len) {
  if (a->family == AF_INET6) { *len = (socklen_t)sizeof a->v6; return (const struct sockaddr *)&a->v6; }
  *len = (socklen_t)sizeof a->v4;
  return (const struct sockaddr *)&a->v4;
}

static void mlsys__xfer_set_timeouts(int fd, double seconds) {
  struct timeval tv;
  tv.tv_sec = (time_t)seconds;
  tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Reads exactly n bytes; 0 on success, else errno-like (ECONNRESET on a short stream). */
static int mlsys__xfer_read_full(int fd, unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = recv(fd, p, n, 0);
    if (k == 0) return ECONNRESET;
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += k; n -= (size_t)k;
  }
  return 0;
}
static int mlsys__xfer_write_full(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += k; n -= (size_t)k;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   Server
   --------------------------------------------------------------------------------------------------------------- */
typedef struct mlsys__xfer_pconn {
  int fd;
  int done;                      /* set by the connection thread as it leaves (under the server mutex) */
  pthread_t th;
  struct mlsys_xfer_profile_server *srv;
  struct mlsys__xfer_pconn *next;
} mlsys__xfer_pconn;

struct mlsys_xfer_profile_server {
  int lfd, port;
  int wake[2];                   /* a byte here wakes the accept loop's poll() to stop */
  pthread_t accept_th;
  pthread_mutex_t mu;
  int stopping;
  long completed;
  mlsys__xfer_pconn *conns;
};

static void *mlsys__xfer_serve_conn(void *arg) {
  mlsys__xfer_pconn *c = (mlsys__xfer_pconn *)arg;
  mlsys_xfer_profile_server *s = c->srv;
  unsigned char hello[MLSYS__XFER_PROF_HELLO], reply[MLSYS__XFER_PROF_REPLY];
  unsigned char *buf = (unsigned char *)mlsys_alloc(MLSYS__XFER_PROF_RECVBUF, 1);
  /* A half-open peer must not pin a thread forever; a stop() cuts the socket anyway. */
  mlsys__xfer_set_timeouts(c->fd, 30);
  if (buf && mlsys__xfer_read_full(c->fd, hello, sizeof hello) == 0 && memcmp(hello, "SKYPROF1", 8) == 0 &&
      mlsys__xfer_get32(hello + 8) == 1) {
    int64_t omit_ns = (int64_t)mlsys__xfer_get32(hello + 20) * 1000000;
    uint64_t total = 0, measured = 0;
    int64_t first = -1, mstart = 0, last = 0;
    int ok = 1;
    for (;;) {
      ssize_t k = recv(c->fd, buf, MLSYS__XFER_PROF_RECVBUF, 0);
      if (k == 0) break;
      if (k < 0) {
        if (errno == EINTR) continue;
        ok = 0;
        break;
      }
      int64_t now = mlsys__xfer_now_ns();
      if (first < 0) { first = now; mstart = now + omit_ns; }
      total += (uint64_t)k;
      if (now >= mstart) measured += (uint64_t)k;
      last = now;
    }
    if (ok) {
      memcpy(reply, "SKYPROFR", 8);
      mlsys__xfer_put64(reply + 8, total);
      mlsys__xfer_put64(reply + 16, measured);
      mlsys__xfer_put64(reply + 24, (uint64_t)mstart);
      mlsys__xfer_put64(reply + 32, (uint64_t)last);
      /* counted before the write: a client that has read its reply must already see it counted */
      pthread_mutex_lock(&s->mu);
      s->completed++;
      pthread_mutex_unlock(&s->mu);
      if (mlsys__xfer_write_full(c->fd, reply, sizeof reply) != 0) {
        pthread_mutex_lock(&s->mu);
        s->completed--;
        pthread_mutex_unlock(&s->mu);
      }
    }
  }
  mlsys_free(buf);
  pthread_mutex_lock(&s->mu);
  c->done = 1;
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Joins and frees finished connections so a long-lived server does not grow. Caller holds no lock. */
static void mlsys__xfer_reap(mlsys_xfer_profile_server *s, int all) {
  for (;;) {
    mlsys__xfer_pconn *victim = NULL, **pp;
    pthread_mutex_lock(&s->mu);
    for (pp = &s->conns; *pp; pp = &(*pp)->next)
      if (all || (*pp)->done) { victim = *pp; *pp = victim->next; break; }
    pthread_mutex_unlock(&s->mu);
    if (!victim) return;
    pthread_join(victim->th, NULL);
    close(victim->fd);
    mlsys_free(victim);
  }
}

static void *mlsys__xfer_accept_loop(void *arg) {
  mlsys_xfer_profile_server *s = (mlsys_xfer_profile_server *)arg;
  for (;;) {
    struct pollfd p[2];
    p[0].fd = s->lfd; p[0].events = POLLIN; p[0].revents = 0;
    p[1].fd = s->wake[0]; p[1].events = POLLIN; p[1].revents = 0;
    int k = poll(p, 2, 1000);
    if (k < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    mlsys__xfer_reap(s, 0);
    if (k <= 0 || !(p[0].revents & POLLIN)) continue;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0) continue;
    mlsys__xfer_pconn *c = (mlsys__xfer_pconn *)mlsys_calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->srv = s;
    pthread_mutex_lock(&s->mu);
    if (s->stopping || pthread_create(&c->th, NULL, mlsys__xfer_serve_conn, c) != 0) {
      pthread_mutex_unlock(&s->mu);
      close(fd);
      mlsys_free(c);
      continue;
    }
    c->next = s->conns;
    s->conns = c;
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_serve(const char *host, int port, int *bound_port,
                                                mlsys_xfer_profile_server **out) {
  mlsys__xfer_addr a;
  socklen_t len;
  const struct sockaddr *sa;
  int one = 1;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "profile serve: out is NULL");
  *out = NULL;
  mlsys_status st = mlsys__xfer_parse_host(host, port, &a);
  if (st) return st;
  mlsys_xfer_profile_server *s = (mlsys_xfer_profile_server *)mlsys_calloc(1, sizeof *s);
  if (!s) return MLSYS_ERR_NOMEM;
  s->lfd = socket(a.family, SOCK_STREAM, 0);
  s->wake[0] = s->wake[1] = -1;
  if (s->lfd < 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: socket: %s", strerror(errno));
    goto fail;
  }
  setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sa = mlsys__xfer_sa(&a, &len);
  if (bind(s->lfd, sa, len) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: bind %s:%d: %s", host, port, strerror(errno));
    goto fail;
  }
  if (listen(s->lfd, 256) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: listen: %s", strerror(errno));
    goto fail;
  }
  {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(s->lfd, (struct sockaddr *)&ss, &sl);
    s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  if (pipe(s->wake) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: pipe: %s", strerror(errno));
    goto fail;
  }
  pthread_mutex_init(&s->mu, NULL);
  if (pthread_create(&s->accept_th, NULL, mlsys__xfer_accept_loop, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: cannot start the accept thread");
    goto fail;
  }
  if (bound_port) *bound_port = s->port;
  *out = s;
  return MLSYS_OK;
fail:
  if (s->lfd >= 0) close(s->lfd);
  if (s->wake[0] >= 0) { close(s->wake[0]); close(s->wake[1]); }
  mlsys_free(s);
  return st;
}

MLSYS_DEF int mlsys_xfer_profile_server_port(const mlsys_xfer_profile_server *s) { return s ? s->port : 0; }

MLSYS_DEF long mlsys_xfer_profile_server_completed(const mlsys_xfer_profile_server *s) {
  long n;
  if (!s) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&s->mu);
  n = s->completed;
  pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
  return n;
}

MLSYS_DEF void mlsys_xfer_profile_stop(mlsys_xfer_profile_server *s) {
  mlsys__xfer_pconn *c;
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_mutex_unlock(&s->mu);
  {
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
  }
  pthread_join(s->accept_th, NULL);
  /* shutdown() wakes a thread blocked in recv() on this socket; close() alone would not. */
  pthread_mutex_lock(&s->mu);
  for (c = s->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&s->mu);
  mlsys__xfer_reap(s, 1);
  close(s->lfd);
  close(s->wake[0]);
  close(s->wake[1]);
  pthread_mutex_destroy(&s->mu);
  mlsys_free(s);
}

/* ---------------------------------------------------------------------------------------------------------------
   Client
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  /* shared */
  const mlsys__xfer_addr *addr;
  int nconn, buf_bytes;
  const char *congestion;
  double seconds, timeout_s;
  uint32_t omit_ms;
  uint64_t session;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  int *arrived, *failed;
  double *t_start;               /* the common start of sending, set by the last thread to arrive */
  /* per connection */
  int index, err;
  char what[64];
  double connect_ms, t_end, rtt_ms;
  uint64_t sent;
  unsigned char reply[MLSYS__XFER_PROF_REPLY];
} mlsys__xfer_pclient;

/* Every connection is set up before any sends, so the measured window does not contain handshakes, and a
   failed connection stops the others before they send anything. */
static int mlsys__xfer_barrier(mlsys__xfer_pclient *c, int ok) {
  int go;
  pthread_mutex_lock(c->mu);
  if (!ok) (*c->failed)++;
  if (++*c->arrived == c->nconn) {
    *c->t_start = mlsys_now();
    pthread_cond_broadcast(c->cv);
  } else {
    while (*c->arrived < c->nconn) pthread_cond_wait(c->cv, c->mu);
  }
  go = *c->failed == 0;
  pthread_mutex_unlock(c->mu);
  return go;
}

static void *mlsys__xfer_client_conn(void *arg) {
  mlsys__xfer_pclient *c = (mlsys__xfer_pclient *)arg;
  socklen_t len;
  const struct sockaddr *sa = mlsys__xfer_sa(c->addr, &len);
  unsigned char hello[MLSYS__XFER_PROF_HELLO];
  unsigned char *buf = NULL;
  int fd = socket(c->addr->family, SOCK_STREAM, 0), ok = fd >= 0;
  if (!ok) { c->err = errno; snprintf(c->what, sizeof c->what, "socket"); }
  if (ok && c->congestion) {
#ifdef __linux__
    /* Before connect(), so the handshake already runs under it. */
    int bad = setsockopt(fd, IPPROTO_TCP, 13 /* TCP_CONGESTION */, c->congestion, (socklen_t)strlen(c->congestion));
    int e = errno;
#else
    int bad = 1, e = ENOTSUP;
#endif
    if (bad) {
      ok = 0;
      c->err = e;
      snprintf(c->what, sizeof c->what, "congestion control '%.20s'", c->congestion);
    }
  }
  if (ok) {
    mlsys__xfer_set_timeouts(fd, c->timeout_s);
    double t0 = mlsys_now();
    if (connect(fd, sa, len) != 0) { ok = 0; c->err = errno; snprintf(c->what, sizeof c->what, "connect"); }
    c->connect_ms = (mlsys_now() - t0) * 1e3;
  }
  if (ok) {
    memcpy(hello, "SKYPROF1", 8);
    mlsys__xfer_put32(hello + 8, 1);
    mlsys__xfer_put32(hello + 12, (uint32_t)c->index);
    mlsys__xfer_put32(hello + 16, (uint32_t)c->nconn);
    mlsys__xfer_put32(hello + 20, c->omit_ms);
    mlsys__xfer_put64(hello + 24, c->session);
    if ((c->err = mlsys__xfer_write_full(fd, hello, sizeof hello)) != 0) {
      ok = 0;
      snprintf(c->what, sizeof c->what, "send hello");
    }
  }
  if (ok && !(buf = (unsigned char *)mlsys_calloc((size_t)c->buf_bytes, 1))) {
    ok = 0;
    c->err = ENOMEM;
    snprintf(c->what, sizeof c->what, "buffer");
  }
  if (mlsys__xfer_barrier(c, ok)) {
    double deadline = *c->t_start + c->seconds;
    while (mlsys_now() < deadline) {
      ssize_t k = send(fd, buf, (size_t)c->buf_bytes, MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EINTR) continue;
        c->err = errno;
        snprintf(c->what, sizeof c->what, "send");
        break;
      }
      c->sent += (uint64_t)k;
    }
    c->t_end = mlsys_now();
#ifdef __linux__
    {
      /* The head of Linux's struct tcp_info (a stable kernel ABI), spelled out because glibc hides the struct
         under _POSIX_C_SOURCE: 8 one-byte fields, then u32 fields of which tcpi_rtt (µs) is the 16th. */
      struct { unsigned char u8[8]; uint32_t u32[16]; } ti;
      socklen_t tl = sizeof ti;
      if (getsockopt(fd, IPPROTO_TCP, 11 /* TCP_INFO */, &ti, &tl) == 0 && tl >= sizeof ti)
        c->rtt_ms = ti.u32[15] / 1e3;
    }
#endif
    if (!c->err) {
      /* The server answers after EOF, i.e. after it has read everything still queued on the way. */
      shutdown(fd, SHUT_WR);
      mlsys__xfer_set_timeouts(fd, c->timeout_s + c->seconds + 60);
      if ((c->err = mlsys__xfer_read_full(fd, c->reply, sizeof c->reply)) != 0)
        snprintf(c->what, sizeof c->what, "read the server's reply");
      else if (memcmp(c->reply, "SKYPROFR", 8) != 0) {
        c->err = EPROTO;
        snprintf(c->what, sizeof c->what, "read the server's reply (bad magic)");
      }
    }
  }
  mlsys_free(buf);
  if (fd >= 0) close(fd);
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_pair_ex(const char *host, int port, const mlsys_xfer_profile_opts *o,
                                                  mlsys_xfer_profile_result *r) {
  mlsys_xfer_profile_opts d;
  mlsys__xfer_addr a;
  mlsys_status st;
  if (!r) return mlsys_set_error(MLSYS_ERR_ARG, "profile: result pointer is NULL");
  memset(r, 0, sizeof *r);
  memset(&d, 0, sizeof d);
  if (o) d = *o;
  if (d.nconn == 0) d.nconn = 8;
  if (d.seconds == 0) d.seconds = 5;
  if (d.omit_s == 0) d.omit_s = d.seconds / 5 < 1 ? d.seconds / 5 : 1;
  if (d.omit_s < 0) d.omit_s = 0;
  if (d.timeout_s == 0) d.timeout_s = 10;
  if (d.buf_bytes == 0) d.buf_bytes = 128 * 1024;
  if (d.nconn < 1 || d.nconn > 1024)
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: nconn %d out of range [1, 1024]", d.nconn);
  if (!(d.seconds > 0 && d.seconds <= 3600))
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: seconds %g out of range (0, 3600]", d.seconds);
  if (!(d.omit_s < d.seconds))
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: omit %g s leaves nothing of %g s to measure", d.omit_s,
                           d.seconds);
  if (!(d.timeout_s > 0) || d.buf_bytes < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: timeout_s and buf_bytes must be positive");
  if (port <= 0 || port > 65535) return mlsys_set_error(MLSYS_ERR_ARG, "profile: port %d out of range", port);
  if ((st = mlsys__xfer_parse_host(host, port, &a)) != MLSYS_OK) return st;

  mlsys__xfer_pclient *cs = (mlsys__xfer_pclient *)mlsys_calloc((size_t)d.nconn, sizeof *cs);
  pthread_t *th = (pthread_t *)mlsys_calloc((size_t)d.nconn, sizeof *th);
  if (!cs || !th) { mlsys_free(cs); mlsys_free(th); return MLSYS_ERR_NOMEM; }
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived = 0, failed = 0, started = 0, i;
  double t_start = 0;
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&cv, NULL);
  uint64_t session = (uint64_t)mlsys__xfer_now_ns() ^ ((uint64_t)getpid() << 32);
  for (i = 0; i < d.nconn; i++) {
    mlsys__xfer_pclient *c = &cs[i];
    c->addr = &a; c->nconn = d.nconn; c->buf_bytes = d.buf_bytes; c->seconds = d.seconds;
    c->congestion = d.congestion;
    c->timeout_s = d.timeout_s; c->omit_ms = (uint32_t)(d.omit_s * 1e3 + 0.5); c->session = session;
    c->mu = &mu; c->cv = &cv; c->arrived = &arrived; c->failed = &failed; c->t_start = &t_start;
    c->index = i;
  }
  for (i = 0; i < d.nconn; i++) {
    if (pthread_create(&th[i], NULL, mlsys__xfer_client_conn, &cs[i]) != 0) break;
    started++;
  }
  if (started < d.nconn) {
    /* Stand in for the threads that never started, so the barrier opens and the others give up. */
    pthread_mutex_lock(&mu);
    failed++;
    arrived += d.nconn - started;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  for (i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_cond_destroy(&cv);
  pthread_mutex_destroy(&mu);

  st = MLSYS_OK;
  if (started < d.nconn)
    st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: could not start %d threads", host, port, d.nconn);
  for (i = 0; i < started && st == MLSYS_OK; i++)
    if (cs[i].err)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: connection %d of %d: %s: %s", host, port, i, d.nconn,
                           cs[i].what, strerror(cs[i].err));
  if (st == MLSYS_OK) {
    int64_t wstart = INT64_MAX, wend = INT64_MIN;
    double t_end = 0, rtt = 0;
    r->nconn = d.nconn;
    r->omit_s = d.omit_s;
    r->connect_ms_min = cs[0].connect_ms;
    for (i = 0; i < d.nconn; i++) {
      const mlsys__xfer_pclient *c = &cs[i];
      uint64_t measured = mlsys__xfer_get64(c->reply + 16);
      int64_t ms = (int64_t)mlsys__xfer_get64(c->reply + 24), le = (int64_t)mlsys__xfer_get64(c->reply + 32);
      r->bytes_sent += c->sent;
      r->bytes_received += mlsys__xfer_get64(c->reply + 8);
      r->bytes_measured += measured;
      if (measured > 0) {
        if (ms < wstart) wstart = ms;
        if (le > wend) wend = le;
      }
      if (c->t_end > t_end) t_end = c->t_end;
      if (c->connect_ms < r->connect_ms_min) r->connect_ms_min = c->connect_ms;
      r->connect_ms_mean += c->connect_ms / d.nconn;
      rtt += c->rtt_ms / d.nconn;
    }
    r->rtt_ms = rtt;
    r->seconds = t_end - t_start;
    if (r->seconds > 0) r->sent_gbps = (double)r->bytes_sent * 8 / r->seconds / 1e9;
    if (wend > wstart) {
      r->recv_window_s = (double)(wend - wstart) / 1e9;
      r->recv_gbps = (double)r->bytes_measured * 8 / r->recv_window_s / 1e9;
    }
    if (r->bytes_received != r->bytes_sent)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: server counted %llu bytes, client sent %llu", host, port,
                           (unsigned long long)r->bytes_received, (unsigned long long)r->bytes_sent);
    else if (r->bytes_measured == 0)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: nothing arrived after the %g s omit interval", host,
                           port, d.omit_s);
  }
  mlsys_free(cs);
  mlsys_free(th);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_pair(const char *host, int port, int nconn, double seconds,
                                               mlsys_xfer_profile_result *r) {
  mlsys_xfer_profile_opts o;
  memset(&o, 0, sizeof o);
  o.nconn = nconn;
  o.seconds = seconds;
  if (nconn <= 0) {
    if (r) memset(r, 0, sizeof *r);
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: nconn must be >= 1 (got %d)", nconn);
  }
  return mlsys_xfer_profile_pair_ex(host, port, &o, r);
}
#endif /* MLSYS_XFER_PROFILE_IMPLEMENTATION */

/* ================================================================================================================
   5. The data plane
   ================================================================================================================ */
/* The data plane: Skyplane's gateways (Jain et al., "Skyplane:
   Optimizing Transfer Cost and Throughput Using Cloud-Aware Overlays", NSDI 2023; P. Jain, PhD thesis, ch. 4).

   A transfer runs over an overlay (section 1: gateways = source, relays, destination; edges with a number of
   parallel TCP connections and an optional emulated link rate). The source lists its object store, splits every
   object into chunks (parts) and sends them; relays forward; the destination writes each part once and commits
   each object when all its parts are in. What the thesis (§4.3.3, §4.4.2, §4.6) and the spec (§3.10) ask, and
   how it is done here:
     - parallel TCP connections per edge (TCP_NODELAY), ≤ 64 outgoing per gateway;
     - dynamic assignment (a connection takes the next chunk when it is free: Skyplane) or round-robin (chunk i goes
       to connection i mod n: the GridFTP baseline), from one bounded queue per gateway;
     - hop-by-hop flow control: a gateway holds at most queue_cap chunk payloads (a receiver reserves a slot
       before it reads a payload, so a full relay stops reading its sockets and TCP pushes back upstream);
     - a token bucket per edge, shared by the edge's connections, emulates a link of rate_gbps;
     - CRC-32C of every payload, checked on every hop; a mismatch is NACKed and the chunk resent;
     - end-to-end reliability: a relay acks upstream only after its downstream acked, so an ack at the source means
       the destination has written the part; dead connections and dead relays make the sender requeue what was
       unacked and reconnect with backoff (other out-edges take the chunks meanwhile);
     - the destination writes each part exactly once (per-object part states; a duplicate is acked, not written);
     - done = every chunk acked at the source; an in-band FIN then walks down the overlay and every gateway exits.

   USAGE: in exactly one .c file
       #define MLSYS_IMPLEMENTATION                  // or MLSYS_TRANSFER_IMPLEMENTATION + MLSYS_COMMON_IMPLEMENTATION
       #include "mlsys_transfer.h"

   EXAMPLE (a whole copy through every gateway of `ov` as threads of this process, ports on 127.0.0.1)
       mlsys_xfer_copy_opts o = {0};            // chunks of mlsys_xfer_chunk_auto, queue of 16, dynamic assignment
       mlsys_xfer_copy_result r;
       if (mlsys_xfer_copy(&ov, src_store, dst_store, &o, &r) == MLSYS_OK)
         printf("%llu bytes in %.2f s, %.2f Gbps, %llu resends\n", (unsigned long long)r.bytes, r.seconds,
                r.gbps, (unsigned long long)r.resends);
       else fprintf(stderr, "%s\n", mlsys_last_error());
       mlsys_xfer_copy_result_free(&r);
   One gateway per process (`mlsys transfer gateway`): mlsys_xfer_gateway_run(&ov, id, store_or_NULL, &gw_opts, &res)
   listens on ov.gw[id].host:port and connects to the ports the overlay names; it returns when the job is done.

   WIRE FORMAT (big-endian). A frame is a header and data_len payload bytes. The header is Skyplane's v3 header
   (45 bytes, same layout) with version 4 = "v3 + the extension below":
       off  len  field
         0    8  magic 0x534B595F4C41524B ("SKY_LARK")
         8    4  version = 4
        12   16  chunk_id: job_id (8) | object index (4) | part (4), all big-endian — deterministic
        28    8  data_len (payload bytes on the wire; ≤ 1 GiB)
        36    1  is_compressed (always 0; nonzero is rejected)
        37    8  n_chunks_left_on_socket (informational: chunks queued at the sender)
       --- extension (v4) ---
        45    1  type: 0 DATA, 1 HELLO (first frame on every connection), 2 FIN (job over; flags bit 0 = aborted)
        46    1  flags
        47    2  sender gateway id
        49    4  CRC-32C (Castagnoli) of the payload
        53    8  job_id
        61    8  object size
        69    8  part_bytes (the job's chunk size; part i covers [i·part_bytes, min(size, (i+1)·part_bytes)))
        77    4  part index
        81    2  key_len (≤ 1024)
        83    k  object key (no NUL bytes)
      83+k    4  CRC-32C of header bytes [0, 83+k)
   so a header is 87 + key_len bytes; the first 83 bytes tell its length. A DATA frame must be consistent:
   nonempty key, 1 ≤ part_bytes ≤ 1 GiB, part < nparts (= max(1, ceil(size/part_bytes)) ≤ 2^20), data_len = that
   part's length. HELLO and FIN carry no payload. Acks flow back on the same connection, 28 bytes each:
         0    4  magic 0x534B5941 ("SKYA")
         4    1  status: 0 OK (written downstream), 1 BAD_CHECKSUM (resend), 2 ERROR (the destination store
                 failed: the source aborts), 3 FIN_OK
         5    3  zero
         8   16  chunk_id
        24    4  CRC-32C of bytes [0, 24)

   FLOW-CONTROL BOUND. Every payload byte a gateway holds (queued, being received, sent but not yet acked
   downstream, being written) belongs to a chunk that holds one of queue_cap slots, and a receiver takes the slot
   before it reads the payload. So at every moment a gateway's buffered payload bytes ≤ queue_cap × chunk_bytes
   (the largest part); per connection there is only a header buffer (≤ 1111 bytes) beyond that, and nothing is
   added for in-flight chunks: those hold slots. gw_result.peak_buffered reports the measured peak and
   buffer_bound this bound (with the largest data_len seen at relays).

   THREADS. Per out-connection a sender and an ack reader; per in-connection a receiver; one listener per gateway
   with in-edges; `readers` store readers at the source. Blocking sockets with poll() slices of 200 ms so that
   every thread notices stop/done. A client that sends no valid frame within hello_timeout_s, or stalls mid-frame
   for io_timeout_s, or sends bytes that do not parse, is dropped with a message through mlsys_log.

   FAULT INJECTION (opts.faults, for tests): kill_every K — every K-th chunk a gateway starts sending, its
   connection is shut down halfway through the frame; corrupt_every K — every K-th chunk is sent with one payload
   byte flipped (after the CRC); slow_conn — one out-connection is throttled to 1/slow_factor of its fair share.

   NOT DONE: compression and end-to-end encryption (is_compressed must be 0); IPv6 and host names (hosts are IPv4
   literals); in round-robin mode a chunk waits for its own connection (no failover across edges, as in GridFTP),
   except that chunks requeued after a failure are dealt round-robin again.
*/
#ifndef MLSYS_XFER_DATAPLANE_H
#define MLSYS_XFER_DATAPLANE_H

#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_XFER_DATAPLANE_IMPLEMENTATION
#define MLSYS_XFER_DATAPLANE_IMPLEMENTATION
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
   CRC-32C (Castagnoli, reflected polynomial 0x82F63B78). Chain calls by passing the previous result; start at 0.
   mlsys_xfer_crc32c(0, "123456789", 9) == 0xE3069283. SSE4.2 instruction when the CPU has it, else slicing-by-8.
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF uint32_t mlsys_xfer_crc32c(uint32_t crc, const void *buf, size_t n);

/* ---------------------------------------------------------------------------------------------------------------
   Wire format (see the top of this file)
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS_XFER_WIRE_MAGIC 0x534B595F4C41524BULL
#define MLSYS_XFER_WIRE_VERSION 4u
#define MLSYS_XFER_WIRE_BASE_LEN 45      /* Skyplane v3 header */
#define MLSYS_XFER_WIRE_PREFIX_LEN 83    /* base + fixed extension: enough to know the header's length */
#define MLSYS_XFER_WIRE_MIN_LEN 87       /* a header with an empty key */
#define MLSYS_XFER_KEY_MAX 1024
#define MLSYS_XFER_WIRE_MAX_LEN (MLSYS_XFER_WIRE_MIN_LEN + MLSYS_XFER_KEY_MAX)
#define MLSYS_XFER_DATA_MAX (1ULL << 30) /* cap on data_len and part_bytes */
#define MLSYS_XFER_MAX_PARTS (1u << 20)   /* parts per object (the destination keeps a byte of state per part) */
#define MLSYS_XFER_ACK_MAGIC 0x534B5941u
#define MLSYS_XFER_ACK_LEN 28

enum { MLSYS_XFER_FRAME_DATA = 0, MLSYS_XFER_FRAME_HELLO = 1, MLSYS_XFER_FRAME_FIN = 2 };
enum { MLSYS_XFER_ACK_OK = 0, MLSYS_XFER_ACK_BAD_CHECKSUM = 1, MLSYS_XFER_ACK_ERROR = 2, MLSYS_XFER_ACK_FIN = 3 };
#define MLSYS_XFER_FIN_ABORTED 1

typedef struct {
  uint8_t chunk_id[16];
  uint64_t data_len;
  uint8_t is_compressed;
  uint64_t n_left;          /* n_chunks_left_on_socket */
  int type;                 /* MLSYS_XFER_FRAME_* */
  int flags;
  int gw;                   /* sender gateway id (0..65535) */
  uint32_t crc;             /* CRC-32C of the payload */
  uint64_t job_id, obj_size, part_bytes;
  uint32_t part;
  char key[MLSYS_XFER_KEY_MAX + 1];   /* NUL-terminated */
} mlsys_xfer_wire_hdr;

typedef struct {
  uint8_t chunk_id[16];
  int status;               /* MLSYS_XFER_ACK_* */
} mlsys_xfer_ack;

/* Writes the header (87 + strlen(key) bytes) into out[cap]; *len = its length. Checks what unpack checks. */
MLSYS_DEF mlsys_status mlsys_xfer_wire_pack(const mlsys_xfer_wire_hdr *h, uint8_t *out, size_t cap, size_t *len);
/* From the first len ≥ MLSYS_XFER_WIRE_PREFIX_LEN bytes: the whole header's length (validates magic, version,
   type, key_len first). MLSYS_ERR_PARSE / MLSYS_ERR_TOO_BIG with a message naming the problem. */
MLSYS_DEF mlsys_status mlsys_xfer_wire_header_len(const uint8_t *in, size_t len, size_t *total);
/* Parses one header from in[len]; *used = its length (NULL allowed). Rejects wrong magic, wrong version,
   oversized lengths, truncated input, a header checksum mismatch and inconsistent fields, each by name. */
MLSYS_DEF mlsys_status mlsys_xfer_wire_unpack(const uint8_t *in, size_t len, mlsys_xfer_wire_hdr *h, size_t *used);
MLSYS_DEF void mlsys_xfer_ack_pack(const mlsys_xfer_ack *a, uint8_t out[MLSYS_XFER_ACK_LEN]);
MLSYS_DEF mlsys_status mlsys_xfer_ack_unpack(const uint8_t *in, size_t len, mlsys_xfer_ack *a);

/* ---------------------------------------------------------------------------------------------------------------
   Chunking: objects split into parts of chunk_bytes; a 0-byte object is one empty chunk; the last part is short.
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS_XFER_DEFAULT_CHUNK (8ULL << 20)
typedef struct {
  int obj;                  /* index into the object list */
  uint32_t part, nparts;
  uint64_t offset, len;
  uint8_t id[16];           /* job_id | obj | part, big-endian */
} mlsys_xfer_chunk;

MLSYS_DEF void mlsys_xfer_chunk_id(uint64_t job_id, uint32_t obj, uint32_t part, uint8_t id[16]);
/* A deterministic job id from the object list and chunk size (FNV-1a 64; never 0). */
MLSYS_DEF uint64_t mlsys_xfer_job_id(const mlsys_xfer_obj *objs, int n, uint64_t chunk_bytes);
/* chunk_bytes 0 → 8 MiB. *chunks freed with mlsys_free. */
MLSYS_DEF mlsys_status mlsys_xfer_chunk_objects(const mlsys_xfer_obj *objs, int n, uint64_t chunk_bytes,
                                                uint64_t job_id, mlsys_xfer_chunk **chunks, uint64_t *nchunks);
/* The chunk size a source uses when its chunk_bytes is 0: Skyplane's 8 MiB, or smaller when the overlay has relays
   and the transfer is small against the pipeline. A relay forwards a chunk only once it has all of it, and a chunk
   holds its source slot until the destination has written it (end-to-end acks), so the last queue_cap chunks drain
   hop after hop: on the Fig 4.1 overlay a copy took (bytes + ≈ queue_cap · chunk · hops) / rate (RESULTS §5b.5;
   16 chunks of 8 MiB through one relay reached 51 % of the planned rate). The rule keeps that tail under 1/12 of
   the transfer: chunk ≤ bytes / (12 · queue_cap · hops), hops = the longest source-to-destination path in edges,
   for overlays with relays; never above 8 MiB, a multiple of 64 KiB (the rate limiter's piece) and at least that,
   and large enough that no object has more than 2^20 parts. queue_cap ≤ 0 → 16. */
MLSYS_DEF uint64_t mlsys_xfer_chunk_auto(const mlsys_xfer_overlay *ov, int queue_cap, const mlsys_xfer_obj *objs, int n);

/* ---------------------------------------------------------------------------------------------------------------
   Overlay check: one SRC, one DST, edges between existing gateways, no cycles, every relay forwards, the
   destination is reachable, ≤ 64 outgoing connections per gateway, hosts are IPv4 literals.
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_xfer_overlay_check(const mlsys_xfer_overlay *ov);

/* ---------------------------------------------------------------------------------------------------------------
   Gateways
   --------------------------------------------------------------------------------------------------------------- */
enum { MLSYS_XFER_DYNAMIC = 0, MLSYS_XFER_ROUND_ROBIN = 1 };

typedef struct {
  int kill_every;           /* > 0: every K-th chunk sent, shut the connection down mid-frame */
  int corrupt_every;        /* > 0: every K-th nonempty chunk sent with one payload byte flipped */
  int slow_conn;            /* > 0: out-connection slow_conn-1 of the gateway (edges in overlay order, then
                               connections) is throttled */
  double slow_factor;       /* its rate = edge rate / nconn / slow_factor (default 10) */
  double slow_gbps;         /* its rate when the edge is unlimited (default 0.1) */
  uint64_t seed;            /* which payload byte is flipped */
} mlsys_xfer_faults;

typedef struct {
  mlsys_xfer_store *store;  /* SRC: read from; DST: written to; relays: unused */
  uint64_t chunk_bytes;     /* SRC: part size (≤ 1 GiB); 0 → mlsys_xfer_chunk_auto: 8 MiB, smaller through relays */
  int queue_cap;            /* chunks buffered per gateway (default 16): the flow-control window */
  int assign;               /* MLSYS_XFER_DYNAMIC (default) or MLSYS_XFER_ROUND_ROBIN */
  int readers;              /* SRC: store reader threads (default 4) */
  uint64_t job_id;          /* SRC: default mlsys_xfer_job_id(); others: 0 = take the first one seen */
  double hello_timeout_s;   /* drop a client without a valid frame after this (default 5) */
  double io_timeout_s;      /* drop a connection stalled mid-frame this long (default 30) */
  double backoff_max_s;     /* reconnect backoff cap (default 0.5; starts at 10 ms, doubles) */
  double fin_timeout_s;     /* wait for a FIN's ack at most this long (default 2) */
  double timeout_s;         /* mlsys_xfer_gateway_run: give up after this (default 0 = never) */
  mlsys_xfer_faults faults;
} mlsys_xfer_gw_opts;

typedef struct {
  int id, role, port;
  uint64_t objects;         /* SRC: listed; DST: committed */
  uint64_t chunks, bytes;   /* SRC: acked; RELAY: forwarded and acked downstream; DST: written (first copies) */
  uint64_t chunks_in, bytes_in;     /* intact DATA frames received */
  uint64_t chunks_out, bytes_out;   /* payload sent, resends included */
  uint64_t resends;         /* chunks requeued after a NACK or a dead connection */
  uint64_t checksum_failures, duplicates, conn_failures, dropped_clients;
  uint64_t peak_buffered, buffer_bound;   /* payload bytes held at once; the bound it must stay under */
  uint64_t chunk_bytes;     /* SRC: the part size it used (chosen by mlsys_xfer_chunk_auto when the option was 0) */
  double seconds;           /* start → done */
  int nedge;                /* the overlay's edge count */
  uint64_t *edge_bytes;     /* [nedge] payload bytes this gateway sent on each edge (0 on others' edges) */
  int nconn;
  uint64_t *conn_bytes;     /* [nconn] payload bytes each of its out-connections sent (its out-edges in overlay order,
                               then their connections: the numbering of faults.slow_conn), resends included */
} mlsys_xfer_gw_result;

typedef struct mlsys_xfer_gateway mlsys_xfer_gateway;

/* Starts gateway `id` of the overlay (copied). Listens on gw.host:gw.port (0 → ephemeral) when it has in-edges;
   out-edges connect to the ports the overlay names (they must be known: start downstream gateways first). */
MLSYS_DEF mlsys_status mlsys_xfer_gateway_start(const mlsys_xfer_overlay *ov, int id, const mlsys_xfer_gw_opts *o,
                                                mlsys_xfer_gateway **out);
MLSYS_DEF int mlsys_xfer_gateway_port(const mlsys_xfer_gateway *g);
/* Waits until the gateway is done (timeout_s ≤ 0: forever) and its threads have exited; fills r (NULL allowed).
   MLSYS_ERR_TIMEOUT leaves it running. The status is the job's: an abort or a store failure is an error. */
MLSYS_DEF mlsys_status mlsys_xfer_gateway_wait(mlsys_xfer_gateway *g, double timeout_s, mlsys_xfer_gw_result *r);
MLSYS_DEF void mlsys_xfer_gateway_stats(mlsys_xfer_gateway *g, mlsys_xfer_gw_result *r);   /* live snapshot */
MLSYS_DEF void mlsys_xfer_gateway_stop(mlsys_xfer_gateway *g);   /* hard stop: no FIN; then wait returns */
MLSYS_DEF void mlsys_xfer_gateway_free(mlsys_xfer_gateway *g);   /* stops it if running */
/* start + wait in one blocking call (store overrides o->store); ports come from the overlay. */
MLSYS_DEF mlsys_status mlsys_xfer_gateway_run(const mlsys_xfer_overlay *ov, int id, mlsys_xfer_store *store,
                                              const mlsys_xfer_gw_opts *o, mlsys_xfer_gw_result *r);
MLSYS_DEF void mlsys_xfer_gw_result_free(mlsys_xfer_gw_result *r);

/* ---------------------------------------------------------------------------------------------------------------
   Whole transfer in this process
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_xfer_gw_opts gw;    /* for every gateway started here (gw.store ignored) */
  uint64_t external_mask;   /* bit i: gateway i runs elsewhere (another process); its port must be set */
  double timeout_s;         /* whole copy (default 0 = none) */
  int progress;             /* a progress line on stderr (when it is a terminal) */
} mlsys_xfer_copy_opts;

typedef struct {
  uint64_t bytes, objects, chunks;   /* acked at the source */
  uint64_t chunk_bytes;              /* the source's part size (mlsys_xfer_chunk_auto's when the option was 0) */
  double seconds, gbps;              /* source start → every chunk acked */
  uint64_t resends, checksum_failures, duplicates, conn_failures, dropped_clients;   /* over all gateways */
  int nedge;
  uint64_t *edge_bytes;              /* [nedge] payload bytes sent per overlay edge, resends included */
  int ngw;
  mlsys_xfer_gw_result *gw;          /* [ngw] per gateway (zero for external ones) */
} mlsys_xfer_copy_result;

MLSYS_DEF mlsys_status mlsys_xfer_copy(const mlsys_xfer_overlay *ov, mlsys_xfer_store *src, mlsys_xfer_store *dst,
                                       const mlsys_xfer_copy_opts *o, mlsys_xfer_copy_result *r);
MLSYS_DEF void mlsys_xfer_copy_result_free(mlsys_xfer_copy_result *r);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_DATAPLANE_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#ifdef MLSYS_XFER_DATAPLANE_IMPLEMENTATION
#ifndef MLSYS_XFER_DATAPLANE_IMPLEMENTATION_DONE
#define MLSYS_XFER_DATAPLANE_IMPLEMENTATION_DONE

#include <pthread.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
   1. CRC-32C
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF uint32_t mlsys_xfer_crc32c(uint32_t crc, const void *buf, size_t n) { return mlsys_crc32c(crc, buf, n); }

/* ---------------------------------------------------------------------------------------------------------------
   2. Wire format
   --------------------------------------------------------------------------------------------------------------- */
static void mlsys__xfer_dp_put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void mlsys__xfer_dp_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static void mlsys__xfer_dp_put64(uint8_t *p, uint64_t v) {
  mlsys__xfer_dp_put32(p, (uint32_t)(v >> 32)); mlsys__xfer_dp_put32(p + 4, (uint32_t)v);
}
static uint32_t mlsys__xfer_dp_get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t mlsys__xfer_dp_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t mlsys__xfer_dp_get64(const uint8_t *p) {
  return (uint64_t)mlsys__xfer_dp_get32(p) << 32 | mlsys__xfer_dp_get32(p + 4);
}

static uint64_t mlsys__xfer_dp_nparts(uint64_t size, uint64_t part_bytes) {
  if (size == 0) return 1;
  return size / part_bytes + (size % part_bytes != 0);
}
static uint64_t mlsys__xfer_dp_part_len(uint64_t size, uint64_t part_bytes, uint64_t part) {
  uint64_t off = part * part_bytes;
  return off >= size ? 0 : (size - off < part_bytes ? size - off : part_bytes);
}

/* The checks pack and unpack share: field ranges and, for DATA, consistency with the object's part layout. */
static mlsys_status mlsys__xfer_dp_hdr_check(const mlsys_xfer_wire_hdr *h, size_t key_len) {
  uint64_t np;
  size_t i;
  if (h->type < MLSYS_XFER_FRAME_DATA || h->type > MLSYS_XFER_FRAME_FIN)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: unknown frame type %d", h->type);
  if (h->data_len > MLSYS_XFER_DATA_MAX)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: data_len %llu exceeds the 1 GiB limit",
                           (unsigned long long)h->data_len);
  if (key_len > MLSYS_XFER_KEY_MAX)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: key length %zu exceeds %d bytes", key_len, MLSYS_XFER_KEY_MAX);
  if (h->is_compressed) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: compressed chunks are not supported");
  if (h->gw < 0 || h->gw > 65535) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: gateway id %d out of range", h->gw);
  for (i = 0; i < key_len; i++)   /* every frame type: a NUL would make the key mean something shorter */
    if (h->key[i] == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: object key contains a NUL byte");
  if (h->type != MLSYS_XFER_FRAME_DATA) {
    if (h->data_len) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: a %s frame carries %llu payload bytes",
                                            h->type == MLSYS_XFER_FRAME_FIN ? "FIN" : "HELLO",
                                            (unsigned long long)h->data_len);
    return MLSYS_OK;
  }
  if (key_len == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: DATA frame without an object key");
  if (h->part_bytes == 0 || h->part_bytes > MLSYS_XFER_DATA_MAX)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: part_bytes %llu is not in [1, 1 GiB]",
                           (unsigned long long)h->part_bytes);
  np = mlsys__xfer_dp_nparts(h->obj_size, h->part_bytes);
  if (np > MLSYS_XFER_MAX_PARTS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: '%.64s' (%llu bytes in parts of %llu) has more than %u parts",
                           h->key, (unsigned long long)h->obj_size, (unsigned long long)h->part_bytes, MLSYS_XFER_MAX_PARTS);
  if ((uint64_t)h->part >= np)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: part %u of '%.64s' is past its %llu parts", h->part, h->key,
                           (unsigned long long)np);
  if (h->data_len != mlsys__xfer_dp_part_len(h->obj_size, h->part_bytes, h->part))
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: part %u of '%.64s' (%llu bytes, parts of %llu) has data_len %llu",
                           h->part, h->key, (unsigned long long)h->obj_size, (unsigned long long)h->part_bytes,
                           (unsigned long long)h->data_len);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_wire_pack(const mlsys_xfer_wire_hdr *h, uint8_t *out, size_t cap, size_t *len) {
  size_t kl, total;
  mlsys_status st;
  if (!h || !out) return mlsys_set_error(MLSYS_ERR_ARG, "wire: NULL header or buffer");
  kl = strnlen(h->key, sizeof h->key);
  if ((st = mlsys__xfer_dp_hdr_check(h, kl)) != MLSYS_OK) return st;
  total = MLSYS_XFER_WIRE_MIN_LEN + kl;
  if (cap < total) return mlsys_set_error(MLSYS_ERR_ARG, "wire: header needs %zu bytes, buffer has %zu", total, cap);
  mlsys__xfer_dp_put64(out, MLSYS_XFER_WIRE_MAGIC);
  mlsys__xfer_dp_put32(out + 8, MLSYS_XFER_WIRE_VERSION);
  memcpy(out + 12, h->chunk_id, 16);
  mlsys__xfer_dp_put64(out + 28, h->data_len);
  out[36] = h->is_compressed;
  mlsys__xfer_dp_put64(out + 37, h->n_left);
  out[45] = (uint8_t)h->type;
  out[46] = (uint8_t)h->flags;
  mlsys__xfer_dp_put16(out + 47, (uint32_t)h->gw);
  mlsys__xfer_dp_put32(out + 49, h->crc);
  mlsys__xfer_dp_put64(out + 53, h->job_id);
  mlsys__xfer_dp_put64(out + 61, h->obj_size);
  mlsys__xfer_dp_put64(out + 69, h->part_bytes);
  mlsys__xfer_dp_put32(out + 77, h->part);
  mlsys__xfer_dp_put16(out + 81, (uint32_t)kl);
  memcpy(out + 83, h->key, kl);
  mlsys__xfer_dp_put32(out + 83 + kl, mlsys_xfer_crc32c(0, out, 83 + kl));
  if (len) *len = total;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_wire_header_len(const uint8_t *in, size_t len, size_t *total) {
  uint64_t magic;
  uint32_t ver, kl;
  if (len < MLSYS_XFER_WIRE_BASE_LEN)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: truncated header: %zu of at least %d bytes", len,
                           MLSYS_XFER_WIRE_MIN_LEN);
  magic = mlsys__xfer_dp_get64(in);
  if (magic != MLSYS_XFER_WIRE_MAGIC)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: bad magic 0x%016llx (expected 0x534B595F4C41524B \"SKY_LARK\")",
                           (unsigned long long)magic);
  ver = mlsys__xfer_dp_get32(in + 8);
  if (ver != MLSYS_XFER_WIRE_VERSION)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: unsupported protocol version %u (this side speaks version %u)",
                           ver, MLSYS_XFER_WIRE_VERSION);
  if (mlsys__xfer_dp_get64(in + 28) > MLSYS_XFER_DATA_MAX)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: data_len %llu exceeds the 1 GiB limit",
                           (unsigned long long)mlsys__xfer_dp_get64(in + 28));
  if (len < MLSYS_XFER_WIRE_PREFIX_LEN)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: truncated header: %zu of at least %d bytes", len,
                           MLSYS_XFER_WIRE_MIN_LEN);
  if (in[45] > MLSYS_XFER_FRAME_FIN) return mlsys_set_error(MLSYS_ERR_PARSE, "wire: unknown frame type %u", in[45]);
  kl = mlsys__xfer_dp_get16(in + 81);
  if (kl > MLSYS_XFER_KEY_MAX)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "wire: key length %u exceeds %d bytes", kl, MLSYS_XFER_KEY_MAX);
  *total = MLSYS_XFER_WIRE_MIN_LEN + kl;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_wire_unpack(const uint8_t *in, size_t len, mlsys_xfer_wire_hdr *h, size_t *used) {
  size_t total, kl;
  mlsys_status st;
  uint32_t want, got;
  if (!in || !h) return mlsys_set_error(MLSYS_ERR_ARG, "wire: NULL input or header");
  memset(h, 0, sizeof *h);
  if ((st = mlsys_xfer_wire_header_len(in, len, &total)) != MLSYS_OK) return st;
  if (len < total)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: truncated header: %zu of %zu bytes", len, total);
  kl = total - MLSYS_XFER_WIRE_MIN_LEN;
  want = mlsys__xfer_dp_get32(in + 83 + kl);
  got = mlsys_xfer_crc32c(0, in, 83 + kl);
  if (want != got)
    return mlsys_set_error(MLSYS_ERR_PARSE, "wire: header checksum mismatch (0x%08x on the wire, 0x%08x computed)",
                           want, got);
  memcpy(h->chunk_id, in + 12, 16);
  h->data_len = mlsys__xfer_dp_get64(in + 28);
  h->is_compressed = in[36];
  h->n_left = mlsys__xfer_dp_get64(in + 37);
  h->type = in[45];
  h->flags = in[46];
  h->gw = (int)mlsys__xfer_dp_get16(in + 47);
  h->crc = mlsys__xfer_dp_get32(in + 49);
  h->job_id = mlsys__xfer_dp_get64(in + 53);
  h->obj_size = mlsys__xfer_dp_get64(in + 61);
  h->part_bytes = mlsys__xfer_dp_get64(in + 69);
  h->part = mlsys__xfer_dp_get32(in + 77);
  memcpy(h->key, in + 83, kl);
  h->key[kl] = 0;
  if ((st = mlsys__xfer_dp_hdr_check(h, kl)) != MLSYS_OK) { memset(h, 0, sizeof *h); return st; }
  if (used) *used = total;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_xfer_ack_pack(const mlsys_xfer_ack *a, uint8_t out[MLSYS_XFER_ACK_LEN]) {
  mlsys__xfer_dp_put32(out, MLSYS_XFER_ACK_MAGIC);
  out[4] = (uint8_t)a->status;
  out[5] = out[6] = out[7] = 0;
  memcpy(out + 8, a->chunk_id, 16);
  mlsys__xfer_dp_put32(out + 24, mlsys_xfer_crc32c(0, out, 24));
}

MLSYS_DEF mlsys_status mlsys_xfer_ack_unpack(const uint8_t *in, size_t len, mlsys_xfer_ack *a) {
  uint32_t m;
  memset(a, 0, sizeof *a);
  if (len < MLSYS_XFER_ACK_LEN)
    return mlsys_set_error(MLSYS_ERR_PARSE, "ack: truncated: %zu of %d bytes", len, MLSYS_XFER_ACK_LEN);
  m = mlsys__xfer_dp_get32(in);
  if (m != MLSYS_XFER_ACK_MAGIC) return mlsys_set_error(MLSYS_ERR_PARSE, "ack: bad magic 0x%08x (expected \"SKYA\")", m);
  if (mlsys__xfer_dp_get32(in + 24) != mlsys_xfer_crc32c(0, in, 24))
    return mlsys_set_error(MLSYS_ERR_PARSE, "ack: checksum mismatch");
  if (in[4] > MLSYS_XFER_ACK_FIN || in[5] || in[6] || in[7])
    return mlsys_set_error(MLSYS_ERR_PARSE, "ack: unknown status %u", in[4]);
  a->status = in[4];
  memcpy(a->chunk_id, in + 8, 16);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   3. Chunking
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF void mlsys_xfer_chunk_id(uint64_t job_id, uint32_t obj, uint32_t part, uint8_t id[16]) {
  mlsys__xfer_dp_put64(id, job_id);
  mlsys__xfer_dp_put32(id + 8, obj);
  mlsys__xfer_dp_put32(id + 12, part);
}

MLSYS_DEF uint64_t mlsys_xfer_job_id(const mlsys_xfer_obj *objs, int n, uint64_t chunk_bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  int i;
  size_t k;
  uint8_t b[8];
#define MLSYS__XFER_DP_FNV(byte) (h = (h ^ (uint8_t)(byte)) * 0x100000001b3ULL)
  mlsys__xfer_dp_put64(b, chunk_bytes);
  for (k = 0; k < 8; k++) MLSYS__XFER_DP_FNV(b[k]);
  for (i = 0; i < n; i++) {
    for (k = 0; objs[i].key && objs[i].key[k]; k++) MLSYS__XFER_DP_FNV(objs[i].key[k]);
    MLSYS__XFER_DP_FNV(0);
    mlsys__xfer_dp_put64(b, objs[i].size);
    for (k = 0; k < 8; k++) MLSYS__XFER_DP_FNV(b[k]);
  }
#undef MLSYS__XFER_DP_FNV
  return h ? h : 1;
}

MLSYS_DEF mlsys_status mlsys_xfer_chunk_objects(const mlsys_xfer_obj *objs, int n, uint64_t chunk_bytes,
                                                uint64_t job_id, mlsys_xfer_chunk **chunks, uint64_t *nchunks) {
  uint64_t total = 0, k = 0, np, p;
  int i;
  mlsys_xfer_chunk *c;
  *chunks = NULL;
  *nchunks = 0;
  if (n < 0 || (n > 0 && !objs)) return mlsys_set_error(MLSYS_ERR_ARG, "chunking: bad object list");
  if (!chunk_bytes) chunk_bytes = MLSYS_XFER_DEFAULT_CHUNK;
  if (chunk_bytes > MLSYS_XFER_DATA_MAX)
    return mlsys_set_error(MLSYS_ERR_ARG, "chunking: chunk_bytes %llu exceeds 1 GiB", (unsigned long long)chunk_bytes);
  for (i = 0; i < n; i++) {
    size_t kl = objs[i].key ? strlen(objs[i].key) : 0;
    if (kl == 0 || kl > MLSYS_XFER_KEY_MAX)
      return mlsys_set_error(MLSYS_ERR_ARG, "chunking: object %d has %s key", i, kl ? "a too long" : "an empty");
    np = mlsys__xfer_dp_nparts(objs[i].size, chunk_bytes);
    if (np > MLSYS_XFER_MAX_PARTS)
      return mlsys_set_error(MLSYS_ERR_TOO_BIG, "chunking: '%s' would have %llu parts (at most %u: raise chunk_bytes)",
                             objs[i].key, (unsigned long long)np, MLSYS_XFER_MAX_PARTS);
    total += np;
  }
  c = (mlsys_xfer_chunk *)mlsys_calloc(total ? (size_t)total : 1, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  for (i = 0; i < n; i++) {
    np = mlsys__xfer_dp_nparts(objs[i].size, chunk_bytes);
    for (p = 0; p < np; p++, k++) {
      c[k].obj = i;
      c[k].part = (uint32_t)p;
      c[k].nparts = (uint32_t)np;
      c[k].offset = p * chunk_bytes;
      c[k].len = mlsys__xfer_dp_part_len(objs[i].size, chunk_bytes, p);
      mlsys_xfer_chunk_id(job_id, (uint32_t)i, (uint32_t)p, c[k].id);
    }
  }
  *chunks = c;
  *nchunks = total;
  return MLSYS_OK;
}

MLSYS_DEF uint64_t mlsys_xfer_chunk_auto(const mlsys_xfer_overlay *ov, int queue_cap, const mlsys_xfer_obj *objs, int n) {
  const uint64_t piece = 64 << 10;
  uint64_t bytes = 0, biggest = 0, c = MLSYS_XFER_DEFAULT_CHUNK, need;
  int i, it, hops = 0, *len;
  if (queue_cap <= 0) queue_cap = 16;
  for (i = 0; i < n; i++) {
    bytes += objs[i].size;
    if (objs[i].size > biggest) biggest = objs[i].size;
  }
  /* the longest path in edges from the source (longest-path relaxation; ngw rounds bound it on any overlay) */
  if (ov && ov->ngw > 0 && (len = (int *)mlsys_alloc((size_t)ov->ngw, sizeof(int)))) {
    for (i = 0; i < ov->ngw; i++) len[i] = ov->gw[i].role == MLSYS_XFER_SRC ? 0 : -1;
    for (it = 0; it < ov->ngw; it++)
      for (i = 0; i < ov->nedge; i++) {
        const mlsys_xfer_edge *e = &ov->edge[i];
        if (e->from < 0 || e->from >= ov->ngw || e->to < 0 || e->to >= ov->ngw || len[e->from] < 0) continue;
        if (len[e->from] + 1 > len[e->to] && len[e->from] + 1 < ov->ngw) len[e->to] = len[e->from] + 1;
      }
    for (i = 0; i < ov->ngw; i++)
      if (ov->gw[i].role == MLSYS_XFER_DST && len[i] > hops) hops = len[i];
    mlsys_free(len);
  }
  if (hops >= 2) {
    c = bytes / (12 * (uint64_t)queue_cap * (uint64_t)hops);
    if (c > MLSYS_XFER_DEFAULT_CHUNK) c = MLSYS_XFER_DEFAULT_CHUNK;
    c -= c % piece;
    if (c < piece) c = piece;
  }
  need = (biggest + MLSYS_XFER_MAX_PARTS - 1) / MLSYS_XFER_MAX_PARTS;   /* at most 2^20 parts per object */
  if (c < need) c = (need + piece - 1) / piece * piece;
  return c;
}

/* ---------------------------------------------------------------------------------------------------------------
   4. Overlay check
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__xfer_dp_nconn(const mlsys_xfer_edge *e) { return e->nconn < 1 ? 1 : e->nconn; }

MLSYS_DEF mlsys_status mlsys_xfer_overlay_check(const mlsys_xfer_overlay *ov) {
  int i, nsrc = 0, ndst = 0, src = -1, dst = -1, changed;
  int *outc, *reach, *indeg, *order, nord = 0;
  struct in_addr a;
  mlsys_status st = MLSYS_OK;
  if (!ov || ov->ngw <= 0 || !ov->gw || ov->nedge < 0 || (ov->nedge > 0 && !ov->edge))
    return mlsys_set_error(MLSYS_ERR_ARG, "overlay: no gateways");
  if (ov->ngw > 65536) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "overlay: %d gateways (at most 65536)", ov->ngw);
  for (i = 0; i < ov->ngw; i++) {
    const mlsys_xfer_gw *g = &ov->gw[i];
    if (g->role == MLSYS_XFER_SRC) { nsrc++; src = i; }
    else if (g->role == MLSYS_XFER_DST) { ndst++; dst = i; }
    else if (g->role != MLSYS_XFER_RELAY) return mlsys_set_error(MLSYS_ERR_ARG, "overlay: gateway %d has role %d", i, g->role);
    if (memchr(g->host, 0, sizeof g->host) == NULL || inet_pton(AF_INET, g->host, &a) != 1)
      return mlsys_set_error(MLSYS_ERR_ARG, "overlay: gateway %d host '%.63s' is not an IPv4 address", i, g->host);
    if (g->port < 0 || g->port > 65535) return mlsys_set_error(MLSYS_ERR_ARG, "overlay: gateway %d port %d", i, g->port);
  }
  if (nsrc != 1 || ndst != 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "overlay: %d source and %d destination gateways (need one of each)", nsrc, ndst);
  outc = (int *)mlsys_calloc((size_t)ov->ngw * 4, sizeof(int));
  if (!outc) return MLSYS_ERR_NOMEM;
  reach = outc + ov->ngw; indeg = reach + ov->ngw; order = indeg + ov->ngw;
  for (i = 0; i < ov->nedge && st == MLSYS_OK; i++) {
    const mlsys_xfer_edge *e = &ov->edge[i];
    if (e->from < 0 || e->from >= ov->ngw || e->to < 0 || e->to >= ov->ngw || e->from == e->to)
      st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: edge %d (%d -> %d) is not between two gateways", i, e->from, e->to);
    else if (e->nconn > 64 || e->rate_gbps < 0 || e->rate_gbps != e->rate_gbps)
      st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: edge %d has %d connections, rate %g Gbps", i, e->nconn, e->rate_gbps);
    else if (e->to == src || e->from == dst)
      st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: edge %d (%d -> %d) enters the source or leaves the destination", i,
                           e->from, e->to);
    else if ((outc[e->from] += mlsys__xfer_dp_nconn(e)) > 64)
      st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: gateway %d has more than 64 outgoing connections", e->from);
    else indeg[e->to]++;
  }
  for (i = 0; i < ov->ngw && st == MLSYS_OK; i++)
    if (ov->gw[i].role == MLSYS_XFER_RELAY && (outc[i] == 0 || indeg[i] == 0))
      st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: relay %d has no %s edge", i, outc[i] ? "incoming" : "outgoing");
  if (st == MLSYS_OK) { /* Kahn: a cycle would let relays wait on each other's slots forever */
    int head = 0, j;
    for (i = 0; i < ov->ngw; i++) if (!indeg[i]) order[nord++] = i;
    while (head < nord) {
      int v = order[head++];
      for (j = 0; j < ov->nedge; j++)
        if (ov->edge[j].from == v && --indeg[ov->edge[j].to] == 0) order[nord++] = ov->edge[j].to;
    }
    if (nord != ov->ngw) st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: the edges form a cycle");
  }
  if (st == MLSYS_OK) {
    reach[src] = 1;
    do {
      changed = 0;
      for (i = 0; i < ov->nedge; i++)
        if (reach[ov->edge[i].from] && !reach[ov->edge[i].to]) reach[ov->edge[i].to] = changed = 1;
    } while (changed);
    if (!reach[dst]) st = mlsys_set_error(MLSYS_ERR_ARG, "overlay: the destination %d is unreachable from the source %d", dst, src);
  }
  mlsys_free(outc);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   5. Sockets, clocks, token buckets
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__xfer_dp_ld(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void mlsys__xfer_dp_st(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static void mlsys__xfer_dp_sleep(double s) {
  struct timespec ts;
  if (s <= 0) return;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void mlsys__xfer_dp_abstime(struct timespec *ts, double s) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += (time_t)s;
  ts->tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
  if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

static int mlsys__xfer_dp_write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = (const uint8_t *)buf;
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 1 done; 0 EOF before the first byte; -1 socket error; -2 stop/done flag; -3 timeout; -4 EOF mid-way.
   timeout_s ≤ 0: none. Polls in 200 ms slices so that the flags are seen. */
static int mlsys__xfer_dp_read_full(int fd, void *buf, size_t n, double timeout_s, const int *flag1, const int *flag2) {
  uint8_t *p = (uint8_t *)buf;
  size_t got = 0;
  double deadline = timeout_s > 0 ? mlsys_now() + timeout_s : 0;
  while (got < n) {
    struct pollfd pf;
    int ms = 200, pr;
    ssize_t r;
    if ((flag1 && mlsys__xfer_dp_ld(flag1)) || (flag2 && mlsys__xfer_dp_ld(flag2))) return -2;
    if (deadline > 0) {
      double rem = deadline - mlsys_now();
      if (rem <= 0) return -3;
      if (rem * 1000 < ms) ms = (int)(rem * 1000) + 1;
    }
    pf.fd = fd; pf.events = POLLIN; pf.revents = 0;
    pr = poll(&pf, 1, ms);
    if (pr < 0) { if (errno == EINTR) continue; return -1; }
    if (pr == 0) continue;
    r = recv(fd, p + got, n - got, 0);
    if (r < 0) { if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue; return -1; }
    if (r == 0) return got ? -4 : 0;
    got += (size_t)r;
  }
  return 1;
}

static const char *mlsys__xfer_dp_read_why(int r) {
  switch (r) {
    case 0: return "connection closed";
    case -1: return "socket error";
    case -2: return "gateway stopping";
    case -3: return "timed out";
    default: return "connection closed mid-frame (truncated)";
  }
}

static int mlsys__xfer_dp_connect(const char *host, int port, double timeout_s) {
  struct sockaddr_in sa;
  int fd, fl, one = 1, err = 0;
  socklen_t el = sizeof err;
  struct pollfd pf;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
  fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  fl = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    if (errno != EINPROGRESS) { close(fd); return -1; }
    pf.fd = fd; pf.events = POLLOUT; pf.revents = 0;
    if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fl);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* Shared by an edge's connections. Debt-based: a taker subtracts first and sleeps off any deficit, so concurrent
   takers queue up behind each other and the long-run rate is exact; the burst is one piece. */
typedef struct {
  pthread_mutex_t mu;
  double rate, tokens, burst, last;   /* bytes/s; rate 0 = unlimited */
} mlsys__xfer_dp_tb;

static void mlsys__xfer_dp_tb_init(mlsys__xfer_dp_tb *tb, double bytes_per_s, double burst) {
  pthread_mutex_init(&tb->mu, NULL);
  tb->rate = bytes_per_s;
  tb->burst = tb->tokens = burst;
  tb->last = mlsys_now();
}
/* Takes n bytes' worth of tokens at time `now` (seconds, mlsys_now's clock) and returns how long the caller must
   wait before sending them; the clock is a parameter so that the tests can check the arithmetic exactly. */
static double mlsys__xfer_dp_tb_debit(mlsys__xfer_dp_tb *tb, size_t n, double now) {
  double wait = 0;
  pthread_mutex_lock(&tb->mu);
  if (now > tb->last) {
    tb->tokens += (now - tb->last) * tb->rate;
    tb->last = now;
  }
  if (tb->tokens > tb->burst) tb->tokens = tb->burst;
  tb->tokens -= (double)n;
  if (tb->tokens < 0) wait = -tb->tokens / tb->rate;
  pthread_mutex_unlock(&tb->mu);
  return wait;
}
static void mlsys__xfer_dp_tb_take(mlsys__xfer_dp_tb *tb, size_t n) {
  if (!tb || tb->rate <= 0 || !n) return;
  mlsys__xfer_dp_sleep(mlsys__xfer_dp_tb_debit(tb, n, mlsys_now()));
}

/* ---------------------------------------------------------------------------------------------------------------
   6. Gateway state
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__XFER_DP_PIECE (64 * 1024)   /* pacing and fault-injection granularity */
#define MLSYS__XFER_DP_MAX_IN 256          /* concurrent in-connections per gateway */

typedef struct mlsys__xfer_dp_in mlsys__xfer_dp_in;
typedef struct mlsys__xfer_dp_ck mlsys__xfer_dp_ck;

struct mlsys__xfer_dp_ck {                 /* a chunk held in memory (it holds one slot) */
  mlsys__xfer_dp_ck *next;                 /* queue or a connection's unacked list */
  mlsys_xfer_wire_hdr h;
  uint8_t *data;
  uint64_t idx;                         /* SRC: index into the job's chunk table */
  mlsys__xfer_dp_in *up;                   /* RELAY: where to ack once downstream acked */
  int refs;                             /* 1 logical owner + writers in progress (under gw->mu) */
  int rr;                               /* round-robin: the connection it is dealt to */
};

struct mlsys__xfer_dp_in {                 /* an accepted connection */
  mlsys__xfer_dp_in *next;
  struct mlsys_xfer_gateway *g;
  int fd, closed, finished, refs;       /* closed under wmu; finished/refs under gw->mu */
  pthread_t th;
  pthread_mutex_t wmu;                  /* acks come from several threads */
  char peer[64];
};

typedef struct {
  int edge, to;                         /* overlay edge index, downstream gateway */
  mlsys__xfer_dp_tb tb;
  uint64_t bytes;
} mlsys__xfer_dp_oedge;

typedef struct {
  struct mlsys_xfer_gateway *g;
  int index, oe;                        /* gateway-wide connection number, out-edge */
  pthread_t th, ack_th;
  int fd, sess_dead, fin_acked;         /* under gw->mu */
  mlsys__xfer_dp_ck *unacked, *unacked_tail;
  mlsys__xfer_dp_tb *slow;                 /* fault injection: per-connection throttle */
  uint8_t *scratch;                     /* corrupted copy of one piece */
  uint64_t bytes;                       /* payload sent (under gw->mu) */
} mlsys__xfer_dp_oc;

typedef struct {                        /* DST: one object being assembled */
  char *key;
  uint64_t size, part_bytes, nparts, nwritten;
  uint8_t *state;                       /* per part: 0 missing, 1 being written, 2 written */
  int begin;                            /* 0 none, 1 put_begin in progress, 2 begun */
  int committed;
  mlsys_xfer_upload *up;
} mlsys__xfer_dp_dobj;

struct mlsys_xfer_gateway {
  mlsys_xfer_overlay ov;
  int id, role;
  mlsys_xfer_gw_opts o;
  mlsys_xfer_store *store;
  pthread_mutex_t mu;
  pthread_cond_t qcv, slotcv, donecv;
  int stop, done, aborted, joined, listening, fin_from_upstream;
  mlsys_status err;
  char errmsg[512];
  uint64_t job_id;
  int job_known;
  double t0, t_done;
  /* queue and slots */
  mlsys__xfer_dp_ck *qhead, *qtail;
  int qlen, rr_next, slots_used;
  uint64_t buffered, peak_buffered, max_chunk;
  /* out-edges and connections */
  int noe, noc;
  mlsys__xfer_dp_oedge *oe;
  mlsys__xfer_dp_oc *oc;
  /* listener and in-connections */
  int lfd, port, nin;
  pthread_t lth;
  mlsys__xfer_dp_in *ins;
  /* SRC */
  mlsys_xfer_obj *objs;
  int nobj;
  mlsys_xfer_chunk *chunks;
  uint64_t nchunks, next_todo, nacked;
  uint8_t *acked;
  pthread_t *rth;
  int nrth;
  /* DST */
  pthread_mutex_t dmu;
  pthread_cond_t dcv;
  mlsys__xfer_dp_dobj **dtab;
  size_t dcap, dn;
  uint64_t committed;
  /* stats and faults */
  uint64_t chunks_done, bytes_done, chunks_in, bytes_in, chunks_out, bytes_out;
  uint64_t resends, crc_fail, dups, conn_fail, dropped, sent_ctr;
  mlsys_rng rng;
};

static void mlsys__xfer_dp_fail(struct mlsys_xfer_gateway *g, mlsys_status st, const char *msg) {
  /* first error wins; under g->mu */
  if (g->err == MLSYS_OK) {
    g->err = st;
    snprintf(g->errmsg, sizeof g->errmsg, "%s", msg);
  }
}

/* Marks the job over (normally or aborted); everyone waiting wakes. Under g->mu. */
static void mlsys__xfer_dp_finish(struct mlsys_xfer_gateway *g, int aborted) {
  if (g->done) return;
  if (aborted) g->aborted = 1;
  g->t_done = mlsys_now();
  mlsys__xfer_dp_st(&g->done, 1);
  pthread_cond_broadcast(&g->qcv);
  pthread_cond_broadcast(&g->slotcv);
  pthread_cond_broadcast(&g->donecv);
}

static void mlsys__xfer_dp_in_unref(mlsys__xfer_dp_in *c) {   /* under g->mu */
  if (--c->refs == 0) {
    if (c->fd >= 0) close(c->fd);
    pthread_mutex_destroy(&c->wmu);
    mlsys_free(c);
  }
}

static void mlsys__xfer_dp_slot_bytes(struct mlsys_xfer_gateway *g, uint64_t n) {   /* under g->mu */
  g->buffered += n;
  if (g->buffered > g->peak_buffered) g->peak_buffered = g->buffered;
  if (n > g->max_chunk) g->max_chunk = n;
}

/* Takes a slot for a payload of n bytes (blocks while queue_cap are taken). 0 when stopping. Under g->mu. */
static int mlsys__xfer_dp_slot_get(struct mlsys_xfer_gateway *g, uint64_t n) {
  while (g->slots_used >= g->o.queue_cap && !g->stop && !g->done) pthread_cond_wait(&g->slotcv, &g->mu);
  if (g->stop || g->done) return 0;
  g->slots_used++;
  mlsys__xfer_dp_slot_bytes(g, n);
  return 1;
}
static void mlsys__xfer_dp_slot_put(struct mlsys_xfer_gateway *g, uint64_t n) {   /* under g->mu */
  g->slots_used--;
  g->buffered -= n;
  pthread_cond_signal(&g->slotcv);
}

static void mlsys__xfer_dp_ck_unref(struct mlsys_xfer_gateway *g, mlsys__xfer_dp_ck *ck) {   /* under g->mu */
  if (--ck->refs > 0) return;
  mlsys__xfer_dp_slot_put(g, ck->h.data_len);
  if (ck->up) mlsys__xfer_dp_in_unref(ck->up);
  mlsys_free(ck->data);
  mlsys_free(ck);
}

static void mlsys__xfer_dp_q_push(struct mlsys_xfer_gateway *g, mlsys__xfer_dp_ck *ck, int front) {   /* under g->mu */
  ck->next = NULL;
  if (front) {
    ck->next = g->qhead;
    g->qhead = ck;
    if (!g->qtail) g->qtail = ck;
  } else {
    if (g->qtail) g->qtail->next = ck; else g->qhead = ck;
    g->qtail = ck;
  }
  g->qlen++;
  pthread_cond_broadcast(&g->qcv);
}

/* A dead session's unacked chunks go back to the front of the queue (dealt round-robin again). Under g->mu. */
static void mlsys__xfer_dp_sess_fail(mlsys__xfer_dp_oc *c) {
  struct mlsys_xfer_gateway *g = c->g;
  mlsys__xfer_dp_ck *ck, *nx;
  if (c->sess_dead) return;
  c->sess_dead = 1;
  if (!g->done && !g->stop) g->conn_fail++;
  for (ck = c->unacked; ck; ck = nx) {
    nx = ck->next;
    ck->rr = g->rr_next++ % g->noc;
    mlsys__xfer_dp_q_push(g, ck, 1);
    if (!g->done) g->resends++;
  }
  c->unacked = c->unacked_tail = NULL;
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
  pthread_cond_broadcast(&g->qcv);
  pthread_cond_broadcast(&g->donecv);
}

static mlsys__xfer_dp_ck *mlsys__xfer_dp_unacked_take(mlsys__xfer_dp_oc *c, const uint8_t *id) {   /* under g->mu */
  mlsys__xfer_dp_ck *ck, *prev = NULL;
  for (ck = c->unacked; ck; prev = ck, ck = ck->next)
    if (memcmp(ck->h.chunk_id, id, 16) == 0) {
      if (prev) prev->next = ck->next; else c->unacked = ck->next;
      if (c->unacked_tail == ck) c->unacked_tail = prev;
      ck->next = NULL;
      return ck;
    }
  return NULL;
}

/* The next chunk for connection c (dynamic: the head; round-robin: the first one dealt to c), moved to c's
   unacked list with a writer reference. NULL when the session died or the gateway is done. */
static mlsys__xfer_dp_ck *mlsys__xfer_dp_q_take(mlsys__xfer_dp_oc *c) {
  struct mlsys_xfer_gateway *g = c->g;
  mlsys__xfer_dp_ck *ck = NULL, *prev;
  pthread_mutex_lock(&g->mu);
  for (;;) {
    if (g->stop || g->done || c->sess_dead) { pthread_mutex_unlock(&g->mu); return NULL; }
    prev = NULL;
    for (ck = g->qhead; ck; prev = ck, ck = ck->next) {
      if (ck->up && mlsys__xfer_dp_ld(&ck->up->closed)) break;   /* upstream resends it: drop this copy */
      if (g->o.assign != MLSYS_XFER_ROUND_ROBIN || ck->rr == c->index) break;
    }
    if (ck) {
      if (prev) prev->next = ck->next; else g->qhead = ck->next;
      if (g->qtail == ck) g->qtail = prev;
      g->qlen--;
      ck->next = NULL;
      if (ck->up && mlsys__xfer_dp_ld(&ck->up->closed)) { mlsys__xfer_dp_ck_unref(g, ck); continue; }
      break;
    }
    pthread_cond_wait(&g->qcv, &g->mu);
  }
  if (c->unacked_tail) c->unacked_tail->next = ck; else c->unacked = ck;
  c->unacked_tail = ck;
  ck->refs++;
  pthread_mutex_unlock(&g->mu);
  return ck;
}

/* Sends an ack on an in-connection (relay acks upstream from ack-reader threads; receivers ack directly). */
static void mlsys__xfer_dp_in_ack(mlsys__xfer_dp_in *c, const uint8_t *id, int status) {
  mlsys_xfer_ack a;
  uint8_t b[MLSYS_XFER_ACK_LEN];
  memcpy(a.chunk_id, id, 16);
  a.status = status;
  mlsys_xfer_ack_pack(&a, b);
  pthread_mutex_lock(&c->wmu);
  if (!c->closed && mlsys__xfer_dp_write_all(c->fd, b, sizeof b) != 0) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&c->wmu);
}

/* ---------------------------------------------------------------------------------------------------------------
   7. Destination: each part written once, put_begin on the first part, put_commit when all are in
   --------------------------------------------------------------------------------------------------------------- */
static size_t mlsys__xfer_dp_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  while (*s) h = (h ^ (uint8_t)*s++) * 0x100000001b3ULL;
  return (size_t)h;
}

static mlsys__xfer_dp_dobj *mlsys__xfer_dp_dobj_get(struct mlsys_xfer_gateway *g, const mlsys_xfer_wire_hdr *h) {   /* under dmu */
  size_t i, j;
  mlsys__xfer_dp_dobj *o;
  if (g->dn * 2 >= g->dcap) {   /* open addressing, grown at half load */
    size_t nc = g->dcap ? g->dcap * 2 : 256;
    mlsys__xfer_dp_dobj **nt = (mlsys__xfer_dp_dobj **)mlsys_calloc(nc, sizeof *nt);
    if (!nt) return NULL;
    for (i = 0; i < g->dcap; i++)
      if (g->dtab[i]) {
        for (j = mlsys__xfer_dp_hash(g->dtab[i]->key) & (nc - 1); nt[j]; j = (j + 1) & (nc - 1)) {}
        nt[j] = g->dtab[i];
      }
    mlsys_free(g->dtab);
    g->dtab = nt;
    g->dcap = nc;
  }
  for (i = mlsys__xfer_dp_hash(h->key) & (g->dcap - 1); g->dtab[i]; i = (i + 1) & (g->dcap - 1))
    if (strcmp(g->dtab[i]->key, h->key) == 0) return g->dtab[i];
  o = (mlsys__xfer_dp_dobj *)mlsys_calloc(1, sizeof *o);
  if (!o) return NULL;
  o->key = mlsys_strdup(h->key);
  o->size = h->obj_size;
  o->part_bytes = h->part_bytes;
  o->nparts = mlsys__xfer_dp_nparts(h->obj_size, h->part_bytes);
  o->state = (uint8_t *)mlsys_calloc((size_t)o->nparts, 1);
  if (!o->key || !o->state) { mlsys_free(o->key); mlsys_free(o->state); mlsys_free(o); return NULL; }
  g->dtab[i] = o;
  g->dn++;
  return o;
}

/* Returns the ack status for this part. */
static int mlsys__xfer_dp_deliver(struct mlsys_xfer_gateway *g, const mlsys_xfer_wire_hdr *h, const uint8_t *data) {
  mlsys__xfer_dp_dobj *o;
  mlsys_status st;
  mlsys_xfer_store *s = g->store;
  char msg[512];
  pthread_mutex_lock(&g->dmu);
  o = mlsys__xfer_dp_dobj_get(g, h);
  if (!o) { pthread_mutex_unlock(&g->dmu); mlsys_log(MLSYS_LOG_ERROR, "xfer gateway %d: out of memory", g->id); return MLSYS_XFER_ACK_ERROR; }
  if (o->size != h->obj_size || o->part_bytes != h->part_bytes) {
    pthread_mutex_unlock(&g->dmu);
    mlsys_log(MLSYS_LOG_ERROR, "xfer gateway %d: '%s' arrives with two layouts (%llu/%llu and %llu/%llu bytes)", g->id,
              h->key, (unsigned long long)o->size, (unsigned long long)o->part_bytes,
              (unsigned long long)h->obj_size, (unsigned long long)h->part_bytes);
    return MLSYS_XFER_ACK_ERROR;
  }
  for (;;) {
    if (o->committed || o->state[h->part] == 2) {   /* a resent copy: acked, not written again */
      g->dups++;
      pthread_mutex_unlock(&g->dmu);
      return MLSYS_XFER_ACK_OK;
    }
    if (o->state[h->part] == 1 || o->begin == 1) { pthread_cond_wait(&g->dcv, &g->dmu); continue; }
    if (o->begin == 0) {
      o->begin = 1;
      pthread_mutex_unlock(&g->dmu);
      st = s->put_begin(s, h->key, h->obj_size, h->part_bytes, &o->up);
      if (st != MLSYS_OK) snprintf(msg, sizeof msg, "%.500s", mlsys_last_error());
      pthread_mutex_lock(&g->dmu);
      o->begin = st == MLSYS_OK ? 2 : 0;
      pthread_cond_broadcast(&g->dcv);
      if (st != MLSYS_OK) {
        pthread_mutex_unlock(&g->dmu);
        mlsys_log(MLSYS_LOG_ERROR, "xfer gateway %d: put_begin '%s': %s", g->id, h->key, msg);
        return MLSYS_XFER_ACK_ERROR;
      }
      continue;
    }
    break;
  }
  o->state[h->part] = 1;
  pthread_mutex_unlock(&g->dmu);
  st = MLSYS_OK;
  if (h->data_len) st = s->put_part(s, o->up, (int)h->part, data, h->data_len);   /* a 0-byte object has no parts to put */
  if (st != MLSYS_OK) snprintf(msg, sizeof msg, "put_part '%.200s' part %u: %.250s", h->key, h->part, mlsys_last_error());
  pthread_mutex_lock(&g->dmu);
  if (st == MLSYS_OK && o->nwritten + 1 == o->nparts) {
    /* the last part stays "being written" until the commit, so that its ack means the object is committed */
    pthread_mutex_unlock(&g->dmu);
    st = s->put_commit(s, o->up);
    if (st != MLSYS_OK) snprintf(msg, sizeof msg, "put_commit '%.200s': %.250s", h->key, mlsys_last_error());
    pthread_mutex_lock(&g->dmu);
    o->up = NULL;   /* commit frees the upload, whatever its outcome */
    if (st == MLSYS_OK) { o->committed = 1; g->committed++; }
    else o->begin = 0;
  }
  if (st == MLSYS_OK) {
    o->state[h->part] = 2;
    o->nwritten++;
    g->bytes_done += h->data_len;
    g->chunks_done++;
  } else {
    o->state[h->part] = 0;
  }
  pthread_cond_broadcast(&g->dcv);
  pthread_mutex_unlock(&g->dmu);
  if (st != MLSYS_OK) {
    mlsys_log(MLSYS_LOG_ERROR, "xfer gateway %d: %s", g->id, msg);
    return MLSYS_XFER_ACK_ERROR;
  }
  return MLSYS_XFER_ACK_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   8. Receivers (one per accepted connection) and the listener
   --------------------------------------------------------------------------------------------------------------- */
/* Where a receiver's bytes come from: a socket, or memory in the fuzz target. Returns as read_full does; the
   timeout of the first byte of a frame is the caller's (hello timeout or none), the rest use io_timeout. */
typedef int (*mlsys__xfer_dp_readfn)(void *ctx, void *buf, size_t n, double timeout_s, int first);
typedef struct { int fd; const int *f1, *f2; double timeout; } mlsys__xfer_dp_sockrd;
static int mlsys__xfer_dp_sock_read(void *ctx, void *buf, size_t n, double timeout_s, int first) {
  mlsys__xfer_dp_sockrd *r = (mlsys__xfer_dp_sockrd *)ctx;
  return mlsys__xfer_dp_read_full(r->fd, buf, n, first ? r->timeout : timeout_s, r->f1, r->f2);
}

/* Reads and parses one frame header. 1: *h is valid; 0: the peer closed between frames after a valid frame (or
   the gateway is stopping: -2); -1: drop the connection, why says why. */
static int mlsys__xfer_dp_recv_header(mlsys__xfer_dp_readfn rd, void *ctx, int valid, double io_timeout_s, uint8_t *hb,
                                   mlsys_xfer_wire_hdr *h, char *why, size_t wl) {
  size_t total = 0;
  int r = rd(ctx, hb, 1, 0, 1);
  if (r == 0 && valid) return 0;   /* the sender closed between frames: its business */
  if (r == -2) return -2;
  if (r != 1) {
    snprintf(why, wl, "%s", r == -3 ? "no valid frame within the hello timeout" :
                            r == 0 ? "closed without sending a frame" : mlsys__xfer_dp_read_why(r));
    return -1;
  }
  r = rd(ctx, hb + 1, MLSYS_XFER_WIRE_PREFIX_LEN - 1, io_timeout_s, 0);
  if (r == -2) return -2;
  if (r != 1) { snprintf(why, wl, "header: %s", mlsys__xfer_dp_read_why(r == 0 ? -4 : r)); return -1; }
  if (mlsys_xfer_wire_header_len(hb, MLSYS_XFER_WIRE_PREFIX_LEN, &total) != MLSYS_OK) {
    snprintf(why, wl, "%.590s", mlsys_last_error());
    return -1;
  }
  r = rd(ctx, hb + MLSYS_XFER_WIRE_PREFIX_LEN, total - MLSYS_XFER_WIRE_PREFIX_LEN, io_timeout_s, 0);
  if (r == -2) return -2;
  if (r != 1) { snprintf(why, wl, "header: %s", mlsys__xfer_dp_read_why(r == 0 ? -4 : r)); return -1; }
  if (mlsys_xfer_wire_unpack(hb, total, h, NULL) != MLSYS_OK) { snprintf(why, wl, "%.590s", mlsys_last_error()); return -1; }
  return 1;
}

static void *mlsys__xfer_dp_receiver_main(void *arg) {
  mlsys__xfer_dp_in *c = (mlsys__xfer_dp_in *)arg;
  struct mlsys_xfer_gateway *g = c->g;
  uint8_t hb[MLSYS_XFER_WIRE_MAX_LEN];
  mlsys_xfer_wire_hdr *h = (mlsys_xfer_wire_hdr *)mlsys_alloc(1, sizeof *h);
  char why[600];
  int valid = 0, r;
  mlsys__xfer_dp_sockrd rd;
  rd.fd = c->fd; rd.f1 = &g->stop; rd.f2 = &g->done; rd.timeout = 0;
  why[0] = 0;
  if (!h) snprintf(why, sizeof why, "out of memory");
  while (h && !why[0]) {
    mlsys__xfer_dp_ck *ck = NULL;
    rd.timeout = valid ? 0 : g->o.hello_timeout_s;
    r = mlsys__xfer_dp_recv_header(mlsys__xfer_dp_sock_read, &rd, valid, g->o.io_timeout_s, hb, h, why, sizeof why);
    if (r != 1) break;
    /* The job id guards against stale senders of another job (there is no authentication). It is locked by the
       first intact DATA frame or a FIN, so a client that only sends a well-formed header cannot claim the gateway;
       job 0 is a sender that does not know the job yet (a relay's HELLO before its first chunk). */
    pthread_mutex_lock(&g->mu);
    r = !h->job_id || !g->job_known || g->job_id == h->job_id;
    if (r && h->job_id && !g->job_known && h->type == MLSYS_XFER_FRAME_FIN) { g->job_id = h->job_id; g->job_known = 1; }
    pthread_mutex_unlock(&g->mu);
    if (r && h->type == MLSYS_XFER_FRAME_FIN && !h->job_id) r = 0;
    if (!r) {
      snprintf(why, sizeof why, "frame of job %016llx, this gateway serves job %016llx", (unsigned long long)h->job_id,
               (unsigned long long)g->job_id);
      break;
    }
    valid = 1;
    if (h->type == MLSYS_XFER_FRAME_HELLO) continue;
    if (h->type == MLSYS_XFER_FRAME_FIN) {
      pthread_mutex_lock(&g->mu);
      g->fin_from_upstream = 1;
      mlsys__xfer_dp_finish(g, h->flags & MLSYS_XFER_FIN_ABORTED);
      pthread_mutex_unlock(&g->mu);
      mlsys__xfer_dp_in_ack(c, h->chunk_id, MLSYS_XFER_ACK_FIN);
      break;
    }
    /* DATA: take a slot before reading the payload — a full gateway stops reading here (flow control) */
    pthread_mutex_lock(&g->mu);
    r = mlsys__xfer_dp_slot_get(g, h->data_len);
    pthread_mutex_unlock(&g->mu);
    if (!r) break;
    ck = (mlsys__xfer_dp_ck *)mlsys_calloc(1, sizeof *ck);
    if (ck) {
      ck->refs = 1;
      ck->h = *h;
      if (h->data_len && !(ck->data = (uint8_t *)mlsys_alloc((size_t)h->data_len, 1))) { mlsys_free(ck); ck = NULL; }
    }
    if (!ck) {
      pthread_mutex_lock(&g->mu);
      mlsys__xfer_dp_slot_put(g, h->data_len);
      pthread_mutex_unlock(&g->mu);
      snprintf(why, sizeof why, "out of memory for a %llu-byte chunk", (unsigned long long)h->data_len);
      break;
    }
    r = h->data_len ? mlsys__xfer_dp_read_full(c->fd, ck->data, (size_t)h->data_len, g->o.io_timeout_s, &g->stop, &g->done) : 1;
    if (r != 1) {
      if (r != -2) snprintf(why, sizeof why, "payload of '%.200s' part %u: %s", h->key, h->part, mlsys__xfer_dp_read_why(r == 0 ? -4 : r));
      pthread_mutex_lock(&g->mu);
      mlsys__xfer_dp_ck_unref(g, ck);
      pthread_mutex_unlock(&g->mu);
      break;
    }
    if (mlsys_xfer_crc32c(0, ck->data, (size_t)h->data_len) != h->crc) {
      mlsys_log(MLSYS_LOG_WARN, "xfer gateway %d: CRC-32C mismatch on '%.200s' part %u from %s: NACK", g->id, h->key,
                h->part, c->peer);
      pthread_mutex_lock(&g->mu);
      g->crc_fail++;
      mlsys__xfer_dp_ck_unref(g, ck);
      pthread_mutex_unlock(&g->mu);
      mlsys__xfer_dp_in_ack(c, h->chunk_id, MLSYS_XFER_ACK_BAD_CHECKSUM);
      continue;
    }
    pthread_mutex_lock(&g->mu);
    if (!g->job_known) { g->job_id = h->job_id; g->job_known = 1; }
    r = g->job_id == h->job_id;   /* two jobs raced for an unlocked gateway: the first intact chunk won */
    if (r) { g->chunks_in++; g->bytes_in += h->data_len; }
    else mlsys__xfer_dp_ck_unref(g, ck);
    pthread_mutex_unlock(&g->mu);
    if (!r) {
      snprintf(why, sizeof why, "chunk of job %016llx, this gateway serves job %016llx", (unsigned long long)h->job_id,
               (unsigned long long)g->job_id);
      break;
    }
    if (g->role == MLSYS_XFER_DST) {
      int status = mlsys__xfer_dp_deliver(g, h, ck->data);
      pthread_mutex_lock(&g->mu);
      mlsys__xfer_dp_ck_unref(g, ck);
      pthread_mutex_unlock(&g->mu);
      mlsys__xfer_dp_in_ack(c, h->chunk_id, status);
    } else {
      pthread_mutex_lock(&g->mu);
      ck->up = c;
      c->refs++;
      ck->rr = g->rr_next++ % g->noc;
      mlsys__xfer_dp_q_push(g, ck, 0);
      pthread_mutex_unlock(&g->mu);
    }
  }
  if (why[0]) {
    mlsys_log(MLSYS_LOG_WARN, "xfer gateway %d: dropping connection from %s: %s", g->id, c->peer, why);
    pthread_mutex_lock(&g->mu);
    g->dropped++;
    pthread_mutex_unlock(&g->mu);
  }
  mlsys_free(h);
  pthread_mutex_lock(&c->wmu);
  mlsys__xfer_dp_st(&c->closed, 1);
  shutdown(c->fd, SHUT_RDWR);   /* the fd itself is closed with the last reference */
  pthread_mutex_unlock(&c->wmu);
  pthread_mutex_lock(&g->mu);
  c->finished = 1;
  pthread_cond_broadcast(&g->qcv);   /* queued copies from this connection can be dropped */
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

static void mlsys__xfer_dp_reap(struct mlsys_xfer_gateway *g, int all) {
  mlsys__xfer_dp_in **pp, *c;
  for (;;) {
    pthread_mutex_lock(&g->mu);
    for (pp = &g->ins; *pp && !(*pp)->finished && !all; pp = &(*pp)->next) {}
    c = *pp;
    if (c) { *pp = c->next; g->nin--; }
    pthread_mutex_unlock(&g->mu);
    if (!c) return;
    pthread_join(c->th, NULL);
    pthread_mutex_lock(&g->mu);
    mlsys__xfer_dp_in_unref(c);
    pthread_mutex_unlock(&g->mu);
  }
}

static void *mlsys__xfer_dp_listener_main(void *arg) {
  struct mlsys_xfer_gateway *g = (struct mlsys_xfer_gateway *)arg;
  while (!mlsys__xfer_dp_ld(&g->stop) && !mlsys__xfer_dp_ld(&g->done)) {
    struct pollfd pf;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd, one = 1;
    struct timeval tv;
    mlsys__xfer_dp_in *c;
    pf.fd = g->lfd; pf.events = POLLIN; pf.revents = 0;
    mlsys__xfer_dp_reap(g, 0);
    if (poll(&pf, 1, 100) <= 0) continue;
    fd = accept(g->lfd, (struct sockaddr *)&sa, &sl);
    if (fd < 0) continue;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* a peer that never reads its acks must not block an ack writer forever */
    tv.tv_sec = (time_t)g->o.io_timeout_s;
    tv.tv_usec = (long)((g->o.io_timeout_s - (double)tv.tv_sec) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c = g->nin < MLSYS__XFER_DP_MAX_IN ? (mlsys__xfer_dp_in *)mlsys_calloc(1, sizeof *c) : NULL;
    if (!c) {
      mlsys_log(MLSYS_LOG_WARN, "xfer gateway %d: refusing a connection (%d open)", g->id, g->nin);
      close(fd);
      continue;
    }
    c->g = g;
    c->fd = fd;
    c->refs = 1;
    pthread_mutex_init(&c->wmu, NULL);
    {
      char ip[INET_ADDRSTRLEN] = "?";
      inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
      snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(sa.sin_port));
    }
    pthread_mutex_lock(&g->mu);
    c->next = g->ins;
    g->ins = c;
    g->nin++;
    if (pthread_create(&c->th, NULL, mlsys__xfer_dp_receiver_main, c) != 0) {
      g->ins = c->next;
      g->nin--;
      mlsys__xfer_dp_in_unref(c);
      mlsys_log(MLSYS_LOG_ERROR, "xfer gateway %d: cannot start a receiver thread", g->id);
    }
    pthread_mutex_unlock(&g->mu);
  }
  close(g->lfd);
  g->lfd = -1;
  mlsys__xfer_dp_reap(g, 1);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------------------------
   9. Senders (one per out-connection) with their ack readers
   --------------------------------------------------------------------------------------------------------------- */
static void mlsys__xfer_dp_complete(struct mlsys_xfer_gateway *g, mlsys__xfer_dp_ck *ck, int status) {
  /* ck left every list; the caller holds no lock */
  if (g->role == MLSYS_XFER_SRC) {
    pthread_mutex_lock(&g->mu);
    if (status == MLSYS_XFER_ACK_ERROR) {
      char m[512];
      snprintf(m, sizeof m, "the destination could not store '%.200s' part %u (see its log)", ck->h.key, ck->h.part);
      mlsys__xfer_dp_fail(g, MLSYS_ERR_IO, m);
      mlsys__xfer_dp_finish(g, 1);
    } else if (!g->acked[ck->idx]) {
      g->acked[ck->idx] = 1;
      g->nacked++;
      g->chunks_done++;
      g->bytes_done += ck->h.data_len;
      if (g->nacked == g->nchunks) mlsys__xfer_dp_finish(g, 0);
    }
    mlsys__xfer_dp_ck_unref(g, ck);
    pthread_mutex_unlock(&g->mu);
  } else {
    mlsys__xfer_dp_in_ack(ck->up, ck->h.chunk_id, status);
    pthread_mutex_lock(&g->mu);
    if (status == MLSYS_XFER_ACK_OK) { g->chunks_done++; g->bytes_done += ck->h.data_len; }
    mlsys__xfer_dp_ck_unref(g, ck);
    pthread_mutex_unlock(&g->mu);
  }
}

static void *mlsys__xfer_dp_ackreader_main(void *arg) {
  mlsys__xfer_dp_oc *c = (mlsys__xfer_dp_oc *)arg;
  struct mlsys_xfer_gateway *g = c->g;
  uint8_t b[MLSYS_XFER_ACK_LEN];
  mlsys_xfer_ack a;
  int fd, r;
  pthread_mutex_lock(&g->mu);
  fd = c->fd;
  pthread_mutex_unlock(&g->mu);
  for (;;) {
    mlsys__xfer_dp_ck *ck;
    r = mlsys__xfer_dp_read_full(fd, b, sizeof b, 0, &g->stop, NULL);
    if (r == 1 && mlsys_xfer_ack_unpack(b, sizeof b, &a) != MLSYS_OK) {
      mlsys_log(MLSYS_LOG_WARN, "xfer gateway %d: bad ack from gateway %d: %s", g->id, g->oe[c->oe].to, mlsys_last_error());
      r = -1;
    }
    pthread_mutex_lock(&g->mu);
    if (r != 1 || c->sess_dead) {
      mlsys__xfer_dp_sess_fail(c);
      pthread_mutex_unlock(&g->mu);
      return NULL;
    }
    if (a.status == MLSYS_XFER_ACK_FIN) {
      c->fin_acked = 1;
      pthread_cond_broadcast(&g->donecv);
      pthread_mutex_unlock(&g->mu);
      continue;
    }
    ck = mlsys__xfer_dp_unacked_take(c, a.chunk_id);
    if (ck && a.status == MLSYS_XFER_ACK_BAD_CHECKSUM) {
      ck->rr = c->index;   /* round-robin keeps the chunk on its connection; dynamic takes it from the head */
      mlsys__xfer_dp_q_push(g, ck, 1);
      g->resends++;
      ck = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    if (ck) mlsys__xfer_dp_complete(g, ck, a.status);
  }
}

/* 0 sent; -1 socket error; -2 the gateway is done/stopping (frame cut short); -3 killed by fault injection */
static int mlsys__xfer_dp_send_chunk(mlsys__xfer_dp_oc *c, mlsys__xfer_dp_ck *ck) {
  struct mlsys_xfer_gateway *g = c->g;
  uint8_t hb[MLSYS_XFER_WIRE_MAX_LEN];
  mlsys_xfer_wire_hdr h;   /* a copy: another connection may be sending the same (requeued) chunk */
  size_t hl = 0;
  uint64_t off = 0, n = ck->h.data_len, kill_at = UINT64_MAX, corrupt_at = UINT64_MAX, k;
  mlsys__xfer_dp_tb *tb = &g->oe[c->oe].tb;
  int fd;
  pthread_mutex_lock(&g->mu);
  fd = c->fd;
  k = ++g->sent_ctr;
  if (g->o.faults.kill_every > 0 && k % (uint64_t)g->o.faults.kill_every == 0) kill_at = n / 2;
  if (g->o.faults.corrupt_every > 0 && n && k % (uint64_t)g->o.faults.corrupt_every == 0)
    corrupt_at = mlsys_rng_below(&g->rng, n);
  h = ck->h;
  h.n_left = (uint64_t)g->qlen;
  h.gw = g->id;
  pthread_mutex_unlock(&g->mu);
  if (mlsys_xfer_wire_pack(&h, hb, sizeof hb, &hl) != MLSYS_OK) return -1;
  if (kill_at == 0 && n == 0) {   /* an empty chunk dies halfway through its header */
    mlsys__xfer_dp_write_all(fd, hb, hl / 2);
    shutdown(fd, SHUT_RDWR);
    return -3;
  }
  if (mlsys__xfer_dp_write_all(fd, hb, hl) != 0) return -1;
  while (off < n) {
    uint64_t piece = n - off;
    const uint8_t *p = ck->data + off;
    int paced = tb->rate > 0 || c->slow || kill_at != UINT64_MAX || corrupt_at != UINT64_MAX;
    if (paced && piece > MLSYS__XFER_DP_PIECE) piece = MLSYS__XFER_DP_PIECE;
    if (kill_at > off && kill_at < off + piece) piece = kill_at - off;   /* stop exactly at the kill point */
    if (mlsys__xfer_dp_ld(&g->stop) || mlsys__xfer_dp_ld(&g->done)) return -2;
    if (off >= kill_at) {
      shutdown(fd, SHUT_RDWR);
      return -3;
    }
    mlsys__xfer_dp_tb_take(tb, (size_t)piece);
    mlsys__xfer_dp_tb_take(c->slow, (size_t)piece);
    if (corrupt_at >= off && corrupt_at < off + piece) {
      memcpy(c->scratch, p, (size_t)piece);
      c->scratch[corrupt_at - off] ^= 0x5A;
      p = c->scratch;
    }
    if (mlsys__xfer_dp_write_all(fd, p, (size_t)piece) != 0) return -1;
    off += piece;
    pthread_mutex_lock(&g->mu);
    g->oe[c->oe].bytes += piece;
    c->bytes += piece;
    g->bytes_out += piece;
    pthread_mutex_unlock(&g->mu);
  }
  pthread_mutex_lock(&g->mu);
  g->chunks_out++;
  pthread_mutex_unlock(&g->mu);
  return 0;
}

static int mlsys__xfer_dp_send_ctl(struct mlsys_xfer_gateway *g, int fd, int type) {
  mlsys_xfer_wire_hdr *h = (mlsys_xfer_wire_hdr *)mlsys_calloc(1, sizeof *h);
  uint8_t hb[MLSYS_XFER_WIRE_MAX_LEN];
  size_t hl = 0;
  int r = -1;
  if (!h) return -1;
  h->type = type;
  h->gw = g->id;
  pthread_mutex_lock(&g->mu);
  h->job_id = g->job_id;
  h->flags = type == MLSYS_XFER_FRAME_FIN && g->aborted ? MLSYS_XFER_FIN_ABORTED : 0;
  pthread_mutex_unlock(&g->mu);
  if (mlsys_xfer_wire_pack(h, hb, sizeof hb, &hl) == MLSYS_OK) r = mlsys__xfer_dp_write_all(fd, hb, hl);
  mlsys_free(h);
  return r;
}

/* Waits (under g->mu) until the session's FIN was acked or the session died, at most fin_timeout_s. */
static void mlsys__xfer_dp_wait_fin(mlsys__xfer_dp_oc *c) {
  struct mlsys_xfer_gateway *g = c->g;
  struct timespec ts;
  mlsys__xfer_dp_abstime(&ts, g->o.fin_timeout_s);
  while (!c->fin_acked && !c->sess_dead && !g->stop)
    if (pthread_cond_timedwait(&g->donecv, &g->mu, &ts) == ETIMEDOUT) break;
}

static void *mlsys__xfer_dp_sender_main(void *arg) {
  mlsys__xfer_dp_oc *c = (mlsys__xfer_dp_oc *)arg;
  struct mlsys_xfer_gateway *g = c->g;
  const mlsys_xfer_gw *to = &g->ov.gw[g->oe[c->oe].to];
  double backoff = 0.01;
  int fin_done = 0;
  while (!mlsys__xfer_dp_ld(&g->stop) && !mlsys__xfer_dp_ld(&g->done)) {
    int fd = mlsys__xfer_dp_connect(to->host, to->port, 2.0), clean = 1;
    if (fd < 0) {
      double t_end = mlsys_now() + backoff;   /* sleep in slices so that done/stop are seen */
      while (mlsys_now() < t_end && !mlsys__xfer_dp_ld(&g->stop) && !mlsys__xfer_dp_ld(&g->done)) mlsys__xfer_dp_sleep(0.01);
      backoff = backoff * 2 < g->o.backoff_max_s ? backoff * 2 : g->o.backoff_max_s;
      continue;
    }
    backoff = 0.01;
    pthread_mutex_lock(&g->mu);
    c->fd = fd;
    c->sess_dead = 0;
    c->fin_acked = 0;
    pthread_mutex_unlock(&g->mu);
    if (mlsys__xfer_dp_send_ctl(g, fd, MLSYS_XFER_FRAME_HELLO) != 0 ||
        pthread_create(&c->ack_th, NULL, mlsys__xfer_dp_ackreader_main, c) != 0) {
      pthread_mutex_lock(&g->mu);
      mlsys__xfer_dp_sess_fail(c);
      c->fd = -1;
      pthread_mutex_unlock(&g->mu);
      close(fd);
      mlsys__xfer_dp_sleep(0.01);
      continue;
    }
    for (;;) {
      mlsys__xfer_dp_ck *ck = mlsys__xfer_dp_q_take(c);
      int r;
      if (!ck) break;
      r = mlsys__xfer_dp_send_chunk(c, ck);
      pthread_mutex_lock(&g->mu);
      mlsys__xfer_dp_ck_unref(g, ck);   /* the writer's reference */
      if (r != 0) {
        if (r == -3) mlsys_log(MLSYS_LOG_INFO, "xfer gateway %d: fault injection: killed connection %d mid-chunk", g->id, c->index);
        clean = 0;
        mlsys__xfer_dp_sess_fail(c);
      }
      pthread_mutex_unlock(&g->mu);
      if (r != 0) break;
    }
    pthread_mutex_lock(&g->mu);
    if (g->done && !g->stop && clean && !c->sess_dead) {   /* FIN on this session: it is between frames */
      pthread_mutex_unlock(&g->mu);
      if (mlsys__xfer_dp_send_ctl(g, fd, MLSYS_XFER_FRAME_FIN) == 0) {
        pthread_mutex_lock(&g->mu);
        mlsys__xfer_dp_wait_fin(c);
        fin_done = c->fin_acked;
        pthread_mutex_unlock(&g->mu);
      }
      pthread_mutex_lock(&g->mu);
    }
    mlsys__xfer_dp_sess_fail(c);   /* requeues what is unacked; shuts the socket so the ack reader ends */
    pthread_mutex_unlock(&g->mu);
    pthread_join(c->ack_th, NULL);
    pthread_mutex_lock(&g->mu);
    c->fd = -1;
    pthread_mutex_unlock(&g->mu);
    close(fd);
  }
  /* The job is over and no session carried the FIN: one fresh connection tries (a refused connect means the
     downstream gateway is gone — it finished, or died; either way nobody is left to tell). */
  if (mlsys__xfer_dp_ld(&g->done) && !mlsys__xfer_dp_ld(&g->stop) && !fin_done) {
    int fd = mlsys__xfer_dp_connect(to->host, to->port, 1.0);
    if (fd >= 0) {
      if (mlsys__xfer_dp_send_ctl(g, fd, MLSYS_XFER_FRAME_HELLO) == 0 && mlsys__xfer_dp_send_ctl(g, fd, MLSYS_XFER_FRAME_FIN) == 0) {
        uint8_t b[MLSYS_XFER_ACK_LEN];
        mlsys__xfer_dp_read_full(fd, b, sizeof b, g->o.fin_timeout_s, &g->stop, NULL);
      }
      close(fd);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------------------------
   10. Source readers: a chunk is read only when a slot is free
   --------------------------------------------------------------------------------------------------------------- */
static void *mlsys__xfer_dp_reader_main(void *arg) {
  struct mlsys_xfer_gateway *g = (struct mlsys_xfer_gateway *)arg;
  for (;;) {
    uint64_t idx;
    const mlsys_xfer_chunk *cc;
    mlsys__xfer_dp_ck *ck;
    mlsys_status st = MLSYS_OK;
    char m[512];
    pthread_mutex_lock(&g->mu);
    if (g->next_todo >= g->nchunks || !mlsys__xfer_dp_slot_get(g, 0)) { pthread_mutex_unlock(&g->mu); return NULL; }
    if (g->next_todo >= g->nchunks) {   /* another reader took the last one while we waited */
      mlsys__xfer_dp_slot_put(g, 0);
      pthread_mutex_unlock(&g->mu);
      return NULL;
    }
    idx = g->next_todo++;
    mlsys__xfer_dp_slot_bytes(g, g->chunks[idx].len);
    pthread_mutex_unlock(&g->mu);
    cc = &g->chunks[idx];
    ck = (mlsys__xfer_dp_ck *)mlsys_calloc(1, sizeof *ck);
    if (!ck || (cc->len && !(ck->data = (uint8_t *)mlsys_alloc((size_t)cc->len, 1)))) {
      st = MLSYS_ERR_NOMEM;
      snprintf(m, sizeof m, "out of memory for a %llu-byte chunk", (unsigned long long)cc->len);
    } else if (cc->len) {
      st = g->store->get_range(g->store, g->objs[cc->obj].key, cc->offset, cc->len, ck->data);
      if (st != MLSYS_OK) snprintf(m, sizeof m, "reading '%.200s' [%llu, +%llu): %.240s", g->objs[cc->obj].key,
                                   (unsigned long long)cc->offset, (unsigned long long)cc->len, mlsys_last_error());
    }
    pthread_mutex_lock(&g->mu);
    if (st != MLSYS_OK) {
      if (ck) mlsys_free(ck->data);
      mlsys_free(ck);
      mlsys__xfer_dp_slot_put(g, cc->len);
      mlsys__xfer_dp_fail(g, st, m);
      mlsys__xfer_dp_finish(g, 1);
      pthread_mutex_unlock(&g->mu);
      return NULL;
    }
    pthread_mutex_unlock(&g->mu);
    ck->refs = 1;
    ck->idx = idx;
    ck->h.type = MLSYS_XFER_FRAME_DATA;
    memcpy(ck->h.chunk_id, cc->id, 16);
    ck->h.data_len = cc->len;
    ck->h.crc = mlsys_xfer_crc32c(0, ck->data, (size_t)cc->len);
    ck->h.job_id = g->job_id;
    ck->h.obj_size = g->objs[cc->obj].size;
    ck->h.part_bytes = g->o.chunk_bytes;
    ck->h.part = cc->part;
    snprintf(ck->h.key, sizeof ck->h.key, "%s", g->objs[cc->obj].key);
    pthread_mutex_lock(&g->mu);
    ck->rr = g->rr_next++ % g->noc;
    mlsys__xfer_dp_q_push(g, ck, 0);
    pthread_mutex_unlock(&g->mu);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   11. Gateway lifecycle
   --------------------------------------------------------------------------------------------------------------- */
static void mlsys__xfer_dp_gw_defaults(mlsys_xfer_gw_opts *o) {
  /* chunk_bytes 0 stays 0 here: a source picks it from its objects and the overlay (mlsys_xfer_chunk_auto) */
  if (o->queue_cap <= 0) o->queue_cap = 16;
  if (o->readers <= 0) o->readers = 4;
  if (o->hello_timeout_s <= 0) o->hello_timeout_s = 5;
  if (o->io_timeout_s <= 0) o->io_timeout_s = 30;
  if (o->backoff_max_s <= 0) o->backoff_max_s = 0.5;
  if (o->fin_timeout_s <= 0) o->fin_timeout_s = 2;
  if (o->faults.slow_factor <= 0) o->faults.slow_factor = 10;
  if (o->faults.slow_gbps <= 0) o->faults.slow_gbps = 0.1;
}

static mlsys_status mlsys__xfer_dp_overlay_dup(const mlsys_xfer_overlay *ov, mlsys_xfer_overlay *out) {
  out->ngw = ov->ngw;
  out->nedge = ov->nedge;
  out->gw = (mlsys_xfer_gw *)mlsys_alloc((size_t)ov->ngw, sizeof *out->gw);
  out->edge = (mlsys_xfer_edge *)mlsys_alloc(ov->nedge ? (size_t)ov->nedge : 1, sizeof *out->edge);
  if (!out->gw || !out->edge) { mlsys_free(out->gw); mlsys_free(out->edge); out->gw = NULL; out->edge = NULL; return MLSYS_ERR_NOMEM; }
  memcpy(out->gw, ov->gw, (size_t)ov->ngw * sizeof *out->gw);
  if (ov->nedge) memcpy(out->edge, ov->edge, (size_t)ov->nedge * sizeof *out->edge);
  return MLSYS_OK;
}

static void mlsys__xfer_dp_gw_destroy(struct mlsys_xfer_gateway *g) {
  int i;
  size_t j;
  mlsys__xfer_dp_ck *ck;
  if (!g) return;
  while ((ck = g->qhead) != NULL) { g->qhead = ck->next; ck->refs = 1; mlsys__xfer_dp_ck_unref(g, ck); }
  for (i = 0; i < g->noc; i++) {
    while ((ck = g->oc[i].unacked) != NULL) { g->oc[i].unacked = ck->next; ck->refs = 1; mlsys__xfer_dp_ck_unref(g, ck); }
    if (g->oc[i].slow) { pthread_mutex_destroy(&g->oc[i].slow->mu); mlsys_free(g->oc[i].slow); }
    mlsys_free(g->oc[i].scratch);
  }
  for (i = 0; i < g->noe; i++) pthread_mutex_destroy(&g->oe[i].tb.mu);
  for (j = 0; j < g->dcap; j++) {
    mlsys__xfer_dp_dobj *o = g->dtab[j];
    if (!o) continue;
    if (o->up && g->store) g->store->put_abort(g->store, o->up);
    mlsys_free(o->key); mlsys_free(o->state); mlsys_free(o);
  }
  mlsys_free(g->dtab);
  if (g->lfd >= 0) close(g->lfd);
  mlsys_free(g->oc); mlsys_free(g->oe); mlsys_free(g->rth); mlsys_free(g->acked); mlsys_free(g->chunks);
  if (g->objs) mlsys_xfer_objs_free(g->objs, g->nobj);
  mlsys_free(g->ov.gw); mlsys_free(g->ov.edge);
  pthread_mutex_destroy(&g->mu); pthread_mutex_destroy(&g->dmu);
  pthread_cond_destroy(&g->qcv); pthread_cond_destroy(&g->slotcv); pthread_cond_destroy(&g->donecv);
  pthread_cond_destroy(&g->dcv);
  mlsys_free(g);
}

static mlsys_status mlsys__xfer_dp_listen(struct mlsys_xfer_gateway *g) {
  const mlsys_xfer_gw *me = &g->ov.gw[g->id];
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  int one = 1;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)me->port);
  inet_pton(AF_INET, me->host, &sa.sin_addr);
  g->lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (g->lfd < 0) return mlsys_set_error(MLSYS_ERR_IO, "gateway %d: socket: %s", g->id, strerror(errno));
  fcntl(g->lfd, F_SETFD, FD_CLOEXEC);
  fcntl(g->lfd, F_SETFL, fcntl(g->lfd, F_GETFL, 0) | O_NONBLOCK);   /* accept never blocks on an aborted connection */
  setsockopt(g->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);   /* a restarted gateway reclaims its port */
  if (bind(g->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(g->lfd, 128) != 0 ||
      getsockname(g->lfd, (struct sockaddr *)&sa, &sl) != 0)
    return mlsys_set_error(MLSYS_ERR_IO, "gateway %d: cannot listen on %s:%d: %s", g->id, me->host, me->port, strerror(errno));
  g->port = ntohs(sa.sin_port);
  g->ov.gw[g->id].port = g->port;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_xfer_gateway_start(const mlsys_xfer_overlay *ov, int id, const mlsys_xfer_gw_opts *o,
                                                mlsys_xfer_gateway **out) {
  struct mlsys_xfer_gateway *g;
  mlsys_status st;
  int i, j, k, has_in = 0;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gateway: NULL out");
  *out = NULL;
  if ((st = mlsys_xfer_overlay_check(ov)) != MLSYS_OK) return st;
  if (id < 0 || id >= ov->ngw) return mlsys_set_error(MLSYS_ERR_ARG, "gateway: id %d not in [0, %d)", id, ov->ngw);
  g = (struct mlsys_xfer_gateway *)mlsys_calloc(1, sizeof *g);
  if (!g) return MLSYS_ERR_NOMEM;
  g->lfd = -1;
  pthread_mutex_init(&g->mu, NULL); pthread_mutex_init(&g->dmu, NULL);
  pthread_cond_init(&g->qcv, NULL); pthread_cond_init(&g->slotcv, NULL); pthread_cond_init(&g->donecv, NULL);
  pthread_cond_init(&g->dcv, NULL);
  if (o) g->o = *o;
  mlsys__xfer_dp_gw_defaults(&g->o);
  g->id = id;
  g->role = ov->gw[id].role;
  g->store = g->o.store;
  g->t0 = mlsys_now();
  mlsys_rng_seed(&g->rng, g->o.faults.seed ^ (uint64_t)id * 0x9E3779B97F4A7C15ULL);
  if ((st = mlsys__xfer_dp_overlay_dup(ov, &g->ov)) != MLSYS_OK) { mlsys__xfer_dp_gw_destroy(g); return st; }
  if (g->o.chunk_bytes > MLSYS_XFER_DATA_MAX) {
    mlsys__xfer_dp_gw_destroy(g);
    return mlsys_set_error(MLSYS_ERR_ARG, "gateway %d: chunk_bytes %llu exceeds 1 GiB", id, (unsigned long long)o->chunk_bytes);
  }
  if (g->role != MLSYS_XFER_RELAY && (!g->store || !g->store->list || !g->store->get_range || !g->store->put_begin)) {
    mlsys__xfer_dp_gw_destroy(g);
    return mlsys_set_error(MLSYS_ERR_ARG, "gateway %d: the %s needs an object store", id,
                           ov->gw[id].role == MLSYS_XFER_SRC ? "source" : "destination");
  }
  for (i = 0; i < ov->nedge; i++) {
    if (ov->edge[i].to == id) has_in = 1;
    if (ov->edge[i].from == id) { g->noe++; g->noc += mlsys__xfer_dp_nconn(&ov->edge[i]); }
  }
  g->oe = (mlsys__xfer_dp_oedge *)mlsys_calloc(g->noe ? (size_t)g->noe : 1, sizeof *g->oe);
  g->oc = (mlsys__xfer_dp_oc *)mlsys_calloc(g->noc ? (size_t)g->noc : 1, sizeof *g->oc);
  if (!g->oe || !g->oc) { mlsys__xfer_dp_gw_destroy(g); return MLSYS_ERR_NOMEM; }
  for (i = 0, j = 0, k = 0; i < ov->nedge; i++) {
    const mlsys_xfer_edge *e = &ov->edge[i];
    int n;
    double rate = e->rate_gbps * 1e9 / 8;
    if (e->from != id) continue;
    if (ov->gw[e->to].port <= 0) {
      mlsys__xfer_dp_gw_destroy(g);
      return mlsys_set_error(MLSYS_ERR_ARG, "gateway %d: downstream gateway %d has no port yet (start it first)", id, e->to);
    }
    g->oe[j].edge = i;
    g->oe[j].to = e->to;
    mlsys__xfer_dp_tb_init(&g->oe[j].tb, rate, MLSYS__XFER_DP_PIECE);
    for (n = 0; n < mlsys__xfer_dp_nconn(e); n++, k++) {
      mlsys__xfer_dp_oc *c = &g->oc[k];
      c->g = g; c->index = k; c->oe = j; c->fd = -1;
      if (g->o.faults.slow_conn == k + 1) {
        double r = rate > 0 ? rate / mlsys__xfer_dp_nconn(e) / g->o.faults.slow_factor : g->o.faults.slow_gbps * 1e9 / 8;
        c->slow = (mlsys__xfer_dp_tb *)mlsys_calloc(1, sizeof *c->slow);
        if (!c->slow) { mlsys__xfer_dp_gw_destroy(g); return MLSYS_ERR_NOMEM; }
        mlsys__xfer_dp_tb_init(c->slow, r, MLSYS__XFER_DP_PIECE);
      }
      if (g->o.faults.corrupt_every > 0 && !(c->scratch = (uint8_t *)mlsys_alloc(MLSYS__XFER_DP_PIECE, 1))) {
        mlsys__xfer_dp_gw_destroy(g);
        return MLSYS_ERR_NOMEM;
      }
    }
    j++;
  }
  if (g->role == MLSYS_XFER_SRC) {
    if ((st = g->store->list(g->store, &g->objs, &g->nobj)) != MLSYS_OK) {
      mlsys_prefix_error("gateway %d: listing the source", id);
      g->objs = NULL;
      mlsys__xfer_dp_gw_destroy(g);
      return st;
    }
    if (!g->o.chunk_bytes) g->o.chunk_bytes = mlsys_xfer_chunk_auto(&g->ov, g->o.queue_cap, g->objs, g->nobj);
    g->job_id = g->o.job_id ? g->o.job_id : mlsys_xfer_job_id(g->objs, g->nobj, g->o.chunk_bytes);
    g->job_known = 1;
    if ((st = mlsys_xfer_chunk_objects(g->objs, g->nobj, g->o.chunk_bytes, g->job_id, &g->chunks, &g->nchunks)) != MLSYS_OK ||
        !(g->acked = (uint8_t *)mlsys_calloc(g->nchunks ? (size_t)g->nchunks : 1, 1))) {
      if (st == MLSYS_OK) st = MLSYS_ERR_NOMEM;
      mlsys__xfer_dp_gw_destroy(g);
      return st;
    }
  } else if (g->o.job_id) {
    g->job_id = g->o.job_id;
    g->job_known = 1;
  }
  if (has_in && (st = mlsys__xfer_dp_listen(g)) != MLSYS_OK) { mlsys__xfer_dp_gw_destroy(g); return st; }
  if (g->role == MLSYS_XFER_SRC && g->nchunks == 0) mlsys__xfer_dp_finish(g, 0);   /* nothing to send: FIN at once */
  /* threads: from here on failures stop what was started */
  if (has_in) {
    if (pthread_create(&g->lth, NULL, mlsys__xfer_dp_listener_main, g) != 0) { mlsys__xfer_dp_gw_destroy(g); return mlsys_set_error(MLSYS_ERR_IO, "gateway %d: cannot start threads", id); }
    g->listening = 1;
  }
  for (i = 0; i < g->noc; i++)
    if (pthread_create(&g->oc[i].th, NULL, mlsys__xfer_dp_sender_main, &g->oc[i]) != 0) break;
  if (i == g->noc && g->role == MLSYS_XFER_SRC) {
    g->rth = (pthread_t *)mlsys_calloc((size_t)g->o.readers, sizeof *g->rth);
    for (j = 0; g->rth && j < g->o.readers; j++)
      if (pthread_create(&g->rth[j], NULL, mlsys__xfer_dp_reader_main, g) != 0) break;
    g->nrth = g->rth ? j : 0;
  }
  if (i < g->noc || (g->role == MLSYS_XFER_SRC && g->nrth < g->o.readers)) {
    int started = i;
    pthread_mutex_lock(&g->mu);
    mlsys__xfer_dp_st(&g->stop, 1);
    pthread_cond_broadcast(&g->qcv); pthread_cond_broadcast(&g->slotcv); pthread_cond_broadcast(&g->donecv);
    pthread_mutex_unlock(&g->mu);
    for (i = 0; i < started; i++) pthread_join(g->oc[i].th, NULL);
    for (j = 0; j < g->nrth; j++) pthread_join(g->rth[j], NULL);
    if (g->listening) pthread_join(g->lth, NULL);
    mlsys__xfer_dp_gw_destroy(g);
    return mlsys_set_error(MLSYS_ERR_IO, "gateway %d: cannot start its threads", id);
  }
  *out = g;
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_xfer_gateway_port(const mlsys_xfer_gateway *g) { return g ? g->port : 0; }

MLSYS_DEF void mlsys_xfer_gateway_stats(mlsys_xfer_gateway *g, mlsys_xfer_gw_result *r) {
  int i;
  memset(r, 0, sizeof *r);
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  r->id = g->id;
  r->role = g->role;
  r->port = g->port;
  r->objects = g->role == MLSYS_XFER_SRC ? (uint64_t)g->nobj : g->committed;
  r->chunks = g->chunks_done;
  r->bytes = g->bytes_done;
  r->chunks_in = g->chunks_in; r->bytes_in = g->bytes_in;
  r->chunks_out = g->chunks_out; r->bytes_out = g->bytes_out;
  r->resends = g->resends;
  r->checksum_failures = g->crc_fail;
  r->duplicates = g->dups;
  r->conn_failures = g->conn_fail;
  r->dropped_clients = g->dropped;
  r->peak_buffered = g->peak_buffered;
  r->buffer_bound = (uint64_t)g->o.queue_cap * (g->role == MLSYS_XFER_SRC ? g->o.chunk_bytes : g->max_chunk);
  r->chunk_bytes = g->role == MLSYS_XFER_SRC ? g->o.chunk_bytes : 0;
  r->seconds = (g->done ? g->t_done : mlsys_now()) - g->t0;
  r->nedge = g->ov.nedge;
  r->edge_bytes = (uint64_t *)mlsys_calloc(g->ov.nedge ? (size_t)g->ov.nedge : 1, sizeof(uint64_t));
  for (i = 0; r->edge_bytes && i < g->noe; i++) r->edge_bytes[g->oe[i].edge] = g->oe[i].bytes;
  r->conn_bytes = (uint64_t *)mlsys_calloc(g->noc ? (size_t)g->noc : 1, sizeof(uint64_t));
  r->nconn = r->conn_bytes ? g->noc : 0;
  for (i = 0; r->conn_bytes && i < g->noc; i++) r->conn_bytes[i] = g->oc[i].bytes;
  pthread_mutex_unlock(&g->mu);
  /* a gateway whose DST counters live under dmu */
  if (g->role == MLSYS_XFER_DST) {
    pthread_mutex_lock(&g->dmu);
    r->objects = g->committed;
    r->chunks = g->chunks_done;
    r->bytes = g->bytes_done;
    r->duplicates = g->dups;
    pthread_mutex_unlock(&g->dmu);
  }
}

static void mlsys__xfer_dp_join(struct mlsys_xfer_gateway *g) {
  int i;
  size_t j;
  for (i = 0; i < g->nrth; i++) pthread_join(g->rth[i], NULL);
  for (i = 0; i < g->noc; i++) pthread_join(g->oc[i].th, NULL);
  if (g->listening) pthread_join(g->lth, NULL);
  g->joined = 1;
  pthread_mutex_lock(&g->mu);
  if (g->role == MLSYS_XFER_DST) {   /* objects still open: the job was aborted (or never finished) */
    size_t open = 0;
    pthread_mutex_lock(&g->dmu);
    for (j = 0; j < g->dcap; j++) {
      mlsys__xfer_dp_dobj *o = g->dtab[j];
      if (o && o->up) { g->store->put_abort(g->store, o->up); o->up = NULL; open++; }
      else if (o && !o->committed) open++;
    }
    pthread_mutex_unlock(&g->dmu);
    if (open && !g->aborted && g->fin_from_upstream) {
      char m[256];
      snprintf(m, sizeof m, "gateway %d: the job ended with %zu objects not committed", g->id, open);
      mlsys__xfer_dp_fail(g, MLSYS_ERR_IO, m);
    }
  }
  if (g->aborted && g->err == MLSYS_OK) {
    char m[256];
    snprintf(m, sizeof m, "gateway %d: the transfer was aborted upstream", g->id);
    mlsys__xfer_dp_fail(g, MLSYS_ERR_CANCELED, m);
  }
  pthread_mutex_unlock(&g->mu);
}

MLSYS_DEF mlsys_status mlsys_xfer_gateway_wait(mlsys_xfer_gateway *g, double timeout_s, mlsys_xfer_gw_result *r) {
  if (r) memset(r, 0, sizeof *r);
  if (!g) return mlsys_set_error(MLSYS_ERR_ARG, "gateway: NULL");
  if (!g->joined) {
    pthread_mutex_lock(&g->mu);
    if (timeout_s > 0) {
      struct timespec ts;
      mlsys__xfer_dp_abstime(&ts, timeout_s);
      while (!g->done && !g->stop)
        if (pthread_cond_timedwait(&g->donecv, &g->mu, &ts) == ETIMEDOUT) break;
    } else {
      while (!g->done && !g->stop) pthread_cond_wait(&g->donecv, &g->mu);
    }
    if (!g->done && !g->stop) {
      pthread_mutex_unlock(&g->mu);
      if (r) mlsys_xfer_gateway_stats(g, r);
      return mlsys_set_error(MLSYS_ERR_TIMEOUT, "gateway %d: not done after %g s", g->id, timeout_s);
    }
    pthread_mutex_unlock(&g->mu);
    mlsys__xfer_dp_join(g);
  }
  if (r) mlsys_xfer_gateway_stats(g, r);
  if (g->err != MLSYS_OK) return mlsys_set_error(g->err, "%s", g->errmsg);
  if (g->stop && !g->done) return mlsys_set_error(MLSYS_ERR_CANCELED, "gateway %d: stopped before the job was done", g->id);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_xfer_gateway_stop(mlsys_xfer_gateway *g) {
  int i;
  mlsys__xfer_dp_in *c;
  if (!g || g->joined) return;
  pthread_mutex_lock(&g->mu);
  mlsys__xfer_dp_st(&g->stop, 1);
  pthread_cond_broadcast(&g->qcv); pthread_cond_broadcast(&g->slotcv); pthread_cond_broadcast(&g->donecv);
  for (i = 0; i < g->noc; i++) if (g->oc[i].fd >= 0) shutdown(g->oc[i].fd, SHUT_RDWR);
  for (c = g->ins; c; c = c->next) shutdown(c->fd, SHUT_RDWR);   /* fds live until the last reference */
  pthread_mutex_unlock(&g->mu);
  pthread_mutex_lock(&g->dmu);
  pthread_cond_broadcast(&g->dcv);
  pthread_mutex_unlock(&g->dmu);
  mlsys__xfer_dp_join(g);
}

MLSYS_DEF void mlsys_xfer_gateway_free(mlsys_xfer_gateway *g) {
  if (!g) return;
  if (!g->joined) mlsys_xfer_gateway_stop(g);
  mlsys__xfer_dp_gw_destroy(g);
}

MLSYS_DEF void mlsys_xfer_gw_result_free(mlsys_xfer_gw_result *r) {
  if (!r) return;
  mlsys_free(r->edge_bytes);
  mlsys_free(r->conn_bytes);
  r->edge_bytes = NULL;
  r->conn_bytes = NULL;
  r->nconn = 0;
}

MLSYS_DEF mlsys_status mlsys_xfer_gateway_run(const mlsys_xfer_overlay *ov, int id, mlsys_xfer_store *store,
                                              const mlsys_xfer_gw_opts *o, mlsys_xfer_gw_result *r) {
  mlsys_xfer_gw_opts oo;
  mlsys_xfer_gateway *g;
  mlsys_status st;
  memset(&oo, 0, sizeof oo);
  if (o) oo = *o;
  oo.store = store;
  if (r) memset(r, 0, sizeof *r);
  if ((st = mlsys_xfer_gateway_start(ov, id, &oo, &g)) != MLSYS_OK) return st;
  st = mlsys_xfer_gateway_wait(g, oo.timeout_s, r);
  if (st == MLSYS_ERR_TIMEOUT) {
    char m[256];
    snprintf(m, sizeof m, "%.250s", mlsys_last_error());
    if (r) mlsys_xfer_gw_result_free(r);
    mlsys_xfer_gateway_stop(g);
    if (r) mlsys_xfer_gateway_stats(g, r);
    mlsys_set_error(MLSYS_ERR_TIMEOUT, "%s", m);
  }
  mlsys_xfer_gateway_free(g);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   12. Whole transfer in this process
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF void mlsys_xfer_copy_result_free(mlsys_xfer_copy_result *r) {
  int i;
  if (!r) return;
  for (i = 0; r->gw && i < r->ngw; i++) mlsys_xfer_gw_result_free(&r->gw[i]);
  mlsys_free(r->gw);
  mlsys_free(r->edge_bytes);
  memset(r, 0, sizeof *r);
}

MLSYS_DEF mlsys_status mlsys_xfer_copy(const mlsys_xfer_overlay *ov, mlsys_xfer_store *src, mlsys_xfer_store *dst,
                                       const mlsys_xfer_copy_opts *o, mlsys_xfer_copy_result *r) {
  mlsys_xfer_copy_opts co;
  mlsys_xfer_overlay ov2;
  mlsys_xfer_gateway **gws = NULL;
  int *order = NULL, *indeg = NULL, i, j, n = 0, head = 0, isrc = -1;
  mlsys_status st, st_src = MLSYS_OK;
  char msg[600];
  double t_end;
  mlsys_progress pr;
  msg[0] = 0;
  memset(&co, 0, sizeof co);
  if (o) co = *o;
  if (r) memset(r, 0, sizeof *r);
  if ((st = mlsys_xfer_overlay_check(ov)) != MLSYS_OK) return st;
  if (ov->ngw > 64 && co.external_mask) return mlsys_set_error(MLSYS_ERR_ARG, "copy: external_mask covers gateways 0..63 only");
  if ((st = mlsys__xfer_dp_overlay_dup(ov, &ov2)) != MLSYS_OK) return st;
  gws = (mlsys_xfer_gateway **)mlsys_calloc((size_t)ov->ngw, sizeof *gws);
  order = (int *)mlsys_calloc((size_t)ov->ngw * 2, sizeof(int));
  if (!gws || !order) { st = MLSYS_ERR_NOMEM; goto out; }
  indeg = order + ov->ngw;
  /* downstream first (reverse topological order), so every gateway starts knowing its next hops' ports */
  for (i = 0; i < ov->nedge; i++) indeg[ov->edge[i].from]++;
  for (i = 0; i < ov->ngw; i++) if (!indeg[i]) order[n++] = i;
  while (head < n) {
    int v = order[head++];
    for (j = 0; j < ov->nedge; j++)
      if (ov->edge[j].to == v && --indeg[ov->edge[j].from] == 0) order[n++] = ov->edge[j].from;
  }
  for (i = 0; i < n; i++) {
    int id = order[i];
    mlsys_xfer_gw_opts go = co.gw;
    if (ov->gw[id].role == MLSYS_XFER_SRC) isrc = id;
    if (id < 64 && (co.external_mask >> id & 1)) {
      if (ov2.gw[id].port <= 0) { st = mlsys_set_error(MLSYS_ERR_ARG, "copy: external gateway %d has no port", id); goto out; }
      continue;
    }
    go.store = ov->gw[id].role == MLSYS_XFER_SRC ? src : ov->gw[id].role == MLSYS_XFER_DST ? dst : NULL;
    if ((st = mlsys_xfer_gateway_start(&ov2, id, &go, &gws[id])) != MLSYS_OK) goto out;
    ov2.gw[id].port = mlsys_xfer_gateway_port(gws[id]);
  }
  if (!gws[isrc]) { st = mlsys_set_error(MLSYS_ERR_ARG, "copy: the source gateway %d cannot be external", isrc); goto out; }
  mlsys_progress_begin(&pr, "transfer", co.progress);
  t_end = co.timeout_s > 0 ? mlsys_now() + co.timeout_s : 0;
  for (;;) {
    double slice = 0.1;
    if (t_end > 0 && mlsys_now() + slice > t_end) slice = t_end - mlsys_now();
    if (slice <= 0) { st_src = MLSYS_ERR_TIMEOUT; snprintf(msg, sizeof msg, "copy: not done after %g s", co.timeout_s); break; }
    st_src = mlsys_xfer_gateway_wait(gws[isrc], slice, NULL);
    if (st_src != MLSYS_ERR_TIMEOUT) {
      if (st_src != MLSYS_OK) snprintf(msg, sizeof msg, "%.590s", mlsys_last_error());
      break;
    }
    if (pr.enabled) {
      mlsys_xfer_gw_result s;
      mlsys_xfer_gateway_stats(gws[isrc], &s);
      mlsys_progress_update(&pr, "%.1f MB, %llu/%llu chunks, %.2f Gbps, %llu resends", (double)s.bytes / 1e6,
                            (unsigned long long)s.chunks, (unsigned long long)gws[isrc]->nchunks,
                            s.seconds > 0 ? (double)s.bytes * 8 / s.seconds / 1e9 : 0.0, (unsigned long long)s.resends);
      mlsys_xfer_gw_result_free(&s);
    }
  }
  mlsys_progress_end(&pr);
  if (st_src == MLSYS_ERR_TIMEOUT) mlsys_xfer_gateway_stop(gws[isrc]);
  /* the others finish on the FIN; give them a bounded time, then stop them */
  for (i = 0; i < ov->ngw; i++) {
    if (!gws[i] || i == isrc) continue;
    st = mlsys_xfer_gateway_wait(gws[i], st_src == MLSYS_OK ? 10.0 : 2.0, NULL);
    if (st == MLSYS_ERR_TIMEOUT) {
      mlsys_log(MLSYS_LOG_WARN, "xfer copy: gateway %d did not finish after the source; stopping it", i);
      mlsys_xfer_gateway_stop(gws[i]);
    } else if (st != MLSYS_OK && st_src == MLSYS_OK) {
      st_src = st;
      snprintf(msg, sizeof msg, "%.590s", mlsys_last_error());
    }
  }
  st = st_src;
  if (r) {
    r->ngw = ov->ngw;
    r->nedge = ov->nedge;
    r->gw = (mlsys_xfer_gw_result *)mlsys_calloc((size_t)ov->ngw, sizeof *r->gw);
    r->edge_bytes = (uint64_t *)mlsys_calloc(ov->nedge ? (size_t)ov->nedge : 1, sizeof(uint64_t));
    if (!r->gw || !r->edge_bytes) { mlsys_xfer_copy_result_free(r); if (st == MLSYS_OK) st = MLSYS_ERR_NOMEM; goto out; }
    for (i = 0; i < ov->ngw; i++) {
      mlsys_xfer_gw_result *g = &r->gw[i];
      if (!gws[i]) { g->id = i; g->role = ov->gw[i].role; g->port = ov2.gw[i].port; continue; }
      mlsys_xfer_gateway_stats(gws[i], g);
      for (j = 0; g->edge_bytes && j < ov->nedge; j++) r->edge_bytes[j] += g->edge_bytes[j];
      r->resends += g->resends;
      r->checksum_failures += g->checksum_failures;
      r->duplicates += g->duplicates;
      r->conn_failures += g->conn_failures;
      r->dropped_clients += g->dropped_clients;
    }
    r->bytes = r->gw[isrc].bytes;
    r->chunks = r->gw[isrc].chunks;
    r->chunk_bytes = r->gw[isrc].chunk_bytes;
    r->objects = r->gw[isrc].objects;
    r->seconds = r->gw[isrc].seconds;
    r->gbps = r->seconds > 0 ? (double)r->bytes * 8 / r->seconds / 1e9 : 0;
  }
out:
  if (st != MLSYS_OK && !msg[0]) snprintf(msg, sizeof msg, "%.590s", mlsys_last_error());
  for (i = 0; gws && i < ov->ngw; i++) mlsys_xfer_gateway_free(gws[i]);
  mlsys_free(gws);
  mlsys_free(order);
  mlsys_free(ov2.gw);
  mlsys_free(ov2.edge);
  if (st != MLSYS_OK) return mlsys_set_error(st, "%s", msg);
  return MLSYS_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_DATAPLANE_IMPLEMENTATION_DONE */
#endif /* MLSYS_XFER_DATAPLANE_IMPLEMENTATION */
