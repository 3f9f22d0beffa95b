#!/usr/bin/env bash
# Builds MixPrec with AddressSanitizer + UndefinedBehaviorSanitizer (g++, -O1)
# in build-asan/ and runs the test suite on that build: every Catch2 test,
# every lit test (the three conformance runs of the ONNX backend tests: fp32,
# autocast, exported to ONNX Runtime, included) and the import of the whole
# ONNX backend test corpus. Any sanitizer report fails the run
# (docs/robustness.md).
#
#   scripts/sanitize.sh          (scripts/run-tests.sh runs it after the main suite)
#
# Assumes scripts/install-deps.sh has run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_ASAN_BUILD_DIR:-$ROOT/build-asan}"
# -O1 keeps the run fast; -g1 (CXXFLAGS: read when the build is configured)
# gives the reports file and line.
CFLAGS=-g1 CXXFLAGS=-g1 MP_BUILD_DIR="$BUILD" MP_CMAKE_ARGS="\
-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 \
-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -DMP_SANITIZERS=address;undefined" \
  "$ROOT/scripts/build.sh" all mp-models mlir-doc

# Reports are errors: UBSan stops at the first one (-fno-sanitize-recover), and
# LeakSanitizer checks every process at exit. allow_user_poisoning=0: LLVM's
# BumpPtrAllocator poisons a new slab and unpoisons each allocation only where
# its inline code is instrumented. libMLIR is not, MixPrec's code is, and both
# allocate from the MLIRContext's allocators (MixPrec's attribute storage is
# built in MixPrec's code): when MixPrec's code opens a slab, libMLIR's later
# allocations in it stay poisoned and ASan reports their writes
# (use-after-poison) although the memory is live (docs/robustness.md).
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

echo "== [sanitizers] ONNX backend test corpus (import of every model)"
"$BUILD/bin/mp-import-suite" --min-import-rate=0.97

echo "== [sanitizers] ctest (Catch2 + lit)"
(cd "$BUILD" && ctest --output-on-failure -j2)
