#!/usr/bin/env bash
# Installs everything MixPrec needs on a fresh Debian 12 machine: Debian
# packages (LLVM/MLIR 22, protobuf, Catch2, build tools, torch for
# exporting test models, ONNX 1.12's backend test data, which some runtime unit
# tests read), a Python venv (.venv)
# with oneDNN (the CPU runtime's primitives) and the pip packages the tests
# compare against, and ONNX's C++ libraries (scripts/build-onnx.sh). Fast when all is there:
# nothing is downloaded unless something is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

APT_PACKAGES=(
  cmake ninja-build ccache lld g++ git clang-format-22
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libprotobuf-dev protobuf-compiler libonnx-testdata libflatbuffers-dev flatbuffers-compiler
  catch2 libopenblas-dev graphviz libopenmpi-dev openmpi-bin
  python3 python3-venv python3-numpy python3-onnx python3-torch python3-torchvision
  python3-sklearn
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "== installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "== Debian packages: all present"
fi

# Python venv with the peers the tests and benchmarks compare against.
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/scripts/requirements-peers.txt"
STAMP="$VENV/.requirements.sha256"
want="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "== creating the Python venv $VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQUIREMENTS"
  echo "$want" > "$STAMP"
else
  echo "== Python venv: up to date"
fi

# ONNX's C++ libraries and backend test data, built from its PyPI source
# distribution (Debian's libonnx-dev is ONNX 1.12).
"$ROOT/scripts/build-onnx.sh"
