#!/bin/sh
# bench/peers/alex/grid.sh — MAPLE against the real microsoft/ALEX on the thesis's Fig. 6.6 grid (issue 21): six key
# sets (the three real ones and lognormal, uniform, osm-like at 20M keys with 10M bulk-loaded) x insert fractions
# 1, 0.85, 0.15, 0. Each cell is one `mlsys index bench --peer alex --json` (MAPLE tuned by the CNN predictor on
# the prefix, then REPS rounds of MAPLE, real ALEX at eif 1 and eif F, our ALEX, the B+tree, on one core).
#   sh bench/peers/alex/grid.sh [OUT.jsonl]       (env: CPU=1 REPS=3 OPS=2M SETS="..." FRACS="...")
# then python3 bench/peers/alex/table.py OUT.jsonl prints the RESULTS tables. Needs build/mlsys and the driver
# (bench/peers/alex/build.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/build/alex-grid.jsonl}
cpu=${CPU:-1}
reps=${REPS:-3}
ops=${OPS:-2M}
sets=${SETS:-"real:cities real:ipv4 real:words gen:lognormal:20M gen:uniform:20M gen:osm_like:20M"}
fracs=${FRACS:-"1 0.85 0.15 0"}
[ -x "$root/build/mlsys" ] || { echo "grid.sh: build/mlsys is missing (make)" >&2; exit 1; }
[ -x "$here/build/alex_driver" ] || { echo "grid.sh: run bench/peers/alex/build.sh first" >&2; exit 1; }
cd "$root"
for set in $sets; do
  for f in $fracs; do
    echo "grid.sh: $set insert fraction $f ($(date -u +%H:%M:%S))" >&2
    taskset -c "$cpu" ./build/mlsys index bench --keys "$set" --insert-frac "$f" --ops "$ops" --peer alex --reps "$reps" --json >> "$out"
  done
done
echo "grid.sh: wrote $out" >&2
