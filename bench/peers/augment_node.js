#!/usr/bin/env node
// bench/peers/augment_node.js — the authors'-style augmentation pipeline in Node (ContraCode's transform_jsonl.js,
// spec §3.4) as a peer for `build/bench_contracode augment`: per function, N samples of
//   Babel (@babel/parser module + errorRecovery, traverse): each FunctionDeclaration w.p. .25 gets one parameter
//   renamed (scope.rename) to 1-2 random words, and w.p. .25 `var <word>;` unshifted into its body; generate;
//   then w.p. .5 terser.minify with random options (compress, mangle, keep_fnames — the sticky "effective"
//   options — output beautify .75, indent 4|2, braces, quote_style); line subsampling w.p. .25;
// dedup with a Set. Debian's node-babel7 and node-terser (apt-get install node-babel7 node-terser).
// Usage: node bench/peers/augment_node.js UNITS.json [N]   (UNITS.json: `build/bench_contracode augment --dump`)
'use strict';
const fs = require('fs');
const D = '/usr/share/nodejs/';
// Debian's packages require each other by bare name: let them find /usr/share/nodejs whatever Node this is
process.env.NODE_PATH = D + (process.env.NODE_PATH ? ':' + process.env.NODE_PATH : '');
require('module').Module._initPaths();
const parser = require(D + '@babel/parser');
const traverse = require(D + '@babel/traverse').default;
const generate = require(D + '@babel/generator').default;
const t = require(D + '@babel/types');
const terser = require(D + 'terser');

const WORDS = ['apple', 'river', 'bright', 'stone', 'cloud', 'green', 'silver', 'quiet', 'forest', 'ocean', 'paper',
  'window', 'garden', 'yellow', 'smooth', 'table', 'candle', 'winter', 'summer', 'spring', 'autumn', 'bridge'];
let seed = 12345;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
function word() { return WORDS[Math.floor(rnd() * WORDS.length)]; }
function name() {
  if (rnd() < 0.5) return word();
  const a = word(), b = word();
  return rnd() < 0.5 ? a + '_' + b : a + b[0].toUpperCase() + b.slice(1);
}
function babelPass(src) {
  const ast = parser.parse(src, { sourceType: 'module', errorRecovery: true });
  const vr = rnd() < 0.25, dci = rnd() < 0.25;
  if (vr || dci)
    traverse(ast, {
      FunctionDeclaration(path) {
        if (vr && path.node.params.length) {
          const p = path.node.params[Math.floor(rnd() * path.node.params.length)];
          if (t.isIdentifier(p)) path.scope.rename(p.name, name());
        }
        if (dci) path.get('body').unshiftContainer('body', t.variableDeclaration('var', [t.variableDeclarator(t.identifier(name()))]));
      }
    });
  return generate(ast).code;
}
async function terserPass(src) {
  const o = {
    compress: { booleans_as_integers: rnd() < 0.5, hoist_vars: rnd() < 0.5, dead_code: rnd() < 0.5, arguments: rnd() < 0.5 },
    mangle: true, keep_fnames: true,
    output: { beautify: rnd() < 0.75, braces: rnd() < 0.5, indent_level: rnd() < 0.5 ? 4 : 2, quote_style: rnd() < 0.5 ? 0 : 1 },
  };
  const r = await terser.minify(src, o);
  return r.code === undefined ? src : r.code;
}
function sampleLines(src) {
  if (rnd() >= 0.25) return src;
  const l = src.split(/\r|\n/);
  if (l.length < 5) return src;
  return l.filter((x, i) => i === 0 || i === l.length - 1 || rnd() < 0.9).join('\n');
}
async function main() {
  const units = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const N = +(process.argv[3] || 20);
  let distinct = 0, failed = 0;
  const t0 = process.hrtime.bigint();
  for (const u of units) {
    const set = new Set([u]);
    for (let i = 0; i < N; i++) {
      try {
        let s = babelPass(u);
        if (rnd() < 0.5) s = await terserPass(s);
        set.add(sampleLines(s));
      } catch (e) { failed++; }
    }
    distinct += set.size;
  }
  const sec = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`node peer: ${units.length} functions, N = ${N}: ${(units.length * N / sec).toFixed(0)} variants/s ` +
    `(${(sec / (units.length * N) * 1e6).toFixed(0)} us/variant), distinct per function ${(distinct / units.length).toFixed(1)}` +
    ` of ${N + 1}, ${failed} samples failed; terser ${require(D + 'terser/package.json').version}, ` +
    `@babel/parser ${require(D + '@babel/parser/package.json').version}`);
}
main();
