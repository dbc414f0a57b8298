/* Allocation-failure tests for mlsys_relm.h: for each operation the k-th allocation fails, for k = 0, 1, 2, ...
   until the operation needs no more than k allocations. Every earlier run must return MLSYS_ERR_NOMEM (with the
   thread's status set), leave the output NULL and free everything it allocated (counted here; ASan's leak checker
   double-checks with `make test SAN=1`). */
#include "tests/oom_alloc.h"
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

enum { OP_COMPILE, OP_LEV, OP_LEV_PT, OP_BYTES, OP_UNION, OP_INTER, OP_DIFF, OP_CONCAT, OP_PREFIX, OP_CLONE, OP_COUNT,
       OP_COUNT_ALL, OP_ENUM, OP_N };
static const char *op_name[OP_N] = {"compile", "levenshtein", "levenshtein passthrough", "to_bytes", "union",
                                    "intersect", "difference", "concat", "prefix_closure", "clone", "count",
                                    "count all", "enumerate"};
static mlsys_relm_fa *A, *B;
static int sink(void *ctx, const char *s, size_t n) {
  (void)s, (void)n;
  ++*(long *)ctx;
  return 0;
}
/* Runs one operation; *out gets an automaton for the automaton-valued ones. */
static mlsys_status run(int op, mlsys_relm_fa **out, double *num) {
  mlsys_relm_edit_desc e;
  long cnt = 0;
  mlsys_status st;
  memset(&e, 0, sizeof e);
  *out = NULL;
  switch (op) {
  case OP_COMPILE: return mlsys_relm_regex_compile("(foo|ba[rz])+[0-9]{1,3}(é|中)?\\w*x{2,4}[[:punct:]]", NULL, out);
  case OP_LEV: return mlsys_relm_fa_levenshtein(B, &e, out);
  case OP_LEV_PT:
    e.alphabet = "ab", e.num_edits = 2, e.passthrough_sub = 1;
    return mlsys_relm_fa_levenshtein(B, &e, out);
  case OP_BYTES: return mlsys_relm_fa_to_bytes(A, out);
  case OP_UNION: return mlsys_relm_fa_union(A, B, out);
  case OP_INTER: return mlsys_relm_fa_intersect(A, B, out);
  case OP_DIFF: return mlsys_relm_fa_difference(A, B, out);
  case OP_CONCAT: return mlsys_relm_fa_concat(A, B, out);
  case OP_PREFIX: return mlsys_relm_fa_prefix_closure(A, out);
  case OP_CLONE: return mlsys_relm_fa_clone(A, out);
  case OP_COUNT: return mlsys_relm_fa_count_strings(A, 6, num, NULL);
  case OP_COUNT_ALL: return mlsys_relm_fa_count_strings(B, -1, num, NULL);
  default:
    st = mlsys_relm_fa_enumerate(B, 50, sink, &cnt);
    *num = (double)cnt;
    return st;
  }
}

TEST(relm_fa_oom_every_allocation) {
  int op;
  oom_fail_at = -1;
  REQUIRE_OK(mlsys_relm_regex_compile("(ab|c)*[0-9é]+.?", NULL, &A));
  REQUIRE_OK(mlsys_relm_regex_compile("a[bc]{1,2}d|xyz", NULL, &B));
  for (op = 0; op < OP_N; op++) {
    long k, base, total = -1;
    int bad_status = 0, leaks = 0, not_null = 0;
    mlsys_relm_fa *ref = NULL;
    double ref_num = 0;
    REQUIRE_OK(run(op, &ref, &ref_num)); /* the answer without failures */
    base = oom_live;
    for (k = 0; k < 100000; k++) {
      mlsys_relm_fa *out;
      double num = 0;
      mlsys_status st;
      oom_fail_at = k, oom_calls = 0;
      st = run(op, &out, &num);
      oom_fail_at = -1;
      if (st == MLSYS_OK) {
        CHECK(oom_calls <= k); /* succeeded only because no call reached the failing one */
        CHECK(out ? mlsys_relm_fa_equal(out, ref) : num == ref_num);
        mlsys_relm_fa_free(out);
        total = k;
        break;
      }
      if (st != MLSYS_ERR_NOMEM || mlsys_last_status() != MLSYS_ERR_NOMEM || !*mlsys_last_error()) bad_status++;
      if (out) not_null++, mlsys_relm_fa_free(out);
      if (oom_live != base) leaks++;
    }
    mlsys_relm_fa_free(ref);
    CHECK_MSG(total > 0, "%s: never succeeded", op_name[op]);
    CHECK_MSG(bad_status == 0, "%s: %d runs without NOMEM", op_name[op], bad_status);
    CHECK_MSG(leaks == 0, "%s: %d runs leaked", op_name[op], leaks);
    CHECK_MSG(not_null == 0, "%s: %d runs returned an automaton", op_name[op], not_null);
    printf("    %-24s %ld allocation points\n", op_name[op], total);
  }
  mlsys_relm_fa_free(A), mlsys_relm_fa_free(B);
  CHECK_EQ_INT(oom_live, 0);
}

TEST(relm_fa_oom_with_parse_error) {
  /* a syntax error at the end: each run is NOMEM or, once memory suffices, the PARSE error */
  long k;
  int bad = 0, leaks = 0, done = 0;
  for (k = 0; k < 100000 && !done; k++) {
    mlsys_relm_fa *a = NULL;
    mlsys_status st;
    oom_fail_at = k, oom_calls = 0, oom_live = 0;
    st = mlsys_relm_regex_compile("(a|b|[c-e])*x{2,3}[[:alpha:]]+(?:q|r)\\d{1,2}(", NULL, &a);
    oom_fail_at = -1;
    if (st == MLSYS_ERR_PARSE) {
      CHECK_CONTAINS(mlsys_last_error(), "unclosed group '(' at offset 44");
      done = 1;
    } else if (st != MLSYS_ERR_NOMEM) bad++;
    if (a) bad++;
    if (oom_live != 0) leaks++;
  }
  CHECK(done);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(leaks, 0);
}

TEST(relm_fa_oom_unicode_dialect) {
  /* the Unicode dialect's allocation points (case closure, property tables, Unicode \w \d \s): each run is NOMEM
     or, once memory suffices, the automaton, which equals the one compiled without failures */
  const char *pat = "(?i)[a-zß]+(?-i:\\p{L}\\P{N})[^\\w\\d]\\s?σ";
  mlsys_relm_re_desc d = {MLSYS_RELM_RE_UNICODE, 0, 0};
  mlsys_relm_fa *ref = NULL;
  long k;
  int bad = 0, leaks = 0, done = 0;
  REQUIRE_OK(mlsys_relm_regex_compile(pat, &d, &ref));
  for (k = 0; k < 100000 && !done; k++) {
    mlsys_relm_fa *a = NULL;
    mlsys_status st;
    oom_fail_at = k, oom_calls = 0, oom_live = 0;
    st = mlsys_relm_regex_compile(pat, &d, &a);
    oom_fail_at = -1;
    if (st == MLSYS_OK) {
      CHECK(mlsys_relm_fa_equal(a, ref));
      mlsys_relm_fa_free(a), a = NULL;
      done = 1;
    } else if (st != MLSYS_ERR_NOMEM) bad++;
    if (a) bad++;
    if (!done && oom_live != 0) leaks++;
  }
  mlsys_relm_fa_free(ref);
  CHECK(done && k > 10);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(leaks, 0);
}

TEST_MAIN()
