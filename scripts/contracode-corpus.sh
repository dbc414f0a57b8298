#!/usr/bin/env bash
# scripts/contracode-corpus.sh [OUTDIR] — ContraCode's offline corpus: every function of 21 pinned Debian 12 JavaScript
# packages as a program unit (docs/contracode.md "Offline corpus"; spec §7.5, issue 25). Default OUTDIR:
# build/contracode-corpus. Needs build/mlsys (`make build/mlsys`; MLSYS=path overrides), apt-get and dpkg-deb; no root.
#
# The packages (PKGS below, pinned versions) are fetched with `apt-get download PKG=VERSION` into OUTDIR/debs (a .deb
# already there is reused) and each is unpacked with `dpkg-deb -x` into OUTDIR/root/PKG, so a file's path (relative
# to OUTDIR/root) starts with its package. Every regular *.js file (links are not followed: Debian's node packages
# link many files to one another), in sorted order (C locale), goes to `mlsys contracode functions`, which skips
# *.min.js, files with a mean line length over 300 bytes and files that parse neither as a script nor as a module,
# and keeps each function spanning >= 3 lines and <= 8192 bytes whose program unit (mlsys_contracode_fn_unit:
# expressions and arrows as `const x = …;`, methods inside `class x{…}`) parses, deduplicated by exact unit text
# (first occurrence wins). A file is held out when the top byte of the 64-bit FNV-1a hash of its path is below 20
# (about 7.8 % of the files), so no function is in both parts.
#
# Outputs in OUTDIR: functions.jsonl (one record a line: {"pkg", "file", "line", "kind", "split", "src"}; read back
# by `mlsys contracode vocab`), train.jsonl and heldout.jsonl (its two parts), files.list (the .js files given to
# the extractor), manifest.json (the extractor's counts, the packages, the sha256). The script prints the counts next
# to the spec's, and compares the sha256 of functions.jsonl with the sum recorded here: a different sum means another
# Debian point release or a change in mlsys_contracode.h's front end, and the script says so (exit 3).
set -euo pipefail
export LC_ALL=C.UTF-8 TZ=UTC

OUT=${1:-build/contracode-corpus}
MLSYS=${MLSYS:-build/mlsys}
PKGS=(
  "eslint=6.4.0~dfsg+~6.1.9-7"
  "libjs-codemirror=5.65.0+~cs5.83.9-2"
  "libjs-jquery=3.6.1+dfsg+~3.5.14-1"
  "libjs-pdf=2.14.305+dfsg-2"
  "libjs-three=111+dfsg1-3"
  "libjs-underscore=1.13.4~dfsg+~1.11.4-3"
  "node-acorn=8.8.1+ds+~cs25.17.7-2"
  "node-babel7=7.20.15+ds1+~cs214.269.168-3+deb12u2"
  "node-core-js=3.26.1-3"
  "node-d3=5.16.0-10"
  "node-esprima=4.0.1+ds+~4.0.3-2"
  "node-highlight.js=9.18.5+dfsg1-2"
  "node-lodash=4.17.21+dfsg+~cs8.31.198.20210220-9+deb12u1"
  "node-marked=4.2.3+ds+~4.0.7-2"
  "node-moment=2.29.4+ds-1"
  "node-ramda=0.28.0+dfsg+~0.28.18-1"
  "node-terser=5.16.5-2"
  "node-typescript=4.8.4+ds1-2"
  "node-uglify-js=3.17.4-2"
  "node-underscore=1.13.4~dfsg+~1.11.4-3"
  "webpack=5.75.0+dfsg+~cs17.16.14-1+deb12u1"
)
# recorded on Debian 12.11 with mlsys_contracode.h as of 2026-11-29
EXPECT_SHA="181f00a37cf5bd3f0a25b8a645d1066da4dc5076bfcdcf00a21d14791eb59ce5"

for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { echo "contracode-corpus: '$tool' is needed (Debian: apt-get install dpkg apt)" >&2; exit 1; }
done
[ -x "$MLSYS" ] || { echo "contracode-corpus: $MLSYS not found: run 'make build/mlsys' first (or set MLSYS)" >&2; exit 1; }
MLSYS=$(cd "$(dirname "$MLSYS")" && pwd)/$(basename "$MLSYS")

mkdir -p "$OUT/debs"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/root"
mkdir -p "$OUT/root"

# fetch and unpack, one folder per package
for spec in "${PKGS[@]}"; do
  name=${spec%%=*}
  ver=${spec#*=}
  find_deb() {
    ls "$OUT/debs/${name}_"*.deb 2>/dev/null | while read -r f; do
      [ "$(dpkg-deb -f "$f" Package)" = "$name" ] && [ "$(dpkg-deb -f "$f" Version)" = "$ver" ] && echo "$f"; done | head -1
  }
  deb=$(find_deb)
  if [ -z "$deb" ]; then
    (cd "$OUT/debs" && apt-get download "$spec" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
    deb=$(find_deb)
    if [ -z "$deb" ]; then
      echo "contracode-corpus: cannot fetch $spec (apt-get download failed: no network, or this version left the mirror" >&2
      echo "  after a point release; put the .deb in $OUT/debs, or edit PKGS to the current version: the corpus will then differ)" >&2
      exit 1
    fi
  fi
  mkdir -p "$OUT/root/$name"
  dpkg-deb -x "$deb" "$OUT/root/$name"
  echo "contracode-corpus: $name $ver  $(sha256sum "$deb" | cut -c1-16)…  $(basename "$deb")" >&2
done

# the functions
(cd "$OUT/root" && find . -type f -name '*.js' | sed 's|^\./||' | LC_ALL=C sort) >"$OUT/files.list"
(cd "$OUT/root" && "$MLSYS" contracode functions --files-from "$OUT/files.list" --jsonl --manifest "$OUT/counts.json") \
  >"$OUT/functions.jsonl"
grep -F '"split": "train", "src": ' "$OUT/functions.jsonl" >"$OUT/train.jsonl" || true
grep -F '"split": "heldout", "src": ' "$OUT/functions.jsonl" >"$OUT/heldout.jsonl" || true

sha=$(sha256sum "$OUT/functions.jsonl" | cut -d' ' -f1)
count() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$OUT/counts.json"; }
{
  printf '{"counts": '
  tr -d '\n' <"$OUT/counts.json"
  printf ', "packages": ['
  sep=""
  for spec in "${PKGS[@]}"; do printf '%s"%s"' "$sep" "$spec"; sep=", "; done
  printf '], "functions_jsonl_sha256": "%s"}\n' "$sha"
} >"$OUT/manifest.json"

printf 'contracode-corpus: %-28s %8s %8s\n' "" "here" "spec §7.5"
printf 'contracode-corpus: %-28s %8s %8s\n' ".js files (*.min.js excluded)" "$(( $(count files) - $(count skipped_min_js) ))" "9542"
printf 'contracode-corpus: %-28s %8s %8s\n' "function nodes" "$(count function_nodes)" "148605"
printf 'contracode-corpus: %-28s %8s %8s\n' "unique functions" "$(count unique_functions)" "68170"
printf 'contracode-corpus: %-28s %8s %8s\n' "  declarations" "$(count declarations)" "29110"
printf 'contracode-corpus: %-28s %8s %8s\n' "  function expressions" "$(count expressions)" "25220"
printf 'contracode-corpus: %-28s %8s %8s\n' "  arrows" "$(count arrows)" "4545"
printf 'contracode-corpus: %-28s %8s %8s\n' "  methods" "$(count methods)" "-"
printf 'contracode-corpus: train %s functions, held out %s (%s)\n' "$(count train)" "$(count heldout)" "$OUT/heldout.jsonl"
echo "$sha  $OUT/functions.jsonl"
if [ "$sha" = "$EXPECT_SHA" ]; then
  echo "contracode-corpus: corpus identical to the recorded one"
else
  echo "contracode-corpus: THE CORPUS DIFFERS from the recorded one ($EXPECT_SHA): another Debian point release or a" >&2
  echo "  change in mlsys_contracode.h's front end; a vocabulary trained on it will not match tools/contracode_js8k.model" >&2
  exit 3
fi
