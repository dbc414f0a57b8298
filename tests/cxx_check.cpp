// The headers must compile and link as C++ (frameworks vendor them into C++ code bases). Built by `make test`.
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "mlsys_collective.h"
#include "mlsys_transfer.h"
#include "mlsys_pipeline.h"
#include "mlsys_pcr.h"
#include "mlsys_relm.h"
#include "mlsys_index.h"
#include "mlsys_offload.h"
#include "mlsys_cloud.h"
#include "mlsys_contracode.h"

int main() {
  mlsys_remat_graph g;
  if (mlsys_remat_graph_chain(4, &g) != MLSYS_OK) return 1;
  mlsys_remat_opts o = {};
  mlsys_remat_schedule s;
  mlsys_status st = mlsys_remat_solve(&g, 5, &o, &s);   // chain L=4, budget 5 → cost 10 (spec T5)
  int ok = st == MLSYS_OK && s.cost == 10;
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
  // TACCL T1: ALLGATHER on a 4-rank unidirectional ring with lat 10 takes 30
  mlsys_coll_topo t;
  mlsys_coll_cost c = {10, 0};
  if (mlsys_coll_topo_ring(4, 0, c, &t) != MLSYS_OK) return 1;
  mlsys_coll_algo a;
  mlsys_coll_stats cs;
  if (mlsys_coll_synthesize(&t, NULL, MLSYS_COLL_ALLGATHER, 1 << 20, &a, NULL, &cs) != MLSYS_OK) ok = 0;
  else ok = ok && a.time_us > 30 - 1e-9 && a.time_us < 30 + 1e-9;
  mlsys_coll_algo_free(&a);
  mlsys_coll_topo_free(&t);
  // MAPLE: a fragmented-log index finds what it was built with
  uint64_t keys[3] = {5, 1, 3}, v = 0;
  mlsys_index_config ic = {};
  ic.leaf = MLSYS_INDEX_FLOG;
  mlsys_index *ix;
  if (mlsys_index_create(&ic, keys, NULL, 3, &ix) != MLSYS_OK) return 1;
  ok = ok && mlsys_index_find(ix, 3, &v) == 1 && v == mlsys_index_payload_of(3) && mlsys_index_insert(ix, 4, 9) == 1;
  mlsys_index_free(ix);
  // DyNN-Offload: a 2-op trace fits its peak and runs in Σc under PyTorch
  mlsys_offload_trace tr;
  mlsys_offload_trace_init(&tr);
  int x = mlsys_offload_trace_tensor(&tr, 100, MLSYS_OFFLOAD_T_INPUT), y = mlsys_offload_trace_tensor(&tr, 50, MLSYS_OFFLOAD_T_ACT);
  ok = ok && mlsys_offload_trace_op(&tr, "Relu", 2.5, 1, &x, 1, &y, 0, NULL) == 0;
  mlsys_offload_hw hw = {};
  hw.gpu_bytes = mlsys_offload_peak_bytes(&tr);
  mlsys_offload_simres r;
  ok = ok && hw.gpu_bytes == 150 && mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_PYTORCH, &r) == MLSYS_OK && r.feasible &&
       r.time_us == 2.5;
  mlsys_offload_trace_free(&tr);
  return ok ? 0 : 1;
}
