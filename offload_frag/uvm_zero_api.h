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
