/* mlsys_cloud.h — Srift: choosing cloud VMs for data-parallel training under a time limit or a budget.  MIT licence.

   Implements Srift (L. Luo, J. West, A. Krishnamurthy, L. Ceze, "Srift: Swift and Thrift Cloud-Based Distributed
   Training", arXiv 2011.14243 v1, 2020); docs/cloud.md is the guide. Section numbers (§) in the comments are those of
   the design specification the header was written from (not shipped with it). Given a DNN's compute profile on each
   instance type, a model of allreduce bandwidth and the prices, Srift predicts the iteration time of any mix of VMs
   (counts[i] VMs of type i, each at per-VM batch batches[i], Σ counts·batches = the global batch) by simulation, and
   searches the mixes for the cheapest under a time limit, the fastest under a budget, or either under both.

   CONTENTS
     1. Compute model (§3.2): the 3-segment piecewise-linear t(B) through B = 1, Bmax/3, 2Bmax/3, Bmax, forward and
        backward separately, +inf beyond Bmax; per-layer gradient-ready fractions of the backward pass.
     2. Bandwidth (§3.3): bus bandwidth b_bus = 2s(n−1)/(n·t) and its inverse; a callback that predicts it per
        instance type, buffer size (rounded up to a power of two), world size and concurrency. Without one, an α-β ring
        model from the rated Gbps (α = 30 µs per hop; documented as an assumption, not the seed's learned model).
     3. Simulator (§3.4): t_iter = t_fw + max(t_bw, t_pe). Stragglers: each VM's compute time is Normal(μ, (σ_rel·μ)²)
        per iteration and the iteration waits for the slowest (Monte Carlo, exact in distribution per type: one draw
        of the max of c normals by the inverse CDF; or the exact expectation by numerical integration). t_pe: the
        event-driven overlap of per-layer allreduces with the backward pass under a per-VM bandwidth cap, Eq. 2
        literally (mode 0) or max-min water-filling (mode 1). Heterogeneous mixes: the slowest VM sets compute, ready
        times are the latest over types, bandwidth the lowest over types (a ring runs at its slowest link).
     4. Optimizer (§3.5): exhaustive enumeration over type subsets (homogeneous first), power-of-two per-VM batches and
        counts, with the rule that all VMs of a type share one batch; candidates whose noise-free compute bound already
        breaks a constraint or cannot beat the incumbent are not simulated. The eager mode adds instance types one by
        one in preference order under a solve budget. CAP and TAP (§4.1): fill VMs at Bmax in price or speed order.
     5. Re-planning on a spot interruption (§3.6): the remaining iterations, time window and budget, the preempted type
        depleted (its survivors kept as its capacity).
   The `mlsys cloud` command (cli/cloud.c) and docs/cloud.md are the tour.

   USAGE: in exactly one .c file
       #define MLSYS_CLOUD_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for every header)
       #include "mlsys_cloud.h"
   link: -lm, and what mlsys_common.h's implementation needs: -llpsolve55 -lcolamd -ldl -lpthread (or define
         MLSYS_NO_LPSOLVE: nothing here solves a MILP; the problem is a black box times a price, §0).

   EXAMPLE (examples/cloud_basics.c)
       mlsys_cloud_itype ty[3] = {...};  mlsys_cloud_cprof pr[3] = {...};      // prices, caps; profiles per type
       mlsys_cloud_sim s = {0};  s.ntypes = 3; s.types = ty; s.prof = pr;
       mlsys_cloud_problem p = {0};  p.global_batch = 6144; p.iters = 1000; p.time_limit_s = 600; p.budget = 3;
       mlsys_cloud_plan plan;  char buf[128];
       if (mlsys_cloud_optimize(&s, &p, &plan) == MLSYS_OK) {
         mlsys_cloud_plan_format(&s, &plan, buf, sizeof buf);                 // "4p3@1024 + 8g3@128 + 8g4dn@128"
         printf("%s: %.0f s, $%.2f\n", buf, plan.total_time_s, plan.total_cost);
       }

   UNITS: seconds, bytes, bytes/s, prices in $ per hour; cost = iters · t_iter · Σ counts·price / 3600 (§2.4).

   ERRORS: every call that can fail returns an mlsys_status and sets mlsys_last_error() to a sentence naming the
   problem ("cloud: type 2 (g3.8xlarge): batch 512 exceeds its Bmax 256").

   THREADS: all calls are reentrant; a sim, its types and profiles are read-only during a call.

   NOT DONE (yet): the GBDT bandwidth regressor and XGBoost model loader, profile files, the profiling driver, the
   loopback probe and the `mlsys cloud` command.
*/
#ifndef MLSYS_CLOUD_H
#define MLSYS_CLOUD_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_CLOUD_IMPLEMENTATION
#define MLSYS_CLOUD_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLSYS_CLOUD_MAX_TYPES 16   /* instance types in one problem */
#define MLSYS_CLOUD_MTU 9001       /* EC2 jumbo frames: the small/large split of the bandwidth model (§3.3) */

/* ---- 1. catalogue and compute model ------------------------------------------------------------------------- */

/* An instance type on offer. A spot offer and an on-demand offer of the same machine are two types. */
typedef struct {
  char name[32];          /* "p3.8xlarge" */
  char short_name[16];    /* the paper's print name ("p3"); "" → name */
  double price_per_hour;  /* $/h */
  int cap;                /* VMs available; < 0: unknown (the optimizer allows up to global_batch) */
  int pref_rank;          /* eager mode's order, 0 = most preferred; ties by index */
  double rated_gbps;      /* the provider's rated network bandwidth; the default bandwidth model's β */
  char gpu_name[24];      /* features for a bandwidth model (§3.3); unused by the built-in one */
  int gpus_per_vm, cpu_cores;
  double mem_gib;
  int is_spot;
} mlsys_cloud_itype;

/* One DNN on one instance type (per VM: a multi-GPU VM's local data parallelism is inside its times, §3.2). */
typedef struct {
  int bmax;                 /* largest per-VM batch that fits; 0: the DNN does not run on this type */
  int npts;                 /* 2..4 sample batches (fewer when bmax < 3) */
  double b[4], t_fw[4], t_bw[4]; /* ascending sample batches (b[0] = 1, b[npts−1] = bmax) and seconds */
  double sigma_rel;         /* std/mean of per-iteration compute time; 0 → 0.036 (the seed's median); < 0 → none */
  int nlayers;              /* trainable layers (parameters) in backward completion order; 0: no allreduce model */
  const double *ready_frac; /* [nlayers] in [0, 1], non-decreasing: when each gradient is ready, over the backward */
  const double *grad_bytes; /* [nlayers] gradient bytes (a layer run with probability p counts p·bytes, §3.4) */
} mlsys_cloud_cprof;

/* The sample batches of §3.2: 1, round(bmax/3), round(2·bmax/3), bmax, without repeats. Returns their number. */
MLSYS_DEF int mlsys_cloud_pwl_points(int bmax, double b[4]);
/* Linear interpolation through (x[k], y[k]), k < n, x ascending; +inf beyond x[n−1] (out of memory) and below x[0]. */
MLSYS_DEF double mlsys_cloud_pwl_eval(const double *x, const double *y, int n, double B);
/* Profile from times measured at the sample batches of mlsys_cloud_pwl_points(bmax) (t_fw/t_bw[npts]); checks them. */
MLSYS_DEF mlsys_status mlsys_cloud_cprof_set(mlsys_cloud_cprof *p, int bmax, const double *t_fw, const double *t_bw);
MLSYS_DEF mlsys_status mlsys_cloud_cprof_check(const mlsys_cloud_cprof *p, const char *what);
MLSYS_DEF double mlsys_cloud_cprof_fw(const mlsys_cloud_cprof *p, int B);   /* +inf beyond bmax */
MLSYS_DEF double mlsys_cloud_cprof_bw(const mlsys_cloud_cprof *p, int B);

/* ---- 2. bandwidth ------------------------------------------------------------------------------------------- */
MLSYS_DEF double mlsys_cloud_busbw(double s_bytes, int n, double t_s);             /* 2s(n−1)/(n·t); n ≤ 1 → 0 */
MLSYS_DEF double mlsys_cloud_allreduce_time(double s_bytes, int n, double busbw);  /* 2s(n−1)/(n·busbw); n ≤ 1 → 0 */
MLSYS_DEF double mlsys_cloud_pow2_ceil(double bytes);                              /* ≥ 1 */
/* Predicts bus bandwidth (bytes/s, > 0) for one allreduce of `bytes` (a power of two) among n VMs of type `it`
   while c allreduces (this one included) are in flight. */
typedef double (*mlsys_cloud_bw_fn)(void *ud, const mlsys_cloud_itype *it, double bytes, int n, int c);
/* The built-in model: an α-β ring, t = 2(n−1)·α + 2(n−1)/n · s/β, β = rated_gbps, α = 30 µs; ud unused. */
MLSYS_DEF double mlsys_cloud_bw_rated(void *ud, const mlsys_cloud_itype *it, double bytes, int n, int c);

/* ---- 3. simulator ------------------------------------------------------------------------------------------- */
/* E[max of n iid N(0,1)] (e_2 = 0.56419, e_64 = 2.34373), by numerical integration. */
MLSYS_DEF double mlsys_cloud_expected_max_normal(int n);
/* E[max] of groups of iid normals: group g has count[g] copies of N(mu[g], sd[g]²): numerical integration. */
MLSYS_DEF double mlsys_cloud_expected_max_groups(int ng, const double *mu, const double *sd, const int *count);

/* The allreduce/backward overlap of §3.4 step B. Layers in backward order: layer l is ready at ready_s[l]
   (non-decreasing, seconds from the backward start) with bytes[l] to allreduce among n VMs; req(ud, l, pow2 bytes,
   c) gives its requested bus bandwidth when it starts with c transfers in flight (itself included). Per-VM cap
   b_cap: mode 0 is Eq. 2 (each gets its request while Σ requests < b_cap, else min(request, b_cap/c)); mode 1 is
   max-min water-filling of b_cap. *t_pe: when the last allreduce finishes (0 with n ≤ 1 or no layers). */
typedef double (*mlsys_cloud_req_fn)(void *ud, int layer, double pow2_bytes, int c);
MLSYS_DEF mlsys_status mlsys_cloud_overlap_sim(int L, const double *ready_s, const double *bytes, int n,
                                               mlsys_cloud_req_fn req, void *ud, double b_cap, int share_mode,
                                               double *t_pe);

/* Everything a prediction needs. Zero-initialise and set ntypes, types, prof. */
typedef struct {
  int ntypes;
  const mlsys_cloud_itype *types;
  const mlsys_cloud_cprof *prof;   /* [ntypes]: the DNN on each type */
  mlsys_cloud_bw_fn bw;            /* NULL → mlsys_cloud_bw_rated */
  void *bw_ud;
  double b_cap;                    /* per-VM bus bandwidth cap, bytes/s; ≤ 0 → the model's at 512 MiB, c = 1 */
  int share_mode;                  /* 0 Eq. 2 (faithful), 1 water-filling */
  int straggler_iters;             /* Monte Carlo iterations; 0 → 1000; < 0 → exact expectation (integration) */
  uint64_t seed;                   /* Monte Carlo seed: the same draws for every candidate (common random numbers) */
  /* Optional: replaces the whole prediction (a user's predictor, or a table in tests): t_iter of a mix, +inf if it
     cannot run. The optimizer and CAP/TAP then call only this. */
  double (*t_iter_fn)(void *ud, const int *counts, const int *batches);
  void *t_iter_ud;
} mlsys_cloud_sim;

typedef struct {
  double t_iter, t_fw, t_bw, t_pe; /* seconds; t_fw/t_bw after stragglers */
  double t_compute;                /* expected slowest fw+bw */
  double b_cap;                    /* bytes/s used */
  int n;                           /* VMs */
} mlsys_cloud_simres;

MLSYS_DEF mlsys_status mlsys_cloud_simulate(const mlsys_cloud_sim *s, const int *counts, const int *batches,
                                            mlsys_cloud_simres *out);

/* ---- 4. optimizer ------------------------------------------------------------------------------------------- */
typedef enum { MLSYS_CLOUD_MIN_COST = 0, MLSYS_CLOUD_MIN_TIME = 1 } mlsys_cloud_goal;

typedef struct {
  int global_batch;                /* Σ counts·batches */
  long iters;                      /* iterations to run */
  double time_limit_s, budget;     /* ≤ 0: none */
  mlsys_cloud_goal goal;
  const int *caps;                 /* [ntypes] or NULL → types[i].cap */
  int max_types;                   /* types in one mix; 0 → all */
  int eager;                       /* the eager heuristic instead of the exhaustive search */
  int eager_k;                     /* eager's first count limit per new type; 0 → 8 */
  int eager_continue;              /* keep adding types after a feasible plan */
  double solve_budget_s;           /* eager: stop after this long (wall clock); ≤ 0 → none */
  long max_sims;                   /* stop after this many simulations (both modes; deterministic); 0 → none */
} mlsys_cloud_problem;

typedef struct {
  int ntypes, counts[MLSYS_CLOUD_MAX_TYPES], batches[MLSYS_CLOUD_MAX_TYPES];
  double t_iter, total_time_s, total_cost, cost_per_hour;
  mlsys_cloud_simres sim;          /* zero when the sim has a t_iter_fn */
  int feasible;                    /* meets the problem's limits */
  int complete;                    /* the search saw every candidate (no budget cut it short) */
  long sims, candidates;           /* simulations run; mixes considered (including pruned ones) */
  double solve_s;
} mlsys_cloud_plan;

/* The best plan under the limits: MLSYS_OK with out->feasible = 1, or MLSYS_ERR_INFEASIBLE when no mix meets them
   (or none was found within the budgets: out->complete says which). Ties: fewer types, then preference, then
   fewer VMs. */
MLSYS_DEF mlsys_status mlsys_cloud_optimize(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out);
/* CAP (cheapest first) and TAP (fastest first: samples/s per VM at Bmax), every VM at Bmax (§4.1); they ignore the
   limits, and out->feasible says whether they meet them. MLSYS_ERR_INFEASIBLE when the capacity cannot hold the
   global batch, MLSYS_ERR_ARG when the last type's share does not divide evenly. */
MLSYS_DEF mlsys_status mlsys_cloud_plan_cap(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out);
MLSYS_DEF mlsys_status mlsys_cloud_plan_tap(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out);
/* Predicts a given mix (counts/batches[ntypes]) and fills a plan with its time, cost and feasibility under p. */
MLSYS_DEF mlsys_status mlsys_cloud_plan_eval(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                             const int *counts, const int *batches, mlsys_cloud_plan *out);
/* "4p3@1024 + 8g3@128" (short names). Returns the length it needed, like snprintf. */
MLSYS_DEF int mlsys_cloud_plan_format(const mlsys_cloud_sim *s, const mlsys_cloud_plan *pl, char *buf, size_t n);
/* Parses "4xp3.8xlarge@1024+8xg3.8xlarge@128" or "4p3@1024 + 8g3@128" (names or short names) into counts and
   batches[ntypes] (zeroed first). */
MLSYS_DEF mlsys_status mlsys_cloud_parse_config(const mlsys_cloud_itype *types, int ntypes, const char *text,
                                                int *counts, int *batches);
/* §3.1 rule 1: drop a type with both lower throughput and lower throughput per $ than another. keep[n] = 0/1;
   returns how many are kept. */
MLSYS_DEF int mlsys_cloud_prune_dominated(int n, const double *thru, const double *price, int *keep);

/* ---- 5. re-planning on an interruption ------------------------------------------------------------------------ */
typedef struct { double elapsed_s, spent; long iters_done; } mlsys_cloud_progress;
typedef struct { double launch_s, detach_s, solve_s; } mlsys_cloud_overheads; /* the seed's: 150, 5, 1 (§5.4) */
/* The problem left after an interruption (§3.6): iters − done, budget − spent, time limit − elapsed − detach −
   launch − solve; types with depleted[i] = 1 get cap = surviving[i]. Fails if nothing is left of the window or
   budget. */
MLSYS_DEF mlsys_status mlsys_cloud_replan_problem(const mlsys_cloud_sim *s, const mlsys_cloud_problem *orig,
                                                  const mlsys_cloud_progress *pg, const mlsys_cloud_overheads *oh,
                                                  const int *surviving, const int *depleted, int *caps_out,
                                                  mlsys_cloud_problem *out);
/* replan_problem, then optimize (caps_buf[ntypes] holds the new caps the returned problem points at). */
MLSYS_DEF mlsys_status mlsys_cloud_replan(const mlsys_cloud_sim *s, const mlsys_cloud_problem *orig,
                                          const mlsys_cloud_progress *pg, const mlsys_cloud_overheads *oh,
                                          const int *surviving, const int *depleted, mlsys_cloud_plan *out);

/* ---- 6. files: an instance catalogue (CSV) and a DNN's profiles (JSON) ------------------------------------------ */
/* CSV with a header line naming its columns: name (required), short, gpu_name, gpus_per_vm, vcpus, mem_gib,
   rated_gbps, ondemand_per_hour, spot_per_hour (others are ignored; tests/data/cloud/instances.csv is the seed's).
   spot = 1 takes spot prices: a type without one gets a NaN price, which the optimizer rejects by name if chosen.
   cap is -1 (unknown) and pref_rank the row. *out is an array for mlsys_free. */
MLSYS_DEF mlsys_status mlsys_cloud_catalog_load(const char *text, size_t len, const char *source, int spot,
                                                mlsys_cloud_itype **out, int *n);

/* One DNN profiled on several instance types:
     {"dnn": "shufflenet_v2_x2_0",
      "layers": {"grad_bytes": [...], "ready_frac": [...]},          (optional; backward completion order)
      "types": {"p3.8xlarge": {"bmax": 1024, "t_fw": [..], "t_bw": [..], "sigma_rel": 0.052}, ...}}
   t_fw/t_bw are seconds at the sample batches of mlsys_cloud_pwl_points(bmax) (or at "b": [...] when given, which
   must start at 1 and end at bmax). Every type shares the layer list. */
typedef struct {
  char dnn[64];
  int ntypes;
  char (*type_name)[32];    /* [ntypes] */
  mlsys_cloud_cprof *prof;  /* [ntypes], pointing into the layer arrays below */
  int nlayers;
  double *grad_bytes, *ready_frac;
} mlsys_cloud_dnn;
MLSYS_DEF mlsys_status mlsys_cloud_dnn_load(const char *text, size_t len, const char *source, mlsys_cloud_dnn *out);
MLSYS_DEF void mlsys_cloud_dnn_free(mlsys_cloud_dnn *d);
/* the profile of type `name` in d, or NULL */
MLSYS_DEF const mlsys_cloud_cprof *mlsys_cloud_dnn_find(const mlsys_cloud_dnn *d, const char *name);
/* Writes d as the JSON mlsys_cloud_dnn_load reads (numbers round-trip exactly). */
MLSYS_DEF mlsys_status mlsys_cloud_dnn_write(const mlsys_cloud_dnn *d, FILE *f);

/* ---- 7. the profiling driver (§3.2) ---------------------------------------------------------------------------- */
/* Runs one training iteration at `batch` and reports its forward and backward seconds and, when layer_done_s is not
   NULL, when each of the nlayers trainable layers' gradient was ready (seconds from the backward start, in backward
   order). Returns 0, 1 when the batch does not fit (out of memory), or < 0 on an error (after mlsys_set_error). */
typedef int (*mlsys_cloud_iter_fn)(void *ud, int batch, double *t_fw, double *t_bw, double *layer_done_s);
typedef struct {
  int nlayers;       /* layers the callback stamps (0: none) */
  int bmax_limit;    /* largest batch tried; 0 → 65536 */
  int pow2_only;     /* Bmax among powers of two (the seed's Table 4); else the exact largest batch that fits */
  int warmup, iters; /* per sample batch; 0 → 2 and 10 */
} mlsys_cloud_profile_opts;
/* Finds Bmax (doubling from 1, then bisecting when !pow2_only), times the sample batches of mlsys_cloud_pwl_points,
   and fills p: means at each sample batch, sigma_rel = std/mean of fw+bw at Bmax, and, with nlayers > 0, the
   ready fractions at Bmax (mean stamp / mean backward time, made non-decreasing, into ready_frac[nlayers], which p
   points at; grad_bytes is left to the caller). */
MLSYS_DEF mlsys_status mlsys_cloud_profile(mlsys_cloud_iter_fn fn, void *ud, const mlsys_cloud_profile_opts *o,
                                           mlsys_cloud_cprof *p, double *ready_frac);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_CLOUD_H */

/* ================================================================================================================= */
#ifdef MLSYS_CLOUD_IMPLEMENTATION
#ifndef MLSYS_CLOUD_IMPLEMENTATION_DONE
#define MLSYS_CLOUD_IMPLEMENTATION_DONE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#include <ctype.h>

#define MLSYS__CLOUD_DEFAULT_SIGMA 0.036 /* the seed's median straggler scale (footnote 3) */
#define MLSYS__CLOUD_ALPHA 30e-6         /* per-hop latency of the built-in α-β model */
#define MLSYS__CLOUD_CAP_PROBE 536870912.0 /* 512 MiB: the largest probed buffer, where the link saturates */

/* ---- 1. compute model ----------------------------------------------------------------------------------------- */
MLSYS_DEF int mlsys_cloud_pwl_points(int bmax, double b[4]) {
  int cand[4], i, n = 0;
  if (bmax < 1) return 0;
  cand[0] = 1;
  cand[1] = (int)floor(bmax / 3.0 + 0.5);
  cand[2] = (int)floor(2.0 * bmax / 3.0 + 0.5);
  cand[3] = bmax;
  for (i = 0; i < 4; i++) {
    if (cand[i] < 1) cand[i] = 1;
    if (n && cand[i] <= (int)b[n - 1]) continue; /* repeats when bmax < 3 */
    b[n++] = cand[i];
  }
  return n;
}

MLSYS_DEF double mlsys_cloud_pwl_eval(const double *x, const double *y, int n, double B) {
  int k;
  if (n < 1 || !(B >= x[0]) || B > x[n - 1]) return INFINITY;
  if (n == 1 || B == x[n - 1]) return y[n - 1];
  for (k = 0; k + 2 < n && B >= x[k + 1]; k++) {} /* a knot starts its segment: exact there */
  return y[k] + (y[k + 1] - y[k]) * (B - x[k]) / (x[k + 1] - x[k]);
}

MLSYS_DEF mlsys_status mlsys_cloud_cprof_check(const mlsys_cloud_cprof *p, const char *what) {
  int i;
  if (!what) what = "profile";
  if (p->bmax == 0) return MLSYS_OK; /* does not run on this type */
  if (p->bmax < 0) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: bmax %d is negative", what, p->bmax);
  if (p->npts < 1 || p->npts > 4) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: %d sample batches (1..4)", what, p->npts);
  if (p->b[p->npts - 1] != (double)p->bmax)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: the last sample batch %g is not bmax %d", what, p->b[p->npts - 1], p->bmax);
  for (i = 0; i < p->npts; i++) {
    if (!(p->b[i] >= 1) || (i && !(p->b[i] > p->b[i - 1])))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: sample batches must ascend from 1 (b[%d] = %g)", what, i, p->b[i]);
    if (!(p->t_fw[i] >= 0) || !(p->t_bw[i] >= 0) || !isfinite(p->t_fw[i]) || !isfinite(p->t_bw[i]))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: time at batch %g is not a finite non-negative number", what, p->b[i]);
  }
  if (!(p->sigma_rel < 1) || isnan(p->sigma_rel))
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: sigma_rel %g is not below 1", what, p->sigma_rel);
  if (p->nlayers < 0) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: %d layers", what, p->nlayers);
  if (p->nlayers && (!p->ready_frac || !p->grad_bytes))
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: %d layers but no ready fractions or gradient bytes", what, p->nlayers);
  for (i = 0; i < p->nlayers; i++) {
    double f = p->ready_frac[i];
    if (!(f >= 0 && f <= 1) || (i && f < p->ready_frac[i - 1]))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: layer %d's ready fraction %g is not in [0, 1] or goes backwards", what, i, f);
    if (!(p->grad_bytes[i] >= 0) || !isfinite(p->grad_bytes[i]))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: layer %d's gradient bytes %g", what, i, p->grad_bytes[i]);
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cprof_set(mlsys_cloud_cprof *p, int bmax, const double *t_fw, const double *t_bw) {
  int i;
  if (bmax < 1) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: profile: bmax %d must be at least 1", bmax);
  p->bmax = bmax;
  p->npts = mlsys_cloud_pwl_points(bmax, p->b);
  for (i = 0; i < p->npts; i++) p->t_fw[i] = t_fw[i], p->t_bw[i] = t_bw[i];
  return mlsys_cloud_cprof_check(p, "profile");
}

MLSYS_DEF double mlsys_cloud_cprof_fw(const mlsys_cloud_cprof *p, int B) {
  return p->bmax > 0 ? mlsys_cloud_pwl_eval(p->b, p->t_fw, p->npts, B) : INFINITY;
}
MLSYS_DEF double mlsys_cloud_cprof_bw(const mlsys_cloud_cprof *p, int B) {
  return p->bmax > 0 ? mlsys_cloud_pwl_eval(p->b, p->t_bw, p->npts, B) : INFINITY;
}
static double mlsys__cloud_sigma(const mlsys_cloud_cprof *p) {
  return p->sigma_rel == 0 ? MLSYS__CLOUD_DEFAULT_SIGMA : p->sigma_rel < 0 ? 0 : p->sigma_rel;
}

/* ---- 2. bandwidth --------------------------------------------------------------------------------------------- */
MLSYS_DEF double mlsys_cloud_busbw(double s, int n, double t) {
  return n <= 1 || !(t > 0) ? 0 : 2.0 * s * (n - 1) / ((double)n * t);
}
MLSYS_DEF double mlsys_cloud_allreduce_time(double s, int n, double busbw) {
  return n <= 1 ? 0 : 2.0 * s * (n - 1) / ((double)n * busbw);
}
MLSYS_DEF double mlsys_cloud_pow2_ceil(double bytes) {
  double p = 1;
  if (!(bytes > 1)) return 1;
  if (bytes > 0x1p62) return bytes;
  while (p < bytes) p *= 2;
  return p;
}
MLSYS_DEF double mlsys_cloud_bw_rated(void *ud, const mlsys_cloud_itype *it, double bytes, int n, int c) {
  double beta = it->rated_gbps * 1e9 / 8, t;
  (void)ud, (void)c;
  if (n <= 1) n = 2;
  if (!(beta > 0)) beta = 10e9 / 8;
  t = 2.0 * (n - 1) * MLSYS__CLOUD_ALPHA + 2.0 * (n - 1) / n * bytes / beta;
  return mlsys_cloud_busbw(bytes, n, t);
}

/* ---- 3. simulator --------------------------------------------------------------------------------------------- */
static double mlsys__cloud_phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* Φ⁻¹(p), 0 < p < 1: Acklam's rational approximation (relative error 1.15e-9) and one Halley step on erfc, which
   brings it to double precision. It lets one uniform draw give the max of c iid normals: Φ⁻¹(U^(1/c)). */
static double mlsys__cloud_phi_inv(double p) {
  static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                              1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                              6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                              -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                              3.754408661907416e+00};
  double q, r, x, e, u;
  if (p < 0.02425) {
    q = sqrt(-2 * log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - 0.02425) {
    q = p - 0.5;
    r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    q = sqrt(-2 * log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  e = mlsys__cloud_phi(x) - p;
  u = e * 2.5066282746310002 * exp(x * x / 2); /* √(2π) */
  return x - u / (1 + x * u / 2);
}

MLSYS_DEF double mlsys_cloud_expected_max_groups(int ng, const double *mu, const double *sd, const int *count) {
  /* E[M] = lo + ∫_lo^hi (1 − F(x)) dx with F = Π Φ((x − μ_g)/σ_g)^c_g, F(lo) ≈ 0 and F(hi) ≈ 1, by Simpson's rule
     with panels a tenth of the narrowest σ. A deterministic group (σ = 0) only raises lo: M is at least its μ. */
  double lo = INFINITY, hi = -INFINITY, floor_det = -INFINITY, min_sd = INFINITY, total = 0, h;
  int g, j, m;
  for (g = 0; g < ng; g++) {
    if (count[g] <= 0) continue;
    if (sd[g] > 0) {
      double top = mu[g] + sd[g] * (9 + 2 * sqrt(log((double)count[g] + 1)));
      if (mu[g] - 9 * sd[g] < lo) lo = mu[g] - 9 * sd[g];
      if (top > hi) hi = top;
      if (sd[g] < min_sd) min_sd = sd[g];
    } else if (mu[g] > floor_det) {
      floor_det = mu[g];
    }
  }
  if (lo == INFINITY) return floor_det; /* all deterministic */
  if (floor_det > lo) lo = floor_det;
  if (hi <= lo) return lo;
  h = (hi - lo) / min_sd * 10;
  m = h < 256 ? 256 : h > 65536 ? 65536 : 2 * (int)(h / 2 + 1);
  h = (hi - lo) / m;
  for (j = 0; j <= m; j++) {
    double x = lo + j * h, F = 1, w = (j == 0 || j == m) ? 1 : (j & 1) ? 4 : 2;
    for (g = 0; g < ng && F > 0; g++)
      if (count[g] > 0 && sd[g] > 0) F *= pow(mlsys__cloud_phi((x - mu[g]) / sd[g]), count[g]);
    total += w * (1 - F);
  }
  return lo + total * h / 3;
}

MLSYS_DEF double mlsys_cloud_expected_max_normal(int n) {
  double mu = 0, sd = 1;
  return n < 1 ? 0 : mlsys_cloud_expected_max_groups(1, &mu, &sd, &n);
}

typedef struct {
  int layer;
  double rem, work, req, a;
} mlsys__cloud_xfer;

static int mlsys__cloud_cmp_req(const void *x, const void *y) {
  double a = (*(const mlsys__cloud_xfer *const *)x)->req, b = (*(const mlsys__cloud_xfer *const *)y)->req;
  return a < b ? -1 : a > b;
}

MLSYS_DEF mlsys_status mlsys_cloud_overlap_sim(int L, const double *ready, const double *bytes, int n,
                                               mlsys_cloud_req_fn req, void *ud, double b_cap, int mode,
                                               double *t_pe) {
  mlsys__cloud_xfer *act = NULL, **ord = NULL;
  double t = 0;
  int next = 0, m = 0, l;
  *t_pe = 0;
  if (mode != 0 && mode != 1) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: share mode %d is neither 0 (Eq. 2) nor 1", mode);
  if (n <= 1 || L <= 0) return MLSYS_OK;
  if (!(b_cap > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: bandwidth cap %g is not positive", b_cap);
  for (l = 0; l < L; l++) {
    if (!(ready[l] >= 0) || !isfinite(ready[l]) || (l && ready[l] < ready[l - 1]))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: layer %d's ready time %g is negative or earlier than layer %d's", l,
                             ready[l], l - 1);
    if (!(bytes[l] >= 0) || !isfinite(bytes[l]))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: layer %d's gradient bytes %g", l, bytes[l]);
  }
  act = (mlsys__cloud_xfer *)mlsys_alloc((size_t)L, sizeof *act);
  ord = (mlsys__cloud_xfer **)mlsys_alloc((size_t)L, sizeof *ord);
  if (!act || !ord) {
    mlsys_free(act);
    mlsys_free(ord);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "cloud: out of memory simulating %d layers", L);
  }
  while (next < L || m > 0) {
    double agg = 0, dt_fin = INFINITY, dt_arr, dt;
    int j;
    if (m == 0 && t < ready[next]) t = ready[next];
    while (next < L && ready[next] <= t) { /* start events */
      double q, w = 2.0 * bytes[next] * (n - 1) / n;
      if (w > 0) {
        q = req(ud, next, mlsys_cloud_pow2_ceil(bytes[next]), m + 1);
        if (!(q > 0) || !isfinite(q)) {
          mlsys_free(act);
          mlsys_free(ord);
          return mlsys_set_error(MLSYS_ERR_ARG, "cloud: the bandwidth model gave %g bytes/s for layer %d (%g bytes, n %d)",
                                 q, next, bytes[next], n);
        }
        act[m].layer = next, act[m].rem = w, act[m].work = w, act[m].req = q;
        m++;
      }
      next++;
    }
    if (m == 0) continue;
    for (j = 0; j < m; j++) agg += act[j].req;
    if (agg < b_cap) {
      for (j = 0; j < m; j++) act[j].a = act[j].req;
    } else if (mode == 0) { /* Eq. 2: an equal share once saturated; spare capacity is not redistributed */
      for (j = 0; j < m; j++) act[j].a = act[j].req < b_cap / m ? act[j].req : b_cap / m;
    } else { /* water-filling: the smallest requests are met, the rest share what is left equally */
      double left = b_cap;
      int k = m;
      for (j = 0; j < m; j++) ord[j] = &act[j];
      qsort(ord, (size_t)m, sizeof *ord, mlsys__cloud_cmp_req);
      for (j = 0; j < m; j++, k--) {
        double share = left / k;
        ord[j]->a = ord[j]->req < share ? ord[j]->req : share;
        left -= ord[j]->a;
      }
    }
    for (j = 0; j < m; j++)
      if (act[j].rem / act[j].a < dt_fin) dt_fin = act[j].rem / act[j].a;
    dt_arr = next < L ? ready[next] - t : INFINITY;
    dt = dt_fin < dt_arr ? dt_fin : dt_arr;
    t += dt;
    for (j = 0; j < m;) {
      /* the transfers that set dt_fin end now exactly (no floating-point remainder keeps them alive) */
      if (dt == dt_fin && act[j].rem / act[j].a <= dt_fin * (1 + 1e-12)) act[j] = act[--m];
      else act[j].rem -= act[j].a * dt, j++;
    }
  }
  mlsys_free(act);
  mlsys_free(ord);
  *t_pe = t;
  return MLSYS_OK;
}

/* the selected types of a mix, validated */
typedef struct {
  int nsel, sel[MLSYS_CLOUD_MAX_TYPES], n;
  double mu[MLSYS_CLOUD_MAX_TYPES], sd[MLSYS_CLOUD_MAX_TYPES], fw[MLSYS_CLOUD_MAX_TYPES], bw[MLSYS_CLOUD_MAX_TYPES];
  int cnt[MLSYS_CLOUD_MAX_TYPES];
} mlsys__cloud_mix;

static mlsys_status mlsys__cloud_mix_make(const mlsys_cloud_sim *s, const int *counts, const int *batches,
                                          mlsys__cloud_mix *x) {
  int i;
  x->nsel = 0, x->n = 0;
  if (!s || s->ntypes < 1 || s->ntypes > MLSYS_CLOUD_MAX_TYPES || !s->types)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a sim needs 1..%d instance types", MLSYS_CLOUD_MAX_TYPES);
  if (!s->prof && !s->t_iter_fn) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a sim needs profiles or a t_iter_fn");
  for (i = 0; i < s->ntypes; i++) {
    if (counts[i] < 0) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: type %d (%s): count %d is negative", i, s->types[i].name, counts[i]);
    if (!counts[i]) continue;
    if (batches[i] < 1)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: type %d (%s): batch %d must be at least 1", i, s->types[i].name, batches[i]);
    if (s->prof && batches[i] > s->prof[i].bmax)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: type %d (%s): batch %d exceeds its Bmax %d", i, s->types[i].name,
                             batches[i], s->prof[i].bmax);
    x->sel[x->nsel] = i;
    x->cnt[x->nsel] = counts[i];
    if (s->prof) {
      const mlsys_cloud_cprof *p = &s->prof[i];
      x->fw[x->nsel] = mlsys_cloud_cprof_fw(p, batches[i]);
      x->bw[x->nsel] = mlsys_cloud_cprof_bw(p, batches[i]);
      x->mu[x->nsel] = x->fw[x->nsel] + x->bw[x->nsel];
      x->sd[x->nsel] = mlsys__cloud_sigma(p) * x->mu[x->nsel];
    }
    x->nsel++;
    x->n += counts[i];
  }
  if (!x->n) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: the mix has no VMs");
  return MLSYS_OK;
}

typedef struct {
  const mlsys_cloud_sim *s;
  const mlsys__cloud_mix *x;
} mlsys__cloud_reqctx;

/* a ring is as fast as its slowest link: the lowest prediction over the mix's types */
static double mlsys__cloud_bw_min(const mlsys_cloud_sim *s, const mlsys__cloud_mix *x, double bytes, int c) {
  mlsys_cloud_bw_fn f = s->bw ? s->bw : mlsys_cloud_bw_rated;
  double best = INFINITY;
  int k;
  for (k = 0; k < x->nsel; k++) {
    double b = f(s->bw_ud, &s->types[x->sel[k]], bytes, x->n, c);
    if (!(b >= 0) || isnan(b)) return b; /* reported by the caller */
    if (b < best) best = b;
  }
  return best;
}
static double mlsys__cloud_req(void *ud, int layer, double bytes, int c) {
  const mlsys__cloud_reqctx *r = (const mlsys__cloud_reqctx *)ud;
  (void)layer;
  return mlsys__cloud_bw_min(r->s, r->x, bytes, c);
}

/* expected slowest compute of the mix: Monte Carlo (faithful, §3.4) or the exact expectation */
static double mlsys__cloud_compute(const mlsys_cloud_sim *s, const mlsys__cloud_mix *x) {
  int it = s->straggler_iters == 0 ? 1000 : s->straggler_iters, k, g;
  double sum = 0;
  mlsys_rng r;
  if (it < 0) return mlsys_cloud_expected_max_groups(x->nsel, x->mu, x->sd, x->cnt);
  mlsys_rng_seed(&r, s->seed);
  for (k = 0; k < it; k++) {
    double mx = -INFINITY;
    for (g = 0; g < x->nsel; g++) {
      /* the max of c iid N(μ, σ²) is μ + σ·Φ⁻¹(U^(1/c)): one draw per type, whatever its count */
      double u = ((double)(mlsys_rng_u64(&r) >> 11) + 0.5) * 0x1p-53, v;
      v = x->sd[g] > 0 ? x->mu[g] + x->sd[g] * mlsys__cloud_phi_inv(x->cnt[g] == 1 ? u : pow(u, 1.0 / x->cnt[g])) : x->mu[g];
      if (v > mx) mx = v;
    }
    sum += mx;
  }
  return sum / it;
}

MLSYS_DEF mlsys_status mlsys_cloud_simulate(const mlsys_cloud_sim *s, const int *counts, const int *batches,
                                            mlsys_cloud_simres *out) {
  mlsys__cloud_mix x;
  mlsys_status st;
  int k, top = 0, L = 0;
  double rho, *ready = NULL;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__cloud_mix_make(s, counts, batches, &x)) != MLSYS_OK) return st;
  out->n = x.n;
  if (s->t_iter_fn) {
    out->t_iter = s->t_iter_fn(s->t_iter_ud, counts, batches);
    if (isnan(out->t_iter) || out->t_iter <= 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: the t_iter function returned %g", out->t_iter);
    return MLSYS_OK;
  }
  for (k = 0; k < x.nsel; k++) {
    char what[64];
    snprintf(what, sizeof what, "type %d (%s)", x.sel[k], s->types[x.sel[k]].name);
    if ((st = mlsys_cloud_cprof_check(&s->prof[x.sel[k]], what)) != MLSYS_OK) return st;
    if (!isfinite(x.mu[k])) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s cannot run batch %d", what, batches[x.sel[k]]);
    if (x.mu[k] > x.mu[top]) top = k;
    if (k && s->prof[x.sel[k]].nlayers != s->prof[x.sel[0]].nlayers)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s has %d layers, type %d has %d: not the same DNN", what,
                             s->prof[x.sel[k]].nlayers, x.sel[0], s->prof[x.sel[0]].nlayers);
  }
  out->t_compute = mlsys__cloud_compute(s, &x);
  /* the straggler-adjusted time splits into fw and bw in the slowest type's proportion (§3.4 proposal) */
  rho = x.mu[top] > 0 ? out->t_compute / x.mu[top] : 1;
  out->t_fw = rho * x.fw[top];
  out->t_bw = rho * x.bw[top];
  L = s->prof[x.sel[0]].nlayers;
  if (x.n > 1 && L > 0) {
    mlsys__cloud_reqctx rc;
    int l;
    rc.s = s, rc.x = &x;
    out->b_cap = s->b_cap > 0 ? s->b_cap : mlsys__cloud_bw_min(s, &x, MLSYS__CLOUD_CAP_PROBE, 1);
    if (!(out->b_cap > 0) || !isfinite(out->b_cap))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: the bandwidth cap came out as %g bytes/s", out->b_cap);
    ready = (double *)mlsys_alloc((size_t)L, sizeof *ready);
    if (!ready) return mlsys_set_error(MLSYS_ERR_NOMEM, "cloud: out of memory for %d layers", L);
    for (l = 0; l < L; l++) { /* a layer is ready on every VM only when the slowest type has it */
      double r = 0;
      for (k = 0; k < x.nsel; k++) {
        double v = s->prof[x.sel[k]].ready_frac[l] * rho * x.bw[k];
        if (v > r) r = v;
      }
      ready[l] = l && r < ready[l - 1] ? ready[l - 1] : r;
    }
    st = mlsys_cloud_overlap_sim(L, ready, s->prof[x.sel[0]].grad_bytes, x.n, mlsys__cloud_req, &rc, out->b_cap,
                                 s->share_mode, &out->t_pe);
    mlsys_free(ready);
    if (st != MLSYS_OK) return st;
  }
  out->t_iter = out->t_fw + (out->t_bw > out->t_pe ? out->t_bw : out->t_pe);
  return MLSYS_OK;
}

/* ---- 4. optimizer --------------------------------------------------------------------------------------------- */
static double mlsys__cloud_price(const mlsys_cloud_sim *s, const int *counts) {
  double p = 0;
  int i;
  for (i = 0; i < s->ntypes; i++) p += counts[i] * s->types[i].price_per_hour;
  return p;
}
static int mlsys__cloud_cap(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p, int i) {
  int c = p->caps ? p->caps[i] : s->types[i].cap;
  return c < 0 ? p->global_batch : c;
}
static int mlsys__cloud_bmax(const mlsys_cloud_sim *s, int i, int global_batch) {
  int b = s->prof ? s->prof[i].bmax : global_batch;
  return b < global_batch ? b : global_batch;
}

static mlsys_status mlsys__cloud_problem_check(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p) {
  int i;
  if (!s || s->ntypes < 1 || s->ntypes > MLSYS_CLOUD_MAX_TYPES || !s->types)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a sim needs 1..%d instance types", MLSYS_CLOUD_MAX_TYPES);
  if (!s->prof && !s->t_iter_fn) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a sim needs profiles or a t_iter_fn");
  if (p->global_batch < 1) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: global batch %d must be at least 1", p->global_batch);
  if (p->iters < 1) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %ld iterations: must be at least 1", p->iters);
  if (p->goal != MLSYS_CLOUD_MIN_COST && p->goal != MLSYS_CLOUD_MIN_TIME)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: goal %d is neither MIN_COST nor MIN_TIME", (int)p->goal);
  if (isnan(p->time_limit_s) || isnan(p->budget)) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a limit is NaN");
  for (i = 0; i < s->ntypes; i++) {
    char what[64];
    mlsys_status st;
    if (!(s->types[i].price_per_hour >= 0) || !isfinite(s->types[i].price_per_hour))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: type %d (%s): price %g $/h", i, s->types[i].name,
                             s->types[i].price_per_hour);
    snprintf(what, sizeof what, "type %d (%s)", i, s->types[i].name);
    if (s->prof && (st = mlsys_cloud_cprof_check(&s->prof[i], what)) != MLSYS_OK) return st;
  }
  return MLSYS_OK;
}

static void mlsys__cloud_fill(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p, const int *counts,
                              const int *batches, double t_iter, mlsys_cloud_plan *pl) {
  int i;
  pl->ntypes = s->ntypes;
  for (i = 0; i < s->ntypes; i++) pl->counts[i] = counts[i], pl->batches[i] = counts[i] ? batches[i] : 0;
  pl->t_iter = t_iter;
  pl->total_time_s = t_iter * (double)p->iters;
  pl->cost_per_hour = mlsys__cloud_price(s, counts);
  pl->total_cost = pl->total_time_s * pl->cost_per_hour / 3600;
  pl->feasible = (p->time_limit_s <= 0 || pl->total_time_s <= p->time_limit_s) && (p->budget <= 0 || pl->total_cost <= p->budget);
}

MLSYS_DEF mlsys_status mlsys_cloud_plan_eval(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                             const int *counts, const int *batches, mlsys_cloud_plan *out) {
  mlsys_cloud_simres r;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__cloud_problem_check(s, p)) != MLSYS_OK) return st;
  if ((st = mlsys_cloud_simulate(s, counts, batches, &r)) != MLSYS_OK) return st;
  if (!isfinite(r.t_iter)) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: the mix cannot run (t_iter is infinite)");
  mlsys__cloud_fill(s, p, counts, batches, r.t_iter, out);
  out->sim = r;
  out->sims = 1, out->candidates = 1, out->complete = 1;
  return MLSYS_OK;
}

typedef struct {
  const mlsys_cloud_sim *s;
  const mlsys_cloud_problem *p;
  int caps[MLSYS_CLOUD_MAX_TYPES], bmax[MLSYS_CLOUD_MAX_TYPES];
  int counts[MLSYS_CLOUD_MAX_TYPES], batches[MLSYS_CLOUD_MAX_TYPES];
  int set[MLSYS_CLOUD_MAX_TYPES], nset;
  int lim_last;                    /* eager: the last type's count limit (0: its cap) */
  int must_last;                   /* eager: the last type of the set must be used */
  mlsys_cloud_plan best;
  double best_obj, t0;
  int have, stop;
  mlsys_status err;
} mlsys__cloud_search;

static int mlsys__cloud_better(const mlsys__cloud_search *S, double obj, const int *counts) {
  int i, t0 = 0, t1 = 0, n0 = 0, n1 = 0;
  if (!S->have) return 1;
  if (obj < S->best_obj * (1 - 1e-12)) return 1;
  if (obj > S->best_obj * (1 + 1e-12)) return 0;
  /* a tie (§3.5 rules 3–4): fewer types, then fewer VMs; the search order already puts preferred types first */
  for (i = 0; i < S->s->ntypes; i++) {
    t0 += S->best.counts[i] > 0, t1 += counts[i] > 0;
    n0 += S->best.counts[i], n1 += counts[i];
  }
  return t1 < t0 || (t1 == t0 && n1 < n0);
}

static void mlsys__cloud_try(mlsys__cloud_search *S) {
  const mlsys_cloud_sim *s = S->s;
  const mlsys_cloud_problem *p = S->p;
  double lb = 0, price = mlsys__cloud_price(s, S->counts), t_lb, obj_lb;
  mlsys_cloud_simres r;
  int i;
  S->best.candidates++;
  if (s->prof) /* noise only lengthens an iteration (E[max] ≥ max E) and t_pe ≥ 0: a bound without simulating */
    for (i = 0; i < s->ntypes; i++)
      if (S->counts[i]) {
        double mu = mlsys_cloud_cprof_fw(&s->prof[i], S->batches[i]) + mlsys_cloud_cprof_bw(&s->prof[i], S->batches[i]);
        if (mu > lb) lb = mu;
      }
  t_lb = lb * (double)p->iters;
  if (p->time_limit_s > 0 && t_lb > p->time_limit_s) return;
  if (p->budget > 0 && t_lb * price / 3600 > p->budget) return;
  obj_lb = p->goal == MLSYS_CLOUD_MIN_TIME ? t_lb : t_lb * price / 3600;
  if (S->have && obj_lb > S->best_obj * (1 + 1e-12)) return;
  if (p->max_sims > 0 && S->best.sims >= p->max_sims) {
    S->stop = 1;
    return;
  }
  if (p->eager && p->solve_budget_s > 0 && mlsys_now() - S->t0 > p->solve_budget_s) {
    S->stop = 1;
    return;
  }
  S->best.sims++;
  if ((S->err = mlsys_cloud_simulate(s, S->counts, S->batches, &r)) != MLSYS_OK) {
    S->stop = 1;
    return;
  }
  if (!isfinite(r.t_iter)) return;
  {
    double T = r.t_iter * (double)p->iters, cost = T * price / 3600, obj;
    long sims = S->best.sims, cands = S->best.candidates;
    if (p->time_limit_s > 0 && T > p->time_limit_s) return;
    if (p->budget > 0 && cost > p->budget) return;
    obj = p->goal == MLSYS_CLOUD_MIN_TIME ? T : cost;
    if (!mlsys__cloud_better(S, obj, S->counts)) return;
    mlsys__cloud_fill(s, p, S->counts, S->batches, r.t_iter, &S->best);
    S->best.sim = r;
    S->best.sims = sims, S->best.candidates = cands;
    S->best_obj = obj;
    S->have = 1;
  }
}

/* assign batches and counts to set[pos..]; rem samples are left to place */
static void mlsys__cloud_assign(mlsys__cloud_search *S, int pos, int rem) {
  int i = S->set[pos], last = pos == S->nset - 1, b, c, cap = S->caps[i];
  if (last && S->lim_last > 0 && S->lim_last < cap) cap = S->lim_last;
  for (b = 1; b <= S->bmax[i] && b <= rem && !S->stop; b *= 2) {
    S->batches[i] = b;
    if (last) {
      if (rem % b || rem / b > cap) continue;
      S->counts[i] = rem / b;
      mlsys__cloud_try(S);
    } else {
      for (c = 1; c <= cap && c * b < rem && !S->stop; c++) {
        S->counts[i] = c;
        mlsys__cloud_assign(S, pos + 1, rem - c * b);
      }
    }
    S->counts[i] = 0;
  }
  S->counts[i] = 0, S->batches[i] = 0;
}

/* every subset of `order[0..m)` of size k that contains order[m−1] when must_last (eager), in lexicographic order */
static void mlsys__cloud_subsets(mlsys__cloud_search *S, const int *order, int m, int k, int start) {
  int j;
  if (S->stop) return;
  if (S->nset == k) {
    if (S->must_last && S->set[k - 1] != order[m - 1]) return;
    mlsys__cloud_assign(S, 0, S->p->global_batch);
    return;
  }
  for (j = start; j < m && !S->stop; j++) {
    if (S->caps[order[j]] < 1 || S->bmax[order[j]] < 1) continue;
    S->set[S->nset++] = order[j];
    mlsys__cloud_subsets(S, order, m, k, j + 1);
    S->nset--;
  }
}

static void mlsys__cloud_pref_order(const mlsys_cloud_sim *s, int *order) {
  int i, j;
  for (i = 0; i < s->ntypes; i++) order[i] = i;
  for (i = 1; i < s->ntypes; i++) /* insertion sort by (pref_rank, index): stable, no global state */
    for (j = i; j > 0 && s->types[order[j]].pref_rank < s->types[order[j - 1]].pref_rank; j--) {
      int t = order[j];
      order[j] = order[j - 1], order[j - 1] = t;
    }
}

MLSYS_DEF mlsys_status mlsys_cloud_optimize(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out) {
  mlsys__cloud_search S;
  mlsys_status st;
  int order[MLSYS_CLOUD_MAX_TYPES], i, k, kmax;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__cloud_problem_check(s, p)) != MLSYS_OK) return st;
  memset(&S, 0, sizeof S);
  S.s = s, S.p = p, S.t0 = mlsys_now(), S.err = MLSYS_OK;
  for (i = 0; i < s->ntypes; i++) {
    S.caps[i] = mlsys__cloud_cap(s, p, i);
    S.bmax[i] = mlsys__cloud_bmax(s, i, p->global_batch);
  }
  mlsys__cloud_pref_order(s, order);
  kmax = p->max_types > 0 && p->max_types < s->ntypes ? p->max_types : s->ntypes;
  if (!p->eager) {
    for (k = 1; k <= kmax && !S.stop; k++) mlsys__cloud_subsets(&S, order, s->ntypes, k, 0);
  } else {
    /* §3.5 eager: heterogeneity level by level in preference order; each new type first with at most K VMs, then
       with all of its capacity; mixes without the new type were seen at the levels before */
    int K = p->eager_k > 0 ? p->eager_k : 8, m;
    for (m = 1; m <= s->ntypes && !S.stop; m++) {
      int t = order[m - 1], lims[2], nl = 0, li;
      lims[nl++] = K < S.caps[t] ? K : S.caps[t];
      if (S.caps[t] > lims[0]) lims[nl++] = S.caps[t];
      for (li = 0; li < nl && !S.stop; li++) {
        S.lim_last = lims[li], S.must_last = 1;
        for (k = 1; k <= m && k <= kmax && !S.stop; k++) {
          /* the new type goes last in the set so that its count limit applies to it */
          int ord2[MLSYS_CLOUD_MAX_TYPES], j;
          for (j = 0; j < m; j++) ord2[j] = order[j];
          mlsys__cloud_subsets(&S, ord2, m, k, 0);
        }
      }
      if (S.have && !p->eager_continue) break;
    }
  }
  if (S.err != MLSYS_OK) return S.err;
  S.best.solve_s = mlsys_now() - S.t0;
  S.best.complete = !S.stop;
  *out = S.best;
  if (!S.have) {
    out->ntypes = s->ntypes;
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE,
                           "cloud: no mix of the %d types holds global batch %d within %s%.6gs and %s$%.6g (%ld "
                           "candidates, %ld simulated%s)",
                           s->ntypes, p->global_batch, p->time_limit_s > 0 ? "" : "no limit ", p->time_limit_s,
                           p->budget > 0 ? "" : "no budget ", p->budget, out->candidates, out->sims,
                           S.stop ? "; the search stopped at its budget" : "");
  }
  out->feasible = 1;
  return MLSYS_OK;
}

/* CAP/TAP (§4.1): request VMs in rank order, each at Bmax, until the global batch is placed */
static mlsys_status mlsys__cloud_fill_policy(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p, const int *rank,
                                             const char *who, mlsys_cloud_plan *out) {
  int counts[MLSYS_CLOUD_MAX_TYPES] = {0}, batches[MLSYS_CLOUD_MAX_TYPES] = {0}, j, rem = p->global_batch;
  mlsys_status st;
  double t0 = mlsys_now();
  for (j = 0; j < s->ntypes && rem > 0; j++) {
    int i = rank[j], bm = mlsys__cloud_bmax(s, i, p->global_batch), cap = mlsys__cloud_cap(s, p, i), k;
    if (bm < 1 || cap < 1) continue;
    k = (rem + bm - 1) / bm;
    if (k > cap) k = cap;
    if (k * bm <= rem) {
      counts[i] = k, batches[i] = bm, rem -= k * bm;
    } else {
      if (rem % k)
        return mlsys_set_error(MLSYS_ERR_ARG, "cloud: %s: the last %d samples do not split evenly over %d VMs of %s", who,
                               rem, k, s->types[i].name);
      counts[i] = k, batches[i] = rem / k, rem = 0;
    }
  }
  if (rem > 0)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "cloud: %s: the available VMs at Bmax hold %d of global batch %d", who,
                           p->global_batch - rem, p->global_batch);
  if ((st = mlsys_cloud_plan_eval(s, p, counts, batches, out)) != MLSYS_OK) return st;
  out->solve_s = mlsys_now() - t0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_plan_cap(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out) {
  int rank[MLSYS_CLOUD_MAX_TYPES], i, j;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__cloud_problem_check(s, p)) != MLSYS_OK) return st;
  for (i = 0; i < s->ntypes; i++) rank[i] = i;
  for (i = 1; i < s->ntypes; i++) /* cheapest first; stable */
    for (j = i; j > 0 && s->types[rank[j]].price_per_hour < s->types[rank[j - 1]].price_per_hour; j--) {
      int t = rank[j];
      rank[j] = rank[j - 1], rank[j - 1] = t;
    }
  return mlsys__cloud_fill_policy(s, p, rank, "CAP", out);
}

MLSYS_DEF mlsys_status mlsys_cloud_plan_tap(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p,
                                            mlsys_cloud_plan *out) {
  int rank[MLSYS_CLOUD_MAX_TYPES], i, j;
  double thru[MLSYS_CLOUD_MAX_TYPES];
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__cloud_problem_check(s, p)) != MLSYS_OK) return st;
  for (i = 0; i < s->ntypes; i++) {
    rank[i] = i;
    thru[i] = 0;
    if (s->prof && s->prof[i].bmax > 0) { /* samples/s of one VM at Bmax */
      double t = mlsys_cloud_cprof_fw(&s->prof[i], s->prof[i].bmax) + mlsys_cloud_cprof_bw(&s->prof[i], s->prof[i].bmax);
      thru[i] = t > 0 ? s->prof[i].bmax / t : INFINITY;
    } else if (!s->prof) { /* no profiles: the user's preference order is the speed order */
      thru[i] = -s->types[i].pref_rank;
    }
  }
  for (i = 1; i < s->ntypes; i++) /* fastest first; stable */
    for (j = i; j > 0 && thru[rank[j]] > thru[rank[j - 1]]; j--) {
      int t = rank[j];
      rank[j] = rank[j - 1], rank[j - 1] = t;
    }
  return mlsys__cloud_fill_policy(s, p, rank, "TAP", out);
}

MLSYS_DEF int mlsys_cloud_plan_format(const mlsys_cloud_sim *s, const mlsys_cloud_plan *pl, char *buf, size_t n) {
  size_t len = 0;
  int i, first = 1;
  if (n) buf[0] = 0;
  for (i = 0; i < pl->ntypes && i < s->ntypes; i++) {
    const char *nm = s->types[i].short_name[0] ? s->types[i].short_name : s->types[i].name;
    int w;
    if (!pl->counts[i]) continue;
    w = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "%s%d%s@%d", first ? "" : " + ", pl->counts[i], nm,
                 pl->batches[i]);
    if (w > 0) len += (size_t)w;
    first = 0;
  }
  return (int)len;
}

MLSYS_DEF mlsys_status mlsys_cloud_parse_config(const mlsys_cloud_itype *types, int ntypes, const char *text,
                                                int *counts, int *batches) {
  const char *p = text;
  int i, any = 0;
  for (i = 0; i < ntypes; i++) counts[i] = 0, batches[i] = 0;
  if (!text) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: no configuration");
  for (;;) {
    char name[48];
    long cnt, b;
    size_t nl = 0;
    char *end;
    int t = -1;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p))
      return mlsys_set_error(MLSYS_ERR_PARSE, "cloud: configuration \"%s\": expected a VM count at offset %d", text, (int)(p - text));
    cnt = strtol(p, &end, 10);
    p = end;
    if (*p == 'x' && p[1] && !isspace((unsigned char)p[1]) && p[1] != '@') {
      /* "4xp3.8xlarge": an 'x' then a name; but "4xlarge..." is impossible, so an x followed by a name is a separator */
      int k;
      for (k = 0; k < ntypes; k++)
        if (strncmp(p, types[k].name, strlen(types[k].name)) == 0 && p[strlen(types[k].name)] == '@') break;
      if (k == ntypes) p++;
    }
    while (*p && *p != '@' && !isspace((unsigned char)*p) && nl + 1 < sizeof name) name[nl++] = *p++;
    name[nl] = 0;
    while (isspace((unsigned char)*p)) p++;
    if (*p != '@' || !nl)
      return mlsys_set_error(MLSYS_ERR_PARSE, "cloud: configuration \"%s\": expected TYPE@BATCH after count %ld", text, cnt);
    p++;
    if (!isdigit((unsigned char)*p))
      return mlsys_set_error(MLSYS_ERR_PARSE, "cloud: configuration \"%s\": expected a batch after %s@", text, name);
    b = strtol(p, &end, 10);
    p = end;
    for (i = 0; i < ntypes; i++)
      if (strcmp(name, types[i].name) == 0 || (types[i].short_name[0] && strcmp(name, types[i].short_name) == 0)) t = i;
    if (t < 0) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: configuration \"%s\": unknown instance type \"%s\"", text, name);
    if (cnt < 1 || cnt > 1000000 || b < 1 || b > 100000000)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: configuration \"%s\": %ld VMs at batch %ld is out of range", text, cnt, b);
    if (counts[t])
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: configuration \"%s\": %s appears twice (one batch per type)", text, name);
    counts[t] = (int)cnt, batches[t] = (int)b, any = 1;
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    if (*p != '+')
      return mlsys_set_error(MLSYS_ERR_PARSE, "cloud: configuration \"%s\": expected '+' at offset %d", text, (int)(p - text));
    p++;
  }
  return any ? MLSYS_OK : mlsys_set_error(MLSYS_ERR_ARG, "cloud: empty configuration");
}

MLSYS_DEF int mlsys_cloud_prune_dominated(int n, const double *thru, const double *price, int *keep) {
  int i, j, kept = 0;
  for (i = 0; i < n; i++) {
    double ei = thru[i] / price[i];
    keep[i] = 1;
    for (j = 0; j < n && keep[i]; j++)
      if (j != i && thru[j] > thru[i] && thru[j] / price[j] > ei) keep[i] = 0;
    kept += keep[i];
  }
  return kept;
}

/* ---- 5. re-planning ------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_cloud_replan_problem(const mlsys_cloud_sim *s, const mlsys_cloud_problem *orig,
                                                  const mlsys_cloud_progress *pg, const mlsys_cloud_overheads *oh,
                                                  const int *surviving, const int *depleted, int *caps_out,
                                                  mlsys_cloud_problem *out) {
  int i;
  *out = *orig;
  if (pg->iters_done < 0 || pg->iters_done >= orig->iters)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: re-plan: %ld of %ld iterations done leaves nothing to plan",
                           pg->iters_done, orig->iters);
  out->iters = orig->iters - pg->iters_done;
  if (orig->time_limit_s > 0) {
    out->time_limit_s = orig->time_limit_s - pg->elapsed_s - oh->detach_s - oh->launch_s - oh->solve_s;
    if (!(out->time_limit_s > 0))
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "cloud: re-plan: no time left (%.6g s of %.6g used, %.6g s of overheads)",
                             pg->elapsed_s, orig->time_limit_s, oh->detach_s + oh->launch_s + oh->solve_s);
  }
  if (orig->budget > 0) {
    out->budget = orig->budget - pg->spent;
    if (!(out->budget > 0))
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "cloud: re-plan: the budget $%.6g is spent ($%.6g)", orig->budget, pg->spent);
  }
  for (i = 0; i < s->ntypes; i++) {
    int c = mlsys__cloud_cap(s, orig, i);
    if (depleted && depleted[i]) c = surviving ? surviving[i] : 0; /* no new VMs of a preempted type */
    caps_out[i] = c;
  }
  out->caps = caps_out;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_replan(const mlsys_cloud_sim *s, const mlsys_cloud_problem *orig,
                                          const mlsys_cloud_progress *pg, const mlsys_cloud_overheads *oh,
                                          const int *surviving, const int *depleted, mlsys_cloud_plan *out) {
  int caps[MLSYS_CLOUD_MAX_TYPES];
  mlsys_cloud_problem np;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if (!s || s->ntypes < 1 || s->ntypes > MLSYS_CLOUD_MAX_TYPES)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: a sim needs 1..%d instance types", MLSYS_CLOUD_MAX_TYPES);
  if ((st = mlsys_cloud_replan_problem(s, orig, pg, oh, surviving, depleted, caps, &np)) != MLSYS_OK) return st;
  return mlsys_cloud_optimize(s, &np, out);
}

/* ---- 6. files ------------------------------------------------------------------------------------------------- */
/* the next CSV field of line p (no quoting: the catalogue's fields hold none), trimmed; advances p past it and its
   comma. Returns 1 when a comma followed (another field comes, possibly empty), else 0. */
static int mlsys__cloud_csv_field(const char **p, const char *end, char *buf, size_t n) {
  const char *q = *p, *a, *b;
  size_t k;
  while (q < end && *q != ',' && *q != '\n') q++;
  a = *p, b = q;
  while (a < b && isspace((unsigned char)*a)) a++;
  while (b > a && isspace((unsigned char)b[-1])) b--;
  k = (size_t)(b - a) < n - 1 ? (size_t)(b - a) : n - 1;
  memcpy(buf, a, k);
  buf[k] = 0;
  *p = q < end && *q == ',' ? q + 1 : q;
  return q < end && *q == ',';
}

static int mlsys__cloud_num(const char *f, double *v) {
  char *e;
  if (!*f) return 0;
  *v = strtod(f, &e);
  return *e == 0 && isfinite(*v);
}

MLSYS_DEF mlsys_status mlsys_cloud_catalog_load(const char *text, size_t len, const char *source, int spot,
                                                mlsys_cloud_itype **out, int *n) {
  enum { C_NAME, C_SHORT, C_GPU, C_GPUS, C_VCPU, C_MEM, C_RATED, C_OD, C_SPOT, C_N };
  static const char *const names[C_N] = {"name", "short", "gpu_name", "gpus_per_vm", "vcpus", "mem_gib",
                                         "rated_gbps", "ondemand_per_hour", "spot_per_hour"};
  int col[64], ncol = 0, i, line = 1, cap = 0, cnt = 0;
  const char *p = text, *end = text + len;
  char f[128];
  mlsys_cloud_itype *v = NULL;
  *out = NULL, *n = 0;
  if (!source) source = "catalog";
  for (;;) { /* the header */
    int k = -1, more = mlsys__cloud_csv_field(&p, end, f, sizeof f);
    for (i = 0; i < C_N; i++)
      if (!strcmp(f, names[i])) k = i;
    if (ncol == 64) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: more than 64 columns", source);
    col[ncol++] = k;
    if (!more) break;
  }
  for (i = 0; i < ncol && col[i] != C_NAME; i++) {}
  if (i == ncol) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: no 'name' column in the header", source);
  while (p < end) {
    mlsys_cloud_itype t;
    double price = NAN;
    int c, more;
    p++; /* the newline */
    line++;
    if (p >= end || *p == '\n' || *p == '\r') continue;
    memset(&t, 0, sizeof t);
    t.cap = -1, t.pref_rank = cnt;
    for (c = 0, more = 1; c < ncol; c++) {
      double d = 0;
      int has;
      if (!more) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %d fields, the header has %d", source, line, c, ncol);
      }
      more = mlsys__cloud_csv_field(&p, end, f, sizeof f);
      if (col[c] < 0) continue;
      if ((col[c] == C_NAME && strlen(f) >= sizeof t.name) || (col[c] == C_SHORT && strlen(f) >= sizeof t.short_name) ||
          (col[c] == C_GPU && strlen(f) >= sizeof t.gpu_name)) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s \"%s\" is too long", source, line, names[col[c]], f);
      }
      has = mlsys__cloud_num(f, &d);
      if (col[c] >= C_GPUS && col[c] != C_NAME && *f && !has) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s \"%s\" is not a number", source, line, names[col[c]], f);
      }
      if (has && d < 0) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s %g is negative", source, line, names[col[c]], d);
      }
      if ((col[c] == C_GPUS || col[c] == C_VCPU) && has && !(d <= 1e6)) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s %g is out of range (0..1000000)", source, line, names[col[c]], d);
      }
      switch (col[c]) {
        case C_NAME: memcpy(t.name, f, strlen(f) + 1); break; /* lengths checked above */
        case C_SHORT: memcpy(t.short_name, f, strlen(f) + 1); break;
        case C_GPU: memcpy(t.gpu_name, f, strlen(f) + 1); break;
        case C_GPUS: t.gpus_per_vm = (int)d; break;
        case C_VCPU: t.cpu_cores = (int)d; break;
        case C_MEM: t.mem_gib = d; break;
        case C_RATED: t.rated_gbps = d; break;
        case C_OD: if (!spot && has) price = d; break;
        case C_SPOT: if (spot && has) price = d, t.is_spot = 1; break;
        default: break;
      }
    }
    if (more) {
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: more fields than the header's %d", source, line, ncol);
    }
    if (p < end && *p == '\r') p++; /* CRLF */
    if (!t.name[0]) {
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: empty instance name", source, line);
    }
    t.price_per_hour = price;
    if (cnt == cap) {
      mlsys_cloud_itype *nv = (mlsys_cloud_itype *)mlsys_realloc_array(v, (size_t)(cap ? 2 * cap : 16), sizeof *v);
      if (!nv) {
        mlsys_free(v);
        return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", source);
      }
      v = nv, cap = cap ? 2 * cap : 16;
    }
    v[cnt++] = t;
  }
  if (!cnt) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: no instance types after the header", source);
  *out = v, *n = cnt;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_cloud_dnn_free(mlsys_cloud_dnn *d) {
  if (!d) return;
  mlsys_free(d->type_name);
  mlsys_free(d->prof);
  mlsys_free(d->grad_bytes);
  mlsys_free(d->ready_frac);
  memset(d, 0, sizeof *d);
}

MLSYS_DEF const mlsys_cloud_cprof *mlsys_cloud_dnn_find(const mlsys_cloud_dnn *d, const char *name) {
  int i;
  for (i = 0; i < d->ntypes; i++)
    if (!strcmp(d->type_name[i], name)) return &d->prof[i];
  return NULL;
}

/* a JSON array of n finite numbers in [lo, hi] into v (allocated when *v is NULL and alloc) */
static mlsys_status mlsys__cloud_json_nums(const mlsys_json *parent, const char *what, int maxn, double lo, double hi,
                                           double *v, int *n) {
  const mlsys_json *a = mlsys_json_get(parent, what);
  int i;
  if (!a || a->type != MLSYS_JSON_ARRAY) return mlsys_json_error_at(a ? a : parent, "'%s' must be an array of numbers", what);
  if (a->count < 1 || a->count > maxn) return mlsys_json_error_at(a, "'%s' has %d numbers (1..%d)", what, a->count, maxn);
  for (i = 0; i < a->count; i++) {
    const mlsys_json *x = &a->items[i];
    if (x->type != MLSYS_JSON_NUMBER || !(x->num >= lo && x->num <= hi))
      return mlsys_json_error_at(x, "'%s'[%d] must be a number in [%g, %g]", what, i, lo, hi);
    v[i] = x->num;
  }
  *n = a->count;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_dnn_load(const char *text, size_t len, const char *source, mlsys_cloud_dnn *out) {
  mlsys_json_doc doc;
  const mlsys_json *root, *types, *layers, *x;
  const char *name;
  mlsys_status st;
  int i;
  memset(out, 0, sizeof *out);
  if (!source) source = "profile";
  if ((st = mlsys_json_parse(text, len, source, &doc)) != MLSYS_OK) return st;
  root = doc.root;
  if (root->type != MLSYS_JSON_OBJECT) {
    st = mlsys_json_error_at(root, "a profile is a JSON object");
    goto done;
  }
  if ((st = mlsys_json_get_str(root, "dnn", 1, NULL, &name)) != MLSYS_OK) goto done;
  snprintf(out->dnn, sizeof out->dnn, "%s", name);
  if ((st = mlsys_json_get_typed(root, "layers", MLSYS_JSON_OBJECT, 0, &layers)) != MLSYS_OK) goto done;
  if (layers) {
    const mlsys_json *gb = mlsys_json_get(layers, "grad_bytes"), *rf = mlsys_json_get(layers, "ready_frac");
    int n1 = 0, n2 = 0, cnt = gb && gb->type == MLSYS_JSON_ARRAY ? gb->count : 0;
    if (cnt < 1 || cnt > 1000000) {
      st = mlsys_json_error_at(gb ? gb : layers, "'layers' needs 'grad_bytes': an array of 1..1000000 numbers");
      goto done;
    }
    out->grad_bytes = (double *)mlsys_alloc((size_t)cnt, sizeof(double));
    out->ready_frac = (double *)mlsys_alloc((size_t)cnt, sizeof(double));
    if (!out->grad_bytes || !out->ready_frac) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory for %d layers", source, cnt);
      goto done;
    }
    if ((st = mlsys__cloud_json_nums(layers, "grad_bytes", cnt, 0, 1e15, out->grad_bytes, &n1)) != MLSYS_OK) goto done;
    if ((st = mlsys__cloud_json_nums(layers, "ready_frac", cnt, 0, 1, out->ready_frac, &n2)) != MLSYS_OK) goto done;
    if (n2 != n1) {
      st = mlsys_json_error_at(rf, "'ready_frac' has %d numbers, 'grad_bytes' %d", n2, n1);
      goto done;
    }
    for (i = 1; i < n1; i++)
      if (out->ready_frac[i] < out->ready_frac[i - 1]) {
        st = mlsys_json_error_at(&rf->items[i], "'ready_frac'[%d] goes backwards (layers are in backward order)", i);
        goto done;
      }
    out->nlayers = n1;
  }
  if ((st = mlsys_json_get_typed(root, "types", MLSYS_JSON_OBJECT, 1, &types)) != MLSYS_OK) goto done;
  if (types->count < 1 || types->count > 4096) {
    st = mlsys_json_error_at(types, "'types' must name 1..4096 instance types");
    goto done;
  }
  out->type_name = (char(*)[32])mlsys_calloc((size_t)types->count, 32);
  out->prof = (mlsys_cloud_cprof *)mlsys_calloc((size_t)types->count, sizeof *out->prof);
  if (!out->type_name || !out->prof) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", source);
    goto done;
  }
  for (i = 0; i < types->count; i++) {
    mlsys_cloud_cprof *p = &out->prof[i];
    double fw[4], bw[4], b[4];
    int64_t bmax;
    int nf = 0, nb = 0, nx = 0, k;
    char what[96];
    x = &types->items[i];
    if (strlen(types->keys[i]) >= 32 || !types->keys[i][0]) {
      st = mlsys_json_error_at(x, "instance type name \"%s\" is empty or longer than 31 bytes", types->keys[i]);
      goto done;
    }
    snprintf(out->type_name[i], 32, "%s", types->keys[i]);
    if (x->type != MLSYS_JSON_OBJECT) {
      st = mlsys_json_error_at(x, "'%s' must be an object with bmax, t_fw, t_bw", types->keys[i]);
      goto done;
    }
    if ((st = mlsys_json_get_i64(x, "bmax", 1, 0, 1, 100000000, &bmax)) != MLSYS_OK) goto done;
    if ((st = mlsys_json_get_double(x, "sigma_rel", 0, 0, -1, 0.999, &p->sigma_rel)) != MLSYS_OK) goto done;
    if (mlsys_json_get(x, "b")) {
      if ((st = mlsys__cloud_json_nums(x, "b", 4, 1, (double)bmax, b, &nx)) != MLSYS_OK) goto done;
    } else {
      nx = mlsys_cloud_pwl_points((int)bmax, b);
    }
    if ((st = mlsys__cloud_json_nums(x, "t_fw", 4, 0, 1e9, fw, &nf)) != MLSYS_OK) goto done;
    if ((st = mlsys__cloud_json_nums(x, "t_bw", 4, 0, 1e9, bw, &nb)) != MLSYS_OK) goto done;
    if (nf != nx || nb != nx) {
      st = mlsys_json_error_at(x, "'%s': %d sample batches but %d t_fw and %d t_bw values", types->keys[i], nx, nf, nb);
      goto done;
    }
    p->bmax = (int)bmax, p->npts = nx;
    for (k = 0; k < nx; k++) p->b[k] = b[k], p->t_fw[k] = fw[k], p->t_bw[k] = bw[k];
    p->nlayers = out->nlayers, p->grad_bytes = out->grad_bytes, p->ready_frac = out->ready_frac;
    snprintf(what, sizeof what, "%s: %s", source, types->keys[i]);
    if (p->b[0] != 1) {
      st = mlsys_json_error_at(x, "'%s': the sample batches must start at 1", types->keys[i]);
      goto done;
    }
    if ((st = mlsys_cloud_cprof_check(p, what)) != MLSYS_OK) goto done;
  }
  out->ntypes = types->count;
done:
  mlsys_json_doc_free(&doc);
  if (st != MLSYS_OK) mlsys_cloud_dnn_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_cloud_dnn_write(const mlsys_cloud_dnn *d, FILE *f) {
  mlsys_json_writer w;
  int i, k;
  mlsys_jw_init(&w, f, 1);
  mlsys_jw_object(&w);
  mlsys_jw_key(&w, "dnn"), mlsys_jw_str(&w, d->dnn);
  if (d->nlayers > 0) {
    mlsys_jw_key(&w, "layers"), mlsys_jw_object(&w);
    mlsys_jw_key(&w, "grad_bytes"), mlsys_jw_array(&w);
    for (i = 0; i < d->nlayers; i++) mlsys_jw_double(&w, d->grad_bytes[i]);
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "ready_frac"), mlsys_jw_array(&w);
    for (i = 0; i < d->nlayers; i++) mlsys_jw_double(&w, d->ready_frac[i]);
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
  }
  mlsys_jw_key(&w, "types"), mlsys_jw_object(&w);
  for (i = 0; i < d->ntypes; i++) {
    const mlsys_cloud_cprof *p = &d->prof[i];
    mlsys_jw_key(&w, d->type_name[i]), mlsys_jw_object(&w);
    mlsys_jw_key(&w, "bmax"), mlsys_jw_i64(&w, p->bmax);
    mlsys_jw_key(&w, "b"), mlsys_jw_array(&w);
    for (k = 0; k < p->npts; k++) mlsys_jw_double(&w, p->b[k]);
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "t_fw"), mlsys_jw_array(&w);
    for (k = 0; k < p->npts; k++) mlsys_jw_double(&w, p->t_fw[k]);
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "t_bw"), mlsys_jw_array(&w);
    for (k = 0; k < p->npts; k++) mlsys_jw_double(&w, p->t_bw[k]);
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "sigma_rel"), mlsys_jw_double(&w, p->sigma_rel);
    mlsys_jw_end(&w);
  }
  mlsys_jw_end(&w);
  mlsys_jw_end(&w);
  if (mlsys_jw_finish(&w) != MLSYS_OK) return mlsys_set_error(MLSYS_ERR_IO, "cloud: writing the profile failed");
  return MLSYS_OK;
}

/* ---- 7. the profiling driver ---------------------------------------------------------------------------------- */
static int mlsys__cloud_try_fit(mlsys_cloud_iter_fn fn, void *ud, int b, double *stamps) {
  double fw, bw;
  return fn(ud, b, &fw, &bw, stamps);
}

MLSYS_DEF mlsys_status mlsys_cloud_profile(mlsys_cloud_iter_fn fn, void *ud, const mlsys_cloud_profile_opts *o,
                                           mlsys_cloud_cprof *p, double *ready_frac) {
  int limit = o->bmax_limit > 0 ? o->bmax_limit : 65536, warm = o->warmup > 0 ? o->warmup : 2;
  int iters = o->iters > 0 ? o->iters : 10, L = o->nlayers, lo, hi, r, k, it, l;
  double *stamps = NULL, *sum_st = NULL;
  mlsys_status st = MLSYS_OK;
  memset(p, 0, sizeof *p);
  if (L < 0 || (L > 0 && !ready_frac)) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: profile: %d layers and no ready_frac", L);
  if (L > 0) {
    stamps = (double *)mlsys_calloc((size_t)L, sizeof *stamps);
    sum_st = (double *)mlsys_calloc((size_t)L, sizeof *sum_st);
    if (!stamps || !sum_st) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "cloud: profile: out of memory for %d layers", L);
      goto done;
    }
  }
  /* Bmax: double while it fits, then (unless pow2_only) bisect between the last fit and the first failure */
  r = mlsys__cloud_try_fit(fn, ud, 1, stamps);
  if (r < 0) { st = mlsys_last_status() != MLSYS_OK ? mlsys_last_status() : MLSYS_ERR_ARG; goto done; }
  if (r > 0) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "cloud: profile: batch 1 does not fit"); goto done; }
  lo = 1, hi = -1;
  while (lo * 2 <= limit) {
    r = mlsys__cloud_try_fit(fn, ud, lo * 2, stamps);
    if (r < 0) { st = mlsys_last_status() != MLSYS_OK ? mlsys_last_status() : MLSYS_ERR_ARG; goto done; }
    if (r > 0) { hi = lo * 2; break; }
    lo *= 2;
  }
  if (!o->pow2_only) {
    if (hi < 0) hi = limit + 1;
    while (hi - lo > 1) { /* lo fits, hi does not (or is past the limit) */
      int mid = lo + (hi - lo) / 2;
      r = mlsys__cloud_try_fit(fn, ud, mid, stamps);
      if (r < 0) { st = mlsys_last_status() != MLSYS_OK ? mlsys_last_status() : MLSYS_ERR_ARG; goto done; }
      if (r > 0) hi = mid;
      else lo = mid;
    }
  }
  p->bmax = lo;
  p->npts = mlsys_cloud_pwl_points(lo, p->b);
  for (k = 0; k < p->npts; k++) {
    int B = (int)p->b[k], last = k == p->npts - 1;
    double sf = 0, sb = 0, s2 = 0;
    for (it = 0; it < warm + iters; it++) {
      double fw = 0, bw = 0;
      r = fn(ud, B, &fw, &bw, last ? stamps : NULL);
      if (r != 0) {
        st = r > 0 ? mlsys_set_error(MLSYS_ERR_ARG, "cloud: profile: batch %d fitted once, then did not", B)
                   : (mlsys_last_status() != MLSYS_OK ? mlsys_last_status() : MLSYS_ERR_ARG);
        goto done;
      }
      if (!(fw >= 0) || !(bw >= 0) || !isfinite(fw + bw)) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "cloud: profile: the callback reported %g s forward, %g s backward", fw, bw);
        goto done;
      }
      if (it < warm) continue;
      sf += fw, sb += bw, s2 += (fw + bw) * (fw + bw);
      if (last)
        for (l = 0; l < L; l++) sum_st[l] += stamps[l];
    }
    p->t_fw[k] = sf / iters, p->t_bw[k] = sb / iters;
    if (last) {
      double mean = (sf + sb) / iters, var = s2 / iters - mean * mean;
      /* σ_rel < 0 means "no noise" to the simulator: a noise-free callback gets the smallest positive scale */
      p->sigma_rel = mean > 0 && var > 0 ? sqrt(var) / mean : 1e-12;
      if (p->sigma_rel >= 1) p->sigma_rel = 0.999;
      for (l = 0; l < L; l++) {
        double f = p->t_bw[k] > 0 ? sum_st[l] / iters / p->t_bw[k] : 1;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        ready_frac[l] = l && f < ready_frac[l - 1] ? ready_frac[l - 1] : f;
      }
    }
  }
  p->nlayers = L, p->ready_frac = L ? ready_frac : NULL;
done:
  mlsys_free(stamps);
  mlsys_free(sum_st);
  return st;
}

#endif /* MLSYS_CLOUD_IMPLEMENTATION_DONE */
#endif /* MLSYS_CLOUD_IMPLEMENTATION */
