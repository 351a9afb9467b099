#!/usr/bin/env bash
# Fine-tuning benchmark (issue 16's targets): fashion_mbv2 with 4-bit and 2-bit
# kernels, PTQ and one epoch of `tpcc finetune` over the 60,000 Fashion-MNIST
# training images (accuracy on the test set, wall time, peak RSS, images/s), and
# PyTorch eager training the same model with the same fake quantization in the
# same run. See finetune_bench.py.
# usage: bench/run_finetune.sh [TPCC_BINARY] [--epochs N] [--lr LR] [--torch-steps N]
#        (default binary: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fashion.sh
tpcc=build/bin/tpcc
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then tpcc="$1"; shift; fi
fashion_bench bench/finetune_bench.py "$tpcc" python3-torch -- "$@"
