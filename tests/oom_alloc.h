/* tests/oom_alloc.h — an allocator whose k-th call fails, for the allocation-failure tests. Include it before any
   mlsys header (it routes MLSYS_MALLOC/REALLOC/FREE here). A test sets oom_fail_at = k and oom_calls = 0, runs an
   operation, and checks the error and that `oom_live` (blocks allocated and not yet freed) is back where it was. */
#ifndef MLSYS_TESTS_OOM_ALLOC_H
#define MLSYS_TESTS_OOM_ALLOC_H
#include <stddef.h>
#include <stdlib.h>

static long oom_fail_at = -1; /* the call number that fails; -1: none */
static long oom_calls;    /* allocation calls so far */
static long oom_live;     /* blocks allocated and not yet freed */

static void *oom_malloc(size_t n) {
  void *p;
  if (oom_calls++ == oom_fail_at) return NULL;
  p = malloc(n);
  if (p) oom_live++;
  return p;
}
static void *oom_realloc(void *p, size_t n) {
  void *q;
  if (oom_calls++ == oom_fail_at) return NULL;
  q = realloc(p, n);
  if (q && !p) oom_live++;
  return q;
}
static void oom_free(void *p) {
  if (p) oom_live--;
  free(p);
}
#define MLSYS_MALLOC(n) oom_malloc(n)
#define MLSYS_REALLOC(p, n) oom_realloc(p, n)
#define MLSYS_FREE(p) oom_free(p)
#endif
