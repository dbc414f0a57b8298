/* examples/collective_basics.c — mlsys_collective.h in one page: synthesize an ALLGATHER for two Azure NDv2 nodes
   (16 V100s) from the TACCL authors' communication sketch, check it, compare it with NCCL's ring in the α–β
   model, lower it to an MSCCL program and run that program on the CPU against the naive collective.
   Build: make build/examples/collective_basics */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"

#include <stdlib.h>

/* The authors' ndv2-sk-1: intra-node links as they are; across nodes only GPU 0 sends, to GPU 1 of the other
   node (a relay: one NIC per node); the algorithm is the same on both nodes (rank r and r + 8 are symmetric). */
static const char *sketch_json =
    "{\"nnodes\": 2, \"intranode_sketch\": {\"strategy\": \"none\"},"
    " \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"0\": [1]}},"
    " \"symmetry_offsets\": [[8, 16]], \"hyperparameters\": {\"input_chunkup\": 1}}";

#define TRY(x) do { if ((x) != MLSYS_OK) { fprintf(stderr, "%s: %s\n", #x, mlsys_last_error()); exit(1); } } while (0)

int main(void) {
  mlsys_coll_topo phys, logical;
  mlsys_coll_sketch sk;
  mlsys_coll_algo algo, copy, ring_algo;
  mlsys_coll_stats stats;
  mlsys_coll_def def;
  mlsys_coll_sim_result taccl, ring;
  mlsys_coll_prog prog;
  int ring_order[16], N, r, i, mismatches = 0;
  const double bytes = 1 << 20;            /* 1 MiB of input per GPU */
  const size_t elems = 64;                 /* int32 elements per chunk for the CPU run */
  char msg[256];

  /* 1. The physical machine (thesis Table 5.1 costs) and the sketch that restricts the search. */
  TRY(mlsys_coll_topo_ndv2(2, NULL, &phys));
  TRY(mlsys_coll_sketch_parse_json(sketch_json, strlen(sketch_json), "ndv2-sk-1", 8, &sk));
  N = phys.nranks;

  /* 2. Synthesis: routing MILP → ordering heuristic → scheduling MILP (a few seconds at most). */
  TRY(mlsys_coll_synthesize(&phys, &sk, MLSYS_COLL_ALLGATHER, bytes, &algo, &logical, &stats));
  printf("synthesized an ALLGATHER on %s: %d transfers in %.2f s (routing %s)\n", phys.name, algo.nxfer,
         stats.total_s, mlsys_milp_status_str((mlsys_milp_status)stats.route_status));

  /* 3. Symbolic verification: every rank ends with every chunk, using only links the sketch allows. */
  TRY(mlsys_coll_def_make(MLSYS_COLL_ALLGATHER, N, algo.chunkup, &def));
  if (mlsys_coll_verify(&def, &logical, &algo, msg, sizeof msg) != MLSYS_OK) { printf("invalid: %s\n", msg); return 1; }
  printf("verified: every GPU gathers all %d chunks\n", def.nchunks);

  /* 4. Simulation on the physical topology against NCCL's ring (the simulator writes times: use copies). */
  TRY(mlsys_coll_algo_copy(&algo, &copy));
  TRY(mlsys_coll_simulate(&phys, &copy, NULL, &taccl));
  TRY(mlsys_coll_default_ring(&phys, ring_order));
  TRY(mlsys_coll_algo_ring(MLSYS_COLL_ALLGATHER, N, ring_order, 1, 1, bytes, &ring_algo));
  TRY(mlsys_coll_simulate(&phys, &ring_algo, NULL, &ring));
  printf("alpha-beta model, 1 MiB per GPU: TACCL %.1f us (%.1f GB/s), ring %.1f us (%.1f GB/s): %.2fx\n",
         taccl.makespan_us, taccl.algbw_gbps, ring.makespan_us, ring.algbw_gbps, ring.makespan_us / taccl.makespan_us);

  /* 5. Lowering to an MSCCL program (threadblocks of send/recv steps) and checking it by abstract interpretation. */
  TRY(mlsys_coll_lower(&def, &algo, 1, &prog));
  TRY(mlsys_coll_prog_verify(&def, &prog, msg, sizeof msg));

  /* 6. Run the program on the CPU with real data and compare with the naive ALLGATHER. */
  {
    int32_t *in[16], *out[16], *ref_out[16];
    for (r = 0; r < N; r++) {
      in[r] = (int32_t *)malloc(algo.chunkup * elems * sizeof(int32_t));
      out[r] = (int32_t *)calloc((size_t)N * algo.chunkup * elems, sizeof(int32_t));
      ref_out[r] = (int32_t *)calloc((size_t)N * algo.chunkup * elems, sizeof(int32_t));
      for (i = 0; i < (int)(algo.chunkup * elems); i++) in[r][i] = r * 100000 + i;
    }
    TRY(mlsys_coll_exec_cpu(&prog, MLSYS_COLL_I32, MLSYS_COLL_SUM, (void *const *)in, (void *const *)out, elems, 1));
    TRY(mlsys_coll_reference(MLSYS_COLL_ALLGATHER, N, algo.chunkup, MLSYS_COLL_I32, MLSYS_COLL_SUM,
                             (void *const *)in, (void *const *)ref_out, elems));
    for (r = 0; r < N; r++) {
      mismatches += memcmp(out[r], ref_out[r], (size_t)N * algo.chunkup * elems * sizeof(int32_t)) != 0;
      free(in[r]); free(out[r]); free(ref_out[r]);
    }
    printf("CPU execution of the program: %s\n", mismatches ? "MISMATCH" : "identical to the naive ALLGATHER");
  }

  /* 7. The MSCCL XML the runtime loads (mlsys collective synth --xml FILE writes it to a file). */
  {
    FILE *f = tmpfile();
    if (f && mlsys_coll_prog_write_xml(&prog, f) == MLSYS_OK)
      printf("MSCCL XML: %ld bytes, %d GPUs, %d threadblocks on GPU 0\n", ftell(f), prog.ngpus, prog.gpus[0].ntbs);
    if (f) fclose(f);
  }

  mlsys_coll_prog_free(&prog);
  mlsys_coll_algo_free(&ring_algo);
  mlsys_coll_algo_free(&copy);
  mlsys_coll_def_free(&def);
  mlsys_coll_algo_free(&algo);
  mlsys_coll_topo_free(&logical);
  mlsys_coll_sketch_free(&sk);
  mlsys_coll_topo_free(&phys);
  return mismatches != 0;
}
