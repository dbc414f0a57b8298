/* tests/test_contracode_vocab.c — the committed 8k ContraCode vocabulary and the corpus commands (issue 25):
   tools/contracode_js8k.model (trained by scripts/contracode-vocab.sh with mlsys_contracode_sp_train on the offline
   corpus of scripts/contracode-corpus.sh) loads with the repo's special pieces, and our Viterbi equals Debian's
   spm_encode 0.1.97 on 400 held-out corpus functions (ids recorded by spm_encode in tests/data/contracode/; spec
   §7.4 test 14), so neither the corpus nor SentencePiece is needed here. `mlsys contracode functions --jsonl` and
   `mlsys contracode vocab --text-out` are checked against the library called in-process on underscore.js: the same
   units, byte for byte through the JSON round trip, and the same normalized text (the binary is $MLSYS_BIN, default
   build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#include <unistd.h>

#define DATA "tests/data/contracode/"
#define MODEL "tools/contracode_js8k.model"

TEST(js8k_model_loads_with_the_repo_symbols) {
  static const char *const user[] = {"[CLS]", "[SEP]", "[MASK]", "[EOL]", "[URL]"};
  mlsys_contracode_sp *m = NULL;
  int32_t *ids = NULL;
  size_t n = 0;
  int i;
  REQUIRE_OK(mlsys_contracode_sp_load(MODEL, &m));
  CHECK_EQ_INT(mlsys_contracode_sp_size(m), 8000);
  CHECK_EQ_INT(mlsys_contracode_sp_unk_id(m), 0);
  CHECK_STR(mlsys_contracode_sp_piece(m, 0), "[UNK]");
  CHECK_STR(mlsys_contracode_sp_piece(m, 1), "<s>");
  CHECK_STR(mlsys_contracode_sp_piece(m, 2), "</s>");
  CHECK_EQ_INT(mlsys_contracode_sp_type(m, 1), MLSYS_CONTRACODE_SP_CONTROL);
  for (i = 0; i < 5; i++) {
    CHECK_EQ_INT(mlsys_contracode_sp_id(m, user[i]), 3 + i);
    CHECK_EQ_INT(mlsys_contracode_sp_type(m, 3 + i), MLSYS_CONTRACODE_SP_USER_DEFINED);
  }
  /* normal pieces come by decreasing score */
  for (i = 9; i < 8000; i++) CHECK(mlsys_contracode_sp_score(m, i) <= mlsys_contracode_sp_score(m, i - 1));
  /* a user symbol is one id even glued to code */
  REQUIRE_OK(mlsys_contracode_sp_encode(m, "x;[EOL]y", 8, &ids, &n, NULL));
  for (i = 0; i < (int)n; i++)
    if (ids[i] == 6) break;
  CHECK(i < (int)n);
  free(ids);
  mlsys_contracode_sp_free(m);
}

/* Every line of the held-out sample encodes to spm_encode's ids; and, where no id is [UNK], the pieces spell the
   model's normalization of the line (Viterbi covers the text exactly once). */
TEST(js8k_viterbi_equals_spm_encode_on_heldout_functions) {
  mlsys_contracode_sp *m = NULL;
  char *t = NULL, *ids = NULL, *tp, *ip, line[1 << 16];
  size_t tn = 0, in = 0, i;
  int nlines = 0, bad = 0, spelled = 0;
  long ntok = 0;
  REQUIRE_OK(mlsys_contracode_sp_load(MODEL, &m));
  REQUIRE_OK(mlsys_read_file(DATA "heldout_corpus400.txt", &t, &tn));
  REQUIRE_OK(mlsys_read_file(DATA "heldout_corpus400.js8k.ids", &ids, &in));
  for (tp = t, ip = ids; tp < t + tn;) {
    char *tnl = (char *)memchr(tp, '\n', (size_t)(t + tn - tp)), *inl = (char *)memchr(ip, '\n', (size_t)(ids + in - ip));
    int32_t *o = NULL;
    size_t no = 0, len = 0;
    int has_unk = 0;
    REQUIRE(tnl && inl);
    REQUIRE_OK(mlsys_contracode_sp_encode(m, tp, (size_t)(tnl - tp), &o, &no, NULL));
    for (i = 0; i < no && len < sizeof line - 16; i++) len += (size_t)snprintf(line + len, sizeof line - len, i ? " %d" : "%d", o[i]);
    if (len != (size_t)(inl - ip) || memcmp(line, ip, len))
      if (bad++ < 3) printf("    line %d: expected %.*s\n", nlines + 1, (int)(inl - ip), ip);
    for (i = 0; i < no; i++) has_unk |= o[i] == 0;
    if (!has_unk) {
      char *norm = NULL, *cat;
      size_t nn = 0, cl = 0;
      REQUIRE_OK(mlsys_contracode_sp_normalize(m, tp, (size_t)(tnl - tp), &norm, &nn));
      cat = (char *)malloc(nn + 1);
      REQUIRE(cat);
      for (i = 0; i < no; i++) {
        const char *pc = mlsys_contracode_sp_piece(m, o[i]);
        size_t pl = strlen(pc);
        if (cl + pl > nn) break;
        memcpy(cat + cl, pc, pl);
        cl += pl;
      }
      CHECK(i == no && cl == nn && !memcmp(cat, norm, nn));
      spelled++;
      free(cat);
      free(norm);
    }
    ntok += (long)no;
    free(o);
    nlines++;
    tp = tnl + 1, ip = inl + 1;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(nlines, 400);
  CHECK(ip == ids + in);
  CHECK(spelled > 300);
  printf("    400 held-out functions, %ld tokens (%.1f a function), %d without [UNK] spelled back\n", ntok,
         (double)ntok / 400.0, spelled);
  free(t);
  free(ids);
  mlsys_contracode_sp_free(m);
}

/* The extractor's JSON lines against the library in-process: same units in the same order (each decoded "src" equals
   mlsys_contracode_fn_unit's text byte for byte), the filters applied as documented, and `vocab --text-out` writing
   normalize_program of each. */
TEST(functions_jsonl_and_vocab_text_match_the_library) {
  const char *file = DATA "train_underscore.js";
  char *src = NULL, cmd[512], tmpl[] = "/tmp/mlsys_ccvocab_XXXXXX", *txt = NULL;
  size_t n = 0, tl = 0;
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *f = NULL;
  int nf = 0, k, kept = 0, fd;
  run_result r;
  const char *p, *tp;
  if (access(bin(), X_OK)) SKIP_DEP("%s not built (make build/mlsys)", bin());
  REQUIRE_OK(mlsys_read_file(file, &src, &n));
  REQUIRE_OK(mlsys_contracode_js_parse(src, n, MLSYS_CONTRACODE_JS_SCRIPT, &a));
  REQUIRE_OK(mlsys_contracode_js_functions(&a, &f, &nf));
  fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "contracode functions %s --jsonl", file);
  r = run(cmd);
  CHECK_EQ_INT(r.code, 0);
  CHECK(r.err && strstr(r.err, "\"unique_functions\": "));
  REQUIRE(r.out);
  {
    const char *jl = r.out, *end = r.out + strlen(r.out);
    FILE *o = fopen(tmpl, "w");
    REQUIRE(o);
    fputs(r.out, o);
    REQUIRE(fclose(o) == 0);
    p = jl;
    for (k = 0; k < nf; k++) {
      char *u = NULL;
      size_t un = 0;
      const char *nl;
      mlsys_json_doc d;
      const mlsys_json *v;
      if (f[k].nlines < 3 || f[k].end - f[k].start > 8192) continue;
      REQUIRE_OK(mlsys_contracode_fn_unit(src, n, &f[k], &u, &un));
      /* underscore.js has no two identical functions of >= 3 lines, so none is a duplicate */
      nl = memchr(p, '\n', (size_t)(end - p));
      REQUIRE(nl);
      REQUIRE_OK(mlsys_json_parse(p, (size_t)(nl - p), "record", &d));
      v = mlsys_json_get(d.root, "src");
      REQUIRE(v && v->type == MLSYS_JSON_STRING);
      CHECK(strlen(v->str) == un && !memcmp(v->str, u, un));
      v = mlsys_json_get(d.root, "file");
      CHECK(v && v->type == MLSYS_JSON_STRING && !strcmp(v->str, file));
      v = mlsys_json_get(d.root, "pkg");
      CHECK(v && v->type == MLSYS_JSON_STRING && !strcmp(v->str, "tests"));
      mlsys_json_doc_free(&d);
      free(u);
      p = nl + 1;
      kept++;
    }
    CHECK(p == end);   /* nothing more */
  }
  run_free(&r);
  CHECK(kept > 100);
  /* vocab --text-out: one normalize_program'd unit a line; --split all since one file has one split */
  snprintf(cmd, sizeof cmd, "contracode vocab %s --split all --text-out %s.txt", tmpl, tmpl);
  r = run(cmd);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  snprintf(cmd, sizeof cmd, "%s.txt", tmpl);
  REQUIRE_OK(mlsys_read_file(cmd, &txt, &tl));
  tp = txt;
  for (k = 0; k < nf; k++) {
    char *u = NULL, *norm = NULL;
    size_t un = 0, nn = 0;
    if (f[k].nlines < 3 || f[k].end - f[k].start > 8192) continue;
    REQUIRE_OK(mlsys_contracode_fn_unit(src, n, &f[k], &u, &un));
    REQUIRE_OK(mlsys_contracode_normalize_program(u, un, &norm, &nn));
    REQUIRE(tp + nn < txt + tl);
    CHECK(!memcmp(tp, norm, nn) && tp[nn] == '\n');
    tp += nn + 1;
    free(u);
    free(norm);
  }
  CHECK(tp == txt + tl);
  free(txt);
  /* bad input: a line that is no record is an error naming the file and line */
  {
    FILE *o = fopen(tmpl, "w");
    REQUIRE(o);
    fputs("{\"src\": \"function x(){}\"}\n{\"src\": 12}\n", o);
    fclose(o);
    snprintf(cmd, sizeof cmd, "contracode vocab %s --split all --text-out %s.txt", tmpl, tmpl);
    r = run(cmd);
    CHECK_EQ_INT(r.code, 1);
    CHECK(r.err && strstr(r.err, ":2: not a record"));
    run_free(&r);
  }
  unlink(tmpl);
  snprintf(cmd, sizeof cmd, "%s.txt", tmpl);
  unlink(cmd);
  free(f);
  mlsys_contracode_js_free(&a);
  free(src);
}

/* Bad usage is exit 2 naming the option, bad input exit 1 naming the file. */
TEST(functions_and_vocab_errors) {
  static const struct { const char *args, *want; int code; } cases[] = {
      {"contracode functions", "FILE.js", 2},
      {"contracode functions " DATA "train_underscore.js --min-lines x", "--min-lines", 2},
      {"contracode functions " DATA "train_underscore.js --max-bytes 0", "--max-bytes", 2},
      {"contracode functions /nonexistent/a.js", "/nonexistent/a.js", 1},
      {"contracode functions --files-from /nonexistent/list", "/nonexistent/list", 1},
      {"contracode vocab", "FUNCS.jsonl", 2},
      {"contracode vocab x.jsonl", "--out", 2},
      {"contracode vocab x.jsonl --out m.model --split dev", "--split", 2},
      {"contracode vocab x.jsonl --out m.model --vocab-size 3", "--vocab-size", 2},
      {"contracode vocab /nonexistent/f.jsonl --text-out /dev/null", "/nonexistent/f.jsonl", 1},
  };
  size_t i;
  if (access(bin(), X_OK)) SKIP_DEP("%s not built (make build/mlsys)", bin());
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r = run(cases[i].args);
    CHECK_MSG(r.code == cases[i].code && r.err && strstr(r.err, cases[i].want), "mlsys %s: exit %d, stderr %s",
              cases[i].args, r.code, r.err ? r.err : "(none)");
    run_free(&r);
  }
}

TEST_MAIN()
