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
        double-buffer cost model with on-GPU carries between buffers (the seed's Sentinel stand-in) and the three
        even-split heuristics; per-block costs; block labels (the pilot's 10-vectors).
     4. Simulators (discrete events, CPU only, one trace, one hardware description): DyNN-Offload's double buffer
        (exact dirty tracking) and plain PyTorch; mlsys_offload_simulate runs any policy.
     5. Generated DyNN iterations (child-sum Tree-LSTM over parse trees read from link-parser's output, var-LSTM,
        var-BERT, top-k MoE: forward, mirrored backward, SGD), max batch per policy under the seed's 200 % overhead
        cap, and the baselines: DTR (h_DTR^eq with union-find, exact e*, local, LRU, size, MSPS, random; √n
        sampling, the 1 % filter, eager eviction), UVM (64 KiB faults, 2 MiB chunks, LRU by migration, the 2x cap),
        ZeRO-Offload (CPU Adam, gradient streaming, delayed parameter update).
     6. The pilot model (three-expert MLP, forward, backprop, SGD or Adam, model file) and the mis-prediction cache;
        ours adds a length code to its input and snaps its output to the nearest plan of a codebook (docs/offload.md
        §6d: 88 % and 99 % exact on held-out var-LSTM and var-BERT samples, where the seed's pilot gets none).
     7. The mapper (spec §3.5): from predicted block vectors back to a branch path and block boundaries (a memoised
        search, the closest-row-count fallback, a state cap), and paths and labels from decisions.
   8. The pilot end to end: weights pinned on the GPU (a trace transform), the generated networks' static programs,
        labelled samples from real sentences, training with early stopping, the runtime on a predicted plan (with
        on-demand repair) and the held-out evaluation with the mis-prediction cache.
   The CUDA runtime and a Tree-LSTM on it are kernels/mlsys_offload_kernels.cuh. The `mlsys offload
   simulate|plan|max-batch|train-pilot` command (cli/offload.c) and docs/offload.md are the tour.

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

   NOT DONE (this version): the backward/optimizer mirror of a mapped path (the mapper resolves forward programs; the
   pilot's labels cover whole iterations in trace ops), and a GPU run of the CUDA runtime. On Tree-LSTM and MoE
   samples no pilot here predicts a plan exactly (their plans follow a tree's shape and hashed router draws, which
   the pilot's input does not carry; docs/offload.md §6d), against the seed's reported 0.82.
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
   5. Generated DyNN traces, max batch, and the baselines' simulators (DTR, UVM, ZeRO-Offload)
   ================================================================================================================ */
/* Operator times from an analytic GPU: max(flops / rate, bytes / bandwidth) + launch. Zero fields: 15 TFLOP/s
   (fp32, an A100-class GPU at realistic efficiency), 900 GB/s, 4 µs per kernel, 4-byte elements. */
typedef struct {
  double tflops, hbm_gbps, launch_us;
  int elem_bytes;
} mlsys_offload_gpu_model;

/* A tree (a sentence's constituency parse): parent[i] of node i (-1 for the root), nodes numbered so that every
   child comes after its parent; leaves are nodes without children. word[i]: for a word (a leaf the parser read from
   the text) the 64-bit FNV-1a hash of its token as printed ("dog.n", with link-grammar's part-of-speech suffix), 0
   for a labelled node ("NP"); NULL when the tree was built by hand. It seeds the word's embedding in the pilot's
   datasets (mlsys_offload_pilot_data_make). */
typedef struct {
  int n;
  int *parent;
  uint64_t *word;
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

/* ---- DTR (spec §4.3): Dynamic Tensor Rematerialization, the prototype's simulator (simrd RuntimeV2) on a trace ----
   Storages: every tensor a trace op writes, one storage per write (copy-on-write, as DTR handles mutation: an op
   that reads and writes tensor t reads t's previous version and writes a new one, so both are resident while it
   runs). Pinned, never evictable and resident from the start: PARAM, INPUT and OPT tensors, tensors with
   facts.first_write −1, and tensors an op reads at their first write (they existed before); writes to them are in
   place and allocate nothing. The producer of a storage is the op that wrote it; c(s) = that op's time.
   Ops run in trace order (PerformOp, §4.3): every input's last access := clock; resident inputs are locked, then
   each evicted input is rematerialised (its producer re-run recursively, with an explicit stack) and locked; the
   op allocates all its non-pinned outputs plus its workspace, evicting (argmin h over the pool) until that fits
   the budget (nothing evictable left: feasible = 0, why names the op and the bytes); clock += time; a trace op's
   outputs get last access := clock (a re-run leaves its outputs' stamps, which the consumer that needed them set,
   as simrd does); inputs unlocked; the workspace is freed. A re-run op restores all its outputs that are
   not resident (dead ones too, as simrd does: they stay until evicted) and frees the duplicate copies of those
   that were. After each trace op (not after re-runs) eager eviction frees its inputs and outputs whose last use
   it was (facts.last_use; for an older version, the last op that reads it): like an eviction (they join the
   evicted neighbourhoods and classes: a descendant's rematerialisation may need them again) but not counted in
   n_evictions.
   Pool (the prototype's `aps`): a storage enters on creation and on rematerialisation when m > 0 and m ≥ 1% of the
   running mean of the sizes of all storages offered so far (keep_small: no filter); locked storages stay in it
   but are skipped; evicted ones are swap-removed when a scan meets them. A scan starts at entry 0 and steps by a
   stride uniform in [1, max(1, ⌊√n⌋)] (n the pool's size when the scan starts; exhaustive: stride 1); it stops at
   an h ≤ 0; ties go to the first minimum met. A sampled scan that meets no evictable storage is repeated with
   stride 1 (the prototype asserts instead). h = +∞ when its denominator is 0 (staleness 0: the outputs of the op
   just run); such a storage is still chosen when every candidate is +∞.
   h_DTR^eq: a union-find node per eviction, valued c(s) and merged with the classes of the evicted neighbours
   (producer's inputs, consumers' outputs); a rematerialised storage subtracts its c from its class and leaves it
   (classes are never split). h_DTR: exact e* (evicted ancestors through evicted storages plus evicted descendants
   through evicted storages). h_MSPS: c plus the evicted ancestors. Staleness = clock − last access.
   Result: time_us = clock = compute_us (Σ op times once) + recompute_us; n_remat (re-runs), n_evictions
   (heuristic evictions), peak_bytes = fixed_bytes + most bytes resident (pinned included, workspace during its
   op); migration and byte counts 0. Infeasible (feasible = 0): the numbers are those reached when it stopped. */
typedef enum { MLSYS_OFFLOAD_H_DTR_EQ, MLSYS_OFFLOAD_H_DTR, MLSYS_OFFLOAD_H_DTR_LOCAL, MLSYS_OFFLOAD_H_LRU,
               MLSYS_OFFLOAD_H_SIZE, MLSYS_OFFLOAD_H_MSPS, MLSYS_OFFLOAD_H_RANDOM } mlsys_offload_dtr_heur;
#define MLSYS_OFFLOAD_H_N_ 7

/* What the simulator did, for tests and traces of a run. */
typedef enum {
  MLSYS_OFFLOAD_DTR_EV_SCORE,    /* a candidate was scored: h, and (always) h_eq, h_dtr, h_local of it */
  MLSYS_OFFLOAD_DTR_EV_EVICT,    /* the heuristic evicted it: h */
  MLSYS_OFFLOAD_DTR_EV_FREE,     /* eager eviction after its last use */
  MLSYS_OFFLOAD_DTR_EV_REMAT,    /* op will be re-run to restore tensor (its inputs first, then RUN) */
  MLSYS_OFFLOAD_DTR_EV_RUN       /* op ran (its outputs allocated, clock advanced); tensor: the one a re-run
                                    restores, -1 for the trace's own run */
} mlsys_offload_dtr_ev_kind;
typedef struct {
  int kind;                      /* mlsys_offload_dtr_ev_kind */
  int op;                        /* SCORE, EVICT: the op whose allocation needs room; FREE: the op just run; REMAT,
                                    RUN: the op (re-)run */
  int tensor;                    /* trace tensor id */
  double clock;                  /* µs at the event (RUN: after the op) */
  double h;                      /* SCORE, EVICT: the value of the heuristic in use */
  double h_eq, h_dtr, h_local;   /* SCORE: the three DTR variants of the same storage (one denominator) */
} mlsys_offload_dtr_event;

typedef struct {
  int64_t budget;        /* bytes for tensors (0: hw->gpu_bytes - trace fixed_bytes) */
  int heuristic;         /* mlsys_offload_dtr_heur; 0 = h_DTR^eq, the prototype's default */
  int exhaustive;        /* 1: score every candidate (no √n random-stride sampling) */
  int keep_small;        /* 1: no 1%-of-mean-size filter */
  int no_eager;          /* 1: no eager eviction of tensors whose last use has passed */
  uint64_t seed;         /* sampling and h_rand */
  long remat_limit;      /* stop (feasible=0, why) after this many rematerialisations; 0: 1e8 */
  /* optional: called for every event, in order (h_eq/h_dtr/h_local of SCORE events are computed only then) */
  void (*on_event)(void *ctx, const mlsys_offload_dtr_event *e);
  void *event_ctx;
} mlsys_offload_dtr_opts;  /* NULL = defaults (with hw->gpu_bytes) */

MLSYS_DEF mlsys_status mlsys_offload_sim_dtr(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_dtr_opts *o, mlsys_offload_simres *r);
/* "dtr_eq", "dtr", "dtr_local", "lru", "size", "msps", "random"; "?" out of range. */
MLSYS_DEF const char *mlsys_offload_dtr_heur_name(int heuristic);
/* ---- UVM (spec §4.2): unified memory, page faults on demand, no prefetch ----
   Every tensor is managed memory in pages of fault_page bytes (a tensor of b bytes holds ⌈b/fault_page⌉ pages; a
   partial last page still moves whole). Layout: one address space, pages handed out in allocation order: first
   the tensors alive before the first op (PARAM, OPT and those facts.first_write says exist) in id order, then op by
   op the tensors it writes first (in its output order), then its workspace. A tensor starts on a page boundary;
   consecutive tensors share a chunk of evict_chunk bytes. Every iteration reuses the same addresses (as PyTorch's
   caching allocator hands back the same blocks).
   Residency: capacity = gpu_bytes − fixed_bytes, counted in whole pages. An op touches every page of its inputs,
   outputs and workspace; they must all be resident while it runs (an op larger than the capacity: feasible = 0).
   Pages that hold data elsewhere (host) migrate H2D; pages of a tensor the op writes first, and workspace, are
   populated on the GPU with no copy. Room is made by evicting chunks, oldest migration first (LRU by migration
   time, not access time: the driver does not see GPU accesses; a chunk's time is the last moment pages moved into
   it, by migration or population, counted in page order within an op); an evicted chunk writes back every resident
   page it holds (UVM cannot tell clean pages) except the pages the faulting op is touching, which stay. One op's
   service (its migrations and evictions) is one fault batch: fault_us + bytes_in/BW_h2d + bytes_out/BW_d2h, and
   compute waits for all of it. An op that only populates fresh pages with room to spare does not fault.
   Tensors are freed after their last use (facts.last_use; PARAM, OPT and tensors alive before the first op
   persist): their pages leave the GPU with no copy. Persistent tensors start on the host.
   The trace runs `iterations` times and the result is the last one. feasible = 0 when the footprint
   (facts.peak_bytes) exceeds oversub_max × gpu_bytes, why "... exceeds UVM cap ..." (the simulation still runs
   and its numbers are filled in), or when one op's pages alone exceed the capacity (then only compute_us is set).
   Result: time_us = compute_us + migration_us (fault service), bytes_h2d/d2h (whole pages), n_faults (batches),
   n_evictions (chunk evictions), peak_bytes = fixed_bytes + most resident page bytes of the reported iteration. */
typedef struct {
  int64_t fault_page;      /* fault granularity: 65536 */
  int64_t evict_chunk;     /* eviction granularity, a multiple of fault_page: 2 MiB */
  double fault_us;         /* per fault batch: 30 µs; negative = none */
  double oversub_max;      /* footprint / gpu_bytes above this is infeasible ("exceeds UVM cap"): 2; INFINITY: no cap */
  int iterations;          /* simulate this many iterations, report the last (warm): 2 */
} mlsys_offload_uvm_opts;  /* zero (or NULL) = defaults */
MLSYS_DEF mlsys_status mlsys_offload_sim_uvm(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_uvm_opts *o, mlsys_offload_simres *r);

/* ---- ZeRO-Offload (spec §4.4): fp16 parameters and activations on the GPU, optimizer state and step on the CPU ----
   M = Σ bytes of PARAM tensors / param_bytes (default 2: the trace's parameters are fp16). An op is an optimizer op if
   its name contains "adam", "sgd" or "optim" (any case) or it writes an OPT tensor; it runs on the CPU, so its
   time, workspace and the tensors alive only during optimizer ops leave the GPU.
   GPU bytes = facts' live-byte curve without OPT tensors, at its highest over the other ops (= facts.peak_bytes −
   OPT bytes when the peak is not at an optimizer op); feasible iff ≤ gpu_bytes. A trace without PARAM tensors:
   feasible = 0, why "no parameters in the trace".
   T_fb = Σ times of the other ops, T_bwd = the part of them marked is_bwd; overlap = overlap_bwd_frac · T_bwd.
     no DPU: T = T_fb + max(0, 2M/BW_d2h − overlap) + M/thr + 2M/BW_h2d
     DPU:    T = max(T_fb, 2M/BW_d2h + M/thr + 2M/BW_h2d)     (step t's CPU work under step t+1's GPU work)
   compute_us = T_fb; migration_us = exposed copies; other_us = exposed CPU Adam (with DPU the exposed tail
   T − T_fb is split between the two in proportion to their durations); bytes_d2h = bytes_h2d = 2M (fp16). Per-copy
   latency is not charged (gradients stream in many buckets; the spec's formula has none). */
typedef struct {
  double cpu_adam_params_per_us;   /* CPU Adam throughput: 1000 parameters/µs (DeepSpeed PR #735: CPU-Adam steps an
                                      11.6B-parameter GPT-2 in 8.2 s ≈ 1,400/µs on a server CPU; rounded down);
                                      INFINITY: free */
  int dpu;                          /* delayed parameter update */
  double overlap_bwd_frac;          /* share of the backward time the gradient stream overlaps: 1; negative = none */
  int param_bytes;                  /* bytes a parameter takes in the trace: 2 (fp16); 4 for fp32 traces such as
                                       mlsys_offload_gen_*'s (M = Σ PARAM bytes / param_bytes; the copies stay fp16) */
} mlsys_offload_zero_opts;          /* zero (or NULL) = defaults */
MLSYS_DEF mlsys_status mlsys_offload_sim_zero(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                              const mlsys_offload_zero_opts *o, mlsys_offload_simres *r);
/* ================================================================================================================
   6. The pilot model (spec §3.3) and the mis-prediction cache (§3.6)
   ================================================================================================================ */
/* The pilot predicts, per sample, the K_max×10 block vectors (mlsys_offload_blocks_label) from three inputs: the
   sample after embedding (x_e), the network's AFM (x_a) and its basic type (0 CNN, 1 RNN/LSTM, 2 transformer).
     h_e = LReLU(W_e x_e + b_e) ∈ R^d,  h_a = LReLU(W_a x_a + b_a) ∈ R^d,
     expert t (only t = nn_type runs): [h_e; h_a] → LReLU → h → LReLU → h → LReLU → d_out = z,
     ŷ = W_o z + b_o ∈ R^{k_max·10} (log1p space; decode y = max(0, round(expm1(ŷ)))).
   Parameters, flat, in this order (matrices row-major, [out][in]): W_e [d][e_proj+2], b_e [d], W_a [d][afm_dim],
   b_a [d]; for t = 0, 1, 2: W1 [h][2d], b1 [h], W2 [h][h], b2 [h], W3 [d_out][h], b3 [d_out]; W_o [k_max·10][d_out],
   b_o [k_max·10]. Init (seeded): weights uniform in ±sqrt(6 / ((1 + leaky²)·fan_in)) (He/Kaiming-uniform for
   LeakyReLU) for the layers followed by LReLU, ±sqrt(3 / fan_in) for the linear output layer; biases 0.
   Loss of one sample: (1/(k_max·10)) Σ_i w_i (ŷ_i − log1p(label_i))², w_i = w_rows on element 0 of each block
   (the row count), 1 elsewhere. Training: plain SGD on the minibatch mean.
   Threads: a model holds its own scratch, so forward, features, loss, grad and train on ONE model must not run
   concurrently (forward allocates nothing); distinct models are independent. */
typedef struct {
  int e_proj;       /* random projection width of the pooled embedding: 32 */
  int d;            /* input-feature layer width: 16 */
  int h;            /* hidden width of each expert MLP: 32 */
  int d_out;        /* expert output width: 32 */
  int k_max;        /* blocks predicted: 16 */
  int afm_full;     /* 0: compact AFM features (11 numbers), 1: full (afm_rows_max × 9, log1p dims) */
  int afm_rows_max; /* full mode: 256 */
  float leaky;      /* LeakyReLU slope for x < 0: 0.01 (must be in (0, 1]) */
  float lr;         /* SGD learning rate: 0.01 */
  float w_rows;     /* loss weight on element 0 of each block: 4 */
  uint64_t seed;    /* weights, projection and shuffling: 1 (so seeds 0 and 1 give the same model) */
  /* Ours, not the seed's (0 = the seed's pilot; see docs/offload.md §6d): */
  int len_code;     /* length code: len_code more x_e features of the token count n (below); 0 = none */
  int adam;         /* 1: Adam (β1 0.9, β2 0.999, ε 1e-8, step lr) instead of plain SGD; 0 = SGD */
} mlsys_offload_pilot_cfg;  /* zero = defaults (field by field) */

#define MLSYS_OFFLOAD_PILOT_MAX_DIM 4096          /* e_proj, d, h, d_out, k_max */
#define MLSYS_OFFLOAD_PILOT_MAX_ROWS 65536        /* afm_rows_max */
#define MLSYS_OFFLOAD_PILOT_MAX_PARAMS (1u << 26) /* 256 MB of weights; larger configs are MLSYS_ERR_TOO_BIG */
#define MLSYS_OFFLOAD_PILOT_VERSION 2u            /* of the model file (1 is still read and written, above) */
#define MLSYS_OFFLOAD_PILOT_MAX_CODES (1 << 20)   /* codebook entries */

typedef struct mlsys_offload_pilot mlsys_offload_pilot;
/* MLSYS_ERR_ARG for a negative or out-of-range field (named), MLSYS_ERR_TOO_BIG above MAX_PARAMS. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_create(const mlsys_offload_pilot_cfg *cfg, mlsys_offload_pilot **out);
MLSYS_DEF void mlsys_offload_pilot_free(mlsys_offload_pilot *m);          /* NULL is fine */
MLSYS_DEF size_t mlsys_offload_pilot_nparams(const mlsys_offload_pilot *m);
/* The configuration with every default filled in (what the model file stores). */
MLSYS_DEF mlsys_offload_pilot_cfg mlsys_offload_pilot_config(const mlsys_offload_pilot *m);
/* x_e (e_proj + 2 + len_code floats): the mean over the n_tok rows of emb[n_tok][emb_dim], times a Gaussian projection P
   [emb_dim][e_proj] with entries N(0, 1/emb_dim) (a function of (seed, emb_dim) only, so the file does not store it;
   it is cached in the model for the last emb_dim), then log1p(n_tok), log1p(n_tok·emb_dim·4) (fp32 bytes), then the
   length code: for j < len_code, cos(2π n_tok/(j+2)) for even j, sin(2π n_tok/(j+2)) for odd j. log1p(n) alone makes
   neighbouring lengths 1/n apart, too close for a small MLP to give them different plans; the code's residues tell
   them apart by a full swing. n_tok = 0 gives a zero projection. Accumulates in double. */
MLSYS_DEF void mlsys_offload_pilot_features(const mlsys_offload_pilot *m, const float *emb, int n_tok, int emb_dim, float *x_e);
/* AFM features from rows (section 1): compact: log1p of the 9 column sums, log1p(#rows that are not all zero),
   log1p(#all-zero rows, the control-flow rows); full: afm_rows_max rows (zero-padded or truncated) of
   [idiom[0..5], log1p(dim[0..2])]. Negative entries count as 0. afm_dim is 11 or afm_rows_max·9. */
MLSYS_DEF int mlsys_offload_pilot_afm_dim(const mlsys_offload_pilot *m);
MLSYS_DEF void mlsys_offload_pilot_afm_features(const mlsys_offload_pilot *m, const mlsys_offload_sig *afm, int n_rows, float *x_a);
/* Raw output ŷ (k_max·10 floats, log1p space). Allocation-free. An nn_type outside 0..2 fills ŷ with NaN and sets
   MLSYS_ERR_ARG. */
MLSYS_DEF void mlsys_offload_pilot_forward(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, float *yhat);
/* Without a codebook: pred[i] = max(0, round(expm1(ŷ_i))) (half away from zero; NaN gives 0, above INT32_MAX gives
   INT32_MAX). With one: pred = the code c minimising Σ_i w_i (ŷ_i − log1p(c_i))² (the loss's weights; the first such
   code on ties; a NaN ŷ gives code 0). The number of blocks is the first k with pred[10k] = 0. */
MLSYS_DEF void mlsys_offload_pilot_decode(const mlsys_offload_pilot *m, const float *yhat, int32_t *pred);
/* Label snapping (ours, docs/offload.md §6d): the codebook is the set of distinct labels (k_max·10 values each, whole
   numbers in 0..INT32_MAX, as mlsys_offload_blocks_label gives) that decode may answer. Plans are exact integers;
   a regression gets within a few percent of them, and rounding each of k_max·10 numbers is then almost never exact.
   Choosing the nearest plan that the partitioner really produced is the learned counterpart of the mapper's
   closest-path fallback. Replaces any previous codebook; n = 0 removes it. MLSYS_ERR_ARG for a value that is not a
   whole number in range (named), MLSYS_ERR_NOMEM leaves the model as it was. Stored in the model file. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_set_codebook(mlsys_offload_pilot *m, const float *labels, int n);
MLSYS_DEF int mlsys_offload_pilot_codebook_size(const mlsys_offload_pilot *m);
/* One SGD epoch over n samples (x_e [n][e_proj+2], x_a [n][afm_dim], nn_type [n], labels [n][k_max·10]: the
   integers of mlsys_offload_blocks_label, as floats, ≥ 0), shuffled with the pilot's own rng, in minibatches of
   `batch` (the last one shorter). Returns the mean over the epoch of each sample's loss before its update, or NaN
   with MLSYS_ERR_ARG on bad arguments (n or batch < 1, an nn_type outside 0..2, a negative or non-finite label). */
MLSYS_DEF float mlsys_offload_pilot_train_epoch(mlsys_offload_pilot *m, int n, const float *x_e, const float *x_a,
                                                const int *nn_type, const float *labels, int batch);
/* (With cfg.adam, one Adam step per minibatch; the moments live in the model and are not saved: a loaded model
   starts them at zero.) */
/* Loss of one sample (NaN with MLSYS_ERR_ARG on bad arguments) and its gradient d loss / d parameter (flat order
   above; grad has nparams floats, zero for the experts that did not run). */
MLSYS_DEF float mlsys_offload_pilot_loss(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, const float *label);
MLSYS_DEF mlsys_status mlsys_offload_pilot_grad(mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                const float *label, float *grad);
MLSYS_DEF float *mlsys_offload_pilot_params(mlsys_offload_pilot *m);   /* flat, nparams; writable */
/* Model file (spec §2.3(f)), little-endian: "MLSYSPLT", u32 version, u32 MLSYS_OFFLOAD_CATALOG_VERSION (labels
   depend on the idiom table), i32 e_proj, d, h, d_out, k_max, afm_full, afm_rows_max, f32 leaky, lr, w_rows,
   u64 seed, u64 nparams, nparams × f32 weights, u32 CRC-32C (mlsys_crc32c) of every byte before it. A model with a
   length code, Adam or a codebook is written as version 2: the same header, then i32 len_code, i32 adam, u32 n_codes
   after nparams, the weights, n_codes × k_max·10 i32 codes, and the CRC (a model without them stays version 1). Loading
   rebuilds the projection and reseeds the shuffling rng from the seed (a loaded model trains like a new one
   with those weights). Errors: MLSYS_ERR_PARSE naming the problem (truncated, bad magic, CRC mismatch, a config
   field out of range, nparams not matching the config, trailing bytes, a non-finite weight, a negative code, more codes
   than the limit), MLSYS_ERR_UNSUPPORTED
   (another file or catalogue version), MLSYS_ERR_TOO_BIG; source names the buffer in messages. Save writes
   path.tmp, then renames it. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_save(const mlsys_offload_pilot *m, const char *path);
MLSYS_DEF mlsys_status mlsys_offload_pilot_load(const char *path, mlsys_offload_pilot **out);
MLSYS_DEF mlsys_status mlsys_offload_pilot_load_mem(const void *buf, size_t len, const char *source, mlsys_offload_pilot **out);

/* Mis-prediction cache (§3.6): when a sample's decoded pilot output equals one recorded for a mis-predicted case,
   the runtime uses that case's correct blocks. A hash map from k_max·10 int32 (the prediction) to k_max·10 int32
   (the true label); keys compare exactly. */
typedef struct mlsys_offload_mcache mlsys_offload_mcache;
MLSYS_DEF mlsys_status mlsys_offload_mcache_create(int k_max, mlsys_offload_mcache **out);   /* 1..MAX_DIM */
MLSYS_DEF void mlsys_offload_mcache_free(mlsys_offload_mcache *c);                          /* NULL is fine */
/* Insert, or overwrite the value of an existing key. MLSYS_ERR_NOMEM leaves the cache as it was. */
MLSYS_DEF mlsys_status mlsys_offload_mcache_put(mlsys_offload_mcache *c, const int32_t *pred, const int32_t *truth);
/* The stored value (valid until the next put or free), or NULL if absent. */
MLSYS_DEF const int32_t *mlsys_offload_mcache_get(const mlsys_offload_mcache *c, const int32_t *pred);
MLSYS_DEF size_t mlsys_offload_mcache_size(const mlsys_offload_mcache *c);

/* ================================================================================================================
   Mapper (spec §3.5): pilot prediction -> resolved path and block boundaries
   ================================================================================================================ */
/* A resolved path: one execution of the program as AFM row indices. An OP emits its row; a BRANCH emits its zero
   row, then the chosen alternative's rows; a LOOP emits its zero row once, then its body's rows once per trip.
   Decisions, in execution order of the statements: the alternative of each BRANCH, the trip count of each LOOP
   (taken when the LOOP statement is reached, so an outer loop's count precedes its body's decisions). A loop whose
   body emits no rows always runs exactly loop_min times in the mapper's answers (more trips change nothing). */
typedef struct {
  int n_rows; int *row;            /* resolved AFM-row sequence */
  int k; int *block_start;         /* k+1 entries into row[], block_start[k] = n_rows */
  int n_dec; int *decision;        /* branch alternatives / loop trip counts in execution order */
  int exact;                       /* 1: every block's 10-vector equals the prediction's */
  long states;                     /* search states visited */
} mlsys_offload_resolved;
MLSYS_DEF void mlsys_offload_resolved_free(mlsys_offload_resolved *r);
/* Expand decisions into a path (k = 1 block covering it): MLSYS_ERR_ARG naming the problem if the decisions do not
   fit the program (wrong count, alternative out of range, trips out of range). */
MLSYS_DEF mlsys_status mlsys_offload_path(const mlsys_offload_prog *p, const int *decision, int n_dec, mlsys_offload_resolved *out);
/* Labels of a path cut at block_start (k blocks) into k_max*10 int32 (blocks past k_max are added into the last row). */
MLSYS_DEF void mlsys_offload_path_label(const mlsys_offload_prog *p, const mlsys_offload_resolved *r, int k_max, int32_t *label);
/* The mapper. K = first k with pred[10k] = 0 (or k_max). Exact search: depth-first over (program position, block,
   running block sums, loop counters) with memoised failed states; max_states bounds it (0 = 1e6). Without an exact
   match, the fallback of §3.5 (exact = 0). MLSYS_ERR_ARG for k_max < 1, no blocks, a negative entry, a program
   without root or with a negative signature entry; MLSYS_ERR_INFEASIBLE when no complete path was found within
   Q_K[0] + slack rows (also when max_states ran out before one was found). */
MLSYS_DEF mlsys_status mlsys_offload_map(const mlsys_offload_prog *p, const int32_t *pred, int k_max, long max_states,
                                         mlsys_offload_resolved *out);

/* ================================================================================================================
   Pilot datasets, training and evaluation end to end (spec §3.3, §3.4, §7.4 item 11)
   ================================================================================================================ */
/* Weights stay on the GPU: a copy of tr in which PARAM and OPT tensors, and the gradients of the weights (GRAD tensors
   that an op reads while writing a PARAM: the optimizer's input), leave every op's tensor lists; their bytes move to
   fixed_bytes (resident under every policy) and the tensors keep their ids with 0 bytes. For networks whose shared
   weights fill a buffer on their own (a Tree-LSTM's gate matrices are 90 % of one sentence's iteration), double
   buffering cannot move them block by block; pinned, DyNN-Offload moves the activations and their gradients only. */
MLSYS_DEF mlsys_status mlsys_offload_trace_pin_weights(const mlsys_offload_trace *tr, mlsys_offload_trace *out);

/* The generated networks' static forward programs (the ops of mlsys_offload_gen_*), for their AFMs. Dims are zero
   (the operators' shapes are not part of the labels here).
     treelstm: LOOP over nodes { BRANCH { leaf: MatMul, LSTMCell, Tanh | inner: ReduceSum, MatMul, LOOP over children
               { MatMul }, LSTMCell, Tanh } }, MatMul, Softmax; nn_type 1
     varlstm:  LOOP over steps { MatMul, BRANCH { first step: nothing | MatMul }, LSTMCell, Tanh }, MatMul, Softmax; 1
     varbert:  LOOP over layers { MatMul, Attention, MatMul, Add, LayerNorm, MatMul, Gelu, MatMul, Add, LayerNorm },
               MatMul, Softmax; nn_type 2
     moe:      the same with the feed-forward replaced by MatMul (router), TopK, LOOP over the experts that got tokens
               { Gather, MatMul, Gelu, MatMul }, ScatterND; nn_type 2
   MLSYS_ERR_ARG for another name. */
MLSYS_DEF mlsys_status mlsys_offload_prog_model(const char *model, mlsys_offload_prog *p);
MLSYS_DEF mlsys_status mlsys_offload_prog_treelstm(mlsys_offload_prog *p);   /* prog_model("treelstm") */

/* Labelled pilot samples (spec §3.4) from real sentences: sample i is sentences [i·batch, (i+1)·batch) (a last
   partial one is dropped) run through one generated iteration of `model`:
     treelstm: mlsys_offload_gen_treelstm over those trees (the structure is each tree);
     varlstm:  one document of L steps, L = the sentences' word count (mlsys_offload_gen_varlstm);
     varbert:  one sequence of L tokens through `layers` layers (mlsys_offload_gen_varbert);
     moe:      L tokens through `layers` MoE layers, the router's draws seeded by the hash of the sample's words
               (mlsys_offload_gen_moe): which experts run, and on how many tokens, is a function of the input.
   Its weights are pinned (mlsys_offload_trace_pin_weights) when pin_weights; the DP partitions it with k_max = the
   pilot's k_max at hw; label = mlsys_offload_blocks_label. x_e = mlsys_offload_pilot_features of the sample's words:
   each word's embedding is in_dim values N(0, 1) drawn from an rng seeded with its hash (tree.word) xor embed_seed —
   a fixed random embedding table, as an untrained embedding layer has (the seed used GloVe vectors, which are not
   here). x_a = the AFM features of mlsys_offload_prog_model; nn_type 1 (treelstm, varlstm) or 2. */
typedef struct {
  const char *model;                  /* "treelstm" (NULL), "varlstm", "varbert", "moe" */
  int in_dim, hidden;                 /* 0: 300 and 150 (treelstm, varlstm: Tai et al.), 768 (varbert), 512 (moe) */
  int layers, experts, top_k;         /* varbert, moe: 0 = 12 and 8 layers; moe: 16 experts, top 2 */
  int batch;                          /* sentences per sample: 0 = 1 (treelstm), 4 (the others) */
  int pin_weights;                    /* 1: weights resident (above); 0: everything offloadable */
  uint64_t embed_seed;
  const mlsys_offload_gpu_model *gpu; /* NULL: defaults */
  mlsys_offload_hw hw;                /* the GPU the labels are planned for (gpu_bytes required unless act_frac) */
  double act_frac;                    /* > 0: gpu_bytes = the largest sample's resident bytes (fixed + persistent) +
                                         act_frac × the median over samples of the rest of its peak (activations) */
  void (*progress)(void *ctx, int done, int total);
  void *progress_ctx;
} mlsys_offload_data_opts;

typedef struct {
  int n;                              /* labelled samples */
  int xe_dim, xa_dim, k_max;
  float *x_e, *x_a, *label;           /* [n][xe_dim], [n][xa_dim], [n][k_max·10] */
  int *nn_type;                       /* [n] */
  int *first_tree;                    /* [n] the sample's first tree */
  mlsys_offload_trace *trace;         /* [n] the traces the labels were planned on (pinned when pin_weights) */
  int n_infeasible;                   /* samples skipped: one op's tensors exceed a buffer at hw */
  int n_over_k_max;                   /* labelled samples whose DP plan needed every one of the k_max blocks */
  int64_t gpu_bytes;                  /* the budget the labels were planned for */
} mlsys_offload_pilot_data;
MLSYS_DEF void mlsys_offload_pilot_data_free(mlsys_offload_pilot_data *d);
/* MLSYS_ERR_INFEASIBLE when no sample is feasible at hw; MLSYS_ERR_ARG naming a bad option. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_data_make(const mlsys_offload_pilot *m, const mlsys_offload_tree *trees,
                                                     int n_trees, const mlsys_offload_data_opts *o,
                                                     mlsys_offload_pilot_data *out);

/* Training with early stopping on the validation set's exact-match rate, ties broken by its mean loss (the parameters
   of the best epoch are kept; train_epoch's shuffling makes it deterministic for a seed). val NULL: the training set. */
typedef struct {
  int max_epochs;                     /* 0: 200 */
  int patience;                       /* epochs without a better validation score before stopping: 0 = 30 */
  int batch;                          /* minibatch: 0 = 32 */
  int snap;                           /* 1: the training labels become the pilot's codebook before the first epoch
                                         (mlsys_offload_pilot_set_codebook), so validation is scored on snapped
                                         predictions; 0: the codebook is left as it is */
  void (*progress)(void *ctx, int epoch, float loss, double val_exact);
  void *progress_ctx;
} mlsys_offload_fit_opts;
typedef struct {
  int epochs, best_epoch;
  double best_val_exact, best_val_loss, final_loss;
} mlsys_offload_fit_result;
MLSYS_DEF mlsys_status mlsys_offload_pilot_fit(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *train,
                                               const mlsys_offload_pilot_data *val, const mlsys_offload_fit_opts *o,
                                               mlsys_offload_fit_result *out);

/* The runtime on a predicted label (§3.6): its block op counts (element 0 of each row, up to the first zero row) cut
   the sample's op stream, as the seed's operator counter does; ops past the predicted blocks form one more block.
   A block whose tensors do not fit a buffer is split greedily where they stop fitting, and each added piece's
   inputs are fetched on demand: its migration is added to the simulated time in full (no overlap; an upper bound).
   out: the simulation (sim_dynn on the repaired partition, plus that exposed time in time_us and migration_us;
   n_faults = pieces fetched on demand). */
MLSYS_DEF mlsys_status mlsys_offload_sim_predicted(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                   const int32_t *pred, int k_max, mlsys_offload_simres *out);

/* Held-out evaluation, samples in order (the mis-prediction cache fills as it goes, as at runtime). The cache is keyed
   on the pilot's raw output, rounded (the codebook-free decode): with a codebook many samples share one snapped
   answer, and a key on it handed them each other's blocks (varlstm: 12 mis-predictions became 16). */
typedef struct {
  int n;
  int exact;                          /* decoded prediction == label, all k_max·10 integers (the spec's accuracy) */
  int k_exact;                        /* the number of blocks predicted right */
  int mispred;                        /* runtime mis-predictions without the cache: block op counts != the label's */
  int mispred_cache;                  /* with the cache (a hit uses the recorded true label) */
  int cache_hits;
  int faulted;                        /* samples whose predicted plan needed on-demand fetches (no cache) */
  double time_oracle_us;              /* Σ simulated time on the labels' own plans */
  double time_pred_us, time_cache_us; /* Σ on the predicted plans, without and with the cache */
  double compute_us;                  /* Σ kernel time */
} mlsys_offload_pilot_eval;
MLSYS_DEF mlsys_status mlsys_offload_pilot_evaluate(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *d,
                                                    const mlsys_offload_hw *hw, mlsys_offload_pilot_eval *out);

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
    const mlsys_json *r;
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
    } else if (mlsys_json_get(r, "t")) {
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
    } else if (mlsys_json_get(r, "op")) {
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
  mlsys_free(t->word);
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
            uint64_t *w = q ? (uint64_t *)mlsys_realloc_array(t.word, (size_t)c, sizeof *w) : NULL;
            if (q) t.parent = q;
            if (w) t.word = w;
            if (!q || !w) { st = MLSYS_ERR_NOMEM; break; }
            tcap = c;
          }
          t.parent[t.n] = par;
          t.word[t.n] = 0;
          if (isnode == 2) {   /* FNV-1a over the token; never 0, which means "no word" */
            uint64_t hsh = 14695981039346656037ull;
            size_t e;
            for (e = i; e < len && !isspace((unsigned char)text[e]) && text[e] != '(' && text[e] != ')'; e++)
              hsh = (hsh ^ (unsigned char)text[e]) * 1099511628211ull;
            t.word[t.n] = hsh ? hsh : 1;
          }
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

/* ================================================================================================================
   DTR simulator (spec §4.3; simrd RuntimeV2Optimized with eager eviction, CheckpointPool's sampling)
   ================================================================================================================ */
static const char *const mlsys__offload_heur_names[MLSYS_OFFLOAD_H_N_] = {"dtr_eq", "dtr", "dtr_local", "lru",
                                                                         "size", "msps", "random"};
MLSYS_DEF const char *mlsys_offload_dtr_heur_name(int heuristic) {
  return heuristic >= 0 && heuristic < MLSYS_OFFLOAD_H_N_ ? mlsys__offload_heur_names[heuristic] : "?";
}

/* One PerformOp in flight: k < 0 before its inputs are locked, then the input being made resident; target is the
   storage a re-run restores (-1 for the trace's own op). Producers precede consumers, so an op is on the stack at
   most once and the stack never holds more than n_op frames. */
typedef struct { int op, k, target; } mlsys__offload_dtr_frame;

#define MLSYS__DTR_LOCKED 1   /* slot flag: this input is locked by its op's frame */
#define MLSYS__DTR_SKIP 2     /* slot flag: an output that allocates nothing (pinned, or listed twice) */

typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_dtr_opts *o;
  int heur, nv;
  /* storages (tensor versions) */
  int *vt, *prod, *last_use, *lock, *ecn;
  int64_t *m;
  double *c, *last_access;
  unsigned char *state, *pinned, *in_pool;   /* state: 0 not computed yet, 1 resident, 2 evicted */
  /* per entry of tr->ids: its storage, and the flags above */
  int *slot_v;
  unsigned char *slot_f;
  int *rd0, *rd;                 /* ops that read storage v: rd[rd0[v] .. rd0[v+1]) */
  /* union-find of evicted storages (h_DTR^eq's classes): a node per eviction */
  int *uf_par, *uf_seen, n_uf, cap_uf, uf_stamp;
  double *uf_val;
  int *pool, n_pool;
  double size_sum;
  long size_cnt;
  int *seen, stamp, *stk;        /* graph searches */
  mlsys__offload_dtr_frame *fr;
  mlsys_rng rng;
  int64_t budget, mem, peak;
  double clock, recompute;
  long n_remat, n_evict, remat_limit;
  int stopped;                   /* infeasible: r->why says why */
  mlsys_offload_simres *r;
} mlsys__offload_dtr;

static void mlsys__offload_dtr_free(mlsys__offload_dtr *D) {
  mlsys_free(D->vt); mlsys_free(D->prod); mlsys_free(D->last_use); mlsys_free(D->lock); mlsys_free(D->ecn);
  mlsys_free(D->m); mlsys_free(D->c); mlsys_free(D->last_access); mlsys_free(D->state); mlsys_free(D->pinned);
  mlsys_free(D->in_pool); mlsys_free(D->slot_v); mlsys_free(D->slot_f); mlsys_free(D->rd0); mlsys_free(D->rd);
  mlsys_free(D->uf_par); mlsys_free(D->uf_seen); mlsys_free(D->uf_val); mlsys_free(D->pool); mlsys_free(D->seen);
  mlsys_free(D->stk); mlsys_free(D->fr);
}

static void mlsys__offload_dtr_event(mlsys__offload_dtr *D, int kind, int op, int v, double h) {
  mlsys_offload_dtr_event e;
  memset(&e, 0, sizeof e);
  e.kind = kind;
  e.op = op;
  e.tensor = D->vt[v];
  e.clock = D->clock;
  e.h = h;
  D->o->on_event(D->o->event_ctx, &e);
}

static int mlsys__offload_dtr_find(mlsys__offload_dtr *D, int x) {
  while (D->uf_par[x] >= 0) {
    int p = D->uf_par[x];
    if (D->uf_par[p] >= 0) D->uf_par[x] = D->uf_par[p];   /* path halving */
    x = p;
  }
  return x;
}

/* BODY runs with u bound to each evicted neighbour of v: the inputs of v's producer, and the outputs of v's
   consumers (only those that have run can be evicted). Macros, so every search shares the two loops. */
#define MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, BODY)                                                          \
  do {                                                                                                         \
    if ((D)->prod[v] >= 0) {                                                                                   \
      const mlsys_offload_op *mlsys__po = &(D)->tr->op[(D)->prod[v]];                                          \
      int mlsys__i;                                                                                            \
      for (mlsys__i = 0; mlsys__i < mlsys__po->n_in; mlsys__i++) {                                             \
        int u = (D)->slot_v[mlsys__po->in0 + mlsys__i];                                                        \
        if ((D)->state[u] == 2) { BODY; }                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)
#define MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, BODY)                                                         \
  do {                                                                                                         \
    int mlsys__a, mlsys__i;                                                                                    \
    for (mlsys__a = (D)->rd0[v]; mlsys__a < (D)->rd0[(v) + 1]; mlsys__a++) {                                   \
      const mlsys_offload_op *mlsys__co = &(D)->tr->op[(D)->rd[mlsys__a]];                                     \
      for (mlsys__i = 0; mlsys__i < mlsys__co->n_out; mlsys__i++) {                                            \
        int u = (D)->slot_v[mlsys__co->out0 + mlsys__i];                                                       \
        if ((D)->state[u] == 2) { BODY; }                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)

static void mlsys__offload_dtr_next_stamp(int **seen, int *stamp, size_t n) {
  if (*stamp == INT_MAX) {
    memset(*seen, 0, n * sizeof **seen);
    *stamp = 0;
  }
  ++*stamp;
}

/* Pushes v's unvisited evicted parents (dir 0) or children (dir 1) on the search stack; returns its new height. */
static int mlsys__offload_dtr_push(mlsys__offload_dtr *D, int v, int dir, int sp) {
#define MLSYS__DTR_VISIT(u)                                                                                    \
  do {                                                                                                         \
    if (D->seen[u] != D->stamp) { D->seen[u] = D->stamp; D->stk[sp++] = u; }                                  \
  } while (0)
  if (dir == 0) MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, MLSYS__DTR_VISIT(u));
  else MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, MLSYS__DTR_VISIT(u));
#undef MLSYS__DTR_VISIT
  return sp;
}

/* Σ c over the evicted ancestors of v reachable through evicted storages (simrd's region_rev), plus with both the
   evicted descendants reachable the same way (region): e*(v). In a DAG the two sets are disjoint. */
static double mlsys__offload_dtr_estar(mlsys__offload_dtr *D, int v, int both) {
  double sum = 0;
  int sp, dir;
  for (dir = 0; dir < (both ? 2 : 1); dir++) {
    mlsys__offload_dtr_next_stamp(&D->seen, &D->stamp, (size_t)D->nv);
    sp = mlsys__offload_dtr_push(D, v, dir, 0);
    while (sp > 0) {
      int w = D->stk[--sp];
      sum += D->c[w];
      sp = mlsys__offload_dtr_push(D, w, dir, sp);
    }
  }
  return sum;
}

/* Σ value(E) over the distinct classes E of v's evicted neighbours. */
static double mlsys__offload_dtr_classes(mlsys__offload_dtr *D, int v) {
  double sum = 0;
  mlsys__offload_dtr_next_stamp(&D->uf_seen, &D->uf_stamp, (size_t)D->cap_uf);
#define MLSYS__DTR_ADD_CLASS(u)                                                                                \
  do {                                                                                                         \
    int mlsys__r = mlsys__offload_dtr_find(D, D->ecn[u]);                                                      \
    if (D->uf_seen[mlsys__r] != D->uf_stamp) { D->uf_seen[mlsys__r] = D->uf_stamp; sum += D->uf_val[mlsys__r]; } \
  } while (0)
  MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, MLSYS__DTR_ADD_CLASS(u));
  MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, MLSYS__DTR_ADD_CLASS(u));
#undef MLSYS__DTR_ADD_CLASS
  return sum;
}

static double mlsys__offload_dtr_ratio(double num, double den) { return den > 0 ? num / den : INFINITY; }

/* h(v) under heuristic k (the table of §4.3; the minimum is evicted). */
static double mlsys__offload_dtr_h(mlsys__offload_dtr *D, int k, int v) {
  double den = (double)D->m[v] * (D->clock - D->last_access[v]);
  switch (k) {
    case MLSYS_OFFLOAD_H_DTR_EQ: return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_classes(D, v), den);
    case MLSYS_OFFLOAD_H_DTR: return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_estar(D, v, 1), den);
    case MLSYS_OFFLOAD_H_DTR_LOCAL: return mlsys__offload_dtr_ratio(D->c[v], den);
    case MLSYS_OFFLOAD_H_LRU: return D->last_access[v];
    case MLSYS_OFFLOAD_H_SIZE: return mlsys__offload_dtr_ratio(1.0, (double)D->m[v]);
    case MLSYS_OFFLOAD_H_MSPS:
      return mlsys__offload_dtr_ratio(D->c[v] + mlsys__offload_dtr_estar(D, v, 0), (double)D->m[v]);
    default: return mlsys_rng_uniform(&D->rng);
  }
}

/* CheckpointPool::evict's scan: the storage to evict for op, or -1 when nothing in the pool is evictable. */
static int mlsys__offload_dtr_choose(mlsys__offload_dtr *D, int op, double *h_out) {
  int pass;
  for (pass = 0; pass < 2; pass++) {
    int i = 0, best = -1, smax = 1;
    double hb = 0;
    if (!D->o->exhaustive && pass == 0) {
      smax = (int)floor(sqrt((double)D->n_pool));
      if (smax < 1) smax = 1;
    }
    while (i < D->n_pool) {
      int v = D->pool[i];
      if (D->state[v] != 1) {   /* evicted since it entered: swap-remove */
        D->pool[i] = D->pool[--D->n_pool];
        D->in_pool[v] = 0;
        continue;
      }
      if (D->lock[v] == 0) {
        double h = mlsys__offload_dtr_h(D, D->heur, v);
        if (D->o->on_event) {
          mlsys_offload_dtr_event e;
          memset(&e, 0, sizeof e);
          e.kind = MLSYS_OFFLOAD_DTR_EV_SCORE;
          e.op = op;
          e.tensor = D->vt[v];
          e.clock = D->clock;
          e.h = h;
          e.h_eq = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR_EQ, v);
          e.h_dtr = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR, v);
          e.h_local = mlsys__offload_dtr_h(D, MLSYS_OFFLOAD_H_DTR_LOCAL, v);
          D->o->on_event(D->o->event_ctx, &e);
        }
        if (best < 0 || h < hb) { best = v; hb = h; }
        if (h <= 0) break;
      }
      i += smax > 1 ? mlsys_rng_range(&D->rng, 1, smax) : 1;
    }
    if (best >= 0) { *h_out = hb; return best; }
    if (smax == 1) break;   /* that was a full scan */
  }
  return -1;
}

/* Evict v (or free it eagerly): its memory goes, and it joins the classes of its evicted neighbours. */
static int mlsys__offload_dtr_evict(mlsys__offload_dtr *D, int v) {
  int node, r;
  if (D->n_uf == D->cap_uf) {
    int nc, *p, *s;
    double *val;
    if (D->cap_uf > INT_MAX / 4) {
      mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: more than %d evictions", D->cap_uf);
      return 0;
    }
    nc = D->cap_uf ? 2 * D->cap_uf : 1024;
    if (!(p = (int *)mlsys_realloc_array(D->uf_par, (size_t)nc, sizeof(int)))) return 0;
    D->uf_par = p;
    if (!(val = (double *)mlsys_realloc_array(D->uf_val, (size_t)nc, sizeof(double)))) return 0;
    D->uf_val = val;
    if (!(s = (int *)mlsys_realloc_array(D->uf_seen, (size_t)nc, sizeof(int)))) return 0;
    memset(s + D->cap_uf, 0, (size_t)(nc - D->cap_uf) * sizeof(int));
    D->uf_seen = s;
    D->cap_uf = nc;
  }
  D->state[v] = 2;
  D->mem -= D->m[v];
  node = D->n_uf++;
  D->uf_par[node] = -1;
  D->uf_val[node] = D->c[v];
  D->ecn[v] = node;
  /* simrd's EqClassNode.merge(neighbour's class, v's class): the neighbour's root hangs under v's */
#define MLSYS__DTR_MERGE(u)                                                                                    \
  do {                                                                                                         \
    int mlsys__l = mlsys__offload_dtr_find(D, D->ecn[u]);                                                      \
    r = mlsys__offload_dtr_find(D, node);                                                                      \
    if (mlsys__l != r) { D->uf_par[mlsys__l] = r; D->uf_val[r] += D->uf_val[mlsys__l]; }                       \
  } while (0)
  MLSYS__DTR_FOR_EVICTED_PARENTS(D, v, u, if (u != v) MLSYS__DTR_MERGE(u));
  MLSYS__DTR_FOR_EVICTED_CHILDREN(D, v, u, if (u != v) MLSYS__DTR_MERGE(u));
#undef MLSYS__DTR_MERGE
  return 1;
}

static void mlsys__offload_dtr_pool_add(mlsys__offload_dtr *D, int v) {
  double mean = D->size_cnt ? D->size_sum / (double)D->size_cnt : 0;
  int ok = D->m[v] > 0 && (D->o->keep_small || D->size_cnt == 0 || (double)D->m[v] >= 0.01 * mean);
  D->size_sum += (double)D->m[v];
  D->size_cnt++;
  if (ok && !D->in_pool[v]) {
    D->pool[D->n_pool++] = v;
    D->in_pool[v] = 1;
  }
}

static void mlsys__offload_dtr_stop(mlsys__offload_dtr *D, const char *fmt, ...) MLSYS__PRINTF(2, 3);
static void mlsys__offload_dtr_stop(mlsys__offload_dtr *D, const char *fmt, ...) {
  va_list ap;
  D->stopped = 1;
  D->r->feasible = 0;
  va_start(ap, fmt);
  vsnprintf(D->r->why, sizeof D->r->why, fmt, ap);
  va_end(ap);
}

/* PerformOp(top) with its rematerialisations (spec §4.3's core loop). */
static mlsys_status mlsys__offload_dtr_perform(mlsys__offload_dtr *D, int top) {
  const mlsys_offload_trace *tr = D->tr;
  int sp = 0, s;
  D->fr[sp].op = top;
  D->fr[sp].k = -1;
  D->fr[sp].target = -1;
  sp = 1;
  while (sp > 0) {
    mlsys__offload_dtr_frame *F = &D->fr[sp - 1];
    const mlsys_offload_op *op = &tr->op[F->op];
    int64_t need;
    int pushed = 0;
    if (F->k < 0) {
      for (s = op->in0; s < op->in0 + op->n_in; s++) D->last_access[D->slot_v[s]] = D->clock;
      for (s = op->in0; s < op->in0 + op->n_in; s++) {
        int v = D->slot_v[s];
        D->slot_f[s] &= (unsigned char)~MLSYS__DTR_LOCKED;
        if (!D->pinned[v] && D->state[v] == 1) { D->lock[v]++; D->slot_f[s] |= MLSYS__DTR_LOCKED; }
      }
      F->k = 0;
    }
    for (; F->k < op->n_in; F->k++) {
      int v = D->slot_v[op->in0 + F->k];
      if (D->pinned[v] || (D->slot_f[op->in0 + F->k] & MLSYS__DTR_LOCKED)) continue;
      if (D->state[v] == 1) {   /* restored meanwhile (a sibling of an earlier re-run) */
        D->lock[v]++;
        D->slot_f[op->in0 + F->k] |= MLSYS__DTR_LOCKED;
        continue;
      }
      if (D->state[v] != 2 || D->prod[v] < 0 || D->prod[v] >= F->op)
        return mlsys_set_error(MLSYS_ERR_ARG, "DTR: op %d reads tensor %d before any op writes it", F->op, D->vt[v]);
      if (D->n_remat >= D->remat_limit) {
        mlsys__offload_dtr_stop(D, "more than %ld rematerialisations (op %d needs tensor %d again)", D->remat_limit,
                                F->op, D->vt[v]);
        return MLSYS_OK;
      }
      D->n_remat++;
      if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_REMAT, D->prod[v], v, 0);
      D->fr[sp].op = D->prod[v];
      D->fr[sp].k = -1;
      D->fr[sp].target = v;
      sp++;
      pushed = 1;
      break;
    }
    if (pushed) continue;
    need = op->workspace;
    for (s = op->out0; s < op->out0 + op->n_out; s++)
      if (!(D->slot_f[s] & MLSYS__DTR_SKIP)) need += D->m[D->slot_v[s]];
    while (need > D->budget - D->mem) {
      double h = 0;
      int v = mlsys__offload_dtr_choose(D, F->op, &h);
      if (v < 0) {
        mlsys__offload_dtr_stop(D, "out of memory at op %d (%s)%s: it needs %lld bytes; nothing evictable is left in "
                                "the %lld of the %lld-byte budget in use", F->op, mlsys_offload_op_name(tr, F->op),
                                F->target >= 0 ? " (a rematerialisation)" : "", (long long)need, (long long)D->mem,
                                (long long)D->budget);
        return MLSYS_OK;
      }
      if (!mlsys__offload_dtr_evict(D, v)) return mlsys_last_status();
      D->n_evict++;
      if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_EVICT, F->op, v, h);
    }
    D->clock += op->time_us;
    if (F->target >= 0) D->recompute += op->time_us;
    if (D->o->on_event) {
      mlsys_offload_dtr_event e;
      memset(&e, 0, sizeof e);
      e.kind = MLSYS_OFFLOAD_DTR_EV_RUN;
      e.op = F->op;
      e.tensor = F->target >= 0 ? D->vt[F->target] : -1;
      e.clock = D->clock;
      D->o->on_event(D->o->event_ctx, &e);
    }
    D->mem += need;
    if (D->mem > D->peak) D->peak = D->mem;
    D->mem -= op->workspace;
    for (s = op->out0; s < op->out0 + op->n_out; s++) {
      int v = D->slot_v[s];
      if (D->slot_f[s] & MLSYS__DTR_SKIP) continue;
      if (D->state[v] == 1) { D->mem -= D->m[v]; continue; }   /* a re-run's duplicate of a resident sibling */
      if (D->state[v] == 2) {   /* restored: it leaves its class, which keeps the others' value */
        int root = mlsys__offload_dtr_find(D, D->ecn[v]);
        D->uf_val[root] -= D->c[v];
        D->ecn[v] = -1;
      } else {
        D->last_access[v] = D->clock;   /* simrd stamps a new tensor; a re-run keeps its outputs' stamps */
      }
      D->state[v] = 1;
      mlsys__offload_dtr_pool_add(D, v);
    }
    for (s = op->in0; s < op->in0 + op->n_in; s++)
      if (D->slot_f[s] & MLSYS__DTR_LOCKED) {
        D->lock[D->slot_v[s]]--;
        D->slot_f[s] &= (unsigned char)~MLSYS__DTR_LOCKED;
      }
    if (F->target < 0 && !D->o->no_eager) {
      int a;
      for (a = 0; a < op->n_in + op->n_out; a++) {
        int v = D->slot_v[a < op->n_in ? op->in0 + a : op->out0 + a - op->n_in];
        if (!D->pinned[v] && D->state[v] == 1 && D->last_use[v] == F->op && D->lock[v] == 0) {
          if (!mlsys__offload_dtr_evict(D, v)) return mlsys_last_status();
          if (D->o->on_event) mlsys__offload_dtr_event(D, MLSYS_OFFLOAD_DTR_EV_FREE, F->op, v, 0);
        }
      }
    }
    sp--;
  }
  return MLSYS_OK;
}

/* Storages, their producers, consumers and last uses (module comment in the API). */
static mlsys_status mlsys__offload_dtr_build(mlsys__offload_dtr *D, const mlsys_offload_facts *f) {
  const mlsys_offload_trace *tr = D->tr;
  int *pv = NULL, *cur = NULL, i, j, nv = 0;
  long s, nw = 0;
  unsigned char *pin_t = NULL;
  mlsys_status st = MLSYS_OK;
  if (tr->n_ids > INT_MAX / 2) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: a trace of %ld operands", tr->n_ids);
  pin_t = (unsigned char *)mlsys_calloc((size_t)tr->n_t + 1, 1);
  pv = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  cur = (int *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int));
  if (!pin_t || !pv || !cur) { st = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < tr->n_t; i++) {
    int k = tr->t[i].kind;
    pin_t[i] = k == MLSYS_OFFLOAD_T_PARAM || k == MLSYS_OFFLOAD_T_INPUT || k == MLSYS_OFFLOAD_T_OPT ||
               f->first_write[i] < 0;
  }
  for (j = 0; j < tr->n_op; j++)
    for (i = 0; i < tr->op[j].n_in; i++) {
      int t = tr->ids[tr->op[j].in0 + i];
      if (f->first_write[t] == j) pin_t[t] = 1;   /* read by its first writer: it existed before */
    }
  for (i = 0; i < tr->n_t; i++) {
    pv[i] = pin_t[i] ? nv++ : -1;
    cur[i] = -1;
  }
  for (j = 0; j < tr->n_op; j++) nw += tr->op[j].n_out;
  if (nw + nv > INT_MAX / 2) { st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "DTR: too many tensor writes"); goto done; }
  nw += nv + 1;   /* + 1: no zero-sized allocations for an empty trace */
  D->vt = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->prod = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->last_use = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->lock = (int *)mlsys_calloc((size_t)nw, sizeof(int));
  D->ecn = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->m = (int64_t *)mlsys_alloc((size_t)nw, sizeof(int64_t));
  D->c = (double *)mlsys_alloc((size_t)nw, sizeof(double));
  D->last_access = (double *)mlsys_calloc((size_t)nw, sizeof(double));
  D->state = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->pinned = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->in_pool = (unsigned char *)mlsys_calloc((size_t)nw, 1);
  D->pool = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->seen = (int *)mlsys_calloc((size_t)nw, sizeof(int));
  D->stk = (int *)mlsys_alloc((size_t)nw, sizeof(int));
  D->rd0 = (int *)mlsys_calloc((size_t)nw + 1, sizeof(int));
  D->slot_v = (int *)mlsys_alloc((size_t)tr->n_ids + 1, sizeof(int));
  D->slot_f = (unsigned char *)mlsys_calloc((size_t)tr->n_ids + 1, 1);
  D->rd = (int *)mlsys_alloc((size_t)tr->n_ids + 1, sizeof(int));
  D->fr = (mlsys__offload_dtr_frame *)mlsys_alloc((size_t)tr->n_op + 1, sizeof *D->fr);
  if (!D->vt || !D->prod || !D->last_use || !D->lock || !D->ecn || !D->m || !D->c || !D->last_access || !D->state ||
      !D->pinned || !D->in_pool || !D->pool || !D->seen || !D->stk || !D->rd0 || !D->slot_v || !D->slot_f || !D->rd ||
      !D->fr) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (i = 0; i < tr->n_t; i++)
    if (pv[i] >= 0) {
      int v = pv[i];
      D->vt[v] = i;
      D->prod[v] = -1;
      D->last_use[v] = tr->n_op;
      D->m[v] = tr->t[i].bytes;
      D->c[v] = 0;
      D->ecn[v] = -1;
      D->state[v] = 1;
      D->pinned[v] = 1;
    }
  for (j = 0; j < tr->n_op; j++) {
    const mlsys_offload_op *o = &tr->op[j];
    for (s = o->in0; s < o->in0 + o->n_in; s++) {
      int t = tr->ids[s], v = pin_t[t] ? pv[t] : cur[t];
      if (v < 0) {   /* facts would have made it pinned: a defensive check */
        st = mlsys_set_error(MLSYS_ERR_ARG, "DTR: op %d reads tensor %d before it exists", j, t);
        goto done;
      }
      D->slot_v[s] = v;
      D->last_use[v] = j;
    }
    for (s = o->out0; s < o->out0 + o->n_out; s++) {
      int t = tr->ids[s], v;
      if (pin_t[t]) {
        v = pv[t];
        D->slot_f[s] = MLSYS__DTR_SKIP;
      } else if (cur[t] >= 0 && D->prod[cur[t]] == j) {
        v = cur[t];
        D->slot_f[s] = MLSYS__DTR_SKIP;
      } else {
        v = cur[t] = nv++;
        D->vt[v] = t;
        D->prod[v] = j;
        D->last_use[v] = j;
        D->m[v] = tr->t[t].bytes;
        D->c[v] = o->time_us;
        D->ecn[v] = -1;
      }
      D->slot_v[s] = v;
    }
  }
  /* the last version of a tensor lives as long as facts say (a gradient nothing reads: to the end) */
  for (i = 0; i < tr->n_t; i++)
    if (cur[i] >= 0 && f->last_use[i] > D->last_use[cur[i]]) D->last_use[cur[i]] = f->last_use[i];
  /* consumers, each op once per storage */
  for (j = 0; j < tr->n_op; j++)
    for (s = tr->op[j].in0; s < tr->op[j].in0 + tr->op[j].n_in; s++) {
      int v = D->slot_v[s];
      if (D->seen[v] != j + 1) { D->seen[v] = j + 1; D->rd0[v + 1]++; }
    }
  for (i = 0; i < nv; i++) D->rd0[i + 1] += D->rd0[i];
  memset(D->seen, 0, (size_t)nv * sizeof(int));
  memcpy(D->stk, D->rd0, (size_t)nv * sizeof(int));   /* fill cursors */
  for (j = 0; j < tr->n_op; j++)
    for (s = tr->op[j].in0; s < tr->op[j].in0 + tr->op[j].n_in; s++) {
      int v = D->slot_v[s];
      if (D->seen[v] != j + 1) { D->seen[v] = j + 1; D->rd[D->stk[v]++] = j; }
    }
  memset(D->seen, 0, (size_t)nv * sizeof(int));
  D->nv = nv;
done:
  mlsys_free(pin_t);
  mlsys_free(pv);
  mlsys_free(cur);
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "DTR: out of memory for a trace of %d ops", tr->n_op);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_dtr(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_dtr_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_dtr D;
  mlsys_offload_dtr_opts def;
  mlsys_offload_facts f;
  mlsys_status st;
  int j, v;
  int64_t pinned = 0;
  memset(r, 0, sizeof *r);
  memset(&D, 0, sizeof D);
  if (!o) {
    memset(&def, 0, sizeof def);
    o = &def;
  }
  if (o->heuristic < 0 || o->heuristic >= MLSYS_OFFLOAD_H_N_)
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: unknown heuristic %d (0..%d)", o->heuristic, MLSYS_OFFLOAD_H_N_ - 1);
  if (o->budget < 0 || o->remat_limit < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: budget %lld bytes and remat limit %ld must be ≥ 0", (long long)o->budget,
                           o->remat_limit);
  if (!o->budget && (!hw || hw->gpu_bytes <= 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "DTR: no budget and no GPU memory size (hw->gpu_bytes)");
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  D.tr = tr;
  D.o = o;
  D.r = r;
  D.heur = o->heuristic;
  D.budget = o->budget ? o->budget : hw->gpu_bytes - tr->fixed_bytes;
  if (D.budget < 0) D.budget = 0;
  D.remat_limit = o->remat_limit ? o->remat_limit : 100000000L;
  mlsys_rng_seed(&D.rng, o->seed);
  r->feasible = 1;
  r->compute_us = f.compute_us;
  r->n_blocks = 1;
  if ((st = mlsys__offload_dtr_build(&D, &f))) goto done;
  for (v = 0; v < D.nv; v++)
    if (D.pinned[v]) pinned += D.m[v];
  D.mem = D.peak = pinned;
  if (pinned > D.budget) {
    mlsys__offload_dtr_stop(&D, "out of memory before op 0: the pinned tensors (weights, inputs, optimizer state) "
                            "need %lld bytes, the budget is %lld", (long long)pinned, (long long)D.budget);
  }
  for (j = 0; j < tr->n_op && !D.stopped; j++)
    if ((st = mlsys__offload_dtr_perform(&D, j))) goto done;
  r->time_us = D.clock;
  r->recompute_us = D.recompute;
  r->n_remat = (int)(D.n_remat < INT_MAX ? D.n_remat : INT_MAX);
  r->n_evictions = (int)(D.n_evict < INT_MAX ? D.n_evict : INT_MAX);
  r->peak_bytes = tr->fixed_bytes + D.peak;
done:
  mlsys__offload_dtr_free(&D);
  mlsys_offload_facts_free(&f);
  if (st) memset(r, 0, sizeof *r);
  return st;
}

#undef MLSYS__DTR_FOR_EVICTED_PARENTS
#undef MLSYS__DTR_FOR_EVICTED_CHILDREN
#undef MLSYS__DTR_LOCKED
#undef MLSYS__DTR_SKIP
/* ================================================================================================================
   UVM and ZeRO-Offload simulators (spec §4.2, §4.4)
   ================================================================================================================ */
/* Page states. PIN marks the pages of the op being served: they are never evicted for it. */
enum { MLSYS__UVM_FREE, MLSYS__UVM_HOST, MLSYS__UVM_FRESH, MLSYS__UVM_GPU, MLSYS__UVM_PIN = 0x80 };

/* A chunk's place in the LRU-by-migration order. Migration times only grow, so the order is a FIFO: a chunk that
   migrates again is appended with its new time and its older entry goes stale (time mismatch). */
typedef struct {
  int64_t chunk, stamp;
} mlsys__uvm_ent;

typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_facts *f;
  int64_t page, ppc, cap;      /* page bytes, pages per chunk, resident capacity in pages */
  int64_t npages, nchunk;
  int64_t *p0, *w0;            /* first page of each tensor / of each op's workspace */
  unsigned char *st;           /* [npages] */
  int64_t *nres, *stamp;       /* [nchunk] resident pages, migration time */
  int64_t *mark, mark_now;     /* [n_t] tensors already seen in the current op */
  mlsys__uvm_ent *q;
  int64_t qh, qn, qcap, seq;
  int64_t resident, peak, in_pages, out_pages;
  int n_faults, n_evict;
  double mig_us;
} mlsys__uvm;

static int mlsys__uvm_persist(const mlsys__uvm *u, int t) {
  int k = u->tr->t[t].kind;
  return k == MLSYS_OFFLOAD_T_PARAM || k == MLSYS_OFFLOAD_T_OPT || u->f->first_write[t] < 0;
}

static int64_t mlsys__uvm_np(const mlsys__uvm *u, int64_t bytes) { return bytes / u->page + (bytes % u->page != 0); }

static void mlsys__uvm_free(mlsys__uvm *u) {
  mlsys_free(u->p0);
  mlsys_free(u->w0);
  mlsys_free(u->st);
  mlsys_free(u->nres);
  mlsys_free(u->stamp);
  mlsys_free(u->mark);
  mlsys_free(u->q);
}

/* Pages [a, a+n) leave the GPU with no copy (a dead tensor or a finished workspace). */
static void mlsys__uvm_release(mlsys__uvm *u, int64_t a, int64_t n) {
  int64_t p;
  for (p = a; p < a + n; p++) {
    if (u->st[p] == MLSYS__UVM_GPU) {
      u->nres[p / u->ppc]--;
      u->resident--;
    }
    u->st[p] = MLSYS__UVM_FREE;
  }
}

/* The ranges an op touches, in migration order: distinct inputs, distinct outputs not read, workspace. Fills
   a[]/n[] (room for n_in + n_out + 1) and returns their count. */
static int mlsys__uvm_ranges(mlsys__uvm *u, int i, int64_t *a, int64_t *n) {
  const mlsys_offload_op *o = &u->tr->op[i];
  int j, k = 0;
  u->mark_now++;
  for (j = 0; j < o->n_in + o->n_out; j++) {
    int t = u->tr->ids[j < o->n_in ? o->in0 + j : o->out0 + j - o->n_in];
    if (u->mark[t] == u->mark_now) continue;
    u->mark[t] = u->mark_now;
    a[k] = u->p0[t];
    n[k++] = mlsys__uvm_np(u, u->tr->t[t].bytes);
  }
  a[k] = u->w0[i];
  n[k++] = mlsys__uvm_np(u, o->workspace);
  return k;
}

/* Serve and run op i. Returns the pages it touches when they exceed the capacity (it cannot run), else 0. */
static int64_t mlsys__uvm_op(mlsys__uvm *u, int i, double fault_us, double h2d, double d2h, int64_t *a, int64_t *n) {
  const mlsys_offload_op *o = &u->tr->op[i];
  int64_t need = 0, host = 0, fresh = 0, over, ev = 0, pos, p;
  int j, k;
  /* tensors first written here, and the workspace, come into existence: no data anywhere yet */
  for (j = 0; j < o->n_out; j++) {
    int t = u->tr->ids[o->out0 + j];
    if (!mlsys__uvm_persist(u, t) && u->f->first_write[t] == i && u->st[u->p0[t]] == MLSYS__UVM_FREE)
      memset(u->st + u->p0[t], MLSYS__UVM_FRESH, (size_t)mlsys__uvm_np(u, u->tr->t[t].bytes));
  }
  k = mlsys__uvm_ranges(u, i, a, n);
  memset(u->st + a[k - 1], MLSYS__UVM_FRESH, (size_t)n[k - 1]);
  for (j = 0; j < k; j++)
    for (p = a[j]; p < a[j] + n[j]; p++) {
      unsigned char s = u->st[p];
      need++;
      if (s == MLSYS__UVM_HOST) host++;
      else if (s != MLSYS__UVM_GPU) fresh++;
      u->st[p] = (unsigned char)(s | MLSYS__UVM_PIN);
    }
  if (need > u->cap) {
    for (j = 0; j < k; j++)
      for (p = a[j]; p < a[j] + n[j]; p++) u->st[p] &= (unsigned char)~MLSYS__UVM_PIN;
    return need;
  }
  /* room: evict chunks in migration order, each writing back its resident pages this op does not touch. Enough
     exist: need <= cap, so resident - (need - host - fresh) >= over. */
  over = u->resident + host + fresh - u->cap;
  for (pos = u->qh; over > 0 && pos < u->qn; pos++) {
    int64_t c = u->q[pos].chunk, hi, got = 0;
    if (u->stamp[c] != u->q[pos].stamp || u->nres[c] == 0) {
      if (pos == u->qh) u->qh++;
      continue;
    }
    hi = (c + 1) * u->ppc < u->npages ? (c + 1) * u->ppc : u->npages;
    for (p = c * u->ppc; p < hi; p++)
      if (u->st[p] == MLSYS__UVM_GPU) {
        u->st[p] = MLSYS__UVM_HOST;
        got++;
      }
    if (got) u->n_evict++;
    u->nres[c] -= got;
    u->resident -= got;
    over -= got;
    ev += got;
    if (u->nres[c] == 0 && pos == u->qh) u->qh++;
  }
  if (host || ev) {
    u->n_faults++;
    u->mig_us += fault_us + (double)(host * u->page) / h2d + (double)(ev * u->page) / d2h;
  }
  u->in_pages += host;
  u->out_pages += ev;
  /* migrate/populate; a chunk's time is that of the last page moved into it */
  for (j = 0; j < k; j++)
    for (p = a[j]; p < a[j] + n[j]; p++) {
      unsigned char s = (unsigned char)(u->st[p] & ~MLSYS__UVM_PIN);
      int64_t c = p / u->ppc;
      u->st[p] = MLSYS__UVM_GPU;
      if (s == MLSYS__UVM_GPU) continue;
      /* a new time unless c is already the newest; an empty chunk may have lost its entry, so it gets one */
      if (u->nres[c] == 0 || u->stamp[c] != u->seq) {
        u->stamp[c] = ++u->seq;
        if (u->qn == u->qcap) {   /* compact the consumed head before growing */
          if (u->qh > 0) {
            memmove(u->q, u->q + u->qh, (size_t)(u->qn - u->qh) * sizeof *u->q);
            u->qn -= u->qh;
            u->qh = 0;
          }
          if (u->qn * 2 > u->qcap) {
            mlsys__uvm_ent *nq = (mlsys__uvm_ent *)mlsys_realloc_array(u->q, (size_t)u->qcap * 2, sizeof *u->q);
            if (!nq) return -1;
            u->q = nq;
            u->qcap *= 2;
          }
        }
        u->q[u->qn].chunk = c;
        u->q[u->qn++].stamp = u->seq;
      }
      u->nres[c]++;
      u->resident++;
    }
  if (u->resident > u->peak) u->peak = u->resident;
  /* run, then drop the workspace and the tensors whose last use this was */
  mlsys__uvm_release(u, a[k - 1], n[k - 1]);
  for (j = 0; j < o->n_in + o->n_out; j++) {
    int t = u->tr->ids[(j < o->n_in ? o->in0 + j : o->out0 + j - o->n_in)];
    if (!mlsys__uvm_persist(u, t) && u->f->last_use[t] == i) mlsys__uvm_release(u, u->p0[t], mlsys__uvm_np(u, u->tr->t[t].bytes));
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_uvm(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_uvm_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__uvm u;
  mlsys_status st = MLSYS_OK;
  int64_t pos = 0, *a = NULL, *n = NULL, chunk, fixed;
  double fault_us, oversub;
  int iters, it, i, t, maxio = 0, over_cap = 0;
  if (!tr || !r) return mlsys_set_error(MLSYS_ERR_ARG, "UVM simulation: NULL %s", tr ? "result" : "trace");
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  memset(&u, 0, sizeof u);
  u.page = o && o->fault_page ? o->fault_page : 65536;
  chunk = o && o->evict_chunk ? o->evict_chunk : 2 * 1024 * 1024;
  fault_us = !o || o->fault_us == 0 ? 30.0 : o->fault_us < 0 ? 0.0 : o->fault_us;
  oversub = o && o->oversub_max ? o->oversub_max : 2.0;
  iters = o && o->iterations ? o->iterations : 2;
  if (u.page <= 0 || chunk <= 0 || chunk % u.page)
    return mlsys_set_error(MLSYS_ERR_ARG, "UVM: the eviction chunk (%lld bytes) must be a positive multiple of the fault page (%lld)",
                           (long long)chunk, (long long)u.page);
  if (!(oversub > 0) || isnan(fault_us) || iters < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "UVM: oversubscription cap %g, fault time %g µs, %d iterations", oversub, fault_us, iters);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  u.tr = tr;
  u.f = &f;
  u.ppc = chunk / u.page;
  fixed = tr->fixed_bytes;
  u.cap = hw->gpu_bytes > fixed ? (hw->gpu_bytes - fixed) / u.page : 0;
  r->compute_us = f.compute_us;
  r->feasible = 1;
  if ((double)f.peak_bytes > oversub * (double)hw->gpu_bytes) {
    over_cap = 1;
    mlsys__offload_infeasible(r, "footprint %lld bytes exceeds UVM cap of %gx the GPU's %lld bytes", (long long)f.peak_bytes, oversub,
                              (long long)hw->gpu_bytes);
  }
  /* layout: persistent tensors in id order, then op by op what it writes first, then its workspace */
  u.p0 = (int64_t *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int64_t));
  u.w0 = (int64_t *)mlsys_alloc((size_t)tr->n_op + 1, sizeof(int64_t));
  u.mark = (int64_t *)mlsys_calloc((size_t)tr->n_t + 1, sizeof(int64_t));
  if (!u.p0 || !u.w0 || !u.mark) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
  for (t = 0; t < tr->n_t; t++) {
    u.p0[t] = -1;
    if (mlsys__uvm_persist(&u, t)) { u.p0[t] = pos; pos += mlsys__uvm_np(&u, tr->t[t].bytes); }
  }
  for (i = 0; i < tr->n_op; i++) {
    const mlsys_offload_op *op = &tr->op[i];
    int j;
    for (j = 0; j < op->n_out; j++) {
      t = tr->ids[op->out0 + j];
      if (u.p0[t] < 0) { u.p0[t] = pos; pos += mlsys__uvm_np(&u, tr->t[t].bytes); }
    }
    u.w0[i] = pos;
    pos += mlsys__uvm_np(&u, op->workspace);
    if (op->n_in + op->n_out > maxio) maxio = op->n_in + op->n_out;
  }
  for (t = 0; t < tr->n_t; t++)
    if (u.p0[t] < 0) u.p0[t] = 0;   /* unreachable: a non-persistent tensor has a first write */
  /* a byte of state per page: 2^28 pages is 16 TiB at 64 KiB */
  if (pos > ((int64_t)1 << 28)) {
    st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "UVM: %lld pages of %lld bytes to track; use a larger fault page", (long long)pos,
                         (long long)u.page);
    goto done;
  }
  u.npages = pos;
  u.nchunk = pos / u.ppc + 1;
  u.qcap = 1024;
  u.st = (unsigned char *)mlsys_calloc((size_t)pos + 1, 1);
  u.nres = (int64_t *)mlsys_calloc((size_t)u.nchunk, sizeof(int64_t));
  u.stamp = (int64_t *)mlsys_calloc((size_t)u.nchunk, sizeof(int64_t));
  u.q = (mlsys__uvm_ent *)mlsys_alloc((size_t)u.qcap, sizeof *u.q);
  a = (int64_t *)mlsys_alloc((size_t)maxio + 1, sizeof(int64_t));
  n = (int64_t *)mlsys_alloc((size_t)maxio + 1, sizeof(int64_t));
  if (!u.st || !u.nres || !u.stamp || !u.q || !a || !n) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
  for (t = 0; t < tr->n_t; t++)   /* persistent tensors start on the host */
    if (mlsys__uvm_persist(&u, t)) memset(u.st + u.p0[t], MLSYS__UVM_HOST, (size_t)mlsys__uvm_np(&u, tr->t[t].bytes));
  for (it = 0; it < iters; it++) {
    if (it == iters - 1) {   /* report the last iteration only */
      u.in_pages = u.out_pages = 0;
      u.n_faults = u.n_evict = 0;
      u.mig_us = 0;
      u.peak = u.resident;
    }
    for (i = 0; i < tr->n_op; i++) {
      int64_t big = mlsys__uvm_op(&u, i, fault_us, h.h2d, h.d2h, a, n);
      if (big < 0) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
      if (big > 0) {   /* r holds only compute_us so far */
        if (!over_cap)
          mlsys__offload_infeasible(r, "op %d (%s) touches %lld bytes of %lld-byte pages, more than the %lld UVM can keep resident", i,
                                    mlsys_offload_op_name(tr, i), (long long)(big * u.page), (long long)u.page,
                                    (long long)(u.cap * u.page));
        goto done;
      }
    }
    for (t = 0; t < tr->n_t; t++)   /* results of the iteration (unread gradients) die at its end */
      if (!mlsys__uvm_persist(&u, t)) mlsys__uvm_release(&u, u.p0[t], mlsys__uvm_np(&u, tr->t[t].bytes));
  }
  r->migration_us = u.mig_us;
  r->time_us = r->compute_us + u.mig_us;
  r->bytes_h2d = u.in_pages * u.page;
  r->bytes_d2h = u.out_pages * u.page;
  r->n_faults = u.n_faults;
  r->n_evictions = u.n_evict;
  r->peak_bytes = fixed + u.peak * u.page;
done:
  mlsys_free(a);
  mlsys_free(n);
  mlsys__uvm_free(&u);
  mlsys_offload_facts_free(&f);
  return st;
}

/* ---- ZeRO-Offload ---- */
static int mlsys__zero_has(const char *s, const char *w) {
  size_t i, j, n = strlen(w);
  for (i = 0; s[i]; i++) {
    for (j = 0; j < n && s[i + j] && tolower((unsigned char)s[i + j]) == w[j]; j++) {}
    if (j == n) return 1;
  }
  return 0;
}

/* §4.4: the optimizer step runs on the CPU, so these ops leave the GPU's time and memory */
static int mlsys__zero_is_optim(const mlsys_offload_trace *tr, int i) {
  const char *nm = mlsys_offload_op_name(tr, i);
  const mlsys_offload_op *o = &tr->op[i];
  int j;
  if (mlsys__zero_has(nm, "adam") || mlsys__zero_has(nm, "sgd") || mlsys__zero_has(nm, "optim")) return 1;
  for (j = 0; j < o->n_out; j++)
    if (tr->t[tr->ids[o->out0 + j]].kind == MLSYS_OFFLOAD_T_OPT) return 1;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_zero(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                              const mlsys_offload_zero_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys_status st;
  double thr, frac, tfb = 0, tbwd = 0, M, d2h, adam, h2d, exposed_d2h, cpu;
  int64_t *delta, base, live = 0, peak, pbytes = 0;
  int i, t, nparam = 0, peak_op = -1, pb;
  if (!tr || !r) return mlsys_set_error(MLSYS_ERR_ARG, "ZeRO-Offload simulation: NULL %s", tr ? "result" : "trace");
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  thr = !o || o->cpu_adam_params_per_us == 0 ? 1000.0 : o->cpu_adam_params_per_us;
  frac = !o || o->overlap_bwd_frac == 0 ? 1.0 : o->overlap_bwd_frac < 0 ? 0.0 : o->overlap_bwd_frac;
  pb = o && o->param_bytes ? o->param_bytes : 2;
  if (!(thr > 0) || !(frac <= 1) || pb < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "ZeRO-Offload: CPU Adam throughput %g parameters/µs (must be > 0), backward overlap %g (must be <= 1), %d bytes a parameter",
                           thr, frac, pb);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if (!(delta = (int64_t *)mlsys_calloc((size_t)tr->n_op + 2, sizeof(int64_t)))) {
    mlsys_offload_facts_free(&f);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "ZeRO-Offload: out of memory");
  }
  /* facts' live-byte curve with OPT left on the CPU, read at the GPU's ops only */
  base = tr->fixed_bytes;
  for (t = 0; t < tr->n_t; t++) {
    int k = tr->t[t].kind;
    if (k == MLSYS_OFFLOAD_T_PARAM) { nparam++; pbytes += tr->t[t].bytes; }
    if (k == MLSYS_OFFLOAD_T_OPT) continue;
    if (k == MLSYS_OFFLOAD_T_PARAM || f.first_write[t] < 0) base += tr->t[t].bytes;
    else if (f.last_use[t] >= 0) {
      delta[f.first_write[t]] += tr->t[t].bytes;
      delta[f.last_use[t] + 1] -= tr->t[t].bytes;
    }
  }
  peak = base;
  for (i = 0; i < tr->n_op; i++) {
    live += delta[i];
    if (mlsys__zero_is_optim(tr, i)) continue;
    tfb += tr->op[i].time_us;
    if (tr->op[i].is_bwd) tbwd += tr->op[i].time_us;
    if (base + live + tr->op[i].workspace > peak) { peak = base + live + tr->op[i].workspace; peak_op = i; }
  }
  mlsys_free(delta);
  mlsys_offload_facts_free(&f);
  r->feasible = 1;
  if (!nparam) {
    mlsys__offload_infeasible(r, "ZeRO-Offload does not apply: no parameters in the trace");
    return MLSYS_OK;
  }
  M = (double)pbytes / pb;
  d2h = 2 * M / h.d2h;
  adam = M / thr;
  h2d = 2 * M / h.h2d;
  r->compute_us = tfb;
  r->bytes_d2h = r->bytes_h2d = (int64_t)(2 * M);   /* fp16 gradients out, fp16 parameters in */
  r->peak_bytes = peak;
  if (o && o->dpu) {
    double cpu_side = d2h + adam + h2d, tail = cpu_side > tfb ? cpu_side - tfb : 0;
    r->time_us = tfb + tail;
    cpu = tail > 0 ? tail * adam / cpu_side : 0;
    r->other_us = cpu;
    r->migration_us = tail - cpu;
  } else {
    exposed_d2h = d2h - frac * tbwd > 0 ? d2h - frac * tbwd : 0;
    r->other_us = adam;
    r->migration_us = exposed_d2h + h2d;
    r->time_us = tfb + exposed_d2h + adam + h2d;
  }
  if (peak > hw->gpu_bytes) {
    if (peak_op >= 0)
      mlsys__offload_infeasible(r, "ZeRO-Offload needs %lld GPU bytes at op %d (%s) (fp16 parameters and activations; optimizer state on the CPU), the GPU has %lld",
                                (long long)peak, peak_op, mlsys_offload_op_name(tr, peak_op), (long long)hw->gpu_bytes);
    else
      mlsys__offload_infeasible(r, "ZeRO-Offload needs %lld GPU bytes for the fp16 parameters and resident tensors, the GPU has %lld",
                                (long long)peak, (long long)hw->gpu_bytes);
  }
  return MLSYS_OK;
}
/* ================================================================================================================
   6. The pilot model (spec §3.3, §2.3(f)) and the mis-prediction cache (§3.6)
   ================================================================================================================ */
#define MLSYS__OFFLOAD_PILOT_MAGIC "MLSYSPLT"
#define MLSYS__OFFLOAD_PILOT_HDR 72   /* magic 8, versions 8, 7 ints 28, 3 floats 12, seed 8, nparams 8 */
#define MLSYS__OFFLOAD_PILOT_HDR2 84  /* version 2: + len_code, adam, n_codes */

/* Offsets of each parameter group in the flat vector (the order the public header documents). */
typedef struct {
  size_t we, be, wa, ba, w1[3], b1[3], w2[3], b2[3], w3[3], b3[3], wo, bo, n;
} mlsys__offload_pilot_layout;

/* The projection of §3.3 for one embedding width, cached because generating it costs emb_dim·e_proj normals. */
typedef struct {
  float *P;                       /* [dim][e_proj] */
  int dim;
} mlsys__offload_pilot_proj;

struct mlsys_offload_pilot {
  mlsys_offload_pilot_cfg cfg;    /* defaults filled in */
  int xe, xa, ny;                 /* widths of x_e, x_a and ŷ */
  mlsys__offload_pilot_layout L;
  float *p, *g;                   /* parameters; the minibatch gradient */
  float *ws;                      /* all scratch below lives in this one block */
  float *uc, *c;                  /* [2d] pre-activations and [h_e; h_a] */
  float *u1, *a1, *u2, *a2, *u3, *z, *y;
  float *gy, *gz, *g2, *g1, *gc;  /* backward: d loss / d (ŷ, z, a2, a1, c) */
  double *acc;                    /* [e_proj] features' accumulators */
  mlsys__offload_pilot_proj *pc;  /* behind a pointer so const entry points may refill it */
  mlsys_rng rng;                  /* minibatch shuffling */
  float *m1, *m2;                 /* Adam's moments (allocated by the first Adam epoch) */
  long adam_t;                    /* Adam steps taken */
  int n_codes;                    /* codebook (label snapping) */
  int32_t *codes;                 /* [n_codes][ny] */
  float *lcodes;                  /* log1p of codes, for decode */
};

/* Independent streams from one user seed: weights, projection (per width), shuffling. */
#define MLSYS__OFFLOAD_PILOT_S_PROJ 0xD1B54A32D192ED03ull
#define MLSYS__OFFLOAD_PILOT_S_SHUF 0x9E3779B97F4A7C15ull

static const char *mlsys__offload_pilot_field_names[] = {"e_proj", "d", "h", "d_out", "k_max"};

/* Fill defaults (zero fields) and check ranges. strict (a file's config): zero is an error, since the writer always
   stores the resolved values. */
static mlsys_status mlsys__offload_pilot_resolve(const mlsys_offload_pilot_cfg *in, mlsys_offload_pilot_cfg *out, int strict,
                                                 const char *name) {
  static const int dflt[5] = {32, 16, 32, 32, 16};
  int v[5], i;
  mlsys_offload_pilot_cfg c;
  if (in) c = *in;
  else memset(&c, 0, sizeof c);
  v[0] = c.e_proj; v[1] = c.d; v[2] = c.h; v[3] = c.d_out; v[4] = c.k_max;
  for (i = 0; i < 5; i++) {
    if (v[i] == 0 && !strict) v[i] = dflt[i];
    if (v[i] < 1 || v[i] > MLSYS_OFFLOAD_PILOT_MAX_DIM)
      return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: %s = %d is outside 1..%d", name,
                             mlsys__offload_pilot_field_names[i], v[i], MLSYS_OFFLOAD_PILOT_MAX_DIM);
  }
  c.e_proj = v[0]; c.d = v[1]; c.h = v[2]; c.d_out = v[3]; c.k_max = v[4];
  if (c.afm_full != 0 && c.afm_full != 1)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: afm_full = %d is neither 0 nor 1", name, c.afm_full);
  if (c.afm_rows_max == 0 && !strict) c.afm_rows_max = 256;
  if (c.afm_rows_max < 1 || c.afm_rows_max > MLSYS_OFFLOAD_PILOT_MAX_ROWS)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: afm_rows_max = %d is outside 1..%d", name,
                           c.afm_rows_max, MLSYS_OFFLOAD_PILOT_MAX_ROWS);
  if (c.leaky == 0.0f && !strict) c.leaky = 0.01f;
  if (!(c.leaky > 0.0f && c.leaky <= 1.0f))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: leaky = %g is outside (0, 1]", name, (double)c.leaky);
  if (c.lr == 0.0f && !strict) c.lr = 0.01f;
  if (!(c.lr > 0.0f && c.lr <= FLT_MAX))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: lr = %g is not a positive finite number", name, (double)c.lr);
  if (c.w_rows == 0.0f && !strict) c.w_rows = 4.0f;
  if (!(c.w_rows > 0.0f && c.w_rows <= FLT_MAX))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: w_rows = %g is not a positive finite number", name,
                           (double)c.w_rows);
  if (c.len_code < 0 || c.len_code > MLSYS_OFFLOAD_PILOT_MAX_DIM)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: len_code = %d is outside 0..%d", name, c.len_code,
                           MLSYS_OFFLOAD_PILOT_MAX_DIM);
  if (c.adam != 0 && c.adam != 1)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: adam = %d is neither 0 nor 1", name, c.adam);
  if (c.seed == 0 && !strict) c.seed = 1;
  if (c.seed == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: seed is 0 (a saved model stores its resolved seed)", name);
  *out = c;
  return MLSYS_OK;
}

/* Parameter offsets and count of a resolved config; uint64 arithmetic (the limits keep it far from overflow). */
static uint64_t mlsys__offload_pilot_layout_of(const mlsys_offload_pilot_cfg *c, mlsys__offload_pilot_layout *L) {
  uint64_t d = (uint64_t)c->d, h = (uint64_t)c->h, o = (uint64_t)c->d_out, ny = (uint64_t)c->k_max * 10u;
  uint64_t xe = (uint64_t)c->e_proj + 2u + (uint64_t)c->len_code, xa = c->afm_full ? (uint64_t)c->afm_rows_max * 9u : 11u, n = 0;
  mlsys__offload_pilot_layout l;
  int t;
  memset(&l, 0, sizeof l);
  l.we = (size_t)n; n += d * xe;
  l.be = (size_t)n; n += d;
  l.wa = (size_t)n; n += d * xa;
  l.ba = (size_t)n; n += d;
  for (t = 0; t < 3; t++) {
    l.w1[t] = (size_t)n; n += h * 2u * d;
    l.b1[t] = (size_t)n; n += h;
    l.w2[t] = (size_t)n; n += h * h;
    l.b2[t] = (size_t)n; n += h;
    l.w3[t] = (size_t)n; n += o * h;
    l.b3[t] = (size_t)n; n += o;
  }
  l.wo = (size_t)n; n += ny * o;
  l.bo = (size_t)n; n += ny;
  l.n = (size_t)n;
  if (L) *L = l;
  return n;
}

static void mlsys__offload_pilot_free_parts(mlsys_offload_pilot *m) {
  if (!m) return;
  if (m->pc) mlsys_free(m->pc->P);
  mlsys_free(m->pc);
  mlsys_free(m->p);
  mlsys_free(m->g);
  mlsys_free(m->ws);
  mlsys_free(m->acc);
  mlsys_free(m->m1);
  mlsys_free(m->m2);
  mlsys_free(m->codes);
  mlsys_free(m->lcodes);
  mlsys_free(m);
}

/* Allocate a model for a resolved config; weights uninitialised. */
static mlsys_status mlsys__offload_pilot_alloc(const mlsys_offload_pilot_cfg *c, const char *name, mlsys_offload_pilot **out) {
  mlsys_offload_pilot *m;
  uint64_t np = mlsys__offload_pilot_layout_of(c, NULL);
  size_t d = (size_t)c->d, h = (size_t)c->h, o = (size_t)c->d_out, ny = (size_t)c->k_max * 10u, nws;
  float *w;
  *out = NULL;
  if (np > MLSYS_OFFLOAD_PILOT_MAX_PARAMS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: %llu parameters, above the limit of %u", name, (unsigned long long)np,
                           (unsigned)MLSYS_OFFLOAD_PILOT_MAX_PARAMS);
  m = (mlsys_offload_pilot *)mlsys_calloc(1, sizeof *m);
  if (!m) return MLSYS_ERR_NOMEM;
  m->cfg = *c;
  m->xe = c->e_proj + 2 + c->len_code;
  m->xa = c->afm_full ? c->afm_rows_max * 9 : 11;
  m->ny = (int)ny;
  mlsys__offload_pilot_layout_of(c, &m->L);
  nws = 2 * (2 * d) + 4 * h + 2 * o + ny + ny + o + 2 * h + 2 * d;
  m->p = (float *)mlsys_alloc((size_t)np, sizeof(float));
  m->g = (float *)mlsys_calloc((size_t)np, sizeof(float));
  m->ws = (float *)mlsys_calloc(nws, sizeof(float));
  m->acc = (double *)mlsys_calloc((size_t)c->e_proj, sizeof(double));
  m->pc = (mlsys__offload_pilot_proj *)mlsys_calloc(1, sizeof *m->pc);
  if (!m->p || !m->g || !m->ws || !m->acc || !m->pc) {
    mlsys__offload_pilot_free_parts(m);
    return MLSYS_ERR_NOMEM;
  }
  w = m->ws;
  m->uc = w; w += 2 * d;
  m->c = w; w += 2 * d;
  m->u1 = w; w += h;
  m->a1 = w; w += h;
  m->u2 = w; w += h;
  m->a2 = w; w += h;
  m->u3 = w; w += o;
  m->z = w; w += o;
  m->y = w; w += ny;
  m->gy = w; w += ny;
  m->gz = w; w += o;
  m->g2 = w; w += h;
  m->g1 = w; w += h;
  m->gc = w; w += 2 * d;
  mlsys_rng_seed(&m->rng, c->seed ^ MLSYS__OFFLOAD_PILOT_S_SHUF);
  *out = m;
  return MLSYS_OK;
}

static void mlsys__offload_pilot_init_layer(mlsys_rng *r, float *W, float *b, int nin, int nout, double gain) {
  double bound = sqrt(gain / (double)nin);
  size_t i, n = (size_t)nin * (size_t)nout;
  for (i = 0; i < n; i++) W[i] = (float)((2.0 * mlsys_rng_uniform(r) - 1.0) * bound);
  for (i = 0; i < (size_t)nout; i++) b[i] = 0.0f;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_create(const mlsys_offload_pilot_cfg *cfg, mlsys_offload_pilot **out) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  mlsys_status s;
  mlsys_rng r;
  double g;
  int t, d;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "pilot create: out is NULL");
  *out = NULL;
  if ((s = mlsys__offload_pilot_resolve(cfg, &c, 0, "pilot config")) != MLSYS_OK) return s;
  if ((s = mlsys__offload_pilot_alloc(&c, "pilot config", &m)) != MLSYS_OK) return s;
  /* He/Kaiming-uniform for LeakyReLU layers: Var = 2 / ((1 + a²) fan_in); the linear output layer gets Var = 1/fan_in */
  g = 6.0 / (1.0 + (double)c.leaky * (double)c.leaky);
  d = c.d;
  mlsys_rng_seed(&r, c.seed);
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.we, m->p + m->L.be, m->xe, d, g);
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.wa, m->p + m->L.ba, m->xa, d, g);
  for (t = 0; t < 3; t++) {
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w1[t], m->p + m->L.b1[t], 2 * d, c.h, g);
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w2[t], m->p + m->L.b2[t], c.h, c.h, g);
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w3[t], m->p + m->L.b3[t], c.h, c.d_out, g);
  }
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.wo, m->p + m->L.bo, c.d_out, m->ny, 3.0);
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_pilot_free(mlsys_offload_pilot *m) { mlsys__offload_pilot_free_parts(m); }

MLSYS_DEF size_t mlsys_offload_pilot_nparams(const mlsys_offload_pilot *m) { return m ? m->L.n : 0; }

MLSYS_DEF mlsys_offload_pilot_cfg mlsys_offload_pilot_config(const mlsys_offload_pilot *m) {
  mlsys_offload_pilot_cfg c;
  if (m) return m->cfg;
  memset(&c, 0, sizeof c);
  return c;
}

MLSYS_DEF float *mlsys_offload_pilot_params(mlsys_offload_pilot *m) { return m ? m->p : NULL; }

/* ---- features ---- */

/* N(0,1) pairs by Box-Muller (both values used, so half the logs of mlsys_rng_normal). */
typedef struct {
  mlsys_rng r;
  double spare;
  int has;
} mlsys__offload_pilot_gauss;

static double mlsys__offload_pilot_gauss_next(mlsys__offload_pilot_gauss *g) {
  double u1, u2, rad;
  if (g->has) {
    g->has = 0;
    return g->spare;
  }
  u1 = 1.0 - mlsys_rng_uniform(&g->r);   /* (0, 1]: log is finite */
  u2 = mlsys_rng_uniform(&g->r);
  rad = sqrt(-2.0 * log(u1));
  g->spare = rad * sin(6.283185307179586 * u2);
  g->has = 1;
  return rad * cos(6.283185307179586 * u2);
}

static void mlsys__offload_pilot_gauss_seed(mlsys__offload_pilot_gauss *g, uint64_t seed, int emb_dim) {
  mlsys_rng_seed(&g->r, seed ^ (MLSYS__OFFLOAD_PILOT_S_PROJ * (uint64_t)(unsigned)emb_dim));
  g->has = 0;
  g->spare = 0.0;
}

static void mlsys__offload_pilot_fill_nan(float *x, int n) {
  int i;
  if (x)
    for (i = 0; i < n; i++) x[i] = NAN;
}

MLSYS_DEF void mlsys_offload_pilot_features(const mlsys_offload_pilot *m, const float *emb, int n_tok, int emb_dim, float *x_e) {
  int E, j, k, t;
  double scale;
  const float *P = NULL;
  mlsys__offload_pilot_gauss gen;
  if (!m || !x_e) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot features: NULL model or output");
    return;
  }
  E = m->cfg.e_proj;
  if (n_tok < 0 || (n_tok > 0 && (!emb || emb_dim < 1))) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot features: bad embedding (n_tok %d, emb_dim %d, emb %s)", n_tok, emb_dim,
                    emb ? "given" : "NULL");
    mlsys__offload_pilot_fill_nan(x_e, m->xe);
    return;
  }
  for (j = 0; j < E; j++) m->acc[j] = 0.0;
  if (n_tok > 0) {
    scale = 1.0 / sqrt((double)emb_dim);
    if (m->pc->dim != emb_dim) {
      /* refill the cache; if that allocation fails, the same values are generated on the fly below */
      float *nP = (float *)mlsys_realloc_array(m->pc->P, (size_t)emb_dim * (size_t)E, sizeof(float));
      if (nP) {
        size_t i, n = (size_t)emb_dim * (size_t)E;
        mlsys__offload_pilot_gauss_seed(&gen, m->cfg.seed, emb_dim);
        for (i = 0; i < n; i++) nP[i] = (float)(mlsys__offload_pilot_gauss_next(&gen) * scale);
        m->pc->P = nP;
        m->pc->dim = emb_dim;
      } else {
        mlsys_clear_error();
      }
    }
    if (m->pc->dim == emb_dim) P = m->pc->P;
    else mlsys__offload_pilot_gauss_seed(&gen, m->cfg.seed, emb_dim);
    for (k = 0; k < emb_dim; k++) {
      double mean = 0.0;
      for (t = 0; t < n_tok; t++) mean += (double)emb[(size_t)t * (size_t)emb_dim + (size_t)k];
      mean /= (double)n_tok;
      for (j = 0; j < E; j++) {
        float pv = P ? P[(size_t)k * (size_t)E + (size_t)j] : (float)(mlsys__offload_pilot_gauss_next(&gen) * scale);
        m->acc[j] += (double)pv * mean;
      }
    }
  }
  for (j = 0; j < E; j++) x_e[j] = (float)m->acc[j];
  x_e[E] = (float)log1p((double)n_tok);
  x_e[E + 1] = (float)log1p((double)n_tok * (double)emb_dim * 4.0);
  for (j = 0; j < m->cfg.len_code; j++) {
    /* the residue n mod (j+2) as an angle, reduced exactly in integers first */
    double ang = 6.283185307179586 * (double)(n_tok % (j + 2)) / (double)(j + 2);
    x_e[E + 2 + j] = (float)(j % 2 ? sin(ang) : cos(ang));
  }
}

MLSYS_DEF int mlsys_offload_pilot_afm_dim(const mlsys_offload_pilot *m) { return m ? m->xa : 0; }

MLSYS_DEF void mlsys_offload_pilot_afm_features(const mlsys_offload_pilot *m, const mlsys_offload_sig *afm, int n_rows, float *x_a) {
  int r, i;
  if (!m || !x_a) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot AFM features: NULL model or output");
    return;
  }
  if (n_rows < 0 || (n_rows > 0 && !afm)) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot AFM features: bad AFM (%d rows, rows %s)", n_rows, afm ? "given" : "NULL");
    mlsys__offload_pilot_fill_nan(x_a, m->xa);
    return;
  }
  if (!m->cfg.afm_full) {
    double s[9];
    long nop = 0, ncf = 0;
    memset(s, 0, sizeof s);
    for (r = 0; r < n_rows; r++) {
      int nz = 0;
      for (i = 0; i < MLSYS_OFFLOAD_NIDIOM; i++) {
        nz |= afm[r].idiom[i] != 0;
        if (afm[r].idiom[i] > 0) s[i] += (double)afm[r].idiom[i];
      }
      for (i = 0; i < 3; i++) {
        nz |= afm[r].dim[i] != 0;
        if (afm[r].dim[i] > 0) s[6 + i] += (double)afm[r].dim[i];
      }
      if (nz) nop++;
      else ncf++;
    }
    for (i = 0; i < 9; i++) x_a[i] = (float)log1p(s[i]);
    x_a[9] = (float)log1p((double)nop);
    x_a[10] = (float)log1p((double)ncf);
    return;
  }
  for (r = 0; r < m->cfg.afm_rows_max; r++) {
    float *x = x_a + (size_t)r * 9u;
    if (r < n_rows) {
      for (i = 0; i < MLSYS_OFFLOAD_NIDIOM; i++) x[i] = afm[r].idiom[i] > 0 ? (float)afm[r].idiom[i] : 0.0f;
      for (i = 0; i < 3; i++) x[6 + i] = afm[r].dim[i] > 0 ? (float)log1p((double)afm[r].dim[i]) : 0.0f;
    } else {
      for (i = 0; i < 9; i++) x[i] = 0.0f;
    }
  }
}

/* ---- forward and backward ---- */

/* u = W x + b. Four partial sums: without -ffast-math the compiler may not reorder one sum, and the dependency chain
   of a single accumulator made this the whole cost of a forward pass. */
static void mlsys__offload_pilot_dense(const float *W, const float *b, const float *x, int nin, int nout, float *u) {
  int o, i;
  for (o = 0; o < nout; o++) {
    const float *w = W + (size_t)o * (size_t)nin;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (i = 0; i + 4 <= nin; i += 4) {
      s0 += w[i] * x[i];
      s1 += w[i + 1] * x[i + 1];
      s2 += w[i + 2] * x[i + 2];
      s3 += w[i + 3] * x[i + 3];
    }
    for (; i < nin; i++) s0 += w[i] * x[i];
    u[o] = b[o] + ((s0 + s1) + (s2 + s3));
  }
}

static void mlsys__offload_pilot_lrelu(const float *u, float *a, int n, float leaky) {
  int i;
  for (i = 0; i < n; i++) a[i] = u[i] > 0.0f ? u[i] : leaky * u[i];
}

/* Accumulate d/dW += go xᵀ and d/db += go; gx = Wᵀ go (when gx is given). */
static void mlsys__offload_pilot_dense_bwd(const float *W, const float *x, int nin, int nout, const float *go, float *GW, float *Gb,
                                           float *gx) {
  int o, i;
  if (gx)
    for (i = 0; i < nin; i++) gx[i] = 0.0f;
  for (o = 0; o < nout; o++) {
    const float *w = W + (size_t)o * (size_t)nin;
    float *gw = GW + (size_t)o * (size_t)nin, g = go[o];
    if (g == 0.0f) continue;
    Gb[o] += g;
    for (i = 0; i < nin; i++) gw[i] += g * x[i];
    if (gx)
      for (i = 0; i < nin; i++) gx[i] += w[i] * g;
  }
}

/* ga ⊙ LReLU'(u), in place (the kink at 0 takes the leaky side). */
static void mlsys__offload_pilot_lrelu_bwd(const float *u, float *g, int n, float leaky) {
  int i;
  for (i = 0; i < n; i++)
    if (!(u[i] > 0.0f)) g[i] *= leaky;
}

/* The forward pass of §3.3 into the model's scratch (m->y holds ŷ). t is 0..2. */
static void mlsys__offload_pilot_fwd(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int t) {
  const float *p = m->p;
  const mlsys__offload_pilot_layout *L = &m->L;
  int d = m->cfg.d, h = m->cfg.h, o = m->cfg.d_out;
  float a = m->cfg.leaky;
  mlsys__offload_pilot_dense(p + L->we, p + L->be, x_e, m->xe, d, m->uc);
  mlsys__offload_pilot_dense(p + L->wa, p + L->ba, x_a, m->xa, d, m->uc + d);
  mlsys__offload_pilot_lrelu(m->uc, m->c, 2 * d, a);
  mlsys__offload_pilot_dense(p + L->w1[t], p + L->b1[t], m->c, 2 * d, h, m->u1);
  mlsys__offload_pilot_lrelu(m->u1, m->a1, h, a);
  mlsys__offload_pilot_dense(p + L->w2[t], p + L->b2[t], m->a1, h, h, m->u2);
  mlsys__offload_pilot_lrelu(m->u2, m->a2, h, a);
  mlsys__offload_pilot_dense(p + L->w3[t], p + L->b3[t], m->a2, h, o, m->u3);
  mlsys__offload_pilot_lrelu(m->u3, m->z, o, a);
  mlsys__offload_pilot_dense(p + L->wo, p + L->bo, m->z, o, m->ny, m->y);
}

/* Loss of the sample whose forward pass is in scratch; with G, also accumulate scale · d loss / d params into G. */
static double mlsys__offload_pilot_bwd(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int t, const float *label,
                                       float *G, float scale) {
  const float *p = m->p;
  const mlsys__offload_pilot_layout *L = &m->L;
  int d = m->cfg.d, h = m->cfg.h, o = m->cfg.d_out, ny = m->ny, i;
  float a = m->cfg.leaky;
  double loss = 0.0;
  for (i = 0; i < ny; i++) {
    double w = i % 10 == 0 ? (double)m->cfg.w_rows : 1.0, e = (double)m->y[i] - log1p((double)label[i]);
    loss += w * e * e;
    m->gy[i] = (float)(scale * 2.0 * w * e / (double)ny);
  }
  loss /= (double)ny;
  if (!G) return loss;
  mlsys__offload_pilot_dense_bwd(p + L->wo, m->z, o, ny, m->gy, G + L->wo, G + L->bo, m->gz);
  mlsys__offload_pilot_lrelu_bwd(m->u3, m->gz, o, a);
  mlsys__offload_pilot_dense_bwd(p + L->w3[t], m->a2, h, o, m->gz, G + L->w3[t], G + L->b3[t], m->g2);
  mlsys__offload_pilot_lrelu_bwd(m->u2, m->g2, h, a);
  mlsys__offload_pilot_dense_bwd(p + L->w2[t], m->a1, h, h, m->g2, G + L->w2[t], G + L->b2[t], m->g1);
  mlsys__offload_pilot_lrelu_bwd(m->u1, m->g1, h, a);
  mlsys__offload_pilot_dense_bwd(p + L->w1[t], m->c, 2 * d, h, m->g1, G + L->w1[t], G + L->b1[t], m->gc);
  mlsys__offload_pilot_lrelu_bwd(m->uc, m->gc, 2 * d, a);
  mlsys__offload_pilot_dense_bwd(p + L->we, x_e, m->xe, d, m->gc, G + L->we, G + L->be, NULL);
  mlsys__offload_pilot_dense_bwd(p + L->wa, x_a, m->xa, d, m->gc + d, G + L->wa, G + L->ba, NULL);
  return loss;
}

MLSYS_DEF void mlsys_offload_pilot_forward(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, float *yhat) {
  if (!m || !yhat) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot forward: NULL model or output");
    return;
  }
  if (!x_e || !x_a || nn_type < 0 || nn_type > 2) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot forward: %s", !x_e || !x_a ? "NULL features" : "nn_type is not 0, 1 or 2");
    mlsys__offload_pilot_fill_nan(yhat, m->ny);
    return;
  }
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  memcpy(yhat, m->y, (size_t)m->ny * sizeof(float));
}

/* The rounding decode (no codebook). */
static void mlsys__offload_pilot_round(const mlsys_offload_pilot *m, const float *yhat, int32_t *pred) {
  int i;
  for (i = 0; i < m->ny; i++) {
    double v = expm1((double)yhat[i]);
    if (!(v > 0.0)) pred[i] = 0;   /* NaN too */
    else if (v >= (double)INT32_MAX) pred[i] = INT32_MAX;
    else pred[i] = (int32_t)floor(v + 0.5);
  }
}

MLSYS_DEF void mlsys_offload_pilot_decode(const mlsys_offload_pilot *m, const float *yhat, int32_t *pred) {
  int i;
  if (!m || !yhat || !pred) return;
  if (m->n_codes > 0) {
    int c, best = 0;
    double bd = INFINITY;
    for (c = 0; c < m->n_codes; c++) {
      const float *q = m->lcodes + (size_t)c * (size_t)m->ny;
      double dist = 0.0;
      for (i = 0; i < m->ny && dist < bd; i++) {
        double e = (double)yhat[i] - (double)q[i];
        dist += (i % 10 ? 1.0 : (double)m->cfg.w_rows) * e * e;
      }
      if (dist < bd) { bd = dist; best = c; }
    }
    memcpy(pred, m->codes + (size_t)best * (size_t)m->ny, (size_t)m->ny * sizeof *pred);
    return;
  }
  mlsys__offload_pilot_round(m, yhat, pred);
}

/* Install n codes (int32, already checked) as the codebook, dropping repeats; takes nothing on failure. */
static mlsys_status mlsys__offload_pilot_put_codes(mlsys_offload_pilot *m, const int32_t *codes, int n) {
  size_t ny = (size_t)m->ny, i;
  int32_t *q = NULL;
  float *lq = NULL;
  int *h = NULL;   /* open addressing: index + 1 of a kept code, 0 = empty */
  size_t hsz = 4;
  int k = 0, c;
  if (n > 0) {
    while (hsz < 2 * (size_t)n) hsz *= 2;
    q = (int32_t *)mlsys_alloc((size_t)n * ny, sizeof *q);
    lq = (float *)mlsys_alloc((size_t)n * ny, sizeof *lq);
    h = (int *)mlsys_calloc(hsz, sizeof *h);
    if (!q || !lq || !h) {
      mlsys_free(q); mlsys_free(lq); mlsys_free(h);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "pilot codebook: out of memory for %d codes", n);
    }
    for (c = 0; c < n; c++) {
      const int32_t *x = codes + (size_t)c * ny;
      uint64_t hv = 1469598103934665603ull;
      size_t slot;
      int dup = 0;
      for (i = 0; i < ny; i++) hv = (hv ^ (uint32_t)x[i]) * 1099511628211ull;
      for (slot = (size_t)hv & (hsz - 1); h[slot] && !dup; slot = (slot + 1) & (hsz - 1))
        dup = !memcmp(q + (size_t)(h[slot] - 1) * ny, x, ny * sizeof *x);
      if (dup) continue;
      h[slot] = k + 1;
      memcpy(q + (size_t)k * ny, x, ny * sizeof *x);
      for (i = 0; i < ny; i++) lq[(size_t)k * ny + i] = (float)log1p((double)x[i]);
      k++;
    }
    mlsys_free(h);
  }
  mlsys_free(m->codes);
  mlsys_free(m->lcodes);
  m->codes = q;
  m->lcodes = lq;
  m->n_codes = k;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_set_codebook(mlsys_offload_pilot *m, const float *labels, int n) {
  int32_t *tmp;
  size_t i, tot;
  mlsys_status st;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "pilot codebook: NULL model");
  if (n < 0 || n > MLSYS_OFFLOAD_PILOT_MAX_CODES || (n > 0 && !labels))
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot codebook: %d codes (%s)", n, n > 0 && !labels ? "NULL labels" : "must be 0..1048576");
  tot = (size_t)n * (size_t)m->ny;
  for (i = 0; i < tot; i++)
    if (!(labels[i] >= 0.0f && labels[i] <= 2147483520.0f && labels[i] == floorf(labels[i])))
      return mlsys_set_error(MLSYS_ERR_ARG, "pilot codebook: code %zu element %zu is %g, not a whole number in 0..INT32_MAX",
                             i / (size_t)m->ny, i % (size_t)m->ny, (double)labels[i]);
  if (n == 0) return mlsys__offload_pilot_put_codes(m, NULL, 0);
  if (!(tmp = (int32_t *)mlsys_alloc(tot, sizeof *tmp))) return mlsys_set_error(MLSYS_ERR_NOMEM, "pilot codebook: out of memory");
  for (i = 0; i < tot; i++) tmp[i] = (int32_t)labels[i];
  st = mlsys__offload_pilot_put_codes(m, tmp, n);
  mlsys_free(tmp);
  return st;
}

MLSYS_DEF int mlsys_offload_pilot_codebook_size(const mlsys_offload_pilot *m) { return m ? m->n_codes : 0; }

/* Argument checks shared by loss, grad and training; NULL on success, else what is wrong. */
static const char *mlsys__offload_pilot_bad_sample(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                   const float *label) {
  int i;
  if (!x_e || !x_a || !label) return "NULL features or label";
  if (nn_type < 0 || nn_type > 2) return "nn_type is not 0, 1 or 2";
  for (i = 0; i < m->ny; i++)
    if (!(label[i] >= 0.0f && label[i] <= FLT_MAX)) return "a label is negative or not finite";
  return NULL;
}

MLSYS_DEF float mlsys_offload_pilot_loss(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, const float *label) {
  const char *bad;
  if (!m) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot loss: NULL model");
    return NAN;
  }
  if ((bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type, label)) != NULL) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot loss: %s", bad);
    return NAN;
  }
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  return (float)mlsys__offload_pilot_bwd(m, x_e, x_a, nn_type, label, NULL, 1.0f);
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_grad(mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                const float *label, float *grad) {
  const char *bad;
  if (!m || !grad) return mlsys_set_error(MLSYS_ERR_ARG, "pilot grad: NULL model or gradient");
  if ((bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type, label)) != NULL)
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot grad: %s", bad);
  memset(grad, 0, m->L.n * sizeof(float));
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  mlsys__offload_pilot_bwd(m, x_e, x_a, nn_type, label, grad, 1.0f);
  return MLSYS_OK;
}

MLSYS_DEF float mlsys_offload_pilot_train_epoch(mlsys_offload_pilot *m, int n, const float *x_e, const float *x_a,
                                                const int *nn_type, const float *labels, int batch) {
  int *perm, i, b0;
  size_t j, np;
  double total = 0.0;
  float lr;
  if (!m) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot train: NULL model");
    return NAN;
  }
  if (n < 1 || batch < 1 || !x_e || !x_a || !nn_type || !labels) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot train: %s", n < 1 ? "no samples" : batch < 1 ? "batch < 1" : "NULL inputs");
    return NAN;
  }
  for (i = 0; i < n; i++) {
    const char *bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type[i], labels + (size_t)i * (size_t)m->ny);
    if (bad) {
      mlsys_set_error(MLSYS_ERR_ARG, "pilot train: sample %d: %s", i, bad);
      return NAN;
    }
  }
  perm = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!perm) return NAN;
  for (i = 0; i < n; i++) perm[i] = i;
  for (i = n - 1; i > 0; i--) {   /* Fisher-Yates */
    int k = (int)mlsys_rng_below(&m->rng, (uint64_t)i + 1u), tmp = perm[i];
    perm[i] = perm[k];
    perm[k] = tmp;
  }
  np = m->L.n;
  lr = m->cfg.lr;
  if (m->cfg.adam && !m->m1) {
    m->m1 = (float *)mlsys_calloc(np, sizeof(float));
    m->m2 = (float *)mlsys_calloc(np, sizeof(float));
    if (!m->m1 || !m->m2) {
      mlsys_free(m->m1); mlsys_free(m->m2);
      m->m1 = m->m2 = NULL;
      mlsys_free(perm);
      mlsys_set_error(MLSYS_ERR_NOMEM, "pilot train: out of memory for Adam's moments");
      return NAN;
    }
    m->adam_t = 0;
  }
  for (b0 = 0; b0 < n; b0 += batch) {
    int B = n - b0 < batch ? n - b0 : batch;
    memset(m->g, 0, np * sizeof(float));
    for (i = 0; i < B; i++) {
      int s = perm[b0 + i];
      const float *xe = x_e + (size_t)s * (size_t)m->xe, *xa = x_a + (size_t)s * (size_t)m->xa;
      mlsys__offload_pilot_fwd(m, xe, xa, nn_type[s]);
      total += mlsys__offload_pilot_bwd(m, xe, xa, nn_type[s], labels + (size_t)s * (size_t)m->ny, m->g, 1.0f / (float)B);
    }
    if (m->cfg.adam) {
      /* Adam as Kingma and Ba write it (ε outside the bias-corrected root) */
      double t = (double)++m->adam_t;
      float c1 = (float)(1.0 / (1.0 - pow(0.9, t))), c2 = (float)(1.0 / (1.0 - pow(0.999, t)));
      for (j = 0; j < np; j++) {
        float g = m->g[j];
        m->m1[j] = 0.9f * m->m1[j] + 0.1f * g;
        m->m2[j] = 0.999f * m->m2[j] + 0.001f * g * g;
        m->p[j] -= lr * (m->m1[j] * c1) / (sqrtf(m->m2[j] * c2) + 1e-8f);
      }
    } else {
      for (j = 0; j < np; j++) m->p[j] -= lr * m->g[j];
    }
  }
  mlsys_free(perm);
  return (float)(total / (double)n);
}

/* ---- model file ---- */

static void mlsys__offload_pilot_wr32(uint8_t *b, uint32_t v) {
  b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24);
}
static uint32_t mlsys__offload_pilot_rd32(const uint8_t *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static void mlsys__offload_pilot_wr64(uint8_t *b, uint64_t v) {
  mlsys__offload_pilot_wr32(b, (uint32_t)v);
  mlsys__offload_pilot_wr32(b + 4, (uint32_t)(v >> 32));
}
static uint64_t mlsys__offload_pilot_rd64(const uint8_t *b) {
  return (uint64_t)mlsys__offload_pilot_rd32(b) | (uint64_t)mlsys__offload_pilot_rd32(b + 4) << 32;
}
static uint32_t mlsys__offload_pilot_fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float mlsys__offload_pilot_bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_save(const mlsys_offload_pilot *m, const char *path) {
  const mlsys_offload_pilot_cfg *c;
  size_t len, i;
  uint8_t *b;
  char *tmp;
  FILE *f;
  int ok, v2;
  size_t hdr, nc;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "pilot save: NULL model or path");
  c = &m->cfg;
  v2 = c->len_code || c->adam || m->n_codes;
  hdr = v2 ? MLSYS__OFFLOAD_PILOT_HDR2 : MLSYS__OFFLOAD_PILOT_HDR;
  len = hdr + m->L.n * 4 + (size_t)m->n_codes * (size_t)m->ny * 4 + 4;
  b = (uint8_t *)mlsys_alloc(len, 1);
  tmp = (char *)mlsys_alloc(strlen(path) + 5, 1);
  if (!b || !tmp) {
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_NOMEM;
  }
  memcpy(b, MLSYS__OFFLOAD_PILOT_MAGIC, 8);
  mlsys__offload_pilot_wr32(b + 8, v2 ? 2u : 1u);
  mlsys__offload_pilot_wr32(b + 12, MLSYS_OFFLOAD_CATALOG_VERSION);
  mlsys__offload_pilot_wr32(b + 16, (uint32_t)c->e_proj);
  mlsys__offload_pilot_wr32(b + 20, (uint32_t)c->d);
  mlsys__offload_pilot_wr32(b + 24, (uint32_t)c->h);
  mlsys__offload_pilot_wr32(b + 28, (uint32_t)c->d_out);
  mlsys__offload_pilot_wr32(b + 32, (uint32_t)c->k_max);
  mlsys__offload_pilot_wr32(b + 36, (uint32_t)c->afm_full);
  mlsys__offload_pilot_wr32(b + 40, (uint32_t)c->afm_rows_max);
  mlsys__offload_pilot_wr32(b + 44, mlsys__offload_pilot_fbits(c->leaky));
  mlsys__offload_pilot_wr32(b + 48, mlsys__offload_pilot_fbits(c->lr));
  mlsys__offload_pilot_wr32(b + 52, mlsys__offload_pilot_fbits(c->w_rows));
  mlsys__offload_pilot_wr64(b + 56, c->seed);
  mlsys__offload_pilot_wr64(b + 64, (uint64_t)m->L.n);
  if (v2) {
    mlsys__offload_pilot_wr32(b + 72, (uint32_t)c->len_code);
    mlsys__offload_pilot_wr32(b + 76, (uint32_t)c->adam);
    mlsys__offload_pilot_wr32(b + 80, (uint32_t)m->n_codes);
  }
  for (i = 0; i < m->L.n; i++) mlsys__offload_pilot_wr32(b + hdr + 4 * i, mlsys__offload_pilot_fbits(m->p[i]));
  nc = (size_t)m->n_codes * (size_t)m->ny;
  for (i = 0; i < nc; i++) mlsys__offload_pilot_wr32(b + hdr + 4 * m->L.n + 4 * i, (uint32_t)m->codes[i]);
  mlsys__offload_pilot_wr32(b + len - 4, mlsys_crc32c(0, b, len - 4));
  strcpy(tmp, path);
  strcat(tmp, ".tmp");
  f = fopen(tmp, "wb");
  if (!f) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  ok = fwrite(b, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write the pilot model: %s", path, strerror(errno));
    remove(tmp);
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  mlsys_free(b);
  mlsys_free(tmp);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_load_mem(const void *buf, size_t len, const char *source, mlsys_offload_pilot **out) {
  const uint8_t *b = (const uint8_t *)buf;
  const char *name = source ? source : "pilot model";
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  mlsys_status s;
  uint64_t np, want_np, ncodes = 0, ny;
  uint32_t v, crc, want, ver;
  size_t need, i, hdr = MLSYS__OFFLOAD_PILOT_HDR;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: load without an output", name);
  *out = NULL;
  if (!b && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: NULL buffer", name);
  if (len < 8 || memcmp(b, MLSYS__OFFLOAD_PILOT_MAGIC, 8) != 0) {
    if (len < 8 && (len == 0 || memcmp(b, MLSYS__OFFLOAD_PILOT_MAGIC, len) == 0))
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__OFFLOAD_PILOT_HDR);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: bad magic (not an mlsys pilot model file)", name);
  }
  if (len < MLSYS__OFFLOAD_PILOT_HDR)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__OFFLOAD_PILOT_HDR);
  if ((ver = mlsys__offload_pilot_rd32(b + 8)) != 1u && ver != 2u)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: unsupported version %u (this build reads versions 1 and %u)", name, ver,
                           MLSYS_OFFLOAD_PILOT_VERSION);
  if (ver == 2u) {
    hdr = MLSYS__OFFLOAD_PILOT_HDR2;
    if (len < hdr) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the version 2 header alone is %zu", name, len, hdr);
    ncodes = mlsys__offload_pilot_rd32(b + 80);
    if (ncodes > MLSYS_OFFLOAD_PILOT_MAX_CODES)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %llu codes, above the limit of %d", name, (unsigned long long)ncodes,
                             MLSYS_OFFLOAD_PILOT_MAX_CODES);
  }
  np = mlsys__offload_pilot_rd64(b + 64);
  if (np > MLSYS_OFFLOAD_PILOT_MAX_PARAMS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: %llu parameters, above the limit of %u", name, (unsigned long long)np,
                           (unsigned)MLSYS_OFFLOAD_PILOT_MAX_PARAMS);
  /* k_max is checked after the CRC; bounded here so the size cannot overflow */
  ny = (uint64_t)(mlsys__offload_pilot_rd32(b + 32) & 0x7FFFFFFFu) * 10u;
  if (ncodes && ny > (uint64_t)MLSYS_OFFLOAD_PILOT_MAX_DIM * 10u)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: k_max = %d is outside 1..%d", name, (int32_t)mlsys__offload_pilot_rd32(b + 32),
                           MLSYS_OFFLOAD_PILOT_MAX_DIM);
  need = hdr + (size_t)np * 4 + (size_t)(ncodes * ny) * 4 + 4;
  if (len < need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, expected %zu", name, len, need);
  if (len > need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu trailing bytes after the CRC", name, len - need);
  crc = mlsys__offload_pilot_rd32(b + need - 4);
  want = mlsys_crc32c(0, b, need - 4);
  if (crc != want)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch: stored 0x%08x, computed 0x%08x (the file is damaged)", name, crc, want);
  /* the CRC holds: what follows catches files from a broken writer */
  if ((v = mlsys__offload_pilot_rd32(b + 12)) != MLSYS_OFFLOAD_CATALOG_VERSION)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: trained with idiom catalogue version %u, this build has version %d (retrain)",
                           name, v, MLSYS_OFFLOAD_CATALOG_VERSION);
  memset(&c, 0, sizeof c);
  c.e_proj = (int32_t)mlsys__offload_pilot_rd32(b + 16);
  c.d = (int32_t)mlsys__offload_pilot_rd32(b + 20);
  c.h = (int32_t)mlsys__offload_pilot_rd32(b + 24);
  c.d_out = (int32_t)mlsys__offload_pilot_rd32(b + 28);
  c.k_max = (int32_t)mlsys__offload_pilot_rd32(b + 32);
  c.afm_full = (int32_t)mlsys__offload_pilot_rd32(b + 36);
  c.afm_rows_max = (int32_t)mlsys__offload_pilot_rd32(b + 40);
  c.leaky = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 44));
  c.lr = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 48));
  c.w_rows = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 52));
  c.seed = mlsys__offload_pilot_rd64(b + 56);
  if (ver == 2u) {
    c.len_code = (int32_t)mlsys__offload_pilot_rd32(b + 72);
    c.adam = (int32_t)mlsys__offload_pilot_rd32(b + 76);
  }
  if ((s = mlsys__offload_pilot_resolve(&c, &c, 1, name)) != MLSYS_OK) return s;
  want_np = mlsys__offload_pilot_layout_of(&c, NULL);
  if (want_np != np)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: the file holds %llu parameters, its config needs %llu", name, (unsigned long long)np,
                           (unsigned long long)want_np);
  for (i = 0; i < (size_t)np; i++) {
    float f = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + hdr + 4 * i));
    if (!isfinite(f)) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: weight %zu is not finite", name, i);
  }
  for (i = 0; i < (size_t)(ncodes * ny); i++)
    if ((int32_t)mlsys__offload_pilot_rd32(b + hdr + 4 * (size_t)np + 4 * i) < 0)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: code %zu element %zu is negative", name, i / (size_t)ny, i % (size_t)ny);
  if ((s = mlsys__offload_pilot_alloc(&c, name, &m)) != MLSYS_OK) return s;
  for (i = 0; i < (size_t)np; i++) m->p[i] = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + hdr + 4 * i));
  if (ncodes) {
    int32_t *q = (int32_t *)mlsys_alloc((size_t)(ncodes * ny), sizeof *q);
    if (!q) { mlsys_offload_pilot_free(m); return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory for the codebook", name); }
    for (i = 0; i < (size_t)(ncodes * ny); i++) q[i] = (int32_t)mlsys__offload_pilot_rd32(b + hdr + 4 * (size_t)np + 4 * i);
    s = mlsys__offload_pilot_put_codes(m, q, (int)ncodes);
    mlsys_free(q);
    if (s) { mlsys_offload_pilot_free(m); return s; }
  }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_load(const char *path, mlsys_offload_pilot **out) {
  char *data;
  size_t len;
  mlsys_status s;
  if (out) *out = NULL;
  if (!path) return mlsys_set_error(MLSYS_ERR_ARG, "pilot load: path is NULL");
  if ((s = mlsys_read_file(path, &data, &len)) != MLSYS_OK) return s;
  s = mlsys_offload_pilot_load_mem(data, len, path, out);
  mlsys_free(data);
  return s;
}

/* ---- mis-prediction cache: open addressing, linear probing, load ≤ 1/2 ---- */

struct mlsys_offload_mcache {
  int w;                          /* k_max·10 */
  size_t cap, n;                  /* cap: a power of two */
  uint8_t *used;
  int32_t *key, *val;             /* [cap][w] each */
};

static uint64_t mlsys__offload_mcache_hash(const int32_t *k, int w) {
  uint64_t h = 0x243F6A8885A308D3ull;
  int i;
  for (i = 0; i < w; i++) {
    h ^= (uint64_t)(uint32_t)k[i];
    h *= 0x100000001B3ull;
    h ^= h >> 29;
  }
  h ^= h >> 33;   /* splitmix64's finaliser: spread every input bit over the low bits the mask keeps */
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t mlsys__offload_mcache_slot(const mlsys_offload_mcache *c, const int32_t *k) {
  size_t mask = c->cap - 1, i = (size_t)mlsys__offload_mcache_hash(k, c->w) & mask, bytes = (size_t)c->w * sizeof(int32_t);
  while (c->used[i] && memcmp(c->key + i * (size_t)c->w, k, bytes) != 0) i = (i + 1) & mask;
  return i;
}

static mlsys_status mlsys__offload_mcache_alloc(int w, size_t cap, mlsys_offload_mcache *c) {
  c->w = w;
  c->cap = cap;
  c->n = 0;
  c->used = (uint8_t *)mlsys_calloc(cap, 1);
  c->key = (int32_t *)mlsys_alloc(cap, (size_t)w * sizeof(int32_t));
  c->val = (int32_t *)mlsys_alloc(cap, (size_t)w * sizeof(int32_t));
  if (!c->used || !c->key || !c->val) {
    mlsys_free(c->used);
    mlsys_free(c->key);
    mlsys_free(c->val);
    return MLSYS_ERR_NOMEM;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_mcache_create(int k_max, mlsys_offload_mcache **out) {
  mlsys_offload_mcache *c;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache: out is NULL");
  *out = NULL;
  if (k_max < 1 || k_max > MLSYS_OFFLOAD_PILOT_MAX_DIM)
    return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache: k_max = %d is outside 1..%d", k_max, MLSYS_OFFLOAD_PILOT_MAX_DIM);
  c = (mlsys_offload_mcache *)mlsys_calloc(1, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  if (mlsys__offload_mcache_alloc(k_max * 10, 16, c) != MLSYS_OK) {
    mlsys_free(c);
    return MLSYS_ERR_NOMEM;
  }
  *out = c;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_mcache_free(mlsys_offload_mcache *c) {
  if (!c) return;
  mlsys_free(c->used);
  mlsys_free(c->key);
  mlsys_free(c->val);
  mlsys_free(c);
}

MLSYS_DEF mlsys_status mlsys_offload_mcache_put(mlsys_offload_mcache *c, const int32_t *pred, const int32_t *truth) {
  size_t i, w, bytes;
  if (!c || !pred || !truth) return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache put: NULL cache, key or value");
  w = (size_t)c->w;
  bytes = w * sizeof(int32_t);
  if ((c->n + 1) * 2 > c->cap) {
    mlsys_offload_mcache g;
    size_t j;
    if (c->cap > SIZE_MAX / 4 || mlsys__offload_mcache_alloc(c->w, c->cap * 2, &g) != MLSYS_OK) return MLSYS_ERR_NOMEM;
    for (j = 0; j < c->cap; j++)
      if (c->used[j]) {
        size_t k = mlsys__offload_mcache_slot(&g, c->key + j * w);
        g.used[k] = 1;
        memcpy(g.key + k * w, c->key + j * w, bytes);
        memcpy(g.val + k * w, c->val + j * w, bytes);
      }
    g.n = c->n;
    mlsys_free(c->used);
    mlsys_free(c->key);
    mlsys_free(c->val);
    *c = g;
  }
  i = mlsys__offload_mcache_slot(c, pred);
  if (!c->used[i]) {
    c->used[i] = 1;
    memcpy(c->key + i * w, pred, bytes);
    c->n++;
  }
  memcpy(c->val + i * w, truth, bytes);
  return MLSYS_OK;
}

MLSYS_DEF const int32_t *mlsys_offload_mcache_get(const mlsys_offload_mcache *c, const int32_t *pred) {
  size_t i;
  if (!c || !pred) return NULL;
  i = mlsys__offload_mcache_slot(c, pred);
  return c->used[i] ? c->val + i * (size_t)c->w : NULL;
}

MLSYS_DEF size_t mlsys_offload_mcache_size(const mlsys_offload_mcache *c) { return c ? c->n : 0; }

static mlsys_status mlsys__offload_simulate_more(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw, int policy,
                                                 mlsys_offload_simres *r) {
  if (policy == MLSYS_OFFLOAD_POLICY_DTR) return mlsys_offload_sim_dtr(tr, hw, NULL, r);
  if (policy == MLSYS_OFFLOAD_POLICY_UVM) return mlsys_offload_sim_uvm(tr, hw, NULL, r);
  if (policy == MLSYS_OFFLOAD_POLICY_ZERO) return mlsys_offload_sim_zero(tr, hw, NULL, r);
  if (policy < 0 || policy >= MLSYS_OFFLOAD_POLICY_N_) return mlsys_set_error(MLSYS_ERR_ARG, "unknown policy %d", policy);
  return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "policy %s is not simulated yet", mlsys_offload_policy_name(policy));
}

/* ================================================================================================================
   Mapper (spec §3.5)
   ================================================================================================================ */
MLSYS_DEF void mlsys_offload_resolved_free(mlsys_offload_resolved *r) {
  if (!r) return;
  mlsys_free(r->row);
  mlsys_free(r->block_start);
  mlsys_free(r->decision);
  memset(r, 0, sizeof *r);
}

/* Rows of a node's subtree in the AFM (a shared node counts at each occurrence, as in mlsys_offload_afm). */
static int64_t mlsys__offload_map_nrows(const mlsys_offload_prog *p, int v, int depth) {
  const mlsys_offload_pnode *nd = &p->node[v];
  int64_t n = nd->kind == MLSYS_OFFLOAD_PN_SEQ ? 0 : 1;
  int i;
  if (depth > p->n_node) return 0;
  for (i = 0; i < nd->n_child; i++) n += mlsys__offload_map_nrows(p, p->child[nd->first_child + i], depth + 1);
  return n;
}

typedef struct {
  int *row;
  int n, cap, di;
  const int *dec;
  int n_dec;
} mlsys__offload_pathb;

static mlsys_status mlsys__offload_path_push(mlsys__offload_pathb *b, int r) {
  if (b->n == b->cap) {
    int c = b->cap ? 2 * b->cap : 64;
    int *q;
    if (c > (1 << 28)) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "resolved path longer than %d rows", 1 << 28);
    if (!(q = (int *)mlsys_realloc_array(b->row, (size_t)c, sizeof *q))) return MLSYS_ERR_NOMEM;
    b->row = q;
    b->cap = c;
  }
  b->row[b->n++] = r;
  return MLSYS_OK;
}

static mlsys_status mlsys__offload_path_rec(const mlsys_offload_prog *p, int v, int r, int depth, mlsys__offload_pathb *b) {
  const mlsys_offload_pnode *nd = &p->node[v];
  mlsys_status st;
  int i, d;
  if (depth > p->n_node) return mlsys_set_error(MLSYS_ERR_CYCLE, "program: node %d is its own descendant", v);
  if (nd->kind == MLSYS_OFFLOAD_PN_OP) return mlsys__offload_path_push(b, r);
  if (nd->kind == MLSYS_OFFLOAD_PN_SEQ) {
    for (i = 0; i < nd->n_child; i++) {
      int c = p->child[nd->first_child + i];
      if ((st = mlsys__offload_path_rec(p, c, r, depth + 1, b))) return st;
      r += (int)mlsys__offload_map_nrows(p, c, 0);
    }
    return MLSYS_OK;
  }
  if ((st = mlsys__offload_path_push(b, r))) return st;
  if (b->di >= b->n_dec)
    return mlsys_set_error(MLSYS_ERR_ARG, "decisions: only %d given, the path needs more (at AFM row %d)", b->n_dec, r);
  d = b->dec[b->di++];
  if (nd->kind == MLSYS_OFFLOAD_PN_BRANCH) {
    int q = r + 1;
    if (d < 0 || d >= nd->n_child)
      return mlsys_set_error(MLSYS_ERR_ARG, "decision %d: branch at AFM row %d has %d alternatives, not alternative %d",
                             b->di - 1, r, nd->n_child, d);
    for (i = 0; i < d; i++) q += (int)mlsys__offload_map_nrows(p, p->child[nd->first_child + i], 0);
    return mlsys__offload_path_rec(p, p->child[nd->first_child + d], q, depth + 1, b);
  }
  if (d < nd->loop_min || (nd->loop_max >= 0 && d > nd->loop_max))
    return mlsys_set_error(MLSYS_ERR_ARG, "decision %d: loop at AFM row %d runs %d..%d times, not %d", b->di - 1, r,
                           nd->loop_min, nd->loop_max, d);
  for (i = 0; i < d; i++)
    if ((st = mlsys__offload_path_rec(p, p->child[nd->first_child], r + 1, depth + 1, b))) return st;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_path(const mlsys_offload_prog *p, const int *decision, int n_dec, mlsys_offload_resolved *out) {
  mlsys__offload_pathb b;
  mlsys_status st;
  int n_afm = 0;
  memset(out, 0, sizeof *out);
  if (!p || n_dec < 0 || (n_dec > 0 && !decision)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_offload_path: bad arguments");
  if ((st = mlsys_offload_afm(p, NULL, 0, &n_afm))) return st;
  memset(&b, 0, sizeof b);
  b.dec = decision;
  b.n_dec = n_dec;
  st = mlsys__offload_path_rec(p, p->root, 0, 0, &b);
  if (!st && b.di != n_dec) st = mlsys_set_error(MLSYS_ERR_ARG, "decisions: %d given, the path uses %d", n_dec, b.di);
  if (!st) {
    out->block_start = (int *)mlsys_alloc(2, sizeof(int));
    out->decision = (int *)mlsys_alloc((size_t)(n_dec > 0 ? n_dec : 1), sizeof(int));
    if (!out->block_start || !out->decision) st = MLSYS_ERR_NOMEM;
  }
  if (st) {
    mlsys_free(b.row);
    mlsys_offload_resolved_free(out);
    return st;
  }
  out->row = b.row;
  out->n_rows = b.n;
  out->k = 1;
  out->block_start[0] = 0;
  out->block_start[1] = b.n;
  if (n_dec) memcpy(out->decision, decision, (size_t)n_dec * sizeof(int));
  out->n_dec = n_dec;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_path_label(const mlsys_offload_prog *p, const mlsys_offload_resolved *r, int k_max, int32_t *label) {
  int b, i, e;
  int64_t acc[10];
  mlsys_offload_sig *rows;
  int n_afm = 0;
  if (k_max < 1 || !label) return;
  memset(label, 0, (size_t)k_max * 10 * sizeof *label);
  if (!p || !r || mlsys_offload_afm(p, NULL, 0, &n_afm) || n_afm <= 0) return;
  if (!(rows = (mlsys_offload_sig *)mlsys_alloc((size_t)n_afm, sizeof *rows))) return;
  if (mlsys_offload_afm(p, rows, n_afm, &n_afm)) { mlsys_free(rows); return; }
  memset(acc, 0, sizeof acc);
  for (b = 0; b < r->k; b++) {
    int kk = b < k_max ? b : k_max - 1;
    if (b <= k_max - 1) memset(acc, 0, sizeof acc);
    for (i = r->block_start[b]; i < r->block_start[b + 1]; i++) {
      const mlsys_offload_sig *s = &rows[r->row[i]];
      acc[0]++;
      for (e = 0; e < 6; e++) acc[1 + e] += s->idiom[e];
      for (e = 0; e < 3; e++) acc[7 + e] += s->dim[e];
    }
    for (e = 0; e < 10; e++) label[kk * 10 + e] = (int32_t)(acc[e] > INT32_MAX ? INT32_MAX : acc[e] < INT32_MIN ? INT32_MIN : acc[e]);
  }
  mlsys_free(rows);
}

/* The program as a control-flow graph, so that a search state is (pc, loop counters, block, sums). */
enum { MLSYS__OM_EMIT, MLSYS__OM_BR, MLSYS__OM_JMP, MLSYS__OM_PUSH, MLSYS__OM_HEAD, MLSYS__OM_INC };
typedef struct { int op, a, b, row, lmin, lmax; } mlsys__offload_mins;

typedef struct {
  mlsys__offload_mins *ins;
  int n_ins, cap_ins;
  int *tgt;
  int n_tgt, cap_tgt;
  int n_row, depth, max_depth;
  const mlsys_offload_prog *p;
  const mlsys_offload_sig *afm;
  /* search */
  int mode, K, fs, ks;                       /* mode 0 exact, 1 fallback; frame and key strides */
  const int64_t *P;
  int64_t Q[10], budget;
  int64_t *fr;
  int n_fr, cap_fr;
  int64_t *pool;
  int n_pool, cap_pool;
  int *tab;
  int cap_tab;
  long states, max_states;
  int have_best;
  int64_t best0, best1;
  int *best_dec;
  int n_best_dec, cap_best_dec;
} mlsys__offload_mapper;

static int mlsys__offload_map_ins(mlsys__offload_mapper *m, int op, int a, int b, int row) {
  if (m->n_ins == m->cap_ins) {
    int c = m->cap_ins ? 2 * m->cap_ins : 64;
    mlsys__offload_mins *q = (mlsys__offload_mins *)mlsys_realloc_array(m->ins, (size_t)c, sizeof *q);
    if (!q) return -1;
    m->ins = q;
    m->cap_ins = c;
  }
  m->ins[m->n_ins].op = op;
  m->ins[m->n_ins].a = a;
  m->ins[m->n_ins].b = b;
  m->ins[m->n_ins].row = row;
  m->ins[m->n_ins].lmin = m->ins[m->n_ins].lmax = 0;
  return m->n_ins++;
}

static mlsys_status mlsys__offload_map_flat(mlsys__offload_mapper *m, int v, int depth) {
  const mlsys_offload_prog *p = m->p;
  const mlsys_offload_pnode *nd = &p->node[v];
  mlsys_status st;
  int i;
  if (depth > p->n_node) return mlsys_set_error(MLSYS_ERR_CYCLE, "program: node %d is its own descendant", v);
  if (nd->kind == MLSYS_OFFLOAD_PN_SEQ) {
    for (i = 0; i < nd->n_child; i++)
      if ((st = mlsys__offload_map_flat(m, p->child[nd->first_child + i], depth + 1))) return st;
    return MLSYS_OK;
  }
  if (mlsys__offload_map_ins(m, MLSYS__OM_EMIT, 0, 0, m->n_row++) < 0) return MLSYS_ERR_NOMEM;
  if (nd->kind == MLSYS_OFFLOAD_PN_BRANCH) {
    int br = mlsys__offload_map_ins(m, MLSYS__OM_BR, m->n_tgt, nd->n_child, -1), t0 = m->n_tgt;
    int *jmps;
    if (br < 0) return MLSYS_ERR_NOMEM;
    if (m->n_tgt + nd->n_child > m->cap_tgt) {
      int c = m->cap_tgt ? m->cap_tgt : 16;
      int *q;
      while (c < m->n_tgt + nd->n_child) c *= 2;
      if (!(q = (int *)mlsys_realloc_array(m->tgt, (size_t)c, sizeof *q))) return MLSYS_ERR_NOMEM;
      m->tgt = q;
      m->cap_tgt = c;
    }
    m->n_tgt += nd->n_child;
    if (!(jmps = (int *)mlsys_alloc((size_t)nd->n_child, sizeof *jmps))) return MLSYS_ERR_NOMEM;
    for (i = 0; i < nd->n_child; i++) {
      m->tgt[t0 + i] = m->n_ins;
      if ((st = mlsys__offload_map_flat(m, p->child[nd->first_child + i], depth + 1)) ||
          (jmps[i] = mlsys__offload_map_ins(m, MLSYS__OM_JMP, 0, 0, -1)) < 0) {
        mlsys_free(jmps);
        return st ? st : MLSYS_ERR_NOMEM;
      }
    }
    for (i = 0; i < nd->n_child; i++) m->ins[jmps[i]].a = m->n_ins;
    mlsys_free(jmps);
    return MLSYS_OK;
  }
  if (nd->kind == MLSYS_OFFLOAD_PN_LOOP) {
    int head, r0, inc;
    if (mlsys__offload_map_ins(m, MLSYS__OM_PUSH, 0, 0, -1) < 0 || (head = mlsys__offload_map_ins(m, MLSYS__OM_HEAD, 0, 0, -1)) < 0)
      return MLSYS_ERR_NOMEM;
    r0 = m->n_row;
    if (++m->depth > m->max_depth) m->max_depth = m->depth;
    if ((st = mlsys__offload_map_flat(m, p->child[nd->first_child], depth + 1))) return st;
    m->depth--;
    if ((inc = mlsys__offload_map_ins(m, MLSYS__OM_INC, head, 0, -1)) < 0) return MLSYS_ERR_NOMEM;
    m->ins[head].b = inc + 1;
    m->ins[head].lmin = nd->loop_min;
    /* a body without rows changes nothing by running more often: it runs exactly loop_min times */
    m->ins[head].lmax = m->n_row == r0 ? nd->loop_min : nd->loop_max;
    return MLSYS_OK;
  }
  return MLSYS_OK;
}

/* frame layout: pc, k, sp, choice, entered, acc[10], cnt[D], head[D] */
#define MLSYS__OM_F(m, i) ((m)->fr + (size_t)(i) * (size_t)(m)->fs)

static uint64_t mlsys__offload_map_hash(const int64_t *k, int n) {
  uint64_t h = 1469598103934665603ull;
  int i;
  for (i = 0; i < n; i++) {
    h ^= (uint64_t)k[i];
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

/* 1 if the state was seen before, 0 if new (inserted), -1 out of memory */
static int mlsys__offload_map_seen(mlsys__offload_mapper *m, const int64_t *f) {
  int64_t key[64 + 12];
  int D = m->ks - 12, sp = (int)f[2], i;
  uint64_t h, mask;
  key[0] = f[0];
  key[1] = f[1];
  memcpy(key + 2, f + 5, 10 * sizeof *key);
  for (i = 0; i < D; i++) {
    int64_t c = -1;
    if (i < sp) {
      const mlsys__offload_mins *hd = &m->ins[f[15 + D + i]];
      c = f[15 + i];
      if (hd->lmax < 0 && c > hd->lmin) c = hd->lmin;
    }
    key[12 + i] = c;
  }
  if (2 * (m->n_pool + 1) > m->cap_tab) {
    int c = m->cap_tab ? 2 * m->cap_tab : 1024, j;
    int *t = (int *)mlsys_alloc((size_t)c, sizeof *t);
    if (!t) return -1;
    for (j = 0; j < c; j++) t[j] = -1;
    for (j = 0; j < m->n_pool; j++) {
      uint64_t x = mlsys__offload_map_hash(m->pool + (size_t)j * (size_t)m->ks, m->ks) & (uint64_t)(c - 1);
      while (t[x] >= 0) x = (x + 1) & (uint64_t)(c - 1);
      t[x] = j;
    }
    mlsys_free(m->tab);
    m->tab = t;
    m->cap_tab = c;
  }
  mask = (uint64_t)(m->cap_tab - 1);
  for (h = mlsys__offload_map_hash(key, m->ks) & mask; m->tab[h] >= 0; h = (h + 1) & mask)
    if (!memcmp(m->pool + (size_t)m->tab[h] * (size_t)m->ks, key, (size_t)m->ks * sizeof *key)) return 1;
  if (m->n_pool == m->cap_pool) {
    int c = m->cap_pool ? 2 * m->cap_pool : 1024;
    int64_t *q = (int64_t *)mlsys_realloc_array(m->pool, (size_t)c * (size_t)m->ks, sizeof *q);
    if (!q) return -1;
    m->pool = q;
    m->cap_pool = c;
  }
  memcpy(m->pool + (size_t)m->n_pool * (size_t)m->ks, key, (size_t)m->ks * sizeof *key);
  m->tab[h] = m->n_pool++;
  return 0;
}

/* Decisions of the path on the frame stack 0..top (each frame's choice led to the next). */
static mlsys_status mlsys__offload_map_decisions(mlsys__offload_mapper *m, int top) {
  int i, D = m->ks - 12, n = 0, ns = 0;
  int *slot = NULL;
  if (top + 1 > m->cap_best_dec) {
    int *q = (int *)mlsys_realloc_array(m->best_dec, (size_t)top + 1, sizeof *q);
    if (!q) return MLSYS_ERR_NOMEM;
    m->best_dec = q;
    m->cap_best_dec = top + 1;
  }
  if (D > 0 && !(slot = (int *)mlsys_alloc((size_t)D, sizeof *slot))) return MLSYS_ERR_NOMEM;
  for (i = 0; i < top; i++) {
    const int64_t *f = MLSYS__OM_F(m, i);
    int pc = (int)f[0], ch = (int)f[3];
    const mlsys__offload_mins *in;
    if (ch < 1 || pc >= m->n_ins) continue;   /* choice 0 closes a block */
    in = &m->ins[pc];
    if (in->op == MLSYS__OM_PUSH) { slot[ns++] = n; m->best_dec[n++] = 0; }
    else if (in->op == MLSYS__OM_BR) m->best_dec[n++] = ch - 1;
    else if (in->op == MLSYS__OM_HEAD && ch == 2) m->best_dec[slot[--ns]] = (int)f[15 + f[2] - 1];
  }
  mlsys_free(slot);
  m->n_best_dec = n;
  return MLSYS_OK;
}

/* Returns 1 when an exact path was found (decisions in best_dec), 0 when the search ended, -1 out of memory. */
static int mlsys__offload_map_search(mlsys__offload_mapper *m) {
  int D = m->ks - 12, top = 0, e;
  m->n_pool = 0;
  if (m->tab) { int j; for (j = 0; j < m->cap_tab; j++) m->tab[j] = -1; }
  memset(m->fr, 0, (size_t)m->fs * sizeof *m->fr);
  m->fr[3] = -1;
  while (top >= 0) {
    int64_t *f = MLSYS__OM_F(m, top), *g;
    int pc = (int)f[0], k = (int)f[1], c, ok = 0, nsucc = 0;
    const mlsys__offload_mins *in = pc < m->n_ins ? &m->ins[pc] : NULL;
    const int64_t *Pk = m->P + (size_t)k * 10;
    int closable = 0;
    if (m->mode == 0) {
      closable = !memcmp(f + 5, Pk, 10 * sizeof *Pk);
      if (closable && k == m->K - 1 && !in) {
        return mlsys__offload_map_decisions(m, top) ? -1 : 1;
      }
      closable = closable && k < m->K - 1;
    }
    if (!f[4]) {
      int s;
      f[4] = 1;
      if (++m->states > m->max_states) return 0;
      if (m->mode == 1) {
        if (f[5] > m->budget) { top--; continue; }
        if (!in) {
          int64_t d0 = f[5] > m->Q[0] ? f[5] - m->Q[0] : m->Q[0] - f[5], d1 = 0;
          for (e = 1; e < 10; e++) d1 += f[5 + e] > m->Q[e] ? f[5 + e] - m->Q[e] : m->Q[e] - f[5 + e];
          if (!m->have_best || d0 < m->best0 || (d0 == m->best0 && d1 < m->best1)) {
            if (mlsys__offload_map_decisions(m, top)) return -1;
            m->have_best = 1;
            m->best0 = d0;
            m->best1 = d1;
          }
          top--;
          continue;
        }
      } else {
        for (e = 0; e < 10; e++) if (f[5 + e] > Pk[e]) break;
        if (e < 10) { top--; continue; }
      }
      if ((s = mlsys__offload_map_seen(m, f)) < 0) return -1;
      if (s) { top--; continue; }
    }
    if (in) nsucc = in->op == MLSYS__OM_BR ? in->b : in->op == MLSYS__OM_HEAD ? 2 : 1;
    for (c = (int)f[3] + 1; c <= nsucc; c++) {
      if (c == 0) { if (closable) { ok = 1; break; } continue; }
      if (in->op == MLSYS__OM_HEAD) {
        int64_t cnt = f[15 + f[2] - 1];
        if (c == 1 && (in->lmax < 0 || cnt < in->lmax)) { ok = 1; break; }
        if (c == 2 && cnt >= in->lmin) { ok = 1; break; }
        continue;
      }
      ok = 1;
      break;
    }
    if (!ok) { top--; continue; }
    f[3] = c;
    if (top + 2 > m->cap_fr) {
      int cc = 2 * m->cap_fr;
      int64_t *q = (int64_t *)mlsys_realloc_array(m->fr, (size_t)cc * (size_t)m->fs, sizeof *q);
      if (!q) return -1;
      m->fr = q;
      m->cap_fr = cc;
      f = MLSYS__OM_F(m, top);
    }
    g = MLSYS__OM_F(m, top + 1);
    memcpy(g, f, (size_t)m->fs * sizeof *g);
    g[3] = -1;
    g[4] = 0;
    top++;
    if (c == 0) { g[1]++; memset(g + 5, 0, 10 * sizeof *g); continue; }
    switch (in->op) {
      case MLSYS__OM_EMIT: {
        const mlsys_offload_sig *s = &m->afm[in->row];
        g[5]++;
        for (e = 0; e < 6; e++) g[6 + e] += s->idiom[e];
        for (e = 0; e < 3; e++) g[12 + e] += s->dim[e];
        g[0]++;
        break;
      }
      case MLSYS__OM_BR: g[0] = m->tgt[in->a + c - 1]; break;
      case MLSYS__OM_JMP: g[0] = in->a; break;
      case MLSYS__OM_PUSH: g[15 + g[2]] = 0; g[15 + D + g[2]] = pc + 1; g[2]++; g[0]++; break;
      case MLSYS__OM_INC: g[15 + g[2] - 1]++; g[0] = in->a; break;
      default: /* HEAD */
        if (c == 1) g[0]++;
        else { g[2]--; g[0] = in->b; }
        break;
    }
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_offload_map(const mlsys_offload_prog *p, const int32_t *pred, int k_max, long max_states,
                                         mlsys_offload_resolved *out) {
  mlsys__offload_mapper m;
  mlsys_offload_sig *afm = NULL;
  int64_t *P = NULL;
  int n_afm = 0, K, i, e, r = 0, exact = 0;
  mlsys_status st;
  if (out) memset(out, 0, sizeof *out);
  if (!p || !pred || !out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_offload_map: NULL argument");
  if (k_max < 1) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_offload_map: k_max is %d, needs at least 1", k_max);
  for (i = 0; i < k_max * 10; i++)
    if (pred[i] < 0) return mlsys_set_error(MLSYS_ERR_ARG, "prediction: block %d element %d is negative (%d)", i / 10, i % 10, (int)pred[i]);
  for (K = 0; K < k_max && pred[10 * K] != 0; K++) {}
  if (K == 0) return mlsys_set_error(MLSYS_ERR_ARG, "prediction has 0 blocks (its first row count is 0)");
  if (p->root < 0) return mlsys_set_error(MLSYS_ERR_ARG, "program has no root");
  if ((st = mlsys_offload_afm(p, NULL, 0, &n_afm))) return st;
  if (!(afm = (mlsys_offload_sig *)mlsys_alloc((size_t)(n_afm > 0 ? n_afm : 1), sizeof *afm))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys_offload_afm(p, afm, n_afm, &n_afm))) { mlsys_free(afm); return st; }
  for (i = 0; i < n_afm; i++) {
    for (e = 0; e < 6; e++) if (afm[i].idiom[e] < 0) break;
    if (e < 6 || afm[i].dim[0] < 0 || afm[i].dim[1] < 0 || afm[i].dim[2] < 0) {
      mlsys_free(afm);
      return mlsys_set_error(MLSYS_ERR_ARG, "program: AFM row %d has a negative entry (the search prunes on growing sums)", i);
    }
  }
  memset(&m, 0, sizeof m);
  m.p = p;
  m.afm = afm;
  if ((st = mlsys__offload_map_flat(&m, p->root, 0))) goto done;
  if (m.max_depth > 64) { st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "program: loops nested %d deep (64 at most)", m.max_depth); goto done; }
  if (!(P = (int64_t *)mlsys_alloc((size_t)K * 10, sizeof *P))) { st = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < K * 10; i++) { P[i] = pred[i]; m.Q[i % 10] += pred[i]; }
  m.P = P;
  m.K = K;
  m.ks = 12 + m.max_depth;
  m.fs = 15 + 2 * m.max_depth;
  m.cap_fr = 256;
  m.max_states = max_states > 0 ? max_states : 1000000L;
  if (!(m.fr = (int64_t *)mlsys_alloc((size_t)m.cap_fr * (size_t)m.fs, sizeof *m.fr))) { st = MLSYS_ERR_NOMEM; goto done; }
  m.mode = 0;
  r = mlsys__offload_map_search(&m);
  if (r < 0) { st = MLSYS_ERR_NOMEM; goto done; }
  if (r == 1) exact = 1;
  else {
    /* §3.5 fallback: closest total row count among complete paths within Q_K[0] + slack; its own state budget */
    int64_t slack = m.Q[0] / 10;
    long used = m.states;
    if (slack > 64) slack = 64;
    if (slack < 1) slack = 1;
    m.budget = m.Q[0] + slack;
    m.mode = 1;
    m.K = 1;
    m.states = 0;
    r = mlsys__offload_map_search(&m);
    m.states += used;
    if (r < 0) { st = MLSYS_ERR_NOMEM; goto done; }
    if (!m.have_best) {
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "no complete path of at most %lld rows found (%ld states)",
                           (long long)m.budget, m.states);
      goto done;
    }
  }
  if ((st = mlsys_offload_path(p, m.best_dec, m.n_best_dec, out))) goto done;
  {
    int *bs = (int *)mlsys_alloc((size_t)K + 1, sizeof *bs), nb = 0;
    int64_t cum = 0;
    if (!bs) { st = MLSYS_ERR_NOMEM; mlsys_offload_resolved_free(out); goto done; }
    bs[nb++] = 0;
    for (i = 0; i < K - 1; i++) {
      cum += P[i * 10];
      if (cum < out->n_rows && cum > bs[nb - 1]) bs[nb++] = (int)cum;
    }
    bs[nb] = out->n_rows;
    mlsys_free(out->block_start);
    out->block_start = bs;
    out->k = nb;
  }
  out->exact = exact;
  out->states = m.states;
done:
  mlsys_free(afm);
  mlsys_free(P);
  mlsys_free(m.ins);
  mlsys_free(m.tgt);
  mlsys_free(m.fr);
  mlsys_free(m.pool);
  mlsys_free(m.tab);
  mlsys_free(m.best_dec);
  return st;
}

/* ================================================================================================================
   Pilot datasets, training and evaluation end to end
   ================================================================================================================ */
MLSYS_DEF mlsys_status mlsys_offload_trace_pin_weights(const mlsys_offload_trace *tr, mlsys_offload_trace *out) {
  unsigned char *pin = NULL;
  int i, j, *ids = NULL, cap = 0;
  mlsys_status st = MLSYS_OK;
  mlsys_offload_trace_init(out);
  if (!tr) return mlsys_set_error(MLSYS_ERR_ARG, "pin weights: no trace");
  if (!(pin = (unsigned char *)mlsys_calloc((size_t)tr->n_t + 1, 1))) goto nomem;
  for (i = 0; i < tr->n_t; i++) pin[i] = tr->t[i].kind == MLSYS_OFFLOAD_T_PARAM || tr->t[i].kind == MLSYS_OFFLOAD_T_OPT;
  /* a weight's gradient: a GRAD tensor read by an op that writes a weight */
  for (i = 0; i < tr->n_op; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    int writes_param = 0;
    for (j = 0; j < o->n_out; j++) writes_param |= tr->t[tr->ids[o->out0 + j]].kind == MLSYS_OFFLOAD_T_PARAM;
    if (writes_param)
      for (j = 0; j < o->n_in; j++) {
        int t = tr->ids[o->in0 + j];
        if (tr->t[t].kind == MLSYS_OFFLOAD_T_GRAD) pin[t] = 1;
      }
  }
  out->fixed_bytes = tr->fixed_bytes;
  for (i = 0; i < tr->n_t; i++) {
    if (pin[i]) out->fixed_bytes += tr->t[i].bytes;
    if (mlsys_offload_trace_tensor(out, pin[i] ? 0 : tr->t[i].bytes, (mlsys_offload_tkind)tr->t[i].kind) < 0) goto fail;
  }
  for (i = 0; i < tr->n_op; i++) {
    const mlsys_offload_op *o = &tr->op[i];
    int n_in = 0, n_out = 0, op;
    if (o->n_in + o->n_out > cap) {
      int c = o->n_in + o->n_out + 16, *q = (int *)mlsys_realloc_array(ids, (size_t)c, sizeof *q);
      if (!q) goto nomem;
      ids = q;
      cap = c;
    }
    for (j = 0; j < o->n_in; j++)
      if (!pin[tr->ids[o->in0 + j]]) ids[n_in++] = tr->ids[o->in0 + j];
    for (j = 0; j < o->n_out; j++)
      if (!pin[tr->ids[o->out0 + j]]) ids[n_in + n_out++] = tr->ids[o->out0 + j];
    if ((op = mlsys_offload_trace_op(out, mlsys_offload_op_name(tr, i), o->time_us, n_in, ids, n_out, ids + n_in,
                                     o->workspace, &o->sig)) < 0)
      goto fail;
    out->op[op].afm_row = o->afm_row;
    out->op[op].is_bwd = o->is_bwd;
  }
  if (tr->name && !(out->name = mlsys_strdup(tr->name))) goto nomem;
  mlsys_free(pin);
  mlsys_free(ids);
  return MLSYS_OK;
nomem:
  mlsys_set_error(MLSYS_ERR_NOMEM, "pin weights: out of memory");
fail:
  st = mlsys_last_status();
  mlsys_free(pin);
  mlsys_free(ids);
  mlsys_offload_trace_free(out);
  return st ? st : MLSYS_ERR_NOMEM;
}

static int mlsys__offload_prog_named(mlsys_offload_prog *p, const char *op) {
  mlsys_offload_sig s;
  memset(&s, 0, sizeof s);
  mlsys_offload_op_idioms(op, s.idiom);
  return mlsys_offload_prog_op(p, &s);
}

/* a SEQ of named ops; where names[i] is NULL, nodes[i] is an existing node */
static int mlsys__offload_prog_seqv(mlsys_offload_prog *p, int n, const char *const *names, const int *nodes) {
  int ids[16], i;
  for (i = 0; i < n; i++) ids[i] = names[i] ? mlsys__offload_prog_named(p, names[i]) : nodes[i];
  for (i = 0; i < n; i++)
    if (ids[i] < 0) return -1;
  return mlsys_offload_prog_seq(p, n, ids);
}

MLSYS_DEF mlsys_status mlsys_offload_prog_model(const char *model, mlsys_offload_prog *p) {
  int ok, top[3], nodes[8];
  if (!model) model = "treelstm";
  if (strcmp(model, "treelstm") && strcmp(model, "varlstm") && strcmp(model, "varbert") && strcmp(model, "moe"))
    return mlsys_set_error(MLSYS_ERR_ARG, "program: unknown model '%s' (treelstm, varlstm, varbert, moe)", model);
  mlsys_offload_prog_init(p, strcmp(model, "treelstm") && strcmp(model, "varlstm") ? 2 : 1);
  if (!strcmp(model, "treelstm")) {
    static const char *const leaf[3] = {"MatMul", "LSTMCell", "Tanh"};
    const char *inner[5] = {"ReduceSum", "MatMul", NULL, "LSTMCell", "Tanh"};
    int alts[2], kid = mlsys__offload_prog_named(p, "MatMul");
    nodes[2] = kid >= 0 ? mlsys_offload_prog_loop(p, kid, 1, -1) : -1;
    alts[0] = mlsys__offload_prog_seqv(p, 3, leaf, NULL);
    alts[1] = nodes[2] >= 0 ? mlsys__offload_prog_seqv(p, 5, inner, nodes) : -1;
    ok = alts[0] >= 0 && alts[1] >= 0;
    top[0] = ok ? mlsys_offload_prog_branch(p, 2, alts) : -1;
    top[0] = top[0] >= 0 ? mlsys_offload_prog_loop(p, top[0], 1, -1) : -1;
  } else if (!strcmp(model, "varlstm")) {
    const char *body[4] = {"MatMul", NULL, "LSTMCell", "Tanh"};
    int alts[2];
    alts[0] = mlsys_offload_prog_seq(p, 0, NULL);   /* the first step has no recurrent input */
    alts[1] = mlsys__offload_prog_named(p, "MatMul");
    nodes[1] = alts[0] >= 0 && alts[1] >= 0 ? mlsys_offload_prog_branch(p, 2, alts) : -1;
    top[0] = nodes[1] >= 0 ? mlsys__offload_prog_seqv(p, 4, body, nodes) : -1;
    top[0] = top[0] >= 0 ? mlsys_offload_prog_loop(p, top[0], 1, -1) : -1;
  } else {
    static const char *const att[5] = {"MatMul", "Attention", "MatMul", "Add", "LayerNorm"};
    const char *layer[6] = {NULL, "MatMul", "Gelu", "MatMul", "Add", "LayerNorm"};
    int body = -1;
    nodes[0] = mlsys__offload_prog_seqv(p, 5, att, NULL);
    if (nodes[0] >= 0 && !strcmp(model, "moe")) {
      static const char *const expert[4] = {"Gather", "MatMul", "Gelu", "MatMul"};
      const char *ffn[4] = {"MatMul", "TopK", NULL, "ScatterND"};
      const char *rest[4] = {NULL, NULL, "Add", "LayerNorm"};
      int e = mlsys__offload_prog_seqv(p, 4, expert, NULL), f;
      int fn[4];
      fn[2] = e >= 0 ? mlsys_offload_prog_loop(p, e, 1, -1) : -1;
      f = fn[2] >= 0 ? mlsys__offload_prog_seqv(p, 4, ffn, fn) : -1;
      nodes[1] = f;
      body = f >= 0 ? mlsys__offload_prog_seqv(p, 4, rest, nodes) : -1;
    } else if (nodes[0] >= 0) {
      body = mlsys__offload_prog_seqv(p, 6, layer, nodes);
    }
    top[0] = body >= 0 ? mlsys_offload_prog_loop(p, body, 1, -1) : -1;
  }
  top[1] = mlsys__offload_prog_named(p, "MatMul");
  top[2] = mlsys__offload_prog_named(p, "Softmax");
  if (top[0] < 0 || top[1] < 0 || top[2] < 0 || mlsys_offload_prog_seq(p, 3, top) < 0) {
    mlsys_status st = mlsys_last_status();
    mlsys_offload_prog_free(p);
    return st ? st : MLSYS_ERR_NOMEM;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_prog_treelstm(mlsys_offload_prog *p) { return mlsys_offload_prog_model("treelstm", p); }

MLSYS_DEF void mlsys_offload_pilot_data_free(mlsys_offload_pilot_data *d) {
  int i;
  if (!d) return;
  for (i = 0; d->trace && i < d->n; i++) mlsys_offload_trace_free(&d->trace[i]);
  mlsys_free(d->trace);
  mlsys_free(d->x_e);
  mlsys_free(d->x_a);
  mlsys_free(d->label);
  mlsys_free(d->nn_type);
  mlsys_free(d->first_tree);
  memset(d, 0, sizeof *d);
}

static int mlsys__offload_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sentences' words (hashes; leaves when a tree was built by hand) and their count. */
static int mlsys__offload_words(const mlsys_offload_tree *t, int n, uint64_t *word) {
  int j, i, k = 0;
  for (j = 0; j < n; j++)
    for (i = 0; i < t[j].n; i++) {
      int leaf = 1, c;
      if (t[j].word) leaf = t[j].word[i] != 0;
      else
        for (c = i + 1; c < t[j].n && leaf; c++) leaf = t[j].parent[c] != i;
      if (!leaf) continue;
      if (word) word[k] = t[j].word ? t[j].word[i] : (uint64_t)(i + 1);
      k++;
    }
  return k;
}

/* The words into *word (grown as needed); their count, or -1 out of memory. */
static int mlsys__offload_words_into(const mlsys_offload_tree *t, int n, uint64_t **word, int *cap) {
  int k = mlsys__offload_words(t, n, NULL);
  if (k > *cap) {
    uint64_t *q = (uint64_t *)mlsys_realloc_array(*word, (size_t)k, sizeof *q);
    if (!q) return -1;
    *word = q;
    *cap = k;
  }
  mlsys__offload_words(t, n, *word);
  return k;
}

/* One sample's iteration (weights pinned when asked). */
static mlsys_status mlsys__offload_sample_trace(const mlsys_offload_data_opts *o, const char *model, int in_dim, int hidden,
                                                const mlsys_offload_tree *t, int batch, const uint64_t *word, int n_word,
                                                mlsys_offload_trace *out) {
  mlsys_offload_trace tr;
  mlsys_status st;
  int L = n_word > 0 ? n_word : 1;
  if (!strcmp(model, "treelstm")) st = mlsys_offload_gen_treelstm(t, batch, in_dim, hidden, o->gpu, &tr);
  else if (!strcmp(model, "varlstm")) st = mlsys_offload_gen_varlstm(&L, 1, in_dim, hidden, o->gpu, &tr);
  else if (!strcmp(model, "varbert"))
    st = mlsys_offload_gen_varbert(o->layers > 0 ? o->layers : 12, 1, L, hidden, o->gpu, &tr);
  else {
    /* the router's draws: a function of the words (FNV-1a over their hashes) */
    uint64_t h = 14695981039346656037ull;
    int i;
    for (i = 0; i < n_word; i++) h = (h ^ word[i]) * 1099511628211ull;
    st = mlsys_offload_gen_moe(o->layers > 0 ? o->layers : 8, o->experts > 0 ? o->experts : 16, o->top_k > 0 ? o->top_k : 2,
                               L, hidden, h, o->gpu, &tr);
  }
  if (st) return st;
  if (!o->pin_weights) { *out = tr; return MLSYS_OK; }
  st = mlsys_offload_trace_pin_weights(&tr, out);
  mlsys_offload_trace_free(&tr);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_data_make(const mlsys_offload_pilot *m, const mlsys_offload_tree *trees,
                                                     int n_trees, const mlsys_offload_data_opts *o,
                                                     mlsys_offload_pilot_data *out) {
  mlsys_offload_pilot_cfg cfg;
  mlsys_offload_prog prog;
  mlsys_offload_hw hw;
  mlsys_offload_sig *afm = NULL;
  float *emb = NULL, *xa = NULL;
  uint64_t *word = NULL;
  const char *model;
  int in_dim, hidden, batch, n_s, s, n_rows = 0, cap_rows = 0, cap_emb = 0, cap_word = 0, tl, nn_type;
  mlsys_status st = MLSYS_OK;
  memset(out, 0, sizeof *out);
  if (!m || !o || !trees || n_trees < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot data: need a pilot, options and at least one tree");
  model = o->model ? o->model : "treelstm";
  tl = !strcmp(model, "treelstm");
  if (!tl && strcmp(model, "varlstm") && strcmp(model, "varbert") && strcmp(model, "moe"))
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot data: unknown model '%s' (treelstm, varlstm, varbert, moe)", model);
  if (o->layers < 0 || o->experts < 0 || o->top_k < 0 || o->top_k > (o->experts ? o->experts : 16))
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot data: layers %d, experts %d, top_k %d", o->layers, o->experts, o->top_k);
  in_dim = o->in_dim ? o->in_dim : !strcmp(model, "varbert") ? 768 : !strcmp(model, "moe") ? 512 : 300;
  hidden = o->hidden ? o->hidden : !strcmp(model, "varbert") ? 768 : !strcmp(model, "moe") ? 512 : 150;
  batch = o->batch ? o->batch : tl ? 1 : 4;
  if (in_dim < 1 || hidden < 1 || batch < 1 || (o->hw.gpu_bytes <= 0 && !(o->act_frac > 0)) || !(o->act_frac >= 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot data: in_dim %d, hidden %d, batch %d and GPU bytes %lld must be positive",
                           in_dim, hidden, batch, (long long)o->hw.gpu_bytes);
  n_s = n_trees / batch;
  if (n_s < 1) return mlsys_set_error(MLSYS_ERR_ARG, "pilot data: %d trees make no batch of %d", n_trees, batch);
  cfg = mlsys_offload_pilot_config(m);
  out->xe_dim = cfg.e_proj + 2 + cfg.len_code;
  out->xa_dim = mlsys_offload_pilot_afm_dim(m);
  out->k_max = cfg.k_max;
  /* the AFM is the network's, the same for every sample */
  if ((st = mlsys_offload_prog_model(model, &prog))) return st;
  for (;;) {
    st = mlsys_offload_afm(&prog, afm, cap_rows, &n_rows);
    if (st != MLSYS_ERR_TOO_BIG && !(st == MLSYS_OK && n_rows > cap_rows)) break;
    mlsys_free(afm);
    cap_rows = n_rows > cap_rows ? n_rows : 2 * cap_rows + 16;
    if (!(afm = (mlsys_offload_sig *)mlsys_alloc((size_t)cap_rows, sizeof *afm))) { st = MLSYS_ERR_NOMEM; break; }
  }
  nn_type = prog.nn_type;
  mlsys_offload_prog_free(&prog);
  if (st) goto done;
  if (!(xa = (float *)mlsys_alloc((size_t)out->xa_dim, sizeof *xa))) { st = MLSYS_ERR_NOMEM; goto done; }
  mlsys_offload_pilot_afm_features(m, afm, n_rows, xa);
  out->x_e = (float *)mlsys_alloc((size_t)n_s * out->xe_dim, sizeof *out->x_e);
  out->x_a = (float *)mlsys_alloc((size_t)n_s * out->xa_dim, sizeof *out->x_a);
  out->label = (float *)mlsys_alloc((size_t)n_s * out->k_max * 10, sizeof *out->label);
  out->nn_type = (int *)mlsys_alloc((size_t)n_s, sizeof *out->nn_type);
  out->first_tree = (int *)mlsys_alloc((size_t)n_s, sizeof *out->first_tree);
  out->trace = (mlsys_offload_trace *)mlsys_calloc((size_t)n_s, sizeof *out->trace);
  if (!out->x_e || !out->x_a || !out->label || !out->nn_type || !out->first_tree || !out->trace) { st = MLSYS_ERR_NOMEM; goto done; }
  hw = o->hw;
  if (o->act_frac > 0) {
    /* a first pass for the budget: the largest resident part, plus a share of the median activation peak */
    int64_t *act = (int64_t *)mlsys_alloc((size_t)n_s, sizeof *act), res_max = 0;
    if (!act) { st = MLSYS_ERR_NOMEM; goto done; }
    for (s = 0; s < n_s && !st; s++) {
      mlsys_offload_trace tr;
      mlsys_offload_facts f;
      int nw = mlsys__offload_words_into(trees + (size_t)s * batch, batch, &word, &cap_word);
      if (nw < 0) { st = MLSYS_ERR_NOMEM; break; }
      if ((st = mlsys__offload_sample_trace(o, model, in_dim, hidden, trees + (size_t)s * batch, batch, word, nw, &tr))) break;
      if (!(st = mlsys_offload_trace_facts(&tr, &f))) {
        int64_t res = f.persistent_bytes;
        if (res > res_max) res_max = res;
        act[s] = f.peak_bytes - res;
        mlsys_offload_facts_free(&f);
      }
      mlsys_offload_trace_free(&tr);
    }
    if (!st) {
      qsort(act, (size_t)n_s, sizeof *act, mlsys__offload_cmp_i64);
      hw.gpu_bytes = res_max + (int64_t)(o->act_frac * (double)act[n_s / 2]);
    }
    mlsys_free(act);
    if (st) goto done;
  }
  out->gpu_bytes = hw.gpu_bytes;
  for (s = 0; s < n_s && !st; s++) {
    mlsys_offload_trace tr, *use = &tr;
    mlsys_offload_part_opts po;
    mlsys_offload_blocks b;
    int n_leaf, b0 = s * batch, k;
    if (o->progress) o->progress(o->progress_ctx, s, n_s);
    if ((n_leaf = mlsys__offload_words_into(trees + b0, batch, &word, &cap_word)) < 0) { st = MLSYS_ERR_NOMEM; break; }
    if ((st = mlsys__offload_sample_trace(o, model, in_dim, hidden, trees + b0, batch, word, n_leaf, &tr))) break;
    memset(&po, 0, sizeof po);
    po.kind = MLSYS_OFFLOAD_PART_DP;
    po.k_max = cfg.k_max;
    st = mlsys_offload_partition(use, &hw, &po, &b);
    if (st == MLSYS_ERR_INFEASIBLE) {
      out->n_infeasible++;
      mlsys_offload_trace_free(use);
      st = MLSYS_OK;
      continue;
    }
    if (st) { mlsys_offload_trace_free(use); break; }
    out->n_over_k_max += b.k >= cfg.k_max;
    mlsys_offload_blocks_label(use, &b, cfg.k_max, out->label + (size_t)out->n * cfg.k_max * 10);
    mlsys_offload_blocks_free(&b);
    /* the sample after embedding: one row per word */
    if ((size_t)n_leaf * in_dim > (size_t)cap_emb) {
      float *q = (float *)mlsys_realloc_array(emb, (size_t)n_leaf * in_dim, sizeof *q);
      if (!q) { st = MLSYS_ERR_NOMEM; mlsys_offload_trace_free(use); break; }
      emb = q;
      cap_emb = n_leaf * in_dim;
    }
    for (k = 0; k < n_leaf; k++) {
      mlsys_rng r;
      int e;
      mlsys_rng_seed(&r, word[k] ^ o->embed_seed);
      for (e = 0; e < in_dim; e++) emb[(size_t)k * in_dim + e] = (float)mlsys_rng_normal(&r);
    }
    mlsys_offload_pilot_features(m, emb, n_leaf, in_dim, out->x_e + (size_t)out->n * out->xe_dim);
    memcpy(out->x_a + (size_t)out->n * out->xa_dim, xa, (size_t)out->xa_dim * sizeof *xa);
    out->nn_type[out->n] = nn_type;
    out->first_tree[out->n] = b0;
    out->trace[out->n] = *use;
    out->n++;
  }
  if (!st && o->progress) o->progress(o->progress_ctx, n_s, n_s);
  if (!st && out->n == 0)
    st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "pilot data: none of the %d samples fits %lld GPU bytes (one op's tensors "
                         "exceed a buffer; try pin_weights or more memory)", n_s, (long long)hw.gpu_bytes);
done:
  if (st == MLSYS_ERR_NOMEM) mlsys_set_error(st, "pilot data: out of memory");
  mlsys_free(afm);
  mlsys_free(xa);
  mlsys_free(emb);
  mlsys_free(word);
  if (st) mlsys_offload_pilot_data_free(out);
  return st;
}

/* Exact-match count of the decoded predictions, and the mean loss. */
static int mlsys__offload_exact_count(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *d, float *yhat, int32_t *pred,
                                      double *loss) {
  int s, i, n = 0, ny = d->k_max * 10;
  *loss = 0;
  for (s = 0; s < d->n; s++) {
    *loss += mlsys_offload_pilot_loss(m, d->x_e + (size_t)s * d->xe_dim, d->x_a + (size_t)s * d->xa_dim, d->nn_type[s],
                                      d->label + (size_t)s * ny) / d->n;
    int same = 1;
    mlsys_offload_pilot_forward(m, d->x_e + (size_t)s * d->xe_dim, d->x_a + (size_t)s * d->xa_dim, d->nn_type[s], yhat);
    mlsys_offload_pilot_decode(m, yhat, pred);
    for (i = 0; i < ny && same; i++) same = (float)pred[i] == d->label[(size_t)s * ny + i];
    n += same;
  }
  return n;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_fit(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *train,
                                               const mlsys_offload_pilot_data *val, const mlsys_offload_fit_opts *o,
                                               mlsys_offload_fit_result *out) {
  mlsys_offload_fit_opts d;
  size_t np;
  float *best = NULL, *yhat = NULL, *p;
  int32_t *pred = NULL;
  int e, ny, since = 0, best_n = -1;
  double best_loss = INFINITY;
  memset(out, 0, sizeof *out);
  memset(&d, 0, sizeof d);
  if (o) d = *o;
  if (!d.max_epochs) d.max_epochs = 200;
  if (!d.patience) d.patience = 30;
  if (!d.batch) d.batch = 32;
  if (!m || !train || train->n < 1 || d.max_epochs < 1 || d.patience < 1 || d.batch < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot fit: need a pilot, >= 1 training sample and positive epochs, patience, batch");
  if (!val) val = train;
  {
    mlsys_offload_pilot_cfg c = mlsys_offload_pilot_config(m);
    if (train->k_max != c.k_max || val->k_max != c.k_max || train->xe_dim != c.e_proj + 2 + c.len_code ||
        train->xa_dim != mlsys_offload_pilot_afm_dim(m) || val->xe_dim != train->xe_dim || val->xa_dim != train->xa_dim)
      return mlsys_set_error(MLSYS_ERR_ARG, "pilot fit: the data's widths (x_e %d, x_a %d, k_max %d) are not the pilot's "
                             "(%d, %d, %d)", train->xe_dim, train->xa_dim, train->k_max, c.e_proj + 2 + c.len_code,
                             mlsys_offload_pilot_afm_dim(m), c.k_max);
  }
  ny = train->k_max * 10;
  if (d.snap) {
    mlsys_status st = mlsys_offload_pilot_set_codebook(m, train->label, train->n);
    if (st) return st;
  }
  np = mlsys_offload_pilot_nparams(m);
  p = mlsys_offload_pilot_params(m);
  best = (float *)mlsys_alloc(np, sizeof *best);
  yhat = (float *)mlsys_alloc((size_t)ny, sizeof *yhat);
  pred = (int32_t *)mlsys_alloc((size_t)ny, sizeof *pred);
  if (!best || !yhat || !pred) {
    mlsys_free(best);
    mlsys_free(yhat);
    mlsys_free(pred);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "pilot fit: out of memory");
  }
  memcpy(best, p, np * sizeof *p);
  for (e = 0; e < d.max_epochs && since < d.patience; e++) {
    float loss = mlsys_offload_pilot_train_epoch(m, train->n, train->x_e, train->x_a, train->nn_type, train->label, d.batch);
    int n_ok;
    double vloss;
    if (loss != loss) {   /* bad labels: train_epoch said why */
      mlsys_free(best);
      mlsys_free(yhat);
      mlsys_free(pred);
      return mlsys_last_status() ? mlsys_last_status() : MLSYS_ERR_ARG;
    }
    n_ok = mlsys__offload_exact_count(m, val, yhat, pred, &vloss);
    out->epochs = e + 1;
    out->final_loss = loss;
    if (n_ok > best_n || (n_ok == best_n && vloss < best_loss)) {
      best_n = n_ok;
      best_loss = vloss;
      out->best_epoch = e + 1;
      memcpy(best, p, np * sizeof *p);
      since = 0;
    } else {
      since++;
    }
    if (d.progress) d.progress(d.progress_ctx, e + 1, loss, (double)n_ok / val->n);
  }
  memcpy(p, best, np * sizeof *p);
  out->best_val_exact = best_n < 0 ? 0 : (double)best_n / val->n;
  out->best_val_loss = best_loss;
  mlsys_free(best);
  mlsys_free(yhat);
  mlsys_free(pred);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_predicted(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                                   const int32_t *pred, int k_max, mlsys_offload_simres *out) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__offload_bcx x;
  mlsys_offload_blocks b;
  mlsys_status st;
  int *start = NULL, *added = NULL, k = 0, j, n, i;
  double exposed = 0;
  memset(out, 0, sizeof *out);
  memset(&b, 0, sizeof b);
  if (!tr || !pred || k_max < 1) return mlsys_set_error(MLSYS_ERR_ARG, "predicted plan: need a trace, a prediction and k_max >= 1");
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  n = tr->n_op;
  if (n < 1) return mlsys_set_error(MLSYS_ERR_ARG, "predicted plan: the trace has no ops");
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if ((st = mlsys__offload_bcx_init(&x, tr, &f))) { mlsys_offload_facts_free(&f); return st; }
  /* at most one block per op */
  start = (int *)mlsys_alloc((size_t)n + 1, sizeof *start);
  added = (int *)mlsys_calloc((size_t)n + 1, sizeof *added);
  if (!start || !added) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "predicted plan: out of memory"); goto done; }
  {
    /* the operator counter's cut points */
    int *cut = (int *)mlsys_alloc((size_t)k_max + 2, sizeof *cut), nc = 0;
    int64_t cum = 0;
    if (!cut) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "predicted plan: out of memory"); goto done; }
    cut[nc++] = 0;
    for (j = 0; j < k_max && pred[10 * j] > 0 && cum < n; j++) {
      cum += pred[10 * j];
      if (cum > n) cum = n;
      cut[nc++] = (int)cum;
    }
    if (cut[nc - 1] < n) cut[nc++] = n;   /* ops past the prediction: one more block */
    /* repair: split a block where its tensors stop fitting a buffer */
    start[k++] = 0;
    for (j = 0; j + 1 < nc; j++) {
      int a = cut[j], e = cut[j + 1];
      while (a < e) {
        mlsys__offload_bc bc;
        int lo = a + 1, hi = e, fit = a;
        mlsys__offload_block_cost(&x, a, e, &bc);
        if (bc.ws <= h.cbuf) { fit = e; }
        else {
          /* the longest prefix that fits (ws grows with the block) */
          while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            mlsys__offload_block_cost(&x, a, mid, &bc);
            if (bc.ws <= h.cbuf) { fit = mid; lo = mid + 1; } else hi = mid - 1;
          }
          if (fit == a) {
            st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "predicted plan: op %d (%s) alone needs more than a buffer of %lld bytes",
                                 a, mlsys_offload_op_name(tr, a), (long long)h.cbuf);
            break;
          }
        }
        if (fit < e) added[k] = 1;   /* the block starting at fit was not predicted */
        a = fit;
        if (a < n) start[k++] = a;
      }
      if (st) break;
    }
    mlsys_free(cut);
    if (st) goto done;
    start[k] = n;
  }
  b.k = k;
  b.start = start;
  if ((st = mlsys_offload_sim_dynn(tr, hw, &b, out))) goto done;
  for (j = 1; j < k; j++)
    if (added[j]) {
      mlsys__offload_bc bc;
      mlsys__offload_block_cost(&x, start[j], start[j + 1], &bc);
      exposed += (bc.in ? (double)bc.in / h.h2d + h.lat * bc.nin : 0.0);
      out->n_faults++;
    }
  (void)i;
  out->time_us += exposed;
  out->migration_us += exposed;
done:
  mlsys_free(start);
  mlsys_free(added);
  mlsys__offload_bcx_free(&x);
  mlsys_offload_facts_free(&f);
  return st;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_evaluate(mlsys_offload_pilot *m, const mlsys_offload_pilot_data *d,
                                                    const mlsys_offload_hw *hw, mlsys_offload_pilot_eval *out) {
  mlsys_offload_mcache *cache = NULL;
  float *yhat = NULL;
  int32_t *pred = NULL, *truth = NULL, *key = NULL;
  int s, i, ny;
  mlsys_status st = MLSYS_OK;
  memset(out, 0, sizeof *out);
  if (!m || !d || !hw || !d->trace) return mlsys_set_error(MLSYS_ERR_ARG, "pilot evaluate: need a pilot, data with traces and hardware");
  if (d->k_max != mlsys_offload_pilot_config(m).k_max)
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot evaluate: the data's k_max %d is not the pilot's %d", d->k_max,
                           mlsys_offload_pilot_config(m).k_max);
  ny = d->k_max * 10;
  if ((st = mlsys_offload_mcache_create(d->k_max, &cache))) return st;
  yhat = (float *)mlsys_alloc((size_t)ny, sizeof *yhat);
  pred = (int32_t *)mlsys_alloc((size_t)ny, sizeof *pred);
  truth = (int32_t *)mlsys_alloc((size_t)ny, sizeof *truth);
  key = (int32_t *)mlsys_alloc((size_t)ny, sizeof *key);
  if (!yhat || !pred || !truth || !key) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "pilot evaluate: out of memory"); goto done; }
  for (s = 0; s < d->n; s++) {
    const float *lab = d->label + (size_t)s * ny;
    const int32_t *hit, *use;
    mlsys_offload_simres r;
    int same = 1, cuts = 1, cuts_c = 1, kp = 0, kt = 0;
    for (i = 0; i < ny; i++) truth[i] = (int32_t)lab[i];
    mlsys_offload_pilot_forward(m, d->x_e + (size_t)s * d->xe_dim, d->x_a + (size_t)s * d->xa_dim, d->nn_type[s], yhat);
    mlsys_offload_pilot_decode(m, yhat, pred);
    mlsys__offload_pilot_round(m, yhat, key);
    for (i = 0; i < ny; i++) same &= pred[i] == truth[i];
    while (kp < d->k_max && pred[10 * kp]) kp++;
    while (kt < d->k_max && truth[10 * kt]) kt++;
    out->k_exact += kp == kt;
    /* the runtime plan is the op counts up to the first empty block */
    for (i = 0; i < d->k_max && (pred[10 * i] || truth[10 * i]); i++) cuts &= pred[10 * i] == truth[10 * i];
    hit = mlsys_offload_mcache_get(cache, key);
    use = hit ? hit : pred;
    out->cache_hits += hit != NULL;
    for (i = 0; i < d->k_max && (use[10 * i] || truth[10 * i]); i++) cuts_c &= use[10 * i] == truth[10 * i];
    out->n++;
    out->exact += same;
    out->mispred += !cuts;
    out->mispred_cache += !cuts_c;
    if ((st = mlsys_offload_sim_predicted(&d->trace[s], hw, truth, d->k_max, &r))) goto done;
    out->time_oracle_us += r.time_us;
    out->compute_us += r.compute_us;
    if ((st = mlsys_offload_sim_predicted(&d->trace[s], hw, pred, d->k_max, &r))) goto done;
    out->time_pred_us += r.time_us;
    out->faulted += r.n_faults > 0;
    if (use != pred && (st = mlsys_offload_sim_predicted(&d->trace[s], hw, use, d->k_max, &r))) goto done;
    out->time_cache_us += r.time_us;
    /* a mis-prediction is recorded with its true blocks (the seed's runtime cache) */
    if (!cuts_c && (st = mlsys_offload_mcache_put(cache, key, truth))) goto done;
  }
done:
  mlsys_free(key);
  mlsys_offload_mcache_free(cache);
  mlsys_free(yhat);
  mlsys_free(pred);
  mlsys_free(truth);
  return st;
}

#endif /* MLSYS_OFFLOAD_IMPLEMENTATION_DONE */
#endif /* MLSYS_OFFLOAD_IMPLEMENTATION */
