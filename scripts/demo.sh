#!/usr/bin/env bash
# make demo: each finished header's main job on real default inputs, in a few lines a person can read.
set -u
cd "$(dirname "$0")/.."
M=${MLSYS_BIN:-build/mlsys}
status=0
run() { echo "\$ mlsys ${*}"; "$M" "$@" || status=1; echo; }

echo "== mlsys_remat.h: Checkmate optimal rematerialization"
echo
echo "-- The thesis's 8-layer chain (unit costs and sizes): keeping everything needs 10 units; at 4 units the"
echo "   optimum recomputes 9 nodes (cost 26 vs 17, thesis §3.4.6), found and proven by the MILP:"
run remat solve --graph tests/data/remat/chain8.txt --budget 4 --method all --time-limit 20

G=tests/data/graphs/alexnet_b32.json
if [ -f "$G" ]; then
  echo "-- AlexNet training graph at batch 32 (torchvision model exported by tools/export_torch_graph.py; FLOP"
  echo "   costs, real tensor bytes). Fixed memory is parameters + gradients + input:"
  run remat info --graph "$G"
  echo "-- Every method at 60% of the checkpoint-all peak (activations + fixed); 'recomp' counts recomputed nodes:"
  run remat solve --graph "$G" --budget 60% --method all --time-limit 30
  echo "-- A budget below what any schedule needs is refused with the smallest feasible budget:"
  run remat min-budget --graph "$G" --time-limit 20
fi
exit $status
