/* libFuzzer target for the JSON reader and writer (section 6 of mlsys_common.h).

   For every input: parse it. A failure must be MLSYS_ERR_PARSE with "fuzz:LINE:COL: ..." and an empty doc.
   A success is checked for internal consistency (exact integers agree with the double, strings are
   NUL-terminated, every key is found by mlsys_json_get), then written back with the writer (compact and pretty),
   re-parsed and compared structurally; trees deeper than MLSYS_JSON_MAX_DEPTH cannot be parsed, so every parsed tree must write back
   with MLSYS_ERR_ARG instead. Finally the raw input is written as one string with mlsys_jw_strn: the output must
   parse back to a string equal to the input when the input is valid UTF-8 (invalid bytes become U+FFFD).

   Build and run: make build/fuzz/fuzz_json && ./build/fuzz/fuzz_json -max_total_time=120 tests/fuzz/corpus/fuzz_json */
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_common.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                \
  do {                                                                                               \
    if (!(x)) {                                                                                      \
      fprintf(stderr, "fuzz_json: check failed at line %d: %s (last error: %s)\n", __LINE__, #x,     \
              mlsys_last_error());                                                                   \
      abort();                                                                                       \
    }                                                                                                \
  } while (0)

static int tree_depth(const mlsys_json *v) {
  int i, d = 0;
  if (v->type != MLSYS_JSON_ARRAY && v->type != MLSYS_JSON_OBJECT) return 0;
  for (i = 0; i < v->count; i++) {
    int c = tree_depth(&v->items[i]);
    if (c > d) d = c;
  }
  return d + 1;
}

/* Invariants of one parsed tree. */
static void check_tree(const mlsys_json *v, const char *src) {
  int i;
  FUZZ_CHECK(v->src == src);
  FUZZ_CHECK(v->line >= 1 && v->col >= 1);
  switch (v->type) {
    case MLSYS_JSON_NULL: break;
    case MLSYS_JSON_BOOL: FUZZ_CHECK(v->boolean == 0 || v->boolean == 1); break;
    case MLSYS_JSON_NUMBER:
      FUZZ_CHECK(isfinite(v->num));
      if (v->is_int) FUZZ_CHECK(v->num == (double)v->i64);
      if (v->is_u64) FUZZ_CHECK(v->num == (double)v->u64);
      if (v->is_int && v->is_u64) FUZZ_CHECK(v->i64 >= 0 && (uint64_t)v->i64 == v->u64);
      break;
    case MLSYS_JSON_STRING: FUZZ_CHECK(v->str && v->str[v->len] == 0); break;
    case MLSYS_JSON_ARRAY:
      FUZZ_CHECK(v->count >= 0 && (v->count == 0 || v->items));
      for (i = 0; i < v->count; i++) check_tree(&v->items[i], src);
      FUZZ_CHECK(mlsys_json_at(v, v->count) == NULL && mlsys_json_at(v, -1) == NULL);
      break;
    case MLSYS_JSON_OBJECT:
      FUZZ_CHECK(v->count >= 0 && (v->count == 0 || (v->items && v->keys)));
      for (i = 0; i < v->count; i++) {
        FUZZ_CHECK(v->keys[i] != NULL);
        FUZZ_CHECK(mlsys_json_get(v, v->keys[i]) == &v->items[i]); /* keys are unique */
        check_tree(&v->items[i], src);
      }
      break;
    default: FUZZ_CHECK(!"bad type");
  }
}

static void write_tree(mlsys_json_writer *w, const mlsys_json *v) {
  int i;
  switch (v->type) {
    case MLSYS_JSON_NULL: mlsys_jw_null(w); break;
    case MLSYS_JSON_BOOL: mlsys_jw_bool(w, v->boolean); break;
    case MLSYS_JSON_NUMBER:
      if (v->is_int && !(v->i64 == 0 && signbit(v->num))) mlsys_jw_i64(w, v->i64);
      else if (v->is_u64 && !(v->u64 == 0 && signbit(v->num))) mlsys_jw_u64(w, v->u64);
      else mlsys_jw_double(w, v->num);
      break;
    case MLSYS_JSON_STRING: mlsys_jw_strn(w, v->str, v->len); break;
    case MLSYS_JSON_ARRAY:
      mlsys_jw_array(w);
      for (i = 0; i < v->count; i++) write_tree(w, &v->items[i]);
      mlsys_jw_end(w);
      break;
    case MLSYS_JSON_OBJECT:
      mlsys_jw_object(w);
      for (i = 0; i < v->count; i++) {
        mlsys_jw_key(w, v->keys[i]);
        write_tree(w, &v->items[i]);
      }
      mlsys_jw_end(w);
      break;
  }
}

/* Structural equality; numbers bit for bit, and b keeps every exact-integer reading of a. */
static int tree_eq(const mlsys_json *a, const mlsys_json *b) {
  int i;
  if (a->type != b->type) return 0;
  switch (a->type) {
    case MLSYS_JSON_NULL: return 1;
    case MLSYS_JSON_BOOL: return a->boolean == b->boolean;
    case MLSYS_JSON_NUMBER:
      if (memcmp(&a->num, &b->num, sizeof(double)) != 0) return 0;
      if (a->is_int && (!b->is_int || a->i64 != b->i64)) return 0;
      if (a->is_u64 && (!b->is_u64 || a->u64 != b->u64)) return 0;
      return 1;
    case MLSYS_JSON_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case MLSYS_JSON_ARRAY:
    case MLSYS_JSON_OBJECT:
      if (a->count != b->count) return 0;
      for (i = 0; i < a->count; i++) {
        if (a->type == MLSYS_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0) return 0;
        if (!tree_eq(&a->items[i], &b->items[i])) return 0;
      }
      return 1;
  }
  return 0;
}

/* An independent UTF-8 check (decode and range-check each code point). */
static int valid_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], cp, len, k;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return 0;
    if (i + len > n) return 0;
    for (k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += len;
  }
  return 1;
}

static void check_error_message(void) {
  const char *m = mlsys_last_error();
  const char *p;
  FUZZ_CHECK(strncmp(m, "fuzz:", 5) == 0);
  p = m + 5;
  FUZZ_CHECK(*p >= '1' && *p <= '9');
  while (*p >= '0' && *p <= '9') p++;
  FUZZ_CHECK(*p == ':');
  p++;
  FUZZ_CHECK(*p >= '1' && *p <= '9');
  while (*p >= '0' && *p <= '9') p++;
  FUZZ_CHECK(p[0] == ':' && p[1] == ' ' && p[2] != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlsys_json_doc d;
  mlsys_status st = mlsys_json_parse((const char *)data, size, "fuzz", &d);
  int pretty;
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE);
    FUZZ_CHECK(d.root == NULL && d.arena_ == NULL && d.src_ == NULL);
    check_error_message();
  } else {
    int deep;
    FUZZ_CHECK(d.root && d.src_ && strcmp(d.src_, "fuzz") == 0);
    check_tree(d.root, d.src_);
    deep = tree_depth(d.root) > MLSYS_JSON_MAX_DEPTH;
    for (pretty = 0; pretty <= 1; pretty++) {
      char *buf = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&buf, &len);
      mlsys_json_writer w;
      mlsys_json_doc d2;
      FUZZ_CHECK(f != NULL);
      mlsys_jw_init(&w, f, pretty);
      write_tree(&w, d.root);
      st = mlsys_jw_finish(&w);
      fclose(f);
      if (deep) {
        FUZZ_CHECK(st == MLSYS_ERR_ARG);
      } else {
        FUZZ_CHECK(st == MLSYS_OK);
        FUZZ_CHECK(len > 0 && buf[len - 1] == '\n');
        st = mlsys_json_parse(buf, len, "fuzz-out", &d2);
        if (st != MLSYS_OK) {
          fprintf(stderr, "fuzz_json: writer output does not parse: %s\n--- output ---\n%s\n", mlsys_last_error(), buf);
          abort();
        }
        if (!tree_eq(d.root, d2.root)) {
          fprintf(stderr, "fuzz_json: round trip changed the tree\n--- output ---\n%s\n", buf);
          abort();
        }
        mlsys_json_doc_free(&d2);
      }
      free(buf);
    }
    mlsys_json_doc_free(&d);
  }
  /* the raw bytes as one string */
  {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mlsys_json_writer w;
    mlsys_json_doc d2;
    FUZZ_CHECK(f != NULL);
    mlsys_jw_init(&w, f, (int)(size & 1));
    mlsys_jw_strn(&w, (const char *)data, size);
    FUZZ_CHECK(mlsys_jw_finish(&w) == MLSYS_OK);
    fclose(f);
    st = mlsys_json_parse(buf, len, "fuzz-str", &d2);
    if (st != MLSYS_OK) {
      fprintf(stderr, "fuzz_json: escaped string does not parse: %s\n", mlsys_last_error());
      abort();
    }
    FUZZ_CHECK(d2.root->type == MLSYS_JSON_STRING);
    FUZZ_CHECK(valid_utf8((const unsigned char *)d2.root->str, d2.root->len));
    if (valid_utf8(data, size)) FUZZ_CHECK(d2.root->len == size && memcmp(d2.root->str, data, size) == 0);
    else FUZZ_CHECK(strstr(d2.root->str, "\xEF\xBF\xBD") != NULL || memchr(d2.root->str, 0, d2.root->len));
    mlsys_json_doc_free(&d2);
    free(buf);
  }
  return 0;
}
