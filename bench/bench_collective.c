/* bench/bench_collective.c — issue 5 benchmark: TACCL collective synthesis (mlsys_collective.h).

   Part "time": synthesis wall time (routing MILP → ordering → scheduling MILP) on this machine for the authors'
   sketches (tests/data/taccl/sketch/), next to the thesis's Gurobi times (Table 5.3, spec §5.2), with per-stage
   seconds, routing binaries before/after the symmetry substitution, routing status/gap and merges.

   Part "bw": simulated algorithm bandwidth of the synthesized algorithm (best sketch per size, as the thesis
   plots it) against the ring (best of 1, 2, 4, 8 rings), direct and hierarchical baselines, every one simulated
   on the PHYSICAL topology (mlsys_coll_topo_ndv2/dgx2(2, NULL): thesis Table 5.1 costs), for buffers 1 KiB …
   1 GiB, with the spec §5.1 speedups beside it, a PASS/FAIL line for "synthesized is never slower than the best
   baseline", and an SVG plot per machine (bench/plots/collective_*.svg).

   usage: bench_collective [time|bw|all] [--quick] [--ar] [--plots DIR] [--sketches DIR]
     no arguments = `all --quick` (what `make bench` runs: a few minutes).
     --quick  short MILP limits, fewer cases and sizes; without it: the full run (see bench/RESULTS.md §4).
     --ar     bw part: ALLREDUCE too (fewer sizes; the AG sketches' schedules inverted and concatenated, §5.7).
     --plots DIR  where the SVGs go (default bench/plots; in quick mode build/, so `make bench` keeps the full plots).
   The full run of bench/RESULTS.md §4: `bench_collective time` and `bench_collective bw --ar` (two processes, one
   per core, about 16 minutes each).

   Synthesis per (sketch, size): each sketch is synthesized at every size of the sweep under a per-size limit.
   A sketch whose routing finds no feasible solution within that short limit is synthesized ONCE at its native
   chunk size (the size class of the thesis's sketch: dgx2-sk-1 = 2 MiB chunks) with the long limit, and that
   schedule is re-simulated at the other sizes (chunk size rescaled). Every synthesized schedule of a machine is
   also tried, rescaled, at every other size (the thesis's "try a small set of nearby sizes", Fig. 5.10); the
   table says which sketch and which synthesis size won. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"
#include "bench/bench_machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)

static const char *sketch_dir = "tests/data/taccl/sketch";
static const char *plot_dir = NULL;   /* default: bench/plots (full run), build (quick run: keeps the full plots) */
static int quick = 0;

/* ---------------------------------------------------------------------------------------------------------------
   small helpers
   --------------------------------------------------------------------------------------------------------------- */
static const char *fmt_size(double b, char *buf, size_t n) {
  if (b >= 1024 * MiB) snprintf(buf, n, "%gG", b / (1024 * MiB));
  else if (b >= MiB) snprintf(buf, n, "%gM", b / MiB);
  else if (b >= KiB) snprintf(buf, n, "%gK", b / KiB);
  else snprintf(buf, n, "%gB", b);
  return buf;
}

static void print_machine(void) {
  char model[256], date[64];
  bench_machine(model, sizeof model, date, sizeof date);
  printf("machine: %ld CPU(s), %s; MILP: the library's default (%s)\n", sysconf(_SC_NPROCESSORS_ONLN), model,
         mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? "lp_solve for a bounded amount of work, then CBC"
                                                  : "lp_solve; CBC not built in");
  printf("date: %s; mode: %s\n", date, quick ? "quick" : "full");
}

static int load_sketch(const char *file, int G, mlsys_coll_sketch *sk) {
  char path[512], *text;
  size_t len;
  snprintf(path, sizeof path, "%s/%s.json", sketch_dir, file);
  if (mlsys_read_file(path, &text, &len)) { fprintf(stderr, "bench_collective: %s\n", mlsys_last_error()); return -1; }
  if (mlsys_coll_sketch_parse_json(text, len, path, G, sk)) {
    fprintf(stderr, "bench_collective: %s\n", mlsys_last_error());
    mlsys_free(text);
    return -1;
  }
  mlsys_free(text);
  return 0;
}

static int build_phys(int dgx2, int nodes, mlsys_coll_topo *t) {
  mlsys_status st = dgx2 ? mlsys_coll_topo_dgx2(nodes, NULL, t) : mlsys_coll_topo_ndv2(nodes, NULL, t);
  if (st) fprintf(stderr, "bench_collective: %s\n", mlsys_last_error());
  return st ? -1 : 0;
}

/* Simulated time of a (copy of) a on t; NAN when the orders deadlock or the simulation fails. */
static double sim_us(const mlsys_coll_topo *t, const mlsys_coll_algo *a, double *algbw) {
  mlsys_coll_algo cp;
  mlsys_coll_sim_result r;
  double us = NAN;
  if (mlsys_coll_algo_copy(a, &cp)) return NAN;
  if (mlsys_coll_simulate(t, &cp, NULL, &r) == MLSYS_OK && !r.deadlock) {
    us = r.makespan_us;
    if (algbw) *algbw = r.algbw_gbps;
  }
  mlsys_coll_algo_free(&cp);
  return us;
}

/* The same schedule at another buffer size: only the chunk size changes (AG: buffer / C; A2A, RS, AR: buffer /
   (N·C)); merges and orders are kept. */
static double sim_rescaled(const mlsys_coll_topo *t, const mlsys_coll_algo *a, double buffer, double *algbw) {
  mlsys_coll_algo cp = *a;
  cp.chunk_bytes = a->kind == MLSYS_COLL_ALLGATHER ? buffer / a->chunkup : buffer / ((double)a->nranks * a->chunkup);
  return sim_us(t, &cp, algbw);
}

typedef struct {
  double ring, direct, hier;   /* µs, NAN = none */
  double ring_bw, direct_bw, hier_bw;
  int ring_nrings;
} baselines;

/* As the CLI's `collective baselines`: ring = best of 1, 2, 4, 8 default rings (A2A: NCCL p2p = direct). */
static void run_baselines(const mlsys_coll_topo *t, int kind, double bytes, baselines *b) {
  static const int nr[4] = {1, 2, 4, 8};
  mlsys_coll_algo a;
  int i, *rings = (int *)malloc((size_t)8 * t->nranks * sizeof(int));
  double bw = 0, us;
  b->ring = b->direct = b->hier = b->ring_bw = b->direct_bw = b->hier_bw = NAN;
  b->ring_nrings = 0;
  if (mlsys_coll_algo_direct(kind, t, 1, bytes, &a) == MLSYS_OK) {
    b->direct = sim_us(t, &a, &b->direct_bw);
    mlsys_coll_algo_free(&a);
  }
  if (mlsys_coll_algo_hierarchical(kind, t, 1, bytes, &a) == MLSYS_OK) {
    b->hier = sim_us(t, &a, &b->hier_bw);
    mlsys_coll_algo_free(&a);
  }
  if (kind == MLSYS_COLL_ALLTOALL) { b->ring = b->direct; b->ring_bw = b->direct_bw; }
  else if (rings)
    for (i = 0; i < 4; i++) {
      if (mlsys_coll_default_rings(t, nr[i], rings) || mlsys_coll_algo_ring(kind, t->nranks, rings, nr[i], 1, bytes, &a)) continue;
      us = sim_us(t, &a, &bw);
      mlsys_coll_algo_free(&a);
      if (!isnan(us) && (isnan(b->ring) || us < b->ring)) { b->ring = us; b->ring_bw = bw; b->ring_nrings = nr[i]; }
    }
  free(rings);
}

static double fmin_nan(double a, double b) { return isnan(a) ? b : isnan(b) ? a : a < b ? a : b; }

/* ---------------------------------------------------------------------------------------------------------------
   A cache of synthesized schedules, so that the bw part reuses what the time part (or an earlier size) paid for.
   Key: sketch file, collective, buffer bytes, limits.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  char file[64];
  int kind;
  double buffer, route_tl, sched_tl;
  int ok;                      /* 1 = synthesized; 0 = failed (msg) */
  char msg[256];
  mlsys_coll_algo algo;
  mlsys_coll_stats stats;
} synth_entry;
static synth_entry *cache = NULL;
static int ncache = 0, capcache = 0;

static synth_entry *synth(const char *file, int dgx2, int kind, double buffer, double route_tl, double sched_tl) {
  mlsys_coll_sketch sk;
  mlsys_coll_topo phys;
  synth_entry *e;
  int i;
  for (i = 0; i < ncache; i++)
    if (!strcmp(cache[i].file, file) && cache[i].kind == kind && cache[i].buffer == buffer &&
        cache[i].route_tl == route_tl && cache[i].sched_tl == sched_tl)
      return &cache[i];
  if (ncache == capcache) {
    synth_entry *nc;
    capcache = capcache ? 2 * capcache : 32;
    nc = (synth_entry *)realloc(cache, (size_t)capcache * sizeof *cache);
    if (!nc) { fprintf(stderr, "bench_collective: out of memory\n"); exit(1); }
    cache = nc;
  }
  e = &cache[ncache++];
  memset(e, 0, sizeof *e);
  snprintf(e->file, sizeof e->file, "%s", file);
  e->kind = kind; e->buffer = buffer; e->route_tl = route_tl; e->sched_tl = sched_tl;
  if (load_sketch(file, dgx2 ? 16 : 8, &sk)) { snprintf(e->msg, sizeof e->msg, "cannot read the sketch"); return e; }
  if (build_phys(dgx2, sk.nnodes > 0 ? sk.nnodes : 1, &phys)) {
    mlsys_coll_sketch_free(&sk);
    snprintf(e->msg, sizeof e->msg, "cannot build the topology");
    return e;
  }
  sk.route_time_limit = route_tl;
  sk.sched_time_limit = sched_tl;
  sk.keep_synthesized = 1;   /* this benchmark measures the synthesizer against the baselines itself */
  {
    double t0 = mlsys_now();
    if (mlsys_coll_synthesize(&phys, &sk, kind, buffer, &e->algo, NULL, &e->stats) == MLSYS_OK) e->ok = 1;
    else {
      snprintf(e->msg, sizeof e->msg, "%.250s", mlsys_last_error());
      e->stats.total_s = mlsys_now() - t0;
    }
  }
  mlsys_coll_sketch_free(&sk);
  mlsys_coll_topo_free(&phys);
  return e;
}

/* ---------------------------------------------------------------------------------------------------------------
   Part 1: synthesis time
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const char *label, *file;
  int dgx2, kind;
  double chunk;                /* bytes per chunk (the paper's sketch size class) */
  double route_tl, sched_tl;   /* full run */
  double thesis_s;             /* Table 5.3 (Gurobi), < 0 = not in the table */
  int in_quick;
} time_case;

static const time_case time_cases[] = {
  {"1xNDv2", "sk1-ndv2-n1", 0, MLSYS_COLL_ALLGATHER, MiB, 60, 60, -1, 1},
  {"1xNDv2 C=6", "sk-ndv2-n1-cUp6", 0, MLSYS_COLL_ALLGATHER, MiB / 6, 60, 60, -1, 1},
  {"ndv2-sk-1", "sk1-ndv2-n2", 0, MLSYS_COLL_ALLGATHER, MiB, 60, 60, 2.6, 1},
  {"ndv2-sk-2", "sk2-ndv2-n2", 0, MLSYS_COLL_ALLGATHER, KiB, 60, 60, -1, 1},
  {"1xDGX-2", "sk1-dgx2-n1", 1, MLSYS_COLL_ALLGATHER, MiB, 60, 60, -1, 1},
  {"dgx2-sk-2", "sk2-dgx2-n2", 1, MLSYS_COLL_ALLGATHER, KiB, 600, 120, 11.3, 1},
  {"dgx2-sk-1", "sk1-dgx2-n2", 1, MLSYS_COLL_ALLGATHER, 2 * MiB, 600, 120, 35.8, 1},
  {"ndv2-sk-1", "sk1-ndv2-n2", 0, MLSYS_COLL_ALLTOALL, MiB, 60, 60, 1809.8, 0},
  {"ndv2-sk-2", "sk2-ndv2-n2", 0, MLSYS_COLL_ALLTOALL, KiB, 60, 60, 8.4, 1},
  {"dgx2-sk-2", "sk2-dgx2-n2", 1, MLSYS_COLL_ALLTOALL, KiB, 60, 60, 92.5, 0},
  {"ndv2-sk-1", "sk1-ndv2-n2", 0, MLSYS_COLL_ALLREDUCE, MiB, 60, 60, 0.3, 1},
  {"dgx2-sk-2", "sk2-dgx2-n2", 1, MLSYS_COLL_ALLREDUCE, KiB, 120, 120, 127.8, 1},
  /* the same routing MILP as the AG above (same chunk size), which lp_solve does not prove in 600 s: 120 s here */
  {"dgx2-sk-1", "sk1-dgx2-n2", 1, MLSYS_COLL_ALLREDUCE, 2 * MiB, 120, 120, 6.1, 0},
};
#define NTIME ((int)(sizeof time_cases / sizeof time_cases[0]))

/* quick mode: every MILP gets QUICK_TL seconds */
#define QUICK_TL 10.0

static double case_buffer(const time_case *c, int N, int C) {
  return c->kind == MLSYS_COLL_ALLGATHER ? c->chunk * C : c->chunk * N * C;
}

static int sketch_chunkup(const char *file, int dgx2) {
  mlsys_coll_sketch sk;
  int C;
  if (load_sketch(file, dgx2 ? 16 : 8, &sk)) return 1;
  C = sk.chunkup > 0 ? sk.chunkup : 1;
  mlsys_coll_sketch_free(&sk);
  return C;
}

static int sketch_nodes(const char *file, int dgx2) {
  mlsys_coll_sketch sk;
  int n;
  if (load_sketch(file, dgx2 ? 16 : 8, &sk)) return 1;
  n = sk.nnodes > 0 ? sk.nnodes : 1;
  mlsys_coll_sketch_free(&sk);
  return n;
}

static int part_time(void) {
  int i;
  double ndv2_ag_s = NAN;
  int dgx2_ag_feasible[2] = {-1, -1};   /* dgx2-sk-1, dgx2-sk-2 */
  char b1[32];
  printf("\n== Part 1: synthesis wall time (lp_solve), thesis Table 5.3 (Gurobi) beside it\n");
  printf("   costs: thesis Table 5.1 (mlsys_coll_topo_*(n, NULL)); buffer = chunk x C (AG), chunk x N x C (A2A, AR)\n");
  printf("%-10s %-4s %-15s %-5s %7s %7s %7s %7s %7s %9s %11s %-10s %6s %9s %9s %9s %8s %6s %10s %10s %10s %8s\n", "sketch",
         "coll", "file", "buf", "limits", "total_s", "route_s", "order_s", "sched_s", "thesis_s", "bins(unsym)", "route_st",
         "gap", "route_us", "bound_us", "lb_us", "sch_gap", "merged", "phys_us", "ring_us", "best_base", "vs_ring");
  for (i = 0; i < NTIME; i++) {
    const time_case *c = &time_cases[i];
    int nodes = sketch_nodes(c->file, c->dgx2), C = sketch_chunkup(c->file, c->dgx2), N = nodes * (c->dgx2 ? 16 : 8);
    double rtl = quick ? QUICK_TL : c->route_tl, stl = quick ? QUICK_TL : c->sched_tl, buf = case_buffer(c, N, C);
    char lim[32];
    synth_entry *e;
    mlsys_coll_topo phys;
    baselines b;
    double us = NAN, best;
    if (quick && !c->in_quick) continue;
    snprintf(lim, sizeof lim, "%g/%g", rtl, stl);
    /* AR on dgx2-sk-1 routes the same MILP as its AG (same chunk size): skip it when the AG found no routing */
    if (c->kind == MLSYS_COLL_ALLREDUCE && !strcmp(c->file, "sk1-dgx2-n2") && dgx2_ag_feasible[0] == 0) {
      printf("%-10s %-4s %-15s %-5s %7s  skipped: its routing MILP is the ALLGATHER's above (same chunk size), which "
             "found no feasible routing\n", c->label, "AR", c->file, fmt_size(buf, b1, sizeof b1), lim);
      continue;
    }
    fflush(stdout);
    e = synth(c->file, c->dgx2, c->kind, buf, rtl, stl);
    if (build_phys(c->dgx2, nodes, &phys)) return 1;
    run_baselines(&phys, c->kind, buf, &b);
    best = fmin_nan(fmin_nan(b.ring, b.direct), b.hier);
    if (e->ok) us = sim_us(&phys, &e->algo, NULL);
    printf("%-10s %-4s %-15s %-5s %7s %7.2f", c->label,
           c->kind == MLSYS_COLL_ALLGATHER ? "AG" : c->kind == MLSYS_COLL_ALLTOALL ? "A2A" : "AR", c->file,
           fmt_size(buf, b1, sizeof b1), lim, e->stats.total_s);
    if (e->ok) {
      char bins[32];
      char th[16];
      snprintf(bins, sizeof bins, "%d(%d)", e->stats.route_bins, e->stats.route_bins_unsym);
      if (c->thesis_s >= 0) snprintf(th, sizeof th, "%.1f", c->thesis_s);
      else snprintf(th, sizeof th, "-");
      printf(" %7.2f %7.2f %7.2f %9s %11s %-10s %6.3f %9.2f %9.2f %9.2f %8.3g %6d ", e->stats.route_s, e->stats.order_s,
             e->stats.sched_s, th, bins, mlsys_milp_status_str((mlsys_milp_status)e->stats.route_status), e->stats.route_gap,
             e->stats.route_obj, e->stats.route_bound, e->stats.route_lb, e->stats.sched_gap, e->stats.nmerged);
      if (isnan(us)) printf("%10s", "deadlock");
      else printf("%10.2f", us);
      printf(" %10.2f %10.2f %8.2fx", b.ring, best, b.ring / us);
    } else {
      printf("  FAILED: %s", e->msg);
      if (c->thesis_s >= 0) printf(" [thesis %.1f s]", c->thesis_s);
    }
    printf("\n");
    if (e->ok && isnan(us))
      printf("           ^ the synthesized schedule deadlocks on the physical topology (cyclic link/port orders; "
             "the sketch's logical topology has no serial NIC for 2 nodes)\n");
    if (e->ok && !isnan(us) && us > best * (1 + 1e-9))
      printf("           ^ slower than the best baseline (%.2f us) on the physical topology\n", best);
    if (c->kind == MLSYS_COLL_ALLGATHER && !strcmp(c->file, "sk1-ndv2-n2")) ndv2_ag_s = e->stats.total_s;
    if (c->kind == MLSYS_COLL_ALLGATHER && !strcmp(c->file, "sk1-dgx2-n2")) dgx2_ag_feasible[0] = e->ok;
    if (c->kind == MLSYS_COLL_ALLGATHER && !strcmp(c->file, "sk2-dgx2-n2")) dgx2_ag_feasible[1] = e->ok;
    mlsys_coll_topo_free(&phys);
    fflush(stdout);
  }
  printf("(limits = route/sched MILP seconds; total_s includes the verification and simulation inside synthesize;\n"
         " bins = routing binaries after (before) the symmetry substitution; route_st, gap = routing MILP status and\n"
         " relative gap; route_us / bound_us = its objective (relaxed-bandwidth time) and the solver's bound; lb_us =\n"
         " the combinatorial lower bound; sch_gap = scheduling MILP gap;\n"
         " phys_us = the schedule simulated on the physical topology; vs_ring = ring_us / phys_us)\n");
  printf("target: 2xNDv2 ALLGATHER end to end <= 30 s: ndv2-sk-1 %.2f s -> %s\n", ndv2_ag_s,
         ndv2_ag_s <= 30 ? "MET" : "NOT MET");
  printf("target: 2xDGX-2 ALLGATHER feasible within 10 minutes: dgx2-sk-1 %s, dgx2-sk-2 %s%s\n",
         dgx2_ag_feasible[0] < 0 ? "not run" : dgx2_ag_feasible[0] ? "feasible" : "NO FEASIBLE ROUTING",
         dgx2_ag_feasible[1] < 0 ? "not run" : dgx2_ag_feasible[1] ? "feasible" : "NO FEASIBLE ROUTING",
         quick ? " (quick mode: 10 s limits, not the 10-minute target)" : "");
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   Part 2: algorithm bandwidth against the baselines, per buffer size; SVG plot per machine
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const char *name, *tag;      /* "2xNDv2", "ndv2" */
  int dgx2;
  const char *sketches[4];
  const char *native_label[4]; /* the thesis's name of the sketch */
  double native_chunk[4];      /* the sketch's size class (chunk bytes) for the once-only long synthesis */
  const char *thesis_ag, *thesis_ar;   /* spec §5.1 */
} machine;

static const machine machines[2] = {
  {"2xNDv2", "ndv2", 0, {"sk1-ndv2-n2", "sk2-ndv2-n2", "sk3-ndv2-n2", NULL}, {"ndv2-sk-1", "ndv2-sk-2", "(direct-map)", NULL},
   {MiB, KiB, MiB, 0}, "AG 2xNDv2 (spec 5.1 #4-5): +12-35% at 1 KB-1 MB, +61%-3.4x above 1 MB",
   "AR 2xNDv2 (spec 5.1 #15-16): up to +28% at <= 1 MB, +28%-2.7x above 1 MB"},
  {"2xDGX-2", "dgx2", 1, {"sk1-dgx2-n2", "sk2-dgx2-n2", NULL, NULL}, {"dgx2-sk-1", "dgx2-sk-2", NULL, NULL},
   {2 * MiB, KiB, 0, 0}, "AG 2xDGX-2 (spec 5.1 #1-3): 4.9x-6.7x at 1 KB-1 MB, +10%-3.8x at 2-64 MB, +20-25% at 256 MB-1 GB",
   "AR 2xDGX-2 (spec 5.1 #12-14): +49%-6.4x at 1 KB-4 MB, +2-37% at 16-256 MB, up to 9% slower at >= 512 MB"},
};

#define MAXSZ 16
#define MAXCAND 64

typedef struct {
  double size;
  baselines b;
  double synth_us, synth_bw;   /* best candidate */
  char who[64];                /* sketch (and synthesis size when rescaled) of the best */
  double own_us[4];            /* each sketch synthesized at this size (NAN = failed / deadlock / none) */
  double synth_s[4];           /* its synthesis seconds */
} bw_row;

/* SVG: algbw (GB/s) against buffer size, log-log, four series. */
static void svg_escape(FILE *f, const char *s) {
  for (; *s; s++)
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else fputc(*s, f);
}

static int write_svg(const char *path, const char *title, const bw_row *rows, int n) {
  static const char *names[4] = {"TACCL (best sketch)", "ring (best of 1/2/4/8)", "direct", "hierarchical"};
  static const char *colors[4] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e"};
  const double W = 860, H = 520, ml = 70, mr = 230, mt = 50, mb = 60, pw = W - ml - mr, ph = H - mt - mb;
  double xlo = log10(rows[0].size), xhi = log10(rows[n - 1].size), ylo = INFINITY, yhi = -INFINITY, v;
  int s, i, k;
  char b1[32];
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, "bench_collective: %s: cannot write\n", path); return -1; }
  for (i = 0; i < n; i++) {
    double y[4] = {rows[i].synth_bw, rows[i].b.ring_bw, rows[i].b.direct_bw, rows[i].b.hier_bw};
    for (s = 0; s < 4; s++)
      if (isfinite(y[s]) && y[s] > 0) { ylo = fmin(ylo, log10(y[s])); yhi = fmax(yhi, log10(y[s])); }
  }
  if (!(ylo <= yhi)) { ylo = -1; yhi = 1; }
  ylo = floor(ylo); yhi = ceil(yhi);
  if (yhi <= ylo) yhi = ylo + 1;
  if (xhi <= xlo) xhi = xlo + 1;
#define SX(x) (ml + ((x) - xlo) / (xhi - xlo) * pw)
#define SY(y) (mt + ph - ((y) - ylo) / (yhi - ylo) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
             "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n", W, H, W, H);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">", ml + pw / 2);
  svg_escape(f, title);
  fprintf(f, "</text>\n<g stroke=\"#dddddd\" stroke-width=\"1\">\n");
  for (i = 0; i < n; i++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", SX(log10(rows[i].size)), mt, SX(log10(rows[i].size)), mt + ph);
  for (v = ylo; v <= yhi + 1e-9; v += 1) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ml, SY(v), ml + pw, SY(v));
    for (k = 2; k < 10 && v < yhi - 1e-9; k++)   /* minor ticks 2..9 of each decade */
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f2f2f2\"/>\n", ml, SY(v + log10(k)), ml + pw,
              SY(v + log10(k)));
  }
  fprintf(f, "</g>\n<g fill=\"#333333\">\n");
  for (i = 0; i < n; i++)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", SX(log10(rows[i].size)), mt + ph + 18,
            fmt_size(rows[i].size, b1, sizeof b1));
  for (v = ylo; v <= yhi + 1e-9; v += 1)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ml - 8, SY(v) + 4, pow(10, v));
  fprintf(f, "</g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333333\"/>\n", ml,
          mt, pw, ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">buffer size per rank (bytes, log scale)</text>\n",
          ml + pw / 2, H - 18);
  fprintf(f, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">algorithm bandwidth "
             "(GB/s, log scale; alpha-beta model)</text>\n", mt + ph / 2, mt + ph / 2);
  for (s = 0; s < 4; s++) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", colors[s], s == 0 ? "2.5" : "1.5");
    for (i = 0, k = 0; i < n; i++) {
      double y = s == 0 ? rows[i].synth_bw : s == 1 ? rows[i].b.ring_bw : s == 2 ? rows[i].b.direct_bw : rows[i].b.hier_bw;
      if (!(isfinite(y) && y > 0)) continue;
      fprintf(f, "%s%.1f,%.1f", k++ ? " " : "", SX(log10(rows[i].size)), SY(log10(y)));
    }
    fprintf(f, "\"/>\n");
    for (i = 0; i < n; i++) {
      double y = s == 0 ? rows[i].synth_bw : s == 1 ? rows[i].b.ring_bw : s == 2 ? rows[i].b.direct_bw : rows[i].b.hier_bw;
      if (!(isfinite(y) && y > 0)) continue;
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"><title>%s: %.3g GB/s at %s%s%s</title></circle>\n",
              SX(log10(rows[i].size)), SY(log10(y)), s == 0 ? "4" : "3", colors[s], names[s], y,
              fmt_size(rows[i].size, b1, sizeof b1), s == 0 ? ", " : "", s == 0 ? rows[i].who : "");
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>", ml + pw + 14,
            mt + 10 + 20.0 * s, ml + pw + 40, mt + 10 + 20.0 * s, colors[s]);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n", ml + pw + 27,
            mt + 10 + 20.0 * s, colors[s], ml + pw + 46, mt + 14 + 20.0 * s, names[s]);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\">simulated on the physical topology</text>\n", ml + pw + 14,
          mt + 100);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\">(thesis Table 5.1 costs)</text>\n", ml + pw + 14, mt + 116);
#undef SX
#undef SY
  fprintf(f, "</svg>\n");
  if (ferror(f) | fclose(f)) { fprintf(stderr, "bench_collective: %s: write failed\n", path); return -1; }
  return 0;
}

typedef struct {
  int entry;   /* index into the cache (which may move when it grows) */
  int sketch;
  double at;   /* the size it was synthesized for */
} candidate;

static int part_bw_one(const machine *m, int kind, int *npass, int *nfail) {
  double sizes[MAXSZ];
  int nsz = 0, nsk = 0, i, j, s;
  double step = quick ? 32 : 4, lo = KiB, hi = 1024 * MiB;
  double rtl = quick ? 5 : 20, stl = quick ? 5 : 20;
  bw_row rows[MAXSZ];
  candidate cand[MAXCAND];
  int ncand = 0, fails = 0;
  mlsys_coll_topo phys;
  char b1[32], b2[32];
  const char *kname = kind == MLSYS_COLL_ALLGATHER ? "ALLGATHER" : "ALLREDUCE";
  if (kind == MLSYS_COLL_ALLREDUCE) step = quick ? 1024 : 16;
  for (; nsz < MAXSZ && lo * pow(step, nsz) <= hi * 1.0001; nsz++) sizes[nsz] = lo * pow(step, nsz);
  while (m->sketches[nsk]) nsk++;
  if (build_phys(m->dgx2, 2, &phys)) return 1;
  printf("\n== Part 2: %s on %s (%d ranks): algorithm bandwidth simulated on the physical topology\n", kname, m->name,
         phys.nranks);
  printf("   per (sketch, size): synthesized at that size, route/sched limits %g/%g s\n", rtl, stl);
  fflush(stdout);
  /* 1. every sketch at every size */
  for (i = 0; i < nsz; i++) {
    rows[i].size = sizes[i];
    run_baselines(&phys, kind, sizes[i], &rows[i].b);
    for (s = 0; s < nsk; s++) {
      synth_entry *e = synth(m->sketches[s], m->dgx2, kind, sizes[i], rtl, stl);
      rows[i].synth_s[s] = e->stats.total_s;
      rows[i].own_us[s] = e->ok ? sim_us(&phys, &e->algo, NULL) : NAN;
      if (e->ok && ncand < MAXCAND) { cand[ncand].entry = (int)(e - cache); cand[ncand].sketch = s; cand[ncand].at = sizes[i]; ncand++; }
      if (!e->ok) fails++;
    }
  }
  /* 2. a sketch that never routed under the short limit: once at its native size class with the long limit
        (reuses the time part's result when it ran in the same process) */
  for (s = 0; s < nsk; s++) {
    int any = 0;
    for (j = 0; j < ncand; j++) any |= cand[j].sketch == s;
    if (!any && !quick) {
      int C = sketch_chunkup(m->sketches[s], m->dgx2);
      double buf = kind == MLSYS_COLL_ALLGATHER ? m->native_chunk[s] * C : m->native_chunk[s] * phys.nranks * C;
      synth_entry *e = synth(m->sketches[s], m->dgx2, kind, buf, 600, 120);
      printf("   %s found no routing within %g s at any size; synthesized once at %s with 600/120 s: %s (%.1f s)\n",
             m->sketches[s], rtl, fmt_size(buf, b1, sizeof b1), e->ok ? "ok" : e->msg, e->stats.total_s);
      if (e->ok && ncand < MAXCAND) { cand[ncand].entry = (int)(e - cache); cand[ncand].sketch = s; cand[ncand].at = buf; ncand++; }
    }
  }
  /* 3. best candidate per size (every synthesized schedule of this machine, rescaled to the size) */
  for (i = 0; i < nsz; i++) {
    rows[i].synth_us = rows[i].synth_bw = NAN;
    snprintf(rows[i].who, sizeof rows[i].who, "none");
    for (j = 0; j < ncand; j++) {
      double bw = NAN, us = sim_rescaled(&phys, &cache[cand[j].entry].algo, sizes[i], &bw);
      if (!isnan(us) && (isnan(rows[i].synth_us) || us < rows[i].synth_us * (1 - 1e-12))) {
        rows[i].synth_us = us; rows[i].synth_bw = bw;
        if (cand[j].at == sizes[i]) snprintf(rows[i].who, sizeof rows[i].who, "%s", m->sketches[cand[j].sketch]);
        else snprintf(rows[i].who, sizeof rows[i].who, "%s@%s", m->sketches[cand[j].sketch], fmt_size(cand[j].at, b1, sizeof b1));
      }
    }
  }
  /* table */
  printf("%6s %10s %10s %10s %10s | %8s %8s %8s %8s | %8s %8s  %-20s", "size", "ring_us", "direct_us", "hier_us", "synth_us",
         "ring", "direct", "hier", "synth", "vs_ring", "vs_best", "best sketch");
  for (s = 0; s < nsk; s++) printf(" %14s", m->sketches[s]);
  printf("\n%6s %10s %10s %10s %10s | %35s GB/s |\n", "", "", "", "", "", "");
  for (i = 0; i < nsz; i++) {
    const bw_row *r = &rows[i];
    double best = fmin_nan(fmin_nan(r->b.ring, r->b.direct), r->b.hier);
    printf("%6s %10.2f %10.2f %10.2f %10.2f | %8.3f %8.3f %8.3f %8.3f | %7.2fx %7.2fx  %-20s", fmt_size(r->size, b1, sizeof b1),
           r->b.ring, r->b.direct, r->b.hier, r->synth_us, r->b.ring_bw, r->b.direct_bw, r->b.hier_bw, r->synth_bw,
           r->b.ring / r->synth_us, best / r->synth_us, r->who);
    for (s = 0; s < nsk; s++) {
      char cell[32];
      if (isnan(r->own_us[s])) snprintf(cell, sizeof cell, "fail(%.0fs)", r->synth_s[s]);
      else snprintf(cell, sizeof cell, "%.1f(%.1fs)", r->own_us[s], r->synth_s[s]);
      printf(" %14s", cell);
    }
    printf("\n");
  }
  printf("(ring = best of 1/2/4/8 rings; vs_best = best baseline / synth; per-sketch columns: that sketch synthesized at\n"
         " this size, simulated us on the physical topology (synthesis seconds); fail = no schedule or a deadlock;\n"
         " sketch@size = synthesized at that size, re-simulated at this one)\n");
  printf("thesis (vs NCCL on the real machines): %s\n", kind == MLSYS_COLL_ALLGATHER ? m->thesis_ag : m->thesis_ar);
  /* requirement: never slower than the best baseline */
  {
    int bad = 0;
    for (i = 0; i < nsz; i++) {
      const bw_row *r = &rows[i];
      double best = fmin_nan(fmin_nan(r->b.ring, r->b.direct), r->b.hier);
      const char *bn = best == r->b.ring ? "ring" : best == r->b.direct ? "direct" : "hierarchical";
      if (isnan(r->synth_us) || r->synth_us > best * (1 + 1e-9)) {
        bad++;
        printf("  FAIL at %s: synthesized %.2f us (%s) > %s %.2f us (%.1f%% slower)\n", fmt_size(r->size, b2, sizeof b2),
               r->synth_us, r->who, bn, best, 100 * (r->synth_us / best - 1));
      }
    }
    if (bad) { printf("%s %s: FAIL — synthesized slower than the best baseline at %d of %d sizes\n", kname, m->name, bad, nsz); (*nfail)++; }
    else { printf("%s %s: PASS — synthesized never slower than the best baseline (%d sizes)\n", kname, m->name, nsz); (*npass)++; }
    /* the stricter reading: only schedules synthesized at that very size (no rescaled candidates) */
    bad = 0;
    for (i = 0; i < nsz; i++) {
      const bw_row *r = &rows[i];
      double best = fmin_nan(fmin_nan(r->b.ring, r->b.direct), r->b.hier), own = NAN;
      for (s = 0; s < nsk; s++) own = fmin_nan(own, r->own_us[s]);
      if (isnan(own) || own > best * (1 + 1e-9)) {
        bad++;
        printf("  (synthesized at this size only) slower at %s: %.2f us > best baseline %.2f us\n",
               fmt_size(r->size, b2, sizeof b2), own, best);
      }
    }
    printf("  synthesized at each size only (no rescaled candidates): %s (%d of %d sizes slower)\n", bad ? "FAIL" : "PASS",
           bad, nsz);
  }
  if (fails) printf("(%d of %d (sketch, size) syntheses failed under the short limit)\n", fails, nsz * nsk);
  {
    char path[512], title[128];
    snprintf(path, sizeof path, "%s/collective_%s_%s.svg", plot_dir, kind == MLSYS_COLL_ALLGATHER ? "allgather" : "allreduce", m->tag);
    snprintf(title, sizeof title, "%s on %s: algorithm bandwidth against buffer size", kname, m->name);
    if (write_svg(path, title, rows, nsz) == 0) printf("plot: %s\n", path);
  }
  mlsys_coll_topo_free(&phys);
  fflush(stdout);
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   Part 3: which MILP backend proves the routing and scheduling models first (ARCHITECTURE 22)
   Every committed sketch (and the A2A cases of part 1), each MILP once with lp_solve and once with CBC under the
   same limit, on the same model: routing from scratch (the warm start and the lower bound as in the library, which
   prove many instances before any solver runs: "at once" below), then stage 2 on the CBC routing and stage 3 from
   that same order with each backend. Wall seconds and the solving thread's CPU seconds (the box is shared, so CPU
   seconds are the fairer comparison), status and gap.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  const char *file;
  int dgx2, kind;
  double buffer;   /* per-rank input (AG, A2A) */
} solver_case;
static const solver_case solver_cases[] = {
  {"sk1-ndv2-n1", 0, MLSYS_COLL_ALLGATHER, MiB},
  {"sk-ndv2-n1-cUp6", 0, MLSYS_COLL_ALLGATHER, MiB},
  {"sk1-ndv2-n2", 0, MLSYS_COLL_ALLGATHER, MiB},
  {"sk2-ndv2-n2", 0, MLSYS_COLL_ALLGATHER, KiB},
  {"sk3-ndv2-n2", 0, MLSYS_COLL_ALLGATHER, MiB},
  {"sk1-ndv2-n4", 0, MLSYS_COLL_ALLGATHER, MiB},
  {"sk2-ndv2-n4", 0, MLSYS_COLL_ALLGATHER, KiB},
  {"sk1-dgx2-n1", 0 + 1, MLSYS_COLL_ALLGATHER, MiB},
  {"sk-dgx2-n1", 1, MLSYS_COLL_ALLGATHER, MiB},
  {"sk2-dgx2-n2", 1, MLSYS_COLL_ALLGATHER, KiB},
  {"sk1-dgx2-n2", 1, MLSYS_COLL_ALLGATHER, 4 * MiB},
  {"sk1-ndv2-n2", 0, MLSYS_COLL_ALLTOALL, 16 * MiB},
  {"sk2-ndv2-n2", 0, MLSYS_COLL_ALLTOALL, 16 * KiB},
  {"sk2-dgx2-n2", 1, MLSYS_COLL_ALLTOALL, 32 * KiB},
};
#define NSOLVER ((int)(sizeof solver_cases / sizeof solver_cases[0]))

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void solver_cell(const mlsys_coll_stats *st, int route, mlsys_status s, double wall, double cpu) {
  int status = route ? st->route_status : st->sched_status;
  double gap = route ? st->route_gap : st->sched_gap;
  if (s != MLSYS_OK) printf(" | %-9s %7.2f %7.2f %7s", s == MLSYS_ERR_TIMEOUT ? "nothing" : "error", wall, cpu, "-");
  else printf(" | %-9s %7.2f %7.2f %7.3g", mlsys_milp_status_str((mlsys_milp_status)status), wall, cpu, gap);
}

static int part_solvers(void) {
  static const int backends[3] = {MLSYS_SOLVER_LPSOLVE, MLSYS_SOLVER_CBC, MLSYS_SOLVER_DEFAULT};
  double tl = quick ? QUICK_TL : 60;
  int i, b;
  char b1[32];
  if (!mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) {
    printf("\n== Part 3: skipped (this build has no CBC; make CBC=1)\n");
    return 0;
  }
  printf("\n== Part 3: MILP backends: lp_solve, CBC and the library's default (lp_solve for up to %g CPU s, then CBC\n"
         "   for the rest of the limit), same models, %g s limit per MILP\n", MLSYS__COLL_LPS_CPU_S, tl);
  printf("%-16s %-4s %-5s %2s %11s | %-33s | %-33s | %-33s | %5s | %-33s | %-33s | %-33s\n", "sketch", "coll", "buf", "C",
         "route bins", "route lp_solve: status wall cpu gap", "route CBC: status wall cpu gap", "route default", "sbins",
         "sched lp_solve", "sched CBC", "sched default");
  for (i = 0; i < NSOLVER; i++) {
    const solver_case *c = &solver_cases[i];
    mlsys_coll_sketch sk;
    mlsys_coll_topo phys, lt;
    mlsys_coll_def d;
    mlsys_coll_algo a[3], ord;
    mlsys_coll_stats st[3], ss[3];
    mlsys_status rs[3], ssr[3];
    double rw[3], rc[3], sw[3], sc[3], chunk;
    int N, C, have = -1;
    char bins[32];
    if (load_sketch(c->file, c->dgx2 ? 16 : 8, &sk)) return 1;
    if (build_phys(c->dgx2, sk.nnodes > 0 ? sk.nnodes : 1, &phys)) { mlsys_coll_sketch_free(&sk); return 1; }
    N = phys.nranks;
    C = sk.chunkup > 0 ? sk.chunkup : 1;
    chunk = c->kind == MLSYS_COLL_ALLGATHER ? c->buffer / C : c->buffer / ((double)N * C);
    sk.route_time_limit = sk.sched_time_limit = tl;
    if (mlsys_coll_logical_topo(&phys, &sk, chunk, &lt) || mlsys_coll_def_make(c->kind, N, C, &d)) {
      fprintf(stderr, "bench_collective: %s: %s\n", c->file, mlsys_last_error());
      mlsys_coll_sketch_free(&sk); mlsys_coll_topo_free(&phys);
      return 1;
    }
    for (b = 0; b < 3; b++) {
      double w0, c0;
      sk.backend = backends[b];
      memset(&st[b], 0, sizeof st[b]);
      w0 = mlsys_now(); c0 = thread_cpu_s();
      rs[b] = mlsys_coll_route(&lt, &sk, &d, chunk, &a[b], &st[b]);
      rw[b] = mlsys_now() - w0; rc[b] = thread_cpu_s() - c0;
      if (rs[b] == MLSYS_OK && b < 2) have = b;
    }
    snprintf(bins, sizeof bins, "%d(%d)", st[1].route_bins, st[1].route_bins_unsym);
    printf("%-16s %-4s %-5s %2d %11s", c->file, c->kind == MLSYS_COLL_ALLGATHER ? "AG" : "A2A",
           fmt_size(c->buffer, b1, sizeof b1), C, bins);
    for (b = 0; b < 3; b++) solver_cell(&st[b], 1, rs[b], rw[b], rc[b]);
    /* stage 3 on one routing and one order (CBC's routing when it has one, else lp_solve's), each backend from the
       same start */
    if (have >= 0 && mlsys_coll_order(&lt, &sk, &d, &a[have]) == MLSYS_OK) {
      for (b = 0; b < 3; b++) {
        double w0, c0;
        sk.backend = backends[b];
        memset(&ss[b], 0, sizeof ss[b]);
        if (mlsys_coll_algo_copy(&a[have], &ord)) return 1;
        w0 = mlsys_now(); c0 = thread_cpu_s();
        ssr[b] = mlsys_coll_schedule(&lt, &sk, &d, &ord, &ss[b]);
        sw[b] = mlsys_now() - w0; sc[b] = thread_cpu_s() - c0;
        mlsys_coll_algo_free(&ord);
      }
      printf(" | %5d", ss[1].sched_bins);
      for (b = 0; b < 3; b++) solver_cell(&ss[b], 0, ssr[b], sw[b], sc[b]);
    } else {
      printf(" | no routing to schedule");
    }
    printf("\n");
    fflush(stdout);
    for (b = 0; b < 3; b++) if (rs[b] == MLSYS_OK) mlsys_coll_algo_free(&a[b]);
    mlsys_coll_def_free(&d);
    mlsys_coll_topo_free(&lt);
    mlsys_coll_topo_free(&phys);
    mlsys_coll_sketch_free(&sk);
  }
  printf("(bins = routing binaries after (before) the symmetry substitution; sbins = stage-3 binaries; status\n"
         " \"optimal\" = proven (for routing possibly at once, by the warm start meeting the lower bound: wall ~0);\n"
         " \"feasible\" = stopped at the limit with an incumbent; wall / cpu = seconds of the solve; gap = relative gap)\n");
  return 0;
}

int main(int argc, char **argv) {
  int do_time = 1, do_bw = 1, do_ar = 0, do_solvers = 0, i, npass = 0, nfail = 0, rc = 0;
  double t0;
  if (argc == 1) quick = 1;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "time")) { do_time = 1; do_bw = 0; }
    else if (!strcmp(argv[i], "bw")) { do_time = 0; do_bw = 1; }
    else if (!strcmp(argv[i], "solvers")) { do_time = do_bw = 0; do_solvers = 1; }
    else if (!strcmp(argv[i], "all")) { do_time = do_bw = 1; }
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--ar")) do_ar = 1;
    else if (!strcmp(argv[i], "--plots") && i + 1 < argc) plot_dir = argv[++i];
    else if (!strcmp(argv[i], "--sketches") && i + 1 < argc) sketch_dir = argv[++i];
    else {
      fprintf(stderr, "usage: %s [time|bw|solvers|all] [--quick] [--ar] [--plots DIR] [--sketches DIR]\n"
                      "  (no arguments: all --quick)\n", argv[0]);
      return 2;
    }
  }
  if (!plot_dir) plot_dir = quick ? "build" : "bench/plots";
  t0 = mlsys_now();
  print_machine();
  if (do_time) rc |= part_time();
  if (do_solvers) rc |= part_solvers();
  if (do_bw) {
    for (i = 0; i < 2; i++) rc |= part_bw_one(&machines[i], MLSYS_COLL_ALLGATHER, &npass, &nfail);
    if (do_ar)
      for (i = 0; i < 2; i++) rc |= part_bw_one(&machines[i], MLSYS_COLL_ALLREDUCE, &npass, &nfail);
    printf("\nrequirement \"synthesized never slower than the best baseline\": %d PASS, %d FAIL\n", npass, nfail);
  }
  for (i = 0; i < ncache; i++) mlsys_coll_algo_free(&cache[i].algo);
  free(cache);
  printf("bench_collective: %.1f s wall\n", mlsys_now() - t0);
  return rc;
}
