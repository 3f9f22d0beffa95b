#!/usr/bin/env bash
# Regenerates the dialect and pass reference (docs/generated/) from ODS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/build.sh" mlir-doc
mkdir -p "$ROOT/docs/generated"
cp "$BUILD/docs/Dialects/MPDialect.md" "$ROOT/docs/generated/MPDialect.md"
cp "$BUILD/docs/Dialects/CuLibDialect.md" "$ROOT/docs/generated/CuLibDialect.md"
cp "$BUILD/docs/Passes/MPPasses.md" "$ROOT/docs/generated/MPPasses.md"
cp "$BUILD/docs/Passes/CuLibPasses.md" "$ROOT/docs/generated/CuLibPasses.md"
cp "$BUILD/docs/Passes/ConversionPasses.md" "$ROOT/docs/generated/ConversionPasses.md"
echo "docs/generated updated"
