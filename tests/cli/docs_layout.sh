#!/usr/bin/env bash
# docs/layout.md names every folder and file of libcore/src and
# libcore/include/dmlps, and names nothing that is not there. In its code
# blocks a line that starts with a folder's path ("libcore/src/sync/") opens
# that folder; a line indented by exactly two spaces names files of it in
# its first column (up to the first two spaces in a row), a ".h" after a
# file standing for that file's header; any other line that starts in the
# first column closes the folder. A file added anywhere under those folders
# fails here, naming the file, until its line is written.
set -euo pipefail

src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
page=$src/docs/layout.md
[ -f "$page" ] || { echo "FAIL: $page is missing" >&2; exit 1; }
listed=$(mktemp "${TMPDIR:-/tmp}/dmlps-layout.XXXXXX")
trap 'rm -f "$listed"' EXIT

# What the page names: "D FOLDER/" for each folder line, "F FOLDER/FILE"
# for each file.
awk '
  /^```/ { block = !block; folder = ""; next }
  !block { next }
  /^libcore\/[^ ]*\/( |$)/ { folder = $1; print "D " folder; next }
  /^[^ ]/ { folder = ""; next }
  /^  [^ ]/ {
    if (folder == "") next
    first = substr($0, 3)
    cut = index(first, "  ")
    if (cut > 0) first = substr(first, 1, cut - 1)
    n = split(first, names, " ")
    previous = ""
    for (i = 1; i <= n; i++) {
      name = names[i]
      if (name ~ /^\./ && previous != "") {
        stem = previous
        sub(/\.[^.\/]*$/, "", stem)
        name = stem name
      }
      print "F " folder name
      previous = name
    }
  }
' "$page" | sort -u >"$listed"

failures=0
problem() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

cd "$src"
# Every folder and file there is named.
while IFS= read -r dir; do
  grep -qxF "D $dir/" "$listed" ||
    problem "docs/layout.md has no line for the folder $dir/ (a line starting with '$dir/')"
done < <(find libcore/src libcore/include/dmlps -type d | sort)
files=0
while IFS= read -r file; do
  files=$((files + 1))
  grep -qxF "F $file" "$listed" ||
    problem "docs/layout.md does not name $file (add '  $(basename "$file")' under its folder's line, $(dirname "$file")/)"
done < <(find libcore/src libcore/include/dmlps -type f | sort)
[ "$files" -gt 100 ] || problem "found only $files files under libcore/src and libcore/include/dmlps"

# Everything named is there.
while read -r kind path; do
  case "$kind" in
    D) [ -d "$path" ] || problem "docs/layout.md names the folder $path, which does not exist" ;;
    F) [ -f "$path" ] || problem "docs/layout.md names $path, which does not exist" ;;
  esac
done <"$listed"

if [ "$failures" -gt 0 ]; then
  echo "docs_layout: $failures problem(s) in docs/layout.md" >&2
  exit 1
fi
echo "docs_layout: ok, docs/layout.md names all $files files of libcore/src and libcore/include/dmlps"
