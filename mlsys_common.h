/* mlsys_common.h — the shared core of the mlsys single-header libraries.          MIT licence, see end.

   Every mlsys header (mlsys_remat.h, ...) includes this file. In exactly ONE .c file of your program write

       #define MLSYS_COMMON_IMPLEMENTATION   // or MLSYS_IMPLEMENTATION: every mlsys header's implementation
       #include "mlsys_common.h"

   and link: -llpsolve55 -lcolamd -ldl -lm -lpthread   (Debian: liblpsolve55-dev; lp_solve lives in /usr/lib)
   With -DMLSYS_MILP_CBC also: $(pkg-config --libs cbc clp)  (Debian: coinor-libcbc-dev coinor-libclp-dev).

   CONTENTS
     1. Linkage, allocation hooks, status codes and the thread-local error detail
     2. Logging hook
     3. Small things: deterministic RNG, monotonic timer, progress line, CSV field writer
     4. Thread pool (pthreads)
     5. DAG: named nodes, costs, sizes, CSR edges, topological order, cycles named
     6. JSON: reader into a tree (line/column in every error) and a streaming writer
     7. MILP: a model builder solved by lp_solve (default) or CBC/Clp (MLSYS_MILP_CBC)
     8. JPEG structure (ITU T.81 Annex B): image format sniffing and a strict JPEG marker walk that records the byte
        range of every scan (pure C; used by mlsys_pipeline.h before decoding and by mlsys_pcr.h to split scans)
     9. CUDA helpers (MLSYS_CUDA)

   EXAMPLE (a 0/1 knapsack through the MILP builder)

       mlsys_milp *m; mlsys_milp_create(&m);
       double w[3] = {3, 4, 5}, v[3] = {4, 5, 6}; int x[3];
       for (int i = 0; i < 3; i++) x[i] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, v[i], NULL);
       mlsys_milp_add_row(m, 3, x, w, MLSYS_ROW_LE, 8, "capacity");
       mlsys_milp_set_maximize(m, 1);
       mlsys_milp_opts o = {0};                       // zero = defaults: lp_solve, no time limit
       mlsys_milp_result r;
       if (mlsys_milp_solve(m, &o, &r) == MLSYS_OK) printf("best value %g\n", r.objective);   // 10
       else fprintf(stderr, "%s\n", mlsys_last_error());
       mlsys_milp_result_free(&r); mlsys_milp_free(m);

   CONVENTIONS
     - Public names mlsys_*, internal names mlsys__*. Every function that can fail returns mlsys_status; on failure
       mlsys_last_error() says what went wrong in one sentence that names the problem (file:line:col for parse
       errors). Library code never prints, exits or aborts; MLSYS_ASSERT guards internal invariants only.
     - Option structs are "desc" structs in which zero means the default: `mlsys_milp_opts o = {0};` is valid.
     - Objects: mlsys_X_create(...)/mlsys_X_free(...). Results the caller owns have a named free function.
     - Deterministic: the RNG is seeded explicitly; the same seed gives the same stream on every machine.

   COMPILE-TIME OPTIONS (define before including)
     MLSYS_STATIC            make every function static (private copy per translation unit)
     MLSYS_MALLOC(n), MLSYS_REALLOC(p,n), MLSYS_FREE(p)   replace the allocator (all three together)
     MLSYS_ASSERT(x)         replace assert() for internal invariants
     MLSYS_NO_LPSOLVE        build without lp_solve (MILP solves then need MLSYS_MILP_CBC)
     MLSYS_MILP_CBC          compile in the CBC (MILP) and Clp (LP) backend
     MLSYS_CUDA              the CUDA helpers of section 9 (include from a .cu file or with the CUDA runtime)

   NOT DONE: JSON numbers keep only double precision and exact 64-bit integers (no bignums); the thread pool has
   one parallel-for primitive, no task graph.

   DEPENDENCIES: libc, pthreads, lp_solve 5.5 (unless MLSYS_NO_LPSOLVE), optionally CBC/Clp 2.10 and CUDA.
*/
#ifndef MLSYS_COMMON_H
#define MLSYS_COMMON_H

#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_COMMON_IMPLEMENTATION
#define MLSYS_COMMON_IMPLEMENTATION
#endif
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>   /* memcpy in the section-10 inline kernels */

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   1. Linkage, status codes, error detail
   ================================================================================================================ */
#ifndef MLSYS_DEF
#ifdef MLSYS_STATIC
#define MLSYS_DEF static
#else
#define MLSYS_DEF extern
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MLSYS__PRINTF(a, b)
#endif

typedef enum {
  MLSYS_OK = 0,
  MLSYS_ERR_ARG,          /* a bad argument or an invalid input (wrong sizes, negative cost, unknown name, ...) */
  MLSYS_ERR_NOMEM,        /* an allocation failed */
  MLSYS_ERR_IO,           /* a file could not be read or written */
  MLSYS_ERR_PARSE,        /* malformed text (JSON, graph files); the detail gives file:line:col */
  MLSYS_ERR_CYCLE,        /* a graph that must be acyclic has a cycle; the detail names it */
  MLSYS_ERR_INFEASIBLE,   /* the problem has no solution (proven), e.g. a memory budget below the minimum */
  MLSYS_ERR_UNBOUNDED,    /* an optimisation problem is unbounded */
  MLSYS_ERR_SOLVER,       /* a solver failed numerically or returned something unusable */
  MLSYS_ERR_TIMEOUT,      /* the time limit was reached before any solution was found */
  MLSYS_ERR_CANCELED,     /* a callback asked to stop */
  MLSYS_ERR_TOO_BIG,      /* the input exceeds a documented size limit */
  MLSYS_ERR_UNSUPPORTED,  /* valid request, but not available in this build or for this input */
  MLSYS_ERR_CUDA,         /* a CUDA runtime call failed */
  MLSYS_ERR_COUNT_
} mlsys_status;

MLSYS_DEF const char *mlsys_status_str(mlsys_status s);   /* "infeasible", "parse error", ... */
MLSYS_DEF const char *mlsys_last_error(void);               /* this thread's detail of the last failure ("" if none) */
MLSYS_DEF mlsys_status mlsys_last_status(void);             /* and its status */
/* For mlsys headers and embedders: set this thread's detail (printf-style) and return s. */
MLSYS_DEF mlsys_status mlsys_set_error(mlsys_status s, const char *fmt, ...) MLSYS__PRINTF(2, 3);
/* Prefix the current detail with "prefix: " (e.g. a file name), returning the current status. */
MLSYS_DEF mlsys_status mlsys_prefix_error(const char *fmt, ...) MLSYS__PRINTF(1, 2);
MLSYS_DEF void mlsys_clear_error(void);

/* Allocation hooks. Library code allocates only through these. */
#if defined(MLSYS_MALLOC) && defined(MLSYS_REALLOC) && defined(MLSYS_FREE)
#elif !defined(MLSYS_MALLOC) && !defined(MLSYS_REALLOC) && !defined(MLSYS_FREE)
#include <stdlib.h>
#define MLSYS_MALLOC(n) malloc(n)
#define MLSYS_REALLOC(p, n) realloc(p, n)
#define MLSYS_FREE(p) free(p)
#else
#error "mlsys: define all or none of MLSYS_MALLOC, MLSYS_REALLOC, MLSYS_FREE"
#endif
#ifndef MLSYS_ASSERT
#include <assert.h>
#define MLSYS_ASSERT(x) assert(x)
#endif

/* Overflow-checked allocation helpers; on failure they set MLSYS_ERR_NOMEM with a message and return NULL. */
MLSYS_DEF void *mlsys_alloc(size_t count, size_t size);          /* uninitialised */
MLSYS_DEF void *mlsys_calloc(size_t count, size_t size);         /* zeroed */
MLSYS_DEF void *mlsys_realloc_array(void *p, size_t count, size_t size);
MLSYS_DEF char *mlsys_strdup(const char *s);
MLSYS_DEF void mlsys_free(void *p);
/* Read a whole file ("-" or "/dev/stdin" read standard input) into a NUL-terminated buffer. */
MLSYS_DEF mlsys_status mlsys_read_file(const char *path, char **data, size_t *len);

/* ================================================================================================================
   2. Logging: library code never prints; it calls this hook (default: none).
   ================================================================================================================ */
enum { MLSYS_LOG_ERROR = 0, MLSYS_LOG_WARN = 1, MLSYS_LOG_INFO = 2, MLSYS_LOG_DEBUG = 3 };
typedef void (*mlsys_log_fn)(void *ud, int level, const char *msg);
MLSYS_DEF void mlsys_set_log(mlsys_log_fn fn, void *ud, int max_level);   /* process-wide; set it once at start */
MLSYS_DEF void mlsys_log(int level, const char *fmt, ...) MLSYS__PRINTF(2, 3);
MLSYS_DEF void mlsys_log_stderr(void *ud, int level, const char *msg);    /* a ready-made hook */

/* ================================================================================================================
   3. Small things
   ================================================================================================================ */
/* xoshiro256** seeded through splitmix64: the same seed gives the same numbers everywhere. */
typedef struct { uint64_t s[4]; } mlsys_rng;
MLSYS_DEF void mlsys_rng_seed(mlsys_rng *r, uint64_t seed);
MLSYS_DEF uint64_t mlsys_rng_u64(mlsys_rng *r);
MLSYS_DEF uint64_t mlsys_rng_below(mlsys_rng *r, uint64_t n);    /* uniform in [0, n), unbiased; n = 0 → 0 */
MLSYS_DEF int mlsys_rng_range(mlsys_rng *r, int lo, int hi);        /* uniform in [lo, hi] */
MLSYS_DEF double mlsys_rng_uniform(mlsys_rng *r);                   /* [0, 1), 53 random bits */
MLSYS_DEF double mlsys_rng_normal(mlsys_rng *r);                    /* N(0,1), Box-Muller */

MLSYS_DEF double mlsys_now(void);     /* monotonic seconds since an arbitrary origin */
/* CRC-32C (Castagnoli; iSCSI, TFRecord, PCR): crc of the bytes so far (0 to start); mlsys_crc32c(0, "123456789", 9)
   == 0xE3069283. The SSE4.2 instruction when the CPU has it, else slicing-by-8. */
MLSYS_DEF uint32_t mlsys_crc32c(uint32_t crc, const void *buf, size_t n);

/* A one-line progress display on stderr, only when stderr is a terminal (and enabled): "label: text  12.3 s". */
typedef struct { const char *label; double start, last; int enabled, shown; } mlsys_progress;
MLSYS_DEF void mlsys_progress_begin(mlsys_progress *p, const char *label, int enabled);
MLSYS_DEF void mlsys_progress_update(mlsys_progress *p, const char *fmt, ...) MLSYS__PRINTF(2, 3); /* ≤ 10 Hz */
MLSYS_DEF void mlsys_progress_end(mlsys_progress *p);

/* CSV (RFC 4180): write one field, quoted when needed; the caller writes ',' and '\n'. */
MLSYS_DEF void mlsys_csv_field(FILE *f, const char *s);

/* One AdamW step (Loshchilov & Hutter, decoupled weight decay; llm.c's update) on n parameters, t ≥ 1 the step
   number (bias correction): m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g², then
   p ← p − lr·((m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps) + wd·p). Element by element in float (the two
   corrections in double, rounded once), so any split of the array gives the same bits. The project's one dense
   optimizer kernel: callers choose per tensor which get weight decay (docs/ARCHITECTURE.md decision 71). */
MLSYS_DEF void mlsys_adamw_step(float *p, const float *g, float *m, float *v, size_t n, int64_t t, float lr, float beta1, float beta2, float eps,
                                float wd);

/* ================================================================================================================
   4. Thread pool
   ================================================================================================================ */
typedef struct mlsys_pool mlsys_pool;
MLSYS_DEF int mlsys_ncpus(void);
MLSYS_DEF mlsys_status mlsys_pool_create(int nthreads /* 0 → mlsys_ncpus() */, mlsys_pool **out);
MLSYS_DEF int mlsys_pool_size(const mlsys_pool *p);
/* Run fn(ctx, i, worker) for i in [0, n) on the pool's threads and the caller's; returns when all are done.
   pool == NULL runs serially on the caller. worker is in [0, mlsys_pool_size(p)] and is stable within a call,
   so it can index per-worker scratch space. Not reentrant: do not call from inside fn. */
MLSYS_DEF mlsys_status mlsys_pool_for(mlsys_pool *p, long n, void (*fn)(void *ctx, long i, int worker), void *ctx);
MLSYS_DEF void mlsys_pool_free(mlsys_pool *p);

/* ================================================================================================================
   5. DAG
   ================================================================================================================ */
/* A directed graph over nodes 0..n-1 with optional names, costs and sizes. in[] lists each node's predecessors
   in the order they were given (argument order for executors); out[] lists successors in ascending id order.
   An edge is given once per (src, dst) pair; duplicates are an error. mlsys_dag_build accepts cycles (so that
   inputs can be checked); mlsys_dag_topo_order reports them by name. */
typedef struct {
  int n, nedges;
  char **name;            /* [n] or NULL; owned */
  double *cost;           /* [n] or NULL; owned */
  uint64_t *size;         /* [n] or NULL; owned */
  int *in_off, *in;       /* CSR predecessors: in[in_off[v] .. in_off[v+1]) */
  int *out_off, *out;     /* CSR successors, ascending */
} mlsys_dag;

/* Build from an edge list (src[e] -> dst[e]); names/cost/size may be NULL and are copied. Self-loops are cycles. */
MLSYS_DEF mlsys_status mlsys_dag_build(mlsys_dag *g, int n, int nedges, const int *src, const int *dst,
                                       const char *const *names, const double *cost, const uint64_t *size);
/* Same from CSR predecessor lists (dep_off[n+1], dep[]). */
MLSYS_DEF mlsys_status mlsys_dag_build_csr(mlsys_dag *g, int n, const int *dep_off, const int *dep,
                                           const char *const *names, const double *cost, const uint64_t *size);
MLSYS_DEF void mlsys_dag_free(mlsys_dag *g);
MLSYS_DEF mlsys_status mlsys_dag_copy(const mlsys_dag *g, mlsys_dag *out);
/* A topological order (Kahn; ties by smallest id). On a cycle returns MLSYS_ERR_CYCLE and the detail names one
   cycle: "cycle: a -> b -> c -> a". order may be NULL to only check. */
MLSYS_DEF mlsys_status mlsys_dag_topo_order(const mlsys_dag *g, int *order);
MLSYS_DEF int mlsys_dag_find(const mlsys_dag *g, const char *name);  /* node id or -1 */
MLSYS_DEF const char *mlsys_dag_node_name(const mlsys_dag *g, int v, char *buf, size_t buflen); /* name or "#v" */
MLSYS_DEF int mlsys_dag_has_edge(const mlsys_dag *g, int src, int dst);

/* ================================================================================================================
   6. JSON
   ================================================================================================================ */
typedef enum {
  MLSYS_JSON_NULL = 0, MLSYS_JSON_BOOL, MLSYS_JSON_NUMBER, MLSYS_JSON_STRING, MLSYS_JSON_ARRAY, MLSYS_JSON_OBJECT
} mlsys_json_type;

typedef struct mlsys_json mlsys_json;
struct mlsys_json {
  mlsys_json_type type;
  int line, col;              /* 1-based position of the value's first character in the source */
  const char *src;            /* the source name given to the parser (for messages) */
  int boolean;                /* BOOL */
  double num;                 /* NUMBER (nearest double) */
  int is_int;                 /* NUMBER written without fraction/exponent and fits int64_t exactly */
  int64_t i64;                /* NUMBER when is_int */
  int is_u64;                 /* NUMBER is a non-negative integer that fits uint64_t exactly */
  uint64_t u64;               /* NUMBER when is_u64 */
  char *str; size_t len;      /* STRING: UTF-8, NUL-terminated; len excludes the NUL (may contain \0) */
  int count;                  /* ARRAY / OBJECT: number of elements / members */
  mlsys_json *items;          /* ARRAY elements, OBJECT member values */
  char **keys;                /* OBJECT member names (NUL-terminated UTF-8) */
};

#define MLSYS_JSON_MAX_DEPTH 512   /* nesting limit of the reader and the writer */

/* A parsed document: the root value plus the memory behind it. */
typedef struct { mlsys_json *root; void *arena_; char *src_; } mlsys_json_doc;

/* Strict RFC 8259: no comments, trailing commas, NaN, leading zeros or duplicate keys; nesting ≤ 512.
   On failure: MLSYS_ERR_PARSE (or NOMEM) and mlsys_last_error() reads "source:line:col: what was expected". */
MLSYS_DEF mlsys_status mlsys_json_parse(const char *text, size_t len, const char *source_name, mlsys_json_doc *doc);
MLSYS_DEF void mlsys_json_doc_free(mlsys_json_doc *doc);

MLSYS_DEF const mlsys_json *mlsys_json_get(const mlsys_json *obj, const char *key);  /* NULL if absent/not object */
MLSYS_DEF const mlsys_json *mlsys_json_at(const mlsys_json *arr, int i);              /* NULL if out of range */
MLSYS_DEF const char *mlsys_json_type_name(mlsys_json_type t);                        /* "number", ... */
/* Typed reads of an object member. required = 0: a missing member (or null) yields dflt and MLSYS_OK.
   Wrong types or ranges give MLSYS_ERR_PARSE with "source:line:col: 'key' must be ..., got ...". */
MLSYS_DEF mlsys_status mlsys_json_get_i64(const mlsys_json *obj, const char *key, int required, int64_t dflt,
                                          int64_t lo, int64_t hi, int64_t *out);
MLSYS_DEF mlsys_status mlsys_json_get_u64(const mlsys_json *obj, const char *key, int required, uint64_t dflt,
                                          uint64_t *out);
MLSYS_DEF mlsys_status mlsys_json_get_double(const mlsys_json *obj, const char *key, int required, double dflt,
                                             double lo, double hi, double *out);
MLSYS_DEF mlsys_status mlsys_json_get_str(const mlsys_json *obj, const char *key, int required, const char *dflt,
                                          const char **out);
MLSYS_DEF mlsys_status mlsys_json_get_bool(const mlsys_json *obj, const char *key, int required, int dflt,
                                           int *out);
/* The member if present with the given type, else NULL; a present member of another type is a parse error. */
MLSYS_DEF mlsys_status mlsys_json_get_typed(const mlsys_json *obj, const char *key, mlsys_json_type type,
                                            int required, const mlsys_json **out);
/* Parse error at a value's position: "src:line:col: <message>". Returns MLSYS_ERR_PARSE. */
MLSYS_DEF mlsys_status mlsys_json_error_at(const mlsys_json *v, const char *fmt, ...) MLSYS__PRINTF(2, 3);

/* Streaming writer. Commas, nesting and escaping are handled; pretty = 1 indents by two spaces, with arrays of
   scalars kept on one line. Errors (stream failures, unbalanced calls) are sticky: check mlsys_jw_finish. */
typedef struct {
  FILE *f; int pretty, depth, err;
  unsigned char first[MLSYS_JSON_MAX_DEPTH + 1], is_obj[MLSYS_JSON_MAX_DEPTH + 1], scalar_only[MLSYS_JSON_MAX_DEPTH + 1];
  unsigned char after_key;
} mlsys_json_writer;
MLSYS_DEF void mlsys_jw_init(mlsys_json_writer *w, FILE *f, int pretty);
MLSYS_DEF void mlsys_jw_object(mlsys_json_writer *w);     /* { */
MLSYS_DEF void mlsys_jw_array(mlsys_json_writer *w);      /* [ */
MLSYS_DEF void mlsys_jw_end(mlsys_json_writer *w);        /* } or ] */
MLSYS_DEF void mlsys_jw_key(mlsys_json_writer *w, const char *key);
MLSYS_DEF void mlsys_jw_str(mlsys_json_writer *w, const char *s);       /* NULL writes null */
MLSYS_DEF void mlsys_jw_strn(mlsys_json_writer *w, const char *s, size_t len);
MLSYS_DEF void mlsys_jw_i64(mlsys_json_writer *w, int64_t v);
MLSYS_DEF void mlsys_jw_u64(mlsys_json_writer *w, uint64_t v);
MLSYS_DEF void mlsys_jw_double(mlsys_json_writer *w, double v);         /* shortest round-trip; NaN/inf → null */
MLSYS_DEF void mlsys_jw_bool(mlsys_json_writer *w, int v);
MLSYS_DEF void mlsys_jw_null(mlsys_json_writer *w);
MLSYS_DEF mlsys_status mlsys_jw_finish(mlsys_json_writer *w);  /* writes a final newline; checks balance and I/O */

/* ================================================================================================================
   7. MILP builder
   ================================================================================================================ */
typedef enum { MLSYS_VAR_CONTINUOUS = 0, MLSYS_VAR_INTEGER = 1, MLSYS_VAR_BINARY = 2 } mlsys_var_kind;
typedef enum { MLSYS_ROW_LE = 0, MLSYS_ROW_GE = 1, MLSYS_ROW_EQ = 2 } mlsys_row_sense;
typedef enum {
  MLSYS_SOLVER_DEFAULT = 0,   /* lp_solve when compiled in (the zero-dependency default), else CBC */
  MLSYS_SOLVER_LPSOLVE = 1,
  MLSYS_SOLVER_CBC = 2        /* CBC for MILPs, Clp for LPs; needs -DMLSYS_MILP_CBC */
} mlsys_milp_backend;
typedef enum {
  MLSYS_MILP_OPTIMAL = 0,     /* proven optimal (within the requested gap) */
  MLSYS_MILP_FEASIBLE,        /* a solution, not proven optimal (time limit, stop callback) */
  MLSYS_MILP_INFEASIBLE,      /* proven: no solution (or none better than the cutoff) */
  MLSYS_MILP_UNBOUNDED,
  MLSYS_MILP_NO_SOLUTION,     /* the limit was reached before any solution was found */
  MLSYS_MILP_ERROR            /* numerical trouble or a solver failure */
} mlsys_milp_status;
#define MLSYS_INF 1e30         /* bound value meaning "no bound" */

typedef struct mlsys_milp mlsys_milp;
MLSYS_DEF mlsys_status mlsys_milp_create(mlsys_milp **out);
MLSYS_DEF void mlsys_milp_free(mlsys_milp *m);
/* Add a column; returns its index (≥ 0) or -1 on error (see mlsys_last_error). BINARY forces bounds [0,1].
   name may be NULL ("x<index>" in exported files); names are letters, digits, '_' and '.', not starting with a
   digit or '.', so that LP and MPS files stay readable by every solver. */
MLSYS_DEF int mlsys_milp_add_var(mlsys_milp *m, mlsys_var_kind kind, double lo, double hi, double obj,
                                 const char *name);
/* Add the row  Σ vals[j]·x[cols[j]]  (≤ | ≥ | =)  rhs. Repeated columns are summed; zeros dropped. */
MLSYS_DEF mlsys_status mlsys_milp_add_row(mlsys_milp *m, int nnz, const int *cols, const double *vals,
                                          mlsys_row_sense sense, double rhs, const char *name);
MLSYS_DEF void mlsys_milp_set_obj(mlsys_milp *m, int col, double coef);
MLSYS_DEF void mlsys_milp_set_bounds(mlsys_milp *m, int col, double lo, double hi);
MLSYS_DEF void mlsys_milp_set_obj_constant(mlsys_milp *m, double c);   /* added to every reported objective */
MLSYS_DEF void mlsys_milp_set_maximize(mlsys_milp *m, int maximize);
/* Branching priority: lower branches first (lp_solve variable weights; CBC ignores it). Default 0 = unordered. */
MLSYS_DEF void mlsys_milp_set_priority(mlsys_milp *m, int col, int priority);
MLSYS_DEF int mlsys_milp_num_vars(const mlsys_milp *m);
MLSYS_DEF int mlsys_milp_num_rows(const mlsys_milp *m);
MLSYS_DEF long mlsys_milp_num_nonzeros(const mlsys_milp *m);
MLSYS_DEF int mlsys_milp_num_integer(const mlsys_milp *m);
/* Export for debugging and for independent cross-checks: ".mps" → free MPS, anything else → CPLEX LP format
   (every row labelled; read by glpsol --lp/--freemps, the cbc command and lp_solve -fmps). The objective constant
   is written as a comment. Integer bounds are written rounded inwards (what the solver sees), and a maximisation
   is written to MPS as the minimisation of the negated objective (readers disagree on OBJSENSE). */
MLSYS_DEF mlsys_status mlsys_milp_write(const mlsys_milp *m, const char *path);
MLSYS_DEF int mlsys_milp_has_backend(mlsys_milp_backend b);
MLSYS_DEF const char *mlsys_milp_backend_name(mlsys_milp_backend b);
MLSYS_DEF const char *mlsys_milp_status_str(mlsys_milp_status s);

typedef struct {
  mlsys_milp_backend backend;    /* 0 → MLSYS_SOLVER_DEFAULT (lp_solve) */
  double time_limit;             /* seconds; 0 → none */
  double mip_gap_rel, mip_gap_abs;   /* stop when proven within these gaps; 0 → backend defaults (≈ optimal) */
  int relax;                     /* 1 → solve the LP relaxation (integrality ignored) */
  const double *incumbent;       /* optional known feasible point [nvars]: CBC uses it as a MIP start; both use its
                                    objective as a cutoff. Returned when the solver finds nothing better; when the
                                    solver proves nothing is better, the incumbent is returned as OPTIMAL. */
  int incumbent_no_start;        /* CBC: the incumbent is only the cutoff and the fallback, not a MIP start. CBC
                                    2.10's MIP-start processing (its "Reduced search") ignores the time limit:
                                    47 s on a 6.7 s limit on MONeT's vgg16@176 ILP. */
  int use_cutoff; double cutoff; /* only solutions at least as good as cutoff (constant included); a cutoff better
                                    than the optimum makes the model INFEASIBLE (both backends alike) */
  int branch_ceiling;            /* lp_solve: 0 → floor branch first (default), 1 → ceiling first, 2 → automatic */
  int lpsolve_bb_rule;           /* lp_solve: set_bb_rule() value (NODE_* flags); 0 → lp_solve's default */
  int lpsolve_scaling;           /* lp_solve: set_scaling() mode (SCALE_* flags, e.g. 4 = geometric); 0 → lp_solve's
                                    default (196). A retry with another mode gets past many NUMFAILUREs. */
  long max_nodes;                /* branch-and-bound nodes; 0 → no limit. Unlike the time limit it does not depend on
                                    the machine (tests use it). CBC: its node limit (the root node, heuristics and
                                    cuts included, always runs); lp_solve: polled in the abort hook. */
  int hard_time_limit;           /* CBC (POSIX): 1 → solve in a forked child process that is killed 0.5 s after the
                                    time limit (or when should_stop says so), for CBC's phases that ignore its own
                                    limit (root LP, feasibility pump). The child's result comes back through a pipe;
                                    a killed child counts as a time-out without a solution. */
  int threads;                   /* CBC threads; 0 → 1 (deterministic) */
  int verbose;                   /* 1 → solver log on stdout */
  /* Called on every improved solution (objective incl. constant, seconds since start); nonzero → stop.
     lp_solve only: CBC 2.10's C interface delivers no solution events. */
  int (*on_improve)(void *ud, double objective, double seconds);
  /* Polled during the solve; nonzero → stop (result FEASIBLE with the best so far, or NO_SOLUTION). lp_solve
     polls it continuously, CBC at cut rounds (a stop lands within about half a second). */
  int (*should_stop)(void *ud);
  void *ud;
} mlsys_milp_opts;

typedef struct {
  mlsys_milp_status status;
  mlsys_milp_backend backend;
  double objective;     /* of x, constant included (NaN without a solution) */
  double bound;         /* best proven bound on the optimum, constant included (±inf if unknown) */
  double gap;           /* |objective − bound| / max(1e-9, |objective|); 0 when optimal */
  double *x;            /* [nvars] solution or NULL; freed by mlsys_milp_result_free */
  int nvars;
  double seconds;       /* wall time of the solve */
  long nodes;           /* branch-and-bound nodes, when the backend reports them */
  int from_incumbent;   /* 1 → x is the caller's incumbent: the solver found nothing better */
  int solver_code;      /* the backend's own return code */
} mlsys_milp_result;
/* Returns MLSYS_OK when r->x holds a solution (OPTIMAL or FEASIBLE); otherwise MLSYS_ERR_INFEASIBLE,
   MLSYS_ERR_UNBOUNDED, MLSYS_ERR_TIMEOUT (no solution within the limit), MLSYS_ERR_CANCELED, MLSYS_ERR_SOLVER,
   MLSYS_ERR_UNSUPPORTED (backend not compiled in) or MLSYS_ERR_NOMEM. r->status is set in every case.
   UNBOUNDED is reported only after a feasibility solve confirms an integer point exists (both solvers call a
   model unbounded when only its relaxation is); that check takes at most the time limit (5 s without one).
   Integer columns of x are returned exactly integral. */
MLSYS_DEF mlsys_status mlsys_milp_solve(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys_milp_result *r);
MLSYS_DEF void mlsys_milp_result_free(mlsys_milp_result *r);
/* Σ obj·x + constant for a point (to price an incumbent), and the largest row/bound violation of a point
   (infinity when x holds a NaN). */
MLSYS_DEF double mlsys_milp_eval(const mlsys_milp *m, const double *x);
MLSYS_DEF double mlsys_milp_max_violation(const mlsys_milp *m, const double *x, int check_integrality);

/* ================================================================================================================
   8. JPEG structure (ITU T.81 Annex B): magic-byte sniffing and a strict marker walk (pure C, no image library)
   ================================================================================================================ */
/* Image container formats told apart by their magic bytes (file names lie: opencv-doc ships PNGs named .jpg). */
enum { MLSYS_IMG_UNKNOWN = 0, MLSYS_IMG_JPEG, MLSYS_IMG_PNG, MLSYS_IMG_GIF, MLSYS_IMG_BMP, MLSYS_IMG_WEBP };
/* The format of buf[0, n) from its first bytes (JPEG: FF D8 FF; BMP: "BM" and a known DIB header size);
   MLSYS_IMG_UNKNOWN when none matches or buf is NULL. */
MLSYS_DEF int mlsys_image_sniff(const uint8_t *buf, size_t n);
/* "JPEG", "PNG", "GIF", "BMP", "WebP" or "unknown". */
MLSYS_DEF const char *mlsys_image_format_name(int fmt);

/* One scan of a JPEG: its SOS header and the byte range of the scan in the file. The bytes [sos, end) are the SOS
   segment and its entropy-coded data (stuffed bytes FF 00 and restart markers RSTn included). */
typedef struct {
  uint8_t ns, comp[4], ss, se, ah, al;  /* the SOS header: component ids, spectral selection Ss..Se, successive approximation Ah, Al */
  size_t sos;                           /* offset of the scan's SOS marker (its 0xFF) */
  size_t end;                           /* end of its entropy-coded data: offset of the FIRST 0xFF of the marker that follows
                                           (fill bytes 0xFF before that marker belong to what follows, not to the scan) */
} mlsys_jpeg_scan;
/* What the structure check learns about a JPEG. */
typedef struct {
  int width, height;        /* from the frame header (SOF), both > 0 */
  int components;           /* 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK */
  int precision;            /* bits per sample (8; 12 and 16 exist) */
  int sof;                  /* the SOF marker's code: 0xC0 baseline, 0xC1 extended, 0xC2 progressive, ... */
  int nscans;               /* SOS segments before EOI (> 1: progressive or non-interleaved) */
  int adobe_transform;      /* the APP14 "Adobe" segment's transform flag (2: YCCK), -1 without one */
  size_t eoi;               /* offset of the EOI marker; bytes after EOI + 2 are ignored */
  size_t first_sos;         /* offset of the first SOS marker: the length of the "header" before the scans */
  size_t last_scan_end;     /* `end` of the last scan (== eoi unless segments or fill bytes sit between them) */
} mlsys_jpeg_info;
/* Walks the marker segments of buf[0, n) strictly (T.81 Annex B): SOI; segments whose lengths stay inside the buffer;
   Huffman tables (DHT) of at most 256 codes each (stb_image 2.27, as Debian 12 ships it, overflows on more); one frame
   header (SOF) with non-zero sizes before the first scan; every scan (SOS) naming frame components whose quantisation
   tables and the Huffman tables it decodes with are defined (stb_image 2.27 reads undefined tables); the entropy-coded
   data of every scan (FF 00 stuffing and RSTn inside it); then EOI. Decoders pad a truncated scan with zeros and return
   a grey-bottomed image, so this check is what makes truncation an error.
   So header ‖ scans ‖ EOI is the file: buf[0, first_sos) is the header, scan j is buf[scans[j].sos, scans[j].end), the
   bytes [scans[j].end, scans[j + 1].sos) hold only marker segments (DHT, ...) and fill bytes, and EOI is at eoi.
   scans: NULL, or room for max_scans entries, filled in order. max_scans > 0: a JPEG with more scans is
   MLSYS_ERR_TOO_BIG ("more than %d scans") whether or not scans is given; 0: no limit (scans must then be NULL).
   info may be NULL. Errors: MLSYS_ERR_PARSE naming the problem and the byte offset, e.g. "not a JPEG: PNG data",
   "truncated: no EOI marker after the scan data (file ends at byte 400)", "truncated: segment APP1 at byte 2 (length
   5000) runs past the end of the data (byte 400)", "expected a marker at byte 84 after the DQT at byte 20, found
   0x3A"; MLSYS_ERR_TOO_BIG; MLSYS_ERR_ARG (NULL buf with n > 0, max_scans < 0, scans without max_scans). */
MLSYS_DEF mlsys_status mlsys_jpeg_check(const uint8_t *buf, size_t n, mlsys_jpeg_info *info, mlsys_jpeg_scan *scans, int max_scans);

/* ================================================================================================================
   10. Dense kernels: the float matmul, layer norm and vector helpers that more than one header trains with
       (mlsys_relm.h's GPT-2, mlsys_contracode.h's encoders; ARCHITECTURE.md decision 75)
   ================================================================================================================ */
/* Every kernel here has one fixed summation order per output element, whatever the thread count, tile or vector
   width, so a computation built from them is bitwise reproducible (decision 71). pool may be NULL (serial). */
/* (a · b) over n floats with 32 partial sums (sum k takes the elements i ≡ k mod 32 of the first 32·⌊n/32⌋),
   combined pairwise in a fixed order (k += k + 16, then k + 8, 4, 2, 1), then the tail in order: one summation order
   for every caller, vector width and thread. With GCC or clang the sums are four 8-float vectors (the same
   roundings as the scalar code below, which other compilers get). */
#if defined(__GNUC__) || defined(__clang__)
typedef float mlsys__dense_v8 __attribute__((vector_size(32)));
static inline float mlsys_dense_dot(const float *a, const float *b, int n) {
  mlsys__dense_v8 s0 = {0, 0, 0, 0, 0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0, x, y;
  float h[8], t;
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    memcpy(&x, a + i, 32); memcpy(&y, b + i, 32); s0 += x * y;
    memcpy(&x, a + i + 8, 32); memcpy(&y, b + i + 8, 32); s1 += x * y;
    memcpy(&x, a + i + 16, 32); memcpy(&y, b + i + 16, 32); s2 += x * y;
    memcpy(&x, a + i + 24, 32); memcpy(&y, b + i + 24, 32); s3 += x * y;
  }
  s0 = (s0 + s2) + (s1 + s3);
  memcpy(h, &s0, 32);
  h[0] += h[4]; h[1] += h[5]; h[2] += h[6]; h[3] += h[7];
  h[0] += h[2]; h[1] += h[3];
  t = h[0] + h[1];
  for (; i < n; i++) t += a[i] * b[i];
  return t;
}
#else
static inline float mlsys_dense_dot(const float *a, const float *b, int n) {
  float s[32], t;
  int i = 0, k, j;
  for (k = 0; k < 32; k++) s[k] = 0;
  for (; i + 32 <= n; i += 32)
    for (k = 0; k < 32; k++) s[k] += a[i + k] * b[i + k];
  for (k = 16; k >= 1; k /= 2)
    for (j = 0; j < k; j++) s[j] += s[j + k];
  t = s[0];
  for (; i < n; i++) t += a[i] * b[i];
  return t;
}
#endif

/* y += a·x elementwise (one rounding for the product, one for the sum, as the scalar tail: any vector width gives
   the same bits) */
#if defined(__GNUC__) || defined(__clang__)
static inline void mlsys_dense_axpy(float *y, float a, const float *x, int n) {
  mlsys__dense_v8 av = {a, a, a, a, a, a, a, a}, xv, yv;
  int i = 0;
  for (; i + 8 <= n; i += 8) { memcpy(&xv, x + i, 32); memcpy(&yv, y + i, 32); yv += av * xv; memcpy(y + i, &yv, 32); }
  for (; i < n; i++) y[i] += a * x[i];
}
#else
static inline void mlsys_dense_axpy(float *y, float a, const float *x, int n) {
  int i;
  for (i = 0; i < n; i++) y[i] += a * x[i];
}
#endif

/* LayerNorm over each of N rows of C: out = (x − mean) / sqrt(var + 1e-5) · w + b (biased variance). mean and rstd
   (nullable, N floats each) keep each row's mean and 1/std for the backward. */
MLSYS_DEF void mlsys_dense_layernorm(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N, int C);
/* LayerNorm backward (llm.c): dinp += rstd·(w·dout − mean(w·dout) − x̂·mean(w·dout·x̂)), dw += x̂·dout, db += dout,
   rows in order (the weight gradients are sums over rows). */
MLSYS_DEF void mlsys_dense_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                                              const float *mean, const float *rstd, int N, int C);
/* out[r][o] = bias[o] + inp[r] · w[o] (mlsys_dense_dot) for N rows, C inputs, OC outputs: w is OC×C row-major (llm.c's
   layout, PyTorch's nn.Linear weight); bias nullable. */
MLSYS_DEF void mlsys_dense_matmul(mlsys_pool *pool, float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC);
/* Its backward: dinp = dout·w (overwritten; dinp nullable), dw += doutᵀ·inp, db += Σ_r dout (db nullable). */
MLSYS_DEF void mlsys_dense_matmul_backward(mlsys_pool *pool, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                           const float *w, int N, int C, int OC);

#ifdef __cplusplus
}
#endif

/* ================================================================================================================
   9. CUDA helpers
   ================================================================================================================ */
#ifdef MLSYS_CUDA
#include <cuda_runtime.h>
/* Evaluate a CUDA runtime call; on failure set MLSYS_ERR_CUDA with the call, file, line and CUDA's message and
   return it from the enclosing function (which must return mlsys_status). */
#define MLSYS_CUDA_CHECK(call)                                                                         \
  do {                                                                                                 \
    cudaError_t mlsys__e = (call);                                                                     \
    if (mlsys__e != cudaSuccess)                                                                       \
      return mlsys_set_error(MLSYS_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,               \
                             cudaGetErrorString(mlsys__e));                                            \
  } while (0)
/* Blocks needed to cover n items with `threads` per block, capped at the grid limit. */
static inline unsigned mlsys_cuda_blocks(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b > 2147483647u ? 2147483647u : (b ? b : 1));
}
/* Device count (0 when there is no usable device: then the GPU tests report "skipped"). */
/* Devices visible to this process; 0 when there are none, and also when the query fails, in which case
   mlsys_last_error() says why (a driver/runtime mismatch, a sandbox without the device) so that a caller can tell
   "no GPU" from "a GPU the runtime cannot use". */
static inline int mlsys_cuda_device_count(void) {
  int c = 0;
  cudaError_t e = cudaGetDeviceCount(&c);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e != cudaErrorNoDevice) mlsys_set_error(MLSYS_ERR_CUDA, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 0;
  }
  return c;
}
/* "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB" into buf. */
static inline mlsys_status mlsys_cuda_describe(int dev, char *buf, size_t len) {
  struct cudaDeviceProp p;
  MLSYS_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  snprintf(buf, len, "%s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor, p.multiProcessorCount,
           (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  return MLSYS_OK;
}
#endif /* MLSYS_CUDA */

#endif /* MLSYS_COMMON_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#ifdef MLSYS_COMMON_IMPLEMENTATION
#ifndef MLSYS_COMMON_IMPLEMENTATION_DONE
#define MLSYS_COMMON_IMPLEMENTATION_DONE

#include <string.h>
#include <math.h>
#include <errno.h>
#include <limits.h>
#include <float.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#if defined(__cplusplus)
#define MLSYS__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define MLSYS__TLS _Thread_local
#else
#define MLSYS__TLS __thread
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
   1. Errors and allocation
   --------------------------------------------------------------------------------------------------------------- */
static MLSYS__TLS char mlsys__errbuf[1024];
static MLSYS__TLS mlsys_status mlsys__errstat;

MLSYS_DEF const char *mlsys_status_str(mlsys_status s) {
  switch (s) {
    case MLSYS_OK: return "ok";
    case MLSYS_ERR_ARG: return "invalid argument";
    case MLSYS_ERR_NOMEM: return "out of memory";
    case MLSYS_ERR_IO: return "I/O error";
    case MLSYS_ERR_PARSE: return "parse error";
    case MLSYS_ERR_CYCLE: return "cycle in graph";
    case MLSYS_ERR_INFEASIBLE: return "infeasible";
    case MLSYS_ERR_UNBOUNDED: return "unbounded";
    case MLSYS_ERR_SOLVER: return "solver failure";
    case MLSYS_ERR_TIMEOUT: return "time limit reached without a solution";
    case MLSYS_ERR_CANCELED: return "canceled";
    case MLSYS_ERR_TOO_BIG: return "input too large";
    case MLSYS_ERR_UNSUPPORTED: return "unsupported";
    case MLSYS_ERR_CUDA: return "CUDA error";
    default: return "unknown status";
  }
}
MLSYS_DEF const char *mlsys_last_error(void) { return mlsys__errbuf; }
MLSYS_DEF mlsys_status mlsys_last_status(void) { return mlsys__errstat; }
MLSYS_DEF void mlsys_clear_error(void) { mlsys__errbuf[0] = 0; mlsys__errstat = MLSYS_OK; }

MLSYS_DEF mlsys_status mlsys_set_error(mlsys_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mlsys__errbuf, sizeof mlsys__errbuf, fmt, ap);
  va_end(ap);
  mlsys__errstat = s;
  return s;
}
MLSYS_DEF mlsys_status mlsys_prefix_error(const char *fmt, ...) {
  char pre[512], old[sizeof mlsys__errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, mlsys__errbuf, sizeof old);
  { /* truncation is fine: the detail is a human-readable sentence */
    size_t k = strlen(pre);
    if (k > sizeof mlsys__errbuf - 3) k = sizeof mlsys__errbuf - 3;
    memcpy(mlsys__errbuf, pre, k);
    memcpy(mlsys__errbuf + k, ": ", 2);
    old[sizeof old - 3 - k] = 0;
    memcpy(mlsys__errbuf + k + 2, old, strlen(old) + 1);
  }
  return mlsys__errstat;
}

MLSYS_DEF void *mlsys_alloc(size_t count, size_t size) {
  void *p;
  if (size && count > SIZE_MAX / size) {
    mlsys_set_error(MLSYS_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", count, size);
    return NULL;
  }
  p = MLSYS_MALLOC(count * size != 0 ? count * size : 1);
  if (!p) mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory allocating %zu bytes", count * size);
  return p;
}
MLSYS_DEF void *mlsys_calloc(size_t count, size_t size) {
  void *p = mlsys_alloc(count, size);
  if (p) memset(p, 0, count * size);
  return p;
}
MLSYS_DEF void *mlsys_realloc_array(void *p, size_t count, size_t size) {
  void *q;
  if (size && count > SIZE_MAX / size) {
    mlsys_set_error(MLSYS_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", count, size);
    return NULL;
  }
  q = MLSYS_REALLOC(p, count * size != 0 ? count * size : 1);
  if (!q) mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory allocating %zu bytes", count * size);
  return q;
}
MLSYS_DEF char *mlsys_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)mlsys_alloc(n, 1);
  if (d) memcpy(d, s, n);
  return d;
}
MLSYS_DEF void mlsys_free(void *p) { if (p) MLSYS_FREE(p); }

MLSYS_DEF mlsys_status mlsys_read_file(const char *path, char **data, size_t *len) {
  FILE *f;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  int is_stdin = strcmp(path, "-") == 0 || strcmp(path, "/dev/stdin") == 0;
  *data = NULL;
  if (len) *len = 0;
  f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  for (;;) {
    size_t got;
    if (cap - n < 65536) {
      size_t ncap = cap ? cap * 2 : 65536 + 1;
      char *nb = (char *)mlsys_realloc_array(buf, ncap, 1);
      if (!nb) { mlsys_free(buf); if (!is_stdin) fclose(f); return MLSYS_ERR_NOMEM; }
      buf = nb; cap = ncap;
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    mlsys_free(buf);
    if (!is_stdin) fclose(f);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: read error", path);
  }
  if (!is_stdin) fclose(f);
  buf[n] = 0;
  *data = buf;
  if (len) *len = n;
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   2. Logging
   --------------------------------------------------------------------------------------------------------------- */
static mlsys_log_fn mlsys__log_fn;
static void *mlsys__log_ud;
static int mlsys__log_max = -1;

MLSYS_DEF void mlsys_set_log(mlsys_log_fn fn, void *ud, int max_level) {
  mlsys__log_fn = fn; mlsys__log_ud = ud; mlsys__log_max = fn ? max_level : -1;
}
MLSYS_DEF void mlsys_log(int level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  if (!mlsys__log_fn || level > mlsys__log_max) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mlsys__log_fn(mlsys__log_ud, level, msg);
}
MLSYS_DEF void mlsys_log_stderr(void *ud, int level, const char *msg) {
  static const char *tag[] = {"error", "warning", "info", "debug"};
  (void)ud;
  fprintf(stderr, "mlsys %s: %s\n", tag[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

/* ---------------------------------------------------------------------------------------------------------------
   3. RNG, timer, progress, CSV
   --------------------------------------------------------------------------------------------------------------- */
static uint64_t mlsys__splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
MLSYS_DEF void mlsys_rng_seed(mlsys_rng *r, uint64_t seed) {
  int i;
  for (i = 0; i < 4; i++) r->s[i] = mlsys__splitmix64(&seed);
}
static uint64_t mlsys__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
MLSYS_DEF uint64_t mlsys_rng_u64(mlsys_rng *r) {
  uint64_t *s = r->s, res = mlsys__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = mlsys__rotl(s[3], 45);
  return res;
}
MLSYS_DEF uint64_t mlsys_rng_below(mlsys_rng *r, uint64_t n) {
  uint64_t x, lim;
  if (n == 0) return 0;
  lim = UINT64_MAX - UINT64_MAX % n;  /* reject the uneven tail so every residue is equally likely */
  do x = mlsys_rng_u64(r); while (x >= lim);
  return x % n;
}
MLSYS_DEF int mlsys_rng_range(mlsys_rng *r, int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + (int)mlsys_rng_below(r, (uint64_t)((int64_t)hi - lo + 1));
}
MLSYS_DEF double mlsys_rng_uniform(mlsys_rng *r) { return (double)(mlsys_rng_u64(r) >> 11) * 0x1.0p-53; }
MLSYS_DEF double mlsys_rng_normal(mlsys_rng *r) {
  double u1 = 1.0 - mlsys_rng_uniform(r), u2 = mlsys_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- CRC-32C ---- */
static uint32_t mlsys__crc_tab[8][256];
static int mlsys__crc_hw_ok;
static pthread_once_t mlsys__crc_once = PTHREAD_ONCE_INIT;

static void mlsys__crc_init(void) {
  uint32_t i, j, c;
  for (i = 0; i < 256; i++) {
    c = i;
    for (j = 0; j < 8; j++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    mlsys__crc_tab[0][i] = c;
  }
  for (i = 0; i < 256; i++)
    for (j = 1; j < 8; j++)
      mlsys__crc_tab[j][i] = (mlsys__crc_tab[j - 1][i] >> 8) ^ mlsys__crc_tab[0][mlsys__crc_tab[j - 1][i] & 0xff];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  mlsys__crc_hw_ok = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

/* c is the working register (already inverted) */
static uint32_t mlsys__crc_sw(uint32_t c, const uint8_t *p, size_t n) {
  const uint32_t(*t)[256] = mlsys__crc_tab;
  while (n && ((uintptr_t)p & 7)) { c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff]; n--; }
  while (n >= 8) {
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8; n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MLSYS__CRC_HW 1
__attribute__((target("sse4.2"))) static uint32_t mlsys__crc_hw(uint32_t c, const uint8_t *p, size_t n) {
  uint64_t c64;
  while (n && ((uintptr_t)p & 7)) { c = __builtin_ia32_crc32qi(c, *p++); n--; }
  c64 = c;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
    p += 8; n -= 8;
  }
  c = (uint32_t)c64;
  while (n--) c = __builtin_ia32_crc32qi(c, *p++);
  return c;
}
#endif

MLSYS_DEF uint32_t mlsys_crc32c(uint32_t crc, const void *buf, size_t n) {
  uint32_t c = ~crc;
  pthread_once(&mlsys__crc_once, mlsys__crc_init);
  if (!n) return crc;
#ifdef MLSYS__CRC_HW
  if (mlsys__crc_hw_ok) return ~mlsys__crc_hw(c, (const uint8_t *)buf, n);
#endif
  return ~mlsys__crc_sw(c, (const uint8_t *)buf, n);
}

MLSYS_DEF double mlsys_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

MLSYS_DEF void mlsys_progress_begin(mlsys_progress *p, const char *label, int enabled) {
  p->label = label;
  p->start = mlsys_now();
  p->last = 0;
  p->shown = 0;
  p->enabled = enabled && isatty(2);
}
MLSYS_DEF void mlsys_progress_update(mlsys_progress *p, const char *fmt, ...) {
  char msg[256];
  double now;
  va_list ap;
  if (!p->enabled) return;
  now = mlsys_now();
  if (p->shown && now - p->last < 0.1) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[K%s: %s  %.1f s", p->label ? p->label : "", msg, now - p->start);
  fflush(stderr);
  p->last = now;
  p->shown = 1;
}
MLSYS_DEF void mlsys_progress_end(mlsys_progress *p) {
  if (p->enabled && p->shown) { fprintf(stderr, "\r\033[K"); fflush(stderr); }
  p->shown = 0;
}

MLSYS_DEF void mlsys_csv_field(FILE *f, const char *s) {
  if (!s) return;
  if (strpbrk(s, ",\"\r\n") == NULL) { fputs(s, f); return; }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

MLSYS_DEF void mlsys_adamw_step(float *p, const float *g, float *m, float *v, size_t n, int64_t t, float lr, float beta1, float beta2, float eps,
                                float wd) {
  const float c1 = (float)(1.0 - pow((double)beta1, (double)t)), c2 = (float)(1.0 - pow((double)beta2, (double)t));
  size_t i;
  for (i = 0; i < n; i++) {
    const float gi = g[i], mi = beta1 * m[i] + (1.0f - beta1) * gi, vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    const float mh = mi / c1, vh = vi / c2;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   4. Thread pool: workers sleep on a condition variable; a parallel-for hands out indices with an atomic counter.
   --------------------------------------------------------------------------------------------------------------- */
struct mlsys_pool {
  int nthreads;                 /* worker threads (the caller is worker 0, threads are 1..nthreads) */
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  long generation;              /* bumped for every parallel-for */
  int quit, busy;
  void (*fn)(void *, long, int);
  void *ctx;
  long n, next;                 /* next index to hand out (under mu) */
  int running;                  /* workers still inside the current job */
};
struct mlsys__pool_arg { mlsys_pool *p; int id; };

static void mlsys__pool_work(mlsys_pool *p, int id) {
  for (;;) {
    long i;
    pthread_mutex_lock(&p->mu);
    i = p->next < p->n ? p->next++ : -1;
    pthread_mutex_unlock(&p->mu);
    if (i < 0) break;
    p->fn(p->ctx, i, id);
  }
}
static void *mlsys__pool_main(void *arg) {
  struct mlsys__pool_arg a = *(struct mlsys__pool_arg *)arg;
  mlsys_pool *p = a.p;
  long seen = 0;
  mlsys_free(arg);
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit) { pthread_mutex_unlock(&p->mu); return NULL; }
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    mlsys__pool_work(p, a.id);
    pthread_mutex_lock(&p->mu);
    if (--p->running == 0) pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}
MLSYS_DEF int mlsys_ncpus(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c < 1 ? 1 : (int)c;
}
MLSYS_DEF mlsys_status mlsys_pool_create(int nthreads, mlsys_pool **out) {
  mlsys_pool *p;
  int i;
  *out = NULL;
  if (nthreads < 0) return mlsys_set_error(MLSYS_ERR_ARG, "thread pool: negative thread count %d", nthreads);
  if (nthreads == 0) nthreads = mlsys_ncpus();
  p = (mlsys_pool *)mlsys_calloc(1, sizeof *p);
  if (!p) return MLSYS_ERR_NOMEM;
  p->nthreads = nthreads - 1;   /* the calling thread works too */
  p->threads = (pthread_t *)mlsys_calloc((size_t)(p->nthreads ? p->nthreads : 1), sizeof(pthread_t));
  if (!p->threads) { mlsys_free(p); return MLSYS_ERR_NOMEM; }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  for (i = 0; i < p->nthreads; i++) {
    struct mlsys__pool_arg *a = (struct mlsys__pool_arg *)mlsys_alloc(1, sizeof *a);
    if (!a || (a->p = p, a->id = i + 1, pthread_create(&p->threads[i], NULL, mlsys__pool_main, a) != 0)) {
      mlsys_free(a);
      p->nthreads = i;
      mlsys_pool_free(p);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "thread pool: cannot start thread %d", i + 1);
    }
  }
  *out = p;
  return MLSYS_OK;
}
MLSYS_DEF int mlsys_pool_size(const mlsys_pool *p) { return p ? p->nthreads + 1 : 1; }
MLSYS_DEF mlsys_status mlsys_pool_for(mlsys_pool *p, long n, void (*fn)(void *, long, int), void *ctx) {
  long i;
  if (n <= 0) return MLSYS_OK;
  if (!p || p->nthreads == 0 || n == 1) {
    for (i = 0; i < n; i++) fn(ctx, i, 0);
    return MLSYS_OK;
  }
  pthread_mutex_lock(&p->mu);
  if (p->busy) {
    pthread_mutex_unlock(&p->mu);
    return mlsys_set_error(MLSYS_ERR_ARG, "thread pool: mlsys_pool_for called while the pool is busy");
  }
  p->busy = 1;
  p->fn = fn; p->ctx = ctx; p->n = n; p->next = 0;
  p->running = p->nthreads;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  mlsys__pool_work(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->running > 0) pthread_cond_wait(&p->done, &p->mu);
  p->busy = 0;
  pthread_mutex_unlock(&p->mu);
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_pool_free(mlsys_pool *p) {
  int i;
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  mlsys_free(p->threads);
  mlsys_free(p);
}

/* ---------------------------------------------------------------------------------------------------------------
   5. DAG
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF void mlsys_dag_free(mlsys_dag *g) {
  int i;
  if (!g) return;
  if (g->name) for (i = 0; i < g->n; i++) mlsys_free(g->name[i]);
  mlsys_free(g->name); mlsys_free(g->cost); mlsys_free(g->size);
  mlsys_free(g->in_off); mlsys_free(g->in); mlsys_free(g->out_off); mlsys_free(g->out);
  memset(g, 0, sizeof *g);
}

MLSYS_DEF const char *mlsys_dag_node_name(const mlsys_dag *g, int v, char *buf, size_t buflen) {
  if (g->name && v >= 0 && v < g->n && g->name[v]) return g->name[v];
  snprintf(buf, buflen, "#%d", v);
  return buf;
}

static int mlsys__cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Fill names/cost/size copies and the successor CSR from an already built predecessor CSR. */
static mlsys_status mlsys__dag_finish(mlsys_dag *g, const char *const *names, const double *cost,
                                      const uint64_t *size) {
  int v, j, *fill;
  char a[32], b[32];
  g->out_off = (int *)mlsys_calloc((size_t)g->n + 1, sizeof(int));
  g->out = (int *)mlsys_alloc((size_t)(g->nedges ? g->nedges : 1), sizeof(int));
  fill = (int *)mlsys_alloc((size_t)g->n + 1, sizeof(int));
  if (!g->out_off || !g->out || !fill) { mlsys_free(fill); return MLSYS_ERR_NOMEM; }
  for (v = 0; v < g->n; v++)
    for (j = g->in_off[v]; j < g->in_off[v + 1]; j++) g->out_off[g->in[j] + 1]++;
  for (v = 0; v < g->n; v++) g->out_off[v + 1] += g->out_off[v];
  memcpy(fill, g->out_off, sizeof(int) * ((size_t)g->n + 1));
  for (v = 0; v < g->n; v++)   /* visiting destinations in ascending order leaves each out list sorted */
    for (j = g->in_off[v]; j < g->in_off[v + 1]; j++) g->out[fill[g->in[j]]++] = v;
  mlsys_free(fill);
  /* duplicate edges: a sorted copy of each predecessor list */
  for (v = 0; v < g->n; v++) {
    int k = g->in_off[v + 1] - g->in_off[v], tmp[64], *t = tmp;
    if (k < 2) continue;
    if (k > 64 && !(t = (int *)mlsys_alloc((size_t)k, sizeof(int)))) return MLSYS_ERR_NOMEM;
    memcpy(t, g->in + g->in_off[v], sizeof(int) * (size_t)k);
    qsort(t, (size_t)k, sizeof(int), mlsys__cmp_int);
    for (j = 1; j < k; j++)
      if (t[j] == t[j - 1]) {
        int d = t[j];
        if (t != tmp) mlsys_free(t);
        return mlsys_set_error(MLSYS_ERR_ARG, "duplicate edge %s -> %s", mlsys_dag_node_name(g, d, a, sizeof a),
                               mlsys_dag_node_name(g, v, b, sizeof b));
      }
    if (t != tmp) mlsys_free(t);
  }
  (void)names;
  if (cost) {
    if (!(g->cost = (double *)mlsys_alloc((size_t)(g->n ? g->n : 1), sizeof(double)))) return MLSYS_ERR_NOMEM;
    memcpy(g->cost, cost, sizeof(double) * (size_t)g->n);
  }
  if (size) {
    if (!(g->size = (uint64_t *)mlsys_alloc((size_t)(g->n ? g->n : 1), sizeof(uint64_t)))) return MLSYS_ERR_NOMEM;
    memcpy(g->size, size, sizeof(uint64_t) * (size_t)g->n);
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__dag_names(mlsys_dag *g, const char *const *names) {
  int v;
  if (!names) return MLSYS_OK;
  if (!(g->name = (char **)mlsys_calloc((size_t)(g->n ? g->n : 1), sizeof(char *)))) return MLSYS_ERR_NOMEM;
  for (v = 0; v < g->n; v++)
    if (names[v] && !(g->name[v] = mlsys_strdup(names[v]))) return MLSYS_ERR_NOMEM;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_dag_build_csr(mlsys_dag *g, int n, const int *dep_off, const int *dep,
                                           const char *const *names, const double *cost, const uint64_t *size) {
  int v, j;
  mlsys_status st;
  memset(g, 0, sizeof *g);
  if (n < 0) return mlsys_set_error(MLSYS_ERR_ARG, "graph: negative node count %d", n);
  if (n > 0 && (!dep_off || dep_off[0] != 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "graph: dependency offsets must start at 0");
  for (v = 0; v < n; v++)
    if (dep_off[v + 1] < dep_off[v])
      return mlsys_set_error(MLSYS_ERR_ARG, "graph: dependency offsets decrease at node %d", v);
  g->n = n;
  g->nedges = n ? dep_off[n] : 0;
  if ((st = mlsys__dag_names(g, names)) != MLSYS_OK) goto fail;
  for (v = 0; v < n; v++)
    for (j = dep_off[v]; j < dep_off[v + 1]; j++)
      if (dep[j] < 0 || dep[j] >= n) {
        char b[32];
        st = mlsys_set_error(MLSYS_ERR_ARG, "graph: node %s depends on node %d, outside 0..%d",
                             mlsys_dag_node_name(g, v, b, sizeof b), dep[j], n - 1);
        goto fail;
      }
  g->in_off = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  g->in = (int *)mlsys_alloc((size_t)(g->nedges ? g->nedges : 1), sizeof(int));
  if (!g->in_off || !g->in) { st = MLSYS_ERR_NOMEM; goto fail; }
  if (n) memcpy(g->in_off, dep_off, sizeof(int) * ((size_t)n + 1)); else g->in_off[0] = 0;
  if (g->nedges) memcpy(g->in, dep, sizeof(int) * (size_t)g->nedges);
  if ((st = mlsys__dag_finish(g, names, cost, size)) != MLSYS_OK) goto fail;
  return MLSYS_OK;
fail:
  mlsys_dag_free(g);
  return st;
}

MLSYS_DEF mlsys_status mlsys_dag_build(mlsys_dag *g, int n, int nedges, const int *src, const int *dst,
                                       const char *const *names, const double *cost, const uint64_t *size) {
  int *off, *dep, *fill, e, v;
  mlsys_status st;
  memset(g, 0, sizeof *g);
  if (n < 0 || nedges < 0) return mlsys_set_error(MLSYS_ERR_ARG, "graph: negative size (%d nodes, %d edges)", n, nedges);
  for (e = 0; e < nedges; e++)
    if (src[e] < 0 || src[e] >= n || dst[e] < 0 || dst[e] >= n)
      return mlsys_set_error(MLSYS_ERR_ARG, "graph: edge %d (%d -> %d) names a node outside 0..%d", e, src[e],
                             dst[e], n - 1);
  off = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  dep = (int *)mlsys_alloc((size_t)(nedges ? nedges : 1), sizeof(int));
  fill = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!off || !dep || !fill) { mlsys_free(off); mlsys_free(dep); mlsys_free(fill); return MLSYS_ERR_NOMEM; }
  for (e = 0; e < nedges; e++) off[dst[e] + 1]++;
  for (v = 0; v < n; v++) off[v + 1] += off[v];
  memcpy(fill, off, sizeof(int) * ((size_t)n + 1));
  for (e = 0; e < nedges; e++) dep[fill[dst[e]]++] = src[e];
  st = mlsys_dag_build_csr(g, n, off, dep, names, cost, size);
  mlsys_free(off); mlsys_free(dep); mlsys_free(fill);
  return st;
}

MLSYS_DEF mlsys_status mlsys_dag_copy(const mlsys_dag *g, mlsys_dag *out) {
  return mlsys_dag_build_csr(out, g->n, g->in_off, g->in, (const char *const *)g->name, g->cost, g->size);
}

MLSYS_DEF int mlsys_dag_find(const mlsys_dag *g, const char *name) {
  int v;
  if (!g->name || !name) return -1;
  for (v = 0; v < g->n; v++)
    if (g->name[v] && strcmp(g->name[v], name) == 0) return v;
  return -1;
}

MLSYS_DEF int mlsys_dag_has_edge(const mlsys_dag *g, int src, int dst) {
  int j;
  if (src < 0 || src >= g->n || dst < 0 || dst >= g->n) return 0;
  for (j = g->in_off[dst]; j < g->in_off[dst + 1]; j++)
    if (g->in[j] == src) return 1;
  return 0;
}

/* Name one cycle among the nodes Kahn's algorithm could not order: every such node has a predecessor that is also
   unordered, so walking predecessors from any of them must revisit a node; that loop is a cycle. */
static mlsys_status mlsys__dag_name_cycle(const mlsys_dag *g, const char *left) {
  int start = -1, v, j, len = 0, *pos, *path;
  char msg[768], nb[32];
  size_t used;
  for (v = 0; v < g->n && start < 0; v++)
    if (left[v]) start = v;
  pos = (int *)mlsys_alloc((size_t)g->n, sizeof(int));
  path = (int *)mlsys_alloc((size_t)g->n + 1, sizeof(int));
  if (!pos || !path) { mlsys_free(pos); mlsys_free(path); return MLSYS_ERR_NOMEM; }
  for (v = 0; v < g->n; v++) pos[v] = -1;
  v = start;
  while (pos[v] < 0) {
    int p = -1;
    pos[v] = len;
    path[len++] = v;
    for (j = g->in_off[v]; j < g->in_off[v + 1]; j++)
      if (left[g->in[j]]) { p = g->in[j]; break; }
    MLSYS_ASSERT(p >= 0);
    v = p;
  }
  /* path[pos[v]..len-1] walks backwards along edges; print it forwards: v -> ... -> v */
  used = (size_t)snprintf(msg, sizeof msg, "cycle: %s", mlsys_dag_node_name(g, v, nb, sizeof nb));
  for (j = len - 1; j >= pos[v] && used < sizeof msg; j--)
    used += (size_t)snprintf(msg + used, sizeof msg - used, " -> %s",
                             mlsys_dag_node_name(g, path[j], nb, sizeof nb));
  mlsys_free(pos);
  mlsys_free(path);
  return mlsys_set_error(MLSYS_ERR_CYCLE, "%s", msg);
}

MLSYS_DEF mlsys_status mlsys_dag_topo_order(const mlsys_dag *g, int *order) {
  int *indeg, *heap, hn = 0, cnt = 0, v, j;
  char *left;
  mlsys_status st = MLSYS_OK;
  indeg = (int *)mlsys_alloc((size_t)(g->n ? g->n : 1), sizeof(int));
  heap = (int *)mlsys_alloc((size_t)(g->n ? g->n : 1), sizeof(int));
  left = (char *)mlsys_alloc((size_t)(g->n ? g->n : 1), 1);
  if (!indeg || !heap || !left) { st = MLSYS_ERR_NOMEM; goto done; }
  for (v = 0; v < g->n; v++) { indeg[v] = g->in_off[v + 1] - g->in_off[v]; left[v] = 1; }
  /* a binary min-heap of ready nodes: ties go to the smallest id, so an already sorted graph keeps its order */
#define MLSYS__HEAP_PUSH(x)                                                                         \
  do {                                                                                              \
    int c_ = hn++;                                                                                  \
    heap[c_] = (x);                                                                                 \
    while (c_ > 0 && heap[(c_ - 1) / 2] > heap[c_]) {                                               \
      int t_ = heap[c_]; heap[c_] = heap[(c_ - 1) / 2]; heap[(c_ - 1) / 2] = t_; c_ = (c_ - 1) / 2; \
    }                                                                                               \
  } while (0)
  for (v = 0; v < g->n; v++)
    if (indeg[v] == 0) MLSYS__HEAP_PUSH(v);
  while (hn > 0) {
    int top = heap[0], c = 0;
    heap[0] = heap[--hn];
    for (;;) {
      int l = 2 * c + 1, r = l + 1, m = c;
      if (l < hn && heap[l] < heap[m]) m = l;
      if (r < hn && heap[r] < heap[m]) m = r;
      if (m == c) break;
      { int t = heap[m]; heap[m] = heap[c]; heap[c] = t; }
      c = m;
    }
    left[top] = 0;
    if (order) order[cnt] = top;
    cnt++;
    for (j = g->out_off[top]; j < g->out_off[top + 1]; j++)
      if (--indeg[g->out[j]] == 0) MLSYS__HEAP_PUSH(g->out[j]);
  }
#undef MLSYS__HEAP_PUSH
  if (cnt < g->n) st = mlsys__dag_name_cycle(g, left);
done:
  mlsys_free(indeg); mlsys_free(heap); mlsys_free(left);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   6. JSON
   --------------------------------------------------------------------------------------------------------------- */
/* JSON (section 6): a strict RFC 8259 reader into an arena-backed tree, typed member getters, and a streaming
   writer. Included inside the implementation part of mlsys_common.h.

   Reader
     - One pass over the bytes; the text need not be NUL-terminated (len bytes are read, NUL bytes included).
     - Values are collected on a growable stack; when an array or object closes, its elements are copied into the
       document's arena (a list of blocks freed all at once by mlsys_json_doc_free), so every container's items[]
       and keys[] are contiguous.
     - Numbers: the grammar is checked here; the double comes from strtod on a NUL-terminated copy, which assumes
       the C locale (LC_NUMERIC "C": '.' as the decimal point). Integer literals with at most 2^53 magnitude are
       converted exactly without strtod. i64/u64 come from our own overflow-checked digit loop.
     - Duplicate keys are found as each key is read (hash set per nesting level once an object has 16 members),
       so errors come out in document order.
     - Nesting is limited to MLSYS__JSON_MAX_DEPTH (512) containers; recursion depth is bounded by that.

   Accessors and getters
     - mlsys_json_at also indexes an object's member values (keys[i] names items[i]).
     - get_i64/get_u64 accept any integral number in range, also one written as 1e9 or 5.0 (is_int is about
       the literal; the getters are about the value). get_str rejects strings containing \u0000 (the result is
       a plain C string). A NULL obj reads as an absent object: defaults when not required, else "missing
       required member". On any error *out is left at dflt (NULL for get_typed).

   Writer: no allocation; the state lives in mlsys_json_writer. w->err holds the first error (a MLSYS__JW_E_*
   code below) and makes every later call a no-op; mlsys_jw_finish turns it into a status and a message. */

#define MLSYS__JSON_MAX_DEPTH MLSYS_JSON_MAX_DEPTH
#define MLSYS__JSON_HDR ((sizeof(mlsys__json_block) + 15) & ~(size_t)15)

typedef struct mlsys__json_block {
  struct mlsys__json_block *next;
  size_t cap, used;
} mlsys__json_block;

typedef struct {
  char *s;
  size_t len;
  uint32_t hash;
  int line, col;
} mlsys__json_key;

typedef struct {
  size_t *slots; /* key-stack index + 1, 0 = empty */
  size_t alloc;  /* allocated slots */
} mlsys__json_set;

typedef struct {
  const unsigned char *text, *p, *end, *line_start;
  int line;
  const char *srcname;  /* for messages */
  const char *src;      /* stored in every node (doc->src_) */
  mlsys__json_block *arena;
  size_t next_block;
  mlsys_json *vals;
  size_t nvals, capvals;
  mlsys__json_key *keys;
  size_t nkeys, capkeys;
  char *num;
  size_t numcap;
  mlsys__json_set sets[MLSYS__JSON_MAX_DEPTH + 2];
} mlsys__json_parser;

enum { MLSYS__JSON_CTX_TOP, MLSYS__JSON_CTX_ARR_FIRST, MLSYS__JSON_CTX_ARR_NEXT, MLSYS__JSON_CTX_MEMBER };
enum { MLSYS__U8_OK, MLSYS__U8_CONT, MLSYS__U8_OVERLONG, MLSYS__U8_SURROGATE, MLSYS__U8_TOOBIG, MLSYS__U8_TRUNC };

/* ---- small shared helpers ---- */

/* Validate one UTF-8 sequence at s (s < e). Returns MLSYS__U8_OK with *n = its length, or an error code with
   *n = the length of the maximal invalid subpart (≥ 1, as Unicode's "U+FFFD substitution" practice counts). */
static int mlsys__json_utf8(const unsigned char *s, const unsigned char *e, size_t *n) {
  unsigned c = s[0], lo = 0x80, hi = 0xBF;
  size_t need, i;
  if (c < 0x80) { *n = 1; return MLSYS__U8_OK; }
  if (c < 0xC2) { *n = 1; return c < 0xC0 ? MLSYS__U8_CONT : MLSYS__U8_OVERLONG; }
  if (c < 0xE0) need = 1;
  else if (c < 0xF0) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
  } else if (c < 0xF5) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
  } else { *n = 1; return MLSYS__U8_TOOBIG; }
  for (i = 1; i <= need; i++) {
    unsigned b;
    if (s + i >= e) { *n = i; return MLSYS__U8_TRUNC; }
    b = s[i];
    if (i == 1 && (b < lo || b > hi)) {
      *n = 1;
      if (b >= 0x80 && b <= 0xBF)
        return (c == 0xE0 || c == 0xF0) ? MLSYS__U8_OVERLONG : c == 0xED ? MLSYS__U8_SURROGATE : MLSYS__U8_TOOBIG;
      return MLSYS__U8_TRUNC;
    }
    if (b < 0x80 || b > 0xBF) { *n = i; return MLSYS__U8_TRUNC; }
  }
  *n = need + 1;
  return MLSYS__U8_OK;
}

/* Decimal digits of v, written backwards ending just before `end`; returns the first character. */
static char *mlsys__json_u64s(char *end, uint64_t v) {
  do { *--end = (char)('0' + (int)(v % 10)); v /= 10; } while (v);
  return end;
}

/* Shortest of %.15g/%.16g/%.17g that reads back as v; integer values below 1e15 without exponent. v finite.
   buf holds at least 32 characters. */
static void mlsys__json_fmt_double(char *buf, double v) {
  int prec;
  if (v == floor(v) && fabs(v) < 1e15) {
    char tmp[32], *s;
    uint64_t mag = (uint64_t)fabs(v);
    tmp[31] = 0;
    s = mlsys__json_u64s(tmp + 31, mag);
    if (signbit(v)) *--s = '-';
    memcpy(buf, s, (size_t)(tmp + 32 - s));
    return;
  }
  for (prec = 15; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* A printable, quoted, length-limited rendering of a key (for messages). */
static const char *mlsys__json_quote(const char *s, size_t len, char *buf, size_t cap) {
  size_t i = 0, o = 0;
  buf[o++] = '\'';
  while (i < len && o + 8 < cap) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7F) {
      o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", c);
      i++;
    } else if (c < 0x80) {
      buf[o++] = (char)c;
      i++;
    } else {
      size_t n;
      if (mlsys__json_utf8((const unsigned char *)s + i, (const unsigned char *)s + len, &n) == MLSYS__U8_OK &&
          o + n + 8 < cap) {
        memcpy(buf + o, s + i, n);
        o += n;
        i += n;
      } else if (o + 12 < cap && n == 1) {
        o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", c);
        i++;
      } else break;
    }
  }
  if (i < len) { memcpy(buf + o, "...", 3); o += 3; }
  buf[o++] = '\'';
  buf[o] = 0;
  return buf;
}

MLSYS_DEF const char *mlsys_json_type_name(mlsys_json_type t) {
  switch (t) {
    case MLSYS_JSON_NULL: return "null";
    case MLSYS_JSON_BOOL: return "boolean";
    case MLSYS_JSON_NUMBER: return "number";
    case MLSYS_JSON_STRING: return "string";
    case MLSYS_JSON_ARRAY: return "array";
    case MLSYS_JSON_OBJECT: return "object";
    default: return "unknown type";
  }
}
static const char *mlsys__json_a_type(mlsys_json_type t) {
  switch (t) {
    case MLSYS_JSON_NULL: return "null";
    case MLSYS_JSON_BOOL: return "a boolean";
    case MLSYS_JSON_NUMBER: return "a number";
    case MLSYS_JSON_STRING: return "a string";
    case MLSYS_JSON_ARRAY: return "an array";
    case MLSYS_JSON_OBJECT: return "an object";
    default: return "an unknown type";
  }
}

/* ---- reader ---- */

static int mlsys__json_col(const mlsys__json_parser *P, const unsigned char *at) {
  size_t c = (size_t)(at - P->line_start) + 1;
  return c > (size_t)INT_MAX ? INT_MAX : (int)c;
}

static mlsys_status mlsys__json_err_lc(const mlsys__json_parser *P, int line, int col, const char *fmt, ...)
    MLSYS__PRINTF(4, 5);
static mlsys_status mlsys__json_err_lc(const mlsys__json_parser *P, int line, int col, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: %s", P->srcname, line, col, msg);
}
#define MLSYS__JSON_ERR(P, at, ...) mlsys__json_err_lc((P), (P)->line, mlsys__json_col((P), (at)), __VA_ARGS__)

/* What is at `at`, for "found ..." in messages. */
static const char *mlsys__json_found(const mlsys__json_parser *P, const unsigned char *at, char *buf, size_t cap) {
  unsigned c;
  if (at >= P->end) return "end of input";
  c = *at;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    size_t n = 0, o = 0;
    buf[o++] = '\'';
    while (at + n < P->end && n < 24) {
      unsigned d = at[n];
      if (!((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9') || d == '_')) break;
      buf[o++] = (char)d;
      n++;
    }
    if (n == 24 && at + n < P->end) { memcpy(buf + o, "...", 3); o += 3; }
    buf[o++] = '\'';
    buf[o] = 0;
    return buf;
  }
  if (c == 0) return "a NUL byte";
  if (c < 0x20 || c == 0x7F) snprintf(buf, cap, "control character 0x%02X", c);
  else if (c < 0x80) snprintf(buf, cap, "'%c'", (char)c);
  else snprintf(buf, cap, "byte 0x%02X (non-ASCII text outside a string)", c);
  return buf;
}

static int mlsys__json_word_is(const mlsys__json_parser *P, const unsigned char *at, const char *w) {
  size_t n = strlen(w);
  unsigned d;
  if ((size_t)(P->end - at) < n || memcmp(at, w, n) != 0) return 0;
  if (at + n == P->end) return 1;
  d = at[n];
  return !((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9') || d == '_');
}

/* A hint for a character found where a value was expected. */
static const char *mlsys__json_value_hint(const mlsys__json_parser *P, const unsigned char *at) {
  if (at >= P->end) return "";
  switch (*at) {
    case '/': case '#': return " (comments are not allowed in JSON)";
    case '\'': return " (JSON strings use double quotes)";
    case '+': return " (JSON numbers have no leading '+')";
    case '.': return " (JSON numbers need a digit before '.')";
    default: break;
  }
  if (mlsys__json_word_is(P, at, "NaN") || mlsys__json_word_is(P, at, "Infinity") ||
      mlsys__json_word_is(P, at, "nan") || mlsys__json_word_is(P, at, "inf") ||
      mlsys__json_word_is(P, at, "infinity") || mlsys__json_word_is(P, at, "Inf"))
    return " (NaN and Infinity are not JSON numbers)";
  if (mlsys__json_word_is(P, at, "True") || mlsys__json_word_is(P, at, "False") ||
      mlsys__json_word_is(P, at, "None") || mlsys__json_word_is(P, at, "Null") ||
      mlsys__json_word_is(P, at, "TRUE") || mlsys__json_word_is(P, at, "FALSE") ||
      mlsys__json_word_is(P, at, "NULL"))
    return " (JSON literals are lowercase: true, false, null)";
  if (mlsys__json_word_is(P, at, "undefined")) return " (undefined is not JSON; use null)";
  return "";
}

/* A hint for a character found where ',' or a closing bracket (or the end) was expected. */
static const char *mlsys__json_sep_hint(const mlsys__json_parser *P, const unsigned char *at) {
  if (at < P->end && (*at == '/' || *at == '#')) return " (comments are not allowed in JSON)";
  return "";
}

static void mlsys__json_ws(mlsys__json_parser *P) {
  const unsigned char *p = P->p, *e = P->end;
  while (p < e) {
    unsigned c = *p;
    if (c == ' ' || c == '\t' || c == '\r') p++;
    else if (c == '\n') {
      p++;
      if (P->line < INT_MAX) P->line++;
      P->line_start = p;
    } else break;
  }
  P->p = p;
}

static void *mlsys__json_arena_alloc(mlsys__json_parser *P, size_t size, size_t align) {
  mlsys__json_block *b = P->arena, *nb;
  size_t cap;
  int big;
  if (b) {
    size_t off = (b->used + align - 1) & ~(align - 1);
    if (off <= b->cap && size <= b->cap - off) {
      b->used = off + size;
      return (char *)b + MLSYS__JSON_HDR + off;
    }
  }
  if (size > SIZE_MAX / 2) { mlsys_set_error(MLSYS_ERR_NOMEM, "JSON: allocation of %zu bytes is too large", size); return NULL; }
  big = size > P->next_block / 4;
  cap = big ? (size ? size : 1) : P->next_block;
  nb = (mlsys__json_block *)mlsys_alloc(1, MLSYS__JSON_HDR + cap);
  if (!nb) return NULL;
  nb->cap = cap;
  nb->used = size;
  if (big && b) {           /* a dedicated block; keep filling the current one */
    nb->next = b->next;
    b->next = nb;
  } else {
    nb->next = b;
    P->arena = nb;
    if (P->next_block < ((size_t)8 << 20)) P->next_block *= 2;
  }
  return (char *)nb + MLSYS__JSON_HDR;
}

static void mlsys__json_arena_free(void *arena) {
  mlsys__json_block *b = (mlsys__json_block *)arena;
  while (b) {
    mlsys__json_block *n = b->next;
    mlsys_free(b);
    b = n;
  }
}

static mlsys_json *mlsys__json_push(mlsys__json_parser *P, int line, int col, mlsys_json_type t) {
  mlsys_json *v;
  if (P->nvals == P->capvals) {
    size_t nc = P->capvals ? P->capvals * 2 : 64;
    mlsys_json *nv = (mlsys_json *)mlsys_realloc_array(P->vals, nc, sizeof(mlsys_json));
    if (!nv) return NULL;
    P->vals = nv;
    P->capvals = nc;
  }
  v = &P->vals[P->nvals++];
  memset(v, 0, sizeof *v);
  v->type = t;
  v->line = line;
  v->col = col;
  v->src = P->src;
  return v;
}

static int mlsys__json_hex4(const unsigned char *q, unsigned *out) {
  unsigned v = 0;
  int i;
  for (i = 0; i < 4; i++) {
    unsigned c = q[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return 0;
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

/* Parse the string whose opening quote is at P->p into the arena. */
static mlsys_status mlsys__json_string(mlsys__json_parser *P, char **out, size_t *outlen) {
  const unsigned char *open = P->p, *q = open + 1, *s = q, *e = P->end;
  unsigned char *buf, *o;
  char fb[64];
  /* find the end: the first unescaped '"', control character or the end of input */
  while (s < e) {
    unsigned c = *s;
    if (c == '"' || c < 0x20) break;
    if (c == '\\') {
      if (++s == e) break;
    }
    s++;
  }
  buf = (unsigned char *)mlsys__json_arena_alloc(P, (size_t)(s - q) + 1, 1);
  if (!buf) return MLSYS_ERR_NOMEM;
  o = buf;
  while (q < s) {
    unsigned c = *q;
    if (c != '\\' && c < 0x80) { /* c ≥ 0x20 and not '"' before s */
      *o++ = (unsigned char)c;
      q++;
      continue;
    }
    if (c >= 0x80) {
      size_t n;
      int r = mlsys__json_utf8(q, e, &n);
      if (r != MLSYS__U8_OK) {
        const char *why = r == MLSYS__U8_CONT ? "unexpected continuation byte"
                          : r == MLSYS__U8_OVERLONG ? "overlong encoding starting with byte"
                          : r == MLSYS__U8_SURROGATE ? "UTF-16 surrogate encoded in UTF-8, starting with byte"
                          : r == MLSYS__U8_TOOBIG ? "code point above U+10FFFF, starting with byte"
                                                  : "truncated multi-byte sequence starting with byte";
        return MLSYS__JSON_ERR(P, q, "invalid UTF-8 in string: %s 0x%02X", why, c);
      }
      memcpy(o, q, n);
      o += n;
      q += n;
      continue;
    }
    /* escape */
    if (q + 1 >= e) return MLSYS__JSON_ERR(P, q, "expected an escape character after '\\', found end of input");
    switch (q[1]) {
      case '"': *o++ = '"'; q += 2; break;
      case '\\': *o++ = '\\'; q += 2; break;
      case '/': *o++ = '/'; q += 2; break;
      case 'b': *o++ = '\b'; q += 2; break;
      case 'f': *o++ = '\f'; q += 2; break;
      case 'n': *o++ = '\n'; q += 2; break;
      case 'r': *o++ = '\r'; q += 2; break;
      case 't': *o++ = '\t'; q += 2; break;
      case 'u': {
        unsigned cp, lo;
        if (e - q < 6 || !mlsys__json_hex4(q + 2, &cp))
          return MLSYS__JSON_ERR(P, q, "invalid \\u escape: expected 4 hex digits after \\u");
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return MLSYS__JSON_ERR(P, q, "invalid \\u escape: lone low surrogate \\u%04X (not preceded by a high "
                                       "surrogate \\uD800-\\uDBFF)", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (e - q < 12 || q[6] != '\\' || q[7] != 'u' || !mlsys__json_hex4(q + 8, &lo) || lo < 0xDC00 ||
              lo > 0xDFFF)
            return MLSYS__JSON_ERR(P, q, "invalid \\u escape: high surrogate \\u%04X must be followed by a low "
                                         "surrogate escape \\uDC00-\\uDFFF", cp);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          q += 12;
        } else q += 6;
        if (cp < 0x80) *o++ = (unsigned char)cp;
        else if (cp < 0x800) {
          *o++ = (unsigned char)(0xC0 | (cp >> 6));
          *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          *o++ = (unsigned char)(0xE0 | (cp >> 12));
          *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
          *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        } else {
          *o++ = (unsigned char)(0xF0 | (cp >> 18));
          *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
          *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
          *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: {
        unsigned d = q[1];
        if (d >= 0x21 && d < 0x7F)
          return MLSYS__JSON_ERR(P, q, "invalid escape '\\%c' in string (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                                       "\\uXXXX)", (char)d);
        return MLSYS__JSON_ERR(P, q, "invalid escape in string: '\\' followed by byte 0x%02X", d);
      }
    }
  }
  if (s >= e)
    return MLSYS__JSON_ERR(P, open, "unterminated string: expected '\"' to close the string that starts here, "
                                    "found end of input");
  if (*s != '"')
    return MLSYS__JSON_ERR(P, s, "unescaped control character in string: found %s (write it as an escape such "
                                 "as \\n, \\t or \\u00XX)", mlsys__json_found(P, s, fb, sizeof fb));
  *o = 0;
  P->p = s + 1;
  *out = (char *)buf;
  *outlen = (size_t)(o - buf);
  return MLSYS_OK;
}

static mlsys_status mlsys__json_number(mlsys__json_parser *P) {
  const unsigned char *start = P->p, *p = start, *e = P->end;
  int neg = 0, integral = 1, big = 0;
  uint64_t mag = 0;
  double num;
  mlsys_json *v;
  char fb[64];
  if (*p == '-') { neg = 1; p++; }
  if (p >= e || *p < '0' || *p > '9')
    return MLSYS__JSON_ERR(P, p, "expected a digit after '-', found %s%s", mlsys__json_found(P, p, fb, sizeof fb),
                           mlsys__json_value_hint(P, p));
  if (*p == '0') {
    p++;
    if (p < e && *p >= '0' && *p <= '9')
      return MLSYS__JSON_ERR(P, start, "invalid number: leading zeros are not allowed (found '0' followed by '%c')",
                             (char)*p);
  } else {
    while (p < e && *p >= '0' && *p <= '9') {
      unsigned d = (unsigned)(*p - '0');
      if (mag > (UINT64_MAX - d) / 10) big = 1;
      else mag = mag * 10 + d;
      p++;
    }
  }
  if (p < e && *p == '.') {
    integral = 0;
    p++;
    if (p >= e || *p < '0' || *p > '9')
      return MLSYS__JSON_ERR(P, p, "expected a digit after '.' in a number, found %s",
                             mlsys__json_found(P, p, fb, sizeof fb));
    while (p < e && *p >= '0' && *p <= '9') p++;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    integral = 0;
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    if (p >= e || *p < '0' || *p > '9')
      return MLSYS__JSON_ERR(P, p, "expected a digit in the exponent of a number, found %s",
                             mlsys__json_found(P, p, fb, sizeof fb));
    while (p < e && *p >= '0' && *p <= '9') p++;
  }
  if (integral && !big && mag <= ((uint64_t)1 << 53)) {
    num = (double)mag;
    if (neg) num = -num;
  } else {
    size_t n = (size_t)(p - start);
    char small[64], *b = small;
    if (n >= sizeof small) {
      if (n + 1 > P->numcap) {
        char *nb = (char *)mlsys_realloc_array(P->num, n + 1, 1);
        if (!nb) return MLSYS_ERR_NOMEM;
        P->num = nb;
        P->numcap = n + 1;
      }
      b = P->num;
    }
    memcpy(b, start, n);
    b[n] = 0;
    num = strtod(b, NULL);
    if (isinf(num)) {
      int shown = n > 40 ? 40 : (int)n;
      return MLSYS__JSON_ERR(P, start, "number out of range (beyond the largest double): %.*s%s", shown, b,
                             n > 40 ? "..." : "");
    }
  }
  v = mlsys__json_push(P, P->line, mlsys__json_col(P, start), MLSYS_JSON_NUMBER);
  if (!v) return MLSYS_ERR_NOMEM;
  v->num = num;
  if (integral && !big) {
    if (neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX) {
      v->is_int = 1;
      v->i64 = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    }
    if (!neg || mag == 0) {
      v->is_u64 = 1;
      v->u64 = mag;
    }
  }
  P->p = p;
  return MLSYS_OK;
}

static uint32_t mlsys__json_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* Put key-stack entry ki into set (mask = slots - 1); returns the index of an equal key already there, or
   (size_t)-1 after inserting. */
static size_t mlsys__json_set_put(mlsys__json_parser *P, mlsys__json_set *set, size_t mask, size_t ki) {
  const mlsys__json_key *k = &P->keys[ki];
  size_t i = k->hash & mask;
  for (;;) {
    size_t s = set->slots[i];
    if (!s) { set->slots[i] = ki + 1; return (size_t)-1; }
    {
      const mlsys__json_key *o = &P->keys[s - 1];
      if (o->hash == k->hash && o->len == k->len && memcmp(o->s, k->s, k->len) == 0) return s - 1;
    }
    i = (i + 1) & mask;
  }
}

/* (Re)build the set for keys kbase..nkeys-1 with at least 4x that many slots. */
static mlsys_status mlsys__json_set_build(mlsys__json_parser *P, mlsys__json_set *set, size_t kbase, size_t *mask) {
  size_t n = P->nkeys - kbase, cap = 64, i;
  while (cap < 4 * n) cap *= 2;
  if (cap > set->alloc) {
    size_t *ns = (size_t *)mlsys_realloc_array(set->slots, cap, sizeof(size_t));
    if (!ns) return MLSYS_ERR_NOMEM;
    set->slots = ns;
    set->alloc = cap;
  }
  memset(set->slots, 0, cap * sizeof(size_t));
  *mask = cap - 1;
  for (i = kbase; i < P->nkeys; i++) (void)mlsys__json_set_put(P, set, *mask, i);
  return MLSYS_OK;
}

static mlsys_status mlsys__json_value(mlsys__json_parser *P, int depth, int ctx);

static mlsys_status mlsys__json_too_deep(mlsys__json_parser *P) {
  return MLSYS__JSON_ERR(P, P->p, "nesting too deep: more than %d levels of arrays and objects",
                         MLSYS__JSON_MAX_DEPTH);
}

static mlsys_status mlsys__json_array(mlsys__json_parser *P, int depth) {
  int line = P->line, col = mlsys__json_col(P, P->p), ctx = MLSYS__JSON_CTX_ARR_FIRST;
  size_t base = P->nvals, n;
  mlsys_json *items = NULL, *v;
  mlsys_status st;
  char fb[64];
  if (depth >= MLSYS__JSON_MAX_DEPTH) return mlsys__json_too_deep(P);
  P->p++;
  mlsys__json_ws(P);
  if (P->p < P->end && *P->p == ']') P->p++;
  else
    for (;;) {
      if ((st = mlsys__json_value(P, depth + 1, ctx)) != MLSYS_OK) return st;
      mlsys__json_ws(P);
      if (P->p < P->end && *P->p == ',') {
        P->p++;
        mlsys__json_ws(P);
        ctx = MLSYS__JSON_CTX_ARR_NEXT;
      } else if (P->p < P->end && *P->p == ']') {
        P->p++;
        break;
      } else {
        return MLSYS__JSON_ERR(P, P->p, "expected ',' or ']' after an array element, found %s%s",
                               mlsys__json_found(P, P->p, fb, sizeof fb), mlsys__json_sep_hint(P, P->p));
      }
    }
  n = P->nvals - base;
  if (n > (size_t)INT_MAX) return mlsys__json_err_lc(P, line, col, "array has more than %d elements", INT_MAX);
  if (n) {
    items = (mlsys_json *)mlsys__json_arena_alloc(P, n * sizeof(mlsys_json), 16);
    if (!items) return MLSYS_ERR_NOMEM;
    memcpy(items, P->vals + base, n * sizeof(mlsys_json));
  }
  P->nvals = base;
  v = mlsys__json_push(P, line, col, MLSYS_JSON_ARRAY);
  if (!v) return MLSYS_ERR_NOMEM;
  v->count = (int)n;
  v->items = items;
  return MLSYS_OK;
}

static mlsys_status mlsys__json_object(mlsys__json_parser *P, int depth) {
  int line = P->line, col = mlsys__json_col(P, P->p), after_comma = 0;
  size_t base = P->nvals, kbase = P->nkeys, n, i, mask = 0;
  int use_set = 0;
  mlsys__json_set *set = &P->sets[depth];
  mlsys_json *items = NULL, *v;
  char **keys = NULL;
  mlsys_status st;
  char fb[64];
  if (depth >= MLSYS__JSON_MAX_DEPTH) return mlsys__json_too_deep(P);
  P->p++;
  mlsys__json_ws(P);
  if (P->p < P->end && *P->p == '}') P->p++;
  else
    for (;;) {
      mlsys__json_key *k;
      char *ks;
      size_t klen, dup = (size_t)-1;
      int kline = P->line, kcol = mlsys__json_col(P, P->p);
      if (P->p >= P->end || *P->p != '"') {
        const unsigned char *at = P->p;
        const char *hint = "";
        if (after_comma && at < P->end && *at == '}') hint = " (trailing commas are not allowed)";
        else if (at < P->end && (*at == '/' || *at == '#')) hint = " (comments are not allowed in JSON)";
        else if (at < P->end && (*at == '\'' || (*at >= 'a' && *at <= 'z') || (*at >= 'A' && *at <= 'Z') ||
                                 *at == '_'))
          hint = " (object keys must be strings in double quotes)";
        return MLSYS__JSON_ERR(P, at, "expected %s, found %s%s",
                               after_comma ? "a string key after ','" : "a string key or '}'",
                               mlsys__json_found(P, at, fb, sizeof fb), hint);
      }
      if ((st = mlsys__json_string(P, &ks, &klen)) != MLSYS_OK) return st;
      if (memchr(ks, 0, klen)) return mlsys__json_err_lc(P, kline, kcol, "object key contains \\u0000");
      if (P->nkeys == P->capkeys) {
        size_t nc = P->capkeys ? P->capkeys * 2 : 32;
        mlsys__json_key *nk = (mlsys__json_key *)mlsys_realloc_array(P->keys, nc, sizeof(mlsys__json_key));
        if (!nk) return MLSYS_ERR_NOMEM;
        P->keys = nk;
        P->capkeys = nc;
      }
      k = &P->keys[P->nkeys];
      k->s = ks;
      k->len = klen;
      k->hash = mlsys__json_hash(ks, klen);
      k->line = kline;
      k->col = kcol;
      if (use_set) {
        /* keep the load factor at most 1/2; a rebuild covers keys up to nkeys-1, the new key goes in below */
        if (2 * (P->nkeys + 1 - kbase) > mask + 1 && (st = mlsys__json_set_build(P, set, kbase, &mask)) != MLSYS_OK)
          return st;
        dup = mlsys__json_set_put(P, set, mask, P->nkeys);
      } else {
        for (i = kbase; i < P->nkeys; i++)
          if (P->keys[i].hash == k->hash && P->keys[i].len == klen && memcmp(P->keys[i].s, ks, klen) == 0) {
            dup = i;
            break;
          }
      }
      if (dup != (size_t)-1) {
        char kb[160];
        return mlsys__json_err_lc(P, kline, kcol, "duplicate key %s in object (first defined at %d:%d)",
                                  mlsys__json_quote(ks, klen, kb, sizeof kb), P->keys[dup].line, P->keys[dup].col);
      }
      P->nkeys++;
      if (!use_set && P->nkeys - kbase >= 16) {
        if ((st = mlsys__json_set_build(P, set, kbase, &mask)) != MLSYS_OK) return st;
        use_set = 1;
      }
      mlsys__json_ws(P);
      if (P->p >= P->end || *P->p != ':')
        return MLSYS__JSON_ERR(P, P->p, "expected ':' after the object key, found %s%s",
                               mlsys__json_found(P, P->p, fb, sizeof fb), mlsys__json_sep_hint(P, P->p));
      P->p++;
      mlsys__json_ws(P);
      if ((st = mlsys__json_value(P, depth + 1, MLSYS__JSON_CTX_MEMBER)) != MLSYS_OK) return st;
      mlsys__json_ws(P);
      if (P->p < P->end && *P->p == ',') {
        P->p++;
        mlsys__json_ws(P);
        after_comma = 1;
      } else if (P->p < P->end && *P->p == '}') {
        P->p++;
        break;
      } else {
        return MLSYS__JSON_ERR(P, P->p, "expected ',' or '}' after an object member, found %s%s",
                               mlsys__json_found(P, P->p, fb, sizeof fb), mlsys__json_sep_hint(P, P->p));
      }
    }
  n = P->nvals - base;
  MLSYS_ASSERT(n == P->nkeys - kbase);
  if (n > (size_t)INT_MAX) return mlsys__json_err_lc(P, line, col, "object has more than %d members", INT_MAX);
  if (n) {
    items = (mlsys_json *)mlsys__json_arena_alloc(P, n * sizeof(mlsys_json), 16);
    if (!items) return MLSYS_ERR_NOMEM;
    memcpy(items, P->vals + base, n * sizeof(mlsys_json));
    keys = (char **)mlsys__json_arena_alloc(P, n * sizeof(char *), sizeof(char *));
    if (!keys) return MLSYS_ERR_NOMEM;
    for (i = 0; i < n; i++) keys[i] = P->keys[kbase + i].s;
  }
  P->nvals = base;
  P->nkeys = kbase;
  v = mlsys__json_push(P, line, col, MLSYS_JSON_OBJECT);
  if (!v) return MLSYS_ERR_NOMEM;
  v->count = (int)n;
  v->items = items;
  v->keys = keys;
  return MLSYS_OK;
}

/* Parse one value at P->p (whitespace already skipped); `depth` containers enclose it. */
static mlsys_status mlsys__json_value(mlsys__json_parser *P, int depth, int ctx) {
  const unsigned char *at = P->p;
  char fb[64];
  const char *expected, *hint;
  if (at < P->end) {
    unsigned c = *at;
    int line = P->line, col = mlsys__json_col(P, at);
    mlsys_json *v;
    switch (c) {
      case '{': return mlsys__json_object(P, depth);
      case '[': return mlsys__json_array(P, depth);
      case '"': {
        char *s;
        size_t len;
        mlsys_status st = mlsys__json_string(P, &s, &len);
        if (st != MLSYS_OK) return st;
        if (!(v = mlsys__json_push(P, line, col, MLSYS_JSON_STRING))) return MLSYS_ERR_NOMEM;
        v->str = s;
        v->len = len;
        return MLSYS_OK;
      }
      case 't': case 'f': case 'n': {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if ((size_t)(P->end - at) >= wl && memcmp(at, w, wl) == 0) {
          if (!(v = mlsys__json_push(P, line, col, c == 'n' ? MLSYS_JSON_NULL : MLSYS_JSON_BOOL)))
            return MLSYS_ERR_NOMEM;
          v->boolean = c == 't';
          P->p = at + wl;
          return MLSYS_OK;
        }
        break;
      }
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return mlsys__json_number(P);
        break;
    }
  }
  switch (ctx) {
    case MLSYS__JSON_CTX_TOP: expected = "a JSON value"; break;
    case MLSYS__JSON_CTX_ARR_FIRST: expected = "a value or ']'"; break;
    case MLSYS__JSON_CTX_ARR_NEXT: expected = "a value after ','"; break;
    default: expected = "a value after ':'"; break;
  }
  hint = mlsys__json_value_hint(P, at);
  if (ctx == MLSYS__JSON_CTX_ARR_NEXT && at < P->end && *at == ']') hint = " (trailing commas are not allowed)";
  if (ctx == MLSYS__JSON_CTX_TOP && P->end == P->text) hint = " (the input is empty)";
  return MLSYS__JSON_ERR(P, at, "expected %s, found %s%s", expected, mlsys__json_found(P, at, fb, sizeof fb), hint);
}

MLSYS_DEF void mlsys_json_doc_free(mlsys_json_doc *doc) {
  if (!doc) return;
  mlsys__json_arena_free(doc->arena_);
  mlsys_free(doc->src_);
  doc->root = NULL;
  doc->arena_ = NULL;
  doc->src_ = NULL;
}

MLSYS_DEF mlsys_status mlsys_json_parse(const char *text, size_t len, const char *source_name, mlsys_json_doc *doc) {
  mlsys__json_parser *P;
  mlsys_status st = MLSYS_OK;
  const char *name = source_name ? source_name : "<json>";
  char fb[64];
  size_t i;
  if (!doc) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_json_parse: doc is NULL");
  doc->root = NULL;
  doc->arena_ = NULL;
  doc->src_ = NULL;
  if (!text && len) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_json_parse: text is NULL but len is %zu", len);
  P = (mlsys__json_parser *)mlsys_calloc(1, sizeof *P);
  if (!P) return MLSYS_ERR_NOMEM;
  P->text = P->p = P->line_start = (const unsigned char *)(text ? text : "");
  P->end = P->text + len;
  P->line = 1;
  P->srcname = name;
  P->next_block = 4096;
  if (!(doc->src_ = mlsys_strdup(name))) { st = MLSYS_ERR_NOMEM; goto done; }
  P->src = doc->src_;
  if (len >= 3 && P->text[0] == 0xEF && P->text[1] == 0xBB && P->text[2] == 0xBF) {
    st = mlsys__json_err_lc(P, 1, 1, "the input starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON "
                                     "does not allow; save the file as UTF-8 without BOM");
    goto done;
  }
  if (len >= 2 && ((P->text[0] == 0xFE && P->text[1] == 0xFF) || (P->text[0] == 0xFF && P->text[1] == 0xFE))) {
    st = mlsys__json_err_lc(P, 1, 1, "the input starts with a UTF-16 byte order mark; JSON text must be UTF-8");
    goto done;
  }
  mlsys__json_ws(P);
  if ((st = mlsys__json_value(P, 0, MLSYS__JSON_CTX_TOP)) != MLSYS_OK) goto done;
  mlsys__json_ws(P);
  if (P->p < P->end) {
    st = MLSYS__JSON_ERR(P, P->p, "expected end of input after the top-level value, found %s%s",
                         mlsys__json_found(P, P->p, fb, sizeof fb), mlsys__json_sep_hint(P, P->p));
    goto done;
  }
  MLSYS_ASSERT(P->nvals == 1);
  doc->root = (mlsys_json *)mlsys__json_arena_alloc(P, sizeof(mlsys_json), 16);
  if (!doc->root) { st = MLSYS_ERR_NOMEM; goto done; }
  *doc->root = P->vals[0];
done:
  doc->arena_ = P->arena;
  if (st != MLSYS_OK) mlsys_json_doc_free(doc);
  mlsys_free(P->vals);
  mlsys_free(P->keys);
  mlsys_free(P->num);
  for (i = 0; i < sizeof P->sets / sizeof P->sets[0]; i++) mlsys_free(P->sets[i].slots);
  mlsys_free(P);
  return st;
}

/* ---- accessors ---- */

MLSYS_DEF const mlsys_json *mlsys_json_get(const mlsys_json *obj, const char *key) {
  int i;
  if (!obj || !key || obj->type != MLSYS_JSON_OBJECT || !obj->keys) return NULL;
  for (i = 0; i < obj->count; i++)
    if (obj->keys[i] && strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

MLSYS_DEF const mlsys_json *mlsys_json_at(const mlsys_json *arr, int i) {
  if (!arr || (arr->type != MLSYS_JSON_ARRAY && arr->type != MLSYS_JSON_OBJECT) || i < 0 || i >= arr->count ||
      !arr->items)
    return NULL;
  return &arr->items[i];
}

static mlsys_status mlsys__json_verr(const mlsys_json *v, const char *fmt, va_list ap) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!v) return mlsys_set_error(MLSYS_ERR_PARSE, "%s", msg);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d:%d: %s", v->src ? v->src : "<json>", v->line, v->col, msg);
}

MLSYS_DEF mlsys_status mlsys_json_error_at(const mlsys_json *v, const char *fmt, ...) {
  mlsys_status st;
  va_list ap;
  va_start(ap, fmt);
  st = mlsys__json_verr(v, fmt, ap);
  va_end(ap);
  return st;
}

/* Look up obj[key] for the typed getters: *out = the member, or NULL when it is absent or null and not required. */
static mlsys_status mlsys__json_member(const mlsys_json *obj, const char *key, int required, const mlsys_json **out) {
  const mlsys_json *v;
  *out = NULL;
  if (!key) return mlsys_set_error(MLSYS_ERR_ARG, "JSON getter: key is NULL");
  if (!obj) {
    if (!required) return MLSYS_OK;
    return mlsys_set_error(MLSYS_ERR_PARSE, "missing required member '%.200s' (there is no enclosing object)", key);
  }
  if (obj->type != MLSYS_JSON_OBJECT)
    return mlsys_json_error_at(obj, "expected an object with member '%.200s', got %s", key,
                               mlsys_json_type_name(obj->type));
  v = mlsys_json_get(obj, key);
  if (!v) {
    if (!required) return MLSYS_OK;
    return mlsys_json_error_at(obj, "missing required member '%.200s'", key);
  }
  if (v->type == MLSYS_JSON_NULL) {
    if (!required) return MLSYS_OK;
    return mlsys_json_error_at(v, "missing required member '%.200s' (it is null)", key);
  }
  *out = v;
  return MLSYS_OK;
}

/* The value of a number member as text ("-3", "1.5") for messages. */
static const char *mlsys__json_numtext(const mlsys_json *v, char *buf) {
  if (v->is_int) {
    char tmp[32], *s;
    uint64_t mag = v->i64 < 0 ? (uint64_t)0 - (uint64_t)v->i64 : (uint64_t)v->i64;
    tmp[31] = 0;
    s = mlsys__json_u64s(tmp + 31, mag);
    if (v->i64 < 0) *--s = '-';
    memcpy(buf, s, (size_t)(tmp + 32 - s));
  } else if (v->is_u64) {
    char tmp[32], *s;
    tmp[31] = 0;
    s = mlsys__json_u64s(tmp + 31, v->u64);
    memcpy(buf, s, (size_t)(tmp + 32 - s));
  } else if (isnan(v->num)) strcpy(buf, "NaN");
  else if (isinf(v->num)) strcpy(buf, v->num < 0 ? "-inf" : "inf");
  else mlsys__json_fmt_double(buf, v->num);
  return buf;
}

/* An integral double within [-2^63, 2^63) (for values written as 1e9 or 5.0). */
static int mlsys__json_as_i64(const mlsys_json *v, int64_t *out) {
  if (v->is_int) { *out = v->i64; return 1; }
  if (isfinite(v->num) && v->num == floor(v->num) && v->num >= -9223372036854775808.0 &&
      v->num < 9223372036854775808.0) {
    *out = (int64_t)v->num;
    return 1;
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_json_get_i64(const mlsys_json *obj, const char *key, int required, int64_t dflt,
                                          int64_t lo, int64_t hi, int64_t *out) {
  const mlsys_json *v;
  mlsys_status st = mlsys__json_member(obj, key, required, &v);
  char nb[40];
  int64_t x;
  *out = dflt;
  if (st != MLSYS_OK || !v) return st;
  if (v->type != MLSYS_JSON_NUMBER)
    return mlsys_json_error_at(v, "'%.200s' must be an integer, got %s", key, mlsys_json_type_name(v->type));
  if (!mlsys__json_as_i64(v, &x)) {
    if (v->is_u64 || (isfinite(v->num) && v->num == floor(v->num)))
      return mlsys_json_error_at(v, "'%.200s' must be an integer in [%lld, %lld], got %s", key, (long long)lo,
                                 (long long)hi, mlsys__json_numtext(v, nb));
    return mlsys_json_error_at(v, "'%.200s' must be an integer, got %s", key, mlsys__json_numtext(v, nb));
  }
  if (x < lo || x > hi)
    return mlsys_json_error_at(v, "'%.200s' must be an integer in [%lld, %lld], got %s", key, (long long)lo,
                               (long long)hi, mlsys__json_numtext(v, nb));
  *out = x;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_json_get_u64(const mlsys_json *obj, const char *key, int required, uint64_t dflt,
                                          uint64_t *out) {
  const mlsys_json *v;
  mlsys_status st = mlsys__json_member(obj, key, required, &v);
  char nb[40];
  *out = dflt;
  if (st != MLSYS_OK || !v) return st;
  if (v->type != MLSYS_JSON_NUMBER)
    return mlsys_json_error_at(v, "'%.200s' must be a non-negative integer, got %s", key,
                               mlsys_json_type_name(v->type));
  if (v->is_u64) { *out = v->u64; return MLSYS_OK; }
  if (isfinite(v->num) && v->num == floor(v->num) && v->num >= 0 && v->num < 18446744073709551616.0) {
    *out = (uint64_t)v->num;
    return MLSYS_OK;
  }
  return mlsys_json_error_at(v, "'%.200s' must be a non-negative integer, got %s", key, mlsys__json_numtext(v, nb));
}

MLSYS_DEF mlsys_status mlsys_json_get_double(const mlsys_json *obj, const char *key, int required, double dflt,
                                             double lo, double hi, double *out) {
  const mlsys_json *v;
  mlsys_status st = mlsys__json_member(obj, key, required, &v);
  char nb[40], lb[40], hb[40];
  *out = dflt;
  if (st != MLSYS_OK || !v) return st;
  if (v->type != MLSYS_JSON_NUMBER)
    return mlsys_json_error_at(v, "'%.200s' must be a number, got %s", key, mlsys_json_type_name(v->type));
  if (!(v->num >= lo && v->num <= hi)) {
    if (isfinite(lo)) mlsys__json_fmt_double(lb, lo); else strcpy(lb, isnan(lo) ? "NaN" : lo < 0 ? "-inf" : "inf");
    if (isfinite(hi)) mlsys__json_fmt_double(hb, hi); else strcpy(hb, isnan(hi) ? "NaN" : hi < 0 ? "-inf" : "inf");
    return mlsys_json_error_at(v, "'%.200s' must be a number in [%s, %s], got %s", key, lb, hb,
                               mlsys__json_numtext(v, nb));
  }
  *out = v->num;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_json_get_str(const mlsys_json *obj, const char *key, int required, const char *dflt,
                                          const char **out) {
  const mlsys_json *v;
  mlsys_status st = mlsys__json_member(obj, key, required, &v);
  *out = dflt;
  if (st != MLSYS_OK || !v) return st;
  if (v->type != MLSYS_JSON_STRING)
    return mlsys_json_error_at(v, "'%.200s' must be a string, got %s", key, mlsys_json_type_name(v->type));
  if (v->str && strlen(v->str) != v->len)
    return mlsys_json_error_at(v, "'%.200s' must be a string without \\u0000", key);
  *out = v->str ? v->str : "";
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_json_get_bool(const mlsys_json *obj, const char *key, int required, int dflt,
                                           int *out) {
  const mlsys_json *v;
  mlsys_status st = mlsys__json_member(obj, key, required, &v);
  *out = dflt;
  if (st != MLSYS_OK || !v) return st;
  if (v->type != MLSYS_JSON_BOOL)
    return mlsys_json_error_at(v, "'%.200s' must be true or false, got %s", key, mlsys_json_type_name(v->type));
  *out = v->boolean != 0;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_json_get_typed(const mlsys_json *obj, const char *key, mlsys_json_type type,
                                            int required, const mlsys_json **out) {
  const mlsys_json *v;
  mlsys_status st;
  *out = NULL;
  if (type == MLSYS_JSON_NULL) { /* asking for a null member: present-and-null is the only success */
    if ((st = mlsys__json_member(obj, key, 0, &v)) != MLSYS_OK) return st;
    if (v) return mlsys_json_error_at(v, "'%.200s' must be null, got %s", key, mlsys_json_type_name(v->type));
    v = mlsys_json_get(obj, key);
    if (!v && required) return mlsys_json_error_at(obj, "missing required member '%.200s'", key);
    *out = v;
    return MLSYS_OK;
  }
  st = mlsys__json_member(obj, key, required, &v);
  if (st != MLSYS_OK || !v) return st;
  if (v->type != type)
    return mlsys_json_error_at(v, "'%.200s' must be %s, got %s", key, mlsys__json_a_type(type),
                               mlsys_json_type_name(v->type));
  *out = v;
  return MLSYS_OK;
}

/* ---- writer ---- */

enum {
  MLSYS__JW_E_NONE = 0,
  MLSYS__JW_E_IO,          /* the stream reported an error */
  MLSYS__JW_E_NOSTREAM,    /* initialised with a NULL stream */
  MLSYS__JW_E_KEY_OUTSIDE, /* key outside an object */
  MLSYS__JW_E_KEY_TWICE,   /* key right after a key */
  MLSYS__JW_E_KEY_NULL,    /* NULL key */
  MLSYS__JW_E_NO_KEY,      /* value inside an object without a key */
  MLSYS__JW_E_END_NONE,    /* end with nothing open */
  MLSYS__JW_E_END_KEY,     /* end of an object right after a key */
  MLSYS__JW_E_DEEP,        /* more than MLSYS_JSON_MAX_DEPTH levels */
  MLSYS__JW_E_TWO_TOP,     /* a second top-level value */
  MLSYS__JW_E_COUNT_
};

static const char *mlsys__jw_msg(int e) {
  switch (e) {
    case MLSYS__JW_E_IO: return "write error on the output stream";
    case MLSYS__JW_E_NOSTREAM: return "the writer has no output stream (NULL FILE)";
    case MLSYS__JW_E_KEY_OUTSIDE: return "mlsys_jw_key called outside an object";
    case MLSYS__JW_E_KEY_TWICE: return "mlsys_jw_key called twice without a value in between";
    case MLSYS__JW_E_KEY_NULL: return "mlsys_jw_key called with a NULL key";
    case MLSYS__JW_E_NO_KEY: return "a value was written inside an object without a key (call mlsys_jw_key first)";
    case MLSYS__JW_E_END_NONE: return "mlsys_jw_end called with no open array or object";
    case MLSYS__JW_E_END_KEY: return "object closed right after a key, before its value";
    case MLSYS__JW_E_DEEP: return "nesting deeper than 512 arrays/objects";
    case MLSYS__JW_E_TWO_TOP: return "more than one top-level value";
    default: return "unknown writer error";
  }
}

static void mlsys__jw_raw(mlsys_json_writer *w, const char *s, size_t n) {
  if (w->err) return;
  if (n && fwrite(s, 1, n, w->f) != n) w->err = MLSYS__JW_E_IO;
}

static void mlsys__jw_indent(mlsys_json_writer *w, int level) {
  static const char sp[] = "\n                                                                "
                           "                                                                ";
  size_t n = (size_t)level * 2, chunk = n > sizeof sp - 2 ? sizeof sp - 2 : n;
  mlsys__jw_raw(w, sp, chunk + 1);
  for (n -= chunk; n > 0; n -= chunk) {   /* deep levels: more spaces, in pieces */
    chunk = n > sizeof sp - 2 ? sizeof sp - 2 : n;
    mlsys__jw_raw(w, sp + 1, chunk);
  }
}

/* Before any value: checks placement and writes the separator. Returns 0 when the value must not be written. */
static int mlsys__jw_pre(mlsys_json_writer *w, int container) {
  int d;
  if (!w || w->err) return 0;
  d = w->depth;
  if (d == 0) {
    if (!w->first[0]) { w->err = MLSYS__JW_E_TWO_TOP; return 0; }
    w->first[0] = 0;
    return 1;
  }
  if (w->is_obj[d]) {
    if (!w->after_key) { w->err = MLSYS__JW_E_NO_KEY; return 0; }
    w->after_key = 0;
    return 1;
  }
  if (w->first[d]) {
    w->first[d] = 0;
    if (w->pretty && container) {
      w->scalar_only[d] = 0;
      mlsys__jw_indent(w, d);
    }
  } else {
    mlsys__jw_raw(w, ",", 1);
    if (w->pretty) {
      if (container || !w->scalar_only[d]) {
        w->scalar_only[d] = 0;
        mlsys__jw_indent(w, d);
      } else mlsys__jw_raw(w, " ", 1);
    }
  }
  return 1;
}

static void mlsys__jw_open(mlsys_json_writer *w, int obj) {
  int d;
  if (w && !w->err && w->depth >= MLSYS_JSON_MAX_DEPTH) { w->err = MLSYS__JW_E_DEEP; return; }
  if (!mlsys__jw_pre(w, 1)) return;
  d = ++w->depth;
  w->first[d] = 1;
  w->is_obj[d] = (unsigned char)obj;
  w->scalar_only[d] = 1;
  mlsys__jw_raw(w, obj ? "{" : "[", 1);
}

/* A string body with escapes; invalid UTF-8 becomes U+FFFD. */
static void mlsys__jw_escaped(mlsys_json_writer *w, const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str, *e = s + len, *run = s;
  mlsys__jw_raw(w, "\"", 1);
  while (s < e) {
    unsigned c = *s;
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) { s++; continue; }
    mlsys__jw_raw(w, (const char *)run, (size_t)(s - run));
    if (c >= 0x80) {
      size_t n;
      if (mlsys__json_utf8(s, e, &n) == MLSYS__U8_OK) mlsys__jw_raw(w, (const char *)s, n);
      else mlsys__jw_raw(w, "\xEF\xBF\xBD", 3);
      s += n;
    } else {
      char esc[8];
      const char *r = NULL;
      switch (c) {
        case '"': r = "\\\""; break;
        case '\\': r = "\\\\"; break;
        case '\n': r = "\\n"; break;
        case '\t': r = "\\t"; break;
        case '\r': r = "\\r"; break;
        case '\b': r = "\\b"; break;
        case '\f': r = "\\f"; break;
        default:
          snprintf(esc, sizeof esc, "\\u%04X", c);
          r = esc;
          break;
      }
      mlsys__jw_raw(w, r, strlen(r));
      s++;
    }
    run = s;
  }
  mlsys__jw_raw(w, (const char *)run, (size_t)(s - run));
  mlsys__jw_raw(w, "\"", 1);
}

MLSYS_DEF void mlsys_jw_init(mlsys_json_writer *w, FILE *f, int pretty) {
  if (!w) return;
  memset(w, 0, sizeof *w);
  w->f = f;
  w->pretty = pretty != 0;
  w->first[0] = 1;
  if (!f) w->err = MLSYS__JW_E_NOSTREAM;
}

MLSYS_DEF void mlsys_jw_object(mlsys_json_writer *w) { mlsys__jw_open(w, 1); }
MLSYS_DEF void mlsys_jw_array(mlsys_json_writer *w) { mlsys__jw_open(w, 0); }

MLSYS_DEF void mlsys_jw_end(mlsys_json_writer *w) {
  int d;
  if (!w || w->err) return;
  d = w->depth;
  if (d == 0) { w->err = MLSYS__JW_E_END_NONE; return; }
  if (w->is_obj[d] && w->after_key) { w->err = MLSYS__JW_E_END_KEY; return; }
  if (w->pretty && !w->first[d] && (w->is_obj[d] || !w->scalar_only[d])) mlsys__jw_indent(w, d - 1);
  mlsys__jw_raw(w, w->is_obj[d] ? "}" : "]", 1);
  w->depth--;
}

MLSYS_DEF void mlsys_jw_key(mlsys_json_writer *w, const char *key) {
  int d;
  if (!w || w->err) return;
  d = w->depth;
  if (d == 0 || !w->is_obj[d]) { w->err = MLSYS__JW_E_KEY_OUTSIDE; return; }
  if (w->after_key) { w->err = MLSYS__JW_E_KEY_TWICE; return; }
  if (!key) { w->err = MLSYS__JW_E_KEY_NULL; return; }
  if (!w->first[d]) mlsys__jw_raw(w, ",", 1);
  w->first[d] = 0;
  if (w->pretty) mlsys__jw_indent(w, d);
  mlsys__jw_escaped(w, key, strlen(key));
  mlsys__jw_raw(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
  w->after_key = 1;
}

MLSYS_DEF void mlsys_jw_strn(mlsys_json_writer *w, const char *s, size_t len) {
  if (!s) { mlsys_jw_null(w); return; }
  if (!mlsys__jw_pre(w, 0)) return;
  mlsys__jw_escaped(w, s, len);
}
MLSYS_DEF void mlsys_jw_str(mlsys_json_writer *w, const char *s) {
  if (!s) { mlsys_jw_null(w); return; }
  mlsys_jw_strn(w, s, strlen(s));
}

MLSYS_DEF void mlsys_jw_u64(mlsys_json_writer *w, uint64_t v) {
  char buf[32], *s;
  if (!mlsys__jw_pre(w, 0)) return;
  s = mlsys__json_u64s(buf + sizeof buf, v);
  mlsys__jw_raw(w, s, (size_t)(buf + sizeof buf - s));
}

MLSYS_DEF void mlsys_jw_i64(mlsys_json_writer *w, int64_t v) {
  char buf[32], *s;
  if (!mlsys__jw_pre(w, 0)) return;
  s = mlsys__json_u64s(buf + sizeof buf, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
  if (v < 0) *--s = '-';
  mlsys__jw_raw(w, s, (size_t)(buf + sizeof buf - s));
}

MLSYS_DEF void mlsys_jw_double(mlsys_json_writer *w, double v) {
  char buf[40];
  if (!mlsys__jw_pre(w, 0)) return;
  if (!isfinite(v)) { mlsys__jw_raw(w, "null", 4); return; }
  mlsys__json_fmt_double(buf, v);
  mlsys__jw_raw(w, buf, strlen(buf));
}

MLSYS_DEF void mlsys_jw_bool(mlsys_json_writer *w, int v) {
  if (!mlsys__jw_pre(w, 0)) return;
  if (v) mlsys__jw_raw(w, "true", 4);
  else mlsys__jw_raw(w, "false", 5);
}

MLSYS_DEF void mlsys_jw_null(mlsys_json_writer *w) {
  if (!mlsys__jw_pre(w, 0)) return;
  mlsys__jw_raw(w, "null", 4);
}

MLSYS_DEF mlsys_status mlsys_jw_finish(mlsys_json_writer *w) {
  if (!w) return mlsys_set_error(MLSYS_ERR_ARG, "JSON writer: mlsys_jw_finish called with NULL");
  if (!w->err && w->depth > 0) {
    return mlsys_set_error(MLSYS_ERR_ARG, "JSON writer: unbalanced output: %d array(s)/object(s) still open",
                           w->depth);
  }
  if (!w->err && w->first[0])
    return mlsys_set_error(MLSYS_ERR_ARG, "JSON writer: nothing was written (a document needs one value)");
  if (!w->err) {
    mlsys__jw_raw(w, "\n", 1);
    if (fflush(w->f) != 0 || ferror(w->f)) w->err = MLSYS__JW_E_IO;
  } else if (w->f && w->err != MLSYS__JW_E_IO && ferror(w->f))
    w->err = MLSYS__JW_E_IO;
  if (w->err == MLSYS__JW_E_IO) return mlsys_set_error(MLSYS_ERR_IO, "JSON writer: %s", mlsys__jw_msg(w->err));
  if (w->err) return mlsys_set_error(MLSYS_ERR_ARG, "JSON writer: %s", mlsys__jw_msg(w->err));
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   7. MILP
   --------------------------------------------------------------------------------------------------------------- */
/* MILP builder. The model is kept in our own arrays (columns + CSR rows) and loaded into a backend at solve time,
   so one model can be solved by lp_solve and by CBC, exported, and priced. Internally every model is a
   minimisation: a maximisation negates the objective on the way in and the results on the way out, so cutoffs,
   bounds and incumbents are handled in one sense only. */
#ifndef MLSYS_NO_LPSOLVE
#include <lpsolve/lp_lib.h>
#endif
#ifdef MLSYS_MILP_CBC
#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>
#define MLSYS__COIN_INF DBL_MAX   /* COIN-OR's infinity (COIN_DBL_MAX) */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#endif

struct mlsys_milp {
  int nvars, cap_vars;
  double *lo, *hi, *obj;
  unsigned char *kind;
  int *prio;
  char **vname;            /* NULL entries → "x<j>" */
  int nrows, cap_rows;
  long nnz, cap_nnz;
  long *row_off;           /* [nrows+1] */
  int *rcol;
  double *rval;
  unsigned char *sense;
  double *rhs;
  char **rname;            /* NULL entries → "c<i>" */
  double objconst;
  int maximize, has_prio;
};

MLSYS_DEF mlsys_status mlsys_milp_create(mlsys_milp **out) {
  mlsys_milp *m = (mlsys_milp *)mlsys_calloc(1, sizeof *m);
  *out = NULL;
  if (!m) return MLSYS_ERR_NOMEM;
  m->row_off = (long *)mlsys_calloc(1, sizeof(long));
  if (!m->row_off) { mlsys_free(m); return MLSYS_ERR_NOMEM; }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_milp_free(mlsys_milp *m) {
  int i;
  if (!m) return;
  if (m->vname) for (i = 0; i < m->nvars; i++) mlsys_free(m->vname[i]);
  if (m->rname) for (i = 0; i < m->nrows; i++) mlsys_free(m->rname[i]);
  mlsys_free(m->lo); mlsys_free(m->hi); mlsys_free(m->obj); mlsys_free(m->kind); mlsys_free(m->prio);
  mlsys_free(m->vname); mlsys_free(m->row_off); mlsys_free(m->rcol); mlsys_free(m->rval); mlsys_free(m->sense);
  mlsys_free(m->rhs); mlsys_free(m->rname);
  mlsys_free(m);
}

/* Names go into LP and MPS files: letters, digits, '_', '.'; not starting with a digit, '.', or an 'e'/'E' that
   would read as an exponent. ('[' and ']' are not CPLEX LP name characters: glpsol rejects them.) */
static int mlsys__milp_name_ok(const char *s) {
  const char *p;
  if (!s || !*s || strlen(s) > 200) return 0;
  if ((*s >= '0' && *s <= '9') || *s == '.') return 0;
  if ((*s == 'e' || *s == 'E') && (s[1] == 0 || (s[1] >= '0' && s[1] <= '9'))) return 0;
  for (p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
      return 0;
  }
  return 1;
}

static int mlsys__milp_grow_vars(mlsys_milp *m) {
  int nc = m->cap_vars ? m->cap_vars * 2 : 256;
  double *lo, *hi, *obj;
  unsigned char *kind;
  int *prio;
  char **vname;
  if (!(lo = (double *)mlsys_realloc_array(m->lo, (size_t)nc, sizeof(double)))) return 0;
  m->lo = lo;
  if (!(hi = (double *)mlsys_realloc_array(m->hi, (size_t)nc, sizeof(double)))) return 0;
  m->hi = hi;
  if (!(obj = (double *)mlsys_realloc_array(m->obj, (size_t)nc, sizeof(double)))) return 0;
  m->obj = obj;
  if (!(kind = (unsigned char *)mlsys_realloc_array(m->kind, (size_t)nc, 1))) return 0;
  m->kind = kind;
  if (!(prio = (int *)mlsys_realloc_array(m->prio, (size_t)nc, sizeof(int)))) return 0;
  m->prio = prio;
  if (!(vname = (char **)mlsys_realloc_array(m->vname, (size_t)nc, sizeof(char *)))) return 0;
  m->vname = vname;
  m->cap_vars = nc;
  return 1;
}

MLSYS_DEF int mlsys_milp_add_var(mlsys_milp *m, mlsys_var_kind kind, double lo, double hi, double obj,
                                 const char *name) {
  int j;
  if (kind != MLSYS_VAR_CONTINUOUS && kind != MLSYS_VAR_INTEGER && kind != MLSYS_VAR_BINARY) {
    mlsys_set_error(MLSYS_ERR_ARG, "milp: unknown variable kind %d", (int)kind);
    return -1;
  }
  if (kind == MLSYS_VAR_BINARY) { lo = 0; hi = 1; }
  if (isnan(lo) || isnan(hi) || isnan(obj) || isinf(obj) || lo > hi) {
    mlsys_set_error(MLSYS_ERR_ARG, "milp: variable %s has bounds [%g, %g] and objective %g", name ? name : "",
                    lo, hi, obj);
    return -1;
  }
  if (name && !mlsys__milp_name_ok(name)) {
    mlsys_set_error(MLSYS_ERR_ARG, "milp: invalid variable name '%s' (letters, digits, _ . only)", name);
    return -1;
  }
  if (m->nvars == INT_MAX - 1) { mlsys_set_error(MLSYS_ERR_TOO_BIG, "milp: too many variables"); return -1; }
  if (m->nvars == m->cap_vars && !mlsys__milp_grow_vars(m)) return -1;
  j = m->nvars;
  m->vname[j] = NULL;
  if (name && !(m->vname[j] = mlsys_strdup(name))) return -1;
  m->lo[j] = lo < -MLSYS_INF ? -MLSYS_INF : lo;
  m->hi[j] = hi > MLSYS_INF ? MLSYS_INF : hi;
  m->obj[j] = obj;
  m->kind[j] = (unsigned char)kind;
  m->prio[j] = 0;
  m->nvars++;
  return j;
}

MLSYS_DEF mlsys_status mlsys_milp_add_row(mlsys_milp *m, int nnz, const int *cols, const double *vals,
                                          mlsys_row_sense sense, double rhs, const char *name) {
  long base;
  int k, i;
  if (nnz < 0 || (nnz > 0 && (!cols || !vals)))
    return mlsys_set_error(MLSYS_ERR_ARG, "milp: row %s: bad term list", name ? name : "");
  if (sense != MLSYS_ROW_LE && sense != MLSYS_ROW_GE && sense != MLSYS_ROW_EQ)
    return mlsys_set_error(MLSYS_ERR_ARG, "milp: row %s: unknown sense %d", name ? name : "", (int)sense);
  if (isnan(rhs) || isinf(rhs))
    return mlsys_set_error(MLSYS_ERR_ARG, "milp: row %s: right-hand side %g", name ? name : "", rhs);
  if (name && !mlsys__milp_name_ok(name))
    return mlsys_set_error(MLSYS_ERR_ARG, "milp: invalid row name '%s' (letters, digits, _ . only)", name);
  for (k = 0; k < nnz; k++) {
    if (cols[k] < 0 || cols[k] >= m->nvars)
      return mlsys_set_error(MLSYS_ERR_ARG, "milp: row %s: column %d outside 0..%d", name ? name : "", cols[k],
                             m->nvars - 1);
    if (isnan(vals[k]) || isinf(vals[k]))
      return mlsys_set_error(MLSYS_ERR_ARG, "milp: row %s: coefficient %g", name ? name : "", vals[k]);
  }
  if (m->nrows == INT_MAX - 1) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "milp: too many rows");
  if (m->nrows == m->cap_rows) {
    int nc = m->cap_rows ? m->cap_rows * 2 : 256;
    long *ro;
    unsigned char *se;
    double *rh;
    char **rn;
    if (!(ro = (long *)mlsys_realloc_array(m->row_off, (size_t)nc + 1, sizeof(long)))) return MLSYS_ERR_NOMEM;
    m->row_off = ro;
    if (!(se = (unsigned char *)mlsys_realloc_array(m->sense, (size_t)nc, 1))) return MLSYS_ERR_NOMEM;
    m->sense = se;
    if (!(rh = (double *)mlsys_realloc_array(m->rhs, (size_t)nc, sizeof(double)))) return MLSYS_ERR_NOMEM;
    m->rhs = rh;
    if (!(rn = (char **)mlsys_realloc_array(m->rname, (size_t)nc, sizeof(char *)))) return MLSYS_ERR_NOMEM;
    m->rname = rn;
    m->cap_rows = nc;
  }
  if (m->nnz + nnz > m->cap_nnz) {
    long nc = m->cap_nnz ? m->cap_nnz : 1024;
    int *rc;
    double *rv;
    while (nc < m->nnz + nnz) nc *= 2;
    if (!(rc = (int *)mlsys_realloc_array(m->rcol, (size_t)nc, sizeof(int)))) return MLSYS_ERR_NOMEM;
    m->rcol = rc;
    if (!(rv = (double *)mlsys_realloc_array(m->rval, (size_t)nc, sizeof(double)))) return MLSYS_ERR_NOMEM;
    m->rval = rv;
    m->cap_nnz = nc;
  }
  i = m->nrows;
  m->rname[i] = NULL;
  if (name && !(m->rname[i] = mlsys_strdup(name))) return MLSYS_ERR_NOMEM;
  /* insertion-sort the terms by column, summing repeats and dropping zeros (rows here are short) */
  base = m->nnz;
  {
    long cnt = 0;
    for (k = 0; k < nnz; k++) {
      long p = cnt;
      int c = cols[k];
      double v = vals[k];
      long q;
      for (q = 0; q < cnt; q++)
        if (m->rcol[base + q] == c) break;
      if (q < cnt) { m->rval[base + q] += v; continue; }
      while (p > 0 && m->rcol[base + p - 1] > c) {
        m->rcol[base + p] = m->rcol[base + p - 1];
        m->rval[base + p] = m->rval[base + p - 1];
        p--;
      }
      m->rcol[base + p] = c;
      m->rval[base + p] = v;
      cnt++;
    }
    {
      long w = 0, q;
      for (q = 0; q < cnt; q++)
        if (m->rval[base + q] != 0) {
          m->rcol[base + w] = m->rcol[base + q];
          m->rval[base + w] = m->rval[base + q];
          w++;
        }
      cnt = w;
    }
    m->nnz = base + cnt;
  }
  m->sense[i] = (unsigned char)sense;
  m->rhs[i] = rhs;
  m->nrows++;
  m->row_off[m->nrows] = m->nnz;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_milp_set_obj(mlsys_milp *m, int col, double coef) {
  if (col >= 0 && col < m->nvars && !isnan(coef) && !isinf(coef)) m->obj[col] = coef;
}
MLSYS_DEF void mlsys_milp_set_bounds(mlsys_milp *m, int col, double lo, double hi) {
  if (col < 0 || col >= m->nvars || isnan(lo) || isnan(hi)) return;
  m->lo[col] = lo < -MLSYS_INF ? -MLSYS_INF : lo;
  m->hi[col] = hi > MLSYS_INF ? MLSYS_INF : hi;
}
MLSYS_DEF void mlsys_milp_set_obj_constant(mlsys_milp *m, double c) { m->objconst = c; }
MLSYS_DEF void mlsys_milp_set_maximize(mlsys_milp *m, int maximize) { m->maximize = maximize != 0; }
MLSYS_DEF void mlsys_milp_set_priority(mlsys_milp *m, int col, int priority) {
  if (col < 0 || col >= m->nvars) return;
  m->prio[col] = priority;
  if (priority) m->has_prio = 1;
}
MLSYS_DEF int mlsys_milp_num_vars(const mlsys_milp *m) { return m->nvars; }
MLSYS_DEF int mlsys_milp_num_rows(const mlsys_milp *m) { return m->nrows; }
MLSYS_DEF long mlsys_milp_num_nonzeros(const mlsys_milp *m) { return m->nnz; }
MLSYS_DEF int mlsys_milp_num_integer(const mlsys_milp *m) {
  int j, c = 0;
  for (j = 0; j < m->nvars; j++) c += m->kind[j] != MLSYS_VAR_CONTINUOUS;
  return c;
}

MLSYS_DEF int mlsys_milp_has_backend(mlsys_milp_backend b) {
#ifndef MLSYS_NO_LPSOLVE
  if (b == MLSYS_SOLVER_LPSOLVE || b == MLSYS_SOLVER_DEFAULT) return 1;
#endif
#ifdef MLSYS_MILP_CBC
  if (b == MLSYS_SOLVER_CBC || b == MLSYS_SOLVER_DEFAULT) return 1;
#endif
  return 0;
}
MLSYS_DEF const char *mlsys_milp_backend_name(mlsys_milp_backend b) {
  return b == MLSYS_SOLVER_LPSOLVE ? "lp_solve" : b == MLSYS_SOLVER_CBC ? "cbc"
         : b == MLSYS_SOLVER_DEFAULT ? "default" : "unknown";
}
MLSYS_DEF const char *mlsys_milp_status_str(mlsys_milp_status s) {
  switch (s) {
    case MLSYS_MILP_OPTIMAL: return "optimal";
    case MLSYS_MILP_FEASIBLE: return "feasible";
    case MLSYS_MILP_INFEASIBLE: return "infeasible";
    case MLSYS_MILP_UNBOUNDED: return "unbounded";
    case MLSYS_MILP_NO_SOLUTION: return "no solution";
    default: return "error";
  }
}

MLSYS_DEF double mlsys_milp_eval(const mlsys_milp *m, const double *x) {
  double s = m->objconst;
  int j;
  for (j = 0; j < m->nvars; j++) s += m->obj[j] * x[j];
  return s;
}

MLSYS_DEF double mlsys_milp_max_violation(const mlsys_milp *m, const double *x, int check_integrality) {
  double worst = 0;
  int i, j;
  for (j = 0; j < m->nvars; j++) {
    double v = 0;
    if (isnan(x[j])) return INFINITY;   /* NaN compares false with everything: it would pass every check */
    if (x[j] < m->lo[j]) v = m->lo[j] - x[j];
    if (x[j] > m->hi[j]) v = x[j] - m->hi[j];
    if (check_integrality && m->kind[j] != MLSYS_VAR_CONTINUOUS) {
      double f = fabs(x[j] - floor(x[j] + 0.5));
      if (f > v) v = f;
    }
    if (v > worst) worst = v;
  }
  for (i = 0; i < m->nrows; i++) {
    double a = 0, v = 0;
    long k;
    for (k = m->row_off[i]; k < m->row_off[i + 1]; k++) a += m->rval[k] * x[m->rcol[k]];
    if (m->sense[i] != MLSYS_ROW_GE && a > m->rhs[i]) v = a - m->rhs[i];
    if (m->sense[i] != MLSYS_ROW_LE && a < m->rhs[i]) v = m->rhs[i] - a;
    if (v > worst) worst = v;
  }
  return worst;
}

/* The bounds a column really has: an integer column's are rounded inwards (lp_solve branches forever on an
   integer column bounded by [0.2, 0.8], and glpsol refuses fractional bounds on integer columns). */
static void mlsys__milp_col_bounds(const mlsys_milp *m, int j, int relax, double *lo, double *hi) {
  *lo = m->lo[j];
  *hi = m->hi[j];
  if (!relax && m->kind[j] != MLSYS_VAR_CONTINUOUS) {
    if (*lo > -MLSYS_INF) *lo = ceil(*lo - 1e-9);
    if (*hi < MLSYS_INF) *hi = floor(*hi + 1e-9);
  }
}
/* A binary column still bounded by [0, 1] (mlsys_milp_set_bounds may have fixed it; then it is written as a
   general integer with its bounds, since "Binary"/BV would restore [0, 1]). */
static int mlsys__milp_is_bin(const mlsys_milp *m, int j) {
  return m->kind[j] == MLSYS_VAR_BINARY && m->lo[j] == 0 && m->hi[j] == 1;
}

/* ---- export ---------------------------------------------------------------------------------------------- */
static const char *mlsys__milp_vn(const mlsys_milp *m, int j, char *buf) {
  if (m->vname[j]) return m->vname[j];
  snprintf(buf, 24, "x%d", j);
  return buf;
}
static const char *mlsys__milp_rn(const mlsys_milp *m, int i, char *buf) {
  if (m->rname[i]) return m->rname[i];
  snprintf(buf, 24, "c%d", i);
  return buf;
}
static void mlsys__milp_num(FILE *f, double v) {
  if (v >= MLSYS_INF) fputs("+inf", f);
  else if (v <= -MLSYS_INF) fputs("-inf", f);
  else fprintf(f, "%.17g", v);
}

/* CPLEX LP format: every row has a label (so a one-term row stays a row rather than becoming a bound), terms are
   wrapped every eight to stay under the readers' line limits, and bounds are written for every column. */
static void mlsys__milp_write_lp(const mlsys_milp *m, FILE *f) {
  char b1[24];
  int i, j, any;
  fprintf(f, "\\ mlsys MILP: %d variables, %d rows, %ld nonzeros\n", m->nvars, m->nrows, m->nnz);
  if (m->objconst != 0) fprintf(f, "\\ objective constant (not part of the model below): %.17g\n", m->objconst);
  fprintf(f, "%s\n obj:", m->maximize ? "Maximize" : "Minimize");
  any = 0;
  for (j = 0; j < m->nvars; j++)
    if (m->obj[j] != 0) {
      fprintf(f, " %c %.17g %s", m->obj[j] < 0 ? '-' : '+', fabs(m->obj[j]), mlsys__milp_vn(m, j, b1));
      if (++any % 8 == 0) fputs("\n     ", f);
    }
  if (!any && m->nvars) fprintf(f, " 0 %s", mlsys__milp_vn(m, 0, b1));
  fputs("\nSubject To\n", f);
  for (i = 0; i < m->nrows; i++) {
    long k;
    fprintf(f, " %s:", mlsys__milp_rn(m, i, b1));
    if (m->row_off[i] == m->row_off[i + 1]) {
      if (m->nvars) fprintf(f, " 0 %s", mlsys__milp_vn(m, 0, b1));
    }
    for (k = m->row_off[i]; k < m->row_off[i + 1]; k++) {
      fprintf(f, " %c %.17g %s", m->rval[k] < 0 ? '-' : '+', fabs(m->rval[k]), mlsys__milp_vn(m, m->rcol[k], b1));
      if ((k - m->row_off[i] + 1) % 8 == 0 && k + 1 < m->row_off[i + 1]) fputs("\n     ", f);
    }
    fprintf(f, " %s %.17g\n", m->sense[i] == MLSYS_ROW_LE ? "<=" : m->sense[i] == MLSYS_ROW_GE ? ">=" : "=",
            m->rhs[i]);
  }
  fputs("Bounds\n", f);
  for (j = 0; j < m->nvars; j++) {
    double lo, hi;
    if (mlsys__milp_is_bin(m, j)) continue;
    mlsys__milp_col_bounds(m, j, 0, &lo, &hi);
    if (lo <= -MLSYS_INF && hi >= MLSYS_INF) { fprintf(f, " %s free\n", mlsys__milp_vn(m, j, b1)); continue; }
    fputc(' ', f);
    mlsys__milp_num(f, lo);
    fprintf(f, " <= %s <= ", mlsys__milp_vn(m, j, b1));
    mlsys__milp_num(f, hi);
    fputc('\n', f);
  }
  for (any = 0, j = 0; j < m->nvars; j++)
    if (m->kind[j] != MLSYS_VAR_CONTINUOUS && !mlsys__milp_is_bin(m, j)) {
      if (!any++) fputs("General\n", f);
      fprintf(f, " %s\n", mlsys__milp_vn(m, j, b1));
    }
  for (any = 0, j = 0; j < m->nvars; j++)
    if (mlsys__milp_is_bin(m, j)) {
      if (!any++) fputs("Binary\n", f);
      fprintf(f, " %s\n", mlsys__milp_vn(m, j, b1));
    }
  fputs("End\n", f);
}

/* Free MPS. Integer columns always get explicit bounds: some readers default MARKER-ed columns to [0, 1]. A
   maximisation is written as the minimisation of the negated objective (see the OBJSENSE note below). */
static void mlsys__milp_write_mps(const mlsys_milp *m, FILE *f) {
  char b1[24], b2[24];
  int i, j, inint = 0;
  long k, *cnt, *start, *pos;
  int *ri;
  double *rv;
  fprintf(f, "* mlsys MILP: %d variables, %d rows, %ld nonzeros\n", m->nvars, m->nrows, m->nnz);
  if (m->objconst != 0) fprintf(f, "* objective constant (not part of the model below): %.17g\n", m->objconst);
  /* no OBJSENSE section: glpsol rejects it and cbc ignores it (silently minimising) */
  if (m->maximize) fputs("* maximisation, written as minimisation of the negated objective: negate the optimum\n", f);
  fputs("NAME mlsys\n", f);
  fputs("ROWS\n N obj\n", f);
  for (i = 0; i < m->nrows; i++)
    fprintf(f, " %c %s\n", m->sense[i] == MLSYS_ROW_LE ? 'L' : m->sense[i] == MLSYS_ROW_GE ? 'G' : 'E',
            mlsys__milp_rn(m, i, b1));
  /* transpose rows to columns */
  cnt = (long *)mlsys_calloc((size_t)m->nvars + 1, sizeof(long));
  start = (long *)mlsys_calloc((size_t)m->nvars + 1, sizeof(long));
  pos = (long *)mlsys_calloc((size_t)m->nvars + 1, sizeof(long));
  ri = (int *)mlsys_alloc((size_t)(m->nnz ? m->nnz : 1), sizeof(int));
  rv = (double *)mlsys_alloc((size_t)(m->nnz ? m->nnz : 1), sizeof(double));
  if (!cnt || !start || !pos || !ri || !rv) {
    mlsys_free(cnt); mlsys_free(start); mlsys_free(pos); mlsys_free(ri); mlsys_free(rv);
    return;
  }
  for (k = 0; k < m->nnz; k++) cnt[m->rcol[k]]++;
  for (j = 0; j < m->nvars; j++) start[j + 1] = start[j] + cnt[j];
  for (j = 0; j < m->nvars; j++) pos[j] = start[j];
  for (i = 0; i < m->nrows; i++)
    for (k = m->row_off[i]; k < m->row_off[i + 1]; k++) {
      long p = pos[m->rcol[k]]++;
      ri[p] = i;
      rv[p] = m->rval[k];
    }
  fputs("COLUMNS\n", f);
  for (j = 0; j < m->nvars; j++) {
    int isint = m->kind[j] != MLSYS_VAR_CONTINUOUS;
    if (isint && !inint) { fputs("    MARKER 'MARKER' 'INTORG'\n", f); inint = 1; }
    if (!isint && inint) { fputs("    MARKER 'MARKER' 'INTEND'\n", f); inint = 0; }
    fprintf(f, "    %s obj %.17g\n", mlsys__milp_vn(m, j, b1), m->maximize && m->obj[j] != 0 ? -m->obj[j] : m->obj[j]);
    for (k = start[j]; k < start[j + 1]; k++)
      fprintf(f, "    %s %s %.17g\n", mlsys__milp_vn(m, j, b1), mlsys__milp_rn(m, ri[k], b2), rv[k]);
  }
  if (inint) fputs("    MARKER 'MARKER' 'INTEND'\n", f);
  fputs("RHS\n", f);
  for (i = 0; i < m->nrows; i++)
    if (m->rhs[i] != 0) fprintf(f, "    RHS %s %.17g\n", mlsys__milp_rn(m, i, b1), m->rhs[i]);
  fputs("BOUNDS\n", f);
  for (j = 0; j < m->nvars; j++) {
    const char *n = mlsys__milp_vn(m, j, b1);
    double lo, hi;
    if (mlsys__milp_is_bin(m, j)) { fprintf(f, " BV BND %s\n", n); continue; }
    mlsys__milp_col_bounds(m, j, 0, &lo, &hi);
    if (lo <= -MLSYS_INF && hi >= MLSYS_INF) { fprintf(f, " FR BND %s\n", n); continue; }
    if (lo <= -MLSYS_INF) fprintf(f, " MI BND %s\n", n);
    else fprintf(f, " LO BND %s %.17g\n", n, lo);
    if (hi >= MLSYS_INF) fprintf(f, " PL BND %s\n", n);
    else fprintf(f, " UP BND %s %.17g\n", n, hi);
  }
  fputs("ENDATA\n", f);
  mlsys_free(cnt); mlsys_free(start); mlsys_free(pos); mlsys_free(ri); mlsys_free(rv);
}

MLSYS_DEF mlsys_status mlsys_milp_write(const mlsys_milp *m, const char *path) {
  FILE *f = fopen(path, "w");
  size_t n = strlen(path);
  int bad;
  if (!f) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (n >= 4 && strcmp(path + n - 4, ".mps") == 0) mlsys__milp_write_mps(m, f);
  else mlsys__milp_write_lp(m, f);
  bad = ferror(f);
  if (fclose(f) != 0 || bad) return mlsys_set_error(MLSYS_ERR_IO, "%s: write failed", path);
  return MLSYS_OK;
}

/* ---- solving -------------------------------------------------------------------------------------------- */
typedef struct {
  const mlsys_milp *m;
  const mlsys_milp_opts *o;
  double t0, deadline, sign;   /* sign = -1 for maximisation (internal min form) */
  int stopped, improved;       /* stopped: 1 time limit, 2 caller (should_stop / on_improve), 3 node limit */
  int stop_cuts;               /* CBC: the stop cuts were added (CBC's own status and bound are then void) */
} mlsys__milp_run;

static int mlsys__milp_should_stop(mlsys__milp_run *run) {
  if (run->stopped) return 1;
  if (run->deadline > 0 && mlsys_now() >= run->deadline) { run->stopped = 1; return 1; }
  if (run->o->should_stop && run->o->should_stop(run->o->ud)) { run->stopped = 2; return 1; }
  return 0;
}

static void mlsys__milp_result_init(mlsys_milp_result *r, const mlsys_milp *m, mlsys_milp_backend b) {
  memset(r, 0, sizeof *r);
  r->backend = b;
  r->objective = NAN;
  r->bound = m->maximize ? INFINITY : -INFINITY;
  r->gap = INFINITY;
  r->nvars = m->nvars;
  r->status = MLSYS_MILP_ERROR;
}

#ifndef MLSYS_NO_LPSOLVE
static int __WINAPI mlsys__lps_abort(lprec *lp, void *ud) {
  mlsys__milp_run *run = (mlsys__milp_run *)ud;
  if (!run->stopped && run->o->max_nodes > 0 && (long)get_total_nodes(lp) >= run->o->max_nodes) run->stopped = 3;
  return mlsys__milp_should_stop(run);
}
static void __WINAPI mlsys__lps_msg(lprec *lp, void *ud, int msg) {
  mlsys__milp_run *run = (mlsys__milp_run *)ud;
  if (msg & (MSG_MILPBETTER | MSG_MILPFEASIBLE)) {
    double obj = get_working_objective(lp) * run->sign + run->m->objconst;
    run->improved++;
    if (run->o->on_improve && run->o->on_improve(run->o->ud, obj, mlsys_now() - run->t0)) run->stopped = 2;
  }
}

/* Solve with lp_solve. Fills r (objective/bound in the internal minimisation sense, constant excluded) and
   returns the lp_solve code; x is written into r->x when a solution exists. */
static mlsys_status mlsys__milp_solve_lpsolve(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                              double inc_obj, int have_inc, mlsys_milp_result *r, int *has_x) {
  lprec *lp;
  int i, j, ret, *cols = NULL;
  double *vals = NULL, *row = NULL;
  mlsys_status st = MLSYS_OK;
  *has_x = 0;
  lp = make_lp(0, m->nvars);
  if (!lp) return mlsys_set_error(MLSYS_ERR_NOMEM, "milp: lp_solve could not create a model");
  set_verbose(lp, o->verbose ? NORMAL : NEUTRAL);
  cols = (int *)mlsys_alloc((size_t)m->nvars + 1, sizeof(int));
  vals = (double *)mlsys_alloc((size_t)m->nvars + 1, sizeof(double));
  if (!cols || !vals) { st = MLSYS_ERR_NOMEM; goto done; }
  /* objective, in minimisation form */
  {
    int cnt = 0;
    for (j = 0; j < m->nvars; j++)
      if (m->obj[j] != 0) { cols[cnt] = j + 1; vals[cnt] = m->obj[j] * run->sign; cnt++; }
    if (!set_obj_fnex(lp, cnt, vals, cols)) { st = mlsys_set_error(MLSYS_ERR_SOLVER, "milp: lp_solve rejected the objective"); goto done; }
  }
  set_minim(lp);
  if (!resize_lp(lp, m->nrows + (have_inc ? 1 : 0), m->nvars)) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: lp_solve resize failed");
    goto done;
  }
  set_add_rowmode(lp, TRUE);
  for (i = 0; i < m->nrows; i++) {
    long k;
    int cnt = 0, type = m->sense[i] == MLSYS_ROW_LE ? LE : m->sense[i] == MLSYS_ROW_GE ? GE : EQ;
    for (k = m->row_off[i]; k < m->row_off[i + 1]; k++) { cols[cnt] = m->rcol[k] + 1; vals[cnt] = m->rval[k]; cnt++; }
    if (!add_constraintex(lp, cnt, vals, cols, type, m->rhs[i])) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: lp_solve could not add row %d", i);
      goto done;
    }
  }
  if (have_inc) {
    /* The cutoff as a row: objective <= cutoff (+ a relative 1e-9, as for CBC). lp_solve's own set_obj_bound is
       unreliable: with a cutoff better than the optimum it returned OPTIMAL with objective 1e30 or
       ACCURACYERROR instead of INFEASIBLE. */
    int cnt = 0;
    for (j = 0; j < m->nvars; j++)
      if (m->obj[j] != 0) { cols[cnt] = j + 1; vals[cnt] = m->obj[j] * run->sign; cnt++; }
    if (!add_constraintex(lp, cnt, vals, cols, LE, inc_obj + 1e-9 * (1 + fabs(inc_obj)))) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: lp_solve could not add the cutoff row");
      goto done;
    }
  }
  set_add_rowmode(lp, FALSE);
  for (j = 0; j < m->nvars; j++) {
    double lo, hi;
    mlsys__milp_col_bounds(m, j, o->relax, &lo, &hi);
    set_bounds(lp, j + 1, lo <= -MLSYS_INF ? -get_infinite(lp) : lo, hi >= MLSYS_INF ? get_infinite(lp) : hi);
    if (!o->relax && m->kind[j] != MLSYS_VAR_CONTINUOUS) set_int(lp, j + 1, TRUE);
  }
  if (!o->relax && m->has_prio) {
    /* lp_solve wants distinct weights, lower first: order by (priority, column) */
    if (!(row = (double *)mlsys_alloc((size_t)m->nvars + 1, sizeof(double)))) { st = MLSYS_ERR_NOMEM; goto done; }
    for (j = 0; j < m->nvars; j++) row[j] = (double)m->prio[j] * (double)(m->nvars + 1) + j;
    set_var_weights(lp, row);
  }
  set_bb_floorfirst(lp, o->branch_ceiling == 2 ? BRANCH_AUTOMATIC : o->branch_ceiling ? BRANCH_CEILING : BRANCH_FLOOR);
  if (o->lpsolve_bb_rule) set_bb_rule(lp, o->lpsolve_bb_rule);
  if (o->lpsolve_scaling) set_scaling(lp, o->lpsolve_scaling);
  if (o->mip_gap_abs > 0) set_mip_gap(lp, TRUE, o->mip_gap_abs);
  if (o->mip_gap_rel > 0) set_mip_gap(lp, FALSE, o->mip_gap_rel);
  if (o->time_limit > 0) set_timeout(lp, (long)ceil(o->time_limit) + 1);   /* our abort hook is the exact limit */
  put_abortfunc(lp, mlsys__lps_abort, run);
  put_msgfunc(lp, mlsys__lps_msg, run, MSG_MILPBETTER | MSG_MILPFEASIBLE);

  ret = solve(lp);
  r->solver_code = ret;
  r->nodes = (long)get_total_nodes(lp);
  switch (ret) {
    case OPTIMAL:
    case PRESOLVED:
    case SUBOPTIMAL:
      /* lp_solve reports some unbounded models (a column in no row) as OPTIMAL with objective ±1e30 */
      if (fabs(get_objective(lp)) >= get_infinite(lp)) r->status = MLSYS_MILP_UNBOUNDED;
      else r->status = ret == SUBOPTIMAL ? MLSYS_MILP_FEASIBLE : MLSYS_MILP_OPTIMAL;
      break;
    case INFEASIBLE:
      r->status = MLSYS_MILP_INFEASIBLE;
      break;
    case UNBOUNDED:
      r->status = MLSYS_MILP_UNBOUNDED;
      break;
    case TIMEOUT:
    case USERABORT:
      r->status = run->improved ? MLSYS_MILP_FEASIBLE : MLSYS_MILP_NO_SOLUTION;
      break;
    case NOMEMORY:
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: lp_solve ran out of memory");
      r->status = MLSYS_MILP_ERROR;
      break;
    default:   /* NUMFAILURE, DEGENERATE, ACCURACYERROR (also seen when the cutoff excludes everything) */
      r->status = MLSYS_MILP_ERROR;
      break;
  }
  if (r->status == MLSYS_MILP_OPTIMAL || r->status == MLSYS_MILP_FEASIBLE) {
    if (!(r->x = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) { st = MLSYS_ERR_NOMEM; goto done; }
    if (m->nvars) get_variables(lp, r->x);
    *has_x = 1;
    r->objective = get_objective(lp);
    if (r->status == MLSYS_MILP_OPTIMAL && (o->relax || (o->mip_gap_abs <= 0 && o->mip_gap_rel <= 0)))
      r->bound = r->objective;
    else
      r->bound = lp->bb_limitOF;   /* the dual bound lp_solve keeps (root relaxation, tightened by B&B) */
  } else if (!o->relax) {
    r->bound = lp->bb_limitOF;
  }
done:
  mlsys_free(cols); mlsys_free(vals); mlsys_free(row);
  delete_lp(lp);
  return st;
}
#endif /* !MLSYS_NO_LPSOLVE */

#ifdef MLSYS_MILP_CBC
static mlsys__milp_run *mlsys__cbc_current;   /* CBC's C callback has no user pointer; guarded by a mutex */
static pthread_mutex_t mlsys__cbc_mu = PTHREAD_MUTEX_INITIALIZER;
static void COINLINKAGE_CB mlsys__cbc_cb(Cbc_Model *model, int msgno, int ndouble, const double *dvec, int nint,
                                         const int *ivec, int nchar, char **cvec) {
  mlsys__milp_run *run = mlsys__cbc_current;
  (void)model; (void)nint; (void)ivec; (void)nchar; (void)cvec;
  /* CBC0004 / CBC0012 / CBC0016: an integer solution was found; dvec[0] is its objective (minimisation form) */
  if (run && (msgno == 4 || msgno == 12 || msgno == 16) && ndouble > 0) {
    run->improved++;
    if (run->o->on_improve) run->o->on_improve(run->o->ud, dvec[0] * run->sign + run->m->objconst, mlsys_now() - run->t0);
  }
}

/* CBC 2.10's C interface has no way to stop a solve, but a cut generator callback, which has a user pointer, runs
   during the root cut loop and at many nodes. Once the caller (or the wall-clock deadline) says stop, it adds the
   contradictory cuts x0 <= -1 and x0 >= 1, so the current node and every node after it is pruned and the search
   ends with the best solution so far (CBC then calls that "optimal": mlsys__milp_solve_coin corrects it). */
static void COINLINKAGE_CB mlsys__cbc_cut_cb(void *osi, void *cuts, void *ud) {
  mlsys__milp_run *run = (mlsys__milp_run *)ud;
  if (!run->stopped && run->o->should_stop && run->o->should_stop(run->o->ud)) run->stopped = 2;
  /* the time limit is CBC's own (which keeps its bound); this is only a backstop 0.1 s later */
  if (!run->stopped && run->deadline > 0 && mlsys_now() >= run->deadline + 0.1) run->stopped = 1;
  if (run->stopped && Osi_getNumCols(osi) > 0) {
    int idx = 0;
    double one = 1;
    OsiCuts_addRowCut(cuts, 1, &idx, &one, 'L', -1);
    OsiCuts_addRowCut(cuts, 1, &idx, &one, 'G', 1);
    run->stop_cuts = 1;
  }
}

/* Load the model in column-major form (what Cbc/Clp take). */
/* Column-major copy of the model for Clp/CBC; with cut_row, one more row: objective (min sense) <= cut. */
static mlsys_status mlsys__milp_csc(const mlsys_milp *m, double sign, int cut_row, double cut, CoinBigIndex **start,
                                    int **index, double **value, double **rlo, double **rhi, double **obj) {
  long k, *pos;
  int i, j;
  *start = (CoinBigIndex *)mlsys_calloc((size_t)m->nvars + 1, sizeof(CoinBigIndex));
  *index = (int *)mlsys_alloc((size_t)m->nnz + (size_t)m->nvars + 1, sizeof(int));
  *value = (double *)mlsys_alloc((size_t)m->nnz + (size_t)m->nvars + 1, sizeof(double));
  *rlo = (double *)mlsys_alloc((size_t)m->nrows + 1, sizeof(double));
  *rhi = (double *)mlsys_alloc((size_t)m->nrows + 1, sizeof(double));
  *obj = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double));
  pos = (long *)mlsys_alloc((size_t)m->nvars + 1, sizeof(long));
  if (!*start || !*index || !*value || !*rlo || !*rhi || !*obj || !pos) { mlsys_free(pos); return MLSYS_ERR_NOMEM; }
  for (k = 0; k < m->nnz; k++) (*start)[m->rcol[k] + 1]++;
  if (cut_row)
    for (j = 0; j < m->nvars; j++) (*start)[j + 1] += m->obj[j] != 0;
  for (j = 0; j < m->nvars; j++) (*start)[j + 1] += (*start)[j];
  for (j = 0; j < m->nvars; j++) pos[j] = (*start)[j];
  for (i = 0; i < m->nrows; i++) {
    for (k = m->row_off[i]; k < m->row_off[i + 1]; k++) {
      long p = pos[m->rcol[k]]++;
      (*index)[p] = i;
      (*value)[p] = m->rval[k];
    }
    (*rlo)[i] = m->sense[i] == MLSYS_ROW_LE ? -MLSYS__COIN_INF : m->rhs[i];
    (*rhi)[i] = m->sense[i] == MLSYS_ROW_GE ? MLSYS__COIN_INF : m->rhs[i];
  }
  for (j = 0; j < m->nvars; j++) (*obj)[j] = m->obj[j] * sign;
  if (cut_row) {   /* the same explicit cutoff row as lp_solve gets: both backends accept solutions equal to it */
    for (j = 0; j < m->nvars; j++)
      if (m->obj[j] != 0) {
        long p = pos[j]++;
        (*index)[p] = m->nrows;
        (*value)[p] = m->obj[j] * sign;
      }
    (*rlo)[m->nrows] = -MLSYS__COIN_INF;
    (*rhi)[m->nrows] = cut + 1e-9 * (1 + fabs(cut));
  }
  mlsys_free(pos);
  return MLSYS_OK;
}

static mlsys_status mlsys__milp_solve_coin(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                           const double *inc, double inc_obj, int have_cut, mlsys_milp_result *r,
                                           int *has_x) {
  CoinBigIndex *start = NULL;
  int *index = NULL, j;
  double *value = NULL, *rlo = NULL, *rhi = NULL, *obj = NULL, *clo = NULL, *chi = NULL;
  mlsys_status st;
  *has_x = 0;
  int nrows = m->nrows + (have_cut && !o->relax ? 1 : 0);
  st = mlsys__milp_csc(m, run->sign, nrows > m->nrows, inc_obj, &start, &index, &value, &rlo, &rhi, &obj);
  clo = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double));
  chi = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double));
  if (st != MLSYS_OK || !clo || !chi) { st = MLSYS_ERR_NOMEM; goto done; }
  for (j = 0; j < m->nvars; j++) {
    mlsys__milp_col_bounds(m, j, o->relax, &clo[j], &chi[j]);
    if (clo[j] <= -MLSYS_INF) clo[j] = -MLSYS__COIN_INF;
    if (chi[j] >= MLSYS_INF) chi[j] = MLSYS__COIN_INF;
  }
  if (o->relax || mlsys_milp_num_integer(m) == 0) {
    /* LP: Clp's dual simplex directly (CBC would add nothing but overhead) */
    Clp_Simplex *clp = Clp_newModel();
    int cs;
    if (!clp) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: Clp could not create a model"); goto done; }
    Clp_setLogLevel(clp, o->verbose ? 1 : 0);
    Clp_loadProblem(clp, m->nvars, nrows, start, index, value, clo, chi, obj, rlo, rhi);
    Clp_setOptimizationDirection(clp, 1);
    if (o->time_limit > 0) Clp_setMaximumSeconds(clp, o->time_limit);
    {
      /* Dual simplex after presolve. Clp's automatic choice (primal with the "idiot" crash) was 4x slower on the
         Checkmate LPs (chain n=129: 9.8 s against 2.3 s). */
      Clp_Solve *so = ClpSolve_new();
      if (so) {
        ClpSolve_setSolveType(so, 0 /* ClpSolve::useDual */, 0);
        ClpSolve_setPresolveType(so, 0 /* ClpSolve::presolveOn */, 5);
        Clp_initialSolveWithOptions(clp, so);
        ClpSolve_delete(so);
      } else {
        Clp_initialSolve(clp);
      }
    }
    cs = Clp_status(clp);
    r->solver_code = cs;
    if (cs == 0 && Clp_isProvenOptimal(clp)) {
      r->status = MLSYS_MILP_OPTIMAL;
      if (!(r->x = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) { Clp_deleteModel(clp); st = MLSYS_ERR_NOMEM; goto done; }
      if (m->nvars) memcpy(r->x, Clp_getColSolution(clp), sizeof(double) * (size_t)m->nvars);
      *has_x = 1;
      r->objective = Clp_objectiveValue(clp);
      r->bound = r->objective;
    } else if (cs == 1) r->status = MLSYS_MILP_INFEASIBLE;
    else if (cs == 2) r->status = MLSYS_MILP_UNBOUNDED;
    else if (cs == 3) r->status = MLSYS_MILP_NO_SOLUTION;
    else r->status = MLSYS_MILP_ERROR;
    Clp_deleteModel(clp);
  } else {
    Cbc_Model *cbc = Cbc_newModel();
    const double *sol;
    if (!cbc) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "milp: CBC could not create a model"); goto done; }
    Cbc_loadProblem(cbc, m->nvars, nrows, start, index, value, clo, chi, obj, rlo, rhi);
    for (j = 0; j < m->nvars; j++)
      if (m->kind[j] != MLSYS_VAR_CONTINUOUS) Cbc_setInteger(cbc, j);
    Cbc_setObjSense(cbc, 1);
    Cbc_setLogLevel(cbc, o->verbose ? 1 : 0);
    if (!o->verbose) { Cbc_setParameter(cbc, "log", "0"); Cbc_setParameter(cbc, "slog", "0"); }
    if (o->time_limit > 0) {
      Cbc_setMaximumSeconds(cbc, o->time_limit);
      Cbc_setParameter(cbc, "timeMode", "elapsed");   /* CBC counts CPU seconds by default */
    }
    /* CBC 2.10.8 (Debian 12) dereferences NULL in CglPreProcess (preProcessNonDefault / postProcess) when its time
       limit expires during preprocessing: seen on Checkmate's VGG16 model under a 30 s limit. Preprocessing is off so
       that a time limit can never crash the caller; on the chain models it changed solve times by -35%..+55%. */
    Cbc_setParameter(cbc, "preprocess", "off");
    if (o->max_nodes > 0) Cbc_setMaximumNodes(cbc, o->max_nodes > INT_MAX ? INT_MAX : (int)o->max_nodes);
    if (o->mip_gap_abs > 0) Cbc_setAllowableGap(cbc, o->mip_gap_abs);
    if (o->mip_gap_rel > 0) Cbc_setAllowableFractionGap(cbc, o->mip_gap_rel);
    if (o->threads > 1) {
      char buf[16];
      snprintf(buf, sizeof buf, "%d", o->threads);
      Cbc_setParameter(cbc, "threads", buf);
    }
    /* the cutoff is the explicit row added above (Cbc_setCutoff's semantics depend on preprocessing) */
    if (inc && !o->incumbent_no_start) {
      int *idx = (int *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(int));
      if (!idx) { Cbc_deleteModel(cbc); st = MLSYS_ERR_NOMEM; goto done; }
      for (j = 0; j < m->nvars; j++) idx[j] = j;
      Cbc_setMIPStartI(cbc, m->nvars, idx, inc);
      mlsys_free(idx);
    }
    if (o->should_stop || o->time_limit > 0) Cbc_addCutCallback(cbc, mlsys__cbc_cut_cb, "mlsys_stop", run);
    pthread_mutex_lock(&mlsys__cbc_mu);   /* the message callback reaches run through a global */
    mlsys__cbc_current = run;
    if (!o->verbose) Cbc_registerCallBack(cbc, mlsys__cbc_cb);
    Cbc_solve(cbc);
    mlsys__cbc_current = NULL;
    pthread_mutex_unlock(&mlsys__cbc_mu);
    r->solver_code = Cbc_status(cbc);
    r->nodes = Cbc_getNodeCount(cbc);
    sol = Cbc_bestSolution(cbc);
    r->bound = Cbc_getBestPossibleObjValue(cbc);
    if (run->stop_cuts) {   /* stopped by our cuts: nothing is proven, whatever CBC says */
      r->status = sol ? MLSYS_MILP_FEASIBLE : MLSYS_MILP_NO_SOLUTION;
      r->bound = -INFINITY;
    } else if (Cbc_isProvenOptimal(cbc) && sol) r->status = MLSYS_MILP_OPTIMAL;
    else if (Cbc_isProvenInfeasible(cbc)) r->status = MLSYS_MILP_INFEASIBLE;
    else if (Cbc_isContinuousUnbounded(cbc)) r->status = MLSYS_MILP_UNBOUNDED;
    else if (sol) r->status = MLSYS_MILP_FEASIBLE;
    else if (Cbc_isSecondsLimitReached(cbc) || Cbc_status(cbc) == 1) r->status = MLSYS_MILP_NO_SOLUTION;
    else r->status = MLSYS_MILP_ERROR;
    if (sol && (r->status == MLSYS_MILP_OPTIMAL || r->status == MLSYS_MILP_FEASIBLE)) {
      if (!(r->x = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) { Cbc_deleteModel(cbc); st = MLSYS_ERR_NOMEM; goto done; }
      if (m->nvars) memcpy(r->x, sol, sizeof(double) * (size_t)m->nvars);
      *has_x = 1;
      r->objective = Cbc_getObjValue(cbc);
      if (r->status == MLSYS_MILP_OPTIMAL && o->mip_gap_abs <= 0 && o->mip_gap_rel <= 0) r->bound = r->objective;
    }
    Cbc_deleteModel(cbc);
  }
done:
  mlsys_free(start); mlsys_free(index); mlsys_free(value); mlsys_free(rlo); mlsys_free(rhi); mlsys_free(obj);
  mlsys_free(clo); mlsys_free(chi);
  return st;
}
#endif /* MLSYS_MILP_CBC */

/* One backend solve: objective and bound in the internal minimisation sense, constant excluded. */
static mlsys_status mlsys__milp_backend_solve(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                              const double *inc, double cut, int have_cut, mlsys_milp_result *r,
                                              int *has_x) {
  *has_x = 0;
  (void)inc; (void)cut; (void)have_cut; (void)run; (void)r;
#ifndef MLSYS_NO_LPSOLVE
  if (o->backend == MLSYS_SOLVER_LPSOLVE) return mlsys__milp_solve_lpsolve(m, o, run, cut, have_cut, r, has_x);
#endif
#ifdef MLSYS_MILP_CBC
  if (o->backend == MLSYS_SOLVER_CBC) return mlsys__milp_solve_coin(m, o, run, inc, cut, have_cut, r, has_x);
#endif
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "milp: backend %s is not compiled in",
                         mlsys_milp_backend_name(o->backend));
}

#ifdef MLSYS_MILP_CBC
/* o->hard_time_limit: CBC runs in a forked child that is killed at the deadline. CBC 2.10 checks its time limit
   only between phases: its root LP (Clp's barrier/dual on a model of a million nonzeros) and its feasibility pump
   ran 137 s and 243 s on a 30 s limit (MONeT's resnet50 and googlenet ILPs). The child sends back the result (status
   words, the error detail, x) through a pipe; a child that is killed or dies yields NO_SOLUTION (the caller's
   incumbent then stands in, as after any time-out). should_stop is polled by the parent (every 50 ms), on_improve
   is not called (CBC's C interface has no solution events anyway). */
typedef struct {
  int st, status, has_x, stopped, stop_cuts, solver_code, nvars;
  long nodes;
  double objective, bound;
  char err[1024];   /* the thread's error detail holds at most 1024 bytes */
} mlsys__milp_wire;

static int mlsys__write_all(int fd, const void *p, size_t n) {
  const char *c = (const char *)p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w; n -= (size_t)w;
  }
  return 0;
}

static mlsys_status mlsys__milp_solve_forked(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                             const double *inc, double cut, int have_cut, mlsys_milp_result *r,
                                             int *has_x) {
  int fd[2];
  pid_t pid;
  mlsys__milp_wire w;
  size_t want = sizeof w, got = 0;
  char *buf = (char *)&w;
  int killed = 0, status = 0, eof = 0;
  *has_x = 0;
  fflush(NULL);   /* the child must not write the parent's buffered output a second time */
  if (pipe(fd) != 0) return mlsys__milp_backend_solve(m, o, run, inc, cut, have_cut, r, has_x);
  if ((pid = fork()) < 0) {
    close(fd[0]); close(fd[1]);
    return mlsys__milp_backend_solve(m, o, run, inc, cut, have_cut, r, has_x);
  }
  if (pid == 0) {   /* the child: solve, send, _exit (no atexit handlers, no flushing of the parent's buffers) */
    mlsys_milp_opts co = *o;
    mlsys__milp_run crun = *run;
    int cx = 0;
    mlsys_status cst;
    close(fd[0]);
    /* another thread of the parent may have held it at the fork; the child has only this thread */
    pthread_mutex_init(&mlsys__cbc_mu, NULL);
    co.hard_time_limit = 0; co.should_stop = NULL; co.on_improve = NULL;
    crun.o = &co;
    cst = mlsys__milp_backend_solve(m, &co, &crun, inc, cut, have_cut, r, &cx);
    memset(&w, 0, sizeof w);
    w.st = (int)cst; w.status = (int)r->status; w.has_x = cx && r->x; w.stopped = crun.stopped;
    w.stop_cuts = crun.stop_cuts; w.solver_code = r->solver_code; w.nvars = m->nvars; w.nodes = r->nodes;
    w.objective = r->objective; w.bound = r->bound;
    if (cst != MLSYS_OK) {
      const char *e = mlsys_last_error();
      size_t el = strlen(e);
      if (el >= sizeof w.err) el = sizeof w.err - 1;
      memcpy(w.err, e, el);
    }
    if (mlsys__write_all(fd[1], &w, sizeof w) == 0 && w.has_x)
      mlsys__write_all(fd[1], r->x, sizeof(double) * (size_t)m->nvars);
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  for (;;) {
    struct pollfd pf;
    int pr;
    if (!killed) {
      double now = mlsys_now();
      /* CBC's own limit normally ends it; the kill is for the phases that do not look at the clock */
      if (run->deadline > 0 && now >= run->deadline + 0.5) { run->stopped = 1; killed = 1; }
      else if (o->should_stop && o->should_stop(o->ud)) { run->stopped = 2; killed = 1; }
      if (killed) kill(pid, SIGKILL);
    }
    if (eof) break;
    pf.fd = fd[0]; pf.events = POLLIN; pf.revents = 0;
    pr = poll(&pf, 1, 50);
    if (pr < 0 && errno != EINTR) break;
    if (pr > 0) {
      ssize_t k = read(fd[0], buf + got, want - got);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) { eof = 1; continue; }
      got += (size_t)k;
      if (got == want) {
        if (buf == (char *)&w && w.has_x && w.nvars == m->nvars && !r->x) {
          if (!(r->x = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) { kill(pid, SIGKILL); killed = 1; break; }
          buf = (char *)r->x; want = sizeof(double) * (size_t)m->nvars; got = 0;
          if (want == 0) { eof = 1; }
        } else eof = 1;
      }
    }
  }
  close(fd[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (killed || (buf == (char *)&w ? got < sizeof w || w.has_x : got < want)) {
    mlsys_free(r->x); r->x = NULL;
    if (killed) { r->status = MLSYS_MILP_NO_SOLUTION; return MLSYS_OK; }
    r->status = MLSYS_MILP_ERROR;
    if (WIFSIGNALED(status))
      return mlsys_set_error(MLSYS_ERR_SOLVER, "milp: the CBC child process died (signal %d)", WTERMSIG(status));
    return mlsys_set_error(MLSYS_ERR_SOLVER, "milp: the CBC child process sent an incomplete result");
  }
  r->status = (mlsys_milp_status)w.status; r->solver_code = w.solver_code; r->nodes = w.nodes;
  r->objective = w.objective; r->bound = w.bound;
  if (w.stopped && !run->stopped) run->stopped = w.stopped;
  run->stop_cuts = w.stop_cuts;
  *has_x = w.has_x && r->x;
  if (w.st != MLSYS_OK) {
    mlsys_free(r->x); r->x = NULL; *has_x = 0;
    return mlsys_set_error((mlsys_status)w.st, "%s", w.err);
  }
  return MLSYS_OK;
}
#endif

/* The backend, in this process or (hard_time_limit, CBC, a limit or a stop callback) in a child. */
static mlsys_status mlsys__milp_backend_run(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                            const double *inc, double cut, int have_cut, mlsys_milp_result *r,
                                            int *has_x) {
#ifdef MLSYS_MILP_CBC
  if (o->hard_time_limit && o->backend == MLSYS_SOLVER_CBC && (run->deadline > 0 || o->should_stop))
    return mlsys__milp_solve_forked(m, o, run, inc, cut, have_cut, r, has_x);
#endif
  return mlsys__milp_backend_solve(m, o, run, inc, cut, have_cut, r, has_x);
}

#define MLSYS__MILP_FEAS_SECONDS 5.0    /* for a feasibility check when the caller set no time limit */

/* Has the model any solution at all? The same backend solves a copy with a zero objective (which cannot be
   unbounded) and no cutoff, within the time left. Returns 1 feasible, 0 proven infeasible, -1 undecided. Needed
   because a backend's "unbounded" only says that the LP relaxation is (the model may have no integer point), and
   because lp_solve and Clp/CBC misreport a column that is in no row and improves without limit (OPTIMAL with
   objective 1e30, resp. infeasible). */
static int mlsys__milp_feasible(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys__milp_run *run,
                                double *spent) {
  mlsys_milp z = *m;   /* shallow copy: the same columns and rows, another objective */
  mlsys_milp_opts zo = *o;
  mlsys__milp_run zrun = *run;
  mlsys_milp_result zr;
  int has_x = 0, res = -1;
  double t0 = mlsys_now(), left = run->deadline > 0 ? run->deadline - t0 : MLSYS__MILP_FEAS_SECONDS;
  *spent = 0;
  if (left <= 0 || run->stopped == 2) return -1;
  if (!(z.obj = (double *)mlsys_calloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) return -1;
  z.objconst = 0;
  z.maximize = 0;
  zo.time_limit = left;
  zo.incumbent = NULL;
  zo.use_cutoff = 0;
  zo.on_improve = NULL;
  zo.mip_gap_abs = zo.mip_gap_rel = 0;
  zrun.m = &z;
  zrun.o = &zo;
  zrun.sign = 1;
  zrun.t0 = t0;
  zrun.deadline = t0 + left;
  zrun.stopped = zrun.improved = zrun.stop_cuts = 0;
  mlsys__milp_result_init(&zr, &z, zo.backend);
  if (mlsys__milp_backend_run(&z, &zo, &zrun, NULL, 0, 0, &zr, &has_x) == MLSYS_OK) {
    /* checked: CBC has returned "optimal" garbage for such a model (x - y = 0.5 over free integers) */
    if (has_x && mlsys_milp_max_violation(m, zr.x, !o->relax) <= 1e-6) res = 1;
    else if (!has_x && zr.status == MLSYS_MILP_INFEASIBLE) res = 0;
  }
  if (zrun.stopped == 2) run->stopped = 2;
  mlsys_free(zr.x);
  mlsys_free(z.obj);
  *spent = mlsys_now() - t0;
  return res;
}

/* A bound in the internal sense (-inf: unknown, +inf: nothing feasible) to the caller's sense, constant included;
   lp_solve's ±1e30 and CBC's 1e50 count as infinite. */
static double mlsys__milp_bound_out(const mlsys_milp *m, double b) {
  if (isnan(b) || b <= -MLSYS_INF) return m->maximize ? INFINITY : -INFINITY;
  if (b >= MLSYS_INF) return m->maximize ? -INFINITY : INFINITY;
  return (m->maximize ? -b : b) + m->objconst;
}

MLSYS_DEF mlsys_status mlsys_milp_solve(const mlsys_milp *m, const mlsys_milp_opts *opts, mlsys_milp_result *r) {
  mlsys_milp_opts o;
  mlsys__milp_run run;
  mlsys_status st = MLSYS_OK;
  double inc_obj = 0, cut = 0;   /* internal (minimisation, no constant) sense */
  int have_inc = 0, have_cut = 0, inc_cut = 0, has_x = 0, ray = -1, j;
  char nb[24];
  if (opts) o = *opts; else memset(&o, 0, sizeof o);
  if (o.backend == MLSYS_SOLVER_DEFAULT)
    o.backend = mlsys_milp_has_backend(MLSYS_SOLVER_LPSOLVE) ? MLSYS_SOLVER_LPSOLVE : MLSYS_SOLVER_CBC;
  mlsys__milp_result_init(r, m, o.backend);
  if (!mlsys_milp_has_backend(o.backend)) {
    r->status = MLSYS_MILP_ERROR;
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "milp: backend %s is not compiled in%s",
                           mlsys_milp_backend_name(o.backend),
                           o.backend == MLSYS_SOLVER_CBC ? " (build with -DMLSYS_MILP_CBC and link CBC/Clp)" : "");
  }
  if (o.time_limit < 0 || o.mip_gap_abs < 0 || o.mip_gap_rel < 0 || isnan(o.time_limit) || o.max_nodes < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "milp: negative time limit, gap or node limit");
  memset(&run, 0, sizeof run);
  run.m = m;
  run.o = &o;
  run.t0 = mlsys_now();
  run.deadline = o.time_limit > 0 ? run.t0 + o.time_limit : 0;
  run.sign = m->maximize ? -1.0 : 1.0;
  if (o.incumbent && !o.relax) {
    double viol = mlsys_milp_max_violation(m, o.incumbent, 1);
    if (!(viol <= 1e-6)) {
      return mlsys_set_error(MLSYS_ERR_ARG, "milp: the incumbent violates the model by %g", viol);
    }
    have_inc = 1;
    inc_obj = (mlsys_milp_eval(m, o.incumbent) - m->objconst) * run.sign;
  }
  if (o.use_cutoff && !o.relax) {
    cut = (o.cutoff - m->objconst) * run.sign;
    have_cut = 1;
  }
  if (have_inc && (!have_cut || inc_obj <= cut)) { cut = inc_obj; have_cut = 1; inc_cut = 1; }

  /* An empty domain is infeasible: lp_solve would ignore bounds with lo > hi, and branch forever on an integer
     column without an integer in its bounds. */
  for (j = 0; j < m->nvars; j++) {
    double lo, hi;
    mlsys__milp_col_bounds(m, j, o.relax, &lo, &hi);
    if (!(lo <= hi)) {
      r->status = MLSYS_MILP_INFEASIBLE;
      r->bound = mlsys__milp_bound_out(m, INFINITY);
      r->seconds = mlsys_now() - run.t0;
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "milp: the model is infeasible: column %s has no %svalue in [%g, %g]",
                             mlsys__milp_vn(m, j, nb), lo == m->lo[j] && hi == m->hi[j] ? "" : "integer ", m->lo[j],
                             m->hi[j]);
    }
  }
  /* A column in no row whose objective improves toward an infinite bound: the model is unbounded if feasible. */
  {
    unsigned char *inrow = (unsigned char *)mlsys_calloc((size_t)(m->nvars ? m->nvars : 1), 1);
    long k;
    if (!inrow) { r->status = MLSYS_MILP_ERROR; return MLSYS_ERR_NOMEM; }
    for (k = 0; k < m->nnz; k++) inrow[m->rcol[k]] = 1;
    for (j = 0; j < m->nvars && ray < 0; j++) {
      double c = m->obj[j] * run.sign;
      if (!inrow[j] && ((c < 0 && m->hi[j] >= MLSYS_INF) || (c > 0 && m->lo[j] <= -MLSYS_INF))) ray = j;
    }
    mlsys_free(inrow);
  }

  r->bound = -INFINITY;   /* internal sense from here on: unknown */
  if (ray >= 0) r->status = MLSYS_MILP_UNBOUNDED;   /* checked below */
  else st = mlsys__milp_backend_run(m, &o, &run, have_inc ? o.incumbent : NULL, cut, have_cut, r, &has_x);
  r->seconds = mlsys_now() - run.t0;
  if (st != MLSYS_OK) {
    mlsys_free(r->x);
    r->x = NULL;
    r->status = MLSYS_MILP_ERROR;
    r->bound = mlsys__milp_bound_out(m, -INFINITY);
    return st;
  }

  if (!has_x && r->status == MLSYS_MILP_UNBOUNDED) {
    /* A backend's "unbounded" means an unbounded LP relaxation: the model is unbounded only if it has a solution. */
    double spent = 0;
    int feas = have_inc ? 1 : mlsys__milp_feasible(m, &o, &run, &spent);
    r->seconds = mlsys_now() - run.t0;
    if (feas == 0) {
      r->status = MLSYS_MILP_INFEASIBLE;
      r->bound = mlsys__milp_bound_out(m, INFINITY);
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "milp: the model is infeasible (its %s is unbounded)",
                             o.relax || !mlsys_milp_num_integer(m) ? "objective ray" : "LP relaxation");
    }
    r->bound = mlsys__milp_bound_out(m, -INFINITY);   /* unbounded, or unknown */
    if (feas < 0) {   /* undecided: say so rather than guess */
      if (run.stopped == 2) {
        r->status = MLSYS_MILP_NO_SOLUTION;
        return mlsys_set_error(MLSYS_ERR_CANCELED, "milp: stopped by the caller before a solution was found");
      }
      if (run.deadline > 0 && mlsys_now() >= run.deadline) {
        r->status = MLSYS_MILP_NO_SOLUTION;
        return mlsys_set_error(MLSYS_ERR_TIMEOUT, "milp: no solution within the time limit of %g s (the LP "
                               "relaxation is unbounded)", o.time_limit);
      }
      r->status = MLSYS_MILP_ERROR;
      return mlsys_set_error(MLSYS_ERR_SOLVER, "milp: the LP relaxation is unbounded, but %s found no solution "
                             "(%.3g s): the model is unbounded or infeasible", mlsys_milp_backend_name(o.backend),
                             spent);
    }
    if (ray >= 0)
      return mlsys_set_error(MLSYS_ERR_UNBOUNDED, "milp: the model is unbounded (column %s is in no row and improves "
                             "the objective without limit)", mlsys__milp_vn(m, ray, nb));
    return mlsys_set_error(MLSYS_ERR_UNBOUNDED, "milp: the model is unbounded");
  }

  /* The caller's incumbent stands in when the solver found nothing better. */
  if (have_inc) {
    int use_inc = !has_x || inc_obj < r->objective - 1e-9 * (1 + fabs(inc_obj));
    if (use_inc) {
      mlsys_free(r->x);
      if (!(r->x = (double *)mlsys_alloc((size_t)(m->nvars ? m->nvars : 1), sizeof(double)))) return MLSYS_ERR_NOMEM;
      for (j = 0; j < m->nvars; j++) r->x[j] = o.incumbent[j];
      /* "nothing at least as good as the incumbent" proven by the solver (the incumbent set the cutoff) makes it
         optimal */
      r->status = (r->status == MLSYS_MILP_INFEASIBLE && inc_cut) ? MLSYS_MILP_OPTIMAL : MLSYS_MILP_FEASIBLE;
      r->objective = inc_obj;
      r->from_incumbent = 1;
      has_x = 1;
    }
  }
  if (has_x && !o.relax) {
    /* integral columns are returned exactly integral (solvers hand back 0.9999999) */
    for (j = 0; j < m->nvars; j++)
      if (m->kind[j] != MLSYS_VAR_CONTINUOUS) r->x[j] = floor(r->x[j] + 0.5);
  }
  /* back to the caller's sense, constant included */
  if (has_x) {
    r->objective = mlsys_milp_eval(m, r->x);   /* the objective of x exactly, after the rounding above */
    if (r->status == MLSYS_MILP_OPTIMAL && o.mip_gap_abs <= 0 && o.mip_gap_rel <= 0) r->bound = r->objective;
    else r->bound = mlsys__milp_bound_out(m, r->bound);
    if (m->maximize ? r->bound < r->objective : r->bound > r->objective) r->bound = r->objective;
    r->gap = isinf(r->bound) ? INFINITY : fabs(r->objective - r->bound) / fmax(1e-9, fabs(r->objective));
    return MLSYS_OK;
  }
  r->bound = mlsys__milp_bound_out(m, r->status == MLSYS_MILP_INFEASIBLE ? INFINITY : r->bound);
  switch (r->status) {
    case MLSYS_MILP_INFEASIBLE:
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "milp: the model is infeasible%s",
                             have_cut ? " (no solution better than the cutoff)" : "");
    case MLSYS_MILP_NO_SOLUTION:
      if (run.stopped == 2) return mlsys_set_error(MLSYS_ERR_CANCELED, "milp: stopped by the caller before a solution was found");
      if (o.max_nodes > 0 && (run.stopped == 3 || run.deadline <= 0 || mlsys_now() < run.deadline))
        return mlsys_set_error(MLSYS_ERR_TIMEOUT, "milp: no solution within the node limit of %ld", o.max_nodes);
      return mlsys_set_error(MLSYS_ERR_TIMEOUT, "milp: no solution within the time limit of %g s", o.time_limit);
    default:
      return mlsys_set_error(MLSYS_ERR_SOLVER, "milp: %s failed (code %d)", mlsys_milp_backend_name(o.backend),
                             r->solver_code);
  }
}

MLSYS_DEF void mlsys_milp_result_free(mlsys_milp_result *r) {
  if (!r) return;
  mlsys_free(r->x);
  r->x = NULL;
}

/* ---------------------------------------------------------------------------------------------------------------
   8. JPEG structure (ITU T.81 Annex B)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF int mlsys_image_sniff(const uint8_t *b, size_t n) {
  if (!b) return MLSYS_IMG_UNKNOWN;
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return MLSYS_IMG_JPEG;
  if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return MLSYS_IMG_PNG;
  if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6))) return MLSYS_IMG_GIF;
  if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return MLSYS_IMG_WEBP;
  if (n >= 18 && b[0] == 'B' && b[1] == 'M') {
    /* "BM" alone is common in text; require a known DIB header size after the 14-byte file header */
    uint32_t dib = (uint32_t)b[14] | (uint32_t)b[15] << 8 | (uint32_t)b[16] << 16 | (uint32_t)b[17] << 24;
    if (dib == 12 || dib == 16 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 || dib == 124)
      return MLSYS_IMG_BMP;
  }
  return MLSYS_IMG_UNKNOWN;
}

MLSYS_DEF const char *mlsys_image_format_name(int fmt) {
  switch (fmt) {
    case MLSYS_IMG_JPEG: return "JPEG";
    case MLSYS_IMG_PNG: return "PNG";
    case MLSYS_IMG_GIF: return "GIF";
    case MLSYS_IMG_BMP: return "BMP";
    case MLSYS_IMG_WEBP: return "WebP";
    default: return "unknown";
  }
}

/* the marker's name for messages: "SOF2", "DHT", "APP1", "RST3", "0xFFF0" */
static const char *mlsys__jpeg_marker(int m, char buf[16]) {
  static const char *const c0[16] = {"SOF0", "SOF1", "SOF2", "SOF3", "DHT", "SOF5", "SOF6", "SOF7",
                                     "JPG", "SOF9", "SOF10", "SOF11", "DAC", "SOF13", "SOF14", "SOF15"};
  static const char *const d8[8] = {"SOI", "EOI", "SOS", "DQT", "DNL", "DRI", "DHP", "EXP"};
  if (m >= 0xC0 && m <= 0xCF) return c0[m - 0xC0];
  if (m >= 0xD8 && m <= 0xDF) return d8[m - 0xD8];
  if (m == 0xFE) return "COM";
  if (m >= 0xD0 && m <= 0xD7) snprintf(buf, 16, "RST%d", m - 0xD0);
  else if (m >= 0xE0 && m <= 0xEF) snprintf(buf, 16, "APP%d", m - 0xE0);
  else snprintf(buf, 16, "0xFF%02X", m);
  return buf;
}
static int mlsys__jpeg_is_sof(int m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

static mlsys_status mlsys__jpeg_no_eoi(size_t n, int nscans) {
  if (!nscans) return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: the file ends at byte %zu before any scan (SOS)", n);
  return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: no EOI marker after the scan data (file ends at byte %zu)", n);
}

/* What the walk has seen. The decoders trust table references: stb_image 2.27 (as Debian 12 ships it) decodes with
   whatever an undefined Huffman table's memory holds and writes past its tables on a DHT of more than 256 codes, so
   the check enforces what T.81 requires before a scan instead. */
typedef struct {
  mlsys_jpeg_info in;
  unsigned huff;            /* bit 4·class + id: Huffman tables defined so far */
  unsigned quant;           /* bit id: quantisation tables defined so far */
  int tq[256];              /* frame component id → its quantisation table; −1: not in the frame */
  mlsys_jpeg_scan *scans;   /* the caller's, or NULL */
  int max_scans;            /* 0: no limit */
} mlsys__jpeg_walk;

/* SOFn (B.2.2): sizes, components and their quantisation table ids */
static mlsys_status mlsys__jpeg_sof(mlsys__jpeg_walk *s, int m, const uint8_t *seg, unsigned len, size_t at) {
  char nm[16];
  int i;
  if (s->in.sof) return mlsys_set_error(MLSYS_ERR_PARSE, "second frame header (%s) at byte %zu", mlsys__jpeg_marker(m, nm), at);
  if (len < 6 || len != 6 + 3u * seg[5])
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s segment at byte %zu: %u bytes for %d components", mlsys__jpeg_marker(m, nm), at, len,
                           len >= 6 ? seg[5] : 0);
  s->in.sof = m;
  s->in.precision = seg[0];
  s->in.height = seg[1] << 8 | seg[2];
  s->in.width = seg[3] << 8 | seg[4];
  s->in.components = seg[5];
  if (!s->in.width || !s->in.height || !s->in.components)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s at byte %zu: image %d x %d with %d components (zero)", mlsys__jpeg_marker(m, nm), at,
                           s->in.width, s->in.height, s->in.components);
  for (i = 0; i < seg[5]; i++) {
    const uint8_t *c = seg + 6 + 3 * i;
    if (s->tq[c[0]] >= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s at byte %zu: component id %d twice", mlsys__jpeg_marker(m, nm), at, c[0]);
    if (c[2] > 3) return mlsys_set_error(MLSYS_ERR_PARSE, "%s at byte %zu: component %d uses quantisation table %d (at most 3)",
                                         mlsys__jpeg_marker(m, nm), at, c[0], c[2]);
    s->tq[c[0]] = c[2];
  }
  return MLSYS_OK;
}

/* DHT (B.2.4.2): class ≤ 1, id ≤ 3, at most 256 codes per table, tables filling the segment exactly */
static mlsys_status mlsys__jpeg_dht(mlsys__jpeg_walk *s, const uint8_t *seg, unsigned len, size_t at) {
  unsigned k = 0;
  while (k < len) {
    unsigned cnt = 0, i;
    if (len - k < 17) return mlsys_set_error(MLSYS_ERR_PARSE, "DHT segment at byte %zu: a table is cut short", at);
    if (seg[k] >> 4 > 1 || (seg[k] & 15) > 3)
      return mlsys_set_error(MLSYS_ERR_PARSE, "DHT segment at byte %zu: table class %d, id %d (at most 1, 3)", at, seg[k] >> 4, seg[k] & 15);
    for (i = 1; i <= 16; i++) cnt += seg[k + i];
    if (cnt > 256 || cnt > len - k - 17)
      return mlsys_set_error(MLSYS_ERR_PARSE, "DHT segment at byte %zu: a table of %u codes (at most 256, inside the segment)", at, cnt);
    s->huff |= 1u << ((seg[k] >> 4) * 4 + (seg[k] & 15));
    k += 17 + cnt;
  }
  return MLSYS_OK;
}

/* DQT (B.2.4.1): 8- or 16-bit tables with ids ≤ 3, filling the segment exactly */
static mlsys_status mlsys__jpeg_dqt(mlsys__jpeg_walk *s, const uint8_t *seg, unsigned len, size_t at) {
  unsigned k = 0;
  while (k < len) {
    unsigned size = seg[k] >> 4 ? 129 : 65;
    if (seg[k] >> 4 > 1 || (seg[k] & 15) > 3)
      return mlsys_set_error(MLSYS_ERR_PARSE, "DQT segment at byte %zu: table precision %d, id %d (at most 1, 3)", at, seg[k] >> 4, seg[k] & 15);
    if (len - k < size) return mlsys_set_error(MLSYS_ERR_PARSE, "DQT segment at byte %zu: a table is cut short", at);
    s->quant |= 1u << (seg[k] & 15);
    k += size;
  }
  return MLSYS_OK;
}

/* SOS (B.2.3): 1–4 components of the frame whose quantisation tables, and the Huffman tables this scan decodes with,
   are defined. Huffman coding: sequential scans use DC and AC tables; progressive DC first scans (Ss = 0, Ah = 0) the
   DC table, AC scans (Ss > 0) the AC table, DC refinement none; lossless the DC table. Arithmetic coding: none. The
   scan is recorded (its end is set when the marker after its data is found). */
static mlsys_status mlsys__jpeg_sos(mlsys__jpeg_walk *s, const uint8_t *seg, unsigned len, size_t at) {
  int ns = len ? seg[0] : 0, i, sof = s->in.sof, ss, ah, dc, ac;
  if (!sof) return mlsys_set_error(MLSYS_ERR_PARSE, "SOS at byte %zu before any frame header (SOF)", at);
  if (ns < 1 || ns > 4 || len != 4 + 2u * ns)
    return mlsys_set_error(MLSYS_ERR_PARSE, "SOS segment at byte %zu: %u bytes for %d components (1 to 4)", at, len, ns);
  ss = seg[1 + 2 * ns];
  ah = seg[3 + 2 * ns] >> 4;
  if (sof >= 0xC9) dc = ac = 0;                                          /* arithmetic */
  else if (sof == 0xC3 || sof == 0xC7) { dc = 1; ac = 0; }               /* lossless */
  else if (sof == 0xC2 || sof == 0xC6) { dc = ss == 0 && ah == 0; ac = ss > 0; }
  else dc = ac = 1;
  for (i = 0; i < ns; i++) {
    int id = seg[1 + 2 * i], td = seg[2 + 2 * i] >> 4, ta = seg[2 + 2 * i] & 15;
    if (s->tq[id] < 0) return mlsys_set_error(MLSYS_ERR_PARSE, "SOS at byte %zu: component id %d is not in the frame", at, id);
    if (!(s->quant >> s->tq[id] & 1))
      return mlsys_set_error(MLSYS_ERR_PARSE, "SOS at byte %zu: component %d's quantisation table %d is not defined (no DQT)", at, id, s->tq[id]);
    if ((dc && (td > 3 || !(s->huff >> td & 1))) || (ac && (ta > 3 || !(s->huff >> (4 + ta) & 1))))
      return mlsys_set_error(MLSYS_ERR_PARSE, "SOS at byte %zu: component %d's Huffman table (%s %d) is not defined (no DHT)", at, id,
                             dc && (td > 3 || !(s->huff >> td & 1)) ? "DC" : "AC", dc && (td > 3 || !(s->huff >> td & 1)) ? td : ta);
  }
  if (s->max_scans > 0 && s->in.nscans >= s->max_scans)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "more than %d scans (the SOS at byte %zu)", s->max_scans, at);
  if (s->scans) {
    mlsys_jpeg_scan *sc = &s->scans[s->in.nscans];
    memset(sc, 0, sizeof *sc);
    sc->ns = (uint8_t)ns;
    for (i = 0; i < ns; i++) sc->comp[i] = seg[1 + 2 * i];
    sc->ss = seg[1 + 2 * ns];
    sc->se = seg[2 + 2 * ns];
    sc->ah = (uint8_t)(seg[3 + 2 * ns] >> 4);
    sc->al = (uint8_t)(seg[3 + 2 * ns] & 15);
    sc->sos = at;
  }
  if (!s->in.nscans) s->in.first_sos = at;
  s->in.nscans++;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_jpeg_check(const uint8_t *buf, size_t n, mlsys_jpeg_info *info, mlsys_jpeg_scan *scans, int max_scans) {
  mlsys__jpeg_walk s;
  size_t pos = 2, prev_pos = 0;   /* the last marker seen, for messages */
  int in_scan = 0, prev_m = 0xD8, i;
  char nm[16];
  memset(&s, 0, sizeof s);
  s.in.adobe_transform = -1;
  for (i = 0; i < 256; i++) s.tq[i] = -1;
  if (info) *info = s.in;
  if (!buf && n) return mlsys_set_error(MLSYS_ERR_ARG, "jpeg_check: NULL buffer of %zu bytes", n);
  if (max_scans < 0 || (scans && max_scans == 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "jpeg_check: max_scans %d%s", max_scans, scans ? " with a scans array (its room: give max_scans > 0)" : "");
  s.scans = scans;
  s.max_scans = max_scans;
  if (n < 2 || buf[0] != 0xFF || buf[1] != 0xD8) {
    int fmt = mlsys_image_sniff(buf, n);
    if (fmt != MLSYS_IMG_UNKNOWN) return mlsys_set_error(MLSYS_ERR_PARSE, "not a JPEG: %s data", mlsys_image_format_name(fmt));
    if (n == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "not a JPEG: empty input");
    if (n == 1) return mlsys_set_error(MLSYS_ERR_PARSE, "not a JPEG: 1 byte");
    return mlsys_set_error(MLSYS_ERR_PARSE, "not a JPEG: no SOI marker (starts with 0x%02X 0x%02X)", buf[0], buf[1]);
  }
  for (;;) {
    size_t mpos;
    unsigned len;
    int m;
    const uint8_t *seg;
    mlsys_status st = MLSYS_OK;
    if (in_scan) {
      /* entropy-coded data: 0xFF is followed by 0x00 (a stuffed byte), RSTn, another 0xFF (fill) or a marker (B.1.1.5);
         the scan ends at the first 0xFF of the run before that marker */
      size_t end = SIZE_MAX;
      for (;;) {
        const uint8_t *p = pos < n ? (const uint8_t *)memchr(buf + pos, 0xFF, n - pos) : NULL;
        if (!p || p + 1 >= buf + n) return mlsys__jpeg_no_eoi(n, s.in.nscans);
        if (end == SIZE_MAX) end = (size_t)(p - buf);
        pos = (size_t)(p - buf) + 1;
        if (buf[pos] == 0x00 || (buf[pos] >= 0xD0 && buf[pos] <= 0xD7)) { pos++; end = SIZE_MAX; }
        else if (buf[pos] != 0xFF) break;
      }
      s.in.last_scan_end = end;
      if (s.scans) s.scans[s.in.nscans - 1].end = end;
    } else {
      if (pos >= n) return mlsys__jpeg_no_eoi(n, s.in.nscans);
      if (buf[pos] != 0xFF)
        return mlsys_set_error(MLSYS_ERR_PARSE, "expected a marker at byte %zu after the %s at byte %zu, found 0x%02X", pos,
                               mlsys__jpeg_marker(prev_m, nm), prev_pos, buf[pos]);
      while (pos < n && buf[pos] == 0xFF) pos++;   /* fill bytes may precede a marker (B.1.1.2) */
      if (pos >= n) return mlsys__jpeg_no_eoi(n, s.in.nscans);
    }
    m = prev_m = buf[pos];
    mpos = prev_pos = pos - 1;
    pos++;
    in_scan = 0;
    if (m == 0xD9) {
      if (!s.in.nscans) return mlsys_set_error(MLSYS_ERR_PARSE, "EOI marker at byte %zu before any scan (SOS)", mpos);
      s.in.eoi = mpos;
      if (info) *info = s.in;
      return MLSYS_OK;
    }
    if (m == 0x01) continue;   /* TEM: no length */
    if (m == 0x00 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7))
      return mlsys_set_error(MLSYS_ERR_PARSE, "unexpected %s marker at byte %zu", mlsys__jpeg_marker(m, nm), mpos);
    if (n - pos < 2)
      return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: %s marker at byte %zu has no length (file ends at byte %zu)",
                             mlsys__jpeg_marker(m, nm), mpos, n);
    len = (unsigned)buf[pos] << 8 | buf[pos + 1];
    if (len < 2)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s segment at byte %zu has length %u (at least 2)", mlsys__jpeg_marker(m, nm), mpos, len);
    if (len > n - pos)
      return mlsys_set_error(MLSYS_ERR_PARSE, "truncated: %s segment at byte %zu (length %u) runs past the end of the data (byte %zu)",
                             mlsys__jpeg_marker(m, nm), mpos, len, n);
    seg = buf + pos + 2;
    len -= 2;
    if (mlsys__jpeg_is_sof(m)) st = mlsys__jpeg_sof(&s, m, seg, len, mpos);
    else if (m == 0xC4) st = mlsys__jpeg_dht(&s, seg, len, mpos);
    else if (m == 0xDB) st = mlsys__jpeg_dqt(&s, seg, len, mpos);
    else if (m == 0xDA) { st = mlsys__jpeg_sos(&s, seg, len, mpos); in_scan = 1; }
    else if (m == 0xEE && len >= 12 && !memcmp(seg, "Adobe", 5)) s.in.adobe_transform = seg[11];
    if (st) return st;
    pos += 2 + len;
  }
}

/* ================================================================================================================
   10. Dense kernels
   ================================================================================================================ */
MLSYS_DEF void mlsys_dense_layernorm(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N, int C) {
  int r, i;
  for (r = 0; r < N; r++) {
    const float *x = inp + (size_t)r * C;
    float *o = out + (size_t)r * C;
    float mu = 0, v = 0, s;
    for (i = 0; i < C; i++) mu += x[i];
    mu /= (float)C;
    for (i = 0; i < C; i++) { float d = x[i] - mu; v += d * d; }
    v /= (float)C;
    s = 1.0f / sqrtf(v + 1e-5f);
    for (i = 0; i < C; i++) o[i] = (x[i] - mu) * s * w[i] + b[i];
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = s;
  }
}
/* LayerNorm backward (llm.c): dinp += rstd·(w·dout − mean(w·dout) − x̂·mean(w·dout·x̂)), dw += x̂·dout, db += dout;
   rows in order (the weight gradients are sums over rows) */
MLSYS_DEF void mlsys_dense_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, const float *mean,
                               const float *rstd, int N, int C) {
  int r, i;
  for (r = 0; r < N; r++) {
    const float *x = inp + (size_t)r * C, *g = dout + (size_t)r * C;
    float *dx = dinp + (size_t)r * C;
    const float mu = mean[r], rs = rstd[r];
    float dm = 0, dnm = 0;
    for (i = 0; i < C; i++) {
      float n = (x[i] - mu) * rs, dn = w[i] * g[i];
      dm += dn;
      dnm += dn * n;
    }
    dm /= (float)C;
    dnm /= (float)C;
    for (i = 0; i < C; i++) {
      float n = (x[i] - mu) * rs, dn = w[i] * g[i];
      db[i] += g[i];
      dw[i] += n * g[i];
      dx[i] += (dn - dm - n * dnm) * rs;
    }
  }
}

/* out[r][o] = bias[o] + inp[r] · w[o] for N rows, C inputs, OC outputs (w is OC×C row-major, as llm.c). Tasks are
   tiles of outputs × rows, so a weight tile stays in cache across the rows. */
/* On x86-64 with GCC or clang the matmul task is also compiled for AVX2 (without FMA) and picked at run time: 8-wide
   vector multiplies and adds are the same roundings as the 32 scalar partial sums of mlsys_dense_dot, so the results are
   bitwise those of the portable code, about twice as fast when the rows are many (prefill, batches). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && !defined(MLSYS_NO_CLONES)
#define MLSYS__DENSE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MLSYS__DENSE_CLONES
#endif
typedef struct { float *out; const float *inp, *w, *bias; int N, C, OC, ot, rt, nto; } mlsys__dense_mm;
MLSYS__DENSE_CLONES static void mlsys__dense_matmul_task(void *ctx, long i, int worker) {
  const mlsys__dense_mm *a = (const mlsys__dense_mm *)ctx;
  int o0 = (int)(i % a->nto) * a->ot, r0 = (int)(i / a->nto) * a->rt;
  int o1 = o0 + a->ot < a->OC ? o0 + a->ot : a->OC, r1 = r0 + a->rt < a->N ? r0 + a->rt : a->N, r, o;
  (void)worker;
  for (r = r0; r < r1; r++) {
    const float *x = a->inp + (size_t)r * a->C;
    float *y = a->out + (size_t)r * a->OC;
    for (o = o0; o < o1; o++) y[o] = (a->bias ? a->bias[o] : 0.0f) + mlsys_dense_dot(x, a->w + (size_t)o * a->C, a->C);
  }
}
MLSYS_DEF void mlsys_dense_matmul(mlsys_pool *pool, float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
  mlsys__dense_mm a;
  long ntr;
  a.out = out; a.inp = inp; a.w = w; a.bias = bias; a.N = N; a.C = C; a.OC = OC;
  a.ot = 32768 / C;                      /* ~128 KB of weights per tile */
  if (a.ot < 4) a.ot = 4;
  if (a.ot > OC) a.ot = OC;
  a.rt = 64;
  a.nto = (OC + a.ot - 1) / a.ot;
  ntr = (N + a.rt - 1) / a.rt;
  mlsys_pool_for(pool, (long)a.nto * ntr, mlsys__dense_matmul_task, &a);   /* cannot fail: the pool is ours */
}

/* Y[i][c] += Σ_{k0 ≤ k < k1} A[i·ai + k·ak] · X[k·xs + c] for i < I, c < Cc, the products added in ascending k, one
   rounding each (as y += a·x): register blocks of 4 rows × 16 columns (8-float vectors with GCC/clang), the same
   roundings as the scalar loops, so block shapes and vector widths never change the bits. Cloned for AVX2 itself:
   an inline callee of the cloned tasks would be compiled for the baseline target (8 accumulators spill there). */
#if defined(__GNUC__) || defined(__clang__)
MLSYS__DENSE_CLONES static void mlsys__dense_gemm_block(float *Y, size_t ys, const float *A, size_t ai, size_t ak, const float *X, size_t xs, int I, int k0,
                                          int k1, int Cc) {
  int i = 0, c, k;
  for (; i + 4 <= I; i += 4) {
    float *y0 = Y + (size_t)i * ys, *y1 = y0 + ys, *y2 = y1 + ys, *y3 = y2 + ys;
    const float *a = A + (size_t)i * ai;
    for (c = 0; c + 16 <= Cc; c += 16) {
      mlsys__dense_v8 s00, s01, s10, s11, s20, s21, s30, s31, x0, x1;
      memcpy(&s00, y0 + c, 32); memcpy(&s01, y0 + c + 8, 32); memcpy(&s10, y1 + c, 32); memcpy(&s11, y1 + c + 8, 32);
      memcpy(&s20, y2 + c, 32); memcpy(&s21, y2 + c + 8, 32); memcpy(&s30, y3 + c, 32); memcpy(&s31, y3 + c + 8, 32);
      for (k = k0; k < k1; k++) {
        const float *ak_ = a + (size_t)k * ak, b0 = ak_[0], b1 = ak_[ai], b2 = ak_[2 * ai], b3 = ak_[3 * ai];
        const mlsys__dense_v8 v0 = {b0, b0, b0, b0, b0, b0, b0, b0}, v1 = {b1, b1, b1, b1, b1, b1, b1, b1}, v2 = {b2, b2, b2, b2, b2, b2, b2, b2},
                             v3 = {b3, b3, b3, b3, b3, b3, b3, b3};
        memcpy(&x0, X + (size_t)k * xs + c, 32);
        memcpy(&x1, X + (size_t)k * xs + c + 8, 32);
        s00 += v0 * x0; s01 += v0 * x1; s10 += v1 * x0; s11 += v1 * x1;
        s20 += v2 * x0; s21 += v2 * x1; s30 += v3 * x0; s31 += v3 * x1;
      }
      memcpy(y0 + c, &s00, 32); memcpy(y0 + c + 8, &s01, 32); memcpy(y1 + c, &s10, 32); memcpy(y1 + c + 8, &s11, 32);
      memcpy(y2 + c, &s20, 32); memcpy(y2 + c + 8, &s21, 32); memcpy(y3 + c, &s30, 32); memcpy(y3 + c + 8, &s31, 32);
    }
    for (; c < Cc; c++) {
      float t0 = y0[c], t1 = y1[c], t2 = y2[c], t3 = y3[c];
      for (k = k0; k < k1; k++) {
        const float *ak_ = a + (size_t)k * ak, x = X[(size_t)k * xs + c];
        t0 += ak_[0] * x; t1 += ak_[ai] * x; t2 += ak_[2 * ai] * x; t3 += ak_[3 * ai] * x;
      }
      y0[c] = t0; y1[c] = t1; y2[c] = t2; y3[c] = t3;
    }
  }
  for (; i < I; i++) {
    float *y = Y + (size_t)i * ys;
    const float *a = A + (size_t)i * ai;
    for (c = 0; c + 8 <= Cc; c += 8) {
      mlsys__dense_v8 s, x;
      memcpy(&s, y + c, 32);
      for (k = k0; k < k1; k++) {
        const float b = a[(size_t)k * ak];
        const mlsys__dense_v8 v = {b, b, b, b, b, b, b, b};
        memcpy(&x, X + (size_t)k * xs + c, 32);
        s += v * x;
      }
      memcpy(y + c, &s, 32);
    }
    for (; c < Cc; c++) {
      float t = y[c];
      for (k = k0; k < k1; k++) t += a[(size_t)k * ak] * X[(size_t)k * xs + c];
      y[c] = t;
    }
  }
}
#else
static inline void mlsys__dense_gemm_block(float *Y, size_t ys, const float *A, size_t ai, size_t ak, const float *X, size_t xs, int I, int k0,
                                          int k1, int Cc) {
  int i, c, k;
  for (i = 0; i < I; i++)
    for (c = 0; c < Cc; c++) {
      float t = Y[(size_t)i * ys + c];
      for (k = k0; k < k1; k++) t += A[(size_t)i * ai + (size_t)k * ak] * X[(size_t)k * xs + c];
      Y[(size_t)i * ys + c] = t;
    }
}
#endif

/* Matmul backward for out = inp·wᵀ + bias (inp N×C, w OC×C): dinp = dout·w (overwritten; tasks of 64 rows, the sum
   over o ascending in blocks of 64 outputs whose weights stay in cache), dw += doutᵀ·inp and db += Σ_r dout (tasks
   of 32 outputs, the sum over r ascending in blocks of 64 rows). Every element has one summation order whatever the
   thread or tile, so threads do not change the bits. */
typedef struct { float *dinp, *dw, *db; const float *dout, *inp, *w; int N, C, OC; } mlsys__dense_mmb;
MLSYS__DENSE_CLONES static void mlsys__dense_mmb_dinp(void *ctx, long i, int worker) {
  const mlsys__dense_mmb *a = (const mlsys__dense_mmb *)ctx;
  const int r0 = (int)i * 64, r1 = r0 + 64 < a->N ? r0 + 64 : a->N, C = a->C, OC = a->OC;
  int o;
  (void)worker;
  memset(a->dinp + (size_t)r0 * C, 0, (size_t)(r1 - r0) * C * sizeof(float));
  for (o = 0; o < OC; o += 64)
    mlsys__dense_gemm_block(a->dinp + (size_t)r0 * C, (size_t)C, a->dout + (size_t)r0 * OC, (size_t)OC, 1, a->w, (size_t)C, r1 - r0, o,
                           o + 64 < OC ? o + 64 : OC, C);
}
MLSYS__DENSE_CLONES static void mlsys__dense_mmb_dw(void *ctx, long i, int worker) {
  const mlsys__dense_mmb *a = (const mlsys__dense_mmb *)ctx;
  const int o0 = (int)i * 32, o1 = o0 + 32 < a->OC ? o0 + 32 : a->OC, C = a->C, OC = a->OC;
  int r, o;
  (void)worker;
  for (r = 0; r < a->N; r += 64)
    mlsys__dense_gemm_block(a->dw + (size_t)o0 * C, (size_t)C, a->dout + o0, 1, (size_t)OC, a->inp, (size_t)C, o1 - o0, r, r + 64 < a->N ? r + 64 : a->N,
                           C);
  if (a->db)
    for (o = o0; o < o1; o++) {
      float s = 0;
      for (r = 0; r < a->N; r++) s += a->dout[(size_t)r * OC + o];
      a->db[o] += s;
    }
}
MLSYS_DEF void mlsys_dense_matmul_backward(mlsys_pool *pool, float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int N,
                                   int C, int OC) {
  mlsys__dense_mmb a;
  a.dinp = dinp; a.dw = dw; a.db = db; a.dout = dout; a.inp = inp; a.w = w; a.N = N; a.C = C; a.OC = OC;
  if (dinp) mlsys_pool_for(pool, (N + 63) / 64, mlsys__dense_mmb_dinp, &a);
  mlsys_pool_for(pool, (OC + 31) / 32, mlsys__dense_mmb_dw, &a);
}
#ifdef __cplusplus
}
#endif

#endif /* MLSYS_COMMON_IMPLEMENTATION_DONE */
#endif /* MLSYS_COMMON_IMPLEMENTATION */

/*
MIT License. Copyright (c) 2026 the mlsys authors.
Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation the
rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit
persons to whom the Software is furnished to do so, subject to the following conditions: The above copyright notice
and this permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
*/
