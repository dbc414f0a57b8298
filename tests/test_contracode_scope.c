/* tests/test_contracode_scope.c — scope analysis and the first transforms of mlsys_contracode.h (sections 2-3).
   Expected answers: hand-counted bindings and references of small programs (shadowing, hoisting, closures,
   `arguments`, labels, TDZ, destructuring, named function expressions, eval/with marking); spec §7.4 items 5-6
   (T1 rename-param and T2 insert-var outputs, byte for byte); and over the Debian-packaged corpus the transforms
   keep every output parseable and the program's set of free names unchanged. */
#define MLSYS_CONTRACODE_IMPLEMENTATION
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include <unistd.h>

typedef struct {
  mlsys_contracode_js_ast a;
  mlsys_contracode_scopes s;
  int ok;
} prog;
static void prog_open(prog *p, const char *src, int flags) {
  memset(p, 0, sizeof *p);
  p->ok = mlsys_contracode_js_parse(src, strlen(src), flags, &p->a) == MLSYS_OK &&
          mlsys_contracode_scope_build(&p->a, &p->s) == MLSYS_OK;
}
static void prog_close(prog *p) {
  mlsys_contracode_scope_free(&p->s);
  mlsys_contracode_js_free(&p->a);
}
/* The nth binding (in creation order) named name, -1 if none. */
static int bind(const prog *p, const char *name, int nth) {
  int b;
  for (b = 0; b < p->s.nbindings; b++)
    if (p->s.bindings[b].slen == strlen(name) && !memcmp(p->a.text + p->s.bindings[b].str, name, strlen(name)) &&
        nth-- == 0)
      return b;
  return -1;
}
static int nbind(const prog *p, const char *name) {
  int k = 0;
  while (bind(p, name, k) >= 0) k++;
  return k;
}
/* Free references to name. */
static int nfree(const prog *p, const char *name) {
  int i, k = 0;
  for (i = 1; i < p->s.nnodes; i++)
    if (p->s.resolved[i] == -1 && p->a.nodes[i].slen == strlen(name) &&
        !memcmp(p->a.text + p->a.nodes[i].str, name, strlen(name)))
      k++;
  return k;
}
static int scope_kind_of(const prog *p, int b) { return p->s.scopes[p->s.bindings[b].scope].kind; }
/* The i-th function node in source order. */
static int fn_node(const prog *p, int i) {
  mlsys_contracode_fn_span *f;
  int n, r = 0;
  if (mlsys_contracode_js_functions(&p->a, &f, &n) != MLSYS_OK) return 0;
  if (i < n) r = f[i].node;
  free(f);
  return r;
}
static int fn_scope(const prog *p, int i) { return p->s.node_scope[fn_node(p, i)]; }

TEST(contracode_scope_shadowing_and_hoisting) {
  prog p;
  int b;
  prog_open(&p, "var x=1;function f(x){return x}x;{let x=2;x}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(nbind(&p, "x"), 3);
  b = bind(&p, "x", 0);
  CHECK_EQ_INT(p.s.bindings[b].kind, MLSYS_CONTRACODE_BIND_VAR);
  CHECK_EQ_INT(scope_kind_of(&p, b), MLSYS_CONTRACODE_SCOPE_GLOBAL);
  CHECK_EQ_INT(p.s.bindings[b].nrefs, 1);
  b = bind(&p, "x", 2);   /* creation order: global var, f declared, then f's param, then the let */
  CHECK_EQ_INT(p.s.bindings[bind(&p, "x", 1)].kind, MLSYS_CONTRACODE_BIND_PARAM);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "x", 1)].nrefs, 1);
  CHECK_EQ_INT(p.s.bindings[b].kind, MLSYS_CONTRACODE_BIND_LET);
  CHECK_EQ_INT(scope_kind_of(&p, b), MLSYS_CONTRACODE_SCOPE_BLOCK);
  CHECK_EQ_INT(p.s.bindings[b].nrefs, 1);
  prog_close(&p);

  /* var hoisted out of an if block to f; g used before its declaration; c is free */
  prog_open(&p, "function f(){g();a=1;if(c){var a}function g(){}return a}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(nbind(&p, "a"), 1);
  b = bind(&p, "a", 0);
  CHECK_EQ_INT(scope_kind_of(&p, b), MLSYS_CONTRACODE_SCOPE_FUNCTION);
  CHECK_EQ_INT(p.s.bindings[b].scope, fn_scope(&p, 0));
  CHECK_EQ_INT(p.s.bindings[b].nrefs, 2);
  CHECK_EQ_INT(p.s.bindings[b].ndecls, 1);
  b = bind(&p, "g", 0);
  CHECK(b >= 0 && p.s.bindings[b].kind == MLSYS_CONTRACODE_BIND_FUNCTION && p.s.bindings[b].nrefs == 1);
  CHECK_EQ_INT(nfree(&p, "c"), 1);
  CHECK(mlsys_contracode_scope_is_free(&p.s, fn_scope(&p, 0), "c"));
  CHECK(!mlsys_contracode_scope_is_free(&p.s, fn_scope(&p, 0), "a"));
  CHECK(mlsys_contracode_scope_is_free(&p.s, 0, "a"));
  prog_close(&p);

  /* TDZ does not matter for resolution: x before its let is still that let */
  prog_open(&p, "function f(){x;let x=1;{x}}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(nbind(&p, "x"), 1);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "x", 0)].nrefs, 2);
  CHECK_EQ_INT(nfree(&p, "x"), 0);
  prog_close(&p);

  /* block-level function declarations: hoisted in scripts, block-scoped in modules */
  prog_open(&p, "function o(){if(c){function h(){}}h()}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "h", 0)].nrefs, 1);
  prog_close(&p);
  prog_open(&p, "function o(){if(c){function h(){}}h()}", MLSYS_CONTRACODE_JS_MODULE);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "h", 0)].nrefs, 0);
  CHECK_EQ_INT(nfree(&p, "h"), 1);
  prog_close(&p);
}

TEST(contracode_scope_closures_params_catch) {
  prog p;
  int b, *ps, np;
  prog_open(&p, "function mk(){var n=0;return function(){return ++n}}", 0);
  REQUIRE(p.ok);
  b = bind(&p, "n", 0);
  CHECK(b >= 0 && p.s.bindings[b].scope == fn_scope(&p, 0) && p.s.bindings[b].nrefs == 1);
  prog_close(&p);

  prog_open(&p, "function f({a, b: [c, ...d]}, e = a, ...g){try{}catch({m}){m}return c+d}", 0);
  REQUIRE(p.ok);
  REQUIRE(mlsys_contracode_scope_params(&p.s, fn_node(&p, 0), &ps, &np) == MLSYS_OK);
  CHECK_EQ_INT(np, 5);
  if (np == 5) {
    CHECK_EQ_INT(p.s.bindings[ps[0]].param_index, 0);
    CHECK_EQ_INT(p.s.bindings[ps[2]].param_index, 0);   /* d */
    CHECK_EQ_INT(p.s.bindings[ps[3]].param_index, 1);   /* e */
    CHECK_EQ_INT(p.s.bindings[ps[4]].param_index, 2);   /* g */
  }
  free(ps);
  CHECK_EQ_INT(nbind(&p, "b"), 0);   /* a property key, not a binding */
  CHECK_EQ_INT(p.s.bindings[bind(&p, "a", 0)].nrefs, 1);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "c", 0)].nrefs, 1);
  b = bind(&p, "m", 0);
  CHECK(b >= 0 && p.s.bindings[b].kind == MLSYS_CONTRACODE_BIND_CATCH && p.s.bindings[b].nrefs == 1 &&
        scope_kind_of(&p, b) == MLSYS_CONTRACODE_SCOPE_CATCH);
  CHECK(mlsys_contracode_scope_params(&p.s, 1, &ps, &np) == MLSYS_ERR_ARG);
  prog_close(&p);

  /* named function expression: its name is visible inside only; property keys and members are not names */
  prog_open(&p, "var f=function g(){return g};g;var o={k:1,[k2]:2};o.k;({k})", 0);
  REQUIRE(p.ok);
  b = bind(&p, "g", 0);
  CHECK(b >= 0 && p.s.bindings[b].kind == MLSYS_CONTRACODE_BIND_FNAME && p.s.bindings[b].nrefs == 1);
  CHECK_EQ_INT(nfree(&p, "g"), 1);
  CHECK_EQ_INT(nfree(&p, "k"), 1);    /* only the shorthand value */
  CHECK_EQ_INT(nfree(&p, "k2"), 1);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "o", 0)].nrefs, 1);
  prog_close(&p);

  /* classes: declaration in its block, expression name inside only */
  prog_open(&p, "class A{m(){return A}}new A;(class B{x(){return B}});B", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "A", 0)].nrefs, 2);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "B", 0)].nrefs, 1);
  CHECK_EQ_INT(nfree(&p, "B"), 1);
  prog_close(&p);

  /* module imports are bindings; export specifiers reference them */
  prog_open(&p, "import d, {a as b, c} from 'm';import * as ns from 'n';export {b};d(c, ns)", MLSYS_CONTRACODE_JS_MODULE);
  REQUIRE(p.ok);
  CHECK_EQ_INT(nbind(&p, "a"), 0);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "b", 0)].nrefs, 1);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "d", 0)].kind, MLSYS_CONTRACODE_BIND_IMPORT);
  CHECK_EQ_INT(p.s.bindings[bind(&p, "ns", 0)].nrefs, 1);
  CHECK_EQ_INT(scope_kind_of(&p, bind(&p, "c", 0)), MLSYS_CONTRACODE_SCOPE_MODULE);
  prog_close(&p);
}

TEST(contracode_scope_arguments_labels_eval_with) {
  prog p;
  int b;
  prog_open(&p, "function f(a){return arguments[0]}function g(){return()=>arguments}function h(arguments){return "
                "arguments}function k(){}arguments", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 0)].uses_arguments, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 1)].uses_arguments, 1);   /* through the arrow */
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 2)].uses_arguments, 0);   /* a parameter named arguments */
  CHECK_EQ_INT(p.s.bindings[bind(&p, "arguments", 0)].nrefs, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 3)].uses_arguments, 0);
  CHECK_EQ_INT(nfree(&p, "arguments"), 1);                        /* at top level it is a global */
  prog_close(&p);

  /* labels are not bindings nor references */
  prog_open(&p, "a:for(;;){break a}var a=1;b:{continue_:while(1)continue continue_}", 0);
  REQUIRE(p.ok);
  b = bind(&p, "a", 0);
  CHECK(b >= 0 && p.s.bindings[b].nrefs == 0 && p.s.bindings[b].ndecls == 1);
  CHECK_EQ_INT(nfree(&p, "b"), 0);
  CHECK_EQ_INT(nfree(&p, "continue_"), 0);
  prog_close(&p);

  /* direct eval marks its scope chain, not siblings; a local eval is not the global one */
  prog_open(&p, "function f(a){function g(b){eval('a')}function h(c){}}function k(){var eval=1;eval(2)}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.scopes[0].unsafe, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 0)].unsafe, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 1)].unsafe, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 2)].unsafe, 0);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 3)].unsafe, 0);
  prog_close(&p);

  prog_open(&p, "function f(o){var a;with(o){(function(){var q})}}function z(){}", 0);
  REQUIRE(p.ok);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 0)].unsafe, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 1)].unsafe, 1);
  CHECK_EQ_INT(p.s.scopes[fn_scope(&p, 2)].unsafe, 0);
  prog_close(&p);
}

static char *compact(const mlsys_contracode_js_ast *a) {
  char *out = NULL;
  mlsys_contracode_js_print_opts o = {MLSYS_CONTRACODE_JS_TERSE, 0, 0, 0, 0};
  if (mlsys_contracode_js_print(a, &o, &out, NULL) != MLSYS_OK) return NULL;
  return out;
}
/* Parses src, applies T1 (kind 1: param idx → name) or T2 (kind 2) to function 0, returns the compact print or
   NULL with *st the transform's status. */
static char *apply(const char *src, int kind, int idx, const char *name, mlsys_status *st) {
  prog p;
  char *out = NULL;
  prog_open(&p, src, 0);
  if (!p.ok) { *st = MLSYS_ERR_PARSE; prog_close(&p); return NULL; }
  *st = kind == 1 ? mlsys_contracode_rename_param(&p.a, fn_node(&p, 0), idx, name)
                  : mlsys_contracode_insert_var(&p.a, fn_node(&p, 0), name);
  if (*st == MLSYS_OK) out = compact(&p.a);
  prog_close(&p);
  return out;
}

TEST(contracode_transform_spec_outputs) {
  mlsys_status st;
  char *o;
  const char *t1 = "function x(a,b){var c=a+b;function g(a){return a*c}return g(a)}";
  o = apply(t1, 1, 0, "bright_river", &st);
  CHECK_STR(o ? o : "", "function x(bright_river,b){var c=bright_river+b;function g(a){return a*c}return g(bright_river)}");
  free(o);
  o = apply(t1, 1, 0, "c", &st);   /* §7.4 item 5: not fresh */
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not fresh");
  free(o);
  o = apply(t1, 1, 0, "g", &st);   /* a nested function's name */
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  o = apply(t1, 1, 0, "while", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  o = apply(t1, 1, 0, "undefined", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  o = apply(t1, 1, 0, "9a", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  o = apply(t1, 1, 2, "q", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no parameter 2");
  o = apply("function x(a,{b}){return b}", 1, 1, "q", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "destructuring");
  o = apply("function x(a){eval('a')}", 1, 0, "q", &st);
  CHECK(o == NULL && st == MLSYS_ERR_UNSUPPORTED);
  /* shorthand properties expand; defaults and rest; arguments aliasing kept by position */
  o = apply("function x(a,b=a,...c){return{a,c,b:arguments[0]}}", 1, 0, "q", &st);
  CHECK_STR(o ? o : "", "function x(q,b=q,...c){return{a:q,c,b:arguments[0]}}");
  free(o);
  o = apply("function x(a,b=a,...c){var{c=1}=c;return c}", 1, 2, "rest", &st);
  CHECK_STR(o ? o : "", "function x(a,b=a,...rest){var{c:rest=1}=rest;return rest}");
  free(o);
  o = apply("(a=>a+1)", 1, 0, "v", &st);
  CHECK_STR(o ? o : "", "(v)=>v+1;");
  free(o);

  o = apply("function x(a){\"use strict\";return a}", 2, 0, "moon", &st);   /* §7.4 item 6 */
  CHECK_STR(o ? o : "", "function x(a){\"use strict\";var moon;return a}");
  free(o);
  o = apply("function x(a){return a}", 2, 0, "moon", &st);
  CHECK_STR(o ? o : "", "function x(a){var moon;return a}");
  free(o);
  o = apply("function x(){}", 2, 0, "moon", &st);
  CHECK_STR(o ? o : "", "function x(){var moon}");
  free(o);
  o = apply("function x(a){return a}", 2, 0, "a", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  o = apply("(a=>a)", 2, 0, "m", &st);
  CHECK(o == NULL && st == MLSYS_ERR_ARG);
  /* the terse print keeps an empty statement's `;` */
  o = apply("function x(a){for(;;);}", 2, 0, "m", &st);
  CHECK_STR(o ? o : "", "function x(a){var m;for(;;);}");
  free(o);
  o = apply("function x(a){if(a);else lbl:;}", 2, 0, "m", &st);
  CHECK_STR(o ? o : "", "function x(a){var m;if(a);else lbl:;}");
  free(o);
  o = apply("function x(a){if(a){b()}else do c();while(a);}", 2, 0, "m", &st);
  CHECK_STR(o ? o : "", "function x(a){var m;if(a){b()}else do c();while(a)}");
  free(o);
}

static char *mangled(const char *src, int flags, int *n) {
  mlsys_contracode_js_ast a;
  char *out = NULL;
  if (mlsys_contracode_js_parse(src, strlen(src), flags, &a) != MLSYS_OK) return NULL;
  if (mlsys_contracode_mangle(&a, n) == MLSYS_OK) out = compact(&a);
  mlsys_contracode_js_free(&a);
  return out;
}
TEST(contracode_transform_mangle) {
  static const struct { const char *in, *want; int n; } cases[] = {
    /* spec §7.4 item 7 */
    {"function x(maxLine){const section={text:\"\",data};for(;i<maxLine;i+=1){section.text+=lines[i]}}",
     "function x(a){const b={text:\"\",data:data};for(;i<a;i+=1){b.text+=lines[i]}}", 2},
    {"function x(first,second){return first+second+a}", "function x(b,c){return b+c+a}", 2},
    {"function x(p){var q=1;function g(r){return p+r}return g(q)}",
     "function x(a){var b=1;function g(b){return a+b}return g(b)}", 3},
    /* top level untouched; nested scopes; catch; named function expressions keep their name */
    {"var top=1;function f(long){try{}catch(err){return err+long}}", "var top=1;function f(a){try{}catch(b){return b+a}}", 2},
    {"function f(a,b){return function g(b,c){return a+b+c+g}}", "function f(a,b){return function g(b,c){return a+b+c+g}}", 4},
    {"function f(x){var arguments;return x}", "function f(a){var arguments;return a}", 1},
    {"function f(x,y){{let z=x;{let w=z+y}}}", "function f(a,b){{let c=a;{let a=c+b}}}", 4},
    /* eval and with keep every name they can see */
    {"function f(x){eval(\"x\");return function(q){return q}}", "function f(x){eval(\"x\");return function(a){return a}}", 1},
    {"function f(o,x){with(o){x}}", "function f(o,x){with(o){x}}", 0},
    /* a default value does not see the body's declarations */
    {"function f(a=b){var b;return a+b}", "function f(a=b){var c;return a+c}", 2},
    /* a new name never captures a free or outer name */
    {"function f(u,v){return a+b+c+function(w){return u+w+d}}", "function f(e,f){return a+b+c+function(a){return e+a+d}}", 3},
  };
  int i, n;
  for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    char *o = mangled(cases[i].in, 0, &n);
    CHECK_STR(o ? o : "", cases[i].want);
    CHECK_MSG(n == cases[i].n, "case %d: %d renamed, expected %d", i, n, cases[i].n);
    free(o);
  }
}

/* ---- the Debian-packaged corpus (as in tests/test_contracode_js.c) ---- */
static const struct { const char *path; int module; } corpus[] = {
  {"/usr/share/javascript/underscore/underscore.js", 0},      /* libjs-underscore */
  {"/usr/share/nodejs/acorn/dist/acorn.js", 0},                /* node-acorn */
  {"/usr/share/nodejs/marked/lib/marked.esm.js", 1},           /* node-marked */
};
static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }
/* The sorted, newline-joined set of free names of a program; NULL on a parse error. */
static char *free_names(const char *src, size_t n, int flags) {
  prog p;
  char **v, *out;
  int i, k = 0;
  size_t len = 1;
  memset(&p, 0, sizeof p);
  if (mlsys_contracode_js_parse(src, n, flags, &p.a) != MLSYS_OK) return NULL;
  if (mlsys_contracode_scope_build(&p.a, &p.s) != MLSYS_OK) { mlsys_contracode_js_free(&p.a); return NULL; }
  v = (char **)malloc((size_t)p.s.nnodes * sizeof *v);
  for (i = 1; i < p.s.nnodes; i++)
    if (p.s.resolved[i] == -1) {
      v[k] = (char *)malloc(p.a.nodes[i].slen + 1);
      memcpy(v[k], p.a.text + p.a.nodes[i].str, p.a.nodes[i].slen);
      v[k][p.a.nodes[i].slen] = 0;
      len += p.a.nodes[i].slen + 1;
      k++;
    }
  qsort(v, (size_t)k, sizeof *v, cmp_str);
  out = (char *)malloc(len);
  out[0] = 0;
  for (i = 0; i < k; i++) {
    if (!i || strcmp(v[i], v[i - 1])) { strcat(out, v[i]); strcat(out, "\n"); }
  }
  for (i = 0; i < k; i++) free(v[i]);
  free(v);
  prog_close(&p);
  return out;
}

TEST(contracode_transform_corpus) {
  int i, total_renamed = 0, total_vars = 0, total_mangled = 0, nm_renamed = 0;
  for (i = 0; i < (int)(sizeof corpus / sizeof corpus[0]); i++) {
    char *src, *before, *after, *out;
    size_t n;
    int flags = corpus[i].module ? MLSYS_CONTRACODE_JS_MODULE : 0, nf, j, step;
    mlsys_contracode_js_ast a;
    mlsys_contracode_fn_span *f;
    if (mlsys_read_file(corpus[i].path, &src, &n) != MLSYS_OK) {
      SKIP_DEP("%s missing: run scripts/install-deps.sh (libjs-underscore, node-acorn, node-marked)", corpus[i].path);
    }
    before = free_names(src, n, flags);
    REQUIRE(before != NULL);
    REQUIRE(mlsys_contracode_js_parse(src, n, flags, &a) == MLSYS_OK);
    REQUIRE(mlsys_contracode_js_functions(&a, &f, &nf) == MLSYS_OK);
    /* each transform rebuilds the scopes, so bound the work: about 60 functions per file, spread evenly */
    step = nf / 60 + 1;
    for (j = 0; j < nf; j += step) {
      int fn = f[j].node, pi = 0, p;
      char nm[32];
      for (p = a.nodes[fn].b; p; p = a.nodes[p].next, pi++) {
        mlsys_status st;
        snprintf(nm, sizeof nm, "zq_%d_%d", j, pi);
        st = mlsys_contracode_rename_param(&a, fn, pi, nm);
        if (st == MLSYS_OK) total_renamed++;
        else CHECK_MSG(st == MLSYS_ERR_ARG && strstr(mlsys_last_error(), "destructuring"), "%s fn %d param %d: %s",
                       corpus[i].path, j, pi, mlsys_last_error());
      }
      snprintf(nm, sizeof nm, "zv_%d", j);
      if (!(a.nodes[fn].flags & MLSYS_CONTRACODE_JS_F_EXPRESSION)) {
        CHECK_OK(mlsys_contracode_insert_var(&a, fn, nm));
        total_vars++;
      }
    }
    CHECK_OK(mlsys_contracode_mangle(&a, &nm_renamed));
    total_mangled += nm_renamed;
    out = compact(&a);
    REQUIRE(out != NULL);
    {   /* the terse print is the same tree */
      char *c0 = NULL, *c1 = NULL;
      mlsys_contracode_js_ast b;
      CHECK_OK(mlsys_contracode_js_canonical(&a, 0, &c0, NULL));
      if (mlsys_contracode_js_parse(out, strlen(out), flags, &b) == MLSYS_OK) {
        CHECK_OK(mlsys_contracode_js_canonical(&b, 0, &c1, NULL));
        CHECK_MSG(c0 && c1 && !strcmp(c0, c1), "%s: transformed tree differs after print/parse", corpus[i].path);
        mlsys_contracode_js_free(&b);
      }
      free(c0);
      free(c1);
    }
    after = free_names(out, strlen(out), flags);
    CHECK_MSG(after != NULL, "%s: transformed output does not re-parse: %s", corpus[i].path, mlsys_last_error());
    if (after) CHECK_MSG(!strcmp(before, after), "%s: free names changed", corpus[i].path);
    printf("    %s: %d functions, %d params renamed, %d vars inserted, %d bindings mangled so far\n", corpus[i].path,
           nf, total_renamed, total_vars, total_mangled);
    free(after);
    free(out);
    free(before);
    free(f);
    mlsys_contracode_js_free(&a);
    free(src);
  }
  CHECK(total_renamed > 100);
  CHECK(total_mangled > 1000);
}

/* Writes path's program after T1 + T2 on about 60 functions and T3 everywhere to out; the number of bindings T3
   renamed, -1 on failure. */
static int transform_file(const char *path, const char *outpath) {
  char *src, *out;
  size_t n;
  int nf, j, step, ok = 0, nm_renamed = 0;
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *f;
  FILE *fo;
  if (mlsys_read_file(path, &src, &n) != MLSYS_OK) return -1;
  if (mlsys_contracode_js_parse(src, n, 0, &a) != MLSYS_OK) { free(src); return -1; }
  free(src);
  if (mlsys_contracode_js_functions(&a, &f, &nf) != MLSYS_OK) { mlsys_contracode_js_free(&a); return -1; }
  step = nf / 60 + 1;
  for (j = 0; j < nf; j += step) {
    char nm[32];
    int p, pi = 0;
    for (p = a.nodes[f[j].node].b; p; p = a.nodes[p].next, pi++) {
      snprintf(nm, sizeof nm, "zq_%d_%d", j, pi);
      (void)mlsys_contracode_rename_param(&a, f[j].node, pi, nm);   /* destructured ones are refused */
    }
    snprintf(nm, sizeof nm, "zv_%d", j);
    (void)mlsys_contracode_insert_var(&a, f[j].node, nm);           /* expression arrows are refused */
  }
  free(f);
  if (mlsys_contracode_mangle(&a, &nm_renamed) == MLSYS_OK && (out = compact(&a)) != NULL) {
    fo = fopen(outpath, "w");
    if (fo) {
      ok = fputs(out, fo) >= 0;
      ok = (fclose(fo) == 0) && ok;
    }
    free(out);
  }
  mlsys_contracode_js_free(&a);
  return ok ? nm_renamed : -1;
}
static char *run_capture(const char *cmd) {
  FILE *p = popen(cmd, "r");
  char *buf;
  size_t len = 0, cap = 1 << 16, r;
  if (!p) return NULL;
  buf = (char *)malloc(cap);
  while (buf && (r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += r;
    if (cap - len < 2) buf = (char *)realloc(buf, cap *= 2);
  }
  if (buf) buf[len] = 0;
  if (pclose(p) != 0) { free(buf); return NULL; }
  return buf;
}
/* Semantic check in Node: underscore and acorn, rewritten by T1+T2+T3, give the same results on a battery of calls
   (tests/data/contracode/semantic_battery.js) as the originals. */
TEST(contracode_transform_node_battery) {
  const char *us = "/usr/share/javascript/underscore/underscore.js", *ac = "/usr/share/nodejs/acorn/dist/acorn.js";
  char tu[64], ta[64], cmd[512], *want, *got;
  if (system("node --version > /dev/null 2>&1") != 0) SKIP_DEP("node not installed (scripts/install-deps.sh)");
  snprintf(cmd, sizeof cmd, "node tests/data/contracode/semantic_battery.js %s %s", us, ac);
  want = run_capture(cmd);
  if (!want) SKIP_DEP("underscore/acorn not installed (libjs-underscore, node-acorn)");
  snprintf(tu, sizeof tu, "/tmp/mlsys_cc_scope_%d_u.js", (int)getpid());
  snprintf(ta, sizeof ta, "/tmp/mlsys_cc_scope_%d_a.js", (int)getpid());
  CHECK(transform_file(us, tu) > 300);
  CHECK(transform_file(ac, ta) > 1000);
  snprintf(cmd, sizeof cmd, "node tests/data/contracode/semantic_battery.js %s %s", tu, ta);
  got = run_capture(cmd);
  CHECK_MSG(got != NULL, "node failed on the transformed files");
  CHECK(strlen(want) > 1000);
  if (got) CHECK_MSG(!strcmp(want, got), "battery differs:\n    %.300s\n    %.300s", want, got);
  remove(tu);
  remove(ta);
  free(want);
  free(got);
}

TEST(contracode_scope_api_errors) {
  mlsys_contracode_scopes s;
  mlsys_contracode_js_ast a;
  memset(&a, 0, sizeof a);
  CHECK(mlsys_contracode_scope_build(&a, &s) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_scope_build(NULL, &s) == MLSYS_ERR_ARG);
  CHECK(!mlsys_contracode_name_is_fresh(NULL, 1, "a"));
  mlsys_contracode_scope_free(&s);
}

TEST_MAIN()
