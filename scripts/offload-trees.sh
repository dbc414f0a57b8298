#!/usr/bin/env bash
# Regenerates tests/data/offload/trees.txt from sentences.txt with Debian's link-grammar parser (tests/data/offload/README.md).
set -euo pipefail
cd "$(dirname "$0")/../tests/data/offload"
command -v link-parser >/dev/null || { echo "offload-trees: install link-grammar (apt-get install link-grammar)" >&2; exit 1; }
(printf '!constituents=1\n!graphics=0\n!limit=100\n!timeout=5\n'; cat sentences.txt) | link-parser -postscript=0 2>/dev/null |
  grep -v "^Found\|Linkage\|^Bye\|^$\|set to\|^No complete\|^Timer\|^\s*LEFT-WALL\|^Debug" > trees.txt
echo "offload-trees: $(grep -c '^(' trees.txt) trees"
