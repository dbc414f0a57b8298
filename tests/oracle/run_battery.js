#!/usr/bin/env node
// tests/oracle/run_battery.js — the semantic oracle of mlsys_contracode.h (spec §7.5 "semantic-equivalence batteries").
// Loads one library file (a UMD/CommonJS bundle: underscore.js, acorn.js, marked.umd.js) into a fresh vm context
// whose Math.random is a seeded LCG (reset at load: marked obfuscates mailto: links with Math.random), runs that
// library's battery of API calls and prints the results, one line per call:
//   #battery<TAB>NAME          first line: the battery that ran
//   CALL<TAB>CANONICAL-JSON    one per call; a thrown error is a value ({"$throw": ...}), never a crash
// The output is deterministic (no clocks, no addresses, insertion order kept), so running it on an original library
// and on a transformed copy and comparing the lines is a differential test of the transform.
// Usage: node tests/oracle/run_battery.js FILE.js [--battery underscore|acorn|marked|auto]
// Only Debian packages are read (node-acorn, node-marked, libjs-underscore); no npm packages.
'use strict';
const fs = require('fs');
const vm = require('vm');
const zlib = require('zlib');
const crypto = require('crypto');

// ---- canonical JSON: every JS value gets one spelling; undefined, NaN, -0, functions and errors included ----
function canon(v, seen) {
  if (v === undefined) return '{"$undefined":1}';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'number':
      if (Number.isNaN(v)) return '{"$num":"NaN"}';
      if (!Number.isFinite(v)) return v > 0 ? '{"$num":"Infinity"}' : '{"$num":"-Infinity"}';
      if (Object.is(v, -0)) return '{"$num":"-0"}';
      return JSON.stringify(v);
    case 'string': case 'boolean': return JSON.stringify(v);
    case 'bigint': return '{"$bigint":' + JSON.stringify(v.toString()) + '}';
    case 'symbol': return '{"$symbol":' + JSON.stringify(String(v)) + '}';
    // A function's source text is what a transform changes; its name and arity are observable behaviour.
    case 'function': return '{"$function":' + JSON.stringify(v.name) + ',"length":' + v.length + '}';
  }
  seen = seen || [];
  if (seen.includes(v)) return '{"$cycle":' + (seen.length - seen.indexOf(v)) + '}';
  seen.push(v);
  let out;
  const tag = Object.prototype.toString.call(v);
  if (Array.isArray(v)) {
    const parts = [];
    for (let i = 0; i < v.length; i++) parts.push(i in v ? canon(v[i], seen) : '{"$hole":1}');
    out = '[' + parts.join(',') + ']';
  } else if (tag === '[object Error]') {
    out = '{"$error":' + JSON.stringify(String(v.name)) + ',"message":' + JSON.stringify(String(v.message));
    for (const k of Object.keys(v)) out += ',' + JSON.stringify(k) + ':' + canon(v[k], seen);
    out += '}';
  } else if (tag === '[object RegExp]') {
    out = '{"$regexp":' + JSON.stringify(String(v)) + '}';
  } else if (tag === '[object Date]') {
    out = '{"$date":' + JSON.stringify(isNaN(v.getTime()) ? 'Invalid' : v.toISOString()) + '}';
  } else if (tag === '[object Map]') {
    out = '{"$map":[' + Array.from(v, ([k, x]) => '[' + canon(k, seen) + ',' + canon(x, seen) + ']').join(',') + ']}';
  } else if (tag === '[object Set]') {
    out = '{"$set":[' + Array.from(v, (x) => canon(x, seen)).join(',') + ']}';
  } else {
    // Insertion order is kept on purpose: key order is observable (for-in, Object.keys, JSON.stringify).
    const parts = Object.keys(v).map((k) => JSON.stringify(k) + ':' + canon(v[k], seen));
    out = '{' + parts.join(',') + '}';
  }
  seen.pop();
  return out;
}

// ---- loading: a fresh context, CommonJS globals, seeded Math.random ----
function load(file) {
  const src = fs.readFileSync(file, 'utf8');
  const module_ = { exports: {} };
  const ctx = vm.createContext({ module: module_, exports: module_.exports, console: { log() {}, warn() {}, error() {} } });
  // Park–Miller style LCG (32-bit, Numerical Recipes constants) — any fixed sequence works, as long as it restarts.
  vm.runInContext('(function(){var s=12345;Math.random=function(){s=(Math.imul(s,1664525)+1013904223)>>>0;' +
    'return s/4294967296;};})()', ctx);
  vm.runInContext(src, ctx, { filename: file });
  return { lib: module_.exports, ctx };
}

// ---- batteries: each returns [[name, thunk], ...]; thunks run in order ----
function underscoreBattery(_) {
  const people = [{ name: 'moe', age: 40 }, { name: 'larry', age: 50 }, { name: 'curly', age: 60 }, { name: 'shemp', age: 40 }];
  const calls = [
    ['VERSION', () => _.VERSION],
    ['functions', () => _.functions(_)],
    ['chunk', () => _.chunk([1, 2, 3, 4, 5, 6, 7], 3)],
    ['uniq', () => [_.uniq([1, 2, 1, 4, 1, 3]), _.uniq([1, 1, 2, 3, 3], true), _.uniq(people, false, 'age')]],
    ['flatten', () => [_.flatten([1, [2], [3, [[4]]]]), _.flatten([1, [2], [3, [[4]]]], true), _.flatten([[1, [2]], 3], 1)]],
    ['zip', () => _.zip(['moe', 'larry', 'curly'], [30, 40, 50], [true, false, false])],
    ['unzip', () => _.unzip([['a', 1], ['b', 2], ['c', 3]])],
    ['groupBy', () => [_.groupBy([1.3, 2.1, 2.4], Math.floor), _.groupBy(['one', 'two', 'three'], 'length')]],
    ['countBy', () => _.countBy([1, 2, 3, 4, 5], (n) => (n % 2 === 0 ? 'even' : 'odd'))],
    ['indexBy', () => _.indexBy(people, 'name')],
    ['template', () => {
      const t = _.template('<% _.each(people, function(p) { %><li><%- p.name %> is <%= p.age + 1 %></li><% }); %>');
      return [t({ people: [{ name: '<b>moe</b>', age: 40 }, { name: 'larry', age: 50 }] }),
        _.template('hello: {{ name }}', { interpolate: /\{\{(.+?)\}\}/g })({ name: 'mustache' }),
        _.template('<%= data.x %>', { variable: 'data' })({ x: 'v' })];
    }],
    ['template_error', () => _.template('<% if ( %>')()],
    ['escape', () => [_.escape('Curly, Larry & Moe <"\'`>'), _.unescape('&lt;a&gt; &amp;amp; &#x27;&quot;&#x60;')]],
    ['sortBy', () => [_.sortBy([1, 2, 3, 4, 5, 6], (n) => Math.sin(n)), _.pluck(_.sortBy(people, 'age'), 'name')]],
    ['pick_omit', () => [_.pick({ name: 'moe', age: 50, userid: 'm1' }, 'name', 'age'),
      _.omit({ name: 'moe', age: 50, userid: 'm1' }, (v) => _.isNumber(v))]],
    ['sets', () => [_.intersection([1, 2, 3], [101, 2, 1, 10], [2, 1]), _.union([1, 2, 3], [101, 2, 1, 10], [2, 1]),
      _.difference([1, 2, 3, 4, 5], [5, 2, 10]), _.without([1, 2, 1, 0, 3, 1, 4], 0, 1)]],
    ['isEqual', () => [_.isEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), _.isEqual([1, 2], [2, 1]),
      _.isEqual(NaN, NaN), _.isEqual(0, -0), _.isEqual(new Date(0), new Date(0)), _.isEqual(/a/g, /a/i)]],
    ['every_some', () => [_.every([2, 4, 5], (n) => n % 2 === 0), _.some([null, 0, 'yes', false]), _.every([])]],
    ['map_filter_reduce', () => [_.map({ one: 1, two: 2 }, (v, k) => k + v), _.filter([1, 2, 3, 4, 5, 6], (n) => n % 2),
      _.reject([1, 2, 3, 4], (n) => n % 2), _.reduce([1, 2, 3], (m, n) => m + n, 0),
      _.reduceRight([[0, 1], [2, 3], [4, 5]], (a, b) => a.concat(b), [])]],
    ['find', () => [_.find([1, 2, 3, 4], (n) => n % 2 === 0), _.findIndex([4, 6, 8, 12], (n) => n > 7),
      _.findLastIndex([1, 2, 3, 2], (n) => n === 2), _.findKey({ a: 1, b: 2 }, (v) => v === 2)]],
    ['where', () => [_.where(people, { age: 40 }), _.findWhere(people, { name: 'curly' })]],
    ['max_min', () => [_.max(people, 'age'), _.min([10, 5, 100, 2, 1000]), _.max([]), _.min({})]],
    ['shuffle_sample', () => [_.shuffle(_.range(10)), _.sample(_.range(100), 3), _.sample([1, 2, 3]), _.random(1, 100)]],
    ['range', () => [_.range(10), _.range(1, 11), _.range(0, 30, 5), _.range(0, -10, -1), _.range(0)]],
    ['partition', () => _.partition([0, 1, 2, 3, 4, 5], (n) => n % 2)],
    ['objects', () => [_.invert({ a: 'x', b: 'y' }), _.pairs({ one: 1, two: 2 }), _.object(['a', 'b'], [1, 2]),
      _.keys({ one: 1, two: 2 }), _.values({ one: 1, two: 2 }), _.mapObject({ a: 1, b: 2 }, (v) => v * 5)]],
    ['extend_defaults', () => [_.extend({ name: 'moe' }, { age: 50 }, { name: 'x' }),
      _.defaults({ flavor: 'chocolate' }, { flavor: 'vanilla', sprinkles: 'lots' }), _.clone({ a: [1] })]],
    ['predicates', () => [_.isEmpty({}), _.isEmpty([1]), _.isString('s'), _.isArguments((function () { return arguments; })()),
      _.isFunction(_.map), _.isNull(null), _.isUndefined(void 0), _.isFinite(-Infinity), _.isNaN(NaN), _.has({ a: 1 }, 'a')]],
    ['arrays', () => [_.first([5, 4, 3], 2), _.last([5, 4, 3, 2], 2), _.initial([5, 4, 3]), _.rest([5, 4, 3]),
      _.compact([0, 1, false, 2, '', 3]), _.indexOf([1, 2, 3, 2], 2), _.lastIndexOf([1, 2, 3, 2], 2),
      _.sortedIndex([10, 20, 30, 40, 50], 35), _.contains([1, 2, 3], 3)]],
    ['invoke_pluck', () => [_.invoke([[5, 1, 7], [3, 2, 1]], 'sort'), _.pluck(people, 'name'), _.size({ a: 1, b: 2 })]],
    ['functions_util', () => {
      let n = 0;
      const once = _.once(() => ++n);
      once(); once();
      const fib = _.memoize((k) => (k < 2 ? k : fib(k - 1) + fib(k - 2)));
      const add = (a, b, c) => a + b + c;
      return [n, fib(40), _.partial(add, 1, _, 3)(2), _.compose((x) => x + 1, (x) => x * 2)(5),
        _.bind(function (g) { return g + ' ' + this.name; }, { name: 'moe' }, 'hi')(), _.times(3, (i) => i * i),
        _.after(2, () => 'done')(), _.negate(_.isNull)(null)];
    }],
    ['uniqueId', () => [_.uniqueId('c'), _.uniqueId(), _.uniqueId('c')]],
    ['chain', () => _.chain(people).sortBy('age').map((p) => p.name + ' is ' + p.age).first(2).value()],
    ['result_property', () => [_.result({ c: 'x', f() { return 'y'; } }, 'f'), _.property(['a', 'b'])({ a: { b: 7 } }),
      _.matcher({ age: 40 })(people[0]), _.iteratee('age')(people[1]), _.get({ a: [{ b: 1 }] }, ['a', 0, 'b'])]],
    ['toArray_sortedIndex', () => [_.toArray({ a: 1, b: 2 }), _.toArray('héllo'), _.sortedIndex(people, { age: 45 }, 'age')]],
    ['bad_input', () => [_.chunk(null, 2), _.flatten(undefined), _.isEqual(undefined, null), _.keys(42), _.max(null)]],
  ];
  return calls;
}

function acornBattery(acorn) {
  const files = ['/usr/share/javascript/underscore/underscore.js', '/usr/share/nodejs/marked/lib/marked.umd.js',
    '/usr/share/nodejs/acorn-walk/dist/walk.js', '/usr/share/nodejs/marked/lib/marked.esm.js'];
  const snippets = [
    'let {a, ...r} = o; const f = async (x = 1, [y] = []) => await x ?? y?.z;',
    'class A extends B { static m() { return super.m`t${1}`; } get [k]() {} }',
    'for await (const x of g()) {} label: for (;;) { continue label; }',
    'x = 0x1F + 1_000n + .5e-3 + /re[/]g/u.source; a ||= b', // ||= is ES2021: an error at 2020
    'function* g() { yield* h(); } function F() { return new.target; }',
    'var s = "\\u{1F600}\\x41" + `a${b}c`; /* c */ // d',
  ];
  const opts = (sourceType) => ({ ecmaVersion: 2020, locations: true, sourceType });
  const ser = (ast) => JSON.parse(canon(ast));
  const calls = [['version', () => acorn.version]];
  snippets.forEach((s, i) => calls.push(['snippet' + i, () => ser(acorn.parse(s, opts('script')))]));
  calls.push(['module', () => ser(acorn.parse('import x, {y as z} from "m"; export default class {}; export * as ns from "n";',
    opts('module')))]);
  calls.push(['tokens', () => Array.from(acorn.tokenizer('a = b / c / d; e = /=/g.test(x)', opts('script')),
    (t) => [t.type.label, t.value, t.start, t.end])]);
  calls.push(['errors', () => ['a +', 'let let = 1', 'return 1', '({a:1} = 1)', '`${`'].map((s) => {
    try { acorn.parse(s, opts('script')); return 'ok'; } catch (e) { return [e.name, e.message, e.pos, e.raisedAt, e.loc]; }
  })]);
  // Older language levels and module goal select other keyword tables and code paths of the parser.
  calls.push(['versions', () => [3, 5, 6, 2015, 2017, 'latest'].flatMap((v) => ['script', 'module'].map((t) => {
    try {
      return ser(acorn.parse('var a = b + 1; function f() { return this; }', { ecmaVersion: v, sourceType: t }));
    } catch (e) { return [e.name, e.message]; }
  }))]);
  calls.push(['expr', () => ser(acorn.parseExpressionAt('f(a)(b) + c, d', 0, opts('script')))]);
  calls.push(['ident', () => [acorn.isIdentifierStart(0x61), acorn.isIdentifierChar(0x30), acorn.isIdentifierStart(0x30)]]);
  // Whole files: the JSON is megabytes, so its SHA-1 and length stand for it.
  for (const f of files) {
    if (!fs.existsSync(f)) continue;
    calls.push(['file:' + f, () => {
      const src = fs.readFileSync(f, 'utf8');
      const sourceType = f.endsWith('.esm.js') ? 'module' : 'script';
      // JSON.stringify (fast) is canonical enough for an ESTree: plain data, RegExp and BigInt values aside.
      const json = JSON.stringify(acorn.parse(src, opts(sourceType)), (k, v) =>
        typeof v === 'bigint' ? v.toString() + 'n' : Object.prototype.toString.call(v) === '[object RegExp]' ? String(v) : v);
      return { sha1: crypto.createHash('sha1').update(json).digest('hex'), chars: json.length };
    }]);
  }
  return calls;
}

function markedBattery(m) {
  const marked = m.marked || m;
  const dir = '/usr/share/doc/node-marked/';
  const docs = [];
  if (fs.existsSync(dir)) {
    for (const f of fs.readdirSync(dir).sort()) {
      if (f.endsWith('.md')) docs.push([f, fs.readFileSync(dir + f, 'utf8')]);
      else if (f.endsWith('.md.gz')) docs.push([f, zlib.gunzipSync(fs.readFileSync(dir + f)).toString('utf8')]);
    }
  }
  const inline = '# Title\n\nSome *em* and **strong** and `code`, a [link](http://x.org "t") and <me@example.com>.\n\n' +
    '- one\n- two\n  1. nested\n\n> quote\n\n```js\nvar x = 1 < 2;\n```\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n' +
    'Line  \nbreak, ~~del~~, www.example.com, mailto:you@example.org\n\n<div>html</div>\n\n***\n';
  const calls = [['inline', () => marked.parse(inline)],
    ['inline_nomangle', () => marked.parse(inline, { mangle: false, headerIds: false })],
    ['lexer', () => JSON.parse(canon(marked.lexer(inline)))],
    // Two bases in a row: marked caches resolved bases, and a wrong cache key shows only on the second.
    ['baseUrl', () => ['http://x.org/a/', 'https://z.org', '/rel/'].map((b) =>
      marked.parse('[rel](b/c) ![img](/i.png) [abs](http://y.org/) [pr](//p.org/x)', { baseUrl: b }))],
    ['inlineLexer', () => marked.parseInline('a **b** _c_ <d@e.f>')],
    ['options', () => [marked.parse('a\nb', { breaks: true }), marked.parse('<b>x</b>', { sanitize: true }),
      marked.parse('1) x\n2) y', { gfm: false, pedantic: true })]]];
  for (const [f, text] of docs) calls.push(['doc:' + f, () => marked.parse(text)]);
  calls.push(['bad_input', () => [(() => { try { return marked.parse(null); } catch (e) { return e; } })(),
    marked.parse('')]]);
  return calls;
}

const batteries = { underscore: underscoreBattery, acorn: acornBattery, marked: markedBattery };

function detect(lib) {
  if (lib && typeof lib.chunk === 'function' && typeof lib.groupBy === 'function') return 'underscore';
  if (lib && typeof lib.parse === 'function' && typeof lib.tokenizer === 'function' && lib.Parser) return 'acorn';
  const m = lib && (lib.marked || lib);
  if (m && typeof m.parse === 'function' && typeof m.lexer === 'function') return 'marked';
  return null;
}

function main() {
  const args = process.argv.slice(2);
  let file = null, battery = 'auto';
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--battery') battery = args[++i];
    else if (!file) file = args[i];
    else { process.stderr.write('run_battery.js: unexpected argument ' + args[i] + '\n'); process.exit(2); }
  }
  if (!file || !(battery === 'auto' || batteries[battery])) {
    process.stderr.write('usage: node run_battery.js FILE.js [--battery underscore|acorn|marked|auto]\n');
    process.exit(2);
  }
  let loaded;
  try {
    loaded = load(file);
  } catch (e) {
    // A library that no longer loads is an output too: the comparison names the "load" call.
    process.stdout.write('#battery\t' + battery + '\nload\t{"$throw":' + canon(e) + '}\n');
    return;
  }
  if (battery === 'auto') battery = detect(loaded.lib);
  if (!battery) {
    process.stderr.write('run_battery.js: ' + file + ' is none of underscore, acorn, marked (use --battery)\n');
    process.exit(2);
  }
  const out = ['#battery\t' + battery];
  for (const [name, thunk] of batteries[battery](loaded.lib)) {
    let line;
    try { line = canon(thunk()); } catch (e) { line = '{"$throw":' + canon(e) + '}'; }
    out.push(name + '\t' + line);
  }
  process.stdout.write(out.join('\n') + '\n');
}

main();
