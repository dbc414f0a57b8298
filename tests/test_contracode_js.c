/* tests/test_contracode_js.c — the JavaScript front end of mlsys_contracode.h (section 1): lexer, parser, printer,
   function spans. Expected answers: spec §7.4 items 1-2 (token counts, regex vs division, ASI, nested templates,
   `a+ +b`), a table of small programs (round trip through the canonical tree serialization and print fixpoint;
   some with the exact compact output written by hand), malformed inputs with their line:col, nesting limits, the
   Debian-packaged corpus (underscore, acorn, marked: every file parses and round-trips) and an outside oracle:
   Debian's acorn counts the ESTree nodes of the same files (tests/oracle/acorn_counts.js), and of our printed
   output, and every kind must agree with ours. */
#define MLSYS_CONTRACODE_IMPLEMENTATION
#define MLSYS_COMMON_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#include <unistd.h>

static char *canon_of(const char *src, size_t n, int flags, mlsys_status *st) {
  mlsys_contracode_js_ast a;
  char *c = NULL;
  *st = mlsys_contracode_js_parse(src, n, flags, &a);
  if (*st != MLSYS_OK) return NULL;
  *st = mlsys_contracode_js_canonical(&a, 0, &c, NULL);
  mlsys_contracode_js_free(&a);
  return c;
}
static char *print_of(const char *src, size_t n, int flags, int beautify, mlsys_status *st) {
  mlsys_contracode_js_ast a;
  mlsys_contracode_js_print_opts o = {beautify, 4, 0, 0, 0};
  char *out = NULL;
  *st = mlsys_contracode_js_parse(src, n, flags, &a);
  if (*st != MLSYS_OK) return NULL;
  *st = mlsys_contracode_js_print(&a, &o, &out, NULL);
  mlsys_contracode_js_free(&a);
  return out;
}
/* parse → print (compact and beautified) → parse: same canonical tree; printing again gives the same text. Returns
   the number of failed properties (0 = all hold); the compact output goes to *compact when asked. */
static int round_trip(const char *src, size_t n, int flags, char **compact, const char *label) {
  mlsys_status st;
  int bad = 0, b;
  char *c0 = canon_of(src, n, flags, &st);
  if (!c0) {
    printf("    %s: does not parse: %s\n", label, mlsys_last_error());
    return 1;
  }
  for (b = 0; b <= 1; b++) {
    char *p1 = print_of(src, n, flags, b, &st), *c1, *p2;
    if (!p1) { printf("    %s: print failed\n", label); bad++; continue; }
    c1 = canon_of(p1, strlen(p1), flags, &st);
    if (!c1) {
      printf("    %s: printed (%s) does not re-parse: %s\n    %.300s\n", label, b ? "beautified" : "compact",
             mlsys_last_error(), p1);
      bad++;
    } else if (strcmp(c0, c1) != 0) {
      printf("    %s: printed (%s) tree differs:\n    %.300s\n", label, b ? "beautified" : "compact", p1);
      bad++;
    } else {
      p2 = print_of(p1, strlen(p1), flags, b, &st);
      if (!p2 || strcmp(p1, p2) != 0) {
        printf("    %s: print is not a fixpoint (%s)\n", label, b ? "beautified" : "compact");
        bad++;
      }
      free(p2);
    }
    free(c1);
    if (!b && compact) *compact = p1;
    else free(p1);
  }
  free(c0);
  return bad;
}

TEST(contracode_js_tokens_regex_vs_division) {
  const char *src = "a = b / c / d; e = /=/g.test(x)";
  mlsys_contracode_js_token *t = NULL;
  int n = 0;
  REQUIRE_OK(mlsys_contracode_js_tokens(src, strlen(src), 0, &t, &n));
  CHECK_EQ_INT(n, 16);
  if (n == 16) {
    /* 1-based as in the spec: tokens 4 and 6 are '/', token 11 is the regex /=/g */
    CHECK_EQ_INT(t[3].kind, MLSYS_CONTRACODE_TOK_PUNCT);
    CHECK_EQ_INT((int)(t[3].end - t[3].start), 1);
    CHECK(src[t[3].start] == '/');
    CHECK_EQ_INT(t[5].kind, MLSYS_CONTRACODE_TOK_PUNCT);
    CHECK(src[t[5].start] == '/');
    CHECK_EQ_INT(t[10].kind, MLSYS_CONTRACODE_TOK_REGEX);
    CHECK_EQ_INT((int)(t[10].end - t[10].start), 4);
    CHECK(!memcmp(src + t[10].start, "/=/g", 4));
  }
  free(t);
  /* division after ) and ], a regex after ( , = return and at statement start */
  {
    static const struct { const char *src; int nregex; } cases[] = {
      {"(a)/b/c", 0}, {"a[0]/b/c", 0}, {"f(/x/)", 1}, {"x=/a/g", 1}, {"function f(){return /a/}", 1},
      {"/a/.test(s)", 1}, {"a\n/b/g", 0}, {"if(x)/a/.test(y)", 1}, {"x = y / /re/", 1}, {"a++ / 2", 0},
      {"`${a}` / 2", 0}, {"typeof /x/", 1}, {"x /= 2", 0}, {"{}/a/g", 1}, {"[a]/b", 0},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      int k, nr = 0;
      mlsys_status st = mlsys_contracode_js_tokens(cases[i].src, strlen(cases[i].src), 0, &t, &n);
      CHECK_MSG(st == MLSYS_OK, "%s: %s", cases[i].src, mlsys_last_error());
      for (k = 0; k < n; k++) nr += t[k].kind == MLSYS_CONTRACODE_TOK_REGEX;
      CHECK_MSG(nr == cases[i].nregex, "%s: %d regex tokens, expected %d", cases[i].src, nr, cases[i].nregex);
      free(t);
    }
  }
}

TEST(contracode_js_token_kinds) {
  const char *src = "#!/usr/bin/env node\nlet x = 0x1F_FFn + 1_000.5e-3 + 0o17 + 0b1 + .5 + 017 + 'a\\'b' + `t${y}u${z}v`;"
                    " obj?.p ?? q\u2028w";
  mlsys_contracode_js_token *t = NULL;
  int n = 0, k, count[16] = {0};
  REQUIRE_OK(mlsys_contracode_js_tokens(src, strlen(src), 0, &t, &n));
  for (k = 0; k < n; k++) count[t[k].kind]++;
  CHECK_EQ_INT(count[MLSYS_CONTRACODE_TOK_BIGINT], 1);
  CHECK_EQ_INT(count[MLSYS_CONTRACODE_TOK_NUMBER], 5);
  CHECK_EQ_INT(count[MLSYS_CONTRACODE_TOK_STRING], 1);
  CHECK_EQ_INT(count[MLSYS_CONTRACODE_TOK_TEMPLATE], 3);   /* `t${   }u${   }v` */
  CHECK_EQ_INT(count[MLSYS_CONTRACODE_TOK_NAME], 8);       /* let x y z obj p q w */
  /* the token after U+2028 has the newline flag */
  CHECK(t[n - 1].flags & MLSYS_CONTRACODE_TOK_NEWLINE_BEFORE);
  CHECK(!(t[n - 2].flags & MLSYS_CONTRACODE_TOK_NEWLINE_BEFORE));
  free(t);
}

static void expect_compact(const char *src, int flags, const char *want) {
  mlsys_status st;
  char *out = print_of(src, strlen(src), flags, 0, &st);
  CHECK_MSG(out != NULL, "%s: %s", src, mlsys_last_error());
  if (out) CHECK_MSG(!strcmp(out, want), "%s\n      printed  %s\n      expected %s", src, out, want);
  free(out);
}

TEST(contracode_js_asi_and_printing_rules) {
  /* spec §7.4 items 1-2 */
  expect_compact("x = y\n++z", 0, "x=y;++z;");
  expect_compact("function f(){return\n1}", 0, "function f(){return;1;}");
  expect_compact("`a${`b${c}`}d`;", 0, "`a${`b${c}`}d`;");
  expect_compact("a+ +b", 0, "a+ +b;");
  expect_compact("a - -b", 0, "a- -b;");
  expect_compact("a + ++b", 0, "a+ ++b;");
  expect_compact("a++ + b", 0, "a++ +b;");
  expect_compact("x / /re/g", 0, "x/ /re/g;");
  expect_compact("/a/g in x", 0, "/a/g in x;");
  expect_compact("/a/ instanceof RegExp", 0, "/a/ instanceof RegExp;");
  /* more ASI: restricted productions */
  expect_compact("a\n++\nb", 0, "a;++b;");
  expect_compact("x = y\r++z", 0, "x=y;++z;");              /* CR */
  expect_compact("x = y\r\n++z", 0, "x=y;++z;");           /* CRLF */
  expect_compact("x = y\xe2\x80\xa8++z", 0, "x=y;++z;");   /* U+2028 */
  expect_compact("x = y /* a\xe2\x80\xa9" "b */ ++z", 0, "x=y;++z;");   /* U+2029 inside a comment */
  expect_compact("x = y /* no line break */ + +z", 0, "x=y+ +z;");
  expect_compact("for(;;){break\nfoo}", 0, "for(;;){break;foo;}");
  expect_compact("x\n(y)", 0, "x(y);");   /* no ASI before ( */
  expect_compact("let a = 1\nlet b = 2", 0, "let a=1;let b=2;");
  expect_compact("var f = async\nfunction g(){}", 0, "var f=async;function g(){}");
  expect_compact("do x(); while (y) z()", 0, "do x();while(y);z();");
  /* parentheses come from precedence, not from the source */
  expect_compact("((a + b)) * (c)", 0, "(a+b)*c;");
  expect_compact("a + (b + c)", 0, "a+(b+c);");
  expect_compact("(a + b) + c", 0, "a+b+c;");
  expect_compact("(a ** b) ** c", 0, "(a**b)**c;");
  expect_compact("a ** (b ** c)", 0, "a**b**c;");
  expect_compact("(-a) ** b", 0, "(-a)**b;");
  expect_compact("(a || b) ?? c", 0, "(a||b)??c;");
  expect_compact("a || (b && c)", 0, "a||b&&c;");
  expect_compact("(a, b)", 0, "a,b;");
  expect_compact("f((a, b))", 0, "f((a,b));");
  expect_compact("(function(){})()", 0, "(function(){}());");
  expect_compact("({}).x", 0, "({}.x);");
  expect_compact("({a} = b)", 0, "({a}=b);");
  expect_compact("(class {})", 0, "(class{});");
  expect_compact("(let[0] = 1)", 0, "(let[0]=1);");
  expect_compact("1..toString(); (1).toString(); 1.5.toFixed()", 0, "1..toString();(1).toString();1.5.toFixed();");
  expect_compact("new (f())(); new (a.b().c)(); new a.b.c(); new (a?.b)()", 0,
                 "new(f())();new(a.b().c)();new a.b.c();new(a?.b)();");
  expect_compact("(a?.b).c; a?.b.c; (a?.b)()", 0, "(a?.b).c;a?.b.c;(a?.b)();");
  expect_compact("x => ({a: 1}); x => ({}).a", 0, "(x)=>({a:1});(x)=>({}.a);");
  expect_compact("for (var i = (a in b); ;) ;", 0, "for(var i=(a in b);;);");
  expect_compact("for ((a in b); ;) ;", 0, "for((a in b);;);");
  expect_compact("for (var x of (a, b)) ;", 0, "for(var x of(a,b));");
  expect_compact("(a, b) => c; async (a) => b; async a => b", 0, "(a,b)=>c;async(a)=>b;async(a)=>b;");
  expect_compact("(a = b) => (c = d)", 0, "(a=b)=>c=d;");
  expect_compact("a = (b, c)", 0, "a=(b,c);");
  expect_compact("a ? b : c ? d : e; (a ? b : c) ? d : e", 0, "a?b:c?d:e;(a?b:c)?d:e;");
  expect_compact("typeof typeof a; void 0; delete a[b]; !(-x)", 0, "typeof typeof a;void 0;delete a[b];!-x;");
  expect_compact("'use strict'; ('not a directive'); x", 0, "'use strict';('not a directive');x;");
  expect_compact("a?.5:b", 0, "a?.5:b;");
  expect_compact("export default (function(){})", MLSYS_CONTRACODE_JS_MODULE, "export default(function(){});");
  expect_compact("export default (class {})", MLSYS_CONTRACODE_JS_MODULE, "export default(class{});");
}

/* Small programs covering every construct: each must round-trip and reach a print fixpoint. */
static const char *const programs[] = {
  "", ";", "{}", "{;}", "a", "a;b", "'use strict'; a", "var a", "var a = 1, b, c = 3", "let a = 1; const b = 2",
  "let [a, , b = 2, ...c] = d", "const {a, b: c, d = 1, e: {f}, ...g} = h", "var {a: [b, {c}]} = d",
  "function f() {}", "function f(a, b = 1, {c}, [d], ...e) { return a }", "function* g() { yield; yield a; yield* b }",
  "async function f() { await x; await (a, b) }", "async function* f() { for await (const x of y) yield x }",
  "(function () {})", "(function f() {})", "(function* () {})", "(async function () {})",
  "x = () => {}", "x = a => a", "x = (a, b) => a + b", "x = async () => { await 1 }", "x = ({a}, [b]) => a",
  "x = (...a) => a", "x = () => () => 1", "x = a => b => c", "f(a => a, b)",
  "class A {}", "class A extends B { constructor() { super(); super.x(); } }",
  "class A { static m() {} get x() { return 1 } set x(v) {} static get y() {} *g() {} async a() {} async *b() {} }",
  "class A { [k]() {} 'str'() {} 123() {} static [k] = 1; x = 2; y; static z }", "x = class {}", "x = class B extends (a, b) {}",
  "x = {}", "x = {a: 1, 'b': 2, 3: 4, [c]: 5}", "x = {a, b, c: d}", "x = {m() {}, get g() {}, set s(v) {}, async a() {}, *g2() {}, async *ag() {}}",
  "x = {...a, ...b}", "x = {get: 1, set: 2, async: 3, static: 4}", "x = {get() {}, set() {}, async() {}}",
  "x = {if: 1, class: 2, new: 3}", "x = [a, , b]", "x = [, ]", "x = [a, , ]", "x = [...a, ...b]", "x = []",
  "a = b = c", "a += b; a -= b; a *= b; a /= b; a %= b; a **= b; a <<= b; a >>= b; a >>>= b; a &= b; a |= b; a ^= b",
  "a &&= b; a ||= c; a ?\?= d", "[a, b] = [b, a]", "({a, b: [c]} = d)", "[a.b, c[d]] = e", "({a = 1} = b)",
  "a + b - c * d / e % f", "a << b >> c >>> d", "a < b > c <= d >= e", "a == b != c === d !== e", "a & b | c ^ d",
  "a && b || c", "a ?? b", "(a ?? b) || c", "a in b; a instanceof b", "a ** b ** c", "(a + b) ** c",
  "-a; +a; !a; ~a; typeof a; void a; delete a.b", "++a; --a; a++; a--", "- -a; + +a; - --a; + ++a",
  "a ? b : c", "a ? b ? c : d : e", "a = b ? c : d", "(a, b, c)", "a(b)(c)", "a.b.c; a[b][c]; a.if.class",
  "a?.b; a?.[b]; a?.(b); a?.b.c(d)?.e", "new A; new A(); new A(b, ...c); new new A()()", "new A.b.c(); new (A())",
  "`plain`", "`a${b}c${d}e`", "`${`${`${a}`}`}`", "tag`a${b}`", "a.b`c`", "String.raw`\\n`", "`line1\nline2`",
  "/re/; /re/gimsuy; /[/]/; /\\//; /a/.source", "x = 0x1F; y = 0o17; z = 0b101; w = 1_000_000; v = 1e10; u = .5; t = 5.",
  "x = 123n; y = 0xFFn", "x = 017; y = 09", "x = 'a\\nb'; y = \"c\\\"d\"; z = '\\u{1F600}\\x41'", "x = 'line\\\ncontinued'",
  "if (a) b", "if (a) b; else c", "if (a) { b } else if (c) { d } else { e }", "if (a) if (b) c; else d",
  "for (;;) {}", "for (i = 0; i < n; i++) ;", "for (var i = 0, j = 1; ; ) break", "for (let i of a) ;",
  "for (const [k, v] of m) ;", "for (var k in o) ;", "for (k in o) ;", "for (a.b in c) ;", "for ([a, b] of c) ;",
  "while (a) b()", "do a(); while (b)", "do { } while (a)", "l: for (;;) { continue l; break l }", "l: { break l }",
  "a: b: for (;;) break a", "switch (a) { case 1: b(); break; case 2: default: c() }", "switch (a) {}",
  "try { a() } catch (e) { b() }", "try { } catch ({message}) { }", "try { } finally { }", "try {} catch {} finally {}",
  "throw new Error('x')", "with (a) b()", "debugger", "function f() { return }", "function f() { return a, b }",
  "function f() { new.target }", "x = function () { return this }", "a = (b, c) => ({d: e})",
  "x = a ? (b, c) : d", "x = (a = 1)", "f(...a, b, ...c)", "a = b ? c => d : e => f", "async\nfunction f() {}",
  "var \\u0061b = 1; \\u{62} = 2", "var café = 1, π = 3.14, $_ = 2", "a = b\n/c/g", "x = y\n(z)",
  "label: function f() {}", "if (a) function f() {}", "x = {__proto__: null}", "x = {'a-b': 1, 0.5: 2, 1e3: 3}",
  "x = y => z in w", "for (x = (y in z) ? 1 : 2; ;) ;", "for (var x = y => (z in w); ;) ;",
  "(async () => { for await (x of y) ; })", "async function f() { await (async () => 1)() }",
  "x = typeof (() => 1)", "x = !(a => b)", "x = (a => b)()", "x = (a, b => c)", "x = a || (b => c)",
  "x = (async function () {})()", "x = {async *[Symbol.iterator]() {}}", "x = class { static async *[k]() {} }",
  "({}) ? 1 : 2", "(function () {}).call(this)", "x = async", "async = 1; async(1)", "let = 1; yield = 2; await = 3",
  "of = 1; get = 2; set = 3; static = 4", "var let = 1", "x = a\n++b", "x = -(-a); y = +(+a); z = -(--a)",
  "x = (-1) ** 2; y = 2 ** -1", "x = (await_) ** 2", "x = !(a in b)", "for (const x in (a, b)) ;",
  "class A { #x = 1; static #y; #m() { return #x in this && this.#x + A.#y } get #g() {} static async *#h() {} }",
  "class A { static { this.y = 2 } static {} static = 1; static() {} }", "class A { #x; m(o) { return o?.#x } }",
};

TEST(contracode_js_program_table_round_trip) {
  size_t i;
  int bad = 0;
  for (i = 0; i < sizeof programs / sizeof programs[0]; i++) {
    char label[64];
    snprintf(label, sizeof label, "program %d", (int)i);
    if (round_trip(programs[i], strlen(programs[i]), 0, NULL, label)) {
      printf("      source: %s\n", programs[i]);
      bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK((int)(sizeof programs / sizeof programs[0]) >= 100);
}

static const char *const modules[] = {
  "import a from 'x'", "import * as ns from 'x'", "import {a, b as c, default as d} from 'x'", "import a, {b} from 'x'",
  "import a, * as b from 'x'", "import 'x'", "import {} from 'x'", "export var a = 1", "export let a, b",
  "export const a = 1", "export function f() {}", "export async function f() {}", "export class A {}",
  "export {a, b as c}", "export {a as default}", "export {a} from 'x'", "export * from 'x'", "export * as ns from 'x'",
  "export default function () {}", "export default function f() {}", "export default class {}",
  "export default async function () {}", "export default a + b", "export default (a, b)", "export {}",
  "import.meta.url", "x = import('y')", "await: 1", "export default {a: 1}",
};
TEST(contracode_js_module_round_trip) {
  size_t i;
  int bad = 0;
  mlsys_contracode_js_ast a;
  for (i = 0; i < sizeof modules / sizeof modules[0]; i++) {
    char label[64];
    snprintf(label, sizeof label, "module %d", (int)i);
    if (!strcmp(modules[i], "await: 1")) {   /* await is reserved in modules */
      CHECK(mlsys_contracode_js_parse(modules[i], strlen(modules[i]), MLSYS_CONTRACODE_JS_MODULE, &a) == MLSYS_ERR_PARSE);
      continue;
    }
    if (round_trip(modules[i], strlen(modules[i]), MLSYS_CONTRACODE_JS_MODULE, NULL, label)) {
      printf("      source: %s\n", modules[i]);
      bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  /* import/export are errors in scripts */
  CHECK(mlsys_contracode_js_parse("import a from 'x'", 17, 0, &a) == MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "1:1: 'import' declaration outside a module");
}

/* Malformed input: MLSYS_ERR_PARSE with "line:col: message". */
static const struct { const char *src; const char *where; const char *what; } bad_inputs[] = {
  {"a +", "1:4:", "unexpected end of input"},
  {"var 1 = 2", "1:5:", "unexpected token"},
  {"x = 'abc", "1:5:", "unterminated string"},
  {"x = 'ab\nc'", "1:5:", "unterminated string"},
  {"/* open", "1:1:", "unterminated comment"},
  {"x = `abc", "1:5:", "unterminated template"},
  {"x = /abc", "1:5:", "unterminated regular expression"},
  {"x = /a/gg", "1:9:", "invalid regular expression flag"},
  {"x = /a/q", "1:8:", "invalid regular expression flag"},
  {"a\nb c", "2:3:", "expected ';'"},
  {"if (a {", "1:7:", "expected ')'"},
  {"f(a b)", "1:5:", "expected ',', got 'b'"},
  {"{", "1:2:", "expected '}'"},
  {"x = 3in y", "1:6:", "identifier directly after number"},
  {"x = 1__0", "1:7:", "numeric separator"},
  {"x = 1_", "1:6:", "numeric separator"},
  {"x = 0x", "1:5:", "expected digits"},
  {"x = 1.5n", "1:5:", "invalid BigInt"},
  {"1 = 2", "1:1:", "invalid assignment target"},
  {"a + b = c", "1:1:", "invalid assignment target"},
  {"++a++", "1:3:", "invalid assignment target"},
  {"f() = 1", "1:1:", "invalid assignment target"},
  {"({a}) = 1", "1:2:", "invalid assignment target"},
  {"({a = 1})", "1:3:", "shorthand property with '='"},
  {"(a, b)", "", ""},   /* valid: placeholder so the index lines up with nothing */
  {"()", "1:1:", "expected '=>'"},
  {"(a, ...b)", "1:1:", "expected '=>'"},
  {"a => {}\n=> 1", "2:1:", "unexpected token"},
  {"a\n=> 1", "2:1:", "unexpected token '=>'"},
  {"a ?? b || c", "1:1:", "mixed with '||' or '&&'"},
  {"-a ** 2", "1:4:", "unary operator before '**'"},
  {"new a?.b()", "1:6:", "optional chain in a 'new' callee"},
  {"a?.b`c`", "1:5:", "tagged template in an optional chain"},
  {"a?.b = 1", "1:1:", "invalid assignment target"},
  {"return 1", "1:1:", "'return' outside a function"},
  {"break", "1:1:", "'break' outside a loop"},
  {"for (;;) { continue foo }", "1:21:", "undefined label 'foo'"},
  {"foo: { continue foo }", "1:8:", "'continue' to a label that is not a loop"},
  {"new.target", "1:1:", "'new.target' outside a function"},
  {"throw\nx", "2:1:", "line break after 'throw'"},
  {"try {}", "1:7:", "expected 'catch' or 'finally'"},
  {"switch (a) { default: default: }", "1:23:", "more than one 'default'"},
  {"class A { get constructor() {} }", "1:11:", "constructor cannot be"},
  {"function () {}", "1:10:", "function declaration needs a name"},
  {"const a", "1:8:", "missing initializer in const"},
  {"let [a]", "1:8:", "missing initializer in destructuring"},
  {"for (let a = 1 of b) ;", "1:6:", "cannot have an initializer"},
  {"for (let a, b of c) ;", "1:6:", "only one binding"},
  {"function f(...a, b) {}", "1:16:", "rest parameter must be last"},
  {"[...a, b] = c", "1:2:", "rest element must be last"},
  {"x = {a b}", "1:8:", "expected ',', got 'b'"},
  {"x = {if}", "1:6:", "keyword 'if' cannot be a shorthand property"},
  {"var if = 1", "1:5:", "unexpected keyword 'if'"},
  {"function* g() { var yield }", "1:21:", "'yield' cannot be an identifier here"},
  {"x = \"\\x4\"", "1:6:", "bad \\x escape"},
  {"x = '\\u12'", "1:6:", "bad \\uXXXX escape"},
  {"var \\u0030a", "1:5:", "escape is not an identifier character"},
  {"x = `\\1`", "1:6:", "octal escape in template"},
  {"a # b", "1:3:", "unexpected character '#'"},
  {"this.#x", "1:6:", "private name outside a class"},
  {"class A { m() { #x } }", "1:17:", "a private name must be followed by 'in'"},
  {"x = {#a: 1}", "1:6:", "unexpected token '#a'"},
  {"x = @", "1:5:", "unexpected character '@'"},
  {"x = \"\xff\"", "1:6:", "invalid UTF-8"},
  {"x = 1 \xe2\x80", "1:7:", "invalid UTF-8"},
  {"\xc2\xa9 = 1", "1:1:", "unexpected character U+00A9"},
  {"a\n\n  b +* c", "3:6:", "unexpected token '*'"},
  {"a\r\nb c", "2:3:", "expected ';'"},
  {"a\rb\xe2\x80\xa8" "c d", "3:3:", "expected ';'"},
  {"\xcf\x80\xcf\x80 = 1; \xcf\x80 +* 2", "1:12:", "unexpected token '*'"},   /* columns count code points */
  {"x = { get a( }", "1:14:", "unexpected token"},
  {"export default 1", "1:1:", "'export' declaration outside a module"},
  {"super()", "", ""},   /* accepted at the top level (not checked); placeholder */
  {"`${a`", "1:5:", "unterminated template"},
  {"`${a b}`", "1:6:", "expected '}' in template literal"},
  {"async x", "1:8:", "expected '=>'"},
  {"for await (x of y) ;", "1:5:", "expected '(', got 'await'"},
  {"a\n.b\n.c(\n", "4:1:", "unexpected end of input"},
};
TEST(contracode_js_malformed_inputs) {
  size_t i;
  for (i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
    mlsys_contracode_js_ast a;
    mlsys_status st = mlsys_contracode_js_parse(bad_inputs[i].src, strlen(bad_inputs[i].src), 0, &a);
    if (!bad_inputs[i].where[0]) {
      CHECK_MSG(st == MLSYS_OK, "%s: %s", bad_inputs[i].src, mlsys_last_error());
      mlsys_contracode_js_free(&a);
      continue;
    }
    CHECK_MSG(st == MLSYS_ERR_PARSE, "'%s' parsed", bad_inputs[i].src);
    if (st == MLSYS_ERR_PARSE) {
      const char *m = mlsys_last_error();
      CHECK_MSG(!strncmp(m, bad_inputs[i].where, strlen(bad_inputs[i].where)) && strstr(m, bad_inputs[i].what),
                "'%s': got \"%s\", expected \"%s ...%s...\"", bad_inputs[i].src, m, bad_inputs[i].where, bad_inputs[i].what);
      CHECK(a.nodes == NULL && a.text == NULL);
    }
  }
}

/* Nesting limit: deep input is a named error, never a stack overflow; shallower input round-trips. */
static char *repeat3(const char *open, int n, const char *mid, const char *close) {
  size_t lo = strlen(open), lm = strlen(mid), lc = strlen(close), len = n * (lo + lc) + lm;
  char *s = (char *)malloc(len + 1), *q = s;
  int i;
  for (i = 0; i < n; i++) { memcpy(q, open, lo); q += lo; }
  memcpy(q, mid, lm); q += lm;
  for (i = 0; i < n; i++) { memcpy(q, close, lc); q += lc; }
  *q = 0;
  return s;
}
TEST(contracode_js_nesting_limit) {
  static const struct { const char *open, *mid, *close; } shapes[] = {
    {"(", "1", ")"}, {"[", "1", "]"}, {"{a:", "1", "}"}, {"f(", "1", ")"}, {"~", "1", ""}, {"a+", "1", ""},
    {"", "a", ".b"}, {"", "a", "[0]"}, {"", "f", "()"}, {"", "t", "``"}, {"{", "", "}"}, {"if(a)", "b", ""}, {"x=>", "1", ""}, {"function f(){", "", "}"},
    {"`${", "1", "}`"}, {"a?b:", "c", ""}, {"a=", "1", ""}, {"!", "a", ""}, {"new ", "a", ""}, {"a,", "1", ""},
    {"[", "", "]=a"}, {"a**", "1", ""},
  };
  size_t i;
  for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    mlsys_contracode_js_ast a;
    char *deep = repeat3(shapes[i].open, 20000, shapes[i].mid, shapes[i].close);
    char *ok = repeat3(shapes[i].open, 150, shapes[i].mid, shapes[i].close);
    mlsys_status st = mlsys_contracode_js_parse(deep, strlen(deep), 0, &a);
    if (!strcmp(shapes[i].open, "a,")) {
      /* a flat sequence is a list, not nesting */
      CHECK_MSG(st == MLSYS_OK, "%s: %s", shapes[i].open, mlsys_last_error());
      mlsys_contracode_js_free(&a);
    } else {
      CHECK_MSG(st == MLSYS_ERR_PARSE && strstr(mlsys_last_error(), "nesting deeper than 1000"), "shape '%s': %s",
                shapes[i].open, st == MLSYS_OK ? "parsed" : mlsys_last_error());
    }
    CHECK_MSG(round_trip(ok, strlen(ok), 0, NULL, shapes[i].open) == 0, "shape '%s' at depth 150", shapes[i].open);
    free(deep);
    free(ok);
  }
}

/* Long lists are flat (no recursion per element): a 100,000-element array in a for-init with `in` at its end. */
TEST(contracode_js_long_lists) {
  int n = 100000, i;
  size_t cap = (size_t)n * 2 + 64;
  char *src = (char *)malloc(cap), *q = src, *out = NULL;
  mlsys_status st;
  REQUIRE(src != NULL);
  q += sprintf(q, "for (var x = [");
  for (i = 0; i < n; i++) { *q++ = '0'; *q++ = ','; }
  q += sprintf(q, "a in b];;);");
  out = print_of(src, (size_t)(q - src), 0, 0, &st);
  CHECK_OK(st);
  if (out) CHECK(strstr(out, "for(var x=([0,0,") == out && strstr(out, ",a in b]);;);") != NULL);
  free(out);
  CHECK_EQ_INT(round_trip(src, (size_t)(q - src), 0, NULL, "long list"), 0);
  free(src);
}

TEST(contracode_js_function_spans) {
  const char *src =
      "function top(a) {\n  return a;\n}\n"
      "var g = function () { return () => 1; };\n"
      "var o = { m() {}, get p() { return 1; }, q: function named() {}, r: x => x };\n"
      "class C { constructor() {}\n static s() {} }\n"
      "obj.prop = async function () {};\n";
  static const struct { int kind; const char *name; int nlines; } want[] = {
    {MLSYS_CONTRACODE_FN_DECLARATION, "top", 3}, {MLSYS_CONTRACODE_FN_EXPRESSION, "g", 1},
    {MLSYS_CONTRACODE_FN_ARROW, "", 1}, {MLSYS_CONTRACODE_FN_METHOD, "m", 1}, {MLSYS_CONTRACODE_FN_METHOD, "p", 1},
    {MLSYS_CONTRACODE_FN_EXPRESSION, "named", 1}, {MLSYS_CONTRACODE_FN_ARROW, "r", 1},
    {MLSYS_CONTRACODE_FN_METHOD, "constructor", 1}, {MLSYS_CONTRACODE_FN_METHOD, "s", 1},
    {MLSYS_CONTRACODE_FN_EXPRESSION, "prop", 1},
  };
  mlsys_contracode_js_ast a;
  mlsys_contracode_fn_span *f = NULL;
  int n = 0, i;
  REQUIRE_OK(mlsys_contracode_js_parse(src, strlen(src), 0, &a));
  REQUIRE_OK(mlsys_contracode_js_functions(&a, &f, &n));
  CHECK_EQ_INT(n, (int)(sizeof want / sizeof want[0]));
  for (i = 0; i < n && i < (int)(sizeof want / sizeof want[0]); i++) {
    char name[64];
    int len = (int)(f[i].name_end - f[i].name_start);
    snprintf(name, sizeof name, "%.*s", len, src + f[i].name_start);
    CHECK_MSG(f[i].kind == want[i].kind && !strcmp(name, want[i].name) && f[i].nlines == want[i].nlines,
              "function %d: kind %d name '%s' lines %d; expected %d '%s' %d", i, f[i].kind, name, f[i].nlines,
              want[i].kind, want[i].name, want[i].nlines);
  }
  /* spans are the exact source text */
  CHECK(!strncmp(src + f[0].start, "function top(a) {", 17) && src[f[0].end - 1] == '}');
  CHECK(!strncmp(src + f[3].start, "m() {}", 6) && f[3].end - f[3].start == 6);
  CHECK(!strncmp(src + f[8].start, "static s() {}", 13) && f[8].end - f[8].start == 13);
  free(f);
  mlsys_contracode_js_free(&a);
}

/* ---- the Debian-packaged corpus and the acorn oracle ---- */
static const struct { const char *path; int module; } corpus[] = {
  {"/usr/share/javascript/underscore/underscore.js", 0},      /* libjs-underscore */
  {"/usr/share/javascript/underscore/underscore.min.js", 0},
  {"/usr/share/nodejs/acorn/dist/acorn.js", 0},                /* node-acorn */
  {"/usr/share/nodejs/acorn/dist/acorn.mjs", 1},
  {"/usr/share/nodejs/acorn/dist/bin.js", 0},
  {"/usr/share/nodejs/marked/lib/marked.cjs", 0},              /* node-marked */
  {"/usr/share/nodejs/marked/lib/marked.umd.js", 0},
  {"/usr/share/nodejs/marked/lib/marked.esm.js", 1},
  {"/usr/share/nodejs/marked/src/Lexer.js", 1},
  {"/usr/share/nodejs/marked/src/Tokenizer.js", 1},
  {"/usr/share/nodejs/marked/src/rules.js", 1},
  {"/usr/share/nodejs/marked/src/helpers.js", 1},
};
#define NCORPUS ((int)(sizeof corpus / sizeof corpus[0]))

TEST(contracode_js_corpus_round_trip) {
  int i;
  for (i = 0; i < NCORPUS; i++) {
    char *src;
    size_t n;
    if (mlsys_read_file(corpus[i].path, &src, &n) != MLSYS_OK) {
      CHECK_MSG(0, "%s missing: run scripts/install-deps.sh (libjs-underscore, node-acorn, node-marked)", corpus[i].path);
      continue;
    }
    CHECK_MSG(round_trip(src, n, corpus[i].module ? MLSYS_CONTRACODE_JS_MODULE : 0, NULL, corpus[i].path) == 0,
              "%s does not round-trip", corpus[i].path);
    free(src);
  }
}

/* ---- terser's output options: braces, quote_style, quote_keys (issue 25 item 2) ---- */

static char *print_opts_of(const char *src, int flags, const mlsys_contracode_js_print_opts *o, mlsys_status *st) {
  mlsys_contracode_js_ast a;
  char *out = NULL;
  *st = mlsys_contracode_js_parse(src, strlen(src), flags, &a);
  if (*st != MLSYS_OK) return NULL;
  *st = mlsys_contracode_js_print(&a, o, &out, NULL);
  mlsys_contracode_js_free(&a);
  return out;
}
static void expect_opts(const char *src, int beautify, int braces, int quote, int keys, const char *want) {
  mlsys_contracode_js_print_opts o = {beautify, 2, braces, quote, keys};
  mlsys_status st;
  char *out = print_opts_of(src, 0, &o, &st);
  CHECK_MSG(out != NULL, "%s: %s", src, mlsys_last_error());
  if (out) CHECK_MSG(!strcmp(out, want), "%s (b%d br%d q%d k%d)\n      printed  %s\n      expected %s", src, beautify,
                     braces, quote, keys, out, want);
  free(out);
}

TEST(contracode_js_print_quote_style) {
  enum { O = MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL, F = MLSYS_CONTRACODE_JS_QUOTE_FEWER,
         S = MLSYS_CONTRACODE_JS_QUOTE_SINGLE, D = MLSYS_CONTRACODE_JS_QUOTE_DOUBLE };
  /* 'it\'s': double needs no escape, so fewer-escapes picks it and the backslash goes */
  expect_opts("x='it\\'s'", 0, 0, O, 0, "x='it\\'s';");
  expect_opts("x='it\\'s'", 0, 0, F, 0, "x=\"it's\";");
  expect_opts("x='it\\'s'", 0, 0, D, 0, "x=\"it's\";");
  expect_opts("x='it\\'s'", 0, 0, S, 0, "x='it\\'s';");
  /* one quote of each kind: a tie, so double; single escapes the ' and frees the " */
  expect_opts("x=\"a\\\"b'c\"", 0, 0, F, 0, "x=\"a\\\"b'c\";");
  expect_opts("x=\"a\\\"b'c\"", 0, 0, S, 0, "x='a\"b\\'c';");
  expect_opts("x=\"a\\\"b'c\"", 0, 0, D, 0, "x=\"a\\\"b'c\";");
  /* more doubles than singles in the value: fewer-escapes takes single quotes */
  expect_opts("x=\"say \\\"hi\\\"\"", 0, 0, F, 0, "x='say \"hi\"';");
  /* \x27 is a quote in the value (counted) but stays written as it is; so does every other escape */
  expect_opts("x='\\x27'", 0, 0, F, 0, "x=\"\\x27\";");
  expect_opts("x='\\x27\\u0027\"'", 0, 0, F, 0, "x=\"\\x27\\u0027\\\"\";");   /* 2 ' to 1 " */
  expect_opts("x='\\x22\\42'", 0, 0, F, 0, "x='\\x22\\42';");
  expect_opts("x='a\\\\'", 0, 0, D, 0, "x=\"a\\\\\";");                 /* \\ then the closing quote */
  expect_opts("x='\\\\\\''", 0, 0, D, 0, "x=\"\\\\'\";");              /* \\ then \' */
  expect_opts("x='a\\\nb'", 0, 0, D, 0, "x=\"a\\\nb\";");              /* line continuation */
  expect_opts("x='a\\\r\nb'", 0, 0, D, 0, "x=\"a\\\r\nb\";");
  expect_opts("x='\\n\\t\\u{1F600}é\"'", 0, 0, D, 0, "x=\"\\n\\t\\u{1F600}é\\\"\";");
  /* keys, import/export sources; templates and regexes are never touched */
  expect_opts("x={'a':1,\"b\":'c'}", 0, 0, D, 0, "x={\"a\":1,\"b\":\"c\"};");
  expect_opts("x=`'${'a'}\"`+/'\"/", 0, 0, D, 0, "x=`'${\"a\"}\"`+/'\"/;");
  {
    mlsys_contracode_js_print_opts o = {0, 2, 0, S, 0};
    mlsys_status st;
    char *out = print_opts_of("import a from \"x\";export {b} from \"y\";export * from \"z\"", MLSYS_CONTRACODE_JS_MODULE, &o, &st);
    CHECK(out && !strcmp(out, "import a from'x';export{b}from'y';export*from'z';"));
    if (out) printf("    module: %s\n", out);
    free(out);
  }
  /* directives: re-quoted only when their body has no backslash and no quote */
  expect_opts("'use strict';'a\\x41'", 0, 0, D, 0, "\"use strict\";'a\\x41';");
  expect_opts("function f(){'use strict';'it\\'s';x='a'}", 0, 0, D, 0, "function f(){\"use strict\";'it\\'s';x=\"a\";}");
  expect_opts("\"use strict\";('a')", 0, 0, S, 0, "'use strict';('a');");   /* not a directive: parenthesized */
  /* a bad style is a named error */
  {
    mlsys_contracode_js_print_opts o = {0, 2, 0, 7, 0};
    mlsys_status st;
    char *out = print_opts_of("x", 0, &o, &st);
    CHECK(out == NULL && st == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "quote_style");
  }
}

TEST(contracode_js_print_quote_keys) {
  enum { O = MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL, S = MLSYS_CONTRACODE_JS_QUOTE_SINGLE };
  expect_opts("x={a:1, \"b\":2, 1:3, 1e3:4, [c]:5, d, __proto__, f(){}, get g(){}, set h(v){}, async *i(){}}", 0, 0, O, 1,
              "x={\"a\":1,\"b\":2,\"1\":3,1e3:4,[c]:5,\"d\":d,__proto__,\"f\"(){},get\"g\"(){},set\"h\"(v){},async*\"i\"(){}};");
  /* canonical numbers only: 0.5, 100, 12.25 quote; .5, 0x10, 1.0, 1.50, 01, 1_0, 0.0000001 and 1n do not */
  expect_opts("x={0.5:1,100:2,12.25:3,.5:4,0x10:5,1.0:6,1.50:7,01:8,1_0:9,0.0000001:10,1n:11,0:12}", 0, 0, O, 1,
              "x={\"0.5\":1,\"100\":2,\"12.25\":3,.5:4,0x10:5,1.0:6,1.50:7,01:8,1_0:9,0.0000001:10,1n:11,\"0\":12};");
  /* the quote follows quote_style (single only when asked); keywords and escaped names are IdentifierNames too */
  expect_opts("x={a:1,if:2,\\u0062:3,'c':4}", 0, 0, S, 1, "x={'a':1,'if':2,'\\u0062':3,'c':4};");
  /* not in classes, patterns or member expressions */
  expect_opts("class A{a(){}static b=1}({a,b:c}=d);o.e;o['f']", 0, 0, O, 1, "class A{a(){}static b=1;}({a,b:c}=d);o.e;o['f'];");
  expect_opts("x={a:1}", 1, 0, O, 1, "x = {\"a\": 1};\n");
}

TEST(contracode_js_print_braces) {
  expect_opts("if(a)b();else if(c)d();else e()", 0, 1, 0, 0, "if(a){b();}else if(c){d();}else{e();}");
  expect_opts("for(;;)x()", 0, 1, 0, 0, "for(;;){x();}");
  expect_opts("while(a)b()", 0, 1, 0, 0, "while(a){b();}");
  expect_opts("do x(); while(a)", 0, 1, 0, 0, "do{x();}while(a);");
  expect_opts("l: for(;;) continue l", 0, 1, 0, 0, "l:for(;;){continue l;}");   /* the label's body stays */
  expect_opts("for(k in o);for(v of a)if(v);with(o)f()", 0, 1, 0, 0, "for(k in o){}for(v of a){if(v){}}with(o){f();}");
  expect_opts("if(a)if(b)c();else d()", 0, 1, 0, 0, "if(a){if(b){c();}else{d();}}");
  expect_opts("if(a){b()}else{c()}", 0, 1, 0, 0, "if(a){b();}else{c();}");   /* blocks stay as they are */
  /* terse: the `;` before a `}` goes, as in blocks */
  expect_opts("function f(){if(a)return 1;else for(;;);}", MLSYS_CONTRACODE_JS_TERSE, 1, 0, 0,
              "function f(){if(a){return 1}else{for(;;){}}}");
  expect_opts("if(a)b();else if(c)d();else e();do x();while(a)", 1, 1, 0, 0,
              "if (a) {\n  b();\n} else if (c) {\n  d();\n} else {\n  e();\n}\ndo {\n  x();\n} while (a);\n");
}

/* A test-side normal form for comparing trees up to the intended changes, written independently of the printer:
   every string literal becomes its decoded value (UTF-16 code units, as "\u{hex}" each), object-literal keys that
   are names or canonical numbers become such strings too (shorthand undone, except __proto__), and a single-statement
   or empty block in a body position is unwrapped (an empty one becomes an empty statement). A directive's string is
   decoded only when its body has no backslash and no quote (the printer must leave the others as written). */
static void nf_units(const char *t, size_t n, char *out, size_t *o) {
  size_t i = 0;
  while (i < n) {
    unsigned long cp;
    unsigned char c = (unsigned char)t[i];
    if (c == '\\') {
      unsigned char e = (unsigned char)t[i + 1];
      i += 2;
      if (e == '\n' || e == 0xE2) {   /* continuation (LF or U+2028/9, three bytes) */
        if (e == 0xE2) i += 2;
        continue;
      }
      if (e == '\r') { if (i < n && t[i] == '\n') i++; continue; }
      if (e == 'n') cp = '\n';
      else if (e == 't') cp = '\t';
      else if (e == 'r') cp = '\r';
      else if (e == 'b') cp = '\b';
      else if (e == 'f') cp = '\f';
      else if (e == 'v') cp = '\v';
      else if (e == 'x') { cp = strtoul((char[]){t[i], t[i + 1], 0}, NULL, 16); i += 2; }
      else if (e == 'u' && t[i] == '{') { char *end; cp = strtoul(t + i + 1, &end, 16); i = (size_t)(end - t) + 1; }
      else if (e == 'u') { cp = strtoul((char[]){t[i], t[i + 1], t[i + 2], t[i + 3], 0}, NULL, 16); i += 4; }
      else if (e >= '0' && e <= '7') {
        int k = 1, max = e <= '3' ? 3 : 2;
        cp = e - '0';
        while (k < max && i < n && t[i] >= '0' && t[i] <= '7') cp = cp * 8 + (unsigned long)(t[i++] - '0'), k++;
      } else if (e < 0x80) cp = e;
      else { i -= 1; c = e; goto utf8; }   /* \ before a non-ASCII character: the character */
    } else {
    utf8:
      if (c < 0x80) cp = c, i++;
      else if (c < 0xE0) cp = (unsigned long)(c & 0x1F) << 6 | (t[i + 1] & 0x3F), i += 2;
      else if (c < 0xF0) cp = (unsigned long)(c & 0x0F) << 12 | (unsigned long)(t[i + 1] & 0x3F) << 6 | (t[i + 2] & 0x3F), i += 3;
      else cp = (unsigned long)(c & 0x07) << 18 | (unsigned long)(t[i + 1] & 0x3F) << 12 | (unsigned long)(t[i + 2] & 0x3F) << 6 | (t[i + 3] & 0x3F), i += 4;
    }
    if (cp >= 0x10000) {
      *o += (size_t)sprintf(out + *o, "\\u{%lx}\\u{%lx}", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      *o += (size_t)sprintf(out + *o, "\\u{%lx}", cp);
    }
  }
}
/* Replaces node x's text by `"` + the units of t[0..n) (decoded when decode, else copied) + `"`. */
static void nf_set(mlsys_contracode_js_ast *a, int x, const char *t, size_t n, int decode) {
  char *buf = (char *)malloc(16 * n + 3);
  size_t o = 0;
  buf[o++] = '"';
  if (decode) nf_units(t, n, buf, &o);
  else { memcpy(buf + o, t, n); o += n; }
  buf[o++] = '"';
  if (a->text_len + o + 1 > a->text_cap) {
    a->text_cap = 2 * (a->text_len + o + 1);
    a->text = (char *)realloc(a->text, a->text_cap);
  }
  memcpy(a->text + a->text_len, buf, o);
  a->nodes[x].str = (uint32_t)a->text_len;
  a->nodes[x].slen = (uint32_t)o;
  a->text_len += o;
  a->text[a->text_len] = 0;
  a->nodes[x].kind = MLSYS_CONTRACODE_JS_LITERAL;
  a->nodes[x].op = MLSYS_CONTRACODE_JS_LIT_STRING;
  a->nodes[x].flags = 0;
  free(buf);
}
/* ToString(the number) == its text, checked through the C library: integers below 2^53 print with %.0f, others by
   the shortest %.*g that reads back the same (no exponent allowed). */
static int nf_canonical_number(const char *t, size_t n) {
  char s[64], b[64];
  double v;
  int p;
  if (n >= sizeof s || n == 0) return 0;
  memcpy(s, t, n);
  s[n] = 0;
  if (strspn(s, "0123456789.") != n || (s[0] == '0' && n > 1 && s[1] != '.')) return 0;
  v = strtod(s, NULL);
  if (v == floor(v) && v < 9007199254740992.0) { snprintf(b, sizeof b, "%.0f", v); return !strcmp(b, s); }
  for (p = 1; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strtod(b, NULL) == v) break;
  }
  return !strchr(b, 'e') && !strcmp(b, s);
}
static int nf_is_body_block(mlsys_contracode_js_ast *a, int x) {
  return x && a->nodes[x].kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT &&
         (!a->nodes[x].a || !a->nodes[a->nodes[x].a].next);
}
static int nf_unwrap(mlsys_contracode_js_ast *a, int x) {
  while (nf_is_body_block(a, x)) {
    if (!a->nodes[x].a) { a->nodes[x].kind = MLSYS_CONTRACODE_JS_EMPTY_STATEMENT; break; }
    x = a->nodes[x].a;
  }
  return x;
}
static void normal_form(mlsys_contracode_js_ast *a) {
  int x, nn = a->nnodes;
  for (x = 1; x < nn; x++) {
    mlsys_contracode_js_node *n = &a->nodes[x];
    switch (n->kind) {
      case MLSYS_CONTRACODE_JS_IF_STATEMENT: n->b = nf_unwrap(a, n->b); if (n->c) n->c = nf_unwrap(a, n->c); break;
      case MLSYS_CONTRACODE_JS_FOR_STATEMENT: n->d = nf_unwrap(a, n->d); break;
      case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT: n->c = nf_unwrap(a, n->c); break;
      case MLSYS_CONTRACODE_JS_WHILE_STATEMENT: case MLSYS_CONTRACODE_JS_WITH_STATEMENT: n->b = nf_unwrap(a, n->b); break;
      case MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT: n->a = nf_unwrap(a, n->a); break;
      case MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT:
        if (n->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE) {
          mlsys_contracode_js_node *l = &a->nodes[n->a];
          const char *t = a->text + l->str + 1;
          size_t len = l->slen - 2;
          if (!memchr(t, '\\', len) && !memchr(t, '\'', len) && !memchr(t, '"', len)) nf_set(a, n->a, t, len, 0);
          l->flags |= 0x8000;   /* done: leave it */
        }
        break;
      case MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION: {
        int p;
        for (p = n->a; p; p = a->nodes[p].next) {
          mlsys_contracode_js_node *pn = &a->nodes[p], *k;
          if (pn->kind != MLSYS_CONTRACODE_JS_PROPERTY || (pn->flags & MLSYS_CONTRACODE_JS_F_COMPUTED)) continue;
          k = &a->nodes[pn->a];
          if ((pn->flags & MLSYS_CONTRACODE_JS_F_SHORTHAND) && k->slen == 9 && !memcmp(a->text + k->str, "__proto__", 9)) continue;
          if (k->kind == MLSYS_CONTRACODE_JS_IDENTIFIER ||
              (k->kind == MLSYS_CONTRACODE_JS_LITERAL && k->op == MLSYS_CONTRACODE_JS_LIT_NUMBER &&
               nf_canonical_number(a->text + k->str, k->slen))) {
            if (pn->flags & MLSYS_CONTRACODE_JS_F_SHORTHAND) {   /* the value is the same name: a node of its own */
              pn->flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_SHORTHAND;
            }
            nf_set(a, pn->a, a->text + k->str, k->slen, 1);   /* a name's \u escapes decode like a string's */
            a->nodes[pn->a].flags |= 0x8000;
          }
        }
        break;
      }
      default: break;
    }
  }
  for (x = 1; x < nn; x++) {
    mlsys_contracode_js_node *n = &a->nodes[x];
    if (n->kind == MLSYS_CONTRACODE_JS_LITERAL && n->op == MLSYS_CONTRACODE_JS_LIT_STRING && !(n->flags & 0x8000))
      nf_set(a, x, a->text + n->str + 1, n->slen - 2, 1);
    n->flags &= 0x7FFF;
  }
}
static char *nf_canon(const char *src, int flags) {
  mlsys_contracode_js_ast a;
  char *c = NULL;
  if (mlsys_contracode_js_parse(src, strlen(src), flags, &a) != MLSYS_OK) return NULL;
  normal_form(&a);
  if (mlsys_contracode_js_canonical(&a, 0, &c, NULL) != MLSYS_OK) c = NULL;
  mlsys_contracode_js_free(&a);
  return c;
}

static const char *const quote_programs[] = {
  "x = ['it\\'s', \"a\\\"b'c\", '\\x27', 'a\\\nb', '\\u{1F600}😀', '\\0', '\\101\\7', \"\\\\\", '\"\\'\"']",
  "'use strict'; \"use\\x20strict\"; function f() { 'a\\'b'; return 'x' }", "x = {a, b: 1, 'c d': 2, 1: 3, 1e3: 4, [e]: 5}",
  "x = {__proto__, f() {}, get g() {}, set g(v) {}, async *h() {}, 0.5: 1, 100: 2, .5: 3, 0x10: 4, if: 5, \\u0061b: 6}",
  "x = {__proto__: null, '__proto__'() {}}", "if (a) b(); else if (c) d(); else e()", "if (a) if (b) c(); else d(); else e()",
  "for (;;) ; for (k in o) if (k) continue; for (v of a) while (v) do v--; while (w)", "l: for (;;) continue l",
  "with (o) if (a) b", "if (a) { } else { b() }", "x = `'${\"a\"}'` + /'\"/",
};

/* Every option combination on the program tables, quote_programs and the Debian corpus: print(parse(x)) re-parses,
   is a print fixpoint, and has x's tree up to the intended changes (normal_form, which decodes string values on its
   own). */
TEST(contracode_js_print_options_round_trip) {
  int beautify, braces, quote, keys, bad = 0, checked = 0;
  size_t i;
  for (beautify = 0; beautify <= 2; beautify++)
    for (braces = 0; braces <= 1; braces++)
      for (quote = 0; quote <= 3; quote++)
        for (keys = 0; keys <= 1; keys++) {
          mlsys_contracode_js_print_opts o = {beautify, 2, braces, quote, keys};
          size_t np = sizeof programs / sizeof *programs, nq = sizeof quote_programs / sizeof *quote_programs;
          size_t nm = sizeof modules / sizeof *modules;
          for (i = 0; i < np + nq + nm + NCORPUS; i++) {
            const char *src;
            char *file = NULL, *p1, *p2, *c0, *c1;
            size_t n = 0;
            int flags = i >= np + nq && i < np + nq + nm ? MLSYS_CONTRACODE_JS_MODULE : 0;
            mlsys_status st;
            if (i < np) src = programs[i];
            else if (i < np + nq) src = quote_programs[i - np];
            else if (i < np + nq + nm) src = modules[i - np - nq];
            else {
              if (mlsys_read_file(corpus[i - np - nq - nm].path, &file, &n) != MLSYS_OK) continue;
              flags = corpus[i - np - nq - nm].module ? MLSYS_CONTRACODE_JS_MODULE : 0;
              if (beautify == 1 || (quote != 1 && quote != 2)) { free(file); continue; }   /* bound the work */
              src = file;
            }
            if (!strcmp(src, "await: 1")) continue;   /* the module table's one error case */
            p1 = print_opts_of(src, flags, &o, &st);
            p2 = p1 ? print_opts_of(p1, flags, &o, &st) : NULL;
            c0 = nf_canon(src, flags);
            c1 = p1 ? nf_canon(p1, flags) : NULL;
            checked++;
            if (!p1 || !p2 || !c0 || !c1 || strcmp(p1, p2) || strcmp(c0, c1)) {
              if (bad++ < 5)
                printf("    b%d br%d q%d k%d: %s%.200s\n      printed: %.300s\n", beautify, braces, quote, keys,
                       !p2 ? "does not re-parse: " : !c1 || !c0 ? "no canonical form: " : strcmp(p1, p2) ? "not a fixpoint: " : "tree differs: ",
                       file ? corpus[i - np - nq - nm].path : src, p1 ? p1 : "(print failed)");
            }
            free(p1), free(p2), free(c0), free(c1), free(file);
          }
        }
  printf("    %d prints checked\n", checked);
  CHECK_EQ_INT(bad, 0);
  /* the normal form is not blind: changing a string's value, unquoting 1e3 or dropping a statement is seen */
  {
    char *a = nf_canon("x='a\\'b'", 0), *b = nf_canon("x=\"a'c\"", 0), *c = nf_canon("x=\"a'b\"", 0);
    char *d = nf_canon("x={1e3:1}", 0), *e = nf_canon("x={'1e3':1}", 0), *f = nf_canon("x={'1000':1}", 0);
    char *g = nf_canon("if(a){b();c()}", 0), *h = nf_canon("if(a)b();c()", 0);
    char *j = nf_canon("x={__proto__}", 0), *k = nf_canon("x={'__proto__':__proto__}", 0);
    CHECK(a && b && c && strcmp(a, b) && !strcmp(a, c));
    CHECK(d && e && f && strcmp(d, e) && strcmp(d, f));   /* 1e3 is not canonical: it stays a number */
    CHECK(g && h && strcmp(g, h));
    CHECK(j && k && strcmp(j, k));
    free(a), free(b), free(c), free(d), free(e), free(f), free(g), free(h), free(j), free(k);
  }
}

/* Parses the oracle's "FILE\tHASH\tKind=n Kind=n" line into the tree hash and counts indexed by our kinds; -1 on
   an unknown kind. */
static int parse_counts(const char *line, char *hash, long *counts, char *unknown, size_t ulen) {
  const char *p = strchr(line, '\t'), *q;
  memset(counts, 0, MLSYS_CONTRACODE_JS_KIND_COUNT * sizeof *counts);
  if (!p) return -1;
  p++;
  q = strchr(p, '\t');
  if (!q || q - p != 40) return -1;
  memcpy(hash, p, 40);
  hash[40] = 0;
  p = q + 1;
  while (*p && *p != '\n') {
    char name[64];
    long v;
    int k, len = 0;
    while (p[len] && p[len] != '=') len++;
    if (!p[len] || len >= 64) return -1;
    memcpy(name, p, (size_t)len);
    name[len] = 0;
    v = strtol(p + len + 1, (char **)&p, 10);
    for (k = 1; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++)
      if (!strcmp(mlsys_contracode_js_kind_name(k), name)) break;
    if (k == MLSYS_CONTRACODE_JS_KIND_COUNT) {
      snprintf(unknown, ulen, "%s", name);
      return -1;
    }
    counts[k] = v;
    while (*p == ' ') p++;
  }
  return 0;
}
/* Runs the oracle on files (all script or all module); lines[i] gets file i's output. */
static int run_oracle(const char *const *files, int nf, int module, char lines[][8192]) {
  char cmd[8192];
  FILE *f;
  int i, got = 0;
  snprintf(cmd, sizeof cmd, "node tests/oracle/acorn_counts.js%s", module ? " --module" : "");
  for (i = 0; i < nf; i++) {
    strcat(cmd, " ");
    strcat(cmd, files[i]);
  }
  strcat(cmd, " 2>/dev/null");
  f = popen(cmd, "r");
  if (!f) return -1;
  while (got < nf && fgets(lines[got], 8192, f)) got++;
  pclose(f);
  return got;
}
TEST(contracode_js_acorn_oracle_counts) {
  /* Compared kinds: every ESTree type acorn produces on these files, and every kind of ours except Hole (acorn's
     array elision is null). Acorn also parses our compact printed output of each file: its counts must be the same
     and acorn's whole tree (positions left out) must hash the same as the original's, so an independent parser
     says that printing kept the tree. */
  static char lines[2 * NCORPUS][8192];
  char tmpdir[] = "/tmp/cc_oracle_XXXXXX";
  const char *files[2 * NCORPUS];
  char paths[NCORPUS][256];
  int i, pass, compared = 0, hashes_equal = 0;
  char orig_hash[41] = "";
  if (system("node --version >/dev/null 2>&1") != 0) SKIP_DEP("node is not installed");
  if (access("tests/oracle/acorn_counts.js", R_OK) != 0) SKIP_DEP("run from the repository root");
  if (access("/usr/share/nodejs/acorn/dist/acorn.js", R_OK) != 0) {
    CHECK_MSG(0, "node-acorn missing: run scripts/install-deps.sh");
    return;
  }
  REQUIRE(mkdtemp(tmpdir) != NULL);
  for (pass = 0; pass <= 1; pass++) {
    int nf = 0, idx[NCORPUS], got;
    for (i = 0; i < NCORPUS; i++) {
      char *src, *out;
      size_t n;
      mlsys_status st;
      FILE *o;
      if (corpus[i].module != pass) continue;
      if (mlsys_read_file(corpus[i].path, &src, &n) != MLSYS_OK) continue;
      out = print_of(src, n, corpus[i].module, 0, &st);
      free(src);
      if (!out) continue;
      snprintf(paths[i], sizeof paths[i], "%s/printed%d.js", tmpdir, i);
      o = fopen(paths[i], "w");
      if (o) { fputs(out, o); fclose(o); }
      free(out);
      idx[nf / 2] = i;
      files[nf++] = corpus[i].path;
      files[nf++] = paths[i];
    }
    if (!nf) continue;
    got = run_oracle(files, nf, pass, lines);
    CHECK_MSG(got == nf, "oracle answered %d of %d files", got, nf);
    for (i = 0; i < got; i++) {
      long theirs[MLSYS_CONTRACODE_JS_KIND_COUNT], ours[MLSYS_CONTRACODE_JS_KIND_COUNT];
      char unknown[64] = "", hash[41], *src;
      size_t n;
      int k, c = idx[i / 2];
      mlsys_contracode_js_ast a;
      if (parse_counts(lines[i], hash, theirs, unknown, sizeof unknown) != 0) {
        CHECK_MSG(0, "oracle line for %s: %.200s (unknown kind '%s')", files[i], lines[i], unknown);
        continue;
      }
      if (i % 2 == 0) {
        strcpy(orig_hash, hash);
      } else {
        CHECK_MSG(!strcmp(hash, orig_hash), "%s: acorn's tree of our printed output differs from the original's",
                  corpus[c].path);
        hashes_equal += !strcmp(hash, orig_hash);
      }
      if (mlsys_read_file(corpus[c].path, &src, &n) != MLSYS_OK) continue;
      if (mlsys_contracode_js_parse(src, n, corpus[c].module, &a) != MLSYS_OK) { free(src); continue; }
      mlsys_contracode_js_count_kinds(&a, ours);
      for (k = 1; k < MLSYS_CONTRACODE_JS_KIND_COUNT; k++) {
        if (k == MLSYS_CONTRACODE_JS_HOLE) continue;
        CHECK_MSG(ours[k] == theirs[k], "%s: %s ours %ld, acorn %ld", files[i], mlsys_contracode_js_kind_name(k),
                  ours[k], theirs[k]);
        compared += theirs[k] > 0;
      }
      mlsys_contracode_js_free(&a);
      free(src);
    }
    for (i = 0; i < NCORPUS; i++)
      if (corpus[i].module == pass) remove(paths[i]);
  }
  rmdir(tmpdir);
  CHECK(compared >= 200);   /* (file, kind) pairs with a non-zero count */
  CHECK_EQ_INT(hashes_equal, NCORPUS);
}

/* The command: `mlsys contracode parse|print` (skipped when build/mlsys is not built). */
TEST(contracode_js_cli) {
  char dir[] = "/tmp/cc_cli_XXXXXX", ok[64], bad[64], args[256];
  run_result r;
  FILE *f;
  if (access(bin(), X_OK) != 0) SKIP_DEP("%s not built (make build/mlsys)", bin());
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(ok, sizeof ok, "%s/ok.js", dir);
  snprintf(bad, sizeof bad, "%s/bad.js", dir);
  f = fopen(ok, "w");
  REQUIRE(f != NULL);
  fputs("function f(a) {\n  return a + 1;\n}\nvar g = (x) => x * 2;\n", f);
  fclose(f);
  f = fopen(bad, "w");
  REQUIRE(f != NULL);
  fputs("var x = 1;\nvar y = ;\n", f);
  fclose(f);
  snprintf(args, sizeof args, "contracode parse %s", ok);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) {
    CHECK_CONTAINS(r.out, "56 bytes, 17 nodes, 2 functions");
    CHECK_CONTAINS(r.out, "1  0-33  3  declaration  f");
    CHECK_CONTAINS(r.out, "4  42-54  1  arrow  g");
  }
  run_free(&r);
  snprintf(args, sizeof args, "contracode parse %s --json", ok);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) CHECK_CONTAINS(r.out, "{\"kind\": \"arrow\", \"name\": \"g\", \"line\": 4, \"start\": 42, \"end\": 54, \"lines\": 1}");
  run_free(&r);
  snprintf(args, sizeof args, "contracode print %s", ok);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) CHECK_STR(r.out, "function f(a){return a+1;}var g=(x)=>x*2;\n");
  run_free(&r);
  snprintf(args, sizeof args, "contracode print %s --beautify --indent 4", ok);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  if (r.out) CHECK_STR(r.out, "function f(a) {\n    return a + 1;\n}\nvar g = (x) => x * 2;\n");
  run_free(&r);
  snprintf(args, sizeof args, "contracode parse %s", bad);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  if (r.err) CHECK_CONTAINS(r.err, "bad.js:2:9: unexpected token ';'");
  run_free(&r);
  snprintf(args, sizeof args, "contracode print %s --json", ok);
  r = run(args);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("contracode frobnicate x.js");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  remove(ok);
  remove(bad);
  rmdir(dir);
}

TEST(contracode_js_api_errors) {
  mlsys_contracode_js_ast a;
  char *out;
  CHECK(mlsys_contracode_js_parse(NULL, 5, 0, &a) == MLSYS_ERR_ARG);
  CHECK(mlsys_contracode_js_parse("x", 1, 0, NULL) == MLSYS_ERR_ARG);
  memset(&a, 0, sizeof a);
  CHECK(mlsys_contracode_js_print(&a, NULL, &out, NULL) == MLSYS_ERR_ARG);
  REQUIRE_OK(mlsys_contracode_js_parse("", 0, 0, &a));
  REQUIRE_OK(mlsys_contracode_js_print(&a, NULL, &out, NULL));
  CHECK_STR(out, "");
  free(out);
  mlsys_contracode_js_free(&a);
  mlsys_contracode_js_free(&a);   /* twice is harmless */
}

TEST_MAIN()
