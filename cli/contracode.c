/* cli/contracode.c — `mlsys contracode`: ContraCode (mlsys_contracode.h). parse reads a JavaScript file with the
   ES2020 front end and reports its node counts and functions (the units ContraCode works on); print re-emits it
   compact or beautified. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

int contracode_tokenize_cmd(int argc, char **argv);   /* cli/contracode_tokenize.c */

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
    "  tokenize --model M.model FILE|- [--sample [--alpha A] [--seed S]] [--json]\n"
    "        SentencePiece unigram ids of each line, as spm_encode --output_format=id prints them\n"
    "        (mlsys contracode tokenize --help has the details).\n"
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
  mlsys_contracode_js_print_opts o = {beautify, 2};
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

int cmd_contracode(int argc, char **argv) {
  const char *verb = argc > 2 ? argv[2] : NULL;
  const char *module = NULL, *json = NULL, *beautify = NULL, *indent = NULL, *help = NULL, *pos[1];
  cli_opt opts[] = {{"--module", 0, &module}, {"--json", 0, &json}, {"--beautify", 0, &beautify},
                    {"--indent", 1, &indent}, {"--help", 0, &help}};
  int npos = 0, rc;
  if (!verb || !strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
    fputs(contracode_help, verb ? stdout : stderr);
    return verb ? CLI_OK : CLI_USAGE;
  }
  if (!strcmp(verb, "tokenize")) return contracode_tokenize_cmd(argc, argv);
  if (strcmp(verb, "parse") && strcmp(verb, "print"))
    return cli_usage_error("contracode", "unknown verb '%s' (parse, print or tokenize)", verb);
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof *opts), "contracode", pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_help, stdout);
    return CLI_OK;
  }
  if (npos != 1) return cli_usage_error("contracode", "%s needs one FILE.js", verb);
  if (!strcmp(verb, "parse")) {
    if (beautify || indent) return cli_usage_error("contracode", "--beautify/--indent are options of print");
    return contracode_parse(pos[0], module != NULL, json != NULL);
  }
  if (json) return cli_usage_error("contracode", "--json is an option of parse");
  return contracode_print(pos[0], module != NULL, beautify != NULL, indent);
}
