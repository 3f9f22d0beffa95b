#!/usr/bin/env bash
# Builds MixPrec with AddressSanitizer + UndefinedBehaviorSanitizer (g++, -O1)
# in build-asan/ and runs the test suite on that build: every Catch2 test,
# every lit test (the fp32 conformance run of the ONNX backend tests included)
# and the import of the whole ONNX backend test corpus. Only the two
# conformance runs under autocast and through ONNX Runtime are left out: they
# run the same importer, passes and kernels as the fp32 run and the autocast
# lit tests (docs/robustness.md). Any sanitizer report fails the run.
#
#   scripts/sanitize.sh          (scripts/run-tests.sh runs it after the main suite)
#
# Assumes scripts/install-deps.sh has run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_ASAN_BUILD_DIR:-$ROOT/build-asan}"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    "-DMP_SANITIZERS=address;undefined"
fi
cmake --build "$BUILD" -- all mp-models

# Reports are errors: UBSan stops at the first one (-fno-sanitize-recover), and
# LeakSanitizer checks every process at exit.
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The lit tests left out by default (MP_SANITIZE_LIT_FILTER_OUT= runs all).
DEFAULT_FILTER_OUT='Conformance/allowlist-(autocast|ort)'

echo "== [sanitizers] ONNX backend test corpus (import of every model)"
"$BUILD/bin/mp-import-suite" --min-import-rate=0.95

echo "== [sanitizers] ctest (Catch2 + lit)"
(cd "$BUILD" && LIT_FILTER_OUT="${MP_SANITIZE_LIT_FILTER_OUT-$DEFAULT_FILTER_OUT}" \
  ctest --output-on-failure -j2)
