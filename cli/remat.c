/* cli/remat.c — `mlsys remat`: Checkmate rematerialization from the shell. */
#include "mlsys_remat.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *remat_help =
    "usage: mlsys remat <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  solve       --graph FILE --budget SIZE [--method M] [--time-limit S] [--solver lpsolve|cbc] [--gap REL]\n"
    "              [--json] [--plan] [--dump-model FILE.lp|.mps] [--progress]\n"
    "              [--coarsen auto|on|off] [--monet-mode conv,outact,intermediate,inplace,split|all|none]\n"
    "              [--no-recompute]\n"
    "              Find a schedule whose peak memory (activations + fixed) fits SIZE.\n"
    "  info        --graph FILE [--json]        sizes, checkpoint-all peak, lower bound, MILP size\n"
    "  min-budget  --graph FILE [--time-limit S] [--json]   the smallest budget any schedule fits in\n"
    "  convert     --graph FILE --to json|text [--out FILE]\n"
    "  sweep       --graph FILE [--methods M,...] [--points N] [--svg OUT]   overhead against budget\n"
    "  max-batch   --graph FILE --memory SIZE [--methods M,...]   the largest batch each method fits\n"
    "  import-dtr  --trace FILE [--out FILE] [--to json|text]     a DTR operator trace as a graph\n"
    "  calibrate   --graph G --out G2 [--reps N] [--batch B] [--json]   time our C kernels per node, write impls\n"
    "  (mlsys remat <verb> --help lists every option of sweep, max-batch, import-dtr and calibrate)\n"
    "\n"
    "FILE is a graph in the mlsys-remat-graph JSON form or the text form (see mlsys_remat.h); '-' reads stdin.\n"
    "SIZE is bytes with an optional unit (123456, 64MiB, 1.5GB, 2GiB), fixed memory included, or P% meaning\n"
    "the fixed memory plus P% of the checkpoint-all activation peak (80%).\n"
    "Methods: milp (Checkmate MILP, default), lp (LP relaxation + two-phase rounding), checkpoint-all,\n"
    "chen (sqrt(n) segments), chen-greedy, griewank (revolve), ap-sqrtn, ap-greedy, lin-greedy, or all;\n"
    "monet (MONeT's staged ILP with its operator catalogue: conv/linear algorithms, ReLU/MaxPool backward\n"
    "variants, in-place ReLU) and monet-noop (the same ILP, checkpointing only); not part of 'all'.\n"
    "--monet-mode (with --method monet, default all) picks MONeT's families for the ablations of the thesis's\n"
    "Fig. 4.5: a comma list of conv, outact, intermediate, inplace, split (param-grad/input-grad conv backward,\n"
    "not in all), or all, or none (NoOp). A mode without conv is solved without it, then post-optimised greedily\n"
    "to the fastest conv/linear algorithms that still fit (mlsys_remat_monet_post_fastest_conv).\n"
    "--no-recompute (monet, monet-noop) is the reference code's --ablation: no checkpointing at all, every\n"
    "in-place-capable ReLU in place; only the operator choices remain (\"no_recompute\": true in the JSON).\n"
    "--time-limit bounds each method (default 60 s). --solver picks the MILP/LP backend: by default\n"
    "MILPs of up to 40 nodes run on lp_solve, larger ones on CBC, and LP relaxations on Clp (when compiled in).\n"
    "--coarsen: the LP of a graph of 120+ nodes runs on its fused form (conv-bn-relu) by default (auto)\n"
    "\n"
    "solve --json prints one object (an array for --method all) with the keys: status (optimal | feasible |\n"
    "over_budget | infeasible | timeout | error), method, schedule (the answer's label), source (the method\n"
    "that built the schedule: the MILP may answer with its warm start), milp_ran (a MILP was solved),\n"
    "compute_cost, baseline_cost, overhead\n"
    "(compute_cost / baseline_cost), peak_memory (activations + fixed, bytes), activation_peak, fixed_memory,\n"
    "budget, optimal, bound, gap (null when unknown), recomputations, solve_seconds, note, error (when not ok),\n"
    "plan (a list of {\"op\": \"compute\"|\"free\", \"node\": name, \"reg\": register}).\n"
    "For monet and monet-noop: plan steps are {op, node, stage, impl (compute), in_place}; peak_memory is the eager simulation (Alg. 4), peak_memory_ilp the ILP's\n"
    "accounting, and implementations lists per operator {\"node\", \"forward\": default | im2col+gemm (or the\n"
    "graph's impl name, e.g. im2col or packed, when the graph carries calibrated impls),\n"
    "\"in_place\"} or {\"node\", \"backward\": graph | input-activated | output-activated | mask | argmax |\n"
    "fast-algorithm}; monet_mode and post_optimised (changes made by the greedy pass) are added; a split\n"
    "backward op is two compute steps with \"half\": param-grad | input-grad.\n"
    "\n"
    "Exit codes: 0 a schedule fits the budget, 1 it does not (the message names the smallest feasible budget\n"
    "found) or the input is bad, 2 bad usage.\n";

typedef struct {
  const char *graph, *budget, *method, *time_limit, *json, *plan, *solver, *gap, *dump, *progress, *to, *out;
  const char *help, *coarsen, *monet_mode, *no_recompute;
} remat_args;

static int remat_load(const char *path, mlsys_remat_graph *g) {
  if (!path) return cli_usage_error("remat", "--graph FILE is required");
  if (mlsys_remat_graph_load(path, g) != MLSYS_OK) return cli_fail("remat", "%s", mlsys_last_error());
  return CLI_OK;
}

/* The checkpoint-all total peak: the reference for percentage budgets and for "info". */
static int remat_ckpt_all(const mlsys_remat_graph *g, mlsys_remat_schedule *s) {
  mlsys_remat_opts o;
  memset(&o, 0, sizeof o);
  o.method = MLSYS_REMAT_CHECKPOINT_ALL;
  if (mlsys_remat_solve(g, UINT64_MAX, &o, s) != MLSYS_OK) return cli_fail("remat", "%s", mlsys_last_error());
  return CLI_OK;
}

static long remat_recomputations(const mlsys_remat_schedule *s) {
  long c = 0;
  int t, i;
  for (t = 0; t < s->n; t++)
    for (i = 0; i < t; i++) c += s->R[(size_t)t * (size_t)s->n + (size_t)i];
  return c;
}

static void remat_json_num(mlsys_json_writer *w, const char *key, double v) {
  mlsys_jw_key(w, key);
  if (isnan(v) || isinf(v)) mlsys_jw_null(w);
  else mlsys_jw_double(w, v);
}

/* One result object. st is the solve status; s may be empty (n == 0). */
static void remat_json_result(mlsys_json_writer *w, const mlsys_remat_graph *g, mlsys_remat_method m,
                              mlsys_status st, const char *err, const mlsys_remat_schedule *s, uint64_t budget,
                              int with_plan) {
  const char *status;
  uint64_t fixed = mlsys_remat_fixed_total(g);
  char nb[64];
  if (st == MLSYS_OK) status = s->optimal ? "optimal" : "feasible";
  else if (st == MLSYS_ERR_INFEASIBLE) status = (m == MLSYS_REMAT_MILP || m == MLSYS_REMAT_LP_ROUND) ? "infeasible" : "over_budget";
  else if (st == MLSYS_ERR_TIMEOUT) status = "timeout";
  else status = "error";
  mlsys_jw_object(w);
  mlsys_jw_key(w, "status"); mlsys_jw_str(w, status);
  mlsys_jw_key(w, "method"); mlsys_jw_str(w, mlsys_remat_method_name(m));
  if (s->n) {
    mlsys_jw_key(w, "schedule"); mlsys_jw_str(w, s->method);
    mlsys_jw_key(w, "source"); mlsys_jw_str(w, s->source);
    mlsys_jw_key(w, "milp_ran"); mlsys_jw_bool(w, s->milp_ran);
    remat_json_num(w, "compute_cost", s->cost);
    remat_json_num(w, "baseline_cost", s->baseline_cost);
    remat_json_num(w, "overhead", s->baseline_cost > 0 ? s->cost / s->baseline_cost : 1.0);
    mlsys_jw_key(w, "peak_memory"); mlsys_jw_u64(w, s->peak_total);
    mlsys_jw_key(w, "activation_peak"); mlsys_jw_u64(w, s->peak);
  } else {
    mlsys_jw_key(w, "schedule"); mlsys_jw_null(w);
    mlsys_jw_key(w, "source"); mlsys_jw_null(w);
    mlsys_jw_key(w, "milp_ran"); mlsys_jw_bool(w, 0);
    mlsys_jw_key(w, "compute_cost"); mlsys_jw_null(w);
    remat_json_num(w, "baseline_cost", s->baseline_cost);
    mlsys_jw_key(w, "overhead"); mlsys_jw_null(w);
    mlsys_jw_key(w, "peak_memory"); mlsys_jw_null(w);
    mlsys_jw_key(w, "activation_peak"); mlsys_jw_null(w);
  }
  mlsys_jw_key(w, "fixed_memory"); mlsys_jw_u64(w, fixed);
  mlsys_jw_key(w, "budget"); mlsys_jw_u64(w, budget);
  mlsys_jw_key(w, "optimal"); mlsys_jw_bool(w, st == MLSYS_OK && s->optimal);
  remat_json_num(w, "bound", s->n ? s->bound : NAN);
  remat_json_num(w, "gap", s->n && st == MLSYS_OK ? s->gap : NAN);
  mlsys_jw_key(w, "recomputations"); mlsys_jw_i64(w, s->n ? remat_recomputations(s) : 0);
  remat_json_num(w, "solve_seconds", s->solve_seconds);
  mlsys_jw_key(w, "note"); mlsys_jw_str(w, s->solver_note);
  if (st != MLSYS_OK) { mlsys_jw_key(w, "error"); mlsys_jw_str(w, err); }
  if (with_plan && s->n && st == MLSYS_OK) {
    mlsys_remat_plan p;
    int k;
    mlsys_jw_key(w, "plan");
    mlsys_jw_array(w);
    if (mlsys_remat_plan_build(g, s, 0, &p) == MLSYS_OK) {
      for (k = 0; k < p.nops; k++) {
        mlsys_jw_object(w);
        mlsys_jw_key(w, "op"); mlsys_jw_str(w, p.ops[k].op == MLSYS_REMAT_OP_COMPUTE ? "compute" : "free");
        mlsys_jw_key(w, "node"); mlsys_jw_str(w, mlsys_remat_node_name(g, p.ops[k].node, nb, sizeof nb));
        mlsys_jw_key(w, "reg"); mlsys_jw_i64(w, p.ops[k].reg);
        mlsys_jw_end(w);
      }
      mlsys_remat_plan_free(&p);
    }
    mlsys_jw_end(w);
  }
  mlsys_jw_end(w);
}

static void remat_human_row(const mlsys_remat_graph *g, mlsys_remat_method m, mlsys_status st, const char *err,
                            const mlsys_remat_schedule *s) {
  char b1[32];
  (void)g;
  if (s->n)
    printf("%-15s %-12s %10.4fx %12s %8ld %9.2f s\n", mlsys_remat_method_name(m),
           st == MLSYS_OK ? (s->optimal ? "optimal" : "feasible")
                          : st == MLSYS_ERR_INFEASIBLE ? "over budget" : st == MLSYS_ERR_TIMEOUT ? "timeout" : "error",
           s->baseline_cost > 0 ? s->cost / s->baseline_cost : 1.0, cli_fmt_bytes(s->peak_total, b1, sizeof b1),
           remat_recomputations(s), s->solve_seconds);
  else
    printf("%-15s %-12s %11s %12s %8s %11s  %s\n", mlsys_remat_method_name(m),
           st == MLSYS_ERR_INFEASIBLE ? "infeasible" : st == MLSYS_ERR_TIMEOUT ? "timeout" : "error", "-", "-", "-", "-",
           err);
}

static const char *remat_path_name(char k) {
  switch (k) {
    case 'i': return "input-activated";
    case 'o': return "output-activated";
    case 'm': return "mask";
    case 'a': return "argmax";
    case 'c': return "fast-algorithm";
    default: return "graph";
  }
}

/* --method monet | monet-noop: MONeT's staged ILP (mlsys_remat.h section 9) */
/* Forward implementation idx of solver node v in words: the graph's own impl name when the catalogue took the
   node's "impls" (calibrated graphs: the counts agree and only conv/linear nodes have alternatives), else the
   proxy's names. */
static const char *remat_fwd_impl_name(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg, int v, int idx) {
  int src = sg->src[v];
  if (idx > 0 && src >= 0 && g->info && g->info[src].nimpl == sg->impl_off[v + 1] - sg->impl_off[v] &&
      idx < g->info[src].nimpl)
    return g->info[src].impl[idx].name;
  return idx > 0 ? "im2col+gemm" : "default";
}
/* A MONeT step's node and implementation in words. */
static void remat_monet_step_names(const mlsys_remat_graph *g, const mlsys_remat_monet_graph *sg,
                                   const mlsys_remat_monet_step *e, char *node, size_t nl, const char **impl) {
  int v = e->node, src = sg->src[v];
  char nb[64];
  if (src >= 0) snprintf(node, nl, "%s", mlsys_remat_node_name(g, src, nb, sizeof nb));
  else snprintf(node, nl, "%s.%s", mlsys_remat_node_name(g, sg->src[sg->parent[v]], nb, sizeof nb),
                sg->int_kind[v] == 'm' ? "mask" : "argmax");
  if (e->op != MLSYS_REMAT_OP_COMPUTE) *impl = NULL;
  else if (v >= sg->V) *impl = remat_path_name(sg->path_kind[sg->path_off[v - sg->V + 1] + e->impl]);
  else *impl = remat_fwd_impl_name(g, sg, v, e->impl);
}

/* --monet-mode: "all", "none" or a comma list of families; -1 when bad */
static int remat_monet_mode_parse(const char *s) {
  static const struct { const char *name; int bit; } fam[] = {
      {"conv", MLSYS_REMAT_MONET_CONV}, {"outact", MLSYS_REMAT_MONET_OUTACT},
      {"intermediate", MLSYS_REMAT_MONET_INTERMEDIATE}, {"inplace", MLSYS_REMAT_MONET_INPLACE},
      {"split", MLSYS_REMAT_MONET_SPLIT}, {"all", MLSYS_REMAT_MONET_ALL}};
  int mode = 0;
  if (!strcmp(s, "all")) return MLSYS_REMAT_MONET_ALL;
  if (!strcmp(s, "none")) return 0;
  while (*s) {
    size_t n = strcspn(s, ",");
    int found = 0;
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++)
      if (strlen(fam[k].name) == n && !strncmp(s, fam[k].name, n)) { mode |= fam[k].bit; found = 1; }
    if (!found || n == 0) return -1;
    s += n;
    if (*s == ',') { s++; if (!*s) return -1; }
  }
  return mode;
}

static int remat_monet(remat_args *a, const mlsys_remat_graph *g, uint64_t budget, const mlsys_remat_opts *co,
                       unsigned mode, int post) {
  mlsys_remat_monet_catalogue c;
  mlsys_remat_monet_graph sg;
  mlsys_remat_monet_opts o;
  mlsys_remat_monet_schedule s;
  mlsys_remat_monet_plan plan;
  mlsys_status st;
  mlsys_json_writer w;
  uint64_t fixed = mlsys_remat_fixed_total(g);
  double base = 0;
  long recomp = 0;
  char err[1024] = "", nb[64], b1[32], b2[32];
  int rc = CLI_OK, V, nchange = 0;
  char mname[96] = "";
  memset(&c, 0, sizeof c);
  c.mode = mode;
  if (mlsys_remat_monet_graph_build(g, &c, &sg) != MLSYS_OK) return cli_fail("remat solve", "%s", mlsys_last_error());
  memset(&o, 0, sizeof o);
  o.time_limit = co->time_limit;
  o.mip_gap_rel = co->mip_gap_rel;
  o.backend = co->backend;
  o.dump_model = co->dump_model;
  o.no_recompute = a->no_recompute != NULL;
  st = mlsys_remat_monet_solve(&sg, budget, &o, &s);
  if (st == MLSYS_OK && post && !(mode & MLSYS_REMAT_MONET_CONV)) {
    /* A4.4: a variant without the conv family is post-optimised to the fastest conv that fits; adding CONV only
       appends implementations and paths, so the schedule carries over to the larger graph unchanged */
    mlsys_remat_monet_graph sgc;
    c.mode = mode | MLSYS_REMAT_MONET_CONV;
    if ((st = mlsys_remat_monet_graph_build(g, &c, &sgc)) == MLSYS_OK) {
      if (sgc.V != sg.V || sgc.T != sg.T) st = mlsys_set_error(MLSYS_ERR_ARG, "conv graph differs in shape");
      if (st == MLSYS_OK) st = mlsys_remat_monet_post_fastest_conv(&sgc, budget, &s, &nchange);
      mlsys_remat_monet_graph_free(&sg);
      sg = sgc;
    }
    if (st != MLSYS_OK) mlsys_remat_monet_schedule_free(&s);
  }
  if (st != MLSYS_OK) snprintf(err, sizeof err, "%s", mlsys_last_error());
  if (mode == 0) snprintf(mname, sizeof mname, "none");
  else if (mode == MLSYS_REMAT_MONET_ALL) snprintf(mname, sizeof mname, "all");
  else
    snprintf(mname, sizeof mname, "%s%s%s%s%s", mode & MLSYS_REMAT_MONET_CONV ? "conv," : "",
             mode & MLSYS_REMAT_MONET_OUTACT ? "outact," : "", mode & MLSYS_REMAT_MONET_INTERMEDIATE ? "intermediate," : "",
             mode & MLSYS_REMAT_MONET_INPLACE ? "inplace," : "", mode & MLSYS_REMAT_MONET_SPLIT ? "split," : "");
  if (mname[0] && mname[strlen(mname) - 1] == ',') mname[strlen(mname) - 1] = 0;
  for (int v = 0; v < g->dag.n; v++) base += g->dag.cost[v];
  V = sg.V;
  if (st == MLSYS_OK)
    for (int t = 1; t < sg.T; t++)
      for (int v = 0; v < V; v++) recomp += s.R[t * V + v];
  if (a->json) {
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "status");
    mlsys_jw_str(&w, st == MLSYS_OK ? (s.optimal ? "optimal" : "feasible")
                     : st == MLSYS_ERR_INFEASIBLE ? "infeasible" : st == MLSYS_ERR_TIMEOUT ? "timeout" : "error");
    mlsys_jw_key(&w, "method"); mlsys_jw_str(&w, mode || post ? "monet" : "monet-noop");
    mlsys_jw_key(&w, "no_recompute"); mlsys_jw_bool(&w, a->no_recompute != NULL);
    if (post) {
      mlsys_jw_key(&w, "monet_mode"); mlsys_jw_str(&w, mname);
      mlsys_jw_key(&w, "post_optimised"); mlsys_jw_i64(&w, nchange);
    }
    mlsys_jw_key(&w, "schedule"); if (st == MLSYS_OK) mlsys_jw_str(&w, s.method); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "source"); if (st == MLSYS_OK) mlsys_jw_str(&w, s.method); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "milp_ran"); mlsys_jw_bool(&w, st == MLSYS_OK);
    remat_json_num(&w, "compute_cost", st == MLSYS_OK ? s.cost : NAN);
    remat_json_num(&w, "baseline_cost", base);
    remat_json_num(&w, "overhead", st == MLSYS_OK && base > 0 ? s.cost / base : NAN);
    mlsys_jw_key(&w, "peak_memory"); if (st == MLSYS_OK) mlsys_jw_u64(&w, s.peak); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "peak_memory_ilp"); if (st == MLSYS_OK) mlsys_jw_u64(&w, s.peak_sweep); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "activation_peak"); if (st == MLSYS_OK) mlsys_jw_u64(&w, s.peak - fixed); else mlsys_jw_null(&w);
    mlsys_jw_key(&w, "fixed_memory"); mlsys_jw_u64(&w, fixed);
    mlsys_jw_key(&w, "budget"); mlsys_jw_u64(&w, budget);
    mlsys_jw_key(&w, "optimal"); mlsys_jw_bool(&w, st == MLSYS_OK && s.optimal);
    remat_json_num(&w, "bound", st == MLSYS_OK ? s.bound : NAN);
    remat_json_num(&w, "gap", st == MLSYS_OK && isfinite(s.bound) && s.objective > 0 ? (s.objective - s.bound) / s.objective : NAN);
    mlsys_jw_key(&w, "recomputations"); mlsys_jw_i64(&w, recomp);
    remat_json_num(&w, "solve_seconds", st == MLSYS_OK ? s.solve_seconds : NAN);
    mlsys_jw_key(&w, "ilp_vars"); mlsys_jw_i64(&w, s.nvars);
    mlsys_jw_key(&w, "ilp_rows"); mlsys_jw_i64(&w, s.nrows);
    mlsys_jw_key(&w, "note"); mlsys_jw_str(&w, "");
    if (st != MLSYS_OK) { mlsys_jw_key(&w, "error"); mlsys_jw_str(&w, err); }
    if (st == MLSYS_OK) {
      mlsys_jw_key(&w, "implementations");
      mlsys_jw_array(&w);
      for (int v = 0; v < sg.N; v++) {
        if (sg.src[v] < 0) continue;
        mlsys_jw_object(&w);
        mlsys_jw_key(&w, "node"); mlsys_jw_str(&w, mlsys_remat_node_name(g, sg.src[v], nb, sizeof nb));
        if (v < V) {
          mlsys_jw_key(&w, "forward"); mlsys_jw_str(&w, remat_fwd_impl_name(g, &sg, v, s.F[v]));
          mlsys_jw_key(&w, "in_place"); mlsys_jw_bool(&w, s.IP[v]);
        } else {
          int t = v - V + 1;
          mlsys_jw_key(&w, "backward"); mlsys_jw_str(&w, remat_path_name(sg.path_kind[sg.path_off[t] + s.M[t]]));
        }
        mlsys_jw_end(&w);
      }
      mlsys_jw_end(&w);
      if (mlsys_remat_monet_plan_build(g, &sg, &s, &plan) == MLSYS_OK) {
        mlsys_jw_key(&w, "plan");
        mlsys_jw_array(&w);
        for (int k = 0; k < plan.nsteps; k++) {
          const mlsys_remat_monet_step *e = &plan.steps[k];
          const char *im;
          remat_monet_step_names(g, &sg, e, nb, sizeof nb, &im);
          mlsys_jw_object(&w);
          mlsys_jw_key(&w, "op"); mlsys_jw_str(&w, e->op == MLSYS_REMAT_OP_COMPUTE ? "compute" : "free");
          mlsys_jw_key(&w, "node"); mlsys_jw_str(&w, nb);
          mlsys_jw_key(&w, "stage"); mlsys_jw_i64(&w, e->stage);
          if (im) { mlsys_jw_key(&w, "impl"); mlsys_jw_str(&w, im); }
          if (e->in_place) { mlsys_jw_key(&w, "in_place"); mlsys_jw_bool(&w, 1); }
          if (e->half) { mlsys_jw_key(&w, "half"); mlsys_jw_str(&w, e->half == 1 ? "param-grad" : "input-grad"); }
          mlsys_jw_end(&w);
        }
        mlsys_jw_end(&w);
        mlsys_remat_monet_plan_free(&plan);
      }
    }
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w) != MLSYS_OK) rc = cli_fail("remat solve", "%s", mlsys_last_error());
  } else {
    printf("graph %s: %d nodes; MONeT solver graph %d forward nodes, %d stages; fixed memory %s; budget %s\n",
           g->name ? g->name : a->graph, g->dag.n, sg.V, sg.T, cli_fmt_bytes(fixed, b1, sizeof b1),
           cli_fmt_bytes(budget, b2, sizeof b2));
    if (st == MLSYS_OK) {
      printf("%-15s %-12s %10.4fx %12s %8ld %9.2f s\n", mode || post ? "monet" : "monet-noop", s.optimal ? "optimal" : "feasible",
             base > 0 ? s.cost / base : 1.0, cli_fmt_bytes(s.peak, b1, sizeof b1), recomp, s.solve_seconds);
      if (post && !(mode & MLSYS_REMAT_MONET_CONV))
        printf("  mode %s; %d implementation(s) post-optimised to the fastest conv\n", mname, nchange);
      else if (post) printf("  mode %s\n", mname);
      for (int v = 0; v < sg.N; v++) {
        if (sg.src[v] < 0) continue;
        if (v < V) {
          if (s.F[v] > 0 || s.IP[v])
            printf("  %-20s forward %s%s\n", mlsys_remat_node_name(g, sg.src[v], nb, sizeof nb),
                   remat_fwd_impl_name(g, &sg, v, s.F[v]), s.IP[v] ? ", in place" : "");
        } else {
          int t = v - V + 1;
          if (sg.path_kind[sg.path_off[t] + s.M[t]] != 'g')
            printf("  %-20s backward %s\n", mlsys_remat_node_name(g, sg.src[v], nb, sizeof nb),
                   remat_path_name(sg.path_kind[sg.path_off[t] + s.M[t]]));
        }
      }
      if (a->plan && mlsys_remat_monet_plan_build(g, &sg, &s, &plan) == MLSYS_OK) {
        printf("execution plan (%d steps, peak %s):\n", plan.nsteps, cli_fmt_bytes(plan.peak, b1, sizeof b1));
        for (int k = 0; k < plan.nsteps; k++) {
          const mlsys_remat_monet_step *e = &plan.steps[k];
          const char *im;
          remat_monet_step_names(g, &sg, e, nb, sizeof nb, &im);
          printf("  %3d  stage %-3d %-7s %-20s%s%s%s%s\n", k, e->stage, e->op == MLSYS_REMAT_OP_COMPUTE ? "compute" : "free",
                 nb, im ? " " : "", im ? im : "", e->in_place ? " (in place)" : "",
                 e->half == 1 ? " (param-grad)" : e->half == 2 ? " (input-grad)" : "");
        }
        mlsys_remat_monet_plan_free(&plan);
      }
    }
  }
  if (st != MLSYS_OK) { fprintf(stderr, "mlsys remat solve: %s\n", err); rc = CLI_ERR; }
  mlsys_remat_monet_schedule_free(&s);
  mlsys_remat_monet_graph_free(&sg);
  return rc;
}

static int remat_solve(remat_args *a) {
  mlsys_remat_graph g;
  mlsys_remat_schedule ref;
  mlsys_remat_opts o;
  uint64_t budget = 0, fixed;
  int all = 0, m, m0, m1, rc = CLI_OK, any_fit = 0, json = a->json != NULL, monet = -1;
  double d;
  mlsys_json_writer w;
  char b1[32], b2[32], b3[32];
  memset(&o, 0, sizeof o);
  if (!a->budget) return cli_usage_error("remat solve", "--budget SIZE is required");
  if (a->method && !strcmp(a->method, "all")) all = 1;
  else if (a->method && (!strcmp(a->method, "monet") || !strcmp(a->method, "monet-noop"))) {
    monet = !strcmp(a->method, "monet") ? MLSYS_REMAT_MONET_ALL : 0;
    if (a->monet_mode && !monet)
      return cli_usage_error("remat solve", "--monet-mode goes with --method monet (monet-noop is mode none without "
                             "the conv post-optimisation)");
    if (a->monet_mode && (monet = remat_monet_mode_parse(a->monet_mode)) < 0)
      return cli_usage_error("remat solve", "bad --monet-mode '%s' (a comma list of conv, outact, intermediate, "
                             "inplace, split; or all, or none)", a->monet_mode);
  }
  else if (a->method && (m = mlsys_remat_method_parse(a->method)) < 0)
    return cli_usage_error("remat solve", "unknown method '%s'", a->method);
  else o.method = a->method ? (mlsys_remat_method)mlsys_remat_method_parse(a->method) : MLSYS_REMAT_MILP;
  if (a->monet_mode && monet < 0) return cli_usage_error("remat solve", "--monet-mode goes with --method monet");
  if (a->no_recompute && monet < 0) return cli_usage_error("remat solve", "--no-recompute goes with --method monet or monet-noop");
  o.time_limit = 60;
  if (a->time_limit && (cli_parse_double(a->time_limit, &o.time_limit) || !(o.time_limit > 0)))
    return cli_usage_error("remat solve", "--time-limit needs a positive number of seconds, got '%s'", a->time_limit);
  if (a->gap && (cli_parse_double(a->gap, &o.mip_gap_rel) || o.mip_gap_rel < 0))
    return cli_usage_error("remat solve", "--gap needs a non-negative relative gap, got '%s'", a->gap);
  if (a->solver) {
    if (!strcmp(a->solver, "lpsolve") || !strcmp(a->solver, "lp_solve")) o.backend = MLSYS_SOLVER_LPSOLVE;
    else if (!strcmp(a->solver, "cbc")) o.backend = MLSYS_SOLVER_CBC;
    else return cli_usage_error("remat solve", "unknown solver '%s' (lpsolve or cbc)", a->solver);
    if (!mlsys_milp_has_backend(o.backend))
      return cli_fail("remat solve", "solver %s is not compiled into this build", a->solver);
  }
  if (a->coarsen) {
    if (!strcmp(a->coarsen, "auto")) o.coarsen = MLSYS_REMAT_COARSEN_AUTO;
    else if (!strcmp(a->coarsen, "off")) o.coarsen = MLSYS_REMAT_COARSEN_OFF;
    else if (!strcmp(a->coarsen, "on")) o.coarsen = MLSYS_REMAT_COARSEN_ON;
    else return cli_usage_error("remat solve", "--coarsen takes auto, on or off, not '%s'", a->coarsen);
  }
  o.dump_model = a->dump;
  o.progress = a->progress != NULL;
  if (remat_load(a->graph, &g) != CLI_OK) return CLI_ERR;
  fixed = mlsys_remat_fixed_total(&g);
  memset(&ref, 0, sizeof ref);
  {
    size_t L = strlen(a->budget);
    if (L > 1 && a->budget[L - 1] == '%') {
      char tmp[64];
      if (L >= sizeof tmp) { mlsys_remat_graph_free(&g); return cli_usage_error("remat solve", "bad --budget '%s'", a->budget); }
      memcpy(tmp, a->budget, L - 1);
      tmp[L - 1] = 0;
      if (cli_parse_double(tmp, &d) || !(d > 0)) {
        mlsys_remat_graph_free(&g);
        return cli_usage_error("remat solve", "bad --budget '%s'", a->budget);
      }
      if (remat_ckpt_all(&g, &ref) != CLI_OK) { mlsys_remat_graph_free(&g); return CLI_ERR; }
      /* a percentage of the checkpoint-all ACTIVATION peak, plus the fixed memory (parameters etc.): with
         parameters dominating (AlexNet: 485 MiB of 583), a share of the total would be meaningless */
      budget = fixed + (uint64_t)floor((double)ref.peak * d / 100.0);
      mlsys_remat_schedule_free(&ref);
    } else if (cli_parse_bytes(a->budget, &budget)) {
      mlsys_remat_graph_free(&g);
      return cli_usage_error("remat solve", "bad --budget '%s' (bytes, e.g. 1073741824, 1GiB, 512MB, or 80%%)",
                             a->budget);
    }
  }
  if (monet >= 0) {
    rc = remat_monet(a, &g, budget, &o, (unsigned)monet, !strcmp(a->method, "monet"));
    mlsys_remat_graph_free(&g);
    return rc;
  }
  m0 = all ? 0 : (int)o.method;
  m1 = all ? MLSYS_REMAT_METHOD_COUNT : (int)o.method + 1;
  if (json) {
    mlsys_jw_init(&w, stdout, 1);
    if (all) mlsys_jw_array(&w);
  } else {
    printf("graph %s: %d nodes, %d edges; fixed memory %s; budget %s\n", g.name ? g.name : a->graph, g.dag.n,
           g.dag.nedges, cli_fmt_bytes(fixed, b1, sizeof b1), cli_fmt_bytes(budget, b2, sizeof b2));
    printf("%-15s %-12s %11s %12s %8s %11s\n", "method", "status", "overhead", "peak", "recomp", "time");
  }
  for (m = m0; m < m1; m++) {
    mlsys_remat_schedule s;
    mlsys_status st;
    char err[1024] = "";
    o.method = (mlsys_remat_method)m;
    st = mlsys_remat_solve(&g, budget, &o, &s);
    if (st != MLSYS_OK) snprintf(err, sizeof err, "%s", mlsys_last_error());
    if (s.baseline_cost == 0) {
      int v;
      for (v = 0; v < g.dag.n; v++) s.baseline_cost += g.dag.cost[v];
    }
    if (st == MLSYS_OK) any_fit = 1;
    if (json) remat_json_result(&w, &g, (mlsys_remat_method)m, st, err, &s, budget, 1);
    else {
      remat_human_row(&g, (mlsys_remat_method)m, st, err, &s);
      if (!all && s.n && s.solver_note[0]) printf("  %s\n", s.solver_note);
      if (!all && st != MLSYS_OK && s.n) printf("  %s\n", err);
      if (a->plan && st == MLSYS_OK) {
        mlsys_remat_plan p;
        if (mlsys_remat_plan_build(&g, &s, 0, &p) == MLSYS_OK) {
          printf("execution plan (%d steps, %d registers, peak %s + %s fixed):\n", p.nops, p.nregs,
                 cli_fmt_bytes(p.peak, b1, sizeof b1), cli_fmt_bytes(fixed, b3, sizeof b3));
          mlsys_remat_plan_write(&g, &p, stdout);
          mlsys_remat_plan_free(&p);
        }
      }
    }
    if (!all && st != MLSYS_OK) {
      fprintf(stderr, "mlsys remat solve: %s\n", err);
      rc = CLI_ERR;
    }
    mlsys_remat_schedule_free(&s);
  }
  if (json) {
    if (all) mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w) != MLSYS_OK) rc = cli_fail("remat solve", "%s", mlsys_last_error());
  }
  if (all && !any_fit) {
    fprintf(stderr, "mlsys remat solve: no method fits the budget of %llu bytes\n", (unsigned long long)budget);
    rc = CLI_ERR;
  }
  mlsys_remat_graph_free(&g);
  return rc;
}

static int remat_info(remat_args *a) {
  mlsys_remat_graph g;
  mlsys_remat_schedule ck;
  mlsys_remat_model_size ms;
  int v, nk[4] = {0, 0, 0, 0}, ms_ok;
  uint64_t lb, fixed;
  double total = 0;
  char b1[32], b2[32], b3[32];
  if (remat_load(a->graph, &g) != CLI_OK) return CLI_ERR;
  if (remat_ckpt_all(&g, &ck) != CLI_OK) { mlsys_remat_graph_free(&g); return CLI_ERR; }
  for (v = 0; v < g.dag.n; v++) { nk[g.kind[v] & 3]++; total += g.dag.cost[v]; }
  lb = mlsys_remat_single_op_bound(&g);
  fixed = mlsys_remat_fixed_total(&g);
  ms_ok = g.dag.n <= 400 && mlsys_remat_milp_size(&g, 0, &ms) == MLSYS_OK;
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "name"); mlsys_jw_str(&w, g.name);
    mlsys_jw_key(&w, "nodes"); mlsys_jw_i64(&w, g.dag.n);
    mlsys_jw_key(&w, "edges"); mlsys_jw_i64(&w, g.dag.nedges);
    mlsys_jw_key(&w, "forward"); mlsys_jw_i64(&w, nk[0]);
    mlsys_jw_key(&w, "loss"); mlsys_jw_i64(&w, nk[1]);
    mlsys_jw_key(&w, "backward"); mlsys_jw_i64(&w, nk[2]);
    mlsys_jw_key(&w, "other"); mlsys_jw_i64(&w, nk[3]);
    mlsys_jw_key(&w, "total_cost"); mlsys_jw_double(&w, total);
    mlsys_jw_key(&w, "fixed_memory"); mlsys_jw_u64(&w, fixed);
    mlsys_jw_key(&w, "checkpoint_all_peak"); mlsys_jw_u64(&w, ck.peak_total);
    mlsys_jw_key(&w, "lower_bound"); mlsys_jw_u64(&w, lb + fixed);
    if (ms_ok) {
      mlsys_jw_key(&w, "milp_binaries"); mlsys_jw_i64(&w, ms.binaries);
      mlsys_jw_key(&w, "milp_continuous"); mlsys_jw_i64(&w, ms.continuous);
      mlsys_jw_key(&w, "milp_rows"); mlsys_jw_i64(&w, ms.rows);
    }
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
  } else {
    printf("graph %s: %d nodes (%d forward, %d loss, %d backward, %d other), %d edges\n", g.name ? g.name : a->graph,
           g.dag.n, nk[0], nk[1], nk[2], nk[3], g.dag.nedges);
    printf("total cost %.6g%s%s; fixed memory %s\n", total, g.cost_unit ? " " : "", g.cost_unit ? g.cost_unit : "",
           cli_fmt_bytes(fixed, b1, sizeof b1));
    printf("checkpoint-all peak %s (no recomputation); no schedule fits below %s (largest node + inputs)\n",
           cli_fmt_bytes(ck.peak_total, b2, sizeof b2), cli_fmt_bytes(lb + fixed, b3, sizeof b3));
    if (ms_ok)
      printf("Checkmate MILP: %ld binaries, %ld continuous, %ld rows, %ld nonzeros\n", ms.binaries, ms.continuous,
             ms.rows, ms.nonzeros);
  }
  mlsys_remat_schedule_free(&ck);
  mlsys_remat_graph_free(&g);
  return CLI_OK;
}

static int remat_min_budget(remat_args *a) {
  mlsys_remat_graph g;
  mlsys_remat_opts o;
  mlsys_remat_schedule s;
  uint64_t b;
  int proven;
  char b1[32];
  memset(&o, 0, sizeof o);
  o.time_limit = 60;
  if (a->time_limit && (cli_parse_double(a->time_limit, &o.time_limit) || !(o.time_limit > 0)))
    return cli_usage_error("remat min-budget", "--time-limit needs a positive number of seconds");
  if (remat_load(a->graph, &g) != CLI_OK) return CLI_ERR;
  if (mlsys_remat_min_budget(&g, &o, &b, &proven, &s) != MLSYS_OK) {
    mlsys_remat_graph_free(&g);
    return cli_fail("remat min-budget", "%s", mlsys_last_error());
  }
  if (a->json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "min_budget"); mlsys_jw_u64(&w, b);
    mlsys_jw_key(&w, "proven"); mlsys_jw_bool(&w, proven);
    mlsys_jw_key(&w, "schedule"); mlsys_jw_str(&w, s.method);
    mlsys_jw_key(&w, "source"); mlsys_jw_str(&w, s.source);
    mlsys_jw_key(&w, "milp_ran"); mlsys_jw_bool(&w, s.milp_ran);
    mlsys_jw_key(&w, "compute_cost"); mlsys_jw_double(&w, s.cost);
    mlsys_jw_key(&w, "baseline_cost"); mlsys_jw_double(&w, s.baseline_cost);
    mlsys_jw_end(&w);
    mlsys_jw_finish(&w);
  } else {
    printf("smallest feasible budget: %llu bytes (%s), %s; found by %s at %.4fx compute\n", (unsigned long long)b,
           cli_fmt_bytes(b, b1, sizeof b1), proven ? "proven minimal" : "not proven minimal", s.method,
           s.baseline_cost > 0 ? s.cost / s.baseline_cost : 1.0);
  }
  mlsys_remat_schedule_free(&s);
  mlsys_remat_graph_free(&g);
  return CLI_OK;
}

static int remat_convert(remat_args *a) {
  mlsys_remat_graph g;
  FILE *f = stdout;
  int json, rc = CLI_OK;
  if (!a->to || (strcmp(a->to, "json") && strcmp(a->to, "text")))
    return cli_usage_error("remat convert", "--to json|text is required");
  json = !strcmp(a->to, "json");
  if (remat_load(a->graph, &g) != CLI_OK) return CLI_ERR;
  if (a->out && !(f = fopen(a->out, "w"))) {
    mlsys_remat_graph_free(&g);
    return cli_fail("remat convert", "%s: cannot write", a->out);
  }
  if (mlsys_remat_graph_write(&g, f, json) != MLSYS_OK) rc = cli_fail("remat convert", "%s", mlsys_last_error());
  if (f != stdout && fclose(f) != 0) rc = cli_fail("remat convert", "%s: write failed", a->out);
  mlsys_remat_graph_free(&g);
  return rc;
}

int cmd_remat(int argc, char **argv) {
  remat_args a;
  const char *verb;
  int rc;
  cli_opt opts[] = {
      {"--graph", 1, &a.graph},         {"--budget", 1, &a.budget},     {"--method", 1, &a.method},
      {"--time-limit", 1, &a.time_limit}, {"--json", 0, &a.json},       {"--plan", 0, &a.plan},
      {"--solver", 1, &a.solver},       {"--gap", 1, &a.gap},           {"--dump-model", 1, &a.dump},
      {"--progress", 0, &a.progress},   {"--to", 1, &a.to},             {"--out", 1, &a.out},
      {"--help", 0, &a.help},           {"--coarsen", 1, &a.coarsen},   {"--monet-mode", 1, &a.monet_mode},
      {"--no-recompute", 0, &a.no_recompute},
  };
  memset(&a, 0, sizeof a);
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
    fputs(remat_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  verb = argv[2];
  if (!strcmp(verb, "sweep")) return cmd_remat_sweep(argc, argv);
  if (!strcmp(verb, "max-batch")) return cmd_remat_max_batch(argc, argv);
  if (!strcmp(verb, "import-dtr")) return cmd_remat_import_dtr(argc, argv);
  if (!strcmp(verb, "calibrate")) return cmd_remat_calibrate(argc, argv);
  if ((rc = cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), "remat")) != CLI_OK) return rc;
  if (a.help) { fputs(remat_help, stdout); return CLI_OK; }
  if (!strcmp(verb, "solve")) return remat_solve(&a);
  if (!strcmp(verb, "info")) return remat_info(&a);
  if (!strcmp(verb, "min-budget")) return remat_min_budget(&a);
  if (!strcmp(verb, "convert")) return remat_convert(&a);
  return cli_usage_error("remat", "unknown verb '%s' (solve, info, min-budget, convert, sweep, max-batch, import-dtr, calibrate)", verb);
}
