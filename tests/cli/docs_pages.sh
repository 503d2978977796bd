# README.md stays short and points at docs/: the test command CI extracts is
# there, every page it links exists. docs/ is for users: every page is under
# 400 lines and carries no dates, sittings or commit hashes (their history is
# in git); each measurement page says which machine and how to remake it,
# the transport sample has the columns dmlps-bench prints today, and
# regen-docs.sh lists (--dry-run) the commands the pages show.
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

# Each page is for users: short, and no lab notebook.
for page in "$SRC"/docs/*.md; do
  name=docs/$(basename "$page")
  lines=$(wc -l <"$page")
  [ "$lines" -le 400 ] || fail "$name has $lines lines; split it by topic (at most 400)"
  date=$(grep -m1 -oE '20[0-9]{2}-[01][0-9]-[0-3][0-9]' "$page" || true)
  [ -z "$date" ] || fail "$name carries a date ($date); when a figure was measured belongs in git"
  sitting=$(grep -m1 -oiwE 'sittings?' "$page" || true)
  [ -z "$sitting" ] || fail "$name speaks of $sitting; give the current table and the command that remakes it"
  hash=$(grep -oE '(^|[^0-9A-Za-z_])[0-9a-f]{7,40}([^0-9A-Za-z_]|$)' "$page" |
    grep -oE '[0-9a-f]{7,40}' | grep -E '[0-9]' | grep -E '[a-f]' | head -1 || true)
  [ -z "$hash" ] || fail "$name names a commit ($hash); its history is in git"
done

# Each measurement page says where and how to remake it.
for area in policies simulator transport predictors security compression; do
  page=$SRC/docs/$area.md
  [ -f "$page" ] || fail "docs/$area.md is missing"
  grep -q "2-core development VM" "$page" || fail "docs/$area.md does not say which machine"
  grep -q "regen-docs.sh $area" "$page" || fail "docs/$area.md does not say how to remake it"
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
for area in policies simulator transport predictors security compression; do
  "$regen" --dry-run --bin "$BIN" "$area" >"$WORK/$area.txt"
  [ -s "$WORK/$area.txt" ] || fail "regen-docs.sh --dry-run $area lists nothing"
done
# Every dmlps-bench command a page that names an area shows in an sh block
# is one the script runs for that area.
for area in policies simulator transport predictors security compression; do
  for page in $(grep -l "regen-docs.sh $area" "$SRC"/docs/*.md); do
    # A command continued with a trailing backslash is read as one line.
    awk '/^```sh$/ { inside = 1; next } /^```$/ { inside = 0 }
         inside {
           line = $0
           if (held != "") sub(/^ +/, "", line)
           if (line ~ /\\$/) { sub(/ *\\$/, " ", line); held = held line; next }
           print held line; held = ""
         }' "$page" |
      { grep -o 'dmlps-bench [a-z].*' || true; } | sed 's/ *$//' >"$WORK/shown"
    while IFS= read -r shown; do
      case "$shown" in *'$'*) shown=${shown%%\$*} ;; esac
      grep -qF -- "$shown" "$WORK/$area.txt" ||
        fail "docs/$(basename "$page") shows '$shown', which regen-docs.sh $area does not run"
    done <"$WORK/shown"
  done
done
rc=0
"$regen" --dry-run no-such-area 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "regen-docs.sh with an unknown area"
grep -q "^regen-docs.sh: error: unknown area 'no-such-area'" "$WORK/err" || fail "no error line"
echo "ok: README points at docs/; every page is short, undated and can be remade"
