/* examples/remat_cnn.c — rematerialization schedules executed on real tensors: a small CNN's training step.

   Loads the training graph of a small CNN exported from PyTorch (tests/data/graphs/smallcnn_b8.json: conv, ReLU,
   max-pool twice, two linear layers, softmax cross-entropy, and the backward of each), binds its nodes to the
   plain-C layers of examples/remat_cnn_layers.h, and runs the training step under different schedules with
   mlsys_remat_execute: keep everything (checkpoint-all), then every method at budgets between the smallest
   feasible one and the checkpoint-all peak. For each run it prints the simulator's predicted activation peak,
   the peak its allocator measured, the recomputations, the cost overhead and the wall time, and whether the
   parameter gradients equal, bit for bit, those of a straight-line implementation of the same step (they must:
   recomputing a deterministic kernel on identical inputs gives identical bytes). Exits 1 on any mismatch.

   build: make build/examples/remat_cnn
   run:   ./build/examples/remat_cnn [--graph FILE] [--time-limit S] [--seed N] [--dump FILE] [--plan FILE]
                                     [--method monet]
          --dump writes the weights, input, labels, loss and gradients for tools/check_smallcnn_grads.py (PyTorch);
          --plan writes the execution plan of the tightest MILP schedule;
          --method monet runs MONeT plans instead (mlsys_remat_monet_execute with the alternative kernels of
          examples/remat_cnn_impls.h, through examples/remat_cnn_monet.h), each beside the Checkmate MILP at the
          same budget: cost, simulated and measured peak, gradients against the reference. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_remat.h"
#include "examples/remat_cnn_monet.h"

#include <stdlib.h>

typedef struct {
  const mlsys_remat_graph *g;
  cnn_model *m;
  const float *ref_grads;
  float ref_loss;
  int failures;
} ctx;

/* Execute schedule s (plan flags 0: the simulator's accounting) with a counting allocator and an optional live-byte
   limit; fill the executor's stats and the allocator's count. Returns the executor's status. */
static mlsys_status run_schedule(ctx *c, const mlsys_remat_schedule *s, uint64_t limit, mlsys_remat_exec_stats *st,
                                 cnn_counting *count, uint64_t *sim_peak, int *grads_equal) {
  mlsys_remat_plan p;
  mlsys_remat_sim rep;
  mlsys_remat_allocator A;
  mlsys_remat_exec_opts o;
  mlsys_status rc;
  if ((rc = mlsys_remat_simulate(c->g, s->R, s->S, MLSYS_REMAT_SIM_MILP, &rep, NULL)) != MLSYS_OK) return rc;
  *sim_peak = rep.peak;
  if ((rc = mlsys_remat_plan_build(c->g, s, 0, &p)) != MLSYS_OK) return rc;
  memset(count, 0, sizeof *count);
  A.alloc = cnn_counting_alloc;
  A.release = cnn_counting_release;
  A.ud = count;
  memset(&o, 0, sizeof o);
  o.allocator = &A;
  o.limit = limit;
  memset(c->m->grads, 0xff, c->m->nparams * sizeof(float));   /* NaN: every gradient must be written by this run */
  c->m->loss = NAN;
  rc = mlsys_remat_execute(c->g, &p, cnn_kernel, c->m, &o, st);
  *grads_equal = rc == MLSYS_OK && !memcmp(c->m->grads, c->ref_grads, c->m->nparams * sizeof(float)) &&
                 !memcmp(&c->m->loss, &c->ref_loss, sizeof(float));
  mlsys_remat_plan_free(&p);
  return rc;
}

static void fmt_bytes(char *buf, size_t len, uint64_t b) { snprintf(buf, len, "%.1f KiB", (double)b / 1024.0); }

/* One row: solve (unless s is given), execute, check, print. */
static void row(ctx *c, const char *budget_label, uint64_t budget, const mlsys_remat_schedule *s) {
  mlsys_remat_exec_stats st;
  cnn_counting count;
  uint64_t sim = 0;
  int eq = 0, ok;
  char b1[32], b2[32];
  mlsys_status rc = run_schedule(c, s, 0, &st, &count, &sim, &eq);
  ok = rc == MLSYS_OK && eq && count.peak == sim && st.peak_bytes == sim && st.plan_peak == sim &&
       count.live == 0 && sim + mlsys_remat_fixed_total(c->g) <= budget;
  fmt_bytes(b1, sizeof b1, sim);
  fmt_bytes(b2, sizeof b2, count.peak);
  printf("  %-14s %-22s %11s %11s %6ld %9.4fx %8.2f s %7.2f ms  %s\n", budget_label, s->method, b1, b2, st.recomputes,
         s->cost / s->baseline_cost, s->solve_seconds, st.seconds * 1e3,
         rc != MLSYS_OK ? "ERROR" : eq ? "identical" : "DIFFER");
  if (rc != MLSYS_OK) printf("      %s\n", mlsys_last_error());
  if (!ok) {
    printf("      MISMATCH: simulated %llu, allocator %llu, executor %llu, plan %llu, left live %llu, budget %llu\n",
           (unsigned long long)sim, (unsigned long long)count.peak, (unsigned long long)st.peak_bytes,
           (unsigned long long)st.plan_peak, (unsigned long long)count.live, (unsigned long long)budget);
    c->failures++;
  }
}

static mlsys_status dump(const char *path, const cnn_model *m) {
  FILE *f = fopen(path, "wb");
  int32_t hdr[4];
  if (!f) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write", path);
  hdr[0] = 0x4e4e4353;   /* "SCNN" */
  hdr[1] = m->batch;
  hdr[2] = m->classes;
  hdr[3] = (int32_t)m->nparams;
  fwrite(hdr, sizeof hdr, 1, f);
  fwrite(m->params, sizeof(float), m->nparams, f);
  fwrite(m->input, sizeof(float), (size_t)m->batch * 3 * 32 * 32, f);
  fwrite(m->labels, sizeof(int64_t), (size_t)m->batch, f);
  fwrite(&m->loss, sizeof(float), 1, f);
  fwrite(m->grads, sizeof(float), m->nparams, f);
  if (fclose(f) != 0) return mlsys_set_error(MLSYS_ERR_IO, "%s: write failed", path);
  return MLSYS_OK;
}

/* --method monet: MONeT (all modes, the kernels' own catalogue) and the Checkmate MILP at the same budgets, each
   MONeT plan executed on real tensors. Activation bytes are shown on top of the fixed memory, as above. */
static void monet_rows(ctx *c, uint64_t fixed, uint64_t act_all, double baseline, double time_limit) {
  static const double frac[7] = {-1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5};
  mlsys_remat_monet_override ovr[4];
  mlsys_remat_monet_impl impl[8];
  mlsys_remat_monet_catalogue cat;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_opts mo;
  int i;
  memset(&cat, 0, sizeof cat);
  cat.mode = MLSYS_REMAT_MONET_ALL;
  cat.noverride = cnn_monet_overrides(c->m, c->g, 0, ovr, impl);
  cat.override_impl = ovr;
  if (mlsys_remat_monet_graph_build(c->g, &cat, &sg) != MLSYS_OK) {
    printf("monet: %s\n", mlsys_last_error());
    c->failures++;
    return;
  }
  memset(&mo, 0, sizeof mo);
  mo.time_limit = time_limit;
  printf("  MONeT (conv/linear algorithms, ReLU input/output/mask, max-pool 8-bit argmax, in-place ReLU) beside the "
         "Checkmate MILP;\n  cost = x the checkpoint-all cost, peaks in KiB of activations (+ workspace) on top "
         "of the fixed memory\n");
  printf("  %-14s %10s %10s | %10s %10s %10s %6s  %s\n", "budget", "ckmt cost", "ckmt peak", "monet cost",
         "sim. peak", "measured", "recomp", "gradients vs reference");
  for (i = 0; i < 7; i++) {
    uint64_t B = frac[i] < 0 ? UINT64_MAX / 4 : fixed + (uint64_t)(frac[i] * (double)act_all);
    char lab[32], ck[2][32] = {"-", "infeasible"};
    mlsys_remat_schedule cs;
    mlsys_remat_monet_schedule ms;
    mlsys_remat_opts o;
    if (frac[i] < 0) snprintf(lab, sizeof lab, "unlimited");
    else snprintf(lab, sizeof lab, "%.1f (%.0f%%)", (B - fixed) / 1024.0, frac[i] * 100);
    memset(&o, 0, sizeof o);
    o.method = MLSYS_REMAT_MILP;
    o.time_limit = time_limit;
    if (mlsys_remat_solve(c->g, B, &o, &cs) == MLSYS_OK) {
      snprintf(ck[0], sizeof ck[0], "%.4fx", cs.cost / baseline);
      snprintf(ck[1], sizeof ck[1], "%.1f", cs.peak / 1024.0);
    }
    mlsys_remat_schedule_free(&cs);
    if (mlsys_remat_monet_solve(&sg, B, &mo, &ms) != MLSYS_OK) {
      printf("  %-14s %10s %10s | no MONeT schedule: %s\n", lab, ck[0], ck[1], mlsys_last_error());
      continue;
    }
    {
      mlsys_remat_monet_plan p;
      mlsys_remat_exec_stats st;
      cnn_counting count;
      mlsys_remat_allocator A = {cnn_counting_alloc, cnn_counting_release, NULL};
      mlsys_remat_exec_opts eo;
      cnn_monet x;
      mlsys_status rc;
      int eq;
      memset(&count, 0, sizeof count);
      A.ud = &count;
      memset(&eo, 0, sizeof eo);
      eo.allocator = &A;
      memset(c->m->grads, 0xff, c->m->nparams * sizeof(float));
      c->m->loss = NAN;
      rc = mlsys_remat_monet_plan_build(c->g, &sg, &ms, &p);
      if (rc == MLSYS_OK && (rc = cnn_monet_bind(&x, c->m, c->g, &sg)) == MLSYS_OK) {
        rc = mlsys_remat_monet_execute(c->g, &sg, &p, cnn_monet_kernel, &x, &eo, &st);
        cnn_monet_free(&x);
      }
      eq = rc == MLSYS_OK && !memcmp(c->m->grads, c->ref_grads, c->m->nparams * sizeof(float)) &&
           !memcmp(&c->m->loss, &c->ref_loss, sizeof(float));
      printf("  %-14s %10s %10s | %9.4fx %10.1f %10.1f %6ld  %s\n", lab, ck[0], ck[1], ms.cost / baseline,
             (ms.peak - sg.fixed) / 1024.0, rc == MLSYS_OK ? st.peak_bytes / 1024.0 : 0.0,
             rc == MLSYS_OK ? st.recomputes : 0, rc != MLSYS_OK ? "ERROR" : eq ? "identical" : "DIFFER");
      if (rc != MLSYS_OK) printf("      %s\n", mlsys_last_error());
      if (rc != MLSYS_OK || !eq || st.peak_bytes + sg.fixed != ms.peak || count.peak != st.peak_bytes ||
          ms.peak > B) {
        printf("      MISMATCH: simulated %llu, executor %llu + fixed %llu, allocator %llu, budget %llu\n",
               (unsigned long long)ms.peak, (unsigned long long)st.peak_bytes, (unsigned long long)sg.fixed,
               (unsigned long long)count.peak, (unsigned long long)B);
        c->failures++;
      }
      mlsys_remat_monet_plan_free(&p);
    }
    mlsys_remat_monet_schedule_free(&ms);
  }
  mlsys_remat_monet_graph_free(&sg);
}

int main(int argc, char **argv) {
  const char *graph_path = "tests/data/graphs/smallcnn_b8.json", *dump_path = NULL, *plan_path = NULL;
  double time_limit = 20;
  uint64_t seed = 1, fixed, min_budget = 0, act_all, budgets[8];
  const char *labels[8];
  char lbuf[8][32], b1[32];
  int i, nb = 0, proven = 0, m_i, monet = 0;
  mlsys_remat_graph g;
  mlsys_remat_schedule all, tight;
  mlsys_remat_opts o;
  cnn_model model;
  float *ref_grads;
  ctx c;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--graph") && i + 1 < argc) graph_path = argv[++i];
    else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) time_limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_path = argv[++i];
    else if (!strcmp(argv[i], "--plan") && i + 1 < argc) plan_path = argv[++i];
    else if (!strcmp(argv[i], "--method") && i + 1 < argc && !strcmp(argv[i + 1], "monet")) { monet = 1; i++; }
    else {
      fprintf(stderr, "usage: %s [--graph FILE] [--time-limit S] [--seed N] [--dump FILE] [--plan FILE] "
              "[--method monet]\n", argv[0]);
      return 2;
    }
  }
  if (mlsys_remat_graph_load(graph_path, &g) != MLSYS_OK) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
  if (cnn_model_init(&model, g.batch ? g.batch : 8, seed) != MLSYS_OK || cnn_bind(&model, &g) != MLSYS_OK) {
    fprintf(stderr, "%s: %s\n", graph_path, mlsys_last_error());
    return 1;
  }
  fixed = mlsys_remat_fixed_total(&g);

  /* the answer: the step written out layer by layer */
  if (cnn_reference_step(&model) != MLSYS_OK || !(ref_grads = (float *)malloc(model.nparams * sizeof(float)))) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  memcpy(ref_grads, model.grads, model.nparams * sizeof(float));
  printf("smallcnn, batch %d: %d graph nodes, %zu parameters, loss %.6f (straight-line reference step)\n",
         model.batch, g.dag.n, model.nparams, model.loss);
  if (dump_path) {
    if (dump(dump_path, &model) != MLSYS_OK) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
    printf("weights, input, labels, loss and gradients written to %s (check: tools/check_smallcnn_grads.py %s)\n",
           dump_path, dump_path);
  }
  c.g = &g;
  c.m = &model;
  c.ref_grads = ref_grads;
  c.ref_loss = model.loss;
  c.failures = 0;

  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  if (mlsys_remat_solve(&g, UINT64_MAX, &o, &all) != MLSYS_OK) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
  act_all = all.peak;
  memset(&o, 0, sizeof o);
  o.time_limit = time_limit;
  if (mlsys_remat_min_budget(&g, &o, &min_budget, &proven, &tight) != MLSYS_OK) {
    fprintf(stderr, "min budget: %s\n", mlsys_last_error());
    return 1;
  }
  mlsys_remat_schedule_free(&tight);
  fmt_bytes(b1, sizeof b1, fixed);
  printf("fixed memory (parameters, gradients, input, labels) %s; activations: checkpoint-all peak %.1f KiB, "
         "smallest feasible %.1f KiB (%s)\n\n", b1, act_all / 1024.0, (min_budget - fixed) / 1024.0,
         proven ? "proven by the MILP" : "not proven");

  if (monet) {
    monet_rows(&c, fixed, act_all, all.baseline_cost, time_limit);
    printf("%s\n", c.failures ? "FAILED: see MISMATCH lines above" : "all MONeT runs: gradients bit-identical to the "
           "reference, measured peak = simulated (eager) peak <= budget");
    mlsys_remat_schedule_free(&all);
    cnn_model_free(&model);
    free(ref_grads);
    mlsys_remat_graph_free(&g);
    return c.failures ? 1 : 0;
  }
  printf("  budget: KiB of activations (%% of the checkpoint-all peak) on top of the fixed memory\n");
  printf("  %-14s %-22s %11s %11s %6s %10s %10s %10s  %s\n", "budget", "method", "sim. peak", "measured", "recomp",
         "overhead", "solve", "execute", "gradients vs reference");
  row(&c, "unlimited", UINT64_MAX, &all);

  /* the baselines' own lowest-memory schedules: none fits below the checkpoint-all peak on this network, but they
     recompute, so they exercise the executor too */
  for (m_i = MLSYS_REMAT_CHEN_SQRTN; m_i < MLSYS_REMAT_METHOD_COUNT; m_i++) {
    mlsys_remat_schedule s;
    memset(&o, 0, sizeof o);
    o.method = (mlsys_remat_method)m_i;
    mlsys_remat_solve(&g, min_budget, &o, &s);
    if (s.n > 0) row(&c, "unlimited", UINT64_MAX, &s);
    mlsys_remat_schedule_free(&s);
  }

  /* budgets: the usual fractions of the checkpoint-all activation peak, then a grid down to the smallest */
  {
    static const double frac[3] = {0.9, 0.7, 0.5};
    static const double grid[4] = {0.75, 0.5, 0.25, 0};
    for (i = 0; i < 3; i++) {
      uint64_t B = fixed + (uint64_t)(frac[i] * (double)act_all);
      if (B < min_budget) {
        printf("  %.0f%% (%.1f KiB + fixed): below the smallest feasible budget, no schedule exists\n", frac[i] * 100,
               (B - fixed) / 1024.0);
        continue;
      }
      snprintf(lbuf[nb], sizeof lbuf[nb], "%.1f (%.0f%%)", (B - fixed) / 1024.0, frac[i] * 100);
      labels[nb] = lbuf[nb];
      budgets[nb++] = B;
    }
    for (i = 0; i < 4; i++) {
      uint64_t B = min_budget + (uint64_t)(grid[i] * (double)(fixed + act_all - min_budget));
      snprintf(lbuf[nb], sizeof lbuf[nb], "%.1f (%.0f%%)", (B - fixed) / 1024.0,
               100.0 * (double)(B - fixed) / (double)act_all);
      labels[nb] = lbuf[nb];
      budgets[nb++] = B;
    }
  }
  for (i = 0; i < nb; i++) {
    char none[512] = "";
    for (m_i = 0; m_i < MLSYS_REMAT_METHOD_COUNT; m_i++) {
      mlsys_remat_schedule s;
      memset(&o, 0, sizeof o);
      o.method = (mlsys_remat_method)m_i;
      o.time_limit = time_limit;
      if (mlsys_remat_solve(&g, budgets[i], &o, &s) == MLSYS_OK) {
        row(&c, labels[i], budgets[i], &s);
        if (plan_path && i == nb - 1 && m_i == MLSYS_REMAT_MILP) {
          mlsys_remat_plan p;
          FILE *f = fopen(plan_path, "w");
          if (f && mlsys_remat_plan_build(&g, &s, 0, &p) == MLSYS_OK) {
            mlsys_remat_plan_write(&g, &p, f);
            mlsys_remat_plan_free(&p);
          }
          if (f) fclose(f);
        }
      } else {
        size_t k = strlen(none);
        snprintf(none + k, sizeof none - k, "%s%s", k ? ", " : "", mlsys_remat_method_name((mlsys_remat_method)m_i));
      }
      mlsys_remat_schedule_free(&s);
    }
    if (none[0]) printf("  %-14s no schedule within the budget: %s\n", labels[i], none);
  }

  /* the budget enforced: checkpoint-all in a pool of the smallest feasible budget's activation bytes */
  {
    mlsys_remat_exec_stats st;
    cnn_counting count;
    uint64_t sim;
    int eq;
    mlsys_status rc = run_schedule(&c, &all, min_budget - fixed, &st, &count, &sim, &eq);
    printf("\ncheckpoint-all with live activations limited to %.1f KiB: %s\n  (%s; %llu bytes left live after "
           "the executor cleaned up)\n", (min_budget - fixed) / 1024.0,
           rc == MLSYS_ERR_NOMEM ? "refused, as it must be" : "NOT refused", mlsys_last_error(),
           (unsigned long long)count.live);
    if (rc != MLSYS_ERR_NOMEM || count.live != 0) c.failures++;
  }
  printf("%s\n", c.failures ? "FAILED: see MISMATCH lines above" : "all runs: gradients bit-identical to the "
         "reference, measured peak = simulated peak <= budget");
  mlsys_remat_schedule_free(&all);
  cnn_model_free(&model);
  free(ref_grads);
  mlsys_remat_graph_free(&g);
  return c.failures ? 1 : 0;
}
