#!/usr/bin/env bash
# Runs the numerics-sensitive tests under each CPU kernel family the
# libraries can select on this x86 machine, so that a test which holds only
# for one machine's kernels fails here rather than on CI's next machine
# (docs/testing.md, "Portability").
#
#   scripts/check-portability.sh [--full] [--ci] [--families "A B ..."]
#
# For each OpenBLAS kernel family (OPENBLAS_CORETYPE) this CPU can execute,
# and once with none set (the machine's default), it runs:
#   - the lit tests of training, models, conformance allow-lists, mp-run and
#     the training passes (test/Training, test/Models, test/Conformance,
#     test/Tools/mp-run, test/Passes/MP/{Training,LossScale,MasterWeights,
#     PadTensorCores}, test/Passes/CuLib/NHWCLayout: the padded and
#     channels-last plans are
#     checked against the plain ones within tolerances);
#   - mp-runtime-tests (the runtime's kernel tests against the exact
#     reference kernels) and mp-unit-tests "[gradcheck]" (gradient checks).
# --full runs the whole ctest suite instead of that subset.
# --ci runs one family other than the machine's default (the first of
# Haswell, SkylakeX, Sandybridge, Nehalem that differs from it and that the
# CPU can execute) on the subset: what scripts/run-tests.sh does on every CI
# run.
# Where mp-run links oneDNN, each family is also run under lowered oneDNN
# ISAs (ONEDNN_MAX_CPU_ISA = AVX2, AVX512_CORE; the fused programs' vector
# math, MP_VECTOR_MATH_ISA, with them, and at the baseline in the run with
# the machine's default family); with --ci those runs are
# mp-runtime-tests (FastCallsTest: every oneDNN call against the reference
# kernels) and the gradient checks only, to keep CI short.
#
# Every family is checked to be the one OpenBLAS actually selected
# (openblas_get_corename): OpenBLAS silently keeps its default for a name it
# does not know. Prints a table (family, what ran, result, seconds) and exits
# 1 if any run failed. MP_BUILD_DIR picks the build (default build/).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MP_BUILD_DIR:-$ROOT/build}"
LIT="${LIT:-/usr/lib/llvm-22/bin/lit}"

# OpenBLAS 0.3.21's x86-64 kernel families (DYNAMIC_ARCH), one of each
# kernel set, and the CPU flags (/proc/cpuinfo) each needs. The AMD
# Bulldozer line is left out: its kernels use FMA4, which no current CPU has.
FAMILIES=(Prescott Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake)
declare -A NEEDS=(
  [Prescott]="pni" [Nehalem]="ssse3 sse4_2" [Sandybridge]="avx"
  [Haswell]="avx2 fma" [Zen]="avx2 fma"
  [SkylakeX]="avx512f avx512bw avx512dq avx512vl"
  [Cooperlake]="avx512f avx512bw avx512dq avx512vl avx512_bf16"
)
SUBSET_LIT='test/(Training|Models|Conformance|Tools/mp-run|Passes/MP/(Training|LossScale|MasterWeights|PadTensorCores)|Passes/CuLib/NHWCLayout)/'

full=0 ci=0 families=()
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1 ;;
    --ci) ci=1 ;;
    --families) shift; read -r -a families <<<"${1:-}" ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "check-portability.sh: unknown argument '$1' (--full, --ci, --families \"A B\")" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$BUILD/bin/mp-run" ] || { echo "check-portability.sh: no build at $BUILD (scripts/build.sh)" >&2; exit 2; }

cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
can_run() {
  local f
  for f in ${NEEDS[$1]}; do
    case "$cpu_flags" in *" $f "*) ;; *) return 1 ;; esac
  done
}
# The kernel family OpenBLAS selects with OPENBLAS_CORETYPE=$1 (empty: its
# default): the library mp-run is linked with.
openblas_lib=$(ldd "$BUILD/bin/mp-run" | awk '/libopenblas/ { print $3; exit }')
selected() {
  [ -n "$openblas_lib" ] || { echo "none"; return; }
  OPENBLAS_CORETYPE="$1" /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' "$openblas_lib"
}
default_family=$(selected "")
onednn_isas=()
if ldd "$BUILD/bin/mp-run" | grep -q libdnnl; then
  onednn_isas=(AVX2 AVX512_CORE)
fi

if [ ${#families[@]} -eq 0 ]; then
  if [ $ci = 1 ]; then
    for f in Haswell SkylakeX Sandybridge Nehalem; do
      if [ "$f" != "$default_family" ] && can_run "$f"; then families=("$f"); break; fi
    done
    if [ ${#families[@]} -eq 0 ]; then
      echo "check-portability.sh: no other x86 OpenBLAS kernel family on this machine ($(uname -m), default ${default_family}): nothing to run"
      exit 0
    fi
  else
    families=("" "${FAMILIES[@]}")
  fi
fi

echo "OpenBLAS: ${openblas_lib:-not linked}; default kernel family here: $default_family"
echo "oneDNN: $([ ${#onednn_isas[@]} -gt 0 ] && echo "linked; ISAs ${onednn_isas[*]}" || echo "not linked")"

results=()
failed=0
run_one() { # FAMILY ISA
  local family="$1" isa="$2" start rc=0 what
  local -a env=()
  [ -n "$family" ] && env+=("OPENBLAS_CORETYPE=$family")
  # The fused programs' vector math follows oneDNN's ISA down (AVX2 ->
  # avx2); the baseline loops run with the machine's default family.
  [ -n "$isa" ] && env+=("ONEDNN_MAX_CPU_ISA=$isa")
  case "$isa" in
    AVX2) env+=("MP_VECTOR_MATH_ISA=avx2") ;;
    AVX512_CORE) env+=("MP_VECTOR_MATH_ISA=avx512") ;;
    "") [ -z "$family" ] && env+=("MP_VECTOR_MATH_ISA=baseline") ;;
  esac
  local label="${family:-default ($default_family)}${isa:+, oneDNN $isa}"
  echo
  echo "== $label"
  start=$(date +%s)
  if [ $ci = 1 ] && [ -n "$isa" ]; then
    what="mp-runtime-tests, gradient checks"
    env "${env[@]}" "$BUILD/test/unit/mp-runtime-tests" || rc=1
    env "${env[@]}" "$BUILD/test/unit/mp-unit-tests" "[gradcheck]" || rc=1
  elif [ $full = 1 ]; then
    what="ctest (whole suite)"
    (cd "$BUILD" && env "${env[@]}" ctest -j2 --output-on-failure) || rc=1
  else
    what="lit subset, mp-runtime-tests, gradient checks"
    env "${env[@]}" "$LIT" -sv --filter "$SUBSET_LIT" "$BUILD/test" || rc=1
    env "${env[@]}" "$BUILD/test/unit/mp-runtime-tests" || rc=1
    env "${env[@]}" "$BUILD/test/unit/mp-unit-tests" "[gradcheck]" || rc=1
  fi
  local result=PASS
  [ $rc != 0 ] && result=FAIL && failed=1
  results+=("| $label | $what | $result | $(( $(date +%s) - start )) s |")
}

for family in "${families[@]}"; do
  if [ -n "$family" ]; then
    if [ -z "${NEEDS[$family]+x}" ]; then
      echo "check-portability.sh: unknown family '$family' (${FAMILIES[*]})" >&2; exit 2
    fi
    if ! can_run "$family"; then
      results+=("| $family | - | skipped: this CPU lacks ${NEEDS[$family]} | |")
      continue
    fi
    got=$(selected "$family")
    if [ "$got" != "$family" ]; then
      results+=("| $family | - | FAIL: OpenBLAS selected $got instead | |")
      failed=1
      continue
    fi
  fi
  run_one "$family" ""
  for isa in "${onednn_isas[@]}"; do
    run_one "$family" "$isa"
  done
done

echo
echo "| OpenBLAS kernel family | what ran | result | time |"
echo "|---|---|---|---|"
printf '%s\n' "${results[@]}"
exit $failed
