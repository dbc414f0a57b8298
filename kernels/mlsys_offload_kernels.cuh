/* kernels/mlsys_offload_kernels.cuh — DyNN-Offload's CUDA runtime (spec §3.6) and a child-sum Tree-LSTM that runs
   on it (spec §7.3): the double buffer, a pinned host arena, three streams, events per block, the D2D carry between
   buffers and on-demand fetches, driven by an operator counter; and the network's kernels beside their CPU
   references.

   Include from one .cu file after `#define MLSYS_CUDA` and mlsys_offload.h (with its implementation), like the other
   kernels/ headers. tests/cuda/test_offload_cuda.cu is the user: host-side it checks the plans and the CPU reference,
   on a GPU it runs the Tree-LSTM resident and offloaded and compares the bits.

   1. The plan (host only, no CUDA call): mlsys_offload_rt_plan_build turns a trace and its partition
      (mlsys_offload_partition at hw.gpu_bytes = the budget) into what the runtime does per block k: T(B_k), a fixed
      offset for each of its tensors in buffer k%2 (a bump allocator: no frees inside a block, so no fragmentation),
      how each arrives (first written here / over PCIe from the arena / carried device-to-device from block k-1's
      buffer) and which leave over PCIe after the block (dirty and still needed, and not carried on into block k+1,
      which keeps them dirty in its own buffer: the exact tracking of mlsys_offload_sim_dynn). Its byte counts are
      the cost model's (mlsys_offload_blocks_costs) and the simulator's, which the test checks.
   2. The runtime (mlsys_offload_cuda_*): one pinned host arena (cudaHostAlloc once; every tensor has a slot there),
      one device allocation of exactly the budget: two buffers of buf_bytes (the second 256-aligned) and the reserve
      (the rest, about reserve_frac of it) for on-demand fetches. Execution is an operator counter: before each
      kernel the caller acquires every tensor the trace op touches (the device pointer; a software residency check;
      a tensor the plan failed to bring in is fetched into the reserve, counted as a fault and logged), launches on
      the compute stream, then calls op_done.
      When the counter finishes block k: E_end[k] on the compute stream; on the D2H stream, after E_end[k-1], block
      k-1's evictions, then E_evicted[k-1]; on the H2D stream, after E_evicted[k-1] and E_free[k] (block k's carries
      have read buffer (k-1)%2), block k+1's prefetch into that buffer, then E_pref[k+1]; the compute stream waits
      for E_pref[k+1] and copies block k+1's carried tensors from buffer k%2 (the seed's evict-then-prefetch, the
      CPU one block ahead at most). The end of an iteration copies back what is dirty and still needed (weights
      after SGD, results the caller keeps). A resident mode (every tensor its own slot of one device allocation,
      inputs and weights uploaded at the start, results downloaded at the end) runs the same driver as the
      reference.
   3. The Tree-LSTM (Tai et al. 2015, child-sum), built exactly as mlsys_offload_gen_treelstm builds its trace (same
      ops, same tensors, same order, same analytic times): a leaf's embedding row (an INPUT tensor, gathered on the
      host from a seeded table of hashed words) → iou = W_iou x → c = σ(i)·tanh(u) → h = σ(o)·tanh(c); an inner node:
      hsum = Σ h_k → iou = U_iou hsum → f_k = U_f h_k per child → c = σ(i)·tanh(u) + Σ σ(f_k)·c_k → h; the root's
      logits = W_c h (5 classes); the loss is the mean cross-entropy over the batch. Then the backward, mirrored op
      by op (the generator's rule: each forward op's gradient op reads its output's gradient and its saved inputs
      and writes its inputs' gradients, accumulating into one that exists), then one SGD op per weight. The driver
      builds the op list and its mlsys_offload_trace together, so the partition plans exactly what runs.

   API (all static; one translation unit)
     plan     mlsys_offload_rt_plan_build / _free / _drop (testing: a copy-in dropped, as a mis-prediction would)
     runtime  mlsys_offload_cuda_create(trace, plan or NULL for resident, keep, flags, &rt) / _free; _host(rt, t): a
              tensor's arena slot; _begin; _acquire(rt, t, writes, &ptr) before each kernel; _stream(rt): launch on
              it; _op_done after each launch; _end(rt, &stats); _faults(rt, &n): the on-demand log;
              _calibrate(bytes, &h2d, &d2h, &lat): pinned bandwidths for mlsys_offload_hw.
              flags MLSYS_OFFLOAD_CUDA_HOST (| _POISON): the same runtime with memcpy for copies and the kernels' CPU
              loops, no CUDA call: its data flow is testable on a machine without a GPU.
     treelstm mlsys_offload_cuda_tl_build(trees, n, D, H, vocab, gpu model, &batch) / _batch_free; _model_init / _free;
              _load(batch, model, mem): weights and gathered embeddings into per-tensor memory; _run_cpu (the
              reference), _run_gpu (through a runtime); _exec: one op.
   Usage (tests/cuda/test_offload_cuda.cu):
       mlsys_offload_cuda_tl_build(trees, 32, 32, 32, 384, NULL, &b);
       mlsys_offload_hw hw = {0}; hw.gpu_bytes = mlsys_offload_peak_bytes(&b.tr) / 4;
       mlsys_offload_partition(&b.tr, &hw, &opts, &blocks);
       mlsys_offload_rt_plan_build(&b.tr, &blocks, hw.gpu_bytes, 0, keep, &plan);
       mlsys_offload_cuda_create(&b.tr, &plan, keep, 0, &rt);
       for (t...) mem[t] = (float *)mlsys_offload_cuda_host(rt, t);
       mlsys_offload_cuda_tl_load(&b, &model, mem);
       mlsys_offload_cuda_tl_run_gpu(&b, rt, scratch_ptrs, scratch_ints, lr, &stats);   // weights now in mem[]

   Kernels: every kernel is a functor (`operator()(int t)`, __host__ __device__) launched by one template kernel
   with one thread per t, or looped over t on the CPU: the CPU reference is the same source compiled for the host.
   Each output element is written by one thread, reductions run in a fixed order, and on the device multiplies and
   adds are kept apart (__fmul_rn/__fadd_rn: nvcc would fuse them), so a run gives the same bits every time and the
   same bits resident or offloaded (only where tensors live differs). Against the CPU the test allows a tolerance:
   expf/tanhf/logf round differently in CUDA's libdevice and glibc.

   Left out of §3.6 (honestly): the diverged-plan mode after a first miss (item 1; every miss here is fetched on
   demand, and later blocks keep their plan), the flag that overlaps eviction and prefetch on two copy engines
   (item 2; evictions and prefetches are on two streams, but each prefetch waits for the eviction before it, as in
   the seed), the size-class free list of the arena (item 5; it is bumped once per trace, every tensor a slot), an
   event pool (events are per block, made once per runtime), op workspaces (a trace op with workspace > 0 is
   MLSYS_ERR_UNSUPPORTED), dynamic batching (item 8), and the pilot: the plan comes from the true trace. */
#ifndef MLSYS_OFFLOAD_KERNELS_CUH
#define MLSYS_OFFLOAD_KERNELS_CUH

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================================================================
   1. The plan of a partition (host)
   ================================================================================================================ */
enum {
  MLSYS_OFFLOAD_RT_NEW = 1,      /* first written in the block: no copy in */
  MLSYS_OFFLOAD_RT_H2D = 2,      /* brought in from the pinned arena before the block (the prefetch) */
  MLSYS_OFFLOAD_RT_D2D = 4,      /* carried from block k-1's buffer at the block's start */
  MLSYS_OFFLOAD_RT_EVICT = 8,    /* copied to the arena after the block */
  MLSYS_OFFLOAD_RT_DIRTY = 16,   /* newer on the GPU than in the arena at the block's end */
  MLSYS_OFFLOAD_RT_MODEL_EV = 32,/* in the cost model's eviction set: written here, live past the block */
  MLSYS_OFFLOAD_RT_DROPPED = 64  /* testing: the copy in was dropped from the plan (a mis-prediction) */
};

typedef struct {
  int n_t, n_op, k;
  int *start;                 /* [k+1] block j = ops [start[j], start[j+1]) */
  int64_t gpu_bytes;          /* the device allocation: 2 buffers + reserve (= budget − trace.fixed_bytes) */
  int64_t buf_bytes;          /* each buffer: ⌊(gpu − fixed)(1 − r)/2⌋, as the partition's cost model */
  int64_t buf1_off;           /* where buffer 1 starts (buffer 0 at 0): 256-aligned, so every float is aligned */
  int64_t reserve_off, reserve_bytes;   /* the rest, 256-aligned: on-demand fetches */
  int *e0;                    /* [k+1] block j's entries are e0[j] .. e0[j+1]-1, in first-access order */
  int n_e;
  int *et;                    /* [n_e] tensor */
  int64_t *eoff;              /* [n_e] offset in buffer j%2 */
  unsigned char *eflag;       /* [n_e] MLSYS_OFFLOAD_RT_* */
  int64_t *used;              /* [k] bytes the block's bump allocator hands out (+ its ops' workspace) */
  int64_t *h2d, *d2d, *d2h;   /* [k] bytes copied in over PCIe, carried, copied out after the block */
  int64_t *model_in, *model_ev; /* [k] the cost model's in(B) (= h2d + d2d) and ev(B) (every dirty live write) */
} mlsys_offload_rt_plan;

static void mlsys_offload_rt_plan_free(mlsys_offload_rt_plan *p) {
  mlsys_free(p->start); mlsys_free(p->e0); mlsys_free(p->et); mlsys_free(p->eoff); mlsys_free(p->eflag); mlsys_free(p->used);
  mlsys_free(p->h2d); mlsys_free(p->d2d); mlsys_free(p->d2h); mlsys_free(p->model_in); mlsys_free(p->model_ev);
  memset(p, 0, sizeof *p);
}

static int64_t mlsys__ort_round4(int64_t b) { return (b + 3) & ~(int64_t)3; }

/* The plan of partition b for a device of gpu_bytes (reserve_frac as mlsys_offload_hw: 0 = 0.05, < 0 = none).
   keep[t] (NULL: none): tensors treated as needed after the iteration (results the caller reads back, such as the
   loss), so they are copied out when written; the cost-model sets (model_ev) ignore keep. MLSYS_ERR_INFEASIBLE
   names the block whose tensors do not fit a buffer. */
static mlsys_status mlsys_offload_rt_plan_build(const mlsys_offload_trace *tr, const mlsys_offload_blocks *b,
                                                int64_t gpu_bytes, double reserve_frac, const unsigned char *keep,
                                                mlsys_offload_rt_plan *p) {
  mlsys_offload_facts f;
  mlsys_status st;
  int K = b ? b->k : 0, j, i, q, e, *last_blk = NULL, *last_e = NULL, *next_blk = NULL, *wrote = NULL;
  double r = reserve_frac == 0 ? 0.05 : reserve_frac < 0 ? 0 : reserve_frac;
  int64_t avail;
  memset(p, 0, sizeof *p);
  if (!tr || !b || K < 1 || !b->start) return mlsys_set_error(MLSYS_ERR_ARG, "offload plan: no trace or no partition");
  if (b->start[0] != 0 || b->start[K] != tr->n_op)
    return mlsys_set_error(MLSYS_ERR_ARG, "offload plan: the partition covers ops %d..%d, the trace has %d", b->start[0],
                           b->start[K], tr->n_op);
  for (j = 0; j < K; j++)
    if (b->start[j + 1] <= b->start[j]) return mlsys_set_error(MLSYS_ERR_ARG, "offload plan: block %d is empty", j);
  if (!(r < 1)) return mlsys_set_error(MLSYS_ERR_ARG, "offload plan: reserve fraction %g leaves no buffers", r);
  avail = gpu_bytes - tr->fixed_bytes;
  if (avail <= 0)
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "offload plan: %lld bytes of GPU leave nothing beside the trace's %lld fixed bytes",
                           (long long)gpu_bytes, (long long)tr->fixed_bytes);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  p->n_t = tr->n_t;
  p->n_op = tr->n_op;
  p->k = K;
  p->gpu_bytes = avail;
  p->buf_bytes = (int64_t)floor((double)avail * (1 - r) / 2);
  p->buf1_off = (p->buf_bytes + 255) & ~(int64_t)255;
  p->reserve_off = (p->buf1_off + p->buf_bytes + 255) & ~(int64_t)255;
  p->reserve_bytes = avail - p->reserve_off;
  if (p->reserve_bytes < 0) {
    mlsys_offload_facts_free(&f);
    return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "offload plan: %lld bytes of GPU are too few to align two buffers of %lld",
                           (long long)gpu_bytes, (long long)p->buf_bytes);
  }
  {
    long cap = 0;
    for (i = 0; i < tr->n_op; i++) cap += tr->op[i].n_in + tr->op[i].n_out;
    p->start = (int *)mlsys_alloc((size_t)(K + 1), sizeof(int));
    p->e0 = (int *)mlsys_alloc((size_t)(K + 1), sizeof(int));
    p->et = (int *)mlsys_alloc((size_t)(cap + 1), sizeof(int));
    p->eoff = (int64_t *)mlsys_alloc((size_t)(cap + 1), sizeof(int64_t));
    p->eflag = (unsigned char *)mlsys_calloc((size_t)cap + 1, 1);
    p->used = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    p->h2d = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    p->d2d = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    p->d2h = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    p->model_in = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    p->model_ev = (int64_t *)mlsys_calloc((size_t)K, sizeof(int64_t));
    last_blk = (int *)mlsys_alloc((size_t)(tr->n_t + 1), sizeof(int));
    last_e = (int *)mlsys_alloc((size_t)(tr->n_t + 1), sizeof(int));
    next_blk = (int *)mlsys_alloc((size_t)(tr->n_t + 1), sizeof(int));
    wrote = (int *)mlsys_alloc((size_t)(tr->n_t + 1), sizeof(int));
  }
  if (!p->start || !p->e0 || !p->et || !p->eoff || !p->eflag || !p->used || !p->h2d || !p->d2d || !p->d2h ||
      !p->model_in || !p->model_ev || !last_blk || !last_e || !next_blk || !wrote) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "offload plan: out of memory for %d ops", tr->n_op);
    goto done;
  }
  memcpy(p->start, b->start, sizeof(int) * (size_t)(K + 1));
  for (i = 0; i < tr->n_t; i++) last_blk[i] = last_e[i] = next_blk[i] = wrote[i] = -1;
  /* pass 1: T(B_j) in first-access order, offsets, how each tensor arrives, dirtiness at the block's end */
  for (j = 0, e = 0; j < K && !st; j++) {
    int a = b->start[j], z = b->start[j + 1];
    int64_t ws = 0;
    p->e0[j] = e;
    for (i = a; i < z; i++) {
      const mlsys_offload_op *op = &tr->op[i];
      if (op->workspace > 0) {
        st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "offload plan: op %d (%s) has %lld bytes of workspace; the runtime "
                             "hands out none", i, mlsys_offload_op_name(tr, i), (long long)op->workspace);
        break;
      }
      ws += op->workspace;
      for (q = 0; q < op->n_in + op->n_out; q++) {
        int t = tr->ids[op->in0 + q];
        if (q >= op->n_in) wrote[t] = j;
        if (last_blk[t] == j) continue;
        p->et[e] = t;
        p->eoff[e] = p->used[j];
        p->used[j] += mlsys__ort_round4(tr->t[t].bytes);
        if (f.first_write[t] >= a) p->eflag[e] = MLSYS_OFFLOAD_RT_NEW;
        else if (last_blk[t] == j - 1 && j > 0) {
          p->eflag[e] = MLSYS_OFFLOAD_RT_D2D;
          p->d2d[j] += tr->t[t].bytes;
        } else {
          p->eflag[e] = MLSYS_OFFLOAD_RT_H2D;
          p->h2d[j] += tr->t[t].bytes;
        }
        /* a carried tensor keeps the dirtiness it had at block j-1's end */
        if ((p->eflag[e] & MLSYS_OFFLOAD_RT_D2D) && (p->eflag[last_e[t]] & MLSYS_OFFLOAD_RT_DIRTY))
          p->eflag[e] |= MLSYS_OFFLOAD_RT_DIRTY;
        last_blk[t] = j;
        last_e[t] = e;
        e++;
      }
    }
    if (st) break;
    p->used[j] += ws;
    p->model_in[j] = p->h2d[j] + p->d2d[j];
    for (q = p->e0[j]; q < e; q++) {
      int t = p->et[q];
      if (wrote[t] == j) {
        p->eflag[q] |= MLSYS_OFFLOAD_RT_DIRTY;
        if (f.last_use[t] >= z) {
          p->eflag[q] |= MLSYS_OFFLOAD_RT_MODEL_EV;
          p->model_ev[j] += tr->t[t].bytes;
        }
      }
    }
    if (p->used[j] > p->buf_bytes) {
      st = mlsys_set_error(MLSYS_ERR_INFEASIBLE, "offload plan: block %d (ops %d..%d) needs %lld bytes, more than a "
                           "buffer of %lld (GPU %lld bytes, reserve %g)", j, a, z - 1, (long long)p->used[j],
                           (long long)p->buf_bytes, (long long)gpu_bytes, r);
      break;
    }
  }
  if (st) goto done;
  p->e0[K] = e;
  p->n_e = e;
  /* pass 2: evictions, the simulator's rule: dirty, needed after the block, and not carried into the next one */
  for (j = K - 1; j >= 0; j--) {
    int z = b->start[j + 1];
    for (q = p->e0[j]; q < p->e0[j + 1]; q++) {
      int t = p->et[q];
      int live = f.last_use[t] >= z || (keep && keep[t]);
      if ((p->eflag[q] & MLSYS_OFFLOAD_RT_DIRTY) && live && next_blk[t] != j + 1) {
        p->eflag[q] |= MLSYS_OFFLOAD_RT_EVICT;
        p->d2h[j] += tr->t[t].bytes;
      }
    }
    for (q = p->e0[j]; q < p->e0[j + 1]; q++) next_blk[p->et[q]] = j;
  }
done:
  mlsys_free(last_blk); mlsys_free(last_e); mlsys_free(next_blk); mlsys_free(wrote);
  mlsys_offload_facts_free(&f);
  if (st) mlsys_offload_rt_plan_free(p);
  return st;
}

/* Testing a mis-prediction: block j's copy of tensor t in (prefetch or carry) is dropped, so the runtime meets it
   missing and fetches it on demand. MLSYS_ERR_ARG when t is not copied into block j. */
static mlsys_status mlsys_offload_rt_plan_drop(mlsys_offload_rt_plan *p, int j, int t) {
  int q;
  if (j < 0 || j >= p->k) return mlsys_set_error(MLSYS_ERR_ARG, "plan drop: no block %d", j);
  for (q = p->e0[j]; q < p->e0[j + 1]; q++)
    if (p->et[q] == t && (p->eflag[q] & (MLSYS_OFFLOAD_RT_H2D | MLSYS_OFFLOAD_RT_D2D))) {
      p->eflag[q] |= MLSYS_OFFLOAD_RT_DROPPED;
      return MLSYS_OK;
    }
  return mlsys_set_error(MLSYS_ERR_ARG, "plan drop: block %d does not copy tensor %d in", j, t);
}

/* ================================================================================================================
   2. The runtime
   ================================================================================================================ */
typedef struct {
  int op, tensor, block;
  int64_t bytes;
  int from_device;            /* 1: its newest copy was in block k-1's buffer (D2D), 0: the arena (H2D) */
} mlsys_offload_cuda_fault;

typedef struct {
  int64_t bytes_h2d, bytes_d2h, bytes_d2d;   /* every copy of the iteration, faults included */
  int n_copies;
  int n_faults;
  int64_t fault_bytes;
  int64_t device_bytes;       /* what the runtime allocated on the device (its peak: one allocation) */
  int64_t memgetinfo_bytes;   /* the drop of cudaMemGetInfo's free memory around that allocation (granularity
                                 included: the driver maps 2 MiB pages) */
  int64_t host_bytes;         /* the pinned arena */
  double total_ms;            /* compute stream, from the iteration's first copy to its last write-back */
  double wait_ms;             /* Σ over blocks of the compute stream's wait for the prefetch and its carries */
  int n_blocks;
} mlsys_offload_cuda_stats;

#define MLSYS_OFFLOAD_CUDA_MAX_FAULT_LOG 64

typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_rt_plan *plan;  /* NULL: resident */
  int64_t *hoff;              /* [n_t] slot in the arena */
  char *host;
  int64_t host_bytes;
  char *dev;                  /* buffers 0 and 1, then the reserve; resident: every tensor's slot */
  int64_t dev_bytes, memgetinfo_bytes;
  int64_t *roff;              /* resident: [n_t] slot on the device */
  cudaStream_t sc, sh, sd;    /* compute, H2D, D2H */
  cudaEvent_t *e_end, *e_evicted, *e_pref, *e_free, *e_w0, *e_w1;   /* [k] (resident: 1) */
  cudaEvent_t e_begin, e_stop, e_fault, e_final;
  unsigned char *first_w;     /* [n_t] written before it is read in the iteration's first op that touches it */
  int *fw;                    /* [n_t] facts.first_write */
  int *lu;                    /* [n_t] facts.last_use */
  /* iteration state */
  int op, blk, running;
  int *cur_blk, *cur_e, *last_e;   /* [n_t]: the block whose entry cur_e[t] is current; the newest valid entry */
  char **eptr;                /* [n_e] where entry e's copy is (its buffer slot, or the reserve after a fault) */
  unsigned char *host_valid;  /* [n_t] the arena holds the newest value (once the D2H stream gets there) */
  unsigned char *written;     /* resident: [n_t] written in this iteration */
  int64_t res_used;
  const unsigned char *keep;
  mlsys_offload_cuda_stats st;
  mlsys_offload_cuda_fault fault_log[MLSYS_OFFLOAD_CUDA_MAX_FAULT_LOG];
  int n_fault_log;
  int flags;                  /* MLSYS_OFFLOAD_CUDA_HOST, _POISON */
} mlsys_offload_cuda;

enum {
  MLSYS_OFFLOAD_CUDA_HOST = 1,    /* no CUDA call: malloc'd "device" and arena, every copy a memcpy when issued, the
                                     kernels' CPU loops: the runtime's data flow, testable without a GPU */
  MLSYS_OFFLOAD_CUDA_POISON = 2   /* with HOST: a buffer is filled with NaN bytes before it is reused, so a read of a
                                     tensor the plan did not bring in gives NaN, not a stale right answer */
};

/* Every CUDA call of the runtime goes through this: on failure it names the call and returns MLSYS_ERR_CUDA. */
#define MLSYS__ORT_CK(call) MLSYS_CUDA_CHECK(call)

static mlsys_status mlsys__ort_record(const mlsys_offload_cuda *rt, cudaEvent_t e, cudaStream_t s) {
  if (!(rt->flags & MLSYS_OFFLOAD_CUDA_HOST)) MLSYS__ORT_CK(cudaEventRecord(e, s));
  return MLSYS_OK;
}
static mlsys_status mlsys__ort_wait(const mlsys_offload_cuda *rt, cudaStream_t s, cudaEvent_t e) {
  if (!(rt->flags & MLSYS_OFFLOAD_CUDA_HOST)) MLSYS__ORT_CK(cudaStreamWaitEvent(s, e, 0));
  return MLSYS_OK;
}
#define MLSYS__ORT_TRY(x)                 \
  do {                                    \
    mlsys_status s__ = (x);               \
    if (s__) return s__;                  \
  } while (0)

static void mlsys_offload_cuda_free(mlsys_offload_cuda *rt) {
  int j, K;
  if (!rt) return;
  K = rt->plan ? rt->plan->k : 1;
  if (rt->flags & MLSYS_OFFLOAD_CUDA_HOST) {
    mlsys_free(rt->dev);
    mlsys_free(rt->host);
    rt->dev = rt->host = NULL;
  } else {
    cudaDeviceSynchronize();   /* nothing may still copy into what is freed below; an error here is not ours to report */
  }
  cudaEvent_t *evs[6] = {rt->e_end, rt->e_evicted, rt->e_pref, rt->e_free, rt->e_w0, rt->e_w1};
  for (int a = 0; a < 6; a++)
    if (evs[a]) {
      for (j = 0; j < K; j++)
        if (evs[a][j]) cudaEventDestroy(evs[a][j]);
      mlsys_free(evs[a]);
    }
  if (rt->e_begin) cudaEventDestroy(rt->e_begin);
  if (rt->e_stop) cudaEventDestroy(rt->e_stop);
  if (rt->e_fault) cudaEventDestroy(rt->e_fault);
  if (rt->e_final) cudaEventDestroy(rt->e_final);
  if (rt->sc) cudaStreamDestroy(rt->sc);
  if (rt->sh) cudaStreamDestroy(rt->sh);
  if (rt->sd) cudaStreamDestroy(rt->sd);
  if (rt->dev) cudaFree(rt->dev);
  if (rt->host) cudaFreeHost(rt->host);
  mlsys_free(rt->hoff); mlsys_free(rt->roff); mlsys_free(rt->first_w); mlsys_free(rt->fw); mlsys_free(rt->lu); mlsys_free(rt->cur_blk); mlsys_free(rt->cur_e);
  mlsys_free(rt->last_e); mlsys_free(rt->eptr); mlsys_free(rt->host_valid); mlsys_free(rt->written);
  mlsys_free(rt);
}

/* A runtime for trace tr: offloaded by plan (kept by pointer: it must outlive the runtime), or resident when plan
   is NULL. keep as in mlsys_offload_rt_plan_build (the same array for both, or NULL). Allocates the pinned arena
   (every tensor a slot; MLSYS_ERR_CUDA naming cudaHostAlloc when pinning fails: no pageable fallback, which would
   make every copy synchronous), the device memory (plan->gpu_bytes, or every tensor's bytes when resident), the
   streams and the events. */
static mlsys_status mlsys_offload_cuda_create(const mlsys_offload_trace *tr, const mlsys_offload_rt_plan *plan,
                                              const unsigned char *keep, int flags, mlsys_offload_cuda **out) {
  mlsys_offload_cuda *rt;
  mlsys_offload_facts f;
  mlsys_status st = MLSYS_OK;
  int i, K = plan ? plan->k : 1;
  cudaError_t ce;
  *out = NULL;
  if (!tr) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: no trace");
  if (plan && (plan->n_t != tr->n_t || plan->n_op != tr->n_op))
    return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: the plan is for %d ops and %d tensors, the trace has %d and %d",
                           plan->n_op, plan->n_t, tr->n_op, tr->n_t);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if (!(rt = (mlsys_offload_cuda *)mlsys_calloc(1, sizeof *rt))) {
    mlsys_offload_facts_free(&f);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "offload runtime: out of memory");
  }
  rt->tr = tr;
  rt->plan = plan;
  rt->keep = keep;
  rt->flags = flags;
  size_t nt = (size_t)tr->n_t + 1, ne = plan ? (size_t)plan->n_e + 1 : 1;
  rt->hoff = (int64_t *)mlsys_alloc(nt, sizeof(int64_t));
  rt->roff = (int64_t *)mlsys_alloc(nt, sizeof(int64_t));
  rt->fw = (int *)mlsys_alloc(nt, sizeof(int));
  rt->lu = (int *)mlsys_alloc(nt, sizeof(int));
  rt->cur_blk = (int *)mlsys_alloc(nt, sizeof(int));
  rt->cur_e = (int *)mlsys_alloc(nt, sizeof(int));
  rt->last_e = (int *)mlsys_alloc(nt, sizeof(int));
  rt->host_valid = (unsigned char *)mlsys_calloc(nt, 1);
  rt->written = (unsigned char *)mlsys_calloc(nt, 1);
  rt->eptr = (char **)mlsys_calloc(ne, sizeof(char *));
  cudaEvent_t **evs[6] = {&rt->e_end, &rt->e_evicted, &rt->e_pref, &rt->e_free, &rt->e_w0, &rt->e_w1};
  for (int a = 0; a < 6; a++) *evs[a] = (cudaEvent_t *)mlsys_calloc((size_t)K, sizeof(cudaEvent_t));
  if (!rt->hoff || !rt->roff || !rt->fw || !rt->lu || !rt->cur_blk || !rt->cur_e || !rt->last_e || !rt->host_valid ||
      !rt->written || !rt->eptr || !rt->e_end || !rt->e_evicted || !rt->e_pref || !rt->e_free || !rt->e_w0 || !rt->e_w1) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "offload runtime: out of memory for %d tensors", tr->n_t);
    goto fail;
  }
  for (i = 0; i < tr->n_t; i++) {
    rt->hoff[i] = rt->host_bytes;
    rt->roff[i] = rt->host_bytes;   /* resident: the device allocation mirrors the arena */
    rt->host_bytes += (tr->t[i].bytes + 255) & ~(int64_t)255;
    rt->fw[i] = f.first_write[i];
    rt->lu[i] = f.last_use[i];
  }
  if (flags & MLSYS_OFFLOAD_CUDA_HOST) {
    rt->dev_bytes = plan ? plan->gpu_bytes : rt->host_bytes;
    rt->host = (char *)mlsys_calloc((size_t)(rt->host_bytes > 0 ? rt->host_bytes : 256), 1);
    rt->dev = (char *)mlsys_alloc((size_t)(rt->dev_bytes > 0 ? rt->dev_bytes : 256), 1);
    if (!rt->host || !rt->dev) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "offload runtime: out of memory for the emulated arena and device");
      goto fail;
    }
    memset(rt->dev, 0xff, (size_t)rt->dev_bytes);
    mlsys_offload_facts_free(&f);
    *out = rt;
    return MLSYS_OK;
  }
  if ((ce = cudaHostAlloc((void **)&rt->host, (size_t)(rt->host_bytes > 0 ? rt->host_bytes : 256), cudaHostAllocPortable)) != cudaSuccess) {
    rt->host = NULL;
    cudaGetLastError();
    st = mlsys_set_error(MLSYS_ERR_CUDA, "offload runtime: cudaHostAlloc of a %lld-byte pinned arena failed: %s",
                         (long long)rt->host_bytes, cudaGetErrorString(ce));
    goto fail;
  }
  memset(rt->host, 0, (size_t)rt->host_bytes);
  if ((ce = cudaStreamCreateWithFlags(&rt->sc, cudaStreamNonBlocking)) != cudaSuccess ||
      (ce = cudaStreamCreateWithFlags(&rt->sh, cudaStreamNonBlocking)) != cudaSuccess ||
      (ce = cudaStreamCreateWithFlags(&rt->sd, cudaStreamNonBlocking)) != cudaSuccess ||
      (ce = cudaEventCreate(&rt->e_begin)) != cudaSuccess || (ce = cudaEventCreate(&rt->e_stop)) != cudaSuccess ||
      (ce = cudaEventCreateWithFlags(&rt->e_fault, cudaEventDisableTiming)) != cudaSuccess ||
      (ce = cudaEventCreateWithFlags(&rt->e_final, cudaEventDisableTiming)) != cudaSuccess) {
    st = mlsys_set_error(MLSYS_ERR_CUDA, "offload runtime: creating streams and events: %s", cudaGetErrorString(ce));
    goto fail;
  }
  for (int j = 0; j < K && !st; j++)
    for (int a = 0; a < 6; a++)
      if ((ce = cudaEventCreateWithFlags(&(*evs[a])[j], a >= 4 ? cudaEventDefault : cudaEventDisableTiming)) != cudaSuccess) {
        st = mlsys_set_error(MLSYS_ERR_CUDA, "offload runtime: creating the events of block %d: %s", j, cudaGetErrorString(ce));
        break;
      }
  if (st) goto fail;
  {
    size_t fr0 = 0, fr1 = 0, total = 0;
    rt->dev_bytes = plan ? plan->gpu_bytes : rt->host_bytes;
    if ((ce = cudaMemGetInfo(&fr0, &total)) != cudaSuccess ||
        (ce = cudaMalloc((void **)&rt->dev, (size_t)(rt->dev_bytes > 0 ? rt->dev_bytes : 256))) != cudaSuccess ||
        (ce = cudaMemGetInfo(&fr1, &total)) != cudaSuccess) {
      st = mlsys_set_error(MLSYS_ERR_CUDA, "offload runtime: cudaMalloc of %lld bytes: %s", (long long)rt->dev_bytes,
                           cudaGetErrorString(ce));
      goto fail;
    }
    rt->memgetinfo_bytes = (int64_t)fr0 - (int64_t)fr1;
  }
  mlsys_offload_facts_free(&f);
  *out = rt;
  return MLSYS_OK;
fail:
  mlsys_offload_facts_free(&f);
  mlsys_offload_cuda_free(rt);
  return st;
}

/* The tensor's slot in the pinned arena: fill inputs and weights before an iteration, read results after. */
static void *mlsys_offload_cuda_host(mlsys_offload_cuda *rt, int t) {
  return t >= 0 && t < rt->tr->n_t ? rt->host + rt->hoff[t] : NULL;
}
/* The stream the caller launches its kernels on. */
static cudaStream_t mlsys_offload_cuda_stream(const mlsys_offload_cuda *rt) { return rt->sc; }
static const mlsys_offload_cuda_fault *mlsys_offload_cuda_faults(const mlsys_offload_cuda *rt, int *n) {
  *n = rt->n_fault_log;
  return rt->fault_log;
}

static mlsys_status mlsys__ort_copy(mlsys_offload_cuda *rt, void *dst, const void *src, int64_t bytes,
                                    cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes <= 0) return MLSYS_OK;
  if (rt->flags & MLSYS_OFFLOAD_CUDA_HOST) memcpy(dst, src, (size_t)bytes);
  else MLSYS__ORT_CK(cudaMemcpyAsync(dst, src, (size_t)bytes, kind, s));
  rt->st.n_copies++;
  if (kind == cudaMemcpyHostToDevice) rt->st.bytes_h2d += bytes;
  else if (kind == cudaMemcpyDeviceToHost) rt->st.bytes_d2h += bytes;
  else rt->st.bytes_d2d += bytes;
  return MLSYS_OK;
}

/* Block j becomes current: its prefetch on the H2D stream (after block j-2's evictions and block j-1's carries out
   of the same buffer), then, on the compute stream, the wait for it and the carries from block j-1. */
static mlsys_status mlsys__ort_start_block(mlsys_offload_cuda *rt, int j) {
  const mlsys_offload_rt_plan *p = rt->plan;
  const mlsys_offload_trace *tr = rt->tr;
  char *buf = rt->dev + (j % 2 ? p->buf1_off : 0);
  mlsys_status st;
  int q;
  if ((rt->flags & MLSYS_OFFLOAD_CUDA_HOST) && (rt->flags & MLSYS_OFFLOAD_CUDA_POISON)) memset(buf, 0xff, (size_t)p->buf_bytes);
  if (j >= 2) {
    MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sh, rt->e_evicted[j - 2]));
    MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sh, rt->e_free[j - 1]));
  }
  for (q = p->e0[j]; q < p->e0[j + 1]; q++) {
    int t = p->et[q];
    rt->eptr[q] = buf + p->eoff[q];
    rt->cur_blk[t] = j;
    rt->cur_e[t] = q;
    if ((p->eflag[q] & MLSYS_OFFLOAD_RT_DROPPED) || !(p->eflag[q] & MLSYS_OFFLOAD_RT_H2D)) continue;
    if (!rt->host_valid[t])
      return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: block %d prefetches tensor %d, whose newest copy is "
                             "not in the arena (the plan does not match the trace)", j, t);
    if ((st = mlsys__ort_copy(rt, rt->eptr[q], rt->host + rt->hoff[t], tr->t[t].bytes, cudaMemcpyHostToDevice, rt->sh))) return st;
  }
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_pref[j], rt->sh));
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_w0[j], rt->sc));
  MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sc, rt->e_pref[j]));
  for (q = p->e0[j]; q < p->e0[j + 1]; q++) {
    int t = p->et[q];
    if (!(p->eflag[q] & MLSYS_OFFLOAD_RT_D2D) || (p->eflag[q] & MLSYS_OFFLOAD_RT_DROPPED)) continue;
    if (rt->last_e[t] < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: block %d carries tensor %d, which block %d does not hold", j, t, j - 1);
    if ((st = mlsys__ort_copy(rt, rt->eptr[q], rt->eptr[rt->last_e[t]], tr->t[t].bytes, cudaMemcpyDeviceToDevice, rt->sc))) return st;
  }
  for (q = p->e0[j]; q < p->e0[j + 1]; q++)
    if (!(p->eflag[q] & MLSYS_OFFLOAD_RT_DROPPED)) rt->last_e[p->et[q]] = q;
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_w1[j], rt->sc));
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_free[j], rt->sc));   /* re-recorded after any on-demand read of buffer (j-1)%2 */
  rt->blk = j;
  return MLSYS_OK;
}

/* Block j's evictions on the D2H stream once its kernels are done; E_evicted[j]. */
static mlsys_status mlsys__ort_evict_block(mlsys_offload_cuda *rt, int j) {
  const mlsys_offload_rt_plan *p = rt->plan;
  mlsys_status st;
  int q;
  MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sd, rt->e_end[j]));
  for (q = p->e0[j]; q < p->e0[j + 1]; q++) {
    int t = p->et[q];
    if (!(p->eflag[q] & MLSYS_OFFLOAD_RT_EVICT)) continue;
    if ((st = mlsys__ort_copy(rt, rt->host + rt->hoff[t], rt->eptr[q], rt->tr->t[t].bytes, cudaMemcpyDeviceToHost, rt->sd))) return st;
    rt->host_valid[t] = 1;
  }
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_evicted[j], rt->sd));
  return MLSYS_OK;
}

/* Start an iteration: the op counter at 0, block 0's tensors in (resident: every tensor the trace reads before
   writing it). The arena must hold the inputs and weights. */
static mlsys_status mlsys_offload_cuda_begin(mlsys_offload_cuda *rt) {
  const mlsys_offload_trace *tr = rt->tr;
  int i;
  if (rt->running) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: begin inside an iteration");
  if (tr->n_op < 1) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: the trace has no ops");
  memset(&rt->st, 0, sizeof rt->st);
  rt->n_fault_log = 0;
  rt->op = 0;
  rt->res_used = 0;
  rt->st.device_bytes = rt->dev_bytes;
  rt->st.memgetinfo_bytes = rt->memgetinfo_bytes;
  rt->st.host_bytes = rt->host_bytes;
  rt->st.n_blocks = rt->plan ? rt->plan->k : 1;
  for (i = 0; i < tr->n_t; i++) {
    rt->host_valid[i] = 1;   /* the caller filled the arena */
    rt->cur_blk[i] = -1;
    rt->cur_e[i] = rt->last_e[i] = -1;
    rt->written[i] = 0;
  }
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_begin, rt->sc));
  MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sh, rt->e_begin));
  rt->running = 1;
  if (rt->plan) return mlsys__ort_start_block(rt, 0);
  for (i = 0; i < tr->n_t; i++)
    if (rt->fw[i] < 0 && rt->lu[i] >= 0) {
      mlsys_status st = mlsys__ort_copy(rt, rt->dev + rt->roff[i], rt->host + rt->hoff[i], tr->t[i].bytes, cudaMemcpyHostToDevice, rt->sh);
      if (st) return st;
    }
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_pref[0], rt->sh));
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_w0[0], rt->sc));
  MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sc, rt->e_pref[0]));
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_w1[0], rt->sc));
  return MLSYS_OK;
}

/* The device pointer of tensor t for the current op, which must read it (writes = 0) or write it (writes = 1) in
   the trace: anything else is MLSYS_ERR_ARG (the driver and its trace disagree). A tensor the plan did not bring in
   is fetched now into the reserve: over PCIe from the arena, or on the GPU from block k-1's buffer when that holds
   the newest copy; the compute stream waits for it; n_faults counts it. */
static mlsys_status mlsys_offload_cuda_acquire(mlsys_offload_cuda *rt, int t, int writes, void **dev) {
  const mlsys_offload_trace *tr = rt->tr;
  const mlsys_offload_rt_plan *p = rt->plan;
  const mlsys_offload_op *op;
  int q, ok = 0, e;
  *dev = NULL;
  if (!rt->running || rt->op >= tr->n_op) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: acquire outside an iteration");
  op = &tr->op[rt->op];
  for (q = writes ? op->n_in : 0; q < (writes ? op->n_in + op->n_out : op->n_in) && !ok; q++) ok = tr->ids[op->in0 + q] == t;
  if (!ok)
    return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: op %d (%s) does not %s tensor %d in the trace", rt->op,
                           mlsys_offload_op_name(tr, rt->op), writes ? "write" : "read", t);
  if (!p) {
    if (writes) rt->written[t] = 1;
    *dev = rt->dev + rt->roff[t];
    return MLSYS_OK;
  }
  if (rt->cur_blk[t] != rt->blk)
    return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: tensor %d is not in block %d's plan", t, rt->blk);
  e = rt->cur_e[t];
  if (rt->last_e[t] != e) {   /* dropped from the plan: fetch on demand */
    int64_t bytes = tr->t[t].bytes, at = mlsys__ort_round4(rt->res_used);
    int from_dev = !rt->host_valid[t];
    mlsys_status st;
    if (at + bytes > p->reserve_bytes)
      return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "offload runtime: op %d misses tensor %d (%lld bytes) and the reserve "
                             "(%lld bytes, %lld used) cannot take it", rt->op, t, (long long)bytes,
                             (long long)p->reserve_bytes, (long long)rt->res_used);
    rt->eptr[e] = rt->dev + p->reserve_off + at;
    rt->res_used = at + bytes;
    if (from_dev) {
      if (rt->last_e[t] < 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: tensor %d is missing from block %d and has no copy anywhere", t, rt->blk);
      if ((st = mlsys__ort_copy(rt, rt->eptr[e], rt->eptr[rt->last_e[t]], bytes, cudaMemcpyDeviceToDevice, rt->sc))) return st;
      MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_free[rt->blk], rt->sc));
    } else {
      /* the H2D stream already waited for every eviction that made the arena's copy the newest */
      if ((st = mlsys__ort_copy(rt, rt->eptr[e], rt->host + rt->hoff[t], bytes, cudaMemcpyHostToDevice, rt->sh))) return st;
      MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_fault, rt->sh));
      MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sc, rt->e_fault));
    }
    rt->last_e[t] = e;
    rt->st.n_faults++;
    rt->st.fault_bytes += bytes;
    if (rt->n_fault_log < MLSYS_OFFLOAD_CUDA_MAX_FAULT_LOG) {
      mlsys_offload_cuda_fault *lg = &rt->fault_log[rt->n_fault_log++];
      lg->op = rt->op; lg->tensor = t; lg->block = rt->blk; lg->bytes = bytes; lg->from_device = from_dev;
    }
  }
  if (writes) rt->host_valid[t] = 0;
  *dev = rt->eptr[e];
  if ((uintptr_t)*dev & 3) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: tensor %d would sit at a misaligned address", t);
  return MLSYS_OK;
}

/* The current op is launched. At the end of block k: E_end[k], block k-1's evictions, block k+1's prefetch and
   carries (spec §3.6 pseudocode). */
static mlsys_status mlsys_offload_cuda_op_done(mlsys_offload_cuda *rt) {
  const mlsys_offload_rt_plan *p = rt->plan;
  mlsys_status st;
  int k;
  if (!rt->running || rt->op >= rt->tr->n_op) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: op_done outside an iteration");
  if (!(rt->flags & MLSYS_OFFLOAD_CUDA_HOST)) MLSYS__ORT_CK(cudaGetLastError());   /* the launch the caller just made */
  rt->op++;
  if (!p || rt->op != p->start[rt->blk + 1]) return MLSYS_OK;
  k = rt->blk;
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_end[k], rt->sc));
  if (k >= 1 && (st = mlsys__ort_evict_block(rt, k - 1))) return st;
  if (k + 1 < p->k) return mlsys__ort_start_block(rt, k + 1);
  return MLSYS_OK;
}

/* End the iteration: the last blocks' evictions (weights after SGD, kept results) into the arena, every stream
   synchronised, the stats. */
static mlsys_status mlsys_offload_cuda_end(mlsys_offload_cuda *rt, mlsys_offload_cuda_stats *out) {
  const mlsys_offload_trace *tr = rt->tr;
  const mlsys_offload_rt_plan *p = rt->plan;
  mlsys_status st;
  float ms;
  int i, K = p ? p->k : 1;
  if (!rt->running) return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: end without begin");
  rt->running = 0;
  if (rt->op != tr->n_op)
    return mlsys_set_error(MLSYS_ERR_ARG, "offload runtime: the iteration ended after %d of %d ops", rt->op, tr->n_op);
  if (p) {
    if ((st = mlsys__ort_evict_block(rt, K - 1))) return st;
    MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_final, rt->sd));
  } else {
    MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_end[0], rt->sc));
    MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sd, rt->e_end[0]));
    for (i = 0; i < tr->n_t; i++)
      if (rt->written[i] && (rt->lu[i] >= tr->n_op || (rt->keep && rt->keep[i]))) {
        if ((st = mlsys__ort_copy(rt, rt->host + rt->hoff[i], rt->dev + rt->roff[i], tr->t[i].bytes, cudaMemcpyDeviceToHost, rt->sd))) return st;
      }
    MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_final, rt->sd));
  }
  MLSYS__ORT_TRY(mlsys__ort_wait(rt, rt->sc, rt->e_final));
  MLSYS__ORT_TRY(mlsys__ort_record(rt, rt->e_stop, rt->sc));
  if (!(rt->flags & MLSYS_OFFLOAD_CUDA_HOST)) {
    MLSYS__ORT_CK(cudaStreamSynchronize(rt->sd));
    MLSYS__ORT_CK(cudaStreamSynchronize(rt->sh));
    MLSYS__ORT_CK(cudaStreamSynchronize(rt->sc));
    MLSYS__ORT_CK(cudaEventElapsedTime(&ms, rt->e_begin, rt->e_stop));
    rt->st.total_ms = ms;
    for (i = 0; i < K; i++) {
      MLSYS__ORT_CK(cudaEventElapsedTime(&ms, rt->e_w0[i], rt->e_w1[i]));
      rt->st.wait_ms += ms;
    }
  }
  if (out) *out = rt->st;
  return MLSYS_OK;
}

/* Pinned-memory bandwidth each way (GB/s, a `bytes` copy timed with events after a warm-up) and the latency of a
   4-byte copy (µs, mean of 50): what mlsys_offload_hw needs for the simulator. */
static mlsys_status mlsys_offload_cuda_calibrate(int64_t bytes, double *h2d_gbps, double *d2h_gbps, double *lat_us) {
  void *h = NULL, *d = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t a = NULL, b = NULL;
  float ms = 0;
  mlsys_status st = MLSYS_OK;
  cudaError_t ce;
#define MLSYS__ORT_CAL(call)                                                                             \
  if ((ce = (call)) != cudaSuccess) {                                                                    \
    st = mlsys_set_error(MLSYS_ERR_CUDA, "calibration: %s: %s", #call, cudaGetErrorString(ce));          \
    goto done;                                                                                           \
  }
  MLSYS__ORT_CAL(cudaHostAlloc(&h, (size_t)bytes, cudaHostAllocPortable));
  MLSYS__ORT_CAL(cudaMalloc(&d, (size_t)bytes));
  MLSYS__ORT_CAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  MLSYS__ORT_CAL(cudaEventCreate(&a));
  MLSYS__ORT_CAL(cudaEventCreate(&b));
  memset(h, 1, (size_t)bytes);
  MLSYS__ORT_CAL(cudaMemcpyAsync(d, h, (size_t)bytes, cudaMemcpyHostToDevice, s));   /* warm-up */
  MLSYS__ORT_CAL(cudaEventRecord(a, s));
  MLSYS__ORT_CAL(cudaMemcpyAsync(d, h, (size_t)bytes, cudaMemcpyHostToDevice, s));
  MLSYS__ORT_CAL(cudaEventRecord(b, s));
  MLSYS__ORT_CAL(cudaEventSynchronize(b));
  MLSYS__ORT_CAL(cudaEventElapsedTime(&ms, a, b));
  *h2d_gbps = (double)bytes / (ms * 1e6);
  MLSYS__ORT_CAL(cudaMemcpyAsync(h, d, (size_t)bytes, cudaMemcpyDeviceToHost, s));
  MLSYS__ORT_CAL(cudaEventRecord(a, s));
  MLSYS__ORT_CAL(cudaMemcpyAsync(h, d, (size_t)bytes, cudaMemcpyDeviceToHost, s));
  MLSYS__ORT_CAL(cudaEventRecord(b, s));
  MLSYS__ORT_CAL(cudaEventSynchronize(b));
  MLSYS__ORT_CAL(cudaEventElapsedTime(&ms, a, b));
  *d2h_gbps = (double)bytes / (ms * 1e6);
  MLSYS__ORT_CAL(cudaEventRecord(a, s));
  for (int i = 0; i < 50; i++) MLSYS__ORT_CAL(cudaMemcpyAsync(d, h, 4, cudaMemcpyHostToDevice, s));
  MLSYS__ORT_CAL(cudaEventRecord(b, s));
  MLSYS__ORT_CAL(cudaEventSynchronize(b));
  MLSYS__ORT_CAL(cudaEventElapsedTime(&ms, a, b));
  *lat_us = ms * 1e3 / 50;
done:
#undef MLSYS__ORT_CAL
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (s) cudaStreamDestroy(s);
  if (d) cudaFree(d);
  if (h) cudaFreeHost(h);
  return st;
}

/* ================================================================================================================
   3. The child-sum Tree-LSTM: kernels (each a functor run on the GPU or looped on the CPU), the driver
   ================================================================================================================ */
#define MLSYS_OFFLOAD_CUDA_TL_MAXK 32       /* children of one node (link-grammar trees: 11 at most) */
#define MLSYS_OFFLOAD_CUDA_TL_MAXT 64       /* trees in a batch (the generator folds the loss past 64; we do not) */
#define MLSYS_OFFLOAD_CUDA_TL_CLASSES 5

#ifdef __CUDA_ARCH__
#define MLSYS__OTL_MUL(a, b) __fmul_rn(a, b)
#define MLSYS__OTL_ADD(a, b) __fadd_rn(a, b)
#define MLSYS__OTL_SUB(a, b) __fsub_rn(a, b)
#define MLSYS__OTL_DIV(a, b) __fdiv_rn(a, b)
#else
#define MLSYS__OTL_MUL(a, b) ((float)(a) * (float)(b))
#define MLSYS__OTL_ADD(a, b) ((float)(a) + (float)(b))
#define MLSYS__OTL_SUB(a, b) ((float)(a) - (float)(b))
#define MLSYS__OTL_DIV(a, b) ((float)(a) / (float)(b))
#endif
__host__ __device__ static inline float mlsys__otl_sigmoid(float x) {
  return MLSYS__OTL_DIV(1.0f, MLSYS__OTL_ADD(1.0f, expf(-x)));
}
/* acc ? dst + v : v (a gradient op that accumulates into an existing gradient, or creates it) */
__host__ __device__ static inline void mlsys__otl_put(float *dst, int acc, float v) { *dst = acc ? MLSYS__OTL_ADD(*dst, v) : v; }

/* MatMul: y[r] = Σ_j W[r][j] x[j], W row-major [R][C]; one thread per r */
struct mlsys__otl_matvec {
  float *y; const float *W, *x; int R, C;
  __host__ __device__ void operator()(int r) const {
    float a = 0.0f;
    for (int j = 0; j < C; j++) a = MLSYS__OTL_ADD(a, MLSYS__OTL_MUL(W[(size_t)r * C + j], x[j]));
    y[r] = a;
  }
};
/* MatMulBackward: gW[r][j] (+)= gy[r] x[j] (threads t < R·C), gx[j] (+)= Σ_r W[r][j] gy[r] (threads t < C);
   either output may be NULL (an INPUT has no gradient) */
struct mlsys__otl_matvec_bwd {
  float *gx, *gW; int acc_x, acc_W; const float *gy, *W, *x; int R, C;
  __host__ __device__ void operator()(int t) const {
    if (gW && t < R * C) mlsys__otl_put(&gW[t], acc_W, MLSYS__OTL_MUL(gy[t / C], x[t % C]));
    if (gx && t < C) {
      float a = 0.0f;
      for (int r = 0; r < R; r++) a = MLSYS__OTL_ADD(a, MLSYS__OTL_MUL(W[(size_t)r * C + t], gy[r]));
      mlsys__otl_put(&gx[t], acc_x, a);
    }
  }
};
/* ReduceSum: y = Σ_k x_k in k order; one thread per element */
struct mlsys__otl_sum {
  float *y; const float *x[MLSYS_OFFLOAD_CUDA_TL_MAXK]; int nk;
  __host__ __device__ void operator()(int m) const {
    float a = 0.0f;
    for (int k = 0; k < nk; k++) a = MLSYS__OTL_ADD(a, x[k][m]);
    y[m] = a;
  }
};
/* ReduceSumBackward: gx_k (+)= gy */
struct mlsys__otl_sum_bwd {
  float *gx[MLSYS_OFFLOAD_CUDA_TL_MAXK]; unsigned char acc[MLSYS_OFFLOAD_CUDA_TL_MAXK]; const float *gy; int nk;
  __host__ __device__ void operator()(int m) const {
    for (int k = 0; k < nk; k++)
      if (gx[k]) mlsys__otl_put(&gx[k][m], acc[k], gy[m]);
  }
};
/* LSTMCell: c = σ(i)·tanh(u) + Σ_k σ(f_k)·c_k, iou = [i; o; u] of H each */
struct mlsys__otl_cell {
  float *c; const float *iou; const float *f[MLSYS_OFFLOAD_CUDA_TL_MAXK], *cc[MLSYS_OFFLOAD_CUDA_TL_MAXK]; int nk, H;
  __host__ __device__ void operator()(int m) const {
    float a = MLSYS__OTL_MUL(mlsys__otl_sigmoid(iou[m]), tanhf(iou[2 * H + m]));
    for (int k = 0; k < nk; k++) a = MLSYS__OTL_ADD(a, MLSYS__OTL_MUL(mlsys__otl_sigmoid(f[k][m]), cc[k][m]));
    c[m] = a;
  }
};
/* LSTMCellBackward: giou's i and u parts (+)= gc·∂c (its o part: kept, or 0 when created), gf_k (+)= gc·c_k·σ'(f_k),
   gc_k (+)= gc·σ(f_k) */
struct mlsys__otl_cell_bwd {
  float *giou; int acc_iou; const float *gc, *iou;
  const float *f[MLSYS_OFFLOAD_CUDA_TL_MAXK], *cc[MLSYS_OFFLOAD_CUDA_TL_MAXK];
  float *gf[MLSYS_OFFLOAD_CUDA_TL_MAXK], *gcc[MLSYS_OFFLOAD_CUDA_TL_MAXK];
  unsigned char acc_f[MLSYS_OFFLOAD_CUDA_TL_MAXK], acc_c[MLSYS_OFFLOAD_CUDA_TL_MAXK];
  int nk, H;
  __host__ __device__ void operator()(int m) const {
    float g = gc[m], si = mlsys__otl_sigmoid(iou[m]), tu = tanhf(iou[2 * H + m]);
    float gi = MLSYS__OTL_MUL(MLSYS__OTL_MUL(g, tu), MLSYS__OTL_MUL(si, MLSYS__OTL_SUB(1.0f, si)));
    float gu = MLSYS__OTL_MUL(MLSYS__OTL_MUL(g, si), MLSYS__OTL_SUB(1.0f, MLSYS__OTL_MUL(tu, tu)));
    if (giou) {
      mlsys__otl_put(&giou[m], acc_iou, gi);
      if (!acc_iou) giou[H + m] = 0.0f;
      mlsys__otl_put(&giou[2 * H + m], acc_iou, gu);
    }
    for (int k = 0; k < nk; k++) {
      float sf = mlsys__otl_sigmoid(f[k][m]);
      if (gf[k]) mlsys__otl_put(&gf[k][m], acc_f[k], MLSYS__OTL_MUL(MLSYS__OTL_MUL(g, cc[k][m]), MLSYS__OTL_MUL(sf, MLSYS__OTL_SUB(1.0f, sf))));
      if (gcc[k]) mlsys__otl_put(&gcc[k][m], acc_c[k], MLSYS__OTL_MUL(g, sf));
    }
  }
};
/* Tanh (the cell's output gate): h = σ(o)·tanh(c) */
struct mlsys__otl_hout {
  float *h; const float *c, *iou; int H;
  __host__ __device__ void operator()(int m) const { h[m] = MLSYS__OTL_MUL(mlsys__otl_sigmoid(iou[H + m]), tanhf(c[m])); }
};
/* TanhBackward: gc (+)= gh·σ(o)·(1 − tanh²c); giou's o part (+)= gh·tanh(c)·σ'(o) (its i and u parts: kept, or 0) */
struct mlsys__otl_hout_bwd {
  float *gc, *giou; int acc_c, acc_iou; const float *gh, *c, *iou; int H;
  __host__ __device__ void operator()(int m) const {
    float so = mlsys__otl_sigmoid(iou[H + m]), tc = tanhf(c[m]), g = gh[m];
    if (gc) mlsys__otl_put(&gc[m], acc_c, MLSYS__OTL_MUL(MLSYS__OTL_MUL(g, so), MLSYS__OTL_SUB(1.0f, MLSYS__OTL_MUL(tc, tc))));
    if (giou) {
      if (!acc_iou) giou[m] = giou[2 * H + m] = 0.0f;
      mlsys__otl_put(&giou[H + m], acc_iou, MLSYS__OTL_MUL(MLSYS__OTL_MUL(g, tc), MLSYS__OTL_MUL(so, MLSYS__OTL_SUB(1.0f, so))));
    }
  }
};
/* Softmax (the loss): mean over the batch of log Σ_c e^{z_c} − z_y; one thread */
struct mlsys__otl_loss {
  float *loss; const float *z[MLSYS_OFFLOAD_CUDA_TL_MAXT]; int y[MLSYS_OFFLOAD_CUDA_TL_MAXT]; int nl, C;
  __host__ __device__ void operator()(int) const {
    float total = 0.0f;
    for (int s = 0; s < nl; s++) {
      float mx = z[s][0], se = 0.0f;
      for (int c = 1; c < C; c++) mx = z[s][c] > mx ? z[s][c] : mx;
      for (int c = 0; c < C; c++) se = MLSYS__OTL_ADD(se, expf(MLSYS__OTL_SUB(z[s][c], mx)));
      total = MLSYS__OTL_ADD(total, MLSYS__OTL_SUB(MLSYS__OTL_ADD(logf(se), mx), z[s][y[s]]));
    }
    loss[0] = MLSYS__OTL_DIV(total, (float)nl);
  }
};
/* SoftmaxBackward: gz_s (+)= (softmax(z_s) − onehot(y_s)) / nl; one thread per tree */
struct mlsys__otl_loss_bwd {
  float *gz[MLSYS_OFFLOAD_CUDA_TL_MAXT]; unsigned char acc[MLSYS_OFFLOAD_CUDA_TL_MAXT];
  const float *z[MLSYS_OFFLOAD_CUDA_TL_MAXT]; int y[MLSYS_OFFLOAD_CUDA_TL_MAXT]; int nl, C;
  __host__ __device__ void operator()(int s) const {
    float mx = z[s][0], se = 0.0f;
    if (!gz[s]) return;
    for (int c = 1; c < C; c++) mx = z[s][c] > mx ? z[s][c] : mx;
    for (int c = 0; c < C; c++) se = MLSYS__OTL_ADD(se, expf(MLSYS__OTL_SUB(z[s][c], mx)));
    for (int c = 0; c < C; c++) {
      float pc = MLSYS__OTL_DIV(expf(MLSYS__OTL_SUB(z[s][c], mx)), se);
      mlsys__otl_put(&gz[s][c], acc[s], MLSYS__OTL_DIV(MLSYS__OTL_SUB(pc, c == y[s] ? 1.0f : 0.0f), (float)nl));
    }
  }
};
/* SGD: w −= lr·g */
struct mlsys__otl_sgd {
  float *w; const float *g; float lr;
  __host__ __device__ void operator()(int t) const { w[t] = MLSYS__OTL_SUB(w[t], MLSYS__OTL_MUL(lr, g[t])); }
};

template <typename F> __global__ static void mlsys__otl_kernel(const F f, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) f(t);
}
/* f over t in [0, n): a kernel on stream s (gpu), or a loop (the CPU reference). */
template <typename F> static mlsys_status mlsys__otl_for(int gpu, cudaStream_t s, int n, const F &f) {
  if (!gpu) {
    for (int t = 0; t < n; t++) f(t);
    return MLSYS_OK;
  }
  mlsys__otl_kernel<F><<<mlsys_cuda_blocks((size_t)n, 128), 128, 0, s>>>(f, n);
  MLSYS_CUDA_CHECK(cudaGetLastError());
  return MLSYS_OK;
}

/* ---- the driver: the op list and its trace, built together ---- */
enum {
  MLSYS_OFFLOAD_CUDA_TL_MATMUL, MLSYS_OFFLOAD_CUDA_TL_CELL, MLSYS_OFFLOAD_CUDA_TL_HOUT, MLSYS_OFFLOAD_CUDA_TL_SUM, MLSYS_OFFLOAD_CUDA_TL_LOSS,
  MLSYS_OFFLOAD_CUDA_TL_BWD,       /* the gradient op of op[fwd] */
  MLSYS_OFFLOAD_CUDA_TL_SGD
};
static const char *const mlsys__otl_name[] = {"MatMul", "LSTMCell", "Tanh", "ReduceSum", "Softmax"};

typedef struct {
  int kind;                   /* MLSYS_OFFLOAD_CUDA_TL_* */
  int fwd;                    /* BWD: the forward op (index into op[]) */
  int y;                      /* forward: the output; BWD: the output's gradient (-1 for the loss); SGD: the weight */
  int a0, n;                  /* operands arg_t/arg_g/arg_acc[a0 .. a0+n): forward inputs (and, for BWD, their
                                 gradients: -1 none; acc: it exists and is accumulated into); SGD: the gradient */
  int R, C;                   /* MatMul: y[R] = W[R][C] x[C], W the second input */
} mlsys_offload_cuda_tl_op;

typedef struct {
  int D, H, n_trees;
  mlsys_offload_trace tr;     /* one trace op per entry of op[], same index */
  mlsys_offload_cuda_tl_op *op;
  int n_op, cap_op;
  int *arg_t, *arg_g;
  unsigned char *arg_acc;
  int n_arg, cap_arg;
  int W[4];                   /* W_iou [3H][D], U_iou [3H][H], U_f [H][H], W_c [5][H] */
  int loss;                   /* the loss tensor */
  int label[MLSYS_OFFLOAD_CUDA_TL_MAXT];
  int *leaf_t, *leaf_row, n_leaf;   /* INPUT tensors and their rows of the embedding table */
  double rate, bw, launch;    /* the analytic GPU (mlsys_offload_gpu_model) */
  mlsys_status st;
} mlsys_offload_cuda_tl_batch;

static void mlsys_offload_cuda_tl_batch_free(mlsys_offload_cuda_tl_batch *b) {
  mlsys_offload_trace_free(&b->tr);
  mlsys_free(b->op); mlsys_free(b->arg_t); mlsys_free(b->arg_g); mlsys_free(b->arg_acc); mlsys_free(b->leaf_t); mlsys_free(b->leaf_row);
  memset(b, 0, sizeof *b);
}

static int mlsys__otl_tensor(mlsys_offload_cuda_tl_batch *b, int64_t elems, mlsys_offload_tkind kind) {
  int t;
  if (b->st) return 0;
  if ((t = mlsys_offload_trace_tensor(&b->tr, elems * 4, kind)) < 0) b->st = mlsys_last_status();
  return t < 0 ? 0 : t;
}
static int mlsys__otl_push_op(mlsys_offload_cuda_tl_batch *b, int kind, int fwd, int y, int R, int C) {
  if (b->st) return -1;
  if (b->n_op == b->cap_op) {
    int c = b->cap_op ? 2 * b->cap_op : 1024;
    mlsys_offload_cuda_tl_op *q = (mlsys_offload_cuda_tl_op *)mlsys_realloc_array(b->op, (size_t)c, sizeof *q);
    if (!q) { b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory"); return -1; }
    b->op = q;
    b->cap_op = c;
  }
  mlsys_offload_cuda_tl_op *o = &b->op[b->n_op];
  o->kind = kind; o->fwd = fwd; o->y = y; o->a0 = b->n_arg; o->n = 0; o->R = R; o->C = C;
  return b->n_op++;
}
static void mlsys__otl_push_arg(mlsys_offload_cuda_tl_batch *b, int t, int g, int acc) {
  if (b->st) return;
  if (b->n_arg == b->cap_arg) {
    int c = b->cap_arg ? 2 * b->cap_arg : 4096;
    int *q1 = (int *)mlsys_realloc_array(b->arg_t, (size_t)c, sizeof(int));
    if (q1) b->arg_t = q1;
    int *q2 = (int *)mlsys_realloc_array(b->arg_g, (size_t)c, sizeof(int));
    if (q2) b->arg_g = q2;
    unsigned char *q3 = (unsigned char *)mlsys_realloc_array(b->arg_acc, (size_t)c, 1);
    if (q3) b->arg_acc = q3;
    if (!q1 || !q2 || !q3) { b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory"); return; }
    b->cap_arg = c;
  }
  b->arg_t[b->n_arg] = t;
  b->arg_g[b->n_arg] = g;
  b->arg_acc[b->n_arg] = (unsigned char)acc;
  b->n_arg++;
  b->op[b->n_op - 1].n++;
}
/* mlsys__offload_gen_time: max(flops / rate, bytes / bandwidth) + launch */
static double mlsys__otl_time(const mlsys_offload_cuda_tl_batch *b, double flops, double bytes) {
  double x = flops / b->rate, y = bytes / b->bw;
  return (x > y ? x : y) + b->launch;
}
/* A forward op and its trace op (mlsys__offload_gen_op): the output is a new ACT of `elems` floats. */
static int mlsys__otl_fwd(mlsys_offload_cuda_tl_batch *b, int kind, int n, const int *in, int64_t elems, double flops, int R, int C) {
  int out = mlsys__otl_tensor(b, elems, MLSYS_OFFLOAD_T_ACT), i;
  double bytes;
  if (b->st) return 0;
  bytes = (double)b->tr.t[out].bytes;
  for (i = 0; i < n; i++) bytes += (double)b->tr.t[in[i]].bytes;
  if (mlsys__otl_push_op(b, kind, -1, out, R, C) < 0) return 0;
  for (i = 0; i < n; i++) mlsys__otl_push_arg(b, in[i], -1, 0);
  if (!b->st && mlsys_offload_trace_op(&b->tr, mlsys__otl_name[kind], mlsys__otl_time(b, flops, bytes), n, in, 1, &out, 0, NULL) < 0)
    b->st = mlsys_last_status();
  return out;
}

/* Build the iteration of a batch of trees: the op list and its trace, as mlsys_offload_gen_treelstm(trees, n, D, H,
   gpu) builds that trace (the test compares them). vocab: rows of the embedding table; a leaf's row is its word's
   hash (mlsys_offload_tree.word) mod vocab, or a hash of (tree, node) when the tree has no words; a tree's label is
   the sum of its leaves' rows mod 5. */
static mlsys_status mlsys_offload_cuda_tl_build(const mlsys_offload_tree *trees, int n_trees, int D, int H, int vocab,
                                           const mlsys_offload_gpu_model *gpu, mlsys_offload_cuda_tl_batch *b) {
  int s, i, k, *hs = NULL, *cs = NULL, loss_in[MLSYS_OFFLOAD_CUDA_TL_MAXT], nl = 0, *grad = NULL, nt0;
  memset(b, 0, sizeof *b);
  mlsys_offload_trace_init(&b->tr);
  if (!trees || n_trees < 1 || n_trees > MLSYS_OFFLOAD_CUDA_TL_MAXT || D < 1 || H < 1 || vocab < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: need 1..%d trees and positive sizes (got %d trees, D %d, H %d, vocab %d)",
                           MLSYS_OFFLOAD_CUDA_TL_MAXT, n_trees, D, H, vocab);
  b->D = D; b->H = H; b->n_trees = n_trees;
  b->rate = (gpu && gpu->tflops > 0 ? gpu->tflops : 15.0) * 1e6;
  b->bw = (gpu && gpu->hbm_gbps > 0 ? gpu->hbm_gbps : 900.0) * 1e3;
  b->launch = gpu && gpu->launch_us > 0 ? gpu->launch_us : 4.0;
  if (gpu && gpu->elem_bytes > 0 && gpu->elem_bytes != 4)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "treelstm driver: the kernels are fp32 (elem_bytes %d)", gpu->elem_bytes);
  {
    long leaves = 0;
    for (s = 0; s < n_trees; s++) leaves += trees[s].n;
    b->leaf_t = (int *)mlsys_alloc((size_t)(leaves + 1), sizeof(int));
    b->leaf_row = (int *)mlsys_alloc((size_t)(leaves + 1), sizeof(int));
    if (!b->leaf_t || !b->leaf_row) { b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory"); goto done; }
  }
  b->W[0] = mlsys__otl_tensor(b, (int64_t)D * 3 * H, MLSYS_OFFLOAD_T_PARAM);
  b->W[1] = mlsys__otl_tensor(b, (int64_t)H * 3 * H, MLSYS_OFFLOAD_T_PARAM);
  b->W[2] = mlsys__otl_tensor(b, (int64_t)H * H, MLSYS_OFFLOAD_T_PARAM);
  b->W[3] = mlsys__otl_tensor(b, (int64_t)H * MLSYS_OFFLOAD_CUDA_TL_CLASSES, MLSYS_OFFLOAD_T_PARAM);
  for (s = 0; s < n_trees && !b->st; s++) {
    const mlsys_offload_tree *t = &trees[s];
    int root = -1, kids[MLSYS_OFFLOAD_CUDA_TL_MAXK], nk, lab = 0;
    if (t->n < 1) { b->st = mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: tree %d is empty", s); break; }
    mlsys_free(hs); mlsys_free(cs);
    hs = (int *)mlsys_alloc((size_t)t->n, sizeof(int));
    cs = (int *)mlsys_alloc((size_t)t->n, sizeof(int));
    if (!hs || !cs) { b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory"); break; }
    for (i = 0; i < t->n; i++)
      if (t->parent[i] >= i || t->parent[i] < -1) {
        b->st = mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: tree %d node %d has parent %d (parents come first)", s, i, t->parent[i]);
        break;
      }
    for (i = t->n - 1; i >= 0 && !b->st; i--) {   /* children before parents, as the generator */
      for (nk = 0, k = i + 1; k < t->n; k++)
        if (t->parent[k] == i) {
          if (nk == MLSYS_OFFLOAD_CUDA_TL_MAXK) {
            b->st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "treelstm driver: tree %d node %d has more than %d children", s, i, MLSYS_OFFLOAD_CUDA_TL_MAXK);
            break;
          }
          kids[nk++] = k;
        }
      if (b->st) break;
      if (t->parent[i] < 0) root = i;
      if (nk == 0) {
        int x = mlsys__otl_tensor(b, D, MLSYS_OFFLOAD_T_INPUT), in2[2] = {x, b->W[0]}, iou;
        uint64_t w = t->word && t->word[i] ? t->word[i] : ((uint64_t)(s + 1) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(i + 1) * 0xC2B2AE3D27D4EB4Full);
        b->leaf_t[b->n_leaf] = x;
        b->leaf_row[b->n_leaf] = (int)(w % (uint64_t)vocab);
        lab += b->leaf_row[b->n_leaf++] % MLSYS_OFFLOAD_CUDA_TL_CLASSES;
        iou = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_MATMUL, 2, in2, 3 * H, 2.0 * D * 3 * H, 3 * H, D);
        cs[i] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_CELL, 1, &iou, H, 10.0 * H, 0, 0);
        int in3[2] = {cs[i], iou};
        hs[i] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_HOUT, 2, in3, H, 3.0 * H, 0, 0);
      } else {
        int hin[MLSYS_OFFLOAD_CUDA_TL_MAXK], cell[2 * MLSYS_OFFLOAD_CUDA_TL_MAXK + 1], n_cell = 0, in2[2], hsum, iou;
        for (k = 0; k < nk; k++) hin[k] = hs[kids[k]];
        hsum = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_SUM, nk, hin, H, (double)nk * H, 0, 0);
        in2[0] = hsum; in2[1] = b->W[1];
        iou = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_MATMUL, 2, in2, 3 * H, 2.0 * H * 3 * H, 3 * H, H);
        cell[n_cell++] = iou;
        for (k = 0; k < nk; k++) {
          in2[0] = hs[kids[k]]; in2[1] = b->W[2];
          cell[n_cell++] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_MATMUL, 2, in2, H, 2.0 * H * H, H, H);
          cell[n_cell++] = cs[kids[k]];
        }
        cs[i] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_CELL, n_cell, cell, H, (10.0 + 3.0 * nk) * H, 0, 0);
        in2[0] = cs[i]; in2[1] = iou;
        hs[i] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_HOUT, 2, in2, H, 3.0 * H, 0, 0);
      }
    }
    if (b->st) break;
    int in2[2] = {hs[root], b->W[3]};
    loss_in[nl++] = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_MATMUL, 2, in2, MLSYS_OFFLOAD_CUDA_TL_CLASSES, 10.0 * H,
                                   MLSYS_OFFLOAD_CUDA_TL_CLASSES, H);
    b->label[s] = lab % MLSYS_OFFLOAD_CUDA_TL_CLASSES;
  }
  if (b->st) goto done;
  b->loss = mlsys__otl_fwd(b, MLSYS_OFFLOAD_CUDA_TL_LOSS, nl, loss_in, 1, 10.0 * nl, 0, 0);
  if (b->st) goto done;
  /* the backward, mirrored (mlsys__offload_gen_finish) */
  nt0 = b->tr.n_t;
  {
    int n_fwd = b->n_op, j, cap = 2 * n_fwd + 64 + 2 * nt0;
    int *in = (int *)mlsys_alloc((size_t)(4 * MLSYS_OFFLOAD_CUDA_TL_MAXT + 8), sizeof(int)), *out = in ? in + 2 * MLSYS_OFFLOAD_CUDA_TL_MAXT + 4 : NULL;
    grad = (int *)mlsys_alloc((size_t)(nt0 + cap), sizeof(int));
    if (!in || !grad) { mlsys_free(in); b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory"); goto done; }
    for (i = 0; i < nt0 + cap; i++) grad[i] = -1;
    for (j = n_fwd - 1; j >= 0 && !b->st; j--) {
      const mlsys_offload_op *f = &b->tr.op[j];
      int y = b->tr.ids[f->out0], n_rd = 0, nout = 0, nin = f->n_in;
      double tm = 2 * (f->time_us - b->launch) + b->launch;
      if (j != n_fwd - 1 && grad[y] < 0) continue;
      if (mlsys__otl_push_op(b, MLSYS_OFFLOAD_CUDA_TL_BWD, j, grad[y], b->op[j].R, b->op[j].C) < 0) break;
      if (grad[y] >= 0) in[n_rd++] = grad[y];
      for (i = 0; i < nin; i++) {
        int x = b->tr.ids[f->in0 + i], dup = 0, g;
        in[n_rd++] = x;
        if (b->tr.t[x].kind == MLSYS_OFFLOAD_T_INPUT) { mlsys__otl_push_arg(b, x, -1, 0); continue; }
        for (k = 0; k < nout; k++) dup |= out[k] == grad[x] && grad[x] >= 0;
        if (dup) { mlsys__otl_push_arg(b, x, -1, 0); continue; }
        if (grad[x] >= 0) {
          in[n_rd++] = grad[x];
          out[nout++] = grad[x];
          mlsys__otl_push_arg(b, x, grad[x], 1);
        } else {
          if ((g = mlsys_offload_trace_tensor(&b->tr, b->tr.t[x].bytes, MLSYS_OFFLOAD_T_GRAD)) < 0) { b->st = mlsys_last_status(); break; }
          grad[x] = g;
          out[nout++] = g;
          mlsys__otl_push_arg(b, x, g, 0);
        }
      }
      if (b->st) break;
      char name[64];
      snprintf(name, sizeof name, "%sBackward", mlsys__otl_name[b->op[j].kind]);
      int top = mlsys_offload_trace_op(&b->tr, name, tm, n_rd, in, nout, out, 0, NULL);
      if (top < 0) { b->st = mlsys_last_status(); break; }
      b->tr.op[top].is_bwd = 1;
    }
    for (i = 0; i < nt0 && !b->st; i++)   /* SGD per weight, in tensor order */
      if (b->tr.t[i].kind == MLSYS_OFFLOAD_T_PARAM && grad[i] >= 0) {
        int rd[2] = {i, grad[i]}, top;
        double bytes = 3.0 * (double)b->tr.t[i].bytes;
        if (mlsys__otl_push_op(b, MLSYS_OFFLOAD_CUDA_TL_SGD, -1, i, 0, 0) < 0) break;
        mlsys__otl_push_arg(b, grad[i], -1, 0);
        if ((top = mlsys_offload_trace_op(&b->tr, "SGD", mlsys__otl_time(b, 2.0 * (double)b->tr.t[i].bytes / 4, bytes), 2, rd, 1, &i, 0, NULL)) < 0)
          b->st = mlsys_last_status();
        else
          b->tr.op[top].is_bwd = 1;
      }
    mlsys_free(in);
  }
  if (!b->st && b->n_op != b->tr.n_op)
    b->st = mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: %d kernels but %d trace ops", b->n_op, b->tr.n_op);
  if (!b->st && !(b->tr.name = mlsys_strdup("treelstm"))) b->st = mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm driver: out of memory");
done:
  mlsys_free(hs); mlsys_free(cs); mlsys_free(grad);
  if (b->st) {
    mlsys_status st = b->st;
    mlsys_offload_cuda_tl_batch_free(b);
    return st;
  }
  return MLSYS_OK;
}

/* Elements each operand of op i has as the kernel touches it (the host test compares them with the trace's bytes). */
static int64_t mlsys_offload_cuda_tl_elems(const mlsys_offload_cuda_tl_batch *b, int t) { return b->tr.t[t].bytes / 4; }

/* Launch op i (gpu: a kernel on stream s; else the CPU loop). P[t] is tensor t's memory; only the tensors of trace op
   i may be used, which stamp[t] == i marks (anything else is MLSYS_ERR_ARG: the kernel and its trace op differ). */
static mlsys_status mlsys_offload_cuda_tl_exec(const mlsys_offload_cuda_tl_batch *b, int i, float *const *P, const int *stamp,
                                          float lr, int gpu, cudaStream_t s) {
  const mlsys_offload_cuda_tl_op *o = &b->op[i];
  const int H = b->H;
  mlsys_status bad = MLSYS_OK;
#define MLSYS__OTL_P(t) ((t) < 0 ? (float *)NULL : stamp[t] == i ? P[t] : (bad = mlsys_set_error(MLSYS_ERR_ARG, \
        "treelstm driver: op %d's kernel uses tensor %d, which its trace op does not list", i, (int)(t)), (float *)NULL))
  const int *xt = b->arg_t + o->a0, *xg = b->arg_g + o->a0;
  const unsigned char *xa = b->arg_acc + o->a0;
  int k;
  switch (o->kind) {
    case MLSYS_OFFLOAD_CUDA_TL_MATMUL: {
      mlsys__otl_matvec f = {MLSYS__OTL_P(o->y), MLSYS__OTL_P(xt[1]), MLSYS__OTL_P(xt[0]), o->R, o->C};
      return bad ? bad : mlsys__otl_for(gpu, s, o->R, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_CELL: {
      mlsys__otl_cell f;
      memset(&f, 0, sizeof f);
      f.c = MLSYS__OTL_P(o->y); f.iou = MLSYS__OTL_P(xt[0]); f.nk = (o->n - 1) / 2; f.H = H;
      for (k = 0; k < f.nk; k++) { f.f[k] = MLSYS__OTL_P(xt[1 + 2 * k]); f.cc[k] = MLSYS__OTL_P(xt[2 + 2 * k]); }
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_HOUT: {
      mlsys__otl_hout f = {MLSYS__OTL_P(o->y), MLSYS__OTL_P(xt[0]), MLSYS__OTL_P(xt[1]), H};
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_SUM: {
      mlsys__otl_sum f;
      memset(&f, 0, sizeof f);
      f.y = MLSYS__OTL_P(o->y); f.nk = o->n;
      for (k = 0; k < o->n; k++) f.x[k] = MLSYS__OTL_P(xt[k]);
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_LOSS: {
      mlsys__otl_loss f;
      memset(&f, 0, sizeof f);
      f.loss = MLSYS__OTL_P(o->y); f.nl = o->n; f.C = MLSYS_OFFLOAD_CUDA_TL_CLASSES;
      for (k = 0; k < o->n; k++) { f.z[k] = MLSYS__OTL_P(xt[k]); f.y[k] = b->label[k]; }
      return bad ? bad : mlsys__otl_for(gpu, s, 1, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_SGD: {
      mlsys__otl_sgd f = {MLSYS__OTL_P(o->y), MLSYS__OTL_P(xt[0]), lr};
      return bad ? bad : mlsys__otl_for(gpu, s, (int)mlsys_offload_cuda_tl_elems(b, o->y), f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_BWD: break;
    default: return mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: op %d has kind %d", i, o->kind);
  }
  const mlsys_offload_cuda_tl_op *fw = &b->op[o->fwd];
  const float *gy = MLSYS__OTL_P(o->y);
  switch (fw->kind) {
    case MLSYS_OFFLOAD_CUDA_TL_MATMUL: {
      mlsys__otl_matvec_bwd f = {MLSYS__OTL_P(xg[0]), MLSYS__OTL_P(xg[1]), xa[0], xa[1], gy, MLSYS__OTL_P(xt[1]),
                                 MLSYS__OTL_P(xt[0]), o->R, o->C};
      int n = o->R * o->C > o->C ? o->R * o->C : o->C;
      return bad ? bad : mlsys__otl_for(gpu, s, n, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_CELL: {
      mlsys__otl_cell_bwd f;
      memset(&f, 0, sizeof f);
      f.giou = MLSYS__OTL_P(xg[0]); f.acc_iou = xa[0]; f.gc = gy; f.iou = MLSYS__OTL_P(xt[0]);
      f.nk = (o->n - 1) / 2; f.H = H;
      for (k = 0; k < f.nk; k++) {
        f.f[k] = MLSYS__OTL_P(xt[1 + 2 * k]); f.gf[k] = MLSYS__OTL_P(xg[1 + 2 * k]); f.acc_f[k] = xa[1 + 2 * k];
        f.cc[k] = MLSYS__OTL_P(xt[2 + 2 * k]); f.gcc[k] = MLSYS__OTL_P(xg[2 + 2 * k]); f.acc_c[k] = xa[2 + 2 * k];
      }
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_HOUT: {
      mlsys__otl_hout_bwd f = {MLSYS__OTL_P(xg[0]), MLSYS__OTL_P(xg[1]), xa[0], xa[1], gy, MLSYS__OTL_P(xt[0]),
                               MLSYS__OTL_P(xt[1]), H};
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_SUM: {
      mlsys__otl_sum_bwd f;
      memset(&f, 0, sizeof f);
      f.gy = gy; f.nk = o->n;
      for (k = 0; k < o->n; k++) { f.gx[k] = MLSYS__OTL_P(xg[k]); f.acc[k] = xa[k]; }
      return bad ? bad : mlsys__otl_for(gpu, s, H, f);
    }
    case MLSYS_OFFLOAD_CUDA_TL_LOSS: {
      mlsys__otl_loss_bwd f;
      memset(&f, 0, sizeof f);
      f.nl = o->n; f.C = MLSYS_OFFLOAD_CUDA_TL_CLASSES;
      for (k = 0; k < o->n; k++) { f.gz[k] = MLSYS__OTL_P(xg[k]); f.acc[k] = xa[k]; f.z[k] = MLSYS__OTL_P(xt[k]); f.y[k] = b->label[k]; }
      return bad ? bad : mlsys__otl_for(gpu, s, o->n, f);
    }
  }
#undef MLSYS__OTL_P
  return mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: op %d differentiates an op of kind %d", i, fw->kind);
}

/* The model's values: a seeded embedding table [vocab][D] (N(0, 1)) and the four weights (uniform in ±1/√fan_in). */
typedef struct {
  int D, H, vocab;
  float *emb, *W[4];
} mlsys_offload_cuda_tl_model;

static void mlsys_offload_cuda_tl_model_free(mlsys_offload_cuda_tl_model *m) {
  mlsys_free(m->emb);
  for (int i = 0; i < 4; i++) mlsys_free(m->W[i]);
  memset(m, 0, sizeof *m);
}
static int64_t mlsys__otl_wsize(int D, int H, int i) {
  return i == 0 ? (int64_t)3 * H * D : i == 1 ? (int64_t)3 * H * H : i == 2 ? (int64_t)H * H : (int64_t)MLSYS_OFFLOAD_CUDA_TL_CLASSES * H;
}
static mlsys_status mlsys_offload_cuda_tl_model_init(mlsys_offload_cuda_tl_model *m, int D, int H, int vocab, uint64_t seed) {
  mlsys_rng r;
  memset(m, 0, sizeof *m);
  m->D = D; m->H = H; m->vocab = vocab;
  mlsys_rng_seed(&r, seed);
  if (!(m->emb = (float *)mlsys_alloc((size_t)vocab * D, sizeof(float)))) goto nomem;
  for (int64_t i = 0; i < (int64_t)vocab * D; i++) m->emb[i] = (float)mlsys_rng_normal(&r);
  for (int w = 0; w < 4; w++) {
    int64_t n = mlsys__otl_wsize(D, H, w);
    double a = 1.0 / sqrt(w == 0 ? (double)D : (double)H);
    if (!(m->W[w] = (float *)mlsys_alloc((size_t)n, sizeof(float)))) goto nomem;
    for (int64_t i = 0; i < n; i++) m->W[w][i] = (float)((2 * mlsys_rng_uniform(&r) - 1) * a);
  }
  return MLSYS_OK;
nomem:
  mlsys_offload_cuda_tl_model_free(m);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "treelstm model: out of memory");
}
/* Fill the batch's weights and inputs (the gathered embedding rows) into mem[t]. */
static void mlsys_offload_cuda_tl_load(const mlsys_offload_cuda_tl_batch *b, const mlsys_offload_cuda_tl_model *m, float *const *mem) {
  for (int w = 0; w < 4; w++) memcpy(mem[b->W[w]], m->W[w], sizeof(float) * (size_t)mlsys__otl_wsize(b->D, b->H, w));
  for (int l = 0; l < b->n_leaf; l++) memcpy(mem[b->leaf_t[l]], m->emb + (size_t)b->leaf_row[l] * b->D, sizeof(float) * (size_t)b->D);
}

/* One iteration on the CPU (the reference): mem[t] is every tensor's host memory. stamp: n_t ints of scratch. */
static mlsys_status mlsys_offload_cuda_tl_run_cpu(const mlsys_offload_cuda_tl_batch *b, float *const *mem, int *stamp, float lr) {
  mlsys_status st;
  const mlsys_offload_trace *tr = &b->tr;
  for (int t = 0; t < tr->n_t; t++) stamp[t] = -1;
  for (int i = 0; i < b->n_op; i++) {
    const mlsys_offload_op *op = &tr->op[i];
    for (int q = 0; q < op->n_in + op->n_out; q++) stamp[tr->ids[op->in0 + q]] = i;
    if ((st = mlsys_offload_cuda_tl_exec(b, i, mem, stamp, lr, 0, 0))) return st;
  }
  return MLSYS_OK;
}

/* One iteration on the GPU through the runtime (resident or offloaded; with MLSYS_OFFLOAD_CUDA_HOST the kernels' CPU
   loops on the emulated runtime): every tensor of each trace op acquired, the
   kernel launched on the runtime's compute stream, op_done. The arena must hold the inputs and weights
   (mlsys_offload_cuda_tl_load over mlsys_offload_cuda_host); after it, it holds the updated weights and kept results.
   P and stamp: n_t entries of scratch. */
static mlsys_status mlsys_offload_cuda_tl_run_gpu(const mlsys_offload_cuda_tl_batch *b, mlsys_offload_cuda *rt, float **P, int *stamp,
                                             float lr, mlsys_offload_cuda_stats *stats) {
  mlsys_status st;
  const mlsys_offload_trace *tr = &b->tr;
  if (rt->tr != tr) return mlsys_set_error(MLSYS_ERR_ARG, "treelstm driver: the runtime was made for another trace");
  for (int t = 0; t < tr->n_t; t++) stamp[t] = -1;
  if ((st = mlsys_offload_cuda_begin(rt))) return st;
  for (int i = 0; i < b->n_op; i++) {
    const mlsys_offload_op *op = &tr->op[i];
    for (int q = 0; q < op->n_in + op->n_out; q++) {
      int t = tr->ids[op->in0 + q];
      void *d;
      if ((st = mlsys_offload_cuda_acquire(rt, t, q >= op->n_in, &d))) goto fail;
      P[t] = (float *)d;
      stamp[t] = i;
    }
    if ((st = mlsys_offload_cuda_tl_exec(b, i, P, stamp, lr, !(rt->flags & MLSYS_OFFLOAD_CUDA_HOST), mlsys_offload_cuda_stream(rt)))) goto fail;
    if ((st = mlsys_offload_cuda_op_done(rt))) goto fail;
  }
  return mlsys_offload_cuda_end(rt, stats);
fail:
  rt->running = 0;
  if (!(rt->flags & MLSYS_OFFLOAD_CUDA_HOST)) cudaDeviceSynchronize();
  return st;
}

#endif /* MLSYS_OFFLOAD_KERNELS_CUH */
