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
/* Stage-2 ordering keys (spec §3.6). AUTO (0) runs every key and keeps the order whose schedule simulates fastest. */
enum { MLSYS_COLL_H_AUTO = 0, MLSYS_COLL_H_THESIS = 1, MLSYS_COLL_H_ASAP = 2, MLSYS_COLL_H10 = 10, MLSYS_COLL_H12 = 12,
       MLSYS_COLL_H14 = 14 };
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
  int no_warm_start;             /* 1 → solve the routing MILP without the heuristic routing (tests, benchmarks) */
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
/* The natural rings of a physical topology (NDv2: 0-1-3-2-6-7-5-4 per node; DGX-2: 0..15; chained across nodes).
   default_rings: nrings rings in rings[j*nranks + k]; ring j is the node ring rotated by j (NDv2: odd rings run
   the other way round; DGX-2: rotated by 2j so each ring leaves a node through a different NIC). */
MLSYS_DEF mlsys_status mlsys_coll_default_ring(const mlsys_coll_topo *t, int *ring);
MLSYS_DEF mlsys_status mlsys_coll_default_rings(const mlsys_coll_topo *t, int nrings, int *rings);
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
  double route_lb;                            /* combinatorial lower bound (dilation, integer link capacity) */
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
                                             double buffer_bytes, mlsys_coll_algo *out, mlsys_coll_topo *logical,
                                             mlsys_coll_stats *st);   /* logical: the topology the algorithm is on (NULL = not wanted) */
MLSYS_DEF mlsys_status mlsys_coll_invert(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk,
                                         const mlsys_coll_algo *ag, mlsys_coll_algo *rs, mlsys_coll_stats *st);
MLSYS_DEF mlsys_status mlsys_coll_concat_allreduce(const mlsys_coll_algo *rs, const mlsys_coll_algo *ag,
                                                   mlsys_coll_algo *ar);
/* The reversed topology an inverted (REDUCESCATTER) schedule runs on. */
MLSYS_DEF mlsys_status mlsys_coll_topo_transpose(const mlsys_coll_topo *t, mlsys_coll_topo *out);
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

/* ---------------------------------------------------------------------------------------------------------------
   Physical topologies (spec §2.2)
   --------------------------------------------------------------------------------------------------------------- */
/* NDv2 / DGX-1 hybrid cube-mesh: 2 = double NVLink (β/2), 1 = single. Double pairs form 0-1-3-2-6-7-5-4-0. */
static const unsigned char mlsys__coll_ndv2_links[8][8] = {
    {0, 2, 1, 1, 2, 0, 0, 0}, {2, 0, 1, 2, 0, 1, 0, 0}, {1, 1, 0, 2, 0, 0, 2, 0}, {1, 2, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 2, 1, 1}, {0, 1, 0, 0, 2, 0, 1, 2}, {0, 0, 2, 0, 1, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};
static const int mlsys__coll_ndv2_ring[8] = {0, 1, 3, 2, 6, 7, 5, 4};

/* IB links between every pair of GPUs on different nodes; the NICs are the shared, serial resource. */
static void mlsys__coll_add_ib(mlsys_coll_topo *t, mlsys_coll_cost ib) {
  int a, b, G = t->gpus_per_node;
  for (a = 0; a < t->nranks; a++) {
    t->nic[a] = (a / G) * t->nics_per_node + (a % G) * t->nics_per_node / G;
    for (b = 0; b < t->nranks; b++)
      if (a / G != b / G) mlsys_coll_topo_set_link(t, a, b, MLSYS_COLL_LINK_IB, ib);
  }
  t->nic_serial = 1;
}

MLSYS_DEF mlsys_status mlsys_coll_topo_ndv2(int nnodes, const mlsys_coll_profile *p, mlsys_coll_topo *out) {
  mlsys_coll_profile def;
  mlsys_status st;
  int n, i, j;
  if (!p) { mlsys_coll_profile_preset("ndv2-thesis", &def); p = &def; }
  if (nnodes < 1 || nnodes > 64) return mlsys_set_error(MLSYS_ERR_ARG, "NDv2: nnodes %d out of range [1, 64]", nnodes);
  if ((st = mlsys_coll_topo_empty(8 * nnodes, 8, out))) return st;
  out->nics_per_node = 1;
  for (n = 0; n < nnodes; n++)
    for (i = 0; i < 8; i++)
      for (j = 0; j < 8; j++)
        if (mlsys__coll_ndv2_links[i][j]) {
          mlsys_coll_cost c = p->nvlink;
          if (mlsys__coll_ndv2_links[i][j] == 2) c.beta_us_per_mb *= 0.5;  /* double NVLink: twice the bandwidth */
          mlsys_coll_topo_set_link(out, n * 8 + i, n * 8 + j, MLSYS_COLL_LINK_NVLINK, c);
        }
  mlsys__coll_add_ib(out, p->ib);
  if (nnodes == 1) out->nic_serial = 0;
  snprintf(out->name, sizeof out->name, "%dxNDv2", nnodes);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_coll_topo_dgx2(int nnodes, const mlsys_coll_profile *p, mlsys_coll_topo *out) {
  mlsys_coll_profile def;
  mlsys_status st;
  int n, i, r[16];
  if (!p) { mlsys_coll_profile_preset("dgx2-thesis", &def); p = &def; }
  if (nnodes < 1 || nnodes > 64) return mlsys_set_error(MLSYS_ERR_ARG, "DGX-2: nnodes %d out of range [1, 64]", nnodes);
  if ((st = mlsys_coll_topo_empty(16 * nnodes, 16, out))) return st;
  out->nics_per_node = 8;   /* GPUs 2i and 2i+1 share NIC i (Appendix B.1) */
  for (n = 0; n < nnodes; n++) {
    for (i = 0; i < 16; i++) r[i] = n * 16 + i;
    if ((st = mlsys_coll_topo_add_switch(out, 16, r, MLSYS_COLL_UC_FREE))) { mlsys_coll_topo_free(out); return st; }
    for (i = 0; i < 16 * 16; i++)
      if (i / 16 != i % 16) out->cost[(size_t)(n * 16 + i / 16) * out->nranks + n * 16 + i % 16] = p->nvlink;
  }
  mlsys__coll_add_ib(out, p->ib);
  if (nnodes == 1) out->nic_serial = 0;
  snprintf(out->name, sizeof out->name, "%dxDGX-2", nnodes);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_coll_topo_ring(int nranks, int bidirectional, mlsys_coll_cost c, mlsys_coll_topo *out) {
  mlsys_status st;
  int i;
  if ((st = mlsys_coll_topo_empty(nranks, nranks, out))) return st;
  for (i = 0; i < nranks; i++) {
    mlsys_coll_topo_set_link(out, i, (i + 1) % nranks, MLSYS_COLL_LINK_NVLINK, c);
    if (bidirectional) mlsys_coll_topo_set_link(out, (i + 1) % nranks, i, MLSYS_COLL_LINK_NVLINK, c);
  }
  snprintf(out->name, sizeof out->name, "ring%d%s", nranks, bidirectional ? "-bidir" : "");
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_coll_topo_full(int nranks, int switched, mlsys_coll_cost c, mlsys_coll_topo *out) {
  mlsys_status st;
  int i, j, *r;
  if ((st = mlsys_coll_topo_empty(nranks, nranks, out))) return st;
  for (i = 0; i < nranks; i++)
    for (j = 0; j < nranks; j++) mlsys_coll_topo_set_link(out, i, j, switched ? MLSYS_COLL_LINK_SWITCH : MLSYS_COLL_LINK_NVLINK, c);
  if (switched && nranks > 1) {
    r = (int *)mlsys_alloc((size_t)nranks, sizeof(int));
    if (!r) { mlsys_coll_topo_free(out); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    for (i = 0; i < nranks; i++) r[i] = i;
    st = mlsys_coll_topo_add_switch(out, nranks, r, MLSYS_COLL_UC_FREE);
    mlsys_free(r);
    if (st) { mlsys_coll_topo_free(out); return st; }
  }
  snprintf(out->name, sizeof out->name, "full%d%s", nranks, switched ? "-switch" : "");
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   Logical topology from a sketch (spec §3.2)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_coll_logical_topo(const mlsys_coll_topo *phys, const mlsys_coll_sketch *sk,
                                               double chunk_bytes, mlsys_coll_topo *lt) {
  int G = phys->gpus_per_node, N = phys->nranks, nn = phys->nnodes, a, b, i, j, k, n;
  int nodes = sk->nnodes > 0 ? sk->nnodes : 1;
  mlsys_status st;
  memset(lt, 0, sizeof *lt);
  if (nodes != nn)
    return mlsys_set_error(MLSYS_ERR_ARG, "sketch is for %d node(s) but the topology has %d", nodes, nn);
  if ((st = mlsys_coll_topo_empty(N, G, lt))) return st;
  snprintf(lt->name, sizeof lt->name, "%s", phys->name);
  lt->nics_per_node = phys->nics_per_node;
  memcpy(lt->nic, phys->nic, (size_t)N * sizeof(int));
  /* intra-node links: the physical ones */
  for (a = 0; a < N; a++)
    for (b = 0; b < N; b++)
      if (a / G == b / G && phys->kind[(size_t)a * N + b])
        mlsys_coll_topo_set_link(lt, a, b, phys->kind[(size_t)a * N + b], phys->cost[(size_t)a * N + b]);
  if (sk->intranode == MLSYS_COLL_INTRA_SWITCH && sk->nswitch > 0) {
    /* the sketch's switch hyperedges, copied into every node, replace the physical switches */
    int *r = (int *)mlsys_alloc((size_t)G, sizeof(int));
    if (!r) { mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    for (n = 0; n < nn; n++)
      for (k = 0; k < sk->nswitch; k++) {
        int pol = sk->switch_policy ? sk->switch_policy[k] : MLSYS_COLL_UC_AUTO;
        if (sk->switch_n[k] > G) { mlsys_free(r); mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_ARG, "sketch switch %d has %d GPUs but a node has %d", k, sk->switch_n[k], G); }
        for (i = 0; i < sk->switch_n[k]; i++) {
          if (sk->switch_ranks[k][i] < 0 || sk->switch_ranks[k][i] >= G) { mlsys_free(r); mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_ARG, "unknown GPU id %d in sketch switch %d (GPUs per node: %d)", sk->switch_ranks[k][i], k, G); }
          r[i] = n * G + sk->switch_ranks[k][i];
        }
        for (i = 0; i < sk->switch_n[k]; i++)
          for (j = 0; j < sk->switch_n[k]; j++)
            if (i != j && !phys->kind[(size_t)r[i] * N + r[j]]) {
              mlsys_free(r); mlsys_coll_topo_free(lt);
              return mlsys_set_error(MLSYS_ERR_ARG, "sketch switch %d joins GPUs %d and %d, which have no physical link", k, r[i], r[j]);
            }
        if (pol == MLSYS_COLL_UC_AUTO) pol = chunk_bytes > MLSYS__COLL_MB ? MLSYS_COLL_UC_MIN : MLSYS_COLL_UC_MAX;  /* §5.4.2 */
        if ((st = mlsys_coll_topo_add_switch(lt, sk->switch_n[k], r, pol))) { mlsys_free(r); mlsys_coll_topo_free(lt); return st; }
      }
    mlsys_free(r);
  } else {
    for (k = 0; k < phys->nswitch; k++)
      if ((st = mlsys_coll_topo_add_switch(lt, phys->sws[k].n, phys->sws[k].ranks, MLSYS_COLL_UC_FREE))) { mlsys_coll_topo_free(lt); return st; }
  }
  if (nn > 1) {
    /* inter-node links from the sketch (§2.3); β scaled for NIC sharing by the repo's rule or beta_split */
    int nsend = 0, maxd = 0;
    double scale;
    unsigned char *conn = (unsigned char *)mlsys_alloc((size_t)G * G, 1);
    if (!conn) { mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
    for (i = 0; i < G * G; i++) conn[i] = sk->has_internode && sk->internode_conn ? sk->internode_conn[i] : 1;
    for (i = 0; i < G; i++) {
      int d = 0;
      for (j = 0; j < G; j++) d += conn[i * G + j] != 0;
      nsend += d > 0;
      if (d > maxd) maxd = d;
    }
    if (!nsend) { mlsys_free(conn); mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "sketch disconnects the nodes: internode_conn has no sender"); }
    scale = (double)nsend * maxd / (phys->nics_per_node > 0 ? phys->nics_per_node : 1);
    for (a = 0; a < N; a++)
      for (b = 0; b < N; b++)
        if (a / G != b / G && conn[(a % G) * G + b % G]) {
          mlsys_coll_cost c = phys->cost[(size_t)a * N + b];
          double s = sk->beta_split && sk->beta_split[a % G] > 0 ? sk->beta_split[a % G] : scale;
          if (!phys->kind[(size_t)a * N + b]) { mlsys_free(conn); mlsys_coll_topo_free(lt); return mlsys_set_error(MLSYS_ERR_ARG, "sketch asks for link %d -> %d, which the topology lacks", a, b); }
          c.beta_us_per_mb *= s;
          mlsys_coll_topo_set_link(lt, a, b, MLSYS_COLL_LINK_IB, c);
        }
    mlsys_free(conn);
    lt->nic_serial = nn > 2;  /* [repo] more than 2 nodes: one inter-node send / receive at a time per NIC */
  }
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   Shortest-path sets (spec §3.3)
   --------------------------------------------------------------------------------------------------------------- */
static mlsys_status mlsys__coll_hops(const mlsys_coll_topo *t, int *dist /* [N*N] */) {
  int N = t->nranks, s, h, q0, q1, *q = (int *)mlsys_alloc((size_t)N, sizeof(int));
  if (!q) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  for (s = 0; s < N; s++) {
    int *d = dist + (size_t)s * N;
    for (h = 0; h < N; h++) d[h] = INT_MAX;
    d[s] = 0; q[0] = s; q0 = 0; q1 = 1;
    while (q0 < q1) {
      int u = q[q0++], v;
      for (v = 0; v < N; v++)
        if (t->kind[(size_t)u * N + v] && d[v] == INT_MAX) { d[v] = d[u] + 1; q[q1++] = v; }
    }
  }
  mlsys_free(q);
  return MLSYS_OK;
}
static void mlsys__coll_sp_from_dist(const mlsys_coll_topo *t, const mlsys_coll_def *d, const int *dist, int c, unsigned char *out) {
  int N = t->nranks, u, v, w;
  memset(out, 0, (size_t)N);
  for (u = 0; u < N; u++) {
    if (!d->pre[(size_t)c * N + u]) continue;
    for (v = 0; v < N; v++) {
      int duv;
      if (!d->post[(size_t)c * N + v]) continue;
      duv = dist[(size_t)u * N + v];
      if (duv == INT_MAX) continue;
      for (w = 0; w < N; w++) {
        int a = dist[(size_t)u * N + w], b = dist[(size_t)w * N + v];
        if (a != INT_MAX && b != INT_MAX && a + b == duv) out[w] = 1;
      }
    }
  }
}
MLSYS_DEF mlsys_status mlsys_coll_sp_set(const mlsys_coll_topo *t, const mlsys_coll_def *d, int chunk, unsigned char *out) {
  int *dist;
  mlsys_status st;
  if (chunk < 0 || chunk >= d->nchunks || d->nranks != t->nranks) return mlsys_set_error(MLSYS_ERR_ARG, "chunk %d / ranks do not match", chunk);
  dist = (int *)mlsys_alloc((size_t)t->nranks * t->nranks, sizeof(int));
  if (!dist) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  if ((st = mlsys__coll_hops(t, dist))) { mlsys_free(dist); return st; }
  mlsys__coll_sp_from_dist(t, d, dist, chunk, out);
  mlsys_free(dist);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   Precedence structure shared by the simulator and the stage-3 MILP, so that both see the same constraints
   (spec §3.12: simulated time = stage-3 objective). For transfer i with link (a,b):
     data   — the transfer(s) that bring c to a before it may leave (copy: the one delivery; reduce: every partial
              reduced into a earlier in the array; a copy out of a combining owner: every partial into it),
     link   — the transfers on (a,b) in array order,
     port   — on a switch port (eqs. 5.20/5.21) or a serial NIC, each transfer precedes the next one on a
              different link.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  int n;
  int *dp_off, *dp;                 /* data predecessors of each transfer (CSR) */
  int *pe_from, *pe_to, npe;        /* port edges */
  int *lnk;                         /* [n] link index a*N+b */
  int *lnext;                       /* [n] next transfer on the same link, -1 */
} mlsys__coll_prec;

static void mlsys__coll_prec_free(mlsys__coll_prec *p) {
  mlsys_free(p->dp_off); mlsys_free(p->dp); mlsys_free(p->pe_from); mlsys_free(p->pe_to);
  mlsys_free(p->lnk); mlsys_free(p->lnext);
  memset(p, 0, sizeof *p);
}

static int mlsys__coll_is_pre(const mlsys_coll_algo *a, int c, int r) {
  int N = a->nranks, C = a->chunkup;
  switch (a->kind) {
    case MLSYS_COLL_ALLGATHER: return c / C == r;
    case MLSYS_COLL_ALLTOALL: return c / C / N == r;
    default: return 1;
  }
}
static int mlsys__coll_owner(const mlsys_coll_algo *a, int c) {
  return a->kind == MLSYS_COLL_ALLTOALL ? c / a->chunkup / a->nranks : c / a->chunkup;
}

/* Builds the structure; with strict = 1 a transfer whose data is not available earlier in the array is an error
   naming it (the array order must be an execution order). */
static mlsys_status mlsys__coll_prec_build(const mlsys_coll_topo *t, const mlsys_coll_algo *a, mlsys__coll_prec *p) {
  int N = a->nranks, n = a->nxfer, i, k;
  size_t ncr = (size_t)a->nchunks * N;
  int *last_copy = NULL, *red_head = NULL, *red_next = NULL, *cnt = NULL, *lastl = NULL;
  int comb = a->kind == MLSYS_COLL_REDUCESCATTER || a->kind == MLSYS_COLL_ALLREDUCE;
  int nports, *plast = NULL, *pnext_diff = NULL;
  mlsys_status st = MLSYS_OK;
  memset(p, 0, sizeof *p);
  p->n = n;
  if (t->nranks != N) return mlsys_set_error(MLSYS_ERR_ARG, "algorithm has %d ranks, topology %d", N, t->nranks);
  last_copy = (int *)mlsys_alloc(ncr, sizeof(int));
  red_head = (int *)mlsys_alloc(ncr, sizeof(int));
  red_next = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  cnt = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  lastl = (int *)mlsys_alloc((size_t)N * N, sizeof(int));
  p->dp_off = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  p->lnk = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  p->lnext = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!last_copy || !red_head || !red_next || !cnt || !lastl || !p->dp_off || !p->lnk || !p->lnext) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < (int)ncr; i++) last_copy[i] = red_head[i] = -1;
  for (i = 0; i < N * N; i++) lastl[i] = -1;
  /* pass 1: validity, link chains and the number of data predecessors */
  for (i = 0; i < n; i++) {
    const mlsys_coll_xfer *x = &a->x[i];
    size_t src_cr;
    if (x->chunk < 0 || x->chunk >= a->nchunks || x->src < 0 || x->src >= N || x->dst < 0 || x->dst >= N || x->src == x->dst) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "transfer %d (chunk %d, %d -> %d) is out of range", i, x->chunk, x->src, x->dst);
      goto done;
    }
    if (!t->kind[(size_t)x->src * N + x->dst]) {
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "transfer %d sends chunk %d over %d -> %d, which is not a link", i, x->chunk, x->src, x->dst);
      goto done;
    }
    if (x->op == MLSYS_COLL_XF_REDUCE && !comb) {
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "transfer %d reduces chunk %d in a %s", i, x->chunk, mlsys_coll_kind_name(a->kind));
      goto done;
    }
    p->lnk[i] = x->src * N + x->dst;
    p->lnext[i] = -1;
    if (lastl[p->lnk[i]] >= 0) p->lnext[lastl[p->lnk[i]]] = i;
    lastl[p->lnk[i]] = i;
    src_cr = (size_t)x->chunk * N + x->src;
    if (!comb) {
      if (!mlsys__coll_is_pre(a, x->chunk, x->src)) {
        if (last_copy[src_cr] < 0) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "transfer %d sends chunk %d from rank %d before any transfer brings it there", i, x->chunk, x->src); goto done; }
        cnt[i] = 1;
      }
    } else if (x->op == MLSYS_COLL_XF_REDUCE || x->src == mlsys__coll_owner(a, x->chunk)) {
      for (k = red_head[src_cr]; k >= 0; k = red_next[k]) cnt[i]++;
    } else {
      if (last_copy[src_cr] < 0) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "transfer %d copies chunk %d out of rank %d, which never received its final value", i, x->chunk, x->src); goto done; }
      cnt[i] = 1;
    }
    if (x->op == MLSYS_COLL_XF_REDUCE) {
      size_t d = (size_t)x->chunk * N + x->dst;
      red_next[i] = red_head[d]; red_head[d] = i;
    } else {
      last_copy[(size_t)x->chunk * N + x->dst] = i;
    }
  }
  for (i = 0; i < n; i++) p->dp_off[i + 1] = p->dp_off[i] + cnt[i];
  p->dp = (int *)mlsys_alloc((size_t)p->dp_off[n] + 1, sizeof(int));
  if (!p->dp) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  /* pass 2: fill the data predecessors (same scan, so "earlier in the array" holds) */
  for (i = 0; i < (int)ncr; i++) last_copy[i] = red_head[i] = -1;
  for (i = 0; i < n; i++) {
    const mlsys_coll_xfer *x = &a->x[i];
    size_t src_cr = (size_t)x->chunk * N + x->src;
    int o = p->dp_off[i];
    if (!comb) {
      if (cnt[i]) p->dp[o] = last_copy[src_cr];
    } else if (x->op == MLSYS_COLL_XF_REDUCE || x->src == mlsys__coll_owner(a, x->chunk)) {
      for (k = red_head[src_cr]; k >= 0; k = red_next[k]) p->dp[o++] = k;
    } else {
      p->dp[o] = last_copy[src_cr];
    }
    if (x->op == MLSYS_COLL_XF_REDUCE) {
      size_t d = (size_t)x->chunk * N + x->dst;
      red_next[i] = red_head[d]; red_head[d] = i;
    } else {
      last_copy[(size_t)x->chunk * N + x->dst] = i;
    }
  }
  /* port edges: switch send/recv ports per (rank, switch), NIC send/recv ports when serial */
  {
    int nsw = t->nswitch, nnic = 0, port[4], np, j;
    for (i = 0; i < N; i++) if (t->nic[i] + 1 > nnic) nnic = t->nic[i] + 1;
    nports = 2 * N * (nsw > 0 ? nsw : 1) + 2 * nnic;
    plast = (int *)mlsys_alloc((size_t)nports, sizeof(int));
    pnext_diff = (int *)mlsys_alloc((size_t)n * 4 + 1, sizeof(int));
    p->pe_from = (int *)mlsys_alloc((size_t)n * 4 + 1, sizeof(int));
    p->pe_to = (int *)mlsys_alloc((size_t)n * 4 + 1, sizeof(int));
    if (!plast || !pnext_diff || !p->pe_from || !p->pe_to) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
    /* Build, per port, the chain in array order; the edge of entry e goes to the first later entry on another
       link. Walking backwards, remember per port the latest entry and the latest entry on a link != that one. */
    {
      int *pl1 = plast, *pl2 = (int *)mlsys_alloc((size_t)nports, sizeof(int));
      if (!pl2) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
      for (j = 0; j < nports; j++) pl1[j] = pl2[j] = -1;
      for (i = n - 1; i >= 0; i--) {
        const mlsys_coll_xfer *x = &a->x[i];
        size_t l = (size_t)x->src * N + x->dst;
        np = 0;
        if (t->sw[l] >= 0) {
          port[np++] = (x->src * (nsw > 0 ? nsw : 1) + t->sw[l]) * 2;
          port[np++] = (x->dst * (nsw > 0 ? nsw : 1) + t->sw[l]) * 2 + 1;
        }
        if (t->nic_serial && t->kind[l] == MLSYS_COLL_LINK_IB && t->nic[x->src] >= 0 && t->nic[x->dst] >= 0) {
          port[np++] = 2 * N * (nsw > 0 ? nsw : 1) + 2 * t->nic[x->src];
          port[np++] = 2 * N * (nsw > 0 ? nsw : 1) + 2 * t->nic[x->dst] + 1;
        }
        for (j = 0; j < np; j++) {
          int q = port[j], nxt = -1;
          /* first later entry on a different link: pl1 if its link differs, else pl2 */
          if (pl1[q] >= 0) nxt = p->lnk[pl1[q]] != (int)l ? pl1[q] : pl2[q];
          if (nxt >= 0) { p->pe_from[p->npe] = i; p->pe_to[p->npe] = nxt; p->npe++; }
          if (pl1[q] >= 0 && p->lnk[pl1[q]] != (int)l) pl2[q] = pl1[q];
          pl1[q] = i;
        }
      }
      mlsys_free(pl2);
    }
  }
done:
  mlsys_free(last_copy); mlsys_free(red_head); mlsys_free(red_next); mlsys_free(cnt); mlsys_free(lastl);
  mlsys_free(plast); mlsys_free(pnext_diff);
  if (st) mlsys__coll_prec_free(p);
  return st;
}

/* Whether transfers on link l may merge (one α for the group): IB links, and intra-node links on request. */
static int mlsys__coll_mergeable(const mlsys_coll_topo *t, int l, int merge_intra) {
  return t->kind[l] == MLSYS_COLL_LINK_IB || merge_intra;
}

/* Units: merged groups (same group id, consecutive on one mergeable link) or single transfers. unit[i] = the
   first transfer of i's unit; usize[first] = members. */
static mlsys_status mlsys__coll_units(const mlsys_coll_topo *t, const mlsys_coll_algo *a, const mlsys__coll_prec *p,
                                      int merge_intra, int *unit, int *usize) {
  int i, n = a->nxfer;
  for (i = 0; i < n; i++) { unit[i] = -1; usize[i] = 0; }
  for (i = 0; i < n; i++) {
    int k;
    if (unit[i] >= 0) continue;
    unit[i] = i; usize[i] = 1;
    if (a->x[i].group < 0 || !mlsys__coll_mergeable(t, p->lnk[i], merge_intra)) continue;
    for (k = p->lnext[i]; k >= 0 && a->x[k].group == a->x[i].group; k = p->lnext[k]) { unit[k] = i; usize[i]++; }
  }
  /* a group id reused later on the same link after another group is a schedule error */
  for (i = 0; i < n; i++)
    if (a->x[i].group >= 0 && unit[i] == i && mlsys__coll_mergeable(t, p->lnk[i], merge_intra)) {
      int m;
      for (m = p->lnext[i]; m >= 0; m = p->lnext[m])
        if (unit[m] != i && a->x[m].group == a->x[i].group)
          return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "merge group %d on link %d -> %d is not consecutive in the link's order", a->x[i].group, a->x[i].src, a->x[i].dst);
    }
  return MLSYS_OK;
}

static double mlsys__coll_unit_lat(const mlsys_coll_topo *t, const mlsys_coll_algo *a, int i, int k, double reduce_us_per_mb) {
  mlsys_coll_cost c = t->cost[(size_t)a->x[i].src * a->nranks + a->x[i].dst];
  double mb = a->chunk_bytes / MLSYS__COLL_MB;
  return c.alpha_us + c.beta_us_per_mb * mb * k + (a->x[i].op == MLSYS_COLL_XF_REDUCE ? reduce_us_per_mb * mb * k : 0);
}

MLSYS_DEF mlsys_status mlsys_coll_simulate(const mlsys_coll_topo *t, mlsys_coll_algo *a, const mlsys_coll_sim_opts *o,
                                           mlsys_coll_sim_result *r) {
  mlsys_coll_sim_opts def;
  mlsys__coll_prec p;
  int n = a->nxfer, i, e, *unit = NULL, *usize = NULL, *indeg = NULL, *adj_off = NULL, *adj = NULL, *q = NULL, q0, q1, done_n = 0;
  double *start = NULL, *lat = NULL, mk = 0;
  mlsys_status st;
  int ne = 0;
  memset(r, 0, sizeof *r);
  if (!o) { memset(&def, 0, sizeof def); o = &def; }
  if ((st = mlsys__coll_prec_build(t, a, &p))) return st;
  unit = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  usize = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  indeg = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  adj_off = (int *)mlsys_calloc((size_t)n + 2, sizeof(int));
  start = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  lat = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  q = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  if (!unit || !usize || !indeg || !adj_off || !start || !lat || !q) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  if ((st = mlsys__coll_units(t, a, &p, o->merge_intra, unit, usize))) goto done;
  for (i = 0; i < n; i++)
    if (unit[i] == i) lat[i] = mlsys__coll_unit_lat(t, a, i, usize[i], o->reduce_us_per_mb);
  /* edges between units: count, then fill (CSR by source unit) */
  for (e = 0; e < 2; e++) {
    int pass_ne = 0;
#define MLSYS__COLL_EDGE(u_, v_)                                   \
  do {                                                             \
    int uu = unit[u_], vv = unit[v_];                              \
    if (uu != vv) {                                                \
      if (e == 0) adj_off[uu + 1]++;                               \
      else { adj[adj_off[uu] + q[uu]++] = vv; indeg[vv]++; }       \
      pass_ne++;                                                   \
    }                                                              \
  } while (0)
    if (e == 1) {
      for (i = 0; i < n; i++) adj_off[i + 1] += adj_off[i];
      ne = adj_off[n];
      adj = (int *)mlsys_alloc((size_t)ne + 1, sizeof(int));
      if (!adj) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
      for (i = 0; i < n; i++) q[i] = 0;
    }
    for (i = 0; i < n; i++) {
      int k;
      for (k = p.dp_off[i]; k < p.dp_off[i + 1]; k++) MLSYS__COLL_EDGE(p.dp[k], i);
      if (p.lnext[i] >= 0) MLSYS__COLL_EDGE(i, p.lnext[i]);
    }
    for (i = 0; i < p.npe; i++) MLSYS__COLL_EDGE(p.pe_from[i], p.pe_to[i]);
#undef MLSYS__COLL_EDGE
    (void)pass_ne;
  }
  /* longest path by Kahn's algorithm over units */
  q0 = q1 = 0;
  for (i = 0; i < n; i++)
    if (unit[i] == i && indeg[i] == 0) q[q1++] = i;
  while (q0 < q1) {
    int u = q[q0++], k;
    double f = start[u] + lat[u];
    done_n++;
    if (f > mk) mk = f;
    for (k = adj_off[u]; k < adj_off[u + 1]; k++) {
      int v = adj[k];
      if (f > start[v]) start[v] = f;
      if (--indeg[v] == 0) q[q1++] = v;
    }
  }
  {
    int nunits = 0;
    for (i = 0; i < n; i++) nunits += unit[i] == i;
    if (done_n < nunits) {
      r->deadlock = 1;
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "the schedule's link and port orders are cyclic (deadlock): %d of %d sends can never start", nunits - done_n, nunits);
      goto done;
    }
  }
  for (i = 0; i < n; i++) {
    a->x[i].t_send = start[unit[i]];
    a->x[i].t_arrive = start[unit[i]] + lat[unit[i]];
  }
  r->makespan_us = mk;
  a->time_us = mk;
  if (mk > 0) {
    double bytes = (double)a->nranks * a->chunkup * a->chunk_bytes, N = a->nranks;
    r->algbw_gbps = bytes / mk * 1e-3;
    r->busbw_gbps = r->algbw_gbps * (a->kind == MLSYS_COLL_ALLREDUCE ? 2.0 * (N - 1) / N : (N - 1) / N);
  }
done:
  mlsys__coll_prec_free(&p);
  mlsys_free(unit); mlsys_free(usize); mlsys_free(indeg); mlsys_free(adj_off); mlsys_free(adj);
  mlsys_free(start); mlsys_free(lat); mlsys_free(q);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   Symbolic verifier (spec §3.13)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_coll_verify(const mlsys_coll_def *d, const mlsys_coll_topo *t, const mlsys_coll_algo *a,
                                         char *msg, size_t msglen) {
  int N = d->nranks, W = (N + 63) / 64, i, c, r, w;
  size_t ncr = (size_t)d->nchunks * N;
  uint64_t *st = NULL;        /* [c][r][W] contributions (combining) or origin bit (copy) */
  int *recv_cnt = NULL;
  double *arrive = NULL;
  int have_times = 0;
  mlsys_status rs = MLSYS_OK;
  char dummy[8];
  if (!msg || !msglen) { msg = dummy; msglen = sizeof dummy; }
  msg[0] = 0;
#define MLSYS__COLL_VFAIL(...) do { snprintf(msg, msglen, __VA_ARGS__); rs = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "%s", msg); goto done; } while (0)
  if (a->kind != d->kind || a->nranks != N || a->chunkup != d->chunkup || a->nchunks != d->nchunks)
    MLSYS__COLL_VFAIL("algorithm (%s, %d ranks, chunkup %d) does not match the collective (%s, %d ranks, chunkup %d)",
                      mlsys_coll_kind_name(a->kind), a->nranks, a->chunkup, mlsys_coll_kind_name(d->kind), N, d->chunkup);
  if (t->nranks != N) MLSYS__COLL_VFAIL("topology has %d ranks, algorithm %d", t->nranks, N);
  st = (uint64_t *)mlsys_calloc(ncr * W, sizeof(uint64_t));
  recv_cnt = (int *)mlsys_calloc(ncr, sizeof(int));
  arrive = (double *)mlsys_alloc(ncr, sizeof(double));
  if (!st || !recv_cnt || !arrive) { rs = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < a->nxfer; i++) if (a->x[i].t_arrive > 0) have_times = 1;
  for (c = 0; c < d->nchunks; c++)
    for (r = 0; r < N; r++) {
      size_t k = (size_t)c * N + r;
      arrive[k] = 0;
      if (d->pre[k]) {
        int who = d->combining ? r : d->origin[c];
        st[k * W + who / 64] |= 1ull << (who % 64);
      }
    }
  for (i = 0; i < a->nxfer; i++) {
    const mlsys_coll_xfer *x = &a->x[i];
    size_t ks, kd;
    int empty = 1, full = 1;
    if (x->chunk < 0 || x->chunk >= d->nchunks || x->src < 0 || x->src >= N || x->dst < 0 || x->dst >= N || x->src == x->dst)
      MLSYS__COLL_VFAIL("transfer %d (chunk %d, %d -> %d) is out of range", i, x->chunk, x->src, x->dst);
    if (!t->kind[(size_t)x->src * N + x->dst])
      MLSYS__COLL_VFAIL("transfer %d sends chunk %d over %d -> %d, which is not a link of the topology", i, x->chunk, x->src, x->dst);
    ks = (size_t)x->chunk * N + x->src; kd = (size_t)x->chunk * N + x->dst;
    for (w = 0; w < W; w++) {
      if (st[ks * W + w]) empty = 0;
      if (st[ks * W + w] != (w == W - 1 && N % 64 ? (1ull << (N % 64)) - 1 : ~0ull)) full = 0;
    }
    if (empty) MLSYS__COLL_VFAIL("transfer %d sends chunk %d from rank %d, which does not hold it", i, x->chunk, x->src);
    if (have_times && x->t_send + 1e-6 * (1 + fabs(x->t_send)) < arrive[ks])
      MLSYS__COLL_VFAIL("transfer %d sends chunk %d from rank %d at %.6g us, before it arrives there (%.6g us)", i, x->chunk, x->src, x->t_send, arrive[ks]);
    if (have_times && x->t_arrive + 1e-9 < x->t_send)
      MLSYS__COLL_VFAIL("transfer %d arrives (%.6g us) before it is sent (%.6g us)", i, x->t_arrive, x->t_send);
    if (x->op == MLSYS_COLL_XF_REDUCE) {
      if (!d->combining) MLSYS__COLL_VFAIL("transfer %d reduces chunk %d in an %s", i, x->chunk, mlsys_coll_kind_name(d->kind));
      for (w = 0; w < W; w++)
        if (st[ks * W + w] & st[kd * W + w]) {
          int b = 0;
          while (!((st[ks * W + w] & st[kd * W + w]) >> b & 1)) b++;
          MLSYS__COLL_VFAIL("transfer %d double counts rank %d's contribution to chunk %d at rank %d", i, w * 64 + b, x->chunk, x->dst);
        }
      for (w = 0; w < W; w++) st[kd * W + w] |= st[ks * W + w];
    } else {
      if (d->combining && !full)
        MLSYS__COLL_VFAIL("transfer %d copies chunk %d out of rank %d before it is fully reduced there", i, x->chunk, x->src);
      if (recv_cnt[kd] || (!d->combining && d->pre[kd]))
        MLSYS__COLL_VFAIL("transfer %d delivers chunk %d to rank %d a second time", i, x->chunk, x->dst);
      if (d->combining) {
        /* the final value replaces the partial sum there */
        for (w = 0; w < W; w++) st[kd * W + w] = st[ks * W + w];
      } else {
        for (w = 0; w < W; w++) st[kd * W + w] = st[ks * W + w];
      }
      recv_cnt[kd]++;
    }
    if (have_times && x->t_arrive > arrive[kd]) arrive[kd] = x->t_arrive;
  }
  for (c = 0; c < d->nchunks; c++)
    for (r = 0; r < N; r++) {
      size_t k = (size_t)c * N + r;
      if (!d->post[k]) continue;
      if (!d->combining) {
        int o = d->origin[c];
        for (w = 0; w < W; w++)
          if (st[k * W + w] != (w == o / 64 ? 1ull << (o % 64) : 0))
            MLSYS__COLL_VFAIL("chunk %d never reaches rank %d", c, r);
      } else {
        for (w = 0; w < W; w++)
          if (st[k * W + w] != (w == W - 1 && N % 64 ? (1ull << (N % 64)) - 1 : ~0ull)) {
            int b;
            for (b = 0; b < N; b++)
              if (!(st[k * W + b / 64] >> (b % 64) & 1)) break;
            MLSYS__COLL_VFAIL("chunk %d at rank %d lacks rank %d's contribution", c, r, b);
          }
      }
    }
  /* merge groups must be consecutive on one link */
  {
    mlsys__coll_prec p;
    int *unit = NULL, *usize = NULL;
    if (mlsys__coll_prec_build(t, a, &p) == MLSYS_OK) {
      unit = (int *)mlsys_alloc((size_t)a->nxfer + 1, sizeof(int));
      usize = (int *)mlsys_alloc((size_t)a->nxfer + 1, sizeof(int));
      if (unit && usize && mlsys__coll_units(t, a, &p, 1, unit, usize) != MLSYS_OK) {
        snprintf(msg, msglen, "%s", mlsys_last_error());
        rs = MLSYS_ERR_INFEASIBLE;
      }
      mlsys_free(unit); mlsys_free(usize);
      mlsys__coll_prec_free(&p);
      if (rs) { mlsys_set_error(rs, "%s", msg); goto done; }
    }
  }
#undef MLSYS__COLL_VFAIL
done:
  mlsys_free(st); mlsys_free(recv_cnt); mlsys_free(arrive);
  return rs;
}

/* ---------------------------------------------------------------------------------------------------------------
   Baselines (spec §4)
   --------------------------------------------------------------------------------------------------------------- */
static double mlsys__coll_chunk_bytes(int kind, int N, int chunkup, double buffer_bytes) {
  /* AG: per-rank input in C chunks; A2A: per-rank input in N·C chunks; RS/AR: per-rank buffer in N·C chunks */
  return kind == MLSYS_COLL_ALLGATHER ? buffer_bytes / chunkup : buffer_bytes / ((double)N * chunkup);
}

/* The ring of one node: NDv2's double-NVLink Hamiltonian cycle, else 0..G-1 (when those links exist). */
static int mlsys__coll_node_ring(const mlsys_coll_topo *t, int *ring) {
  int G = t->gpus_per_node, N = t->nranks, i, ok = 1;
  if (G == 8) {
    for (i = 0; i < 8 && ok; i++) ok = t->kind[(size_t)mlsys__coll_ndv2_ring[i] * N + mlsys__coll_ndv2_ring[(i + 1) % 8]] != 0;
    if (ok) { memcpy(ring, mlsys__coll_ndv2_ring, sizeof mlsys__coll_ndv2_ring); return 1; }
  }
  for (i = 0; i < G; i++) ring[i] = i;
  for (i = 0; i < G && G > 1; i++)
    if (!t->kind[(size_t)i * N + (i + 1) % G]) return 0;
  return 1;
}

/* Ring j: the node ring rotated by j (NDv2: odd rings run backwards over the other direction of the links;
   DGX-2: rotated by two GPUs so that every ring leaves the node through a different NIC), nodes chained. */
MLSYS_DEF mlsys_status mlsys_coll_default_rings(const mlsys_coll_topo *t, int nrings, int *rings) {
  int G = t->gpus_per_node, N = t->nranks, nr[4096], j, n, k;
  if (G > 4096 || !mlsys__coll_node_ring(t, nr))
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "topology %s has no ring through the GPUs of a node", t->name);
  for (j = 0; j < nrings; j++)
    for (n = 0; n < t->nnodes; n++)
      for (k = 0; k < G; k++) {
        int rot = G == 16 ? 2 * j : j, idx = (j % 2 && G == 8) ? (G - k + rot) % G : (k + rot) % G;
        rings[j * N + n * G + k] = n * G + nr[idx];
      }
  for (j = 0; j < nrings; j++)
    for (k = 0; k < N; k++)
      if (!t->kind[(size_t)rings[j * N + k] * N + rings[j * N + (k + 1) % N]])
        return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "ring %d needs link %d -> %d, which %s lacks", j, rings[j * N + k], rings[j * N + (k + 1) % N], t->name);
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_coll_default_ring(const mlsys_coll_topo *t, int *ring) { return mlsys_coll_default_rings(t, 1, ring); }

MLSYS_DEF mlsys_status mlsys_coll_algo_ring(int kind, int N, const int *ring, int R, int C, double buffer_bytes,
                                            mlsys_coll_algo *out) {
  int s, k, j, i, CR = C * R, ph;
  mlsys_status st;
  unsigned char *seen;
  if (kind == MLSYS_COLL_ALLTOALL) return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "there is no ring ALLTOALL (use the direct baseline)");
  if (N < 1 || R < 1 || C < 1 || !ring) return mlsys_set_error(MLSYS_ERR_ARG, "ring baseline: bad arguments");
  seen = (unsigned char *)mlsys_alloc((size_t)N, 1);
  if (!seen) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  for (j = 0; j < R; j++) {
    memset(seen, 0, (size_t)N);
    for (i = 0; i < N; i++) {
      if (ring[j * N + i] < 0 || ring[j * N + i] >= N || seen[ring[j * N + i]]) { mlsys_free(seen); return mlsys_set_error(MLSYS_ERR_ARG, "ring %d is not a permutation of the %d ranks", j, N); }
      seen[ring[j * N + i]] = 1;
    }
  }
  mlsys_free(seen);
  if ((st = mlsys_coll_algo_init(out, kind, N, CR, mlsys__coll_chunk_bytes(kind, N, CR, buffer_bytes)))) return st;
  /* RS: the partial of the chunk owned by ring[p] starts at ring[p+1] and reaches ring[p] after N-1 steps;
     AG: the chunk of ring[p] travels ring[p] -> ring[p+1] -> ... ; AR = RS then AG (§4: 2(N-1) steps). */
  for (ph = 0; ph < 2; ph++) {
    int red = ph == 0;
    if (red && kind == MLSYS_COLL_ALLGATHER) continue;
    if (!red && kind == MLSYS_COLL_REDUCESCATTER) continue;
    for (s = 0; s < N - 1; s++)
      for (k = 0; k < C; k++)
        for (j = 0; j < R; j++)
          for (i = 0; i < N; i++) {
            const int *rg = ring + (size_t)j * N;
            int owner = red ? rg[((i - 1 - s) % N + 2 * N) % N] : rg[((i - s) % N + N) % N];
            int c = owner * CR + k * R + j;
            if ((st = mlsys_coll_algo_push(out, c, rg[i], rg[(i + 1) % N], red ? MLSYS_COLL_XF_REDUCE : MLSYS_COLL_XF_COPY, -1))) { mlsys_coll_algo_free(out); return st; }
          }
  }
  return MLSYS_OK;
}

/* BFS tree (fewest hops, then cheapest per-chunk lat, then lowest rank) from root over t's links. */
static void mlsys__coll_bfs(const mlsys_coll_topo *t, int root, double bytes, int *parent, int *level, int *q) {
  int N = t->nranks, q0 = 0, q1 = 0, v, u;
  double *best = (double *)mlsys_alloc((size_t)N, sizeof(double));
  for (v = 0; v < N; v++) { parent[v] = -1; level[v] = -1; if (best) best[v] = 1e300; }
  level[root] = 0; q[q1++] = root;
  while (q0 < q1) {
    int lv;
    u = q[q0++];
    lv = level[u];
    for (v = 0; v < N; v++) {
      size_t l = (size_t)u * N + v;
      double c;
      if (!t->kind[l] || v == root) continue;
      c = (best ? (u == root ? 0 : best[u]) : 0) + mlsys_coll_lat(t->cost[l], bytes);
      if (level[v] < 0) { level[v] = lv + 1; parent[v] = u; if (best) best[v] = c; q[q1++] = v; }
      else if (level[v] == lv + 1 && best && c < best[v] - 1e-12) { parent[v] = u; best[v] = c; }
    }
  }
  mlsys_free(best);
}

typedef struct { int c, a, b, level, key2; } mlsys__coll_edge;
static int mlsys__coll_edge_cmp(const void *x, const void *y) {
  const mlsys__coll_edge *p = (const mlsys__coll_edge *)x, *q = (const mlsys__coll_edge *)y;
  if (p->level != q->level) return p->level - q->level;
  if (p->key2 != q->key2) return p->key2 - q->key2;
  if (p->a != q->a) return p->a - q->a;
  return p->c - q->c;
}

/* Transfers of every chunk along shortest-path trees (copy) or reversed trees (reduce), level by level, peers
   staggered by (b - a) mod N so that switch ports do not collide. */
static mlsys_status mlsys__coll_tree_phase(const mlsys_coll_topo *t, mlsys_coll_algo *out, int reduce, int a2a) {
  int N = t->nranks, c, v, ne = 0, cap = 0, i;
  int *parent = (int *)mlsys_alloc((size_t)N, sizeof(int)), *level = (int *)mlsys_alloc((size_t)N, sizeof(int));
  int *q = (int *)mlsys_alloc((size_t)N, sizeof(int)), *need = (int *)mlsys_alloc((size_t)N, sizeof(int));
  mlsys__coll_edge *e = NULL;
  mlsys_status st = MLSYS_OK;
  if (!parent || !level || !q || !need) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (c = 0; c < out->nchunks; c++) {
    int root = mlsys__coll_owner(out, c), dst = a2a ? (c / out->chunkup) % N : -1;
    mlsys__coll_bfs(t, root, out->chunk_bytes, parent, level, q);
    for (v = 0; v < N; v++) need[v] = 0;
    for (v = 0; v < N; v++) {
      int u;
      if (v == root || (a2a && v != dst)) continue;
      if (level[v] < 0) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "rank %d cannot reach rank %d in %s", root, v, t->name); goto done; }
      for (u = v; u != root; u = parent[u]) need[u] = 1;
    }
    for (v = 0; v < N; v++)
      if (need[v]) {
        if (ne == cap) {
          mlsys__coll_edge *ng;
          cap = cap ? 2 * cap : 256;
          ng = (mlsys__coll_edge *)mlsys_realloc_array(e, (size_t)cap, sizeof *e);
          if (!ng) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
          e = ng;
        }
        e[ne].c = c;
        if (reduce) { e[ne].a = v; e[ne].b = parent[v]; e[ne].level = N - level[v]; }
        else { e[ne].a = parent[v]; e[ne].b = v; e[ne].level = level[v]; }
        e[ne].key2 = ((e[ne].b - e[ne].a) % N + N) % N;
        ne++;
      }
  }
  if (ne) qsort(e, (size_t)ne, sizeof *e, mlsys__coll_edge_cmp);
  for (i = 0; i < ne; i++)
    if ((st = mlsys_coll_algo_push(out, e[i].c, e[i].a, e[i].b, reduce ? MLSYS_COLL_XF_REDUCE : MLSYS_COLL_XF_COPY, -1))) goto done;
done:
  mlsys_free(parent); mlsys_free(level); mlsys_free(q); mlsys_free(need); mlsys_free(e);
  return st;
}

MLSYS_DEF mlsys_status mlsys_coll_algo_direct(int kind, const mlsys_coll_topo *t, int C, double buffer_bytes,
                                              mlsys_coll_algo *out) {
  mlsys_status st;
  if ((st = mlsys_coll_algo_init(out, kind, t->nranks, C, mlsys__coll_chunk_bytes(kind, t->nranks, C, buffer_bytes)))) return st;
  if (kind == MLSYS_COLL_REDUCESCATTER || kind == MLSYS_COLL_ALLREDUCE) st = mlsys__coll_tree_phase(t, out, 1, 0);
  if (!st && kind != MLSYS_COLL_REDUCESCATTER) st = mlsys__coll_tree_phase(t, out, 0, kind == MLSYS_COLL_ALLTOALL);
  if (st) mlsys_coll_algo_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_coll_algo_hierarchical(int kind, const mlsys_coll_topo *t, int C, double buffer_bytes,
                                                    mlsys_coll_algo *out) {
  int G = t->gpus_per_node, N = t->nranks, NN = t->nnodes, nr[4096], pos[4096], i, n, m, s, k, li, ph;
  mlsys_status st;
  if (kind == MLSYS_COLL_ALLTOALL) return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "hierarchical ALLTOALL is not implemented (use the direct baseline)");
  if (G > 4096 || !mlsys__coll_node_ring(t, nr)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "topology %s has no ring through the GPUs of a node", t->name);
  for (i = 0; i < G; i++) pos[nr[i]] = i;
  for (n = 0; n < NN; n++)
    for (m = 0; m < NN; m++)
      for (li = 0; li < G && m != n; li++)
        if (!t->kind[(size_t)(n * G + li) * N + m * G + li]) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "hierarchical: no link %d -> %d", n * G + li, m * G + li);
  if ((st = mlsys_coll_algo_init(out, kind, N, C, mlsys__coll_chunk_bytes(kind, N, C, buffer_bytes)))) return st;
  /* Reduce half (RS, AR): inside every node a ring reduce of each chunk towards the GPU with the owner's local
     index, then that GPU's node partial goes over IB to the owner. Copy half (AG, AR): the owner's chunk goes
     over IB to the same-index GPU of every node, then around each node's ring. */
  for (ph = 0; ph < 2; ph++) {
    int red = ph == 0;
    if (red && kind == MLSYS_COLL_ALLGATHER) continue;
    if (!red && kind == MLSYS_COLL_REDUCESCATTER) continue;
    if (red) {
      for (s = 0; s < G - 1; s++)
        for (n = 0; n < NN; n++)
          for (i = 0; i < G; i++)          /* sender at ring position i of node n */
            for (m = 0; m < NN; m++)
              for (k = 0; k < C; k++) {
                int p = ((i - 1 - s) % G + 2 * G) % G, owner = m * G + nr[p];
                if ((st = mlsys_coll_algo_push(out, owner * C + k, n * G + nr[i], n * G + nr[(i + 1) % G], MLSYS_COLL_XF_REDUCE, -1))) goto fail;
              }
      for (s = 1; s < NN; s++)
        for (n = 0; n < NN; n++)
          for (li = 0; li < G; li++)
            for (k = 0; k < C; k++) {
              m = (n + s) % NN;   /* node n's partial of (m, li)'s chunk */
              if ((st = mlsys_coll_algo_push(out, (m * G + li) * C + k, n * G + li, m * G + li, MLSYS_COLL_XF_REDUCE, -1))) goto fail;
            }
    } else {
      for (s = 1; s < NN; s++)
        for (n = 0; n < NN; n++)
          for (li = 0; li < G; li++)
            for (k = 0; k < C; k++) {
              m = (n + s) % NN;
              if ((st = mlsys_coll_algo_push(out, (n * G + li) * C + k, n * G + li, m * G + li, MLSYS_COLL_XF_COPY, -1))) goto fail;
            }
      for (s = 0; s < G - 1; s++)
        for (n = 0; n < NN; n++)
          for (i = 0; i < G; i++)
            for (m = 0; m < NN; m++)
              for (k = 0; k < C; k++) {
                int p = ((i - s) % G + G) % G, origin = m * G + nr[p];
                if ((st = mlsys_coll_algo_push(out, origin * C + k, n * G + nr[i], n * G + nr[(i + 1) % G], MLSYS_COLL_XF_COPY, -1))) goto fail;
              }
    }
  }
  (void)pos;
  return MLSYS_OK;
fail:
  mlsys_coll_algo_free(out);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   Stage 1 — routing MILP with relaxed bandwidth (§5.5.1, eqs. 5.1–5.15; spec §3.4.1 for the lp_solve form)
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__coll_uf_find(int *uf, int i) {
  while (uf[i] != i) { uf[i] = uf[uf[i]]; i = uf[i]; }
  return i;
}
static void mlsys__coll_uf_union(int *uf, int i, int j) {
  i = mlsys__coll_uf_find(uf, i); j = mlsys__coll_uf_find(uf, j);
  if (i != j) { if (i < j) uf[j] = i; else uf[i] = j; }
}
/* [repo] rotational symmetry: ranks rotate by `offset` inside blocks of `group`. */
static int mlsys__coll_sym_rank(const mlsys_coll_sym *s, int r) { return (r % s->group + s->offset) % s->group + r / s->group * s->group; }
static int mlsys__coll_sym_chunk(const mlsys_coll_def *d, const mlsys_coll_sym *s, int c) {
  int N = d->nranks, C = d->chunkup;
  if (d->kind == MLSYS_COLL_ALLTOALL) {
    int src = c / C / N, dst = (c / C) % N;
    return (mlsys__coll_sym_rank(s, src) * N + mlsys__coll_sym_rank(s, dst)) * C + c % C;
  }
  return mlsys__coll_sym_rank(s, c / C) * C + c % C;
}

/* Rows are deduplicated (symmetry substitution makes rows of one orbit identical). */
typedef struct {
  mlsys_milp *m;
  int *col;                 /* proto variable -> column (-1: fixed at 0) */
  unsigned long long *hash; int hcap, hn;
  int *tc; double *tv; int tcap;
} mlsys__coll_rows;
static int mlsys__coll_pair_cmp(const void *x, const void *y) {
  const int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}
static mlsys_status mlsys__coll_row(mlsys__coll_rows *R, int nnz, const int *proto, const double *v, int nraw,
                                    const int *rawcol, const double *rawv, int sense, double rhs) {
  int i, j, k = 0, n = nnz + nraw;
  unsigned long long h = 1469598103934665603ull;
  if (n > R->tcap) {
    int nc = n * 2 + 16;
    int *a = (int *)mlsys_realloc_array(R->tc, (size_t)nc * 2, sizeof(int));
    double *b;
    if (!a) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    R->tc = a;
    b = (double *)mlsys_realloc_array(R->tv, (size_t)nc, sizeof(double));
    if (!b) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    R->tv = b; R->tcap = nc;
  }
  /* (column, index) pairs sorted by column, values merged */
  for (i = 0; i < n; i++) {
    int c = i < nnz ? R->col[proto[i]] : rawcol[i - nnz];
    if (c < 0) continue;
    R->tc[2 * k] = c; R->tc[2 * k + 1] = i; k++;
  }
  qsort(R->tc, (size_t)k, 2 * sizeof(int), mlsys__coll_pair_cmp);
  {
    int m = 0;
    int *cols = R->tc + 2 * k;  /* scratch after the pairs: reuse R->tc tail is unsafe; build in place */
    (void)cols;
    for (i = 0; i < k; i++) {
      int c = R->tc[2 * i], src = R->tc[2 * i + 1];
      double val = src < nnz ? v[src] : rawv[src - nnz];
      if (m > 0 && R->tc[m - 1] == c) R->tv[m - 1] += val;
      else { R->tc[m] = c; R->tv[m] = val; m++; }
    }
    /* compaction wrote columns into R->tc[0..m) (m ≤ k, reading index 2i ≥ m: safe) */
    j = 0;
    for (i = 0; i < m; i++)
      if (R->tv[i] != 0) { R->tc[j] = R->tc[i]; R->tv[j] = R->tv[i]; j++; }
    k = j;
  }
  if (k == 0) {
    if ((sense == MLSYS_ROW_LE && rhs < -1e-9) || (sense == MLSYS_ROW_GE && rhs > 1e-9) || (sense == MLSYS_ROW_EQ && fabs(rhs) > 1e-9))
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "routing model: a constraint became 0 %s %g after symmetry substitution", sense == MLSYS_ROW_LE ? "<=" : sense == MLSYS_ROW_GE ? ">=" : "=", rhs);
    return MLSYS_OK;
  }
  for (i = 0; i < k; i++) {
    unsigned long long w;
    double dv = R->tv[i];
    memcpy(&w, &dv, sizeof w);
    h = (h ^ (unsigned long long)R->tc[i]) * 1099511628211ull;
    h = (h ^ w) * 1099511628211ull;
  }
  { double dr = rhs; unsigned long long w; memcpy(&w, &dr, sizeof w); h = (h ^ w ^ (unsigned long long)sense) * 1099511628211ull; }
  if (!h) h = 1;
  if (2 * (R->hn + 1) > R->hcap) {
    int nc = R->hcap ? R->hcap * 2 : 4096;
    unsigned long long *nh = (unsigned long long *)mlsys_calloc((size_t)nc, sizeof *nh);
    if (!nh) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    for (i = 0; i < R->hcap; i++)
      if (R->hash[i]) {
        int p = (int)(R->hash[i] % (unsigned long long)nc);
        while (nh[p]) p = (p + 1) % nc;
        nh[p] = R->hash[i];
      }
    mlsys_free(R->hash); R->hash = nh; R->hcap = nc;
  }
  {
    int p = (int)(h % (unsigned long long)R->hcap);
    while (R->hash[p]) {
      if (R->hash[p] == h) return MLSYS_OK;   /* identical row already present (64-bit hash) */
      p = (p + 1) % R->hcap;
    }
    R->hash[p] = h; R->hn++;
  }
  return mlsys_milp_add_row(R->m, k, R->tc, R->tv, (mlsys_row_sense)sense, rhs, NULL);
}

typedef struct {
  int N, G, nc;
  int *xoff;        /* [nc+1] offsets of each chunk's allowed links in xl */
  int *xl;          /* link index a*N+b */
  int *xid;         /* [nc*N*N] proto id or -1 */
  int *tid;         /* [nc*N] proto id of t[c,r] or -1 (r not in SP(c)) */
  int nx, nt;
} mlsys__coll_rvars;
static void mlsys__coll_rvars_free(mlsys__coll_rvars *v) {
  mlsys_free(v->xoff); mlsys_free(v->xl); mlsys_free(v->xid); mlsys_free(v->tid);
  memset(v, 0, sizeof *v);
}

/* Which (chunk, link) pairs may carry the chunk: both ends in SP(c), the receiver not a pre rank, and the relay
   rules of the sketch (R-d): a chunk leaves its node only from its own node, only towards a node that needs it,
   and only through the sender GPU the relay map names. */
static int mlsys__coll_allowed(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                               const unsigned char *sp, const unsigned char *node_needs, int c, int a, int b) {
  int N = lt->nranks, G = lt->gpus_per_node, o = d->origin[c];
  if (!lt->kind[(size_t)a * N + b] || !sp[a] || !sp[b] || d->pre[(size_t)c * N + b]) return 0;
  if (a / G != b / G) {
    if (a / G != o / G || !node_needs[b / G]) return 0;
    if (sk && sk->relay_sender && sk->relay_sender[o % G] >= 0 && a % G != sk->relay_sender[o % G]) return 0;
  } else if (a / G != o / G && !node_needs[a / G]) {
    return 0;
  }
  return 1;
}

static mlsys_status mlsys__coll_route_vars(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                                           mlsys__coll_rvars *v) {
  int N = lt->nranks, G = lt->gpus_per_node, nn = lt->nnodes, c, a, b, r, cap = 0;
  int *dist = NULL, *reach = NULL, *q = NULL;
  unsigned char *sp = NULL, *needs = NULL;
  mlsys_status st = MLSYS_OK;
  memset(v, 0, sizeof *v);
  v->N = N; v->G = G; v->nc = d->nchunks;
  dist = (int *)mlsys_alloc((size_t)N * N, sizeof(int));
  sp = (unsigned char *)mlsys_alloc((size_t)N, 1);
  needs = (unsigned char *)mlsys_alloc((size_t)nn, 1);
  reach = (int *)mlsys_alloc((size_t)N, sizeof(int));
  q = (int *)mlsys_alloc((size_t)N, sizeof(int));
  v->xoff = (int *)mlsys_calloc((size_t)d->nchunks + 1, sizeof(int));
  v->xid = (int *)mlsys_alloc((size_t)d->nchunks * N * N, sizeof(int));
  v->tid = (int *)mlsys_alloc((size_t)d->nchunks * N, sizeof(int));
  if (!dist || !sp || !needs || !reach || !q || !v->xoff || !v->xid || !v->tid) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  if ((st = mlsys__coll_hops(lt, dist))) goto done;
  for (c = 0; c < d->nchunks; c++) {
    int q0 = 0, q1 = 0;
    mlsys__coll_sp_from_dist(lt, d, dist, c, sp);
    memset(needs, 0, (size_t)nn);
    for (r = 0; r < N; r++) if (d->post[(size_t)c * N + r] && !d->pre[(size_t)c * N + r]) needs[r / G] = 1;
    for (r = 0; r < N; r++) {
      v->tid[(size_t)c * N + r] = sp[r] ? v->nt++ : -1;
      reach[r] = d->pre[(size_t)c * N + r];
      if (reach[r]) q[q1++] = r;
    }
    for (a = 0; a < N; a++)
      for (b = 0; b < N; b++) {
        size_t k = ((size_t)c * N + a) * N + b;
        v->xid[k] = -1;
        if (!mlsys__coll_allowed(lt, sk, d, sp, needs, c, a, b)) continue;
        if (v->nx == cap) {
          int *nl;
          cap = cap ? 2 * cap : 1024;
          nl = (int *)mlsys_realloc_array(v->xl, (size_t)cap, sizeof(int));
          if (!nl) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
          v->xl = nl;
        }
        v->xl[v->nx] = a * N + b;
        v->xid[k] = v->nx++;
      }
    v->xoff[c + 1] = v->nx;
    /* every post rank must be reachable over the allowed links; otherwise say which chunk cannot be routed */
    while (q0 < q1) {
      int u = q[q0++];
      for (b = 0; b < N; b++)
        if (!reach[b] && v->xid[((size_t)c * N + u) * N + b] >= 0) { reach[b] = 1; q[q1++] = b; }
    }
    for (r = 0; r < N; r++)
      if (d->post[(size_t)c * N + r] && !reach[r]) {
        int o = d->origin[c];
        if (o / G != r / G)
          st = mlsys_set_error(MLSYS_ERR_INFEASIBLE,
                               "chunk %d (from rank %d) cannot be routed to rank %d: the sketch gives node %d no inter-node link to node %d for it%s",
                               c, o, r, o / G, r / G, sk && sk->relay_sender && sk->relay_sender[o % G] >= 0 ? " through its relay sender" : "");
        else
          st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "chunk %d (from rank %d) cannot be routed to rank %d over the logical topology", c, o, r);
        goto done;
      }
  }
done:
  mlsys_free(dist); mlsys_free(sp); mlsys_free(needs); mlsys_free(reach); mlsys_free(q);
  if (st) mlsys__coll_rvars_free(v);
  return st;
}

static double mlsys__coll_link_lat(const mlsys_coll_topo *t, int l, double bytes) { return mlsys_coll_lat(t->cost[l], bytes); }

/* Heuristic routing for the big-M bound and the warm start: per chunk a tree grown Prim-style over its allowed
   links, each step taking the edge whose link / port load or depth after it is smallest (min-bottleneck growth),
   then rip-up-and-reroute passes. With symmetry classes (uf), a chunk whose variables share classes with an
   already routed chunk copies that routing, so the warm start satisfies the substituted model. */
typedef struct {
  const mlsys_coll_topo *lt; const mlsys_coll_def *d; const mlsys__coll_rvars *v; double bytes;
  double *load, *psend, *precv, *depth, target, *hist;
  int depth_first;
  mlsys_rng *rng;
  int *par, nsw;
  unsigned char *in, *need;
} mlsys__coll_heur;

static double mlsys__coll_lat_of(const mlsys__coll_heur *h, int l) { return mlsys_coll_lat(h->lt->cost[l], h->bytes); }
static void mlsys__coll_heur_apply(mlsys__coll_heur *h, int c, const unsigned char *xv, double sign) {
  int i, N = h->lt->nranks;
  for (i = h->v->xoff[c]; i < h->v->xoff[c + 1]; i++)
    if (xv[i]) {
      int l = h->v->xl[i], a = l / N, b = l % N;
      double lat = mlsys__coll_lat_of(h, l) * sign;
      h->load[l] += lat;
      if (h->lt->sw[l] >= 0) { h->psend[a * h->nsw + h->lt->sw[l]] += lat; h->precv[b * h->nsw + h->lt->sw[l]] += lat; }
    }
}
/* Grow chunk c's tree; writes xv for its variables and tv (start times) for its t variables. */
static void mlsys__coll_heur_tree(mlsys__coll_heur *h, int c, unsigned char *xv, double *tv) {
  const mlsys_coll_topo *lt = h->lt;
  const mlsys__coll_rvars *v = h->v;
  int N = lt->nranks, r, i, left = 0;
  size_t cN = (size_t)c * N;
  for (r = 0; r < N; r++) {
    h->in[r] = h->d->pre[cN + r]; h->par[r] = -1; h->depth[r] = 0;
    h->need[r] = h->d->post[cN + r] && !h->d->pre[cN + r];
    left += h->need[r];
  }
  for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) xv[i] = 0;
  while (left > 0) {
    int best = -1;
    double bc = 0, bd = 0, bs = 0;
    for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
      int l = v->xl[i], a = l / N, b = l % N;
      double lat, cost, dep, sec;
      if (!h->in[a] || h->in[b]) continue;
      lat = mlsys__coll_lat_of(h, l);
      dep = h->depth[a] + lat;
      cost = fmax(h->load[l] + lat, dep);
      if (lt->sw[l] >= 0) {
        cost = fmax(cost, h->psend[a * h->nsw + lt->sw[l]] + lat);
        cost = fmax(cost, h->precv[b * h->nsw + lt->sw[l]] + lat);
      }
      /* below the lower bound everything is free: compare max(cost, target), then the link's own load, then depth */
      cost = fmax(cost, h->target) + (h->hist ? h->hist[l] * lat : 0);
      if (h->depth_first) cost += 4 * fmax(dep, h->target);   /* dilation first, then congestion */
      /* worst fit: prefer the link that keeps the most whole chunk slots below the target after this one */
      sec = -floor((h->target - (h->load[l] + lat)) / lat + 1e-9) * h->target + h->load[l] + lat +
            (lt->sw[l] >= 0 ? h->psend[a * h->nsw + lt->sw[l]] + h->precv[b * h->nsw + lt->sw[l]] : 0);
      if (h->rng) sec += 1e-6 * h->target * mlsys_rng_uniform(h->rng);
      if (best < 0 || cost < bc - 1e-12 || (cost < bc + 1e-12 && (sec < bs - 1e-12 || (sec < bs + 1e-12 && dep < bd - 1e-12)))) { best = i; bc = cost; bd = dep; bs = sec; }
    }
    if (best < 0) break;   /* unreachable: cannot happen after the routability check */
    {
      int l = v->xl[best], a = l / N, b = l % N;
      double lat = mlsys__coll_lat_of(h, l);
      h->in[b] = 1; h->par[b] = best; h->depth[b] = h->depth[a] + lat;
      if (h->need[b]) left--;
      /* account the load now so the rest of this tree sees it */
      h->load[l] += lat;
      if (lt->sw[l] >= 0) { h->psend[a * h->nsw + lt->sw[l]] += lat; h->precv[b * h->nsw + lt->sw[l]] += lat; }
    }
  }
  /* keep only the branches that lead to a rank that needs the chunk; undo the loads of the rest */
  for (r = 0; r < N; r++) {
    int u;
    if (!h->need[r] || !h->in[r]) continue;
    for (u = r; h->par[u] >= 0 && !xv[h->par[u]]; u = v->xl[h->par[u]] / N) xv[h->par[u]] = 1;
  }
  for (r = 0; r < N; r++)
    if (h->par[r] >= 0 && !xv[h->par[r]]) {
      int l = v->xl[h->par[r]], a = l / N;
      double lat = mlsys__coll_lat_of(h, l);
      h->load[l] -= lat;
      if (lt->sw[l] >= 0) { h->psend[a * h->nsw + lt->sw[l]] -= lat; h->precv[r * h->nsw + lt->sw[l]] -= lat; }
    }
  for (r = 0; r < N; r++)
    if (v->tid[cN + r] >= 0) tv[v->tid[cN + r]] = (h->par[r] >= 0 && xv[h->par[r]]) ? h->depth[r] : 0;
}
/* Relaxed time of a routing: max(dilation, link loads, switch port loads). */
static double mlsys__coll_heur_T(const mlsys__coll_heur *h, const double *tv) {
  int i, N = h->lt->nranks;
  double T = 0;
  for (i = 0; i < h->v->nt; i++) if (tv[i] > T) T = tv[i];
  for (i = 0; i < N * N; i++) if (h->load[i] > T) T = h->load[i];
  for (i = 0; i < N * h->nsw; i++) { if (h->psend[i] > T) T = h->psend[i]; if (h->precv[i] > T) T = h->precv[i]; }
  return T;
}
static mlsys_status mlsys__coll_route_heuristic(const mlsys_coll_topo *lt, const mlsys_coll_def *d, const mlsys__coll_rvars *v,
                                                double bytes, int *uf, double target, unsigned char *xval, double *tval, double *relaxed_T) {
  int N = lt->nranks, c, i, pass, npass = uf ? 1 : 24;
  mlsys_rng rng;
  mlsys__coll_heur h;
  signed char *cls = NULL;
  unsigned char *bx = NULL;
  double *bt = NULL, best = 1e300;
  mlsys_status st = MLSYS_OK;
  memset(&h, 0, sizeof h);
  h.lt = lt; h.d = d; h.v = v; h.bytes = bytes; h.nsw = lt->nswitch > 0 ? lt->nswitch : 1; h.target = target;
  h.hist = (double *)mlsys_calloc((size_t)N * N, sizeof(double));
  {
    /* passes: as many as about 2e8 edge scans allow, 2..64 */
    double work = (double)v->nx * N + 1;
    npass = uf ? 1 : (int)fmin(64, fmax(2, 2e8 / work));
  }
  mlsys_rng_seed(&rng, 12345);
  h.load = (double *)mlsys_calloc((size_t)N * N, sizeof(double));
  h.psend = (double *)mlsys_calloc((size_t)N * h.nsw, sizeof(double));
  h.precv = (double *)mlsys_calloc((size_t)N * h.nsw, sizeof(double));
  h.depth = (double *)mlsys_alloc((size_t)N, sizeof(double));
  h.par = (int *)mlsys_alloc((size_t)N, sizeof(int));
  h.in = (unsigned char *)mlsys_alloc((size_t)N, 1);
  h.need = (unsigned char *)mlsys_alloc((size_t)N, 1);
  bx = (unsigned char *)mlsys_alloc((size_t)v->nx + 1, 1);
  bt = (double *)mlsys_alloc((size_t)v->nt + 1, sizeof(double));
  if (uf) cls = (signed char *)mlsys_alloc((size_t)v->nx + 1, 1);
  if (!h.load || !h.psend || !h.precv || !h.depth || !h.par || !h.in || !h.need || !bx || !bt || (uf && !cls)) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  memset(xval, 0, (size_t)v->nx);
  for (i = 0; i < v->nt; i++) tval[i] = 0;
  if (cls) memset(cls, -1, (size_t)v->nx + 1);
  for (c = 0; c < d->nchunks; c++) {
    int derived = 0;
    if (cls) {
      /* copy a symmetric image when this chunk's classes are already decided */
      for (i = v->xoff[c]; i < v->xoff[c + 1] && !derived; i++) derived = cls[mlsys__coll_uf_find(uf, i)] == 1;
      if (derived) {
        int r, ok = 1;
        size_t cN = (size_t)c * N;
        for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) xval[i] = cls[mlsys__coll_uf_find(uf, i)] == 1;
        /* a valid tree: every needed rank reached once, from a rank that has the chunk */
        for (r = 0; r < N; r++) { h.in[r] = d->pre[cN + r]; h.depth[r] = 0; h.par[r] = -1; }
        for (;;) {
          int grew = 0;
          for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
            int a = v->xl[i] / N, b = v->xl[i] % N;
            if (!xval[i]) continue;
            if (h.in[a] && !h.in[b]) { h.in[b] = 1; h.par[b] = i; h.depth[b] = h.depth[a] + mlsys__coll_lat_of(&h, v->xl[i]); grew = 1; }
            else if (h.in[b] && h.par[b] != i && !d->pre[cN + b] && h.in[a]) ok = ok && h.par[b] == i;
          }
          if (!grew) break;
        }
        for (r = 0; r < N && ok; r++) if (d->post[cN + r] && !h.in[r]) ok = 0;
        for (i = v->xoff[c]; i < v->xoff[c + 1] && ok; i++) if (xval[i] && h.par[v->xl[i] % N] != i) ok = 0;
        if (ok) {
          mlsys__coll_heur_apply(&h, c, xval, 1);
          for (r = 0; r < N; r++) if (v->tid[cN + r] >= 0) tval[v->tid[cN + r]] = h.par[r] >= 0 ? h.depth[r] : 0;
          continue;
        }
      }
    }
    mlsys__coll_heur_tree(&h, c, xval, tval);
    if (cls)
      for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
        int root = mlsys__coll_uf_find(uf, i);
        if (cls[root] < 0) cls[root] = (signed char)xval[i];
      }
  }
  best = mlsys__coll_heur_T(&h, tval);
  memcpy(bx, xval, (size_t)v->nx); memcpy(bt, tval, (size_t)v->nt * sizeof(double));
  for (pass = 1; pass < npass && best > target * (1 + 1e-9); pass++) {
    double T;
    h.rng = pass % 2 ? &rng : NULL;
    h.depth_first = pass % 4 >= 2;   /* deterministic passes first, then seeded random tie-breaks */
    for (c = 0; c < d->nchunks; c++) {
      mlsys__coll_heur_apply(&h, c, xval, -1);
      mlsys__coll_heur_tree(&h, c, xval, tval);
    }
    T = mlsys__coll_heur_T(&h, tval);
    if (getenv("MLSYS_DEBUG")) fprintf(stderr, "pass %d T %.4g\n", pass, T);
    /* negotiated congestion (PathFinder): links loaded beyond the target get dearer in later passes */
    if (h.hist)
      for (i = 0; i < N * N; i++)
        if (h.load[i] > fmax(target, 1e-300) * (1 + 1e-9)) h.hist[i] += getenv("MLSYS_HINC") ? atof(getenv("MLSYS_HINC")) : 0.25;
    if (T < best - 1e-9) { best = T; memcpy(bx, xval, (size_t)v->nx); memcpy(bt, tval, (size_t)v->nt * sizeof(double)); }
  }
  memcpy(xval, bx, (size_t)v->nx); memcpy(tval, bt, (size_t)v->nt * sizeof(double));
  *relaxed_T = best;
  if (getenv("MLSYS_DEBUG")) {
    double mt = 0, ml = 0;
    for (i = 0; i < v->nt; i++) if (tval[i] > mt) mt = tval[i];
    for (i = 0; i < N * N; i++) if (h.load[i] > ml) ml = h.load[i];
    fprintf(stderr, "heuristic routing: T %.4g (target %.4g) dilation %.4g load %.4g\n", best, target, mt, ml);
  }
done:
  mlsys_free(h.load); mlsys_free(h.psend); mlsys_free(h.precv); mlsys_free(h.depth); mlsys_free(h.par);
  mlsys_free(h.in); mlsys_free(h.need); mlsys_free(bx); mlsys_free(bt); mlsys_free(cls); mlsys_free(h.hist);
  return st;
}

/* Smallest T with Σ_l ⌊T / lat_l⌋ ≥ k: k transfers that must each use one of these links (integer capacity;
   the LP relaxation only sees Σ T/lat_l ≥ k). The k-th smallest of {m·lat_l : m ≥ 1}. */
static double mlsys__coll_cap_bound(const double *lat, int n, int k) {
  int *m, i, j;
  double t = 0;
  if (k <= 0 || n <= 0) return 0;
  m = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!m) return 0;
  for (i = 0; i < n; i++) m[i] = 1;
  for (j = 0; j < k; j++) {
    int b = -1;
    for (i = 0; i < n; i++)
      if (lat[i] > 0 && (b < 0 || m[i] * lat[i] < m[b] * lat[b])) b = i;
    if (b < 0) { t = 0; break; }
    t = m[b] * lat[b]; m[b]++;
  }
  mlsys_free(m);
  return t;
}

/* A lower bound on the routing optimum, so the solver can stop as soon as it meets it (spec §8.1):
   dilation (cheapest allowed path to each destination), integer in-capacity of each rank, and the links
   between each pair of nodes that the chunks needed across them must cross (eq. 5.15). */
static double mlsys__coll_route_lb(const mlsys_coll_topo *lt, const mlsys_coll_def *d, const mlsys__coll_rvars *v, double bytes) {
  int N = lt->nranks, G = lt->gpus_per_node, nn = lt->nnodes, c, r, a, b, it;
  double lb = 0, *dist = (double *)mlsys_alloc((size_t)N, sizeof(double)), *lat = (double *)mlsys_alloc((size_t)N * N + 1, sizeof(double));
  int *need = (int *)mlsys_calloc((size_t)N + (size_t)nn * nn, sizeof(int));
  if (!dist || !lat || !need) { mlsys_free(dist); mlsys_free(lat); mlsys_free(need); return 0; }
  for (c = 0; c < d->nchunks; c++) {
    /* Bellman–Ford over the chunk's allowed links (N ≤ a few hundred: fine) */
    for (r = 0; r < N; r++) dist[r] = d->pre[(size_t)c * N + r] ? 0 : 1e300;
    for (it = 0; it < N; it++) {
      int changed = 0;
      for (a = 0; a < N; a++) {
        if (dist[a] >= 1e300) continue;
        for (b = 0; b < N; b++)
          if (v->xid[((size_t)c * N + a) * N + b] >= 0) {
            double nd = dist[a] + mlsys__coll_link_lat(lt, a * N + b, bytes);
            if (nd < dist[b] - 1e-12) { dist[b] = nd; changed = 1; }
          }
      }
      if (!changed) break;
    }
    for (r = 0; r < N; r++)
      if (d->post[(size_t)c * N + r] && !d->pre[(size_t)c * N + r]) {
        if (dist[r] < 1e300 && dist[r] > lb) lb = dist[r];
        need[r]++;
      }
    for (b = 0; b < nn; b++) {
      int o = d->origin[c] / G, x = 0;
      for (r = b * G; r < (b + 1) * G && !x; r++) x = d->post[(size_t)c * N + r] && !d->pre[(size_t)c * N + r];
      if (x && b != o) need[N + o * nn + b]++;
    }
  }
  for (r = 0; r < N; r++) {
    int k = 0;
    for (a = 0; a < N; a++) if (lt->kind[(size_t)a * N + r]) lat[k++] = mlsys__coll_link_lat(lt, a * N + r, bytes);
    { double t = mlsys__coll_cap_bound(lat, k, need[r]); if (t > lb) lb = t; }
  }
  for (a = 0; a < nn; a++)
    for (b = 0; b < nn; b++) {
      int k = 0, i, j;
      if (a == b || !need[N + a * nn + b]) continue;
      for (i = a * G; i < (a + 1) * G; i++)
        for (j = b * G; j < (b + 1) * G; j++)
          if (lt->kind[(size_t)i * N + j]) lat[k++] = mlsys__coll_link_lat(lt, i * N + j, bytes);
      { double t = mlsys__coll_cap_bound(lat, k, need[N + a * nn + b]); if (t > lb) lb = t; }
    }
  mlsys_free(dist); mlsys_free(lat); mlsys_free(need);
  return lb;
}

MLSYS_DEF mlsys_status mlsys_coll_route(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                                        double chunk_bytes, mlsys_coll_algo *out, mlsys_coll_stats *stats) {
  int N = lt->nranks, G = lt->gpus_per_node, c, r, i, s, a, b, attempt;
  mlsys__coll_rvars v;
  int *uf = NULL, nproto, *zero = NULL, ncol = 0, Tcol, *ucol = NULL;
  double unit = 0, U, heurT = 0, maxlat = 0, meanlat = 0, gamma_rel, lbT = 0;
  unsigned char *hx = NULL, *tpre = NULL;
  double *ht = NULL, *inc = NULL;
  mlsys_milp *m = NULL;
  mlsys_milp_result res;
  mlsys_milp_opts mo;
  mlsys__coll_rows R;
  mlsys_status st;
  mlsys_coll_stats dummy;
  double t0 = mlsys_now();
  int nlinks = 0;
  if (!stats) stats = &dummy;
  memset(&R, 0, sizeof R);
  memset(&res, 0, sizeof res);
  memset(out, 0, sizeof *out);
  if (d->combining) return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "routing synthesizes ALLGATHER and ALLTOALL; %s is built by inverting an ALLGATHER", mlsys_coll_kind_name(d->kind));
  if (d->nranks != N) return mlsys_set_error(MLSYS_ERR_ARG, "collective has %d ranks, topology %d", d->nranks, N);
  if (!(chunk_bytes > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "chunk size must be positive (got %g bytes)", chunk_bytes);
  if ((st = mlsys__coll_route_vars(lt, sk, d, &v))) return st;
  nproto = v.nx + v.nt;
  uf = (int *)mlsys_alloc((size_t)nproto + 1, sizeof(int));
  zero = (int *)mlsys_calloc((size_t)nproto + 1, sizeof(int));
  R.col = (int *)mlsys_alloc((size_t)nproto + 1, sizeof(int));
  hx = (unsigned char *)mlsys_alloc((size_t)v.nx + 1, 1);
  ht = (double *)mlsys_alloc((size_t)v.nt + 1, sizeof(double));
  ucol = (int *)mlsys_alloc((size_t)N * N, sizeof(int));
  if (!uf || !zero || !R.col || !hx || !ht || !ucol) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < nproto; i++) uf[i] = i;
  tpre = (unsigned char *)mlsys_calloc((size_t)v.nt + 1, 1);
  if (!tpre) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (c = 0; c < d->nchunks; c++)
    for (r = 0; r < N; r++)
      if (v.tid[(size_t)c * N + r] >= 0) tpre[v.tid[(size_t)c * N + r]] = d->pre[(size_t)c * N + r];
  for (i = 0; i < N * N; i++)
    if (lt->kind[i]) {
      double l = mlsys__coll_link_lat(lt, i, chunk_bytes);
      if (l > maxlat) maxlat = l;
      meanlat += l; nlinks++;
    }
  if (!(maxlat > 0)) { st = mlsys_set_error(MLSYS_ERR_ARG, "every link of the topology costs 0: nothing to optimise"); goto done; }
  meanlat /= nlinks;
  unit = maxlat / 1000.0;   /* scaled units: the slowest link costs 1000 (spec §8.2: keep big-M numerics sane) */
  /* symmetry substitution (eqs. 5.12–5.14) by union-find over the proto variables */
  stats->route_bins_unsym = v.nx;
  if (sk && !sk->no_symmetry)
    for (s = 0; s < sk->nsym; s++) {
      const mlsys_coll_sym *sy = &sk->sym[s];
      int blk = sy->block > 0 ? sy->block : sy->group;
      if (sy->group < 1 || N % sy->group || sy->offset < 0 || sy->offset >= sy->group) { st = mlsys_set_error(MLSYS_ERR_ARG, "symmetry [%d, %d] does not fit %d ranks", sy->offset, sy->group, N); goto done; }
      for (c = 0; c < d->nchunks; c++) {
        int c2 = mlsys__coll_sym_chunk(d, sy, c);
        for (i = v.xoff[c]; i < v.xoff[c + 1]; i++) {
          int l = v.xl[i], a2, b2, j;
          a = l / N; b = l % N;
          if (a / blk != b / blk) continue;   /* sends between blocks are not constrained (thesis Ex. 5.4.3) */
          a2 = mlsys__coll_sym_rank(sy, a); b2 = mlsys__coll_sym_rank(sy, b);
          j = v.xid[((size_t)c2 * N + a2) * N + b2];
          if (j < 0) zero[i] = 1; else mlsys__coll_uf_union(uf, i, j);
        }
        for (r = 0; r < N; r++) {
          int t1 = v.tid[(size_t)c * N + r], t2 = v.tid[(size_t)c2 * N + mlsys__coll_sym_rank(sy, r)];
          if (t1 >= 0 && t2 >= 0) mlsys__coll_uf_union(uf, v.nx + t1, v.nx + t2);
        }
      }
    }
  for (i = 0; i < v.nx; i++) if (zero[i]) zero[mlsys__coll_uf_find(uf, i)] = 1;
  {
    int anysym = 0;
    for (i = 0; i < nproto && !anysym; i++) anysym = uf[i] != i;
    lbT = mlsys__coll_route_lb(lt, d, &v, chunk_bytes);
    stats->route_lb = lbT;
    if ((st = mlsys__coll_route_heuristic(lt, d, &v, chunk_bytes, anysym ? uf : NULL, lbT, hx, ht, &heurT))) goto done;
  }
  U = 1.5 * heurT / unit + 1;
  for (attempt = 0; attempt < 4; attempt++, U *= 3) {
    double M = U + 1000.0 + 1.0;
    int row_c[4], nb = 0;
    double row_v[4];
    int *tmpc = NULL; double *tmpv = NULL;
    mlsys_milp_free(m); m = NULL;
    mlsys_milp_result_free(&res);
    mlsys_free(R.hash); R.hash = NULL; R.hcap = R.hn = 0;
    if ((st = mlsys_milp_create(&m))) goto done;
    R.m = m;
    ncol = 0;
    for (i = 0; i < nproto; i++) R.col[i] = -2;
    for (i = 0; i < nproto; i++) {
      int root = mlsys__coll_uf_find(uf, i);
      if (i < v.nx && zero[root]) { R.col[i] = -1; continue; }
      if (R.col[root] == -2) {
        if (root < v.nx) { R.col[root] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, 0, NULL); nb++; }
        else {
          /* t of a pre rank is 0 (eq. 5.3) */
          R.col[root] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, tpre[root - v.nx] ? 0 : U, 0, NULL);
        }
        if (R.col[root] < 0) { st = mlsys_last_status() ? mlsys_last_status() : MLSYS_ERR_NOMEM; goto done; }
        ncol++;
      }
      R.col[i] = R.col[root];
    }
    Tcol = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, fmin(lbT / unit, U), U, 1.0, "T");
    /* uc-max / uc-min: is_util per switched link (eqs. 5.9–5.11) */
    gamma_rel = (sk && sk->gamma > 0 ? sk->gamma : 0.01) * meanlat / unit;
    for (i = 0; i < N * N; i++) {
      int sw = lt->sw[i], pol;
      ucol[i] = -1;
      if (sw < 0 || !lt->kind[i]) continue;
      pol = lt->sws[sw].policy;
      if (pol != MLSYS_COLL_UC_MAX && pol != MLSYS_COLL_UC_MIN) continue;
      ucol[i] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, pol == MLSYS_COLL_UC_MAX ? -gamma_rel : gamma_rel, NULL);
      nb++;
    }
    tmpc = (int *)mlsys_alloc((size_t)d->nchunks * N * 2 + 8, sizeof(int));
    tmpv = (double *)mlsys_alloc((size_t)d->nchunks * N * 2 + 8, sizeof(double));
    if (!tmpc || !tmpv) { mlsys_free(tmpc); mlsys_free(tmpv); st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
    for (c = 0; c < d->nchunks && !st; c++) {
      size_t cN = (size_t)c * N;
      for (r = 0; r < N && !st; r++) {
        int n_in = 0, tr = v.tid[cN + r];
        if (tr < 0) continue;
        /* exactly-once receive (R-b) */
        for (a = 0; a < N; a++) { int id = v.xid[(cN + a) * N + r]; if (id >= 0) { tmpc[n_in] = id; tmpv[n_in] = 1; n_in++; } }
        if (n_in && !d->pre[cN + r])
          st = mlsys__coll_row(&R, n_in, tmpc, tmpv, 0, NULL, NULL, d->post[cN + r] ? MLSYS_ROW_EQ : MLSYS_ROW_LE, 1);
        /* presence (R-c): a chunk leaves r only if r received it */
        if (!st && !d->pre[cN + r])
          for (b = 0; b < N && !st; b++) {
            int id = v.xid[(cN + r) * N + b];
            if (id < 0) continue;
            tmpc[n_in] = id; tmpv[n_in] = 1;
            { int k; for (k = 0; k < n_in; k++) tmpv[k] = -1; }
            st = mlsys__coll_row(&R, n_in + 1, tmpc, tmpv, 0, NULL, NULL, MLSYS_ROW_LE, 0);
            { int k; for (k = 0; k < n_in; k++) tmpv[k] = 1; }
          }
        /* makespan (5.2) */
        if (!st && d->post[cN + r]) {
          int pc[1] = {v.nx + tr};
          double pv[1] = {-1};
          row_c[0] = Tcol; row_v[0] = 1;
          st = mlsys__coll_row(&R, 1, pc, pv, 1, row_c, row_v, MLSYS_ROW_GE, 0);
        }
      }
      /* start times along used links (5.4 + 5.5 as big-M): t_b ≥ t_a + lat − M(1 − x) */
      for (i = v.xoff[c]; i < v.xoff[c + 1] && !st; i++) {
        int l = v.xl[i], pc[3];
        double pv[3], lat = mlsys__coll_link_lat(lt, l, chunk_bytes) / unit;
        a = l / N; b = l % N;
        pc[0] = v.nx + v.tid[cN + b]; pv[0] = 1;
        pc[1] = v.nx + v.tid[cN + a]; pv[1] = -1;
        pc[2] = i; pv[2] = -M;
        st = mlsys__coll_row(&R, 3, pc, pv, 0, NULL, NULL, MLSYS_ROW_GE, lat - M);
      }
      /* (R-e) fan-out through one switch port is serial: T ≥ t[c,a] + Σ_d lat·x[c,a,d] */
      for (a = 0; a < N && !st; a++) {
        int k = 0, tr = v.tid[cN + a];
        if (tr < 0) continue;
        for (b = 0; b < N; b++) {
          int id = v.xid[(cN + a) * N + b];
          if (id >= 0 && lt->sw[(size_t)a * N + b] >= 0) { tmpc[k] = id; tmpv[k] = -mlsys__coll_link_lat(lt, a * N + b, chunk_bytes) / unit; k++; }
        }
        if (k > 1) {
          tmpc[k] = v.nx + tr; tmpv[k] = -1;
          row_c[0] = Tcol; row_v[0] = 1;
          st = mlsys__coll_row(&R, k + 1, tmpc, tmpv, 1, row_c, row_v, MLSYS_ROW_GE, 0);
        }
      }
      /* eq. 5.15: a chunk needed on another node crosses to it at least once (the cut that makes the LP tight) */
      if (lt->nnodes > 1)
        for (s = 0; s < lt->nnodes && !st; s++) {
          int o = d->origin[c], k = 0, needed = 0;
          if (s == o / G) continue;
          for (r = s * G; r < (s + 1) * G; r++) needed |= d->post[cN + r] && !d->pre[cN + r];
          if (!needed) continue;
          for (i = v.xoff[c]; i < v.xoff[c + 1]; i++)
            if (v.xl[i] / N / G == o / G && v.xl[i] % N / G == s) { tmpc[k] = i; tmpv[k] = 1; k++; }
          st = mlsys__coll_row(&R, k, tmpc, tmpv, 0, NULL, NULL, MLSYS_ROW_GE, 1);
        }
    }
    /* congestion (5.6) per link, ports (5.7/5.8) per switch and serial NIC, is_util (5.9/5.10) */
    if (!st) {
      int *lc = (int *)mlsys_alloc((size_t)v.nx + 1, sizeof(int));
      double *lv = (double *)mlsys_alloc((size_t)v.nx + 1, sizeof(double));
      int p;
      if (!lc || !lv) st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
      for (i = 0; i < N * N && !st; i++) {
        int k = 0;
        if (!lt->kind[i]) continue;
        for (c = 0; c < d->nchunks; c++) {
          int id = v.xid[(size_t)c * N * N + i];
          if (id >= 0) { lc[k] = id; lv[k] = -mlsys__coll_link_lat(lt, i, chunk_bytes) / unit; k++; }
        }
        if (!k) continue;
        row_c[0] = Tcol; row_v[0] = 1;
        st = mlsys__coll_row(&R, k, lc, lv, 1, row_c, row_v, MLSYS_ROW_GE, 0);
        if (!st && ucol[i] >= 0) {
          int j;
          for (j = 0; j < k && !st; j++) {   /* u ≥ x */
            int pc[1] = {lc[j]};
            double pv[1] = {-1}, one = 1;
            st = mlsys__coll_row(&R, 1, pc, pv, 1, &ucol[i], &one, MLSYS_ROW_GE, 0);
          }
          for (j = 0; j < k; j++) lv[j] = -1;   /* u ≤ Σ x */
          if (!st) { double one = 1; st = mlsys__coll_row(&R, k, lc, lv, 1, &ucol[i], &one, MLSYS_ROW_LE, 0); }
        }
      }
      /* ports: for every rank and switch, and every serial NIC, out and in */
      for (p = 0; p < 2 && !st; p++) {
        int grp, ngrp = p == 0 ? N * (lt->nswitch > 0 ? lt->nswitch : 0) : (lt->nic_serial ? N : 0);
        for (grp = 0; grp < ngrp && !st; grp++) {
          int dir;
          for (dir = 0; dir < 2 && !st; dir++) {
            int k = 0;
            for (i = 0; i < N * N; i++) {
              int src = i / N, dst = i % N, in;
              if (!lt->kind[i]) continue;
              if (p == 0) {
                int rank = grp / lt->nswitch, swi = grp % lt->nswitch;
                if (lt->sw[i] != swi) continue;
                in = dir == 0 ? src == rank : dst == rank;
              } else {
                if (lt->kind[i] != MLSYS_COLL_LINK_IB) continue;
                in = dir == 0 ? lt->nic[src] == grp : lt->nic[dst] == grp;
              }
              if (!in) continue;
              for (c = 0; c < d->nchunks; c++) {
                int id = v.xid[(size_t)c * N * N + i];
                if (id >= 0) { lc[k] = id; lv[k] = -mlsys__coll_link_lat(lt, i, chunk_bytes) / unit; k++; }
              }
            }
            if (k < 2) continue;
            row_c[0] = Tcol; row_v[0] = 1;
            st = mlsys__coll_row(&R, k, lc, lv, 1, row_c, row_v, MLSYS_ROW_GE, 0);
          }
        }
      }
      mlsys_free(lc); mlsys_free(lv);
    }
    mlsys_free(tmpc); mlsys_free(tmpv);
    if (st) goto done;
    stats->route_vars = mlsys_milp_num_vars(m); stats->route_bins = nb; stats->route_rows = mlsys_milp_num_rows(m);
    /* warm start from the heuristic routing when it is consistent with the symmetric model */
    mlsys_free(inc);
    inc = (double *)mlsys_calloc((size_t)mlsys_milp_num_vars(m) + 1, sizeof(double));
    if (inc) {
      int ok = 1;
      unsigned char *setc = (unsigned char *)mlsys_calloc((size_t)mlsys_milp_num_vars(m) + 1, 1);
      for (i = 0; i < nproto && ok && setc; i++) {
        int col = R.col[i];
        double val = i < v.nx ? hx[i] : ht[i - v.nx] / unit;
        if (col < 0) { if (i < v.nx && hx[i]) ok = 0; continue; }
        if (setc[col] && fabs(inc[col] - val) > 1e-9) ok = 0;
        inc[col] = val; setc[col] = 1;
      }
      if (ok && setc) {
        double viol;
        inc[Tcol] = heurT / unit;
        for (i = 0; i < N * N; i++)
          if (ucol[i] >= 0)
            for (c = 0; c < d->nchunks; c++) { int id = v.xid[(size_t)c * N * N + i]; if (id >= 0 && hx[id]) inc[ucol[i]] = 1; }
        /* T enters every row it is in with coefficient +1 (≥ rows): raising it by the violation repairs them */
        viol = mlsys_milp_max_violation(m, inc, 1);
        if (viol > 1e-9) { inc[Tcol] += viol; viol = mlsys_milp_max_violation(m, inc, 1); }
        if (inc[Tcol] > U || viol > 1e-6) ok = 0;
      }
      mlsys_free(setc);
      if (!ok) { mlsys_free(inc); inc = NULL; }
    }
    memset(&mo, 0, sizeof mo);
    mo.time_limit = (sk && sk->route_time_limit > 0 ? sk->route_time_limit : 60) - (mlsys_now() - t0);
    if (mo.time_limit < 1) mo.time_limit = 1;   /* retries share the one limit */
    mo.backend = (mlsys_milp_backend)(sk ? sk->backend : 0);
    if (!sk || !sk->backend) mo.backend = nb > 4000 && mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? MLSYS_SOLVER_CBC : MLSYS_SOLVER_LPSOLVE;
    if (!mlsys_milp_has_backend(mo.backend)) mo.backend = MLSYS_SOLVER_DEFAULT;
    mo.mip_gap_abs = 1e-6; mo.mip_gap_rel = 1e-9;
    mo.verbose = sk ? sk->verbose > 1 : 0;
    mo.branch_ceiling = 1;   /* [spec §3.4.1] ceiling branching on x finds routings fast */
    if (getenv("MLSYS_CEIL")) mo.branch_ceiling = atoi(getenv("MLSYS_CEIL"));
    if (getenv("MLSYS_BACKEND")) mo.backend = (mlsys_milp_backend)atoi(getenv("MLSYS_BACKEND"));
    if (getenv("MLSYS_NOINC")) mo.incumbent = NULL;
    if (getenv("MLSYS_DUMP")) mlsys_milp_write(m, getenv("MLSYS_DUMP"));
    {
      int anyu = 0;
      for (i = 0; i < N * N && !anyu; i++) anyu = ucol[i] >= 0;
      if (sk && sk->no_warm_start) { mlsys_free(inc); inc = NULL; }
      if (inc && !anyu && inc[Tcol] <= fmax(lbT / unit, 0) * (1 + 1e-9) + 1e-9) {
        /* the warm start meets the lower bound: it is optimal, no search needed */
        memset(&res, 0, sizeof res);
        res.status = MLSYS_MILP_OPTIMAL;
        res.objective = res.bound = inc[Tcol];
        res.nvars = mlsys_milp_num_vars(m);
        res.x = (double *)mlsys_alloc((size_t)res.nvars, sizeof(double));
        if (!res.x) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
        memcpy(res.x, inc, (size_t)res.nvars * sizeof(double));
        st = MLSYS_OK;
        break;
      }
    }
    mo.incumbent = inc;
    st = mlsys_milp_solve(m, &mo, &res);
    if (st == MLSYS_OK) break;
    if (st != MLSYS_ERR_INFEASIBLE && st != MLSYS_ERR_TIMEOUT) goto done;
    if (inc) break;   /* with a feasible warm start the model cannot be infeasible */
  }
  if (st) {
    if (st == MLSYS_ERR_TIMEOUT) st = mlsys_set_error(st, "routing MILP (%d binaries, %d rows): no feasible routing found within the time limit", stats->route_bins, stats->route_rows);
    else mlsys_prefix_error("routing MILP (%d binaries, %d rows)", stats->route_bins, stats->route_rows);
    goto done;
  }
  stats->route_status = res.status;
  stats->route_obj = res.x[Tcol] * unit;
  stats->route_bound = res.bound * unit;
  {
    double obj = res.objective, bnd = res.bound;
    stats->route_gap = res.status == MLSYS_MILP_OPTIMAL ? 0 : (isfinite(bnd) ? fabs(obj - bnd) / fmax(1e-9, fabs(obj)) : 1);
  }
  if ((st = mlsys_coll_algo_init(out, d->kind, N, d->chunkup, chunk_bytes))) goto done;
  for (c = 0; c < d->nchunks && !st; c++)
    for (i = v.xoff[c]; i < v.xoff[c + 1] && !st; i++) {
      int col = R.col[i];
      if (col < 0 || res.x[col] < 0.5) continue;
      if ((st = mlsys_coll_algo_push(out, c, v.xl[i] / N, v.xl[i] % N, MLSYS_COLL_XF_COPY, -1))) break;
      out->x[out->nxfer - 1].t_send = res.x[R.col[v.nx + v.tid[(size_t)c * N + v.xl[i] / N]]] * unit;
      out->x[out->nxfer - 1].t_arrive = out->x[out->nxfer - 1].t_send + mlsys__coll_link_lat(lt, v.xl[i], chunk_bytes);
    }
  if (st) goto done;
  {
    /* drop transfers to ranks that neither need the chunk nor forward it (the model allows them when free) */
    int changed = 1;
    while (changed) {
      int w = 0, j;
      changed = 0;
      for (i = 0; i < out->nxfer; i++) {
        mlsys_coll_xfer *x = &out->x[i];
        int fwd = 0;
        if (!d->post[(size_t)x->chunk * N + x->dst])
          for (j = 0; j < out->nxfer && !fwd; j++) fwd = out->x[j].chunk == x->chunk && out->x[j].src == x->dst;
        if (d->post[(size_t)x->chunk * N + x->dst] || fwd) out->x[w++] = *x;
        else changed = 1;
      }
      out->nxfer = w;
    }
  }
  /* execution order: by routing-model send time, then along each chunk's tree */
  {
    int j, k;
    for (i = 1; i < out->nxfer; i++) {   /* insertion sort keeps it simple and stable */
      mlsys_coll_xfer x = out->x[i];
      for (j = i - 1; j >= 0 && out->x[j].t_send > x.t_send + 1e-9; j--) out->x[j + 1] = out->x[j];
      out->x[j + 1] = x;
    }
    /* ties: a transfer must come after the delivery of its chunk to its source */
    for (i = 0; i < out->nxfer; i++)
      for (k = i + 1; k < out->nxfer; k++)
        if (out->x[k].chunk == out->x[i].chunk && out->x[k].dst == out->x[i].src) {
          mlsys_coll_xfer x = out->x[k];
          memmove(&out->x[i + 1], &out->x[i], (size_t)(k - i) * sizeof x);
          out->x[i] = x;
          i--;
          break;
        }
  }
  st = MLSYS_OK;
done:
  stats->route_s = mlsys_now() - t0;
  mlsys_milp_result_free(&res);
  mlsys_milp_free(m);
  mlsys__coll_rvars_free(&v);
  mlsys_free(uf); mlsys_free(zero); mlsys_free(R.col); mlsys_free(R.hash); mlsys_free(R.tc); mlsys_free(R.tv);
  mlsys_free(hx); mlsys_free(ht); mlsys_free(inc); mlsys_free(ucol); mlsys_free(tpre);
  if (st) mlsys_coll_algo_free(out);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   Stage 2 — greedy ordering (§5.5.2, spec §3.6). Generic over the data dependencies, so the same code orders
   ALLGATHER/ALLTOALL trees, inverted (reduce) trees and ALLREDUCE concatenations.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { double k[4]; int tb[5]; } mlsys__coll_key;
static int mlsys__coll_key_less(const mlsys__coll_key *p, const mlsys__coll_key *q) {
  int i;
  for (i = 0; i < 4; i++) {
    double tol = 1e-9 * (1 + fabs(p->k[i]) + fabs(q->k[i]));
    if (p->k[i] < q->k[i] - tol) return 1;
    if (p->k[i] > q->k[i] + tol) return 0;
  }
  for (i = 0; i < 5; i++)
    if (p->tb[i] != q->tb[i]) return p->tb[i] < q->tb[i];
  return 0;
}

static mlsys_status mlsys__coll_order_one(const mlsys_coll_topo *t, mlsys_coll_algo *a, int heur) {
  int N = a->nranks, G = t->gpus_per_node, n = a->nxfer, i, k, nsw = t->nswitch > 0 ? t->nswitch : 1, done_n = 0;
  mlsys__coll_prec p;
  int *sc_off = NULL, *sc = NULL, *npred = NULL, *pick = NULL, *cand = NULL, ncand = 0, *perm = NULL;
  double *lat = NULL, *trav = NULL, *hast = NULL, *ready = NULL, *ltime = NULL, *psend = NULL, *precv = NULL, *t0 = NULL;
  mlsys_coll_xfer *nx = NULL;
  mlsys_status st;
  if ((st = mlsys__coll_prec_build(t, a, &p))) return st;
  sc_off = (int *)mlsys_calloc((size_t)n + 2, sizeof(int));
  sc = (int *)mlsys_alloc((size_t)p.dp_off[n] + 1, sizeof(int));
  npred = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  pick = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  cand = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  perm = (int *)mlsys_alloc((size_t)n + 1, sizeof(int));
  lat = (double *)mlsys_alloc((size_t)n + 1, sizeof(double));
  trav = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  hast = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  ready = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  t0 = (double *)mlsys_calloc((size_t)n + 1, sizeof(double));
  ltime = (double *)mlsys_calloc((size_t)N * N, sizeof(double));
  psend = (double *)mlsys_calloc((size_t)N * nsw + 2 * (size_t)N, sizeof(double));
  precv = (double *)mlsys_calloc((size_t)N * nsw + 2 * (size_t)N, sizeof(double));
  nx = (mlsys_coll_xfer *)mlsys_alloc((size_t)n + 1, sizeof *nx);
  if (!sc_off || !sc || !npred || !pick || !cand || !perm || !lat || !trav || !hast || !ready || !t0 || !ltime || !psend || !precv || !nx) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (i = 0; i < n; i++) {
    lat[i] = mlsys__coll_unit_lat(t, a, i, 1, 0);
    npred[i] = p.dp_off[i + 1] - p.dp_off[i];
    for (k = p.dp_off[i]; k < p.dp_off[i + 1]; k++) sc_off[p.dp[k] + 1]++;
  }
  for (i = 0; i < n; i++) sc_off[i + 1] += sc_off[i];
  {
    int *fill = pick;
    for (i = 0; i < n; i++) fill[i] = sc_off[i];
    for (i = 0; i < n; i++)
      for (k = p.dp_off[i]; k < p.dp_off[i + 1]; k++) sc[fill[p.dp[k]]++] = i;
  }
  /* to_travel: longest (h12: summed) remaining path from the transfer on; has_travelled: path so far (§3.5) */
  for (i = n - 1; i >= 0; i--) {
    double best = 0, sum = 0;
    for (k = sc_off[i]; k < sc_off[i + 1]; k++) { if (trav[sc[k]] > best) best = trav[sc[k]]; sum += trav[sc[k]]; }
    trav[i] = lat[i] + (heur == MLSYS_COLL_H12 ? sum : best);
  }
  for (i = 0; i < n; i++)
    for (k = p.dp_off[i]; k < p.dp_off[i + 1]; k++)
      if (hast[p.dp[k]] + lat[p.dp[k]] > hast[i]) hast[i] = hast[p.dp[k]] + lat[p.dp[k]];
  for (i = 0; i < n; i++) if (npred[i] == 0) cand[ncand++] = i;
  while (ncand > 0) {
    int bi = -1, bj = -1;
    mlsys__coll_key best, key;
    double bct = 0;
    for (k = 0; k < ncand; k++) {
      const mlsys_coll_xfer *x = &a->x[cand[k]];
      size_t l = (size_t)x->src * N + x->dst;
      double ct = ready[cand[k]];
      int own = x->src / G == mlsys__coll_owner(a, x->chunk) / G;
      if (ltime[l] > ct) ct = ltime[l];
      if (t->sw[l] >= 0) {
        if (psend[x->src * nsw + t->sw[l]] > ct) ct = psend[x->src * nsw + t->sw[l]];
        if (precv[x->dst * nsw + t->sw[l]] > ct) ct = precv[x->dst * nsw + t->sw[l]];
      }
      if (t->nic_serial && t->kind[l] == MLSYS_COLL_LINK_IB && t->nic[x->src] >= 0 && t->nic[x->dst] >= 0) {
        size_t o = (size_t)N * nsw;
        if (psend[o + t->nic[x->src]] > ct) ct = psend[o + t->nic[x->src]];
        if (precv[o + t->nic[x->dst]] > ct) ct = precv[o + t->nic[x->dst]];
      }
      memset(&key, 0, sizeof key);
      switch (heur) {
        case MLSYS_COLL_H_ASAP: key.k[0] = ct; key.k[1] = -trav[cand[k]]; key.k[2] = hast[cand[k]]; break;
        case MLSYS_COLL_H10: case MLSYS_COLL_H12: key.k[0] = -trav[cand[k]]; key.k[1] = ct; break;
        case MLSYS_COLL_H14: key.k[0] = ct; key.k[1] = !own; key.k[2] = -trav[cand[k]]; break;
        default: key.k[0] = -trav[cand[k]]; key.k[1] = hast[cand[k]]; key.k[2] = ct; break;   /* thesis rule */
      }
      key.tb[0] = ((x->src - x->dst) % N + N) % N; key.tb[1] = x->dst % G; key.tb[2] = x->src % G; key.tb[3] = x->dst / G; key.tb[4] = cand[k];
      if (bi < 0 || mlsys__coll_key_less(&key, &best)) { best = key; bi = cand[k]; bj = k; bct = ct; }
    }
    {
      const mlsys_coll_xfer *x = &a->x[bi];
      size_t l = (size_t)x->src * N + x->dst;
      double t1 = bct + lat[bi];
      t0[bi] = bct;
      pick[done_n++] = bi;
      cand[bj] = cand[--ncand];
      ltime[l] = t1;
      if (t->sw[l] >= 0) { psend[x->src * nsw + t->sw[l]] = t1; precv[x->dst * nsw + t->sw[l]] = t1; }
      if (t->nic_serial && t->kind[l] == MLSYS_COLL_LINK_IB && t->nic[x->src] >= 0 && t->nic[x->dst] >= 0) {
        size_t o = (size_t)N * nsw;
        psend[o + t->nic[x->src]] = t1; precv[o + t->nic[x->dst]] = t1;
      }
      for (k = sc_off[bi]; k < sc_off[bi + 1]; k++) {
        int j = sc[k];
        if (t1 > ready[j]) ready[j] = t1;
        if (--npred[j] == 0) cand[ncand++] = j;
      }
    }
  }
  if (done_n != n) { st = mlsys_set_error(MLSYS_ERR_SOLVER, "ordering: %d of %d transfers never became ready", n - done_n, n); goto done; }
  /* the new array order: greedy start times, ties in pick order (keeps link, port and data order) */
  for (i = 0; i < n; i++) perm[i] = pick[i];
  for (i = 1; i < n; i++) {
    int v = perm[i], j;
    for (j = i - 1; j >= 0 && t0[perm[j]] > t0[v] + 1e-12 * (1 + fabs(t0[v])); j--) perm[j + 1] = perm[j];
    perm[j + 1] = v;
  }
  for (i = 0; i < n; i++) { nx[i] = a->x[perm[i]]; nx[i].group = -1; nx[i].t_send = t0[perm[i]]; nx[i].t_arrive = t0[perm[i]] + lat[perm[i]]; }
  memcpy(a->x, nx, (size_t)n * sizeof *nx);
done:
  mlsys__coll_prec_free(&p);
  mlsys_free(sc_off); mlsys_free(sc); mlsys_free(npred); mlsys_free(pick); mlsys_free(cand); mlsys_free(perm);
  mlsys_free(lat); mlsys_free(trav); mlsys_free(hast); mlsys_free(ready); mlsys_free(t0); mlsys_free(ltime);
  mlsys_free(psend); mlsys_free(precv); mlsys_free(nx);
  return st;
}

MLSYS_DEF mlsys_status mlsys_coll_order(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk, const mlsys_coll_def *d,
                                        mlsys_coll_algo *a) {
  static const int keys[5] = {MLSYS_COLL_H_THESIS, MLSYS_COLL_H_ASAP, MLSYS_COLL_H10, MLSYS_COLL_H12, MLSYS_COLL_H14};
  int h = sk ? sk->heuristic : 0, i;
  mlsys_coll_algo best, trial;
  double bt = 0;
  mlsys_status st;
  (void)d;
  if (h != MLSYS_COLL_H_AUTO) return mlsys__coll_order_one(lt, a, h);
  memset(&best, 0, sizeof best);
  for (i = 0; i < 5; i++) {
    mlsys_coll_sim_result r;
    if ((st = mlsys_coll_algo_copy(a, &trial))) { mlsys_coll_algo_free(&best); return st; }
    if ((st = mlsys__coll_order_one(lt, &trial, keys[i])) || (st = mlsys_coll_simulate(lt, &trial, NULL, &r))) {
      mlsys_coll_algo_free(&trial); mlsys_coll_algo_free(&best); return st;
    }
    if (!best.x || r.makespan_us < bt - 1e-9 * bt) { mlsys_coll_algo_free(&best); best = trial; bt = r.makespan_us; }
    else mlsys_coll_algo_free(&trial);
  }
  if (best.x) memcpy(a->x, best.x, (size_t)a->nxfer * sizeof *a->x);
  a->time_us = bt;
  mlsys_coll_algo_free(&best);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   Stage 3 — contiguity and exact scheduling MILP (§5.5.3, eqs. 5.16–5.21; spec §3.7 lp_solve form)
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__coll_xfer_cmp_time(const void *x, const void *y) {
  const mlsys_coll_xfer *p = (const mlsys_coll_xfer *)x, *q = (const mlsys_coll_xfer *)y;
  return (p->t_send > q->t_send) - (p->t_send < q->t_send);
}

MLSYS_DEF mlsys_status mlsys_coll_schedule(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk,
                                           const mlsys_coll_def *d, mlsys_coll_algo *a, mlsys_coll_stats *stats) {
  int n = a->nxfer, W = sk && sk->max_contig > 0 ? sk->max_contig : 6, i, k, npairs = 0, any = 0;
  mlsys__coll_prec p;
  mlsys_coll_sim_result sr;
  mlsys_coll_stats dummy;
  mlsys_milp *m = NULL;
  mlsys_milp_result res;
  mlsys_milp_opts mo;
  int *scol = NULL, Tcol, *pos = NULL, *seq = NULL, *pair_i = NULL, *pair_j = NULL, *pair_col = NULL, *poff = NULL, *plist = NULL;
  double *base = NULL, *beta = NULL, *inc = NULL, unit = 0, U, M;
  mlsys_status st;
  double t0 = mlsys_now();
  (void)d;
  if (!stats) stats = &dummy;
  memset(&res, 0, sizeof res);
  for (i = 0; i < n; i++) a->x[i].group = -1;
  if ((st = mlsys_coll_simulate(lt, a, NULL, &sr))) return st;
  stats->sched_obj = stats->sched_bound = sr.makespan_us;
  stats->sched_status = MLSYS_MILP_OPTIMAL; stats->sched_gap = 0; stats->nmerged = 0;
  stats->sched_vars = stats->sched_bins = stats->sched_rows = 0;
  if ((st = mlsys__coll_prec_build(lt, a, &p))) return st;
  for (i = 0; i < n && !any; i++) any = W > 1 && mlsys__coll_mergeable(lt, p.lnk[i], 0) && p.lnext[i] >= 0;
  if (!any) {   /* no merge decision: the schedule is the longest path, i.e. the simulation (§3.7) */
    mlsys__coll_prec_free(&p);
    stats->sched_s = mlsys_now() - t0;
    return MLSYS_OK;
  }
  scol = (int *)mlsys_alloc((size_t)n, sizeof(int));
  base = (double *)mlsys_alloc((size_t)n, sizeof(double));
  beta = (double *)mlsys_calloc((size_t)n, sizeof(double));
  pos = (int *)mlsys_alloc((size_t)n, sizeof(int));
  seq = (int *)mlsys_alloc((size_t)n, sizeof(int));
  pair_i = (int *)mlsys_alloc((size_t)n * W, sizeof(int));
  pair_j = (int *)mlsys_alloc((size_t)n * W, sizeof(int));
  pair_col = (int *)mlsys_alloc((size_t)n * W, sizeof(int));
  poff = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  plist = (int *)mlsys_alloc((size_t)n * W * 2 + 1, sizeof(int));
  if (!scol || !base || !beta || !pos || !seq || !pair_i || !pair_j || !pair_col || !poff || !plist) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  for (i = 0; i < n; i++) {
    double l = mlsys__coll_unit_lat(lt, a, i, 1, 0);
    if (l > unit) unit = l;
  }
  unit /= 1000.0;
  U = sr.makespan_us / unit * (1 + 1e-9) + 1e-6;
  M = U + 2000.0 * W;
  if ((st = mlsys_milp_create(&m))) goto done;
  for (i = 0; i < n; i++) {
    scol[i] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, U, 0, NULL);
    base[i] = mlsys__coll_unit_lat(lt, a, i, 1, 0) / unit;
    if (mlsys__coll_mergeable(lt, p.lnk[i], 0)) beta[i] = (mlsys__coll_unit_lat(lt, a, i, 2, 0) - mlsys__coll_unit_lat(lt, a, i, 1, 0)) / unit;
  }
  Tcol = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, U, 1.0, "T");
  /* merge pairs within the window on each mergeable link (positions along the link's order) */
  for (i = 0; i < n; i++) pos[i] = -1;
  for (i = 0; i < n; i++) {
    int j, q, len = 0;
    if (pos[i] >= 0 || !mlsys__coll_mergeable(lt, p.lnk[i], 0)) continue;
    for (j = i; j >= 0; j = p.lnext[j]) { pos[j] = len; seq[len++] = j; }
    for (j = 0; j < len; j++)
      for (q = j + 1; q < len && q - j < W; q++) {
        pair_i[npairs] = seq[j]; pair_j[npairs] = seq[q];
        pair_col[npairs] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, 0, NULL);
        poff[seq[j] + 1]++; poff[seq[q] + 1]++;
        npairs++;
      }
  }
  for (i = 0; i < n; i++) poff[i + 1] += poff[i];
  {
    int *fill = seq;
    for (i = 0; i < n; i++) fill[i] = poff[i];
    for (k = 0; k < npairs; k++) { plist[fill[pair_i[k]]++] = pair_col[k]; plist[fill[pair_j[k]]++] = pair_col[k]; }
  }
  {
    int *rc = (int *)mlsys_alloc((size_t)W * 2 + 8, sizeof(int));
    double *rv = (double *)mlsys_alloc((size_t)W * 2 + 8, sizeof(double));
    if (!rc || !rv) { mlsys_free(rc); mlsys_free(rv); st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
    /* s_to − s_from − β_from·Σ y_from ≥ base_from: the finish of `from` (its lat, eq. 5.17, grows with merges) */
#define MLSYS__COLL_AFTER(from, to, extra_col, extra_v)                                                    \
    do {                                                                                                 \
      int nn_ = 0, q_;                                                                                   \
      rc[nn_] = (to) >= 0 ? scol[to] : Tcol; rv[nn_++] = 1;                                              \
      rc[nn_] = scol[from]; rv[nn_++] = -1;                                                              \
      for (q_ = poff[from]; q_ < poff[(from) + 1]; q_++) { rc[nn_] = plist[q_]; rv[nn_++] = -beta[from]; } \
      if ((extra_col) >= 0) { rc[nn_] = (extra_col); rv[nn_++] = (extra_v); }                            \
      if (!st) st = mlsys_milp_add_row(m, nn_, rc, rv, MLSYS_ROW_GE, base[from], NULL);                  \
    } while (0)
    for (i = 0; i < n && !st; i++) {
      for (k = p.dp_off[i]; k < p.dp_off[i + 1]; k++) MLSYS__COLL_AFTER(p.dp[k], i, -1, 0);   /* data (5.4, 5.18) */
      MLSYS__COLL_AFTER(i, -1, -1, 0);                                                          /* makespan */
      if (p.lnext[i] >= 0 && pos[i] < 0) MLSYS__COLL_AFTER(i, p.lnext[i], -1, 0);               /* link order */
    }
    for (i = 0; i < p.npe && !st; i++) MLSYS__COLL_AFTER(p.pe_from[i], p.pe_to[i], -1, 0);     /* ports (5.20, 5.21) */
    for (k = 0; k < npairs && !st; k++) {
      int pi = pair_i[k], pj = pair_j[k], y = pair_col[k];
      /* merged ⇒ same send time (5.16): s_j − s_i ≤ M(1 − y) */
      rc[0] = scol[pj]; rv[0] = 1; rc[1] = scol[pi]; rv[1] = -1; rc[2] = y; rv[2] = M;
      st = mlsys_milp_add_row(m, 3, rc, rv, MLSYS_ROW_LE, M, NULL);
      MLSYS__COLL_AFTER(pi, pj, y, M);     /* not merged ⇒ j after i finishes (5.19), every pair in the window */
      if (p.lnext[pi] == pj) {
        /* and never before i (with the row above: merged ⇒ equal) */
        rc[0] = scol[pj]; rv[0] = 1; rc[1] = scol[pi]; rv[1] = -1;
        if (!st) st = mlsys_milp_add_row(m, 2, rc, rv, MLSYS_ROW_GE, 0, NULL);
      } else if (!st) {
        /* contiguity: i merges with j only if it merges with the one before j */
        int q;
        for (q = k - 1; q >= 0; q--)
          if (pair_i[q] == pi && p.lnext[pair_j[q]] == pj) break;
        if (q >= 0) { rc[0] = y; rv[0] = 1; rc[1] = pair_col[q]; rv[1] = -1; st = mlsys_milp_add_row(m, 2, rc, rv, MLSYS_ROW_LE, 0, NULL); }
      }
    }
    /* beyond the window: hard order, so a group never exceeds W transfers */
    for (i = 0; i < n && !st; i++)
      if (pos[i] >= 0) {
        int j = i, q;
        for (q = 0; q < W && j >= 0; q++) j = p.lnext[j];
        if (j >= 0) MLSYS__COLL_AFTER(i, j, -1, 0);
      }
#undef MLSYS__COLL_AFTER
    mlsys_free(rc); mlsys_free(rv);
  }
  if (st) goto done;
  stats->sched_vars = mlsys_milp_num_vars(m); stats->sched_bins = npairs; stats->sched_rows = mlsys_milp_num_rows(m);
  inc = (double *)mlsys_calloc((size_t)mlsys_milp_num_vars(m), sizeof(double));
  if (inc) {
    for (i = 0; i < n; i++) inc[scol[i]] = a->x[i].t_send / unit;
    inc[Tcol] = sr.makespan_us / unit;
    if (mlsys_milp_max_violation(m, inc, 1) > 1e-6) { mlsys_free(inc); inc = NULL; }
  }
  memset(&mo, 0, sizeof mo);
  mo.time_limit = sk && sk->sched_time_limit > 0 ? sk->sched_time_limit : 60;
  mo.backend = (mlsys_milp_backend)(sk ? sk->backend : 0);
  if (!mlsys_milp_has_backend(mo.backend)) mo.backend = MLSYS_SOLVER_DEFAULT;
  mo.incumbent = inc;
  mo.mip_gap_abs = 1e-6; mo.mip_gap_rel = 1e-9;
  mo.verbose = sk ? sk->verbose > 1 : 0;
  st = mlsys_milp_solve(m, &mo, &res);
  if (st) { mlsys_prefix_error("scheduling MILP (%d merge pairs)", npairs); goto done; }
  stats->sched_status = res.status;
  stats->sched_obj = res.objective * unit;
  stats->sched_bound = res.bound * unit;
  stats->sched_gap = res.status == MLSYS_MILP_OPTIMAL ? 0 : (isfinite(res.bound) ? fabs(res.objective - res.bound) / fmax(1e-9, fabs(res.objective)) : 1);
  if (getenv("MLSYS_DEBUG")) {
    for (i = 0; i < n; i++) fprintf(stderr, "x%d c%d %d->%d s=%.3f sim=%.3f L=%.3f\n", i, a->x[i].chunk, a->x[i].src, a->x[i].dst, res.x[scol[i]] * unit, a->x[i].t_send, base[i]*unit);
    for (k = 0; k < npairs; k++) if (res.x[pair_col[k]] > 0.5) fprintf(stderr, "merge %d %d\n", pair_i[k], pair_j[k]);
    fprintf(stderr, "T=%.3f\n", res.x[Tcol] * unit);
  }
  /* groups: runs of consecutive transfers merged with the run's first one */
  {
    int gid = 0;
    for (k = 0; k < npairs; k++) {
      if (res.x[pair_col[k]] < 0.5) continue;
      if (a->x[pair_i[k]].group < 0) a->x[pair_i[k]].group = gid++;
      if (a->x[pair_j[k]].group < 0) { a->x[pair_j[k]].group = a->x[pair_i[k]].group; stats->nmerged++; }
    }
  }
  if ((st = mlsys_coll_simulate(lt, a, NULL, &sr))) { mlsys_prefix_error("scheduling: the merged schedule does not simulate"); goto done; }
  /* time order (stable): equal send times only within a merge group, so link/port/data orders are kept */
  {
    mlsys_coll_xfer *tmp = a->x;
    for (i = 1; i < n; i++) {
      mlsys_coll_xfer x = tmp[i];
      int j;
      for (j = i - 1; j >= 0 && mlsys__coll_xfer_cmp_time(&tmp[j], &x) > 0; j--) tmp[j + 1] = tmp[j];
      tmp[j + 1] = x;
    }
  }
  st = MLSYS_OK;
done:
  stats->sched_s = mlsys_now() - t0;
  mlsys__coll_prec_free(&p);
  mlsys_milp_result_free(&res);
  mlsys_milp_free(m);
  mlsys_free(scol); mlsys_free(base); mlsys_free(beta); mlsys_free(pos); mlsys_free(seq); mlsys_free(pair_i);
  mlsys_free(pair_j); mlsys_free(pair_col); mlsys_free(poff); mlsys_free(plist); mlsys_free(inc);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   Combining collectives (§5.7): REDUCESCATTER = inverted ALLGATHER, ALLREDUCE = REDUCESCATTER then ALLGATHER
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_coll_topo_transpose(const mlsys_coll_topo *t, mlsys_coll_topo *out) {
  int N = t->nranks, a, b;
  mlsys_status st = mlsys_coll_topo_copy(t, out);
  if (st) return st;
  for (a = 0; a < N; a++)
    for (b = 0; b < N; b++) {
      out->kind[(size_t)a * N + b] = t->kind[(size_t)b * N + a];
      out->cost[(size_t)a * N + b] = t->cost[(size_t)b * N + a];
      out->sw[(size_t)a * N + b] = t->sw[(size_t)b * N + a];
    }
  return MLSYS_OK;
}
/* Links of t plus the reverse of every link (kept cost where both exist): the ALLREDUCE topology. */
static mlsys_status mlsys__coll_topo_with_reverse(const mlsys_coll_topo *t, mlsys_coll_topo *out) {
  int N = t->nranks, a, b;
  mlsys_status st = mlsys_coll_topo_copy(t, out);
  if (st) return st;
  for (a = 0; a < N; a++)
    for (b = 0; b < N; b++)
      if (!out->kind[(size_t)a * N + b] && t->kind[(size_t)b * N + a]) {
        out->kind[(size_t)a * N + b] = t->kind[(size_t)b * N + a];
        out->cost[(size_t)a * N + b] = t->cost[(size_t)b * N + a];
        out->sw[(size_t)a * N + b] = t->sw[(size_t)b * N + a];
      }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_coll_invert(const mlsys_coll_topo *lt, const mlsys_coll_sketch *sk,
                                         const mlsys_coll_algo *ag, mlsys_coll_algo *rs, mlsys_coll_stats *stats) {
  mlsys_coll_topo tt;
  mlsys_coll_def d;
  mlsys_status st;
  int i;
  memset(rs, 0, sizeof *rs);
  if (ag->kind != MLSYS_COLL_ALLGATHER) return mlsys_set_error(MLSYS_ERR_ARG, "only an ALLGATHER can be inverted into a REDUCESCATTER (got %s)", mlsys_coll_kind_name(ag->kind));
  if ((st = mlsys_coll_algo_init(rs, MLSYS_COLL_REDUCESCATTER, ag->nranks, ag->chunkup, ag->chunk_bytes))) return st;
  /* each AG send c: a→b becomes b→a carrying b's partial sum of c; the reversed array is an execution order
     (a rank forwards its partial only after every partial from its subtree is in) */
  for (i = ag->nxfer - 1; i >= 0; i--)
    if ((st = mlsys_coll_algo_push(rs, ag->x[i].chunk, ag->x[i].dst, ag->x[i].src, MLSYS_COLL_XF_REDUCE, -1))) { mlsys_coll_algo_free(rs); return st; }
  if ((st = mlsys_coll_topo_transpose(lt, &tt))) { mlsys_coll_algo_free(rs); return st; }
  if ((st = mlsys_coll_def_make(MLSYS_COLL_REDUCESCATTER, ag->nranks, ag->chunkup, &d))) { mlsys_coll_topo_free(&tt); mlsys_coll_algo_free(rs); return st; }
  /* re-order with the reverse-mode heuristic and re-run the contiguity encoding on the transposed topology */
  st = mlsys_coll_order(&tt, sk, &d, rs);
  if (!st) st = mlsys_coll_schedule(&tt, sk, &d, rs, stats);
  mlsys_coll_def_free(&d);
  mlsys_coll_topo_free(&tt);
  if (st) mlsys_coll_algo_free(rs);
  return st;
}

MLSYS_DEF mlsys_status mlsys_coll_concat_allreduce(const mlsys_coll_algo *rs, const mlsys_coll_algo *ag, mlsys_coll_algo *ar) {
  mlsys_status st;
  int i;
  memset(ar, 0, sizeof *ar);
  if (rs->kind != MLSYS_COLL_REDUCESCATTER || ag->kind != MLSYS_COLL_ALLGATHER)
    return mlsys_set_error(MLSYS_ERR_ARG, "ALLREDUCE = REDUCESCATTER then ALLGATHER (got %s and %s)", mlsys_coll_kind_name(rs->kind), mlsys_coll_kind_name(ag->kind));
  if (rs->nranks != ag->nranks || rs->chunkup != ag->chunkup || fabs(rs->chunk_bytes - ag->chunk_bytes) > 1e-9 * ag->chunk_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "REDUCESCATTER and ALLGATHER differ in ranks, chunkup or chunk size");
  if ((st = mlsys_coll_algo_init(ar, MLSYS_COLL_ALLREDUCE, rs->nranks, rs->chunkup, rs->chunk_bytes))) return st;
  for (i = 0; i < rs->nxfer && !st; i++) st = mlsys_coll_algo_push(ar, rs->x[i].chunk, rs->x[i].src, rs->x[i].dst, MLSYS_COLL_XF_REDUCE, rs->x[i].group >= 0 ? rs->x[i].group : -1);
  for (i = 0; i < ag->nxfer && !st; i++) st = mlsys_coll_algo_push(ar, ag->x[i].chunk, ag->x[i].src, ag->x[i].dst, MLSYS_COLL_XF_COPY, ag->x[i].group >= 0 ? ag->x[i].group + 1000000 : -1);
  if (st) mlsys_coll_algo_free(ar);
  return st;
}

MLSYS_DEF mlsys_status mlsys_coll_synthesize(const mlsys_coll_topo *phys, const mlsys_coll_sketch *sk0, int kind,
                                             double buffer_bytes, mlsys_coll_algo *out, mlsys_coll_topo *logical,
                                             mlsys_coll_stats *stats) {
  mlsys_coll_sketch skd;
  const mlsys_coll_sketch *sk = sk0;
  mlsys_coll_topo lt, ft;
  mlsys_coll_def d, dk;
  mlsys_coll_algo ag, rs;
  mlsys_coll_stats dummy, st2;
  mlsys_status st;
  int N = phys->nranks, C, base_kind;
  double chunk, t0 = mlsys_now();
  char msg[512];
  memset(out, 0, sizeof *out);
  memset(&lt, 0, sizeof lt); memset(&ft, 0, sizeof ft); memset(&d, 0, sizeof d); memset(&dk, 0, sizeof dk);
  memset(&ag, 0, sizeof ag); memset(&rs, 0, sizeof rs);
  if (logical) memset(logical, 0, sizeof *logical);
  if (!stats) stats = &dummy;
  memset(stats, 0, sizeof *stats);
  if (!sk) { mlsys_coll_sketch_default(&skd); skd.nnodes = phys->nnodes; sk = &skd; }
  if (kind < 0 || kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "unknown collective kind %d", kind);
  if (!(buffer_bytes > 0) || !isfinite(buffer_bytes)) return mlsys_set_error(MLSYS_ERR_ARG, "buffer size must be positive (got %g bytes)", buffer_bytes);
  C = sk->chunkup > 0 ? sk->chunkup : 1;
  chunk = mlsys__coll_chunk_bytes(kind, N, C, buffer_bytes);
  base_kind = kind == MLSYS_COLL_ALLTOALL ? MLSYS_COLL_ALLTOALL : MLSYS_COLL_ALLGATHER;
  if ((st = mlsys_coll_logical_topo(phys, sk, chunk, &lt))) return st;
  if ((st = mlsys_coll_def_make(base_kind, N, C, &d))) goto done;
  if ((st = mlsys_coll_route(&lt, sk, &d, chunk, &ag, stats))) goto done;
  { double t1 = mlsys_now(); if ((st = mlsys_coll_order(&lt, sk, &d, &ag))) goto done; stats->order_s = mlsys_now() - t1; }
  if ((st = mlsys_coll_schedule(&lt, sk, &d, &ag, stats))) goto done;
  if (kind == MLSYS_COLL_ALLGATHER || kind == MLSYS_COLL_ALLTOALL) {
    *out = ag; memset(&ag, 0, sizeof ag);
    ft = lt; memset(&lt, 0, sizeof lt);
  } else {
    st2 = *stats;
    if ((st = mlsys_coll_invert(&lt, sk, &ag, &rs, &st2))) goto done;
    stats->sched_s += st2.sched_s; stats->sched_obj = st2.sched_obj; stats->sched_bound = st2.sched_bound;
    stats->sched_status = st2.sched_status; stats->sched_gap = st2.sched_gap; stats->nmerged = st2.nmerged;
    if (kind == MLSYS_COLL_REDUCESCATTER) {
      *out = rs; memset(&rs, 0, sizeof rs);
      if ((st = mlsys_coll_topo_transpose(&lt, &ft))) goto done;
    } else {
      if ((st = mlsys_coll_concat_allreduce(&rs, &ag, out))) goto done;
      if ((st = mlsys__coll_topo_with_reverse(&lt, &ft))) goto done;
      if ((st = mlsys_coll_def_make(MLSYS_COLL_ALLREDUCE, N, C, &dk))) goto done;
      /* per-chunk join (no global barrier): order the concatenation as one schedule, then merges and times */
      if ((st = mlsys_coll_order(&ft, sk, &dk, out))) goto done;
      st2 = *stats;
      if ((st = mlsys_coll_schedule(&ft, sk, &dk, out, &st2))) goto done;
      stats->sched_s += st2.sched_s; stats->sched_obj = st2.sched_obj; stats->sched_bound = st2.sched_bound;
      stats->sched_status = st2.sched_status; stats->sched_gap = st2.sched_gap; stats->nmerged = st2.nmerged;
      mlsys_coll_def_free(&dk);
    }
  }
  /* every synthesized schedule is checked before it is returned */
  if ((st = mlsys_coll_def_make(kind, N, C, &dk))) goto done;
  if (mlsys_coll_verify(&dk, &ft, out, msg, sizeof msg)) { st = mlsys_set_error(MLSYS_ERR_SOLVER, "internal error: the synthesized %s fails verification: %s", mlsys_coll_kind_name(kind), msg); goto done; }
  {
    mlsys_coll_sim_result r;
    if ((st = mlsys_coll_simulate(&ft, out, NULL, &r))) goto done;
  }
done:
  stats->total_s = mlsys_now() - t0;
  mlsys_coll_def_free(&d); mlsys_coll_def_free(&dk);
  mlsys_coll_algo_free(&ag); mlsys_coll_algo_free(&rs);
  mlsys_coll_topo_free(&lt);
  if (st) { mlsys_coll_algo_free(out); mlsys_coll_topo_free(&ft); }
  else if (logical) *logical = ft;
  else mlsys_coll_topo_free(&ft);
  return st;
}







#include "wip/coll_input.inc"
#include "wip/coll_prog.inc"


#ifdef __cplusplus
}
#endif
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION_DONE */
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION */
