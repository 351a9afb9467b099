#!/usr/bin/env bash
# Compiler benchmark: generated specs with N configs, N opsets and N fusing
# patterns (bench/gen_spec.py), for N = 1k, 10k, 100k. Prints wall time and peak
# memory of `tpcc check` and `tpcc emit --emit=json`, the time per 1k items,
# and the verdict against the target (10k checked and emitted in under 1 s).
# usage: bench/run_compiler.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # prints "seconds peak_kb" for the best of 3 runs
  local best="" mem=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null
    read -r s m < "$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s; mem=$m; fi
  done
  echo "$best $mem"
}

printf "%-8s %10s %12s %10s %12s %14s %12s\n" N "size(KB)" "check(s)" "MB" "emit(s)" "emit s/1k" "MB"
declare -A emit_time
for n in 1000 10000 100000; do
  python3 bench/gen_spec.py "$n" > "$work/spec$n.tpc"
  size=$(( $(stat -c %s "$work/spec$n.tpc") / 1024 ))
  read -r ct cm < <(measure "$tpcc" check "$work/spec$n.tpc")
  read -r et em < <(measure "$tpcc" emit --emit=json "$work/spec$n.tpc" -o "$work/out$n.json")
  emit_time[$n]=$et
  per=$(awk "BEGIN{printf \"%.4f\", $et / ($n / 1000)}")
  printf "%-8s %10s %12s %10s %12s %14s %12s\n" "$n" "$size" "$ct" "$((cm / 1024))" "$et" "$per" "$((em / 1024))"
done
awk -v a="${emit_time[1000]}" -v b="${emit_time[10000]}" -v c="${emit_time[100000]}" 'BEGIN{
  printf "growth: 1k->10k x%.1f, 10k->100k x%.1f (linear = x10)\n", b / (a > 0 ? a : 0.001), c / (b > 0 ? b : 0.001);
  printf "target: 10k check+emit under 1 s: %s (%.2f s)\n", (b < 1.0 ? "MET" : "NOT MET"), b }'
