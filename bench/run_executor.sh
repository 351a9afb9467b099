#!/usr/bin/env bash
# Executor benchmark (issue 15): throughput of `tpcc eval` against ONNX Runtime
# (onnxruntime-node) and PyTorch eager (Debian's python3-torch) on fashion_cnn,
# fashion_mbv2 and mobilenet_v2_96, float and quantized (imx500, tflite) at batch 1
# and 64 on 1 and 2 threads; `tpcc quantize` time and memory; the same cells with one
# core busy. Prints one table per section and a verdict per target; about 5 minutes
# on 2 cores. See executor_bench.py.
# usage: bench/run_executor.sh [--loaded] [--no-torch] [TPCC_BINARY]   (default: build/bin/tpcc)
#   --loaded    every cell also with a busy core (always: fashion_mbv2 float, 2 threads)
#   --no-torch  neither install nor use PyTorch (no PyTorch column, no mobilenet_v2_96)
# TPCC_BENCH_DIR keeps the work files (QDQ models, data); TPCC_SHARED_MODELS: the models.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --loaded|--no-torch) flags+=("$1"); shift ;;
    -*) echo "unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
scripts/setup >/dev/null
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
install() {  # install Debian package $1 ($2: what for); a failure is reported, not fatal
  echo "installing $1 ($2)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$1" >/dev/null ||
    echo "could not install $1: going on without it"
}
[ -x /usr/bin/time ] || install time "peak memory of each tpcc run"
if [[ " ${flags[*]-} " != *" --no-torch "* ]] && ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  install python3-torch "the PyTorch baseline and the mobilenet_v2_96 export"
fi
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
models="${TPCC_SHARED_MODELS:-../shared/models}"
/usr/bin/python3 bench/executor_bench.py --tpcc "$tpcc" --node-modules "$PWD/.deps/node_modules" \
  --work "$work" --models "$models" ${flags[@]+"${flags[@]}"}
