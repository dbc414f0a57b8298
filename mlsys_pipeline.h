/* mlsys_pipeline.h — input pipelines in C, traced and tuned by their resource use (Plumber).          MIT licence.

   Implements Plumber (M. Kuchnik, A. Klimovic, J. Šimša, V. Smith, G. Amvrosiadis, "Plumber: Diagnosing and Removing
   Performance Bottlenecks in Machine Learning Data Pipelines", MLSys 2022; M. Kuchnik, PhD thesis CMU-CS-23-119, ch. 5
   and Appendix 1) and selective data augmentation (thesis ch. 3); docs/pipeline.md is the guide. Section numbers (§)
   in the comments are those of the design specification the header was written from (not shipped with it):
     - a runtime with tf.data's operators (§2.1): range, from_memory, files and TFRecord sources (disk counters, a
       token-bucket/latency throttle for slow storage), user-defined generator sources (mlsys_pipe_generator: open /
       next / close callbacks per pass, optionally a disk operator reporting its bytes), map (user C functions;
       sequential, or asynchronous with p calls in flight on a shared worker pool, ordered or not; errors fail naming
       the element or are skipped and counted), select_map, filter, shuffle, batch, prefetch, cache (memory or file),
       repeat, take, interleave; deterministic per-element RNG streams (outputs do not depend on workers or
       parallelism); clean shutdown;
     - tracing (§2.4): per operator elements in and out, own thread-CPU time (children excluded), bytes, disk bytes,
       RNG draws, elements skipped on errors (counted once per element, the first errors kept with their files), over
       windows of a time (mlsys_pipe_trace) or of a number of elements (mlsys_pipe_trace_elements: the same work on
       any machine), at two clock reads per element per operator (no_trace: none); a trace where nothing reaches the
       root fails, naming what was skipped;
     - the analysis of a window (§2.5, §3): visit ratios, per-core rates, the bottleneck, the CPU LP in closed form and
       through lp_solve, the disk bound, materialised sizes and the cache rule with the random closure, prefetch sizing,
       the piecewise fit of a parallelism sweep, the size estimator, tf.data AUTOTUNE's output-time model;
     - tuning (§3.6, §4): mlsys_pipe_tune rewrites a pipeline by Plumber's loop (LP parallelism, cache insertion,
       prefetch) or a baseline (NAIVE, HEURISTIC, AUTOTUNE hill climb, LOCAL, RANDOM_WALK) and measures it, explaining
       each decision (bottleneck, predicted and measured rates);
     - images (§7.4–7.5): magic-byte sniffing, a strict JPEG structure check, decoding with stb_image or libjpeg-turbo
       (DCT-domain downscaling), torchvision's RandomResizedCrop, flip, normalisation, as map UDFs, and the ImageNet
       training pipeline over a directory of photographs (mlsys_pipe_jpeg_pipeline) or above any source of JPEG bytes,
       such as a generator (mlsys_pipe_jpeg_pipeline_from);
     - selective augmentation (§3.9): logistic regression (Newton, Cholesky), loss and influence scores, the selection
       policies and the reweighting; select_map applies an augmentation to the selected points only.
   The `mlsys pipeline run|trace` command (cli/pipeline.c) runs the JPEG pipeline; docs/pipeline.md is the guide.

   USAGE: in exactly one .c file
       #define MLSYS_PIPELINE_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_pipeline.h"
   link: -llpsolve55 -lcolamd -ljpeg -ldl -lm -lpthread   (-ljpeg: libjpeg-turbo; MLSYS_PIPE_NO_LIBJPEG leaves it out)
   stb_image (Debian libstb-dev) is compiled into the implementation as static functions (once per translation unit,
   shared with mlsys_pcr.h's implementation).

   EXAMPLE (examples/pipeline_basics.c)
       char **paths; int64_t n;
       mlsys_pipe *p; mlsys_pipe_jpeg_desc jd = {0}; mlsys_pipe_jpeg_nodes nodes;
       mlsys_pipe_tune_desc td = {0}; mlsys_pipe_tune_result r;
       mlsys_pipe_list_images("/usr/share/doc/opencv-doc", &paths, &n);
       mlsys_pipe_create(NULL, &p);
       jd.batch = 32;
       mlsys_pipe_jpeg_pipeline(p, (const char *const *)paths, n, &jd, &nodes);   // NAIVE: every p = 1
       td.method = MLSYS_PIPE_TUNE_PLUMBER;
       mlsys_pipe_tune(p, nodes.root, &td, &r, stdout);   // trace, LP, cache, prefetch; prints why
       printf("%.1f batches/s, bottleneck %s\n", r.x_measured, r.bottleneck);
       // then: mlsys_pipe_open(p, r.root, &it); mlsys_pipe_next(it, &batch, &end); ... mlsys_pipe_close(it);

   THREADS: one thread drives an iterator; each asynchronous map has a runner thread and shares the worker pool;
   reads of a files source with parallelism > 1 run on I/O threads apart from the CPU workers; each prefetch has a
   producer thread. Knobs (mlsys_pipe_set_knob) and rewrites (insert_cache, a prefetch on top) apply at the next
   open. UDFs must be thread-safe and must not start threads of their own (their CPU would not be attributed:
   see unattributed_cores).
*/
#ifndef MLSYS_PIPELINE_H
#define MLSYS_PIPELINE_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_PIPELINE_IMPLEMENTATION
#define MLSYS_PIPELINE_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Operator kinds (tf.data semantics, spec §2.1). Disk operators read bytes from storage; sources start a chain. */
typedef enum {
  MLSYS_PIPE_OP_RANGE = 0, MLSYS_PIPE_OP_FROM_MEMORY, MLSYS_PIPE_OP_FILES, MLSYS_PIPE_OP_RECORDS, MLSYS_PIPE_OP_INTERLEAVE,
  MLSYS_PIPE_OP_MAP, MLSYS_PIPE_OP_FILTER, MLSYS_PIPE_OP_SHUFFLE, MLSYS_PIPE_OP_BATCH, MLSYS_PIPE_OP_PREFETCH,
  MLSYS_PIPE_OP_CACHE, MLSYS_PIPE_OP_REPEAT, MLSYS_PIPE_OP_TAKE,
  MLSYS_PIPE_OP_GENERATOR   /* a user-defined source (mlsys_pipe_generator); a disk operator when its desc says so */
} mlsys_pipe_op_kind;

/* One operator's counters over a window (spec §2.4) and its place in the tree. */
typedef struct {
  int kind;                 /* mlsys_pipe_op_kind */
  int parent;               /* the operator consuming this one's output; -1 for the root */
  char name[32];
  int parallel;             /* 1: its work can run on several cores (parallel map, interleave) */
  int parallelism;          /* current p (≥ 1) */
  int64_t produced;         /* C_i: elements emitted */
  int64_t consumed;         /* E_i: elements pulled from its input */
  double cpu_s;             /* τ_i: own CPU time, children excluded */
  double bytes_produced;    /* Σ output element sizes */
  double disk_bytes;        /* bytes read from storage by this operator (disk operators) */
  int64_t rng_draws;        /* > 0: its function drew random numbers: the operator is random */
  int declares_random;      /* random by declaration */
  int64_t count;            /* batch: b; take: k; repeat: c (−1 = forever); unused otherwise */
  /* sources (files, records, range, generator): how much data there is, for materialised sizes (Appendix 2). A
     generator op is analysed like records: the runtime's snapshot fills disk_bytes, files_total and the observed
     counters only for a generator with disk = 1, so one without them is a plain source of unknown size */
  int64_t files_total;      /* N_files (0: unknown → size unknown) */
  int64_t files_observed;   /* files read to the end in the window */
  double observed_bytes;    /* their total size */
  double records_per_file;  /* 0 → produced / files_observed */
  int node;                 /* the runtime's node id (snapshots of a running pipeline); 0 otherwise */
  int64_t skipped;          /* elements it dropped on an error (on_error = SKIP) */
} mlsys_pipe_op;

#define MLSYS_PIPE_SKIP_LOG 8       /* errors a snapshot keeps of the elements skipped (the first distinct ones) */
typedef struct {
  int nops;
  mlsys_pipe_op *op;
  double seconds;           /* window wall time T */
  double process_cpu_s;     /* the process's CPU time in the window (0: unknown) */
  /* Elements skipped on errors since the iterator was opened (not per window: a diff keeps the later snapshot's). A
     skip is an (operator, element seq) pair, counted once however many passes repeat it, so over the JPEG pipeline
     skipped_distinct is the number of files that failed; exact up to 65 536 pairs, a lower bound beyond. skip_log
     holds the errors of the first MLSYS_PIPE_SKIP_LOG of them in the order they happened, each naming the operator,
     the node, the seq, the file when the element came from a files source, and the cause. */
  int64_t skipped_distinct;
  int nskip_log;
  char **skip_log;
} mlsys_pipe_snapshot;

typedef struct {
  double cores;             /* n_c, the LP's CPU budget (0 → 1) */
  double mem_free_bytes;    /* for the cache rule */
  double fraction_cacheable;/* 0 → 0.9 */
  double disk_bytes_per_s;  /* W (0: no disk bound) */
  double consumer_rate;     /* the model's minibatches/s (0: unbounded) */
} mlsys_pipe_machine;

#define MLSYS_PIPE_INF 1e300  /* infinite size or rate */

typedef struct {
  double V, M, D, R, Rp, u, p_busy, x_obs, bytes_per_elem, size_bytes, n_elems;
  int stale;                /* below a cache: no steady-state cost */
  int random;               /* draws randomness itself (or is a shuffle) */
  int uncacheable;          /* random or above a random operator (the random closure, thesis L899) */
  int in_lp;                /* part of the CPU LP: not stale, τ > 0 */
} mlsys_pipe_op_report;

typedef struct {
  int nops;
  mlsys_pipe_op_report *op;
  int root, bottleneck;     /* argmin R·p over LP operators (−1: none) */
  double x_obs;             /* observed minibatches/s at the root */
  double sumD;              /* Σ D over LP operators: CPU-seconds per minibatch */
  double N;                 /* Σ τ / T: busy "customers" */
  double Nstar;             /* ΣD / D_max: the knee (§3.5) */
  double beta;              /* disk bytes per minibatch (max over disk operators) */
  double x_disk;            /* W / β (INF without a disk bound) */
  double unattributed_cores;/* process CPU / T − Σ u (0 when process CPU is unknown) */
} mlsys_pipe_analysis;

/* Derived quantities of §2.5. Errors: a cycle or two roots in the parent links, negative counters, T ≤ 0. */
MLSYS_DEF mlsys_status mlsys_pipe_analyze(const mlsys_pipe_snapshot *s, const mlsys_pipe_machine *m, mlsys_pipe_analysis *out);
MLSYS_DEF void mlsys_pipe_analysis_free(mlsys_pipe_analysis *a);

enum { MLSYS_PIPE_LP_CLOSED_FORM = 1, MLSYS_PIPE_LP_LPSOLVE = 2 };
enum { MLSYS_PIPE_BIND_CPU = 1, MLSYS_PIPE_BIND_SEQ = 2, MLSYS_PIPE_BIND_DISK = 3, MLSYS_PIPE_BIND_CONSUMER = 4 };

typedef struct {
  int nops;
  double x_cpu;             /* the LP optimum (minibatches/s) */
  double x_pred;            /* min(x_cpu, x_disk, consumer) */
  double slack_cores;       /* n_c − Σθ */
  int binding_kind;         /* MLSYS_PIPE_BIND_* */
  int binding_op;           /* the sequential operator for BIND_SEQ, else −1 */
  double *theta;            /* [nops] cores per operator (0 for operators outside the LP) */
  int *parallelism;         /* [nops] max(1, ⌈θ⌉) for parallel operators, 1 otherwise */
  int cache_after;          /* operator after which to insert cache() (−1: none) */
  int64_t prefetch;         /* prefetch buffer at the root (elements); 0: none */
  int prefetch_set;         /* 1: the root is a prefetch whose buffer is set to `prefetch` */
} mlsys_pipe_plan;

/* The CPU LP of §3.2 (θ_min = 0): closed form X* = min(min_seq R_i, n_c / ΣD) with θ = X*·D, or lp_solve. */
MLSYS_DEF mlsys_status mlsys_pipe_plan_cpu(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, const mlsys_pipe_machine *m,
                                           int method, mlsys_pipe_plan *out);
/* The cache rule of §3.4: the operator closest to the root, below every random operator, whose materialised size
   fits fraction_cacheable × free memory. Sets io->cache_after. */
MLSYS_DEF mlsys_status mlsys_pipe_plan_cache(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, const mlsys_pipe_machine *m,
                                             mlsys_pipe_plan *io);
/* Prefetch of §3.5: ⌈max(N* − N, 0)⌉ at the root. */
MLSYS_DEF mlsys_status mlsys_pipe_plan_prefetch(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, mlsys_pipe_plan *io);
MLSYS_DEF void mlsys_pipe_plan_free(mlsys_pipe_plan *p);

/* Two-piece linear fit of a source-parallelism sweep (§3.3, the authors' one-sided weighted error):
   out = {m1, b1, m2, b2, x_thresh}; *split = the number of points in the first piece. n ≥ 3. */
MLSYS_DEF mlsys_status mlsys_pipe_fit_piecewise(const double *x, const double *y, int n, double out[5], int *split);
/* Materialised size from a sample (Appendix 2): (total / observed) · Σ observed sizes. */
MLSYS_DEF double mlsys_pipe_estimate_size(double observed_bytes, int64_t files_observed, int64_t files_total);
/* tf.data AUTOTUNE's buffer wait time (model.cc ComputeWaitTime): producer time y, consumer time x, buffer n. */
MLSYS_DEF double mlsys_pipe_autotune_wait_time(double producer_time, double consumer_time, double buffer);

/* TFRecord framing (spec §2.1): u64 length, u32 masked CRC-32C of the length, data, u32 masked CRC-32C of the
   data, little-endian; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. */
MLSYS_DEF uint32_t mlsys_pipe_tfrecord_mask(uint32_t crc32c);
/* Appends one record to f. */
MLSYS_DEF mlsys_status mlsys_pipe_tfrecord_write(FILE *f, const void *data, uint64_t len);
/* Reads the record at *off of buf[0, len): MLSYS_OK with *data (pointing into buf), *dlen and *off advanced, or
   MLSYS_OK with *end = 1 when no bytes are left. Errors are MLSYS_ERR_PARSE naming the offset and the problem
   (truncated header, length CRC, truncated data, data CRC). skip_crc = 1 checks the framing only. */
MLSYS_DEF mlsys_status mlsys_pipe_tfrecord_next(const uint8_t *buf, size_t len, size_t *off, const uint8_t **data,
                                                uint64_t *dlen, int skip_crc, int *end);

/* ---- selective augmentation (thesis ch. 3, spec §3.9) ---- */
/* Binary logistic regression on features X [n×d] (row-major floats) with labels y ∈ {0,1}: minimises
   Σ w_i ℓ_i + α‖θ_{1..d}‖² with α = 1/C (bias unpenalised), by Newton's method with a Cholesky solve.
   theta has d+1 entries (the last is the bias; with no_bias it stays 0). */
typedef struct {
  double C;                 /* 0 → 10 (the authors' value) */
  double tol;               /* Newton step norm to stop at (0 → 1e-10) */
  int max_iter;             /* 0 → 100 */
  int no_bias;
  const double *weights;    /* per-row weights (NULL = 1) */
} mlsys_pipe_logreg_desc;
MLSYS_DEF mlsys_status mlsys_pipe_logreg_fit(const float *X, const uint8_t *y, int64_t n, int d, const mlsys_pipe_logreg_desc *o,
                                             double *theta);
enum { MLSYS_PIPE_SCORE_LOSS = 1, MLSYS_PIPE_SCORE_INFLUENCE = 2 };
/* Scores per training point: LOSS = ℓ(z_i; θ); INFLUENCE = |g_iᵀ H⁻¹ g_i| with g_i = (p_i − y_i) x̃_i and
   H = Σ p(1−p) x̃ x̃ᵀ + 2α diag(1,…,1,0) (Koh & Liang's leave-one-out approximation, eq. 3.1). */
MLSYS_DEF mlsys_status mlsys_pipe_aug_scores(const float *X, const uint8_t *y, int64_t n, int d, const double *theta, int kind,
                                             double alpha, int no_bias, double *scores);
enum { MLSYS_PIPE_POL_UNIFORM = 1, MLSYS_PIPE_POL_RANDOM_PROP, MLSYS_PIPE_POL_DETERMINISTIC, MLSYS_PIPE_POL_RANDOM_INV,
       MLSYS_PIPE_POL_DETERMINISTIC_INV, MLSYS_PIPE_POL_SOFTMAX };
/* The order in which points are augmented (the first k form S for a budget k; nested subsets): uniform, random
   proportional to the score (successive draws without replacement), deterministic (descending, ties by index),
   their inverses, softmax. Zero scores become min(smallest positive score, 1e-20). */
MLSYS_DEF mlsys_status mlsys_pipe_aug_order(const double *scores, int64_t n, int policy, uint64_t seed, int64_t *perm);
/* Score updating (spec §3.9, the authors' experiments.py): after the first k points of perm were augmented and the
   model refit, scores holds the n original points' new scores; out keeps perm[0, k) and orders the not-yet-augmented
   rest by the policy on their new scores (zero-score replacement and draws over the rest only). out may be perm. */
MLSYS_DEF mlsys_status mlsys_pipe_aug_reorder(const double *scores, int64_t n, const int64_t *perm, int64_t k, int policy, uint64_t seed,
                                              int64_t *out);
/* Weights: for the first k points of perm, the original and each of its n_aug copies get 1/(n_aug + 1); everyone
   else 1 (Σ = n). w_aug[i] is the weight of each copy of point i (0 when not augmented). */
MLSYS_DEF mlsys_status mlsys_pipe_aug_weights(const int64_t *perm, int64_t k, const int *n_aug_per_point, int64_t n,
                                              double *w_orig, double *w_aug);

/* ---- the pipeline runtime (spec §2.1–2.4, §7.2–7.3) ----
   Build a chain of operators on an mlsys_pipe (each builder returns the new node's id), open it at a root, pull
   elements with mlsys_pipe_next, read the per-operator counters with mlsys_pipe_snapshot_take (an
   mlsys_pipe_snapshot that mlsys_pipe_analyze accepts), close. Synchronous operators run in the caller's thread;
   an asynchronous map (parallelism > 1, or async) has a runner thread that pulls its input and keeps `parallelism`
   UDF calls running on the iterator's worker pool, with at most as many results waiting (output in sequential order
   unless nondeterministic); prefetch owns a producer thread with a bounded buffer. Interleave is
   sequential (its sub-pipelines run inline). Each UDF call gets an RNG seeded from (seed, node, element seq, epoch),
   so outputs do not depend on workers or parallelism; the runtime counts the draws it made (the operator is then
   random). All element data is owned: allocate it with mlsys_pipe_tensor_alloc, release with mlsys_pipe_elem_release.
   One thread drives an iterator; different iterators are independent. */
enum { MLSYS_PIPE_U8 = 0, MLSYS_PIPE_I32, MLSYS_PIPE_I64, MLSYS_PIPE_F32, MLSYS_PIPE_F64 };
typedef struct {
  void *data;               /* owned: mlsys_alloc'ed (mlsys_pipe_tensor_alloc) */
  size_t nbytes;
  int32_t dtype, ndim;      /* ndim ≤ 4 */
  int64_t shape[4];
} mlsys_pipe_tensor;
typedef struct {
  int32_t ncomp;            /* ≤ 4 components (e.g. image, label) */
  mlsys_pipe_tensor comp[4];
  uint64_t seq;             /* position in the sequential semantics (per epoch) */
} mlsys_pipe_elem;
/* Allocates component `comp` of e (nbytes, dtype, 1-D shape {nbytes / dtype size}; ncomp grows to comp + 1). */
MLSYS_DEF void *mlsys_pipe_tensor_alloc(mlsys_pipe_elem *e, int comp, size_t nbytes, int dtype);
MLSYS_DEF void mlsys_pipe_elem_release(mlsys_pipe_elem *e);   /* frees every component; e becomes empty */
MLSYS_DEF mlsys_status mlsys_pipe_elem_copy(const mlsys_pipe_elem *src, mlsys_pipe_elem *dst);
/* The element encoding of file caches (components with dtype, shape and bytes, and seq); decode checks every size. */
MLSYS_DEF mlsys_status mlsys_pipe_elem_encode(const mlsys_pipe_elem *e, uint8_t **buf, size_t *len);
MLSYS_DEF mlsys_status mlsys_pipe_elem_decode(const uint8_t *buf, size_t len, mlsys_pipe_elem *e);

/* The RNG a UDF gets: draw from &rng->r with mlsys_rng_*; `draws` is filled in by the runtime after the call. */
typedef struct { mlsys_rng r; uint64_t draws; } mlsys_pipe_rng;
/* map: fill *out (zeroed on entry; its seq is set for you) from *in; return 0, or nonzero for an error. */
typedef int (*mlsys_pipe_map_fn)(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);
/* filter: 1 keep, 0 drop, negative error. */
typedef int (*mlsys_pipe_pred_fn)(void *user, const mlsys_pipe_elem *in, mlsys_pipe_rng *rng);
typedef struct mlsys_pipe mlsys_pipe;
typedef struct mlsys_pipe_iter mlsys_pipe_iter;
/* interleave: build a sub-pipeline for one input element on `sub` (a fresh pipe) and return its root; 0 or nonzero. */
typedef int (*mlsys_pipe_open_fn)(void *user, const mlsys_pipe_elem *in, mlsys_pipe *sub, int *sub_root);

typedef struct {
  int workers;              /* worker pool size (0 → online CPUs) */
  uint64_t seed;            /* global seed of every UDF and shuffle stream */
  int no_trace;             /* 1: no CPU clocks read (element counts only): to measure what tracing costs */
} mlsys_pipe_desc;
enum { MLSYS_PIPE_ON_ERROR_FAIL = 0, MLSYS_PIPE_ON_ERROR_SKIP = 1 };
typedef struct {
  mlsys_pipe_map_fn fn;
  void *user;
  int parallelism;          /* in-flight calls (0 → 1; 1 runs inline in the caller's thread) */
  int nondeterministic;     /* 1: emit in completion order */
  int declares_random;
  int on_error;             /* MLSYS_PIPE_ON_ERROR_* */
  const char *name;         /* for snapshots and errors (NULL → "map") */
  int sequential;           /* 1: the function keeps state across calls; never run in parallel (outside the LP's
                               parallel set, like tf.data's sequential ops) */
  int async;                /* 1: run on the worker pool even at parallelism 1 (tf.data's ParallelMapDataset with one
                               call in flight: the consumer's thread does not run the function). Tuners set it. */
} mlsys_pipe_map_desc;

MLSYS_DEF mlsys_status mlsys_pipe_create(const mlsys_pipe_desc *d /* NULL: defaults */, mlsys_pipe **out);
MLSYS_DEF void mlsys_pipe_destroy(mlsys_pipe *p);   /* close its iterators first */
MLSYS_DEF mlsys_status mlsys_pipe_range(mlsys_pipe *p, int64_t n, int *out);   /* elements 0..n−1, one int64 each */
MLSYS_DEF mlsys_status mlsys_pipe_from_memory(mlsys_pipe *p, const mlsys_pipe_elem *elems, int64_t n, int *out); /* copied */
MLSYS_DEF mlsys_status mlsys_pipe_map(mlsys_pipe *p, int in, const mlsys_pipe_map_desc *d, int *out);
MLSYS_DEF mlsys_status mlsys_pipe_filter(mlsys_pipe *p, int in, mlsys_pipe_pred_fn fn, void *user, int *out);
/* shuffle: a buffer of `buffer` elements, uniform slot per output; stream (seed, node, epoch or 0). */
MLSYS_DEF mlsys_status mlsys_pipe_shuffle(mlsys_pipe *p, int in, int64_t buffer, int reshuffle_each_epoch, int *out);
/* batch: stacks b elements of equal component sizes into one (leading dimension b; the last may be shorter). */
MLSYS_DEF mlsys_status mlsys_pipe_batch(mlsys_pipe *p, int in, int64_t b, int drop_remainder, int *out);
/* prefetch: a producer thread filling a buffer of k elements; k = 0 is a pass-through (no thread: NAIVE). */
MLSYS_DEF mlsys_status mlsys_pipe_prefetch(mlsys_pipe *p, int in, int64_t k, int *out);
MLSYS_DEF mlsys_status mlsys_pipe_repeat(mlsys_pipe *p, int in, int64_t count /* −1: forever */, int *out);
MLSYS_DEF mlsys_status mlsys_pipe_take(mlsys_pipe *p, int in, int64_t k, int *out);
/* interleave (sequential): `block` elements round-robin from `cycle` open sub-pipelines (tf.data order). */
MLSYS_DEF mlsys_status mlsys_pipe_interleave(mlsys_pipe *p, int in, mlsys_pipe_open_fn fn, void *user, int cycle, int block,
                                             int *out);
MLSYS_DEF mlsys_status mlsys_pipe_set_name(mlsys_pipe *p, int node, const char *name);

/* ---- storage: throttles, files, TFRecord files, caches (spec §2.1, §7.2) ---- */
typedef struct mlsys_pipe_throttle mlsys_pipe_throttle;
/* A token bucket shared by every reader it is given (the spec's slow-storage hooks, §7.6 #16): a read of k bytes takes
   k tokens, refilled at bytes_per_s (0: no rate limit) up to bucket_bytes (0 → 64 KiB), and completes no earlier than
   latency_s after it was issued (the latency overlaps the transfer). Thread-safe; destroy after the iterators. */
MLSYS_DEF mlsys_status mlsys_pipe_throttle_create(double bytes_per_s, double bucket_bytes, double latency_s, mlsys_pipe_throttle **out);
MLSYS_DEF void mlsys_pipe_throttle_destroy(mlsys_pipe_throttle *t);
/* What a throttle has served so far: the files read through it, their bytes, and the most file reads that were in
   flight at once (a read is in flight from its issue to the end of its latency): whether parallel reads overlap is a
   count, not a speed, so a test can check it on a loaded machine. */
typedef struct { int64_t reads; double bytes; int max_in_flight; } mlsys_pipe_throttle_stats;
MLSYS_DEF void mlsys_pipe_throttle_get_stats(mlsys_pipe_throttle *t, mlsys_pipe_throttle_stats *out);
typedef struct {
  mlsys_pipe_throttle *throttle;  /* NULL: full speed */
  int parallelism;          /* files: reads in flight on the worker pool (0 → 1), ordered */
  int on_error;             /* files: an unreadable file; records: a damaged file (the rest of it is skipped) */
  int skip_crc;             /* records: check the framing only */
  const char *name;
} mlsys_pipe_source_desc;
/* files: one element per file, component 0 = its bytes (U8), component 1 = its index in paths (I64 scalar). A disk
   operator: counts bytes read and files seen, for the disk bound (§3.3) and the size estimate (Appendix 2). */
MLSYS_DEF mlsys_status mlsys_pipe_files(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_source_desc *d, int *out);
/* records: the TFRecord files in order, one element per record (component 0, U8); framing and CRCs checked, damage
   named with the file, record and byte offset. A disk operator. */
MLSYS_DEF mlsys_status mlsys_pipe_records(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_source_desc *d, int *out);
/* generator: a user-defined source (e.g. mlsys_pcr.h's record reader). It runs synchronously in the thread that pulls
   it (like range): each pull calls next once (again after a skipped error), and elements get seq = 0, 1, 2, ... per
   pass (a call that fails uses up its seq, as a skipped file does). Counted like a source in snapshots (produced,
   cpu_s, bytes_produced); with disk = 1 it is a disk operator: disk_bytes = Σ io.disk_bytes, files_total =
   units_total, files_observed / observed_bytes = Σ io.units_done / io.units_bytes, so the analysis treats it exactly
   like records (the disk bound β of §3.3, the materialised-size estimate of Appendix 2); without disk it is a plain
   source of unknown size. It has no knobs and is never parallelised. */
typedef struct {
  double disk_bytes;        /* bytes this call read from storage (disk operators) */
  int64_t units_done;       /* files/records finished by this call (for the materialised-size estimate, Appendix 2) */
  double units_bytes;       /* their total size in bytes */
} mlsys_pipe_gen_io;
typedef struct {
  /* at every (re)start of a pass (epoch 0, 1, ... as the runtime counts passes under a repeat); *state goes to next/close */
  int (*open)(void *user, uint64_t epoch, void **state);
  /* fill *out (zeroed on entry) with one element, or set *end = 1; *io is zeroed on entry. Return 0, or nonzero (an
     mlsys_status; the detail from mlsys_set_error names the problem) */
  int (*next)(void *user, void *state, mlsys_pipe_elem *out, int *end, mlsys_pipe_gen_io *io);
  void (*close)(void *user, void *state);   /* may be NULL; called at restart, at close and after the end */
  void *user;
  int disk;                 /* 1: a disk operator (its bytes count for the disk bound §3.3 and size estimates) */
  int64_t units_total;      /* files/records in one pass (0: unknown) */
  int on_error;             /* MLSYS_PIPE_ON_ERROR_FAIL (error names node and seq) or _SKIP (counted; next is called again) */
  const char *name;         /* NULL → "generator" */
  void (*destroy)(void *user);  /* may be NULL; called once by mlsys_pipe_destroy (the pipe then owns user) */
} mlsys_pipe_generator_desc;
/* Adds a generator node (the desc is copied; user must outlive the iterators). open fails an open (mlsys_pipe_open, or
   the repeat restarting it) naming the node and the epoch; next fails as on_error says: FAIL → the error names the
   node and the seq, with the generator's own detail ("pipeline: generator 'pcr' (node 0) failed on element seq 3
   (returned 5): ..."), SKIP → counted in mlsys_pipe_skipped. close, when given, is called once per successful open:
   after the end of the pass, at a restart, or at mlsys_pipe_close. destroy, when given, is called with user once, by
   mlsys_pipe_destroy; when mlsys_pipe_generator fails it is not called (user stays the caller's). Errors: MLSYS_ERR_ARG
   (no open or next function, on_error not FAIL or SKIP, units_total < 0, disk not 0 or 1). */
MLSYS_DEF mlsys_status mlsys_pipe_generator(mlsys_pipe *p, const mlsys_pipe_generator_desc *d, int *out);
/* cache: the first complete pass goes through and is kept; later passes (repeat) replay it and the input does no work
   (its operators are then "stale", §2.5). path NULL: in memory. Otherwise elements go to a file (TFRecord framing of a
   small element encoding), renamed to `path` when the pass completes; a complete file found at open is replayed
   without running the input (tf.data's file cache). An incomplete pass is discarded. */
MLSYS_DEF mlsys_status mlsys_pipe_cache(mlsys_pipe *p, int in, const char *path, int *out);
/* select_map (thesis ch. 3, spec §7.2): map whose function runs only on elements with selected[seq % n] != 0; the
   others pass through unchanged (copied). selected is copied. */
MLSYS_DEF mlsys_status mlsys_pipe_select_map(mlsys_pipe *p, int in, const uint8_t *selected, int64_t n, const mlsys_pipe_map_desc *d,
                                             int *out);
/* Knobs, read at the next open: PARALLELISM of a map or files node (≥ 1), BUFFER of a prefetch (≥ 0; 0 = pass-through,
   no thread) or shuffle (≥ 1). */
enum { MLSYS_PIPE_KNOB_PARALLELISM = 1, MLSYS_PIPE_KNOB_BUFFER = 2, MLSYS_PIPE_KNOB_ASYNC = 3 /* map/files: 0 or 1 */ };
MLSYS_DEF mlsys_status mlsys_pipe_set_knob(mlsys_pipe *p, int node, int knob, int64_t value);
MLSYS_DEF mlsys_status mlsys_pipe_get_knob(const mlsys_pipe *p, int node, int knob, int64_t *value);
/* Inserts a cache right above node `after`: every node that read from `after` now reads from the cache. */
MLSYS_DEF mlsys_status mlsys_pipe_insert_cache(mlsys_pipe *p, int after, const char *path, int *out);
/* The number of nodes, and a node's kind and input (−1 for sources). */
MLSYS_DEF int mlsys_pipe_nodes(const mlsys_pipe *p);
MLSYS_DEF mlsys_status mlsys_pipe_node_info(const mlsys_pipe *p, int node, int *kind, int *in, const char **name);
/* "range", "files", "map", ... for an mlsys_pipe_op_kind. */
MLSYS_DEF const char *mlsys_pipe_kind_name(int kind);

/* Starts the chain below `root` (threads start here; the pipe must outlive the iterator). */
MLSYS_DEF mlsys_status mlsys_pipe_open(mlsys_pipe *p, int root, mlsys_pipe_iter **out);
/* MLSYS_OK with *out filled (release it), or MLSYS_OK with *end = 1, or an error whose detail names the operator
   and the element's seq. After an error or the end, next keeps returning the same. */
MLSYS_DEF mlsys_status mlsys_pipe_next(mlsys_pipe_iter *it, mlsys_pipe_elem *out, int *end);
/* Stops and joins every thread (in-flight UDF calls finish first), frees buffered elements. NULL is fine. */
MLSYS_DEF void mlsys_pipe_close(mlsys_pipe_iter *it);
/* Elements skipped by on_error = SKIP at a node (0 when it is not in the iterator). */
MLSYS_DEF int64_t mlsys_pipe_skipped(mlsys_pipe_iter *it, int node);

/* Counters since open (§2.4), root first: op[0] is the root, op[i].parent = i − 1 (the chain); names are the nodes'
   names. seconds = wall time since open, process_cpu_s = the process's CPU time since open. Thread-safe against the
   running pipeline. Free with mlsys_pipe_snapshot_free. */
MLSYS_DEF mlsys_status mlsys_pipe_snapshot_take(mlsys_pipe_iter *it, mlsys_pipe_snapshot *out);
/* The window b − a (same iterator, a taken first): counters, seconds and process CPU subtracted. */
MLSYS_DEF mlsys_status mlsys_pipe_snapshot_diff(const mlsys_pipe_snapshot *a, const mlsys_pipe_snapshot *b, mlsys_pipe_snapshot *win);
MLSYS_DEF void mlsys_pipe_snapshot_free(mlsys_pipe_snapshot *s);

/* ---- tracing windows and tuning (spec §3.6, §3.8, §4) ---- */
/* Opens the pipe at root, pulls for warmup_s (and until every cache in the chain is complete, at most 120 s) without
   counting, then for `seconds`, and returns that window (a finite pipeline that ends earlier gives a shorter window;
   one that ends during the warm-up is measured from the open). *elems = root elements in the window. A pipeline that
   ends before any element reaches the root is an error, not an empty window: when elements were skipped on errors
   (on_error = SKIP: e.g. every image of the JPEG pipeline failed to decode) it has the first error's status and names
   the first skipped elements (file, cause) and how many there were; otherwise MLSYS_ERR_ARG (an empty input, or fewer
   elements than one batch with drop_remainder). Elements skipped in a window that did produce are in the snapshot
   (skipped, skipped_distinct, skip_log). */
MLSYS_DEF mlsys_status mlsys_pipe_trace(mlsys_pipe *p, int root, double seconds, double warmup_s, mlsys_pipe_snapshot *win, int64_t *elems);
/* The same, with the window bounded by work instead of time: pulls warmup_elements root elements (≥ 0; and until every
   cache in the chain is complete, with the same 120 s guard against one that never completes) without counting, then
   `elements` (≥ 1; fewer when the pipeline ends first). How much every operator did in the window is then fixed by the
   pipeline, not by the machine's speed or load (a synchronous chain's counters are exactly reproducible); the window's
   seconds, and so its rates, are still measured. Tests and comparisons across machines use this one. */
MLSYS_DEF mlsys_status mlsys_pipe_trace_elements(mlsys_pipe *p, int root, int64_t elements, int64_t warmup_elements, mlsys_pipe_snapshot *win,
                                                 int64_t *elems);
/* The machine this process sees: online CPUs and MemAvailable (for the cache rule). */
MLSYS_DEF void mlsys_pipe_machine_detect(mlsys_pipe_machine *m);
/* The per-operator rate table of a window (operator, kind, p, elements, R, R·p, cores, bottleneck/random/stale) and
   the window's X_obs and process CPU. */
MLSYS_DEF void mlsys_pipe_print_rates(FILE *f, const mlsys_pipe_snapshot *w, const mlsys_pipe_analysis *a);

enum { MLSYS_PIPE_TUNE_PLUMBER = 0, MLSYS_PIPE_TUNE_NAIVE, MLSYS_PIPE_TUNE_HEURISTIC, MLSYS_PIPE_TUNE_AUTOTUNE, MLSYS_PIPE_TUNE_LOCAL,
       MLSYS_PIPE_TUNE_RANDOM_WALK };
typedef struct {
  int method;               /* MLSYS_PIPE_TUNE_* */
  double trace_seconds;     /* per tracing window (0 → 3) */
  double warmup_seconds;    /* (0 → 0.5) */
  int64_t trace_elements;   /* > 0: every window (tuning and the final measurement) is this many root elements instead
                               of trace_seconds (mlsys_pipe_trace_elements: the same work on any machine) */
  int64_t warmup_elements;  /* with trace_elements: root elements pulled before each window (0 → ⌈trace_elements / 4⌉) */
  int passes;               /* Plumber LP passes (0 → 2); AUTOTUNE rounds (0 → 2); LOCAL / RANDOM_WALK steps (0 → 4) */
  int no_cache, no_prefetch;/* Plumber: skip the cache rule (PLUMBER-NOCACHE) / the prefetch pass */
  const char *cache_path;   /* Plumber's inserted cache: NULL = memory */
  int no_measure;           /* 1: skip the final measurement window */
  uint64_t seed;            /* RANDOM_WALK */
  mlsys_pipe_machine machine; /* cores 0 → online CPUs; mem_free_bytes 0 → MemAvailable */
} mlsys_pipe_tune_desc;
typedef struct {
  int root;                 /* the root to open now: a prefetch may have been added on top of the old one */
  int cache_node;           /* the cache Plumber inserted (−1: none) */
  int cache_after;          /* the node it sits above (−1) */
  double x_measured;        /* minibatches/s of the final configuration (final window) */
  double x_pred;            /* Plumber's bound for it: min(LP at machine cores, disk, consumer) */
  double x_hat;             /* the same LP with the cores the process actually got (c = process CPU / wall) */
  double cores_used;        /* c */
  int bottleneck_node;      /* node id of argmin R·p in the final window (−1) */
  char bottleneck[32];
  mlsys_pipe_snapshot last; /* the final window */
} mlsys_pipe_tune_result;
/* Configures the pipe (knobs, an inserted cache, a prefetch on top) by one of the methods of §4, then measures it.
   PLUMBER: trace → analyse → CPU LP → parallelism p_i = max(1, ⌈θ_i⌉), cache rule, re-trace, LP, prefetch at the root
   (§3.6). NAIVE: every p = 1, prefetch buffers 0. HEURISTIC: every p and prefetch buffer = cores. AUTOTUNE: tf.data's
   output-time model from traced per-element times and its hill climb (§3.8). LOCAL: each step gives the remaining
   cores to the bottleneck. RANDOM_WALK: each step +1 on a random parallel operator. Every decision is explained on
   `log` (NULL: quiet). Free the result with mlsys_pipe_tune_result_free. */
MLSYS_DEF mlsys_status mlsys_pipe_tune(mlsys_pipe *p, int root, const mlsys_pipe_tune_desc *d, mlsys_pipe_tune_result *out, FILE *log);
MLSYS_DEF void mlsys_pipe_tune_result_free(mlsys_pipe_tune_result *r);
MLSYS_DEF const char *mlsys_pipe_tune_name(int method);
/* The AUTOTUNE model alone (§3.8): from a window's per-element times, hill-climb the parallelism of parallel operators
   (1..cpu_budget) and prefetch buffers (1..64) of the chain; par[i] / buf[i] indexed like the snapshot's ops.
   *out_time = the model's output time per root element (s) at the result. */
MLSYS_DEF mlsys_status mlsys_pipe_autotune_climb(const mlsys_pipe_snapshot *w, double cpu_budget, double ram_budget, int *par, int *buf,
                                                 double *out_time);

/* ---- images: sniffing, JPEG checking and decoding, augmentation, file listing (spec §7.4–7.6) ----
   The real-data workload of the pipeline (spec §7.5: the JPEG photos Debian ships): list the files, read their bytes,
   decode them to interleaved RGB8 (height × width × 3, rows top to bottom) with stb_image or libjpeg-turbo, then the
   ImageNet training augmentation (torchvision RandomResizedCrop, horizontal flip, normalisation). Each step is also a
   map UDF (mlsys_pipe_udf_*) so the runtime traces it as an operator. Link -ljpeg (or build with
   MLSYS_PIPE_NO_LIBJPEG, which makes the libjpeg decoder MLSYS_ERR_UNSUPPORTED). stb_image is compiled into the
   implementation as static functions (JPEG and PNG only), once per translation unit: mlsys_pcr.h's implementation
   shares it, in either order; a translation unit that includes stb_image.h itself before them must not also hold
   these implementations. */

/* Container formats told apart by their magic bytes (file names lie: opencv-doc ships PNGs named .jpg, §7.5). The same
   values as mlsys_common.h's MLSYS_IMG_*; the sniffer and the JPEG structure check live there (section 8, shared
   with mlsys_pcr.h), and these are thin wrappers. */
enum { MLSYS_PIPE_IMG_UNKNOWN = MLSYS_IMG_UNKNOWN, MLSYS_PIPE_IMG_JPEG = MLSYS_IMG_JPEG, MLSYS_PIPE_IMG_PNG = MLSYS_IMG_PNG,
       MLSYS_PIPE_IMG_GIF = MLSYS_IMG_GIF, MLSYS_PIPE_IMG_BMP = MLSYS_IMG_BMP, MLSYS_PIPE_IMG_WEBP = MLSYS_IMG_WEBP };
/* The format of buf[0, n) from its first bytes; MLSYS_PIPE_IMG_UNKNOWN when none matches (mlsys_image_sniff). */
MLSYS_DEF int mlsys_pipe_image_sniff(const uint8_t *buf, size_t n);
/* "JPEG", "PNG", "GIF", "BMP", "WebP" or "unknown" (mlsys_image_format_name). */
MLSYS_DEF const char *mlsys_pipe_image_format_name(int fmt);

/* What the strict structure check learns about a JPEG: width, height, components, precision, sof, nscans,
   adobe_transform, eoi, first_sos, last_scan_end (mlsys_common.h's mlsys_jpeg_info). */
typedef mlsys_jpeg_info mlsys_pipe_jpeg_info;
/* mlsys_jpeg_check(buf, n, info, NULL, 0): walks the marker segments of buf[0, n): SOI; segments whose lengths stay
   inside the buffer; Huffman tables (DHT) of at most 256 codes each (stb_image 2.27, as Debian 12 ships it, overflows
   on more); one frame header (SOF) with non-zero sizes before the first scan (SOS); the entropy-coded data of every
   scan; then EOI. Decoders pad a truncated scan with zeros and return a grey-bottomed image, so this is what makes
   truncation an error (spec §7.6 test 18). info may be NULL. Errors: MLSYS_ERR_PARSE naming the problem and the byte
   offset, e.g. "not a JPEG: PNG data", "truncated: no EOI marker after the scan data (file ends at byte 400)",
   "truncated: segment APP1 at byte 2 (length 5000) runs past the end of the data (byte 400)", "expected a marker at
   byte 84 after the DQT at byte 20, found 0x3A". */
MLSYS_DEF mlsys_status mlsys_pipe_jpeg_check(const uint8_t *buf, size_t n, mlsys_pipe_jpeg_info *info);

enum { MLSYS_PIPE_DEC_STB = 1, MLSYS_PIPE_DEC_LIBJPEG = 2 };
typedef struct {
  int decoder;              /* MLSYS_PIPE_DEC_* (0 → stb_image) */
  int scale_denom;          /* 1, 2, 4 or 8 (0 → 1): output ⌈w/d⌉ × ⌈h/d⌉. libjpeg-turbo scales in the DCT domain
                               (the "fused decode + resize" of §7.4, cheaper than decoding at full size); stb_image has
                               no such mode and averages d × d boxes of the full-size image instead */
  int accept_png;           /* 1: stb_image also decodes PNG data (the .jpg files that are PNGs; chunks checked, so a
                               truncated PNG fails too); libjpeg never does */
  int64_t max_pixels;       /* larger frames are refused before decoding (0 → 2^26 = 64 Mpixel) */
} mlsys_pipe_decode_desc;
/* Decodes buf[0, n) to RGB8 (gray is replicated; *rgb is ⌈h/d⌉ × ⌈w/d⌉ × 3 bytes from mlsys_alloc, free it with
   mlsys_free). JPEG data passes mlsys_pipe_jpeg_check first, so both decoders reject the same damaged files. d may be
   NULL (defaults). Errors: MLSYS_ERR_PARSE (the check's message, or the decoder's: "libjpeg: Corrupt JPEG data: ...",
   "stb_image: ..."; libjpeg warnings count as errors), MLSYS_ERR_UNSUPPORTED (CMYK/YCCK JPEGs; a decoder that
   refuses the coding, e.g. stb_image and arithmetic coding; the libjpeg decoder in an MLSYS_PIPE_NO_LIBJPEG build),
   MLSYS_ERR_TOO_BIG (over max_pixels), MLSYS_ERR_ARG (bad options), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_pipe_jpeg_decode(const uint8_t *buf, size_t n, const mlsys_pipe_decode_desc *d, uint8_t **rgb,
                                              int *w, int *h);

/* torchvision's RandomResizedCrop parameters (zero fields → defaults). */
typedef struct {
  int size;                 /* output side (0 → 224) */
  double scale_lo, scale_hi;/* crop area / image area (both 0 → 0.08, 1) */
  double ratio_lo, ratio_hi;/* crop width / height (both 0 → 3/4, 4/3) */
} mlsys_pipe_crop_desc;
/* RandomResizedCrop.get_params exactly (torchvision transforms.py): up to 10 tries of area = w·h·U(scale),
   ratio = exp(U(ln ratio_lo, ln ratio_hi)), cw = round(√(area·ratio)), ch = round(√(area/ratio)) (round half to even,
   as Python), accepted when 0 < cw ≤ w and 0 < ch ≤ h, then y = randint(0, h − ch) and x = randint(0, w − cw) in that
   order; otherwise the centre crop of the whole image clamped to the ratio range. box = {x, y, cw, ch}; *fallback
   (may be NULL) = 1 when the centre crop was taken. d may be NULL. Errors: MLSYS_ERR_ARG (w, h ≤ 0; scale_lo < 0,
   scale_hi ≤ 0 or lo > hi; ratio_lo ≤ 0 or lo > hi; size outside 1..32768). */
MLSYS_DEF mlsys_status mlsys_pipe_rrc_box(int w, int h, const mlsys_pipe_crop_desc *d, mlsys_rng *r, int box[4], int *fallback);
/* Resizes the box (x, y, cw, ch) of the RGB8 image src (sw × sh) to dst (dw × dh × 3): bilinear with half-pixel
   centres (align_corners = False, as torchvision/PyTorch and OpenCV), source coordinates clamped to the box, rounded
   to nearest. Errors: MLSYS_ERR_ARG (a size ≤ 0, the box not inside the image), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_pipe_resize_bilinear(const uint8_t *src, int sw, int sh, int x, int y, int cw, int ch, uint8_t *dst,
                                                  int dw, int dh);
/* Mirrors the RGB8 image left–right in place. */
MLSYS_DEF void mlsys_pipe_hflip(uint8_t *img, int w, int h);

typedef struct {
  double mean[3], std[3];   /* per channel on the [0, 1] scale (all std 0 → ImageNet: .485 .456 .406 / .229 .224 .225) */
} mlsys_pipe_norm_desc;
/* dst[i] = (src[i] / 255 − mean[c]) / std[c] for npixels RGB8 pixels (float32, same layout; exact to float
   rounding of the double expression). d may be NULL. Errors: MLSYS_ERR_ARG (npixels < 0, a std ≤ 0). */
MLSYS_DEF mlsys_status mlsys_pipe_normalize(const uint8_t *src, int64_t npixels, const mlsys_pipe_norm_desc *d, float *dst);

/* Map UDFs (mlsys_pipe_map_fn; thread-safe). Component 0 is the image, every further component (a label, ...) is
   copied through unchanged. Images are U8 tensors of shape {h, w, 3}. On failure they set the error detail (naming the
   UDF and the problem) and return its mlsys_status.
   decode: user = const mlsys_pipe_decode_desc * (NULL: defaults); component 0 = the file's bytes (U8). */
MLSYS_DEF int mlsys_pipe_udf_decode(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);
/* random_resized_crop: user = const mlsys_pipe_crop_desc * (NULL: defaults); the box is drawn from rng->r; the output
   is {size, size, 3}. */
MLSYS_DEF int mlsys_pipe_udf_random_resized_crop(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);
/* flip: user unused; draws one uniform from rng->r on every call (so the operator is always seen as random) and
   mirrors when it is < 0.5. */
MLSYS_DEF int mlsys_pipe_udf_flip(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);
/* normalize: user = const mlsys_pipe_norm_desc * (NULL: ImageNet); output F32 {h, w, 3}. */
MLSYS_DEF int mlsys_pipe_udf_normalize(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);

/* The fused variant (one operator instead of three, for Plumber's comparisons): decode, random-resized-crop, flip,
   with the same draws in the same order as the crop UDF followed by the flip UDF on one RNG. */
typedef struct {
  mlsys_pipe_decode_desc decode;
  mlsys_pipe_crop_desc crop;
  int auto_scale;           /* 1 (libjpeg decoder, JPEG input): draw the box on the full-size frame, then decode at the
                               largest DCT scale 1/d (d ≤ 8) that leaves the box at least crop.size on both sides, and
                               crop the scaled box (decode.scale_denom is then ignored) */
} mlsys_pipe_decode_crop_flip_desc;
/* user = const mlsys_pipe_decode_crop_flip_desc * (NULL: defaults); component 0 = the file's bytes. */
MLSYS_DEF int mlsys_pipe_udf_decode_crop_flip(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng);

/* Every regular file below dir (recursively) whose name ends in .jpg or .jpeg (any case), sorted by strcmp of the
   path "dir/sub/name". Symbolic links to files are followed (dangling ones skipped); symbolic links to directories are
   not entered (no cycles; wallpaper packages link one image under many names, §7.5); a file reached by several paths
   (symbolic or hard links: the same device and inode) is listed once, under its first path in that order. Free with
   mlsys_pipe_paths_free. No match is not an error (*n = 0). Errors: MLSYS_ERR_IO naming the directory that cannot be
   opened or read or the entry that cannot be stat'ed (dir itself missing included), MLSYS_ERR_NOMEM. Read a file's
   bytes with mlsys_read_file. */
MLSYS_DEF mlsys_status mlsys_pipe_list_images(const char *dir, char ***paths, int64_t *n);
MLSYS_DEF void mlsys_pipe_paths_free(char **paths, int64_t n);

/* ---- the JPEG training pipeline (spec §7.5, §7.6 #17–20) ----
   files → decode → repeat → random-resized-crop → flip → normalize → batch → prefetch (the ImageNet training input
   pipeline of tf.data / torchvision, Fig. 2.1), or with decode, crop and flip fused into one operator. Decoded images
   sit below the repeat, so Plumber's cache rule can keep them (or the raw files) across epochs; everything above the
   crop is random and never cached. Knobs start NAIVE: every parallelism 1, prefetch 0. */
typedef struct {
  int batch;                /* 0 → 32 */
  int size;                 /* crop side (0 → 224) */
  int decoder;              /* MLSYS_PIPE_DEC_* (0 → libjpeg-turbo, the faster one) */
  int64_t epochs;           /* passes over the files (0 → forever) */
  int fused;                /* 1: one decode_crop_flip operator (with DCT-domain downscaling) instead of three */
  int no_normalize;         /* 1: batches of U8 crops instead of F32 normalised ones */
  int fail_on_error;        /* 1: an unreadable or undecodable file fails the pipeline (default: skipped, counted) */
  int drop_remainder;
  mlsys_pipe_throttle *throttle;  /* slow-storage emulation for the file reads (NULL: none) */
} mlsys_pipe_jpeg_desc;
typedef struct { int files, decode, repeat, crop, flip, normalize, batch, root; } mlsys_pipe_jpeg_nodes;   /* −1: absent */
/* Builds the pipeline on p over paths (copied); the descs the UDFs use live in p (until mlsys_pipe_destroy). It is
   mlsys_pipe_files (named "files"; throttle and fail_on_error as d says) followed by mlsys_pipe_jpeg_pipeline_from. */
MLSYS_DEF mlsys_status mlsys_pipe_jpeg_pipeline(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_jpeg_desc *d,
                                                mlsys_pipe_jpeg_nodes *out);
/* The same chain (decode → repeat → crop → flip → normalize → batch → prefetch, or the fused variant) above an existing
   node `source` of p whose elements carry JPEG bytes (U8) in component 0; further components (a label, an index) are
   carried through to the batches. out->files = source. Over a source that yields the same elements with the same seq
   as mlsys_pipe_files would (bytes, then the index as an I64 scalar), with the same node ids and seed, the batches are
   the same bytes as mlsys_pipe_jpeg_pipeline's. d->throttle is not used (the source reads on its own); fail_on_error
   sets the decode operator's policy only (the source has its own). Errors: MLSYS_ERR_ARG (no pipe or nodes struct,
   source not a node of p, bad sizes), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_pipe_jpeg_pipeline_from(mlsys_pipe *p, int source, const mlsys_pipe_jpeg_desc *d, mlsys_pipe_jpeg_nodes *out);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PIPELINE_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_PIPELINE_IMPLEMENTATION
#ifndef MLSYS_PIPELINE_IMPLEMENTATION_DONE
#define MLSYS_PIPELINE_IMPLEMENTATION_DONE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Disk operators read from storage; a generator is one when its desc says so, and its snapshot then carries the disk
   counters (without disk = 1 they are zero, so treating the kind as disk here changes nothing for it). */
static int mlsys__pipe_is_disk(int kind) {
  return kind == MLSYS_PIPE_OP_RECORDS || kind == MLSYS_PIPE_OP_FILES || kind == MLSYS_PIPE_OP_GENERATOR;
}
static int mlsys__pipe_is_source(int kind) {
  return kind == MLSYS_PIPE_OP_RANGE || kind == MLSYS_PIPE_OP_FROM_MEMORY || kind == MLSYS_PIPE_OP_FILES ||
         kind == MLSYS_PIPE_OP_RECORDS || kind == MLSYS_PIPE_OP_GENERATOR;
}

MLSYS_DEF void mlsys_pipe_analysis_free(mlsys_pipe_analysis *a) {
  if (!a) return;
  mlsys_free(a->op);
  memset(a, 0, sizeof *a);
}

/* Order operators root first (parents before children); fails on cycles, dangling parents or several roots. */
static mlsys_status mlsys__pipe_order(const mlsys_pipe_snapshot *s, int *order, int *root) {
  int n = s->nops, i, k = 0, r = -1;
  int *done = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  if (!done) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    int p = s->op[i].parent;
    if (p == -1) {
      if (r >= 0) { mlsys_free(done); return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: operators %d and %d are both roots (parent -1)", r, i); }
      r = i;
    } else if (p < 0 || p >= n || p == i) {
      mlsys_free(done);
      return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: operator %d (%s) has parent %d, not an operator of this snapshot", i, s->op[i].name, p);
    }
  }
  if (r < 0) { mlsys_free(done); return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: no root (every operator has a parent: a cycle)"); }
  order[k++] = r; done[r] = 1;
  /* breadth first over the parent links */
  for (i = 0; i < k; i++) {
    int j;
    for (j = 0; j < n; j++)
      if (!done[j] && s->op[j].parent == order[i]) { order[k++] = j; done[j] = 1; }
  }
  mlsys_free(done);
  if (k < n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %d operators are not connected to the root (a cycle in the parent links)", n - k);
  *root = r;
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_pipe_estimate_size(double observed_bytes, int64_t files_observed, int64_t files_total) {
  if (files_observed <= 0 || files_total <= 0) return -1;
  return observed_bytes * (double)files_total / (double)files_observed;
}

MLSYS_DEF mlsys_status mlsys_pipe_analyze(const mlsys_pipe_snapshot *s, const mlsys_pipe_machine *m, mlsys_pipe_analysis *a) {
  int n, i, k, *order = NULL, root = -1;
  double T, best = INFINITY, Dmax = 0;
  mlsys_status st;
  memset(a, 0, sizeof *a);
  if (!s || s->nops <= 0 || !s->op) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline analysis: empty snapshot");
  n = s->nops;
  T = s->seconds;
  if (!(T > 0) || !isfinite(T)) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline analysis: window of %g s", T);
  for (i = 0; i < n; i++) {
    const mlsys_pipe_op *o = &s->op[i];
    if (o->produced < 0 || o->consumed < 0 || !(o->cpu_s >= 0) || !(o->bytes_produced >= 0) || !(o->disk_bytes >= 0))
      return mlsys_set_error(MLSYS_ERR_ARG, "pipeline analysis: operator %d (%s) has a negative or NaN counter", i, o->name);
  }
  order = (int *)mlsys_alloc((size_t)n, sizeof(int));
  a->op = (mlsys_pipe_op_report *)mlsys_calloc((size_t)n, sizeof *a->op);
  if (!order || !a->op) { mlsys_free(order); mlsys_pipe_analysis_free(a); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  a->nops = n;
  if ((st = mlsys__pipe_order(s, order, &root))) { mlsys_free(order); mlsys_pipe_analysis_free(a); return st; }
  a->root = root;
  /* visit ratios top-down: V_root = 1, V_i = V_parent · ρ_parent with ρ = E / C (cache with ρ = 0 → 1) */
  for (k = 0; k < n; k++) {
    int i2 = order[k], p = s->op[i2].parent;
    mlsys_pipe_op_report *r = &a->op[i2];
    if (p < 0) r->V = 1;
    else {
      const mlsys_pipe_op *po = &s->op[p];
      double rho = po->produced > 0 ? (double)po->consumed / (double)po->produced : 0;
      if (!(rho > 0)) rho = po->kind == MLSYS_PIPE_OP_BATCH && po->count > 0 ? (double)po->count : 1;
      r->V = a->op[p].V * rho;
      /* below a cache (or already stale): no steady-state cost */
      r->stale = a->op[p].stale || po->kind == MLSYS_PIPE_OP_CACHE;
    }
  }
  /* per-operator rates (§2.5); τ = 0 operators are pass-through: rate ∞, outside the LP */
  for (i = 0; i < n; i++) {
    const mlsys_pipe_op *o = &s->op[i];
    mlsys_pipe_op_report *r = &a->op[i];
    int p = o->parallel ? (o->parallelism > 0 ? o->parallelism : 1) : 1;
    r->M = r->V > 0 ? (double)o->produced / r->V : 0;
    r->x_obs = r->M / T;
    r->u = o->cpu_s / T;
    r->p_busy = o->cpu_s / (p * T);
    r->bytes_per_elem = o->produced > 0 ? o->bytes_produced / (double)o->produced : 0;
    r->random = o->rng_draws > 0 || o->declares_random || o->kind == MLSYS_PIPE_OP_SHUFFLE;
    if (o->cpu_s > 0 && r->M > 0) {
      r->D = o->cpu_s / r->M;
      r->R = r->M / o->cpu_s;
      r->Rp = r->R * p;
      r->in_lp = !r->stale;
    } else {
      r->D = 0; r->R = r->Rp = MLSYS_PIPE_INF;
    }
    a->N += r->u;
    if (r->in_lp) {
      a->sumD += r->D;
      if (r->Rp < best) { best = r->Rp; a->bottleneck = i; }
    }
  }
  if (!isfinite(best)) a->bottleneck = -1;
  else Dmax = 1.0 / best;
  a->Nstar = Dmax > 0 ? a->sumD / Dmax : 0;
  a->x_obs = a->op[root].x_obs;
  if (s->process_cpu_s > 0) a->unattributed_cores = s->process_cpu_s / T - a->N;
  /* disk bytes per minibatch and the disk bound */
  for (i = 0; i < n; i++)
    if (mlsys__pipe_is_disk(s->op[i].kind) && s->op[i].produced > 0) {
      double b = s->op[i].disk_bytes / (double)s->op[i].produced * a->op[i].V;
      if (b > a->beta) a->beta = b;
    }
  a->x_disk = m && m->disk_bytes_per_s > 0 && a->beta > 0 ? m->disk_bytes_per_s / a->beta : MLSYS_PIPE_INF;
  /* random closure: a random operator and everything above it (thesis L899) */
  for (i = 0; i < n; i++)
    if (a->op[i].random)
      for (k = i; k >= 0; k = s->op[k].parent) a->op[k].uncacheable = 1;
  /* materialised sizes bottom-up (Appendix 2): sources from the file sample, then n_j = n_child / ρ_j */
  for (k = n - 1; k >= 0; k--) {
    int i2 = order[k], j, child = -1, nchild = 0;
    const mlsys_pipe_op *o = &s->op[i2];
    mlsys_pipe_op_report *r = &a->op[i2];
    for (j = 0; j < n; j++) if (s->op[j].parent == i2) { child = j; nchild++; }
    if (nchild == 0) {
      if (o->files_total > 0 && o->files_observed > 0) {
        double rpf = o->records_per_file > 0 ? o->records_per_file : (double)o->produced / (double)o->files_observed;
        double est = mlsys_pipe_estimate_size(o->observed_bytes, o->files_observed, o->files_total);
        r->n_elems = rpf * (double)o->files_total;
        /* a disk source's elements are its files' (records') bytes; other sources scale bytes per element */
        r->size_bytes = mlsys__pipe_is_disk(o->kind) ? est : r->n_elems * r->bytes_per_elem;
      } else if (o->kind == MLSYS_PIPE_OP_RANGE && o->count > 0) {
        r->n_elems = (double)o->count;
        r->size_bytes = r->n_elems * r->bytes_per_elem;
      } else {
        r->n_elems = r->size_bytes = -1;   /* unknown */
      }
    } else if (nchild > 1 || a->op[child].n_elems < 0) {
      r->n_elems = r->size_bytes = -1;
    } else {
      double nc = a->op[child].n_elems, rho = o->produced > 0 ? (double)o->consumed / (double)o->produced : 1;
      if (o->kind == MLSYS_PIPE_OP_TAKE && o->count >= 0) r->n_elems = fmin((double)o->count, nc);
      else if (o->kind == MLSYS_PIPE_OP_REPEAT) r->n_elems = o->count < 0 ? MLSYS_PIPE_INF : nc * (double)o->count;
      else if (o->kind == MLSYS_PIPE_OP_BATCH && o->count > 0) r->n_elems = ceil(nc / (double)o->count);
      else r->n_elems = rho > 0 ? nc / rho : nc;
      r->size_bytes = r->n_elems >= MLSYS_PIPE_INF ? MLSYS_PIPE_INF : r->n_elems * r->bytes_per_elem;
    }
    /* randomised outputs differ every epoch: infinitely many distinct elements (thesis L897) */
    if (r->uncacheable && r->size_bytes >= 0) r->size_bytes = r->n_elems = MLSYS_PIPE_INF;
    (void)mlsys__pipe_is_source;
  }
  mlsys_free(order);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_pipe_plan_free(mlsys_pipe_plan *p) {
  if (!p) return;
  mlsys_free(p->theta); mlsys_free(p->parallelism);
  memset(p, 0, sizeof *p);
}

MLSYS_DEF mlsys_status mlsys_pipe_plan_cpu(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, const mlsys_pipe_machine *m,
                                           int method, mlsys_pipe_plan *out) {
  int n = a->nops, i;
  double nc = m && m->cores > 0 ? m->cores : 1, xseq = INFINITY, sumth = 0;
  memset(out, 0, sizeof *out);
  if (n != s->nops) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline plan: analysis of %d operators, snapshot of %d", n, s->nops);
  out->nops = n;
  out->cache_after = -1;
  out->binding_op = -1;
  out->theta = (double *)mlsys_calloc((size_t)n, sizeof(double));
  out->parallelism = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!out->theta || !out->parallelism) { mlsys_pipe_plan_free(out); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (i = 0; i < n; i++) {
    out->parallelism[i] = 1;
    if (a->op[i].in_lp && !s->op[i].parallel && a->op[i].R < xseq) { xseq = a->op[i].R; out->binding_op = i; }
  }
  if (!(a->sumD > 0)) { mlsys_pipe_plan_free(out); return mlsys_set_error(MLSYS_ERR_ARG, "pipeline plan: no operator uses CPU in the window"); }
  if (method == MLSYS_PIPE_LP_LPSOLVE) {
    /* max X  s.t. X − R_i θ_i ≤ 0, Σθ ≤ n_c, 0 ≤ θ ≤ (sequential ? 1 : n_c) */
    mlsys_milp *lp;
    mlsys_milp_opts mo;
    mlsys_milp_result res;
    mlsys_status st;
    int *col = (int *)mlsys_alloc((size_t)n, sizeof(int)), *cols = (int *)mlsys_alloc((size_t)n + 1, sizeof(int)), xc, k = 0;
    double *vals = (double *)mlsys_alloc((size_t)n + 1, sizeof(double));
    if (!col || !cols || !vals || (st = mlsys_milp_create(&lp))) {
      mlsys_free(col); mlsys_free(cols); mlsys_free(vals); mlsys_pipe_plan_free(out);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    }
    mlsys_milp_set_maximize(lp, 1);
    xc = mlsys_milp_add_var(lp, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 1.0, "X");
    for (i = 0; i < n; i++) {
      col[i] = -1;
      if (!a->op[i].in_lp) continue;
      col[i] = mlsys_milp_add_var(lp, MLSYS_VAR_CONTINUOUS, 0, s->op[i].parallel ? nc : 1, 0, NULL);
      cols[0] = xc; vals[0] = 1; cols[1] = col[i]; vals[1] = -a->op[i].R;
      mlsys_milp_add_row(lp, 2, cols, vals, MLSYS_ROW_LE, 0, NULL);
    }
    for (i = 0; i < n; i++) if (col[i] >= 0) { cols[k] = col[i]; vals[k++] = 1; }
    mlsys_milp_add_row(lp, k, cols, vals, MLSYS_ROW_LE, nc, "cores");
    memset(&mo, 0, sizeof mo);
    mo.relax = 1;
    st = mlsys_milp_solve(lp, &mo, &res);
    if (!st) {
      /* lp_solve may park slack cores anywhere; report the minimum-core allocation θ = X·D as the closed form does */
      out->x_cpu = res.x[xc];
      for (i = 0; i < n; i++) if (col[i] >= 0) out->theta[i] = out->x_cpu * a->op[i].D;
    }
    mlsys_milp_result_free(&res);
    mlsys_milp_free(lp);
    mlsys_free(col); mlsys_free(cols); mlsys_free(vals);
    if (st) { mlsys_pipe_plan_free(out); return st; }
  } else {
    out->x_cpu = fmin(xseq, nc / a->sumD);
    for (i = 0; i < n; i++) if (a->op[i].in_lp) out->theta[i] = out->x_cpu * a->op[i].D;
  }
  for (i = 0; i < n; i++) {
    sumth += out->theta[i];
    if (s->op[i].parallel) out->parallelism[i] = out->theta[i] > 1 ? (int)ceil(out->theta[i] - 1e-9) : 1;
  }
  out->slack_cores = nc - sumth;
  out->binding_kind = xseq <= nc / a->sumD * (1 + 1e-12) ? MLSYS_PIPE_BIND_SEQ : MLSYS_PIPE_BIND_CPU;
  if (out->binding_kind != MLSYS_PIPE_BIND_SEQ) out->binding_op = -1;
  out->x_pred = out->x_cpu;
  if (a->x_disk < out->x_pred) { out->x_pred = a->x_disk; out->binding_kind = MLSYS_PIPE_BIND_DISK; out->binding_op = -1; }
  if (m && m->consumer_rate > 0 && m->consumer_rate < out->x_pred) { out->x_pred = m->consumer_rate; out->binding_kind = MLSYS_PIPE_BIND_CONSUMER; out->binding_op = -1; }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_plan_cache(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, const mlsys_pipe_machine *m,
                                             mlsys_pipe_plan *io) {
  double budget = (m && m->fraction_cacheable > 0 ? m->fraction_cacheable : 0.9) * (m ? m->mem_free_bytes : 0);
  int i, best = -1;
  double best_v = -1;
  (void)s;
  /* among operators below every random one (not the root, not bookkeeping): the one closest to the root that fits;
     "closest to the root" = the smallest visit-ratio depth, i.e. the highest in the tree along the chain */
  for (i = 0; i < a->nops; i++) {
    const mlsys_pipe_op_report *r = &a->op[i];
    int kind = s->op[i].kind, depth = 0, k;
    if (i == a->root || r->uncacheable || r->stale) continue;
    if (kind == MLSYS_PIPE_OP_PREFETCH || kind == MLSYS_PIPE_OP_REPEAT || kind == MLSYS_PIPE_OP_TAKE || kind == MLSYS_PIPE_OP_CACHE) continue;
    if (!(r->size_bytes > 0) || r->size_bytes >= MLSYS_PIPE_INF || r->size_bytes >= budget) continue;
    for (k = i; s->op[k].parent >= 0; k = s->op[k].parent) depth++;
    if (best < 0 || -depth > best_v) { best = i; best_v = -depth; }
  }
  io->cache_after = best;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_plan_prefetch(const mlsys_pipe_snapshot *s, const mlsys_pipe_analysis *a, mlsys_pipe_plan *io) {
  double need = a->Nstar - a->N;
  io->prefetch = need > 0 ? (int64_t)ceil(need - 1e-12) : 0;
  io->prefetch_set = s->op[a->root].kind == MLSYS_PIPE_OP_PREFETCH;
  return MLSYS_OK;
}

/* least squares line through points [lo, hi) (one point: flat through it) */
static void mlsys__pipe_lsq(const double *x, const double *y, int lo, int hi, double *m, double *b) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0, k = hi - lo, den;
  int i;
  for (i = lo; i < hi; i++) { sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i]; }
  den = k * sxx - sx * sx;
  if (k < 2 || fabs(den) < 1e-300) { *m = 0; *b = k > 0 ? sy / k : 0; return; }
  *m = (k * sxy - sx * sy) / den;
  *b = (sy - *m * sx) / k;
}

MLSYS_DEF mlsys_status mlsys_pipe_fit_piecewise(const double *x, const double *y, int n, double out[5], int *split) {
  int s, i, best = -1;
  double best_err = INFINITY, ymax = -INFINITY;
  if (n < 3) return mlsys_set_error(MLSYS_ERR_ARG, "piecewise fit: %d points (need 3)", n);
  for (i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) return mlsys_set_error(MLSYS_ERR_ARG, "piecewise fit: point %d is not finite", i);
    if (i && !(x[i] > x[i - 1])) return mlsys_set_error(MLSYS_ERR_ARG, "piecewise fit: x must increase (point %d)", i);
    if (y[i] > ymax) ymax = y[i];
  }
  for (s = 2; s <= n - 1; s++) {
    double m1, b1, m2, b2, th = x[s - 1], err = 0;
    mlsys__pipe_lsq(x, y, 0, s, &m1, &b1);
    mlsys__pipe_lsq(x, y, s, n, &m2, &b2);
    for (i = 0; i < n; i++) {
      double yh = x[i] <= th ? m1 * x[i] + b1 : m2 * x[i] + b2, d = y[i] - yh;
      /* one-sided and weighted towards the plateau (the authors' rule) */
      if (d > 0) err += d * d / (fabs(y[i] - ymax) + 1);
    }
    err /= n;
    if (err < best_err - 1e-15) {
      best_err = err; best = s;
      out[0] = m1; out[1] = b1; out[2] = m2; out[3] = b2; out[4] = th;
    }
  }
  if (split) *split = best;
  return MLSYS_OK;
}


/* ---- TFRecord ---- */
MLSYS_DEF uint32_t mlsys_pipe_tfrecord_mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

static void mlsys__pipe_put_le(uint8_t *p, uint64_t v, int n) {
  int i;
  for (i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t mlsys__pipe_get_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  int i;
  for (i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

MLSYS_DEF mlsys_status mlsys_pipe_tfrecord_write(FILE *f, const void *data, uint64_t len) {
  uint8_t h[12], t[4];
  mlsys__pipe_put_le(h, len, 8);
  mlsys__pipe_put_le(h + 8, mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, h, 8)), 4);
  mlsys__pipe_put_le(t, mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, data, (size_t)len)), 4);
  if (fwrite(h, 1, 12, f) != 12 || (len && fwrite(data, 1, (size_t)len, f) != (size_t)len) || fwrite(t, 1, 4, f) != 4)
    return mlsys_set_error(MLSYS_ERR_IO, "TFRecord: write of a %llu-byte record failed", (unsigned long long)len);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_tfrecord_next(const uint8_t *buf, size_t len, size_t *off, const uint8_t **data,
                                                uint64_t *dlen, int skip_crc, int *end) {
  size_t o = *off;
  uint64_t n;
  *end = 0;
  *data = NULL; *dlen = 0;
  if (o >= len) { *end = 1; return MLSYS_OK; }
  if (len - o < 12) return mlsys_set_error(MLSYS_ERR_PARSE, "TFRecord at byte %zu: truncated header (%zu of 12 bytes)", o, len - o);
  n = mlsys__pipe_get_le(buf + o, 8);
  if (!skip_crc && mlsys__pipe_get_le(buf + o + 8, 4) != mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, buf + o, 8)))
    return mlsys_set_error(MLSYS_ERR_PARSE, "TFRecord at byte %zu: length CRC mismatch (corrupt length field)", o);
  if (n > (uint64_t)(len - o - 12) || len - o - 12 - n < 4)
    return mlsys_set_error(MLSYS_ERR_PARSE, "TFRecord at byte %zu: truncated record (%llu data bytes + 4 CRC bytes declared, %zu left)", o,
                           (unsigned long long)n, len - o - 12);
  if (!skip_crc && mlsys__pipe_get_le(buf + o + 12 + n, 4) != mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, buf + o + 12, (size_t)n)))
    return mlsys_set_error(MLSYS_ERR_PARSE, "TFRecord at byte %zu: data CRC mismatch (%llu-byte record corrupt)", o, (unsigned long long)n);
  *data = buf + o + 12;
  *dlen = n;
  *off = o + 12 + (size_t)n + 4;
  return MLSYS_OK;
}

/* ---- selective augmentation ---- */
/* In-place Cholesky of the k×k SPD matrix A (lower triangle); 0 on success. */
static int mlsys__pipe_chol(double *A, int k) {
  int i, j, l;
  for (j = 0; j < k; j++) {
    double s = A[j * k + j];
    for (l = 0; l < j; l++) s -= A[j * k + l] * A[j * k + l];
    if (!(s > 0)) return -1;
    A[j * k + j] = sqrt(s);
    for (i = j + 1; i < k; i++) {
      double t = A[i * k + j];
      for (l = 0; l < j; l++) t -= A[i * k + l] * A[j * k + l];
      A[i * k + j] = t / A[j * k + j];
    }
  }
  return 0;
}
/* Solves L Lᵀ x = b in place (b → x). */
static void mlsys__pipe_chol_solve(const double *L, int k, double *b) {
  int i, l;
  for (i = 0; i < k; i++) {
    double t = b[i];
    for (l = 0; l < i; l++) t -= L[i * k + l] * b[l];
    b[i] = t / L[i * k + i];
  }
  for (i = k - 1; i >= 0; i--) {
    double t = b[i];
    for (l = i + 1; l < k; l++) t -= L[l * k + i] * b[l];
    b[i] = t / L[i * k + i];
  }
}
static double mlsys__pipe_sigmoid(double z) { return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z)); }
/* ℓ = −y log p − (1−y) log(1−p) computed from the margin z without overflow */
static double mlsys__pipe_logloss(double z, int y) { return (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))) - (y ? z : 0); }

static double mlsys__pipe_margin(const float *x, int d, const double *theta, int no_bias) {
  double z = no_bias ? 0 : theta[d];
  int j;
  for (j = 0; j < d; j++) z += theta[j] * x[j];
  return z;
}

/* H = Σ w p(1−p) x̃x̃ᵀ + 2α diag(1..1,0) (k = d+1 with the bias row; the bias row/col is the identity with no_bias) */
static void mlsys__pipe_hessian(const float *X, int64_t n, int d, const double *theta, const double *w, double alpha, int no_bias, double *H) {
  int k = d + 1, a, b;
  int64_t i;
  memset(H, 0, sizeof(double) * (size_t)k * k);
  for (i = 0; i < n; i++) {
    const float *x = X + i * d;
    double p = mlsys__pipe_sigmoid(mlsys__pipe_margin(x, d, theta, no_bias)), c = (w ? w[i] : 1) * p * (1 - p);
    for (a = 0; a < k; a++) {
      double xa = a < d ? x[a] : 1;
      for (b = 0; b <= a; b++) H[a * k + b] += c * xa * (b < d ? x[b] : 1);
    }
  }
  for (a = 0; a < d; a++) H[a * k + a] += 2 * alpha;
  if (no_bias) { for (a = 0; a < d; a++) H[d * k + a] = 0; H[d * k + d] = 1; }
  for (a = 0; a < k; a++) for (b = a + 1; b < k; b++) H[a * k + b] = H[b * k + a];
}

MLSYS_DEF mlsys_status mlsys_pipe_logreg_fit(const float *X, const uint8_t *y, int64_t n, int d, const mlsys_pipe_logreg_desc *o,
                                             double *theta) {
  int k = d + 1, it, j, maxit = o && o->max_iter > 0 ? o->max_iter : 100, nb = o ? o->no_bias : 0;
  double alpha = 1.0 / (o && o->C > 0 ? o->C : 10), tol = o && o->tol > 0 ? o->tol : 1e-10;
  const double *w = o ? o->weights : NULL;
  double *H, *g;
  int64_t i;
  if (n <= 0 || d <= 0 || !X || !y || !theta) return mlsys_set_error(MLSYS_ERR_ARG, "logistic regression: %lld rows, %d features", (long long)n, d);
  H = (double *)mlsys_alloc((size_t)k * k, sizeof(double));
  g = (double *)mlsys_alloc((size_t)k, sizeof(double));
  if (!H || !g) { mlsys_free(H); mlsys_free(g); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (j = 0; j < k; j++) theta[j] = 0;
  for (it = 0; it < maxit; it++) {
    double step = 0;
    memset(g, 0, sizeof(double) * (size_t)k);
    for (i = 0; i < n; i++) {
      const float *x = X + i * d;
      double r = (w ? w[i] : 1) * (mlsys__pipe_sigmoid(mlsys__pipe_margin(x, d, theta, nb)) - (y[i] ? 1 : 0));
      for (j = 0; j < d; j++) g[j] += r * x[j];
      if (!nb) g[d] += r;
    }
    for (j = 0; j < d; j++) g[j] += 2 * alpha * theta[j];
    mlsys__pipe_hessian(X, n, d, theta, w, alpha, nb, H);
    if (mlsys__pipe_chol(H, k)) { mlsys_free(H); mlsys_free(g); return mlsys_set_error(MLSYS_ERR_SOLVER, "logistic regression: the Hessian is singular (separable data needs C < inf)"); }
    mlsys__pipe_chol_solve(H, k, g);
    for (j = 0; j < k; j++) { theta[j] -= g[j]; step += g[j] * g[j]; }
    if (nb) theta[d] = 0;
    if (sqrt(step) < tol) break;
  }
  mlsys_free(H); mlsys_free(g);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_aug_scores(const float *X, const uint8_t *y, int64_t n, int d, const double *theta, int kind,
                                             double alpha, int no_bias, double *scores) {
  int64_t i;
  int k = d + 1, j;
  if (n <= 0 || d <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation scores: %lld rows, %d features", (long long)n, d);
  if (kind == MLSYS_PIPE_SCORE_LOSS) {
    for (i = 0; i < n; i++) scores[i] = mlsys__pipe_logloss(mlsys__pipe_margin(X + i * d, d, theta, no_bias), y[i] != 0);
    return MLSYS_OK;
  }
  if (kind != MLSYS_PIPE_SCORE_INFLUENCE) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation scores: unknown kind %d", kind);
  {
    double *H = (double *)mlsys_alloc((size_t)k * k, sizeof(double)), *g = (double *)mlsys_alloc((size_t)k, sizeof(double)),
           *h = (double *)mlsys_alloc((size_t)k, sizeof(double));
    if (!H || !g || !h) { mlsys_free(H); mlsys_free(g); mlsys_free(h); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    mlsys__pipe_hessian(X, n, d, theta, NULL, alpha, no_bias, H);
    if (mlsys__pipe_chol(H, k)) {
      mlsys_free(H); mlsys_free(g); mlsys_free(h);
      return mlsys_set_error(MLSYS_ERR_SOLVER, "influence scores: the Hessian is singular (use alpha > 0)");
    }
    for (i = 0; i < n; i++) {
      const float *x = X + i * d;
      double r = mlsys__pipe_sigmoid(mlsys__pipe_margin(x, d, theta, no_bias)) - (y[i] ? 1 : 0), q = 0;
      for (j = 0; j < d; j++) g[j] = h[j] = r * x[j];
      g[d] = h[d] = no_bias ? 0 : r;
      mlsys__pipe_chol_solve(H, k, h);
      for (j = 0; j < k; j++) q += g[j] * h[j];
      scores[i] = fabs(q);   /* I_LOO = −gᵀH⁻¹g; the sign is dropped (thesis L498) */
    }
    mlsys_free(H); mlsys_free(g); mlsys_free(h);
  }
  return MLSYS_OK;
}

typedef struct { double s; int64_t i; } mlsys__pipe_si;
static int mlsys__pipe_si_desc(const void *a, const void *b) {
  const mlsys__pipe_si *x = (const mlsys__pipe_si *)a, *y = (const mlsys__pipe_si *)b;
  if (x->s != y->s) return x->s > y->s ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

MLSYS_DEF mlsys_status mlsys_pipe_aug_order(const double *scores, int64_t n, int policy, uint64_t seed, int64_t *perm) {
  int64_t i, j;
  double minpos = INFINITY, *w;
  mlsys_rng rng;
  if (n <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation order: %lld points", (long long)n);
  if (policy < MLSYS_PIPE_POL_UNIFORM || policy > MLSYS_PIPE_POL_SOFTMAX) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation order: unknown policy %d", policy);
  for (i = 0; i < n; i++) {
    if (!(scores[i] >= 0) || !isfinite(scores[i])) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation order: score %lld is %g (need finite, >= 0)", (long long)i, scores[i]);
    if (scores[i] > 0 && scores[i] < minpos) minpos = scores[i];
  }
  if (!isfinite(minpos)) minpos = 1e-20;
  minpos = fmin(minpos, 1e-20);
  w = (double *)mlsys_alloc((size_t)n, sizeof(double));
  if (!w) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    double s = scores[i] > 0 ? scores[i] : minpos;
    switch (policy) {
      case MLSYS_PIPE_POL_UNIFORM: w[i] = 1; break;
      case MLSYS_PIPE_POL_RANDOM_PROP: case MLSYS_PIPE_POL_DETERMINISTIC: w[i] = s; break;
      case MLSYS_PIPE_POL_RANDOM_INV: case MLSYS_PIPE_POL_DETERMINISTIC_INV: w[i] = 1 / s; break;
      default: w[i] = s; break;
    }
  }
  if (policy == MLSYS_PIPE_POL_SOFTMAX) {
    double mx = -INFINITY;
    for (i = 0; i < n; i++) if (w[i] > mx) mx = w[i];
    for (i = 0; i < n; i++) w[i] = exp(w[i] - mx);
  }
  if (policy == MLSYS_PIPE_POL_DETERMINISTIC || policy == MLSYS_PIPE_POL_DETERMINISTIC_INV) {
    mlsys__pipe_si *si = (mlsys__pipe_si *)mlsys_alloc((size_t)n, sizeof *si);
    if (!si) { mlsys_free(w); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    for (i = 0; i < n; i++) { si[i].s = w[i]; si[i].i = i; }
    qsort(si, (size_t)n, sizeof *si, mlsys__pipe_si_desc);
    for (i = 0; i < n; i++) perm[i] = si[i].i;
    mlsys_free(si);
    mlsys_free(w);
    return MLSYS_OK;
  }
  /* successive weighted draws without replacement (numpy's choice(n, n, replace=False, p)) */
  mlsys_rng_seed(&rng, seed);
  for (i = 0; i < n; i++) perm[i] = i;
  for (i = 0; i < n; i++) {
    double tot = 0, r, acc = 0;
    int64_t pick = n - 1;
    for (j = i; j < n; j++) tot += w[perm[j]];
    r = mlsys_rng_uniform(&rng) * tot;
    for (j = i; j < n; j++) { acc += w[perm[j]]; if (r < acc) { pick = j; break; } }
    { int64_t t = perm[i]; perm[i] = perm[pick]; perm[pick] = t; }
  }
  mlsys_free(w);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_aug_reorder(const double *scores, int64_t n, const int64_t *perm, int64_t k, int policy, uint64_t seed,
                                              int64_t *out) {
  int64_t m = n - k, j, *rest, *sub;
  double *sc;
  uint8_t *seen;
  mlsys_status st;
  if (n <= 0 || k < 0 || k > n || !scores || !perm || !out) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation reorder: n %lld, k %lld", (long long)n, (long long)k);
  seen = (uint8_t *)mlsys_calloc((size_t)n, 1);
  rest = (int64_t *)mlsys_alloc((size_t)n, sizeof *rest);
  sub = (int64_t *)mlsys_alloc((size_t)n, sizeof *sub);
  sc = (double *)mlsys_alloc((size_t)n, sizeof *sc);
  if (!seen || !rest || !sub || !sc) { st = MLSYS_ERR_NOMEM; goto done; }
  for (j = 0; j < n; j++) {
    if (perm[j] < 0 || perm[j] >= n || seen[perm[j]]) { st = mlsys_set_error(MLSYS_ERR_ARG, "augmentation reorder: perm is not a permutation (entry %lld)", (long long)j); goto done; }
    seen[perm[j]] = 1;
  }
  for (j = 0; j < m; j++) { rest[j] = perm[k + j]; sc[j] = scores[rest[j]]; }
  st = m > 0 ? mlsys_pipe_aug_order(sc, m, policy, seed, sub) : MLSYS_OK;
  if (!st) {
    if (out != perm) memcpy(out, perm, (size_t)k * sizeof *out);
    for (j = 0; j < m; j++) out[k + j] = rest[sub[j]];
  }
done:
  mlsys_free(seen); mlsys_free(rest); mlsys_free(sub); mlsys_free(sc);
  return st;
}

MLSYS_DEF mlsys_status mlsys_pipe_aug_weights(const int64_t *perm, int64_t k, const int *n_aug, int64_t n, double *w_orig, double *w_aug) {
  int64_t i;
  if (k < 0 || k > n) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation weights: %lld selected of %lld", (long long)k, (long long)n);
  for (i = 0; i < n; i++) { w_orig[i] = 1; w_aug[i] = 0; }
  for (i = 0; i < k; i++) {
    int64_t p = perm[i];
    if (p < 0 || p >= n) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation weights: perm[%lld] = %lld out of range", (long long)i, (long long)p);
    if (n_aug[p] < 0) return mlsys_set_error(MLSYS_ERR_ARG, "augmentation weights: point %lld has %d augmentations", (long long)p, n_aug[p]);
    /* the +1 of the authors' code: a point keeps its total weight, the label ratio is conserved */
    w_orig[p] = w_aug[p] = 1.0 / (n_aug[p] + 1);
  }
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_pipe_autotune_wait_time(double y, double x, double n) {
  double p;
  if (y <= 0) return 0;
  if (x <= 0) return y;
  if (fabs(x - y) <= 1e-12 * fmax(x, y)) p = 1.0 / (n + 1);
  else {
    double r = x / y;
    p = (1 - r) / (1 - pow(r, n + 1));
  }
  return p * y;
}

/* ================================================================================================================
   The runtime (operators, worker pool, prefetch threads, tracing)
   ================================================================================================================ */
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>

static double mlsys__pipe_clock(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double mlsys__pipe_tcpu(void) { return mlsys__pipe_clock(CLOCK_THREAD_CPUTIME_ID); }
/* the thread-CPU clock, or 0 when the pipe is not traced (two reads per element per operator are the tracing cost) */
#define MLSYS__PIPE_TCPU(s) ((s)->it->p->d.no_trace ? 0.0 : mlsys__pipe_tcpu())

static size_t mlsys__pipe_dtype_size(int dt) {
  switch (dt) { case MLSYS_PIPE_I32: case MLSYS_PIPE_F32: return 4; case MLSYS_PIPE_I64: case MLSYS_PIPE_F64: return 8; default: return 1; }
}

MLSYS_DEF void *mlsys_pipe_tensor_alloc(mlsys_pipe_elem *e, int comp, size_t nbytes, int dtype) {
  mlsys_pipe_tensor *t;
  if (!e || comp < 0 || comp >= 4) { mlsys_set_error(MLSYS_ERR_ARG, "pipeline: component %d (elements have 4)", comp); return NULL; }
  t = &e->comp[comp];
  mlsys_free(t->data);
  memset(t, 0, sizeof *t);
  t->data = mlsys_alloc(nbytes ? nbytes : 1, 1);
  if (!t->data) return NULL;
  t->nbytes = nbytes; t->dtype = dtype; t->ndim = 1;
  t->shape[0] = (int64_t)(nbytes / mlsys__pipe_dtype_size(dtype));
  if (e->ncomp < comp + 1) e->ncomp = comp + 1;
  return t->data;
}

MLSYS_DEF void mlsys_pipe_elem_release(mlsys_pipe_elem *e) {
  int i;
  if (!e) return;
  for (i = 0; i < 4; i++) mlsys_free(e->comp[i].data);
  memset(e, 0, sizeof *e);
}

MLSYS_DEF mlsys_status mlsys_pipe_elem_copy(const mlsys_pipe_elem *src, mlsys_pipe_elem *dst) {
  int i;
  memset(dst, 0, sizeof *dst);
  if (src->ncomp < 0 || src->ncomp > 4) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: element with %d components (at most 4)", src->ncomp);
  *dst = *src;
  for (i = 0; i < 4; i++) dst->comp[i].data = NULL;
  for (i = 0; i < src->ncomp; i++) {
    dst->comp[i].data = mlsys_alloc(src->comp[i].nbytes ? src->comp[i].nbytes : 1, 1);
    if (!dst->comp[i].data) { mlsys_pipe_elem_release(dst); return MLSYS_ERR_NOMEM; }
    if (src->comp[i].nbytes) memcpy(dst->comp[i].data, src->comp[i].data, src->comp[i].nbytes);
  }
  return MLSYS_OK;
}

static double mlsys__pipe_elem_bytes(const mlsys_pipe_elem *e) {
  double b = 0;
  int i;
  for (i = 0; i < e->ncomp && i < 4; i++) b += (double)e->comp[i].nbytes;
  return b;
}

typedef struct {
  int kind, in;
  char name[32];
  int64_t n;                /* range/from_memory: n; batch: b; prefetch: k; repeat: c; take: k; shuffle: B */
  int flag;                 /* batch: drop_remainder; shuffle: reshuffle_each_epoch */
  mlsys_pipe_elem *elems;   /* from_memory (owned copies) */
  mlsys_pipe_map_desc map;  /* map (name not kept) */
  mlsys_pipe_pred_fn pred;
  mlsys_pipe_open_fn ofn;
  void *user;
  int cycle, block;
  char **paths;             /* files, records (owned copies) */
  int64_t npaths;
  mlsys_pipe_source_desc src;  /* files, records (name not kept) */
  char *cache_path;         /* cache: NULL = memory */
  uint8_t *sel;             /* select_map: owned copy of the selection */
  int64_t nsel;
  mlsys_pipe_generator_desc gen;  /* generator (name not kept) */
} mlsys__pipe_node;

struct mlsys_pipe {
  mlsys_pipe_desc d;
  int n, cap;
  mlsys__pipe_node *node;
  void **owned;             /* allocations freed with the pipe (descs that built-in pipelines hand to their UDFs) */
  int nowned;
};
static int mlsys__pipe_own(mlsys_pipe *p, void *ptr) {
  void **q = (void **)mlsys_realloc_array(p->owned, (size_t)p->nowned + 1, sizeof *q);
  if (!q) return -1;
  p->owned = q;
  p->owned[p->nowned++] = ptr;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_pipe_create(const mlsys_pipe_desc *d, mlsys_pipe **out) {
  mlsys_pipe *p = (mlsys_pipe *)mlsys_calloc(1, sizeof *p);
  *out = NULL;
  if (!p) return MLSYS_ERR_NOMEM;
  if (d) p->d = *d;
  if (p->d.workers < 0) { mlsys_free(p); return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %d workers", d->workers); }
  *out = p;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_pipe_destroy(mlsys_pipe *p) {
  int i;
  int64_t j;
  if (!p) return;
  for (i = 0; i < p->n; i++) {
    mlsys__pipe_node *nd = &p->node[i];
    if (nd->elems) {
      for (j = 0; j < nd->n; j++) mlsys_pipe_elem_release(&nd->elems[j]);
      mlsys_free(nd->elems);
    }
    for (j = 0; j < nd->npaths; j++) mlsys_free(nd->paths[j]);
    mlsys_free(nd->paths); mlsys_free(nd->cache_path); mlsys_free(nd->sel);
    if (nd->kind == MLSYS_PIPE_OP_GENERATOR && nd->gen.destroy) nd->gen.destroy(nd->gen.user);
  }
  mlsys_free(p->node);
  for (i = 0; i < p->nowned; i++) mlsys_free(p->owned[i]);
  mlsys_free(p->owned);
  mlsys_free(p);
}

static const char *mlsys__pipe_kind_name(int k) {
  static const char *nm[] = {"range", "from_memory", "files", "records", "interleave", "map", "filter", "shuffle", "batch",
                             "prefetch", "cache", "repeat", "take", "generator"};
  return k >= 0 && k <= MLSYS_PIPE_OP_GENERATOR ? nm[k] : "op";
}

MLSYS_DEF const char *mlsys_pipe_kind_name(int kind) { return mlsys__pipe_kind_name(kind); }

static mlsys_status mlsys__pipe_add(mlsys_pipe *p, int kind, int in, mlsys__pipe_node **nd, int *out) {
  if (!p || !out) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: NULL pipe or output");
  *out = -1;
  if (in != -2 && (in < 0 || in >= p->n))
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s's input %d is not a node of this pipe", mlsys__pipe_kind_name(kind), in);
  if (p->n == p->cap) {
    int nc = p->cap ? 2 * p->cap : 8;
    mlsys__pipe_node *q = (mlsys__pipe_node *)mlsys_realloc_array(p->node, (size_t)nc, sizeof *q);
    if (!q) return MLSYS_ERR_NOMEM;
    p->node = q; p->cap = nc;
  }
  *nd = &p->node[p->n];
  memset(*nd, 0, sizeof **nd);
  (*nd)->kind = kind; (*nd)->in = in == -2 ? -1 : in;
  snprintf((*nd)->name, sizeof (*nd)->name, "%s", mlsys__pipe_kind_name(kind));
  *out = p->n++;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_set_name(mlsys_pipe *p, int node, const char *name) {
  if (!p || node < 0 || node >= p->n || !name) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: no node %d", node);
  snprintf(p->node[node].name, sizeof p->node[node].name, "%s", name);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_range(mlsys_pipe *p, int64_t n, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (n < 0) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: range(%lld)", (long long)n);
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_RANGE, -2, &nd, out))) return st;
  nd->n = n;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_from_memory(mlsys_pipe *p, const mlsys_pipe_elem *elems, int64_t n, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  mlsys_pipe_elem *cp;
  int64_t i;
  if (n < 0 || (n > 0 && !elems)) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: from_memory of %lld elements", (long long)n);
  cp = (mlsys_pipe_elem *)mlsys_calloc((size_t)n + 1, sizeof *cp);
  if (!cp) return MLSYS_ERR_NOMEM;
  for (i = 0; i < n; i++)
    if ((st = mlsys_pipe_elem_copy(&elems[i], &cp[i]))) {
      while (i-- > 0) mlsys_pipe_elem_release(&cp[i]);
      mlsys_free(cp);
      return st;
    }
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_FROM_MEMORY, -2, &nd, out))) {
    for (i = 0; i < n; i++) mlsys_pipe_elem_release(&cp[i]);
    mlsys_free(cp);
    return st;
  }
  nd->n = n; nd->elems = cp;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_map(mlsys_pipe *p, int in, const mlsys_pipe_map_desc *d, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (!d || !d->fn || d->parallelism < 0) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: map needs a function and parallelism >= 0");
  if (d->sequential && d->parallelism > 1) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: map '%s' is sequential but asks for parallelism %d", d->name ? d->name : "map", d->parallelism);
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_MAP, in, &nd, out))) return st;
  nd->map = *d;
  nd->map.name = NULL;
  if (nd->map.parallelism < 1) nd->map.parallelism = 1;
  if (d->name) snprintf(nd->name, sizeof nd->name, "%s", d->name);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_filter(mlsys_pipe *p, int in, mlsys_pipe_pred_fn fn, void *user, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (!fn) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: filter needs a predicate");
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_FILTER, in, &nd, out))) return st;
  nd->pred = fn; nd->user = user;
  return MLSYS_OK;
}

static mlsys_status mlsys__pipe_add_n(mlsys_pipe *p, int kind, int in, int64_t n, int64_t min, int flag, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (n < min) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s(%lld) (need >= %lld)", mlsys__pipe_kind_name(kind), (long long)n, (long long)min);
  if ((st = mlsys__pipe_add(p, kind, in, &nd, out))) return st;
  nd->n = n; nd->flag = flag;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_pipe_shuffle(mlsys_pipe *p, int in, int64_t buffer, int reshuffle, int *out) {
  return mlsys__pipe_add_n(p, MLSYS_PIPE_OP_SHUFFLE, in, buffer, 1, reshuffle, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_batch(mlsys_pipe *p, int in, int64_t b, int drop_remainder, int *out) {
  return mlsys__pipe_add_n(p, MLSYS_PIPE_OP_BATCH, in, b, 1, drop_remainder, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_prefetch(mlsys_pipe *p, int in, int64_t k, int *out) {
  return mlsys__pipe_add_n(p, MLSYS_PIPE_OP_PREFETCH, in, k, 0, 0, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_repeat(mlsys_pipe *p, int in, int64_t count, int *out) {
  return mlsys__pipe_add_n(p, MLSYS_PIPE_OP_REPEAT, in, count, -1, 0, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_take(mlsys_pipe *p, int in, int64_t k, int *out) {
  return mlsys__pipe_add_n(p, MLSYS_PIPE_OP_TAKE, in, k, 0, 0, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_interleave(mlsys_pipe *p, int in, mlsys_pipe_open_fn fn, void *user, int cycle, int block, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (!fn || cycle < 1 || block < 1) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: interleave needs a function, cycle >= 1, block >= 1");
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_INTERLEAVE, in, &nd, out))) return st;
  nd->ofn = fn; nd->user = user; nd->cycle = cycle; nd->block = block;
  return MLSYS_OK;
}

static mlsys_status mlsys__pipe_add_source(mlsys_pipe *p, int kind, const char *const *paths, int64_t n, const mlsys_pipe_source_desc *d,
                                           int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  char **cp;
  int64_t i;
  if (n < 0 || (n > 0 && !paths)) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s of %lld paths", mlsys__pipe_kind_name(kind), (long long)n);
  if (d && d->parallelism < 0) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s parallelism %d", mlsys__pipe_kind_name(kind), d->parallelism);
  cp = (char **)mlsys_calloc((size_t)n + 1, sizeof *cp);
  if (!cp) return MLSYS_ERR_NOMEM;
  for (i = 0; i < n; i++)
    if (!paths[i] || !(cp[i] = mlsys_strdup(paths[i]))) {
      while (i-- > 0) mlsys_free(cp[i]);
      mlsys_free(cp);
      return paths[i] ? MLSYS_ERR_NOMEM : mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s: path %lld is NULL", mlsys__pipe_kind_name(kind), (long long)i);
    }
  if ((st = mlsys__pipe_add(p, kind, -2, &nd, out))) {
    for (i = 0; i < n; i++) mlsys_free(cp[i]);
    mlsys_free(cp);
    return st;
  }
  nd->paths = cp; nd->npaths = n;
  if (d) nd->src = *d;
  nd->src.name = NULL;
  nd->map.parallelism = nd->src.parallelism > 1 && kind == MLSYS_PIPE_OP_FILES ? nd->src.parallelism : 1;
  nd->map.on_error = nd->src.on_error;
  if (d && d->name) snprintf(nd->name, sizeof nd->name, "%s", d->name);
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_pipe_files(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_source_desc *d, int *out) {
  return mlsys__pipe_add_source(p, MLSYS_PIPE_OP_FILES, paths, n, d, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_records(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_source_desc *d, int *out) {
  return mlsys__pipe_add_source(p, MLSYS_PIPE_OP_RECORDS, paths, n, d, out);
}
MLSYS_DEF mlsys_status mlsys_pipe_generator(mlsys_pipe *p, const mlsys_pipe_generator_desc *d, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  if (!d || !d->open || !d->next) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: generator needs open and next functions");
  if (d->on_error != MLSYS_PIPE_ON_ERROR_FAIL && d->on_error != MLSYS_PIPE_ON_ERROR_SKIP)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: generator '%s': on_error %d (FAIL or SKIP)", d->name ? d->name : "generator", d->on_error);
  if (d->units_total < 0 || (d->disk != 0 && d->disk != 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: generator '%s': units_total %lld, disk %d", d->name ? d->name : "generator",
                           (long long)d->units_total, d->disk);
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_GENERATOR, -2, &nd, out))) return st;
  nd->gen = *d;
  nd->gen.name = NULL;
  nd->map.on_error = d->on_error;
  if (d->name) snprintf(nd->name, sizeof nd->name, "%s", d->name);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_cache(mlsys_pipe *p, int in, const char *path, int *out) {
  mlsys__pipe_node *nd;
  mlsys_status st;
  char *cp = NULL;
  if (path && !(cp = mlsys_strdup(path))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys__pipe_add(p, MLSYS_PIPE_OP_CACHE, in, &nd, out))) { mlsys_free(cp); return st; }
  nd->cache_path = cp;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_select_map(mlsys_pipe *p, int in, const uint8_t *selected, int64_t n, const mlsys_pipe_map_desc *d,
                                             int *out) {
  uint8_t *cp;
  mlsys_status st;
  if (!selected || n < 1) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: select_map needs a selection of n >= 1 flags");
  if (!(cp = (uint8_t *)mlsys_alloc((size_t)n, 1))) return MLSYS_ERR_NOMEM;
  memcpy(cp, selected, (size_t)n);
  if ((st = mlsys_pipe_map(p, in, d, out))) { mlsys_free(cp); return st; }
  p->node[*out].sel = cp; p->node[*out].nsel = n;
  if (!d->name) snprintf(p->node[*out].name, sizeof p->node[*out].name, "select_map");
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_set_knob(mlsys_pipe *p, int node, int knob, int64_t v) {
  mlsys__pipe_node *nd;
  if (!p || node < 0 || node >= p->n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: set_knob: no node %d", node);
  nd = &p->node[node];
  if (knob == MLSYS_PIPE_KNOB_PARALLELISM && (nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES)) {
    if (v < 1 || v > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: '%s' (node %d): parallelism %lld (1..4096)", nd->name, node, (long long)v);
    if (v > 1 && nd->map.sequential) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: '%s' (node %d) is sequential", nd->name, node);
    nd->map.parallelism = (int)v;
    return MLSYS_OK;
  }
  if (knob == MLSYS_PIPE_KNOB_ASYNC && (nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES)) {
    if (v != 0 && v != 1) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: '%s' (node %d): async %lld (0 or 1)", nd->name, node, (long long)v);
    nd->map.async = (int)v;
    return MLSYS_OK;
  }
  if (knob == MLSYS_PIPE_KNOB_BUFFER && (nd->kind == MLSYS_PIPE_OP_PREFETCH || nd->kind == MLSYS_PIPE_OP_SHUFFLE)) {
    int64_t lo = nd->kind == MLSYS_PIPE_OP_PREFETCH ? 0 : 1;
    if (v < lo || v > ((int64_t)1 << 30)) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: '%s' (node %d): buffer %lld", nd->name, node, (long long)v);
    nd->n = v;
    return MLSYS_OK;
  }
  return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s '%s' (node %d) has no knob %d", mlsys__pipe_kind_name(nd->kind), nd->name, node, knob);
}
MLSYS_DEF mlsys_status mlsys_pipe_get_knob(const mlsys_pipe *p, int node, int knob, int64_t *v) {
  const mlsys__pipe_node *nd;
  if (!p || node < 0 || node >= p->n || !v) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: get_knob: no node %d", node);
  nd = &p->node[node];
  if (knob == MLSYS_PIPE_KNOB_PARALLELISM && (nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES)) { *v = nd->map.parallelism; return MLSYS_OK; }
  if (knob == MLSYS_PIPE_KNOB_ASYNC && (nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES)) { *v = nd->map.async; return MLSYS_OK; }
  if (knob == MLSYS_PIPE_KNOB_BUFFER && (nd->kind == MLSYS_PIPE_OP_PREFETCH || nd->kind == MLSYS_PIPE_OP_SHUFFLE)) { *v = nd->n; return MLSYS_OK; }
  return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: %s '%s' (node %d) has no knob %d", mlsys__pipe_kind_name(nd->kind), nd->name, node, knob);
}

MLSYS_DEF mlsys_status mlsys_pipe_insert_cache(mlsys_pipe *p, int after, const char *path, int *out) {
  mlsys_status st;
  int j;
  if ((st = mlsys_pipe_cache(p, after, path, out))) return st;
  for (j = 0; j < p->n; j++)
    if (j != *out && p->node[j].in == after) p->node[j].in = *out;
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_pipe_nodes(const mlsys_pipe *p) { return p ? p->n : 0; }
MLSYS_DEF mlsys_status mlsys_pipe_node_info(const mlsys_pipe *p, int node, int *kind, int *in, const char **name) {
  if (!p || node < 0 || node >= p->n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: no node %d", node);
  if (kind) *kind = p->node[node].kind;
  if (in) *in = p->node[node].in;
  if (name) *name = p->node[node].name;
  return MLSYS_OK;
}

/* ---- the token bucket ---- */
struct mlsys_pipe_throttle {
  pthread_mutex_t mu;
  double rate, bucket, latency, level, last;
  int64_t reads;            /* statistics (under mu) */
  double bytes;
  int in_flight, max_in_flight;
};
MLSYS_DEF mlsys_status mlsys_pipe_throttle_create(double bytes_per_s, double bucket_bytes, double latency_s, mlsys_pipe_throttle **out) {
  mlsys_pipe_throttle *t;
  *out = NULL;
  if (!(bytes_per_s >= 0) || !(bucket_bytes >= 0) || !(latency_s >= 0) || latency_s > 3600)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: throttle %g B/s, bucket %g B, latency %g s", bytes_per_s, bucket_bytes, latency_s);
  if (!(t = (mlsys_pipe_throttle *)mlsys_calloc(1, sizeof *t))) return MLSYS_ERR_NOMEM;
  pthread_mutex_init(&t->mu, NULL);
  t->rate = bytes_per_s; t->bucket = bucket_bytes > 0 ? bucket_bytes : 65536; t->latency = latency_s;
  t->level = t->bucket; t->last = mlsys_now();
  *out = t;
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_pipe_throttle_destroy(mlsys_pipe_throttle *t) {
  if (!t) return;
  pthread_mutex_destroy(&t->mu);
  mlsys_free(t);
}
MLSYS_DEF void mlsys_pipe_throttle_get_stats(mlsys_pipe_throttle *t, mlsys_pipe_throttle_stats *out) {
  memset(out, 0, sizeof *out);
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  out->reads = t->reads; out->bytes = t->bytes; out->max_in_flight = t->max_in_flight;
  pthread_mutex_unlock(&t->mu);
}
/* a file read through t begins (+1) or ends (−1) */
static void mlsys__pipe_throttle_flight(mlsys_pipe_throttle *t, int d) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->in_flight += d;
  if (d > 0) { t->reads++; if (t->in_flight > t->max_in_flight) t->max_in_flight = t->in_flight; }
  pthread_mutex_unlock(&t->mu);
}
static void mlsys__pipe_sleep_until(double when) {
  struct timespec ts;
  double d = when - mlsys_now();
  if (d <= 0) return;
  ts.tv_sec = (time_t)d; ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) && errno == EINTR) {}
}
/* takes k tokens; returns when they are available (the level may go negative: later readers wait for the debt) */
static void mlsys__pipe_throttle_take(mlsys_pipe_throttle *t, double k) {
  double now, wait;
  if (!t) return;
  if (t->rate <= 0) {
    pthread_mutex_lock(&t->mu);
    t->bytes += k;
    pthread_mutex_unlock(&t->mu);
    return;
  }
  pthread_mutex_lock(&t->mu);
  t->bytes += k;
  now = mlsys_now();
  t->level = fmin(t->bucket, t->level + t->rate * (now - t->last));
  t->last = now;
  t->level -= k;
  wait = t->level < 0 ? -t->level / t->rate : 0;
  pthread_mutex_unlock(&t->mu);
  if (wait > 0) mlsys__pipe_sleep_until(now + wait);
}
/* fread through the throttle in bucket-sized pieces; returns the bytes read */
static size_t mlsys__pipe_tread(mlsys_pipe_throttle *t, void *buf, size_t n, FILE *f) {
  size_t got = 0, chunk = t && t->rate > 0 ? (size_t)t->bucket : n;
  if (chunk == 0) chunk = n;
  while (got < n) {
    size_t want = n - got < chunk ? n - got : chunk, r;
    mlsys__pipe_throttle_take(t, (double)want);
    r = fread((char *)buf + got, 1, want, f);
    got += r;
    if (r < want) break;
  }
  return got;
}

/* files: reads paths[index] (component 0) and passes the index on (component 1) */
static int mlsys__pipe_files_read1(const mlsys__pipe_node *nd, int64_t idx, mlsys_pipe_elem *out, double issued) {
  const char *path = nd->paths[idx];
  FILE *f = fopen(path, "rb");
  long sz;
  uint8_t *b;
  if (!f) { mlsys_set_error(MLSYS_ERR_IO, "cannot open '%s': %s", path, strerror(errno)); return -1; }
  if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
    mlsys_set_error(MLSYS_ERR_IO, "cannot size '%s' (not a regular file?)", path);
    fclose(f);
    return -1;
  }
  if (!(b = (uint8_t *)mlsys_pipe_tensor_alloc(out, 0, (size_t)sz, MLSYS_PIPE_U8))) { fclose(f); return -1; }
  if (mlsys__pipe_tread(nd->src.throttle, b, (size_t)sz, f) != (size_t)sz) {
    mlsys_set_error(MLSYS_ERR_IO, "short read of '%s' (%ld bytes expected)", path, sz);
    fclose(f);
    return -1;
  }
  fclose(f);
  if (!mlsys_pipe_tensor_alloc(out, 1, 8, MLSYS_PIPE_I64)) return -1;
  *(int64_t *)out->comp[1].data = idx;
  out->comp[1].ndim = 0; out->comp[1].shape[0] = 0;
  if (nd->src.throttle) mlsys__pipe_sleep_until(issued + nd->src.throttle->latency);
  return 0;
}
static int mlsys__pipe_files_read(const mlsys__pipe_node *nd, int64_t idx, mlsys_pipe_elem *out) {
  int rc;
  mlsys__pipe_throttle_flight(nd->src.throttle, +1);
  rc = mlsys__pipe_files_read1(nd, idx, out, mlsys_now());
  mlsys__pipe_throttle_flight(nd->src.throttle, -1);
  return rc;
}

/* One TFRecord from a stream at *off (records and file caches). MLSYS_OK with *eof = 1 at a clean end. */
static mlsys_status mlsys__pipe_rec_read(FILE *f, const char *path, mlsys_pipe_throttle *t, uint64_t *off, int skip_crc,
                                         uint8_t **data, uint64_t *len, int *eof) {
  uint8_t h[12], tail[4];
  uint64_t L = 0;
  uint32_t c;
  size_t r;
  int i;
  double issued = mlsys_now();
  *data = NULL; *len = 0; *eof = 0;
  r = mlsys__pipe_tread(t, h, 12, f);
  if (r == 0) { *eof = 1; return MLSYS_OK; }
  if (r < 12) return mlsys_set_error(MLSYS_ERR_PARSE, "'%s': truncated record header at byte %llu", path, (unsigned long long)*off);
  for (i = 7; i >= 0; i--) L = (L << 8) | h[i];
  c = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
  if (!skip_crc && c != mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, h, 8)))
    return mlsys_set_error(MLSYS_ERR_PARSE, "'%s': length CRC mismatch in the record at byte %llu", path, (unsigned long long)*off);
  if (L > ((uint64_t)1 << 31))
    return mlsys_set_error(MLSYS_ERR_PARSE, "'%s': record at byte %llu claims %llu bytes (limit 2 GiB)", path, (unsigned long long)*off, (unsigned long long)L);
  {
    /* grow with the bytes that actually arrive: a damaged length must not allocate gigabytes before failing */
    size_t cap = L < ((uint64_t)1 << 24) ? (size_t)L + 1 : (size_t)1 << 24, got = 0;
    int ok = 1;
    if (!(*data = (uint8_t *)mlsys_alloc(cap, 1))) return MLSYS_ERR_NOMEM;
    while (got < L) {
      size_t want = (size_t)L - got, r2;
      if (got == cap) {
        size_t nc = cap * 2 > (size_t)L + 1 ? (size_t)L + 1 : cap * 2;
        uint8_t *q = (uint8_t *)mlsys_realloc_array(*data, nc, 1);
        if (!q) { mlsys_free(*data); *data = NULL; return MLSYS_ERR_NOMEM; }
        *data = q; cap = nc;
      }
      if (want > cap - got) want = cap - got;
      r2 = mlsys__pipe_tread(t, *data + got, want, f);
      got += r2;
      if (r2 < want) { ok = 0; break; }
    }
    if (ok && mlsys__pipe_tread(t, tail, 4, f) != 4) ok = 0;
    if (!ok) {
      mlsys_free(*data); *data = NULL;
      return mlsys_set_error(MLSYS_ERR_PARSE, "'%s': record at byte %llu is truncated (%llu data bytes declared)", path,
                             (unsigned long long)*off, (unsigned long long)L);
    }
  }
  c = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
  if (!skip_crc && c != mlsys_pipe_tfrecord_mask(mlsys_crc32c(0, *data, (size_t)L))) {
    mlsys_free(*data); *data = NULL;
    return mlsys_set_error(MLSYS_ERR_PARSE, "'%s': data CRC mismatch in the record at byte %llu", path, (unsigned long long)*off);
  }
  *off += 16 + L; *len = L;
  if (t) mlsys__pipe_sleep_until(issued + t->latency);
  return MLSYS_OK;
}

/* The file cache's element encoding (inside one TFRecord): "MPCE", u32 ncomp, per component i32 dtype, i32 ndim,
   i64 shape[4], u64 nbytes, then the components' bytes; u64 seq. Little-endian. */
static void mlsys__pipe_put64(uint8_t *b, uint64_t v) { int i; for (i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i)); }
static uint64_t mlsys__pipe_get64(const uint8_t *b) { uint64_t v = 0; int i; for (i = 7; i >= 0; i--) v = (v << 8) | b[i]; return v; }
MLSYS_DEF mlsys_status mlsys_pipe_elem_encode(const mlsys_pipe_elem *e, uint8_t **buf, size_t *len) {
  size_t n = 16, o;
  int c;
  uint8_t *b;
  if (e->ncomp < 0 || e->ncomp > 4) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: element with %d components", e->ncomp);
  for (c = 0; c < e->ncomp; c++) n += 48 + e->comp[c].nbytes;
  if (!(b = (uint8_t *)mlsys_alloc(n, 1))) return MLSYS_ERR_NOMEM;
  memcpy(b, "MPCE", 4);
  mlsys__pipe_put64(b + 4, (uint64_t)e->ncomp);   /* u32 + 4 zero bytes of the u64 write are overwritten below */
  o = 8;
  for (c = 0; c < e->ncomp; c++) {
    const mlsys_pipe_tensor *t = &e->comp[c];
    int k;
    mlsys__pipe_put64(b + o, (uint64_t)(uint32_t)t->dtype | (uint64_t)(uint32_t)t->ndim << 32); o += 8;
    for (k = 0; k < 4; k++) { mlsys__pipe_put64(b + o, (uint64_t)t->shape[k]); o += 8; }
    mlsys__pipe_put64(b + o, (uint64_t)t->nbytes); o += 8;
  }
  for (c = 0; c < e->ncomp; c++) { if (e->comp[c].nbytes) memcpy(b + o, e->comp[c].data, e->comp[c].nbytes); o += e->comp[c].nbytes; }
  mlsys__pipe_put64(b + o, e->seq); o += 8;
  *buf = b; *len = o;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_pipe_elem_decode(const uint8_t *b, size_t len, mlsys_pipe_elem *e) {
  size_t o = 8, need;
  uint64_t nc;
  int c;
  memset(e, 0, sizeof *e);
  if (len < 16 || memcmp(b, "MPCE", 4)) return mlsys_set_error(MLSYS_ERR_PARSE, "pipeline: cached element: bad magic or %zu bytes", len);
  nc = (uint64_t)b[4] | (uint64_t)b[5] << 8 | (uint64_t)b[6] << 16 | (uint64_t)b[7] << 24;
  if (nc > 4) return mlsys_set_error(MLSYS_ERR_PARSE, "pipeline: cached element with %llu components", (unsigned long long)nc);
  need = 16 + 48 * (size_t)nc;
  if (len < need) return mlsys_set_error(MLSYS_ERR_PARSE, "pipeline: cached element header truncated (%zu of %zu bytes)", len, need);
  for (c = 0; c < (int)nc; c++) {
    mlsys_pipe_tensor *t = &e->comp[c];
    uint64_t dn = mlsys__pipe_get64(b + o), nb;
    int k;
    t->dtype = (int32_t)(uint32_t)dn; t->ndim = (int32_t)(uint32_t)(dn >> 32); o += 8;
    for (k = 0; k < 4; k++) { t->shape[k] = (int64_t)mlsys__pipe_get64(b + o); o += 8; }
    nb = mlsys__pipe_get64(b + o); o += 8;
    if (t->dtype < MLSYS_PIPE_U8 || t->dtype > MLSYS_PIPE_F64 || t->ndim < 0 || t->ndim > 4 || nb > len - need) {
      memset(e, 0, sizeof *e);
      return mlsys_set_error(MLSYS_ERR_PARSE, "pipeline: cached element: component %d has dtype %d, %d dims, %llu bytes", c, t->dtype,
                             t->ndim, (unsigned long long)nb);
    }
    t->nbytes = (size_t)nb;
    need += (size_t)nb;
    t->data = NULL;
  }
  if (len != need) { memset(e, 0, sizeof *e); return mlsys_set_error(MLSYS_ERR_PARSE, "pipeline: cached element is %zu bytes, its header says %zu", len, need); }
  e->ncomp = (int32_t)nc;
  for (c = 0; c < e->ncomp; c++) {
    mlsys_pipe_tensor *t = &e->comp[c];
    if (!(t->data = mlsys_alloc(t->nbytes ? t->nbytes : 1, 1))) { mlsys_pipe_elem_release(e); return MLSYS_ERR_NOMEM; }
    if (t->nbytes) memcpy(t->data, b + o, t->nbytes);
    o += t->nbytes;
  }
  e->seq = mlsys__pipe_get64(b + o);
  return MLSYS_OK;
}

/* ---- iterator state ---- */
typedef struct mlsys__pipe_st mlsys__pipe_st;
typedef struct { uint64_t seq; int node, used; } mlsys__pipe_skslot;
#define MLSYS__PIPE_SKIP_SET_MAX 65536   /* distinct skipped elements tracked exactly (2 MiB of slots at most) */
typedef struct mlsys__pipe_task {
  mlsys__pipe_st *s;
  mlsys_pipe_elem in, out;
  int rc, done;
  uint64_t draws;
  double cpu;
  char *msg;                        /* the UDF's error detail (set in the worker's thread) */
  struct mlsys__pipe_task *next;    /* the map's issue-order list */
  struct mlsys__pipe_task *qnext;   /* the pool's queue */
} mlsys__pipe_task;

typedef struct { mlsys_pipe *sub; mlsys_pipe_iter *it; } mlsys__pipe_slot;

struct mlsys__pipe_st {
  const mlsys__pipe_node *nd;
  int id;
  mlsys_pipe_iter *it;
  mlsys__pipe_st *child;
  uint64_t epoch;
  /* counters, under cmu (its own lock, so that operators on different threads do not contend for it->mu; taken
     after it->mu where both are held) */
  pthread_mutex_t cmu;
  int64_t produced, consumed, skipped, rng_draws;
  double cpu_s, bytes;
  /* per-kind state (driving thread only unless noted) */
  int64_t pos, pass, in_pass;
  int in_end;
  mlsys_pipe_elem *buf;     /* shuffle buffer, batch collection, prefetch ring */
  int64_t nbuf, head;
  mlsys_rng rng;
  /* parallel map (under it->mu) */
  mlsys__pipe_task *th, *tt;
  int inflight, draining, runner_waiting;
  pthread_cond_t cv_done;
  /* prefetch (under it->mu) */
  pthread_t thr;
  int thr_on, stop, pf_done;
  mlsys_status pf_st;
  char *pf_msg;
  pthread_cond_t cv_put, cv_get;
  /* interleave */
  mlsys__pipe_slot *slot;
  int cur, nblk;
  /* disk operators (counters under it->mu) */
  double disk_bytes, obs_bytes;
  int64_t files_obs;
  FILE *rf;                 /* records: the open file; cache: the file being written or replayed */
  int64_t fidx;
  uint64_t foff;
  /* cache: kept across passes (start does not reset them) */
  mlsys_pipe_elem *cache;
  int64_t ncache, capcache;
  int cache_done, cache_file_mode;  /* file mode: 1 writing, 2 replaying */
  char *cache_tmp;
  /* generator: the state its open returned, while open (the pulling thread's, or the closer's after a quiesce) */
  void *gstate;
  int gopen;
};

struct mlsys_pipe_iter {
  mlsys_pipe *p;
  int n;
  mlsys__pipe_st *st;       /* root first */
  pthread_mutex_t mu;
  pthread_cond_t cv_work[2];
  pthread_t *workers;
  int nworkers, nio, pool_stop;
  void *wargs;              /* mlsys__pipe_warg[nworkers] */
  mlsys__pipe_task *qh[2], *qt[2];  /* [0] CPU tasks (map calls), [1] reads of files sources */
  double t0, pcpu0;
  int fin, fin_end;
  mlsys_status fin_st;
  char *fin_msg;
  /* elements skipped on errors (under skmu): the set of (node, seq) pairs seen, and the first errors */
  pthread_mutex_t skmu;
  mlsys__pipe_skslot *skset;
  int64_t skcap, skcount;
  char *sklog[MLSYS_PIPE_SKIP_LOG];
  int nsklog;
  mlsys_status skst;        /* the first skipped error's status */
};

static uint64_t mlsys__pipe_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static void mlsys__pipe_seed(mlsys__pipe_st *s, uint64_t seq, uint64_t epoch, mlsys_rng *r) {
  uint64_t h = mlsys__pipe_mix(s->it->p->d.seed);
  h = mlsys__pipe_mix(h ^ (uint64_t)s->id);
  h = mlsys__pipe_mix(h ^ seq);
  h = mlsys__pipe_mix(h ^ epoch);
  mlsys_rng_seed(r, h);
}
/* xoshiro steps from a to b (the draws a UDF made; capped at 2^20) */
static uint64_t mlsys__pipe_draws(const mlsys_rng *a, const mlsys_rng *b) {
  mlsys_rng r = *a;
  uint64_t n = 0;
  while (memcmp(&r, b, sizeof r) && n < ((uint64_t)1 << 20)) { mlsys_rng_u64(&r); n++; }
  return n;
}

static char *mlsys__pipe_dup_err(void) { return mlsys_strdup(mlsys_last_error()); }

static mlsys_status mlsys__pipe_next_st(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *span);

/* pull from the child; the child's own clock span (its CPU and its inputs') is subtracted from the caller's, so each
   operator invocation costs two clock reads, not four */
static mlsys_status mlsys__pipe_pull(mlsys__pipe_st *s, mlsys_pipe_elem *e, int *end, double *child_cpu) {
  double span = 0;
  mlsys_status st = mlsys__pipe_next_st(s->child, e, end, &span);
  *child_cpu += span;
  if (!st && !*end) {
    pthread_mutex_lock(&s->cmu);
    s->consumed++;
    pthread_mutex_unlock(&s->cmu);
  }
  return st;
}

/* The file an element of s's input came from, when its seq is still the index of a files source: the operators
   between keep each element's seq (map, filter, shuffle, prefetch, cache, take, repeat). NULL otherwise, and for a
   files source itself (its read errors name the path). */
static const char *mlsys__pipe_seq_file(const mlsys__pipe_st *s, uint64_t seq) {
  const mlsys_pipe *p = s->it->p;
  int v = s->nd->kind == MLSYS_PIPE_OP_FILES ? -1 : s->nd->in, hops = 0;
  while (v >= 0 && hops++ <= p->n) {
    const mlsys__pipe_node *n = &p->node[v];
    if (n->kind == MLSYS_PIPE_OP_FILES) return seq < (uint64_t)n->npaths ? n->paths[seq] : NULL;
    if (n->kind != MLSYS_PIPE_OP_MAP && n->kind != MLSYS_PIPE_OP_FILTER && n->kind != MLSYS_PIPE_OP_SHUFFLE &&
        n->kind != MLSYS_PIPE_OP_PREFETCH && n->kind != MLSYS_PIPE_OP_CACHE && n->kind != MLSYS_PIPE_OP_TAKE &&
        n->kind != MLSYS_PIPE_OP_REPEAT)
      return NULL;
    v = n->in;
  }
  return NULL;
}

static mlsys_status mlsys__pipe_udf_error(mlsys__pipe_st *s, uint64_t seq, int rc, const char *msg) {
  /* a function that returns an mlsys_status (the built-in UDFs do) keeps it; any other nonzero is MLSYS_ERR_ARG */
  mlsys_status code = s->nd->kind == MLSYS_PIPE_OP_FILES ? MLSYS_ERR_IO : rc > 0 && rc <= MLSYS_ERR_CUDA ? (mlsys_status)rc : MLSYS_ERR_ARG;
  const char *file = mlsys__pipe_seq_file(s, seq);
  return mlsys_set_error(code, "pipeline: %s '%s' (node %d) failed on element seq %llu%s%s%s (returned %d)%s%s",
                         mlsys__pipe_kind_name(s->nd->kind), s->nd->name, s->id, (unsigned long long)seq, file ? ", file '" : "",
                         file ? file : "", file ? "'" : "", rc, msg && *msg ? ": " : "", msg ? msg : "");
}

/* An element of s dropped on an error (on_error = SKIP): counted, and its error (msg, status code) kept when it is one
   of the first distinct (node, seq) pairs, for the snapshots and the trace's failure message. */
static void mlsys__pipe_skip(mlsys__pipe_st *s, uint64_t seq, mlsys_status code, const char *msg) {
  mlsys_pipe_iter *it = s->it;
  int fresh = 0;
  pthread_mutex_lock(&s->cmu);
  s->skipped++;
  pthread_mutex_unlock(&s->cmu);
  pthread_mutex_lock(&it->skmu);
  if (it->skcount < MLSYS__PIPE_SKIP_SET_MAX) {
    if (2 * (it->skcount + 1) > it->skcap) {   /* grow: load factor at most 1/2 */
      int64_t ncap = it->skcap ? 2 * it->skcap : 64, i;
      mlsys__pipe_skslot *ns = (mlsys__pipe_skslot *)mlsys_calloc((size_t)ncap, sizeof *ns);
      if (ns) {
        for (i = 0; i < it->skcap; i++)
          if (it->skset[i].used) {
            uint64_t h = mlsys__pipe_mix(it->skset[i].seq ^ ((uint64_t)it->skset[i].node << 40)) & (uint64_t)(ncap - 1);
            while (ns[h].used) h = (h + 1) & (uint64_t)(ncap - 1);
            ns[h] = it->skset[i];
          }
        mlsys_free(it->skset);
        it->skset = ns; it->skcap = ncap;
      }
    }
    if (2 * (it->skcount + 1) <= it->skcap) {
      uint64_t h = mlsys__pipe_mix(seq ^ ((uint64_t)s->id << 40)) & (uint64_t)(it->skcap - 1);
      while (it->skset[h].used && !(it->skset[h].seq == seq && it->skset[h].node == s->id)) h = (h + 1) & (uint64_t)(it->skcap - 1);
      if (!it->skset[h].used) {
        it->skset[h].used = 1; it->skset[h].seq = seq; it->skset[h].node = s->id;
        it->skcount++;
        fresh = 1;
      }
    }
  }
  if (fresh && it->nsklog < MLSYS_PIPE_SKIP_LOG) {
    if (it->nsklog == 0) it->skst = code;
    if ((it->sklog[it->nsklog] = mlsys_strdup(msg && *msg ? msg : "(no message)"))) it->nsklog++;
  }
  pthread_mutex_unlock(&it->skmu);
}

static int mlsys__pipe_files_read(const mlsys__pipe_node *nd, int64_t idx, mlsys_pipe_elem *out);
/* One call of a map's function (or a files read, or a select_map pass-through); the error detail is cleared first so
   that what the function leaves in this thread's detail is its own. */
static int mlsys__pipe_call(const mlsys__pipe_st *s, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  const mlsys__pipe_node *nd = s->nd;
  mlsys_clear_error();
  if (nd->kind == MLSYS_PIPE_OP_FILES) return mlsys__pipe_files_read(nd, *(const int64_t *)in->comp[0].data, out);
  if (nd->sel && !nd->sel[in->seq % (uint64_t)nd->nsel]) return mlsys_pipe_elem_copy(in, out) ? -1 : 0;
  return nd->map.fn(nd->map.user, in, out, rng);
}

/* ---- worker pool ---- */
/* Workers 0..nworkers−nio−1 run map calls; the last nio threads only run file reads, which mostly wait (on storage or
   the throttle) and must not hold the CPU workers: tf.data gives I/O its own interleave threads too. */
typedef struct { mlsys_pipe_iter *it; int io; } mlsys__pipe_warg;
static void *mlsys__pipe_worker(void *arg) {
  mlsys_pipe_iter *it = ((mlsys__pipe_warg *)arg)->it;
  int q = ((mlsys__pipe_warg *)arg)->io;
  for (;;) {
    mlsys__pipe_task *t;
    mlsys__pipe_st *s;
    mlsys_pipe_rng rng;
    mlsys_rng r0;
    double c0;
    pthread_mutex_lock(&it->mu);
    while (!it->pool_stop && !it->qh[q]) pthread_cond_wait(&it->cv_work[q], &it->mu);
    if (!it->qh[q]) { pthread_mutex_unlock(&it->mu); return NULL; }
    t = it->qh[q];
    it->qh[q] = t->qnext;
    if (!it->qh[q]) it->qt[q] = NULL;
    pthread_mutex_unlock(&it->mu);
    s = t->s;
    mlsys__pipe_seed(s, t->in.seq, s->epoch, &rng.r);
    rng.draws = 0;
    r0 = rng.r;
    t->out.seq = t->in.seq;
    c0 = MLSYS__PIPE_TCPU(s);
    t->rc = mlsys__pipe_call(s, &t->in, &t->out, &rng);
    if (t->rc) t->msg = mlsys_strdup(mlsys_last_error());
    t->out.seq = t->in.seq;
    mlsys_pipe_elem_release(&t->in);   /* freeing the input is the operator's cost too (large buffers are munmap'ed) */
    t->in.seq = t->out.seq;
    t->cpu = MLSYS__PIPE_TCPU(s) - c0;
    t->draws = mlsys__pipe_draws(&r0, &rng.r);
    pthread_mutex_lock(&it->mu);
    t->done = 1;
    /* wake only who waits for this: the consumer of an ordered map waits for the head; the runner for a free slot */
    if (s->nd->map.nondeterministic || t == s->th || s->draining) pthread_cond_broadcast(&s->cv_done);
    if (s->runner_waiting) pthread_cond_signal(&s->cv_put);
    pthread_mutex_unlock(&it->mu);
  }
}

/* waits for every task of a parallel map and frees them */
static void mlsys__pipe_pmap_drain(mlsys__pipe_st *s) {
  mlsys_pipe_iter *it = s->it;
  pthread_mutex_lock(&it->mu);
  s->draining = 1;   /* every completion wakes us now, not only the head's */
  for (;;) {
    mlsys__pipe_task *t = s->th;
    while (t && t->done) t = t->next;
    if (!t) break;
    pthread_cond_wait(&s->cv_done, &it->mu);
  }
  while (s->th) {
    mlsys__pipe_task *t = s->th;
    s->th = t->next;
    mlsys_pipe_elem_release(&t->in); mlsys_pipe_elem_release(&t->out);
    mlsys_free(t->msg);
    mlsys_free(t);
  }
  s->tt = NULL; s->inflight = 0;
  s->draining = 0;
  pthread_mutex_unlock(&it->mu);
}

/* tasks of s still running (it->mu held) */
static int mlsys__pipe_running_locked(const mlsys__pipe_st *s) {
  int k = 0;
  const mlsys__pipe_task *t;
  for (t = s->th; t; t = t->next) k += !t->done;
  return k;
}

/* files: the element handed to a read is its index (the source has no input) */
static mlsys_status mlsys__pipe_gen_index(mlsys__pipe_st *s, mlsys_pipe_elem *e, int *end) {
  if (s->pos >= s->nd->npaths) { *end = 1; return MLSYS_OK; }
  if (!mlsys_pipe_tensor_alloc(e, 0, 8, MLSYS_PIPE_I64)) return MLSYS_ERR_NOMEM;
  *(int64_t *)e->comp[0].data = s->pos;
  e->seq = (uint64_t)s->pos++;
  return MLSYS_OK;
}

/* An asynchronous map (or files source) has its own runner thread, as tf.data's ParallelMapDataset does: it pulls
   input elements and hands them to the worker pool while p calls are running and at most p finished results wait
   (tf.data buffers p results), so the operators of a chain work concurrently instead of only when their consumer
   asks. The runner drives the input chain; the consumer only takes finished results. */
static void *mlsys__pipe_pmap_runner(void *arg) {
  mlsys__pipe_st *s = (mlsys__pipe_st *)arg;
  mlsys_pipe_iter *it = s->it;
  int p = s->nd->map.parallelism;
  for (;;) {
    mlsys_pipe_elem e;
    mlsys__pipe_task *t;
    int e_end = 0, q;
    double t0, cc = 0;
    mlsys_status st;
    pthread_mutex_lock(&it->mu);
    while (!s->stop && (s->inflight >= 2 * p || mlsys__pipe_running_locked(s) >= p)) {
      s->runner_waiting = 1;
      pthread_cond_wait(&s->cv_put, &it->mu);
      s->runner_waiting = 0;
    }
    if (s->stop) { pthread_mutex_unlock(&it->mu); break; }
    pthread_mutex_unlock(&it->mu);
    memset(&e, 0, sizeof e);
    t0 = MLSYS__PIPE_TCPU(s);
    st = s->child ? mlsys__pipe_pull(s, &e, &e_end, &cc) : mlsys__pipe_gen_index(s, &e, &e_end);
    t = !st && !e_end ? (mlsys__pipe_task *)mlsys_calloc(1, sizeof *t) : NULL;
    if (!st && !e_end && !t) { mlsys_pipe_elem_release(&e); st = MLSYS_ERR_NOMEM; }
    pthread_mutex_lock(&it->mu);
    pthread_mutex_lock(&s->cmu);
    s->cpu_s += fmax(0, MLSYS__PIPE_TCPU(s) - t0 - cc);
    pthread_mutex_unlock(&s->cmu);
    if (st || e_end) {
      /* the end or an input error comes after the elements already handed out */
      s->pf_done = 1;
      if (st) { s->pf_st = st; s->pf_msg = mlsys__pipe_dup_err(); }
      pthread_cond_broadcast(&s->cv_done);
      pthread_mutex_unlock(&it->mu);
      break;
    }
    t->s = s; t->in = e;
    if (s->tt) s->tt->next = t; else s->th = t;
    s->tt = t;
    q = s->nd->kind == MLSYS_PIPE_OP_FILES;
    if (it->qt[q]) it->qt[q]->qnext = t; else it->qh[q] = t;
    it->qt[q] = t;
    s->inflight++;
    pthread_cond_signal(&it->cv_work[q]);
    pthread_mutex_unlock(&it->mu);
  }
  return NULL;
}

static mlsys_status mlsys__pipe_pmap_start(mlsys__pipe_st *s) {
  s->stop = 0; s->pf_done = 0; s->pf_st = MLSYS_OK;
  if (pthread_create(&s->thr, NULL, mlsys__pipe_pmap_runner, s))
    return mlsys_set_error(MLSYS_ERR_NOMEM, "pipeline: map '%s' (node %d) could not start its thread", s->nd->name, s->id);
  s->thr_on = 1;
  return MLSYS_OK;
}

/* stops the runner, then waits for every task and frees them */
static void mlsys__pipe_pmap_stop(mlsys__pipe_st *s) {
  mlsys_pipe_iter *it = s->it;
  if (s->thr_on) {
    pthread_mutex_lock(&it->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv_put);
    pthread_mutex_unlock(&it->mu);
    pthread_join(s->thr, NULL);
    s->thr_on = 0;
  }
  mlsys__pipe_pmap_drain(s);
  mlsys_free(s->pf_msg); s->pf_msg = NULL;
}

static mlsys_status mlsys__pipe_pmap_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end) {
  mlsys_pipe_iter *it = s->it;
  for (;;) {
    mlsys__pipe_task *t, *prev = NULL;
    pthread_mutex_lock(&it->mu);
    for (;;) {
      prev = NULL;
      t = NULL;
      if (s->th) {
        if (s->nd->map.nondeterministic) {
          for (t = s->th; t && !t->done; t = t->next) prev = t;
        } else t = s->th->done ? s->th : NULL;
      }
      if (t) break;
      if (!s->th && s->pf_done) {
        mlsys_status st = s->pf_st;
        pthread_mutex_unlock(&it->mu);
        *end = 1;
        if (st) return mlsys_set_error(st, "%s", s->pf_msg ? s->pf_msg : "pipeline: input failed");
        return MLSYS_OK;
      }
      pthread_cond_wait(&s->cv_done, &it->mu);
    }
    if (prev) prev->next = t->next; else s->th = t->next;
    if (s->tt == t) s->tt = prev;
    s->inflight--;
    pthread_mutex_lock(&s->cmu);
    s->cpu_s += t->cpu;
    s->rng_draws += (int64_t)t->draws;
    pthread_mutex_unlock(&s->cmu);
    if (s->runner_waiting) pthread_cond_signal(&s->cv_put);
    pthread_mutex_unlock(&it->mu);
    if (t->rc) {
      int rc = t->rc;
      uint64_t seq = t->in.seq;
      mlsys_status est;
      mlsys_pipe_elem_release(&t->out);
      est = mlsys__pipe_udf_error(s, seq, rc, t->msg);
      if (s->nd->map.on_error == MLSYS_PIPE_ON_ERROR_SKIP) {
        mlsys__pipe_skip(s, seq, est, mlsys_last_error());
        est = MLSYS_OK;
      }
      mlsys_free(t->msg);
      mlsys_free(t);
      if (!est) continue;
      return est;
    }
    *out = t->out;
    mlsys_free(t);
    return MLSYS_OK;
  }
}

/* ---- prefetch ---- */
static void *mlsys__pipe_prefetch_thread(void *arg) {
  mlsys__pipe_st *s = (mlsys__pipe_st *)arg;
  mlsys_pipe_iter *it = s->it;
  for (;;) {
    mlsys_pipe_elem e;
    int end = 0;
    double t0 = MLSYS__PIPE_TCPU(s), cc = 0;
    mlsys_status st;
    memset(&e, 0, sizeof e);
    pthread_mutex_lock(&it->mu);
    if (s->stop) { pthread_mutex_unlock(&it->mu); break; }
    pthread_mutex_unlock(&it->mu);
    st = mlsys__pipe_pull(s, &e, &end, &cc);
    pthread_mutex_lock(&it->mu);
    if (st || end) {
      s->pf_done = 1;
      if (st) { s->pf_st = st; s->pf_msg = mlsys__pipe_dup_err(); }
      pthread_cond_broadcast(&s->cv_get);
      pthread_mutex_unlock(&it->mu);
      break;
    }
    while (s->nbuf == s->nd->n && !s->stop) pthread_cond_wait(&s->cv_put, &it->mu);
    if (s->stop) { pthread_mutex_unlock(&it->mu); mlsys_pipe_elem_release(&e); break; }
    s->buf[(s->head + s->nbuf) % s->nd->n] = e;
    s->nbuf++;
    pthread_mutex_lock(&s->cmu);
    s->cpu_s += fmax(0, MLSYS__PIPE_TCPU(s) - t0 - cc);
    pthread_mutex_unlock(&s->cmu);
    pthread_cond_broadcast(&s->cv_get);
    pthread_mutex_unlock(&it->mu);
  }
  return NULL;
}

static mlsys_status mlsys__pipe_prefetch_start(mlsys__pipe_st *s) {
  s->stop = 0; s->pf_done = 0; s->pf_st = MLSYS_OK; s->nbuf = 0; s->head = 0;
  if (pthread_create(&s->thr, NULL, mlsys__pipe_prefetch_thread, s))
    return mlsys_set_error(MLSYS_ERR_NOMEM, "pipeline: prefetch (node %d) could not start its thread", s->id);
  s->thr_on = 1;
  return MLSYS_OK;
}
static void mlsys__pipe_prefetch_stop(mlsys__pipe_st *s) {
  int64_t i;
  if (s->thr_on) {
    pthread_mutex_lock(&s->it->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv_put);
    pthread_mutex_unlock(&s->it->mu);
    pthread_join(s->thr, NULL);
    s->thr_on = 0;
  }
  for (i = 0; i < s->nbuf; i++) mlsys_pipe_elem_release(&s->buf[(s->head + i) % s->nd->n]);
  s->nbuf = 0; s->head = 0;
  mlsys_free(s->pf_msg); s->pf_msg = NULL;
}

/* ---- interleave ---- */
static void mlsys__pipe_slot_close(mlsys__pipe_slot *sl) {
  mlsys_pipe_close(sl->it);
  mlsys_pipe_destroy(sl->sub);
  sl->it = NULL; sl->sub = NULL;
}

static mlsys_status mlsys__pipe_interleave_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *ccpu) {
  const mlsys__pipe_node *nd = s->nd;
  for (;;) {
    mlsys__pipe_slot *sl = &s->slot[s->cur];
    mlsys_status st;
    int e_end = 0, i, any = 0;
    for (i = 0; i < nd->cycle; i++) any |= s->slot[i].it != NULL;
    if (!any && s->in_end) { *end = 1; return MLSYS_OK; }
    if (!sl->it) {
      mlsys_pipe_elem e;
      int root = -1, rc;
      if (s->in_end) { s->cur = (s->cur + 1) % nd->cycle; s->nblk = 0; continue; }
      memset(&e, 0, sizeof e);
      if ((st = mlsys__pipe_pull(s, &e, &e_end, ccpu))) return st;
      if (e_end) { s->in_end = 1; continue; }
      if ((st = mlsys_pipe_create(&s->it->p->d, &sl->sub))) { mlsys_pipe_elem_release(&e); return st; }
      rc = nd->ofn(nd->user, &e, sl->sub, &root);
      if (rc) {
        mlsys__pipe_slot_close(sl);
        st = mlsys__pipe_udf_error(s, e.seq, rc, NULL);
        mlsys_pipe_elem_release(&e);
        return st;
      }
      if ((st = mlsys_pipe_open(sl->sub, root, &sl->it))) {
        mlsys__pipe_slot_close(sl);
        st = mlsys_prefix_error("pipeline: interleave '%s' (node %d), element seq %llu", nd->name, s->id, (unsigned long long)e.seq);
        mlsys_pipe_elem_release(&e);
        return st;
      }
      mlsys_pipe_elem_release(&e);
    }
    if ((st = mlsys_pipe_next(sl->it, out, &e_end)))
      return mlsys_prefix_error("pipeline: interleave '%s' (node %d), sub-pipeline", nd->name, s->id);
    if (e_end) { mlsys__pipe_slot_close(sl); s->cur = (s->cur + 1) % nd->cycle; s->nblk = 0; continue; }
    if (++s->nblk == nd->block) { s->cur = (s->cur + 1) % nd->cycle; s->nblk = 0; }
    out->seq = (uint64_t)s->pos++;
    return MLSYS_OK;
  }
}

/* ---- batch ---- */
static mlsys_status mlsys__pipe_batch_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *ccpu) {
  int64_t b = s->nd->n, k = 0, i;
  mlsys_status st = MLSYS_OK;
  int e_end = 0, c;
  while (k < b) {
    memset(&s->buf[k], 0, sizeof s->buf[k]);
    if ((st = mlsys__pipe_pull(s, &s->buf[k], &e_end, ccpu)) || e_end) break;
    if (k > 0) {
      const mlsys_pipe_elem *f = &s->buf[0], *e = &s->buf[k];
      int bad = e->ncomp != f->ncomp;
      for (c = 0; !bad && c < f->ncomp; c++) bad = e->comp[c].nbytes != f->comp[c].nbytes;
      if (bad) {
        st = mlsys_set_error(MLSYS_ERR_ARG, "pipeline: batch '%s' (node %d): element seq %llu differs in size or components from seq %llu",
                             s->nd->name, s->id, (unsigned long long)e->seq, (unsigned long long)f->seq);
        k++;
        break;
      }
    }
    k++;
  }
  if (!st && (k == 0 || (k < b && s->nd->flag))) { for (i = 0; i < k; i++) mlsys_pipe_elem_release(&s->buf[i]); *end = 1; return MLSYS_OK; }
  if (!st && s->buf[0].ncomp > 0) {
    for (c = 0; c < s->buf[0].ncomp; c++) if (s->buf[0].comp[c].ndim >= 4) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "pipeline: batch '%s' (node %d): component %d already has 4 dimensions", s->nd->name, s->id, c);
      break;
    }
  }
  if (!st) {
    memset(out, 0, sizeof *out);
    out->ncomp = s->buf[0].ncomp;
    for (c = 0; c < out->ncomp && !st; c++) {
      const mlsys_pipe_tensor *f = &s->buf[0].comp[c];
      mlsys_pipe_tensor *t = &out->comp[c];
      size_t nb = f->nbytes;
      t->data = mlsys_alloc((size_t)k * nb + 1, 1);
      if (!t->data) { st = MLSYS_ERR_NOMEM; break; }
      for (i = 0; i < k; i++) if (nb) memcpy((char *)t->data + i * nb, s->buf[i].comp[c].data, nb);
      t->nbytes = (size_t)k * nb; t->dtype = f->dtype; t->ndim = f->ndim + 1;
      t->shape[0] = k;
      for (i = 0; i < f->ndim; i++) t->shape[i + 1] = f->shape[i];
    }
    if (st) mlsys_pipe_elem_release(out);
    else out->seq = (uint64_t)s->pos++;
  }
  for (i = 0; i < k; i++) mlsys_pipe_elem_release(&s->buf[i]);
  return st;
}

static void mlsys__pipe_quiesce(mlsys__pipe_st *s);
static mlsys_status mlsys__pipe_start(mlsys__pipe_st *s, uint64_t epoch);

static void mlsys__pipe_count_disk(mlsys__pipe_st *s, double bytes, int file_done, double file_bytes) {
  pthread_mutex_lock(&s->cmu);
  s->disk_bytes += bytes;
  if (file_done) { s->files_obs++; s->obs_bytes += file_bytes; }
  pthread_mutex_unlock(&s->cmu);
}

/* ---- generator ---- */
static void mlsys__pipe_gen_close(mlsys__pipe_st *s) {
  const mlsys__pipe_node *nd = s->nd;
  if (!s->gopen) return;
  s->gopen = 0;
  if (nd->gen.close) nd->gen.close(nd->gen.user, s->gstate);
  s->gstate = NULL;
}
/* at every (re)start: close the previous pass if it is still open, open this one */
static mlsys_status mlsys__pipe_gen_open(mlsys__pipe_st *s) {
  const mlsys__pipe_node *nd = s->nd;
  void *state = NULL;
  int rc;
  mlsys__pipe_gen_close(s);
  mlsys_clear_error();
  if ((rc = nd->gen.open(nd->gen.user, s->epoch, &state))) {
    char *msg = mlsys__pipe_dup_err();
    mlsys_status st = mlsys_set_error(rc > 0 && rc < MLSYS_ERR_COUNT_ ? (mlsys_status)rc : MLSYS_ERR_ARG,
                                      "pipeline: generator '%s' (node %d): open for epoch %llu failed (returned %d)%s%s", nd->name, s->id,
                                      (unsigned long long)s->epoch, rc, msg && *msg ? ": " : "", msg ? msg : "");
    mlsys_free(msg);
    return st;
  }
  s->gstate = state;
  s->gopen = 1;
  return MLSYS_OK;
}
static mlsys_status mlsys__pipe_gen_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end) {
  const mlsys__pipe_node *nd = s->nd;
  for (;;) {
    mlsys_pipe_gen_io io;
    uint64_t seq = (uint64_t)s->pos;
    int rc, gend = 0;
    if (!s->gopen) { *end = 1; return MLSYS_OK; }   /* after the end of the pass */
    memset(&io, 0, sizeof io);
    memset(out, 0, sizeof *out);
    mlsys_clear_error();
    rc = nd->gen.next(nd->gen.user, s->gstate, out, &gend, &io);
    if (nd->gen.disk) {
      pthread_mutex_lock(&s->cmu);
      s->disk_bytes += io.disk_bytes;
      s->files_obs += io.units_done;
      s->obs_bytes += io.units_bytes;
      pthread_mutex_unlock(&s->cmu);
    }
    if (!rc && gend) {
      mlsys_pipe_elem_release(out);
      mlsys__pipe_gen_close(s);
      *end = 1;
      return MLSYS_OK;
    }
    s->pos++;
    if (!rc) { out->seq = seq; return MLSYS_OK; }
    mlsys_pipe_elem_release(out);
    {
      char *msg = mlsys__pipe_dup_err();
      mlsys_status st = mlsys__pipe_udf_error(s, seq, rc, msg);
      mlsys_free(msg);
      if (nd->gen.on_error != MLSYS_PIPE_ON_ERROR_SKIP) return st;
      mlsys__pipe_skip(s, seq, st, mlsys_last_error());
    }
  }
}

/* ---- records ---- */
static mlsys_status mlsys__pipe_records_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end) {
  const mlsys__pipe_node *nd = s->nd;
  for (;;) {
    uint8_t *data;
    uint64_t len, off0;
    int eof;
    mlsys_status st;
    if (!s->rf) {
      if (s->fidx >= nd->npaths) { *end = 1; return MLSYS_OK; }
      if (!(s->rf = fopen(nd->paths[s->fidx], "rb"))) {
        st = mlsys_set_error(MLSYS_ERR_IO, "pipeline: records '%s' (node %d): cannot open '%s': %s", nd->name, s->id, nd->paths[s->fidx],
                             strerror(errno));
        s->fidx++;
        if (nd->map.on_error != MLSYS_PIPE_ON_ERROR_SKIP) return st;
        mlsys__pipe_skip(s, (uint64_t)(s->fidx - 1), st, mlsys_last_error());
        continue;
      }
      s->foff = 0;
    }
    off0 = s->foff;
    st = mlsys__pipe_rec_read(s->rf, nd->paths[s->fidx], nd->src.throttle, &s->foff, nd->src.skip_crc, &data, &len, &eof);
    if (st || eof) {
      mlsys__pipe_count_disk(s, 0, !st, (double)s->foff);
      fclose(s->rf); s->rf = NULL;
      s->fidx++;
      if (!st) continue;
      st = mlsys_prefix_error("pipeline: records '%s' (node %d), file %lld", nd->name, s->id, (long long)(s->fidx - 1));
      if (nd->map.on_error != MLSYS_PIPE_ON_ERROR_SKIP) return st;
      mlsys__pipe_skip(s, (uint64_t)(s->fidx - 1), st, mlsys_last_error());
      continue;
    }
    mlsys__pipe_count_disk(s, (double)(s->foff - off0), 0, 0);
    memset(out, 0, sizeof *out);
    out->ncomp = 1;
    out->comp[0].data = data; out->comp[0].nbytes = (size_t)len; out->comp[0].dtype = MLSYS_PIPE_U8;
    out->comp[0].ndim = 1; out->comp[0].shape[0] = (int64_t)len;
    out->seq = (uint64_t)s->pos++;
    return MLSYS_OK;
  }
}

/* ---- cache ---- */
static void mlsys__pipe_cache_drop(mlsys__pipe_st *s) {
  int64_t i;
  for (i = 0; i < s->ncache; i++) mlsys_pipe_elem_release(&s->cache[i]);
  s->ncache = 0;
}
static mlsys_status mlsys__pipe_cache_next(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *ccpu) {
  const mlsys__pipe_node *nd = s->nd;
  const char *path = nd->cache_path;
  mlsys_status st;
  if (s->cache_done && !path) {
    if (s->pos >= s->ncache) { *end = 1; return MLSYS_OK; }
    if ((st = mlsys_pipe_elem_copy(&s->cache[s->pos], out))) return st;
    s->pos++;
    return MLSYS_OK;
  }
  if (s->cache_file_mode == 2) {   /* replaying the file */
    uint8_t *data;
    uint64_t len;
    int eof;
    if ((st = mlsys__pipe_rec_read(s->rf, path, NULL, &s->foff, 0, &data, &len, &eof)))
      return mlsys_prefix_error("pipeline: cache '%s' (node %d)", nd->name, s->id);
    if (eof) { *end = 1; return MLSYS_OK; }
    st = mlsys_pipe_elem_decode(data, (size_t)len, out);
    mlsys_free(data);
    if (st) return mlsys_prefix_error("pipeline: cache '%s' (node %d), file '%s' at byte %llu", nd->name, s->id, path, (unsigned long long)s->foff);
    s->pos++;
    return MLSYS_OK;
  }
  if ((st = mlsys__pipe_pull(s, out, end, ccpu))) return st;
  if (*end) {
    if (path) {
      int bad = fflush(s->rf) != 0 || ferror(s->rf);
      bad |= fclose(s->rf) != 0;
      s->rf = NULL;
      if (bad || rename(s->cache_tmp, path)) {
        st = mlsys_set_error(MLSYS_ERR_IO, "pipeline: cache '%s' (node %d): cannot write '%s': %s", nd->name, s->id, path, strerror(errno));
        remove(s->cache_tmp);
        s->cache_file_mode = 0;
        return st;
      }
      s->cache_file_mode = 0;
    }
    pthread_mutex_lock(&s->cmu);
    s->cache_done = 1;
    pthread_mutex_unlock(&s->cmu);
    return MLSYS_OK;
  }
  if (path) {
    uint8_t *b;
    size_t n;
    if ((st = mlsys_pipe_elem_encode(out, &b, &n))) return st;
    st = mlsys_pipe_tfrecord_write(s->rf, b, n);
    mlsys_free(b);
    if (st) return mlsys_prefix_error("pipeline: cache '%s' (node %d), writing '%s'", nd->name, s->id, s->cache_tmp);
    return MLSYS_OK;
  }
  if (s->ncache == s->capcache) {
    int64_t nc = s->capcache ? 2 * s->capcache : 64;
    mlsys_pipe_elem *q = (mlsys_pipe_elem *)mlsys_realloc_array(s->cache, (size_t)nc, sizeof *q);
    if (!q) return MLSYS_ERR_NOMEM;
    s->cache = q; s->capcache = nc;
  }
  return mlsys_pipe_elem_copy(out, &s->cache[s->ncache++]);
}
/* at (re)start: replay a complete cache, or begin filling (an incomplete earlier pass is discarded, as tf.data does) */
static mlsys_status mlsys__pipe_cache_start(mlsys__pipe_st *s) {
  const char *path = s->nd->cache_path;
  if (s->rf) { fclose(s->rf); s->rf = NULL; }
  if (!path) { if (!s->cache_done) mlsys__pipe_cache_drop(s); return MLSYS_OK; }
  if (s->cache_file_mode == 1) remove(s->cache_tmp);
  s->cache_file_mode = 0;
  s->foff = 0;
  if (s->cache_done || access(path, F_OK) == 0) {
    if (!(s->rf = fopen(path, "rb"))) return mlsys_set_error(MLSYS_ERR_IO, "pipeline: cache: cannot open '%s': %s", path, strerror(errno));
    pthread_mutex_lock(&s->cmu);
    s->cache_done = 1;
    pthread_mutex_unlock(&s->cmu);
    s->cache_file_mode = 2;
    return MLSYS_OK;
  }
  if (!s->cache_tmp) {
    size_t n = strlen(path) + 32;
    if (!(s->cache_tmp = (char *)mlsys_alloc(n, 1))) return MLSYS_ERR_NOMEM;
    snprintf(s->cache_tmp, n, "%s.tmp.%ld", path, (long)getpid());
  }
  if (!(s->rf = fopen(s->cache_tmp, "wb"))) return mlsys_set_error(MLSYS_ERR_IO, "pipeline: cache: cannot create '%s': %s", s->cache_tmp, strerror(errno));
  s->cache_file_mode = 1;
  return MLSYS_OK;
}

/* the per-kind step; own CPU is measured by the caller */
static mlsys_status mlsys__pipe_step(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *ccpu) {
  const mlsys__pipe_node *nd = s->nd;
  mlsys_status st;
  switch (nd->kind) {
    case MLSYS_PIPE_OP_RANGE:
      if (s->pos >= nd->n) { *end = 1; return MLSYS_OK; }
      if (!mlsys_pipe_tensor_alloc(out, 0, 8, MLSYS_PIPE_I64)) return MLSYS_ERR_NOMEM;
      *(int64_t *)out->comp[0].data = s->pos;
      out->comp[0].ndim = 0; out->comp[0].shape[0] = 0;
      out->seq = (uint64_t)s->pos++;
      return MLSYS_OK;
    case MLSYS_PIPE_OP_FROM_MEMORY:
      if (s->pos >= nd->n) { *end = 1; return MLSYS_OK; }
      if ((st = mlsys_pipe_elem_copy(&nd->elems[s->pos], out))) return st;
      out->seq = (uint64_t)s->pos++;
      return MLSYS_OK;
    case MLSYS_PIPE_OP_MAP:
      if (s->thr_on || s->th) return mlsys__pipe_pmap_next(s, out, end);
      for (;;) {
        mlsys_pipe_elem e;
        mlsys_pipe_rng rng;
        mlsys_rng r0;
        int rc;
        memset(&e, 0, sizeof e);
        if ((st = mlsys__pipe_pull(s, &e, end, ccpu)) || *end) return st;
        mlsys__pipe_seed(s, e.seq, s->epoch, &rng.r);
        rng.draws = 0; r0 = rng.r;
        memset(out, 0, sizeof *out);
        out->seq = e.seq;
        rc = mlsys__pipe_call(s, &e, out, &rng);
        out->seq = e.seq;
        pthread_mutex_lock(&s->cmu);
        s->rng_draws += (int64_t)mlsys__pipe_draws(&r0, &rng.r);
        pthread_mutex_unlock(&s->cmu);
        {
          uint64_t seq = e.seq;
          char *msg;
          mlsys_pipe_elem_release(&e);
          if (!rc) return MLSYS_OK;
          mlsys_pipe_elem_release(out);
          msg = mlsys__pipe_dup_err();
          st = mlsys__pipe_udf_error(s, seq, rc, msg);
          mlsys_free(msg);
          if (nd->map.on_error != MLSYS_PIPE_ON_ERROR_SKIP) return st;
          mlsys__pipe_skip(s, seq, st, mlsys_last_error());
        }
      }
    case MLSYS_PIPE_OP_FILES:
      if (s->thr_on || s->th) return mlsys__pipe_pmap_next(s, out, end);
      for (;;) {
        int64_t idx = s->pos;
        int rc;
        if (idx >= nd->npaths) { *end = 1; return MLSYS_OK; }
        s->pos++;
        mlsys_clear_error();
        if (!(rc = mlsys__pipe_files_read(nd, idx, out))) { out->seq = (uint64_t)idx; return MLSYS_OK; }
        mlsys_pipe_elem_release(out);
        {
          char *msg = mlsys__pipe_dup_err();
          st = mlsys__pipe_udf_error(s, (uint64_t)idx, rc, msg);
          mlsys_free(msg);
          if (nd->map.on_error != MLSYS_PIPE_ON_ERROR_SKIP) return st;
          mlsys__pipe_skip(s, (uint64_t)idx, st, mlsys_last_error());
        }
      }
    case MLSYS_PIPE_OP_RECORDS: return mlsys__pipe_records_next(s, out, end);
    case MLSYS_PIPE_OP_GENERATOR: return mlsys__pipe_gen_next(s, out, end);
    case MLSYS_PIPE_OP_CACHE: return mlsys__pipe_cache_next(s, out, end, ccpu);
    case MLSYS_PIPE_OP_FILTER:
      for (;;) {
        mlsys_pipe_rng rng;
        mlsys_rng r0;
        int rc;
        if ((st = mlsys__pipe_pull(s, out, end, ccpu)) || *end) return st;
        mlsys__pipe_seed(s, out->seq, s->epoch, &rng.r);
        rng.draws = 0; r0 = rng.r;
        rc = nd->pred(nd->user, out, &rng);
        pthread_mutex_lock(&s->cmu);
        s->rng_draws += (int64_t)mlsys__pipe_draws(&r0, &rng.r);
        pthread_mutex_unlock(&s->cmu);
        if (rc == 1) return MLSYS_OK;
        {
          uint64_t seq = out->seq;
          mlsys_pipe_elem_release(out);
          if (rc != 0) return mlsys__pipe_udf_error(s, seq, rc, NULL);
        }
      }
    case MLSYS_PIPE_OP_SHUFFLE: {
      int64_t i;
      while (!s->in_end && s->nbuf < nd->n) {
        memset(&s->buf[s->nbuf], 0, sizeof s->buf[0]);
        if ((st = mlsys__pipe_pull(s, &s->buf[s->nbuf], &s->in_end, ccpu))) return st;
        if (!s->in_end) s->nbuf++;
      }
      if (s->nbuf == 0) { *end = 1; return MLSYS_OK; }
      i = (int64_t)mlsys_rng_below(&s->rng, (uint64_t)s->nbuf);
      pthread_mutex_lock(&s->cmu);
      s->rng_draws++;
      pthread_mutex_unlock(&s->cmu);
      *out = s->buf[i];
      s->buf[i] = s->buf[--s->nbuf];
      return MLSYS_OK;
    }
    case MLSYS_PIPE_OP_BATCH: return mlsys__pipe_batch_next(s, out, end, ccpu);
    case MLSYS_PIPE_OP_PREFETCH: {
      mlsys_pipe_iter *it = s->it;
      if (nd->n == 0) return mlsys__pipe_pull(s, out, end, ccpu);   /* buffer 0: a pass-through (NAIVE) */
      pthread_mutex_lock(&it->mu);
      while (s->nbuf == 0 && !s->pf_done) pthread_cond_wait(&s->cv_get, &it->mu);
      if (s->nbuf > 0) {
        *out = s->buf[s->head];
        s->head = (s->head + 1) % nd->n;
        s->nbuf--;
        pthread_cond_broadcast(&s->cv_put);
        pthread_mutex_unlock(&it->mu);
        return MLSYS_OK;
      }
      st = s->pf_st;
      pthread_mutex_unlock(&it->mu);
      *end = 1;
      if (st) return mlsys_set_error(st, "%s", s->pf_msg ? s->pf_msg : "pipeline: prefetch input failed");
      return MLSYS_OK;
    }
    case MLSYS_PIPE_OP_TAKE:
      if (s->pos >= nd->n) { *end = 1; return MLSYS_OK; }
      if ((st = mlsys__pipe_pull(s, out, end, ccpu)) || *end) return st;
      s->pos++;
      return MLSYS_OK;
    case MLSYS_PIPE_OP_REPEAT:
      for (;;) {
        if (nd->n >= 0 && s->pass >= nd->n) { *end = 1; return MLSYS_OK; }
        if ((st = mlsys__pipe_pull(s, out, end, ccpu))) return st;
        if (!*end) { s->in_pass++; return MLSYS_OK; }
        *end = 0;
        s->pass++;
        if (s->in_pass == 0 || (nd->n >= 0 && s->pass >= nd->n)) { s->pass = nd->n >= 0 ? nd->n : s->pass; *end = 1; return MLSYS_OK; }
        s->in_pass = 0;
        /* the next pass: restart the input with its own epoch (RNG streams and reshuffles differ per pass) */
        mlsys__pipe_quiesce(s->child);
        if ((st = mlsys__pipe_start(s->child, s->epoch * 1000003u + (uint64_t)s->pass))) return st;
      }
    case MLSYS_PIPE_OP_INTERLEAVE: return mlsys__pipe_interleave_next(s, out, end, ccpu);
    default: return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "pipeline: operator kind %d has no runtime", nd->kind);
  }
}

static mlsys_status mlsys__pipe_next_st(mlsys__pipe_st *s, mlsys_pipe_elem *out, int *end, double *span) {
  double t0 = MLSYS__PIPE_TCPU(s), cc = 0, own;
  mlsys_status st;
  *end = 0;
  memset(out, 0, sizeof *out);
  st = mlsys__pipe_step(s, out, end, &cc);
  *span = MLSYS__PIPE_TCPU(s) - t0;
  own = *span - cc;
  pthread_mutex_lock(&s->cmu);
  s->cpu_s += own > 0 ? own : 0;
  if (!st && !*end) {
    s->produced++; s->bytes += mlsys__pipe_elem_bytes(out);
    if (s->nd->kind == MLSYS_PIPE_OP_FILES) { s->disk_bytes += (double)out->comp[0].nbytes; s->files_obs++; s->obs_bytes += (double)out->comp[0].nbytes; }
  }
  pthread_mutex_unlock(&s->cmu);
  return st;
}

/* stops s and everything below it (threads joined, in-flight calls finished, buffers freed); counters stay */
static void mlsys__pipe_quiesce(mlsys__pipe_st *s) {
  int64_t i;
  for (; s; s = s->child) {
    const mlsys__pipe_node *nd = s->nd;
    if (nd->kind == MLSYS_PIPE_OP_PREFETCH) mlsys__pipe_prefetch_stop(s);
    else if (nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES) mlsys__pipe_pmap_stop(s);
    else if (nd->kind == MLSYS_PIPE_OP_RECORDS && s->rf) { fclose(s->rf); s->rf = NULL; }
    else if (nd->kind == MLSYS_PIPE_OP_GENERATOR) mlsys__pipe_gen_close(s);
    else if (nd->kind == MLSYS_PIPE_OP_SHUFFLE) { for (i = 0; i < s->nbuf; i++) mlsys_pipe_elem_release(&s->buf[i]); s->nbuf = 0; }
    else if (nd->kind == MLSYS_PIPE_OP_INTERLEAVE && s->slot) { for (i = 0; i < nd->cycle; i++) mlsys__pipe_slot_close(&s->slot[i]); }
  }
}

/* (re)starts s and everything below it for an epoch, bottom-up so prefetch threads see a ready input */
static mlsys_status mlsys__pipe_start(mlsys__pipe_st *s, uint64_t epoch) {
  mlsys_status st;
  const mlsys__pipe_node *nd = s->nd;
  s->epoch = epoch;
  s->pos = s->pass = s->in_pass = 0;
  s->in_end = 0;
  s->cur = s->nblk = 0;
  s->fidx = 0; s->foff = 0;
  if (nd->kind == MLSYS_PIPE_OP_CACHE) {
    if ((st = mlsys__pipe_cache_start(s))) return st;
    if (s->cache_done) return MLSYS_OK;   /* replay: the input stays idle */
  }
  if (s->child && (st = mlsys__pipe_start(s->child, nd->kind == MLSYS_PIPE_OP_REPEAT ? epoch * 1000003u : epoch))) return st;
  if (nd->kind == MLSYS_PIPE_OP_SHUFFLE) {
    mlsys__pipe_seed(s, 0x5348554646ull, nd->flag ? epoch : 0, &s->rng);
    s->nbuf = 0;
  }
  if (nd->kind == MLSYS_PIPE_OP_PREFETCH && nd->n > 0) return mlsys__pipe_prefetch_start(s);
  if (nd->kind == MLSYS_PIPE_OP_GENERATOR) return mlsys__pipe_gen_open(s);
  if ((nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES) && (nd->map.parallelism > 1 || nd->map.async))
    return mlsys__pipe_pmap_start(s);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_pipe_close(mlsys_pipe_iter *it) {
  int i;
  if (!it) return;
  if (it->n > 0) mlsys__pipe_quiesce(&it->st[0]);
  if (it->workers) {
    pthread_mutex_lock(&it->mu);
    it->pool_stop = 1;
    pthread_cond_broadcast(&it->cv_work[0]);
    pthread_cond_broadcast(&it->cv_work[1]);
    pthread_mutex_unlock(&it->mu);
    for (i = 0; i < it->nworkers; i++) pthread_join(it->workers[i], NULL);
    mlsys_free(it->workers);
  }
  for (i = 0; i < it->n; i++) {
    mlsys__pipe_st *s = &it->st[i];
    pthread_cond_destroy(&s->cv_done); pthread_cond_destroy(&s->cv_put); pthread_cond_destroy(&s->cv_get);
    pthread_mutex_destroy(&s->cmu);
    mlsys_free(s->buf);
    mlsys_free(s->slot);
    if (s->rf) fclose(s->rf);
    if (s->cache_file_mode == 1 && s->cache_tmp) remove(s->cache_tmp);   /* an unfinished file cache never lands */
    mlsys_free(s->cache_tmp);
    mlsys__pipe_cache_drop(s);
    mlsys_free(s->cache);
  }
  pthread_cond_destroy(&it->cv_work[0]);
  pthread_cond_destroy(&it->cv_work[1]);
  mlsys_free(it->wargs);
  pthread_mutex_destroy(&it->mu);
  pthread_mutex_destroy(&it->skmu);
  for (i = 0; i < it->nsklog; i++) mlsys_free(it->sklog[i]);
  mlsys_free(it->skset);
  mlsys_free(it->st);
  mlsys_free(it->fin_msg);
  mlsys_free(it);
}

MLSYS_DEF mlsys_status mlsys_pipe_open(mlsys_pipe *p, int root, mlsys_pipe_iter **out) {
  mlsys_pipe_iter *it;
  int n = 0, v, i, need_pool = 0, nio = 0;
  mlsys_status st;
  *out = NULL;
  if (!p || root < 0 || root >= p->n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: open at node %d (the pipe has %d)", root, p ? p->n : 0);
  for (v = root; v >= 0; v = p->node[v].in) {
    if (++n > p->n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: the chain below node %d has a cycle", root);
    if (p->node[v].kind == MLSYS_PIPE_OP_MAP && (p->node[v].map.parallelism > 1 || p->node[v].map.async)) need_pool = 1;
    if (p->node[v].kind == MLSYS_PIPE_OP_FILES && (p->node[v].map.parallelism > 1 || p->node[v].map.async)) nio += p->node[v].map.parallelism;
  }
  it = (mlsys_pipe_iter *)mlsys_calloc(1, sizeof *it);
  if (!it) return MLSYS_ERR_NOMEM;
  it->st = (mlsys__pipe_st *)mlsys_calloc((size_t)n, sizeof *it->st);
  if (!it->st) { mlsys_free(it); return MLSYS_ERR_NOMEM; }
  it->p = p;
  pthread_mutex_init(&it->mu, NULL);
  pthread_mutex_init(&it->skmu, NULL);
  pthread_cond_init(&it->cv_work[0], NULL);
  pthread_cond_init(&it->cv_work[1], NULL);
  for (v = root, i = 0; v >= 0; v = p->node[v].in, i++) {
    mlsys__pipe_st *s = &it->st[i];
    const mlsys__pipe_node *nd = &p->node[v];
    s->nd = nd; s->id = v; s->it = it;
    s->child = nd->in >= 0 ? &it->st[i + 1] : NULL;
    pthread_cond_init(&s->cv_done, NULL); pthread_cond_init(&s->cv_put, NULL); pthread_cond_init(&s->cv_get, NULL);
    pthread_mutex_init(&s->cmu, NULL);
    it->n = i + 1;
    if ((nd->kind == MLSYS_PIPE_OP_SHUFFLE || nd->kind == MLSYS_PIPE_OP_BATCH || nd->kind == MLSYS_PIPE_OP_PREFETCH) && nd->n > 0) {
      s->buf = (mlsys_pipe_elem *)mlsys_calloc((size_t)nd->n, sizeof *s->buf);
      if (!s->buf) { mlsys_pipe_close(it); return MLSYS_ERR_NOMEM; }
    }
    if (nd->kind == MLSYS_PIPE_OP_INTERLEAVE) {
      s->slot = (mlsys__pipe_slot *)mlsys_calloc((size_t)nd->cycle, sizeof *s->slot);
      if (!s->slot) { mlsys_pipe_close(it); return MLSYS_ERR_NOMEM; }
    }
  }
  if (need_pool || nio) {
    int w = need_pool ? (p->d.workers > 0 ? p->d.workers : mlsys_ncpus()) : 0;
    mlsys__pipe_warg *wa;
    if (need_pool && w < 1) w = 1;
    w += nio;
    it->nio = nio;
    it->workers = (pthread_t *)mlsys_calloc((size_t)w, sizeof(pthread_t));
    it->wargs = wa = (mlsys__pipe_warg *)mlsys_calloc((size_t)w, sizeof *wa);
    if (!it->workers || !wa) { mlsys_pipe_close(it); return MLSYS_ERR_NOMEM; }
    for (i = 0; i < w; i++) {
      wa[i].it = it; wa[i].io = i >= w - nio;
      if (pthread_create(&it->workers[i], NULL, mlsys__pipe_worker, &wa[i])) {
        mlsys_pipe_close(it);
        return mlsys_set_error(MLSYS_ERR_NOMEM, "pipeline: could not start worker thread %d", i);
      }
      it->nworkers = i + 1;
    }
  }
  it->t0 = mlsys_now();
  it->pcpu0 = mlsys__pipe_clock(CLOCK_PROCESS_CPUTIME_ID);
  if ((st = mlsys__pipe_start(&it->st[0], 0))) { mlsys_pipe_close(it); return st; }
  *out = it;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_next(mlsys_pipe_iter *it, mlsys_pipe_elem *out, int *end) {
  mlsys_status st;
  int e = 0;
  if (!it || !out || !end) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: next with a NULL argument");
  memset(out, 0, sizeof *out);
  *end = 0;
  if (it->fin) {
    *end = it->fin_end;
    return it->fin_st ? mlsys_set_error(it->fin_st, "%s", it->fin_msg ? it->fin_msg : "pipeline failed") : MLSYS_OK;
  }
  {
    double span;
    st = mlsys__pipe_next_st(&it->st[0], out, &e, &span);
  }
  if (st) {
    mlsys_pipe_elem_release(out);
    it->fin = 1; it->fin_end = 1; it->fin_st = st; it->fin_msg = mlsys__pipe_dup_err();
    *end = 1;
    return st;
  }
  if (e) { it->fin = 1; it->fin_end = 1; *end = 1; }
  return MLSYS_OK;
}

MLSYS_DEF int64_t mlsys_pipe_skipped(mlsys_pipe_iter *it, int node) {
  int i;
  int64_t k = 0;
  if (!it) return 0;
  pthread_mutex_lock(&it->mu);
  for (i = 0; i < it->n; i++)
    if (it->st[i].id == node) {
      pthread_mutex_lock(&it->st[i].cmu);
      k = it->st[i].skipped;
      pthread_mutex_unlock(&it->st[i].cmu);
    }
  pthread_mutex_unlock(&it->mu);
  return k;
}

/* out's skip fields from a count and a log (under mu when given); on failure out is freed */
static mlsys_status mlsys__pipe_skip_log_copy(mlsys_pipe_snapshot *out, int64_t count, const char *const *log, int n, pthread_mutex_t *mu) {
  int i;
  mlsys_status st = MLSYS_OK;
  if (mu) pthread_mutex_lock(mu);
  out->skipped_distinct = count;
  if (n > 0 && (out->skip_log = (char **)mlsys_calloc((size_t)n, sizeof(char *)))) {
    for (i = 0; i < n && st == MLSYS_OK; i++)
      if ((out->skip_log[i] = mlsys_strdup(log[i]))) out->nskip_log = i + 1;
      else st = MLSYS_ERR_NOMEM;
  } else if (n > 0) st = MLSYS_ERR_NOMEM;
  if (mu) pthread_mutex_unlock(mu);
  if (st) { mlsys_pipe_snapshot_free(out); return mlsys_set_error(st, "pipeline: out of memory copying a snapshot's skip log"); }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_snapshot_take(mlsys_pipe_iter *it, mlsys_pipe_snapshot *out) {
  int i;
  memset(out, 0, sizeof *out);
  if (!it) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: snapshot of a NULL iterator");
  out->op = (mlsys_pipe_op *)mlsys_calloc((size_t)it->n, sizeof *out->op);
  if (!out->op) return MLSYS_ERR_NOMEM;
  out->nops = it->n;
  pthread_mutex_lock(&it->mu);
  for (i = 0; i < it->n; i++) {
    const mlsys__pipe_st *s = &it->st[i];
    const mlsys__pipe_node *nd = s->nd;
    mlsys_pipe_op *o = &out->op[i];
    o->kind = nd->kind;
    o->parent = i - 1;
    snprintf(o->name, sizeof o->name, "%s", nd->name);
    /* a map is parallelizable whatever its current p (tf.data's MapDataset "switches to parallel"); files reads too */
    o->parallel = (nd->kind == MLSYS_PIPE_OP_MAP && !nd->map.sequential) || nd->kind == MLSYS_PIPE_OP_FILES;
    o->parallelism = nd->kind == MLSYS_PIPE_OP_MAP || nd->kind == MLSYS_PIPE_OP_FILES ? nd->map.parallelism : 1;
    o->node = s->id;
    if (nd->kind == MLSYS_PIPE_OP_FILES || nd->kind == MLSYS_PIPE_OP_RECORDS) o->files_total = nd->npaths;
    if (nd->kind == MLSYS_PIPE_OP_GENERATOR && nd->gen.disk) o->files_total = nd->gen.units_total;
    pthread_mutex_lock((pthread_mutex_t *)&s->cmu);
    o->produced = s->produced; o->consumed = s->consumed;
    o->cpu_s = s->cpu_s; o->bytes_produced = s->bytes;
    o->rng_draws = s->rng_draws;
    o->disk_bytes = s->disk_bytes;
    o->files_observed = s->files_obs;
    o->observed_bytes = s->obs_bytes;
    o->skipped = s->skipped;
    pthread_mutex_unlock((pthread_mutex_t *)&s->cmu);
    o->declares_random = nd->kind == MLSYS_PIPE_OP_MAP && nd->map.declares_random;
    if (nd->kind == MLSYS_PIPE_OP_BATCH || nd->kind == MLSYS_PIPE_OP_TAKE || nd->kind == MLSYS_PIPE_OP_REPEAT ||
        nd->kind == MLSYS_PIPE_OP_RANGE)
      o->count = nd->n;
  }
  out->seconds = mlsys_now() - it->t0;
  out->process_cpu_s = mlsys__pipe_clock(CLOCK_PROCESS_CPUTIME_ID) - it->pcpu0;
  pthread_mutex_unlock(&it->mu);
  return mlsys__pipe_skip_log_copy(out, it->skcount, (const char *const *)it->sklog, it->nsklog, &it->skmu);
}

MLSYS_DEF mlsys_status mlsys_pipe_snapshot_diff(const mlsys_pipe_snapshot *a, const mlsys_pipe_snapshot *b, mlsys_pipe_snapshot *w) {
  int i;
  memset(w, 0, sizeof *w);
  if (!a || !b || a->nops != b->nops || a->nops <= 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: snapshot diff of %d and %d operators", a ? a->nops : 0, b ? b->nops : 0);
  for (i = 0; i < a->nops; i++)
    if (a->op[i].kind != b->op[i].kind || a->op[i].parent != b->op[i].parent)
      return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: snapshot diff: operator %d differs between the snapshots", i);
  w->op = (mlsys_pipe_op *)mlsys_alloc((size_t)b->nops, sizeof *w->op);
  if (!w->op) return MLSYS_ERR_NOMEM;
  w->nops = b->nops;
  memcpy(w->op, b->op, sizeof *w->op * (size_t)b->nops);
  for (i = 0; i < b->nops; i++) {
    mlsys_pipe_op *o = &w->op[i];
    const mlsys_pipe_op *x = &a->op[i];
    o->produced -= x->produced; o->consumed -= x->consumed; o->cpu_s -= x->cpu_s;
    o->bytes_produced -= x->bytes_produced; o->disk_bytes -= x->disk_bytes; o->rng_draws -= x->rng_draws;
    o->files_observed -= x->files_observed; o->observed_bytes -= x->observed_bytes;
    o->skipped -= x->skipped;
    if (o->cpu_s < 0) o->cpu_s = 0;
  }
  w->seconds = b->seconds - a->seconds;
  w->process_cpu_s = b->process_cpu_s > 0 && a->process_cpu_s >= 0 ? b->process_cpu_s - a->process_cpu_s : 0;
  /* the skips are counted since the open: the later snapshot's */
  return mlsys__pipe_skip_log_copy(w, b->skipped_distinct, (const char *const *)b->skip_log, b->nskip_log, NULL);
}

MLSYS_DEF void mlsys_pipe_snapshot_free(mlsys_pipe_snapshot *s) {
  int i;
  if (!s) return;
  mlsys_free(s->op);
  for (i = 0; i < s->nskip_log; i++) mlsys_free(s->skip_log[i]);
  mlsys_free(s->skip_log);
  memset(s, 0, sizeof *s);
}


/* ================================================================================================================
   Images: sniffing, the JPEG structure check, decoding (stb_image, libjpeg-turbo), augmentation, file listing
   (spec §7.4–7.6)
   ================================================================================================================ */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

/* stb_image: JPEG and PNG only, static to this translation unit, allocating through the mlsys hooks (so its pixel
   buffer is ours to hand out and mlsys_free), asserting through MLSYS_ASSERT. Compiled once per translation unit
   whichever implementation comes first: mlsys_pcr.h uses the same guard (MLSYS__STBI_COMPILED) with the same options,
   so both implementations may sit in one .c file in either order. A stb_image.h included by the program before the
   first of them would have declared its functions extern, hence the #error. */
#ifndef MLSYS__STBI_COMPILED
#define MLSYS__STBI_COMPILED
#ifdef STBI_INCLUDE_STB_IMAGE_H
#error "mlsys_pipeline.h: stb_image.h was included before the implementation; include it after, or in another file"
#endif
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_MALLOC(n) MLSYS_MALLOC(n)
#define STBI_REALLOC(p, n) MLSYS_REALLOC(p, n)
#define STBI_FREE(p) MLSYS_FREE(p)
#define STBI_ASSERT(x) MLSYS_ASSERT(x)
#include <stb/stb_image.h>
#undef STB_IMAGE_IMPLEMENTATION
#endif /* MLSYS__STBI_COMPILED */

#ifndef MLSYS_PIPE_NO_LIBJPEG
#include <setjmp.h>
#include <jpeglib.h>
#endif

/* The sniffer and the structure check live in mlsys_common.h (section 8), shared with mlsys_pcr.h. */
MLSYS_DEF int mlsys_pipe_image_sniff(const uint8_t *b, size_t n) { return mlsys_image_sniff(b, n); }
MLSYS_DEF const char *mlsys_pipe_image_format_name(int fmt) { return mlsys_image_format_name(fmt); }
MLSYS_DEF mlsys_status mlsys_pipe_jpeg_check(const uint8_t *buf, size_t n, mlsys_pipe_jpeg_info *info) {
  return mlsys_jpeg_check(buf, n, info, NULL, 0);
}

/* ---- decoders ---- */
static mlsys_status mlsys__pipe_img_opts(const mlsys_pipe_decode_desc *d, mlsys_pipe_decode_desc *o) {
  if (d) *o = *d;
  else memset(o, 0, sizeof *o);
  if (!o->decoder) o->decoder = MLSYS_PIPE_DEC_STB;
  if (!o->scale_denom) o->scale_denom = 1;
  if (!o->max_pixels) o->max_pixels = (int64_t)1 << 26;
  if (o->decoder != MLSYS_PIPE_DEC_STB && o->decoder != MLSYS_PIPE_DEC_LIBJPEG)
    return mlsys_set_error(MLSYS_ERR_ARG, "decode: unknown decoder %d (1 stb_image, 2 libjpeg)", o->decoder);
  if (o->scale_denom != 1 && o->scale_denom != 2 && o->scale_denom != 4 && o->scale_denom != 8)
    return mlsys_set_error(MLSYS_ERR_ARG, "decode: scale_denom %d (1, 2, 4 or 8)", o->scale_denom);
  if (o->max_pixels < 0) return mlsys_set_error(MLSYS_ERR_ARG, "decode: max_pixels %lld", (long long)o->max_pixels);
  return MLSYS_OK;
}

static mlsys_status mlsys__pipe_img_size_ok(int w, int h, const mlsys_pipe_decode_desc *o) {
  if ((int64_t)w * h > o->max_pixels)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "image %d x %d (%.1f Mpixel) exceeds the limit of %.1f Mpixel", w, h,
                           (double)w * h / 1048576.0, (double)o->max_pixels / 1048576.0);
  return MLSYS_OK;
}

/* stb_image has no reduced-size decode: average d × d boxes (partial boxes at the right and bottom edges average what
   they cover), the output size of libjpeg's DCT scaling, ⌈w/d⌉ × ⌈h/d⌉. */
static uint8_t *mlsys__pipe_img_box_down(const uint8_t *src, int w, int h, int d, int *ow, int *oh) {
  int W = (w + d - 1) / d, H = (h + d - 1) / d, ox, oy, x, y, c;
  uint8_t *dst = (uint8_t *)mlsys_alloc((size_t)W * H, 3);
  uint32_t *acc = (uint32_t *)mlsys_alloc((size_t)W * 3, sizeof(uint32_t));
  if (!dst || !acc) { mlsys_free(dst); mlsys_free(acc); return NULL; }
  for (oy = 0; oy < H; oy++) {
    int y1 = oy * d + d < h ? oy * d + d : h;
    memset(acc, 0, (size_t)W * 3 * sizeof(uint32_t));
    for (y = oy * d; y < y1; y++) {
      const uint8_t *row = src + (size_t)y * w * 3;
      for (ox = 0; ox < W; ox++) {
        int x1 = ox * d + d < w ? ox * d + d : w;
        for (x = ox * d; x < x1; x++)
          for (c = 0; c < 3; c++) acc[ox * 3 + c] += row[x * 3 + c];
      }
    }
    for (ox = 0; ox < W; ox++) {
      uint32_t cnt = (uint32_t)((ox * d + d < w ? d : w - ox * d) * (y1 - oy * d));
      for (c = 0; c < 3; c++) dst[((size_t)oy * W + ox) * 3 + c] = (uint8_t)((acc[ox * 3 + c] + cnt / 2) / cnt);
    }
  }
  mlsys_free(acc);
  *ow = W; *oh = H;
  return dst;
}

/* stb_image on buf (JPEG or PNG), then the box downscale when d > 1 */
static mlsys_status mlsys__pipe_img_stb(const uint8_t *buf, size_t n, int d, uint8_t **rgb, int *w, int *h) {
  int x, y, c;
  uint8_t *p;
  if (n > INT_MAX) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "stb_image: %zu bytes (at most 2^31 - 1)", n);
  p = stbi_load_from_memory(buf, (int)n, &x, &y, &c, 3);
  if (!p) {
    const char *why = stbi_failure_reason();
    if (why && !strcmp(why, "outofmem")) return mlsys_set_error(MLSYS_ERR_NOMEM, "stb_image: out of memory");
    return mlsys_set_error(MLSYS_ERR_PARSE, "stb_image: %s", why ? why : "decode failed");
  }
  if (d > 1) {
    uint8_t *q = mlsys__pipe_img_box_down(p, x, y, d, &x, &y);
    stbi_image_free(p);
    if (!q) return MLSYS_ERR_NOMEM;
    p = q;
  }
  *rgb = p; *w = x; *h = y;
  return MLSYS_OK;
}

#ifndef MLSYS_PIPE_NO_LIBJPEG
typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
} mlsys__pipe_img_jerr;

/* libjpeg's default error_exit calls exit(); ours returns to the decode call */
static void mlsys__pipe_img_jexit(j_common_ptr ci) {
  mlsys__pipe_img_jerr *e = (mlsys__pipe_img_jerr *)ci->err;
  (*ci->err->format_message)(ci, e->msg);
  longjmp(e->jb, 1);
}
/* libjpeg reports damaged data (premature end, a corrupt Huffman code, a marker inside a scan) as a warning (level −1)
   and goes on with grey blocks; a training pipeline must not silently learn from those, so a warning ends the decode.
   Levels ≥ 0 are trace messages. */
static void mlsys__pipe_img_jemit(j_common_ptr ci, int level) {
  if (level < 0) mlsys__pipe_img_jexit(ci);
}

static mlsys_status mlsys__pipe_img_libjpeg(const uint8_t *buf, size_t n, int d, uint8_t **rgb, int *w, int *h) {
  struct jpeg_decompress_struct ci;
  mlsys__pipe_img_jerr je;
  uint8_t *volatile out = NULL;   /* read after the longjmp */
  size_t stride;
  ci.err = jpeg_std_error(&je.pub);
  je.pub.error_exit = mlsys__pipe_img_jexit;
  je.pub.emit_message = mlsys__pipe_img_jemit;
  if (setjmp(je.jb)) {
    jpeg_destroy_decompress(&ci);
    mlsys_free(out);
    return mlsys_set_error(MLSYS_ERR_PARSE, "libjpeg: %s", je.msg);
  }
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, buf, (unsigned long)n);
  jpeg_read_header(&ci, TRUE);
  ci.out_color_space = JCS_RGB;   /* libjpeg-turbo converts gray to RGB too */
  ci.scale_num = 1;
  ci.scale_denom = (unsigned)d;
  jpeg_start_decompress(&ci);
  stride = (size_t)ci.output_width * 3;
  out = (uint8_t *)mlsys_alloc(stride, ci.output_height);
  if (!out) { jpeg_destroy_decompress(&ci); return MLSYS_ERR_NOMEM; }
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW rows[16];
    JDIMENSION k, left = ci.output_height - ci.output_scanline;
    for (k = 0; k < 16 && k < left; k++) rows[k] = out + (size_t)(ci.output_scanline + k) * stride;
    jpeg_read_scanlines(&ci, rows, k);
  }
  jpeg_finish_decompress(&ci);
  *w = (int)ci.output_width; *h = (int)ci.output_height;
  jpeg_destroy_decompress(&ci);
  *rgb = out;
  return MLSYS_OK;
}
#endif

/* A checked JPEG (in) through the chosen decoder at scale 1/d; bytes after EOI are not passed on. */
static mlsys_status mlsys__pipe_img_decode_jpeg(const uint8_t *buf, const mlsys_pipe_jpeg_info *in, const mlsys_pipe_decode_desc *o,
                                               int d, uint8_t **rgb, int *w, int *h) {
  size_t n = in->eoi + 2;
  mlsys_status st;
  char nm[16];
  snprintf(nm, sizeof nm, "SOF%d", in->sof - 0xC0);   /* in->sof is a SOFn code (0xC0..0xCF less DHT, JPG, DAC) */
  if ((st = mlsys__pipe_img_size_ok(in->width, in->height, o))) return st;
  if (in->components == 4)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "4-component JPEG (%s) is not supported: convert it to RGB",
                           in->adobe_transform == 2 ? "YCCK" : "CMYK");
  if (in->precision != 8)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%d-bit JPEG samples are not supported (8 only)", in->precision);
  /* both decode 8-bit Huffman coding (baseline SOF0, extended SOF1, progressive SOF2); libjpeg-turbo also arithmetic
     coding (SOF9, SOF10); neither lossless nor hierarchical frames */
  if (in->sof != 0xC0 && in->sof != 0xC1 && in->sof != 0xC2 && in->sof != 0xC9 && in->sof != 0xCA)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "JPEG coding %s (lossless or hierarchical) is not supported", nm);
  if (o->decoder == MLSYS_PIPE_DEC_STB) {
    if (in->sof == 0xC9 || in->sof == 0xCA)
      return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "stb_image does not decode arithmetic-coded JPEG (%s): use the libjpeg decoder", nm);
    return mlsys__pipe_img_stb(buf, n, d, rgb, w, h);
  }
#ifndef MLSYS_PIPE_NO_LIBJPEG
  return mlsys__pipe_img_libjpeg(buf, n, d, rgb, w, h);
#else
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "the libjpeg decoder is not in this build (MLSYS_PIPE_NO_LIBJPEG)");
#endif
}

/* The PNG counterpart of the JPEG check (PNG spec §5): IHDR first, chunks inside the buffer, an IEND chunk, so that
   a truncated PNG is an error naming it. stb_image 2.27 also computes NULL + 0 (undefined behaviour) on an empty IDAT
   before any image data; such a chunk carries nothing and is refused. */
static mlsys_status mlsys__pipe_img_png_check(const uint8_t *b, size_t n) {
  size_t pos = 8;
  int data = 0;
  if (n < 8 + 12 + 13 || memcmp(b + 12, "IHDR", 4) || b[8] || b[9] || b[10] || b[11] != 13)
    return mlsys_set_error(MLSYS_ERR_PARSE, "PNG: the first chunk is not a 13-byte IHDR");
  for (;;) {
    uint32_t len;
    char type[16];
    if (n - pos < 12) return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: PNG without an IEND chunk (file ends at byte %zu)", n);
    len = (uint32_t)b[pos] << 24 | (uint32_t)b[pos + 1] << 16 | (uint32_t)b[pos + 2] << 8 | b[pos + 3];
    if (isalpha(b[pos + 4]) && isalpha(b[pos + 5]) && isalpha(b[pos + 6]) && isalpha(b[pos + 7])) snprintf(type, sizeof type, "%.4s", (const char *)b + pos + 4);
    else snprintf(type, sizeof type, "0x%02X%02X%02X%02X", b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]);
    if (len > n - pos - 12)
      return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: PNG chunk %s at byte %zu (length %u) runs past the end of the data (byte %zu)",
                             type, pos, len, n);
    if (!strcmp(type, "IEND")) return MLSYS_OK;
    if (!strcmp(type, "IDAT")) {
      if (!len && !data) return mlsys_set_error(MLSYS_ERR_PARSE, "PNG: empty IDAT chunk at byte %zu before any image data", pos);
      data = 1;
    }
    pos += 12 + len;
  }
}

/* mlsys_pipe_jpeg_decode with parsed options */
static mlsys_status mlsys__pipe_img_decode(const uint8_t *buf, size_t n, const mlsys_pipe_decode_desc *o, uint8_t **rgb, int *w, int *h) {
  mlsys_pipe_jpeg_info in;
  mlsys_status st;
  if (o->decoder == MLSYS_PIPE_DEC_STB && o->accept_png && mlsys_pipe_image_sniff(buf, n) == MLSYS_PIPE_IMG_PNG) {
    int x, y, c;
    if (n > INT_MAX) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "stb_image: %zu bytes (at most 2^31 - 1)", n);
    if ((st = mlsys__pipe_img_png_check(buf, n))) return st;
    if (!stbi_info_from_memory(buf, (int)n, &x, &y, &c)) return mlsys_set_error(MLSYS_ERR_PARSE, "stb_image: PNG: %s", stbi_failure_reason());
    if ((st = mlsys__pipe_img_size_ok(x, y, o))) return st;
    return mlsys__pipe_img_stb(buf, n, o->scale_denom, rgb, w, h);
  }
  if ((st = mlsys_pipe_jpeg_check(buf, n, &in))) return st;
  return mlsys__pipe_img_decode_jpeg(buf, &in, o, o->scale_denom, rgb, w, h);
}

MLSYS_DEF mlsys_status mlsys_pipe_jpeg_decode(const uint8_t *buf, size_t n, const mlsys_pipe_decode_desc *d, uint8_t **rgb, int *w, int *h) {
  mlsys_pipe_decode_desc o;
  mlsys_status st;
  if (!rgb || !w || !h) return mlsys_set_error(MLSYS_ERR_ARG, "jpeg_decode: NULL output");
  *rgb = NULL; *w = *h = 0;
  if ((st = mlsys__pipe_img_opts(d, &o))) return st;
  return mlsys__pipe_img_decode(buf, n, &o, rgb, w, h);
}

/* ---- augmentation ---- */
static mlsys_status mlsys__pipe_img_crop_opts(const mlsys_pipe_crop_desc *d, mlsys_pipe_crop_desc *o) {
  if (d) *o = *d;
  else memset(o, 0, sizeof *o);
  if (!o->size) o->size = 224;
  if (o->scale_lo == 0 && o->scale_hi == 0) { o->scale_lo = 0.08; o->scale_hi = 1.0; }
  if (o->ratio_lo == 0 && o->ratio_hi == 0) { o->ratio_lo = 3.0 / 4.0; o->ratio_hi = 4.0 / 3.0; }
  if (o->size < 0 || o->size > 32768) return mlsys_set_error(MLSYS_ERR_ARG, "random_resized_crop: size %d (1 to 32768)", o->size);
  if (!(o->scale_lo >= 0 && o->scale_lo <= o->scale_hi && o->scale_hi > 0 && isfinite(o->scale_hi)))
    return mlsys_set_error(MLSYS_ERR_ARG, "random_resized_crop: scale (%g, %g): need 0 <= lo <= hi, hi > 0", o->scale_lo, o->scale_hi);
  if (!(o->ratio_lo > 0 && o->ratio_lo <= o->ratio_hi && isfinite(o->ratio_hi)))
    return mlsys_set_error(MLSYS_ERR_ARG, "random_resized_crop: ratio (%g, %g): need 0 < lo <= hi", o->ratio_lo, o->ratio_hi);
  return MLSYS_OK;
}

/* torchvision RandomResizedCrop.get_params; o is validated */
static void mlsys__pipe_img_box(int w, int h, const mlsys_pipe_crop_desc *o, mlsys_rng *r, int box[4], int *fallback) {
  double area = (double)w * h, lr0 = log(o->ratio_lo), lr1 = log(o->ratio_hi), in_ratio;
  int i, cw, ch;
  for (i = 0; i < 10; i++) {
    double target = area * (o->scale_lo + (o->scale_hi - o->scale_lo) * mlsys_rng_uniform(r));
    double ar = exp(lr0 + (lr1 - lr0) * mlsys_rng_uniform(r));
    double fw = nearbyint(sqrt(target * ar)), fh = nearbyint(sqrt(target / ar));   /* Python's round: half to even */
    if (fw > 0 && fw <= w && fh > 0 && fh <= h) {
      cw = (int)fw; ch = (int)fh;
      box[1] = mlsys_rng_range(r, 0, h - ch);
      box[0] = mlsys_rng_range(r, 0, w - cw);
      box[2] = cw; box[3] = ch;
      if (fallback) *fallback = 0;
      return;
    }
  }
  in_ratio = (double)w / h;
  if (in_ratio < o->ratio_lo) { cw = w; ch = (int)nearbyint(cw / o->ratio_lo); }
  else if (in_ratio > o->ratio_hi) { ch = h; cw = (int)nearbyint(ch * o->ratio_hi); }
  else { cw = w; ch = h; }
  if (cw < 1) cw = 1;   /* torchvision would return an empty crop for a ratio bound beyond the image's pixel count */
  if (ch < 1) ch = 1;
  box[0] = (w - cw) / 2; box[1] = (h - ch) / 2; box[2] = cw; box[3] = ch;
  if (fallback) *fallback = 1;
}

MLSYS_DEF mlsys_status mlsys_pipe_rrc_box(int w, int h, const mlsys_pipe_crop_desc *d, mlsys_rng *r, int box[4], int *fallback) {
  mlsys_pipe_crop_desc o;
  mlsys_status st;
  if ((st = mlsys__pipe_img_crop_opts(d, &o))) return st;
  if (w <= 0 || h <= 0 || !r || !box) return mlsys_set_error(MLSYS_ERR_ARG, "rrc_box: image %d x %d (or NULL rng/box)", w, h);
  mlsys__pipe_img_box(w, h, &o, r, box, fallback);
  return MLSYS_OK;
}

/* one source row interpolated horizontally at the output columns */
static void mlsys__pipe_img_hrow(const uint8_t *row, const int *x0, const int *x1, const float *fx, int dw, float *out) {
  int i, c;
  for (i = 0; i < dw; i++) {
    const uint8_t *p = row + (size_t)x0[i] * 3, *q = row + (size_t)x1[i] * 3;
    for (c = 0; c < 3; c++) out[i * 3 + c] = (float)p[c] + fx[i] * (float)(q[c] - p[c]);
  }
}

/* Bilinear resize of the box (bx, by, bw, bh) of src, which may have fractional corners (a box drawn on the full-size
   frame, divided by a DCT scale); source coordinates are clamped to the box and the image. Separable: each output row
   blends two horizontally interpolated source rows, kept while consecutive output rows reuse them. */
static mlsys_status mlsys__pipe_img_resize(const uint8_t *src, int sw, int sh, double bx, double by, double bw, double bh,
                                           uint8_t *dst, int dw, int dh) {
  int *x0 = (int *)mlsys_alloc((size_t)dw, 2 * sizeof(int));
  float *fx = (float *)mlsys_alloc((size_t)dw, sizeof(float));
  float *rows = (float *)mlsys_alloc((size_t)dw * 3, 2 * sizeof(float)), *ra = rows, *rb = rows + (size_t)dw * 3;
  double xlo = fmax(bx, 0), xhi = fmax(xlo, fmin(bx + bw - 1, sw - 1)), ylo = fmax(by, 0), yhi = fmax(ylo, fmin(by + bh - 1, sh - 1));
  int *x1 = x0 + dw, i, dy, ca = -1, cb = -1;   /* the source rows held in ra and rb */
  if (!x0 || !fx || !rows) { mlsys_free(x0); mlsys_free(fx); mlsys_free(rows); return MLSYS_ERR_NOMEM; }
  for (i = 0; i < dw; i++) {
    double sx = fmin(fmax(bx + (i + 0.5) * (bw / dw) - 0.5, xlo), xhi);
    x0[i] = (int)sx;
    x1[i] = x0[i] + 1 < sw ? x0[i] + 1 : x0[i];
    fx[i] = (float)(sx - x0[i]);
  }
  for (dy = 0; dy < dh; dy++) {
    double sy = fmin(fmax(by + (dy + 0.5) * (bh / dh) - 0.5, ylo), yhi);
    int y0 = (int)sy, y1 = y0 + 1 < sh ? y0 + 1 : y0;
    float fy = (float)(sy - y0);
    uint8_t *o = dst + (size_t)dy * dw * 3;
    if (y0 != ca && y0 == cb) { float *t = ra; ra = rb; rb = t; cb = ca; ca = y0; }
    if (ca != y0) { mlsys__pipe_img_hrow(src + (size_t)y0 * sw * 3, x0, x1, fx, dw, ra); ca = y0; }
    if (cb != y1) { mlsys__pipe_img_hrow(src + (size_t)y1 * sw * 3, x0, x1, fx, dw, rb); cb = y1; }
    for (i = 0; i < dw * 3; i++) o[i] = (uint8_t)(ra[i] + fy * (rb[i] - ra[i]) + 0.5f);
  }
  mlsys_free(x0); mlsys_free(fx); mlsys_free(rows);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_resize_bilinear(const uint8_t *src, int sw, int sh, int x, int y, int cw, int ch, uint8_t *dst,
                                                  int dw, int dh) {
  if (!src || !dst || sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0 || cw <= 0 || ch <= 0 || x < 0 || y < 0 || cw > sw - x || ch > sh - y)
    return mlsys_set_error(MLSYS_ERR_ARG, "resize_bilinear: box (%d, %d, %d x %d) of a %d x %d image to %d x %d", x, y, cw, ch, sw, sh, dw, dh);
  return mlsys__pipe_img_resize(src, sw, sh, x, y, cw, ch, dst, dw, dh);
}

MLSYS_DEF void mlsys_pipe_hflip(uint8_t *img, int w, int h) {
  int x, y, c;
  for (y = 0; y < h; y++) {
    uint8_t *row = img + (size_t)y * w * 3;
    for (x = 0; x < w / 2; x++)
      for (c = 0; c < 3; c++) {
        uint8_t t = row[x * 3 + c];
        row[x * 3 + c] = row[(w - 1 - x) * 3 + c];
        row[(w - 1 - x) * 3 + c] = t;
      }
  }
}

MLSYS_DEF mlsys_status mlsys_pipe_normalize(const uint8_t *src, int64_t npixels, const mlsys_pipe_norm_desc *d, float *dst) {
  static const mlsys_pipe_norm_desc imagenet = {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}};
  const mlsys_pipe_norm_desc *o = d && (d->std[0] != 0 || d->std[1] != 0 || d->std[2] != 0) ? d : &imagenet;
  float lut[3][256];   /* the double expression per channel and byte value, rounded once */
  int64_t i;
  int c, v;
  if (npixels < 0) return mlsys_set_error(MLSYS_ERR_ARG, "normalize: %lld pixels", (long long)npixels);
  for (c = 0; c < 3; c++) {
    if (!(o->std[c] > 0 && isfinite(o->mean[c]))) return mlsys_set_error(MLSYS_ERR_ARG, "normalize: channel %d mean %g std %g", c, o->mean[c], o->std[c]);
    for (v = 0; v < 256; v++) lut[c][v] = (float)((v / 255.0 - o->mean[c]) / o->std[c]);
  }
  for (i = 0; i < npixels; i++)
    for (c = 0; c < 3; c++) dst[i * 3 + c] = lut[c][src[i * 3 + c]];
  return MLSYS_OK;
}

/* ---- map UDFs ---- */
static const char *mlsys__pipe_img_dtype(int dt) {
  switch (dt) {
    case MLSYS_PIPE_U8: return "U8";
    case MLSYS_PIPE_I32: return "I32";
    case MLSYS_PIPE_I64: return "I64";
    case MLSYS_PIPE_F32: return "F32";
    case MLSYS_PIPE_F64: return "F64";
    default: return "unknown-dtype";
  }
}

/* component 0 of a UDF's input as an RGB8 image {h, w, 3}, or an error naming the UDF and what it got */
static mlsys_status mlsys__pipe_img_input(const mlsys_pipe_elem *in, const char *udf, int *w, int *h) {
  const mlsys_pipe_tensor *t = &in->comp[0];
  char shape[96] = "{";
  int i;
  if (in->ncomp < 1 || in->ncomp > 4) return mlsys_set_error(MLSYS_ERR_ARG, "%s: element with %d components (the image is component 0)", udf, in->ncomp);
  if (t->dtype == MLSYS_PIPE_U8 && t->ndim == 3 && t->shape[2] == 3 && t->shape[0] > 0 && t->shape[0] <= INT_MAX && t->shape[1] > 0 &&
      t->shape[1] <= INT_MAX && (uint64_t)t->shape[0] * (uint64_t)t->shape[1] * 3 == t->nbytes) {
    *h = (int)t->shape[0]; *w = (int)t->shape[1];
    return MLSYS_OK;
  }
  for (i = 0; i < t->ndim && i < 4; i++)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "}");
  return mlsys_set_error(MLSYS_ERR_ARG, "%s: component 0 must be an RGB8 image (U8 {h, w, 3}), got %s %s (%zu bytes)", udf,
                         mlsys__pipe_img_dtype(t->dtype), shape, t->nbytes);
}

/* out: component 0 = data (owned, {h, w, 3} of dtype), components 1.. copied from in. On failure out is released. */
static mlsys_status mlsys__pipe_img_output(const mlsys_pipe_elem *in, mlsys_pipe_elem *out, void *data, int dtype, size_t nbytes, int h, int w) {
  mlsys_pipe_tensor *t = &out->comp[0];
  int c;
  t->data = data; t->nbytes = nbytes; t->dtype = dtype; t->ndim = 3;
  t->shape[0] = h; t->shape[1] = w; t->shape[2] = 3; t->shape[3] = 0;
  out->ncomp = in->ncomp > 1 ? in->ncomp : 1;
  for (c = 1; c < in->ncomp; c++) {
    const mlsys_pipe_tensor *s = &in->comp[c];
    void *p = mlsys_pipe_tensor_alloc(out, c, s->nbytes, s->dtype);
    if (!p) { mlsys_pipe_elem_release(out); return MLSYS_ERR_NOMEM; }
    if (s->nbytes) memcpy(p, s->data, s->nbytes);
    out->comp[c].ndim = s->ndim;
    memcpy(out->comp[c].shape, s->shape, sizeof s->shape);
  }
  return MLSYS_OK;
}

/* component 0 of a UDF's input as the bytes of an encoded file */
static mlsys_status mlsys__pipe_img_bytes(const mlsys_pipe_elem *in, const char *udf) {
  if (in->ncomp < 1 || in->ncomp > 4 || in->comp[0].dtype != MLSYS_PIPE_U8)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: component 0 must be the file's bytes (U8), got %d components, dtype %s", udf,
                           in->ncomp, in->ncomp >= 1 && in->ncomp <= 4 ? mlsys__pipe_img_dtype(in->comp[0].dtype) : "-");
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_pipe_udf_decode(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  mlsys_pipe_decode_desc o;
  uint8_t *rgb;
  int w, h;
  mlsys_status st;
  (void)rng;
  if ((st = mlsys__pipe_img_bytes(in, "decode")) || (st = mlsys__pipe_img_opts((const mlsys_pipe_decode_desc *)user, &o))) return (int)st;
  if ((st = mlsys__pipe_img_decode((const uint8_t *)in->comp[0].data, in->comp[0].nbytes, &o, &rgb, &w, &h)))
    return (int)mlsys_prefix_error("decode");
  return (int)mlsys__pipe_img_output(in, out, rgb, MLSYS_PIPE_U8, (size_t)w * h * 3, h, w);
}

MLSYS_DEF int mlsys_pipe_udf_random_resized_crop(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  mlsys_pipe_crop_desc o;
  uint8_t *dst;
  int w, h, box[4];
  mlsys_status st;
  if ((st = mlsys__pipe_img_input(in, "random_resized_crop", &w, &h)) || (st = mlsys__pipe_img_crop_opts((const mlsys_pipe_crop_desc *)user, &o)))
    return (int)st;
  mlsys__pipe_img_box(w, h, &o, &rng->r, box, NULL);
  if (!(dst = (uint8_t *)mlsys_alloc((size_t)o.size * o.size, 3))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys__pipe_img_resize((const uint8_t *)in->comp[0].data, w, h, box[0], box[1], box[2], box[3], dst, o.size, o.size))) {
    mlsys_free(dst);
    return (int)st;
  }
  return (int)mlsys__pipe_img_output(in, out, dst, MLSYS_PIPE_U8, (size_t)o.size * o.size * 3, o.size, o.size);
}

MLSYS_DEF int mlsys_pipe_udf_flip(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  uint8_t *dst;
  int w, h, flip;
  mlsys_status st;
  (void)user;
  if ((st = mlsys__pipe_img_input(in, "flip", &w, &h))) return (int)st;
  flip = mlsys_rng_uniform(&rng->r) < 0.5;
  if (!(dst = (uint8_t *)mlsys_alloc(in->comp[0].nbytes, 1))) return MLSYS_ERR_NOMEM;
  memcpy(dst, in->comp[0].data, in->comp[0].nbytes);
  if (flip) mlsys_pipe_hflip(dst, w, h);
  return (int)mlsys__pipe_img_output(in, out, dst, MLSYS_PIPE_U8, in->comp[0].nbytes, h, w);
}

MLSYS_DEF int mlsys_pipe_udf_normalize(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  float *dst;
  int w, h;
  mlsys_status st;
  (void)rng;
  if ((st = mlsys__pipe_img_input(in, "normalize", &w, &h))) return (int)st;
  if (!(dst = (float *)mlsys_alloc(in->comp[0].nbytes, sizeof(float)))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys_pipe_normalize((const uint8_t *)in->comp[0].data, (int64_t)w * h, (const mlsys_pipe_norm_desc *)user, dst))) {
    mlsys_free(dst);
    return (int)mlsys_prefix_error("normalize");
  }
  return (int)mlsys__pipe_img_output(in, out, dst, MLSYS_PIPE_F32, in->comp[0].nbytes * sizeof(float), h, w);
}

MLSYS_DEF int mlsys_pipe_udf_decode_crop_flip(void *user, const mlsys_pipe_elem *in, mlsys_pipe_elem *out, mlsys_pipe_rng *rng) {
  static const mlsys_pipe_decode_crop_flip_desc dflt = {{0, 0, 0, 0}, {0, 0, 0, 0, 0}, 0};
  const mlsys_pipe_decode_crop_flip_desc *fd = user ? (const mlsys_pipe_decode_crop_flip_desc *)user : &dflt;
  const uint8_t *buf = (const uint8_t *)in->comp[0].data;
  size_t n = in->comp[0].nbytes;
  mlsys_pipe_decode_desc o;
  mlsys_pipe_crop_desc co;
  mlsys_pipe_jpeg_info info;
  uint8_t *img = NULL, *dst;
  int w, h, box[4], d = 1;
  mlsys_status st;
  if ((st = mlsys__pipe_img_bytes(in, "decode_crop_flip")) || (st = mlsys__pipe_img_opts(&fd->decode, &o)) ||
      (st = mlsys__pipe_img_crop_opts(&fd->crop, &co)))
    return (int)st;
  if (fd->auto_scale && o.decoder == MLSYS_PIPE_DEC_LIBJPEG && mlsys_pipe_image_sniff(buf, n) == MLSYS_PIPE_IMG_JPEG) {
    /* the box is drawn on the frame's full size (known from the SOF before decoding); the decode then skips the
       resolution the resize would throw away */
    if ((st = mlsys_pipe_jpeg_check(buf, n, &info))) return (int)mlsys_prefix_error("decode_crop_flip");
    mlsys__pipe_img_box(info.width, info.height, &co, &rng->r, box, NULL);
    for (d = 8; d > 1 && (box[2] < co.size * d || box[3] < co.size * d); d /= 2) {}
    st = mlsys__pipe_img_decode_jpeg(buf, &info, &o, d, &img, &w, &h);
  } else {
    if (!(st = mlsys__pipe_img_decode(buf, n, &o, &img, &w, &h))) mlsys__pipe_img_box(w, h, &co, &rng->r, box, NULL);
  }
  if (st) return (int)mlsys_prefix_error("decode_crop_flip");
  if (!(dst = (uint8_t *)mlsys_alloc((size_t)co.size * co.size, 3))) { mlsys_free(img); return MLSYS_ERR_NOMEM; }
  st = mlsys__pipe_img_resize(img, w, h, (double)box[0] / d, (double)box[1] / d, (double)box[2] / d, (double)box[3] / d, dst, co.size, co.size);
  mlsys_free(img);
  if (st) { mlsys_free(dst); return (int)st; }
  if (mlsys_rng_uniform(&rng->r) < 0.5) mlsys_pipe_hflip(dst, co.size, co.size);
  return (int)mlsys__pipe_img_output(in, out, dst, MLSYS_PIPE_U8, (size_t)co.size * co.size * 3, co.size, co.size);
}

/* ---- listing image files ---- */
typedef struct {
  char *path;
  dev_t dev;
  ino_t ino;
} mlsys__pipe_img_file;
typedef struct {
  mlsys__pipe_img_file *v;
  int64_t n, cap;
} mlsys__pipe_img_files;

static int mlsys__pipe_img_ends_with(const char *s, const char *suffix) {   /* ASCII, case-insensitive */
  size_t n = strlen(s), k = strlen(suffix), i;
  if (n <= k) return 0;
  for (i = 0; i < k; i++) {
    char a = s[n - k + i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != suffix[i]) return 0;
  }
  return 1;
}

static mlsys_status mlsys__pipe_img_walk(const char *dir, mlsys__pipe_img_files *fs) {
  DIR *dp = opendir(dir);
  size_t dl = strlen(dir);
  mlsys_status st = MLSYS_OK;
  if (!dp) return mlsys_set_error(MLSYS_ERR_IO, "list_images: cannot open directory '%s': %s", dir, strerror(errno));
  while (!st) {
    struct dirent *de;
    struct stat ls, fst;
    char *path;
    size_t nl;
    errno = 0;
    if (!(de = readdir(dp))) {
      if (errno) st = mlsys_set_error(MLSYS_ERR_IO, "list_images: cannot read directory '%s': %s", dir, strerror(errno));
      break;
    }
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    nl = strlen(de->d_name);
    if (!(path = (char *)mlsys_alloc(dl + nl + 2, 1))) { st = MLSYS_ERR_NOMEM; break; }
    memcpy(path, dir, dl);
    if (dl && dir[dl - 1] == '/') memcpy(path + dl, de->d_name, nl + 1);
    else { path[dl] = '/'; memcpy(path + dl + 1, de->d_name, nl + 1); }
    if (lstat(path, &ls)) {
      st = mlsys_set_error(MLSYS_ERR_IO, "list_images: cannot stat '%s': %s", path, strerror(errno));
    } else if (S_ISDIR(ls.st_mode)) {
      st = mlsys__pipe_img_walk(path, fs);
    } else if ((S_ISREG(ls.st_mode) || S_ISLNK(ls.st_mode)) &&
               (mlsys__pipe_img_ends_with(de->d_name, ".jpg") || mlsys__pipe_img_ends_with(de->d_name, ".jpeg")) &&
               !stat(path, &fst) && S_ISREG(fst.st_mode)) {   /* dangling links and links to directories are not images */
      if (fs->n == fs->cap) {
        int64_t cap = fs->cap ? 2 * fs->cap : 256;
        mlsys__pipe_img_file *v = (mlsys__pipe_img_file *)mlsys_realloc_array(fs->v, (size_t)cap, sizeof *v);
        if (!v) { mlsys_free(path); st = MLSYS_ERR_NOMEM; break; }
        fs->v = v; fs->cap = cap;
      }
      fs->v[fs->n].path = path; fs->v[fs->n].dev = fst.st_dev; fs->v[fs->n].ino = fst.st_ino;
      fs->n++;
      continue;
    }
    mlsys_free(path);
  }
  closedir(dp);
  return st;
}

static int mlsys__pipe_img_by_path(const void *a, const void *b) {
  return strcmp(((const mlsys__pipe_img_file *)a)->path, ((const mlsys__pipe_img_file *)b)->path);
}
static int mlsys__pipe_img_by_id(const void *a, const void *b) {   /* file identity, then path */
  const mlsys__pipe_img_file *x = (const mlsys__pipe_img_file *)a, *y = (const mlsys__pipe_img_file *)b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return strcmp(x->path, y->path);
}

MLSYS_DEF mlsys_status mlsys_pipe_list_images(const char *dir, char ***paths, int64_t *n) {
  mlsys__pipe_img_files fs = {NULL, 0, 0};
  mlsys_status st;
  int64_t i, k = 0;
  char **out = NULL;
  if (!dir || !paths || !n) return mlsys_set_error(MLSYS_ERR_ARG, "list_images: NULL argument");
  *paths = NULL; *n = 0;
  if (!(st = mlsys__pipe_img_walk(dir, &fs)) && !(out = (char **)mlsys_alloc((size_t)fs.n + 1, sizeof(char *)))) st = MLSYS_ERR_NOMEM;
  if (st) {
    for (i = 0; i < fs.n; i++) mlsys_free(fs.v[i].path);
    mlsys_free(fs.v);
    return st;
  }
  /* a file reached through several links is kept under the first of its paths */
  if (fs.n > 1) qsort(fs.v, (size_t)fs.n, sizeof *fs.v, mlsys__pipe_img_by_id);
  for (i = 0; i < fs.n; i++) {
    if (k > 0 && fs.v[k - 1].dev == fs.v[i].dev && fs.v[k - 1].ino == fs.v[i].ino) mlsys_free(fs.v[i].path);
    else fs.v[k++] = fs.v[i];
  }
  if (k > 1) qsort(fs.v, (size_t)k, sizeof *fs.v, mlsys__pipe_img_by_path);
  for (i = 0; i < k; i++) out[i] = fs.v[i].path;
  mlsys_free(fs.v);
  *paths = out; *n = k;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_pipe_paths_free(char **paths, int64_t n) {
  int64_t i;
  if (!paths) return;
  for (i = 0; i < n; i++) mlsys_free(paths[i]);
  mlsys_free(paths);
}

/* ================================================================================================================
   The JPEG training pipeline
   ================================================================================================================ */
typedef struct {
  mlsys_pipe_decode_desc dec;
  mlsys_pipe_crop_desc crop;
  mlsys_pipe_decode_crop_flip_desc fused;
} mlsys__pipe_jpeg_ctx;

/* defaults and checks shared by both builders; o's fields all −1 */
static mlsys_status mlsys__pipe_jpeg_desc(mlsys_pipe *p, const mlsys_pipe_jpeg_desc *dd, mlsys_pipe_jpeg_desc *d, mlsys_pipe_jpeg_nodes *o) {
  memset(d, 0, sizeof *d);
  if (dd) *d = *dd;
  if (!p || !o) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: jpeg_pipeline needs a pipe and a nodes struct");
  o->files = o->decode = o->repeat = o->crop = o->flip = o->normalize = o->batch = o->root = -1;
  if (d->batch < 0 || d->size < 0 || d->size > 32768 || d->epochs < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: jpeg_pipeline batch %d, size %d, epochs %lld", d->batch, d->size, (long long)d->epochs);
  return MLSYS_OK;
}

/* decode → repeat → crop → flip → normalize → batch → prefetch (or fused) above o->files */
static mlsys_status mlsys__pipe_jpeg_chain(mlsys_pipe *p, const mlsys_pipe_jpeg_desc *dp, mlsys_pipe_jpeg_nodes *o) {
  const mlsys_pipe_jpeg_desc d = *dp;
  mlsys_pipe_map_desc md;
  mlsys__pipe_jpeg_ctx *ctx;
  mlsys_status st;
  int cur;
  /* the UDFs' descs must outlive the iterators: the pipe owns them (freed with it) */
  if (!(ctx = (mlsys__pipe_jpeg_ctx *)mlsys_calloc(1, sizeof *ctx))) return MLSYS_ERR_NOMEM;
  if (mlsys__pipe_own(p, ctx)) { mlsys_free(ctx); return MLSYS_ERR_NOMEM; }
  ctx->dec.decoder = d.decoder ? d.decoder : MLSYS_PIPE_DEC_LIBJPEG;
  ctx->crop.size = d.size ? d.size : 224;
  ctx->fused.decode = ctx->dec;
  ctx->fused.crop = ctx->crop;
  ctx->fused.auto_scale = ctx->dec.decoder == MLSYS_PIPE_DEC_LIBJPEG;
  memset(&md, 0, sizeof md);
  md.on_error = d.fail_on_error ? MLSYS_PIPE_ON_ERROR_FAIL : MLSYS_PIPE_ON_ERROR_SKIP;
  if (d.fused) {
    /* fused: the repeat goes under the one operator (its output is random: nothing above the files is cacheable) */
    if ((st = mlsys_pipe_repeat(p, o->files, d.epochs ? d.epochs : -1, &o->repeat))) return st;
    md.fn = mlsys_pipe_udf_decode_crop_flip; md.user = &ctx->fused; md.name = "decode_crop_flip";
    if ((st = mlsys_pipe_map(p, o->repeat, &md, &o->crop))) return st;
    cur = o->crop;
  } else {
    md.fn = mlsys_pipe_udf_decode; md.user = &ctx->dec; md.name = "decode";
    if ((st = mlsys_pipe_map(p, o->files, &md, &o->decode))) return st;
    if ((st = mlsys_pipe_repeat(p, o->decode, d.epochs ? d.epochs : -1, &o->repeat))) return st;
    md.on_error = MLSYS_PIPE_ON_ERROR_FAIL;   /* past decode every element is an image: an error here is a bug */
    md.fn = mlsys_pipe_udf_random_resized_crop; md.user = &ctx->crop; md.name = "random_resized_crop";
    if ((st = mlsys_pipe_map(p, o->repeat, &md, &o->crop))) return st;
    md.fn = mlsys_pipe_udf_flip; md.user = NULL; md.name = "flip";
    if ((st = mlsys_pipe_map(p, o->crop, &md, &o->flip))) return st;
    cur = o->flip;
  }
  if (!d.no_normalize) {
    md.fn = mlsys_pipe_udf_normalize; md.user = NULL; md.name = "normalize"; md.on_error = MLSYS_PIPE_ON_ERROR_FAIL;
    if ((st = mlsys_pipe_map(p, cur, &md, &o->normalize))) return st;
    cur = o->normalize;
  }
  if ((st = mlsys_pipe_batch(p, cur, d.batch ? d.batch : 32, d.drop_remainder, &o->batch))) return st;
  return mlsys_pipe_prefetch(p, o->batch, 0, &o->root);
}

MLSYS_DEF mlsys_status mlsys_pipe_jpeg_pipeline(mlsys_pipe *p, const char *const *paths, int64_t n, const mlsys_pipe_jpeg_desc *dd,
                                                mlsys_pipe_jpeg_nodes *o) {
  mlsys_pipe_jpeg_desc d;
  mlsys_pipe_source_desc sd;
  mlsys_status st;
  if ((st = mlsys__pipe_jpeg_desc(p, dd, &d, o))) return st;
  if (n <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: jpeg_pipeline over %lld files (need at least one)", (long long)n);
  memset(&sd, 0, sizeof sd);
  sd.throttle = d.throttle; sd.on_error = d.fail_on_error ? MLSYS_PIPE_ON_ERROR_FAIL : MLSYS_PIPE_ON_ERROR_SKIP;
  sd.name = "files";
  if ((st = mlsys_pipe_files(p, paths, n, &sd, &o->files))) return st;
  return mlsys__pipe_jpeg_chain(p, &d, o);
}

MLSYS_DEF mlsys_status mlsys_pipe_jpeg_pipeline_from(mlsys_pipe *p, int source, const mlsys_pipe_jpeg_desc *dd, mlsys_pipe_jpeg_nodes *o) {
  mlsys_pipe_jpeg_desc d;
  mlsys_status st;
  if ((st = mlsys__pipe_jpeg_desc(p, dd, &d, o))) return st;
  if (source < 0 || source >= p->n)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: jpeg_pipeline_from: source %d is not a node of this pipe (it has %d)", source, p->n);
  o->files = source;
  return mlsys__pipe_jpeg_chain(p, &d, o);
}

/* ================================================================================================================
   Tracing windows and tuning (spec §3.6, §3.8, §4)
   ================================================================================================================ */
static int mlsys__pipe_caches_done(mlsys_pipe_iter *it) {
  int i, done = 1;
  pthread_mutex_lock(&it->mu);
  for (i = 0; i < it->n; i++)
    if (it->st[i].nd->kind == MLSYS_PIPE_OP_CACHE) {
      pthread_mutex_lock(&it->st[i].cmu);
      if (!it->st[i].cache_done) done = 0;
      pthread_mutex_unlock(&it->st[i].cmu);
    }
  pthread_mutex_unlock(&it->mu);
  return done;
}

/* The failure of a trace in which no element reached the root (s = the snapshot since the open). */
static mlsys_status mlsys__pipe_trace_empty(const mlsys_pipe_snapshot *s, mlsys_status first) {
  char buf[1536];
  size_t o = 0;
  int64_t total = 0;
  int i, shown = s->nskip_log < 3 ? s->nskip_log : 3;
  for (i = 0; i < s->nops; i++) total += s->op[i].skipped;
  if (total == 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: no element reached the root '%s' (node %d): the input ended first (an empty "
                           "source, or fewer elements than one batch with drop_remainder)", s->op[0].name, s->op[0].node);
  buf[0] = 0;
  for (i = 0; i < shown && o < sizeof buf; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? "; " : "",
                          s->skip_log[i] + (strncmp(s->skip_log[i], "pipeline: ", 10) ? 0 : 10));
  if (s->skipped_distinct > shown && o < sizeof buf)
    snprintf(buf + o, sizeof buf - o, "; and %lld more", (long long)(s->skipped_distinct - shown));
  return mlsys_set_error(first ? first : MLSYS_ERR_ARG, "pipeline: no element reached the root '%s' (node %d) before the input ended; "
                         "%lld element%s %s skipped on errors (%lld distinct, on_error = skip): %s", s->op[0].name, s->op[0].node,
                         (long long)total, total == 1 ? "" : "s", total == 1 ? "was" : "were", (long long)s->skipped_distinct, buf);
}

/* A window by time (elements ≤ 0) or by work (elements > 0 root elements after warmup_elements). */
static mlsys_status mlsys__pipe_trace(mlsys_pipe *p, int root, double seconds, double warmup_s, int64_t elements, int64_t warmup_elements,
                                      mlsys_pipe_snapshot *win, int64_t *elems) {
  mlsys_pipe_iter *it;
  mlsys_pipe_snapshot s0, s1;
  mlsys_pipe_elem e;
  mlsys_status st, first;
  int end = 0, have0 = 0;
  int64_t k = 0;
  double t0;
  memset(win, 0, sizeof *win);
  memset(&s0, 0, sizeof s0);
  memset(&s1, 0, sizeof s1);
  if (elems) *elems = 0;
  if ((st = mlsys_pipe_open(p, root, &it))) return st;
  t0 = mlsys_now();
  /* warm-up: buffers fill, shuffle buffers load, caches complete their first pass (risk 4 of the spec); the 120 s
     only guards against a cache whose input never ends */
  while (!end) {
    int more = elements > 0 ? k < warmup_elements : mlsys_now() - t0 < warmup_s;
    if (!more && (mlsys__pipe_caches_done(it) || mlsys_now() - t0 >= 120)) break;
    if ((st = mlsys_pipe_next(it, &e, &end))) goto fail;
    mlsys_pipe_elem_release(&e);
    k++;
  }
  if (!end) {
    if ((st = mlsys_pipe_snapshot_take(it, &s0))) goto fail;
    have0 = 1;
    t0 = mlsys_now();
    k = 0;
    while (!end && (elements > 0 ? k < elements : mlsys_now() - t0 < seconds)) {
      if ((st = mlsys_pipe_next(it, &e, &end))) goto fail;
      mlsys_pipe_elem_release(&e);
      k++;
    }
  }
  if ((st = mlsys_pipe_snapshot_take(it, &s1))) goto fail;
  pthread_mutex_lock(&it->skmu);
  first = it->skst;
  pthread_mutex_unlock(&it->skmu);
  mlsys_pipe_close(it);
  if (s1.op[0].produced == 0) {
    /* nothing reached the root: an empty window would analyse to X = 0 with a meaningless bottleneck */
    st = mlsys__pipe_trace_empty(&s1, first);
    mlsys_pipe_snapshot_free(&s1);
    mlsys_pipe_snapshot_free(&s0);
    return st;
  }
  if (have0) {
    st = mlsys_pipe_snapshot_diff(&s0, &s1, win);
    mlsys_pipe_snapshot_free(&s1);
  } else *win = s1;
  mlsys_pipe_snapshot_free(&s0);
  if (!st && elems) *elems = win->op[0].produced;
  return st;
fail:
  mlsys_pipe_snapshot_free(&s0);
  mlsys_pipe_close(it);
  return st;
}

MLSYS_DEF mlsys_status mlsys_pipe_trace(mlsys_pipe *p, int root, double seconds, double warmup_s, mlsys_pipe_snapshot *win, int64_t *elems) {
  if (win) memset(win, 0, sizeof *win);
  if (elems) *elems = 0;
  if (!win || !(seconds > 0) || warmup_s < 0) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: trace window %g s, warm-up %g s", seconds, warmup_s);
  return mlsys__pipe_trace(p, root, seconds, warmup_s, 0, 0, win, elems);
}

MLSYS_DEF mlsys_status mlsys_pipe_trace_elements(mlsys_pipe *p, int root, int64_t elements, int64_t warmup_elements, mlsys_pipe_snapshot *win,
                                                 int64_t *elems) {
  if (win) memset(win, 0, sizeof *win);
  if (elems) *elems = 0;
  if (!win || elements < 1 || warmup_elements < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: trace window of %lld elements, warm-up %lld (need >= 1 and >= 0)", (long long)elements,
                           (long long)warmup_elements);
  return mlsys__pipe_trace(p, root, 0, 0, elements, warmup_elements, win, elems);
}

MLSYS_DEF void mlsys_pipe_machine_detect(mlsys_pipe_machine *m) {
  FILE *f;
  char line[256];
  if (m->cores <= 0) m->cores = mlsys_ncpus();
  if (m->mem_free_bytes <= 0 && (f = fopen("/proc/meminfo", "r"))) {
    while (fgets(line, sizeof line, f)) {
      long long kb;
      if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) { m->mem_free_bytes = (double)kb * 1024; break; }
    }
    fclose(f);
  }
}

MLSYS_DEF const char *mlsys_pipe_tune_name(int m) {
  static const char *nm[] = {"plumber", "naive", "heuristic", "autotune", "local", "random_walk"};
  return m >= 0 && m <= MLSYS_PIPE_TUNE_RANDOM_WALK ? nm[m] : "?";
}

MLSYS_DEF void mlsys_pipe_tune_result_free(mlsys_pipe_tune_result *r) {
  if (!r) return;
  mlsys_pipe_snapshot_free(&r->last);
}

/* ---- the AUTOTUNE model (tf.data model.cc, spec §3.8) over a chain window (op[i].parent = i − 1) ---- */
static int mlsys__pipe_is_async(const mlsys_pipe_op *o) {
  return (o->parallel && (o->kind == MLSYS_PIPE_OP_MAP || o->kind == MLSYS_PIPE_OP_FILES)) || o->kind == MLSYS_PIPE_OP_PREFETCH;
}
/* output time per element of op i given its consumer's time between requests x (seconds) */
static double mlsys__pipe_at_out(const mlsys_pipe_snapshot *w, int i, double x, const int *par, const int *buf) {
  const mlsys_pipe_op *o = &w->op[i];
  double self = o->produced > 0 ? o->cpu_s / (double)o->produced : 0;
  double ratio = o->produced > 0 ? (double)o->consumed / (double)o->produced : 1;
  int has_child = i + 1 < w->nops;
  if (!has_child) ratio = 0;
  if (mlsys__pipe_is_async(o)) {
    int pp = o->kind == MLSYS_PIPE_OP_PREFETCH ? 1 : (par[i] > 0 ? par[i] : 1);
    double n = o->kind == MLSYS_PIPE_OP_PREFETCH ? (buf[i] > 0 ? buf[i] : 0) : pp;
    double y = has_child && ratio > 0 ? ratio * mlsys__pipe_at_out(w, i + 1, x / ratio, par, buf) : 0;
    if (o->kind == MLSYS_PIPE_OP_PREFETCH && n == 0) return self + y;   /* buffer 0: synchronous */
    return self / pp + mlsys_pipe_autotune_wait_time(y, x * (ratio > 0 ? ratio : 1), n);
  }
  if (!has_child || ratio <= 0) return self;
  return self + ratio * mlsys__pipe_at_out(w, i + 1, (x + self) / ratio, par, buf);
}

MLSYS_DEF mlsys_status mlsys_pipe_autotune_climb(const mlsys_pipe_snapshot *w, double cpu_budget, double ram_budget, int *par, int *buf,
                                                 double *out_time) {
  int n = w ? w->nops : 0, i, maxp, iter;
  double total = 0, V = 1, out;
  if (n <= 0 || !par || !buf) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: autotune needs a window and parameter arrays");
  if (n > 64) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: autotune model of %d operators (at most 64: the model recurses down the chain)", n);
  for (i = 0; i < n; i++)
    if (w->op[i].parent != i - 1) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: autotune needs a chain window (op %d's parent is %d)", i, w->op[i].parent);
  maxp = cpu_budget >= 1 ? (int)cpu_budget : 1;
  /* all parameters at their minimum (OptimizeHillClimb) */
  for (i = 0; i < n; i++) {
    const mlsys_pipe_op *o = &w->op[i];
    par[i] = 1;
    buf[i] = o->kind == MLSYS_PIPE_OP_PREFETCH ? 1 : 0;
    total += V * (o->produced > 0 ? o->cpu_s / (double)o->produced : 0);
    V *= o->produced > 0 ? (double)o->consumed / (double)o->produced : 1;
  }
  out = mlsys__pipe_at_out(w, 0, 0, par, buf);
  for (iter = 0; iter < 100000; iter++) {
    int best = -1, best_is_buf = 0, all_max = 1;
    double best_out = out, bytes = 0;
    for (i = 0; i < n; i++) {
      const mlsys_pipe_op *o = &w->op[i];
      double be = o->produced > 0 ? o->bytes_produced / (double)o->produced : 0;
      if (o->kind == MLSYS_PIPE_OP_PREFETCH) { bytes += buf[i] * be; if (buf[i] < 64) all_max = 0; }
      else if (mlsys__pipe_is_async(o)) { bytes += par[i] * be; if (par[i] < maxp) all_max = 0; }
    }
    /* stop rules of OptimizeHillClimbHelper */
    if (all_max || out < total / (cpu_budget > 0 ? cpu_budget : 1) || (ram_budget > 0 && bytes > ram_budget)) break;
    for (i = 0; i < n; i++) {
      const mlsys_pipe_op *o = &w->op[i];
      double t;
      if (o->kind == MLSYS_PIPE_OP_PREFETCH && buf[i] < 64) {
        buf[i]++;
        t = mlsys__pipe_at_out(w, 0, 0, par, buf);
        buf[i]--;
        if (out - t > 1e-9 && t < best_out) { best_out = t; best = i; best_is_buf = 1; }   /* kBufferSizeMinDelta = 1 ns */
      } else if (o->kind != MLSYS_PIPE_OP_PREFETCH && mlsys__pipe_is_async(o) && par[i] < maxp) {
        par[i]++;
        t = mlsys__pipe_at_out(w, 0, 0, par, buf);
        par[i]--;
        if (t < best_out) { best_out = t; best = i; best_is_buf = 0; }
      }
    }
    if (best < 0) break;
    if (best_is_buf) buf[best]++; else par[best]++;
    out = best_out;
  }
  if (out_time) *out_time = out;
  return MLSYS_OK;
}

/* the chain below root, root first */
static int mlsys__pipe_chain(const mlsys_pipe *p, int root, int *ids, int cap) {
  int n = 0, v;
  for (v = root; v >= 0 && n < cap; v = p->node[v].in) ids[n++] = v;
  return n;
}

MLSYS_DEF void mlsys_pipe_print_rates(FILE *log, const mlsys_pipe_snapshot *w, const mlsys_pipe_analysis *a) {
  int i;
  if (!log) return;
  fprintf(log, "    %-16s %-10s %3s %10s %12s %10s %8s %6s\n", "operator", "kind", "p", "elements", "R (mb/s/core)", "R*p", "cores", "flags");
  for (i = 0; i < w->nops; i++) {
    const mlsys_pipe_op *o = &w->op[i];
    const mlsys_pipe_op_report *r = &a->op[i];
    fprintf(log, "    %-16s %-10s %3d %10lld %12.2f %10.2f %8.3f %s%s%s\n", o->name, mlsys__pipe_kind_name(o->kind), o->parallelism,
            (long long)o->produced, r->in_lp ? r->R : 0, r->in_lp ? r->Rp : 0, r->u, i == a->bottleneck ? "BOTTLENECK " : "",
            r->random ? "random " : "", r->stale ? "stale" : "");
  }
  fprintf(log, "    window %.2f s: X_obs %.2f minibatches/s, process CPU %.2f cores (%.2f outside the operators)\n", w->seconds, a->x_obs,
          w->seconds > 0 ? w->process_cpu_s / w->seconds : 0, a->unattributed_cores);
}

/* one tuning window: trace_elements root elements when set, else trace_seconds */
static mlsys_status mlsys__pipe_tune_trace(mlsys_pipe *p, int root, const mlsys_pipe_tune_desc *d, mlsys_pipe_snapshot *w) {
  if (d->trace_elements > 0)
    return mlsys_pipe_trace_elements(p, root, d->trace_elements, d->warmup_elements > 0 ? d->warmup_elements : (d->trace_elements + 3) / 4, w,
                                     NULL);
  return mlsys_pipe_trace(p, root, d->trace_seconds > 0 ? d->trace_seconds : 3, d->warmup_seconds > 0 ? d->warmup_seconds : 0.5, w, NULL);
}

static mlsys_status mlsys__pipe_measure(mlsys_pipe *p, int root, const mlsys_pipe_tune_desc *d, const mlsys_pipe_machine *m,
                                        mlsys_pipe_tune_result *r, FILE *log) {
  mlsys_pipe_analysis a;
  mlsys_pipe_plan pl;
  mlsys_pipe_machine mc = *m;
  mlsys_status st;
  mlsys_pipe_snapshot_free(&r->last);
  if ((st = mlsys__pipe_tune_trace(p, root, d, &r->last))) return st;
  if ((st = mlsys_pipe_analyze(&r->last, m, &a))) return st;
  r->x_measured = a.x_obs;
  r->bottleneck_node = a.bottleneck >= 0 ? r->last.op[a.bottleneck].node : -1;
  snprintf(r->bottleneck, sizeof r->bottleneck, "%s", a.bottleneck >= 0 ? r->last.op[a.bottleneck].name : "-");
  r->cores_used = r->last.seconds > 0 ? r->last.process_cpu_s / r->last.seconds : 0;
  if ((st = mlsys_pipe_plan_cpu(&r->last, &a, m, MLSYS_PIPE_LP_CLOSED_FORM, &pl))) { mlsys_pipe_analysis_free(&a); return st; }
  r->x_pred = pl.x_pred;
  mlsys_pipe_plan_free(&pl);
  /* model accuracy (spec §7.6 #15): the LP with the cores the process actually obtained */
  mc.cores = r->cores_used > 0 ? r->cores_used : m->cores;
  if ((st = mlsys_pipe_plan_cpu(&r->last, &a, &mc, MLSYS_PIPE_LP_CLOSED_FORM, &pl))) { mlsys_pipe_analysis_free(&a); return st; }
  r->x_hat = pl.x_pred;
  mlsys_pipe_plan_free(&pl);
  if (log) {
    fprintf(log, "  measured (%s):\n", mlsys_pipe_tune_name(d->method));
    mlsys_pipe_print_rates(log, &r->last, &a);
    fprintf(log, "    X = %.2f minibatches/s; predicted %.2f at %.0f cores, %.2f at the %.2f cores obtained (error %+.1f %%); bottleneck %s\n",
            r->x_measured, r->x_pred, m->cores, r->x_hat, r->cores_used, r->x_hat > 0 ? 100 * (r->x_measured / r->x_hat - 1) : 0,
            r->bottleneck);
  }
  mlsys_pipe_analysis_free(&a);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_pipe_tune(mlsys_pipe *p, int root, const mlsys_pipe_tune_desc *dd, mlsys_pipe_tune_result *out, FILE *log) {
  mlsys_pipe_tune_desc d;
  mlsys_pipe_machine m;
  mlsys_status st = MLSYS_OK;
  int ids[256], n, i, pass, has_cache = 0, ncores;
  mlsys_rng rng;
  memset(out, 0, sizeof *out);
  out->root = root; out->cache_node = out->cache_after = -1; out->bottleneck_node = -1;
  if (!p || root < 0 || root >= p->n) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: tune at node %d", root);
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  if (d.method < 0 || d.method > MLSYS_PIPE_TUNE_RANDOM_WALK) return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: tuning method %d", d.method);
  if (d.trace_elements < 0 || d.warmup_elements < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "pipeline: tune: trace_elements %lld, warmup_elements %lld (need >= 0)", (long long)d.trace_elements,
                           (long long)d.warmup_elements);
  m = d.machine;
  mlsys_pipe_machine_detect(&m);
  ncores = m.cores >= 1 ? (int)ceil(m.cores - 1e-9) : 1;
  mlsys_rng_seed(&rng, d.seed ? d.seed : 1);
  n = mlsys__pipe_chain(p, root, ids, 256);
  for (i = 0; i < n; i++) has_cache |= p->node[ids[i]].kind == MLSYS_PIPE_OP_CACHE;
  if (log) fprintf(log, "tune (%s): %d operators, %.2f cores, %.0f MiB free\n", mlsys_pipe_tune_name(d.method), n, m.cores, m.mem_free_bytes / 1048576);

  if (d.method == MLSYS_PIPE_TUNE_NAIVE || d.method == MLSYS_PIPE_TUNE_HEURISTIC) {
    int v = d.method == MLSYS_PIPE_TUNE_NAIVE ? 1 : ncores;
    for (i = 0; i < n; i++) {
      mlsys__pipe_node *nd = &p->node[ids[i]];
      if ((nd->kind == MLSYS_PIPE_OP_MAP && !nd->map.sequential) || nd->kind == MLSYS_PIPE_OP_FILES) {
        nd->map.parallelism = v;
        nd->map.async = d.method != MLSYS_PIPE_TUNE_NAIVE;   /* NAIVE: everything inline in the consumer's thread */
      }
      if (nd->kind == MLSYS_PIPE_OP_PREFETCH) nd->n = d.method == MLSYS_PIPE_TUNE_NAIVE ? 0 : ncores;
    }
    if (log) fprintf(log, "  %s: every parallelism %d, prefetch buffers %d\n", mlsys_pipe_tune_name(d.method), v,
                     d.method == MLSYS_PIPE_TUNE_NAIVE ? 0 : ncores);
  } else if (d.method == MLSYS_PIPE_TUNE_AUTOTUNE) {
    int rounds = d.passes > 0 ? d.passes : 2, par[256], buf[256];
    for (pass = 0; pass < rounds; pass++) {
      mlsys_pipe_snapshot w;
      double ot;
      if ((st = mlsys__pipe_tune_trace(p, root, &d, &w))) return st;
      st = mlsys_pipe_autotune_climb(&w, m.cores, 0.5 * m.mem_free_bytes, par, buf, &ot);
      if (!st) {
        if (log) fprintf(log, "  autotune round %d: X_obs %.2f; hill climb to model output time %.3g ms per minibatch:", pass + 1,
                         w.seconds > 0 ? (double)w.op[0].produced / w.seconds : 0, 1e3 * ot);
        for (i = 0; i < w.nops; i++) {
          mlsys__pipe_node *nd = &p->node[w.op[i].node];
          if (w.op[i].kind == MLSYS_PIPE_OP_PREFETCH) { nd->n = buf[i]; if (log) fprintf(log, " %s buffer %d", nd->name, buf[i]); }
          else if (mlsys__pipe_is_async(&w.op[i])) { nd->map.parallelism = par[i]; nd->map.async = 1; if (log) fprintf(log, " %s p %d", nd->name, par[i]); }
        }
        if (log) fprintf(log, "\n");
      }
      mlsys_pipe_snapshot_free(&w);
      if (st) return st;
    }
  } else {
    int steps = d.passes > 0 ? d.passes : (d.method == MLSYS_PIPE_TUNE_PLUMBER ? 2 : 4);
    mlsys_pipe_analysis a;
    mlsys_pipe_plan pl;
    mlsys_pipe_snapshot w;
    int have = 0;
    memset(&a, 0, sizeof a); memset(&pl, 0, sizeof pl); memset(&w, 0, sizeof w);
    for (pass = 0; pass < steps; pass++) {
      if (have) { mlsys_pipe_analysis_free(&a); mlsys_pipe_plan_free(&pl); mlsys_pipe_snapshot_free(&w); have = 0; }
      if ((st = mlsys__pipe_tune_trace(p, out->root, &d, &w))) return st;
      if ((st = mlsys_pipe_analyze(&w, &m, &a))) { mlsys_pipe_snapshot_free(&w); return st; }
      if ((st = mlsys_pipe_plan_cpu(&w, &a, &m, MLSYS_PIPE_LP_CLOSED_FORM, &pl))) { mlsys_pipe_analysis_free(&a); mlsys_pipe_snapshot_free(&w); return st; }
      have = 1;
      if (log) {
        fprintf(log, "  step %d:\n", pass + 1);
        mlsys_pipe_print_rates(log, &w, &a);
        fprintf(log, "    bottleneck %s; LP bound X* = %.2f minibatches/s (%s)\n", a.bottleneck >= 0 ? w.op[a.bottleneck].name : "-", pl.x_pred,
                pl.binding_kind == MLSYS_PIPE_BIND_SEQ ? "a sequential operator binds" : pl.binding_kind == MLSYS_PIPE_BIND_DISK ? "the disk binds" :
                pl.binding_kind == MLSYS_PIPE_BIND_CONSUMER ? "the consumer binds" : "the cores bind");
      }
      if (d.method == MLSYS_PIPE_TUNE_PLUMBER) {
        for (i = 0; i < w.nops; i++)
          if (w.op[i].parallel && !a.op[i].stale) {
            mlsys__pipe_node *nd = &p->node[w.op[i].node];
            if (log && nd->map.parallelism != pl.parallelism[i])
              fprintf(log, "    %s: parallelism %d -> %d (theta %.2f cores)\n", nd->name, nd->map.parallelism, pl.parallelism[i], pl.theta[i]);
            nd->map.parallelism = pl.parallelism[i];
            /* tf.data's parallel map runs apart from its consumer even at p = 1; an operator that needs under a tenth of
               a core stays inline, since handing each element to another thread would cost more than its work (tf.data
               fuses such maps into their neighbours) */
            nd->map.async = pl.parallelism[i] > 1 || pl.theta[i] >= 0.1;
          }
        if (pass == 0 && !d.no_cache && !has_cache) {
          if ((st = mlsys_pipe_plan_cache(&w, &a, &m, &pl))) break;
          /* a cache pays off only when a repeat above it re-reads the data: without one there is nothing to replay */
          for (i = pl.cache_after - 1; i >= 0 && w.op[i].kind != MLSYS_PIPE_OP_REPEAT; i--) {}
          if (pl.cache_after >= 0 && i < 0) {
            if (log) fprintf(log, "    no cache: %s would fit, but no repeat above it re-reads the data\n", w.op[pl.cache_after].name);
          } else if (pl.cache_after >= 0) {
            int after = w.op[pl.cache_after].node, cn;
            if ((st = mlsys_pipe_insert_cache(p, after, d.cache_path, &cn))) break;
            out->cache_node = cn; out->cache_after = after; has_cache = 1;
            if (log) fprintf(log, "    cache inserted after %s: its materialised size %.1f MB fits %.0f %% of %.0f MiB free; "
                                  "nothing below a random operator is cached\n", w.op[pl.cache_after].name, a.op[pl.cache_after].size_bytes / 1e6,
                             100 * (m.fraction_cacheable > 0 ? m.fraction_cacheable : 0.9), m.mem_free_bytes / 1048576);
          } else if (log) fprintf(log, "    no cache: nothing below the random operators fits %.0f MiB free\n", m.mem_free_bytes / 1048576);
        }
      } else {
        int b = a.bottleneck, pick = -1, np = 0, k;
        if (d.method == MLSYS_PIPE_TUNE_LOCAL) {
          if (b < 0 || !w.op[b].parallel) { if (log) fprintf(log, "    local: the bottleneck cannot be parallelised; stop\n"); break; }
          pick = b;
          {
            int others = 0, want;
            for (i = 0; i < w.nops; i++) if (i != b && w.op[i].parallel && !a.op[i].stale) others += w.op[i].parallelism;
            want = ncores - others > w.op[b].parallelism + 1 ? ncores - others : w.op[b].parallelism + 1;
            p->node[w.op[b].node].map.parallelism = want;
            p->node[w.op[b].node].map.async = 1;
            if (log) fprintf(log, "    local: %s parallelism -> %d\n", w.op[b].name, want);
          }
        } else {
          for (i = 0; i < w.nops; i++) if (w.op[i].parallel && !a.op[i].stale) np++;
          if (np == 0) break;
          k = (int)mlsys_rng_below(&rng, (uint64_t)np);
          for (i = 0; i < w.nops; i++) if (w.op[i].parallel && !a.op[i].stale && k-- == 0) pick = i;
          p->node[w.op[pick].node].map.parallelism++;
          p->node[w.op[pick].node].map.async = 1;
          if (log) fprintf(log, "    random walk: %s parallelism -> %d\n", w.op[pick].name, p->node[w.op[pick].node].map.parallelism);
        }
      }
    }
    if (!st && d.method == MLSYS_PIPE_TUNE_PLUMBER && !d.no_prefetch && have) {
      if (!(st = mlsys_pipe_plan_prefetch(&w, &a, &pl)) && pl.prefetch > 0) {
        mlsys__pipe_node *top = &p->node[out->root];
        if (top->kind == MLSYS_PIPE_OP_PREFETCH) top->n = pl.prefetch;
        else {
          int np2;
          if (!(st = mlsys_pipe_prefetch(p, out->root, pl.prefetch, &np2))) out->root = np2;
        }
        if (log && !st) fprintf(log, "  prefetch %lld at the root: N* = %.2f busy operators at the knee, N = %.2f now (§3.5)\n",
                                (long long)pl.prefetch, a.Nstar, a.N);
      }
    }
    if (have) { mlsys_pipe_analysis_free(&a); mlsys_pipe_plan_free(&pl); mlsys_pipe_snapshot_free(&w); }
    if (st) return st;
  }
  if (d.no_measure) return MLSYS_OK;
  return mlsys__pipe_measure(p, out->root, &d, &m, out, log);
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_PIPELINE_IMPLEMENTATION_DONE */
#endif /* MLSYS_PIPELINE_IMPLEMENTATION */
