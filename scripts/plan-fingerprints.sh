#!/usr/bin/env bash
# What the compiler makes of the six test architectures, as checksums: run it
# before and after a change that must not change behaviour (a refactoring)
# and compare the two lists with diff.
#
#   scripts/plan-fingerprints.sh [OUT_DIR]   (default: build/fingerprints)
#
# For each model of build/models (scripts/export_models.py; `ninja
# mp-models` makes them) at batch 2: the fp32 plan, the mixed-precision plan
# (--mp-autocast-pipeline), the mixed ONNX export, and for the models that
# train in the test suite the fp32 and mixed training plans (SGD with
# momentum; mixed: master weights and dynamic loss scaling). Prints one line
# per file, "sha256  name", sorted; the files stay in OUT_DIR for a closer
# look when a line differs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build/fingerprints}"
MP_OPT="${MP_OPT:-$ROOT/build/bin/mp-opt}"
MODELS="$ROOT/build/models"
[ -x "$MP_OPT" ] || { echo "plan-fingerprints.sh: no mp-opt at $MP_OPT" >&2; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT"

train="--mp-training=loss=cross-entropy optimizer=sgd lr=0.01 momentum=0.9"
# The six architectures of the test suite (export_models.py's MODELS; the
# benchmark-only ones it exports on request are left out).
for m in bert_encoder lstm_lm mobilenet_v2 resnet18_bn resnet50 squeezenet; do
  model="$MODELS/$m.onnx"
  [ -f "$model" ] || { echo "plan-fingerprints.sh: no $model (ninja -C build mp-models)" >&2; exit 2; }
  base=("$MP_OPT" "$model" --dim-param=batch=2)
  "${base[@]}" --emit=plan -o "$OUT/$m.fp32.mpplan"
  "${base[@]}" --mp-autocast-pipeline --emit=plan -o "$OUT/$m.mixed.mpplan"
  "${base[@]}" --mp-autocast-pipeline --emit=onnx -o "$OUT/$m.mixed.onnx"
  case "$m" in
    resnet18_bn | mobilenet_v2 | squeezenet)
      "${base[@]}" "$train" --emit=plan -o "$OUT/$m.fp32.train.mpplan"
      "${base[@]}" "$train" --mp-autocast-pipeline --mp-master-weights \
        --mp-loss-scale=mode=dynamic --emit=plan -o "$OUT/$m.mixed.train.mpplan" ;;
  esac
done
(cd "$OUT" && sha256sum -- * | sort -k2)
