#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds
# mp-opt, imports examples/models/tiny_cnn.onnx into the mp dialect, refines
# its types and writes build/tiny_cnn.mlir, then says what it did.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" mp-opt

MODEL="$ROOT/examples/models/tiny_cnn.onnx"
OUT="$BUILD/tiny_cnn.mlir"
echo "== mp-opt $MODEL --mp-infer-shapes -o $OUT"
"$BUILD/bin/mp-opt" "$MODEL" --mp-infer-shapes \
  --mlir-elide-resource-strings-if-larger=64 -o "$OUT"

echo "== imported $(basename "$MODEL") ($(stat -c %s "$MODEL") bytes) into $OUT"
echo "   graph: $(grep -o 'func.func @[^(]*' "$OUT" | sed 's/func.func //')"
echo "   inputs: $(grep -o 'mp.name = "[^"]*"' "$OUT" | head -1 | cut -d'"' -f2)," \
     "outputs: $(grep -o 'mp.name = "[^"]*"' "$OUT" | tail -1 | cut -d'"' -f2)"
echo "   ops (mp-opt --print-op-stats):"
"$BUILD/bin/mp-opt" "$OUT" --print-op-stats -o /dev/null 2>&1 | grep -E '^ +mp\.' | sed -E 's/ +,/:/; s/^ +/     /'
echo "== first lines of the result:"
grep -E 'mp\.(conv|batch_normalization|softmax)' "$OUT" | head -3 | cut -c1-160
