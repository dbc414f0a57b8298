/* libFuzzer target for the JavaScript front end of mlsys_contracode.h (section 1).

   For every input, as a script and as a module: parse it. A failure must be MLSYS_ERR_PARSE (or TOO_BIG) with
   "LINE:COL: ..." and a zeroed AST. A success is printed compact and beautified; each output must re-parse to the
   same canonical tree, and printing that again must give the same text (fixpoint); with terser's output options
   (braces, quoted keys, each quote style) it must re-parse and be a fixpoint too. Function spans must lie inside
   the source and count kinds must add up to a positive number.

   Build and run: make build/fuzz/fuzz_contracode_js &&
     ./build/fuzz/fuzz_contracode_js -max_total_time=120 tests/fuzz/corpus/fuzz_contracode_js */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_contracode_js: check failed at line %d: %s (last error: %s)\n", __LINE__, \
              #x, mlsys_last_error());                                                               \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static void check_error_message(void) {
  const char *p = mlsys_last_error();
  FUZZ_CHECK(*p >= '1' && *p <= '9');
  while (*p >= '0' && *p <= '9') p++;
  FUZZ_CHECK(*p == ':');
  p++;
  FUZZ_CHECK(*p >= '1' && *p <= '9');
  while (*p >= '0' && *p <= '9') p++;
  FUZZ_CHECK(p[0] == ':' && p[1] == ' ' && p[2] != 0);
}

static void one(const char *src, size_t n, int flags) {
  mlsys_contracode_js_ast a;
  mlsys_status st = mlsys_contracode_js_parse(src, n, flags, &a);
  char *c0 = NULL;
  int b;
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE);
    FUZZ_CHECK(a.nodes == NULL && a.text == NULL && a.root == 0);
    check_error_message();
    return;
  }
  FUZZ_CHECK(mlsys_contracode_js_canonical(&a, 0, &c0, NULL) == MLSYS_OK);
  {
    long counts[MLSYS_CONTRACODE_JS_KIND_COUNT], total = 0;
    int k, nf = 0, i;
    mlsys_contracode_fn_span *f = NULL;
    mlsys_contracode_js_count_kinds(&a, counts);
    for (k = 0; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++) total += counts[k];
    FUZZ_CHECK(counts[MLSYS_CONTRACODE_JS_PROGRAM] == 1 && total >= 1 && total < a.nnodes);
    FUZZ_CHECK(mlsys_contracode_js_functions(&a, &f, &nf) == MLSYS_OK);
    for (i = 0; i < nf; i++) {
      FUZZ_CHECK(f[i].start <= f[i].end && f[i].end <= n && f[i].nlines >= 1);
      FUZZ_CHECK(f[i].name_start <= f[i].name_end && f[i].name_end <= n);
    }
    free(f);
  }
  for (b = 0; b <= MLSYS_CONTRACODE_JS_TERSE; b++) {   /* compact, beautified, terse */
    mlsys_contracode_js_print_opts o = {b, 2, 0, 0, 0};
    mlsys_contracode_js_ast a2;
    char *p1 = NULL, *p2 = NULL, *c1 = NULL;
    size_t n1 = 0, n2 = 0;
    FUZZ_CHECK(mlsys_contracode_js_print(&a, &o, &p1, &n1) == MLSYS_OK);
    st = mlsys_contracode_js_parse(p1, n1, flags, &a2);
    if (st != MLSYS_OK) {
      fprintf(stderr, "fuzz_contracode_js: printed output does not parse: %s\n--- input ---\n%.*s\n--- output ---\n%s\n",
              mlsys_last_error(), (int)n, src, p1);
      abort();
    }
    FUZZ_CHECK(mlsys_contracode_js_canonical(&a2, 0, &c1, NULL) == MLSYS_OK);
    if (strcmp(c0, c1) != 0) {
      fprintf(stderr, "fuzz_contracode_js: round trip changed the tree\n--- input ---\n%.*s\n--- output ---\n%s\n"
              "--- before ---\n%s\n--- after ---\n%s\n", (int)n, src, p1, c0, c1);
      abort();
    }
    FUZZ_CHECK(mlsys_contracode_js_print(&a2, &o, &p2, &n2) == MLSYS_OK);
    if (n1 != n2 || memcmp(p1, p2, n1) != 0) {
      fprintf(stderr, "fuzz_contracode_js: print is not a fixpoint\n--- first ---\n%s\n--- second ---\n%s\n", p1, p2);
      abort();
    }
    free(p1);
    free(p2);
    free(c1);
    mlsys_contracode_js_free(&a2);
  }
  free(c0);
  for (b = MLSYS_CONTRACODE_JS_QUOTE_FEWER; b <= MLSYS_CONTRACODE_JS_QUOTE_DOUBLE; b++) {   /* print options */
    mlsys_contracode_js_print_opts o = {b == MLSYS_CONTRACODE_JS_QUOTE_SINGLE, 2, 1, b, 1};
    mlsys_contracode_js_ast a2;
    char *p1 = NULL, *p2 = NULL;
    size_t n1 = 0, n2 = 0;
    FUZZ_CHECK(mlsys_contracode_js_print(&a, &o, &p1, &n1) == MLSYS_OK);
    if (mlsys_contracode_js_parse(p1, n1, flags, &a2) != MLSYS_OK) {
      fprintf(stderr, "fuzz_contracode_js: output with print options does not parse: %s\n--- input ---\n%.*s\n"
              "--- output ---\n%s\n", mlsys_last_error(), (int)n, src, p1);
      abort();
    }
    FUZZ_CHECK(mlsys_contracode_js_print(&a2, &o, &p2, &n2) == MLSYS_OK);
    if (n1 != n2 || memcmp(p1, p2, n1) != 0) {
      fprintf(stderr, "fuzz_contracode_js: print options: not a fixpoint\n--- first ---\n%s\n--- second ---\n%s\n", p1, p2);
      abort();
    }
    free(p1);
    free(p2);
    mlsys_contracode_js_free(&a2);
  }
  {   /* scope analysis and mangling (header sections 2-3): the output must parse again */
    mlsys_contracode_scopes s;
    mlsys_contracode_js_print_opts o = {MLSYS_CONTRACODE_JS_TERSE, 0, 0, 0, 0};
    mlsys_contracode_js_ast a2;
    char *p1 = NULL;
    size_t n1 = 0;
    FUZZ_CHECK(mlsys_contracode_scope_build(&a, &s) == MLSYS_OK);
    mlsys_contracode_scope_free(&s);
    FUZZ_CHECK(mlsys_contracode_mangle(&a, NULL) == MLSYS_OK);
    FUZZ_CHECK(mlsys_contracode_js_print(&a, &o, &p1, &n1) == MLSYS_OK);
    if (mlsys_contracode_js_parse(p1, n1, flags, &a2) != MLSYS_OK) {
      fprintf(stderr, "fuzz_contracode_js: mangled output does not parse: %s\n--- input ---\n%.*s\n--- output ---\n%s\n",
              mlsys_last_error(), (int)n, src, p1);
      abort();
    }
    mlsys_contracode_js_free(&a2);
    free(p1);
  }
  mlsys_contracode_js_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  one((const char *)data, size, MLSYS_CONTRACODE_JS_SCRIPT);
  one((const char *)data, size, MLSYS_CONTRACODE_JS_MODULE);
  return 0;
}
