/* cli/remat_sweep.c — `mlsys remat sweep` (the thesis's Fig. 3.5: compute overhead against the memory budget, one
   curve per method, as a table, JSON, CSV and an SVG plot) and `mlsys remat max-batch` (Fig. 3.6: the largest
   batch each method fits into a memory size under a cost cap). */
#include "mlsys_remat.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *sweep_help =
    "usage: mlsys remat sweep --graph FILE [--methods M1,M2,...|all] [--points N] [--from SIZE] [--to SIZE]\n"
    "                         [--time-limit S] [--solver lpsolve|cbc] [--svg OUT.svg] [--json|--csv] [--progress]\n"
    "\n"
    "Solves every method at N budgets (default 8) spaced evenly from --from (default: fixed memory + the largest\n"
    "operator with its inputs, below which nothing fits) to --to (default: the checkpoint-all peak, fixed memory\n"
    "included) and prints, per method and budget, the compute overhead (cost / checkpoint-all cost), the peak\n"
    "memory and the solve time: the thesis's Fig. 3.5. SIZE is bytes with an optional unit (1.5GB, 600MiB) or P%\n"
    "(fixed memory + P% of the checkpoint-all activation peak), as for `mlsys remat solve --budget`.\n"
    "Methods as in `mlsys remat solve --method`; default all: checkpoint-all, chen, chen-greedy, griewank,\n"
    "ap-sqrtn, ap-greedy, lin-greedy, lp, milp. --time-limit bounds each MILP/LP solve (default 60 s). When milp\n"
    "or lp is swept, the smallest feasible budget is searched once first; budgets proven below it are reported\n"
    "infeasible without solving.\n"
    "monet and monet-noop (not part of all) solve MONeT's ILP at each budget, as `mlsys remat solve --method\n"
    "monet|monet-noop` does (started from the cheaper of store-all and Chen that fits, so every budget at or above\n"
    "store-all's gets a schedule); peak_memory is MONeT's eager simulated peak, and monet's overhead can be below 1\n"
    "(its faster conv/linear algorithms).\n"
    "--svg writes the plot (x: total budget incl. fixed memory, y: overhead; infeasible points left out).\n"
    "--json keys: graph, batch, nodes, fixed_memory, checkpoint_all_peak, lower_bound, min_budget,\n"
    "min_budget_proven, time_limit, budgets, series: [{method, points: [{budget, status (fits | infeasible |\n"
    "timeout | error), overhead (null unless fits), compute_cost, baseline_cost, peak_memory, optimal, bound,\n"
    "solve_seconds, schedule, source, milp_ran, note, error}]}] (schedule, source, milp_ran as for\n"
    "`mlsys remat solve --json`). --csv: one row per method and budget.\n"
    "Progress goes to stderr: a status line on a terminal, or one line per solve with --progress.\n"
    "Exit codes: 0 done (infeasible points are results, not errors), 1 bad input or a solve failed, 2 bad usage.\n";

static const char *max_batch_help =
    "usage: mlsys remat max-batch --graph FILE --memory SIZE [--methods M1,M2,...|all] [--cost-cap X]\n"
    "                             [--time-limit S] [--solver lpsolve|cbc] [--json] [--progress]\n"
    "\n"
    "The largest batch at which each method finds a schedule within SIZE bytes (fixed memory at that batch\n"
    "included) whose compute is at most X times the checkpoint-all compute: the thesis's Fig. 3.6. Default X is\n"
    "one extra forward pass, (2*sum C_F + sum C_B + C_loss) / sum C. Activation bytes, costs and the fixed\n"
    "categories 'inputs' and 'labels' are scaled linearly from the graph's batch (the file must give one);\n"
    "parameters and gradients are not. The baselines and lp: exponential search and bisection over batches,\n"
    "one solve per probe (exact for the baselines, monotone in the batch). milp: one MILP that minimises the\n"
    "per-sample peak under the cap, started from the best greedy baseline; a lower bound when it hits\n"
    "--time-limit (default 60 s), the maximum when proven (with --cost-cap inf: the search, a MILP per probe).\n"
    "monet and monet-noop (not part of all): the same search with MONeT's ILP per probe at SIZE, a probe fitting\n"
    "when its cost is at most X times that batch's checkpoint-all cost (exact when every probe is proven optimal,\n"
    "else a lower bound; --time-limit bounds each probe).\n"
    "Default methods: all. The gains are over checkpoint-all and chen (sqrt(n)), computed even when not listed.\n"
    "--json keys: graph, batch, memory, cost_cap, cost_cap_default, results: [{method, status (ok | infeasible |\n"
    "error), max_batch, gain_vs_checkpoint_all, gain_vs_chen, overhead, compute_cost, peak_memory,\n"
    "activation_peak, seconds, schedule, source, milp_ran, note, error}]. For milp, source names the method\n"
    "whose schedule it is and milp_ran says whether a MILP ran: none does when a baseline already reaches the\n"
    "single-operator bound (proven maximal) or on graphs over 60 nodes unless --time-limit is above 600 s (then\n"
    "the best baseline's batch is reported: \"milp_ran\": false, \"source\": \"lin-greedy\", say).\n"
    "Exit codes: 0 done, 1 bad input or a method failed with an error, 2 bad usage.\n";

/* MONeT (section 9) is not a mlsys_remat_method: two codes past the enum stand for it here. */
#define SWEEP_MONET ((mlsys_remat_method)(MLSYS_REMAT_METHOD_COUNT + 1))
#define SWEEP_MONET_NOOP ((mlsys_remat_method)(MLSYS_REMAT_METHOD_COUNT + 2))
#define SWEEP_MAXM (MLSYS_REMAT_METHOD_COUNT + 2)
static int is_monet(mlsys_remat_method m) { return m == SWEEP_MONET || m == SWEEP_MONET_NOOP; }
static const char *method_name(mlsys_remat_method m) {
  return m == SWEEP_MONET ? "monet" : m == SWEEP_MONET_NOOP ? "monet-noop" : mlsys_remat_method_name(m);
}

/* Display order for "all": the baselines, then the LP rounding, then the MILP. */
static const mlsys_remat_method sweep_all_methods[] = {
    MLSYS_REMAT_CHECKPOINT_ALL, MLSYS_REMAT_CHEN_SQRTN, MLSYS_REMAT_CHEN_GREEDY, MLSYS_REMAT_GRIEWANK,
    MLSYS_REMAT_AP_SQRTN,       MLSYS_REMAT_AP_GREEDY,  MLSYS_REMAT_LIN_GREEDY,  MLSYS_REMAT_LP_ROUND,
    MLSYS_REMAT_MILP};
#define SWEEP_NALL ((int)(sizeof sweep_all_methods / sizeof sweep_all_methods[0]))

/* "all" or a comma list of method names into ms[] (no repeats). Returns the count, or -1 after a usage message. */
static int parse_methods(const char *cmd, const char *s, mlsys_remat_method *ms) {
  int n = 0, i;
  const char *p = s;
  if (!s || !strcmp(s, "all")) {
    for (i = 0; i < SWEEP_NALL; i++) ms[i] = sweep_all_methods[i];
    return SWEEP_NALL;
  }
  while (1) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    int m;
    if (len == 0 || len >= sizeof name) {
      cli_usage_error(cmd, "bad --methods '%s' (a comma list of method names, or all)", s);
      return -1;
    }
    memcpy(name, p, len);
    name[len] = 0;
    if (!strcmp(name, "monet")) m = (int)SWEEP_MONET;
    else if (!strcmp(name, "monet-noop")) m = (int)SWEEP_MONET_NOOP;
    else if ((m = mlsys_remat_method_parse(name)) < 0) {
      cli_usage_error(cmd, "unknown method '%s' (milp, lp, checkpoint-all, chen, chen-greedy, griewank, ap-sqrtn, "
                      "ap-greedy, lin-greedy, monet, monet-noop, or all)", name);
      return -1;
    }
    for (i = 0; i < n; i++)
      if (ms[i] == (mlsys_remat_method)m) break;
    if (i == n) {
      if (n == SWEEP_MAXM) break;
      ms[n++] = (mlsys_remat_method)m;
    }
    if (!e) break;
    p = e + 1;
  }
  return n;
}

static int parse_time_limit(const char *cmd, const char *s, double *out) {
  *out = 60;
  if (s && (cli_parse_double(s, out) || !(*out > 0) || isinf(*out)))
    return cli_usage_error(cmd, "--time-limit needs a positive number of seconds, got '%s'", s);
  return CLI_OK;
}

static int parse_solver(const char *cmd, const char *s, mlsys_milp_backend *out) {
  *out = MLSYS_SOLVER_DEFAULT;
  if (!s) return CLI_OK;
  if (!strcmp(s, "lpsolve") || !strcmp(s, "lp_solve")) *out = MLSYS_SOLVER_LPSOLVE;
  else if (!strcmp(s, "cbc")) *out = MLSYS_SOLVER_CBC;
  else return cli_usage_error(cmd, "unknown solver '%s' (lpsolve or cbc)", s);
  if (!mlsys_milp_has_backend(*out)) return cli_fail(cmd, "solver %s is not compiled into this build", s);
  return CLI_OK;
}

/* A budget: bytes with a unit, or "P%" = fixed + P% of the checkpoint-all activation peak. With g == NULL only
   the syntax is checked. Returns 0 on success. */
static int parse_budget(const char *s, const mlsys_remat_graph *g, uint64_t ckpt_peak, uint64_t *out) {
  size_t L = strlen(s);
  double d;
  uint64_t b;
  if (L > 1 && s[L - 1] == '%') {
    char tmp[64];
    if (L >= sizeof tmp) return -1;
    memcpy(tmp, s, L - 1);
    tmp[L - 1] = 0;
    if (cli_parse_double(tmp, &d) || !(d > 0) || isinf(d)) return -1;
    if (g) *out = mlsys_remat_fixed_total(g) + (uint64_t)floor((double)ckpt_peak * d / 100.0);
    return 0;
  }
  if (cli_parse_bytes(s, &b)) return -1;
  *out = b;
  return 0;
}

static void json_num(mlsys_json_writer *w, const char *key, double v) {
  mlsys_jw_key(w, key);
  if (isnan(v) || isinf(v)) mlsys_jw_null(w);
  else mlsys_jw_double(w, v);
}

/* ================================================================================================================
   sweep
   ================================================================================================================ */
enum { PT_FITS = 0, PT_INFEASIBLE, PT_TIMEOUT, PT_ERROR };
static const char *pt_status_name[] = {"fits", "infeasible", "timeout", "error"};

typedef struct {
  int status, has_schedule, optimal, milp_ran;
  double overhead;          /* NaN unless fits */
  double cost, baseline_cost, bound, seconds;
  uint64_t peak_total;
  char schedule[64], source[64], note[160], err[320];
} sweep_point;

typedef struct {
  const mlsys_remat_graph *g;
  int nm, nb;
  const mlsys_remat_method *ms;
  const uint64_t *budgets;
  sweep_point *pts;         /* [nm * nb], method-major */
} sweep_result;

static sweep_point *sweep_at(const sweep_result *r, int mi, int bi) { return &r->pts[(size_t)mi * (size_t)r->nb + (size_t)bi]; }

/* MONeT's solver graph for method m (monet: every optimisation, monet-noop: none) */
static mlsys_status monet_graph(const mlsys_remat_graph *g, mlsys_remat_method m, mlsys_remat_monet_graph *sg) {
  mlsys_remat_monet_catalogue c;
  memset(&c, 0, sizeof c);
  c.mode = m == SWEEP_MONET ? MLSYS_REMAT_MONET_ALL : 0;
  return mlsys_remat_monet_graph_build(g, &c, sg);
}

/* One MONeT point: the ILP at the budget (its built-in starts make every budget at or above store-all's ILP
   requirement give a schedule); peak = the eager simulation's, as `mlsys remat solve --method monet` reports. */
static mlsys_status monet_point(const mlsys_remat_monet_graph *sg, uint64_t budget, const mlsys_remat_opts *o,
                                mlsys_remat_monet_schedule *s) {
  mlsys_remat_monet_opts mo;
  memset(&mo, 0, sizeof mo);
  mo.time_limit = o->time_limit;
  mo.backend = o->backend;
  return mlsys_remat_monet_solve(sg, budget, &mo, s);
}

/* ---- the SVG plot: our own writer, no dependencies ---- */
static void svg_text_escaped(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      default: fputc(*s, f);
    }
  }
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` intervals over span. */
static double nice_step(double span, int target) {
  double raw = span / target, p = pow(10, floor(log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void nice_range(double *lo, double *hi, double min_span, double *step) {
  if (*hi - *lo < min_span) { double c = 0.5 * (*lo + *hi); *lo = c - 0.5 * min_span; *hi = c + 0.5 * min_span; }
  *step = nice_step(*hi - *lo, 5);
  *lo = floor(*lo / *step + 1e-9) * *step;
  *hi = ceil(*hi / *step - 1e-9) * *step;
}

static int step_decimals(double step) {
  int d = (int)ceil(-log10(step) - 1e-9);
  return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* Markers differ by shape as well as colour, so that curves lying on top of each other stay distinguishable. */
static void svg_marker(FILE *f, int shape, double x, double y, const char *fill) {
  const double a = 4.0;
  switch (shape % 5) {
    case 0: fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"", x, y, fill); break;
    case 1: fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"", x - a + 0.5,
                    y - a + 0.5, 2 * a - 1, 2 * a - 1, fill); break;
    case 2: fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"", x, y - a - 1, x + a + 1,
                    y, x, y + a + 1, x - a - 1, y, fill); break;
    case 3: fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"", x, y - a - 1, x + a + 1,
                    y + a, x - a - 1, y + a, fill); break;
    default: fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"", x, y + a + 1, x + a + 1,
                     y - a, x - a - 1, y - a, fill); break;
  }
}

static int write_svg(const char *path, const sweep_result *r) {
  static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double W = 820, H = 520, ml = 78, mr = 190, mt = 56, mb = 64, pw = W - ml - mr, ph = H - mt - mb;
  const mlsys_remat_graph *g = r->g;
  double umul = 1, xlo, xhi, ylo = INFINITY, yhi = -INFINITY, xs, ys, v;
  const char *uname = "B";
  int mi, bi, k, dx, dy;
  FILE *f = fopen(path, "w");
  if (!f) return cli_fail("remat sweep", "%s: cannot write the SVG", path);
  /* x unit: decimal, so that 16 GB reads as on a GPU's label; chosen by the largest budget */
  if (r->budgets[r->nb - 1] >= 1000000000ull) { umul = 1e-9; uname = "GB"; }
  else if (r->budgets[r->nb - 1] >= 1000000ull) { umul = 1e-6; uname = "MB"; }
  else if (r->budgets[r->nb - 1] >= 1000ull) { umul = 1e-3; uname = "kB"; }
  xlo = (double)r->budgets[0] * umul;
  xhi = (double)r->budgets[r->nb - 1] * umul;
  for (mi = 0; mi < r->nm; mi++)
    for (bi = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      if (p->status == PT_FITS && isfinite(p->overhead)) {
        if (p->overhead < ylo) ylo = p->overhead;
        if (p->overhead > yhi) yhi = p->overhead;
      }
    }
  if (!(ylo <= yhi)) { ylo = 1; yhi = 1; }
  if (ylo > 1) ylo = 1;   /* overhead 1 (no recomputation) is the reference line */
  nice_range(&xlo, &xhi, fmax(1e-9, 1e-6 * fabs(xhi)), &xs);
  nice_range(&ylo, &yhi, 0.1, &ys);
  dx = step_decimals(xs);
  dy = step_decimals(ys);
#define SX(x) (ml + ((x) - xlo) / (xhi - xlo) * pw)
#define SY(y) (mt + ph - ((y) - ylo) / (yhi - ylo) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
             "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n", W, H, W, H);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">", ml + pw / 2);
  svg_text_escaped(f, g->name ? g->name : "graph");
  if (g->batch > 0) fprintf(f, ", batch %d", g->batch);
  fprintf(f, ": compute overhead against the memory budget</text>\n");
  /* grid and ticks */
  fprintf(f, "<g stroke=\"#dddddd\" stroke-width=\"1\">\n");
  for (k = 0, v = xlo; v <= xhi + 0.5 * xs; v = xlo + ++k * xs)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", SX(v), mt, SX(v), mt + ph);
  for (k = 0, v = ylo; v <= yhi + 0.5 * ys; v = ylo + ++k * ys)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ml, SY(v), ml + pw, SY(v));
  fprintf(f, "</g>\n<g fill=\"#333333\">\n");
  for (k = 0, v = xlo; v <= xhi + 0.5 * xs; v = xlo + ++k * xs)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", SX(v), mt + ph + 18, dx, v);
  for (k = 0, v = ylo; v <= yhi + 0.5 * ys; v = ylo + ++k * ys)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", ml - 8, SY(v) + 4, dy, v);
  fprintf(f, "</g>\n");
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333333\"/>\n", ml, mt,
          pw, ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">total memory budget (%s, fixed memory included)</text>\n",
          ml + pw / 2, H - 18, uname);
  fprintf(f, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">overhead "
             "(compute / checkpoint-all compute)</text>\n", mt + ph / 2, mt + ph / 2);
  /* one polyline + markers per method; infeasible points left out */
  for (mi = 0; mi < r->nm; mi++) {
    const char *col = colors[mi % 10];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
    for (bi = 0, k = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      if (p->status != PT_FITS || !isfinite(p->overhead)) continue;
      fprintf(f, "%s%.1f,%.1f", k++ ? " " : "", SX((double)r->budgets[bi] * umul), SY(p->overhead));
    }
    fprintf(f, "\"/>\n");
    for (bi = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      if (p->status != PT_FITS || !isfinite(p->overhead)) continue;
      svg_marker(f, mi, SX((double)r->budgets[bi] * umul), SY(p->overhead), col);
      fprintf(f, "><title>%s: %.4fx at %.4g %s</title></%s>\n", method_name(r->ms[mi]), p->overhead,
              (double)r->budgets[bi] * umul, uname, mi % 5 == 0 ? "circle" : mi % 5 == 1 ? "rect" : "polygon");
    }
    /* legend */
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>",
            ml + pw + 16, mt + 10 + 20.0 * mi, ml + pw + 44, mt + 10 + 20.0 * mi, col);
    svg_marker(f, mi, ml + pw + 30, mt + 10 + 20.0 * mi, col);
    fprintf(f, "/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n", ml + pw + 52, mt + 14 + 20.0 * mi,
            method_name(r->ms[mi]));
  }
#undef SX
#undef SY
  fprintf(f, "</svg>\n");
  if (ferror(f) | fclose(f)) return cli_fail("remat sweep", "%s: write failed", path);
  return CLI_OK;
}

static void sweep_json(const sweep_result *r, uint64_t ckpt_total, uint64_t lb, uint64_t min_budget, int proven,
                       double time_limit) {
  const mlsys_remat_graph *g = r->g;
  mlsys_json_writer w;
  int mi, bi;
  mlsys_jw_init(&w, stdout, 1);
  mlsys_jw_object(&w);
  mlsys_jw_key(&w, "graph"); mlsys_jw_str(&w, g->name);
  mlsys_jw_key(&w, "batch"); if (g->batch > 0) mlsys_jw_i64(&w, g->batch); else mlsys_jw_null(&w);
  mlsys_jw_key(&w, "nodes"); mlsys_jw_i64(&w, g->dag.n);
  mlsys_jw_key(&w, "fixed_memory"); mlsys_jw_u64(&w, mlsys_remat_fixed_total(g));
  mlsys_jw_key(&w, "checkpoint_all_peak"); mlsys_jw_u64(&w, ckpt_total);
  mlsys_jw_key(&w, "lower_bound"); mlsys_jw_u64(&w, lb);
  mlsys_jw_key(&w, "min_budget"); if (min_budget) mlsys_jw_u64(&w, min_budget); else mlsys_jw_null(&w);
  mlsys_jw_key(&w, "min_budget_proven"); mlsys_jw_bool(&w, min_budget && proven);
  json_num(&w, "time_limit", time_limit);
  mlsys_jw_key(&w, "budgets");
  mlsys_jw_array(&w);
  for (bi = 0; bi < r->nb; bi++) mlsys_jw_u64(&w, r->budgets[bi]);
  mlsys_jw_end(&w);
  mlsys_jw_key(&w, "series");
  mlsys_jw_array(&w);
  for (mi = 0; mi < r->nm; mi++) {
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "method"); mlsys_jw_str(&w, method_name(r->ms[mi]));
    mlsys_jw_key(&w, "points");
    mlsys_jw_array(&w);
    for (bi = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "budget"); mlsys_jw_u64(&w, r->budgets[bi]);
      mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, pt_status_name[p->status]);
      json_num(&w, "overhead", p->overhead);
      json_num(&w, "compute_cost", p->has_schedule ? p->cost : NAN);
      json_num(&w, "baseline_cost", p->baseline_cost);
      mlsys_jw_key(&w, "peak_memory"); if (p->has_schedule) mlsys_jw_u64(&w, p->peak_total); else mlsys_jw_null(&w);
      mlsys_jw_key(&w, "optimal"); mlsys_jw_bool(&w, p->optimal);
      json_num(&w, "bound", p->bound);
      json_num(&w, "solve_seconds", p->seconds);
      mlsys_jw_key(&w, "schedule"); mlsys_jw_str(&w, p->has_schedule ? p->schedule : NULL);
      mlsys_jw_key(&w, "source"); mlsys_jw_str(&w, p->has_schedule ? p->source : NULL);
      mlsys_jw_key(&w, "milp_ran"); mlsys_jw_bool(&w, p->milp_ran);
      mlsys_jw_key(&w, "note"); mlsys_jw_str(&w, p->note);
      mlsys_jw_key(&w, "error"); mlsys_jw_str(&w, p->status == PT_FITS ? NULL : p->err);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
  }
  mlsys_jw_end(&w);
  mlsys_jw_end(&w);
  mlsys_jw_finish(&w);
}

static void sweep_csv(const sweep_result *r) {
  int mi, bi;
  printf("method,budget,status,overhead,compute_cost,baseline_cost,peak_memory,optimal,bound,solve_seconds,schedule\n");
  for (mi = 0; mi < r->nm; mi++)
    for (bi = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      printf("%s,%llu,%s,", method_name(r->ms[mi]), (unsigned long long)r->budgets[bi],
             pt_status_name[p->status]);
      if (isfinite(p->overhead)) printf("%.17g", p->overhead);
      putchar(',');
      if (p->has_schedule) printf("%.17g", p->cost);
      printf(",%.17g,", p->baseline_cost);
      if (p->has_schedule) printf("%llu", (unsigned long long)p->peak_total);
      printf(",%d,", p->optimal);
      if (isfinite(p->bound)) printf("%.17g", p->bound);
      printf(",%.3f,", p->seconds);
      if (p->has_schedule) mlsys_csv_field(stdout, p->schedule);
      putchar('\n');
    }
}

/* An overhead that prints as 1.0000 but is not 1: marked "1.0000+" so it is not read as "no recomputation". */
static int tiny_above_one(double ov) { return ov > 1 && ov < 1.00005; }

static void sweep_table(const sweep_result *r) {
  int mi, bi;
  char b1[32], b2[32];
  printf("%-15s %12s  %-11s %10s %12s %10s\n", "method", "budget", "status", "overhead", "peak", "time");
  for (mi = 0; mi < r->nm; mi++)
    for (bi = 0; bi < r->nb; bi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      char ov[32] = "-", pk[32] = "-";
      if (p->status == PT_FITS) snprintf(ov, sizeof ov, "%.4f%sx%s", p->overhead, tiny_above_one(p->overhead) ? "+" : "",
                                         p->optimal ? "*" : " ");
      if (p->has_schedule) cli_fmt_bytes(p->peak_total, pk, sizeof pk);
      printf("%-15s %12s  %-11s %10s %12s %8.2f s\n", method_name(r->ms[mi]),
             cli_fmt_bytes(r->budgets[bi], b1, sizeof b1), pt_status_name[p->status], ov, pk, p->seconds);
    }
  /* the figure as a matrix: budgets down, methods across */
  printf("\noverhead by budget (* proven optimal, + just above 1, - nothing fits, t time limit, e error):\n%12s",
         "budget");
  for (mi = 0; mi < r->nm; mi++) printf(" %14s", method_name(r->ms[mi]));
  putchar('\n');
  for (bi = 0; bi < r->nb; bi++) {
    printf("%12s", cli_fmt_bytes(r->budgets[bi], b2, sizeof b2));
    for (mi = 0; mi < r->nm; mi++) {
      const sweep_point *p = sweep_at(r, mi, bi);
      char c[32];
      if (p->status == PT_FITS)
        snprintf(c, sizeof c, "%.4f%s%s", p->overhead, tiny_above_one(p->overhead) ? "+" : "", p->optimal ? "*" : "");
      else snprintf(c, sizeof c, "%s", p->status == PT_TIMEOUT ? "t" : p->status == PT_ERROR ? "e" : "-");
      printf(" %14s", c);
    }
    putchar('\n');
  }
}

int cmd_remat_sweep(int argc, char **argv) {
  static const char *cmd = "remat sweep";
  const char *graph = NULL, *methods = NULL, *points = NULL, *from = NULL, *to = NULL, *tl = NULL, *svg = NULL,
             *json = NULL, *csv = NULL, *progress = NULL, *solver = NULL, *help = NULL;
  cli_opt opts[] = {
      {"--graph", 1, &graph},   {"--methods", 1, &methods}, {"--points", 1, &points},   {"--from", 1, &from},
      {"--to", 1, &to},         {"--time-limit", 1, &tl},   {"--svg", 1, &svg},         {"--json", 0, &json},
      {"--csv", 0, &csv},       {"--progress", 0, &progress}, {"--solver", 1, &solver}, {"--help", 0, &help},
  };
  mlsys_remat_method ms[SWEEP_MAXM];
  mlsys_remat_graph g;
  mlsys_remat_opts o;
  mlsys_remat_schedule ck;
  sweep_result res;
  mlsys_progress prog;
  uint64_t lo, hi, fixed, lb, min_budget = 0, *budgets = NULL, tmp;
  int nm, npts = 8, nb, i, mi, bi, rc = CLI_OK, proven = 0, need_min = 0, nerr = 0, done = 0;
  char b1[32], b2[32], b3[32];
  if (cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd) != CLI_OK) return CLI_USAGE;
  if (help) { fputs(sweep_help, stdout); return CLI_OK; }
  /* usage first: everything that does not need the graph */
  if (!graph) return cli_usage_error(cmd, "--graph FILE is required");
  if ((nm = parse_methods(cmd, methods, ms)) < 0) return CLI_USAGE;
  if (points) {
    char *e;
    long v = strtol(points, &e, 10);
    if (e == points || *e || v < 1 || v > 10000)
      return cli_usage_error(cmd, "--points needs a whole number from 1 to 10000, got '%s'", points);
    npts = (int)v;
  }
  if (from && parse_budget(from, NULL, 0, &tmp))
    return cli_usage_error(cmd, "bad --from '%s' (bytes, e.g. 1073741824, 1GiB, 512MB, or 80%%)", from);
  if (to && parse_budget(to, NULL, 0, &tmp))
    return cli_usage_error(cmd, "bad --to '%s' (bytes, e.g. 1073741824, 1GiB, 512MB, or 80%%)", to);
  if (json && csv) return cli_usage_error(cmd, "--json and --csv exclude each other");
  memset(&o, 0, sizeof o);
  if (parse_time_limit(cmd, tl, &o.time_limit) != CLI_OK) return CLI_USAGE;
  if ((i = parse_solver(cmd, solver, &o.backend)) != CLI_OK) return i;

  if (mlsys_remat_graph_load(graph, &g) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  {
    mlsys_remat_opts co;
    memset(&co, 0, sizeof co);
    co.method = MLSYS_REMAT_CHECKPOINT_ALL;
    if (mlsys_remat_solve(&g, UINT64_MAX, &co, &ck) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      mlsys_remat_schedule_free(&ck);
      mlsys_remat_graph_free(&g);
      return rc;
    }
  }
  fixed = mlsys_remat_fixed_total(&g);
  lb = fixed + mlsys_remat_single_op_bound(&g);
  lo = lb;
  hi = ck.peak_total;
  if (from) parse_budget(from, &g, ck.peak, &lo);
  if (to) parse_budget(to, &g, ck.peak, &hi);
  if (lo > hi) {
    rc = cli_usage_error(cmd, "the sweep runs from %s to %s: --from must not exceed --to (default --to: the "
                         "checkpoint-all peak, %llu bytes)", cli_fmt_bytes(lo, b1, sizeof b1),
                         cli_fmt_bytes(hi, b2, sizeof b2), (unsigned long long)ck.peak_total);
    goto out;
  }
  if (!(budgets = (uint64_t *)mlsys_alloc((size_t)npts, sizeof *budgets))) { rc = cli_fail(cmd, "out of memory"); goto out; }
  for (i = 0, nb = 0; i < npts; i++) {
    uint64_t b = npts == 1 ? hi : lo + (uint64_t)floor((double)(hi - lo) * i / (npts - 1) + 0.5);
    if (i == npts - 1) b = hi;
    if (nb == 0 || b > budgets[nb - 1]) budgets[nb++] = b;   /* equal budgets (a narrow range) only once */
  }
  res.g = &g;
  res.nm = nm;
  res.nb = nb;
  res.ms = ms;
  res.budgets = budgets;
  if (!(res.pts = (sweep_point *)mlsys_calloc((size_t)nm * (size_t)nb, sizeof(sweep_point)))) {
    rc = cli_fail(cmd, "out of memory");
    goto out;
  }
  /* the smallest feasible budget, once: MILP/LP points proven below it need no solve (and no per-point search
     for the "smallest feasible budget" message) */
  for (mi = 0; mi < nm; mi++) need_min |= ms[mi] == MLSYS_REMAT_MILP || ms[mi] == MLSYS_REMAT_LP_ROUND;
  if (need_min && budgets[0] < ck.peak_total) {
    mlsys_remat_opts mo = o;
    double t0 = mlsys_now();
    if (progress) fprintf(stderr, "sweep: searching the smallest feasible budget (at most %.0f s)\n", o.time_limit);
    if (mlsys_remat_min_budget(&g, &mo, &min_budget, &proven, NULL) != MLSYS_OK) {
      min_budget = 0;
      proven = 0;
    }
    if (progress && min_budget)
      fprintf(stderr, "sweep: smallest feasible budget %s%s (%.1f s)\n", cli_fmt_bytes(min_budget, b1, sizeof b1),
              proven ? ", proven" : "", mlsys_now() - t0);
  }
  mlsys_progress_begin(&prog, "sweep", !progress);
  for (mi = 0; mi < nm; mi++) {
    mlsys_remat_monet_graph sg;
    mlsys_status gst = MLSYS_OK;
    char gerr[256] = "";
    memset(&sg, 0, sizeof sg);
    if (is_monet(ms[mi]) && (gst = monet_graph(&g, ms[mi], &sg)) != MLSYS_OK)
      snprintf(gerr, sizeof gerr, "%s", mlsys_last_error());
    for (bi = 0; bi < nb; bi++) {
      sweep_point *p = sweep_at(&res, mi, bi);
      mlsys_remat_schedule s;
      mlsys_status st;
      mlsys_progress_update(&prog, "[%d/%d] %s at %s", done + 1, nm * nb, method_name(ms[mi]),
                            cli_fmt_bytes(budgets[bi], b1, sizeof b1));
      memset(p, 0, sizeof *p);
      p->overhead = p->bound = NAN;
      p->baseline_cost = ck.baseline_cost;
      if ((ms[mi] == MLSYS_REMAT_MILP || ms[mi] == MLSYS_REMAT_LP_ROUND) && proven && budgets[bi] < min_budget) {
        p->status = PT_INFEASIBLE;
        snprintf(p->err, sizeof p->err, "below the smallest feasible budget, %llu bytes (proven)",
                 (unsigned long long)min_budget);
      } else if (is_monet(ms[mi])) {
        mlsys_remat_monet_schedule m;
        memset(&m, 0, sizeof m);
        st = gst != MLSYS_OK ? gst : monet_point(&sg, budgets[bi], &o, &m);
        if (st != MLSYS_OK) snprintf(p->err, sizeof p->err, "%s", gst != MLSYS_OK ? gerr : mlsys_last_error());
        p->status = st == MLSYS_OK ? PT_FITS
                    : st == MLSYS_ERR_INFEASIBLE ? PT_INFEASIBLE
                    : st == MLSYS_ERR_TIMEOUT ? PT_TIMEOUT : PT_ERROR;
        if (p->status == PT_ERROR) nerr++;
        if (st == MLSYS_OK) {
          p->seconds = m.solve_seconds;
          p->has_schedule = 1;
          p->cost = m.cost;
          p->peak_total = m.peak;
          p->optimal = m.optimal;
          p->bound = m.bound;
          p->milp_ran = 1;
          snprintf(p->schedule, sizeof p->schedule, "%s", m.method);
          snprintf(p->source, sizeof p->source, "%s", m.method);
          p->overhead = p->baseline_cost > 0 ? m.cost / p->baseline_cost : 1.0;
          mlsys_remat_monet_schedule_free(&m);
        }
      } else {
        o.method = ms[mi];
        st = mlsys_remat_solve(&g, budgets[bi], &o, &s);
        if (st != MLSYS_OK) snprintf(p->err, sizeof p->err, "%s", mlsys_last_error());
        p->status = st == MLSYS_OK ? PT_FITS
                    : st == MLSYS_ERR_INFEASIBLE ? PT_INFEASIBLE
                    : st == MLSYS_ERR_TIMEOUT ? PT_TIMEOUT : PT_ERROR;
        if (p->status == PT_ERROR) nerr++;
        p->seconds = s.solve_seconds;
        if (s.n) {
          p->has_schedule = 1;
          p->cost = s.cost;
          if (s.baseline_cost > 0) p->baseline_cost = s.baseline_cost;
          p->peak_total = s.peak_total;
          p->optimal = st == MLSYS_OK && s.optimal;
          p->bound = st == MLSYS_OK ? s.bound : NAN;
          snprintf(p->schedule, sizeof p->schedule, "%s", s.method);
          snprintf(p->source, sizeof p->source, "%s", s.source);
          p->milp_ran = s.milp_ran;
          snprintf(p->note, sizeof p->note, "%s", s.solver_note);
          if (st == MLSYS_OK) p->overhead = p->baseline_cost > 0 ? s.cost / p->baseline_cost : 1.0;
        }
        mlsys_remat_schedule_free(&s);
      }
      done++;
      if (progress) {
        mlsys_progress_end(&prog);
        fprintf(stderr, "sweep [%d/%d] %s at %s: %s", done, nm * nb, method_name(ms[mi]),
                cli_fmt_bytes(budgets[bi], b1, sizeof b1), pt_status_name[p->status]);
        if (p->status == PT_FITS) fprintf(stderr, " %.4fx%s", p->overhead, p->optimal ? " (optimal)" : "");
        fprintf(stderr, " in %.2f s\n", p->seconds);
      }
    }
    if (gst == MLSYS_OK && is_monet(ms[mi])) mlsys_remat_monet_graph_free(&sg);
  }
  mlsys_progress_end(&prog);

  if (json) {
    sweep_json(&res, ck.peak_total, lb, min_budget, proven, o.time_limit);
  } else if (csv) {
    sweep_csv(&res);
  } else {
    printf("graph %s", g.name ? g.name : graph);
    if (g.batch > 0) printf(" (batch %d)", g.batch);
    printf(": %d nodes; fixed memory %s; checkpoint-all peak %s; nothing fits below %s\n", g.dag.n,
           cli_fmt_bytes(fixed, b1, sizeof b1), cli_fmt_bytes(ck.peak_total, b2, sizeof b2),
           cli_fmt_bytes(lb, b3, sizeof b3));
    if (min_budget)
      printf("smallest feasible budget %s (%llu bytes)%s\n", cli_fmt_bytes(min_budget, b1, sizeof b1),
             (unsigned long long)min_budget, proven ? ", proven" : ", not proven minimal");
    printf("%d budgets from %s to %s; overhead = compute / checkpoint-all compute (* proven optimal)\n\n", nb,
           cli_fmt_bytes(budgets[0], b1, sizeof b1), cli_fmt_bytes(budgets[nb - 1], b2, sizeof b2));
    sweep_table(&res);
  }
  if (svg && write_svg(svg, &res) != CLI_OK) rc = CLI_ERR;
  if (nerr) {
    for (mi = 0; mi < nm; mi++)
      for (bi = 0; bi < nb; bi++)
        if (sweep_at(&res, mi, bi)->status == PT_ERROR) {
          cli_fail(cmd, "%d solve(s) failed; the first: %s at %llu bytes: %s", nerr, method_name(ms[mi]),
                   (unsigned long long)budgets[bi], sweep_at(&res, mi, bi)->err);
          mi = nm;
          break;
        }
    rc = CLI_ERR;
  }
  mlsys_free(res.pts);
out:
  mlsys_free(budgets);
  mlsys_remat_schedule_free(&ck);
  mlsys_remat_graph_free(&g);
  return rc;
}

/* ================================================================================================================
   max-batch
   ================================================================================================================ */
typedef struct {
  mlsys_remat_method m;
  mlsys_status st;
  int batch;
  double seconds, cost, baseline_cost;
  uint64_t peak_total, peak;
  int milp_ran;
  char schedule[64], source[64], note[160], err[320];
} mb_row;

static void mb_run(const mlsys_remat_graph *g, uint64_t memory, mlsys_remat_method m, double cap,
                   const mlsys_remat_opts *o, mb_row *row) {
  mlsys_remat_schedule s;
  double t0 = mlsys_now();
  memset(row, 0, sizeof *row);
  row->m = m;
  row->st = mlsys_remat_max_batch(g, memory, m, cap, o, &row->batch, &s);
  row->seconds = mlsys_now() - t0;
  if (row->st != MLSYS_OK) snprintf(row->err, sizeof row->err, "%s", mlsys_last_error());
  if (row->st == MLSYS_OK) {
    row->cost = s.cost;
    row->baseline_cost = s.baseline_cost;
    row->peak_total = s.peak_total;
    row->peak = s.peak;
    snprintf(row->schedule, sizeof row->schedule, "%s", s.method);
    snprintf(row->source, sizeof row->source, "%s", s.source);
    snprintf(row->note, sizeof row->note, "%s", s.solver_note);
    row->milp_ran = s.milp_ran;
  }
  mlsys_remat_schedule_free(&s);
}

/* MONeT's largest batch: exponential search and bisection over batches, one ILP per probe at the memory size; a
   probe fits when the solve returns a schedule whose cost is at most cap times that batch's checkpoint-all cost
   (Σ of the scaled graph's costs). Exact when every probe is proven optimal (the optimum is monotone in the
   batch); otherwise a lower bound. */
static void mb_run_monet(const mlsys_remat_graph *g, uint64_t memory, mlsys_remat_method m, double cap,
                         const mlsys_remat_opts *o, mb_row *row) {
  int lo = 0, hi = -1, b = 1;
  double t0 = mlsys_now();
  memset(row, 0, sizeof *row);
  row->m = m;
  row->st = MLSYS_OK;
  /* fits(b): 1 yes (row filled), 0 no, -1 error (row->st, row->err) */
  while (hi < 0 || hi - lo > 1) {
    mlsys_remat_graph gb;
    mlsys_remat_monet_graph sg;
    mlsys_remat_monet_schedule s;
    mlsys_status st;
    double base = 0;
    int fit = 0;
    if ((st = mlsys_remat_graph_scale_batch(g, b, &gb)) != MLSYS_OK) {
      row->st = st;
      snprintf(row->err, sizeof row->err, "batch %d: %s", b, mlsys_last_error());
      break;
    }
    if ((st = monet_graph(&gb, m, &sg)) != MLSYS_OK) {
      row->st = st;
      snprintf(row->err, sizeof row->err, "%s", mlsys_last_error());
      mlsys_remat_graph_free(&gb);
      break;
    }
    for (int v = 0; v < gb.dag.n; v++) base += gb.dag.cost[v];
    memset(&s, 0, sizeof s);
    st = monet_point(&sg, memory, o, &s);
    if (st == MLSYS_OK && s.cost <= cap * base * (1 + 1e-12)) {
      fit = 1;
      row->batch = b;
      row->cost = s.cost;
      row->baseline_cost = base;
      row->peak_total = s.peak;
      row->peak = s.peak - sg.fixed;
      snprintf(row->schedule, sizeof row->schedule, "%s", s.method);
      snprintf(row->source, sizeof row->source, "%s", s.method);
      snprintf(row->note, sizeof row->note, "%s", s.optimal ? "" : "a probe stopped at the time limit");
      row->milp_ran = 1;
    } else if (st != MLSYS_OK && st != MLSYS_ERR_INFEASIBLE && st != MLSYS_ERR_TIMEOUT) {
      row->st = st;
      snprintf(row->err, sizeof row->err, "batch %d: %s", b, mlsys_last_error());
    } else if (lo == 0) {
      snprintf(row->err, sizeof row->err, "batch %d: %s", b,
               st == MLSYS_OK ? "over the cost cap" : mlsys_last_error());
    }
    if (s.R) mlsys_remat_monet_schedule_free(&s);
    mlsys_remat_monet_graph_free(&sg);
    mlsys_remat_graph_free(&gb);
    if (row->st != MLSYS_OK) break;
    if (fit) lo = b; else hi = b;
    if (hi < 0) {
      if (b >= (1 << 24)) break;   /* fits at 16M samples: stop there */
      b *= 2;
    } else {
      b = lo + (hi - lo) / 2;
    }
  }
  if (row->st == MLSYS_OK && lo == 0) row->st = MLSYS_ERR_INFEASIBLE;
  if (row->st == MLSYS_OK) row->err[0] = 0;
  row->seconds = mlsys_now() - t0;
}

int cmd_remat_max_batch(int argc, char **argv) {
  static const char *cmd = "remat max-batch";
  const char *graph = NULL, *memory = NULL, *methods = NULL, *caps = NULL, *tl = NULL, *json = NULL,
             *progress = NULL, *solver = NULL, *help = NULL;
  cli_opt opts[] = {
      {"--graph", 1, &graph},   {"--memory", 1, &memory}, {"--methods", 1, &methods}, {"--cost-cap", 1, &caps},
      {"--time-limit", 1, &tl}, {"--json", 0, &json},     {"--progress", 0, &progress}, {"--solver", 1, &solver},
      {"--help", 0, &help},
  };
  mlsys_remat_method ms[SWEEP_MAXM];
  mb_row rows[SWEEP_MAXM], ref_ck, ref_chen, *ck = NULL, *chen = NULL;
  mlsys_remat_graph g;
  mlsys_remat_opts o;
  uint64_t mem;
  double cap = 0;
  int nm, i, rc = CLI_OK, any = 0;
  char b1[32];
  if (cli_parse(argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]), cmd) != CLI_OK) return CLI_USAGE;
  if (help) { fputs(max_batch_help, stdout); return CLI_OK; }
  if (!graph) return cli_usage_error(cmd, "--graph FILE is required");
  if (!memory) return cli_usage_error(cmd, "--memory SIZE is required (e.g. 16GiB)");
  if (cli_parse_bytes(memory, &mem) || mem == 0)
    return cli_usage_error(cmd, "bad --memory '%s' (bytes, e.g. 17179869184, 16GiB, 16GB)", memory);
  if ((nm = parse_methods(cmd, methods, ms)) < 0) return CLI_USAGE;
  if (caps && (cli_parse_double(caps, &cap) || !(cap >= 1)))
    return cli_usage_error(cmd, "--cost-cap needs a multiple of the checkpoint-all cost, at least 1 (inf: no cap), "
                           "got '%s'", caps);
  memset(&o, 0, sizeof o);
  if (parse_time_limit(cmd, tl, &o.time_limit) != CLI_OK) return CLI_USAGE;
  if ((i = parse_solver(cmd, solver, &o.backend)) != CLI_OK) return i;
  o.progress = 1;   /* a status line while stderr is a terminal */
  if (mlsys_remat_graph_load(graph, &g) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if (g.batch <= 0) {
    rc = cli_fail(cmd, "%s: the graph has no batch size (\"batch\" in the JSON form, a 'batch N' line in the text "
                  "form), so it cannot be scaled", graph);
    mlsys_remat_graph_free(&g);
    return rc;
  }
  if (!caps) cap = mlsys_remat_one_extra_forward_cap(&g);
  for (i = 0; i < nm; i++) {
    if (progress) fprintf(stderr, "max-batch: %s ...\n", method_name(ms[i]));
    if (is_monet(ms[i])) mb_run_monet(&g, mem, ms[i], cap, &o, &rows[i]);
    else mb_run(&g, mem, ms[i], cap, &o, &rows[i]);
    if (progress)
      fprintf(stderr, "max-batch: %s: %d in %.1f s%s%s\n", method_name(ms[i]), rows[i].batch,
              rows[i].seconds, rows[i].st != MLSYS_OK ? ": " : "", rows[i].st != MLSYS_OK ? rows[i].err : "");
    if (ms[i] == MLSYS_REMAT_CHECKPOINT_ALL) ck = &rows[i];
    if (ms[i] == MLSYS_REMAT_CHEN_SQRTN) chen = &rows[i];
    if (rows[i].st == MLSYS_OK) any = 1;
    else if (rows[i].st != MLSYS_ERR_INFEASIBLE) rc = CLI_ERR;
  }
  /* the references of the gains, when not asked for */
  if (!ck) { mb_run(&g, mem, MLSYS_REMAT_CHECKPOINT_ALL, cap, &o, &ref_ck); ck = &ref_ck; }
  if (!chen) { mb_run(&g, mem, MLSYS_REMAT_CHEN_SQRTN, cap, &o, &ref_chen); chen = &ref_chen; }
  if (json) {
    mlsys_json_writer w;
    mlsys_jw_init(&w, stdout, 1);
    mlsys_jw_object(&w);
    mlsys_jw_key(&w, "graph"); mlsys_jw_str(&w, g.name);
    mlsys_jw_key(&w, "batch"); mlsys_jw_i64(&w, g.batch);
    mlsys_jw_key(&w, "memory"); mlsys_jw_u64(&w, mem);
    json_num(&w, "cost_cap", cap);
    mlsys_jw_key(&w, "cost_cap_default"); mlsys_jw_bool(&w, caps == NULL);
    mlsys_jw_key(&w, "results");
    mlsys_jw_array(&w);
    for (i = 0; i < nm; i++) {
      const mb_row *r = &rows[i];
      int ok = r->st == MLSYS_OK;
      mlsys_jw_object(&w);
      mlsys_jw_key(&w, "method"); mlsys_jw_str(&w, method_name(r->m));
      mlsys_jw_key(&w, "status"); mlsys_jw_str(&w, ok ? "ok" : r->st == MLSYS_ERR_INFEASIBLE ? "infeasible" : "error");
      mlsys_jw_key(&w, "max_batch"); mlsys_jw_i64(&w, r->batch);
      json_num(&w, "gain_vs_checkpoint_all", ck->batch > 0 ? (double)r->batch / ck->batch : NAN);
      json_num(&w, "gain_vs_chen", chen->batch > 0 ? (double)r->batch / chen->batch : NAN);
      json_num(&w, "overhead", ok && r->baseline_cost > 0 ? r->cost / r->baseline_cost : NAN);
      json_num(&w, "compute_cost", ok ? r->cost : NAN);
      mlsys_jw_key(&w, "peak_memory"); if (ok) mlsys_jw_u64(&w, r->peak_total); else mlsys_jw_null(&w);
      mlsys_jw_key(&w, "activation_peak"); if (ok) mlsys_jw_u64(&w, r->peak); else mlsys_jw_null(&w);
      json_num(&w, "seconds", r->seconds);
      mlsys_jw_key(&w, "schedule"); mlsys_jw_str(&w, ok ? r->schedule : NULL);
      mlsys_jw_key(&w, "source"); mlsys_jw_str(&w, ok ? r->source : NULL);
      mlsys_jw_key(&w, "milp_ran"); mlsys_jw_bool(&w, ok && r->milp_ran);
      mlsys_jw_key(&w, "note"); mlsys_jw_str(&w, ok ? r->note : NULL);
      mlsys_jw_key(&w, "error"); mlsys_jw_str(&w, ok ? NULL : r->err);
      mlsys_jw_end(&w);
    }
    mlsys_jw_end(&w);
    mlsys_jw_end(&w);
    if (mlsys_jw_finish(&w) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
  } else {
    printf("graph %s (batch %d in the file): %d nodes; memory %s; ", g.name ? g.name : graph, g.batch, g.dag.n,
           cli_fmt_bytes(mem, b1, sizeof b1));
    if (isinf(cap)) printf("no cost cap\n");
    else printf("cost cap %.4fx the checkpoint-all compute%s\n", cap, caps ? "" : " (one extra forward pass)");
    printf("%-15s %10s %9s %9s %10s %12s %9s  %s\n", "method", "max batch", "vs ckpt", "vs chen", "overhead", "peak",
           "time", "schedule from");
    for (i = 0; i < nm; i++) {
      const mb_row *r = &rows[i];
      char g1[16] = "-", g2[16] = "-", ov[16] = "-", pk[32] = "-";
      if (ck->batch > 0) snprintf(g1, sizeof g1, "%.2fx", (double)r->batch / ck->batch);
      if (chen->batch > 0) snprintf(g2, sizeof g2, "%.2fx", (double)r->batch / chen->batch);
      if (r->st == MLSYS_OK) {
        snprintf(ov, sizeof ov, "%.4fx", r->baseline_cost > 0 ? r->cost / r->baseline_cost : 1.0);
        cli_fmt_bytes(r->peak_total, pk, sizeof pk);
      }
      printf("%-15s %10d %9s %9s %10s %12s %7.1f s  %s%s\n", method_name(r->m), r->batch, g1, g2, ov, pk,
             r->seconds, r->st == MLSYS_OK ? r->source : "-",
             r->st == MLSYS_OK && r->m == MLSYS_REMAT_MILP && !r->milp_ran ? " (no MILP ran)" : "");
      if (r->st != MLSYS_OK && r->st != MLSYS_ERR_INFEASIBLE) printf("  error: %s\n", r->err);
    }
  }
  for (i = 0; i < nm; i++)
    if (rows[i].st != MLSYS_OK && rows[i].st != MLSYS_ERR_INFEASIBLE)
      cli_fail(cmd, "%s: %s", method_name(rows[i].m), rows[i].err);
  if (!any && rc == CLI_OK) rc = cli_fail(cmd, "no method fits %s even at batch 1: %s", cli_fmt_bytes(mem, b1, sizeof b1),
                                          nm > 0 ? rows[0].err : "");
  mlsys_remat_graph_free(&g);
  return rc;
}
