#!/usr/bin/env bash
# Installs the tokenizer peer for `build/bench_relm tokenizer`: npm tiktoken (the WASM build of OpenAI's Rust
# tokenizer, with the gpt2 encoding) into the git-ignored .deps/bench-npm. Run by `make bench` before bench_relm,
# not by `make test`. Needs npm and the network (or an npm cache).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$root/.deps/bench-npm
ver=${TIKTOKEN_VERSION:-1.0.22}
if [ -f "$prefix/node_modules/tiktoken/package.json" ] &&
   grep -q "\"version\": \"$ver\"" "$prefix/node_modules/tiktoken/package.json"; then exit 0; fi
command -v npm >/dev/null 2>&1 || { echo "tiktoken-install: npm is missing (apt-get install npm)" >&2; exit 1; }
mkdir -p "$prefix"
npm install --silent --no-audit --no-fund --prefix "$prefix" "tiktoken@$ver" >/dev/null
echo "tiktoken-install: tiktoken $ver in $prefix"
