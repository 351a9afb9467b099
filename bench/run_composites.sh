#!/usr/bin/env bash
# Composite-activation benchmark for imx500: quantizers planned, accuracy and logit SQNR
# (W8A8, W8A8 with MCT's shift_negative, W4A8) of fashion_mbv2 and a real MobileNetV3-small
# (HardSwish as HardSigmoid*Mul, SE gates), with and without composites when --before gives
# a tpcc built before them (e.g. at 9eaa455 in a worktree); and ONNX Runtime's integer
# kernels and its top-1 agreement with tpcc on the QDQ models. See composites_bench.py.
# The MobileNetV3 is trained and exported once (export_mobilenetv3.py, about 7 minutes; needs
# python3-torch and python3-torchvision) into $TPCC_BENCH_DIR, which keeps it for later runs.
# usage: bench/run_composites.sh [--before OLD_TPCC] [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/.."
before=()
[ "${1:-}" = --before ] && { before=(--before "$(realpath "$2")"); shift 2; }
tpcc="${1:-build/bin/tpcc}"
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
need() {  # Debian packages, installed when missing
  local SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 ||
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        "$pkg" >/dev/null
  done
}
need dataset-fashion-mnist
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
if [ ! -f "$work/mobilenetv3.onnx" ]; then
  need python3-torch python3-torchvision
  echo "training and exporting MobileNetV3-small into $work"
  /usr/bin/python3 bench/export_mobilenetv3.py --out "$work/mobilenetv3.onnx" \
    --calib-out "$work/mobilenetv3_calib.npy" 2>&1 | grep -v -i warn
fi
exec /usr/bin/python3 bench/composites_bench.py --tpcc "$tpcc" "${before[@]}" --work "$work" \
  --models "${TPCC_SHARED_MODELS:-../shared/models}" --mbv3 "$work/mobilenetv3.onnx" \
  --mbv3-calib "$work/mobilenetv3_calib.npy" --node-modules "$PWD/.deps/node_modules"
