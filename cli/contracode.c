/* cli/contracode.c — `mlsys contracode`: ContraCode (mlsys_contracode.h). parse reads a JavaScript file with the
   ES2020 front end and reports its node counts and functions (the units ContraCode works on); print re-emits it
   compact or beautified. check is the semantic oracle: it runs a library's battery of API calls in Node on the
   original and on each semantics-preserving transform of it (tests/oracle/run_battery.js) and compares the outputs. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int contracode_tokenize_cmd(int argc, char **argv);   /* cli/contracode_tokenize.c */
int contracode_augment_cmd(int argc, char **argv);    /* cli/contracode_augment.c */
int contracode_eval_cmd(int argc, char **argv);       /* cli/contracode_eval.c */
int contracode_functions_cmd(int argc, char **argv);  /* cli/contracode_functions.c */
int contracode_vocab_cmd(int argc, char **argv);      /* cli/contracode_functions.c */
int contracode_train_cmd(int argc, char **argv);      /* cli/contracode_train.c */
int contracode_embed_cmd(int argc, char **argv);      /* cli/contracode_train.c */

static const char *contracode_help =
    "usage: mlsys contracode <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  parse FILE.js [--module] [--json]\n"
    "        Parses FILE (ECMAScript 2020 plus public class fields; a script unless --module) and prints the number\n"
    "        of AST nodes, the count of each ESTree node kind, and every function (declarations, expressions,\n"
    "        arrows, methods) with its line, byte span, line count and name. A syntax error prints\n"
    "        FILE:LINE:COL: what and exits 1.\n"
    "  print FILE.js [--module] [--beautify] [--indent N]\n"
    "        Prints FILE re-emitted from its AST: compact (minimal whitespace, the default) or beautified (one\n"
    "        statement per line, N spaces per level, default 2). Comments are dropped; literals keep their\n"
    "        spelling; parentheses follow operator precedence.\n"
    "\n"
    "  check FILE.js [--battery underscore|acorn|marked|auto] [--transform NAME] [--negative-control] [--json]\n"
    "        The semantic oracle: runs FILE's battery of API calls in Node (tests/oracle/run_battery.js; Math.random\n"
    "        seeded) on FILE as it is and on each semantics-preserving transform of it (compact, beautify), and\n"
    "        compares the outputs call by call. Prints pass/FAIL per transform and the first call that differs; exit 1\n"
    "        on any difference or if FILE does not parse. --negative-control adds a deliberately wrong transform\n"
    "        (every binary `+` becomes `-`) that must be reported as a mismatch. --transform NAME runs one transform\n"
    "        only: any of the above, the program rewrites (rename-insert, mangle, fold, dce, unused, seq-cond, props,\n"
    "        booleans, compress, hoist-vars, arguments, template-concat), negative-control, mutant-first-plus (only\n"
    "        the first `+` becomes `-`), or the unsafe passes bool-int and drop-console (run only when named);\n"
    "        print-styles runs terser's output options: quote styles fewer, single, double, original with quoted\n"
    "        keys and braces (fewer, fewer+keys+braces, single+braces, single+keys, double, double+keys+braces,\n"
    "        original+braces, original+keys; single ones beautified) and props-keep-quoted.\n"
    "        Environment: MLSYS_NODE (default node), MLSYS_CONTRACODE_ORACLE (the battery script).\n"
    "\n"
    "  tokenize --model M.model FILE|- [--sample [--alpha A] [--seed S]] [--json]\n"
    "        SentencePiece unigram ids of each line, as spm_encode --output_format=id prints them\n"
    "        (mlsys contracode tokenize --help has the details).\n"
    "\n"
    "  augment FILE.js [--n N] [--transforms LIST | --semantic-only] [--seed S] [--functions] [--out DIR] [--json]\n"
    "        Variants of FILE (or of each of its functions) by transform dropout, ContraCode's Alg. 1\n"
    "        (mlsys contracode augment --help has the details).\n"
    "\n"
    "  eval [--lib [NAME=]DIR]... [--scorer edit|bow] [--vocab M.model] [--adversarial N] [--faithful-pairs] [--json]\n"
    "        Zero-shot clone detection on the offline set (lodash-es, underscore, ramda modules): natural and\n"
    "        adversarial AUROC, AP, accuracy (mlsys contracode eval --help has the details).\n"
    "  functions [FILE.js ...] [--files-from LIST] [--jsonl] [--manifest OUT.json]\n"
    "        Every function of the files as a program unit, filtered and deduplicated as the offline corpus is\n"
    "        (scripts/contracode-corpus.sh; mlsys contracode functions --help has the details).\n"
    "  vocab FUNCS.jsonl [--out M.model] [--text-out T.txt] [--vocab-size V] [--max-functions N]\n"
    "        The unigram vocabulary trained on those units (mlsys contracode vocab --help has the details).\n"
    "  train --functions FUNCS.jsonl|FILE.js --out CKPT [--encoder E] [--vocab M.model] [--steps N] ... [--json]\n"
    "        MoCo pre-training of a code encoder on two augmented views of each function\n"
    "        (mlsys contracode train --help has the details).\n"
    "  embed --model CKPT --vocab M.model FILE.js|FUNCS.jsonl [--project] [--json]\n"
    "        One vector per function from a trained encoder.\n"
    "\n"
    "parse --json keys: file, bytes, nodes, kinds ({Kind: count}), functions ([{kind, name, line, start, end,\n"
    "lines}]); kind is declaration, expression, arrow or method.\n";

static int contracode_load(const char *cmd, const char *path, int module, mlsys_contracode_js_ast *ast) {
  char *src;
  size_t n;
  mlsys_status st;
  if (mlsys_read_file(path, &src, &n) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  st = mlsys_contracode_js_parse(src, n, module ? MLSYS_CONTRACODE_JS_MODULE : MLSYS_CONTRACODE_JS_SCRIPT, ast);
  free(src);
  if (st != MLSYS_OK) return cli_fail(cmd, "%s:%s", path, mlsys_last_error());
  return CLI_OK;
}

static int contracode_line_of(const mlsys_contracode_js_ast *a, uint32_t off) {
  uint32_t i;
  int line = 1;
  for (i = 0; i < off && i < a->src_len; i++)
    if (a->text[i] == '\n' || (a->text[i] == '\r' && !(i + 1 < a->src_len && a->text[i + 1] == '\n'))) line++;
  return line;
}

static int contracode_parse(const char *path, int module, int json) {
  static const char *const fkind[] = {"?", "declaration", "expression", "arrow", "method"};
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *f = NULL;
  long counts[MLSYS_CONTRACODE_JS_KIND_COUNT], total = 0;
  int nf = 0, i, k, rc;
  if ((rc = contracode_load("contracode parse", path, module, &a))) return rc;
  if (mlsys_contracode_js_functions(&a, &f, &nf) != MLSYS_OK) {
    mlsys_contracode_js_free(&a);
    return cli_fail("contracode parse", "%s", mlsys_last_error());
  }
  mlsys_contracode_js_count_kinds(&a, counts);
  for (k = 1; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++) total += counts[k];
  if (json) {
    printf("{\"file\": ");
    cli_json_str(stdout, path);
    printf(", \"bytes\": %zu, \"nodes\": %ld, \"kinds\": {", a.src_len, total);
    for (k = 1, i = 0; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++)
      if (counts[k]) printf("%s\"%s\": %ld", i++ ? ", " : "", mlsys_contracode_js_kind_name(k), counts[k]);
    printf("}, \"functions\": [");
    for (i = 0; i < nf; i++) {
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(f[i].name_end - f[i].name_start), a.text + f[i].name_start);
      printf("%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "", fkind[f[i].kind]);
      cli_json_str(stdout, name);
      printf(", \"line\": %d, \"start\": %u, \"end\": %u, \"lines\": %d}", contracode_line_of(&a, f[i].start),
             f[i].start, f[i].end, f[i].nlines);
    }
    printf("]}\n");
  } else {
    printf("%s: %zu bytes, %ld nodes, %d functions\n", path, a.src_len, total, nf);
    for (k = 1; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++)
      if (counts[k]) printf("  %-26s %ld\n", mlsys_contracode_js_kind_name(k), counts[k]);
    if (nf) printf("functions (line, bytes, lines, kind, name):\n");
    for (i = 0; i < nf; i++)
      printf("  %6d  %u-%u  %d  %s  %.*s\n", contracode_line_of(&a, f[i].start), f[i].start, f[i].end, f[i].nlines,
             fkind[f[i].kind], (int)(f[i].name_end - f[i].name_start), a.text + f[i].name_start);
  }
  free(f);
  mlsys_contracode_js_free(&a);
  return CLI_OK;
}

static int contracode_print(const char *path, int module, int beautify, const char *indent) {
  mlsys_contracode_js_ast a;
  mlsys_contracode_js_print_opts o = {beautify, 2, 0, 0, 0};
  char *out;
  size_t n;
  int rc;
  if (indent) {
    char *end;
    long v = strtol(indent, &end, 10);
    if (*end || v < 1 || v > 16) return cli_usage_error("contracode print", "--indent must be 1..16, got '%s'", indent);
    o.indent = (int)v;
  }
  if ((rc = contracode_load("contracode print", path, module, &a))) return rc;
  if (mlsys_contracode_js_print(&a, &o, &out, &n) != MLSYS_OK) {
    mlsys_contracode_js_free(&a);
    return cli_fail("contracode print", "%s", mlsys_last_error());
  }
  fwrite(out, 1, n, stdout);
  if (!beautify && n) fputc('\n', stdout);
  free(out);
  mlsys_contracode_js_free(&a);
  return CLI_OK;
}

/* ---- check: the semantic oracle ---- */

/* A transform rewrites the parsed library into new source. It may edit ast (the negative control does) but must
   leave it as it found it. */
typedef mlsys_status (*contracode_xform_fn)(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note,
                                            size_t note_len);

static mlsys_status contracode_x_compact(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  mlsys_contracode_js_print_opts o = {0, 2, 0, 0, 0};
  (void)note, (void)nl;
  return mlsys_contracode_js_print(ast, &o, out, n);
}

static mlsys_status contracode_x_beautify(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  mlsys_contracode_js_print_opts o = {1, 2, 0, 0, 0};
  (void)note, (void)nl;
  return mlsys_contracode_js_print(ast, &o, out, n);
}

/* Deliberately wrong transforms, to show the oracle can fail. Binary `+` becomes `-`: every one (the negative
   control, which no library's battery can miss), or only the first in source order (a single mutant, which may be
   an equivalent one: in marked 4.2.3 the first `+` builds a cache key, and a broken key only loses the cache).
   Kinds and operators are looked up by name through the public API. */
static mlsys_status contracode_plus_to_minus(mlsys_contracode_js_ast *ast, int all, char **out, size_t *n, char *note,
                                             size_t nl) {
  mlsys_contracode_js_print_opts o = {0, 2, 0, 0, 0};
  int k, bin = 0, plus = 0, minus = 0, best = 0, count = 0, i;
  uint8_t *saved;
  mlsys_status st;
  for (k = 1; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++)
    if (!strcmp(mlsys_contracode_js_kind_name(k), "BinaryExpression")) bin = k;
  for (k = 1; k < 256 && (!plus || !minus); k++) {
    if (!plus && !strcmp(mlsys_contracode_js_op_str(k), "+")) plus = k;
    if (!minus && !strcmp(mlsys_contracode_js_op_str(k), "-")) minus = k;
  }
  for (i = 1; i < ast->nnodes; i++)
    if (ast->nodes[i].kind == bin && ast->nodes[i].op == plus) {
      count++;
      if (!best || ast->nodes[i].start < ast->nodes[best].start) best = i;
    }
  if (!bin || !plus || !minus || !best)
    return mlsys_set_error(MLSYS_ERR_ARG, "this transform needs a binary '+' and the file has none");
  if (!(saved = (uint8_t *)malloc((size_t)ast->nnodes))) return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  for (i = 1; i < ast->nnodes; i++) {
    saved[i] = ast->nodes[i].op;
    if (ast->nodes[i].kind == bin && ast->nodes[i].op == plus && (all || i == best)) ast->nodes[i].op = (uint8_t)minus;
  }
  if (all)
    snprintf(note, nl, "%d binary '+' became '-'", count);
  else
    snprintf(note, nl, "'+' at line %d became '-'", contracode_line_of(ast, ast->nodes[best].start));
  st = mlsys_contracode_js_print(ast, &o, out, n);
  for (i = 1; i < ast->nnodes; i++) ast->nodes[i].op = saved[i];
  free(saved);
  return st;
}

static mlsys_status contracode_x_negative(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  return contracode_plus_to_minus(ast, 1, out, n, note, nl);
}

static mlsys_status contracode_x_first_plus(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  return contracode_plus_to_minus(ast, 0, out, n, note, nl);
}

/* The program rewrites run on a fresh parse of the source (they change the tree in place, and the table's other
   transforms print the original tree). */
typedef mlsys_status (*contracode_rewrite_fn)(mlsys_contracode_js_ast *ast, char *note, size_t nl);
static mlsys_status contracode_rewritten(const mlsys_contracode_js_ast *orig, contracode_rewrite_fn fn, char **out,
                                         size_t *n, char *note, size_t nl) {
  mlsys_contracode_js_ast b;
  mlsys_contracode_js_print_opts o = {0, 2, 0, 0, 0};
  mlsys_status st = mlsys_contracode_js_parse(orig->text, orig->src_len, orig->module ? MLSYS_CONTRACODE_JS_MODULE : 0, &b);
  if (st != MLSYS_OK) return st;
  if ((st = fn(&b, note, nl)) == MLSYS_OK) st = mlsys_contracode_js_print(&b, &o, out, n);
  mlsys_contracode_js_free(&b);
  return st;
}

/* T1 on every simple parameter of every function (fresh names p_<k>), then T2 (`var v_<k>;`) in each function with
   a block body; functions in eval/with scopes are skipped, as the transforms refuse them. */
static mlsys_status contracode_rw_rename_insert(mlsys_contracode_js_ast *b, char *note, size_t nl) {
  mlsys_contracode_fn_span *f = NULL;
  mlsys_contracode_scopes sc;
  int nf = 0, k = 0, renamed = 0, inserted = 0;
  mlsys_status st = mlsys_contracode_js_functions(b, &f, &nf);
  if (st != MLSYS_OK) return st;
  for (int i = 0; i < nf; i++) {
    int *pp = NULL, np = 0;
    char nm[32];
    memset(&sc, 0, sizeof sc);
    if (mlsys_contracode_scope_build(b, &sc) != MLSYS_OK) { free(f); return mlsys_last_status(); }
    st = mlsys_contracode_scope_params(&sc, f[i].node, &pp, &np);
    mlsys_contracode_scope_free(&sc);
    if (st != MLSYS_OK) { mlsys_clear_error(); continue; }
    free(pp);
    for (int j = 0; j < np; j++) {
      do snprintf(nm, sizeof nm, "p_%d", k++); while (!mlsys_contracode_name_is_fresh(b, f[i].node, nm));
      if (mlsys_contracode_rename_param(b, f[i].node, j, nm) == MLSYS_OK) renamed++;
      else mlsys_clear_error();   /* destructured parameter, unsafe scope: left as it is */
    }
    do snprintf(nm, sizeof nm, "v_%d", k++); while (!mlsys_contracode_name_is_fresh(b, f[i].node, nm));
    if (mlsys_contracode_insert_var(b, f[i].node, nm) == MLSYS_OK) inserted++;
    else mlsys_clear_error();   /* an arrow with an expression body, an unsafe scope */
  }
  free(f);
  snprintf(note, nl, "%d parameters renamed, %d vars inserted", renamed, inserted);
  return MLSYS_OK;
}

static mlsys_status contracode_rw_mangle(mlsys_contracode_js_ast *b, char *note, size_t nl) {
  int n = 0;
  mlsys_status st = mlsys_contracode_mangle(b, &n);
  if (st == MLSYS_OK) snprintf(note, nl, "%d bindings mangled", n);
  return st;
}

static mlsys_status contracode_x_rename_insert(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  return contracode_rewritten(ast, contracode_rw_rename_insert, out, n, note, nl);
}

static mlsys_status contracode_x_mangle(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) {
  return contracode_rewritten(ast, contracode_rw_mangle, out, n, note, nl);
}

/* The compress passes (T4-T8), each alone on the whole file, and all of them in a row. */
#define CONTRACODE_X_PASS(name, call)                                                                          \
  static mlsys_status contracode_rw_##name(mlsys_contracode_js_ast *b, char *note, size_t nl) {               \
    int k = 0;                                                                                                  \
    mlsys_status st = call(b, &k);                                                                              \
    if (st == MLSYS_OK) snprintf(note, nl, "%d rewrites", k);                                                   \
    return st;                                                                                                  \
  }                                                                                                             \
  static mlsys_status contracode_x_##name(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) { \
    return contracode_rewritten(ast, contracode_rw_##name, out, n, note, nl);                                   \
  }
CONTRACODE_X_PASS(fold, mlsys_contracode_fold)
CONTRACODE_X_PASS(dce, mlsys_contracode_dce)
CONTRACODE_X_PASS(unused, mlsys_contracode_unused)
CONTRACODE_X_PASS(seq_cond, mlsys_contracode_seq_cond)
CONTRACODE_X_PASS(props, mlsys_contracode_props)
CONTRACODE_X_PASS(booleans, mlsys_contracode_booleans)
CONTRACODE_X_PASS(compress, mlsys_contracode_compress)
CONTRACODE_X_PASS(hoist_vars, mlsys_contracode_hoist_vars)
CONTRACODE_X_PASS(arguments, mlsys_contracode_arguments)
CONTRACODE_X_PASS(template_concat, mlsys_contracode_template_concat)
CONTRACODE_X_PASS(bool_int, mlsys_contracode_bool_int)
CONTRACODE_X_PASS(drop_console, mlsys_contracode_drop_console)

static mlsys_status contracode_props_keep_quoted(mlsys_contracode_js_ast *b, int *k) {
  return mlsys_contracode_props_opt(b, 1, k);
}
CONTRACODE_X_PASS(props_keep_quoted, contracode_props_keep_quoted)

/* terser's output options (print styles): each quote style twice, with and without quoted keys and with braces on
   in one of the two, so every pair of the three settings occurs (8 runs instead of 16); single quotes beautified. */
#define CONTRACODE_X_STYLE(name, beautify, quote, keys, braces)                                                  \
  static mlsys_status contracode_x_##name(mlsys_contracode_js_ast *ast, char **out, size_t *n, char *note, size_t nl) { \
    mlsys_contracode_js_print_opts o = {beautify, 2, braces, MLSYS_CONTRACODE_JS_QUOTE_##quote, keys};              \
    (void)note, (void)nl;                                                                                       \
    return mlsys_contracode_js_print(ast, &o, out, n);                                                          \
  }
CONTRACODE_X_STYLE(fewer, 0, FEWER, 0, 0)
CONTRACODE_X_STYLE(fewer_keys_braces, 0, FEWER, 1, 1)
CONTRACODE_X_STYLE(single_braces, 1, SINGLE, 0, 1)
CONTRACODE_X_STYLE(single_keys, 1, SINGLE, 1, 0)
CONTRACODE_X_STYLE(double, 0, DOUBLE, 0, 0)
CONTRACODE_X_STYLE(double_keys_braces, 0, DOUBLE, 1, 1)
CONTRACODE_X_STYLE(original_braces, 0, ORIGINAL, 0, 1)
CONTRACODE_X_STYLE(original_keys, 0, ORIGINAL, 1, 0)

/* Every semantics-preserving transform the oracle checks, by name (Table 2.1's compress/beautify today; the program
   rewrites join this table as they are written). A hidden entry runs only when asked for. */
static const struct {
  const char *name;
  contracode_xform_fn fn;
  int hidden;
} contracode_xforms[] = {
    {"compact", contracode_x_compact, 0},
    {"beautify", contracode_x_beautify, 0},
    {"rename-insert", contracode_x_rename_insert, 0},   /* T1 + T2 */
    {"mangle", contracode_x_mangle, 0},                 /* T3 */
    {"negative-control", contracode_x_negative, 1},   /* run by --negative-control or --transform */
    {"mutant-first-plus", contracode_x_first_plus, 2}, /* run by --transform only */
    {"fold", contracode_x_fold, 0},                     /* T4 */
    {"dce", contracode_x_dce, 0},                       /* T5 */
    {"unused", contracode_x_unused, 0},                 /* T5b */
    {"seq-cond", contracode_x_seq_cond, 0},             /* T7 */
    {"props", contracode_x_props, 0},                   /* T8 */
    {"booleans", contracode_x_booleans, 0},             /* T6 */
    {"compress", contracode_x_compress, 0},             /* all six in a row */
    {"hoist-vars", contracode_x_hoist_vars, 0},         /* T9 */
    {"arguments", contracode_x_arguments, 0},           /* T10 */
    {"template-concat", contracode_x_template_concat, 0},   /* the safe form */
    {"bool-int", contracode_x_bool_int, 2},             /* T6u, unsafe: a second real negative control */
    {"drop-console", contracode_x_drop_console, 2},     /* changes I/O */
    /* print styles: run by --transform print-styles (all of them) or by name */
    {"fewer", contracode_x_fewer, 3},
    {"fewer+keys+braces", contracode_x_fewer_keys_braces, 3},
    {"single+braces", contracode_x_single_braces, 3},
    {"single+keys", contracode_x_single_keys, 3},
    {"double", contracode_x_double, 3},
    {"double+keys+braces", contracode_x_double_keys_braces, 3},
    {"original+braces", contracode_x_original_braces, 3},
    {"original+keys", contracode_x_original_keys, 3},
    {"props-keep-quoted", contracode_x_props_keep_quoted, 3},
};
#define CONTRACODE_NXFORMS ((int)(sizeof contracode_xforms / sizeof *contracode_xforms))

/* A run of the battery that does not finish in this long is stopped: a transform that makes the library loop
   forever is a failure, not a hang. No test gets near it (a battery runs in about a second). */
#define CONTRACODE_ORACLE_LIMIT_S 300

/* Runs `node ORACLE LIB --battery B > out 2> err`. CLI_OK when node exited 0. */
static int contracode_run_oracle(const char *cmd, const char *node, const char *oracle, const char *lib,
                                 const char *battery, const char *out, const char *err) {
  pid_t pid;
  int status = 0;
  long waited_ms = 0;
  fflush(stdout);
  fflush(stderr);
  if ((pid = fork()) < 0) return cli_fail(cmd, "cannot start %s: %s", node, strerror(errno));
  if (pid == 0) {
    FILE *o = freopen(out, "w", stdout), *e = freopen(err, "w", stderr);
    if (!o || !e) _exit(126);
    execlp(node, node, oracle, lib, "--battery", battery, (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", node, strerror(errno));
    _exit(127);
  }
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    struct timespec ts = {0, 20000000};
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return cli_fail(cmd, "waiting for %s: %s", node, strerror(errno));
    if (waited_ms >= CONTRACODE_ORACLE_LIMIT_S * 1000L) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return cli_fail(cmd, "the battery on %s ran past %d s and was stopped", lib, CONTRACODE_ORACLE_LIMIT_S);
    }
    nanosleep(&ts, NULL);
    waited_ms += 20;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return CLI_OK;
  {
    char *msg = NULL;
    size_t n = 0;
    mlsys_read_file(err, &msg, &n);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      cli_fail(cmd, "cannot run %s (is Node installed? MLSYS_NODE names it)", node);
    else
      cli_fail(cmd, "the battery on %s failed (%s %d): %.*s", lib, WIFEXITED(status) ? "exit" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), (int)(n > 400 ? 400 : n), msg ? msg : "");
    free(msg);
  }
  return CLI_ERR;
}

/* The oracle's output split into lines in place: "#battery\tB" then "CALL\tJSON" per call. */
typedef struct {
  char *buf;
  char **line;
  int n;
} contracode_lines;

static int contracode_read_lines(const char *path, contracode_lines *l) {
  size_t n, i;
  int cap = 64;
  memset(l, 0, sizeof *l);
  if (mlsys_read_file(path, &l->buf, &n) != MLSYS_OK) return -1;
  l->line = (char **)malloc(sizeof(char *) * (size_t)cap);
  if (!l->line) return -1;
  for (i = 0; i < n;) {
    size_t j = i;
    while (j < n && l->buf[j] != '\n') j++;
    l->buf[j] = 0;   /* mlsys_read_file leaves room for a NUL at n */
    if (l->n == cap) {
      char **g = (char **)realloc(l->line, sizeof(char *) * (size_t)(cap *= 2));
      if (!g) return -1;
      l->line = g;
    }
    l->line[l->n++] = l->buf + i;
    i = j + 1;
  }
  return 0;
}

/* The call to blame for line i: the original's, unless the transformed run has another call there (a library that
   no longer loads prints "load"): then the transformed run's. */
static void contracode_diff_name(const contracode_lines *o, const contracode_lines *t, int i, char *name, size_t len) {
  const char *lo = i < o->n ? o->line[i] : NULL, *lt = i < t->n ? t->line[i] : NULL, *l;
  size_t no = lo ? strcspn(lo, "\t") : 0, nt = lt ? strcspn(lt, "\t") : 0;
  l = !lo || (lt && (no != nt || memcmp(lo, lt, no))) ? lt : lo;
  snprintf(name, len, "%.*s", (int)strcspn(l, "\t"), l);
}

static void contracode_free_lines(contracode_lines *l) {
  free(l->buf);
  free(l->line);
}

static void contracode_rm_tree(const char *dir, const char *base) {
  static const char *const names[] = {"original.out", "transformed.out", "oracle.err"};
  char p[4200];
  size_t i;
  for (i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/%s", dir, base);
  unlink(p);
  rmdir(dir);
}

static int contracode_write(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(data, 1, n, f) == n;
  if (f && fclose(f)) ok = 0;
  return ok;
}

static int contracode_check(const char *path, const char *battery, const char *only, int negative, int json) {
  static const char *cmd = "contracode check";
  char oracle[4096], dir[4096], lib[4300], orig_out[4300], tr_out[4300], err_out[4300], bat[32];
  const char *node = getenv("MLSYS_NODE"), *env_oracle = getenv("MLSYS_CONTRACODE_ORACLE"), *tmp = getenv("TMPDIR");
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  mlsys_contracode_js_ast a;
  contracode_lines orig;
  int rc, i, failed = 0, ran = 0, first_json = 1;
  if (!node || !*node) node = "node";
  if (env_oracle && *env_oracle)
    snprintf(oracle, sizeof oracle, "%s", env_oracle);
  else if (!cli_repo_file("tests/oracle/run_battery.js", oracle, sizeof oracle))
    return cli_fail(cmd, "cannot find tests/oracle/run_battery.js (run from the repository or set MLSYS_CONTRACODE_ORACLE)");
  if (only) {
    for (i = 0; i < CONTRACODE_NXFORMS && strcmp(contracode_xforms[i].name, only); i++) {}
    if (i == CONTRACODE_NXFORMS && strcmp(only, "print-styles"))
      return cli_usage_error(cmd, "unknown transform '%s' (compact, beautify, rename-insert, mangle, fold, dce, unused, seq-cond, props, booleans, compress, hoist-vars, arguments, template-concat, bool-int, drop-console, negative-control, mutant-first-plus, print-styles or one of them: fewer, fewer+keys+braces, single+braces, single+keys, double, double+keys+braces, original+braces, original+keys, props-keep-quoted)", only);
  }
  if ((rc = contracode_load(cmd, path, 0, &a))) return rc;
  snprintf(dir, sizeof dir, "%s/mlsys-contracode-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    mlsys_contracode_js_free(&a);
    return cli_fail(cmd, "cannot make a temporary directory %s: %s", dir, strerror(errno));
  }
  snprintf(lib, sizeof lib, "%s/%s", dir, base);
  snprintf(orig_out, sizeof orig_out, "%s/original.out", dir);
  snprintf(tr_out, sizeof tr_out, "%s/transformed.out", dir);
  snprintf(err_out, sizeof err_out, "%s/oracle.err", dir);
  /* The original runs as it is on disk (not re-printed): that is the behaviour every transform must keep. */
  if ((rc = contracode_run_oracle(cmd, node, oracle, path, battery, orig_out, err_out))) goto done_nolines;
  if (contracode_read_lines(orig_out, &orig) || orig.n < 2 || strncmp(orig.line[0], "#battery\t", 9)) {
    contracode_free_lines(&orig);
    rc = cli_fail(cmd, "the battery printed nothing usable for %s", path);
    goto done_nolines;
  }
  if (!strncmp(orig.line[1], "load\t", 5)) {   /* nothing to compare against: the original itself fails */
    rc = cli_fail(cmd, "%s does not load in Node: %.300s", path, orig.line[1] + 5);
    contracode_free_lines(&orig);
    goto done_nolines;
  }
  snprintf(bat, sizeof bat, "%s", orig.line[0] + 9);
  if (json) {
    printf("{\"file\": ");
    cli_json_str(stdout, path);
    printf(", \"battery\": \"%s\", \"calls\": %d, \"transforms\": [", bat, orig.n - 1);
  } else {
    printf("%s: battery %s, %d calls\n", path, bat, orig.n - 1);
  }
  for (i = 0; i < CONTRACODE_NXFORMS; i++) {
    char *out = NULL, note[128] = "";
    size_t n = 0;
    contracode_lines tr;
    int j, ndiff = 0, firstdiff = -1;
    if (only ? strcmp(contracode_xforms[i].name, only) && (contracode_xforms[i].hidden != 3 || strcmp(only, "print-styles"))
             : contracode_xforms[i].hidden >= 2 || (contracode_xforms[i].hidden && !negative))
      continue;
    if (contracode_xforms[i].fn(&a, &out, &n, note, sizeof note) != MLSYS_OK) {
      rc = cli_fail(cmd, "transform %s of %s: %s", contracode_xforms[i].name, path, mlsys_last_error());
      break;
    }
    if (!contracode_write(lib, out, n)) {
      free(out);
      rc = cli_fail(cmd, "cannot write %s: %s", lib, strerror(errno));
      break;
    }
    free(out);
    if ((rc = contracode_run_oracle(cmd, node, oracle, lib, bat, tr_out, err_out))) break;
    if (contracode_read_lines(tr_out, &tr)) {
      contracode_free_lines(&tr);
      rc = cli_fail(cmd, "cannot read %s", tr_out);
      break;
    }
    /* Line by line: the calls run in a fixed order, so a missing or extra line is a difference too. */
    for (j = 1; j < orig.n || j < tr.n; j++)
      if (j >= orig.n || j >= tr.n || strcmp(orig.line[j], tr.line[j])) {
        ndiff++;
        if (firstdiff < 0) firstdiff = j;
      }
    ran++;
    if (ndiff) failed++;
    if (json) {
      printf("%s{\"name\": \"%s\", \"pass\": %s, \"bytes\": %zu, \"differ\": %d, \"first\": ", first_json ? "" : ", ",
             contracode_xforms[i].name, ndiff ? "false" : "true", n, ndiff);
      first_json = 0;
      if (firstdiff < 0) {
        printf("null");
      } else {
        char name[256];
        contracode_diff_name(&orig, &tr, firstdiff, name, sizeof name);
        cli_json_str(stdout, name);
      }
      if (note[0]) {
        printf(", \"note\": ");
        cli_json_str(stdout, note);
      }
      printf("}");
    } else {
      printf("  %-18s %s  %d/%d calls equal, %zu bytes%s%s\n", contracode_xforms[i].name, ndiff ? "FAIL" : "pass",
             orig.n - 1 - ndiff, orig.n - 1, n, note[0] ? "; " : "", note);
      if (firstdiff >= 0) {
        const char *o = firstdiff < orig.n ? orig.line[firstdiff] : "(no such call)";
        const char *t = firstdiff < tr.n ? tr.line[firstdiff] : "(no such call)";
        char name[256];
        contracode_diff_name(&orig, &tr, firstdiff, name, sizeof name);
        printf("    first difference: %s\n", name);
        printf("      original:    %.160s\n      transformed: %.160s\n", o, t);
      }
    }
    contracode_free_lines(&tr);
  }
  if (json) printf("], \"ran\": %d, \"failed\": %d}\n", ran, failed);
  else if (!rc) printf("%d of %d transforms preserve the battery's outputs\n", ran - failed, ran);
  contracode_free_lines(&orig);
  if (!rc && failed) rc = CLI_ERR;
done_nolines:
  contracode_rm_tree(dir, base);
  mlsys_contracode_js_free(&a);
  return rc;
}

int cmd_contracode(int argc, char **argv) {
  const char *verb = argc > 2 ? argv[2] : NULL;
  const char *module = NULL, *json = NULL, *beautify = NULL, *indent = NULL, *help = NULL, *pos[1];
  const char *battery = NULL, *transform = NULL, *negative = NULL;
  cli_opt opts[] = {{"--module", 0, &module},     {"--json", 0, &json},           {"--beautify", 0, &beautify},
                    {"--indent", 1, &indent},     {"--help", 0, &help},           {"--battery", 1, &battery},
                    {"--transform", 1, &transform}, {"--negative-control", 0, &negative}};
  int npos = 0, rc;
  if (!verb || !strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
    fputs(contracode_help, verb ? stdout : stderr);
    return verb ? CLI_OK : CLI_USAGE;
  }
  if (!strcmp(verb, "tokenize")) return contracode_tokenize_cmd(argc, argv);
  if (!strcmp(verb, "augment")) return contracode_augment_cmd(argc, argv);
  if (!strcmp(verb, "eval")) return contracode_eval_cmd(argc, argv);
  if (!strcmp(verb, "functions")) return contracode_functions_cmd(argc, argv);
  if (!strcmp(verb, "vocab")) return contracode_vocab_cmd(argc, argv);
  if (!strcmp(verb, "train")) return contracode_train_cmd(argc, argv);
  if (!strcmp(verb, "embed")) return contracode_embed_cmd(argc, argv);
  if (strcmp(verb, "parse") && strcmp(verb, "print") && strcmp(verb, "check"))
    return cli_usage_error("contracode", "unknown verb '%s' (parse, print, check, tokenize, augment, eval, functions, vocab, train or embed)", verb);
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof *opts), "contracode", pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_help, stdout);
    return CLI_OK;
  }
  if (npos != 1) return cli_usage_error("contracode", "%s needs one FILE.js", verb);
  if (!strcmp(verb, "check")) {
    if (module || beautify || indent) return cli_usage_error("contracode", "--module/--beautify/--indent are not options of check");
    if (battery && strcmp(battery, "auto") && strcmp(battery, "underscore") && strcmp(battery, "acorn") &&
        strcmp(battery, "marked"))
      return cli_usage_error("contracode", "--battery must be underscore, acorn, marked or auto, got '%s'", battery);
    return contracode_check(pos[0], battery ? battery : "auto", transform, negative != NULL, json != NULL);
  }
  if (battery || transform || negative) return cli_usage_error("contracode", "--battery/--transform/--negative-control are options of check");
  if (!strcmp(verb, "parse")) {
    if (beautify || indent) return cli_usage_error("contracode", "--beautify/--indent are options of print");
    return contracode_parse(pos[0], module != NULL, json != NULL);
  }
  if (json) return cli_usage_error("contracode", "--json is an option of parse");
  return contracode_print(pos[0], module != NULL, beautify != NULL, indent);
}
