/* mlsys_offload.h — DyNN-Offload: learned CPU<->GPU tensor offloading for dynamic networks, with DTR, UVM,
   ZeRO-Offload and plain PyTorch as baselines.                                                     MIT licence.

   Implements DyNN-Offload (J. Ren, D. Xu, S. Yang, J. Zhao, Z. Li, C. Navasca, C. Wang, G. Xu, D. Li, "Enabling
   Large Dynamic Neural Network Training with Learning-based Memory Management", HPCA 2024); the guide is
   docs/offload.md in the mlsys repository. The DTR baseline follows Kirisame et al., "Dynamic Tensor
   Rematerialization" (ICLR 2021) and the rules of its public prototype (uwsampl/dtr-prototype).

   A dynamic network (Tree-LSTM, MoE, variable depth) runs a different operator sequence for every sample, so the
   profile-guided offloading used for static networks does not apply. DyNN-Offload describes every operator by a
   9-number idiom signature (counts of transpose, gather, scatter, reduction, stream and stencil, plus the summed
   input sizes along three axes), describes the network's static program by the matrix of those rows (the AFM),
   and trains a small pilot MLP that predicts, per sample, how the resolved operator stream splits into execution
   blocks (one 10-vector per block). GPU memory is split into a work and a migration buffer: while block i+1
   computes, block i's dirty tensors are evicted and block i+2's are prefetched.

   CONTENTS
     1. Idioms: the catalogue (op type -> idiom counts), 9-element signatures, the AFM of a static program with
        branches and loops.
     2. Traces: one executed iteration (operators with times, inputs, outputs, workspace; tensors with bytes and
        kind); a builder, our JSON-lines format (read/write), and the DTR prototype's operator logs (through
        mlsys_remat.h's reader: one DTR parser in the project).
     3. Hardware description and the partition of a trace into execution blocks: the exact dynamic program over the
        double-buffer cost model (the seed's Sentinel stand-in) and the three even-split heuristics; block labels
        (the pilot's 10-vectors).
     4. Simulators (discrete events, CPU only, one trace, one hardware description): DyNN-Offload's double buffer,
        plain PyTorch.

   USAGE: in exactly one .c file
       #define MLSYS_OFFLOAD_IMPLEMENTATION   // with MLSYS_COMMON_IMPLEMENTATION and MLSYS_REMAT_IMPLEMENTATION,
       #include "mlsys_offload.h"             // or MLSYS_IMPLEMENTATION for every header
   It includes mlsys_remat.h (the DTR-trace reader) and mlsys_common.h; link as for those (-llpsolve55 -lcolamd
   -ldl -lm -lpthread).

   EXAMPLE (examples/offload_basics.c)
       mlsys_offload_trace tr;
       mlsys_offload_trace_read_file("treelstm.log", MLSYS_OFFLOAD_FMT_AUTO, &tr);   // a DTR log or our format
       mlsys_offload_hw hw = {0};
       hw.gpu_bytes = mlsys_offload_peak_bytes(&tr) / 2;                           // half the peak
       mlsys_offload_simres r;
       mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &r);
       printf("%.1f ms, %.1f ms exposed migration\n", r.time_us / 1e3, r.migration_us / 1e3);
       mlsys_offload_trace_free(&tr);

   ERRORS: every function that can fail returns an mlsys_status and sets mlsys_last_error() to a sentence naming the
   problem ("trace.jsonl:12: op 7 reads tensor 40, but the trace has 32 tensors"). A policy that cannot run a
   trace in the memory given (PyTorch above its peak, a block larger than DyNN-Offload's half buffer) is not an
   error: the result says feasible = 0 and why.

   NOT DONE (this version): the pilot model, the mapper from block vectors to a branch path, the DTR, UVM and
   ZeRO-Offload simulators, the CUDA runtime and the `mlsys offload` command are the next steps of docs/offload.md.
*/
#ifndef MLSYS_OFFLOAD_H
#define MLSYS_OFFLOAD_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_OFFLOAD_IMPLEMENTATION
#define MLSYS_OFFLOAD_IMPLEMENTATION
#endif
#endif
#include "mlsys_remat.h"
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================================
   1. Idioms, signatures, static programs, AFM
   ================================================================================================================ */
/* The six idioms, in the seed's order (Fig. 4): transpose A_ij = B_ji, gather A_ij = B_{C_ij}, scatter
   B_{C_ij} = A_ij, reduction a += A_ij, stream A_ij = A_ij + B_ij, stencil A_ij = A_(i-1)j + A_(i+1)j. */
enum {
  MLSYS_OFFLOAD_TRANSPOSE, MLSYS_OFFLOAD_GATHER, MLSYS_OFFLOAD_SCATTER, MLSYS_OFFLOAD_REDUCTION,
  MLSYS_OFFLOAD_STREAM, MLSYS_OFFLOAD_STENCIL, MLSYS_OFFLOAD_NIDIOM
};

/* An operator's signature: idiom counts, then dim[k] = Σ over its inputs of their size along axis k (rank-1 inputs
   give dim[0] only; for rank > 3 dim[2] is the product of the trailing axes, so it still tracks volume; scalars
   give nothing). Fig. 3: matmul((3,4),(4,5)) = [1,0,0,1,1,0, 7,9,0]. A control-flow row is all zero. */
typedef struct {
  int32_t idiom[MLSYS_OFFLOAD_NIDIOM];
  int64_t dim[3];
} mlsys_offload_sig;

typedef struct {
  const char *op;                          /* canonical name (ONNX spelling) */
  uint8_t idiom[MLSYS_OFFLOAD_NIDIOM];
} mlsys_offload_idiom;

#define MLSYS_OFFLOAD_CATALOG_VERSION 1      /* bump when the table changes (labels and pilots depend on it) */

/* The built-in catalogue (docs/offload.md has its derivation); *n receives its length. */
MLSYS_DEF const mlsys_offload_idiom *mlsys_offload_catalog(int *n);
/* Index of an op type in the catalogue, or -1. Matching ignores case, "_" and "." and a framework prefix
   ("aten::", "torch."), and knows PyTorch's and ONNX's spellings of the same operator (mm, addmm, linear ->
   MatMul; convolution -> Conv; ...). */
MLSYS_DEF int mlsys_offload_catalog_find(const char *op);
/* Idiom counts of an op type: the catalogue's, or for a backward operator ("...Backward", "..._backward") twice
   its forward's (the gradient of each input repeats the forward's loops: MatMulBackward = 2x MatMul). Returns 0 and
   leaves idiom untouched for an unknown op. */
MLSYS_DEF int mlsys_offload_op_idioms(const char *op, int32_t idiom[MLSYS_OFFLOAD_NIDIOM]);
/* The signature of op applied to n_in inputs of the given shapes (shapes[i][0..ranks[i])). MLSYS_ERR_ARG for an
   unknown op (named) or a negative size. */
MLSYS_DEF mlsys_status mlsys_offload_sig_of(const char *op, int n_in, const int64_t *const *shapes, const int *ranks,
                                            mlsys_offload_sig *out);
MLSYS_DEF void mlsys_offload_sig_add(mlsys_offload_sig *acc, const mlsys_offload_sig *x);
MLSYS_DEF int mlsys_offload_sig_equal(const mlsys_offload_sig *a, const mlsys_offload_sig *b);

/* A static DyNN program (the network's script after static analysis): a tree of OP, SEQ, BRANCH (if/else or
   switch: exactly one alternative runs) and LOOP (the body runs loop_min..loop_max times; loop_max < 0 = no bound)
   nodes, children in program order. Built with the mlsys_offload_prog_* calls; nodes refer to children by id. */
typedef enum { MLSYS_OFFLOAD_PN_OP, MLSYS_OFFLOAD_PN_SEQ, MLSYS_OFFLOAD_PN_BRANCH, MLSYS_OFFLOAD_PN_LOOP } mlsys_offload_pn_kind;
typedef struct {
  int kind;                                /* mlsys_offload_pn_kind */
  mlsys_offload_sig sig;                   /* OP */
  int first_child, n_child;                /* into prog.child[] */
  int loop_min, loop_max;                  /* LOOP */
} mlsys_offload_pnode;
typedef struct {
  mlsys_offload_pnode *node;
  int n_node, cap_node, root;              /* root: -1 until set (the last node added is the default) */
  int *child;
  int n_child, cap_child;
  int nn_type;                             /* 0 CNN, 1 RNN/LSTM, 2 transformer/evoformer */
} mlsys_offload_prog;

MLSYS_DEF void mlsys_offload_prog_init(mlsys_offload_prog *p, int nn_type);
MLSYS_DEF void mlsys_offload_prog_free(mlsys_offload_prog *p);
/* Each returns the new node's id, or -1 (out of memory or a bad child id: mlsys_last_error says which). */
MLSYS_DEF int mlsys_offload_prog_op(mlsys_offload_prog *p, const mlsys_offload_sig *sig);
MLSYS_DEF int mlsys_offload_prog_seq(mlsys_offload_prog *p, int n, const int *children);
MLSYS_DEF int mlsys_offload_prog_branch(mlsys_offload_prog *p, int n, const int *alternatives);
MLSYS_DEF int mlsys_offload_prog_loop(mlsys_offload_prog *p, int body, int loop_min, int loop_max);
/* The AFM: one row per OP node in program order, an all-zero row at each BRANCH and LOOP statement (before the
   rows of its alternatives or body; a loop body appears once, as its static occurrence). rows may be NULL to count;
   MLSYS_ERR_TOO_BIG when more than cap rows. */
MLSYS_DEF mlsys_status mlsys_offload_afm(const mlsys_offload_prog *p, mlsys_offload_sig *rows, int cap, int *n_rows);

/* ================================================================================================================
   2. Traces
   ================================================================================================================ */
typedef enum {
  MLSYS_OFFLOAD_T_PARAM,    /* weights: alive across iterations, updated by the optimizer */
  MLSYS_OFFLOAD_T_INPUT,    /* the sample: read-only */
  MLSYS_OFFLOAD_T_ACT,      /* activations (saved for backward or not) */
  MLSYS_OFFLOAD_T_GRAD,     /* gradients */
  MLSYS_OFFLOAD_T_OPT,      /* optimizer state: alive across iterations */
  MLSYS_OFFLOAD_T_TEMP,     /* temporaries */
  MLSYS_OFFLOAD_T_N_
} mlsys_offload_tkind;

typedef struct {
  int64_t bytes;
  int kind;                 /* mlsys_offload_tkind */
} mlsys_offload_tensor;

typedef struct {
  int name;                 /* index into trace.names */
  mlsys_offload_sig sig;
  double time_us;           /* kernel time */
  int in0, n_in;            /* inputs: trace.ids[in0 .. in0+n_in) */
  int out0, n_out;          /* outputs (written): trace.ids[out0 .. out0+n_out) */
  int64_t workspace;        /* scratch bytes alive during the op only */
  int afm_row;              /* row of the static program's AFM this op instantiates, -1 if none */
  int is_bwd;               /* 1 in the backward pass or the optimizer step */
} mlsys_offload_op;

/* One executed iteration. Tensors that no op writes (weights, the sample, optimizer state) exist before the first
   op; a tensor is alive from its first write to its last access, and PARAM and OPT tensors to the end (the next
   iteration needs them). An op may write a tensor it also reads (an in-place update). */
typedef struct {
  mlsys_offload_op *op;
  int n_op, cap_op;
  mlsys_offload_tensor *t;
  int n_t, cap_t;
  int32_t *ids;
  long n_ids, cap_ids;
  char **names;             /* distinct op names */
  int n_names, cap_names;
  char *name;               /* the trace's name (file name) or NULL */
  int64_t fixed_bytes;      /* memory outside the tensors (DTR's constants and values alive at START): resident on
                               the GPU under every policy */
} mlsys_offload_trace;

MLSYS_DEF void mlsys_offload_trace_init(mlsys_offload_trace *tr);
MLSYS_DEF void mlsys_offload_trace_free(mlsys_offload_trace *tr);
/* Add a tensor; returns its id or -1 (bytes < 0: MLSYS_ERR_ARG, or out of memory). */
MLSYS_DEF int mlsys_offload_trace_tensor(mlsys_offload_trace *tr, int64_t bytes, mlsys_offload_tkind kind);
/* Add an op that reads in[0..n_in) and writes out[0..n_out) (tensor ids already added). sig NULL: the op type's
   idioms with zero dims. Returns the op's index or -1 (a bad tensor id, negative time: MLSYS_ERR_ARG). */
MLSYS_DEF int mlsys_offload_trace_op(mlsys_offload_trace *tr, const char *name, double time_us, int n_in,
                                     const int *in, int n_out, const int *out, int64_t workspace,
                                     const mlsys_offload_sig *sig);
MLSYS_DEF const char *mlsys_offload_op_name(const mlsys_offload_trace *tr, int op);

typedef enum { MLSYS_OFFLOAD_FMT_AUTO, MLSYS_OFFLOAD_FMT_MLSYS, MLSYS_OFFLOAD_FMT_DTR } mlsys_offload_fmt;
/* Our format: JSON lines. First {"mlsys_offload_trace": 1, "name": ..., "fixed_bytes": N}; then tensors
   {"t": id, "bytes": N, "kind": "param|input|act|grad|opt|temp"} with ids 0, 1, 2, ... in order, then ops
   {"op": "MatMul", "us": 1.5, "in": [ids], "out": [ids], "ws": N, "sig": [9 numbers], "row": r, "bwd": 0|1}
   ("ws", "sig", "row", "bwd" optional). source names the text in errors ("file:line: ..."). */
MLSYS_DEF mlsys_status mlsys_offload_trace_read(const char *text, size_t len, const char *source,
                                                mlsys_offload_fmt fmt, mlsys_offload_trace *tr);
MLSYS_DEF mlsys_status mlsys_offload_trace_read_file(const char *path, mlsys_offload_fmt fmt, mlsys_offload_trace *tr);
MLSYS_DEF mlsys_status mlsys_offload_trace_write(FILE *f, const mlsys_offload_trace *tr);
/* A DTR prototype log (JSON lines CONSTANT/MEMORY/CALL/...), read by mlsys_remat_import_dtr: one op per node
   (TIME ns -> µs), its inputs the node's dependencies, one tensor per node (kind ACT before the backward marker,
   GRAD after; views are 0 bytes); the trace's constants and values alive at START are fixed_bytes. The log keeps
   no per-constant sizes, so weights cannot be offloaded from a DTR trace: they stay resident under every policy. */
MLSYS_DEF mlsys_status mlsys_offload_trace_from_dtr(const char *text, size_t len, const char *source,
                                                    mlsys_offload_trace *tr);

/* Facts every policy shares. */
typedef struct {
  int *first_write;         /* [n_t] op index, or -1: present before the first op */
  int *last_use;            /* [n_t] last op that reads or writes it, or -1 if none; n_op for PARAM/OPT and for a
                               gradient nothing reads (a result of the iteration) */
  unsigned char *read;      /* [n_t] some op reads it */
  int64_t persistent_bytes; /* PARAM + OPT + INPUT + never-written tensors (+ fixed_bytes) */
  int64_t peak_bytes;       /* everything resident (PyTorch): persistent + max over ops of live others + workspace */
  int peak_op;              /* where that peak is reached */
  double compute_us;        /* Σ op times */
} mlsys_offload_facts;
MLSYS_DEF mlsys_status mlsys_offload_trace_facts(const mlsys_offload_trace *tr, mlsys_offload_facts *f);
MLSYS_DEF void mlsys_offload_facts_free(mlsys_offload_facts *f);
MLSYS_DEF int64_t mlsys_offload_peak_bytes(const mlsys_offload_trace *tr);   /* facts.peak_bytes, -1 on error */

/* ================================================================================================================
   3. Hardware and partitions
   ================================================================================================================ */
/* Zero means the default for every field but gpu_bytes. Bandwidths in GB/s (1e9 bytes/s); INFINITY allowed. */
typedef struct {
  int64_t gpu_bytes;        /* GPU memory capacity (required) */
  double reserve_frac;      /* kept out of the two buffers for on-demand fetches and slack: 0.05 */
  double h2d_gbps, d2h_gbps;/* PCIe each way: 12 (PCIe 3.0 x16, the seed's platform); 24 PCIe 4, 50 PCIe 5 */
  double d2d_gbps;          /* on-GPU copies: 1500 */
  double lat_us;            /* per copy (cudaMemcpyAsync): 10; negative = none */
  int overlap_evict_prefetch;   /* 0 (the seed): eviction, then prefetch, on one engine; 1: both at once */
} mlsys_offload_hw;

typedef enum {
  MLSYS_OFFLOAD_PART_DP,          /* the exact dynamic program (minimum modelled iteration time) */
  MLSYS_OFFLOAD_PART_EVEN_OPS,    /* k blocks of ⌈n/k⌉ ops */
  MLSYS_OFFLOAD_PART_EVEN_TIME,   /* cut where cumulative time reaches j·Σc/k */
  MLSYS_OFFLOAD_PART_EVEN_BYTES   /* cut where cumulative accessed bytes reach j·Σ/k */
} mlsys_offload_part_kind;

typedef struct {
  int kind;                 /* mlsys_offload_part_kind */
  int k;                    /* heuristics: the number of blocks (required); DP: ignored */
  int k_max;                /* DP: at most this many blocks (0: no limit) */
  int max_groups;           /* DP: consecutive ops are merged into at most this many groups first: 512 (≈ 2e7
                               steps); with k_max, 128 */
} mlsys_offload_part_opts;

/* A partition into execution blocks: block j is ops [start[j], start[j+1]), start[k] = n_op. */
typedef struct {
  int k;
  int *start;               /* [k+1] */
  double time_us;           /* modelled iteration time (the DP's objective, below) */
  double compute_us;
  int64_t buf_bytes;        /* each of the two buffers */
  int split_extra;          /* heuristics: blocks added because an even block did not fit a buffer */
} mlsys_offload_blocks;

/* The cost model (the DP's objective). Block B: c(B) = Σ op times; T(B) = tensors it reads or writes; ws(B) =
   Σ_T(B) bytes + Σ workspace ≤ C_buf = ⌊(gpu_bytes − fixed_bytes)·(1 − reserve)/2⌋; in(B) = bytes of T(B) not first written
   inside B (brought in); ev(B) = bytes written in B and still needed after it (facts.last_use at or past B's end):
   dirty and live, so copied out (clean or dead ones are dropped); m(B) = in/BW_h2d + ev/BW_d2h + lat·copies
   (max of the two directions when they overlap). T = m(B_1) + Σ_{i<K} max(c(B_i), m(B_{i+1})) + c(B_K).
   Returns INFINITY when some block does not fit C_buf. start has k+1 entries. */
MLSYS_DEF double mlsys_offload_plan_time(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                         const int *start, int k);
/* Partition the trace. MLSYS_ERR_INFEASIBLE when one op's own tensors do not fit a buffer (named). */
MLSYS_DEF mlsys_status mlsys_offload_partition(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                               const mlsys_offload_part_opts *o, mlsys_offload_blocks *out);
MLSYS_DEF void mlsys_offload_blocks_free(mlsys_offload_blocks *b);
/* Per block of a partition, the cost model's terms (out has b->k entries). */
typedef struct {
  double compute_us, migration_us;   /* c(B), m(B) */
  int64_t ws_bytes, in_bytes, evict_bytes;
  int n_in, n_evict;                 /* tensors copied in / out */
} mlsys_offload_block_cost;
MLSYS_DEF mlsys_status mlsys_offload_blocks_costs(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                  const mlsys_offload_blocks *b, mlsys_offload_block_cost *out);
/* The pilot's label: row j = [#ops in block j (plus the control-flow rows the trace marks, none here), Σ of their
   signatures]; rows k..k_max-1 zero. label has k_max*10 floats; blocks past k_max are added into the last row. */
MLSYS_DEF void mlsys_offload_blocks_label(const mlsys_offload_trace *tr, const mlsys_offload_blocks *b, int k_max,
                                          float *label);

/* ================================================================================================================
   4. Simulators
   ================================================================================================================ */
typedef enum {
  MLSYS_OFFLOAD_POLICY_PYTORCH,   /* everything resident; OOM above capacity */
  MLSYS_OFFLOAD_POLICY_DYNN,      /* DyNN-Offload's double buffer on the DP partition */
  MLSYS_OFFLOAD_POLICY_DTR,       /* rematerialisation (h_DTR^eq, √n sampling) */
  MLSYS_OFFLOAD_POLICY_UVM,       /* unified memory, page faults, no prefetch */
  MLSYS_OFFLOAD_POLICY_ZERO,      /* ZeRO-Offload: optimizer state and step on the CPU */
  MLSYS_OFFLOAD_POLICY_N_
} mlsys_offload_policy;
MLSYS_DEF const char *mlsys_offload_policy_name(int policy);   /* "pytorch", "dynn", "dtr", "uvm", "zero" */
MLSYS_DEF int mlsys_offload_policy_find(const char *name);     /* -1 if unknown */

typedef struct {
  int feasible;             /* 0: the policy cannot run this trace in this memory (why says so) */
  char why[160];
  double time_us;           /* iteration time */
  double compute_us;        /* Σ kernel time once */
  double migration_us;      /* exposed copy time (on-demand fetches included) */
  double recompute_us;      /* rematerialisation (DTR) */
  double other_us;          /* CPU-side work on the critical path (ZeRO's optimizer step) */
  int64_t bytes_h2d, bytes_d2h;
  int64_t peak_bytes;       /* GPU bytes at the peak (never above gpu_bytes when feasible) */
  int n_blocks, n_faults, n_evictions, n_remat;
  int64_t bytes_d2d;        /* DyNN-Offload: tensors carried from one buffer to the other on the GPU */
} mlsys_offload_simres;

/* DyNN-Offload on a given partition (events: a compute engine and one copy engine, or an H2D and a D2H engine
   when overlap_evict_prefetch): block k+1's prefetch and block k-1's eviction run while block k computes; block
   k+1 starts when both it and its prefetch are done. plan NULL: a trace that fits the GPU runs resident (no
   offloading; mlsys_offload_simulate does this too), one that does not is an error. */
MLSYS_DEF mlsys_status mlsys_offload_sim_dynn(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                              const mlsys_offload_blocks *plan, mlsys_offload_simres *r);
MLSYS_DEF mlsys_status mlsys_offload_sim_pytorch(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                 mlsys_offload_simres *r);
/* One policy with its defaults (DyNN-Offload: the DP partition, then sim_dynn). */
MLSYS_DEF mlsys_status mlsys_offload_simulate(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int policy,
                                              mlsys_offload_simres *r);

/* ================================================================================================================
   5. Generated DyNN traces
   ================================================================================================================ */
/* Operator times from an analytic GPU: max(flops / rate, bytes / bandwidth) + launch. Zero fields: 15 TFLOP/s
   (fp32, an A100-class GPU at realistic efficiency), 900 GB/s, 4 µs per kernel, 4-byte elements. */
typedef struct {
  double tflops, hbm_gbps, launch_us;
  int elem_bytes;
} mlsys_offload_gpu_model;

/* A tree (a sentence's constituency parse): parent[i] of node i (-1 for the root), nodes numbered so that every
   child comes after its parent; leaves are nodes without children. */
typedef struct {
  int n;
  int *parent;
} mlsys_offload_tree;
MLSYS_DEF void mlsys_offload_tree_free(mlsys_offload_tree *t);
/* Every bracketed tree in text ("(S (NP the dog.n) (VP ran.v))", as link-parser prints with !constituents=1; other
   lines are skipped): *trees (free each and the array) and *n. MLSYS_ERR_PARSE "source:line: ..." for unbalanced
   brackets. */
MLSYS_DEF mlsys_status mlsys_offload_trees_parse(const char *text, size_t len, const char *source,
                                                 mlsys_offload_tree **trees, int *n);

/* One training iteration, forward then the mirrored backward (each forward op's gradient op reads its output's
   gradient and its saved inputs and writes its inputs' gradients; a weight used many times accumulates one gradient
   in place) then one SGD update per weight. Weights are PARAM, the sample's embeddings INPUT.
     treelstm: child-sum Tree-LSTM (Tai et al. 2015) over each tree of the batch (one after another, shared weights):
               a leaf embeds its word (Gather) and runs the input gates; an inner node sums its children's h, runs
               one forget gate per child and the cell; the root classifies (MatMul, Softmax).
     varlstm:  an LSTM over each document of the batch, lengths[i] steps each, then a classifier.
     varbert:  a transformer encoder of `layers` layers over batch x seq_len tokens (attention, two layer norms, a
               4x feed-forward), then a classifier; depth and length are the dynamic part.
     moe:      `layers` transformer layers whose feed-forward is a mixture of `experts` experts with top-k routing:
               which experts run, and on how many tokens, is drawn per layer from seed (the input-dependent part). */
MLSYS_DEF mlsys_status mlsys_offload_gen_treelstm(const mlsys_offload_tree *trees, int n_trees, int in_dim, int hidden,
                                                  const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr);
MLSYS_DEF mlsys_status mlsys_offload_gen_varlstm(const int *lengths, int batch, int in_dim, int hidden,
                                                 const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr);
MLSYS_DEF mlsys_status mlsys_offload_gen_varbert(int layers, int batch, int seq_len, int hidden,
                                                 const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr);
MLSYS_DEF mlsys_status mlsys_offload_gen_moe(int layers, int experts, int top_k, int tokens, int hidden, uint64_t seed,
                                             const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr);

/* A generated network at a given batch size, for max-batch searches (the models of mlsys_offload_gen_*). */
typedef struct {
  const char *model;                 /* "treelstm", "varlstm", "varbert", "moe" */
  const mlsys_offload_tree *trees;   /* treelstm: the sentences (batch b uses trees 0..b-1, cycling); varlstm: each
                                        document is 16 sentences, its length their leaf count */
  int n_trees;
  int in_dim, hidden;                /* 0: 300, 150 (treelstm, varlstm), 1024 (varbert), 512 (moe) */
  int layers, seq_len;               /* varbert / moe: 0: 24, 512 */
  int experts, top_k;                /* moe: 0: 16, 2 */
  uint64_t seed;
  const mlsys_offload_gpu_model *gpu;
} mlsys_offload_model_desc;
MLSYS_DEF mlsys_status mlsys_offload_gen_batch(const mlsys_offload_model_desc *m, int batch, mlsys_offload_trace *tr);

/* The largest batch each policy trains in hw->gpu_bytes with time per sample at most (1 + overhead_cap) times
   PyTorch's time per sample at PyTorch's own largest batch (the seed's 200 % cap: overhead_cap 2; 0 = 2). The search
   doubles the batch while it still runs, keeping the last that passed, then bisects up to the next that failed (up
   to batch_limit, 0 = 4096): it assumes no batch between a failure and the next success once one has passed.
   batch[p] = 0: no batch passed. */
typedef struct {
  int batch[MLSYS_OFFLOAD_POLICY_N_];
  double us_per_sample[MLSYS_OFFLOAD_POLICY_N_];   /* at that batch */
  int pytorch_batch;
  double cap_us_per_sample;
  int evaluations;                                 /* traces generated and simulated */
} mlsys_offload_max_batch_result;
MLSYS_DEF mlsys_status mlsys_offload_max_batch(const mlsys_offload_model_desc *m, const mlsys_offload_hw *hw,
                                               double overhead_cap, int batch_limit, mlsys_offload_max_batch_result *out);

/* (development: the parts below are being written beside this file and are inlined before release) */
#include "offload_frag/dtr_api.h"
#include "offload_frag/uvm_zero_api.h"
#include "offload_frag/pilot_api.h"

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_OFFLOAD_H */

/* ================================================================================================================
   IMPLEMENTATION
   ================================================================================================================ */
#ifdef MLSYS_OFFLOAD_IMPLEMENTATION
#ifndef MLSYS_OFFLOAD_IMPLEMENTATION_DONE
#define MLSYS_OFFLOAD_IMPLEMENTATION_DONE
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

/* ================================================================================================================
   1. Idioms, signatures, programs, AFM
   ================================================================================================================ */
/* The catalogue of spec §3.1 (our derivation; the authors' per-operator table is a PDF that is not public text).
   Order T, G, Sc, R, St, Sn. */
static const mlsys_offload_idiom mlsys__offload_cat[] = {
    {"MatMul", {1, 0, 0, 1, 1, 0}},        {"Conv", {0, 0, 0, 1, 1, 1}},
    {"ConvTranspose", {1, 0, 0, 1, 1, 1}}, {"Add", {0, 0, 0, 0, 1, 0}},
    {"Softmax", {0, 0, 0, 2, 2, 0}},       {"LayerNorm", {0, 0, 0, 2, 2, 0}},
    {"ReduceSum", {0, 0, 0, 1, 0, 0}},     {"MaxPool", {0, 0, 0, 1, 0, 1}},
    {"Transpose", {1, 0, 0, 0, 0, 0}},     {"Reshape", {0, 0, 0, 0, 0, 0}},
    {"Gather", {0, 1, 0, 0, 0, 0}},        {"ScatterND", {0, 0, 1, 0, 0, 0}},
    {"Concat", {0, 0, 0, 0, 1, 0}},        {"LSTMCell", {1, 0, 0, 2, 9, 0}},
    {"GRUCell", {1, 0, 0, 2, 7, 0}},       {"Attention", {2, 0, 0, 4, 4, 0}},
    {"Adam", {0, 0, 0, 0, 6, 0}},          {"SGD", {0, 0, 0, 0, 1, 0}},
    {"TopK", {0, 1, 0, 1, 1, 0}},
};
#define MLSYS__OFFLOAD_NCAT ((int)(sizeof mlsys__offload_cat / sizeof mlsys__offload_cat[0]))

/* Other spellings (ONNX, PyTorch, aten) of the catalogue's rows, already normalised (lower case, no '_' or '.'). */
static const struct { const char *alias, *canon; } mlsys__offload_alias[] = {
    {"gemm", "MatMul"}, {"linear", "MatMul"}, {"mm", "MatMul"}, {"addmm", "MatMul"}, {"bmm", "MatMul"},
    {"baddbmm", "MatMul"}, {"matmulinteger", "MatMul"}, {"einsum", "MatMul"}, {"dot", "MatMul"}, {"mv", "MatMul"},
    {"conv1d", "Conv"}, {"conv2d", "Conv"}, {"conv3d", "Conv"}, {"convolution", "Conv"}, {"cudnnconvolution", "Conv"},
    {"convinteger", "Conv"}, {"convtranspose2d", "ConvTranspose"}, {"convolutiontranspose", "ConvTranspose"},
    {"sub", "Add"}, {"mul", "Add"}, {"div", "Add"}, {"relu", "Add"}, {"sigmoid", "Add"}, {"tanh", "Add"},
    {"gelu", "Add"}, {"leakyrelu", "Add"}, {"dropout", "Add"}, {"cast", "Add"}, {"clip", "Add"}, {"where", "Add"},
    {"threshold", "Add"}, {"hardtanh", "Add"}, {"elu", "Add"}, {"selu", "Add"}, {"neg", "Add"}, {"exp", "Add"},
    {"log", "Add"}, {"sqrt", "Add"}, {"pow", "Add"}, {"abs", "Add"}, {"addcmul", "Add"}, {"addcdiv", "Add"},
    {"rsub", "Add"}, {"copy", "Add"}, {"clone", "Add"}, {"fill", "Add"}, {"zero", "Add"}, {"zeros", "Add"},
    {"zeroslike", "Add"}, {"oneslike", "Add"}, {"ones", "Add"}, {"full", "Add"}, {"fulllike", "Add"},
    {"emptylike", "Add"}, {"empty", "Add"}, {"tolike", "Add"}, {"to", "Add"}, {"mulscalar", "Add"},
    {"addscalar", "Add"}, {"logsoftmax", "Softmax"}, {"softmaxcrossentropyloss", "Softmax"},
    {"crossentropy", "Softmax"}, {"nllloss", "ReduceSum"}, {"batchnormalization", "LayerNorm"},
    {"batchnorm", "LayerNorm"}, {"nativebatchnorm", "LayerNorm"}, {"cudnnbatchnorm", "LayerNorm"},
    {"groupnorm", "LayerNorm"}, {"nativelayernorm", "LayerNorm"}, {"layernormalization", "LayerNorm"},
    {"instancenormalization", "LayerNorm"}, {"reducemean", "ReduceSum"}, {"reducemax", "ReduceSum"},
    {"reducemin", "ReduceSum"}, {"sum", "ReduceSum"}, {"mean", "ReduceSum"}, {"max", "ReduceSum"},
    {"min", "ReduceSum"}, {"globalaveragepool", "ReduceSum"}, {"globalmaxpool", "ReduceSum"},
    {"adaptiveavgpool2d", "ReduceSum"}, {"mseloss", "ReduceSum"}, {"averagepool", "MaxPool"},
    {"avgpool2d", "MaxPool"}, {"maxpool2d", "MaxPool"}, {"maxpool2dwithindices", "MaxPool"},
    {"permute", "Transpose"}, {"t", "Transpose"}, {"view", "Reshape"}, {"flatten", "Reshape"},
    {"squeeze", "Reshape"}, {"unsqueeze", "Reshape"}, {"expand", "Reshape"}, {"alias", "Reshape"},
    {"identity", "Reshape"}, {"detach", "Reshape"}, {"unsafeview", "Reshape"}, {"asstrided", "Reshape"},
    {"embedding", "Gather"}, {"indexselect", "Gather"}, {"slice", "Gather"}, {"select", "Gather"},
    {"gatherelements", "Gather"}, {"gathernd", "Gather"}, {"index", "Gather"}, {"narrow", "Gather"},
    {"scatterelements", "ScatterND"}, {"scatter", "ScatterND"}, {"indexput", "ScatterND"},
    {"indexadd", "ScatterND"}, {"embeddingdensebackward", "ScatterND"}, {"split", "Concat"}, {"cat", "Concat"},
    {"stack", "Concat"}, {"pad", "Concat"}, {"constantpadnd", "Concat"}, {"chunk", "Concat"},
    {"lstm", "LSTMCell"}, {"gru", "GRUCell"}, {"multiheadattention", "Attention"},
    {"scaleddotproductattention", "Attention"}, {"adamw", "Adam"}, {"argmax", "TopK"}, {"argmin", "TopK"},
};

/* lower case without '_', '.', ':' and the framework prefixes; out has room for 128 chars */
static void mlsys__offload_norm(const char *op, char *out, size_t cap) {
  size_t n = 0;
  if (strncmp(op, "aten::", 6) == 0) op += 6;
  else if (strncmp(op, "torch.", 6) == 0) op += 6;
  for (; *op && n + 1 < cap; op++) {
    unsigned char ch = (unsigned char)*op;
    if (ch == '_' || ch == '.' || ch == ':' || ch == '-' || ch == ' ') continue;
    out[n++] = (char)tolower(ch);
  }
  out[n] = 0;
}

static int mlsys__offload_find_norm(const char *key) {
  int i;
  char buf[128];
  for (i = 0; i < MLSYS__OFFLOAD_NCAT; i++) {
    mlsys__offload_norm(mlsys__offload_cat[i].op, buf, sizeof buf);
    if (strcmp(buf, key) == 0) return i;
  }
  for (i = 0; i < (int)(sizeof mlsys__offload_alias / sizeof mlsys__offload_alias[0]); i++)
    if (strcmp(mlsys__offload_alias[i].alias, key) == 0) {
      int j;
      for (j = 0; j < MLSYS__OFFLOAD_NCAT; j++)
        if (strcmp(mlsys__offload_cat[j].op, mlsys__offload_alias[i].canon) == 0) return j;
    }
  return -1;
}

MLSYS_DEF const mlsys_offload_idiom *mlsys_offload_catalog(int *n) {
  if (n) *n = MLSYS__OFFLOAD_NCAT;
  return mlsys__offload_cat;
}

MLSYS_DEF int mlsys_offload_catalog_find(const char *op) {
  char key[128];
  size_t n;
  int i;
  if (!op) return -1;
  mlsys__offload_norm(op, key, sizeof key);
  if ((i = mlsys__offload_find_norm(key)) >= 0) return i;
  /* in-place and out variants: add_, addout, relu_ (the '_' is gone already), "inplace" suffixes */
  n = strlen(key);
  if (n > 3 && strcmp(key + n - 3, "out") == 0) {
    key[n - 3] = 0;
    if ((i = mlsys__offload_find_norm(key)) >= 0) return i;
    key[n - 3] = 'o';
  }
  /* numbered variants (conv2d already listed; "add2", "matmul1" from exporters that number nodes) */
  while (n > 1 && isdigit((unsigned char)key[n - 1])) key[--n] = 0;
  return mlsys__offload_find_norm(key);
}

MLSYS_DEF int mlsys_offload_op_idioms(const char *op, int32_t idiom[MLSYS_OFFLOAD_NIDIOM]) {
  char key[128];
  size_t n;
  int i, k, bwd = 0;
  if (!op) return 0;
  if ((i = mlsys_offload_catalog_find(op)) < 0) {
    /* backward operators: the forward's loops once per input gradient (spec §3.1: MatMulBackward = 2x MatMul) */
    mlsys__offload_norm(op, key, sizeof key);
    while ((n = strlen(key)) > 0 && isdigit((unsigned char)key[n - 1])) key[n - 1] = 0;   /* AddmmBackward0 */
    if (n > 8 && strcmp(key + n - 8, "backward") == 0) {
      key[n - 8] = 0;
      bwd = 1;
    }
    if (!bwd || (i = mlsys_offload_catalog_find(key)) < 0) return 0;
  }
  for (k = 0; k < MLSYS_OFFLOAD_NIDIOM; k++) idiom[k] = (int32_t)mlsys__offload_cat[i].idiom[k] * (bwd ? 2 : 1);
  return 1;
}

MLSYS_DEF mlsys_status mlsys_offload_sig_of(const char *op, int n_in, const int64_t *const *shapes, const int *ranks,
                                            mlsys_offload_sig *out) {
  int i, a;
  memset(out, 0, sizeof *out);
  if (!mlsys_offload_op_idioms(op, out->idiom))
    return mlsys_set_error(MLSYS_ERR_ARG, "operator '%s' is not in the idiom catalogue (version %d)", op ? op : "(null)",
                           MLSYS_OFFLOAD_CATALOG_VERSION);
  if (n_in < 0) return mlsys_set_error(MLSYS_ERR_ARG, "operator '%s': %d inputs", op, n_in);
  for (i = 0; i < n_in; i++) {
    int r = ranks ? ranks[i] : 0;
    int64_t vol = 1;
    if (r < 0) return mlsys_set_error(MLSYS_ERR_ARG, "operator '%s': input %d has rank %d", op, i, r);
    for (a = 0; a < r; a++)
      if (!shapes || !shapes[i] || shapes[i][a] < 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "operator '%s': input %d has no size or a negative size on axis %d", op, i, a);
    if (r >= 1) out->dim[0] += shapes[i][0];
    if (r >= 2) out->dim[1] += shapes[i][1];
    if (r == 3) out->dim[2] += shapes[i][2];
    if (r > 3) {   /* NCHW and up: the product of the trailing axes keeps the element tracking volume */
      for (a = 2; a < r; a++) vol = shapes[i][a] && vol > INT64_MAX / shapes[i][a] ? INT64_MAX : vol * shapes[i][a];
      out->dim[2] = vol > INT64_MAX - out->dim[2] ? INT64_MAX : out->dim[2] + vol;
    }
  }
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_sig_add(mlsys_offload_sig *acc, const mlsys_offload_sig *x) {
  int k;
  for (k = 0; k < MLSYS_OFFLOAD_NIDIOM; k++) acc->idiom[k] += x->idiom[k];
  for (k = 0; k < 3; k++) acc->dim[k] += x->dim[k];
}

MLSYS_DEF int mlsys_offload_sig_equal(const mlsys_offload_sig *a, const mlsys_offload_sig *b) {
  int k;
  for (k = 0; k < MLSYS_OFFLOAD_NIDIOM; k++)
    if (a->idiom[k] != b->idiom[k]) return 0;
  for (k = 0; k < 3; k++)
    if (a->dim[k] != b->dim[k]) return 0;
  return 1;
}

MLSYS_DEF void mlsys_offload_prog_init(mlsys_offload_prog *p, int nn_type) {
  memset(p, 0, sizeof *p);
  p->root = -1;
  p->nn_type = nn_type;
}

MLSYS_DEF void mlsys_offload_prog_free(mlsys_offload_prog *p) {
  mlsys_free(p->node);
  mlsys_free(p->child);
  memset(p, 0, sizeof *p);
  p->root = -1;
}

static int mlsys__offload_prog_node(mlsys_offload_prog *p, int kind, int n, const int *kids) {
  int i, id;
  if (n < 0 || (n > 0 && !kids)) { mlsys_set_error(MLSYS_ERR_ARG, "program node with %d children", n); return -1; }
  for (i = 0; i < n; i++)
    if (kids[i] < 0 || kids[i] >= p->n_node) {
      mlsys_set_error(MLSYS_ERR_ARG, "program node: child %d is %d, but only nodes 0..%d exist", i, kids[i], p->n_node - 1);
      return -1;
    }
  if (p->n_node == p->cap_node) {
    int c = p->cap_node ? 2 * p->cap_node : 16;
    mlsys_offload_pnode *q = (mlsys_offload_pnode *)mlsys_realloc_array(p->node, (size_t)c, sizeof *q);
    if (!q) return -1;
    p->node = q;
    p->cap_node = c;
  }
  if (p->n_child + n > p->cap_child) {
    int c = p->cap_child ? p->cap_child : 16;
    int *q;
    while (c < p->n_child + n) c *= 2;
    if (!(q = (int *)mlsys_realloc_array(p->child, (size_t)c, sizeof *q))) return -1;
    p->child = q;
    p->cap_child = c;
  }
  id = p->n_node++;
  memset(&p->node[id], 0, sizeof p->node[id]);
  p->node[id].kind = kind;
  p->node[id].first_child = p->n_child;
  p->node[id].n_child = n;
  if (n) memcpy(p->child + p->n_child, kids, (size_t)n * sizeof *kids);
  p->n_child += n;
  p->root = id;
  return id;
}

MLSYS_DEF int mlsys_offload_prog_op(mlsys_offload_prog *p, const mlsys_offload_sig *sig) {
  int id = mlsys__offload_prog_node(p, MLSYS_OFFLOAD_PN_OP, 0, NULL);
  if (id >= 0 && sig) p->node[id].sig = *sig;
  return id;
}
MLSYS_DEF int mlsys_offload_prog_seq(mlsys_offload_prog *p, int n, const int *children) {
  return mlsys__offload_prog_node(p, MLSYS_OFFLOAD_PN_SEQ, n, children);
}
MLSYS_DEF int mlsys_offload_prog_branch(mlsys_offload_prog *p, int n, const int *alternatives) {
  if (n < 1) { mlsys_set_error(MLSYS_ERR_ARG, "a branch needs at least one alternative"); return -1; }
  return mlsys__offload_prog_node(p, MLSYS_OFFLOAD_PN_BRANCH, n, alternatives);
}
MLSYS_DEF int mlsys_offload_prog_loop(mlsys_offload_prog *p, int body, int loop_min, int loop_max) {
  int id;
  if (loop_min < 0 || (loop_max >= 0 && loop_max < loop_min)) {
    mlsys_set_error(MLSYS_ERR_ARG, "loop runs %d..%d times", loop_min, loop_max);
    return -1;
  }
  id = mlsys__offload_prog_node(p, MLSYS_OFFLOAD_PN_LOOP, 1, &body);
  if (id >= 0) { p->node[id].loop_min = loop_min; p->node[id].loop_max = loop_max; }
  return id;
}

/* Depth-first in program order; the depth guard keeps a malformed (cyclic) node table from recursing forever. */
static mlsys_status mlsys__offload_afm_rec(const mlsys_offload_prog *p, int v, int depth, mlsys_offload_sig *rows,
                                           int cap, int *n) {
  const mlsys_offload_pnode *nd;
  int i;
  if (v < 0 || v >= p->n_node) return mlsys_set_error(MLSYS_ERR_ARG, "program: node %d does not exist", v);
  if (depth > p->n_node) return mlsys_set_error(MLSYS_ERR_CYCLE, "program: node %d is its own descendant", v);
  nd = &p->node[v];
  if (nd->kind == MLSYS_OFFLOAD_PN_OP || nd->kind == MLSYS_OFFLOAD_PN_BRANCH || nd->kind == MLSYS_OFFLOAD_PN_LOOP) {
    if (rows) {
      if (*n >= cap) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "the AFM has more than %d rows", cap);
      if (nd->kind == MLSYS_OFFLOAD_PN_OP) rows[*n] = nd->sig;
      else memset(&rows[*n], 0, sizeof rows[*n]);
    }
    (*n)++;
  }
  if (nd->first_child < 0 || nd->n_child < 0 || nd->first_child + nd->n_child > p->n_child)
    return mlsys_set_error(MLSYS_ERR_ARG, "program: node %d's children lie outside the child table", v);
  for (i = 0; i < nd->n_child; i++) {
    mlsys_status st = mlsys__offload_afm_rec(p, p->child[nd->first_child + i], depth + 1, rows, cap, n);
    if (st) return st;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_afm(const mlsys_offload_prog *p, mlsys_offload_sig *rows, int cap, int *n_rows) {
  int n = 0;
  mlsys_status st;
  if (p->root < 0) return mlsys_set_error(MLSYS_ERR_ARG, "program has no root");
  st = mlsys__offload_afm_rec(p, p->root, 0, rows, cap, &n);
  if (n_rows) *n_rows = n;
  return st;
}

/* ================================================================================================================
   2. Traces
   ================================================================================================================ */
static const char *const mlsys__offload_kind_names[MLSYS_OFFLOAD_T_N_] = {"param", "input", "act", "grad", "opt", "temp"};

MLSYS_DEF void mlsys_offload_trace_init(mlsys_offload_trace *tr) { memset(tr, 0, sizeof *tr); }

MLSYS_DEF void mlsys_offload_trace_free(mlsys_offload_trace *tr) {
  int i;
  for (i = 0; i < tr->n_names; i++) mlsys_free(tr->names[i]);
  mlsys_free(tr->names);
  mlsys_free(tr->op);
  mlsys_free(tr->t);
  mlsys_free(tr->ids);
  mlsys_free(tr->name);
  memset(tr, 0, sizeof *tr);
}

/* grow *p (elements of sz bytes) to hold need */
static int mlsys__offload_grow(void **p, long *cap, long need, size_t sz) {
  long c = *cap ? *cap : 16;
  void *q;
  if (need <= *cap) return 1;
  if (need > INT_MAX / 2) { mlsys_set_error(MLSYS_ERR_TOO_BIG, "trace: more than %d entries", INT_MAX / 2); return 0; }
  while (c < need) c *= 2;
  if (!(q = mlsys_realloc_array(*p, (size_t)c, sz))) return 0;
  *p = q;
  *cap = c;
  return 1;
}

MLSYS_DEF int mlsys_offload_trace_tensor(mlsys_offload_trace *tr, int64_t bytes, mlsys_offload_tkind kind) {
  long cap = tr->cap_t;
  if (bytes < 0) { mlsys_set_error(MLSYS_ERR_ARG, "tensor %d: %lld bytes", tr->n_t, (long long)bytes); return -1; }
  if ((int)kind < 0 || kind >= MLSYS_OFFLOAD_T_N_) { mlsys_set_error(MLSYS_ERR_ARG, "tensor %d: kind %d", tr->n_t, (int)kind); return -1; }
  if (!mlsys__offload_grow((void **)&tr->t, &cap, tr->n_t + 1L, sizeof *tr->t)) return -1;
  tr->cap_t = (int)cap;
  tr->t[tr->n_t].bytes = bytes;
  tr->t[tr->n_t].kind = (int)kind;
  return tr->n_t++;
}

static int mlsys__offload_name_id(mlsys_offload_trace *tr, const char *name) {
  long cap = tr->cap_names;
  int i;
  /* traces have tens of distinct op names: a linear scan from the most recent is enough */
  for (i = tr->n_names - 1; i >= 0; i--)
    if (strcmp(tr->names[i], name) == 0) return i;
  if (!mlsys__offload_grow((void **)&tr->names, &cap, tr->n_names + 1L, sizeof *tr->names)) return -1;
  tr->cap_names = (int)cap;
  if (!(tr->names[tr->n_names] = mlsys_strdup(name))) return -1;
  return tr->n_names++;
}

MLSYS_DEF int mlsys_offload_trace_op(mlsys_offload_trace *tr, const char *name, double time_us, int n_in,
                                     const int *in, int n_out, const int *out, int64_t workspace,
                                     const mlsys_offload_sig *sig) {
  long cap;
  int i, nid;
  mlsys_offload_op *o;
  if (!name || !*name) name = "?";
  if (!(time_us >= 0) || !isfinite(time_us)) { mlsys_set_error(MLSYS_ERR_ARG, "op %d (%s): time %g µs", tr->n_op, name, time_us); return -1; }
  if (n_in < 0 || n_out < 0 || workspace < 0 || (n_in && !in) || (n_out && !out)) {
    mlsys_set_error(MLSYS_ERR_ARG, "op %d (%s): %d inputs, %d outputs, %lld workspace bytes", tr->n_op, name, n_in, n_out,
                    (long long)workspace);
    return -1;
  }
  for (i = 0; i < n_in + n_out; i++) {
    int t = i < n_in ? in[i] : out[i - n_in];
    if (t < 0 || t >= tr->n_t) {
      mlsys_set_error(MLSYS_ERR_ARG, "op %d (%s) %s tensor %d, but the trace has %d tensors", tr->n_op, name,
                      i < n_in ? "reads" : "writes", t, tr->n_t);
      return -1;
    }
  }
  if ((nid = mlsys__offload_name_id(tr, name)) < 0) return -1;
  cap = tr->cap_op;
  if (!mlsys__offload_grow((void **)&tr->op, &cap, tr->n_op + 1L, sizeof *tr->op)) return -1;
  tr->cap_op = (int)cap;
  cap = tr->cap_ids;
  if (!mlsys__offload_grow((void **)&tr->ids, &cap, tr->n_ids + n_in + n_out, sizeof *tr->ids)) return -1;
  tr->cap_ids = cap;
  o = &tr->op[tr->n_op];
  memset(o, 0, sizeof *o);
  o->name = nid;
  o->time_us = time_us;
  o->in0 = (int)tr->n_ids;
  o->n_in = n_in;
  if (n_in) memcpy(tr->ids + tr->n_ids, in, (size_t)n_in * sizeof *in);
  tr->n_ids += n_in;
  o->out0 = (int)tr->n_ids;
  o->n_out = n_out;
  if (n_out) memcpy(tr->ids + tr->n_ids, out, (size_t)n_out * sizeof *out);
  tr->n_ids += n_out;
  o->workspace = workspace;
  o->afm_row = -1;
  if (sig) o->sig = *sig;
  else mlsys_offload_op_idioms(name, o->sig.idiom);
  return tr->n_op++;
}

MLSYS_DEF const char *mlsys_offload_op_name(const mlsys_offload_trace *tr, int op) {
  if (op < 0 || op >= tr->n_op) return "?";
  return tr->names[tr->op[op].name];
}

static int mlsys__offload_persistent_kind(int kind) {
  return kind == MLSYS_OFFLOAD_T_PARAM || kind == MLSYS_OFFLOAD_T_OPT;
}

MLSYS_DEF void mlsys_offload_facts_free(mlsys_offload_facts *f) {
  mlsys_free(f->first_write);
  mlsys_free(f->last_use);
  mlsys_free(f->read);
  memset(f, 0, sizeof *f);
}

MLSYS_DEF mlsys_status mlsys_offload_trace_facts(const mlsys_offload_trace *tr, mlsys_offload_facts *f) {
  int i, j, n = tr->n_op;
  int64_t *delta = NULL, live = 0;
  memset(f, 0, sizeof *f);
  f->first_write = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  f->last_use = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  f->read = (unsigned char *)mlsys_calloc((size_t)tr->n_t + 1, 1);
  delta = (int64_t *)mlsys_calloc((size_t)n + 2, sizeof(int64_t));
  if (!f->first_write || !f->last_use || !f->read || !delta) {
    mlsys_free(delta);
    mlsys_offload_facts_free(f);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "trace facts: out of memory for %d tensors", tr->n_t);
  }
  for (i = 0; i < tr->n_t; i++) f->first_write[i] = f->last_use[i] = -1;
  for (i = 0; i < n; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    for (j = 0; j < o->n_in + o->n_out; j++) f->last_use[tr->ids[o->in0 + j]] = i;
    for (j = 0; j < o->n_out; j++) {
      int t = tr->ids[o->out0 + j];
      if (f->first_write[t] < 0) f->first_write[t] = i;
    }
    f->compute_us += o->time_us;
  }
  /* a tensor some op reads before its first write existed before the first op */
  {
    int *first_access = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
    if (!first_access) {
      mlsys_free(delta);
      mlsys_offload_facts_free(f);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "trace facts: out of memory");
    }
    for (i = 0; i < tr->n_t; i++) first_access[i] = -1;
    for (i = 0; i < n; i++)
      for (j = 0; j < tr->op[i].n_in; j++) {
        int t = tr->ids[tr->op[i].in0 + j];
        if (first_access[t] < 0) first_access[t] = i;
      }
    for (i = 0; i < tr->n_t; i++) {
      if (f->first_write[i] >= 0 && first_access[i] >= 0 && first_access[i] < f->first_write[i]) f->first_write[i] = -1;
      f->read[i] = first_access[i] >= 0;
    }
    mlsys_free(first_access);
  }
  /* a gradient nothing reads is a result of the iteration (a weight's gradient): it lives to the end */
  for (i = 0; i < tr->n_t; i++)
    if (tr->t[i].kind == MLSYS_OFFLOAD_T_GRAD && f->first_write[i] >= 0 && !f->read[i]) f->last_use[i] = n;
  f->persistent_bytes = tr->fixed_bytes;
  for (i = 0; i < tr->n_t; i++) {
    const mlsys_offload_tensor *t = &tr->t[i];
    if (mlsys__offload_persistent_kind(t->kind) || f->first_write[i] < 0) {
      if (mlsys__offload_persistent_kind(t->kind)) f->last_use[i] = n;
      f->persistent_bytes += t->bytes;
    } else if (f->last_use[i] >= 0) {
      delta[f->first_write[i]] += t->bytes;
      delta[f->last_use[i] + 1] -= t->bytes;
    }
  }
  f->peak_bytes = f->persistent_bytes;
  f->peak_op = n ? 0 : -1;
  for (i = 0; i < n; i++) {
    int64_t here;
    live += delta[i];
    here = f->persistent_bytes + live + tr->op[i].workspace;
    if (here > f->peak_bytes) { f->peak_bytes = here; f->peak_op = i; }
  }
  mlsys_free(delta);
  return MLSYS_OK;
}

MLSYS_DEF int64_t mlsys_offload_peak_bytes(const mlsys_offload_trace *tr) {
  mlsys_offload_facts f;
  int64_t p;
  if (mlsys_offload_trace_facts(tr, &f)) return -1;
  p = f.peak_bytes;
  mlsys_offload_facts_free(&f);
  return p;
}

/* ---- our JSON-lines format ---- */
static mlsys_status mlsys__offload_line_err(const char *src, int line, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static mlsys_status mlsys__offload_line_err(const char *src, int line, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: %s", src, line, msg);
}

/* a JSON array of ints into a scratch buffer */
static mlsys_status mlsys__offload_int_list(const mlsys_json *a, const char *key, const char *src, int line, int **buf,
                                            int *cap, int *n) {
  int i, cnt;
  const mlsys_json *v = mlsys_json_get(a, key);
  *n = 0;
  if (!v) return MLSYS_OK;
  if (v->type != MLSYS_JSON_ARRAY) return mlsys__offload_line_err(src, line, "\"%s\" must be an array of tensor ids", key);
  cnt = v->count;
  if (cnt > *cap) {
    int *q = (int *)mlsys_realloc_array(*buf, (size_t)cnt, sizeof(int));
    if (!q) return MLSYS_ERR_NOMEM;
    *buf = q;
    *cap = cnt;
  }
  for (i = 0; i < cnt; i++) {
    const mlsys_json *e = mlsys_json_at(v, i);
    if (!e || e->type != MLSYS_JSON_NUMBER || e->num != floor(e->num) || e->num < 0 || e->num > INT_MAX)
      return mlsys__offload_line_err(src, line, "\"%s\"[%d] is not a tensor id", key, i);
    (*buf)[i] = (int)e->num;
  }
  *n = cnt;
  return MLSYS_OK;
}

static int mlsys__offload_kind_find(const char *s) {
  int k;
  for (k = 0; k < MLSYS_OFFLOAD_T_N_; k++)
    if (strcmp(s, mlsys__offload_kind_names[k]) == 0) return k;
  return -1;
}

static mlsys_status mlsys__offload_read_mlsys(const char *text, size_t len, const char *src, mlsys_offload_trace *tr) {
  size_t pos = 0;
  int line = 0, header = 0, *ibuf = NULL, icap = 0, *obuf = NULL, ocap = 0;
  mlsys_status st = MLSYS_OK;
  while (pos < len && !st) {
    size_t e = pos;
    mlsys_json_doc doc;
    const mlsys_json *r, *v;
    while (e < len && text[e] != '\n') e++;
    line++;
    {
      size_t a = pos;
      while (a < e && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
      if (a == e) { pos = e + 1; continue; }
    }
    if (mlsys_json_parse(text + pos, e - pos, src, &doc)) {
      st = mlsys__offload_line_err(src, line, "not a JSON object: %s", mlsys_last_error());
      break;
    }
    r = doc.root;
    if (r->type != MLSYS_JSON_OBJECT) st = mlsys__offload_line_err(src, line, "each line must be a JSON object");
    else if (!header) {
      int64_t ver = 0, fixed = 0;
      const char *name = NULL;
      if (!mlsys_json_get(r, "mlsys_offload_trace"))
        st = mlsys__offload_line_err(src, line, "the first line must be {\"mlsys_offload_trace\": 1, ...}");
      else if (mlsys_json_get_i64(r, "mlsys_offload_trace", 1, 0, INT64_MIN, INT64_MAX, &ver) || ver != 1)
        st = mlsys__offload_line_err(src, line, "unsupported trace version (this reader knows version 1)");
      else if (mlsys_json_get_i64(r, "fixed_bytes", 0, 0, INT64_MIN, INT64_MAX, &fixed) || fixed < 0)
        st = mlsys__offload_line_err(src, line, "\"fixed_bytes\" must be a byte count >= 0");
      else if (mlsys_json_get_str(r, "name", 0, NULL, &name))
        st = mlsys__offload_line_err(src, line, "\"name\" must be a string");
      else {
        tr->fixed_bytes = fixed;
        if (name && !(tr->name = mlsys_strdup(name))) st = MLSYS_ERR_NOMEM;
        header = 1;
      }
    } else if ((v = mlsys_json_get(r, "t"))) {
      int64_t id = -1, bytes = -1;
      const char *kind = "act";
      int k;
      if (mlsys_json_get_i64(r, "t", 1, 0, INT64_MIN, INT64_MAX, &id) || id != tr->n_t)
        st = mlsys__offload_line_err(src, line, "tensor ids must be 0, 1, 2, ... in order (expected %d)", tr->n_t);
      else if (mlsys_json_get_i64(r, "bytes", 1, 0, INT64_MIN, INT64_MAX, &bytes) || bytes < 0)
        st = mlsys__offload_line_err(src, line, "tensor %d: \"bytes\" must be a byte count >= 0", tr->n_t);
      else if (mlsys_json_get_str(r, "kind", 0, "act", &kind) || (k = mlsys__offload_kind_find(kind)) < 0)
        st = mlsys__offload_line_err(src, line, "tensor %d: \"kind\" must be param, input, act, grad, opt or temp", tr->n_t);
      else if (tr->n_op)
        st = mlsys__offload_line_err(src, line, "tensor %d comes after the first op (tensors first, then ops)", tr->n_t);
      else if (mlsys_offload_trace_tensor(tr, bytes, (mlsys_offload_tkind)k) < 0)
        st = mlsys_prefix_error("%s:%d", src, line);
    } else if ((v = mlsys_json_get(r, "op"))) {
      const char *name = NULL;
      double us = -1;
      int64_t ws = 0, row = -1;
      int nin, nout, bwd = 0, i, op;
      mlsys_offload_sig sig, *sp = NULL;
      const mlsys_json *sg = mlsys_json_get(r, "sig");
      if (mlsys_json_get_str(r, "op", 1, NULL, &name) || !name[0])
        st = mlsys__offload_line_err(src, line, "\"op\" must be a non-empty operator name");
      else if (mlsys_json_get_double(r, "us", 1, 0, -INFINITY, INFINITY, &us) || !(us >= 0) || !isfinite(us))
        st = mlsys__offload_line_err(src, line, "op %d: \"us\" must be a time >= 0 in µs", tr->n_op);
      else if (mlsys_json_get_i64(r, "ws", 0, 0, INT64_MIN, INT64_MAX, &ws) || ws < 0)
        st = mlsys__offload_line_err(src, line, "op %d: \"ws\" must be a byte count >= 0", tr->n_op);
      else if (mlsys_json_get_i64(r, "row", 0, -1, INT64_MIN, INT64_MAX, &row) || row < -1 || row > INT_MAX)
        st = mlsys__offload_line_err(src, line, "op %d: \"row\" must be an AFM row or -1", tr->n_op);
      else if (mlsys_json_get_bool(r, "bwd", 0, 0, &bwd)) {
        int64_t b = 0;
        mlsys_clear_error();
        if (mlsys_json_get_i64(r, "bwd", 0, 0, INT64_MIN, INT64_MAX, &b) || (b != 0 && b != 1))
          st = mlsys__offload_line_err(src, line, "op %d: \"bwd\" must be 0 or 1", tr->n_op);
        bwd = (int)b;
      }
      if (!st && sg) {
        if (sg->type != MLSYS_JSON_ARRAY || sg->count != 9)
          st = mlsys__offload_line_err(src, line, "op %d: \"sig\" must be an array of 9 integers", tr->n_op);
        for (i = 0; !st && i < 9; i++) {
          const mlsys_json *x = mlsys_json_at(sg, i);
          if (!x || x->type != MLSYS_JSON_NUMBER || !x->is_int || x->i64 < 0 || (i < 6 && x->i64 > INT32_MAX))
            st = mlsys__offload_line_err(src, line, "op %d: \"sig\"[%d] must be an integer >= 0", tr->n_op, i);
          else if (i < 6) sig.idiom[i] = (int32_t)x->i64;
          else sig.dim[i - 6] = x->i64;
        }
        sp = &sig;
      }
      if (!st) st = mlsys__offload_int_list(r, "in", src, line, &ibuf, &icap, &nin);
      if (!st) st = mlsys__offload_int_list(r, "out", src, line, &obuf, &ocap, &nout);
      if (!st) {
        if ((op = mlsys_offload_trace_op(tr, name, us, nin, ibuf, nout, obuf, ws, sp)) < 0)
          st = mlsys_prefix_error("%s:%d", src, line);
        else {
          tr->op[op].afm_row = (int)row;
          tr->op[op].is_bwd = bwd;
        }
      }
    } else
      st = mlsys__offload_line_err(src, line, "a line must be the header, a tensor {\"t\": ...} or an op {\"op\": ...}");
    mlsys_json_doc_free(&doc);
    pos = e + 1;
  }
  mlsys_free(ibuf);
  mlsys_free(obuf);
  if (!st && !header) st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: empty trace (no {\"mlsys_offload_trace\": 1} line)", src);
  if (!st && tr->n_op == 0) st = mlsys_set_error(MLSYS_ERR_PARSE, "%s: the trace has no ops", src);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_trace_from_dtr(const char *text, size_t len, const char *source,
                                                    mlsys_offload_trace *tr) {
  mlsys_remat_graph g;
  mlsys_remat_dtr_opts o;
  mlsys_remat_dtr_info info;
  mlsys_status st;
  int v, j, *in = NULL, cap = 0;
  mlsys_offload_trace_init(tr);
  memset(&o, 0, sizeof o);
  if ((st = mlsys_remat_import_dtr(text, len, source, &o, &g, &info))) return st;
  if (g.name && !(tr->name = mlsys_strdup(g.name))) st = MLSYS_ERR_NOMEM;
  for (j = 0; j < g.nfixed; j++) tr->fixed_bytes += (int64_t)g.fixed_bytes[j];
  /* one tensor per node; the backward pass writes gradients */
  for (v = 0; !st && v < g.dag.n; v++)
    if (mlsys_offload_trace_tensor(tr, (int64_t)g.dag.size[v],
                                   g.kind[v] == MLSYS_REMAT_B ? MLSYS_OFFLOAD_T_GRAD : MLSYS_OFFLOAD_T_ACT) < 0)
      st = mlsys_last_status();
  for (v = 0; !st && v < g.dag.n; v++) {
    int n = g.dag.in_off[v + 1] - g.dag.in_off[v], op;
    const char *name = g.op && g.op[v] ? g.op[v] : "op";
    if (n > cap) {
      int *q = (int *)mlsys_realloc_array(in, (size_t)n, sizeof *in);
      if (!q) { st = MLSYS_ERR_NOMEM; break; }
      in = q;
      cap = n;
    }
    for (j = 0; j < n; j++) in[j] = g.dag.in[g.dag.in_off[v] + j];
    /* DTR's TIME is in nanoseconds */
    if ((op = mlsys_offload_trace_op(tr, name, g.dag.cost[v] / 1000.0, n, in, 1, &v, 0, NULL)) < 0) st = mlsys_last_status();
    else tr->op[op].is_bwd = g.kind[v] == MLSYS_REMAT_B;
  }
  mlsys_free(in);
  mlsys_remat_graph_free(&g);
  if (st) {
    mlsys_offload_trace_free(tr);
    if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "%s: out of memory converting the DTR trace", source);
  }
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_trace_read(const char *text, size_t len, const char *source,
                                                mlsys_offload_fmt fmt, mlsys_offload_trace *tr) {
  mlsys_status st;
  if (!source) source = "trace";
  if (fmt == MLSYS_OFFLOAD_FMT_AUTO) {
    /* our header names itself on the first non-blank line; DTR logs start with {"INSTRUCTION": ...} */
    size_t a = 0;
    while (a < len && isspace((unsigned char)text[a])) a++;
    size_t b, lim = len - a < 200 ? len - a : 200;
    fmt = MLSYS_OFFLOAD_FMT_DTR;
    for (b = 0; b + 19 <= lim; b++)
      if (memcmp(text + a + b, "mlsys_offload_trace", 19) == 0) { fmt = MLSYS_OFFLOAD_FMT_MLSYS; break; }
  }
  if (fmt == MLSYS_OFFLOAD_FMT_DTR) return mlsys_offload_trace_from_dtr(text, len, source, tr);
  if (fmt != MLSYS_OFFLOAD_FMT_MLSYS) return mlsys_set_error(MLSYS_ERR_ARG, "trace format %d is not one of auto, mlsys, dtr", (int)fmt);
  mlsys_offload_trace_init(tr);
  if ((st = mlsys__offload_read_mlsys(text, len, source, tr))) mlsys_offload_trace_free(tr);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_trace_read_file(const char *path, mlsys_offload_fmt fmt, mlsys_offload_trace *tr) {
  char *data;
  size_t len;
  mlsys_status st;
  const char *base = strrchr(path, '/');
  mlsys_offload_trace_init(tr);
  if ((st = mlsys_read_file(path, &data, &len))) return st;
  st = mlsys_offload_trace_read(data, len, path, fmt, tr);
  if (!st && !tr->name) {
    size_t n;
    base = base ? base + 1 : path;
    n = strlen(base);
    if (n > 4 && (strcmp(base + n - 4, ".log") == 0)) n -= 4;
    else if (n > 6 && strcmp(base + n - 6, ".jsonl") == 0) n -= 6;
    if ((tr->name = (char *)mlsys_alloc(n + 1, 1))) { memcpy(tr->name, base, n); tr->name[n] = 0; }
  }
  mlsys_free(data);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_trace_write(FILE *f, const mlsys_offload_trace *tr) {
  int i, j;
  mlsys_json_writer w;
  mlsys_jw_init(&w, f, 0);
  mlsys_jw_object(&w);
  mlsys_jw_key(&w, "mlsys_offload_trace"); mlsys_jw_i64(&w, 1);
  if (tr->name) { mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, tr->name); }
  mlsys_jw_key(&w, "fixed_bytes"); mlsys_jw_i64(&w, tr->fixed_bytes);
  mlsys_jw_end(&w);
  if (mlsys_jw_finish(&w)) return mlsys_last_status();
  for (i = 0; i < tr->n_t; i++)
    fprintf(f, "{\"t\":%d,\"bytes\":%lld,\"kind\":\"%s\"}\n", i, (long long)tr->t[i].bytes,
            mlsys__offload_kind_names[tr->t[i].kind]);
  for (i = 0; i < tr->n_op; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    mlsys_jw_init(&w, f, 0);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "op"); mlsys_jw_str(&w, tr->names[o->name]);
    mlsys_jw_key(&w, "us"); mlsys_jw_double(&w, o->time_us);
    mlsys_jw_key(&w, "in"); mlsys_jw_array(&w);
    for (j = 0; j < o->n_in; j++) mlsys_jw_i64(&w, tr->ids[o->in0 + j]);
    mlsys_jw_end(&w);
    mlsys_jw_key(&w, "out"); mlsys_jw_array(&w);
    for (j = 0; j < o->n_out; j++) mlsys_jw_i64(&w, tr->ids[o->out0 + j]);
    mlsys_jw_end(&w);
    if (o->workspace) { mlsys_jw_key(&w, "ws"); mlsys_jw_i64(&w, o->workspace); }
    mlsys_jw_key(&w, "sig"); mlsys_jw_array(&w);
    for (j = 0; j < 6; j++) mlsys_jw_i64(&w, o->sig.idiom[j]);
    for (j = 0; j < 3; j++) mlsys_jw_i64(&w, o->sig.dim[j]);
    mlsys_jw_end(&w);
    if (o->afm_row >= 0) { mlsys_jw_key(&w, "row"); mlsys_jw_i64(&w, o->afm_row); }
    if (o->is_bwd) { mlsys_jw_key(&w, "bwd"); mlsys_jw_i64(&w, 1); }
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) return mlsys_last_status();
  }
  if (fflush(f) || ferror(f)) return mlsys_set_error(MLSYS_ERR_IO, "trace: write failed");
  return MLSYS_OK;
}

static mlsys_status mlsys__offload_simulate_more(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int policy,
                                                 mlsys_offload_simres *r);

/* ================================================================================================================
   3. Hardware, block costs, partitions
   ================================================================================================================ */
/* The hardware with defaults filled in; bandwidths become bytes per µs. */
typedef struct {
  int64_t gpu, cbuf;
  double h2d, d2h, d2d, lat;
  int overlap;
} mlsys__offload_hwn;

static mlsys_status mlsys__offload_hw_norm(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, mlsys__offload_hwn *o) {
  double r;
  if (!hw || hw->gpu_bytes <= 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "hardware: GPU memory must be > 0 bytes (got %lld)", hw ? (long long)hw->gpu_bytes : 0LL);
  r = hw->reserve_frac == 0 ? 0.05 : hw->reserve_frac < 0 ? 0 : hw->reserve_frac;
  if (!(r < 1)) return mlsys_set_error(MLSYS_ERR_ARG, "hardware: reserve fraction %g leaves no memory", r);
  if (hw->h2d_gbps < 0 || hw->d2h_gbps < 0 || hw->d2d_gbps < 0 || isnan(hw->h2d_gbps) || isnan(hw->d2h_gbps) ||
      isnan(hw->d2d_gbps) || isnan(hw->lat_us))
    return mlsys_set_error(MLSYS_ERR_ARG, "hardware: bandwidths must be > 0 GB/s (0 = default)");
  o->gpu = hw->gpu_bytes;
  o->cbuf = tr->fixed_bytes >= hw->gpu_bytes ? 0 : (int64_t)floor((double)(hw->gpu_bytes - tr->fixed_bytes) * (1 - r) / 2);
  o->h2d = (hw->h2d_gbps ? hw->h2d_gbps : 12.0) * 1e3;
  o->d2h = (hw->d2h_gbps ? hw->d2h_gbps : 12.0) * 1e3;
  o->d2d = (hw->d2d_gbps ? hw->d2d_gbps : 1500.0) * 1e3;
  o->lat = hw->lat_us == 0 ? 10.0 : hw->lat_us < 0 ? 0 : hw->lat_us;
  o->overlap = hw->overlap_evict_prefetch != 0;
  return MLSYS_OK;
}

typedef struct {
  double c;                 /* compute µs */
  int64_t ws, in, ev;       /* working set, bytes in over PCIe, bytes out */
  int64_t carry;            /* bytes in from the previous block's buffer (device to device) */
  int nin, nev, ncarry;     /* copies */
} mlsys__offload_bc;

/* Scratch for block costs: stamps over tensors so each block is one pass over its ops. */
typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_facts *f;
  int *seen, *wrote, stamp;
  int stamp_prev_ok;        /* the previous stamp was the previous block of the same partition */
} mlsys__offload_bcx;

static void mlsys__offload_block_cost(mlsys__offload_bcx *x, int a, int b, mlsys__offload_bc *o) {
  const mlsys_offload_trace *tr = x->tr;
  int i, j;
  memset(o, 0, sizeof *o);
  x->stamp++;
  for (i = a; i < b; i++) {
    const mlsys_offload_op *op = &tr->op[i];
    o->c += op->time_us;
    o->ws += op->workspace;
    for (j = 0; j < op->n_in + op->n_out; j++) {
      int t = tr->ids[op->in0 + j];
      if (x->seen[t] != x->stamp) {
        /* from outside the block: still in the previous block's buffer (its stamp is one less when the blocks of a
           partition are costed in order), or over PCIe */
        if (x->f->first_write[t] < a) {
          if (x->seen[t] == x->stamp - 1 && x->stamp_prev_ok) { o->carry += tr->t[t].bytes; o->ncarry++; }
          else { o->in += tr->t[t].bytes; o->nin++; }
        }
        x->seen[t] = x->stamp;
        o->ws += tr->t[t].bytes;
      }
      if (j >= op->n_in && x->wrote[t] != x->stamp) {
        x->wrote[t] = x->stamp;
        if (x->f->last_use[t] >= b) { o->ev += tr->t[t].bytes; o->nev++; }
      }
    }
  }
}

static double mlsys__offload_mig(const mlsys__offload_hwn *h, const mlsys__offload_bc *b) {
  double tin = (double)b->in / h->h2d + h->lat * b->nin, tev = (double)b->ev / h->d2h + h->lat * b->nev;
  if (b->in == 0) tin = 0;
  if (b->ev == 0) tev = 0;
  return h->overlap ? (tin > tev ? tin : tev) : tin + tev;
}

static mlsys_status mlsys__offload_bcx_init(mlsys__offload_bcx *x, const mlsys_offload_trace *tr, const mlsys_offload_facts *f) {
  x->tr = tr;
  x->f = f;
  x->stamp = 0;
  x->stamp_prev_ok = 0;
  x->seen = (int *)mlsys_calloc((size_t)tr->n_t + 1, sizeof(int));
  x->wrote = (int *)mlsys_calloc((size_t)tr->n_t + 1, sizeof(int));
  if (!x->seen || !x->wrote) {
    mlsys_free(x->seen);
    mlsys_free(x->wrote);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory for %d tensors", tr->n_t);
  }
  return MLSYS_OK;
}
static void mlsys__offload_bcx_free(mlsys__offload_bcx *x) {
  mlsys_free(x->seen);
  mlsys_free(x->wrote);
}

/* The model's time of a partition (bc[k] filled): m(B_1) + Σ max(c(B_i), m(B_{i+1})) + c(B_K). */
static double mlsys__offload_carry_time(const mlsys__offload_hwn *h, const mlsys__offload_bc *b) {
  return b->carry ? (double)b->carry / h->d2d + h->lat * b->ncarry : 0.0;
}

static double mlsys__offload_model_time(const mlsys__offload_hwn *h, const mlsys__offload_bc *bc, int k) {
  double t = mlsys__offload_mig(h, &bc[0]);
  int i;
  for (i = 0; i + 1 < k; i++) {
    double m = mlsys__offload_mig(h, &bc[i + 1]);
    t += (bc[i].c > m ? bc[i].c : m) + mlsys__offload_carry_time(h, &bc[i + 1]);
  }
  return t + bc[k - 1].c;
}

static mlsys_status mlsys__offload_check_start(const mlsys_offload_trace *tr, const int *start, int k) {
  int i;
  if (k < 1 || !start) return mlsys_set_error(MLSYS_ERR_ARG, "a partition needs at least one block");
  if (start[0] != 0 || start[k] != tr->n_op)
    return mlsys_set_error(MLSYS_ERR_ARG, "a partition must start at op 0 and end at op %d (got %d..%d)", tr->n_op, start[0], start[k]);
  for (i = 0; i < k; i++)
    if (start[i + 1] <= start[i]) return mlsys_set_error(MLSYS_ERR_ARG, "block %d is empty or reversed (ops %d..%d)", i, start[i], start[i + 1]);
  return MLSYS_OK;
}

/* bc[k] for a partition; returns the index of the first block over C_buf, or -1 */
static int mlsys__offload_costs(mlsys__offload_bcx *x, const mlsys__offload_hwn *h, const int *start, int k, mlsys__offload_bc *bc) {
  int i, over = -1;
  for (i = 0; i < k; i++) {
    x->stamp_prev_ok = i > 0;
    mlsys__offload_block_cost(x, start[i], start[i + 1], &bc[i]);
    x->stamp_prev_ok = 0;
    if (over < 0 && bc[i].ws > h->cbuf) over = i;
  }
  return over;
}

MLSYS_DEF double mlsys_offload_plan_time(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, const int *start, int k) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__offload_bcx x;
  mlsys__offload_bc *bc;
  double t = INFINITY;
  if (mlsys__offload_hw_norm(tr, hw, &h) || mlsys__offload_check_start(tr, start, k)) return NAN;
  if (mlsys_offload_trace_facts(tr, &f)) return NAN;
  if (mlsys__offload_bcx_init(&x, tr, &f)) { mlsys_offload_facts_free(&f); return NAN; }
  if ((bc = (mlsys__offload_bc *)mlsys_alloc((size_t)k, sizeof *bc))) {
    if (mlsys__offload_costs(&x, &h, start, k, bc) < 0) t = mlsys__offload_model_time(&h, bc, k);
    mlsys_free(bc);
  } else t = NAN;
  mlsys__offload_bcx_free(&x);
  mlsys_offload_facts_free(&f);
  return t;
}

MLSYS_DEF void mlsys_offload_blocks_free(mlsys_offload_blocks *b) {
  mlsys_free(b->start);
  memset(b, 0, sizeof *b);
}

MLSYS_DEF mlsys_status mlsys_offload_blocks_costs(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                  const mlsys_offload_blocks *b, mlsys_offload_block_cost *out) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__offload_bcx x;
  mlsys_status st;
  int j;
  if ((st = mlsys__offload_hw_norm(tr, hw, &h)) || (st = mlsys__offload_check_start(tr, b->start, b->k))) return st;
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if ((st = mlsys__offload_bcx_init(&x, tr, &f))) { mlsys_offload_facts_free(&f); return st; }
  for (j = 0; j < b->k; j++) {
    mlsys__offload_bc bc;
    mlsys__offload_block_cost(&x, b->start[j], b->start[j + 1], &bc);
    out[j].compute_us = bc.c;
    out[j].migration_us = mlsys__offload_mig(&h, &bc);
    out[j].ws_bytes = bc.ws;
    out[j].in_bytes = bc.in;
    out[j].evict_bytes = bc.ev;
    out[j].n_in = bc.nin;
    out[j].n_evict = bc.nev;
  }
  mlsys__offload_bcx_free(&x);
  mlsys_offload_facts_free(&f);
  return MLSYS_OK;
}

/* The op whose own tensors do not fit a buffer, or -1. */
static int mlsys__offload_oversized_op(mlsys__offload_bcx *x, const mlsys__offload_hwn *h, int64_t *ws) {
  int i;
  mlsys__offload_bc b;
  for (i = 0; i < x->tr->n_op; i++) {
    mlsys__offload_block_cost(x, i, i + 1, &b);
    if (b.ws > h->cbuf) { *ws = b.ws; return i; }
  }
  return -1;
}

/* The exact DP of spec §3.4 over op groups, with the carry of §3.6 item 4: a tensor block B_{i+1} needs that block
   B_i also touched is still in B_i's buffer and is copied on the GPU at B_{i+1}'s start, not over PCIe. So the cost of
   a block depends on the one before it, which the DP's state (the last block [a,b)) already holds:
     F[a][b] = when block [a,b)'s compute can start (its carry done), everything before a partitioned;
     F[0][b] = m(0,b);  F[b][e] = min_a F[a][b] + max(c(a,b), m_a(b,e)) + carry_a(b,e);  T = min_a F[a][n] + c(a,n)
   where m_a(b,e) moves over PCIe what [b,e) needs from outside and [a,b) did not touch, plus [b,e)'s evictions.
   For a fixed (b,e) the bytes [a,b) did not touch are a prefix sum over a of the tensors by the group of their last
   access before b, so each step is O(1): O(n^3) (times k_max) in groups. */
static mlsys_status mlsys__offload_dp(mlsys__offload_bcx *x, const mlsys__offload_hwn *h, int k_max, int max_groups,
                                      mlsys_offload_blocks *out) {
  const mlsys_offload_trace *tr = x->tr;
  const mlsys_offload_facts *fa_ = x->f;
  int n_op = tr->n_op, ng = 0, *gs = NULL, *gof = NULL, a, b, e, k, L, i, j;
  size_t W;
  double *C = NULL, *TEV = NULL, *M0 = NULL, *F = NULL, *hb = NULL;
  int *arg = NULL, *hn = NULL, *acc_off = NULL, *acc = NULL, *seen2 = NULL;
  unsigned char *ok = NULL;
  mlsys_status st = MLSYS_OK;
  double best = INFINITY;
  int best_a = -1, best_l = -1;
  /* groups: consecutive ops, at most ⌈n/max_groups⌉ each, cut early where a group would overflow a buffer (so every
     group fits whenever every op does) */
  {
    int g = (n_op + max_groups - 1) / max_groups, s0 = 0;
    mlsys__offload_bc bc;
    gs = (int *)mlsys_alloc((size_t)n_op + 1, sizeof *gs);
    gof = (int *)mlsys_alloc((size_t)n_op + 1, sizeof *gof);
    if (!gs || !gof) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory"); goto done; }
    gs[ng++] = 0;
    while (s0 < n_op) {
      int t = s0 + 1;
      while (t < n_op && t - s0 < g) {
        mlsys__offload_block_cost(x, s0, t + 1, &bc);
        if (bc.ws > h->cbuf) break;
        t++;
      }
      for (i = s0; i < t; i++) gof[i] = ng - 1;
      gs[ng++] = t;
      s0 = t;
    }
    ng--;   /* gs[0..ng] */
  }
  /* every tensor's accesses in op order (CSR), to find its last access before a block */
  acc_off = (int *)mlsys_calloc((size_t)tr->n_t + 2, sizeof *acc_off);
  acc = (int *)mlsys_alloc((size_t)tr->n_ids + 1, sizeof *acc);
  seen2 = (int *)mlsys_calloc((size_t)tr->n_t + 1, sizeof *seen2);
  if (!acc_off || !acc || !seen2) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory"); goto done; }
  for (i = 0; i < n_op; i++)
    for (j = 0; j < tr->op[i].n_in + tr->op[i].n_out; j++) acc_off[tr->ids[tr->op[i].in0 + j] + 1]++;
  for (i = 0; i < tr->n_t; i++) acc_off[i + 1] += acc_off[i];
  {
    int *fill = seen2;   /* borrowed as a cursor, reset below */
    for (i = 0; i < n_op; i++)
      for (j = 0; j < tr->op[i].n_in + tr->op[i].n_out; j++) {
        int t = tr->ids[tr->op[i].in0 + j];
        acc[acc_off[t] + fill[t]++] = i;
      }
    memset(seen2, 0, (size_t)tr->n_t * sizeof *seen2);
  }
  W = (size_t)ng + 1;
  L = k_max > 0 ? k_max : 1;   /* layers: blocks so far − 1 when limited */
  C = (double *)mlsys_alloc(W * W, sizeof *C);
  TEV = (double *)mlsys_alloc(W * W, sizeof *TEV);
  M0 = (double *)mlsys_alloc(W, sizeof *M0);
  ok = (unsigned char *)mlsys_calloc(W * W, 1);
  F = (double *)mlsys_alloc(W * W * (size_t)L, sizeof *F);
  arg = (int *)mlsys_alloc(W * W * (size_t)L, sizeof *arg);
  hb = (double *)mlsys_alloc(W + 1, sizeof *hb);
  hn = (int *)mlsys_alloc(W + 1, sizeof *hn);
  if (!C || !TEV || !M0 || !ok || !F || !arg || !hb || !hn) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory for %d groups", ng);
    goto done;
  }
  /* per pair: compute, fit, eviction time; the first block's full migration */
  for (a = 0; a < ng; a++)
    for (b = a + 1; b <= ng; b++) {
      mlsys__offload_bc bc;
      mlsys__offload_block_cost(x, gs[a], gs[b], &bc);
      if (bc.ws > h->cbuf) break;
      ok[a * W + b] = 1;
      C[a * W + b] = bc.c;
      TEV[a * W + b] = bc.ev ? (double)bc.ev / h->d2h + h->lat * bc.nev : 0.0;
      if (a == 0) M0[b] = mlsys__offload_mig(h, &bc);
    }
  for (i = 0; i < (int)(W * W) * L; i++) { F[i] = INFINITY; arg[i] = -1; }
  for (b = 1; b <= ng; b++)
    if (ok[0 * W + b]) F[0 * W + b] = M0[b];
  for (b = 1; b < ng; b++) {
    double tot_b = 0;
    int tot_n = 0;
    for (i = 0; i <= ng; i++) { hb[i] = 0; hn[i] = 0; }
    for (e = b + 1; e <= ng; e++) {
      /* the tensors of group e-1 that come from outside [b, e): by the group of their last access before b */
      for (i = gs[e - 1]; i < gs[e]; i++)
        for (j = 0; j < tr->op[i].n_in + tr->op[i].n_out; j++) {
          int t = tr->ids[tr->op[i].in0 + j], lo, hi, pg = -1;
          if (seen2[t] == b + 1) continue;
          seen2[t] = b + 1;
          if (fa_->first_write[t] >= gs[b]) continue;
          lo = acc_off[t];
          hi = acc_off[t + 1];   /* last access < gs[b]: binary search in the sorted accesses */
          while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (acc[mid] < gs[b]) lo = mid + 1;
            else hi = mid;
          }
          if (lo > acc_off[t]) pg = gof[acc[lo - 1]];
          hb[pg + 1] += (double)tr->t[t].bytes;
          hn[pg + 1]++;
          tot_b += (double)tr->t[t].bytes;
          tot_n++;
        }
      if (!ok[b * W + e]) break;   /* the working set only grows with e */
      {
        double tev = TEV[b * W + e], pre_b = hb[0];
        int pre_n = hn[0];
        for (a = 0; a < b; a++) {
          double tin, m, ct, c;
          if (a > 0) { pre_b += hb[a]; pre_n += hn[a]; }
          if (!ok[a * W + b]) continue;
          tin = pre_n ? pre_b / h->h2d + h->lat * pre_n : 0.0;
          m = h->overlap ? (tin > tev ? tin : tev) : tin + tev;
          ct = tot_n - pre_n ? (tot_b - pre_b) / h->d2d + h->lat * (tot_n - pre_n) : 0.0;
          c = C[a * W + b];
          for (k = 0; k < L; k++) {
            double fv = F[(size_t)k * W * W + a * W + b], v;
            int to = k_max > 0 ? k + 1 : 0;
            if (fv == INFINITY || to >= L) { if (k_max <= 0) break; continue; }
            v = fv + (c > m ? c : m) + ct;
            if (v < F[(size_t)to * W * W + b * W + e]) {
              F[(size_t)to * W * W + b * W + e] = v;
              arg[(size_t)to * W * W + b * W + e] = a;
            }
            if (k_max <= 0) break;
          }
        }
      }
    }
  }
  for (k = 0; k < L; k++)
    for (a = 0; a < ng; a++) {
      double v = F[(size_t)k * W * W + a * W + ng];
      if (v == INFINITY) continue;
      v += C[a * W + ng];
      if (v < best) { best = v; best_a = a; best_l = k; }
    }
  if (best_a < 0) {
    st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "partition: no partition into at most %d blocks fits buffers of %lld bytes",
                         k_max, (long long)h->cbuf);
    goto done;
  }
  /* backtrack */
  {
    int cnt = 0, cur_a = best_a, cur_b = ng, l = best_l, *tmp;
    if (!(tmp = (int *)mlsys_alloc(W + 1, sizeof *tmp))) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory"); goto done; }
    tmp[cnt++] = ng;
    while (1) {
      tmp[cnt++] = cur_a;
      if (cur_a == 0) break;
      {
        int p = arg[(size_t)l * W * W + cur_a * W + cur_b];
        cur_b = cur_a;
        cur_a = p;
        if (k_max > 0) l--;
      }
    }
    out->k = cnt - 1;
    if (!(out->start = (int *)mlsys_alloc((size_t)cnt, sizeof(int)))) {
      mlsys_free(tmp);
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory");
      goto done;
    }
    for (i = 0; i < cnt; i++) out->start[i] = gs[tmp[cnt - 1 - i]];
    mlsys_free(tmp);
    out->time_us = best;
  }
done:
  mlsys_free(gs);
  mlsys_free(gof);
  mlsys_free(acc_off);
  mlsys_free(acc);
  mlsys_free(seen2);
  mlsys_free(C);
  mlsys_free(TEV);
  mlsys_free(M0);
  mlsys_free(ok);
  mlsys_free(F);
  mlsys_free(arg);
  mlsys_free(hb);
  mlsys_free(hn);
  return st;
}

/* Split every block over C_buf in halves until all fit (each op fits: checked before). */
static mlsys_status mlsys__offload_fit(mlsys__offload_bcx *x, const mlsys__offload_hwn *h, int *start, int k, mlsys_offload_blocks *out) {
  int cap = x->tr->n_op + 1, n = 0, i, *s;
  if (!(s = (int *)mlsys_alloc((size_t)cap, sizeof *s))) return mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory");
  s[n++] = 0;
  for (i = 0; i < k; i++) {
    /* a stack of pieces: [a, b) fits or is halved */
    int stack[128], sp = 0;
    stack[sp++] = start[i + 1];
    {
      int a = start[i];
      while (sp) {
        int b = stack[sp - 1];
        mlsys__offload_bc bc;
        mlsys__offload_block_cost(x, a, b, &bc);
        if (bc.ws <= h->cbuf || b - a == 1) {
          s[n++] = b;
          a = b;
          sp--;
        } else if (sp < 128)
          stack[sp++] = a + (b - a) / 2;
        else {
          s[n++] = b;   /* cannot happen: 2^127 ops */
          a = b;
          sp--;
        }
      }
    }
  }
  out->k = n - 1;
  out->split_extra = out->k - k;
  out->start = s;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_partition(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                               const mlsys_offload_part_opts *o, mlsys_offload_blocks *out) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__offload_bcx x;
  mlsys_status st;
  int64_t ws = 0;
  int bad, kind = o ? o->kind : MLSYS_OFFLOAD_PART_DP;
  memset(out, 0, sizeof *out);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  if (tr->n_op < 1) return mlsys_set_error(MLSYS_ERR_ARG, "partition: the trace has no ops");
  if (kind < MLSYS_OFFLOAD_PART_DP || kind > MLSYS_OFFLOAD_PART_EVEN_BYTES) return mlsys_set_error(MLSYS_ERR_ARG, "partition: unknown kind %d", kind);
  if (kind != MLSYS_OFFLOAD_PART_DP && (!o || o->k < 1)) return mlsys_set_error(MLSYS_ERR_ARG, "partition: an even split needs the number of blocks k >= 1");
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if ((st = mlsys__offload_bcx_init(&x, tr, &f))) { mlsys_offload_facts_free(&f); return st; }
  if ((bad = mlsys__offload_oversized_op(&x, &h, &ws)) >= 0) {
    st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "op %d (%s) needs %lld bytes of tensors and workspace, more than a buffer of "
                         "%lld bytes (GPU %lld bytes, two buffers): it cannot run under double buffering",
                         bad, mlsys_offload_op_name(tr, bad), (long long)ws, (long long)h.cbuf, (long long)h.gpu);
  } else if (kind == MLSYS_OFFLOAD_PART_DP) {
    int mg = o && o->max_groups > 0 ? o->max_groups : (o && o->k_max > 0 ? 128 : 512);
    st = mlsys__offload_dp(&x, &h, o ? o->k_max : 0, mg, out);
  } else {
    int k = o->k < tr->n_op ? o->k : tr->n_op, i, j, *s;
    if (!(s = (int *)mlsys_alloc((size_t)k + 1, sizeof *s))) st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory");
    else {
      double tot = 0, acc = 0;
      int cut = 1;
      s[0] = 0;
      if (kind == MLSYS_OFFLOAD_PART_EVEN_OPS) {
        int per = (tr->n_op + k - 1) / k;
        for (cut = 1; cut < k && cut * per < tr->n_op; cut++) s[cut] = cut * per;
      } else {
        /* weight per op: its time, or the bytes it touches (its tensors and workspace) */
        for (i = 0; i < tr->n_op; i++) {
          const mlsys_offload_op *op = &tr->op[i];
          if (kind == MLSYS_OFFLOAD_PART_EVEN_TIME) tot += op->time_us;
          else {
            tot += (double)op->workspace;
            for (j = 0; j < op->n_in + op->n_out; j++) tot += (double)tr->t[tr->ids[op->in0 + j]].bytes;
          }
        }
        for (i = 0; i < tr->n_op && cut < k; i++) {
          const mlsys_offload_op *op = &tr->op[i];
          if (kind == MLSYS_OFFLOAD_PART_EVEN_TIME) acc += op->time_us;
          else {
            acc += (double)op->workspace;
            for (j = 0; j < op->n_in + op->n_out; j++) acc += (double)tr->t[tr->ids[op->in0 + j]].bytes;
          }
          if (acc >= tot * cut / k && i + 1 < tr->n_op && i + 1 > s[cut - 1]) s[cut++] = i + 1;
        }
      }
      s[cut] = tr->n_op;
      st = mlsys__offload_fit(&x, &h, s, cut, out);
      mlsys_free(s);
    }
  }
  if (!st) {
    mlsys__offload_bc *bc = (mlsys__offload_bc *)mlsys_alloc((size_t)out->k, sizeof *bc);
    if (!bc) st = mlsys_set_error(MLSYS_ERR_NOMEM, "partition: out of memory");
    else {
      mlsys__offload_costs(&x, &h, out->start, out->k, bc);
      out->time_us = mlsys__offload_model_time(&h, bc, out->k);
      out->compute_us = f.compute_us;
      out->buf_bytes = h.cbuf;
      mlsys_free(bc);
    }
  }
  if (st) mlsys_offload_blocks_free(out);
  mlsys__offload_bcx_free(&x);
  mlsys_offload_facts_free(&f);
  return st;
}

MLSYS_DEF void mlsys_offload_blocks_label(const mlsys_offload_trace *tr, const mlsys_offload_blocks *b, int k_max, float *label) {
  int j, i, e;
  if (k_max < 1) return;
  memset(label, 0, (size_t)k_max * 10 * sizeof *label);
  for (j = 0; j < b->k; j++) {
    float *row = label + (size_t)(j < k_max ? j : k_max - 1) * 10;
    for (i = b->start[j]; i < b->start[j + 1]; i++) {
      const mlsys_offload_sig *s = &tr->op[i].sig;
      row[0] += 1;
      for (e = 0; e < 6; e++) row[1 + e] += (float)s->idiom[e];
      for (e = 0; e < 3; e++) row[7 + e] += (float)s->dim[e];
    }
  }
}

/* ================================================================================================================
   4. Simulators
   ================================================================================================================ */
static const char *const mlsys__offload_policy_names[MLSYS_OFFLOAD_POLICY_N_] = {"pytorch", "dynn", "dtr", "uvm", "zero"};
MLSYS_DEF const char *mlsys_offload_policy_name(int policy) {
  return policy >= 0 && policy < MLSYS_OFFLOAD_POLICY_N_ ? mlsys__offload_policy_names[policy] : "?";
}
MLSYS_DEF int mlsys_offload_policy_find(const char *name) {
  int i;
  for (i = 0; name && i < MLSYS_OFFLOAD_POLICY_N_; i++)
    if (strcmp(name, mlsys__offload_policy_names[i]) == 0) return i;
  return -1;
}

static void mlsys__offload_infeasible(mlsys_offload_simres *r, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static void mlsys__offload_infeasible(mlsys_offload_simres *r, const char *fmt, ...) {
  va_list ap;
  r->feasible = 0;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof r->why, fmt, ap);
  va_end(ap);
}

MLSYS_DEF mlsys_status mlsys_offload_sim_pytorch(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                 mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys_status st;
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  r->compute_us = r->time_us = f.compute_us;
  r->peak_bytes = f.peak_bytes;
  r->n_blocks = 1;
  r->feasible = 1;
  if (f.peak_bytes > h.gpu)
    mlsys__offload_infeasible(r, "out of memory: %lld bytes live at op %d (%s), the GPU has %lld", (long long)f.peak_bytes,
                              f.peak_op, mlsys_offload_op_name(tr, f.peak_op), (long long)h.gpu);
  mlsys_offload_facts_free(&f);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_dynn(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                              const mlsys_offload_blocks *plan, mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__offload_bcx x;
  mlsys__offload_bc *bc = NULL;
  mlsys_status st;
  int k, K, over;
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  r->compute_us = f.compute_us;
  r->feasible = 1;
  if (!plan && f.peak_bytes <= h.gpu) {   /* it fits: nothing to offload */
    r->time_us = f.compute_us;
    r->peak_bytes = f.peak_bytes;
    r->n_blocks = 1;
    mlsys_offload_facts_free(&f);
    return MLSYS_OK;
  }
  if (!plan || (st = mlsys__offload_check_start(tr, plan->start, plan->k))) {
    mlsys_offload_facts_free(&f);
    return st ? st : mlsys_set_error(MLSYS_ERR_ARG, "DyNN-Offload simulation needs a partition");
  }
  K = plan->k;
  if ((st = mlsys__offload_bcx_init(&x, tr, &f))) { mlsys_offload_facts_free(&f); return st; }
  if (!(bc = (mlsys__offload_bc *)mlsys_alloc((size_t)K, sizeof *bc))) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "simulation: out of memory");
    goto done;
  }
  r->n_blocks = K;
  if ((over = mlsys__offload_costs(&x, &h, plan->start, K, bc)) >= 0) {
    mlsys__offload_infeasible(r, "block %d (ops %d..%d) needs %lld bytes, more than a buffer of %lld", over,
                              plan->start[over], plan->start[over + 1] - 1, (long long)bc[over].ws, (long long)h.cbuf);
    goto done;
  }
  {
    /* The runtime's evictions, tracked exactly: a tensor leaves block k's buffer over PCIe only if it is dirty (written
       on the GPU since it was last copied out), needed after block k, and not carried into block k+1 (then it stays
       dirty in k+1's buffer). The cost model behind the DP counts every dirty live tensor instead (a bound). */
    unsigned char *dirty = (unsigned char *)mlsys_calloc((size_t)tr->n_t + 1, 1);
    int *nxt = (int *)mlsys_calloc((size_t)tr->n_t + 1, sizeof(int)), i, j2;
    if (!dirty || !nxt) {
      mlsys_free(dirty);
      mlsys_free(nxt);
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "simulation: out of memory");
      goto done;
    }
    for (k = 0; k < K; k++) {
      bc[k].ev = 0;
      bc[k].nev = 0;
      if (k + 1 < K)
        for (i = plan->start[k + 1]; i < plan->start[k + 2]; i++)
          for (j2 = 0; j2 < tr->op[i].n_in + tr->op[i].n_out; j2++) nxt[tr->ids[tr->op[i].in0 + j2]] = k + 2;
      for (i = plan->start[k]; i < plan->start[k + 1]; i++)
        for (j2 = 0; j2 < tr->op[i].n_out; j2++) dirty[tr->ids[tr->op[i].out0 + j2]] = 1;
      for (i = plan->start[k]; i < plan->start[k + 1]; i++)
        for (j2 = 0; j2 < tr->op[i].n_in + tr->op[i].n_out; j2++) {
          int t = tr->ids[tr->op[i].in0 + j2];
          if (!dirty[t] || f.last_use[t] < plan->start[k + 1] || nxt[t] == k + 2) continue;
          dirty[t] = 0;   /* copied out once */
          bc[k].ev += tr->t[t].bytes;
          bc[k].nev++;
        }
    }
    mlsys_free(dirty);
    mlsys_free(nxt);
  }
  {
    /* events: S = block start; D (or Dh, Dd) = when the copy engine(s) are free */
#define MLSYS__OFFLOAD_TIN(b) ((b).in ? (double)(b).in / h.h2d + h.lat * (b).nin : 0.0)
#define MLSYS__OFFLOAD_TEV(b) ((b).ev ? (double)(b).ev / h.d2h + h.lat * (b).nev : 0.0)
    double S = MLSYS__OFFLOAD_TIN(bc[0]), Dh = S, Dd = 0, end;
    int64_t peak = 0;
    for (k = 0; k < K; k++) {
      double ready = 0;
      r->bytes_h2d += bc[k].in;
      r->bytes_d2d += bc[k].carry;
      r->bytes_d2h += bc[k].ev;
      if (k + 1 < K && bc[k].ws + bc[k + 1].ws > peak) peak = bc[k].ws + bc[k + 1].ws;
      if (bc[k].ws > peak) peak = bc[k].ws;
      /* while block k computes: evict block k-1, then prefetch block k+1 (the seed's order) */
      if (h.overlap) {
        if (k >= 1) Dd = (S > Dd ? S : Dd) + MLSYS__OFFLOAD_TEV(bc[k - 1]);
        if (k + 1 < K) Dh = (S > Dh ? S : Dh) + MLSYS__OFFLOAD_TIN(bc[k + 1]);
        ready = Dh > Dd ? Dh : Dd;
      } else {
        double w = S > Dh ? S : Dh;
        if (k >= 1) w += MLSYS__OFFLOAD_TEV(bc[k - 1]);
        if (k + 1 < K) w += MLSYS__OFFLOAD_TIN(bc[k + 1]);
        Dh = Dd = w;
        ready = w;
      }
      if (k + 1 < K) S = (S + bc[k].c > ready ? S + bc[k].c : ready) + mlsys__offload_carry_time(&h, &bc[k + 1]);
      else {
        /* the last block's dirty tensors go out after it; the one before it went during it */
        end = S + bc[k].c;
        if (Dd > end) end = Dd;
        if (Dh > end) end = Dh;
        end += MLSYS__OFFLOAD_TEV(bc[k]);
        r->time_us = end;
      }
    }
#undef MLSYS__OFFLOAD_TIN
#undef MLSYS__OFFLOAD_TEV
    r->peak_bytes = tr->fixed_bytes + peak;
    r->migration_us = r->time_us - r->compute_us;
    if (r->migration_us < 0) r->migration_us = 0;
  }
done:
  mlsys_free(bc);
  mlsys__offload_bcx_free(&x);
  mlsys_offload_facts_free(&f);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_simulate(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int policy,
                                              mlsys_offload_simres *r) {
  mlsys_status st;
  memset(r, 0, sizeof *r);
  switch (policy) {
    case MLSYS_OFFLOAD_POLICY_PYTORCH: return mlsys_offload_sim_pytorch(tr, hw, r);
    case MLSYS_OFFLOAD_POLICY_DYNN: {
      mlsys_offload_blocks b;
      mlsys_offload_part_opts o;
      int64_t peak = mlsys_offload_peak_bytes(tr);
      if (peak < 0) return mlsys_last_status();
      if (hw && hw->gpu_bytes >= peak) return mlsys_offload_sim_dynn(tr, hw, NULL, r);
      memset(&o, 0, sizeof o);
      st = mlsys_offload_partition(tr, hw, &o, &b);
      if (st == MLSYS_ERR_INFEASIBLE) {
        mlsys__offload_infeasible(r, "%s", mlsys_last_error());
        return MLSYS_OK;
      }
      if (st) return st;
      st = mlsys_offload_sim_dynn(tr, hw, &b, r);
      mlsys_offload_blocks_free(&b);
      return st;
    }
    default: return mlsys__offload_simulate_more(tr, hw, policy, r);
  }
}


/* ================================================================================================================
   5. Generated DyNN traces
   ================================================================================================================ */
MLSYS_DEF void mlsys_offload_tree_free(mlsys_offload_tree *t) {
  mlsys_free(t->parent);
  memset(t, 0, sizeof *t);
}

MLSYS_DEF mlsys_status mlsys_offload_trees_parse(const char *text, size_t len, const char *source,
                                                 mlsys_offload_tree **trees, int *n) {
  size_t i = 0;
  int line = 1, cap = 0, *stack = NULL, scap = 0;
  mlsys_status st = MLSYS_OK;
  *trees = NULL;
  *n = 0;
  if (!source) source = "trees";
  while (i < len && !st) {
    size_t ls = i;
    /* a tree starts with '(' at the beginning of a line (after blanks); anything else is link-parser chatter */
    while (i < len && (text[i] == ' ' || text[i] == '\t')) i++;
    if (i < len && text[i] == '(') {
      mlsys_offload_tree t;
      int depth = 0, tcap = 0, start_line = line, in_word = 0;
      memset(&t, 0, sizeof t);
      for (; i < len; i++) {
        char ch = text[i];
        int isnode = 0, par = depth > 0 ? stack[depth - 1] : -1;
        if (ch == '\n') line++;
        if (ch == '(') { isnode = 1; in_word = 0; }
        else if (ch == ')') {
          in_word = 0;
          if (depth == 0) { st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: ')' closes nothing", source, line); break; }
          depth--;
          if (depth == 0) { i++; break; }
          continue;
        } else if (isspace((unsigned char)ch)) { in_word = 0; continue; }
        else {
          /* the first word after '(' is the node's label; later words are leaves */
          if (in_word) continue;
          in_word = 1;
          if (i > 0 && text[i - 1] == '(') continue;
          isnode = 2;
        }
        if (isnode) {
          if (t.n == tcap) {
            int c = tcap ? 2 * tcap : 32, *q = (int *)mlsys_realloc_array(t.parent, (size_t)c, sizeof *q);
            if (!q) { st = MLSYS_ERR_NOMEM; break; }
            t.parent = q;
            tcap = c;
          }
          t.parent[t.n] = par;
          if (isnode == 1) {
            if (depth == scap) {
              int c = scap ? 2 * scap : 64, *q = (int *)mlsys_realloc_array(stack, (size_t)c, sizeof *q);
              if (!q) { st = MLSYS_ERR_NOMEM; break; }
              stack = q;
              scap = c;
            }
            stack[depth++] = t.n;
          }
          t.n++;
        }
      }
      if (!st && depth != 0)
        st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: the tree that starts here is not closed (%d brackets open)", source,
                             start_line, depth);
      /* what follows a tree on its line must be blank: a stray ')' or word means the brackets are off */
      while (!st && i < len && text[i] != '\n') {
        if (!isspace((unsigned char)text[i]))
          st = mlsys_set_error(MLSYS_ERR_PARSE, "%s:%d: '%c' after the tree that ends here", source, line, text[i]);
        i++;
      }
      if (st) { mlsys_offload_tree_free(&t); break; }
      if (*n == cap) {
        int c = cap ? 2 * cap : 16;
        mlsys_offload_tree *q = (mlsys_offload_tree *)mlsys_realloc_array(*trees, (size_t)c, sizeof *q);
        if (!q) { mlsys_offload_tree_free(&t); st = MLSYS_ERR_NOMEM; break; }
        *trees = q;
        cap = c;
      }
      (*trees)[(*n)++] = t;
      continue;
    }
    (void)ls;
    while (i < len && text[i] != '\n') i++;
    if (i < len) { i++; line++; }
  }
  mlsys_free(stack);
  if (st) {
    int k;
    if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "%s: out of memory reading trees", source);
    for (k = 0; k < *n; k++) mlsys_offload_tree_free(&(*trees)[k]);
    mlsys_free(*trees);
    *trees = NULL;
    *n = 0;
  }
  return st;
}

/* The generator: forward ops go straight into the trace (their ids kept in fwd[]), the backward and the optimizer
   are derived from them at the end. */
typedef struct {
  mlsys_offload_trace *tr;
  double rate, bw, launch;   /* flops/µs, bytes/µs, µs */
  int64_t eb;                /* element bytes */
  int *fwd, n_fwd, cap_fwd;
  mlsys_status st;
} mlsys__offload_gen;

static void mlsys__offload_gen_init(mlsys__offload_gen *G, const mlsys_offload_gpu_model *g, mlsys_offload_trace *tr) {
  memset(G, 0, sizeof *G);
  mlsys_offload_trace_init(tr);
  G->tr = tr;
  G->rate = (g && g->tflops > 0 ? g->tflops : 15.0) * 1e6;
  G->bw = (g && g->hbm_gbps > 0 ? g->hbm_gbps : 900.0) * 1e3;
  G->launch = g && g->launch_us > 0 ? g->launch_us : 4.0;
  G->eb = g && g->elem_bytes > 0 ? g->elem_bytes : 4;
}

static int mlsys__offload_gen_tensor(mlsys__offload_gen *G, int64_t elems, mlsys_offload_tkind kind) {
  int t;
  if (G->st) return 0;
  if ((t = mlsys_offload_trace_tensor(G->tr, elems * G->eb, kind)) < 0) G->st = mlsys_last_status();
  return t < 0 ? 0 : t;
}

static double mlsys__offload_gen_time(const mlsys__offload_gen *G, double flops, double bytes) {
  double a = flops / G->rate, b = bytes / G->bw;
  return (a > b ? a : b) + G->launch;
}

/* A forward op reading in[0..n) and writing a new activation of `elems` elements; returns the output tensor. */
static int mlsys__offload_gen_op(mlsys__offload_gen *G, const char *name, int n, const int *in, int64_t elems, double flops,
                                 int64_t workspace) {
  int out, i, op;
  double bytes;
  if (G->st) return 0;
  out = mlsys__offload_gen_tensor(G, elems, MLSYS_OFFLOAD_T_ACT);
  bytes = (double)G->tr->t[out].bytes + (double)workspace;
  for (i = 0; i < n; i++) bytes += (double)G->tr->t[in[i]].bytes;
  if (G->st) return 0;
  if ((op = mlsys_offload_trace_op(G->tr, name, mlsys__offload_gen_time(G, flops, bytes), n, in, 1, &out, workspace, NULL)) < 0) {
    G->st = mlsys_last_status();
    return 0;
  }
  if (G->n_fwd == G->cap_fwd) {
    int c = G->cap_fwd ? 2 * G->cap_fwd : 256, *q = (int *)mlsys_realloc_array(G->fwd, (size_t)c, sizeof *q);
    if (!q) { G->st = mlsys_set_error(MLSYS_ERR_NOMEM, "trace generator: out of memory"); return 0; }
    G->fwd = q;
    G->cap_fwd = c;
  }
  G->fwd[G->n_fwd++] = op;
  return out;
}

/* Backward (reverse order, 2x the forward's time: one product per input), then SGD per weight. The last forward op
   is the loss: its backward starts the chain. */
static mlsys_status mlsys__offload_gen_finish(mlsys__offload_gen *G) {
  mlsys_offload_trace *tr = G->tr;
  int *grad = NULL, j, i, *in = NULL, *out = NULL, cap = 0, nt0;
  char name[96];
  if (G->st) goto fail;
  nt0 = tr->n_t;
  if (!(grad = (int *)mlsys_alloc((size_t)nt0 + 1, sizeof *grad))) { G->st = MLSYS_ERR_NOMEM; goto fail; }
  for (i = 0; i < nt0; i++) grad[i] = -1;
  for (j = G->n_fwd - 1; j >= 0 && !G->st; j--) {
    int op = G->fwd[j], nin, nout = 0, n_rd = 0, o, bop;
    const mlsys_offload_op *f = &tr->op[op];
    int y = tr->ids[f->out0];
    double t = 2 * (f->time_us - G->launch) + G->launch;
    if (j != G->n_fwd - 1 && grad[y] < 0) continue;   /* off the loss's path */
    nin = f->n_in;
    if (2 * nin + 2 > cap) {
      int c = 2 * nin + 8, *q1 = (int *)mlsys_realloc_array(in, (size_t)c, sizeof *q1), *q2;
      if (q1) in = q1;
      q2 = (int *)mlsys_realloc_array(out, (size_t)c, sizeof *q2);
      if (q2) out = q2;
      if (!q1 || !q2) { G->st = MLSYS_ERR_NOMEM; break; }
      cap = c;
    }
    if (grad[y] >= 0) in[n_rd++] = grad[y];
    for (i = 0; i < nin; i++) {
      int x = tr->ids[f->in0 + i], k, dup = 0;
      in[n_rd++] = x;   /* the saved input */
      if (tr->t[x].kind == MLSYS_OFFLOAD_T_INPUT) continue;
      for (k = 0; k < nout; k++) dup |= out[k] == grad[x] && grad[x] >= 0;
      if (dup) continue;
      if (grad[x] >= 0) {   /* accumulate: read and write the same gradient */
        in[n_rd++] = grad[x];
        out[nout++] = grad[x];
      } else {
        int g = mlsys_offload_trace_tensor(tr, tr->t[x].bytes, MLSYS_OFFLOAD_T_GRAD);
        if (g < 0) { G->st = mlsys_last_status(); break; }
        {
          int *q = (int *)mlsys_realloc_array(grad, (size_t)tr->n_t + 1, sizeof *q);
          if (!q) { G->st = MLSYS_ERR_NOMEM; break; }
          grad = q;
          grad[g] = -1;
        }
        grad[x] = g;
        out[nout++] = g;
      }
    }
    if (G->st) break;
    snprintf(name, sizeof name, "%sBackward", mlsys_offload_op_name(tr, op));
    if ((bop = mlsys_offload_trace_op(tr, name, t, n_rd, in, nout, out, tr->op[op].workspace, NULL)) < 0) {
      G->st = mlsys_last_status();
      break;
    }
    tr->op[bop].is_bwd = 1;
    (void)o;
  }
  /* SGD: w -= lr * g, in place */
  for (i = 0; i < nt0 && !G->st; i++)
    if (tr->t[i].kind == MLSYS_OFFLOAD_T_PARAM && grad[i] >= 0) {
      int rd[2] = {i, grad[i]}, op;
      double bytes = 3.0 * (double)tr->t[i].bytes;
      if ((op = mlsys_offload_trace_op(tr, "SGD", mlsys__offload_gen_time(G, 2.0 * (double)tr->t[i].bytes / (double)G->eb, bytes),
                                       2, rd, 1, &i, 0, NULL)) < 0)
        G->st = mlsys_last_status();
      else
        tr->op[op].is_bwd = 1;
    }
fail:
  mlsys_free(grad);
  mlsys_free(in);
  mlsys_free(out);
  mlsys_free(G->fwd);
  G->fwd = NULL;
  if (G->st) {
    if (G->st == MLSYS_ERR_NOMEM) mlsys_set_error(G->st, "trace generator: out of memory");
    mlsys_offload_trace_free(G->tr);
  }
  return G->st;
}

static int mlsys__offload_gen_param(mlsys__offload_gen *G, int64_t elems) { return mlsys__offload_gen_tensor(G, elems, MLSYS_OFFLOAD_T_PARAM); }

MLSYS_DEF mlsys_status mlsys_offload_gen_treelstm(const mlsys_offload_tree *trees, int n_trees, int in_dim, int hidden,
                                                  const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr) {
  mlsys__offload_gen G;
  int64_t h = hidden, d = in_dim;
  int Wiou, Uiou, Uf, Wc, s, i, *hs = NULL, *cs = NULL, *kids = NULL, kcap = 0, loss_in[64], nl = 0;
  if (!trees || n_trees < 1 || hidden < 1 || in_dim < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "treelstm: need >= 1 tree and positive sizes (got %d trees, in %d, hidden %d)",
                           n_trees, in_dim, hidden);
  mlsys__offload_gen_init(&G, gpu, tr);
  Wiou = mlsys__offload_gen_param(&G, d * 3 * h);
  Uiou = mlsys__offload_gen_param(&G, h * 3 * h);
  Uf = mlsys__offload_gen_param(&G, h * h);
  Wc = mlsys__offload_gen_param(&G, h * 5);
  for (s = 0; s < n_trees && !G.st; s++) {
    const mlsys_offload_tree *t = &trees[s];
    int root = -1;
    if (t->n < 1) { G.st = mlsys_set_error(MLSYS_ERR_ARG, "treelstm: tree %d is empty", s); break; }
    hs = (int *)mlsys_realloc_array(hs, (size_t)t->n, sizeof *hs);
    cs = (int *)mlsys_realloc_array(cs, (size_t)t->n, sizeof *cs);
    if (!hs || !cs) { G.st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm: out of memory"); break; }
    for (i = 0; i < t->n; i++)
      if (t->parent[i] >= i || t->parent[i] < -1) {
        G.st = mlsys_set_error(MLSYS_ERR_ARG, "treelstm: tree %d node %d has parent %d (parents come first)", s, i, t->parent[i]);
        break;
      }
    /* children before parents: reverse node order */
    for (i = t->n - 1; i >= 0 && !G.st; i--) {
      int nk = 0, k, iou;
      for (k = i + 1; k < t->n; k++)
        if (t->parent[k] == i) {
          if (nk + 4 > kcap) {
            int *q = (int *)mlsys_realloc_array(kids, (size_t)(kcap = 2 * kcap + 16), sizeof *q);
            if (!q) { G.st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm: out of memory"); break; }
            kids = q;
          }
          kids[nk++] = k;
        }
      if (G.st) break;
      if (t->parent[i] < 0) root = i;
      if (nk == 0) {   /* a leaf: its word's embedding, the input gates, the cell */
        int x = mlsys__offload_gen_tensor(&G, d, MLSYS_OFFLOAD_T_INPUT), in2[2] = {x, Wiou};
        iou = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 3 * h, 2.0 * (double)(d * 3 * h), 0);
        cs[i] = mlsys__offload_gen_op(&G, "LSTMCell", 1, &iou, h, 10.0 * (double)h, 0);
        {
          int in3[2] = {cs[i], iou};
          hs[i] = mlsys__offload_gen_op(&G, "Tanh", 2, in3, h, 3.0 * (double)h, 0);
        }
      } else {
        int *hin = (int *)mlsys_alloc((size_t)nk * 3 + 2, sizeof *hin), hsum, in2[2], f, n_cell = 0;
        if (!hin) { G.st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm: out of memory"); break; }
        for (k = 0; k < nk; k++) hin[k] = hs[kids[k]];
        hsum = mlsys__offload_gen_op(&G, "ReduceSum", nk, hin, h, (double)(nk * h), 0);
        in2[0] = hsum; in2[1] = Uiou;
        iou = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 3 * h, 2.0 * (double)(h * 3 * h), 0);
        hin[n_cell++] = iou;
        for (k = 0; k < nk; k++) {   /* one forget gate per child (child-sum) */
          in2[0] = hs[kids[k]]; in2[1] = Uf;
          f = mlsys__offload_gen_op(&G, "MatMul", 2, in2, h, 2.0 * (double)(h * h), 0);
          hin[n_cell++] = f;
          hin[n_cell++] = cs[kids[k]];
        }
        cs[i] = mlsys__offload_gen_op(&G, "LSTMCell", n_cell, hin, h, (double)(10 + 3 * nk) * (double)h, 0);
        in2[0] = cs[i]; in2[1] = iou;
        hs[i] = mlsys__offload_gen_op(&G, "Tanh", 2, in2, h, 3.0 * (double)h, 0);
        mlsys_free(hin);
      }
    }
    if (G.st) break;
    {   /* the sentence's class from its root */
      int in2[2] = {hs[root], Wc}, logits = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 5, 10.0 * (double)h, 0);
      if (nl < 64) loss_in[nl++] = logits;
      else {   /* fold into a running loss so one op never reads thousands of tensors */
        int in3[2] = {loss_in[63], logits};
        loss_in[63] = mlsys__offload_gen_op(&G, "Add", 2, in3, 5, 5, 0);
      }
    }
  }
  if (!G.st) mlsys__offload_gen_op(&G, "Softmax", nl, loss_in, 1, 10.0 * nl, 0);
  mlsys_free(hs);
  mlsys_free(cs);
  mlsys_free(kids);
  if (!G.st && !(tr->name = mlsys_strdup("treelstm"))) G.st = MLSYS_ERR_NOMEM;
  return mlsys__offload_gen_finish(&G);
}

MLSYS_DEF mlsys_status mlsys_offload_gen_varlstm(const int *lengths, int batch, int in_dim, int hidden,
                                                 const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr) {
  mlsys__offload_gen G;
  int64_t h = hidden, d = in_dim;
  int W, U, Wc, b, t, loss_in[64], nl = 0;
  if (!lengths || batch < 1 || hidden < 1 || in_dim < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "varlstm: need >= 1 document and positive sizes");
  for (b = 0; b < batch; b++)
    if (lengths[b] < 1) return mlsys_set_error(MLSYS_ERR_ARG, "varlstm: document %d has %d tokens", b, lengths[b]);
  mlsys__offload_gen_init(&G, gpu, tr);
  W = mlsys__offload_gen_param(&G, d * 4 * h);
  U = mlsys__offload_gen_param(&G, h * 4 * h);
  Wc = mlsys__offload_gen_param(&G, h * 90);   /* Reuters-21578's 90 topics */
  for (b = 0; b < batch && !G.st; b++) {
    int hp = -1, cp = -1;
    for (t = 0; t < lengths[b] && !G.st; t++) {
      int x = mlsys__offload_gen_tensor(&G, d, MLSYS_OFFLOAD_T_INPUT), in2[2] = {x, W}, gx, gh = -1, cell[3], n = 0;
      gx = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 4 * h, 2.0 * (double)(d * 4 * h), 0);
      cell[n++] = gx;
      if (hp >= 0) {
        in2[0] = hp; in2[1] = U;
        gh = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 4 * h, 2.0 * (double)(h * 4 * h), 0);
        cell[n++] = gh;
        cell[n++] = cp;
      }
      cp = mlsys__offload_gen_op(&G, "LSTMCell", n, cell, h, 12.0 * (double)h, 0);
      in2[0] = cp; in2[1] = gx;
      hp = mlsys__offload_gen_op(&G, "Tanh", 2, in2, h, 3.0 * (double)h, 0);
    }
    {
      int in2[2] = {hp, Wc}, logits = mlsys__offload_gen_op(&G, "MatMul", 2, in2, 90, 180.0 * (double)h, 0);
      if (nl < 64) loss_in[nl++] = logits;
      else {
        int in3[2] = {loss_in[63], logits};
        loss_in[63] = mlsys__offload_gen_op(&G, "Add", 2, in3, 90, 90, 0);
      }
    }
  }
  if (!G.st) mlsys__offload_gen_op(&G, "Softmax", nl, loss_in, 1, 90.0 * nl, 0);
  if (!G.st && !(tr->name = mlsys_strdup("varlstm"))) G.st = MLSYS_ERR_NOMEM;
  return mlsys__offload_gen_finish(&G);
}

/* One transformer encoder layer on x (T tokens of d): attention, residual, layer norm; then the feed-forward given
   by ffn (NULL: the dense 4x one). Returns the layer's output. */
typedef int (*mlsys__offload_ffn_fn)(mlsys__offload_gen *G, int x, int64_t T, int64_t d, void *ctx);
static int mlsys__offload_gen_layer(mlsys__offload_gen *G, int x, int64_t B, int64_t L, int64_t d, mlsys__offload_ffn_fn ffn, void *ctx) {
  int64_t T = B * L, heads = d / 64 > 0 ? d / 64 : 1;
  int Wqkv = mlsys__offload_gen_param(G, d * 3 * d), Wo = mlsys__offload_gen_param(G, d * d), in2[2], qkv, a, o, r1, x1, f, r2;
  in2[0] = x; in2[1] = Wqkv;
  qkv = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * 3 * d, 2.0 * (double)(T * d * 3 * d), 0);
  /* scores and probabilities: B x heads x L x L, the attention's workspace */
  a = mlsys__offload_gen_op(G, "Attention", 1, &qkv, T * d, 4.0 * (double)(B * L * L * d), B * heads * L * L * G->eb);
  in2[0] = a; in2[1] = Wo;
  o = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * d, 2.0 * (double)(T * d * d), 0);
  in2[0] = o; in2[1] = x;
  r1 = mlsys__offload_gen_op(G, "Add", 2, in2, T * d, (double)(T * d), 0);
  x1 = mlsys__offload_gen_op(G, "LayerNorm", 1, &r1, T * d, 8.0 * (double)(T * d), 0);
  if (ffn) f = ffn(G, x1, T, d, ctx);
  else {
    int W1 = mlsys__offload_gen_param(G, d * 4 * d), W2 = mlsys__offload_gen_param(G, 4 * d * d), f1, g;
    in2[0] = x1; in2[1] = W1;
    f1 = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * 4 * d, 2.0 * (double)(T * d * 4 * d), 0);
    g = mlsys__offload_gen_op(G, "Gelu", 1, &f1, T * 4 * d, 8.0 * (double)(T * 4 * d), 0);
    in2[0] = g; in2[1] = W2;
    f = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * d, 2.0 * (double)(T * d * 4 * d), 0);
  }
  in2[0] = f; in2[1] = x1;
  r2 = mlsys__offload_gen_op(G, "Add", 2, in2, T * d, (double)(T * d), 0);
  return mlsys__offload_gen_op(G, "LayerNorm", 1, &r2, T * d, 8.0 * (double)(T * d), 0);
}

static int mlsys__offload_gen_head(mlsys__offload_gen *G, int x, int64_t T, int64_t d) {
  int Wc = mlsys__offload_gen_param(G, d * 2), in2[2] = {x, Wc}, logits;
  logits = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * 2, 4.0 * (double)(T * d), 0);
  return mlsys__offload_gen_op(G, "Softmax", 1, &logits, 1, 10.0 * (double)T, 0);
}

MLSYS_DEF mlsys_status mlsys_offload_gen_varbert(int layers, int batch, int seq_len, int hidden,
                                                 const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr) {
  mlsys__offload_gen G;
  int l, x;
  int64_t T = (int64_t)batch * seq_len;
  if (layers < 1 || batch < 1 || seq_len < 1 || hidden < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "varbert: layers, batch, sequence length and hidden size must be >= 1");
  mlsys__offload_gen_init(&G, gpu, tr);
  x = mlsys__offload_gen_tensor(&G, T * hidden, MLSYS_OFFLOAD_T_INPUT);
  for (l = 0; l < layers && !G.st; l++) x = mlsys__offload_gen_layer(&G, x, batch, seq_len, hidden, NULL, NULL);
  if (!G.st) mlsys__offload_gen_head(&G, x, T, hidden);
  if (!G.st && !(tr->name = mlsys_strdup("varbert"))) G.st = MLSYS_ERR_NOMEM;
  return mlsys__offload_gen_finish(&G);
}

typedef struct { int experts, top_k; mlsys_rng rng; } mlsys__offload_moe;

/* top-k routing: each token picks k distinct experts, the router's preference skewed (Zipf over a per-layer random
   order of the experts), so some experts get many tokens and some none, differently in each layer */
static int mlsys__offload_moe_ffn(mlsys__offload_gen *G, int x, int64_t T, int64_t d, void *ctx) {
  mlsys__offload_moe *M = (mlsys__offload_moe *)ctx;
  int E = M->experts, k = M->top_k < E ? M->top_k : E, e, Wr, in2[2], logits, route, *ys, ny = 0, *order;
  int64_t *cnt, t;
  double *w, wsum = 0;
  cnt = (int64_t *)mlsys_calloc((size_t)E, sizeof *cnt);
  w = (double *)mlsys_alloc((size_t)E, sizeof *w);
  order = (int *)mlsys_alloc((size_t)E, sizeof *order);
  ys = (int *)mlsys_alloc((size_t)E + 1, sizeof *ys);
  if (!cnt || !w || !order || !ys) {
    G->st = mlsys_set_error(MLSYS_ERR_NOMEM, "moe: out of memory");
    mlsys_free(cnt); mlsys_free(w); mlsys_free(order); mlsys_free(ys);
    return 0;
  }
  for (e = 0; e < E; e++) order[e] = e;
  for (e = E - 1; e > 0; e--) {
    int j = (int)mlsys_rng_below(&M->rng, (uint64_t)e + 1), tmp = order[e];
    order[e] = order[j];
    order[j] = tmp;
  }
  for (e = 0; e < E; e++) wsum += (w[order[e]] = 1.0 / (e + 1));
  for (t = 0; t < T; t++) {
    int picked = 0, guard = 0;
    unsigned char seen[256] = {0};
    while (picked < k && guard++ < 1000) {
      double u = mlsys_rng_uniform(&M->rng) * wsum;
      for (e = 0; e < E - 1 && u >= w[e]; e++) u -= w[e];
      if (e < 256 && seen[e]) continue;
      if (e < 256) seen[e] = 1;
      cnt[e]++;
      picked++;
    }
  }
  Wr = mlsys__offload_gen_param(G, d * E);
  in2[0] = x; in2[1] = Wr;
  logits = mlsys__offload_gen_op(G, "MatMul", 2, in2, T * E, 2.0 * (double)(T * d * E), 0);
  route = mlsys__offload_gen_op(G, "TopK", 1, &logits, T * k, (double)(T * E), 0);
  for (e = 0; e < E; e++) {
    int W1 = mlsys__offload_gen_param(G, d * 4 * d), W2 = mlsys__offload_gen_param(G, 4 * d * d), xe, h1, g;
    int64_t n = cnt[e];
    if (n == 0) continue;   /* this expert runs on no token: no op, no gradient */
    in2[0] = x; in2[1] = route;
    xe = mlsys__offload_gen_op(G, "Gather", 2, in2, n * d, (double)(n * d), 0);
    in2[0] = xe; in2[1] = W1;
    h1 = mlsys__offload_gen_op(G, "MatMul", 2, in2, n * 4 * d, 2.0 * (double)(n * d * 4 * d), 0);
    g = mlsys__offload_gen_op(G, "Gelu", 1, &h1, n * 4 * d, 8.0 * (double)(n * 4 * d), 0);
    in2[0] = g; in2[1] = W2;
    ys[ny++] = mlsys__offload_gen_op(G, "MatMul", 2, in2, n * d, 2.0 * (double)(n * d * 4 * d), 0);
  }
  ys[ny++] = route;
  e = mlsys__offload_gen_op(G, "ScatterND", ny, ys, T * d, (double)(T * d * k), 0);
  mlsys_free(cnt); mlsys_free(w); mlsys_free(order); mlsys_free(ys);
  return e;
}

MLSYS_DEF mlsys_status mlsys_offload_gen_moe(int layers, int experts, int top_k, int tokens, int hidden, uint64_t seed,
                                             const mlsys_offload_gpu_model *gpu, mlsys_offload_trace *tr) {
  mlsys__offload_gen G;
  mlsys__offload_moe M;
  int l, x;
  if (layers < 1 || experts < 1 || experts > 256 || top_k < 1 || tokens < 1 || hidden < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "moe: layers, tokens, hidden >= 1, experts 1..256, top_k >= 1");
  mlsys__offload_gen_init(&G, gpu, tr);
  M.experts = experts;
  M.top_k = top_k;
  mlsys_rng_seed(&M.rng, seed);
  x = mlsys__offload_gen_tensor(&G, (int64_t)tokens * hidden, MLSYS_OFFLOAD_T_INPUT);
  for (l = 0; l < layers && !G.st; l++) x = mlsys__offload_gen_layer(&G, x, 1, tokens, hidden, mlsys__offload_moe_ffn, &M);
  if (!G.st) mlsys__offload_gen_head(&G, x, tokens, hidden);
  if (!G.st && !(tr->name = mlsys_strdup("moe"))) G.st = MLSYS_ERR_NOMEM;
  return mlsys__offload_gen_finish(&G);
}

MLSYS_DEF mlsys_status mlsys_offload_gen_batch(const mlsys_offload_model_desc *m, int batch, mlsys_offload_trace *tr) {
  const char *name = m && m->model ? m->model : "";
  if (batch < 1) return mlsys_set_error(MLSYS_ERR_ARG, "batch %d: must be >= 1", batch);
  if (!strcmp(name, "treelstm") || !strcmp(name, "varlstm")) {
    int i, s, hidden = m->hidden > 0 ? m->hidden : 150, in_dim = m->in_dim > 0 ? m->in_dim : 300;
    mlsys_status st;
    if (!m->trees || m->n_trees < 1) return mlsys_set_error(MLSYS_ERR_ARG, "%s needs parsed sentences (trees)", name);
    if (!strcmp(name, "treelstm")) {
      mlsys_offload_tree *t = (mlsys_offload_tree *)mlsys_alloc((size_t)batch, sizeof *t);
      if (!t) return mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm: out of memory for batch %d", batch);
      for (i = 0; i < batch; i++) t[i] = m->trees[i % m->n_trees];   /* shallow: the trees are only read */
      st = mlsys_offload_gen_treelstm(t, batch, in_dim, hidden, m->gpu, tr);
      mlsys_free(t);
      return st;
    } else {
      int *len = (int *)mlsys_alloc((size_t)batch, sizeof *len);
      if (!len) return mlsys_set_error(MLSYS_ERR_NOMEM, "varlstm: out of memory for batch %d", batch);
      for (i = 0; i < batch; i++) {
        len[i] = 0;
        for (s = 0; s < 16; s++) {
          const mlsys_offload_tree *t = &m->trees[(i * 16 + s) % m->n_trees];
          int k, j, leaves = 0;
          for (k = 0; k < t->n; k++) {
            int kids = 0;
            for (j = k + 1; j < t->n && !kids; j++) kids += t->parent[j] == k;
            leaves += !kids;
          }
          len[i] += leaves;
        }
      }
      st = mlsys_offload_gen_varlstm(len, batch, in_dim, hidden, m->gpu, tr);
      mlsys_free(len);
      return st;
    }
  }
  if (!strcmp(name, "varbert"))
    return mlsys_offload_gen_varbert(m->layers > 0 ? m->layers : 24, batch, m->seq_len > 0 ? m->seq_len : 512,
                                     m->hidden > 0 ? m->hidden : 1024, m->gpu, tr);
  if (!strcmp(name, "moe"))
    return mlsys_offload_gen_moe(m->layers > 0 ? m->layers : 24, m->experts > 0 ? m->experts : 16,
                                 m->top_k > 0 ? m->top_k : 2, batch * (m->seq_len > 0 ? m->seq_len : 512),
                                 m->hidden > 0 ? m->hidden : 512, m->seed, m->gpu, tr);
  return mlsys_set_error(MLSYS_ERR_ARG, "unknown model '%s' (treelstm, varlstm, varbert, moe)", name);
}

/* time per sample of policy p at batch b, or INFINITY when it cannot run; < 0 on error */
static double mlsys__offload_per_sample(const mlsys_offload_model_desc *m, const mlsys_offload_hw *hw, int p, int b, int *evals) {
  mlsys_offload_trace tr;
  mlsys_offload_simres r;
  mlsys_status st;
  (*evals)++;
  if ((st = mlsys_offload_gen_batch(m, b, &tr))) return st == MLSYS_ERR_NOMEM || st == MLSYS_ERR_TOO_BIG ? INFINITY : -1;
  st = mlsys_offload_simulate(&tr, hw, p, &r);
  mlsys_offload_trace_free(&tr);
  if (st) return -1;
  return r.feasible ? r.time_us / b : INFINITY;
}

MLSYS_DEF mlsys_status mlsys_offload_max_batch(const mlsys_offload_model_desc *m, const mlsys_offload_hw *hw,
                                               double overhead_cap, int batch_limit, mlsys_offload_max_batch_result *out) {
  int p, order[MLSYS_OFFLOAD_POLICY_N_] = {MLSYS_OFFLOAD_POLICY_PYTORCH, MLSYS_OFFLOAD_POLICY_DYNN, MLSYS_OFFLOAD_POLICY_DTR,
                                           MLSYS_OFFLOAD_POLICY_UVM, MLSYS_OFFLOAD_POLICY_ZERO};
  double cap = overhead_cap > 0 ? overhead_cap : 2.0;
  int limit = batch_limit > 0 ? batch_limit : 4096;
  memset(out, 0, sizeof *out);
  out->cap_us_per_sample = INFINITY;   /* PyTorch's own search has no cap */
  for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
    int q = order[p], lo = 0, hi, b = 1;
    double t, tlo = 0;
    /* ok(b): runs and within the cap */
#define MLSYS__OFFLOAD_OK(bb, tt) ((tt) = mlsys__offload_per_sample(m, hw, q, (bb), &out->evaluations), \
                                   (tt) < 0 ? -1 : ((tt) < INFINITY && (tt) <= out->cap_us_per_sample * (1 + 1e-12)))
    int okv, fail = 0;
    /* doubling while the batch still runs (a small batch may miss the cap on per-sample overhead alone and a
       larger one meet it), remembering the last that passed; then bisect between it and the next that failed */
    while (b <= limit) {
      okv = MLSYS__OFFLOAD_OK(b, t);
      if (okv < 0) return mlsys_prefix_error("max batch (%s, batch %d)", mlsys_offload_policy_name(q), b);
      if (okv) { lo = b; tlo = t; }
      else if (t == INFINITY || lo) { fail = b; break; }
      if (b == limit) break;
      b = b * 2 > limit ? limit : b * 2;
    }
    hi = fail ? fail : lo;
    while (lo && hi - lo > 1) {   /* lo passes, hi fails */
      int mid = lo + (hi - lo) / 2;
      okv = MLSYS__OFFLOAD_OK(mid, t);
      if (okv < 0) return mlsys_prefix_error("max batch (%s, batch %d)", mlsys_offload_policy_name(q), mid);
      if (okv) { lo = mid; tlo = t; }
      else hi = mid;
    }
#undef MLSYS__OFFLOAD_OK
    out->batch[q] = lo;
    out->us_per_sample[q] = lo ? tlo : INFINITY;
    if (q == MLSYS_OFFLOAD_POLICY_PYTORCH) {
      out->pytorch_batch = lo;
      out->cap_us_per_sample = lo ? tlo * (1 + cap) : INFINITY;
      if (!lo) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "%s: PyTorch cannot run batch 1 in %lld bytes, so there is "
                                      "no overhead cap to hold the others to", m->model, (long long)hw->gpu_bytes);
    }
  }
  return MLSYS_OK;
}

#include "offload_frag/dtr_impl.h"
#include "offload_frag/uvm_zero_impl.h"
#include "offload_frag/pilot_impl.h"

static mlsys_status mlsys__offload_simulate_more(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int policy,
                                                 mlsys_offload_simres *r) {
  if (policy == MLSYS_OFFLOAD_POLICY_DTR) return mlsys_offload_sim_dtr(tr, hw, NULL, r);
  if (policy == MLSYS_OFFLOAD_POLICY_UVM) return mlsys_offload_sim_uvm(tr, hw, NULL, r);
  if (policy == MLSYS_OFFLOAD_POLICY_ZERO) return mlsys_offload_sim_zero(tr, hw, NULL, r);
  if (policy < 0 || policy >= MLSYS_OFFLOAD_POLICY_N_) return mlsys_set_error(MLSYS_ERR_ARG, "unknown policy %d", policy);
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "policy %s is not simulated yet", mlsys_offload_policy_name(policy));
}

#endif /* MLSYS_OFFLOAD_IMPLEMENTATION_DONE */
#endif /* MLSYS_OFFLOAD_IMPLEMENTATION */
