/* Allocation-failure tests for the JSON reader: the k-th allocation fails, for k = 0, 1, 2, ... until a parse
   needs no more than k allocations. Every earlier run must return MLSYS_ERR_NOMEM, leave the doc empty and free
   everything it allocated (counted here; ASan's leak checker double-checks with `make test SAN=1`). */
#include "tests/oom_alloc.h"
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include "tests/test.h"

/* A document that exercises every allocation site: arena blocks (small and dedicated), the value and key
   stacks, the long-number buffer and the duplicate-key hash set (an object with more than 16 members). */
static char *make_doc(int with_error) {
  size_t cap = 1 << 16, o = 0;
  char *s = (char *)malloc(cap);
  int i;
  o += (size_t)snprintf(s + o, cap - o, "{\"name\": \"g\\u00e9\\ud83d\\ude00\", \"n\": 12345678901234567890123, "
                                        "\"pi\": 3.14159265358979323846264338327950288419716939937510582097494459,");
  o += (size_t)snprintf(s + o, cap - o, " \"wide\": {");
  for (i = 0; i < 40; i++) o += (size_t)snprintf(s + o, cap - o, "%s\"k%d\": [%d, {\"x\": null}]", i ? ", " : "", i, i);
  o += (size_t)snprintf(s + o, cap - o, "}, \"long\": \"");
  for (i = 0; i < 3000; i++) s[o++] = (char)('a' + i % 26);
  o += (size_t)snprintf(s + o, cap - o, "\", \"deep\": [[[[[[[[[[1]]]]]]]]]], \"list\": [");
  for (i = 0; i < 200; i++) o += (size_t)snprintf(s + o, cap - o, "%s{\"id\": %d, \"t\": true}", i ? "," : "", i);
  o += (size_t)snprintf(s + o, cap - o, "]%s}", with_error ? ", \"k\": 1, \"k\": 2" : "");
  return s;
}

TEST(json_oom_every_allocation) {
  char *doc = make_doc(0);
  long k, total = -1;
  int bad_status = 0, leaks = 0, not_cleared = 0;
  for (k = 0; k < 100000; k++) {
    mlsys_json_doc d;
    mlsys_status st;
    oom_fail_at = k;
    oom_calls = 0;
    oom_live = 0;
    st = mlsys_json_parse(doc, strlen(doc), "oom.json", &d);
    if (st == MLSYS_OK) {
      CHECK(oom_calls <= k); /* succeeded only because no call reached the failing one */
      CHECK(d.root && d.root->count == 7);
      CHECK_EQ_INT(mlsys_json_get(mlsys_json_get(d.root, "wide"), "k39")->items[0].i64, 39);
      mlsys_json_doc_free(&d);
      CHECK_EQ_INT(oom_live, 0);
      total = k;
      break;
    }
    if (st != MLSYS_ERR_NOMEM) bad_status++;
    if (mlsys_last_status() != MLSYS_ERR_NOMEM) bad_status++;
    if (d.root || d.arena_ || d.src_) not_cleared++;
    if (oom_live != 0) leaks++;
  }
  oom_fail_at = -1;
  printf("    %ld allocation points tested\n", total);
  CHECK(total > 5);
  CHECK_EQ_INT(bad_status, 0);
  CHECK_EQ_INT(leaks, 0);
  CHECK_EQ_INT(not_cleared, 0);
  free(doc);
}

TEST(json_oom_with_parse_error) {
  /* a document with a duplicate key at the end: each run is NOMEM or, once memory suffices, PARSE */
  char *doc = make_doc(1);
  long k;
  int bad = 0, leaks = 0, done = 0;
  for (k = 0; k < 100000 && !done; k++) {
    mlsys_json_doc d;
    mlsys_status st;
    oom_fail_at = k;
    oom_calls = 0;
    oom_live = 0;
    st = mlsys_json_parse(doc, strlen(doc), "oom.json", &d);
    if (st == MLSYS_ERR_PARSE) {
      CHECK_CONTAINS(mlsys_last_error(), "duplicate key 'k'");
      CHECK(oom_calls <= k);
      done = 1;
    } else if (st != MLSYS_ERR_NOMEM) bad++;
    if (oom_live != 0) leaks++;
  }
  oom_fail_at = -1;
  CHECK(done);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(leaks, 0);
  free(doc);
}

TEST(json_oom_writer_needs_no_memory) {
  /* the writer never allocates */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  mlsys_json_writer w;
  REQUIRE(f);
  oom_fail_at = 0;
  oom_calls = 0;
  mlsys_jw_init(&w, f, 1);
  mlsys_jw_object(&w);
  mlsys_jw_key(&w, "a");
  mlsys_jw_array(&w);
  mlsys_jw_double(&w, 0.1);
  mlsys_jw_str(&w, "x\xFFy");
  mlsys_jw_end(&w);
  mlsys_jw_end(&w);
  oom_fail_at = -1;
  CHECK_EQ_INT(oom_calls, 0);
  CHECK_OK(mlsys_jw_finish(&w));
  fclose(f);
  CHECK_STR(buf, "{\n  \"a\": [0.1, \"x\xEF\xBF\xBDy\"]\n}\n");
  free(buf);
}

TEST_MAIN()
