#!/usr/bin/env node
// tests/oracle/acorn_counts.js — the outside oracle for the JavaScript front end of mlsys_contracode.h.
// Parses each file with Debian's acorn (/usr/share/nodejs/acorn, ecmaVersion "latest") and prints one line per file:
//   FILE<TAB>HASH<TAB>Kind=count Kind=count ...   (ESTree node types, sorted by name)
// HASH is the SHA-1 of acorn's whole tree as JSON without positions (start, end): two files with the same HASH have
// the same ESTree, literal raw text included.
// Usage: node tests/oracle/acorn_counts.js [--module] FILE...   (exit 1 if a file does not parse)
'use strict';
let acorn;
try { acorn = require('/usr/share/nodejs/acorn'); } catch (e) { acorn = require('acorn'); }
const fs = require('fs');
const crypto = require('crypto');
const positions = new Set(['start', 'end', 'loc', 'range']);
function treeHash(ast) {
  const json = JSON.stringify(ast, (k, v) => positions.has(k) ? undefined :
    typeof v === 'bigint' ? v.toString() + 'n' : v instanceof RegExp ? String(v) : v);
  return crypto.createHash('sha1').update(json).digest('hex');
}
const args = process.argv.slice(2);
let module_ = false, rc = 0;
for (const a of args) {
  if (a === '--module') { module_ = true; continue; }
  const src = fs.readFileSync(a, 'utf8');
  let ast;
  try {
    ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: module_ ? 'module' : 'script', allowHashBang: true });
  } catch (e) {
    console.log(a + '\tERROR ' + e.message);
    rc = 1;
    continue;
  }
  const counts = {};
  (function walk(n) {
    if (Array.isArray(n)) { for (const c of n) walk(c); return; }
    if (!n || typeof n.type !== 'string') return;
    counts[n.type] = (counts[n.type] || 0) + 1;
    for (const k of Object.keys(n)) {
      if (k === 'type' || k === 'loc' || k === 'range' || k === 'regex') continue;
      const v = n[k];
      if (v && typeof v === 'object') walk(v);
    }
  })(ast);
  console.log(a + '\t' + treeHash(ast) + '\t' + Object.keys(counts).sort().map(k => k + '=' + counts[k]).join(' '));
}
process.exit(rc);
