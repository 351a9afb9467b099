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
. bench/fashion.sh
fashion_bench "$script" "${1:-build/bin/tpcc}"
