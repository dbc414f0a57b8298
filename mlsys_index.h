/* mlsys_index.h — MAPLE: a learned index with gapped-array and fragmented-log leaves, tuned per workload.
   (Shah, PhD thesis, UT Austin 2023, ch. 6; ALEX background ch. 3.)   [doc block: being written, issue 10]

   DEVELOPMENT LAYOUT (temporary, issue 10 in progress): the header is assembled from the files in index_parts/, each with a
   declarations half and an implementation half (guarded by MLSYS_INDEX_IMPLEMENTATION). When the issue is done the
   parts are inlined here and index_parts/ disappears, so users still copy one file.

   Sections
     1. shared types (this file): configuration, workload trace, statistics
     2. the index: ALEX-style model nodes over GA / FLog leaves        index_parts/core.h
     3. baselines: in-memory B+tree, sorted array                       index_parts/baselines.h
     4. data: SOSD files, key generators, workloads                     index_parts/data.h
     5. the throughput predictor: trace image, CNN, k-NN                index_parts/model.h
     6. the runner and the tuner                                        index_parts/tune.h
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
