#!/usr/bin/env bash
# Mixed-precision benchmark: accuracy, stored bytes and time under weights budgets on
# the shared models (imx500), an activation-memory and a BOPs budget, and how the search
# time grows with 10 / 100 / 1,000 layers. See mixed_bench.py.
# usage: bench/run_mixed.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
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
exec /usr/bin/python3 bench/mixed_bench.py --tpcc "$tpcc" --work "$work" \
  --models "${TPCC_SHARED_MODELS:-../shared/models}"
