#!/usr/bin/env bash
# MCT peer baseline for the vision transformer (issue 47): Sony's Model Compression
# Toolkit PTQ (default IMX500 TPC, default config) on fashion_vit, W8A8: accuracy, logit
# SQNR and PTQ wall time. See mct_vit.py. Installs Debian's PyTorch, the Fashion-MNIST
# test set and MCT's Python dependencies when missing; MCT itself is not installed:
# pass its source trees (model_optimization at tag v2.2.2, mct_quantizers at v1.5.2).
# usage: bench/run_mct_vit.sh MCT_DIR MCT_QUANTIZERS_DIR [mct_vit.py ARG...]
set -euo pipefail
[ $# -ge 2 ] || { sed -n 's/^# usage: /usage: /p' "$0" >&2; exit 2; }
mct="$(realpath "$1")" quantizers="$(realpath "$2")"
shift 2
cd "$(dirname "$0")/.."
for d in "$mct/model_compression_toolkit" "$quantizers/mct_quantizers"; do
  [ -d "$d" ] || { echo "no $d" >&2; exit 2; }
done
pkgs=(dataset-fashion-mnist python3-torch python3-numpy python3-networkx python3-tqdm
      python3-pulp python3-matplotlib python3-scipy python3-sklearn python3-packaging
      python3-pil python3-protobuf)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
/usr/bin/python3 bench/mct_vit.py --mct-path "$mct:$quantizers" \
  --models "${TPCC_SHARED_MODELS:-../shared/models}" "$@"
