#!/usr/bin/env bash
# Regenerates tests/data/msccl/*.xml: MSCCL programs written by microsoft/msccl-tools' own MSCCLang examples
# (examples/mscclang/*.py, its ncclize XML writer). They are the outside fixtures that mlsys_collective.h's MSCCL
# XML reader, verifier and simulator are tested on (tests/test_coll_msccl.c).
#   MSCCL_TOOLS_DIR=/path/to/msccl-tools bash tools/msccl-fixtures.sh
# msccl-tools needs Python 3 with z3, lxml, igraph, humanfriendly, tabulate and argcomplete: this script installs
# Debian's packages of them (sudo apt-get) when /usr/bin/python3 lacks them. It is not run by `make test`; the
# committed XML files are what the tests read. Measured with msccl-tools commit 030a750 ("clean ups").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${MSCCL_TOOLS_DIR:?set MSCCL_TOOLS_DIR to a checkout of https://github.com/microsoft/msccl-tools}
py=/usr/bin/python3
if ! "$py" -c 'import z3, lxml, igraph, humanfriendly, tabulate, argcomplete' 2>/dev/null; then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-z3 python3-lxml python3-igraph \
    python3-humanfriendly python3-tabulate python3-argcomplete >/dev/null
fi
out=$here/tests/data/msccl
mkdir -p "$out"
gen() {   # NAME SCRIPT ARGS...: one program; a failing example stops the script
  local name=$1; shift
  (cd "$src/examples/mscclang" && PYTHONPATH="$src" "$py" "$@") > "$out/$name.xml.tmp"
  grep -q '^<algo ' "$out/$name.xml.tmp" || { echo "msccl-fixtures: $* wrote no <algo>" >&2; exit 1; }
  mv "$out/$name.xml.tmp" "$out/$name.xml"
}
# in place (inplace="1", no outofplace attribute): msccl-tools' default for allgather and allreduce
gen allgather_ring_8 allgather_ring.py 8 1 1
gen allgather_ring_8_4ch allgather_ring.py 8 4 1
gen allgather_allpairs_8 allgather_allpairs.py 8 1
gen allgather_recursive_doubling_8 allgather_recursive_doubling.py 8 1
gen allgather_ring_16 allgather_ring.py 16 1 1
gen allreduce_ring_4 simple/allreduce_ring.py 4 1
gen allreduce_a100_ring_8 allreduce_a100_ring.py 8 1 1
gen allreduce_a100_ring_8_2ch_2inst allreduce_a100_ring.py 8 2 2
gen allreduce_a100_allpairs_8 allreduce_a100_allpairs.py 8 1
gen allreduce_recursive_doubling_halving_8 allreduce_recursive_doubling_halving.py 8 1
gen allreduce_a100_ring_16 allreduce_a100_ring.py 16 1 1
# out of place (inplace="0")
gen allgather_ring_4_outofplace simple/allgather_ring.py
gen alltoall_allpairs_8 alltoall_allpairs.py 8 1
gen alltoall_a100_two_step_2x4 alltoall_a100_two_step.py 2 4
cp "$src/LICENSE" "$out/LICENSE.msccl-tools"
echo "msccl-fixtures: $(ls "$out"/*.xml | wc -l) programs in $out"
