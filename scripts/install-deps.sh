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
#   unzip                         tests/test_remat_dtr.c unpacks the DTR traces (../shared/data/dtr/logs.zip)
PKGS="build-essential pkg-config lp-solve liblpsolve55-dev coinor-libcbc-dev coinor-libclp-dev coinor-cbc glpk-utils libstb-dev clang libclang-rt-14-dev unzip"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: missing packages:$missing (run as root or install them)" >&2; exit 1
  fi
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
