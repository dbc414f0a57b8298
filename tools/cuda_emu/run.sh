#!/usr/bin/env bash
# tools/cuda_emu/run.sh [TEST.cu] — runs a ReLM CUDA test (default tests/cuda/test_relm_train_cuda.cu) on the CPU
# through tools/cuda_emu/emu.h: the test and kernels/mlsys_relm*.cuh rewritten into build/cuda-emu/, compiled with
# g++ (no nvcc, no GPU), run. A development check for machines without a GPU, not part of make test (minutes).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
test=${1:-tests/cuda/test_relm_train_cuda.cu}
out=build/cuda-emu
mkdir -p "$out/kernels"
for k in kernels/mlsys_relm*.cuh; do python3 tools/cuda_emu/xform.py "$k" "$out/$k"; done
name=$(basename "$test" .cu)
python3 tools/cuda_emu/xform.py "$test" "$out/$name.cpp"
# -I$out first: the rewritten kernels shadow kernels/*.cuh; -w: the emulation's unused shims
g++ -std=c++17 -O1 -g -w -I"$out" -I. "$out/$name.cpp" -o "$out/$name" -llpsolve55 -lcolamd -ldl -lm -lpthread -lcurl -lcrypto -ljpeg
exec stdbuf -oL "$out/$name"
