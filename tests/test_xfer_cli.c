/* `mlsys transfer`: plan --json keys checked against the library on the real grid (the plan, the direct and RON
   baselines computed here), the Fig. 4.1 route, plan files read back and run by `cp --plan`, `cp` between file
   stores through a relay byte for byte, `gateway` processes of a plan, and bad input (exit 1, one message naming
   the problem) and bad usage (exit 2). Runs the binary named by $MLSYS_BIN (default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include "tests/test.h"

#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli_run.h"
static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(1e-12, fmax(fabs(a), fabs(b))); }

TEST(plan_json_matches_library) {
  run_result r = run("transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --units skyplane "
                     "--max-cost-per-gb 0.1076 --json");
  mlsys_json_doc doc;
  mlsys_xfer_grid g;
  mlsys_xfer_grid_opts go;
  mlsys_xfer_problem p;
  mlsys_xfer_plan pl, d, ron;
  static const char *keys[] = {"status", "throughput_gbps", "cost_per_gb", "vms", "paths", "solve_seconds", "direct_gbps",
                               "direct_cost_per_gb", "ron_gbps", "speedup_vs_direct", "bottlenecks"};
  size_t i;
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out != NULL);
  REQUIRE_OK(mlsys_json_parse(r.out, strlen(r.out), "plan", &doc));
  for (i = 0; i < sizeof keys / sizeof keys[0]; i++) CHECK_MSG(mlsys_json_get(doc.root, keys[i]) != NULL, "key %s missing", keys[i]);
  memset(&go, 0, sizeof go);
  go.units_skyplane = 1;
  REQUIRE_OK(mlsys_xfer_grid_load("tests/data/skyplane/throughput_premium.csv", "tests/data/skyplane/aws_transfer_costs.csv", &go, &g));
  mlsys_xfer_problem_default(&p, mlsys_xfer_grid_find(&g, "azure:canadacentral"), mlsys_xfer_grid_find(&g, "gcp:asia-northeast1-a"));
  p.vm_limit = 1; p.max_cost_per_gb = 0.1076;
  REQUIRE_OK(mlsys_xfer_plan_max_tput(&g, &p, &pl));
  REQUIRE_OK(mlsys_xfer_plan_direct(&g, &p, 1, &d));
  REQUIRE_OK(mlsys_xfer_plan_ron(&g, &p, 1, &ron));
  CHECK_MSG(near(num(doc.root, "throughput_gbps"), pl.tput_gbps, 1e-9), "CLI %.6f vs library %.6f", num(doc.root, "throughput_gbps"), pl.tput_gbps);
  CHECK(near(num(doc.root, "cost_per_gb"), pl.cost_per_gb, 1e-9));
  CHECK(near(num(doc.root, "direct_gbps"), d.tput_gbps, 1e-9));
  CHECK(near(num(doc.root, "ron_gbps"), ron.tput_gbps, 1e-9));
  /* Fig 4.1: about 2x the direct path at about 1.2x its price */
  CHECK(num(doc.root, "speedup_vs_direct") >= 1.95);
  CHECK(num(doc.root, "cost_per_gb") <= 1.23 * d.cost_per_gb);
  {
    const mlsys_json *paths = mlsys_json_get(doc.root, "paths"), *vms = mlsys_json_get(doc.root, "vms");
    double sum = 0;
    int k;
    REQUIRE(paths && paths->type == MLSYS_JSON_ARRAY && paths->count >= 1);
    for (k = 0; k < paths->count; k++) sum += num(mlsys_json_at(paths, k), "gbps");
    CHECK(near(sum, pl.tput_gbps, 1e-6));
    CHECK(vms && vms->type == MLSYS_JSON_OBJECT && vms->count >= 3);
  }
  mlsys_xfer_plan_free(&pl); mlsys_xfer_plan_free(&d); mlsys_xfer_plan_free(&ron);
  mlsys_xfer_grid_free(&g);
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

TEST(plan_bad_input_and_usage) {
  static const struct { const char *args, *expect; int code; } cases[] = {
      {"transfer plan --src aws:us-east-1 --dst aws:nowhere-1", "--dst 'aws:nowhere-1' is not a region of the grid", 1},
      {"transfer plan --src azure:canadacentral --dst gcp:asia-northeast1", "did you mean gcp:asia-northeast1-a?", 1},
      {"transfer plan --src aws:nowhere-1 --dst aws:nowhere-2", "neither --src 'aws:nowhere-1'", 1},
      {"transfer plan --src aws:us-east-1 --dst aws:us-east-1", "both", 1},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --goal-gbps 5000", "above", 1},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --max-cost-per-gb 0.0001", "costs at most", 1},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --grid /nonexistent.csv", "nonexistent", 1},
      {"transfer plan --src aws:us-east-1", "--dst", 2},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --goal-gbps 1 --max-cost-per-gb 1", "not both", 2},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --goal-gbps -1", "--goal-gbps", 2},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --rounding sideways", "--rounding", 2},
      {"transfer plan --src aws:us-east-1 --dst gcp:us-central1-a --units furlongs", "--units", 2},
      {"transfer frobnicate", "unknown verb", 2},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r = run(cases[i].args);
    CHECK_MSG(r.code == cases[i].code, "%s: exit %d, expected %d", cases[i].args, r.code, cases[i].code);
    CHECK_MSG(r.err && strstr(r.err, cases[i].expect), "%s: stderr '%s' lacks '%s'", cases[i].args, r.err ? r.err : "", cases[i].expect);
    run_free(&r);
  }
}

/* Issue 19 item 6: a pair the grid has no row for (and no relay joins) is named, with what the grid holds for it,
   by plan (with and without a goal or a ceiling) and pareto: exit 1, one line, not "throughput goal 0 Gbps". */
TEST(plan_pair_without_a_row) {
  char path[] = "/tmp/mlsys_xcli_gridXXXXXX", args[512];
  static const char *csv = "src_region,dst_region,throughput_sent,success\n"
                           "aws:us-east-1,aws:us-west-2,5e9,True\n"
                           "aws:eu-west-1,aws:us-west-2,5e9,True\n";
  static const char *modes[] = {"plan", "plan --goal-gbps 1", "plan --max-cost-per-gb 1", "pareto"};
  int fd = mkstemp(path);
  size_t i;
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, csv, strlen(csv)) == (ssize_t)strlen(csv));
  close(fd);
  for (i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    run_result r;
    snprintf(args, sizeof args, "transfer %s --grid %s --src aws:us-east-1 --dst aws:eu-west-1", modes[i], path);
    r = run(args);
    CHECK_MSG(r.code == 1, "%s: exit %d", args, r.code);
    CHECK_MSG(r.err && strstr(r.err, "no path from aws:us-east-1 to aws:eu-west-1: the grid has no row aws:us-east-1 -> aws:eu-west-1"),
              "%s: stderr '%s'", args, r.err ? r.err : "");
    CHECK_MSG(r.err && strstr(r.err, "no region of the grid (3 regions) has a measured link to aws:eu-west-1"), "%s: stderr '%s'", args,
              r.err ? r.err : "");
    CHECK(r.err && strchr(r.err, '\n') == r.err + strlen(r.err) - 1);   /* one line */
    run_free(&r);
  }
  unlink(path);
}

/* Issue 19 item 12: the command, and the default goal (the max flow) on a route where lp_solve called it
   infeasible, plan without a solver failure. Item 8: with no --grid the committed grid is found beside the binary's
   repository from any working directory (tests/data/skyplane, nothing outside the repository). */
TEST(plan_numerics_and_default_grid) {
  run_result r = run("transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-cost-per-gb 0.2 --json");
  char exe[2048], cwd[1024], cmd[8192], outp[] = "/tmp/mlsys_xcli_outXXXXXX";
  char *text = NULL;
  size_t len;
  int fo;
  CHECK_MSG(r.code == 0, "exit %d: %s", r.code, r.err ? r.err : "");
  CHECK(r.out && strstr(r.out, "\"status\": \"ok\""));
  run_free(&r);
  r = run("transfer plan --src azure:uksouth --dst aws:eu-central-1 --max-vms 1");
  CHECK_MSG(r.code == 0, "exit %d: %s", r.code, r.err ? r.err : "");
  run_free(&r);
  REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
  snprintf(exe, sizeof exe, "%s%s%s", bin()[0] == '/' ? "" : cwd, bin()[0] == '/' ? "" : "/", bin());
  fo = mkstemp(outp);
  REQUIRE(fo >= 0);
  close(fo);
  snprintf(cmd, sizeof cmd, "cd / && '%s' transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --units skyplane "
           "--goal-gbps 12 --json > '%s' 2>&1", exe, outp);
  CHECK_MSG(system(cmd) == 0, "from /: %.300s", cmd);
  REQUIRE_OK(mlsys_read_file(outp, &text, &len));
  CHECK_MSG(strstr(text, "\"status\": \"ok\"") != NULL, "from /: %.300s", text);
  mlsys_free(text);
  unlink(outp);
}

static int same_file(const char *a, const char *b) {
  char *x = NULL, *y = NULL;
  size_t lx = 0, ly = 0;
  int ok;
  if (mlsys_read_file(a, &x, &lx) || mlsys_read_file(b, &y, &ly)) { mlsys_free(x); mlsys_free(y); return 0; }
  ok = lx == ly && memcmp(x, y, lx) == 0;
  mlsys_free(x); mlsys_free(y);
  return ok;
}

TEST(cp_files_through_relay_and_plan) {
  char dir[] = "/tmp/mlsys_xcli_XXXXXX", args[1024], p1[512], p2[512];
  run_result r;
  FILE *f;
  int i;
  mlsys_rng rng;
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args, "mkdir -p %s/src/sub/deeper %s/plans", dir, dir);
  REQUIRE(system(args) == 0);
  mlsys_rng_seed(&rng, 5);
  /* real-file sizes around the chunk size (1 MiB): 0, 1, chunk - 1, chunk, chunk + 1, several chunks */
  {
    static const long sizes[] = {0, 1, 1048575, 1048576, 1048577, 3 * 1048576 + 17, 12345};
    static const char *names[] = {"empty", "one", "sub/a", "sub/b", "sub/deeper/c", "big", "with space"};
    for (i = 0; i < 7; i++) {
      long k;
      snprintf(p1, sizeof p1, "%s/src/%s", dir, names[i]);
      f = fopen(p1, "wb");
      REQUIRE(f != NULL);
      for (k = 0; k < sizes[i]; k++) fputc((int)mlsys_rng_below(&rng, 256), f);
      fclose(f);
    }
  }
  snprintf(args, sizeof args, "transfer cp file://%s/src file://%s/dst --relay --conns 4 --chunk-mib 1 --verify --json", dir, dir);
  r = run(args);
  CHECK_MSG(r.code == 0, "exit %d: %s", r.code, r.err ? r.err : "");
  CHECK(r.out && strstr(r.out, "\"verified\": true"));
  CHECK(r.out && strstr(r.out, "\"objects\": 7"));
  run_free(&r);
  snprintf(p1, sizeof p1, "%s/src/sub/deeper/c", dir);
  snprintf(p2, sizeof p2, "%s/dst/sub/deeper/c", dir);
  CHECK(same_file(p1, p2));   /* independent of our own verifier */
  /* a plan file from `plan` drives `cp --plan` */
  snprintf(args, sizeof args, "transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --max-cost-per-gb 0.11 "
           "--plan-out %s/plans/p.json", dir);
  r = run(args);
  CHECK_MSG(r.code == 0, "plan exit %d: %s", r.code, r.err ? r.err : "");
  run_free(&r);
  snprintf(args, sizeof args, "transfer cp file://%s/src file://%s/dst2 --plan %s/plans/p.json --chunk-mib 1 --verify", dir, dir, dir);
  r = run(args);
  CHECK_MSG(r.code == 0, "cp --plan exit %d: %s", r.code, r.err ? r.err : "");
  CHECK(r.out && strstr(r.out, "7 objects identical"));
  CHECK(r.out && strstr(r.out, "azure:westus2"));
  run_free(&r);
  snprintf(p2, sizeof p2, "%s/dst2/big", dir);
  snprintf(p1, sizeof p1, "%s/src/big", dir);
  CHECK(same_file(p1, p2));
  /* the same plan run as separate gateway processes on fixed ports */
  {
    int base = 42000 + (int)(getpid() % 2000) * 8, k, ngw = 0;
    mlsys_xfer_overlay ov;
    char *text;
    size_t len;
    snprintf(args, sizeof args, "transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --max-cost-per-gb 0.11 "
             "--plan-out %s/plans/mp.json --base-port %d", dir, base);
    r = run(args);
    CHECK_EQ_INT(r.code, 0);
    run_free(&r);
    snprintf(p1, sizeof p1, "%s/plans/mp.json", dir);
    REQUIRE_OK(mlsys_read_file(p1, &text, &len));
    REQUIRE_OK(mlsys_xfer_overlay_read_json(text, len, p1, &ov));
    mlsys_free(text);
    ngw = ov.ngw;
    CHECK_EQ_INT(ov.gw[0].port, base);
    mlsys_xfer_overlay_free(&ov);
    {
      char sh[4096];
      int n = 0;
      n += snprintf(sh + n, sizeof sh - n, "(");
      for (k = ngw - 1; k >= 1; k--)
        n += snprintf(sh + n, sizeof sh - n, "%s transfer gateway --plan %s --id %d %s%s%s --timeout 300 > /dev/null & ", bin(), p1, k,
                      k == ngw - 1 ? "--store file://" : "", k == ngw - 1 ? dir : "", k == ngw - 1 ? "/dst3" : "");
      n += snprintf(sh + n, sizeof sh - n, "sleep 0.5; %s transfer gateway --plan %s --id 0 --store file://%s/src --timeout 300 > /dev/null; r=$?; wait; exit $r)", bin(), p1, dir);
      CHECK_MSG(system(sh) == 0, "gateway processes failed: %.300s", sh);
    }
    snprintf(p2, sizeof p2, "%s/dst3/sub/a", dir);
    snprintf(p1, sizeof p1, "%s/src/sub/a", dir);
    CHECK(same_file(p1, p2));
    snprintf(p2, sizeof p2, "%s/dst3/empty", dir);
    CHECK(access(p2, F_OK) == 0);
  }
  snprintf(args, sizeof args, "rm -rf %s", dir);
  CHECK(system(args) == 0);
}

TEST(cp_bad_input_and_usage) {
  char path[] = "/tmp/mlsys_xcli_planXXXXXX", args[512];
  int fd = mkstemp(path);
  static const char *bad_plan = "{\"gateways\": [{\"id\": 0, \"role\": \"src\"}], \"edges\": []}";
  run_result r;
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bad_plan, strlen(bad_plan)) == (ssize_t)strlen(bad_plan));
  close(fd);
  snprintf(args, sizeof args, "transfer cp synthetic://2:1K file:///tmp/mlsys_xcli_never --plan %s", path);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, path) && strstr(r.err, "destination"));
  run_free(&r);
  unlink(path);
  r = run("transfer cp nope://x file:///tmp/mlsys_xcli_never");
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "unknown scheme"));
  run_free(&r);
  r = run("transfer cp synthetic://x file:///tmp/mlsys_xcli_never");
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "synthetic"));
  run_free(&r);
  r = run("transfer cp synthetic://2:1K");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("transfer cp synthetic://2:1K file:///tmp/mlsys_xcli_never --conns 99");
  CHECK_EQ_INT(r.code, 2);
  CHECK(r.err && strstr(r.err, "--conns"));
  run_free(&r);
  r = run("transfer gateway --plan /nonexistent.json --id 0");
  CHECK_EQ_INT(r.code, 1);
  CHECK(r.err && strstr(r.err, "nonexistent"));
  run_free(&r);
  CHECK(system("rm -rf /tmp/mlsys_xcli_never") == 0);
}

TEST_MAIN()
