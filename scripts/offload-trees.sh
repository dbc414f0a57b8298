#!/usr/bin/env bash
# Regenerates the link-grammar trees of tests/data/offload (README.md there):
#   scripts/offload-trees.sh        trees.txt from sentences.txt
#   scripts/offload-trees.sh docs   sentences_docs.txt from /usr/share/doc, then trees_docs.txt from it
set -euo pipefail
cd "$(dirname "$0")/../tests/data/offload"
command -v link-parser >/dev/null || { echo "offload-trees: install link-grammar (apt-get install link-grammar)" >&2; exit 1; }
parse() {
  (printf '!constituents=1\n!graphics=0\n!limit=100\n!timeout=5\n'; cat "$1") | link-parser -postscript=0 2>/dev/null |
    grep -v "^Found\|Linkage\|^Bye\|^$\|set to\|^No complete\|^Timer\|^\s*LEFT-WALL\|^Debug"
}
if [ "${1:-}" != docs ]; then
  parse sentences.txt > trees.txt
  echo "offload-trees: $(grep -c '^(' trees.txt) trees"
  exit 0
fi
/usr/bin/python3 - <<'PY'
import glob, gzip, os, re
seen = set(open('sentences.txt').read().split('\n'))
files = sorted(f for f in glob.glob('/usr/share/doc/*/README*') if os.path.isfile(f))
files += ['/usr/share/common-licenses/' + x for x in ['GPL-3', 'GPL-2', 'LGPL-2.1', 'Apache-2.0', 'MPL-2.0', 'GFDL-1.3', 'Artistic']]
files += sorted(f for f in glob.glob('/usr/share/doc/*/*') if os.path.isfile(f)
                and not os.path.basename(f).startswith(('README', 'changelog', 'copyright', 'NEWS.Debian'))
                and re.search(r'\.(txt|md|gz)$|^[A-Z]+[^/]*$', os.path.basename(f))
                and not f.endswith(('.html.gz', '.pdf', '.png')))
out = []
for f in files:
    try:
        data = gzip.open(f, 'rt', errors='replace').read() if f.endswith('.gz') else open(f, errors='replace').read()
    except Exception:
        continue
    for s in re.split(r'(?<=[.!?])\s+', re.sub(r'\s+', ' ', data)):
        s = s.strip()
        if not s.endswith('.') or not s[0].isupper() or not re.fullmatch(r"[A-Za-z ,'\-]+", s[:-1]):
            continue
        if 6 <= len(s[:-1].split()) <= 22 and s not in seen:
            seen.add(s)
            out.append(s)
open('sentences_docs.txt', 'w').write('\n'.join(out[:2400]) + '\n')
PY
# one tree per line: fold link-parser's indentation, then keep only the trees
parse sentences_docs.txt | /usr/bin/python3 -c '
import re, sys
depth, cur, out = 0, "", []
for ch in re.sub(r"\s+", " ", sys.stdin.read()):
    if depth == 0 and ch == " ":
        continue
    cur += ch
    depth += (ch == "(") - (ch == ")")
    if depth == 0 and ch == ")":
        out.append(cur.strip()); cur = ""
print("\n".join(out))' | grep '^(' > trees_docs.txt
echo "offload-trees: $(grep -c '^(' trees_docs.txt) trees"
