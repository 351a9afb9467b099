#!/usr/bin/env bash
# GPTQ benchmark (issue 17): PTQ against `--gptq second_order`, `soft_rounding` and `ste` on
# fashion_mbv2 at 4, 2 and 8 bits and digits_cnn at 4 (accuracy, time), and how the
# time grows with the calibration set and the model. See gptq_bench.py.
# usage: bench/run_gptq.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fashion.sh
fashion_bench bench/gptq_bench.py "${1:-build/bin/tpcc}"
