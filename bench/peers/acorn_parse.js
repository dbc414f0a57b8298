#!/usr/bin/env node
// bench/peers/acorn_parse.js — acorn's parse time on the files bench_contracode uses (bench/RESULTS.md §15): per file
// the best of N parses (default 20, after the first as warm-up), in MB/s (10^6 bytes). Debian node-acorn 8.8.1.
'use strict';
let acorn;
try { acorn = require('/usr/share/nodejs/acorn'); } catch (e) { acorn = require('acorn'); }
const fs = require('fs');
const reps = Number(process.argv[2] || 20);
const files = [
  ['/usr/share/javascript/underscore/underscore.js', 'script'], ['/usr/share/nodejs/acorn/dist/acorn.js', 'script'],
  ['/usr/share/nodejs/acorn/dist/acorn.mjs', 'module'], ['/usr/share/nodejs/marked/lib/marked.cjs', 'script'],
  ['/usr/share/nodejs/marked/lib/marked.umd.js', 'script'], ['/usr/share/nodejs/marked/lib/marked.esm.js', 'module'],
];
let totB = 0, totT = 0;
for (const [f, st] of files) {
  const src = fs.readFileSync(f, 'utf8');
  const bytes = Buffer.byteLength(src);
  let best = Infinity;
  acorn.parse(src, { ecmaVersion: 'latest', sourceType: st });
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    acorn.parse(src, { ecmaVersion: 'latest', sourceType: st });
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    if (dt < best) best = dt;
  }
  totB += bytes; totT += best;
  console.log(f.padEnd(48) + String(bytes).padStart(9) + (bytes / best / 1e6).toFixed(1).padStart(10) + ' MB/s');
}
console.log('total'.padEnd(48) + String(totB).padStart(9) + (totB / totT / 1e6).toFixed(1).padStart(10) + ' MB/s');
