#!/usr/bin/env bash
# The C++ and CUDA sources are formatted as .clang-format says (Google base,
# 100 columns): clang-format would change nothing. Names the files it would
# change and how to fix them. Skipped (exit 77) where clang-format is
# missing (share/dmlps/setup-debian.sh installs it).
set -euo pipefail

src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
cd "$src"
mapfile -t files < <(find bench cmd libcore python tests -type f \
  \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
  -not -path 'tests/fuzz/corpus/*' | sort)
[ "${#files[@]}" -gt 100 ] || { echo "FAIL: found only ${#files[@]} sources under $src" >&2; exit 1; }
# One run over every file; each place it would change is reported as
# FILE:LINE:COL: error: ...
mapfile -t unformatted < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ "${#unformatted[@]}" -gt 0 ]; then
  echo "FAIL: not formatted as .clang-format says: ${unformatted[*]}" >&2
  echo "fix: clang-format -i ${unformatted[*]}" >&2
  exit 1
fi
echo "format: ${#files[@]} sources formatted"
