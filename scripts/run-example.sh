#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds
# mp-opt and mp-run, imports examples/models/tiny_cnn.onnx into the mp
# dialect (build/tiny_cnn.mlir), compiles it to a plan (build/tiny_cnn.mpplan)
# and runs the plan on the CPU backend, then compiles it in mixed precision
# (bf16, with the autocast and padding reports) and runs both plans side by
# side: time per run and the mixed plan's error against fp32.
set -euo pipefail
# Excerpts are cut with sed -n, not head: head exits early, and with pipefail
# the writer's SIGPIPE (exit 141) would fail the script when its output is long.
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
echo "   inputs: $(grep -o 'mp.name = "[^"]*"' "$OUT" | sed -n '1,1p' | cut -d'"' -f2)," \
     "outputs: $(grep -o 'mp.name = "[^"]*"' "$OUT" | tail -1 | cut -d'"' -f2)"
echo "   ops (mp-opt --print-op-stats):"
"$BUILD/bin/mp-opt" "$OUT" --print-op-stats -o /dev/null 2>&1 | grep -E '^ +mp\.' | sed -E 's/ +,/:/; s/^ +/     /'
echo "== first lines of the result:"
grep -E 'mp\.(conv|batch_normalization|softmax)' "$OUT" | sed -n '1,3p' | cut -c1-160

PLAN="$BUILD/tiny_cnn.mpplan"
echo "== mp-opt $MODEL --emit=plan -o $PLAN"
"$BUILD/bin/mp-opt" "$MODEL" --emit=plan -o "$PLAN"
echo "   $(stat -c %s "$PLAN") bytes:"
"$BUILD/bin/mp-run" "$PLAN" --print-plan | sed -n '1,4p' | sed 's/^/     /'
INPUT="$BUILD/tiny_cnn.input.npy"
"$ROOT/.venv/bin/python" -c "import numpy as np; np.save('$INPUT', np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32))"
echo "== mp-run $PLAN $INPUT --timing"
"$BUILD/bin/mp-run" "$PLAN" "$INPUT" --timing

# The main job: the same model in mixed precision next to fp32. bf16 on the
# CPU (f32 accumulation; this backend runs bf16 on the CPU's bf16 dot
# products where it has them), f16 the same way on a GPU.
MIXED="$BUILD/tiny_cnn.bf16.mpplan"
REPORT="$BUILD/tiny_cnn.autocast.txt"
PAD_REPORT="$BUILD/tiny_cnn.padding.txt"
echo "== mp-opt $MODEL --mp-autocast-pipeline=\"target=bf16 pad-report=...\" --mp-report=$REPORT --emit=plan -o $MIXED"
"$BUILD/bin/mp-opt" "$MODEL" \
  --mp-autocast-pipeline="target=bf16 pad-report=$PAD_REPORT" \
  --mp-report="$REPORT" --emit=plan -o "$MIXED"
echo "   autocast ($REPORT):"
grep -E '^ +(converted|weights:|activations)' "$REPORT" | sed -E 's/^ +/     /'
echo "   tensor-core padding ($PAD_REPORT):"
grep -vE '^\s*$' "$PAD_REPORT" | sed -n '1,3p' | sed -E 's/^ */     /'

echo "== fp32 and mixed precision side by side (mp-run --repeat=50 --warmup=5)"
for label in fp32 bf16; do
  plan="$PLAN"
  [ "$label" = bf16 ] && plan="$MIXED"
  rm -rf "$BUILD/tiny_cnn.$label.out"
  "$BUILD/bin/mp-run" "$plan" "$INPUT" --repeat=50 --warmup=5 \
    --output-dir="$BUILD/tiny_cnn.$label.out" >"$BUILD/tiny_cnn.$label.log"
  echo "   $label: $(grep -o 'median [0-9.]* ms' "$BUILD/tiny_cnn.$label.log") per run"
done
"$ROOT/.venv/bin/python" - "$BUILD/tiny_cnn.fp32.out" "$BUILD/tiny_cnn.bf16.out" <<'PY'
import pathlib, sys
import numpy as np
ref_dir, mixed_dir = map(pathlib.Path, sys.argv[1:])
for ref_file in sorted(ref_dir.glob("*.npy")):
    ref = np.load(ref_file).astype(np.float64)
    mixed = np.load(mixed_dir / ref_file.name).astype(np.float64)
    err = np.abs(mixed - ref)
    print("   output %s: mixed vs fp32 max abs error %.3g (values up to %.3g), "
          "same top-1 class: %s"
          % (ref_file.stem, err.max(), np.abs(ref).max(),
             bool((ref.argmax(-1) == mixed.argmax(-1)).all())))
PY
