/* tests/test_contracode_passes.c — the compress passes of mlsys_contracode.h section 3 (T4 fold, T5 dce, T5b
   unused, T6 booleans, T7 seq/cond, T8 props). Expected answers: spec §7.4 items 8-10 byte for byte in the terse
   print style (items 9-10 are terser 4.8.1's measured outputs), hand cases and refusals (eval/with, `this`-changing
   picks, Annex B functions, dead let/const, for-in heads, free-name initializers), an outside oracle for folding
   (Node evaluates 400 random literal expressions before and after; needs node, else skipped), and over the
   Debian-packaged corpus (libjs-underscore, node-acorn, node-marked) every pass keeps the output parseable, the
   printed tree equal to the rewritten one, and the free names unchanged (or a subset, for the passes that drop
   code). */
#define MLSYS_CONTRACODE_IMPLEMENTATION
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include <unistd.h>

typedef mlsys_status (*pass_fn)(mlsys_contracode_js_ast *, int *);
static const struct { const char *name; pass_fn fn; int drops; } passes[] = {
  {"fold", mlsys_contracode_fold, 1},         {"dce", mlsys_contracode_dce, 1},
  {"unused", mlsys_contracode_unused, 1},     {"seq_cond", mlsys_contracode_seq_cond, 0},
  {"props", mlsys_contracode_props, 0},       {"booleans", mlsys_contracode_booleans, 0},
  {"compress", mlsys_contracode_compress, 1},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

static char *terse(const mlsys_contracode_js_ast *a) {
  mlsys_contracode_js_print_opts o = {MLSYS_CONTRACODE_JS_TERSE, 0};
  char *out = NULL;
  size_t n;
  if (mlsys_contracode_js_print(a, &o, &out, &n) != MLSYS_OK) return NULL;
  return out;
}
/* Applies the passes named by letters (f d u s p b, A = compress) to src; the terse print (malloc'd) and the total
   number of rewrites. */
static char *apply(const char *src, const char *which, int flags, int *count) {
  mlsys_contracode_js_ast a;
  char *out;
  int total = 0, k;
  if (mlsys_contracode_js_parse(src, strlen(src), flags, &a) != MLSYS_OK) return NULL;
  for (; *which; which++) {
    mlsys_status st;
    k = 0;
    switch (*which) {
      case 'f': st = mlsys_contracode_fold(&a, &k); break;
      case 'd': st = mlsys_contracode_dce(&a, &k); break;
      case 'u': st = mlsys_contracode_unused(&a, &k); break;
      case 's': st = mlsys_contracode_seq_cond(&a, &k); break;
      case 'p': st = mlsys_contracode_props(&a, &k); break;
      case 'b': st = mlsys_contracode_booleans(&a, &k); break;
      default: st = mlsys_contracode_compress(&a, &k); break;
    }
    if (st != MLSYS_OK) { mlsys_contracode_js_free(&a); return NULL; }
    total += k;
  }
  out = terse(&a);
  mlsys_contracode_js_free(&a);
  if (count) *count = total;
  return out;
}
#define EXPECT(which, src, want)                                                        \
  do {                                                                                  \
    char *got_ = apply(src, which, 0, NULL);                                            \
    CHECK_MSG(got_ && !strcmp(got_, want), "%s on %s: got %s, want %s", which, src,    \
              got_ ? got_ : "(error)", want);                                           \
    free(got_);                                                                         \
  } while (0)
#define UNCHANGED(which, src)                                                           \
  do {                                                                                  \
    int n_ = -1;                                                                        \
    char *got_ = apply(src, which, 0, &n_), *ref_ = apply(src, "", 0, NULL);            \
    CHECK_MSG(got_ && ref_ && !strcmp(got_, ref_) && n_ == 0, "%s on %s: got %s (%d rewrites)", which, src, \
              got_ ? got_ : "(error)", n_);                                             \
    free(got_);                                                                         \
    free(ref_);                                                                         \
  } while (0)

/* §7.4 item 8 */
TEST(contracode_fold_spec) {
  EXPECT("f", "2*3+1", "7;");
  EXPECT("f", "'a'+'b'", "(\"ab\");");   /* a non-directive string statement prints in parentheses */
  EXPECT("f", "x=\"n\"+1.5e21", "x=\"n1.5e+21\";");
  EXPECT("f", "0.1+0.2", "0.30000000000000004;");
  EXPECT("f", "2**-1", "0.5;");
  EXPECT("f", "(-8)%3", "-2;");
  EXPECT("f", "~5.7", "-6;");
  EXPECT("f", "1<<33", "2;");
  EXPECT("f", "-1>>>0", "4294967295;");
  EXPECT("f", "x=typeof null", "x=\"object\";");
  EXPECT("f", "x=\"x\"+void 0", "x=\"xundefined\";");
  EXPECT("f", "1+true", "2;");
  UNCHANGED("f", "1/0");
  UNCHANGED("f", "1**NaN");
  UNCHANGED("f", "0*-1");
  UNCHANGED("f", "a+1+2");
  /* Number::toString's exponent rule, both sides of each threshold */
  EXPECT("f", "x=5e-7+0", "x=5e-7;");
  EXPECT("f", "x=1e-6+0", "x=0.000001;");
  EXPECT("f", "x=1e20+0", "x=100000000000000000000;");
  EXPECT("f", "x=1e21+0", "x=1e+21;");
  EXPECT("f", "x=''+0.000123", "x=\"0.000123\";");
  EXPECT("f", "x=''+-1.5", "x=\"-1.5\";");
  EXPECT("f", "x=0x10+1", "x=17;");
  /* logical and conditional picks */
  EXPECT("f", "x=0&&f()", "x=0;");
  EXPECT("f", "x=0||\"d\"", "x=\"d\";");
  EXPECT("f", "x=null??3", "x=3;");
  EXPECT("f", "x=1?f():g()", "x=f();");
  EXPECT("f", "x=1&&f()", "x=f();");
  EXPECT("f", "x='a'<'b',y=2>=2,z=null==void 0,w=1==='1'", "x=true,y=true,z=true,w=false;");
  /* refusals */
  UNCHANGED("f", "(1&&o.f)()");          /* the pick would bind `this` to o */
  UNCHANGED("f", "(1&&eval)(s)");        /* the pick would turn an indirect eval direct */
  UNCHANGED("f", "x=typeof(1&&y)");      /* the pick would make typeof of an undeclared name quiet */
  UNCHANGED("f", "x='a'-1");             /* string → number is not folded */
  UNCHANGED("f", "x='\\x41'+'b'");       /* escaped strings are not folded */
  UNCHANGED("f", "x=010+1");             /* legacy octal */
  UNCHANGED("f", "x=1==true");           /* loose equality with conversions */
  UNCHANGED("f", "x=-5,y=!0,z=void 0");  /* canonical already */
  UNCHANGED("f", "with(o){x=1+2}");
  UNCHANGED("f", "function g(){eval(s);return 1+2}");
  EXPECT("f", "function g(){return 1+2}function h(){eval(s);return 1+2}", "function g(){return 3}function h(){eval(s);return 1+2}");
}

/* Node evaluates random constant expressions before and after folding: Object.is must hold for each. */
static unsigned long long rng_state = 88172645463325252ull;
static unsigned rnd(unsigned n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state % n);
}
static void gen(char *b, size_t cap, int depth) {
  static const char *const leaves[] = {"0", "1", "2", "3", "7", "10", "255", "0.5", "0.1", "2.5", "1e21", "1.5e-7",
                                       "4294967296", "9007199254740993", "\"\"", "\"a\"", "\"b c\"", "'10'", "true",
                                       "false", "null", "void 0", "0x1f", ".25"};
  static const char *const bins[] = {"+", "-", "*", "/", "%", "**", "&", "|", "^", "<<", ">>", ">>>", "==", "!=",
                                     "===", "!==", "<", ">", "<=", ">=", "&&", "||", "??", "+", "+"};
  static const char *const uns[] = {"!", "-", "+", "~", "typeof ", "void "};
  size_t n = strlen(b);
  unsigned k = rnd(10);
  if (depth <= 0 || k < 3) {
    snprintf(b + n, cap - n, "%s", leaves[rnd(sizeof leaves / sizeof *leaves)]);
  } else if (k < 5) {
    snprintf(b + n, cap - n, "%s(", uns[rnd(sizeof uns / sizeof *uns)]);
    gen(b, cap, depth - 1);
    strncat(b, ")", cap - strlen(b) - 1);
  } else if (k < 6) {
    strncat(b, "(", cap - strlen(b) - 1);
    gen(b, cap, depth - 1);
    strncat(b, ")?(", cap - strlen(b) - 1);
    gen(b, cap, depth - 1);
    strncat(b, "):(", cap - strlen(b) - 1);
    gen(b, cap, depth - 1);
    strncat(b, ")", cap - strlen(b) - 1);
  } else {
    strncat(b, "(", cap - strlen(b) - 1);
    gen(b, cap, depth - 1);
    n = strlen(b);
    snprintf(b + n, cap - n, ")%s(", bins[rnd(sizeof bins / sizeof *bins)]);
    gen(b, cap, depth - 1);
    strncat(b, ")", cap - strlen(b) - 1);
  }
}
TEST(contracode_fold_vs_node) {
  enum { N = 400 };
  char path[64], cmd[128], line[256], e[1024], src[1100];
  FILE *f, *p;
  int i, folded = 0, total = 0, bad = -1, seen = -1;
  if (system("node --version >/dev/null 2>&1") != 0) SKIP_DEP("node is not installed");
  snprintf(path, sizeof path, "/tmp/mlsys_cc_fold_%d.js", (int)getpid());
  f = fopen(path, "w");
  REQUIRE(f != NULL);
  fprintf(f, "var A=[],bad=0,seen=0;function p(i,v){if(!(i in A)){A[i]=v;return}seen++;"
             "if(!Object.is(A[i],v)){bad++;console.error(i,A[i],v)}}\n");
  for (i = 0; i < N; i++) {
    char *before, *after;
    int k = 0;
    e[0] = 0;
    gen(e, sizeof e, 1 + (int)rnd(4));
    snprintf(src, sizeof src, "p(%d,%s)", i, e);
    before = apply(src, "", 0, NULL);
    after = apply(src, "f", 0, &k);
    CHECK_MSG(before && after, "%.200s does not parse or fold: %s", src, mlsys_last_error());
    if (before && after) {
      fprintf(f, "%s\n%s\n", before, after);
      total += k;
      folded += k > 0;
    }
    free(before);
    free(after);
  }
  fprintf(f, "console.log(seen+' '+bad)\n");
  fclose(f);
  snprintf(cmd, sizeof cmd, "node %s", path);
  p = popen(cmd, "r");
  REQUIRE(p != NULL);
  if (fgets(line, sizeof line, p)) sscanf(line, "%d %d", &seen, &bad);
  pclose(p);
  unlink(path);
  printf("    %d random expressions, %d changed by fold (%d rewrites); node: %d compared, %d differ\n", N, folded,
         total, seen, bad);
  CHECK_EQ_INT(seen, N);
  CHECK_EQ_INT(bad, 0);
  CHECK(folded >= N / 2);   /* the oracle saw real folding, not a pass that does nothing */
}

/* §7.4 item 9 (terser 4.8.1's outputs) and hand cases */
TEST(contracode_dce_unused_spec) {
  const char *s = "function x(a){if(false){a()}else{b()}while(0){var z=c()}return a;var y=2;function g(){return y}d()}";
  EXPECT("d", s, "function x(a){b();var z;return a;var y;function g(){return y}}");
  EXPECT("du", s, "function x(a){b();return a}");
  EXPECT("dus", s, "function x(a){return b(),a}");
  EXPECT("d", "function x(a){return y;var y=1}", "function x(a){return y;var y}");
  /* let/const stay in their block; for with a falsy test keeps its init and the body's vars */
  EXPECT("d", "function f(){if(1){let q=1;g(q)}if(!1)h();else{k()}for(var i=0;0;i++){var w}}",
         "function f(){{let q=1;g(q)}k();var i=0;var w}");
  EXPECT("d", "function f(){for(i=0;false;)g();;1;\"s\"}", "function f(){i=0}");
  EXPECT("d", "function f(){\"use strict\";return 1;x()}", "function f(){\"use strict\";return 1}");
  EXPECT("d", "function f(){switch(a){case 1:g();break;h();case 2:k()}}", "function f(){switch(a){case 1:g();break;case 2:k();}}");   /* terse keeps a case's last `;` */
  EXPECT("d", "function f(){return;if(c){var u=[1]}}", "function f(){return;var u}");
  /* refusals */
  UNCHANGED("d", "function f(){return;let x=1}");                 /* a dead let at list level */
  UNCHANGED("d", "function f(){return;if(c){function h(){}}}");   /* Annex B function in dead code */
  UNCHANGED("d", "function f(){if(0){function h(){}}g()}");
  UNCHANGED("d", "function f(){for(let i=0;0;);}");   /* the let would leak into the block */
  UNCHANGED("d", "function f(){with(o){if(0)a();return;b()}}");
  UNCHANGED("d", "function f(){eval(s);if(0)a()}");
  UNCHANGED("d", "function f(){if(a)b();while(c)d()}");
  /* unused */
  EXPECT("u", "function f(){var a=1,b=g(),c=function(){},d=h,e;var h;return 0}", "function f(){var b=g();return 0}");   /* h goes once d is gone */
  EXPECT("u", "function f(){var a=-1;var b=!0;function g(){}function k(){}return k}", "function f(){function k(){}return k}");
  EXPECT("u", "function f(){for(var i=0;;)break}", "function f(){for(;;)break}");
  UNCHANGED("u", "var a=1;function g(){}");                       /* top level */
  UNCHANGED("u", "function f(){var a=free_name;var b=g()}");      /* a free name may throw; a call has effects */
  UNCHANGED("u", "function f(o){for(var k in o);for(var v of o);}");
  UNCHANGED("u", "function f(){var a=1;eval(s)}");
  UNCHANGED("u", "function f(){with(o){var a=1}}");
  UNCHANGED("u", "function f(a){var a=1}");                       /* the parameter's binding */
  UNCHANGED("u", "function f(){var a=1;return a}");
}

/* §7.4 item 10 and hand cases */
TEST(contracode_seq_cond_props_booleans) {
  EXPECT("s", "function x(a){if(a){b()}if(!a){c()}if(a){b()}else{c()}d();e();return a}",
         "function x(a){return a&&b(),a||c(),a?b():c(),d(),e(),a}");
  EXPECT("s", "if(a)x=1;else x=2;", "a?x=1:x=2;");
  EXPECT("s", "var a=1;var b=2;let c;let d;const e=1;var f;", "var a=1,b=2;let c,d;const e=1;var f;");
  EXPECT("s", "function f(){\"use strict\";g();h()}", "function f(){\"use strict\";g(),h()}");
  EXPECT("s", "if(a)if(b)c();else d();", "a&&(b?c():d());");
  UNCHANGED("s", "if(a){b();for(;;);}");   /* two statements, one not an expression */
  EXPECT("s", "if(a){b();c()}", "a&&(b(),c());");   /* the block's sequence first */
  UNCHANGED("s", "if(a)b();else{var x}");  /* a branch that is not an expression */
  UNCHANGED("s", "for(;;)g();h();");
  UNCHANGED("s", "with(o){a();b()}");
  EXPECT("p", "o[\"b\"];x={\"e\":1};o[\"c-d\"];y={\"f-g\":2};o[\"1a\"];o?.[\"class\"];({\"k\":z}=q)",
         "o.b;x={e:1};o[\"c-d\"];y={\"f-g\":2};o[\"1a\"];o?.class;({k:z}=q);");
  UNCHANGED("p", "class A{\"constructor\"(){}}");   /* class members keep their spelling */
  UNCHANGED("p", "o['\\x62']");
  EXPECT("b", "var a=true,b=false;true.toString();x={true:1};o.true", "var a=!0,b=!1;(!0).toString();x={true:1};o.true;");
  UNCHANGED("b", "function f(){eval(s);return true}");
  /* everything in a row: terser's `compress:{}` output of item 9 */
  EXPECT("A", "function x(a){if(false){a()}else{b()}while(0){var z=c()}return a;var y=2;function g(){return y}d()}",
         "function x(a){return b(),a}");
}

/* Error statuses, not crashes */
TEST(contracode_passes_bad_input) {
  mlsys_contracode_js_ast a;
  int i, k;
  memset(&a, 0, sizeof a);
  for (i = 0; i < NPASSES; i++) {
    k = 7;
    CHECK_EQ_INT(passes[i].fn(&a, &k), MLSYS_ERR_ARG);
    CHECK_EQ_INT(k, 0);
    CHECK_EQ_INT(passes[i].fn(NULL, NULL), MLSYS_ERR_ARG);
  }
}

/* ---- the Debian-packaged corpus (as in tests/test_contracode_scope.c) ---- */
static const struct { const char *path; int module; } corpus[] = {
  {"/usr/share/javascript/underscore/underscore.js", 0},      /* libjs-underscore */
  {"/usr/share/nodejs/acorn/dist/acorn.js", 0},                /* node-acorn */
  {"/usr/share/nodejs/marked/lib/marked.esm.js", 1},           /* node-marked */
};
static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }
/* The sorted, newline-terminated set of free names of a program; NULL on a parse error. */
static char *free_names(const char *src, size_t n, int flags) {
  mlsys_contracode_js_ast a;
  mlsys_contracode_scopes s;
  char **v, *out;
  int i, k = 0;
  size_t len = 1;
  if (mlsys_contracode_js_parse(src, n, flags, &a) != MLSYS_OK) return NULL;
  if (mlsys_contracode_scope_build(&a, &s) != MLSYS_OK) { mlsys_contracode_js_free(&a); return NULL; }
  v = (char **)malloc((size_t)s.nnodes * sizeof *v);
  for (i = 1; i < s.nnodes; i++)
    if (s.resolved[i] == -1) {
      v[k] = (char *)malloc(a.nodes[i].slen + 1);
      memcpy(v[k], a.text + a.nodes[i].str, a.nodes[i].slen);
      v[k][a.nodes[i].slen] = 0;
      len += a.nodes[i].slen + 1;
      k++;
    }
  qsort(v, (size_t)k, sizeof *v, cmp_str);
  out = (char *)malloc(len);
  out[0] = 0;
  for (i = 0; i < k; i++)
    if (!i || strcmp(v[i], v[i - 1])) { strcat(out, v[i]); strcat(out, "\n"); }
  for (i = 0; i < k; i++) free(v[i]);
  free(v);
  mlsys_contracode_scope_free(&s);
  mlsys_contracode_js_free(&a);
  return out;
}
static int is_subset(const char *sub, const char *super) {   /* both newline-terminated sorted sets */
  const char *p = sub;
  while (*p) {
    const char *e = strchr(p, '\n'), *q = super;
    size_t n = (size_t)(e - p);
    int found = 0;
    while (*q) {
      const char *qe = strchr(q, '\n');
      if ((size_t)(qe - q) == n && !memcmp(q, p, n)) { found = 1; break; }
      q = qe + 1;
    }
    if (!found) return 0;
    p = e + 1;
  }
  return 1;
}
TEST(contracode_passes_corpus) {
  int i, j;
  for (i = 0; i < (int)(sizeof corpus / sizeof corpus[0]); i++) {
    char *src = NULL, *before;
    size_t n = 0;
    int flags = corpus[i].module ? MLSYS_CONTRACODE_JS_MODULE : 0;
    if (mlsys_read_file(corpus[i].path, &src, &n) != MLSYS_OK) {
      SKIP_DEP("%s missing: run scripts/install-deps.sh (libjs-underscore, node-acorn, node-marked)", corpus[i].path);
    }
    before = free_names(src, n, flags);
    REQUIRE(before != NULL);
    printf("    %s:", corpus[i].path);
    for (j = 0; j < NPASSES; j++) {
      mlsys_contracode_js_ast a, b;
      char *out, *after, *c0 = NULL, *c1 = NULL;
      int k = 0, k2 = -1;
      REQUIRE_OK(mlsys_contracode_js_parse(src, n, flags, &a));
      CHECK_OK(passes[j].fn(&a, &k));
      out = terse(&a);
      REQUIRE(out != NULL);
      CHECK_OK(mlsys_contracode_js_canonical(&a, 0, &c0, NULL));
      if (mlsys_contracode_js_parse(out, strlen(out), flags, &b) == MLSYS_OK) {
        CHECK_OK(mlsys_contracode_js_canonical(&b, 0, &c1, NULL));
        CHECK_MSG(c0 && c1 && !strcmp(c0, c1), "%s: %s: the printed tree differs from the rewritten one",
                  corpus[i].path, passes[j].name);
        /* a second run finds what the first created (seq after if→&&, …) but must settle */
        if (strcmp(passes[j].name, "compress")) {
          CHECK_OK(passes[j].fn(&b, &k2));
        }
        mlsys_contracode_js_free(&b);
      }
      free(c0);
      free(c1);
      after = free_names(out, strlen(out), flags);
      CHECK_MSG(after != NULL, "%s: %s: output does not re-parse: %s", corpus[i].path, passes[j].name, mlsys_last_error());
      if (after) {
        if (passes[j].drops) CHECK_MSG(is_subset(after, before), "%s: %s: new free names", corpus[i].path, passes[j].name);
        else CHECK_MSG(!strcmp(before, after), "%s: %s: free names changed", corpus[i].path, passes[j].name);
      }
      printf(" %s %d (again %d)", passes[j].name, k, k2);
      free(after);
      free(out);
      mlsys_contracode_js_free(&a);
    }
    printf("\n");
    free(before);
    free(src);
  }
}

TEST_MAIN()
