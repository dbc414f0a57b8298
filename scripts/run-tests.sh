#!/usr/bin/env bash
# Run every test binary given, then print the totals as the last line: "N passed, N failed, N skipped".
# Exits 1 if any test failed or a binary crashed.
#
# TEST_JOBS binaries run at once (default: the number of cores). No test's verdict depends on time or load
# (docs/ARCHITECTURE.md, issue 19), so they may share the machine; each binary's output is printed whole when it
# finishes. The slowest binaries start first so that the run ends with short ones. The binaries in `solo` run
# afterwards, one at a time: the netem test measures shaped links through the kernel's traffic control, and a link
# shaped to a few Mbit/s stays honest only while the cores are not all busy (its floor is generous, not infinite).
set -u
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
solo=' test_xfer_netem '
slow_first='test_remat test_pcr_fidelity test_remat_coarsen test_remat_real_graphs test_remat_dtr test_pipe_jpeg test_index_model test_xfer_store test_xfer_dataplane'
order=()
later=()
for s in $slow_first; do for t in "$@"; do [ "$(basename "$t")" = "$s" ] && order+=("$t"); done; done
for t in "$@"; do
  case "$solo" in *" $(basename "$t") "*) later+=("$t"); continue ;; esac
  case " $slow_first " in *" $(basename "$t") "*) ;; *) order+=("$t") ;; esac
done
n_par=${#order[@]}
order+=("${later[@]}")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p=0; f=0; s=0

# report I T: the output and exit status of binary T (run as job I), added into the totals
report() {
  local i=$1 t=$2 out rc last
  out=$(cat "$tmp/$i.out")
  rc=$(cat "$tmp/$i.rc" 2>/dev/null || echo 255)
  echo "== $(basename "$t")"
  printf '%s\n' "$out" | sed '$d'
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); s=$((s + BASH_REMATCH[3]))
    echo "   ($last)"
    if [ "$rc" -ne 0 ] && [ "${BASH_REMATCH[2]}" = 0 ]; then echo "  FAIL  $(basename "$t") exited with $rc"; f=$((f + 1)); fi
  else
    printf '%s\n' "$last"
    echo "  FAIL  $(basename "$t") crashed or exited early (status $rc)"; f=$((f + 1))
  fi
}

declare -A pid_of   # job index -> pid
running=0
next=0
done_count=0
n=${#order[@]}
while [ $done_count -lt "$n" ]; do
  # the solo binaries start only when everything before them has finished, and then one at a time
  cap=$jobs
  [ $next -ge "$n_par" ] && cap=1
  while [ $running -lt "$cap" ] && [ $next -lt "$n" ] && { [ $next -lt "$n_par" ] || [ $done_count -ge "$n_par" ]; }; do
    t=${order[$next]}
    ( "$t" > "$tmp/$next.out" 2>&1; echo $? > "$tmp/$next.rc" ) &
    pid_of[$next]=$!
    running=$((running + 1))
    next=$((next + 1))
  done
  wait -n 2>/dev/null || true
  for i in "${!pid_of[@]}"; do
    if ! kill -0 "${pid_of[$i]}" 2>/dev/null; then
      wait "${pid_of[$i]}" 2>/dev/null
      report "$i" "${order[$i]}"
      unset "pid_of[$i]"
      running=$((running - 1))
      done_count=$((done_count + 1))
    fi
  done
done
echo "$p passed, $f failed, $s skipped"
[ $f -eq 0 ]
