/* libFuzzer target for the compress passes of mlsys_contracode.h (section 3: fold, dce, unused, seq_cond, props,
   booleans, compress, hoist_vars, arguments, bool_int, template_concat, drop_console).

   For every input that parses (as a script and as a module), each pass on a fresh parse must succeed, and its
   terse print must re-parse to the same canonical tree as the rewritten AST (so the passes never build a tree the
   printer cannot spell, e.g. a missing prefix flag or a sequence inside a sequence). A failure aborts with the input
   and the output.

   Build and run: make build/fuzz/fuzz_contracode_passes &&
     ./build/fuzz/fuzz_contracode_passes -max_total_time=120 tests/fuzz/corpus/fuzz_contracode_passes */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include <stdlib.h>

typedef mlsys_status (*pass_fn)(mlsys_contracode_js_ast *, int *);
static const pass_fn passes[] = {mlsys_contracode_fold, mlsys_contracode_dce, mlsys_contracode_unused,
                                 mlsys_contracode_seq_cond, mlsys_contracode_props, mlsys_contracode_booleans,
                                 mlsys_contracode_compress, mlsys_contracode_hoist_vars, mlsys_contracode_arguments,
                                 mlsys_contracode_bool_int, mlsys_contracode_template_concat,
                                 mlsys_contracode_drop_console};

static void one(const char *src, size_t n, int flags) {
  size_t i;
  for (i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    mlsys_contracode_js_ast a, b;
    mlsys_contracode_js_print_opts o = {MLSYS_CONTRACODE_JS_TERSE, 0, 0, 0, 0};
    char *out = NULL, *c0 = NULL, *c1 = NULL;
    size_t on = 0;
    int k = -1;
    if (mlsys_contracode_js_parse(src, n, flags, &a) != MLSYS_OK) return;
    if (passes[i](&a, &k) != MLSYS_OK || k < 0) {
      fprintf(stderr, "fuzz_contracode_passes: pass %d failed: %s\n", (int)i, mlsys_last_error());
      abort();
    }
    if (mlsys_contracode_js_print(&a, &o, &out, &on) != MLSYS_OK ||
        mlsys_contracode_js_canonical(&a, 0, &c0, NULL) != MLSYS_OK) {
      fprintf(stderr, "fuzz_contracode_passes: pass %d: print failed: %s\n", (int)i, mlsys_last_error());
      abort();
    }
    if (mlsys_contracode_js_parse(out, on, flags, &b) != MLSYS_OK) {
      fprintf(stderr, "fuzz_contracode_passes: pass %d output does not parse: %s\n--- input ---\n%.*s\n--- output ---\n%s\n",
              (int)i, mlsys_last_error(), (int)n, src, out);
      abort();
    }
    if (mlsys_contracode_js_canonical(&b, 0, &c1, NULL) != MLSYS_OK || strcmp(c0, c1) != 0) {
      fprintf(stderr, "fuzz_contracode_passes: pass %d: the printed tree differs\n--- input ---\n%.*s\n--- output ---\n%s\n",
              (int)i, (int)n, src, out);
      abort();
    }
    free(out);
    free(c0);
    free(c1);
    mlsys_contracode_js_free(&b);
    mlsys_contracode_js_free(&a);
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size > 4096) return 0;
  one((const char *)data, size, 0);
  one((const char *)data, size, MLSYS_CONTRACODE_JS_MODULE);
  return 0;
}
