// The headers must compile and link as C++ (frameworks vendor them into C++ code bases). Built by `make test`.
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"

int main() {
  mlsys_remat_graph g;
  if (mlsys_remat_graph_chain(4, &g) != MLSYS_OK) return 1;
  mlsys_remat_opts o = {};
  mlsys_remat_schedule s;
  mlsys_status st = mlsys_remat_solve(&g, 5, &o, &s);   // chain L=4, budget 5 → cost 10 (spec T5)
  int ok = st == MLSYS_OK && s.cost == 10;
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
  return ok ? 0 : 1;
}
