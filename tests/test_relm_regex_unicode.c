/* tests/test_relm_regex_unicode.c — the Unicode regex dialect of mlsys_relm.h (issue 24 item 5): \p{L} \p{N} \p{Nd}
   and their negations, Unicode \d \w \s (MLSYS_RELM_RE_UNICODE), (?i) and (?i:...). The main check replays Python's
   verdicts (tests/data/relm/regex_oracle.txt, written by tools/gen_relm_regex_oracle.py with `re` and `regex`); the
   others are invariants of the generated tables, brute force over every case class, language identities and the
   named errors. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

static mlsys_relm_fa *compile_flags(const char *p, uint32_t flags) {
  mlsys_relm_re_desc d = {flags, 0, 0};
  mlsys_relm_fa *a = NULL;
  mlsys_status st = mlsys_relm_regex_compile(p, &d, &a);
  if (st) test__fail(__FILE__, __LINE__, "compile \"%s\": %s", p, mlsys_last_error());
  return a;
}
static mlsys_relm_fa *re(const char *p) { return compile_flags(p, 0); }
static mlsys_relm_fa *reu(const char *p) { return compile_flags(p, MLSYS_RELM_RE_UNICODE); }

static int put_utf8(uint32_t c, char *o) {
  if (c < 0x80) { o[0] = (char)c; return 1; }
  if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 63)); return 2; }
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | (c >> 12)), o[1] = (char)(0x80 | ((c >> 6) & 63)), o[2] = (char)(0x80 | (c & 63));
    return 3;
  }
  o[0] = (char)(0xF0 | (c >> 18)), o[1] = (char)(0x80 | ((c >> 12) & 63)), o[2] = (char)(0x80 | ((c >> 6) & 63));
  o[3] = (char)(0x80 | (c & 63));
  return 4;
}
static int accepts_cp(const mlsys_relm_fa *a, uint32_t c) {
  char b[4];
  return mlsys_relm_fa_accepts(a, b, (size_t)put_utf8(c, b));
}
static int unhex(const char *h, char *out, size_t cap) {
  size_t n = 0;
  while (h[0] && h[1] && h[0] != ' ' && h[0] != '\n') {
    unsigned v;
    if (sscanf(h, "%2x", &v) != 1 || n + 1 >= cap) return -1;
    out[n++] = (char)v, h += 2;
  }
  out[n] = 0;
  return (int)n;
}

TEST(python_oracle) {
  /* every pattern of the oracle file compiles, and every string gets Python's fullmatch verdict, on the code-point
     automaton and on its UTF-8 byte lowering; the recorded known differences are listed by name */
  FILE *f = fopen("tests/data/relm/regex_oracle.txt", "r");
  char line[4096], pat[1024], str[1024], flags[8], oracle[16];
  mlsys_relm_fa *a = NULL, *ab = NULL;
  long np = 0, ns = 0, nx = 0, ep = -1, es = -1, ex = -1, pos = 0, bad = 0;
  REQUIRE(f);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (line[0] == 'P') {
      char hex[2048];
      mlsys_relm_fa_free(a), mlsys_relm_fa_free(ab), a = ab = NULL;
      REQUIRE(sscanf(line, "P %7s %2047s %15s", flags, hex, oracle) == 3);
      REQUIRE(unhex(hex, pat, sizeof pat) >= 0);
      a = compile_flags(pat, flags[0] == 'u' ? MLSYS_RELM_RE_UNICODE : 0);
      if (a) CHECK_OK(mlsys_relm_fa_to_bytes(a, &ab));
      np++;
    } else if (line[0] == 'S') {
      int want, n, got, gotb;
      char hex[2048];
      REQUIRE(sscanf(line, "S %d %2047s", &want, hex) == 2);
      if (!strcmp(hex, "X") || !strcmp(hex, "#")) hex[0] = 0; /* the empty string */
      n = hex[0] ? unhex(hex, str, sizeof str) : 0;
      REQUIRE(n >= 0);
      if (strstr(line, " X ")) {
        nx++;
        printf("    known difference from Python: pattern \"%s\" on %s\n", pat, strstr(line, " X ") + 3);
      }
      ns++, pos += want;
      if (!a || !ab) continue;
      got = mlsys_relm_fa_accepts(a, str, (size_t)n);
      gotb = mlsys_relm_fa_accepts(ab, str, (size_t)n);
      if ((got != want || gotb != want) && bad++ < 15)
        test__fail(__FILE__, __LINE__, "pattern %s (flags %s, oracle %s) on %s: code points %d, bytes %d, Python %d",
                   pat, flags, oracle, strchr(line, '#') ? strchr(line, '#') + 2 : "?", got, gotb, want);
    } else if (line[0] == 'E') {
      REQUIRE(sscanf(line, "E %ld %ld %ld", &ep, &es, &ex) == 3);
    }
  }
  fclose(f);
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(ab);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(np, ep); /* the file is whole */
  CHECK_EQ_INT(ns, es);
  CHECK_EQ_INT(nx, ex);
  CHECK(np >= 100 && ns >= 3000);
  CHECK(pos > ns / 10 && pos < ns - ns / 10); /* both verdicts are well represented */
}

TEST(tables) {
  /* the generated tables against their definitions, over every code point: Nd ⊂ N, LC = Lu ⊔ Ll ⊔ Lt ⊂ L,
     Python's \w = L ∪ N ∪ {_},
     Python's \s = White_Space (JavaScript's \s − U+FEFF + U+0085) ∪ U+001C..U+001F; FOLD rows sorted, each class a
     cycle of 2..4 members, and the hand-known classes */
  long nd = 0, w = 0, bad = 0;
  int i;
  for (uint32_t c = 0; c <= 0x10FFFF; c++) {
    int L = mlsys__relm_in(mlsys__relm_uc_L, MLSYS__RELM_N(mlsys__relm_uc_L), c);
    int N = mlsys__relm_in(mlsys__relm_uc_N, MLSYS__RELM_N(mlsys__relm_uc_N), c);
    int D = mlsys__relm_in(mlsys__relm_uc_Nd, MLSYS__RELM_N(mlsys__relm_uc_Nd), c);
    int W = mlsys__relm_in(mlsys__relm_uc_W, MLSYS__RELM_N(mlsys__relm_uc_W), c);
    int S = mlsys__relm_in(mlsys__relm_uc_S, MLSYS__RELM_N(mlsys__relm_uc_S), c);
    int PS = mlsys__relm_in(mlsys__relm_uc_PS, MLSYS__RELM_N(mlsys__relm_uc_PS), c);
    int Lu = mlsys__relm_in(mlsys__relm_uc_Lu, MLSYS__RELM_N(mlsys__relm_uc_Lu), c);
    int Ll = mlsys__relm_in(mlsys__relm_uc_Ll, MLSYS__RELM_N(mlsys__relm_uc_Ll), c);
    int Lt = mlsys__relm_in(mlsys__relm_uc_Lt, MLSYS__RELM_N(mlsys__relm_uc_Lt), c);
    int LC = mlsys__relm_in(mlsys__relm_uc_LC, MLSYS__RELM_N(mlsys__relm_uc_LC), c);
    int ws = (S && c != 0xFEFF) || c == 0x85 || (c >= 0x1C && c <= 0x1F);
    if (D && !N) bad++;
    if (LC != (Lu || Ll || Lt) || (LC && !L) || Lu + Ll + Lt > 1) bad++;
    if (W != (L || N || c == '_')) bad++;
    if (PS != ws) bad++;
    nd += D, w += W;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(nd >= 660 && nd < 1000); /* 660 in Unicode 14, 770 in 17 */
  CHECK(w > 130000);
  for (i = 0; i < MLSYS__RELM_N(mlsys__relm_uc_FOLD); i++) {
    uint32_t c = mlsys__relm_uc_FOLD[i][0], x = mlsys__relm_uc_FOLD[i][1];
    int len = 1;
    if (i && mlsys__relm_uc_FOLD[i - 1][0] >= c) bad++;
    while (x != c && len < 8) {
      int k = mlsys__relm_fold_find(x);
      if (k < 0) { bad++; break; }
      x = mlsys__relm_uc_FOLD[k][1], len++;
    }
    if (len < 2 || len > 4) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  {
    static const uint32_t known[][5] = {
        {'K', 'k', 0x212A, 0, 0},       {'S', 's', 0x17F, 0, 0},         {0x3A3, 0x3C3, 0x3C2, 0, 0},
        {'I', 'i', 0x130, 0x131, 0},    {0xDF, 0x1E9E, 0, 0, 0},         {0xB5, 0x39C, 0x3BC, 0, 0},
        {0x1C4, 0x1C5, 0x1C6, 0, 0},    {0x345, 0x399, 0x3B9, 0x1FBE, 0}, {0xC5, 0xE5, 0x212B, 0, 0},
        {0x10400, 0x10428, 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
      int n = 0, j;
      uint32_t x;
      while (n < 5 && known[k][n]) n++;
      for (j = 0; j < n; j++) { /* each member's cycle is exactly the known class */
        int len = 1, r = mlsys__relm_fold_find(known[k][j]);
        REQUIRE(r >= 0);
        for (x = mlsys__relm_uc_FOLD[r][1]; x != known[k][j]; x = mlsys__relm_uc_FOLD[mlsys__relm_fold_find(x)][1]) {
          int in = 0, m;
          for (m = 0; m < n; m++) in |= known[k][m] == x;
          CHECK_MSG(in, "U+%04X's class holds U+%04X", (unsigned)known[k][j], (unsigned)x);
          if (++len > 5) break;
        }
        CHECK_EQ_INT(len, n);
      }
    }
    CHECK(mlsys__relm_fold_find('1') < 0 && mlsys__relm_fold_find(0x4E2D) < 0); /* uncased */
  }
}

TEST(case_classes_brute) {
  /* for every code point with case variants: (?i) of it as a literal, and as a one-element class, accepts exactly
     its FOLD class (the count of accepted strings equals the class size and each member is accepted); (?i) of an
     uncased character accepts only it */
  int i, bad = 0, done = 0;
  char pat[64];
  for (i = 0; i < MLSYS__RELM_N(mlsys__relm_uc_FOLD); i++, done++) {
    uint32_t c = mlsys__relm_uc_FOLD[i][0], x;
    int size = 1;
    for (x = mlsys__relm_uc_FOLD[i][1]; x != c; x = mlsys__relm_uc_FOLD[mlsys__relm_fold_find(x)][1]) size++;
    for (int form = 0; form < 2; form++) {
      mlsys_relm_fa *a;
      double cnt = 0;
      snprintf(pat, sizeof pat, form ? "(?i)[\\x{%X}]" : "(?i:\\x{%X})", (unsigned)c);
      a = re(pat);
      if (!a) { bad++; continue; }
      CHECK_OK(mlsys_relm_fa_count_strings(a, -1, &cnt, NULL));
      if (cnt != size) bad++;
      x = c;
      do {
        if (!accepts_cp(a, x)) bad++;
        x = mlsys__relm_uc_FOLD[mlsys__relm_fold_find(x)][1];
      } while (x != c);
      mlsys_relm_fa_free(a);
    }
    if (bad > 5) break;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(done, MLSYS__RELM_N(mlsys__relm_uc_FOLD));
  CHECK(done > 2900);
  {
    mlsys_relm_fa *a = re("(?i)[1中\\x{1F600}]");
    double cnt = 0;
    REQUIRE(a);
    CHECK_OK(mlsys_relm_fa_count_strings(a, -1, &cnt, NULL));
    CHECK_EQ_INT((long)cnt, 3);
    mlsys_relm_fa_free(a);
  }
}

static void same(const char *p, const char *q, uint32_t flags) {
  mlsys_relm_fa *a = compile_flags(p, flags), *b = compile_flags(q, flags);
  if (a && b) CHECK_MSG(mlsys_relm_fa_equal(a, b), "\"%s\" and \"%s\" differ", p, q);
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
}
static void differ(const char *p, const char *q, uint32_t flags) {
  mlsys_relm_fa *a = compile_flags(p, flags), *b = compile_flags(q, flags);
  if (a && b) CHECK_MSG(!mlsys_relm_fa_equal(a, b), "\"%s\" and \"%s\" are the same", p, q);
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
}
TEST(identities) {
  /* language identities the definitions imply (automata are canonical, so equal languages are equal automata) */
  const uint32_t U = MLSYS_RELM_RE_UNICODE;
  same("\\p{L}", "[\\p{Letter}]", 0);
  same("\\pL+", "\\p{ l_e-t T e r }+", 0);
  same("\\P{L}", "[^\\p{L}]", 0);
  same("\\p{^N}", "\\P{N}", 0);
  same("\\P{^N}", "\\p{N}", 0);
  same("[^\\P{L}]", "\\p{L}", 0);
  same("[\\p{L}\\P{L}]", "[\\x{0}-\\x{10FFFF}]", 0);
  same("\\w", "[\\p{L}\\p{N}_]", U);       /* Python's str \w */
  same("\\d", "\\p{Nd}", U);
  same("\\d", "\\p{decimal number}", U);
  same("[\\D\\d]", "[\\x{0}-\\x{10FFFF}]", U);
  same("\\W", "[^\\w]", U);
  same("\\S", "[^\\s]", U);
  same("\\s", "[\\t-\\r\\x1c-\\x20\\x85\\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]", U);
  same("\\d", "[0-9]", 0); /* without the flag: ASCII as before */
  same("\\w", "[0-9A-Za-z_]", 0);
  differ("\\w", "[0-9A-Za-z_]", U);
  same("(?i)abc", "[aA][bB][cC]", 0);
  same("(?i)k", "[kK\\x{212A}]", 0);
  same("(?i)[^k]", "[^kK\\x{212A}]", 0); /* negation after closure, as in Python */
  same("(?i)σ", "[Σσς]", 0);
  same("(?i)ß", "[ßẞ]", 0);
  same("(?i)ı", "[Iiİı]", 0);
  same("a(?i:b)c", "a[bB]c", 0);
  same("(?i)a(?-i:b)c", "[aA]b[cC]", 0);
  same("(?i:a(?-i:b)c)d", "[aA]b[cC]d", 0);
  same("(?i)(?i)a", "[aA]", 0);
  same("(?i)\\d\\w", "\\d\\w", U);         /* classes from escapes do not fold (Python: categories) */
  same("(?i)\\p{L}", "\\p{L}", 0);
  same("\\p{LC}", "[\\p{Lu}\\p{Ll}\\p{Lt}]", 0);
  same("\\p{lc}", "\\p{Cased Letter}", 0);
  same("(?i)\\p{Lu}", "\\p{LC}", 0); /* under (?i) Lu, Ll, Lt are the cased letters, as in `regex` */
  same("(?i)\\p{ll}", "\\p{LC}", 0);
  same("(?i)\\P{Lt}", "\\P{LC}", 0);
  same("(?i:\\p{Lu})\\p{Lu}", "\\p{LC}\\p{Uppercase_Letter}", 0);
  differ("\\p{Lu}", "\\p{LC}", 0);
  same("(?i)[^\\W]", "\\w", U);
  same("(?i)[a-c]", "[a-cA-C]", 0);
  same("(?i)[\\x{10400}-\\x{10401}]", "[\\x{10400}\\x{10401}\\x{10428}\\x{10429}]", 0);
  same("(?i).", ".", 0);
}

static void expect_error(const char *pattern, uint32_t flags, mlsys_status want, const char *msg) {
  mlsys_relm_re_desc d = {flags, 0, 0};
  mlsys_relm_fa *a = (mlsys_relm_fa *)1;
  mlsys_status st = mlsys_relm_regex_compile(pattern, &d, &a);
  CHECK_MSG(st == want, "\"%s\": status %d (%s), expected %d", pattern, st, mlsys_last_error(), want);
  CHECK(a == NULL);
  CHECK_CONTAINS(mlsys_last_error(), msg);
}
TEST(errors) {
  /* bad constructs are named, with their byte offsets */
  expect_error("ab\\p{Greek}", 0, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property 'Greek' at offset 2");
  expect_error("\\p{L&}", 0, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property 'L&' at offset 0"); /* ambiguous */
  expect_error("[x\\P{Lm}]", 0, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property 'Lm' at offset 2");
  expect_error("(?i)\\p{Script=Greek}", 0, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property 'Script=Greek' at offset 4");
  expect_error("\\p{}", 0, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property '' at offset 0");
  expect_error("a\\p{L", 0, MLSYS_ERR_PARSE, "unclosed property class '\\p{' at offset 1");
  expect_error("a\\p", 0, MLSYS_ERR_PARSE, "bad property class at offset 1");
  expect_error("\\P1", 0, MLSYS_ERR_PARSE, "bad property class at offset 0");
  expect_error("[\\p{L}-z]", 0, MLSYS_ERR_PARSE, "bad class range at offset 1");
  expect_error("ab(?i)c", 0, MLSYS_ERR_PARSE, "global inline flags at offset 2");
  expect_error("(?-i)a", 0, MLSYS_ERR_PARSE, "a global flag cannot be turned off");
  expect_error("x(?i-i:a)", 0, MLSYS_ERR_PARSE, "flag 'i' turned on and off");
  expect_error("x(?-:a)", 0, MLSYS_ERR_PARSE, "no flag after '-'");
  expect_error("(?ix)a", 0, MLSYS_ERR_UNSUPPORTED, "inline flag 'x' is not supported (at offset 0");
  expect_error("a(?s:.)", 0, MLSYS_ERR_UNSUPPORTED, "inline flag 's' is not supported (at offset 1");
  expect_error("(?i", 0, MLSYS_ERR_PARSE, "bad inline flags at offset 0");
  expect_error("(?i:a", 0, MLSYS_ERR_PARSE, "unclosed group '(' at offset 0");
  expect_error("(?i)*", 0, MLSYS_ERR_PARSE, "nothing to repeat");
  expect_error("\\w\\p{Number", MLSYS_RELM_RE_UNICODE, MLSYS_ERR_PARSE, "offset 2");
}

TEST(byte_lowering_agrees) {
  /* the big Unicode classes lower to UTF-8 bytes with the same language: every code point of a spread of blocks
     gets the same verdict on both automata */
  const char *pats[] = {"\\p{L}", "\\P{N}", "\\d", "\\W", "\\s", "(?i)[a-zα-ω]"};
  int bad = 0;
  for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
    mlsys_relm_fa *a = reu(pats[k]), *b = NULL;
    REQUIRE(a);
    REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
    for (uint32_t c = 0; c <= 0x10FFFF; c += (c < 0x3000 ? 1 : 97)) {
      char buf[4];
      int n;
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      n = put_utf8(c, buf);
      if (mlsys_relm_fa_accepts(a, buf, (size_t)n) != mlsys_relm_fa_accepts(b, buf, (size_t)n)) bad++;
    }
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
  }
  CHECK_EQ_INT(bad, 0);
}

TEST_MAIN()
