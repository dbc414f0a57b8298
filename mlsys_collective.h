/* mlsys_collective.h — collective-algorithm synthesis from communication sketches (TACCL).        MIT licence.

   Given a GPU topology (links with α–β costs, NVSwitch hyperedges, NICs), a communication sketch (which links a
   schedule may use, switch policy, relay map, symmetry, chunking) and a buffer size, synthesize an ALLGATHER,
   ALLTOALL, REDUCESCATTER or ALLREDUCE schedule, check it, estimate its time, lower it to per-GPU programs and run
   them. Implements TACCL (Shah et al., "TACCL: Guiding Collective Algorithm Synthesis using Communication
   Sketches", NSDI 2023; A. Shah, PhD thesis, ch. 5):
     - stage 1, the routing MILP with relaxed bandwidth (eqs. 5.1–5.15: congestion, switch ports, is_util for
       uc-max/uc-min, the inter-node cut 5.15), with symmetry substitution (one column per orbit, eqs. 5.12–5.14),
       exactly-once receive, presence and relay rules the thesis leaves out, a combinatorial lower bound
       (dilation, integer link capacity) and a congestion-negotiated heuristic routing as warm start;
     - stage 2, the greedy ordering of chunks per link and per switch port (thesis rule, h10, h12, h14, ASAP; by
       default all of them, keeping the one that simulates fastest);
     - stage 3, the contiguity and exact-scheduling MILP (eqs. 5.16–5.21: merged IB sends pay one α, window 6);
     - REDUCESCATTER by inverting an ALLGATHER, ALLREDUCE = REDUCESCATTER then ALLGATHER (§5.7);
     - baselines in the same form: NCCL-style rings, direct (shortest-path trees), hierarchical; synthesis never
       hands back a schedule slower than the best of them without saying so (stats.source);
     - an α–β simulator whose makespan equals the stage-3 objective for the same schedule, and a symbolic verifier
       (every chunk reaches every destination exactly once; reductions contain every contribution exactly once);
     - lowering to TACCL-EF / MSCCL XML programs (threadblocks, fused rcs/rrs/rrc/rrcs steps, cross-threadblock
       dependencies, instances), an XML reader/writer (byte-identical round trip; msccl-tools' in-place programs
       read, verify and run as written, docs/collective.md "Programs"), a program verifier and a CPU
       executor that interleaves threadblocks at random; kernels/mlsys_collective_kernels.cuh adds the CUDA
       reduce/copy kernels, an emulated all-ranks-on-one-GPU executor and an NCCL (ncclSend/ncclRecv) executor.

   USAGE: in exactly one .c file
       #define MLSYS_COLLECTIVE_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_collective.h"
   link: -llpsolve55 -lcolamd -ldl -lm -lpthread  (+ $(pkg-config --libs cbc clp) with -DMLSYS_MILP_CBC)

   EXAMPLE (examples/collective_basics.c has the whole program)
       mlsys_coll_topo phys, lt;  mlsys_coll_sketch sk;  mlsys_coll_algo ag;  mlsys_coll_stats st;
       mlsys_coll_topo_ndv2(2, NULL, &phys);                              // 2 x Azure NDv2, Table 5.1 costs
       mlsys_coll_sketch_parse_json(text, len, "sk1-ndv2-n2.json", 8, &sk); // the authors' sketch schema
       if (mlsys_coll_synthesize(&phys, &sk, MLSYS_COLL_ALLGATHER, 1 << 20, &ag, &lt, &st))
         fprintf(stderr, "%s\n", mlsys_last_error());                     // e.g. which chunk cannot be routed
       mlsys_coll_sim_result r;  mlsys_coll_simulate(&phys, &ag, NULL, &r);    // µs in the α–β model
       mlsys_coll_def d;  mlsys_coll_def_make(MLSYS_COLL_ALLGATHER, 16, ag.chunkup, &d);
       mlsys_coll_prog p;  mlsys_coll_lower(&d, &ag, 1, &p);  mlsys_coll_prog_write_xml(&p, stdout);  // MSCCL XML
       mlsys_coll_prog_free(&p); mlsys_coll_def_free(&d); mlsys_coll_algo_free(&ag);
       mlsys_coll_topo_free(&lt); mlsys_coll_topo_free(&phys); mlsys_coll_sketch_free(&sk);

   CONTENTS
     1. Cost model: α–β costs, presets (Table 5.1 and the authors' profiles), α/β fitting (§5.3 profiler)
     2. Topologies: NDv2 (DGX-1 cube-mesh), DGX-2 (NVSwitch, 8 NICs), rings, fully connected, custom; profiles
     3. Sketches (authors' JSON schema) and the logical topology they induce
     4. Collectives: chunks, pre- and post-conditions
     5. Algorithms: transfer lists (the array order is the schedule's order)
     6. Simulation and verification
     7. Baselines
     8. Synthesis: route, order, schedule, invert, concatenate
     9. Programs: lowering, MSCCL XML, program verifier, CPU executor

   MODEL. Sending a message of s bytes over link (a,b) costs α + β·s (β in µs per MB, MB = 2^20 bytes). A link
   carries one message at a time, in the schedule's order; on a switch hyperedge each GPU has one send port and
   one receive port (a transfer waits for the previous one on its port to another peer: eqs. 5.20/5.21); with
   more than two nodes (and in physical multi-node topologies) IB transfers through one NIC are serial per
   direction. Merged transfers (same group id on one IB link) pay α once. Chunk sizes: ALLGATHER buffer/C,
   ALLTOALL/REDUCESCATTER/ALLREDUCE buffer/(N·C), where buffer is the per-rank input (AG, A2A) or buffer (RS, AR).
   Physical vs logical: a sketch turns the physical topology into a logical one (a subset of links, IB β scaled
   for NIC sharing by the authors' rule); synthesis works on the logical topology, and `mlsys collective synth`
   reports times on the physical one (serial NICs), where the baselines run too.

   SOLVERS. With CBC compiled in, each MILP goes to lp_solve for up to 5 CPU seconds and then, unless proven, to CBC
   (from the same warm start) for the rest of its time limit (neither proves all the authors' sketches fast:
   docs/collective.md "Solvers"); without CBC, lp_solve alone. sketch.backend forces one. Routing stops as soon as
   a solution meets the lower bound; time limits return the best incumbent with its gap (stats.route_gap,
   stats.sched_gap).
   RESULT. The synthesized schedule and the baselines (section 7) are simulated on the physical topology; a faster
   baseline is returned instead, stats.source names it and stats.synth_us keeps the synthesized time
   (sketch.keep_synthesized returns the synthesized schedule regardless).
   DOCUMENTATION: docs/collective.md (model, the stages as implemented, differences from the thesis, measurements).
   Comments cite the thesis (§5.x, eqs. 5.x, Table 5.x) and, as "spec §", the project's implementation notes
   that docs/collective.md summarises; neither is needed to use the header.
   COMPILE-TIME OPTIONS: those of mlsys_common.h (MLSYS_MILP_CBC adds CBC/Clp). GPU code lives in
   kernels/mlsys_collective_kernels.cuh (MLSYS_COLLECTIVE_CUDA; MLSYS_COLLECTIVE_NCCL for the NCCL executor).
   NOT DONE (yet): the enforce_ordering sketch flag is parsed but not modelled; scratch-slot liveness remapping
   (s_chunks counts every relayed slot); MSCCL's limits of 32 threadblocks per channel and 256 steps per
   threadblock are not enforced; heuristic 11 (never merge input and scratch chunks) — lowering splits such
   merged groups instead; the link profiler's PCIe-tree probes (§5.3) — only the α/β probe exists.
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
  int backend;                   /* mlsys_milp_backend; 0 → lp_solve for up to 5 CPU s per MILP, then CBC (when built) */
  int no_symmetry;               /* 1 → ignore symmetry_offsets (for tests: symmetry invariance) */
  int no_warm_start;             /* 1 → solve the routing MILP without the heuristic routing (tests, benchmarks) */
  int keep_synthesized;          /* 1 → return the synthesized schedule even when a baseline simulates faster on the
                                    physical topology (stats.synth_us and stats.base still show the comparison) */
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
  int nic_reordered;         /* 1 → the array order deadlocks on the serial NICs, so the NICs served their sends in
                                the order they become ready without NIC contention (see below) */
} mlsys_coll_sim_result;
/* Event semantics equal to the stage-3 MILP: a transfer starts when its chunk is at the sender (for a reduce: all
   partials scheduled into the sender before it have arrived), the previous transfer on its link has finished, and
   the previous transfer with a different peer on the same switch port / serial NIC has finished. Writes t_send and
   t_arrive into a (so the caller sees the trace).
   A schedule made on a logical topology without serial NICs (the sketch's model for 2 nodes) can order its IB
   sends, and its merged IB groups, so that one physical NIC's array order is cyclic with the data and link orders.
   A real NIC has no such order: it serves what is posted. Then the simulator orders each serial NIC's sends by
   their start times in the schedule simulated without NIC contention (ties by link, then array position), which
   is always acyclic, and sets r->nic_reordered. */
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
/* Where an algorithm came from: synthesis, or one of the baselines above. */
enum { MLSYS_COLL_SRC_SYNTHESIZED = 0, MLSYS_COLL_SRC_RING = 1, MLSYS_COLL_SRC_DIRECT = 2, MLSYS_COLL_SRC_HIERARCHICAL = 3 };
MLSYS_DEF const char *mlsys_coll_source_name(int source);   /* "synthesized", "ring", "direct", "hierarchical" */
typedef struct {
  double ring_us, direct_us, hier_us;        /* simulated makespan on the topology; NAN = no such baseline there */
  double ring_gbps, direct_gbps, hier_gbps;  /* algbw of each (NAN alike) */
  int ring_nrings;                           /* the best ring count of 1, 2, 4, 8 (0: no ring; ALLTOALL has none) */
  int best;                                  /* MLSYS_COLL_SRC_* of the fastest (ties: ring, direct, hierarchical) */
  double best_us;                            /* its makespan; NAN (and best = 0) when no baseline runs */
} mlsys_coll_baseline_times;
/* Every baseline on t, simulated on t: ring = the best of 1, 2, 4 and 8 default rings, direct, hierarchical (each
   with chunkup 1, as NCCL runs them). best (NULL = not wanted) receives the fastest one's algorithm, simulated on t;
   MLSYS_ERR_INFEASIBLE when no baseline runs on t. */
MLSYS_DEF mlsys_status mlsys_coll_baselines(const mlsys_coll_topo *t, int kind, double buffer_bytes,
                                            mlsys_coll_baseline_times *out, mlsys_coll_algo *best);

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
  /* what mlsys_coll_synthesize returned and why (ARCHITECTURE 56) */
  int source;                                 /* MLSYS_COLL_SRC_*: SYNTHESIZED, or the baseline that was faster */
  double synth_us;                            /* the synthesized schedule simulated on the physical topology (NAN:
                                                 it cannot run there, e.g. an inverted schedule on one-way links) */
  double synth_logical_us;                    /* ... and on the logical topology (the stage-3 model) */
  mlsys_coll_baseline_times base;             /* the baselines on the physical topology */
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
   AG/A2A, per-rank buffer size for RS/AR. The synthesized schedule is then simulated on phys beside the
   baselines (mlsys_coll_baselines); when a baseline is faster, that baseline is returned instead (unless
   sk->keep_synthesized), *logical is a copy of phys (the baseline's topology) and stats->source names it, while
   stats->synth_us / synth_logical_us and the route_* / sched_* fields keep describing the synthesized one. */
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
/* The chunk factor C ("chunkup") of a program's buffers: an allgather's input holds C·n slots (n instances), or in
   place (inplace=1 without outofplace, as msccl-tools writes them) its output N·C·n; the others' input N·C·n. 0 when
   gpu 0's buffers fit no layout (or p is NULL). */
MLSYS_DEF int mlsys_coll_prog_chunkup(const mlsys_coll_prog *p);
/* Abstract interpretation of the program: deadlock freedom, slot contents, post-conditions. In-place programs
   (msccl-tools' layout) are checked as such: an allgather's input is the rank's own slice of its output buffer, and
   an allreduce's or alltoall's output is its input buffer, a reduce-scatter's the rank's slice of it. */
MLSYS_DEF mlsys_status mlsys_coll_prog_verify(const mlsys_coll_def *d, const mlsys_coll_prog *p, char *msg, size_t msglen);
MLSYS_DEF mlsys_status mlsys_coll_prog_write_xml(const mlsys_coll_prog *p, FILE *f);
MLSYS_DEF mlsys_status mlsys_coll_prog_read_xml(const char *text, size_t len, const char *source, mlsys_coll_prog *out);

enum { MLSYS_COLL_I32 = 0, MLSYS_COLL_I64, MLSYS_COLL_F32, MLSYS_COLL_F64 };
enum { MLSYS_COLL_SUM = 0, MLSYS_COLL_PROD, MLSYS_COLL_MIN, MLSYS_COLL_MAX };
/* CPU reference executor. chunk_elems = elements per collective chunk; a program slot holds
   chunk_elems/instances elements, so in[r] holds i_chunks·chunk_elems/instances elements and out[r]
   o_chunks·chunk_elems/instances (chunk_elems must divide by instances). Threadblocks are interleaved at random
   (seed) among the legal orders; the result must not depend on the seed. */
MLSYS_DEF mlsys_status mlsys_coll_exec_cpu(const mlsys_coll_prog *p, int dtype, int redop, void *const *in,
                                           void *const *out, size_t chunk_elems, uint64_t seed);
/* exec_cpu on the collective's own buffers whatever the program's layout: in[r] holds rank r's input (allgather C·E
   elements, the others N·C·E, E = chunk_elems) and out[r] receives its output (reduce-scatter C·E, the others
   N·C·E), as mlsys_coll_reference takes them; C = mlsys_coll_prog_chunkup(p). An in-place program runs on a staged
   copy (allgather: out[r] with the rank's input in its slice; the others: a copy of in[r], whose result, or the
   rank's slice of it for reduce-scatter, is copied to out[r]); in is never written. MLSYS_ERR_ARG when some gpu's
   buffer counts are not that layout's, else as exec_cpu. */
MLSYS_DEF mlsys_status mlsys_coll_run_cpu(const mlsys_coll_prog *p, int dtype, int redop, void *const *in,
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
#include <time.h>

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
/* nic_mode: 0 = serial-NIC ports chained in array order (the schedule's order), 1 = no serial-NIC port edges,
   2 = serial-NIC ports chained in the order nic_ord (a permutation of the transfers; see mlsys_coll_simulate). */
static mlsys_status mlsys__coll_prec_build_ex(const mlsys_coll_topo *t, const mlsys_coll_algo *a, mlsys__coll_prec *p,
                                              int nic_mode, const int *nic_ord);
static mlsys_status mlsys__coll_prec_build(const mlsys_coll_topo *t, const mlsys_coll_algo *a, mlsys__coll_prec *p) {
  return mlsys__coll_prec_build_ex(t, a, p, 0, NULL);
}
static mlsys_status mlsys__coll_prec_build_ex(const mlsys_coll_topo *t, const mlsys_coll_algo *a, mlsys__coll_prec *p,
                                              int nic_mode, const int *nic_ord) {
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
      int pass;
      for (j = 0; j < nports; j++) pl1[j] = pl2[j] = -1;
      /* pass 0: switch ports (and serial NICs in array order, nic_mode 0); pass 1: serial NICs in nic_ord */
      for (pass = 0; pass < (nic_mode == 2 ? 2 : 1); pass++)
      for (k = n - 1; k >= 0; k--) {
        const mlsys_coll_xfer *x;
        size_t l;
        int nic = 0;
        i = pass == 0 ? k : nic_ord[k];
        x = &a->x[i];
        l = (size_t)x->src * N + x->dst;
        np = 0;
        nic = t->nic_serial && t->kind[l] == MLSYS_COLL_LINK_IB && t->nic[x->src] >= 0 && t->nic[x->dst] >= 0;
        if (pass == 0 && t->sw[l] >= 0) {
          port[np++] = (x->src * (nsw > 0 ? nsw : 1) + t->sw[l]) * 2;
          port[np++] = (x->dst * (nsw > 0 ? nsw : 1) + t->sw[l]) * 2 + 1;
        }
        if (nic && (nic_mode == 0 || pass == 1)) {
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

static mlsys_status mlsys__coll_sim_core(const mlsys_coll_topo *t, mlsys_coll_algo *a, const mlsys_coll_sim_opts *o,
                                         mlsys_coll_sim_result *r, int nic_mode, const int *nic_ord);
typedef struct { double t; int l, i; } mlsys__coll_nickey;
static int mlsys__coll_nic_cmp(const void *pa, const void *pb) {
  const mlsys__coll_nickey *x = (const mlsys__coll_nickey *)pa, *y = (const mlsys__coll_nickey *)pb;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->l != y->l) return x->l < y->l ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}
MLSYS_DEF mlsys_status mlsys_coll_simulate(const mlsys_coll_topo *t, mlsys_coll_algo *a, const mlsys_coll_sim_opts *o,
                                           mlsys_coll_sim_result *r) {
  mlsys_status st = mlsys__coll_sim_core(t, a, o, r, 0, NULL), st2;
  mlsys__coll_prec p;
  mlsys__coll_nickey *key;
  int *ord, i;
  char msg[1024];
  if (st != MLSYS_ERR_INFEASIBLE || !r->deadlock || !t->nic_serial) return st;
  snprintf(msg, sizeof msg, "%s", mlsys_last_error());
  /* start times without NIC contention; the data, link and switch orders alone must be acyclic */
  if (mlsys__coll_sim_core(t, a, o, r, 1, NULL) != MLSYS_OK) { memset(r, 0, sizeof *r); r->deadlock = 1; return mlsys_set_error(st, "%s", msg); }
  if ((st2 = mlsys__coll_prec_build_ex(t, a, &p, 1, NULL))) return st2;
  ord = (int *)mlsys_alloc((size_t)a->nxfer + 1, sizeof(int));
  key = (mlsys__coll_nickey *)mlsys_alloc((size_t)a->nxfer + 1, sizeof *key);
  if (!ord || !key) { mlsys_free(ord); mlsys_free(key); mlsys__coll_prec_free(&p); return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); }
  /* members of a merged group share a start and a link, so they stay adjacent; every other edge raises the start */
  for (i = 0; i < a->nxfer; i++) { key[i].t = a->x[i].t_send; key[i].l = p.lnk[i]; key[i].i = i; }
  qsort(key, (size_t)a->nxfer, sizeof *key, mlsys__coll_nic_cmp);
  for (i = 0; i < a->nxfer; i++) ord[i] = key[i].i;
  mlsys_free(key);
  mlsys__coll_prec_free(&p);
  st2 = mlsys__coll_sim_core(t, a, o, r, 2, ord);
  mlsys_free(ord);
  if (st2 == MLSYS_OK) r->nic_reordered = 1;
  return st2;
}

static mlsys_status mlsys__coll_sim_core(const mlsys_coll_topo *t, mlsys_coll_algo *a, const mlsys_coll_sim_opts *o,
                                         mlsys_coll_sim_result *r, int nic_mode, const int *nic_ord) {
  mlsys_coll_sim_opts def;
  mlsys__coll_prec p;
  int n = a->nxfer, i, e, *unit = NULL, *usize = NULL, *indeg = NULL, *adj_off = NULL, *adj = NULL, *q = NULL, q0, q1, done_n = 0;
  double *start = NULL, *lat = NULL, mk = 0;
  mlsys_status st;
  int ne = 0;
  memset(r, 0, sizeof *r);
  if (!o) { memset(&def, 0, sizeof def); o = &def; }
  if ((st = mlsys__coll_prec_build_ex(t, a, &p, nic_mode, nic_ord))) return st;
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
  int G = t->gpus_per_node, N = t->nranks, NN = t->nnodes, nr[4096], i, n, m, s, k, li, ph;
  mlsys_status st;
  if (kind == MLSYS_COLL_ALLTOALL) return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "hierarchical ALLTOALL is not implemented (use the direct baseline)");
  if (G > 4096 || !mlsys__coll_node_ring(t, nr)) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "topology %s has no ring through the GPUs of a node", t->name);
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
  return MLSYS_OK;
fail:
  mlsys_coll_algo_free(out);
  return st;
}

static const char *const mlsys__coll_source_names[4] = {"synthesized", "ring", "direct", "hierarchical"};
MLSYS_DEF const char *mlsys_coll_source_name(int source) { return source >= 0 && source < 4 ? mlsys__coll_source_names[source] : "?"; }

/* One baseline (src = MLSYS_COLL_SRC_*, R rings for the ring) on t, simulated there; NAN when it does not exist on
   t or cannot run there. *keep (NULL = not wanted) receives the algorithm. */
static double mlsys__coll_baseline_one(const mlsys_coll_topo *t, int kind, double bytes, int src, int R, int *rings,
                                       double *gbps, mlsys_coll_algo *keep) {
  mlsys_coll_algo a;
  mlsys_coll_sim_result r;
  mlsys_status st;
  double us = NAN;
  if (src == MLSYS_COLL_SRC_RING)
    st = mlsys_coll_default_rings(t, R, rings) ? MLSYS_ERR_INFEASIBLE : mlsys_coll_algo_ring(kind, t->nranks, rings, R, 1, bytes, &a);
  else if (src == MLSYS_COLL_SRC_DIRECT) st = mlsys_coll_algo_direct(kind, t, 1, bytes, &a);
  else st = mlsys_coll_algo_hierarchical(kind, t, 1, bytes, &a);
  if (st) return NAN;
  if (mlsys_coll_simulate(t, &a, NULL, &r) == MLSYS_OK && !r.deadlock) {
    us = r.makespan_us;
    if (gbps) *gbps = r.algbw_gbps;
  }
  if (keep && !isnan(us)) *keep = a;
  else mlsys_coll_algo_free(&a);
  return us;
}

MLSYS_DEF mlsys_status mlsys_coll_baselines(const mlsys_coll_topo *t, int kind, double buffer_bytes,
                                            mlsys_coll_baseline_times *out, mlsys_coll_algo *best) {
  static const int nr[4] = {1, 2, 4, 8};
  int i, *rings, cand[3];
  double us, gbps = NAN, tm[3];
  if (best) memset(best, 0, sizeof *best);
  out->ring_us = out->direct_us = out->hier_us = out->best_us = NAN;
  out->ring_gbps = out->direct_gbps = out->hier_gbps = NAN;
  out->ring_nrings = 0;
  out->best = MLSYS_COLL_SRC_SYNTHESIZED;
  if (kind < 0 || kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "unknown collective kind %d", kind);
  if (!(buffer_bytes > 0) || !isfinite(buffer_bytes)) return mlsys_set_error(MLSYS_ERR_ARG, "buffer size must be positive (got %g bytes)", buffer_bytes);
  if (!(rings = (int *)mlsys_alloc((size_t)8 * t->nranks, sizeof(int)))) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  if (kind != MLSYS_COLL_ALLTOALL)   /* NCCL has no ring ALLTOALL (its p2p algorithm is the direct one) */
    for (i = 0; i < 4; i++) {
      us = mlsys__coll_baseline_one(t, kind, buffer_bytes, MLSYS_COLL_SRC_RING, nr[i], rings, &gbps, NULL);
      if (!isnan(us) && (isnan(out->ring_us) || us < out->ring_us)) { out->ring_us = us; out->ring_gbps = gbps; out->ring_nrings = nr[i]; }
    }
  out->direct_us = mlsys__coll_baseline_one(t, kind, buffer_bytes, MLSYS_COLL_SRC_DIRECT, 0, rings, &out->direct_gbps, NULL);
  out->hier_us = mlsys__coll_baseline_one(t, kind, buffer_bytes, MLSYS_COLL_SRC_HIERARCHICAL, 0, rings, &out->hier_gbps, NULL);
  cand[0] = MLSYS_COLL_SRC_RING; tm[0] = out->ring_us;
  cand[1] = MLSYS_COLL_SRC_DIRECT; tm[1] = out->direct_us;
  cand[2] = MLSYS_COLL_SRC_HIERARCHICAL; tm[2] = out->hier_us;
  for (i = 0; i < 3; i++)
    if (!isnan(tm[i]) && (isnan(out->best_us) || tm[i] < out->best_us)) { out->best_us = tm[i]; out->best = cand[i]; }
  if (isnan(out->best_us)) {
    mlsys_free(rings);
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no baseline (ring, direct, hierarchical) runs on %s", t->name);
  }
  /* rebuild the winner (baselines are cheap next to keeping every candidate) */
  if (best && isnan(mlsys__coll_baseline_one(t, kind, buffer_bytes, out->best, out->ring_nrings, rings, NULL, best))) {
    mlsys_free(rings);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory (rebuilding the %s baseline)", mlsys_coll_source_name(out->best));
  }
  mlsys_free(rings);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   MILP backend (ARCHITECTURE 22). On the committed sketches neither backend dominates (bench/RESULTS.md §4.3):
   CBC proves routings lp_solve cannot (1×NDv2 sk1: 5 CPU s; lp_solve still at gap 0.24 after 60 s) and lp_solve
   proves in about a CPU second routings CBC does not in 60 s (sk2-ndv2-n4, sk2-dgx2-n2 at 1 KiB); stage 3 alike.
   So by default lp_solve goes first for at most MLSYS__COLL_LPS_CPU_S seconds of its thread's CPU time (CPU, not
   wall, time: load on the machine does not move the hand-over), and what it has not proven goes to CBC for the
   rest of the time limit, started from the caller's incumbent (the better of the two points is kept). Without
   CBC, or with an explicit backend, one solve as asked.
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__COLL_LPS_CPU_S 5.0
typedef struct { double end; unsigned n; } mlsys__coll_slice;
static double mlsys__coll_cpu_s(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
  return mlsys_now();   /* no thread CPU clock: wall time */
}
static int mlsys__coll_slice_over(void *ud) {   /* lp_solve polls this tens of thousands of times a second */
  mlsys__coll_slice *sl = (mlsys__coll_slice *)ud;
  return (++sl->n & 63) == 0 && mlsys__coll_cpu_s() >= sl->end;
}
static mlsys_status mlsys__coll_milp(const mlsys_milp *m, const mlsys_milp_opts *mo, int chosen, mlsys_milp_result *res) {
  mlsys_milp_opts lo = *mo, co = *mo;
  mlsys_milp_result cr;
  mlsys_status st, st2;
  mlsys__coll_slice sl;
  double t0 = mlsys_now(), slice = MLSYS__COLL_LPS_CPU_S;
  if (chosen || !mlsys_milp_has_backend(MLSYS_SOLVER_CBC) || !mlsys_milp_has_backend(MLSYS_SOLVER_LPSOLVE))
    return mlsys_milp_solve(m, mo, res);
  if (mo->time_limit > 0 && slice > 0.5 * mo->time_limit) slice = 0.5 * mo->time_limit;
  sl.end = mlsys__coll_cpu_s() + slice;
  sl.n = 0;
  lo.backend = MLSYS_SOLVER_LPSOLVE;
  lo.should_stop = mlsys__coll_slice_over;
  lo.ud = &sl;
  st = mlsys_milp_solve(m, &lo, res);
  if (st == MLSYS_OK && res->status == MLSYS_MILP_OPTIMAL) return st;
  if (st != MLSYS_OK && st != MLSYS_ERR_CANCELED && st != MLSYS_ERR_TIMEOUT) return st;   /* proven infeasible, ... */
  co.backend = MLSYS_SOLVER_CBC;
  if (mo->time_limit > 0) {
    co.time_limit = mo->time_limit - (mlsys_now() - t0);
    if (co.time_limit < 0.5)   /* the wall-clock limit, not the slice, stopped lp_solve */
      return st == MLSYS_ERR_CANCELED ? mlsys_set_error(MLSYS_ERR_TIMEOUT, "milp: no solution within the time limit of %g s", mo->time_limit) : st;
  }
  /* CBC starts from the caller's incumbent, not from wherever lp_solve stopped, so that its search (and the routing
     it proves) does not depend on the exact moment of the hand-over; lp_solve's point is kept if it is better */
  st2 = mlsys_milp_solve(m, &co, &cr);
  /* both of this header's MILPs minimise (a makespan); mlsys_milp is opaque outside mlsys_common.h's implementation */
  if (st2 == MLSYS_OK && (st != MLSYS_OK || cr.status == MLSYS_MILP_OPTIMAL || cr.objective <= res->objective)) {
    mlsys_milp_result_free(res);
    *res = cr;
    return MLSYS_OK;
  }
  mlsys_milp_result_free(&cr);
  if (st == MLSYS_OK) return MLSYS_OK;   /* CBC found nothing better within the limit: lp_solve's point stands */
  return st2 == MLSYS_ERR_CANCELED ? mlsys_set_error(MLSYS_ERR_TIMEOUT, "milp: no solution within the time limit of %g s", mo->time_limit) : st2;
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
    /* merge in place: the write index m never passes the read index 2i */
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
  unsigned char *in, *need, *keep;
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
/* Grow chunk c's tree; writes xv for its variables and tv (start times) for its t variables. force (or NULL):
   per variable -1 free, 0 forbidden, 1 forced (symmetric images of decided variables); forced edges are taken
   as soon as their sender has the chunk and are never pruned. Returns 0 when the forced edges cannot form a
   tree (the caller then routes the chunk freely). */
static int mlsys__coll_heur_tree(mlsys__coll_heur *h, int c, const signed char *force, unsigned char *xv, double *tv) {
  const mlsys_coll_topo *lt = h->lt;
  const mlsys__coll_rvars *v = h->v;
  int N = lt->nranks, r, i, left = 0, ok = 1;
  size_t cN = (size_t)c * N;
  for (r = 0; r < N; r++) {
    h->in[r] = h->d->pre[cN + r]; h->par[r] = -1; h->depth[r] = 0;
    h->need[r] = h->d->post[cN + r] && !h->d->pre[cN + r];
    left += h->need[r];
  }
  for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) xv[i] = 0;
  for (;;) {
    int best = -1, grew = 1;
    double bc = 0, bd = 0, bs = 0;
    /* forced edges first, as far as they reach */
    while (force && grew) {
      grew = 0;
      for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
        int l = v->xl[i], a = l / N, b = l % N;
        double lat;
        if (force[i - v->xoff[c]] != 1 || xv[i] || !h->in[a]) continue;
        if (h->in[b]) { ok = 0; continue; }   /* would receive the chunk twice */
        lat = mlsys__coll_lat_of(h, l);
        xv[i] = 1; h->in[b] = 1; h->par[b] = i; h->depth[b] = h->depth[a] + lat;
        if (h->need[b]) left--;
        h->load[l] += lat;
        if (lt->sw[l] >= 0) { h->psend[a * h->nsw + lt->sw[l]] += lat; h->precv[b * h->nsw + lt->sw[l]] += lat; }
        grew = 1;
      }
    }
    if (left <= 0) break;
    for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
      int l = v->xl[i], a = l / N, b = l % N;
      double lat, cost, dep, sec;
      if (!h->in[a] || h->in[b] || (force && force[i - v->xoff[c]] >= 0)) continue;
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
    if (best < 0) { ok = 0; break; }   /* the forced part leaves a destination unreachable */
    {
      int l = v->xl[best], a = l / N, b = l % N;
      double lat = mlsys__coll_lat_of(h, l);
      h->in[b] = 1; h->par[b] = best; h->depth[b] = h->depth[a] + lat;
      if (h->need[b]) left--;
      h->load[l] += lat;   /* account the load now so the rest of this tree sees it */
      if (lt->sw[l] >= 0) { h->psend[a * h->nsw + lt->sw[l]] += lat; h->precv[b * h->nsw + lt->sw[l]] += lat; }
    }
  }
  /* keep the branches that lead to a rank that needs the chunk (and every forced edge); undo the loads of the rest */
  {
    unsigned char *keep = h->keep;
    for (r = 0; r < N; r++) keep[r] = 0;
    for (r = 0; r < N; r++) {
      int u;
      if (!(h->need[r] || (force && h->par[r] >= 0 && force[h->par[r] - v->xoff[c]] == 1)) || !h->in[r]) continue;
      for (u = r; h->par[u] >= 0 && !keep[u]; u = v->xl[h->par[u]] / N) keep[u] = 1;
    }
    for (r = 0; r < N; r++)
      if (h->par[r] >= 0 && !keep[r]) {
        int l = v->xl[h->par[r]], a = l / N;
        double lat = mlsys__coll_lat_of(h, l);
        xv[h->par[r]] = 0;
        h->load[l] -= lat;
        if (lt->sw[l] >= 0) { h->psend[a * h->nsw + lt->sw[l]] -= lat; h->precv[r * h->nsw + lt->sw[l]] -= lat; }
      } else if (h->par[r] >= 0) xv[h->par[r]] = 1;
  }
  for (r = 0; r < N; r++)
    if (v->tid[cN + r] >= 0) tv[v->tid[cN + r]] = (h->par[r] >= 0 && xv[h->par[r]]) ? h->depth[r] : 0;
  return ok;
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
  int N = lt->nranks, c, i, pass, npass = uf ? 1 : 24, asym = 0, maxv = 1;
  signed char *force = NULL;
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
  h.keep = (unsigned char *)mlsys_alloc((size_t)N, 1);
  for (c = 0; c < d->nchunks; c++) if (v->xoff[c + 1] - v->xoff[c] > maxv) maxv = v->xoff[c + 1] - v->xoff[c];
  force = (signed char *)mlsys_alloc((size_t)maxv, 1);
  bx = (unsigned char *)mlsys_alloc((size_t)v->nx + 1, 1);
  bt = (double *)mlsys_alloc((size_t)v->nt + 1, sizeof(double));
  if (uf) cls = (signed char *)mlsys_alloc((size_t)v->nx + 1, 1);
  if (!h.load || !h.psend || !h.precv || !h.depth || !h.par || !h.in || !h.need || !h.keep || !force || !bx || !bt || (uf && !cls)) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory"); goto done; }
  memset(xval, 0, (size_t)v->nx);
  for (i = 0; i < v->nt; i++) tval[i] = 0;
  if (cls) memset(cls, -1, (size_t)v->nx + 1);
  for (c = 0; c < d->nchunks; c++) {
    if (cls) {
      /* variables whose orbit is decided are forced (or forbidden); the rest of the tree is grown freely */
      int nv = v->xoff[c + 1] - v->xoff[c], ok;
      for (i = 0; i < nv; i++) force[i] = cls[mlsys__coll_uf_find(uf, v->xoff[c] + i)];
      ok = mlsys__coll_heur_tree(&h, c, force, xval, tval);
      if (!ok) {
        mlsys__coll_heur_apply(&h, c, xval, -1);
        mlsys__coll_heur_tree(&h, c, NULL, xval, tval);
        asym = 1;
      }
      for (i = v->xoff[c]; i < v->xoff[c + 1]; i++) {
        int root = mlsys__coll_uf_find(uf, i);
        if (cls[root] < 0) cls[root] = (signed char)xval[i];
      }
    } else {
      mlsys__coll_heur_tree(&h, c, NULL, xval, tval);
    }
  }
  if (cls) mlsys_log(MLSYS_LOG_DEBUG, "heuristic routing: %s", asym ? "asymmetric" : "symmetric");
  best = mlsys__coll_heur_T(&h, tval);
  memcpy(bx, xval, (size_t)v->nx); memcpy(bt, tval, (size_t)v->nt * sizeof(double));
  for (pass = 1; pass < npass && best > target * (1 + 1e-9); pass++) {
    double T;
    h.rng = pass % 2 ? &rng : NULL;
    h.depth_first = pass % 4 >= 2;   /* deterministic passes first, then seeded random tie-breaks */
    for (c = 0; c < d->nchunks; c++) {
      mlsys__coll_heur_apply(&h, c, xval, -1);
      mlsys__coll_heur_tree(&h, c, NULL, xval, tval);
    }
    T = mlsys__coll_heur_T(&h, tval);
    mlsys_log(MLSYS_LOG_DEBUG, "heuristic routing pass %d: T %.4g", pass, T);
    /* negotiated congestion (PathFinder): links loaded beyond the target get dearer in later passes */
    if (h.hist)
      for (i = 0; i < N * N; i++)
        if (h.load[i] > fmax(target, 1e-300) * (1 + 1e-9)) h.hist[i] += 0.25;
    if (T < best - 1e-9) { best = T; memcpy(bx, xval, (size_t)v->nx); memcpy(bt, tval, (size_t)v->nt * sizeof(double)); }
  }
  memcpy(xval, bx, (size_t)v->nx); memcpy(tval, bt, (size_t)v->nt * sizeof(double));
  *relaxed_T = best;
  {
    double mt = 0, ml = 0;
    for (i = 0; i < v->nt; i++) if (tval[i] > mt) mt = tval[i];
    for (i = 0; i < N * N; i++) if (h.load[i] > ml) ml = h.load[i];
    mlsys_log(MLSYS_LOG_DEBUG, "heuristic routing: T %.4g (target %.4g) dilation %.4g load %.4g", best, target, mt, ml);
  }
done:
  mlsys_free(h.load); mlsys_free(h.psend); mlsys_free(h.precv); mlsys_free(h.depth); mlsys_free(h.par);
  mlsys_free(h.in); mlsys_free(h.need); mlsys_free(h.keep); mlsys_free(force); mlsys_free(bx); mlsys_free(bt); mlsys_free(cls); mlsys_free(h.hist);
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
  int use_heur = 0;
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
      if (st == MLSYS_ERR_INFEASIBLE && sk && sk->nsym > 0 && !sk->no_symmetry)
      mlsys_prefix_error("the sketch's symmetry_offsets do not map its logical topology onto itself");
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
      mlsys_log(MLSYS_LOG_DEBUG, "routing warm start: %s (T %.4g, U %.4g, violation %.3g)", ok ? "accepted" : "rejected", inc[Tcol], U, mlsys_milp_max_violation(m, inc, 1));
      if (!ok) { mlsys_free(inc); inc = NULL; }
    }
    memset(&mo, 0, sizeof mo);
    mo.time_limit = (sk && sk->route_time_limit > 0 ? sk->route_time_limit : 60) - (mlsys_now() - t0);
    if (mo.time_limit < 1) mo.time_limit = 1;   /* retries share the one limit */
    mo.backend = (mlsys_milp_backend)(sk ? sk->backend : 0);
    if (!mlsys_milp_has_backend(mo.backend)) mo.backend = MLSYS_SOLVER_DEFAULT;
    mo.mip_gap_abs = 1e-6; mo.mip_gap_rel = 1e-9;
    mo.verbose = sk ? sk->verbose > 1 : 0;
    mo.branch_ceiling = 1;   /* [spec §3.4.1] ceiling branching on x finds routings fast */
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
    st = mlsys__coll_milp(m, &mo, mo.backend != MLSYS_SOLVER_DEFAULT, &res);
    if (st == MLSYS_OK) break;
    if (st == MLSYS_ERR_TIMEOUT) break;    /* a larger big-M cannot help; the heuristic routing may */
    if (st != MLSYS_ERR_INFEASIBLE) goto done;
    if (inc) break;   /* with a feasible warm start the model cannot be infeasible */
  }
  if (st == MLSYS_ERR_TIMEOUT && heurT > 0) {
    /* the solver found nothing (the warm start did not fit the symmetric model): the heuristic routing is a
       valid routing of the unsubstituted model, so return it, with its gap to the lower bound */
    use_heur = 1;
    st = MLSYS_OK;
  }
  if (st) {
    if (st == MLSYS_ERR_TIMEOUT) st = mlsys_set_error(st, "routing MILP (%d binaries, %d rows): no feasible routing found within the time limit", stats->route_bins, stats->route_rows);
    else mlsys_prefix_error("routing MILP (%d binaries, %d rows)", stats->route_bins, stats->route_rows);
    goto done;
  }
  if (use_heur) {
    stats->route_status = MLSYS_MILP_FEASIBLE;
    stats->route_obj = heurT;
    stats->route_bound = lbT;
    stats->route_gap = heurT > 0 ? (heurT - lbT) / heurT : 0;
  } else {
  stats->route_status = res.status;
  stats->route_obj = res.x[Tcol] * unit;
  /* the solver's bound is on T + γ·Σu; report it on T (the γ term of the solution is known exactly) */
  stats->route_bound = (res.bound - (res.objective - res.x[Tcol])) * unit;
  if (stats->route_bound > stats->route_obj) stats->route_bound = stats->route_obj;
  {
    double obj = res.objective, bnd = res.bound;
    stats->route_gap = res.status == MLSYS_MILP_OPTIMAL ? 0 : (isfinite(bnd) ? fabs(obj - bnd) / fmax(1e-9, fabs(obj)) : 1);
  }
  }
  if ((st = mlsys_coll_algo_init(out, d->kind, N, d->chunkup, chunk_bytes))) goto done;
  for (c = 0; c < d->nchunks && !st; c++)
    for (i = v.xoff[c]; i < v.xoff[c + 1] && !st; i++) {
      int col = R.col[i];
      if (use_heur ? !hx[i] : (col < 0 || res.x[col] < 0.5)) continue;
      if ((st = mlsys_coll_algo_push(out, c, v.xl[i] / N, v.xl[i] % N, MLSYS_COLL_XF_COPY, -1))) break;
      out->x[out->nxfer - 1].t_send = use_heur ? ht[v.tid[(size_t)c * N + v.xl[i] / N]] : res.x[R.col[v.nx + v.tid[(size_t)c * N + v.xl[i] / N]]] * unit;
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
  st = mlsys__coll_milp(m, &mo, mo.backend != MLSYS_SOLVER_DEFAULT, &res);
  if (st) { mlsys_prefix_error("scheduling MILP (%d merge pairs)", npairs); goto done; }
  stats->sched_status = res.status;
  stats->sched_obj = res.objective * unit;
  stats->sched_bound = res.bound * unit;
  stats->sched_gap = res.status == MLSYS_MILP_OPTIMAL ? 0 : (isfinite(res.bound) ? fabs(res.objective - res.bound) / fmax(1e-9, fabs(res.objective)) : 1);
  mlsys_log(MLSYS_LOG_DEBUG, "scheduling MILP: T %.4g (status %d, gap %.3g)", res.x[Tcol] * unit, res.status, stats->sched_gap);
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

/* The last step of synthesis (ARCHITECTURE 56): the synthesized schedule `out` (on topology ft) against the
   baselines, all simulated on the physical topology; a strictly faster baseline replaces it (and ft becomes phys),
   so no caller is handed a schedule slower than NCCL's rings without stats->source saying so. */
static mlsys_status mlsys__coll_vs_baselines(const mlsys_coll_topo *phys, const mlsys_coll_sketch *sk, int kind,
                                             double buffer_bytes, mlsys_coll_algo *out, mlsys_coll_topo *ft,
                                             mlsys_coll_stats *stats) {
  mlsys_coll_algo cp, best;
  mlsys_coll_sim_result r;
  mlsys_coll_topo pt;
  mlsys_status st;
  stats->source = MLSYS_COLL_SRC_SYNTHESIZED;
  stats->synth_us = NAN;
  if ((st = mlsys_coll_algo_copy(out, &cp))) return st;
  if (mlsys_coll_simulate(phys, &cp, NULL, &r) == MLSYS_OK && !r.deadlock) stats->synth_us = r.makespan_us;
  mlsys_coll_algo_free(&cp);
  st = mlsys_coll_baselines(phys, kind, buffer_bytes, &stats->base, sk->keep_synthesized ? NULL : &best);
  if (st == MLSYS_ERR_INFEASIBLE) return MLSYS_OK;   /* no baseline runs on this topology: nothing to compare */
  if (st) return st;
  if (sk->keep_synthesized) return MLSYS_OK;
  /* a synthesized schedule that cannot run on phys (an inverted one on one-way links) is kept: the baselines
     are no comparison for it, and it is what the caller's model asked for */
  if (isnan(stats->synth_us) || !(stats->base.best_us < stats->synth_us * (1 - 1e-9))) {
    mlsys_coll_algo_free(&best);
    return MLSYS_OK;
  }
  if ((st = mlsys_coll_topo_copy(phys, &pt))) { mlsys_coll_algo_free(&best); return st; }
  mlsys_coll_algo_free(out);
  *out = best;
  mlsys_coll_topo_free(ft);
  *ft = pt;
  stats->source = stats->base.best;
  return MLSYS_OK;
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
  stats->synth_us = stats->synth_logical_us = NAN;
  stats->base.ring_us = stats->base.direct_us = stats->base.hier_us = stats->base.best_us = NAN;
  stats->base.ring_gbps = stats->base.direct_gbps = stats->base.hier_gbps = NAN;
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
      mlsys_coll_algo cat;
      mlsys_coll_sim_result rc;
      if ((st = mlsys_coll_concat_allreduce(&rs, &ag, out))) goto done;
      if ((st = mlsys__coll_topo_with_reverse(&lt, &ft))) goto done;
      if ((st = mlsys_coll_def_make(MLSYS_COLL_ALLREDUCE, N, C, &dk))) goto done;
      /* Two candidates: the plain concatenation with the RS and AG merges kept, and the concatenation ordered
         as one schedule (per-chunk join, no global barrier) then merged and timed again; the faster wins. */
      if ((st = mlsys_coll_algo_copy(out, &cat))) goto done;
      if ((st = mlsys_coll_simulate(&ft, &cat, NULL, &rc))) { mlsys_coll_algo_free(&cat); goto done; }
      st2 = *stats;
      if ((st = mlsys_coll_order(&ft, sk, &dk, out)) || (st = mlsys_coll_schedule(&ft, sk, &dk, out, &st2))) { mlsys_coll_algo_free(&cat); goto done; }
      stats->sched_s += st2.sched_s;
      if (rc.makespan_us < out->time_us) {
        mlsys_coll_algo_free(out);
        *out = cat;
        stats->sched_obj = stats->sched_bound = rc.makespan_us;   /* the concatenation is timed, not re-solved */
        stats->sched_gap = 0; stats->sched_status = MLSYS_MILP_FEASIBLE;
        stats->nmerged = 0;
        { int i; for (i = 1; i < out->nxfer; i++) stats->nmerged += out->x[i].group >= 0 && out->x[i].group == out->x[i - 1].group; }
      } else {
        mlsys_coll_algo_free(&cat);
        stats->sched_obj = st2.sched_obj; stats->sched_bound = st2.sched_bound;
        stats->sched_status = st2.sched_status; stats->sched_gap = st2.sched_gap; stats->nmerged = st2.nmerged;
      }
      mlsys_coll_def_free(&dk);
    }
  }
  /* every synthesized schedule is checked before it is returned */
  if ((st = mlsys_coll_def_make(kind, N, C, &dk))) goto done;
  if (mlsys_coll_verify(&dk, &ft, out, msg, sizeof msg)) { st = mlsys_set_error(MLSYS_ERR_SOLVER, "internal error: the synthesized %s fails verification: %s", mlsys_coll_kind_name(kind), msg); goto done; }
  {
    mlsys_coll_sim_result r;
    if ((st = mlsys_coll_simulate(&ft, out, NULL, &r))) goto done;
    stats->synth_logical_us = r.makespan_us;
  }
  st = mlsys__coll_vs_baselines(phys, sk, kind, buffer_bytes, out, &ft, stats);
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







/* ---------------------------------------------------------------------------------------------------------------
   Inputs: link-profile presets, the α/β fit of the profiler, the authors' topology-profile JSON and the
   communication-sketch JSON (spec §2.2–2.3; thesis §5.3, §5.4.1, Appendix B.1)
   --------------------------------------------------------------------------------------------------------------- */

/* Table 5.1 of the thesis (measured) and the authors' taccl/examples/topo/topo-*-1MB.json (different calibration;
   spec §3.14 keeps both). nvlink = ONE NVLink (NDv2; a double link has β/2) or one NVSwitch port (DGX-2). */
typedef struct { const char *name; double nv_a, nv_b, ib_a, ib_b; } mlsys__coll_preset;
static const mlsys__coll_preset mlsys__coll_presets[4] = {
  {"ndv2-thesis", 0.7, 46.0, 1.7, 106.0},
  {"dgx2-thesis", 0.7, 8.0, 1.7, 106.0},
  {"ndv2-repo", 0.3, 46.0, 2.6, 105.0},
  {"dgx2-repo", 0.3, 8.0, 2.6, 105.0},
};

MLSYS_DEF mlsys_status mlsys_coll_profile_preset(const char *name, mlsys_coll_profile *out) {
  int i;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "profile preset: out is NULL");
  memset(out, 0, sizeof *out);
  if (!name) return mlsys_set_error(MLSYS_ERR_ARG, "profile preset: name is NULL (known: ndv2-thesis, dgx2-thesis, ndv2-repo, dgx2-repo)");
  for (i = 0; i < 4; i++)
    if (!strcmp(name, mlsys__coll_presets[i].name)) {
      out->name = mlsys__coll_presets[i].name;
      out->nvlink.alpha_us = mlsys__coll_presets[i].nv_a;
      out->nvlink.beta_us_per_mb = mlsys__coll_presets[i].nv_b;
      out->ib.alpha_us = mlsys__coll_presets[i].ib_a;
      out->ib.beta_us_per_mb = mlsys__coll_presets[i].ib_b;
      return MLSYS_OK;
    }
  return mlsys_set_error(MLSYS_ERR_ARG, "unknown profile preset '%.100s' (known: ndv2-thesis, dgx2-thesis, ndv2-repo, dgx2-repo)", name);
}

/* §5.3 profiler: n chunks of s MB sent one after the other take T_seq = n(α + βs); sent as one message
   T_bat = α + nβs. Both families go into one least-squares problem in (α, β). Timing noise is multiplicative
   (a fixed fraction of the time), so every equation is divided by its measured time: otherwise the 64 MB
   measurements (thousands of µs) would drown α (about 2 µs) in their noise. With exact data the weights do not
   matter and the fit is exact; for one pair it is the closed form α = (T_seq − T_bat)/(n−1), β = (T_bat − α)/(ns). */
MLSYS_DEF mlsys_status mlsys_coll_fit_alpha_beta(const double *size_mb, const int *n, const double *t_seq,
                                                 const double *t_bat, int m, double *alpha_us,
                                                 double *beta_us_per_mb) {
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0, det, smin = 0, smax = 0;
  int i, nmax = 0;
  if (alpha_us) *alpha_us = 0;
  if (beta_us_per_mb) *beta_us_per_mb = 0;
  if (!size_mb || !n || !t_seq || !t_bat || !alpha_us || !beta_us_per_mb)
    return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: NULL argument");
  if (m < 1) return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit needs at least one measurement (m = %d)", m);
  for (i = 0; i < m; i++) {
    double s = size_mb[i], k = (double)n[i], w;
    if (!isfinite(s) || s < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: measurement %d has size %g MB (must be finite and >= 0)", i, s);
    if (n[i] < 1) return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: measurement %d has n = %d chunks (must be >= 1)", i, n[i]);
    if (!isfinite(t_seq[i]) || !(t_seq[i] > 0) || !isfinite(t_bat[i]) || !(t_bat[i] > 0))
      return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: measurement %d has times T_seq = %g, T_bat = %g us (must be finite and > 0)",
                             i, t_seq[i], t_bat[i]);
    if (i == 0 || s < smin) smin = s;
    if (i == 0 || s > smax) smax = s;
    if (n[i] > nmax) nmax = n[i];
    /* row (n, n·s) = T_seq and row (1, n·s) = T_bat, each scaled by 1/T */
    w = 1.0 / t_seq[i];
    a11 += w * w * k * k; a12 += w * w * k * k * s; a22 += w * w * k * k * s * s; b1 += w * k; b2 += w * k * s;
    w = 1.0 / t_bat[i];
    a11 += w * w; a12 += w * w * k * s; a22 += w * w * k * k * s * s; b1 += w; b2 += w * k * s;
  }
  if (smax == 0) return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: every measurement has size 0 MB, so beta cannot be determined");
  if (nmax == 1 && smin == smax)
    return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: cannot separate alpha and beta: every measurement has n = 1 and the same "
                           "size (%g MB); vary n or the size", smin);
  det = a11 * a22 - a12 * a12;
  if (!(det > 1e-12 * a11 * a22) || !isfinite(det))
    return mlsys_set_error(MLSYS_ERR_ARG, "alpha/beta fit: cannot separate alpha and beta: the measurements are (nearly) degenerate");
  *alpha_us = (a22 * b1 - a12 * b2) / det;
  *beta_us_per_mb = (a11 * b2 - a12 * b1) / det;
  return MLSYS_OK;
}

/* ---- small JSON helpers for the two readers ---- */

static const char *mlsys__coll_numtxt(const mlsys_json *v, char *buf, size_t cap) {
  if (v->type != MLSYS_JSON_NUMBER) snprintf(buf, cap, "%s", mlsys_json_type_name(v->type));
  else if (v->is_int) snprintf(buf, cap, "%lld", (long long)v->i64);
  else snprintf(buf, cap, "%.10g", v->num);
  return buf;
}
/* An object key for a message: at most 40 bytes, non-printable bytes as '?'. */
static const char *mlsys__coll_keytxt(const char *s, char *buf, size_t cap) {
  size_t i;
  for (i = 0; s[i] && i + 1 < cap && i < 40; i++) buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  buf[i] = 0;
  return buf;
}
static mlsys_status mlsys__coll_json_int(const mlsys_json *v, const char *what, int lo, int hi, int *out) {
  char b[48];
  if (v->type != MLSYS_JSON_NUMBER || v->num != floor(v->num))
    return mlsys_json_error_at(v, "%s must be an integer, got %s", what, mlsys__coll_numtxt(v, b, sizeof b));
  if (v->num < lo || v->num > hi)
    return mlsys_json_error_at(v, "%s must be an integer in [%d, %d], got %s", what, lo, hi, mlsys__coll_numtxt(v, b, sizeof b));
  *out = (int)v->num;
  return MLSYS_OK;
}
/* A local GPU id (array element) in [0, G). */
static mlsys_status mlsys__coll_gpu_id(const mlsys_json *v, int G, const char *where, int *out) {
  char b[48];
  if (v->type != MLSYS_JSON_NUMBER || v->num != floor(v->num))
    return mlsys_json_error_at(v, "expected a GPU id (an integer) in %s, got %s", where, mlsys__coll_numtxt(v, b, sizeof b));
  if (v->num < 0 || v->num >= G)
    return mlsys_json_error_at(v, "unknown GPU id %s in %s (GPUs per node: %d)", mlsys__coll_numtxt(v, b, sizeof b), where, G);
  *out = (int)v->num;
  return MLSYS_OK;
}
/* A local GPU id written as an object key ("3"); the error points at the member's value. */
static mlsys_status mlsys__coll_key_id(const mlsys_json *obj, int k, int G, const char *where, int *out) {
  const char *s = obj->keys[k];
  char b[48];
  size_t i = 0, n = strlen(s);
  long v = 0;
  int neg = 0;
  if (n > 0 && s[0] == '-') { neg = 1; i = 1; }
  if (n == i || n - i > 9) goto bad;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') goto bad;
    v = v * 10 + (s[i] - '0');
  }
  if (neg || v >= G)
    return mlsys_json_error_at(&obj->items[k], "unknown GPU id %s%ld in %s (GPUs per node: %d)", neg ? "-" : "", v, where, G);
  *out = (int)v;
  return MLSYS_OK;
bad:
  return mlsys_json_error_at(&obj->items[k], "key '%s' of %s is not a GPU id", mlsys__coll_keytxt(s, b, sizeof b), where);
}

/* ---- topology profile (taccl/examples/topo/topo-*.json, INPUT_GUIDE.md) ---- */

/* A non-negative, finite cost. */
static mlsys_status mlsys__coll_cost_num(const mlsys_json *v, const char *what, double *out) {
  char b[48];
  if (v->type != MLSYS_JSON_NUMBER) return mlsys_json_error_at(v, "%s must be a number, got %s", what, mlsys_json_type_name(v->type));
  if (!isfinite(v->num) || v->num < 0)
    return mlsys_json_error_at(v, "%s must be a finite cost >= 0, got %s", what, mlsys__coll_numtxt(v, b, sizeof b));
  *out = v->num;
  return MLSYS_OK;
}
static mlsys_status mlsys__coll_cost_member(const mlsys_json *root, const char *key, int required, double *out) {
  const mlsys_json *v = mlsys_json_get(root, key);
  char what[64];
  *out = 0;
  if (!v || v->type == MLSYS_JSON_NULL) return required ? mlsys_json_error_at(root, "missing required member '%s'", key) : MLSYS_OK;
  snprintf(what, sizeof what, "'%s'", key);
  return mlsys__coll_cost_num(v, what, out);
}
/* The chunk size and time unit implied by a profile name's suffix: _1KB → 1024 B in 0.01 µs, _32KB → 32768 B in
   0.1 µs, _1MB → 2^20 B in 1 µs (the repo scales each profile so that costs have a large integral part, INPUT_GUIDE).
   Other sizes give the chunk only (unit 0 = unknown). */
static void mlsys__coll_name_chunk(const char *name, double *chunk, double *unit) {
  const char *p = strrchr(name, '_'), *q;
  double v = 0, mult;
  *chunk = 0; *unit = 0;
  if (!p) return;
  for (q = p + 1; *q >= '0' && *q <= '9' && v < 1e9; q++) v = v * 10 + (*q - '0');
  if (q == p + 1 || v == 0) return;
  if ((q[0] == 'K' || q[0] == 'k') && (q[1] == 'B' || q[1] == 'b') && !q[2]) mult = 1024.0;
  else if ((q[0] == 'M' || q[0] == 'm') && (q[1] == 'B' || q[1] == 'b') && !q[2]) mult = 1048576.0;
  else if ((q[0] == 'G' || q[0] == 'g') && (q[1] == 'B' || q[1] == 'b') && !q[2]) mult = 1073741824.0;
  else if ((q[0] == 'B' || q[0] == 'b') && !q[1]) mult = 1.0;
  else return;
  *chunk = v * mult;
  if (*chunk == 1024.0) *unit = 0.01;
  else if (*chunk == 32768.0) *unit = 0.1;
  else if (*chunk == 1048576.0) *unit = 1.0;
}
static int mlsys__coll_prefix_ci(const char *s, const char *pre) {
  for (; *pre; s++, pre++)
    if (tolower((unsigned char)*s) != *pre) return 0;
  return 1;
}

MLSYS_DEF mlsys_status mlsys_coll_profile_parse_json(const char *text, size_t len, const char *source,
                                                     mlsys_coll_profile *out, int *gpus_per_node, int *nics_per_node,
                                                     char *kind_name, size_t kind_len) {
  const char *src = source ? source : "<profile>", *name, *kind;
  mlsys_json_doc doc;
  const mlsys_json *root, *betas, *invbws, *v;
  mlsys_status st;
  int64_t G, nics;
  double chunk, unit, cmb, x, beta, invbw, ra, rb;
  int i;
  if (gpus_per_node) *gpus_per_node = 0;
  if (nics_per_node) *nics_per_node = 0;
  if (kind_name && kind_len) kind_name[0] = 0;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: profile output is NULL", src);
  memset(out, 0, sizeof *out);
  if (!text && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: profile text is NULL", src);
  memset(&doc, 0, sizeof doc);
  if ((st = mlsys_json_parse(text ? text : "", len, src, &doc))) return st;
  root = doc.root;
  if (root->type != MLSYS_JSON_OBJECT) {
    st = mlsys_json_error_at(root, "a topology profile must be a JSON object, got %s", mlsys_json_type_name(root->type));
    goto done;
  }
  if ((st = mlsys_json_get_str(root, "name", 1, NULL, &name))) goto done;
  /* The name prefix selects the repo's link matrix (KnownTopologies in taccl/cli/known_topologies.py). */
  kind = mlsys__coll_prefix_ci(name, "ndv2") ? "ndv2" : mlsys__coll_prefix_ci(name, "dgx2") ? "dgx2" : "custom";
  if (!mlsys_json_get(root, "node_betas_list") &&
      (mlsys_json_get(root, "links") || mlsys_json_get(root, "betas") || mlsys_json_get(root, "invbws"))) {
    st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: the \"custom\" profile schema (links/betas/invbws matrices) is not supported; "
                         "give node_betas_list and node_invbws_list under an NDv2 or DGX2 name", src);
    goto done;
  }
  if ((st = mlsys_json_get_i64(root, "gpus_per_node", 1, 0, 1, 64, &G))) goto done;
  if ((st = mlsys_json_get_i64(root, "nics_per_node", 1, 0, 1, G, &nics))) goto done;
  mlsys__coll_name_chunk(name, &chunk, &unit);
  if ((v = mlsys_json_get(root, "chunk_bytes")) && v->type != MLSYS_JSON_NULL) {
    if ((st = mlsys__coll_cost_num(v, "'chunk_bytes'", &chunk))) goto done;
    if (!(chunk > 0)) { st = mlsys_json_error_at(v, "'chunk_bytes' must be positive, got 0"); goto done; }
  }
  if ((v = mlsys_json_get(root, "time_unit_us")) && v->type != MLSYS_JSON_NULL) {
    if ((st = mlsys__coll_cost_num(v, "'time_unit_us'", &unit))) goto done;
    if (!(unit > 0)) { st = mlsys_json_error_at(v, "'time_unit_us' must be positive, got 0"); goto done; }
  }
  if (!(chunk > 0) || !(unit > 0)) {
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: cannot tell the %s of profile '%.100s' from its name (known suffixes: _1KB, _32KB, "
                         "_1MB); add \"chunk_bytes\" and \"time_unit_us\"", src, chunk > 0 ? "time unit" : "chunk size", name);
    goto done;
  }
  if ((st = mlsys_json_get_typed(root, "node_betas_list", MLSYS_JSON_ARRAY, 1, &betas))) goto done;
  if ((st = mlsys_json_get_typed(root, "node_invbws_list", MLSYS_JSON_ARRAY, 1, &invbws))) goto done;
  if (betas->count < 1) { st = mlsys_json_error_at(betas, "'node_betas_list' is empty"); goto done; }
  if (invbws->count != betas->count) {
    st = mlsys_json_error_at(invbws, "'node_invbws_list' has %d entries but 'node_betas_list' has %d", invbws->count, betas->count);
    goto done;
  }
  beta = invbw = 0;
  for (i = 0; i < betas->count; i++) {
    char what[64];
    snprintf(what, sizeof what, "node_betas_list[%d]", i);
    if ((st = mlsys__coll_cost_num(&betas->items[i], what, &beta))) goto done;
    snprintf(what, sizeof what, "node_invbws_list[%d]", i);
    if ((st = mlsys__coll_cost_num(&invbws->items[i], what, &invbw))) goto done;
  }
  if ((st = mlsys__coll_cost_member(root, "remote_alpha", 1, &ra))) goto done;
  if ((st = mlsys__coll_cost_member(root, "remote_beta", 1, &rb))) goto done;
  if ((st = mlsys__coll_cost_member(root, "alpha", 0, &x))) goto done;          /* validated; folded into invbw */
  if ((st = mlsys__coll_cost_member(root, "remote_invbw", 0, &x))) goto done;   /* validated; = α + β */
  /* The lists are ordered fastest first (NDv2: [double NVLink, single NVLink]); our nvlink is one single link,
     so the last entry. The repo's intra-node lat is invbw with α folded in: α = invbw − β keeps lat(chunk) = invbw. */
  cmb = chunk / MLSYS__COLL_MB;
  out->nvlink.beta_us_per_mb = beta * unit / cmb;
  out->nvlink.alpha_us = (invbw > beta ? invbw - beta : 0) * unit;
  out->ib.alpha_us = ra * unit;
  out->ib.beta_us_per_mb = rb * unit / cmb;
  if (!isfinite(out->nvlink.beta_us_per_mb) || !isfinite(out->ib.beta_us_per_mb) || !isfinite(out->nvlink.alpha_us) ||
      !isfinite(out->ib.alpha_us)) {
    memset(out, 0, sizeof *out);
    st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: costs overflow after conversion to us (chunk %g bytes, unit %g us)", src, chunk, unit);
    goto done;
  }
  out->name = !strcmp(kind, "ndv2") ? "ndv2-json" : !strcmp(kind, "dgx2") ? "dgx2-json" : "custom-json";
  if (gpus_per_node) *gpus_per_node = (int)G;
  if (nics_per_node) *nics_per_node = (int)nics;
  if (kind_name && kind_len) snprintf(kind_name, kind_len, "%s", kind);
done:
  if (st) memset(out, 0, sizeof *out);
  mlsys_json_doc_free(&doc);
  return st;
}

/* ---- communication sketch (§5.4.1, Appendix B.1; the repo's taccl/cli/common.py parse_and_get_topo) ---- */

MLSYS_DEF void mlsys_coll_sketch_default(mlsys_coll_sketch *s) {
  if (!s) return;
  memset(s, 0, sizeof *s);
  s->nnodes = 1;
  s->intranode = MLSYS_COLL_INTRA_NONE;
  s->chunkup = 1;
}

MLSYS_DEF void mlsys_coll_sketch_free(mlsys_coll_sketch *s) {
  int i;
  if (!s) return;
  if (s->switch_ranks)
    for (i = 0; i < s->nswitch; i++) mlsys_free(s->switch_ranks[i]);
  mlsys_free(s->switch_ranks); mlsys_free(s->switch_n); mlsys_free(s->switch_policy);
  mlsys_free(s->internode_conn); mlsys_free(s->beta_split); mlsys_free(s->relay_sender); mlsys_free(s->sym);
  memset(s, 0, sizeof *s);
}

/* "1M", "32K", "1KB", "2MB", "1G", "512" (bytes; K = 1024). */
static int mlsys__coll_parse_size(const char *s, double *out) {
  double v = 0, f = 0.1, mult = 1;
  int digits = 0;
  while (*s >= '0' && *s <= '9' && v < 1e18) { v = v * 10 + (*s++ - '0'); digits++; }
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9') { v += f * (*s++ - '0'); f *= 0.1; digits++; }
  }
  if (!digits) return 0;
  switch (*s) {
    case 'k': case 'K': mult = 1024.0; s++; break;
    case 'm': case 'M': mult = 1048576.0; s++; break;
    case 'g': case 'G': mult = 1073741824.0; s++; break;
    case 't': case 'T': mult = 1099511627776.0; s++; break;
    default: break;
  }
  if (*s == 'b' || *s == 'B') s++;
  if (*s) return 0;
  *out = v * mult;
  return *out > 0 && *out <= 1125899906842624.0; /* up to 1 PiB */
}

static mlsys_status mlsys__coll_parse_switches(const mlsys_json *intra, int G, mlsys_coll_sketch *out) {
  const mlsys_json *sws, *pol;
  uint64_t *mask;
  mlsys_status st;
  int k, l, i, nsw;
  char where[64];
  if ((st = mlsys_json_get_typed(intra, "switches", MLSYS_JSON_ARRAY, 1, &sws))) return st;
  nsw = sws->count;
  if (nsw < 1) return mlsys_json_error_at(sws, "intranode_sketch strategy 'switch' needs at least one switch in 'switches'");
  out->switch_n = (int *)mlsys_calloc((size_t)nsw, sizeof(int));
  out->switch_policy = (int *)mlsys_calloc((size_t)nsw, sizeof(int));
  out->switch_ranks = (int **)mlsys_calloc((size_t)nsw, sizeof(int *));
  mask = (uint64_t *)mlsys_calloc((size_t)nsw, sizeof(uint64_t));
  if (!out->switch_n || !out->switch_policy || !out->switch_ranks || !mask) { mlsys_free(mask); return MLSYS_ERR_NOMEM; }
  out->nswitch = nsw;
  for (k = 0; k < nsw; k++) {
    const mlsys_json *e = &sws->items[k];
    if (e->type != MLSYS_JSON_ARRAY) {
      st = mlsys_json_error_at(e, "switch %d must be a list of GPU ids, got %s", k, mlsys_json_type_name(e->type));
      goto fail;
    }
    if (e->count < 2) { st = mlsys_json_error_at(e, "switch %d has %d GPU(s); a switch needs at least 2", k, e->count); goto fail; }
    out->switch_ranks[k] = (int *)mlsys_alloc((size_t)e->count, sizeof(int));
    if (!out->switch_ranks[k]) { st = MLSYS_ERR_NOMEM; goto fail; }
    out->switch_n[k] = e->count;
    out->switch_policy[k] = MLSYS_COLL_UC_AUTO;
    snprintf(where, sizeof where, "intranode_sketch.switches[%d]", k);
    for (i = 0; i < e->count; i++) {
      int g;
      if ((st = mlsys__coll_gpu_id(&e->items[i], G, where, &g))) goto fail;
      if (mask[k] >> g & 1) { st = mlsys_json_error_at(&e->items[i], "switch %d lists GPU %d twice", k, g); goto fail; }
      mask[k] |= (uint64_t)1 << g;
      out->switch_ranks[k][i] = g;
    }
    /* The repo requires switches to be disjoint or identical (identical ones split the bandwidth). */
    for (l = 0; l < k; l++)
      if ((mask[l] & mask[k]) && mask[l] != mask[k]) {
        st = mlsys_json_error_at(e, "switches %d and %d overlap partially (switches must be disjoint or identical)", l, k);
        goto fail;
      }
  }
  mlsys_free(mask);
  mask = NULL;
  if ((st = mlsys_json_get_typed(intra, "switch_hyperedge_strategy", MLSYS_JSON_ARRAY, 0, &pol))) return st;
  if (pol) {
    if (pol->count != nsw)
      return mlsys_json_error_at(pol, "switch_hyperedge_strategy has %d entries for %d switch(es)", pol->count, nsw);
    for (k = 0; k < nsw; k++) {
      const mlsys_json *p = &pol->items[k];
      if (p->type != MLSYS_JSON_STRING)
        return mlsys_json_error_at(p, "switch_hyperedge_strategy[%d] must be a string, got %s", k, mlsys_json_type_name(p->type));
      if (!strcmp(p->str, "uc-max")) out->switch_policy[k] = MLSYS_COLL_UC_MAX;
      else if (!strcmp(p->str, "uc-min")) out->switch_policy[k] = MLSYS_COLL_UC_MIN;
      else if (!strcmp(p->str, "auto")) out->switch_policy[k] = MLSYS_COLL_UC_AUTO;
      else if (!strcmp(p->str, "ignore") || !strcmp(p->str, "free")) out->switch_policy[k] = MLSYS_COLL_UC_FREE;
      else {
        char b[48];
        return mlsys_json_error_at(p, "unknown switch_hyperedge_strategy '%s' (known: uc-max, uc-min, auto, ignore)",
                                   mlsys__coll_keytxt(p->str, b, sizeof b));
      }
    }
  }
  return MLSYS_OK;
fail:
  mlsys_free(mask);
  return st;
}

static mlsys_status mlsys__coll_parse_internode(const mlsys_json *inter, int G, mlsys_coll_sketch *out) {
  const mlsys_json *v, *m;
  const char *s;
  mlsys_status st;
  int i, j, k, from_chunk_map = 0;
  char b[48];
  out->has_internode = 1;
  if ((st = mlsys_json_get_str(inter, "strategy", 1, NULL, &s))) return st;
  if (strcmp(s, "relay"))
    return mlsys_json_error_at(mlsys_json_get(inter, "strategy"), "unsupported internode_sketch strategy '%s' (only 'relay')",
                               mlsys__coll_keytxt(s, b, sizeof b));
  out->internode_conn = (unsigned char *)mlsys_calloc((size_t)G * G, 1);
  if (!out->internode_conn) return MLSYS_ERR_NOMEM;
  v = mlsys_json_get(inter, "internode_conn");
  if (!v || v->type == MLSYS_JSON_NULL) return mlsys_json_error_at(inter, "missing required member 'internode_conn' of internode_sketch");
  if (v->type == MLSYS_JSON_STRING) {
    if (!strcmp(v->str, "direct-map"))
      for (i = 0; i < G; i++) out->internode_conn[i * G + i] = 1;
    else if (!strcmp(v->str, "fully-connected"))
      memset(out->internode_conn, 1, (size_t)G * G);
    else
      return mlsys_json_error_at(v, "unknown internode_conn '%s' (known: \"direct-map\", \"fully-connected\", or an object "
                                 "{\"i\": [j, ...]})", mlsys__coll_keytxt(v->str, b, sizeof b));
  } else if (v->type == MLSYS_JSON_OBJECT) {
    for (k = 0; k < v->count; k++) {
      const mlsys_json *d = &v->items[k];
      if ((st = mlsys__coll_key_id(v, k, G, "internode_conn", &i))) return st;
      if (d->type != MLSYS_JSON_ARRAY)
        return mlsys_json_error_at(d, "internode_conn of GPU %d must be a list of GPU ids, got %s", i, mlsys_json_type_name(d->type));
      for (j = 0; j < d->count; j++) {
        int t;
        if ((st = mlsys__coll_gpu_id(&d->items[j], G, "internode_conn", &t))) return st;
        if (out->internode_conn[i * G + t])
          return mlsys_json_error_at(&d->items[j], "internode_conn of GPU %d lists GPU %d twice", i, t);
        out->internode_conn[i * G + t] = 1;
      }
    }
  } else {
    return mlsys_json_error_at(v, "'internode_conn' must be an object {\"i\": [j, ...]}, \"direct-map\" or \"fully-connected\", got %s",
                               mlsys_json_type_name(v->type));
  }
  /* beta_split {"i": n}: sends from GPU i use 1/n of the NIC (β·n); absent → the repo's rule later. */
  if ((st = mlsys_json_get_typed(inter, "beta_split", MLSYS_JSON_OBJECT, 0, &m))) return st;
  if (m) {
    out->beta_split = (double *)mlsys_calloc((size_t)G, sizeof(double));
    if (!out->beta_split) return MLSYS_ERR_NOMEM;
    for (k = 0; k < m->count; k++) {
      const mlsys_json *e = &m->items[k];
      if ((st = mlsys__coll_key_id(m, k, G, "beta_split", &i))) return st;
      if (e->type != MLSYS_JSON_NUMBER || !(e->num > 0) || !isfinite(e->num) || e->num > 1e6)
        return mlsys_json_error_at(e, "beta_split of GPU %d must be a number in (0, 1e6], got %s", i, mlsys__coll_numtxt(e, b, sizeof b));
      out->beta_split[i] = e->num;
    }
  }
  /* chunk_to_relay_map [r1, r2]: chunks of GPU i leave the node through GPU (i / r1)·r1 + r2 (Listing B.1). */
  if ((st = mlsys_json_get_typed(inter, "chunk_to_relay_map", MLSYS_JSON_ARRAY, 0, &m))) return st;
  if (m) {
    int r1, r2;
    if (m->count != 2) return mlsys_json_error_at(m, "chunk_to_relay_map must be a pair [r1, r2], got %d entries", m->count);
    if ((st = mlsys__coll_json_int(&m->items[0], "chunk_to_relay_map r1", 1, G, &r1))) return st;
    if ((st = mlsys__coll_json_int(&m->items[1], "chunk_to_relay_map r2", 0, r1 - 1, &r2))) return st;
    out->relay_sender = (int *)mlsys_alloc((size_t)G, sizeof(int));
    if (!out->relay_sender) return MLSYS_ERR_NOMEM;
    for (i = 0; i < G; i++) {
      int snd = (i / r1) * r1 + r2;
      if (snd >= G)
        return mlsys_json_error_at(m, "chunk_to_relay_map [%d, %d] sends GPU %d's chunks via GPU %d, beyond the %d GPUs per node",
                                   r1, r2, i, snd, G);
      out->relay_sender[i] = snd;
    }
    from_chunk_map = 1;
  }
  /* gpus_to_sender_rev_map {"sender": [gpus]} [repo]: the explicit form; must agree with chunk_to_relay_map. */
  if ((st = mlsys_json_get_typed(inter, "gpus_to_sender_rev_map", MLSYS_JSON_OBJECT, 0, &m))) return st;
  if (m) {
    uint64_t listed = 0;
    if (!out->relay_sender) {
      out->relay_sender = (int *)mlsys_alloc((size_t)G, sizeof(int));
      if (!out->relay_sender) return MLSYS_ERR_NOMEM;
      for (i = 0; i < G; i++) out->relay_sender[i] = -1;
    }
    for (k = 0; k < m->count; k++) {
      const mlsys_json *e = &m->items[k];
      int snd;
      if ((st = mlsys__coll_key_id(m, k, G, "gpus_to_sender_rev_map", &snd))) return st;
      if (e->type != MLSYS_JSON_ARRAY)
        return mlsys_json_error_at(e, "gpus_to_sender_rev_map of sender %d must be a list of GPU ids, got %s", snd,
                                   mlsys_json_type_name(e->type));
      for (j = 0; j < e->count; j++) {
        int g;
        if ((st = mlsys__coll_gpu_id(&e->items[j], G, "gpus_to_sender_rev_map", &g))) return st;
        if (listed >> g & 1) return mlsys_json_error_at(&e->items[j], "GPU %d is listed twice in gpus_to_sender_rev_map", g);
        listed |= (uint64_t)1 << g;
        if (from_chunk_map && out->relay_sender[g] != snd)
          return mlsys_json_error_at(&e->items[j], "gpus_to_sender_rev_map sends GPU %d via GPU %d but chunk_to_relay_map via GPU %d",
                                     g, snd, out->relay_sender[g]);
        out->relay_sender[g] = snd;
      }
    }
  }
  return mlsys_json_get_bool(inter, "enforce_ordering", 0, 0, &out->enforce_ordering);
}

MLSYS_DEF mlsys_status mlsys_coll_sketch_parse_json(const char *text, size_t len, const char *source,
                                                    int gpus_per_node, mlsys_coll_sketch *out) {
  const char *src = source ? source : "<sketch>";
  const int G = gpus_per_node;
  mlsys_json_doc doc;
  const mlsys_json *root, *intra, *inter, *v, *hp;
  mlsys_status st;
  int64_t x;
  int i, j, N;
  char b1[48], b2[48];
  /* On every failure *out is left zeroed (safe to free, nothing to free). */
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: sketch output is NULL", src);
  memset(out, 0, sizeof *out);
  if (!text && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: sketch text is NULL", src);
  if (G < 1 || G > 64) return mlsys_set_error(MLSYS_ERR_ARG, "%s: gpus_per_node %d out of range [1, 64]", src, G);
  memset(&doc, 0, sizeof doc);
  if ((st = mlsys_json_parse(text ? text : "", len, src, &doc))) return st;
  mlsys_coll_sketch_default(out);
  root = doc.root;
  if (root->type != MLSYS_JSON_OBJECT) {
    st = mlsys_json_error_at(root, "a communication sketch must be a JSON object, got %s", mlsys_json_type_name(root->type));
    goto fail;
  }
  if ((st = mlsys_json_get_i64(root, "nnodes", 0, 1, 1, 64, &x))) goto fail;
  out->nnodes = (int)x;
  N = out->nnodes * G;

  if ((st = mlsys_json_get_typed(root, "intranode_sketch", MLSYS_JSON_OBJECT, 0, &intra))) goto fail;
  if (intra) {
    const char *s;
    if ((st = mlsys_json_get_str(intra, "strategy", 1, NULL, &s))) goto fail;
    if (!strcmp(s, "none")) out->intranode = MLSYS_COLL_INTRA_NONE;
    else if (!strcmp(s, "switch")) out->intranode = MLSYS_COLL_INTRA_SWITCH;
    else if (!strcmp(s, "minmax")) out->intranode = MLSYS_COLL_INTRA_MINMAX;
    else if (!strcmp(s, "maxmin")) out->intranode = MLSYS_COLL_INTRA_MAXMIN;
    else {
      st = mlsys_json_error_at(mlsys_json_get(intra, "strategy"), "unknown intranode_sketch strategy '%s' (known: none, switch, "
                               "minmax, maxmin)", mlsys__coll_keytxt(s, b1, sizeof b1));
      goto fail;
    }
    /* As in the repo, switches only matter for the "switch" strategy. */
    if (out->intranode == MLSYS_COLL_INTRA_SWITCH && (st = mlsys__coll_parse_switches(intra, G, out))) goto fail;
  }

  if ((st = mlsys_json_get_typed(root, "internode_sketch", MLSYS_JSON_OBJECT, 0, &inter))) goto fail;
  if (inter && (st = mlsys__coll_parse_internode(inter, G, out))) goto fail;

  if ((st = mlsys_json_get_typed(root, "symmetry_offsets", MLSYS_JSON_ARRAY, 0, &v))) goto fail;
  if (v && v->count) {
    out->sym = (mlsys_coll_sym *)mlsys_calloc((size_t)v->count, sizeof(mlsys_coll_sym));
    if (!out->sym) { st = MLSYS_ERR_NOMEM; goto fail; }
    for (i = 0; i < v->count; i++) {
      const mlsys_json *e = &v->items[i];
      const mlsys_json *eo, *eg;
      if (e->type != MLSYS_JSON_ARRAY || e->count != 2) {
        st = mlsys_json_error_at(e, "symmetry_offsets[%d] must be a pair [offset, group], got %s", i,
                                 e->type == MLSYS_JSON_ARRAY ? "a list of another length" : mlsys_json_type_name(e->type));
        goto fail;
      }
      eo = &e->items[0]; eg = &e->items[1];
      mlsys__coll_numtxt(eo, b1, sizeof b1); mlsys__coll_numtxt(eg, b2, sizeof b2);
      if (eo->type != MLSYS_JSON_NUMBER || eg->type != MLSYS_JSON_NUMBER || eo->num != floor(eo->num) || eg->num != floor(eg->num)) {
        st = mlsys_json_error_at(e, "symmetry_offsets[%d] = [%s, %s]: offset and group must be integers", i, b1, b2);
        goto fail;
      }
      if (!(eg->num >= 1) || !(eo->num >= 0) || !(eo->num < eg->num)) {
        st = mlsys_json_error_at(e, "symmetry_offsets[%d] = [%s, %s]: need group >= 1 and 0 <= offset < group", i, b1, b2);
        goto fail;
      }
      if (eg->num > N || N % (int)eg->num) {
        st = mlsys_json_error_at(e, "symmetry_offsets[%d] = [%s, %s]: group %s does not divide the %d ranks (%d nodes x %d GPUs)",
                                 i, b1, b2, b2, N, out->nnodes, G);
        goto fail;
      }
      out->sym[i].offset = (int)eo->num;
      out->sym[i].group = (int)eg->num;
      out->sym[i].block = 0;
      out->nsym = i + 1;
    }
  }

  if ((st = mlsys_json_get_typed(root, "hyperparameters", MLSYS_JSON_OBJECT, 0, &hp))) goto fail;
  if (hp) {
    if ((st = mlsys_json_get_i64(hp, "input_chunkup", 0, 1, 1, 64, &x))) goto fail;
    out->chunkup = (int)x;
    v = mlsys_json_get(hp, "input_size");
    if (v && v->type == MLSYS_JSON_STRING) {
      if (!mlsys__coll_parse_size(v->str, &out->input_bytes)) {
        st = mlsys_json_error_at(v, "'input_size' must be a size like \"1M\", \"32K\" or \"1G\" (K = 1024), got \"%s\"",
                                 mlsys__coll_keytxt(v->str, b1, sizeof b1));
        goto fail;
      }
    } else if (v && v->type == MLSYS_JSON_NUMBER) {
      if (!(v->num > 0) || v->num > 1125899906842624.0) {
        st = mlsys_json_error_at(v, "'input_size' must be a positive number of bytes up to 2^50, got %s", mlsys__coll_numtxt(v, b1, sizeof b1));
        goto fail;
      }
      out->input_bytes = v->num;
    } else if (v && v->type != MLSYS_JSON_NULL) {
      st = mlsys_json_error_at(v, "'input_size' must be a string like \"1M\" or a number of bytes, got %s", mlsys_json_type_name(v->type));
      goto fail;
    }
  }

  /* Whole-sketch checks: with several nodes, some GPU must be allowed to send to another node, and every relay
     sender must have an inter-node link (otherwise the chunks it relays cannot leave). */
  if (out->has_internode && out->nnodes > 1) {
    int any = 0;
    for (i = 0; i < G * G && !any; i++) any = out->internode_conn[i];
    if (!any) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "%s: sketch disconnects node 0 from the other %d node(s): internode_conn gives no GPU a "
                           "link to another node", src, out->nnodes - 1);
      goto fail;
    }
    if (out->relay_sender)
      for (i = 0; i < G; i++) {
        int snd = out->relay_sender[i], has = 0;
        if (snd < 0) continue;
        for (j = 0; j < G; j++) has |= out->internode_conn[snd * G + j];
        if (!has) {
          st = mlsys_set_error(MLSYS_ERR_ARG, "%s: sketch disconnects GPU %d of every node: its relay sender GPU %d has no link in "
                               "internode_conn", src, i, snd);
          goto fail;
        }
      }
  }
  mlsys_json_doc_free(&doc);
  return MLSYS_OK;
fail:
  mlsys_coll_sketch_free(out);  /* the allocators already set the NOMEM message */
  mlsys_json_doc_free(&doc);
  return st;
}
/* ---------------------------------------------------------------------------------------------------------------
   Programs (§5.6; spec §3.10–3.13): lowering an algorithm to per-GPU threadblocks of MSCCL steps, the MSCCL XML
   writer and reader, the program verifier (abstract interpretation), the CPU executor and the naive reference
   collective.

   Step semantics are those of the MSCCL interpreter (msccl-executor-nccl): s send src; r recv into dst; rcs recv
   into dst and forward it; rrs send (recv ⊕ src) without storing it; rrc dst = recv ⊕ src; rrcs dst = recv ⊕ src
   and forward it; cpy dst = src; re dst = dst ⊕ src; nop only waits for its dependency. A step may wait for ONE
   step of another threadblock of its GPU (depid, deps); more dependencies become nop steps in front of it (as
   msccl-tools' ncclize does). Sends and receives match in FIFO order per (sender, receiver, channel).

   Instances (§3.10, msccl-tools ncclize): every chunk slot becomes n sub-slots (slot k → k·n … k·n+n−1); a step
   on chunk slots [off, off+cnt) becomes n steps on channels 0..n−1, instance i on sub-slots
   [off·n + i·cnt, off·n + (i+1)·cnt). All instances together move the same bytes as the original step, element
   by element, so merged (cnt > 1) steps stay contiguous.
   --------------------------------------------------------------------------------------------------------------- */

/* Limits of the reader (and of programs in general): far above what the MSCCL runtime accepts (≤ 256 steps per
   threadblock, ≤ 216 threadblocks) so that every program the lowering writes can be read back. */
#define MLSYS__COLL_MAX_GPUS 4096
#define MLSYS__COLL_MAX_TBS 65536
#define MLSYS__COLL_MAX_STEPS (1 << 20)
#define MLSYS__COLL_MAX_TOTAL_STEPS (1 << 24)
#define MLSYS__COLL_MAX_CHUNKS (1 << 24)
#define MLSYS__COLL_MAX_CHANNELS 65536
#define MLSYS__COLL_MAX_INSTANCES 1024

static const char *const mlsys__coll_op_names[9] = {"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"};
static const char mlsys__coll_buf_chars[3] = {'i', 'o', 's'};

static int mlsys__coll_op_sends(int op) {
  return op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRCS;
}
static int mlsys__coll_op_recvs(int op) {
  return op == MLSYS_COLL_OP_RECV || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRC ||
         op == MLSYS_COLL_OP_RRCS;
}
static int mlsys__coll_op_reads_src(int op) {
  return op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRC || op == MLSYS_COLL_OP_RRCS ||
         op == MLSYS_COLL_OP_COPY || op == MLSYS_COLL_OP_REDUCE;
}
static int mlsys__coll_op_writes_dst(int op) {
  return op == MLSYS_COLL_OP_RECV || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRC || op == MLSYS_COLL_OP_RRCS ||
         op == MLSYS_COLL_OP_COPY || op == MLSYS_COLL_OP_REDUCE;
}
static int mlsys__coll_buf_chunks(const mlsys_coll_gpu *g, int buf) {
  return buf == MLSYS_COLL_BUF_IN ? g->i_chunks : buf == MLSYS_COLL_BUF_OUT ? g->o_chunks : g->s_chunks;
}

/* Formats a message into msg (if given) and the thread's error detail; returns st. */
static mlsys_status mlsys__coll_fail(mlsys_status st, char *msg, size_t msglen, const char *fmt, ...) MLSYS__PRINTF(4, 5);
static mlsys_status mlsys__coll_fail(mlsys_status st, char *msg, size_t msglen, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (msg && msglen) snprintf(msg, msglen, "%s", buf);
  return mlsys_set_error(st, "%s", buf);
}

MLSYS_DEF void mlsys_coll_prog_free(mlsys_coll_prog *p) {
  int g, t;
  if (!p) return;
  if (p->gpus) {
    for (g = 0; g < p->ngpus; g++) {
      mlsys_coll_gpu *gp = &p->gpus[g];
      if (gp->tbs)
        for (t = 0; t < gp->ntbs; t++) mlsys_free(gp->tbs[t].steps);
      mlsys_free(gp->tbs);
    }
  }
  mlsys_free(p->gpus);
  memset(p, 0, sizeof *p);
}

typedef struct { int a, b, i; } mlsys__coll_key3;
static int mlsys__coll_key3_cmp(const void *p, const void *q) {
  const mlsys__coll_key3 *x = (const mlsys__coll_key3 *)p, *y = (const mlsys__coll_key3 *)q;
  if (x->a != y->a) return x->a < y->a ? -1 : 1;
  if (x->b != y->b) return x->b < y->b ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}
/* Two threadblocks of a GPU on one connection (same peer and channel, same direction)? 1 and the pair in
   (*t1, *t2), *dir (0 send, 1 recv); 0 if none; −1 out of memory. */
static int mlsys__coll_dup_conn(const mlsys_coll_gpu *gp, int *t1, int *t2, int *dir) {
  mlsys__coll_key3 *kk = (mlsys__coll_key3 *)mlsys_alloc((size_t)gp->ntbs + 1, sizeof *kk);
  int d, t, nk;
  if (!kk) return -1;
  for (d = 0; d < 2; d++) {
    nk = 0;
    for (t = 0; t < gp->ntbs; t++) {
      int peer = d ? gp->tbs[t].recv : gp->tbs[t].send;
      if (peer >= 0) { kk[nk].a = gp->tbs[t].chan; kk[nk].b = peer; kk[nk].i = t; nk++; }
    }
    qsort(kk, (size_t)nk, sizeof *kk, mlsys__coll_key3_cmp);
    for (t = 1; t < nk; t++)
      if (kk[t].a == kk[t - 1].a && kk[t].b == kk[t - 1].b) {
        *t1 = kk[t - 1].i; *t2 = kk[t].i; *dir = d;
        mlsys_free(kk);
        return 1;
      }
  }
  mlsys_free(kk);
  return 0;
}

/* Structural validity of a program (what every consumer relies on before touching buffers): ids, peers, channels,
   step types, buffer ranges of the operands each step type uses, dependencies that exist, and no two
   threadblocks of a GPU on the same connection (the FIFO order of a connection must be one threadblock's order).
   Returns MLSYS_ERR_ARG naming the first problem. */
static mlsys_status mlsys__coll_prog_check(const mlsys_coll_prog *p, char *msg, size_t msglen) {
  int g, t, s, total = 0, dup, dir;
  if (!p || !p->gpus || p->ngpus < 1 || p->ngpus > MLSYS__COLL_MAX_GPUS)
    return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "program has no GPUs (ngpus %d)", p ? p->ngpus : 0);
  if (p->kind < 0 || p->kind > 3) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "program collective kind %d unknown", p->kind);
  if (p->nchannels < 1 || p->nchannels > MLSYS__COLL_MAX_CHANNELS)
    return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "nchannels %d out of range [1, %d]", p->nchannels, MLSYS__COLL_MAX_CHANNELS);
  if (p->instances < 1 || p->instances > MLSYS__COLL_MAX_INSTANCES)
    return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "instances %d out of range [1, %d]", p->instances, MLSYS__COLL_MAX_INSTANCES);
  for (g = 0; g < p->ngpus; g++) {
    const mlsys_coll_gpu *gp = &p->gpus[g];
    if (gp->id != g) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpus[%d] has id %d", g, gp->id);
    if (gp->i_chunks < 0 || gp->o_chunks < 0 || gp->s_chunks < 0 || gp->i_chunks > MLSYS__COLL_MAX_CHUNKS ||
        gp->o_chunks > MLSYS__COLL_MAX_CHUNKS || gp->s_chunks > MLSYS__COLL_MAX_CHUNKS)
      return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d: chunk counts (%d, %d, %d) out of range", g, gp->i_chunks,
                              gp->o_chunks, gp->s_chunks);
    if (gp->ntbs < 0 || gp->ntbs > MLSYS__COLL_MAX_TBS || (gp->ntbs > 0 && !gp->tbs))
      return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d: bad threadblock count %d", g, gp->ntbs);
    for (t = 0; t < gp->ntbs; t++) {
      const mlsys_coll_tb *tb = &gp->tbs[t];
      if (tb->id != t) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d: tbs[%d] has id %d", g, t, tb->id);
      if (tb->send < -1 || tb->send >= p->ngpus || tb->send == g || tb->recv < -1 || tb->recv >= p->ngpus || tb->recv == g)
        return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d: peers send=%d recv=%d out of range", g, t, tb->send, tb->recv);
      if (tb->chan < 0 || tb->chan >= p->nchannels)
        return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d: channel %d not in [0, %d)", g, t, tb->chan, p->nchannels);
      if (tb->nsteps < 0 || tb->nsteps > MLSYS__COLL_MAX_STEPS || (tb->nsteps > 0 && !tb->steps))
        return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d: bad step count %d", g, t, tb->nsteps);
      total += tb->nsteps;
      if (total > MLSYS__COLL_MAX_TOTAL_STEPS) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "program has more than %d steps", MLSYS__COLL_MAX_TOTAL_STEPS);
      for (s = 0; s < tb->nsteps; s++) {
        const mlsys_coll_step *st = &tb->steps[s];
        int op = st->op;
        if (op > MLSYS_COLL_OP_NOP) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: unknown step type %d", g, t, s, op);
        if (st->srcbuf > 2 || st->dstbuf > 2) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: unknown buffer", g, t, s);
        if (st->hasdep > 1) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: hasdep must be 0 or 1", g, t, s);
        if (st->depid < -1 || st->depid >= gp->ntbs || st->depid == t)
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: depends on threadblock %d, which is not another threadblock of the gpu", g, t, s, st->depid);
        if (st->depid >= 0 && (st->deps < 0 || st->deps >= gp->tbs[st->depid].nsteps))
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: depends on step %d of threadblock %d, which has %d steps", g, t, s, st->deps, st->depid, gp->tbs[st->depid].nsteps);
        if (op == MLSYS_COLL_OP_NOP) continue;
        if (st->cnt < 1 || st->cnt > MLSYS__COLL_MAX_CHUNKS)
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: count %d must be positive", g, t, s, st->cnt);
        if (mlsys__coll_op_sends(op) && tb->send < 0)
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: %s step in a threadblock without a send peer", g, t, s, mlsys__coll_op_names[op]);
        if (mlsys__coll_op_recvs(op) && tb->recv < 0)
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: %s step in a threadblock without a recv peer", g, t, s, mlsys__coll_op_names[op]);
        if (mlsys__coll_op_reads_src(op) &&
            (st->srcoff < 0 || (long long)st->srcoff + st->cnt > mlsys__coll_buf_chunks(gp, st->srcbuf)))
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: source %c[%d..%d) outside the buffer's %d chunks", g, t, s,
                                  mlsys__coll_buf_chars[st->srcbuf], st->srcoff, st->srcoff + st->cnt, mlsys__coll_buf_chunks(gp, st->srcbuf));
        if (mlsys__coll_op_writes_dst(op) &&
            (st->dstoff < 0 || (long long)st->dstoff + st->cnt > mlsys__coll_buf_chunks(gp, st->dstbuf)))
          return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d tb %d step %d: destination %c[%d..%d) outside the buffer's %d chunks", g, t, s,
                                  mlsys__coll_buf_chars[st->dstbuf], st->dstoff, st->dstoff + st->cnt, mlsys__coll_buf_chunks(gp, st->dstbuf));
      }
    }
    if ((dup = mlsys__coll_dup_conn(gp, &t, &s, &dir)) != 0) {
      if (dup < 0) return mlsys__coll_fail(MLSYS_ERR_NOMEM, msg, msglen, "out of memory");
      return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "gpu %d: threadblocks %d and %d both %s gpu %d on channel %d", g, t, s,
                              dir ? "receive from" : "send to", dir ? gp->tbs[s].recv : gp->tbs[s].send, gp->tbs[s].chan);
    }
  }
  return MLSYS_OK;
}

/* ---- element kernels (the CPU reference of the reduce kernels) ---- */
static size_t mlsys__coll_dtype_size(int dtype) {
  switch (dtype) {
    case MLSYS_COLL_I32: return 4;
    case MLSYS_COLL_I64: return 8;
    case MLSYS_COLL_F32: return 4;
    case MLSYS_COLL_F64: return 8;
    default: return 0;
  }
}

/* dst[i] = a[i] ⊕ b[i] (dst may alias a or b). Integer sums and products wrap (two's complement, computed
   unsigned) so that any input is defined behaviour and every order of reduction gives the same bits. */
#define MLSYS__COLL_RED_LOOP(T, EXPR)                                     \
  do {                                                                    \
    T *d_ = (T *)dst;                                                     \
    const T *a_ = (const T *)a, *b_ = (const T *)b;                       \
    for (i = 0; i < n; i++) {                                             \
      T x = a_[i], y = b_[i];                                             \
      d_[i] = (EXPR);                                                     \
    }                                                                     \
  } while (0)
static void mlsys__coll_reduce_elems(void *dst, const void *a, const void *b, size_t n, int dtype, int redop) {
  size_t i;
  switch (dtype) {
    case MLSYS_COLL_I32:
      switch (redop) {
        case MLSYS_COLL_SUM: MLSYS__COLL_RED_LOOP(int32_t, (int32_t)((uint32_t)x + (uint32_t)y)); break;
        case MLSYS_COLL_PROD: MLSYS__COLL_RED_LOOP(int32_t, (int32_t)((uint32_t)x * (uint32_t)y)); break;
        case MLSYS_COLL_MIN: MLSYS__COLL_RED_LOOP(int32_t, x < y ? x : y); break;
        default: MLSYS__COLL_RED_LOOP(int32_t, x > y ? x : y); break;
      }
      break;
    case MLSYS_COLL_I64:
      switch (redop) {
        case MLSYS_COLL_SUM: MLSYS__COLL_RED_LOOP(int64_t, (int64_t)((uint64_t)x + (uint64_t)y)); break;
        case MLSYS_COLL_PROD: MLSYS__COLL_RED_LOOP(int64_t, (int64_t)((uint64_t)x * (uint64_t)y)); break;
        case MLSYS_COLL_MIN: MLSYS__COLL_RED_LOOP(int64_t, x < y ? x : y); break;
        default: MLSYS__COLL_RED_LOOP(int64_t, x > y ? x : y); break;
      }
      break;
    case MLSYS_COLL_F32:
      switch (redop) {
        case MLSYS_COLL_SUM: MLSYS__COLL_RED_LOOP(float, x + y); break;
        case MLSYS_COLL_PROD: MLSYS__COLL_RED_LOOP(float, x * y); break;
        case MLSYS_COLL_MIN: MLSYS__COLL_RED_LOOP(float, x < y ? x : y); break;
        default: MLSYS__COLL_RED_LOOP(float, x > y ? x : y); break;
      }
      break;
    default:
      switch (redop) {
        case MLSYS_COLL_SUM: MLSYS__COLL_RED_LOOP(double, x + y); break;
        case MLSYS_COLL_PROD: MLSYS__COLL_RED_LOOP(double, x * y); break;
        case MLSYS_COLL_MIN: MLSYS__COLL_RED_LOOP(double, x < y ? x : y); break;
        default: MLSYS__COLL_RED_LOOP(double, x > y ? x : y); break;
      }
      break;
  }
}
#undef MLSYS__COLL_RED_LOOP

/* Naive collective on NCCL's out-of-place layouts (AG: in C slots, out N·C; A2A: in/out N·C with chunk
   (s·N+d)·C+k at in[s] slot d·C+k and out[d] slot s·C+k; RS: in N·C, out C; AR: in/out N·C). Reductions fold
   ranks 0..N−1 in order. */
MLSYS_DEF mlsys_status mlsys_coll_reference(int kind, int nranks, int chunkup, int dtype, int redop, void *const *in,
                                            void *const *out, size_t chunk_elems) {
  int N = nranks, C = chunkup, r, c, q;
  size_t es = mlsys__coll_dtype_size(dtype), E = chunk_elems, bytes;
  if (kind < 0 || kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "reference: unknown collective kind %d", kind);
  if (N < 1 || N > MLSYS__COLL_MAX_GPUS || C < 1) return mlsys_set_error(MLSYS_ERR_ARG, "reference: nranks %d / chunkup %d out of range", N, C);
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "reference: unknown dtype %d", dtype);
  if (redop < 0 || redop > 3) return mlsys_set_error(MLSYS_ERR_ARG, "reference: unknown reduction %d", redop);
  if (!in || !out) return mlsys_set_error(MLSYS_ERR_ARG, "reference: NULL buffer array");
  for (r = 0; r < N; r++)
    if (!in[r] || !out[r]) return mlsys_set_error(MLSYS_ERR_ARG, "reference: NULL buffer for rank %d", r);
  if (E == 0 || E > ((size_t)1 << 40) / es) return mlsys_set_error(MLSYS_ERR_ARG, "reference: chunk_elems %zu out of range", E);
  bytes = E * es;
#define MLSYS__COLL_AT(p, slot) ((char *)(p) + (size_t)(slot) * bytes)
  switch (kind) {
    case MLSYS_COLL_ALLGATHER:
      for (r = 0; r < N; r++)
        for (c = 0; c < N * C; c++) memcpy(MLSYS__COLL_AT(out[r], c), MLSYS__COLL_AT(in[c / C], c % C), bytes);
      break;
    case MLSYS_COLL_ALLTOALL:
      for (r = 0; r < N; r++)          /* r = destination d */
        for (q = 0; q < N; q++)        /* q = source s */
          for (c = 0; c < C; c++) memcpy(MLSYS__COLL_AT(out[r], q * C + c), MLSYS__COLL_AT(in[q], r * C + c), bytes);
      break;
    case MLSYS_COLL_REDUCESCATTER:
      for (r = 0; r < N; r++)
        for (c = 0; c < C; c++) {
          void *d = MLSYS__COLL_AT(out[r], c);
          memcpy(d, MLSYS__COLL_AT(in[0], r * C + c), bytes);
          for (q = 1; q < N; q++) mlsys__coll_reduce_elems(d, d, MLSYS__COLL_AT(in[q], r * C + c), E, dtype, redop);
        }
      break;
    default:
      for (r = 0; r < N; r++)
        for (c = 0; c < N * C; c++) {
          void *d = MLSYS__COLL_AT(out[r], c);
          memcpy(d, MLSYS__COLL_AT(in[0], c), bytes);
          for (q = 1; q < N; q++) mlsys__coll_reduce_elems(d, d, MLSYS__COLL_AT(in[q], c), E, dtype, redop);
        }
      break;
  }
#undef MLSYS__COLL_AT
  return MLSYS_OK;
}

/* ---- lowering (§3.10) ---- */

/* Chunk-level slot of chunk c in rank r's input / output buffer (NCCL out-of-place layouts), -1 if none. */
static int mlsys__coll_in_slot(const mlsys_coll_def *d, int r, int c) {
  int N = d->nranks, C = d->chunkup;
  switch (d->kind) {
    case MLSYS_COLL_ALLGATHER: return c / C == r ? c % C : -1;
    case MLSYS_COLL_ALLTOALL: return c / C / N == r ? ((c / C) % N) * C + c % C : -1;
    default: return c;
  }
}
static int mlsys__coll_out_slot(const mlsys_coll_def *d, int r, int c) {
  int N = d->nranks, C = d->chunkup;
  switch (d->kind) {
    case MLSYS_COLL_ALLGATHER: return c;
    case MLSYS_COLL_ALLTOALL: return (c / C) % N == r ? (c / C / N) * C + c % C : -1;
    case MLSYS_COLL_REDUCESCATTER: return c / C == r ? c % C : -1;
    default: return c;
  }
}
/* Chunk-level input and output slots per rank. */
/* In place in msccl-tools' sense: the program declares inplace and not outofplace. */
static int mlsys__coll_prog_inplace(const mlsys_coll_prog *p) { return p->inplace && !p->outofplace; }

MLSYS_DEF int mlsys_coll_prog_chunkup(const mlsys_coll_prog *p) {
  int N, n, k;
  if (!p || !p->gpus || p->ngpus < 1 || p->instances < 1) return 0;
  N = p->ngpus; n = p->instances;
  if (p->kind == MLSYS_COLL_ALLGATHER)
    k = mlsys__coll_prog_inplace(p) ? (p->gpus[0].o_chunks % (N * n) ? 0 : p->gpus[0].o_chunks / (N * n))
                                    : (p->gpus[0].i_chunks % n ? 0 : p->gpus[0].i_chunks / n);
  else
    k = p->gpus[0].i_chunks % (N * n) ? 0 : p->gpus[0].i_chunks / (N * n);
  return k;
}

static void mlsys__coll_buf_sizes(int kind, int N, int C, int *ni, int *no) {
  switch (kind) {
    case MLSYS_COLL_ALLGATHER: *ni = C; *no = N * C; break;
    case MLSYS_COLL_REDUCESCATTER: *ni = N * C; *no = C; break;
    default: *ni = N * C; *no = N * C; break;
  }
}

/* The slot counts a program's own buffers must have (per instance): in place (msccl-tools' layout) an allgather's
   input is its own slice of the output buffer, and the others' output is the input buffer (a reduce-scatter's, its
   own slice of it), so the aliased buffer has no slots of its own. */
static void mlsys__coll_prog_buf_sizes(int kind, int N, int C, int inplace, int *ni, int *no) {
  mlsys__coll_buf_sizes(kind, N, C, ni, no);
  if (!inplace) return;
  if (kind == MLSYS_COLL_ALLGATHER) *ni = 0;
  else *no = 0;
}

typedef struct { int buf, off; } mlsys__coll_loc;   /* buf -1: the rank does not hold the data */

/* A rank-level operation before threadblocks exist (chunk-level slots). */
typedef struct {
  unsigned char type, srcbuf, dstbuf, dead, rrs_ok;
  int srcoff, dstoff, cnt, send_peer, recv_peer;
  int fuse_with;   /* recv: index of the send that forwards exactly what it wrote, next to touch it; else -1 */
  int pat;         /* threadblock pattern */
} mlsys__coll_rop;
typedef struct { mlsys__coll_rop *v; int n, cap; } mlsys__coll_rops;
typedef struct { int *v; int n, cap; } mlsys__coll_ivec;

static int mlsys__coll_rops_push(mlsys__coll_rops *L, const mlsys__coll_rop *o) {
  if (L->n == L->cap) {
    int nc = L->cap ? 2 * L->cap : 16;
    mlsys__coll_rop *nv = (mlsys__coll_rop *)mlsys_realloc_array(L->v, (size_t)nc, sizeof *nv);
    if (!nv) return -1;
    L->v = nv; L->cap = nc;
  }
  L->v[L->n++] = *o;
  return 0;
}
static int mlsys__coll_ivec_push(mlsys__coll_ivec *L, int x) {
  if (L->n == L->cap) {
    int nc = L->cap ? 2 * L->cap : 64;
    int *nv = (int *)mlsys_realloc_array(L->v, (size_t)nc, sizeof *nv);
    if (!nv) return -1;
    L->v = nv; L->cap = nc;
  }
  L->v[L->n++] = x;
  return 0;
}

/* Units: consecutive transfers in link order with the same merge group id ≥ 0 (and op) are one send (§3.7). The
   units are put in an execution order: a topological order of (data dependencies ∪ link order), earliest first
   transfer first. Data dependency of transfer x (chunk c from rank a): every earlier transfer that delivered c
   to a (for combining collectives: every earlier reduce into a, so a forwards its complete partial). Output:
   members (transfer ids, unit by unit in execution order, link order inside a unit) and ustart[nunits+1].
   *cyclic = 1 when some merged group cannot run as one send (a later member depends on an earlier one through
   another rank); the caller then lowers without merging. */
static mlsys_status mlsys__coll_lower_units(const mlsys_coll_algo *a, int merge, int *members, int *ustart, int *nunits,
                                            int *cyclic) {
  int nx = a->nxfer, i, j, nu = 0, ne = 0, nh = 0, nout = 0;
  mlsys_status st = MLSYS_OK;
  mlsys__coll_key3 *lk = (mlsys__coll_key3 *)mlsys_alloc((size_t)nx + 1, sizeof *lk);
  mlsys__coll_key3 *dl = (mlsys__coll_key3 *)mlsys_alloc((size_t)nx + 1, sizeof *dl);
  int *lunit = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));     /* link-sorted unit id of lk[j] */
  int *ls = (int *)mlsys_alloc((size_t)nx + 2, sizeof(int));        /* link-sorted unit → start in lk */
  int *perm = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));      /* new id → link-sorted id */
  int *newid = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));
  int *unit_of = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));   /* transfer → new unit id */
  int *eoff = (int *)mlsys_calloc((size_t)nx + 2, sizeof(int));
  int *indeg = (int *)mlsys_calloc((size_t)nx + 1, sizeof(int));
  int *heap = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));
  int *adj = NULL, *fill = NULL;
  *cyclic = 0;
  if (!lk || !dl || !lunit || !ls || !perm || !newid || !unit_of || !eoff || !indeg || !heap) { st = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < nx; i++) {
    lk[i].a = a->x[i].src; lk[i].b = a->x[i].dst; lk[i].i = i;
    dl[i].a = a->x[i].dst; dl[i].b = a->x[i].chunk; dl[i].i = i;
  }
  qsort(lk, (size_t)nx, sizeof *lk, mlsys__coll_key3_cmp);
  qsort(dl, (size_t)nx, sizeof *dl, mlsys__coll_key3_cmp);
  for (j = 0; j < nx; j++) {
    const mlsys_coll_xfer *x = &a->x[lk[j].i], *p = j ? &a->x[lk[j - 1].i] : NULL;
    int same = p && lk[j - 1].a == lk[j].a && lk[j - 1].b == lk[j].b && merge && x->group >= 0 && x->group == p->group &&
               x->op == p->op;
    if (!same) ls[nu++] = j;
    lunit[j] = nu - 1;
  }
  ls[nu] = nx;
  /* number the units by their first transfer (the first member in link order is the earliest in the array) */
  {
    mlsys__coll_key3 *k = (mlsys__coll_key3 *)mlsys_alloc((size_t)nu + 1, sizeof *k);
    if (!k) { st = MLSYS_ERR_NOMEM; goto done; }
    for (i = 0; i < nu; i++) { k[i].a = lk[ls[i]].i; k[i].b = 0; k[i].i = i; }
    qsort(k, (size_t)nu, sizeof *k, mlsys__coll_key3_cmp);
    for (i = 0; i < nu; i++) { perm[i] = k[i].i; newid[k[i].i] = i; }
    mlsys_free(k);
  }
  for (j = 0; j < nx; j++) unit_of[lk[j].i] = newid[lunit[j]];
  /* edges unit(y) → unit(x): two passes (count, fill) */
  for (int pass = 0; pass < 2; pass++) {
    for (j = 0; j < nx; j++) {
      int xi = lk[j].i, ux = unit_of[xi], lo = 0, hi = nx;
      const mlsys_coll_xfer *x = &a->x[xi];
      if (j > 0 && lk[j - 1].a == lk[j].a && lk[j - 1].b == lk[j].b && unit_of[lk[j - 1].i] != ux) {
        int uy = unit_of[lk[j - 1].i];
        if (pass == 0) eoff[uy + 1]++; else { adj[fill[uy]++] = ux; indeg[ux]++; }
      }
      while (lo < hi) {   /* first delivery of (x->src, x->chunk) */
        int mid = (lo + hi) / 2;
        if (dl[mid].a < x->src || (dl[mid].a == x->src && dl[mid].b < x->chunk)) lo = mid + 1; else hi = mid;
      }
      for (; lo < nx && dl[lo].a == x->src && dl[lo].b == x->chunk && dl[lo].i < xi; lo++) {
        int uy = unit_of[dl[lo].i];
        if (uy == ux) continue;
        if (pass == 0) eoff[uy + 1]++; else { adj[fill[uy]++] = ux; indeg[ux]++; }
      }
    }
    if (pass == 0) {
      for (i = 0; i < nu; i++) eoff[i + 1] += eoff[i];
      ne = eoff[nu];
      adj = (int *)mlsys_alloc((size_t)ne + 1, sizeof(int));
      fill = (int *)mlsys_alloc((size_t)nu + 1, sizeof(int));
      if (!adj || !fill) { st = MLSYS_ERR_NOMEM; goto done; }
      for (i = 0; i < nu; i++) fill[i] = eoff[i];
    }
  }
  /* Kahn's algorithm with a min-heap on unit ids (= order of first transfers) */
  for (i = 0; i < nu; i++)
    if (!indeg[i]) {
      int c = nh++;
      heap[c] = i;
      while (c > 0 && heap[(c - 1) / 2] > heap[c]) { int t = heap[c]; heap[c] = heap[(c - 1) / 2]; heap[(c - 1) / 2] = t; c = (c - 1) / 2; }
    }
  ustart[0] = 0;
  while (nh > 0) {
    int u = heap[0], c = 0, e, m;
    heap[0] = heap[--nh];
    for (;;) {
      int l = 2 * c + 1, r = l + 1, s = c;
      if (l < nh && heap[l] < heap[s]) s = l;
      if (r < nh && heap[r] < heap[s]) s = r;
      if (s == c) break;
      { int t = heap[c]; heap[c] = heap[s]; heap[s] = t; }
      c = s;
    }
    for (m = ls[perm[u]]; m < ls[perm[u] + 1]; m++) members[ustart[nout] + (m - ls[perm[u]])] = lk[m].i;
    ustart[nout + 1] = ustart[nout] + (ls[perm[u] + 1] - ls[perm[u]]);
    nout++;
    for (e = eoff[u]; e < eoff[u + 1]; e++)
      if (--indeg[adj[e]] == 0) {
        int v = adj[e];
        c = nh++;
        heap[c] = v;
        while (c > 0 && heap[(c - 1) / 2] > heap[c]) { int t = heap[c]; heap[c] = heap[(c - 1) / 2]; heap[(c - 1) / 2] = t; c = (c - 1) / 2; }
      }
  }
  if (nout < nu) *cyclic = 1;
  *nunits = nout;
done:
  mlsys_free(lk); mlsys_free(dl); mlsys_free(lunit); mlsys_free(ls); mlsys_free(perm); mlsys_free(newid);
  mlsys_free(unit_of); mlsys_free(eoff); mlsys_free(indeg); mlsys_free(heap); mlsys_free(adj); mlsys_free(fill);
  if (st) return mlsys_set_error(st, "lower: out of memory");
  return MLSYS_OK;
}

typedef struct {
  const mlsys_coll_def *d;
  int N, C, nch, n, ni, no;
  mlsys__coll_loc *cur;     /* [r*nch + c] where rank r holds (its current value of) chunk c */
  int *scr;                 /* [r*nch + c] scratch slot of (r, c) or -1 */
  int *nscr;                /* [r] scratch slots used */
  mlsys__coll_rops *ops;    /* [r] rank operations in execution order */
} mlsys__coll_lw;

/* Where rank r keeps chunk c when it receives it (or accumulates partial sums of it): its output slot if c is in
   r's output, else a scratch slot. */
static mlsys__coll_loc mlsys__coll_dest(mlsys__coll_lw *w, int r, int c) {
  mlsys__coll_loc L;
  int o = mlsys__coll_out_slot(w->d, r, c);
  size_t k = (size_t)r * w->nch + c;
  if (o >= 0) { L.buf = MLSYS_COLL_BUF_OUT; L.off = o; return L; }
  if (w->scr[k] < 0) w->scr[k] = w->nscr[r]++;
  L.buf = MLSYS_COLL_BUF_SCRATCH; L.off = w->scr[k];
  return L;
}

/* Rank r's operations → threadblocks, steps and dependencies of gpu gp (instances n). */
static mlsys_status mlsys__coll_lower_rank(mlsys__coll_lw *w, int r, mlsys_coll_gpu *gp) {
  mlsys__coll_rops *L = &w->ops[r];
  int m = L->n, n = w->n, N = w->N, j, i, k, t, p;
  int nb[3], sub[3];
  mlsys_status st = MLSYS_ERR_NOMEM;
  int *nxt[3] = {NULL, NULL, NULL}, *after = NULL, *pairs = NULL, *recv_pair = NULL, *send_pair = NULL;
  int *recv_pat = NULL, *send_pat = NULL, *ord = NULL, *where = NULL;
  int npairs = 0, npat = 0, has_local = 0, ntbs, nrec = 0;
  mlsys__coll_key3 *pats = NULL;
  /* step records */
  typedef struct { int tb, dep0, ndep, pos; unsigned char type, srcbuf, dstbuf, hasdep; int srcoff, dstoff, cnt; } rec_t;
  rec_t *rec = NULL;
  int nrec_cap = 0;
  mlsys__coll_ivec deps = {NULL, 0, 0};     /* (tb, real index) pairs */
  mlsys__coll_ivec pool = {NULL, 0, 0};     /* readers: (tb, idx, next) triples */
  int *lw[3] = {NULL, NULL, NULL}, *rh[3] = {NULL, NULL, NULL};   /* last writer (tb<<?): two ints per sub-slot; reader head */
  int *tcount = NULL, *tstart = NULL, *trec = NULL, *tfill = NULL;

  nb[0] = w->ni; nb[1] = w->no; nb[2] = w->nscr[r];
  for (k = 0; k < 3; k++) {
    nxt[k] = (int *)mlsys_alloc((size_t)nb[k] + 1, sizeof(int));
    if (!nxt[k]) goto done;
    for (j = 0; j < nb[k]; j++) nxt[k][j] = m;
  }
  after = (int *)mlsys_alloc((size_t)m + 1, sizeof(int));
  pairs = (int *)mlsys_alloc(2 * (size_t)m + 2, sizeof(int));
  recv_pair = (int *)mlsys_alloc((size_t)N, sizeof(int));
  send_pair = (int *)mlsys_alloc((size_t)N, sizeof(int));
  recv_pat = (int *)mlsys_alloc((size_t)N, sizeof(int));
  send_pat = (int *)mlsys_alloc((size_t)N, sizeof(int));
  if (!after || !pairs || !recv_pair || !send_pair || !recv_pat || !send_pat) goto done;
  for (p = 0; p < N; p++) recv_pair[p] = send_pair[p] = recv_pat[p] = send_pat[p] = -1;

  /* 1. next access of every slot (backward pass): a recv may fuse with the send that next touches its data,
        if that send forwards exactly what it wrote (rcs / rrs / rrcs, §3.10 instruction generation) */
  for (j = m - 1; j >= 0; j--) {
    mlsys__coll_rop *o = &L->v[j];
    int rd = o->type == MLSYS_COLL_OP_SEND || o->type == MLSYS_COLL_OP_RRC || o->type == MLSYS_COLL_OP_COPY;
    int wr = o->type != MLSYS_COLL_OP_SEND;
    o->fuse_with = -1; o->rrs_ok = 0;
    /* after[j] = 1: what send j reads is dead afterwards (never accessed again and only scratch, or next
       overwritten by an operation that does not read it), so a fused reduce need not store it (rrs) */
    after[j] = 0;
    if (o->type == MLSYS_COLL_OP_SEND) {
      after[j] = 1;
      for (k = 0; k < o->cnt; k++) {
        int sl = o->srcoff + k, x2 = nxt[o->srcbuf][sl];
        const mlsys__coll_rop *X = x2 < m ? &L->v[x2] : NULL;
        int xr = X && X->type != MLSYS_COLL_OP_RECV && X->srcbuf == o->srcbuf && sl >= X->srcoff && sl < X->srcoff + X->cnt;
        int xw = X && X->type != MLSYS_COLL_OP_SEND && X->dstbuf == o->srcbuf && sl >= X->dstoff && sl < X->dstoff + X->cnt;
        if (X ? (xr || !xw) : o->srcbuf != MLSYS_COLL_BUF_SCRATCH) after[j] = 0;
      }
    }
    if (o->type == MLSYS_COLL_OP_RECV || o->type == MLSYS_COLL_OP_RRC) {
      int s = m;
      for (k = 0; k < o->cnt; k++) if (nxt[o->dstbuf][o->dstoff + k] < s) s = nxt[o->dstbuf][o->dstoff + k];
      if (s < m && L->v[s].type == MLSYS_COLL_OP_SEND && L->v[s].srcbuf == o->dstbuf && L->v[s].srcoff == o->dstoff &&
          L->v[s].cnt == o->cnt) {
        o->fuse_with = s;
        /* rrs (no local copy of the partial) only when nothing reads it afterwards and it is not output */
        o->rrs_ok = (unsigned char)after[s];
        pairs[2 * npairs] = o->recv_peer; pairs[2 * npairs + 1] = L->v[s].send_peer; npairs++;
      }
    }
    if (rd) for (k = 0; k < o->cnt; k++) nxt[o->srcbuf][o->srcoff + k] = j;
    if (wr) for (k = 0; k < o->cnt; k++) nxt[o->dstbuf][o->dstoff + k] = j;
  }
  /* 2. pair a recv connection with a send connection into one threadblock where recv→send forwarding is most
        frequent (greedy matching on the counts) */
  if (npairs) {
    mlsys__coll_key3 *pc = (mlsys__coll_key3 *)mlsys_alloc((size_t)npairs, sizeof *pc);
    int nd = 0;
    if (!pc) goto done;
    for (i = 0; i < npairs; i++) { pc[i].a = pairs[2 * i]; pc[i].b = pairs[2 * i + 1]; pc[i].i = 0; }
    qsort(pc, (size_t)npairs, sizeof *pc, mlsys__coll_key3_cmp);
    for (i = 0; i < npairs; i++) {
      if (nd && pc[nd - 1].a == pc[i].a && pc[nd - 1].b == pc[i].b) pc[nd - 1].i--;
      else { pc[nd] = pc[i]; pc[nd].i = -1; nd++; }
    }
    for (i = 0; i < nd; i++) { int t2 = pc[i].i; pc[i].i = pc[i].a; pc[i].a = t2; }   /* key (−count, p, q) */
    qsort(pc, (size_t)nd, sizeof *pc, mlsys__coll_key3_cmp);
    for (i = 0; i < nd; i++) {
      int rp = pc[i].i, sq = pc[i].b;
      if (recv_pair[rp] < 0 && send_pair[sq] < 0) { recv_pair[rp] = sq; send_pair[sq] = rp; }
    }
    mlsys_free(pc);
  }
  /* 3. threadblock patterns (send peer, recv peer), sorted like ncclize (send, recv); the local-copy block last */
  pats = (mlsys__coll_key3 *)mlsys_alloc(2 * (size_t)N + 1, sizeof *pats);
  if (!pats) goto done;
  for (j = 0; j < m; j++) {
    mlsys__coll_rop *o = &L->v[j];
    if (o->type == MLSYS_COLL_OP_COPY) has_local = 1;
    else if (o->type == MLSYS_COLL_OP_SEND) { if (send_pat[o->send_peer] == -1) send_pat[o->send_peer] = -2; }
    else if (recv_pat[o->recv_peer] == -1) recv_pat[o->recv_peer] = -2;
  }
  /* the remaining connections share threadblocks too, as ncclize does (MSCCL allows ≤ 32 threadblocks per
     channel): first a send and a recv with the same peer, then any. A block runs its steps in the rank's
     execution order, which stays deadlock-free (every recv follows its matching send in that order). */
  for (p = 0; p < N; p++)
    if (recv_pat[p] == -2 && recv_pair[p] < 0 && send_pat[p] == -2 && send_pair[p] < 0) { recv_pair[p] = p; send_pair[p] = p; }
  for (p = 0, k = 0; p < N; p++) {
    if (recv_pat[p] != -2 || recv_pair[p] >= 0) continue;
    while (k < N && (send_pat[k] != -2 || send_pair[k] >= 0)) k++;
    if (k == N) break;
    recv_pair[p] = k; send_pair[k] = p;
  }
  for (p = 0; p < N; p++)
    if (recv_pat[p] == -2) { pats[npat].a = recv_pair[p]; pats[npat].b = p; pats[npat].i = 0; npat++; }
  for (p = 0; p < N; p++)
    if (send_pat[p] == -2 && send_pair[p] < 0) { pats[npat].a = p; pats[npat].b = -1; pats[npat].i = 0; npat++; }
  qsort(pats, (size_t)npat, sizeof *pats, mlsys__coll_key3_cmp);
  for (i = 0; i < npat; i++) {
    if (pats[i].b >= 0) recv_pat[pats[i].b] = i;
    if (pats[i].a >= 0) send_pat[pats[i].a] = i;
  }
  for (j = 0; j < m; j++) {
    mlsys__coll_rop *o = &L->v[j];
    o->dead = 0;
    o->pat = o->type == MLSYS_COLL_OP_COPY ? npat : o->type == MLSYS_COLL_OP_SEND ? send_pat[o->send_peer] : recv_pat[o->recv_peer];
  }
  /* 4. fusion (§3.10 "fuse recv-then-send of the same data into rcs / rrs, rrcs"). A recv R whose data is next
        touched by a send S of the same threadblock is fused with it once they are adjacent in the block. To get
        them adjacent, R sinks later and S rises earlier in the rank's order. Neither passes an operation that
        touches R's slots (S is the first access after R), R never passes a recv of its connection and S never a
        send of its connection, so no data dependency or connection order changes, sends only move earlier and
        recvs only later (a recv still follows its matching send: the order stays deadlock-free). */
  ord = (int *)mlsys_alloc((size_t)m + 1, sizeof(int));
  where = (int *)mlsys_alloc((size_t)m + 1, sizeof(int));
  if (!ord || !where) goto done;
  for (j = 0; j < m; j++) { ord[j] = j; where[j] = j; }
#define MLSYS__COLL_MOVE(FROM_, TO_)                                                             \
  do {                                                                                           \
    int f_ = (FROM_), t_ = (TO_), x_ = ord[f_], q_;                                              \
    if (f_ < t_) for (q_ = f_; q_ < t_; q_++) { ord[q_] = ord[q_ + 1]; where[ord[q_]] = q_; }    \
    else for (q_ = f_; q_ > t_; q_--) { ord[q_] = ord[q_ - 1]; where[ord[q_]] = q_; }            \
    ord[t_] = x_; where[x_] = t_;                                                                \
  } while (0)
  for (j = m - 1; j >= 0; j--) {   /* sink */
    mlsys__coll_rop *R = &L->v[j];
    int pos, stop;
    if (R->fuse_with < 0 || L->v[R->fuse_with].pat != R->pat) continue;
    pos = where[j];
    for (stop = pos + 1; stop < m; stop++) {
      const mlsys__coll_rop *o = &L->v[ord[stop]];
      if (ord[stop] == R->fuse_with || (o->pat == R->pat && o->type != MLSYS_COLL_OP_SEND)) break;
    }
    if (stop - 1 > pos) MLSYS__COLL_MOVE(pos, stop - 1);
  }
  for (j = 0; j < m; j++) {        /* raise and fuse */
    mlsys__coll_rop *R = &L->v[j], *S;
    int pos, spos, k2, ok = 1;
    if (R->fuse_with < 0 || L->v[R->fuse_with].pat != R->pat || R->dead) continue;
    if (R->type != MLSYS_COLL_OP_RECV && R->type != MLSYS_COLL_OP_RRC) continue;
    S = &L->v[R->fuse_with];
    pos = where[j]; spos = where[R->fuse_with];
    if (spos < pos || S->dead) continue;
    for (k2 = pos + 1; k2 < spos && ok; k2++) {
      const mlsys__coll_rop *o = &L->v[ord[k2]];
      if (o->pat == R->pat && o->type != MLSYS_COLL_OP_RECV && o->type != MLSYS_COLL_OP_RRC) ok = 0;
    }
    if (!ok) continue;
    if (spos > pos + 1) MLSYS__COLL_MOVE(spos, pos + 1);
    if (R->type == MLSYS_COLL_OP_RECV) { R->type = MLSYS_COLL_OP_RCS; R->srcbuf = R->dstbuf; R->srcoff = R->dstoff; }
    else R->type = R->rrs_ok ? MLSYS_COLL_OP_RRS : MLSYS_COLL_OP_RRCS;
    R->send_peer = S->send_peer;
    S->dead = 1;
  }
#undef MLSYS__COLL_MOVE
  /* 5. instances: tb id of (pattern pi, instance i) = pi·n + i on channel i; the copy block last */
  ntbs = npat * n + has_local;
  gp->id = r;
  gp->i_chunks = w->ni * n; gp->o_chunks = w->no * n; gp->s_chunks = w->nscr[r] * n;
  gp->ntbs = 0;
  gp->tbs = (mlsys_coll_tb *)mlsys_calloc((size_t)ntbs + 1, sizeof *gp->tbs);
  if (!gp->tbs) goto done;
  gp->ntbs = ntbs;
  for (i = 0; i < npat; i++)
    for (k = 0; k < n; k++) {
      mlsys_coll_tb *tb = &gp->tbs[i * n + k];
      tb->id = i * n + k; tb->send = pats[i].a; tb->recv = pats[i].b; tb->chan = k;
    }
  if (has_local) { mlsys_coll_tb *tb = &gp->tbs[npat * n]; tb->id = npat * n; tb->send = tb->recv = -1; tb->chan = 0; }
  /* 6. steps and dependencies, tracked per sub-slot: RAW on the last writer, WAW on it, WAR on the readers since
        (§3.10 dependency insertion); dependencies on steps of the same threadblock are implicit */
  for (k = 0; k < 3; k++) {
    size_t ns = (size_t)nb[k] * n + 1;
    sub[k] = nb[k] * n;
    lw[k] = (int *)mlsys_alloc(2 * ns, sizeof(int));
    rh[k] = (int *)mlsys_alloc(ns, sizeof(int));
    if (!lw[k] || !rh[k]) goto done;
    for (j = 0; j < sub[k]; j++) { lw[k][2 * j] = -1; rh[k][j] = -1; }
  }
  tcount = (int *)mlsys_calloc((size_t)ntbs + 1, sizeof(int));
  if (!tcount) goto done;
  for (j = 0; j < m; j++) {
    mlsys__coll_rop *o = &L->v[ord[j]];
    int loc = o->type == MLSYS_COLL_OP_COPY, ninst = loc ? 1 : n;
    if (o->dead) continue;
    for (i = 0; i < ninst; i++) {
      int tbid = loc ? npat * n : o->pat * n + i;
      int so = loc ? o->srcoff * n : o->srcoff * n + i * o->cnt, dof = loc ? o->dstoff * n : o->dstoff * n + i * o->cnt;
      int cnt = loc ? o->cnt * n : o->cnt;
      int reads = mlsys__coll_op_reads_src(o->type), writes = mlsys__coll_op_writes_dst(o->type);
      int myidx = tcount[tbid], d0 = deps.n / 2, nd;
      rec_t *R;
      /* collect (tb, idx) dependencies into deps */
#define MLSYS__COLL_ADDDEP(T_, I_)                                                      \
      do {                                                                            \
        int t_ = (T_), i_ = (I_), q_;                                                 \
        if (t_ != tbid) {                                                             \
          for (q_ = d0; q_ < deps.n / 2; q_++)                                        \
            if (deps.v[2 * q_] == t_) { if (deps.v[2 * q_ + 1] < i_) deps.v[2 * q_ + 1] = i_; break; } \
          if (q_ == deps.n / 2 && (mlsys__coll_ivec_push(&deps, t_) || mlsys__coll_ivec_push(&deps, i_))) goto done; \
        }                                                                             \
      } while (0)
      if (reads)
        for (k = 0; k < cnt; k++) {
          int *W = &lw[o->srcbuf][2 * (so + k)];
          if (W[0] >= 0) MLSYS__COLL_ADDDEP(W[0], W[1]);
        }
      if (writes)
        for (k = 0; k < cnt; k++) {
          int *W = &lw[o->dstbuf][2 * (dof + k)], h;
          if (W[0] >= 0) MLSYS__COLL_ADDDEP(W[0], W[1]);
          for (h = rh[o->dstbuf][dof + k]; h >= 0; h = pool.v[3 * h + 2]) MLSYS__COLL_ADDDEP(pool.v[3 * h], pool.v[3 * h + 1]);
        }
#undef MLSYS__COLL_ADDDEP
      if (reads)
        for (k = 0; k < cnt; k++) {
          int *h = &rh[o->srcbuf][so + k], id = pool.n / 3;
          if (mlsys__coll_ivec_push(&pool, tbid) || mlsys__coll_ivec_push(&pool, myidx) || mlsys__coll_ivec_push(&pool, *h)) goto done;
          *h = id;
        }
      if (writes)
        for (k = 0; k < cnt; k++) {
          lw[o->dstbuf][2 * (dof + k)] = tbid; lw[o->dstbuf][2 * (dof + k) + 1] = myidx;
          rh[o->dstbuf][dof + k] = -1;
        }
      nd = deps.n / 2 - d0;
      if (nrec == nrec_cap) {
        int nc = nrec_cap ? 2 * nrec_cap : 64;
        rec_t *nr = (rec_t *)mlsys_realloc_array(rec, (size_t)nc, sizeof *nr);
        if (!nr) goto done;
        rec = nr; nrec_cap = nc;
      }
      R = &rec[nrec++];
      R->tb = tbid; R->dep0 = d0; R->ndep = nd; R->pos = 0; R->hasdep = 0;
      R->type = o->type; R->srcbuf = o->srcbuf; R->dstbuf = o->dstbuf; R->srcoff = so; R->dstoff = dof; R->cnt = cnt;
      tcount[tbid]++;
    }
  }
  /* 7. assemble: records per threadblock in order; k dependencies → k−1 nop steps in front (ncclize) */
  tstart = (int *)mlsys_calloc((size_t)ntbs + 2, sizeof(int));
  tfill = (int *)mlsys_alloc((size_t)ntbs + 1, sizeof(int));
  trec = (int *)mlsys_alloc((size_t)nrec + 1, sizeof(int));
  if (!tstart || !tfill || !trec) goto done;
  for (t = 0; t < ntbs; t++) tstart[t + 1] = tstart[t] + tcount[t];
  for (t = 0; t < ntbs; t++) tfill[t] = tstart[t];
  for (j = 0; j < nrec; j++) trec[tfill[rec[j].tb]++] = j;
  for (t = 0; t < ntbs; t++) {
    int pos = 0;
    for (j = tstart[t]; j < tstart[t + 1]; j++) {
      rec_t *R = &rec[trec[j]];
      pos += R->ndep > 1 ? R->ndep - 1 : 0;
      R->pos = pos++;
    }
    gp->tbs[t].nsteps = pos;
  }
  for (j = 0; j < nrec; j++)
    for (k = 0; k < rec[j].ndep; k++) {
      int dt = deps.v[2 * (rec[j].dep0 + k)], di = deps.v[2 * (rec[j].dep0 + k) + 1];
      rec[trec[tstart[dt] + di]].hasdep = 1;
    }
  for (t = 0; t < ntbs; t++) {
    mlsys_coll_tb *tb = &gp->tbs[t];
    int pos = 0;
    tb->steps = (mlsys_coll_step *)mlsys_calloc((size_t)tb->nsteps + 1, sizeof *tb->steps);
    if (!tb->steps) { tb->nsteps = 0; goto done; }
    for (j = tstart[t]; j < tstart[t + 1]; j++) {
      rec_t *R = &rec[trec[j]];
      mlsys_coll_step *s;
      for (k = 0; k < R->ndep; k++) {
        int dt = deps.v[2 * (R->dep0 + k)], di = deps.v[2 * (R->dep0 + k) + 1];
        s = &tb->steps[pos];
        if (k < R->ndep - 1) {   /* a nop carrying an extra dependency (offsets −1, cnt 0 as in the authors' files) */
          s->op = MLSYS_COLL_OP_NOP; s->srcbuf = MLSYS_COLL_BUF_IN; s->dstbuf = MLSYS_COLL_BUF_OUT;
          s->srcoff = -1; s->dstoff = -1; s->cnt = 0; s->hasdep = 0;
          pos++;
        }
        s->depid = dt; s->deps = rec[trec[tstart[dt] + di]].pos;   /* the last one lands on the step itself */
      }
      s = &tb->steps[pos++];
      s->op = R->type; s->srcbuf = R->srcbuf; s->dstbuf = R->dstbuf; s->srcoff = R->srcoff; s->dstoff = R->dstoff;
      s->cnt = R->cnt; s->hasdep = R->hasdep;
      if (R->ndep == 0) { s->depid = -1; s->deps = -1; }
    }
  }
  st = MLSYS_OK;
done:
  for (k = 0; k < 3; k++) { mlsys_free(nxt[k]); mlsys_free(lw[k]); mlsys_free(rh[k]); }
  mlsys_free(after); mlsys_free(pairs); mlsys_free(recv_pair); mlsys_free(send_pair); mlsys_free(recv_pat);
  mlsys_free(send_pat); mlsys_free(ord); mlsys_free(where); mlsys_free(pats); mlsys_free(rec); mlsys_free(deps.v); mlsys_free(pool.v);
  mlsys_free(tcount); mlsys_free(tstart); mlsys_free(trec); mlsys_free(tfill);
  if (st) return mlsys_set_error(st, "lower: out of memory");
  return MLSYS_OK;
}

typedef struct { int srcbuf, srcoff, dstoff; } mlsys__coll_cpy;
static int mlsys__coll_cpy_cmp(const void *p, const void *q) {
  const mlsys__coll_cpy *x = (const mlsys__coll_cpy *)p, *y = (const mlsys__coll_cpy *)q;
  if (x->srcbuf != y->srcbuf) return x->srcbuf < y->srcbuf ? -1 : 1;
  if (x->srcoff != y->srcoff) return x->srcoff < y->srcoff ? -1 : 1;
  return x->dstoff < y->dstoff ? -1 : x->dstoff > y->dstoff;
}

MLSYS_DEF mlsys_status mlsys_coll_lower(const mlsys_coll_def *d, const mlsys_coll_algo *a, int instances,
                                        mlsys_coll_prog *out) {
  mlsys__coll_lw w;
  int N, nch, nx, i, j, r, c, merge, nunits = 0, cyclic = 0, maxu = 1;
  int *members = NULL, *ustart = NULL;
  unsigned char *recvd = NULL;
  mlsys__coll_loc *S = NULL, *D = NULL, *Rr = NULL;
  mlsys__coll_cpy *cp = NULL;
  mlsys_status st = MLSYS_OK;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "lower: NULL output");
  memset(out, 0, sizeof *out);
  memset(&w, 0, sizeof w);
  if (!d || !a) return mlsys_set_error(MLSYS_ERR_ARG, "lower: NULL collective or algorithm");
  if (d->kind != a->kind || d->nranks != a->nranks || d->chunkup != a->chunkup || d->nchunks != a->nchunks)
    return mlsys_set_error(MLSYS_ERR_ARG, "lower: algorithm (%s, %d ranks, chunkup %d) does not match the collective (%s, %d ranks, chunkup %d)",
                           mlsys_coll_kind_name(a->kind), a->nranks, a->chunkup, mlsys_coll_kind_name(d->kind), d->nranks, d->chunkup);
  if (d->kind < 0 || d->kind > 3 || d->nranks < 1 || d->nranks > MLSYS__COLL_MAX_GPUS || d->chunkup < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "lower: bad collective definition");
  if (instances < 1 || instances > MLSYS__COLL_MAX_INSTANCES)
    return mlsys_set_error(MLSYS_ERR_ARG, "lower: instances %d out of range [1, %d]", instances, MLSYS__COLL_MAX_INSTANCES);
  N = d->nranks; nch = d->nchunks; nx = a->nxfer;
  if ((long long)N * nch > (1LL << 26) || (long long)nch * instances > MLSYS__COLL_MAX_CHUNKS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "lower: %d ranks × %d chunks × %d instances is too large", N, nch, instances);
  if (nx < 0 || (nx > 0 && !a->x)) return mlsys_set_error(MLSYS_ERR_ARG, "lower: algorithm has no transfer array");
  for (i = 0; i < nx; i++) {
    const mlsys_coll_xfer *x = &a->x[i];
    if (x->chunk < 0 || x->chunk >= nch || x->src < 0 || x->src >= N || x->dst < 0 || x->dst >= N || x->src == x->dst)
      return mlsys_set_error(MLSYS_ERR_ARG, "lower: transfer %d (chunk %d, %d → %d) out of range", i, x->chunk, x->src, x->dst);
    if (x->op != MLSYS_COLL_XF_COPY && x->op != MLSYS_COLL_XF_REDUCE)
      return mlsys_set_error(MLSYS_ERR_ARG, "lower: transfer %d has unknown op %d", i, x->op);
    if (x->op == MLSYS_COLL_XF_REDUCE && !d->combining)
      return mlsys_set_error(MLSYS_ERR_ARG, "lower: transfer %d reduces in a non-combining collective (%s)", i, mlsys_coll_kind_name(d->kind));
  }
  members = (int *)mlsys_alloc((size_t)nx + 1, sizeof(int));
  ustart = (int *)mlsys_alloc((size_t)nx + 2, sizeof(int));
  if (!members || !ustart) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (merge = 1; merge >= 0; merge--) {
    if ((st = mlsys__coll_lower_units(a, merge, members, ustart, &nunits, &cyclic))) goto fail;
    if (!cyclic) break;
  }
  if (cyclic) { st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "lower: transfers have cyclic dependencies"); goto fail; }
  for (i = 0; i < nunits; i++) if (ustart[i + 1] - ustart[i] > maxu) maxu = ustart[i + 1] - ustart[i];

  w.d = d; w.N = N; w.C = d->chunkup; w.nch = nch; w.n = instances;
  mlsys__coll_buf_sizes(d->kind, N, d->chunkup, &w.ni, &w.no);
  w.cur = (mlsys__coll_loc *)mlsys_alloc((size_t)N * nch, sizeof *w.cur);
  w.scr = (int *)mlsys_alloc((size_t)N * nch, sizeof(int));
  w.nscr = (int *)mlsys_calloc((size_t)N, sizeof(int));
  w.ops = (mlsys__coll_rops *)mlsys_calloc((size_t)N, sizeof *w.ops);
  recvd = (unsigned char *)mlsys_calloc((size_t)N * nch, 1);
  S = (mlsys__coll_loc *)mlsys_alloc((size_t)maxu, sizeof *S);
  D = (mlsys__coll_loc *)mlsys_alloc((size_t)maxu, sizeof *D);
  Rr = (mlsys__coll_loc *)mlsys_alloc((size_t)maxu, sizeof *Rr);
  if (!w.cur || !w.scr || !w.nscr || !w.ops || !recvd || !S || !D || !Rr) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (r = 0; r < N; r++)
    for (c = 0; c < nch; c++) {
      size_t k = (size_t)r * nch + c;
      int s = mlsys__coll_in_slot(d, r, c);
      w.cur[k].buf = s >= 0 ? MLSYS_COLL_BUF_IN : -1; w.cur[k].off = s;
      w.scr[k] = -1;
    }
  for (i = 0; i < nx; i++) recvd[(size_t)a->x[i].dst * nch + a->x[i].chunk] = 1;

  /* scratch for merged groups first, consecutively on both sides, so that merged sends are contiguous
     ([repo] aid_IB_contig); largest groups first */
  {
    mlsys__coll_key3 *ord = (mlsys__coll_key3 *)mlsys_alloc((size_t)nunits + 1, sizeof *ord);
    int no = 0;
    if (!ord) { st = MLSYS_ERR_NOMEM; goto fail; }
    for (i = 0; i < nunits; i++)
      if (ustart[i + 1] - ustart[i] > 1) { ord[no].a = -(ustart[i + 1] - ustart[i]); ord[no].b = members[ustart[i]]; ord[no].i = i; no++; }
    qsort(ord, (size_t)no, sizeof *ord, mlsys__coll_key3_cmp);
    for (j = 0; j < no; j++) {
      int u = ord[j].i, side;
      for (side = 0; side < 2; side++)
        for (i = ustart[u]; i < ustart[u + 1]; i++) {
          const mlsys_coll_xfer *x = &a->x[members[i]];
          int rk = side ? x->dst : x->src;
          size_t k = (size_t)rk * nch + x->chunk;
          if (mlsys__coll_out_slot(d, rk, x->chunk) >= 0 || w.scr[k] >= 0) continue;
          if (!side && (!recvd[k] || (!d->combining && mlsys__coll_in_slot(d, rk, x->chunk) >= 0))) continue;
          w.scr[k] = w.nscr[rk]++;
        }
    }
    mlsys_free(ord);
  }

  /* instruction generation in execution order: one send op and one recv (r / rrc) op per contiguous run */
  for (i = 0; i < nunits; i++) {
    int k = ustart[i + 1] - ustart[i], *mm = members + ustart[i], j0;
    const mlsys_coll_xfer *x0 = &a->x[mm[0]];
    int src = x0->src, dst = x0->dst, red = x0->op == MLSYS_COLL_XF_REDUCE;
    for (j = 0; j < k; j++) {
      int ch = a->x[mm[j]].chunk;
      S[j] = w.cur[(size_t)src * nch + ch];
      if (S[j].buf < 0) {
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "lower: transfer %d sends chunk %d from rank %d, which does not hold it (no earlier transfer delivers it)", mm[j], ch, src);
        goto fail;
      }
      Rr[j] = w.cur[(size_t)dst * nch + ch];
      if (red && Rr[j].buf < 0) {
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "lower: transfer %d reduces chunk %d into rank %d, which holds no partial of it", mm[j], ch, dst);
        goto fail;
      }
      D[j] = mlsys__coll_dest(&w, dst, ch);
    }
    for (j0 = 0; j0 < k;) {
      int j1 = j0 + 1;
      mlsys__coll_rop o;
      while (j1 < k && S[j1].buf == S[j1 - 1].buf && S[j1].off == S[j1 - 1].off + 1 && D[j1].buf == D[j1 - 1].buf &&
             D[j1].off == D[j1 - 1].off + 1 && (!red || (Rr[j1].buf == Rr[j1 - 1].buf && Rr[j1].off == Rr[j1 - 1].off + 1)))
        j1++;
      memset(&o, 0, sizeof o);
      o.type = MLSYS_COLL_OP_SEND; o.srcbuf = (unsigned char)S[j0].buf; o.srcoff = S[j0].off;
      o.dstbuf = (unsigned char)D[j0].buf; o.dstoff = D[j0].off; o.cnt = j1 - j0; o.send_peer = dst; o.recv_peer = -1;
      if (mlsys__coll_rops_push(&w.ops[src], &o)) { st = MLSYS_ERR_NOMEM; goto fail; }
      o.type = red ? MLSYS_COLL_OP_RRC : MLSYS_COLL_OP_RECV;
      if (red) { o.srcbuf = (unsigned char)Rr[j0].buf; o.srcoff = Rr[j0].off; }
      o.send_peer = -1; o.recv_peer = src;
      if (mlsys__coll_rops_push(&w.ops[dst], &o)) { st = MLSYS_ERR_NOMEM; goto fail; }
      j0 = j1;
    }
    for (j = 0; j < k; j++) w.cur[(size_t)dst * nch + a->x[mm[j]].chunk] = D[j];
  }

  /* local copies into the output for data that ends elsewhere (own input chunks: "a local copy from input to
     output", §3.10), merged where contiguous on both sides */
  cp = (mlsys__coll_cpy *)mlsys_alloc((size_t)(w.no > 0 ? w.no : 1), sizeof *cp);
  if (!cp) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (r = 0; r < N; r++) {
    int ncp = 0;
    for (c = 0; c < nch; c++) {
      int o = mlsys__coll_out_slot(d, r, c);
      mlsys__coll_loc L0 = w.cur[(size_t)r * nch + c];
      if (o < 0) continue;
      if (L0.buf < 0) {
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "lower: chunk %d never reaches rank %d, whose output needs it", c, r);
        goto fail;
      }
      if (L0.buf == MLSYS_COLL_BUF_OUT && L0.off == o) continue;
      cp[ncp].srcbuf = L0.buf; cp[ncp].srcoff = L0.off; cp[ncp].dstoff = o; ncp++;
    }
    qsort(cp, (size_t)ncp, sizeof *cp, mlsys__coll_cpy_cmp);
    for (j = 0; j < ncp;) {
      int j1 = j + 1;
      mlsys__coll_rop o;
      while (j1 < ncp && cp[j1].srcbuf == cp[j1 - 1].srcbuf && cp[j1].srcoff == cp[j1 - 1].srcoff + 1 && cp[j1].dstoff == cp[j1 - 1].dstoff + 1) j1++;
      memset(&o, 0, sizeof o);
      o.type = MLSYS_COLL_OP_COPY; o.srcbuf = (unsigned char)cp[j].srcbuf; o.srcoff = cp[j].srcoff;
      o.dstbuf = MLSYS_COLL_BUF_OUT; o.dstoff = cp[j].dstoff; o.cnt = j1 - j; o.send_peer = o.recv_peer = -1;
      if (mlsys__coll_rops_push(&w.ops[r], &o)) { st = MLSYS_ERR_NOMEM; goto fail; }
      j = j1;
    }
  }

  snprintf(out->name, sizeof out->name, "taccl_%s_%d", mlsys_coll_kind_name(d->kind), N);
  snprintf(out->proto, sizeof out->proto, "Simple");
  out->kind = d->kind; out->ngpus = N; out->nchannels = instances; out->inplace = 0; out->outofplace = 1;
  out->instances = instances; out->min_bytes = 0; out->max_bytes = 0;
  out->gpus = (mlsys_coll_gpu *)mlsys_calloc((size_t)N, sizeof *out->gpus);
  if (!out->gpus) { st = MLSYS_ERR_NOMEM; goto fail; }
  for (r = 0; r < N; r++) {
    if ((st = mlsys__coll_lower_rank(&w, r, &out->gpus[r]))) goto fail;
    if (out->gpus[r].i_chunks > out->nchunksperloop) out->nchunksperloop = out->gpus[r].i_chunks;
    if (out->gpus[r].o_chunks > out->nchunksperloop) out->nchunksperloop = out->gpus[r].o_chunks;
  }
  goto done;
fail:
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "lower: out of memory");
  mlsys_coll_prog_free(out);
done:
  if (w.ops) for (r = 0; r < N; r++) mlsys_free(w.ops[r].v);
  mlsys_free(w.ops); mlsys_free(w.cur); mlsys_free(w.scr); mlsys_free(w.nscr);
  mlsys_free(members); mlsys_free(ustart); mlsys_free(recvd); mlsys_free(S); mlsys_free(D); mlsys_free(Rr); mlsys_free(cp);
  return st;
}
/* ---- MSCCL XML (TACCL-EF, spec §2.4 item 3) ----
   Writer: the attributes the MSCCL runtime parser requires (msccl-executor-nccl msccl_parser.cc: algo nchannels,
   nchunksperloop, ngpus, proto, coll, minBytes, maxBytes, inplace, outofplace; gpu id, i_chunks, o_chunks,
   s_chunks; tb id, send, recv, chan; step s, type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep), plus
   name (as ncclize writes it) and instances (ours; the runtime ignores attributes it does not know). No <?xml?>
   header: the runtime reads the first node of the file as the <algo> element. One element per line, 2-space
   indentation, fixed attribute order, so write → read → write is byte-identical. */

static const char *mlsys__coll_proto_ok(const char *s) {
  if (!s[0] || !strcmp(s, "Simple")) return "Simple";
  if (!strcmp(s, "LL")) return "LL";
  if (!strcmp(s, "LL128")) return "LL128";
  return NULL;
}
static void mlsys__coll_xml_escape(FILE *f, const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n && s[i]; i++) {
    switch (s[i]) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&apos;", f); break;
      default:
        if ((unsigned char)s[i] < 0x20) fprintf(f, "&#%d;", (unsigned char)s[i]);
        else fputc(s[i], f);
    }
  }
}

MLSYS_DEF mlsys_status mlsys_coll_prog_write_xml(const mlsys_coll_prog *p, FILE *f) {
  int g, t, s;
  const char *proto;
  if (!p || !f) return mlsys_set_error(MLSYS_ERR_ARG, "write_xml: NULL program or file");
  if (!p->gpus || p->ngpus < 1) return mlsys_set_error(MLSYS_ERR_ARG, "write_xml: program has no GPUs");
  if (p->kind < 0 || p->kind > 3) return mlsys_set_error(MLSYS_ERR_ARG, "write_xml: unknown collective kind %d", p->kind);
  proto = mlsys__coll_proto_ok(p->proto);
  if (!proto) return mlsys_set_error(MLSYS_ERR_ARG, "write_xml: unknown protocol \"%.16s\" (Simple, LL or LL128)", p->proto);
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++)
      for (s = 0; s < p->gpus[g].tbs[t].nsteps; s++) {
        const mlsys_coll_step *st = &p->gpus[g].tbs[t].steps[s];
        if (st->op > MLSYS_COLL_OP_NOP || st->srcbuf > 2 || st->dstbuf > 2)
          return mlsys_set_error(MLSYS_ERR_ARG, "write_xml: gpu %d tb %d step %d has an unknown type or buffer", g, t, s);
      }
  fputs("<algo name=\"", f);
  mlsys__coll_xml_escape(f, p->name, sizeof p->name);
  fprintf(f, "\" proto=\"%s\" nchannels=\"%d\" nchunksperloop=\"%d\" ngpus=\"%d\" coll=\"%s\" inplace=\"%d\" outofplace=\"%d\" minBytes=\"%llu\" maxBytes=\"%llu\" instances=\"%d\">\n",
          proto, p->nchannels, p->nchunksperloop, p->ngpus, mlsys_coll_kind_name(p->kind), p->inplace, p->outofplace,
          p->min_bytes, p->max_bytes, p->instances);
  for (g = 0; g < p->ngpus; g++) {
    const mlsys_coll_gpu *gp = &p->gpus[g];
    fprintf(f, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"%d\">\n", gp->id, gp->i_chunks, gp->o_chunks, gp->s_chunks);
    for (t = 0; t < gp->ntbs; t++) {
      const mlsys_coll_tb *tb = &gp->tbs[t];
      fprintf(f, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\">\n", tb->id, tb->send, tb->recv, tb->chan);
      for (s = 0; s < tb->nsteps; s++) {
        const mlsys_coll_step *st = &tb->steps[s];
        fprintf(f, "      <step s=\"%d\" type=\"%s\" srcbuf=\"%c\" srcoff=\"%d\" dstbuf=\"%c\" dstoff=\"%d\" cnt=\"%d\" depid=\"%d\" deps=\"%d\" hasdep=\"%d\"/>\n",
                s, mlsys__coll_op_names[st->op], mlsys__coll_buf_chars[st->srcbuf], st->srcoff,
                mlsys__coll_buf_chars[st->dstbuf], st->dstoff, st->cnt, st->depid, st->deps, st->hasdep);
      }
      fputs("    </tb>\n", f);
    }
    fputs("  </gpu>\n", f);
  }
  fputs("</algo>\n", f);
  if (ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "write_xml: write error");
  return MLSYS_OK;
}

/* Reader: a small tokenizer for exactly this dialect (elements, attributes in any order with single or double
   quotes and the five named entities, comments, <?...?> before the root, whitespace). Unknown attributes are
   ignored (the authors' files carry e.g. redop), unknown elements are errors. Every problem is MLSYS_ERR_PARSE
   "source:line: message". */
#define MLSYS__COLL_XML_MAXATTR 64
typedef struct {
  const char *s, *src;
  size_t n, pos;
  int line;
} mlsys__coll_xr;
typedef struct {
  const char *name; int nlen;           /* element name (points into the text) */
  int close, self_close, line, nattr;
  const char *an[MLSYS__COLL_XML_MAXATTR]; int alen[MLSYS__COLL_XML_MAXATTR], aval[MLSYS__COLL_XML_MAXATTR], aline[MLSYS__COLL_XML_MAXATTR];
  char *buf; size_t blen, bcap;         /* decoded values, each NUL-terminated */
} mlsys__coll_xel;

static mlsys_status mlsys__coll_xerr(const mlsys__coll_xr *x, int line, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static mlsys_status mlsys__coll_xerr(const mlsys__coll_xr *x, int line, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s", x->src, line, buf);
}
static int mlsys__coll_xname_start(int c) { return isalpha(c) || c == '_' || c == ':'; }
static int mlsys__coll_xname_char(int c) { return isalnum(c) || c == '_' || c == ':' || c == '-' || c == '.'; }
static int mlsys__coll_xskip_ws(mlsys__coll_xr *x) {
  int any = 0;
  while (x->pos < x->n) {
    char c = x->s[x->pos];
    if (c == '\n') x->line++;
    else if (c != ' ' && c != '\t' && c != '\r') break;
    x->pos++; any = 1;
  }
  return any;
}
/* Advance to just past the terminator `end`, counting lines; 0 if it is not found. */
static int mlsys__coll_xskip_to(mlsys__coll_xr *x, const char *end) {
  size_t m = strlen(end);
  while (x->pos + m <= x->n) {
    if (!memcmp(x->s + x->pos, end, m)) { x->pos += m; return 1; }
    if (x->s[x->pos] == '\n') x->line++;
    x->pos++;
  }
  return 0;
}
static int mlsys__coll_xbuf_put(mlsys__coll_xel *e, char c) {
  if (e->blen == e->bcap) {
    size_t nc = e->bcap ? 2 * e->bcap : 256;
    char *nb = (char *)mlsys_realloc_array(e->buf, nc, 1);
    if (!nb) return -1;
    e->buf = nb; e->bcap = nc;
  }
  e->buf[e->blen++] = c;
  return 0;
}
static const char *mlsys__coll_xshow(char *tmp, size_t tn, const char *s, size_t n) {   /* printable excerpt */
  size_t i, j = 0;
  for (i = 0; i < n && j + 5 < tn; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f) tmp[j++] = (char)c;
    else j += (size_t)snprintf(tmp + j, tn - j, "\\x%02x", c);
  }
  if (i < n && j + 4 < tn) { tmp[j++] = '.'; tmp[j++] = '.'; tmp[j++] = '.'; }
  tmp[j] = 0;
  return tmp;
}

/* Next element tag; *eof = 1 at the end of the text. */
static mlsys_status mlsys__coll_xnext(mlsys__coll_xr *x, mlsys__coll_xel *e, int root_seen, int *eof) {
  char tmp[64];
  *eof = 0;
  for (;;) {
    mlsys__coll_xskip_ws(x);
    if (x->pos >= x->n) { *eof = 1; return MLSYS_OK; }
    if (x->s[x->pos] != '<') {
      size_t k = x->pos;
      while (k < x->n && k - x->pos < 16 && x->s[k] != '<' && x->s[k] != '\n') k++;
      return mlsys__coll_xerr(x, x->line, "unexpected text \"%s\" (expected an element)", mlsys__coll_xshow(tmp, sizeof tmp, x->s + x->pos, k - x->pos));
    }
    if (x->pos + 4 <= x->n && !memcmp(x->s + x->pos, "<!--", 4)) {
      int l0 = x->line;
      x->pos += 4;
      if (!mlsys__coll_xskip_to(x, "-->")) return mlsys__coll_xerr(x, l0, "unterminated comment");
      continue;
    }
    if (x->pos + 2 <= x->n && !memcmp(x->s + x->pos, "<?", 2)) {
      int l0 = x->line;
      if (root_seen) return mlsys__coll_xerr(x, l0, "<?...?> after the root element");
      x->pos += 2;
      if (!mlsys__coll_xskip_to(x, "?>")) return mlsys__coll_xerr(x, l0, "unterminated <?...?>");
      continue;
    }
    if (x->pos + 2 <= x->n && x->s[x->pos + 1] == '!') return mlsys__coll_xerr(x, x->line, "unsupported markup <!... (only comments are allowed)");
    break;
  }
  e->line = x->line; e->nattr = 0; e->blen = 0; e->self_close = 0; e->close = 0;
  x->pos++;
  if (x->pos < x->n && x->s[x->pos] == '/') { e->close = 1; x->pos++; }
  if (x->pos >= x->n || !mlsys__coll_xname_start((unsigned char)x->s[x->pos]))
    return mlsys__coll_xerr(x, x->line, "expected an element name after '<'");
  e->name = x->s + x->pos;
  while (x->pos < x->n && mlsys__coll_xname_char((unsigned char)x->s[x->pos])) x->pos++;
  e->nlen = (int)(x->s + x->pos - e->name);
  if (e->nlen > 64) return mlsys__coll_xerr(x, e->line, "element name too long");
  for (;;) {
    int ws = mlsys__coll_xskip_ws(x), q, a;
    const char *an;
    if (x->pos >= x->n) return mlsys__coll_xerr(x, e->line, "unterminated <%.*s> tag (end of input)", e->nlen, e->name);
    if (x->s[x->pos] == '>') { x->pos++; return MLSYS_OK; }
    if (x->s[x->pos] == '/' && !e->close) {
      if (x->pos + 1 >= x->n || x->s[x->pos + 1] != '>') return mlsys__coll_xerr(x, x->line, "expected '>' after '/' in <%.*s>", e->nlen, e->name);
      x->pos += 2; e->self_close = 1;
      return MLSYS_OK;
    }
    if (e->close) return mlsys__coll_xerr(x, x->line, "unexpected text in closing tag </%.*s>", e->nlen, e->name);
    if (!ws || !mlsys__coll_xname_start((unsigned char)x->s[x->pos]))
      return mlsys__coll_xerr(x, x->line, "malformed attribute in <%.*s> (near \"%s\")", e->nlen, e->name, mlsys__coll_xshow(tmp, sizeof tmp, x->s + x->pos, x->n - x->pos < 12 ? x->n - x->pos : 12));
    if (e->nattr == MLSYS__COLL_XML_MAXATTR) return mlsys__coll_xerr(x, x->line, "<%.*s> has more than %d attributes", e->nlen, e->name, MLSYS__COLL_XML_MAXATTR);
    an = x->s + x->pos;
    while (x->pos < x->n && mlsys__coll_xname_char((unsigned char)x->s[x->pos])) x->pos++;
    a = e->nattr;
    e->an[a] = an; e->alen[a] = (int)(x->s + x->pos - an); e->aline[a] = x->line;
    if (e->alen[a] > 64) return mlsys__coll_xerr(x, x->line, "attribute name too long in <%.*s>", e->nlen, e->name);
    for (q = 0; q < a; q++)
      if (e->alen[q] == e->alen[a] && !memcmp(e->an[q], an, (size_t)e->alen[a]))
        return mlsys__coll_xerr(x, x->line, "duplicate attribute %.*s in <%.*s>", e->alen[a], an, e->nlen, e->name);
    mlsys__coll_xskip_ws(x);
    if (x->pos >= x->n || x->s[x->pos] != '=') return mlsys__coll_xerr(x, x->line, "attribute %.*s of <%.*s> has no '=' value", e->alen[a], an, e->nlen, e->name);
    x->pos++;
    mlsys__coll_xskip_ws(x);
    if (x->pos >= x->n || (x->s[x->pos] != '"' && x->s[x->pos] != '\''))
      return mlsys__coll_xerr(x, x->line, "value of attribute %.*s of <%.*s> must be quoted", e->alen[a], an, e->nlen, e->name);
    q = x->s[x->pos++];
    e->aval[a] = (int)e->blen;
    for (;;) {
      char c;
      if (x->pos >= x->n) return mlsys__coll_xerr(x, e->aline[a], "unterminated value of attribute %.*s", e->alen[a], an);
      c = x->s[x->pos];
      if (c == q) { x->pos++; break; }
      if (c == '<') return mlsys__coll_xerr(x, x->line, "'<' inside the value of attribute %.*s", e->alen[a], an);
      if (c == '\n') x->line++;
      if (c == '&') {
        static const char *const ent[5] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
        static const char entc[5] = {'&', '<', '>', '"', '\''};
        int k2, found = 0;
        for (k2 = 0; k2 < 5; k2++) {
          size_t m = strlen(ent[k2]);
          if (x->pos + m <= x->n && !memcmp(x->s + x->pos, ent[k2], m)) { c = entc[k2]; x->pos += m; found = 1; break; }
        }
        if (!found && x->pos + 2 < x->n && x->s[x->pos + 1] == '#') {   /* &#N; or &#xH; (ASCII only) */
          size_t k = x->pos + 2;
          int hex = 0, v = 0, nd = 0;
          if (x->s[k] == 'x') { hex = 1; k++; }
          while (k < x->n && nd < 4 && (hex ? isxdigit((unsigned char)x->s[k]) : isdigit((unsigned char)x->s[k]))) {
            int dch = (unsigned char)x->s[k];
            v = v * (hex ? 16 : 10) + (isdigit(dch) ? dch - '0' : (tolower(dch) - 'a' + 10));
            k++; nd++;
          }
          if (nd > 0 && k < x->n && x->s[k] == ';' && v > 0 && v < 128) { c = (char)v; x->pos = k + 1; found = 1; }
        }
        if (!found) return mlsys__coll_xerr(x, x->line, "unsupported entity in the value of attribute %.*s", e->alen[a], an);
      } else x->pos++;
      if (mlsys__coll_xbuf_put(e, c)) return mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory");
    }
    if (mlsys__coll_xbuf_put(e, 0)) return mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory");
    e->nattr++;
  }
}

static int mlsys__coll_xis(const mlsys__coll_xel *e, const char *name) {
  return (size_t)e->nlen == strlen(name) && !memcmp(e->name, name, (size_t)e->nlen);
}
static int mlsys__coll_xfind(const mlsys__coll_xel *e, const char *name) {
  int a;
  size_t m = strlen(name);
  for (a = 0; a < e->nattr; a++)
    if ((size_t)e->alen[a] == m && !memcmp(e->an[a], name, m)) return a;
  return -1;
}
/* Required attribute as a string. */
static mlsys_status mlsys__coll_xstr(const mlsys__coll_xr *x, const mlsys__coll_xel *e, const char *name, const char **out) {
  int a = mlsys__coll_xfind(e, name);
  if (a < 0) return mlsys__coll_xerr(x, e->line, "<%.*s> lacks required attribute \"%s\"", e->nlen, e->name, name);
  *out = e->buf + e->aval[a];
  return MLSYS_OK;
}
/* Integer attribute in [lo, hi] (required unless dflt_ok, then *out keeps its value when absent). */
static mlsys_status mlsys__coll_xint(const mlsys__coll_xr *x, const mlsys__coll_xel *e, const char *name, long long lo,
                                     long long hi, int required, long long *out) {
  int a = mlsys__coll_xfind(e, name), neg = 0, nd = 0, big = 0;
  const char *v, *p;
  unsigned long long u = 0;
  long long val;
  char tmp[48];
  if (a < 0) {
    if (!required) return MLSYS_OK;
    return mlsys__coll_xerr(x, e->line, "<%.*s> lacks required attribute \"%s\"", e->nlen, e->name, name);
  }
  p = v = e->buf + e->aval[a];
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '-') { neg = 1; p++; }
  for (; isdigit((unsigned char)*p); p++, nd++) {
    if (u > 100000000000000000ULL) big = 1;
    else u = u * 10 + (unsigned)(*p - '0');
  }
  while (*p == ' ' || *p == '\t') p++;
  if (nd == 0 || *p)
    return mlsys__coll_xerr(x, e->aline[a], "attribute %s=\"%s\" of <%.*s> is not an integer", name, mlsys__coll_xshow(tmp, sizeof tmp, v, strlen(v)), e->nlen, e->name);
  val = neg ? -(long long)u : (long long)u;
  if (big || val < lo || val > hi)
    return mlsys__coll_xerr(x, e->aline[a], "attribute %s=\"%s\" of <%.*s> out of range [%lld, %lld]", name, mlsys__coll_xshow(tmp, sizeof tmp, v, strlen(v)), e->nlen, e->name, lo, hi);
  *out = val;
  return MLSYS_OK;
}
static mlsys_status mlsys__coll_xbuf(const mlsys__coll_xr *x, const mlsys__coll_xel *e, const char *name, unsigned char *out) {
  const char *v = "";
  mlsys_status st = mlsys__coll_xstr(x, e, name, &v);
  char tmp[48];
  if (st) return st;
  if (!strcmp(v, "i")) *out = MLSYS_COLL_BUF_IN;
  else if (!strcmp(v, "o")) *out = MLSYS_COLL_BUF_OUT;
  else if (!strcmp(v, "s")) *out = MLSYS_COLL_BUF_SCRATCH;
  else return mlsys__coll_xerr(x, e->aline[mlsys__coll_xfind(e, name)], "%s=\"%s\" is not a buffer (i, o or s)", name, mlsys__coll_xshow(tmp, sizeof tmp, v, strlen(v)));
  return MLSYS_OK;
}

typedef struct { int line, lbase, cap; } mlsys__coll_xtbm;   /* per threadblock: its line, first step line, step capacity */

MLSYS_DEF mlsys_status mlsys_coll_prog_read_xml(const char *text, size_t len, const char *source, mlsys_coll_prog *out) {
  mlsys__coll_xr x;
  mlsys__coll_xel e;
  mlsys_status st = MLSYS_OK;
  int depth = 0, seen_algo = 0, ng_alloc = 0, algo_line = 1, cur_gpu = -1, ngpus_seen = 0, total_steps = 0, g, t, s;
  unsigned char *gseen = NULL;
  mlsys__coll_xtbm **tbm = NULL;    /* [gpu][tb in file order] */
  int *tbcap = NULL;
  mlsys__coll_ivec lines = {NULL, 0, 0};
  long long v;
  char tmp[48];
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "read_xml: NULL output");
  memset(out, 0, sizeof *out);
  memset(&e, 0, sizeof e);
  x.s = text ? text : ""; x.n = text ? len : 0; x.pos = 0; x.line = 1; x.src = source ? source : "xml";
  for (;;) {
    int eof;
    if ((st = mlsys__coll_xnext(&x, &e, seen_algo, &eof))) goto fail;
    if (eof) break;
    if (e.close) {
      static const char *const names[5] = {"", "algo", "gpu", "tb", "step"};
      if (depth == 0) { st = mlsys__coll_xerr(&x, e.line, "closing tag </%.*s> without an open element", e.nlen, e.name); goto fail; }
      if (!mlsys__coll_xis(&e, names[depth])) {
        st = mlsys__coll_xerr(&x, e.line, "mismatched closing tag </%.*s> (expected </%s>)", e.nlen, e.name, names[depth]);
        goto fail;
      }
      depth--;
      continue;
    }
    if (mlsys__coll_xis(&e, "algo")) {
      const char *sv = "", *proto;
      int k;
      if (depth != 0 || seen_algo) { st = mlsys__coll_xerr(&x, e.line, seen_algo ? "a second <algo> element" : "<algo> must be the root element"); goto fail; }
      seen_algo = 1; algo_line = e.line;
      if (mlsys__coll_xfind(&e, "name") >= 0) {
        sv = e.buf + e.aval[mlsys__coll_xfind(&e, "name")];
        if (strlen(sv) >= sizeof out->name) { st = mlsys__coll_xerr(&x, e.line, "algo name longer than %d characters", (int)sizeof out->name - 1); goto fail; }
        snprintf(out->name, sizeof out->name, "%s", sv);
      }
      if ((st = mlsys__coll_xstr(&x, &e, "proto", &sv))) goto fail;
      proto = sv[0] ? mlsys__coll_proto_ok(sv) : NULL;
      if (!proto) { st = mlsys__coll_xerr(&x, e.line, "unknown proto \"%s\" (Simple, LL or LL128)", mlsys__coll_xshow(tmp, sizeof tmp, sv, strlen(sv))); goto fail; }
      snprintf(out->proto, sizeof out->proto, "%s", proto);
      if ((st = mlsys__coll_xstr(&x, &e, "coll", &sv))) goto fail;
      k = !strcmp(sv, "reduce_scatter") ? MLSYS_COLL_REDUCESCATTER : mlsys_coll_kind_parse(sv);
      if (k < 0 || !strcmp(sv, "ag") || !strcmp(sv, "a2a") || !strcmp(sv, "rs") || !strcmp(sv, "ar")) {
        st = mlsys__coll_xerr(&x, e.line, "unsupported collective coll=\"%s\" (allgather, alltoall, reducescatter or allreduce)", mlsys__coll_xshow(tmp, sizeof tmp, sv, strlen(sv)));
        goto fail;
      }
      out->kind = k;
      if ((st = mlsys__coll_xint(&x, &e, "ngpus", 1, MLSYS__COLL_MAX_GPUS, 1, &v))) goto fail;
      out->ngpus = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "nchannels", 1, MLSYS__COLL_MAX_CHANNELS, 1, &v))) goto fail;
      out->nchannels = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "nchunksperloop", 0, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      out->nchunksperloop = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "inplace", 0, 1, 1, &v))) goto fail;
      out->inplace = (int)v;
      /* msccl-tools' ncclize writes neither outofplace nor the byte range: an in-place program is only that */
      v = !out->inplace;
      if ((st = mlsys__coll_xint(&x, &e, "outofplace", 0, 1, 0, &v))) goto fail;
      out->outofplace = (int)v;
      if (!out->inplace && !out->outofplace) {
        st = mlsys__coll_xerr(&x, e.line, "<algo> has inplace=\"0\" and outofplace=\"0\": it runs neither way");
        goto fail;
      }
      v = 0;
      if ((st = mlsys__coll_xint(&x, &e, "minBytes", 0, LLONG_MAX, 0, &v))) goto fail;
      out->min_bytes = (unsigned long long)v;
      v = 0;
      if ((st = mlsys__coll_xint(&x, &e, "maxBytes", 0, LLONG_MAX, 0, &v))) goto fail;
      out->max_bytes = (unsigned long long)v;
      v = 1;
      if ((st = mlsys__coll_xint(&x, &e, "instances", 1, MLSYS__COLL_MAX_INSTANCES, 0, &v))) goto fail;
      out->instances = (int)v;
      out->gpus = (mlsys_coll_gpu *)mlsys_calloc((size_t)out->ngpus, sizeof *out->gpus);
      gseen = (unsigned char *)mlsys_calloc((size_t)out->ngpus, 1);
      tbm = (mlsys__coll_xtbm **)mlsys_calloc((size_t)out->ngpus, sizeof *tbm);
      tbcap = (int *)mlsys_calloc((size_t)out->ngpus, sizeof(int));
      if (!out->gpus || !gseen || !tbm || !tbcap) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
      ng_alloc = out->ngpus;
      if (!e.self_close) depth = 1;
    } else if (mlsys__coll_xis(&e, "gpu")) {
      mlsys_coll_gpu *gp;
      if (depth != 1) { st = mlsys__coll_xerr(&x, e.line, "<gpu> must be inside <algo>"); goto fail; }
      if ((st = mlsys__coll_xint(&x, &e, "id", 0, out->ngpus - 1, 1, &v))) goto fail;
      if (gseen[v]) { st = mlsys__coll_xerr(&x, e.line, "gpu id %lld appears twice", v); goto fail; }
      gseen[v] = 1; ngpus_seen++; cur_gpu = (int)v;
      gp = &out->gpus[cur_gpu];
      gp->id = cur_gpu;
      if ((st = mlsys__coll_xint(&x, &e, "i_chunks", 0, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      gp->i_chunks = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "o_chunks", 0, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      gp->o_chunks = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "s_chunks", 0, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      gp->s_chunks = (int)v;
      if (!e.self_close) depth = 2;
    } else if (mlsys__coll_xis(&e, "tb")) {
      mlsys_coll_gpu *gp;
      mlsys_coll_tb *tb;
      if (depth != 2) { st = mlsys__coll_xerr(&x, e.line, "<tb> must be inside <gpu>"); goto fail; }
      gp = &out->gpus[cur_gpu];
      if (gp->ntbs == MLSYS__COLL_MAX_TBS) { st = mlsys__coll_xerr(&x, e.line, "gpu %d has more than %d threadblocks", cur_gpu, MLSYS__COLL_MAX_TBS); goto fail; }
      if (gp->ntbs == tbcap[cur_gpu]) {
        int nc = tbcap[cur_gpu] ? 2 * tbcap[cur_gpu] : 8;
        mlsys_coll_tb *nt = (mlsys_coll_tb *)mlsys_realloc_array(gp->tbs, (size_t)nc, sizeof *nt);
        mlsys__coll_xtbm *nm;
        if (!nt) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
        gp->tbs = nt;
        nm = (mlsys__coll_xtbm *)mlsys_realloc_array(tbm[cur_gpu], (size_t)nc, sizeof *nm);
        if (!nm) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
        tbm[cur_gpu] = nm; tbcap[cur_gpu] = nc;
      }
      tb = &gp->tbs[gp->ntbs];
      memset(tb, 0, sizeof *tb);
      tbm[cur_gpu][gp->ntbs].line = e.line; tbm[cur_gpu][gp->ntbs].lbase = lines.n; tbm[cur_gpu][gp->ntbs].cap = 0;
      gp->ntbs++;
      if ((st = mlsys__coll_xint(&x, &e, "id", 0, MLSYS__COLL_MAX_TBS - 1, 1, &v))) goto fail;
      tb->id = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "send", -1, out->ngpus - 1, 1, &v))) goto fail;
      tb->send = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "recv", -1, out->ngpus - 1, 1, &v))) goto fail;
      tb->recv = (int)v;
      if (tb->send == cur_gpu || tb->recv == cur_gpu) { st = mlsys__coll_xerr(&x, e.line, "threadblock %d of gpu %d has itself as a peer", tb->id, cur_gpu); goto fail; }
      if ((st = mlsys__coll_xint(&x, &e, "chan", 0, out->nchannels - 1, 1, &v))) goto fail;
      tb->chan = (int)v;
      if (!e.self_close) depth = 3;
    } else if (mlsys__coll_xis(&e, "step")) {
      mlsys_coll_gpu *gp;
      mlsys_coll_tb *tb;
      mlsys__coll_xtbm *m;
      mlsys_coll_step *sp;
      const char *ty = "";
      int op;
      if (depth != 3) { st = mlsys__coll_xerr(&x, e.line, "<step> must be inside <tb>"); goto fail; }
      gp = &out->gpus[cur_gpu];
      tb = &gp->tbs[gp->ntbs - 1];
      m = &tbm[cur_gpu][gp->ntbs - 1];
      if (tb->nsteps == MLSYS__COLL_MAX_STEPS || total_steps == MLSYS__COLL_MAX_TOTAL_STEPS) {
        st = mlsys__coll_xerr(&x, e.line, "too many steps (at most %d per threadblock, %d in all)", MLSYS__COLL_MAX_STEPS, MLSYS__COLL_MAX_TOTAL_STEPS);
        goto fail;
      }
      if (tb->nsteps == m->cap) {
        int nc = m->cap ? 2 * m->cap : 8;
        mlsys_coll_step *ns = (mlsys_coll_step *)mlsys_realloc_array(tb->steps, (size_t)nc, sizeof *ns);
        if (!ns) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
        tb->steps = ns; m->cap = nc;
      }
      if (lines.n != m->lbase + tb->nsteps) { st = mlsys__coll_xerr(&x, e.line, "internal: step lines out of order"); goto fail; }
      if (mlsys__coll_ivec_push(&lines, e.line)) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
      sp = &tb->steps[tb->nsteps];
      memset(sp, 0, sizeof *sp);
      tb->nsteps++; total_steps++;
      if ((st = mlsys__coll_xint(&x, &e, "s", 0, MLSYS__COLL_MAX_STEPS, 1, &v))) goto fail;
      if (v != tb->nsteps - 1) { st = mlsys__coll_xerr(&x, e.line, "step s=%lld out of order (expected s=%d)", v, tb->nsteps - 1); goto fail; }
      if ((st = mlsys__coll_xstr(&x, &e, "type", &ty))) goto fail;
      for (op = 0; op <= MLSYS_COLL_OP_NOP; op++)
        if (!strcmp(ty, mlsys__coll_op_names[op])) break;
      if (op > MLSYS_COLL_OP_NOP) { st = mlsys__coll_xerr(&x, e.line, "unknown step type \"%s\"", mlsys__coll_xshow(tmp, sizeof tmp, ty, strlen(ty))); goto fail; }
      sp->op = (unsigned char)op;
      if ((st = mlsys__coll_xbuf(&x, &e, "srcbuf", &sp->srcbuf))) goto fail;
      if ((st = mlsys__coll_xbuf(&x, &e, "dstbuf", &sp->dstbuf))) goto fail;
      if ((st = mlsys__coll_xint(&x, &e, "srcoff", -1, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      sp->srcoff = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "dstoff", -1, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      sp->dstoff = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "cnt", op == MLSYS_COLL_OP_NOP ? 0 : 1, MLSYS__COLL_MAX_CHUNKS, 1, &v))) goto fail;
      sp->cnt = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "depid", -1, MLSYS__COLL_MAX_TBS - 1, 1, &v))) goto fail;
      sp->depid = (int)v;
      if ((st = mlsys__coll_xint(&x, &e, "deps", -1, MLSYS__COLL_MAX_STEPS, 1, &v))) goto fail;
      sp->deps = (int)v;
      if (sp->depid < 0) sp->deps = -1;
      if ((st = mlsys__coll_xint(&x, &e, "hasdep", 0, 1, 1, &v))) goto fail;
      sp->hasdep = (unsigned char)v;
      if (op != MLSYS_COLL_OP_NOP) {
        if (mlsys__coll_op_sends(op) && tb->send < 0) { st = mlsys__coll_xerr(&x, e.line, "%s step in threadblock %d, which has no send peer", ty, tb->id); goto fail; }
        if (mlsys__coll_op_recvs(op) && tb->recv < 0) { st = mlsys__coll_xerr(&x, e.line, "%s step in threadblock %d, which has no recv peer", ty, tb->id); goto fail; }
        if (mlsys__coll_op_reads_src(op) && (sp->srcoff < 0 || (long long)sp->srcoff + sp->cnt > mlsys__coll_buf_chunks(gp, sp->srcbuf))) {
          st = mlsys__coll_xerr(&x, e.line, "source %c[%d..%d) beyond the %d chunks gpu %d declares", mlsys__coll_buf_chars[sp->srcbuf], sp->srcoff, sp->srcoff + sp->cnt, mlsys__coll_buf_chunks(gp, sp->srcbuf), cur_gpu);
          goto fail;
        }
        if (mlsys__coll_op_writes_dst(op) && (sp->dstoff < 0 || (long long)sp->dstoff + sp->cnt > mlsys__coll_buf_chunks(gp, sp->dstbuf))) {
          st = mlsys__coll_xerr(&x, e.line, "destination %c[%d..%d) beyond the %d chunks gpu %d declares", mlsys__coll_buf_chars[sp->dstbuf], sp->dstoff, sp->dstoff + sp->cnt, mlsys__coll_buf_chunks(gp, sp->dstbuf), cur_gpu);
          goto fail;
        }
      }
      if (!e.self_close) depth = 4;
    } else {
      st = mlsys__coll_xerr(&x, e.line, "unknown element <%.*s>", e.nlen, e.name);
      goto fail;
    }
  }
  if (depth > 0) { static const char *const names[5] = {"", "algo", "gpu", "tb", "step"}; st = mlsys__coll_xerr(&x, x.line, "unexpected end of input inside <%s>", names[depth]); goto fail; }
  if (!seen_algo) { st = mlsys__coll_xerr(&x, x.line, "no <algo> element"); goto fail; }
  if (ngpus_seen != out->ngpus) {
    for (g = 0; g < out->ngpus && gseen[g]; g++) {}
    st = mlsys__coll_xerr(&x, algo_line, "ngpus=%d but there is no <gpu id=\"%d\"> (%d gpu elements)", out->ngpus, g, ngpus_seen);
    goto fail;
  }
  /* threadblock ids: 0..ntbs−1, each once (the runtime rejects gaps); put them in id order */
  for (g = 0; g < out->ngpus; g++) {
    mlsys_coll_gpu *gp = &out->gpus[g];
    int *where = (int *)mlsys_alloc((size_t)gp->ntbs + 1, sizeof(int));
    mlsys_coll_tb *sorted = (mlsys_coll_tb *)mlsys_alloc((size_t)gp->ntbs + 1, sizeof *sorted);
    mlsys__coll_xtbm *msorted = (mlsys__coll_xtbm *)mlsys_alloc((size_t)gp->ntbs + 1, sizeof *msorted);
    if (!where || !sorted || !msorted) {
      mlsys_free(where); mlsys_free(sorted); mlsys_free(msorted);
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory");
      goto fail;
    }
    for (t = 0; t < gp->ntbs; t++) where[t] = -1;
    for (t = 0; t < gp->ntbs; t++) {
      int id = gp->tbs[t].id;
      if (id >= gp->ntbs || where[id] >= 0) {
        int line = tbm[g][t].line;
        mlsys_free(where); mlsys_free(sorted); mlsys_free(msorted);
        st = id >= gp->ntbs ? mlsys__coll_xerr(&x, line, "threadblock id %d on gpu %d leaves a gap (ids must be 0..%d)", id, g, gp->ntbs - 1)
                            : mlsys__coll_xerr(&x, line, "threadblock id %d appears twice on gpu %d", id, g);
        goto fail;
      }
      where[id] = t;
    }
    for (t = 0; t < gp->ntbs; t++) { sorted[t] = gp->tbs[where[t]]; msorted[t] = tbm[g][where[t]]; }
    for (t = 0; t < gp->ntbs; t++) { gp->tbs[t] = sorted[t]; tbm[g][t] = msorted[t]; }
    mlsys_free(where); mlsys_free(sorted); mlsys_free(msorted);
  }
  /* dependencies and connections (need every threadblock) */
  for (g = 0; g < out->ngpus; g++) {
    mlsys_coll_gpu *gp = &out->gpus[g];
    for (t = 0; t < gp->ntbs; t++)
      for (s = 0; s < gp->tbs[t].nsteps; s++) {
        mlsys_coll_step *sp = &gp->tbs[t].steps[s];
        int line = lines.v[tbm[g][t].lbase + s];
        if (sp->depid < 0) continue;
        if (sp->depid >= gp->ntbs || sp->depid == t) {
          st = mlsys__coll_xerr(&x, line, sp->depid == t ? "step depends on its own threadblock %d" : "step depends on threadblock %d, which gpu %d does not have", sp->depid, g);
          goto fail;
        }
        if (sp->deps < 0 || sp->deps >= gp->tbs[sp->depid].nsteps) {
          st = mlsys__coll_xerr(&x, line, "step depends on step %d of threadblock %d, which has %d steps", sp->deps, sp->depid, gp->tbs[sp->depid].nsteps);
          goto fail;
        }
      }
    {
      int t1, t2, dir, dup = mlsys__coll_dup_conn(gp, &t1, &t2, &dir);
      if (dup < 0) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "read_xml: out of memory"); goto fail; }
      if (dup) {
        st = mlsys__coll_xerr(&x, tbm[g][t2].line, "threadblocks %d and %d of gpu %d both %s gpu %d on channel %d", t1, t2, g,
                              dir ? "receive from" : "send to", dir ? gp->tbs[t2].recv : gp->tbs[t2].send, gp->tbs[t2].chan);
        goto fail;
      }
    }
  }
  {
    char m2[256];
    if (mlsys__coll_prog_check(out, m2, sizeof m2)) { st = mlsys__coll_xerr(&x, algo_line, "%s", m2); goto fail; }
  }
  goto done;
fail:
  mlsys_coll_prog_free(out);
done:
  if (tbm) for (g = 0; g < ng_alloc; g++) mlsys_free(tbm[g]);
  mlsys_free(tbm); mlsys_free(tbcap); mlsys_free(gseen); mlsys_free(lines.v); mlsys_free(e.buf);
  return st;
}
/* ---- connections shared by the verifier and the executor: FIFO per (sender gpu, receiver gpu, channel) ---- */
typedef struct {
  int T, nq;
  int *tbase;               /* [ngpus+1] first global threadblock of each gpu */
  int *sq, *rq;             /* [T] queue a threadblock sends into / receives from, -1 none */
  mlsys__coll_key3 *keys;   /* [nq] (sender, receiver, channel) */
  int **qv, *qhead, *qn, *qcap;   /* queues of message ids */
} mlsys__coll_conn;

static void mlsys__coll_conn_free(mlsys__coll_conn *c) {
  int q;
  if (c->qv) for (q = 0; q < c->nq; q++) mlsys_free(c->qv[q]);
  mlsys_free(c->qv); mlsys_free(c->qhead); mlsys_free(c->qn); mlsys_free(c->qcap);
  mlsys_free(c->tbase); mlsys_free(c->sq); mlsys_free(c->rq); mlsys_free(c->keys);
  memset(c, 0, sizeof *c);
}
static int mlsys__coll_conn_find(const mlsys__coll_conn *c, int a, int b, int ch) {
  int lo = 0, hi = c->nq;
  mlsys__coll_key3 k;
  k.a = a; k.b = b; k.i = ch;
  while (lo < hi) {
    int mid = (lo + hi) / 2, r = mlsys__coll_key3_cmp(&c->keys[mid], &k);
    if (!r) return mid;
    if (r < 0) lo = mid + 1; else hi = mid;
  }
  return -1;
}
static mlsys_status mlsys__coll_conn_build(const mlsys_coll_prog *p, mlsys__coll_conn *c) {
  int g, t, k = 0, j;
  memset(c, 0, sizeof *c);
  c->tbase = (int *)mlsys_alloc((size_t)p->ngpus + 1, sizeof(int));
  if (!c->tbase) goto nomem;
  c->tbase[0] = 0;
  for (g = 0; g < p->ngpus; g++) c->tbase[g + 1] = c->tbase[g] + p->gpus[g].ntbs;
  c->T = c->tbase[p->ngpus];
  c->sq = (int *)mlsys_alloc((size_t)c->T + 1, sizeof(int));
  c->rq = (int *)mlsys_alloc((size_t)c->T + 1, sizeof(int));
  c->keys = (mlsys__coll_key3 *)mlsys_alloc(2 * (size_t)c->T + 1, sizeof *c->keys);
  if (!c->sq || !c->rq || !c->keys) goto nomem;
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
      if (tb->send >= 0) { c->keys[k].a = g; c->keys[k].b = tb->send; c->keys[k].i = tb->chan; k++; }
      if (tb->recv >= 0) { c->keys[k].a = tb->recv; c->keys[k].b = g; c->keys[k].i = tb->chan; k++; }
    }
  qsort(c->keys, (size_t)k, sizeof *c->keys, mlsys__coll_key3_cmp);
  for (j = 0; j < k; j++)
    if (!c->nq || mlsys__coll_key3_cmp(&c->keys[c->nq - 1], &c->keys[j])) c->keys[c->nq++] = c->keys[j];
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
      int gt = c->tbase[g] + t;
      c->sq[gt] = tb->send >= 0 ? mlsys__coll_conn_find(c, g, tb->send, tb->chan) : -1;
      c->rq[gt] = tb->recv >= 0 ? mlsys__coll_conn_find(c, tb->recv, g, tb->chan) : -1;
    }
  c->qv = (int **)mlsys_calloc((size_t)c->nq + 1, sizeof(int *));
  c->qhead = (int *)mlsys_calloc((size_t)c->nq + 1, sizeof(int));
  c->qn = (int *)mlsys_calloc((size_t)c->nq + 1, sizeof(int));
  c->qcap = (int *)mlsys_calloc((size_t)c->nq + 1, sizeof(int));
  if (!c->qv || !c->qhead || !c->qn || !c->qcap) goto nomem;
  return MLSYS_OK;
nomem:
  mlsys__coll_conn_free(c);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
}
static int mlsys__coll_conn_push(mlsys__coll_conn *c, int q, int id) {
  if (c->qn[q] == c->qcap[q]) {
    int nc = c->qcap[q] ? 2 * c->qcap[q] : 8;
    int *nv = (int *)mlsys_realloc_array(c->qv[q], (size_t)nc, sizeof(int));
    if (!nv) return -1;
    c->qv[q] = nv; c->qcap[q] = nc;
  }
  c->qv[q][c->qn[q]++] = id;
  return 0;
}
static int mlsys__coll_conn_pending(const mlsys__coll_conn *c, int q) { return c->qn[q] - c->qhead[q]; }
static int mlsys__coll_conn_pop(mlsys__coll_conn *c, int q) { return c->qv[q][c->qhead[q]++]; }

/* One line on every stuck threadblock (at most 4) of a deadlocked program. */
static void mlsys__coll_deadlock_msg(const mlsys_coll_prog *p, const mlsys__coll_conn *c, const int *done, char *buf, size_t n) {
  int g, t, listed = 0, stuck = 0;
  size_t len;
  snprintf(buf, n, "deadlock:");
  for (g = 0; g < p->ngpus; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
      int s = done[c->tbase[g] + t];
      const mlsys_coll_step *sp;
      if (s >= tb->nsteps) continue;
      stuck++;
      if (listed == 4) continue;
      listed++;
      sp = &tb->steps[s];
      len = strlen(buf);
      if (len + 1 >= n) continue;
      if (sp->depid >= 0 && done[c->tbase[g] + sp->depid] <= sp->deps)
        snprintf(buf + len, n - len, " gpu %d tb %d step %d (%s) waits for tb %d step %d;", g, t, s, mlsys__coll_op_names[sp->op], sp->depid, sp->deps);
      else
        snprintf(buf + len, n - len, " gpu %d tb %d step %d (%s) waits for a message from gpu %d on channel %d;", g, t, s,
                 mlsys__coll_op_names[sp->op], tb->recv, tb->chan);
    }
  len = strlen(buf);
  if (len + 1 < n) snprintf(buf + len, n - len, " %d threadblock(s) cannot progress", stuck);
}

/* ---- program verifier (spec §3.13, last paragraph) ----
   Symbolic execution of the threadblocks: AG/A2A slots hold the id of the sub-chunk they contain, RS/AR slots
   hold a sub-chunk id plus the set of ranks whose contributions they sum. Every conflicting pair of accesses to a
   slot (write after write, read after write, write after read) must be ordered by happens-before (threadblock
   order, dependencies, send → matching receive), so the result cannot depend on the interleaving; a read that is
   not ordered after the write it needs is reported as possibly reading an empty or stale slot. */
typedef struct { int n; int *val, *wr, *rh; uint64_t *bits; } mlsys__coll_vbuf;
typedef struct { int cnt, node; int *val; uint64_t *bits; } mlsys__coll_vmsg;

typedef struct {
  const mlsys_coll_prog *p;
  const mlsys_coll_def *d;
  mlsys__coll_conn c;
  int n, nw, comb, nnodes;
  int *nbase;                /* [T+1] first node of each global threadblock */
  int *node_tb;              /* [nodes] */
  int *matched;              /* [nodes] send matched by a receive, -1 */
  int *stamp, stampv, *stack;
  int *done;                 /* [T] executed steps */
  int **known;               /* [gpu] ntbs×ntbs direct-dependency knowledge, NULL = none (BFS only) */
  mlsys__coll_vbuf *vb;      /* [gpu*3 + buf] */
  mlsys__coll_ivec pool;     /* readers (node, next) */
  mlsys__coll_vmsg *msgs; int nmsgs, capmsgs;
  int *tv[3]; uint64_t *tbits[3];   /* temporaries: src, msg/dst, result */
  char *msg; size_t msglen;
} mlsys__coll_vs;

static const char *mlsys__coll_vchunk(const mlsys__coll_vs *v, int val, char *buf, size_t n) {
  if (val < 0) snprintf(buf, n, "nothing");
  else if (v->n > 1) snprintf(buf, n, "chunk %d (part %d of %d)", val / v->n, val % v->n, v->n);
  else snprintf(buf, n, "chunk %d", val);
  return buf;
}
/* Does node w happen before node r (both executed)? */
static int mlsys__coll_vordered(mlsys__coll_vs *v, int w, int r) {
  int tw, tr, sp = 0, g;
  if (w < 0 || w == r) return 1;
  tw = v->node_tb[w]; tr = v->node_tb[r];
  if (tw == tr) return w < r;
  for (g = 0; v->c.tbase[g + 1] <= tr; g++) {}
  if (tw >= v->c.tbase[g] && tw < v->c.tbase[g + 1] && v->known[g]) {
    int nt = v->p->gpus[g].ntbs;
    if (v->known[g][(size_t)(tr - v->c.tbase[g]) * nt + (tw - v->c.tbase[g])] > w - v->nbase[tw]) return 1;
  }
  /* backward search over threadblock order, dependencies and matched sends */
  if (++v->stampv == INT_MAX) { memset(v->stamp, 0, (size_t)v->nnodes * sizeof(int)); v->stampv = 1; }
  v->stack[sp++] = r;
  v->stamp[r] = v->stampv;
  while (sp > 0) {
    int x = v->stack[--sp], tx = v->node_tb[x], preds[3], k, gx;
    const mlsys_coll_step *st;
    for (gx = 0; v->c.tbase[gx + 1] <= tx; gx++) {}
    st = &v->p->gpus[gx].tbs[tx - v->c.tbase[gx]].steps[x - v->nbase[tx]];
    preds[0] = x > v->nbase[tx] ? x - 1 : -1;
    preds[1] = st->depid >= 0 ? v->nbase[v->c.tbase[gx] + st->depid] + st->deps : -1;
    preds[2] = v->matched[x];
    for (k = 0; k < 3; k++) {
      int y = preds[k];
      if (y < 0 || v->stamp[y] == v->stampv) continue;
      if (y == w) return 1;
      if (v->node_tb[y] == tw && y > w) return 1;   /* a later step of w's threadblock */
      v->stamp[y] = v->stampv;
      v->stack[sp++] = y;
    }
  }
  return 0;
}

static mlsys_status mlsys__coll_vfail(mlsys__coll_vs *v, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static mlsys_status mlsys__coll_vfail(mlsys__coll_vs *v, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, v->msg, v->msglen, "%s", buf);
}

/* Reduce b into a (a ⊕= b) symbolically; k = element index for messages. */
static mlsys_status mlsys__coll_vreduce(mlsys__coll_vs *v, int *aval, uint64_t *abits, int bval, const uint64_t *bbits, int g,
                                        int t, int s, const char *what) {
  int w;
  char c1[64], c2[64];
  if (!v->comb) return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s): reduction in a non-combining collective (%s)", g, t, s, what, mlsys_coll_kind_name(v->p->kind));
  if (*aval < 0 || bval < 0) return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) reduces an empty slot", g, t, s, what);
  if (*aval != bval)
    return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) reduces %s into %s", g, t, s, what, mlsys__coll_vchunk(v, bval, c1, sizeof c1), mlsys__coll_vchunk(v, *aval, c2, sizeof c2));
  for (w = 0; w < v->nw; w++)
    if (abits[w] & bbits[w]) {
      int r = w * 64;
      uint64_t x = abits[w] & bbits[w];
      while (!(x & 1)) { x >>= 1; r++; }
      return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s): double-counted contribution of rank %d to %s", g, t, s, what, r, mlsys__coll_vchunk(v, *aval, c1, sizeof c1));
    }
  for (w = 0; w < v->nw; w++) abits[w] |= bbits[w];
  return MLSYS_OK;
}

static mlsys_status mlsys__coll_vstep(mlsys__coll_vs *v, int g, int t) {
  const mlsys_coll_gpu *gp = &v->p->gpus[g];
  const mlsys_coll_tb *tb = &gp->tbs[t];
  int gt = v->c.tbase[g] + t, s = v->done[gt], node = v->nbase[gt] + s, k, nw = v->nw;
  const mlsys_coll_step *sp = &tb->steps[s];
  const char *tn = mlsys__coll_op_names[sp->op];
  int op = sp->op, cnt = sp->cnt;
  mlsys__coll_vmsg *m = NULL;
  int *res = NULL; uint64_t *resb = NULL;
  if (sp->depid >= 0 && v->known[g]) {
    int *kn = &v->known[g][(size_t)t * gp->ntbs + sp->depid];
    if (*kn < sp->deps + 1) *kn = sp->deps + 1;
  }
  if (op == MLSYS_COLL_OP_NOP) return MLSYS_OK;
  if (mlsys__coll_op_recvs(op)) {
    int id = mlsys__coll_conn_pop(&v->c, v->c.rq[gt]);
    int sn = v->msgs[id].node, stb = v->node_tb[sn], sg;
    m = &v->msgs[id];
    v->matched[node] = sn;
    for (sg = 0; v->c.tbase[sg + 1] <= stb; sg++) {}
    if (m->cnt != cnt)
      return mlsys__coll_vfail(v, "count mismatch: gpu %d tb %d step %d sends %d chunk(s) but gpu %d tb %d step %d (%s) receives %d", sg,
                               stb - v->c.tbase[sg], sn - v->nbase[stb], m->cnt, g, t, s, tn, cnt);
  }
  /* reads (source, and the destination for re), checked against the last writer */
  if (mlsys__coll_op_reads_src(op) || op == MLSYS_COLL_OP_REDUCE) {
    int pass;
    for (pass = 0; pass < 2; pass++) {
      int buf = pass ? sp->dstbuf : sp->srcbuf, off = pass ? sp->dstoff : sp->srcoff;
      mlsys__coll_vbuf *b = &v->vb[g * 3 + buf];
      if (pass == 0 && !mlsys__coll_op_reads_src(op)) continue;
      if (pass == 1 && op != MLSYS_COLL_OP_REDUCE) continue;
      for (k = 0; k < cnt; k++) {
        int slot = off + k, id;
        if (!mlsys__coll_vordered(v, b->wr[slot], node)) {
          int wn = b->wr[slot], wt = v->node_tb[wn];
          return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) may read an empty or stale slot %c[%d]: it is written by tb %d step %d, which it does not depend on",
                                   g, t, s, tn, mlsys__coll_buf_chars[buf], slot, wt - v->c.tbase[g], wn - v->nbase[wt]);
        }
        if (b->val[slot] < 0)
          return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) %s the empty slot %c[%d]", g, t, s, tn,
                                   mlsys__coll_op_sends(op) && op != MLSYS_COLL_OP_RRS ? "sends" : "reads", mlsys__coll_buf_chars[buf], slot);
        v->tv[pass][k] = b->val[slot];
        if (v->comb) memcpy(v->tbits[pass] + (size_t)k * nw, b->bits + (size_t)slot * nw, (size_t)nw * sizeof(uint64_t));
        id = v->pool.n / 2;
        if (mlsys__coll_ivec_push(&v->pool, node) || mlsys__coll_ivec_push(&v->pool, b->rh[slot])) return mlsys_set_error(MLSYS_ERR_NOMEM, "verify: out of memory");
        b->rh[slot] = id;
      }
    }
  }
  /* the value produced */
  res = v->tv[2]; resb = v->tbits[2];
  for (k = 0; k < cnt; k++) {
    mlsys_status st;
    switch (op) {
      case MLSYS_COLL_OP_SEND: case MLSYS_COLL_OP_COPY:
        res[k] = v->tv[0][k];
        if (v->comb) memcpy(resb + (size_t)k * nw, v->tbits[0] + (size_t)k * nw, (size_t)nw * sizeof(uint64_t));
        break;
      case MLSYS_COLL_OP_RECV: case MLSYS_COLL_OP_RCS:
        res[k] = m->val[k];
        if (v->comb) memcpy(resb + (size_t)k * nw, m->bits + (size_t)k * nw, (size_t)nw * sizeof(uint64_t));
        break;
      case MLSYS_COLL_OP_REDUCE:
        res[k] = v->tv[1][k];
        if (v->comb) memcpy(resb + (size_t)k * nw, v->tbits[1] + (size_t)k * nw, (size_t)nw * sizeof(uint64_t));
        if ((st = mlsys__coll_vreduce(v, &res[k], resb + (size_t)k * nw, v->tv[0][k], v->tbits[0] + (size_t)k * nw, g, t, s, tn))) return st;
        break;
      default:   /* rrs, rrc, rrcs: received ⊕ source */
        res[k] = m->val[k];
        if (v->comb) memcpy(resb + (size_t)k * nw, m->bits + (size_t)k * nw, (size_t)nw * sizeof(uint64_t));
        if ((st = mlsys__coll_vreduce(v, &res[k], resb + (size_t)k * nw, v->tv[0][k], v->comb ? v->tbits[0] + (size_t)k * nw : NULL, g, t, s, tn))) return st;
        break;
    }
  }
  if (m) { mlsys_free(m->val); mlsys_free(m->bits); m->val = NULL; m->bits = NULL; }
  /* writes, checked against the last writer and the readers since */
  if (mlsys__coll_op_writes_dst(op)) {
    mlsys__coll_vbuf *b = &v->vb[g * 3 + sp->dstbuf];
    /* out of place, inputs must survive the collective; in place, the input buffer is where the result goes */
    if (sp->dstbuf == MLSYS_COLL_BUF_IN && !mlsys__coll_prog_inplace(v->p))
      return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) writes the input buffer (inputs must not change in an out-of-place program)", g, t, s, tn);
    for (k = 0; k < cnt; k++) {
      int slot = sp->dstoff + k, h;
      if (!mlsys__coll_vordered(v, b->wr[slot], node)) {
        int wn = b->wr[slot], wt = v->node_tb[wn];
        return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) writes %c[%d] concurrently with tb %d step %d (no dependency orders the two writes)",
                                 g, t, s, tn, mlsys__coll_buf_chars[sp->dstbuf], slot, wt - v->c.tbase[g], wn - v->nbase[wt]);
      }
      for (h = b->rh[slot]; h >= 0; h = v->pool.v[2 * h + 1]) {
        int rn = v->pool.v[2 * h];
        if (!mlsys__coll_vordered(v, rn, node)) {
          int rt = v->node_tb[rn];
          return mlsys__coll_vfail(v, "gpu %d tb %d step %d (%s) overwrites %c[%d], which tb %d step %d may still be reading (no dependency)",
                                   g, t, s, tn, mlsys__coll_buf_chars[sp->dstbuf], slot, rt - v->c.tbase[g], rn - v->nbase[rt]);
        }
      }
      b->val[slot] = res[k];
      if (v->comb) memcpy(b->bits + (size_t)slot * nw, resb + (size_t)k * nw, (size_t)nw * sizeof(uint64_t));
      b->wr[slot] = node; b->rh[slot] = -1;
    }
  }
  if (mlsys__coll_op_sends(op)) {
    mlsys__coll_vmsg *nm;
    if (v->nmsgs == v->capmsgs) {
      int nc = v->capmsgs ? 2 * v->capmsgs : 64;
      mlsys__coll_vmsg *nv = (mlsys__coll_vmsg *)mlsys_realloc_array(v->msgs, (size_t)nc, sizeof *nv);
      if (!nv) return mlsys_set_error(MLSYS_ERR_NOMEM, "verify: out of memory");
      v->msgs = nv; v->capmsgs = nc;
    }
    nm = &v->msgs[v->nmsgs];
    nm->cnt = cnt; nm->node = node;
    nm->val = (int *)mlsys_alloc((size_t)cnt, sizeof(int));
    nm->bits = v->comb ? (uint64_t *)mlsys_alloc((size_t)cnt * nw, sizeof(uint64_t)) : NULL;
    if (!nm->val || (v->comb && !nm->bits)) { mlsys_free(nm->val); mlsys_free(nm->bits); return mlsys_set_error(MLSYS_ERR_NOMEM, "verify: out of memory"); }
    memcpy(nm->val, res, (size_t)cnt * sizeof(int));
    if (v->comb) memcpy(nm->bits, resb, (size_t)cnt * nw * sizeof(uint64_t));
    v->nmsgs++;
    if (mlsys__coll_conn_push(&v->c, v->c.sq[gt], v->nmsgs - 1)) return mlsys_set_error(MLSYS_ERR_NOMEM, "verify: out of memory");
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_coll_prog_verify(const mlsys_coll_def *d, const mlsys_coll_prog *p, char *msg, size_t msglen) {
  mlsys__coll_vs v;
  mlsys_status st;
  int N, C, n, ni, no, g, t, s, b, k, maxcnt = 1, progress, inpl, rbuf, rbase;
  char c1[64], c2[64];
  if (msg && msglen) msg[0] = 0;
  if (!d || !p) return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "verify: NULL collective or program");
  if ((st = mlsys__coll_prog_check(p, msg, msglen))) return st;
  N = d->nranks; C = d->chunkup; n = p->instances;
  if (p->kind != d->kind || p->ngpus != N)
    return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "verify: program (%s on %d gpus) does not match the collective (%s on %d ranks)",
                            mlsys_coll_kind_name(p->kind), p->ngpus, mlsys_coll_kind_name(d->kind), N);
  inpl = mlsys__coll_prog_inplace(p);
  mlsys__coll_prog_buf_sizes(d->kind, N, C, inpl, &ni, &no);
  for (g = 0; g < N; g++) {
    const mlsys_coll_gpu *gp = &p->gpus[g];
    if (gp->i_chunks != ni * n || gp->o_chunks != no * n)
      return mlsys__coll_fail(MLSYS_ERR_ARG, msg, msglen, "verify: gpu %d has %d input and %d output chunks; %s%s with %d ranks, chunkup %d and %d instance(s) needs %d and %d",
                              g, gp->i_chunks, gp->o_chunks, inpl ? "in-place " : "", mlsys_coll_kind_name(d->kind), N, C, n, ni * n, no * n);
    for (t = 0; t < gp->ntbs; t++)
      for (s = 0; s < gp->tbs[t].nsteps; s++) {
        const mlsys_coll_step *sp = &gp->tbs[t].steps[s];
        if (sp->cnt > maxcnt) maxcnt = sp->cnt;
        if (sp->depid >= 0 && !gp->tbs[sp->depid].steps[sp->deps].hasdep)
          return mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, msg, msglen, "gpu %d tb %d step %d depends on tb %d step %d, which does not set hasdep=1 (the runtime never signals it)",
                                  g, t, s, sp->depid, sp->deps);
      }
  }
  memset(&v, 0, sizeof v);
  v.p = p; v.d = d; v.n = n; v.nw = (N + 63) / 64; v.comb = d->combining; v.msg = msg; v.msglen = msglen;
  if ((st = mlsys__coll_conn_build(p, &v.c))) return st;
  st = MLSYS_ERR_NOMEM;
  v.nbase = (int *)mlsys_alloc((size_t)v.c.T + 1, sizeof(int));
  v.done = (int *)mlsys_calloc((size_t)v.c.T + 1, sizeof(int));
  v.known = (int **)mlsys_calloc((size_t)N, sizeof(int *));
  v.vb = (mlsys__coll_vbuf *)mlsys_calloc((size_t)N * 3, sizeof *v.vb);
  if (!v.nbase || !v.done || !v.known || !v.vb) goto out;
  v.nbase[0] = 0;
  for (g = 0; g < N; g++)
    for (t = 0; t < p->gpus[g].ntbs; t++) v.nbase[v.c.tbase[g] + t + 1] = v.nbase[v.c.tbase[g] + t] + p->gpus[g].tbs[t].nsteps;
  v.nnodes = v.nbase[v.c.T];
  v.node_tb = (int *)mlsys_alloc((size_t)v.nnodes + 1, sizeof(int));
  v.matched = (int *)mlsys_alloc((size_t)v.nnodes + 1, sizeof(int));
  v.stamp = (int *)mlsys_calloc((size_t)v.nnodes + 1, sizeof(int));
  v.stack = (int *)mlsys_alloc(3 * (size_t)v.nnodes + 1, sizeof(int));
  if (!v.node_tb || !v.matched || !v.stamp || !v.stack) goto out;
  for (t = 0; t < v.c.T; t++)
    for (k = v.nbase[t]; k < v.nbase[t + 1]; k++) { v.node_tb[k] = t; v.matched[k] = -1; }
  for (g = 0; g < N; g++) {
    int nt = p->gpus[g].ntbs;
    if (nt > 0 && nt <= 512) {
      v.known[g] = (int *)mlsys_calloc((size_t)nt * nt, sizeof(int));
      if (!v.known[g]) goto out;
    }
  }
  for (k = 0; k < 3; k++) {
    v.tv[k] = (int *)mlsys_alloc((size_t)maxcnt, sizeof(int));
    v.tbits[k] = (uint64_t *)mlsys_calloc((size_t)maxcnt * v.nw, sizeof(uint64_t));
    if (!v.tv[k] || !v.tbits[k]) goto out;
  }
  /* initial contents: inputs hold the rank's chunks (AG/A2A) or its own contribution of every chunk (RS/AR) */
  for (g = 0; g < N; g++)
    for (b = 0; b < 3; b++) {
      mlsys__coll_vbuf *vb = &v.vb[g * 3 + b];
      int u;
      vb->n = mlsys__coll_buf_chunks(&p->gpus[g], b);
      vb->val = (int *)mlsys_alloc((size_t)vb->n + 1, sizeof(int));
      vb->wr = (int *)mlsys_alloc((size_t)vb->n + 1, sizeof(int));
      vb->rh = (int *)mlsys_alloc((size_t)vb->n + 1, sizeof(int));
      vb->bits = v.comb ? (uint64_t *)mlsys_calloc((size_t)vb->n * v.nw + 1, sizeof(uint64_t)) : NULL;
      if (!vb->val || !vb->wr || !vb->rh || (v.comb && !vb->bits)) goto out;
      for (u = 0; u < vb->n; u++) {
        vb->wr[u] = -1; vb->rh[u] = -1; vb->val[u] = -1;
        if (inpl && d->kind == MLSYS_COLL_ALLGATHER) {
          if (b == MLSYS_COLL_BUF_OUT && u / (C * n) == g) vb->val[u] = u;   /* the rank's slice of its output */
          continue;
        }
        if (b != MLSYS_COLL_BUF_IN) continue;
        switch (d->kind) {
          case MLSYS_COLL_ALLGATHER: vb->val[u] = g * C * n + u; break;
          case MLSYS_COLL_ALLTOALL: vb->val[u] = g * N * C * n + u; break;
          default: vb->val[u] = u; vb->bits[(size_t)u * v.nw + g / 64] |= (uint64_t)1 << (g % 64); break;
        }
      }
    }
  /* run: every threadblock as far as it can go, until nothing moves */
  do {
    progress = 0;
    for (g = 0; g < N; g++)
      for (t = 0; t < p->gpus[g].ntbs; t++) {
        const mlsys_coll_tb *tb = &p->gpus[g].tbs[t];
        int gt = v.c.tbase[g] + t;
        while (v.done[gt] < tb->nsteps) {
          const mlsys_coll_step *sp = &tb->steps[v.done[gt]];
          if (sp->depid >= 0 && v.done[v.c.tbase[g] + sp->depid] <= sp->deps) break;
          if (mlsys__coll_op_recvs(sp->op) && !mlsys__coll_conn_pending(&v.c, v.c.rq[gt])) break;
          if ((st = mlsys__coll_vstep(&v, g, t))) goto out;
          v.done[gt]++;
          progress = 1;
        }
      }
  } while (progress);
  for (t = 0; t < v.c.T; t++)
    if (v.done[t] < v.nbase[t + 1] - v.nbase[t]) {
      char buf[1024];
      mlsys__coll_deadlock_msg(p, &v.c, v.done, buf, sizeof buf);
      st = mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, msg, msglen, "%s", buf);
      goto out;
    }
  for (k = 0; k < v.c.nq; k++)
    if (mlsys__coll_conn_pending(&v.c, k)) {
      int id = v.c.qv[k][v.c.qhead[k]], sn = v.msgs[id].node, stb = v.node_tb[sn];
      st = mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, msg, msglen, "unmatched send: gpu %d → gpu %d channel %d has %d message(s) nobody receives (first from tb %d step %d)",
                            v.c.keys[k].a, v.c.keys[k].b, v.c.keys[k].i, mlsys__coll_conn_pending(&v.c, k), stb - v.c.tbase[v.c.keys[k].a], sn - v.nbase[stb]);
      goto out;
    }
  /* post-conditions (§3.13): outputs hold the right sub-chunks, with all N contributions for RS/AR; in place, the
     output is the input buffer (from the rank's slice for RS) except for AG */
  mlsys__coll_buf_sizes(d->kind, N, C, &ni, &no);
  rbuf = inpl && d->kind != MLSYS_COLL_ALLGATHER ? MLSYS_COLL_BUF_IN : MLSYS_COLL_BUF_OUT;
  for (g = 0; g < N; g++) {
    mlsys__coll_vbuf *vb = &v.vb[g * 3 + rbuf];
    int u, ui;
    rbase = inpl && d->kind == MLSYS_COLL_REDUCESCATTER ? g * C * n : 0;
    for (ui = 0; ui < no * n; ui++) {
      int j = ui / n, want;
      u = rbase + ui;
      switch (d->kind) {
        case MLSYS_COLL_ALLGATHER: want = ui; break;
        case MLSYS_COLL_ALLTOALL: want = (((j / C) * N + g) * C + j % C) * n + ui % n; break;
        case MLSYS_COLL_REDUCESCATTER: want = g * C * n + ui; break;
        default: want = ui; break;
      }
      if (vb->val[u] != want) {
        st = mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, msg, msglen, "post-condition: gpu %d %c[%d] holds %s but should hold %s", g,
                              rbuf == MLSYS_COLL_BUF_IN ? 'i' : 'o', u,
                              mlsys__coll_vchunk(&v, vb->val[u], c1, sizeof c1), mlsys__coll_vchunk(&v, want, c2, sizeof c2));
        goto out;
      }
      if (v.comb) {
        int r, have = 0, miss = -1;
        for (r = 0; r < N; r++) {
          if (vb->bits[(size_t)u * v.nw + r / 64] >> (r % 64) & 1) have++;
          else if (miss < 0) miss = r;
        }
        if (have != N) {
          st = mlsys__coll_fail(MLSYS_ERR_INFEASIBLE, msg, msglen, "post-condition: gpu %d %c[%d] holds %d of the %d contributions to %s (rank %d's is missing)",
                                g, rbuf == MLSYS_COLL_BUF_IN ? 'i' : 'o', u, have, N, mlsys__coll_vchunk(&v, want, c1, sizeof c1), miss);
          goto out;
        }
      }
    }
  }
  st = MLSYS_OK;
out:
  if (st == MLSYS_ERR_NOMEM) mlsys__coll_fail(st, msg, msglen, "verify: out of memory");
  mlsys__coll_conn_free(&v.c);
  if (v.known) for (g = 0; g < N; g++) mlsys_free(v.known[g]);
  if (v.vb)
    for (k = 0; k < N * 3; k++) { mlsys_free(v.vb[k].val); mlsys_free(v.vb[k].wr); mlsys_free(v.vb[k].rh); mlsys_free(v.vb[k].bits); }
  for (k = 0; k < v.nmsgs; k++) { mlsys_free(v.msgs[k].val); mlsys_free(v.msgs[k].bits); }
  for (k = 0; k < 3; k++) { mlsys_free(v.tv[k]); mlsys_free(v.tbits[k]); }
  mlsys_free(v.msgs); mlsys_free(v.known); mlsys_free(v.vb); mlsys_free(v.nbase); mlsys_free(v.done); mlsys_free(v.node_tb);
  mlsys_free(v.matched); mlsys_free(v.stamp); mlsys_free(v.stack); mlsys_free(v.pool.v);
  return st;
}
MLSYS_DEF mlsys_status mlsys_coll_run_cpu(const mlsys_coll_prog *p, int dtype, int redop, void *const *in,
                                          void *const *out, size_t chunk_elems, uint64_t seed) {
  int N, C, r;
  size_t es = mlsys__coll_dtype_size(dtype), E = chunk_elems, nin, nout;
  void **w;
  mlsys_status st;
  if (!p || !p->gpus || !in || !out) return mlsys_set_error(MLSYS_ERR_ARG, "run_cpu: NULL program or buffer array");
  if (!(C = mlsys_coll_prog_chunkup(p)))
    return mlsys_set_error(MLSYS_ERR_ARG, "run_cpu: gpu 0's buffers (%d input, %d output chunks) fit no %s layout for %d gpus",
                           p->gpus[0].i_chunks, p->gpus[0].o_chunks, mlsys_coll_kind_name(p->kind), p->ngpus);
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "run_cpu: unknown dtype %d", dtype);
  N = p->ngpus;
  {
    /* the buffers given are the collective's: every gpu's program must use exactly that layout */
    int ni, no, n = p->instances, inpl = mlsys__coll_prog_inplace(p);
    mlsys__coll_prog_buf_sizes(p->kind, N, C, inpl, &ni, &no);
    for (r = 0; r < N; r++)
      if (p->gpus[r].i_chunks != ni * n || p->gpus[r].o_chunks != no * n)
        return mlsys_set_error(MLSYS_ERR_ARG, "run_cpu: gpu %d has %d input and %d output chunks, not the %d and %d of %s%s with chunkup %d",
                               r, p->gpus[r].i_chunks, p->gpus[r].o_chunks, ni * n, no * n, inpl ? "in-place " : "",
                               mlsys_coll_kind_name(p->kind), C);
  }
  if (!mlsys__coll_prog_inplace(p)) return mlsys_coll_exec_cpu(p, dtype, redop, in, out, chunk_elems, seed);
  nin = (p->kind == MLSYS_COLL_ALLGATHER ? (size_t)C : (size_t)N * C) * E;
  nout = (p->kind == MLSYS_COLL_REDUCESCATTER ? (size_t)C : (size_t)N * C) * E;
  for (r = 0; r < N; r++)
    if (!in[r] || !out[r]) return mlsys_set_error(MLSYS_ERR_ARG, "run_cpu: NULL buffer for rank %d", r);
  if (p->kind == MLSYS_COLL_ALLGATHER) {
    /* the output buffer is the working buffer; the rank's input goes to its slice */
    for (r = 0; r < N; r++) memcpy((char *)out[r] + (size_t)r * nin * es, in[r], nin * es);
    return mlsys_coll_exec_cpu(p, dtype, redop, out, out, chunk_elems, seed);
  }
  if (!(w = (void **)mlsys_calloc((size_t)N, sizeof *w))) return mlsys_set_error(MLSYS_ERR_NOMEM, "run_cpu: out of memory");
  st = MLSYS_OK;
  for (r = 0; r < N && !st; r++) {
    if (!(w[r] = mlsys_alloc(nin ? nin : 1, es))) st = mlsys_set_error(MLSYS_ERR_NOMEM, "run_cpu: out of memory");
    else memcpy(w[r], in[r], nin * es);
  }
  if (!st) st = mlsys_coll_exec_cpu(p, dtype, redop, w, w, chunk_elems, seed);
  for (r = 0; r < N && !st; r++)
    memcpy(out[r], (char *)w[r] + (p->kind == MLSYS_COLL_REDUCESCATTER ? (size_t)r * nout * es : 0), nout * es);
  for (r = 0; r < N; r++) mlsys_free(w[r]);
  mlsys_free(w);
  return st;
}

/* ---- CPU executor (spec §3.11 exec_cpu): each threadblock is a coroutine; at every step one threadblock that
   can progress (its dependency is done and, for a receive, its message has arrived) is picked at random (seeded),
   so repeated runs cover different legal interleavings. Sends copy into the connection's FIFO and never block. */
typedef struct { int cnt; void *data; } mlsys__coll_xmsg;

MLSYS_DEF mlsys_status mlsys_coll_exec_cpu(const mlsys_coll_prog *p, int dtype, int redop, void *const *in,
                                           void *const *out, size_t chunk_elems, uint64_t seed) {
  mlsys__coll_conn c;
  mlsys_status st;
  size_t es = mlsys__coll_dtype_size(dtype), E, sb;
  int g, t, k, nlive = 0;
  int *done = NULL, *live = NULL, *ready = NULL, *tgpu = NULL;
  void **scr = NULL;
  mlsys__coll_xmsg *msgs = NULL;
  int nmsgs = 0, capmsgs = 0;
  mlsys_rng rng;
  char buf[1024];
  if ((st = mlsys__coll_prog_check(p, buf, sizeof buf))) return st;
  if (!es) return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: unknown dtype %d", dtype);
  if (redop < 0 || redop > 3) return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: unknown reduction %d", redop);
  if (!in || !out) return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: NULL buffer array");
  if (chunk_elems == 0 || chunk_elems % (size_t)p->instances)
    return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: chunk_elems %zu is not a positive multiple of the %d instances", chunk_elems, p->instances);
  E = chunk_elems / (size_t)p->instances;   /* elements per program slot (sub-chunk) */
  if (E > ((size_t)1 << 40) / es) return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: chunk_elems %zu too large", chunk_elems);
  sb = E * es;
  for (g = 0; g < p->ngpus; g++)
    if ((p->gpus[g].i_chunks && !in[g]) || (p->gpus[g].o_chunks && !out[g]))
      return mlsys_set_error(MLSYS_ERR_ARG, "exec_cpu: NULL buffer for gpu %d", g);
  if ((st = mlsys__coll_conn_build(p, &c))) return st;
  st = MLSYS_ERR_NOMEM;
  done = (int *)mlsys_calloc((size_t)c.T + 1, sizeof(int));
  live = (int *)mlsys_alloc((size_t)c.T + 1, sizeof(int));
  ready = (int *)mlsys_alloc((size_t)c.T + 1, sizeof(int));
  tgpu = (int *)mlsys_alloc((size_t)c.T + 1, sizeof(int));
  scr = (void **)mlsys_calloc((size_t)p->ngpus, sizeof(void *));
  if (!done || !live || !ready || !tgpu || !scr) goto out;
  for (g = 0; g < p->ngpus; g++) {
    if (p->gpus[g].s_chunks) {
      scr[g] = mlsys_calloc((size_t)p->gpus[g].s_chunks, sb);
      if (!scr[g]) goto out;
    }
    for (t = 0; t < p->gpus[g].ntbs; t++) {
      tgpu[c.tbase[g] + t] = g;
      if (p->gpus[g].tbs[t].nsteps) live[nlive++] = c.tbase[g] + t;
    }
  }
  mlsys_rng_seed(&rng, seed);
  while (nlive > 0) {
    int nready = 0, pick, gt, tl, op, cnt;
    const mlsys_coll_gpu *gp;
    const mlsys_coll_tb *tb;
    const mlsys_coll_step *sp;
    char *bases[3], *src, *dst;
    mlsys__coll_xmsg m;
    m.cnt = 0; m.data = NULL;
    for (k = 0; k < nlive; k++) {
      int x = live[k], gx = tgpu[x];
      const mlsys_coll_tb *tx = &p->gpus[gx].tbs[x - c.tbase[gx]];
      const mlsys_coll_step *sx = &tx->steps[done[x]];
      if (sx->depid >= 0 && done[c.tbase[gx] + sx->depid] <= sx->deps) continue;
      if (mlsys__coll_op_recvs(sx->op) && !mlsys__coll_conn_pending(&c, c.rq[x])) continue;
      ready[nready++] = k;
    }
    if (!nready) {
      mlsys__coll_deadlock_msg(p, &c, done, buf, sizeof buf);
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "exec_cpu: %s", buf);
      goto out;
    }
    pick = ready[mlsys_rng_below(&rng, (uint64_t)nready)];
    gt = live[pick]; g = tgpu[gt]; tl = gt - c.tbase[g];
    gp = &p->gpus[g]; tb = &gp->tbs[tl]; sp = &tb->steps[done[gt]];
    op = sp->op; cnt = sp->cnt;
    bases[0] = (char *)in[g]; bases[1] = (char *)out[g]; bases[2] = (char *)scr[g];
    src = bases[sp->srcbuf] + (size_t)(sp->srcoff > 0 ? sp->srcoff : 0) * sb;
    dst = bases[sp->dstbuf] + (size_t)(sp->dstoff > 0 ? sp->dstoff : 0) * sb;
    if (mlsys__coll_op_recvs(op)) {
      int id = mlsys__coll_conn_pop(&c, c.rq[gt]);
      m = msgs[id];
      msgs[id].data = NULL;   /* the step owns the payload now */
      if (m.cnt != cnt) {
        mlsys_free(m.data);
        st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "exec_cpu: count mismatch: gpu %d tb %d step %d (%s) receives %d chunk(s), the matching send sent %d",
                             g, tl, done[gt], mlsys__coll_op_names[op], cnt, m.cnt);
        goto out;
      }
    }
    switch (op) {
      case MLSYS_COLL_OP_SEND:
        m.cnt = cnt; m.data = mlsys_alloc((size_t)cnt, sb);
        if (!m.data) goto out;
        memcpy(m.data, src, (size_t)cnt * sb);
        break;
      case MLSYS_COLL_OP_RECV: memcpy(dst, m.data, (size_t)cnt * sb); break;
      case MLSYS_COLL_OP_RCS: memcpy(dst, m.data, (size_t)cnt * sb); break;
      case MLSYS_COLL_OP_RRS: mlsys__coll_reduce_elems(m.data, m.data, src, (size_t)cnt * E, dtype, redop); break;
      case MLSYS_COLL_OP_RRC: mlsys__coll_reduce_elems(dst, m.data, src, (size_t)cnt * E, dtype, redop); break;
      case MLSYS_COLL_OP_RRCS:
        mlsys__coll_reduce_elems(m.data, m.data, src, (size_t)cnt * E, dtype, redop);
        memcpy(dst, m.data, (size_t)cnt * sb);
        break;
      case MLSYS_COLL_OP_COPY: memmove(dst, src, (size_t)cnt * sb); break;
      case MLSYS_COLL_OP_REDUCE: mlsys__coll_reduce_elems(dst, dst, src, (size_t)cnt * E, dtype, redop); break;
      default: break;
    }
    if (mlsys__coll_op_sends(op)) {
      if (nmsgs == capmsgs) {
        int nc = capmsgs ? 2 * capmsgs : 64;
        mlsys__coll_xmsg *nv = (mlsys__coll_xmsg *)mlsys_realloc_array(msgs, (size_t)nc, sizeof *nv);
        if (!nv) { mlsys_free(m.data); goto out; }
        msgs = nv; capmsgs = nc;
      }
      msgs[nmsgs++] = m;
      if (mlsys__coll_conn_push(&c, c.sq[gt], nmsgs - 1)) goto out;
    } else if (m.data) {
      mlsys_free(m.data);
    }
    if (++done[gt] == tb->nsteps) live[pick] = live[--nlive];
  }
  for (k = 0; k < c.nq; k++)
    if (mlsys__coll_conn_pending(&c, k)) {
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "exec_cpu: unmatched send: gpu %d → gpu %d channel %d has %d message(s) nobody receives",
                           c.keys[k].a, c.keys[k].b, c.keys[k].i, mlsys__coll_conn_pending(&c, k));
      goto out;
    }
  st = MLSYS_OK;
out:
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "exec_cpu: out of memory");
  for (k = 0; k < nmsgs; k++) mlsys_free(msgs[k].data);
  mlsys_free(msgs);
  if (scr) for (g = 0; g < p->ngpus; g++) mlsys_free(scr[g]);
  mlsys_free(scr); mlsys_free(done); mlsys_free(live); mlsys_free(ready); mlsys_free(tgpu);
  mlsys__coll_conn_free(&c);
  return st;
}


#ifdef __cplusplus
}
#endif
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION_DONE */
#endif /* MLSYS_COLLECTIVE_IMPLEMENTATION */
