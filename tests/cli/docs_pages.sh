# README.md stays short and points at docs/: the test command CI extracts is
# there, every page it links exists, every measured table in docs/ says when
# it was measured, the transport sample has the columns dmlps-bench prints
# today, and regen-docs.sh lists (--dry-run) the commands the pages show.
. "$(dirname "$0")/lib.sh"
SRC=${DMLPS_SOURCE_DIR:-$(dirname "$0")/../..}

# The test command, found as .ci/run finds it.
cmd=$(awk '/<!-- test-command -->/ { found = 1; next } found && /^```sh/ { getline; print; exit }' "$SRC/README.md")
case "$cmd" in
  *setup-debian.sh*cmake*ctest*) ;;
  *) fail "README.md's test command is not found after <!-- test-command -->: '$cmd'" ;;
esac
grep -q '<!-- main-job -->' "$SRC/README.md" || fail "README.md lost its main-job marker"
lines=$(wc -l <"$SRC/README.md")
[ "$lines" -le 150 ] || fail "README.md has $lines lines; measurements belong in docs/"

# Every relative link of README.md and docs/*.md names a file that exists.
for page in "$SRC/README.md" "$SRC"/docs/*.md; do
  dir=$(dirname "$page")
  while IFS= read -r target; do
    [ -e "$dir/$target" ] || fail "$(basename "$page") links to $target, which does not exist"
  done < <(grep -o '](\([^)#:]*\))' "$page" | sed 's/^](//; s/)$//' | grep -v '^$' || true)
done

# Each measurement page says where, when and how to remake it.
for area in policies simulator transport predictors security; do
  page=$SRC/docs/$area.md
  [ -f "$page" ] || fail "docs/$area.md is missing"
  grep -q "2-core development VM" "$page" || fail "docs/$area.md does not say which machine"
  grep -q "regen-docs.sh $area" "$page" || fail "docs/$area.md does not say how to remake it"
  tables=$(grep -c '^| *-*|\|^```$' "$page" || true)
  dates=$(grep -c '20[0-9][0-9]-[01][0-9]-[0-3][0-9]' "$page" || true)
  [ "$dates" -gt 0 ] || fail "docs/$area.md has $tables tables but no date"
done

# The transport sample's header is the one dmlps-bench transport prints:
# the same columns in the same order (their widths follow the figures,
# so runs space them differently).
header=$(timeout 60 "$BIN/dmlps-bench" transport --sizes 64K --transports ipc --worker-counts 1 \
  --rounds 1 --shards 1 --sum-threads 1 2>"$WORK/transport.err" | sed -n 2p | tr -s ' ')
[ -n "$header" ] || fail "dmlps-bench transport printed no table: $(tail -3 "$WORK/transport.err")"
# (grep reads a file: under pipefail a grep -q that stops early would end
# tr's write with SIGPIPE, and the pipeline would fail.)
tr -s ' ' <"$SRC/docs/transport.md" >"$WORK/transport.md"
grep -qxF "$header" "$WORK/transport.md" ||
  fail "docs/transport.md has no sample with today's header: $header"

# regen-docs.sh: help, a dry run of each area, refusal of an unknown one.
regen=$SRC/share/dmlps/regen-docs.sh
"$regen" --help | grep -q -- '--dry-run' || fail "regen-docs.sh --help does not mention --dry-run"
"$regen" --dry-run --bin "$BIN" >"$WORK/all.txt"
for area in policies simulator transport predictors security; do
  "$regen" --dry-run --bin "$BIN" "$area" >"$WORK/$area.txt"
  [ -s "$WORK/$area.txt" ] || fail "regen-docs.sh --dry-run $area lists nothing"
done
# Every dmlps-bench command a page shows in an sh block is one the script runs.
for area in policies simulator transport predictors security; do
  awk '/^```sh$/ { inside = 1; next } /^```$/ { inside = 0 } inside' "$SRC/docs/$area.md" |
    { grep -o 'dmlps-bench [a-z].*' || true; } | sed 's/ *$//' >"$WORK/shown"
  while IFS= read -r shown; do
    case "$shown" in *'$'*) shown=${shown%%\$*} ;; esac
    grep -qF -- "$shown" "$WORK/all.txt" ||
      fail "docs/$area.md shows '$shown', which regen-docs.sh does not run"
  done <"$WORK/shown"
done
rc=0
"$regen" --dry-run no-such-area 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "regen-docs.sh with an unknown area"
grep -q "^regen-docs.sh: error: unknown area 'no-such-area'" "$WORK/err" || fail "no error line"
echo "ok: README points at docs/; every page is dated and can be remade"
