/* mlsys_cloud.h — Srift: choosing cloud VMs for data-parallel training under a time limit or a budget.  MIT licence.

   Implements Srift (L. Luo, J. West, A. Krishnamurthy, L. Ceze, "Srift: Swift and Thrift Cloud-Based Distributed
   Training", arXiv 2011.14243 v1, 2020); docs/cloud.md is the guide. Section numbers (§) in the comments are those of
   the design specification the header was written from (not shipped with it). Given a DNN's compute profile on each
   instance type, a model of allreduce bandwidth and the prices, Srift predicts the iteration time of any mix of VMs
   (counts[i] VMs of type i, each at per-VM batch batches[i], Σ counts·batches = the global batch) by simulation, and
   searches the mixes for the cheapest under a time limit, the fastest under a budget, or either under both.

   CONTENTS
     1. Compute model (§3.2): the 3-segment piecewise-linear t(B) through B = 1, Bmax/3, 2Bmax/3, Bmax, forward and
        backward separately, +inf beyond Bmax; per-layer gradient-ready fractions of the backward pass. Set from times
        at those batches, or fitted (least squares on relative error) to timings at any batches.
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
     6. Files: an instance catalogue (CSV) and a DNN's profiles on several types (JSON), read and written; a profile
        fitted from measured timings and a layer list (CSV).
     7. The profiling driver (§3.2): Bmax by doubling and bisection, times at the sample batches, the straggler scale
        and the layers' gradient-ready fractions, from a callback that runs one training iteration.
     8. GBDT (§3.3): gradient-boosted regression trees with XGBoost 1.7's hist semantics (squared error and
        pseudo-Huber), our model format, and loaders for XGBoost's JSON models and text dumps that predict bit for bit
        what Booster.predict gives; the MAPE lower bound of repeated probes.
     9. The loopback probe (§7.2): a ring allreduce among forked processes over TCP on 127.0.0.1, one row of bus
        bandwidth per buffer size.
    10. The learned bandwidth model: two GBDTs split at the MTU, as the simulator's bandwidth callback.
    11. GPU parts, opt-in (compiled only with the macros below, so the header stays plain C without CUDA):
          MLSYS_CLOUD_WITH_CUDA   mlsys_cloud_cuda_timer: cudaEvents at the forward start and end, each layer's
                                  gradient and the backward end, read back as the seconds an mlsys_cloud_iter_fn
                                  reports (mlsys_cloud_cuda_timer_init/_free, _fw_start, _fw_end, _layer_ready,
                                  _bw_end, _timer_read);
          MLSYS_CLOUD_WITH_NCCL   mlsys_cloud_probe_nccl: the probe of 9 on an NCCL communicator (ncclAllReduce,
                                  float32 sum, timed with cudaEvents; n_async allreduces in flight in one NCCL
                                  group), rows as mlsys_cloud_probe_tcp's. Implies MLSYS_CLOUD_WITH_CUDA.
        The header then includes <cuda_runtime.h> (and <nccl.h>); define the macro in the file that compiles the
        implementation too, and link the CUDA runtime (nvcc does) and -lnccl. Plain C works (gcc -I<cuda>/include).
        tests/cuda/test_cloud_cuda.cu profiles the SmallCNN's CUDA training step with the timer (docs/gpu.md).
   The `mlsys cloud` command (cli/cloud.c) and docs/cloud.md are the tour.

   USAGE: in exactly one .c file
       #define MLSYS_CLOUD_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for every header)
       #include "mlsys_cloud.h"
   link: -lm, and what mlsys_common.h's implementation needs: -llpsolve55 -lcolamd -ldl -lpthread (or define
         MLSYS_NO_LPSOLVE: nothing here solves a MILP; the problem is a black box times a price, §0). POSIX (the
         probe forks and uses sockets).

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

   NOT DONE (yet): the seed's bandwidth model itself (its 40K probes of EC2 are not public: tests/data/cloud/xgb has
   models trained on synthetic probes). The GPU parts (11) are compiled and their host-side checks run here, but
   they have not yet run on a GPU.
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
#ifdef MLSYS_CLOUD_WITH_NCCL /* the NCCL probe times with cudaEvents: it needs the CUDA part too */
#ifndef MLSYS_CLOUD_WITH_CUDA
#define MLSYS_CLOUD_WITH_CUDA
#endif
#include <nccl.h>
#endif
#ifdef MLSYS_CLOUD_WITH_CUDA /* outside extern "C": in C++ the runtime header declares templates */
#include <cuda_runtime.h>
#endif

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
/* Profile from times measured at the sample batches of mlsys_cloud_pwl_points(bmax) (t_fw/t_bw[npts]); checks them.
   Sets bmax, npts, b, t_fw and t_bw only: zero the struct first (or set sigma_rel and the layers before). */
MLSYS_DEF mlsys_status mlsys_cloud_cprof_set(mlsys_cloud_cprof *p, int bmax, const double *t_fw, const double *t_bw);
MLSYS_DEF mlsys_status mlsys_cloud_cprof_check(const mlsys_cloud_cprof *p, const char *what);
/* Least-squares fit of the same curve (knots at mlsys_cloud_pwl_points(bmax)) to n timings taken at any batches in
   [1, bmax], repeats welcome, on relative error (each timing weighted by 1/(t_fw + t_bw)²): what a user with measurements at other batches, or many noisy ones, supplies. Sets
   bmax, npts, b, t_fw and t_bw like cprof_set, and sigma_rel (std/mean of fw+bw) from the timings at bmax when there
   are two or more. Each knot needs a timing on a segment next to it, or the curve is not determined there: a named
   error says where to measure. */
MLSYS_DEF mlsys_status mlsys_cloud_cprof_fit(mlsys_cloud_cprof *p, int bmax, int n, const double *batch,
                                             const double *t_fw, const double *t_bw);
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
  long sims, candidates;           /* simulations run; complete mixes the search reached (bounds cut the rest) */
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
/* A profile from measurements (mlsys cloud fit): `timings` is CSV with a header naming the columns type, batch, t_fw,
   t_bw (seconds; one row per timed iteration or per mean, any batches) and optionally bmax (per type; default its
   largest timed batch); others are ignored. Each type's curve is mlsys_cloud_cprof_fit's. `layers` (may be NULL) is
   CSV with grad_bytes and ready_frac columns, one row per trainable layer in backward completion order
   (tools/export_cloud_layers.py's layers_*.csv). Types keep their first row's order. With stats, *stats becomes an
   array (for mlsys_free) of each type's fit against its own timings: the curve's MAPE on fw+bw beside that of one
   least-squares line (Eq. 1, the seed's Table 6 comparison). */
typedef struct {
  int n;                     /* timings of the type */
  double fit_mape, line_mape;
} mlsys_cloud_fit_stat;
MLSYS_DEF mlsys_status mlsys_cloud_dnn_fit(const char *dnn, const char *timings, size_t tlen, const char *tsource,
                                           const char *layers, size_t llen, const char *lsource, mlsys_cloud_dnn *out,
                                           mlsys_cloud_fit_stat **stats);

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

/* ---------- GBDT: gradient-boosted regression trees with XGBoost 1.7 semantics (srift.md §3.3) ----------
   Trains and evaluates the bandwidth regressors. The trainer follows XGBoost's `tree_method=hist`: every feature is
   cut into <= max_bin bins (a feature with <= max_bin distinct values gets one bin per value, so the thresholds are
   data values, as in XGBoost), trees grow depth-wise to max_depth, and a split must satisfy
       gain = G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ) > 1e-6  and  gain >= γ,  H_L, H_R >= min_child_weight and > 0.
   That gain is XGBoost's "loss_chg" (JSON loss_changes, dump gain=): twice the textbook ½[...] of the spec, and γ
   (min_split_loss) is compared with it as XGBoost does, so the same γ means the same thing in both. A leaf holds
   eta · (−G/(H+λ)) (0 when H < min_child_weight). Missing values (NaN) learn a default direction: bins are scanned
   with missing rows on the right and, when the node has missing values, again with them on the left.

   Numerics follow XGBoost 1.7's CPU code so that a loaded XGBoost model predicts bit-for-bit what Booster.predict
   gives: thresholds and leaves are float32, a row goes left when x < threshold (compared in float), NaN takes the
   default branch, and the prediction is float(base_score) + leaf_1 + leaf_2 + ... accumulated in float32, tree by
   tree. The trainer keeps float32 predictions and gradients, sums histograms in double and rounds the
   hyperparameters (eta, λ, γ, min_child_weight, huber_slope) to float, as XGBoost stores them.

   Objectives: squared error (L = ½z², g = z, h = 1, z = ŷ − y) and pseudo-Huber with slope δ
   (L = δ²(√(1+(z/δ)²) − 1), g = z/√q, h = 1/(q√q), q = 1+(z/δ)²). With large labels the pseudo-Huber hessian
   vanishes far from the start, so use base_score = NaN (median of y), min_child_weight = 0 and δ in label units
   (XGBoost issues #7674, #6447; srift.md §3.3).

   Parameters: start from mlsys_cloud_gbdt_params_default() (XGBoost's defaults, base_score = median). Fields for
   which 0 means nothing also read 0 as the default (n_trees 100, max_depth 6, max_bin 256, eta 0.3, huber_slope 1,
   subsample 1), but lambda, gamma, min_child_weight and base_score are taken literally: 0 is a real value for each,
   so a zeroed struct trains with λ = 0, min_child_weight = 0 and base_score = 0.

   Model files (mlsys_cloud_gbdt_load detects which):
     - ours, written by mlsys_cloud_gbdt_save: line-oriented text, first line "mlsys-cloud-gbdt 1"; floats as %.9g
       (exact for float32), base_score as %.17g; a save/load round trip predicts bit-identically;
     - XGBoost's JSON model (Booster.save_model("m.json"), 1.x and 2.x): gbtree boosters with one output and an
       identity link (reg:squarederror, reg:pseudohubererror, reg:absoluteerror, ...); base_score comes from the file;
     - XGBoost's text dump (Booster.dump_model / get_dump without a feature map, with or without stats): it carries
       no base_score, so the caller passes it (base_score_for_dumps; NaN is an error for a dump, ignored otherwise).
       XGBoost 1.7 prints thresholds and leaves with 9 significant digits (max_digits10 of float), so a dump
       reproduces the float32 model exactly; its num_feature is the largest f<index> + 1.
   Categorical splits, multi-output models, dart boosters and non-identity links (logistic, exp) are refused with
   MLSYS_ERR_UNSUPPORTED. A tree must be a tree: every child index in range, no node reached twice (a cycle or a
   shared child is MLSYS_ERR_PARSE); nodes unreachable from the root are dropped (XGBoost's deleted nodes). */
typedef enum {
  MLSYS_CLOUD_OBJ_SQUARED = 0,       /* reg:squarederror */
  MLSYS_CLOUD_OBJ_PSEUDO_HUBER = 1,  /* reg:pseudohubererror */
  MLSYS_CLOUD_OBJ_OTHER = 2          /* a loaded model with another identity-link objective (not trainable here) */
} mlsys_cloud_obj;

typedef struct {
  mlsys_cloud_obj obj;
  double huber_slope;          /* pseudo-Huber δ, in label units; 0 -> 1 (XGBoost's default) */
  int n_trees;                 /* boosting rounds; 0 -> 100 */
  int max_depth;               /* 0 -> 6; at most 30 */
  int max_bin;                 /* bins per feature, 2..65535; 0 -> 256 */
  double eta;                  /* learning rate; 0 -> 0.3 */
  double lambda;               /* L2 regularisation of leaf weights (literal; default 1) */
  double gamma;                /* min_split_loss (literal; default 0) */
  double min_child_weight;     /* minimum hessian sum in a child (literal; default 1) */
  double subsample;            /* row fraction per tree, (0, 1]; 0 -> 1 (no sampling; then seed is unused) */
  double base_score;           /* initial prediction; NaN -> median(y) (literal otherwise; XGBoost 1.7 uses 0.5) */
  uint64_t seed;               /* row sampling */
} mlsys_cloud_gbdt_params;

typedef struct mlsys_cloud_gbdt mlsys_cloud_gbdt;   /* opaque forest */

/* One node, for inspection and tests. Nodes are numbered breadth-first from the root 0; children of a split are
   consecutive (right = left + 1). gain (XGBoost's loss_chg) and cover (hessian sum) are NaN when the source lacks
   them (a dump without stats); value is the threshold of a split or the (eta-scaled) output of a leaf. */
typedef struct {
  int is_leaf;
  int feature;                 /* split feature, -1 for a leaf */
  float value;                 /* split: go left when x < value; leaf: the output */
  int left, right;             /* children within the tree, -1 for a leaf */
  int default_left;            /* where NaN goes */
  double gain, cover;
} mlsys_cloud_gbdt_node_info;

MLSYS_DEF void mlsys_cloud_gbdt_params_default(mlsys_cloud_gbdt_params *p);
/* X is row-major [nrow][ncol] (NaN = missing; ±inf is an error), y[nrow] finite with |y| <= 1e30. The model is
   deterministic: the same data, parameters and seed give the same model bytes on every machine (one thread).
   A leaf weight or prediction that overflows float32 (tiny hessians with λ = 0) fails with MLSYS_ERR_ARG. A split
   threshold may be ±inf (the all-present-values-left split of a feature whose maximum is near FLT_MAX). */
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_train(const float *X, const float *y, int nrow, int ncol,
                                              const mlsys_cloud_gbdt_params *p, mlsys_cloud_gbdt **out);
/* x[ncol] with ncol >= mlsys_cloud_gbdt_nfeatures(m) (unchecked: a tight loop). NaN = missing. */
MLSYS_DEF double mlsys_cloud_gbdt_predict(const mlsys_cloud_gbdt *m, const float *x);
/* Checked batch prediction: MLSYS_ERR_ARG when a split uses a feature >= ncol. */
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_predict_rows(const mlsys_cloud_gbdt *m, const float *X, int nrow, int ncol,
                                                     double *out);
MLSYS_DEF int mlsys_cloud_gbdt_nfeatures(const mlsys_cloud_gbdt *m);   /* declared feature count */
MLSYS_DEF int mlsys_cloud_gbdt_ntrees(const mlsys_cloud_gbdt *m);
MLSYS_DEF double mlsys_cloud_gbdt_base_score(const mlsys_cloud_gbdt *m);
MLSYS_DEF mlsys_cloud_obj mlsys_cloud_gbdt_objective(const mlsys_cloud_gbdt *m);
MLSYS_DEF int mlsys_cloud_gbdt_tree_nodes(const mlsys_cloud_gbdt *m, int tree);   /* -1 if no such tree */
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_node(const mlsys_cloud_gbdt *m, int tree, int node,
                                             mlsys_cloud_gbdt_node_info *out);
/* The objective at one point: loss, dL/dŷ and d²L/dŷ² (any output pointer may be NULL), in double. */
MLSYS_DEF void mlsys_cloud_gbdt_loss(mlsys_cloud_obj obj, double huber_slope, double pred, double y, double *loss,
                                     double *grad, double *hess);
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_save(const mlsys_cloud_gbdt *m, FILE *f);
/* text[len] need not be NUL-terminated; source_name prefixes messages ("name:line: ..."). */
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_load(const char *text, size_t len, const char *source_name,
                                             double base_score_for_dumps, mlsys_cloud_gbdt **out);
MLSYS_DEF mlsys_status mlsys_cloud_gbdt_load_file(const char *path, double base_score_for_dumps,
                                                  mlsys_cloud_gbdt **out);
MLSYS_DEF void mlsys_cloud_gbdt_free(mlsys_cloud_gbdt *m);

/* Irreducible-error bound of srift.md §3.3, as a fraction (0.096 = 9.6%): rows with identical feature vectors
   (compared value by value with ==, NaN equal to NaN) form a group; a group's MAPE-optimal constant is the weighted median of its labels with
   weights 1/y; the result is mean over all rows of |c_G − y| / y. Labels must be finite and > 0; NaN (with the
   reason in mlsys_last_error()) for bad input or nrow < 1. */
MLSYS_DEF double mlsys_cloud_mape_lower_bound(const float *X, const float *y, int nrow, int ncol);

/* ---- loopback bandwidth probe (§3.3, §7.2) --------------------------------------------------------------------
   A CPU analogue of the NCCL probe: nranks forked processes run the ring allreduce (reduce-scatter then allgather,
   float32 sum) over TCP on 127.0.0.1 for each power-of-two buffer size in [min_bytes, max_bytes], and rank 0 times
   it. Traffic goes to 127.0.0.1 only. The rows are real bus bandwidths, of this machine's loopback and memory. */
typedef struct {
  double bytes;      /* buffer size s per rank */
  int n;             /* world size */
  int n_async;       /* concurrent allreduces in flight (1 in the loopback probe; the NCCL probe's n_async) */
  double t_s;        /* mean seconds per allreduce over the timed iterations (n_async > 1: per group of n_async
                        concurrent allreduces of s bytes each, that is each one's duration while they share) */
  double busbw;      /* bytes/s: 2 s (n-1) / (n t), of one allreduce; 0 for n = 1 (nothing crosses a link) */
  double algbw;      /* bytes/s: s / t */
} mlsys_cloud_probe_row;

typedef struct {
  int nranks;                    /* world size, 2..64 */
  size_t min_bytes, max_bytes;   /* >= 4 (float32) and <= 1 GiB, rounded up to powers of two; defaults 4 B, 64 MiB */
  int warmup, iters;             /* per size: untimed and timed allreduces (>= 0, >= 1); defaults 2, 5 */
  double timeout_s;              /* the whole probe, > 0; default 120 s: then the children are killed, ERR_TIMEOUT */
  int verify;                    /* check every element after every allreduce (a mismatch is MLSYS_ERR_IO) */
  int n_async;                   /* allreduces in flight at once, 0 or 1..64 (0 → 1); the loopback probe runs one
                                    at a time (> 1 is MLSYS_ERR_ARG there); mlsys_cloud_probe_nccl groups them */
} mlsys_cloud_probe_opts;

/* The defaults above, with nranks = 2, verify = 0 and n_async = 1. */
MLSYS_DEF void mlsys_cloud_probe_opts_default(mlsys_cloud_probe_opts *o);
/* Number of rows a probe with these sizes gives (log2(max) - log2(min) + 1 after rounding up); 0 if they are invalid. */
MLSYS_DEF int mlsys_cloud_probe_nsizes(size_t min_bytes, size_t max_bytes);
/* Runs the probe: rows[] gets one row per size, ascending (*nrows of them; at most max_rows, else MLSYS_ERR_ARG before
   anything runs). Forks nranks processes (POSIX; the caller's SIGCHLD must not be SIG_IGN, and the children are
   reaped by pid, so the caller's other children are left alone). Every child is reaped before this returns, on
   success, error and timeout alike. Errors: MLSYS_ERR_ARG (options), MLSYS_ERR_TOO_BIG (max_bytes over 1 GiB),
   MLSYS_ERR_NOMEM, MLSYS_ERR_IO (sockets, fork, a rank that failed or a verify mismatch: size, rank, index and
   values), MLSYS_ERR_TIMEOUT (timeout_s passed). */
MLSYS_DEF mlsys_status mlsys_cloud_probe_tcp(const mlsys_cloud_probe_opts *o, mlsys_cloud_probe_row *rows,
                                             int max_rows, int *nrows);
/* CSV: the header "bytes,n,n_async,t_s,busbw,algbw", then one line per row (%.17g: exact round trip). */
MLSYS_DEF mlsys_status mlsys_cloud_probe_write_csv(const mlsys_cloud_probe_row *rows, int n, FILE *f);


/* ---- 10. the learned bandwidth model (§3.3): two GBDTs split at the MTU -------------------------------------------
   Features, in this order (float32): type code (the index of the instance's name in type_name; NaN when absent:
   the trees' default branch), cpu cores, memory GiB, rated Gbps, log2(buffer bytes, a power of two), world size n,
   allreduces in flight; the label is bus bandwidth in Gbps (tests/data/cloud/xgb has XGBoost-trained examples).
   Buffers up to the MTU go to `small` (pseudo-Huber in the seed), larger ones to `large` (squared error). */
#define MLSYS_CLOUD_BW_NFEAT 7
typedef struct {
  mlsys_cloud_gbdt *small, *large; /* either may be NULL: the other one serves all sizes */
  double mtu;                      /* bytes; 0 → MLSYS_CLOUD_MTU */
  int ntypes;                      /* the type-code dictionary */
  const char (*type_name)[32];
} mlsys_cloud_bwmodel;
MLSYS_DEF void mlsys_cloud_bw_features(const mlsys_cloud_bwmodel *m, const mlsys_cloud_itype *it, double bytes, int n,
                                       int c, float x[MLSYS_CLOUD_BW_NFEAT]);
/* An mlsys_cloud_bw_fn with ud = the model: bytes/s. A tree ensemble can predict zero or less for a small buffer
   (the seed's reason for two models); such a prediction is raised to 1 Mbit/s, so the simulator never divides by it. */
MLSYS_DEF double mlsys_cloud_bw_gbdt(void *ud, const mlsys_cloud_itype *it, double bytes, int n, int c);

/* ---- 11. GPU parts (opt-in: MLSYS_CLOUD_WITH_CUDA, MLSYS_CLOUD_WITH_NCCL) --------------------------------------- */
#ifdef MLSYS_CLOUD_WITH_CUDA
/* Times one training iteration on the GPU for an mlsys_cloud_iter_fn. Host clocks around asynchronous kernel
   launches measure the launches, not the work, so the callback records events on the stream its kernels run on,
   in this order, once per iteration:
       _fw_start; forward kernels and the loss; _fw_end; backward kernels, and after the kernels that write layer
       l's gradient _layer_ready(l) for l = 0, 1, ... in backward order (the profile's layer order); _bw_end
   and then _timer_read waits for the last event and gives t_fw (fw_start → fw_end), t_bw (fw_end → bw_end) and
   layer_done_s[l] (fw_end → layer l's event): exactly what the callback reports. Events on one stream complete in
   order, so 0 ≤ layer_done_s[0] ≤ ... ≤ t_bw. A call out of this order (a layer skipped or out of order, read
   before _bw_end) is MLSYS_ERR_ARG, found before any CUDA call. Resolution: cudaEventElapsedTime's, about 0.5 µs.
   "Does not fit": when a cudaMalloc of the step fails with cudaErrorMemoryAllocation, clear it (cudaGetLastError)
   and return 1 from the callback. */
typedef struct {
  cudaStream_t stream;
  int nlayers;
  cudaEvent_t fw_start, fw_end, bw_end;
  cudaEvent_t *layer;    /* [nlayers] */
  int state, next;       /* internal: 0 not initialised, 1 idle, 2 forward, 3 backward, 4 done; next layer */
} mlsys_cloud_cuda_timer;
/* Creates the events (nlayers ≥ 0). On failure nothing is left allocated (MLSYS_ERR_CUDA names the call). */
MLSYS_DEF mlsys_status mlsys_cloud_cuda_timer_init(mlsys_cloud_cuda_timer *t, int nlayers, cudaStream_t stream);
MLSYS_DEF void mlsys_cloud_cuda_timer_free(mlsys_cloud_cuda_timer *t); /* a zeroed timer too; leaves it zeroed */
MLSYS_DEF mlsys_status mlsys_cloud_cuda_fw_start(mlsys_cloud_cuda_timer *t);   /* starts an iteration, any time */
MLSYS_DEF mlsys_status mlsys_cloud_cuda_fw_end(mlsys_cloud_cuda_timer *t);
MLSYS_DEF mlsys_status mlsys_cloud_cuda_layer_ready(mlsys_cloud_cuda_timer *t, int layer);
MLSYS_DEF mlsys_status mlsys_cloud_cuda_bw_end(mlsys_cloud_cuda_timer *t);     /* after every layer's event */
/* Waits for the iteration (cudaEventSynchronize) and converts to seconds; layer_done_s[nlayers] may be NULL. */
MLSYS_DEF mlsys_status mlsys_cloud_cuda_timer_read(mlsys_cloud_cuda_timer *t, double *t_fw, double *t_bw,
                                                   double *layer_done_s);
#endif /* MLSYS_CLOUD_WITH_CUDA */

#ifdef MLSYS_CLOUD_WITH_NCCL
/* The bandwidth probe on an NCCL communicator: for each power-of-two size in [min_bytes, max_bytes], warmup then
   iters steps of ncclAllReduce (float32 sum, out of place: the input stays fixed, so verify knows every result),
   timed with cudaEvents on `stream`; a step is n_async allreduces on separate output buffers inside one
   ncclGroupStart/End, so they run concurrently (n_async = 1: a lone call). Rows as mlsys_cloud_probe_tcp's: n is
   the communicator's size (o->nranks is not read), t_s the mean seconds per step, busbw = 2 s (n−1)/(n t_s) by
   nccl-tests' convention (0 on one rank, where nothing crosses a link: the row and its time are kept).
   verify checks, after each size's last step, every element of every output against the exact sum.
   Collective: every rank of comm calls it with the same options (one thread or process per rank, as NCCL requires
   for a blocking communicator); each rank's rows are its own timings. Buffers come from cudaMallocAsync on the
   stream ((1 + n_async) · max_bytes of device memory) and go back with cudaFreeAsync (without memory pools:
   cudaMalloc, and after a timeout they are left allocated), so the call never blocks on work it cannot see
   finish: it polls its events and ncclCommGetAsyncError against timeout_s (the whole probe),
   and on MLSYS_ERR_TIMEOUT the communicator may still have the probe's work in flight (ncclCommAbort it). A
   blocking communicator can still block inside an NCCL call (a peer that never arrives); a nonblocking one
   (ncclConfig_t.blocking = 0: its ncclInProgress is waited out here) keeps every wait under timeout_s.
   Errors: option errors as the TCP probe's, found before any CUDA or NCCL call (then a NULL comm, MLSYS_ERR_ARG);
   MLSYS_ERR_CUDA for a failed CUDA or NCCL call (named, with NCCL's last error), MLSYS_ERR_NOMEM for the host
   staging buffer, MLSYS_ERR_IO for a verify mismatch, MLSYS_ERR_TIMEOUT. Never aborts. */
MLSYS_DEF mlsys_status mlsys_cloud_probe_nccl(ncclComm_t comm, cudaStream_t stream, const mlsys_cloud_probe_opts *o,
                                              mlsys_cloud_probe_row *rows, int max_rows, int *nrows);
#endif /* MLSYS_CLOUD_WITH_NCCL */

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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The curve is y(B) = Σ_k y_k φ_k(B) with hat functions φ_k on the knots, so the least-squares knot values solve the
   npts × npts normal equations (A = Σ c·φφᵀ, tridiagonal and positive definite when every knot is covered), with
   each timing weighted by c = 1/(t_fw + t_bw)²: the fit minimises relative error, the error MAPE measures. */
MLSYS_DEF mlsys_status mlsys_cloud_cprof_fit(mlsys_cloud_cprof *p, int bmax, int n, const double *batch,
                                             const double *t_fw, const double *t_bw) {
  double x[4], A[4][4], r[2][4], diag[4], piv, sum = 0, sq = 0;
  int m, i, j, k, nb = 0;
  if (bmax < 1) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: bmax %d must be at least 1", bmax);
  if (n < 1 || !batch || !t_fw || !t_bw) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: no timings");
  m = mlsys_cloud_pwl_points(bmax, x);
  memset(A, 0, sizeof A);
  memset(r, 0, sizeof r);
  for (i = 0; i < n; i++) {
    double B = batch[i], w, y, c;
    if (!(B >= 1 && B <= bmax))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: timing %d is at batch %g, outside [1, bmax %d]", i, B, bmax);
    if (!(t_fw[i] >= 0 && t_fw[i] < 1e9) || !(t_bw[i] >= 0 && t_bw[i] < 1e9))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: timing %d (batch %g) is not a finite non-negative time", i, B);
    y = t_fw[i] + t_bw[i];
    c = 1 / (y * y + 1e-12); /* relative error: timing noise grows with the time (σ_rel), so each counts by 1/y² */
    if (m == 1) k = 0, w = 1;
    else {
      for (k = 0; k + 2 < m && B >= x[k + 1]; k++) {}
      w = (x[k + 1] - B) / (x[k + 1] - x[k]); /* φ_k(B); φ_{k+1}(B) = 1 − w */
    }
    A[k][k] += c * w * w, r[0][k] += c * w * t_fw[i], r[1][k] += c * w * t_bw[i];
    if (m > 1) {
      A[k][k + 1] += c * w * (1 - w), A[k + 1][k] += c * w * (1 - w), A[k + 1][k + 1] += c * (1 - w) * (1 - w);
      r[0][k + 1] += c * (1 - w) * t_fw[i], r[1][k + 1] += c * (1 - w) * t_bw[i];
    }
    if (B == bmax) sum += t_fw[i] + t_bw[i], sq += (t_fw[i] + t_bw[i]) * (t_fw[i] + t_bw[i]), nb++;
  }
  /* Gaussian elimination without pivoting (A is symmetric positive semi-definite); a pivot that vanishes next to
     its own diagonal means no timing pins that knot down */
  for (k = 0; k < m; k++) diag[k] = A[k][k];
  for (k = 0; k < m; k++) {
    piv = A[k][k];
    if (!(piv > 1e-9 * diag[k]) || !(piv > 1e-12))
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: the timings do not determine the time at batch %g: time at "
                             "least one batch between %g and %g", x[k], k ? x[k - 1] : x[0], k + 1 < m ? x[k + 1] : x[k]);
    for (i = k + 1; i < m; i++) {
      double f = A[i][k] / piv;
      if (f == 0) continue;
      for (j = k; j < m; j++) A[i][j] -= f * A[k][j];
      r[0][i] -= f * r[0][k], r[1][i] -= f * r[1][k];
    }
  }
  for (k = m - 1; k >= 0; k--) {
    for (j = k + 1; j < m; j++) r[0][k] -= A[k][j] * r[0][j], r[1][k] -= A[k][j] * r[1][j];
    r[0][k] /= A[k][k], r[1][k] /= A[k][k];
  }
  for (k = 0; k < m; k++)
    if (r[0][k] < 0 || r[1][k] < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: the best curve goes negative at batch %g (%g s forward, %g s "
                             "backward): the timings are too noisy or too few near it", x[k], r[0][k], r[1][k]);
  p->bmax = bmax, p->npts = m;
  for (k = 0; k < m; k++) p->b[k] = x[k], p->t_fw[k] = r[0][k], p->t_bw[k] = r[1][k];
  if (nb >= 2 && sum > 0) {
    double mean = sum / nb, var = (sq - nb * mean * mean) / (nb - 1);
    p->sigma_rel = var > 0 ? sqrt(var) / mean : 1e-12; /* 0 would mean "the default", not "none measured" */
    if (p->sigma_rel >= 0.999) p->sigma_rel = 0.999;
  }
  return mlsys_cloud_cprof_check(p, "fit");
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
  long hold[MLSYS_CLOUD_MAX_TYPES + 1]; /* hold[q]: the most samples set[q..] can take (caps × Bmax) */
  long vms[MLSYS_CLOUD_MAX_TYPES + 1];  /* vms[q]: the most VMs of set[q..] */
  double minp[MLSYS_CLOUD_MAX_TYPES + 1]; /* minp[q]: the price of one VM of each of set[q..] */
  double smu[MLSYS_CLOUD_MAX_TYPES][32]; /* smu[t][k]: the least fw+bw of type t at a power-of-two batch ≥ 2^k */
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
/* Whether no completion of a partial mix (its slowest mean compute so far lb_mu, its price so far) can meet the
   limits and beat the incumbent: adding types only raises both, so the bound holds for every completion. */
static int mlsys__cloud_hopeless(const mlsys__cloud_search *S, double lb_mu, double price) {
  const mlsys_cloud_problem *p = S->p;
  double t = lb_mu * (double)p->iters, cost = t * price / 3600;
  if (p->time_limit_s > 0 && t > p->time_limit_s) return 1;
  if (p->budget > 0 && cost > p->budget) return 1;
  return S->have && (p->goal == MLSYS_CLOUD_MIN_TIME ? t : cost) > S->best_obj * (1 + 1e-12);
}

/* assign batches and counts to set[pos..]; rem samples are left to place; lb_mu and price are those of set[0..pos) */
static void mlsys__cloud_assign(mlsys__cloud_search *S, int pos, int rem, double lb_mu, double price) {
  int i = S->set[pos], last = pos == S->nset - 1, b, c, cap = S->caps[i];
  if (last && S->lim_last > 0 && S->lim_last < cap) cap = S->lim_last;
  for (b = 1; b <= S->bmax[i] && b <= rem && !S->stop; b *= 2) {
    double mu = S->s->prof ? mlsys_cloud_cprof_fw(&S->s->prof[i], b) + mlsys_cloud_cprof_bw(&S->s->prof[i], b) : 0;
    double lb = mu > lb_mu ? mu : lb_mu;
    S->batches[i] = b;
    if (last) {
      if (rem % b || rem / b > cap) continue;
      S->counts[i] = rem / b;
      mlsys__cloud_try(S);
    } else {
      for (c = 1; c <= cap && c * b < rem && !S->stop; c++) {
        long left = rem - c * b;
        if (left < S->nset - pos - 1) break;    /* the types after this one need a sample each */
        if (left > S->hold[pos + 1]) continue; /* they cannot take the rest: more VMs here might */
        if (S->s->prof) {
          /* some VM of the types after this one gets at least left / (their VMs) samples: a bound on its time */
          int q, k = 0;
          double rest = INFINITY, per = (double)left / (double)S->vms[pos + 1];
          while (k < 31 && (double)(1L << k) < per) k++;
          for (q = pos + 1; q < S->nset; q++)
            if (S->smu[S->set[q]][k] < rest) rest = S->smu[S->set[q]][k];
          if (mlsys__cloud_hopeless(S, rest > lb ? rest : lb, price + c * S->s->types[i].price_per_hour + S->minp[pos + 1]))
            continue; /* with more VMs here the rest gets fewer samples: not a break */
        }
        /* more VMs of this type only add price at the same bound: once hopeless, the rest are too */
        if (mlsys__cloud_hopeless(S, lb, price + c * S->s->types[i].price_per_hour)) break;
        S->counts[i] = c;
        mlsys__cloud_assign(S, pos + 1, rem - c * b, lb, price + c * S->s->types[i].price_per_hour);
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
    int q;
    if (S->must_last && S->set[k - 1] != order[m - 1]) return;
    S->hold[k] = 0, S->vms[k] = 0, S->minp[k] = 0;
    for (q = k - 1; q >= 0; q--) {
      int t = S->set[q], cap = q == k - 1 && S->lim_last > 0 && S->lim_last < S->caps[t] ? S->lim_last : S->caps[t];
      S->hold[q] = S->hold[q + 1] + (long)cap * S->bmax[t];
      S->vms[q] = S->vms[q + 1] + cap;
      S->minp[q] = S->minp[q + 1] + S->s->types[t].price_per_hour;
    }
    if (S->hold[0] < S->p->global_batch) return; /* this subset cannot hold the batch */
    mlsys__cloud_assign(S, 0, S->p->global_batch, 0, 0);
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
    int e;
    S.caps[i] = mlsys__cloud_cap(s, p, i);
    S.bmax[i] = mlsys__cloud_bmax(s, i, p->global_batch);
    S.smu[i][31] = INFINITY;
    for (e = 30; e >= 0; e--) { /* suffix minimum over the power-of-two batches the search may give type i */
      double mu = INFINITY;
      if (s->prof && e < 30 && (1L << e) <= S.bmax[i])
        mu = mlsys_cloud_cprof_fw(&s->prof[i], 1 << e) + mlsys_cloud_cprof_bw(&s->prof[i], 1 << e);
      S.smu[i][e] = mu < S.smu[i][e + 1] ? mu : S.smu[i][e + 1];
    }
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

/* A CSV table's wanted columns as text, row by row: the header names the columns (any order, others ignored), each
   row gets its wanted fields in want[] order ("" when the column is absent) and its line number. Field text longer
   than 63 bytes is an error (no wanted field is that long). Used by the measured-profile reader. */
typedef mlsys_status (*mlsys__cloud_row_fn)(void *ud, int line, char (*f)[64]);
static mlsys_status mlsys__cloud_csv_table(const char *text, size_t len, const char *source, int nwant,
                                           const char *const *want, int nreq, mlsys__cloud_row_fn row, void *ud) {
  int col[64], ncol = 0, i, line = 1, rows = 0;
  const char *p = text, *end = text + len;
  char f[128], got[8][64];
  mlsys_status st;
  for (;;) { /* the header */
    int k = -1, more = mlsys__cloud_csv_field(&p, end, f, sizeof f);
    for (i = 0; i < nwant; i++)
      if (!strcmp(f, want[i])) k = i;
    if (ncol == 64) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: more than 64 columns", source);
    col[ncol++] = k;
    if (!more) break;
  }
  for (i = 0; i < nreq; i++) {
    int c;
    for (c = 0; c < ncol && col[c] != i; c++) {}
    if (c == ncol) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:1: no '%s' column in the header", source, want[i]);
  }
  while (p < end) {
    int c, more;
    p++; /* the newline */
    line++;
    if (p >= end || *p == '\n' || *p == '\r') continue;
    memset(got, 0, sizeof got);
    for (c = 0, more = 1; c < ncol; c++) {
      if (!more) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %d fields, the header has %d", source, line, c, ncol);
      more = mlsys__cloud_csv_field(&p, end, f, sizeof f);
      if (col[c] < 0) continue;
      if (strlen(f) >= 63) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s \"%.40s...\" is too long", source, line, want[col[c]], f);
      memcpy(got[col[c]], f, strlen(f) + 1);
    }
    if (more) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: more fields than the header's %d", source, line, ncol);
    if (p < end && *p == '\r') p++; /* CRLF */
    if ((st = row(ud, line, got)) != MLSYS_OK) return st;
    rows++;
  }
  if (!rows) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: no rows after the header", source);
  return MLSYS_OK;
}

typedef struct {
  const char *source;
  int n, cap, ntypes;
  char (*name)[32];     /* [ntypes] in first-row order */
  int *bmax;            /* [ntypes]: the bmax column (0: none given) */
  int *type;            /* [n] row → type */
  double *b, *fw, *bw;  /* [n] */
} mlsys__cloud_timings;

static mlsys_status mlsys__cloud_timing_row(void *ud, int line, char (*f)[64]) {
  mlsys__cloud_timings *T = (mlsys__cloud_timings *)ud;
  double v[4];
  int i, t;
  if (!f[0][0]) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: empty type", T->source, line);
  if (strlen(f[0]) >= 32) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: type \"%s\" is longer than 31 bytes", T->source, line, f[0]);
  for (i = 1; i < 5; i++) {
    static const char *const nm[5] = {"type", "batch", "t_fw", "t_bw", "bmax"};
    if (i == 4 && !f[4][0]) { v[3] = 0; continue; }
    if (!mlsys__cloud_num(f[i], &v[i - 1]) || v[i - 1] < 0 || v[i - 1] >= 1e9)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s \"%s\" is not a number in [0, 1e9)", T->source, line, nm[i], f[i]);
    if ((i == 1 || i == 4) && (v[i - 1] != floor(v[i - 1]) || v[i - 1] < 1 || v[i - 1] > 1e8))
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s \"%s\" is not a whole number in 1..1e8", T->source, line, nm[i], f[i]);
  }
  for (t = 0; t < T->ntypes && strcmp(T->name[t], f[0]); t++) {}
  if (t == T->ntypes) {
    void *a, *b;
    if (T->ntypes == 4096) return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: more than 4096 types", T->source, line);
    a = mlsys_realloc_array(T->name, (size_t)t + 1, sizeof *T->name);
    if (a) T->name = (char(*)[32])a;
    b = mlsys_realloc_array(T->bmax, (size_t)t + 1, sizeof *T->bmax);
    if (b) T->bmax = (int *)b;
    if (!a || !b) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", T->source);
    memcpy(T->name[t], f[0], strlen(f[0]) + 1);
    T->bmax[t] = (int)v[3];
    T->ntypes++;
  } else if ((int)v[3] != T->bmax[t]) {
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s's bmax %g differs from its first row's %d", T->source, line,
                           f[0], v[3], T->bmax[t]);
  }
  if (T->n == T->cap) {
    int nc = T->cap ? 2 * T->cap : 256;
    void *a, *b, *c, *d;
    if (T->cap >= 10000000) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: more than 10000000 timings", T->source);
    a = mlsys_realloc_array(T->type, (size_t)nc, sizeof *T->type);
    if (a) T->type = (int *)a;
    b = mlsys_realloc_array(T->b, (size_t)nc, sizeof *T->b);
    if (b) T->b = (double *)b;
    c = mlsys_realloc_array(T->fw, (size_t)nc, sizeof *T->fw);
    if (c) T->fw = (double *)c;
    d = mlsys_realloc_array(T->bw, (size_t)nc, sizeof *T->bw);
    if (d) T->bw = (double *)d;
    if (!a || !b || !c || !d) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", T->source);
    T->cap = nc;
  }
  T->type[T->n] = t, T->b[T->n] = v[0], T->fw[T->n] = v[1], T->bw[T->n] = v[2];
  T->n++;
  return MLSYS_OK;
}

typedef struct {
  const char *source;
  int n, cap;
  double *gb, *rf;
} mlsys__cloud_layers;

static mlsys_status mlsys__cloud_layer_row(void *ud, int line, char (*f)[64]) {
  mlsys__cloud_layers *L = (mlsys__cloud_layers *)ud;
  double g, r;
  if (!mlsys__cloud_num(f[0], &g) || g < 0 || g > 1e15)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: grad_bytes \"%s\" is not a number in [0, 1e15]", L->source, line, f[0]);
  if (!mlsys__cloud_num(f[1], &r) || r < 0 || r > 1)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: ready_frac \"%s\" is not a number in [0, 1]", L->source, line, f[1]);
  if (L->n && r < L->rf[L->n - 1])
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: ready_frac %g goes backwards (layers are in backward order)",
                           L->source, line, r);
  if (L->n == L->cap) {
    int nc = L->cap ? 2 * L->cap : 256;
    void *a, *b;
    if (L->cap >= 1000000) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: more than 1000000 layers", L->source);
    a = mlsys_realloc_array(L->gb, (size_t)nc, sizeof *L->gb);
    if (a) L->gb = (double *)a;
    b = mlsys_realloc_array(L->rf, (size_t)nc, sizeof *L->rf);
    if (b) L->rf = (double *)b;
    if (!a || !b) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", L->source);
    L->cap = nc;
  }
  L->gb[L->n] = g, L->rf[L->n] = r, L->n++;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_dnn_fit(const char *dnn, const char *timings, size_t tlen, const char *tsource,
                                           const char *layers, size_t llen, const char *lsource, mlsys_cloud_dnn *out,
                                           mlsys_cloud_fit_stat **stats) {
  static const char *const tcols[5] = {"type", "batch", "t_fw", "t_bw", "bmax"};
  static const char *const lcols[2] = {"grad_bytes", "ready_frac"};
  mlsys__cloud_timings T;
  mlsys__cloud_layers L;
  mlsys_status st;
  double *b = NULL, *fw = NULL, *bw = NULL;
  int t, i;
  mlsys_cloud_fit_stat *S = NULL;
  if (stats) *stats = NULL;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: no output");
  memset(out, 0, sizeof *out);
  memset(&T, 0, sizeof T);
  memset(&L, 0, sizeof L);
  if (!timings) return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: no timings");
  if (!dnn || !dnn[0] || strlen(dnn) >= sizeof out->dnn)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud: fit: the DNN's name must be 1..%d bytes", (int)sizeof out->dnn - 1);
  T.source = tsource ? tsource : "timings";
  L.source = lsource ? lsource : "layers";
  if ((st = mlsys__cloud_csv_table(timings, tlen, T.source, 5, tcols, 4, mlsys__cloud_timing_row, &T)) != MLSYS_OK) goto done;
  if (layers && (st = mlsys__cloud_csv_table(layers, llen, L.source, 2, lcols, 2, mlsys__cloud_layer_row, &L)) != MLSYS_OK)
    goto done;
  snprintf(out->dnn, sizeof out->dnn, "%s", dnn);
  out->type_name = (char(*)[32])mlsys_calloc((size_t)T.ntypes, 32);
  out->prof = (mlsys_cloud_cprof *)mlsys_calloc((size_t)T.ntypes, sizeof *out->prof);
  b = (double *)mlsys_alloc((size_t)T.n, sizeof *b);
  fw = (double *)mlsys_alloc((size_t)T.n, sizeof *fw);
  bw = (double *)mlsys_alloc((size_t)T.n, sizeof *bw);
  if (stats) S = (mlsys_cloud_fit_stat *)mlsys_calloc((size_t)T.ntypes, sizeof *S);
  if (!out->type_name || !out->prof || !b || !fw || !bw || (stats && !S)) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", T.source);
    goto done;
  }
  out->grad_bytes = L.gb, out->ready_frac = L.rf, out->nlayers = L.n;
  L.gb = L.rf = NULL;
  for (t = 0; t < T.ntypes; t++) {
    mlsys_cloud_cprof *p = &out->prof[t];
    int n = 0, bmax = T.bmax[t];
    for (i = 0; i < T.n; i++)
      if (T.type[i] == t) {
        b[n] = T.b[i], fw[n] = T.fw[i], bw[n] = T.bw[i], n++;
        if (!T.bmax[t] && T.b[i] > bmax) bmax = (int)T.b[i];
      }
    memcpy(out->type_name[t], T.name[t], 32);
    p->nlayers = out->nlayers, p->grad_bytes = out->grad_bytes, p->ready_frac = out->ready_frac;
    if ((st = mlsys_cloud_cprof_fit(p, bmax, n, b, fw, bw)) != MLSYS_OK) {
      mlsys_prefix_error("%s: %s", T.source, T.name[t]);
      goto done;
    }
    if (S) { /* the errors on fw+bw, the curve's and one least-squares line's */
      double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, den, lb, la, ep = 0, el = 0;
      int m = 0;
      for (i = 0; i < n; i++) { /* the line by the same relative least squares as the curve */
        double y = fw[i] + bw[i], c = 1 / (y * y + 1e-12);
        sw += c, sx += c * b[i], sy += c * y, sxx += c * b[i] * b[i], sxy += c * b[i] * y;
      }
      den = sw * sxx - sx * sx;
      lb = den > 0 ? (sw * sxy - sx * sy) / den : 0, la = (sy - lb * sx) / sw;
      for (i = 0; i < n; i++) {
        double y = fw[i] + bw[i];
        if (!(y > 0)) continue;
        ep += fabs(mlsys_cloud_pwl_eval(p->b, p->t_fw, p->npts, b[i]) + mlsys_cloud_pwl_eval(p->b, p->t_bw, p->npts, b[i]) - y) / y;
        el += fabs(la + lb * b[i] - y) / y;
        m++;
      }
      S[t].n = n, S[t].fit_mape = m ? ep / m : 0, S[t].line_mape = m ? el / m : 0;
    }
  }
  out->ntypes = T.ntypes;
  if (stats) *stats = S, S = NULL;
done:
  mlsys_free(S);
  mlsys_free(T.name), mlsys_free(T.bmax), mlsys_free(T.type), mlsys_free(T.b), mlsys_free(T.fw), mlsys_free(T.bw);
  mlsys_free(L.gb), mlsys_free(L.rf);
  mlsys_free(b), mlsys_free(fw), mlsys_free(bw);
  if (st != MLSYS_OK) mlsys_cloud_dnn_free(out);
  return st;
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


/* ---------- GBDT implementation ---------- */

/* A node of the flat forest: 12 bytes so that prediction walks one small array. left < 0 marks a leaf; the right
   child is always left + 1 (trees are stored breadth-first). info = feature | default_left << 31. */
typedef struct {
  float value;
  int32_t left;
  uint32_t info;
} mlsys__cloud_node;

#define MLSYS__CLOUD_FEAT_MASK 0x7fffffffu
#define MLSYS__CLOUD_MAX_NODES (1 << 28)      /* whole forest; keeps int arithmetic far from overflow */
#define MLSYS__CLOUD_MAX_FEATURES (1 << 24)   /* a larger feature index in a model file is refused */

struct mlsys_cloud_gbdt {
  int ntrees, nfeat;
  int used_feat;               /* largest split feature + 1: what a row must have */
  mlsys_cloud_obj obj;
  double huber_slope;
  double base_score;           /* used as float(base_score), as XGBoost does */
  int nnodes;
  int32_t *tree_off;           /* [ntrees + 1] */
  mlsys__cloud_node *nodes;    /* [nnodes] */
  float *gain, *cover;         /* [nnodes]; NaN where unknown */
  int cap_trees, cap_nodes;    /* growth while building */
};

MLSYS_DEF void mlsys_cloud_gbdt_params_default(mlsys_cloud_gbdt_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->obj = MLSYS_CLOUD_OBJ_SQUARED;
  p->huber_slope = 1.0;
  p->n_trees = 100;
  p->max_depth = 6;
  p->max_bin = 256;
  p->eta = 0.3;
  p->lambda = 1.0;
  p->gamma = 0.0;
  p->min_child_weight = 1.0;
  p->subsample = 1.0;
  p->base_score = NAN;
  p->seed = 0;
}

MLSYS_DEF void mlsys_cloud_gbdt_free(mlsys_cloud_gbdt *m) {
  if (!m) return;
  mlsys_free(m->tree_off);
  mlsys_free(m->nodes);
  mlsys_free(m->gain);
  mlsys_free(m->cover);
  mlsys_free(m);
}

static mlsys_cloud_gbdt *mlsys__cloud_new(void) {
  mlsys_cloud_gbdt *m = (mlsys_cloud_gbdt *)mlsys_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->tree_off = (int32_t *)mlsys_calloc(1, sizeof *m->tree_off);
  if (!m->tree_off) {
    mlsys_free(m);
    return NULL;
  }
  m->cap_trees = 0;
  m->base_score = 0.5;
  m->huber_slope = 1.0;
  return m;
}

/* Append one tree given as XGBoost-style parallel arrays over n nodes (left[i] < 0: leaf, value = cond[i]).
   Walks breadth-first from node 0, renumbering so that children are consecutive, and rejects what would make
   prediction loop or read out of bounds: a child index outside [0, n), a node reached twice (cycle or shared
   child), a split with a single child, a negative or too large feature, a non-finite threshold or leaf. Nodes not
   reachable from the root are dropped; *nreach says how many were kept. what names the tree in messages. */
static mlsys_status mlsys__cloud_add_tree(mlsys_cloud_gbdt *m, int n, const int32_t *left, const int32_t *right,
                                          const int32_t *feat, const float *cond, const uint8_t *dl,
                                          const float *gain, const float *cover, const char *what, int *nreach) {
  int32_t *order = NULL, *newid = NULL;
  int head, cnt, k;
  mlsys_status st = MLSYS_OK;
  if (n < 1) return mlsys_set_error(MLSYS_ERR_PARSE, "%s has no nodes", what);
  if (n > MLSYS__CLOUD_MAX_NODES - m->nnodes)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the forest would exceed %d nodes", what, MLSYS__CLOUD_MAX_NODES);
  order = (int32_t *)mlsys_alloc((size_t)n, sizeof *order);
  newid = (int32_t *)mlsys_alloc((size_t)n, sizeof *newid);
  if (!order || !newid) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (k = 0; k < n; k++) newid[k] = -1;
  order[0] = 0;
  newid[0] = 0;
  cnt = 1;
  for (head = 0; head < cnt; head++) {
    int u = order[head], l = left[u], r = right[u];
    if (l < 0 && r < 0) {
      if (!isfinite(cond[u])) {
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: leaf %d has a non-finite value", what, u);
        goto done;
      }
      continue;
    }
    if (l < 0 || r < 0) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: node %d has one child (left %d, right %d)", what, u, l, r);
      goto done;
    }
    if (l >= n || r >= n) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: node %d has child index %d out of range [0, %d)", what, u,
                           l >= n ? l : r, n);
      goto done;
    }
    if (newid[l] >= 0 || newid[r] >= 0 || l == r) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: node %d points to node %d, which is already in the tree "
                           "(a cycle or a shared child)", what, u, newid[l] >= 0 ? l : r);
      goto done;
    }
    if (feat[u] < 0 || feat[u] >= MLSYS__CLOUD_MAX_FEATURES) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: node %d splits on feature index %d (must be in [0, %d))", what, u,
                           (int)feat[u], MLSYS__CLOUD_MAX_FEATURES);
      goto done;
    }
    if (isnan(cond[u])) {   /* ±inf is a legal threshold: the top cut of a feature whose maximum is near FLT_MAX */
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: node %d has a NaN split threshold", what, u);
      goto done;
    }
    newid[l] = cnt;
    order[cnt++] = l;
    newid[r] = cnt;
    order[cnt++] = r;
  }
  /* grow the forest arrays (amortised doubling) */
  if (m->nnodes + cnt > m->cap_nodes) {
    int cap = m->cap_nodes ? m->cap_nodes : 256;
    void *a, *b, *c;
    while (cap < m->nnodes + cnt) cap = cap > MLSYS__CLOUD_MAX_NODES / 2 ? MLSYS__CLOUD_MAX_NODES : cap * 2;
    a = mlsys_realloc_array(m->nodes, (size_t)cap, sizeof *m->nodes);
    if (!a) { st = MLSYS_ERR_NOMEM; goto done; }
    m->nodes = (mlsys__cloud_node *)a;
    b = mlsys_realloc_array(m->gain, (size_t)cap, sizeof *m->gain);
    if (!b) { st = MLSYS_ERR_NOMEM; goto done; }
    m->gain = (float *)b;
    c = mlsys_realloc_array(m->cover, (size_t)cap, sizeof *m->cover);
    if (!c) { st = MLSYS_ERR_NOMEM; goto done; }
    m->cover = (float *)c;
    m->cap_nodes = cap;
  }
  if (m->ntrees + 2 > m->cap_trees) {
    int cap = m->cap_trees ? m->cap_trees * 2 : 64;
    void *a = mlsys_realloc_array(m->tree_off, (size_t)cap, sizeof *m->tree_off);
    if (!a) { st = MLSYS_ERR_NOMEM; goto done; }
    m->tree_off = (int32_t *)a;
    m->cap_trees = cap;
  }
  for (k = 0; k < cnt; k++) {
    int u = order[k], g = m->nnodes + k;
    mlsys__cloud_node *nd = &m->nodes[g];
    nd->value = cond[u];
    if (left[u] < 0) {
      nd->left = -1;
      nd->info = 0;
    } else {
      nd->left = m->nnodes + newid[left[u]];
      nd->info = (uint32_t)feat[u] | (dl && dl[u] ? 0x80000000u : 0u);
      if (feat[u] + 1 > m->used_feat) m->used_feat = feat[u] + 1;
    }
    m->gain[g] = gain && left[u] >= 0 ? gain[u] : (left[u] < 0 ? 0.0f : NAN);
    m->cover[g] = cover ? cover[u] : NAN;
  }
  m->nnodes += cnt;
  m->ntrees++;
  m->tree_off[m->ntrees] = m->nnodes;
  if (nreach) *nreach = cnt;
done:
  mlsys_free(order);
  mlsys_free(newid);
  return st;
}

/* The float32 walk of XGBoost 1.7's CPU predictor (cpu_predictor.cc: GetNextNode, PredValueByOneTree and
   out_preds[i] += leaf in float, starting from float(base_score)). */
static float mlsys__cloud_predict_f(const mlsys_cloud_gbdt *m, const float *x) {
  const mlsys__cloud_node *nd = m->nodes;
  const int32_t *off = m->tree_off;
  float acc = (float)m->base_score;
  int t;
  for (t = 0; t < m->ntrees; t++) {
    int32_t k = off[t];
    while (nd[k].left >= 0) {
      uint32_t info = nd[k].info;
      float v = x[info & MLSYS__CLOUD_FEAT_MASK];
      int go_right = isnan(v) ? !(info >> 31) : !(v < nd[k].value);
      k = nd[k].left + go_right;
    }
    acc += nd[k].value;
  }
  return acc;
}

#define MLSYS__CLOUD_PRED_BLOCK 16
/* nb <= MLSYS__CLOUD_PRED_BLOCK rows (stride floats apart) through every tree; tdepth[t] = tree t's depth, the
   number of steps that brings every row to its leaf (a row that gets there early stays). */
static void mlsys__cloud_predict_block(const mlsys_cloud_gbdt *m, const int *tdepth, const float *X, size_t stride,
                                       int nb, double *out) {
  const mlsys__cloud_node *nd = m->nodes;
  float acc[MLSYS__CLOUD_PRED_BLOCK];
  int32_t k[MLSYS__CLOUD_PRED_BLOCK];
  int t, r, d;
  for (r = 0; r < nb; r++) acc[r] = (float)m->base_score;
  for (t = 0; t < m->ntrees; t++) {
    for (r = 0; r < nb; r++) k[r] = m->tree_off[t];
    for (d = 0; d < tdepth[t]; d++)
      for (r = 0; r < nb; r++) {
        const mlsys__cloud_node *n = &nd[k[r]];
        if (n->left >= 0) {
          float v = X[(size_t)r * stride + (n->info & MLSYS__CLOUD_FEAT_MASK)];
          k[r] = n->left + (isnan(v) ? !(n->info >> 31) : !(v < n->value));
        }
      }
    for (r = 0; r < nb; r++) acc[r] += nd[k[r]].value;
  }
  for (r = 0; r < nb; r++) out[r] = (double)acc[r];
}

MLSYS_DEF double mlsys_cloud_gbdt_predict(const mlsys_cloud_gbdt *m, const float *x) {
  if (!m || !x) return NAN;
  return (double)mlsys__cloud_predict_f(m, x);
}

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_predict_rows(const mlsys_cloud_gbdt *m, const float *X, int nrow, int ncol,
                                                     double *out) {
  int i;
  if (!m || (!X && nrow > 0) || (!out && nrow > 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_predict_rows: NULL model, rows or output");
  if (nrow < 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_predict_rows: nrow %d < 0", nrow);
  if (ncol < m->used_feat)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_predict_rows: the model splits on feature index %d "
                           "but rows have %d columns", m->used_feat - 1, ncol);
  if (nrow >= 2 * MLSYS__CLOUD_PRED_BLOCK) {
    /* rows in blocks, trees in the outer loop: one tree's walks for several rows are independent chains of loads
       that the core overlaps, where one row at a time waits on each node in turn. Each row still adds its leaves
       in tree order in float, so the result is mlsys_cloud_gbdt_predict's bit for bit. */
    int *tdepth = (int *)mlsys_alloc((size_t)m->ntrees + 1, sizeof *tdepth);
    unsigned char *nd_depth = (unsigned char *)mlsys_alloc((size_t)m->nnodes + 1, 1);
    if (tdepth && nd_depth) {
      int t;
      for (t = 0; t < m->ntrees; t++) { /* breadth-first storage: a child comes after its parent */
        int32_t k, b = m->tree_off[t], e = m->tree_off[t + 1];
        tdepth[t] = 0;
        nd_depth[b] = 0;
        for (k = b; k < e; k++) {
          int32_t l = m->nodes[k].left;
          if (l < 0) continue;
          nd_depth[l] = nd_depth[l + 1] = (unsigned char)(nd_depth[k] + 1);
          if (nd_depth[k] + 1 > tdepth[t]) tdepth[t] = nd_depth[k] + 1;
        }
      }
      for (i = 0; i < nrow; i += MLSYS__CLOUD_PRED_BLOCK) {
        int nb = nrow - i < MLSYS__CLOUD_PRED_BLOCK ? nrow - i : MLSYS__CLOUD_PRED_BLOCK;
        mlsys__cloud_predict_block(m, tdepth, X + (size_t)i * (size_t)ncol, (size_t)ncol, nb, out + i);
      }
      mlsys_free(tdepth);
      mlsys_free(nd_depth);
      return MLSYS_OK;
    }
    mlsys_free(tdepth);
    mlsys_free(nd_depth); /* out of memory for the depths: row by row below */
  }
  for (i = 0; i < nrow; i++) out[i] = (double)mlsys__cloud_predict_f(m, X + (size_t)i * (size_t)ncol);
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_cloud_gbdt_nfeatures(const mlsys_cloud_gbdt *m) { return m ? m->nfeat : 0; }
MLSYS_DEF int mlsys_cloud_gbdt_ntrees(const mlsys_cloud_gbdt *m) { return m ? m->ntrees : 0; }
MLSYS_DEF double mlsys_cloud_gbdt_base_score(const mlsys_cloud_gbdt *m) { return m ? m->base_score : NAN; }
MLSYS_DEF mlsys_cloud_obj mlsys_cloud_gbdt_objective(const mlsys_cloud_gbdt *m) {
  return m ? m->obj : MLSYS_CLOUD_OBJ_OTHER;
}
MLSYS_DEF int mlsys_cloud_gbdt_tree_nodes(const mlsys_cloud_gbdt *m, int tree) {
  if (!m || tree < 0 || tree >= m->ntrees) return -1;
  return m->tree_off[tree + 1] - m->tree_off[tree];
}

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_node(const mlsys_cloud_gbdt *m, int tree, int node,
                                             mlsys_cloud_gbdt_node_info *out) {
  int nn = mlsys_cloud_gbdt_tree_nodes(m, tree), g;
  const mlsys__cloud_node *nd;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_node: NULL output");
  if (nn < 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_node: no tree %d", tree);
  if (node < 0 || node >= nn)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_node: tree %d has no node %d (%d nodes)", tree, node, nn);
  g = m->tree_off[tree] + node;
  nd = &m->nodes[g];
  memset(out, 0, sizeof *out);
  out->is_leaf = nd->left < 0;
  out->feature = out->is_leaf ? -1 : (int)(nd->info & MLSYS__CLOUD_FEAT_MASK);
  out->value = nd->value;
  out->left = out->is_leaf ? -1 : nd->left - m->tree_off[tree];
  out->right = out->is_leaf ? -1 : out->left + 1;
  out->default_left = !out->is_leaf && (nd->info >> 31);
  out->gain = m->gain[g];
  out->cover = m->cover[g];
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_cloud_gbdt_loss(mlsys_cloud_obj obj, double huber_slope, double pred, double y, double *loss,
                                     double *grad, double *hess) {
  double z = pred - y, l, g, h;
  if (obj == MLSYS_CLOUD_OBJ_PSEUDO_HUBER) {
    double d = huber_slope > 0 ? huber_slope : 1.0, q = 1.0 + (z / d) * (z / d), sq = sqrt(q);
    l = d * d * (sq - 1.0);
    g = z / sq;
    h = 1.0 / (q * sq);
  } else {
    l = 0.5 * z * z;
    g = z;
    h = 1.0;
  }
  if (loss) *loss = l;
  if (grad) *grad = g;
  if (hess) *hess = h;
}

/* ---------- training ---------- */

/* Gradient pair of one row in float, as XGBoost 1.7 computes it (regression_obj.cu: std::pow of floats promotes
   to double in the pseudo-Huber scale, the rest is float). */
static void mlsys__cloud_gpair(mlsys_cloud_obj obj, float slope, float pred, float y, float *g, float *h) {
  float z = pred - y;
  if (obj == MLSYS_CLOUD_OBJ_PSEUDO_HUBER) {
    double scale = 1.0 + ((double)z * (double)z) / ((double)slope * (double)slope);
    float ssq = (float)sqrt(scale);
    *g = z / ssq;
    *h = (float)(1.0 / (scale * (double)ssq));
  } else {
    *g = z;
    *h = 1.0f;
  }
}

typedef struct {
  int feat, bin, dl;           /* feat < 0: no split; left = bins <= bin (bin may be -1), NaN left iff dl */
  float gain;
  double GL, HL;
} mlsys__cloud_split;

typedef struct {
  int begin, end;              /* rows[begin, end) */
  double G, H;
  double *hist;                /* [2 * nslots + ncol]: (g, h) per slot (mlsys__cloud_data), then missing counts per
                                  feature */
  mlsys__cloud_split sp;
  int id;                      /* index in the tree being built */
} mlsys__cloud_tnode;

/* Each feature owns nb + 1 histogram slots (the last one collects its missing rows and is never read: it lets the
   row loop add without a branch). The binned data is kept twice, for the two loops that read it:
     - rbin, row-major, each value the double offset 2 * slot of its histogram slot, in uint16_t when every offset
       fits (else uint32_t): histogram building adds a row's gradient pair at hist + offset for each feature with no
       per-feature arithmetic;
     - cbin, column-major, the bin local to its feature (0 .. nb - 1, nb = missing) in a byte when every feature fits
       (nb <= 256, or 255 with missing values), else uint16_t: partitioning reads one feature of many rows. */
typedef struct {
  int nrow, ncol, nbins;       /* nbins: total over features */
  int *fbase, *nb;             /* per feature: first global bin (into cuts), bin count */
  int *hoff;                   /* per feature: first histogram slot (fbase + feature index) */
  int *midx;                   /* per feature: 2 * its missing slot */
  int nslots;                  /* nbins + ncol */
  int rwide, wide;             /* rbin is uint32_t (else uint16_t); cbin is uint16_t (else uint8_t) */
  int any_missing;             /* some value is NaN: histograms also count missing rows per feature */
  void *rbin;                  /* [nrow * ncol] row-major slot offsets */
  void *cbin;                  /* [ncol * nrow] column-major local bins */
  int *mcnt;                   /* [ncol] scratch: missing rows per feature while building a histogram */
  float *cuts;                 /* [nbins]: upper bounds (x < cut), the last one above the feature's maximum */
  float *minv;                 /* per feature: threshold below every value (the all-right split) */
  float lambda, mcw, gamma, eta;
} mlsys__cloud_data;

/* Unsigned key of a float (not NaN) in the float's order; -0 is keyed as +0. */
static uint32_t mlsys__cloud_fkey(float v) {
  uint32_t u;
  if (v == 0) v = 0.0f;
  memcpy(&u, &v, sizeof u);
  return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* Ascending sort of n floats (no NaN), stable with -0 equal to +0, so the result is what a stable comparison sort
   gives: LSD radix, 8 bits a pass, a pass skipped when all keys share its digit. tmp holds n floats. Binning sorts
   every feature once per training: qsort took several percent of a 300-tree run. */
static void mlsys__cloud_sort(float *a, float *tmp, int n) {
  int cnt[4][256], i, p;
  float *src = a, *dst = tmp, *sw;
  if (n < 2) return;
  memset(cnt, 0, sizeof cnt);
  for (i = 0; i < n; i++) {
    uint32_t k = mlsys__cloud_fkey(a[i]);
    cnt[0][k & 255]++;
    cnt[1][(k >> 8) & 255]++;
    cnt[2][(k >> 16) & 255]++;
    cnt[3][k >> 24]++;
  }
  for (p = 0; p < 4; p++) {
    int sum = 0, b, sh = 8 * p, *c = cnt[p];
    if (c[(mlsys__cloud_fkey(a[0]) >> sh) & 255] == n) continue;
    for (b = 0; b < 256; b++) {
      int k = c[b];
      c[b] = sum;
      sum += k;
    }
    for (i = 0; i < n; i++) dst[c[(mlsys__cloud_fkey(src[i]) >> sh) & 255]++] = src[i];
    sw = src;
    src = dst;
    dst = sw;
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* Cut points as XGBoost's hist (quantile.cc AddCutPoint): with k <= max_bin distinct values v_0 < ... < v_{k-1}
   the cuts are v_1 .. v_{k-1} plus v_{k-1} + (|v_{k-1}| + 1e-5); bin(x) = number of cuts <= x, so a split at a
   bin boundary is "x < v_j", a data value. With more distinct values: max_bin - 1 equal-count quantiles of the
   sorted values (unweighted; XGBoost's sketch is approximate, ours exact) plus the same top cut. */
static mlsys_status mlsys__cloud_bin(mlsys__cloud_data *d, const float *X, int max_bin) {
  int f, r, nr = d->nrow, nc = d->ncol, total = 0;
  float *col = (float *)mlsys_alloc(2 * (size_t)nr, sizeof *col);   /* the column, then the sort's scratch */
  float *tmpcuts = (float *)mlsys_alloc((size_t)max_bin + 1, sizeof *tmpcuts);
  mlsys_status st = MLSYS_OK;
  d->fbase = (int *)mlsys_calloc((size_t)nc + 1, sizeof(int));
  d->nb = (int *)mlsys_calloc((size_t)nc, sizeof(int));
  d->minv = (float *)mlsys_calloc((size_t)nc, sizeof(float));
  d->hoff = (int *)mlsys_calloc((size_t)nc, sizeof(int));
  d->midx = (int *)mlsys_calloc((size_t)nc, sizeof(int));
  d->mcnt = (int *)mlsys_calloc((size_t)nc, sizeof(int));
  d->cuts = (float *)mlsys_alloc((size_t)nc * ((size_t)max_bin + 1), sizeof(float));
  if (!col || !tmpcuts || !d->fbase || !d->nb || !d->hoff || !d->midx || !d->mcnt || !d->minv || !d->cuts) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  d->wide = 0;
  d->any_missing = 0;
  for (f = 0; f < nc; f++) {
    int nv = 0, nu = 0, nc_ = 0, i;
    for (r = 0; r < nr; r++) {
      float v = X[(size_t)r * nc + f];
      if (!isnan(v)) col[nv++] = v;
    }
    if (nv < nr) d->any_missing = 1;
    d->fbase[f] = total;
    d->hoff[f] = total + f;
    if (nv == 0) {         /* an all-missing column: no bins, never split */
      d->nb[f] = 0;
      continue;
    }
    mlsys__cloud_sort(col, col + nr, nv);
    for (i = 0; i < nv; i++)
      if (i == 0 || col[i] != col[i - 1]) nu++;
    if (nu <= max_bin) {
      for (i = 1; i < nv; i++)
        if (col[i] != col[i - 1]) tmpcuts[nc_++] = col[i];
    } else {
      for (i = 1; i < max_bin; i++) {
        float c = col[(size_t)((double)i * nv / max_bin)];
        if (c > col[0] && (nc_ == 0 || c > tmpcuts[nc_ - 1])) tmpcuts[nc_++] = c;
      }
    }
    tmpcuts[nc_++] = (float)((double)col[nv - 1] + (fabs((double)col[nv - 1]) + 1e-5));
    d->minv[f] = (float)((double)col[0] - (fabs((double)col[0]) + 1e-5));
    memcpy(d->cuts + total, tmpcuts, (size_t)nc_ * sizeof(float));
    d->nb[f] = nc_;
    total += nc_;
    if (nc_ + (nv < nr) > 256) d->wide = 1;   /* codes 0 .. nb, nb only when some value is missing */
  }
  d->fbase[nc] = total;
  d->nbins = total;
  d->nslots = total + nc;
  for (f = 0; f < nc; f++) d->midx[f] = 2 * (d->hoff[f] + d->nb[f]);
  d->rwide = 2 * (size_t)d->nslots > 65536;   /* offsets up to 2 * (nslots - 1) */
  d->rbin = mlsys_alloc((size_t)nr * (size_t)nc, d->rwide ? sizeof(uint32_t) : sizeof(uint16_t));
  d->cbin = mlsys_alloc((size_t)nr * (size_t)nc, d->wide ? sizeof(uint16_t) : sizeof(uint8_t));
  if (!d->rbin || !d->cbin) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (r = 0; r < nr; r++)
    for (f = 0; f < nc; f++) {
      float v = X[(size_t)r * nc + f];
      int lo = d->nb[f];                   /* missing (an all-missing column has nb = 0: every row is missing) */
      if (!isnan(v) && d->nb[f] > 0) {
        const float *c = d->cuts + d->fbase[f];
        int hi = d->nb[f] - 1;             /* first cut > v; the last cut exceeds every value */
        lo = 0;
        while (lo < hi) {
          int mid = (lo + hi) / 2;
          if (c[mid] > v) hi = mid; else lo = mid + 1;
        }
      }
      if (d->rwide) ((uint32_t *)d->rbin)[(size_t)r * nc + f] = (uint32_t)(2 * (d->hoff[f] + lo));
      else ((uint16_t *)d->rbin)[(size_t)r * nc + f] = (uint16_t)(2 * (d->hoff[f] + lo));
      if (d->wide) ((uint16_t *)d->cbin)[(size_t)f * nr + r] = (uint16_t)lo;
      else ((uint8_t *)d->cbin)[(size_t)f * nr + r] = (uint8_t)lo;
    }
done:
  mlsys_free(col);
  mlsys_free(tmpcuts);
  return st;
}

/* Histogram of rows[begin, end): per slot the sums of g and h in double, added in row order (the order XGBoost's
   single-threaded build uses; the sums, and so near-tie splits, depend on it). The row loop has no branch: a missing
   value adds into its feature's missing slot; the counts of missing rows, which decide whether a feature is scanned
   a second time with missing rows on the left, are only kept when the data has missing values. The features of a
   row touch different slots, so their order is free: they are unrolled by 4, then 2, then 1. With sums
   non-NULL, also the node's G and H, in the same row order (the root's: a chain of additions that costs nothing
   among the histogram's). */
#if defined(__SSE2__)
#include <emmintrin.h>
/* (g, h) added as one pair: two IEEE double additions as in the scalar code, which compilers vectorize only
   sometimes (gcc -O2 stops as soon as the loop carries anything else); the pair halves the row loop's work */
#define MLSYS__CLOUD_PAIR_T __m128d
#define MLSYS__CLOUD_PAIR_LOAD(p) _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)(p))))
#define MLSYS__CLOUD_PAIR_ZERO() _mm_setzero_pd()
#define MLSYS__CLOUD_PAIR_SUM(a, p) ((a) = _mm_add_pd(a, p))
#define MLSYS__CLOUD_PAIR_ADD(s, p) _mm_storeu_pd(s, _mm_add_pd(_mm_loadu_pd(s), p))
#define MLSYS__CLOUD_PAIR_STORE(s, p) _mm_storeu_pd(s, p)
#else
typedef struct {
  double g, h;
} mlsys__cloud_pair;
static mlsys__cloud_pair mlsys__cloud_pair_load(const float *p) {
  mlsys__cloud_pair r;
  r.g = p[0];
  r.h = p[1];
  return r;
}
static mlsys__cloud_pair mlsys__cloud_pair_zero(void) {
  mlsys__cloud_pair r;
  r.g = r.h = 0;
  return r;
}
#define MLSYS__CLOUD_PAIR_T mlsys__cloud_pair
#define MLSYS__CLOUD_PAIR_LOAD(p) mlsys__cloud_pair_load(p)
#define MLSYS__CLOUD_PAIR_ZERO() mlsys__cloud_pair_zero()
#define MLSYS__CLOUD_PAIR_SUM(a, p) ((a).g += (p).g, (a).h += (p).h)
#define MLSYS__CLOUD_PAIR_ADD(s, p) ((s)[0] += (p).g, (s)[1] += (p).h)
#define MLSYS__CLOUD_PAIR_STORE(s, p) ((s)[0] = (p).g, (s)[1] = (p).h)
#endif
#define MLSYS__CLOUD_HIST_ADD(f, MISS)                          \
  {                                                             \
    MLSYS__CLOUD_PAIR_ADD(hist + b[f], p);                      \
    if (MISS) mcnt[f] += (int)b[f] == midx[f];                  \
  }
#define MLSYS__CLOUD_HIST_LOOP(T, MISS)                                       \
  {                                                                           \
    const T *rb = (const T *)d->rbin;                                         \
    for (i = begin; i < end; i++) {                                           \
      int r = rows[i];                                                        \
      const T *b = rb + (size_t)r * nc;                                       \
      MLSYS__CLOUD_PAIR_T p = MLSYS__CLOUD_PAIR_LOAD(gh + 2 * (size_t)r);     \
      if (sums) MLSYS__CLOUD_PAIR_SUM(sum, p);                                \
      for (f = 0; f + 4 <= nc; f += 4) {                                      \
        MLSYS__CLOUD_HIST_ADD(f, MISS)                                        \
        MLSYS__CLOUD_HIST_ADD(f + 1, MISS)                                    \
        MLSYS__CLOUD_HIST_ADD(f + 2, MISS)                                    \
        MLSYS__CLOUD_HIST_ADD(f + 3, MISS)                                    \
      }                                                                       \
      if (f + 2 <= nc) {                                                      \
        MLSYS__CLOUD_HIST_ADD(f, MISS)                                        \
        MLSYS__CLOUD_HIST_ADD(f + 1, MISS)                                    \
        f += 2;                                                               \
      }                                                                       \
      if (f < nc) MLSYS__CLOUD_HIST_ADD(f, MISS)                              \
    }                                                                         \
  }
static void mlsys__cloud_build_hist(const mlsys__cloud_data *d, const int *rows, int begin, int end, const float *gh,
                                    double *hist, double *sums) {
  int i, f, nc = d->ncol;
  const int *midx = d->midx;
  int *mcnt = d->mcnt;
  double *miss = hist + 2 * (size_t)d->nslots;
  MLSYS__CLOUD_PAIR_T sum = MLSYS__CLOUD_PAIR_ZERO();
  memset(hist, 0, (2 * (size_t)d->nslots + (size_t)nc) * sizeof(double));
  if (d->any_missing) {
    memset(mcnt, 0, (size_t)nc * sizeof *mcnt);
    if (d->rwide) MLSYS__CLOUD_HIST_LOOP(uint32_t, 1)
    else MLSYS__CLOUD_HIST_LOOP(uint16_t, 1)
    for (f = 0; f < nc; f++) miss[f] = (double)mcnt[f];
  } else if (d->rwide) {
    MLSYS__CLOUD_HIST_LOOP(uint32_t, 0)
  } else {
    MLSYS__CLOUD_HIST_LOOP(uint16_t, 0)
  }
  if (sums) MLSYS__CLOUD_PAIR_STORE(sums, sum);
}
#undef MLSYS__CLOUD_HIST_LOOP
#undef MLSYS__CLOUD_HIST_ADD
#undef MLSYS__CLOUD_PAIR_T
#undef MLSYS__CLOUD_PAIR_LOAD
#undef MLSYS__CLOUD_PAIR_ZERO
#undef MLSYS__CLOUD_PAIR_SUM
#undef MLSYS__CLOUD_PAIR_ADD
#undef MLSYS__CLOUD_PAIR_STORE

/* XGBoost's CalcGain: 0 below min_child_weight, else G²/(H+λ). */
static double mlsys__cloud_gain_of(const mlsys__cloud_data *d, double G, double H) {
  if (H < d->mcw || H + d->lambda <= 0) return 0.0;
  return G * G / (H + d->lambda);
}

static int mlsys__cloud_valid(const mlsys__cloud_data *d, double HL, double HR) {
  return HL >= d->mcw && HR >= d->mcw && HL > 0 && HR > 0 && HL + d->lambda > 0 && HR + d->lambda > 0;
}

/* Best split of a node: every feature, bins scanned left to right with missing rows on the right and, when the node
   has missing values of that feature, right to left with them on the left (XGBoost's EnumerateSplit +1/-1). The
   change is rounded to float as XGBoost's loss_chg, and only a strictly larger one replaces the best, so ties go to
   the lower feature index and the earlier bin, as there. */
static void mlsys__cloud_eval(const mlsys__cloud_data *d, mlsys__cloud_tnode *t) {
  int f, b;
  float root_gain = (float)mlsys__cloud_gain_of(d, t->G, t->H);
  const double *miss = t->hist + 2 * (size_t)d->nslots;
  t->sp.feat = -1;
  t->sp.gain = 0.0f;   /* XGBoost's SplitEntry starts at loss_chg 0: a split must improve strictly */
  for (f = 0; f < d->ncol; f++) {
    const double *hf = t->hist + 2 * (size_t)d->hoff[f];
    int nb = d->nb[f];
    double GL = 0, HL = 0;
    for (b = 0; b < nb; b++) {
      double GR, HR;
      GL += hf[2 * b];
      HL += hf[2 * b + 1];
      GR = t->G - GL;
      HR = t->H - HL;
      if (mlsys__cloud_valid(d, HL, HR)) {
        float chg = (float)(mlsys__cloud_gain_of(d, GL, HL) + mlsys__cloud_gain_of(d, GR, HR) - (double)root_gain);
        if (chg > t->sp.gain && !isinf(chg)) {
          t->sp.feat = f;
          t->sp.bin = b;
          t->sp.dl = 0;
          t->sp.gain = chg;
          t->sp.GL = GL;
          t->sp.HL = HL;
        }
      }
    }
    if (miss[f] > 0) {
      double GR = 0, HR = 0;
      for (b = nb - 1; b >= 0; b--) {
        double GLb, HLb;
        GR += hf[2 * b];
        HR += hf[2 * b + 1];
        GLb = t->G - GR;
        HLb = t->H - HR;
        if (mlsys__cloud_valid(d, HLb, HR)) {
          float chg = (float)(mlsys__cloud_gain_of(d, GLb, HLb) + mlsys__cloud_gain_of(d, GR, HR) - (double)root_gain);
          if (chg > t->sp.gain && !isinf(chg)) {
            t->sp.feat = f;
            t->sp.bin = b - 1;
            t->sp.dl = 1;
            t->sp.gain = chg;
            t->sp.GL = GLb;
            t->sp.HL = HLb;
          }
        }
      }
    }
  }
  /* XGBoost's IsValid: loss_chg > kRtEps (1e-6) and loss_chg >= min_split_loss */
  if (t->sp.feat >= 0 && !(t->sp.gain > 1e-6f && t->sp.gain >= d->gamma)) t->sp.feat = -1;
}

/* Leaf weight (XGBoost CalcWeight) times eta, both rounded as XGBoost does: weight in float, then float * float. */
static float mlsys__cloud_leaf(const mlsys__cloud_data *d, double G, double H) {
  float w;
  if (H < d->mcw || H <= 0 || H + d->lambda <= 0) return 0.0f;
  w = (float)(-G / (H + d->lambda));
  return w * d->eta;
}

typedef struct {               /* one tree under construction, XGBoost-style arrays */
  int n, cap;
  int32_t *left, *right, *feat;
  float *cond, *gain, *cover;
  uint8_t *dl;
} mlsys__cloud_tbuf;

static int mlsys__cloud_tbuf_push(mlsys__cloud_tbuf *t) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 64;
    void *p;
#define MLSYS__CLOUD_GROW(field)                                                           \
    p = mlsys_realloc_array(t->field, (size_t)cap, sizeof *t->field);                     \
    if (!p) return -1;                                                                    \
    memcpy(&t->field, &p, sizeof p);
    MLSYS__CLOUD_GROW(left) MLSYS__CLOUD_GROW(right) MLSYS__CLOUD_GROW(feat) MLSYS__CLOUD_GROW(cond)
    MLSYS__CLOUD_GROW(gain) MLSYS__CLOUD_GROW(cover) MLSYS__CLOUD_GROW(dl)
#undef MLSYS__CLOUD_GROW
    t->cap = cap;
  }
  t->left[t->n] = t->right[t->n] = -1;
  t->feat[t->n] = 0;
  t->cond[t->n] = 0.0f;
  t->gain[t->n] = 0.0f;
  t->cover[t->n] = 0.0f;
  t->dl[t->n] = 0;
  return t->n++;
}

static void mlsys__cloud_tbuf_free(mlsys__cloud_tbuf *t) {
  mlsys_free(t->left);
  mlsys_free(t->right);
  mlsys_free(t->feat);
  mlsys_free(t->cond);
  mlsys_free(t->gain);
  mlsys_free(t->cover);
  mlsys_free(t->dl);
  memset(t, 0, sizeof *t);
}

static float mlsys__cloud_median(const float *y, int n, float *scratch, float *tmp) {
  memcpy(scratch, y, (size_t)n * sizeof *y);
  mlsys__cloud_sort(scratch, tmp, n);
  /* numpy's median: the mean of the two middle values for even n */
  return n % 2 ? scratch[n / 2] : (float)(0.5 * ((double)scratch[n / 2 - 1] + (double)scratch[n / 2]));
}

/* Histograms kept for the subtraction trick are capped: beyond this a node's children are both built from rows.
   Each histogram is counted as 2 * nbins + ncol doubles, its size before the missing slots were added, so that the
   cap falls where it did: which children are built from rows and which by subtraction decides the sums' rounding. */
#define MLSYS__CLOUD_HIST_BUDGET ((size_t)512 << 20)

/* Histogram buffers handed back for reuse: a training allocates as many as are live at once, not one per node. */
typedef struct {
  double **buf;
  int n, cap;
  size_t len;                  /* doubles per histogram */
} mlsys__cloud_hpool;

static double *mlsys__cloud_hget(mlsys__cloud_hpool *p) {
  if (p->n > 0) return p->buf[--p->n];
  return (double *)mlsys_alloc(p->len, sizeof(double));
}

static void mlsys__cloud_hput(mlsys__cloud_hpool *p, double *h) {
  if (!h) return;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 64;
    double **nb = (double **)mlsys_realloc_array(p->buf, (size_t)cap, sizeof *nb);
    if (!nb) {                 /* cannot keep it: free it, the next get allocates */
      mlsys_free(h);
      return;
    }
    p->buf = nb;
    p->cap = cap;
  }
  p->buf[p->n++] = h;
}

/* The row loops below are called from the trainer's large loop nest; inlined there (each has one call site), their
   few live values get spilled to the stack inside the loop. */
#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__CLOUD_NOINLINE __attribute__((noinline))
#else
#define MLSYS__CLOUD_NOINLINE
#endif

/* The rows of a split go left when their local bin v <= bin; missing rows (v = nb, after every bin) go left when the
   split's default is left. Without missing values no split has it, and the test is one comparison. */
#define MLSYS__CLOUD_SPLIT_LOOP(BODY)                                         \
  {                                                                           \
    const int *src = rows + begin, *stop = rows + end;                        \
    if (d->wide) {                                                            \
      const uint16_t *c = (const uint16_t *)d->cbin + (size_t)s->feat * nr;   \
      if (dl) for (; src < stop; src++) BODY(c, (v <= bin) | (v == miss))     \
      else for (; src < stop; src++) BODY(c, v <= bin)                        \
    } else {                                                                  \
      const uint8_t *c = (const uint8_t *)d->cbin + (size_t)s->feat * nr;     \
      if (dl) for (; src < stop; src++) BODY(c, (v <= bin) | (v == miss))     \
      else for (; src < stop; src++) BODY(c, v <= bin)                        \
    }                                                                         \
  }

/* Stable partition of rows[begin, end) by s, left rows first; returns how many go left. Without a branch: each row
   is written to both sides and only its side's cursor advances (the direction is data, a branch would mispredict
   on a large share of the rows). */
#define MLSYS__CLOUD_PART_BODY(c, LEFT)                                       \
  {                                                                           \
    int r = *src, v = c[r], gl = LEFT;                                        \
    *lp = r;                                                                  \
    *rp = r;                                                                  \
    lp += gl;                                                                 \
    rp += gl ^ 1;                                                             \
  }
MLSYS__CLOUD_NOINLINE static int mlsys__cloud_partition(const mlsys__cloud_data *d, const mlsys__cloud_split *s,
                                                        int *rows, int begin, int end, int *tmp) {
  int bin = s->bin, miss = d->nb[s->feat], dl = s->dl, nl;
  size_t nr = (size_t)d->nrow;
  int *lp = rows + begin, *rp = tmp;
  MLSYS__CLOUD_SPLIT_LOOP(MLSYS__CLOUD_PART_BODY)
  nl = (int)(lp - (rows + begin));
  memcpy(lp, tmp, (size_t)(rp - tmp) * sizeof *rows);
  return nl;
}
#undef MLSYS__CLOUD_PART_BODY

/* A split whose children are leaves (the last level): its rows need no partition, only their leaf's value added to
   the prediction (one float addition per row and tree, as XGBoost's prediction cache). The value is looked up by
   the direction: a select compiles to a branch that mispredicts. Returns whether some sum is not finite (the
   predictions were finite before: the trainer checks every tree). */
#define MLSYS__CLOUD_CREDIT_BODY(c, LEFT)                                     \
  {                                                                           \
    int r = *src, v = c[r];                                                   \
    float u = pred[r] + w[LEFT];                                              \
    pred[r] = u;                                                              \
    bad |= !(fabsf(u) <= FLT_MAX);                                            \
  }
MLSYS__CLOUD_NOINLINE static int mlsys__cloud_credit_split(const mlsys__cloud_data *d, const mlsys__cloud_split *s,
                                                           const int *rows, int begin, int end, float wl, float wr,
                                                           float *pred) {
  int bin = s->bin, miss = d->nb[s->feat], dl = s->dl, bad = 0;
  size_t nr = (size_t)d->nrow;
  float w[2];
  w[0] = wr;
  w[1] = wl;
  MLSYS__CLOUD_SPLIT_LOOP(MLSYS__CLOUD_CREDIT_BODY)
  return bad;
}
#undef MLSYS__CLOUD_CREDIT_BODY
#undef MLSYS__CLOUD_SPLIT_LOOP
#undef MLSYS__CLOUD_NOINLINE

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_train(const float *X, const float *y, int nrow, int ncol,
                                              const mlsys_cloud_gbdt_params *p, mlsys_cloud_gbdt **out) {
  mlsys__cloud_data d;
  mlsys_cloud_gbdt_params q;
  mlsys_cloud_gbdt *m = NULL;
  mlsys__cloud_tbuf tb;
  mlsys__cloud_hpool pool;
  mlsys__cloud_tnode *level = NULL, *next = NULL;
  int *rows = NULL, *iota = NULL, *tmp = NULL;
  float *pred = NULL, *gh = NULL, slope;
  size_t hsize, hist_bytes = 0;
  mlsys_rng rng;
  mlsys_status st = MLSYS_OK;
  int i, t, cap_level, credit;
  const char *fn = "mlsys_cloud_gbdt_train";

  memset(&d, 0, sizeof d);
  memset(&tb, 0, sizeof tb);
  memset(&pool, 0, sizeof pool);
  if (out) *out = NULL;
  if (!out || !X || !y || !p) return mlsys_set_error(MLSYS_ERR_ARG, "%s: NULL X, y, params or output", fn);
  if (nrow < 1) return mlsys_set_error(MLSYS_ERR_ARG, "%s: nrow must be >= 1 (got %d)", fn, nrow);
  if (ncol < 1 || ncol > MLSYS__CLOUD_MAX_FEATURES)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: ncol must be in [1, %d] (got %d)", fn, MLSYS__CLOUD_MAX_FEATURES, ncol);
  if ((size_t)nrow > ((size_t)1 << 40) / (size_t)ncol)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: %d x %d features is too many", fn, nrow, ncol);
  q = *p;
  if (q.obj != MLSYS_CLOUD_OBJ_SQUARED && q.obj != MLSYS_CLOUD_OBJ_PSEUDO_HUBER)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: unknown objective %d (squared or pseudo-Huber)", fn, (int)q.obj);
  if (q.n_trees == 0) q.n_trees = 100;
  if (q.max_depth == 0) q.max_depth = 6;
  if (q.max_bin == 0) q.max_bin = 256;
  if (q.eta == 0) q.eta = 0.3;
  if (q.huber_slope == 0) q.huber_slope = 1.0;
  if (q.subsample == 0) q.subsample = 1.0;
  if (q.n_trees < 1 || q.n_trees > 1000000)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: n_trees must be in [1, 1000000] (got %d)", fn, q.n_trees);
  if (q.max_depth < 1 || q.max_depth > 30)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: max_depth must be in [1, 30] (got %d)", fn, q.max_depth);
  if (q.max_bin < 2 || q.max_bin > 65535)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: max_bin must be in [2, 65535] (got %d)", fn, q.max_bin);
  if (!(q.eta > 0 && q.eta <= 1e6))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: eta must be > 0 (got %g)", fn, q.eta);
  if (!(q.lambda >= 0 && q.lambda < 1e30))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: lambda must be finite and >= 0 (got %g)", fn, q.lambda);
  if (!(q.gamma >= 0 && q.gamma < 1e30))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: gamma must be finite and >= 0 (got %g)", fn, q.gamma);
  if (!(q.min_child_weight >= 0 && q.min_child_weight < 1e30))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: min_child_weight must be finite and >= 0 (got %g)", fn,
                           q.min_child_weight);
  if (!(q.subsample > 0 && q.subsample <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: subsample must be in (0, 1] (got %g)", fn, q.subsample);
  if (!(q.huber_slope > 0 && q.huber_slope < 1e30))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: huber_slope must be > 0 (got %g)", fn, q.huber_slope);
  if (!isnan(q.base_score) && !(fabs(q.base_score) <= 1e30))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: base_score must be NaN (= median) or at most 1e30 in magnitude", fn);
  /* |y| <= 1e30 keeps float predictions, gradients and eta-scaled leaves finite */
  for (i = 0; i < nrow; i++)
    if (!(fabsf(y[i]) <= 1e30f))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: label y[%d] is not finite or exceeds 1e30 in magnitude (%g)", fn, i,
                             y[i]);
  for (i = 0; i < nrow * ncol; i++)
    if (isinf(X[i]))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: X[%d][%d] is infinite (use NaN for missing)", fn, i / ncol,
                             i % ncol);

  d.nrow = nrow;
  d.ncol = ncol;
  d.lambda = (float)q.lambda;
  d.mcw = (float)q.min_child_weight;
  d.gamma = (float)q.gamma;
  d.eta = (float)q.eta;
  slope = (float)q.huber_slope;
  st = mlsys__cloud_bin(&d, X, q.max_bin);
  if (st) goto done;
  hsize = 2 * (size_t)d.nbins + (size_t)ncol;   /* what the budget counts per histogram */
  pool.len = 2 * (size_t)d.nslots + (size_t)ncol;
  rows = (int *)mlsys_alloc((size_t)nrow, sizeof *rows);
  iota = (int *)mlsys_alloc((size_t)nrow, sizeof *iota);
  tmp = (int *)mlsys_alloc((size_t)nrow, sizeof *tmp);
  pred = (float *)mlsys_alloc((size_t)nrow, sizeof *pred);
  gh = (float *)mlsys_alloc(2 * (size_t)nrow, sizeof *gh);
  cap_level = 64;
  level = (mlsys__cloud_tnode *)mlsys_calloc((size_t)cap_level, sizeof *level);
  next = (mlsys__cloud_tnode *)mlsys_calloc((size_t)cap_level, sizeof *next);
  m = mlsys__cloud_new();
  if (!rows || !iota || !tmp || !pred || !gh || !level || !next || !m) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  m->nfeat = ncol;
  m->obj = q.obj;
  m->huber_slope = (double)slope;
  m->base_score = isnan(q.base_score) ? (double)mlsys__cloud_median(y, nrow, pred, gh) : q.base_score;
  for (i = 0; i < nrow; i++) pred[i] = (float)m->base_score;
  for (i = 0; i < nrow; i++) iota[i] = i;   /* the root's rows without subsampling: copied, not rebuilt */
  mlsys_rng_seed(&rng, q.seed);
  /* without subsampling every row reaches one leaf of the tree being built, which adds its value to the row's
     prediction there; with it, the finished tree is walked for every row */
  credit = q.subsample >= 1;

  for (t = 0; t < q.n_trees; t++) {
    int nlev = 0, depth, nr = 0, bad = 0;   /* bad: some credited prediction is not finite */
    char what[64];
    if (q.obj == MLSYS_CLOUD_OBJ_SQUARED)   /* the objective outside the loop: each loop inlines its own */
      for (i = 0; i < nrow; i++)
        mlsys__cloud_gpair(MLSYS_CLOUD_OBJ_SQUARED, slope, pred[i], y[i], &gh[2 * i], &gh[2 * i + 1]);
    else
      for (i = 0; i < nrow; i++)
        mlsys__cloud_gpair(MLSYS_CLOUD_OBJ_PSEUDO_HUBER, slope, pred[i], y[i], &gh[2 * i], &gh[2 * i + 1]);
    if (q.subsample >= 1)
      memcpy(rows, iota, (size_t)(nr = nrow) * sizeof *rows);
    else
      for (i = 0; i < nrow; i++)
        if (mlsys_rng_uniform(&rng) < q.subsample) rows[nr++] = i;
    tb.n = 0;
    if (mlsys__cloud_tbuf_push(&tb) < 0) { st = MLSYS_ERR_NOMEM; goto done; }
    memset(&level[0], 0, sizeof level[0]);
    level[0].begin = 0;
    level[0].end = nr;
    level[0].id = 0;
    level[0].hist = mlsys__cloud_hget(&pool);
    if (!level[0].hist) { st = MLSYS_ERR_NOMEM; goto done; }
    hist_bytes = hsize * sizeof(double);
    {
      double sums[2];
      mlsys__cloud_build_hist(&d, rows, 0, nr, gh, level[0].hist, sums);
      level[0].G = sums[0];
      level[0].H = sums[1];
    }
    nlev = 1;
    for (depth = 0; nlev > 0; depth++) {
      int nnext = 0, k;
      /* decide each node of this level: a split (when allowed and valid) or a leaf */
      for (k = 0; k < nlev; k++) {
        mlsys__cloud_tnode *nd = &level[k];
        tb.cover[nd->id] = (float)nd->H;
        if (depth < q.max_depth && nd->hist) mlsys__cloud_eval(&d, nd);
        else if (depth < q.max_depth) { /* hist dropped for the memory cap: rebuild it */
          nd->hist = mlsys__cloud_hget(&pool);
          if (!nd->hist) { st = MLSYS_ERR_NOMEM; goto done; }
          hist_bytes += hsize * sizeof(double);
          mlsys__cloud_build_hist(&d, rows, nd->begin, nd->end, gh, nd->hist, NULL);
          mlsys__cloud_eval(&d, nd);
        } else nd->sp.feat = -1;
        if (nd->sp.feat < 0) {
          int j;
          float w = mlsys__cloud_leaf(&d, nd->G, nd->H);
          tb.cond[nd->id] = w;
          /* a leaf at max_depth was credited when its parent split */
          if (credit && depth < q.max_depth)
            for (j = nd->begin; j < nd->end; j++) {
              float u = pred[rows[j]] + w;
              pred[rows[j]] = u;
              bad |= !(fabsf(u) <= FLT_MAX);
            }
        } else {
          nnext += 2;
        }
      }
      if (nnext > cap_level) {
        int newcap = cap_level;
        void *a, *b;
        while (newcap < nnext) newcap *= 2;
        a = mlsys_realloc_array(next, (size_t)newcap, sizeof *next);
        if (!a) { st = MLSYS_ERR_NOMEM; goto done; }
        next = (mlsys__cloud_tnode *)a;
        memset(next + cap_level, 0, (size_t)(newcap - cap_level) * sizeof *next);
        b = mlsys_realloc_array(level, (size_t)newcap, sizeof *level);
        if (!b) { st = MLSYS_ERR_NOMEM; goto done; }   /* cleanup walks the old cap_level entries of both */
        level = (mlsys__cloud_tnode *)b;
        memset(level + cap_level, 0, (size_t)(newcap - cap_level) * sizeof *level);
        cap_level = newcap;
      }
      nnext = 0;
      for (k = 0; k < nlev; k++) {
        mlsys__cloud_tnode *nd = &level[k], *L, *R, *small, *big;
        const mlsys__cloud_split *s = &nd->sp;
        int nl, nrr, lid, rid;
        if (s->feat < 0) {
          if (nd->hist) { mlsys__cloud_hput(&pool, nd->hist); hist_bytes -= hsize * sizeof(double); nd->hist = NULL; }
          continue;
        }
        lid = mlsys__cloud_tbuf_push(&tb);
        rid = mlsys__cloud_tbuf_push(&tb);
        if (lid < 0 || rid < 0) { st = MLSYS_ERR_NOMEM; goto done; }
        tb.left[nd->id] = lid;
        tb.right[nd->id] = rid;
        tb.feat[nd->id] = s->feat;
        tb.cond[nd->id] = s->bin >= 0 ? d.cuts[d.fbase[s->feat] + s->bin] : d.minv[s->feat];
        tb.dl[nd->id] = (uint8_t)s->dl;
        tb.gain[nd->id] = s->gain;
        L = &next[nnext++];
        R = &next[nnext++];
        memset(L, 0, sizeof *L);
        memset(R, 0, sizeof *R);
        L->id = lid;
        L->G = s->GL;
        L->H = s->HL;
        R->id = rid;
        R->G = nd->G - s->GL;
        R->H = nd->H - s->HL;
        if (depth + 1 >= q.max_depth) {   /* children are leaves: no histograms, and no partition */
          if (credit)
            bad |= mlsys__cloud_credit_split(&d, s, rows, nd->begin, nd->end, mlsys__cloud_leaf(&d, L->G, L->H),
                                             mlsys__cloud_leaf(&d, R->G, R->H), pred);
          L->begin = L->end = R->begin = R->end = nd->begin;   /* rows not needed any more */
          mlsys__cloud_hput(&pool, nd->hist);
          hist_bytes -= hsize * sizeof(double);
          nd->hist = NULL;
          continue;
        }
        nl = mlsys__cloud_partition(&d, s, rows, nd->begin, nd->end, tmp);
        nrr = nd->end - nd->begin - nl;
        L->begin = nd->begin;
        L->end = nd->begin + nl;
        R->begin = nd->begin + nl;
        R->end = nd->end;
        /* build the smaller child from rows, the larger = parent - smaller (in place in the parent's buffer) */
        small = nl <= nrr ? L : R;
        big = small == L ? R : L;
        if (hist_bytes + hsize * sizeof(double) > MLSYS__CLOUD_HIST_BUDGET) {
          mlsys__cloud_hput(&pool, nd->hist);   /* over the cap: both children rebuild their histograms later */
          hist_bytes -= hsize * sizeof(double);
          nd->hist = NULL;
          continue;
        }
        small->hist = mlsys__cloud_hget(&pool);
        if (!small->hist) { st = MLSYS_ERR_NOMEM; goto done; }
        hist_bytes += hsize * sizeof(double);
        mlsys__cloud_build_hist(&d, rows, small->begin, small->end, gh, small->hist, NULL);
        {
          size_t z;
          for (z = 0; z < pool.len; z++) nd->hist[z] -= small->hist[z];
        }
        big->hist = nd->hist;
        nd->hist = NULL;
      }
      {
        mlsys__cloud_tnode *sw = level;
        level = next;
        next = sw;
      }
      nlev = nnext;
    }
    /* a leaf can overflow float when the hessian is tiny (pseudo-Huber far from the labels, λ = 0): say so rather
       than train on inf */
    for (i = 0; i < tb.n; i++)
      if (tb.left[i] < 0 && !isfinite(tb.cond[i])) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "%s: tree %d: a leaf weight overflows float32 (hessian sum %g; raise "
                             "lambda or min_child_weight, or rescale y)", fn, t, (double)tb.cover[i]);
        goto done;
      }
    for (i = 0; bad && i < nrow; i++)   /* the first such row */
      if (!isfinite(pred[i])) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "%s: tree %d: the prediction of row %d overflows float32", fn, t, i);
        goto done;
      }
    snprintf(what, sizeof what, "%s: tree %d", fn, t);
    st = mlsys__cloud_add_tree(m, tb.n, tb.left, tb.right, tb.feat, tb.cond, tb.dl, tb.gain, tb.cover, what, NULL);
    if (st) goto done;
    if (!credit) {
      const mlsys__cloud_node *nd = m->nodes;
      for (i = 0; i < nrow; i++) {
        int32_t k = m->tree_off[t];
        const float *x = X + (size_t)i * ncol;
        while (nd[k].left >= 0) {
          float v = x[nd[k].info & MLSYS__CLOUD_FEAT_MASK];
          k = nd[k].left + (isnan(v) ? !(nd[k].info >> 31) : !(v < nd[k].value));
        }
        pred[i] += nd[k].value;
        if (!isfinite(pred[i])) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "%s: tree %d: the prediction of row %d overflows float32", fn, t, i);
          goto done;
        }
      }
    }
  }
done:
  if (level) {
    for (i = 0; i < cap_level; i++) mlsys_free(level[i].hist);
  }
  if (next) {
    for (i = 0; i < cap_level; i++) mlsys_free(next[i].hist);
  }
  for (i = 0; i < pool.n; i++) mlsys_free(pool.buf[i]);
  mlsys_free(pool.buf);
  mlsys_free(level);
  mlsys_free(next);
  mlsys__cloud_tbuf_free(&tb);
  mlsys_free(rows);
  mlsys_free(iota);
  mlsys_free(tmp);
  mlsys_free(pred);
  mlsys_free(gh);
  mlsys_free(d.fbase);
  mlsys_free(d.nb);
  mlsys_free(d.hoff);
  mlsys_free(d.midx);
  mlsys_free(d.mcnt);
  mlsys_free(d.cuts);
  mlsys_free(d.minv);
  mlsys_free(d.rbin);
  mlsys_free(d.cbin);
  if (st) {
    mlsys_cloud_gbdt_free(m);
    if (st == MLSYS_ERR_NOMEM && !*mlsys_last_error())
      mlsys_set_error(st, "%s: out of memory", fn);
    return st;
  }
  *out = m;
  return MLSYS_OK;
}

/* ---------- saving and loading ---------- */

static const char *mlsys__cloud_obj_name(mlsys_cloud_obj o) {
  return o == MLSYS_CLOUD_OBJ_SQUARED ? "squared" : o == MLSYS_CLOUD_OBJ_PSEUDO_HUBER ? "pseudo_huber" : "other";
}

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_save(const mlsys_cloud_gbdt *m, FILE *f) {
  int t, k;
  if (!m || !f) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_save: NULL model or stream");
  fprintf(f, "mlsys-cloud-gbdt 1\n");
  fprintf(f, "objective %s %.17g\n", mlsys__cloud_obj_name(m->obj), m->huber_slope);
  fprintf(f, "nfeatures %d\n", m->nfeat);
  fprintf(f, "base_score %.17g\n", m->base_score);
  fprintf(f, "ntrees %d\n", m->ntrees);
  for (t = 0; t < m->ntrees; t++) {
    int b = m->tree_off[t], n = m->tree_off[t + 1] - b;
    fprintf(f, "tree %d %d\n", t, n);
    for (k = b; k < b + n; k++) {
      const mlsys__cloud_node *nd = &m->nodes[k];
      if (nd->left < 0)
        fprintf(f, "l %.9g %.9g\n", (double)nd->value, (double)m->cover[k]);
      else
        fprintf(f, "s %u %.9g %d %d %u %.9g %.9g\n", nd->info & MLSYS__CLOUD_FEAT_MASK, (double)nd->value,
                nd->left - b, nd->left - b + 1, nd->info >> 31, (double)m->gain[k], (double)m->cover[k]);
    }
  }
  fprintf(f, "end\n");
  if (fflush(f) != 0 || ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "mlsys_cloud_gbdt_save: write failed");
  return MLSYS_OK;
}

/* Line reader over a private NUL-terminated copy: each call returns the next line (without "\r\n") or NULL. */
typedef struct {
  char *buf, *p, *end;
  int line;
} mlsys__cloud_lines;

static char *mlsys__cloud_next_line(mlsys__cloud_lines *L) {
  char *s, *e;
  if (L->p >= L->end) return NULL;
  s = L->p;
  e = (char *)memchr(s, '\n', (size_t)(L->end - s));
  if (!e) e = L->end;
  *e = 0;
  L->p = e + 1;
  if (e > s && e[-1] == '\r') e[-1] = 0;
  L->line++;
  return s;
}

/* A decimal integer that starts right here (no space or '+' skipped), in [lo, hi]; hand-rolled so that overflow
   needs no errno. */
static int mlsys__cloud_int(const char **p, int allow_neg, long lo, long hi, long *out) {
  const char *s = *p;
  int neg = 0;
  long v = 0;
  if (allow_neg && *s == '-') { neg = 1; s++; }
  if (!(*s >= '0' && *s <= '9')) return 0;
  while (*s >= '0' && *s <= '9') {
    if (v > (INT32_MAX - (*s - '0')) / 10) return 0;   /* every caller's range fits in int32 */
    v = v * 10 + (*s++ - '0');
  }
  if (neg) v = -v;
  if (v < lo || v > hi) return 0;
  *out = v;
  *p = s;
  return 1;
}

/* A float32 number that starts right here, parsed with strtof (nearest float, no double rounding). */
static int mlsys__cloud_float(const char **p, float *out) {
  const char *s = *p;
  char *e;
  if (!*s || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') return 0;
  *out = strtof(s, &e);
  if (e == s) return 0;
  *p = e;
  return 1;
}

static int mlsys__cloud_lit(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n) != 0) return 0;
  *p += n;
  return 1;
}

static const char *mlsys__cloud_skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* Node arrays of one tree being read from a file. */
typedef struct {
  int n, cap;
  int32_t *id, *left, *right, *missing, *feat;
  float *cond, *gain, *cover;
  uint8_t *dl;
  int *line;
} mlsys__cloud_rtree;

static int mlsys__cloud_rtree_push(mlsys__cloud_rtree *t) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 64;
    void *p;
    if (cap > MLSYS__CLOUD_MAX_NODES) return -1;
#define MLSYS__CLOUD_GROW(field)                                                           \
    p = mlsys_realloc_array(t->field, (size_t)cap, sizeof *t->field);                     \
    if (!p) return -1;                                                                    \
    memcpy(&t->field, &p, sizeof p);
    MLSYS__CLOUD_GROW(id) MLSYS__CLOUD_GROW(left) MLSYS__CLOUD_GROW(right) MLSYS__CLOUD_GROW(missing)
    MLSYS__CLOUD_GROW(feat) MLSYS__CLOUD_GROW(cond) MLSYS__CLOUD_GROW(gain) MLSYS__CLOUD_GROW(cover)
    MLSYS__CLOUD_GROW(dl) MLSYS__CLOUD_GROW(line)
#undef MLSYS__CLOUD_GROW
    t->cap = cap;
  }
  t->id[t->n] = t->n;
  t->left[t->n] = t->right[t->n] = t->missing[t->n] = -1;
  t->feat[t->n] = 0;
  t->cond[t->n] = 0.0f;
  t->gain[t->n] = NAN;
  t->cover[t->n] = NAN;
  t->dl[t->n] = 0;
  t->line[t->n] = 0;
  return t->n++;
}

static void mlsys__cloud_rtree_free(mlsys__cloud_rtree *t) {
  mlsys_free(t->id);
  mlsys_free(t->left);
  mlsys_free(t->right);
  mlsys_free(t->missing);
  mlsys_free(t->feat);
  mlsys_free(t->cond);
  mlsys_free(t->gain);
  mlsys_free(t->cover);
  mlsys_free(t->dl);
  mlsys_free(t->line);
  memset(t, 0, sizeof *t);
}

/* ours: "mlsys-cloud-gbdt 1" */
static mlsys_status mlsys__cloud_load_ours(mlsys__cloud_lines *L, const char *src, mlsys_cloud_gbdt *m) {
  mlsys__cloud_rtree rt;
  char *s, what[96];
  const char *p;
  long v, ntrees = 0, t, k, nn;
  char objname[16];
  double slope, bs;
  mlsys_status st = MLSYS_OK;
  memset(&rt, 0, sizeof rt);
#define MLSYS__CLOUD_BAD(...)                                                              \
  do {                                                                                     \
    st = mlsys_set_error(MLSYS_ERR_PARSE, __VA_ARGS__);                                    \
    goto done;                                                                             \
  } while (0)
  s = mlsys__cloud_next_line(L);
  if (!s || strcmp(s, "mlsys-cloud-gbdt 1") != 0)
    MLSYS__CLOUD_BAD("%s:%d: expected 'mlsys-cloud-gbdt 1' (this reader knows version 1)", src, L->line);
  s = mlsys__cloud_next_line(L);
  if (!s || sscanf(s, "objective %15s %lf", objname, &slope) != 2 || !(slope > 0) || !isfinite(slope))
    MLSYS__CLOUD_BAD("%s:%d: expected 'objective <name> <huber_slope>'", src, L->line);
  m->obj = strcmp(objname, "squared") == 0 ? MLSYS_CLOUD_OBJ_SQUARED
           : strcmp(objname, "pseudo_huber") == 0 ? MLSYS_CLOUD_OBJ_PSEUDO_HUBER : MLSYS_CLOUD_OBJ_OTHER;
  m->huber_slope = slope;
  s = mlsys__cloud_next_line(L);
  p = s;
  if (!s || !mlsys__cloud_lit(&p, "nfeatures ") || !mlsys__cloud_int(&p, 0, 0, MLSYS__CLOUD_MAX_FEATURES, &v) || *p)
    MLSYS__CLOUD_BAD("%s:%d: expected 'nfeatures <n>' with n in [0, %d]", src, L->line, MLSYS__CLOUD_MAX_FEATURES);
  m->nfeat = (int)v;
  s = mlsys__cloud_next_line(L);
  if (!s || strncmp(s, "base_score ", 11) != 0)
    MLSYS__CLOUD_BAD("%s:%d: expected 'base_score <value>'", src, L->line);
  {
    char *e;
    bs = strtod(s + 11, &e);
    if (e == s + 11 || *e || !isfinite(bs)) MLSYS__CLOUD_BAD("%s:%d: base_score is not a finite number", src, L->line);
    m->base_score = bs;
  }
  s = mlsys__cloud_next_line(L);
  p = s;
  if (!s || !mlsys__cloud_lit(&p, "ntrees ") || !mlsys__cloud_int(&p, 0, 0, 100000000, &ntrees) || *p)
    MLSYS__CLOUD_BAD("%s:%d: expected 'ntrees <n>'", src, L->line);
  for (t = 0; t < ntrees; t++) {
    long tid;
    s = mlsys__cloud_next_line(L);
    p = s;
    if (!s || !mlsys__cloud_lit(&p, "tree ") || !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &tid) || tid != t ||
        !mlsys__cloud_lit(&p, " ") || !mlsys__cloud_int(&p, 0, 1, MLSYS__CLOUD_MAX_NODES, &nn) || *p)
      MLSYS__CLOUD_BAD("%s:%d: expected 'tree %ld <nodes>' (ntrees says %ld)", src, L->line, t, ntrees);
    rt.n = 0;
    for (k = 0; k < nn; k++) {
      int j;
      long f, l, r, dl;
      s = mlsys__cloud_next_line(L);
      if (!s) MLSYS__CLOUD_BAD("%s:%d: tree %ld ends after %ld of %ld nodes", src, L->line, t, k, nn);
      if ((j = mlsys__cloud_rtree_push(&rt)) < 0) { st = MLSYS_ERR_NOMEM; goto done; }
      p = s;
      if (mlsys__cloud_lit(&p, "l ")) {
        if (!mlsys__cloud_float(&p, &rt.cond[j]) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_float(&p, &rt.cover[j]) || *p)
          MLSYS__CLOUD_BAD("%s:%d: expected 'l <value> <cover>'", src, L->line);
      } else if (mlsys__cloud_lit(&p, "s ")) {
        if (!mlsys__cloud_int(&p, 0, 0, MLSYS__CLOUD_MAX_FEATURES - 1, &f) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_float(&p, &rt.cond[j]) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &l) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &r) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_int(&p, 0, 0, 1, &dl) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_float(&p, &rt.gain[j]) || !mlsys__cloud_lit(&p, " ") ||
            !mlsys__cloud_float(&p, &rt.cover[j]) || *p)
          MLSYS__CLOUD_BAD("%s:%d: expected 's <feature> <threshold> <left> <right> <default_left> <gain> <cover>'",
                           src, L->line);
        if (f >= m->nfeat)
          MLSYS__CLOUD_BAD("%s:%d: feature index %ld >= nfeatures %d", src, L->line, f, m->nfeat);
        rt.feat[j] = (int32_t)f;
        rt.left[j] = (int32_t)l;
        rt.right[j] = (int32_t)r;
        rt.dl[j] = (uint8_t)dl;
      } else {
        MLSYS__CLOUD_BAD("%s:%d: expected a node line 'l ...' or 's ...'", src, L->line);
      }
    }
    snprintf(what, sizeof what, "%s: tree %ld", src, t);
    {
      int nreach = 0;
      st = mlsys__cloud_add_tree(m, rt.n, rt.left, rt.right, rt.feat, rt.cond, rt.dl, rt.gain, rt.cover, what,
                                 &nreach);
      if (st) goto done;
      if (nreach != rt.n)
        MLSYS__CLOUD_BAD("%s: %d of its %d nodes are not reachable from node 0", what, rt.n - nreach, rt.n);
    }
  }
  s = mlsys__cloud_next_line(L);
  if (!s || strcmp(s, "end") != 0) MLSYS__CLOUD_BAD("%s:%d: expected 'end' after %ld trees", src, L->line, ntrees);
done:
  mlsys__cloud_rtree_free(&rt);
  return st;
}

static int mlsys__cloud_cmp_id(const void *a, const void *b) {
  int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
  return (x > y) - (x < y);
}

/* Finish one "booster[K]" of a text dump: node ids are sorted (root 0 first), yes/no/missing ids are mapped to
   positions, and the tree is appended. */
static mlsys_status mlsys__cloud_dump_tree(mlsys__cloud_rtree *rt, const char *src, int K, mlsys_cloud_gbdt *m) {
  int32_t *pairs;
  int i, n = rt->n, nreach = 0;
  int32_t *left = NULL, *right = NULL, *feat = NULL;
  float *cond = NULL, *gain = NULL, *cover = NULL;
  uint8_t *dl = NULL;
  char what[96];
  mlsys_status st = MLSYS_OK;
  snprintf(what, sizeof what, "%s: booster[%d]", src, K);
  if (n == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s has no nodes", what);
  pairs = (int32_t *)mlsys_alloc((size_t)n, 2 * sizeof(int32_t));
  left = (int32_t *)mlsys_alloc((size_t)n, sizeof *left);
  right = (int32_t *)mlsys_alloc((size_t)n, sizeof *right);
  feat = (int32_t *)mlsys_alloc((size_t)n, sizeof *feat);
  cond = (float *)mlsys_alloc((size_t)n, sizeof *cond);
  gain = (float *)mlsys_alloc((size_t)n, sizeof *gain);
  cover = (float *)mlsys_alloc((size_t)n, sizeof *cover);
  dl = (uint8_t *)mlsys_alloc((size_t)n, sizeof *dl);
  if (!pairs || !left || !right || !feat || !cond || !gain || !cover || !dl) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (i = 0; i < n; i++) {
    pairs[2 * i] = rt->id[i];
    pairs[2 * i + 1] = i;
  }
  qsort(pairs, (size_t)n, 2 * sizeof(int32_t), mlsys__cloud_cmp_id);
  for (i = 0; i < n; i++) {
    if (i > 0 && pairs[2 * i] == pairs[2 * i - 2]) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: node id %d appears twice in booster[%d]", src,
                           rt->line[pairs[2 * i + 1]], (int)pairs[2 * i], K);
      goto done;
    }
  }
  if (pairs[0] != 0) {
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s has no node 0 (the root)", what);
    goto done;
  }
  for (i = 0; i < n; i++) {
    int r = pairs[2 * i + 1], c;
    left[i] = right[i] = -1;
    feat[i] = rt->feat[r];
    cond[i] = rt->cond[r];
    gain[i] = rt->gain[r];
    cover[i] = rt->cover[r];
    dl[i] = 0;
    if (rt->left[r] < 0) continue;
    for (c = 0; c < 2; c++) {
      int32_t want = c == 0 ? rt->left[r] : rt->right[r];
      int lo = 0, hi = n - 1, found = -1;
      while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (pairs[2 * mid] == want) { found = mid; break; }
        if (pairs[2 * mid] < want) lo = mid + 1; else hi = mid - 1;
      }
      if (found < 0) {
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: child %d of node %d is not in booster[%d]", src, rt->line[r],
                             (int)want, (int)rt->id[r], K);
        goto done;
      }
      if (c == 0) left[i] = found; else right[i] = found;
    }
    if (rt->missing[r] == rt->left[r]) dl[i] = 1;
    else if (rt->missing[r] != rt->right[r]) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: missing=%d of node %d is neither yes=%d nor no=%d", src,
                           rt->line[r], (int)rt->missing[r], (int)rt->id[r], (int)rt->left[r], (int)rt->right[r]);
      goto done;
    }
  }
  st = mlsys__cloud_add_tree(m, n, left, right, feat, cond, dl, gain, cover, what, &nreach);
  if (!st && nreach != n)
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: %d of its %d nodes are not reachable from node 0", what, n - nreach, n);
done:
  mlsys_free(pairs);
  mlsys_free(left);
  mlsys_free(right);
  mlsys_free(feat);
  mlsys_free(cond);
  mlsys_free(gain);
  mlsys_free(cover);
  mlsys_free(dl);
  return st;
}

/* XGBoost text dump (tree_model.cc TextGenerator): "booster[K]:" then one node per line, indented by depth:
   "ID:[fF<T] yes=A,no=B,missing=C[,gain=G,cover=H]" or "ID:leaf=V[,cover=H]". */
static mlsys_status mlsys__cloud_load_dump(mlsys__cloud_lines *L, const char *src, mlsys_cloud_gbdt *m) {
  mlsys__cloud_rtree rt;
  char *s;
  const char *p;
  int K = -1;
  mlsys_status st = MLSYS_OK;
  memset(&rt, 0, sizeof rt);
  while ((s = mlsys__cloud_next_line(L)) != NULL) {
    long id, v, yes, no, miss;
    int j;
    p = mlsys__cloud_skip_ws(s);
    if (!*p) continue;
    if (mlsys__cloud_lit(&p, "booster[")) {
      if (!mlsys__cloud_int(&p, 0, 0, INT32_MAX, &v) || !mlsys__cloud_lit(&p, "]:") || *mlsys__cloud_skip_ws(p))
        MLSYS__CLOUD_BAD("%s:%d: expected 'booster[<index>]:'", src, L->line);
      if (v != K + 1) MLSYS__CLOUD_BAD("%s:%d: expected booster[%d], got booster[%ld]", src, L->line, K + 1, v);
      if (K >= 0 && (st = mlsys__cloud_dump_tree(&rt, src, K, m)) != MLSYS_OK) goto done;
      rt.n = 0;
      K = (int)v;
      continue;
    }
    if (K < 0) MLSYS__CLOUD_BAD("%s:%d: a node line before the first 'booster[0]:'", src, L->line);
    if (!mlsys__cloud_int(&p, 0, 0, INT32_MAX, &id) || !mlsys__cloud_lit(&p, ":"))
      MLSYS__CLOUD_BAD("%s:%d: expected '<node id>:' at the start of the line", src, L->line);
    if ((j = mlsys__cloud_rtree_push(&rt)) < 0) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s:%d: out of memory (or more than %d nodes)", src, L->line,
                           MLSYS__CLOUD_MAX_NODES);
      goto done;
    }
    rt.id[j] = (int32_t)id;
    rt.line[j] = L->line;
    if (mlsys__cloud_lit(&p, "leaf=")) {
      if (!mlsys__cloud_float(&p, &rt.cond[j]))
        MLSYS__CLOUD_BAD("%s:%d: 'leaf=' is not followed by a number", src, L->line);
      if (mlsys__cloud_lit(&p, ",cover=") && !mlsys__cloud_float(&p, &rt.cover[j]))
        MLSYS__CLOUD_BAD("%s:%d: 'cover=' is not followed by a number", src, L->line);
    } else if (mlsys__cloud_lit(&p, "[")) {
      if (!mlsys__cloud_lit(&p, "f"))
        MLSYS__CLOUD_BAD("%s:%d: split feature is not of the form f<index> (a dump made with a feature map or "
                         "feature names cannot be read)", src, L->line);
      if (!mlsys__cloud_int(&p, 0, 0, MLSYS__CLOUD_MAX_FEATURES - 1, &v))
        MLSYS__CLOUD_BAD("%s:%d: bad feature index after 'f' (must be in [0, %d))", src, L->line,
                         MLSYS__CLOUD_MAX_FEATURES);
      rt.feat[j] = (int32_t)v;
      if (*p == ':') MLSYS__CLOUD_BAD("%s:%d: a categorical split (unsupported)", src, L->line);
      if (!mlsys__cloud_lit(&p, "<") || !mlsys__cloud_float(&p, &rt.cond[j]) || !mlsys__cloud_lit(&p, "] yes=") ||
          !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &yes) || !mlsys__cloud_lit(&p, ",no=") ||
          !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &no) || !mlsys__cloud_lit(&p, ",missing=") ||
          !mlsys__cloud_int(&p, 0, 0, INT32_MAX, &miss))
        MLSYS__CLOUD_BAD("%s:%d: expected '[f<index><<threshold>] yes=<id>,no=<id>,missing=<id>'", src, L->line);
      rt.left[j] = (int32_t)yes;
      rt.right[j] = (int32_t)no;
      rt.missing[j] = (int32_t)miss;
      if (mlsys__cloud_lit(&p, ",gain=")) {
        if (!mlsys__cloud_float(&p, &rt.gain[j]) || !mlsys__cloud_lit(&p, ",cover=") ||
            !mlsys__cloud_float(&p, &rt.cover[j]))
          MLSYS__CLOUD_BAD("%s:%d: expected ',gain=<g>,cover=<c>'", src, L->line);
      }
    } else {
      MLSYS__CLOUD_BAD("%s:%d: expected 'leaf=' or '[' after the node id", src, L->line);
    }
    if (*mlsys__cloud_skip_ws(p)) MLSYS__CLOUD_BAD("%s:%d: unexpected text at the end of the line", src, L->line);
  }
  if (K < 0) MLSYS__CLOUD_BAD("%s: no 'booster[0]:' line", src);
  st = mlsys__cloud_dump_tree(&rt, src, K, m);
  if (!st) m->nfeat = m->used_feat;
done:
  mlsys__cloud_rtree_free(&rt);
  return st;
}

/* An XGBoost JSON string holding a number: "5E-1" (1.x) or "[5E-1]" (2.x vector form). */
static int mlsys__cloud_strnum(const char *s, double *out) {
  char *e;
  double v;
  int br = 0;
  if (!s) return 0;
  while (*s == ' ') s++;
  if (*s == '[') { br = 1; s++; }
  if (!*s || *s == ' ') return 0;
  v = strtod(s, &e);
  if (e == s) return 0;
  if (br) {
    if (*e != ']') return 0;
    e++;
  }
  if (*e) return 0;
  *out = v;
  return 1;
}

/* A tree's array member; all must have the same length n (the first read sets it). */
static mlsys_status mlsys__cloud_json_arr(const mlsys_json *tree, const char *key, int required, int *n,
                                          const mlsys_json **out) {
  mlsys_status st = mlsys_json_get_typed(tree, key, MLSYS_JSON_ARRAY, required, out);
  if (st) return st;
  if (!*out) return MLSYS_OK;
  if (*n < 0) *n = (*out)->count;
  else if ((*out)->count != *n)
    return mlsys_json_error_at(*out, "'%s' has %d elements, the tree has %d nodes", key, (*out)->count, *n);
  return MLSYS_OK;
}

/* An UNSUPPORTED error at a JSON value's position ("src:line:col: ..."), as mlsys_json_error_at does for PARSE. */
static mlsys_status mlsys__cloud_json_unsup(const mlsys_json *v, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static mlsys_status mlsys__cloud_json_unsup(const mlsys_json *v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s:%d:%d: %s", v && v->src ? v->src : "?", v ? v->line : 0,
                         v ? v->col : 0, msg);
}

static mlsys_status mlsys__cloud_load_json(const char *text, size_t len, const char *src, mlsys_cloud_gbdt *m) {
  mlsys_json_doc doc;
  const mlsys_json *root, *learner, *lmp, *obj, *gb, *model, *trees, *tinfo, *v;
  const char *str;
  double x;
  int i, t;
  mlsys_status st;
  int32_t *left = NULL, *right = NULL, *feat = NULL;
  float *cond = NULL, *gain = NULL, *cover = NULL;
  uint8_t *dl = NULL;
  memset(&doc, 0, sizeof doc);
  st = mlsys_json_parse(text, len, src, &doc);
  if (st) return st;
  root = doc.root;
  if (root->type != MLSYS_JSON_OBJECT) {
    st = mlsys_json_error_at(root, "an XGBoost model is a JSON object");
    goto done;
  }
  if ((st = mlsys_json_get_typed(root, "learner", MLSYS_JSON_OBJECT, 1, &learner)) != MLSYS_OK) goto done;
  if ((st = mlsys_json_get_typed(learner, "learner_model_param", MLSYS_JSON_OBJECT, 1, &lmp)) != MLSYS_OK) goto done;
  if ((st = mlsys_json_get_str(lmp, "base_score", 1, NULL, &str)) != MLSYS_OK) goto done;
  if (!mlsys__cloud_strnum(str, &x) || !isfinite(x)) {
    st = mlsys_json_error_at(mlsys_json_get(lmp, "base_score"), "base_score \"%s\" is not a finite number", str);
    goto done;
  }
  m->base_score = (double)strtof(str[0] == '[' ? str + 1 : str, NULL);   /* XGBoost holds it as float */
  if ((st = mlsys_json_get_str(lmp, "num_feature", 0, "0", &str)) != MLSYS_OK) goto done;
  if (!mlsys__cloud_strnum(str, &x) || !(x >= 0 && x <= MLSYS__CLOUD_MAX_FEATURES) || x != floor(x)) {
    st = mlsys_json_error_at(mlsys_json_get(lmp, "num_feature"), "num_feature \"%s\" is not an integer in [0, %d]",
                             str, MLSYS__CLOUD_MAX_FEATURES);
    goto done;
  }
  m->nfeat = (int)x;
  if ((st = mlsys_json_get_str(lmp, "num_class", 0, "0", &str)) != MLSYS_OK) goto done;
  if (!mlsys__cloud_strnum(str, &x) || x > 1) {
    if (mlsys__cloud_strnum(str, &x))
      st = mlsys__cloud_json_unsup(mlsys_json_get(lmp, "num_class"), "num_class \"%s\": only single-output "
                                   "regression models are supported", str);
    else
      st = mlsys_json_error_at(mlsys_json_get(lmp, "num_class"), "num_class \"%s\" is not a number", str);
    goto done;
  }
  if ((st = mlsys_json_get_str(lmp, "num_target", 0, "1", &str)) != MLSYS_OK) goto done;
  if (!mlsys__cloud_strnum(str, &x) || x > 1) {
    st = mlsys__cloud_json_unsup(mlsys_json_get(lmp, "num_target"), "num_target \"%s\": only one target is supported", str);
    goto done;
  }
  m->obj = MLSYS_CLOUD_OBJ_SQUARED;
  if ((st = mlsys_json_get_typed(learner, "objective", MLSYS_JSON_OBJECT, 0, &obj)) != MLSYS_OK) goto done;
  if (obj) {
    static const char *const identity[] = {"reg:squarederror", "reg:linear", "reg:pseudohubererror",
                                           "reg:absoluteerror", "reg:squaredlogerror", "reg:quantileerror"};
    int ok = 0;
    if ((st = mlsys_json_get_str(obj, "name", 1, NULL, &str)) != MLSYS_OK) goto done;
    for (i = 0; i < (int)(sizeof identity / sizeof identity[0]); i++) ok |= strcmp(str, identity[i]) == 0;
    if (!ok) {
      st = mlsys__cloud_json_unsup(obj, "objective '%s' transforms its output (only identity-link regression objectives "
                          "are supported)", str);
      goto done;
    }
    if (strcmp(str, "reg:pseudohubererror") == 0) {
      const mlsys_json *ph = mlsys_json_get(obj, "pseudo_huber_param");
      const char *sl = NULL;
      m->obj = MLSYS_CLOUD_OBJ_PSEUDO_HUBER;
      if (ph && ph->type == MLSYS_JSON_OBJECT && mlsys_json_get_str(ph, "huber_slope", 0, "1", &sl) == MLSYS_OK &&
          mlsys__cloud_strnum(sl, &x) && x > 0 && isfinite(x))
        m->huber_slope = x;
      mlsys_clear_error();
    } else if (strcmp(str, "reg:squarederror") != 0 && strcmp(str, "reg:linear") != 0) {
      m->obj = MLSYS_CLOUD_OBJ_OTHER;
    }
  }
  if ((st = mlsys_json_get_typed(learner, "gradient_booster", MLSYS_JSON_OBJECT, 1, &gb)) != MLSYS_OK) goto done;
  if ((st = mlsys_json_get_str(gb, "name", 1, NULL, &str)) != MLSYS_OK) goto done;
  if (strcmp(str, "gbtree") != 0) {
    st = mlsys__cloud_json_unsup(gb, "booster '%s' is not supported (only gbtree)", str);
    goto done;
  }
  if ((st = mlsys_json_get_typed(gb, "model", MLSYS_JSON_OBJECT, 1, &model)) != MLSYS_OK) goto done;
  if ((st = mlsys_json_get_typed(model, "trees", MLSYS_JSON_ARRAY, 1, &trees)) != MLSYS_OK) goto done;
  if ((st = mlsys_json_get_typed(model, "tree_info", MLSYS_JSON_ARRAY, 0, &tinfo)) != MLSYS_OK) goto done;
  if (tinfo) {
    if (tinfo->count != trees->count) {
      st = mlsys_json_error_at(tinfo, "tree_info has %d entries for %d trees", tinfo->count, trees->count);
      goto done;
    }
    for (i = 0; i < tinfo->count; i++)
      if (tinfo->items[i].type != MLSYS_JSON_NUMBER || tinfo->items[i].num != 0) {
        st = mlsys__cloud_json_unsup(&tinfo->items[i], "tree %d belongs to output group %g: only one output is supported",
                            i, tinfo->items[i].num);
        goto done;
      }
  }
  for (t = 0; t < trees->count; t++) {
    const mlsys_json *tr = &trees->items[t], *aL, *aR, *aF, *aC, *aD, *aG = NULL, *aH = NULL, *aT = NULL;
    int n = -1, nreach = 0;
    char what[96];
    if (tr->type != MLSYS_JSON_OBJECT) {
      st = mlsys_json_error_at(tr, "tree %d is not an object", t);
      goto done;
    }
    if ((st = mlsys__cloud_json_arr(tr, "left_children", 1, &n, &aL)) ||
        (st = mlsys__cloud_json_arr(tr, "right_children", 1, &n, &aR)) ||
        (st = mlsys__cloud_json_arr(tr, "split_indices", 1, &n, &aF)) ||
        (st = mlsys__cloud_json_arr(tr, "split_conditions", 1, &n, &aC)) ||
        (st = mlsys__cloud_json_arr(tr, "default_left", 1, &n, &aD)) ||
        (st = mlsys__cloud_json_arr(tr, "loss_changes", 0, &n, &aG)) ||
        (st = mlsys__cloud_json_arr(tr, "sum_hessian", 0, &n, &aH)) ||
        (st = mlsys__cloud_json_arr(tr, "split_type", 0, &n, &aT)))
      goto done;
    if (n < 1 || n > MLSYS__CLOUD_MAX_NODES) {
      st = mlsys_json_error_at(tr, "tree %d has %d nodes (must be in [1, %d])", t, n, MLSYS__CLOUD_MAX_NODES);
      goto done;
    }
    if ((v = mlsys_json_get(tr, "tree_param")) && v->type == MLSYS_JSON_OBJECT &&
        mlsys_json_get_str(v, "num_nodes", 0, NULL, &str) == MLSYS_OK && str &&
        (!mlsys__cloud_strnum(str, &x) || x != n)) {
      st = mlsys_json_error_at(v, "tree %d: tree_param.num_nodes \"%s\" but the arrays have %d nodes", t, str, n);
      goto done;
    }
    mlsys_clear_error();
    left = (int32_t *)mlsys_alloc((size_t)n, sizeof *left);
    right = (int32_t *)mlsys_alloc((size_t)n, sizeof *right);
    feat = (int32_t *)mlsys_alloc((size_t)n, sizeof *feat);
    cond = (float *)mlsys_alloc((size_t)n, sizeof *cond);
    gain = (float *)mlsys_alloc((size_t)n, sizeof *gain);
    cover = (float *)mlsys_alloc((size_t)n, sizeof *cover);
    dl = (uint8_t *)mlsys_alloc((size_t)n, sizeof *dl);
    if (!left || !right || !feat || !cond || !gain || !cover || !dl) {
      st = MLSYS_ERR_NOMEM;
      goto done;
    }
    for (i = 0; i < n; i++) {
      const mlsys_json *l = &aL->items[i], *r = &aR->items[i], *f = &aF->items[i], *c = &aC->items[i],
                       *d = &aD->items[i];
      if (l->type != MLSYS_JSON_NUMBER || !l->is_int || l->i64 < -1 || l->i64 > INT32_MAX ||
          r->type != MLSYS_JSON_NUMBER || !r->is_int || r->i64 < -1 || r->i64 > INT32_MAX) {
        st = mlsys_json_error_at(l->type != MLSYS_JSON_NUMBER || !l->is_int || l->i64 < -1 || l->i64 > INT32_MAX ? l : r,
                                 "tree %d node %d: a child index must be an integer >= -1", t, i);
        goto done;
      }
      left[i] = (int32_t)l->i64;
      right[i] = (int32_t)r->i64;
      if (f->type != MLSYS_JSON_NUMBER || !f->is_int || f->i64 < 0 || f->i64 >= MLSYS__CLOUD_MAX_FEATURES) {
        st = mlsys_json_error_at(f, "tree %d node %d: split index must be an integer in [0, %d)", t, i,
                                 MLSYS__CLOUD_MAX_FEATURES);
        goto done;
      }
      feat[i] = (int32_t)f->i64;
      if (left[i] >= 0 && m->nfeat > 0 && feat[i] >= m->nfeat) {
        st = mlsys_json_error_at(f, "tree %d node %d splits on feature %d but num_feature is %d", t, i, feat[i],
                                 m->nfeat);
        goto done;
      }
      if (c->type != MLSYS_JSON_NUMBER) {
        st = mlsys_json_error_at(c, "tree %d node %d: split condition must be a number", t, i);
        goto done;
      }
      cond[i] = (float)c->num;
      if (d->type == MLSYS_JSON_BOOL) dl[i] = (uint8_t)(d->boolean != 0);
      else if (d->type == MLSYS_JSON_NUMBER && (d->num == 0 || d->num == 1)) dl[i] = (uint8_t)(d->num == 1);
      else {
        st = mlsys_json_error_at(d, "tree %d node %d: default_left must be 0, 1 or a boolean", t, i);
        goto done;
      }
      gain[i] = aG && aG->items[i].type == MLSYS_JSON_NUMBER ? (float)aG->items[i].num : NAN;
      cover[i] = aH && aH->items[i].type == MLSYS_JSON_NUMBER ? (float)aH->items[i].num : NAN;
      if (aT && !(aT->items[i].type == MLSYS_JSON_NUMBER && aT->items[i].num == 0)) {
        st = mlsys__cloud_json_unsup(&aT->items[i], "tree %d node %d: a categorical split (unsupported)", t, i);
        goto done;
      }
    }
    snprintf(what, sizeof what, "%s: tree %d", src, t);
    st = mlsys__cloud_add_tree(m, n, left, right, feat, cond, dl, gain, cover, what, &nreach);
    if (st) goto done;
    mlsys_free(left); mlsys_free(right); mlsys_free(feat); mlsys_free(cond);
    mlsys_free(gain); mlsys_free(cover); mlsys_free(dl);
    left = right = feat = NULL;
    cond = gain = cover = NULL;
    dl = NULL;
  }
  if (m->nfeat == 0) m->nfeat = m->used_feat;
done:
  mlsys_free(left); mlsys_free(right); mlsys_free(feat); mlsys_free(cond);
  mlsys_free(gain); mlsys_free(cover); mlsys_free(dl);
  mlsys_json_doc_free(&doc);
  return st;
}

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_load(const char *text, size_t len, const char *source_name,
                                             double base_score_for_dumps, mlsys_cloud_gbdt **out) {
  const char *src = source_name ? source_name : "<model>";
  size_t i = 0;
  mlsys_cloud_gbdt *m;
  mlsys__cloud_lines L;
  mlsys_status st;
  if (out) *out = NULL;
  if (!out || (!text && len > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_load: NULL text or output");
  if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
    i = 3;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
  m = mlsys__cloud_new();
  if (!m) return MLSYS_ERR_NOMEM;
  memset(&L, 0, sizeof L);
  if (i < len && text[i] == '{') {
    st = mlsys__cloud_load_json(text, len, src, m);
  } else {
    int ours = len - i >= 16 && memcmp(text + i, "mlsys-cloud-gbdt", 16) == 0;
    int dump = len - i >= 8 && memcmp(text + i, "booster[", 8) == 0;
    if (!ours && !dump) {
      mlsys_cloud_gbdt_free(m);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: not a GBDT model: expected XGBoost JSON ('{'), an XGBoost text "
                             "dump ('booster[0]:') or 'mlsys-cloud-gbdt'", src);
    }
    if (dump && isnan(base_score_for_dumps)) {
      mlsys_cloud_gbdt_free(m);
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: an XGBoost text dump carries no base_score: pass it (XGBoost 1.7's "
                             "default is 0.5)", src);
    }
    L.buf = (char *)mlsys_alloc(len - i + 1, 1);
    if (!L.buf) {
      mlsys_cloud_gbdt_free(m);
      return MLSYS_ERR_NOMEM;
    }
    memcpy(L.buf, text + i, len - i);
    L.buf[len - i] = 0;
    L.p = L.buf;
    L.end = L.buf + (len - i);
    /* line numbers count from the file's first line */
    { size_t k; for (k = 0; k < i; k++) if (text[k] == '\n') L.line++; }
    if (ours) {
      st = mlsys__cloud_load_ours(&L, src, m);
    } else {
      m->base_score = (double)(float)base_score_for_dumps;
      if (!isfinite(m->base_score)) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "%s: base_score_for_dumps %g is not a finite float", src,
                             base_score_for_dumps);
      } else {
        st = mlsys__cloud_load_dump(&L, src, m);
      }
    }
    mlsys_free(L.buf);
  }
  if (!st && m->nfeat < m->used_feat) {
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: a split uses feature %d but the model declares %d features", src,
                         m->used_feat - 1, m->nfeat);
  }
  if (st) {
    if (st == MLSYS_ERR_NOMEM && !*mlsys_last_error()) mlsys_set_error(st, "%s: out of memory", src);
    mlsys_cloud_gbdt_free(m);
    return st;
  }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_gbdt_load_file(const char *path, double base_score_for_dumps,
                                                  mlsys_cloud_gbdt **out) {
  char *data = NULL;
  size_t len = 0;
  mlsys_status st;
  if (out) *out = NULL;
  if (!path || !out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_cloud_gbdt_load_file: NULL path or output");
  st = mlsys_read_file(path, &data, &len);
  if (st) return st;
  st = mlsys_cloud_gbdt_load(data, len, path, base_score_for_dumps, out);
  mlsys_free(data);
  return st;
}

/* ---------- irreducible error ---------- */

static int mlsys__cloud_rowcmp(const float *X, int ncol, int a, int b) {
  const float *x = X + (size_t)a * ncol, *y = X + (size_t)b * ncol;
  int c;
  for (c = 0; c < ncol; c++) {
    int na = isnan(x[c]), nb = isnan(y[c]);
    if (na || nb) {
      if (na != nb) return na ? 1 : -1;
      continue;
    }
    if (x[c] < y[c]) return -1;
    if (x[c] > y[c]) return 1;
  }
  return 0;
}

MLSYS_DEF double mlsys_cloud_mape_lower_bound(const float *X, const float *y, int nrow, int ncol) {
  int *idx = NULL, *tmp = NULL, i, w, g0;
  double *ys = NULL, total = 0;
  const char *fn = "mlsys_cloud_mape_lower_bound";
  if (!X || !y || nrow < 1 || ncol < 1) {
    mlsys_set_error(MLSYS_ERR_ARG, "%s: needs X, y, nrow >= 1 and ncol >= 1 (got nrow %d, ncol %d)", fn, nrow, ncol);
    return NAN;
  }
  for (i = 0; i < nrow; i++)
    if (!(y[i] > 0) || !isfinite(y[i])) {
      mlsys_set_error(MLSYS_ERR_ARG, "%s: label y[%d] = %g must be finite and > 0 (MAPE divides by it)", fn, i, y[i]);
      return NAN;
    }
  idx = (int *)mlsys_alloc((size_t)nrow, sizeof *idx);
  tmp = (int *)mlsys_alloc((size_t)nrow, sizeof *tmp);
  ys = (double *)mlsys_alloc((size_t)nrow, sizeof *ys);
  if (!idx || !tmp || !ys) {
    mlsys_free(idx); mlsys_free(tmp); mlsys_free(ys);
    return NAN;
  }
  for (i = 0; i < nrow; i++) idx[i] = i;
  /* bottom-up merge sort of row indices by feature vector (stable; qsort has no context argument) */
  for (w = 1; w < nrow; w *= 2) {
    int lo;
    for (lo = 0; lo < nrow; lo += 2 * w) {
      int mid = lo + w < nrow ? lo + w : nrow, hi = lo + 2 * w < nrow ? lo + 2 * w : nrow, a = lo, b = mid, k = lo;
      while (a < mid && b < hi) tmp[k++] = mlsys__cloud_rowcmp(X, ncol, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
      while (a < mid) tmp[k++] = idx[a++];
      while (b < hi) tmp[k++] = idx[b++];
    }
    memcpy(idx, tmp, (size_t)nrow * sizeof *idx);
  }
  for (g0 = 0; g0 < nrow;) {
    int g1 = g0 + 1, n, j;
    double W = 0, acc = 0, c;
    while (g1 < nrow && mlsys__cloud_rowcmp(X, ncol, idx[g0], idx[g1]) == 0) g1++;
    n = g1 - g0;
    for (j = 0; j < n; j++) ys[j] = (double)y[idx[g0 + j]];
    /* insertion sort: groups are small (repeated probes of one configuration) */
    for (j = 1; j < n; j++) {
      double v = ys[j];
      int k = j - 1;
      while (k >= 0 && ys[k] > v) { ys[k + 1] = ys[k]; k--; }
      ys[k + 1] = v;
    }
    /* weighted median with weights 1/y: the smallest label whose cumulative weight reaches half the total
       minimises sum |c - y_j| / y_j (the objective is piecewise linear in c with slope changing sign there) */
    for (j = 0; j < n; j++) W += 1.0 / ys[j];
    c = ys[n - 1];
    for (j = 0; j < n; j++) {
      acc += 1.0 / ys[j];
      if (acc >= 0.5 * W) { c = ys[j]; break; }
    }
    for (j = 0; j < n; j++) total += fabs(c - ys[j]) / ys[j];
    g0 = g1;
  }
  mlsys_free(idx);
  mlsys_free(tmp);
  mlsys_free(ys);
  return total / nrow;
}
#undef MLSYS__CLOUD_BAD

/* ---- loopback bandwidth probe ----------------------------------------------------------------------------------
   Layout: the parent only supervises. Before forking it creates one listening socket per rank (127.0.0.1, port 0)
   and a result pipe; every rank is a child that inherits the listeners, so all ports are known before any child
   runs and no connect can race a listen. Rank r connects (non-blocking) to rank r+1's listener, then accepts rank
   r-1 on its own; a hello (magic, rank) checks who is on each end. Data only ever flows right on the connected
   socket and arrives from the left on the accepted one. Every step sends and receives at once on non-blocking
   sockets under poll(), so a chunk larger than the socket buffers cannot deadlock the ring. Children write fixed
   records (< PIPE_BUF, so atomic) to the pipe: rank 0 one per size with the mean time, any rank one on failure.
   The parent polls the pipe against the deadline; on an error record or the deadline it SIGKILLs every child,
   and it always reaps them all by pid before returning. Children also carry the deadline (plus a grace second) in
   every poll, so they end by themselves should the parent die. Buffers are allocated before fork (the children
   do not call malloc: the caller may have threads) and children leave with _exit (no stdio flush, no atexit). */

#define MLSYS__CLOUD_PROBE_MAX_RANKS 64
#define MLSYS__CLOUD_PROBE_MAX_BYTES ((size_t)1 << 30)
#define MLSYS__CLOUD_PROBE_MAGIC 0x54465253u /* "SRFT" */
#define MLSYS__CLOUD_PROBE_MSG 224

enum { MLSYS__CLOUD_PROBE_REC_ROW = 1, MLSYS__CLOUD_PROBE_REC_ERR = 2 };
typedef struct {
  int kind, rank, status, size_idx;
  double t_s;
  char msg[MLSYS__CLOUD_PROBE_MSG];
} mlsys__cloud_probe_rec; /* 248 bytes, one write(): below PIPE_BUF, so records from several ranks never interleave */

typedef struct {
  int rank, n, left, right; /* left: accepted from rank-1 (receive); right: connected to rank+1 (send) */
  float *buf, *scratch;
  double deadline;
  int status;
  char msg[MLSYS__CLOUD_PROBE_MSG];
} mlsys__cloud_probe_ctx;

MLSYS_DEF void mlsys_cloud_probe_opts_default(mlsys_cloud_probe_opts *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->nranks = 2;
  o->min_bytes = 4;
  o->max_bytes = (size_t)64 << 20;
  o->warmup = 2;
  o->iters = 5;
  o->timeout_s = 120;
  o->n_async = 1;
}

static size_t mlsys__cloud_probe_pow2(size_t x) {
  size_t p = 4;
  while (p < x) p <<= 1;
  return p;
}

MLSYS_DEF int mlsys_cloud_probe_nsizes(size_t min_bytes, size_t max_bytes) {
  size_t a, b;
  int k = 1;
  if (min_bytes < 4 || max_bytes < min_bytes || max_bytes > MLSYS__CLOUD_PROBE_MAX_BYTES) return 0;
  a = mlsys__cloud_probe_pow2(min_bytes);
  b = mlsys__cloud_probe_pow2(max_bytes);
  while (a < b) a <<= 1, k++;
  return k;
}

static double mlsys__cloud_probe_busbw(double s, int n, double t) {
  return n <= 1 || !(t > 0) ? 0 : 2.0 * s * (n - 1) / ((double)n * t);
}

/* ---- child side ---- */
static int mlsys__cloud_probe_fail(mlsys__cloud_probe_ctx *c, mlsys_status st, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static int mlsys__cloud_probe_fail(mlsys__cloud_probe_ctx *c, mlsys_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  c->status = (int)st;
  return -1;
}

/* Milliseconds to wait in poll: until the deadline, at most 1 s at a time; < 0 once it has passed. */
static int mlsys__cloud_probe_wait_ms(double deadline) {
  double left = deadline - mlsys_now();
  if (!(left > 0)) return -1;
  if (left > 1.0) return 1000;
  return (int)(left * 1000.0) + 1;
}

/* Chunk c of count floats split n ways: the first count % n chunks get one float more (some may be empty). */
static void mlsys__cloud_probe_chunk(size_t count, int n, int c, size_t *off, size_t *len) {
  size_t base = count / (size_t)n, rem = count % (size_t)n, cc = (size_t)c;
  *off = cc * base + (cc < rem ? cc : rem);
  *len = base + (cc < rem ? 1 : 0);
}

/* Send slen bytes right and receive rlen bytes from the left at the same time. With acc, the received floats are
   added into acc[] as they complete (rb is then scratch); without, they land in rb. */
static int mlsys__cloud_probe_xfer(mlsys__cloud_probe_ctx *c, const char *sb, size_t slen, char *rb, size_t rlen,
                                   float *acc) {
  size_t sent = 0, got = 0, done = 0;
  int lrank = (c->rank + c->n - 1) % c->n, rrank = (c->rank + 1) % c->n;
  while (sent < slen || got < rlen) {
    int progress = 0;
    if (sent < slen) {
      ssize_t k = send(c->right, sb + sent, slen - sent, MSG_NOSIGNAL);
      if (k > 0) {
        sent += (size_t)k;
        progress = 1;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: send to rank %d failed: %s (did it fail?)",
                                       c->rank, rrank, strerror(errno));
      }
    }
    if (got < rlen) {
      ssize_t k = recv(c->left, rb + got, rlen - got, 0);
      if (k > 0) {
        got += (size_t)k;
        progress = 1;
        if (acc) {
          const float *src = (const float *)(const void *)rb;
          size_t m = got / sizeof(float), j;
          for (j = done; j < m; j++) acc[j] += src[j];
          done = m;
        }
      } else if (k == 0) {
        return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: rank %d closed the connection (did it fail?)",
                                       c->rank, lrank);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: receive from rank %d failed: %s", c->rank, lrank,
                                       strerror(errno));
      }
    }
    if (!progress && (sent < slen || got < rlen)) {
      struct pollfd p[2];
      int np = 0, ms = mlsys__cloud_probe_wait_ms(c->deadline);
      if (ms < 0) return mlsys__cloud_probe_fail(c, MLSYS_ERR_TIMEOUT, "rank %d: timed out in a transfer", c->rank);
      if (sent < slen) p[np].fd = c->right, p[np].events = POLLOUT, p[np].revents = 0, np++;
      if (got < rlen) p[np].fd = c->left, p[np].events = POLLIN, p[np].revents = 0, np++;
      if (poll(p, (nfds_t)np, ms) < 0 && errno != EINTR)
        return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: poll failed: %s", c->rank, strerror(errno));
    }
  }
  return 0;
}

/* A token around the ring: rank 0 sends, every other rank passes it on, rank 0 gets it back. */
static int mlsys__cloud_probe_barrier(mlsys__cloud_probe_ctx *c) {
  char t = 'B', u = 0;
  if (c->rank == 0) {
    if (mlsys__cloud_probe_xfer(c, &t, 1, NULL, 0, NULL) || mlsys__cloud_probe_xfer(c, NULL, 0, &u, 1, NULL)) return -1;
  } else {
    if (mlsys__cloud_probe_xfer(c, NULL, 0, &u, 1, NULL) || mlsys__cloud_probe_xfer(c, &t, 1, NULL, 0, NULL)) return -1;
  }
  if (u != 'B')
    return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: barrier token is 0x%02x, not 'B' (streams out of step)",
                                   c->rank, (unsigned)(unsigned char)u);
  return 0;
}

/* In-place ring allreduce (sum) of count floats in c->buf. */
static int mlsys__cloud_probe_allreduce(mlsys__cloud_probe_ctx *c, size_t count) {
  int n = c->n, r = c->rank, k;
  size_t so, sl, ro, rl;
  for (k = 0; k < n - 1; k++) { /* reduce-scatter: afterwards rank r holds the sum of chunk r+1 */
    mlsys__cloud_probe_chunk(count, n, (r - k + n) % n, &so, &sl);
    mlsys__cloud_probe_chunk(count, n, (r - k - 1 + 2 * n) % n, &ro, &rl);
    if (mlsys__cloud_probe_xfer(c, (const char *)(c->buf + so), sl * sizeof(float), (char *)c->scratch,
                                rl * sizeof(float), c->buf + ro))
      return -1;
  }
  for (k = 0; k < n - 1; k++) { /* allgather */
    mlsys__cloud_probe_chunk(count, n, (r + 1 - k + n) % n, &so, &sl);
    mlsys__cloud_probe_chunk(count, n, (r - k + n) % n, &ro, &rl);
    if (mlsys__cloud_probe_xfer(c, (const char *)(c->buf + so), sl * sizeof(float), (char *)(c->buf + ro),
                                rl * sizeof(float), NULL))
      return -1;
  }
  return 0;
}

/* Rank r's value at index i: (r mod 8) + 0.25 ((i + 3r) mod 13). Every partial sum is a multiple of 0.25 below 2^11,
   so the float sum is exact in any order; the per-rank phase makes a misplaced chunk show. */
static void mlsys__cloud_probe_fill(float *b, size_t count, int r) {
  size_t i;
  int j = (3 * r) % 13;
  float base = (float)(r % 8);
  for (i = 0; i < count; i++) {
    b[i] = base + 0.25f * (float)j;
    if (++j == 13) j = 0;
  }
}

static int mlsys__cloud_probe_check(mlsys__cloud_probe_ctx *c, size_t count, const float expect[13]) {
  size_t i;
  int j = 0;
  for (i = 0; i < count; i++) {
    if (c->buf[i] != expect[j])
      return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO,
                                     "verify: size %zu B, n %d: rank %d element %zu is %.9g, expected %.9g",
                                     count * sizeof(float), c->n, c->rank, i, (double)c->buf[i], (double)expect[j]);
    if (++j == 13) j = 0;
  }
  return 0;
}

static int mlsys__cloud_probe_nodelay(int fd) {
  int one = 1, fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
  return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void mlsys__cloud_probe_send_rec(int fd, const mlsys__cloud_probe_rec *rec) {
  const char *p = (const char *)rec;
  size_t left = sizeof *rec;
  while (left > 0) { /* one write in practice (< PIPE_BUF is atomic); the loop is only for EINTR */
    ssize_t k = write(fd, p, left);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k, left -= (size_t)k;
  }
}

static int mlsys__cloud_probe_connect(mlsys__cloud_probe_ctx *c, int listener, int right_port) {
  struct sockaddr_in a;
  uint32_t hello[2], got[2] = {0, 0};
  int lrank = (c->rank + c->n - 1) % c->n, rrank = (c->rank + 1) % c->n, ms, err = 0;
  socklen_t el = sizeof err;
  struct pollfd p;
  c->right = socket(AF_INET, SOCK_STREAM, 0);
  if (c->right < 0 || mlsys__cloud_probe_nodelay(c->right) < 0)
    return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: socket: %s", c->rank, strerror(errno));
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)right_port);
  if (connect(c->right, (struct sockaddr *)&a, sizeof a) < 0) {
    if (errno != EINPROGRESS && errno != EINTR)
      return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: connect to rank %d (127.0.0.1:%d): %s", c->rank,
                                     rrank, right_port, strerror(errno));
    for (;;) {
      if ((ms = mlsys__cloud_probe_wait_ms(c->deadline)) < 0)
        return mlsys__cloud_probe_fail(c, MLSYS_ERR_TIMEOUT, "rank %d: timed out connecting to rank %d", c->rank, rrank);
      p.fd = c->right, p.events = POLLOUT, p.revents = 0;
      if (poll(&p, 1, ms) > 0) break;
    }
    if (getsockopt(c->right, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0)
      return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: connect to rank %d (127.0.0.1:%d): %s", c->rank,
                                     rrank, right_port, strerror(err ? err : errno));
  }
  for (;;) {
    if ((ms = mlsys__cloud_probe_wait_ms(c->deadline)) < 0)
      return mlsys__cloud_probe_fail(c, MLSYS_ERR_TIMEOUT, "rank %d: timed out waiting for rank %d to connect",
                                     c->rank, lrank);
    p.fd = listener, p.events = POLLIN, p.revents = 0;
    if (poll(&p, 1, ms) > 0) break;
  }
  c->left = accept(listener, NULL, NULL);
  if (c->left < 0 || mlsys__cloud_probe_nodelay(c->left) < 0)
    return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: accept: %s", c->rank, strerror(errno));
  close(listener);
  hello[0] = MLSYS__CLOUD_PROBE_MAGIC, hello[1] = (uint32_t)c->rank;
  if (mlsys__cloud_probe_xfer(c, (const char *)hello, sizeof hello, (char *)got, sizeof got, NULL)) return -1;
  if (got[0] != MLSYS__CLOUD_PROBE_MAGIC || got[1] != (uint32_t)lrank)
    return mlsys__cloud_probe_fail(c, MLSYS_ERR_IO, "rank %d: the peer on its listener is not rank %d (hello %08x %u)",
                                   c->rank, lrank, (unsigned)got[0], (unsigned)got[1]);
  return 0;
}

static void mlsys__cloud_probe_child(mlsys__cloud_probe_ctx *c, const mlsys_cloud_probe_opts *o, int listener,
                                     int right_port, const size_t *sizes, int nsizes, int rec_fd) {
  mlsys__cloud_probe_rec rec;
  float expect[13];
  int si, it, j, r;
  memset(&rec, 0, sizeof rec);
  for (j = 0; j < 13; j++) { /* the exact sum over ranks, by index mod 13 */
    double s = 0;
    for (r = 0; r < c->n; r++) s += (double)(r % 8) + 0.25 * (double)((j + 3 * r) % 13);
    expect[j] = (float)s;
  }
  if (mlsys__cloud_probe_connect(c, listener, right_port)) goto fail;
  for (si = 0; si < nsizes; si++) {
    size_t count = sizes[si] / sizeof(float);
    double sum = 0;
    for (it = 0; it < o->warmup + o->iters; it++) {
      double t0, t1;
      if (it == 0 || o->verify) mlsys__cloud_probe_fill(c->buf, count, c->rank);
      if (mlsys__cloud_probe_barrier(c)) goto fail;
      t0 = mlsys_now();
      if (mlsys__cloud_probe_allreduce(c, count)) goto fail;
      t1 = mlsys_now();
      if (it >= o->warmup) sum += t1 - t0;
      if (o->verify && mlsys__cloud_probe_check(c, count, expect)) goto fail;
    }
    if (c->rank == 0) {
      rec.kind = MLSYS__CLOUD_PROBE_REC_ROW, rec.rank = 0, rec.size_idx = si, rec.t_s = sum / o->iters;
      mlsys__cloud_probe_send_rec(rec_fd, &rec);
    }
  }
  _exit(0);
fail:
  rec.kind = MLSYS__CLOUD_PROBE_REC_ERR, rec.rank = c->rank, rec.status = c->status;
  memcpy(rec.msg, c->msg, sizeof rec.msg);
  rec.msg[sizeof rec.msg - 1] = 0;
  mlsys__cloud_probe_send_rec(rec_fd, &rec);
  _exit(1);
}

/* ---- parent side ---- */
/* Reap every child (SIGKILL first when kill_first); st[r] gets its wait status, -1 if unknown. */
static void mlsys__cloud_probe_reap(pid_t *pids, int *st, int n, int kill_first) {
  int r;
  if (kill_first)
    for (r = 0; r < n; r++)
      if (pids[r] > 0) kill(pids[r], SIGKILL);
  for (r = 0; r < n; r++) {
    int s = 0;
    pid_t w;
    if (pids[r] <= 0) continue;
    do w = waitpid(pids[r], &s, 0);
    while (w < 0 && errno == EINTR);
    st[r] = w == pids[r] ? s : -1; /* ECHILD: someone else reaped it (a SIGCHLD handler) */
    pids[r] = -1;
  }
}

/* After an error report: a rank that already died of a signal, or exited other than through its own 0 (done) or 1
   (reported), is the likelier cause than its neighbours' complaints. */
static int mlsys__cloud_probe_find_crash(pid_t *pids, int *st, int n) {
  int r;
  for (r = 0; r < n; r++) {
    int s = 0;
    if (pids[r] > 0 && waitpid(pids[r], &s, WNOHANG) == pids[r]) {
      st[r] = s, pids[r] = -1;
      if (WIFSIGNALED(s) || (WIFEXITED(s) && WEXITSTATUS(s) > 1)) return r;
    }
  }
  return -1;
}

MLSYS_DEF mlsys_status mlsys_cloud_probe_tcp(const mlsys_cloud_probe_opts *o, mlsys_cloud_probe_row *rows,
                                             int max_rows, int *nrows) {
  int n, nsizes, r, i, pfd[2] = {-1, -1}, *lfd = NULL, *port = NULL, *st = NULL, *have = NULL, failed = 0;
  pid_t *pids = NULL;
  size_t *sizes = NULL, maxcount, have_bytes = 0;
  float *buf = NULL, *scratch = NULL;
  double *times = NULL, deadline;
  mlsys_status ret = MLSYS_OK;
  char rb[sizeof(mlsys__cloud_probe_rec) * 8];

  if (nrows) *nrows = 0;
  if (!o || !rows || !nrows) return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: options, rows and nrows are required");
  n = o->nranks;
  if (n < 2 || n > MLSYS__CLOUD_PROBE_MAX_RANKS)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: nranks %d is outside 2..%d", n, MLSYS__CLOUD_PROBE_MAX_RANKS);
  if (o->min_bytes < 4 || o->max_bytes < 4)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: buffer sizes %zu..%zu B: each must be at least 4 B (one float32)",
                           o->min_bytes, o->max_bytes);
  if (o->min_bytes > o->max_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: min_bytes %zu exceeds max_bytes %zu", o->min_bytes,
                           o->max_bytes);
  if (o->max_bytes > MLSYS__CLOUD_PROBE_MAX_BYTES)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "cloud probe: max_bytes %zu exceeds the limit of 1 GiB", o->max_bytes);
  if (o->warmup < 0 || o->iters < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: warmup %d must be >= 0 and iters %d >= 1", o->warmup, o->iters);
  if (!(o->timeout_s > 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: timeout_s %g must be > 0", o->timeout_s);
  if (o->n_async < 0 || o->n_async > 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: n_async %d: the loopback probe runs one allreduce at a time",
                           o->n_async);
  nsizes = mlsys_cloud_probe_nsizes(o->min_bytes, o->max_bytes);
  if (max_rows < nsizes)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe: max_rows %d is fewer than the %d sizes %zu..%zu B", max_rows,
                           nsizes, mlsys__cloud_probe_pow2(o->min_bytes), mlsys__cloud_probe_pow2(o->max_bytes));

  sizes = (size_t *)mlsys_alloc((size_t)nsizes, sizeof *sizes);
  times = (double *)mlsys_calloc((size_t)nsizes, sizeof *times);
  have = (int *)mlsys_calloc((size_t)nsizes, sizeof *have);
  pids = (pid_t *)mlsys_alloc((size_t)n, sizeof *pids);
  lfd = (int *)mlsys_alloc((size_t)n, sizeof *lfd);
  port = (int *)mlsys_alloc((size_t)n, sizeof *port);
  st = (int *)mlsys_alloc((size_t)n, sizeof *st);
  if (!sizes || !times || !have || !pids || !lfd || !port || !st) {
    ret = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (r = 0; r < n; r++) pids[r] = -1, lfd[r] = -1, st[r] = -1;
  sizes[0] = mlsys__cloud_probe_pow2(o->min_bytes);
  for (i = 1; i < nsizes; i++) sizes[i] = sizes[i - 1] * 2;
  maxcount = sizes[nsizes - 1] / sizeof(float);
  /* Allocated (not touched) here: each child writes its own copy-on-write pages. */
  buf = (float *)mlsys_alloc(maxcount, sizeof(float));
  scratch = (float *)mlsys_alloc(maxcount / (size_t)n + 1, sizeof(float));
  if (!buf || !scratch) {
    ret = mlsys_prefix_error("cloud probe: buffers of %zu B", sizes[nsizes - 1]);
    goto done;
  }

  if (pipe(pfd) < 0) {
    ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: pipe: %s", strerror(errno));
    goto done;
  }
  fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
  fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
  for (r = 0; r < n; r++) {
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    lfd[r] = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd[r] < 0 || fcntl(lfd[r], F_SETFD, FD_CLOEXEC) < 0 || bind(lfd[r], (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(lfd[r], 4) < 0 || getsockname(lfd[r], (struct sockaddr *)&a, &al) < 0) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: listening socket for rank %d on 127.0.0.1: %s", r,
                            strerror(errno));
      goto done;
    }
    port[r] = (int)ntohs(a.sin_port);
  }

  deadline = mlsys_now() + o->timeout_s;
  for (r = 0; r < n; r++) {
    pid_t p = fork();
    if (p == 0) {
      mlsys__cloud_probe_ctx c;
      int k;
      close(pfd[0]);
      for (k = 0; k < n; k++)
        if (k != r) close(lfd[k]);
      memset(&c, 0, sizeof c);
      c.rank = r, c.n = n, c.left = -1, c.right = -1, c.buf = buf, c.scratch = scratch;
      c.deadline = deadline + 1.0; /* the parent's deadline comes first; this one is for a parent that died */
      mlsys__cloud_probe_child(&c, o, lfd[r], port[(r + 1) % n], sizes, nsizes, pfd[1]);
      _exit(1); /* not reached */
    }
    if (p < 0) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: fork of rank %d: %s", r, strerror(errno));
      failed = 1;
      goto done;
    }
    pids[r] = p;
  }
  close(pfd[1]), pfd[1] = -1;
  for (r = 0; r < n; r++) close(lfd[r]), lfd[r] = -1;

  for (;;) { /* read records until every child has closed the pipe (exited), an error comes, or the deadline */
    struct pollfd p;
    ssize_t k;
    size_t off;
    int ms = mlsys__cloud_probe_wait_ms(deadline), stop = 0;
    if (ms < 0) {
      int ndone = 0;
      for (i = 0; i < nsizes; i++) ndone += have[i];
      ret = mlsys_set_error(MLSYS_ERR_TIMEOUT, "cloud probe: timed out after %g s (n %d, %d of %d sizes done)",
                            o->timeout_s, n, ndone, nsizes);
      failed = 1;
      goto done;
    }
    p.fd = pfd[0], p.events = POLLIN, p.revents = 0;
    if (poll(&p, 1, ms) <= 0) continue;
    k = read(pfd[0], rb + have_bytes, sizeof rb - have_bytes);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: reading the result pipe: %s", strerror(errno));
      failed = 1;
      goto done;
    }
    if (k == 0) break;
    have_bytes += (size_t)k;
    for (off = 0; off + sizeof(mlsys__cloud_probe_rec) <= have_bytes; off += sizeof(mlsys__cloud_probe_rec)) {
      mlsys__cloud_probe_rec rec;
      memcpy(&rec, rb + off, sizeof rec);
      if (rec.kind == MLSYS__CLOUD_PROBE_REC_ROW && rec.size_idx >= 0 && rec.size_idx < nsizes) {
        times[rec.size_idx] = rec.t_s, have[rec.size_idx] = 1;
      } else if (rec.kind == MLSYS__CLOUD_PROBE_REC_ERR) {
        int crash = mlsys__cloud_probe_find_crash(pids, st, n);
        rec.msg[sizeof rec.msg - 1] = 0;
        if (crash >= 0 && WIFSIGNALED(st[crash]))
          ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: rank %d was killed by signal %d (then %s)", crash,
                                WTERMSIG(st[crash]), rec.msg);
        else if (crash >= 0)
          ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: rank %d exited with status %d (then %s)", crash,
                                WEXITSTATUS(st[crash]), rec.msg);
        else
          ret = mlsys_set_error(rec.status > 0 && rec.status < MLSYS_ERR_COUNT_ ? (mlsys_status)rec.status
                                                                                   : MLSYS_ERR_IO,
                                "cloud probe: %s", rec.msg);
        stop = 1;
        break;
      }
    }
    if (stop) {
      failed = 1;
      goto done;
    }
    memmove(rb, rb + off, have_bytes - off);
    have_bytes -= off;
  }
  mlsys__cloud_probe_reap(pids, st, n, 0);
  for (r = 0; r < n; r++) {
    if (st[r] != -1 && WIFSIGNALED(st[r])) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: rank %d was killed by signal %d", r, WTERMSIG(st[r]));
      goto done;
    }
    if (st[r] != -1 && WIFEXITED(st[r]) && WEXITSTATUS(st[r]) != 0) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: rank %d exited with status %d without a report", r,
                            WEXITSTATUS(st[r]));
      goto done;
    }
  }
  for (i = 0; i < nsizes; i++)
    if (!have[i]) {
      ret = mlsys_set_error(MLSYS_ERR_IO, "cloud probe: no timing came back for %zu B (n %d)", sizes[i], n);
      goto done;
    }
  for (i = 0; i < nsizes; i++) {
    mlsys_cloud_probe_row *w = &rows[i];
    w->bytes = (double)sizes[i];
    w->n = n;
    w->n_async = 1;
    w->t_s = times[i];
    w->busbw = mlsys__cloud_probe_busbw(w->bytes, n, w->t_s);
    w->algbw = w->t_s > 0 ? w->bytes / w->t_s : 0;
  }
  *nrows = nsizes;

done:
  if (pids) mlsys__cloud_probe_reap(pids, st, n, failed);
  if (pfd[0] >= 0) close(pfd[0]);
  if (pfd[1] >= 0) close(pfd[1]);
  if (lfd)
    for (r = 0; r < n; r++)
      if (lfd[r] >= 0) close(lfd[r]);
  mlsys_free(sizes), mlsys_free(times), mlsys_free(have), mlsys_free(pids), mlsys_free(lfd), mlsys_free(port);
  mlsys_free(st), mlsys_free(buf), mlsys_free(scratch);
  return ret;
}

MLSYS_DEF mlsys_status mlsys_cloud_probe_write_csv(const mlsys_cloud_probe_row *rows, int n, FILE *f) {
  int i;
  if (!f || n < 0 || (n > 0 && !rows)) return mlsys_set_error(MLSYS_ERR_ARG, "cloud probe csv: no file or rows");
  fprintf(f, "bytes,n,n_async,t_s,busbw,algbw\n");
  for (i = 0; i < n; i++)
    fprintf(f, "%.17g,%d,%d,%.17g,%.17g,%.17g\n", rows[i].bytes, rows[i].n, rows[i].n_async, rows[i].t_s,
            rows[i].busbw, rows[i].algbw);
  if (ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "cloud probe csv: write failed: %s", strerror(errno));
  return MLSYS_OK;
}

/* ---- 10. the learned bandwidth model --------------------------------------------------------------------------- */
MLSYS_DEF void mlsys_cloud_bw_features(const mlsys_cloud_bwmodel *m, const mlsys_cloud_itype *it, double bytes, int n,
                                       int c, float x[MLSYS_CLOUD_BW_NFEAT]) {
  int i, code = -1;
  for (i = 0; m && i < m->ntypes; i++)
    if (!strcmp(m->type_name[i], it->name)) code = i;
  x[0] = code < 0 ? NAN : (float)code;
  x[1] = (float)it->cpu_cores, x[2] = (float)it->mem_gib, x[3] = (float)it->rated_gbps;
  x[4] = (float)log2(mlsys_cloud_pow2_ceil(bytes));
  x[5] = (float)n, x[6] = (float)c;
}

MLSYS_DEF double mlsys_cloud_bw_gbdt(void *ud, const mlsys_cloud_itype *it, double bytes, int n, int c) {
  const mlsys_cloud_bwmodel *m = (const mlsys_cloud_bwmodel *)ud;
  const mlsys_cloud_gbdt *g;
  float x[MLSYS_CLOUD_BW_NFEAT];
  double gbps;
  g = bytes <= (m->mtu > 0 ? m->mtu : MLSYS_CLOUD_MTU) ? (m->small ? m->small : m->large) : (m->large ? m->large : m->small);
  if (!g || mlsys_cloud_gbdt_nfeatures(g) > MLSYS_CLOUD_BW_NFEAT) return NAN; /* the simulator names it */
  mlsys_cloud_bw_features(m, it, bytes, n, c, x);
  gbps = mlsys_cloud_gbdt_predict(g, x);
  if (!(gbps > 1e-3)) gbps = 1e-3;
  return gbps * 1e9 / 8;
}

/* ---- 11. GPU parts ---------------------------------------------------------------------------------------------- */
#ifdef MLSYS_CLOUD_WITH_CUDA
#include <time.h>

static const char *const mlsys__cloud_timer_states[5] = {"not initialised", "idle", "in the forward pass",
                                                         "in the backward pass", "done"};

/* A call out of the documented order is the caller's bug: named before any CUDA call. */
static mlsys_status mlsys__cloud_timer_order(const mlsys_cloud_cuda_timer *t, const char *call, const char *need) {
  if (!t) return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: %s: no timer", call);
  return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: %s while the timer is %s (%s)", call,
                         t->state >= 0 && t->state <= 4 ? mlsys__cloud_timer_states[t->state] : "corrupt", need);
}

static mlsys_status mlsys__cloud_timer_record(mlsys_cloud_cuda_timer *t, cudaEvent_t ev, const char *what) {
  cudaError_t e = cudaEventRecord(ev, t->stream);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* a non-sticky error must not surface in the caller's next check */
    return mlsys_set_error(MLSYS_ERR_CUDA, "cloud cuda timer: cudaEventRecord (%s): %s", what, cudaGetErrorString(e));
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__cloud_timer_elapsed(cudaEvent_t a, cudaEvent_t b, double *s, const char *what) {
  float ms = 0;
  cudaError_t e = cudaEventElapsedTime(&ms, a, b);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return mlsys_set_error(MLSYS_ERR_CUDA, "cloud cuda timer: cudaEventElapsedTime (%s): %s", what,
                           cudaGetErrorString(e));
  }
  *s = (double)ms * 1e-3;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_cloud_cuda_timer_free(mlsys_cloud_cuda_timer *t) {
  int l;
  if (!t) return;
  if (t->fw_start) cudaEventDestroy(t->fw_start);
  if (t->fw_end) cudaEventDestroy(t->fw_end);
  if (t->bw_end) cudaEventDestroy(t->bw_end);
  for (l = 0; t->layer && l < t->nlayers; l++)
    if (t->layer[l]) cudaEventDestroy(t->layer[l]);
  mlsys_free(t->layer);
  memset(t, 0, sizeof *t);
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_timer_init(mlsys_cloud_cuda_timer *t, int nlayers, cudaStream_t stream) {
  cudaError_t e;
  int l;
  if (!t) return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: init: no timer");
  memset(t, 0, sizeof *t);
  if (nlayers < 0 || nlayers > (1 << 20))
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: %d layers (0..%d)", nlayers, 1 << 20);
  if (nlayers > 0 && !(t->layer = (cudaEvent_t *)mlsys_calloc((size_t)nlayers, sizeof *t->layer)))
    return mlsys_prefix_error("cloud cuda timer: events of %d layers", nlayers);
  t->stream = stream, t->nlayers = nlayers;
  if ((e = cudaEventCreate(&t->fw_start)) == cudaSuccess && (e = cudaEventCreate(&t->fw_end)) == cudaSuccess &&
      (e = cudaEventCreate(&t->bw_end)) == cudaSuccess)
    for (l = 0; l < nlayers && (e = cudaEventCreate(&t->layer[l])) == cudaSuccess; l++) {}
  if (e != cudaSuccess) {
    cudaGetLastError();
    mlsys_cloud_cuda_timer_free(t);
    return mlsys_set_error(MLSYS_ERR_CUDA, "cloud cuda timer: cudaEventCreate: %s", cudaGetErrorString(e));
  }
  t->state = 1;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_fw_start(mlsys_cloud_cuda_timer *t) {
  mlsys_status st;
  if (!t || t->state < 1 || t->state > 4) return mlsys__cloud_timer_order(t, "fw_start", "init it first");
  if ((st = mlsys__cloud_timer_record(t, t->fw_start, "forward start")) != MLSYS_OK) return st;
  t->state = 2, t->next = 0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_fw_end(mlsys_cloud_cuda_timer *t) {
  mlsys_status st;
  if (!t || t->state != 2) return mlsys__cloud_timer_order(t, "fw_end", "it follows fw_start");
  if ((st = mlsys__cloud_timer_record(t, t->fw_end, "forward end")) != MLSYS_OK) return st;
  t->state = 3;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_layer_ready(mlsys_cloud_cuda_timer *t, int layer) {
  mlsys_status st;
  if (!t || t->state != 3) return mlsys__cloud_timer_order(t, "layer_ready", "it follows fw_end");
  if (t->next >= t->nlayers)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: layer_ready(%d): all %d layers are marked already",
                           layer, t->nlayers);
  if (layer != t->next)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: layer_ready(%d): layer %d of %d is next (backward order, "
                           "each once)", layer, t->next, t->nlayers);
  if ((st = mlsys__cloud_timer_record(t, t->layer[layer], "layer ready")) != MLSYS_OK) return st;
  t->next++;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_bw_end(mlsys_cloud_cuda_timer *t) {
  mlsys_status st;
  if (!t || t->state != 3) return mlsys__cloud_timer_order(t, "bw_end", "it follows fw_end");
  if (t->next != t->nlayers)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: bw_end: layer %d of %d was never marked ready", t->next,
                           t->nlayers);
  if ((st = mlsys__cloud_timer_record(t, t->bw_end, "backward end")) != MLSYS_OK) return st;
  t->state = 4;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_cloud_cuda_timer_read(mlsys_cloud_cuda_timer *t, double *t_fw, double *t_bw,
                                                   double *layer_done_s) {
  mlsys_status st;
  cudaError_t e;
  int l;
  if (!t_fw || !t_bw) return mlsys_set_error(MLSYS_ERR_ARG, "cloud cuda timer: read: t_fw and t_bw are required");
  if (!t || t->state != 4) return mlsys__cloud_timer_order(t, "read", "it follows bw_end");
  if ((e = cudaEventSynchronize(t->bw_end)) != cudaSuccess) {
    cudaGetLastError();
    return mlsys_set_error(MLSYS_ERR_CUDA, "cloud cuda timer: cudaEventSynchronize (backward end): %s",
                           cudaGetErrorString(e));
  }
  if ((st = mlsys__cloud_timer_elapsed(t->fw_start, t->fw_end, t_fw, "forward")) != MLSYS_OK ||
      (st = mlsys__cloud_timer_elapsed(t->fw_end, t->bw_end, t_bw, "backward")) != MLSYS_OK)
    return st;
  for (l = 0; layer_done_s && l < t->nlayers; l++)
    if ((st = mlsys__cloud_timer_elapsed(t->fw_end, t->layer[l], &layer_done_s[l], "layer ready")) != MLSYS_OK)
      return st;
  return MLSYS_OK;
}
#endif /* MLSYS_CLOUD_WITH_CUDA */

#ifdef MLSYS_CLOUD_WITH_NCCL
#define MLSYS__CLOUD_NCCL_MAX_ASYNC 64
#define MLSYS__CLOUD_NCCL_STAGE ((size_t)13 << 16) /* host staging floats: whole periods of the fill pattern (13) */

static void mlsys__cloud_nap(void) {
  struct timespec ts;
  ts.tv_sec = 0, ts.tv_nsec = 20000;
  nanosleep(&ts, NULL);
}

/* A failed NCCL call: its name, NCCL's string and the communicator's last error (NCCL's own sentence). */
static mlsys_status mlsys__cloud_nccl_fail(ncclComm_t comm, ncclResult_t r, const char *call, size_t bytes) {
  const char *l = ncclGetLastError(comm);
  return mlsys_set_error(MLSYS_ERR_CUDA, "cloud nccl probe: %s (%zu B): %s%s%s", call, bytes, ncclGetErrorString(r),
                         l && *l ? ": " : "", l && *l ? l : "");
}

static mlsys_status mlsys__cloud_nccl_cuda_fail(cudaError_t e, const char *call, size_t bytes) {
  cudaGetLastError(); /* a non-sticky error must not surface in the caller's next check */
  return mlsys_set_error(MLSYS_ERR_CUDA, "cloud nccl probe: %s (%zu B): %s", call, bytes, cudaGetErrorString(e));
}

/* A nonblocking communicator answers ncclInProgress until a call is issued: wait for it, against the deadline. */
static mlsys_status mlsys__cloud_nccl_issued(ncclComm_t comm, ncclResult_t r, const char *call, size_t bytes,
                                             double deadline, double timeout_s) {
  while (r == ncclInProgress) {
    ncclResult_t q;
    if (mlsys_now() > deadline)
      return mlsys_set_error(MLSYS_ERR_TIMEOUT, "cloud nccl probe: %s (%zu B) still in progress after %g s", call,
                             bytes, timeout_s);
    mlsys__cloud_nap();
    if ((q = ncclCommGetAsyncError(comm, &r)) != ncclSuccess) r = q;
  }
  return r == ncclSuccess ? MLSYS_OK : mlsys__cloud_nccl_fail(comm, r, call, bytes);
}

/* One step: na allreduces of count floats from send into recv, recv + stride, ... (one NCCL group when na > 1, so
   they are in flight together). */
static mlsys_status mlsys__cloud_nccl_step(ncclComm_t comm, cudaStream_t s, const float *send, float *recv,
                                           size_t count, size_t stride, int na, double deadline, double timeout_s) {
  size_t bytes = count * sizeof(float);
  mlsys_status st;
  int a;
  if (na > 1 &&
      (st = mlsys__cloud_nccl_issued(comm, ncclGroupStart(), "ncclGroupStart", bytes, deadline, timeout_s)) != MLSYS_OK)
    return st;
  for (a = 0; a < na; a++) {
    ncclResult_t r = ncclAllReduce(send, recv + (size_t)a * stride, count, ncclFloat, ncclSum, comm, s);
    if ((st = mlsys__cloud_nccl_issued(comm, r, "ncclAllReduce", bytes, deadline, timeout_s)) != MLSYS_OK) {
      if (na > 1) ncclGroupEnd(); /* close the group: an open one would swallow the caller's next NCCL calls */
      return st;
    }
  }
  if (na > 1) return mlsys__cloud_nccl_issued(comm, ncclGroupEnd(), "ncclGroupEnd", bytes, deadline, timeout_s);
  return MLSYS_OK;
}

/* Device buffers are stream-ordered (cudaMallocAsync / cudaFreeAsync) where the device has memory pools, so a free
   never waits on an allreduce that may not finish; a sandbox or driver may not offer pools: then cudaMalloc, and a
   buffer whose stream still has work (a timed-out allreduce) is left allocated rather than waited for. */
static int mlsys__cloud_nccl_pools(void) {
  int dev = 0, pools = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return pools;
}
static void mlsys__cloud_nccl_free(void *p, cudaStream_t s, int pools) {
  if (!p) return;
  if (pools) cudaFreeAsync(p, s);
  else if (cudaStreamQuery(s) == cudaSuccess) cudaFree(p);
  cudaGetLastError();
}

/* Waits for ev by polling (never blocking in CUDA), watching the communicator's asynchronous errors and the deadline. */
static mlsys_status mlsys__cloud_nccl_wait(ncclComm_t comm, cudaEvent_t ev, size_t bytes, double deadline,
                                           double timeout_s) {
  for (;;) {
    ncclResult_t ar = ncclSuccess;
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return MLSYS_OK;
    if (e != cudaErrorNotReady) return mlsys__cloud_nccl_cuda_fail(e, "cudaEventQuery", bytes);
    if (ncclCommGetAsyncError(comm, &ar) == ncclSuccess && ar != ncclSuccess && ar != ncclInProgress)
      return mlsys__cloud_nccl_fail(comm, ar, "ncclAllReduce (asynchronous error)", bytes);
    if (mlsys_now() > deadline)
      return mlsys_set_error(MLSYS_ERR_TIMEOUT, "cloud nccl probe: timed out after %g s waiting for the allreduces of "
                             "%zu B (the communicator still has them in flight: ncclCommAbort it)", timeout_s, bytes);
    mlsys__cloud_nap();
  }
}

MLSYS_DEF mlsys_status mlsys_cloud_probe_nccl(ncclComm_t comm, cudaStream_t stream, const mlsys_cloud_probe_opts *o,
                                              mlsys_cloud_probe_row *rows, int max_rows, int *nrows) {
  int n = 0, me = 0, nsizes, na, i, a, it, k, pools = 0;
  size_t maxcount, stage_n, bytes = 0, count, off, len, j;
  float *send = NULL, *recv = NULL, *stage = NULL, expect[13], ms = 0;
  cudaEvent_t ev0 = NULL, ev1 = NULL;
  cudaError_t e;
  ncclResult_t r;
  double deadline, t;
  mlsys_status st = MLSYS_OK;

  /* the options first, as the TCP probe checks them: no CUDA or NCCL call before they are known to be good */
  if (nrows) *nrows = 0;
  if (!o || !rows || !nrows) return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: options, rows and nrows are required");
  if (o->min_bytes < 4 || o->max_bytes < 4)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: buffer sizes %zu..%zu B: each must be at least 4 B (one "
                           "float32)", o->min_bytes, o->max_bytes);
  if (o->min_bytes > o->max_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: min_bytes %zu exceeds max_bytes %zu", o->min_bytes,
                           o->max_bytes);
  if (o->max_bytes > MLSYS__CLOUD_PROBE_MAX_BYTES)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "cloud nccl probe: max_bytes %zu exceeds the limit of 1 GiB", o->max_bytes);
  if (o->warmup < 0 || o->iters < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: warmup %d must be >= 0 and iters %d >= 1", o->warmup,
                           o->iters);
  if (!(o->timeout_s > 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: timeout_s %g must be > 0", o->timeout_s);
  if (o->n_async < 0 || o->n_async > MLSYS__CLOUD_NCCL_MAX_ASYNC)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: n_async %d is outside 1..%d (0 means 1)", o->n_async,
                           MLSYS__CLOUD_NCCL_MAX_ASYNC);
  nsizes = mlsys_cloud_probe_nsizes(o->min_bytes, o->max_bytes);
  if (max_rows < nsizes)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: max_rows %d is fewer than the %d sizes %zu..%zu B",
                           max_rows, nsizes, mlsys__cloud_probe_pow2(o->min_bytes), mlsys__cloud_probe_pow2(o->max_bytes));
  if (!comm) return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: no communicator");
  na = o->n_async > 0 ? o->n_async : 1;
  deadline = mlsys_now() + o->timeout_s;
  if ((r = ncclCommCount(comm, &n)) != ncclSuccess) return mlsys__cloud_nccl_fail(comm, r, "ncclCommCount", 0);
  if ((r = ncclCommUserRank(comm, &me)) != ncclSuccess) return mlsys__cloud_nccl_fail(comm, r, "ncclCommUserRank", 0);
  if (n < 1 || n > 4096 || me < 0 || me >= n)
    return mlsys_set_error(MLSYS_ERR_ARG, "cloud nccl probe: the communicator says rank %d of %d", me, n);
  /* every rank's input is mlsys__cloud_probe_fill's pattern (period 13, multiples of 0.25): the sums are exact */
  for (k = 0; k < 13; k++) {
    double v = 0;
    for (a = 0; a < n; a++) v += (double)(a % 8) + 0.25 * (double)((3 * a + k) % 13);
    expect[k] = (float)v;
  }

  maxcount = mlsys__cloud_probe_pow2(o->max_bytes) / sizeof(float);
  stage_n = maxcount < MLSYS__CLOUD_NCCL_STAGE ? (maxcount + 12) / 13 * 13 : MLSYS__CLOUD_NCCL_STAGE;
  if (!(stage = (float *)mlsys_alloc(stage_n, sizeof(float)))) {
    st = mlsys_prefix_error("cloud nccl probe: host staging of %zu B", stage_n * sizeof(float));
    goto done;
  }
  mlsys__cloud_probe_fill(stage, stage_n, me);
  if ((e = cudaEventCreate(&ev0)) != cudaSuccess || (e = cudaEventCreate(&ev1)) != cudaSuccess) {
    st = mlsys__cloud_nccl_cuda_fail(e, "cudaEventCreate", 0);
    goto done;
  }
  pools = mlsys__cloud_nccl_pools();
  e = pools ? cudaMallocAsync((void **)&send, maxcount * sizeof(float), stream)
            : cudaMalloc((void **)&send, maxcount * sizeof(float));
  if (e != cudaSuccess) {
    send = NULL;
    st = mlsys__cloud_nccl_cuda_fail(e, pools ? "cudaMallocAsync (input)" : "cudaMalloc (input)", maxcount * sizeof(float));
    goto done;
  }
  e = pools ? cudaMallocAsync((void **)&recv, (size_t)na * maxcount * sizeof(float), stream)
            : cudaMalloc((void **)&recv, (size_t)na * maxcount * sizeof(float));
  if (e != cudaSuccess) {
    recv = NULL;
    st = mlsys__cloud_nccl_cuda_fail(e, pools ? "cudaMallocAsync (outputs)" : "cudaMalloc (outputs)",
                                     (size_t)na * maxcount * sizeof(float));
    goto done;
  }
  for (off = 0; off < maxcount; off += stage_n) {
    len = maxcount - off < stage_n ? maxcount - off : stage_n;
    if ((e = cudaMemcpyAsync(send + off, stage, len * sizeof(float), cudaMemcpyHostToDevice, stream)) != cudaSuccess) {
      st = mlsys__cloud_nccl_cuda_fail(e, "cudaMemcpyAsync (input)", maxcount * sizeof(float));
      goto done;
    }
  }
  if ((e = cudaEventRecord(ev1, stream)) != cudaSuccess) {
    st = mlsys__cloud_nccl_cuda_fail(e, "cudaEventRecord", 0);
    goto done;
  }
  if ((st = mlsys__cloud_nccl_wait(comm, ev1, maxcount * sizeof(float), deadline, o->timeout_s)) != MLSYS_OK) goto done;

  for (i = 0; i < nsizes; i++) {
    bytes = mlsys__cloud_probe_pow2(o->min_bytes) << i;
    count = bytes / sizeof(float);
    /* verify: outputs start as NaN (all bits set), so an element an allreduce did not write cannot pass */
    if (o->verify && (e = cudaMemsetAsync(recv, 0xff, (size_t)na * maxcount * sizeof(float), stream)) != cudaSuccess) {
      st = mlsys__cloud_nccl_cuda_fail(e, "cudaMemsetAsync", bytes);
      goto done;
    }
    for (it = 0; it < o->warmup + o->iters; it++) {
      if (it == o->warmup && (e = cudaEventRecord(ev0, stream)) != cudaSuccess) {
        st = mlsys__cloud_nccl_cuda_fail(e, "cudaEventRecord", bytes);
        goto done;
      }
      st = mlsys__cloud_nccl_step(comm, stream, send, recv, count, maxcount, na, deadline, o->timeout_s);
      if (st != MLSYS_OK) goto done;
    }
    if ((e = cudaEventRecord(ev1, stream)) != cudaSuccess) {
      st = mlsys__cloud_nccl_cuda_fail(e, "cudaEventRecord", bytes);
      goto done;
    }
    if ((st = mlsys__cloud_nccl_wait(comm, ev1, bytes, deadline, o->timeout_s)) != MLSYS_OK) goto done;
    if ((e = cudaEventElapsedTime(&ms, ev0, ev1)) != cudaSuccess) {
      st = mlsys__cloud_nccl_cuda_fail(e, "cudaEventElapsedTime", bytes);
      goto done;
    }
    t = (double)ms * 1e-3 / o->iters;
    for (a = 0; o->verify && a < na; a++) /* the stream is idle now: these copies cannot wait on the allreduces */
      for (off = 0; off < count; off += stage_n) {
        len = count - off < stage_n ? count - off : stage_n;
        if ((e = cudaMemcpyAsync(stage, recv + (size_t)a * maxcount + off, len * sizeof(float), cudaMemcpyDeviceToHost,
                                 stream)) != cudaSuccess ||
            (e = cudaStreamSynchronize(stream)) != cudaSuccess) {
          st = mlsys__cloud_nccl_cuda_fail(e, "cudaMemcpyAsync (verify)", bytes);
          goto done;
        }
        for (j = 0; j < len; j++)
          if (!(stage[j] == expect[(off + j) % 13])) {
            st = mlsys_set_error(MLSYS_ERR_IO, "cloud nccl probe: verify: size %zu B, n %d: rank %d, allreduce %d of %d: "
                                 "element %zu is %.9g, expected %.9g", bytes, n, me, a + 1, na, off + j,
                                 (double)stage[j], (double)expect[(off + j) % 13]);
            goto done;
          }
      }
    rows[i].bytes = (double)bytes;
    rows[i].n = n;
    rows[i].n_async = na;
    rows[i].t_s = t;
    rows[i].busbw = mlsys__cloud_probe_busbw(rows[i].bytes, n, t);
    rows[i].algbw = t > 0 ? rows[i].bytes / t : 0;
  }
  *nrows = nsizes;

done:
  mlsys__cloud_nccl_free(send, stream, pools);
  mlsys__cloud_nccl_free(recv, stream, pools);
  if (ev0) cudaEventDestroy(ev0);
  if (ev1) cudaEventDestroy(ev1);
  mlsys_free(stage);
  return st;
}
#endif /* MLSYS_CLOUD_WITH_NCCL */

#endif /* MLSYS_CLOUD_IMPLEMENTATION_DONE */
#endif /* MLSYS_CLOUD_IMPLEMENTATION */
