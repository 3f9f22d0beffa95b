#!/usr/bin/env bash
# Installs what is missing, builds everything (including the test models
# exported by torch), imports the whole ONNX backend test corpus and runs all
# tests with ctest: the lit suite and every Catch2 test case. Then all of it
# again on an AddressSanitizer + UndefinedBehaviorSanitizer build, and the
# concurrent executors' test on a ThreadSanitizer build of the runtime.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"

# The C++ lines changed since the style was adopted follow .clang-format.
echo "== format (scripts/check-format.sh)"
"$ROOT/scripts/check-format.sh"

"$ROOT/scripts/build.sh" all mp-models mlir-doc

echo "== ONNX backend test corpus (import of every model)"
"$BUILD/bin/mp-import-suite" --min-import-rate=0.97

echo "== ctest"
(cd "$BUILD" && ctest --output-on-failure -j2)

# The numerics-sensitive tests again under an OpenBLAS kernel family other
# than this machine's default: what holds on one CPU's kernels only fails
# here, not on the next machine CI runs on (docs/testing.md, "Portability").
echo "== portability (scripts/check-portability.sh --ci)"
MP_BUILD_DIR="$BUILD" "$ROOT/scripts/check-portability.sh" --ci

# The same suite on an AddressSanitizer + UndefinedBehaviorSanitizer build
# (docs/robustness.md). MP_SKIP_SANITIZERS=1 skips it in a quick local loop.
if [ "${MP_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== sanitizers (scripts/sanitize.sh)"
  "$ROOT/scripts/sanitize.sh"
  # Several executors of one plan in several threads, on a ThreadSanitizer
  # build of the runtime (docs/runtime.md, "Serving from one process").
  echo "== thread sanitizer (scripts/tsan.sh)"
  "$ROOT/scripts/tsan.sh"
fi
