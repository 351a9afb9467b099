#!/usr/bin/env bash
# Planner benchmark: `tpcc plan --platform imx500 MODEL -o plan.json` on generated
# Conv -> Relu -> Add chains (bench/gen_model.py) of 10k, 100k and 1M nodes. Prints wall
# time (best of 3; 1M once), peak memory, microseconds per node, the growth between
# sizes, the time of each phase (`--time`) at 100k, and the verdict against the target
# (100k nodes planned in under 2 s and under 1 GB), and 100k nodes whose activations are
# SiLU chains (composites).
# usage: bench/run_planner.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT

measure() { # RUNS CMD... -> "seconds peak_kb" of the fastest run
  local runs=$1 best="" mem=""
  shift
  for _ in $(seq "$runs"); do
    if ! /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/err"; then
      echo "benchmark command failed: $*" >&2; cat "$work/err" >&2; exit 1
    fi
    read -r s m < "$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s; mem=$m; fi
  done
  echo "$best $mem"
}

printf "%-9s %9s %9s %9s %10s\n" nodes "file MB" seconds "peak MB" "us/node"
declare -A secs mbs
for n in 10000 100000 1000000; do
  model="$work/chain$n.onnx"
  [ -s "$model" ] || /usr/bin/python3 bench/gen_model.py "$n" "$model"
  runs=3; [ "$n" -ge 1000000 ] && runs=1
  read -r s kb < <(measure "$runs" "$tpcc" plan --platform imx500 "$model" -o "$work/plan$n.json")
  secs[$n]=$s; mbs[$n]=$((kb / 1024))
  printf "%-9s %9d %9s %9d %10.2f\n" "$n" $(( $(stat -c %s "$model") / 1048576 )) "$s" "${mbs[$n]}" \
    "$(awk "BEGIN{print $s * 1e6 / $n}")"
done
awk -v a="${secs[10000]}" -v b="${secs[100000]}" -v c="${secs[1000000]}" 'BEGIN{
  printf "growth: 10k->100k x%.1f, 100k->1M x%.1f (linear = x10)\n", b / (a > 0 ? a : 0.01), c / (b > 0 ? b : 0.01) }'
echo "phases at 100k (tpcc --time):"
"$tpcc" plan --time --platform imx500 "$work/chain100000.onnx" -o "$work/plan100000.json" 2>&1 >/dev/null | sed 's/^/  /'
# The same size with every Relu a SiLU spelled as Mul(c, Sigmoid(c)): 25k composite
# chains to find, plan as one node each and fuse with their Conv.
silu="$work/silu100000.onnx"
[ -s "$silu" ] || /usr/bin/python3 bench/gen_model.py 100000 "$silu" silu
read -r s kb < <(measure 3 "$tpcc" plan --platform imx500 "$silu" -o "$work/plansilu.json")
printf "100k nodes with 25k SiLU chains: %s s, %d MB\n" "$s" $((kb / 1024))
awk -v s="${secs[100000]}" -v m="${mbs[100000]}" 'BEGIN{
  printf "target: 100k nodes in under 2 s and 1 GB: %s (%.2f s, %d MB)\n", (s < 2.0 && m < 1024 ? "MET" : "NOT MET"), s, m }'
