#!/usr/bin/env bash
# Configures (once) and builds MixPrec in build/ with Ninja, ccache and lld.
# Usage: scripts/build.sh [ninja targets...]
# MP_BUILD_DIR picks another build directory and MP_CMAKE_ARGS (a
# space-separated list) adds to or overrides the configuration below, e.g.
# the sanitizer and fuzzing builds of scripts/sanitize.sh and scripts/fuzz.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
# ccache keys on paths relative to the checkout (and, for the -g builds,
# not on the build directory), so that a clone elsewhere (CI's) reuses what
# this one compiled. Set them yourself to override.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_INSTALL_PREFIX="$BUILD/install" \
    ${MP_CMAKE_ARGS:-}
fi
cmake --build "$BUILD" -- "$@"
