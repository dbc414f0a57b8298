#!/usr/bin/env bash
# Copies through the thesis's Fig 4.1 overlay (one relay), every edge emulated at 2 % of its planned Gbps, with
# Skyplane's fixed 8 MiB chunks and with the chunk size the source picks by default (mlsys_xfer_chunk_auto):
# bench/RESULTS.md §5b.5.
#
#   scripts/xfer-relay-bench.sh [RUNS]      RUNS rounds (default 3) of every row, interleaved
#
# Each row runs `mlsys transfer cp synthetic://N:8M file://TMP --plan PLAN --json` (gateways as threads of one
# process, token buckets as the links) and prints the copy's Gbps against the plan's (its throughput x 0.02), the
# chunk size and count, and /proc/loadavg before the copy: the machine may be shared, and the emulated rates (a few
# hundred Mbit/s) are meant to stay far below what one core does. Needs build/mlsys ($MLSYS_BIN overrides).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${MLSYS_BIN:-$here/build/mlsys}
runs=${1:-3}
scale=0.02
[ -x "$bin" ] || { echo "xfer-relay-bench: $bin not built (make build/mlsys)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/xfer-relay-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$bin" transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --units skyplane \
  --max-cost-per-gb 0.1076 --plan-out "$tmp/plan.json" --emulate-scale "$scale" > "$tmp/plan.txt"
plan_gbps=$(sed -n 's/.*"throughput_gbps": *\([0-9.eE+-]*\).*/\1/p' "$tmp/plan.json" | head -1)
planned=$(awk -v t="$plan_gbps" -v s="$scale" 'BEGIN { printf "%.4f", t * s }')
echo "plan: $plan_gbps Gbps (thesis units) -> $planned Gbps emulated; $(grep -c '"from"' "$tmp/plan.json") edges"
sed -n 's/^ *\(.*Gbps:.*\)$/  path \1/p' "$tmp/plan.txt"
printf '%-6s %-10s %-11s %-7s %-9s %-9s %-8s %s\n' round source chunk chunks seconds gbps of_plan loadavg
for r in $(seq 1 "$runs"); do
  for src in 16:8M 64:8M; do
    for chunk in 8 auto; do
      rm -rf "$tmp/dst"
      load=$(cut -d' ' -f1-3 /proc/loadavg)
      opt=()
      [ "$chunk" = auto ] || opt=(--chunk-mib "$chunk")
      out=$("$bin" transfer cp "synthetic://$src" "file://$tmp/dst" --plan "$tmp/plan.json" --json "${opt[@]}")
      gbps=$(sed -n 's/.*"gbps": *\([0-9.eE+-]*\).*/\1/p' <<< "$out" | head -1)
      secs=$(sed -n 's/.*"seconds": *\([0-9.eE+-]*\).*/\1/p' <<< "$out" | head -1)
      cb=$(sed -n 's/.*"chunk_bytes": *\([0-9]*\).*/\1/p' <<< "$out" | head -1)
      nch=$(sed -n 's/.*"chunks": *\([0-9]*\).*/\1/p' <<< "$out" | head -1)
      awk -v r="$r" -v s="$src" -v c="$chunk" -v cb="$cb" -v n="$nch" -v t="$secs" -v g="$gbps" -v p="$planned" -v l="$load" \
        'BEGIN { printf "%-6s %-10s %-11s %-7s %-9.2f %-9.4f %-8.3f %s\n", r, s, (c == "auto" ? "auto " : "") cb / 1024 "K", n, t, g, g / p, l }'
    done
  done
done
