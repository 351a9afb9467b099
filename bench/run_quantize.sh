#!/usr/bin/env bash
# Quantizer benchmark: accuracy and logit SQNR of tpcc quantize on the shared models
# for every shipped platform (W8A8 and 4-bit weights), and its time with 100 / 500 /
# 5,000 calibration images. See quantize_bench.py. With --ort-cpu: accuracy and SQNR of
# the ort_cpu / ort_cpu_no_vnni platforms as ONNX Runtime computes them with and without
# VNNI instead (ort_cpu_bench.py).
# usage: bench/run_quantize.sh [--ort-cpu] [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
script=bench/quantize_bench.py
[ "${1:-}" = --ort-cpu ] && { script=bench/ort_cpu_bench.py; shift; }
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
  echo "installing dataset-fashion-mnist (the Fashion-MNIST test set)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >/dev/null
fi
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
exec /usr/bin/python3 "$script" --tpcc "$tpcc" --work "$work" \
  --models "${TPCC_SHARED_MODELS:-../shared/models}"
