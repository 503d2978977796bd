# share/dmlps/experiments/reproduce-all.sh at smoke size on one row: a TSV
# of nine columns, one line per claim with numbers for its figures and a
# verdict, and a markdown table per paper; an unknown row is refused.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "jq is not installed"; exit 77; }
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/reproduce-all.sh"
rc=0
"$script" --bin "$BIN" --rows abps,bogus >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "reproduce-all.sh --rows abps,bogus"
grep -q "unknown row 'bogus'" "$WORK/err" || fail "unclear error: $(cat "$WORK/err")"

"$script" --bin "$BIN" --quick --repeat 1 --rows abps --out "$WORK/out" -- --workers 2 \
  --slowdown 1,2 --max-iterations 8 --batch 32 >"$WORK/md" 2>"$WORK/run.log" ||
  fail "reproduce-all.sh exited $?: $(tail -n 5 "$WORK/run.log")"
tsv="$WORK/out/reproducing.tsv"
cat "$tsv"
head -n 1 "$tsv" | grep -qx $'paper\tclaim\tsetting\tcommand\tmetric\tmedian\tmin\tmax\tverdict' ||
  fail "TSV header: $(head -n 1 "$tsv")"
[ "$(tail -n +2 "$tsv" | grep -c .)" = 2 ] || fail "not two A-BSP claims in the TSV"
awk -F '\t' 'NR > 1 {
    if (NF != 9) { print "line " NR ": " NF " columns"; bad = 1 }
    for (i = 6; i <= 8; i++)
      if ($i !~ /^-?[0-9]+(\.[0-9]+)?$/) { print "line " NR ": column " i " is " $i; bad = 1 }
    if ($6 + 0 < $7 + 0 || $6 + 0 > $8 + 0) { print "line " NR ": median outside min..max"; bad = 1 }
    if ($9 !~ /reproduced/) { print "line " NR ": verdict " $9; bad = 1 }
  }
  END { exit bad }' "$tsv" || fail "malformed TSV"
grep -q '^### A-BSP' "$WORK/md" || fail "no A-BSP table in the markdown"
[ "$(grep -c '^|' "$WORK/md")" = 4 ] || fail "the A-BSP table is not a header, a rule and two rows"
echo "ok"
