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
