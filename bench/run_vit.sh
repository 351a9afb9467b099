#!/usr/bin/env bash
# Vision-transformer benchmark (issue 47): fashion_vit W8A8 for imx500, imx500_v4 and
# ort_cpu (with and without smooth_quant, from the opset-17 file and, with
# python3-torch, an opset-13 export), W4A8 with and without second-order GPTQ.
# See vit_bench.py.
# usage: bench/run_vit.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fashion.sh
fashion_bench bench/vit_bench.py "${1:-build/bin/tpcc}"
