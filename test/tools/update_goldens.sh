#!/usr/bin/env bash
# Regenerates the golden outputs of test/lit/emit and test/lit/plan from the current
# build.
# usage: test/tools/update_goldens.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tpcc="$(realpath "${1:-build/bin/tpcc}")"
for src in test/lit/emit/golden*.tpc; do
  name=$(basename "$src" .tpc)
  "$tpcc" emit --emit=json "$src" -o "test/lit/emit/Inputs/$name.json"
  echo "updated test/lit/emit/Inputs/$name.json"
done
# Plans of the shared models (keep in step with test/lit/plan/golden-models.test).
models="${TPCC_SHARED_MODELS:-$root/../shared/models}"
out="$root/test/lit/plan/Inputs/golden"
mkdir -p "$out"
while read -r model platform; do
  name="$(basename "$model" .onnx).$platform.plan.json"
  (cd "$models" && "$tpcc" plan --platform "$platform" "$model" -o "$out/$name" >/dev/null)
  echo "updated test/lit/plan/Inputs/golden/$name"
done <<'LIST'
digits_cnn.onnx imx500
fashion_cnn.onnx imx500
fashion_cnn.onnx tflite
fashion_cnn.onnx qnnpack
fashion_cnn.onnx default
zoo/mnist-8.onnx imx500
zoo/squeezenet_cifar10.onnx imx500_v4
zoo/HAR-CNN.onnx default
zoo/KWS-DNN_S.onnx tflite
fashion_mbv2.onnx imx500
fashion_mbv2.onnx imx500_v4
LIST
