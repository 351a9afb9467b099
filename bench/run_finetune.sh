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
tpcc=build/bin/tpcc
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then tpcc="$1"; shift; fi
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
   ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "installing dataset-fashion-mnist and python3-torch"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    dataset-fashion-mnist python3-torch >/dev/null
fi
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
exec /usr/bin/python3 bench/finetune_bench.py --tpcc "$tpcc" --work "$work" \
  --models "${TPCC_SHARED_MODELS:-../shared/models}" "$@"
