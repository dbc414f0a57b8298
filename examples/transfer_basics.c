/* examples/transfer_basics.c — Skyplane in a page: plan a cloud transfer on the authors' measured grid, compare it
   with the direct path, turn the plan into gateways and run them on this machine.

   1. Load the throughput grid (iperf3 between one VM in each region, 64 TCP connections) and AWS's egress prices;
      GCP's and Azure's come from their 2022 price rules.
   2. Ask for the fastest plan from Azure Canada Central to GCP Tokyo that costs at most 1.23x the direct path per
      GB, with one VM per region (the thesis's Fig. 4.1): the planner relays through Azure West US 2.
   3. Compile the plan into an overlay (one gateway per region, parallel TCP connections per edge, each edge's rate
      emulated at 1 % of the plan's Gbps) and copy 64 MB of generated objects through it into a temporary
      directory, then compare every byte.

   Build: make build/examples/transfer_basics    Run from the repository root: build/examples/transfer_basics */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what) {
  fprintf(stderr, "transfer_basics: %s: %s\n", what, mlsys_last_error());
  return 1;
}

int main(void) {
  mlsys_xfer_grid g;
  mlsys_xfer_grid_opts go = {0};
  mlsys_xfer_problem p;
  mlsys_xfer_plan direct, plan;
  mlsys_xfer_path *paths;
  mlsys_xfer_overlay ov;
  mlsys_xfer_store *src, *dst;
  mlsys_xfer_store_opts so = {0};
  mlsys_xfer_copy_opts co = {0};
  mlsys_xfer_copy_result r;
  mlsys_xfer_obj *a, *b;
  char dir[] = "/tmp/mlsys_transfer_basics_XXXXXX", url[128];
  int np, i, na, nb, same = 1;

  go.units_skyplane = 1;   /* the thesis's Gbps (bits/s / 2^30) */
  if (mlsys_xfer_grid_load("tests/data/skyplane/throughput_premium.csv", "tests/data/skyplane/aws_transfer_costs.csv", &go, &g))
    return fail("loading the grid (run from the repository root)");
  mlsys_xfer_problem_default(&p, mlsys_xfer_grid_find(&g, "azure:canadacentral"), mlsys_xfer_grid_find(&g, "gcp:asia-northeast1-a"));
  p.vm_limit = 1;
  if (mlsys_xfer_plan_direct(&g, &p, 1, &direct)) return fail("direct baseline");
  p.max_cost_per_gb = 1.23 * direct.cost_per_gb;
  if (mlsys_xfer_plan_max_tput(&g, &p, &plan)) return fail("planning");
  printf("direct: %.2f Gbps at $%.4f/GB\nplan:   %.2f Gbps at $%.4f/GB (%.2fx faster, %.2fx the price)\n", direct.tput_gbps,
         direct.cost_per_gb, plan.tput_gbps, plan.cost_per_gb, plan.tput_gbps / direct.tput_gbps, plan.cost_per_gb / direct.cost_per_gb);
  if (mlsys_xfer_plan_paths(&plan, &paths, &np)) return fail("paths");
  for (i = 0; i < np; i++) {
    int k;
    printf("  %6.2f Gbps:", paths[i].gbps);
    for (k = 0; k < paths[i].len; k++) printf(" %s", g.r[paths[i].r[k]].key);
    printf("\n");
  }
  mlsys_xfer_paths_free(paths, np);

  /* the gateways: edges emulated at 1 % of the planned rate so the copy takes about a second */
  if (mlsys_xfer_plan_compile(&g, &plan, 0.01, 64, &ov)) return fail("compiling the overlay");
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  snprintf(url, sizeof url, "file://%s", dir);
  if (mlsys_xfer_store_open("synthetic://16:4M", &so, &src) || mlsys_xfer_store_open(url, &so, &dst)) return fail("opening stores");
  co.gw.chunk_bytes = 256 << 10;   /* small chunks: the pipeline of two hops fills and drains faster */
  if (mlsys_xfer_copy(&ov, src, dst, &co, &r)) return fail("copying");
  printf("copied %llu objects (%.1f MB) through %d gateways in %.2f s: %.3f Gbps emulated = %.2f Gbps at full scale\n",
         (unsigned long long)r.objects, r.bytes / 1e6, ov.ngw, r.seconds, r.gbps, r.gbps / 0.01);
  for (i = 0; i < ov.nedge; i++)
    printf("  %s -> %s: %d connections, %.1f MB\n", ov.gw[ov.edge[i].from].region, ov.gw[ov.edge[i].to].region, ov.edge[i].nconn,
           r.edge_bytes[i] / 1e6);

  /* check: same keys, sizes and bytes */
  if (src->list(src, &a, &na) || dst->list(dst, &b, &nb)) return fail("listing");
  same = na == nb;
  for (i = 0; same && i < na; i++) {
    char *x = (char *)malloc(a[i].size + 1), *y = (char *)malloc(b[i].size + 1);
    same = x && y && !strcmp(a[i].key, b[i].key) && a[i].size == b[i].size && !src->get_range(src, a[i].key, 0, a[i].size, x) &&
           !dst->get_range(dst, b[i].key, 0, b[i].size, y) && !memcmp(x, y, a[i].size);
    free(x); free(y);
  }
  printf("checksum verdict: %s\n", same ? "every object identical" : "MISMATCH");
  mlsys_xfer_objs_free(a, na);
  mlsys_xfer_objs_free(b, nb);
  mlsys_xfer_copy_result_free(&r);
  mlsys_xfer_store_close(src);
  mlsys_xfer_store_close(dst);
  {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "transfer_basics: could not remove %s\n", dir);
  }
  mlsys_xfer_overlay_free(&ov);
  mlsys_xfer_plan_free(&plan);
  mlsys_xfer_plan_free(&direct);
  mlsys_xfer_grid_free(&g);
  return same ? 0 : 1;
}
