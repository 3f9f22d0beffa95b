#!/usr/bin/env bash
# ThreadSanitizer check of the serving pattern (docs/runtime.md, "Serving from
# one process"): several CpuExecutors on one loaded plan, one per thread,
# sharing the plan's weights and the weights prepared at load. Builds the
# runtime alone (lib/Runtime: no MLIR needed) with -fsanitize=thread in
# build-tsan/ and runs the "[concurrent]" test cases (ExecutorTest.cpp, built
# alone as mp-runtime-executor-tests); any report fails the run.
#
#   scripts/tsan.sh          (scripts/run-tests.sh runs it after the sanitizers)
#
# The executors run with one OpenMP thread each (the test asks for it):
# libgomp is not instrumented, and its barriers would be reported as races.
# oneDNN, whose primitive cache and jit code the executors share, is used as
# the distribution built it; its locks are pthread's, which ThreadSanitizer
# sees. Assumes scripts/install-deps.sh has run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_TSAN_BUILD_DIR:-$ROOT/build-tsan}"

GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake "${GENERATOR[@]}" -S "$ROOT/lib/Runtime" -B "$BUILD" "${LAUNCHER[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  -DMP_ENABLE_CUDA=OFF -DMP_RUNTIME_BUILD_TESTS=ON >/dev/null
cmake --build "$BUILD" --target mp-runtime-executor-tests

echo "== [tsan] mp-runtime-executor-tests [concurrent]"
TSAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=66" \
  "$BUILD/bin/mp-runtime-executor-tests" "[concurrent]"
