#!/usr/bin/env bash
# Mixed-precision benchmark: accuracy, stored bytes and time under weights budgets on
# the shared models (imx500), an activation-memory and a BOPs budget, and how the search
# time grows with 10 / 100 / 1,000 layers. See mixed_bench.py.
# usage: bench/run_mixed.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fashion.sh
fashion_bench bench/mixed_bench.py "${1:-build/bin/tpcc}"
