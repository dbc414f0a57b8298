/* mlsys_index.h — MAPLE: a learned index with gapped-array and fragmented-log leaves, tuned per workload.  MIT licence.

   Implements MAPLE (A. Shah, PhD thesis, UT Austin 2023, ch. 6; the ALEX background of ch. 3), following
   ../shared/specs/monet_maple.md Part B. An updatable learned index keeps ALEX's tree of linear-model nodes; its
   leaves are one parameterised structure chosen per workload: ALEX's gapped array (sorted, with gaps, model-placed;
   knobs Msi and Msh for when to split) or MAPLE's fragmented log (unsorted append-only fragments picked by a linear
   model; knobs mf_size, Mnf, nf). A CNN reads a 256x256 image of a trace prefix, scores every configuration of a grid,
   and the top 10 run for real on this machine: the fastest bulk-loads the index. Keys and payloads are uint64; the
   index is a map (unique keys).

   CONTENTS
     1. Shared types: mlsys_index_config (one configuration for every leaf), workload traces.
     2. The index (index section "core"): bulk load of sorted or unsorted keys (ALEX's cost-based fanout), find,
        insert, update, erase, ordered scan, size, memory (every byte counted; fragmented-log metadata is exactly 21
        bytes per fragment), statistics and a full invariant check. Gapped array: density 0.7 after a build, expand
        at 0.8 to 0.6, exponential search, shifts toward the nearest gap, ALEX's cost model or MAPLE's Msi/Msh rule
        for splits. Fragmented log: AVX2 fragment scans (scalar fallback chosen at run time), expand a fragment up
        to mf_size, multiply fragments up to Mnf, split the leaf into leaves of nf fragments. Splits are sideways
        (duplicate child pointers) or downward; model nodes widen their key range for keys past the ends, so
        sorted-ascending streams and outliers near 2^64 keep the tree shallow.
     3. Baselines: an in-memory B+tree (256-byte nodes by default, STX-style full bulk load, borrow/merge on erase)
        and a sorted array with binary search.
     4. Data: SOSD key files (uint64 count, then the keys; _uint32 names widen), key generators (uniform, normal,
        lognormal, clustered, and osm_like / words_like / ipv4_like scaled up from real sets), the real key sets
        (S2 cell ids of 171,038 GeoNames places, 207,937 GeoIP range starts, 412,485 dictionary-word prefixes) and
        workloads (bulk load, then inserts of unseen keys with probability f, else uniform or Zipf lookups).
     5. The throughput predictor (thesis §6.3.3): the trace image (lookups and inserts by time and key rank), the
        CNN (4 conv blocks, 16-32-64-64 channels) + per-knob configuration embeddings + MLP over 16 log-spaced
        throughput bins, trained in C with Adam; the model file (CRC-checked); a k-NN fallback over summary features;
        the default grid (1 ALEX + 30 gapped-array + 105 fragmented-log configurations).
     6. Configuration names ("alex", "alex-w", "ga:msi=2,msh=16", "flog:mf=64,mnf=16,nf=4"), the runner (one
        workload on MAPLE, the B+tree or the sorted array, timed, every lookup checked) and the tuner.
   The `mlsys index bench|tune` command (cli/index.c), docs/index.md and bench/RESULTS.md §9 are the tour.

   USAGE: in exactly one .c file
       #define MLSYS_INDEX_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for every header)
       #include "mlsys_index.h"
   link: -lm -lpthread, and what mlsys_common.h's implementation needs (-llpsolve55 -lcolamd -ldl, or define
   MLSYS_NO_LPSOLVE). x86-64 builds carry an AVX2 fragment scan compiled with a target attribute and used only when
   the CPU has AVX2.

   EXAMPLE (examples/index_basics.c)
       mlsys_index_config c = {0};                              // ALEX: the gapped array with ALEX's cost model
       c.leaf = MLSYS_INDEX_FLOG; c.mf_size = 64;               // or MAPLE's fragmented log
       mlsys_index *ix;  uint64_t v;
       mlsys_index_create(&c, keys, NULL, n, &ix);              // payloads NULL: mlsys_index_payload_of(key)
       mlsys_index_insert(ix, 42, 7);                           // 1 inserted, 0 present, -1 out of memory
       if (mlsys_index_find(ix, 42, &v)) printf("%llu\n", (unsigned long long)v);
       mlsys_index_scan(ix, 40, 10, out_keys, out_vals);        // ten pairs from key 40 up, in order
       mlsys_index_free(ix);
     Tuning:  mlsys_index_model_load("tools/maple_predictor.bin", &m);
              opts.model = m;  mlsys_index_tune(bulk, n_bulk, &trace_prefix, &opts, &res);   // res.best

   ERRORS: calls that can fail return an mlsys_status (or -1 for the hot-path insert/erase) and set mlsys_last_error()
   to a sentence naming the problem ("x_uint64: SOSD header says N = 16 keys of 8 bytes, so the file must be 8 + 16*8
   = 136 bytes, but it is 16 bytes: truncated (120 bytes missing)"). Lookups never allocate, never fail and never
   restructure the index.

   THREADS: an index is not synchronised: concurrent finds are safe, anything else needs the index to itself.

   NOT DONE: the PTHash leaf (spec B3.4: explored and dropped by the thesis); different configurations per leaf (the
   thesis's future work, ch. 8.3); SOSD's own books/fb/osm files (no Debian or npm package ships them: the loader reads
   them if a user has them). A CUDA path for the predictor is not written (training takes minutes on a CPU).
*/
#ifndef MLSYS_INDEX_H
#define MLSYS_INDEX_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_INDEX_IMPLEMENTATION
#define MLSYS_INDEX_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
   1. Shared types
   --------------------------------------------------------------------------------------------------------------- */

typedef enum { MLSYS_INDEX_GA = 0, MLSYS_INDEX_FLOG = 1 } mlsys_index_leaf;

/* One configuration for every leaf of an index (thesis §6.2, §7.3). Zero fields mean the defaults given here, so
   `mlsys_index_config c = {0};` is ALEX (the gapped array with ALEX's cost model, expected insert fraction 0). */
typedef struct {
  mlsys_index_leaf leaf;
  /* gapped array (§6.2.1, spec B3.2) */
  double expected_insert_frac;   /* ALEX's knob, in [0, 1]; ALEX-W is 1 */
  double msi;                    /* max average exponential-search iterations per insert before an SMO; 0: ALEX's rule */
  double msh;                    /* max average shifts per insert before an SMO; 0: ALEX's rule */
  /* fragmented log (§6.2.2, spec B3.3) */
  uint32_t mf_size;              /* max keys per fragment (0 → 64) */
  uint32_t mnf;                  /* max fragments per leaf (0 → 64) */
  uint32_t nf;                   /* fragments of a leaf made by a split or a bulk load (0 → 4; ≤ mnf) */
  /* both */
  uint32_t max_leaf_bytes;       /* 0 → 1 << 24 (ALEX's max data node size) */
  int smo_check_every_insert;    /* GA: evaluate the Msi/Msh trigger on every insert, not only when full (B3.2) */
} mlsys_index_config;

/* A workload: op[i] is MLSYS_INDEX_OP_FIND or MLSYS_INDEX_OP_INSERT on key[i]. Inserted payloads are derived from
   the key (mlsys_index_payload_of), so a run can check what lookups return. */
enum { MLSYS_INDEX_OP_FIND = 0, MLSYS_INDEX_OP_INSERT = 1 };
typedef struct {
  uint8_t *op;
  uint64_t *key;
  size_t n;
} mlsys_index_trace;

static inline uint64_t mlsys_index_payload_of(uint64_t key) { return key * 0x9E3779B97F4A7C15ull ^ 0x5bd1e995ull; }

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_INDEX_H */

/* The parts include this file for its types; the guard keeps that nested include from running the list again (a part's
   implementation half would then come before its declarations). A later top-level include with the implementation
   macro defined still reaches every part's implementation half. */
#ifndef MLSYS__INDEX_IN_PARTS
#define MLSYS__INDEX_IN_PARTS
#include "index_parts/core.h"
#include "index_parts/baselines.h"
#include "index_parts/data.h"
#include "index_parts/model.h"
#include "index_parts/tune.h"
#undef MLSYS__INDEX_IN_PARTS
#endif
