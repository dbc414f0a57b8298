/* examples/index_basics.c — a first program with mlsys_index.h (MAPLE: a learned index tuned per workload).

   A learned index replaces the comparisons of a B+tree with linear models that predict where a key sits. MAPLE
   (Shah, PhD thesis, UT Austin 2023, ch. 6) keeps ALEX's tree of model nodes and offers two kinds of leaves: ALEX's
   gapped array (GA: sorted, with gaps, fast lookups, inserts shift keys) and the fragmented log (FLog: a few unsorted
   append-only fragments per leaf, cheap inserts, lookups scan a fragment). Which is faster depends on the workload,
   so MAPLE picks the configuration per workload: a predictor scores a grid of configurations on a prefix of the
   operations, and the best few are measured for real.

   This program loads the 171,038 S2 cell ids of the GeoNames cities (tests/data/index_cities_s2_uint64), uses both
   leaf types as a map (find, insert, erase, ordered scan, statistics), then builds a write-heavy workload and lets
   the tuner measure a small grid on its first operations. Build: make build/examples/index_basics; run from the
   repository root: build/examples/index_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"

#include <stdio.h>
#include <string.h>

/* mlsys calls return a status; the message in mlsys_last_error() names what went wrong */
#define TRY(call)                                                              \
  do {                                                                         \
    if ((call) != MLSYS_OK) {                                                  \
      fprintf(stderr, "index_basics: %s: %s\n", #call, mlsys_last_error());   \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* Uses one index as a map; the bulk set is keys[0], keys[2], keys[4], ... and the keys in between are new. */
static int use_as_map(const char *what, const mlsys_index_config *cfg, const uint64_t *keys, size_t n) {
  mlsys_index *ix;
  mlsys_index_stats st;
  uint64_t *bulk, val, got[5];
  size_t i, nb = (n + 1) / 2, found = 0, inserted = 0, erased = 0, k;
  char name[128];

  bulk = (uint64_t *)mlsys_alloc(nb, sizeof *bulk);
  if (!bulk) return 1;
  for (i = 0; i < nb; i++) bulk[i] = keys[2 * i];
  /* 1. Bulk load: vals NULL gives each key the payload mlsys_index_payload_of(key). The keys need not be sorted. */
  TRY(mlsys_index_create(cfg, bulk, NULL, nb, &ix));
  mlsys_free(bulk);

  /* 2. Lookups: every bulk-loaded key is there with its payload, the keys in between are not (yet). */
  for (i = 0; i < n; i += 2) found += mlsys_index_find(ix, keys[i], &val) && val == mlsys_index_payload_of(keys[i]);
  printf("%s (%s): bulk-loaded %zu keys, found %zu of them; key %016llx (not loaded) found: %s\n", what,
         mlsys_index_config_format(cfg, name, sizeof name), nb, found, (unsigned long long)keys[1],
         mlsys_index_find(ix, keys[1], NULL) ? "yes" : "no");

  /* 3. Inserts (1 inserted, 0 already there, -1 out of memory) and erases (1 erased, 0 absent). */
  for (i = 1; i < n; i += 2) {
    int r = mlsys_index_insert(ix, keys[i], mlsys_index_payload_of(keys[i]));
    if (r < 0) { fprintf(stderr, "index_basics: insert: %s\n", mlsys_last_error()); mlsys_index_free(ix); return 1; }
    inserted += (size_t)r;
  }
  for (i = 0; i < n; i += 10) erased += (size_t)mlsys_index_erase(ix, keys[i]);
  printf("  inserted %zu, erased %zu (every 10th key): %zu keys now; key %016llx found: %s\n", inserted, erased,
         mlsys_index_size(ix), (unsigned long long)keys[1], mlsys_index_find(ix, keys[1], NULL) ? "yes" : "no");

  /* 4. Ordered iteration: the 5 smallest keys >= keys[n/2] (keys[n/2] itself was erased when n/2 is a multiple of 10).
        FLog fragments are unsorted inside, but a scan still comes out in key order. */
  k = mlsys_index_scan(ix, keys[n / 2], 5, got, NULL);
  printf("  scan from %016llx:", (unsigned long long)keys[n / 2]);
  for (i = 0; i < k; i++) printf(" %016llx", (unsigned long long)got[i]);
  printf("\n");

  /* 5. Shape and memory. mlsys_index_check walks every node and leaf and names the first broken invariant. */
  mlsys_index_get_stats(ix, &st);
  printf("  %zu model nodes (depth %zu), %zu leaves, %zu fragments; %zu bytes in all (%.1f per key); SMOs: %llu expand, "
         "%llu split, %llu fragment expand/multiply\n", st.n_model_nodes, st.depth_max, st.n_leaves, st.n_fragments,
         mlsys_index_memory(ix), (double)mlsys_index_memory(ix) / (double)mlsys_index_size(ix),
         (unsigned long long)st.smo_expand, (unsigned long long)(st.smo_split_sideways + st.smo_split_down),
         (unsigned long long)(st.smo_frag_expand + st.smo_frag_multiply));
  TRY(mlsys_index_check(ix));
  mlsys_index_free(ix);
  return 0;
}

int main(void) {
  static const char *grid_names[5] = {"alex", "alex-w", "ga:msi=2,msh=16", "flog:mf=64,mnf=16,nf=4", "flog:mf=256,mnf=64,nf=4"};
  mlsys_index_config flog, ga, grid[5], heur;
  mlsys_index_workload_opts wo;
  mlsys_index_workload w;
  mlsys_index_trace prefix;
  mlsys_index_tune_opts to;
  mlsys_index_tune_result tr;
  mlsys_index_run_result chosen_run, alex_run;
  const char *spec = "real:cities";
  uint64_t *keys;
  size_t n, i;
  char name[128];

  /* 0. A key set: a spec string names one ("real:cities", "gen:lognormal:1M" or a SOSD file); sorted and distinct.
        real:cities is found under tests/data from the repository root (or $MLSYS_INDEX_DATA). */
  if (mlsys_index_keys_load(spec, 0, &keys, &n) != MLSYS_OK) {
    printf("(%s: %s; using generated keys instead)\n", spec, mlsys_last_error());
    spec = "gen:lognormal:170k";
    TRY(mlsys_index_keys_load(spec, 0, &keys, &n));
  }
  printf("%s: %zu keys, %016llx .. %016llx\n\n", spec, n, (unsigned long long)keys[0], (unsigned long long)keys[n - 1]);

  /* 1-5 with each leaf type. A configuration is a struct whose zero fields mean the defaults ({0} is ALEX); names
     parse to the same thing ("flog" = the fragmented log with 64-key fragments, at most 64 per leaf, 4 to start). */
  memset(&flog, 0, sizeof flog);
  flog.leaf = MLSYS_INDEX_FLOG;
  /* MAPLE's GA: a leaf restructures (expands or splits) when its inserts average more than 2 search iterations or
     16 shifts, instead of ALEX's cost-model rule */
  TRY(mlsys_index_config_parse("ga:msi=2,msh=16", 0, &ga));
  if (use_as_map("fragmented log", &flog, keys, n) || use_as_map("gapped array", &ga, keys, n)) return 1;

  /* 6. A write-heavy workload: bulk-load 40k keys of a seeded shuffle, then 120k operations, 85 % of them inserts of
        new keys, the rest lookups of keys already present. */
  memset(&wo, 0, sizeof wo);
  wo.n_init = 40000;
  wo.n_ops = 120000;
  wo.insert_frac = 0.85;
  wo.seed = 1;
  TRY(mlsys_index_workload_make(keys, n, &wo, &w));
  printf("\nworkload: bulk load %zu keys, then %zu operations (%zu inserts, %zu lookups)\n", w.n_bulk, w.trace.n,
         w.n_inserts, w.n_finds);

  /* 7. Tuning on the first 10 % of the operations. The heuristic needs no measurement (FLog when most operations
        insert, else ALEX); the tuner scores a grid and measures the best top_k. With MLSYS_INDEX_PREDICT_NONE it
        measures every entry (the oracle), affordable on this 5-entry grid; mlsys index tune uses the 136-entry grid
        and the CNN predictor (tools/maple_predictor.bin). */
  prefix = w.trace;
  prefix.n = w.trace.n / 10;
  heur = mlsys_index_tune_heuristic(&prefix);
  printf("heuristic choice: %s\n", mlsys_index_config_format(&heur, name, sizeof name));
  for (i = 0; i < 5; i++) TRY(mlsys_index_config_parse(grid_names[i], wo.insert_frac, &grid[i]));
  memset(&to, 0, sizeof to);
  to.predictor = MLSYS_INDEX_PREDICT_NONE;
  to.grid = grid;
  to.n_grid = 5;
  TRY(mlsys_index_tune(w.bulk, w.n_bulk, &prefix, &to, &tr));
  printf("tuner, %zu operations measured per candidate:\n", prefix.n);
  for (i = 0; i < tr.n_cand; i++)
    printf("  %-28s %7.2f Mops/s  %9zu bytes%s\n", mlsys_index_config_format(&tr.cand[i].cfg, name, sizeof name),
           tr.cand[i].run.mops, tr.cand[i].run.bytes, i == tr.best_cand ? "  <- chosen" : "");

  /* 8. The whole workload on the choice and on ALEX: mlsys_index_run times it and checks every lookup's answer. */
  TRY(mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &tr.best, w.bulk, w.n_bulk, &w.trace, 0, &chosen_run));
  TRY(mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &grid[0], w.bulk, w.n_bulk, &w.trace, 0, &alex_run));
  printf("whole workload: %s %.2f Mops/s, ALEX %.2f Mops/s (%.2fx); wrong answers: %zu and %zu\n",
         mlsys_index_config_format(&tr.best, name, sizeof name), chosen_run.mops, alex_run.mops,
         chosen_run.mops / alex_run.mops, chosen_run.wrong, alex_run.wrong);

  mlsys_index_tune_result_free(&tr);
  mlsys_index_workload_free(&w);
  mlsys_free(keys);
  return chosen_run.wrong || alex_run.wrong;
}
