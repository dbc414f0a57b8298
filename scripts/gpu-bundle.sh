#!/usr/bin/env bash
# scripts/gpu-bundle.sh GPU_DIR — make GPU_DIR (build/gpu) runnable on a GPU machine that has only a driver
# (docs/gpu.md). `make gpu-bundle` calls it after compiling GPU_DIR/bin/*.
#   lib/        every shared library the programs load, from ldd, except the allowed system set (glibc, libstdc++,
#               libgcc_s, libcuda: present on any machine that runs CUDA) and NCCL (200+ MB; run.sh finds the GPU
#               machine's own), stripped of symbols
#   data/       the input files the programs read, at the paths they open (run.sh runs them from here)
#   run.sh      runs every test, then every benchmark (scripts/gpu-run.sh)
#   MANIFEST    programs, libraries and sizes
# Fails if a library cannot be found here, or if the bundle exceeds GPU_BUNDLE_MAX_MB (60: it travels as a carried
# path, and the device tool takes 64 MiB with the working tree).
set -euo pipefail
gpu=${1:-build/gpu}
max_mb=${GPU_BUNDLE_MAX_MB:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# sonames that stay with the system: the C and C++ runtimes and the driver (what a bare CUDA machine has), NCCL
allowed='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libnccl)\.so'
rm -rf "$gpu/lib" "$gpu/data"
mkdir -p "$gpu/lib" "$gpu/data/tests/data/graphs"
missing=0
for b in "$gpu"/bin/*; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $name =~ $allowed ]] && continue
    if [ "$path" = "not" ] || [ ! -e "$path" ]; then
      echo "gpu-bundle: $(basename "$b") needs $name, which is not installed here" >&2
      missing=1
      continue
    fi
    if [ ! -e "$gpu/lib/$name" ]; then
      cp -L "$path" "$gpu/lib/$name"
      chmod u+w "$gpu/lib/$name"
      strip --strip-unneeded "$gpu/lib/$name" 2>/dev/null || true
    fi
  done < <(ldd "$b")
done
[ $missing = 0 ] || exit 1
cp "$root/tests/data/graphs/smallcnn_b8.json" "$gpu/data/tests/data/graphs/"
mkdir -p "$gpu/data/tests/data/offload" && cp "$root/tests/data/offload/trees.txt" "$gpu/data/tests/data/offload/"
cp "$root"/bench/cuda/*.py "$gpu/data/"   # the peers that run in Python (PyTorch, on the GPU machine's python3)
cp "$root/scripts/gpu-run.sh" "$gpu/run.sh"
chmod +x "$gpu/run.sh"
{
  echo "# build/gpu: made by scripts/gpu-bundle.sh on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "# nvcc: $("${NVCC:-nvcc}" --version 2>/dev/null | tail -n 1 || echo '?')"
  (cd "$gpu" && find bin lib data -type f -printf '%s\t%p\n' | sort -k2)
} > "$gpu/MANIFEST"
kb=$(du -sk --apparent-size --exclude=out "$gpu" | cut -f1)
echo "gpu-bundle: $gpu: $(ls "$gpu/bin" | wc -l) programs, $(ls "$gpu/lib" | wc -l) libraries, $((kb / 1024)) MiB"
if [ "$kb" -gt $((max_mb * 1024)) ]; then
  echo "gpu-bundle: $gpu is $((kb / 1024)) MiB, over the $max_mb MiB a carried path may take" >&2
  exit 1
fi
touch "$gpu/.bundled"   # the Makefile's stamp: a second make does not bundle again
