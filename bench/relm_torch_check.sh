#!/usr/bin/env bash
# bench/relm_torch_check.sh [BUILD] — the PyTorch cross-check of the C GPT-2 (tools/check_gpt2_torch.py, issue 24)
# at the size `mlsys relm train` defaults to (4 layers, width 128, 4 heads, context 128): trains it for 30 steps on
# tests/data/relm/apache-2.0.txt, dumps the C logits of 128 tokens and the loss and gradients of a 4 × 128 batch
# (BUILD/gpt2_dump), prints tools/check_gpt2_torch.py's table and writes its JSON to BUILD/relm-torch-check.json
# (bench/RESULTS.md §8.5). `make bench` runs it when /usr/bin/python3 has torch; exit 1 when the check fails.
set -eu
build=${1:-build}
text=tests/data/relm/apache-2.0.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/mlsys" relm train --text "$text" --out "$tmp/m.bin" --layers 4 --width 128 --heads 4 --context 128 --batch 4 \
  --steps 30 --lr 3e-3 --seed 1 --log-every 10
"$build/gpt2_dump" --ckpt "$tmp/m.bin" --text "$text" --out "$tmp/dump" --seq 128 --batch 4 --seq-len 128 --offset 100 --threads 2
/usr/bin/python3 tools/check_gpt2_torch.py "$tmp/dump" --json-out "$build/relm-torch-check.json"
