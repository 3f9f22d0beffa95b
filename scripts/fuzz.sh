#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 22, AddressSanitizer + UndefinedBehavior-
# Sanitizer) in build-fuzz/ and runs them for a given time each.
#
#   scripts/fuzz.sh [--time SECONDS] [--jobs N] [--keep-going] [TARGET...]
#
# TARGET: import-onnx (binary models), import-onnxtxt (ONNX text), plan (plan
# files), tensor-file (.npy and TensorProto inputs of mp-run); default: all.
# --time: seconds per target (default 60); --jobs: targets run at once
# (default 2); --keep-going: do not stop at the first finding (libFuzzer's
# fork mode), to collect several in one run.
#
# Seeds: the ONNX backend node and pytorch-converted test models (binary), the
# repository's .onnxtxt tests plus node models printed as text (text), the
# node tests' TensorProto files and a few .npy files (tensor-file), and
# plans compiled from the node tests by the main build's mp-opt (plan; run
# scripts/build.sh first). The corpus grows in build-fuzz/corpus/TARGET and is
# kept between runs; findings (crash-*, leak-*, timeout-*, oom-*) are written
# to build-fuzz/findings/TARGET/ and listed at the end (slow-unit-* files,
# inputs that took over 10 s but finished, are listed but are no failure).
# Each finding becomes a regression input in
# test/fuzz/Inputs/regressions/TARGET/ (docs/robustness.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
MAIN_BUILD="${MP_BUILD_DIR:-$ROOT/build}"
TESTDATA="$ROOT/.deps/onnx/src/onnx/backend/test/data"
SECONDS_PER_TARGET=60
JOBS=2
KEEP_GOING=()
TARGETS=()
while (($#)); do
  case "$1" in
    --time) SECONDS_PER_TARGET="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --keep-going) KEEP_GOING=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1); shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    import-onnx|import-onnxtxt|plan|tensor-file) TARGETS+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#TARGETS[@]})) || TARGETS=(import-onnx import-onnxtxt plan tensor-file)

# clang 22 (the LLVM of the MLIR the project builds on) and its libFuzzer.
missing=()
for pkg in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

MP_BUILD_DIR="$BUILD" MP_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo \
-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
-DMP_BUILD_TESTS=OFF -DMP_ENABLE_CUDA=OFF -DMP_BUILD_FUZZERS=ON \
-DMP_SANITIZERS=address;undefined" \
  "$ROOT/scripts/build.sh" $(printf 'mp-fuzz-%s ' "${TARGETS[@]}")

# --- seeds -------------------------------------------------------------------
seed_dir() { echo "$BUILD/seeds/$1"; }
make_seeds() {
  local target="$1" dir
  dir="$(seed_dir "$target")"
  [ -d "$dir" ] && return 0
  mkdir -p "$dir.tmp"
  case "$target" in
    import-onnx)
      local i=0
      for model in "$TESTDATA"/node/*/model.onnx "$TESTDATA"/pytorch-converted/*/model.onnx; do
        cp "$model" "$dir.tmp/$((i++)).onnx"
      done ;;
    import-onnxtxt)
      cp "$ROOT"/test/Import/ONNX/*.onnxtxt "$dir.tmp/"
      "$ROOT/.venv/bin/python" - "$TESTDATA/node" "$dir.tmp" <<'EOF'
import glob, os, sys
import onnx, onnx.printer
for i, path in enumerate(sorted(glob.glob(os.path.join(sys.argv[1], "*", "model.onnx")))):
    try:
        text = onnx.printer.to_text(onnx.load(path))
    except Exception:
        continue
    with open(os.path.join(sys.argv[2], "node%d.onnxtxt" % i), "w") as f:
        f.write(text)
EOF
      ;;
    plan)
      if [ ! -x "$MAIN_BUILD/bin/mp-opt" ]; then
        echo "fuzz.sh: plan seeds are compiled by $MAIN_BUILD/bin/mp-opt: run scripts/build.sh first" >&2
        exit 1
      fi
      local i=0
      for model in "$TESTDATA"/node/*/model.onnx; do
        "$MAIN_BUILD/bin/mp-opt" "$model" --emit=plan -o "$dir.tmp/$((i++)).mpplan" \
          >/dev/null 2>&1 || true
      done
      # The hand-built plans of mp-run's tests (every call kind's attributes).
      local made="$BUILD/seeds/test-plans"
      mkdir -p "$made"
      "$MAIN_BUILD/bin/mp-make-test-plans" "$made" >/dev/null
      cp "$made"/*.mpplan "$dir.tmp/"
      rm -rf "$made" ;;
    tensor-file)
      # The node tests' TensorProto inputs and outputs (every dtype), and
      # .npy files of several dtypes and ranks.
      local i=0
      for pb in "$TESTDATA"/node/test_*/test_data_set_0/*.pb; do
        cp "$pb" "$dir.tmp/$((i++)).pb"
      done
      "$ROOT/.venv/bin/python" - "$dir.tmp" <<'EOF'
import os, sys
import numpy as np
rng = np.random.default_rng(0)
for i, (dtype, shape) in enumerate([("f4", (2, 3)), ("f8", ()), ("f2", (4,)),
                                    ("i8", (1, 2, 3)), ("?", (5,)), ("u1", (0, 3)),
                                    ("<i4", (3, 1, 1, 2)), (">f4", (2,))]):
    np.save(os.path.join(sys.argv[1], "np%d.npy" % i),
            (rng.standard_normal(shape) * 10).astype(dtype))
EOF
      ;;
  esac
  mv "$dir.tmp" "$dir"
  echo "== seeds for $target: $(ls "$dir" | wc -l) files"
}

# --- run ---------------------------------------------------------------------
run_target() {
  local target="$1"
  local corpus="$BUILD/corpus/$target" findings="$BUILD/findings/$target"
  mkdir -p "$corpus" "$findings"
  local start=$SECONDS
  # detect_leaks: the importer must not leak either. The RSS limit turns an
  # allocation that a hostile size slipped past the checks into a finding.
  # allow_user_poisoning=0: as in scripts/sanitize.sh (LLVM's allocators,
  # instrumented in MixPrec's code only).
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:allow_user_poisoning=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$BUILD/bin/mp-fuzz-$target" "$corpus" "$(seed_dir "$target")" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=25 -rss_limit_mb=4096 \
      -max_len=1048576 -print_final_stats=1 "${KEEP_GOING[@]}" \
      -artifact_prefix="$findings/" >"$BUILD/fuzz-$target.log" 2>&1 || true
  # Inputs run: libFuzzer's final statistics, or in fork mode its last
  # progress line ("#123456: cov: ...").
  local runs
  runs=$(awk '/^stat::number_of_executed_units/ {n = $2}
              /^#[0-9]+:? / && n == "" {sub(/^#/, "", $1); sub(/:$/, "", $1); last = $1}
              END {print (n != "" ? n : last)}' "$BUILD/fuzz-$target.log")
  echo "== $target: ${runs:-?} inputs in $((SECONDS - start)) s, corpus $(ls "$corpus" | wc -l) files, findings $(ls "$findings" | grep -vc '^slow-unit-') (log: $BUILD/fuzz-$target.log)"
}

for target in "${TARGETS[@]}"; do make_seeds "$target"; done
running=0
for target in "${TARGETS[@]}"; do
  run_target "$target" &
  if ((++running >= JOBS)); then wait -n; ((running--)); fi
done
wait

status=0
for target in "${TARGETS[@]}"; do
  for f in "$BUILD/findings/$target"/*; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in
      slow-unit-*) echo "slow input (finished, over 10 s): $f" ;;
      *) echo "finding: $f"; status=1 ;;
    esac
  done
done
exit $status
