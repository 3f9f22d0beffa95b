#!/usr/bin/env bash
# The GPU kit: everything the CUDA backend's GPU checks need on a lent GPU
# machine that has nvcc, CMake, ninja, python3 with torch and onnx, and the
# cuDNN / cuBLAS wheels, but no MLIR, no test data and no network
# (docs/gpu-kit.md).
#
#   scripts/gpu-kit.sh make [--skip-conformance] [--no-prebuilt]
#       here, where mp-opt is: build mp-run / mp-strip-weights (build-kit-host),
#       compile the conformance plans (scripts/conformance.py --save-kit) and
#       the benchmark plans (scripts/bench_gpu.py), save the ResNet-50 plans
#       without their weights (the GPU machine makes them again from the
#       same seeded model), copy the FlatBuffers and Catch2 headers, all into
#       .gpu-kit/ (ignored; it travels as the one carried path), and check
#       that what travels stays under 64 MiB. Where nvcc is, it also builds
#       build-kit/ exactly as `run` will there and keeps its mp-run and
#       mp-runtime-tests in .gpu-kit/prebuilt: used there only if the build
#       there fails.
#
#   scripts/gpu-kit.sh run [--cpu] [STEP...]
#       on the GPU machine: STEPs (default: all, in this order)
#         build        the runtime alone (lib/Runtime) with the CUDA backend,
#                      mp-run and mp-runtime-tests, into build-kit/
#         tests        mp-runtime-tests "[cuda]"
#         conformance  scripts/conformance.py --kit .gpu-kit/conformance
#                      --backend=cuda (every ONNX backend test's plan)
#         weights      export ResNet-50 again with torch and write its
#                      initializers as the stripped plans' weights
#         bench        scripts/bench_gpu.py on the kit's plans
#       each under its own time limit and all within GPU_KIT_DEADLINE
#       (580 s: a device call may run 600), logs and results in $OUT (or
#       .gpu-kit/out), and a summary (summary.md). --cpu runs the same steps
#       with the CPU backend and torch on the CPU (and small iteration
#       counts): a check of the kit and of this script where there is no GPU.
#
# The device tool call that runs it is printed by `make` and written in
# docs/gpu-kit.md.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT="$ROOT/.gpu-kit"
LIMIT_BYTES=$((64 * 1024 * 1024))
# The ResNet-50 plans leave out their weights; the others keep them.
BENCH_MODELS="resnet50 bert_encoder lstm_lm"
STRIP_MODELS="resnet50"
BATCH="${GPU_KIT_BATCH:-64}"
# The python with torch and onnx (the device machine's python3 has them).
PY="${GPU_KIT_PYTHON:-python3}"

die() { echo "gpu-kit.sh: $*" >&2; exit 2; }
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
  local skip_conformance=0 prebuilt=1
  for a in "$@"; do
    case "$a" in
      --skip-conformance) skip_conformance=1 ;;
      --no-prebuilt) prebuilt=0 ;;
      *) die "make: unknown argument '$a'" ;;
    esac
  done
  local PY=/usr/bin/python3
  local MP_OPT="${MP_OPT:-$ROOT/build/bin/mp-opt}"
  local HOST="$ROOT/build-kit-host"
  [ -x "$MP_OPT" ] || die "no mp-opt at $MP_OPT (build it: scripts/build.sh, or set MP_OPT)"
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
  if [ $prebuilt = 1 ] && { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    echo "== the device build, here (build-kit/), as a fallback for the device"
    BUILD="$ROOT/build-kit" CPU_ONLY=0
    export BUILD CPU_ONLY
    mkdir -p "$BUILD"
    if { [ -f "$BUILD/build.ninja" ] && ninja -C "$BUILD" mp-run mp-runtime-tests >"$BUILD/gpu-kit-make.log" 2>&1; } ||
       bash "$0" _build >"$BUILD/gpu-kit-make.log" 2>&1; then
      mkdir -p "$KIT/prebuilt"
      strip -o "$KIT/prebuilt/mp-run" "$BUILD/bin/mp-run" &&
        strip -o "$KIT/prebuilt/mp-runtime-tests" "$BUILD/bin/mp-runtime-tests" ||
        die "cannot copy the prebuilt binaries"
    else
      tail -20 "$BUILD/gpu-kit-make.log"
      die "the device build failed here too (log: $BUILD/gpu-kit-make.log)"
    fi
  fi

  {
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) from $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!.gpu-kit' || echo ' (with local changes)')"
    echo "mp-opt: $MP_OPT"
    echo "bench batch: $BATCH; models: $BENCH_MODELS; without weights: $STRIP_MODELS"
  } >"$KIT/MADE"

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
Device tool calls (run, carry [".gpu-kit"]), in one session, one after the other:
  1. command: "bash scripts/gpu-kit.sh run build tests conformance"   timeout_s: 600
  2. command: "bash scripts/gpu-kit.sh run build weights bench"       timeout_s: 600
(the second rebuilds only when the machine went back in between; each writes
its logs and summary.md under $OUT)
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

# step NAME LIMIT_SECONDS COMMAND...: runs it with a time limit (its own, or
# what is left of the whole run's GPU_KIT_DEADLINE, if less), its output into
# $OUT/NAME.log (and the last lines on stdout), one line into the summary.
step() {
  local name="$1" limit="$2"
  shift 2
  local log="$OUT_DIR/$name.log" start rc left
  start=$(date +%s)
  left=$(( RUN_START + ${GPU_KIT_DEADLINE:-580} - start - 5 ))
  if [ "$left" -lt 15 ]; then
    echo "== $name: skipped, ${left}s left of the run's ${GPU_KIT_DEADLINE:-580}s"
    echo "| $name | SKIPPED (no time left) | 0s | |" >>"$SUMMARY"
    return 1
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - start ))
  tail -n "${GPU_KIT_TAIL:-15}" "$log"
  local what="ok"
  [ $rc -ne 0 ] && what="FAILED (exit $rc)"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && what="TIMED OUT after ${limit}s"
  echo "| $name | $what | ${secs}s | $name.log |" >>"$SUMMARY"
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
  cmake -S "$ROOT/lib/Runtime" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMP_RUNTIME_BLAS=builtin -DMP_RUNTIME_WITH_ONNX=OFF \
    -DFLATBUFFERS_INCLUDE_DIR="$KIT/include" -DFLATBUFFERS_FLATC_EXECUTABLE=OFF \
    -DMP_RUNTIME_BUILD_TESTS=ON -DMP_CATCH2_INCLUDE_DIR="$KIT/include" \
    -DCMAKE_CXX_FLAGS="$extra_flags" -DCMAKE_CUDA_FLAGS="$extra_flags" \
    "${cuda_flags[@]}" || return 1
  ninja -C "$BUILD" mp-run mp-runtime-tests
}

cmd_run() {
  CPU_ONLY=0
  local steps=()
  for a in "$@"; do
    case "$a" in
      --cpu) CPU_ONLY=1 ;;
      build|tests|conformance|weights|bench) steps+=("$a") ;;
      all) steps+=(build tests conformance weights bench) ;;
      *) die "run: unknown step '$a' (build, tests, conformance, weights, bench, all; --cpu)" ;;
    esac
  done
  [ ${#steps[@]} -eq 0 ] && steps=(build tests conformance weights bench)
  [ -d "$KIT/include" ] || die "no kit at $KIT: make it where mp-opt is (scripts/gpu-kit.sh make) and carry .gpu-kit"
  local status=0
  RUN_START=$(date +%s)
  OUT_DIR="${OUT:-$KIT/out}"
  mkdir -p "$OUT_DIR"
  BUILD="${GPU_KIT_BUILD:-$ROOT/build-kit}"
  export BUILD CPU_ONLY
  BIN="$BUILD/bin"
  mkdir -p "$BUILD/weights"
  SUMMARY="$OUT_DIR/summary.md"
  NOTES="$OUT_DIR/.notes"
  : >"$NOTES"
  local backend=cuda device=cuda
  [ "$CPU_ONLY" = 1 ] && backend=cpu device=cpu
  {
    echo "# gpu-kit run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "- kit: $(head -1 "$KIT/MADE" 2>/dev/null)"
    echo "- machine: $(uname -n); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "- nvcc: $( (command -v nvcc >/dev/null && nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | tail -1)"
    echo "- torch: $("$PY" -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>/dev/null)"
    echo "- backend: $backend; steps: ${steps[*]}"
    echo
    echo "| step | result | time | log |"
    echo "|---|---|---|---|"
  } >"$SUMMARY"
  find_cuda_libs
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}$LIB_DIRS"
  export PYTHONUNBUFFERED=1
  local s jobs
  jobs=$(nproc)
  local iters=50 warmup=10 bench_batch
  [ "$CPU_ONLY" = 1 ] && iters=1 warmup=0
  for s in "${steps[@]}"; do
    case "$s" in
      build)
        local built=0
        if [ -x "$BUILD/bin/mp-run" ] && [ -x "$BUILD/bin/mp-runtime-tests" ] &&
           [ "${GPU_KIT_REBUILD:-0}" != 1 ]; then
          # An incremental ninja: nothing to do on a warm machine.
          step build "${GPU_KIT_BUILD_LIMIT:-420}" ninja -C "$BUILD" mp-run mp-runtime-tests && built=1
        else
          step build "${GPU_KIT_BUILD_LIMIT:-420}" bash "$0" _build && built=1
        fi
        if [ $built = 0 ]; then
          status=1
          if [ -x "$KIT/prebuilt/mp-run" ]; then
            BIN="$KIT/prebuilt"
            echo "- the build failed: the steps after it used the kit's prebuilt mp-run and mp-runtime-tests ($(head -1 "$KIT/MADE"))" >>"$NOTES"
          fi
        fi ;;
      tests)
        # Without a GPU (--cpu) the [cuda] tests run their host-side parts.
        step tests "${GPU_KIT_TESTS_LIMIT:-240}" "$BIN/mp-runtime-tests" "[cuda]" || status=1 ;;
      conformance)
        step conformance "${GPU_KIT_CONFORMANCE_LIMIT:-240}" "$PY" "$ROOT/scripts/conformance.py" \
          --kit "$KIT/conformance" --backend="$backend" --mp-run "$BIN/mp-run" -v \
          -j "$jobs" --timeout 60 --json "$OUT_DIR/conformance.json" || status=1 ;;
      weights)
        local m
        for m in $STRIP_MODELS; do
          step "weights-$m" "${GPU_KIT_WEIGHTS_LIMIT:-180}" "$PY" "$ROOT/scripts/gpu_kit_weights.py" \
            regenerate "$m" --manifest "$KIT/weights/$m.manifest.json" \
            --out "$BUILD/weights/$m" --status "$BUILD/weights/$m.status.json" || status=1
        done ;;
      bench)
        local unchecked=() m
        for m in $STRIP_MODELS; do
          if [ -f "$BUILD/weights/$m.status.json" ] && ! "$PY" -c \
             'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["identical"] != d["total"])' \
             "$BUILD/weights/$m.status.json"; then
            unchecked=(--unchecked-weights)
            echo "- $m: the weights made here differ from the compile machine's: the benchmark ran with --unchecked-weights (see weights-$m.log)" >>"$NOTES"
          fi
        done
        bench_batch=$(sed -n 's/^bench batch: \([0-9]*\).*/\1/p' "$KIT/MADE")
        step bench "${GPU_KIT_BENCH_LIMIT:-480}" "$PY" "$ROOT/scripts/bench_gpu.py" \
          --plans "$KIT/bench-plans" --weights "$BUILD/weights" "${unchecked[@]}" \
          --mp-run "$BIN/mp-run" --device "$device" --mp-run-backend "$backend" \
          --batch "$bench_batch" --iters "$iters" --warmup "$warmup" \
          --models "${GPU_KIT_BENCH_MODELS:-${BENCH_MODELS// /,}}" \
          --out "$OUT_DIR/bench.md" || status=1 ;;
    esac
  done
  if [ -s "$NOTES" ]; then
    echo >>"$SUMMARY"
    cat "$NOTES" >>"$SUMMARY"
  fi
  rm -f "$NOTES"
  echo
  cat "$SUMMARY"
  return $status
}

case "${1:-}" in
  make) shift; cmd_make "$@" ;;
  run) shift; cmd_run "$@" ;;
  calls) print_calls ;;
  _build) build_step ;; # run's build step, under its time limit
  *) sed -n '2,34p' "$0"; exit 2 ;;
esac
