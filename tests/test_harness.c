/* Tests of the test harness itself (tests/test.h): the rule that a missing dependency fails under CI. */
#include <stdlib.h>
#include "tests/test.h"

static void probe_skip_dep(void) { SKIP_DEP("this is the expected probe of test_harness, not a real missing %s", "dependency"); }
static void probe_skip(void) { SKIP("probe: no GPU"); }

/* Runs probe inside its own jump buffer with CI set to ci (NULL: unset); returns 1 if it failed, 2 if it skipped. */
static int run_probe(void (*probe)(void), const char *ci) {
  static jmp_buf saved;
  static int before, outcome;
  memcpy(saved, test__env, sizeof saved);
  before = test__failed_checks;
  test__skipped = 0;
  if (ci) setenv("CI", ci, 1); else unsetenv("CI");
  if (setjmp(test__env) == 0) probe();
  outcome = test__failed_checks > before ? 1 : test__skipped ? 2 : 0;
  test__failed_checks = before;   /* the probe's failure is the expected outcome, not this test's */
  test__skipped = 0;
  test__skip_reason[0] = 0;
  memcpy(test__env, saved, sizeof saved);
  return outcome;
}

TEST(skip_dep_fails_under_ci_and_skips_elsewhere) {
  const char *old = getenv("CI");
  char keep[256] = "";
  if (old) snprintf(keep, sizeof keep, "%s", old);
  int in_ci = run_probe(probe_skip_dep, "1"), ci_true = run_probe(probe_skip_dep, "true");
  int no_ci = run_probe(probe_skip_dep, NULL), ci_zero = run_probe(probe_skip_dep, "0"), ci_empty = run_probe(probe_skip_dep, "");
  int plain_in_ci = run_probe(probe_skip, "1");
  if (old) setenv("CI", keep, 1); else unsetenv("CI");
  CHECK_EQ_INT(in_ci, 1);
  CHECK_EQ_INT(ci_true, 1);
  CHECK_EQ_INT(no_ci, 2);
  CHECK_EQ_INT(ci_zero, 2);
  CHECK_EQ_INT(ci_empty, 2);
  CHECK_EQ_INT(plain_in_ci, 2);   /* a skip for what CI truly cannot have (a GPU) stays a skip */
}

TEST_MAIN()
