/* tests/test_contracode_clone.c — mlsys_contracode.h section 7 (issue 25): the offline clone-detection set, pair
   construction and the evaluation driver. Oracles: spec §7.4 test 23 worked by hand, closed-form pair counts over
   random problem sizes with every pair checked against its labels, brute-force recomputation of the scorers (the
   Levenshtein similarity and the count-vector cosine of the SentencePiece ids), a perfect embedding scorer (AUROC
   1, and still 1 against a semantics-preserving adversary), the Mann–Whitney monotonicity of the adversarial
   reduce (an adversary that only lowers positives and raises negatives cannot raise AUROC, in any window), and the
   set's counts measured on Debian's node-lodash 4.17.21, node-underscore 1.13.4 and node-ramda 0.28.0. Spec test 20
   (Table 2.2's ± values) is tests/test_contracode_eval.c's eval_table_2_2_standard_errors. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#include <sys/stat.h>

static int pair_cmp(const void *x, const void *y) {
  const mlsys_contracode_clone_pair *a = (const mlsys_contracode_clone_pair *)x, *b = (const mlsys_contracode_clone_pair *)y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : a->b > b->b;
}

/* Spec §7.4 test 23: sizes {2, 3} → (2−1)² + (3−1)² = 1 + 4 = 5 positives, with 0 + 1 self pairs. Programs 0,1 are
   problem 0 and 2,3,4 problem 1: positives (0,1) and (2,3) (2,4) (3,3) (3,4). Negatives: a from problems 0..P−2 =
   {0, 1}, b from problems 1..P−1 = {2, 3, 4}, 5 of them. */
TEST(clone_pairs_faithful_test23) {
  const int prob[5] = {0, 0, 1, 1, 1};
  const int want[5][2] = {{0, 1}, {2, 3}, {2, 4}, {3, 3}, {3, 4}};
  mlsys_contracode_clone_pair *p = NULL;
  size_t np = 0, nn = 0, i;
  REQUIRE_OK(mlsys_contracode_clone_pairs(prob, 5, MLSYS_CONTRACODE_PAIRS_FAITHFUL, 7, &p, &np, &nn));
  CHECK_EQ_INT((int)np, 5);
  CHECK_EQ_INT((int)nn, 5);
  for (i = 0; i < 5; i++) {
    CHECK_EQ_INT(p[i].a, want[i][0]);
    CHECK_EQ_INT(p[i].b, want[i][1]);
    CHECK_EQ_INT(p[i].label, 1);
  }
  for (i = 5; i < 10; i++) {
    CHECK(p[i].a == 0 || p[i].a == 1);
    CHECK(p[i].b >= 2 && p[i].b <= 4);
    CHECK_EQ_INT(p[i].label, 0);
  }
  free(p);
}

/* Random problem sizes (empty problems, singletons and big ones): counts in closed form, then every pair checked. */
TEST(clone_pairs_invariants_random) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 23);
  for (trial = 0; trial < 300; trial++) {
    int P = mlsys_rng_range(&r, 2, 30), n = 0, prob[600], size[30], i, mode = trial & 1, self = 0;
    long sumc2 = 0, sumsq = 0, total;
    mlsys_contracode_clone_pair *p = NULL, *q = NULL;
    size_t np = 0, nn = 0, k;
    for (i = 0; i < P; i++) {
      /* every fifth trial: mostly singletons, so negatives vastly outnumber positives (the rejection sampler) */
      size[i] = trial % 5 == 4 ? (i < 2 ? 2 : mlsys_rng_range(&r, 0, 1)) : mlsys_rng_range(&r, 0, 6);
      if (!size[i]) continue;
      sumc2 += (long)size[i] * (size[i] - 1) / 2;
      sumsq += (long)(size[i] - 1) * (size[i] - 1);
      self += size[i] > 2 ? size[i] - 2 : 0;
    }
    /* programs of a problem interleaved with others' (the builder sorts them, the pair code must not rely on it) */
    for (i = 0; i < P; i++) {
      int c;
      for (c = 0; c < size[i]; c++) prob[n++] = i;
    }
    for (i = n - 1; i > 0; i--) {
      int j = mlsys_rng_range(&r, 0, i), t = prob[i];
      prob[i] = prob[j], prob[j] = t;
    }
    total = (long)n * (n - 1) / 2 - sumc2;
    if (!sumc2 || !total) {
      CHECK(mlsys_contracode_clone_pairs(prob, n, mode, 1, &p, &np, &nn) == MLSYS_ERR_ARG);
      continue;
    }
    REQUIRE_OK(mlsys_contracode_clone_pairs(prob, n, mode, (uint64_t)trial, &p, &np, &nn));
    if (mode == MLSYS_CONTRACODE_PAIRS_DISTINCT) {
      CHECK_EQ_INT((long)np, sumc2);
      CHECK_EQ_INT((long)nn, sumc2 < total ? sumc2 : total);
      for (k = 0; k < np + nn; k++) {
        CHECK(p[k].a < p[k].b);
        CHECK_EQ_INT(p[k].label, prob[p[k].a] == prob[p[k].b]);
        CHECK_EQ_INT(p[k].label, k < np);
      }
      /* no duplicates: sorted neighbours differ (with np = Σ C(k,2) distinct same-problem pairs, all are there) */
      q = (mlsys_contracode_clone_pair *)malloc((np + nn) * sizeof *q);
      REQUIRE(q != NULL);
      memcpy(q, p, (np + nn) * sizeof *q);
      qsort(q, np + nn, sizeof *q, pair_cmp);
      for (k = 1; k < np + nn; k++) CHECK(pair_cmp(q + k - 1, q + k) != 0);
      free(q);
    } else {
      int nself = 0, lastp = prob[0];
      CHECK_EQ_INT((long)np, sumsq);
      CHECK_EQ_INT((long)nn, sumsq);
      for (k = 0; k < np; k++) {
        CHECK_EQ_INT(p[k].label, 1);
        CHECK_EQ_INT(prob[p[k].a], prob[p[k].b]);
        nself += p[k].a == p[k].b;
      }
      CHECK_EQ_INT(nself, self);
      for (i = 0; i < n; i++)
        if (prob[i] > lastp) lastp = prob[i];
      for (k = np; k < np + nn; k++) {
        /* a from problems 0..P'−2, b from problems 1..P'−1 (P' = largest id + 1) */
        CHECK_EQ_INT(p[k].label, 0);
        CHECK(prob[p[k].a] <= lastp - 1);
        CHECK(prob[p[k].b] >= 1);
      }
    }
    /* the seed reproduces the draw */
    {
      mlsys_contracode_clone_pair *p2 = NULL;
      size_t np2 = 0, nn2 = 0;
      REQUIRE_OK(mlsys_contracode_clone_pairs(prob, n, mode, (uint64_t)trial, &p2, &np2, &nn2));
      CHECK(np2 == np && nn2 == nn && !memcmp(p, p2, (np + nn) * sizeof *p));
      free(p2);
    }
    free(p);
  }
}

/* Large sparse case (rejection sampling): 2,000 programs, 10 pairs of clones: 10 distinct negatives. */
TEST(clone_pairs_sparse_and_bad_input) {
  static int prob[2000];
  mlsys_contracode_clone_pair *p = NULL;
  size_t np = 0, nn = 0, k;
  int i, one[3] = {0, 0, 0}, neg[2] = {0, -1};
  for (i = 0; i < 2000; i++) prob[i] = i < 20 ? i / 2 : i;
  REQUIRE_OK(mlsys_contracode_clone_pairs(prob, 2000, MLSYS_CONTRACODE_PAIRS_DISTINCT, 3, &p, &np, &nn));
  CHECK_EQ_INT((int)np, 10);
  CHECK_EQ_INT((int)nn, 10);
  for (k = 10; k < 20; k++) CHECK(p[k].a < p[k].b && prob[p[k].a] != prob[p[k].b]);
  qsort(p + 10, 10, sizeof *p, pair_cmp);
  for (k = 11; k < 20; k++) CHECK(pair_cmp(p + k - 1, p + k) != 0);
  free(p);
  p = NULL;
  CHECK(mlsys_contracode_clone_pairs(prob + 20, 100, 0, 1, &p, &np, &nn) == MLSYS_ERR_ARG);   /* all singletons */
  CHECK_CONTAINS(mlsys_last_error(), "no problem has two programs");
  CHECK(mlsys_contracode_clone_pairs(one, 3, 0, 1, &p, &np, &nn) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no negatives");
  CHECK(mlsys_contracode_clone_pairs(neg, 2, 0, 1, &p, &np, &nn) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_clone_pairs(one, 3, 5, 1, &p, &np, &nn) == MLSYS_ERR_ARG);
  CHECK(p == NULL);
}

/* The name rules and comment stripping, on inline modules. */
TEST(clone_set_rules) {
  const char *js = "/** JSDoc @param {Array} a */\nexport default function f(a) { return a; } // trailing\n";
  const mlsys_contracode_clone_file f[] = {
      {"lodash-es", "map.js", js, 0},          {"lodash-es", "_baseMap.js", js, 0},
      {"lodash-es", "lodash.default.js", js, 0}, {"lodash-es", "lodash.js", js, 0},
      {"lodash-es", "wrapperAt.js", js, 0},    {"lodash-es", "indexOf.js", js, 0},
      {"lodash-es", "index.js", js, 0},        {"lodash-es", "only.js", js, 0},
      {"underscore", "map.js", js, 0},         {"underscore", "index-all.js", js, 0},
      {"underscore", "underscore-array-methods.js", js, 0}, {"underscore", "indexOf.js", js, 0},
      {"underscore", "README.md", js, 0},      {"ramda", "internal/map.js", js, 0},
      {"ramda", "map.js", js, 0},              {"ramda", "es/map.js", js, 0},
      {"ramda", "wrapperAt.js", js, 0},        {"ramda", "ramda.js", js, 0}};
  mlsys_contracode_clone_file g[sizeof f / sizeof f[0]];
  mlsys_contracode_clone_set s;
  int i, nf = (int)(sizeof f / sizeof f[0]);
  for (i = 0; i < nf; i++) g[i] = f[i], g[i].len = strlen(js);
  REQUIRE_OK(mlsys_contracode_clone_set_build(g, nf, 2, &s));
  /* kept: indexOf (lodash, underscore), map (lodash, underscore, ramda map.js; es/map.js is a duplicate name) */
  CHECK_EQ_INT(s.nlibs, 3);
  CHECK_EQ_INT(s.nproblems, 2);
  CHECK_EQ_INT(s.nprograms, 5);
  if (s.nproblems == 2 && s.nprograms == 5) {
    CHECK_STR(s.problem_name[0], "indexOf");
    CHECK_STR(s.problem_name[1], "map");
    CHECK_EQ_INT(s.problem_nlibs[0], 2);
    CHECK_EQ_INT(s.problem_nlibs[1], 3);
    CHECK_EQ_INT(s.problem[0], 0);
    CHECK_EQ_INT(s.lib[1], 1);
    CHECK_EQ_INT(s.problem[2], 1);
    CHECK_EQ_INT(s.lib[2], 0);
    CHECK_EQ_INT(s.lib[3], 1);
    CHECK_EQ_INT(s.lib[4], 2);
    CHECK_STR(s.lib_name[2], "ramda");
    for (i = 0; i < 5; i++) {
      CHECK_STR(s.src[i], "export default function f(a) {\n  return a;\n}\n");
      CHECK_EQ_INT((int)s.len[i], (int)strlen(s.src[i]));
    }
  }
  /* left out: _baseMap, lodash.default, lodash, wrapperAt ×2, index, index-all, underscore-array-methods,
     README.md, internal/map, es/map (second ramda map), ramda = 12; single-library: only */
  CHECK_EQ_INT(s.nskipped, 12);
  CHECK_EQ_INT(s.nsingle, 1);
  mlsys_contracode_clone_set_free(&s);
  /* min_libs 3: only map */
  REQUIRE_OK(mlsys_contracode_clone_set_build(g, nf, 3, &s));
  CHECK_EQ_INT(s.nproblems, 1);
  CHECK_EQ_INT(s.nprograms, 3);
  mlsys_contracode_clone_set_free(&s);
  /* nothing shared → named error; a kept file that does not parse → its path */
  CHECK(mlsys_contracode_clone_set_build(g, 8, 2, &s) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no API name");
  CHECK_EQ_INT(s.nprograms, 0);
  g[14].src = "export default function (", g[14].len = strlen(g[14].src);
  CHECK(mlsys_contracode_clone_set_build(g, nf, 2, &s) == MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "ramda/map.js");
  CHECK(s.src == NULL && s.nprograms == 0);
  CHECK(mlsys_contracode_clone_set_build(g, -1, 2, &s) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_clone_set_build(g, nf, 0, &s) == MLSYS_ERR_ARG);
}

/* dpkg's version of a package, or "" if it is not installed. */
static void pkg_version(const char *pkg, char *out, size_t cap) {
  char cmd[256];
  FILE *p;
  out[0] = 0;
  snprintf(cmd, sizeof cmd, "dpkg-query -W -f '${Version}' %s 2>/dev/null", pkg);
  if (!(p = popen(cmd, "r"))) return;
  if (!fgets(out, (int)cap, p)) out[0] = 0;
  pclose(p);
}

/* Loads the default libraries; 0 with a skip reason in why when a package is missing or another version. */
static int load_installed(mlsys_contracode_clone_file **files, int *nfiles, char *why, size_t cap) {
  static const char *const libs[3][2] = MLSYS_CONTRACODE_CLONE_DEFAULT_LIBS;
  static const char *const pkg[3][2] = {
      {"node-lodash", "4.17.21+"}, {"node-underscore", "1.13.4~"}, {"node-ramda", "0.28.0+"}};
  int i;
  for (i = 0; i < 3; i++) {
    char v[128];
    pkg_version(pkg[i][0], v, sizeof v);
    if (strncmp(v, pkg[i][1], strlen(pkg[i][1]))) {
      snprintf(why, cap, "%s %s installed; the counts are pinned for %s* (scripts/install-deps.sh)", pkg[i][0],
               v[0] ? v : "not", pkg[i][1]);
      return 0;
    }
  }
  for (i = 0; i < 3; i++)
    if (mlsys_contracode_clone_read_dir(libs[i][0], libs[i][1], files, nfiles) != MLSYS_OK) {
      snprintf(why, cap, "%.300s", mlsys_last_error());
      return 0;
    }
  return 1;
}

/* The set on the installed packages. Measured: 1,063 .js files (lodash-es 640, underscore modules 161, ramda es
   262); 177 API names (136 in two libraries, 41 in all three), 395 programs, 259 unordered positive pairs and
   C(395,2) − 259 = 77,556 negatives. Spec §7.5 measured 178 (137 + 41), 397, 260 and 78,346 with lodash-es and
   ramda from npm: one two-library name fewer here. */
TEST(clone_set_installed_packages) {
  mlsys_contracode_clone_file *files = NULL;
  mlsys_contracode_clone_set s;
  mlsys_contracode_clone_pair *p = NULL;
  size_t np = 0, nn = 0;
  char why[512];
  int nfiles = 0, i, n2 = 0, n3 = 0, map = -1, nmap = 0;
  const char *mapl[3] = {0, 0, 0};
  if (!load_installed(&files, &nfiles, why, sizeof why)) {
    mlsys_contracode_clone_files_free(files, nfiles);
    SKIP_DEP("%.200s", why);
  }
  CHECK_EQ_INT(nfiles, 1063);
  REQUIRE_OK(mlsys_contracode_clone_set_build(files, nfiles, 2, &s));
  for (i = 0; i < s.nproblems; i++) {
    s.problem_nlibs[i] == 2 ? n2++ : n3++;
    if (!strcmp(s.problem_name[i], "map")) map = i;
  }
  CHECK_EQ_INT(s.nproblems, 177);
  CHECK_EQ_INT(n2, 136);
  CHECK_EQ_INT(n3, 41);
  CHECK_EQ_INT(s.nprograms, 395);
  REQUIRE_OK(mlsys_contracode_clone_pairs(s.problem, s.nprograms, MLSYS_CONTRACODE_PAIRS_DISTINCT, 1, &p, &np, &nn));
  CHECK_EQ_INT((int)np, 259);
  CHECK_EQ_INT((long)s.nprograms * (s.nprograms - 1) / 2 - (long)np, 77556);
  free(p);
  REQUIRE(map >= 0);
  for (i = 0; i < s.nprograms; i++) {
    /* JSDoc and comments are gone (lodash's and ramda's modules carry JSDoc blocks) */
    CHECK(!strstr(s.src[i], "/*") && !strstr(s.src[i], "@param"));
    if (s.problem[i] == map && nmap < 3) mapl[nmap++] = s.lib_name[s.lib[i]];
  }
  /* map is in all three, its programs in library order */
  CHECK_EQ_INT(nmap, 3);
  if (nmap == 3) {
    CHECK_STR(mapl[0], "lodash-es");
    CHECK_STR(mapl[1], "underscore");
    CHECK_STR(mapl[2], "ramda");
  }
  mlsys_contracode_clone_set_free(&s);
  mlsys_contracode_clone_files_free(files, nfiles);
}

/* A perfect scorer: the embedding is the one-hot of the problem number the program returns as a string literal,
   which every semantics-preserving edit keeps. */
typedef struct {
  int calls, strings, changed;
  const char *const *orig;
  int norig;
} embed_ctx;
static mlsys_status embed_problem(void *vctx, const char *const *src, const size_t *len, int n, float *out) {
  embed_ctx *c = (embed_ctx *)vctx;
  int i, j;
  c->calls++;
  for (i = 0; i < n; i++) {
    const char *q = strstr(src[i], "P#");
    int id = q ? atoi(q + 2) : 0, same = 0;
    (void)len;
    for (j = 0; j < 8; j++) out[i * 8 + j] = j == id % 8 ? 1.0f : 0.0f;
    for (j = 0; j < c->norig; j++) same |= !strcmp(src[i], c->orig[j]);
    c->strings++;
    c->changed += !same;
  }
  return MLSYS_OK;
}

TEST(clone_eval_perfect_scorer_and_safe_adversary) {
  enum { NP = 12, S = 5 };
  char buf[NP][256];
  const char *src[NP];
  size_t len[NP], npos = 0, nneg = 0, i, n;
  int prob[NP], k;
  mlsys_contracode_clone_pair *p = NULL;
  float nat[64], adv[64 * S];
  uint8_t lab[64];
  embed_ctx ctx;
  mlsys_contracode_scorer sc;
  mlsys_contracode_aug_cfg cfg;
  mlsys_contracode_clone_metrics m;
  for (k = 0; k < NP; k++) {
    prob[k] = k / 3;   /* 4 problems of 3 programs; program bodies differ within a problem */
    snprintf(buf[k], sizeof buf[k],
             "export default function f%d(list, n) {\n  var total = 0, unused = %d;\n  for (var i = 0; i < n; i++) {\n"
             "    total = total + list[i] * %d;\n  }\n  if (true) {\n    return 'P#%d' + total;\n  }\n}\n",
             k, k, k + 1, prob[k]);
    src[k] = buf[k];
    len[k] = strlen(buf[k]);
  }
  REQUIRE_OK(mlsys_contracode_clone_pairs(prob, NP, MLSYS_CONTRACODE_PAIRS_DISTINCT, 5, &p, &npos, &nneg));
  n = npos + nneg;
  REQUIRE(n <= 64);
  for (i = 0; i < n; i++) lab[i] = p[i].label;
  memset(&ctx, 0, sizeof ctx);
  ctx.orig = src, ctx.norig = NP;
  memset(&sc, 0, sizeof sc);
  sc.kind = MLSYS_CONTRACODE_SCORE_EMBED, sc.embed = embed_problem, sc.embed_ctx = &ctx, sc.dim = 8;
  REQUIRE_OK(mlsys_contracode_clone_adversary(MLSYS_CONTRACODE_ADV_SAFE, &cfg));
  REQUIRE_OK(mlsys_contracode_clone_sims(src, len, NP, p, n, &sc, &cfg, S, 9, nat, adv));
  REQUIRE_OK(mlsys_contracode_clone_metrics_of(nat, lab, n, &m));
  CHECK_NEAR(m.auroc, 1.0, 0);
  CHECK_NEAR(m.ap, 1.0, 0);
  CHECK_NEAR(m.accuracy, 1.0, 0);
  CHECK_EQ_INT((int)m.npos, 12);   /* 4 problems × C(3,2) */
  CHECK_EQ_INT((int)m.nneg, 12);
  for (k = 1; k <= S; k++) {
    REQUIRE_OK(mlsys_contracode_clone_adv_metrics(adv, lab, n, S, k, -1, &m));
    CHECK_NEAR(m.auroc, 1.0, 0);
    CHECK_EQ_INT((int)m.npos, 12 * (S - k + 1));
  }
  /* the adversary did edit: variants were embedded and most differ from every original */
  CHECK(ctx.strings > NP);
  CHECK(ctx.changed > (ctx.strings - NP) / 2);
  /* reproducible from the seed; the terser adversary also keeps the literal */
  {
    float adv2[64 * S], nat2[64];
    ctx.changed = 0;
    REQUIRE_OK(mlsys_contracode_clone_sims(src, len, NP, p, n, &sc, &cfg, S, 9, nat2, adv2));
    CHECK(!memcmp(adv, adv2, n * S * sizeof *adv));
    REQUIRE_OK(mlsys_contracode_clone_adversary(MLSYS_CONTRACODE_ADV_TERSER, &cfg));
    REQUIRE_OK(mlsys_contracode_clone_sims(src, len, NP, p, n, &sc, &cfg, S, 9, nat2, adv2));
    REQUIRE_OK(mlsys_contracode_clone_adv_metrics(adv2, lab, n, S, S, -1, &m));
    CHECK_NEAR(m.auroc, 1.0, 0);
  }
  free(p);
}

/* An adversary that only lowers positives and raises negatives cannot raise the AUROC: for every window size and
   start, adversarial AUROC ≤ natural (each positive's score only falls, each negative's only rises, so no
   correctly ordered (positive, negative) pair can become a tie or a win). */
TEST(clone_adv_metrics_monotone_every_window) {
  mlsys_rng r;
  int trial;
  mlsys_rng_seed(&r, 4);
  for (trial = 0; trial < 60; trial++) {
    enum { NMAX = 60, SMAX = 16 };
    int n = mlsys_rng_range(&r, 2, NMAX), S = mlsys_rng_range(&r, 1, SMAX), i, j, w, s;
    float nat[NMAX], adv[NMAX * SMAX];
    uint8_t lab[NMAX];
    mlsys_contracode_clone_metrics mn, ma;
    for (i = 0; i < n; i++) {
      lab[i] = i < 2 ? (uint8_t)i : (uint8_t)mlsys_rng_range(&r, 0, 1);
      nat[i] = (float)mlsys_rng_range(&r, 0, 20) / 20;   /* ties on purpose */
      for (j = 0; j < S; j++) {
        float d = mlsys_rng_range(&r, 0, 3) ? (float)mlsys_rng_range(&r, 0, 10) / 20 : 0.0f;
        adv[i * S + j] = lab[i] ? nat[i] - d : nat[i] + d;
      }
    }
    REQUIRE_OK(mlsys_contracode_clone_metrics_of(nat, lab, (size_t)n, &mn));
    for (w = 1; w <= S; w++) {
      double worst = 2;
      for (s = 0; s + w <= S; s++) {
        REQUIRE_OK(mlsys_contracode_clone_adv_metrics(adv, lab, (size_t)n, S, w, s, &ma));
        CHECK(ma.auroc <= mn.auroc + 1e-12);
        if (ma.auroc < worst) worst = ma.auroc;
      }
      REQUIRE_OK(mlsys_contracode_clone_adv_metrics(adv, lab, (size_t)n, S, w, -1, &ma));
      CHECK(ma.auroc <= mn.auroc + 1e-12);
      CHECK_EQ_INT(ma.npos + ma.nneg, (long)n * (S - w + 1));
    }
  }
  CHECK(mlsys_contracode_clone_adv_metrics(NULL, NULL, 0, 4, 5, -1, NULL) == MLSYS_ERR_ARG);
}

/* The edit and bag-of-tokens scorers against their definitions recomputed from the tokenizer's ids. */
TEST(clone_scorers_by_definition) {
  const char *src[4] = {"function f(a) {\n  return a + 1;\n}\n", "function g(b) {\n  return 1 + b;\n}\n",
                        "var x = [1, 2, 3].map(function (v) { return v * v; });\n", ""};
  size_t len[4];
  const mlsys_contracode_clone_pair p[6] = {{0, 1, 1}, {0, 2, 0}, {1, 2, 0}, {0, 0, 1}, {2, 3, 0}, {3, 3, 1}};
  mlsys_contracode_sp *sp = NULL;
  mlsys_contracode_scorer sc;
  float sim[6];
  int32_t *ids[4];
  int nid[4], i, kind;
  if (mlsys_contracode_sp_load("tests/data/contracode/js_identity_1k.model", &sp) != MLSYS_OK)
    SKIP_DEP("run from the repository root (%.150s)", mlsys_last_error());
  for (i = 0; i < 4; i++) {
    char *norm;
    size_t nn, k, ni;
    int32_t *raw;
    len[i] = strlen(src[i]);
    REQUIRE_OK(mlsys_contracode_normalize_program(src[i], len[i], &norm, &nn));
    REQUIRE_OK(mlsys_contracode_sp_encode(sp, norm, nn, &raw, &ni, NULL));
    free(norm);
    ids[i] = (int32_t *)malloc((ni + 2) * sizeof(int32_t));
    REQUIRE(ids[i] != NULL);
    nid[i] = 0;
    if (mlsys_contracode_sp_id(sp, "<s>") >= 0) ids[i][nid[i]++] = mlsys_contracode_sp_id(sp, "<s>");
    for (k = 0; k < ni; k++) ids[i][nid[i]++] = raw[k];
    if (mlsys_contracode_sp_id(sp, "</s>") >= 0) ids[i][nid[i]++] = mlsys_contracode_sp_id(sp, "</s>");
    free(raw);
  }
  CHECK(mlsys_contracode_sp_id(sp, "<s>") >= 0);   /* the model has BOS/EOS: they are part of the sequences */
  for (kind = MLSYS_CONTRACODE_SCORE_EDIT; kind <= MLSYS_CONTRACODE_SCORE_BOW; kind++) {
    memset(&sc, 0, sizeof sc);
    sc.kind = kind, sc.sp = sp;
    REQUIRE_OK(mlsys_contracode_clone_sims(src, len, 4, p, 6, &sc, NULL, 0, 0, sim, NULL));
    for (i = 0; i < 6; i++) {
      const int32_t *a = ids[p[i].a], *b = ids[p[i].b];
      int na = nid[p[i].a], nb = nid[p[i].b], x, y;
      double want;
      if (kind == MLSYS_CONTRACODE_SCORE_EDIT) {
        want = mlsys_contracode_lev_similarity(a, na, b, nb);
      } else {
        /* count vectors by brute force over the id range */
        double dot = 0, qa = 0, qb = 0;
        for (x = 0; x < mlsys_contracode_sp_size(sp); x++) {
          int ca = 0, cb = 0;
          for (y = 0; y < na; y++) ca += a[y] == x;
          for (y = 0; y < nb; y++) cb += b[y] == x;
          dot += (double)ca * cb, qa += (double)ca * ca, qb += (double)cb * cb;
        }
        want = dot / sqrt(qa * qb);
      }
      CHECK_NEAR(sim[i], want, 1e-6);
    }
    CHECK_NEAR(sim[3], 1.0, 1e-6);   /* a program and itself */
    CHECK_NEAR(sim[5], 1.0, 1e-6);   /* empty vs empty: <s></s> both */
  }
  /* a vocabulary is required; pairs must be inside the set */
  sc.sp = NULL;
  CHECK(mlsys_contracode_clone_sims(src, len, 4, p, 6, &sc, NULL, 0, 0, sim, NULL) == MLSYS_ERR_ARG);
  sc.sp = sp;
  CHECK(mlsys_contracode_clone_sims(src, len, 2, p, 6, &sc, NULL, 0, 0, sim, NULL) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "outside 2 programs");
  for (i = 0; i < 4; i++) free(ids[i]);
  mlsys_contracode_sp_free(sp);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

TEST(clone_cli) {
  char root[] = "/tmp/cc_clone_XXXXXX", a[256], b[256], c[256], args[2048];
  run_result r;
  static const char *const keys[] = {"\"libraries\"", "\"files\"", "\"skipped\"", "\"problems\"",
                                     "\"problems_by_libs\"", "\"programs\"", "\"pairs\"", "\"mode\"",
                                     "\"positives\"", "\"negatives\"", "\"scorer\"", "\"vocab\"", "\"vocab_size\"",
                                     "\"adversary\"", "\"samples\"", "\"seed\"", "\"results\"", "\"setting\"",
                                     "\"N\"", "\"windows\"", "\"auroc\"", "\"se\"", "\"ap\"", "\"accuracy\"",
                                     "\"threshold\"", "\"npos\"", "\"nneg\""};
  size_t i;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  REQUIRE(mkdtemp(root) != NULL);
  snprintf(a, sizeof a, "%s/alpha", root);
  snprintf(b, sizeof b, "%s/beta", root);
  snprintf(c, sizeof c, "%s/gamma", root);
  REQUIRE(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0 && mkdir(c, 0700) == 0);
  write_file(a, "sum.js", "export default function sum(a) { var s = 0; for (var x of a) s += x; return s; }\n");
  write_file(b, "sum.js", "/** adds */\nexport default function sum(xs) { return xs.reduce((p, q) => p + q, 0); }\n");
  write_file(a, "max.js", "export default function max(a) { return Math.max.apply(null, a); }\n");
  write_file(b, "max.js", "export default function max(xs) { var m = -Infinity; for (var x of xs) if (x > m) m = x; return m; }\n");
  write_file(a, "_helper.js", "export default 1;\n");
  write_file(c, "other.js", "export default 2;\n");
  snprintf(args, sizeof args, "contracode eval --lib %s --lib B=%s --adversarial 2,3 --samples 3 --json", a, b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) {
    for (i = 0; i < sizeof keys / sizeof *keys; i++) CHECK_CONTAINS(r.out, keys[i]);
    CHECK_CONTAINS(r.out, "\"name\": \"alpha\"");
    CHECK_CONTAINS(r.out, "\"name\": \"B\"");
    CHECK_CONTAINS(r.out, "\"problems\": 2");
    CHECK_CONTAINS(r.out, "\"programs\": 4");
    CHECK_CONTAINS(r.out, "\"mode\": \"distinct\", \"positives\": 2, \"negatives\": 2");
    CHECK_CONTAINS(r.out, "\"setting\": \"adversarial\", \"N\": 2, \"windows\": 2");
    CHECK_CONTAINS(r.out, "\"setting\": \"adversarial\", \"N\": 3, \"windows\": 1");
  }
  run_free(&r);
  snprintf(args, sizeof args, "contracode eval --lib %s --lib %s --faithful-pairs --scorer bow", a, b);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) {
    CHECK_CONTAINS(r.out, "pairs (repo-faithful): 2 positive, 2 negative");
    CHECK_CONTAINS(r.out, "natural");
  }
  run_free(&r);
  /* errors: a missing directory (named), a set with no shared name, bad usage */
  snprintf(args, sizeof args, "contracode eval --lib %s --lib %s/nonexistent", a, root);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  if (r.err) CHECK_CONTAINS(r.err, "nonexistent");
  run_free(&r);
  snprintf(args, sizeof args, "contracode eval --lib %s --lib %s", a, c);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  if (r.err) CHECK_CONTAINS(r.err, "no API name");
  run_free(&r);
  snprintf(args, sizeof args, "contracode eval --lib %s --lib %s --vocab %s/none.model", a, b, root);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  run_free(&r);
  r = run("contracode eval --scorer cosine");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode eval --adversarial 0");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode eval --adversarial 20 --samples 16");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode eval --frobnicate");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  snprintf(args, sizeof args, "rm -rf %s", root);
  CHECK_EQ_INT(system(args), 0);
}

/* The hard-negative view by hand, then its definition over random cases: every positive kept, exactly
   ceil(frac · negatives) negatives kept, and none dropped scores above one kept (ties to the lower index). */
TEST(clone_hard_subset) {
  const float key[8] = {.9f, .8f, .4f, .7f, .3f, .4f, .6f, .2f};
  const uint8_t lab[8] = {1, 1, 1, 0, 0, 0, 0, 0};
  const size_t want[5] = {0, 1, 2, 3, 6};
  size_t *idx = NULL, n = 0, i;
  mlsys_rng r;
  int trial;
  REQUIRE_OK(mlsys_contracode_hard_subset(key, lab, 8, 0.4, &idx, &n));
  CHECK_EQ_INT((int)n, 5);
  for (i = 0; i < 5 && i < n; i++) CHECK_EQ_INT((int)idx[i], (int)want[i]);
  free(idx);
  mlsys_rng_seed(&r, 99);
  for (trial = 0; trial < 200; trial++) {
    float k[64];
    uint8_t l[64], kept[64];
    int m = mlsys_rng_range(&r, 1, 64), j, nneg = 0, nkept = 0, npos = 0;
    double frac = (mlsys_rng_below(&r, 10) + 1) / 10.0;
    for (j = 0; j < m; j++) {
      k[j] = (float)mlsys_rng_below(&r, 8) / 8;   /* few distinct values: many ties */
      l[j] = (uint8_t)(mlsys_rng_uniform(&r) < 0.4);
      nneg += !l[j], npos += l[j];
    }
    REQUIRE_OK(mlsys_contracode_hard_subset(k, l, (size_t)m, frac, &idx, &n));
    memset(kept, 0, sizeof kept);
    for (i = 0; i < n; i++) {
      if (i) CHECK(idx[i] > idx[i - 1]);
      kept[idx[i]] = 1;
      nkept += !l[idx[i]];
    }
    CHECK_EQ_INT((int)n - nkept, npos);
    CHECK_EQ_INT(nkept, (int)ceil(frac * nneg - 1e-9));
    for (j = 0; j < m; j++) {
      int q;
      if (l[j]) {
        CHECK(kept[j]);
        continue;
      }
      if (kept[j]) continue;
      for (q = 0; q < m; q++)   /* a dropped negative: no kept one below it, nor an equal one after it */
        if (!l[q] && kept[q]) CHECK(k[q] > k[j] || (k[q] == k[j] && q < j));
    }
    free(idx);
  }
  CHECK_EQ_INT(mlsys_contracode_hard_subset(key, lab, 8, 0, &idx, &n), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_contracode_hard_subset(key, lab, 8, 1.5, &idx, &n), MLSYS_ERR_ARG);
  {
    float bad[2] = {0.5f, NAN};
    uint8_t bl[2] = {1, 0};
    CHECK_EQ_INT(mlsys_contracode_hard_subset(bad, bl, 2, 0.5, &idx, &n), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "NaN");
  }
}

/* The variant set: a unit and one SAFE variant of it per problem, the variant different from the unit and
   re-parsing; a unit that does not parse is left out and counted; the same seed gives the same set, another seed
   other variants; fewer than two usable units is a named error. */
TEST(clone_set_variants) {
  static const char *const units[5] = {
      "const x = function(a, b) {\n  var s = 0;\n  for (var i = 0; i < a.length; i++) s += a[i] * b;\n  return s;\n};\n",
      "function f(o) { if (o.k === true) { return o['name']; } else { return null; } }\n",
      "const x = function( {\n",   /* does not parse */
      "const x = (xs) => xs.map(function (v) { return v + 1; }).filter(Boolean);\n",
      "function g(n) { var r = []; while (n--) r.push(n); return r.reverse(); }\n"};
  size_t len[5];
  mlsys_contracode_aug_cfg cfg;
  mlsys_contracode_clone_set s, t, u;
  int i, differ = 0;
  for (i = 0; i < 5; i++) len[i] = strlen(units[i]);
  REQUIRE_OK(mlsys_contracode_aug_preset(MLSYS_CONTRACODE_AUG_SAFE, &cfg));
  REQUIRE_OK(mlsys_contracode_clone_set_variants(units, len, 5, NULL, &cfg, 3, &s));
  CHECK_EQ_INT(s.nproblems, 4);
  CHECK_EQ_INT(s.nprograms, 8);
  CHECK_EQ_INT(s.nskipped, 1);
  CHECK_EQ_INT(s.nlibs, 1);
  for (i = 0; i < s.nproblems; i++) {
    mlsys_contracode_js_ast ast;
    const int unit = i < 2 ? i : i + 1;
    CHECK_EQ_INT(s.problem[2 * i], i);
    CHECK_EQ_INT(s.problem[2 * i + 1], i);
    CHECK_EQ_INT(s.problem_nlibs[i], 2);
    CHECK_STR(s.src[2 * i], units[unit]);
    CHECK(s.len[2 * i + 1] != len[unit] || memcmp(s.src[2 * i + 1], units[unit], len[unit]) != 0);
    REQUIRE_OK(mlsys_contracode_js_parse(s.src[2 * i + 1], s.len[2 * i + 1], MLSYS_CONTRACODE_JS_SCRIPT, &ast));
    mlsys_contracode_js_free(&ast);
  }
  CHECK_STR(s.problem_name[2], "unit-3");
  REQUIRE_OK(mlsys_contracode_clone_set_variants(units, len, 5, NULL, &cfg, 3, &t));
  REQUIRE_OK(mlsys_contracode_clone_set_variants(units, len, 5, units, &cfg, 4, &u));
  for (i = 0; i < s.nprograms; i++) {
    CHECK_STR(s.src[i], t.src[i]);
    differ += strcmp(s.src[i], u.src[i]) != 0;
  }
  CHECK(differ > 0);
  CHECK_STR(u.problem_name[0], units[0]);
  mlsys_contracode_clone_set_free(&s);
  mlsys_contracode_clone_set_free(&t);
  mlsys_contracode_clone_set_free(&u);
  CHECK_EQ_INT(mlsys_contracode_clone_set_variants(units + 1, len + 1, 2, NULL, &cfg, 3, &s), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "at least 2");
  CHECK_EQ_INT(s.nprograms, 0);
}

/* `contracode eval --functions`: the variant set from a .js file, more negatives and the hard view. */
TEST(clone_cli_variants) {
  char root[] = "/tmp/cc_cvar_XXXXXX", args[2048];
  run_result r;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  REQUIRE(mkdtemp(root) != NULL);
  write_file(root, "f.js",
             "function a(x) { var s = 0; for (var i = 0; i < x.length; i++) s += x[i]; return s; }\n"
             "function b(o) { if (o.k === true) { return o['name']; } return null; }\n"
             "function c(n) { var r = []; while (n--) r.push(n * 2); return r; }\n"
             "function d(s) { return s.split('').reverse().join(''); }\n"
             "function e(a, b) { return a > b ? a - b : b - a; }\n"
             "function g(m) { var k, out = {}; for (k in m) out[m[k]] = k; return out; }\n");
  snprintf(args, sizeof args,
           "contracode eval --functions %s/f.js --count 5 --negatives 3 --hard 0.5 --adversarial 2 --samples 2 --json",
           root);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) {
    CHECK_CONTAINS(r.out, "\"set\": \"variants\"");
    CHECK_CONTAINS(r.out, "\"units\": 6, \"drawn\": 5");
    CHECK_CONTAINS(r.out, "\"positives\": 5");
    CHECK_CONTAINS(r.out, "\"negatives_ratio\": 3, \"hard\": 0.5");
    CHECK_CONTAINS(r.out, "\"setting\": \"natural-hard\"");
    CHECK_CONTAINS(r.out, "\"setting\": \"adversarial-hard\", \"N\": 2");
  }
  run_free(&r);
  snprintf(args, sizeof args, "contracode eval --functions %s/f.js --lib %s", root, root);
  r = run(args);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode eval --negatives 2 --faithful-pairs");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode eval --hard 0");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  snprintf(args, sizeof args, "contracode eval --functions %s/missing.jsonl", root);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  if (r.err) CHECK_CONTAINS(r.err, "missing.jsonl");
  run_free(&r);
  snprintf(args, sizeof args, "rm -rf %s", root);
  CHECK_EQ_INT(system(args), 0);
}

TEST_MAIN()
