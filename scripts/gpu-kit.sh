#!/usr/bin/env bash
# The GPU kit: everything the CUDA backend's GPU checks need on a lent GPU
# machine that has CMake, python3 with torch and onnx, and the cuDNN /
# cuBLAS wheels, but no MLIR, no test data and no network (docs/gpu-kit.md).
# A task is lent 15 minutes of device time, start-up included, and one
# command may run 10 minutes: the kit is made here, binaries included, and
# ONE device call of about 8 minutes runs it, the most valuable figures
# first, each step writing its results as it finishes.
#
#   scripts/gpu-kit.sh make [--skip-conformance]
#       here, where mp-opt and nvcc are: build mp-run / mp-strip-weights
#       (build-kit-host), compile the conformance plans (scripts/conformance.py
#       --save-kit) and the benchmark plans (scripts/bench_gpu.py), save the
#       ResNet-50 plans without their weights (the GPU machine makes them
#       again from the same seeded model), build mp-run and mp-runtime-tests
#       with the CUDA backend for sm_90 (build-kit/, libstdc++ linked in) and
#       copy them into .gpu-kit/prebuilt, all into .gpu-kit/ (ignored; it
#       travels as the one carried path), and check that what travels stays
#       under 64 MiB.
#
#   scripts/gpu-kit.sh run [--cpu] [STEP...]
#       on the GPU machine: STEPs, in this order (default: all but build)
#         check        the GPU, the driver, the binaries and the libraries
#                      they load
#         build        build the runtime there (build-kit/) and use it
#                      instead of the prebuilt binaries (7 minutes: not in
#                      the one-call plan)
#         tests        mp-runtime-tests "[cuda]": the device tests
#         weights      export ResNet-50 again with torch and write its
#                      initializers as the stripped plans' weights
#         train        ResNet-50 training step: ours mixed, ours fp32, torch
#                      AMP (channels last), torch fp32, torch TF32
#         infer        ResNet-50 inference, the same five
#         padding      misaligned GEMMs and convolutions, padded and not,
#                      and PyTorch fp16 on the same dims (bench_padding.py)
#         conformance  scripts/conformance.py --kit .gpu-kit/conformance
#                      --backend=cuda (every ONNX backend test's plan)
#         more         the BERT-style encoder and the LSTM LM, both phases
#       each under its own time limit and all within GPU_KIT_DEADLINE (450 s),
#       results in $OUT (or .gpu-kit/out): summary.md (rewritten after each
#       step), steps.log (every step's output), bench.md and bench.jsonl
#       (after each measurement), padding.md, conformance.json. --cpu runs the same steps
#       with the CPU backend and torch on the CPU (one iteration): a check of
#       the kit and of this script where there is no GPU.
#
# The device tool call that runs it is printed by `make` and written in
# docs/gpu-kit.md.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT="$ROOT/.gpu-kit"
LIMIT_BYTES=$((64 * 1024 * 1024))
# The ResNet-50 plans leave out their weights; the others keep them.
BENCH_MODELS="resnet50 resnet50_bn bert_encoder lstm_lm"
STRIP_MODELS="resnet50 resnet50_bn"
BATCH="${GPU_KIT_BATCH:-64}"
# The python with torch and onnx (the device machine's python3 has them).
PY="${GPU_KIT_PYTHON:-python3}"

die() { echo "gpu-kit.sh: $*" >&2; exit 2; }

# The kit travels as one xz archive of these (80 MiB of plans, test data and
# binaries are 25 MiB packed): make packs them and removes the unpacked
# copies; run unpacks them with python's tarfile (every GPU machine has the
# python that runs the benchmarks) and removes them again when it ends, so
# that a run here (--cpu) leaves what travels as it was.
PACK="$KIT/packed.tar.xz"
PACKED="bench-plans conformance include padding prebuilt weights"
unpack_kit() {
  [ -f "$PACK" ] || return 0
  "${PY:-python3}" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$PACK" "$KIT" || die "unpacking $PACK failed"
}
remove_unpacked() {
  [ -f "$PACK" ] && (cd "$KIT" && rm -rf $PACKED)
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# What travels to the device machine: the tracked files, the untracked files
# git does not ignore, and the carried .gpu-kit.
travel_bytes() {
  local tree kit
  tree=$(cd "$ROOT" && { git ls-files -z; git ls-files -z --others --exclude-standard; } |
         xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  kit=$(du -sb "$KIT" 2>/dev/null | cut -f1)
  echo "$tree" "${kit:-0}"
}

#=============================================================================
# make
#=============================================================================
cmd_make() {
  local skip_conformance=0
  for a in "$@"; do
    case "$a" in
      --skip-conformance) skip_conformance=1 ;;
      *) die "make: unknown argument '$a'" ;;
    esac
  done
  local PY=/usr/bin/python3
  local MP_OPT="${MP_OPT:-$ROOT/build/bin/mp-opt}"
  local HOST="$ROOT/build-kit-host"
  [ -x "$MP_OPT" ] || die "no mp-opt at $MP_OPT (build it: scripts/build.sh, or set MP_OPT)"
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
    die "no nvcc here: the kit's binaries are built here (docs/gpu-kit.md)"
  "$PY" -c "import onnx, torch" 2>/dev/null || die "$PY needs onnx and torch (scripts/install-deps.sh)"

  echo "== mp-run and mp-strip-weights for this machine ($HOST)"
  if [ ! -f "$HOST/build.ninja" ]; then
    mkdir -p "$HOST"
    cmake -S "$ROOT/lib/Runtime" -B "$HOST" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DMP_ENABLE_CUDA=OFF -DMP_RUNTIME_BUILD_TESTS=ON >"$HOST/gpu-kit-configure.log" 2>&1 ||
      { cat "$HOST/gpu-kit-configure.log"; die "configuring $HOST failed"; }
  fi
  ninja -C "$HOST" mp-run mp-strip-weights >/dev/null || die "building $HOST failed"
  # A copy: the conformance run and the checks must not see a relink.
  local mp_opt_copy="$HOST/mp-opt.snapshot"
  cp "$MP_OPT" "$mp_opt_copy" || die "cannot copy $MP_OPT"

  mkdir -p "$KIT"
  # An earlier kit's parts (its conformance part for --skip-conformance).
  unpack_kit
  echo "== headers the GPU machine lacks: FlatBuffers 2.0.8, Catch2 v2"
  rm -rf "$KIT/include" && mkdir -p "$KIT/include/catch2"
  cp -r /usr/include/flatbuffers "$KIT/include/" || die "no /usr/include/flatbuffers (libflatbuffers-dev)"
  cp /usr/include/catch2/catch.hpp "$KIT/include/catch2/" || die "no Catch2 v2 header (catch2)"

  echo "== models (scripts/export_models.py, seeded)"
  local models="$ROOT/build/models" m
  for m in $BENCH_MODELS; do
    [ -f "$models/$m.onnx" ] || "$PY" "$ROOT/scripts/export_models.py" --out "$models" --only "$m" ||
      die "exporting $m failed"
  done

  echo "== benchmark plans (batch $BATCH)"
  local full="$HOST/bench-plans-full"
  rm -rf "$full" "$KIT/bench-plans" "$KIT/weights"
  mkdir -p "$full" "$KIT/bench-plans" "$KIT/weights"
  (cd "$ROOT" && "$PY" scripts/bench_gpu.py --print-compile-commands --batch "$BATCH" \
     --models "${BENCH_MODELS// /,}" --plans "$full" --mp-opt "$mp_opt_copy" | bash -e) ||
    die "compiling the benchmark plans failed"
  for m in $STRIP_MODELS; do
    local wdir="$HOST/weights/$m"
    rm -rf "$wdir"
    "$PY" "$ROOT/scripts/gpu_kit_weights.py" extract "$models/$m.onnx" "$wdir" \
      --manifest "$KIT/weights/$m.manifest.json" || die "extracting $m's weights failed"
  done
  local p base strip
  for p in "$full"/*.mpplan; do
    base=$(basename "$p")
    strip=0
    for m in $STRIP_MODELS; do case "$base" in "$m".*) strip=1 ;; esac; done
    if [ $strip = 1 ]; then
      "$HOST/bin/mp-strip-weights" "$p" --weights="$HOST/weights/${base%%.*}" \
        -o "$KIT/bench-plans/$base" || die "stripping $base failed"
    else
      cp "$p" "$KIT/bench-plans/$base"
    fi
  done

  echo "== padding benchmark plans (scripts/bench_padding.py: misaligned MLP and convolutions, padded and not)"
  rm -rf "$KIT/padding"
  "$PY" "$ROOT/scripts/bench_padding.py" make --mp-opt "$mp_opt_copy" --dir "$KIT/padding" >/dev/null ||
    die "compiling the padding benchmark plans failed"
  rm -f "$KIT/padding"/*.onnx # only the plans travel

  if [ $skip_conformance = 0 ]; then
    echo "== conformance plans (scripts/conformance.py --save-kit, on the CPU here)"
    rm -rf "$KIT/conformance"
    (cd "$ROOT" && "$PY" scripts/conformance.py --mp-opt "$mp_opt_copy" \
       --mp-run "$HOST/bin/mp-run" --save-kit "$KIT/conformance" \
       --json "$HOST/conformance-cpu.json" -j "$(nproc)") | tail -n 6 ||
      die "the conformance run failed"
    [ -f "$KIT/conformance/manifest.json" ] || die "no conformance kit was written"
  else
    [ -f "$KIT/conformance/manifest.json" ] || echo "(no conformance kit yet)"
  fi

  rm -rf "$KIT/prebuilt" "$KIT/out" # out: results of run --cpu here
  echo "== mp-run and mp-runtime-tests with the CUDA backend (sm_90), as the device runs them (build-kit/)"
  BUILD="$ROOT/build-kit" CPU_ONLY=0
  export BUILD CPU_ONLY
  mkdir -p "$BUILD"
  if bash "$0" _build >"$BUILD/gpu-kit-make.log" 2>&1; then
    mkdir -p "$KIT/prebuilt"
    strip -o "$KIT/prebuilt/mp-run" "$BUILD/bin/mp-run" &&
      strip -o "$KIT/prebuilt/mp-runtime-tests" "$BUILD/bin/mp-runtime-tests" ||
      die "cannot copy the prebuilt binaries"
    # What they need at run time beyond the C library: nothing but what
    # dlopen finds there (cuBLASLt, cuDNN).
    if ldd "$KIT/prebuilt/mp-run" | grep -Eq "libstdc\+\+|libgcc_s"; then
      die "the prebuilt mp-run links libstdc++ dynamically"
    fi
  else
    tail -20 "$BUILD/gpu-kit-make.log"
    die "the device build failed here (log: $BUILD/gpu-kit-make.log)"
  fi

  {
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) from $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!.gpu-kit' || echo ' (with local changes)')"
    echo "mp-opt: $MP_OPT"
    echo "bench batch: $BATCH; models: $BENCH_MODELS; without weights: $STRIP_MODELS"
  } >"$KIT/MADE"

  echo "== packing (xz): plans, data and binaries travel compressed"
  du -sh "$KIT"/* | sed "s|$ROOT/||"
  (cd "$KIT" && XZ_OPT="-6 -T$(nproc)" tar -cJf "$PACK.partial" $PACKED &&
     mv "$PACK.partial" "$PACK") || die "packing the kit failed"
  (cd "$KIT" && rm -rf $PACKED)

  echo "== sizes"
  du -sh "$KIT"/* | sed "s|$ROOT/||"
  read -r tree kit < <(travel_bytes)
  echo "working tree (tracked + untracked, not ignored): $(mib "$tree")"
  echo "carried .gpu-kit: $(mib "$kit")"
  echo "total: $(mib $((tree + kit))) of $(mib $LIMIT_BYTES)"
  if [ $((tree + kit)) -ge $LIMIT_BYTES ]; then
    die "what travels is over 64 MiB: the device tool would refuse it"
  fi
  echo
  print_calls
}

print_calls() {
  cat <<'EOF'
The device tool call (one, about 8 minutes; give the machine back after it):
  run(command="bash scripts/gpu-kit.sh run", carry=[".gpu-kit"], timeout_s=540)
Results under $OUT: summary.md, steps.log, bench.md, bench.jsonl, padding.md, conformance.json.
EOF
}

#=============================================================================
# run
#=============================================================================

# Where the cuDNN and cuBLAS headers and libraries are: the CUDA toolkit, or
# the nvidia-* wheels of the python3 that has torch.
find_cuda_libs() {
  CUDNN_INC="" CUDNN_LIB="" CUBLASLT_LIB="" CUBLAS_INC="" LIB_DIRS=""
  local cuda="${GPU_KIT_CUDA_HOME:-/usr/local/cuda}" roots r f
  if [ -f "$cuda/include/cudnn.h" ]; then CUDNN_INC="$cuda/include"; fi
  for f in "$cuda"/lib64/libcudnn.so "$cuda"/lib64/libcudnn.so.9; do
    [ -z "$CUDNN_LIB" ] && [ -e "$f" ] && CUDNN_LIB="$f"
  done
  for f in "$cuda"/lib64/libcublasLt.so "$cuda"/lib64/libcublasLt.so.13; do
    [ -z "$CUBLASLT_LIB" ] && [ -e "$f" ] && CUBLASLT_LIB="$f"
  done
  roots=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
  for r in $roots; do
    [ -d "$r/nvidia" ] || continue
    [ -z "$CUDNN_INC" ] && CUDNN_INC=$(dirname "$(find "$r/nvidia" -name cudnn.h 2>/dev/null | head -1)" 2>/dev/null)
    [ -z "$CUDNN_LIB" ] && CUDNN_LIB=$(find "$r/nvidia" -name 'libcudnn.so*' 2>/dev/null | sort | head -1)
    if [ -z "$CUBLASLT_LIB" ]; then
      CUBLASLT_LIB=$(find "$r/nvidia" -name 'libcublasLt.so*' 2>/dev/null | sort | head -1)
      [ -n "$CUBLASLT_LIB" ] && CUBLAS_INC=$(dirname "$(find "$r/nvidia" -name cublasLt.h 2>/dev/null | head -1)" 2>/dev/null)
    fi
  done
  [ "$CUDNN_INC" = "." ] && CUDNN_INC=""
  [ "$CUBLAS_INC" = "." ] && CUBLAS_INC=""
  for f in "$CUDNN_LIB" "$CUBLASLT_LIB"; do
    [ -n "$f" ] && LIB_DIRS="$LIB_DIRS:$(dirname "$f")"
  done
}

# The summary: a header, a row per step, notes; rewritten after each step so
# that a run cut short still returns it.
write_summary() {
  {
    cat "$SUMMARY_HEAD"
    echo
    echo "| step | result | time | limit |"
    echo "|---|---|---|---|"
    cat "$SUMMARY_ROWS"
    if [ -s "$NOTES" ]; then
      echo
      cat "$NOTES"
    fi
  } >"$SUMMARY"
}

# step NAME LIMIT_SECONDS COMMAND...: runs it with a time limit (its own, or
# what is left of the whole run's deadline, if less), its output appended to
# $OUT/steps.log (and the last lines on stdout), one row into the summary.
step() {
  local name="$1" limit="$2"
  shift 2
  local start rc left
  start=$(date +%s)
  left=$(( RUN_START + DEADLINE - start - 5 ))
  if [ "$left" -lt 15 ]; then
    echo "== $name: skipped, ${left}s left of the run's ${DEADLINE}s"
    echo "| $name | SKIPPED (no time left) | 0s | |" >>"$SUMMARY_ROWS"
    write_summary
    return 1
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  echo "== $name (limit ${limit}s)"
  local part="$SCRATCH/step.log"
  timeout --kill-after=10 "$limit" "$@" >"$part" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - start ))
  { echo "===== $name: exit $rc after ${secs}s (limit ${limit}s)"; cat "$part"; echo; } >>"$LOG"
  tail -n "${GPU_KIT_TAIL:-15}" "$part"
  rm -f "$part"
  local what="ok"
  [ $rc -ne 0 ] && what="FAILED (exit $rc)"
  { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && what="TIMED OUT"
  echo "| $name | $what | ${secs}s | ${limit}s |" >>"$SUMMARY_ROWS"
  write_summary
  return $rc
}

build_step() {
  local cuda_flags=() extra_flags=""
  find_cuda_libs
  if [ "$CPU_ONLY" = 1 ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    cuda_flags=(-DMP_ENABLE_CUDA=OFF)
  else
    cuda_flags=(-DMP_ENABLE_CUDA=REQUIRED -DCMAKE_CUDA_ARCHITECTURES=90)
    [ -n "$CUDNN_INC" ] && cuda_flags+=(-DMP_CUDNN_INCLUDE_DIR="$CUDNN_INC")
    [ -n "$CUDNN_LIB" ] && cuda_flags+=(-DMP_CUDNN_LIBRARY="$CUDNN_LIB")
    [ -n "$CUBLASLT_LIB" ] && cuda_flags+=(-DCUDA_cublasLt_LIBRARY="$CUBLASLT_LIB")
    [ -n "$CUBLAS_INC" ] && extra_flags="-isystem $CUBLAS_INC"
  fi
  echo "cuDNN: ${CUDNN_INC:-?} ${CUDNN_LIB:-?}; cuBLASLt: ${CUBLASLT_LIB:-?} ${CUBLAS_INC}"
  # libstdc++ and libgcc linked in: the binaries built here run on the GPU
  # machine's other distribution (the CUDA runtime is static and cuBLASLt /
  # cuDNN are opened with dlopen, so nothing else is needed there). No
  # oneDNN either: the GPU machine has no libdnnl, and the CPU backend there
  # is only the reference for the CUDA results.
  cmake -S "$ROOT/lib/Runtime" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMP_RUNTIME_BLAS=builtin -DMP_RUNTIME_WITH_ONNX=OFF -DMP_RUNTIME_ONEDNN=OFF \
    -DFLATBUFFERS_INCLUDE_DIR="$KIT/include" -DFLATBUFFERS_FLATC_EXECUTABLE=OFF \
    -DMP_RUNTIME_BUILD_TESTS=ON -DMP_CATCH2_INCLUDE_DIR="$KIT/include" \
    -DCMAKE_CXX_FLAGS="$extra_flags" -DCMAKE_CUDA_FLAGS="$extra_flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" \
    "${cuda_flags[@]}" || return 1
  ninja -C "$BUILD" mp-run mp-runtime-tests
}

# The check step: what the run stands on, printed for the log.
check_step() {
  echo "binaries: $BIN ($(head -1 "$KIT/MADE" 2>/dev/null))"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || echo "(no nvidia-smi)"
  echo "cuDNN: ${CUDNN_LIB:-not found}; cuBLASLt: ${CUBLASLT_LIB:-not found}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  local b ok=0
  for b in mp-run mp-runtime-tests; do
    if [ ! -x "$BIN/$b" ]; then
      echo "MISSING: $BIN/$b"; ok=1; continue
    fi
    echo "-- ldd $b"
    ldd "$BIN/$b" 2>&1 | sed 's/^/   /'
    ldd "$BIN/$b" 2>&1 | grep -q "not found" && ok=1
  done
  # (Catch2 v2's listing exits with the number of tests it listed.)
  echo "[cuda] test cases: $("$BIN/mp-runtime-tests" --list-test-names-only "[cuda]" 2>&1 | grep -c .)"
  "$BIN/mp-run" --help >/dev/null 2>&1 || { echo "mp-run does not start"; ok=1; }
  "$PY" -c 'import torch, onnx; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "onnx", onnx.__version__)' 2>&1
  return $ok
}

# bench MODELS PHASES: scripts/bench_gpu.py on the kit's plans, its rows
# appended to bench.jsonl and the table of all rows in bench.md.
bench() {
  local models="$1" phases="$2" unchecked=() m
  for m in $STRIP_MODELS; do
    if [ -f "$BUILD/weights/$m.status.json" ] && ! "$PY" -c \
       'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["identical"] != d["total"])' \
       "$BUILD/weights/$m.status.json"; then
      unchecked=(--unchecked-weights)
    fi
  done
  "$PY" "$ROOT/scripts/bench_gpu.py" \
    --plans "$KIT/bench-plans" --weights "$BUILD/weights" "${unchecked[@]}" \
    --mp-run "$BIN/mp-run" --device "$DEVICE" --mp-run-backend "$BACKEND" \
    --batch "$BENCH_BATCH" --iters "$ITERS" --warmup "$WARMUP" \
    --models "$models" --phases "$phases" --mp-run-timeout "$MP_RUN_TIMEOUT" \
    --results "$OUT_DIR/bench.jsonl" --out "$OUT_DIR/bench.md"
}

weights_note() {
  local m=$1 f="$BUILD/weights/$1.status.json"
  [ -f "$f" ] || return 0
  "$PY" - "$f" >>"$NOTES" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
if d["mapped"] == "stand-in":
    print("- %s: the export failed there: the benchmark ran on STAND-IN weights drawn from the kit's statistics (--unchecked-weights; timing only)" % d["model"])
elif d["identical"] != d["total"]:
    print("- %s: %d of %d weights made there (torch %s) differ from the compile machine's: the benchmark ran with --unchecked-weights" % (d["model"], d["total"] - d["identical"], d["total"], d["torch"]))
else:
    print("- %s: all %d weights made there (torch %s) are bit-identical to the compile machine's" % (d["model"], d["total"], d["torch"]))
PYEOF
}

cmd_run() {
  CPU_ONLY=0
  local steps=()
  for a in "$@"; do
    case "$a" in
      --cpu) CPU_ONLY=1
             # Here the python with torch and onnx is Debian's.
             [ -z "${GPU_KIT_PYTHON:-}" ] && [ -x /usr/bin/python3 ] && PY=/usr/bin/python3 ;;
      check|build|tests|weights|train|infer|padding|conformance|more) steps+=("$a") ;;
      all) steps+=(check tests weights train infer padding conformance more) ;;
      *) die "run: unknown step '$a' (check, build, tests, weights, train, infer, padding, conformance, more, all; --cpu)" ;;
    esac
  done
  [ ${#steps[@]} -eq 0 ] && steps=(check tests weights train infer padding conformance more)
  unpack_kit
  [ -d "$KIT/include" ] || die "no kit at $KIT: make it where mp-opt is (scripts/gpu-kit.sh make) and carry .gpu-kit"
  local status=0
  RUN_START=$(date +%s)
  DEADLINE="${GPU_KIT_DEADLINE:-450}"
  [ "$CPU_ONLY" = 1 ] && DEADLINE="${GPU_KIT_DEADLINE:-7200}"
  OUT_DIR="${OUT:-$KIT/out}"
  mkdir -p "$OUT_DIR"
  rm -f "$OUT_DIR/bench.jsonl" "$OUT_DIR/bench.md" "$OUT_DIR/padding.md" "$OUT_DIR/conformance.json"
  BUILD="${GPU_KIT_BUILD:-$ROOT/build-kit}"
  export BUILD CPU_ONLY
  # The prebuilt binaries unless this run builds (or GPU_KIT_BIN names others).
  BIN="${GPU_KIT_BIN:-$KIT/prebuilt}"
  case " ${steps[*]} " in *" build "*) BIN="$BUILD/bin" ;; esac
  mkdir -p "$BUILD/weights"
  SUMMARY="$OUT_DIR/summary.md"
  LOG="$OUT_DIR/steps.log"
  : >"$LOG"
  # Scratch files stay out of $OUT: the device tool returns at most 8 files,
  # and a run cut short must not spend them on these.
  SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")
  trap 'rm -rf "$SCRATCH"; remove_unpacked' EXIT
  SUMMARY_HEAD="$SCRATCH/summary-head"
  SUMMARY_ROWS="$SCRATCH/summary-rows"
  NOTES="$SCRATCH/notes"
  : >"$SUMMARY_ROWS"
  : >"$NOTES"
  BACKEND=cuda DEVICE=cuda
  [ "$CPU_ONLY" = 1 ] && BACKEND=cpu DEVICE=cpu
  ITERS="${GPU_KIT_ITERS:-30}" WARMUP="${GPU_KIT_WARMUP:-5}"
  [ "$CPU_ONLY" = 1 ] && ITERS="${GPU_KIT_ITERS:-1}" WARMUP="${GPU_KIT_WARMUP:-0}"
  MP_RUN_TIMEOUT="${GPU_KIT_MP_RUN_TIMEOUT:-90}"
  [ "$CPU_ONLY" = 1 ] && MP_RUN_TIMEOUT="${GPU_KIT_MP_RUN_TIMEOUT:-900}"
  BENCH_BATCH=$(sed -n 's/^bench batch: \([0-9]*\).*/\1/p' "$KIT/MADE")
  find_cuda_libs
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}$LIB_DIRS"
  export PYTHONUNBUFFERED=1
  # What the steps run as `bash $0 _STEP` (under `timeout`) need.
  export BIN OUT_DIR BACKEND DEVICE ITERS WARMUP MP_RUN_TIMEOUT BENCH_BATCH
  export GPU_KIT_PYTHON="$PY"
  {
    echo "# gpu-kit run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "- kit: $(head -1 "$KIT/MADE" 2>/dev/null)"
    echo "- machine: $(uname -n), $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "- torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda available:", torch.cuda.is_available())' 2>/dev/null)"
    echo "- backend: $BACKEND; binaries: ${BIN#$ROOT/}; steps: ${steps[*]}; deadline ${DEADLINE}s"
    echo "- benchmark: batch $BENCH_BATCH, $ITERS timed iterations after $WARMUP warm-ups, median"
  } >"$SUMMARY_HEAD"
  write_summary
  local s jobs
  jobs=$(nproc)
  for s in "${steps[@]}"; do
    case "$s" in
      check)
        step check "${GPU_KIT_CHECK_LIMIT:-30}" bash "$0" _check || status=1 ;;
      build)
        if [ -x "$BUILD/bin/mp-run" ] && [ -x "$BUILD/bin/mp-runtime-tests" ] &&
           [ "${GPU_KIT_REBUILD:-0}" != 1 ]; then
          step build "${GPU_KIT_BUILD_LIMIT:-420}" ninja -C "$BUILD" mp-run mp-runtime-tests
        else
          step build "${GPU_KIT_BUILD_LIMIT:-420}" bash "$0" _build
        fi
        if [ $? != 0 ]; then
          status=1
          if [ -x "$KIT/prebuilt/mp-run" ]; then
            BIN="$KIT/prebuilt"
            echo "- the build failed: the steps after it used the kit's prebuilt binaries" >>"$NOTES"
          fi
        fi ;;
      tests)
        # Without a GPU (--cpu) the [cuda] tests run their host-side parts.
        step tests "${GPU_KIT_TESTS_LIMIT:-90}" "$BIN/mp-runtime-tests" "[cuda]" \
          --durations yes || status=1 ;;
      weights)
        local m
        for m in $STRIP_MODELS; do
          step "weights-$m" "${GPU_KIT_WEIGHTS_LIMIT:-75}" "$PY" "$ROOT/scripts/gpu_kit_weights.py" \
            regenerate "$m" --manifest "$KIT/weights/$m.manifest.json" --fallback-stats \
            --out "$BUILD/weights/$m" --status "$BUILD/weights/$m.status.json" || status=1
          weights_note "$m"
        done
        write_summary ;;
      train)
        step train "${GPU_KIT_TRAIN_LIMIT:-120}" bash "$0" _bench resnet50_bn train || status=1 ;;
      infer)
        step infer "${GPU_KIT_INFER_LIMIT:-75}" bash "$0" _bench resnet50 infer || status=1 ;;
      padding)
        step padding "${GPU_KIT_PADDING_LIMIT:-60}" "$PY" "$ROOT/scripts/bench_padding.py" run \
          --dir "$KIT/padding" --mp-run "$BIN/mp-run" --backend "$BACKEND" --device "$DEVICE" \
          --iters "$ITERS" --warmup "$WARMUP" --out "$OUT_DIR/padding.md" || status=1 ;;
      conformance)
        # The runner's own budget ends 20 s before the step's: it then
        # prints its summary and the comparison with the CPU's results.
        local limit="${GPU_KIT_CONFORMANCE_LIMIT:-210}" left
        left=$(( RUN_START + DEADLINE - $(date +%s) - 5 ))
        [ "$left" -lt "$limit" ] && limit=$left
        step conformance "$limit" "$PY" "$ROOT/scripts/conformance.py" \
          --kit "$KIT/conformance" --backend="$BACKEND" --mp-run "$BIN/mp-run" -v \
          -j "$jobs" --timeout 60 --time-budget $(( limit > 40 ? limit - 20 : limit / 2 )) \
          --json "$OUT_DIR/conformance.json" || status=1 ;;
      more)
        step more "${GPU_KIT_MORE_LIMIT:-200}" bash "$0" _bench bert_encoder,lstm_lm train,infer || status=1 ;;
    esac
  done
  echo
  cat "$SUMMARY"
  [ -f "$OUT_DIR/bench.md" ] && { echo; cat "$OUT_DIR/bench.md"; }
  return $status
}

case "${1:-}" in
  make) shift; cmd_make "$@" ;;
  run) shift; cmd_run "$@" ;;
  calls) print_calls ;;
  _build) build_step ;; # run's build step, under its time limit
  _check) find_cuda_libs; check_step ;;
  _bench) shift; bench "$@" ;;
  *) sed -n '2,45p' "$0"; exit 2 ;;
esac
