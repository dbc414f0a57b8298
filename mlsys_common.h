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
     8. CUDA helpers (MLSYS_CUDA)

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
     MLSYS_CUDA              the CUDA helpers of section 8 (include from a .cu file or with the CUDA runtime)

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

/* A one-line progress display on stderr, only when stderr is a terminal (and enabled): "label: text  12.3 s". */
typedef struct { const char *label; double start, last; int enabled, shown; } mlsys_progress;
MLSYS_DEF void mlsys_progress_begin(mlsys_progress *p, const char *label, int enabled);
MLSYS_DEF void mlsys_progress_update(mlsys_progress *p, const char *fmt, ...) MLSYS__PRINTF(2, 3); /* ≤ 10 Hz */
MLSYS_DEF void mlsys_progress_end(mlsys_progress *p);

/* CSV (RFC 4180): write one field, quoted when needed; the caller writes ',' and '\n'. */
MLSYS_DEF void mlsys_csv_field(FILE *f, const char *s);

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
typedef enum { MLSYS_SOLVER_LPSOLVE = 0, MLSYS_SOLVER_CBC = 1 } mlsys_milp_backend;
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
   name may be NULL ("x<index>" in exported files); names must not contain spaces. */
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
   (every row labelled, readable by glpsol --lp, cbc and lp_solve -fmps/-wlp). */
MLSYS_DEF mlsys_status mlsys_milp_write(const mlsys_milp *m, const char *path);
MLSYS_DEF int mlsys_milp_has_backend(mlsys_milp_backend b);
MLSYS_DEF const char *mlsys_milp_backend_name(mlsys_milp_backend b);
MLSYS_DEF const char *mlsys_milp_status_str(mlsys_milp_status s);

typedef struct {
  mlsys_milp_backend backend;    /* 0 → lp_solve */
  double time_limit;             /* seconds; 0 → none */
  double mip_gap_rel, mip_gap_abs;   /* stop when proven within these gaps; 0 → backend defaults (≈ optimal) */
  int relax;                     /* 1 → solve the LP relaxation (integrality ignored) */
  const double *incumbent;       /* optional known feasible point [nvars]: CBC uses it as a MIP start; lp_solve
                                    uses its objective as a cutoff. Returned when the solver finds nothing better. */
  int use_cutoff; double cutoff; /* only look for solutions with objective better than cutoff (incl. constant) */
  int branch_ceiling;            /* lp_solve: 0 → floor branch first (default), 1 → ceiling first, 2 → automatic */
  int lpsolve_bb_rule;           /* lp_solve: set_bb_rule() value (NODE_* flags); 0 → lp_solve's default */
  int threads;                   /* CBC threads; 0 → 1 (deterministic) */
  int verbose;                   /* 1 → solver log on stdout */
  /* Called on every improved solution (objective incl. constant, seconds since start); nonzero → stop. */
  int (*on_improve)(void *ud, double objective, double seconds);
  /* Polled during the solve; nonzero → stop (result FEASIBLE with the best so far, or NO_SOLUTION). */
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
   MLSYS_ERR_UNSUPPORTED (backend not compiled in) or MLSYS_ERR_NOMEM. r->status is set in every case. */
MLSYS_DEF mlsys_status mlsys_milp_solve(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys_milp_result *r);
MLSYS_DEF void mlsys_milp_result_free(mlsys_milp_result *r);
/* Σ obj·x + constant for a point (to price an incumbent), and the largest row/bound violation of a point. */
MLSYS_DEF double mlsys_milp_eval(const mlsys_milp *m, const double *x);
MLSYS_DEF double mlsys_milp_max_violation(const mlsys_milp *m, const double *x, int check_integrality);

#ifdef __cplusplus
}
#endif

/* ================================================================================================================
   8. CUDA helpers
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
static inline int mlsys_cuda_device_count(void) {
  int c = 0;
  if (cudaGetDeviceCount(&c) != cudaSuccess) { cudaGetLastError(); return 0; }
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
#include "wip/json_impl.inc"

/* ---------------------------------------------------------------------------------------------------------------
   7. MILP
   --------------------------------------------------------------------------------------------------------------- */
#include "wip/milp_impl.inc"

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
