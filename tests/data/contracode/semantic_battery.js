// tests/data/contracode/semantic_battery.js — runs a fixed battery of calls against underscore and acorn loaded
// from the given (possibly transformed) files and prints the results as JSON, so tests/test_contracode_scope.c can
// compare an original library with its rewritten copy (spec §7.5 semantic-equivalence batteries, reduced).
// Usage: node semantic_battery.js UNDERSCORE.js ACORN.js
'use strict';
const _ = require(require('path').resolve(process.argv[2]));
const acorn = require(require('path').resolve(process.argv[3]));
const out = [];
const t = (f) => { try { out.push(f()); } catch (e) { out.push('throw ' + e.message); } };
t(() => _.chunk([1, 2, 3, 4, 5], 2));
t(() => _.uniq([1, 2, 1, 3, 2]));
t(() => _.flatten([1, [2, [3, [4]]]]));
t(() => _.zip([1, 2], ['a', 'b'], [true, false]));
t(() => _.groupBy([1.3, 2.1, 2.4], Math.floor));
t(() => _.template('hello <%= name %>! <% _.each(xs, function(x){ %><%- x %>,<% }); %>')({name: 'w', xs: ['<a>', 2]}));
t(() => _.escape('<a href="x">&</a>'));
t(() => _.sortBy([{n: 3}, {n: 1}, {n: 2}], 'n'));
t(() => _.pick({a: 1, b: 2, c: 3}, 'a', 'c'));
t(() => _.intersection([1, 2, 3], [2, 3, 4], [3, 2]));
t(() => _.isEqual({a: [1, {b: 2}]}, {a: [1, {b: 2}]}));
t(() => _.every([2, 4, 6], (x) => x % 2 === 0));
t(() => _.debounce && typeof _.memoize(function (x) { return x * 2; })(21));
t(() => _.range(0, 20, 3));
t(() => _.countBy(['one', 'two', 'three'], 'length'));
t(() => _.partition([0, 1, 2, 3, 4], (x) => x % 2));
t(() => _.invert({a: 'x', b: 'y'}));
t(() => _.defaults({a: 1}, {a: 2, b: 3}));
const src = 'function f(a, {b, c = 1}, ...r) { for (const x of r) { if (x) break; } return `t${a}` + /re/g.source; }\n' +
  'class A extends B { static #p = 1; get x() { return this.#p ?? 2; } }\nlet y = a?.b ?? (c ||= d);';
t(() => JSON.stringify(acorn.parse(src, {ecmaVersion: 2022, locations: true})));
t(() => acorn.tokenizer('a = b / c / d; e = /=/g.test(x)', {ecmaVersion: 2020}).getToken().type.label);
t(() => { try { acorn.parse('a +', {ecmaVersion: 2020}); return 'no error'; } catch (e) { return e.message; } });
process.stdout.write(JSON.stringify(out) + '\n');
