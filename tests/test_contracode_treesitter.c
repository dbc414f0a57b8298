/* tests/test_contracode_treesitter.c — mlsys_contracode.h section 1 against an independent parser (issue 25; spec
   §7.1, §8): tree-sitter 0.20.7 (Debian libtree-sitter-dev) with the JavaScript grammar of the npm package
   tree-sitter-javascript@0.21.4 (its generated src/parser.c and src/scanner.c, ABI 14, MIT; fetched into the
   git-ignored .deps/tree-sitter-javascript by scripts/install-deps.sh and compiled by the Makefile rule of this test,
   never committed). Both parse the Debian-packaged libraries the other contracode tests read (underscore, acorn,
   marked), and must agree on
     - the byte span of every function (declarations, expressions, arrows, methods: our mlsys_contracode_js_functions
       against tree-sitter's function nodes), and
     - the number of nodes of each kind whose tree-sitter CST node and ESTree node correspond one to one (table
       below).
   Kinds left out, and why (tree-sitter's concrete syntax tree is not ESTree):
     ExpressionStatement/EmptyStatement: the init and test of `for (init; test; update)` are expression_statement or
       empty_statement nodes in tree-sitter (plain expressions or nothing in ESTree);
     VariableDeclaration/VariableDeclarator: `for (var x in o)` / `for (const x of a)` has a declaration in ESTree
       but only `kind` and an identifier in tree-sitter's for_in_statement;
     SequenceExpression: tree-sitter nests `a, b, c` as two binary sequence_expression nodes (ESTree: one, flat);
     Property: tree-sitter splits it into pair, method_definition (shared with class methods) and
       shorthand_property_identifier; MethodDefinition likewise (tree-sitter's method_definition is both);
     AssignmentPattern: a default in an object pattern is object_assignment_pattern, elsewhere assignment_pattern,
       and a parameter default in ESTree's FunctionExpression params has no tree-sitter wrapper of its own;
     ChainExpression (tree-sitter marks `?.` with an optional_chain token inside the member/call instead of a
       wrapper), Program, TemplateElement (string fragments), Super, MetaProperty, module nodes (scripts only),
       and tree-sitter-only nodes (parenthesized_expression, arguments, formal_parameters, else_clause, comments).
   Identifier is compared through the sum of the tree-sitter aliases that are ESTree Identifiers, a shorthand
   property counting twice (ESTree's key and value are two Identifier nodes), in scripts only: in a module,
   `import {a}` / `export {a}` has ESTree's two Identifiers (imported/local, local/exported) but one tree-sitter
   identifier. Without tree-sitter the test is
   SKIP_DEP (a failure under CI). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"

#ifdef MLSYS_HAVE_TREE_SITTER
#include <tree_sitter/api.h>
const TSLanguage *tree_sitter_javascript(void);
#endif

#ifdef MLSYS_HAVE_TREE_SITTER
typedef struct {
  const char *path;
  int module;
} ts_file;

static const ts_file ts_files[] = {
    {"/usr/share/javascript/underscore/underscore.js", 0},   /* libjs-underscore */
    {"/usr/share/nodejs/acorn/dist/acorn.js", 0},            /* node-acorn */
    {"/usr/share/nodejs/acorn/dist/acorn.mjs", 1},
    {"/usr/share/nodejs/marked/lib/marked.umd.js", 0},       /* node-marked */
    {"/usr/share/nodejs/marked/lib/marked.cjs", 0},
    {"/usr/share/nodejs/marked/lib/marked.esm.js", 1},
};

#define K(x) MLSYS_CONTRACODE_JS_##x

/* One comparison: the sum of our counts of up to 3 ESTree kinds = the sum of tree-sitter's counts of up to 6 named
   node types, each with a weight. */
typedef struct {
  const char *what;
  int kinds[3];
  const char *ts[6];
  int w[6];
} ts_row;

static const ts_row ts_rows[] = {
    {"FunctionDeclaration", {K(FUNCTION_DECLARATION)}, {"function_declaration", "generator_function_declaration"}, {1, 1}},
    /* ESTree gives every method a FunctionExpression value; tree-sitter's method_definition is the function */
    {"FunctionExpression", {K(FUNCTION_EXPRESSION)}, {"function_expression", "generator_function", "method_definition"}, {1, 1, 1}},
    {"ArrowFunctionExpression", {K(ARROW_FUNCTION_EXPRESSION)}, {"arrow_function"}, {1}},
    /* tree-sitter's call_expression is also a tagged template (arguments: template_string) and import(x) */
    {"Call+TaggedTemplate+ImportExpression", {K(CALL_EXPRESSION), K(TAGGED_TEMPLATE_EXPRESSION), K(IMPORT_EXPRESSION)}, {"call_expression"}, {1}},
    {"NewExpression", {K(NEW_EXPRESSION)}, {"new_expression"}, {1}},
    {"MemberExpression", {K(MEMBER_EXPRESSION)}, {"member_expression", "subscript_expression"}, {1, 1}},
    {"ConditionalExpression", {K(CONDITIONAL_EXPRESSION)}, {"ternary_expression"}, {1}},
    {"Binary+LogicalExpression", {K(BINARY_EXPRESSION), K(LOGICAL_EXPRESSION)}, {"binary_expression"}, {1}},
    {"UnaryExpression", {K(UNARY_EXPRESSION)}, {"unary_expression"}, {1}},
    {"UpdateExpression", {K(UPDATE_EXPRESSION)}, {"update_expression"}, {1}},
    {"AssignmentExpression", {K(ASSIGNMENT_EXPRESSION)}, {"assignment_expression", "augmented_assignment_expression"}, {1, 1}},
    {"AwaitExpression", {K(AWAIT_EXPRESSION)}, {"await_expression"}, {1}},
    {"YieldExpression", {K(YIELD_EXPRESSION)}, {"yield_expression"}, {1}},
    {"ThisExpression", {K(THIS_EXPRESSION)}, {"this"}, {1}},
    {"ObjectExpression", {K(OBJECT_EXPRESSION)}, {"object"}, {1}},
    {"ArrayExpression", {K(ARRAY_EXPRESSION)}, {"array"}, {1}},
    {"ObjectPattern", {K(OBJECT_PATTERN)}, {"object_pattern"}, {1}},
    {"ArrayPattern", {K(ARRAY_PATTERN)}, {"array_pattern"}, {1}},
    {"RestElement", {K(REST_ELEMENT)}, {"rest_pattern"}, {1}},
    {"SpreadElement", {K(SPREAD_ELEMENT)}, {"spread_element"}, {1}},
    {"TemplateLiteral", {K(TEMPLATE_LITERAL)}, {"template_string"}, {1}},
    {"ClassDeclaration", {K(CLASS_DECLARATION)}, {"class_declaration"}, {1}},
    {"ClassExpression", {K(CLASS_EXPRESSION)}, {"class"}, {1}},
    {"ClassBody", {K(CLASS_BODY)}, {"class_body"}, {1}},
    {"Literal", {K(LITERAL)}, {"string", "number", "regex", "true", "false", "null"}, {1, 1, 1, 1, 1, 1}},
    {"Identifier", {K(IDENTIFIER)},
     {"identifier", "property_identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern",
      "statement_identifier", "undefined"},
     {1, 1, 2, 2, 1, 1}},
    {"BlockStatement", {K(BLOCK_STATEMENT)}, {"statement_block"}, {1}},
    {"IfStatement", {K(IF_STATEMENT)}, {"if_statement"}, {1}},
    {"ForStatement", {K(FOR_STATEMENT)}, {"for_statement"}, {1}},
    {"ForIn+ForOfStatement", {K(FOR_IN_STATEMENT), K(FOR_OF_STATEMENT)}, {"for_in_statement"}, {1}},
    {"WhileStatement", {K(WHILE_STATEMENT)}, {"while_statement"}, {1}},
    {"DoWhileStatement", {K(DO_WHILE_STATEMENT)}, {"do_statement"}, {1}},
    {"ReturnStatement", {K(RETURN_STATEMENT)}, {"return_statement"}, {1}},
    {"ThrowStatement", {K(THROW_STATEMENT)}, {"throw_statement"}, {1}},
    {"TryStatement", {K(TRY_STATEMENT)}, {"try_statement"}, {1}},
    {"CatchClause", {K(CATCH_CLAUSE)}, {"catch_clause"}, {1}},
    {"SwitchStatement", {K(SWITCH_STATEMENT)}, {"switch_statement"}, {1}},
    {"SwitchCase", {K(SWITCH_CASE)}, {"switch_case", "switch_default"}, {1, 1}},
    {"BreakStatement", {K(BREAK_STATEMENT)}, {"break_statement"}, {1}},
    {"ContinueStatement", {K(CONTINUE_STATEMENT)}, {"continue_statement"}, {1}},
    {"LabeledStatement", {K(LABELED_STATEMENT)}, {"labeled_statement"}, {1}},
};

/* tree-sitter's named-node counts by type name (ts_node_type returns the grammar's static strings). */
typedef struct {
  const char *type[512];
  long count[512];
  int n;
} ts_counts;

static void ts_counts_add(ts_counts *c, const char *type) {
  int i;
  for (i = 0; i < c->n; i++)
    if (c->type[i] == type || !strcmp(c->type[i], type)) {
      c->count[i]++;
      return;
    }
  if (c->n < 512) {
    c->type[c->n] = type;
    c->count[c->n++] = 1;
  }
}

static long ts_counts_get(const ts_counts *c, const char *type) {
  int i;
  for (i = 0; i < c->n; i++)
    if (!strcmp(c->type[i], type)) return c->count[i];
  return 0;
}

typedef struct {
  uint32_t start, end;
} ts_span;

static int ts_span_cmp(const void *a, const void *b) {
  const ts_span *x = (const ts_span *)a, *y = (const ts_span *)b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int ts_is_function(const char *t) {
  return !strcmp(t, "function_declaration") || !strcmp(t, "generator_function_declaration") ||
         !strcmp(t, "function_expression") || !strcmp(t, "generator_function") || !strcmp(t, "arrow_function") ||
         !strcmp(t, "method_definition");
}

/* Walks the whole tree (iteratively: the cursor keeps the path), counting named nodes and collecting function
   spans into *fs (grown as needed). */
static void ts_walk(TSNode root, ts_counts *c, ts_span **fs, int *nfs, int *cap) {
  TSTreeCursor cur = ts_tree_cursor_new(root);
  for (;;) {
    TSNode nd = ts_tree_cursor_current_node(&cur);
    if (ts_node_is_named(nd)) {
      const char *t = ts_node_type(nd);
      ts_counts_add(c, t);
      if (ts_is_function(t)) {
        if (*nfs == *cap) {
          *cap = *cap ? 2 * *cap : 1024;
          *fs = (ts_span *)realloc(*fs, (size_t)*cap * sizeof **fs);
        }
        (*fs)[*nfs].start = ts_node_start_byte(nd);
        (*fs)[(*nfs)++].end = ts_node_end_byte(nd);
      }
    }
    if (ts_tree_cursor_goto_first_child(&cur)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cur))
      if (!ts_tree_cursor_goto_parent(&cur)) {
        ts_tree_cursor_delete(&cur);
        return;
      }
  }
}

/* Compares one file; returns the number of functions checked (0 if the file is absent). */
static long ts_compare_file(const ts_file *f, long *nodes_checked) {
  char *src = NULL;
  size_t n = 0;
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *ours = NULL;
  int nours = 0, nts = 0, cap = 0, i, r, k;
  long counts[MLSYS_CONTRACODE_JS_KIND_COUNT];
  static ts_counts tc;
  ts_span *tsf = NULL, *of;
  TSParser *p;
  TSTree *tree;
  if (mlsys_read_file(f->path, &src, &n) != MLSYS_OK) return 0;
  REQUIRE_OK(mlsys_contracode_js_parse(src, n, f->module ? MLSYS_CONTRACODE_JS_MODULE : MLSYS_CONTRACODE_JS_SCRIPT, &a));
  mlsys_contracode_js_count_kinds(&a, counts);
  REQUIRE_OK(mlsys_contracode_js_functions(&a, &ours, &nours));

  p = ts_parser_new();
  REQUIRE(ts_parser_set_language(p, tree_sitter_javascript()));
  tree = ts_parser_parse_string(p, NULL, src, (uint32_t)n);
  REQUIRE(tree != NULL);
  if (ts_node_has_error(ts_tree_root_node(tree))) {
    printf("    tree-sitter reports a syntax error in %s\n", f->path);
    CHECK(0);
  }
  memset(&tc, 0, sizeof tc);
  ts_walk(ts_tree_root_node(tree), &tc, &tsf, &nts, &cap);

  for (r = 0; r < (int)(sizeof ts_rows / sizeof ts_rows[0]); r++) {
    long mine = 0, theirs = 0;
    if (f->module && !strcmp(ts_rows[r].what, "Identifier")) continue;   /* see the top comment */
    for (k = 0; k < 3 && ts_rows[r].kinds[k]; k++) mine += counts[ts_rows[r].kinds[k]];
    for (k = 0; k < 6 && ts_rows[r].ts[k]; k++) theirs += ts_rows[r].w[k] * ts_counts_get(&tc, ts_rows[r].ts[k]);
    if (mine != theirs) printf("    %s: %s: ours %ld, tree-sitter %ld\n", f->path, ts_rows[r].what, mine, theirs);
    CHECK(mine == theirs);
    *nodes_checked += mine;
  }

  /* function spans, as sorted multisets */
  of = (ts_span *)malloc((size_t)(nours ? nours : 1) * sizeof *of);
  REQUIRE(of != NULL);
  for (i = 0; i < nours; i++) {
    of[i].start = ours[i].start;
    of[i].end = ours[i].end;
  }
  qsort(of, (size_t)nours, sizeof *of, ts_span_cmp);
  qsort(tsf, (size_t)nts, sizeof *tsf, ts_span_cmp);
  if (nours != nts) printf("    %s: %d functions here, %d in tree-sitter\n", f->path, nours, nts);
  CHECK_EQ_INT(nours, nts);
  for (i = 0, k = 0; i < nours && i < nts; i++)
    if (ts_span_cmp(&of[i], &tsf[i])) {
      if (k++ < 5)
        printf("    %s: function %d: bytes %u-%u here, %u-%u in tree-sitter\n", f->path, i, of[i].start, of[i].end,
               tsf[i].start, tsf[i].end);
    }
  CHECK_EQ_INT(k, 0);

  free(of);
  free(tsf);
  ts_tree_delete(tree);
  ts_parser_delete(p);
  free(ours);
  mlsys_contracode_js_free(&a);
  free(src);
  return nours;
}
#endif

TEST(treesitter_kinds_and_function_spans_agree) {
#ifndef MLSYS_HAVE_TREE_SITTER
  SKIP_DEP("built without tree-sitter: needs libtree-sitter-dev and .deps/tree-sitter-javascript (make deps), then a rebuild");
#else
  long fns = 0, nodes = 0;
  int i, files = 0;
  for (i = 0; i < (int)(sizeof ts_files / sizeof ts_files[0]); i++) {
    long got = ts_compare_file(&ts_files[i], &nodes);
    files += got > 0;
    fns += got;
  }
  if (!files) SKIP_DEP("none of the Debian JavaScript files is installed (libjs-underscore node-acorn node-marked)");
  printf("    %d files, %ld functions, %ld nodes of %d kinds compared\n", files, fns, nodes,
         (int)(sizeof ts_rows / sizeof ts_rows[0]));
  CHECK(fns > 500);
#endif
}

/* The tree-sitter side's walk and counting on a snippet counted by hand, so that a walker that skipped nodes cannot
   agree with the front end by accident. */
TEST(treesitter_counts_a_snippet_by_hand) {
#ifndef MLSYS_HAVE_TREE_SITTER
  SKIP_DEP("built without tree-sitter: needs libtree-sitter-dev and .deps/tree-sitter-javascript (make deps), then a rebuild");
#else
  static const char src[] = "function f(a){return a.b(x=>x+1,{c(){},d})}\nvar o={get g(){return 1}};class C{m(){}}";
  static ts_counts tc;
  ts_span *fs = NULL;
  int nfs = 0, cap = 0;
  TSParser *p = ts_parser_new();
  TSTree *tree;
  REQUIRE(ts_parser_set_language(p, tree_sitter_javascript()));
  tree = ts_parser_parse_string(p, NULL, src, (uint32_t)strlen(src));
  memset(&tc, 0, sizeof tc);
  ts_walk(ts_tree_root_node(tree), &tc, &fs, &nfs, &cap);
  CHECK_EQ_INT((int)ts_counts_get(&tc, "function_declaration"), 1);
  CHECK_EQ_INT((int)ts_counts_get(&tc, "arrow_function"), 1);
  CHECK_EQ_INT((int)ts_counts_get(&tc, "method_definition"), 3);   /* c(){}, get g(){}, m(){} */
  CHECK_EQ_INT((int)ts_counts_get(&tc, "shorthand_property_identifier"), 1);   /* d */
  CHECK_EQ_INT(nfs, 5);
  free(fs);
  ts_tree_delete(tree);
  ts_parser_delete(p);
#endif
}

TEST_MAIN()
