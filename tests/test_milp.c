/* tests/test_milp.c — the MILP builder (mlsys_common.h section 7) against independent oracles.

   Every optimum the builder reports is checked against at least one answer it did not compute: enumeration
   (knapsack, assignment, set cover), a greedy fractional knapsack (LP relaxations), hand-solved models, and the
   command-line solvers glpsol (GLPK) and cbc run on the files mlsys_milp_write exports (LP and MPS). Both
   backends are exercised: lp_solve always, CBC when compiled in (-DMLSYS_MILP_CBC). */
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include "tests/test.h"

#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------------------------
   Helpers
   --------------------------------------------------------------------------------------------------------------- */
static const mlsys_milp_backend backends[2] = {MLSYS_SOLVER_LPSOLVE, MLSYS_SOLVER_CBC};
/* The time limit of solves whose status is checked: a safety net against a hang that never binds on these models
   (each solves in well under a second), so no verdict depends on the machine's load. */
#define NEVER_BINDS 600.0
static int nbackends(void) { return mlsys_milp_has_backend(MLSYS_SOLVER_CBC) ? 2 : 1; }

/* The error detail, shortened for messages (keeps -Wformat-truncation quiet). */
static const char *lasterr(void) {
  static _Thread_local char buf[200];
  snprintf(buf, sizeof buf, "%.199s", mlsys_last_error());
  return buf;
}

static int rel_eq(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(1.0, fmax(fabs(a), fabs(b))); }

/* A scratch directory for exported models, made once and removed at exit. */
static char tmpdir[64];
static void tmpdir_remove(void) {
  DIR *d;
  struct dirent *e;
  char p[512];
  if (!tmpdir[0] || !(d = opendir(tmpdir))) return;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%.400s", tmpdir, e->d_name);
      remove(p);
    }
  closedir(d);
  rmdir(tmpdir);
}
static const char *scratch(void) {
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mlsys_test_milp_XXXXXX");
    if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; return NULL; }
    atexit(tmpdir_remove);
  }
  return tmpdir;
}

static int have_tool(const char *name) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

static char *slurp(const char *path) {
  char *data = NULL;
  size_t len;
  if (mlsys_read_file(path, &data, &len) != MLSYS_OK) return NULL;
  return data;
}

/* What an exported file says about the objective it does not carry: the constant (a comment) and whether a
   maximisation was written negated (MPS). */
typedef struct { double constant; int negated; } file_info;
static int read_file_info(const char *path, file_info *fi) {
  char *s = slurp(path), *p;
  const char *key = "objective constant (not part of the model below): ";
  if (!s) return 0;
  fi->constant = 0;
  fi->negated = strstr(s, "maximisation, written as minimisation of the negated objective") != NULL;
  if ((p = strstr(s, key))) fi->constant = strtod(p + strlen(key), NULL);
  mlsys_free(s);
  return 1;
}

/* glpsol on an exported file: 1 with the optimum in *obj, 0 when glpsol did not report an optimum. */
static int glpsol_solve(const char *path, int mps, int nomip, double *obj, char *why, size_t whylen) {
  char out[300], cmd[1400], *s, *p;
  int ok = 0;
  snprintf(out, sizeof out, "%s.glpsol.txt", path);
  snprintf(cmd, sizeof cmd, "glpsol %s '%s' %s -o '%s' >'%s.log' 2>&1", mps ? "--freemps" : "--lp", path,
           nomip ? "--nomip" : "", out, out);
  if (system(cmd) != 0) { snprintf(why, whylen, "glpsol failed: %.100s", cmd); return 0; }
  if (!(s = slurp(out))) { snprintf(why, whylen, "no glpsol output %.100s", out); return 0; }
  p = strstr(s, "Status:");
  if (!p) snprintf(why, whylen, "glpsol output lacks Status");
  else {
    char st[64] = {0};
    sscanf(p + 7, " %63[A-Z ]", st);
    while (st[0] && st[strlen(st) - 1] == ' ') st[strlen(st) - 1] = 0;
    if (strcmp(st, "OPTIMAL") != 0 && strcmp(st, "INTEGER OPTIMAL") != 0) snprintf(why, whylen, "glpsol status '%s'", st);
    else if (!(p = strstr(s, "Objective:")) || !(p = strchr(p, '='))) snprintf(why, whylen, "glpsol: no objective");
    else { *obj = strtod(p + 1, NULL); ok = 1; }
  }
  mlsys_free(s);
  return ok;
}

/* The cbc command-line solver: the first line of its solution file reads "Optimal - objective value X". */
static int cbc_cli_solve(const char *path, int relax, double *obj, char *why, size_t whylen) {
  char sol[300], cmd[1400], *s, *p;
  int ok = 0;
  snprintf(sol, sizeof sol, "%s.cbc.txt", path);
  remove(sol);
  snprintf(cmd, sizeof cmd, "cbc '%s' %s -solu '%s' >'%s.log' 2>&1", path, relax ? "-initialSolve" : "-solve", sol,
           sol);
  if (system(cmd) != 0) { snprintf(why, whylen, "cbc failed: %.100s", cmd); return 0; }
  if (!(s = slurp(sol))) { snprintf(why, whylen, "no cbc solution file %.100s", sol); return 0; }
  if (strncmp(s, "Optimal", 7) != 0 || !(p = strstr(s, "objective value ")))
    snprintf(why, whylen, "cbc: %.60s", s);
  else { *obj = strtod(p + 16, NULL); ok = 1; }
  mlsys_free(s);
  return ok;
}

/* Solve with one backend and check what every optimal result must satisfy. Returns the status. */
static mlsys_status solve_checked(const mlsys_milp *m, const mlsys_milp_opts *o, mlsys_milp_result *r,
                                  const char *what) {
  mlsys_status st = mlsys_milp_solve(m, o, r);
  /* the default backend resolves to lp_solve (the zero-dependency default of DESIGN.md) */
  CHECK_MSG(r->backend == (o->backend == MLSYS_SOLVER_DEFAULT ? MLSYS_SOLVER_LPSOLVE : o->backend), "%s", what);
  if (st == MLSYS_OK) {
    CHECK_MSG(r->x != NULL, "%s", what);
    CHECK_MSG(r->status == MLSYS_MILP_OPTIMAL || r->status == MLSYS_MILP_FEASIBLE, "%s: status %d", what, r->status);
    CHECK_EQ_INT(r->nvars, mlsys_milp_num_vars(m));
    if (r->x) {
      double viol = mlsys_milp_max_violation(m, r->x, !o->relax), ev = mlsys_milp_eval(m, r->x);
      CHECK_MSG(viol < 1e-6, "%s (%s): violation %g", what, mlsys_milp_backend_name(o->backend), viol);
      CHECK_MSG(ev == r->objective, "%s (%s): eval %.17g != objective %.17g", what,
                mlsys_milp_backend_name(o->backend), ev, r->objective);
    }
  } else {
    CHECK_MSG(r->x == NULL, "%s", what);
    CHECK_MSG(mlsys_last_error()[0] != 0, "%s: empty error detail", what);
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   Random instance families, each with its own brute-force optimum where enumeration is cheap
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_milp *m;
  char name[64];
  double constant;   /* the objective constant it was given */
  int maximize;
  int has_brute;
  double brute;      /* optimum by enumeration, constant included, in the model's sense */
} instance;

/* 0/1 knapsack with a few general-integer "multiple copies" items (bounds 2–3); max Σ v·x, or min Σ −v·x. */
static void gen_knapsack(mlsys_rng *g, instance *I, int id, int multi) {
  int n = mlsys_rng_range(g, 5, 14), ub[14], cols[14], i, nmulti = multi ? mlsys_rng_range(g, 1, 3) : 0;
  double w[14], v[14], cap = 0, c = mlsys_rng_range(g, -50, 50) + 0.25, best = -1;
  int maximize = mlsys_rng_below(g, 3) != 0;
  long combos = 1, k;
  mlsys_milp_create(&I->m);
  for (i = 0; i < n; i++) { w[i] = mlsys_rng_range(g, 1, 30); v[i] = mlsys_rng_range(g, 1, 40); ub[i] = 1; }
  for (i = 0; i < nmulti; i++) ub[mlsys_rng_below(g, (uint64_t)n)] = mlsys_rng_range(g, 2, 3);
  for (i = 0; i < n; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "item%d", i);
    cols[i] = mlsys_milp_add_var(I->m, ub[i] == 1 ? MLSYS_VAR_BINARY : MLSYS_VAR_INTEGER, 0, ub[i],
                                 maximize ? v[i] : -v[i], i % 2 ? nm : NULL);
    cap += w[i] * ub[i];
    combos *= ub[i] + 1;
  }
  cap = floor(cap * (0.25 + 0.3 * mlsys_rng_uniform(g)));
  mlsys_milp_add_row(I->m, n, cols, w, MLSYS_ROW_LE, cap, "capacity");
  mlsys_milp_set_maximize(I->m, I->maximize = maximize);
  mlsys_milp_set_obj_constant(I->m, I->constant = c);
  /* enumerate every x in Π [0, ub_i] (mixed radix) */
  for (k = 0; k < combos; k++) {
    long t = k;
    double ww = 0, vv = 0;
    for (i = 0; i < n; i++) { int xi = (int)(t % (ub[i] + 1)); t /= ub[i] + 1; ww += w[i] * xi; vv += v[i] * xi; }
    if (ww <= cap && vv > best) best = vv;
  }
  I->has_brute = 1;
  I->brute = (maximize ? best : -best) + c;
  snprintf(I->name, sizeof I->name, "knapsack#%d(n=%d,%s%s)", id, n, maximize ? "max" : "min", nmulti ? ",int" : "");
}

/* n×n assignment with equality rows; min Σ c·x (or max of a profit). Brute force over the n! permutations. */
static double best_perm(const double *c, int n, int maximize, int row, unsigned used) {
  double best = maximize ? -1e300 : 1e300;
  int j;
  if (row == n) return 0;
  for (j = 0; j < n; j++)
    if (!(used & (1u << j))) {
      double v = c[row * n + j] + best_perm(c, n, maximize, row + 1, used | (1u << j));
      if (maximize ? v > best : v < best) best = v;
    }
  return best;
}
static void gen_assignment(mlsys_rng *g, instance *I, int id) {
  int n = mlsys_rng_range(g, 3, 6), i, j, cols[6];
  double c[36], ones[6] = {1, 1, 1, 1, 1, 1}, k = mlsys_rng_range(g, -20, 20) - 0.5;
  int maximize = mlsys_rng_below(g, 4) == 0;
  mlsys_milp_create(&I->m);
  for (i = 0; i < n * n; i++) {
    char nm[16];
    c[i] = mlsys_rng_range(g, 1, 50);
    snprintf(nm, sizeof nm, "a_%d_%d", i / n, i % n);
    mlsys_milp_add_var(I->m, MLSYS_VAR_BINARY, 0, 1, c[i], nm);
  }
  for (i = 0; i < n; i++) {
    for (j = 0; j < n; j++) cols[j] = i * n + j;
    mlsys_milp_add_row(I->m, n, cols, ones, MLSYS_ROW_EQ, 1, NULL);
  }
  for (j = 0; j < n; j++) {
    for (i = 0; i < n; i++) cols[i] = i * n + j;
    mlsys_milp_add_row(I->m, n, cols, ones, MLSYS_ROW_EQ, 1, NULL);
  }
  mlsys_milp_set_maximize(I->m, I->maximize = maximize);
  mlsys_milp_set_obj_constant(I->m, I->constant = k);
  I->has_brute = 1;
  I->brute = best_perm(c, n, maximize, 0, 0) + k;
  snprintf(I->name, sizeof I->name, "assignment#%d(n=%d,%s)", id, n, maximize ? "max" : "min");
}

/* Weighted set cover: every element covered at least once (some elements twice). Brute force over subsets. */
static void gen_cover(mlsys_rng *g, instance *I, int id) {
  int ne = mlsys_rng_range(g, 6, 15), ns = mlsys_rng_range(g, 5, 15), e, s, cols[15];
  unsigned cov[15] = {0};   /* cov[s]: bit e set when set s covers element e */
  int need[15];
  double cost[15], ones[15], c = mlsys_rng_range(g, 0, 9), best = 1e300;
  long sub;
  mlsys_milp_create(&I->m);
  for (s = 0; s < ns; s++) {
    cost[s] = mlsys_rng_range(g, 1, 20);
    ones[s] = 1;
    for (e = 0; e < ne; e++)
      if (mlsys_rng_uniform(g) < 0.3) cov[s] |= 1u << e;
  }
  for (e = 0; e < ne; e++) {
    int cnt = 0;
    need[e] = mlsys_rng_below(g, 5) == 0 ? 2 : 1;
    for (s = 0; s < ns; s++) cnt += (cov[s] >> e) & 1;
    while (cnt < need[e]) {   /* make the element coverable often enough */
      int t = (int)mlsys_rng_below(g, (uint64_t)ns);
      if (!((cov[t] >> e) & 1)) { cov[t] |= 1u << e; cnt++; }
    }
  }
  for (s = 0; s < ns; s++) mlsys_milp_add_var(I->m, MLSYS_VAR_BINARY, 0, 1, cost[s], NULL);
  for (e = 0; e < ne; e++) {
    int k = 0;
    for (s = 0; s < ns; s++)
      if ((cov[s] >> e) & 1) cols[k++] = s;
    mlsys_milp_add_row(I->m, k, cols, ones, MLSYS_ROW_GE, need[e], NULL);
  }
  mlsys_milp_set_obj_constant(I->m, I->constant = c);
  for (sub = 0; sub < (1L << ns); sub++) {
    double cc = 0;
    int ok = 1;
    for (s = 0; s < ns; s++)
      if ((sub >> s) & 1) cc += cost[s];
    if (cc >= best) continue;
    for (e = 0; e < ne && ok; e++) {
      int cnt = 0;
      for (s = 0; s < ns; s++) cnt += ((sub >> s) & 1) && ((cov[s] >> e) & 1);
      ok = cnt >= need[e];
    }
    if (ok) best = cc;
  }
  I->has_brute = 1;
  I->brute = best + c;
  snprintf(I->name, sizeof I->name, "cover#%d(%d elements,%d sets)", id, ne, ns);
}

/* Mixed-integer: integers with negative bounds, continuous columns, a free column and one bounded only above,
   random rows around a known feasible point (so the model is feasible), all columns kept bounded by rows. */
static void gen_mixed(mlsys_rng *g, instance *I, int id) {
  int ni = mlsys_rng_range(g, 2, 5), nc = mlsys_rng_range(g, 1, 3), nr = mlsys_rng_range(g, 2, 5), j, i, n;
  int cols[16];
  double p[16], vals[16], lo, hi;
  int maximize = (int)mlsys_rng_below(g, 2);
  mlsys_milp_create(&I->m);
  for (j = 0; j < ni; j++) {   /* integers in [lo, hi], lo possibly negative */
    lo = mlsys_rng_range(g, -6, 0);
    hi = lo + mlsys_rng_range(g, 1, 8);
    mlsys_milp_add_var(I->m, MLSYS_VAR_INTEGER, lo, hi, mlsys_rng_range(g, -5, 5), NULL);
    p[j] = mlsys_rng_range(g, (int)lo, (int)hi);
  }
  for (j = 0; j < nc; j++) {   /* continuous in [lo, hi] */
    lo = mlsys_rng_range(g, -10, 0) - 0.5;
    hi = lo + mlsys_rng_range(g, 1, 12);
    mlsys_milp_add_var(I->m, MLSYS_VAR_CONTINUOUS, lo, hi, mlsys_rng_range(g, -6, 6) * 0.5, NULL);
    p[ni + j] = lo + (hi - lo) * mlsys_rng_uniform(g);
  }
  n = ni + nc;
  mlsys_milp_add_var(I->m, MLSYS_VAR_CONTINUOUS, -MLSYS_INF, MLSYS_INF, mlsys_rng_range(g, -3, 3) + 0.5, "zfree");
  mlsys_milp_add_var(I->m, MLSYS_VAR_CONTINUOUS, -MLSYS_INF, 6, mlsys_rng_range(g, 1, 3) * (maximize ? -1 : 1),
                     "wneg");
  p[n] = 0;
  p[n + 1] = -1;
  for (i = 0; i < nr; i++) {   /* a·x (<=, >=, =) a·p ± slack */
    double act = 0;
    int sense = (int)mlsys_rng_below(g, 3), k = 0;
    for (j = 0; j < n; j++)
      if (mlsys_rng_uniform(g) < 0.7) {
        cols[k] = j;
        vals[k] = mlsys_rng_range(g, -5, 5);
        act += vals[k] * p[j];
        k++;
      }
    if (sense == MLSYS_ROW_EQ) {   /* keep equalities satisfiable: they include a continuous column */
      cols[k] = ni + (int)mlsys_rng_below(g, (uint64_t)nc);
      vals[k] = 1;
      act += p[cols[k]];
      k++;
    }
    mlsys_milp_add_row(I->m, k, cols, vals, (mlsys_row_sense)sense,
                       sense == MLSYS_ROW_LE ? act + mlsys_rng_range(g, 0, 4)
                                             : sense == MLSYS_ROW_GE ? act - mlsys_rng_range(g, 0, 4) : act,
                       NULL);
  }
  /* the free column between two rows, wneg bounded below by a row */
  for (j = 0; j < n; j++) { cols[j] = j; vals[j] = (j % 3) - 1; }
  cols[n] = n;
  vals[n] = 1;
  {
    double act = 0;
    for (j = 0; j < n; j++) act += vals[j] * p[j];
    mlsys_milp_add_row(I->m, n + 1, cols, vals, MLSYS_ROW_LE, act + 7, "zup");
    mlsys_milp_add_row(I->m, n + 1, cols, vals, MLSYS_ROW_GE, act - 5, "zdown");
  }
  cols[0] = n + 1; vals[0] = 1;
  cols[1] = 0; vals[1] = 1;
  mlsys_milp_add_row(I->m, 2, cols, vals, MLSYS_ROW_GE, p[0] - 4, "wlow");
  mlsys_milp_set_maximize(I->m, I->maximize = maximize);
  mlsys_milp_set_obj_constant(I->m, I->constant = mlsys_rng_range(g, -100, 100) + 0.125);
  I->has_brute = 0;
  snprintf(I->name, sizeof I->name, "mixed#%d(%d int,%d cont,%s)", id, ni, nc + 2, maximize ? "max" : "min");
}

/* ---------------------------------------------------------------------------------------------------------------
   1. Cross-check on random instances
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  int instances, brute, per_backend[2], glpsol_lp, glpsol_mps, cbc_lp, cbc_mps;
} xstats;

/* The optimum of an exported file by one external solver, in the model's sense with the constant. */
static void external_check(const instance *I, double expect, int mps, int use_cbc, xstats *xs) {
  char path[256], why[256] = "";
  file_info fi;
  double v = NAN;
  int ok;
  snprintf(path, sizeof path, "%s/model%s", scratch(), mps ? ".mps" : ".lp");
  REQUIRE_OK(mlsys_milp_write(I->m, path));
  REQUIRE(read_file_info(path, &fi));
  CHECK_MSG(fi.constant == I->constant, "%s: the file's constant comment says %.17g, not %.17g", I->name,
            fi.constant, I->constant);
  ok = use_cbc ? cbc_cli_solve(path, 0, &v, why, sizeof why) : glpsol_solve(path, mps, 0, &v, why, sizeof why);
  CHECK_MSG(ok, "%s: %s on %s: %s", I->name, use_cbc ? "cbc" : "glpsol", mps ? "MPS" : "LP", why);
  if (!ok) return;
  v = (fi.negated ? -v : v) + fi.constant;
  CHECK_MSG(rel_eq(v, expect, 1e-6), "%s: %s on the %s export: %.10g, builder %.10g", I->name,
            use_cbc ? "cbc" : "glpsol", mps ? "MPS" : "LP", v, expect);
  if (use_cbc) (mps ? xs->cbc_mps++ : xs->cbc_lp++);
  else (mps ? xs->glpsol_mps++ : xs->glpsol_lp++);
}

static void cross_check(instance *I, int glpsol, int cbc, xstats *xs) {
  double obj[2] = {NAN, NAN};
  int b, mps;
  for (b = 0; b < nbackends(); b++) {
    mlsys_milp_opts o = {0};
    mlsys_milp_result r;
    o.backend = backends[b];
    if (solve_checked(I->m, &o, &r, I->name) == MLSYS_OK) {
      CHECK_MSG(r.status == MLSYS_MILP_OPTIMAL, "%s (%s): status %s", I->name, mlsys_milp_backend_name(o.backend),
                mlsys_milp_status_str(r.status));
      CHECK_MSG(r.bound == r.objective && r.gap == 0, "%s: optimal with bound %g, objective %g, gap %g", I->name,
                r.bound, r.objective, r.gap);
      CHECK(r.from_incumbent == 0);
      CHECK(r.seconds >= 0);
      obj[b] = r.objective;
      xs->per_backend[b]++;
    } else {
      CHECK_MSG(0, "%s (%s): %s", I->name, mlsys_milp_backend_name(o.backend), lasterr());
    }
    mlsys_milp_result_free(&r);
  }
  if (nbackends() == 2)
    CHECK_MSG(rel_eq(obj[0], obj[1], 1e-6), "%s: lp_solve %.10g, cbc %.10g", I->name, obj[0], obj[1]);
  if (I->has_brute) {
    CHECK_MSG(rel_eq(obj[0], I->brute, 1e-9), "%s: lp_solve %.10g, enumeration %.10g", I->name, obj[0], I->brute);
    xs->brute++;
  }
  for (mps = 0; mps < 2; mps++) {
    if (glpsol) external_check(I, obj[0], mps, 0, xs);
    if (cbc) external_check(I, obj[0], mps, 1, xs);
  }
  xs->instances++;
}

TEST(milp_cross_check_random_instances) {
  mlsys_rng g;
  xstats xs;
  int glpsol = have_tool("glpsol"), cbc = have_tool("cbc"), i, k = 0;
  memset(&xs, 0, sizeof xs);
  REQUIRE(scratch() != NULL);
  mlsys_rng_seed(&g, 20240611);
  for (i = 0; i < 72; i++) {
    instance I;
    memset(&I, 0, sizeof I);
    if (i < 24) gen_knapsack(&g, &I, k++, i % 3 == 0);
    else if (i < 40) gen_assignment(&g, &I, k++);
    else if (i < 58) gen_cover(&g, &I, k++);
    else gen_mixed(&g, &I, k++);
    REQUIRE(I.m != NULL);
    cross_check(&I, glpsol, cbc, &xs);
    mlsys_milp_free(I.m);
  }
  printf("    %d instances: lp_solve %d, cbc backend %d, enumeration %d, glpsol LP/MPS %d/%d, cbc CLI LP/MPS %d/%d\n",
         xs.instances, xs.per_backend[0], xs.per_backend[1], xs.brute, xs.glpsol_lp, xs.glpsol_mps, xs.cbc_lp,
         xs.cbc_mps);
  CHECK(xs.instances >= 60);
  if (!glpsol || !cbc) SKIP_DEP("%s not installed (scripts/install-deps.sh): builder-only checks ran", !glpsol ? "glpsol" : "cbc");
}

/* ---------------------------------------------------------------------------------------------------------------
   Exported files keep what the solver sees: fractional bounds on integer columns, a binary column fixed by
   mlsys_milp_set_bounds, free and half-bounded columns, maximisation — both formats, both external solvers.
   --------------------------------------------------------------------------------------------------------------- */
static mlsys_milp *edge_model(int maximize) {
  mlsys_milp *m;
  double w[4] = {3, 4, 5, 6}, v[4] = {4, 5, 6, 7}, s = maximize ? 1 : -1;
  int x[4], i, y, z, u, c2[3];
  double v2[3] = {1, 1, 1};
  mlsys_milp_create(&m);
  for (i = 0; i < 4; i++) x[i] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, s * v[i], NULL);
  mlsys_milp_set_bounds(m, x[0], 1, 1);                                  /* a binary fixed at 1 */
  y = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, -3.5, 2.5, -s, "y");      /* really [-3, 2] */
  z = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, -MLSYS_INF, MLSYS_INF, 0.5 * s, "z_free");
  u = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, -MLSYS_INF, 4, s, "u.up_0");
  mlsys_milp_add_row(m, 4, x, w, MLSYS_ROW_LE, 10, "cap");
  c2[0] = y; c2[1] = z; c2[2] = u;
  mlsys_milp_add_row(m, 2, c2, v2, MLSYS_ROW_EQ, 0.5, "link");            /* y + z = 0.5 */
  c2[0] = z; c2[1] = u;
  v2[0] = 1; v2[1] = -1;
  mlsys_milp_add_row(m, 2, c2, v2, MLSYS_ROW_GE, -2, "zu");               /* z - u >= -2 */
  mlsys_milp_set_obj_constant(m, 100.25);
  mlsys_milp_set_maximize(m, maximize);
  return m;
}

TEST(milp_export_edge_cases_read_back_by_glpsol_and_cbc) {
  int mx, mps, b, glpsol = have_tool("glpsol"), cbc = have_tool("cbc");
  REQUIRE(scratch() != NULL);
  for (mx = 0; mx < 2; mx++) {
    mlsys_milp *m = edge_model(mx);
    /* by hand (maximisation form): x0 = 1 leaves capacity 7 for x1..x3 (weights 4, 5, 6): best x3, value 4 + 7;
       y in [-3, 2] (the bounds -3.5, 2.5 rounded), z = 0.5 - y, u <= min(4, z + 2): -y + 0.5 z + u is largest
       at y = -3, z = 3.5, u = 4: 3 + 1.75 + 4. Total 19.75, plus the constant. */
    double expect = mx ? 19.75 + 100.25 : -19.75 + 100.25;
    char path[256];
    for (b = 0; b < nbackends(); b++) {
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      o.backend = backends[b];
      if (solve_checked(m, &o, &r, "edge model") == MLSYS_OK) {
        CHECK_NEAR(r.objective, expect, 1e-9);
        CHECK_NEAR(r.x[0], 1, 0);
        CHECK_NEAR(r.x[4], -3, 0);
      } else CHECK_MSG(0, "%s: %s", mlsys_milp_backend_name(o.backend), lasterr());
      mlsys_milp_result_free(&r);
    }
    for (mps = 0; mps < 2; mps++) {
      char why[256] = "";
      file_info fi;
      double v;
      snprintf(path, sizeof path, "%s/edge%d%s", scratch(), mx, mps ? ".mps" : ".lp");
      REQUIRE_OK(mlsys_milp_write(m, path));
      REQUIRE(read_file_info(path, &fi));
      CHECK_NEAR(fi.constant, 100.25, 0);
      CHECK_EQ_INT(fi.negated, mps && mx);
      if (glpsol) {
        CHECK_MSG(glpsol_solve(path, mps, 0, &v, why, sizeof why), "glpsol %.100s: %.150s", path, why);
        CHECK_MSG(rel_eq((fi.negated ? -v : v) + fi.constant, expect, 1e-9), "glpsol %s: %g", path, v);
      }
      if (cbc) {
        CHECK_MSG(cbc_cli_solve(path, 0, &v, why, sizeof why), "cbc %.100s: %.150s", path, why);
        CHECK_MSG(rel_eq((fi.negated ? -v : v) + fi.constant, expect, 1e-7), "cbc %s: %g", path, v);
      }
    }
    mlsys_milp_free(m);
  }
  if (!glpsol || !cbc) SKIP_DEP("%s not installed (scripts/install-deps.sh)", !glpsol ? "glpsol" : "cbc");
}

/* ---------------------------------------------------------------------------------------------------------------
   2. Infeasible and unbounded
   --------------------------------------------------------------------------------------------------------------- */
static mlsys_milp *model_infeasible_lp(void) {   /* x + y >= 30 with x, y in [0, 10] */
  mlsys_milp *m;
  int c[2];
  double v[2] = {1, 1};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 10, 1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 10, 1, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_GE, 30, NULL);
  return m;
}
static mlsys_milp *model_parity(void) {   /* Σ 2·x_i = 7 over binaries: the LP relaxation is feasible */
  mlsys_milp *m;
  int c[6], i;
  double v[6] = {2, 2, 2, 2, 2, 2};
  mlsys_milp_create(&m);
  for (i = 0; i < 6; i++) c[i] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, i + 1, NULL);
  mlsys_milp_add_row(m, 6, c, v, MLSYS_ROW_EQ, 7, NULL);
  return m;
}
static mlsys_milp *model_int_eq(void) {   /* 2x + 2y = 3, x, y integer in [0, 10] */
  mlsys_milp *m;
  int c[2];
  double v[2] = {2, 2};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, 10, 1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, 10, 1, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_EQ, 3, NULL);
  return m;
}
static mlsys_milp *model_inverted_bounds(void) {   /* set_bounds(lo > hi) on a continuous column */
  mlsys_milp *m;
  int c[2];
  double v[2] = {1, 1};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 10, 1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, 10, 1, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_LE, 8, NULL);
  mlsys_milp_set_bounds(m, c[0], 5, 3);
  return m;
}
static mlsys_milp *model_no_integer_in_bounds(void) {   /* integer x in [0.2, 0.8] */
  mlsys_milp *m;
  int c[2];
  double v[2] = {1, 1};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0.2, 0.8, 1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 10, 1, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_LE, 5, NULL);
  return m;
}
/* the LP relaxation is unbounded (z − w <= 0, min −z) but 2a + 2b = 1 has no binary solution */
static mlsys_milp *model_unbounded_relaxation_integer_infeasible(void) {
  mlsys_milp *m;
  int c[2], z, w;
  double v[2] = {2, 2}, v2[2] = {1, -1};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, 1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, 1, NULL);
  z = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, -1, "z");
  w = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, 0, "w");
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_EQ, 1, NULL);
  c[0] = z; c[1] = w;
  mlsys_milp_add_row(m, 2, c, v2, MLSYS_ROW_LE, 0, NULL);
  return m;
}
static mlsys_milp *model_unbounded_int(int maximize) {   /* max x + y (min −x − y), x − y <= 3, integers >= 0 */
  mlsys_milp *m;
  int c[2];
  double v[2] = {1, -1};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, MLSYS_INF, maximize ? 1 : -1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, MLSYS_INF, maximize ? 1 : -1, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_LE, 3, NULL);
  mlsys_milp_set_maximize(m, maximize);
  mlsys_milp_set_obj_constant(m, 5);
  return m;
}
static mlsys_milp *model_unbounded_mixed(void) {   /* min −z, z <= 2w, w integer >= 0, z continuous free */
  mlsys_milp *m;
  int c[2];
  double v[2] = {1, -2};
  mlsys_milp_create(&m);
  c[0] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, -MLSYS_INF, MLSYS_INF, -1, NULL);
  c[1] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, MLSYS_INF, 0, NULL);
  mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_LE, 0, NULL);
  return m;
}
/* a knapsack plus a column in no row whose objective improves without limit */
static mlsys_milp *model_unbounded_empty_column(int maximize, mlsys_var_kind kind) {
  mlsys_milp *m;
  double w[4] = {3, 4, 5, 6}, v[4] = {4, 5, 6, 7}, s = maximize ? 1 : -1;
  int x[4], i;
  mlsys_milp_create(&m);
  for (i = 0; i < 4; i++) x[i] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, s * v[i], NULL);
  mlsys_milp_add_row(m, 4, x, w, MLSYS_ROW_LE, 10, "cap");
  if (maximize) mlsys_milp_add_var(m, kind, 0, MLSYS_INF, 2, "ray");
  else mlsys_milp_add_var(m, kind, -MLSYS_INF, 3, 2, "ray");
  mlsys_milp_set_maximize(m, maximize);
  return m;
}

static void expect_status(mlsys_milp *m, mlsys_milp_opts *o, mlsys_status want, mlsys_milp_status wstat,
                          int maximize, const char *what) {
  mlsys_milp_result r;
  mlsys_status st;
  mlsys_clear_error();
  st = solve_checked(m, o, &r, what);
  CHECK_MSG(st == want, "%s (%s%s): returned %s (%s), want %s", what, mlsys_milp_backend_name(o->backend),
            o->relax ? ", relaxed" : "", mlsys_status_str(st), lasterr(), mlsys_status_str(want));
  CHECK_MSG(r.status == wstat, "%s (%s): status %s, want %s", what, mlsys_milp_backend_name(o->backend),
            mlsys_milp_status_str(r.status), mlsys_milp_status_str(wstat));
  if (st != MLSYS_OK) {
    CHECK_MSG(mlsys_last_status() == st, "%s", what);
    CHECK_MSG(isnan(r.objective), "%s: objective %g without a solution", what, r.objective);
  }
  if (wstat == MLSYS_MILP_UNBOUNDED)   /* no finite bound, in the caller's sense */
    CHECK_MSG(r.bound == (maximize ? INFINITY : -INFINITY), "%s (%s): bound %g", what,
              mlsys_milp_backend_name(o->backend), r.bound);
  if (wstat == MLSYS_MILP_INFEASIBLE && !o->use_cutoff)   /* nothing feasible: the bound is past every value */
    CHECK_MSG(r.bound == (maximize ? -INFINITY : INFINITY), "%s (%s): bound %g", what,
              mlsys_milp_backend_name(o->backend), r.bound);
  mlsys_milp_result_free(&r);
}

TEST(milp_infeasible_models_reported_by_both_backends) {
  int b, relax;
  for (b = 0; b < nbackends(); b++)
    for (relax = 0; relax < 2; relax++) {
      mlsys_milp_opts o = {0};
      mlsys_milp *m;
      o.backend = backends[b];
      o.relax = relax;
      o.time_limit = NEVER_BINDS;   /* a hang would otherwise stall the suite; none of these needs a second */
      m = model_infeasible_lp();
      expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "x + y >= 30, x, y <= 10");
      mlsys_milp_free(m);
      m = model_inverted_bounds();
      expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "set_bounds(5, 3)");
      mlsys_milp_free(m);
      m = model_parity();   /* infeasible as a MILP; its relaxation (x_i = 7/12) is feasible */
      if (relax) expect_status(m, &o, MLSYS_OK, MLSYS_MILP_OPTIMAL, 0, "sum 2x_i = 7 relaxed");
      else expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "sum 2x_i = 7");
      mlsys_milp_free(m);
      m = model_int_eq();
      if (relax) expect_status(m, &o, MLSYS_OK, MLSYS_MILP_OPTIMAL, 0, "2x + 2y = 3 relaxed");
      else expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "2x + 2y = 3");
      mlsys_milp_free(m);
      m = model_no_integer_in_bounds();
      if (relax) expect_status(m, &o, MLSYS_OK, MLSYS_MILP_OPTIMAL, 0, "integer in [0.2, 0.8] relaxed");
      else expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "integer in [0.2, 0.8]");
      mlsys_milp_free(m);
      m = model_unbounded_relaxation_integer_infeasible();
      if (relax) expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, 0, "unbounded relaxation");
      else expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "unbounded relaxation, no integer point");
      mlsys_milp_free(m);
    }
}

TEST(milp_unbounded_models_reported_by_both_backends) {
  int b, relax, mx, kind;
  for (b = 0; b < nbackends(); b++)
    for (relax = 0; relax < 2; relax++) {
      mlsys_milp_opts o = {0};
      mlsys_milp *m;
      o.backend = backends[b];
      o.relax = relax;
      o.time_limit = NEVER_BINDS;
      for (mx = 0; mx < 2; mx++) {
        m = model_unbounded_int(mx);
        expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, mx, mx ? "max x + y" : "min -x - y");
        mlsys_milp_free(m);
        for (kind = 0; kind < 2; kind++) {   /* lp_solve said OPTIMAL (objective 1e30), Clp/CBC infeasible */
          m = model_unbounded_empty_column(mx, kind ? MLSYS_VAR_INTEGER : MLSYS_VAR_CONTINUOUS);
          expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, mx, "column in no row");
          CHECK_CONTAINS(mlsys_last_error(), "ray");
          mlsys_milp_free(m);
        }
      }
      m = model_unbounded_mixed();
      expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, 0, "min -z, z <= 2w");
      mlsys_milp_free(m);
      if (!relax) {
        /* min x with x − y = 0.5 over free integers: the relaxation is unbounded, there is no integer point, and
           branch and bound cannot prove it. Whatever a backend answers, it must not be "unbounded" or a solution. */
        mlsys_milp_result r;
        mlsys_status st;
        int c[2];
        double v[2] = {1, -1};
        mlsys_milp_create(&m);
        c[0] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, -MLSYS_INF, MLSYS_INF, 1, NULL);
        c[1] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, -MLSYS_INF, MLSYS_INF, 0, NULL);
        mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_EQ, 0.5, NULL);
        o.time_limit = 1;
        st = solve_checked(m, &o, &r, "x - y = 0.5 over free integers");
        CHECK_MSG(st == MLSYS_ERR_INFEASIBLE || st == MLSYS_ERR_SOLVER || st == MLSYS_ERR_TIMEOUT, "%s: %s (%s)",
                  mlsys_milp_backend_name(o.backend), mlsys_status_str(st), lasterr());
        CHECK(r.status != MLSYS_MILP_UNBOUNDED && r.x == NULL);
        mlsys_milp_result_free(&r);
        mlsys_milp_free(m);
        o.time_limit = NEVER_BINDS;
      }
    }
}

/* Random unbounded and infeasible variants of random knapsacks: a column t >= 0 that relaxes the capacity row
   (Σ w·x − t <= cap) and pays off (unbounded), or an extra row Σ x >= n + 1 (infeasible). */
TEST(milp_random_unbounded_and_infeasible_variants) {
  mlsys_rng g;
  int i, b, cnt[2] = {0, 0};
  mlsys_rng_seed(&g, 777);
  for (i = 0; i < 12; i++) {
    int n = mlsys_rng_range(&g, 4, 12), j, cols[13], mx = i % 2;
    double w[13], ones[13];
    mlsys_milp *m;
    mlsys_milp_create(&m);
    for (j = 0; j < n; j++) {
      w[j] = mlsys_rng_range(&g, 1, 20);
      ones[j] = 1;
      cols[j] = mlsys_milp_add_var(m, j % 3 ? MLSYS_VAR_BINARY : MLSYS_VAR_INTEGER, 0, 3,
                                   (mx ? 1 : -1) * mlsys_rng_range(&g, 1, 30), NULL);
    }
    if (i % 4 < 2) {
      cols[n] = mlsys_milp_add_var(m, i % 3 ? MLSYS_VAR_CONTINUOUS : MLSYS_VAR_INTEGER, 0, MLSYS_INF,
                                   (mx ? 1 : -1) * 0.5, "t");
      w[n] = -1;
      mlsys_milp_add_row(m, n + 1, cols, w, MLSYS_ROW_LE, 30, "cap");
    } else {
      mlsys_milp_add_row(m, n, cols, w, MLSYS_ROW_LE, 30, "cap");
      mlsys_milp_add_row(m, n, cols, ones, MLSYS_ROW_GE, 3 * n + 1, "too_many");
    }
    mlsys_milp_set_maximize(m, mx);
    for (b = 0; b < nbackends(); b++) {
      mlsys_milp_opts o = {0};
      o.backend = backends[b];
      o.time_limit = NEVER_BINDS;
      if (i % 4 < 2) expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, mx, "knapsack + ray");
      else expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, mx, "knapsack + sum x >= 3n+1");
      cnt[b]++;
    }
    mlsys_milp_free(m);
  }
  CHECK_EQ_INT(cnt[0], 12);
}

/* An unbounded model stays unbounded when the caller passes a feasible incumbent (it is not "the best found"). */
TEST(milp_unbounded_with_incumbent) {
  int b;
  double inc[2] = {1, 0};
  for (b = 0; b < nbackends(); b++) {
    mlsys_milp *m = model_unbounded_int(1);
    mlsys_milp_opts o = {0};
    o.backend = backends[b];
    o.incumbent = inc;
    expect_status(m, &o, MLSYS_ERR_UNBOUNDED, MLSYS_MILP_UNBOUNDED, 1, "max x + y with an incumbent");
    mlsys_milp_free(m);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   3. LP relaxation against the greedy fractional knapsack
   --------------------------------------------------------------------------------------------------------------- */
static double fractional_knapsack(int n, const double *w, const double *v, double cap) {
  int order[64], i, j;
  double val = 0;
  for (i = 0; i < n; i++) order[i] = i;
  for (i = 1; i < n; i++)   /* by value/weight, descending */
    for (j = i; j > 0 && v[order[j]] * w[order[j - 1]] > v[order[j - 1]] * w[order[j]]; j--) {
      int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
    }
  for (i = 0; i < n && cap > 0; i++) {
    double take = w[order[i]] <= cap ? 1.0 : cap / w[order[i]];
    val += take * v[order[i]];
    cap -= take * w[order[i]];
  }
  return val;
}

TEST(milp_lp_relaxation_equals_fractional_knapsack) {
  mlsys_rng g;
  int t, b, glpsol = have_tool("glpsol"), cbc = have_tool("cbc"), checked = 0;
  REQUIRE(scratch() != NULL);
  mlsys_rng_seed(&g, 4242);
  for (t = 0; t < 10; t++) {
    int n = mlsys_rng_range(&g, 6, 40), j, cols[40], mx = t % 3 != 2;
    double w[40], v[40], cap = 0, c = mlsys_rng_range(&g, -9, 9) + 0.75, frac, expect;
    mlsys_milp *m, *mc;
    mlsys_milp_create(&m);
    mlsys_milp_create(&mc);
    for (j = 0; j < n; j++) {
      w[j] = mlsys_rng_range(&g, 1, 60);
      v[j] = mlsys_rng_range(&g, 1, 60);
      cap += w[j];
      cols[j] = mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, mx ? v[j] : -v[j], NULL);
      mlsys_milp_add_var(mc, MLSYS_VAR_CONTINUOUS, 0, 1, mx ? v[j] : -v[j], NULL);
    }
    cap = floor(cap * 0.37) + 0.5;
    mlsys_milp_add_row(m, n, cols, w, MLSYS_ROW_LE, cap, "cap");
    mlsys_milp_add_row(mc, n, cols, w, MLSYS_ROW_LE, cap, "cap");
    mlsys_milp_set_maximize(m, mx);
    mlsys_milp_set_maximize(mc, mx);
    mlsys_milp_set_obj_constant(m, c);
    mlsys_milp_set_obj_constant(mc, c);
    frac = fractional_knapsack(n, w, v, cap);
    expect = (mx ? frac : -frac) + c;
    for (b = 0; b < nbackends(); b++) {
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      o.backend = backends[b];
      o.relax = 1;   /* the MILP's relaxation */
      if (solve_checked(m, &o, &r, "relaxed knapsack") == MLSYS_OK) {
        CHECK_MSG(rel_eq(r.objective, expect, 1e-9), "%s relax: %.12g, greedy %.12g", mlsys_milp_backend_name(o.backend),
                  r.objective, expect);
        CHECK(r.status == MLSYS_MILP_OPTIMAL && r.bound == r.objective);
      } else CHECK_MSG(0, "%s", lasterr());
      mlsys_milp_result_free(&r);
      o.relax = 0;   /* the continuous model (an LP: Clp directly for CBC) */
      if (solve_checked(mc, &o, &r, "continuous knapsack") == MLSYS_OK)
        CHECK_MSG(rel_eq(r.objective, expect, 1e-9), "%s LP: %.12g, greedy %.12g", mlsys_milp_backend_name(o.backend),
                  r.objective, expect);
      else CHECK_MSG(0, "%s", lasterr());
      mlsys_milp_result_free(&r);
      checked++;
    }
    {
      char path[256], why[256] = "";
      double val;
      snprintf(path, sizeof path, "%s/relaxed.lp", scratch());
      REQUIRE_OK(mlsys_milp_write(mc, path));
      if (glpsol) {
        CHECK_MSG(glpsol_solve(path, 0, 0, &val, why, sizeof why), "%s", why);
        CHECK_MSG(rel_eq(val + c, expect, 1e-9), "glpsol LP %.12g, greedy %.12g", val + c, expect);
      }
      if (cbc) {
        CHECK_MSG(cbc_cli_solve(path, 1, &val, why, sizeof why), "%s", why);
        CHECK_MSG(rel_eq(val + c, expect, 1e-7), "cbc LP %.12g, greedy %.12g", val + c, expect);
      }
      snprintf(path, sizeof path, "%s/binary.lp", scratch());   /* and glpsol --nomip on the MILP's export */
      REQUIRE_OK(mlsys_milp_write(m, path));
      if (glpsol) {
        CHECK_MSG(glpsol_solve(path, 0, 1, &val, why, sizeof why), "%s", why);
        CHECK_MSG(rel_eq(val + c, expect, 1e-9), "glpsol --nomip %.12g, greedy %.12g", val + c, expect);
      }
    }
    mlsys_milp_free(m);
    mlsys_milp_free(mc);
  }
  CHECK(checked >= 10);
  if (!glpsol || !cbc) SKIP_DEP("%s not installed (scripts/install-deps.sh)", !glpsol ? "glpsol" : "cbc");
}

/* ---------------------------------------------------------------------------------------------------------------
   4. Time limit, stop callback, improvement callback, relative gap
   --------------------------------------------------------------------------------------------------------------- */
/* Cornuéjols–Dawande market split: rows Σ a_ij x_j = floor(Σ_j a_ij / 2) over binaries, hard for branch and bound.
   With slack = 1 every row gets s⁺ − s⁻ and the objective is Σ s (min) or −Σ s (max), so x = 0 is feasible. */
static mlsys_milp *market_split(uint64_t seed, int rows, int n, int slack, int maximize) {
  mlsys_rng g;
  mlsys_milp *m;
  int i, j, cols[64];
  double v[64];
  mlsys_rng_seed(&g, seed);
  mlsys_milp_create(&m);
  for (j = 0; j < n; j++) mlsys_milp_add_var(m, MLSYS_VAR_BINARY, 0, 1, slack ? 0 : 1, NULL);
  for (i = 0; i < rows; i++) {
    double sum = 0;
    for (j = 0; j < n; j++) { cols[j] = j; v[j] = mlsys_rng_range(&g, 0, 99); sum += v[j]; }
    if (slack) {
      cols[n] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, maximize ? -1 : 1, NULL);
      cols[n + 1] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, MLSYS_INF, maximize ? -1 : 1, NULL);
      v[n] = 1;
      v[n + 1] = -1;
    }
    mlsys_milp_add_row(m, n + (slack ? 2 : 0), cols, v, MLSYS_ROW_EQ, floor(sum / 2), NULL);
  }
  mlsys_milp_set_maximize(m, maximize);
  mlsys_milp_set_obj_constant(m, 3);
  return m;
}

TEST(milp_time_limit_is_honoured) {
  int b, variant, limited = 0;
  for (b = 0; b < nbackends(); b++)
    for (variant = 0; variant < 3; variant++) {
      mlsys_milp *m = variant < 2 ? market_split(7 + (uint64_t)variant, 4, 30, 1, variant) : market_split(11, 4, 30, 0, 0);
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      double t0 = mlsys_now(), dt;
      mlsys_status st;
      o.backend = backends[b];
      o.time_limit = 0.5;
      st = solve_checked(m, &o, &r, "market split");
      dt = mlsys_now() - t0;
      /* the limit stopped it (these instances run for hours without one); how soon after 0.5 s it returns depends on
         the machine's load, so only a limit that was ignored fails here, not a busy machine */
      CHECK_MSG(dt < 0.5 + 60, "%s, variant %d: %.2f s with a 0.5 s limit", mlsys_milp_backend_name(o.backend),
                variant, dt);
      CHECK(r.seconds <= dt + 1e-3);
      if (st == MLSYS_OK) {
        CHECK(r.status == MLSYS_MILP_FEASIBLE || r.status == MLSYS_MILP_OPTIMAL);
        if (r.status == MLSYS_MILP_FEASIBLE) {
          limited++;
          CHECK_MSG(dt > 0.4, "FEASIBLE after only %.2f s", dt);
        }
        /* Σ s >= 0: the objective is >= 3 (min) or <= 3 (max); the bound is on the right side of it */
        if (variant == 0) CHECK(r.objective >= 3 - 1e-9 && r.bound <= r.objective);
        if (variant == 1) CHECK(r.objective <= 3 + 1e-9 && r.bound >= r.objective);
        if (!isinf(r.bound)) CHECK_NEAR(r.gap, fabs(r.objective - r.bound) / fmax(1e-9, fabs(r.objective)), 1e-12);
      } else {
        CHECK_MSG(st == MLSYS_ERR_TIMEOUT || (variant == 2 && st == MLSYS_ERR_INFEASIBLE), "%s: %s",
                  mlsys_milp_backend_name(o.backend), lasterr());
        CHECK(r.status == (st == MLSYS_ERR_TIMEOUT ? MLSYS_MILP_NO_SOLUTION : MLSYS_MILP_INFEASIBLE));
        if (st == MLSYS_ERR_TIMEOUT) limited++;
      }
      mlsys_milp_result_free(&r);
      mlsys_milp_free(m);
    }
  CHECK(limited >= nbackends());   /* these instances do not finish in 0.5 s */
}

typedef struct { long stop_at, calls; int improvements; double last, first; int stop_on_improve; } cb_state;
/* Asks to stop at the (stop_at + 1)-th poll: a point in the solver's work, not in time. */
static int stop_after(void *ud) {
  cb_state *s = (cb_state *)ud;
  return ++s->calls > s->stop_at;
}
static int count_improve(void *ud, double objective, double seconds) {
  cb_state *s = (cb_state *)ud;
  (void)seconds;
  if (!s->improvements++) s->first = objective;
  s->last = objective;
  return s->stop_on_improve;
}

/* Promptness in work, not in seconds: the solve returns at the first poll that asks it to stop, without polling
   again (a solver that kept going would poll on), and reports the best it had (FEASIBLE) or nothing (CANCELED). */
TEST(milp_should_stop_stops_promptly) {
  int b, k;
  for (b = 0; b < nbackends(); b++)
    for (k = 0; k < 2; k++) {   /* stop at the 51st poll, and at the first */
      mlsys_milp *m = market_split(7, 5, 40, 1, 0);
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      cb_state s;
      mlsys_status st;
      memset(&s, 0, sizeof s);
      s.stop_at = k ? 0 : 50;
      o.backend = backends[b];
      o.should_stop = stop_after;
      o.ud = &s;
      o.time_limit = NEVER_BINDS;   /* a safety net: a backend that ignores should_stop fails below, not hangs */
      st = solve_checked(m, &o, &r, "market split, stopped");
      CHECK_MSG(s.calls == s.stop_at + 1, "%s: asked to stop at poll %ld, polled %ld times",
                mlsys_milp_backend_name(o.backend), s.stop_at + 1, s.calls);
      if (st == MLSYS_OK) CHECK_MSG(r.status == MLSYS_MILP_FEASIBLE, "%s", mlsys_milp_status_str(r.status));
      else {
        CHECK_MSG(st == MLSYS_ERR_CANCELED, "%s: %s", mlsys_milp_backend_name(o.backend), lasterr());
        CHECK(r.status == MLSYS_MILP_NO_SOLUTION);
      }
      mlsys_milp_result_free(&r);
      mlsys_milp_free(m);
    }
}

TEST(milp_on_improve_reports_improving_objectives) {
  int b, mx, reported[2] = {0, 0};
  for (b = 0; b < nbackends(); b++)
    for (mx = 0; mx < 2; mx++) {
      mlsys_milp *m = market_split(21, 2, 16, 1, mx);
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      cb_state s;
      memset(&s, 0, sizeof s);
      o.backend = backends[b];
      o.on_improve = count_improve;
      o.ud = &s;
      o.time_limit = NEVER_BINDS;   /* a 2 x 16 market split: solved in well under a second */
      if (solve_checked(m, &o, &r, "on_improve") == MLSYS_OK) {
        CHECK(r.status == MLSYS_MILP_OPTIMAL);
        if (s.improvements) {
          CHECK_MSG(rel_eq(s.last, r.objective, 1e-9), "%s: last improvement %.10g, result %.10g",
                    mlsys_milp_backend_name(o.backend), s.last, r.objective);
          CHECK(mx ? s.first <= s.last : s.first >= s.last);
        }
      } else CHECK_MSG(0, "%s", lasterr());
      reported[b] += s.improvements;
      mlsys_milp_result_free(&r);
      if (o.backend == MLSYS_SOLVER_LPSOLVE) {
        /* a nonzero return stops the search with the solution just reported */
        CHECK_MSG(s.improvements >= 2, "lp_solve reported %d improvements", s.improvements);
        memset(&s, 0, sizeof s);
        s.stop_on_improve = 1;
        CHECK_OK(solve_checked(m, &o, &r, "on_improve stop"));
        CHECK_EQ_INT(s.improvements, 1);
        CHECK(r.status == MLSYS_MILP_FEASIBLE);
        if (r.x) CHECK_MSG(rel_eq(s.first, r.objective, 1e-9), "stopped at %.10g, result %.10g", s.first, r.objective);
        mlsys_milp_result_free(&r);
      }
      mlsys_milp_free(m);
    }
  /* CBC 2.10's C interface delivers no solution messages to the callback (log off: filtered; log on: the
     registered handler receives none), so the CBC backend never calls on_improve. */
  if (nbackends() == 2) printf("    on_improve calls: lp_solve %d, cbc %d\n", reported[0], reported[1]);
}

/* Knapsack optimum by dynamic programming over the (integral) capacity. */
static double knapsack_dp(int n, const double *w, const double *v, int cap) {
  double *best = (double *)calloc((size_t)cap + 1, sizeof(double)), res;
  int i, c;
  for (i = 0; i < n; i++)
    for (c = cap; c >= (int)w[i]; c--)
      if (best[c - (int)w[i]] + v[i] > best[c]) best[c] = best[c - (int)w[i]] + v[i];
  res = best[cap];
  free(best);
  return res;
}

/* A 35-item weakly correlated 0/1 knapsack (some work for branch and bound), optimum by dynamic programming. */
static void gen_big_knapsack(mlsys_rng *g, instance *I, int id) {
  int n = 35, cols[35], j, cap = 0;
  double w[35], v[35];
  mlsys_milp_create(&I->m);
  for (j = 0; j < n; j++) {
    w[j] = mlsys_rng_range(g, 10, 100);
    v[j] = w[j] + mlsys_rng_range(g, 0, 20);
    cap += (int)w[j];
    cols[j] = mlsys_milp_add_var(I->m, MLSYS_VAR_BINARY, 0, 1, v[j], NULL);
  }
  cap /= 2;
  mlsys_milp_add_row(I->m, n, cols, w, MLSYS_ROW_LE, cap, NULL);
  mlsys_milp_set_maximize(I->m, I->maximize = 1);
  I->has_brute = 1;
  I->brute = knapsack_dp(n, w, v, cap);
  snprintf(I->name, sizeof I->name, "knapsack35#%d", id);
}

TEST(milp_relative_gap_is_reported_and_valid) {
  mlsys_rng g;
  int t, b, early = 0;
  mlsys_rng_seed(&g, 99);
  for (t = 0; t < 6; t++) {
    instance I;
    memset(&I, 0, sizeof I);
    gen_big_knapsack(&g, &I, t);
    for (b = 0; b < nbackends(); b++) {
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      double opt = I.brute;
      o.backend = backends[b];
      o.mip_gap_rel = 0.5;
      o.time_limit = NEVER_BINDS;   /* the exact solve below must prove the optimum: 35 items, well under a second */
      if (solve_checked(I.m, &o, &r, "knapsack, gap 0.5") == MLSYS_OK) {
        CHECK(r.objective <= opt + 1e-9);
        CHECK_MSG(r.bound >= opt - 1e-6, "%s: bound %.10g below the optimum %.10g", mlsys_milp_backend_name(o.backend),
                  r.bound, opt);
        CHECK(r.bound >= r.objective);
        if (r.status == MLSYS_MILP_OPTIMAL) {
          CHECK_MSG(r.gap <= 0.5 + 1e-12, "%s: gap %g", mlsys_milp_backend_name(o.backend), r.gap);
          CHECK(r.objective >= opt / 1.5 - 1e-9);   /* follows from the gap and a valid bound */
        }
        CHECK_NEAR(r.gap, fabs(r.objective - r.bound) / fmax(1e-9, fabs(r.objective)), 1e-12);
        early += r.objective < opt || r.bound > opt;
      } else CHECK_MSG(0, "%s", lasterr());
      mlsys_milp_result_free(&r);
      o.mip_gap_rel = 0;   /* and the exact optimum */
      if (solve_checked(I.m, &o, &r, "knapsack") == MLSYS_OK) {
        CHECK_NEAR(r.objective, opt, 1e-9);
        CHECK(r.gap == 0 && r.bound == r.objective);
      } else CHECK_MSG(0, "%s", lasterr());
      mlsys_milp_result_free(&r);
    }
    mlsys_milp_free(I.m);
  }
  CHECK(early > 0);   /* the gap was used: some solve stopped short of the optimum or of proving it */
}

/* ---------------------------------------------------------------------------------------------------------------
   5. Incumbent and cutoff
   --------------------------------------------------------------------------------------------------------------- */
TEST(milp_incumbent_and_cutoff) {
  mlsys_rng g;
  int t, b;
  int seen_status[2][6], seen_from[2][2];
  memset(seen_status, 0, sizeof seen_status);
  memset(seen_from, 0, sizeof seen_from);
  mlsys_rng_seed(&g, 5150);
  for (t = 0; t < 8; t++) {
    instance I;
    int n, j, mx;
    double *zero, *xopt = NULL, *bad, d;
    memset(&I, 0, sizeof I);
    if (t % 2 == 0) gen_knapsack(&g, &I, t, t % 4 == 0);
    else gen_assignment(&g, &I, t);
    REQUIRE(I.m != NULL && I.has_brute);
    n = mlsys_milp_num_vars(I.m);
    mx = I.maximize;
    d = mx ? 1 : -1;   /* the direction of "better" */
    zero = (double *)calloc((size_t)n, sizeof(double));
    bad = (double *)calloc((size_t)n, sizeof(double));
    if (t % 2 == 1) {   /* assignment: the identity permutation is feasible, all zeros is not */
      int k = 1;
      while (k * k < n) k++;
      for (j = 0; j < k; j++) zero[j * k + j] = 1;
    }
    for (b = 0; b < nbackends(); b++) {
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      mlsys_status st;
      o.backend = backends[b];
      /* the optimum */
      REQUIRE_OK(mlsys_milp_solve(I.m, &o, &r));
      CHECK_NEAR(r.objective, I.brute, 1e-9);
      free(xopt);
      xopt = (double *)malloc(sizeof(double) * (size_t)n);
      memcpy(xopt, r.x, sizeof(double) * (size_t)n);
      mlsys_milp_result_free(&r);
      /* a feasible, suboptimal incumbent: still the optimum, found by the solver */
      o.incumbent = zero;
      if (solve_checked(I.m, &o, &r, I.name) == MLSYS_OK) {
        CHECK_NEAR(r.objective, I.brute, 1e-9);
        CHECK(r.status == MLSYS_MILP_OPTIMAL);
        if (mlsys_milp_eval(I.m, zero) != I.brute) CHECK_EQ_INT(r.from_incumbent, 0);
      } else CHECK_MSG(0, "%s: %s", I.name, lasterr());
      mlsys_milp_result_free(&r);
      /* the optimum as incumbent: objective = optimum, from the solver or from the incumbent */
      o.incumbent = xopt;
      if (solve_checked(I.m, &o, &r, I.name) == MLSYS_OK) {
        CHECK_NEAR(r.objective, I.brute, 1e-9);
        CHECK(r.status == MLSYS_MILP_OPTIMAL || r.status == MLSYS_MILP_FEASIBLE);
        seen_status[b][r.status]++;
        seen_from[b][r.from_incumbent != 0]++;
      } else CHECK_MSG(0, "%s: %s", I.name, lasterr());
      mlsys_milp_result_free(&r);
      /* infeasible incumbents: a violated row, a fractional integer, out of bounds */
      for (j = 0; j < n; j++) bad[j] = 1;
      o.incumbent = bad;
      CHECK_EQ_INT(mlsys_milp_solve(I.m, &o, &r), MLSYS_ERR_ARG);
      CHECK_CONTAINS(mlsys_last_error(), "incumbent");
      CHECK(r.x == NULL);
      memcpy(bad, xopt, sizeof(double) * (size_t)n);
      bad[0] = 0.5;
      CHECK_EQ_INT(mlsys_milp_solve(I.m, &o, &r), MLSYS_ERR_ARG);
      bad[0] = -1;
      CHECK_EQ_INT(mlsys_milp_solve(I.m, &o, &r), MLSYS_ERR_ARG);
      bad[0] = NAN;
      CHECK_EQ_INT(mlsys_milp_solve(I.m, &o, &r), MLSYS_ERR_ARG);
      o.incumbent = NULL;
      /* cutoffs: worse than the optimum, equal to it (solutions as good as the cutoff are accepted), better */
      o.use_cutoff = 1;
      o.cutoff = I.brute - d * 1.0;
      if (solve_checked(I.m, &o, &r, "cutoff worse") == MLSYS_OK) CHECK_NEAR(r.objective, I.brute, 1e-9);
      else CHECK_MSG(0, "%s, cutoff worse: %s", mlsys_milp_backend_name(o.backend), lasterr());
      mlsys_milp_result_free(&r);
      o.cutoff = I.brute;
      if (solve_checked(I.m, &o, &r, "cutoff = optimum") == MLSYS_OK) CHECK_NEAR(r.objective, I.brute, 1e-9);
      else CHECK_MSG(0, "%s, cutoff = optimum: %s", mlsys_milp_backend_name(o.backend), lasterr());
      mlsys_milp_result_free(&r);
      o.cutoff = I.brute + d * 0.5;   /* objectives here are integers plus the constant: nothing lies between */
      st = solve_checked(I.m, &o, &r, "cutoff better");
      CHECK_MSG(st == MLSYS_ERR_INFEASIBLE && r.status == MLSYS_MILP_INFEASIBLE, "%s, %s, cutoff better: %s (%s)",
                I.name, mlsys_milp_backend_name(o.backend), mlsys_status_str(st), lasterr());
      CHECK_CONTAINS(mlsys_last_error(), "cutoff");
      mlsys_milp_result_free(&r);
      o.cutoff = I.brute + d * 25.0;   /* far better */
      CHECK_EQ_INT(solve_checked(I.m, &o, &r, "cutoff far better"), MLSYS_ERR_INFEASIBLE);
      mlsys_milp_result_free(&r);
      /* the relaxation ignores cutoff and incumbent */
      o.relax = 1;
      o.incumbent = bad;
      CHECK_OK(solve_checked(I.m, &o, &r, "relaxed, cutoff ignored"));
      CHECK(mx ? r.objective >= I.brute - 1e-9 : r.objective <= I.brute + 1e-9);
      mlsys_milp_result_free(&r);
    }
    free(zero);
    free(bad);
    free(xopt);
    mlsys_milp_free(I.m);
  }
  for (b = 0; b < nbackends(); b++)
    printf("    %s, optimum given as incumbent: status optimal %d / feasible %d, from_incumbent %d of %d\n",
           mlsys_milp_backend_name(backends[b]), seen_status[b][MLSYS_MILP_OPTIMAL], seen_status[b][MLSYS_MILP_FEASIBLE],
           seen_from[b][1], seen_from[b][0] + seen_from[b][1]);
}

/* ---------------------------------------------------------------------------------------------------------------
   6. Bad input
   --------------------------------------------------------------------------------------------------------------- */
TEST(milp_bad_input_is_rejected_with_a_message) {
  mlsys_milp *m;
  int x, y, cols[3];
  double vals[3] = {1, 1, 1};
  mlsys_milp_result r;
  mlsys_milp_opts o = {0};
  char path[256];
  REQUIRE_OK(mlsys_milp_create(&m));
  x = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 10, 1, "x_1.a_B9");
  y = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, -5, 5, -1, NULL);
  CHECK_EQ_INT(x, 0);
  CHECK_EQ_INT(y, 1);
  /* columns */
#define BAD_VAR(kind, lo, hi, obj, name, needle)                                              \
  do {                                                                                        \
    mlsys_clear_error();                                                                      \
    CHECK_EQ_INT(mlsys_milp_add_var(m, kind, lo, hi, obj, name), -1);                         \
    CHECK_EQ_INT(mlsys_last_status(), MLSYS_ERR_ARG);                                         \
    CHECK_CONTAINS(mlsys_last_error(), needle);                                               \
  } while (0)
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 3, 2, 0, "lohi", "bounds");
  BAD_VAR(MLSYS_VAR_INTEGER, 0, 1, NAN, "nanobj", "objective");
  BAD_VAR(MLSYS_VAR_INTEGER, 0, 1, INFINITY, "infobj", "objective");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, NAN, 1, 0, "nanlo", "bounds");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "has space", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "1abc", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "e5", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, ".x", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "x-y", "invalid variable name");
  BAD_VAR(MLSYS_VAR_CONTINUOUS, 0, 1, 0, "x[1]", "invalid variable name");   /* not CPLEX LP: glpsol rejects '[' */
  BAD_VAR((mlsys_var_kind)7, 0, 1, 0, NULL, "kind");
#undef BAD_VAR
  CHECK_EQ_INT(mlsys_milp_num_vars(m), 2);
  CHECK(mlsys_milp_add_var(m, MLSYS_VAR_BINARY, -4, 9, 0, "bin_forced") == 2);   /* BINARY forces [0, 1] */
  /* rows */
  cols[0] = x; cols[1] = y; cols[2] = 2;
#define BAD_ROW(n, c, v, sense, rhs, name, needle)                                            \
  do {                                                                                        \
    mlsys_clear_error();                                                                      \
    CHECK_EQ_INT(mlsys_milp_add_row(m, n, c, v, sense, rhs, name), MLSYS_ERR_ARG);            \
    CHECK_CONTAINS(mlsys_last_error(), needle);                                               \
  } while (0)
  {
    int oob[2] = {0, 3}, neg[2] = {-1, 0};
    double nanv[2] = {1, NAN}, infv[2] = {INFINITY, 1};
    BAD_ROW(2, oob, vals, MLSYS_ROW_LE, 1, "r", "column 3 outside 0..2");
    BAD_ROW(2, neg, vals, MLSYS_ROW_LE, 1, "r", "column -1");
    BAD_ROW(2, cols, nanv, MLSYS_ROW_LE, 1, "r", "coefficient");
    BAD_ROW(2, cols, infv, MLSYS_ROW_LE, 1, "r", "coefficient");
    BAD_ROW(2, cols, vals, (mlsys_row_sense)5, 1, "r", "unknown sense 5");
    BAD_ROW(2, cols, vals, MLSYS_ROW_LE, NAN, "r", "right-hand side");
    BAD_ROW(2, cols, vals, MLSYS_ROW_LE, INFINITY, "r", "right-hand side");
    BAD_ROW(2, cols, vals, MLSYS_ROW_LE, 1, "bad name", "invalid row name");
    BAD_ROW(-1, cols, vals, MLSYS_ROW_LE, 1, "r", "term list");
    BAD_ROW(2, NULL, vals, MLSYS_ROW_LE, 1, "r", "term list");
  }
#undef BAD_ROW
  CHECK_EQ_INT(mlsys_milp_num_rows(m), 0);
  CHECK_EQ_INT(mlsys_milp_num_nonzeros(m), 0);
  /* repeated columns are summed and zeros dropped: x + y + x − y + 0·bin <= 3  is  2x <= 3 */
  {
    int rc[5] = {x, y, x, y, 2};
    double rv[5] = {1, 1, 1, -1, 0}, pt[3] = {1.75, 0, 0};
    CHECK_OK(mlsys_milp_add_row(m, 5, rc, rv, MLSYS_ROW_LE, 3, "summed"));
    CHECK_EQ_INT(mlsys_milp_num_rows(m), 1);
    CHECK_EQ_INT(mlsys_milp_num_nonzeros(m), 1);
    CHECK_NEAR(mlsys_milp_max_violation(m, pt, 1), 0.5, 1e-12);   /* 2·1.75 − 3 */
    pt[0] = 1.5;
    CHECK_NEAR(mlsys_milp_max_violation(m, pt, 1), 0, 0);
    pt[1] = 0.25;   /* y is integer: the fractional part is a violation when asked for */
    CHECK_NEAR(mlsys_milp_max_violation(m, pt, 1), 0.25, 1e-12);
    CHECK_NEAR(mlsys_milp_max_violation(m, pt, 0), 0, 0);
    pt[1] = 7;      /* above y's bound 5 */
    CHECK_NEAR(mlsys_milp_max_violation(m, pt, 0), 2, 0);
    pt[1] = 0;
    pt[2] = 1;
    CHECK_NEAR(mlsys_milp_eval(m, pt), 1.5, 0);
    pt[2] = NAN;    /* NaN is no value: an infinite violation (it used to pass every comparison) */
    CHECK(mlsys_milp_max_violation(m, pt, 0) == INFINITY);
  }
  /* an empty row and a row of zeros are rows (0 <= 1) */
  CHECK_OK(mlsys_milp_add_row(m, 0, NULL, NULL, MLSYS_ROW_LE, 1, NULL));
  CHECK_EQ_INT(mlsys_milp_num_rows(m), 2);
  /* the summed row holds: max x − y gives x = 1.5, y = −5 */
  mlsys_milp_set_maximize(m, 1);
  if (solve_checked(m, &o, &r, "summed row") == MLSYS_OK) CHECK_NEAR(r.objective, 6.5, 1e-9);
  mlsys_milp_result_free(&r);
  /* options */
  o.time_limit = -1;
  CHECK_EQ_INT(mlsys_milp_solve(m, &o, &r), MLSYS_ERR_ARG);
  o.time_limit = 0;
  o.mip_gap_rel = -0.1;
  CHECK_EQ_INT(mlsys_milp_solve(m, &o, &r), MLSYS_ERR_ARG);
  o.mip_gap_rel = 0;
  o.backend = (mlsys_milp_backend)9;
  CHECK_EQ_INT(mlsys_milp_solve(m, &o, &r), MLSYS_ERR_UNSUPPORTED);
  CHECK(r.status == MLSYS_MILP_ERROR && r.x == NULL);
  CHECK_EQ_INT(mlsys_milp_has_backend((mlsys_milp_backend)9), 0);
  CHECK_EQ_INT(mlsys_milp_has_backend(MLSYS_SOLVER_LPSOLVE), 1);
  if (!mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) {
    o.backend = MLSYS_SOLVER_CBC;
    CHECK_EQ_INT(mlsys_milp_solve(m, &o, &r), MLSYS_ERR_UNSUPPORTED);
    CHECK_CONTAINS(mlsys_last_error(), "MLSYS_MILP_CBC");
  }
  /* an unwritable path */
  CHECK_EQ_INT(mlsys_milp_write(m, "/nonexistent-dir/model.lp"), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "/nonexistent-dir/model.lp");
  /* names reach the exported file */
  REQUIRE(scratch() != NULL);
  snprintf(path, sizeof path, "%s/names.lp", scratch());
  CHECK_OK(mlsys_milp_write(m, path));
  {
    char *s = slurp(path);
    CHECK(s && strstr(s, "x_1.a_B9") && strstr(s, " summed:") && strstr(s, " c1:") && strstr(s, "bin_forced"));
    mlsys_free(s);
  }
  mlsys_milp_free(m);
  mlsys_milp_free(NULL);
}

/* ---------------------------------------------------------------------------------------------------------------
   7. Priorities and branching direction do not change the optimum
   --------------------------------------------------------------------------------------------------------------- */
TEST(milp_priorities_and_branching_keep_the_optimum) {
  mlsys_rng g;
  int t, b, ceil_, j, runs = 0;
  mlsys_rng_seed(&g, 31337);
  for (t = 0; t < 8; t++) {
    instance I;
    memset(&I, 0, sizeof I);
    if (t % 2) gen_cover(&g, &I, t);
    else gen_knapsack(&g, &I, t, 1);
    for (j = 0; j < mlsys_milp_num_vars(I.m); j++) mlsys_milp_set_priority(I.m, j, mlsys_rng_range(&g, -2, 3));
    mlsys_milp_set_priority(I.m, -1, 1);     /* out of range: ignored */
    mlsys_milp_set_priority(I.m, 1000, 1);
    for (b = 0; b < nbackends(); b++)
      for (ceil_ = 0; ceil_ < 2; ceil_++) {
        mlsys_milp_opts o = {0};
        mlsys_milp_result r;
        o.backend = backends[b];
        o.branch_ceiling = ceil_;
        if (solve_checked(I.m, &o, &r, I.name) == MLSYS_OK)
          CHECK_MSG(rel_eq(r.objective, I.brute, 1e-9), "%s (%s, ceiling %d): %.10g, enumeration %.10g", I.name,
                    mlsys_milp_backend_name(o.backend), ceil_, r.objective, I.brute);
        else CHECK_MSG(0, "%s: %s", I.name, lasterr());
        mlsys_milp_result_free(&r);
        runs++;
      }
    mlsys_milp_free(I.m);
  }
  CHECK(runs >= 16);
}

/* ---------------------------------------------------------------------------------------------------------------
   8. Maximisation and the objective constant: objective and bound in the caller's sense
   --------------------------------------------------------------------------------------------------------------- */
TEST(milp_maximize_with_constant_reports_callers_sense) {
  int b, mx, relax;
  for (b = 0; b < nbackends(); b++)
    for (mx = 0; mx < 2; mx++)
      for (relax = 0; relax < 2; relax++) {
        /* max 3x + 2y + 10  (min −3x − 2y + 10), x + y <= 4.5, x integer <= 3, y in [0, 2.5]:
           MILP x = 3, y = 1.5 → 22; LP the same (x = 3 is at its bound). With x <= 2.6: MILP x = 2, y = 2.5 → 21,
           LP x = 2.6, y = 1.9 → 21.6. */
        mlsys_milp *m;
        mlsys_milp_opts o = {0};
        mlsys_milp_result r;
        int c[2];
        double v[2] = {1, 1}, s = mx ? 1 : -1, want;
        mlsys_milp_create(&m);
        c[0] = mlsys_milp_add_var(m, MLSYS_VAR_INTEGER, 0, 2.6, 3 * s, NULL);
        c[1] = mlsys_milp_add_var(m, MLSYS_VAR_CONTINUOUS, 0, 2.5, 2 * s, NULL);
        mlsys_milp_add_row(m, 2, c, v, MLSYS_ROW_LE, 4.5, NULL);
        mlsys_milp_set_obj_constant(m, 10);
        mlsys_milp_set_maximize(m, mx);
        o.backend = backends[b];
        o.relax = relax;
        want = relax ? 21.6 - 10 : 21 - 10;
        want = mx ? 10 + want : 10 - want;
        if (solve_checked(m, &o, &r, "hand model") == MLSYS_OK) {
          CHECK_MSG(fabs(r.objective - want) < 1e-9, "%s max=%d relax=%d: %.12g, want %.12g",
                    mlsys_milp_backend_name(o.backend), mx, relax, r.objective, want);
          CHECK(r.status == MLSYS_MILP_OPTIMAL);
          CHECK(r.bound == r.objective);
          CHECK(r.gap == 0);
        } else CHECK_MSG(0, "%s", lasterr());
        mlsys_milp_result_free(&r);
        /* with a gap allowed, the bound is still on the correct side and contains the optimum */
        if (!relax) {
          o.mip_gap_abs = 5;
          if (solve_checked(m, &o, &r, "hand model, gap") == MLSYS_OK) {
            CHECK(mx ? r.bound >= r.objective : r.bound <= r.objective);
            CHECK(mx ? r.bound >= want - 1e-9 : r.bound <= want + 1e-9);
            CHECK(mx ? r.objective <= want + 1e-9 : r.objective >= want - 1e-9);
          }
          mlsys_milp_result_free(&r);
        }
        mlsys_milp_free(m);
      }
}

/* ---------------------------------------------------------------------------------------------------------------
   9. Threads: concurrent solves (one lprec per call; CBC solves are serialised by a mutex)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  instance *inst;
  int n, rounds;
  mlsys_milp_backend backend[2];   /* alternated per solve */
  int relax_every;                 /* every k-th solve relaxed (Clp for CBC, outside the mutex) */
  int wrong, failed, solved;
} thread_job;

static void *thread_main(void *arg) {
  thread_job *j = (thread_job *)arg;
  int k, i;
  for (k = 0; k < j->rounds; k++)
    for (i = 0; i < j->n; i++) {
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      int s = k * j->n + i;
      o.backend = j->backend[s % 2];
      o.relax = j->relax_every && s % j->relax_every == 0;
      if (mlsys_milp_solve(j->inst[i].m, &o, &r) != MLSYS_OK) j->failed++;
      else {
        j->solved++;
        if (!o.relax && !rel_eq(r.objective, j->inst[i].brute, 1e-9)) j->wrong++;
        if (o.relax && (j->inst[i].maximize ? r.objective < j->inst[i].brute - 1e-9 : r.objective > j->inst[i].brute + 1e-9))
          j->wrong++;
        if (mlsys_milp_max_violation(j->inst[i].m, r.x, !o.relax) > 1e-6) j->wrong++;
      }
      mlsys_milp_result_free(&r);
    }
  return NULL;
}

TEST(milp_concurrent_solves_in_two_threads) {
  mlsys_rng g;
  instance inst[2][6];
  int i, t, mode;
  mlsys_rng_seed(&g, 8080);
  for (t = 0; t < 2; t++)
    for (i = 0; i < 6; i++) {
      memset(&inst[t][i], 0, sizeof inst[t][i]);
      if (i % 3 == 0) gen_big_knapsack(&g, &inst[t][i], i);
      else if (i % 3 == 1) gen_assignment(&g, &inst[t][i], i);
      else gen_cover(&g, &inst[t][i], i);
    }
  /* mode 0: lp_solve in both threads; 1: CBC in both; 2: each thread alternating lp_solve / CBC */
  for (mode = 0; mode < (nbackends() == 2 ? 3 : 1); mode++) {
    pthread_t th[2];
    thread_job job[2];
    double t0 = mlsys_now();
    for (t = 0; t < 2; t++) {
      memset(&job[t], 0, sizeof job[t]);
      job[t].inst = inst[t];
      job[t].n = 6;
      job[t].rounds = mode == 0 ? 12 : 4;
      job[t].backend[0] = mode == 1 ? MLSYS_SOLVER_CBC : MLSYS_SOLVER_LPSOLVE;
      job[t].backend[1] = mode == 0 ? MLSYS_SOLVER_LPSOLVE : MLSYS_SOLVER_CBC;
      if (mode == 2 && t == 1) { job[t].backend[0] = MLSYS_SOLVER_CBC; job[t].backend[1] = MLSYS_SOLVER_LPSOLVE; }
      job[t].relax_every = mode ? 4 : 0;
      REQUIRE(pthread_create(&th[t], NULL, thread_main, &job[t]) == 0);
    }
    for (t = 0; t < 2; t++) pthread_join(th[t], NULL);
    for (t = 0; t < 2; t++) {
      CHECK_MSG(job[t].failed == 0 && job[t].wrong == 0, "mode %d thread %d: %d failed, %d wrong of %d", mode, t,
                job[t].failed, job[t].wrong, job[t].solved + job[t].failed);
      CHECK_EQ_INT(job[t].solved, job[t].rounds * job[t].n);
    }
    printf("    %s: 2 threads x %d solves in %.2f s\n",
           mode == 0 ? "lp_solve" : mode == 1 ? "cbc" : "lp_solve+cbc mixed", job[0].rounds * 6, mlsys_now() - t0);
  }
  for (t = 0; t < 2; t++)
    for (i = 0; i < 6; i++) mlsys_milp_free(inst[t][i].m);
}

/* ---------------------------------------------------------------------------------------------------------------
   hard_time_limit: CBC in a forked child. The same answers as in this process (random instances with brute-force
   optima, an infeasible model, an error detail), and a stop request kills the child at once: the parent asks
   should_stop before it reads anything, so the outcome does not depend on timing.
   --------------------------------------------------------------------------------------------------------------- */
TEST(milp_cbc_hard_time_limit_solves_in_a_child) {
  mlsys_rng g;
  int i, same = 0;
  if (!mlsys_milp_has_backend(MLSYS_SOLVER_CBC)) { SKIP_DEP("CBC is not compiled in (scripts/install-deps.sh)"); return; }
  mlsys_rng_seed(&g, 20261129);
  for (i = 0; i < 24; i++) {
    instance I;
    mlsys_milp_opts o = {0}, h;
    mlsys_milp_result r0, r1;
    mlsys_status s0, s1;
    memset(&I, 0, sizeof I);
    if (i < 8) gen_knapsack(&g, &I, i, i % 2);
    else if (i < 16) gen_assignment(&g, &I, i);
    else gen_cover(&g, &I, i);
    REQUIRE(I.m != NULL);
    o.backend = MLSYS_SOLVER_CBC;
    o.time_limit = NEVER_BINDS;
    h = o;
    h.hard_time_limit = 1;
    s0 = solve_checked(I.m, &o, &r0, I.name);
    s1 = solve_checked(I.m, &h, &r1, I.name);
    CHECK_MSG(s0 == s1 && r0.status == r1.status, "%s: %d/%d vs %d/%d", I.name, s0, r0.status, s1, r1.status);
    if (s0 == MLSYS_OK && s1 == MLSYS_OK) {
      CHECK_MSG(r0.objective == r1.objective, "%s: %.17g in process, %.17g in the child", I.name, r0.objective, r1.objective);
      if (I.has_brute) CHECK_NEAR(r1.objective, I.brute, 1e-6);
      CHECK(r1.nodes == r0.nodes);
      same++;
    }
    mlsys_milp_result_free(&r0);
    mlsys_milp_result_free(&r1);
    mlsys_milp_free(I.m);
  }
  CHECK(same == 24);
  {   /* the child's INFEASIBLE and its error detail come back */
    mlsys_milp_opts o = {0};
    mlsys_milp *m = model_parity();
    o.backend = MLSYS_SOLVER_CBC; o.time_limit = NEVER_BINDS; o.hard_time_limit = 1;
    expect_status(m, &o, MLSYS_ERR_INFEASIBLE, MLSYS_MILP_INFEASIBLE, 0, "sum 2x_i = 7, in a child");
    mlsys_milp_free(m);
  }
  {   /* a stop at the first poll: the child is killed; with an incumbent, the incumbent comes back FEASIBLE */
    int k;
    for (k = 0; k < 2; k++) {
      mlsys_milp *m = market_split(7, 5, 40, 1, 0);
      mlsys_milp_opts o = {0};
      mlsys_milp_result r;
      cb_state cs;
      mlsys_status st;
      double *x0 = NULL;
      memset(&cs, 0, sizeof cs);
      o.backend = MLSYS_SOLVER_CBC; o.time_limit = NEVER_BINDS; o.hard_time_limit = 1;
      o.should_stop = stop_after; o.ud = &cs;
      if (k) {   /* any feasible point of this market split: the slack columns take up whatever the x leave */
        mlsys_milp_opts q = {0};
        mlsys_milp_result rq;
        q.backend = MLSYS_SOLVER_CBC; q.time_limit = NEVER_BINDS; q.max_nodes = 1;
        REQUIRE(mlsys_milp_solve(m, &q, &rq) == MLSYS_OK);
        x0 = rq.x;
        o.incumbent = x0;
      }
      st = solve_checked(m, &o, &r, "market split, stopped in a child");
      CHECK_EQ_INT(cs.calls, 1);
      if (!k) {
        CHECK_MSG(st == MLSYS_ERR_CANCELED, "%s", lasterr());
        CHECK(r.status == MLSYS_MILP_NO_SOLUTION);
      } else {
        CHECK_MSG(st == MLSYS_OK && r.status == MLSYS_MILP_FEASIBLE && r.from_incumbent, "%d %d %s", st, r.status, lasterr());
      }
      mlsys_milp_result_free(&r);
      free(x0);
      mlsys_milp_free(m);
    }
  }
}

TEST_MAIN()
