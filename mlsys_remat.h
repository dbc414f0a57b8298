/* mlsys_remat.h — optimal tensor rematerialization (Checkmate) for training graphs.             MIT licence.

   Given a training graph (forward, loss and backward nodes; per-node compute cost and output bytes) and a memory
   budget, decide which tensors to keep and which to recompute so that peak memory fits and total compute is
   minimal. Implements:
     - Checkmate (Jain et al., "Checkmate: Breaking the Memory Wall with Optimal Tensor Rematerialization",
       MLSys 2020; P. Jain, PhD thesis, UC Berkeley EECS-2023-180, ch. 3): the frontier-advancing MILP (eq. 3.9
       with 3.8) with disaggregated deallocation rows, and the LP relaxation with two-phase rounding (Alg. 3);
     - the baselines of the paper's Table 3.1: checkpoint all, Chen et al. sqrt(n) and greedy, Griewank & Walther
       revolve (binomial checkpointing), articulation-point sqrt(n)/greedy and linearized greedy;
     - an exact simulator (the MILP's memory accounting), the execution plan of Alg. 2 (compute/free over
       virtual registers) and its validator, and an executor that runs a plan with the caller's kernels and
       measures its peak (examples/remat_cnn.c trains a CNN step this way, bit-identical to checkpoint-all);
     - graph coarsening (fused conv-bn-relu) so that the LP scales to op-level ResNet-50 / MobileNetV2;
     - batch scaling and the largest batch each method fits in a memory (thesis §3.6.4: the baselines by search,
       Checkmate by one MILP over the per-sample peak);
     - an importer for DTR's operator traces (Kirisame et al., "Dynamic Tensor Rematerialization", ICLR 2021);
     - MONeT (Shah et al., "Memory Optimization for Deep Networks", ICLR 2021; A. Shah, PhD thesis ch. 4):
       checkpointing jointly with operator implementations (conv/linear algorithms, output-activated and 1-bit-mask
       ReLU backward, 8-bit-argmax MaxPool backward, in-place ReLU) as the staged 0-1 ILP of the reference code,
       on the same graphs and MILP backends, with an exact simulator of its execution model (section 9).
   docs/remat.md (in the mlsys repository) records the formulation as built, the solver measurements behind the
   defaults, the maximum-batch MILP and the DTR mapping; equation and section numbers in comments are the thesis's.

   USAGE: in exactly one .c file
       #define MLSYS_REMAT_IMPLEMENTATION      // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_remat.h"
   link: -llpsolve55 -lcolamd -ldl -lm -lpthread  (+ $(pkg-config --libs cbc clp) with -DMLSYS_MILP_CBC)

   EXAMPLE
       mlsys_remat_graph g;
       if (mlsys_remat_graph_load("vgg16.json", &g)) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
       mlsys_remat_opts o = {0};                              // Checkmate MILP, default solvers, 3600 s limit
       o.time_limit = 60;
       mlsys_remat_schedule s;
       mlsys_status st = mlsys_remat_solve(&g, 8ull << 30, &o, &s);   // budget: 8 GiB including fixed memory
       if (st == MLSYS_OK) printf("overhead %.3fx, peak %llu bytes\n", s.cost / s.baseline_cost,
                                  (unsigned long long)s.peak_total);
       else fprintf(stderr, "%s\n", mlsys_last_error());      // e.g. names the smallest feasible budget
       mlsys_remat_plan p; mlsys_remat_plan_build(&g, &s, 0, &p);   // compute/free steps for a runtime
       mlsys_remat_plan_free(&p); mlsys_remat_schedule_free(&s); mlsys_remat_graph_free(&g);

   CONTENTS
     1. Graph: data model, JSON and text formats, validation
     2. Schedules: R/S matrices, the closure that derives R from S, the simulator
     3. Execution plans
     4. Methods: mlsys_remat_solve and the individual baselines, Griewank's revolve counts, coarsening
     5. Checkmate MILP / LP internals (model size, minimum feasible budget)
     6. Batch size: scaling a graph, the largest batch that fits
     7. Executing plans on real tensors (mlsys_remat_execute)
     8. Importing DTR operator traces
     9. MONeT: mlsys_remat_monet_graph_build lowers a graph (F, L, then B nodes) to MONeT's solver graph (forward
        nodes with IntNodes for the ReLU mask / MaxPool argmax, backward nodes as stages, per-path dependencies),
        with an operator catalogue chosen by mode bits (CONV: conv/linear forward and backward algorithms;
        OUTACT: ReLU/ReLU6 from input or output, BatchNorm from its output; INTERMEDIATE; INPLACE; SPLIT: conv
        backward as param-grad then input-grad; 0 = MONeT-NoOp).
        mlsys_remat_monet_solve solves the staged ILP (R, P, S, M, SM, F, IP; memory rows 11a/b/c) for a total
        budget; mlsys_remat_monet_simulate replays a schedule (eager Alg. 4, or the ILP's sweep accounting, which
        is what the ILP is exact against on chains). The conv/linear algorithms are a documented proxy (a Conv2d's
        workspace from its shapes) unless the graph carries measured forward and backward "impls" (`mlsys remat
        calibrate` writes them) or the caller passes overrides. opts.no_recompute is the reference code's
        --ablation (A3.4 constraint 12: operator choices only). CBC runs in a child process killed at the time
        limit (mlsys_milp_opts.hard_time_limit), so a limit holds even in CBC's root LP.
        `mlsys remat solve --method monet|monet-noop` runs it, and `mlsys remat sweep` / `max-batch` take monet
        and monet-noop in --methods. mlsys_remat_monet_store_all and mlsys_remat_monet_chen build the baselines as
        MONeT schedules; they are also the ILP's built-in starts (with a NoOp pre-solve for the full modes).
        mlsys_remat_monet_plan_build lowers a schedule to compute/free steps with the implementation per step;
        mlsys_remat_monet_execute runs them on real tensors (workspace, IntNode buffers, in-place steps) at exactly
        the eager simulation's peak. mlsys_remat_monet_post_fastest_conv is the ablations' greedy pass (A4.4).
        docs/remat.md, "MONeT".

   GRAPH FORMATS (both describe the same thing; ids 0..n-1 are the schedule order: every dep has a smaller id)
     JSON: {"format": "mlsys-remat-graph", "version": 1, "name": "vgg16", "batch": 32,
            "units": {"mem": "byte", "cost": "flop"},
            "fixed": {"params": 553430176, "param_grads": 553430176, ...},   // summed, subtracted from budgets
            "nodes": [{"id": 0, "kind": "F", "name": "conv1", "op": "Conv2d", "cost": 1.2e9, "mem": 411041792,
                       "deps": [], "flags": []}, ...]}
       kind: F forward, L loss, B backward, O other. deps: ids or names of earlier nodes, in argument order.
       flags: "norecompute" (computed only in its own stage), "rng" (needs RNG replay when recomputed),
              "alias" (a zero-byte view), "inplace". Optional per node: "fwd_of" (the forward node a B node
              differentiates). Unknown members are ignored.
       Optional per node (g->info, mlsys_remat_node_info; absent in older files, the version stays 1):
         "shape": [8, 64, 32, 32]   the output tensor's shape (non-negative integers, at most 6 dims; dim 0 = batch)
         "attrs": {"in_shape": [..], "kernel": [kh, kw], "stride": [sh, sw], "padding": [ph, pw],
                   "dilation": [dh, dw], "groups": g}     Conv2d / MaxPool2d / AvgPool2d (Linear: in_shape only)
         "impls": [{"name": "direct", "cost": 3.5e6, "workspace": 0}, ...]   F and B nodes, at most 8: measured
                   implementations (`mlsys remat calibrate`), cost in the graph's cost unit at its batch, workspace
                   bytes (default 0), "fixed_workspace": true when the workspace does not grow with the batch
                   (default false: batch scaling scales it linearly; written only when true). MONeT uses an F node's impls for Conv2d / Linear as its forward algorithms,
                   and the impls of their B nodes as the backward paths (section 9).
       tools/export_torch_graph.py writes "shape" and "attrs"; the text form carries none of the three.
     Text: see mlsys_remat_graph_parse below ("remat-graph 1" header, one node per line).

   MEMORY MODEL: the MILP's (thesis §3.4.4, Fig. 3.4): within stage t nodes run in id order; a computed node's
   output is allocated, then each input no longer needed in this stage (not kept for stage t+1, no later user
   computed in this stage) is freed; values not carried to stage t+1 are dropped at the stage end. The peak is
   taken after each allocation and before the frees. Fixed memory (parameters, gradients, inputs, ...) is added
   on top. Budgets everywhere are TOTAL bytes including fixed memory.

   SOLVERS: by default MILPs of graphs up to 40 nodes run on lp_solve and larger ones on CBC, and every LP
   relaxation on Clp (its dual simplex is 15-40x faster than lp_solve's on these LPs); opts.backend forces one.
   Graphs of 120+ nodes are coarsened for the LP (opts.coarsen). bench/RESULTS.md has the measurements.
   COMPILE-TIME OPTIONS: those of mlsys_common.h (MLSYS_MILP_CBC adds the CBC/Clp backend).
   LIMITS: n ≤ 16384 nodes (schedules are n×n bytes); the exact MILP is practical for n ≲ 80 (the LP relaxation
   for n ≲ 150, and for op-level graphs of ~350 nodes through coarsening); see docs/remat.md.
   NOT DONE (yet): the thesis's bilinear max-batch MILP with the batch as a variable (mlsys_remat_max_batch solves
   its linear per-sample form once, for graphs of up to 60 nodes; above that it reports the best baseline's batch and
   says so in out->source / out->milp_ran), lifetime extension for "alias" nodes (they are ordinary nodes of their
   own bytes; export views with --alias-mem bytes for executors), a coarse MILP for graphs beyond ~150 nodes (the
   MILP there returns its LP-rounding incumbent when the time limit hits).
*/
#ifndef MLSYS_REMAT_H
#define MLSYS_REMAT_H

#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_REMAT_IMPLEMENTATION
#define MLSYS_REMAT_IMPLEMENTATION
#endif
#endif

#include "mlsys_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   1. Graph
   ================================================================================================================ */
typedef enum { MLSYS_REMAT_F = 0, MLSYS_REMAT_L = 1, MLSYS_REMAT_B = 2, MLSYS_REMAT_O = 3 } mlsys_remat_kind;
enum {
  MLSYS_REMAT_NORECOMPUTE = 1,   /* never recomputed: only its frontier stage computes it */
  MLSYS_REMAT_RNG = 2,           /* draws random numbers (dropout): an executor must replay them */
  MLSYS_REMAT_ALIAS = 4,         /* a view of its first dep (zero bytes) */
  MLSYS_REMAT_INPLACE = 8        /* overwrites its first dep */
};
#define MLSYS_REMAT_MAX_NODES 16384
#define MLSYS_REMAT_MAX_FIXED 16
#define MLSYS_REMAT_MAX_DIMS 6          /* dims of a node's shape */
#define MLSYS_REMAT_MONET_MAX_IMPLS 8   /* implementations per node (graph files and MONeT's catalogue) */

/* Optional per-node information of a graph file (JSON keys "shape", "attrs", "impls"; see GRAPH FORMATS). Dim 0 of
   every shape is the batch: mlsys_remat_graph_scale_batch scales it. */
typedef struct {
  char name[16];            /* e.g. "direct", "im2col"; NUL-terminated, 1..15 bytes */
  double cost;              /* in the graph's cost unit, at the graph's batch */
  uint64_t workspace;       /* bytes held only while it runs */
  int fixed_workspace;      /* 1: the workspace is the same at any batch (a per-sample buffer reused across the
                               batch, or a weight-sized one): batch scaling leaves it; 0: it scales linearly */
} mlsys_remat_node_impl;
typedef struct {
  int ndim; int64_t shape[MLSYS_REMAT_MAX_DIMS];         /* output shape; ndim 0 = unknown */
  int in_ndim; int64_t in_shape[MLSYS_REMAT_MAX_DIMS];   /* first input's shape ("attrs": "in_shape") */
  int kernel[2], stride[2], pad[2], dilation[2], groups;  /* Conv2d / pools; 0 when not given */
  int nimpl; mlsys_remat_node_impl impl[MLSYS_REMAT_MONET_MAX_IMPLS];   /* measured implementations (F, B nodes) */
} mlsys_remat_node_info;

typedef struct {
  mlsys_dag dag;            /* n nodes; dag.cost = compute cost, dag.size = output bytes; dag.in = deps in argument
                               order (all smaller ids); dag.out = users, ascending */
  unsigned char *kind;      /* [n] mlsys_remat_kind */
  unsigned *flags;          /* [n] MLSYS_REMAT_* flag bits */
  char **op;                /* [n] operator names or NULL entries; may itself be NULL */
  int *fwd_of;              /* [n] forward node a backward node differentiates, or -1 */
  int loss;                 /* the L node, or -1 */
  int nfixed;               /* fixed memory, by category ("params", "param_grads", "inputs", ...) */
  char *fixed_name[MLSYS_REMAT_MAX_FIXED];
  uint64_t fixed_bytes[MLSYS_REMAT_MAX_FIXED];
  char *name;               /* graph name or NULL */
  int batch;                /* informative; 0 if unknown */
  char *mem_unit, *cost_unit;   /* informative ("byte", "flop", "us"); may be NULL */
  mlsys_remat_node_info *info;  /* [n], or NULL when the file has none (allocate with mlsys_remat_graph_info_alloc;
                                   mlsys_remat_graph_free frees it). Carried by scale_batch; coarsening, DTR import
                                   and the text form drop it */
} mlsys_remat_graph;

/* One node for mlsys_remat_graph_create. Zero-initialised fields mean: kind F, cost 0, mem 0, no deps/flags. */
typedef struct {
  const char *name;         /* optional, unique when given */
  const char *op;           /* optional */
  mlsys_remat_kind kind;
  double cost;              /* ≥ 0, finite */
  uint64_t mem;             /* output bytes */
  int ndeps;
  const int *deps;          /* ids < this node's id */
  unsigned flags;
} mlsys_remat_node;

/* Build a graph from nodes[0..n-1] (copied). Errors name the node: negative cost, dep ≥ own id, duplicate deps... */
MLSYS_DEF mlsys_status mlsys_remat_graph_create(int n, const mlsys_remat_node *nodes, mlsys_remat_graph *out);
/* Add a category of fixed memory (at most MLSYS_REMAT_MAX_FIXED; an existing name is overwritten). */
MLSYS_DEF mlsys_status mlsys_remat_graph_set_fixed(mlsys_remat_graph *g, const char *category, uint64_t bytes);
MLSYS_DEF uint64_t mlsys_remat_fixed_total(const mlsys_remat_graph *g);
/* The training graph of an L-layer chain with unit costs and sizes (the repo's gen_linear_graph): forward
   0..L-1, loss L, backward L+1..2L with bwd(i) = 2L-i; edges (i,i+1) for i < 2L and (i, 2L-i) for i < L. */
MLSYS_DEF mlsys_status mlsys_remat_graph_chain(int L, mlsys_remat_graph *out);
/* Parse JSON (first non-blank character '{') or the text format:
       remat-graph 1
       name vgg16                      (optional lines: name, batch, units, fixed)
       batch 32
       units mem=byte cost=flop
       fixed params=553430176 param_grads=553430176
       nodes 3
       # id kind cost mem flags name : deps        ('#' starts a comment; flags '-' or a comma list)
       0 F 1.5e9 411041792 - conv1 :
       1 L 0 4 - loss : 0
       2 B 3e9 411041792 - grad_conv1 op=conv2d_backward fwd_of=0 : 0 1
   op=<operator> and fwd_of=<id or name> are optional fields between the name and ':'.
   Deps may be ids or names. source names the input in error messages ("file:line:col: ..."). */
MLSYS_DEF mlsys_status mlsys_remat_graph_parse(const char *text, size_t len, const char *source,
                                               mlsys_remat_graph *out);
MLSYS_DEF mlsys_status mlsys_remat_graph_load(const char *path, mlsys_remat_graph *out);   /* "-" = stdin */
MLSYS_DEF mlsys_status mlsys_remat_graph_write(const mlsys_remat_graph *g, FILE *f, int json);
MLSYS_DEF void mlsys_remat_graph_free(mlsys_remat_graph *g);
/* g->info: allocated zeroed (every node unknown) when NULL, kept otherwise. */
MLSYS_DEF mlsys_status mlsys_remat_graph_info_alloc(mlsys_remat_graph *g);
/* The node's name, or "#v" written into buf when it has none; use the return value (it may not be buf). */
MLSYS_DEF const char *mlsys_remat_node_name(const mlsys_remat_graph *g, int v, char *buf, size_t len);
/* Lower bound on any schedule's activation peak: max over nodes of its bytes plus its inputs' bytes. */
MLSYS_DEF uint64_t mlsys_remat_single_op_bound(const mlsys_remat_graph *g);
/* Articulation points of the forward subgraph (undirected, with virtual source/sink as in the Checkmate repo):
   is_ap[v] = 1 for forward nodes whose removal disconnects it. Tarjan's algorithm, O(V + E). */
MLSYS_DEF mlsys_status mlsys_remat_articulation_points(const mlsys_remat_graph *g, unsigned char *is_ap);

/* ================================================================================================================
   2. Schedules and the simulator
   ================================================================================================================ */
typedef struct {
  int n;
  unsigned char *R;         /* n*n: R[t*n+i] = 1 → node i is (re)computed in stage t (R[t*n+t] = 1) */
  unsigned char *S;         /* n*n: S[t*n+i] = 1 → value i is resident entering stage t (i < t) */
  double cost;              /* Σ C·R, true costs */
  double baseline_cost;     /* Σ C (checkpoint all, each node once) */
  uint64_t peak;            /* activation peak, MILP accounting */
  uint64_t peak_total;      /* peak + fixed memory */
  uint64_t budget;          /* the total budget asked for */
  int fits;                 /* peak_total ≤ budget */
  int optimal;              /* proven optimal (MILP) */
  double bound;             /* best known lower bound on the cost (NaN if none) */
  double gap;               /* (cost - bound) / cost; NaN if no bound */
  double solve_seconds;
  double model_cost;        /* MILP solutions: the model's objective in true cost units (else 0) */
  uint64_t model_peak;      /* MILP solutions: the model's max U in bytes (else 0) */
  char method[64];          /* the method this is the answer of: "checkmate-milp", "lp-round(theta=0.6)", ... */
  char source[64];          /* the method that built R and S. Equal to method, except where a method answers with
                               another's schedule: the MILP with its warm start (a baseline or LP rounding that
                               needs no recomputation, meets the LP bound, or that the MILP could not beat), max
                               batch's MILP with the best baseline's when no MILP ran. E.g. "lin-greedy". */
  int milp_ran;             /* 1 when a MILP (branch and bound, not just an LP relaxation) was solved for this
                               result; 0 for the baselines, LP rounding, and MILP answers settled without one */
  char solver_note[160];    /* e.g. "time limit reached; incumbent from lin-greedy" */
} mlsys_remat_schedule;

MLSYS_DEF mlsys_status mlsys_remat_schedule_alloc(int n, mlsys_remat_schedule *s);   /* zeroed R, S */
MLSYS_DEF void mlsys_remat_schedule_free(mlsys_remat_schedule *s);
/* The cheapest R for a given S (thesis §3.5, phase 2): carries repaired, then dependencies closed stage by
   stage. Nodes flagged norecompute are never recomputed: S is extended so they stay resident instead. */
MLSYS_DEF mlsys_status mlsys_remat_min_r(const mlsys_remat_graph *g, unsigned char *S, unsigned char *R);
/* Drop carries that are never used before being dropped (always safe: cost and memory can only fall), then
   rebuild R with mlsys_remat_min_r. */
MLSYS_DEF mlsys_status mlsys_remat_trim(const mlsys_remat_graph *g, unsigned char *S, unsigned char *R);

typedef enum {
  MLSYS_REMAT_SIM_MILP = 0,   /* exactly the MILP's accounting (U of eq. 3.2-3.4) */
  MLSYS_REMAT_SIM_EAGER = 1   /* frees unused values at the stage start and reuses double allocations */
} mlsys_remat_sim_mode;
typedef struct {
  double cost;
  uint64_t peak;            /* activation bytes */
  int peak_t, peak_k;       /* where the peak occurs */
  int valid;
  int bad_t, bad_k, bad_i;  /* first violation: stage, node, missing input (-1 if n/a) */
  int redundant;            /* recomputations of values already resident (double allocations) */
  char why[200];
} mlsys_remat_sim;
/* Evaluate a schedule. MLSYS_OK if valid; MLSYS_ERR_ARG with the first violation named otherwise. rep is always
   filled. U (optional, n*n) receives memory after each position, U[t*n+k], as in the MILP. */
MLSYS_DEF mlsys_status mlsys_remat_simulate(const mlsys_remat_graph *g, const unsigned char *R,
                                            const unsigned char *S, mlsys_remat_sim_mode mode,
                                            mlsys_remat_sim *rep, uint64_t *U);
/* Simulate s and fill its cost, baseline_cost, peak, peak_total, fits (for budget s->budget). */
MLSYS_DEF mlsys_status mlsys_remat_evaluate(const mlsys_remat_graph *g, mlsys_remat_schedule *s);

/* ================================================================================================================
   3. Execution plans (thesis Alg. 2): what a runtime executes
   ================================================================================================================ */
enum { MLSYS_REMAT_OP_COMPUTE = 0, MLSYS_REMAT_OP_FREE = 1 };
typedef struct {
  unsigned char op;         /* COMPUTE or FREE */
  unsigned char commit;     /* COMPUTE: 1 on the node's frontier evaluation (stage t = node), once per node:
                               side effects such as parameter-gradient accumulation belong there */
  int node;                 /* the node computed, or whose value is freed */
  int reg;                  /* COMPUTE: output register; FREE: register released */
  int stage;
  int nin, in_off;          /* COMPUTE: input registers in_regs[in_off .. in_off+nin), in dependency order */
} mlsys_remat_op;
typedef struct {
  int nops, nregs;
  mlsys_remat_op *ops;
  int *in_regs;
  int *reg_node;            /* [nregs] node whose value a register holds */
  uint64_t peak;            /* live activation bytes at the worst point (= simulator peak in faithful mode) */
} mlsys_remat_plan;
enum {
  MLSYS_REMAT_PLAN_EARLY_FREE = 1,      /* free values unused in a stage at the stage start (Alg. 2 note) */
  MLSYS_REMAT_PLAN_SKIP_REDUNDANT = 2   /* do not recompute a value that is still resident */
};
/* flags 0 = faithful: live bytes follow the MILP accounting exactly. */
MLSYS_DEF mlsys_status mlsys_remat_plan_build(const mlsys_remat_graph *g, const mlsys_remat_schedule *s,
                                              unsigned flags, mlsys_remat_plan *out);
/* Replay: every input register live, no double free, no use after free, every node computed at least once and
   the last node computed. MLSYS_ERR_ARG with the first problem named; *peak = live-bytes peak. */
MLSYS_DEF mlsys_status mlsys_remat_plan_validate(const mlsys_remat_graph *g, const mlsys_remat_plan *p,
                                                 uint64_t *peak);
MLSYS_DEF mlsys_status mlsys_remat_plan_write(const mlsys_remat_graph *g, const mlsys_remat_plan *p, FILE *f);
MLSYS_DEF void mlsys_remat_plan_free(mlsys_remat_plan *p);

/* ================================================================================================================
   4. Methods
   ================================================================================================================ */
typedef enum {
  MLSYS_REMAT_MILP = 0,         /* Checkmate MILP; warm-started by the best heuristic; returns the best found */
  MLSYS_REMAT_LP_ROUND,         /* Checkmate LP relaxation + two-phase rounding (Alg. 3) */
  MLSYS_REMAT_CHECKPOINT_ALL,   /* keep every value until its last use; no recomputation */
  MLSYS_REMAT_CHEN_SQRTN,       /* Chen et al.: floor(sqrt(L)) segments over the forward nodes in order */
  MLSYS_REMAT_CHEN_GREEDY,      /* Chen et al. greedy: the segment size b that minimises memory */
  MLSYS_REMAT_GRIEWANK,         /* Griewank & Walther revolve on the chain of articulation points */
  MLSYS_REMAT_AP_SQRTN,         /* Chen sqrt(n) over articulation points, R optimal for that S */
  MLSYS_REMAT_AP_GREEDY,        /* Chen greedy over articulation points, b swept, cheapest within budget */
  MLSYS_REMAT_LIN_GREEDY,       /* Chen greedy over all forward nodes, b swept, cheapest within budget */
  MLSYS_REMAT_METHOD_COUNT
} mlsys_remat_method;
MLSYS_DEF const char *mlsys_remat_method_name(mlsys_remat_method m);   /* "milp", "lp", "chen", ... */
MLSYS_DEF int mlsys_remat_method_parse(const char *name);              /* -1 if unknown */

enum {
  MLSYS_REMAT_COARSEN_AUTO = 0,   /* coarsen (mlsys_remat_coarsen) graphs of 120+ nodes when it removes a fifth */
  MLSYS_REMAT_COARSEN_OFF = 1,
  MLSYS_REMAT_COARSEN_ON = 2      /* whenever anything fuses */
};
typedef struct {
  mlsys_remat_method method;    /* 0 → MILP */
  double time_limit;            /* seconds for MILP/LP solves; 0 → 3600 (the paper's limit) */
  double mip_gap_rel, mip_gap_abs;   /* 0 → prove optimality */
  mlsys_milp_backend backend;   /* 0 → lp_solve; MLSYS_SOLVER_CBC when compiled in */
  unsigned model;               /* MILP variants (MLSYS_REMAT_MODEL_*); 0 → disaggregated FREE + dominance rows */
  int no_warm_start;            /* 1 → MILP without the heuristic incumbent / cutoff */
  int raw;                      /* 1 → keep the solver's own R (no min-R pass): for checking the model */
  double lp_eps;                /* LP rounding: solve at (1 - eps)·budget; 0 → 0.1 (thesis §3.5) */
  int nthresholds;              /* LP rounding thresholds; 0 → 0.1, 0.2, ..., 0.9 */
  const double *thresholds;
  const char *dump_model;       /* write the MILP/LP here (.lp or .mps) before solving */
  int progress;                 /* a progress line on stderr (when it is a terminal) */
  int coarsen;                  /* LP rounding on large graphs: MLSYS_REMAT_COARSEN_AUTO (0), _OFF, _ON */
  int (*on_improve)(void *ud, double cost, double seconds);   /* MILP incumbents (true cost units) */
  void *ud;
} mlsys_remat_opts;

/* Solve for one method. budget = total bytes, fixed memory included. Returns MLSYS_OK when out holds a valid
   schedule within the budget. MLSYS_ERR_INFEASIBLE when none was found: then out holds the method's
   lowest-memory schedule when it produced one (out->n > 0, out->fits = 0), and mlsys_last_error() names the
   smallest feasible budget found (proven for the MILP when it can be). Other errors: bad graph or options,
   solver failure, MLSYS_ERR_TOO_BIG (model over the size limit). out->n == 0 means no schedule. */
MLSYS_DEF mlsys_status mlsys_remat_solve(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                         mlsys_remat_schedule *out);

/* The smallest total budget any schedule fits in, under the simulator's accounting: the MILP that minimises the
   peak, warm-started with the lowest-peak heuristic. *proven = 1 when the MILP proved it within time_limit. */
MLSYS_DEF mlsys_status mlsys_remat_min_budget(const mlsys_remat_graph *g, const mlsys_remat_opts *o,
                                              uint64_t *budget, int *proven, mlsys_remat_schedule *out);

/* Baseline building block: S from a set of forward checkpoints (Checkmate repo, mlsys20_artifact variant),
   R = min_r, unused carries trimmed, evaluated. keep[v] = 1 for checkpointed forward nodes. */
MLSYS_DEF mlsys_status mlsys_remat_from_checkpoints(const mlsys_remat_graph *g, const unsigned char *keep,
                                                    mlsys_remat_schedule *out);

/* Coarsening (for op-level graphs of n ≈ 300+, where the LP has ~10^5 columns): an operator is fused into its
   producer when it is a cheap element-wise or normalisation op (BatchNorm, ReLU/ReLU6/GELU/SiLU, Dropout,
   flatten, ...) that reads only that producer, which nobody else in the forward pass reads (conv-bn-relu), at
   most 4 per group; the matching backward nodes are fused the same way. A group's cost is the members' sum and
   its memory the bytes of the members read outside the group (what stays resident). While a group runs, its
   members can hold more at once (conv output and ReLU output); *transient (may be NULL) receives the largest such
   excess over all groups, so a coarse schedule within budget - *transient expands to a fine one within budget
   (up to the expansion's own choices, which mlsys_remat_expand simulates). group_of[v] (n entries) receives v's
   coarse id. A graph with nothing to fuse is copied. */
MLSYS_DEF mlsys_status mlsys_remat_coarsen(const mlsys_remat_graph *g, mlsys_remat_graph *coarse, int *group_of,
                                           uint64_t *transient);
/* A fine schedule from a coarse one: a group's retained values are resident wherever the group is resident or
   was recomputed in that coarse stage; R = min_r, unused carries trimmed, evaluated in g's own accounting (the
   result is valid; whether it fits the budget is for the caller to check: out->fits). */
MLSYS_DEF mlsys_status mlsys_remat_expand(const mlsys_remat_graph *g, const mlsys_remat_graph *coarse,
                                          const int *group_of, const mlsys_remat_schedule *cs,
                                          mlsys_remat_schedule *out);
/* Revolve: the fewest forward steps to reverse an l-step chain with s free snapshot slots, unit costs
   (Griewank & Walther; t(l,0) = l(l-1)/2, t(l,s) = min_j j + t(l-j,s-1) + t(j,s)). Exact DP and closed form. */
MLSYS_DEF long mlsys_remat_revolve_steps(long l, int s);
MLSYS_DEF long mlsys_remat_revolve_closed_form(long l, int s);

/* ================================================================================================================
   5. Model size (before solving)
   ================================================================================================================ */
enum {
  MLSYS_REMAT_MODEL_AGGREGATED_FREE = 1,   /* thesis eq. 3.7c instead of the disaggregated rows (weak LP) */
  MLSYS_REMAT_MODEL_NO_DOMINANCE = 2       /* leave out the dominance rows (this project's
                                              addition); docs/remat.md has the model's sizes without them */
};
typedef struct { long binaries, continuous, rows, nonzeros; } mlsys_remat_model_size;
MLSYS_DEF mlsys_status mlsys_remat_milp_size(const mlsys_remat_graph *g, unsigned model, mlsys_remat_model_size *size);

/* ================================================================================================================
   6. Batch size: scaling a graph, the largest batch that fits
   ================================================================================================================ */
/* (section 6 declarations) */
/* Activations and FLOP costs grow linearly with the batch (thesis §3.6.4; docs/remat.md; the Checkmate repo's
   max-batch experiments assume the same); parameters, their gradients, optimizer state and buffers do not. */
#define MLSYS_REMAT_MAX_BATCH (1 << 30)   /* the largest batch mlsys_remat_max_batch reports */

/* 1 for the fixed-memory categories that grow with the batch: "inputs" and "labels" (what
   tools/export_torch_graph.py writes beside "params", "param_grads" and "buffers"). */
MLSYS_DEF int mlsys_remat_fixed_scales_with_batch(const char *category);
/* A copy of g at another batch: every node's bytes scaled by batch / g->batch and rounded up (so a schedule that
   fits the copy fits the real thing when the true bytes are linear), every cost scaled by the same factor, the
   batch-dependent fixed categories scaled and rounded up, the others copied. Errors: MLSYS_ERR_ARG for
   batch <= 0 or a graph without a batch (g->batch == 0), or a scaled value over the graph limits. out is a new
   graph (free it with mlsys_remat_graph_free). Nodes whose bytes have a batch-independent part (a loss node's
   4-byte scalar, BatchNorm's per-channel statistics) are over-estimated above g->batch by that part times
   (batch/g->batch - 1). */
MLSYS_DEF mlsys_status mlsys_remat_graph_scale_batch(const mlsys_remat_graph *g, int batch, mlsys_remat_graph *out);
/* The thesis's cost cap (eq. 3.10), "at most one extra forward pass", as a multiple of the checkpoint-all cost:
   (Σ_all C + Σ_F C) / Σ_all C, i.e. (2·Σ_F C + Σ_B C + C_loss) / Σ C. The same at every batch. 1 if Σ C = 0. */
MLSYS_DEF double mlsys_remat_one_extra_forward_cap(const mlsys_remat_graph *g);
/* The largest batch (1..MLSYS_REMAT_MAX_BATCH) at which method m finds a schedule of the scaled graph
   (mlsys_remat_graph_scale_batch) within `memory` total bytes (fixed memory at that batch included) whose cost is
   at most cost_cap times the checkpoint-all cost at that batch (cost_cap >= 1; 0 → the thesis's one extra
   forward pass, mlsys_remat_one_extra_forward_cap; INFINITY → no cap). o as for mlsys_remat_solve (o->method is
   ignored; o->time_limit bounds each solve; o->progress shows the search on stderr). An upper bound comes first
   from the single-operator bound (no schedule at any batch above it fits). On MLSYS_OK, *batch ≥ 1 and out holds
   the schedule at *batch (of the scaled graph); MLSYS_ERR_INFEASIBLE with *batch = 0 and out empty when not even
   batch 1 works.
   Baselines and lp: exponential search and bisection over batches from a start point (g->batch for the
   baselines, checkpoint-all's answer for lp), one mlsys_remat_solve per probe (thesis §3.6.4 by enumeration, as
   the Checkmate repo does for its baselines); batch + 1 was probed and failed (or is above the bound). The
   baselines whose checkpoints do not depend on the sizes (checkpoint-all, chen, ap-sqrtn) are monotone in the
   batch, so the search is exact for them; the ones that look at sizes or the budget (the greedy variants,
   griewank) are monotone as long as byte rounding does not change their choices (a brute-force scan agrees on
   tests/data/graphs/mlp_b64.json). LP rounding is a heuristic: the bisection assumes a monotonicity it may not
   have.
   milp: one MILP, not a search (docs/remat.md, "the maximum batch"): with bytes and costs linear in the batch,
   minimise the per-sample peak of the batch-1 graph under the cost cap (eq. 3.10 as one row), warm-started with
   the schedule of the greedy baseline (lin-, ap-, chen-greedy, griewank) that reaches the largest batch; the
   answer is never below that baseline's, and it is the maximum when the MILP is proven (out->optimal), else a
   lower bound. No MILP runs (out->milp_ran = 0, out->source names the baseline) when a baseline already reaches
   the single-operator bound (then the batch is proven maximal) or when the graph has more than 60 nodes and
   o->time_limit is 600 s or less (CBC's root LP there ignores the time limit); then the best baseline's batch is
   the answer. out->method is "checkmate-milp" in every case. Where the one MILP is not built (no cap: cost_cap
   = INFINITY) or fails, the search above runs instead, one MILP per probe. */
MLSYS_DEF mlsys_status mlsys_remat_max_batch(const mlsys_remat_graph *g, uint64_t memory, mlsys_remat_method m,
                                             double cost_cap, const mlsys_remat_opts *o, int *batch,
                                             mlsys_remat_schedule *out);

/* ================================================================================================================
   7. Executing plans on real tensors
   ================================================================================================================ */
/* (section 7 declarations) */
/* Executing a plan: mlsys_remat_execute walks the COMPUTE/FREE steps of a plan, gives every COMPUTE a fresh
   buffer of exactly M_k bytes (the node's graph size), calls the caller's kernel on it with the input registers'
   buffers in dependency order, releases buffers on FREE, and measures what it did. Live bytes are sampled after
   every allocation, before the frees that follow, which is where the simulator samples U[t][k]; so a plan built
   with flags 0 peaks at exactly mlsys_remat_simulate's MILP peak, and any plan at exactly plan->peak.

   Ownership: every activation buffer belongs to the executor and is gone when mlsys_remat_execute returns (the
   plans of mlsys_remat_plan_build free every register by the last stage). What must outlive the step (the loss
   value, parameter gradients, the input gradient) lives in the caller's own memory, which the kernel writes;
   this is the graph's "fixed" memory, which budgets count apart from the activations. Side effects that must
   happen once (writing parameter gradients, updating running statistics, saving an RNG state) belong to the
   evaluation with commit = 1, which the executor checks happens exactly once per node; then recomputation,
   which passes identical input bytes to a deterministic kernel, cannot change any result. (An "rng" node must
   draw from a state saved at its commit evaluation; an "alias" node gets a buffer of its own graph bytes like any
   other node, so export views with their bytes: plans do not extend a view's base, see NOT DONE.)

   A kernel computes node `node` from inputs[0..nin) (in_bytes[j] bytes each, the dependencies' graph sizes)
   into output (out_bytes = the node's graph size; NULL when that is 0, as are inputs of size 0). It returns
   MLSYS_OK or a status with mlsys_set_error; the executor then stops, frees everything and returns that status
   with the step and node prefixed to the message.

   EXAMPLE (examples/remat_cnn.c runs a CNN's training step this way; kernels/mlsys_remat_cnn_kernels.cuh on a GPU)
       mlsys_remat_plan p;
       mlsys_remat_exec_stats st;
       mlsys_remat_plan_build(&g, &s, 0, &p);
       if (mlsys_remat_execute(&g, &p, my_kernel, &my_model, NULL, &st) != MLSYS_OK)
         fprintf(stderr, "%s\n", mlsys_last_error());      // e.g. "... step 12 (stage 7): the kernel of 'fc1': ..."
       else printf("peak %llu bytes = simulated %llu\n", (unsigned long long)st.peak_bytes,
                   (unsigned long long)s.peak);
       mlsys_remat_plan_free(&p); */
typedef mlsys_status (*mlsys_remat_kernel_fn)(void *ud, int node, void *const *inputs, const uint64_t *in_bytes,
                                              int nin, void *output, uint64_t out_bytes, int commit);
/* Where buffers come from. alloc returns MLSYS_OK with *ptr set (bytes > 0 always), or a status (with
   mlsys_set_error: MLSYS_ERR_NOMEM, MLSYS_ERR_CUDA, ...); release gets the same pointer and size back. A
   cudaMalloc-based or arena allocator makes the same executor run on a GPU. */
typedef struct {
  mlsys_status (*alloc)(void *ud, uint64_t bytes, void **ptr);
  void (*release)(void *ud, void *ptr, uint64_t bytes);
  void *ud;
} mlsys_remat_allocator;
typedef struct {
  const mlsys_remat_allocator *allocator;   /* NULL → MLSYS_MALLOC / MLSYS_FREE (host memory) */
  uint64_t limit;           /* 0 → none; else live activation bytes may never exceed it: the COMPUTE that would
                               fails with MLSYS_ERR_NOMEM before allocating (a pool of budget - fixed bytes) */
} mlsys_remat_exec_opts;
typedef struct {
  uint64_t peak_bytes;      /* most live activation bytes, sampled after each allocation */
  uint64_t plan_peak;       /* the same number predicted by replaying the plan before running it */
  uint64_t live_bytes;      /* live bytes when execution stopped, before the executor released what was left
                               (0 after a plan from mlsys_remat_plan_build ran to the end) */
  long computes;            /* kernel calls */
  long recomputes;          /* kernel calls with commit = 0 */
  long allocations, frees;  /* allocator calls (zero-byte outputs need none) */
  double cost;              /* Σ C_k over the kernel calls (the schedule's cost) */
  double seconds;           /* wall time of the execution, kernels included */
  int failed_step;          /* the plan step where execution stopped, or -1 */
} mlsys_remat_exec_stats;
/* Run plan p of graph g. Before any kernel runs the plan is replayed (mlsys_remat_plan_validate, plus: every
   node committed exactly once): an inconsistent plan returns MLSYS_ERR_ARG naming the first bad step and runs
   nothing. Then each step is executed; a failing kernel or allocator stops the run, every live buffer is
   released, and its status is returned. opts may be NULL; stats (optional) is filled in every case. */
MLSYS_DEF mlsys_status mlsys_remat_execute(const mlsys_remat_graph *g, const mlsys_remat_plan *p,
                                           mlsys_remat_kernel_fn kernel, void *ud,
                                           const mlsys_remat_exec_opts *opts, mlsys_remat_exec_stats *stats);

/* ================================================================================================================
   8. Importing DTR operator traces
   ================================================================================================================ */
/* (section 8 declarations) */
/* DTR operator traces (Kirisame et al., "Dynamic Tensor Rematerialization", ICLR 2021; the simrd logs of
   uwsampl/dtr-prototype): JSON lines CONSTANT, MEMORY, COPY, COPY_FROM, CALL, MUTATE, ALIAS, RELEASE, PIN and
   ANNOTATE. The mapping (docs/remat.md, "DTR traces", has the reasons):
     - import starts after the first ANNOTATE START (unless whole_trace); everything alive at START is fixed memory;
     - one node per CALL result, in trace order; the op's TIME (ns) is charged to its first non-view result, later
       results cost 0 and depend on that first one (they only exist when the op has run);
     - a view result (ALIAS k ≥ 0) is a zero-byte node flagged alias, its base (argument k) first among its deps;
     - MUTATE creates a new version of each mutated argument (DTR's copy-on-write reading), flagged inplace, sized
       as the mutated storage; the name then refers to the new version;
     - deps = the arguments that are nodes, in argument order, without repeats; CONSTANTs are fixed memory
       ("constants"), never nodes; PIN marks a node norecompute;
     - kinds: F before ANNOTATE BACKWARD and B from it on; the first argument of the first op after the marker (the
       tensor autograd seeds with ones_like) is the L node when it is a forward node. Without the marker, B starts
       at the first op whose name contains "backward" (DTR simulator's rule) and there is no L;
     - results nobody reads stay nodes (the op allocates them); RELEASE only feeds the replay in info.
   Errors: MLSYS_ERR_PARSE "source:line: ..." for malformed lines, unknown instructions, missing fields, names used
   before they are defined or after their RELEASE, a CALL not followed by MEMORY/ALIAS for each result (in that
   order, as DTR writes them), a truncated trace; MLSYS_ERR_TOO_BIG over MLSYS_REMAT_MAX_NODES nodes or a line over
   1 MiB. */
typedef struct {
  int whole_trace;          /* 1 → import from line 1 even when the trace has an ANNOTATE START */
  int keep_outputs;         /* 1 → append a node "(outputs)" (kind B, cost 0, 0 bytes) that depends on every node
                               the program still references at the end, so every schedule holds them together at
                               the end, as DTR's simulator pins them */
  const char *name;         /* graph name; NULL → the source's file name without directory and ".log" */
} mlsys_remat_dtr_opts;

typedef struct {
  int lines;                /* lines read (blank ones included) */
  int start_line;           /* 1-based line of the ANNOTATE START used; 0 if none */
  int backward_line;        /* line of ANNOTATE BACKWARD; 0 if none (then the "backward"-in-name rule) */
  int calls, mutates, constants, copies, releases, pins;   /* instructions after the start */
  int results, views;       /* CALL results (each a node); those that are views (zero-byte nodes) */
  int releases_ignored;     /* RELEASE of names the trace never defined (DTR ignores them too) */
  int nodes, forward, backward, loss;   /* node counts (the L node counts as forward); loss id or -1 */
  int unused;               /* nodes no later operation reads */
  int outputs;              /* nodes the program still references when the trace ends */
  double total_time;        /* Σ TIME of the imported CALL/MUTATE lines, ns (= Σ node cost) */
  uint64_t total_bytes;     /* Σ node bytes */
  uint64_t fixed_bytes;     /* constants and values alive at START */
  uint64_t output_bytes;    /* bytes of the outputs' storage */
  uint64_t trace_peak;      /* the trace's own peak: live bytes replaying its allocations and RELEASEs (views
                               share their base's storage, MUTATE allocates as above), constants included */
  uint64_t trace_peak_activations;   /* the same without constant storage: checkpoint-all's activation peak is
                                        never above it (it frees each value at its last use) */
  int trace_peak_line;      /* line where trace_peak_activations is reached */
} mlsys_remat_dtr_info;

/* Import a DTR trace (text[0..len)) into out (free with mlsys_remat_graph_free). source names the input in
   messages. opts and info may be NULL. */
MLSYS_DEF mlsys_status mlsys_remat_import_dtr(const char *text, size_t len, const char *source,
                                              const mlsys_remat_dtr_opts *opts, mlsys_remat_graph *out,
                                              mlsys_remat_dtr_info *info);
MLSYS_DEF mlsys_status mlsys_remat_import_dtr_file(const char *path, const mlsys_remat_dtr_opts *opts,
                                                   mlsys_remat_graph *out, mlsys_remat_dtr_info *info);   /* "-" = stdin */

/* ================================================================================================================
   9. MONeT: checkpointing jointly with operator implementations (Shah et al., "Memory Optimization for Deep
      Networks", ICLR 2021; A. Shah, PhD thesis ch. 4). docs/remat.md, "MONeT", has the formulation as built.
   ================================================================================================================ */
/* Optimisation families (the reference code's mode string). 0 = MONeT-NoOp: one implementation per node and the
   graph's own backward dependencies, checkpointing only. */
enum {
  MLSYS_REMAT_MONET_CONV = 1,          /* Conv / Linear forward algorithms and backward path 'c' (workspace, cost) */
  MLSYS_REMAT_MONET_OUTACT = 2,        /* ReLU / ReLU6 / Hardtanh backward from input or output; BatchNorm from its
                                          output ('o', in-place activated BN) */
  MLSYS_REMAT_MONET_INTERMEDIATE = 4,  /* ReLU backward from a 1-bit mask, MaxPool backward from an 8-bit argmax */
  MLSYS_REMAT_MONET_INPLACE = 8,       /* ReLU forward over its input when that input has no later forward user */
  MLSYS_REMAT_MONET_ALL = 15,
  /* Conv/Linear backward as param-grad then input-grad (A3.5.4): the forward input is freed between the halves.
     Not in ALL because an executor binding must then run the backward kernel in two calls (the call's half). */
  MLSYS_REMAT_MONET_SPLIT = 16
};
#define MLSYS_REMAT_MONET_MAX_PATHS 4   /* (MLSYS_REMAT_MONET_MAX_IMPLS is in section 1) */

typedef struct {            /* one way to run a forward op (e.g. a conv algorithm) */
  double cost, recompute_cost;           /* compute in the forward pass / when recomputed before a backward op */
  uint64_t workspace, recompute_workspace;   /* bytes held only while the op runs */
} mlsys_remat_monet_impl;

/* Replace the catalogue's implementations of one forward graph node (e.g. profiled conv algorithms). */
typedef struct {
  int node;                 /* id of an F node of the graph */
  int nimpl;                /* 1..MLSYS_REMAT_MONET_MAX_IMPLS */
  const mlsys_remat_monet_impl *impl;
  double bwd_cost;          /* the backward 'c' path of this Conv/Linear (CONV mode): cost and workspace; 0 → the */
  uint64_t bwd_workspace;   /* B node's impls or the catalogue's proxy (a profiled or the kernels' own backward
                               algorithm otherwise) */
} mlsys_remat_monet_override;

/* Catalogue model (zero = default). In CONV mode a Conv/Linear F node whose graph info has impls (g->info[v].nimpl
   > 0, e.g. from `mlsys remat calibrate`) and no override takes those as its implementations (cost = recompute_cost,
   workspace = recompute_workspace = the impl's). Otherwise conv/linear algorithms are modelled from the node's cost
   and its input bytes: "default" = the graph's cost, no workspace (what NoOp and Checkmate assume);
   "im2col+GEMM" = cost·conv_fast_cost with workspace conv_ws_factor·(input bytes) (k² · input for a k×k kernel at
   stride 1 with same padding: C_in·k·k·H_out·W_out·4 bytes). Linear gets linear_ws_factor·(input bytes) (a packed
   copy of the input). Overrides replace the model for the nodes they name.
   A Conv2d whose graph info has shapes and attrs (4-d "shape" and "in_shape", "kernel") gets as the im2col
   workspace the column buffer from its geometry instead: (C_in/groups)·KH·KW·H_out·W_out·4 bytes, one sample's
   and one group's, as examples/cnn_kernels.h's kernels allocate it (they build the columns sample by sample and
   group by group in one reused buffer; the input-bytes proxy gave a first conv, whose input is fixed memory, no
   workspace at all and counted the whole batch).
   Backward (CONV mode): a Conv/Linear B node whose graph info has impls (`mlsys remat calibrate` times our
   backward kernels) takes them as its paths: impl 0 is the 'g' path (its cost and workspace in place of the
   graph's cost), every further impl a 'c' path with its own cost and workspace, all reading the graph's deps; a
   stage keeps at most MLSYS_REMAT_MONET_MAX_PATHS paths (so impls past the fourth are dropped) and drops an impl
   that repeats an earlier path's cost and workspace. An override with bwd_cost > 0 of the forward node wins over
   the impls (its 'c' path beside the graph's 'g'). Otherwise the B node gets a second path 'c', the same proxy
   for a faster backward algorithm with workspace: cost·conv_bwd_fast_cost, workspace the Conv2d column buffer
   above when the shapes give it, else conv_bwd_ws_factor·(forward input bytes) (Linear: linear_ws_factor).
   Without CONV mode a B node has the graph's 'g' path, whatever its impls. BatchNorm2d recomputation reuses the forward's statistics: in every mode but NoOp its
   recompute_cost is bn_recompute_factor·cost (a proxy, not profiled). */
typedef struct {
  unsigned mode;            /* MLSYS_REMAT_MONET_* bits; 0 → NoOp */
  double conv_fast_cost;    /* 0 → 0.7 */
  double conv_ws_factor;    /* 0 → 9 */
  double linear_ws_factor;  /* 0 → 1 */
  double conv_bwd_fast_cost;   /* 0 → conv_fast_cost */
  double conv_bwd_ws_factor;   /* 0 → conv_ws_factor */
  double bn_recompute_factor;  /* 0 → 0.5; in (0, 1] */
  int noverride;
  const mlsys_remat_monet_override *override_impl;
} mlsys_remat_monet_catalogue;

/* The solver graph of A3.5: forward nodes 0..V-1 (the graph's F and L nodes in id order, each IntNode right after
   its parent, the L node last), then backward nodes V..N-1 (the graph's B nodes in id order); backward node V+t-1
   runs in stage t, stage 0 is the forward pass. */
typedef struct {
  int V, N, T;              /* forward nodes (loss = V-1), all nodes, stages (T = N - V + 1) */
  unsigned mode;
  int *src;                 /* [N] graph node id; IntNodes: -1 */
  int *parent;              /* [V] IntNode: its parent forward node; else -1 */
  char *int_kind;           /* [V] 'm' ReLU mask, 'a' MaxPool argmax, 0 for others */
  uint64_t *mem;            /* [N] output bytes */
  int *in_off, *in;         /* forward→forward deps, CSR over 0..V (IntNodes: their parent) */
  int *impl_off;            /* [V+1] implementations impl[impl_off[v] .. impl_off[v+1]) */
  mlsys_remat_monet_impl *impl;
  int *inplace_of;          /* [V] the input a forward node may overwrite in place, or -1 */
  int *path_off;            /* [T+1] backward paths of stage t: path_off[t] .. path_off[t+1] (stage 0: none) */
  double *path_cost;        /* per path: compute cost */
  uint64_t *path_ws;        /* per path: workspace bytes */
  char *path_kind;          /* per path: 'g' the graph's deps, 'i' input-, 'o' output-activated, 'm' mask, 'a' argmax,
                               'c' the faster conv/linear backward algorithm (workspace; the graph's deps). With a
                               B node's impls: 'g' = impl 0, 'c' = impl 1, 2, ... in order
                               (repeats dropped) */
  unsigned char *path_split;   /* per path: 1 = run as param-grad then input-grad (SPLIT mode): the output exists in
                                  the second half only */
  int *pdep_off, *pdep;     /* per path: its forward deps (solver ids < V) */
  unsigned char *pdep_first;   /* per pdep entry of a split path: 1 = read by the first half only (the op's forward
                                  inputs); 0 = read by both (e.g. the L node, which holds dy for the last layer) */
  unsigned char *local;     /* [V*V] local[j*V+i] = 1 → x_i is a local tensor of forward node j (A3.5.7) */
  uint64_t *local_mem;      /* [N] local_memory(v) (forward: Σ over local; backward: gradient tensors alive) */
  uint64_t fixed;           /* fixed memory (all the graph's categories, from the start: see docs/remat.md) */
} mlsys_remat_monet_graph;

/* Build the solver graph. Errors (MLSYS_ERR_ARG, naming the node): O nodes, a forward node after a B node, no L
   node or an L node that is not the last forward node, a forward node reading a B node, bad catalogue values. */
MLSYS_DEF mlsys_status mlsys_remat_monet_graph_build(const mlsys_remat_graph *g, const mlsys_remat_monet_catalogue *c,
                                                     mlsys_remat_monet_graph *out);
MLSYS_DEF void mlsys_remat_monet_graph_free(mlsys_remat_monet_graph *sg);

/* A MONeT schedule (A2 "Solution"). */
typedef struct {
  int V, T;
  unsigned char *R;         /* [T*V] R[t*V+v]: forward v computed (t = 0) / recomputed (t ≥ 1) in stage t */
  unsigned char *S;         /* [(T+1)*V] S[t*V+v]: x_v stored entering stage t (kept through stage t-1's backward) */
  unsigned char *IP;        /* [T*V] forward v run in place in stage t */
  signed char *M;           /* [T] backward path of stage t (index into the stage's paths; stage 0: 0) */
  signed char *F;           /* [T*V] forward implementation of v in stage t, -1 when not computed */
  double cost;              /* simulated total cost (forward + recomputation + backward), true units */
  uint64_t peak;            /* simulated peak bytes (Alg. 4, eager freeing), fixed memory included */
  uint64_t peak_sweep;      /* the same in the ILP's accounting (MLSYS_REMAT_MONET_SIM_SWEEP; ≥ peak) */
  uint64_t budget;
  double objective;         /* the ILP's objective scaled back to cost units (= cost when cost_unit divides the costs) */
  double bound;             /* solver's lower bound on the cost (true units, scaled back) or NaN */
  int optimal;
  double solve_seconds;
  int nvars, nrows;         /* ILP size */
  char method[32];          /* "monet", "monet-noop" */
} mlsys_remat_monet_schedule;
MLSYS_DEF mlsys_status mlsys_remat_monet_schedule_alloc(int V, int T, mlsys_remat_monet_schedule *s);
MLSYS_DEF void mlsys_remat_monet_schedule_free(mlsys_remat_monet_schedule *s);

/* Exact simulation of Alg. 3 (forward, eager freeing, stored set) and Alg. 4 (staged backward): memory is taken at
   every op while it runs (workspace + output + everything alive) and at every stage start. A split path's backward
   op is two: param-grad (workspace + everything alive, no output) and input-grad (workspace + output + everything
   alive less the path's first-half values that are not kept, S[t+1]). */
typedef struct {
  uint64_t peak;            /* bytes, fixed memory included */
  int peak_t, peak_v;       /* stage and node (solver id; -1 = stage start) of the peak */
  double cost, fwd_cost, recompute_cost, bwd_cost;
  int valid;
  char why[200];            /* the first violation */
} mlsys_remat_monet_sim;
typedef enum {
  MLSYS_REMAT_MONET_SIM_EAGER = 0,   /* Alg. 4 as written: a stored value no later op of the stage uses is freed at
                                        the stage start */
  MLSYS_REMAT_MONET_SIM_SWEEP = 1    /* the ILP's accounting (rows 11a/b count S[t,i] for i ≥ j): a stored value
                                        lives until the stage's recomputation sweep passes its position */
} mlsys_remat_monet_sim_mode;
MLSYS_DEF mlsys_status mlsys_remat_monet_simulate(const mlsys_remat_monet_graph *sg,
                                                  const mlsys_remat_monet_schedule *s, mlsys_remat_monet_sim_mode mode,
                                                  mlsys_remat_monet_sim *rep);

/* Baseline schedules as MONeT schedules (A4.1, A4.6), for comparison and as the ILP's built-in warm starts. Both
   use what every solver graph has: each op's default implementation (0), each stage's graph path ('g', index 0),
   nothing in place, IntNodes never computed. S is the least store that makes the recomputations valid: a value is
   kept from the stage that last computed it until the last stage that reads it (through that stage's backward op
   when its path reads it). Both are simulated as solve does: out->cost, out->peak (eager), out->peak_sweep (the
   ILP's accounting); out->budget = out->peak, out->objective = out->cost, out->optimal = 0, out->bound = NaN.
   store_all: the forward pass computes everything and nothing is recomputed (on a mode-0 graph its peak is
   Checkmate's checkpoint-all peak: tests/test_remat_monet.c checks it on the exported graphs).
   chen: Chen et al.'s √n checkpointing. The forward ops (IntNodes aside) in order are cut into `segments` runs of
   equal length (0 → ⌈√n⌉ for n forward ops; more than n → n); the last op of each run is kept. Each backward stage
   recomputes what its path reads from the nearest available values, depth first; a recomputed value stays until
   its last use, so each op is recomputed at most once and cost ≤ 2·forward + backward. */
MLSYS_DEF mlsys_status mlsys_remat_monet_store_all(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *out);
MLSYS_DEF mlsys_status mlsys_remat_monet_chen(const mlsys_remat_monet_graph *sg, int segments,
                                              mlsys_remat_monet_schedule *out);

typedef struct {
  double time_limit;        /* seconds; 0 → 3600 */
  double mip_gap_rel, mip_gap_abs;   /* 0 → prove optimality */
  mlsys_milp_backend backend;        /* 0 → lp_solve up to 400 ILP columns, CBC above when compiled in */
  uint64_t mem_unit;        /* ILP memory unit in bytes (coefficients rounded up, budget down); 0 → 1024 (A3.8.4) */
  double cost_unit;         /* ILP cost unit (coefficients rounded up); 0 → max cost / 1e6 (or 1 when smaller) */
  const char *dump_model;   /* write the ILP here before solving */
  const mlsys_remat_monet_schedule *warm_start;   /* optional: a schedule to start from (a MIP start / cutoff); one
                                                     the memory rows reject is an error naming the first such row.
                                                     NULL → the built-in starts (see mlsys_remat_monet_solve) */
  int noop_start;           /* mode ≠ 0 without warm_start: 0 → first solve the NoOp restriction of the same ILP
                               with a quarter of the time left and start from its schedule; -1 → don't */
  long max_nodes;           /* branch-and-bound node limit (0 → none): a machine-independent stop (the root node
                               always runs) */
  mlsys_remat_model_size *size_only;   /* set: build the ILP, fill this with its size (as mlsys_remat_milp_size
                                          does for Checkmate's), solve nothing and return MLSYS_OK with out empty */
  int no_recompute;         /* the reference code's --ablation (A3.4 constraint 12): no checkpointing at all,
                               R[t ≥ 1] = 0, and every in-place-capable ReLU runs in place whenever it runs
                               (IP = R); only the operator choices remain. The NoOp pre-solve is skipped (its
                               restriction forbids in place), and the built-in starts count only where they
                               satisfy the rows (store-all does when the graph has no in-place candidate). */
} mlsys_remat_monet_opts;

/* The staged 0-1 ILP of A3.4 for the total budget (bytes, fixed memory included). A stage with a split path gets
   a second backward row (c11c2, the input-grad half); in the first (c11c) a split path counts no output. MLSYS_OK: out holds the
   schedule, simulated (out->cost, out->peak). MLSYS_ERR_INFEASIBLE when no schedule fits the model's (linear upper
   bound) memory rows; other errors as mlsys_milp_solve.
   Starts: without o->warm_start the solver is given the cheaper of store-all and Chen (mlsys_remat_monet_store_all,
   mlsys_remat_monet_chen) among those the ILP's own memory rows accept at this budget (one that does not fit is
   skipped). For mode ≠ 0 (unless o->noop_start is -1), the NoOp restriction of the same ILP (every alternative
   implementation, path, IntNode and in-place column fixed to 0) is solved first from that start with a quarter of
   the time left; its schedule, feasible for the full ILP, is the start. So whenever the budget is at least
   store-all's requirement in the ILP's rows (its sweep peak, each term rounded up to mem_unit), a schedule is
   returned, whatever the time or node limit. The time limit counts from the call: the model build and the NoOp
   solve are taken out of what the main solve gets. Every start (the caller's too) goes to the solver as the
   cutoff and the fallback only, not as CBC's MIP start, whose processing ignores the time limit (docs/remat.md);
   CBC's root LP and feasibility pump still run past the limit on large models. */
MLSYS_DEF mlsys_status mlsys_remat_monet_solve(const mlsys_remat_monet_graph *sg, uint64_t budget,
                                               const mlsys_remat_monet_opts *o, mlsys_remat_monet_schedule *out);

/* Greedy post-optimisation to the fastest conv algorithm (A4.4, the ablations of Fig. 4.5: a variant that is not
   conv-optimised by the ILP gets the fastest algorithm that still fits). s must be valid for sg (e.g. the NoOp
   or a single-family schedule solved on a graph without MLSYS_REMAT_MONET_CONV, used on a graph built with it: the
   node and path numbering agree because CONV only appends implementations and 'c' paths). In stage order, every
   computed forward node with several implementations takes the cheapest one that keeps both simulated peaks
   (eager and sweep) within budget, and every backward node the cheapest path with the same forward values
   (an algorithm change, not a storage change). A change is kept only when it lowers the cost, so the cost never
   rises and the budget is never exceeded. s->cost, peak, peak_sweep are updated; *changes (optional) counts the
   kept changes. MLSYS_ERR_ARG when s is invalid or already over budget. */
MLSYS_DEF mlsys_status mlsys_remat_monet_post_fastest_conv(const mlsys_remat_monet_graph *sg, uint64_t budget,
                                                           mlsys_remat_monet_schedule *s, int *changes);

/* Lowering a MONeT schedule to the steps a runtime executes (Alg. 3/4 with eager freeing), each compute step with
   its chosen implementation: forward steps their algorithm (and in place or not), backward steps their path. */
typedef struct {
  unsigned char op;         /* MLSYS_REMAT_OP_COMPUTE or MLSYS_REMAT_OP_FREE */
  unsigned char in_place;   /* COMPUTE of a forward node run over its input (sg->inplace_of), which it consumes */
  unsigned char half;       /* COMPUTE of a backward node: 0 the whole op; a split path (sg->path_split) runs as
                               1 = param-grad (reads the path's values, no output) then 2 = input-grad (writes the
                               output), with the FREEs of the path's values not kept between them */
  int stage;
  int node;                 /* solver node: forward < V (IntNodes included), backward ≥ V; FREE: the value freed */
  int impl;                 /* COMPUTE: forward implementation index or backward path index; FREE: -1 */
} mlsys_remat_monet_step;
typedef struct {
  int nsteps;
  mlsys_remat_monet_step *steps;
  uint64_t peak;            /* the replay's peak, fixed memory included (= the eager simulation's) */
} mlsys_remat_monet_plan;
/* g is the graph sg was built from (the gradients' liveness comes from its backward edges). */
MLSYS_DEF mlsys_status mlsys_remat_monet_plan_build(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                    const mlsys_remat_monet_schedule *s, mlsys_remat_monet_plan *out);
/* Replay a plan: every input live when used (forward inputs, the path's forward values, the gradients read),
   nothing computed over a live copy, no double free, every backward node run once. MLSYS_ERR_ARG names the first
   problem; *peak (optional) = the live-bytes peak with workspace and fixed memory. */
MLSYS_DEF mlsys_status mlsys_remat_monet_plan_validate(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                       const mlsys_remat_monet_plan *p, uint64_t *peak);
MLSYS_DEF void mlsys_remat_monet_plan_free(mlsys_remat_monet_plan *p);

/* Executing a MONeT plan on real tensors: mlsys_remat_monet_execute walks the plan's steps with section 7's
   allocator, options and statistics. A forward COMPUTE gets a buffer of sg->mem[v] bytes (an IntNode too: the
   packed mask or the 8-bit argmax), or, run in place, takes over its input's buffer; a backward COMPUTE gets
   sg->mem[v] bytes (its gradient). A step whose implementation or path has workspace gets a buffer of exactly
   that many bytes (forward: impl.workspace in stage 0, impl.recompute_workspace later; backward: path_ws),
   released as soon as the kernel returns. FREE releases the value's buffer. Live bytes are sampled after a step's
   allocations, before it runs, which is where mlsys_remat_monet_plan_validate samples: so stats->peak_bytes +
   sg->fixed equals plan->peak, the eager simulation's peak (MLSYS_REMAT_MONET_SIM_EAGER; the plans are built
   with that accounting). stats->plan_peak is the replay's peak less sg->fixed; stats->cost sums the steps'
   costs (impl.cost / recompute_cost, path_cost), the schedule's cost.

   The kernel gets one call per COMPUTE step. value[] holds every live value's buffer by solver node (NULL when
   not live): a forward node reads its inputs there (sg->in; an IntNode its parent), a backward node the values
   of its path (sg->pdep) and the gradients it reads (the graph's backward deps, solver id = graph id + N - n).
   An in-place step has output == value[sg->inplace_of[node]]. commit is 1 for the forward pass (stage 0) and
   every backward node, 0 for recomputations (side effects once, as in section 7). */
typedef struct {
  int node;                 /* solver node */
  int src;                  /* its graph node (IntNodes: -1; sg->parent[node] is the op) */
  int stage, impl;          /* forward: implementation index; backward: path index within the stage */
  int in_place, commit;
  char kind;                /* forward: sg->int_kind[node] ('m', 'a' or 0); backward: the path's kind (g, i, o, m, a, c) */
  int half;                 /* backward: 0 the whole op; a split path is two calls, 1 = param-grad (no output) then
                               2 = input-grad (output; the path's forward values may already be freed) */
  void *const *value;       /* [sg->N] buffers of the live values */
  void *output;             /* NULL when out_bytes is 0 */
  uint64_t out_bytes;
  void *workspace;          /* NULL when workspace_bytes is 0 */
  uint64_t workspace_bytes;
} mlsys_remat_monet_call;
typedef mlsys_status (*mlsys_remat_monet_kernel_fn)(void *ud, const mlsys_remat_monet_call *c);
/* Run plan p of solver graph sg (built from g). The plan is validated first (nothing runs when it is bad). A
   failing kernel or allocator stops the run; every live buffer is released and the status returned with the
   step prefixed. opts (allocator, limit on live bytes: values + workspace) and stats may be NULL. */
MLSYS_DEF mlsys_status mlsys_remat_monet_execute(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                 const mlsys_remat_monet_plan *p, mlsys_remat_monet_kernel_fn kernel,
                                                 void *ud, const mlsys_remat_exec_opts *opts,
                                                 mlsys_remat_exec_stats *stats);

/* Lower a MONeT schedule to a Checkmate schedule on the original graph (stage per graph node: the forward pass is
   stages 0..V'-1, stage of backward node b recomputes the MONeT stage's forward set). Only for mode-0 graphs (no
   IntNodes); the result is evaluated by mlsys_remat_evaluate. */
MLSYS_DEF mlsys_status mlsys_remat_monet_to_checkmate(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                      const mlsys_remat_monet_schedule *s, mlsys_remat_schedule *out);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_REMAT_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#ifdef MLSYS_REMAT_IMPLEMENTATION
#ifndef MLSYS_REMAT_IMPLEMENTATION_DONE
#define MLSYS_REMAT_IMPLEMENTATION_DONE

#include <string.h>
#include <math.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLSYS__REMAT_MAX_MEM (1ull << 48)   /* bytes per node (256 TiB): sums over 16384 nodes and 16 fixed
                                              categories stay below 2^63, and exact in doubles up to 2^53 */
#define MLSYS__REMAT_MAX_COST 1e30

/* ---------------------------------------------------------------------------------------------------------------
   1. Graph
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF void mlsys_remat_graph_free(mlsys_remat_graph *g) {
  int i;
  if (!g) return;
  if (g->op) for (i = 0; i < g->dag.n; i++) mlsys_free(g->op[i]);
  mlsys_free(g->op);
  mlsys_free(g->kind);
  mlsys_free(g->flags);
  mlsys_free(g->fwd_of);
  for (i = 0; i < g->nfixed; i++) mlsys_free(g->fixed_name[i]);
  mlsys_free(g->name);
  mlsys_free(g->mem_unit);
  mlsys_free(g->cost_unit);
  mlsys_free(g->info);
  mlsys_dag_free(&g->dag);
  memset(g, 0, sizeof *g);
  g->loss = -1;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_info_alloc(mlsys_remat_graph *g) {
  if (!g) return mlsys_set_error(MLSYS_ERR_ARG, "graph info: NULL graph");
  if (g->info) return MLSYS_OK;
  g->info = (mlsys_remat_node_info *)mlsys_calloc((size_t)(g->dag.n > 0 ? g->dag.n : 1), sizeof *g->info);
  return g->info ? MLSYS_OK : MLSYS_ERR_NOMEM;
}

MLSYS_DEF const char *mlsys_remat_node_name(const mlsys_remat_graph *g, int v, char *buf, size_t len) {
  return mlsys_dag_node_name(&g->dag, v, buf, len);
}

MLSYS_DEF uint64_t mlsys_remat_fixed_total(const mlsys_remat_graph *g) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < g->nfixed; i++) s += g->fixed_bytes[i];
  return s;
}

static int mlsys__remat_text_token_ok(const char *t);
MLSYS_DEF mlsys_status mlsys_remat_graph_set_fixed(mlsys_remat_graph *g, const char *category, uint64_t bytes) {
  int i;
  char *c;
  if (!category || !*category) return mlsys_set_error(MLSYS_ERR_ARG, "fixed memory needs a category name");
  if (strlen(category) > 63 || strchr(category, '=') || !mlsys__remat_text_token_ok(category))
    return mlsys_set_error(MLSYS_ERR_ARG, "fixed-memory category '%.80s' must be 1-63 bytes of UTF-8 without spaces, "
                           "'#' or '='", category);
  if (bytes > MLSYS__REMAT_MAX_MEM)
    return mlsys_set_error(MLSYS_ERR_ARG, "fixed memory '%s' of %llu bytes is over the limit of 2^48", category,
                           (unsigned long long)bytes);
  for (i = 0; i < g->nfixed; i++)
    if (strcmp(g->fixed_name[i], category) == 0) { g->fixed_bytes[i] = bytes; return MLSYS_OK; }
  if (g->nfixed == MLSYS_REMAT_MAX_FIXED)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "more than %d fixed-memory categories", MLSYS_REMAT_MAX_FIXED);
  if (!(c = mlsys_strdup(category))) return MLSYS_ERR_NOMEM;
  g->fixed_name[g->nfixed] = c;
  g->fixed_bytes[g->nfixed++] = bytes;
  return MLSYS_OK;
}

/* Checks shared by every way of building a graph: the order is a schedule order, values are in range. */
static mlsys_status mlsys__remat_check(mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  int v, j;
  char a[48], b[48];
  mlsys_status st;
  if (d->n > MLSYS_REMAT_MAX_NODES)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "graph has %d nodes; the limit is %d (schedules are n*n)", d->n,
                           MLSYS_REMAT_MAX_NODES);
  /* a cycle is reported as such (named), before the weaker "out of order" complaint */
  if ((st = mlsys_dag_topo_order(d, NULL)) != MLSYS_OK) return st;
  for (v = 0; v < d->n; v++) {
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++)
      if (d->in[j] >= v)
        return mlsys_set_error(MLSYS_ERR_ARG,
                               "node %d '%s' depends on node %d '%s', which comes later: nodes must be listed in "
                               "the order they run (every dependency before its user)",
                               v, mlsys_remat_node_name(g, v, a, sizeof a), d->in[j],
                               mlsys_remat_node_name(g, d->in[j], b, sizeof b));
    if (!(d->cost[v] >= 0) || d->cost[v] > MLSYS__REMAT_MAX_COST)
      return mlsys_set_error(MLSYS_ERR_ARG, "node %d '%s' has cost %g; costs must be finite and >= 0", v,
                             mlsys_remat_node_name(g, v, a, sizeof a), d->cost[v]);
    if (d->size[v] > MLSYS__REMAT_MAX_MEM)
      return mlsys_set_error(MLSYS_ERR_ARG, "node %d '%s' has %llu bytes, over the limit of 2^48", v,
                             mlsys_remat_node_name(g, v, a, sizeof a), (unsigned long long)d->size[v]);
    if (g->kind[v] > MLSYS_REMAT_O)
      return mlsys_set_error(MLSYS_ERR_ARG, "node %d '%s' has an unknown kind %d", v,
                             mlsys_remat_node_name(g, v, a, sizeof a), g->kind[v]);
    if (g->fwd_of[v] >= d->n || g->fwd_of[v] < -1)
      return mlsys_set_error(MLSYS_ERR_ARG, "node %d '%s': fwd_of %d is not a node", v,
                             mlsys_remat_node_name(g, v, a, sizeof a), g->fwd_of[v]);
  }
  g->loss = -1;
  for (v = 0; v < d->n; v++)
    if (g->kind[v] == MLSYS_REMAT_L) { g->loss = v; break; }
  /* names are how files refer to nodes: they must be unique */
  if (d->name) {
    /* open-addressing hash set of names */
    size_t cap = 16, h, k;
    int *tab;
    while (cap < (size_t)d->n * 2 + 1) cap *= 2;
    if (!(tab = (int *)mlsys_alloc(cap, sizeof(int)))) return MLSYS_ERR_NOMEM;
    for (k = 0; k < cap; k++) tab[k] = -1;
    for (v = 0; v < d->n; v++) {
      const unsigned char *p = (const unsigned char *)d->name[v];
      if (!p) continue;
      for (h = 1469598103934665603ull; *p; p++) h = (h ^ *p) * 1099511628211ull;
      for (k = h & (cap - 1); tab[k] >= 0; k = (k + 1) & (cap - 1))
        if (strcmp(d->name[tab[k]], d->name[v]) == 0) {
          int first = tab[k];
          mlsys_free(tab);
          return mlsys_set_error(MLSYS_ERR_ARG, "nodes %d and %d are both named '%s'; names must be unique",
                                 first, v, d->name[v]);
        }
      tab[k] = v;
    }
    mlsys_free(tab);
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__remat_alloc_attrs(mlsys_remat_graph *g, int n) {
  int v;
  g->kind = (unsigned char *)mlsys_calloc((size_t)(n ? n : 1), 1);
  g->flags = (unsigned *)mlsys_calloc((size_t)(n ? n : 1), sizeof(unsigned));
  g->op = (char **)mlsys_calloc((size_t)(n ? n : 1), sizeof(char *));
  g->fwd_of = (int *)mlsys_alloc((size_t)(n ? n : 1), sizeof(int));
  if (!g->kind || !g->flags || !g->op || !g->fwd_of) return MLSYS_ERR_NOMEM;
  for (v = 0; v < n; v++) g->fwd_of[v] = -1;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_create(int n, const mlsys_remat_node *nodes, mlsys_remat_graph *out) {
  int *off = NULL, *dep = NULL, v, j, nnames = 0;
  double *cost = NULL;
  uint64_t *mem = NULL;
  const char **names = NULL;
  mlsys_status st = MLSYS_OK;
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if (n < 0) return mlsys_set_error(MLSYS_ERR_ARG, "graph: %d nodes", n);
  if (n > 0 && !nodes) return mlsys_set_error(MLSYS_ERR_ARG, "graph: %d nodes but no node array", n);
  if (n > MLSYS_REMAT_MAX_NODES)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "graph has %d nodes; the limit is %d", n, MLSYS_REMAT_MAX_NODES);
  off = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  cost = (double *)mlsys_alloc((size_t)(n ? n : 1), sizeof(double));
  mem = (uint64_t *)mlsys_alloc((size_t)(n ? n : 1), sizeof(uint64_t));
  names = (const char **)mlsys_calloc((size_t)(n ? n : 1), sizeof(char *));
  if (!off || !cost || !mem || !names) { st = MLSYS_ERR_NOMEM; goto done; }
  for (v = 0; v < n; v++) {
    if (nodes[v].ndeps < 0 || (nodes[v].ndeps > 0 && !nodes[v].deps)) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "node %d: %d dependencies but no list", v, nodes[v].ndeps);
      goto done;
    }
    if (off[v] > INT_MAX - nodes[v].ndeps) { st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "too many edges"); goto done; }
    off[v + 1] = off[v] + nodes[v].ndeps;
    cost[v] = nodes[v].cost;
    mem[v] = nodes[v].mem;
    names[v] = nodes[v].name;
    if (nodes[v].name) nnames++;
  }
  if (!(dep = (int *)mlsys_alloc((size_t)(off[n] ? off[n] : 1), sizeof(int)))) { st = MLSYS_ERR_NOMEM; goto done; }
  for (v = 0; v < n; v++)
    for (j = 0; j < nodes[v].ndeps; j++) dep[off[v] + j] = nodes[v].deps[j];
  if ((st = mlsys_dag_build_csr(&out->dag, n, off, dep, nnames ? names : NULL, cost, mem)) != MLSYS_OK) goto done;
  if ((st = mlsys__remat_alloc_attrs(out, n)) != MLSYS_OK) goto done;
  for (v = 0; v < n; v++) {
    if ((unsigned)nodes[v].kind > MLSYS_REMAT_O) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "node %d: unknown kind %d", v, (int)nodes[v].kind);
      goto done;
    }
    out->kind[v] = (unsigned char)nodes[v].kind;
    out->flags[v] = nodes[v].flags;
    if (nodes[v].op && !(out->op[v] = mlsys_strdup(nodes[v].op))) { st = MLSYS_ERR_NOMEM; goto done; }
  }
  st = mlsys__remat_check(out);
done:
  mlsys_free(off); mlsys_free(dep); mlsys_free(cost); mlsys_free(mem); mlsys_free((void *)names);
  if (st != MLSYS_OK) mlsys_remat_graph_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_chain(int L, mlsys_remat_graph *out) {
  int n = 2 * L + 1, v, *deps, nd = 0;
  mlsys_remat_node *nodes;
  char (*names)[24];
  mlsys_status st;
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if (L < 1 || L > (MLSYS_REMAT_MAX_NODES - 1) / 2)
    return mlsys_set_error(MLSYS_ERR_ARG, "chain length %d outside 1..%d", L, (MLSYS_REMAT_MAX_NODES - 1) / 2);
  nodes = (mlsys_remat_node *)mlsys_calloc((size_t)n, sizeof *nodes);
  deps = (int *)mlsys_alloc((size_t)n * 2, sizeof(int));
  names = (char (*)[24])mlsys_alloc((size_t)n, 24);
  if (!nodes || !deps || !names) { mlsys_free(nodes); mlsys_free(deps); mlsys_free(names); return MLSYS_ERR_NOMEM; }
  for (v = 0; v < n; v++) {
    nodes[v].cost = 1;
    nodes[v].mem = 1;
    nodes[v].deps = deps + nd;
    if (v < L) {
      nodes[v].kind = MLSYS_REMAT_F;
      snprintf(names[v], 24, "f%d", v);
      if (v > 0) deps[nd++] = v - 1;
    } else if (v == L) {
      nodes[v].kind = MLSYS_REMAT_L;
      snprintf(names[v], 24, "loss");
      deps[nd++] = v - 1;
    } else {
      nodes[v].kind = MLSYS_REMAT_B;
      snprintf(names[v], 24, "b%d", n - 1 - v);   /* gradient step of forward layer 2L - v */
      deps[nd++] = n - 1 - v;                      /* the forward value it differentiates */
      deps[nd++] = v - 1;                          /* the incoming gradient */
    }
    nodes[v].ndeps = (int)(deps + nd - nodes[v].deps);
    nodes[v].name = names[v];
  }
  /* keep the repo's edge order: (i, 2L-i) as the first argument, the chain edge second; sorted ascending */
  for (v = L + 1; v < n; v++) {
    int *d = (int *)nodes[v].deps;
    if (nodes[v].ndeps == 2 && d[0] > d[1]) { int t = d[0]; d[0] = d[1]; d[1] = t; }
  }
  st = mlsys_remat_graph_create(n, nodes, out);
  if (st == MLSYS_OK) {
    for (v = L + 1; v < n; v++) out->fwd_of[v] = n - 1 - v;
    if (!(out->name = mlsys_strdup("chain"))) st = MLSYS_ERR_NOMEM;
  }
  mlsys_free(nodes); mlsys_free(deps); mlsys_free(names);
  if (st != MLSYS_OK) mlsys_remat_graph_free(out);
  return st;
}

static int mlsys__remat_kind_from(const char *s) {
  if (!s) return -1;
  if (!strcmp(s, "F") || !strcmp(s, "forward")) return MLSYS_REMAT_F;
  if (!strcmp(s, "L") || !strcmp(s, "loss")) return MLSYS_REMAT_L;
  if (!strcmp(s, "B") || !strcmp(s, "backward")) return MLSYS_REMAT_B;
  if (!strcmp(s, "O") || !strcmp(s, "other")) return MLSYS_REMAT_O;
  return -1;
}
static unsigned mlsys__remat_flag_from(const char *s, size_t len) {
  static const char *names[] = {"norecompute", "rng", "alias", "inplace"};
  unsigned i;
  for (i = 0; i < 4; i++)
    if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0) return 1u << i;
  return 0;
}

/* Name → id lookup for deps written as names (hash table over the graph's names). */
typedef struct { size_t cap; int *tab; char **names; } mlsys__remat_names;
static size_t mlsys__remat_hash(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}
static mlsys_status mlsys__remat_names_init(mlsys__remat_names *nm, char **names, int n) {
  size_t k;
  int v;
  nm->cap = 16;
  nm->names = names;
  while (nm->cap < (size_t)n * 2 + 1) nm->cap *= 2;
  if (!(nm->tab = (int *)mlsys_alloc(nm->cap, sizeof(int)))) return MLSYS_ERR_NOMEM;
  for (k = 0; k < nm->cap; k++) nm->tab[k] = -1;
  for (v = 0; v < n; v++) {
    if (!names[v]) continue;
    for (k = mlsys__remat_hash(names[v]) & (nm->cap - 1); nm->tab[k] >= 0; k = (k + 1) & (nm->cap - 1))
      if (strcmp(names[nm->tab[k]], names[v]) == 0) break;
    if (nm->tab[k] < 0) nm->tab[k] = v;   /* duplicates are reported later by the common check */
  }
  return MLSYS_OK;
}
/* Insert names[v] (whose string is already in nm->names) unless the name is taken; returns 0 when taken. */
static int mlsys__remat_names_add(mlsys__remat_names *nm, int v) {
  size_t k;
  for (k = mlsys__remat_hash(nm->names[v]) & (nm->cap - 1); nm->tab[k] >= 0; k = (k + 1) & (nm->cap - 1))
    if (strcmp(nm->names[nm->tab[k]], nm->names[v]) == 0) return 0;
  nm->tab[k] = v;
  return 1;
}
static int mlsys__remat_names_find(const mlsys__remat_names *nm, const char *s) {
  size_t k;
  for (k = mlsys__remat_hash(s) & (nm->cap - 1); nm->tab[k] >= 0; k = (k + 1) & (nm->cap - 1))
    if (strcmp(nm->names[nm->tab[k]], s) == 0) return nm->tab[k];
  return -1;
}

/* Change the status of the current error detail, keeping its text. */
static void mlsys__remat_reset_status(mlsys_status st) {
  char keep[1024];
  snprintf(keep, sizeof keep, "%s", mlsys_last_error());
  mlsys_set_error(st, "%s", keep);
}

/* Staging area shared by both parsers: per-node attributes plus deps that may still be names. */
typedef struct {
  int n;
  double *cost;
  uint64_t *mem;
  unsigned char *kind;
  unsigned *flags;
  char **name, **op;
  int *fwd_of;
  char **fwd_of_name;
  int *fwd_line, *fwd_col;  /* where a fwd_of name was written */
  int *dep_off, ndep, capdep;
  int *dep;              /* id, or -1 - index into dep_name */
  char **dep_name;       /* deps given by name */
  int *dep_line, *dep_col;
  int ndepname, capdepname;
} mlsys__remat_stage;

static void mlsys__remat_stage_free(mlsys__remat_stage *s) {
  int i;
  if (s->name) for (i = 0; i < s->n; i++) mlsys_free(s->name[i]);
  if (s->op) for (i = 0; i < s->n; i++) mlsys_free(s->op[i]);
  if (s->fwd_of_name) for (i = 0; i < s->n; i++) mlsys_free(s->fwd_of_name[i]);
  for (i = 0; i < s->ndepname; i++) mlsys_free(s->dep_name[i]);
  mlsys_free(s->cost); mlsys_free(s->mem); mlsys_free(s->kind); mlsys_free(s->flags); mlsys_free(s->name);
  mlsys_free(s->op); mlsys_free(s->fwd_of); mlsys_free(s->fwd_of_name); mlsys_free(s->dep_off); mlsys_free(s->dep);
  mlsys_free(s->fwd_line); mlsys_free(s->fwd_col);
  mlsys_free(s->dep_name); mlsys_free(s->dep_line); mlsys_free(s->dep_col);
  memset(s, 0, sizeof *s);
}
static mlsys_status mlsys__remat_stage_init(mlsys__remat_stage *s, int n) {
  int v;
  memset(s, 0, sizeof *s);
  s->n = n;
  s->cost = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  s->mem = (uint64_t *)mlsys_calloc((size_t)n + 1, sizeof(uint64_t));
  s->kind = (unsigned char *)mlsys_calloc((size_t)n + 1, 1);
  s->flags = (unsigned *)mlsys_calloc((size_t)n + 1, sizeof(unsigned));
  s->name = (char **)mlsys_calloc((size_t)n + 1, sizeof(char *));
  s->op = (char **)mlsys_calloc((size_t)n + 1, sizeof(char *));
  s->fwd_of = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  s->fwd_of_name = (char **)mlsys_calloc((size_t)n + 1, sizeof(char *));
  s->dep_off = (int *)mlsys_calloc((size_t)n + 2, sizeof(int));
  s->fwd_line = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  s->fwd_col = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  if (!s->cost || !s->mem || !s->kind || !s->flags || !s->name || !s->op || !s->fwd_of || !s->fwd_of_name ||
      !s->dep_off || !s->fwd_line || !s->fwd_col) {
    mlsys__remat_stage_free(s);
    return MLSYS_ERR_NOMEM;
  }
  for (v = 0; v <= n; v++) s->fwd_of[v] = -1;
  return MLSYS_OK;
}
static mlsys_status mlsys__remat_stage_dep(mlsys__remat_stage *s, int id, const char *name, int line, int col) {
  if (s->ndep == s->capdep) {
    int nc = s->capdep ? s->capdep * 2 : 256;
    int *d = (int *)mlsys_realloc_array(s->dep, (size_t)nc, sizeof(int));
    if (!d) return MLSYS_ERR_NOMEM;
    s->dep = d;
    d = (int *)mlsys_realloc_array(s->dep_line, (size_t)nc, sizeof(int));
    if (!d) return MLSYS_ERR_NOMEM;
    s->dep_line = d;
    d = (int *)mlsys_realloc_array(s->dep_col, (size_t)nc, sizeof(int));
    if (!d) return MLSYS_ERR_NOMEM;
    s->dep_col = d;
    s->capdep = nc;
  }
  if (name) {
    if (s->ndepname == s->capdepname) {
      int nc = s->capdepname ? s->capdepname * 2 : 64;
      char **d = (char **)mlsys_realloc_array(s->dep_name, (size_t)nc, sizeof(char *));
      if (!d) return MLSYS_ERR_NOMEM;
      s->dep_name = d;
      s->capdepname = nc;
    }
    if (!(s->dep_name[s->ndepname] = mlsys_strdup(name))) return MLSYS_ERR_NOMEM;
    id = -1 - s->ndepname++;
  }
  s->dep_line[s->ndep] = line;
  s->dep_col[s->ndep] = col;
  s->dep[s->ndep++] = id;
  return MLSYS_OK;
}

/* Resolve names, build the graph, run the common checks. src is used for messages. */
static mlsys_status mlsys__remat_stage_finish(mlsys__remat_stage *s, const char *src, mlsys_remat_graph *g) {
  mlsys__remat_names nm;
  mlsys_status st;
  int v, j, nnames = 0;
  char b[64];
  for (v = 0; v < s->n; v++) nnames += s->name[v] != NULL;
  memset(&nm, 0, sizeof nm);
  if (nnames && (st = mlsys__remat_names_init(&nm, s->name, s->n)) != MLSYS_OK) return st;
  if (nnames && nnames < s->n) {
    /* unnamed nodes get "n<id>" (or "n<id>_2", ... when a given name takes it) so every node can be named */
    for (v = 0; v < s->n; v++)
      if (!s->name[v]) {
        int k = 1;
        do {
          mlsys_free(s->name[v]);
          if (k == 1) snprintf(b, sizeof b, "n%d", v); else snprintf(b, sizeof b, "n%d_%d", v, k);
          k++;
          if (!(s->name[v] = mlsys_strdup(b))) { mlsys_free(nm.tab); return MLSYS_ERR_NOMEM; }
        } while (!mlsys__remat_names_add(&nm, v));
      }
    nnames = s->n;
  }
  for (v = 0; v < s->n; v++)
    for (j = s->dep_off[v]; j < s->dep_off[v + 1]; j++) {
      if (s->dep[j] < 0) {
        const char *want = s->dep_name[-1 - s->dep[j]];
        int id = nm.tab ? mlsys__remat_names_find(&nm, want) : -1;
        if (id < 0) {
          mlsys_free(nm.tab);
          return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: node %d%s%s%s uses unknown input '%s'%s", src,
                                 s->dep_line[j], s->dep_col[j], v, s->name[v] ? " '" : "",
                                 s->name[v] ? s->name[v] : "", s->name[v] ? "'" : "", want,
                                 nnames ? "" : " (no node has a name)");
        }
        s->dep[j] = id;
      } else if (s->dep[j] >= s->n) {
        mlsys_free(nm.tab);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: node %d uses input %d, but the graph has only %d nodes",
                               src, s->dep_line[j], s->dep_col[j], v, s->dep[j], s->n);
      }
    }
  for (v = 0; v < s->n; v++)
    if (s->fwd_of_name[v]) {
      int id = nm.tab ? mlsys__remat_names_find(&nm, s->fwd_of_name[v]) : -1;
      if (id < 0) {
        mlsys_free(nm.tab);
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: node %d: fwd_of names unknown node '%s'", src,
                               s->fwd_line[v], s->fwd_col[v], v, s->fwd_of_name[v]);
      }
      s->fwd_of[v] = id;
    }
  mlsys_free(nm.tab);
  if ((st = mlsys_dag_build_csr(&g->dag, s->n, s->dep_off, s->dep, nnames ? (const char *const *)s->name : NULL,
                                s->cost, s->mem)) != MLSYS_OK)
    return mlsys_prefix_error("%s", src);
  if ((st = mlsys__remat_alloc_attrs(g, s->n)) != MLSYS_OK) return st;
  for (v = 0; v < s->n; v++) {
    g->kind[v] = s->kind[v];
    g->flags[v] = s->flags[v];
    g->op[v] = s->op[v];
    s->op[v] = NULL;
    g->fwd_of[v] = s->fwd_of[v];
  }
  if ((st = mlsys__remat_check(g)) != MLSYS_OK) return mlsys_prefix_error("%s", src);
  return MLSYS_OK;
}

/* ---- JSON form ---- */
#define MLSYS__REMAT_MAX_DIM (1ll << 48)   /* per dim: shapes of byte-sized tensors stay below it */
#define MLSYS__REMAT_MAX_GEOM 65536        /* kernel, stride, padding, dilation, groups */

/* "key": [int, ...] of 1..maxn integers in [lo, hi] into out (or an exact count when exact). */
static mlsys_status mlsys__remat_json_ints(const mlsys_json *a, int node, const char *key, int maxn, int exact,
                                           int64_t lo, int64_t hi, int64_t *out, int *n) {
  int k;
  if (a->type != MLSYS_JSON_ARRAY)
    return mlsys_json_error_at(a, "node %d: \"%s\" must be an array of integers, got %s", node, key,
                               mlsys_json_type_name(a->type));
  if (a->count > maxn || (exact && a->count != maxn))
    return mlsys_json_error_at(a, "node %d: \"%s\" has %d dims; %s %d", node, key, a->count,
                               exact ? "it needs exactly" : "the limit is", maxn);
  for (k = 0; k < a->count; k++) {
    const mlsys_json *d = &a->items[k];
    if (d->type != MLSYS_JSON_NUMBER || !d->is_int)
      return mlsys_json_error_at(d, "node %d: \"%s\"[%d] must be an integer", node, key, k);
    if (d->i64 < lo)
      return mlsys_json_error_at(d, "node %d: \"%s\"[%d] is %lld; it must be >= %lld", node, key, k,
                                 (long long)d->i64, (long long)lo);
    if (d->i64 > hi)
      return mlsys_json_error_at(d, "node %d: \"%s\"[%d] is %lld, over the limit of %lld", node, key, k,
                                 (long long)d->i64, (long long)hi);
    out[k] = d->i64;
  }
  *n = a->count;
  return MLSYS_OK;
}

/* A node's optional "shape", "attrs", "impls" (GRAPH FORMATS) into *in; *any = 1 when one of them is present. */
static mlsys_status mlsys__remat_json_info(const mlsys_json *nd, int i, int kind, mlsys_remat_node_info *in,
                                           int *any) {
  const mlsys_json *v, *at, *im;
  mlsys_status st;
  int64_t tmp[MLSYS_REMAT_MAX_DIMS];
  int k, cnt;
  memset(in, 0, sizeof *in);
  if ((v = mlsys_json_get(nd, "shape")) && v->type != MLSYS_JSON_NULL) {
    *any = 1;
    if ((st = mlsys__remat_json_ints(v, i, "shape", MLSYS_REMAT_MAX_DIMS, 0, 0, MLSYS__REMAT_MAX_DIM, in->shape,
                                     &in->ndim)) != MLSYS_OK)
      return st;
  }
  if ((st = mlsys_json_get_typed(nd, "attrs", MLSYS_JSON_OBJECT, 0, &at)) != MLSYS_OK) return st;
  if (at) {
    static const char *const pairs[4] = {"kernel", "stride", "padding", "dilation"};
    int *dst[4];
    *any = 1;
    dst[0] = in->kernel; dst[1] = in->stride; dst[2] = in->pad; dst[3] = in->dilation;
    if ((v = mlsys_json_get(at, "in_shape")) && v->type != MLSYS_JSON_NULL &&
        (st = mlsys__remat_json_ints(v, i, "in_shape", MLSYS_REMAT_MAX_DIMS, 0, 0, MLSYS__REMAT_MAX_DIM, in->in_shape,
                                     &in->in_ndim)) != MLSYS_OK)
      return st;
    for (k = 0; k < 4; k++)
      if ((v = mlsys_json_get(at, pairs[k])) && v->type != MLSYS_JSON_NULL) {
        if ((st = mlsys__remat_json_ints(v, i, pairs[k], 2, 1, k == 2 ? 0 : 1, MLSYS__REMAT_MAX_GEOM, tmp, &cnt)) !=
            MLSYS_OK)
          return st;
        dst[k][0] = (int)tmp[0];
        dst[k][1] = (int)tmp[1];
      }
    if ((st = mlsys_json_get_i64(at, "groups", 0, 0, 1, MLSYS__REMAT_MAX_GEOM, &tmp[0])) != MLSYS_OK) return st;
    in->groups = (int)tmp[0];
  }
  if ((st = mlsys_json_get_typed(nd, "impls", MLSYS_JSON_ARRAY, 0, &im)) != MLSYS_OK) return st;
  if (im) {
    *any = 1;
    if (kind != MLSYS_REMAT_F && kind != MLSYS_REMAT_B)
      return mlsys_json_error_at(im, "node %d: \"impls\" are allowed on F and B nodes only", i);
    if (im->count > MLSYS_REMAT_MONET_MAX_IMPLS)
      return mlsys_json_error_at(im, "node %d: %d impls; the limit is %d", i, im->count, MLSYS_REMAT_MONET_MAX_IMPLS);
    for (k = 0; k < im->count; k++) {
      const mlsys_json *o = &im->items[k], *w;
      mlsys_remat_node_impl *x = &in->impl[k];
      const char *nm;
      if (o->type != MLSYS_JSON_OBJECT)
        return mlsys_json_error_at(o, "node %d: impl %d must be an object, got %s", i, k,
                                   mlsys_json_type_name(o->type));
      if ((st = mlsys_json_get_str(o, "name", 1, NULL, &nm)) != MLSYS_OK) return st;
      if (!nm[0] || strlen(nm) > sizeof x->name - 1 || strlen(nm) != mlsys_json_get(o, "name")->len)
        return mlsys_json_error_at(mlsys_json_get(o, "name"), "node %d: impl %d: the name must be 1-%d bytes", i, k,
                                   (int)sizeof x->name - 1);
      memcpy(x->name, nm, strlen(nm) + 1);
      if (!mlsys_json_get(o, "cost"))
        return mlsys_json_error_at(o, "node %d: impl %d '%s' has no \"cost\"", i, k, nm);
      if ((st = mlsys_json_get_double(o, "cost", 1, 0, 0, MLSYS__REMAT_MAX_COST, &x->cost)) != MLSYS_OK) return st;
      w = mlsys_json_get(o, "workspace");
      if (w && w->type == MLSYS_JSON_NUMBER && w->num < 0)
        return mlsys_json_error_at(w, "node %d: impl %d '%s' has a negative workspace", i, k, nm);
      if ((st = mlsys_json_get_u64(o, "workspace", 0, 0, &x->workspace)) != MLSYS_OK) return st;
      if (x->workspace > MLSYS__REMAT_MAX_MEM)
        return mlsys_json_error_at(w, "node %d: impl %d '%s': workspace over the limit of 2^48 bytes", i, k, nm);
      if ((st = mlsys_json_get_bool(o, "fixed_workspace", 0, 0, &x->fixed_workspace)) != MLSYS_OK) return st;
    }
    in->nimpl = im->count;
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__remat_parse_json(const char *text, size_t len, const char *src, mlsys_remat_graph *g) {
  mlsys_json_doc doc;
  const mlsys_json *root, *nodes, *v, *fixed;
  mlsys__remat_stage s;
  mlsys_remat_node_info *info = NULL;
  mlsys_status st;
  const char *str;
  int64_t i64;
  int i, j, any_info = 0;
  memset(&s, 0, sizeof s);
  if ((st = mlsys_json_parse(text, len, src, &doc)) != MLSYS_OK) return st;
  root = doc.root;
  if (root->type != MLSYS_JSON_OBJECT) {
    st = mlsys_json_error_at(root, "a remat graph must be a JSON object, got %s", mlsys_json_type_name(root->type));
    goto done;
  }
  if ((st = mlsys_json_get_str(root, "format", 0, "mlsys-remat-graph", &str)) != MLSYS_OK) goto done;
  if (strcmp(str, "mlsys-remat-graph") != 0) {
    st = mlsys_json_error_at(mlsys_json_get(root, "format"), "format is '%s', expected 'mlsys-remat-graph'", str);
    goto done;
  }
  if ((st = mlsys_json_get_i64(root, "version", 0, 1, INT64_MIN, INT64_MAX, &i64)) != MLSYS_OK) goto done;
  if (i64 != 1) {
    st = mlsys_json_error_at(mlsys_json_get(root, "version"), "version %lld is not supported (this reader knows 1)",
                             (long long)i64);
    goto done;
  }
  if ((st = mlsys_json_get_str(root, "name", 0, NULL, &str)) != MLSYS_OK) goto done;
  if (str && !(g->name = mlsys_strdup(str))) { st = MLSYS_ERR_NOMEM; goto done; }
  if ((st = mlsys_json_get_i64(root, "batch", 0, 0, 0, INT_MAX, &i64)) != MLSYS_OK) goto done;
  g->batch = (int)i64;
  if ((st = mlsys_json_get_typed(root, "units", MLSYS_JSON_OBJECT, 0, &v)) != MLSYS_OK) goto done;
  if (v) {
    if ((st = mlsys_json_get_str(v, "mem", 0, NULL, &str)) != MLSYS_OK) goto done;
    if (str && !(g->mem_unit = mlsys_strdup(str))) { st = MLSYS_ERR_NOMEM; goto done; }
    if ((st = mlsys_json_get_str(v, "cost", 0, NULL, &str)) != MLSYS_OK) goto done;
    if (str && !(g->cost_unit = mlsys_strdup(str))) { st = MLSYS_ERR_NOMEM; goto done; }
  }
  if ((st = mlsys_json_get_typed(root, "fixed", MLSYS_JSON_OBJECT, 0, &fixed)) != MLSYS_OK) goto done;
  if (fixed)
    for (i = 0; i < fixed->count; i++) {
      uint64_t bytes;
      if ((st = mlsys_json_get_u64(fixed, fixed->keys[i], 1, 0, &bytes)) != MLSYS_OK) goto done;
      if ((st = mlsys_remat_graph_set_fixed(g, fixed->keys[i], bytes)) != MLSYS_OK) {
        if (st != MLSYS_ERR_NOMEM) {   /* a bad value in the file is a parse error; too many stays TOO_BIG */
          if (st == MLSYS_ERR_ARG) mlsys__remat_reset_status(MLSYS_ERR_PARSE);
          st = mlsys_prefix_error("%s:%d:%d", src, fixed->items[i].line, fixed->items[i].col);
        }
        goto done;
      }
    }
  if ((st = mlsys_json_get_typed(root, "nodes", MLSYS_JSON_ARRAY, 1, &nodes)) != MLSYS_OK) goto done;
  if (nodes->count > MLSYS_REMAT_MAX_NODES) {
    st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d:%d: %d nodes; the limit is %d", src, nodes->line, nodes->col,
                         nodes->count, MLSYS_REMAT_MAX_NODES);
    goto done;
  }
  if ((st = mlsys__remat_stage_init(&s, nodes->count)) != MLSYS_OK) goto done;
  if (!(info = (mlsys_remat_node_info *)mlsys_calloc((size_t)nodes->count + 1, sizeof *info))) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (i = 0; i < nodes->count; i++) {
    const mlsys_json *nd = &nodes->items[i], *deps, *flags, *fo;
    int kind;
    if (nd->type != MLSYS_JSON_OBJECT) {
      st = mlsys_json_error_at(nd, "node %d must be an object, got %s", i, mlsys_json_type_name(nd->type));
      goto done;
    }
    if ((st = mlsys_json_get_i64(nd, "id", 0, i, INT64_MIN, INT64_MAX, &i64)) != MLSYS_OK) goto done;
    if (i64 != i) {
      st = mlsys_json_error_at(mlsys_json_get(nd, "id"), "node at position %d has id %lld; ids must be 0..n-1 in "
                               "order", i, (long long)i64);
      goto done;
    }
    if ((st = mlsys_json_get_str(nd, "kind", 0, "F", &str)) != MLSYS_OK) goto done;
    if ((kind = mlsys__remat_kind_from(str)) < 0) {
      st = mlsys_json_error_at(mlsys_json_get(nd, "kind"), "node %d: unknown kind '%s' (F, L, B or O)", i, str);
      goto done;
    }
    s.kind[i] = (unsigned char)kind;
    if ((st = mlsys_json_get_str(nd, "name", 0, NULL, &str)) != MLSYS_OK) goto done;
    if (str && !(s.name[i] = mlsys_strdup(str))) { st = MLSYS_ERR_NOMEM; goto done; }
    if ((st = mlsys_json_get_str(nd, "op", 0, NULL, &str)) != MLSYS_OK) goto done;
    if (str && !(s.op[i] = mlsys_strdup(str))) { st = MLSYS_ERR_NOMEM; goto done; }
    if ((st = mlsys_json_get_double(nd, "cost", 1, 0, 0, MLSYS__REMAT_MAX_COST, &s.cost[i])) != MLSYS_OK) goto done;
    if ((st = mlsys_json_get_u64(nd, "mem", 1, 0, &s.mem[i])) != MLSYS_OK) goto done;
    if (s.mem[i] > MLSYS__REMAT_MAX_MEM) {
      st = mlsys_json_error_at(mlsys_json_get(nd, "mem"), "node %d: %llu bytes is over the limit of 2^48", i,
                               (unsigned long long)s.mem[i]);
      goto done;
    }
    if ((st = mlsys_json_get_typed(nd, "deps", MLSYS_JSON_ARRAY, 0, &deps)) != MLSYS_OK) goto done;
    s.dep_off[i] = s.ndep;
    if (deps)
      for (j = 0; j < deps->count; j++) {
        const mlsys_json *d = &deps->items[j];
        if (d->type == MLSYS_JSON_NUMBER && d->is_int && d->i64 >= 0 && d->i64 < INT_MAX)
          st = mlsys__remat_stage_dep(&s, (int)d->i64, NULL, d->line, d->col);
        else if (d->type == MLSYS_JSON_STRING)
          st = mlsys__remat_stage_dep(&s, 0, d->str, d->line, d->col);
        else
          st = mlsys_json_error_at(d, "node %d: a dependency must be a node id or name", i);
        if (st != MLSYS_OK) goto done;
      }
    if ((st = mlsys_json_get_typed(nd, "flags", MLSYS_JSON_ARRAY, 0, &flags)) != MLSYS_OK) goto done;
    if (flags)
      for (j = 0; j < flags->count; j++) {
        const mlsys_json *f = &flags->items[j];
        unsigned bit = f->type == MLSYS_JSON_STRING ? mlsys__remat_flag_from(f->str, f->len) : 0;
        if (!bit) {
          st = mlsys_json_error_at(f, "node %d: unknown flag (norecompute, rng, alias or inplace)", i);
          goto done;
        }
        s.flags[i] |= bit;
      }
    fo = mlsys_json_get(nd, "fwd_of");
    if (fo && fo->type == MLSYS_JSON_NUMBER && fo->is_int && fo->i64 >= 0 && fo->i64 < nodes->count)
      s.fwd_of[i] = (int)fo->i64;
    else if (fo && fo->type == MLSYS_JSON_STRING) {
      if (!(s.fwd_of_name[i] = mlsys_strdup(fo->str))) { st = MLSYS_ERR_NOMEM; goto done; }
      s.fwd_line[i] = fo->line;
      s.fwd_col[i] = fo->col;
    } else if (fo && fo->type != MLSYS_JSON_NULL) {
      st = mlsys_json_error_at(fo, "node %d: fwd_of must be a node id, a name or null", i);
      goto done;
    }
    if ((st = mlsys__remat_json_info(nd, i, kind, &info[i], &any_info)) != MLSYS_OK) goto done;
  }
  s.dep_off[nodes->count] = s.ndep;
  st = mlsys__remat_stage_finish(&s, src, g);
  if (st == MLSYS_OK && any_info) { g->info = info; info = NULL; }
done:
  mlsys_free(info);
  mlsys__remat_stage_free(&s);
  mlsys_json_doc_free(&doc);
  return st;
}

/* ---- text form ---- */
/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF): names must survive a trip through JSON. */
static int mlsys__remat_utf8_ok(const char *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p, *e = s + n;
  while (s < e) {
    unsigned c = *s++, need, cp, min;
    if (c < 0x80) continue;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if ((size_t)(e - s) < need) return 0;
    while (need--) {
      if ((*s & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (*s++ & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  }
  return 1;
}
/* A node name, op name or fixed-memory category the text form can carry: one token, no '#', not ':'. */
static int mlsys__remat_text_token_ok(const char *t) {
  const char *p;
  if (!t || !*t || !strcmp(t, ":")) return 0;
  for (p = t; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == '#' || *p == 0x7f) return 0;
  return mlsys__remat_utf8_ok(t, strlen(t));
}

typedef struct { const char *p, *end, *src; int line; const char *line_start; } mlsys__remat_lex;

/* Next whitespace-separated token on the current line ('#' ends the line). Returns its length (0 at end of line). */
static size_t mlsys__remat_tok(mlsys__remat_lex *lx, const char **tok) {
  const char *p = lx->p;
  while (p < lx->end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
  if (p >= lx->end || *p == '\n' || *p == '#') { lx->p = p; *tok = p; return 0; }
  *tok = p;
  while (p < lx->end && !(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '#')) p++;
  lx->p = p;
  return (size_t)(p - *tok);
}
static void mlsys__remat_nextline(mlsys__remat_lex *lx) {
  while (lx->p < lx->end && *lx->p != '\n') lx->p++;
  if (lx->p < lx->end) {   /* at the end of a file without a final newline, positions stay on the last line */
    lx->p++;
    lx->line++;
    lx->line_start = lx->p;
  }
}
static mlsys_status mlsys__remat_lex_err(const mlsys__remat_lex *lx, const char *at, const char *fmt, ...)
    MLSYS__PRINTF(3, 4);
static mlsys_status mlsys__remat_lex_err(const mlsys__remat_lex *lx, const char *at, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: %s", lx->src, lx->line, (int)(at - lx->line_start) + 1, msg);
}
static int mlsys__remat_tok_is(const char *t, size_t n, const char *word) {
  return strlen(word) == n && strncmp(t, word, n) == 0;
}
/* Copy a token into a NUL-terminated buffer (tokens longer than the buffer are an error for the caller). */
static int mlsys__remat_tok_copy(const char *t, size_t n, char *buf, size_t cap) {
  if (n + 1 > cap) return 0;
  memcpy(buf, t, n);
  buf[n] = 0;
  return 1;
}
static int mlsys__remat_parse_u64(const char *t, size_t n, uint64_t *out) {
  uint64_t v = 0;
  size_t i;
  if (n == 0 || n > 20) return 0;
  for (i = 0; i < n; i++) {
    if (t[i] < '0' || t[i] > '9') return 0;
    if (v > (UINT64_MAX - (uint64_t)(t[i] - '0')) / 10) return 0;
    v = v * 10 + (uint64_t)(t[i] - '0');
  }
  *out = v;
  return 1;
}
static int mlsys__remat_parse_double(const char *t, size_t n, double *out) {
  char buf[64], *e;
  if (!mlsys__remat_tok_copy(t, n, buf, sizeof buf)) return 0;
  *out = strtod(buf, &e);
  return e == buf + n && isfinite(*out);   /* ERANGE for subnormals is fine; overflow gives inf */
}

static mlsys_status mlsys__remat_parse_text(const char *text, size_t len, const char *src, mlsys_remat_graph *g) {
  mlsys__remat_lex lx;
  mlsys__remat_stage s;
  mlsys_status st = MLSYS_OK;
  const char *t;
  size_t n;
  char buf[64];
  int nnodes = -1, v;
  uint64_t u;
  memset(&s, 0, sizeof s);
  lx.p = text; lx.end = text + len; lx.src = src; lx.line = 1; lx.line_start = text;
  /* header: first non-empty line */
  for (;;) {
    if (lx.p >= lx.end) return mlsys__remat_lex_err(&lx, lx.p, "empty graph file (expected 'remat-graph 1')");
    if ((n = mlsys__remat_tok(&lx, &t)) > 0) break;
    mlsys__remat_nextline(&lx);
  }
  if (!mlsys__remat_tok_is(t, n, "remat-graph"))
    return mlsys__remat_lex_err(&lx, t, "expected 'remat-graph 1' (or a JSON object) at the start");
  n = mlsys__remat_tok(&lx, &t);
  if (!mlsys__remat_tok_is(t, n, "1"))
    return mlsys__remat_lex_err(&lx, t, "unsupported version '%.*s' (this reader knows 1)", (int)(n > 40 ? 40 : n), t);
  mlsys__remat_nextline(&lx);
  /* key lines until "nodes N" */
  while (nnodes < 0) {
    if (lx.p >= lx.end) return mlsys__remat_lex_err(&lx, lx.p, "missing 'nodes N' line");
    n = mlsys__remat_tok(&lx, &t);
    if (n == 0) { mlsys__remat_nextline(&lx); continue; }
    if (mlsys__remat_tok_is(t, n, "name")) {
      /* the rest of the line up to a comment, trimmed: graph names may contain spaces */
      const char *rest, *end;
      if (!mlsys__remat_tok(&lx, &rest)) return mlsys__remat_lex_err(&lx, rest, "'name' needs a value");
      for (end = rest; end < lx.end && *end != '\n' && *end != '#'; end++) {}
      while (end > rest && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
      n = (size_t)(end - rest);
      if (!mlsys__remat_utf8_ok(rest, n)) return mlsys__remat_lex_err(&lx, rest, "the graph name is not valid UTF-8");
      mlsys_free(g->name);
      if (!(g->name = (char *)mlsys_alloc(n + 1, 1))) return MLSYS_ERR_NOMEM;
      memcpy(g->name, rest, n);
      g->name[n] = 0;
      lx.p = end;
    } else if (mlsys__remat_tok_is(t, n, "batch")) {
      const char *a;
      n = mlsys__remat_tok(&lx, &a);
      if (!mlsys__remat_parse_u64(a, n, &u) || u > INT_MAX)
        return mlsys__remat_lex_err(&lx, a, "'batch' needs a non-negative integer");
      g->batch = (int)u;
    } else if (mlsys__remat_tok_is(t, n, "units") || mlsys__remat_tok_is(t, n, "fixed")) {
      int is_fixed = t[0] == 'f';
      const char *a;
      while ((n = mlsys__remat_tok(&lx, &a)) > 0) {
        const char *eq = (const char *)memchr(a, '=', n);
        char key[128];
        if (!eq || eq == a || !mlsys__remat_tok_copy(a, (size_t)(eq - a), key, sizeof key))
          return mlsys__remat_lex_err(&lx, a, "expected key=value");
        if (is_fixed) {
          if (!mlsys__remat_parse_u64(eq + 1, n - (size_t)(eq + 1 - a), &u))
            return mlsys__remat_lex_err(&lx, eq + 1, "fixed memory '%s' must be a non-negative integer (bytes)", key);
          if ((st = mlsys_remat_graph_set_fixed(g, key, u)) != MLSYS_OK) {
            if (st == MLSYS_ERR_NOMEM) return st;
            if (st == MLSYS_ERR_ARG) mlsys__remat_reset_status(MLSYS_ERR_PARSE);
            return mlsys_prefix_error("%s:%d:%d", src, lx.line, (int)(a - lx.line_start) + 1);
          }
        } else {
          char **dst = strcmp(key, "mem") == 0 ? &g->mem_unit : strcmp(key, "cost") == 0 ? &g->cost_unit : NULL;
          if (dst) {
            size_t vl = n - (size_t)(eq + 1 - a);
            if (!mlsys__remat_utf8_ok(eq + 1, vl)) return mlsys__remat_lex_err(&lx, eq + 1, "unit is not valid UTF-8");
            mlsys_free(*dst);
            if (!(*dst = (char *)mlsys_alloc(vl + 1, 1))) return MLSYS_ERR_NOMEM;
            memcpy(*dst, eq + 1, vl);
            (*dst)[vl] = 0;
          }
        }
      }
    } else if (mlsys__remat_tok_is(t, n, "nodes")) {
      const char *a;
      n = mlsys__remat_tok(&lx, &a);
      if (!mlsys__remat_parse_u64(a, n, &u)) return mlsys__remat_lex_err(&lx, a, "'nodes' needs a count");
      if (u > MLSYS_REMAT_MAX_NODES)
        return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d: %llu nodes; the limit is %d", src, lx.line,
                               (unsigned long long)u, MLSYS_REMAT_MAX_NODES);
      nnodes = (int)u;
    } else {
      return mlsys__remat_lex_err(&lx, t, "unknown header line (expected name, batch, units, fixed or nodes)");
    }
    mlsys__remat_nextline(&lx);
  }
  if ((st = mlsys__remat_stage_init(&s, nnodes)) != MLSYS_OK) return st;
  for (v = 0; v < nnodes;) {
    const char *a;
    int kind;
    if (lx.p >= lx.end) {
      st = mlsys__remat_lex_err(&lx, lx.p, "file ends after %d of %d nodes", v, nnodes);
      goto done;
    }
    n = mlsys__remat_tok(&lx, &t);
    if (n == 0) { mlsys__remat_nextline(&lx); continue; }
    if (!mlsys__remat_parse_u64(t, n, &u) || u != (uint64_t)v) {
      st = mlsys__remat_lex_err(&lx, t, "expected node id %d (ids are 0..n-1 in order)", v);
      goto done;
    }
    n = mlsys__remat_tok(&lx, &a);
    if (!mlsys__remat_tok_copy(a, n, buf, sizeof buf) || (kind = mlsys__remat_kind_from(buf)) < 0) {
      st = mlsys__remat_lex_err(&lx, a, "expected a node kind (F, L, B or O)");
      goto done;
    }
    s.kind[v] = (unsigned char)kind;
    n = mlsys__remat_tok(&lx, &a);
    if (!mlsys__remat_parse_double(a, n, &s.cost[v]) || !(s.cost[v] >= 0) || s.cost[v] > MLSYS__REMAT_MAX_COST) {
      st = mlsys__remat_lex_err(&lx, a, "node %d: cost must be a finite number >= 0", v);
      goto done;
    }
    n = mlsys__remat_tok(&lx, &a);
    if (!mlsys__remat_parse_u64(a, n, &s.mem[v]) || s.mem[v] > MLSYS__REMAT_MAX_MEM) {
      st = mlsys__remat_lex_err(&lx, a, "node %d: mem must be a non-negative integer number of bytes (< 2^48)", v);
      goto done;
    }
    n = mlsys__remat_tok(&lx, &a);
    if (n == 0) { st = mlsys__remat_lex_err(&lx, a, "node %d: expected flags ('-' or a comma list)", v); goto done; }
    if (!(n == 1 && a[0] == '-')) {
      const char *f = a, *e = a + n;
      while (f < e) {
        const char *c = (const char *)memchr(f, ',', (size_t)(e - f));
        unsigned bit;
        if (!c) c = e;
        if (!(bit = mlsys__remat_flag_from(f, (size_t)(c - f)))) {
          st = mlsys__remat_lex_err(&lx, f, "node %d: unknown flag (norecompute, rng, alias or inplace)", v);
          goto done;
        }
        s.flags[v] |= bit;
        f = c + 1;
      }
    }
    n = mlsys__remat_tok(&lx, &a);
    if (n == 0 || mlsys__remat_tok_is(a, n, ":")) {
      st = mlsys__remat_lex_err(&lx, a, "node %d: expected a name", v);
      goto done;
    }
    if (!mlsys__remat_utf8_ok(a, n)) {
      st = mlsys__remat_lex_err(&lx, a, "node %d: the name is not valid UTF-8", v);
      goto done;
    }
    if (!(s.name[v] = (char *)mlsys_alloc(n + 1, 1))) { st = MLSYS_ERR_NOMEM; goto done; }
    memcpy(s.name[v], a, n);
    s.name[v][n] = 0;
    /* optional fields between the name and ':': op=<operator> and fwd_of=<id or name> */
    for (;;) {
      n = mlsys__remat_tok(&lx, &a);
      if (n > 3 && !strncmp(a, "op=", 3)) {
        if (!mlsys__remat_utf8_ok(a + 3, n - 3)) {
          st = mlsys__remat_lex_err(&lx, a, "node %d: op is not valid UTF-8", v);
          goto done;
        }
        mlsys_free(s.op[v]);
        if (!(s.op[v] = (char *)mlsys_alloc(n - 2, 1))) { st = MLSYS_ERR_NOMEM; goto done; }
        memcpy(s.op[v], a + 3, n - 3);
        s.op[v][n - 3] = 0;
      } else if (n > 7 && !strncmp(a, "fwd_of=", 7)) {
        if (mlsys__remat_parse_u64(a + 7, n - 7, &u)) {
          if (u >= (uint64_t)nnodes) {
            st = mlsys__remat_lex_err(&lx, a + 7, "node %d: fwd_of %llu is not a node", v, (unsigned long long)u);
            goto done;
          }
          s.fwd_of[v] = (int)u;
        } else {
          mlsys_free(s.fwd_of_name[v]);
          if (!(s.fwd_of_name[v] = (char *)mlsys_alloc(n - 6, 1))) { st = MLSYS_ERR_NOMEM; goto done; }
          memcpy(s.fwd_of_name[v], a + 7, n - 7);
          s.fwd_of_name[v][n - 7] = 0;
          s.fwd_line[v] = lx.line;
          s.fwd_col[v] = (int)(a + 7 - lx.line_start) + 1;
        }
      } else {
        break;
      }
    }
    if (!mlsys__remat_tok_is(a, n, ":")) {
      st = mlsys__remat_lex_err(&lx, a, "node %d: expected ':' before the dependencies (or op=, fwd_of=)", v);
      goto done;
    }
    s.dep_off[v] = s.ndep;
    while ((n = mlsys__remat_tok(&lx, &a)) > 0) {
      int col = (int)(a - lx.line_start) + 1;
      if (mlsys__remat_parse_u64(a, n, &u)) {
        if (u >= (uint64_t)nnodes) {
          st = mlsys__remat_lex_err(&lx, a, "node %d uses input %llu, but the graph has only %d nodes", v,
                                    (unsigned long long)u, nnodes);
          goto done;
        }
        st = mlsys__remat_stage_dep(&s, (int)u, NULL, lx.line, col);
      } else {
        char *nm = (char *)mlsys_alloc(n + 1, 1);
        if (!nm) { st = MLSYS_ERR_NOMEM; goto done; }
        memcpy(nm, a, n);
        nm[n] = 0;
        st = mlsys__remat_stage_dep(&s, 0, nm, lx.line, col);
        mlsys_free(nm);
      }
      if (st != MLSYS_OK) goto done;
    }
    mlsys__remat_nextline(&lx);
    v++;
  }
  s.dep_off[nnodes] = s.ndep;
  /* only blank lines and comments may follow */
  while (lx.p < lx.end) {
    if ((n = mlsys__remat_tok(&lx, &t)) > 0) {
      st = mlsys__remat_lex_err(&lx, t, "unexpected text after the %d nodes the header announced", nnodes);
      goto done;
    }
    mlsys__remat_nextline(&lx);
  }
  st = mlsys__remat_stage_finish(&s, src, g);
done:
  mlsys__remat_stage_free(&s);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_parse(const char *text, size_t len, const char *source,
                                               mlsys_remat_graph *out) {
  size_t i = 0;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if (!source) source = "<graph>";
  if (!text) return mlsys_set_error(MLSYS_ERR_ARG, "%s: no text", source);
  if (memchr(text, 0, len)) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: contains a NUL byte (not a text file)", source);
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
  st = (i < len && (text[i] == '{' || text[i] == '[')) ? mlsys__remat_parse_json(text, len, source, out)
                                   : mlsys__remat_parse_text(text, len, source, out);
  if (st != MLSYS_OK) mlsys_remat_graph_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_load(const char *path, mlsys_remat_graph *out) {
  char *buf;
  size_t len;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if ((st = mlsys_read_file(path, &buf, &len)) != MLSYS_OK) return st;
  st = mlsys_remat_graph_parse(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, out);
  mlsys_free(buf);
  return st;
}

static void mlsys__remat_write_ints64(mlsys_json_writer *w, const char *key, const int64_t *x, int n) {
  int k;
  mlsys_jw_key(w, key);
  mlsys_jw_array(w);
  for (k = 0; k < n; k++) mlsys_jw_i64(w, x[k]);
  mlsys_jw_end(w);
}
static void mlsys__remat_write_pair(mlsys_json_writer *w, const char *key, const int *x) {
  mlsys_jw_key(w, key);
  mlsys_jw_array(w);
  mlsys_jw_i64(w, x[0]);
  mlsys_jw_i64(w, x[1]);
  mlsys_jw_end(w);
}
/* "shape", "attrs", "impls" of one node, each only when it holds something (the reader's defaults otherwise).
   Padding is written with the kernel (0 is a value there, not "absent"). */
static void mlsys__remat_write_info(mlsys_json_writer *w, const mlsys_remat_node_info *in) {
  int k;
  if (in->ndim > 0) mlsys__remat_write_ints64(w, "shape", in->shape, in->ndim);
  if (in->in_ndim > 0 || in->kernel[0] || in->stride[0] || in->dilation[0] || in->pad[0] || in->pad[1] ||
      in->groups) {
    mlsys_jw_key(w, "attrs");
    mlsys_jw_object(w);
    if (in->in_ndim > 0) mlsys__remat_write_ints64(w, "in_shape", in->in_shape, in->in_ndim);
    if (in->kernel[0]) mlsys__remat_write_pair(w, "kernel", in->kernel);
    if (in->stride[0]) mlsys__remat_write_pair(w, "stride", in->stride);
    if (in->kernel[0] || in->pad[0] || in->pad[1]) mlsys__remat_write_pair(w, "padding", in->pad);
    if (in->dilation[0]) mlsys__remat_write_pair(w, "dilation", in->dilation);
    if (in->groups) { mlsys_jw_key(w, "groups"); mlsys_jw_i64(w, in->groups); }
    mlsys_jw_end(w);
  }
  if (in->nimpl > 0) {
    mlsys_jw_key(w, "impls");
    mlsys_jw_array(w);
    for (k = 0; k < in->nimpl && k < MLSYS_REMAT_MONET_MAX_IMPLS; k++) {
      mlsys_jw_object(w);
      const char *nm = in->impl[k].name, *z = (const char *)memchr(nm, 0, sizeof in->impl[k].name);
      mlsys_jw_key(w, "name"); mlsys_jw_strn(w, nm, z ? (size_t)(z - nm) : sizeof in->impl[k].name);
      mlsys_jw_key(w, "cost"); mlsys_jw_double(w, in->impl[k].cost);
      mlsys_jw_key(w, "workspace"); mlsys_jw_u64(w, in->impl[k].workspace);
      if (in->impl[k].fixed_workspace) { mlsys_jw_key(w, "fixed_workspace"); mlsys_jw_bool(w, 1); }
      mlsys_jw_end(w);
    }
    mlsys_jw_end(w);
  }
}

MLSYS_DEF mlsys_status mlsys_remat_graph_write(const mlsys_remat_graph *g, FILE *f, int json) {
  static const char kinds[] = "FLBO";
  static const char *flagnames[] = {"norecompute", "rng", "alias", "inplace"};
  const mlsys_dag *d = &g->dag;
  int v, j, b;
  if (json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, f, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "format"); mlsys_jw_str(&w, "mlsys-remat-graph");
    mlsys_jw_key(&w, "version"); mlsys_jw_i64(&w, 1);
    if (g->name) { mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, g->name); }
    if (g->batch) { mlsys_jw_key(&w, "batch"); mlsys_jw_i64(&w, g->batch); }
    if (g->mem_unit || g->cost_unit) {
      mlsys_jw_key(&w, "units");
      mlsys_jw_object(&w);
      if (g->mem_unit) { mlsys_jw_key(&w, "mem"); mlsys_jw_str(&w, g->mem_unit); }
      if (g->cost_unit) { mlsys_jw_key(&w, "cost"); mlsys_jw_str(&w, g->cost_unit); }
      mlsys_jw_end(&w);
    }
    mlsys_jw_key(&w, "fixed");
    mlsys_jw_object(&w);
    for (j = 0; j < g->nfixed; j++) { mlsys_jw_key(&w, g->fixed_name[j]); mlsys_jw_u64(&w, g->fixed_bytes[j]); }
    mlsys_jw_end(&w);
    if (g->loss >= 0) { mlsys_jw_key(&w, "loss"); mlsys_jw_i64(&w, g->loss); }
    mlsys_jw_key(&w, "nodes");
    mlsys_jw_array(&w);
    for (v = 0; v < d->n; v++) {
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "id"); mlsys_jw_i64(&w, v);
      mlsys_jw_key(&w, "kind"); mlsys_jw_strn(&w, &kinds[g->kind[v] & 3], 1);
      if (d->name && d->name[v]) { mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, d->name[v]); }
      if (g->op && g->op[v]) { mlsys_jw_key(&w, "op"); mlsys_jw_str(&w, g->op[v]); }
      mlsys_jw_key(&w, "cost"); mlsys_jw_double(&w, d->cost[v]);
      mlsys_jw_key(&w, "mem"); mlsys_jw_u64(&w, d->size[v]);
      mlsys_jw_key(&w, "deps");
      mlsys_jw_array(&w);
      for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) mlsys_jw_i64(&w, d->in[j]);
      mlsys_jw_end(&w);
      if (g->fwd_of[v] >= 0) { mlsys_jw_key(&w, "fwd_of"); mlsys_jw_i64(&w, g->fwd_of[v]); }
      if (g->flags[v]) {
        mlsys_jw_key(&w, "flags");
        mlsys_jw_array(&w);
        for (b = 0; b < 4; b++)
          if (g->flags[v] & (1u << b)) mlsys_jw_str(&w, flagnames[b]);
        mlsys_jw_end(&w);
      }
      if (g->info) mlsys__remat_write_info(&w, &g->info[v]);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
    return mlsys_jw_finish(&w);
  }
  /* text: every name must be one token the reader gives back unchanged; unnamed nodes get unique "n<id>" names */
  {
    char **tn = (char **)mlsys_calloc((size_t)d->n + 1, sizeof(char *));
    mlsys_status st = MLSYS_OK;
    if (!tn) return MLSYS_ERR_NOMEM;
    if (g->name && (strchr(g->name, '\n') || strchr(g->name, '#') || strchr(g->name, '\r') || !g->name[0] ||
                    g->name[0] == ' ' || g->name[strlen(g->name) - 1] == ' '))
      st = mlsys_set_error(MLSYS_ERR_ARG, "the graph name '%.60s' cannot be written in the text form (use JSON)",
                           g->name);
    for (v = 0; v < d->n && st == MLSYS_OK; v++) {
      if (d->name && d->name[v]) {
        if (!mlsys__remat_text_token_ok(d->name[v]) || strncmp(d->name[v], "op=", 3) == 0 ||
            strncmp(d->name[v], "fwd_of=", 7) == 0)
          st = mlsys_set_error(MLSYS_ERR_ARG, "node %d: the name '%.60s' cannot be written in the text form (one "
                               "token without '#'); use JSON", v, d->name[v]);
        continue;
      }
      {
        int k = 1;
        char nmb[64];
        for (;;) {
          if (k == 1) snprintf(nmb, sizeof nmb, "n%d", v); else snprintf(nmb, sizeof nmb, "n%d_%d", v, k);
          if (mlsys_dag_find(d, nmb) < 0) break;
          k++;
        }
        if (!(tn[v] = mlsys_strdup(nmb))) st = MLSYS_ERR_NOMEM;
      }
    }
    for (v = 0; v < d->n && st == MLSYS_OK; v++)
      if (g->op && g->op[v] && !mlsys__remat_text_token_ok(g->op[v]))
        st = mlsys_set_error(MLSYS_ERR_ARG, "node %d: the op '%.60s' cannot be written in the text form; use JSON", v,
                             g->op[v]);
    if ((g->mem_unit && !mlsys__remat_text_token_ok(g->mem_unit)) ||
        (g->cost_unit && !mlsys__remat_text_token_ok(g->cost_unit)))
      if (st == MLSYS_OK) st = mlsys_set_error(MLSYS_ERR_ARG, "units cannot be written in the text form; use JSON");
    if (st != MLSYS_OK) {
      for (v = 0; v < d->n; v++) mlsys_free(tn[v]);
      mlsys_free(tn);
      return st;
    }
    fprintf(f, "remat-graph 1\n");
    if (g->name) fprintf(f, "name %s\n", g->name);
    if (g->batch) fprintf(f, "batch %d\n", g->batch);
    if (g->mem_unit || g->cost_unit)
      fprintf(f, "units%s%s%s%s\n", g->mem_unit ? " mem=" : "", g->mem_unit ? g->mem_unit : "",
              g->cost_unit ? " cost=" : "", g->cost_unit ? g->cost_unit : "");
    if (g->nfixed) {
      fprintf(f, "fixed");
      for (j = 0; j < g->nfixed; j++) fprintf(f, " %s=%llu", g->fixed_name[j], (unsigned long long)g->fixed_bytes[j]);
      fprintf(f, "\n");
    }
    fprintf(f, "nodes %d\n# id kind cost mem flags name [op=...] [fwd_of=...] : deps\n", d->n);
    for (v = 0; v < d->n; v++) {
      int any = 0;
      fprintf(f, "%d %c %.17g %llu ", v, kinds[g->kind[v] & 3], d->cost[v], (unsigned long long)d->size[v]);
      for (b = 0; b < 4; b++)
        if (g->flags[v] & (1u << b)) fprintf(f, "%s%s", any++ ? "," : "", flagnames[b]);
      if (!any) fputc('-', f);
      fprintf(f, " %s", tn[v] ? tn[v] : d->name[v]);
      if (g->op && g->op[v]) fprintf(f, " op=%s", g->op[v]);
      if (g->fwd_of[v] >= 0) fprintf(f, " fwd_of=%d", g->fwd_of[v]);
      fputs(" :", f);
      for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) fprintf(f, " %d", d->in[j]);
      fputc('\n', f);
    }
    for (v = 0; v < d->n; v++) mlsys_free(tn[v]);
    mlsys_free(tn);
  }
  if (ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "writing the graph failed");
  return MLSYS_OK;
}

MLSYS_DEF uint64_t mlsys_remat_single_op_bound(const mlsys_remat_graph *g) {
  const mlsys_dag *d = &g->dag;
  uint64_t best = 0;
  int v, j;
  for (v = 0; v < d->n; v++) {
    uint64_t s = d->size[v];
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) s += d->size[d->in[j]];
    if (s > best) best = s;
  }
  return best;
}

/* Tarjan's articulation points, iteratively, on the undirected forward subgraph plus a virtual source joined to
   the first forward node and a virtual sink joined to the last (Checkmate repo convention: the first and last
   forward nodes separate the network from its input and its loss). */
MLSYS_DEF mlsys_status mlsys_remat_articulation_points(const mlsys_remat_graph *g, unsigned char *is_ap) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, nf = 0, v, j, V, *fid, *deg, *adj_off, *adj, *disc, *low, *parent, *it, *stack, timer = 0;
  int first = -1, last = -1;
  mlsys_status st = MLSYS_OK;
  memset(is_ap, 0, (size_t)n);
  fid = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!fid) return MLSYS_ERR_NOMEM;
  for (v = 0; v < n; v++) {
    fid[v] = g->kind[v] == MLSYS_REMAT_F ? nf++ : -1;
    if (fid[v] >= 0) { if (first < 0) first = v; last = v; }
  }
  if (nf == 0) { mlsys_free(fid); return MLSYS_OK; }
  V = nf + 2;   /* + source (nf) and sink (nf + 1) */
  deg = (int *)mlsys_calloc((size_t)V + 1, sizeof(int));
  adj_off = (int *)mlsys_calloc((size_t)V + 1, sizeof(int));
  disc = (int *)mlsys_alloc((size_t)V, sizeof(int));
  low = (int *)mlsys_alloc((size_t)V, sizeof(int));
  parent = (int *)mlsys_alloc((size_t)V, sizeof(int));
  it = (int *)mlsys_alloc((size_t)V, sizeof(int));
  stack = (int *)mlsys_alloc((size_t)V, sizeof(int));
  adj = NULL;
  if (!deg || !adj_off || !disc || !low || !parent || !it || !stack) { st = MLSYS_ERR_NOMEM; goto done; }
  /* undirected adjacency (CSR) */
  for (v = 0; v < n; v++)
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++)
      if (fid[v] >= 0 && fid[d->in[j]] >= 0) { deg[fid[v]]++; deg[fid[d->in[j]]]++; }
  deg[nf]++; deg[fid[first]]++; deg[nf + 1]++; deg[fid[last]]++;
  for (v = 0; v < V; v++) adj_off[v + 1] = adj_off[v] + deg[v];
  if (!(adj = (int *)mlsys_alloc((size_t)(adj_off[V] ? adj_off[V] : 1), sizeof(int)))) { st = MLSYS_ERR_NOMEM; goto done; }
  memset(deg, 0, sizeof(int) * (size_t)V);
#define MLSYS__ADJ(a, b) (adj[adj_off[a] + deg[a]++] = (b), adj[adj_off[b] + deg[b]++] = (a))
  for (v = 0; v < n; v++)
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++)
      if (fid[v] >= 0 && fid[d->in[j]] >= 0) MLSYS__ADJ(fid[v], fid[d->in[j]]);
  MLSYS__ADJ(nf, fid[first]);
  MLSYS__ADJ(nf + 1, fid[last]);
#undef MLSYS__ADJ
  for (v = 0; v < V; v++) { disc[v] = -1; parent[v] = -1; }
  {
    int r;
    for (r = -1; r < nf; r++) {   /* DFS from the virtual source, then from any forward node it did not reach */
      int root = r < 0 ? nf : r, sp = 0, root_children = 0;
      if (disc[root] >= 0) continue;
      disc[root] = low[root] = timer++;
      it[root] = adj_off[root];
      stack[sp++] = root;
      while (sp > 0) {
        int u = stack[sp - 1];
        if (it[u] < adj_off[u + 1]) {
          int w = adj[it[u]++];
          if (disc[w] < 0) {
            parent[w] = u;
            disc[w] = low[w] = timer++;
            it[w] = adj_off[w];
            stack[sp++] = w;
            if (u == root) root_children++;
          } else if (w != parent[u] && disc[w] < low[u]) {
            low[u] = disc[w];
          }
        } else {
          int p = parent[u];
          sp--;
          if (p >= 0) {
            if (low[u] < low[p]) low[p] = low[u];
            /* p separates u's subtree from the rest; virtual nodes are never reported */
            if (p != root && low[u] >= disc[p] && p < nf) is_ap[p] = 1;
          }
        }
      }
      if (root < nf && root_children > 1) is_ap[root] = 1;
    }
  }
  /* is_ap was filled by forward index; move to node ids (walk down so nothing is overwritten early) */
  {
    unsigned char *tmp = (unsigned char *)mlsys_alloc((size_t)nf, 1);
    if (!tmp) { st = MLSYS_ERR_NOMEM; goto done; }
    memcpy(tmp, is_ap, (size_t)nf);
    memset(is_ap, 0, (size_t)n);
    for (v = 0; v < n; v++)
      if (fid[v] >= 0) is_ap[v] = tmp[fid[v]];
    mlsys_free(tmp);
  }
done:
  mlsys_free(fid); mlsys_free(deg); mlsys_free(adj_off); mlsys_free(adj); mlsys_free(disc); mlsys_free(low);
  mlsys_free(parent); mlsys_free(it); mlsys_free(stack);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2. Schedules, the min-R closure and the simulator
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_remat_schedule_alloc(int n, mlsys_remat_schedule *s) {
  memset(s, 0, sizeof *s);
  s->bound = NAN;
  s->gap = NAN;
  if (n < 0 || n > MLSYS_REMAT_MAX_NODES) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "schedule for %d nodes", n);
  s->R = (unsigned char *)mlsys_calloc((size_t)n * (size_t)n + 1, 1);
  s->S = (unsigned char *)mlsys_calloc((size_t)n * (size_t)n + 1, 1);
  if (!s->R || !s->S) { mlsys_free(s->R); mlsys_free(s->S); s->R = s->S = NULL; return MLSYS_ERR_NOMEM; }
  s->n = n;
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_remat_schedule_free(mlsys_remat_schedule *s) {
  if (!s) return;
  mlsys_free(s->R);
  mlsys_free(s->S);
  memset(s, 0, sizeof *s);
}
/* Stage t's cheapest R given S[t] (resident) and S[t+1] (to carry): node t, the values to carry that are not
   resident (eq. 3.1c), and, scanning right to left, every missing input of a node computed (eq. 3.1b). One pass
   suffices because inputs have smaller ids. */
static void mlsys__remat_stage_closure(const mlsys_remat_graph *g, const unsigned char *St, const unsigned char *Sn,
                                       int t, unsigned char *Rt) {
  const mlsys_dag *d = &g->dag;
  int v, j;
  memset(Rt, 0, (size_t)d->n);
  Rt[t] = 1;
  if (Sn)
    for (v = 0; v < t; v++)
      if (Sn[v] && !St[v]) Rt[v] = 1;
  for (v = t; v >= 0; v--)
    if (Rt[v])
      for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
        int u = d->in[j];
        if (!Rt[u] && !St[u]) Rt[u] = 1;
      }
}

MLSYS_DEF mlsys_status mlsys_remat_min_r(const mlsys_remat_graph *g, unsigned char *S, unsigned char *R) {
  int n = g->dag.n, t, i, changed;
  size_t nn = (size_t)n;
  /* S is lower triangular and empty at stage 0 (eq. 3.8b) */
  for (t = 0; t < n; t++)
    for (i = t; i < n; i++) S[(size_t)t * nn + (size_t)i] = 0;
  do {
    changed = 0;
    for (t = 0; t < n; t++)
      mlsys__remat_stage_closure(g, S + (size_t)t * nn, t + 1 < n ? S + (size_t)(t + 1) * nn : NULL, t,
                                 R + (size_t)t * nn);
    /* a norecompute node that would be recomputed at stage t is kept resident from its own stage instead */
    for (t = 0; t < n; t++)
      for (i = 0; i < t; i++)
        if (R[(size_t)t * nn + (size_t)i] && (g->flags[i] & MLSYS_REMAT_NORECOMPUTE)) {
          int u;
          for (u = i + 1; u <= t; u++) S[(size_t)u * nn + (size_t)i] = 1;
          changed = 1;
        }
  } while (changed);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_trim(const mlsys_remat_graph *g, unsigned char *S, unsigned char *R) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, t, i, j;
  size_t nn = (size_t)n;
  unsigned char *Rt = (unsigned char *)mlsys_alloc(nn + 1, 1);
  if (!Rt) return MLSYS_ERR_NOMEM;
  mlsys_remat_min_r(g, S, R);
  /* backwards: S[t+1] is final when stage t is examined, and R[t] depends only on S[t] and S[t+1]. A resident
     value that no node computed in stage t reads, and that is not carried on, can be dropped: the closure of the
     stage is unchanged and memory only falls. */
  for (t = n - 1; t >= 1; t--) {
    unsigned char *St = S + (size_t)t * nn;
    const unsigned char *Sn = t + 1 < n ? S + (size_t)(t + 1) * nn : NULL;
    mlsys__remat_stage_closure(g, St, Sn, t, Rt);
    for (i = 0; i < t; i++) {
      int used = 0;
      if (!St[i] || (Sn && Sn[i])) continue;
      for (j = d->out_off[i]; j < d->out_off[i + 1] && d->out[j] <= t; j++)
        if (Rt[d->out[j]]) { used = 1; break; }
      if (!used) St[i] = 0;
    }
  }
  mlsys_free(Rt);
  return mlsys_remat_min_r(g, S, R);
}

static void mlsys__remat_sim_bad(mlsys_remat_sim *rep, const mlsys_remat_graph *g, int t, int k, int i,
                                 const char *what) {
  char a[48], b[48];
  if (!rep->valid) return;
  rep->valid = 0;
  rep->bad_t = t; rep->bad_k = k; rep->bad_i = i;
  if (i >= 0)
    snprintf(rep->why, sizeof rep->why, "stage %d: %s '%s' (%d)%s'%s' (%d)", t, what,
             mlsys_remat_node_name(g, k, a, sizeof a), k, k >= 0 ? ", input " : " ",
             mlsys_remat_node_name(g, i, b, sizeof b), i);
  else
    snprintf(rep->why, sizeof rep->why, "stage %d: %s '%s' (%d)", t, what, mlsys_remat_node_name(g, k, a, sizeof a),
             k);
}

/* The simulator. MILP mode follows eqs. 3.2-3.4 exactly: U[t][0] = resident bytes + node 0 if computed;
   U[t][k] = U[t][k-1] + (R[t][k] ? M_k : 0) - (bytes freed after position k-1); a dependency i of a computed node
   k is freed after k when it is not carried into stage t+1 and no later user j (k < j ≤ t) is computed in stage t
   (FREE_{t,i,k}, eqs. 3.5-3.7). A value that is both resident and recomputed is counted twice, as in the MILP. */
MLSYS_DEF mlsys_status mlsys_remat_simulate(const mlsys_remat_graph *g, const unsigned char *R,
                                            const unsigned char *S, mlsys_remat_sim_mode mode,
                                            mlsys_remat_sim *rep, uint64_t *U) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, t, k, i, j;
  size_t nn = (size_t)n;
  int *last = NULL, *cnt = NULL;
  uint64_t mem;
  mlsys_remat_sim local;
  if (!rep) rep = &local;
  memset(rep, 0, sizeof *rep);
  rep->valid = 1;
  rep->bad_t = rep->bad_k = rep->bad_i = -1;
  rep->peak_t = rep->peak_k = -1;
  last = (int *)mlsys_alloc(nn + 1, sizeof(int));
  cnt = (int *)mlsys_alloc(nn + 1, sizeof(int));
  if (!last || !cnt) { mlsys_free(last); mlsys_free(cnt); return MLSYS_ERR_NOMEM; }
  for (t = 0; t < n; t++) {
    const unsigned char *Rt = R + (size_t)t * nn, *St = S + (size_t)t * nn;
    const unsigned char *Sn = t + 1 < n ? S + (size_t)(t + 1) * nn : NULL;
    const unsigned char *Rp = t > 0 ? R + (size_t)(t - 1) * nn : NULL, *Sp = t > 0 ? S + (size_t)(t - 1) * nn : NULL;
    if (!Rt[t]) mlsys__remat_sim_bad(rep, g, t, t, -1, "frontier node not computed in its own stage (eq. 3.8a):");
    for (i = t + 1; i < n; i++) {
      if (Rt[i]) mlsys__remat_sim_bad(rep, g, t, i, -1, "computes a node ahead of the frontier (eq. 3.8c):");
      if (St[i]) mlsys__remat_sim_bad(rep, g, t, i, -1, "keeps a value not yet computed (eq. 3.8b):");
    }
    if (St[t]) mlsys__remat_sim_bad(rep, g, t, t, -1, "keeps a value not yet computed (eq. 3.8b):");
    /* carries (eq. 3.1c): kept into stage t only if resident in or computed during stage t-1 */
    for (i = 0; i < t; i++)
      if (St[i] && !(Rp && (Rp[i] || Sp[i])))
        mlsys__remat_sim_bad(rep, g, t, i, -1, "keeps a value that was neither kept nor computed in the previous "
                                                "stage (eq. 3.1c):");
    /* last[i] = the last user of i computed in this stage */
    for (i = 0; i < n; i++) last[i] = -1;
    for (k = 0; k <= t; k++)
      if (Rt[k])
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) last[d->in[j]] = k;
    mem = 0;
    for (i = 0; i < n; i++) {
      cnt[i] = i < t && St[i];
      if (cnt[i]) mem += d->size[i];
    }
    if (mode == MLSYS_REMAT_SIM_EAGER)   /* resident values nobody reads in this stage and nobody carries: free */
      for (i = 0; i < t; i++)
        if (cnt[i] && last[i] < 0 && !(Sn && Sn[i])) { cnt[i] = 0; mem -= d->size[i]; }
    for (k = 0; k <= t; k++) {
      if (Rt[k]) {
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++)
          if (!cnt[d->in[j]])
            mlsys__remat_sim_bad(rep, g, t, k, d->in[j], "computes");
        rep->cost += d->cost[k];
        if (cnt[k]) rep->redundant++;
        if (!(mode == MLSYS_REMAT_SIM_EAGER && cnt[k])) {   /* eager mode reuses a value already resident */
          mem += d->size[k];
          cnt[k]++;
        }
      }
      if (U) U[(size_t)t * nn + (size_t)k] = mem;
      if (mem > rep->peak || rep->peak_t < 0) { rep->peak = mem; rep->peak_t = t; rep->peak_k = k; }
      if (Rt[k]) {
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) {
          i = d->in[j];
          if (last[i] == k && !(Sn && Sn[i]) && cnt[i] > 0) { mem -= d->size[i]; cnt[i]--; }
        }
        /* eager mode also frees a value nobody reads later in the stage and nobody carries (FREE_{t,k,k}) */
        if (mode == MLSYS_REMAT_SIM_EAGER && k < t && last[k] < 0 && !(Sn && Sn[k]) && cnt[k] > 0) {
          mem -= d->size[k];
          cnt[k] = 0;
        }
      }
    }
    if (U)
      for (k = t + 1; k < n; k++) U[(size_t)t * nn + (size_t)k] = 0;
  }
  mlsys_free(last);
  mlsys_free(cnt);
  if (!rep->valid) return mlsys_set_error(MLSYS_ERR_ARG, "invalid schedule: %s", rep->why);
  return MLSYS_OK;
}

static double mlsys__remat_total_cost(const mlsys_remat_graph *g) {
  double s = 0;
  int v;
  for (v = 0; v < g->dag.n; v++) s += g->dag.cost[v];
  return s;
}

MLSYS_DEF mlsys_status mlsys_remat_evaluate(const mlsys_remat_graph *g, mlsys_remat_schedule *s) {
  mlsys_remat_sim rep;
  mlsys_status st;
  if (s->n != g->dag.n)
    return mlsys_set_error(MLSYS_ERR_ARG, "schedule is for %d nodes, the graph has %d", s->n, g->dag.n);
  st = mlsys_remat_simulate(g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL);
  s->cost = rep.cost;
  s->baseline_cost = mlsys__remat_total_cost(g);
  s->peak = rep.peak;
  s->peak_total = rep.peak + mlsys_remat_fixed_total(g);
  s->fits = st == MLSYS_OK && s->peak_total <= s->budget;
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   3. Execution plans
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { mlsys_remat_plan *p; int capops, capin, nin_used; } mlsys__remat_pb;

static mlsys_status mlsys__remat_emit(mlsys__remat_pb *b, int op, int node, int reg, int stage, int commit,
                                      const int *in, int nin) {
  mlsys_remat_plan *p = b->p;
  mlsys_remat_op *o;
  if (p->nops == b->capops) {
    int nc = b->capops ? b->capops * 2 : 1024;
    mlsys_remat_op *ops = (mlsys_remat_op *)mlsys_realloc_array(p->ops, (size_t)nc, sizeof *ops);
    if (!ops) return MLSYS_ERR_NOMEM;
    p->ops = ops;
    b->capops = nc;
  }
  o = &p->ops[p->nops];
  o->op = (unsigned char)op;
  o->commit = (unsigned char)commit;
  o->node = node;
  o->reg = reg;
  o->stage = stage;
  o->nin = nin;
  o->in_off = 0;
  if (nin > 0) {
    if (b->nin_used + nin > b->capin) {
      int nc = b->capin ? b->capin * 2 : 1024;
      int *r;
      while (nc < b->nin_used + nin) nc *= 2;
      if (!(r = (int *)mlsys_realloc_array(p->in_regs, (size_t)nc, sizeof(int)))) return MLSYS_ERR_NOMEM;
      p->in_regs = r;
      b->capin = nc;
    }
    o->in_off = b->nin_used;
    memcpy(p->in_regs + b->nin_used, in, sizeof(int) * (size_t)nin);
    b->nin_used += nin;
  }
  p->nops++;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_remat_plan_free(mlsys_remat_plan *p) {
  if (!p) return;
  mlsys_free(p->ops);
  mlsys_free(p->in_regs);
  mlsys_free(p->reg_node);
  memset(p, 0, sizeof *p);
}

/* Thesis Alg. 2 plus the stage-end drops the MILP leaves implicit. Faithful mode (flags 0): live bytes after
   every COMPUTE equal the MILP's U[t][k]. */
MLSYS_DEF mlsys_status mlsys_remat_plan_build(const mlsys_remat_graph *g, const mlsys_remat_schedule *s,
                                              unsigned flags, mlsys_remat_plan *out) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, t, k, i, j, *reg = NULL, *last = NULL, *in = NULL, *stale = NULL, nstale, capregs = 0;
  size_t nn = (size_t)n;
  uint64_t live = 0;
  mlsys__remat_pb b;
  mlsys_status st = MLSYS_OK;
  mlsys_remat_sim rep;
  memset(out, 0, sizeof *out);
  if (s->n != n) return mlsys_set_error(MLSYS_ERR_ARG, "schedule is for %d nodes, the graph has %d", s->n, n);
  if ((st = mlsys_remat_simulate(g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL)) != MLSYS_OK) return st;
  memset(&b, 0, sizeof b);
  b.p = out;
  reg = (int *)mlsys_alloc(nn + 1, sizeof(int));
  last = (int *)mlsys_alloc(nn + 1, sizeof(int));
  in = (int *)mlsys_alloc(nn + 1, sizeof(int));
  stale = (int *)mlsys_alloc(nn + 1, sizeof(int));
  if (!reg || !last || !in || !stale) { st = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < n; i++) reg[i] = -1;
#define MLSYS__NEWREG(node_)                                                                         \
  do {                                                                                               \
    if (out->nregs == capregs) {                                                                     \
      int nc_ = capregs ? capregs * 2 : 1024;                                                        \
      int *r_ = (int *)mlsys_realloc_array(out->reg_node, (size_t)nc_, sizeof(int));                 \
      if (!r_) { st = MLSYS_ERR_NOMEM; goto done; }                                                  \
      out->reg_node = r_;                                                                            \
      capregs = nc_;                                                                                 \
    }                                                                                                \
    out->reg_node[out->nregs++] = (node_);                                                           \
  } while (0)
#define MLSYS__FREE(node_, reg_)                                                                     \
  do {                                                                                               \
    if ((st = mlsys__remat_emit(&b, MLSYS_REMAT_OP_FREE, (node_), (reg_), t, 0, NULL, 0)) != MLSYS_OK) \
      goto done;                                                                                     \
    live -= d->size[(node_)];                                                                        \
  } while (0)
  for (t = 0; t < n; t++) {
    const unsigned char *Rt = s->R + (size_t)t * nn;
    const unsigned char *Sn = t + 1 < n ? s->S + (size_t)(t + 1) * nn : NULL;
    nstale = 0;
    for (i = 0; i < n; i++) last[i] = -1;
    for (k = 0; k <= t; k++)
      if (Rt[k])
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) last[d->in[j]] = k;
    if (flags & MLSYS_REMAT_PLAN_EARLY_FREE)
      for (i = 0; i < t; i++)
        if (reg[i] >= 0 && last[i] < 0 && !(Sn && Sn[i])) { MLSYS__FREE(i, reg[i]); reg[i] = -1; }
    for (k = 0; k <= t; k++) {
      if (Rt[k] && !(reg[k] >= 0 && (flags & MLSYS_REMAT_PLAN_SKIP_REDUNDANT))) {
        int r;
        if (reg[k] >= 0) stale[nstale++] = reg[k];   /* double allocation, as the MILP counts it */
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) in[j - d->in_off[k]] = reg[d->in[j]];
        r = out->nregs;
        MLSYS__NEWREG(k);
        if ((st = mlsys__remat_emit(&b, MLSYS_REMAT_OP_COMPUTE, k, r, t, k == t, in,
                                    d->in_off[k + 1] - d->in_off[k])) != MLSYS_OK)
          goto done;
        reg[k] = r;
        live += d->size[k];
        if (live > out->peak) out->peak = live;
      }
      if (Rt[k])
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) {
          i = d->in[j];
          if (reg[i] >= 0 && last[i] == k && !(Sn && Sn[i])) { MLSYS__FREE(i, reg[i]); reg[i] = -1; }
        }
    }
    /* stage end: what is not carried into t+1 is dropped (implicit in the MILP: U[t+1][0] counts only S[t+1]) */
    for (i = 0; i <= t; i++)
      if (reg[i] >= 0 && !(Sn && Sn[i])) { MLSYS__FREE(i, reg[i]); reg[i] = -1; }
    for (i = 0; i < nstale; i++) MLSYS__FREE(out->reg_node[stale[i]], stale[i]);
  }
#undef MLSYS__NEWREG
#undef MLSYS__FREE
done:
  mlsys_free(reg); mlsys_free(last); mlsys_free(in); mlsys_free(stale);
  if (st != MLSYS_OK) mlsys_remat_plan_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_plan_validate(const mlsys_remat_graph *g, const mlsys_remat_plan *p,
                                                 uint64_t *peak) {
  const mlsys_dag *d = &g->dag;
  unsigned char *live = NULL, *done = NULL;
  uint64_t cur = 0, top = 0;
  int s, j;
  char a[48], b2[48];
  mlsys_status st = MLSYS_OK;
  if (peak) *peak = 0;
  live = (unsigned char *)mlsys_calloc((size_t)p->nregs + 1, 1);
  done = (unsigned char *)mlsys_calloc((size_t)d->n + 1, 1);
  if (!live || !done) { mlsys_free(live); mlsys_free(done); return MLSYS_ERR_NOMEM; }
  for (s = 0; s < p->nops; s++) {
    const mlsys_remat_op *o = &p->ops[s];
    if (o->node < 0 || o->node >= d->n || o->reg < 0 || o->reg >= p->nregs) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: node %d or register %d out of range", s, o->node, o->reg);
      break;
    }
    if (o->op == MLSYS_REMAT_OP_COMPUTE) {
      int k = o->node;
      if (o->nin != d->in_off[k + 1] - d->in_off[k]) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: compute '%s' with %d inputs, the node has %d", s,
                             mlsys_remat_node_name(g, k, a, sizeof a), o->nin, d->in_off[k + 1] - d->in_off[k]);
        break;
      }
      for (j = 0; j < o->nin; j++) {
        int r = p->in_regs[o->in_off + j], want = d->in[d->in_off[k] + j];
        if (r < 0 || r >= p->nregs || !live[r] || p->reg_node[r] != want) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: compute '%s' reads input '%s' from register %d, "
                               "which %s", s, mlsys_remat_node_name(g, k, a, sizeof a),
                               mlsys_remat_node_name(g, want, b2, sizeof b2), r,
                               r < 0 || r >= p->nregs ? "does not exist" : !live[r] ? "is not live"
                                                                                     : "holds another value");
          break;
        }
      }
      if (st != MLSYS_OK) break;
      if (live[o->reg] || p->reg_node[o->reg] != k) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: compute '%s' writes register %d, which is %s", s,
                             mlsys_remat_node_name(g, k, a, sizeof a), o->reg,
                             live[o->reg] ? "still live" : "assigned to another node");
        break;
      }
      live[o->reg] = 1;
      done[k] = 1;
      cur += d->size[k];
      if (cur > top) top = cur;
    } else if (o->op == MLSYS_REMAT_OP_FREE) {
      if (!live[o->reg]) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: frees register %d ('%s'), which is not live", s, o->reg,
                             mlsys_remat_node_name(g, p->reg_node[o->reg], a, sizeof a));
        break;
      }
      live[o->reg] = 0;
      cur -= d->size[p->reg_node[o->reg]];
    } else {
      st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: unknown operation %d", s, o->op);
      break;
    }
  }
  if (st == MLSYS_OK)
    for (j = 0; j < d->n; j++)
      if (!done[j]) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "plan never computes node %d '%s'", j,
                             mlsys_remat_node_name(g, j, a, sizeof a));
        break;
      }
  mlsys_free(live);
  mlsys_free(done);
  if (peak) *peak = top;
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_plan_write(const mlsys_remat_graph *g, const mlsys_remat_plan *p, FILE *f) {
  int s, j, stage = -1;
  char a[48];
  for (s = 0; s < p->nops; s++) {
    const mlsys_remat_op *o = &p->ops[s];
    if (o->stage != stage) { fprintf(f, "# stage %d\n", o->stage); stage = o->stage; }
    if (o->op == MLSYS_REMAT_OP_COMPUTE) {
      fprintf(f, "%%r%d = compute %s (", o->reg, mlsys_remat_node_name(g, o->node, a, sizeof a));
      for (j = 0; j < o->nin; j++) fprintf(f, "%s%%r%d", j ? ", " : "", p->in_regs[o->in_off + j]);
      fprintf(f, ")%s\n", o->commit ? "" : "   # recompute");
    } else {
      fprintf(f, "free %%r%d   # %s\n", o->reg, mlsys_remat_node_name(g, o->node, a, sizeof a));
    }
  }
  if (ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "writing the plan failed");
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   4. Baselines. Each picks S by a policy (which forward values to checkpoint), then R = the cheapest R for that S
   (the repo's solve_r_opt), so every baseline is valid by construction and is measured by the same simulator.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  int n, nf;            /* nodes, forward nodes */
  int *fw;              /* [nf] forward node ids ascending */
  int *pos_id;          /* [nf + 1]: forward positions, then the loss node (when there is one) */
  int npos;
  int *bstage;          /* [n] stage at which a forward value's gradient is computed */
} mlsys__remat_fwd;

static void mlsys__remat_fwd_free(mlsys__remat_fwd *f) {
  mlsys_free(f->fw); mlsys_free(f->pos_id); mlsys_free(f->bstage);
  memset(f, 0, sizeof *f);
}

/* The forward positions and, for each forward value, its backward stage: the B node that names it in fwd_of,
   else bwd(x) = n-1-x in the canonical layout F^L L B^L, else its last user. */
static mlsys_status mlsys__remat_fwd_init(const mlsys_remat_graph *g, mlsys__remat_fwd *f) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, v, canonical;
  memset(f, 0, sizeof *f);
  f->n = n;
  f->fw = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  f->pos_id = (int *)mlsys_alloc((size_t)n + 2, sizeof(int));
  f->bstage = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!f->fw || !f->pos_id || !f->bstage) { mlsys__remat_fwd_free(f); return MLSYS_ERR_NOMEM; }
  for (v = 0; v < n; v++)
    if (g->kind[v] == MLSYS_REMAT_F) f->fw[f->nf++] = v;
  for (v = 0; v < f->nf; v++) f->pos_id[v] = f->fw[v];
  f->npos = f->nf;
  if (g->loss >= 0) f->pos_id[f->npos++] = g->loss;
  canonical = n == 2 * f->nf + 1 && g->loss == f->nf;
  for (v = 0; v < f->nf && canonical; v++)
    if (f->fw[v] != v || g->kind[n - 1 - v] != MLSYS_REMAT_B) canonical = 0;
  for (v = 0; v < n; v++) {
    int lu = d->out_off[v + 1] > d->out_off[v] ? d->out[d->out_off[v + 1] - 1] : v;
    f->bstage[v] = canonical && v <= f->nf ? n - 1 - v : lu;
  }
  for (v = 0; v < n; v++)
    if (g->fwd_of[v] >= 0 && g->fwd_of[v] < n && g->fwd_of[v] < v) f->bstage[g->fwd_of[v]] = v;
  return MLSYS_OK;
}

static void mlsys__remat_set_s(unsigned char *S, int n, int t, int i) {
  if (t >= 0 && t < n && i >= 0 && i < t) S[(size_t)t * (size_t)n + (size_t)i] = 1;
}

/* The rules every checkpoint baseline shares: gradients (values between non-forward nodes) are kept until their
   last use, and every value is kept into the stage of each of its users (Checkmate repo,
   gen_s_matrix_fixed_checkpoints, steps 1-2). */
static void mlsys__remat_base_rules(const mlsys_remat_graph *g, unsigned char *S) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, v, j, t;
  for (v = 0; v < n; v++)
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
      int u = d->in[j];
      if (g->kind[u] != MLSYS_REMAT_F && g->kind[v] != MLSYS_REMAT_F)
        for (t = u + 1; t <= v; t++) mlsys__remat_set_s(S, n, t, u);
      mlsys__remat_set_s(S, n, v, u);
    }
}

/* A schedule's name where it is built: its method is also its source (see mlsys_remat_schedule). */
static void mlsys__remat_name(mlsys_remat_schedule *s, const char *method) {
  snprintf(s->method, sizeof s->method, "%s", method);
  snprintf(s->source, sizeof s->source, "%s", method);
}
/* Another method's schedule returned as this method's answer: the label changes, the source stays. */
static void mlsys__remat_relabel(mlsys_remat_schedule *s, const char *method) {
  if (!s->source[0]) snprintf(s->source, sizeof s->source, "%s", s->method);
  snprintf(s->method, sizeof s->method, "%s", method);
}

static mlsys_status mlsys__remat_finish_baseline(const mlsys_remat_graph *g, mlsys_remat_schedule *s,
                                                 const char *method) {
  mlsys_status st;
  if ((st = mlsys_remat_trim(g, s->S, s->R)) != MLSYS_OK) return st;
  mlsys__remat_name(s, method);
  st = mlsys_remat_evaluate(g, s);
  if (st == MLSYS_ERR_ARG) return mlsys_prefix_error("internal error: baseline %s", method);
  return st;
}

/* Steps 3-6 of the repo's S construction for checkpoint set K (mlsys20_artifact variant, the paper's figures). */
static mlsys_status mlsys__remat_checkpoints_s(const mlsys_remat_graph *g, const mlsys__remat_fwd *f,
                                               const unsigned char *keep, int once, unsigned char *S) {
  int n = g->dag.n, p, q, t, nseg = 0, *start;
  mlsys__remat_base_rules(g, S);
  start = (int *)mlsys_alloc((size_t)f->npos + 2, sizeof(int));
  if (!start) return MLSYS_ERR_NOMEM;
  /* segments over positions: [0, k1), [k1, k2), ..., [k_last, npos) */
  start[nseg++] = 0;
  for (p = 1; p < f->nf; p++)
    if (keep[f->fw[p]]) start[nseg++] = p;
  start[nseg] = f->npos;
  /* stripes: checkpoints stay resident (trimmed later to their last use) */
  for (p = 0; p < f->nf; p++)
    if (keep[f->fw[p]])
      for (t = f->fw[p] + 1; t < n; t++) mlsys__remat_set_s(S, n, t, f->fw[p]);
  for (q = 0; q < nseg; q++) {
    int a = start[q], b = start[q + 1], tb;
    if (a >= b) continue;   /* empty segment (also: a graph with no forward or loss node) */
    tb = b < f->npos ? f->pos_id[b] : f->pos_id[f->npos - 1] + 1;
    /* backward ladders: while a segment's gradients run, the whole segment is resident */
    for (p = a; p < b; p++) {
      int tt = f->bstage[f->pos_id[p]], x;
      for (x = a; x < b; x++) mlsys__remat_set_s(S, n, tt, f->pos_id[x]);
    }
    if (once && b < f->nf) {
      /* The next checkpoint's gradient reads the segment's last value (a pool or conv input), and the repo's rule
         "inputs resident when their user's stage starts" makes that value alone recomputed one stage earlier,
         then the segment again for its own gradients. Chen et al. recompute a segment once, when the backward
         pass first needs it: let that stage compute it, and the ladder above carry it. */
      int tt = f->bstage[f->pos_id[b]], x;
      if (tt > 0 && tt < n && g->kind[tt] == MLSYS_REMAT_B)
        for (x = a; x < b; x++)
          if (!keep[f->pos_id[x]]) S[(size_t)tt * (size_t)n + (size_t)f->pos_id[x]] = 0;
    }
    /* forward blocks: the segment is not re-walked during the forward pass */
    for (t = f->pos_id[a]; t <= tb && t < n; t++)
      for (p = a; p < b; p++) mlsys__remat_set_s(S, n, t, f->pos_id[p]);
    /* backward blocks: the segment's gradients stay while its other gradients run */
    for (p = a; p < b && p < f->nf; p++) {
      int row = f->bstage[f->fw[p]], x;
      for (x = a; x < b && x < f->nf; x++) mlsys__remat_set_s(S, n, row, f->bstage[f->fw[x]]);
    }
  }
  mlsys_free(start);
  return MLSYS_OK;
}

/* once = 0: the repo's S construction; 1: each segment recomputed once (see the ladder above). */
static mlsys_status mlsys__remat_from_checkpoints_v(const mlsys_remat_graph *g, const unsigned char *keep, int once,
                                                   mlsys_remat_schedule *out) {
  mlsys__remat_fwd f;
  mlsys_status st;
  if ((st = mlsys_remat_schedule_alloc(g->dag.n, out)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_fwd_init(g, &f)) != MLSYS_OK) { mlsys_remat_schedule_free(out); return st; }
  st = mlsys__remat_checkpoints_s(g, &f, keep, once, out->S);
  mlsys__remat_fwd_free(&f);
  if (st == MLSYS_OK) st = mlsys__remat_finish_baseline(g, out, "checkpoints");
  if (st != MLSYS_OK) mlsys_remat_schedule_free(out);
  return st;
}

/* Both constructions; the cheaper (then the lower peak) is returned. The repo's recomputes a segment twice when
   the next checkpoint's gradient reads the segment's last value, at a lower peak; the other recomputes it once. */
MLSYS_DEF mlsys_status mlsys_remat_from_checkpoints(const mlsys_remat_graph *g, const unsigned char *keep,
                                                    mlsys_remat_schedule *out) {
  mlsys_remat_schedule b;
  mlsys_status st;
  if ((st = mlsys__remat_from_checkpoints_v(g, keep, 0, out)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_from_checkpoints_v(g, keep, 1, &b)) != MLSYS_OK) { mlsys_remat_schedule_free(out); return st; }
  if (b.cost < out->cost || (b.cost == out->cost && b.peak < out->peak)) {
    mlsys_remat_schedule_free(out);
    *out = b;
  } else {
    mlsys_remat_schedule_free(&b);
  }
  return MLSYS_OK;
}

/* Candidates (all forward nodes, or the articulation points) in topological order. */
static mlsys_status mlsys__remat_candidates(const mlsys_remat_graph *g, const mlsys__remat_fwd *f, int use_ap,
                                            int *cand, int *ncand) {
  int p;
  *ncand = 0;
  if (use_ap) {
    unsigned char *ap = (unsigned char *)mlsys_alloc((size_t)g->dag.n + 1, 1);
    mlsys_status st;
    if (!ap) return MLSYS_ERR_NOMEM;
    if ((st = mlsys_remat_articulation_points(g, ap)) != MLSYS_OK) { mlsys_free(ap); return st; }
    for (p = 0; p < f->nf; p++)
      if (ap[f->fw[p]]) cand[(*ncand)++] = f->fw[p];
    mlsys_free(ap);
  } else {
    for (p = 0; p < f->nf; p++) cand[(*ncand)++] = f->fw[p];
  }
  return MLSYS_OK;
}

/* Chen et al. sqrt(n): k = floor(sqrt(#candidates)); every k-th candidate is a checkpoint. */
static mlsys_status mlsys__remat_chen_sqrtn(const mlsys_remat_graph *g, int use_ap, mlsys_remat_schedule *out) {
  mlsys__remat_fwd f;
  int *cand = NULL, nc = 0, k, i;
  unsigned char *keep = NULL;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__remat_fwd_init(g, &f)) != MLSYS_OK) return st;
  cand = (int *)mlsys_alloc((size_t)g->dag.n + 1, sizeof(int));
  keep = (unsigned char *)mlsys_calloc((size_t)g->dag.n + 1, 1);
  if (!cand || !keep) { st = MLSYS_ERR_NOMEM; goto done; }
  if ((st = mlsys__remat_candidates(g, &f, use_ap, cand, &nc)) != MLSYS_OK) goto done;
  k = (int)floor(sqrt((double)nc));
  for (i = 0; i < nc && k > 0; i++)
    if ((i + 1) % k == 0) keep[cand[i]] = 1;
  if ((st = mlsys_remat_from_checkpoints(g, keep, out)) == MLSYS_OK)
    mlsys__remat_name(out, use_ap ? "ap-sqrtn" : "chen-sqrtn");
done:
  mlsys__remat_fwd_free(&f);
  mlsys_free(cand); mlsys_free(keep);
  return st;
}

/* Chen et al. greedy: walk the forward nodes accumulating bytes; a candidate where the running total exceeds b
   becomes a checkpoint. The sweep over b follows the Checkmate repo: b = P·(1 + x), x ∈ [-1, 2) in steps of 0.01,
   P = the peak of the linearized sqrt(n) schedule. pick: 0 → lowest peak (Chen's own goal); 1 → cheapest within
   the budget (else lowest peak). */
static mlsys_status mlsys__remat_greedy(const mlsys_remat_graph *g, int use_ap, int pick, uint64_t budget,
                                        mlsys_remat_schedule *best, const char *method) {
  mlsys__remat_fwd f;
  mlsys_remat_schedule ref, cur;
  int *cand = NULL, nc = 0, i, step, have = 0;
  unsigned char *keep = NULL, *prev = NULL, *iscand = NULL;
  uint64_t fixed = mlsys_remat_fixed_total(g);
  mlsys_status st;
  memset(best, 0, sizeof *best);
  memset(&ref, 0, sizeof ref);
  if ((st = mlsys__remat_fwd_init(g, &f)) != MLSYS_OK) return st;
  cand = (int *)mlsys_alloc((size_t)g->dag.n + 1, sizeof(int));
  keep = (unsigned char *)mlsys_calloc((size_t)g->dag.n + 1, 1);
  prev = (unsigned char *)mlsys_calloc((size_t)g->dag.n + 1, 1);
  iscand = (unsigned char *)mlsys_calloc((size_t)g->dag.n + 1, 1);
  if (!cand || !keep || !prev || !iscand) { st = MLSYS_ERR_NOMEM; goto done; }
  if ((st = mlsys__remat_candidates(g, &f, use_ap, cand, &nc)) != MLSYS_OK) goto done;
  for (i = 0; i < nc; i++) iscand[cand[i]] = 1;
  if ((st = mlsys__remat_chen_sqrtn(g, 0, &ref)) != MLSYS_OK) goto done;
  for (step = -100; step < 200; step++) {
    double b = (double)ref.peak * (1.0 + step / 100.0), acc = 0;
    int better, once;
    memset(keep, 0, (size_t)g->dag.n);
    for (i = 0; i < f.nf; i++) {
      int v = f.fw[i];
      acc += (double)g->dag.size[v];
      if (iscand[v] && acc > b) { keep[v] = 1; acc = 0; }
    }
    if (have && memcmp(keep, prev, (size_t)g->dag.n) == 0) continue;   /* same checkpoints as the last b */
    memcpy(prev, keep, (size_t)g->dag.n);
    for (once = 0; once < 2; once++) {   /* both S constructions for this checkpoint set */
      if ((st = mlsys__remat_from_checkpoints_v(g, keep, once, &cur)) != MLSYS_OK) goto done;
      cur.budget = budget;
      cur.fits = cur.peak + fixed <= budget;
      if (!have) better = 1;
      else if (pick == 1 && cur.fits != best->fits) better = cur.fits;
      else if (pick == 1 && cur.fits) better = cur.cost < best->cost || (cur.cost == best->cost && cur.peak < best->peak);
      else better = cur.peak < best->peak || (cur.peak == best->peak && cur.cost < best->cost);
      if (better) {
        mlsys_remat_schedule_free(best);
        *best = cur;
        have = 1;
      } else {
        mlsys_remat_schedule_free(&cur);
      }
    }
  }
  mlsys__remat_name(best, method);
done:
  mlsys_remat_schedule_free(&ref);
  mlsys__remat_fwd_free(&f);
  mlsys_free(cand); mlsys_free(keep); mlsys_free(prev); mlsys_free(iscand);
  if (st != MLSYS_OK) mlsys_remat_schedule_free(best);
  return st;
}

/* ---- Griewank & Walther revolve ---- */
MLSYS_DEF long mlsys_remat_revolve_steps(long l, int s) {
  long *t, best, j, len, res;
  int c;
  if (l <= 1) return 0;
  if (s <= 0) return l * (l - 1) / 2;
  if (l > 100000 || s > 64) return -1;
  /* t[c][len] for c = 0..s, by rows; only two rows are needed at a time, but the table is small anyway */
  t = (long *)mlsys_alloc((size_t)(s + 1) * (size_t)(l + 1), sizeof(long));
  if (!t) return -1;
  for (len = 0; len <= l; len++) t[len] = len <= 1 ? 0 : len * (len - 1) / 2;
  for (c = 1; c <= s; c++) {
    long *row = t + (size_t)c * (size_t)(l + 1), *up = row - (l + 1);
    row[0] = row[1] = 0;
    for (len = 2; len <= l; len++) {
      best = LONG_MAX;
      for (j = 1; j < len; j++) {
        long v = j + up[len - j] + row[j];
        if (v < best) best = v;
      }
      row[len] = best;
    }
  }
  res = t[(size_t)s * (size_t)(l + 1) + (size_t)l];
  mlsys_free(t);
  return res;
}

static long mlsys__binom(long a, long b) {
  long r = 1, i;
  if (b < 0 || b > a) return 0;
  if (b > a - b) b = a - b;
  for (i = 1; i <= b; i++) {
    if (r > LONG_MAX / (a - b + i)) return LONG_MAX;
    r = r * (a - b + i) / i;
  }
  return r;
}
/* Griewank's closed form with c = s + 1 stored states: r·l − C(c+r, c+1), where r is the least integer with
   l ≤ C(c+r, c) (β(c, r) in Griewank & Walther, Algorithm 799). */
MLSYS_DEF long mlsys_remat_revolve_closed_form(long l, int s) {
  long c = s + 1, r = 0;
  if (l <= 1) return 0;
  if (s <= 0) return l * (l - 1) / 2;
  while (mlsys__binom(c + r, c) < l) r++;
  return r * l - mlsys__binom(c + r, c + 1);
}

/* Revolve's snapshot plan over chain positions 0..l-1: hold[x] lists (as a bit set over positions) the snapshots
   resident when position x is reversed; split choice follows the DP t(len, s) = min_j j + t(len-j, s-1) + t(j, s). */
typedef struct {
  int l;
  long *tab;                 /* (smax + 1) x (l + 1) DP table */
  int smax;
  unsigned char *hold;       /* l x l: hold[x*l + p] */
  unsigned char *initial;    /* [l]: snapshot p was taken during the first forward sweep */
  unsigned char *held_now;   /* [l] */
  int reversed_any;
} mlsys__revolve;

static long mlsys__revolve_t(const mlsys__revolve *r, int len, int s) {
  return len <= 1 ? 0 : s <= 0 ? (long)len * (len - 1) / 2 : r->tab[(size_t)s * (size_t)(r->l + 1) + (size_t)len];
}
static void mlsys__revolve_rec(mlsys__revolve *r, int base, int len, int s) {
  int x, j, bj = 1;
  long best = LONG_MAX;
  if (len <= 0) return;
  if (len == 1 || s <= 0) {
    for (x = base + len - 1; x >= base; x--) {   /* reverse from the base snapshot, recomputing each time */
      memcpy(r->hold + (size_t)x * (size_t)r->l, r->held_now, (size_t)r->l);
      r->hold[(size_t)x * (size_t)r->l + (size_t)base] = 1;
    }
    r->reversed_any = 1;
    return;
  }
  for (j = 1; j < len; j++) {
    long v = j + mlsys__revolve_t(r, len - j, s - 1) + mlsys__revolve_t(r, j, s);
    if (v < best) { best = v; bj = j; }
  }
  r->held_now[base] = 1;
  if (!r->reversed_any) r->initial[base + bj] = 1;
  r->held_now[base + bj] = 1;
  mlsys__revolve_rec(r, base + bj, len - bj, s - 1);
  r->held_now[base + bj] = 0;
  mlsys__revolve_rec(r, base, bj, s);
}

/* Griewank log(n) on the chain of articulation points with s free snapshot slots (evaluated with true costs,
   chosen with unit costs: Table 3.1 "not cost aware"). */
static mlsys_status mlsys__remat_griewank_s(const mlsys_remat_graph *g, int s, mlsys_remat_schedule *out) {
  const mlsys_dag *d = &g->dag;
  mlsys__remat_fwd f;
  mlsys__revolve r;
  int *cand = NULL, m = 0, n = d->n, x, p, c, len, j;
  mlsys_status st;
  memset(&r, 0, sizeof r);
  memset(out, 0, sizeof *out);
  if ((st = mlsys__remat_fwd_init(g, &f)) != MLSYS_OK) return st;
  cand = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!cand) { st = MLSYS_ERR_NOMEM; goto done; }
  if ((st = mlsys__remat_candidates(g, &f, 1, cand, &m)) != MLSYS_OK) goto done;
  if ((st = mlsys_remat_schedule_alloc(n, out)) != MLSYS_OK) goto done;
  mlsys__remat_base_rules(g, out->S);
  if (m > 0) {
    if (s > m) s = m;
    r.l = m;
    r.smax = s;
    r.tab = (long *)mlsys_calloc((size_t)(s + 1) * (size_t)(m + 1), sizeof(long));
    r.hold = (unsigned char *)mlsys_calloc((size_t)m * (size_t)m, 1);
    r.initial = (unsigned char *)mlsys_calloc((size_t)m, 1);
    r.held_now = (unsigned char *)mlsys_calloc((size_t)m, 1);
    if (!r.tab || !r.hold || !r.initial || !r.held_now) { st = MLSYS_ERR_NOMEM; goto done; }
    for (c = 1; c <= s; c++)
      for (len = 2; len <= m; len++) {
        long best = LONG_MAX;
        for (j = 1; j < len; j++) {
          long v = j + mlsys__revolve_t(&r, len - j, c - 1) + mlsys__revolve_t(&r, j, c);
          if (v < best) best = v;
        }
        r.tab[(size_t)c * (size_t)(m + 1) + (size_t)len] = best;
      }
    r.initial[0] = 1;   /* the first position is the chain's starting state */
    mlsys__revolve_rec(&r, 0, m, s);
    /* snapshot p is resident from its creation to its own reversal: created in the first sweep (kept from its
       own stage) or recomputed just before the first reversal that needs it (the closure does that) */
    for (p = 0; p < m; p++) {
      int hi = -1, t, t0, t1 = f.bstage[cand[p]];
      for (x = m - 1; x >= p && hi < 0; x--)
        if (r.hold[(size_t)x * (size_t)m + (size_t)p]) hi = x;
      if (hi < 0) continue;
      t0 = r.initial[p] ? cand[p] + 1 : f.bstage[cand[hi]] + 1;
      for (t = t0; t <= t1; t++) mlsys__remat_set_s(out->S, n, t, cand[p]);
    }
  }
  {
    char name[48];
    snprintf(name, sizeof name, "griewank(s=%d)", s);
    st = mlsys__remat_finish_baseline(g, out, name);
  }
done:
  mlsys_free(r.tab); mlsys_free(r.hold); mlsys_free(r.initial); mlsys_free(r.held_now);
  mlsys_free(cand);
  mlsys__remat_fwd_free(&f);
  if (st != MLSYS_OK) mlsys_remat_schedule_free(out);
  return st;
}

/* Sweep the snapshot count: the cheapest schedule within the budget, else the lowest peak. */
static mlsys_status mlsys__remat_griewank(const mlsys_remat_graph *g, uint64_t budget, mlsys_remat_schedule *best) {
  mlsys_remat_schedule cur;
  uint64_t fixed = mlsys_remat_fixed_total(g);
  int s, have = 0, nf = 0, v;
  mlsys_status st;
  memset(best, 0, sizeof *best);
  for (v = 0; v < g->dag.n; v++) nf += g->kind[v] == MLSYS_REMAT_F;
  for (s = 0; s <= nf && s <= 64; s++) {
    int better;
    if ((st = mlsys__remat_griewank_s(g, s, &cur)) != MLSYS_OK) { mlsys_remat_schedule_free(best); return st; }
    cur.budget = budget;
    cur.fits = cur.peak + fixed <= budget;
    if (!have) better = 1;
    else if (cur.fits != best->fits) better = cur.fits;
    else if (cur.fits) better = cur.cost < best->cost || (cur.cost == best->cost && cur.peak < best->peak);
    else better = cur.peak < best->peak;
    if (better) { mlsys_remat_schedule_free(best); *best = cur; have = 1; }
    else mlsys_remat_schedule_free(&cur);
    if (have && best->fits && best->cost == best->baseline_cost) break;   /* cannot get cheaper */
  }
  return MLSYS_OK;
}

/* Keep everything until its last use: the framework default and the "ideal" memory of the paper's plots. */
static mlsys_status mlsys__remat_checkpoint_all(const mlsys_remat_graph *g, mlsys_remat_schedule *out) {
  unsigned char *keep = (unsigned char *)mlsys_alloc((size_t)g->dag.n + 1, 1);
  mlsys_status st;
  int v;
  if (!keep) return MLSYS_ERR_NOMEM;
  for (v = 0; v < g->dag.n; v++) keep[v] = g->kind[v] == MLSYS_REMAT_F;
  st = mlsys_remat_from_checkpoints(g, keep, out);
  if (st == MLSYS_OK) {
    /* every non-forward value too (graphs without kinds): nothing is ever recomputed */
    int n = g->dag.n, t, j;
    for (v = 0; v < n; v++)
      for (j = g->dag.out_off[v]; j < g->dag.out_off[v + 1]; j++)
        for (t = v + 1; t <= g->dag.out[j]; t++) mlsys__remat_set_s(out->S, n, t, v);
    st = mlsys__remat_finish_baseline(g, out, "checkpoint-all");
    if (st != MLSYS_OK) mlsys_remat_schedule_free(out);
  }
  mlsys_free(keep);
  return st;
}

/* Keep only the newest value between stages: everything else is recomputed (quadratic cost, little memory). */
static mlsys_status mlsys__remat_checkpoint_last(const mlsys_remat_graph *g, mlsys_remat_schedule *out) {
  int n = g->dag.n, t;
  mlsys_status st;
  if ((st = mlsys_remat_schedule_alloc(n, out)) != MLSYS_OK) return st;
  for (t = 0; t + 1 < n; t++) mlsys__remat_set_s(out->S, n, t + 1, t);
  st = mlsys__remat_finish_baseline(g, out, "checkpoint-last");
  if (st != MLSYS_OK) mlsys_remat_schedule_free(out);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   5. The Checkmate MILP (thesis eq. 3.9 with the frontier-advancing partition 3.8), as solved:
      columns R[t][i] and S[t][i] for i < t (R[t][t] = 1 is a constant), FREE[t][e] for edges e = (i,k) and
      stages t ≥ k, U[t][k] for k ≤ t; rows 3.1b (dependencies), 3.1c (carries), 3.7b (FREE when nothing keeps a
      value), the disaggregated upper rows FREE ≤ R[t][k], FREE + S[t+1][i] ≤ 1, FREE + R[t][j] ≤ 1 (or thesis
      3.7c when asked), 3.2 (stage start), 3.3-3.4 (memory recurrence); U ≤ budget as column bounds.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const mlsys_remat_graph *g;
  int n;
  int *iR, *iS, *iU;     /* [n*n] column index or -1 */
  int *fbase;            /* [nedges]: FREE column of edge e at stage t is fcol[fbase[e] + t - k_e] */
  int *fcol;             /* -1 when FREE is fixed at 0 */
  int *ek;               /* [nedges] the consumer k of edge e */
  double *M;             /* [n] bytes in model units (rounded up) */
  double unit;           /* bytes per model unit */
  int unit_exact;        /* every size is a multiple of unit: the model is byte-exact */
  int relaxed;           /* inexact units rounded the other way (sizes down, budget up): a relaxation, for bounds */
  double cscale;         /* cost per model cost unit */
  double Bs;             /* budget in model units (rounded down) */
  int iZ;                /* peak column (min-peak model) or -1 */
  mlsys_milp *m;
} mlsys__cm;

static void mlsys__cm_free(mlsys__cm *cm) {
  mlsys_free(cm->iR); mlsys_free(cm->iS); mlsys_free(cm->iU); mlsys_free(cm->fbase); mlsys_free(cm->fcol);
  mlsys_free(cm->ek); mlsys_free(cm->M);
  mlsys_milp_free(cm->m);
  memset(cm, 0, sizeof *cm);
}

static uint64_t mlsys__gcd64(uint64_t a, uint64_t b) {
  while (b) { uint64_t t = a % b; a = b; b = t; }
  return a;
}

/* Memory units: the gcd of all sizes when that keeps coefficients ≤ 1e6 (exact); otherwise max/1e6 with sizes
   rounded up and the budget rounded down, so every model-feasible schedule is byte-feasible (docs/remat.md, Units).
   Costs are divided by their gcd when integral and within a factor 1000 of it, else scaled to a maximum of 100: with
   objective coefficients near 1e6, lp_solve (5.5.2.5, NODE_AUTOORDER and a cutoff row) proved a wrong optimum on the
   thesis's chain with costs 0.1 (2.7 instead of 2.6); coefficients up to 1e4 were fine. */
static void mlsys__cm_units(mlsys__cm *cm, uint64_t act_budget) {
  const mlsys_dag *d = &cm->g->dag;
  uint64_t gg = 0, mx = 0, u;
  double cmax = 0, cg = 0;
  int v, integral = 1;
  for (v = 0; v < d->n; v++) {
    if (d->size[v]) gg = mlsys__gcd64(gg, d->size[v]);
    if (d->size[v] > mx) mx = d->size[v];
    if (d->cost[v] > cmax) cmax = d->cost[v];
    if (d->cost[v] != floor(d->cost[v]) || d->cost[v] > 9e15) integral = 0;
  }
  if (!gg) gg = 1;
  if ((double)mx / (double)gg <= 1e6) { u = gg; cm->unit_exact = 1; }
  else { u = (mx + 999999) / 1000000; cm->unit_exact = 0; }
  cm->unit = (double)u;
  if (cm->relaxed && !cm->unit_exact) {   /* a relaxation of the byte problem: its LP bound is a valid bound */
    for (v = 0; v < d->n; v++) cm->M[v] = (double)(d->size[v] / u);
    cm->Bs = (double)(act_budget / u + (act_budget % u != 0));
  } else {
    for (v = 0; v < d->n; v++) cm->M[v] = (double)((d->size[v] + u - 1) / u);
    cm->Bs = (double)(act_budget / u);
  }
  if (integral) {
    uint64_t c = 0;
    for (v = 0; v < d->n; v++)
      if (d->cost[v] > 0) c = mlsys__gcd64(c, (uint64_t)d->cost[v]);
    cg = c ? (double)c : 1;
    cm->cscale = cmax / cg <= 1e3 ? cg : cmax / 100;
  } else {
    cm->cscale = cmax > 0 ? cmax / 100 : 1;
  }
  if (!(cm->cscale > 0)) cm->cscale = 1;
}

#define MLSYS__CM_IDX(t, i) ((size_t)(t) * (size_t)cm->n + (size_t)(i))
/* Graphs above this many nodes are coarsened for the LP (see mlsys__remat_solve_lp); twice this many, and the
   fine min-peak MILP / fine LP fallback are skipped under short time limits. */
#define MLSYS__REMAT_COARSEN_MIN_NODES 120
#define MLSYS__CM_RELAXED 0x100   /* internal model flag: round sizes down and the budget up (bounds only) */
#define MLSYS__CM_WITH_DOMINANCE 0x200   /* internal: LP rounding with the dominance rows (its second try) */

/* R[t][i] for i < t exists unless i is norecompute; S[t][i] for i < t always. */
static mlsys_status mlsys__cm_build(const mlsys_remat_graph *g, uint64_t act_budget, int min_peak, unsigned model,
                                    int names, mlsys__cm *cm) {
  const mlsys_dag *d = &g->dag;
  int n = d->n, t, i, k, j, e, nE = d->nedges, ncols_free = 0;
  int *rc = NULL, rcap = 0, rn = 0;
  double *rv = NULL;
  char nm[64];
  mlsys_status st = MLSYS_OK;
  mlsys_milp *m;
  memset(cm, 0, sizeof *cm);
  cm->g = g;
  cm->n = n;
  cm->iZ = -1;
  cm->iR = (int *)mlsys_alloc((size_t)n * (size_t)n + 1, sizeof(int));
  cm->iS = (int *)mlsys_alloc((size_t)n * (size_t)n + 1, sizeof(int));
  cm->iU = (int *)mlsys_alloc((size_t)n * (size_t)n + 1, sizeof(int));
  cm->fbase = (int *)mlsys_alloc((size_t)nE + 1, sizeof(int));
  cm->ek = (int *)mlsys_alloc((size_t)nE + 1, sizeof(int));
  cm->M = (double *)mlsys_alloc((size_t)n + 1, sizeof(double));
  if (!cm->iR || !cm->iS || !cm->iU || !cm->fbase || !cm->ek || !cm->M) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (k = 0; k < n; k++)
    for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) cm->ek[j] = k;
  for (e = 0; e < nE; e++) { cm->fbase[e] = ncols_free; ncols_free += n - cm->ek[e]; }
  if (!(cm->fcol = (int *)mlsys_alloc((size_t)ncols_free + 1, sizeof(int)))) { st = MLSYS_ERR_NOMEM; goto fail; }
  cm->relaxed = (model & MLSYS__CM_RELAXED) != 0;
  mlsys__cm_units(cm, act_budget);
  if ((st = mlsys_milp_create(&cm->m)) != MLSYS_OK) goto fail;
  m = cm->m;
#define MLSYS__ADDVAR(dst, kind, lo, hi, obj, prio, ...)                                    \
  do {                                                                                      \
    if (names) snprintf(nm, sizeof nm, __VA_ARGS__);                                        \
    (dst) = mlsys_milp_add_var(m, (kind), (lo), (hi), (obj), names ? nm : NULL);            \
    if ((dst) < 0) { st = mlsys_last_status(); goto fail; }                                 \
    if (prio) mlsys_milp_set_priority(m, (dst), (prio));                                    \
  } while (0)
  /* Columns stage-major (R[t][·], S[t][·]), then FREE stage-major, then U: lp_solve branches on the lowest
     non-integral column, and this order (with its automatic ordering, see the solve) proves the thesis's chain
     instances fastest of the orders we measured (docs/remat.md). */
  for (t = 0; t < n; t++) {
    for (i = 0; i < n; i++)
      cm->iR[MLSYS__CM_IDX(t, i)] = cm->iS[MLSYS__CM_IDX(t, i)] = cm->iU[MLSYS__CM_IDX(t, i)] = -1;
    for (i = 0; i < t; i++)
      if (!(g->flags[i] & MLSYS_REMAT_NORECOMPUTE))
        MLSYS__ADDVAR(cm->iR[MLSYS__CM_IDX(t, i)], MLSYS_VAR_BINARY, 0, 1, min_peak ? 0 : d->cost[i] / cm->cscale, 0,
                      "R_%d_%d", t, i);
    for (i = 0; i < t; i++)
      MLSYS__ADDVAR(cm->iS[MLSYS__CM_IDX(t, i)], MLSYS_VAR_BINARY, 0, 1, 0, 0, "S_%d_%d", t, i);
  }
  /* FREE[t][(i,k)], stage-major: absent (fixed 0) when R[t][k] is fixed 0, or when node t itself reads i after k */
  for (t = 0; t < n; t++)
    for (e = 0; e < nE; e++) {
      int kk = cm->ek[e], ii = d->in[e], fixed0 = 0;
      if (kk > t) continue;
      if (t > kk && cm->iR[MLSYS__CM_IDX(t, kk)] < 0) fixed0 = 1;
      if (t > kk && mlsys_dag_has_edge(d, ii, t)) fixed0 = 1;
      cm->fcol[cm->fbase[e] + t - kk] = -1;
      if (!fixed0) MLSYS__ADDVAR(cm->fcol[cm->fbase[e] + t - kk], MLSYS_VAR_BINARY, 0, 1, 0, 0, "F_%d_%d_%d", t, ii, kk);
    }
  for (t = 0; t < n; t++)
    for (k = 0; k <= t; k++)
      MLSYS__ADDVAR(cm->iU[MLSYS__CM_IDX(t, k)], MLSYS_VAR_CONTINUOUS, 0, min_peak ? MLSYS_INF : cm->Bs, 0, 0,
                    "U_%d_%d", t, k);
  if (min_peak) {
    /* the peak is at least the largest node plus its inputs (in model units): with this bound the search stops
       as soon as an incumbent reaches it */
    double lbz = 0;
    for (k = 0; k < n; k++) {
      double sum = cm->M[k];
      for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) sum += cm->M[d->in[j]];
      if (sum > lbz) lbz = sum;
    }
    MLSYS__ADDVAR(cm->iZ, MLSYS_VAR_CONTINUOUS, lbz, MLSYS_INF, 1, 0, "peak");
  }
#undef MLSYS__ADDVAR
  if (!min_peak) mlsys_milp_set_obj_constant(m, mlsys__remat_total_cost(g) / cm->cscale);

  /* Rows are built term by term in one growable buffer; columns fixed at 0 (index -1) are skipped. */
#define MLSYS__TERM(col, val)                                                                           \
  do {                                                                                                  \
    if ((col) >= 0) {                                                                                   \
      if (rn == rcap) {                                                                                 \
        int nc_ = rcap ? rcap * 2 : 64;                                                                 \
        int *c_ = (int *)mlsys_realloc_array(rc, (size_t)nc_, sizeof(int));                             \
        double *v_;                                                                                     \
        if (!c_) { st = MLSYS_ERR_NOMEM; goto fail; }                                                   \
        rc = c_;                                                                                        \
        if (!(v_ = (double *)mlsys_realloc_array(rv, (size_t)nc_, sizeof(double)))) { st = MLSYS_ERR_NOMEM; goto fail; } \
        rv = v_;                                                                                        \
        rcap = nc_;                                                                                     \
      }                                                                                                 \
      rc[rn] = (col);                                                                                   \
      rv[rn++] = (val);                                                                                 \
    }                                                                                                   \
  } while (0)
#define MLSYS__ROW(sense, rhs, ...)                                                                     \
  do {                                                                                                  \
    if (names) snprintf(nm, sizeof nm, __VA_ARGS__);                                                    \
    if ((st = mlsys_milp_add_row(m, rn, rc, rv, (sense), (rhs), names ? nm : NULL)) != MLSYS_OK) goto fail; \
    rn = 0;                                                                                             \
  } while (0)
  /* (3.1b) dependencies: a node computed in stage t needs each input computed before it or resident */
  for (k = 0; k < n; k++)
    for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) {
      i = d->in[j];
      for (t = k; t < n; t++) {
        if (t == k) {   /* R[t][t] = 1: R[t][i] + S[t][i] ≥ 1 */
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, i)], 1);
          MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t, i)], 1);
          MLSYS__ROW(MLSYS_ROW_GE, 1, "dep_%d_%d_%d", t, i, k);
        } else if (cm->iR[MLSYS__CM_IDX(t, k)] >= 0) {
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, k)], 1);
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, i)], -1);
          MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t, i)], -1);
          MLSYS__ROW(MLSYS_ROW_LE, 0, "dep_%d_%d_%d", t, i, k);
        }
      }
    }
  /* Dominance rows (valid: some optimal schedule satisfies them, since mlsys_remat_trim maps any schedule to one
     that does at no more cost or memory): a resident value is read in its stage or carried on,
     S[t][i] ≤ S[t+1][i] + Σ_{users j < t} R[t][j]; a recomputed value likewise, R[t][i] ≤ S[t+1][i] + Σ R[t][j].
     They remove the many equivalent schedules that keep or recompute values nobody reads. Left out of the
     model with MLSYS_REMAT_MODEL_NO_DOMINANCE, and with the thesis's aggregated FREE rows. */
  for (t = 1; t < n && !(model & (MLSYS_REMAT_MODEL_NO_DOMINANCE | MLSYS_REMAT_MODEL_AGGREGATED_FREE)); t++)
    for (i = 0; i < t; i++) {
      int pass, u;
      if (mlsys_dag_has_edge(d, i, t)) continue;   /* node t reads i: both rows hold trivially */
      for (pass = 0; pass < 2; pass++) {
        int lhs = pass == 0 ? cm->iS[MLSYS__CM_IDX(t, i)] : cm->iR[MLSYS__CM_IDX(t, i)];
        if (lhs < 0) continue;
        MLSYS__TERM(lhs, 1);
        if (t + 1 < n) MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t + 1, i)], -1);
        for (u = d->out_off[i]; u < d->out_off[i + 1] && d->out[u] < t; u++)
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, d->out[u])], -1);
        MLSYS__ROW(MLSYS_ROW_LE, 0, "%s_%d_%d", pass == 0 ? "useS" : "useR", t, i);
      }
    }
  /* (3.1c) carries: S[t+1][i] ≤ S[t][i] + R[t][i] */
  for (t = 1; t + 1 < n; t++)
    for (i = 0; i < t; i++) {
      MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t + 1, i)], 1);
      MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t, i)], -1);
      MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, i)], -1);
      MLSYS__ROW(MLSYS_ROW_LE, 0, "carry_%d_%d", t, i);
    }
  /* (3.7b) FREE is forced to 1 when nothing keeps the value, and the upper rows force it to 0 when something does */
  for (e = 0; e < nE; e++) {
    int kk = cm->ek[e], ii = d->in[e];
    for (t = kk; t < n; t++) {
      int f = cm->fcol[cm->fbase[e] + t - kk], u, hazards = 0;
      if (f < 0) continue;
      /* lower: FREE − R[t][k] + S[t+1][i] + Σ_{users j of i, k<j<t} R[t][j] ≥ 0   (R[t][t] = 1 moves to the rhs) */
      MLSYS__TERM(f, 1);
      if (kk < t) MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, kk)], -1);
      if (t + 1 < n) MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t + 1, ii)], 1);
      for (u = d->out_off[ii]; u < d->out_off[ii + 1]; u++) {
        int jj = d->out[u];
        if (jj > kk && jj < t && cm->iR[MLSYS__CM_IDX(t, jj)] >= 0) { MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, jj)], 1); hazards++; }
      }
      MLSYS__ROW(MLSYS_ROW_GE, kk == t ? 1 : 0, "freelo_%d_%d_%d", t, ii, kk);
      if (!(model & MLSYS_REMAT_MODEL_AGGREGATED_FREE)) {
        /* disaggregated upper rows (docs/remat.md): each hazard alone forbids the free */
        if (kk < t) {
          MLSYS__TERM(f, 1);
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, kk)], -1);
          MLSYS__ROW(MLSYS_ROW_LE, 0, "freer_%d_%d_%d", t, ii, kk);
        }
        if (t + 1 < n) {
          MLSYS__TERM(f, 1);
          MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t + 1, ii)], 1);
          MLSYS__ROW(MLSYS_ROW_LE, 1, "frees_%d_%d_%d", t, ii, kk);
        }
        for (u = d->out_off[ii]; u < d->out_off[ii + 1]; u++) {
          int jj = d->out[u];
          if (jj <= kk || jj >= t || cm->iR[MLSYS__CM_IDX(t, jj)] < 0) continue;
          MLSYS__TERM(f, 1);
          MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, jj)], 1);
          MLSYS__ROW(MLSYS_ROW_LE, 1, "freeu_%d_%d_%d_%d", t, ii, kk, jj);
        }
      } else {
        /* thesis 3.7c: κ·FREE − R[t][k] + S[t+1][i] + Σ R[t][j] ≤ κ − 1, κ = the number of possible hazards */
        double kappa = (double)((kk < t ? 1 : 0) + (t + 1 < n ? 1 : 0) + hazards);
        if (kappa < 1) continue;   /* nothing can ever keep i: the lower row already forces FREE = 1 */
        MLSYS__TERM(f, kappa);
        if (kk < t) MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, kk)], -1);
        if (t + 1 < n) MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t + 1, ii)], 1);
        for (u = d->out_off[ii]; u < d->out_off[ii + 1]; u++) {
          int jj = d->out[u];
          if (jj > kk && jj < t) MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, jj)], 1);
        }
        MLSYS__ROW(MLSYS_ROW_LE, kk < t ? kappa - 1 : kappa, "freeagg_%d_%d_%d", t, ii, kk);
      }
    }
  }
  /* (3.2) stage start: U[t][0] = M_0·R[t][0] + Σ_{i<t} M_i·S[t][i]   (U[0][0] = M_0) */
  for (t = 0; t < n; t++) {
    MLSYS__TERM(cm->iU[MLSYS__CM_IDX(t, 0)], 1);
    if (t > 0 && cm->M[0] != 0) MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, 0)], -cm->M[0]);
    for (i = 0; i < t; i++)
      if (cm->M[i] != 0) MLSYS__TERM(cm->iS[MLSYS__CM_IDX(t, i)], -cm->M[i]);
    MLSYS__ROW(MLSYS_ROW_EQ, t == 0 ? cm->M[0] : 0, "ustart_%d", t);
  }
  /* (3.3, 3.4) U[t][k+1] = U[t][k] + M_{k+1}·R[t][k+1] − Σ_{(i,k)} M_i·FREE[t][(i,k)]   (R[t][t] = 1: rhs M_t) */
  for (t = 0; t < n; t++)
    for (k = 0; k < t; k++) {
      MLSYS__TERM(cm->iU[MLSYS__CM_IDX(t, k + 1)], 1);
      MLSYS__TERM(cm->iU[MLSYS__CM_IDX(t, k)], -1);
      if (k + 1 < t && cm->M[k + 1] != 0) MLSYS__TERM(cm->iR[MLSYS__CM_IDX(t, k + 1)], -cm->M[k + 1]);
      for (j = d->in_off[k]; j < d->in_off[k + 1]; j++)
        if (cm->M[d->in[j]] != 0) MLSYS__TERM(cm->fcol[cm->fbase[j] + t - k], cm->M[d->in[j]]);
      MLSYS__ROW(MLSYS_ROW_EQ, k + 1 == t ? cm->M[t] : 0, "umem_%d_%d", t, k + 1);
    }
  if (min_peak)
    for (t = 0; t < n; t++)
      for (k = 0; k <= t; k++) {
        MLSYS__TERM(cm->iU[MLSYS__CM_IDX(t, k)], 1);
        MLSYS__TERM(cm->iZ, -1);
        MLSYS__ROW(MLSYS_ROW_LE, 0, "peak_%d_%d", t, k);
      }
#undef MLSYS__ROW
#undef MLSYS__TERM
  mlsys_free(rc);
  mlsys_free(rv);
  return MLSYS_OK;
fail:
  mlsys_free(rc);
  mlsys_free(rv);
  mlsys__cm_free(cm);
  return st;
}

/* A schedule as a point of the model (for warm starts): FREE and U follow from R and S exactly as in the
   simulator. Returns 1 when the point exists in this model and respects the budget. */
static int mlsys__cm_point(const mlsys__cm *cm, const unsigned char *R, const unsigned char *S, double *x) {
  const mlsys_dag *d = &cm->g->dag;
  int n = cm->n, t, k, i, j, e, nv = mlsys_milp_num_vars(cm->m), ok = 1, *last;
  double mem, peak = 0;
  if (!(last = (int *)mlsys_alloc((size_t)n + 1, sizeof(int)))) return 0;
  for (j = 0; j < nv; j++) x[j] = 0;
  for (t = 0; t < n && ok; t++) {
    const unsigned char *Rt = R + (size_t)t * (size_t)n, *St = S + (size_t)t * (size_t)n;
    const unsigned char *Sn = t + 1 < n ? S + (size_t)(t + 1) * (size_t)n : NULL;
    for (i = 0; i < t; i++) {
      if (Rt[i]) { if (cm->iR[MLSYS__CM_IDX(t, i)] < 0) ok = 0; else x[cm->iR[MLSYS__CM_IDX(t, i)]] = 1; }
      if (St[i]) x[cm->iS[MLSYS__CM_IDX(t, i)]] = 1;
    }
    for (i = 0; i < n; i++) last[i] = -1;
    for (k = 0; k <= t; k++)
      if (Rt[k])
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) last[d->in[j]] = k;
    mem = 0;
    for (i = 0; i < t; i++)
      if (St[i]) mem += cm->M[i];
    for (k = 0; k <= t; k++) {
      if (Rt[k]) mem += cm->M[k];
      x[cm->iU[MLSYS__CM_IDX(t, k)]] = mem;
      if (mem > peak) peak = mem;
      if (Rt[k])
        for (j = d->in_off[k]; j < d->in_off[k + 1]; j++) {
          i = d->in[j];
          e = j;
          if (last[i] == k && !(Sn && Sn[i])) {
            int f = cm->fcol[cm->fbase[e] + t - k];
            if (f < 0) { ok = 0; break; }
            x[f] = 1;
            mem -= cm->M[i];
          }
        }
    }
  }
  mlsys_free(last);
  if (cm->iZ >= 0) x[cm->iZ] = peak;
  else if (peak > cm->Bs + 1e-9) ok = 0;
  return ok;
}

static void mlsys__cm_extract(const mlsys__cm *cm, const double *x, unsigned char *R, unsigned char *S) {
  int n = cm->n, t, i;
  memset(R, 0, (size_t)n * (size_t)n);
  memset(S, 0, (size_t)n * (size_t)n);
  for (t = 0; t < n; t++) {
    R[MLSYS__CM_IDX(t, t)] = 1;
    for (i = 0; i < t; i++) {
      int r = cm->iR[MLSYS__CM_IDX(t, i)], s = cm->iS[MLSYS__CM_IDX(t, i)];
      if (r >= 0 && x[r] > 0.5) R[MLSYS__CM_IDX(t, i)] = 1;
      if (s >= 0 && x[s] > 0.5) S[MLSYS__CM_IDX(t, i)] = 1;
    }
  }
}

static double mlsys__cm_max_u(const mlsys__cm *cm, const double *x) {
  int t, k;
  double best = 0;
  for (t = 0; t < cm->n; t++)
    for (k = 0; k <= t; k++)
      if (x[cm->iU[MLSYS__CM_IDX(t, k)]] > best) best = x[cm->iU[MLSYS__CM_IDX(t, k)]];
  return best;
}

static void mlsys__cm_set_budget(mlsys__cm *cm, double Bs) {
  int t, k;
  for (t = 0; t < cm->n; t++)
    for (k = 0; k <= t; k++) mlsys_milp_set_bounds(cm->m, cm->iU[MLSYS__CM_IDX(t, k)], 0, Bs);
}

MLSYS_DEF mlsys_status mlsys_remat_milp_size(const mlsys_remat_graph *g, unsigned model, mlsys_remat_model_size *size) {
  mlsys__cm cm;
  mlsys_status st = mlsys__cm_build(g, 0, 0, model, 0, &cm);
  memset(size, 0, sizeof *size);
  if (st != MLSYS_OK) return st;
  size->binaries = mlsys_milp_num_integer(cm.m);
  size->continuous = mlsys_milp_num_vars(cm.m) - size->binaries;
  size->rows = mlsys_milp_num_rows(cm.m);
  size->nonzeros = mlsys_milp_num_nonzeros(cm.m);
  mlsys__cm_free(&cm);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   6. Solving: the driver for every method
   --------------------------------------------------------------------------------------------------------------- */
static const char *mlsys__remat_method_names[MLSYS_REMAT_METHOD_COUNT] = {
    "milp", "lp", "checkpoint-all", "chen", "chen-greedy", "griewank", "ap-sqrtn", "ap-greedy", "lin-greedy"};

MLSYS_DEF const char *mlsys_remat_method_name(mlsys_remat_method m) {
  return (unsigned)m < MLSYS_REMAT_METHOD_COUNT ? mlsys__remat_method_names[m] : "unknown";
}
MLSYS_DEF int mlsys_remat_method_parse(const char *name) {
  int i;
  if (!name) return -1;
  for (i = 0; i < MLSYS_REMAT_METHOD_COUNT; i++)
    if (strcmp(name, mlsys__remat_method_names[i]) == 0) return i;
  if (!strcmp(name, "checkmate")) return MLSYS_REMAT_MILP;
  if (!strcmp(name, "lp-round")) return MLSYS_REMAT_LP_ROUND;
  if (!strcmp(name, "chen-sqrtn") || !strcmp(name, "lin-sqrtn")) return MLSYS_REMAT_CHEN_SQRTN;
  return -1;
}

/* One baseline method at a budget: its schedule (the cheapest in budget where it has a knob). */
static mlsys_status mlsys__remat_baseline(const mlsys_remat_graph *g, mlsys_remat_method m, uint64_t budget,
                                          mlsys_remat_schedule *out) {
  mlsys_status st;
  memset(out, 0, sizeof *out);
  switch (m) {
    case MLSYS_REMAT_CHECKPOINT_ALL: st = mlsys__remat_checkpoint_all(g, out); break;
    case MLSYS_REMAT_CHEN_SQRTN: st = mlsys__remat_chen_sqrtn(g, 0, out); break;
    case MLSYS_REMAT_AP_SQRTN: st = mlsys__remat_chen_sqrtn(g, 1, out); break;
    case MLSYS_REMAT_CHEN_GREEDY: st = mlsys__remat_greedy(g, 0, 0, budget, out, "chen-greedy"); break;
    case MLSYS_REMAT_AP_GREEDY: st = mlsys__remat_greedy(g, 1, 1, budget, out, "ap-greedy"); break;
    case MLSYS_REMAT_LIN_GREEDY: st = mlsys__remat_greedy(g, 0, 1, budget, out, "lin-greedy"); break;
    case MLSYS_REMAT_GRIEWANK: st = mlsys__remat_griewank(g, budget, out); break;
    default: return mlsys_set_error(MLSYS_ERR_ARG, "not a baseline method: %d", (int)m);
  }
  if (st != MLSYS_OK) return st;
  out->budget = budget;
  out->fits = out->peak_total <= budget;
  return MLSYS_OK;
}

/* The best of the heuristics: pick 0 → the cheapest within the budget (ties: lower peak), 1 → the lowest peak. */
static mlsys_status mlsys__remat_best_heuristic(const mlsys_remat_graph *g, uint64_t budget, int pick,
                                                mlsys_remat_schedule *best) {
  static const mlsys_remat_method ms[] = {MLSYS_REMAT_CHECKPOINT_ALL, MLSYS_REMAT_CHEN_SQRTN, MLSYS_REMAT_AP_SQRTN,
                                          MLSYS_REMAT_LIN_GREEDY, MLSYS_REMAT_AP_GREEDY, MLSYS_REMAT_CHEN_GREEDY,
                                          MLSYS_REMAT_GRIEWANK};
  mlsys_remat_schedule cur;
  int i, have = 0;
  mlsys_status st;
  memset(best, 0, sizeof *best);
  for (i = 0; i <= (int)(sizeof ms / sizeof ms[0]); i++) {
    int better;
    if (i < (int)(sizeof ms / sizeof ms[0])) st = mlsys__remat_baseline(g, ms[i], budget, &cur);
    else if (pick == 1) { st = mlsys__remat_checkpoint_last(g, &cur); cur.budget = budget; cur.fits = cur.peak_total <= budget; }
    else break;
    if (st != MLSYS_OK) { mlsys_remat_schedule_free(best); return st; }
    if (!have) better = 1;
    else if (pick == 0 && cur.fits != best->fits) better = cur.fits;
    else if (pick == 0 && cur.fits) better = cur.cost < best->cost || (cur.cost == best->cost && cur.peak < best->peak);
    else better = cur.peak < best->peak || (cur.peak == best->peak && cur.cost < best->cost);
    if (better) { mlsys_remat_schedule_free(best); *best = cur; have = 1; }
    else mlsys_remat_schedule_free(&cur);
  }
  return MLSYS_OK;
}

typedef struct {
  const mlsys_remat_opts *o;
  double cscale;
  mlsys_progress prog;
  double best;
} mlsys__remat_cb;
static int mlsys__remat_on_improve(void *ud, double obj, double seconds) {
  mlsys__remat_cb *cb = (mlsys__remat_cb *)ud;
  double cost = obj * cb->cscale;
  if (cost < cb->best) cb->best = cost;
  mlsys_progress_update(&cb->prog, "incumbent cost %.6g", cb->best);
  mlsys_log(MLSYS_LOG_INFO, "remat: incumbent cost %.6g after %.2f s", cost, seconds);
  return cb->o->on_improve ? cb->o->on_improve(cb->o->ud, cost, seconds) : 0;
}
static int mlsys__remat_poll(void *ud) {
  mlsys__remat_cb *cb = (mlsys__remat_cb *)ud;
  mlsys_progress_update(&cb->prog, "searching; best cost %.6g", cb->best);
  return 0;
}

static double mlsys__remat_time_left(const mlsys_remat_opts *o, double t0) {
  double lim = o->time_limit > 0 ? o->time_limit : 3600, left = lim - (mlsys_now() - t0);
  return left > 0.05 ? left : 0.05;
}

/* Backends: opts.backend picks both; by default MILPs of graphs up to 40 nodes run on lp_solve, larger ones on CBC
   when compiled in, and LP relaxations on Clp when compiled in, which solves the Checkmate LPs one to two orders
   of magnitude faster than lp_solve. */
#define MLSYS__REMAT_CBC_MIN_NODES 40
static mlsys_milp_backend mlsys__remat_milp_backend(const mlsys_remat_graph *g, const mlsys_remat_opts *o) {
  if (o->backend != MLSYS_SOLVER_DEFAULT) return o->backend;
  /* measured (bench/RESULTS.md): lp_solve proves the small unit chains (n <= 33) fastest; on the real graphs
     (AlexNet n = 45, VGG16 n = 81) CBC proves in seconds what lp_solve does not prove in 30 s */
  if (g->dag.n > MLSYS__REMAT_CBC_MIN_NODES && mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) return MLSYS_SOLVER_CBC;
  return mlsys_milp_has_backend(MLSYS_SOLVER_LPSOLVE) ? MLSYS_SOLVER_LPSOLVE : MLSYS_SOLVER_CBC;
}
static mlsys_milp_backend mlsys__remat_lp_backend(const mlsys_remat_opts *o) {
  if (o->backend != MLSYS_SOLVER_DEFAULT) return o->backend;
  return mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? MLSYS_SOLVER_CBC : MLSYS_SOLVER_LPSOLVE;
}

MLSYS_DEF mlsys_status mlsys_remat_min_budget(const mlsys_remat_graph *g, const mlsys_remat_opts *opts,
                                              uint64_t *budget, int *proven, mlsys_remat_schedule *out) {
  mlsys_remat_opts o;
  mlsys_remat_schedule h;
  mlsys__cm cm;
  mlsys_milp_opts mo;
  mlsys_milp_result r;
  mlsys_status st;
  uint64_t lb = mlsys_remat_single_op_bound(g), fixed = mlsys_remat_fixed_total(g);
  double t0 = mlsys_now(), *x = NULL;
  if (opts) o = *opts; else memset(&o, 0, sizeof o);
  *proven = 0;
  *budget = 0;
  if (out) memset(out, 0, sizeof *out);
  if ((st = mlsys__remat_best_heuristic(g, UINT64_MAX, 1, &h)) != MLSYS_OK) return st;
  if (h.peak > lb && g->dag.n > 2 * MLSYS__REMAT_COARSEN_MIN_NODES && !(o.time_limit > 600)) {
    /* ResNet-50's min-peak model (600k rows): CBC's root LP alone runs for many minutes without looking at the
       time limit; the heuristic answer stands, unproven, unless a long limit is given */
  } else if (h.peak > lb) {
    /* the MILP that minimises the peak, started from the lowest-peak heuristic */
    if ((st = mlsys__cm_build(g, 0, 1, o.model, 0, &cm)) == MLSYS_OK) {
      x = (double *)mlsys_alloc((size_t)mlsys_milp_num_vars(cm.m) + 1, sizeof(double));
      if (!x) { mlsys__cm_free(&cm); mlsys_remat_schedule_free(&h); return MLSYS_ERR_NOMEM; }
      memset(&mo, 0, sizeof mo);
      mo.backend = mlsys__remat_milp_backend(g, &o);
      mo.time_limit = mlsys__remat_time_left(&o, t0);
      mo.lpsolve_bb_rule = 8192;   /* NODE_FIRSTSELECT | NODE_AUTOORDER, as in the main solve */
      if (mlsys__cm_point(&cm, h.R, h.S, x)) mo.incumbent = x;
      st = mlsys_milp_solve(cm.m, &mo, &r);
      h.milp_ran = 1;   /* whether or not it beat the heuristic (then it stays the source) */
      if (st == MLSYS_OK) {
        mlsys_remat_schedule c;
        if (mlsys_remat_schedule_alloc(g->dag.n, &c) == MLSYS_OK) {
          mlsys__cm_extract(&cm, r.x, c.R, c.S);
          if (mlsys_remat_trim(g, c.S, c.R) == MLSYS_OK && mlsys_remat_evaluate(g, &c) == MLSYS_OK &&
              c.peak < h.peak) {
            mlsys__remat_name(&c, "checkmate-min-peak");
            c.milp_ran = 1;
            mlsys_remat_schedule_free(&h);
            h = c;
          } else {
            mlsys_remat_schedule_free(&c);
          }
        }
        /* proven: the MILP proved its optimum, in exact byte units */
        if (r.status == MLSYS_MILP_OPTIMAL && cm.unit_exact && (double)h.peak <= r.objective * cm.unit + 0.5)
          *proven = 1;
        if (h.peak <= lb) *proven = 1;   /* the single-operator bound is reached */
      }
      mlsys_milp_result_free(&r);
      mlsys_free(x);
      mlsys__cm_free(&cm);
      st = MLSYS_OK;
    } else if (st != MLSYS_ERR_NOMEM) {
      st = MLSYS_OK;   /* too big for the MILP: keep the heuristic answer */
    }
  } else {
    *proven = 1;   /* the single-operator lower bound is reached */
  }
  *budget = h.peak + fixed;
  h.budget = *budget;
  h.fits = 1;
  if (out) *out = h; else mlsys_remat_schedule_free(&h);
  return st;
}

/* "smallest feasible budget" text for infeasibility messages */
static void mlsys__remat_min_budget_text(const mlsys_remat_graph *g, const mlsys_remat_opts *o, double seconds,
                                         char *buf, size_t len) {
  mlsys_remat_opts mo = *o;
  uint64_t b = 0;
  int proven = 0;
  mo.time_limit = seconds;
  if (mlsys_remat_min_budget(g, &mo, &b, &proven, NULL) == MLSYS_OK)
    snprintf(buf, len, "the smallest feasible budget %s %llu bytes", proven ? "is" : "found is",
             (unsigned long long)b);
  else
    snprintf(buf, len, "no feasible budget could be determined");
}

static mlsys_status mlsys__remat_infeasible(const mlsys_remat_graph *g, const mlsys_remat_opts *o, uint64_t budget,
                                            const char *why, double seconds) {
  char mb[160];
  mlsys__remat_min_budget_text(g, o, seconds, mb, sizeof mb);
  return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "budget %llu bytes is infeasible (%s); %s",
                         (unsigned long long)budget, why, mb);
}

/* The quick proofs of infeasibility: fixed memory alone, or one operator with its inputs. */
static int mlsys__remat_trivially_infeasible(const mlsys_remat_graph *g, uint64_t budget, char *why, size_t len) {
  uint64_t fixed = mlsys_remat_fixed_total(g), lb = mlsys_remat_single_op_bound(g);
  if (budget < fixed) {
    snprintf(why, len, "fixed memory alone is %llu bytes", (unsigned long long)fixed);
    return 1;
  }
  if (budget - fixed < lb) {
    snprintf(why, len, "some node with its inputs needs %llu bytes of activations beside %llu fixed",
             (unsigned long long)lb, (unsigned long long)fixed);
    return 1;
  }
  return 0;
}

static mlsys_status mlsys__remat_solve_lp(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                          double t0, int warm, mlsys_remat_schedule *out);

static mlsys_status mlsys__remat_solve_milp(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                            double t0, mlsys_remat_schedule *out) {
  mlsys_remat_schedule h;
  mlsys__cm cm;
  mlsys_milp_opts mo;
  mlsys_milp_result r;
  mlsys__remat_cb cb;
  mlsys_status st;
  double *x = NULL;
  char why[200];
  int have_inc = 0, ran = 0;
  uint64_t fixed = mlsys_remat_fixed_total(g);
  memset(out, 0, sizeof *out);
  if (mlsys__remat_trivially_infeasible(g, budget, why, sizeof why))
    return mlsys__remat_infeasible(g, o, budget, why, fmin(30, mlsys__remat_time_left(o, t0)));
  /* heuristics first: an incumbent, a cutoff and a fallback */
  if ((st = mlsys__remat_best_heuristic(g, budget, 0, &h)) != MLSYS_OK) return st;
  if (h.fits && h.cost <= h.baseline_cost && !o->raw) {
    /* no recomputation needed: nothing can be cheaper than computing every node once */
    *out = h;
    out->optimal = 1;
    out->bound = h.baseline_cost;
    out->gap = 0;
    snprintf(out->solver_note, sizeof out->solver_note, "%s fits the budget: no recomputation needed", h.method);
    mlsys__remat_relabel(out, "checkmate-milp");
    return MLSYS_OK;
  }
  /* LP relaxation + rounding (thesis §3.5): often a much better incumbent than the baselines, and its bound can
     prove the incumbent optimal before any branching. A quarter of the time at most. */
  if (!o->raw && !o->no_warm_start) {
    mlsys_remat_opts lo = *o;
    mlsys_remat_schedule lr;
    lo.time_limit = fmax(0.05, 0.25 * mlsys__remat_time_left(o, t0));
    lo.dump_model = NULL;
    lo.progress = 0;
    st = mlsys__remat_solve_lp(g, budget, &lo, mlsys_now(), 1, &lr);
    if (st == MLSYS_OK) {
      if (!h.fits || lr.cost < h.cost) {
        mlsys_remat_schedule_free(&h);
        h = lr;
      } else {
        h.bound = lr.bound;
        mlsys_remat_schedule_free(&lr);
      }
      if (!isnan(h.bound) && h.cost <= h.bound * (1 + 1e-9)) {   /* the LP bound proves it */
        *out = h;
        out->optimal = 1;
        out->gap = 0;
        snprintf(out->solver_note, sizeof out->solver_note, "%s meets the LP lower bound: proven optimal", h.method);
        mlsys__remat_relabel(out, "checkmate-milp");
        return MLSYS_OK;
      }
    } else {
      mlsys_remat_schedule_free(&lr);
    }
    mlsys_clear_error();
  }
  if ((st = mlsys__cm_build(g, budget - fixed, 0, o->model, o->dump_model != NULL, &cm)) != MLSYS_OK) {
    mlsys_remat_schedule_free(&h);
    return st;
  }
  if (!cm.unit_exact && !o->raw) {
    /* Sizes do not fit byte-exact units. The model rounded the other way (sizes down, budget up) is a relaxation
       of the byte problem: its bound is valid, every schedule that fits in bytes (the heuristic incumbent) is a
       point of it, and its optimum is the byte optimum whenever it fits in bytes, which the simulator checks
       below; otherwise the incumbent stands. The rounded-up model could prove nothing. */
    mlsys__cm_free(&cm);
    if ((st = mlsys__cm_build(g, budget - fixed, 0, o->model | MLSYS__CM_RELAXED, o->dump_model != NULL, &cm)) != MLSYS_OK) {
      mlsys_remat_schedule_free(&h);
      return st;
    }
  }
  if (o->dump_model && (st = mlsys_milp_write(cm.m, o->dump_model)) != MLSYS_OK) goto done;
  if (!(x = (double *)mlsys_alloc((size_t)mlsys_milp_num_vars(cm.m) + 1, sizeof(double)))) { st = MLSYS_ERR_NOMEM; goto done; }
  memset(&mo, 0, sizeof mo);
  memset(&cb, 0, sizeof cb);
  cb.o = o;
  cb.cscale = cm.cscale;
  cb.best = h.fits ? h.cost : INFINITY;
  mlsys_progress_begin(&cb.prog, "checkmate milp", o->progress);
  mo.backend = mlsys__remat_milp_backend(g, o);
  mo.time_limit = mlsys__remat_time_left(o, t0);
  mo.lpsolve_bb_rule = 8192;   /* NODE_FIRSTSELECT | NODE_AUTOORDER, floor branch first: measured in docs/remat.md */
  mo.hard_time_limit = 1;      /* CBC: killed at the limit even in its root LP (mlsys_milp_opts) */
  mo.mip_gap_rel = o->mip_gap_rel;
  mo.mip_gap_abs = o->mip_gap_abs / cm.cscale;
  mo.on_improve = mlsys__remat_on_improve;
  mo.should_stop = mlsys__remat_poll;
  mo.ud = &cb;
  if (h.fits && !o->no_warm_start && mlsys__cm_point(&cm, h.R, h.S, x)) { mo.incumbent = x; have_inc = 1; }
  st = mlsys_milp_solve(cm.m, &mo, &r);
  ran = 1;
  mlsys_progress_end(&cb.prog);
  if (st == MLSYS_OK) {
    if ((st = mlsys_remat_schedule_alloc(g->dag.n, out)) != MLSYS_OK) { mlsys_milp_result_free(&r); goto done; }
    mlsys__cm_extract(&cm, r.x, out->R, out->S);
    out->model_cost = r.objective * cm.cscale;
    out->model_peak = (uint64_t)llround(mlsys__cm_max_u(&cm, r.x) * cm.unit);
    if (!o->raw) mlsys_remat_trim(g, out->S, out->R);
    out->budget = budget;
    if ((st = mlsys_remat_evaluate(g, out)) != MLSYS_OK) {
      st = mlsys_prefix_error("internal error: the MILP solution does not simulate");
      mlsys_milp_result_free(&r);
      goto done;
    }
    if (!out->fits && cm.relaxed && !cm.unit_exact && h.n && h.fits) {
      /* the relaxation's schedule is a few units over in bytes: the incumbent is the answer, r.bound still holds */
      mlsys_remat_schedule_free(out);
      *out = h;
      memset(&h, 0, sizeof h);
      out->optimal = 0;
      out->bound = fmin(r.bound * cm.cscale, out->cost);
      out->gap = out->cost > 0 ? (out->cost - out->bound) / out->cost : 0;
      snprintf(out->solver_note, sizeof out->solver_note, "%s; the MILP's schedule (sizes in %.0f-byte units, "
               "rounded down) is over in bytes: %s", r.status == MLSYS_MILP_OPTIMAL ? "bound proven" : "time limit reached",
               cm.unit, out->method);
      mlsys__remat_relabel(out, "checkmate-milp");
      mlsys_milp_result_free(&r);
      goto done;
    }
    /* claims about the byte problem: exact units, or the relaxed model whose optimum fits in bytes */
    out->optimal = r.status == MLSYS_MILP_OPTIMAL && (cm.unit_exact || (cm.relaxed && out->fits));
    out->bound = cm.unit_exact || cm.relaxed ? r.bound * cm.cscale : h.bound;
    if (!isnan(out->bound) && out->bound >= out->cost * (1 - 1e-9)) { out->bound = out->cost; out->optimal = 1; }
    out->gap = isnan(out->bound) ? NAN : out->cost > 0 ? (out->cost - out->bound) / out->cost : 0;
    mlsys__remat_name(out, "checkmate-milp");
    if (r.from_incumbent) snprintf(out->source, sizeof out->source, "%s", h.source);   /* nothing cheaper found */
    if (r.from_incumbent)
      snprintf(out->solver_note, sizeof out->solver_note, "%s; the MILP found nothing cheaper than %s",
               out->optimal ? "proven optimal" : r.status == MLSYS_MILP_OPTIMAL ? "optimal in the model" : "time limit reached", h.method);
    else
      snprintf(out->solver_note, sizeof out->solver_note, "%s by %s in %.2f s (%ld nodes)",
               out->optimal ? "proven optimal" : r.status == MLSYS_MILP_OPTIMAL ? "optimal in the model" : "best found, not proven",
               mlsys_milp_backend_name(mo.backend), r.seconds, r.nodes);
    if (!cm.unit_exact && !out->optimal) {
      size_t l = strlen(out->solver_note);
      snprintf(out->solver_note + l, sizeof out->solver_note - l, "; sizes rounded %s to %.0f-byte units",
               cm.relaxed ? "down" : "up", cm.unit);
    }
    if (!out->fits) {   /* cannot happen when units are conservative; guard anyway */
      st = mlsys_set_error(MLSYS_ERR_SOLVER, "internal error: MILP schedule peaks at %llu bytes, over the budget",
                           (unsigned long long)out->peak_total);
    }
    mlsys_milp_result_free(&r);
  } else if ((st == MLSYS_ERR_INFEASIBLE || st == MLSYS_ERR_TIMEOUT || st == MLSYS_ERR_CANCELED) && !have_inc &&
             h.n && h.fits) {
    /* the heuristic fits in bytes but is no point of the model (sizes rounded up to units): it is the answer
       unless the MILP finds better, and here it found nothing */
    mlsys_milp_result_free(&r);
    *out = h;
    memset(&h, 0, sizeof h);
    out->optimal = 0;
    out->gap = isnan(out->bound) || out->cost <= 0 ? NAN : (out->cost - out->bound) / out->cost;
    snprintf(out->solver_note, sizeof out->solver_note, "%s; the MILP (sizes in %.0f-byte units) found no "
             "schedule: %s", st == MLSYS_ERR_INFEASIBLE ? "no model point at this budget" : "time limit reached",
             cm.unit, out->method);
    mlsys__remat_relabel(out, "checkmate-milp");
    st = MLSYS_OK;
  } else if (st == MLSYS_ERR_INFEASIBLE && !have_inc && (cm.unit_exact || cm.relaxed)) {
    mlsys_milp_result_free(&r);
    st = mlsys__remat_infeasible(g, o, budget, "proven by the MILP", fmin(30, mlsys__remat_time_left(o, t0)));
    if (h.n) { *out = h; memset(&h, 0, sizeof h); }
  } else if (st == MLSYS_ERR_INFEASIBLE && !have_inc) {
    /* the rounded-up model has no schedule, which proves nothing about bytes: look for the smallest budget, and
       use its schedule when it fits after all */
    mlsys_remat_schedule mb;
    mlsys_remat_opts mo2 = *o;
    uint64_t b2 = 0;
    int proven = 0;
    mlsys_milp_result_free(&r);
    mo2.time_limit = fmin(30, mlsys__remat_time_left(o, t0));
    if (mlsys_remat_min_budget(g, &mo2, &b2, &proven, &mb) == MLSYS_OK && b2 <= budget) {
      *out = mb;
      out->budget = budget;
      out->fits = 1;
      out->bound = h.bound;
      out->gap = isnan(h.bound) ? NAN : (out->cost - h.bound) / out->cost;
      mlsys__remat_relabel(out, "checkmate-milp");
      snprintf(out->solver_note, sizeof out->solver_note, "the MILP rounds sizes up to %.0f-byte units and found no "
               "schedule; the lowest-memory search found this one", cm.unit);
      st = MLSYS_OK;
    } else {
      if (b2) mlsys_remat_schedule_free(&mb);
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no schedule within %llu bytes found (not a proof: the model "
                           "rounds sizes up to %.0f-byte units); the smallest feasible budget %s %llu bytes",
                           (unsigned long long)budget, cm.unit, proven ? "is" : "found is", (unsigned long long)b2);
      if (h.n) { *out = h; memset(&h, 0, sizeof h); }
    }
  } else if (st == MLSYS_ERR_TIMEOUT || st == MLSYS_ERR_CANCELED) {
    char mb[160];
    mlsys_milp_result_free(&r);
    mlsys__remat_min_budget_text(g, o, 10, mb, sizeof mb);
    st = mlsys_set_error(st, "no schedule within %llu bytes found in %.1f s (not proven infeasible); %s",
                         (unsigned long long)budget, mlsys_now() - t0, mb);
    if (h.n) { *out = h; memset(&h, 0, sizeof h); }
  } else {
    mlsys_milp_result_free(&r);
  }
done:
  if (ran && out->n) out->milp_ran = 1;
  mlsys_free(x);
  mlsys__cm_free(&cm);
  mlsys_remat_schedule_free(&h);
  return st;
}

/* ---- Coarsening: fuse cheap element-wise / normalisation ops into their producers (conv-bn-relu) ---- */
static int mlsys__remat_fusable_op(const char *op) {
  static const char *const pat[] = {"batchnorm", "relu", "gelu", "silu", "swish", "sigmoid", "tanh",
                                    "dropout", "flatten", "identity", "hardtanh"};
  char low[64];
  size_t i, k;
  if (!op) return 0;
  for (i = 0; op[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)op[i]);
  low[i] = 0;
  for (k = 0; k < sizeof pat / sizeof pat[0]; k++)
    if (strstr(low, pat[k])) return 1;
  return 0;
}

/* Users of u other than backward nodes: exactly {v}? (backward nodes may read any member's value) */
static int mlsys__remat_only_fwd_user(const mlsys_remat_graph *g, int u, int v) {
  int j, seen = 0;
  for (j = g->dag.out_off[u]; j < g->dag.out_off[u + 1]; j++) {
    int w = g->dag.out[j];
    if (g->kind[w] == MLSYS_REMAT_B) continue;
    if (w != v) return 0;
    seen = 1;
  }
  return seen;
}

MLSYS_DEF mlsys_status mlsys_remat_coarsen(const mlsys_remat_graph *g, mlsys_remat_graph *coarse, int *group_of,
                                           uint64_t *transient) {
  enum { MAXG = 4 };
  int n = g->dag.n, v, j, ng = 0, *first = NULL, *size = NULL, *deps = NULL, *mark = NULL, nd = 0;
  unsigned char *dead = NULL;
  mlsys_remat_node *nodes = NULL;
  mlsys_status st = MLSYS_OK;
  uint64_t excess = 0;
  memset(coarse, 0, sizeof *coarse);
  coarse->loss = -1;
  if (transient) *transient = 0;
  if (n <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "coarsen: empty graph");
  if (!(first = (int *)mlsys_alloc((size_t)n, sizeof(int))) || !(size = (int *)mlsys_calloc((size_t)n, sizeof(int))) ||
      !(mark = (int *)mlsys_alloc((size_t)n, sizeof(int))) || !(dead = (unsigned char *)mlsys_calloc((size_t)n, 1)) ||
      !(deps = (int *)mlsys_alloc((size_t)g->dag.nedges + 1, sizeof(int))) ||
      !(nodes = (mlsys_remat_node *)mlsys_calloc((size_t)n, sizeof *nodes))) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (v = 0; v < n; v++) {
    int join = 0, p = v - 1;
    unsigned bad = MLSYS_REMAT_NORECOMPUTE | MLSYS_REMAT_INPLACE;
    if (p >= 0 && size[group_of[p]] < MAXG && g->kind[v] == g->kind[p] && !(g->flags[v] & bad) && !(g->flags[p] & bad)) {
      int nin = g->dag.in_off[v + 1] - g->dag.in_off[v];
      if (g->kind[v] == MLSYS_REMAT_F) {
        /* v reads only p, p feeds only v in the forward pass, v is a cheap follower */
        join = nin == 1 && g->dag.in[g->dag.in_off[v]] == p && mlsys__remat_only_fwd_user(g, p, v) &&
               mlsys__remat_fusable_op(g->op ? g->op[v] : NULL);
      } else if (g->kind[v] == MLSYS_REMAT_B) {
        /* the backward twins of one forward group, chained: p is read only by v, v reads no other gradient */
        int fv = g->fwd_of[v], fp = g->fwd_of[p], others = 0;
        join = fv >= 0 && fp >= 0 && group_of[fv] == group_of[fp] && g->dag.out_off[p + 1] - g->dag.out_off[p] == 1 &&
               g->dag.out[g->dag.out_off[p]] == v;
        for (j = g->dag.in_off[v]; join && j < g->dag.in_off[v + 1]; j++) {
          int u = g->dag.in[j];
          if (u != p && g->kind[u] != MLSYS_REMAT_F) others = 1;
        }
        if (others) join = 0;
      }
    }
    if (join) {
      group_of[v] = group_of[p];
    } else {
      group_of[v] = ng;
      first[ng++] = v;
    }
    size[group_of[v]]++;
  }
  for (v = 0; v < n; v++) mark[v] = -1;
  for (j = 0; j < ng; j++) {
    int a = first[j], b = a + size[j], k, start = nd;
    uint64_t live = 0, peak = 0, kept = 0;
    double cost = 0;
    mlsys_remat_node *x = &nodes[j];
    for (k = a; k < b; k++) {
      int e, q, out = g->dag.out_off[k + 1] == g->dag.out_off[k];
      for (q = g->dag.out_off[k]; q < g->dag.out_off[k + 1]; q++) out |= g->dag.out[q] >= b;
      if (out) kept += g->dag.size[k];
      cost += g->dag.cost[k];
      live += g->dag.size[k];
      if (live > peak) peak = live;
      /* members read only inside the group die after their last reader: bytes held at once, not summed */
      for (e = a; e < k; e++) {
        int last = -1, outside = 0;
        if (dead[e]) continue;
        for (q = g->dag.out_off[e]; q < g->dag.out_off[e + 1]; q++) {
          int w = g->dag.out[q];
          if (w >= b) outside = 1;
          else if (w > last) last = w;
        }
        if (!outside && last <= k && g->dag.out_off[e + 1] > g->dag.out_off[e]) { live -= g->dag.size[e]; dead[e] = 1; }
      }
      for (e = g->dag.in_off[k]; e < g->dag.in_off[k + 1]; e++) {
        int u = group_of[g->dag.in[e]];
        if (u != j && mark[u] != j) { mark[u] = j; deps[nd++] = u; }
      }
    }
    x->name = g->dag.name ? g->dag.name[a] : NULL;
    x->op = g->op ? g->op[a] : NULL;
    x->kind = (mlsys_remat_kind)g->kind[a];
    x->cost = cost;
    x->mem = kept;
    if (peak - kept > excess) excess = peak - kept;
    x->deps = deps + start;
    x->ndeps = nd - start;
    for (k = a; k < b; k++) x->flags |= g->flags[k] & (MLSYS_REMAT_RNG);
  }
  if ((st = mlsys_remat_graph_create(ng, nodes, coarse)) != MLSYS_OK) goto done;
  for (j = 0; j < ng; j++) {
    int f = g->fwd_of[first[j]];
    coarse->fwd_of[j] = f >= 0 ? group_of[f] : -1;
  }
  coarse->batch = g->batch;
  if (transient) *transient = excess;
  if ((g->name && !(coarse->name = mlsys_strdup(g->name))) ||
      (g->mem_unit && !(coarse->mem_unit = mlsys_strdup(g->mem_unit))) ||
      (g->cost_unit && !(coarse->cost_unit = mlsys_strdup(g->cost_unit))))
    st = MLSYS_ERR_NOMEM;
  for (j = 0; st == MLSYS_OK && j < g->nfixed; j++) st = mlsys_remat_graph_set_fixed(coarse, g->fixed_name[j], g->fixed_bytes[j]);
  if (st != MLSYS_OK) mlsys_remat_graph_free(coarse);
done:
  mlsys_free(first);
  mlsys_free(size);
  mlsys_free(mark);
  mlsys_free(dead);
  mlsys_free(deps);
  mlsys_free(nodes);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_expand(const mlsys_remat_graph *g, const mlsys_remat_graph *coarse,
                                          const int *group_of, const mlsys_remat_schedule *cs,
                                          mlsys_remat_schedule *out) {
  int n = g->dag.n, nc = coarse->dag.n, t, i;
  size_t nn = (size_t)n, ncc = (size_t)nc;
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if (!cs || cs->n != nc) return mlsys_set_error(MLSYS_ERR_ARG, "expand: the schedule has %d nodes, the coarse graph %d", cs ? cs->n : 0, nc);
  if ((st = mlsys_remat_schedule_alloc(n, out)) != MLSYS_OK) return st;
  for (t = 0; t < n; t++) {
    int T = group_of[t];
    int lead = t == 0 || group_of[t - 1] != T;   /* the first fine stage of coarse stage T */
    for (i = 0; i < t; i++) {
      int I = group_of[i], keep;
      if (I == T) keep = 1;   /* computed earlier in this coarse stage; trimmed below when nobody reads it */
      else keep = cs->S[(size_t)T * ncc + (size_t)I] || (!lead && cs->R[(size_t)T * ncc + (size_t)I]);
      out->S[(size_t)t * nn + (size_t)i] = (unsigned char)keep;
    }
  }
  if ((st = mlsys_remat_trim(g, out->S, out->R)) != MLSYS_OK) { mlsys_remat_schedule_free(out); return st; }
  out->budget = cs->budget;
  if ((st = mlsys_remat_evaluate(g, out)) != MLSYS_OK) { mlsys_remat_schedule_free(out); return st; }
  snprintf(out->method, sizeof out->method, "%s", cs->method);
  snprintf(out->source, sizeof out->source, "%s", cs->source[0] ? cs->source : cs->method);
  out->milp_ran = cs->milp_ran;
  out->bound = NAN;
  out->gap = NAN;
  return MLSYS_OK;
}

/* Two-phase rounding (thesis §3.5, Alg. 3): LP at (1 - eps)·budget, S rounded at each threshold, R rebuilt by
   the closure, the cheapest schedule within the budget kept. The LP at the full budget gives the lower bound
   (and is rounded too). */
/* When the LP runs on a coarsened graph: candidates are expanded to the fine graph and judged there. */
typedef struct {
  const mlsys_remat_graph *fine;
  const int *group_of;
  uint64_t budget;          /* the fine (true) budget */
} mlsys__remat_coarse_ctx;

static mlsys_status mlsys__remat_solve_lp_on(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                             double t0, int warm, const mlsys__remat_coarse_ctx *cx,
                                             mlsys_remat_schedule *out);

/* Graphs above this many nodes are coarsened for the LP when that removes a fifth of the nodes or more: the LP
   grows as n·|E|, and Clp takes minutes on the op-level ResNet-50 (n = 351) but seconds on its fused form. */

static mlsys_status mlsys__remat_solve_lp(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                          double t0, int warm, mlsys_remat_schedule *out) {
  mlsys_remat_graph c;
  mlsys__remat_coarse_ctx cx;
  int *grp = NULL, use = 0, attempt;
  uint64_t excess = 0, fixed = mlsys_remat_fixed_total(g);
  mlsys_status st;
  memset(out, 0, sizeof *out);
  if (!o->raw) {
    /* nothing is cheaper than computing every node once: when that fits, it is the answer (a coarse LP's
       expansion would recompute a little for nothing) */
    mlsys_remat_schedule ck;
    if (mlsys__remat_checkpoint_all(g, &ck) == MLSYS_OK) {
      ck.budget = budget;
      ck.fits = ck.peak_total <= budget;
      if (ck.fits && ck.cost <= ck.baseline_cost) {
        *out = ck;
        out->optimal = 1;
        out->bound = out->cost;
        out->gap = 0;
        snprintf(out->solver_note, sizeof out->solver_note, "checkpoint-all fits the budget: no recomputation needed");
        return MLSYS_OK;
      }
      mlsys_remat_schedule_free(&ck);
    }
    mlsys_clear_error();
  }
  if (o->coarsen == MLSYS_REMAT_COARSEN_OFF || (o->coarsen == MLSYS_REMAT_COARSEN_AUTO && g->dag.n < MLSYS__REMAT_COARSEN_MIN_NODES))
    return mlsys__remat_solve_lp_on(g, budget, o, t0, warm, NULL, out);
  if (!(grp = (int *)mlsys_alloc((size_t)g->dag.n, sizeof(int)))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys_remat_coarsen(g, &c, grp, &excess)) != MLSYS_OK) { mlsys_free(grp); return st; }
  use = o->coarsen == MLSYS_REMAT_COARSEN_ON ? c.dag.n < g->dag.n : 5 * c.dag.n <= 4 * g->dag.n;
  if (!use || budget <= fixed + excess + 1) {
    mlsys_remat_graph_free(&c);
    mlsys_free(grp);
    return mlsys__remat_solve_lp_on(g, budget, o, t0, warm, NULL, out);
  }
  cx.fine = g;
  cx.group_of = grp;
  cx.budget = budget;
  /* the coarse model leaves out the bytes a group holds only while it runs: budget it at that much less, and
     tighter again when no expansion fits */
  for (attempt = 0; attempt < 3; attempt++) {
    /* the coarse accounting is pessimistic for what stays resident and optimistic while a group runs: the full
       budget first (its 90% pass usually expands to a fit), then less the largest in-group excess, then 10% less */
    uint64_t cb = attempt == 0 ? budget : budget - excess - (uint64_t)((double)(budget - fixed - excess) * 0.1 * (attempt - 1));
    mlsys_remat_schedule_free(out);
    st = mlsys__remat_solve_lp_on(&c, cb, o, t0, 1, &cx, out);
    if (st == MLSYS_OK || st == MLSYS_ERR_TIMEOUT || st == MLSYS_ERR_CANCELED || st == MLSYS_ERR_NOMEM) break;
    if (mlsys__remat_time_left(o, t0) <= 0.05) break;
  }
  if (st == MLSYS_OK) {
    size_t l = strlen(out->solver_note);
    snprintf(out->solver_note + l, sizeof out->solver_note - l, "; on the graph coarsened to %d nodes", c.dag.n);
  }
  mlsys_remat_graph_free(&c);
  mlsys_free(grp);
  /* (not for the largest graphs under a short limit: Clp's presolve of ResNet-50's 600k-row LP alone outlasts a
     60 s limit, and Clp checks the limit only while it iterates) */
  if (st == MLSYS_ERR_INFEASIBLE && mlsys__remat_time_left(o, t0) > 0.05 &&
      (g->dag.n <= 2 * MLSYS__REMAT_COARSEN_MIN_NODES || mlsys__remat_time_left(o, t0) > 600)) {
    /* near the single-operator bound a fused group needs all its members' inputs at once, which the real graph
       does not: the fine LP with the time that is left */
    mlsys_remat_schedule fine;
    mlsys_status s2 = mlsys__remat_solve_lp_on(g, budget, o, t0, warm, NULL, &fine);
    if (s2 != MLSYS_ERR_TIMEOUT && s2 != MLSYS_ERR_CANCELED) {
      mlsys_remat_schedule_free(out);
      *out = fine;
      return s2;
    }
    mlsys_remat_schedule_free(&fine);
    mlsys_clear_error();
  }
  if (st == MLSYS_ERR_INFEASIBLE && !warm) {
    char mb[160];
    mlsys__remat_min_budget_text(g, o, fmin(10, mlsys__remat_time_left(o, t0)), mb, sizeof mb);
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no LP rounding (on the graph coarsened from %d nodes) fits the "
                           "budget of %llu bytes; %s", g->dag.n, (unsigned long long)budget, mb);
  }
  return st;
}

static mlsys_status mlsys__remat_solve_lp_on(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *o,
                                             double t0, int warm, const mlsys__remat_coarse_ctx *cx,
                                             mlsys_remat_schedule *out) {
  static const double dflt[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  unsigned lp_model;
  mlsys_progress prog;
  const double *th = o->nthresholds > 0 ? o->thresholds : dflt;
  int nth = o->nthresholds > 0 ? o->nthresholds : 9, pass, i, t, have = 0, n = g->dag.n;
  double eps = o->lp_eps > 0 ? o->lp_eps : 0.1, bound = NAN;
  mlsys__cm cm;
  mlsys_milp_opts mo;
  mlsys_milp_result r;
  mlsys_remat_schedule cur, lowest;
  mlsys_status st;
  char why[200];
  uint64_t fixed = mlsys_remat_fixed_total(g);
  memset(out, 0, sizeof *out);
  memset(&lowest, 0, sizeof lowest);
  if (mlsys__remat_trivially_infeasible(g, budget, why, sizeof why))
    return warm ? MLSYS_ERR_INFEASIBLE : mlsys__remat_infeasible(g, o, budget, why, fmin(10, mlsys__remat_time_left(o, t0)));
  /* The dominance rows tighten the MILP's branching but hardly the LP (ResNet-50 fused, 40% budget: bound 1.0242
     without, 1.0245 with) while tripling Clp's time (13 s against 38 s) and rounding no better: the LP is solved
     without them unless o->model asks for a variant. */
  lp_model = o->model ? o->model & ~(unsigned)MLSYS__CM_WITH_DOMINANCE : (unsigned)MLSYS_REMAT_MODEL_NO_DOMINANCE;
  mlsys_progress_begin(&prog, "checkmate lp", o->progress);
  if ((st = mlsys__cm_build(g, budget - fixed, 0, lp_model, o->dump_model != NULL, &cm)) != MLSYS_OK) return st;
  if (o->dump_model && (st = mlsys_milp_write(cm.m, o->dump_model)) != MLSYS_OK) { mlsys__cm_free(&cm); return st; }
  for (pass = 0; pass < 2; pass++) {
    double Bs;
    if (pass == 1 && !cm.unit_exact) {
      /* sizes were rounded up: the bound comes from the model rounded the other way, a true relaxation */
      mlsys__cm_free(&cm);
      if ((st = mlsys__cm_build(g, budget - fixed, 0, lp_model | MLSYS__CM_RELAXED, 0, &cm)) != MLSYS_OK) goto fail;
    }
    Bs = pass == 0 ? floor((1 - eps) * cm.Bs) : cm.Bs;
    mlsys__cm_set_budget(&cm, Bs);
    memset(&mo, 0, sizeof mo);
    mo.backend = mlsys__remat_lp_backend(o);
    mo.relax = 1;
    mo.time_limit = mlsys__remat_time_left(o, t0);
    mlsys_progress_update(&prog, "LP %d of 2 at %.0f%% of the budget: %d columns, %d rows%s on %s", pass + 1,
                          pass == 0 ? 100 * (1 - eps) : 100.0, mlsys_milp_num_vars(cm.m), mlsys_milp_num_rows(cm.m),
                          cx ? " (coarsened graph)" : "", mo.backend == MLSYS_SOLVER_CBC ? "clp" : "lp_solve");
    st = mlsys_milp_solve(cm.m, &mo, &r);
    if (st == MLSYS_ERR_INFEASIBLE) {
      mlsys_milp_result_free(&r);
      if (pass == 0) continue;   /* the reduced budget is too tight for the LP; the full one may not be */
      mlsys__cm_free(&cm);
      mlsys_remat_schedule_free(&lowest);
      if (warm) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "the LP relaxation is infeasible");
      return mlsys__remat_infeasible(g, o, budget, "the LP relaxation is infeasible",
                                     fmin(10, mlsys__remat_time_left(o, t0)));
    }
    if (st == MLSYS_ERR_TIMEOUT || st == MLSYS_ERR_CANCELED) {
      mlsys_milp_result_free(&r);
      if (pass == 0) continue;
      st = mlsys_set_error(st, "the LP relaxation (%d columns, %d rows) did not finish within the time limit on %s; "
                           "raise the time limit%s", mlsys_milp_num_vars(cm.m), mlsys_milp_num_rows(cm.m),
                           mlsys_milp_backend_name(mo.backend),
                           mo.backend == MLSYS_SOLVER_LPSOLVE && mlsys_milp_has_backend(MLSYS_SOLVER_CBC)
                               ? " or use the Clp backend (much faster on these LPs)" : "");
      if (have) st = MLSYS_OK;   /* the reduced-budget LP was rounded already: keep its best, without a bound */
      break;
    }
    if (st != MLSYS_OK) { mlsys_milp_result_free(&r); goto fail; }
    if (pass == 1 && !cx) bound = r.objective * cm.cscale;   /* a coarse LP bounds nothing about the real graph */
    for (i = 0; i < nth; i++) {
      if ((st = mlsys_remat_schedule_alloc(n, &cur)) != MLSYS_OK) { mlsys_milp_result_free(&r); goto fail; }
      for (t = 0; t < n; t++) {
        int k;
        for (k = 0; k < t; k++) {
          int s = cm.iS[(size_t)t * (size_t)n + (size_t)k];
          cur.S[(size_t)t * (size_t)n + (size_t)k] = s >= 0 && r.x[s] >= th[i] - 1e-9;
        }
      }
      mlsys_remat_trim(g, cur.S, cur.R);
      cur.budget = budget;
      if ((st = mlsys_remat_evaluate(g, &cur)) != MLSYS_OK) { mlsys_remat_schedule_free(&cur); mlsys_milp_result_free(&r); goto fail; }
      snprintf(cur.method, sizeof cur.method, "lp-round(theta=%g%s%s)", th[i], pass == 0 ? "" : ",full-budget LP",
               cx ? ",coarse" : "");
      snprintf(cur.source, sizeof cur.source, "%s", cur.method);
      if (cx) {   /* judge the candidate by its expansion to the real graph */
        mlsys_remat_schedule fine;
        cur.budget = cx->budget;
        st = mlsys_remat_expand(cx->fine, g, cx->group_of, &cur, &fine);
        mlsys_remat_schedule_free(&cur);
        if (st != MLSYS_OK) { mlsys_milp_result_free(&r); goto fail; }
        cur = fine;
      }
      if (cur.fits && (!have || cur.cost < out->cost)) {
        mlsys_remat_schedule_free(out);
        *out = cur;
        have = 1;
      } else if (!lowest.n || cur.peak < lowest.peak) {
        mlsys_remat_schedule_free(&lowest);
        lowest = cur;
      } else {
        mlsys_remat_schedule_free(&cur);
      }
    }
    mlsys_milp_result_free(&r);
  }
  mlsys_progress_end(&prog);
  mlsys__cm_free(&cm);
  if (!have && st == MLSYS_OK && !o->model && mlsys__remat_time_left(o, t0) > 0.05) {
    /* no rounding fits: the LP with the dominance rows has other vertices (the 15-node MLP at its tightest
       budget rounds to a fit only with them) */
    mlsys_remat_opts o2 = *o;
    mlsys_remat_schedule second;
    o2.model = MLSYS__CM_WITH_DOMINANCE;
    if (mlsys__remat_solve_lp_on(g, budget, &o2, t0, warm, cx, &second) == MLSYS_OK) {
      mlsys_remat_schedule_free(&lowest);
      *out = second;
      return MLSYS_OK;
    }
    mlsys_remat_schedule_free(&second);
    mlsys_clear_error();
  }
  if (st != MLSYS_OK && !have) { mlsys_remat_schedule_free(&lowest); return st; }
  if (have) {
    mlsys_remat_schedule_free(&lowest);
    out->bound = isnan(bound) ? NAN : fmin(bound, out->cost);
    out->gap = isnan(bound) || out->cost <= 0 ? NAN : (out->cost - out->bound) / out->cost;
    out->optimal = !isnan(bound) && out->cost <= bound * (1 + 1e-9);
    snprintf(out->solver_note, sizeof out->solver_note, "LP relaxation at %.0f%% and 100%% of the budget by %s",
             100 * (1 - eps), mlsys__remat_lp_backend(o) == MLSYS_SOLVER_CBC ? "clp" : "lp_solve");
    return MLSYS_OK;
  }
  *out = lowest;
  if (warm) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no LP rounding fits");
  {
    char mb[160];
    mlsys__remat_min_budget_text(g, o, fmin(10, mlsys__remat_time_left(o, t0)), mb, sizeof mb);
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no LP rounding fits the budget of %llu bytes; %s",
                           (unsigned long long)budget, mb);
  }
fail:
  mlsys_progress_end(&prog);
  mlsys__cm_free(&cm);
  mlsys_remat_schedule_free(&lowest);
  mlsys_remat_schedule_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_solve(const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *opts,
                                         mlsys_remat_schedule *out) {
  mlsys_remat_opts o;
  mlsys_status st;
  double t0 = mlsys_now();
  int i;
  if (opts) o = *opts; else memset(&o, 0, sizeof o);
  memset(out, 0, sizeof *out);
  out->bound = out->gap = NAN;
  if (!g || g->dag.n <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "remat: empty graph");
  if ((unsigned)o.method >= MLSYS_REMAT_METHOD_COUNT)
    return mlsys_set_error(MLSYS_ERR_ARG, "remat: unknown method %d", (int)o.method);
  if (o.time_limit < 0 || !(o.lp_eps >= 0 && o.lp_eps < 1) || o.mip_gap_rel < 0 || o.mip_gap_abs < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "remat: negative time limit or gap, or lp_eps outside [0, 1)");
  if (o.nthresholds < 0 || (o.nthresholds > 0 && !o.thresholds))
    return mlsys_set_error(MLSYS_ERR_ARG, "remat: %d thresholds but no list", o.nthresholds);
  for (i = 0; i < o.nthresholds; i++)
    if (!(o.thresholds[i] > 0 && o.thresholds[i] <= 1))
      return mlsys_set_error(MLSYS_ERR_ARG, "remat: rounding threshold %g outside (0, 1]", o.thresholds[i]);
  if (!mlsys_milp_has_backend(o.backend) &&
      (o.method == MLSYS_REMAT_MILP || o.method == MLSYS_REMAT_LP_ROUND))
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "remat: solver backend %s is not compiled in",
                           mlsys_milp_backend_name(o.backend));
  if (o.method == MLSYS_REMAT_MILP) st = mlsys__remat_solve_milp(g, budget, &o, t0, out);
  else if (o.method == MLSYS_REMAT_LP_ROUND) st = mlsys__remat_solve_lp(g, budget, &o, t0, 0, out);
  else {
    if ((st = mlsys__remat_baseline(g, o.method, budget, out)) == MLSYS_OK && !out->fits)
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "%s: its schedule needs %llu bytes (peak %llu of activations + "
                           "%llu fixed), over the budget of %llu", mlsys_remat_method_name(o.method),
                           (unsigned long long)out->peak_total, (unsigned long long)out->peak,
                           (unsigned long long)mlsys_remat_fixed_total(g), (unsigned long long)budget);
    if (out->n) {
      out->bound = NAN;
      out->gap = NAN;
      out->optimal = out->fits && out->cost <= out->baseline_cost;
    }
  }
  if (out->n) {
    if (!out->source[0]) snprintf(out->source, sizeof out->source, "%s", out->method);
    out->budget = budget;
    out->solve_seconds = mlsys_now() - t0;
    if (out->baseline_cost == 0) out->baseline_cost = mlsys__remat_total_cost(g);
  }
  return st;
}

/* ================================================================================================================
   7. Batch size
   ================================================================================================================ */
/* (section 7 implementation) */
MLSYS_DEF int mlsys_remat_fixed_scales_with_batch(const char *category) {
  return category && (!strcmp(category, "inputs") || !strcmp(category, "labels"));
}

/* ceil(v·batch/b0) without overflow; 0 when the result would exceed the per-value limit of 2^48 bytes. */
static int mlsys__remat_scale_bytes(uint64_t v, int batch, int b0, uint64_t *out) {
  uint64_t q = v / (uint64_t)b0, r = v % (uint64_t)b0, x;
  if (q > MLSYS__REMAT_MAX_MEM / (uint64_t)batch) return 0;
  x = q * (uint64_t)batch + (r * (uint64_t)batch + (uint64_t)b0 - 1) / (uint64_t)b0;   /* r·batch < 2^62 */
  if (x > MLSYS__REMAT_MAX_MEM) return 0;
  *out = x;
  return 1;
}

/* out->info = g->info at batch `batch`: dim 0 of both shapes (the batch) and the impls' costs scale like the nodes'
   cost, their workspace like bytes (rounded up), linear in the batch as cuDNN-style batched workspaces are, unless
   the impl says fixed_workspace (kernels that loop over samples in one per-sample buffer, as examples' im2col,
   or hold a weight-sized copy): then it stays. */
static mlsys_status mlsys__remat_scale_info(const mlsys_remat_graph *g, int batch, mlsys_remat_graph *out) {
  int v, k;
  char nb[48];
  mlsys_status st;
  if ((st = mlsys_remat_graph_info_alloc(out)) != MLSYS_OK) return st;
  memcpy(out->info, g->info, (size_t)g->dag.n * sizeof *g->info);
  for (v = 0; v < g->dag.n; v++) {
    mlsys_remat_node_info *in = &out->info[v];
    uint64_t x;
    if (in->ndim > 0) {
      if (!mlsys__remat_scale_bytes((uint64_t)in->shape[0], batch, g->batch, &x)) goto big;
      in->shape[0] = (int64_t)x;
    }
    if (in->in_ndim > 0) {
      if (!mlsys__remat_scale_bytes((uint64_t)in->in_shape[0], batch, g->batch, &x)) goto big;
      in->in_shape[0] = (int64_t)x;
    }
    for (k = 0; k < in->nimpl; k++) {
      in->impl[k].cost = in->impl[k].cost * (double)batch / (double)g->batch;
      if (!in->impl[k].fixed_workspace &&
          !mlsys__remat_scale_bytes(in->impl[k].workspace, batch, g->batch, &in->impl[k].workspace))
        goto big;
    }
    continue;
  big:
    return mlsys_set_error(MLSYS_ERR_ARG, "scale batch: node %d '%s': a shape or workspace would exceed 2^48 at "
                           "batch %d", v, mlsys_remat_node_name(g, v, nb, sizeof nb), batch);
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_graph_scale_batch(const mlsys_remat_graph *g, int batch, mlsys_remat_graph *out) {
  mlsys_remat_node *nodes;
  mlsys_status st = MLSYS_OK;
  int n, v, i;
  char nb[48];
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if (!g || g->dag.n <= 0 || !g->dag.cost || !g->dag.size) return mlsys_set_error(MLSYS_ERR_ARG, "scale batch: empty graph");
  if (batch <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "scale batch: batch %d must be at least 1", batch);
  if (g->batch <= 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "graph '%s' has no batch size (\"batch\" in the file), so it cannot be "
                           "scaled to another batch", g->name ? g->name : "?");
  n = g->dag.n;
  if (!(nodes = (mlsys_remat_node *)mlsys_calloc((size_t)n, sizeof *nodes))) return MLSYS_ERR_NOMEM;
  for (v = 0; v < n; v++) {
    mlsys_remat_node *x = &nodes[v];
    x->name = g->dag.name ? g->dag.name[v] : NULL;
    x->op = g->op ? g->op[v] : NULL;
    x->kind = (mlsys_remat_kind)g->kind[v];
    x->flags = g->flags[v];
    x->ndeps = g->dag.in_off[v + 1] - g->dag.in_off[v];
    x->deps = g->dag.in + g->dag.in_off[v];
    x->cost = g->dag.cost[v] * (double)batch / (double)g->batch;   /* exact for integer FLOP counts < 2^53 */
    if (!mlsys__remat_scale_bytes(g->dag.size[v], batch, g->batch, &x->mem)) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "scale batch: node %d '%s' would have more than 2^48 bytes at batch %d",
                           v, mlsys_remat_node_name(g, v, nb, sizeof nb), batch);
      break;
    }
  }
  if (st == MLSYS_OK) st = mlsys_remat_graph_create(n, nodes, out);
  mlsys_free(nodes);
  if (st != MLSYS_OK) return st;
  for (v = 0; v < n; v++) out->fwd_of[v] = g->fwd_of[v];
  out->batch = batch;
  if (g->info) st = mlsys__remat_scale_info(g, batch, out);
  if (st == MLSYS_OK && ((g->name && !(out->name = mlsys_strdup(g->name))) ||
                         (g->mem_unit && !(out->mem_unit = mlsys_strdup(g->mem_unit))) ||
                         (g->cost_unit && !(out->cost_unit = mlsys_strdup(g->cost_unit)))))
    st = MLSYS_ERR_NOMEM;
  for (i = 0; st == MLSYS_OK && i < g->nfixed; i++) {
    uint64_t b = g->fixed_bytes[i];
    if (mlsys_remat_fixed_scales_with_batch(g->fixed_name[i]) &&
        !mlsys__remat_scale_bytes(g->fixed_bytes[i], batch, g->batch, &b))
      st = mlsys_set_error(MLSYS_ERR_ARG, "scale batch: fixed memory '%s' would exceed 2^48 bytes at batch %d",
                           g->fixed_name[i], batch);
    else
      st = mlsys_remat_graph_set_fixed(out, g->fixed_name[i], b);
  }
  if (st != MLSYS_OK) mlsys_remat_graph_free(out);
  return st;
}

MLSYS_DEF double mlsys_remat_one_extra_forward_cap(const mlsys_remat_graph *g) {
  double total = 0, fwd = 0;
  int v;
  for (v = 0; v < g->dag.n; v++) {
    total += g->dag.cost[v];
    if (g->kind[v] == MLSYS_REMAT_F) fwd += g->dag.cost[v];
  }
  return total > 0 ? (total + fwd) / total : 1.0;
}

/* Fixed memory plus the single-operator bound of the graph scaled to batch b, without building it: no schedule at
   batch b fits below this (UINT64_MAX when a scaled value is over the limits). Nondecreasing in b. */
static uint64_t mlsys__remat_batch_floor(const mlsys_remat_graph *g, int b) {
  const mlsys_dag *d = &g->dag;
  uint64_t fixed = 0, best = 0, x;
  int v, j, i;
  for (i = 0; i < g->nfixed; i++) {
    x = g->fixed_bytes[i];
    if (mlsys_remat_fixed_scales_with_batch(g->fixed_name[i]) && !mlsys__remat_scale_bytes(x, b, g->batch, &x))
      return UINT64_MAX;
    fixed += x;
  }
  for (v = 0; v < d->n; v++) {
    uint64_t s;
    if (!mlsys__remat_scale_bytes(d->size[v], b, g->batch, &s)) return UINT64_MAX;
    for (j = d->in_off[v]; j < d->in_off[v + 1]; j++) {
      if (!mlsys__remat_scale_bytes(d->size[d->in[j]], b, g->batch, &x)) return UINT64_MAX;
      s += x;
    }
    if (s > best) best = s;
  }
  return fixed + best;
}

typedef struct {
  const mlsys_remat_graph *g;
  uint64_t memory;
  double cap;                 /* multiple of the checkpoint-all cost */
  mlsys_remat_opts o;         /* o.method = the method searched */
  mlsys_remat_schedule best;  /* the schedule at best_batch, the largest batch that worked */
  int best_batch, probes;
  mlsys_progress *prog;
} mlsys__remat_mb;

/* Does the method work at batch b? 1 yes, 0 no, -1 on an error (*err). */
static int mlsys__remat_mb_probe(mlsys__remat_mb *c, int b, mlsys_status *err) {
  mlsys_remat_graph gs;
  mlsys_remat_schedule s;
  mlsys_status st;
  int ok;
  c->probes++;
  mlsys_progress_update(c->prog, "%s: batch %d (probe %d, best so far %d)", mlsys_remat_method_name(c->o.method), b,
                        c->probes, c->best_batch);
  if ((st = mlsys_remat_graph_scale_batch(c->g, b, &gs)) != MLSYS_OK) { *err = st; return -1; }
  st = mlsys_remat_solve(&gs, c->memory, &c->o, &s);
  mlsys_remat_graph_free(&gs);
  if (st == MLSYS_OK)   /* the cap, as a ratio, scales with the batch (eq. 3.10) */
    ok = s.cost <= s.baseline_cost || s.cost <= c->cap * s.baseline_cost * (1 + 1e-9);
  else if (st == MLSYS_ERR_INFEASIBLE || st == MLSYS_ERR_TIMEOUT)
    ok = 0;   /* a time limit without a schedule counts as failure: MILP answers are lower bounds */
  else {
    mlsys_remat_schedule_free(&s);
    *err = st;
    return -1;
  }
  if (ok && b > c->best_batch) {
    mlsys_remat_schedule_free(&c->best);
    c->best = s;
    c->best_batch = b;
  } else {
    mlsys_remat_schedule_free(&s);
  }
  return ok;
}

/* Exponential search from start (up when it works, down when it does not), then bisection, over 1..ub (every
   batch above ub is excluded by the single-operator bound). *res = the largest batch that worked (0: none); on
   return batch *res + 1 failed or is above ub. */
static mlsys_status mlsys__remat_mb_search(mlsys__remat_mb *c, int start, int ub, int *res) {
  long lo = 0, hi = (long)ub + 1, step;
  int r;
  mlsys_status err = MLSYS_OK;
  if (start < 1) start = 1;
  if (start > ub) start = ub;
  *res = 0;
  if ((r = mlsys__remat_mb_probe(c, start, &err)) < 0) return err;
  if (r) {
    lo = start;
    for (step = lo / 16 > 1 ? lo / 16 : 1; lo + step < hi; step *= 2) {
      if ((r = mlsys__remat_mb_probe(c, (int)(lo + step), &err)) < 0) return err;
      if (!r) { hi = lo + step; break; }
      lo += step;
    }
  } else {
    hi = start;
    for (step = 1; hi > 1; step *= 2) {
      long x = hi - step > 1 ? hi - step : 1;
      if ((r = mlsys__remat_mb_probe(c, (int)x, &err)) < 0) return err;
      if (r) { lo = x; break; }
      hi = x;
    }
  }
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    if ((r = mlsys__remat_mb_probe(c, (int)mid, &err)) < 0) return err;
    if (r) lo = mid; else hi = mid;
  }
  *res = (int)lo;
  return MLSYS_OK;
}

/* The linear per-sample form of the thesis's max-batch MILP (eq. 3.10; docs/remat.md, the maximum batch): with bytes
   and costs linear in the batch, minimise the per-sample peak Z of the batch-1 graph subject to the cost cap (at
   most cap x the cost of computing every node once); then B* = floor((memory - fixed that does not scale) / (Z +
   scaling fixed bytes per sample)). One MILP instead of a search over batches; B* is the maximum batch whenever the
   MILP is proven, up to byte rounding (the batch-1 graph rounds bytes up, so the schedule fits at B*, which is
   checked). */
#define MLSYS__REMAT_MAXBATCH_MILP_NODES 60
static mlsys_status mlsys__remat_max_batch_linear(const mlsys_remat_graph *g, uint64_t memory, double cost_cap,
                                                  const mlsys_remat_opts *o, int ub, int *batch,
                                                  mlsys_remat_schedule *out, int *proven) {
  mlsys_remat_graph g1, gb;
  mlsys_remat_opts ho;
  mlsys_remat_schedule h, best;
  mlsys__cm cm;
  mlsys_milp_opts mo;
  mlsys_milp_result r;
  mlsys_status st;
  double base = 0, *x = NULL, *vals = NULL, t0 = mlsys_now();
  int *cols = NULL, nz = 0, t, i, n, v, bb = 0, from_inc;
  uint64_t fs1 = 0, fns = 0, per;
  long B;
  *batch = 0;
  *proven = 0;
  memset(out, 0, sizeof *out);
  memset(&best, 0, sizeof best);
  if ((st = mlsys_remat_graph_scale_batch(g, 1, &g1)) != MLSYS_OK) return st;
  n = g1.dag.n;
  for (v = 0; v < n; v++) base += g1.dag.cost[v];
  for (i = 0; i < g1.nfixed; i++) {
    if (mlsys_remat_fixed_scales_with_batch(g1.fixed_name[i])) fs1 += g1.fixed_bytes[i];
    else fns += g1.fixed_bytes[i];
  }
  /* incumbent: the schedule of the baseline that reaches the largest batch (their searches take milliseconds);
     checkpoint-all always meets a cap of at least 1 */
  memset(&ho, 0, sizeof ho);
  ho.method = MLSYS_REMAT_CHECKPOINT_ALL;
  if ((st = mlsys_remat_solve(&g1, UINT64_MAX, &ho, &h)) != MLSYS_OK) { mlsys_remat_graph_free(&g1); return st; }
  {
    static const mlsys_remat_method cand[] = {MLSYS_REMAT_LIN_GREEDY, MLSYS_REMAT_AP_GREEDY, MLSYS_REMAT_CHEN_GREEDY,
                                              MLSYS_REMAT_GRIEWANK};
    int k;
    for (k = 0; k < (int)(sizeof cand / sizeof cand[0]); k++) {
      mlsys_remat_schedule c;
      int b = 0;
      if (mlsys_remat_max_batch(g, memory, cand[k], cost_cap, &ho, &b, &c) == MLSYS_OK && b > bb) {
        bb = b;
        mlsys_remat_schedule_free(&h);
        h = c;
      } else if (b) {
        mlsys_remat_schedule_free(&c);
      }
    }
    mlsys_clear_error();
    if (bb >= ub) {
      /* a baseline reaches the single-operator bound, above which nothing fits: it is the maximum, proven */
      *batch = bb;
      *out = h;
      out->optimal = 1;
      *proven = 1;
      snprintf(out->solver_note, sizeof out->solver_note, "%s reaches the single-operator bound (batch %d): "
               "proven maximal without a MILP", h.method, ub);
      mlsys__remat_relabel(out, "checkmate-milp");
      mlsys_remat_graph_free(&g1);
      return MLSYS_OK;
    }
  }
  if (n > MLSYS__REMAT_MAXBATCH_MILP_NODES && !(o && o->time_limit > 600)) {
    /* CBC's root LP of the min-peak model with the cap row runs Clp's primal simplex, which does not look at the
       time limit: U-Net (n = 87) spent 200 s there under a 60 s limit. Above this size, the best baseline's batch
       is the answer unless a long limit is given */
    mlsys_remat_graph_free(&g1);
    if (bb <= 0) {
      mlsys_remat_schedule_free(&h);
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "max batch: no baseline fits even at batch 1");
    }
    *batch = bb;
    *out = h;
    snprintf(out->solver_note, sizeof out->solver_note, "no MILP run (over %d nodes; a time limit above 600 s "
             "allows it): the best baseline's batch, %.60s", MLSYS__REMAT_MAXBATCH_MILP_NODES, out->method);
    mlsys__remat_relabel(out, "checkmate-milp");
    return MLSYS_OK;
  }
  if ((st = mlsys__cm_build(&g1, 0, 1, o ? o->model : 0, 0, &cm)) != MLSYS_OK) {
    mlsys_remat_schedule_free(&h);
    mlsys_remat_graph_free(&g1);
    return st;
  }
  cols = (int *)mlsys_alloc((size_t)n * (size_t)n + 1, sizeof(int));
  vals = (double *)mlsys_alloc((size_t)n * (size_t)n + 1, sizeof(double));
  x = (double *)mlsys_alloc((size_t)mlsys_milp_num_vars(cm.m) + 1, sizeof(double));
  if (!cols || !vals || !x) { st = MLSYS_ERR_NOMEM; goto done; }
  for (t = 0; t < n; t++)
    for (i = 0; i < t; i++) {
      int c = cm.iR[(size_t)t * (size_t)cm.n + (size_t)i];
      if (c >= 0 && g1.dag.cost[i] > 0) { cols[nz] = c; vals[nz++] = g1.dag.cost[i] / cm.cscale; }
    }
  /* eq. 3.10: recomputation at most (cap - 1) x the cost of computing every node once */
  if ((st = mlsys_milp_add_row(cm.m, nz, cols, vals, MLSYS_ROW_LE, (cost_cap - 1) * base / cm.cscale,
                               "cost_cap")) != MLSYS_OK)
    goto done;
  memset(&mo, 0, sizeof mo);
  /* CBC unless asked otherwise: with the cost-cap row lp_solve made no progress on the 15-node MLP in 60 s, CBC
     proved it in 9 s */
  mo.backend = o && o->backend ? o->backend : mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? MLSYS_SOLVER_CBC
                                                                                       : MLSYS_SOLVER_LPSOLVE;
  mo.time_limit = o && o->time_limit > 0 ? o->time_limit : 3600;
  mo.lpsolve_bb_rule = 8192;
  mo.hard_time_limit = 1;
  if (mlsys__cm_point(&cm, h.R, h.S, x)) mo.incumbent = x;
  if ((st = mlsys_milp_solve(cm.m, &mo, &r)) != MLSYS_OK) goto done;
  if ((st = mlsys_remat_schedule_alloc(n, &best)) != MLSYS_OK) { mlsys_milp_result_free(&r); goto done; }
  mlsys__cm_extract(&cm, r.x, best.R, best.S);
  mlsys_remat_trim(&g1, best.S, best.R);
  best.budget = UINT64_MAX;
  if ((st = mlsys_remat_evaluate(&g1, &best)) != MLSYS_OK) { mlsys_milp_result_free(&r); goto done; }
  *proven = r.status == MLSYS_MILP_OPTIMAL && cm.unit_exact;
  from_inc = r.from_incumbent;
  mlsys_milp_result_free(&r);
  per = best.peak + fs1;
  B = memory > fns && per > 0 ? (long)((memory - fns) / per) : 0;
  if (B > MLSYS_REMAT_MAX_BATCH) B = MLSYS_REMAT_MAX_BATCH;
  /* the same R and S at batch B: it fits, since the batch-1 bytes were rounded up; checked, not assumed */
  for (; B >= 1; B--) {
    if ((st = mlsys_remat_graph_scale_batch(g, (int)B, &gb)) != MLSYS_OK) goto done;
    best.budget = memory;
    st = mlsys_remat_evaluate(&gb, &best);
    mlsys_remat_graph_free(&gb);
    if (st != MLSYS_OK) goto done;
    if (best.fits && best.cost <= cost_cap * best.baseline_cost * (1 + 1e-12)) break;
  }
  if (B < 1) {
    st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "max batch: no schedule within %llu bytes costing at most %.4gx "
                         "the checkpoint-all cost, even at batch 1", (unsigned long long)memory, cost_cap);
    goto done;
  }
  *batch = (int)B;
  *out = best;
  memset(&best, 0, sizeof best);
  out->optimal = *proven;
  out->solve_seconds = mlsys_now() - t0;
  mlsys__remat_name(out, "checkmate-milp");
  if (from_inc) snprintf(out->source, sizeof out->source, "%s", h.source);   /* the MILP found nothing better */
  out->milp_ran = 1;
  snprintf(out->solver_note, sizeof out->solver_note, "per-sample peak minimised under the cost cap (thesis "
           "eq. 3.10)%s", *proven ? ", proven" : ", not proven within the time limit");
done:
  mlsys_free(cols);
  mlsys_free(vals);
  mlsys_free(x);
  mlsys__cm_free(&cm);
  mlsys_remat_schedule_free(&h);
  mlsys_remat_schedule_free(&best);
  mlsys_remat_graph_free(&g1);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_max_batch(const mlsys_remat_graph *g, uint64_t memory, mlsys_remat_method m,
                                             double cost_cap, const mlsys_remat_opts *o, int *batch,
                                             mlsys_remat_schedule *out) {
  mlsys__remat_mb c;
  mlsys_progress prog;
  mlsys_status st = MLSYS_OK;
  int ub, start, res = 0;
  long b = 1, lo, hi;
  uint64_t f1;
  if (out) { memset(out, 0, sizeof *out); out->bound = out->gap = NAN; }
  if (batch) *batch = 0;
  if (!g || !batch || !out) return mlsys_set_error(MLSYS_ERR_ARG, "max batch: graph, batch and out are required");
  if (g->dag.n <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "max batch: empty graph");
  if (g->batch <= 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "max batch: graph '%s' has no batch size (\"batch\" in the file)",
                           g->name ? g->name : "?");
  if ((unsigned)m >= MLSYS_REMAT_METHOD_COUNT) return mlsys_set_error(MLSYS_ERR_ARG, "max batch: unknown method %d", (int)m);
  if (cost_cap == 0) cost_cap = mlsys_remat_one_extra_forward_cap(g);
  if (!(cost_cap >= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "max batch: cost cap %g is below 1 (no schedule costs less than "
                           "computing every node once)", cost_cap);
  /* every batch above ub is excluded by the single-operator bound */
  if ((f1 = mlsys__remat_batch_floor(g, 1)) > memory)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "max batch: %llu bytes are too few even at batch 1: fixed memory "
                           "plus the largest operator with its inputs need %llu", (unsigned long long)memory,
                           (unsigned long long)f1);
  for (lo = 1; lo < MLSYS_REMAT_MAX_BATCH; lo = b) {
    b = 2 * lo < MLSYS_REMAT_MAX_BATCH ? 2 * lo : MLSYS_REMAT_MAX_BATCH;
    if (mlsys__remat_batch_floor(g, (int)b) > memory) break;
  }
  if (lo == MLSYS_REMAT_MAX_BATCH) {
    ub = MLSYS_REMAT_MAX_BATCH;
  } else {
    for (hi = b; hi - lo > 1;) {
      long mid = lo + (hi - lo) / 2;
      if (mlsys__remat_batch_floor(g, (int)mid) <= memory) lo = mid; else hi = mid;
    }
    ub = (int)lo;
  }
  memset(&c, 0, sizeof c);
  c.g = g;
  c.memory = memory;
  c.cap = cost_cap;
  if (o) c.o = *o;
  c.o.progress = 0;
  c.prog = &prog;
  mlsys_progress_begin(&prog, "max batch", o && o->progress);
  start = g->batch;
  if (m == MLSYS_REMAT_MILP && !(o && o->raw)) {
    /* one MILP (thesis eq. 3.10 in per-sample form) instead of a MILP per probe; the search below if it fails */
    int proven = 0;
    mlsys_progress_update(&prog, "milp: per-sample peak under the cost cap (one MILP)");
    st = mlsys__remat_max_batch_linear(g, memory, cost_cap, o, ub, &res, out, &proven);
    if (st == MLSYS_OK && res > 0) {
      mlsys_progress_end(&prog);
      *batch = res;
      mlsys_clear_error();
      return MLSYS_OK;
    }
    if (st == MLSYS_ERR_NOMEM) { mlsys_progress_end(&prog); return st; }
    st = MLSYS_OK;
    res = 0;
  }
  if (m == MLSYS_REMAT_MILP || m == MLSYS_REMAT_LP_ROUND) {
    /* start where checkpoint-all stops: cheap to find, and the MILP always does at least as well */
    c.o.method = MLSYS_REMAT_CHECKPOINT_ALL;
    st = mlsys__remat_mb_search(&c, start, ub, &res);
    mlsys_remat_schedule_free(&c.best);
    c.best_batch = 0;
    if (st == MLSYS_OK && res > 0) start = res;
  }
  if (st == MLSYS_OK) {
    c.o.method = m;
    st = mlsys__remat_mb_search(&c, start, ub, &res);
  }
  mlsys_progress_end(&prog);
  if (st != MLSYS_OK) {
    mlsys_remat_schedule_free(&c.best);
    return st;
  }
  if (res == 0) {
    mlsys_remat_schedule_free(&c.best);
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "max batch: %s finds no schedule within %llu bytes costing at most "
                           "%.4gx the checkpoint-all cost, even at batch 1", mlsys_remat_method_name(m),
                           (unsigned long long)memory, cost_cap);
  }
  MLSYS_ASSERT(c.best_batch == res && c.best.n == g->dag.n);
  *batch = res;
  *out = c.best;
  mlsys_clear_error();
  return MLSYS_OK;
}

/* ================================================================================================================
   8. Executing plans
   ================================================================================================================ */
/* (section 8 implementation) */
static mlsys_status mlsys__remat_host_alloc(void *ud, uint64_t bytes, void **ptr) {
  (void)ud;
  *ptr = bytes <= (uint64_t)SIZE_MAX ? MLSYS_MALLOC((size_t)bytes) : NULL;
  if (!*ptr) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory allocating %llu bytes", (unsigned long long)bytes);
  return MLSYS_OK;
}
static void mlsys__remat_host_release(void *ud, void *ptr, uint64_t bytes) {
  (void)ud;
  (void)bytes;
  MLSYS_FREE(ptr);
}

/* The plan checks that mlsys_remat_plan_validate leaves to the executor: side effects happen exactly once. */
static mlsys_status mlsys__remat_check_commits(const mlsys_remat_graph *g, const mlsys_remat_plan *p, int *maxin) {
  int s, v, *first = (int *)mlsys_alloc((size_t)g->dag.n + 1, sizeof(int));
  char a[48];
  mlsys_status st = MLSYS_OK;
  if (!first) return MLSYS_ERR_NOMEM;
  *maxin = 0;
  for (v = 0; v < g->dag.n; v++) first[v] = -1;
  for (s = 0; s < p->nops && st == MLSYS_OK; s++) {
    const mlsys_remat_op *o = &p->ops[s];
    if (o->op != MLSYS_REMAT_OP_COMPUTE) continue;
    if (o->nin > *maxin) *maxin = o->nin;
    if (!o->commit) continue;
    if (first[o->node] >= 0)
      st = mlsys_set_error(MLSYS_ERR_ARG, "plan step %d: commits '%s' again (first at step %d): its side effects "
                           "would happen twice", s, mlsys_remat_node_name(g, o->node, a, sizeof a), first[o->node]);
    first[o->node] = s;
  }
  for (v = 0; v < g->dag.n && st == MLSYS_OK; v++)
    if (first[v] < 0)
      st = mlsys_set_error(MLSYS_ERR_ARG, "plan never commits '%s' (no COMPUTE of it has commit = 1): its side "
                           "effects would never happen", mlsys_remat_node_name(g, v, a, sizeof a));
  mlsys_free(first);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_execute(const mlsys_remat_graph *g, const mlsys_remat_plan *p,
                                           mlsys_remat_kernel_fn kernel, void *ud,
                                           const mlsys_remat_exec_opts *opts, mlsys_remat_exec_stats *stats) {
  static const mlsys_remat_allocator host = {mlsys__remat_host_alloc, mlsys__remat_host_release, NULL};
  const mlsys_remat_allocator *A = opts && opts->allocator ? opts->allocator : &host;
  const uint64_t limit = opts ? opts->limit : 0;
  const mlsys_dag *d;
  mlsys_remat_exec_stats local;
  void **buf = NULL, **in = NULL;
  uint64_t *inb = NULL;
  int s, j, r, maxin = 0;
  char a[48];
  double t0;
  mlsys_status st;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->failed_step = -1;
  if (!g || !p || !kernel || !A->alloc || !A->release)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_execute: graph, plan, kernel and allocator functions are "
                           "required");
  if (p->nops < 0 || p->nregs < 0 || (p->nops > 0 && (!p->ops || !p->reg_node)))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_execute: malformed plan (%d steps, %d registers)", p->nops,
                           p->nregs);
  d = &g->dag;
  /* replay first, so that a bad plan runs no kernel at all (no half-written results, nothing to undo) */
  if ((st = mlsys_remat_plan_validate(g, p, &stats->plan_peak)) != MLSYS_OK ||
      (st = mlsys__remat_check_commits(g, p, &maxin)) != MLSYS_OK) {
    mlsys_prefix_error("mlsys_remat_execute: invalid plan");
    return st;
  }
  buf = (void **)mlsys_calloc((size_t)p->nregs + 1, sizeof(void *));
  in = (void **)mlsys_calloc((size_t)maxin + 1, sizeof(void *));
  inb = (uint64_t *)mlsys_calloc((size_t)maxin + 1, sizeof(uint64_t));
  if (!buf || !in || !inb) { mlsys_free(buf); mlsys_free(in); mlsys_free(inb); return MLSYS_ERR_NOMEM; }
  t0 = mlsys_now();
  for (s = 0; s < p->nops; s++) {
    const mlsys_remat_op *o = &p->ops[s];
    const int k = o->node;
    const uint64_t bytes = d->size[k];
    if (o->op == MLSYS_REMAT_OP_FREE) {
      if (buf[o->reg]) { A->release(A->ud, buf[o->reg], bytes); stats->frees++; }
      buf[o->reg] = NULL;
      stats->live_bytes -= bytes;
      continue;
    }
    /* COMPUTE: a fresh buffer of exactly the node's graph size, counted before the inputs can be freed */
    if (limit && (bytes > limit || stats->live_bytes > limit - bytes)) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "mlsys_remat_execute: step %d (stage %d): '%s' needs %llu bytes beside "
                           "%llu live, over the limit of %llu", s, o->stage, mlsys_remat_node_name(g, k, a, sizeof a),
                           (unsigned long long)bytes, (unsigned long long)stats->live_bytes,
                           (unsigned long long)limit);
      break;
    }
    if (bytes) {
      void *ptr = NULL;
      if ((st = A->alloc(A->ud, bytes, &ptr)) == MLSYS_OK && !ptr)
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "the allocator returned NULL");
      if (st != MLSYS_OK) {
        mlsys_prefix_error("mlsys_remat_execute: step %d (stage %d): allocating %llu bytes for '%s'", s, o->stage,
                           (unsigned long long)bytes, mlsys_remat_node_name(g, k, a, sizeof a));
        break;
      }
      buf[o->reg] = ptr;
      stats->allocations++;
    }
    stats->live_bytes += bytes;
    if (stats->live_bytes > stats->peak_bytes) stats->peak_bytes = stats->live_bytes;
    for (j = 0; j < o->nin; j++) {
      r = p->in_regs[o->in_off + j];
      in[j] = buf[r];
      inb[j] = d->size[p->reg_node[r]];
    }
    stats->computes++;
    stats->recomputes += !o->commit;
    stats->cost += d->cost[k];
    mlsys_clear_error();
    if ((st = kernel(ud, k, in, inb, o->nin, buf[o->reg], bytes, o->commit)) != MLSYS_OK) {
      if (mlsys_last_status() == MLSYS_OK) mlsys_set_error(st, "returned '%s'", mlsys_status_str(st));
      mlsys_prefix_error("mlsys_remat_execute: step %d (stage %d): the kernel of '%s'%s", s, o->stage,
                         mlsys_remat_node_name(g, k, a, sizeof a), o->commit ? "" : " (recomputation)");
      break;
    }
  }
  stats->seconds = mlsys_now() - t0;
  if (st != MLSYS_OK) stats->failed_step = s;
  /* nothing outlives the call: whatever a failed run (or a plan that keeps values) left live is released */
  for (r = 0; r < p->nregs; r++)
    if (buf[r]) { A->release(A->ud, buf[r], d->size[p->reg_node[r]]); stats->frees++; }
  mlsys_free(buf);
  mlsys_free(in);
  mlsys_free(inb);
  return st;
}

/* ================================================================================================================
   9. DTR trace import
   ================================================================================================================ */
/* (section 9 implementation) */
/* Reading a DTR trace is running a small interpreter over it: the state is DTR's own (names bound to tensors,
   tensors living on storages with reference counts), and every op that produces a tensor after the START marker
   also emits a node. The reference counts are only needed for the replay in mlsys_remat_dtr_info, which is how
   the tests hold the import against the program's own memory use. */
#define MLSYS__REMAT_DTR_MAX_LINE (1u << 20)       /* longest line accepted; DTR's lines are under 1 KiB */
#define MLSYS__REMAT_DTR_MAX_NAME 1024             /* longest tensor or op name */
#define MLSYS__REMAT_DTR_MAX_LIST 65536            /* ARGS / RESULT / MUTATE entries on one line */
#define MLSYS__REMAT_DTR_MAX_TOTAL (1ull << 62)    /* Σ bytes ever allocated in the replay: sums never wrap */

typedef struct { char *name; int tensor, line, released; } mlsys__remat_dtr_bind;  /* released: line, or 0 */
typedef struct { int storage, node; } mlsys__remat_dtr_tensor;                      /* node -1: a constant */
typedef struct { uint64_t bytes; long refs; int is_const; } mlsys__remat_dtr_storage;
typedef struct {
  char *name, *op;
  int kind;
  unsigned flags;
  double cost;
  uint64_t mem;
  long dep_off;
  int ndeps;
} mlsys__remat_dtr_node;

typedef struct {
  const char *src;
  int line, whole;
  mlsys__remat_dtr_bind *b; int nb, cb;
  int *tab; size_t tcap;                          /* open addressing: name hash → binding, -1 empty */
  mlsys__remat_dtr_tensor *t; int nt, ct;
  mlsys__remat_dtr_storage *s; int ns, cs;
  mlsys__remat_dtr_node *nd; int nn, cn;
  int *dep; long ndep, cdep;
  int *mark, stamp;                               /* [cn]: dedups one node's deps */
  unsigned char *used;                            /* [cn]: some later node reads it */
  /* a CONSTANT or CALL waiting for its MEMORY (and ALIAS) lines: DTR writes them right after it */
  int pend, pend_line, pend_pos, npres, npargs;   /* pend: 0 none, 1 CONSTANT, 2 CALL */
  char *pend_op;
  double pend_time;
  int *pend_res;                                  /* bindings of the results (tensor -1 until complete) */
  uint64_t *pend_mem;
  int *pend_alias, *pend_args;                    /* pend_args: argument tensors */
  int cap_res, cap_mem, cap_alias, cap_args, cap_mark;
  int *tmp; int ctmp;                             /* scratch list (MUTATE) */
  /* where the reading is */
  int pre, bwd, names_rule, loss_pending, loss;
  uint64_t live, live_act, total_alloc, fixed_const, fixed_pre;
  mlsys_remat_dtr_info info;
} mlsys__remat_dtr;

static mlsys_status mlsys__remat_dtr_err(const mlsys__remat_dtr *D, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static mlsys_status mlsys__remat_dtr_err(const mlsys__remat_dtr *D, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s", D->src, D->line, msg);
}

/* Grow *p (elements of size sz) to hold need elements. */
static int mlsys__remat_dtr_grow(void **p, int *cap, long need, size_t sz) {
  long c = *cap ? *cap : 16;
  void *q;
  if (need <= *cap) return 1;
  if (need > INT_MAX / 2) { mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR trace: more than %d entries", INT_MAX / 2); return 0; }
  while (c < need) c *= 2;
  if (!(q = mlsys_realloc_array(*p, (size_t)c, sz))) return 0;
  *p = q;
  *cap = (int)c;
  return 1;
}

static size_t mlsys__remat_dtr_hash(const char *s) {
  size_t h = (size_t)1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * (size_t)1099511628211ull;
  return h;
}

static int mlsys__remat_dtr_find(const mlsys__remat_dtr *D, const char *name) {
  size_t k;
  if (!D->tcap) return -1;
  for (k = mlsys__remat_dtr_hash(name) & (D->tcap - 1); D->tab[k] >= 0; k = (k + 1) & (D->tcap - 1))
    if (strcmp(D->b[D->tab[k]].name, name) == 0) return D->tab[k];
  return -1;
}

/* Bind a new name (SSA: DTR never rebinds a defined name, so a second definition means a broken trace). */
static mlsys_status mlsys__remat_dtr_bind_new(mlsys__remat_dtr *D, const char *name, int tensor, int *out) {
  int i;
  size_t k;
  if ((i = mlsys__remat_dtr_find(D, name)) >= 0)
    return mlsys__remat_dtr_err(D, "'%.100s' is defined a second time (first on line %d)", name, D->b[i].line);
  if ((size_t)D->nb + 1 > D->tcap / 2) {   /* keep the table at most half full */
    size_t nc = D->tcap ? D->tcap * 2 : 1024, j;
    int *nt = (int *)mlsys_alloc(nc, sizeof(int));
    if (!nt) return MLSYS_ERR_NOMEM;
    for (j = 0; j < nc; j++) nt[j] = -1;
    for (i = 0; i < D->nb; i++) {
      for (k = mlsys__remat_dtr_hash(D->b[i].name) & (nc - 1); nt[k] >= 0; k = (k + 1) & (nc - 1)) {}
      nt[k] = i;
    }
    mlsys_free(D->tab);
    D->tab = nt;
    D->tcap = nc;
  }
  if (!mlsys__remat_dtr_grow((void **)&D->b, &D->cb, (long)D->nb + 1, sizeof *D->b)) return mlsys_last_status();
  if (!(D->b[D->nb].name = mlsys_strdup(name))) return MLSYS_ERR_NOMEM;
  D->b[D->nb].tensor = tensor;
  D->b[D->nb].line = D->line;
  D->b[D->nb].released = 0;
  for (k = mlsys__remat_dtr_hash(name) & (D->tcap - 1); D->tab[k] >= 0; k = (k + 1) & (D->tcap - 1)) {}
  D->tab[k] = D->nb;
  *out = D->nb++;
  return MLSYS_OK;
}

/* ---- fields ---- */
static mlsys_status mlsys__remat_dtr_field(const mlsys__remat_dtr *D, const mlsys_json *o, const char *instr,
                                           const char *key, mlsys_json_type type, const mlsys_json **out) {
  const mlsys_json *v = mlsys_json_get(o, key);
  if (!v) return mlsys__remat_dtr_err(D, "%s without '%s'", instr, key);
  if (v->type != type)
    return mlsys__remat_dtr_err(D, "%s: '%s' must be %s %s, got %s", instr, key,
                                type == MLSYS_JSON_ARRAY ? "an" : "a", mlsys_json_type_name(type),
                                mlsys_json_type_name(v->type));
  if (type == MLSYS_JSON_ARRAY && v->count > MLSYS__REMAT_DTR_MAX_LIST)
    return mlsys__remat_dtr_err(D, "%s: '%s' has %d entries; the limit is %d", instr, key, v->count,
                                MLSYS__REMAT_DTR_MAX_LIST);
  *out = v;
  return MLSYS_OK;
}

/* A tensor or op name: a string of 1..1024 bytes without NUL. */
static mlsys_status mlsys__remat_dtr_name_ok(const mlsys__remat_dtr *D, const mlsys_json *v, const char *instr,
                                             const char *key) {
  if (v->type != MLSYS_JSON_STRING)
    return mlsys__remat_dtr_err(D, "%s: '%s' must hold strings, got %s", instr, key, mlsys_json_type_name(v->type));
  if (v->len == 0 || v->len > MLSYS__REMAT_DTR_MAX_NAME || strlen(v->str) != v->len)
    return mlsys__remat_dtr_err(D, "%s: a name in '%s' must be 1-%d bytes without NUL", instr, key,
                                MLSYS__REMAT_DTR_MAX_NAME);
  return MLSYS_OK;
}
static mlsys_status mlsys__remat_dtr_name(const mlsys__remat_dtr *D, const mlsys_json *o, const char *instr,
                                          const char *key, const char **out) {
  const mlsys_json *v = NULL;
  mlsys_status st;
  if ((st = mlsys__remat_dtr_field(D, o, instr, key, MLSYS_JSON_STRING, &v)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_name_ok(D, v, instr, key)) != MLSYS_OK) return st;
  *out = v->str;
  return MLSYS_OK;
}

/* DTR writes numbers as strings ("MEMORY": "1728", "ALIAS": "-1"); plain JSON numbers are accepted too. */
static mlsys_status mlsys__remat_dtr_int(const mlsys__remat_dtr *D, const mlsys_json *o, const char *instr,
                                         const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const mlsys_json *v = mlsys_json_get(o, key);
  int64_t x = 0;
  int ok = 0;
  if (!v) return mlsys__remat_dtr_err(D, "%s without '%s'", instr, key);
  if (v->type == MLSYS_JSON_NUMBER && v->is_int) { x = v->i64; ok = 1; }
  else if (v->type == MLSYS_JSON_STRING) {
    const char *p = v->str;
    int neg = *p == '-', nd = 0;
    if (neg) p++;
    for (ok = 1; *p && ok; p++, nd++)
      if (*p < '0' || *p > '9' || nd >= 18) ok = 0;   /* 18 digits: no overflow, far beyond any limit */
      else x = x * 10 + (*p - '0');
    if ((size_t)(p - v->str) != v->len || nd == 0) ok = 0;
    if (neg) x = -x;
  }
  if (!ok)
    return mlsys__remat_dtr_err(D, "%s: '%s' must be an integer (a number or a string of digits)", instr, key);
  if (x < lo || x > hi)
    return mlsys__remat_dtr_err(D, "%s: '%s' is %lld, outside [%lld, %lld]", instr, key, (long long)x,
                                (long long)lo, (long long)hi);
  *out = x;
  return MLSYS_OK;
}

static mlsys_status mlsys__remat_dtr_time(const mlsys__remat_dtr *D, const mlsys_json *o, const char *instr,
                                          double *out) {
  const mlsys_json *v = mlsys_json_get(o, "TIME");
  double x = -1;
  if (!v) return mlsys__remat_dtr_err(D, "%s without 'TIME'", instr);
  if (v->type == MLSYS_JSON_NUMBER) x = v->num;
  else if (v->type == MLSYS_JSON_STRING && v->len > 0 && v->len < 64 && strlen(v->str) == v->len &&
           strspn(v->str, "0123456789.eE+-") == v->len && v->str[0] >= '0' && v->str[0] <= '9') {
    char *e;   /* decimal only: strtod alone would also take "0x1p3" or "infinity" */
    x = strtod(v->str, &e);
    if (*e) x = -1;
  }
  if (!(x >= 0) || x > MLSYS__REMAT_MAX_COST)
    return mlsys__remat_dtr_err(D, "%s: 'TIME' must be a number of nanoseconds in [0, 1e30]", instr);
  *out = x;
  return MLSYS_OK;
}

/* A name the op reads: defined, not released. */
static mlsys_status mlsys__remat_dtr_use(const mlsys__remat_dtr *D, const char *name, const char *instr, int *bind) {
  int i = mlsys__remat_dtr_find(D, name);
  if (i < 0) return mlsys__remat_dtr_err(D, "%s uses '%.100s', which is not defined before this line", instr, name);
  if (D->b[i].released)
    return mlsys__remat_dtr_err(D, "%s uses '%.100s' after its RELEASE on line %d", instr, name, D->b[i].released);
  *bind = i;
  return MLSYS_OK;
}

/* ---- the replay: storages with reference counts ---- */
static mlsys_status mlsys__remat_dtr_alloc(mlsys__remat_dtr *D, uint64_t bytes, int is_const, int *sid) {
  if (bytes > MLSYS__REMAT_DTR_MAX_TOTAL - D->total_alloc)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d: the trace allocates more than 2^62 bytes in all", D->src,
                           D->line);
  if (!mlsys__remat_dtr_grow((void **)&D->s, &D->cs, (long)D->ns + 1, sizeof *D->s)) return mlsys_last_status();
  D->total_alloc += bytes;
  D->s[D->ns].bytes = bytes;
  D->s[D->ns].refs = 0;
  D->s[D->ns].is_const = is_const;
  D->live += bytes;
  if (!is_const) D->live_act += bytes;
  *sid = D->ns++;
  return MLSYS_OK;
}
static void mlsys__remat_dtr_ref(mlsys__remat_dtr *D, int sid, int delta) {
  mlsys__remat_dtr_storage *s = &D->s[sid];
  s->refs += delta;
  if (s->refs == 0) {   /* the last name bound to it (or to a view of it) is gone */
    D->live -= s->bytes;
    if (!s->is_const) D->live_act -= s->bytes;
  }
}
/* After an op's allocations, before its releases (DTR's order: compute, then release). */
static void mlsys__remat_dtr_peak(mlsys__remat_dtr *D) {
  if (D->pre) return;
  if (D->live > D->info.trace_peak) D->info.trace_peak = D->live;
  if (D->live_act > D->info.trace_peak_activations) {
    D->info.trace_peak_activations = D->live_act;
    D->info.trace_peak_line = D->line;
  }
}
static mlsys_status mlsys__remat_dtr_tensor_new(mlsys__remat_dtr *D, int sid, int node, int *tid) {
  if (!mlsys__remat_dtr_grow((void **)&D->t, &D->ct, (long)D->nt + 1, sizeof *D->t)) return mlsys_last_status();
  D->t[D->nt].storage = sid;
  D->t[D->nt].node = node;
  *tid = D->nt++;
  return MLSYS_OK;
}

/* ---- nodes ---- */
/* Names are kept only when the text form can carry them; others are left out (the writer then says "n<id>"). */
static int mlsys__remat_dtr_text_ok(const char *s) {
  return s && mlsys__remat_text_token_ok(s) && strncmp(s, "op=", 3) != 0 && strncmp(s, "fwd_of=", 7) != 0;
}

/* Ops that draw random numbers (DTR's own log spells one "_fused_droupout_"): recomputing them needs RNG replay. */
static int mlsys__remat_dtr_is_rng(const char *op) {
  static const char *const pat[] = {"dropout", "droupout", "bernoulli", "rand", "normal_", "multinomial"};
  size_t i;
  if (strstr(op, "backward")) return 0;   /* dropout_backward only reads the saved mask */
  for (i = 0; i < sizeof pat / sizeof pat[0]; i++)
    if (strstr(op, pat[i])) return 1;
  return 0;
}

static mlsys_status mlsys__remat_dtr_node_new(mlsys__remat_dtr *D, const char *name, const char *op, double cost,
                                              uint64_t mem, unsigned flags, int *out) {
  mlsys__remat_dtr_node *v;
  if (D->nn >= MLSYS_REMAT_MAX_NODES)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d: more than %d nodes (the limit of a remat graph: schedules are "
                           "n*n); cut the trace shorter", D->src, D->line, MLSYS_REMAT_MAX_NODES);
  if (!mlsys__remat_dtr_grow((void **)&D->nd, &D->cn, (long)D->nn + 1, sizeof *D->nd)) return mlsys_last_status();
  if (D->cap_mark != D->cn) {   /* mark and used follow nd's capacity */
    int *m = (int *)mlsys_realloc_array(D->mark, (size_t)D->cn, sizeof(int));
    unsigned char *u;
    if (!m) return MLSYS_ERR_NOMEM;
    D->mark = m;
    if (!(u = (unsigned char *)mlsys_realloc_array(D->used, (size_t)D->cn, 1))) return MLSYS_ERR_NOMEM;
    D->used = u;
    D->cap_mark = D->cn;
  }
  v = &D->nd[D->nn];
  memset(v, 0, sizeof *v);
  D->mark[D->nn] = 0;
  D->used[D->nn] = 0;
  if (mlsys__remat_dtr_text_ok(name) && !(v->name = mlsys_strdup(name))) return MLSYS_ERR_NOMEM;
  if (mlsys__remat_dtr_text_ok(op) && !(v->op = mlsys_strdup(op))) return MLSYS_ERR_NOMEM;
  v->kind = D->bwd ? MLSYS_REMAT_B : MLSYS_REMAT_F;
  v->flags = flags | (op && mlsys__remat_dtr_is_rng(op) ? (unsigned)MLSYS_REMAT_RNG : 0u);
  v->cost = cost;
  v->mem = mem;
  v->dep_off = D->ndep;
  D->stamp++;
  *out = D->nn++;
  return MLSYS_OK;
}
/* Append dep u (< v, or -1 for "not a node") to the newest node, once. */
static mlsys_status mlsys__remat_dtr_dep(mlsys__remat_dtr *D, int u, int mark_used) {
  mlsys__remat_dtr_node *v = &D->nd[D->nn - 1];
  if (u < 0 || D->mark[u] == D->stamp) return MLSYS_OK;
  if (D->ndep >= D->cdep) {
    long c = D->cdep ? D->cdep * 2 : 4096;
    int *p;
    if (c > INT_MAX) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d: too many edges", D->src, D->line);
    if (!(p = (int *)mlsys_realloc_array(D->dep, (size_t)c, sizeof(int)))) return MLSYS_ERR_NOMEM;
    D->dep = p;
    D->cdep = c;
  }
  D->mark[u] = D->stamp;
  if (mark_used) D->used[u] = 1;
  D->dep[D->ndep++] = u;
  v->ndeps++;
  return MLSYS_OK;
}

/* Before an op's nodes: the kind split. */
static void mlsys__remat_dtr_before_op(mlsys__remat_dtr *D, const char *op, int first_arg_tensor) {
  if (D->pre) return;
  if (D->names_rule && !D->bwd && strstr(op, "backward")) D->bwd = 1;
  if (D->loss_pending) {   /* autograd seeds the backward pass with ones_like(loss): its argument is the loss */
    int u = first_arg_tensor >= 0 ? D->t[first_arg_tensor].node : -1;
    D->loss_pending = 0;
    if (u >= 0 && D->nd[u].kind == MLSYS_REMAT_F) { D->nd[u].kind = MLSYS_REMAT_L; D->loss = u; }
  }
}

/* ---- instructions ---- */
static mlsys_status mlsys__remat_dtr_pend_room(mlsys__remat_dtr *D, int nres, int nargs) {
  if (!mlsys__remat_dtr_grow((void **)&D->pend_res, &D->cap_res, nres, sizeof(int)) ||
      !mlsys__remat_dtr_grow((void **)&D->pend_mem, &D->cap_mem, nres, sizeof(uint64_t)) ||
      !mlsys__remat_dtr_grow((void **)&D->pend_alias, &D->cap_alias, nres, sizeof(int)))
    return mlsys_last_status();
  if (!mlsys__remat_dtr_grow((void **)&D->pend_args, &D->cap_args, nargs, sizeof(int))) return mlsys_last_status();
  return MLSYS_OK;
}

/* All MEMORY/ALIAS lines of a CALL are in: allocate (views share their base's storage), bind, emit the nodes. */
static mlsys_status mlsys__remat_dtr_call_done(mlsys__remat_dtr *D) {
  int k = D->npres, r, primary = 0, pnode = -1, j, line = D->line;
  mlsys_status st;
  D->line = D->pend_line;   /* messages and the peak refer to the CALL line */
  for (r = 0; r < k; r++)
    if (D->pend_alias[r] < 0) { primary = r; break; }
  for (r = 0; r < k; r++) {
    int sid = -1, tid = -1;
    if (D->pend_alias[r] >= 0) sid = D->t[D->pend_args[D->pend_alias[r]]].storage;
    else if ((st = mlsys__remat_dtr_alloc(D, D->pend_mem[r], D->pre, &sid)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_tensor_new(D, sid, -1, &tid)) != MLSYS_OK) return st;
    D->b[D->pend_res[r]].tensor = tid;
    mlsys__remat_dtr_ref(D, sid, +1);
  }
  mlsys__remat_dtr_peak(D);
  if (!D->pre) {
    D->info.calls++;
    D->info.total_time += D->pend_time;
    for (r = 0; r < k; r++) {
      int v, a = D->pend_alias[r], base = a >= 0 ? D->t[D->pend_args[a]].node : -1;
      unsigned flags = base >= 0 ? (unsigned)MLSYS_REMAT_ALIAS : 0u;
      if ((st = mlsys__remat_dtr_node_new(D, D->b[D->pend_res[r]].name, D->pend_op, r == primary ? D->pend_time : 0,
                                          a >= 0 ? 0 : D->pend_mem[r], flags, &v)) != MLSYS_OK)
        return st;
      D->t[D->b[D->pend_res[r]].tensor].node = v;
      if (r == primary) pnode = v;
      /* a view's base first (the alias flag's meaning); a later result needs the op to have run: the primary */
      if ((st = mlsys__remat_dtr_dep(D, base, 1)) != MLSYS_OK) return st;
      if (r != primary && a < 0 && (st = mlsys__remat_dtr_dep(D, pnode, 0)) != MLSYS_OK) return st;
      for (j = 0; j < D->npargs; j++)
        if ((st = mlsys__remat_dtr_dep(D, D->t[D->pend_args[j]].node, 1)) != MLSYS_OK) return st;
      D->info.results++;
      if (a >= 0) D->info.views++;
    }
  }
  D->pend = 0;
  D->line = line;
  return MLSYS_OK;
}

static mlsys_status mlsys__remat_dtr_call(mlsys__remat_dtr *D, const mlsys_json *o) {
  const mlsys_json *res, *args;
  const char *op;
  int i, bid;
  mlsys_status st;
  if ((st = mlsys__remat_dtr_name(D, o, "CALL", "NAME", &op)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_field(D, o, "CALL", "RESULT", MLSYS_JSON_ARRAY, &res)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_field(D, o, "CALL", "ARGS", MLSYS_JSON_ARRAY, &args)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_time(D, o, "CALL", &D->pend_time)) != MLSYS_OK) return st;
  if (res->count == 0) return mlsys__remat_dtr_err(D, "CALL '%.100s' has no RESULT", op);
  if ((st = mlsys__remat_dtr_pend_room(D, res->count, args->count)) != MLSYS_OK) return st;
  for (i = 0; i < args->count; i++) {
    if ((st = mlsys__remat_dtr_name_ok(D, &args->items[i], "CALL", "ARGS")) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, args->items[i].str, "CALL", &bid)) != MLSYS_OK) return st;
    D->pend_args[i] = D->b[bid].tensor;
  }
  D->npargs = args->count;
  mlsys__remat_dtr_before_op(D, op, args->count ? D->pend_args[0] : -1);
  for (i = 0; i < res->count; i++) {   /* bound now, so a repeated result name is caught here */
    if ((st = mlsys__remat_dtr_name_ok(D, &res->items[i], "CALL", "RESULT")) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_bind_new(D, res->items[i].str, -1, &D->pend_res[i])) != MLSYS_OK) return st;
  }
  D->npres = res->count;
  mlsys_free(D->pend_op);
  if (!(D->pend_op = mlsys_strdup(op))) return MLSYS_ERR_NOMEM;
  D->pend = 2;
  D->pend_pos = 0;
  D->pend_line = D->line;
  return MLSYS_OK;
}

static int mlsys__remat_dtr_cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

/* MUTATE: DTR's simulator reads an in-place op as producing a new version of each mutated argument (a fresh
   storage of the same size) that the argument's name is then bound to; the old version loses that reference. */
static mlsys_status mlsys__remat_dtr_mutate(mlsys__remat_dtr *D, const mlsys_json *o) {
  const mlsys_json *args, *mut;
  const char *op;
  double time;
  int i, j, k, first = -1, *argb, *argt, *olds;
  mlsys_status st;
  if ((st = mlsys__remat_dtr_name(D, o, "MUTATE", "NAME", &op)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_field(D, o, "MUTATE", "ARGS", MLSYS_JSON_ARRAY, &args)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_field(D, o, "MUTATE", "MUTATE", MLSYS_JSON_ARRAY, &mut)) != MLSYS_OK) return st;
  if ((st = mlsys__remat_dtr_time(D, o, "MUTATE", &time)) != MLSYS_OK) return st;
  k = mut->count;
  if (k == 0) return mlsys__remat_dtr_err(D, "MUTATE '%.100s' mutates nothing", op);
  if (!mlsys__remat_dtr_grow((void **)&D->tmp, &D->ctmp, 2L * args->count + 2L * k, sizeof(int)))
    return mlsys_last_status();
  argb = D->tmp;
  argt = D->tmp + args->count;
  olds = D->tmp + 2 * args->count;   /* [k] storages that lose a reference, then [k] sorted bindings */
  for (i = 0; i < args->count; i++) {
    if ((st = mlsys__remat_dtr_name_ok(D, &args->items[i], "MUTATE", "ARGS")) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, args->items[i].str, "MUTATE", &argb[i])) != MLSYS_OK) return st;
    argt[i] = D->b[argb[i]].tensor;
  }
  for (i = 0; i < k; i++) {
    const mlsys_json *m = &mut->items[i];
    if (m->type != MLSYS_JSON_NUMBER || !m->is_int || m->i64 < 0 || m->i64 >= args->count)
      return mlsys__remat_dtr_err(D, "MUTATE: entry %d of 'MUTATE' must be an argument index in [0, %d)", i,
                                  args->count);
    olds[k + i] = argb[m->i64];
  }
  qsort(olds + k, (size_t)k, sizeof(int), mlsys__remat_dtr_cmp_int);
  for (i = 1; i < k; i++)
    if (olds[k + i] == olds[k + i - 1])
      return mlsys__remat_dtr_err(D, "MUTATE mutates '%.100s' twice", D->b[olds[k + i]].name);
  mlsys__remat_dtr_before_op(D, op, args->count ? argt[0] : -1);
  for (i = 0; i < k; i++) {
    int a = (int)mut->items[i].i64, old = argt[a], sid = -1, tid = -1, v = -1;
    uint64_t bytes = D->s[D->t[old].storage].bytes;
    if ((st = mlsys__remat_dtr_alloc(D, bytes, D->pre, &sid)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_tensor_new(D, sid, -1, &tid)) != MLSYS_OK) return st;
    olds[i] = D->t[old].storage;
    D->b[argb[a]].tensor = tid;
    mlsys__remat_dtr_ref(D, sid, +1);
    if (!D->pre) {
      char nm[MLSYS__REMAT_DTR_MAX_NAME + 24];
      int base = D->t[old].node;
      snprintf(nm, sizeof nm, "%s$%d", D->b[argb[a]].name, D->line);
      if ((st = mlsys__remat_dtr_node_new(D, nm, op, i == 0 ? time : 0, bytes,
                                          base >= 0 ? (unsigned)MLSYS_REMAT_INPLACE : 0u, &v)) != MLSYS_OK)
        return st;
      D->t[tid].node = v;
      if (i == 0) first = v;
      if ((st = mlsys__remat_dtr_dep(D, base, 1)) != MLSYS_OK) return st;
      if (i > 0 && (st = mlsys__remat_dtr_dep(D, first, 0)) != MLSYS_OK) return st;
      for (j = 0; j < args->count; j++)
        if ((st = mlsys__remat_dtr_dep(D, D->t[argt[j]].node, 1)) != MLSYS_OK) return st;
    }
  }
  mlsys__remat_dtr_peak(D);
  for (i = 0; i < k; i++) mlsys__remat_dtr_ref(D, olds[i], -1);
  if (!D->pre) { D->info.mutates++; D->info.total_time += time; }
  return MLSYS_OK;
}

static mlsys_status mlsys__remat_dtr_line(mlsys__remat_dtr *D, const mlsys_json *o) {
  const mlsys_json *iv;
  const char *in, *name, *name2;
  int64_t x;
  int bid = -1, bid2 = -1, tid = -1, sid = -1;
  mlsys_status st;
  if (o->type != MLSYS_JSON_OBJECT)
    return mlsys__remat_dtr_err(D, "expected a JSON object, got %s", mlsys_json_type_name(o->type));
  iv = mlsys_json_get(o, "INSTRUCTION");
  if (!iv) return mlsys__remat_dtr_err(D, "the line has no 'INSTRUCTION'");
  if (iv->type != MLSYS_JSON_STRING)
    return mlsys__remat_dtr_err(D, "'INSTRUCTION' must be a string, got %s", mlsys_json_type_name(iv->type));
  in = iv->str;
  if (D->pend) {   /* only the awaited MEMORY / ALIAS line may come */
    int r = D->pend_pos / 2;
    const char *want = D->pend == 1 || D->pend_pos % 2 == 0 ? "MEMORY" : "ALIAS";
    const char *rname = D->b[D->pend_res[r]].name;
    if (strcmp(in, want) != 0)
      return mlsys__remat_dtr_err(D, "expected the %s line of '%.100s' (%s on line %d), got %.40s", want, rname,
                                  D->pend == 1 ? "the CONSTANT" : "a result of the CALL", D->pend_line, in);
    if ((st = mlsys__remat_dtr_name(D, o, in, "NAME", &name)) != MLSYS_OK) return st;
    if (strcmp(name, rname) != 0)
      return mlsys__remat_dtr_err(D, "expected the %s line of '%.100s' (line %d), got one for '%.100s'", want, rname,
                                  D->pend_line, name);
    if (D->pend == 1) {   /* CONSTANT: parameters, inputs, scalars; fixed memory, never a node */
      if ((st = mlsys__remat_dtr_int(D, o, "MEMORY", "MEMORY", 0, (int64_t)MLSYS__REMAT_MAX_MEM, &x)) != MLSYS_OK)
        return st;
      if ((st = mlsys__remat_dtr_alloc(D, (uint64_t)x, 1, &sid)) != MLSYS_OK) return st;
      if ((st = mlsys__remat_dtr_tensor_new(D, sid, -1, &tid)) != MLSYS_OK) return st;
      D->b[D->pend_res[0]].tensor = tid;
      mlsys__remat_dtr_ref(D, sid, +1);
      mlsys__remat_dtr_peak(D);
      if (!D->pre) { D->fixed_const += (uint64_t)x; D->info.constants++; }
      D->pend = 0;
      return MLSYS_OK;
    }
    if (D->pend_pos % 2 == 0) {
      if ((st = mlsys__remat_dtr_int(D, o, "MEMORY", "MEMORY", 0, (int64_t)MLSYS__REMAT_MAX_MEM, &x)) != MLSYS_OK)
        return st;
      D->pend_mem[r] = (uint64_t)x;
    } else {
      if ((st = mlsys__remat_dtr_int(D, o, "ALIAS", "ALIAS", -1, (int64_t)D->npargs - 1, &x)) != MLSYS_OK)
        return st;
      D->pend_alias[r] = (int)x;
    }
    if (++D->pend_pos == 2 * D->npres) return mlsys__remat_dtr_call_done(D);
    return MLSYS_OK;
  }
  if (!strcmp(in, "CALL")) return mlsys__remat_dtr_call(D, o);
  if (!strcmp(in, "MUTATE")) return mlsys__remat_dtr_mutate(D, o);
  if (!strcmp(in, "CONSTANT")) {
    if ((st = mlsys__remat_dtr_name(D, o, in, "NAME", &name)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_pend_room(D, 1, 0)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_bind_new(D, name, -1, &D->pend_res[0])) != MLSYS_OK) return st;
    D->pend = 1;
    D->pend_pos = 0;
    D->npres = 1;
    D->pend_line = D->line;
    return MLSYS_OK;
  }
  if (!strcmp(in, "COPY")) {   /* a second name for the same tensor (autograd saving it, a Python variable) */
    if ((st = mlsys__remat_dtr_name(D, o, in, "SRC", &name)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_name(D, o, in, "DST", &name2)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, name, in, &bid)) != MLSYS_OK) return st;
    tid = D->b[bid].tensor;
    if ((st = mlsys__remat_dtr_bind_new(D, name2, tid, &bid2)) != MLSYS_OK) return st;
    mlsys__remat_dtr_ref(D, D->t[tid].storage, +1);
    if (!D->pre) D->info.copies++;
    return MLSYS_OK;
  }
  if (!strcmp(in, "COPY_FROM")) {   /* DST now names SRC's tensor (x.data = y) */
    int old;
    if ((st = mlsys__remat_dtr_name(D, o, in, "SRC", &name)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_name(D, o, in, "DST", &name2)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, name, in, &bid)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, name2, in, &bid2)) != MLSYS_OK) return st;
    old = D->b[bid2].tensor;
    D->b[bid2].tensor = D->b[bid].tensor;
    mlsys__remat_dtr_ref(D, D->t[D->b[bid].tensor].storage, +1);
    mlsys__remat_dtr_ref(D, D->t[old].storage, -1);
    if (!D->pre) D->info.copies++;
    return MLSYS_OK;
  }
  if (!strcmp(in, "RELEASE")) {
    if ((st = mlsys__remat_dtr_name(D, o, in, "NAME", &name)) != MLSYS_OK) return st;
    if ((bid = mlsys__remat_dtr_find(D, name)) < 0) { D->info.releases_ignored++; return MLSYS_OK; }
    if (D->b[bid].released)
      return mlsys__remat_dtr_err(D, "RELEASE of '%.100s', already released on line %d", name, D->b[bid].released);
    D->b[bid].released = D->line;
    mlsys__remat_dtr_ref(D, D->t[D->b[bid].tensor].storage, -1);
    if (!D->pre) D->info.releases++;
    return MLSYS_OK;
  }
  if (!strcmp(in, "PIN")) {   /* DTR never evicts a pinned tensor: never recompute it either */
    int v;
    if ((st = mlsys__remat_dtr_name(D, o, in, "NAME", &name)) != MLSYS_OK) return st;
    if ((st = mlsys__remat_dtr_use(D, name, in, &bid)) != MLSYS_OK) return st;
    if ((v = D->t[D->b[bid].tensor].node) >= 0) D->nd[v].flags |= MLSYS_REMAT_NORECOMPUTE;
    if (!D->pre) D->info.pins++;
    return MLSYS_OK;
  }
  if (!strcmp(in, "ANNOTATE")) {
    if ((st = mlsys__remat_dtr_name(D, o, in, "ANNOTATION", &name)) != MLSYS_OK) return st;
    if (!strcmp(name, "START") && D->pre) {   /* what exists now is input to the imported part: fixed memory */
      D->pre = 0;
      D->fixed_pre = D->live;
      D->info.start_line = D->line;
      mlsys__remat_dtr_peak(D);
    } else if (!strcmp(name, "BACKWARD") && !D->names_rule && !D->bwd && !D->pre) {
      D->bwd = 1;
      D->loss_pending = 1;
      D->info.backward_line = D->line;
    }
    return MLSYS_OK;   /* other annotations carry nothing the graph needs */
  }
  if (!strcmp(in, "MEMORY") || !strcmp(in, "ALIAS"))
    return mlsys__remat_dtr_err(D, "%s line without a CONSTANT or CALL before it", in);
  return mlsys__remat_dtr_err(D, "unknown instruction '%.60s'", in);
}

/* Parse one line; JSON syntax errors are re-stated with the trace's line number. */
static mlsys_status mlsys__remat_dtr_json(mlsys__remat_dtr *D, const char *p, size_t n, mlsys_json_doc *doc) {
  char msg[1024];
  const char *m, *rest;
  char *e;
  long col = 0;
  mlsys_status st = mlsys_json_parse(p, n, "", doc);
  if (st != MLSYS_ERR_PARSE) return st;
  snprintf(msg, sizeof msg, "%s", mlsys_last_error());
  m = msg;
  rest = m;
  if (!strncmp(m, ":1:", 3)) {   /* ":1:<col>: what" */
    col = strtol(m + 3, &e, 10);
    if (*e == ':') rest = e + 1 + (e[1] == ' ');
  }
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%ld: %s", D->src, D->line, col, rest);
}

/* Which marker a line is: 1 ANNOTATE START, 2 ANNOTATE BACKWARD, 0 anything else (malformed lines included: the
   main pass reports those). Only lines that mention ANNOTATE are parsed. */
static int mlsys__remat_dtr_marker(const char *p, size_t n) {
  static const char pat[] = "ANNOTATE";
  size_t i, m = sizeof pat - 1;
  int r = 0;
  mlsys_json_doc doc;
  const mlsys_json *a, *b;
  for (i = 0; i + m <= n; i++)
    if (p[i] == 'A' && !memcmp(p + i, pat, m)) break;
  if (i + m > n) return 0;
  if (mlsys_json_parse(p, n, "", &doc) != MLSYS_OK) { mlsys_clear_error(); return 0; }
  a = mlsys_json_get(doc.root, "INSTRUCTION");
  b = mlsys_json_get(doc.root, "ANNOTATION");
  if (a && b && a->type == MLSYS_JSON_STRING && b->type == MLSYS_JSON_STRING && !strcmp(a->str, "ANNOTATE"))
    r = !strcmp(b->str, "START") ? 1 : !strcmp(b->str, "BACKWARD") ? 2 : 0;
  mlsys_json_doc_free(&doc);
  return r;
}

/* Next line [*p, *q) of text; returns 0 at the end. Trailing '\r' dropped. */
static int mlsys__remat_dtr_next(const char *text, size_t len, size_t *pos, const char **p, size_t *n) {
  const char *s, *e;
  if (*pos >= len) return 0;
  s = text + *pos;
  e = (const char *)memchr(s, '\n', len - *pos);
  if (!e) e = text + len;
  *pos = (size_t)(e - text) + (e < text + len);
  *p = s;
  *n = (size_t)(e - s);
  if (*n && s[*n - 1] == '\r') (*n)--;
  return 1;
}

static void mlsys__remat_dtr_free(mlsys__remat_dtr *D) {
  int i;
  for (i = 0; i < D->nb; i++) mlsys_free(D->b[i].name);
  for (i = 0; i < D->nn; i++) { mlsys_free(D->nd[i].name); mlsys_free(D->nd[i].op); }
  mlsys_free(D->b); mlsys_free(D->tab); mlsys_free(D->t); mlsys_free(D->s); mlsys_free(D->nd); mlsys_free(D->dep);
  mlsys_free(D->mark); mlsys_free(D->used); mlsys_free(D->pend_op); mlsys_free(D->pend_res); mlsys_free(D->pend_mem);
  mlsys_free(D->pend_alias); mlsys_free(D->pend_args); mlsys_free(D->tmp);
}

/* The graph from the interpreter's nodes; the sink, fixed memory, units and info. */
static mlsys_status mlsys__remat_dtr_build(mlsys__remat_dtr *D, const mlsys_remat_dtr_opts *o,
                                           mlsys_remat_graph *out) {
  mlsys_remat_node *nodes = NULL;
  unsigned char *smark = NULL;
  int v, i, n;
  mlsys_status st;
  char nm[256];
  /* what the program still holds at the end: its outputs (loss, parameter gradients, ...) */
  if (!(smark = (unsigned char *)mlsys_calloc((size_t)D->ns + 1, 1))) return MLSYS_ERR_NOMEM;
  D->stamp++;
  if (o->keep_outputs && D->nn > 0) {
    st = mlsys__remat_dtr_node_new(D, "(outputs)", NULL, 0, 0, 0, &v);
    if (st != MLSYS_OK) { mlsys_free(smark); return st; }
    D->nd[v].kind = MLSYS_REMAT_B;
  }
  for (i = 0; i < D->nb; i++) {
    int tid = D->b[i].tensor, u, sid;
    if (D->b[i].released || tid < 0 || (u = D->t[tid].node) < 0) continue;
    sid = D->t[tid].storage;
    if (D->mark[u] != D->stamp) {
      D->info.outputs++;
      if (o->keep_outputs && (st = mlsys__remat_dtr_dep(D, u, 0)) != MLSYS_OK) { mlsys_free(smark); return st; }
      D->mark[u] = D->stamp;
    }
    if (!smark[sid] && !D->s[sid].is_const) { smark[sid] = 1; D->info.output_bytes += D->s[sid].bytes; }
  }
  mlsys_free(smark);
  if (o->keep_outputs && D->nn > 0) {   /* the sink's deps in id order */
    mlsys__remat_dtr_node *sk = &D->nd[D->nn - 1];
    qsort(D->dep + sk->dep_off, (size_t)sk->ndeps, sizeof(int), mlsys__remat_dtr_cmp_int);
  }
  n = D->nn;
  if (!(nodes = (mlsys_remat_node *)mlsys_calloc((size_t)(n ? n : 1), sizeof *nodes))) return MLSYS_ERR_NOMEM;
  for (v = 0; v < n; v++) {
    nodes[v].name = D->nd[v].name;
    nodes[v].op = D->nd[v].op;
    nodes[v].kind = (mlsys_remat_kind)D->nd[v].kind;
    nodes[v].cost = D->nd[v].cost;
    nodes[v].mem = D->nd[v].mem;
    nodes[v].ndeps = D->nd[v].ndeps;
    nodes[v].deps = D->dep + D->nd[v].dep_off;
    nodes[v].flags = D->nd[v].flags;
  }
  st = mlsys_remat_graph_create(n, nodes, out);
  mlsys_free(nodes);
  if (st != MLSYS_OK) {   /* only reachable through odd names (two nodes named alike): still bad input */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mlsys_last_error());
    return mlsys_set_error(st == MLSYS_ERR_ARG ? MLSYS_ERR_PARSE : st, "%s: %s", D->src, msg);
  }
  if (D->fixed_const > MLSYS__REMAT_MAX_MEM || D->fixed_pre > MLSYS__REMAT_MAX_MEM)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the constants hold more than 2^48 bytes", D->src);
  if ((st = mlsys_remat_graph_set_fixed(out, "constants", D->fixed_const)) != MLSYS_OK) return st;
  if (D->fixed_pre && (st = mlsys_remat_graph_set_fixed(out, "before_start", D->fixed_pre)) != MLSYS_OK) return st;
  if (!(out->mem_unit = mlsys_strdup("byte")) || !(out->cost_unit = mlsys_strdup("ns"))) return MLSYS_ERR_NOMEM;
  if (o->name) snprintf(nm, sizeof nm, "%s", o->name);
  else {   /* "logs/resnet32-56-...-default.log" → "resnet32-56-...-default" */
    const char *base = strrchr(D->src, '/');
    size_t l;
    snprintf(nm, sizeof nm, "%s", base ? base + 1 : D->src[0] == '<' ? "" : D->src);
    l = strlen(nm);
    if (l > 4 && !strcmp(nm + l - 4, ".log")) nm[l - 4] = 0;
  }
  if (mlsys__remat_text_token_ok(nm) && !(out->name = mlsys_strdup(nm))) return MLSYS_ERR_NOMEM;
  /* info */
  D->info.nodes = n;
  D->info.loss = out->loss;
  for (v = 0; v < n; v++) {
    if (out->kind[v] == MLSYS_REMAT_B) D->info.backward++; else D->info.forward++;
    D->info.total_bytes += out->dag.size[v];
    if (!D->used[v] && !(o->keep_outputs && v == n - 1)) D->info.unused++;
  }
  D->info.fixed_bytes = D->fixed_const + D->fixed_pre;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_import_dtr(const char *text, size_t len, const char *source,
                                              const mlsys_remat_dtr_opts *opts, mlsys_remat_graph *out,
                                              mlsys_remat_dtr_info *info) {
  mlsys__remat_dtr D;
  mlsys_remat_dtr_opts o;
  mlsys_status st = MLSYS_OK;
  size_t pos = 0, n;
  const char *p;
  int has_start = 0, has_bwd = 0, line = 0;
  if (info) { memset(info, 0, sizeof *info); info->loss = -1; }
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_import_dtr: out is NULL");
  memset(out, 0, sizeof *out);
  out->loss = -1;
  if (!text && len) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_import_dtr: text is NULL but len is %zu", len);
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  memset(&D, 0, sizeof D);
  D.src = source ? source : "<dtr>";
  D.loss = -1;
  D.info.loss = -1;
  /* first pass: where the markers are (START decides what is fixed memory, BACKWARD which split rule applies) */
  while (mlsys__remat_dtr_next(text, len, &pos, &p, &n)) {
    int m = n <= MLSYS__REMAT_DTR_MAX_LINE ? mlsys__remat_dtr_marker(p, n) : 0;
    if (m == 1) has_start = 1;
    if (m == 2) has_bwd = 1;
  }
  D.pre = has_start && !o.whole_trace;
  D.names_rule = !has_bwd;
  for (pos = 0; st == MLSYS_OK && mlsys__remat_dtr_next(text, len, &pos, &p, &n);) {
    mlsys_json_doc doc;
    size_t i;
    D.line = ++line;
    for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'); i++) {}
    if (i == n) continue;   /* blank */
    if (n > MLSYS__REMAT_DTR_MAX_LINE) {
      st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s:%d: line of %zu bytes; the limit is 1 MiB", D.src, D.line, n);
      break;
    }
    if ((st = mlsys__remat_dtr_json(&D, p, n, &doc)) != MLSYS_OK) break;
    st = mlsys__remat_dtr_line(&D, doc.root);
    mlsys_json_doc_free(&doc);
  }
  D.info.lines = line;
  if (st == MLSYS_OK && D.pend) {
    D.line = D.pend_line;
    st = mlsys__remat_dtr_err(&D, "the trace ends before the %s line of '%.100s' (it looks truncated)",
                              D.pend == 1 || D.pend_pos % 2 == 0 ? "MEMORY" : "ALIAS",
                              D.b[D.pend_res[D.pend_pos / 2]].name);
  }
  if (st == MLSYS_OK && D.nn == 0)
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: no CALL or MUTATE %s: nothing to import", D.src,
                         D.info.start_line ? "after the ANNOTATE START" : "in the trace");
  if (st == MLSYS_OK) st = mlsys__remat_dtr_build(&D, &o, out);
  if (st != MLSYS_OK) mlsys_remat_graph_free(out);
  else if (info) *info = D.info;
  mlsys__remat_dtr_free(&D);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_import_dtr_file(const char *path, const mlsys_remat_dtr_opts *opts,
                                                   mlsys_remat_graph *out, mlsys_remat_dtr_info *info) {
  char *buf;
  size_t len;
  mlsys_status st;
  if (info) { memset(info, 0, sizeof *info); info->loss = -1; }
  if (out) { memset(out, 0, sizeof *out); out->loss = -1; }
  if (!path || !out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_import_dtr_file: path or out is NULL");
  if ((st = mlsys_read_file(path, &buf, &len)) != MLSYS_OK) return st;
  st = mlsys_remat_import_dtr(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, opts, out, info);
  mlsys_free(buf);
  return st;
}

/* ================================================================================================================
   9. MONeT (thesis ch. 4; spec A3.4-A3.6): solver graph, exact simulator, staged 0-1 ILP
   ================================================================================================================ */
static int mlsys__mn_op(const mlsys_remat_graph *g, int v, const char *name) {
  return g->op && g->op[v] && strcmp(g->op[v], name) == 0;
}
static int mlsys__mn_conv(const mlsys_remat_graph *g, int v) {
  return mlsys__mn_op(g, v, "Conv2d") || mlsys__mn_op(g, v, "Conv1d") || mlsys__mn_op(g, v, "Conv3d");
}

MLSYS_DEF void mlsys_remat_monet_graph_free(mlsys_remat_monet_graph *sg) {
  if (!sg) return;
  mlsys_free(sg->src); mlsys_free(sg->parent); mlsys_free(sg->int_kind); mlsys_free(sg->mem);
  mlsys_free(sg->in_off); mlsys_free(sg->in); mlsys_free(sg->impl_off); mlsys_free(sg->impl);
  mlsys_free(sg->inplace_of); mlsys_free(sg->path_off); mlsys_free(sg->path_cost); mlsys_free(sg->path_ws);
  mlsys_free(sg->path_kind); mlsys_free(sg->path_split); mlsys_free(sg->pdep_off); mlsys_free(sg->pdep_first); mlsys_free(sg->pdep); mlsys_free(sg->local);
  mlsys_free(sg->local_mem);
  memset(sg, 0, sizeof *sg);
}

static int mlsys__mn_bad_num(double x) { return !(x >= 0) || !isfinite(x); }

/* The im2col column buffer of Conv2d node v from its shapes and attrs (g->info): (C_in/groups)·KH·KW·H_out·W_out
   floats, one sample's and one group's, as examples/cnn_kernels.h's kernels allocate it (they build the columns
   sample by sample and group by group in one reused buffer, so it does not grow with the batch). 0 when v is not
   a Conv2d with a 4-d shape, a 4-d in_shape and a kernel, or the numbers are inconsistent. */
static int mlsys__mn_conv_cols(const mlsys_remat_graph *g, int v, uint64_t *ws) {
  const mlsys_remat_node_info *in;
  int groups;
  double b;
  if (!g->info || !mlsys__mn_op(g, v, "Conv2d")) return 0;
  in = &g->info[v];
  groups = in->groups > 0 ? in->groups : 1;
  if (in->ndim != 4 || in->in_ndim != 4 || in->kernel[0] <= 0 || in->kernel[1] <= 0 || in->in_shape[1] <= 0 ||
      in->in_shape[1] % groups)
    return 0;
  b = (double)(in->in_shape[1] / groups) * in->kernel[0] * in->kernel[1] * (double)in->shape[2] *
      (double)in->shape[3] * 4.0;
  if (!(b >= 0 && b <= (double)MLSYS__REMAT_MAX_MEM)) return 0;
  *ws = (uint64_t)b;
  return 1;
}

/* Add path (kind, deps[0..nd)) to stage paths unless an earlier path of the stage has the same dep set, cost and
   workspace (then it would be the same choice twice). */
static void mlsys__mn_add_path(mlsys_remat_monet_graph *sg, int *np, int *nd_total, int first, char kind,
                               const int *deps, int nd, double cost, uint64_t ws) {
  for (int q = first; q < *np; q++) {
    int a = sg->pdep_off[q + 1] - sg->pdep_off[q], same = (a == nd) && sg->path_cost[q] == cost && sg->path_ws[q] == ws;
    for (int x = 0; same && x < nd; x++) {
      int found = 0;
      for (int y = sg->pdep_off[q]; y < sg->pdep_off[q + 1]; y++) found |= sg->pdep[y] == deps[x];
      same = found;
    }
    if (same) return;
  }
  if (*np - first >= MLSYS_REMAT_MONET_MAX_PATHS) return;
  sg->path_kind[*np] = kind;
  sg->path_cost[*np] = cost;
  sg->path_ws[*np] = ws;
  sg->path_split[*np] = 0;
  for (int x = 0; x < nd; x++) sg->pdep[(*nd_total)++] = deps[x];
  (*np)++;
  sg->pdep_off[*np] = *nd_total;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_graph_build(const mlsys_remat_graph *g, const mlsys_remat_monet_catalogue *c,
                                                     mlsys_remat_monet_graph *out) {
  mlsys_remat_monet_catalogue cat;
  mlsys_remat_monet_graph sg;
  int n, fb, V, N, T, *sid = NULL, *intid = NULL, *ovr = NULL, *last = NULL, *tmp = NULL;
  char nb[64];
  mlsys_status st = MLSYS_OK;
  if (!g || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet: NULL argument");
  memset(out, 0, sizeof *out);
  memset(&sg, 0, sizeof sg);
  if (c) cat = *c; else memset(&cat, 0, sizeof cat);
  if (cat.mode & ~(unsigned)(MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet: unknown mode bits 0x%x",
                           cat.mode & ~(unsigned)(MLSYS_REMAT_MONET_ALL | MLSYS_REMAT_MONET_SPLIT));
  if (cat.conv_fast_cost == 0) cat.conv_fast_cost = 0.7;
  if (cat.conv_ws_factor == 0) cat.conv_ws_factor = 9;
  if (cat.linear_ws_factor == 0) cat.linear_ws_factor = 1;
  if (!(cat.conv_fast_cost > 0) || !isfinite(cat.conv_fast_cost) || mlsys__mn_bad_num(cat.conv_ws_factor) ||
      mlsys__mn_bad_num(cat.linear_ws_factor))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: conv_fast_cost must be > 0 and the workspace factors "
                           "≥ 0, finite (got %g, %g, %g)", cat.conv_fast_cost, cat.conv_ws_factor, cat.linear_ws_factor);
  if (cat.conv_bwd_fast_cost == 0) cat.conv_bwd_fast_cost = cat.conv_fast_cost;
  if (cat.conv_bwd_ws_factor == 0) cat.conv_bwd_ws_factor = cat.conv_ws_factor;
  if (cat.bn_recompute_factor == 0) cat.bn_recompute_factor = 0.5;
  if (!(cat.conv_bwd_fast_cost > 0) || !isfinite(cat.conv_bwd_fast_cost) || mlsys__mn_bad_num(cat.conv_bwd_ws_factor))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: conv_bwd_fast_cost must be > 0 and conv_bwd_ws_factor "
                           "≥ 0, finite (got %g, %g)", cat.conv_bwd_fast_cost, cat.conv_bwd_ws_factor);
  if (!(cat.bn_recompute_factor > 0 && cat.bn_recompute_factor <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: bn_recompute_factor must be in (0, 1] (got %g): a "
                           "recomputation that reuses the statistics does at most the forward's work",
                           cat.bn_recompute_factor);
  if (cat.noverride < 0 || (cat.noverride > 0 && !cat.override_impl))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: noverride %d without override_impl", cat.noverride);
  n = g->dag.n;
  /* the graph's layout: forward (F, L last) then backward (B) */
  for (fb = 0; fb < n && g->kind[fb] != MLSYS_REMAT_B; fb++) {
    if (g->kind[fb] == MLSYS_REMAT_O)
      return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "monet: node %s has kind O; MONeT needs F, L and B nodes only",
                             mlsys_remat_node_name(g, fb, nb, sizeof nb));
  }
  for (int v = fb; v < n; v++)
    if (g->kind[v] != MLSYS_REMAT_B)
      return mlsys_set_error(MLSYS_ERR_ARG, "monet: forward node %s comes after the first backward node; MONeT's "
                             "stages need all forward nodes first", mlsys_remat_node_name(g, v, nb, sizeof nb));
  if (fb == 0 || g->loss != fb - 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "monet: the L node must be the last forward node (loss %d, forward nodes %d)",
                           g->loss, fb);
  for (int i = 0; i < cat.noverride; i++) {
    const mlsys_remat_monet_override *o = &cat.override_impl[i];
    if (o->node < 0 || o->node >= fb || g->kind[o->node] != MLSYS_REMAT_F)
      return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: override %d names node %d, not an F node", i, o->node);
    if (o->nimpl < 1 || o->nimpl > MLSYS_REMAT_MONET_MAX_IMPLS || !o->impl)
      return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: override of node %s has %d implementations (1..%d)",
                             mlsys_remat_node_name(g, o->node, nb, sizeof nb), o->nimpl, MLSYS_REMAT_MONET_MAX_IMPLS);
    for (int l = 0; l < o->nimpl; l++)
      if (mlsys__mn_bad_num(o->impl[l].cost) || mlsys__mn_bad_num(o->impl[l].recompute_cost))
        return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: node %s implementation %d has cost %g / recompute %g "
                               "(must be finite, ≥ 0)", mlsys_remat_node_name(g, o->node, nb, sizeof nb), l,
                               o->impl[l].cost, o->impl[l].recompute_cost);
    if (mlsys__mn_bad_num(o->bwd_cost))
      return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: node %s backward cost %g (must be finite, ≥ 0)",
                             mlsys_remat_node_name(g, o->node, nb, sizeof nb), o->bwd_cost);
    for (int j = 0; j < i; j++)
      if (cat.override_impl[j].node == o->node)
        return mlsys_set_error(MLSYS_ERR_ARG, "monet catalogue: node %s overridden twice",
                               mlsys_remat_node_name(g, o->node, nb, sizeof nb));
  }
  sid = (int *)mlsys_alloc((size_t)n, sizeof(int));
  intid = (int *)mlsys_alloc((size_t)n, sizeof(int));
  ovr = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!sid || !intid || !ovr) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (int v = 0; v < n; v++) { intid[v] = -1; ovr[v] = -1; }
  for (int i = 0; i < cat.noverride; i++) ovr[cat.override_impl[i].node] = i;
  /* forward numbering with IntNodes (A3.5.2): only where a backward node of the op exists to use them */
  V = 0;
  for (int v = 0; v < fb; v++) {
    for (int k = g->dag.in_off[v]; k < g->dag.in_off[v + 1]; k++)
      if (g->dag.in[k] >= fb) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet: forward node reads a backward node"); goto fail; }
    sid[v] = V++;
    if ((cat.mode & MLSYS_REMAT_MONET_INTERMEDIATE) && (mlsys__mn_op(g, v, "ReLU") || mlsys__mn_op(g, v, "MaxPool2d"))) {
      int used = 0;
      for (int b = fb; b < n; b++) used |= g->fwd_of && g->fwd_of[b] == v;
      if (used && g->dag.in_off[v + 1] - g->dag.in_off[v] == 1) intid[v] = V++;
    }
  }
  for (int v = fb; v < n; v++) sid[v] = V + (v - fb);
  N = V + (n - fb);
  T = N - V + 1;
  sg.V = V; sg.N = N; sg.T = T; sg.mode = cat.mode;
  sg.src = (int *)mlsys_alloc((size_t)N, sizeof(int));
  sg.parent = (int *)mlsys_alloc((size_t)V, sizeof(int));
  sg.int_kind = (char *)mlsys_calloc((size_t)V, 1);
  sg.mem = (uint64_t *)mlsys_calloc((size_t)N, sizeof(uint64_t));
  sg.in_off = (int *)mlsys_calloc((size_t)V + 1, sizeof(int));
  sg.in = (int *)mlsys_alloc((size_t)g->dag.in_off[n] + (size_t)V + 1, sizeof(int));
  sg.impl_off = (int *)mlsys_calloc((size_t)V + 1, sizeof(int));
  sg.impl = (mlsys_remat_monet_impl *)mlsys_calloc((size_t)V * MLSYS_REMAT_MONET_MAX_IMPLS, sizeof(mlsys_remat_monet_impl));
  sg.inplace_of = (int *)mlsys_alloc((size_t)V, sizeof(int));
  sg.path_off = (int *)mlsys_calloc((size_t)T + 1, sizeof(int));
  sg.path_cost = (double *)mlsys_calloc((size_t)T * MLSYS_REMAT_MONET_MAX_PATHS, sizeof(double));
  sg.path_ws = (uint64_t *)mlsys_calloc((size_t)T * MLSYS_REMAT_MONET_MAX_PATHS, sizeof(uint64_t));
  sg.path_kind = (char *)mlsys_calloc((size_t)T * MLSYS_REMAT_MONET_MAX_PATHS, 1);
  sg.path_split = (unsigned char *)mlsys_calloc((size_t)T * MLSYS_REMAT_MONET_MAX_PATHS, 1);
  sg.pdep_off = (int *)mlsys_calloc((size_t)T * MLSYS_REMAT_MONET_MAX_PATHS + 1, sizeof(int));
  /* per B node: at most MAX_PATHS paths of at most (its forward deps + 1) values each */
  sg.pdep = (int *)mlsys_alloc(((size_t)g->dag.in_off[n] + (size_t)n + 2) * MLSYS_REMAT_MONET_MAX_PATHS, sizeof(int));
  sg.pdep_first = (unsigned char *)mlsys_calloc(((size_t)g->dag.in_off[n] + (size_t)n + 2) * MLSYS_REMAT_MONET_MAX_PATHS, 1);
  sg.local = (unsigned char *)mlsys_calloc((size_t)V * V, 1);
  sg.local_mem = (uint64_t *)mlsys_calloc((size_t)N, sizeof(uint64_t));
  last = (int *)mlsys_alloc((size_t)N, sizeof(int));
  tmp = (int *)mlsys_alloc(2 * (size_t)n + 4, sizeof(int));   /* a B node's forward deps, then a path's set */
  if (!sg.src || !sg.parent || !sg.int_kind || !sg.mem || !sg.in_off || !sg.in || !sg.impl_off || !sg.impl ||
      !sg.inplace_of || !sg.path_off || !sg.path_cost || !sg.path_ws || !sg.path_kind || !sg.path_split || !sg.pdep_first || !sg.pdep_off || !sg.pdep ||
      !sg.local || !sg.local_mem || !last || !tmp) { st = MLSYS_ERR_NOMEM; goto fail; }
  /* nodes, forward deps, implementations (A3.5.1-3, A3.6) */
  {
    int ne = 0;
    for (int v = 0; v < fb; v++) {
      int s = sid[v], ni = 0;
      double cost = g->dag.cost[v];
      uint64_t inb = 0;
      mlsys_remat_monet_impl *im = &sg.impl[(size_t)s * MLSYS_REMAT_MONET_MAX_IMPLS];
      sg.src[s] = v; sg.parent[s] = -1; sg.mem[s] = g->dag.size[v]; sg.inplace_of[s] = -1;
      sg.in_off[s] = ne;
      for (int k = g->dag.in_off[v]; k < g->dag.in_off[v + 1]; k++) {
        sg.in[ne++] = sid[g->dag.in[k]];
        inb += g->dag.size[g->dag.in[k]];
      }
      sg.in_off[s + 1] = ne;
      if (ovr[v] >= 0) {
        const mlsys_remat_monet_override *o = &cat.override_impl[ovr[v]];
        for (int l = 0; l < o->nimpl; l++) im[ni++] = o->impl[l];
      } else if ((cat.mode & MLSYS_REMAT_MONET_CONV) && g->info && g->info[v].nimpl > 0 &&
                 (mlsys__mn_conv(g, v) || mlsys__mn_op(g, v, "Linear"))) {
        /* the graph's measured implementations (`mlsys remat calibrate`, "impls" in the file) replace the proxy
           model; only where the catalogue offers algorithms (the ReLU/pool impls are IntNode and in-place
           variants, modelled by the other mode bits) */
        const mlsys_remat_node_info *gi = &g->info[v];
        for (int l = 0; l < gi->nimpl && l < MLSYS_REMAT_MONET_MAX_IMPLS; l++, ni++) {
          im[ni].cost = im[ni].recompute_cost = gi->impl[l].cost;
          im[ni].workspace = im[ni].recompute_workspace = gi->impl[l].workspace;
        }
      } else {
        im[ni].cost = im[ni].recompute_cost = cost;   /* "default": the graph's op, as NoOp and Checkmate see it */
        if (cat.mode && (mlsys__mn_op(g, v, "BatchNorm2d") || mlsys__mn_op(g, v, "BatchNorm1d")))
          im[ni].recompute_cost = cost * cat.bn_recompute_factor;   /* reuses the forward's statistics (A3.6) */
        ni++;
        if ((cat.mode & MLSYS_REMAT_MONET_CONV) && (mlsys__mn_conv(g, v) || mlsys__mn_op(g, v, "Linear"))) {
          double f = mlsys__mn_conv(g, v) ? cat.conv_ws_factor : cat.linear_ws_factor;
          uint64_t ws;
          if (!mlsys__mn_conv_cols(g, v, &ws)) ws = (uint64_t)ceil(f * (double)inb);
          im[ni].cost = im[ni].recompute_cost = cost * cat.conv_fast_cost;
          im[ni].workspace = im[ni].recompute_workspace = ws;
          ni++;
        }
      }
      sg.impl_off[s + 1] = ni;   /* counts for now; prefix-summed below */
      /* in place (A3.5.9): a one-input ReLU of its input's size that is that input's last forward user */
      if ((cat.mode & MLSYS_REMAT_MONET_INPLACE) && mlsys__mn_op(g, v, "ReLU") && g->dag.in_off[v + 1] - g->dag.in_off[v] == 1) {
        int u = g->dag.in[g->dag.in_off[v]], ok = g->dag.size[u] == g->dag.size[v] && g->kind[u] == MLSYS_REMAT_F;
        for (int k = g->dag.out_off[u]; ok && k < g->dag.out_off[u + 1]; k++)
          if (g->dag.out[k] < fb && g->dag.out[k] > v) ok = 0;
        if (ok) sg.inplace_of[s] = sid[u];
      }
      if (intid[v] >= 0) {
        int q = intid[v];
        uint64_t numel = g->dag.size[v] / 4;
        /* with the exporter's shapes, the op's own element count: a MaxPool2d node's bytes also hold PyTorch's
           int64 indices (3× the float output), which the 8-bit argmax replaces */
        if (g->info && g->info[v].ndim > 0) {
          numel = 1;
          for (int d = 0; d < g->info[v].ndim; d++) numel *= (uint64_t)g->info[v].shape[d];
        }
        mlsys_remat_monet_impl *iq = &sg.impl[(size_t)q * MLSYS_REMAT_MONET_MAX_IMPLS];
        sg.src[q] = -1; sg.parent[q] = s; sg.inplace_of[q] = -1;
        sg.int_kind[q] = mlsys__mn_op(g, v, "ReLU") ? 'm' : 'a';
        sg.mem[q] = sg.int_kind[q] == 'm' ? (numel + 7) / 8 : numel;   /* 1-bit mask / 8-bit argmax (A3.5.2) */
        sg.in_off[q] = ne; sg.in[ne++] = s; sg.in_off[q + 1] = ne;
        /* one more pass over the op's tensor: packing the mask, or the pool kernel that records its indices */
        iq[0].cost = iq[0].recompute_cost = cost;
        sg.impl_off[q + 1] = 1;
      }
    }
    for (int s = 0; s < V; s++) {   /* compact impl rows */
      int cnt = sg.impl_off[s + 1];
      memmove(&sg.impl[sg.impl_off[s]], &sg.impl[(size_t)s * MLSYS_REMAT_MONET_MAX_IMPLS], (size_t)cnt * sizeof *sg.impl);
      sg.impl_off[s + 1] = sg.impl_off[s] + cnt;
    }
  }
  /* backward nodes and their paths (A3.5.4-5, A3.6) */
  {
    int np = 0, nd = 0;
    sg.path_off[0] = sg.path_off[1] = 0;
    for (int b = fb; b < n; b++) {
      int s = sid[b], t = s - V + 1, first = np, nfd = 0, f = g->fwd_of ? g->fwd_of[b] : -1;
      double cost = g->dag.cost[b];
      int convlike = f >= 0 && f < fb && (mlsys__mn_conv(g, f) || mlsys__mn_op(g, f, "Linear"));
      sg.src[s] = b; sg.mem[s] = g->dag.size[b];
      for (int k = g->dag.in_off[b]; k < g->dag.in_off[b + 1]; k++)
        if (g->dag.in[k] < fb) tmp[nfd++] = sid[g->dag.in[k]];
      if (convlike && (cat.mode & MLSYS_REMAT_MONET_CONV) && !(ovr[f] >= 0 && cat.override_impl[ovr[f]].bwd_cost > 0) &&
          g->info && g->info[b].nimpl > 0) {
        /* the B node's measured backward algorithms (`mlsys remat calibrate`): impl 0 is the 'g' path, each
           further one a 'c' path with its own cost and workspace (all read the graph's deps); add_path keeps at
           most MLSYS_REMAT_MONET_MAX_PATHS and drops exact repeats */
        const mlsys_remat_node_info *bi = &g->info[b];
        mlsys__mn_add_path(&sg, &np, &nd, first, 'g', tmp, nfd, bi->impl[0].cost, bi->impl[0].workspace);
        for (int l = 1; l < bi->nimpl; l++)
          mlsys__mn_add_path(&sg, &np, &nd, first, 'c', tmp, nfd, bi->impl[l].cost, bi->impl[l].workspace);
      } else {
        mlsys__mn_add_path(&sg, &np, &nd, first, 'g', tmp, nfd, cost, 0);
        if (convlike && (cat.mode & MLSYS_REMAT_MONET_CONV)) {   /* the faster backward algorithm (proxy, A3.6) */
          uint64_t inb = 0, ws;
          for (int k = g->dag.in_off[f]; k < g->dag.in_off[f + 1]; k++) inb += g->dag.size[g->dag.in[k]];
          if (ovr[f] >= 0 && cat.override_impl[ovr[f]].bwd_cost > 0)
            mlsys__mn_add_path(&sg, &np, &nd, first, 'c', tmp, nfd, cat.override_impl[ovr[f]].bwd_cost,
                               cat.override_impl[ovr[f]].bwd_workspace);
          else {
            /* a Conv2d with shapes: the column buffer the im2col backward needs (the forward's, see
               mlsys__mn_conv_cols); otherwise the factor times the input bytes */
            if (!mlsys__mn_conv_cols(g, f, &ws))
              ws = (uint64_t)ceil((mlsys__mn_conv(g, f) ? cat.conv_bwd_ws_factor : cat.linear_ws_factor) * (double)inb);
            mlsys__mn_add_path(&sg, &np, &nd, first, 'c', tmp, nfd, cost * cat.conv_bwd_fast_cost, ws);
          }
        }
      }
      if (f >= 0 && f < fb && g->dag.in_off[f + 1] - g->dag.in_off[f] == 1) {
        int u = sid[g->dag.in[g->dag.in_off[f]]], fs = sid[f], nbase = 0, *base = tmp + nfd;
        int relu = mlsys__mn_op(g, f, "ReLU"), relu6 = mlsys__mn_op(g, f, "ReLU6") || mlsys__mn_op(g, f, "Hardtanh");
        int bn = mlsys__mn_op(g, f, "BatchNorm2d") || mlsys__mn_op(g, f, "BatchNorm1d");
        for (int x = 0; x < nfd; x++) if (tmp[x] != u && tmp[x] != fs) base[nbase++] = tmp[x];
        /* ReLU / ReLU6 / Hardtanh: backward from the input or from the output (its sign/range test reads either);
           BatchNorm: from the output (in-place activated BN inverts the affine map), A3.6 */
        if ((relu || relu6) && (cat.mode & MLSYS_REMAT_MONET_OUTACT)) {
          base[nbase] = u; mlsys__mn_add_path(&sg, &np, &nd, first, 'i', base, nbase + 1, cost, 0);
          base[nbase] = fs; mlsys__mn_add_path(&sg, &np, &nd, first, 'o', base, nbase + 1, cost, 0);
        }
        if (bn && (cat.mode & MLSYS_REMAT_MONET_OUTACT)) {
          base[nbase] = fs; mlsys__mn_add_path(&sg, &np, &nd, first, 'o', base, nbase + 1, cost, 0);
        }
        if (intid[f] >= 0 && (relu || mlsys__mn_op(g, f, "MaxPool2d"))) {
          base[nbase] = intid[f];
          mlsys__mn_add_path(&sg, &np, &nd, first, relu ? 'm' : 'a', base, nbase + 1, cost, 0);
        }
      }
      if (convlike && (cat.mode & MLSYS_REMAT_MONET_SPLIT))   /* param-grad then input-grad (A3.5.4) */
        for (int q = first; q < np; q++) {
          sg.path_split[q] = 1;
          for (int x = sg.pdep_off[q]; x < sg.pdep_off[q + 1]; x++)   /* x (param-grad) vs dy held by a forward node */
            for (int k = g->dag.in_off[f]; k < g->dag.in_off[f + 1]; k++)
              if (sid[g->dag.in[k]] == sg.pdep[x]) sg.pdep_first[x] = 1;
        }
      sg.path_off[t + 1] = np;
    }
  }
  /* local tensors (A3.5.7): u is local to every node in (u, last user of u]; forward and backward separately */
  for (int v = 0; v < N; v++) last[v] = -1;
  for (int v = 0; v < V; v++)
    for (int k = sg.in_off[v]; k < sg.in_off[v + 1]; k++) if (v > last[sg.in[k]]) last[sg.in[k]] = v;
  for (int u = 0; u < V; u++)
    for (int j = u + 1; j <= last[u]; j++) { sg.local[(size_t)j * V + u] = 1; sg.local_mem[j] += sg.mem[u]; }
  for (int b = fb; b < n; b++)
    for (int k = g->dag.in_off[b]; k < g->dag.in_off[b + 1]; k++)
      if (g->dag.in[k] >= fb && sid[b] > last[sid[g->dag.in[k]]]) last[sid[g->dag.in[k]]] = sid[b];
  for (int u = V; u < N; u++)
    for (int j = u + 1; j <= last[u]; j++) sg.local_mem[j] += sg.mem[u];
  /* fixed memory: the graph gives categories (params, param_grads, inputs, ...) but not which backward node makes
     which parameter gradient, so all of it counts from the start (as the Checkmate model here does) */
  sg.fixed = mlsys_remat_fixed_total(g);
  *out = sg;
  mlsys_free(sid); mlsys_free(intid); mlsys_free(ovr); mlsys_free(last); mlsys_free(tmp);
  return MLSYS_OK;
fail:
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "monet: out of memory building the solver graph");
  mlsys_remat_monet_graph_free(&sg);
  mlsys_free(sid); mlsys_free(intid); mlsys_free(ovr); mlsys_free(last); mlsys_free(tmp);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_schedule_alloc(int V, int T, mlsys_remat_monet_schedule *s) {
  memset(s, 0, sizeof *s);
  if (V < 1 || T < 1) return mlsys_set_error(MLSYS_ERR_ARG, "monet schedule: V %d, T %d", V, T);
  s->V = V; s->T = T;
  s->R = (unsigned char *)mlsys_calloc((size_t)T * V, 1);
  s->S = (unsigned char *)mlsys_calloc((size_t)(T + 1) * V, 1);
  s->IP = (unsigned char *)mlsys_calloc((size_t)T * V, 1);
  s->M = (signed char *)mlsys_calloc((size_t)T, 1);
  s->F = (signed char *)mlsys_alloc((size_t)T * V, 1);
  if (!s->R || !s->S || !s->IP || !s->M || !s->F) { mlsys_remat_monet_schedule_free(s); return MLSYS_ERR_NOMEM; }
  memset(s->F, -1, (size_t)T * V);
  s->bound = NAN;
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_remat_monet_schedule_free(mlsys_remat_monet_schedule *s) {
  if (!s) return;
  mlsys_free(s->R); mlsys_free(s->S); mlsys_free(s->IP); mlsys_free(s->M); mlsys_free(s->F);
  memset(s, 0, sizeof *s);
}

/* One stage of Alg. 3 (t = 0) / Alg. 4 (t ≥ 1) with eager freeing. Sin = S[t], Sout = S[t+1] (kept through the
   stage's backward op), R, IP, F = row t; p = the backward path. Returns 1 when valid; the stage's peak (fixed
   memory included) and cost are added to *peak / *cost. Also used by the tests' brute force. */
static int mlsys__mn_stage(const mlsys_remat_monet_graph *sg, int t, const unsigned char *Sin,
                           const unsigned char *R, const unsigned char *Sout, const unsigned char *IP,
                           const signed char *F, int p, int sweep, uint64_t *peak, int *peak_v, double *cost,
                           char *why, size_t wl) {
  int V = sg->V, b = V + t - 1, pk = -1, lastneed[512], owstep[512];
  unsigned char live[512];
  uint64_t base = sg->fixed + (t > 0 ? sg->local_mem[b] : 0), mem = 0, pk_mem;
  MLSYS_ASSERT(V <= 512);
  if (t > 0) {
    if (p < 0 || p >= sg->path_off[t + 1] - sg->path_off[t]) {
      snprintf(why, wl, "stage %d: backward path %d of %d", t, p, sg->path_off[t + 1] - sg->path_off[t]);
      return 0;
    }
    pk = sg->path_off[t] + p;
  }
  for (int i = 0; i < V; i++) { lastneed[i] = -1; owstep[i] = V + 1; }
  for (int k = 0; k < V; k++) {
    if (t == 0 && sg->parent[k] < 0 && !R[k]) { snprintf(why, wl, "stage 0: forward node %d not computed", k); return 0; }
    if (!R[k]) {
      if (IP[k]) { snprintf(why, wl, "stage %d: node %d in place but not computed", t, k); return 0; }
      continue;
    }
    if (F[k] < 0 || F[k] >= sg->impl_off[k + 1] - sg->impl_off[k]) {
      snprintf(why, wl, "stage %d: node %d implementation %d of %d", t, k, F[k], sg->impl_off[k + 1] - sg->impl_off[k]);
      return 0;
    }
    if (sg->parent[k] >= 0 && !R[sg->parent[k]]) {   /* constraint 9: the mask/index comes with its parent's run */
      snprintf(why, wl, "stage %d: intermediate %d computed without its parent %d", t, k, sg->parent[k]);
      return 0;
    }
    if (IP[k]) {
      int u = sg->inplace_of[k];
      if (u < 0) { snprintf(why, wl, "stage %d: node %d cannot run in place", t, k); return 0; }
      owstep[u] = k;
    }
    for (int x = sg->in_off[k]; x < sg->in_off[k + 1]; x++) if (k > lastneed[sg->in[x]]) lastneed[sg->in[x]] = k;
  }
  for (int k = 0; k < V; k++)
    if (R[k])
      for (int x = sg->in_off[k]; x < sg->in_off[k + 1]; x++) {
        int u = sg->in[x];
        if (!((R[u] && u < k) || (Sin[u] && !R[u])) || owstep[u] < k) {
          snprintf(why, wl, "stage %d: node %d needs x_%d, which is neither computed before it nor stored", t, k, u);
          return 0;
        }
      }
  for (int i = 0; i < V; i++) {
    if (t == 0 && Sin[i]) { snprintf(why, wl, "S[0][%d] set: nothing is stored before the forward pass", i); return 0; }
    if (Sout[i] && (!(Sin[i] || R[i]) || owstep[i] <= V)) {
      snprintf(why, wl, "stage %d: x_%d kept for stage %d but %s", t, i, t + 1,
               owstep[i] <= V ? "overwritten in place" : "neither stored nor computed");
      return 0;
    }
    if (Sout[i]) lastneed[i] = V;
  }
  if (pk >= 0)
    for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) {
      int u = sg->pdep[x];
      if (!((R[u] && owstep[u] > V) || Sout[u])) {
        snprintf(why, wl, "stage %d: backward path %d needs x_%d, which is neither recomputed nor kept", t, p, u);
        return 0;
      }
      lastneed[u] = V;
    }
  /* stage start. Eager (Alg. 4): stored values this stage never uses are freed, and a stored value that is
     recomputed is replaced by the recomputation. Sweep (the ILP's accounting): every stored value stays until the
     recomputation sweep passes its position (its own recomputation replaces it there). */
  for (int i = 0; i < V; i++) {
    live[i] = Sin[i] && (sweep || (!R[i] && lastneed[i] >= 0));
    if (live[i] && sweep && lastneed[i] < i) lastneed[i] = i;
    if (live[i]) mem += sg->mem[i];
  }
  pk_mem = base + mem;
  if (peak_v) *peak_v = -1;
  for (int k = 0; k < V; k++) {
    const mlsys_remat_monet_impl *im;
    uint64_t now;
    if (!R[k]) continue;
    for (int i = 0; i < V; i++)   /* values whose last use or position is behind us */
      if (live[i] && (lastneed[i] < k || i == k)) { live[i] = 0; mem -= sg->mem[i]; }
    im = &sg->impl[sg->impl_off[k] + F[k]];
    now = base + mem + (t == 0 ? im->workspace : im->recompute_workspace) + (IP[k] ? 0 : sg->mem[k]);
    if (now > pk_mem) { pk_mem = now; if (peak_v) *peak_v = k; }
    *cost += t == 0 ? im->cost : im->recompute_cost;
    if (IP[k]) { int u = sg->inplace_of[k]; if (live[u]) { live[u] = 0; mem -= sg->mem[u]; } }
    live[k] = 1; mem += sg->mem[k];
    for (int i = 0; i <= k; i++)
      if (live[i] && lastneed[i] <= k) { live[i] = 0; mem -= sg->mem[i]; }
  }
  for (int i = 0; i < V; i++)
    if (live[i] && lastneed[i] < V) { live[i] = 0; mem -= sg->mem[i]; }
  if (pk >= 0) {   /* the backward op: its output, workspace, gradients alive, forward values kept or needed */
    uint64_t now = base + mem + sg->mem[b] + sg->path_ws[pk];
    if (sg->path_split[pk]) {
      /* param-grad (workspace, no output yet), then input-grad: the path's values not kept are freed before the
         output is allocated */
      uint64_t second = base + mem + sg->mem[b] + sg->path_ws[pk];
      for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) {
        int u = sg->pdep[x], dup = 0;
        for (int y = sg->pdep_off[pk]; y < x; y++) dup |= sg->pdep[y] == u;
        if (!Sout[u] && live[u] && !dup && sg->pdep_first[x]) second -= sg->mem[u];
      }
      now = base + mem + sg->path_ws[pk];
      if (second > now) now = second;
    }
    if (now > pk_mem) { pk_mem = now; if (peak_v) *peak_v = b; }
    *cost += sg->path_cost[pk];
  }
  if (pk_mem > *peak) *peak = pk_mem;
  return 1;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_simulate(const mlsys_remat_monet_graph *sg,
                                                  const mlsys_remat_monet_schedule *s, mlsys_remat_monet_sim_mode mode,
                                                  mlsys_remat_monet_sim *rep) {
  mlsys_remat_monet_sim r;
  memset(&r, 0, sizeof r);
  r.valid = 1; r.peak_t = r.peak_v = -1;
  if (!sg || !s || !rep) return mlsys_set_error(MLSYS_ERR_ARG, "monet simulate: NULL argument");
  if (s->V != sg->V || s->T != sg->T || sg->V > 512) {
    snprintf(r.why, sizeof r.why, "schedule is %dx%d, graph has V %d, T %d (V ≤ 512)", s->T, s->V, sg->T, sg->V);
    *rep = r;
    return mlsys_set_error(MLSYS_ERR_ARG, "monet simulate: %s", r.why);
  }
  for (int t = 0; t < sg->T && r.valid; t++) {
    uint64_t pk = 0;
    int pv = -1;
    double c = 0;
    const size_t o = (size_t)t * sg->V;
    if (!mlsys__mn_stage(sg, t, s->S + o, s->R + o, s->S + o + sg->V, s->IP + o, s->F + o, t > 0 ? s->M[t] : 0,
                         mode == MLSYS_REMAT_MONET_SIM_SWEEP, &pk, &pv, &c, r.why, sizeof r.why)) { r.valid = 0; break; }
    if (t == 0) r.fwd_cost = c; else {
      int pkx = sg->path_off[t] + s->M[t];
      r.bwd_cost += sg->path_cost[pkx];
      r.recompute_cost += c - sg->path_cost[pkx];
    }
    r.cost += c;
    if (pk > r.peak) { r.peak = pk; r.peak_t = t; r.peak_v = pv; }
  }
  *rep = r;
  if (!r.valid) return mlsys_set_error(MLSYS_ERR_ARG, "monet simulate: %s", r.why);
  return MLSYS_OK;
}

/* ---- baseline schedules as MONeT schedules (A4.1, A4.6) ---- */
/* Complete a schedule whose R is set (IntNodes not computed): every computed op runs its default implementation
   (0), every stage its graph path (0), nothing in place, and S is the least store that makes R valid: x_v is stored
   from the stage that last computed it through every stage that reads it without recomputing it, and through a
   stage's backward op when the path reads it (constraint 8b: M ≤ P + S[t+1]). */
static void mlsys__mn_least_store(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *s) {
  int V = sg->V, T = sg->T;
  unsigned char *R = s->R, *S = s->S;
  memset(S, 0, (size_t)(T + 1) * V);
  memset(s->IP, 0, (size_t)T * V);
  for (int i = 0; i < T * V; i++) s->F[i] = R[i] ? 0 : -1;
  for (int t = 0; t < T; t++) s->M[t] = 0;
  for (int t = 1; t < T; t++) {
    int pk = sg->path_off[t];
    for (int k = 0; k < V; k++)
      if (R[t * V + k])
        for (int x = sg->in_off[k]; x < sg->in_off[k + 1]; x++)
          if (!R[t * V + sg->in[x]]) S[t * V + sg->in[x]] = 1;
    for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) {
      int u = sg->pdep[x];
      if (!R[t * V + u]) S[t * V + u] = S[(t + 1) * V + u] = 1;
    }
  }
  /* carry each stored value back to the stage that computed it (constraint 7: S[t+1] ≤ S[t] + R[t]) */
  for (int v = 0; v < V; v++)
    for (int t = T; t >= 2; t--)
      if (S[t * V + v] && !R[(t - 1) * V + v]) S[(t - 1) * V + v] = 1;
}

static mlsys_status mlsys__mn_baseline_done(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *out,
                                            const char *name) {
  mlsys_remat_monet_sim sim;
  mlsys__mn_least_store(sg, out);
  snprintf(out->method, sizeof out->method, "%s", name);
  out->optimal = 0;
  out->bound = NAN;
  if (mlsys_remat_monet_simulate(sg, out, MLSYS_REMAT_MONET_SIM_SWEEP, &sim) != MLSYS_OK) {
    mlsys_remat_monet_schedule_free(out);
    return mlsys_set_error(MLSYS_ERR_SOLVER, "monet %s: the schedule is invalid in the simulator: %s", name, sim.why);
  }
  out->peak_sweep = sim.peak;
  mlsys_remat_monet_simulate(sg, out, MLSYS_REMAT_MONET_SIM_EAGER, &sim);
  out->cost = out->objective = sim.cost;
  out->peak = out->budget = sim.peak;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_store_all(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *out) {
  mlsys_status st;
  if (!sg || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet store-all: NULL argument");
  if (sg->V > 512) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "monet store-all: %d forward nodes (at most 512)", sg->V);
  if ((st = mlsys_remat_monet_schedule_alloc(sg->V, sg->T, out)) != MLSYS_OK) return st;
  for (int v = 0; v < sg->V; v++) out->R[v] = sg->parent[v] < 0;
  return mlsys__mn_baseline_done(sg, out, "store-all");
}

/* Recompute x_u in stage t from what is available (stored boundaries, values recomputed earlier), depth first. */
static void mlsys__mn_chen_need(const mlsys_remat_monet_graph *sg, int t, int u, unsigned char *avail,
                                mlsys_remat_monet_schedule *s) {
  if (avail[u]) return;
  avail[u] = 1;
  s->R[t * sg->V + u] = 1;
  for (int x = sg->in_off[u]; x < sg->in_off[u + 1]; x++) mlsys__mn_chen_need(sg, t, sg->in[x], avail, s);
}

MLSYS_DEF mlsys_status mlsys_remat_monet_chen(const mlsys_remat_monet_graph *sg, int segments,
                                              mlsys_remat_monet_schedule *out) {
  unsigned char avail[512];
  int n = 0, len, pos = 0;
  mlsys_status st;
  if (!sg || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet chen: NULL argument");
  if (sg->V > 512) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "monet chen: %d forward nodes (at most 512)", sg->V);
  if (segments < 0) return mlsys_set_error(MLSYS_ERR_ARG, "monet chen: %d segments (0 = ⌈√V⌉, or ≥ 1)", segments);
  for (int v = 0; v < sg->V; v++) n += sg->parent[v] < 0;
  if (segments == 0) segments = (int)ceil(sqrt((double)n));
  if (segments > n) segments = n;
  len = (n + segments - 1) / segments;
  if ((st = mlsys_remat_monet_schedule_alloc(sg->V, sg->T, out)) != MLSYS_OK) return st;
  /* forward pass: everything (IntNodes aside); kept: the last node of each segment of len forward ops */
  for (int v = 0; v < sg->V; v++) {
    avail[v] = 0;
    if (sg->parent[v] >= 0) continue;
    out->R[v] = 1;
    avail[v] = pos % len == len - 1;
    pos++;
  }
  /* stage t recomputes what its graph path needs from the nearest available values; a recomputed value stays
     available (held until its last use, as Chen holds a segment until its backward is done), so every op is
     recomputed at most once */
  for (int t = 1; t < sg->T; t++) {
    int pk = sg->path_off[t];
    for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) mlsys__mn_chen_need(sg, t, sg->pdep[x], avail, out);
  }
  return mlsys__mn_baseline_done(sg, out, "chen");
}

/* ---- the staged ILP (A3.4) ---- */
#define MLSYS__MN_CBC_MIN_VARS 400
typedef struct {
  mlsys_milp *m;
  const mlsys_remat_monet_graph *sg;
  int V, T;
  int *R, *S, *P, *IP, *F, *M, *SM;   /* columns; -1 where the variable is a constant or another column */
  int *Suf, *Pre;           /* memory sums: Suf[t*(V+1)+j] = Σ_{i≥j} S[t,i]·mem_i, Pre[t*(V+1)+j] = Σ_{i<j} S[t+1,i]·mem_i
                               (in units; column -1 = the empty sum) */
  int *cols; double *vals; int nnz, cap;
  double cunits, bunits;   /* row constant in units / in bytes */
  uint64_t unit;
  double cunit;
} mlsys__mn_ilp;

static void mlsys__mn_t(mlsys__mn_ilp *q, int col, double v) {
  if (q->nnz < q->cap) { q->cols[q->nnz] = col; q->vals[q->nnz] = v; q->nnz++; }
}
static double mlsys__mn_u(const mlsys__mn_ilp *q, uint64_t bytes) { return ceil((double)bytes / (double)q->unit); }
static int mlsys__mn_P(const mlsys__mn_ilp *q, int t, int v) {
  return q->P[t * q->V + v] >= 0 ? q->P[t * q->V + v] : q->R[t * q->V + v];
}
/* M[t,p]·coef: a constant when the stage has one path */
static void mlsys__mn_Mterm(mlsys__mn_ilp *q, int t, int p, double coef) {
  int c = q->M[t * MLSYS_REMAT_MONET_MAX_PATHS + p];
  if (c >= 0) mlsys__mn_t(q, c, coef); else q->cunits += coef;
}
static void mlsys__mn_SMterm(mlsys__mn_ilp *q, int t, int i, int p, double coef) {
  int c = q->SM[((size_t)t * q->V + i) * MLSYS_REMAT_MONET_MAX_PATHS + p];
  mlsys__mn_t(q, c >= 0 ? c : q->S[(t + 1) * q->V + i], coef);
}
static mlsys_status mlsys__mn_row(mlsys__mn_ilp *q, mlsys_row_sense sense, double rhs, const char *name) {
  mlsys_status st;
  if (q->nnz >= q->cap) return mlsys_set_error(MLSYS_ERR_NOMEM, "monet ilp: row buffer overflow");
  st = mlsys_milp_add_row(q->m, q->nnz, q->cols, q->vals, sense,
                          rhs - q->cunits - ceil(q->bunits / (double)q->unit), name);
  q->nnz = 0; q->cunits = q->bunits = 0;
  return st;
}
static int mlsys__mn_in_path(const mlsys_remat_monet_graph *sg, int pk, int i) {
  for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) if (sg->pdep[x] == i) return 1;
  return 0;
}
/* i is read by the second half of split path pk (or by the whole op of an unsplit one) */
static int mlsys__mn_in_half2(const mlsys_remat_monet_graph *sg, int pk, int i) {
  for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) if (sg->pdep[x] == i && !sg->pdep_first[x]) return 1;
  return 0;
}

/* The ILP point of a schedule (P derived: computed and not overwritten in place; SM = S·M). */
static void mlsys__mn_point(const mlsys__mn_ilp *q, const mlsys_remat_monet_schedule *s, double *x) {
  int V = q->V, T = q->T, Y = MLSYS_REMAT_MONET_MAX_PATHS;
  for (int i = 0; i < (T + 1) * V; i++) x[q->S[i]] = s->S[i];
  for (int t = 0; t < T; t++) {
    for (int v = 0; v < V; v++) {
      x[q->R[t * V + v]] = s->R[t * V + v];
      if (q->IP[t * V + v] >= 0) x[q->IP[t * V + v]] = s->IP[t * V + v];
      for (int l = 0; l < MLSYS_REMAT_MONET_MAX_IMPLS; l++) {
        int c = q->F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l];
        if (c >= 0) x[c] = s->R[t * V + v] && s->F[t * V + v] == l;
      }
    }
    for (int v = 0; v < V; v++)
      if (q->P[t * V + v] >= 0) {
        int ow = 0;
        for (int w = 0; w < V; w++) ow |= q->sg->inplace_of[w] == v && s->IP[t * V + w];
        x[q->P[t * V + v]] = s->R[t * V + v] && !ow;
      }
    {   /* the running sums */
      double a = 0;
      for (int j = V - 1; j >= 0; j--) { a += s->S[t * V + j] ? mlsys__mn_u(q, q->sg->mem[j]) : 0; x[q->Suf[t * (V + 1) + j]] = a; }
      a = 0;
      for (int j = 1; j <= V; j++) { a += s->S[(t + 1) * V + j - 1] ? mlsys__mn_u(q, q->sg->mem[j - 1]) : 0; x[q->Pre[t * (V + 1) + j]] = a; }
    }
    for (int p = 0; p < Y; p++) {
      if (q->M[t * Y + p] >= 0) x[q->M[t * Y + p]] = s->M[t] == p;
      for (int i = 0; i < V; i++) {
        int c = q->SM[((size_t)t * V + i) * Y + p];
        if (c >= 0) x[c] = s->M[t] == p && s->S[(t + 1) * V + i];
      }
    }
  }
}

/* The built-in start (opts->warm_start NULL): the cheaper of store-all and Chen's √n among those the model's rows
   and bounds accept (A4.1/A4.6 schedules are points of every mode's ILP: default implementations, path 0). *x0 is
   the point, or NULL when neither fits. */
static mlsys_status mlsys__mn_builtin_start(const mlsys__mn_ilp *q, double **x0) {
  int n = mlsys_milp_num_vars(q->m);
  double best = INFINITY, *xc = (double *)mlsys_alloc((size_t)n, sizeof(double));
  *x0 = (double *)mlsys_alloc((size_t)n, sizeof(double));
  if (!xc || !*x0) { mlsys_free(xc); mlsys_free(*x0); *x0 = NULL; return MLSYS_ERR_NOMEM; }
  for (int k = 0; k < 2; k++) {
    mlsys_remat_monet_schedule b;
    mlsys_status st = k == 0 ? mlsys_remat_monet_store_all(q->sg, &b) : mlsys_remat_monet_chen(q->sg, 0, &b);
    if (st == MLSYS_ERR_NOMEM) { mlsys_free(xc); mlsys_free(*x0); *x0 = NULL; return st; }
    if (st != MLSYS_OK) continue;
    memset(xc, 0, (size_t)n * sizeof(double));
    mlsys__mn_point(q, &b, xc);
    mlsys_remat_monet_schedule_free(&b);
    if (mlsys_milp_max_violation(q->m, xc, 1) <= 1e-6 && mlsys_milp_eval(q->m, xc) < best) {
      best = mlsys_milp_eval(q->m, xc);
      memcpy(*x0, xc, (size_t)n * sizeof(double));
    }
  }
  mlsys_free(xc);
  if (!isfinite(best)) { mlsys_free(*x0); *x0 = NULL; }
  mlsys_clear_error();   /* a baseline that could not be built is not the caller's error */
  return MLSYS_OK;
}

/* The NoOp start (mode ≠ 0): the same ILP with every column NoOp lacks fixed to 0 (implementations l > 0, paths
   p > 0 and their SM, IntNodes, in place), solved from *x0 (may be NULL) within o->time_limit. Its solution, a point
   of the full ILP, replaces *x0; the bounds are restored. Any solver outcome other than a solution keeps *x0. */
static mlsys_status mlsys__mn_noop_start(mlsys__mn_ilp *q, const mlsys_milp_opts *o, double **x0) {
  int V = q->V, T = q->T, Y = MLSYS_REMAT_MONET_MAX_PATHS, n = mlsys_milp_num_vars(q->m);
  mlsys_milp_opts no = *o;
  mlsys_milp_result r;
  mlsys_status st = MLSYS_OK;
  unsigned char *off = (unsigned char *)mlsys_calloc((size_t)n, 1);
  if (!off) return MLSYS_ERR_NOMEM;
  for (int t = 1; t <= T; t++)
    for (int v = 0; v < V; v++) if (q->sg->parent[v] >= 0) off[q->S[t * V + v]] = 1;
  for (int t = 0; t < T; t++) {
    for (int v = 0; v < V; v++) {
      if (q->sg->parent[v] >= 0) off[q->R[t * V + v]] = 1;
      if (q->IP[t * V + v] >= 0) off[q->IP[t * V + v]] = 1;
      for (int l = 1; l < MLSYS_REMAT_MONET_MAX_IMPLS; l++) {
        int c = q->F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l];
        if (c >= 0) off[c] = 1;
      }
    }
    for (int p = 1; p < Y; p++) {
      if (q->M[t * Y + p] >= 0) off[q->M[t * Y + p]] = 1;
      for (int i = 0; i < V; i++) if (q->SM[((size_t)t * V + i) * Y + p] >= 0) off[q->SM[((size_t)t * V + i) * Y + p]] = 1;
    }
  }
  /* every column fixed here is a free binary in the full model (S[0] and stage-0 R are fixed only for non-IntNodes) */
  for (int j = 0; j < n; j++) if (off[j]) mlsys_milp_set_bounds(q->m, j, 0, 0);
  no.incumbent = *x0;
  no.incumbent_no_start = 1;
  no.hard_time_limit = 1;
  if (mlsys_milp_solve(q->m, &no, &r) == MLSYS_OK && r.x && !r.from_incumbent) {
    if (!*x0 && !(*x0 = (double *)mlsys_alloc((size_t)n, sizeof(double)))) st = MLSYS_ERR_NOMEM;
    else memcpy(*x0, r.x, (size_t)n * sizeof(double));
  }
  mlsys_milp_result_free(&r);
  for (int j = 0; j < n; j++) if (off[j]) mlsys_milp_set_bounds(q->m, j, 0, 1);
  mlsys_free(off);
  mlsys_clear_error();   /* the NoOp model's own outcome (infeasible, timeout) is not an error here */
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_solve(const mlsys_remat_monet_graph *sg, uint64_t budget,
                                               const mlsys_remat_monet_opts *o, mlsys_remat_monet_schedule *out) {
  mlsys_remat_monet_opts op;
  double *x0 = NULL;
  mlsys__mn_ilp q;
  mlsys_milp_opts mo;
  mlsys_milp_result r;
  mlsys_remat_monet_sim sim;
  mlsys_status st;
  int V, T, Y = MLSYS_REMAT_MONET_MAX_PATHS, nvars = 0, nrows = 0;
  double maxc = 0, B, t0 = mlsys_now(), deadline;
  char nm[64];
  if (!sg || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet solve: NULL argument");
  memset(out, 0, sizeof *out);
  memset(&r, 0, sizeof r);
  if (o) op = *o; else memset(&op, 0, sizeof op);
  if (op.time_limit < 0 || op.mip_gap_rel < 0 || op.mip_gap_abs < 0 || op.cost_unit < 0 || !isfinite(op.cost_unit) ||
      op.max_nodes < 0 || !(op.time_limit <= 1e9))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet solve: negative or non-finite time limit, gap, cost unit or node limit");
  if (sg->V > 512) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "monet solve: %d forward nodes (at most 512)", sg->V);
  if (op.mem_unit == 0) op.mem_unit = 1024;
  for (int v = 0; v < sg->V; v++)
    for (int l = sg->impl_off[v]; l < sg->impl_off[v + 1]; l++) {
      if (sg->impl[l].cost > maxc) maxc = sg->impl[l].cost;
      if (sg->impl[l].recompute_cost > maxc) maxc = sg->impl[l].recompute_cost;
    }
  for (int k = 0; k < sg->path_off[sg->T]; k++) if (sg->path_cost[k] > maxc) maxc = sg->path_cost[k];
  if (op.cost_unit == 0) op.cost_unit = maxc > 1e6 ? maxc / 1e6 : 1;
  V = sg->V; T = sg->T;
  memset(&q, 0, sizeof q);
  q.sg = sg; q.V = V; q.T = T; q.unit = op.mem_unit; q.cunit = op.cost_unit;
  q.R = (int *)mlsys_alloc((size_t)T * V, sizeof(int));
  q.S = (int *)mlsys_alloc((size_t)(T + 1) * V, sizeof(int));
  q.P = (int *)mlsys_alloc((size_t)T * V, sizeof(int));
  q.IP = (int *)mlsys_alloc((size_t)T * V, sizeof(int));
  q.F = (int *)mlsys_alloc((size_t)T * V * MLSYS_REMAT_MONET_MAX_IMPLS, sizeof(int));
  q.M = (int *)mlsys_alloc((size_t)T * Y, sizeof(int));
  q.SM = (int *)mlsys_alloc((size_t)T * V * Y, sizeof(int));
  q.Suf = (int *)mlsys_alloc((size_t)T * (V + 1), sizeof(int));
  q.Pre = (int *)mlsys_alloc((size_t)T * (V + 1), sizeof(int));
  q.cap = 4 * (V + 4) * (Y + 2) + 64;
  q.cols = (int *)mlsys_alloc((size_t)q.cap, sizeof(int));
  q.vals = (double *)mlsys_alloc((size_t)q.cap, sizeof(double));
  if (!q.R || !q.S || !q.P || !q.IP || !q.F || !q.M || !q.SM || !q.Suf || !q.Pre || !q.cols || !q.vals) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  if ((st = mlsys_milp_create(&q.m)) != MLSYS_OK) goto done;
  /* columns */
  {
    int inplace_target[512];
    for (int v = 0; v < V; v++) inplace_target[v] = 0;
    for (int v = 0; v < V; v++) if (sg->inplace_of[v] >= 0) inplace_target[sg->inplace_of[v]] = 1;
    for (int t = 0; t <= T; t++)
      for (int v = 0; v < V; v++) {
        snprintf(nm, sizeof nm, "S_%d_%d", t, v);
        q.S[t * V + v] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, 0, nm);
        if (t == 0) mlsys_milp_set_bounds(q.m, q.S[t * V + v], 0, 0);   /* constraint 2 */
      }
    for (int t = 0; t < T; t++)
      for (int v = 0; v < V; v++) {
        int nimpl = sg->impl_off[v + 1] - sg->impl_off[v], fixed1 = t == 0 && sg->parent[v] < 0;   /* constraint 3 */
        double c0 = sg->impl[sg->impl_off[v]].cost, c1 = sg->impl[sg->impl_off[v]].recompute_cost;
        snprintf(nm, sizeof nm, "R_%d_%d", t, v);
        q.R[t * V + v] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, fixed1, 1,
                                            nimpl == 1 ? ceil((t == 0 ? c0 : c1) / q.cunit - 1e-9) : 0, nm);
        if (fixed1) mlsys_milp_set_bounds(q.m, q.R[t * V + v], 1, 1);
        for (int l = 0; l < MLSYS_REMAT_MONET_MAX_IMPLS; l++) q.F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l] = -1;
        if (nimpl > 1)
          for (int l = 0; l < nimpl; l++) {
            const mlsys_remat_monet_impl *im = &sg->impl[sg->impl_off[v] + l];
            snprintf(nm, sizeof nm, "F_%d_%d_%d", t, v, l);
            q.F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l] =
                mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, ceil((t == 0 ? im->cost : im->recompute_cost) / q.cunit - 1e-9), nm);
          }
        q.P[t * V + v] = -1;
        if (inplace_target[v]) { snprintf(nm, sizeof nm, "P_%d_%d", t, v); q.P[t * V + v] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, 0, nm); }
        q.IP[t * V + v] = -1;
        if (sg->inplace_of[v] >= 0) { snprintf(nm, sizeof nm, "IP_%d_%d", t, v); q.IP[t * V + v] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, 0, nm); }
      }
    for (int t = 0; t < T; t++) {
      int np = t > 0 ? sg->path_off[t + 1] - sg->path_off[t] : 0;
      for (int p = 0; p < Y; p++) {
        q.M[t * Y + p] = -1;
        for (int i = 0; i < V; i++) q.SM[((size_t)t * V + i) * Y + p] = -1;
      }
      if (np > 1)
        for (int p = 0; p < np; p++) {
          snprintf(nm, sizeof nm, "M_%d_%d", t, p);
          q.M[t * Y + p] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, ceil(sg->path_cost[sg->path_off[t] + p] / q.cunit - 1e-9), nm);
          for (int i = 0; i < V; i++) {
            if (!mlsys__mn_in_path(sg, sg->path_off[t] + p, i)) continue;   /* only path values enter the rows */
            snprintf(nm, sizeof nm, "SM_%d_%d_%d", t, i, p);
            q.SM[((size_t)t * V + i) * Y + p] = mlsys_milp_add_var(q.m, MLSYS_VAR_BINARY, 0, 1, 0, nm);
          }
        }
    }
    {
      double oc = 0;
      for (int t = 1; t < T; t++)
        if (sg->path_off[t + 1] - sg->path_off[t] == 1) oc += ceil(sg->path_cost[sg->path_off[t]] / q.cunit - 1e-9);
      mlsys_milp_set_obj_constant(q.m, oc);
    }
    /* the memory sums of rows 11a/b/c as running sums (see below) */
    for (int t = 0; t < T; t++)
      for (int j = 0; j <= V; j++) {
        q.Suf[t * (V + 1) + j] = q.Pre[t * (V + 1) + j] = -1;
        if (j < V) {
          snprintf(nm, sizeof nm, "Suf_%d_%d", t, j);
          q.Suf[t * (V + 1) + j] = mlsys_milp_add_var(q.m, MLSYS_VAR_CONTINUOUS, 0, 1e15, 0, nm);
        }
        if (j > 0) {
          snprintf(nm, sizeof nm, "Pre_%d_%d", t, j);
          q.Pre[t * (V + 1) + j] = mlsys_milp_add_var(q.m, MLSYS_VAR_CONTINUOUS, 0, 1e15, 0, nm);
        }
      }
    if (mlsys_milp_num_vars(q.m) <= 0) { st = MLSYS_ERR_NOMEM; goto done; }
  }
  B = floor((double)budget / (double)q.unit);
#define MN_ROW(sense, rhs, ...) do { snprintf(nm, sizeof nm, __VA_ARGS__); if ((st = mlsys__mn_row(&q, sense, rhs, nm)) != MLSYS_OK) goto done; } while (0)
  for (int t = 0; t < T; t++) {
    int b = V + t - 1, np = t > 0 ? sg->path_off[t + 1] - sg->path_off[t] : 0, p0 = t > 0 ? sg->path_off[t] : 0;
    uint64_t gradm = sg->fixed + (t > 0 ? sg->local_mem[b] : 0);
    const int *suf = q.Suf + (size_t)t * (V + 1), *pre = q.Pre + (size_t)t * (V + 1);
    /* The memory rows below sum the stored set over every forward index: written out, that is O(T·V²) nonzeros
       (18 M on resnet50's MONeT model, which CBC could not even load within its time limit). The same sums as
       running sums, one equality each, keep the rows' integer solutions and take O(T·V) nonzeros. */
    for (int j = V - 1; j >= 0; j--) {
      mlsys__mn_t(&q, suf[j], 1); mlsys__mn_t(&q, q.S[t * V + j], -mlsys__mn_u(&q, sg->mem[j]));
      if (j + 1 < V) mlsys__mn_t(&q, suf[j + 1], -1);
      MN_ROW(MLSYS_ROW_EQ, 0, "suf_%d_%d", t, j);
    }
    for (int j = 1; j <= V; j++) {
      mlsys__mn_t(&q, pre[j], 1); mlsys__mn_t(&q, q.S[(t + 1) * V + j - 1], -mlsys__mn_u(&q, sg->mem[j - 1]));
      if (j > 1) mlsys__mn_t(&q, pre[j - 1], -1);
      MN_ROW(MLSYS_ROW_EQ, 0, "pre_%d_%d", t, j);
    }
    for (int v = 0; v < V; v++) {
      int R = q.R[t * V + v], P = q.P[t * V + v], IP = q.IP[t * V + v], nimpl = sg->impl_off[v + 1] - sg->impl_off[v];
      if (P >= 0) { mlsys__mn_t(&q, P, 1); mlsys__mn_t(&q, R, -1); MN_ROW(MLSYS_ROW_LE, 0, "c1_P_%d_%d", t, v); }
      if (IP >= 0) {   /* constraint 1 */
        int u = sg->inplace_of[v], Pu = q.P[t * V + u];
        mlsys__mn_t(&q, IP, 1); mlsys__mn_t(&q, R, -1); MN_ROW(MLSYS_ROW_LE, 0, "c1_IP_%d_%d", t, v);
        mlsys__mn_t(&q, Pu, 1); mlsys__mn_t(&q, q.R[t * V + u], -1); mlsys__mn_t(&q, IP, 2);
        MN_ROW(MLSYS_ROW_GE, 0, "c1_Pge_%d_%d", t, v);
        mlsys__mn_t(&q, Pu, 1); mlsys__mn_t(&q, IP, 2); MN_ROW(MLSYS_ROW_LE, 2, "c1_Ple_%d_%d", t, v);
        mlsys__mn_t(&q, q.S[(t + 1) * V + u], 1); mlsys__mn_t(&q, IP, 2); MN_ROW(MLSYS_ROW_LE, 2, "c1_S_%d_%d", t, v);
      }
      if (op.no_recompute) {   /* constraint 12 (the ablation) */
        if (t > 0) { mlsys__mn_t(&q, R, 1); MN_ROW(MLSYS_ROW_EQ, 0, "c12_R_%d_%d", t, v); }
        if (IP >= 0) { mlsys__mn_t(&q, IP, 1); mlsys__mn_t(&q, R, -1); MN_ROW(MLSYS_ROW_EQ, 0, "c12_IP_%d_%d", t, v); }
      }
      if (nimpl > 1) {   /* A3.8.2: Σ_l F[t,v,l] = R[t,v] */
        for (int l = 0; l < nimpl; l++) mlsys__mn_t(&q, q.F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l], 1);
        mlsys__mn_t(&q, R, -1); MN_ROW(MLSYS_ROW_EQ, 0, "c10_F_%d_%d", t, v);
      }
      /* constraint 7: carry */
      mlsys__mn_t(&q, q.S[(t + 1) * V + v], 1); mlsys__mn_t(&q, q.S[t * V + v], -1); mlsys__mn_t(&q, mlsys__mn_P(&q, t, v), -1);
      MN_ROW(MLSYS_ROW_LE, 0, "c7_%d_%d", t, v);
      /* constraint 8 (forward edges) and 9 (IntNodes) */
      if (sg->parent[v] >= 0) {
        mlsys__mn_t(&q, R, 1); mlsys__mn_t(&q, q.R[t * V + sg->parent[v]], -1); MN_ROW(MLSYS_ROW_LE, 0, "c9_%d_%d", t, v);
      } else
        for (int x = sg->in_off[v]; x < sg->in_off[v + 1]; x++) {
          int u = sg->in[x];
          mlsys__mn_t(&q, R, 1); mlsys__mn_t(&q, q.R[t * V + u], -1); mlsys__mn_t(&q, q.S[t * V + u], -1);
          MN_ROW(MLSYS_ROW_LE, 0, "c8_%d_%d_%d", t, u, v);
        }
    }
    if (np > 1) {   /* constraints 4 and 6 */
      for (int p = 0; p < np; p++) mlsys__mn_t(&q, q.M[t * Y + p], 1);
      MN_ROW(MLSYS_ROW_EQ, 1, "c4_%d", t);
      for (int p = 0; p < np; p++)
        for (int i = 0; i < V; i++) {
          int sm = q.SM[((size_t)t * V + i) * Y + p], s1 = q.S[(t + 1) * V + i], mm = q.M[t * Y + p];
          if (sm < 0) continue;
          mlsys__mn_t(&q, sm, 1); mlsys__mn_t(&q, mm, -1); mlsys__mn_t(&q, s1, -1); MN_ROW(MLSYS_ROW_GE, -1, "c6a_%d_%d_%d", t, i, p);
          mlsys__mn_t(&q, sm, 1); mlsys__mn_t(&q, mm, -1); MN_ROW(MLSYS_ROW_LE, 0, "c6b_%d_%d_%d", t, i, p);
          mlsys__mn_t(&q, sm, 1); mlsys__mn_t(&q, s1, -1); MN_ROW(MLSYS_ROW_LE, 0, "c6c_%d_%d_%d", t, i, p);
        }
    }
    for (int p = 0; p < np; p++)   /* constraint 8 (forward → backward, per path) */
      for (int x = sg->pdep_off[p0 + p]; x < sg->pdep_off[p0 + p + 1]; x++) {
        int u = sg->pdep[x];
        mlsys__mn_Mterm(&q, t, p, 1); mlsys__mn_t(&q, mlsys__mn_P(&q, t, u), -1); mlsys__mn_t(&q, q.S[(t + 1) * V + u], -1);
        MN_ROW(MLSYS_ROW_LE, 0, "c8b_%d_%d_%d", t, u, p);
      }
    /* constraint 11: memory, for every forward index j */
    for (int j = 0; j < V; j++) {
      int R = q.R[t * V + j], nimpl = sg->impl_off[j + 1] - sg->impl_off[j];
      /* (a) stored-only */
      q.bunits = (double)gradm;
      mlsys__mn_t(&q, suf[j], 1);                                   /* Σ_{i≥j} S[t,i]·mem_i */
      if (t < T - 1 && j > 0) mlsys__mn_t(&q, pre[j], 1);           /* Σ_{i<j} S[t+1,i]·mem_i */
      for (int p = 0; p < np; p++)
        for (int i = 0; i < j; i++)
          if (mlsys__mn_in_path(sg, p0 + p, i)) {
            mlsys__mn_Mterm(&q, t, p, mlsys__mn_u(&q, sg->mem[i]));
            mlsys__mn_SMterm(&q, t, i, p, -mlsys__mn_u(&q, sg->mem[i]));
          }
      MN_ROW(MLSYS_ROW_LE, B, "c11a_%d_%d", t, j);
      /* (b) recompute (L̄ bound) */
      q.bunits = (double)gradm;
      if (nimpl > 1)
        for (int l = 0; l < nimpl; l++) {
          const mlsys_remat_monet_impl *im = &sg->impl[sg->impl_off[j] + l];
          mlsys__mn_t(&q, q.F[((size_t)t * V + j) * MLSYS_REMAT_MONET_MAX_IMPLS + l],
                      mlsys__mn_u(&q, t == 0 ? im->workspace : im->recompute_workspace));
        }
      else {
        const mlsys_remat_monet_impl *im = &sg->impl[sg->impl_off[j]];
        mlsys__mn_t(&q, R, mlsys__mn_u(&q, t == 0 ? im->workspace : im->recompute_workspace));
      }
      if (q.IP[t * V + j] >= 0) mlsys__mn_t(&q, q.IP[t * V + j], -mlsys__mn_u(&q, sg->mem[j]));   /* output reuses its input */
      mlsys__mn_t(&q, R, mlsys__mn_u(&q, sg->mem[j]) + mlsys__mn_u(&q, sg->local_mem[j]));
      if (j + 1 < V) mlsys__mn_t(&q, suf[j + 1], 1);               /* Σ_{i>j} S[t,i]·mem_i */
      if (j > 0) mlsys__mn_t(&q, pre[j], 1);                        /* Σ_{i<j} S[t+1,i]·mem_i, less the local ones */
      for (int i = 0; i < j; i++)
        if (sg->local[(size_t)j * V + i]) mlsys__mn_t(&q, q.S[(t + 1) * V + i], -mlsys__mn_u(&q, sg->mem[i]));
      /* a value local to j is in R·local_memory(j) already: A3.4 adds its keep term too, which counts it twice
         when the path reads it unkept. With R = 0 this row is weaker than (a), which keeps the term. */
      for (int p = 0; p < np; p++)
        for (int i = 0; i < j; i++)
          if (mlsys__mn_in_path(sg, p0 + p, i) && !sg->local[(size_t)j * V + i]) {
            mlsys__mn_Mterm(&q, t, p, mlsys__mn_u(&q, sg->mem[i]));
            mlsys__mn_SMterm(&q, t, i, p, -mlsys__mn_u(&q, sg->mem[i]));
          }
      MN_ROW(MLSYS_ROW_LE, B, "c11b_%d_%d", t, j);
    }
    if (t > 0) {   /* (c) the backward op, once per stage (A3.8.6) */
      int nsplit = 0;
      for (int p = 0; p < np; p++) nsplit += sg->path_split[p0 + p];
      /* A split path's first half (param-grad) has no output yet; its second half (input-grad) has the output and
         only the path's values that are kept (SM), so it gets a second row. Unsplit paths are the same in both. */
      q.bunits = (double)(sg->fixed + sg->local_mem[b] + (nsplit ? 0 : sg->mem[b]));
      /* Σ_p M[t,p]·(ws_p + Σ_{i∈p} mem_i) + Σ_p Σ_{i∉p} SM[t,i,p]·mem_i, where Σ_{i∉p} SM[t,i,p] = S[t+1,i] −
         Σ_{i∈p} SM[t,i,p] since Σ_p M[t,p] = 1: the stored set's sum less the path values among it */
      mlsys__mn_t(&q, pre[V], 1);
      for (int p = 0; p < np; p++) {
        double c = mlsys__mn_u(&q, sg->path_ws[p0 + p]);
        if (nsplit && !sg->path_split[p0 + p]) c += mlsys__mn_u(&q, sg->mem[b]);
        for (int i = 0; i < V; i++) if (mlsys__mn_in_path(sg, p0 + p, i)) c += mlsys__mn_u(&q, sg->mem[i]);
        mlsys__mn_Mterm(&q, t, p, c);
        for (int i = 0; i < V; i++)
          if (mlsys__mn_in_path(sg, p0 + p, i)) mlsys__mn_SMterm(&q, t, i, p, -mlsys__mn_u(&q, sg->mem[i]));
      }
      MN_ROW(MLSYS_ROW_LE, B, "c11c_%d", t);
      if (nsplit) {
        q.bunits = (double)(sg->fixed + sg->local_mem[b]);
        mlsys__mn_t(&q, pre[V], 1);   /* as in c11c: the stored set less the half's values among it */
        for (int p = 0; p < np; p++) {
          double c = mlsys__mn_u(&q, sg->path_ws[p0 + p]) + mlsys__mn_u(&q, sg->mem[b]);
          for (int i = 0; i < V; i++) if (mlsys__mn_in_half2(sg, p0 + p, i)) c += mlsys__mn_u(&q, sg->mem[i]);
          mlsys__mn_Mterm(&q, t, p, c);
          for (int i = 0; i < V; i++)   /* the rest (the first half's values among it) counts only when kept */
            if (mlsys__mn_in_half2(sg, p0 + p, i)) mlsys__mn_SMterm(&q, t, i, p, -mlsys__mn_u(&q, sg->mem[i]));
        }
        MN_ROW(MLSYS_ROW_LE, B, "c11c2_%d", t);
      }
    }
  }
#undef MN_ROW
  nvars = mlsys_milp_num_vars(q.m);
  nrows = mlsys_milp_num_rows(q.m);
  out->nvars = nvars; out->nrows = nrows;
  if (op.dump_model && (st = mlsys_milp_write(q.m, op.dump_model)) != MLSYS_OK) goto done;
  if (op.size_only) {   /* Tab. 4.5's figures without a solve */
    const mlsys_milp *m = q.m;
    memset(op.size_only, 0, sizeof *op.size_only);
    for (int j = 0; j < m->nvars; j++) {
      if (m->kind[j] == MLSYS_VAR_CONTINUOUS) op.size_only->continuous++; else op.size_only->binaries++;
    }
    op.size_only->rows = nrows;
    op.size_only->nonzeros = mlsys_milp_num_nonzeros(q.m);
    st = MLSYS_OK;
    goto done;
  }
  memset(&mo, 0, sizeof mo);
  mo.max_nodes = op.max_nodes;
  mo.mip_gap_rel = op.mip_gap_rel;
  mo.mip_gap_abs = op.mip_gap_abs / q.cunit;
  /* Same rule as the Checkmate MILP (lp_solve small, CBC large), but on the model's columns: MONeT's ILP is larger
     per graph node. Measured on smallcnn_b8 (27 nodes, 743 columns, full MONeT): lp_solve 27 s at 80 % and not
     proven in 60 s at 100 %; CBC 0.5 s and 0.2 s. The test chains (≤ 200 columns) are proven by lp_solve at once. */
  mo.backend = op.backend != MLSYS_SOLVER_DEFAULT ? op.backend
               : (mlsys_milp_num_vars(q.m) > MLSYS__MN_CBC_MIN_VARS && mlsys_milp_has_backend(MLSYS_SOLVER_CBC))
                   ? MLSYS_SOLVER_CBC
               : mlsys_milp_has_backend(MLSYS_SOLVER_LPSOLVE) ? MLSYS_SOLVER_LPSOLVE : MLSYS_SOLVER_CBC;
  if (op.warm_start) {
    const mlsys_milp *m = q.m;
    if (op.warm_start->V != V || op.warm_start->T != T) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "monet: warm start is %dx%d, the graph needs %dx%d", op.warm_start->T,
                           op.warm_start->V, T, V);
      goto done;
    }
    if (!(x0 = (double *)mlsys_calloc((size_t)mlsys_milp_num_vars(q.m), sizeof(double)))) { st = MLSYS_ERR_NOMEM; goto done; }
    mlsys__mn_point(&q, op.warm_start, x0);
    for (int i = 0; i < m->nrows; i++) {   /* name the first row the start violates */
      double a = 0;
      for (long k = m->row_off[i]; k < m->row_off[i + 1]; k++) a += m->rval[k] * x0[m->rcol[k]];
      if ((m->sense[i] == MLSYS_ROW_LE && a > m->rhs[i] + 1e-6) || (m->sense[i] == MLSYS_ROW_GE && a < m->rhs[i] - 1e-6) ||
          (m->sense[i] == MLSYS_ROW_EQ && fabs(a - m->rhs[i]) > 1e-6)) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "monet: the warm start violates row %s (%g against %g)",
                             m->rname && m->rname[i] ? m->rname[i] : "?", a, m->rhs[i]);
        goto done;
      }
    }
    mo.incumbent = x0;
  } else if ((st = mlsys__mn_builtin_start(&q, &x0)) != MLSYS_OK) goto done;
  else mo.incumbent = x0;   /* NULL when neither baseline fits */
  deadline = t0 + (op.time_limit > 0 ? op.time_limit : 3600);
  if (!op.warm_start && sg->mode != 0 && op.noop_start >= 0 && !op.no_recompute) {
    mlsys_milp_opts no = mo;
    no.time_limit = fmax(0.25 * (deadline - mlsys_now()), 1e-3);
    if ((st = mlsys__mn_noop_start(&q, &no, &x0)) != MLSYS_OK) goto done;
    mo.incumbent = x0;
  }
  /* what is left of the caller's limit (CBC's own limit is then a backstop; see mlsys_milp_solve) */
  mo.time_limit = fmax(deadline - mlsys_now(), 1e-3);
  mo.incumbent_no_start = 1;   /* CBC's MIP-start processing overruns the limit (see mlsys_milp_opts) */
  mo.hard_time_limit = 1;      /* and its root LP and feasibility pump ignore it: a child killed at the limit */
  st = mlsys_milp_solve(q.m, &mo, &r);
  if (st == MLSYS_ERR_INFEASIBLE) {
    mlsys_set_error(st, "monet: no schedule fits %llu bytes under the ILP's memory rows (fixed memory %llu bytes)",
                    (unsigned long long)budget, (unsigned long long)sg->fixed);
    goto done;
  }
  if (st == MLSYS_ERR_TIMEOUT) {   /* the solver saw only what was left of the caller's limit: name the caller's */
    if (op.max_nodes > 0 && strstr(mlsys_last_error(), "node limit"))
      mlsys_set_error(st, "monet: no schedule within the node limit of %ld (no built-in start fits %llu bytes)",
                      op.max_nodes, (unsigned long long)budget);
    else
      mlsys_set_error(st, "monet: no schedule within the time limit of %g s (no built-in start fits %llu bytes)",
                      op.time_limit > 0 ? op.time_limit : 3600, (unsigned long long)budget);
    goto done;
  }
  if (st != MLSYS_OK) { mlsys_prefix_error("monet ilp"); goto done; }
  if ((st = mlsys_remat_monet_schedule_alloc(V, T, out)) != MLSYS_OK) goto done;
  out->nvars = nvars; out->nrows = nrows;
  for (int t = 0; t < T; t++) {
    for (int v = 0; v < V; v++) {
      int nimpl = sg->impl_off[v + 1] - sg->impl_off[v];
      out->R[t * V + v] = r.x[q.R[t * V + v]] > 0.5;
      if (q.IP[t * V + v] >= 0) out->IP[t * V + v] = r.x[q.IP[t * V + v]] > 0.5;
      out->F[t * V + v] = -1;
      if (out->R[t * V + v]) {
        out->F[t * V + v] = 0;
        if (nimpl > 1)
          for (int l = 0; l < nimpl; l++)
            if (r.x[q.F[((size_t)t * V + v) * MLSYS_REMAT_MONET_MAX_IMPLS + l]] > 0.5) out->F[t * V + v] = (signed char)l;
      }
    }
    out->M[t] = 0;
    for (int p = 0; p < Y; p++) if (q.M[t * Y + p] >= 0 && r.x[q.M[t * Y + p]] > 0.5) out->M[t] = (signed char)p;
  }
  for (int i = 0; i < (T + 1) * V; i++) out->S[i] = r.x[q.S[i]] > 0.5;
  out->budget = budget;
  out->optimal = r.status == MLSYS_MILP_OPTIMAL;
  out->objective = r.objective * q.cunit;
  out->bound = isfinite(r.bound) ? r.bound * q.cunit : NAN;
  out->solve_seconds = mlsys_now() - t0;
  snprintf(out->method, sizeof out->method, "%s", sg->mode ? "monet" : "monet-noop");
  if (mlsys_remat_monet_simulate(sg, out, MLSYS_REMAT_MONET_SIM_SWEEP, &sim) != MLSYS_OK) {
    st = mlsys_set_error(MLSYS_ERR_SOLVER, "monet: the ILP's schedule is invalid in the simulator: %s", sim.why);
    goto done;
  }
  out->peak_sweep = sim.peak;
  if (sim.peak > budget) {
    st = mlsys_set_error(MLSYS_ERR_SOLVER, "monet: the ILP's schedule peaks at %llu bytes in the simulator's sweep "
                         "accounting, over the budget %llu (the memory rows should bound it)",
                         (unsigned long long)sim.peak, (unsigned long long)budget);
    goto done;
  }
  mlsys_remat_monet_simulate(sg, out, MLSYS_REMAT_MONET_SIM_EAGER, &sim);
  out->cost = sim.cost;
  out->peak = sim.peak;
  if (sim.peak > budget) {
    st = mlsys_set_error(MLSYS_ERR_SOLVER, "monet: the ILP's schedule peaks at %llu bytes in the simulator, over the "
                         "budget %llu (the memory rows should bound it)", (unsigned long long)sim.peak,
                         (unsigned long long)budget);
    goto done;
  }
  st = MLSYS_OK;
done:
  if (st == MLSYS_ERR_NOMEM && !mlsys_last_error()[0]) mlsys_set_error(st, "monet: out of memory");
  if (st != MLSYS_OK && out->R) {
    int nv = out->nvars, nr = out->nrows;
    mlsys_remat_monet_schedule_free(out);
    out->nvars = nv; out->nrows = nr;
  }
  mlsys_milp_result_free(&r);
  mlsys_free(x0);
  if (q.m) mlsys_milp_free(q.m);
  mlsys_free(q.R); mlsys_free(q.S); mlsys_free(q.P); mlsys_free(q.IP); mlsys_free(q.F); mlsys_free(q.M);
  mlsys_free(q.SM); mlsys_free(q.Suf); mlsys_free(q.Pre); mlsys_free(q.cols); mlsys_free(q.vals);
  return st;
}

/* ---- A4.4: greedy post-optimisation to the fastest conv algorithm ---- */
static int mlsys__mn_fits(const mlsys_remat_monet_graph *sg, const mlsys_remat_monet_schedule *s, uint64_t budget,
                          double *cost, uint64_t *peak, uint64_t *peak_sweep) {
  mlsys_remat_monet_sim e, w;
  if (mlsys_remat_monet_simulate(sg, s, MLSYS_REMAT_MONET_SIM_EAGER, &e) != MLSYS_OK) return 0;
  if (mlsys_remat_monet_simulate(sg, s, MLSYS_REMAT_MONET_SIM_SWEEP, &w) != MLSYS_OK) return 0;
  if (e.peak > budget || w.peak > budget) return 0;
  *cost = e.cost; *peak = e.peak; *peak_sweep = w.peak;
  return 1;
}
static int mlsys__mn_same_deps(const mlsys_remat_monet_graph *sg, int a, int b) {
  if (sg->pdep_off[a + 1] - sg->pdep_off[a] != sg->pdep_off[b + 1] - sg->pdep_off[b]) return 0;
  for (int x = sg->pdep_off[a]; x < sg->pdep_off[a + 1]; x++) if (!mlsys__mn_in_path(sg, b, sg->pdep[x])) return 0;
  return 1;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_post_fastest_conv(const mlsys_remat_monet_graph *sg, uint64_t budget,
                                                           mlsys_remat_monet_schedule *s, int *changes) {
  double cost;
  uint64_t peak, peak_sweep;
  int V, T, nch = 0;
  mlsys_remat_monet_sim sim;
  if (changes) *changes = 0;
  if (!sg || !s) return mlsys_set_error(MLSYS_ERR_ARG, "monet post-optimisation: NULL argument");
  if (mlsys_remat_monet_simulate(sg, s, MLSYS_REMAT_MONET_SIM_EAGER, &sim) != MLSYS_OK) {
    mlsys_prefix_error("monet post-optimisation: the schedule");
    return MLSYS_ERR_ARG;
  }
  if (!mlsys__mn_fits(sg, s, budget, &cost, &peak, &peak_sweep))
    return mlsys_set_error(MLSYS_ERR_ARG, "monet post-optimisation: the schedule does not fit the budget %llu (eager "
                           "peak %llu)", (unsigned long long)budget, (unsigned long long)sim.peak);
  V = sg->V; T = sg->T;
  for (int t = 0; t < T; t++)
    for (int v = 0; v <= V; v++) {   /* v = V: the stage's backward op */
      int cand[MLSYS_REMAT_MONET_MAX_IMPLS + MLSYS_REMAT_MONET_MAX_PATHS], nc = 0, cur, n, p0 = 0;
      double cc[MLSYS_REMAT_MONET_MAX_IMPLS + MLSYS_REMAT_MONET_MAX_PATHS], ccur;
      signed char *slot;
      if (v < V) {
        if (!s->R[(size_t)t * V + v]) continue;
        n = sg->impl_off[v + 1] - sg->impl_off[v];
        slot = &s->F[(size_t)t * V + v];
        for (int l = 0; l < n; l++) {
          const mlsys_remat_monet_impl *im = &sg->impl[sg->impl_off[v] + l];
          cc[l] = t == 0 ? im->cost : im->recompute_cost;
        }
      } else {
        if (t == 0) continue;
        p0 = sg->path_off[t]; n = sg->path_off[t + 1] - p0;
        slot = &s->M[t];
        for (int p = 0; p < n; p++) cc[p] = sg->path_cost[p0 + p];
      }
      cur = *slot; ccur = cc[cur];
      for (int l = 0; l < n; l++)   /* cheaper alternatives (paths: the same forward values), cheapest first */
        if (cc[l] < ccur && (v < V || mlsys__mn_same_deps(sg, p0 + l, p0 + cur))) {
          int x = nc++;
          while (x > 0 && cc[cand[x - 1]] > cc[l]) { cand[x] = cand[x - 1]; x--; }
          cand[x] = l;
        }
      for (int k = 0; k < nc; k++) {
        double c2;
        uint64_t p2, q2;
        *slot = (signed char)cand[k];
        if (mlsys__mn_fits(sg, s, budget, &c2, &p2, &q2) && c2 < cost) { cost = c2; peak = p2; peak_sweep = q2; nch++; break; }
        *slot = (signed char)cur;
      }
    }
  s->cost = cost; s->peak = peak; s->peak_sweep = peak_sweep;
  if (changes) *changes = nch;
  return MLSYS_OK;
}

/* ---- plans ---- */
MLSYS_DEF void mlsys_remat_monet_plan_free(mlsys_remat_monet_plan *p) {
  if (!p) return;
  mlsys_free(p->steps);
  memset(p, 0, sizeof *p);
}

/* The last backward user (solver id) of each backward node's output, from the graph's B→B edges; -1 if none. */
static int *mlsys__mn_grad_last(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg) {
  int *last = (int *)mlsys_alloc((size_t)sg->N, sizeof(int)), off = sg->V - (g->dag.n - (sg->N - sg->V));
  if (!last) return NULL;
  for (int v = 0; v < sg->N; v++) last[v] = -1;
  /* graph id b ≥ first B maps to solver id b + off */
  for (int v = sg->V; v < sg->N; v++) {
    int b = sg->src[v];
    for (int k = g->dag.in_off[b]; k < g->dag.in_off[b + 1]; k++) {
      int u = g->dag.in[k] + off;
      if (u >= sg->V && v > last[u]) last[u] = v;
    }
  }
  return last;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_plan_build(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                    const mlsys_remat_monet_schedule *s, mlsys_remat_monet_plan *out) {
  mlsys_remat_monet_sim sim;
  mlsys_status st;
  int V, T, N, cap, n = 0, *glast = NULL;
  unsigned char *live = NULL;
  int *lastneed = NULL;
  mlsys_remat_monet_step *steps = NULL;
  if (!g || !sg || !s || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet plan: NULL argument");
  memset(out, 0, sizeof *out);
  if ((st = mlsys_remat_monet_simulate(sg, s, MLSYS_REMAT_MONET_SIM_EAGER, &sim)) != MLSYS_OK) return st;
  V = sg->V; T = sg->T; N = sg->N;
  cap = 4 * T * (V + 2) + 2 * N + 16;
  steps = (mlsys_remat_monet_step *)mlsys_alloc((size_t)cap, sizeof *steps);
  live = (unsigned char *)mlsys_calloc((size_t)N, 1);
  lastneed = (int *)mlsys_alloc((size_t)V, sizeof(int));
  glast = mlsys__mn_grad_last(g, sg);
  if (!steps || !live || !lastneed || !glast) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "monet plan: out of memory"); goto done; }
#define MN_STEP(o, t_, v_, l_, ip_)                                                                       \
  do {                                                                                                    \
    steps[n].op = (unsigned char)(o); steps[n].stage = (t_); steps[n].node = (v_); steps[n].impl = (l_);  \
    steps[n].in_place = (unsigned char)(ip_); steps[n].half = 0; n++;                                     \
  } while (0)
  for (int t = 0; t < T; t++) {
    const unsigned char *R = s->R + (size_t)t * V, *Sout = s->S + (size_t)(t + 1) * V, *IP = s->IP + (size_t)t * V;
    int pk = t > 0 ? sg->path_off[t] + s->M[t] : -1, b = V + t - 1;
    /* the same liveness as the eager simulator: last computed user, or V for values kept or read by the path */
    for (int i = 0; i < V; i++) lastneed[i] = Sout[i] ? V : -1;
    for (int k = 0; k < V; k++)
      if (R[k]) for (int x = sg->in_off[k]; x < sg->in_off[k + 1]; x++) if (k > lastneed[sg->in[x]]) lastneed[sg->in[x]] = k;
    if (pk >= 0) for (int x = sg->pdep_off[pk]; x < sg->pdep_off[pk + 1]; x++) lastneed[sg->pdep[x]] = V;
    for (int i = 0; i < V; i++)   /* stage start: stored values unused here, or recomputed here */
      if (live[i] && (R[i] || lastneed[i] < 0)) { MN_STEP(MLSYS_REMAT_OP_FREE, t, i, -1, 0); live[i] = 0; }
    for (int k = 0; k < V; k++) {
      if (!R[k]) continue;
      for (int i = 0; i < V; i++)
        if (live[i] && lastneed[i] < k) { MN_STEP(MLSYS_REMAT_OP_FREE, t, i, -1, 0); live[i] = 0; }
      MN_STEP(MLSYS_REMAT_OP_COMPUTE, t, k, s->F[(size_t)t * V + k], IP[k]);
      if (IP[k]) live[sg->inplace_of[k]] = 0;   /* the output took over the input's buffer */
      live[k] = 1;
    }
    for (int i = 0; i < V; i++)
      if (live[i] && lastneed[i] < V) { MN_STEP(MLSYS_REMAT_OP_FREE, t, i, -1, 0); live[i] = 0; }
    if (pk >= 0) {
      if (sg->path_split[pk]) {   /* param-grad, free the first half's values not kept, then input-grad */
        MN_STEP(MLSYS_REMAT_OP_COMPUTE, t, b, s->M[t], 0);
        steps[n - 1].half = 1;
        for (int i = 0; i < V; i++)
          if (live[i] && !Sout[i] && !mlsys__mn_in_half2(sg, pk, i)) { MN_STEP(MLSYS_REMAT_OP_FREE, t, i, -1, 0); live[i] = 0; }
        MN_STEP(MLSYS_REMAT_OP_COMPUTE, t, b, s->M[t], 0);
        steps[n - 1].half = 2;
      } else
        MN_STEP(MLSYS_REMAT_OP_COMPUTE, t, b, s->M[t], 0);
      live[b] = 1;
      for (int u = V; u <= b; u++)   /* gradients read for the last time (or never read) */
        if (live[u] && glast[u] <= b) { MN_STEP(MLSYS_REMAT_OP_FREE, t, u, -1, 0); live[u] = 0; }
      for (int i = 0; i < V; i++)
        if (live[i] && !Sout[i]) { MN_STEP(MLSYS_REMAT_OP_FREE, t, i, -1, 0); live[i] = 0; }
    }
    if (n > cap - 2 * (V + N)) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step buffer overflow"); goto done; }
  }
#undef MN_STEP
  out->nsteps = n;
  out->steps = steps;
  steps = NULL;
  st = mlsys_remat_monet_plan_validate(g, sg, out, &out->peak);
  if (st != MLSYS_OK) mlsys_remat_monet_plan_free(out);
done:
  mlsys_free(steps); mlsys_free(live); mlsys_free(lastneed); mlsys_free(glast);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_plan_validate(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                       const mlsys_remat_monet_plan *p, uint64_t *peak) {
  int V, N, off, *glast = NULL, *ran = NULL;
  unsigned char *live = NULL;
  uint64_t bytes = 0, pk = 0;
  mlsys_status st = MLSYS_OK;
  if (!g || !sg || !p || (p->nsteps > 0 && !p->steps)) return mlsys_set_error(MLSYS_ERR_ARG, "monet plan: NULL argument");
  V = sg->V; N = sg->N;
  off = V - (g->dag.n - (N - V));
  live = (unsigned char *)mlsys_calloc((size_t)N, 1);
  ran = (int *)mlsys_calloc((size_t)N, sizeof(int));
  glast = mlsys__mn_grad_last(g, sg);
  if (!live || !ran || !glast) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "monet plan: out of memory"); goto done; }
  for (int k = 0; k < p->nsteps; k++) {
    const mlsys_remat_monet_step *e = &p->steps[k];
    int v = e->node;
    if (v < 0 || v >= N) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: node %d out of range", k, v); goto done; }
    if (e->op == MLSYS_REMAT_OP_FREE) {
      if (!live[v]) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d frees %d, which is not live", k, v); goto done; }
      live[v] = 0; bytes -= sg->mem[v];
      continue;
    }
    if (live[v]) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d computes %d over a live copy", k, v); goto done; }
    if (v < V) {
      const mlsys_remat_monet_impl *im;
      uint64_t now;
      if (e->impl < 0 || e->impl >= sg->impl_off[v + 1] - sg->impl_off[v]) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: node %d has no implementation %d", k, v, e->impl);
        goto done;
      }
      for (int x = sg->in_off[v]; x < sg->in_off[v + 1]; x++)
        if (!live[sg->in[x]]) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d computes %d without its input %d", k, v, sg->in[x]);
          goto done;
        }
      im = &sg->impl[sg->impl_off[v] + e->impl];
      now = sg->fixed + bytes + (e->stage == 0 ? im->workspace : im->recompute_workspace) + (e->in_place ? 0 : sg->mem[v]);
      if (e->in_place) {
        int u = sg->inplace_of[v];
        if (u < 0 || !live[u]) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: %d cannot run in place", k, v); goto done; }
        live[u] = 0; bytes -= sg->mem[u];
      }
      if (now > pk) pk = now;
    } else {
      int t = v - V + 1, np = sg->path_off[t + 1] - sg->path_off[t], q, b = sg->src[v];
      uint64_t now;
      /* ran[v]: 0 not yet, 2 done, 3 + path: the first half of a split path done */
      if (e->impl < 0 || e->impl >= np) { st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: no path %d", k, e->impl); goto done; }
      q = sg->path_off[t] + e->impl;
      if (e->half > 2 || (e->half != 0) != (sg->path_split[q] != 0)) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: backward %d path %d is %s, the step says half %d", k,
                             v, e->impl, sg->path_split[q] ? "split (halves 1, 2)" : "not split (half 0)", e->half);
        goto done;
      }
      if (ran[v] != (e->half == 2 ? 3 + e->impl : 0)) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d runs backward node %d %s", k, v,
                             e->half != 2 ? "twice" : ran[v] == 0 ? "input-grad before param-grad"
                             : ran[v] == 2 ? "twice" : "input-grad on another path than its param-grad");
        goto done;
      }
      ran[v] = e->half == 1 ? 3 + e->impl : 2;
      for (int x = sg->pdep_off[q]; x < sg->pdep_off[q + 1]; x++)
        if (!live[sg->pdep[x]] && (e->half != 2 || !sg->pdep_first[x])) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: backward %d needs x_%d, not live", k, v, sg->pdep[x]);
          goto done;
        }
      for (int x = g->dag.in_off[b]; x < g->dag.in_off[b + 1]; x++) {
        int u = g->dag.in[x] + off;
        if (u >= V && !live[u]) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: step %d: backward %d needs gradient %d, not live", k, v, u);
          goto done;
        }
      }
      now = sg->fixed + bytes + sg->path_ws[q] + (e->half == 1 ? 0 : sg->mem[v]);
      if (now > pk) pk = now;
      if (e->half == 1) continue;   /* param-grad: no output */
    }
    live[v] = 1; bytes += sg->mem[v];
  }
  for (int v = V; v < N; v++)
    if (ran[v] != 2) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "monet plan: backward node %d %s", v, ran[v] ? "runs only its param-grad half"
                           : "never runs");
      goto done;
    }
  if (peak) *peak = pk;
done:
  mlsys_free(live); mlsys_free(ran); mlsys_free(glast);
  return st;
}

/* ---- executing plans (the buffers of section 8's executor, with workspace, IntNodes and in-place steps) ---- */
static mlsys_status mlsys__mn_take(const mlsys_remat_allocator *A, uint64_t bytes, uint64_t limit,
                                   mlsys_remat_exec_stats *stats, void **ptr) {
  *ptr = NULL;
  if (limit && (bytes > limit || stats->live_bytes > limit - bytes))
    return mlsys_set_error(MLSYS_ERR_NOMEM, "%llu bytes beside %llu live, over the limit of %llu",
                           (unsigned long long)bytes, (unsigned long long)stats->live_bytes, (unsigned long long)limit);
  if (bytes) {
    mlsys_status st = A->alloc(A->ud, bytes, ptr);
    if (st == MLSYS_OK && !*ptr) st = mlsys_set_error(MLSYS_ERR_NOMEM, "the allocator returned NULL");
    if (st != MLSYS_OK) { *ptr = NULL; return st; }
    stats->allocations++;
  }
  stats->live_bytes += bytes;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_execute(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                 const mlsys_remat_monet_plan *p, mlsys_remat_monet_kernel_fn kernel,
                                                 void *ud, const mlsys_remat_exec_opts *opts,
                                                 mlsys_remat_exec_stats *stats) {
  static const mlsys_remat_allocator host = {mlsys__remat_host_alloc, mlsys__remat_host_release, NULL};
  const mlsys_remat_allocator *A = opts && opts->allocator ? opts->allocator : &host;
  const uint64_t limit = opts ? opts->limit : 0;
  mlsys_remat_exec_stats local;
  void **buf = NULL;
  uint64_t pk = 0;
  int s = 0, V, N;
  double t0;
  mlsys_status st;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->failed_step = -1;
  if (!g || !sg || !p || !kernel || !A->alloc || !A->release)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_remat_monet_execute: graph, solver graph, plan, kernel and "
                           "allocator functions are required");
  if ((st = mlsys_remat_monet_plan_validate(g, sg, p, &pk)) != MLSYS_OK) {
    mlsys_prefix_error("mlsys_remat_monet_execute: invalid plan");
    return st;
  }
  stats->plan_peak = pk - sg->fixed;
  V = sg->V; N = sg->N;
  if (!(buf = (void **)mlsys_calloc((size_t)N + 1, sizeof(void *)))) return MLSYS_ERR_NOMEM;
  t0 = mlsys_now();
  for (s = 0; s < p->nsteps; s++) {
    const mlsys_remat_monet_step *e = &p->steps[s];
    const int v = e->node, bwd = v >= V;
    mlsys_remat_monet_call c;
    void *ws = NULL;
    int q = -1;
    if (e->op == MLSYS_REMAT_OP_FREE) {
      if (buf[v]) { A->release(A->ud, buf[v], sg->mem[v]); stats->frees++; }
      buf[v] = NULL;
      stats->live_bytes -= sg->mem[v];
      continue;
    }
    memset(&c, 0, sizeof c);
    c.node = v; c.src = sg->src[v]; c.stage = e->stage; c.impl = e->impl; c.in_place = e->in_place;
    c.commit = bwd || e->stage == 0;
    c.value = buf;
    c.out_bytes = sg->mem[v];
    if (bwd) {
      q = sg->path_off[v - V + 1] + e->impl;
      c.kind = sg->path_kind[q];
      c.half = e->half;
      c.workspace_bytes = sg->path_ws[q];
      if (e->half == 1) c.out_bytes = 0;                  /* param-grad writes only parameter gradients (fixed) */
      if (e->half != 2) stats->cost += sg->path_cost[q];  /* the path's cost once, at its first call */
    } else {
      const mlsys_remat_monet_impl *im = &sg->impl[sg->impl_off[v] + e->impl];
      c.kind = sg->int_kind[v];
      c.workspace_bytes = e->stage == 0 ? im->workspace : im->recompute_workspace;
      stats->cost += e->stage == 0 ? im->cost : im->recompute_cost;
    }
    st = mlsys__mn_take(A, c.workspace_bytes, limit, stats, &ws);
    if (st == MLSYS_OK) {
      c.workspace = ws;
      if (e->in_place) {   /* the output takes over the input's buffer (validate checked it is live, same size) */
        int u = sg->inplace_of[v];
        c.output = buf[u];
        if (sg->mem[u] != sg->mem[v])
          st = mlsys_set_error(MLSYS_ERR_ARG, "in place over %d of %llu bytes, output %llu", u,
                               (unsigned long long)sg->mem[u], (unsigned long long)sg->mem[v]);
      } else {
        st = mlsys__mn_take(A, c.out_bytes, limit, stats, &c.output);
      }
    }
    if (st != MLSYS_OK) {
      if (ws) { A->release(A->ud, ws, c.workspace_bytes); stats->frees++; }
      stats->live_bytes -= ws ? c.workspace_bytes : 0;
      mlsys_prefix_error("mlsys_remat_monet_execute: step %d (stage %d, node %d)", s, e->stage, v);
      break;
    }
    if (stats->live_bytes > stats->peak_bytes) stats->peak_bytes = stats->live_bytes;
    stats->computes++;
    stats->recomputes += !c.commit;
    mlsys_clear_error();
    st = kernel(ud, &c);
    if (ws) { A->release(A->ud, ws, c.workspace_bytes); stats->frees++; }
    stats->live_bytes -= c.workspace_bytes;
    if (e->in_place) buf[sg->inplace_of[v]] = NULL;
    buf[v] = c.output;
    if (st != MLSYS_OK) {
      if (mlsys_last_status() == MLSYS_OK) mlsys_set_error(st, "returned '%s'", mlsys_status_str(st));
      mlsys_prefix_error("mlsys_remat_monet_execute: step %d (stage %d): the kernel of %s node %d%s", s, e->stage,
                         bwd ? "backward" : "forward", v, c.commit ? "" : " (recomputation)");
      break;
    }
  }
  stats->seconds = mlsys_now() - t0;
  if (st != MLSYS_OK) stats->failed_step = s;
  for (int v = 0; v < N; v++)
    if (buf[v]) { A->release(A->ud, buf[v], sg->mem[v]); stats->frees++; }
  mlsys_free(buf);
  return st;
}

MLSYS_DEF mlsys_status mlsys_remat_monet_to_checkmate(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                                      const mlsys_remat_monet_schedule *s, mlsys_remat_schedule *out) {
  int n, V, fb;
  mlsys_status st;
  if (!g || !sg || !s || !out) return mlsys_set_error(MLSYS_ERR_ARG, "monet to checkmate: NULL argument");
  memset(out, 0, sizeof *out);
  n = g->dag.n; V = sg->V;
  for (fb = 0; fb < n && g->kind[fb] != MLSYS_REMAT_B; fb++) {}
  if (fb != V || sg->N != n || s->V != V || s->T != sg->T)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "monet to checkmate: only for solver graphs without IntNodes");
  if ((st = mlsys_remat_schedule_alloc(n, out)) != MLSYS_OK) return st;
  for (int k = 0; k < n; k++) {
    int t = k < V ? 0 : k - V + 1;
    out->R[(size_t)k * n + k] = 1;
    if (k >= V) for (int i = 0; i < V; i++) out->R[(size_t)k * n + i] = s->R[t * V + i];
    for (int i = 0; i < k; i++) {
      int later = 0;   /* a user at stage ≥ k in Checkmate's order */
      for (int x = g->dag.out_off[i]; x < g->dag.out_off[i + 1]; x++) {
        int w = g->dag.out[x];
        if (w >= k && (i >= V || w < V)) later = 1;   /* gradients by liveness; forward values by forward users */
      }
      if (i >= V) out->S[(size_t)k * n + i] = later;
      else if (k < V) out->S[(size_t)k * n + i] = later || s->S[V + i];   /* forward pass: alive or stored into S[1] */
      else out->S[(size_t)k * n + i] = s->S[t * V + i];
    }
  }
  snprintf(out->method, sizeof out->method, "%s", s->method[0] ? s->method : "monet");
  snprintf(out->source, sizeof out->source, "%s", out->method);
  out->budget = s->budget;
  return mlsys_remat_evaluate(g, out);
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_REMAT_IMPLEMENTATION_DONE */
#endif /* MLSYS_REMAT_IMPLEMENTATION */
