/* mlsys_collective.h — collective-algorithm synthesis from communication sketches (TACCL).        MIT licence.

   DOC BLOCK: see the end of this comment; the manual is written last (issue 5 in progress).

   USAGE: in exactly one .c file
       #define MLSYS_COLLECTIVE_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_collective.h"
   link: -llpsolve55 -lcolamd -ldl -lm -lpthread  (plus CBC/Clp when built with -DMLSYS_MILP_CBC)
*/
#ifndef MLSYS_COLLECTIVE_H
#define MLSYS_COLLECTIVE_H

#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_COLLECTIVE_IMPLEMENTATION
#define MLSYS_COLLECTIVE_IMPLEMENTATION
#endif
#endif

#include "mlsys_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   1. Cost model (thesis §5.3, Table 5.1): sending s bytes over link (a,b) costs α + β·s, β in µs per MB
      (MB = 2^20 bytes throughout this header).
   ================================================================================================================ */
typedef struct { double alpha_us, beta_us_per_mb; } mlsys_coll_cost;
typedef struct {
  const char *name;
  mlsys_coll_cost nvlink;   /* one NVLink (NDv2: a double link has β/2) or one NVSwitch port (DGX-2) */
  mlsys_coll_cost ib;       /* one InfiniBand NIC used by one sender */
} mlsys_coll_profile;
/* "ndv2-thesis" {0.7,46 | 1.7,106}, "dgx2-thesis" {0.7,8 | 1.7,106} (Table 5.1), "ndv2-repo" {0.3,46 | 2.6,105},
   "dgx2-repo" {0.3,8 | 2.6,105} (the authors' topo-*-1MB.json). Returns MLSYS_ERR_ARG for an unknown name. */
MLSYS_DEF mlsys_status mlsys_coll_profile_preset(const char *name, mlsys_coll_profile *out);
MLSYS_DEF double mlsys_coll_lat(mlsys_coll_cost c, double bytes);          /* α + β·bytes/2^20 (µs) */
/* Least-squares fit of α, β from m measurements: T_seq[i] = n[i]·(α + β·s[i]) (n sends one after the other) and
   T_bat[i] = α + n[i]·β·s[i] (the same n chunks as one send), s in MB (§5.3 profiler). */
MLSYS_DEF mlsys_status mlsys_coll_fit_alpha_beta(const double *size_mb, const int *n, const double *t_seq,
                                                 const double *t_bat, int m, double *alpha_us,
                                                 double *beta_us_per_mb);

/* ================================================================================================================
   2. Topologies. A topology is a directed graph over GPU ranks (rank = node·G + local GPU) with a kind and a cost
      per link, plus "switches": sets of ranks whose links share one send port and one receive port per rank
      (NVSwitch hyperedges, §5.4.1), and NICs (IB links out of / into GPUs that share a NIC share that NIC).
   ================================================================================================================ */
enum { MLSYS_COLL_LINK_NONE = 0, MLSYS_COLL_LINK_NVLINK = 1, MLSYS_COLL_LINK_SWITCH = 2, MLSYS_COLL_LINK_IB = 3 };
enum { MLSYS_COLL_UC_FREE = 0, MLSYS_COLL_UC_MAX = 1, MLSYS_COLL_UC_MIN = 2, MLSYS_COLL_UC_AUTO = 3 };

typedef struct {
  int n;          /* member ranks */
  int *ranks;
  int policy;     /* MLSYS_COLL_UC_* (switch-hyperedge strategy, §5.4.2) */
} mlsys_coll_switch;

typedef struct {
  char name[64];
  int nranks, nnodes, gpus_per_node, nics_per_node;
  unsigned char *kind;      /* [a*nranks+b] MLSYS_COLL_LINK_*; NONE = no link */
  mlsys_coll_cost *cost;    /* [a*nranks+b] */
  int *sw;                  /* [a*nranks+b] index of the switch both ends belong to (switched link), else -1 */
  int nswitch;
  mlsys_coll_switch *sws;
  int *nic;                 /* [nranks] global NIC index of each rank (node·nics_per_node + k), -1 = none */
  int nic_serial;           /* 1 → IB transfers through one NIC are serial per direction (physical model) */
} mlsys_coll_topo;

/* Physical topologies. Multi-node copies get an IB link between every pair of GPUs on different nodes (the NICs
   are the shared resource; nic_serial = 1). p = NULL → the matching "*-thesis" preset. */
MLSYS_DEF mlsys_status mlsys_coll_topo_ndv2(int nnodes, const mlsys_coll_profile *p, mlsys_coll_topo *out);
MLSYS_DEF mlsys_status mlsys_coll_topo_dgx2(int nnodes, const mlsys_coll_profile *p, mlsys_coll_topo *out);
/* Single-kind topologies for tests and users: every link has cost c. */
MLSYS_DEF mlsys_status mlsys_coll_topo_ring(int nranks, int bidirectional, mlsys_coll_cost c, mlsys_coll_topo *out);
MLSYS_DEF mlsys_status mlsys_coll_topo_full(int nranks, int switched, mlsys_coll_cost c, mlsys_coll_topo *out);
/* Empty topology (no links) to fill by hand with mlsys_coll_topo_set_link / mlsys_coll_topo_add_switch. */
MLSYS_DEF mlsys_status mlsys_coll_topo_empty(int nranks, int gpus_per_node, mlsys_coll_topo *out);
MLSYS_DEF void mlsys_coll_topo_set_link(mlsys_coll_topo *t, int a, int b, int kind, mlsys_coll_cost c);
MLSYS_DEF mlsys_status mlsys_coll_topo_add_switch(mlsys_coll_topo *t, int n, const int *ranks, int policy);
MLSYS_DEF mlsys_status mlsys_coll_topo_copy(const mlsys_coll_topo *t, mlsys_coll_topo *out);
MLSYS_DEF void mlsys_coll_topo_free(mlsys_coll_topo *t);
/* The authors' topology profile JSON (taccl/examples/topo/NAME.json: gpus_per_node, nics_per_node, alpha,
   node_betas_list, node_invbws_list, remote_alpha, remote_beta, remote_invbw). Values there are per-chunk costs
   at the profile's chunk size in a time unit tied to it (name suffix _1KB → 0.01 µs, _32KB → 0.1 µs, _1MB → 1 µs;
   or the keys "chunk_bytes" and "time_unit_us"); they are converted to α (µs) and β (µs/MB). The intra-node lat of
   the repo is the invbw (α folded in). The known name prefixes NDv2 / DGX2 select the link matrix. */
MLSYS_DEF mlsys_status mlsys_coll_profile_parse_json(const char *text, size_t len, const char *source,
                                                     mlsys_coll_profile *out, int *gpus_per_node, int *nics_per_node,
                                                     char *kind_name, size_t kind_len);

/* ================================================================================================================
   3. Communication sketches (§5.4.1, Appendix B.1) in the authors' JSON schema.
   ================================================================================================================ */
enum { MLSYS_COLL_INTRA_NONE = 0, MLSYS_COLL_INTRA_SWITCH = 1, MLSYS_COLL_INTRA_MINMAX = 2, MLSYS_COLL_INTRA_MAXMIN = 3 };
enum { MLSYS_COLL_H_THESIS = 0, MLSYS_COLL_H10 = 10, MLSYS_COLL_H12 = 12, MLSYS_COLL_H14 = 14 };
typedef struct { int offset, group, block; } mlsys_coll_sym;  /* block 0 → group (the repo's scope) */
typedef struct {
  int nnodes;                    /* 0 → 1 */
  int intranode;                 /* MLSYS_COLL_INTRA_* */
  int nswitch;                   /* switch groups in local ids */
  int *switch_n; int **switch_ranks; int *switch_policy;
  int has_internode;
  unsigned char *internode_conn; /* [G*G]: local i may send to local j of any other node */
  double *beta_split;            /* [G] or NULL → the repo rule β·(senders·dsts per sender)/NICs per node */
  int *relay_sender;             /* [G] local GPU whose IB link carries chunks of local GPU i, -1 = any; or NULL */
  int enforce_ordering;
  int nsym; mlsys_coll_sym *sym;
  int chunkup;                   /* C (input_chunkup); 0 → 1 */
  double input_bytes;            /* hyperparameters.input_size, 0 if absent (the caller's size is used) */
  /* solver knobs (not in the JSON; zero = default) */
  int heuristic;                 /* MLSYS_COLL_H_* */
  double gamma;                  /* |γ| of eq. 5.11 relative to the typical lat; 0 → 0.01 */
  int max_contig;                /* merge window; 0 → 6 */
  double route_time_limit, sched_time_limit;   /* seconds; 0 → 60 and 60 */
  int backend;                   /* mlsys_milp_backend; 0 → lp_solve up to 4000 binaries, CBC above when built */
  int no_symmetry;               /* 1 → ignore symmetry_offsets (for tests: symmetry invariance) */
  int verbose;
} mlsys_coll_sketch;
MLSYS_DEF mlsys_status mlsys_coll_sketch_parse_json(const char *text, size_t len, const char *source,
                                                    int gpus_per_node, mlsys_coll_sketch *out);
MLSYS_DEF void mlsys_coll_sketch_free(mlsys_coll_sketch *s);
/* A sketch with no restrictions: physical intra-node links, fully-connected inter-node, C = 1. */
MLSYS_DEF void mlsys_coll_sketch_default(mlsys_coll_sketch *s);
/* Logical topology (§3.2 of the spec): physical links the sketch allows, switch hyperedges with their policies,
   IB links with β scaled for NIC sharing. chunk_bytes picks the automatic uc policy (> 1 MB → uc-min). */
MLSYS_DEF mlsys_status mlsys_coll_logical_topo(const mlsys_coll_topo *phys, const mlsys_coll_sketch *sk,
                                               double chunk_bytes, mlsys_coll_topo *logical);

/* ================================================================================================================
   4. Collectives (§5.5): chunks, pre- and post-conditions.
   ================================================================================================================ */
enum { MLSYS_COLL_ALLGATHER = 0, MLSYS_COLL_ALLTOALL = 1, MLSYS_COLL_REDUCESCATTER = 2, MLSYS_COLL_ALLREDUCE = 3 };
typedef struct {
  int kind, nranks, chunkup, nchunks;
  int combining;             /* RS / AR: every rank holds a contribution of every chunk */
  unsigned char *pre, *post; /* [c*nranks+r] */
  int *origin;               /* [c]: AG/A2A: the rank holding c at the start; RS/AR: the owner o (c = o·C+k) */
} mlsys_coll_def;
/* Chunk numbering: AG c = r·C + k; A2A c = (s·N + d)·C + k; RS/AR c = o·C + k. */
MLSYS_DEF mlsys_status mlsys_coll_def_make(int kind, int nranks, int chunkup, mlsys_coll_def *out);
MLSYS_DEF void mlsys_coll_def_free(mlsys_coll_def *d);
MLSYS_DEF const char *mlsys_coll_kind_name(int kind);          /* "allgather", ... */
MLSYS_DEF int mlsys_coll_kind_parse(const char *s);            /* -1 if unknown */

/* ================================================================================================================
   5. Algorithms: a list of transfers. The array order is the schedule's order: transfers on one link run in
      array order; on a switch port (or a serial NIC) transfers run in array order too. Transfers with the same
      group id (≥ 0) on the same link are one merged send (one α).
   ================================================================================================================ */
enum { MLSYS_COLL_XF_COPY = 0, MLSYS_COLL_XF_REDUCE = 1 };
typedef struct {
  int chunk, src, dst;
  double t_send, t_arrive;   /* µs (filled by the scheduler / simulator) */
  int group;                 /* merge group id, -1 = alone */
  unsigned char op;          /* MLSYS_COLL_XF_*: REDUCE = the receiver adds the sender's partial sum */
} mlsys_coll_xfer;
typedef struct {
  int kind, nranks, chunkup, nchunks;
  double chunk_bytes;        /* bytes of one chunk */
  int nxfer, cap;
  mlsys_coll_xfer *x;
  double time_us;            /* model time of the schedule (stage-3 objective or simulated) */
} mlsys_coll_algo;
MLSYS_DEF mlsys_status mlsys_coll_algo_init(mlsys_coll_algo *a, int kind, int nranks, int chunkup, double chunk_bytes);
MLSYS_DEF mlsys_status mlsys_coll_algo_push(mlsys_coll_algo *a, int chunk, int src, int dst, int op, int group);
MLSYS_DEF mlsys_status mlsys_coll_algo_copy(const mlsys_coll_algo *a, mlsys_coll_algo *out);
MLSYS_DEF void mlsys_coll_algo_free(mlsys_coll_algo *a);

/* ================================================================================================================
   6. Simulation and verification.
   ================================================================================================================ */
typedef struct {
  int merge_intra;           /* 1 → merged groups on intra-node links pay one α too (default: only IB merges) */
  double reduce_us_per_mb;   /* cost of a reduction at the receiver (0 = the α–β model of the thesis) */
} mlsys_coll_sim_opts;
typedef struct {
  double makespan_us;
  double algbw_gbps;         /* output bytes per rank (AG/AR: N·C chunks; A2A/RS: input) / makespan, GB = 1e9 */
  double busbw_gbps;         /* nccl-tests convention: AR 2(n−1)/n, others (n−1)/n of algbw */
  int deadlock;              /* 1 → the orders are cyclic (no valid execution) */
} mlsys_coll_sim_result;
/* Event semantics equal to the stage-3 MILP: a transfer starts when its chunk is at the sender (for a reduce: all
   partials scheduled into the sender before it have arrived), the previous transfer on its link has finished, and
   the previous transfer with a different peer on the same switch port / serial NIC has finished. Writes t_send and
   t_arrive into a (so the caller sees the trace). */
MLSYS_DEF mlsys_status mlsys_coll_simulate(const mlsys_coll_topo *t, mlsys_coll_algo *a, const mlsys_coll_sim_opts *o,
                                           mlsys_coll_sim_result *r);
/* Symbolic check (§3.13): every transfer uses an existing link and sends data the sender holds; every (chunk, rank)
   in post ends with exactly the right contents (AG/A2A: the origin's chunk, received once; RS/AR: the sum of all N
   contributions, each exactly once). Returns MLSYS_OK or MLSYS_ERR_INFEASIBLE with the first problem in msg. */
MLSYS_DEF mlsys_status mlsys_coll_verify(const mlsys_coll_def *d, const mlsys_coll_topo *t, const mlsys_coll_algo *a,
                                         char *msg, size_t msglen);

/* ================================================================================================================
   7. Baselines (spec §4), in the same form.
   ================================================================================================================ */
/* NCCL-style ring(s): ring = nrings × nranks ranks; each ring carries 1/nrings of every chunk as its own sub-chunk
   (the algorithm's chunkup becomes chunkup·nrings). AG, RS, AR (= RS ring then AG ring). A2A is not a ring. */
MLSYS_DEF mlsys_status mlsys_coll_algo_ring(int kind, int nranks, const int *ring, int nrings, int chunkup,
                                            double buffer_bytes, mlsys_coll_algo *out);
/* The natural rings of a physical topology (NDv2: 0-1-3-2-6-7-5-4 per node; DGX-2: 0..15; chained across nodes). */
MLSYS_DEF mlsys_status mlsys_coll_default_ring(const mlsys_coll_topo *t, int *ring);
/* Direct: every rank sends each chunk straight to each destination over the link between them (A2A: the NCCL p2p
   all-pairs algorithm). Fails with MLSYS_ERR_INFEASIBLE if some pair has no link. */
MLSYS_DEF mlsys_status mlsys_coll_algo_direct(int kind, const mlsys_coll_topo *t, int chunkup, double buffer_bytes,
                                              mlsys_coll_algo *out);
/* Hierarchical (Horovod-style): intra-node phase, inter-node phase between same-local-rank GPUs, intra-node phase. */
MLSYS_DEF mlsys_status mlsys_coll_algo_hierarchical(int kind, const mlsys_coll_topo *t, int chunkup,
                                                    double buffer_bytes, mlsys_coll_algo *out);

/* ================================================================================================================
   8. Synthesis (§5.5): routing MILP → heuristic ordering → contiguity/scheduling MILP.
   ================================================================================================================ */
typedef struct {
  double route_s, order_s, sched_s, total_s;
  double route_obj, route_bound, route_gap;   /* stage 1 (relaxed-bandwidth time, µs) */
  double sched_obj, sched_bound, sched_gap;   /* stage 3 (µs) */
  int route_status, sched_status;             /* mlsys_milp_status */
  int route_vars, route_bins, route_rows, sched_vars, sched_bins, sched_rows;
  int route_bins_unsym;                       /* binaries before symmetry substitution */
  int nmerged;                                /* transfers merged into another's send */
} mlsys_coll_stats;
/* Stage 1: fills a with the used (chunk, link) transfers, unordered (t_send = routing-model send time). */
MLSYS_DEF mlsys_status mlsys_coll_route(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                                        double chunk_bytes, mlsys_coll_algo *a, mlsys_coll_stats *st);
/* Stage 2: reorders a's transfers by the greedy heuristic (sk->heuristic); reverse = 1 for inverted (RS) schedules. */
MLSYS_DEF mlsys_status mlsys_coll_order(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                                        mlsys_coll_algo *a);
/* Stage 3: chooses merges on IB links (window max_contig) and exact times; a->time_us = objective. */
MLSYS_DEF mlsys_status mlsys_coll_schedule(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk,
                                           const mlsys_coll_def *d, mlsys_coll_algo *a, mlsys_coll_stats *st);
/* All stages for AG/A2A; RS by inverting the AG (§5.7); AR = RS then AG. buffer_bytes = per-rank input size for
   AG/A2A, per-rank buffer size for RS/AR. */
MLSYS_DEF mlsys_status mlsys_coll_synthesize(const mlsys_coll_topo *phys, const mlsys_coll_sketch *sk, int kind,
                                             double buffer_bytes, mlsys_coll_algo *out, mlsys_coll_stats *st);
MLSYS_DEF mlsys_status mlsys_coll_invert(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk,
                                         const mlsys_coll_algo *ag, mlsys_coll_algo *rs, mlsys_coll_stats *st);
MLSYS_DEF mlsys_status mlsys_coll_concat_allreduce(const mlsys_coll_algo *rs, const mlsys_coll_algo *ag,
                                                   mlsys_coll_algo *ar);
/* Shortest-path set SP(c) (§3.3): ranks on some hop-shortest path from a pre rank to a post rank; out[nranks]. */
MLSYS_DEF mlsys_status mlsys_coll_sp_set(const mlsys_coll_topo *t, const mlsys_coll_def *d, int chunk, unsigned char *out);

/* ================================================================================================================
   9. Programs (§5.6): per-GPU threadblocks of steps (TACCL-EF = MSCCL XML), lowering and execution.
   ================================================================================================================ */
enum { MLSYS_COLL_OP_SEND = 0, MLSYS_COLL_OP_RECV, MLSYS_COLL_OP_RCS, MLSYS_COLL_OP_RRS, MLSYS_COLL_OP_RRC,
       MLSYS_COLL_OP_RRCS, MLSYS_COLL_OP_COPY, MLSYS_COLL_OP_REDUCE, MLSYS_COLL_OP_NOP };
enum { MLSYS_COLL_BUF_IN = 0, MLSYS_COLL_BUF_OUT = 1, MLSYS_COLL_BUF_SCRATCH = 2 };
typedef struct {
  unsigned char op, srcbuf, dstbuf, hasdep;   /* hasdep: another step depends on this one */
  int srcoff, dstoff, cnt;                    /* offsets and count in chunks (slots) */
  int depid, deps;                            /* threadblock id and step of this step's dependency, -1 = none */
} mlsys_coll_step;
typedef struct { int id, send, recv, chan, nsteps; mlsys_coll_step *steps; } mlsys_coll_tb;  /* send/recv peer or -1 */
typedef struct { int id, i_chunks, o_chunks, s_chunks, ntbs; mlsys_coll_tb *tbs; } mlsys_coll_gpu;
typedef struct {
  char name[64], proto[16];
  int kind;                  /* MLSYS_COLL_* */
  int ngpus, nchannels, nchunksperloop, inplace, outofplace, instances;
  unsigned long long min_bytes, max_bytes;
  mlsys_coll_gpu *gpus;      /* [ngpus] */
} mlsys_coll_prog;
/* Lower an algorithm to a program: buffer slots, instructions (fused rcs/rrc/rrs/rrcs), cross-threadblock
   dependencies, threadblocks (≤ 1 send peer and ≤ 1 recv peer each), channels, and `instances` copies. */
MLSYS_DEF mlsys_status mlsys_coll_lower(const mlsys_coll_def *d, const mlsys_coll_algo *a, int instances,
                                        mlsys_coll_prog *out);
MLSYS_DEF void mlsys_coll_prog_free(mlsys_coll_prog *p);
/* Abstract interpretation of the program: deadlock freedom, slot contents, post-conditions. */
MLSYS_DEF mlsys_status mlsys_coll_prog_verify(const mlsys_coll_def *d, const mlsys_coll_prog *p, char *msg, size_t msglen);
MLSYS_DEF mlsys_status mlsys_coll_prog_write_xml(const mlsys_coll_prog *p, FILE *f);
MLSYS_DEF mlsys_status mlsys_coll_prog_read_xml(const char *text, size_t len, const char *source, mlsys_coll_prog *out);

enum { MLSYS_COLL_I32 = 0, MLSYS_COLL_I64, MLSYS_COLL_F32, MLSYS_COLL_F64 };
enum { MLSYS_COLL_SUM = 0, MLSYS_COLL_PROD, MLSYS_COLL_MIN, MLSYS_COLL_MAX };
/* CPU reference executor: in[r] holds i_chunks·chunk_elems elements, out[r] o_chunks·chunk_elems. Threadblocks
   are interleaved at random (seed) among the legal orders; the result must not depend on the seed. */
MLSYS_DEF mlsys_status mlsys_coll_exec_cpu(const mlsys_coll_prog *p, int dtype, int redop, void *const *in,
                                           void *const *out, size_t chunk_elems, uint64_t seed);
/* Reference collective (naive) on the same buffers layout, for checking executors. */
MLSYS_DEF mlsys_status mlsys_coll_reference(int kind, int nranks, int chunkup, int dtype, int redop,
                                            void *const *in, void *const *out, size_t chunk_elems);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_COLLECTIVE_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#ifdef MLSYS_COLLECTIVE_IMPLEMENTATION
#ifndef MLSYS_COLLECTIVE_IMPLEMENTATION_DONE
#define MLSYS_COLLECTIVE_IMPLEMENTATION_DONE

#include <string.h>
#include <math.h>
#include <ctype.h>
#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif


/* ---------------------------------------------------------------------------------------------------------------
   Small shared pieces: names, collectives, algorithms, topologies
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__COLL_MB 1048576.0

MLSYS_DEF double mlsys_coll_lat(mlsys_coll_cost c, double bytes) { return c.alpha_us + c.beta_us_per_mb * bytes / MLSYS__COLL_MB; }

static const char *const mlsys__coll_kind_names[4] = {"allgather", "alltoall", "reducescatter", "allreduce"};
MLSYS_DEF const char *mlsys_coll_kind_name(int kind) { return kind >= 0 && kind < 4 ? mlsys__coll_kind_names[kind] : "?"; }
MLSYS_DEF int mlsys_coll_kind_parse(const char *s) {
  int k;
  if (!s) return -1;
  for (k = 0; k < 4; k++)
    if (!strcmp(s, mlsys__coll_kind_names[k])) return k;
  if (!strcmp(s, "ag")) return MLSYS_COLL_ALLGATHER;
  if (!strcmp(s, "a2a")) return MLSYS_COLL_ALLTOALL;
  if (!strcmp(s, "rs")) return MLSYS_COLL_REDUCESCATTER;
  if (!strcmp(s, "ar")) return MLSYS_COLL_ALLREDUCE;
  return -1;
}

MLSYS_DEF mlsys_status mlsys_coll_def_make(int kind, int nranks, int chunkup, mlsys_coll_def *out) {
  int N = nranks, C = chunkup, c, r;
  memset(out, 0, sizeof *out);
  if (kind < 0 || kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "unknown collective kind %d", kind);
  if (N < 1 || N > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "nranks %d out of range [1, 4096]", N);
  if (C < 1 || C > 1024) return mlsys_set_error(MLSYS_ERR_ARG, "chunkup %d out of range [1, 1024]", C);
  out->kind = kind; out->nranks = N; out->chunkup = C;
  out->nchunks = kind == MLSYS_COLL_ALLTOALL ? N * N * C : N * C;
  out->combining = kind == MLSYS_COLL_REDUCESCATTER || kind == MLSYS_COLL_ALLREDUCE;
  out->pre = (unsigned char *)mlsys_calloc((size_t)out->nchunks * N, 1);
  out->post = (unsigned char *)mlsys_calloc((size_t)out->nchunks * N, 1);
  out->origin = (int *)mlsys_calloc((size_t)out->nchunks, sizeof(int));
  if (!out->pre || !out->post || !out->origin) { mlsys_coll_def_free(out); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (c = 0; c < out->nchunks; c++) {
    size_t row = (size_t)c * N;
    switch (kind) {
      case MLSYS_COLL_ALLGATHER:
        out->origin[c] = c / C; out->pre[row + c / C] = 1;
        for (r = 0; r < N; r++) out->post[row + r] = 1;
        break;
      case MLSYS_COLL_ALLTOALL: {
        int s = c / C / N, d = (c / C) % N;
        out->origin[c] = s; out->pre[row + s] = 1; out->post[row + d] = 1;
        break;
      }
      default:
        out->origin[c] = c / C;
        for (r = 0; r < N; r++) out->pre[row + r] = 1;
        if (kind == MLSYS_COLL_REDUCESCATTER) out->post[row + c / C] = 1;
        else for (r = 0; r < N; r++) out->post[row + r] = 1;
    }
  }
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_coll_def_free(mlsys_coll_def *d) {
  if (!d) return;
  mlsys_free(d->pre); mlsys_free(d->post); mlsys_free(d->origin);
  memset(d, 0, sizeof *d);
}

MLSYS_DEF mlsys_status mlsys_coll_algo_init(mlsys_coll_algo *a, int kind, int nranks, int chunkup, double chunk_bytes) {
  memset(a, 0, sizeof *a);
  if (kind < 0 || kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "unknown collective kind %d", kind);
  if (nranks < 1 || chunkup < 1) return mlsys_set_error(MLSYS_ERR_ARG, "nranks and chunkup must be positive");
  if (!(chunk_bytes > 0) || !isfinite(chunk_bytes)) return mlsys_set_error(MLSYS_ERR_ARG, "chunk size must be positive (got %g bytes)", chunk_bytes);
  a->kind = kind; a->nranks = nranks; a->chunkup = chunkup; a->chunk_bytes = chunk_bytes;
  a->nchunks = kind == MLSYS_COLL_ALLTOALL ? nranks * nranks * chunkup : nranks * chunkup;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_coll_algo_push(mlsys_coll_algo *a, int chunk, int src, int dst, int op, int group) {
  mlsys_coll_xfer *x;
  if (a->nxfer == a->cap) {
    int nc = a->cap ? a->cap * 2 : 64;
    mlsys_coll_xfer *nx = (mlsys_coll_xfer *)mlsys_realloc_array(a->x, (size_t)nc, sizeof *nx);
    if (!nx) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    a->x = nx; a->cap = nc;
  }
  x = &a->x[a->nxfer++];
  x->chunk = chunk; x->src = src; x->dst = dst; x->op = (unsigned char)op; x->group = group;
  x->t_send = x->t_arrive = 0;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_coll_algo_copy(const mlsys_coll_algo *a, mlsys_coll_algo *out) {
  *out = *a;
  out->x = NULL; out->cap = 0;
  if (a->nxfer) {
    out->x = (mlsys_coll_xfer *)mlsys_alloc((size_t)a->nxfer, sizeof *out->x);
    if (!out->x) { out->nxfer = 0; return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    memcpy(out->x, a->x, (size_t)a->nxfer * sizeof *out->x);
    out->cap = a->nxfer;
  }
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_coll_algo_free(mlsys_coll_algo *a) {
  if (!a) return;
  mlsys_free(a->x);
  memset(a, 0, sizeof *a);
}

MLSYS_DEF void mlsys_coll_topo_free(mlsys_coll_topo *t) {
  int i;
  if (!t) return;
  for (i = 0; i < t->nswitch; i++) mlsys_free(t->sws[i].ranks);
  mlsys_free(t->sws); mlsys_free(t->kind); mlsys_free(t->cost); mlsys_free(t->sw); mlsys_free(t->nic);
  memset(t, 0, sizeof *t);
}
MLSYS_DEF mlsys_status mlsys_coll_topo_empty(int nranks, int gpus_per_node, mlsys_coll_topo *out) {
  size_t n2;
  int i;
  memset(out, 0, sizeof *out);
  if (nranks < 1 || nranks > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "nranks %d out of range [1, 4096]", nranks);
  if (gpus_per_node < 1 || nranks % gpus_per_node)
    return mlsys_set_error(MLSYS_ERR_ARG, "%d ranks do not split into nodes of %d GPUs", nranks, gpus_per_node);
  n2 = (size_t)nranks * nranks;
  out->nranks = nranks; out->gpus_per_node = gpus_per_node; out->nnodes = nranks / gpus_per_node;
  out->kind = (unsigned char *)mlsys_calloc(n2, 1);
  out->cost = (mlsys_coll_cost *)mlsys_calloc(n2, sizeof *out->cost);
  out->sw = (int *)mlsys_alloc(n2, sizeof(int));
  out->nic = (int *)mlsys_alloc((size_t)nranks, sizeof(int));
  if (!out->kind || !out->cost || !out->sw || !out->nic) { mlsys_coll_topo_free(out); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  for (i = 0; i < (int)n2; i++) out->sw[i] = -1;
  for (i = 0; i < nranks; i++) out->nic[i] = -1;
  snprintf(out->name, sizeof out->name, "custom%d", nranks);
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_coll_topo_set_link(mlsys_coll_topo *t, int a, int b, int kind, mlsys_coll_cost c) {
  size_t i;
  if (a < 0 || b < 0 || a >= t->nranks || b >= t->nranks || a == b) return;
  i = (size_t)a * t->nranks + b;
  t->kind[i] = (unsigned char)kind;
  t->cost[i] = c;
  if (kind == MLSYS_COLL_LINK_NONE) t->sw[i] = -1;
}
/* A switch hyperedge: every ordered pair of members becomes a switched link (kind SWITCH unless the pair already
   has a link, whose cost is kept). */
MLSYS_DEF mlsys_status mlsys_coll_topo_add_switch(mlsys_coll_topo *t, int n, const int *ranks, int policy) {
  mlsys_coll_switch *ns;
  int i, j, id = t->nswitch;
  if (n < 2) return mlsys_set_error(MLSYS_ERR_ARG, "a switch needs at least 2 ranks (got %d)", n);
  for (i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= t->nranks) return mlsys_set_error(MLSYS_ERR_ARG, "switch member %d is not a rank (0..%d)", ranks[i], t->nranks - 1);
    for (j = 0; j < i; j++)
      if (ranks[j] == ranks[i]) return mlsys_set_error(MLSYS_ERR_ARG, "switch lists rank %d twice", ranks[i]);
  }
  ns = (mlsys_coll_switch *)mlsys_realloc_array(t->sws, (size_t)id + 1, sizeof *ns);
  if (!ns) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  t->sws = ns;
  ns[id].n = n; ns[id].policy = policy;
  ns[id].ranks = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!ns[id].ranks) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  memcpy(ns[id].ranks, ranks, (size_t)n * sizeof(int));
  t->nswitch++;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      if (i != j) {
        size_t k = (size_t)ranks[i] * t->nranks + ranks[j];
        if (t->kind[k] == MLSYS_COLL_LINK_NONE) t->kind[k] = MLSYS_COLL_LINK_SWITCH;
        t->sw[k] = id;
      }
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_coll_topo_copy(const mlsys_coll_topo *t, mlsys_coll_topo *out) {
  mlsys_status st = mlsys_coll_topo_empty(t->nranks, t->gpus_per_node, out);
  size_t n2 = (size_t)t->nranks * t->nranks;
  int i;
  if (st) return st;
  memcpy(out->name, t->name, sizeof out->name);
  out->nics_per_node = t->nics_per_node; out->nic_serial = t->nic_serial;
  memcpy(out->kind, t->kind, n2); memcpy(out->cost, t->cost, n2 * sizeof *t->cost);
  memcpy(out->nic, t->nic, (size_t)t->nranks * sizeof(int));
  for (i = 0; i < t->nswitch; i++)
    if ((st = mlsys_coll_topo_add_switch(out, t->sws[i].n, t->sws[i].ranks, t->sws[i].policy))) { mlsys_coll_topo_free(out); return st; }
  memcpy(out->kind, t->kind, n2); memcpy(out->sw, t->sw, n2 * sizeof(int));
  return MLSYS_OK;
}

/* @@TOPO2@@ */


#include "wip/coll_input.inc"
#include "wip/coll_prog.inc"


#ifdef __cplusplus
}
#endif
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION_DONE */
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION */
