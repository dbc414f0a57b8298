#!/usr/bin/env bash
# tools/maple_train.sh — remeasures MAPLE's training set on this machine and retrains the shipped predictor
# (tools/maple_training.csv, tools/maple_predictor.bin). The values below are the ones the shipped files were made with.
#   tools/maple_train.sh            measure (about 20 min on one core) and train
#   tools/maple_train.sh train      train again from the committed CSV
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
make -s build/maple_train
args=(--csv tools/maple_training.csv --keys 4000000 --init 1000000 --ops 300000)
if [ "${1:-all}" != train ]; then ./build/maple_train measure "${args[@]}"; fi
./build/maple_train train "${args[@]}" --out tools/maple_predictor.bin --epochs 30 --threads 2
