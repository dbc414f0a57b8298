/* cli/offload.c — `mlsys offload simulate|plan`: DyNN-Offload and its baselines on an operator trace. */
#include "mlsys_offload.h"
#include "cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *offload_help =
    "usage: mlsys offload simulate --trace FILE --gpu-mem BYTES|PCT [--policy P] [--format auto|dtr|mlsys]\n"
    "                              [--pcie-gbps G] [--json]\n"
    "       mlsys offload plan --trace FILE --gpu-mem BYTES|PCT [--part dp|even-ops|even-time|even-bytes] [--k N]\n"
    "                          [--k-max N] [--format ...] [--pcie-gbps G] [--json]\n"
    "       mlsys offload max-batch --model treelstm|varlstm|varbert|moe --gpu-mem BYTES [--layers N] [--hidden N]\n"
    "                          [--seq-len N] [--limit N] [--cap 2] [--pcie-gbps G] [--json]\n"
    "       mlsys offload train-pilot [--model treelstm|varlstm|varbert|moe] [--samples N] [--batch B] [--trees FILE]\n"
    "                          [--act-frac 0.5] [--no-pin] [--epochs 600] [--seed-pilot] [--out pilot.bin]\n"
    "                          [--pcie-gbps G] [--json]\n"
    "\n"
    "DyNN-Offload (HPCA 2024) splits one training iteration's operator stream into execution blocks; GPU memory is two\n"
    "buffers, and while block i+1 computes, block i's dirty tensors are evicted and block i+2's prefetched. docs/offload.md.\n"
    "\n"
    "  --trace FILE     an operator trace: our JSON lines (docs/offload.md) or a DTR prototype log; or NAME, one of the\n"
    "                   DTR paper's traces bundled with the repository (tests/data/dtr/logs.zip): unet-6,\n"
    "                   resnet32-56, inceptionv4-64, transformer-10, tv_densenet121-84, treelstm-6, lstm-128,\n"
    "                   unroll_gan-512\n"
    "  --gpu-mem M      GPU memory: bytes (\"8GiB\") or a percentage of the trace's peak without offloading (\"50%\")\n"
    "  --policy P       dynn, dtr, uvm, zero, pytorch or all (default all)\n"
    "  --pcie-gbps G    host-device bandwidth each way, GB/s (default 12: PCIe 3.0 x16, the seed's platform;\n"
    "                   24 PCIe 4.0, 50 PCIe 5.0)\n"
    "  --part K         plan: the partition, the exact DP (default) or an even split into --k blocks\n"
    "  --k-max N        plan, dp: at most N blocks\n"
    "  --json           one JSON object on stdout\n"
    "\n"
    "simulate prints per policy the iteration time and its parts (compute, exposed migration, recompute, other),\n"
    "the GPU peak, and whether the policy runs at all in that memory (--json: peak_bytes_no_offload, gpu_mem,\n"
    "compute_s and policies: {name: {feasible, why, time_s, compute_s, migration_s, recompute_s, other_s,\n"
    "peak_bytes, bytes_h2d, bytes_d2h, n_blocks, n_remat, n_faults}}). plan prints the blocks (--json: blocks:\n"
    "[{start, end, ops, compute_us, migration_us, ws_bytes, in_bytes, evict_bytes, vec}], time_us, buf_bytes).\n"
    "max-batch generates the model's iteration at growing batch sizes (treelstm: the link-grammar parses of\n"
    "tests/data/offload/trees.txt; varlstm: documents of 16 of those sentences; varbert, moe: --layers x --seq-len)\n"
    "and reports the largest batch each policy trains in --gpu-mem with time per sample within (1 + --cap) times\n"
    "PyTorch's at its own largest batch (the seed's 200 %% cap; --json: pytorch_batch, cap_us_per_sample, policies:\n"
    "{name: {batch, us_per_sample, x_pytorch}}).\n"
    "train-pilot labels one generated iteration per sample (treelstm: a sentence's tree; varlstm, varbert, moe: a\n"
    "document of --batch sentences, 4 by default, as its length and router draws) with the DP's blocks at a GPU of the\n"
    "resident part plus --act-frac x the median activation peak (weights pinned unless --no-pin), trains the pilot\n"
    "on the first 70 %% of the samples (at most --samples; sentences: the 3,000 link-grammar parses of\n"
    "tests/data/offload, or --trees FILE), stops early on the next 10 %%, and evaluates on the last 20 %%: exact\n"
    "matches, mis-predictions with and without the cache, simulated time on the predicted plans against the labels',\n"
    "and a baseline that predicts the label of the training sample nearest in x_e. The pilot is ours by default: a\n"
    "32-feature length code, Adam at lr 0.001 and, where the training plans repeat (at most one distinct plan per 4\n"
    "samples), label snapping (docs/offload.md §6d); --seed-pilot trains the seed's (SGD at 0.01, no length code,\n"
    "rounding) (--json: model, trees, gpu_mem, samples, params, pilot, snap, epochs,\n"
    "val_exact, labels: {train_distinct, test_seen}, test: {n, exact, k_exact, mispred, mispred_cache, cache_hits,\n"
    "faulted, time_label_us, time_pred_us, time_cache_us, compute_us}, nearest: {exact, k_exact, time_us},\n"
    "inference_us, out).\n"
    "Exit codes: 0 done, 1 bad trace or memory, 2 bad usage.\n";

/* The trace named by --trace: a file, or a bundled DTR trace by name. */
static int load_trace(const char *cmd, const char *path, const char *format, mlsys_offload_trace *tr) {
  mlsys_offload_fmt fmt = MLSYS_OFFLOAD_FMT_AUTO;
  mlsys_status st;
  if (format) {
    if (!strcmp(format, "dtr")) fmt = MLSYS_OFFLOAD_FMT_DTR;
    else if (!strcmp(format, "mlsys")) fmt = MLSYS_OFFLOAD_FMT_MLSYS;
    else if (strcmp(format, "auto")) return cli_usage_error(cmd, "--format must be auto, dtr or mlsys (got '%s')", format);
  }
  if (strcmp(path, "-") != 0 && !strchr(path, '/') && access(path, F_OK) != 0) {
    char *buf = NULL, base[512];
    size_t len = 0;
    int rc;
    if ((rc = cli_dtr_read_bundled(cmd, path, &buf, &len, base, sizeof base)) != CLI_OK) return rc;
    st = mlsys_offload_trace_read(buf, len, base, fmt, tr);
    free(buf);
  } else if (!strcmp(path, "-")) {
    char *buf = NULL;
    size_t len = 0, cap = 0, r;
    for (;;) {
      if (len == cap) {
        char *q = (char *)realloc(buf, cap = cap ? 2 * cap : 1 << 20);
        if (!q) { free(buf); return cli_fail(cmd, "out of memory reading stdin"); }
        buf = q;
      }
      if ((r = fread(buf + len, 1, cap - len, stdin)) == 0) break;
      len += r;
    }
    st = mlsys_offload_trace_read(buf, len, "stdin", fmt, tr);
    free(buf);
  } else
    st = mlsys_offload_trace_read_file(path, fmt, tr);
  if (st != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

/* --gpu-mem: bytes or a percentage of the peak */
static int parse_gpu_mem(const char *cmd, const char *s, int64_t peak, int64_t *out) {
  size_t n = strlen(s);
  if (n > 1 && s[n - 1] == '%') {
    char buf[64];
    double pct;
    if (n >= sizeof buf) return cli_usage_error(cmd, "--gpu-mem '%s' is not a size or a percentage", s);
    memcpy(buf, s, n - 1);
    buf[n - 1] = 0;
    if (cli_parse_double(buf, &pct) || !(pct > 0) || pct > 1e6)
      return cli_usage_error(cmd, "--gpu-mem '%s': the percentage must be > 0", s);
    *out = (int64_t)floor((double)peak * pct / 100.0);
    if (*out < 1) return cli_fail(cmd, "--gpu-mem %s of a %lld-byte peak is less than a byte", s, (long long)peak);
    return CLI_OK;
  }
  {
    uint64_t b;
    if (cli_parse_bytes(s, &b) || b == 0 || b > (uint64_t)INT64_MAX)
      return cli_usage_error(cmd, "--gpu-mem '%s' is not a size (\"8GiB\") or a percentage of the peak (\"50%%\")", s);
    *out = (int64_t)b;
  }
  return CLI_OK;
}

static int parse_hw(const char *cmd, const char *gbps, mlsys_offload_hw *hw) {
  if (gbps) {
    double g;
    if (cli_parse_double(gbps, &g) || !(g > 0)) return cli_usage_error(cmd, "--pcie-gbps must be a bandwidth > 0 in GB/s");
    hw->h2d_gbps = hw->d2h_gbps = g;
  }
  return CLI_OK;
}

static int offload_simulate(int argc, char **argv) {
  const char *trace = NULL, *gpu = NULL, *policy = NULL, *format = NULL, *gbps = NULL, *json = NULL, *help = NULL;
  cli_opt opts[] = {{"--trace", 1, &trace},  {"--gpu-mem", 1, &gpu},    {"--policy", 1, &policy}, {"--format", 1, &format},
                    {"--pcie-gbps", 1, &gbps}, {"--json", 0, &json},   {"--help", 0, &help}};
  const char *cmd = "offload simulate";
  mlsys_offload_trace tr;
  mlsys_offload_hw hw;
  mlsys_offload_simres res[MLSYS_OFFLOAD_POLICY_N_];
  int64_t peak;
  int rc, p, want = -1, order[MLSYS_OFFLOAD_POLICY_N_] = {MLSYS_OFFLOAD_POLICY_PYTORCH, MLSYS_OFFLOAD_POLICY_DYNN,
                                                            MLSYS_OFFLOAD_POLICY_DTR, MLSYS_OFFLOAD_POLICY_UVM,
                                                            MLSYS_OFFLOAD_POLICY_ZERO};
  char b1[32], b2[32];
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd)) != CLI_OK) return rc;
  if (help) { fputs(offload_help, stdout); return CLI_OK; }
  if (!trace) return cli_usage_error(cmd, "--trace FILE is required");
  if (!gpu) return cli_usage_error(cmd, "--gpu-mem BYTES|PCT is required");
  if (policy && strcmp(policy, "all") && (want = mlsys_offload_policy_find(policy)) < 0)
    return cli_usage_error(cmd, "--policy must be dynn, dtr, uvm, zero, pytorch or all (got '%s')", policy);
  memset(&hw, 0, sizeof hw);
  if ((rc = parse_hw(cmd, gbps, &hw)) != CLI_OK) return rc;
  if ((rc = load_trace(cmd, trace, format, &tr)) != CLI_OK) return rc;
  if ((peak = mlsys_offload_peak_bytes(&tr)) < 0) { mlsys_offload_trace_free(&tr); return cli_fail(cmd, "%s", mlsys_last_error()); }
  if ((rc = parse_gpu_mem(cmd, gpu, peak, &hw.gpu_bytes)) != CLI_OK) { mlsys_offload_trace_free(&tr); return rc; }
  fprintf(stderr, "%s: %d ops, %d tensors, peak %s without offloading; GPU %s\n", tr.name ? tr.name : trace, tr.n_op, tr.n_t,
          cli_fmt_bytes((uint64_t)peak, b1, sizeof b1), cli_fmt_bytes((uint64_t)hw.gpu_bytes, b2, sizeof b2));
  for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
    int q = order[p];
    if (want >= 0 && q != want) continue;
    if (mlsys_offload_simulate(&tr, &hw, q, &res[q]) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s: %s", mlsys_offload_policy_name(q), mlsys_last_error());
      mlsys_offload_trace_free(&tr);
      return rc;
    }
  }
  if (json) {
    int first = 1;
    printf("{\"trace\":");
    cli_json_str(stdout, tr.name ? tr.name : trace);
    printf(",\"ops\":%d,\"peak_bytes_no_offload\":%lld,\"gpu_mem\":%lld,\"pcie_gbps\":%.17g,\"policies\":{", tr.n_op,
           (long long)peak, (long long)hw.gpu_bytes, hw.h2d_gbps ? hw.h2d_gbps : 12.0);
    for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
      int q = order[p];
      const mlsys_offload_simres *r = &res[q];
      if (want >= 0 && q != want) continue;
      printf("%s\"%s\":{\"feasible\":%s,", first ? "" : ",", mlsys_offload_policy_name(q), r->feasible ? "true" : "false");
      first = 0;
      printf("\"why\":");
      cli_json_str(stdout, r->why);
      printf(",\"time_s\":%.9g,\"compute_s\":%.9g,\"migration_s\":%.9g,\"recompute_s\":%.9g,\"other_s\":%.9g,"
             "\"peak_bytes\":%lld,\"bytes_h2d\":%lld,\"bytes_d2h\":%lld,\"n_blocks\":%d,\"n_remat\":%d,\"n_faults\":%d}",
             r->time_us / 1e6, r->compute_us / 1e6, r->migration_us / 1e6, r->recompute_us / 1e6, r->other_us / 1e6,
             (long long)r->peak_bytes, (long long)r->bytes_h2d, (long long)r->bytes_d2h, r->n_blocks, r->n_remat,
             r->n_faults);
    }
    printf("}}\n");
  } else {
    printf("%-8s %12s %12s %12s %12s %12s %12s  %s\n", "policy", "time ms", "compute ms", "migration ms", "recompute ms",
           "other ms", "GPU peak", "");
    for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++) {
      int q = order[p];
      const mlsys_offload_simres *r = &res[q];
      if (want >= 0 && q != want) continue;
      if (!r->feasible) {
        printf("%-8s %12s %12s %12s %12s %12s %12s  %s\n", mlsys_offload_policy_name(q), "-", "-", "-", "-", "-", "-", r->why);
        continue;
      }
      printf("%-8s %12.2f %12.2f %12.2f %12.2f %12.2f %12s  %.2fx compute\n", mlsys_offload_policy_name(q), r->time_us / 1e3,
             r->compute_us / 1e3, r->migration_us / 1e3, r->recompute_us / 1e3, r->other_us / 1e3,
             cli_fmt_bytes((uint64_t)r->peak_bytes, b1, sizeof b1), r->compute_us > 0 ? r->time_us / r->compute_us : 1.0);
    }
  }
  mlsys_offload_trace_free(&tr);
  return CLI_OK;
}

static int offload_plan(int argc, char **argv) {
  const char *trace = NULL, *gpu = NULL, *part = NULL, *k = NULL, *kmax = NULL, *format = NULL, *gbps = NULL, *json = NULL,
             *help = NULL;
  cli_opt opts[] = {{"--trace", 1, &trace}, {"--gpu-mem", 1, &gpu},     {"--part", 1, &part}, {"--k", 1, &k},
                    {"--k-max", 1, &kmax},  {"--format", 1, &format},   {"--pcie-gbps", 1, &gbps},
                    {"--json", 0, &json},   {"--help", 0, &help}};
  const char *cmd = "offload plan";
  static const char *const parts[] = {"dp", "even-ops", "even-time", "even-bytes"};
  mlsys_offload_trace tr;
  mlsys_offload_hw hw;
  mlsys_offload_part_opts po;
  mlsys_offload_blocks b;
  mlsys_offload_block_cost *bc;
  int64_t peak;
  int rc, j, e;
  char b1[32], b2[32], b3[32];
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd)) != CLI_OK) return rc;
  if (help) { fputs(offload_help, stdout); return CLI_OK; }
  if (!trace) return cli_usage_error(cmd, "--trace FILE is required");
  if (!gpu) return cli_usage_error(cmd, "--gpu-mem BYTES|PCT is required");
  memset(&po, 0, sizeof po);
  if (part) {
    for (j = 0; j < 4 && strcmp(part, parts[j]); j++) {}
    if (j == 4) return cli_usage_error(cmd, "--part must be dp, even-ops, even-time or even-bytes (got '%s')", part);
    po.kind = j;
  }
  if (k) {
    double v;
    if (cli_parse_double(k, &v) || v < 1 || v > 1e6 || v != floor(v)) return cli_usage_error(cmd, "--k must be a block count >= 1");
    po.k = (int)v;
  }
  if (kmax) {
    double v;
    if (cli_parse_double(kmax, &v) || v < 1 || v > 4096 || v != floor(v)) return cli_usage_error(cmd, "--k-max must be 1..4096");
    po.k_max = (int)v;
  }
  if (po.kind != MLSYS_OFFLOAD_PART_DP && !k) return cli_usage_error(cmd, "--part %s needs --k N", part);
  memset(&hw, 0, sizeof hw);
  if ((rc = parse_hw(cmd, gbps, &hw)) != CLI_OK) return rc;
  if ((rc = load_trace(cmd, trace, format, &tr)) != CLI_OK) return rc;
  if ((peak = mlsys_offload_peak_bytes(&tr)) < 0) { mlsys_offload_trace_free(&tr); return cli_fail(cmd, "%s", mlsys_last_error()); }
  if ((rc = parse_gpu_mem(cmd, gpu, peak, &hw.gpu_bytes)) != CLI_OK) { mlsys_offload_trace_free(&tr); return rc; }
  if (mlsys_offload_partition(&tr, &hw, &po, &b) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    mlsys_offload_trace_free(&tr);
    return rc;
  }
  if (!(bc = (mlsys_offload_block_cost *)calloc((size_t)b.k, sizeof *bc)) || mlsys_offload_blocks_costs(&tr, &hw, &b, bc)) {
    free(bc);
    mlsys_offload_blocks_free(&b);
    mlsys_offload_trace_free(&tr);
    return cli_fail(cmd, "%s", mlsys_last_error()[0] ? mlsys_last_error() : "out of memory");
  }
  fprintf(stderr, "%s: %d ops, peak %s; GPU %s, two buffers of %s: %d blocks%s, modelled %.3f ms (compute %.3f ms)\n",
          tr.name ? tr.name : trace, tr.n_op, cli_fmt_bytes((uint64_t)peak, b1, sizeof b1),
          cli_fmt_bytes((uint64_t)hw.gpu_bytes, b2, sizeof b2), cli_fmt_bytes((uint64_t)b.buf_bytes, b3, sizeof b3), b.k,
          b.split_extra ? " (even blocks split to fit)" : "", b.time_us / 1e3, b.compute_us / 1e3);
  if (json) {
    printf("{\"trace\":");
    cli_json_str(stdout, tr.name ? tr.name : trace);
    printf(",\"part\":\"%s\",\"gpu_mem\":%lld,\"buf_bytes\":%lld,\"time_us\":%.9g,\"compute_us\":%.9g,\"split_extra\":%d,"
           "\"blocks\":[",
           parts[po.kind], (long long)hw.gpu_bytes, (long long)b.buf_bytes, b.time_us, b.compute_us, b.split_extra);
  } else
    printf("%5s %8s %8s %12s %12s %12s %12s %12s\n", "block", "ops", "", "compute ms", "migration ms", "working set",
           "in", "evict");
  for (j = 0; j < b.k; j++) {
    if (json) {
      float vec[10] = {0};   /* the block's 10-vector (the pilot's label row) */
      int i;
      for (i = b.start[j]; i < b.start[j + 1]; i++) {
        vec[0] += 1;
        for (e = 0; e < 6; e++) vec[1 + e] += (float)tr.op[i].sig.idiom[e];
        for (e = 0; e < 3; e++) vec[7 + e] += (float)tr.op[i].sig.dim[e];
      }
      printf("%s{\"start\":%d,\"end\":%d,\"ops\":%d,\"compute_us\":%.9g,\"migration_us\":%.9g,\"ws_bytes\":%lld,"
             "\"in_bytes\":%lld,\"evict_bytes\":%lld,\"vec\":[",
             j ? "," : "", b.start[j], b.start[j + 1], b.start[j + 1] - b.start[j], bc[j].compute_us, bc[j].migration_us,
             (long long)bc[j].ws_bytes, (long long)bc[j].in_bytes, (long long)bc[j].evict_bytes);
      for (e = 0; e < 10; e++) printf("%s%.9g", e ? "," : "", vec[e]);
      printf("]}");
    } else
      printf("%5d %8d %8s %12.3f %12.3f %12s %12s %12s\n", j, b.start[j + 1] - b.start[j], "", bc[j].compute_us / 1e3,
             bc[j].migration_us / 1e3, cli_fmt_bytes((uint64_t)bc[j].ws_bytes, b1, sizeof b1),
             cli_fmt_bytes((uint64_t)bc[j].in_bytes, b2, sizeof b2), cli_fmt_bytes((uint64_t)bc[j].evict_bytes, b3, sizeof b3));
  }
  if (json) printf("]}\n");
  free(bc);
  mlsys_offload_blocks_free(&b);
  mlsys_offload_trace_free(&tr);
  return CLI_OK;
}

static int offload_max_batch(int argc, char **argv) {
  const char *model = NULL, *gpu = NULL, *layers = NULL, *hidden = NULL, *seq = NULL, *limit = NULL, *cap = NULL,
             *gbps = NULL, *json = NULL, *help = NULL;
  cli_opt opts[] = {{"--model", 1, &model},  {"--gpu-mem", 1, &gpu}, {"--layers", 1, &layers}, {"--hidden", 1, &hidden},
                    {"--seq-len", 1, &seq},  {"--limit", 1, &limit}, {"--cap", 1, &cap},       {"--pcie-gbps", 1, &gbps},
                    {"--json", 0, &json},    {"--help", 0, &help}};
  const char *cmd = "offload max-batch";
  mlsys_offload_model_desc m;
  mlsys_offload_hw hw;
  mlsys_offload_max_batch_result r;
  mlsys_offload_tree *trees = NULL;
  int rc, n = 0, p, lim = 0, i;
  double capv = 2;
  char *text = NULL, path[4096];
  size_t len;
  uint64_t g;
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd)) != CLI_OK) return rc;
  if (help) { fputs(offload_help, stdout); return CLI_OK; }
  if (!model) return cli_usage_error(cmd, "--model treelstm|varlstm|varbert|moe is required");
  if (strcmp(model, "treelstm") && strcmp(model, "varlstm") && strcmp(model, "varbert") && strcmp(model, "moe"))
    return cli_usage_error(cmd, "--model must be treelstm, varlstm, varbert or moe (got '%s')", model);
  if (!gpu || cli_parse_bytes(gpu, &g) || g == 0 || g > (uint64_t)INT64_MAX)
    return cli_usage_error(cmd, "--gpu-mem BYTES is required (\"16GiB\")");
  memset(&m, 0, sizeof m);
  m.model = model;
  m.seed = 1;
  {
    const char *vals[4] = {layers, hidden, seq, limit};
    int *dst[4] = {&m.layers, &m.hidden, &m.seq_len, &lim};
    const char *names[4] = {"--layers", "--hidden", "--seq-len", "--limit"};
    for (i = 0; i < 4; i++)
      if (vals[i]) {
        double v;
        if (cli_parse_double(vals[i], &v) || v < 1 || v > 1e6 || v != floor(v))
          return cli_usage_error(cmd, "%s must be a whole number >= 1", names[i]);
        *dst[i] = (int)v;
      }
  }
  if (cap && (cli_parse_double(cap, &capv) || !(capv > 0))) return cli_usage_error(cmd, "--cap must be > 0 (2 = 200 %%)");
  memset(&hw, 0, sizeof hw);
  hw.gpu_bytes = (int64_t)g;
  if ((rc = parse_hw(cmd, gbps, &hw)) != CLI_OK) return rc;
  if (!strcmp(model, "treelstm") || !strcmp(model, "varlstm")) {
    if (!cli_repo_file("tests/data/offload/trees.txt", path, sizeof path))
      return cli_fail(cmd, "tests/data/offload/trees.txt is not beside this binary's repository");
    if (mlsys_read_file(path, &text, &len) || mlsys_offload_trees_parse(text, len, path, &trees, &n)) {
      mlsys_free(text);
      return cli_fail(cmd, "%s", mlsys_last_error());
    }
    m.trees = trees;
    m.n_trees = n;
  }
  fprintf(stderr, "%s: searching the largest batch per policy in %s (each step generates and simulates one iteration)\n",
          model, gpu);
  if (mlsys_offload_max_batch(&m, &hw, capv, lim, &r) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
  else if (json) {
    printf("{\"model\":\"%s\",\"gpu_mem\":%lld,\"cap\":%.9g,\"pytorch_batch\":%d,\"cap_us_per_sample\":%.9g,\"evaluations\":%d,"
           "\"policies\":{",
           model, (long long)hw.gpu_bytes, capv, r.pytorch_batch, r.cap_us_per_sample, r.evaluations);
    for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++)
      printf("%s\"%s\":{\"batch\":%d,\"us_per_sample\":%.9g,\"x_pytorch\":%.9g}", p ? "," : "", mlsys_offload_policy_name(p),
             r.batch[p], r.batch[p] ? r.us_per_sample[p] : 0.0, r.pytorch_batch ? (double)r.batch[p] / r.pytorch_batch : 0.0);
    printf("}}\n");
  } else {
    printf("%-8s %8s %14s %10s\n", "policy", "batch", "us/sample", "x pytorch");
    for (p = 0; p < MLSYS_OFFLOAD_POLICY_N_; p++)
      printf("%-8s %8d %14.2f %10.2f\n", mlsys_offload_policy_name(p), r.batch[p], r.batch[p] ? r.us_per_sample[p] : 0.0,
             r.pytorch_batch ? (double)r.batch[p] / r.pytorch_batch : 0.0);
    printf("(cap: %.2f us per sample = %.0f %% over PyTorch at batch %d)\n", r.cap_us_per_sample, 100 * capv, r.pytorch_batch);
  }
  for (i = 0; i < n; i++) mlsys_offload_tree_free(&trees[i]);
  mlsys_free(trees);
  mlsys_free(text);
  return rc;
}

static void tp_data_progress(void *ctx, int done, int total) {
  if (done == total || done % 200 == 0) fprintf(stderr, "\r%s: labelling %d/%d samples", (const char *)ctx, done, total);
  if (done == total) fputc('\n', stderr);
}
static void tp_fit_progress(void *ctx, int epoch, float loss, double val_exact) {
  (void)ctx;
  if (epoch % 10 == 0) fprintf(stderr, "  epoch %4d: training loss %.4f, validation exact %.3f\n", epoch, loss, val_exact);
}

/* One file's trees appended to *trees. */
static int tp_read_trees(const char *cmd, const char *path, mlsys_offload_tree **trees, int *n) {
  char *text = NULL;
  size_t len;
  mlsys_offload_tree *t = NULL, *all;
  int k = 0, i;
  if (mlsys_read_file(path, &text, &len) || mlsys_offload_trees_parse(text, len, path, &t, &k)) {
    mlsys_free(text);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  mlsys_free(text);
  if (!(all = (mlsys_offload_tree *)mlsys_realloc_array(*trees, (size_t)(*n + k) + 1, sizeof *all))) {
    for (i = 0; i < k; i++) mlsys_offload_tree_free(&t[i]);
    mlsys_free(t);
    return cli_fail(cmd, "out of memory reading %s", path);
  }
  memcpy(all + *n, t, (size_t)k * sizeof *t);
  mlsys_free(t);
  *trees = all;
  *n += k;
  return CLI_OK;
}

/* Distinct labels among a data set's samples. */
static int tp_distinct(const mlsys_offload_pilot_data *d) {
  size_t w = (size_t)d->k_max * 10;
  int s, t, n = 0;
  for (s = 0; s < d->n; s++) {
    int dup = 0;
    for (t = 0; t < s && !dup; t++) dup = !memcmp(d->label + (size_t)s * w, d->label + (size_t)t * w, w * sizeof(float));
    n += !dup;
  }
  return n;
}

static int offload_train_pilot(int argc, char **argv) {
  const char *treesf = NULL, *act = NULL, *epochs = NULL, *out = NULL, *gbps = NULL, *nopin = NULL, *json = NULL,
             *help = NULL, *samples = NULL, *model = NULL, *batchs = NULL, *seedp = NULL;
  cli_opt opts[] = {{"--trees", 1, &treesf},  {"--act-frac", 1, &act},  {"--epochs", 1, &epochs}, {"--out", 1, &out},
                    {"--pcie-gbps", 1, &gbps}, {"--no-pin", 0, &nopin}, {"--samples", 1, &samples}, {"--model", 1, &model},
                    {"--batch", 1, &batchs},   {"--json", 0, &json},    {"--help", 0, &help},
                    {"--seed-pilot", 0, &seedp}};
  const char *cmd = "offload train-pilot";
  mlsys_offload_tree *trees = NULL;
  mlsys_offload_pilot *m = NULL;
  mlsys_offload_pilot_data d[3];
  mlsys_offload_data_opts o;
  mlsys_offload_fit_opts fo;
  mlsys_offload_fit_result fr;
  mlsys_offload_pilot_eval ev;
  mlsys_offload_pilot_cfg pcfg;
  int rc, n = 0, i, cut[4], max_ep = 600, max_s = 0, batch, ns, nn_exact = 0, nn_k = 0, seen = 0, distinct = 0;
  double actf = 0.5, t0, infer_us = 0, nn_time = 0;
  char path[4096], b1[32];
  memset(d, 0, sizeof d);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd)) != CLI_OK) return rc;
  if (help) { fputs(offload_help, stdout); return CLI_OK; }
  if (act && (cli_parse_double(act, &actf) || !(actf > 0) || actf > 1e6))
    return cli_usage_error(cmd, "--act-frac must be > 0 (the share of the median sample's activation peak)");
  if (epochs) {
    double v;
    if (cli_parse_double(epochs, &v) || v < 1 || v > 1e5 || v != floor(v)) return cli_usage_error(cmd, "--epochs must be 1..100000");
    max_ep = (int)v;
  }
  if (!model) model = "treelstm";
  if (strcmp(model, "treelstm") && strcmp(model, "varlstm") && strcmp(model, "varbert") && strcmp(model, "moe"))
    return cli_usage_error(cmd, "--model must be treelstm, varlstm, varbert or moe (got '%s')", model);
  batch = strcmp(model, "treelstm") ? 4 : 1;
  if (samples) {
    double v;
    if (cli_parse_double(samples, &v) || v < 10 || v > 1e7 || v != floor(v)) return cli_usage_error(cmd, "--samples must be a count >= 10");
    max_s = (int)v;
  }
  if (batchs) {
    double v;
    if (cli_parse_double(batchs, &v) || v < 1 || v > 1e4 || v != floor(v)) return cli_usage_error(cmd, "--batch must be 1..10000 sentences");
    batch = (int)v;
  }
  memset(&o, 0, sizeof o);
  if ((rc = parse_hw(cmd, gbps, &o.hw)) != CLI_OK) return rc;
  if (treesf) rc = tp_read_trees(cmd, treesf, &trees, &n);
  else {
    static const char *const def[2] = {"tests/data/offload/trees.txt", "tests/data/offload/trees_docs.txt"};
    for (i = 0; i < 2 && rc == CLI_OK; i++) {
      if (!cli_repo_file(def[i], path, sizeof path)) rc = cli_fail(cmd, "%s is not beside this binary's repository (use --trees FILE)", def[i]);
      else rc = tp_read_trees(cmd, path, &trees, &n);
    }
  }
  if (rc != CLI_OK) goto done;
  ns = n / batch;
  if (max_s && max_s < ns) ns = max_s;
  if (ns < 10) { rc = cli_fail(cmd, "%d samples of %d sentences: need at least 10 (70 %% train, 10 %% validation, 20 %% test)", ns, batch); goto done; }
  memset(&pcfg, 0, sizeof pcfg);
  if (!seedp) {
    /* ours (docs/offload.md §6d): the length code and Adam; snapping is set in the fit options below */
    pcfg.len_code = 32;
    pcfg.adam = 1;
    pcfg.lr = 0.001f;
  }
  if (mlsys_offload_pilot_create(&pcfg, &m)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  /* by sentence: the first 70 % of the samples train, the next 10 % validate (early stopping), the last 20 % test */
  cut[0] = 0; cut[1] = ns * 7 / 10 * batch; cut[2] = ns * 8 / 10 * batch; cut[3] = ns * batch;
  o.model = model;
  o.batch = batch;
  o.pin_weights = !nopin;
  o.act_frac = actf;
  for (i = 0; i < 3; i++) {
    static const char *const what[3] = {"training", "validation", "test"};
    if (i == 1) { o.act_frac = 0; o.hw.gpu_bytes = d[0].gpu_bytes; }   /* the budget the training labels got */
    o.progress = json ? NULL : tp_data_progress;
    o.progress_ctx = (void *)what[i];
    if (mlsys_offload_pilot_data_make(m, trees + cut[i], cut[i + 1] - cut[i], &o, &d[i])) {
      rc = cli_fail(cmd, "%s samples: %s", what[i], mlsys_last_error());
      goto done;
    }
  }
  fprintf(stderr, "%s on %d sentences (%d per sample), weights %s; GPU %s (%.2f x the median activation peak above the "
          "resident part); samples %d / %d / %d (infeasible %d / %d / %d); pilot %zu parameters\n",
          model, cut[3], batch, nopin ? "offloadable" : "pinned", cli_fmt_bytes((uint64_t)d[0].gpu_bytes, b1, sizeof b1), actf, d[0].n, d[1].n,
          d[2].n, d[0].n_infeasible, d[1].n_infeasible, d[2].n_infeasible, mlsys_offload_pilot_nparams(m));
  memset(&fo, 0, sizeof fo);
  fo.max_epochs = max_ep;
  fo.patience = 100;
  /* snap only where plans repeat (on average 4 samples per distinct training label): otherwise the codebook cannot
     hold the test samples' plans, and searching it costs more than the network (Tree-LSTM: 1,739 codes, 289 us) */
  distinct = tp_distinct(&d[0]);
  fo.snap = !seedp && 4 * distinct <= d[0].n;
  fo.progress = json ? NULL : tp_fit_progress;
  if (mlsys_offload_pilot_fit(m, &d[0], &d[1], &fo, &fr) ||
      mlsys_offload_pilot_evaluate(m, &d[2], &o.hw, &ev)) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  {
    /* per-sample inference: forward + decode, timed over the test set (a measurement, not a check) */
    float y[160];
    int32_t pr[160];
    int s, rep;
    t0 = mlsys_now();
    for (rep = 0; rep < 20; rep++)
      for (s = 0; s < d[2].n; s++) {
        mlsys_offload_pilot_forward(m, d[2].x_e + (size_t)s * d[2].xe_dim, d[2].x_a + (size_t)s * d[2].xa_dim, 1, y);
        mlsys_offload_pilot_decode(m, y, pr);
      }
    infer_us = (mlsys_now() - t0) * 1e6 / (20.0 * d[2].n);
    /* test labels that some training label equals: the ceiling of any predictor that answers training labels */
    for (s = 0; s < d[2].n; s++) {
      int t, hit = 0;
      for (t = 0; t < d[0].n && !hit; t++)
        hit = !memcmp(d[2].label + (size_t)s * d[2].k_max * 10, d[0].label + (size_t)t * d[0].k_max * 10, (size_t)d[0].k_max * 10 * sizeof(float));
      seen += hit;
    }
    /* a baseline without the MLP: the label of the training sample nearest in x_e */
    for (s = 0; s < d[2].n; s++) {
      const float *x = d[2].x_e + (size_t)s * d[2].xe_dim, *lab = d[2].label + (size_t)s * d[2].k_max * 10, *best_l = NULL;
      double best = INFINITY;
      int t, e, same = 1, kp = 0, kt = 0;
      mlsys_offload_simres r;
      for (t = 0; t < d[0].n; t++) {
        const float *y2 = d[0].x_e + (size_t)t * d[0].xe_dim;
        double dist = 0;
        for (e = 0; e < d[2].xe_dim; e++) dist += ((double)x[e] - y2[e]) * ((double)x[e] - y2[e]);
        if (dist < best) { best = dist; best_l = d[0].label + (size_t)t * d[0].k_max * 10; }
      }
      for (e = 0; e < d[2].k_max * 10; e++) {
        pr[e] = (int32_t)best_l[e];
        same &= best_l[e] == lab[e];
      }
      while (kp < d[2].k_max && best_l[10 * kp] > 0) kp++;
      while (kt < d[2].k_max && lab[10 * kt] > 0) kt++;
      nn_exact += same;
      nn_k += kp == kt;
      if (mlsys_offload_sim_predicted(&d[2].trace[s], &o.hw, pr, d[2].k_max, &r)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
      nn_time += r.time_us;
    }
  }
  if (out && mlsys_offload_pilot_save(m, out)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (json) {
    printf("{\"model\":\"%s\",\"trees\":%d,\"gpu_mem\":%lld,\"pinned\":%s,\"samples\":{\"train\":%d,\"val\":%d,\"test\":%d},"
           "\"infeasible\":{\"train\":%d,\"val\":%d,\"test\":%d},\"params\":%zu,\"epochs\":%d,\"best_epoch\":%d,"
           "\"pilot\":\"%s\",\"snap\":%s,\"val_exact\":%.9g,\"val_loss\":%.9g,\"labels\":{\"train_distinct\":%d,\"test_seen\":%d},\"test\":{\"n\":%d,\"exact\":%d,\"k_exact\":%d,\"mispred\":%d,"
           "\"mispred_cache\":%d,\"cache_hits\":%d,\"faulted\":%d,\"time_label_us\":%.9g,\"time_pred_us\":%.9g,"
           "\"time_cache_us\":%.9g,\"compute_us\":%.9g},\"nearest\":{\"exact\":%d,\"k_exact\":%d,\"time_us\":%.9g},"
           "\"inference_us\":%.9g,\"out\":",
           model, cut[3], (long long)d[0].gpu_bytes, nopin ? "false" : "true", d[0].n, d[1].n, d[2].n, d[0].n_infeasible,
           d[1].n_infeasible, d[2].n_infeasible, mlsys_offload_pilot_nparams(m), fr.epochs, fr.best_epoch,
           seedp ? "seed" : "ours", fo.snap ? "true" : "false", fr.best_val_exact, fr.best_val_loss, distinct, seen, ev.n, ev.exact, ev.k_exact, ev.mispred, ev.mispred_cache, ev.cache_hits,
           ev.faulted, ev.time_oracle_us, ev.time_pred_us, ev.time_cache_us, ev.compute_us, nn_exact, nn_k, nn_time, infer_us);
    if (out) cli_json_str(stdout, out); else printf("null");
    printf("}\n");
  } else {
    printf("pilot (%s%s): %zu parameters, %d epochs (best %d), validation exact %.3f, loss %.4f; inference %.2f us per sample\n",
           seedp ? "the seed's" : "ours", seedp ? "" : fo.snap ? ", snapping to the training plans" : ", rounding: the training plans rarely repeat",
           mlsys_offload_pilot_nparams(m), fr.epochs, fr.best_epoch, fr.best_val_exact,
           fr.best_val_loss, infer_us);
    printf("labels: %d distinct among %d training samples; %d of %d test labels occur in training (the most a snapped "
           "pilot can match)\n", distinct, d[0].n, seen, d[2].n);
    printf("test, %d samples: exact %d (%.1f %%), block count right %d, mis-predicted %d without the cache, %d with it "
           "(%d hits); on-demand fetches in %d\n", ev.n, ev.exact, 100.0 * ev.exact / ev.n, ev.k_exact, ev.mispred,
           ev.mispred_cache, ev.cache_hits, ev.faulted);
    printf("simulated iteration time, summed: label plans %.1f ms, predicted %.1f ms (%.2fx), with the cache %.1f ms; "
           "kernels %.1f ms\n", ev.time_oracle_us / 1e3, ev.time_pred_us / 1e3, ev.time_pred_us / ev.time_oracle_us,
           ev.time_cache_us / 1e3, ev.compute_us / 1e3);
    printf("nearest training sample's label instead: exact %d, block count right %d, %.1f ms (%.2fx)\n", nn_exact, nn_k,
           nn_time / 1e3, nn_time / ev.time_oracle_us);
    if (out) printf("saved %s\n", out);
  }
done:
  for (i = 0; i < 3; i++) mlsys_offload_pilot_data_free(&d[i]);
  mlsys_offload_pilot_free(m);
  for (i = 0; i < n; i++) mlsys_offload_tree_free(&trees[i]);
  mlsys_free(trees);
  return rc;
}

int cmd_offload(int argc, char **argv) {
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
    fputs(offload_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[2], "simulate")) return offload_simulate(argc, argv);
  if (!strcmp(argv[2], "plan")) return offload_plan(argc, argv);
  if (!strcmp(argv[2], "max-batch")) return offload_max_batch(argc, argv);
  if (!strcmp(argv[2], "train-pilot")) return offload_train_pilot(argc, argv);
  return cli_usage_error("offload", "unknown verb '%s' (simulate, plan, max-batch, train-pilot)", argv[2]);
}
