/* tests/test_contracode_oracle.c — the semantic oracle of mlsys_contracode.h (spec §7.5, issue 25 item 3):
   `mlsys contracode check` runs a Debian-packaged library's battery in Node (tests/oracle/run_battery.js, seeded
   Math.random) on the library as shipped and on each transform, and compares the outputs call by call.
   The outside oracle is Node itself executing the real libraries. The tests can fail both ways: compact and
   beautified printing must keep every output of underscore 1.13.4, acorn 8.8.1 and marked 4.2.3, and the negative
   control (every binary `+` turned into `-`) and a single mutant must be reported as mismatches, naming the call
   that differs, and so must the unsafe bool-int pass (terser's booleans_as_integers: spec §3.11). The single mutant
   of marked is an equivalent one (its first `+` builds a cache key; a broken key
   only loses the cache), and the oracle must say so rather than report a difference it did not see.
   About 30 s, nearly all of it in Node. Needs build/mlsys (make build/mlsys), node and scripts/install-deps.sh's
   libjs-underscore, node-acorn, node-marked. */
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#include <unistd.h>

#define UNDERSCORE "/usr/share/javascript/underscore/underscore.js"
#define ACORN "/usr/share/nodejs/acorn/dist/acorn.js"
#define MARKED "/usr/share/nodejs/marked/lib/marked.umd.js"

/* Whether the oracle can run here; a failure (not a skip) when install-deps' packages are missing. */
static int oracle_ready(const char *lib) {
  if (system("node --version >/dev/null 2>&1") != 0) SKIP_DEP("node is not installed");
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  if (access("tests/oracle/run_battery.js", R_OK) != 0) SKIP_DEP("run from the repository root");
  if (access(lib, R_OK) != 0) {
    CHECK_MSG(0, "%s missing: run scripts/install-deps.sh", lib);
    return 0;
  }
  return 1;
}

/* `check LIB --negative-control --json`: compact, beautify and the rewrites (rename-insert, mangle) pass, the control fails on `first`. Then the single
   mutant: it fails on mutant_first, or passes when mutant_first is NULL (an equivalent mutant). */
static void check_library(const char *lib, const char *battery, int calls, const char *neg_first, const char *mutant_first) {
  char args[512], want[256];
  run_result r;
  snprintf(args, sizeof args, "contracode check %s --negative-control --json", lib);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);   /* the negative control differs */
  CHECK_MSG(r.out != NULL, "no output");
  if (r.out) {
    snprintf(want, sizeof want, "\"battery\": \"%s\", \"calls\": %d,", battery, calls);
    CHECK_CONTAINS(r.out, want);
    CHECK_CONTAINS(r.out, "{\"name\": \"compact\", \"pass\": true,");
    CHECK_CONTAINS(r.out, "{\"name\": \"beautify\", \"pass\": true,");
    CHECK_CONTAINS(r.out, "{\"name\": \"rename-insert\", \"pass\": true,");   /* T1 + T2 on every function */
    CHECK_CONTAINS(r.out, "{\"name\": \"mangle\", \"pass\": true,");          /* T3 on the whole file */
    CHECK_CONTAINS(r.out, "{\"name\": \"negative-control\", \"pass\": false,");
    snprintf(want, sizeof want, "\"first\": \"%s\", \"note\": \"", neg_first);
    CHECK_CONTAINS(r.out, want);
    CHECK_CONTAINS(r.out, "{\"name\": \"hoist-vars\", \"pass\": true,");     /* T9 */
    CHECK_CONTAINS(r.out, "{\"name\": \"arguments\", \"pass\": true,");      /* T10 */
    CHECK_CONTAINS(r.out, "{\"name\": \"template-concat\", \"pass\": true,");
    CHECK_CONTAINS(r.out, "\"ran\": 15, \"failed\": 1}");   /* 14 transforms (compress passes included) + the control */
  }
  run_free(&r);
  snprintf(args, sizeof args, "contracode check %s --transform mutant-first-plus", lib);
  r = run(args);
  CHECK_EQ_INT(r.code, mutant_first ? 1 : 0);
  if (r.out) {
    if (mutant_first) {
      CHECK_CONTAINS(r.out, "mutant-first-plus  FAIL");
      snprintf(want, sizeof want, "first difference: %s\n", mutant_first);
      CHECK_CONTAINS(r.out, want);
    } else {
      CHECK_CONTAINS(r.out, "mutant-first-plus  pass");
    }
  }
  run_free(&r);
}

/* `check LIB --transform bool-int`: terser's booleans_as_integers is not semantics-preserving, and the oracle must
   see it (a second negative control, a real pass this time); the first call that differs is named. */
static void check_bool_int(const char *lib, const char *first) {
  char args[512], want[256];
  run_result r;
  snprintf(args, sizeof args, "contracode check %s --transform bool-int", lib);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  if (r.out) {
    CHECK_CONTAINS(r.out, "bool-int           FAIL");
    snprintf(want, sizeof want, "first difference: %s\n", first);
    CHECK_CONTAINS(r.out, want);
  }
  run_free(&r);
}

TEST(contracode_oracle_underscore) {
  if (!oracle_ready(UNDERSCORE)) return;
  /* Every `+` → `-` breaks _.template's code generation; the first `+` alone is `arguments[index + startIndex]`
     in restArguments (underscore's rest parameters); the first call whose output it changes is _.pick/_.omit. */
  check_library(UNDERSCORE, "underscore", 36, "template", "pick_omit");
  check_bool_int(UNDERSCORE, "isEqual");   /* _.isEqual's results come back as 1 and 0 */
}

TEST(contracode_oracle_acorn) {
  if (!oracle_ready(ACORN)) return;
  /* The control stops acorn from loading at all ("load"); the first `+` builds the ES5-module keyword list, which
     only the `versions` call (ecmaVersion 5, sourceType module) reaches. */
  check_library(ACORN, "acorn", 17, "load", "versions");
  check_bool_int(ACORN, "snippet0");   /* node fields such as `computed: false` become 0 in the first tree */
}

TEST(contracode_oracle_marked) {
  if (!oracle_ready(MARKED)) return;
  check_library(MARKED, "marked", 17, "load", NULL);
  check_bool_int(MARKED, "lexer");
}

/* terser's output options (issue 25 item 2): `check LIB --transform print-styles` prints the whole library in each
   quote style (fewer escapes, single, double, original) with and without quoted keys and braces (every pair of the
   three settings) and keep_quoted_props' props pass; the battery's outputs must all stay the same. The printed sizes
   show the options took effect: quoted keys and braces only add characters, and the beautified single-quote
   prints are the longest. About 10 s. */
static long style_bytes(const char *json, const char *name) {
  char key[96];
  const char *p;
  snprintf(key, sizeof key, "{\"name\": \"%s\", \"pass\": true, \"bytes\": ", name);
  p = strstr(json, key);
  return p ? atol(p + strlen(key)) : -1;
}
static void check_print_styles(const char *lib) {
  static const char *const names[] = {"fewer", "fewer+keys+braces", "single+braces", "single+keys", "double",
                                      "double+keys+braces", "original+braces", "original+keys", "props-keep-quoted"};
  char args[512];
  run_result r;
  size_t i;
  snprintf(args, sizeof args, "contracode check %s --transform print-styles --json", lib);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_MSG(r.out != NULL, "no output");
  if (r.out) {
    long fewer = style_bytes(r.out, "fewer"), fkb = style_bytes(r.out, "fewer+keys+braces");
    long dbl = style_bytes(r.out, "double"), dkb = style_bytes(r.out, "double+keys+braces");
    for (i = 0; i < sizeof names / sizeof *names; i++) CHECK_MSG(style_bytes(r.out, names[i]) > 0, "%s: %s did not pass", lib, names[i]);
    CHECK_CONTAINS(r.out, "\"ran\": 9, \"failed\": 0}");
    CHECK_MSG(fkb > fewer && dkb > dbl, "%s: keys+braces %ld/%ld bytes, without %ld/%ld", lib, fkb, dkb, fewer, dbl);
    CHECK(style_bytes(r.out, "single+braces") > fkb);
  }
  run_free(&r);
}

TEST(contracode_oracle_print_styles) {
  if (!oracle_ready(UNDERSCORE) || !oracle_ready(ACORN) || !oracle_ready(MARKED)) return;
  check_print_styles(UNDERSCORE);
  check_print_styles(ACORN);
  check_print_styles(MARKED);
}

/* The oracle itself: deterministic, Math.random seeded (marked's mailto: obfuscation is the same twice), and it
   names what it cannot compare: a file that does not parse, one that does not load, one with no battery. */
TEST(contracode_oracle_errors_and_determinism) {
  char dir[] = "/tmp/cc_oracle_XXXXXX", p[128], args[512];
  run_result a, b;
  FILE *f;
  if (!oracle_ready(MARKED)) return;
  a = run_shell("node tests/oracle/run_battery.js " MARKED);
  b = run_shell("node tests/oracle/run_battery.js " MARKED);
  CHECK_EQ_INT(a.code, 0);
  CHECK(a.out && b.out && strcmp(a.out, b.out) == 0);
  if (a.out) {
    CHECK_CONTAINS(a.out, "#battery\tmarked\n");
    CHECK_CONTAINS(a.out, "&#"); /* mangled mailto: characters, drawn with Math.random */
  }
  run_free(&a);
  run_free(&b);
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(p, sizeof p, "%s/bad.js", dir);
  f = fopen(p, "w");
  REQUIRE(f != NULL);
  fputs("var x = 1;\nvar y = ;\n", f);
  fclose(f);
  snprintf(args, sizeof args, "contracode check %s", p);
  a = run(args);
  CHECK_EQ_INT(a.code, 1);
  if (a.err) CHECK_CONTAINS(a.err, "bad.js:2:9: unexpected token ';'");
  run_free(&a);
  f = fopen(p, "w");
  REQUIRE(f != NULL);
  fputs("undefinedName.x = 1;\n", f);
  fclose(f);
  a = run(args);
  CHECK_EQ_INT(a.code, 1);
  if (a.err) CHECK_CONTAINS(a.err, "does not load in Node");
  if (a.err) CHECK_CONTAINS(a.err, "ReferenceError");
  run_free(&a);
  f = fopen(p, "w");
  REQUIRE(f != NULL);
  fputs("module.exports = {answer: 1 + 41};\n", f);
  fclose(f);
  a = run(args);
  CHECK_EQ_INT(a.code, 1);
  if (a.err) CHECK_CONTAINS(a.err, "is none of underscore, acorn, marked");
  run_free(&a);
  snprintf(args, sizeof args, "contracode check %s --transform nosuch", p);
  a = run(args);
  CHECK_EQ_INT(a.code, 2);
  run_free(&a);
  remove(p);
  rmdir(dir);
}

TEST_MAIN()
