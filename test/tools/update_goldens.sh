#!/usr/bin/env bash
# Regenerates the golden outputs of test/lit/emit from the current build.
# usage: test/tools/update_goldens.sh [TPCC_BINARY]   (default: build/bin/tpcc)
set -euo pipefail
cd "$(dirname "$0")/../.."
tpcc="${1:-build/bin/tpcc}"
for src in test/lit/emit/golden*.tpc; do
  name=$(basename "$src" .tpc)
  "$tpcc" emit --emit=json "$src" -o "test/lit/emit/Inputs/$name.json"
  echo "updated test/lit/emit/Inputs/$name.json"
done
