/* libFuzzer target for the regex compiler of mlsys_relm.h (ReLM §3.2–3.5): arbitrary bytes as a pattern (up to the
   first NUL). A failure must be a named PARSE / UNSUPPORTED / TOO_BIG error starting "regex: "; a success must be a
   canonical automaton (sorted disjoint arcs, targets in range, no surrogates) whose strings — shortlex enumeration
   for finite languages, walks for infinite ones — it accepts, as do its byte lowering and its prefix closure; A ∪ A
   and A ∩ A must be A and A ∖ A empty; the escaped pattern must compile to exactly the pattern itself. Inputs of
   odd length compile with MLSYS_RELM_RE_UNICODE. Build and run:
   make build/fuzz/fuzz_relm_regex && ./build/fuzz/fuzz_relm_regex -max_total_time=60 tests/fuzz/corpus/fuzz_relm_regex */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                                  \
  do {                                                                                                 \
    if (!(x)) {                                                                                        \
      fprintf(stderr, "fuzz_relm_regex: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                     \
      abort();                                                                                         \
    }                                                                                                  \
  } while (0)

typedef struct {
  char s[16][512];
  size_t n[16];
  int k;
} strs;
static int collect(void *ctx, const char *s, size_t n) {
  strs *S = (strs *)ctx;
  if (S->k >= 16 || n >= sizeof S->s[0]) return 1;
  memcpy(S->s[S->k], s, n + 1);
  S->n[S->k++] = n;
  return 0;
}
static size_t cps(const char *s, size_t n) { /* code points in valid UTF-8 */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}
/* Deterministic walks: at each step the arc chosen by a simple hash, stopping at a final state with some luck. */
static void walks(const mlsys_relm_fa *a, strs *S) {
  int w;
  for (w = 0; w < 8 && S->k < 16; w++) {
    int q = 0, steps = 0;
    size_t n = 0;
    uint32_t h = 2166136261u ^ (uint32_t)w;
    while (steps++ < 64 && n + 4 < sizeof S->s[0]) {
      const uint32_t *lo, *hi;
      const int32_t *dst;
      int k = mlsys_relm_fa_out(a, q, &lo, &hi, &dst), j;
      uint32_t c;
      h = (h ^ (uint32_t)steps) * 16777619u;
      if (!k || (mlsys_relm_fa_is_final(a, q) && h % 4 == 0)) break;
      j = (int)(h % (uint32_t)k);
      c = lo[j] + (h >> 8) % (hi[j] - lo[j] + 1);
      n += (size_t)mlsys__relm_utf8_put(c, (uint8_t *)S->s[S->k] + n);
      q = dst[j];
    }
    if (mlsys_relm_fa_is_final(a, q)) S->s[S->k][n] = 0, S->n[S->k++] = n;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
  char *pat = (char *)malloc(len + 1);
  mlsys_relm_re_desc d;
  mlsys_relm_fa *a = NULL, *b = NULL, *x = NULL;
  mlsys_status st;
  strs S;
  int n, q, i;
  memcpy(pat, buf, len);
  pat[len] = 0;
  memset(&d, 0, sizeof d);
  d.max_nfa_states = 20000, d.max_dfa_states = 2000; /* small limits: time goes to parsing, not to blow-ups */
  if (len & 1) d.flags = MLSYS_RELM_RE_UNICODE; /* half the inputs with Unicode \d \w \s */
  st = mlsys_relm_regex_compile(pat, &d, &a);
  if (st) {
    FUZZ_CHECK(a == NULL);
    FUZZ_CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_UNSUPPORTED || st == MLSYS_ERR_TOO_BIG);
    FUZZ_CHECK(!strncmp(mlsys_last_error(), "regex: ", 7));
    free(pat);
    return 0;
  }
  /* canonical structure */
  n = mlsys_relm_fa_num_states(a);
  FUZZ_CHECK(n >= 1 && n <= 2000 && !mlsys_relm_fa_is_bytes(a));
  for (q = 0; q < n; q++) {
    const uint32_t *lo, *hi;
    const int32_t *dst;
    int k = mlsys_relm_fa_out(a, q, &lo, &hi, &dst);
    for (i = 0; i < k; i++) {
      FUZZ_CHECK(lo[i] <= hi[i] && hi[i] <= 0x10FFFF && (hi[i] < 0xD800 || lo[i] > 0xDFFF));
      FUZZ_CHECK(dst[i] >= 0 && dst[i] < n);
      if (i) FUZZ_CHECK(lo[i] > hi[i - 1] && !(lo[i] == hi[i - 1] + 1 && dst[i] == dst[i - 1]));
    }
  }
  FUZZ_CHECK(mlsys_relm_fa_is_cyclic(a) == (mlsys_relm_fa_longest(a) < 0 && !mlsys_relm_fa_is_empty(a)));
  /* strings of the language */
  memset(&S, 0, sizeof S);
  if (!mlsys_relm_fa_is_cyclic(a)) {
    double c;
    st = mlsys_relm_fa_enumerate(a, 16, collect, &S);
    FUZZ_CHECK(st == MLSYS_OK || st == MLSYS_ERR_CANCELED);
    FUZZ_CHECK(mlsys_relm_fa_count_strings(a, -1, &c, NULL) == MLSYS_OK);
    FUZZ_CHECK(c >= S.k && (mlsys_relm_fa_is_empty(a) ? c == 0 : c >= 1));
    for (i = 1; i < S.k; i++) FUZZ_CHECK(cps(S.s[i], S.n[i]) >= cps(S.s[i - 1], S.n[i - 1])); /* shortlex */
  } else walks(a, &S);
  for (i = 0; i < S.k; i++) FUZZ_CHECK(mlsys_relm_fa_accepts(a, S.s[i], S.n[i]));
  /* byte lowering accepts the same strings */
  st = mlsys_relm_fa_to_bytes(a, &b);
  FUZZ_CHECK(st == MLSYS_OK || st == MLSYS_ERR_TOO_BIG);
  if (!st) {
    FUZZ_CHECK(mlsys_relm_fa_is_bytes(b));
    for (i = 0; i < S.k; i++) FUZZ_CHECK(mlsys_relm_fa_accepts(b, S.s[i], S.n[i]));
    mlsys_relm_fa_free(b);
  }
  /* prefix closure accepts every prefix (at code point boundaries) */
  if (mlsys_relm_fa_prefix_closure(a, &x) == MLSYS_OK) {
    for (i = 0; i < S.k; i++)
      for (size_t p = 0; p <= S.n[i]; p++)
        if (p == S.n[i] || ((unsigned char)S.s[i][p] & 0xC0) != 0x80) FUZZ_CHECK(mlsys_relm_fa_accepts(x, S.s[i], p));
    mlsys_relm_fa_free(x);
  }
  /* algebra identities on the canonical form */
  FUZZ_CHECK(mlsys_relm_fa_union(a, a, &x) == MLSYS_OK && mlsys_relm_fa_equal(a, x));
  mlsys_relm_fa_free(x);
  FUZZ_CHECK(mlsys_relm_fa_intersect(a, a, &x) == MLSYS_OK && mlsys_relm_fa_equal(a, x));
  mlsys_relm_fa_free(x);
  FUZZ_CHECK(mlsys_relm_fa_difference(a, a, &x) == MLSYS_OK && mlsys_relm_fa_is_empty(x));
  mlsys_relm_fa_free(x);
  /* Levenshtein of small automata keeps the language */
  if (n <= 40) {
    mlsys_relm_edit_desc e;
    memset(&e, 0, sizeof e);
    e.alphabet = "ab";
    if (mlsys_relm_fa_levenshtein(a, &e, &x) == MLSYS_OK) {
      for (i = 0; i < S.k; i++) FUZZ_CHECK(mlsys_relm_fa_accepts(x, S.s[i], S.n[i]));
      mlsys_relm_fa_free(x);
    }
  }
  /* the escaped pattern (valid UTF-8: it compiled) matches exactly the pattern text */
  if (strlen(pat) < 4000) {
    size_t need = mlsys_relm_regex_escape(pat, NULL, 0);
    char *esc = (char *)malloc(need + 1);
    double c;
    FUZZ_CHECK(mlsys_relm_regex_escape(pat, esc, need + 1) == need);
    FUZZ_CHECK(mlsys_relm_regex_compile(esc, NULL, &x) == MLSYS_OK);
    FUZZ_CHECK(mlsys_relm_fa_accepts(x, pat, strlen(pat)));
    FUZZ_CHECK(mlsys_relm_fa_count_strings(x, -1, &c, NULL) == MLSYS_OK && c == 1);
    mlsys_relm_fa_free(x);
    free(esc);
  }
  mlsys_relm_fa_free(a);
  free(pat);
  return 0;
}
