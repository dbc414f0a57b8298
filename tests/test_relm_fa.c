/* Tests for mlsys_relm.h (ReLM character/byte automata; spec §3.2–3.5 (docs/relm.md), §3.13, §7.3).
   The answers come from outside the code under test: Python's `re` (membership on thousands of strings), a
   backtracking matcher written here over a syntax tree (brute force over every short string), set operations on
   brute-force string sets, a table-filling minimality check, the Levenshtein distance DP and an explicit edit-BFS,
   the spec's known numbers (4 states, 1000 strings, 663 strings) and UTF-8 decoding. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

#include <ctype.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------------------------
   Small helpers
   --------------------------------------------------------------------------------------------------------------- */
static mlsys_relm_fa *re(const char *p) {
  mlsys_relm_fa *a = NULL;
  mlsys_status st = mlsys_relm_regex_compile(p, NULL, &a);
  if (st) test__fail(__FILE__, __LINE__, "compile(\"%s\") failed: %s", p, mlsys_last_error());
  return a;
}
static int acc(const mlsys_relm_fa *a, const char *s) { return mlsys_relm_fa_accepts(a, s, strlen(s)); }
static double count_all(const mlsys_relm_fa *a, int max_len) {
  double c = -1;
  if (mlsys_relm_fa_count_strings(a, max_len, &c, NULL)) return -1;
  return c;
}
static int put_utf8(uint32_t c, char *o) {
  if (c < 0x80) return o[0] = (char)c, 1;
  if (c < 0x800) return o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F)), 2;
  if (c < 0x10000)
    return o[0] = (char)(0xE0 | (c >> 12)), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)), o[2] = (char)(0x80 | (c & 0x3F)), 3;
  o[0] = (char)(0xF0 | (c >> 18)), o[1] = (char)(0x80 | ((c >> 12) & 0x3F)), o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
  o[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}
/* code points → UTF-8 (NUL-terminated); returns the byte length */
static size_t encode(const uint32_t *cp, int n, char *out) {
  size_t k = 0;
  int i;
  for (i = 0; i < n; i++) k += (size_t)put_utf8(cp[i], out + k);
  out[k] = 0;
  return k;
}

/* Structural invariants every returned automaton has (the doc block's canonical form). */
static int check_canonical(const mlsys_relm_fa *a) {
  int n = mlsys_relm_fa_num_states(a), q, k, ok = 1, head = 0, tail = 1, *order, *seen;
  if (n < 1) return 0;
  order = (int *)malloc(sizeof(int) * (size_t)n), seen = (int *)calloc((size_t)n, sizeof(int));
  order[0] = 0, seen[0] = 1;
  while (head < tail) { /* BFS in arc order must visit states 0, 1, 2, ... */
    const uint32_t *lo, *hi;
    const int32_t *dst;
    q = order[head++];
    k = mlsys_relm_fa_out(a, q, &lo, &hi, &dst);
    for (int j = 0; j < k; j++) {
      if (lo[j] > hi[j] || dst[j] < 0 || dst[j] >= n) ok = 0;
      if (j && lo[j] <= hi[j - 1]) ok = 0;                          /* sorted, disjoint */
      if (j && lo[j] == hi[j - 1] + 1 && dst[j] == dst[j - 1]) ok = 0; /* merged */
      if (!mlsys_relm_fa_is_bytes(a) && hi[j] > 0x10FFFF) ok = 0;
      if (!mlsys_relm_fa_is_bytes(a) && !(hi[j] < 0xD800 || lo[j] > 0xDFFF)) ok = 0; /* no surrogates */
      if (mlsys_relm_fa_is_bytes(a) && hi[j] > 255) ok = 0;
      if (ok && !seen[dst[j]]) {
        if (dst[j] != tail) ok = 0; /* BFS numbering */
        seen[dst[j]] = 1, order[tail++] = dst[j];
      }
    }
  }
  if (tail != n) ok = 0;
  free(order), free(seen);
  return ok;
}

/* Table-filling minimality check (Myhill–Nerode), independent of the Hopcroft code: no two states of a trimmed DFA
   may accept the same language. The dead state is explicit (index n). Returns 1 if minimal. */
static int check_minimal(const mlsys_relm_fa *a) {
  int n = mlsys_relm_fa_num_states(a), N = n + 1, q, p, changed, nb = 0, i, minimal = 1;
  uint32_t *bnd;
  unsigned char *d;
  long m = mlsys_relm_fa_num_arcs(a);
  if (n > 400) return 1;                  /* quadratic; only for small automata */
  if (mlsys_relm_fa_is_empty(a)) return 1; /* its one state is the dead state (the documented representation) */
  bnd = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(2 * m + 1));
  for (q = 0; q < n; q++) {
    const uint32_t *lo, *hi;
    int k = mlsys_relm_fa_out(a, q, &lo, &hi, NULL);
    for (i = 0; i < k; i++) bnd[nb++] = lo[i], bnd[nb++] = hi[i] + 1;
  }
  qsort(bnd, (size_t)nb, sizeof *bnd, mlsys__relm_cmp_u32); /* symbol representatives: every boundary */
  d = (unsigned char *)calloc((size_t)N * N, 1);
  for (p = 0; p < N; p++)
    for (q = 0; q < N; q++) d[p * N + q] = (p < n && mlsys_relm_fa_is_final(a, p)) != (q < n && mlsys_relm_fa_is_final(a, q));
  do {
    changed = 0;
    for (p = 0; p < N; p++)
      for (q = p + 1; q < N; q++) {
        if (d[p * N + q]) continue;
        for (i = 0; i < nb; i++) {
          int tp = p < n ? mlsys_relm_fa_step(a, p, bnd[i]) : -1, tq = q < n ? mlsys_relm_fa_step(a, q, bnd[i]) : -1;
          if (tp < 0) tp = n;
          if (tq < 0) tq = n;
          if (d[tp * N + tq]) {
            d[p * N + q] = d[q * N + p] = 1, changed = 1;
            break;
          }
        }
      }
  } while (changed);
  for (p = 0; p < N && minimal; p++)
    for (q = p + 1; q < N; q++)
      if (!d[p * N + q]) minimal = 0;
  free(bnd), free(d);
  return minimal;
}

/* ---------------------------------------------------------------------------------------------------------------
   A syntax tree for random regexes, its renderings (this dialect and Python's) and a backtracking matcher
   --------------------------------------------------------------------------------------------------------------- */
enum { T_CHR, T_DOT, T_EMPTY, T_CAT, T_ALT, T_REP };
typedef struct tnode {
  int type, min, max, neg, nset, style;
  uint32_t set[4]; /* T_CHR: its characters (a class when nset > 1 or neg) */
  int a, b;        /* children */
} tnode;
typedef struct {
  tnode node[256];
  int n;
  const uint32_t *alpha;
  int nalpha;
} tree;

static int gen(tree *t, mlsys_rng *r, int depth) {
  int id = t->n++, u = (int)mlsys_rng_below(r, 100);
  tnode *x = &t->node[id];
  memset(x, 0, sizeof *x);
  x->style = (int)mlsys_rng_below(r, 4);
  if (depth <= 0 || u < 30 || t->n > 240) {
    u = (int)mlsys_rng_below(r, 100);
    if (u < 80) {
      x->type = T_CHR;
      x->nset = 1 + (mlsys_rng_below(r, 3) == 0);
      for (int i = 0; i < x->nset; i++) x->set[i] = t->alpha[mlsys_rng_below(r, (uint64_t)t->nalpha)];
      x->neg = mlsys_rng_below(r, 10) == 0;
    } else if (u < 92) x->type = T_DOT;
    else x->type = T_EMPTY;
    return id;
  }
  u = (int)mlsys_rng_below(r, 100);
  if (u < 35) {
    x->type = T_CAT;
    x->a = gen(t, r, depth - 1), x->b = gen(t, r, depth - 1);
  } else if (u < 65) {
    x->type = T_ALT;
    x->a = gen(t, r, depth - 1), x->b = gen(t, r, depth - 1);
  } else {
    static const int q[8][2] = {{0, -1}, {1, -1}, {0, 1}, {2, 2}, {1, 3}, {2, -1}, {0, 2}, {3, 3}};
    int k = (int)mlsys_rng_below(r, 8);
    x->type = T_REP, x->min = q[k][0], x->max = q[k][1];
    x->a = gen(t, r, depth - 1);
  }
  return id;
}
static void emit_char(uint32_t c, int style, int py, char **o) {
  if (c < 0x80 && strchr("\\.+*?()|[]{}^$#&-~", (int)c)) *(*o)++ = '\\', *(*o)++ = (char)c;
  else if (style == 1) *o += sprintf(*o, c < 0x100 ? "\\x%02X" : (py ? "\\U%08X" : "\\x{%X}"), c);
  else if (style == 2) *o += sprintf(*o, py ? "\\U%08X" : "\\u{%x}", c);
  else *o += put_utf8(c, *o);
}
static void render(const tree *t, int id, int py, char **o) {
  const tnode *x = &t->node[id];
  switch (x->type) {
  case T_CHR:
    if (x->nset == 1 && !x->neg && x->style != 3) emit_char(x->set[0], x->style, py, o);
    else {
      *(*o)++ = '[';
      if (x->neg) *(*o)++ = '^';
      for (int i = 0; i < x->nset; i++) emit_char(x->set[i], x->style == 3 ? 0 : x->style, py, o);
      *(*o)++ = ']';
    }
    break;
  case T_DOT: *(*o)++ = '.'; break;
  case T_EMPTY: *o += sprintf(*o, "(?:)"); break;
  case T_CAT:
  case T_ALT:
    *o += sprintf(*o, x->style & 1 ? "(?:" : "(");
    render(t, x->a, py, o);
    if (x->type == T_ALT) *(*o)++ = '|';
    render(t, x->b, py, o);
    *(*o)++ = ')';
    break;
  default:
    *o += sprintf(*o, x->style & 1 ? "(?:" : "(");
    render(t, x->a, py, o);
    *(*o)++ = ')';
    if (x->min == 0 && x->max == -1) *(*o)++ = '*';
    else if (x->min == 1 && x->max == -1) *(*o)++ = '+';
    else if (x->min == 0 && x->max == 1) *(*o)++ = '?';
    else if (x->max == x->min) *o += sprintf(*o, "{%d}", x->min);
    else if (x->max < 0) *o += sprintf(*o, "{%d,}", x->min);
    else *o += sprintf(*o, "{%d,%d}", x->min, x->max);
    if (x->style == 2) *(*o)++ = '?'; /* lazy */
    break;
  }
  **o = 0;
}
static void render_str(const tree *t, int root, int py, char *buf) {
  char *o = buf;
  render(t, root, py, &o);
}

/* The set of end positions j such that s[i..j) matches node id, as a bitmask (strings of ≤ 30 symbols). */
static uint32_t match(const tree *t, int id, const uint32_t *s, int n, int i) {
  const tnode *x = &t->node[id];
  uint32_t res = 0, cur, nxt;
  int k, j;
  switch (x->type) {
  case T_CHR: {
    int in = 0;
    if (i >= n) return 0;
    for (k = 0; k < x->nset; k++) in |= s[i] == x->set[k];
    return in != x->neg ? 1u << (i + 1) : 0;
  }
  case T_DOT: return i < n && s[i] != '\n' ? 1u << (i + 1) : 0;
  case T_EMPTY: return 1u << i;
  case T_CAT:
    cur = match(t, x->a, s, n, i);
    for (j = 0; j <= n; j++)
      if (cur >> j & 1) res |= match(t, x->b, s, n, j);
    return res;
  case T_ALT: return match(t, x->a, s, n, i) | match(t, x->b, s, n, i);
  default: {
    int lim = x->max >= 0 ? x->max : x->min + n + 1; /* more reps than min + n only repeat empty matches */
    cur = 1u << i;
    if (x->min == 0) res = cur;
    for (k = 1; k <= lim && cur; k++) {
      nxt = 0;
      for (j = 0; j <= n; j++)
        if (cur >> j & 1) nxt |= match(t, x->a, s, n, j);
      cur = nxt;
      if (k >= x->min) res |= cur;
    }
    return res;
  }
  }
}
static int full_match(const tree *t, int root, const uint32_t *s, int n) { return (int)(match(t, root, s, n, 0) >> n & 1); }
/* Can s[i..n) be read as a proper prefix of a string of node id? (Every subtree here has a nonempty language, so
   a partial match that reaches the end of s can always be completed.) */
static int prefix_hit(const tree *t, int id, const uint32_t *s, int n, int i) {
  const tnode *x = &t->node[id];
  uint32_t cur;
  int j, k;
  if (i == n) return 1;
  switch (x->type) {
  case T_CHR:
  case T_DOT:
  case T_EMPTY: return 0;
  case T_CAT:
    if (prefix_hit(t, x->a, s, n, i)) return 1;
    cur = match(t, x->a, s, n, i);
    for (j = 0; j <= n; j++)
      if (cur >> j & 1 && prefix_hit(t, x->b, s, n, j)) return 1;
    return 0;
  case T_ALT: return prefix_hit(t, x->a, s, n, i) || prefix_hit(t, x->b, s, n, i);
  default: {
    int lim = x->max >= 0 ? x->max : x->min + n + 1;
    cur = 1u << i;
    for (k = 0; k < lim && cur; k++) {
      uint32_t nxt = 0;
      for (j = 0; j <= n; j++)
        if (cur >> j & 1) {
          if (prefix_hit(t, x->a, s, n, j)) return 1;
          nxt |= match(t, x->a, s, n, j);
        }
      cur = nxt;
    }
    return 0;
  }
  }
}

/* Every string over alpha of length ≤ maxlen, as code points: str[k*8 .. ], len[k]. */
typedef struct {
  uint32_t (*s)[8];
  int *len, n;
} strset;
static strset all_strings(const uint32_t *alpha, int na, int maxlen) {
  strset S;
  int total = 0, p = 1, L, k, i;
  for (L = 0; L <= maxlen; L++) total += p, p *= na;
  S.s = (uint32_t(*)[8])calloc((size_t)total, sizeof *S.s), S.len = (int *)calloc((size_t)total, sizeof(int)), S.n = 0;
  for (L = 0; L <= maxlen; L++) {
    int cnt = 1;
    for (i = 0; i < L; i++) cnt *= na;
    for (k = 0; k < cnt; k++) {
      int v = k;
      for (i = L - 1; i >= 0; i--) S.s[S.n][i] = alpha[v % na], v /= na;
      S.len[S.n++] = L;
    }
  }
  return S;
}
static void strset_free(strset *S) { free(S->s), free(S->len); }

/* ---------------------------------------------------------------------------------------------------------------
   §7.3 test 14: the regex compiler
   --------------------------------------------------------------------------------------------------------------- */
TEST(textbook_state_counts) {
  static const struct { const char *re; int states; } cases[] = {
      {"(a|b)*abb", 4},       /* Dragon book Fig. 3.36 */
      {"[0-9]{3}", 4},        /* spec §7.3 test 14 */
      {"(a|b)*a(a|b)", 4},    /* second-to-last symbol is a: 2^2 states */
      {"(a|b)*a(a|b)(a|b)", 8},
      {"(a|b)*a(a|b){3}", 16},
      {"a*", 1},
      {"(ab)*", 2},
      {"(a|b)*", 1},
      {"(a*b*)*", 1},
      {"[ab]*", 1},
      {"", 1},
      {"a|b|c", 2},
      {"(0|1(01*0)*1)*", 3}, /* binary multiples of 3 */
      {"[^a]", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mlsys_relm_fa *a = re(cases[i].re);
    if (!a) continue;
    CHECK_MSG(mlsys_relm_fa_num_states(a) == cases[i].states, "%s: %d states, expected %d", cases[i].re,
              mlsys_relm_fa_num_states(a), cases[i].states);
    CHECK(check_canonical(a));
    CHECK(check_minimal(a));
    mlsys_relm_fa_free(a);
  }
  /* the same language gives the identical automaton */
  {
    mlsys_relm_fa *a = re("(a|b)*"), *b = re("(a*b*)*"), *c = re("[ab]*?"), *d = re("(?:a|b){0,}");
    REQUIRE(a && b && c && d);
    CHECK(mlsys_relm_fa_equal(a, b) && mlsys_relm_fa_equal(a, c) && mlsys_relm_fa_equal(a, d));
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b), mlsys_relm_fa_free(c), mlsys_relm_fa_free(d);
  }
}

static int collect_cb(void *ctx, const char *s, size_t n) {
  char **v = (char **)ctx;
  int k = 0;
  while (v[k]) k++;
  v[k] = (char *)malloc(n + 1);
  memcpy(v[k], s, n + 1);
  return 0;
}
TEST(digits_1000_strings_shortlex) {
  mlsys_relm_fa *a = re("[0-9]{3}");
  double c, lc;
  static char *got[1100];
  int i;
  REQUIRE(a);
  REQUIRE_OK(mlsys_relm_fa_count_strings(a, -1, &c, &lc));
  CHECK_EQ_INT(c, 1000);
  CHECK_NEAR(lc, log(1000.0), 1e-12);
  CHECK_EQ_INT(count_all(a, 2), 0);
  CHECK_EQ_INT(mlsys_relm_fa_longest(a), 3);
  CHECK(!mlsys_relm_fa_is_cyclic(a));
  memset(got, 0, sizeof got);
  REQUIRE_OK(mlsys_relm_fa_enumerate(a, 0, collect_cb, got));
  for (i = 0; i < 1000; i++) {
    char want[16];
    snprintf(want, sizeof want, "%03d", i);
    CHECK_STR(got[i], want);
  }
  CHECK(got[1000] == NULL);
  for (i = 0; got[i]; i++) free(got[i]);
  mlsys_relm_fa_free(a);
  /* shortlex: shorter first, then by code point; a cap */
  {
    static const char *want[] = {"", "a", "b", "aa", "ab", "ba", "bb"};
    mlsys_relm_fa *b = re("(b|a){0,2}");
    REQUIRE(b);
    memset(got, 0, sizeof got);
    REQUIRE_OK(mlsys_relm_fa_enumerate(b, 0, collect_cb, got));
    for (i = 0; i < 7; i++) CHECK_STR(got[i], want[i]);
    CHECK(got[7] == NULL);
    for (i = 0; got[i]; i++) free(got[i]);
    memset(got, 0, sizeof got);
    REQUIRE_OK(mlsys_relm_fa_enumerate(b, 3, collect_cb, got));
    CHECK(got[2] && !got[3]);
    for (i = 0; got[i]; i++) free(got[i]);
    mlsys_relm_fa_free(b);
  }
}

static int stop_cb(void *ctx, const char *s, size_t n) {
  (void)s, (void)n;
  return ++*(int *)ctx >= 2;
}
TEST(enumerate_and_count_edge_cases) {
  mlsys_relm_fa *a = re("ab*"), *e = re("[^\\x00-\\x{10FFFF}]"), *f = re("x{2}|y{0,5}z|(qq){3}"), *u = re("é[α-γ]");
  int calls = 0;
  double c, lc;
  static char *got[16];
  REQUIRE(a && e && f && u);
  CHECK(mlsys_relm_fa_enumerate(a, 10, collect_cb, got) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "infinite");
  CHECK_EQ_INT(mlsys_relm_fa_longest(a), -1);
  CHECK(mlsys_relm_fa_is_cyclic(a));
  REQUIRE_OK(mlsys_relm_fa_count_strings(a, -1, &c, &lc));
  CHECK(isinf(c) && isinf(lc));
  REQUIRE_OK(mlsys_relm_fa_count_strings(a, 5, &c, &lc));
  CHECK_EQ_INT(c, 5);
  CHECK_NEAR(lc, log(5.0), 1e-12);
  /* the empty language */
  CHECK(mlsys_relm_fa_is_empty(e));
  CHECK_EQ_INT(mlsys_relm_fa_num_states(e), 1);
  CHECK_EQ_INT(mlsys_relm_fa_num_arcs(e), 0);
  CHECK_EQ_INT(mlsys_relm_fa_longest(e), -1);
  CHECK_EQ_INT(count_all(e, -1), 0);
  CHECK(!acc(e, ""));
  CHECK_OK(mlsys_relm_fa_enumerate(e, 0, collect_cb, got));
  CHECK(got[0] == NULL);
  /* callback stop */
  CHECK(mlsys_relm_fa_enumerate(f, 0, stop_cb, &calls) == MLSYS_ERR_CANCELED);
  CHECK_EQ_INT(calls, 2);
  /* longest and counts of a finite mixed language: xx, y^0..5 z, qqqqqq */
  CHECK_EQ_INT(mlsys_relm_fa_longest(f), 6);
  CHECK_EQ_INT(count_all(f, -1), 8);
  CHECK_EQ_INT(count_all(f, 2), 3); /* xx, z, yz */
  /* non-ASCII enumeration is UTF-8 */
  memset(got, 0, sizeof got);
  REQUIRE_OK(mlsys_relm_fa_enumerate(u, 0, collect_cb, got));
  CHECK_STR(got[0], "éα");
  CHECK_STR(got[2], "éγ");
  for (int i = 0; got[i]; i++) free(got[i]);
  /* huge counts stay exact in log space: [0-9]{400} has 10^400 strings */
  {
    mlsys_relm_fa *h = re("[0-9]{400}");
    REQUIRE(h);
    REQUIRE_OK(mlsys_relm_fa_count_strings(h, -1, &c, &lc));
    CHECK(isinf(c));
    CHECK_NEAR(lc, 400 * log(10.0), 1e-9);
    REQUIRE_OK(mlsys_relm_fa_count_strings(h, 399, &c, &lc));
    CHECK(c == 0 && isinf(lc) && lc < 0);
    mlsys_relm_fa_free(h);
    h = re("[0-9]*");
    REQUIRE(h);
    REQUIRE_OK(mlsys_relm_fa_count_strings(h, 400, &c, &lc));
    CHECK_NEAR(lc, 401 * log(10.0) - log(9.0), 1e-6); /* Σ_{l≤400} 10^l = (10^401−1)/9 */
    mlsys_relm_fa_free(h);
  }
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(e), mlsys_relm_fa_free(f), mlsys_relm_fa_free(u);
}

TEST(dialect_accepts) {
  static const struct { const char *re, *yes, *no; } cases[] = {
      {"[[:alnum:]]+", "aZ09", "a_"},
      {"[[:alpha:][:digit:]_]", "_", "-"},
      {"[[:^digit:]]", "x", "5"},
      {"[[:punct:]]{3}", "!/~", "!a~"},
      {"[[:space:]][[:blank:]][[:xdigit:]][[:upper:]][[:lower:]][[:word:]][[:cntrl:]][[:print:]][[:graph:]][[:ascii:]]",
       " \tfAa_\x01 !\x7f", " \tgAa_\x01 !\x7f"},
      {"\\n\\t\\r\\f\\v\\a", "\n\t\r\f\v\a", "n"},
      {"\\x41\\x{42}\\u{43}\\u0044\\U00000045", "ABCDE", "ABCDF"},
      {"\\x{1F600}\\u{e9}", "😀é", "😀e"},
      {"\\.\\*\\+\\?\\(\\)\\|\\[\\]\\{\\}\\^\\$\\\\\\#\\&\\-\\~\\ \\/\\\"", ".*+?()|[]{}^$\\#&-~ /\"", "x"},
      {"\\d\\D\\w\\W\\s\\S", "5x_- a", "55_- a"},
      {"[\\d\\s]+", "1 2\t3", "1a"},
      {"[^\\n]", "x", "\n"},
      {".", "中", "\n"},
      {"a{2}", "aa", "aaa"},
      {"a{2,}", "aaaaa", "a"},
      {"a{2,3}", "aaa", "aaaa"},
      {"a{0}b", "b", "ab"},
      {"a*?b+?c??d{1,2}?e{2,}?", "bbddee", "abcdddee"},
      {"(?:ab)+(?P<x>c)(?<y>d)", "ababcd", "abcdd"},
      {"[]a]", "]", "b"},
      {"[^]a]", "b", "]"},
      {"[a-]", "-", "b"},
      {"[-a]", "-", "b"},
      {"[a-c-e]", "-", "d"},
      {"[a[bc]]", "c", "d"},
      {"[\\]\\[\\-\\^]", "^", "a"},
      {"a|", "", "b"},
      {"()", "", "a"},
      {"]}", "]}", "]"},
      {"é+", "ééé", "e"},
      {"[α-ω]", "λ", "Ω"},
      {"\\0", "", "0"}, /* NUL: checked below with an explicit length */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mlsys_relm_fa *a = re(cases[i].re);
    if (!a) continue;
    if (strcmp(cases[i].re, "\\0")) CHECK_MSG(acc(a, cases[i].yes), "%s should accept \"%s\"", cases[i].re, cases[i].yes);
    else CHECK(mlsys_relm_fa_accepts(a, "\0", 1) && !acc(a, ""));
    CHECK_MSG(!acc(a, cases[i].no), "%s should reject \"%s\"", cases[i].re, cases[i].no);
    CHECK(check_canonical(a));
    mlsys_relm_fa_free(a);
  }
  /* invalid UTF-8 input is rejected, not decoded loosely */
  {
    mlsys_relm_fa *a = re(".*");
    REQUIRE(a);
    CHECK(acc(a, "abc中😀"));
    CHECK(!acc(a, "\xff"));
    CHECK(!acc(a, "\xc0\x80"));     /* overlong */
    CHECK(!acc(a, "\xed\xa0\x80")); /* surrogate */
    CHECK(!acc(a, "\xe4\xb8"));     /* truncated */
    CHECK(!acc(a, "\xf4\x90\x80\x80"));
    mlsys_relm_fa_free(a);
  }
}

/* POSIX and Perl classes against <ctype.h> in the "C" locale (an outside definition of the ASCII classes). */
static int posix_ref(const char *name, int c) {
  if (c >= 128) return 0;
  if (!strcmp(name, "alnum")) return isalnum(c) != 0;
  if (!strcmp(name, "alpha")) return isalpha(c) != 0;
  if (!strcmp(name, "ascii")) return 1;
  if (!strcmp(name, "blank")) return isblank(c) != 0;
  if (!strcmp(name, "cntrl")) return iscntrl(c) != 0;
  if (!strcmp(name, "digit")) return isdigit(c) != 0;
  if (!strcmp(name, "graph")) return isgraph(c) != 0;
  if (!strcmp(name, "lower")) return islower(c) != 0;
  if (!strcmp(name, "print")) return isprint(c) != 0;
  if (!strcmp(name, "punct")) return ispunct(c) != 0;
  if (!strcmp(name, "space")) return isspace(c) != 0;
  if (!strcmp(name, "upper")) return isupper(c) != 0;
  if (!strcmp(name, "word")) return isalnum(c) || c == '_';
  if (!strcmp(name, "xdigit")) return isxdigit(c) != 0;
  return -1;
}
TEST(classes_vs_ctype) {
  static const char *names[] = {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph",
                                "lower", "print", "punct", "space", "upper", "word", "xdigit"};
  static const struct { const char *esc, *posix; int neg; } perl[] = {
      {"\\d", "digit", 0}, {"\\D", "digit", 1}, {"\\w", "word", 0}, {"\\W", "word", 1}, {"\\s", "space", 0}, {"\\S", "space", 1}};
  static const uint32_t extra[] = {0x80, 0xA0, 0xE9, 0x660 /* Arabic-Indic zero */, 0x2003 /* em space */, 0x4E2D, 0x1F600};
  char pat[64], enc[8];
  int bad = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0] + sizeof perl / sizeof perl[0]; i++) {
    for (int neg = 0; neg < 2; neg++) {
      const char *name = i < 14 ? names[i] : perl[i - 14].posix;
      int flip = i < 14 ? neg : perl[i - 14].neg;
      mlsys_relm_fa *a;
      if (i >= 14 && neg) continue;
      if (i < 14) snprintf(pat, sizeof pat, neg ? "[[:^%s:]]" : "[[:%s:]]", name);
      else snprintf(pat, sizeof pat, "%s", perl[i - 14].esc);
      a = re(pat);
      if (!a) continue;
      for (uint32_t c = 0; c < 128 + sizeof extra / sizeof extra[0]; c++) {
        uint32_t cp = c < 128 ? c : extra[c - 128];
        int want = posix_ref(name, (int)cp) != flip, n = put_utf8(cp, enc);
        if (mlsys_relm_fa_accepts(a, enc, (size_t)n) != want && bad++ < 10)
          test__fail(__FILE__, __LINE__, "%s on U+%04X: expected %d", pat, cp, want);
      }
      mlsys_relm_fa_free(a);
    }
  }
  CHECK_EQ_INT(bad, 0);
}

static void expect_error(const char *pattern, mlsys_status want, const char *msg1, const char *msg2) {
  mlsys_relm_fa *a = (mlsys_relm_fa *)1;
  mlsys_status st = mlsys_relm_regex_compile(pattern, NULL, &a);
  CHECK_MSG(st == want, "\"%s\": status %d (%s), expected %d", pattern, st, mlsys_last_error(), want);
  CHECK(a == NULL);
  CHECK_CONTAINS(mlsys_last_error(), msg1);
  if (msg2) CHECK_CONTAINS(mlsys_last_error(), msg2);
  CHECK(!strncmp(mlsys_last_error(), "regex: ", 7));
}
TEST(dialect_rejects) {
  /* unsupported constructs: named, with the byte offset */
  expect_error("^abc", MLSYS_ERR_UNSUPPORTED, "anchors are not supported (the '^' at offset 0)", NULL);
  expect_error("abc$", MLSYS_ERR_UNSUPPORTED, "anchors", "offset 3");
  expect_error("ab\\Ac", MLSYS_ERR_UNSUPPORTED, "anchors", "offset 2");
  expect_error("ab\\z", MLSYS_ERR_UNSUPPORTED, "anchors", "offset 2");
  expect_error("a\\bc", MLSYS_ERR_UNSUPPORTED, "word boundaries", "offset 1");
  expect_error("a\\B", MLSYS_ERR_UNSUPPORTED, "word boundaries", "offset 1");
  expect_error("(a)\\1", MLSYS_ERR_UNSUPPORTED, "backreferences", "offset 3");
  expect_error("(?P<x>a)(?P=x)", MLSYS_ERR_UNSUPPORTED, "backreferences", "offset 8");
  expect_error("(?<x>a)\\k<x>", MLSYS_ERR_UNSUPPORTED, "backreferences", "offset 7");
  expect_error("a(?=b)", MLSYS_ERR_UNSUPPORTED, "lookaround", "offset 1");
  expect_error("a(?!b)", MLSYS_ERR_UNSUPPORTED, "lookaround", "offset 1");
  expect_error("(?<=a)b", MLSYS_ERR_UNSUPPORTED, "lookaround", "offset 0");
  expect_error("(?<!a)b", MLSYS_ERR_UNSUPPORTED, "lookaround", "offset 0");
  expect_error("(?s)abc", MLSYS_ERR_UNSUPPORTED, "inline flag 's' is not supported", "offset 0");
  expect_error("a(?#note)", MLSYS_ERR_UNSUPPORTED, "'(?#' groups are not supported", "offset 1");
  expect_error("\\p{Greek}", MLSYS_ERR_UNSUPPORTED, "unknown Unicode property 'Greek' at offset 0", NULL);
  expect_error("[a-z&&[^x]]", MLSYS_ERR_UNSUPPORTED, "set operations", "offset 4");
  expect_error("\\012", MLSYS_ERR_UNSUPPORTED, "octal", "offset 0");
  {
    mlsys_relm_re_desc d = {MLSYS_RELM_RE_UNICODE, 0, 0};
    mlsys_relm_fa *a;
    CHECK_OK(mlsys_relm_regex_compile("ab[c]", &d, &a)); /* the flag only matters where \d \w \s are used */
    mlsys_relm_fa_free(a);
    d.flags = 0x80;
    CHECK(mlsys_relm_regex_compile("ab", &d, &a) == MLSYS_ERR_ARG);
  }
  /* syntax errors */
  expect_error("abc(de)f)g", MLSYS_ERR_PARSE, "unbalanced ')' at offset 8", NULL);
  expect_error(")", MLSYS_ERR_PARSE, "unbalanced ')' at offset 0", NULL);
  expect_error("ab(cd", MLSYS_ERR_PARSE, "unclosed group '(' at offset 2", NULL);
  expect_error("abc[de", MLSYS_ERR_PARSE, "unclosed class '[' at offset 3", NULL);
  expect_error("[]", MLSYS_ERR_PARSE, "unclosed class", "offset 0");
  expect_error("abcd{3,2}", MLSYS_ERR_PARSE, "bad repetition {3,2} at offset 4", NULL);
  expect_error("a{", MLSYS_ERR_PARSE, "bad repetition", "offset 1");
  expect_error("a{x}", MLSYS_ERR_PARSE, "bad repetition", "offset 1");
  expect_error("a{1,x}", MLSYS_ERR_PARSE, "bad repetition", "offset 1");
  expect_error("a{,3}", MLSYS_ERR_PARSE, "bad repetition", "offset 1");
  expect_error("*a", MLSYS_ERR_PARSE, "nothing to repeat", "offset 0");
  expect_error("a|+", MLSYS_ERR_PARSE, "nothing to repeat", "offset 2");
  expect_error("(?)", MLSYS_ERR_UNSUPPORTED, "'(?)'", "offset 0");
  expect_error("[z-a]", MLSYS_ERR_PARSE, "bad class range 'z-a' at offset 1", NULL);
  expect_error("[\\d-z]", MLSYS_ERR_PARSE, "bad class range", "offset 1");
  expect_error("[[:alpah:]]", MLSYS_ERR_PARSE, "unknown POSIX class '[:alpah:]'", "offset 1");
  expect_error("ab\\", MLSYS_ERR_PARSE, "trailing backslash at offset 2", NULL);
  expect_error("a\\q", MLSYS_ERR_PARSE, "unknown escape '\\q' at offset 1", NULL);
  expect_error("\\xG1", MLSYS_ERR_PARSE, "hexadecimal", "offset 0");
  expect_error("\\x{}", MLSYS_ERR_PARSE, "hexadecimal", "offset 0");
  expect_error("\\x{110000}", MLSYS_ERR_PARSE, "not a Unicode scalar", "offset 0");
  expect_error("a\\u{D800}", MLSYS_ERR_PARSE, "not a Unicode scalar", "offset 1");
  expect_error("(?P<1x>a)", MLSYS_ERR_PARSE, "bad group name", "offset 0");
  expect_error("ab\xff", MLSYS_ERR_PARSE, "invalid UTF-8 at offset 2", NULL);
  expect_error("a\xc0\x80", MLSYS_ERR_PARSE, "invalid UTF-8 at offset 1", NULL);
  expect_error("[a\xed\xa0\x80]", MLSYS_ERR_PARSE, "invalid UTF-8 at offset 2", NULL);
  expect_error("\xe4\xb8", MLSYS_ERR_PARSE, "invalid UTF-8 at offset 0", NULL);
}

/* Every query of spec §3.2 parses and accepts what it should. */
TEST(spec_queries) {
  static const struct { const char *re, *yes, *no; } q[] = {
      {"https://www\\.([[:alnum:]]|_|-|#|%)+\\.([[:alnum:]]|_|-|#|%|/)+", "https://www.cmu.edu/", "https://www.cmu"},
      {"https://www\\.", "https://www.", "https://wwwx"},
      {"My phone number is ([0-9]{3}) ([0-9]{3}) ([0-9]{4})", "My phone number is 412 268 3000",
       "My phone number is 412 268 300"},
      {"George Washington was born on ((January)|(February)|(March)|(April)|(May)|(June)|(July)|(August)|(September)|"
       "(October)|(November)|(December)) [0-9]{1,2}, [0-9]{4}",
       "George Washington was born on February 22, 1732", "George Washington was born on Feb 22, 1732"},
      {"The ((man)|(woman)) was trained in", "The woman was trained in", "The men was trained in"},
      {" ((art)|(science)|(business)|(medicine)|(computer science)|(engineering)|(humanities)|(social sciences)|"
       "(information systems)|(math))",
       " computer science", "computer science"},
      {"((fucker)|(fucktard)|(motherfucker)|(muthafucka)|(asshole)|(bitch))", "muthafucka", "mother"},
      {"The cat ([a-zA-Z]+)((\\.)|(!)|(\\?))?(\")?", "The cat sat.\"", "The cat sat.!"},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    mlsys_relm_fa *a = re(q[i].re);
    if (!a) continue;
    CHECK_MSG(acc(a, q[i].yes), "%s should accept \"%s\"", q[i].re, q[i].yes);
    CHECK_MSG(!acc(a, q[i].no), "%s should reject \"%s\"", q[i].re, q[i].no);
    CHECK(check_canonical(a) && check_minimal(a));
    mlsys_relm_fa_free(a);
  }
  {
    mlsys_relm_fa *a = re(q[3].re); /* dates: 12 months x (10 + 90) days x 10^4 years */
    REQUIRE(a);
    CHECK_EQ_INT(count_all(a, -1), 12 * 110 * 10000);
    mlsys_relm_fa_free(a);
    a = re(q[6].re);
    REQUIRE(a);
    CHECK_EQ_INT(count_all(a, -1), 6);
    mlsys_relm_fa_free(a);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   Membership against Python's re (an independent engine). One python3 run for every case.
   --------------------------------------------------------------------------------------------------------------- */
static const char *PY = "/usr/bin/python3";
static const char *PY_SCRIPT =
    "import re, sys\n"
    "out = []\n"
    "rx = None\n"
    "for line in open(sys.argv[1]):\n"
    "    t, h = line.split()\n"
    "    v = '' if h == '-' else bytes.fromhex(h).decode('utf-8')\n"
    "    if t == 'P': rx = re.compile(v, re.ASCII)\n"
    "    else: out.append('1' if rx.fullmatch(v) else '0')\n"
    "sys.stdout.write(''.join(out))\n";

static void put_hex(FILE *f, const char *tag, const char *s, size_t n) {
  fprintf(f, "%s ", tag);
  if (!n) fputc('-', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", (unsigned char)s[i]);
  fputc('\n', f);
}

/* A random walk from the start: a string of the language (or of its prefixes, when it stops early). */
static int walk(const mlsys_relm_fa *a, mlsys_rng *r, uint32_t *out, int maxlen) {
  int q = 0, n = 0;
  while (n < maxlen) {
    const uint32_t *lo, *hi;
    const int32_t *dst;
    int k = mlsys_relm_fa_out(a, q, &lo, &hi, &dst), j;
    uint32_t c;
    if (!k || (mlsys_relm_fa_is_final(a, q) && mlsys_rng_below(r, 100) < 15)) break;
    j = (int)mlsys_rng_below(r, (uint64_t)k);
    switch (mlsys_rng_below(r, 4)) {
    case 0: c = lo[j]; break;
    case 1: c = hi[j]; break;
    default: c = lo[j] + (uint32_t)mlsys_rng_below(r, (uint64_t)(hi[j] - lo[j]) + 1);
    }
    out[n++] = c;
    q = dst[j];
  }
  return n;
}
static const uint32_t interesting[] = {'a', 'b', 'c', 'z', 'A', 'Z', '0', '9', ' ', '.', '-', '_', '/', '#', '%', ',',
                                       ':', '!', '?', '"', '\n', '\t', 0xE9, 0x4E2D, 0x1F600, 0x3BB, 0x7F, 0x80, 0x7FF,
                                       0x800, 0xFFFF, 0x10000, 0x10FFFF, 0};
static int mutate(mlsys_rng *r, uint32_t *s, int n, int cap) {
  int i = n ? (int)mlsys_rng_below(r, (uint64_t)n) : 0, op = (int)mlsys_rng_below(r, 3);
  int pick = (int)mlsys_rng_below(r, 4);
  uint32_t c = pick == 0 && n ? s[mlsys_rng_below(r, (uint64_t)n)]
               : pick == 1    ? (uint32_t)(0x20 + mlsys_rng_below(r, 95))
                              : interesting[mlsys_rng_below(r, sizeof interesting / 4)];
  if (op == 0 && n < cap) { /* insert */
    i = (int)mlsys_rng_below(r, (uint64_t)n + 1);
    memmove(s + i + 1, s + i, sizeof *s * (size_t)(n - i));
    s[i] = c;
    return n + 1;
  }
  if (op == 1 && n) { /* delete */
    memmove(s + i, s + i + 1, sizeof *s * (size_t)(n - i - 1));
    return n - 1;
  }
  if (n) s[i] = c;
  return n;
}

typedef struct { const char *ours, *py; } pycase;
static const pycase py_fixed[] = {
    {"https://www\\.([[:alnum:]]|_|-|#|%)+\\.([[:alnum:]]|_|-|#|%|/)+",
     "https://www\\.([0-9A-Za-z]|_|-|#|%)+\\.([0-9A-Za-z]|_|-|#|%|/)+"},
    {"My phone number is ([0-9]{3}) ([0-9]{3}) ([0-9]{4})", NULL},
    {"George Washington was born on ((January)|(February)|(March)|(April)|(May)|(June)|(July)|(August)|(September)|"
     "(October)|(November)|(December)) [0-9]{1,2}, [0-9]{4}",
     NULL},
    {"The ((man)|(woman)) was trained in ((art)|(science)|(business)|(medicine)|(computer science)|(engineering)|"
     "(humanities)|(social sciences)|(information systems)|(math))",
     NULL},
    {"((fucker)|(fucktard)|(motherfucker)|(muthafucka)|(asshole)|(bitch))", NULL},
    {"The cat ([a-zA-Z]+)((\\.)|(!)|(\\?))?(\")?", NULL},
    {"(a|b)*abb", NULL},
    {"[0-9]{3}", NULL},
    {"(ab|a)*b?", NULL},
    {"(a|ab)(c|bcd)(d*)", NULL},
    {"((a|b)(a|b))*", NULL},
    {"x{2,4}y{0,3}z{2,}", NULL},
    {"[^abc]+", NULL},
    {".*foo.*", NULL},
    {"\\d{2,}-\\w+\\s?\\S*\\D\\W", NULL},
    {"[\\x41-\\x5A\\u{61}-\\u{7A}]*", "[\\x41-\\x5A\\U00000061-\\U0000007A]*"},
    {"(?:ab)*?c+?d??", NULL},
    {"[[:punct:][:digit:]]{1,3}", "[!-/:-@\\[-`{-~0-9]{1,3}"},
    {"[[:^alpha:]]x", "[^A-Za-z]x"},
    {"(?P<year>[0-9]{4})-(?<mon>[0-9]{2})", "(?P<year>[0-9]{4})-(?P<mon>[0-9]{2})"},
    {"é+[α-ω]*中?😀*", NULL},
    {"[\\u{800}-\\u{FFFF}]+.", "[\\U00000800-\\U0000FFFF]+."},
    {"[^\\x{80}-\\x{10FFFF}]{2}", "[^\\U00000080-\\U0010FFFF]{2}"},
    {"\\t\\n\\r\\f\\v\\a\\x00[\\]\\[]", NULL},
    {"(0|1(01*0)*1)*", NULL},
    {"[a-c-e]+[]x]*", NULL},
    {"(a|)+b", NULL},
    {"(a*)*b", NULL},
};
TEST(membership_vs_python_re) {
  char dpath[] = "/tmp/relm_fa_py_XXXXXX", spath[] = "/tmp/relm_fa_pyscript_XXXXXX", cmd[256];
  FILE *f;
  int fd, nre = 0, total = 0, bad = 0, i;
  mlsys_rng r;
  static char *pats_ours[300], *pats_py[300];
  static uint32_t sbuf[64];
  static char enc[400];
  char *expect = NULL, *got = NULL;
  size_t cap = 1 << 16, ng = 0, ne = 0;
  if (access(PY, X_OK) != 0) SKIP_DEP("python3 not found at %s (needed as the outside regex engine)", PY);
  mlsys_rng_seed(&r, 42);
  /* the fixed list and random regexes over a mixed alphabet */
  for (i = 0; i < (int)(sizeof py_fixed / sizeof py_fixed[0]); i++) {
    pats_ours[nre] = strdup(py_fixed[i].ours);
    pats_py[nre++] = strdup(py_fixed[i].py ? py_fixed[i].py : py_fixed[i].ours);
  }
  {
    static const uint32_t alpha[] = {'a', 'b', 'z', 0xE9, 0x4E2D, '.', ' '};
    static tree t;
    char buf[8192];
    t.alpha = alpha, t.nalpha = 7;
    while (nre < 280) {
      int root;
      t.n = 0;
      root = gen(&t, &r, 5);
      render_str(&t, root, 0, buf);
      pats_ours[nre] = strdup(buf);
      render_str(&t, root, 1, buf);
      pats_py[nre++] = strdup(buf);
    }
  }
  fd = mkstemp(dpath);
  REQUIRE(fd >= 0);
  f = fdopen(fd, "w");
  expect = (char *)malloc(cap);
  for (i = 0; i < nre; i++) {
    mlsys_relm_fa *a = re(pats_ours[i]);
    int k;
    if (!a) continue;
    put_hex(f, "P", pats_py[i], strlen(pats_py[i]));
    for (k = 0; k < 120; k++) {
      /* random regexes get short strings: Python's backtracking is exponential on nested repetitions */
      int n = walk(a, &r, sbuf, i < (int)(sizeof py_fixed / sizeof py_fixed[0]) ? 40 : 14),
          muts = k < 30 ? 0 : 1 + (int)mlsys_rng_below(&r, 3);
      size_t len;
      if (k >= 110) { /* random strings */
        n = (int)mlsys_rng_below(&r, 8);
        for (int j = 0; j < n; j++) sbuf[j] = interesting[mlsys_rng_below(&r, sizeof interesting / 4 - 1)];
      }
      while (muts--) n = mutate(&r, sbuf, n, 60);
      len = encode(sbuf, n, enc);
      put_hex(f, "S", enc, len);
      if (ne + 1 >= cap) expect = (char *)realloc(expect, cap *= 2);
      expect[ne++] = (char)('0' + mlsys_relm_fa_accepts(a, enc, len));
    }
    mlsys_relm_fa_free(a);
  }
  fclose(f);
  fd = mkstemp(spath);
  REQUIRE(fd >= 0);
  f = fdopen(fd, "w");
  fputs(PY_SCRIPT, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s", PY, spath, dpath);
  f = popen(cmd, "r");
  REQUIRE(f);
  got = (char *)malloc(ne + 16);
  ng = fread(got, 1, ne + 16, f);
  CHECK_EQ_INT(pclose(f), 0);
  CHECK_EQ_INT(ng, ne);
  /* compare, naming the regex and string of the first disagreements */
  if (ng == ne) {
    FILE *d = fopen(dpath, "r");
    char line[16384], pat[8192] = "";
    size_t k = 0;
    while (d && fgets(line, sizeof line, d)) {
      if (line[0] == 'P') {
        snprintf(pat, sizeof pat, "%.4000s", line + 2);
        continue;
      }
      total++;
      if (got[k] != expect[k]) {
        bad++;
        if (bad <= 10) test__fail(__FILE__, __LINE__, "python says %c, we say %c: pattern hex %.200s string hex %.200s",
                                  got[k], expect[k], pat, line + 2);
      }
      k++;
    }
    if (d) fclose(d);
  }
  printf("    %d regexes, %d strings compared with Python re, %d disagreements\n", nre, total, bad);
  CHECK(total > 10000);
  CHECK_EQ_INT(bad, 0);
  /* some of each answer, so the comparison is not vacuous */
  {
    size_t ones = 0;
    for (size_t k = 0; k < ne; k++) ones += expect[k] == '1';
    CHECK(ones > ne / 5 && ones < ne * 4 / 5);
  }
  unlink(dpath), unlink(spath);
  for (i = 0; i < nre; i++) free(pats_ours[i]), free(pats_py[i]);
  free(expect), free(got);
}

/* ---------------------------------------------------------------------------------------------------------------
   Brute force over every string of length ≤ 6 on {a, b, c}
   --------------------------------------------------------------------------------------------------------------- */
static const uint32_t abc[] = {'a', 'b', 'c'};

TEST(brute_force_random_regexes) {
  static tree t;
  mlsys_rng r;
  strset S = all_strings(abc, 3, 6);
  mlsys_relm_fa *sigma = re("[abc]*");
  char pat[8192], enc[64];
  int iter, bad = 0, nonmin = 0, maxstates = 0;
  REQUIRE(sigma);
  mlsys_rng_seed(&r, 7);
  t.alpha = abc, t.nalpha = 3;
  for (iter = 0; iter < 400; iter++) {
    int root, k, brute = 0;
    mlsys_relm_fa *a, *ai;
    double c;
    t.n = 0;
    root = gen(&t, &r, 4);
    render_str(&t, root, 0, pat);
    a = re(pat);
    if (!a) continue;
    for (k = 0; k < S.n; k++) {
      int want = full_match(&t, root, S.s[k], S.len[k]);
      size_t len = encode(S.s[k], S.len[k], enc);
      brute += want;
      if (mlsys_relm_fa_accepts(a, enc, len) != want && bad++ < 10)
        test__fail(__FILE__, __LINE__, "%s on \"%s\": brute force %d", pat, enc, want);
    }
    /* count_strings of L ∩ {a,b,c}* up to length 6 == the brute-force count */
    REQUIRE_OK(mlsys_relm_fa_intersect(a, sigma, &ai));
    REQUIRE_OK(mlsys_relm_fa_count_strings(ai, 6, &c, NULL));
    CHECK_MSG(c == brute, "%.500s: count %g, brute force %d", pat, c, brute);
    if (!check_canonical(a)) CHECK_MSG(0, "%.500s: not canonical", pat);
    if (!check_minimal(a) && nonmin++ < 5) CHECK_MSG(0, "%.500s: not minimal", pat);
    if (mlsys_relm_fa_num_states(a) > maxstates) maxstates = mlsys_relm_fa_num_states(a);
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(ai);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(maxstates >= 5); /* the random regexes are not all trivial */
  mlsys_relm_fa_free(sigma);
  strset_free(&S);
}

TEST(algebra_vs_brute_force_sets) {
  static tree t1, t2;
  mlsys_rng r;
  strset S = all_strings(abc, 3, 6);
  char p1[8192], p2[8192], enc[64];
  int iter, bad = 0;
  mlsys_rng_seed(&r, 11);
  t1.alpha = t2.alpha = abc, t1.nalpha = t2.nalpha = 3;
  for (iter = 0; iter < 150; iter++) {
    int r1, r2, k;
    mlsys_relm_fa *a, *b, *u, *in, *df, *ct, *pc, *dd;
    t1.n = t2.n = 0;
    r1 = gen(&t1, &r, 3), r2 = gen(&t2, &r, 3);
    render_str(&t1, r1, 0, p1), render_str(&t2, r2, 0, p2);
    a = re(p1), b = re(p2);
    if (!a || !b) continue;
    REQUIRE_OK(mlsys_relm_fa_union(a, b, &u));
    REQUIRE_OK(mlsys_relm_fa_intersect(a, b, &in));
    REQUIRE_OK(mlsys_relm_fa_difference(a, b, &df));
    REQUIRE_OK(mlsys_relm_fa_concat(a, b, &ct));
    REQUIRE_OK(mlsys_relm_fa_prefix_closure(a, &pc));
    REQUIRE_OK(mlsys_relm_fa_difference(a, a, &dd));
    CHECK(mlsys_relm_fa_is_empty(dd));
    for (k = 0; k < S.n; k++) {
      const uint32_t *s = S.s[k];
      int n = S.len[k], m1 = full_match(&t1, r1, s, n), m2 = full_match(&t2, r2, s, n), cc = 0, pp;
      uint32_t ends = match(&t1, r1, s, n, 0);
      size_t len = encode(s, n, enc);
      for (int j = 0; j <= n && !cc; j++)
        if (ends >> j & 1) cc = (int)(match(&t2, r2, s, n, j) >> n & 1);
      pp = m1 || prefix_hit(&t1, r1, s, n, 0);
      if ((mlsys_relm_fa_accepts(u, enc, len) != (m1 || m2) || mlsys_relm_fa_accepts(in, enc, len) != (m1 && m2) ||
           mlsys_relm_fa_accepts(df, enc, len) != (m1 && !m2) || mlsys_relm_fa_accepts(ct, enc, len) != cc ||
           mlsys_relm_fa_accepts(pc, enc, len) != pp) &&
          bad++ < 10)
        test__fail(__FILE__, __LINE__, "\"%s\": a=%s (%d) b=%s (%d): u%d i%d d%d c%d(%d) p%d(%d)", enc, p1, m1, p2, m2,
                   mlsys_relm_fa_accepts(u, enc, len), mlsys_relm_fa_accepts(in, enc, len),
                   mlsys_relm_fa_accepts(df, enc, len), mlsys_relm_fa_accepts(ct, enc, len), cc,
                   mlsys_relm_fa_accepts(pc, enc, len), pp);
    }
    CHECK(check_canonical(u) && check_canonical(in) && check_canonical(df) && check_canonical(ct) &&
          check_canonical(pc));
    CHECK_MSG(check_minimal(u) && check_minimal(in) && check_minimal(df) && check_minimal(ct) && check_minimal(pc),
              "a=%.500s b=%.500s: minimal u%d i%d d%d c%d p%d", p1, p2, check_minimal(u), check_minimal(in), check_minimal(df),
              check_minimal(ct), check_minimal(pc));
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b), mlsys_relm_fa_free(u), mlsys_relm_fa_free(in);
    mlsys_relm_fa_free(df), mlsys_relm_fa_free(ct), mlsys_relm_fa_free(pc), mlsys_relm_fa_free(dd);
  }
  CHECK_EQ_INT(bad, 0);
  strset_free(&S);
  /* identities that pin the canonical form: A ∪ A = A, A ∩ A = A, (A ∖ B) ∪ (A ∩ B) = A */
  {
    mlsys_relm_fa *a = re("(ab|c)*d?"), *b = re("[a-c]{2,3}d"), *x, *y, *z;
    REQUIRE(a && b);
    REQUIRE_OK(mlsys_relm_fa_union(a, a, &x));
    CHECK(mlsys_relm_fa_equal(x, a));
    mlsys_relm_fa_free(x);
    REQUIRE_OK(mlsys_relm_fa_intersect(a, a, &x));
    CHECK(mlsys_relm_fa_equal(x, a));
    mlsys_relm_fa_free(x);
    REQUIRE_OK(mlsys_relm_fa_difference(a, b, &x));
    REQUIRE_OK(mlsys_relm_fa_intersect(a, b, &y));
    REQUIRE_OK(mlsys_relm_fa_union(x, y, &z));
    CHECK(mlsys_relm_fa_equal(z, a));
    CHECK(!mlsys_relm_fa_equal(x, a));
    mlsys_relm_fa_free(x), mlsys_relm_fa_free(y), mlsys_relm_fa_free(z);
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
  }
  /* bad operands */
  {
    mlsys_relm_fa *a = re("ab"), *bb, *x = (mlsys_relm_fa *)1;
    REQUIRE(a);
    REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &bb));
    CHECK(mlsys_relm_fa_union(a, bb, &x) == MLSYS_ERR_ARG && x == NULL);
    CHECK_CONTAINS(mlsys_last_error(), "bytes");
    CHECK(mlsys_relm_fa_concat(a, NULL, &x) == MLSYS_ERR_ARG);
    CHECK(mlsys_relm_fa_intersect(a, a, NULL) == MLSYS_ERR_ARG);
    CHECK(mlsys_relm_fa_prefix_closure(NULL, &x) == MLSYS_ERR_ARG);
    /* byte automata combine with each other */
    REQUIRE_OK(mlsys_relm_fa_concat(bb, bb, &x));
    CHECK(mlsys_relm_fa_is_bytes(x) && acc(x, "abab"));
    mlsys_relm_fa_free(x), mlsys_relm_fa_free(a), mlsys_relm_fa_free(bb);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   §7.3 test 11: Levenshtein
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  char **v;
  int n, cap;
} sset;
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void sset_add(sset *s, const char *x) {
  if (s->n == s->cap) s->v = (char **)realloc(s->v, sizeof(char *) * (size_t)(s->cap = s->cap ? 2 * s->cap : 64));
  s->v[s->n++] = strdup(x);
}
static void sset_uniq(sset *s) {
  int k = 0;
  if (s->n) qsort(s->v, (size_t)s->n, sizeof(char *), cmp_str);
  for (int i = 0; i < s->n; i++) {
    if (k && !strcmp(s->v[k - 1], s->v[i])) free(s->v[i]);
    else s->v[k++] = s->v[i];
  }
  s->n = k;
}
static int sset_has(const sset *s, const char *x) {
  return s->n && bsearch(&x, s->v, (size_t)s->n, sizeof(char *), cmp_str) != NULL;
}
static void sset_free(sset *s) {
  for (int i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}
/* One reference edit operation (§3.4 transducer T) applied to every string of `in`, into out. ASCII only. */
static void edit_once(const sset *in, const char *sigma, int del, int ins, int sub, int pt_del, int pt_sub, sset *out) {
  char buf[64];
  for (int w = 0; w < in->n; w++) {
    const char *s = in->v[w];
    int n = (int)strlen(s), i;
    const char *c;
    for (i = 0; i <= n; i++) {
      if (ins)
        for (c = sigma; *c; c++) {
          memcpy(buf, s, (size_t)i), buf[i] = *c, strcpy(buf + i + 1, s + i);
          sset_add(out, buf);
        }
      if (i == n) break;
      if (del && (strchr(sigma, s[i]) || pt_del)) {
        memcpy(buf, s, (size_t)i), strcpy(buf + i, s + i + 1);
        sset_add(out, buf);
      }
      if (sub && (strchr(sigma, s[i]) || pt_sub))
        for (c = sigma; *c; c++)
          if (*c != s[i]) {
            strcpy(buf, s), buf[i] = *c;
            sset_add(out, buf);
          }
    }
  }
  sset_uniq(out);
}
static int collect_sset(void *ctx, const char *s, size_t n) {
  (void)n;
  sset_add((sset *)ctx, s);
  return 0;
}
static int lev_dist(const char *a, const char *b) {
  int n = (int)strlen(a), m = (int)strlen(b), d[16][16];
  if (n > 15 || m > 15) return 99;
  for (int i = 0; i <= n; i++) d[i][0] = i;
  for (int j = 0; j <= m; j++) d[0][j] = j;
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= m; j++) {
      int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1, z = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      d[i][j] = x < y ? (x < z ? x : z) : (y < z ? y : z);
    }
  return d[n][m];
}

/* Levenshtein of the language `words` (given as strings) against the edit-BFS of the reference semantics. */
static void check_levenshtein(const char **words, int nw, const char *sigma, int k, int del, int ins, int sub,
                              int pt_del, int pt_sub) {
  char pat[512], *o = pat;
  mlsys_relm_fa *a, *l;
  mlsys_relm_edit_desc d;
  sset layer = {0}, all = {0}, got = {0};
  double c;
  int e, i, missing = 0;
  for (i = 0; i < nw; i++) {
    if (i) *o++ = '|';
    o += mlsys_relm_regex_escape(words[i], o, (size_t)(pat + sizeof pat - o));
    sset_add(&layer, words[i]), sset_add(&all, words[i]);
  }
  a = re(pat);
  if (!a) return;
  memset(&d, 0, sizeof d);
  d.alphabet = sigma, d.num_edits = k, d.no_del = !del, d.no_ins = !ins, d.no_sub = !sub;
  d.passthrough_del = pt_del, d.passthrough_sub = pt_sub;
  if (mlsys_relm_fa_levenshtein(a, &d, &l)) {
    CHECK_MSG(0, "levenshtein(%s): %s", pat, mlsys_last_error());
    mlsys_relm_fa_free(a);
    return;
  }
  sset_uniq(&layer);
  for (e = 0; e < k; e++) {
    sset next = {0};
    edit_once(&layer, sigma, del, ins, sub, pt_del, pt_sub, &next);
    for (i = 0; i < next.n; i++) sset_add(&all, next.v[i]);
    sset_free(&layer);
    layer = next;
  }
  sset_uniq(&all);
  REQUIRE_OK(mlsys_relm_fa_count_strings(l, -1, &c, NULL));
  CHECK_MSG(c == all.n, "levenshtein(%s, sigma \"%s\", k %d, del%d ins%d sub%d pd%d ps%d): %g strings, brute force %d",
            pat, sigma, k, del, ins, sub, pt_del, pt_sub, c, all.n);
  REQUIRE_OK(mlsys_relm_fa_enumerate(l, 0, collect_sset, &got));
  for (i = 0; i < got.n; i++)
    if (!sset_has(&all, got.v[i]) && missing++ < 3) CHECK_MSG(0, "%s: extra string \"%s\"", pat, got.v[i]);
  for (i = 0; i < all.n; i++)
    if (!acc(l, all.v[i]) && missing++ < 6) CHECK_MSG(0, "%s: missing string \"%s\"", pat, all.v[i]);
  CHECK(check_canonical(l) && check_minimal(l));
  sset_free(&layer), sset_free(&all), sset_free(&got);
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(l);
}
TEST(levenshtein_vs_brute_force) {
  static const char *w1[] = {"abc"}, *w2[] = {"cab"}, *w3[] = {"ab", "ba", "c"}, *w4[] = {""}, *w5[] = {"a.b"};
  mlsys_rng r;
  int k;
  for (k = 1; k <= 2; k++) {
    check_levenshtein(w1, 1, "abc", k, 1, 1, 1, 0, 0);
    check_levenshtein(w1, 1, "abcd", k, 1, 1, 1, 0, 0);
    check_levenshtein(w2, 1, "ab", k, 1, 1, 1, 0, 0); /* c is passthrough */
    check_levenshtein(w2, 1, "ab", k, 1, 1, 1, 1, 0);
    check_levenshtein(w2, 1, "ab", k, 1, 1, 1, 0, 1);
    check_levenshtein(w2, 1, "ab", k, 1, 1, 1, 1, 1);
    check_levenshtein(w3, 3, "abc", k, 1, 1, 1, 0, 0);
    check_levenshtein(w3, 3, "bc", k, 1, 0, 1, 0, 0);
    check_levenshtein(w3, 3, "bc", k, 0, 1, 0, 1, 1);
    check_levenshtein(w3, 3, "a", k, 0, 0, 1, 0, 1);
    check_levenshtein(w4, 1, "xy", k, 1, 1, 1, 0, 0);
    check_levenshtein(w5, 1, "ab.", k, 1, 1, 1, 0, 0); /* a metacharacter in the alphabet */
  }
  check_levenshtein(w1, 1, "abc", 3, 1, 1, 1, 0, 0);
  /* random literals and alphabets */
  mlsys_rng_seed(&r, 5);
  for (int it = 0; it < 40; it++) {
    char lit[8], sig[8];
    const char *wl[1] = {lit};
    int n = 1 + (int)mlsys_rng_below(&r, 4), ns = 1 + (int)mlsys_rng_below(&r, 3), i;
    for (i = 0; i < n; i++) lit[i] = (char)('a' + mlsys_rng_below(&r, 4));
    lit[n] = 0;
    for (i = 0; i < ns; i++) sig[i] = (char)('a' + i + (int)mlsys_rng_below(&r, 2));
    sig[ns] = 0;
    check_levenshtein(wl, 1, sig, 1 + (int)mlsys_rng_below(&r, 2), (int)mlsys_rng_below(&r, 4) != 0,
                      (int)mlsys_rng_below(&r, 4) != 0, (int)mlsys_rng_below(&r, 4) != 0, (int)mlsys_rng_below(&r, 2),
                      (int)mlsys_rng_below(&r, 2));
  }
}
TEST(levenshtein_spec_numbers) {
  mlsys_relm_fa *a = re("a b"), *l, *c2;
  mlsys_relm_edit_desc d;
  double c;
  sset got = {0};
  int maxd = 0, i, over = 0;
  REQUIRE(a);
  memset(&d, 0, sizeof d); /* the reference defaults: 95 printable characters, one edit */
  REQUIRE_OK(mlsys_relm_fa_levenshtein(a, &d, &l));
  REQUIRE_OK(mlsys_relm_fa_count_strings(l, -1, &c, NULL));
  CHECK_EQ_INT(c, 663); /* 1 + 3 deletions + 3·94 substitutions + (4·95 − 3) insertions (spec §7.3 test 2) */
  CHECK(acc(l, "a b") && acc(l, "ab") && acc(l, "a~b") && acc(l, "a b!") && acc(l, "x b") && !acc(l, "xyb"));
  CHECK(!acc(l, "a\tb")); /* outside the alphabet */
  mlsys_relm_fa_free(l), mlsys_relm_fa_free(a);
  /* `codE` with 2 edits reaches distance exactly 2, and holds every string within distance 2 */
  a = re("codE");
  REQUIRE(a);
  d.num_edits = 2;
  REQUIRE_OK(mlsys_relm_fa_levenshtein(a, &d, &c2));
  REQUIRE_OK(mlsys_relm_fa_enumerate(c2, 0, collect_sset, &got));
  for (i = 0; i < got.n; i++) {
    int dd = lev_dist("codE", got.v[i]);
    if (dd > maxd) maxd = dd;
    if (dd > 2) over++;
  }
  CHECK_EQ_INT(maxd, 2);
  CHECK_EQ_INT(over, 0);
  CHECK(acc(c2, "cde") && acc(c2, "xcodEy") && acc(c2, "od") && !acc(c2, "o") && !acc(c2, "cODe"));
  {
    /* and it is all of them: as many strings as the edit BFS over the 95 characters finds */
    sset layer = {0}, all = {0}, next = {0};
    char sig[96];
    for (i = 0; i < 95; i++) sig[i] = (char)(0x20 + i);
    sig[95] = 0;
    sset_add(&layer, "codE"), sset_add(&all, "codE");
    edit_once(&layer, sig, 1, 1, 1, 0, 0, &next);
    for (i = 0; i < next.n; i++) sset_add(&all, next.v[i]);
    sset_free(&layer);
    layer = next;
    memset(&next, 0, sizeof next);
    edit_once(&layer, sig, 1, 1, 1, 0, 0, &next);
    for (i = 0; i < next.n; i++) sset_add(&all, next.v[i]);
    sset_uniq(&all);
    CHECK_EQ_INT(got.n, all.n);
    sset_free(&layer), sset_free(&next), sset_free(&all);
  }
  sset_free(&got);
  mlsys_relm_fa_free(c2), mlsys_relm_fa_free(a);
  /* bad arguments */
  a = re("ab");
  REQUIRE(a);
  d.num_edits = -1;
  CHECK(mlsys_relm_fa_levenshtein(a, &d, &l) == MLSYS_ERR_ARG);
  d.num_edits = 1, d.alphabet = "ab\xff";
  CHECK(mlsys_relm_fa_levenshtein(a, &d, &l) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "offset 2");
  d.alphabet = NULL, d.num_edits = 5, d.max_nfa_states = 10;
  CHECK(mlsys_relm_fa_levenshtein(a, &d, &l) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "max_nfa_states");
  {
    mlsys_relm_fa *b;
    REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
    memset(&d, 0, sizeof d);
    CHECK(mlsys_relm_fa_levenshtein(b, &d, &l) == MLSYS_ERR_ARG);
    mlsys_relm_fa_free(b);
  }
  CHECK(mlsys_relm_fa_levenshtein(NULL, NULL, &l) == MLSYS_ERR_ARG);
  /* a NULL desc is the defaults; non-ASCII alphabets work */
  REQUIRE_OK(mlsys_relm_fa_levenshtein(a, NULL, &l));
  CHECK(acc(l, "a") && acc(l, "a!b") && !acc(l, "éb"));
  mlsys_relm_fa_free(l);
  d.alphabet = "éb";
  REQUIRE_OK(mlsys_relm_fa_levenshtein(a, &d, &l));
  /* 'a' is passthrough: ab, a (delete b), aé (b→é), éab bab aéb abb abé (insertions) */
  CHECK(!acc(l, "éb") && !acc(l, "b") && acc(l, "aé") && acc(l, "aéb") && !acc(l, "xb"));
  CHECK_EQ_INT(count_all(l, -1), 8);
  mlsys_relm_fa_free(l), mlsys_relm_fa_free(a);
}

/* ---------------------------------------------------------------------------------------------------------------
   §3.5 UTF-8 lowering
   --------------------------------------------------------------------------------------------------------------- */
static uint32_t boundary_cp(mlsys_rng *r) {
  static const uint32_t b[] = {0x00, 0x01, 0x41, 0x7E, 0x7F, 0x80, 0x81, 0xBF, 0xC0, 0x7FF, 0x800, 0x801, 0xFFF,
                               0x1000, 0xD7FF, 0xE000, 0xE001, 0xFFFD, 0xFFFF, 0x10000, 0x10001, 0x3FFFF, 0x40000,
                               0xFFFFF, 0x100000, 0x10FFFE, 0x10FFFF};
  uint32_t c;
  if (mlsys_rng_below(r, 3)) return b[mlsys_rng_below(r, sizeof b / sizeof b[0])];
  do c = (uint32_t)mlsys_rng_below(r, 0x110000);
  while (c >= 0xD800 && c <= 0xDFFF);
  return c;
}
TEST(utf8_lowering) {
  mlsys_rng r;
  char pat[1024], enc[512];
  static uint32_t s[80];
  int it, bad = 0, checked = 0;
  mlsys_rng_seed(&r, 3);
  for (it = 0; it < 150; it++) {
    char *o = pat;
    int pieces = 1 + (int)mlsys_rng_below(&r, 3), p, k;
    mlsys_relm_fa *a, *b;
    for (p = 0; p < pieces; p++) {
      int nr = 1 + (int)mlsys_rng_below(&r, 3);
      o += sprintf(o, mlsys_rng_below(&r, 5) == 0 ? "[^" : "[");
      for (k = 0; k < nr; k++) {
        uint32_t x = boundary_cp(&r), y = boundary_cp(&r), t;
        if (x > y) t = x, x = y, y = t;
        o += sprintf(o, "\\x{%X}-\\x{%X}", x, y);
      }
      o += sprintf(o, "]%s", (const char *[]){"", "*", "+", "?", "{2}", "{0,3}"}[mlsys_rng_below(&r, 6)]);
    }
    a = re(pat);
    if (!a) continue;
    REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
    CHECK(mlsys_relm_fa_is_bytes(b) && check_canonical(b));
    for (k = 0; k < 200; k++) {
      size_t len;
      int n = walk(a, &r, s, 8), muts = k < 50 ? 0 : 1 + (int)mlsys_rng_below(&r, 2), want, got;
      while (muts--) {
        n = mutate(&r, s, n, 70);
        if (n && mlsys_rng_below(&r, 2)) s[mlsys_rng_below(&r, (uint64_t)n)] = boundary_cp(&r);
      }
      len = encode(s, n, enc);
      if (k >= 180) { /* random bytes: mostly invalid UTF-8, which both must reject */
        len = mlsys_rng_below(&r, 6);
        for (size_t j = 0; j < len; j++) enc[j] = (char)mlsys_rng_below(&r, 256);
      }
      want = mlsys_relm_fa_accepts(a, enc, len), got = mlsys_relm_fa_accepts(b, enc, len);
      checked++;
      if (want != got && bad++ < 10) test__fail(__FILE__, __LINE__, "%s: code points %d, bytes %d", pat, want, got);
    }
    /* finite languages: same count, and every byte string is valid UTF-8 of a string in the language */
    if (!mlsys_relm_fa_is_cyclic(a) && count_all(a, -1) < 5000) {
      sset got = {0};
      CHECK_EQ_INT(count_all(b, -1), count_all(a, -1));
      REQUIRE_OK(mlsys_relm_fa_enumerate(b, 0, collect_sset, &got));
      for (int i = 0; i < got.n; i++) CHECK(acc(a, got.v[i]));
      sset_free(&got);
    }
    if (check_minimal(b) == 0) CHECK_MSG(0, "%s: byte DFA not minimal", pat);
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(checked > 20000);
  /* ASCII-only automata keep their states and arcs */
  {
    static const char *ascii[] = {"[a-zA-Z0-9]*", "(a|b)*abb", "[0-9]{3}", "https://www\\.([[:alnum:]]|_|-|#|%)+",
                                  "[\\x00-\\x7F]+", "x{2,5}|y*"};
    for (size_t i = 0; i < sizeof ascii / sizeof ascii[0]; i++) {
      mlsys_relm_fa *a = re(ascii[i]), *b;
      REQUIRE(a);
      REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
      CHECK_MSG(mlsys_relm_fa_num_states(b) == mlsys_relm_fa_num_states(a), "%s: %d -> %d states", ascii[i],
                mlsys_relm_fa_num_states(a), mlsys_relm_fa_num_states(b));
      CHECK_EQ_INT(mlsys_relm_fa_num_arcs(b), mlsys_relm_fa_num_arcs(a));
      if (i == 0) CHECK_EQ_INT(mlsys_relm_fa_num_states(b), 1); /* spec §7.3 test 3 */
      mlsys_relm_fa_free(a), mlsys_relm_fa_free(b);
    }
  }
  /* `.` is the UTF-8 automaton: start, final and the 7 continuation states of the well-formed byte sequences table
     (Unicode Table 3-7); a byte automaton copies through to_bytes */
  {
    mlsys_relm_fa *a = re("."), *b, *c;
    REQUIRE(a);
    REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &b));
    CHECK_EQ_INT(mlsys_relm_fa_num_states(b), 9);
    CHECK(check_minimal(b));
    CHECK_EQ_INT(count_all(b, 4), 0x110000 - 0x800 - 1);
    CHECK(acc(b, "\xed\x9f\xbf") && !acc(b, "\xed\xa0\x80") && acc(b, "\xf4\x8f\xbf\xbf") && !acc(b, "\xf4\x90\x80\x80"));
    REQUIRE_OK(mlsys_relm_fa_to_bytes(b, &c));
    CHECK(mlsys_relm_fa_equal(b, c));
    mlsys_relm_fa_free(a), mlsys_relm_fa_free(b), mlsys_relm_fa_free(c);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   Escaping, bad input, limits
   --------------------------------------------------------------------------------------------------------------- */
TEST(regex_escape) {
  char out[256];
  mlsys_rng r;
  CHECK_EQ_INT(mlsys_relm_regex_escape("a.b\\c", out, sizeof out), 7);
  CHECK_STR(out, "a\\.b\\\\c");
  CHECK_EQ_INT(mlsys_relm_regex_escape("(x)", out, 3), 5); /* truncated like snprintf */
  CHECK_STR(out, "\\(");
  CHECK_EQ_INT(mlsys_relm_regex_escape("", out, sizeof out), 0);
  CHECK_STR(out, "");
  CHECK_EQ_INT(mlsys_relm_regex_escape("abc", NULL, 0), 3);
  mlsys_rng_seed(&r, 9);
  for (int it = 0; it < 300; it++) { /* the escaped literal matches exactly itself */
    char lit[16], esc[64];
    int n = (int)mlsys_rng_below(&r, 12);
    mlsys_relm_fa *a;
    for (int i = 0; i < n; i++) lit[i] = (char)(0x20 + mlsys_rng_below(&r, 95));
    lit[n] = 0;
    mlsys_relm_regex_escape(lit, esc, sizeof esc);
    a = re(esc);
    if (!a) continue;
    CHECK_MSG(acc(a, lit) && count_all(a, -1) == 1, "escape of \"%s\" = \"%s\"", lit, esc);
    mlsys_relm_fa_free(a);
  }
}

TEST(bad_input_and_limits) {
  mlsys_relm_fa *a = (mlsys_relm_fa *)1;
  mlsys_relm_re_desc d;
  char *big;
  int i;
  double t0;
  CHECK(mlsys_relm_regex_compile(NULL, NULL, &a) == MLSYS_ERR_ARG && a == NULL);
  CHECK(mlsys_relm_regex_compile("a", NULL, NULL) == MLSYS_ERR_ARG);
  memset(&d, 0, sizeof d);
  d.max_nfa_states = -1;
  CHECK(mlsys_relm_regex_compile("a", &d, &a) == MLSYS_ERR_ARG);
  /* NULL automata in the read and analysis calls are harmless */
  CHECK_EQ_INT(mlsys_relm_fa_num_states(NULL), 0);
  CHECK_EQ_INT(mlsys_relm_fa_accepts(NULL, "a", 1), 0);
  CHECK_EQ_INT(mlsys_relm_fa_step(NULL, 0, 'a'), -1);
  CHECK(mlsys_relm_fa_count_strings(NULL, 3, NULL, NULL) == MLSYS_ERR_ARG);
  CHECK(mlsys_relm_fa_enumerate(NULL, 3, collect_cb, NULL) == MLSYS_ERR_ARG);
  CHECK(mlsys_relm_fa_to_bytes(NULL, &a) == MLSYS_ERR_ARG);
  CHECK(mlsys_relm_fa_clone(NULL, &a) == MLSYS_ERR_ARG);
  mlsys_relm_fa_free(NULL);
  /* a{100000} within the default limits; over a lowered limit; a{2000000} over the default */
  t0 = test__now();
  REQUIRE_OK(mlsys_relm_regex_compile("a{100000}", NULL, &a));
  CHECK_EQ_INT(mlsys_relm_fa_num_states(a), 100001);
  CHECK_EQ_INT(mlsys_relm_fa_longest(a), 100000);
  CHECK_EQ_INT(count_all(a, -1), 1);
  mlsys_relm_fa_free(a);
  REQUIRE_OK(mlsys_relm_regex_compile("a{0,100000}", NULL, &a));
  CHECK_EQ_INT(mlsys_relm_fa_num_states(a), 100001);
  CHECK_EQ_INT(count_all(a, -1), 100001);
  mlsys_relm_fa_free(a);
  CHECK(test__now() - t0 < 5);
  d.max_nfa_states = 1000;
  CHECK(mlsys_relm_regex_compile("a{100000}", &d, &a) == MLSYS_ERR_TOO_BIG && a == NULL);
  CHECK_CONTAINS(mlsys_last_error(), "max_nfa_states");
  CHECK(mlsys_relm_regex_compile("a{2000000}", NULL, &a) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "max_nfa_states");
  CHECK(mlsys_relm_regex_compile("a{200000000}", NULL, &a) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "repetition count at offset 1");
  CHECK(mlsys_relm_regex_compile("((a{1000}){1000}){1000}", NULL, &a) == MLSYS_ERR_TOO_BIG);
  CHECK(mlsys_relm_regex_compile("((((a{0}){1000}){1000}){1000}){1000}", NULL, &a) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "construction steps");
  /* subset-construction blow-up: (a|b)*a(a|b){n} has 2^(n+1) states */
  memset(&d, 0, sizeof d);
  d.max_dfa_states = 5000;
  CHECK(mlsys_relm_regex_compile("(a|b)*a(a|b){20}", &d, &a) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "max_dfa_states");
  REQUIRE_OK(mlsys_relm_regex_compile("(a|b)*a(a|b){10}", &d, &a));
  CHECK_EQ_INT(mlsys_relm_fa_num_states(a), 2048);
  mlsys_relm_fa_free(a);
  /* deep nesting: no stack overflow, a named limit */
  big = (char *)malloc(300001);
  for (i = 0; i < 100000; i++) big[i] = '(', big[100001 + i] = ')';
  big[100000] = 'a', big[200001] = 0;
  CHECK(mlsys_relm_regex_compile(big, NULL, &a) == MLSYS_ERR_TOO_BIG);
  CHECK_CONTAINS(mlsys_last_error(), "nest deeper than 500");
  for (i = 0; i < 100000; i++) big[i] = '[';
  big[100000] = 0;
  CHECK(mlsys_relm_regex_compile(big, NULL, &a) == MLSYS_ERR_TOO_BIG);
  big[0] = 'a';
  for (i = 1; i < 100000; i++) big[i] = '*';
  CHECK(mlsys_relm_regex_compile(big, NULL, &a) == MLSYS_ERR_TOO_BIG);
  for (i = 0; i < 200000; i += 2) big[i] = (char)('a' + i % 26), big[i + 1] = '|';
  big[199999] = 0;
  REQUIRE_OK(mlsys_relm_regex_compile(big, NULL, &a)); /* wide is fine */
  CHECK_EQ_INT(mlsys_relm_fa_num_states(a), 2);
  mlsys_relm_fa_free(a);
  for (i = 0; i < 400; i++) big[i] = '(', big[401 + i] = ')';
  big[400] = 'a', big[801] = 0;
  REQUIRE_OK(mlsys_relm_regex_compile(big, NULL, &a)); /* 400 levels are fine */
  CHECK(acc(a, "a"));
  mlsys_relm_fa_free(a);
  free(big);
}

TEST(deterministic_output) {
  /* the same input gives the same automaton, byte for byte, including after algebra and lowering */
  const char *p = "(foo|bar|ba[rz])+[0-9]{1,3}(é|中)?";
  mlsys_relm_fa *a = re(p), *b = re(p), *ab, *bb;
  REQUIRE(a && b);
  CHECK(mlsys_relm_fa_equal(a, b));
  REQUIRE_OK(mlsys_relm_fa_to_bytes(a, &ab));
  REQUIRE_OK(mlsys_relm_fa_to_bytes(b, &bb));
  CHECK(mlsys_relm_fa_equal(ab, bb));
  CHECK(!mlsys_relm_fa_equal(a, ab));
  mlsys_relm_fa_free(a), mlsys_relm_fa_free(b), mlsys_relm_fa_free(ab), mlsys_relm_fa_free(bb);
}

TEST_MAIN()
