/* cli/collective.c — `mlsys collective`: TACCL collective synthesis from communication sketches, MSCCL program
   simulation and the NCCL-style baselines, all in the α–β model of thesis §5.3 (mlsys_collective.h). */
#include "mlsys_collective.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *coll_help =
    "usage: mlsys collective <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  synth      --topo ndv2|dgx2|FILE --sketch FILE --coll K --size BYTES [--nodes N] [--profile P]\n"
    "             [--chunkup C] [--time-limit S] [--solver lpsolve|cbc] [--instances n] [--xml OUT] [--json]\n"
    "             Synthesize a K algorithm (TACCL: routing MILP, ordering heuristic, scheduling MILP), verify it,\n"
    "             simulate it and compare it with the ring, direct and hierarchical baselines; when a baseline is\n"
    "             faster, that baseline is the result (and says so: source), the synthesized time shown beside it.\n"
    "  simulate   --xml FILE [--topo ndv2|dgx2|FILE] [--nodes N] [--size BYTES] [--profile P] [--json]\n"
    "             Verify an MSCCL XML program (ours or the authors') and estimate its time.\n"
    "  baselines  --topo ndv2|dgx2|FILE --coll K --size BYTES [--nodes N] [--profile P] [--json]\n"
    "             Ring (best of 1, 2, 4, 8 rings), direct and hierarchical algorithms in the alpha-beta model.\n"
    "\n"
    "--topo: ndv2 (Azure NDv2, 8 V100 per node, NVLink hybrid cube-mesh, 1 NIC) or dgx2 (16 V100 on NVSwitch,\n"
    "8 NICs) with the link costs of --profile (ndv2-thesis | dgx2-thesis (default, thesis Table 5.1) | ndv2-repo |\n"
    "dgx2-repo), or FILE, the authors' topology profile JSON (taccl/examples/topo/*.json; its name picks NDv2 or\n"
    "DGX2). --nodes defaults to the sketch's nnodes (synth), to 1 (baselines) or to ngpus / GPUs per node\n"
    "(simulate, whose --topo defaults to ndv2). --sketch is a communication sketch in the authors' JSON schema.\n"
    "K: allgather, alltoall, reducescatter, allreduce (or ag, a2a, rs, ar). BYTES (1048576, 1MB, 64KiB) is the\n"
    "per-rank input for allgather and alltoall and the per-rank buffer for reducescatter and allreduce\n"
    "(simulate: default 1MB). --chunkup overrides the sketch's input_chunkup; --time-limit bounds each MILP\n"
    "(default 60 s); --solver picks the MILP backend (default: lp_solve for up to 5 CPU seconds per MILP, then\n"
    "CBC, when built in, for the rest of the limit);\n"
    "--xml OUT lowers the algorithm to an MSCCL program with --instances n (default 1), checks it\n"
    "by abstract interpretation and writes it to OUT (minBytes = maxBytes = 0, as ncclize writes them).\n"
    "\n"
    "Times are microseconds in the alpha-beta model: a send of s bytes over a link costs alpha + beta*s; a link\n"
    "carries one send at a time, and so do a GPU's NVSwitch port and (across nodes) a NIC. synth reports the\n"
    "synthesized algorithm simulated on the physical topology (synth_time_us), where the baselines run too, and on\n"
    "the sketch's logical topology, the model the scheduler optimised (sched_time_us); time_us is the returned\n"
    "one's. The ring baseline of alltoall is NCCL's p2p algorithm (direct).\n"
    "simulate estimates a program's time with the same costs: the steps of a threadblock run in order, a step\n"
    "waits for its dependency and (receives) for the matching send (FIFO per sender, receiver and channel); each\n"
    "send costs alpha + beta*cnt*slot bytes on its link (slot = BYTES / input slots); receives, copies and\n"
    "reductions are free; among the steps ready to go, the one that can start first runs first.\n"
    "\n"
    "synth --json keys: status (\"ok\"), coll, topology, nranks, nnodes, buffer_bytes, source (what is returned:\n"
    "\"synthesized\", or the faster baseline \"ring\", \"direct\" or \"hierarchical\"); of the returned schedule:\n"
    "chunkup, chunk_bytes, time_us, algbw_gbps (output bytes per rank / time_us, GB = 1e9), speedup_vs_ring\n"
    "(ring_time_us / time_us), transfers, merged, verified, xml (the path written, or null) and nic_reordered\n"
    "(true: its IB order was cyclic on the physical serial NICs, which then serve their sends in ready order); of\n"
    "the synthesized one (also when a baseline is returned): synth_time_us (on the physical topology),\n"
    "sched_time_us (on the logical one), synth_seconds, route_seconds, order_seconds, sched_seconds,\n"
    "route_time_us (relaxed routing objective), route_bound_us, route_gap, route_status, sched_gap,\n"
    "route_binaries, route_binaries_unsym; the baselines: ring_time_us, ring_nrings, direct_time_us, hier_time_us\n"
    "(null when the baseline does not exist).\n"
    "simulate --json keys: status (\"ok\" | \"invalid\"), coll, ngpus, instances, chunkup, topology, buffer_bytes,\n"
    "threadblocks, steps, sends, verified, time_us, algbw_gbps, error (when invalid).\n"
    "baselines --json keys: status, coll, topology, nranks, nnodes, buffer_bytes, ring_time_us, ring_nrings,\n"
    "ring_algbw_gbps, direct_time_us, direct_algbw_gbps, hier_time_us, hier_algbw_gbps.\n"
    "\n"
    "Exit codes: 0 ok, 1 bad input (unreadable or invalid sketch, topology or program, size 0, an infeasible\n"
    "sketch, a program that fails verification), 2 bad usage (unknown verb, option or collective, bad number).\n";

typedef struct {
  const char *topo, *profile, *nodes, *sketch, *coll, *size, *chunkup, *time_limit, *instances, *xml, *json, *help, *solver;
} coll_args;

/* The machine behind --topo: builder kind, link costs and GPUs per node. */
typedef struct {
  int dgx2, G;
  mlsys_coll_profile prof;
} coll_machine;

static int coll_parse_int(const char *s, int lo, int hi, int *out) {
  char *e;
  long v;
  if (!s || !*s) return -1;
  v = strtol(s, &e, 10);
  if (*e || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int coll_machine_resolve(const char *cmd, const coll_args *a, const char *dflt, coll_machine *m) {
  const char *topo = a->topo ? a->topo : dflt;
  memset(m, 0, sizeof *m);
  if (!topo) return cli_usage_error(cmd, "--topo ndv2|dgx2|FILE is required");
  if (!strcmp(topo, "ndv2") || !strcmp(topo, "dgx2")) {
    m->dgx2 = topo[0] == 'd';
    m->G = m->dgx2 ? 16 : 8;
    if (mlsys_coll_profile_preset(a->profile ? a->profile : m->dgx2 ? "dgx2-thesis" : "ndv2-thesis", &m->prof))
      return cli_usage_error(cmd, "%s", mlsys_last_error());
    return CLI_OK;
  }
  {
    char *text, kind[16];
    size_t len;
    int gpn, npn;
    mlsys_status st;
    if (a->profile) return cli_usage_error(cmd, "--profile applies to --topo ndv2|dgx2; a profile FILE carries its own costs");
    if (strcmp(topo, "-") && !strchr(topo, '/') && !strchr(topo, '.') && access(topo, R_OK) != 0)
      return cli_fail(cmd, "unknown topology '%s' (ndv2, dgx2, or a topology profile JSON file)", topo);
    if (mlsys_read_file(topo, &text, &len)) return cli_fail(cmd, "%s", mlsys_last_error());
    st = mlsys_coll_profile_parse_json(text, len, topo, &m->prof, &gpn, &npn, kind, sizeof kind);
    mlsys_free(text);
    if (st) return cli_fail(cmd, "%s", mlsys_last_error());
    if (strcmp(kind, "ndv2") && strcmp(kind, "dgx2"))
      return cli_fail(cmd, "%s: only NDv2 and DGX2 profiles are supported (the profile's name must start with one of them)", topo);
    m->dgx2 = kind[0] == 'd';
    m->G = m->dgx2 ? 16 : 8;
    if (gpn != m->G)
      return cli_fail(cmd, "%s: a %s profile must have %d gpus_per_node, not %d", topo, m->dgx2 ? "DGX2" : "NDv2", m->G, gpn);
  }
  return CLI_OK;
}

static int coll_build_topo(const char *cmd, const coll_machine *m, int nnodes, mlsys_coll_topo *t) {
  mlsys_status st = m->dgx2 ? mlsys_coll_topo_dgx2(nnodes, &m->prof, t) : mlsys_coll_topo_ndv2(nnodes, &m->prof, t);
  if (st) return cli_fail(cmd, "%s", mlsys_last_error());
  return CLI_OK;
}

/* ---- baselines ---- */

static int coll_last_nic_reordered;   /* the last coll_sim_time needed the ready-order NICs (see the header) */
static double coll_sim_time(const mlsys_coll_topo *t, mlsys_coll_algo *a, double *algbw) {
  mlsys_coll_sim_result r;
  coll_last_nic_reordered = 0;
  if (mlsys_coll_simulate(t, a, NULL, &r)) return NAN;
  coll_last_nic_reordered = r.nic_reordered;
  if (algbw) *algbw = r.algbw_gbps;
  return r.makespan_us;
}

/* The library's baselines (mlsys_coll_baselines), with NCCL's view of ALLTOALL: its "ring" is the p2p algorithm,
   which is the direct one. */
static void coll_baselines(const mlsys_coll_topo *t, int kind, double bytes, mlsys_coll_baseline_times *b) {
  mlsys_coll_baselines(t, kind, bytes, b, NULL);   /* NaN where a baseline does not run; all NaN on failure */
  if (kind == MLSYS_COLL_ALLTOALL) { b->ring_us = b->direct_us; b->ring_gbps = b->direct_gbps; }
}

static void coll_jnum(mlsys_json_writer *w, const char *key, double v) {
  mlsys_jw_key(w, key);
  if (isnan(v) || isinf(v)) mlsys_jw_null(w);
  else mlsys_jw_double(w, v);
}
static void coll_jint(mlsys_json_writer *w, const char *key, long long v) {
  mlsys_jw_key(w, key);
  mlsys_jw_i64(w, v);
}

static void coll_row(const char *name, double us, double bw) {
  if (isnan(us)) printf("  %-22s %12s\n", name, "n/a");
  else printf("  %-22s %10.2f us  %8.2f GB/s\n", name, us, bw);
}

static int coll_size(const char *cmd, const char *s, uint64_t *out) {
  if (cli_parse_bytes(s, out)) return cli_usage_error(cmd, "bad --size '%s' (bytes, e.g. 1048576, 1MB, 64KiB)", s);
  if (*out == 0) return cli_fail(cmd, "--size must be positive (got 0 bytes)");
  return CLI_OK;
}

/* ---- synth ---- */

static int coll_synth(const coll_args *a) {
  const char *cmd = "collective synth";
  coll_machine m;
  mlsys_coll_sketch sk;
  mlsys_coll_topo phys, logical;
  mlsys_coll_algo algo, cp;
  mlsys_coll_stats stats;
  mlsys_coll_def def;
  mlsys_coll_baseline_times base;
  uint64_t size = 0;
  int kind, nodes = 0, chunkup = 0, instances = 1, rc, verified = 0, nmerged, N, synthesized;
  double tl = 0, time_us, sched_us, synth_us, synth_bw, algbw = 0;
  int nic_reordered = 0;
  char vmsg[512] = "", b1[32];
  const char *xml_written = NULL;
  if (!a->coll) return cli_usage_error(cmd, "--coll allgather|alltoall|reducescatter|allreduce is required");
  if ((kind = mlsys_coll_kind_parse(a->coll)) < 0)
    return cli_usage_error(cmd, "unknown collective '%s' (allgather, alltoall, reducescatter, allreduce)", a->coll);
  if (a->nodes && coll_parse_int(a->nodes, 1, 64, &nodes)) return cli_usage_error(cmd, "--nodes needs an integer in [1, 64], got '%s'", a->nodes);
  if (a->chunkup && coll_parse_int(a->chunkup, 1, 1024, &chunkup))
    return cli_usage_error(cmd, "--chunkup needs an integer in [1, 1024], got '%s'", a->chunkup);
  if (a->instances && coll_parse_int(a->instances, 1, 1024, &instances))
    return cli_usage_error(cmd, "--instances needs an integer in [1, 1024], got '%s'", a->instances);
  if (a->time_limit && (cli_parse_double(a->time_limit, &tl) || !(tl > 0)))
    return cli_usage_error(cmd, "--time-limit needs a positive number of seconds, got '%s'", a->time_limit);
  if (!a->sketch) return cli_usage_error(cmd, "--sketch FILE is required (a communication sketch, the authors' JSON schema)");
  if (a->size && (rc = coll_size(cmd, a->size, &size)) != CLI_OK) return rc;
  if ((rc = coll_machine_resolve(cmd, a, NULL, &m)) != CLI_OK) return rc;
  {
    char *text;
    size_t len;
    mlsys_status st;
    if (mlsys_read_file(a->sketch, &text, &len)) return cli_fail(cmd, "%s", mlsys_last_error());
    st = mlsys_coll_sketch_parse_json(text, len, a->sketch, m.G, &sk);
    mlsys_free(text);
    if (st) return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (!a->size) {
    if (!(sk.input_bytes > 0)) {
      mlsys_coll_sketch_free(&sk);
      return cli_usage_error(cmd, "--size BYTES is required (the sketch gives no hyperparameters.input_size)");
    }
    size = (uint64_t)sk.input_bytes;
  }
  if (nodes && nodes != (sk.nnodes > 0 ? sk.nnodes : 1)) {
    rc = cli_fail(cmd, "%s is a sketch for %d node(s), but --nodes is %d", a->sketch, sk.nnodes > 0 ? sk.nnodes : 1, nodes);
    mlsys_coll_sketch_free(&sk);
    return rc;
  }
  nodes = sk.nnodes > 0 ? sk.nnodes : 1;
  if (chunkup) sk.chunkup = chunkup;
  if (tl > 0) sk.route_time_limit = sk.sched_time_limit = tl;
  if (a->solver) {
    if (!strcmp(a->solver, "lpsolve") || !strcmp(a->solver, "lp_solve")) sk.backend = MLSYS_SOLVER_LPSOLVE;
    else if (!strcmp(a->solver, "cbc")) sk.backend = MLSYS_SOLVER_CBC;
    else { mlsys_coll_sketch_free(&sk); return cli_usage_error(cmd, "unknown solver '%s' (lpsolve or cbc)", a->solver); }
    if (!mlsys_milp_has_backend((mlsys_milp_backend)sk.backend)) {
      mlsys_coll_sketch_free(&sk);
      return cli_fail(cmd, "this build has no %s backend", a->solver);
    }
  }
  if (coll_build_topo(cmd, &m, nodes, &phys) != CLI_OK) { mlsys_coll_sketch_free(&sk); return CLI_ERR; }
  N = phys.nranks;
  if (mlsys_coll_synthesize(&phys, &sk, kind, (double)size, &algo, &logical, &stats)) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    mlsys_coll_sketch_free(&sk);
    mlsys_coll_topo_free(&phys);
    return rc;
  }
  mlsys_coll_sketch_free(&sk);
  rc = CLI_OK;
  memset(&def, 0, sizeof def);
  /* independent checks of the result: the sketch's logical links and the physical ones */
  if (mlsys_coll_def_make(kind, N, algo.chunkup, &def)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  verified = mlsys_coll_verify(&def, &logical, &algo, vmsg, sizeof vmsg) == MLSYS_OK &&
             mlsys_coll_verify(&def, &phys, &algo, vmsg, sizeof vmsg) == MLSYS_OK;
  time_us = NAN;
  if (mlsys_coll_algo_copy(&algo, &cp) == MLSYS_OK) {
    time_us = coll_sim_time(&phys, &cp, &algbw);
    nic_reordered = coll_last_nic_reordered;
    mlsys_coll_algo_free(&cp);
  }
  if (isnan(time_us)) { rc = cli_fail(cmd, "simulating the algorithm on %s: %s", phys.name, mlsys_last_error()); goto done; }
  /* the library returned the synthesized schedule or a faster baseline (stats.source); the synthesized one's
     times stay beside it either way */
  synthesized = stats.source == MLSYS_COLL_SRC_SYNTHESIZED;
  synth_us = stats.synth_us;
  sched_us = stats.synth_logical_us;
  synth_bw = algbw * time_us / synth_us;   /* same output bytes */
  base = stats.base;
  if (kind == MLSYS_COLL_ALLTOALL) { base.ring_us = base.direct_us; base.ring_gbps = base.direct_gbps; }   /* NCCL p2p */
  nmerged = synthesized ? stats.nmerged : 0;   /* baselines never merge */
  if (a->xml && verified) {
    mlsys_coll_prog prog;
    FILE *f;
    char pmsg[512];
    if (mlsys_coll_lower(&def, &algo, instances, &prog)) { rc = cli_fail(cmd, "lowering to a program: %s", mlsys_last_error()); goto done; }
    if (mlsys_coll_prog_verify(&def, &prog, pmsg, sizeof pmsg)) {
      rc = cli_fail(cmd, "the lowered program fails verification: %s", pmsg);
      mlsys_coll_prog_free(&prog);
      goto done;
    }
    if (!(f = fopen(a->xml, "w"))) {
      rc = cli_fail(cmd, "%s: cannot write", a->xml);
      mlsys_coll_prog_free(&prog);
      goto done;
    }
    if (mlsys_coll_prog_write_xml(&prog, f)) rc = cli_fail(cmd, "%s: %s", a->xml, mlsys_last_error());
    if (fclose(f) != 0 && rc == CLI_OK) rc = cli_fail(cmd, "%s: write failed", a->xml);
    mlsys_coll_prog_free(&prog);
    if (rc != CLI_OK) goto done;
    xml_written = a->xml;
  }
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, verified ? "ok" : "invalid");
    mlsys_jw_key(&w, "coll"); mlsys_jw_str(&w, mlsys_coll_kind_name(kind));
    mlsys_jw_key(&w, "topology"); mlsys_jw_str(&w, phys.name);
    coll_jint(&w, "nranks", N);
    coll_jint(&w, "nnodes", nodes);
    mlsys_jw_key(&w, "buffer_bytes"); mlsys_jw_u64(&w, size);
    coll_jint(&w, "chunkup", algo.chunkup);
    coll_jnum(&w, "chunk_bytes", algo.chunk_bytes);
    mlsys_jw_key(&w, "source"); mlsys_jw_str(&w, mlsys_coll_source_name(stats.source));
    coll_jnum(&w, "time_us", time_us);
    coll_jnum(&w, "synth_time_us", synth_us);
    coll_jnum(&w, "sched_time_us", sched_us);
    mlsys_jw_key(&w, "nic_reordered"); mlsys_jw_bool(&w, nic_reordered);
    coll_jnum(&w, "ring_time_us", base.ring_us);
    coll_jint(&w, "ring_nrings", base.ring_nrings);
    coll_jnum(&w, "direct_time_us", base.direct_us);
    coll_jnum(&w, "hier_time_us", base.hier_us);
    coll_jnum(&w, "speedup_vs_ring", base.ring_us / time_us);
    coll_jnum(&w, "algbw_gbps", algbw);
    coll_jnum(&w, "synth_seconds", stats.total_s);
    coll_jnum(&w, "route_seconds", stats.route_s);
    coll_jnum(&w, "order_seconds", stats.order_s);
    coll_jnum(&w, "sched_seconds", stats.sched_s);
    coll_jnum(&w, "route_time_us", stats.route_obj);
    coll_jnum(&w, "route_bound_us", stats.route_bound);
    coll_jnum(&w, "route_gap", stats.route_gap);
    mlsys_jw_key(&w, "route_status"); mlsys_jw_str(&w, mlsys_milp_status_str((mlsys_milp_status)stats.route_status));
    coll_jnum(&w, "sched_gap", stats.sched_gap);
    coll_jint(&w, "transfers", algo.nxfer);
    coll_jint(&w, "merged", nmerged);
    coll_jint(&w, "route_binaries", stats.route_bins);
    coll_jint(&w, "route_binaries_unsym", stats.route_bins_unsym);
    mlsys_jw_key(&w, "verified"); mlsys_jw_bool(&w, verified);
    mlsys_jw_key(&w, "xml"); mlsys_jw_str(&w, xml_written);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "%s", mlsys_last_error());
  } else {
    char nm[32];
    snprintf(nm, sizeof nm, "ring (%d ring%s)", base.ring_nrings, base.ring_nrings == 1 ? "" : "s");
    printf("TACCL %s on %s (%d ranks), %s (%llu bytes) per rank: returns the %s schedule, chunkup %d: %s\n",
           mlsys_coll_kind_name(kind), phys.name, N, cli_fmt_bytes(size, b1, sizeof b1), (unsigned long long)size,
           mlsys_coll_source_name(stats.source), algo.chunkup, verified ? "verified" : "NOT verified");
    coll_row("synthesized", synth_us, synth_bw);
    printf("  %-22s %10.2f us  (on the sketch's logical topology: the scheduler's model)\n", "", sched_us);
    if (kind == MLSYS_COLL_ALLTOALL) coll_row("NCCL p2p (direct)", base.ring_us, base.ring_gbps);
    else {
      coll_row(nm, base.ring_us, base.ring_gbps);
      coll_row("direct", base.direct_us, base.direct_gbps);
    }
    coll_row("hierarchical", base.hier_us, base.hier_gbps);
    if (!synthesized)
      printf("  returned: %s, %.2f us; the synthesized schedule (%.2f us) is %.2fx slower\n",
             stats.source == MLSYS_COLL_SRC_RING ? nm : kind == MLSYS_COLL_ALLTOALL && stats.source == MLSYS_COLL_SRC_DIRECT
                 ? "direct (NCCL p2p)" : mlsys_coll_source_name(stats.source),
             time_us, synth_us, synth_us / time_us);
    if (!isnan(base.ring_us)) printf("  speedup over %s: %.2fx\n", kind == MLSYS_COLL_ALLTOALL ? "NCCL p2p" : "ring", base.ring_us / time_us);
    printf("  synthesis %.2f s: routing %.2f s (%s, gap %.3g, %d binaries, %d before symmetry), ordering %.2f s,"
           " scheduling %.2f s; %s %d transfers, %d merged\n",
           stats.total_s, stats.route_s, mlsys_milp_status_str((mlsys_milp_status)stats.route_status), stats.route_gap,
           stats.route_bins, stats.route_bins_unsym, stats.order_s, stats.sched_s, synthesized ? "" : "returned schedule:",
           algo.nxfer, nmerged);
    if (xml_written) printf("  MSCCL program (%d instance%s): %s\n", instances, instances == 1 ? "" : "s", xml_written);
  }
  if (!verified) rc = cli_fail(cmd, "the synthesized algorithm fails verification: %s", vmsg);
done:
  mlsys_coll_def_free(&def);
  mlsys_coll_algo_free(&algo);
  mlsys_coll_topo_free(&logical);
  mlsys_coll_topo_free(&phys);
  return rc;
}

/* ---- simulate: an α–β estimate of an MSCCL program (the model is described in coll_help) ---- */

typedef struct { int a, b, chan; } coll_ckey;
static int coll_ckey_cmp(const void *x, const void *y) {
  const coll_ckey *p = (const coll_ckey *)x, *q = (const coll_ckey *)y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->chan < q->chan ? -1 : p->chan > q->chan;
}
static int coll_op_sends(int op) {
  return op == MLSYS_COLL_OP_SEND || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRCS;
}
static int coll_op_recvs(int op) {
  return op == MLSYS_COLL_OP_RECV || op == MLSYS_COLL_OP_RCS || op == MLSYS_COLL_OP_RRS || op == MLSYS_COLL_OP_RRC ||
         op == MLSYS_COLL_OP_RRCS;
}

/* Returns 0 and the makespan, or -1 with a message in err. The program must have passed mlsys_coll_prog_verify
   (unique connections, deadlock freedom). */
static int coll_prog_time(const mlsys_coll_prog *p, const mlsys_coll_topo *t, double slot_bytes, double *out,
                          long *nsends, char *err, size_t errlen) {
  int N = p->ngpus, T = 0, S = 0, g, k, nq = 0, rc = -1, *tbase, *sbase, *next, *sq, *rq, *qn, *qh, *qoff;
  coll_ckey *keys;
  double *tb_t, *fin, *arr, *link, *port, mk = 0;
  long remaining, sends = 0;
  for (g = 0; g < N; g++) {
    T += p->gpus[g].ntbs;
    for (k = 0; k < p->gpus[g].ntbs; k++) S += p->gpus[g].tbs[k].nsteps;
  }
  tbase = (int *)calloc((size_t)N + 1, sizeof(int));
  sbase = (int *)calloc((size_t)T + 1, sizeof(int));
  next = (int *)calloc((size_t)T + 1, sizeof(int));
  sq = (int *)calloc((size_t)T + 1, sizeof(int));
  rq = (int *)calloc((size_t)T + 1, sizeof(int));
  keys = (coll_ckey *)calloc((size_t)T + 1, sizeof *keys);
  qn = (int *)calloc((size_t)T + 1, sizeof(int));
  qh = (int *)calloc((size_t)T + 1, sizeof(int));
  qoff = (int *)calloc((size_t)T + 2, sizeof(int));
  tb_t = (double *)calloc((size_t)T + 1, sizeof(double));
  fin = (double *)calloc((size_t)S + 1, sizeof(double));
  arr = (double *)calloc((size_t)S + 1, sizeof(double));
  link = (double *)calloc((size_t)N * N, sizeof(double));
  port = (double *)calloc((size_t)4 * N, sizeof(double));   /* switch port out/in, NIC out/in */
  if (!tbase || !sbase || !next || !sq || !rq || !keys || !qn || !qh || !qoff || !tb_t || !fin || !arr || !link || !port) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  for (g = 0; g < N; g++) {
    tbase[g + 1] = tbase[g] + p->gpus[g].ntbs;
    for (k = 0; k < p->gpus[g].ntbs; k++) {
      int gt = tbase[g] + k;
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[k];
      sbase[gt + 1] = sbase[gt] + tb->nsteps;
      if (tb->send >= 0) {
        size_t l = (size_t)g * N + tb->send;
        if (t->nranks != N || !t->kind[l]) {
          snprintf(err, errlen, "gpu %d sends to gpu %d, but %s has no link %d -> %d", g, tb->send, t->name, g, tb->send);
          goto done;
        }
        keys[nq].a = g; keys[nq].b = tb->send; keys[nq].chan = tb->chan; nq++;
      }
    }
  }
  qsort(keys, (size_t)nq, sizeof *keys, coll_ckey_cmp);
  /* connection q: the sends of its (unique) sender threadblock arrive in FIFO slots arr[qoff[q] ...] */
  for (g = 0; g < N; g++)
    for (k = 0; k < p->gpus[g].ntbs; k++) {
      const mlsys_coll_tb *tb = &p->gpus[g].tbs[k];
      coll_ckey key, *f;
      int gt = tbase[g] + k;
      sq[gt] = rq[gt] = -1;
      if (tb->send >= 0) {
        key.a = g; key.b = tb->send; key.chan = tb->chan;
        f = (coll_ckey *)bsearch(&key, keys, (size_t)nq, sizeof *keys, coll_ckey_cmp);
        sq[gt] = (int)(f - keys);
        qoff[sq[gt] + 1] = tb->nsteps;
      }
      if (tb->recv >= 0) {
        key.a = tb->recv; key.b = g; key.chan = tb->chan;
        f = (coll_ckey *)bsearch(&key, keys, (size_t)nq, sizeof *keys, coll_ckey_cmp);
        rq[gt] = f ? (int)(f - keys) : -1;
      }
    }
  for (k = 0; k < nq; k++) qoff[k + 1] += qoff[k];
  remaining = S;
  while (remaining > 0) {
    int best = -1, bg = 0;
    double bstart = 0;
    for (g = 0; g < N; g++)
      for (k = 0; k < p->gpus[g].ntbs; k++) {
        int gt = tbase[g] + k;
        const mlsys_coll_tb *tb = &p->gpus[g].tbs[k];
        const mlsys_coll_step *sp;
        double ready;
        if (next[gt] >= tb->nsteps) continue;
        sp = &tb->steps[next[gt]];
        ready = tb_t[gt];
        if (sp->depid >= 0) {
          int dt = tbase[g] + sp->depid;
          if (next[dt] <= sp->deps) continue;
          if (fin[sbase[dt] + sp->deps] > ready) ready = fin[sbase[dt] + sp->deps];
        }
        if (coll_op_recvs(sp->op)) {
          int q = rq[gt];
          if (q < 0 || qh[q] >= qn[q]) continue;
          if (arr[qoff[q] + qh[q]] > ready) ready = arr[qoff[q] + qh[q]];
        }
        if (coll_op_sends(sp->op)) {
          size_t l = (size_t)g * N + tb->send;
          if (link[l] > ready) ready = link[l];
          if (t->sw[l] >= 0) {
            if (port[g] > ready) ready = port[g];
            if (port[N + tb->send] > ready) ready = port[N + tb->send];
          } else if (t->kind[l] == MLSYS_COLL_LINK_IB && t->nic_serial && t->nic[g] >= 0 && t->nic[tb->send] >= 0) {
            if (port[2 * N + t->nic[g]] > ready) ready = port[2 * N + t->nic[g]];
            if (port[3 * N + t->nic[tb->send]] > ready) ready = port[3 * N + t->nic[tb->send]];
          }
        }
        if (best < 0 || ready < bstart) { best = gt; bg = g; bstart = ready; }
      }
    if (best < 0) { snprintf(err, errlen, "the program cannot make progress (deadlock)"); goto done; }
    {
      const mlsys_coll_tb *tb = &p->gpus[bg].tbs[best - tbase[bg]];
      const mlsys_coll_step *sp = &tb->steps[next[best]];
      double f = bstart;
      if (coll_op_recvs(sp->op)) qh[rq[best]]++;
      if (coll_op_sends(sp->op)) {
        size_t l = (size_t)bg * N + tb->send;
        int q = sq[best];
        f = bstart + mlsys_coll_lat(t->cost[l], slot_bytes * sp->cnt);
        link[l] = f;
        if (t->sw[l] >= 0) port[bg] = port[N + tb->send] = f;
        else if (t->kind[l] == MLSYS_COLL_LINK_IB && t->nic_serial && t->nic[bg] >= 0 && t->nic[tb->send] >= 0)
          port[2 * N + t->nic[bg]] = port[3 * N + t->nic[tb->send]] = f;
        arr[qoff[q] + qn[q]++] = f;
        sends++;
      }
      fin[sbase[best] + next[best]] = f;
      tb_t[best] = f;
      next[best]++;
      if (f > mk) mk = f;
      remaining--;
    }
  }
  *out = mk;
  *nsends = sends;
  rc = 0;
done:
  free(tbase); free(sbase); free(next); free(sq); free(rq); free(keys); free(qn); free(qh); free(qoff);
  free(tb_t); free(fin); free(arr); free(link); free(port);
  return rc;
}

static int coll_simulate(const coll_args *a) {
  const char *cmd = "collective simulate";
  mlsys_coll_prog prog;
  mlsys_coll_def def;
  mlsys_coll_topo topo;
  coll_machine m;
  uint64_t size = 1000000;
  int rc, N, n, C = 0, ni, nodes = 0, g, k, ntbs = 0, verified;
  long steps = 0, sends = 0;
  double time_us = NAN, algbw = NAN;
  char vmsg[512] = "", terr[256] = "";
  if (!a->xml) return cli_usage_error(cmd, "--xml FILE is required (an MSCCL XML program)");
  if (a->nodes && coll_parse_int(a->nodes, 1, 64, &nodes)) return cli_usage_error(cmd, "--nodes needs an integer in [1, 64], got '%s'", a->nodes);
  if (a->size && (rc = coll_size(cmd, a->size, &size)) != CLI_OK) return rc;
  if ((rc = coll_machine_resolve(cmd, a, "ndv2", &m)) != CLI_OK) return rc;
  {
    char *text;
    size_t len;
    mlsys_status st;
    if (mlsys_read_file(a->xml, &text, &len)) return cli_fail(cmd, "%s", mlsys_last_error());
    st = mlsys_coll_prog_read_xml(text, len, a->xml, &prog);
    mlsys_free(text);
    if (st) return cli_fail(cmd, "%s", mlsys_last_error());
  }
  N = prog.ngpus; n = prog.instances;
  /* chunkup from the buffers (out of place: AG's input holds C·n slots, the others' N·C·n; in place, AG's output
     N·C·n); ni = the slots of a rank's input data, which --size fills */
  C = mlsys_coll_prog_chunkup(&prog);
  ni = prog.kind == MLSYS_COLL_ALLGATHER ? C * n : N * C * n;
  memset(&def, 0, sizeof def);
  memset(&topo, 0, sizeof topo);
  rc = CLI_OK;
  if (C < 1) {
    rc = cli_fail(cmd, "%s: gpu 0 has %d input and %d output chunks, which is no %s%s layout for %d gpus and %d instance(s)",
                  a->xml, prog.gpus[0].i_chunks, prog.gpus[0].o_chunks, prog.inplace && !prog.outofplace ? "in-place " : "",
                  mlsys_coll_kind_name(prog.kind), N, n);
    goto done;
  }
  if (N % m.G) {
    rc = cli_fail(cmd, "%s has %d gpus, not a whole number of %s nodes (%d GPUs each); give a matching --topo", a->xml, N,
                  m.dgx2 ? "DGX-2" : "NDv2", m.G);
    goto done;
  }
  if (nodes && nodes * m.G != N) {
    rc = cli_fail(cmd, "%s has %d gpus, but --nodes %d gives %d", a->xml, N, nodes, nodes * m.G);
    goto done;
  }
  nodes = N / m.G;
  if (coll_build_topo(cmd, &m, nodes, &topo) != CLI_OK) { rc = CLI_ERR; goto done; }
  if (mlsys_coll_def_make(prog.kind, N, C, &def)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  verified = mlsys_coll_prog_verify(&def, &prog, vmsg, sizeof vmsg) == MLSYS_OK;
  for (g = 0; g < N; g++) {
    ntbs += prog.gpus[g].ntbs;
    for (k = 0; k < prog.gpus[g].ntbs; k++) steps += prog.gpus[g].tbs[k].nsteps;
  }
  if (verified) {
    if (coll_prog_time(&prog, &topo, (double)size / ni, &time_us, &sends, terr, sizeof terr)) {
      rc = cli_fail(cmd, "%s: %s", a->xml, terr);
      goto done;
    }
    /* output bytes per rank: AG and AR gather N·C chunks, A2A and RS deliver their input's worth */
    algbw = (prog.kind == MLSYS_COLL_ALLGATHER ? (double)size * N : (double)size) / time_us * 1e-3;
  }
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, verified ? "ok" : "invalid");
    mlsys_jw_key(&w, "coll"); mlsys_jw_str(&w, mlsys_coll_kind_name(prog.kind));
    coll_jint(&w, "ngpus", N);
    coll_jint(&w, "instances", n);
    coll_jint(&w, "chunkup", C);
    mlsys_jw_key(&w, "topology"); mlsys_jw_str(&w, topo.name);
    mlsys_jw_key(&w, "buffer_bytes"); mlsys_jw_u64(&w, size);
    coll_jint(&w, "threadblocks", ntbs);
    coll_jint(&w, "steps", steps);
    coll_jint(&w, "sends", sends);
    mlsys_jw_key(&w, "verified"); mlsys_jw_bool(&w, verified);
    coll_jnum(&w, "time_us", time_us);
    coll_jnum(&w, "algbw_gbps", algbw);
    if (!verified) { mlsys_jw_key(&w, "error"); mlsys_jw_str(&w, vmsg); }
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "%s", mlsys_last_error());
  } else {
    char b1[32];
    printf("%s: %s on %d gpus, chunkup %d, %d instance(s), %d threadblocks, %ld steps: %s\n", a->xml,
           mlsys_coll_kind_name(prog.kind), N, C, n, ntbs, steps, verified ? "verified" : "NOT verified");
    if (verified)
      printf("  estimated %.2f us on %s at %s (%llu bytes) per rank, %ld sends: %.2f GB/s\n", time_us, topo.name,
             cli_fmt_bytes(size, b1, sizeof b1), (unsigned long long)size, sends, algbw);
  }
  if (!verified) rc = cli_fail(cmd, "%s fails verification: %s", a->xml, vmsg);
done:
  mlsys_coll_def_free(&def);
  mlsys_coll_topo_free(&topo);
  mlsys_coll_prog_free(&prog);
  return rc;
}

/* ---- baselines ---- */

static int coll_baselines_cmd(const coll_args *a) {
  const char *cmd = "collective baselines";
  coll_machine m;
  mlsys_coll_topo t;
  mlsys_coll_baseline_times b;
  uint64_t size;
  int kind, nodes = 1, rc;
  if (!a->coll) return cli_usage_error(cmd, "--coll allgather|alltoall|reducescatter|allreduce is required");
  if ((kind = mlsys_coll_kind_parse(a->coll)) < 0)
    return cli_usage_error(cmd, "unknown collective '%s' (allgather, alltoall, reducescatter, allreduce)", a->coll);
  if (!a->size) return cli_usage_error(cmd, "--size BYTES is required");
  if ((rc = coll_size(cmd, a->size, &size)) != CLI_OK) return rc;
  if (a->nodes && coll_parse_int(a->nodes, 1, 64, &nodes)) return cli_usage_error(cmd, "--nodes needs an integer in [1, 64], got '%s'", a->nodes);
  if ((rc = coll_machine_resolve(cmd, a, NULL, &m)) != CLI_OK) return rc;
  if (coll_build_topo(cmd, &m, nodes, &t) != CLI_OK) return CLI_ERR;
  coll_baselines(&t, kind, (double)size, &b);
  rc = CLI_OK;
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, "ok");
    mlsys_jw_key(&w, "coll"); mlsys_jw_str(&w, mlsys_coll_kind_name(kind));
    mlsys_jw_key(&w, "topology"); mlsys_jw_str(&w, t.name);
    coll_jint(&w, "nranks", t.nranks);
    coll_jint(&w, "nnodes", nodes);
    mlsys_jw_key(&w, "buffer_bytes"); mlsys_jw_u64(&w, size);
    coll_jnum(&w, "ring_time_us", b.ring_us);
    coll_jint(&w, "ring_nrings", b.ring_nrings);
    coll_jnum(&w, "ring_algbw_gbps", b.ring_gbps);
    coll_jnum(&w, "direct_time_us", b.direct_us);
    coll_jnum(&w, "direct_algbw_gbps", b.direct_gbps);
    coll_jnum(&w, "hier_time_us", b.hier_us);
    coll_jnum(&w, "hier_algbw_gbps", b.hier_gbps);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w)) rc = cli_fail(cmd, "%s", mlsys_last_error());
  } else {
    char b1[32], nm[32];
    printf("%s on %s (%d ranks), %s (%llu bytes) per rank, alpha-beta model:\n", mlsys_coll_kind_name(kind), t.name, t.nranks,
           cli_fmt_bytes(size, b1, sizeof b1), (unsigned long long)size);
    if (kind == MLSYS_COLL_ALLTOALL) coll_row("NCCL p2p (direct)", b.ring_us, b.ring_gbps);
    else {
      snprintf(nm, sizeof nm, "ring (%d ring%s)", b.ring_nrings, b.ring_nrings == 1 ? "" : "s");
      coll_row(b.ring_nrings ? nm : "ring", b.ring_us, b.ring_gbps);
      coll_row("direct", b.direct_us, b.direct_gbps);
    }
    coll_row("hierarchical", b.hier_us, b.hier_gbps);
  }
  if (isnan(b.ring_us) && isnan(b.direct_us) && isnan(b.hier_us)) rc = cli_fail(cmd, "no baseline runs on %s", t.name);
  mlsys_coll_topo_free(&t);
  return rc;
}

int cmd_collective(int argc, char **argv) {
  coll_args a;
  const char *verb;
  int rc;
  cli_opt opts[] = {
      {"--topo", 1, &a.topo},         {"--profile", 1, &a.profile},       {"--nodes", 1, &a.nodes},
      {"--sketch", 1, &a.sketch},     {"--coll", 1, &a.coll},             {"--size", 1, &a.size},
      {"--chunkup", 1, &a.chunkup},   {"--time-limit", 1, &a.time_limit}, {"--instances", 1, &a.instances},
      {"--xml", 1, &a.xml},           {"--json", 0, &a.json},             {"--help", 0, &a.help},
      {"--solver", 1, &a.solver},
  };
  memset(&a, 0, sizeof a);
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
    fputs(coll_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  verb = argv[2];
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), "collective")) != CLI_OK) return rc;
  if (a.help) { fputs(coll_help, stdout); return CLI_OK; }
  if (!strcmp(verb, "synth")) return coll_synth(&a);
  if (!strcmp(verb, "simulate")) return coll_simulate(&a);
  if (!strcmp(verb, "baselines")) return coll_baselines_cmd(&a);
  return cli_usage_error("collective", "unknown verb '%s' (synth, simulate, baselines)", verb);
}
