#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds
# mp-opt and mp-run, imports examples/models/tiny_cnn.onnx into the mp
# dialect (build/tiny_cnn.mlir), compiles it to a plan (build/tiny_cnn.mpplan)
# and runs the plan on the CPU backend, then says what it did.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" mp-opt mp-run

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

PLAN="$BUILD/tiny_cnn.mpplan"
echo "== mp-opt $MODEL --emit=plan -o $PLAN"
"$BUILD/bin/mp-opt" "$MODEL" --emit=plan -o "$PLAN"
echo "   $(stat -c %s "$PLAN") bytes:"
"$BUILD/bin/mp-run" "$PLAN" --print-plan | head -4 | sed 's/^/     /'
INPUT="$BUILD/tiny_cnn.input.npy"
"$ROOT/.venv/bin/python" -c "import numpy as np; np.save('$INPUT', np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32))"
echo "== mp-run $PLAN $INPUT --timing"
"$BUILD/bin/mp-run" "$PLAN" "$INPUT" --timing
