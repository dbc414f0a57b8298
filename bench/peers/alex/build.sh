#!/bin/sh
# bench/peers/alex/build.sh — builds alex_driver (ours) against a checkout of microsoft/ALEX (its header-only
# src/core, MIT), with the flags of ALEX's own CMakeLists: g++ -O3 -march=native.
#   ALEX_DIR=/path/to/ALEX sh bench/peers/alex/build.sh      -> bench/peers/alex/build/alex_driver
# Without ALEX_DIR it clones https://github.com/microsoft/ALEX into bench/peers/alex/build/ALEX (network needed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build"
mkdir -p "$out"
if [ -z "${ALEX_DIR:-}" ]; then
  ALEX_DIR="$out/ALEX"
  [ -f "$ALEX_DIR/src/core/alex.h" ] || git clone -q https://github.com/microsoft/ALEX "$ALEX_DIR"
fi
if [ ! -f "$ALEX_DIR/src/core/alex.h" ]; then
  echo "build.sh: $ALEX_DIR/src/core/alex.h not found (set ALEX_DIR to a checkout of microsoft/ALEX)" >&2
  exit 1
fi
commit=$(git -C "$ALEX_DIR" rev-parse HEAD 2>/dev/null || echo unknown)
${CXX:-g++} -std=c++14 -O3 -march=native -w -I"$ALEX_DIR/src/core" "$here/alex_driver.cpp" -o "$out/alex_driver.tmp"
mv "$out/alex_driver.tmp" "$out/alex_driver"
echo "$commit" > "$out/ALEX_COMMIT"
echo "built $out/alex_driver against microsoft/ALEX $commit"
