#!/usr/bin/env bash
# Issue 46's study: which corrections and threshold methods tpcc quantize should run
# with no recipe. Every setting of bench/defaults_study.py on the shared models
# (accuracy, logit SQNR and time, scored as ONNX Runtime runs the QDQ model) for
# imx500, imx500_v4, tflite and ort_cpu; with --corpus, also every corpus model
# (scripts/fetch-corpus) quantized for each platform, scored as the corpus test scores
# it. Prints a table per model and platform, then per setting: the median SQNR, the
# worst loss against `today` (the default before the study) and the median time.
# usage: bench/defaults.sh [--corpus] [TPCC_BINARY] [-- STUDY_ARGS...]
#   STUDY_ARGS: --only SETTING,... --platforms P,... --model-names M,...
#               --corpus-only ID,... --no-shared --json FILE
# A full run (shared models and corpus, every setting) takes hours on 2 cores; the
# figures in docs/quantize.md came from --only runs of the settings they name.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [ "${1:-}" = --corpus ]; then
  shift
  /usr/bin/python3 scripts/fetch-corpus
  extra+=(--corpus "$PWD/.deps/node_modules")
fi
tpcc=build/bin/tpcc
if [ $# -gt 0 ] && [ "$1" != -- ]; then tpcc="$1"; shift; fi
[ "${1:-}" = -- ] && shift
. bench/fashion.sh
fashion_bench bench/defaults_study.py "$tpcc" python3-pil fonts-dejavu-core -- "${extra[@]}" "$@"
