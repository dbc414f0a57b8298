#!/usr/bin/env bash
# scripts/gpu-bundle-check.sh [GPU_DIR] — what `make test` checks of the GPU bundle (docs/gpu.md), printed in the
# test binaries' format (one line per check, then "N passed, N failed, N skipped"):
#   1. every CUDA program of tests/cuda and bench/cuda is in GPU_DIR/bin (and the NCCL variants when NCCL is here);
#   2. with the bundle's LD_LIBRARY_PATH, ldd resolves every library of every program, each to GPU_DIR/lib or to
#      the allowed system set (glibc, libstdc++, libgcc_s, libcuda; libnccl for the *_nccl programs only);
#   3. GPU_DIR/lib holds nothing from that system set, and the bundle is under 60 MiB;
#   4. run.sh, run here, exits 0 and reports every program skipped when this machine has no GPU.
# Without nvcc the bundle cannot be built: one check, skipped.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpu=${1:-$root/build/gpu}
nvcc=${NVCC:-$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)}
p=0; f=0; s=0
ok() { printf '  ok    %s\n' "$1"; p=$((p + 1)); }
bad() { printf '  FAIL  %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/    /'; f=$((f + 1)); }
if [ ! -x "$nvcc" ]; then
  printf '  skip  gpu_bundle  (nvcc not found: the CUDA Toolkit is not installed, so no bundle can be built)\n'
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
[ -d "$gpu/bin" ] || { bad "bundle_exists" "$gpu/bin is missing: run make gpu-bundle"; echo "$p passed, $f failed, $s skipped"; exit 1; }

# 1. every program
want=$(cd "$root" && ls tests/cuda/*.cu bench/cuda/*.cu | xargs -n1 basename | sed 's/\.cu$//')
cu=$(dirname "$nvcc")/..
for l in "$cu"/lib64/libnccl.so "$cu"/lib/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so; do
  if [ -e "$l" ]; then want="$want test_collective_cuda_nccl bench_collective_gpu_nccl test_cloud_cuda_nccl"; break; fi
done
absent=""
for w in $want; do [ -x "$gpu/bin/$w" ] || absent="$absent $w"; done
[ -z "$absent" ] && ok "every_cuda_program_built ($(echo $want | wc -w) programs)" || bad "every_cuda_program_built" "missing:$absent"

# 2. libraries resolve inside the bundle or to the allowed system set
sys='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda)\.so'
for b in "$gpu"/bin/*; do
  n=$(basename "$b")
  problems=""
  while read -r name arrow path _; do
    case "$name" in linux-vdso*|/*) continue ;; esac
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      [[ $name =~ ^libnccl\.so && $n == *_nccl ]] || problems="$problems
$name not found"
      continue
    fi
    case "$path" in "$gpu"/lib/*) continue ;; esac
    [[ $name =~ $sys ]] && continue
    [[ $name =~ ^libnccl\.so && $n == *_nccl ]] && continue
    problems="$problems
$name resolves outside the bundle: $path"
  done < <(LD_LIBRARY_PATH="$gpu/lib" ldd "$b" 2>&1)
  [ -z "$problems" ] && ok "libraries_resolve_in_bundle $n" || bad "libraries_resolve_in_bundle $n" "${problems#?}"
done

# 3. no system libraries shipped; size
shipped=$(ls "$gpu/lib" 2>/dev/null | grep -E "$sys|^libnccl" || true)
[ -z "$shipped" ] && ok "no_system_libraries_in_bundle ($(ls "$gpu/lib" | wc -l) libraries)" || bad "no_system_libraries_in_bundle" "$shipped"
kb=$(du -sk --apparent-size --exclude=out "$gpu" | cut -f1)
[ "$kb" -le $((60 * 1024)) ] && ok "bundle_under_60_MiB ($((kb / 1024)) MiB)" || bad "bundle_under_60_MiB" "$((kb / 1024)) MiB"

# 4. run.sh here
tmp=$(mktemp -d)
out=$(OUT=$tmp bash "$gpu/run.sh" 2>&1); rc=$?
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  [ $rc = 0 ] && ok "run_sh_on_this_gpu" || bad "run_sh_on_this_gpu (exit $rc)" "$(tail -n 20 "$tmp/gpu-summary.txt" 2>/dev/null)"
else
  rows=$(grep -E '^(test|bench) ' "$tmp/gpu-summary.txt" 2>/dev/null)
  notskipped=$(printf '%s\n' "$rows" | awk '$3 != "skipped"')
  nrows=$(printf '%s\n' "$rows" | grep -c . || true)
  if [ $rc = 0 ] && [ -z "$notskipped" ] && [ "$nrows" -ge "$(echo $want | wc -w)" ] && [ -s "$tmp/gpu-run.log" ]; then
    ok "run_sh_without_gpu_skips_every_program ($nrows programs)"
  else
    bad "run_sh_without_gpu_skips_every_program (exit $rc, $nrows rows)" "$(printf '%s\n%s' "$notskipped" "$(printf '%s\n' "$out" | tail -n 15)")"
  fi
fi
rm -rf "$tmp"
echo "$p passed, $f failed, $s skipped"
[ $f = 0 ]
