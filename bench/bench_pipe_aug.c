/* bench/bench_pipe_aug.c — selective data augmentation (thesis ch. 3), the report-only accuracy experiment of spec
   §7.7 `bench_aug` on Fashion-MNIST, in C through mlsys_pipeline.h's selective-augmentation API (spec §3.9):
   mlsys_pipe_logreg_fit, mlsys_pipe_aug_scores, mlsys_pipe_aug_order, mlsys_pipe_aug_weights.

   Protocol (the spec §5.4 pilot's Fashion-MNIST run, itself a scaled-down thesis Table 3.1 / spec §5.3):
     - binary task sandal (label 5, y = 0) vs sneaker (label 7, y = 1); n_train = 1000 drawn without replacement
       from the 12 000 training images of the two classes (seeded per seed); test set = the 2 000 test images of
       the two classes;
     - features = pixels / 255, 2x2 average-pooled to 14x14 = 196-d by default (--full-res: the raw 784-d). Why the
       pooling: the library's Newton fit forms the (d+1)^2 Hessian over every row each iteration, ~16x cheaper at
       196-d (measured on the 2-core box, spec §8.1: 0.17 s vs 3.8 s per fit, so 5 seeds take ~25 s vs ~8 min);
     - logistic regression with C = 10 (the library's α = 1/C on the summed loss, as the authors' code; spec §3.9
       notes sklearn's α = 1/(2C), a factor-2 difference with the Python pilot);
     - f_T = translate by ±2 px in the 4 diagonal directions, edge mode (border pixels replicated, imgaug's
       mode="edge"), applied to the 28x28 image before pooling, so |f_T(z)| = 4 (spec §3.9 "Augmentations");
     - the test set is augmented the same way and appended (10 000 rows): accuracy on the augmented test set, as the
       thesis reports it (spec §3.9, §5.3; thesis L524);
     - scores (LOSS and INFLUENCE) come from one model fit on the un-augmented training set (no score updating; the
       spec's "update" variant and the select_map CPU-saving part of §7.7 are not in this bench);
     - policies (spec §3.9, Table 3.2): random = UNIFORM, loss-proportional = RANDOM_PROP on LOSS scores,
       influence-proportional = RANDOM_PROP on INFLUENCE scores, deterministic influence = DETERMINISTIC on
       INFLUENCE scores. One permutation per (seed, policy); the first k entries form S for every budget k (nested);
     - budgets 0, 5, 10, 25, 100 % of n_train; variants plain (all weights 1) and reweighted (mlsys_pipe_aug_weights:
       each selected point and its 4 copies weigh 1/5, spec §3.9 "Reweighting");
     - mean ± standard error over seeds per cell (spec §5.4's format), next to the pilot's numbers.

   Data: Debian's `dataset-fashion-mnist` (spec §7.5; report-only, so NOT installed by scripts/install-deps.sh). The
   files are gzip'd IDX; zlib is not among the Makefile's LDLIBS, so each file is decompressed by running
   `gzip -dc FILE` through popen() and parsing its stdout. Without the package the bench says how to install it and
   exits 0.

   Usage: bench_pipe_aug [--seeds N] [--quick] [--full-res] [--data DIR] [--infl-alpha A]
     --seeds N       number of seeds (default 5)
     --quick         1 seed, budgets 0/10/100 %
     --full-res      784-d raw pixels instead of 14x14 pooled (slow: ~100 s per seed)
     --data DIR      the IDX .gz directory (default /usr/share/datasets/fashion-mnist)
     --infl-alpha A  the ridge in the influence Hessian H (default 1/C = the fitted objective's; the authors' code
                     used include_reg=False, i.e. 1e-10, spec §3.9)
   Reports, never asserts (spec §7.7); always exits 0 unless the data is unreadable. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "bench/bench_machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IMG 28
#define NPIX (IMG * IMG)
#define NAUG 4                 /* |f_T(z)|: the 4 diagonal translations */
#define SHIFT 2                /* ±2 px for (Fashion-)MNIST (spec §3.9) */
#define CLS_NEG 5              /* sandal */
#define CLS_POS 7              /* sneaker */
#define N_TRAIN 1000
#define C_REG 10.0
#define MAXSEEDS 100

enum { POL_RANDOM, POL_LOSS, POL_INFL, POL_DET, NPOL };
static const char *pol_name[NPOL] = {"random", "loss-proportional", "influence-proportional", "deterministic influence"};
static const int pol_api[NPOL] = {MLSYS_PIPE_POL_UNIFORM, MLSYS_PIPE_POL_RANDOM_PROP, MLSYS_PIPE_POL_RANDOM_PROP,
                                  MLSYS_PIPE_POL_DETERMINISTIC};
static const char *var_name[2] = {"plain", "reweighted"};

static int full_res = 0, D = 196;
static double infl_alpha = -1;   /* < 0: 1/C */

/* ---------------------------------------------------------------------------------------------------------------
   IDX reading through `gzip -dc` (no zlib in LDLIBS)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  int n;
  uint8_t *img;   /* n x 784, only the two classes */
  uint8_t *y;     /* 0 = sandal, 1 = sneaker */
} dataset;

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static FILE *gz_open(const char *path) {
  char cmd[1200];
  if (strchr(path, '\'')) { fprintf(stderr, "bench_pipe_aug: path %s has a quote\n", path); return NULL; }
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
  return popen(cmd, "r");
}

static int gz_close(FILE *f, const char *path) {
  int st = pclose(f);
  if (st != 0) { fprintf(stderr, "bench_pipe_aug: `gzip -dc %s` failed (status %d)\n", path, st); return -1; }
  return 0;
}

/* Reads <prefix>-labels-idx1-ubyte.gz and <prefix>-images-idx3-ubyte.gz of dir and keeps classes 5 and 7. */
static int load_split(const char *dir, const char *prefix, dataset *ds) {
  char lp[1024], ip[1024];
  unsigned char h[16], *lab = NULL, buf[NPIX];
  FILE *f;
  uint32_t n, i, keep = 0;
  snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  if (!(f = gz_open(lp))) return -1;
  if (fread(h, 1, 8, f) != 8 || be32(h) != 0x801) { fprintf(stderr, "bench_pipe_aug: %s: not an IDX1 label file\n", lp); pclose(f); return -1; }
  n = be32(h + 4);
  lab = (unsigned char *)malloc(n ? n : 1);
  if (!lab || fread(lab, 1, n, f) != n) { fprintf(stderr, "bench_pipe_aug: %s: truncated\n", lp); free(lab); pclose(f); return -1; }
  if (gz_close(f, lp)) { free(lab); return -1; }
  for (i = 0; i < n; i++) keep += lab[i] == CLS_NEG || lab[i] == CLS_POS;
  ds->img = (uint8_t *)malloc((size_t)keep * NPIX + 1);
  ds->y = (uint8_t *)malloc(keep + 1);
  ds->n = 0;
  if (!ds->img || !ds->y) { free(lab); return -1; }
  if (!(f = gz_open(ip))) { free(lab); return -1; }
  if (fread(h, 1, 16, f) != 16 || be32(h) != 0x803 || be32(h + 4) != n || be32(h + 8) != IMG || be32(h + 12) != IMG) {
    fprintf(stderr, "bench_pipe_aug: %s: not a %u x 28 x 28 IDX3 image file\n", ip, n);
    free(lab); pclose(f); return -1;
  }
  /* stream the images and keep the two classes (the whole training file is 47 MB decompressed) */
  for (i = 0; i < n; i++) {
    if (fread(buf, 1, NPIX, f) != NPIX) { fprintf(stderr, "bench_pipe_aug: %s: truncated at image %u\n", ip, i); free(lab); pclose(f); return -1; }
    if (lab[i] == CLS_NEG || lab[i] == CLS_POS) {
      memcpy(ds->img + (size_t)ds->n * NPIX, buf, NPIX);
      ds->y[ds->n++] = lab[i] == CLS_POS;
    }
  }
  free(lab);
  return gz_close(f, ip);
}

/* ---------------------------------------------------------------------------------------------------------------
   augmentation and features
   --------------------------------------------------------------------------------------------------------------- */
static const int shifts[NAUG][2] = {{SHIFT, SHIFT}, {SHIFT, -SHIFT}, {-SHIFT, SHIFT}, {-SHIFT, -SHIFT}};   /* (dy, dx) */

static int clampi(int v) { return v < 0 ? 0 : v >= IMG ? IMG - 1 : v; }

/* out(r, c) = in(r − dy, c − dx) with out-of-range reads clamped to the border (imgaug mode="edge") */
static void translate(const uint8_t *in, int dy, int dx, uint8_t *out) {
  int r, c;
  for (r = 0; r < IMG; r++)
    for (c = 0; c < IMG; c++) out[r * IMG + c] = in[clampi(r - dy) * IMG + clampi(c - dx)];
}

static void featurize(const uint8_t *img, float *x) {
  int r, c;
  if (full_res) { for (r = 0; r < NPIX; r++) x[r] = img[r] / 255.0f; return; }
  for (r = 0; r < IMG / 2; r++)
    for (c = 0; c < IMG / 2; c++) {
      const uint8_t *p = img + 2 * r * IMG + 2 * c;
      x[r * (IMG / 2) + c] = (float)((p[0] + p[1] + p[IMG] + p[IMG + 1]) / (4 * 255.0));
    }
}

/* the original's features, then its NAUG translated copies' */
static void featurize_all(const uint8_t *img, float *orig, float *copies) {
  uint8_t t[NPIX];
  int a;
  featurize(img, orig);
  for (a = 0; a < NAUG; a++) {
    translate(img, shifts[a][0], shifts[a][1], t);
    featurize(t, copies + (size_t)a * D);
  }
}

static double accuracy(const float *X, const uint8_t *y, int64_t n, const double *th) {
  int64_t i, ok = 0;
  int j;
  for (i = 0; i < n; i++) {
    double z = th[D];
    for (j = 0; j < D; j++) z += th[j] * X[i * D + j];
    ok += (z >= 0) == (y[i] != 0);
  }
  return (double)ok / (double)n;
}

static void die_api(const char *what) {
  fprintf(stderr, "bench_pipe_aug: %s: %s\n", what, mlsys_last_error());
  exit(1);
}

/* ---------------------------------------------------------------------------------------------------------------
   the table
   --------------------------------------------------------------------------------------------------------------- */
static void mean_se(const double *v, int m, double *mean, double *se) {
  double s = 0, ss = 0;
  int i;
  for (i = 0; i < m; i++) s += v[i];
  s /= m;
  for (i = 0; i < m; i++) ss += (v[i] - s) * (v[i] - s);
  *mean = s;
  *se = m > 1 ? sqrt(ss / (m - 1) / m) : NAN;
}

/* "0.854 ± .004" as in spec §5.4 (the ± part only with more than one seed) */
static const char *cell(const double *v, int m, char *buf, size_t len) {
  double mu, se;
  mean_se(v, m, &mu, &se);
  if (m > 1) {
    char s[32];
    snprintf(s, sizeof s, "%.3f", se);
    snprintf(buf, len, "%.3f ± %s", mu, s[0] == '0' ? s + 1 : s);
  } else snprintf(buf, len, "%.3f", mu);
  return buf;
}

/* the spec §5.4 pilot (Python, Fashion-MNIST 5 vs 7, n_train 1000, ±2 px, 5 seeds): only these four numbers */
static double pilot(int pol, int pct) {
  if (pct == 0) return 0.752;
  if (pct == 100) return 0.896;
  if (pct == 10 && pol == POL_RANDOM) return 0.854;
  if (pct == 10 && pol == POL_INFL) return 0.788;
  return NAN;
}

static void print_machine(int seeds, int quick, const char *dir) {
  char model[256], date[64];
  bench_machine(model, sizeof model, date, sizeof date);
  printf("# Selective augmentation on Fashion-MNIST (thesis ch. 3; spec §3.9, §5.4, §7.7 bench_aug)\n\n");
  printf("machine: %ld CPU(s), %s\n", sysconf(_SC_NPROCESSORS_ONLN), model);
  printf("date: %s; mode: %s; seeds: %d\n", date, quick ? "quick" : "full", seeds);
  printf("data: %s (read with `gzip -dc` through popen)\n", dir);
}

int main(int argc, char **argv) {
  const char *dir = "/usr/share/datasets/fashion-mnist";
  int seeds = 5, quick = 0, i, s, p, v, b, nb;
  int pcts_full[] = {0, 5, 10, 25, 100}, pcts_quick[] = {0, 10, 100}, *pcts;
  dataset tr = {0, NULL, NULL}, te = {0, NULL, NULL};
  double t0 = mlsys_now(), tload, alpha_infl;
  static double acc[NPOL][2][5][MAXSEEDS];
  char probe[1100];

  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--full-res")) full_res = 1;
    else if (!strcmp(argv[i], "--data") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--infl-alpha") && i + 1 < argc) infl_alpha = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--seeds N] [--quick] [--full-res] [--data DIR] [--infl-alpha A]\n", argv[0]);
      return 2;
    }
  }
  if (quick) seeds = 1;
  if (seeds < 1 || seeds > MAXSEEDS) { fprintf(stderr, "bench_pipe_aug: --seeds must be in 1..%d\n", MAXSEEDS); return 2; }
  pcts = quick ? pcts_quick : pcts_full;
  nb = quick ? 3 : 5;
  D = full_res ? NPIX : (IMG / 2) * (IMG / 2);
  alpha_infl = infl_alpha >= 0 ? infl_alpha : 1.0 / C_REG;

  /* report-only bench (spec §7.7): a missing optional package is not a failure */
  snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", dir);
  if (access(probe, R_OK) != 0) {
    printf("bench_pipe_aug: Fashion-MNIST not found (%s).\n"
           "  It is an optional, report-only data set (not in scripts/install-deps.sh); install it with\n"
           "    sudo apt-get install dataset-fashion-mnist\n"
           "  or pass --data DIR. Skipping.\n", probe);
    return 0;
  }
  print_machine(seeds, quick, dir);
  fflush(stdout);
  if (load_split(dir, "train", &tr) || load_split(dir, "t10k", &te)) return 1;
  tload = mlsys_now() - t0;
  printf("task: sandal (5) vs sneaker (7): %d training images of the two classes, n_train = %d drawn per seed; "
         "test: %d images + %d translated copies = %d rows\n", tr.n, N_TRAIN, te.n, NAUG * te.n, (NAUG + 1) * te.n);
  printf("features: %s; logistic regression C = %g (α = 1/C on the summed loss, Newton); influence Hessian ridge α = %g\n",
         full_res ? "raw pixels / 255, 784-d" : "pixels / 255, 2x2 average-pooled to 14x14 = 196-d", C_REG, alpha_infl);
  printf("f_T: translate (±%d, ±%d) px, 4 diagonals, edge mode, on the 28x28 image before pooling (|f_T(z)| = %d); "
         "accuracy on the augmented test set\n", SHIFT, SHIFT, NAUG);
  fflush(stdout);   /* the per-seed progress lines go to stderr */
  if (tr.n < N_TRAIN) { fprintf(stderr, "bench_pipe_aug: only %d training images\n", tr.n); return 1; }

  {
    int64_t nte = (int64_t)(NAUG + 1) * te.n, n = N_TRAIN;
    float *Xte = (float *)malloc(sizeof(float) * (size_t)nte * D);
    uint8_t *yte = (uint8_t *)malloc((size_t)nte);
    float *Xo = (float *)malloc(sizeof(float) * (size_t)n * D);             /* originals */
    float *Xc = (float *)malloc(sizeof(float) * (size_t)n * NAUG * D);      /* copies of point i at i*NAUG*D */
    float *Xa = (float *)malloc(sizeof(float) * (size_t)n * (NAUG + 1) * D); /* the augmented training set */
    uint8_t *yo = (uint8_t *)malloc((size_t)n), *ya = (uint8_t *)malloc((size_t)n * (NAUG + 1));
    double *wa = (double *)malloc(sizeof(double) * (size_t)n * (NAUG + 1)), *w_orig = (double *)malloc(sizeof(double) * (size_t)n),
           *w_aug = (double *)malloc(sizeof(double) * (size_t)n), *sc_loss = (double *)malloc(sizeof(double) * (size_t)n),
           *sc_infl = (double *)malloc(sizeof(double) * (size_t)n), *th = (double *)malloc(sizeof(double) * (size_t)(D + 1));
    int64_t *perm = (int64_t *)malloc(sizeof(int64_t) * (size_t)n), *pool = (int64_t *)malloc(sizeof(int64_t) * (size_t)tr.n);
    int naug[N_TRAIN], nfit = 0;
    double tfit = 0;
    mlsys_pipe_logreg_desc o;
    if (!Xte || !yte || !Xo || !Xc || !Xa || !yo || !ya || !wa || !w_orig || !w_aug || !sc_loss || !sc_infl || !th || !perm || !pool) {
      fprintf(stderr, "bench_pipe_aug: out of memory\n");
      return 1;
    }
    /* augmented test set: the originals, then all their copies appended (spec §3.9, thesis L524) */
    for (i = 0; i < te.n; i++) {
      float cp[NAUG * NPIX];
      int a;
      featurize_all(te.img + (size_t)i * NPIX, Xte + (size_t)i * D, cp);
      yte[i] = te.y[i];
      for (a = 0; a < NAUG; a++) {
        memcpy(Xte + ((size_t)te.n * (1 + a) + i) * D, cp + (size_t)a * D, sizeof(float) * D);
        yte[(size_t)te.n * (1 + a) + i] = te.y[i];
      }
    }
    for (i = 0; i < N_TRAIN; i++) naug[i] = NAUG;
    memset(&o, 0, sizeof o);
    o.C = C_REG;

    for (s = 0; s < seeds; s++) {
      mlsys_rng rng;
      double ts = mlsys_now();
      int k_done_full[2] = {0, 0};
      double acc_full[2] = {0, 0}, acc0;
      /* the seed's training sample: a partial Fisher-Yates draw of n_train of the two classes' training images */
      mlsys_rng_seed(&rng, 0x5eed0000u + (uint64_t)s);
      for (i = 0; i < tr.n; i++) pool[i] = i;
      for (i = 0; i < n; i++) {
        int64_t j = i + (int64_t)mlsys_rng_below(&rng, (uint64_t)(tr.n - i)), t = pool[i];
        pool[i] = pool[j]; pool[j] = t;
        featurize_all(tr.img + (size_t)pool[i] * NPIX, Xo + (size_t)i * D, Xc + (size_t)i * NAUG * D);
        yo[i] = tr.y[pool[i]];
      }
      /* the un-augmented model: the 0 % cell, and the source of both scores (no score updating) */
      {
        double tf = mlsys_now();
        if (mlsys_pipe_logreg_fit(Xo, yo, n, D, &o, th)) die_api("fit on the un-augmented set");
        tfit += mlsys_now() - tf; nfit++;
      }
      acc0 = accuracy(Xte, yte, nte, th);
      /* LOSS is evaluated at α = 0 (spec §3.9, the authors' log_losses(L2_alpha=0)); the alpha argument only enters
         the influence Hessian. INFLUENCE: |g_iᵀ H⁻¹ g_i| over the summed loss of the original training set. */
      if (mlsys_pipe_aug_scores(Xo, yo, n, D, th, MLSYS_PIPE_SCORE_LOSS, 0, 0, sc_loss)) die_api("loss scores");
      if (mlsys_pipe_aug_scores(Xo, yo, n, D, th, MLSYS_PIPE_SCORE_INFLUENCE, alpha_infl, 0, sc_infl)) die_api("influence scores");

      for (p = 0; p < NPOL; p++) {
        const double *sc = p == POL_LOSS ? sc_loss : sc_infl;   /* UNIFORM ignores the scores */
        if (mlsys_pipe_aug_order(sc, n, pol_api[p], 0x9e3779b97f4a7c15ull * (uint64_t)(s + 1) + (uint64_t)p, perm)) die_api("order");
        for (v = 0; v < 2; v++)
          for (b = 0; b < nb; b++) {
            int64_t k = (int64_t)pcts[b] * n / 100, rows = n, r;
            if (k == 0) { acc[p][v][b][s] = acc0; continue; }   /* nothing augmented: the un-augmented model, weights 1 */
            if (k == n && k_done_full[v]) { acc[p][v][b][s] = acc_full[v]; continue; }   /* S = D for every policy */
            if (mlsys_pipe_aug_weights(perm, k, naug, n, w_orig, w_aug)) die_api("weights");
            /* D ∪ ⋃_{i∈S} f_T(z_i): the n originals first, then the copies of the first k points of the order */
            memcpy(Xa, Xo, sizeof(float) * (size_t)n * D);
            memcpy(ya, yo, (size_t)n);
            for (r = 0; r < n; r++) wa[r] = v ? w_orig[r] : 1;
            for (i = 0; i < k; i++) {
              int64_t q = perm[i];
              int a;
              memcpy(Xa + (size_t)rows * D, Xc + (size_t)q * NAUG * D, sizeof(float) * NAUG * D);
              for (a = 0; a < NAUG; a++) { ya[rows + a] = yo[q]; wa[rows + a] = v ? w_aug[q] : 1; }
              rows += NAUG;
            }
            o.weights = wa;
            {
              double tf = mlsys_now();
              if (mlsys_pipe_logreg_fit(Xa, ya, rows, D, &o, th)) die_api("fit on the augmented set");
              tfit += mlsys_now() - tf; nfit++;
            }
            o.weights = NULL;
            acc[p][v][b][s] = accuracy(Xte, yte, nte, th);
            if (k == n) { k_done_full[v] = 1; acc_full[v] = acc[p][v][b][s]; }
          }
      }
      fprintf(stderr, "seed %d/%d: %.1f s\n", s + 1, seeds, mlsys_now() - ts);
    }

    /* ---- the table (spec §5.4 layout), then the pilot's numbers ---- */
    printf("\n| policy | variant |");
    for (b = 0; b < nb; b++) printf(" %d %% |", pcts[b]);
    printf("\n|---|---|");
    for (b = 0; b < nb; b++) printf("---|");
    printf("\n");
    for (v = 0; v < 2; v++)
      for (p = 0; p < NPOL; p++) {
        char buf[64];
        printf("| %s | %s |", pol_name[p], var_name[v]);
        for (b = 0; b < nb; b++) printf(" %s |", cell(acc[p][v][b], seeds, buf, sizeof buf));
        printf("\n");
      }
    for (p = 0; p < NPOL; p++) {
      if (p != POL_RANDOM && p != POL_INFL) continue;
      printf("| pilot (Python, 5 seeds): %s | plain |", pol_name[p]);
      for (b = 0; b < nb; b++) {
        double x = pilot(p, pcts[b]);
        if (isnan(x)) printf(" – |"); else printf(" %.3f |", x);
      }
      printf("\n");
    }

    /* ---- verdict at 10 % (plain), computed from the measured cells ---- */
    {
      int b10 = -1, b0 = -1, b100 = -1, best = -1;
      double mr, ser, mb = -1, seb = 0, m0, se0, m100, se100;
      for (b = 0; b < nb; b++) { if (pcts[b] == 10) b10 = b; if (pcts[b] == 0) b0 = b; if (pcts[b] == 100) b100 = b; }
      mean_se(acc[POL_RANDOM][0][b10], seeds, &mr, &ser);
      for (p = 0; p < NPOL; p++) {
        double m, se;
        if (p == POL_RANDOM) continue;
        mean_se(acc[p][0][b10], seeds, &m, &se);
        if (m > mb) { mb = m; seb = se; best = p; }
      }
      mean_se(acc[POL_RANDOM][0][b0], seeds, &m0, &se0);
      mean_se(acc[POL_RANDOM][0][b100], seeds, &m100, &se100);
      printf("\nnone 0 %%: %.3f; full 100 %%: %.3f; random 10 %% reaches %.1f %% of full-augmentation accuracy and "
             "%.0f %% of its gain over none (thesis Table 3.1: 10 %% of points => 99.86 %% of full accuracy)\n",
             m0, m100, 100 * mr / m100, m100 > m0 ? 100 * (mr - m0) / (m100 - m0) : NAN);
      {
        double diff = mb - mr, sed = sqrt(ser * ser + seb * seb);
        const char *why;
        char sig[96];
        if (seeds > 1) snprintf(sig, sizeof sig, "difference %+.3f ± %.3f s.e.", diff, sed);
        else snprintf(sig, sizeof sig, "difference %+.3f, 1 seed: no error bars", diff);
        if (seeds > 1 ? diff > 2 * sed : diff > 0.005)
          why = "a score-based policy beats random here (the thesis's claim; unlike the spec's pilot)";
        else if (seeds > 1 ? diff < -2 * sed : diff < -0.005)
          why = "random selection beats every score policy on this data (as the spec's pilot found)";
        else
          why = "random selection is competitive on this data (no significant difference; the pilot found random ahead)";
        printf("verdict (plain, 10 %%): random %.3f; best score policy (%s) %.3f; %s -> %s\n", mr, pol_name[best], mb, sig, why);
      }
    }
    printf("\ntime: %.1f s total (data load %.1f s; %d logistic-regression fits, %.2f s each on average)\n",
           mlsys_now() - t0, tload, nfit, tfit / (nfit ? nfit : 1));
    free(Xte); free(yte); free(Xo); free(Xc); free(Xa); free(yo); free(ya); free(wa); free(w_orig); free(w_aug);
    free(sc_loss); free(sc_infl); free(th); free(perm); free(pool);
  }
  free(tr.img); free(tr.y); free(te.img); free(te.y);
  return 0;
}
