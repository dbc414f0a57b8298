#!/usr/bin/env bash
# Run every test binary given, then print the totals as the last line: "N passed, N failed, N skipped".
# Exits 1 if any test failed or a binary crashed.
set -u
p=0; f=0; s=0; crashed=0
for t in "$@"; do
  echo "== $(basename "$t")"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | sed '$d'
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); s=$((s + BASH_REMATCH[3]))
    echo "   ($last)"
    if [ $rc -ne 0 ] && [ "${BASH_REMATCH[2]}" = 0 ]; then echo "  FAIL  $(basename "$t") exited with $rc"; f=$((f + 1)); fi
  else
    printf '%s\n' "$last"
    echo "  FAIL  $(basename "$t") crashed or exited early (status $rc)"; f=$((f + 1)); crashed=1
  fi
done
echo "$p passed, $f failed, $s skipped"
[ $f -eq 0 ]
