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
  echo "-- Every method at 90% of the checkpoint-all activation peak (plus fixed memory); recomp counts recomputed nodes:"
  run remat solve --graph "$G" --budget 90% --method all --time-limit 30
  echo "-- A budget below what any schedule needs is refused with the smallest feasible budget:"
  run remat min-budget --graph "$G" --time-limit 20
fi
G=tests/data/graphs/resnet50_b2.json
if [ -f "$G" ]; then
  echo "-- ResNet-50, the op-level training graph (351 nodes; batch 2, FLOP costs): overhead against budget for"
  echo "   the baselines and LP rounding (the thesis's Fig. 3.5). The LP runs on the graph coarsened to 145 nodes"
  echo "   (conv-bn-relu fused) and is expanded back; each LP budget takes 10-60 s on two cores:"
  run remat sweep --graph "$G" --points 4 --methods checkpoint-all,chen,griewank,ap-greedy,lin-greedy,lp \
    --time-limit 60
fi

if [ -x build/examples/remat_cnn ] || make --no-print-directory -s build/examples/remat_cnn >/dev/null 2>&1; then
  echo "-- Executing schedules on real tensors: a small CNN training step in plain C (examples/remat_cnn.c) whose"
  echo "   graph tools/export_torch_graph.py exported; every schedule's gradients must equal checkpoint-all's bit"
  echo "   for bit, and the executor's allocator must measure exactly the simulator's peak:"
  echo "\$ build/examples/remat_cnn"
  build/examples/remat_cnn || status=1
  echo
fi
exit $status
