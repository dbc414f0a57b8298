/* tests/test.h — the mlsys test harness (header-only; one test binary per tests/test_<name>.c).

   TEST(name) { CHECK(x); CHECK_EQ_INT(a, b); CHECK_NEAR(a, b, tol); CHECK_STR(a, b); CHECK_OK(status); }
   SKIP("reason") ends the test as skipped (only for what a machine may truly lack: a GPU, a kernel module, CPU
   features: say which). SKIP_DEP("reason") is for a missing dependency that scripts/install-deps.sh (or the build)
   provides: a skip on a developer's machine, but a failure when the environment variable CI is set, since there a
   missing dependency means a missing install step, not a missing capability.
   REQUIRE(x) is CHECK that also ends the test when it fails (use it before dereferencing).

   Tests register themselves; the file ends with TEST_MAIN(). The binary runs every test (or those whose name
   contains argv[1]), prints one line per test and, last, "N passed, N failed, N skipped"; it exits 1 if any
   failed. scripts/run-tests.sh adds the counts of all binaries into the same last line. */
#ifndef MLSYS_TEST_H
#define MLSYS_TEST_H
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const char *name, *file;
  void (*fn)(void);
} test_case;

static test_case test__cases[512];
static int test__ncases;
static int test__failed_checks, test__skipped;
static char test__skip_reason[256];
static jmp_buf test__env;

static void test__register(const char *name, const char *file, void (*fn)(void)) {
  if (test__ncases < (int)(sizeof test__cases / sizeof test__cases[0])) {
    test__cases[test__ncases].name = name;
    test__cases[test__ncases].file = file;
    test__cases[test__ncases].fn = fn;
    test__ncases++;
  } else {
    fprintf(stderr, "test.h: too many tests (raise the limit)\n");
    exit(2);
  }
}

#define TEST(name)                                                                 \
  static void name(void);                                                          \
  __attribute__((constructor)) static void test__reg_##name(void) {                \
    test__register(#name, __FILE__, name);                                         \
  }                                                                                \
  static void name(void)

static void test__fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void test__fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  if (test__failed_checks < 20) {
    fprintf(stdout, "    %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
  }
  test__failed_checks++;
}

#define CHECK(x)                                                   \
  do {                                                             \
    if (!(x)) test__fail(__FILE__, __LINE__, "CHECK(%s) failed", #x); \
  } while (0)
#define REQUIRE(x)                                                                 \
  do {                                                                             \
    if (!(x)) {                                                                    \
      test__fail(__FILE__, __LINE__, "REQUIRE(%s) failed", #x);                    \
      longjmp(test__env, 1);                                                       \
    }                                                                              \
  } while (0)
#define CHECK_MSG(x, ...)                                                          \
  do {                                                                             \
    if (!(x)) {                                                                    \
      char test__m[2048];                                                         \
      snprintf(test__m, sizeof test__m, __VA_ARGS__);                              \
      test__fail(__FILE__, __LINE__, "CHECK(%s) failed: %s", #x, test__m);         \
    }                                                                              \
  } while (0)
#define CHECK_EQ_INT(a, b)                                                                          \
  do {                                                                                              \
    long long test__a = (long long)(a), test__b = (long long)(b);                                   \
    if (test__a != test__b)                                                                         \
      test__fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld != %lld", #a, #b, test__a, test__b); \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                                                       \
  do {                                                                                              \
    double test__a = (double)(a), test__b = (double)(b);                                            \
    if (!(fabs(test__a - test__b) <= (tol)))                                                        \
      test__fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.17g vs %.17g (tol %g)", #a, #b, test__a, \
                 test__b, (double)(tol));                                                           \
  } while (0)
#define CHECK_STR(a, b)                                                                             \
  do {                                                                                              \
    const char *test__a = (a), *test__b = (b);                                                      \
    if (!test__a || !test__b || strcmp(test__a, test__b) != 0)                                      \
      test__fail(__FILE__, __LINE__, "CHECK_STR(%s, %s): \"%s\" != \"%s\"", #a, #b,                 \
                 test__a ? test__a : "(null)", test__b ? test__b : "(null)");                       \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                                                 \
  do {                                                                                              \
    const char *test__h = (hay), *test__n = (needle);                                               \
    if (!test__h || !strstr(test__h, test__n))                                                      \
      test__fail(__FILE__, __LINE__, "CHECK_CONTAINS(%s, %s): \"%s\" lacks \"%s\"", #hay, #needle,  \
                 test__h ? test__h : "(null)", test__n);                                            \
  } while (0)
/* For mlsys_status results: prints mlsys_last_error() on failure. */
#define CHECK_OK(x)                                                                                 \
  do {                                                                                              \
    int test__s = (int)(x);                                                                         \
    if (test__s != 0)                                                                               \
      test__fail(__FILE__, __LINE__, "%s returned %d: %s", #x, test__s, mlsys_last_error());         \
  } while (0)
#define REQUIRE_OK(x)                                                                               \
  do {                                                                                              \
    int test__s = (int)(x);                                                                         \
    if (test__s != 0) {                                                                             \
      test__fail(__FILE__, __LINE__, "%s returned %d: %s", #x, test__s, mlsys_last_error());         \
      longjmp(test__env, 1);                                                                        \
    }                                                                                               \
  } while (0)
#define SKIP(...)                                                                                   \
  do {                                                                                              \
    snprintf(test__skip_reason, sizeof test__skip_reason, __VA_ARGS__);                             \
    test__skipped = 1;                                                                              \
    longjmp(test__env, 1);                                                                          \
  } while (0)

#define SKIP_DEP(...)                                                                               \
  do {                                                                                              \
    snprintf(test__skip_reason, sizeof test__skip_reason, __VA_ARGS__);                             \
    if (test__in_ci()) {                                                                            \
      test__fail(__FILE__, __LINE__, "missing dependency (CI is set, so this is a failure): %s",    \
                 test__skip_reason);                                                                \
    } else {                                                                                        \
      test__skipped = 1;                                                                            \
    }                                                                                               \
    longjmp(test__env, 1);                                                                          \
  } while (0)
/* CI set to anything but "" / "0" / "false" (CI systems set CI=true; .ci/run exports CI=1). */
static int test__in_ci(void) {
  const char *c = getenv("CI");
  return c && *c && strcmp(c, "0") != 0 && strcmp(c, "false") != 0;
}

static double test__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int test__run(int argc, char **argv) {
  /* static: these live across setjmp/longjmp */
  static int i, passed, failed, skipped;
  static double t0;
  const char *filter = argc > 1 ? argv[1] : NULL;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 0; i < test__ncases; i++) {
    if (filter && !strstr(test__cases[i].name, filter)) continue;
    test__failed_checks = 0;
    test__skipped = 0;
    test__skip_reason[0] = 0;
    t0 = test__now();
    if (setjmp(test__env) == 0) test__cases[i].fn();
    if (test__skipped && !test__failed_checks) {
      printf("  skip  %-48s (%s)\n", test__cases[i].name, test__skip_reason);
      skipped++;
    } else if (test__failed_checks) {
      printf("  FAIL  %-48s %.2f s (%d failed checks)\n", test__cases[i].name, test__now() - t0,
             test__failed_checks);
      failed++;
    } else {
      printf("  ok    %-48s %.2f s\n", test__cases[i].name, test__now() - t0);
      passed++;
    }
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}

#define TEST_MAIN() \
  int main(int argc, char **argv) { return test__run(argc, argv); }

#endif
