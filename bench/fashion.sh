# Sourced by the Fashion-MNIST benchmarks (run_quantize.sh, run_mixed.sh, run_gptq.sh,
# run_finetune.sh): `fashion_bench SCRIPT TPCC [PACKAGE...] -- [ARG...]` checks the tpcc
# binary, installs Debian's dataset-fashion-mnist and the other packages when missing,
# makes the work directory ($TPCC_BENCH_DIR, else a temporary one removed at exit) and
# runs SCRIPT with --tpcc, --work, --models (../shared/models unless
# $TPCC_SHARED_MODELS) and the ARGs.
fashion_bench() {
  local script="$1" tpcc="$2"
  shift 2
  local pkgs=(dataset-fashion-mnist)
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  [ -x "$tpcc" ] || { echo "no tpcc binary at $tpcc; run scripts/build first" >&2; exit 2; }
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    local SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
  work="${TPCC_BENCH_DIR:-$(mktemp -d)}"
  mkdir -p "$work"
  [ -n "${TPCC_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
  /usr/bin/python3 "$script" --tpcc "$tpcc" --work "$work" \
    --models "${TPCC_SHARED_MODELS:-../shared/models}" "$@"
}
