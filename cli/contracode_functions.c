/* cli/contracode_functions.c — `mlsys contracode functions`: every function of a set of JavaScript files as a
   ContraCode program unit (mlsys_contracode.h §1 spans, §4 mlsys_contracode_fn_unit), filtered and deduplicated the
   way the offline corpus is built (scripts/contracode-corpus.sh, docs/contracode.md), and `mlsys contracode vocab`:
   the 8k unigram vocabulary trained on such a corpus (§5 mlsys_contracode_sp_train). The JSON-lines records the
   first writes are read back by the second (cc_jsonl_next below), so the corpus needs no other tool. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int contracode_functions_cmd(int argc, char **argv);
int contracode_vocab_cmd(int argc, char **argv);

static const char contracode_functions_help[] =
    "usage: mlsys contracode functions [FILE.js ...] [--files-from LIST] [--jsonl] [--min-lines N] [--max-bytes N]\n"
    "                                  [--max-mean-line N] [--no-dedup] [--manifest OUT.json]\n"
    "  Every function of each FILE (declarations, expressions, arrows and methods, nested ones included) as a\n"
    "  program unit: a declaration as it is, an expression or arrow as `const x = ...;`, a method inside\n"
    "  `class x{...}`. A file is parsed as a script, else as a module; a file that parses as neither is skipped,\n"
    "  and so are *.min.js files and files whose mean line length exceeds N bytes (--max-mean-line, default 300;\n"
    "  0 = no limit). A function is kept when it spans at least --min-lines lines (3), its source is at most\n"
    "  --max-bytes bytes (8192), its unit parses, and no earlier unit had the same text (unless --no-dedup).\n"
    "  --files-from LIST reads more paths from LIST, one a line (- = stdin); an unreadable file is an error.\n"
    "  Output (stdout): each unit after a `// FILE:LINE KIND` line and followed by an empty line, or with --jsonl\n"
    "  one record a line, {\"pkg\", \"file\", \"line\", \"kind\", \"split\", \"src\"}:\n"
    "  pkg is the path's first component, split is \"heldout\" for about 7.8 % of the files (the top byte of the\n"
    "  64-bit FNV-1a hash of the path below 20) and \"train\" otherwise, so no file is in both. The counts go to\n"
    "  stderr, and as JSON to --manifest.\n";

static const char contracode_vocab_help[] =
    "usage: mlsys contracode vocab FUNCS.jsonl [--split train|heldout|all] [--max-functions N] [--text-out T.txt]\n"
    "                              [--out M.model] [--vocab-size V] [--unk-piece P] [--user-symbols LIST]\n"
    "  Reads the records of `mlsys contracode functions --jsonl` (those of --split, default train), normalizes each\n"
    "  unit with the repo's normalize_program (newline -> \" [EOL]\", whitespace runs -> one space), and writes them\n"
    "  one a line to --text-out (the exact text spm_train or spm_encode should be given). With --out it also trains\n"
    "  a SentencePiece unigram vocabulary of V pieces (default 8000; identity normalization; the unknown piece P,\n"
    "  default [UNK], <s>, </s>, then the user-defined symbols, default [CLS],[SEP],[MASK],[EOL],[URL]: the\n"
    "  ContraCode repo's, which had no [PAD] piece unless pad_id was set) on those lines with\n"
    "  mlsys_contracode_sp_train and writes it as a .model that spm_encode reads. --max-functions N keeps the first\n"
    "  N records (in file order). Deterministic: the same input gives the same bytes.\n";

/* ---- shared helpers ---------------------------------------------------------------------------------------------- */

static int cc_fn_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

static uint64_t cc_fn_fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* A JSON string of n bytes: quote, backslash and control bytes escaped; other bytes copied (the sources are UTF-8;
   a stray invalid byte stays as it is, and the reader gives it back unchanged). */
static void cc_fn_json_bytes(FILE *f, const char *s, size_t n) {
  size_t i;
  fputc('"', f);
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* ---- functions --------------------------------------------------------------------------------------------------- */

typedef struct {
  uint64_t *h;     /* open addressing over 64-bit text hashes; 0 = empty */
  char **txt;      /* the text behind each hash, so a collision never drops a distinct unit */
  size_t *len;
  size_t cap, n;
} cc_fn_set;

/* 1 if (s, n) was new (and is now in the set), 0 if already there, -1 out of memory. */
static int cc_fn_set_add(cc_fn_set *st, const char *s, size_t n) {
  uint64_t h = cc_fn_fnv1a(s, n) | 1;
  size_t i;
  if (2 * (st->n + 1) > st->cap) {
    size_t nc = st->cap ? st->cap * 2 : 1024, j;
    uint64_t *nh = (uint64_t *)calloc(nc, sizeof *nh);
    char **nt = (char **)calloc(nc, sizeof *nt);
    size_t *nl = (size_t *)calloc(nc, sizeof *nl);
    if (!nh || !nt || !nl) {
      free(nh);
      free(nt);
      free(nl);
      return -1;
    }
    for (j = 0; j < st->cap; j++)
      if (st->h[j]) {
        size_t k = (size_t)(st->h[j] & (nc - 1));
        while (nh[k]) k = (k + 1) & (nc - 1);
        nh[k] = st->h[j];
        nt[k] = st->txt[j];
        nl[k] = st->len[j];
      }
    free(st->h);
    free(st->txt);
    free(st->len);
    st->h = nh;
    st->txt = nt;
    st->len = nl;
    st->cap = nc;
  }
  for (i = (size_t)(h & (st->cap - 1)); st->h[i]; i = (i + 1) & (st->cap - 1))
    if (st->h[i] == h && st->len[i] == n && !memcmp(st->txt[i], s, n)) return 0;
  if (!(st->txt[i] = (char *)malloc(n + 1))) return -1;
  memcpy(st->txt[i], s, n);
  st->txt[i][n] = 0;
  st->h[i] = h;
  st->len[i] = n;
  st->n++;
  return 1;
}

static void cc_fn_set_free(cc_fn_set *st) {
  size_t i;
  for (i = 0; i < st->cap; i++) free(st->txt[i]);
  free(st->h);
  free(st->txt);
  free(st->len);
}

typedef struct {
  long files, skipped_min, skipped_long_lines, skipped_parse, fn_nodes, too_short, too_long,
      unit_parse_errors, duplicates, kept, kept_train, kept_heldout, by_kind[5];
} cc_fn_counts;

typedef struct {
  int jsonl, dedup, min_lines;
  long max_bytes, max_mean_line;
  cc_fn_set seen;
  cc_fn_counts c;
} cc_fn_ctx;

static int cc_fn_line_of(const char *s, uint32_t off) {
  uint32_t i;
  int line = 1;
  for (i = 0; i < off; i++)
    if (s[i] == '\n') line++;
  return line;
}

static int cc_fn_file(const char *cmd, cc_fn_ctx *x, const char *path) {
  static const char *const fkind[] = {"?", "declaration", "expression", "arrow", "method"};
  char *src = NULL;
  size_t n = 0, i, nlines = 1;
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *f = NULL;
  int nf = 0, k, flags = MLSYS_CONTRACODE_JS_SCRIPT, heldout;
  const char *slash;
  x->c.files++;
  if (cc_fn_ends_with(path, ".min.js")) {
    x->c.skipped_min++;
    return CLI_OK;
  }
  if (mlsys_read_file(path, &src, &n) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  for (i = 0; i < n; i++) nlines += src[i] == '\n';
  if (x->max_mean_line > 0 && (double)n / (double)nlines > (double)x->max_mean_line) {
    x->c.skipped_long_lines++;
    free(src);
    return CLI_OK;
  }
  if (mlsys_contracode_js_parse(src, n, flags, &a) != MLSYS_OK) {
    flags = MLSYS_CONTRACODE_JS_MODULE;
    if (mlsys_contracode_js_parse(src, n, flags, &a) != MLSYS_OK) {
      x->c.skipped_parse++;
      free(src);
      return CLI_OK;
    }
  }
  if (mlsys_contracode_js_functions(&a, &f, &nf) != MLSYS_OK) {
    mlsys_contracode_js_free(&a);
    free(src);
    return cli_fail(cmd, "%s: %s", path, mlsys_last_error());
  }
  heldout = (int)(cc_fn_fnv1a(path, strlen(path)) >> 56) < 20;
  slash = strchr(path, '/');
  for (k = 0; k < nf; k++) {
    char *u = NULL;
    size_t un = 0;
    mlsys_contracode_js_ast ua;
    int isnew;
    x->c.fn_nodes++;
    if (f[k].nlines < x->min_lines) {
      x->c.too_short++;
      continue;
    }
    if ((long)(f[k].end - f[k].start) > x->max_bytes) {
      x->c.too_long++;
      continue;
    }
    if (mlsys_contracode_fn_unit(src, n, &f[k], &u, &un) != MLSYS_OK) {
      x->c.unit_parse_errors++;
      continue;
    }
    if (mlsys_contracode_js_parse(u, un, flags, &ua) != MLSYS_OK) {
      x->c.unit_parse_errors++;
      free(u);
      continue;
    }
    mlsys_contracode_js_free(&ua);
    isnew = x->dedup ? cc_fn_set_add(&x->seen, u, un) : 1;
    if (isnew < 0) {
      free(u);
      free(f);
      mlsys_contracode_js_free(&a);
      free(src);
      return cli_fail(cmd, "out of memory");
    }
    if (!isnew) {
      x->c.duplicates++;
      free(u);
      continue;
    }
    x->c.kept++;
    x->c.by_kind[f[k].kind >= 1 && f[k].kind <= 4 ? f[k].kind : 0]++;
    if (heldout) x->c.kept_heldout++;
    else x->c.kept_train++;
    if (x->jsonl) {
      fputs("{\"pkg\": ", stdout);
      cc_fn_json_bytes(stdout, path, slash ? (size_t)(slash - path) : 0);
      fputs(", \"file\": ", stdout);
      cc_fn_json_bytes(stdout, path, strlen(path));
      printf(", \"line\": %d, \"kind\": \"%s\", \"split\": \"%s\", \"src\": ", cc_fn_line_of(src, f[k].start),
             fkind[f[k].kind >= 1 && f[k].kind <= 4 ? f[k].kind : 0], heldout ? "heldout" : "train");
      cc_fn_json_bytes(stdout, u, un);
      fputs("}\n", stdout);
    } else {
      printf("// %s:%d %s\n", path, cc_fn_line_of(src, f[k].start), fkind[f[k].kind >= 1 && f[k].kind <= 4 ? f[k].kind : 0]);
      fwrite(u, 1, un, stdout);
      fputs("\n\n", stdout);
    }
    free(u);
  }
  free(f);
  mlsys_contracode_js_free(&a);
  free(src);
  return CLI_OK;
}

static void cc_fn_counts_json(FILE *o, const cc_fn_counts *c) {
  fprintf(o,
          "{\"files\": %ld, \"skipped_min_js\": %ld, \"skipped_long_lines\": %ld, \"skipped_parse_error\": %ld, "
          "\"function_nodes\": %ld, \"too_short\": %ld, \"too_long\": %ld, "
          "\"unit_parse_errors\": %ld, \"duplicates\": %ld, \"unique_functions\": %ld, \"train\": %ld, "
          "\"heldout\": %ld, \"declarations\": %ld, \"expressions\": %ld, \"arrows\": %ld, \"methods\": %ld}\n",
          c->files, c->skipped_min, c->skipped_long_lines, c->skipped_parse, c->fn_nodes,
          c->too_short, c->too_long, c->unit_parse_errors, c->duplicates, c->kept, c->kept_train, c->kept_heldout,
          c->by_kind[1], c->by_kind[2], c->by_kind[3], c->by_kind[4]);
}

#define CC_FN_MAXPOS 256

int contracode_functions_cmd(int argc, char **argv) {
  const char *cmd = "contracode functions", *from = NULL, *jsonl = NULL, *minl = NULL, *maxb = NULL, *maxm = NULL,
             *nodedup = NULL, *manifest = NULL, *help = NULL;
  cli_opt opts[] = {{"--files-from", 1, &from},    {"--jsonl", 0, &jsonl},       {"--min-lines", 1, &minl},
                    {"--max-bytes", 1, &maxb},     {"--max-mean-line", 1, &maxm}, {"--no-dedup", 0, &nodedup},
                    {"--manifest", 1, &manifest},  {"--help", 0, &help}};
  const char *pos[CC_FN_MAXPOS];
  int npos = 0, rc, i;
  double v;
  cc_fn_ctx x;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, CC_FN_MAXPOS, &npos)))
    return rc;
  if (help) {
    fputs(contracode_functions_help, stdout);
    return CLI_OK;
  }
  memset(&x, 0, sizeof x);
  x.jsonl = jsonl != NULL;
  x.dedup = nodedup == NULL;
  x.min_lines = 3;
  x.max_bytes = 8192;
  x.max_mean_line = 300;
  if (minl) {
    if (cli_parse_double(minl, &v) || v < 0 || v > 1e9 || v != (double)(long)v)
      return cli_usage_error(cmd, "--min-lines must be a non-negative integer, not '%s'", minl);
    x.min_lines = (int)v;
  }
  if (maxb) {
    if (cli_parse_double(maxb, &v) || v < 1 || v > 1e12 || v != (double)(long)v)
      return cli_usage_error(cmd, "--max-bytes must be a positive integer, not '%s'", maxb);
    x.max_bytes = (long)v;
  }
  if (maxm) {
    if (cli_parse_double(maxm, &v) || v < 0 || v > 1e12 || v != (double)(long)v)
      return cli_usage_error(cmd, "--max-mean-line must be a non-negative integer (0 = no limit), not '%s'", maxm);
    x.max_mean_line = (long)v;
  }
  if (!npos && !from) return cli_usage_error(cmd, "give FILE.js arguments or --files-from LIST");
  rc = CLI_OK;
  for (i = 0; i < npos && rc == CLI_OK; i++) rc = cc_fn_file(cmd, &x, pos[i]);
  if (rc == CLI_OK && from) {
    FILE *lf = strcmp(from, "-") ? fopen(from, "r") : stdin;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    if (!lf) {
      cc_fn_set_free(&x.seen);
      return cli_fail(cmd, "cannot read %s: %s", from, strerror(errno));
    }
    while (rc == CLI_OK && (got = getline(&line, &cap, lf)) > 0) {
      while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
      if (got) rc = cc_fn_file(cmd, &x, line);
    }
    free(line);
    if (lf != stdin) fclose(lf);
  }
  cc_fn_set_free(&x.seen);
  if (rc != CLI_OK) return rc;
  if (fflush(stdout)) return cli_fail(cmd, "writing the functions: %s", strerror(errno));
  fprintf(stderr, "mlsys %s: ", cmd);
  cc_fn_counts_json(stderr, &x.c);
  if (manifest) {
    FILE *mf = fopen(manifest, "w");
    if (!mf) return cli_fail(cmd, "cannot write %s: %s", manifest, strerror(errno));
    cc_fn_counts_json(mf, &x.c);
    if (fclose(mf)) return cli_fail(cmd, "writing %s: %s", manifest, strerror(errno));
  }
  return CLI_OK;
}

/* ---- vocab ------------------------------------------------------------------------------------------------------- */

/* The "split" (NULL when absent) and "src" strings of one record line [p, end) of `functions --jsonl`, through
   mlsys_common.h's JSON parser (the one `contracode train` reads these lines with, fuzzed by fuzz_json). 0, or -1
   with mlsys_last_error() saying why the line is not such a record. */
static int cc_jsonl_record(const char *p, const char *end, const char *name, char **split, char **src, size_t *srcn) {
  mlsys_json_doc doc;
  const char *s = NULL, *sp = NULL;
  int rc = -1;
  *split = *src = NULL;
  if (mlsys_json_parse(p, (size_t)(end - p), name, &doc) != MLSYS_OK) return -1;
  if (mlsys_json_get_str(doc.root, "src", 1, NULL, &s) == MLSYS_OK &&
      mlsys_json_get_str(doc.root, "split", 0, NULL, &sp) == MLSYS_OK) {
    *srcn = strlen(s);
    *src = mlsys_strdup(s);
    *split = sp ? mlsys_strdup(sp) : NULL;
    if (*src && (!sp || *split)) rc = 0;
    else mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  }
  mlsys_json_doc_free(&doc);
  if (rc) {
    free(*split), free(*src);
    *split = *src = NULL;
  }
  return rc;
}

int contracode_vocab_cmd(int argc, char **argv) {
  static const char *const default_user[] = {"[CLS]", "[SEP]", "[MASK]", "[EOL]", "[URL]"};
  const char *cmd = "contracode vocab", *split_s = NULL, *maxf = NULL, *text_out = NULL, *out = NULL,
             *vs = NULL, *users = NULL, *unk = NULL, *help = NULL;
  cli_opt opts[] = {{"--unk-piece", 1, &unk},     {"--split", 1, &split_s},     {"--max-functions", 1, &maxf}, {"--text-out", 1, &text_out},
                    {"--out", 1, &out},           {"--vocab-size", 1, &vs},      {"--user-symbols", 1, &users},
                    {"--help", 0, &help}};
  const char *pos[1];
  const char *user[64];
  int npos = 0, rc, nuser = 0, lineno = 0;
  long maxn = -1, taken = 0;
  double v;
  char *buf = NULL, *p, *end, *text = NULL, *ucopy = NULL;
  size_t len = 0, tn = 0, tcap = 0, nbytes = 0;
  FILE *tf = NULL;
  mlsys_contracode_sp_train_opts o;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_vocab_help, stdout);
    return CLI_OK;
  }
  if (npos != 1) return cli_usage_error(cmd, "give the FUNCS.jsonl that `mlsys contracode functions --jsonl` wrote");
  if (!split_s) split_s = "train";
  if (strcmp(split_s, "train") && strcmp(split_s, "heldout") && strcmp(split_s, "all"))
    return cli_usage_error(cmd, "--split must be train, heldout or all, not '%s'", split_s);
  if (!out && !text_out) return cli_usage_error(cmd, "give --out M.model (train) and/or --text-out T.txt");
  mlsys_contracode_sp_train_defaults(&o);
  if (vs) {
    if (!out) return cli_usage_error(cmd, "--vocab-size needs --out");
    if (cli_parse_double(vs, &v) || v < 8 || v > 1e6 || v != (double)(int)v)
      return cli_usage_error(cmd, "--vocab-size must be an integer in [8, 1000000], not '%s'", vs);
    o.vocab_size = (int)v;
  }
  if (maxf) {
    if (cli_parse_double(maxf, &v) || v < 1 || v > 1e12 || v != (double)(long)v)
      return cli_usage_error(cmd, "--max-functions must be a positive integer, not '%s'", maxf);
    maxn = (long)v;
  }
  if (users) {
    char *t, *save = NULL;
    if (!(ucopy = strdup(users))) return cli_fail(cmd, "out of memory");
    for (t = strtok_r(ucopy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (nuser == 64) {
        free(ucopy);
        return cli_usage_error(cmd, "--user-symbols: at most 64 symbols");
      }
      user[nuser++] = t;
    }
  } else {
    for (nuser = 0; nuser < 5; nuser++) user[nuser] = default_user[nuser];
  }
  o.unk_piece = unk ? unk : "[UNK]";
  o.user = user;
  o.nuser = nuser;
  if (mlsys_read_file(pos[0], &buf, &len) != MLSYS_OK) {
    free(ucopy);
    return cli_fail(cmd, "%s", mlsys_last_error());
  }
  if (text_out && !(tf = fopen(text_out, "w"))) {
    rc = cli_fail(cmd, "cannot write %s: %s", text_out, strerror(errno));
    goto done;
  }
  rc = CLI_OK;
  for (p = buf, end = buf + len; p < end && (maxn < 0 || taken < maxn);) {
    char *nl = (char *)memchr(p, '\n', (size_t)(end - p)), *sp = NULL, *src = NULL, *norm = NULL;
    const char *le = nl ? nl : end;
    size_t sn = 0, nn = 0;
    lineno++;
    if (le > p) {
      char name[1100];
      snprintf(name, sizeof name, "%s:%d", pos[0], lineno);
      if (cc_jsonl_record(p, le, name, &sp, &src, &sn)) {
        rc = cli_fail(cmd, "%s:%d: not a record of `mlsys contracode functions --jsonl` (need a \"src\" string): %s",
                      pos[0], lineno, mlsys_last_error());
        break;
      }
      if (!strcmp(split_s, "all") || (sp && !strcmp(sp, split_s))) {
        if (mlsys_contracode_normalize_program(src, sn, &norm, &nn) != MLSYS_OK) {
          free(sp);
          free(src);
          rc = cli_fail(cmd, "%s", mlsys_last_error());
          break;
        }
        if (tf) {
          fwrite(norm, 1, nn, tf);
          fputc('\n', tf);
        }
        if (out) {
          if (tn + nn + 2 > tcap) {
            size_t nc = tcap ? tcap : 1 << 20;
            char *nt;
            while (tn + nn + 2 > nc) nc *= 2;
            if (!(nt = (char *)realloc(text, nc))) {
              free(norm);
              free(sp);
              free(src);
              rc = cli_fail(cmd, "out of memory");
              break;
            }
            text = nt;
            tcap = nc;
          }
          memcpy(text + tn, norm, nn);
          tn += nn;
          text[tn++] = '\n';
          text[tn] = 0;
        }
        free(norm);
        nbytes += nn + 1;
        taken++;
      }
      free(sp);
      free(src);
    }
    p = nl ? nl + 1 : end;
  }
  if (tf) {
    if (fclose(tf) && rc == CLI_OK) rc = cli_fail(cmd, "writing %s: %s", text_out, strerror(errno));
    tf = NULL;
  }
  if (rc == CLI_OK && !taken) rc = cli_fail(cmd, "%s has no records of split '%s'", pos[0], split_s);
  if (rc == CLI_OK) fprintf(stderr, "mlsys %s: %ld functions (%zu bytes normalized)\n", cmd, taken, nbytes);
  if (rc == CLI_OK && out) {
    mlsys_contracode_sp *m = NULL;
    if (mlsys_contracode_sp_train(text, tn, &o, &m) != MLSYS_OK) {
      rc = cli_fail(cmd, "training: %s", mlsys_last_error());
    } else {
      if (mlsys_contracode_sp_save(m, out) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
      else fprintf(stderr, "mlsys %s: %d pieces -> %s\n", cmd, mlsys_contracode_sp_size(m), out);
      mlsys_contracode_sp_free(m);
    }
  }
done:
  free(text);
  free(buf);
  free(ucopy);
  return rc;
}
