#!/usr/bin/env bash
# Executor benchmark: float inference throughput of tpcc, PyTorch eager (Debian's
# python3-torch) and ONNX Runtime (onnxruntime-node) on fashion_cnn and a
# MobileNetV2-style model, batch 1 and 64, same thread count. See executor_bench.py.
# usage: bench/run_executor.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
scripts/setup >/dev/null
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "installing python3-torch (the PyTorch baseline)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
models="${TPCC_SHARED_MODELS:-../shared/models}"
exec /usr/bin/python3 bench/executor_bench.py --tpcc "$tpcc" --node-modules "$PWD/.deps/node_modules" \
  --work "$work" --models "$models"
