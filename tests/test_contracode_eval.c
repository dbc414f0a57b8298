/* tests/test_contracode_eval.c — mlsys_contracode.h section 7 (issue 25): clone-detection metrics. Oracles: tables
   worked by hand (in the comments), brute force over random score sets with ties (AUROC as the fraction of
   correctly ordered pairs, AP as the mean over positives of the precision at their score, accuracy at every
   threshold counted directly, Levenshtein by the full dynamic-programming matrix), and Table 2.2 of the thesis:
   every ± there is reproduced by the Hanley–McNeil SE from its AUROC and the pair counts (§5.1). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"

/* Spec §7.4 test 19. Positives .9 .8 .4, negatives .7 .3 .4.
   AUROC: .9 and .8 beat all three negatives (3 + 3); .4 beats .3, ties .4 (½), loses to .7 → 1.5; 7.5/9 = 0.833333.
   AP: by decreasing score .9 P (R 1/3, P 1), .8 P (R 2/3, P 1), .7 N, {.4 P, .4 N} (R 1, P 3/5), .3 N:
   1/3·1 + 1/3·1 + 1/3·3/5 = 0.866667. SE(0.8333, 3, 3): D_p = 2(.8333/1.1667 − .6944) = 0.039683,
   D_n = 2(2·.6944/1.8333 − .6944) = 0.126263, SE = √((.138889 + .039683 + .126263)/9) = 0.184039. */
TEST(eval_hand_example) {
  const float s[6] = {.9f, .8f, .4f, .7f, .3f, .4f};
  const uint8_t l[6] = {1, 1, 1, 0, 0, 0};
  double auc = 0, ap = 0, acc = 0, thr = 0;
  CHECK_OK(mlsys_contracode_auroc(s, l, 6, &auc));
  CHECK_NEAR(auc, 7.5 / 9, 1e-12);
  CHECK_OK(mlsys_contracode_average_precision(s, l, 6, &ap));
  CHECK_NEAR(ap, 13.0 / 15, 1e-12);
  CHECK_NEAR(mlsys_contracode_se_auc(5.0 / 6, 3, 3), 0.184039, 5e-7);
  /* thresholds .3 + .6k/(nthresh−1); with 4: .3, .5, .7, .9. At .5: predicted clones .9 .8 .7 → 2 TP + 2 TN
     (.3, .4 negatives) = 4/6; at .7: the same set; at .3: 3 TP + 0 TN = 3/6; at .9: 1 TP + 3 TN = 4/6. Best
     4/6, first reached at .5. */
  CHECK_OK(mlsys_contracode_best_threshold_accuracy(s, l, 6, 4, &acc, &thr));
  CHECK_NEAR(acc, 4.0 / 6, 1e-12);
  CHECK_NEAR(thr, 0.5, 1e-6);
}

TEST(eval_auroc_ap_brute_force_with_ties) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 25);
  for (trial = 0; trial < 300; trial++) {
    int n = mlsys_rng_range(&r, 2, 80), levels = mlsys_rng_range(&r, 1, 12), i, j, np = 0, nn = 0;
    float s[80];
    uint8_t l[80];
    double pairs = 0, auc = -1, ap = -1, apb = 0;
    for (i = 0; i < n; i++) {
      s[i] = (float)mlsys_rng_range(&r, 0, levels - 1) / (float)levels; /* few levels: many ties */
      l[i] = (uint8_t)(mlsys_rng_uniform(&r) < 0.4);
    }
    l[0] = 1, l[1] = 0;
    for (i = 0; i < n; i++) l[i] ? np++ : nn++;
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        if (l[i] && !l[j]) pairs += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
    /* AP = mean over positives of precision among the scores ≥ that positive's score */
    for (i = 0; i < n; i++) {
      int ge = 0, pge = 0;
      if (!l[i]) continue;
      for (j = 0; j < n; j++)
        if (s[j] >= s[i]) ge++, pge += l[j];
      apb += (double)pge / ge;
    }
    apb /= np;
    CHECK_OK(mlsys_contracode_auroc(s, l, (size_t)n, &auc));
    CHECK_NEAR(auc, pairs / ((double)np * nn), 1e-12);
    CHECK_OK(mlsys_contracode_average_precision(s, l, (size_t)n, &ap));
    CHECK_NEAR(ap, apb, 1e-12);
  }
}

TEST(eval_best_threshold_brute_force) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 7);
  for (trial = 0; trial < 200; trial++) {
    int n = mlsys_rng_range(&r, 2, 60), nt = mlsys_rng_range(&r, 2, 120), i, k;
    float s[60], lo = 1e9f, hi = -1e9f;
    uint8_t l[60];
    double best = -1, acc = 0, thr = 0, bt = 0;
    for (i = 0; i < n; i++) {
      s[i] = (float)(mlsys_rng_range(&r, -20, 20)) / 8.0f;
      l[i] = (uint8_t)(mlsys_rng_uniform(&r) < 0.5);
      if (s[i] < lo) lo = s[i];
      if (s[i] > hi) hi = s[i];
    }
    l[0] = 1, l[1] = 0;
    for (k = 0; k < nt; k++) {
      double t = k == nt - 1 ? hi : lo + (double)(hi - lo) * k / (nt - 1);
      int c = 0;
      for (i = 0; i < n; i++) c += ((double)s[i] >= t) == (l[i] != 0);
      if ((double)c / n > best) best = (double)c / n, bt = t;
    }
    CHECK_OK(mlsys_contracode_best_threshold_accuracy(s, l, (size_t)n, nt, &acc, &thr));
    CHECK_NEAR(acc, best, 1e-12);
    CHECK_NEAR(thr, bt, 1e-12);
  }
}

/* Table 2.2 (§5.1): AUROC ± SE in %. n = 2,065 per class, except the learned models at N = 4 (13 windows × 2,065 =
   26,845). Each SE must round to the printed value; with n = 2,065 the learned N = 4 rows would not. */
TEST(eval_table_2_2_standard_errors) {
  static const struct {
    double auc, se;
    long n;
  } t[15] = {{69.55, .81, 2065},  {31.63, .82, 2065}, {12.11, .54, 2065}, /* edit distance */
             {72.31, .79, 2065},  {22.72, .20, 26845}, {3.09, .28, 2065}, /* random-init Transformer */
             {74.04, .77, 2065},  {25.83, .21, 26845}, {4.51, .33, 2065}, /* + RoBERTa MLM */
             {75.73, .75, 2065},  {64.97, .24, 26845}, {58.32, .88, 2065}, /* + ContraCode */
             {79.39, .70, 2065},  {37.81, .24, 26845}, {10.09, .50, 2065}}; /* + ContraCode + MLM */
  int i;
  for (i = 0; i < 15; i++) {
    double se = 100 * mlsys_contracode_se_auc(t[i].auc / 100, t[i].n, t[i].n);
    CHECK_NEAR(se, t[i].se, 0.005);
    if (t[i].n != 2065) CHECK(fabs(100 * mlsys_contracode_se_auc(t[i].auc / 100, 2065, 2065) - t[i].se) > 0.3);
  }
  CHECK(isnan(mlsys_contracode_se_auc(1.5, 10, 10)));
  CHECK(isnan(mlsys_contracode_se_auc(0.5, 0, 10)));
}

/* §7.4 test 21: sims [[.9,.5,.7],[.2,.6,.4]], labels [1,0], N = 3 → [.5, .6]; windows of 2 → [.5,.6] and [.5,.6]
   at start 0 and 1; a window of 1 at start 2 → [.7, .4]. */
TEST(eval_adversarial_reduce) {
  const float sims[6] = {.9f, .5f, .7f, .2f, .6f, .4f};
  const uint8_t l[2] = {1, 0};
  float out[2];
  CHECK_OK(mlsys_contracode_adversarial_reduce(sims, l, 2, 3, 0, 3, out));
  CHECK(out[0] == .5f && out[1] == .6f);
  CHECK_OK(mlsys_contracode_adversarial_reduce(sims, l, 2, 3, 1, 2, out));
  CHECK(out[0] == .5f && out[1] == .6f);
  CHECK_OK(mlsys_contracode_adversarial_reduce(sims, l, 2, 3, 2, 1, out));
  CHECK(out[0] == .7f && out[1] == .4f);
  CHECK(mlsys_contracode_adversarial_reduce(sims, l, 2, 3, 2, 2, out) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_adversarial_reduce(sims, l, 2, 3, 0, 0, out) == MLSYS_ERR_ARG);
}

static int lev_full(const int32_t *a, int na, const int32_t *b, int nb) {
  static int D[41][41];
  int i, j;
  for (i = 0; i <= na; i++) D[i][0] = i;
  for (j = 0; j <= nb; j++) D[0][j] = j;
  for (i = 1; i <= na; i++)
    for (j = 1; j <= nb; j++) {
      int x = D[i - 1][j - 1] + (a[i - 1] != b[j - 1]), y = D[i - 1][j] + 1, z = D[i][j - 1] + 1;
      D[i][j] = x < y ? (x < z ? x : z) : (y < z ? y : z);
    }
  return D[na][nb];
}

/* §7.4 test 21: [5,17,17,9,2] vs [5,17,9,2,2,8]: delete one 17, insert 2 and 8 → distance 3, (6 − 3)/6 = 0.5. */
TEST(eval_lev_similarity) {
  const int32_t a[5] = {5, 17, 17, 9, 2}, b[6] = {5, 17, 9, 2, 2, 8};
  mlsys_rng r;
  int trial;
  CHECK_NEAR(mlsys_contracode_lev_similarity(a, 5, b, 6), 0.5, 1e-15);
  CHECK_NEAR(mlsys_contracode_lev_similarity(b, 6, a, 5), 0.5, 1e-15);
  CHECK_NEAR(mlsys_contracode_lev_similarity(a, 0, b, 0), 1.0, 0);
  CHECK_NEAR(mlsys_contracode_lev_similarity(a, 5, b, 0), 0.0, 0);
  CHECK(isnan(mlsys_contracode_lev_similarity(a, -1, b, 2)));
  mlsys_rng_seed(&r, 3);
  for (trial = 0; trial < 500; trial++) {
    int32_t x[40], y[40];
    int nx = mlsys_rng_range(&r, 0, 40), ny = mlsys_rng_range(&r, 0, 40), i, mx;
    for (i = 0; i < nx; i++) x[i] = mlsys_rng_range(&r, 0, 4);
    for (i = 0; i < ny; i++) y[i] = mlsys_rng_range(&r, 0, 4);
    mx = nx > ny ? nx : ny;
    CHECK_NEAR(mlsys_contracode_lev_similarity(x, nx, y, ny), mx ? (double)(mx - lev_full(x, nx, y, ny)) / mx : 1.0, 1e-15);
  }
}

TEST(eval_bad_input) {
  const float s[3] = {.1f, .2f, NAN};
  const uint8_t all_pos[3] = {1, 1, 1}, mixed[3] = {1, 0, 1};
  double v = 0;
  CHECK(mlsys_contracode_auroc(s, all_pos, 2, &v) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "positives and negatives") != NULL);
  CHECK(mlsys_contracode_average_precision(s, mixed, 3, &v) == MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "NaN") != NULL);
  CHECK(mlsys_contracode_best_threshold_accuracy(s, mixed, 2, 1, &v, NULL) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_auroc(NULL, mixed, 2, &v) == MLSYS_ERR_ARG);
}

TEST_MAIN()
