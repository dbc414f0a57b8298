/* tests/test_cloud_gbdt.c — the GBDT of mlsys_cloud.h (srift.md §3.3, §7.4 items 11 and 12).

   Oracle: XGBoost 1.7.4 (Debian python3-xgboost), through the committed fixtures of tests/data/cloud/xgb (made by
   tools/xgb_fixtures.py; XGBoost is not needed at test time). The loader must reproduce Booster.predict on the JSON
   model and on the text dump; our trainer, with XGBoost's hyperparameters, must reach a test MAPE within 1.1x of
   XGBoost's for the large (squared error) and small (pseudo-Huber) models, and the two-model split must beat one
   model on small transfers. Plus hand-computed cases: one split on 4 rows, pseudo-Huber derivatives against finite
   differences, weighted medians for the MAPE lower bound, and malformed inputs that must each fail with a named
   error. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include "tests/test.h"
#include <stdlib.h>
#include <string.h>

#define XGB_DIR "tests/data/cloud/xgb/"
#define NFEAT 7
#define MTU_BYTES 9001.0

/* strsep is BSD, not POSIX: split *p at the first delimiter */
static char *next_tok(char **p, char delim) {
  char *s = *p, *e;
  if (!s) return NULL;
  e = strchr(s, delim);
  if (e) {
    *e = 0;
    *p = e + 1;
  } else {
    *p = NULL;
  }
  return s;
}

/* ---- a small CSV reader for the fixtures: a header line, then numbers ("nan" allowed) ---- */
typedef struct {
  int nrow, ncol;
  char names[16][32];
  float *v;    /* [nrow][ncol] */
} csv_t;

static int csv_read(const char *path, csv_t *c) {
  char *data = NULL, *p, *line;
  size_t len = 0;
  int cap = 0;
  memset(c, 0, sizeof *c);
  if (mlsys_read_file(path, &data, &len) != MLSYS_OK) return 0;
  p = data;
  line = next_tok(&p, '\n');
  {
    char *tok, *hp = line;
    while ((tok = next_tok(&hp, ',')) && c->ncol < 16) snprintf(c->names[c->ncol++], 32, "%s", tok);
  }
  while (p && *p) {
    int k;
    char *e;
    line = next_tok(&p, '\n');
    if (!*line) continue;
    if (c->nrow == cap) {
      cap = cap ? 2 * cap : 256;
      c->v = (float *)realloc(c->v, (size_t)cap * c->ncol * sizeof(float));
    }
    for (k = 0; k < c->ncol; k++) {
      c->v[(size_t)c->nrow * c->ncol + k] = strtof(line, &e);
      line = *e == ',' ? e + 1 : e;
    }
    c->nrow++;
  }
  mlsys_free(data);
  return c->nrow > 0;
}

static int csv_col(const csv_t *c, const char *name) {
  int k;
  for (k = 0; k < c->ncol; k++)
    if (strcmp(c->names[k], name) == 0) return k;
  return -1;
}

/* rows whose log2(s) is on one side of the MTU; side: 0 = all, 1 = s <= MTU, 2 = s > MTU */
static int pick_rows(const csv_t *c, int side, float *X, float *y, int *idx) {
  int i, k, n = 0, l2 = csv_col(c, "log2s");
  for (i = 0; i < c->nrow; i++) {
    const float *r = c->v + (size_t)i * c->ncol;
    double s = ldexp(1.0, (int)r[l2]);
    if ((side == 1 && s > MTU_BYTES) || (side == 2 && s <= MTU_BYTES)) continue;
    if (X)
      for (k = 0; k < NFEAT; k++) X[(size_t)n * NFEAT + k] = r[k];
    if (y) y[n] = r[NFEAT];
    if (idx) idx[n] = i;
    n++;
  }
  return n;
}

typedef struct {
  char name[16], objective[32];
  int rounds, max_depth, max_bin;
  double eta, lambda, gamma, mcw, huber_slope, base_score;
} xgb_params;

static int xgb_read_params(const char *model, xgb_params *out) {
  char *data = NULL, *p, *line;
  size_t len;
  int found = 0;
  if (mlsys_read_file(XGB_DIR "params.csv", &data, &len) != MLSYS_OK) return 0;
  p = data;
  next_tok(&p, '\n');
  while (p && (line = next_tok(&p, '\n')) && *line) {
    xgb_params q;
    memset(&q, 0, sizeof q);
    if (sscanf(line, "%15[^,],%31[^,],%d,%d,%lf,%lf,%lf,%lf,%d,%lf,%lf", q.name, q.objective, &q.rounds,
               &q.max_depth, &q.eta, &q.lambda, &q.gamma, &q.mcw, &q.max_bin, &q.huber_slope, &q.base_score) == 11 &&
        strcmp(q.name, model) == 0) {
      *out = q;
      found = 1;
    }
  }
  mlsys_free(data);
  return found;
}

static mlsys_cloud_gbdt_params to_params(const xgb_params *x) {
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt_params_default(&p);
  p.obj = strcmp(x->objective, "reg:pseudohubererror") == 0 ? MLSYS_CLOUD_OBJ_PSEUDO_HUBER : MLSYS_CLOUD_OBJ_SQUARED;
  p.n_trees = x->rounds;
  p.max_depth = x->max_depth;
  p.max_bin = x->max_bin;
  p.eta = x->eta;
  p.lambda = x->lambda;
  p.gamma = x->gamma;
  p.min_child_weight = x->mcw;
  if (p.obj == MLSYS_CLOUD_OBJ_PSEUDO_HUBER) p.huber_slope = x->huber_slope;
  p.base_score = x->base_score;
  return p;
}

/* the fixtures: loaded once */
static csv_t g_train, g_test, g_pred, g_miss;
static int g_loaded = -1;

static int fixtures(void) {
  if (g_loaded < 0)
    g_loaded = csv_read(XGB_DIR "train.csv", &g_train) && csv_read(XGB_DIR "test.csv", &g_test) &&
               csv_read(XGB_DIR "test_pred.csv", &g_pred) && csv_read(XGB_DIR "missing.csv", &g_miss) &&
               g_pred.nrow == g_test.nrow && g_train.ncol == NFEAT + 1;
  return g_loaded;
}

#define NEED_FIXTURES()                                                                             \
  do {                                                                                              \
    if (!fixtures()) {                                                                              \
      test__fail(__FILE__, __LINE__, "fixtures missing in " XGB_DIR " (run from the repo root)");   \
      return;                                                                                       \
    }                                                                                               \
  } while (0)

static double rel_err(double a, double b) {
  double d = fabs(a - b), s = fabs(b);
  return s > 1e-30 ? d / s : d;
}

/* mlsys_cloud_gbdt_predict_rows (rows in blocks through each tree) against mlsys_cloud_gbdt_predict row by row:
   the same bits, or the count of rows that differ (-1: the call failed) */
static int batch_differs(const mlsys_cloud_gbdt *m, const float *X, int nrow, int ncol) {
  double *out = (double *)malloc((size_t)(nrow ? nrow : 1) * sizeof *out);
  int i, bad = 0;
  if (!out || mlsys_cloud_gbdt_predict_rows(m, X, nrow, ncol, out) != MLSYS_OK) {
    free(out);
    return -1;
  }
  for (i = 0; i < nrow; i++) {
    double p = mlsys_cloud_gbdt_predict(m, X + (size_t)i * ncol);
    if (memcmp(&p, &out[i], sizeof p)) bad++;
  }
  free(out);
  return bad;
}

/* max relative error of a model against XGBoost's predictions on the test rows and on the rows with NaNs; the
   batch prediction must give the row-by-row bits on both sets (else *exact = 0 and the error is infinite) */
static double max_rel_vs_xgb(const mlsys_cloud_gbdt *m, const char *model, int *exact) {
  int i, col = csv_col(&g_pred, model), mcol = csv_col(&g_miss, model);
  double worst = 0;
  *exact = 1;
  if (batch_differs(m, g_test.v, g_test.nrow, g_test.ncol) || batch_differs(m, g_miss.v, g_miss.nrow, g_miss.ncol)) {
    *exact = 0;
    return INFINITY;
  }
  for (i = 0; i < g_test.nrow; i++) {
    double p = mlsys_cloud_gbdt_predict(m, g_test.v + (size_t)i * g_test.ncol);
    float want = g_pred.v[(size_t)i * g_pred.ncol + col];
    double e = rel_err(p, want);
    if ((float)p != want) *exact = 0;
    if (e > worst) worst = e;
  }
  for (i = 0; i < g_miss.nrow; i++) {
    double p = mlsys_cloud_gbdt_predict(m, g_miss.v + (size_t)i * g_miss.ncol);
    float want = g_miss.v[(size_t)i * g_miss.ncol + mcol];
    double e = rel_err(p, want);
    if ((float)p != want) *exact = 0;
    if (e > worst) worst = e;
  }
  return worst;
}

static const char *MODELS[3] = {"large", "small", "single"};

TEST(xgb_json_reproduces_booster_predict) {
  int k;
  NEED_FIXTURES();
  for (k = 0; k < 3; k++) {
    char path[256];
    mlsys_cloud_gbdt *m = NULL;
    xgb_params xp;
    int exact;
    double e;
    snprintf(path, sizeof path, XGB_DIR "%s.json", MODELS[k]);
    REQUIRE(xgb_read_params(MODELS[k], &xp));
    CHECK_OK(mlsys_cloud_gbdt_load_file(path, NAN, &m));
    REQUIRE(m);
    CHECK_EQ_INT(mlsys_cloud_gbdt_ntrees(m), xp.rounds);
    CHECK_EQ_INT(mlsys_cloud_gbdt_nfeatures(m), NFEAT);
    CHECK_NEAR(mlsys_cloud_gbdt_base_score(m), (float)xp.base_score, 0);
    CHECK_EQ_INT(mlsys_cloud_gbdt_objective(m), strcmp(MODELS[k], "small") == 0 ? MLSYS_CLOUD_OBJ_PSEUDO_HUBER
                                                                                 : MLSYS_CLOUD_OBJ_SQUARED);
    e = max_rel_vs_xgb(m, MODELS[k], &exact);
    printf("    %-6s JSON: max relative error vs Booster.predict %.3g (%s)\n", MODELS[k], e,
           exact ? "bit-identical float32" : "not bit-identical");
    CHECK(e <= 1e-5);
    CHECK(exact);   /* same float32 walk and summation order as XGBoost 1.7's CPU predictor */
    mlsys_cloud_gbdt_free(m);
  }
}

/* dump_model prints thresholds and leaves with 9 significant digits (float's max_digits10), so the dump holds the
   float32 model exactly: with the right base_score it predicts bit-identically too. */
TEST(xgb_text_dump_reproduces_booster_predict) {
  int k;
  NEED_FIXTURES();
  for (k = 0; k < 3; k++) {
    char path[256];
    mlsys_cloud_gbdt *m = NULL, *j = NULL;
    xgb_params xp;
    int exact, i;
    double e;
    REQUIRE(xgb_read_params(MODELS[k], &xp));
    snprintf(path, sizeof path, XGB_DIR "%s.dump.txt", MODELS[k]);
    CHECK_OK(mlsys_cloud_gbdt_load_file(path, xp.base_score, &m));
    snprintf(path, sizeof path, XGB_DIR "%s.json", MODELS[k]);
    CHECK_OK(mlsys_cloud_gbdt_load_file(path, NAN, &j));
    REQUIRE(m && j);
    CHECK_EQ_INT(mlsys_cloud_gbdt_ntrees(m), xp.rounds);
    e = max_rel_vs_xgb(m, MODELS[k], &exact);
    printf("    %-6s dump: max relative error vs Booster.predict %.3g (%s)\n", MODELS[k], e,
           exact ? "bit-identical float32" : "not bit-identical");
    CHECK(e <= 1e-5);
    CHECK(exact);
    /* and node for node the same trees as the JSON (same breadth-first numbering after loading) */
    for (i = 0; i < mlsys_cloud_gbdt_ntrees(m); i++) {
      int n = mlsys_cloud_gbdt_tree_nodes(m, i), q;
      CHECK_EQ_INT(n, mlsys_cloud_gbdt_tree_nodes(j, i));
      for (q = 0; q < n && q < mlsys_cloud_gbdt_tree_nodes(j, i); q++) {
        mlsys_cloud_gbdt_node_info a, b;
        mlsys_cloud_gbdt_node(m, i, q, &a);
        mlsys_cloud_gbdt_node(j, i, q, &b);
        if (a.is_leaf != b.is_leaf || a.feature != b.feature || a.value != b.value || a.left != b.left ||
            a.default_left != b.default_left) {
          CHECK_MSG(0, "tree %d node %d differs between the dump and the JSON", i, q);
          break;
        }
      }
    }
    mlsys_cloud_gbdt_free(m);
    mlsys_cloud_gbdt_free(j);
  }
}

static double mape_of(const mlsys_cloud_gbdt *m, const csv_t *c, int side, const char *xgb_col, double *xgb_mape) {
  int i, n = 0, l2 = csv_col(c, "log2s"), pc = xgb_col ? csv_col(&g_pred, xgb_col) : -1;
  double s = 0, sx = 0;
  for (i = 0; i < c->nrow; i++) {
    const float *r = c->v + (size_t)i * c->ncol;
    double sz = ldexp(1.0, (int)r[l2]), y = r[NFEAT];
    if ((side == 1 && sz > MTU_BYTES) || (side == 2 && sz <= MTU_BYTES)) continue;
    s += fabs(mlsys_cloud_gbdt_predict(m, r) - y) / y;
    if (pc >= 0) sx += fabs(g_pred.v[(size_t)i * g_pred.ncol + pc] - y) / y;
    n++;
  }
  if (xgb_mape) *xgb_mape = n ? sx / n : NAN;
  return n ? s / n : NAN;
}

/* largest |ours - XGBoost| / |XGBoost| over the test rows on one side of the MTU */
static double max_rel_vs_xgb_col(const mlsys_cloud_gbdt *m, int side, const char *col) {
  int i, l2 = csv_col(&g_test, "log2s"), pc = csv_col(&g_pred, col);
  double worst = 0;
  for (i = 0; i < g_test.nrow; i++) {
    const float *r = g_test.v + (size_t)i * g_test.ncol;
    double sz = ldexp(1.0, (int)r[l2]), e;
    if ((side == 1 && sz > MTU_BYTES) || (side == 2 && sz <= MTU_BYTES)) continue;
    e = rel_err(mlsys_cloud_gbdt_predict(m, r), g_pred.v[(size_t)i * g_pred.ncol + pc]);
    if (e > worst) worst = e;
  }
  return worst;
}

static mlsys_cloud_gbdt *train_like(const char *model, int side, double *secs) {
  xgb_params xp;
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  float *X = (float *)malloc((size_t)g_train.nrow * NFEAT * sizeof(float));
  float *y = (float *)malloc((size_t)g_train.nrow * sizeof(float));
  int n;
  double t0;
  if (!xgb_read_params(model, &xp) || !X || !y) {
    free(X);
    free(y);
    return NULL;
  }
  p = to_params(&xp);
  n = pick_rows(&g_train, side, X, y, NULL);
  t0 = test__now();
  if (mlsys_cloud_gbdt_train(X, y, n, NFEAT, &p, &m) != MLSYS_OK) printf("    train: %s\n", mlsys_last_error());
  if (secs) *secs = test__now() - t0;
  free(X);
  free(y);
  return m;
}

TEST(trainer_large_squared_matches_xgboost_mape) {
  mlsys_cloud_gbdt *m, *x = NULL;
  double ours, xgb, secs, worst;
  int i, n, same = 1;
  NEED_FIXTURES();
  m = train_like("large", 2, &secs);
  REQUIRE(m);
  ours = mape_of(m, &g_test, 2, "large", &xgb);
  printf("    large (s > MTU, squared error): test MAPE ours %.4f, XGBoost %.4f (trained in %.2f s)\n", ours, xgb,
         secs);
  CHECK(ours <= 1.1 * xgb);
  /* stronger than the spec's 1.1x: the same hist semantics and float32 numerics give XGBoost's model itself (here
     bit-identical with gcc on x86-64; 1e-4 leaves room for another compiler's rounding) */
  worst = max_rel_vs_xgb_col(m, 2, "large");
  printf("    large: our predictions vs XGBoost's, max relative difference %.3g\n", worst);
  CHECK(worst <= 1e-4);
  /* the same hist semantics give XGBoost's first tree: same splits and leaves (to float rounding) */
  CHECK_OK(mlsys_cloud_gbdt_load_file(XGB_DIR "large.json", NAN, &x));
  REQUIRE(x);
  n = mlsys_cloud_gbdt_tree_nodes(m, 0);
  CHECK_EQ_INT(n, mlsys_cloud_gbdt_tree_nodes(x, 0));
  for (i = 0; i < n && same; i++) {
    mlsys_cloud_gbdt_node_info a, b;
    mlsys_cloud_gbdt_node(m, 0, i, &a);
    mlsys_cloud_gbdt_node(x, 0, i, &b);
    same = a.is_leaf == b.is_leaf && a.feature == b.feature && rel_err(a.value, b.value) <= 1e-5;
    /* XGBoost rounds the parent's gain to float before subtracting: its loss_chg carries ~1e-7 of the parent's
       G²/(H+λ), so gains agree to 1e-3 relative, not to float precision */
    if (!a.is_leaf) same = same && rel_err(a.gain, b.gain) <= 1e-3;
    CHECK_MSG(same, "tree 0 node %d: ours %s f%d %.9g gain %.6g, XGBoost %s f%d %.9g gain %.6g", i,
              a.is_leaf ? "leaf" : "split", a.feature, a.value, a.gain, b.is_leaf ? "leaf" : "split", b.feature,
              b.value, b.gain);
  }
  mlsys_cloud_gbdt_free(x);
  mlsys_cloud_gbdt_free(m);
}

TEST(trainer_small_pseudo_huber_matches_xgboost_mape) {
  mlsys_cloud_gbdt *m;
  double ours, xgb, secs, worst;
  NEED_FIXTURES();
  m = train_like("small", 1, &secs);
  REQUIRE(m);
  ours = mape_of(m, &g_test, 1, "small", &xgb);
  printf("    small (s <= MTU, pseudo-Huber): test MAPE ours %.4f, XGBoost %.4f (trained in %.2f s)\n", ours, xgb,
         secs);
  CHECK(ours <= 1.1 * xgb);
  worst = max_rel_vs_xgb_col(m, 1, "small");
  printf("    small: our predictions vs XGBoost's, max relative difference %.3g\n", worst);
  CHECK(worst <= 1e-4);
  mlsys_cloud_gbdt_free(m);
}

/* srift.md §3.3: one squared-error model on everything fits large buffers and fails small ones (even negative
   bandwidth); the two-model split fixes that. With our trainer. */
TEST(two_model_split_beats_single_model_on_small_transfers) {
  mlsys_cloud_gbdt *small, *single;
  double split_mape, single_mape, xgb_single;
  int i, neg = 0, l2;
  NEED_FIXTURES();
  small = train_like("small", 1, NULL);
  single = train_like("single", 0, NULL);
  REQUIRE(small && single);
  split_mape = mape_of(small, &g_test, 1, NULL, NULL);
  single_mape = mape_of(single, &g_test, 1, "single", &xgb_single);
  l2 = csv_col(&g_test, "log2s");
  for (i = 0; i < g_test.nrow; i++) {
    const float *r = g_test.v + (size_t)i * g_test.ncol;
    if (ldexp(1.0, (int)r[l2]) <= MTU_BYTES && mlsys_cloud_gbdt_predict(single, r) < 0) neg++;
  }
  printf("    s <= MTU: split model MAPE %.4f, single model %.4f (XGBoost's single %.4f), %d negative predictions\n",
         split_mape, single_mape, xgb_single, neg);
  CHECK(split_mape < single_mape);
  CHECK(split_mape < 0.5 * single_mape);
  mlsys_cloud_gbdt_free(small);
  mlsys_cloud_gbdt_free(single);
}

static char *save_to_mem(const mlsys_cloud_gbdt *m, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  if (mlsys_cloud_gbdt_save(m, f) != MLSYS_OK) {
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  return buf;
}

TEST(save_load_round_trip_is_bit_identical) {
  mlsys_cloud_gbdt *m = NULL, *back = NULL, *x = NULL, *xback = NULL;
  char *text, *text2;
  size_t len, len2;
  int i, bad = 0;
  NEED_FIXTURES();
  m = train_like("small", 1, NULL);
  REQUIRE(m);
  text = save_to_mem(m, &len);
  REQUIRE(text);
  CHECK_OK(mlsys_cloud_gbdt_load(text, len, "saved", NAN, &back));
  REQUIRE(back);
  for (i = 0; i < g_test.nrow; i++) {
    const float *r = g_test.v + (size_t)i * g_test.ncol;
    if (memcmp(&(double){mlsys_cloud_gbdt_predict(m, r)}, &(double){mlsys_cloud_gbdt_predict(back, r)},
               sizeof(double)) != 0)
      bad++;
  }
  for (i = 0; i < g_miss.nrow; i++) {
    const float *r = g_miss.v + (size_t)i * g_miss.ncol;
    if (mlsys_cloud_gbdt_predict(m, r) != mlsys_cloud_gbdt_predict(back, r)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(mlsys_cloud_gbdt_objective(back), MLSYS_CLOUD_OBJ_PSEUDO_HUBER);
  text2 = save_to_mem(back, &len2);
  REQUIRE(text2);
  CHECK(len == len2 && memcmp(text, text2, len) == 0);   /* a fixed point: saving again gives the same bytes */
  free(text);
  free(text2);
  /* an XGBoost JSON model converted to ours keeps its predictions */
  CHECK_OK(mlsys_cloud_gbdt_load_file(XGB_DIR "large.json", NAN, &x));
  REQUIRE(x);
  text = save_to_mem(x, &len);
  REQUIRE(text);
  CHECK_OK(mlsys_cloud_gbdt_load(text, len, "saved-json", NAN, &xback));
  REQUIRE(xback);
  for (i = 0, bad = 0; i < g_test.nrow; i++) {
    const float *r = g_test.v + (size_t)i * g_test.ncol;
    if (mlsys_cloud_gbdt_predict(x, r) != mlsys_cloud_gbdt_predict(xback, r)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  free(text);
  mlsys_cloud_gbdt_free(m);
  mlsys_cloud_gbdt_free(back);
  mlsys_cloud_gbdt_free(x);
  mlsys_cloud_gbdt_free(xback);
}

TEST(pseudo_huber_gradient_hessian_vs_finite_differences) {
  static const double preds[] = {-30, -2.5, -0.3, 0, 0.01, 0.7, 4, 55};
  static const double slopes[] = {0.05, 1, 3.5};
  int i, j;
  for (j = 0; j < 3; j++)
    for (i = 0; i < 8; i++) {
      double d = slopes[j], p = preds[i], y = 0.4, h = 1e-4 * (1 + fabs(p)), l, g, hs, lp, ln, gp, gn;
      mlsys_cloud_gbdt_loss(MLSYS_CLOUD_OBJ_PSEUDO_HUBER, d, p, y, &l, &g, &hs);
      mlsys_cloud_gbdt_loss(MLSYS_CLOUD_OBJ_PSEUDO_HUBER, d, p + h, y, &lp, &gp, NULL);
      mlsys_cloud_gbdt_loss(MLSYS_CLOUD_OBJ_PSEUDO_HUBER, d, p - h, y, &ln, &gn, NULL);
      CHECK_NEAR(g, (lp - ln) / (2 * h), 1e-6 * (1 + fabs(g)) + 1e-7 * fabs(l) / h);
      CHECK_NEAR(hs, (gp - gn) / (2 * h), 1e-5 * (1 + hs));
      /* closed forms: the loss is δ²(√q − 1), |g| < δ, 0 < h <= 1 */
      CHECK(fabs(g) < d && hs > 0 && hs <= 1);
    }
  {
    double l, g, h;
    mlsys_cloud_gbdt_loss(MLSYS_CLOUD_OBJ_PSEUDO_HUBER, 2, 3, 3, &l, &g, &h);   /* at z = 0: g = 0, h = 1 */
    CHECK_NEAR(l, 0, 0);
    CHECK_NEAR(g, 0, 0);
    CHECK_NEAR(h, 1, 0);
    mlsys_cloud_gbdt_loss(MLSYS_CLOUD_OBJ_SQUARED, 0, 5, 2, &l, &g, &h);
    CHECK_NEAR(l, 4.5, 0);
    CHECK_NEAR(g, 3, 0);
    CHECK_NEAR(h, 1, 0);
  }
}

/* 4 rows, x = 1..4, y = 1,1,3,3, base 0, squared error, λ = 1, eta 0.5, depth 1. g = -1,-1,-3,-3, h = 1:
   G = -8, H = 4. Candidate "x < 2": 1/2 + 49/4 - 64/5 = -0.05; "x < 3": 4/3 + 36/3 - 64/5 = 0.5333...;
   "x < 4": 25/4 + 9/2 - 12.8 = -2.05. So the split is x < 3 with gain 8/15, leaves 0.5·(2/3) and 0.5·(6/3). */
TEST(tiny_hand_computed_split) {
  static const float X[4] = {1, 2, 3, 4}, y[4] = {1, 1, 3, 3};
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  mlsys_cloud_gbdt_node_info r, a, b;
  float x;
  mlsys_cloud_gbdt_params_default(&p);
  p.n_trees = 1;
  p.max_depth = 1;
  p.eta = 0.5;
  p.base_score = 0;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 4, 1, &p, &m));
  CHECK_EQ_INT(mlsys_cloud_gbdt_tree_nodes(m, 0), 3);
  CHECK_OK(mlsys_cloud_gbdt_node(m, 0, 0, &r));
  CHECK_OK(mlsys_cloud_gbdt_node(m, 0, 1, &a));
  CHECK_OK(mlsys_cloud_gbdt_node(m, 0, 2, &b));
  CHECK(!r.is_leaf && r.feature == 0 && r.value == 3.0f && r.left == 1 && r.right == 2);
  CHECK_NEAR(r.gain, 8.0 / 15.0, 1e-6);
  CHECK_NEAR(r.cover, 4, 0);
  CHECK(a.is_leaf && b.is_leaf);
  CHECK_NEAR(a.value, (float)(2.0 / 3.0) * 0.5f, 0);
  CHECK_NEAR(b.value, 1.0, 0);
  CHECK_NEAR(a.cover, 2, 0);
  x = 2.9f;
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &x), (float)(2.0 / 3.0) * 0.5f, 0);
  x = 3.0f;   /* x < 3 is false: right */
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &x), 1.0, 0);
  mlsys_cloud_gbdt_free(m);
  /* gamma above the gain forbids the split (XGBoost compares min_split_loss with loss_chg = 8/15) */
  p.gamma = 0.54;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 4, 1, &p, &m));
  CHECK_EQ_INT(mlsys_cloud_gbdt_tree_nodes(m, 0), 1);
  CHECK_OK(mlsys_cloud_gbdt_node(m, 0, 0, &r));
  CHECK_NEAR(r.value, (float)(8.0 / 5.0) * 0.5f, 0);   /* root leaf 0.5 · 8/(4+1) */
  mlsys_cloud_gbdt_free(m);
  /* min_child_weight 3: no side of any split has hessian >= 3 on both sides */
  p.gamma = 0;
  p.min_child_weight = 3;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 4, 1, &p, &m));
  CHECK_EQ_INT(mlsys_cloud_gbdt_tree_nodes(m, 0), 1);
  mlsys_cloud_gbdt_free(m);
}

/* Missing values learn a direction: NaN rows look like the high-x rows here, so NaN must go right, and when they look
   like the low ones, left. */
TEST(missing_values_learn_default_direction) {
  float X[40], y[40], x;
  int i, dir;
  for (dir = 0; dir < 2; dir++) {
    mlsys_cloud_gbdt_params p;
    mlsys_cloud_gbdt *m = NULL;
    mlsys_cloud_gbdt_node_info r;
    for (i = 0; i < 40; i++) {
      X[i] = i < 30 ? (float)(i % 15) : NAN;
      y[i] = i < 30 ? (i % 15 < 7 ? 0.0f : 10.0f) : (dir ? 10.0f : 0.0f);
    }
    mlsys_cloud_gbdt_params_default(&p);
    p.n_trees = 20;
    p.max_depth = 2;
    p.base_score = 5;
    REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 40, 1, &p, &m));
    CHECK_OK(mlsys_cloud_gbdt_node(m, 0, 0, &r));
    CHECK_EQ_INT(r.default_left, !dir);
    x = NAN;
    CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &x), dir ? 10 : 0, 0.05);
    x = 2;
    CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &x), 0, 0.05);
    x = 12;
    CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &x), 10, 0.05);
    mlsys_cloud_gbdt_free(m);
  }
}

/* More distinct values than bins: quantile cuts, every threshold a data value (or the top cut), at most
   max_bin - 1 distinct thresholds per feature, and the fit still follows a smooth target. */
TEST(quantile_bins_when_values_exceed_max_bin) {
  enum { N = 3000 };
  static float X[N * 2], y[N];
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  mlsys_rng rng;
  float thr[4096];
  int i, t, nthr = 0, bad = 0;
  double err = 0;
  mlsys_rng_seed(&rng, 7);
  for (i = 0; i < N; i++) {
    X[2 * i] = (float)mlsys_rng_uniform(&rng) * 10;
    X[2 * i + 1] = (float)mlsys_rng_uniform(&rng);
    y[i] = (float)(sin(X[2 * i]) + 0.1 * X[2 * i + 1]);
  }
  mlsys_cloud_gbdt_params_default(&p);
  p.max_bin = 16;
  p.n_trees = 50;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, N, 2, &p, &m));
  for (t = 0; t < mlsys_cloud_gbdt_ntrees(m); t++)
    for (i = 0; i < mlsys_cloud_gbdt_tree_nodes(m, t); i++) {
      mlsys_cloud_gbdt_node_info n;
      int k, found = 0;
      mlsys_cloud_gbdt_node(m, t, i, &n);
      if (n.is_leaf || n.feature != 0) continue;
      for (k = 0; k < nthr; k++) found |= thr[k] == n.value;
      if (!found && nthr < 4096) thr[nthr++] = n.value;
    }
  for (i = 0; i < nthr; i++) {
    int k, isdata = 0;
    for (k = 0; k < N; k++) isdata |= X[2 * k] == thr[i];
    if (!isdata) bad++;
  }
  CHECK(nthr >= 8 && nthr <= 15);
  CHECK_EQ_INT(bad, 0);
  for (i = 0; i < N; i++) err += fabs(mlsys_cloud_gbdt_predict(m, X + 2 * i) - y[i]);
  CHECK(err / N < 0.1);   /* 16 steps of sin over [0, 10]: mean error well under 0.1 */
  mlsys_cloud_gbdt_free(m);
}

TEST(same_seed_same_model_bytes) {
  enum { N = 500 };
  static float X[N * 3], y[N];
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *a = NULL, *b = NULL, *c = NULL;
  char *ta, *tb, *tc;
  size_t la, lb, lc;
  mlsys_rng rng;
  int i;
  mlsys_rng_seed(&rng, 3);
  for (i = 0; i < N * 3; i++) X[i] = (float)mlsys_rng_uniform(&rng);
  for (i = 0; i < N; i++) y[i] = X[3 * i] * 3 + X[3 * i + 1] * X[3 * i + 2] + (float)(0.1 * mlsys_rng_normal(&rng));
  mlsys_cloud_gbdt_params_default(&p);
  p.obj = MLSYS_CLOUD_OBJ_PSEUDO_HUBER;
  p.huber_slope = 0.5;
  p.subsample = 0.7;
  p.n_trees = 30;
  p.seed = 42;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, N, 3, &p, &a));
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, N, 3, &p, &b));
  p.seed = 43;
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, N, 3, &p, &c));
  ta = save_to_mem(a, &la);
  tb = save_to_mem(b, &lb);
  tc = save_to_mem(c, &lc);
  REQUIRE(ta && tb && tc);
  CHECK(la == lb && memcmp(ta, tb, la) == 0);
  CHECK(!(la == lc && memcmp(ta, tc, la) == 0));   /* the seed does drive the sampling */
  free(ta);
  free(tb);
  free(tc);
  mlsys_cloud_gbdt_free(a);
  mlsys_cloud_gbdt_free(b);
  mlsys_cloud_gbdt_free(c);
}

/* spec item 12. Groups (feature vectors) and labels, weights 1/y:
   A = (0,0): {1, 2, 4}: W = 1.75, half 0.875, cumulative 1 at y = 1 -> c = 1; errors 0 + 1/2 + 3/4 = 1.25
   B = (1,0): {10, 10, 30, 30}: W = 0.2667, cumulative 0.1, 0.2 >= 0.1333 at y = 10 -> c = 10; errors 2 · 2/3
   C = (1,1): {1, 3, 3.5}: the plain median would be 3, the weighted one is 1 (weight 1 of 1.619); errors
      0 + 2/3 + 2.5/3.5
   D = (NaN,1): {5}: error 0. Mean over 11 rows. */
TEST(mape_lower_bound_weighted_median) {
  static const float X[11 * 2] = {0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, NAN, 1, 0, 0, 1, 0, 1, 1, 1, 0};
  static const float y[11] = {1, 10, 1, 2, 10, 3, 5, 4, 30, 3.5f, 30};
  double want = (1.25 + 4.0 / 3.0 + 2.0 / 3.0 + 2.5 / 3.5) / 11.0, got, c, best = 1e300, bestc = 0;
  float ybad[11];
  got = mlsys_cloud_mape_lower_bound(X, y, 11, 2);
  CHECK_NEAR(got, want, 1e-12);
  /* the constant is optimal: no c on a fine grid does better for group C */
  for (c = 0.5; c <= 4; c += 0.001) {
    double s = fabs(c - 1) / 1 + fabs(c - 3) / 3 + fabs(c - 3.5f) / 3.5f;
    if (s < best) { best = s; bestc = c; }
  }
  CHECK_NEAR(bestc, 1.0, 1e-9);
  /* one row per vector: no error left */
  CHECK_NEAR(mlsys_cloud_mape_lower_bound(X, y, 1, 2), 0, 0);
  memcpy(ybad, y, sizeof ybad);
  ybad[4] = 0;
  CHECK(isnan(mlsys_cloud_mape_lower_bound(X, ybad, 11, 2)));
  CHECK_CONTAINS(mlsys_last_error(), "y[4]");
  CHECK(isnan(mlsys_cloud_mape_lower_bound(X, y, 0, 2)));
  CHECK_CONTAINS(mlsys_last_error(), "nrow");
}

TEST(mape_lower_bound_below_trained_models) {
  float *X, *y;
  int n;
  double lb;
  mlsys_cloud_gbdt *m;
  NEED_FIXTURES();
  X = (float *)malloc((size_t)g_train.nrow * NFEAT * sizeof(float));
  y = (float *)malloc((size_t)g_train.nrow * sizeof(float));
  REQUIRE(X && y);
  n = pick_rows(&g_train, 2, X, y, NULL);
  lb = mlsys_cloud_mape_lower_bound(X, y, n, NFEAT);
  m = train_like("large", 2, NULL);
  REQUIRE(m);
  {
    double s = 0;
    int i;
    for (i = 0; i < n; i++) s += fabs(mlsys_cloud_gbdt_predict(m, X + (size_t)i * NFEAT) - y[i]) / y[i];
    printf("    s > MTU train rows: lower bound %.4f, our training MAPE %.4f\n", lb, s / n);
    CHECK(lb > 0.02 && lb < s / n);   /* lognormal(0, 0.1) noise leaves several percent; no model goes below */
  }
  mlsys_cloud_gbdt_free(m);
  free(X);
  free(y);
}

/* ---- malformed inputs: each a status and a message that names the problem ---- */
static void expect_load_error(const char *text, double bs, mlsys_status want, const char *needle) {
  mlsys_cloud_gbdt *m = (mlsys_cloud_gbdt *)&m;   /* must be reset to NULL */
  mlsys_status st = mlsys_cloud_gbdt_load(text, strlen(text), "bad.model", bs, &m);
  CHECK_MSG(st == want, "wanted status %d, got %d (%s) for: %.60s", (int)want, (int)st, mlsys_last_error(), text);
  CHECK(m == NULL);
  CHECK_CONTAINS(mlsys_last_error(), needle);
  CHECK_CONTAINS(mlsys_last_error(), "bad.model");
}

#define JSON_HEAD                                                                                   \
  "{\"learner\":{\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_feature\":\"2\"},"        \
  "\"objective\":{\"name\":\"reg:squarederror\"},\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"trees\":["
#define JSON_TAIL "]}}}}"
#define JSON_TREE(l, r, f)                                                                          \
  "{\"left_children\":[" l "],\"right_children\":[" r "],\"split_indices\":[" f                   \
  "],\"split_conditions\":[0.5,1,2],\"default_left\":[1,0,0]}"

TEST(json_minimal_model_by_hand) {
  const char *t = JSON_HEAD JSON_TREE("1,-1,-1", "2,-1,-1", "1,0,0") JSON_TAIL;
  mlsys_cloud_gbdt *m = NULL;
  float x[2] = {0, 0.25f};
  REQUIRE_OK(mlsys_cloud_gbdt_load(t, strlen(t), "hand.json", NAN, &m));
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, x), 1.5, 0);   /* 0.25 < 0.5: left leaf 1, + base 0.5 */
  x[1] = 0.5f;
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, x), 2.5, 0);   /* not < 0.5: right */
  x[1] = NAN;
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, x), 1.5, 0);   /* default_left */
  mlsys_cloud_gbdt_free(m);
}

TEST(malformed_models_are_named_errors) {
  char *big = NULL;
  size_t len = 0;
  mlsys_cloud_gbdt *m = NULL;
  /* truncated XGBoost JSON */
  REQUIRE(mlsys_read_file(XGB_DIR "small.json", &big, &len) == MLSYS_OK);
  CHECK_EQ_INT(mlsys_cloud_gbdt_load(big, len / 2, "cut.json", NAN, &m), MLSYS_ERR_PARSE);
  CHECK(m == NULL);
  CHECK_CONTAINS(mlsys_last_error(), "cut.json:1:");
  mlsys_free(big);
  expect_load_error(JSON_HEAD JSON_TREE("1,-1,-1", "7,-1,-1", "1,0,0") JSON_TAIL, NAN, MLSYS_ERR_PARSE,
                    "child index 7 out of range");
  expect_load_error(JSON_HEAD JSON_TREE("1,0,-1", "2,2,-1", "1,0,0") JSON_TAIL, NAN, MLSYS_ERR_PARSE,
                    "cycle");
  expect_load_error(JSON_HEAD JSON_TREE("1,-1,-1", "-1,-1,-1", "1,0,0") JSON_TAIL, NAN, MLSYS_ERR_PARSE,
                    "one child");
  expect_load_error(JSON_HEAD JSON_TREE("1,-1,-1", "2,-1,-1", "5,0,0") JSON_TAIL, NAN, MLSYS_ERR_PARSE,
                    "num_feature is 2");
  expect_load_error(JSON_HEAD "{\"left_children\":[1,-1],\"right_children\":[2,-1,-1],\"split_indices\":[0,0,0],"
                    "\"split_conditions\":[0.5,1,2],\"default_left\":[1,0,0]}" JSON_TAIL, NAN, MLSYS_ERR_PARSE,
                    "'right_children' has 3 elements");
  expect_load_error("{\"learner\":{\"learner_model_param\":{\"base_score\":\"5E-1\"},\"objective\":{\"name\":"
                    "\"binary:logistic\"},\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"trees\":[]}}}}",
                    NAN, MLSYS_ERR_UNSUPPORTED, "binary:logistic");
  expect_load_error("{\"learner\":{\"learner_model_param\":{\"base_score\":\"abc\"}}}", NAN, MLSYS_ERR_PARSE,
                    "base_score");
  /* text dumps */
  expect_load_error("booster[0]:\n0:[f0<1] yes=1,no=2,missing=1\n\t1:leaf=0.5\n\t2:lef=1\n", 0.5, MLSYS_ERR_PARSE,
                    "bad.model:4: expected 'leaf=' or '['");
  expect_load_error("booster[0]:\n0:[f0<1] yes=1,no=7,missing=1\n\t1:leaf=0.5\n\t2:leaf=1\n", 0.5, MLSYS_ERR_PARSE,
                    "child 7 of node 0");
  expect_load_error("booster[0]:\n0:[f0<1] yes=1,no=2,missing=1\n\t1:[f0<0] yes=0,no=3,missing=0\n\t2:leaf=1\n"
                    "\t3:leaf=2\n", 0.5, MLSYS_ERR_PARSE, "cycle");
  expect_load_error("booster[0]:\n0:[f0<1] yes=1,no=2,missing=5\n\t1:leaf=0.5\n\t2:leaf=1\n", 0.5, MLSYS_ERR_PARSE,
                    "missing=5");
  expect_load_error("booster[0]:\n0:[size<1] yes=1,no=2,missing=1\n1:leaf=0.5\n2:leaf=1\n", 0.5, MLSYS_ERR_PARSE,
                    "f<index>");
  expect_load_error("booster[0]:\n0:leaf=0.5\nbooster[2]:\n0:leaf=1\n", 0.5, MLSYS_ERR_PARSE, "expected booster[1]");
  expect_load_error("booster[0]:\n0:leaf=0.5\n0:leaf=1\n", 0.5, MLSYS_ERR_PARSE, "node id 0 appears twice");
  expect_load_error("booster[0]:\n0:leaf=0.5\n", NAN, MLSYS_ERR_ARG, "base_score");
  /* ours and garbage */
  expect_load_error("mlsys-cloud-gbdt 1\nobjective squared 1\nnfeatures 2\nbase_score 0.5\nntrees 2\ntree 0 1\n"
                    "l 0.5 nan\nend\n", NAN, MLSYS_ERR_PARSE, "expected 'tree 1");
  expect_load_error("mlsys-cloud-gbdt 2\n", NAN, MLSYS_ERR_PARSE, "version 1");
  expect_load_error("mlsys-cloud-gbdt 1\nobjective squared 1\nnfeatures 2\nbase_score 0.5\nntrees 1\ntree 0 3\n"
                    "s 0 0.5 1 2 0 1 1\ns 1 0.5 0 2 0 1 1\nl 1 1\nend\n", NAN, MLSYS_ERR_PARSE, "cycle");
  expect_load_error("hello", NAN, MLSYS_ERR_PARSE, "not a GBDT model");
  expect_load_error("", NAN, MLSYS_ERR_PARSE, "not a GBDT model");
  CHECK_EQ_INT(mlsys_cloud_gbdt_load_file("tests/data/cloud/xgb/no-such-file.json", NAN, &m), MLSYS_ERR_IO);
}

TEST(bad_training_input_and_predict_width_are_named_errors) {
  float X[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4] = {1, 2, 3, 4};
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  double out[4];
  mlsys_cloud_gbdt_params_default(&p);
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 0, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "nrow");
  y[2] = NAN;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "y[2]");
  y[2] = 3;
  X[5] = INFINITY;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "X[2][1] is infinite");
  X[5] = 6;
  p.max_depth = 31;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "max_depth");
  p.max_depth = 6;
  p.obj = MLSYS_CLOUD_OBJ_PSEUDO_HUBER;
  p.huber_slope = -1;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "huber_slope");
  p.huber_slope = 1;
  p.subsample = 1.5;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "subsample");
  p.subsample = 1;
  y[1] = 1e31f;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "y[1] is not finite or exceeds 1e30");
  /* pseudo-Huber far from a label with λ = 0: g ~ δ, h ~ (δ/z)³ = 1e-42 (still a float), so the leaf that isolates
     the row weighs ~ δ (z/δ)³ = 1e40 and overflows float: an error, not an inf leaf */
  y[1] = 1e12f;
  p.huber_slope = 1e-2;
  p.lambda = 0;
  p.min_child_weight = 0;
  p.base_score = 0;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "overflows float32");
  y[1] = 2;
  mlsys_cloud_gbdt_params_default(&p);
  p.lambda = -1;
  CHECK_EQ_INT(mlsys_cloud_gbdt_train(X, y, 4, 2, &p, &m), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "lambda");
  CHECK(m == NULL);
  /* a model that splits on feature 1 cannot predict rows of one column */
  {
    const char *t = JSON_HEAD JSON_TREE("1,-1,-1", "2,-1,-1", "1,0,0") JSON_TAIL;
    REQUIRE_OK(mlsys_cloud_gbdt_load(t, strlen(t), "hand.json", NAN, &m));
    CHECK_EQ_INT(mlsys_cloud_gbdt_predict_rows(m, X, 4, 1, out), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "feature index 1 but rows have 1 columns");
    CHECK_OK(mlsys_cloud_gbdt_predict_rows(m, X, 4, 2, out));
    CHECK_NEAR(out[0], 2.5, 0);   /* x1 = 2 is not < 0.5 */
    CHECK_EQ_INT(mlsys_cloud_gbdt_node(m, 0, 3, &(mlsys_cloud_gbdt_node_info){0}), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "no node 3");
    mlsys_cloud_gbdt_free(m);
  }
}

/* A zeroed params struct is valid: n_trees, max_depth, max_bin, eta, huber_slope and subsample take their
   defaults, lambda / gamma / min_child_weight / base_score are literal zeros. */
TEST(zeroed_params_are_usable) {
  float X[6] = {1, 2, 3, 4, 5, 6}, y[6] = {1, 1, 1, 5, 5, 5};
  mlsys_cloud_gbdt_params p;
  mlsys_cloud_gbdt *m = NULL;
  memset(&p, 0, sizeof p);
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 6, 1, &p, &m));
  CHECK_EQ_INT(mlsys_cloud_gbdt_ntrees(m), 100);
  CHECK_NEAR(mlsys_cloud_gbdt_base_score(m), 0, 0);
  /* splitting stops once loss_chg <= 1e-6 (XGBoost's kRtEps): residuals near 4e-4 remain */
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &X[0]), 1, 1e-3);
  CHECK_NEAR(mlsys_cloud_gbdt_predict(m, &X[5]), 5, 1e-3);
  mlsys_cloud_gbdt_free(m);
  mlsys_cloud_gbdt_params_default(&p);
  REQUIRE_OK(mlsys_cloud_gbdt_train(X, y, 6, 1, &p, &m));
  CHECK_NEAR(mlsys_cloud_gbdt_base_score(m), 3, 0);   /* NaN base_score -> median(y) = (1 + 5) / 2 */
  mlsys_cloud_gbdt_free(m);
}

TEST_MAIN()
