#!/usr/bin/env bash
# Number-format benchmark (issue 48): fashion_vit with weight-only 4-bit blocks and
# MXINT8 and MXFP4 weights, and FP8 W8A8, rounded to nearest and with second-order
# rounding. See formats_bench.py.
# usage: bench/run_formats.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fashion.sh
fashion_bench bench/formats_bench.py "${1:-build/bin/tpcc}"
