#!/usr/bin/env bash
# The efficiency tables are a file read at run time: dmlps-bench advise and
# --policy auto (under sim and under dmlps-server) read the one
# DMLPS_EFFICIENCY names, refuse one they cannot read with its line (exit
# 65), and say where they looked when there is none (exit 66).
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
tiny=(sim --workers 3 --model softmax --batch 16 --target 0 --max-iterations 40 --eval-every 10
      --compute-cost 50,2 --policies auto)

# Another file, named: auto starts under its table's auto-start.
cat >"$WORK/mine.tsv" <<'TABLES'
table softmax 16 3
auto-start ssp:3
row bsp 1 1 1
row ssp:3 1 1 1
TABLES
DMLPS_EFFICIENCY=$WORK/mine.tsv "$bench" "${tiny[@]}" -v >/dev/null 2>"$WORK/mine.log" ||
  fail "sim with DMLPS_EFFICIENCY exited $?: $(tail -n 3 "$WORK/mine.log")"
grep -q "policy decision at iteration [0-9]*: ssp:3 -> " "$WORK/mine.log" ||
  fail "auto did not start under the table's auto-start: $(grep decision "$WORK/mine.log" | head -n 3)"

# A line it cannot read.
printf 'table softmax 16 3\nrow bsp 1 one 1\n' >"$WORK/bad.tsv"
rc=0
DMLPS_EFFICIENCY=$WORK/bad.tsv "$bench" "${tiny[@]}" >/dev/null 2>"$WORK/bad.err" || rc=$?
expect_exit 65 "$rc" "a bad tables file"
grep -q "^dmlps-bench: error: .*bad.tsv:2: a row is" "$WORK/bad.err" || fail "$(cat "$WORK/bad.err")"

# None where it is named: one line, the place, exit 66; the server alike.
rc=0
DMLPS_EFFICIENCY=$WORK/missing.tsv "$bench" "${tiny[@]}" >/dev/null 2>"$WORK/missing.err" || rc=$?
expect_exit 66 "$rc" "dmlps-bench sim without tables"
[ "$(grep -c "error" "$WORK/missing.err")" -eq 1 ] &&
  grep -q "^dmlps-bench: error: .*$WORK/missing.tsv" "$WORK/missing.err" ||
  fail "$(cat "$WORK/missing.err")"
rc=0
DMLPS_EFFICIENCY=$WORK/missing.tsv timeout 60 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' \
  --policy auto --workers 3 --model softmax --batch 16 >/dev/null 2>"$WORK/server.err" || rc=$?
expect_exit 66 "$rc" "dmlps-server --policy auto without tables"
grep -q "^dmlps-server: error: .*$WORK/missing.tsv" "$WORK/server.err" || fail "$(cat "$WORK/server.err")"
# A policy other than auto needs no tables.
DMLPS_EFFICIENCY=$WORK/missing.tsv "$bench" sim --workers 3 --model softmax --batch 16 --target 0 \
  --max-iterations 20 --eval-every 10 --compute-cost 50,2 --policies bsp >/dev/null 2>&1 ||
  fail "bsp wanted the efficiency tables"
echo "ok: the efficiency tables are read from their file, or their absence said"
