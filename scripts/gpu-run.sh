#!/usr/bin/env bash
# build/gpu/run.sh — the whole GPU check in one command (docs/gpu.md): prints the device, runs every CUDA test, then
# every GPU benchmark, and writes the full log (gpu-run.log) and a short table (gpu-summary.txt) to $OUT when it is
# set, else to build/gpu/out/. Exits 1 if any program failed, crashed or ran past its time limit.
#
# Needs only the NVIDIA driver: the libraries the programs load are in lib/ beside this script (made by
# scripts/gpu-bundle.sh), except NCCL, which is looked up on this machine (NCCL_LIB_DIR, the CUDA image's pip
# package nvidia-nccl-cu*, ldconfig, the CUDA directories); without it the NCCL programs are reported skipped.
# Without a GPU every program says so and is reported skipped (exit 0): that is what `make test` checks here.
#
#   GPU_TEST_TIMEOUT   seconds per test program (default 240)
#   GPU_BENCH_TIMEOUT  seconds per benchmark (default 180)
#   GPU_RUN_BUDGET     seconds for the whole run; benchmarks that would start after it are skipped (default 480)
#   GPU_NCCL_TIMEOUT   seconds for each NCCL program (default 60)
#   GPU_ONLY           a regular expression: run only the programs whose name matches it
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
log=$out/gpu-run.log
table=$out/gpu-summary.txt
: > "$log"
: > "$table.tmp"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}   # an NCCL failure says why
t_test=${GPU_TEST_TIMEOUT:-240}
t_bench=${GPU_BENCH_TIMEOUT:-180}
budget=${GPU_RUN_BUDGET:-480}
only=${GPU_ONLY:-}
start=$(date +%s)

say() { printf '%s\n' "$*" | tee -a "$log"; }

find_nccl() {
  local d p py
  if [ -n "${NCCL_LIB_DIR:-}" ] && [ -e "$NCCL_LIB_DIR/libnccl.so.2" ]; then echo "$NCCL_LIB_DIR"; return 0; fi
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    d=$("$py" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null) &&
      [ -e "$d/libnccl.so.2" ] && { echo "$d"; return 0; }
  done
  p=$(/sbin/ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [ -n "$p" ] && [ -e "$p" ] && { dirname "$p"; return 0; }
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/libnccl.so.2" ] && { echo "$d"; return 0; }
  done
  p=$(find /opt /usr/local /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -n 1)
  [ -n "$p" ] && { dirname "$p"; return 0; }
  return 1
}

say "== mlsys GPU run: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
[ -f "$here/MANIFEST" ] && say "$(head -n 3 "$here/MANIFEST")"
gpu_present=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu_present=1
  say "device: $(nvidia-smi -L 2>&1 | head -n 4)"
  say "driver: $(nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -n 1) (driver, memory, max SM / memory clock)"
else
  say "device: none (nvidia-smi absent or lists no GPU); every program should report itself skipped"
fi
nccl=""
if nccl=$(find_nccl); then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl
  say "NCCL: $nccl/libnccl.so.2"
else
  nccl=""
  say "NCCL: not found on this machine (set NCCL_LIB_DIR): the NCCL programs are skipped"
fi

failed=0
# run KIND NAME ARGS...: one program of bin/, from data/ (where the inputs it opens are), under a time limit
run() {
  local kind=$1 name=$2 status rc t0 t1 o limit summary
  shift 2
  if [ -n "$only" ] && ! [[ $name =~ $only ]]; then return; fi
  limit=$t_test
  [ "$kind" = bench ] && limit=$t_bench
  # NCCL has never started in these sandboxes: a hang in ncclCommInitAll must not eat the lease
  [[ $name == *_nccl ]] && limit=${GPU_NCCL_TIMEOUT:-60}
  local prog=("$here/bin/$name")
  if [ -f "$here/data/$name.py" ]; then prog=(python3 "$here/data/$name.py"); fi   # a peer in Python (PyTorch)
  if [[ $name == *_nccl ]] && [ ! -x "$here/bin/$name" ]; then
    # the bundle is built wherever nvcc is; NCCL's headers and library may not be there (CI has none)
    printf '%-6s %-28s %-8s %6s  %s\n' "$kind" "$name" "skipped" "-" "not built: no NCCL where the bundle was built" >> "$table.tmp"
    say "== $kind $name: skipped (not built: no NCCL where the bundle was built)"
    return
  fi
  if [ ! -x "$here/bin/$name" ] && [ ! -f "$here/data/$name.py" ]; then
    status=missing; rc=-; summary="not in the bundle (built without its dependency?)"
    printf '%-6s %-28s %-8s %6s  %s\n' "$kind" "$name" "$status" "-" "$summary" >> "$table.tmp"
    say "== $kind $name: not in the bundle"
    return
  fi
  if [[ $name == *_nccl ]] && [ -z "$nccl" ]; then
    printf '%-6s %-28s %-8s %6s  %s\n' "$kind" "$name" "skipped" "-" "NCCL not found on this machine" >> "$table.tmp"
    say "== $kind $name: skipped (NCCL not found)"
    return
  fi
  if [ "$kind" = bench ] && [ $(( $(date +%s) - start )) -gt "$budget" ]; then
    printf '%-6s %-28s %-8s %6s  %s\n' "$kind" "$name" "skipped" "-" "run budget of $budget s spent" >> "$table.tmp"
    say "== $kind $name: skipped (GPU_RUN_BUDGET $budget s spent)"
    return
  fi
  say "== $kind $name $*"
  t0=$(date +%s.%N)
  o=$(cd "$here/data" && PYTHONUNBUFFERED=1 timeout -k 10 "$limit" "${prog[@]}" "$@" 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\n' "$o" >> "$log"
  printf '%s\n' "$o" | tail -n 40
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    status=TIMEOUT; failed=1; summary="killed after $limit s"
  elif [ $rc != 0 ]; then
    status=FAIL; failed=1; summary=$(printf '%s\n' "$o" | grep -m1 -E 'FAIL|error|Error' || printf '%s\n' "$o" | tail -n 1)
  elif [ $gpu_present = 1 ] && printf '%s\n' "$o" | grep -qiE 'no CUDA device'; then
    # nvidia-smi lists a GPU but the program saw none (driver, sandbox, CUDA_VISIBLE_DEVICES): a failed run, not a skip
    status=FAIL; failed=1; summary="nvidia-smi lists a GPU but the program found none: $(printf '%s\n' "$o" | grep -m1 -iE 'cuda' | cut -c1-80)"
  elif printf '%s\n' "$o" | grep -qiE 'no CUDA device'; then
    # test.h programs run their host-side checks without a device: keep their counts beside the reason
    status=skipped; summary="no CUDA device$(printf '%s\n' "$o" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n 1 | sed 's/^/; host-side checks: /')"
  elif printf '%s\n' "$o" | grep -qiE 'built without NCCL'; then
    status=skipped; summary="built without NCCL"
  elif printf '%s\n' "$o" | grep -qE '^skipped: '; then
    status=skipped; summary=$(printf '%s\n' "$o" | grep -m1 -E '^skipped: ' | cut -c10-)
  else
    status=ok
    summary=$(printf '%s\n' "$o" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$|all GPU checks passed|all ok|mismatches|tokens/s' | tail -n 1)
  fi
  printf '%-6s %-28s %-8s %6.1f  %s\n' "$kind" "$name" "$status" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "${summary:0:110}" >> "$table.tmp"
}

run test common_cuda_check
run test test_collective_cuda
run test test_collective_cuda_nccl nccl
run test test_relm_gpt2_cuda
run test test_relm_train_cuda
run test test_remat_cnn_cuda
run test test_cloud_cuda
run test test_cloud_cuda_nccl nccl
run bench bench_collective_gpu
run bench bench_collective_gpu_nccl nccl
run bench bench_relm_gpt2_gpu
run bench peer_gpt2_torch
run bench bench_remat_cnn_gpu
# programs in the bundle that the list above does not name (added later): run them too, as tests
for b in "$here"/bin/*; do
  n=$(basename "$b")
  case " common_cuda_check test_collective_cuda test_collective_cuda_nccl test_relm_gpt2_cuda test_relm_train_cuda test_remat_cnn_cuda test_cloud_cuda test_cloud_cuda_nccl bench_collective_gpu bench_collective_gpu_nccl bench_relm_gpt2_gpu peer_gpt2_torch bench_remat_cnn_gpu " in
    *" $n "*) ;;
    *) case $n in bench_*) run bench "$n" ;; *) run test "$n" ;; esac ;;
  esac
done

{
  echo "mlsys GPU run, $(date -u +%Y-%m-%dT%H:%M:%SZ), $( [ $gpu_present = 1 ] && nvidia-smi -L 2>/dev/null | head -n 1 || echo 'no GPU')"
  printf '%-6s %-28s %-8s %6s  %s\n' kind program status seconds summary
  cat "$table.tmp"
  echo "total $(( $(date +%s) - start )) s; $( [ $failed = 0 ] && echo 'nothing failed' || echo 'FAILURES above')"
} > "$table"
rm -f "$table.tmp"
echo
cat "$table"
cat "$table" >> "$log"
exit $failed
