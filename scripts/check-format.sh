#!/usr/bin/env bash
# Checks that the C++ and CUDA lines changed since BASE follow .clang-format
# (LLVM style), as LLVM's own pre-merge check does: only the lines a change
# touches, so older code is reformatted when someone works on it, not all at
# once. CI runs it (scripts/run-tests.sh).
#
#   scripts/check-format.sh [--fix] [BASE]
#
# BASE: a commit (default: the one that added .clang-format, i.e. every change
# made since the style was adopted). The working tree's uncommitted changes
# count too. --fix rewrites those lines instead of failing. Generated files
# (lib/Runtime/generated) are left out. Needs clang-format-22 and its
# git-clang-format (Debian's clang-format-22, which install-deps.sh installs).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
FIX=0
BASE=""
for a in "$@"; do
  case "$a" in
    --fix) FIX=1 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "check-format.sh: unknown option '$a'" >&2; exit 2 ;;
    *) BASE="$a" ;;
  esac
done
CLANG_FORMAT="${CLANG_FORMAT:-clang-format-22}"
GIT_CLANG_FORMAT="${GIT_CLANG_FORMAT:-git-clang-format-22}"
for tool in "$CLANG_FORMAT" "$GIT_CLANG_FORMAT"; do
  command -v "$tool" >/dev/null ||
    { echo "check-format.sh: no $tool (apt install clang-format-22)" >&2; exit 2; }
done
if [ -z "$BASE" ]; then
  BASE=$(git log --diff-filter=A --format=%H -- .clang-format | tail -1)
  [ -n "$BASE" ] || { echo "check-format.sh: .clang-format is not committed: give BASE" >&2; exit 2; }
fi
git rev-parse --verify --quiet "$BASE^{commit}" >/dev/null ||
  { echo "check-format.sh: '$BASE' is not a commit here (a shallow clone?)" >&2; exit 2; }

paths=('*.cpp' '*.h' '*.cu' '*.cuh' ':!lib/Runtime/generated/*')
if [ "$FIX" = 1 ]; then
  "$GIT_CLANG_FORMAT" --binary "$(command -v "$CLANG_FORMAT")" --force "$BASE" -- "${paths[@]}"
  exit 0
fi
diff=$("$GIT_CLANG_FORMAT" --binary "$(command -v "$CLANG_FORMAT")" --diff "$BASE" -- "${paths[@]}" || true)
case "$diff" in
  "" | "no modified files to format" | "clang-format did not modify any files")
    echo "check-format.sh: the C++ lines changed since $(git rev-parse --short "$BASE") follow .clang-format"
    exit 0 ;;
esac
printf '%s\n' "$diff"
echo "check-format.sh: the lines above do not follow .clang-format; scripts/check-format.sh --fix rewrites them" >&2
exit 1
