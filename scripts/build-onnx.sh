#!/usr/bin/env bash
# Fetches ONNX's source distribution from PyPI and builds its C++ libraries
# (onnx, onnx_proto: static, position-independent) against Debian's protobuf,
# once. MixPrec's importer and exporter link them: Debian 12's libonnx-dev is
# ONNX 1.12 (opset 17, IR 8), which refuses the models today's exporters write.
#
# The build is cached per ONNX version outside the checkout (MP_DEPS_CACHE,
# default ~/.cache/mixprec), so a fresh clone reuses it; the checkout gets a
# link .deps/onnx to it, which CMake looks in first (MP_ONNX_ROOT):
#   .deps/onnx/install   headers, libraries, lib/cmake/ONNX
#   .deps/onnx/src       the sdist, whose onnx/backend/test/data is the ONNX
#                        backend test corpus of the same release
# About 1.5 minutes on 2 cores, and nothing when it is there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ONNX_VERSION="${MP_ONNX_VERSION:-1.20.1}"
CACHE="${MP_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixprec}"
PREFIX="$CACHE/onnx-$ONNX_VERSION"
# ONNX's CMakeLists wants CMake 3.26+; Debian 12 has 3.25, the venv has a newer
# one from PyPI (scripts/requirements-peers.txt).
CMAKE="$ROOT/.venv/bin/cmake"
STAMP="$PREFIX/.built"

link_checkout() {
  mkdir -p "$ROOT/.deps"
  ln -sfn "$PREFIX" "$ROOT/.deps/onnx"
}

if [ -f "$STAMP" ] && [ -f "$PREFIX/install/lib/cmake/ONNX/ONNXConfig.cmake" ]; then
  echo "== ONNX $ONNX_VERSION: built ($PREFIX)"
  link_checkout
  exit 0
fi

[ -x "$CMAKE" ] || { echo "build-onnx.sh: $CMAKE is missing (run scripts/install-deps.sh)" >&2; exit 1; }
echo "== building ONNX $ONNX_VERSION's C++ libraries into $PREFIX"
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
# A fixed path inside the prefix (made afresh above): ccache sees the same
# paths on a rebuild.
WORK="$PREFIX/work"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
"$ROOT/.venv/bin/pip" download -q --disable-pip-version-check --no-deps \
  --no-binary :all: "onnx==$ONNX_VERSION" -d "$WORK"
tar -xzf "$WORK/onnx-$ONNX_VERSION.tar.gz" -C "$WORK"
mv "$WORK/onnx-$ONNX_VERSION" "$PREFIX/src"

LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# ONNX_NAMESPACE=onnx and ONNX_ML=1 are what lib/Import/ONNX and
# lib/Export/ONNX compile with.
"$CMAKE" -S "$PREFIX/src" -B "$WORK/build" -G Ninja "${LAUNCHER[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DBUILD_SHARED_LIBS=OFF \
  -DONNX_ML=ON -DONNX_NAMESPACE=onnx \
  -DONNX_USE_PROTOBUF_SHARED_LIBS=ON \
  -DONNX_BUILD_TESTS=OFF -DONNX_BUILD_PYTHON=OFF -DONNX_GEN_PB_TYPE_STUBS=OFF \
  -DCMAKE_INSTALL_PREFIX="$PREFIX/install" >"$WORK/configure.log" 2>&1 ||
  { cat "$WORK/configure.log" >&2; exit 1; }
"$CMAKE" --build "$WORK/build" >"$WORK/build.log" 2>&1 ||
  { tail -50 "$WORK/build.log" >&2; exit 1; }
"$CMAKE" --install "$WORK/build" >/dev/null
touch "$STAMP"
link_checkout
echo "== ONNX $ONNX_VERSION: built ($PREFIX)"
