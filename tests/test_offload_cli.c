/* `mlsys offload simulate|plan`: --json against the library on the same trace (a bundled DTR log and a trace written
   here in our format), the documented keys, --gpu-mem as bytes and as a percentage of the peak, and bad input (exit 1,
   a message naming the problem) and bad usage (exit 2). Runs $MLSYS_BIN (default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"
#include "tests/cli_run.h"

static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}

static int run_json(const char *args, mlsys_json_doc *doc) {
  run_result r = run(args);
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", doc) == MLSYS_OK;
  if (!ok) printf("    mlsys %s: exit %d, stderr: %s\n", args, r.code, r.err ? r.err : "(none)");
  run_free(&r);
  return ok;
}

/* a 12-layer chain (forward, backward) in our format at path; returns its library trace in tr */
static void write_chain(const char *path, mlsys_offload_trace *tr) {
  int i, a[13], W[12], g;
  FILE *f;
  mlsys_offload_trace_init(tr);
  a[0] = mlsys_offload_trace_tensor(tr, 4 << 20, MLSYS_OFFLOAD_T_INPUT);
  for (i = 0; i < 12; i++) W[i] = mlsys_offload_trace_tensor(tr, 1 << 20, MLSYS_OFFLOAD_T_PARAM);
  for (i = 0; i < 12; i++) {
    int in[2] = {a[i], W[i]};
    a[i + 1] = mlsys_offload_trace_tensor(tr, 4 << 20, MLSYS_OFFLOAD_T_ACT);
    mlsys_offload_trace_op(tr, "MatMul", 100, 2, in, 1, &a[i + 1], 0, NULL);
  }
  g = a[12];
  for (i = 11; i >= 0; i--) {
    int in[3] = {g, a[i], W[i]}, out[2];
    out[0] = mlsys_offload_trace_tensor(tr, 4 << 20, MLSYS_OFFLOAD_T_GRAD);
    out[1] = mlsys_offload_trace_tensor(tr, 1 << 20, MLSYS_OFFLOAD_T_GRAD);
    mlsys_offload_trace_op(tr, "MatMulBackward", 200, 3, in, 2, out, 0, NULL);
    g = out[0];
  }
  f = fopen(path, "w");
  if (f) {
    mlsys_offload_trace_write(f, tr);
    fclose(f);
  }
}

TEST(simulate_json_matches_library) {
  char path[] = "/tmp/mlsys_offload_cliXXXXXX", args[512];
  int fd = mkstemp(path), p;
  mlsys_offload_trace tr;
  mlsys_json_doc doc;
  const mlsys_json *pol;
  int64_t peak;
  static const char *keys[] = {"feasible", "why", "time_s", "compute_s", "migration_s", "recompute_s", "other_s",
                               "peak_bytes", "bytes_h2d", "bytes_d2h", "n_blocks", "n_remat", "n_faults"};
  REQUIRE(fd >= 0);
  close(fd);
  write_chain(path, &tr);
  peak = mlsys_offload_peak_bytes(&tr);
  snprintf(args, sizeof args, "offload simulate --trace %s --gpu-mem 50%% --policy dynn --json", path);
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT((int64_t)num(doc.root, "peak_bytes_no_offload"), peak);
  CHECK_EQ_INT((int64_t)num(doc.root, "gpu_mem"), (int64_t)floor(peak * 0.5));
  pol = mlsys_json_get(doc.root, "policies");
  REQUIRE(pol && pol->type == MLSYS_JSON_OBJECT && pol->count == 1);
  {
    const mlsys_json *d = mlsys_json_get(pol, "dynn");
    mlsys_offload_hw hw;
    mlsys_offload_simres r;
    REQUIRE(d);
    for (p = 0; p < (int)(sizeof keys / sizeof keys[0]); p++) CHECK_MSG(mlsys_json_get(d, keys[p]) != NULL, "dynn lacks %s", keys[p]);
    memset(&hw, 0, sizeof hw);
    hw.gpu_bytes = (int64_t)floor(peak * 0.5);
    REQUIRE_OK(mlsys_offload_simulate(&tr, &hw, MLSYS_OFFLOAD_POLICY_DYNN, &r));
    CHECK(r.feasible);
    CHECK(mlsys_json_get(d, "feasible")->boolean == 1);
    CHECK_NEAR(num(d, "time_s"), r.time_us / 1e6, 1e-8 * r.time_us / 1e6);
    CHECK_NEAR(num(d, "compute_s"), 12 * 300e-6, 1e-12);
    CHECK_EQ_INT((int64_t)num(d, "bytes_h2d"), r.bytes_h2d);
    CHECK(num(d, "peak_bytes") <= hw.gpu_bytes);
  }
  mlsys_json_doc_free(&doc);
  /* PyTorch at 40 % of its peak: not feasible, and said so (exit 0: a verdict, not an error) */
  snprintf(args, sizeof args, "offload simulate --trace %s --gpu-mem 40%% --policy pytorch --json", path);
  REQUIRE(run_json(args, &doc));
  pol = mlsys_json_get(mlsys_json_get(doc.root, "policies"), "pytorch");
  REQUIRE(pol);
  CHECK(mlsys_json_get(pol, "feasible")->boolean == 0);
  CHECK(strstr(mlsys_json_get(pol, "why")->str, "out of memory") != NULL);
  mlsys_json_doc_free(&doc);
  /* bytes instead of a percentage: the same answer */
  snprintf(args, sizeof args, "offload simulate --trace %s --gpu-mem %lld --policy pytorch --json", path, (long long)peak);
  REQUIRE(run_json(args, &doc));
  pol = mlsys_json_get(mlsys_json_get(doc.root, "policies"), "pytorch");
  CHECK(pol && mlsys_json_get(pol, "feasible")->boolean == 1);
  CHECK_NEAR(num(pol, "time_s"), 12 * 300e-6, 1e-12);
  mlsys_json_doc_free(&doc);
  unlink(path);
  mlsys_offload_trace_free(&tr);
}

TEST(plan_json_blocks_cover_the_trace) {
  /* the bundled unet trace at half its peak: blocks contiguous from 0 to n, Σ compute = compute_us, each working set
     within the buffer, and time_us = the library's DP on the same trace */
  mlsys_json_doc doc;
  const mlsys_json *bl;
  int i, prev = 0;
  double csum = 0;
  if (system("command -v unzip >/dev/null 2>&1") != 0) SKIP_DEP("unzip is not installed");
  REQUIRE(run_json("offload plan --trace unet-6 --gpu-mem 50% --json", &doc));
  bl = mlsys_json_get(doc.root, "blocks");
  REQUIRE(bl && bl->type == MLSYS_JSON_ARRAY && bl->count >= 2);
  for (i = 0; i < bl->count; i++) {
    const mlsys_json *b = mlsys_json_at(bl, i), *v = mlsys_json_get(b, "vec");
    CHECK_EQ_INT((int)num(b, "start"), prev);
    prev = (int)num(b, "end");
    CHECK(num(b, "ws_bytes") <= num(doc.root, "buf_bytes"));
    CHECK(v && v->count == 10 && mlsys_json_at(v, 0)->num == num(b, "ops"));
    csum += num(b, "compute_us");
  }
  CHECK_EQ_INT(prev, 360);
  CHECK_NEAR(csum, num(doc.root, "compute_us"), 1e-6 * csum);
  CHECK(num(doc.root, "time_us") >= num(doc.root, "compute_us"));
  mlsys_json_doc_free(&doc);
  /* an even split into 4 needs splitting to fit, and is never faster than the DP */
  {
    mlsys_json_doc d2;
    double tdp;
    REQUIRE(run_json("offload plan --trace unet-6 --gpu-mem 50% --json", &doc));
    tdp = num(doc.root, "time_us");
    REQUIRE(run_json("offload plan --trace unet-6 --gpu-mem 50% --part even-ops --k 4 --json", &d2));
    CHECK(num(d2.root, "time_us") >= tdp);
    CHECK(num(d2.root, "split_extra") >= 0);
    mlsys_json_doc_free(&d2);
    mlsys_json_doc_free(&doc);
  }
}

TEST(bad_input_and_usage) {
  static const struct { const char *args; int code; const char *msg; } cases[] = {
      {"offload simulate --gpu-mem 1GB", 2, "--trace"},
      {"offload simulate --trace unet-6", 2, "--gpu-mem"},
      {"offload simulate --trace unet-6 --gpu-mem lots", 2, "--gpu-mem"},
      {"offload simulate --trace unet-6 --gpu-mem 0%", 2, "percentage"},
      {"offload simulate --trace unet-6 --gpu-mem 1GB --policy magic", 2, "--policy"},
      {"offload simulate --trace unet-6 --gpu-mem 1GB --pcie-gbps -3", 2, "--pcie-gbps"},
      {"offload simulate --trace unet-6 --gpu-mem 1GB --format xml", 2, "--format"},
      {"offload simulate --trace no-such-trace --gpu-mem 1GB", 1, "no-such-trace"},
      {"offload simulate --trace /nonexistent/t.jsonl --gpu-mem 1GB", 1, "/nonexistent/t.jsonl"},
      {"offload plan --trace unet-6 --gpu-mem 50% --part even-ops", 2, "--k"},
      {"offload plan --trace unet-6 --gpu-mem 50% --part zigzag --k 3", 2, "--part"},
      {"offload plan --trace unet-6 --gpu-mem 1KB", 1, "buffer"},
      {"offload frobnicate", 2, "frobnicate"},
      {"offload train-pilot --act-frac -1", 2, "--act-frac"},
      {"offload train-pilot --epochs 0", 2, "--epochs"},
      {"offload train-pilot --samples 3", 2, "--samples"},
      {"offload train-pilot --model cnn", 2, "--model"},
      {"offload train-pilot --trees /nonexistent/trees.txt", 1, "/nonexistent/trees.txt"},
  };
  int i;
  char path[] = "/tmp/mlsys_offload_badXXXXXX";
  int fd = mkstemp(path);
  if (system("command -v unzip >/dev/null 2>&1") != 0) SKIP_DEP("unzip is not installed");
  for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    run_result r = run(cases[i].args);
    CHECK_MSG(r.code == cases[i].code, "`mlsys %s` exited %d, expected %d", cases[i].args, r.code, cases[i].code);
    CHECK_MSG(r.err && strstr(r.err, cases[i].msg), "`mlsys %s`: stderr '%s' lacks '%s'", cases[i].args, r.err ? r.err : "",
              cases[i].msg);
    run_free(&r);
  }
  /* a malformed trace in our format: exit 1 naming file and line */
  if (fd >= 0) {
    char args[256];
    run_result r;
    const char *bad = "{\"mlsys_offload_trace\":1}\n{\"t\":0,\"bytes\":4}\n{\"op\":\"Add\",\"us\":1,\"in\":[3]}\n";
    if (write(fd, bad, strlen(bad)) < 0) {}
    close(fd);
    snprintf(args, sizeof args, "offload simulate --trace %s --gpu-mem 1MB", path);
    r = run(args);
    CHECK_EQ_INT(r.code, 1);
    CHECK_MSG(r.err && strstr(r.err, ":3:") && strstr(r.err, "tensor 3"), "stderr: %s", r.err ? r.err : "");
    run_free(&r);
    unlink(path);
  }
}

/* train-pilot on the first 100 bundled trees for 5 epochs: the documented keys, sample counts that add up, the saved
   model loads, and the JSON's test counts equal the library's evaluation of that model on the same samples. */
TEST(train_pilot_json_and_model_file) {
  mlsys_json_doc doc;
  const mlsys_json *t, *smp;
  char path[] = "/tmp/mlsys_pilotXXXXXX", args[256];
  int fd = mkstemp(path);
  mlsys_offload_pilot *m = NULL;
  REQUIRE(fd >= 0);
  close(fd);
  snprintf(args, sizeof args, "offload train-pilot --samples 100 --epochs 5 --out %s --json", path);
  REQUIRE(run_json(args, &doc));
  t = mlsys_json_get(doc.root, "test");
  smp = mlsys_json_get(doc.root, "samples");
  REQUIRE(t && smp);
  CHECK(num(doc.root, "trees") == 100);
  CHECK(num(smp, "train") + num(mlsys_json_get(doc.root, "infeasible"), "train") == 70);
  CHECK(num(smp, "test") + num(mlsys_json_get(doc.root, "infeasible"), "test") == 20);
  CHECK(num(doc.root, "epochs") == 5 && num(doc.root, "best_epoch") >= 1);
  CHECK(num(t, "n") == num(smp, "test") && num(t, "exact") <= num(t, "n") && num(t, "mispred") <= num(t, "n"));
  CHECK(num(t, "time_pred_us") >= num(t, "compute_us") && num(t, "time_label_us") >= num(t, "compute_us"));
  CHECK(num(doc.root, "params") > 0 && num(doc.root, "inference_us") > 0);
  /* Tree-LSTM plans hardly repeat: ours without snapping, and the labels' counts say why */
  {
    const mlsys_json *lb = mlsys_json_get(doc.root, "labels"), *pj = mlsys_json_get(doc.root, "pilot"),
                     *sj = mlsys_json_get(doc.root, "snap");
    REQUIRE(lb && pj && sj && pj->type == MLSYS_JSON_STRING);
    CHECK(!strcmp(pj->str, "ours") && sj->type == MLSYS_JSON_BOOL && !sj->boolean);
    CHECK(num(lb, "train_distinct") * 4 > num(smp, "train") && num(lb, "train_distinct") <= num(smp, "train"));
    CHECK(num(lb, "test_seen") <= num(smp, "test"));
  }
  REQUIRE_OK(mlsys_offload_pilot_load(path, &m));
  CHECK(mlsys_offload_pilot_nparams(m) == (size_t)num(doc.root, "params"));
  CHECK(mlsys_offload_pilot_config(m).len_code == 32 && mlsys_offload_pilot_config(m).adam == 1);
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), 0);
  {
    /* the same test samples through the library, from the saved model */
    char *a = NULL;
    size_t la = 0;
    mlsys_offload_tree *tr = NULL;
    mlsys_offload_data_opts o;
    mlsys_offload_pilot_data d;
    mlsys_offload_pilot_eval ev;
    int n = 0, i;
    REQUIRE_OK(mlsys_read_file("tests/data/offload/trees.txt", &a, &la));
    REQUIRE_OK(mlsys_offload_trees_parse(a, la, "trees", &tr, &n));
    memset(&o, 0, sizeof o);
    o.pin_weights = 1;
    o.hw.gpu_bytes = (int64_t)num(doc.root, "gpu_mem");
    REQUIRE_OK(mlsys_offload_pilot_data_make(m, tr + 80, 20, &o, &d));
    REQUIRE_OK(mlsys_offload_pilot_evaluate(m, &d, &o.hw, &ev));
    CHECK(ev.n == num(t, "n") && ev.exact == num(t, "exact") && ev.mispred == num(t, "mispred") &&
          ev.k_exact == num(t, "k_exact"));
    CHECK_NEAR(ev.time_pred_us, num(t, "time_pred_us"), 1e-6 * ev.time_pred_us);
    mlsys_offload_pilot_data_free(&d);
    for (i = 0; i < n; i++) mlsys_offload_tree_free(&tr[i]);
    free(tr);
    free(a);
  }
  mlsys_offload_pilot_free(m);
  mlsys_json_doc_free(&doc);
  unlink(path);
}

/* var-LSTM plans repeat (they follow the document's length): ours snaps, and the saved model holds exactly the
   training set's distinct plans; --seed-pilot trains the seed's pilot (no length code, SGD, no codebook). */
TEST(train_pilot_snaps_where_plans_repeat) {
  mlsys_json_doc doc;
  char path[] = "/tmp/mlsys_pilotXXXXXX", args[256];
  int fd = mkstemp(path);
  mlsys_offload_pilot *m = NULL;
  const mlsys_json *lb, *sj, *pj;
  REQUIRE(fd >= 0);
  close(fd);
  snprintf(args, sizeof args, "offload train-pilot --model varlstm --samples 200 --epochs 3 --out %s --json", path);
  REQUIRE(run_json(args, &doc));
  lb = mlsys_json_get(doc.root, "labels");
  sj = mlsys_json_get(doc.root, "snap");
  REQUIRE(lb && sj);
  CHECK(sj->type == MLSYS_JSON_BOOL && sj->boolean);
  CHECK(num(lb, "train_distinct") * 4 <= num(mlsys_json_get(doc.root, "samples"), "train"));
  REQUIRE_OK(mlsys_offload_pilot_load(path, &m));
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), (int)num(lb, "train_distinct"));
  mlsys_offload_pilot_free(m);
  mlsys_json_doc_free(&doc);
  snprintf(args, sizeof args, "offload train-pilot --model varlstm --samples 200 --epochs 3 --seed-pilot --out %s --json", path);
  REQUIRE(run_json(args, &doc));
  pj = mlsys_json_get(doc.root, "pilot");
  sj = mlsys_json_get(doc.root, "snap");
  REQUIRE(pj && sj && pj->type == MLSYS_JSON_STRING);
  CHECK(!strcmp(pj->str, "seed") && sj->type == MLSYS_JSON_BOOL && !sj->boolean);
  CHECK(num(doc.root, "params") == 15536);
  REQUIRE_OK(mlsys_offload_pilot_load(path, &m));
  CHECK(mlsys_offload_pilot_config(m).len_code == 0 && mlsys_offload_pilot_config(m).adam == 0);
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), 0);
  mlsys_offload_pilot_free(m);
  mlsys_json_doc_free(&doc);
  unlink(path);
}

TEST_MAIN()
