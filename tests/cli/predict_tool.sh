# dmlps-predict on the traces of a real LB-BSP run whose second worker turns
# 4x slow at its step 40: every worker under every predictor, the plan adds
# up to the global batch, files and standard input give the same report; a
# damaged trace gives a warning, the report and exit 65; a missing file 66; a
# bad command line 64.
. "$(dirname "$0")/lib.sh"
TOOL=$BIN/dmlps-predict

start_server --workers 2 --policy lbbsp --predictor narx --batch 64 --max-iterations 100 \
  --eval-every 50 --trace "$WORK/server.trace"
start_worker w0 --rank 0 --trace "$WORK/w0.trace"
w0=$WORKER_PID
start_worker w1 --rank 1 --slowdown-schedule 0:1,40:4 --trace "$WORK/w1.trace"
w1=$WORKER_PID
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "traced lbbsp server"
wait_for "$w0" 30
expect_exit 0 "$RC" "traced worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "traced worker 1"
TRACES=("$WORK/server.trace" "$WORK/w0.trace" "$WORK/w1.trace")

# The merged run piped in: a TSV row per worker and predictor, then "all".
rc=0
"$BIN/dmlps-trace" merge "${TRACES[@]}" | "$TOOL" --format tsv --plan 512 >"$WORK/report.tsv" \
  2>"$WORK/report.log" || rc=$?
expect_exit 0 "$rc" "dmlps-predict of standard input"
[ ! -s "$WORK/report.log" ] || fail "dmlps-predict wrote to stderr: $(cat "$WORK/report.log")"
cat "$WORK/report.tsv"
head -n 1 "$WORK/report.tsv" | grep -qx $'node\tpredictor\tsteps\tpredictions\trmse\tmape_pct\tchanges\tfollow_steps\tspikes\tspike_moved_pct\tnext_speed\tbatch' ||
  fail "the TSV header is not what dmlps-predict(1) says"
awk -F'\t' '
  NR == 1 { next }
  NF != 12 { print "row " NR " has " NF " fields"; bad = 1 }
  { rows[$1 "/" $2] = 1; n++ }
  $1 ~ /^worker-/ {
    if ($3 < 90) { print $1 " has only " $3 " steps"; bad = 1 }
    if (!($5 > 0) || !($6 >= 0) || !($11 > 0) || !($12 >= 1)) { print "bad numbers: " $0; bad = 1 }
    sum[$2] += $12
  }
  $1 == "all" && $12 != 512 { print "the all row plans " $12; bad = 1 }
  END {
    if (n != 12) { print n " rows, expected 12"; bad = 1 }
    split("last ema arima narx", p, " ")
    for (i = 1; i <= 4; i++) {
      for (w = 0; w < 2; w++) if (!(("worker-" w "/" p[i]) in rows)) { print "no row worker-" w "/" p[i]; bad = 1 }
      if (!(("all/" p[i]) in rows)) { print "no all row for " p[i]; bad = 1 }
      if (sum[p[i]] != 512) { print p[i] " plans " sum[p[i]] " samples, not 512"; bad = 1 }
    }
    exit bad
  }' "$WORK/report.tsv" || fail "the report is not what it should be"
# The last value is always moved all the way by a spike.
awk -F'\t' '$2 == "last" && $9 > 0 && ($10 < 99.9 || $10 > 100.1) { exit 1 }' "$WORK/report.tsv" ||
  fail "a spike moved the last value by other than 100%"

# The files themselves give the same report (and the same bytes: the
# predictors are deterministic).
"$TOOL" --format tsv --plan 512 "${TRACES[@]}" | cmp -s - "$WORK/report.tsv" ||
  fail "the report of the files differs from that of the merged stream"

# Table and JSON.
"$TOOL" "${TRACES[@]}" >"$WORK/report.txt" || fail "the table failed"
grep -Eq '^all +narx +[0-9]+ ' "$WORK/report.txt" || fail "the table lacks the all/narx row"
"$TOOL" --format json --predictors narx,last "${TRACES[@]}" >"$WORK/report.json" || fail "json failed"
if command -v python3 >/dev/null; then
  python3 - "$WORK/report.json" <<'PY' || fail "the JSON is not what it should be"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["plan"] is None, report["plan"]
rows = report["rows"]
assert [r["predictor"] for r in rows] == ["narx", "last"] * 3, [r["predictor"] for r in rows]
assert [r["node"] for r in rows[-2:]] == ["all", "all"]
assert all(r["rmse"] > 0 and r["steps"] >= 90 for r in rows[:-2]), rows
print("json:", len(rows), "rows")
PY
else
  grep -q '"rows":\[' "$WORK/report.json" || fail "the JSON lacks its rows"
fi

# A truncated worker trace: a warning, the report of what it held, exit 65.
head -c 3000 "$WORK/w1.trace" >"$WORK/cut.trace"
rc=0
"$TOOL" --format tsv "$WORK/w0.trace" "$WORK/cut.trace" >"$WORK/cut.tsv" 2>"$WORK/cut.log" || rc=$?
expect_exit 65 "$rc" "a truncated trace"
grep -q "^dmlps-predict: warning: .*cut.trace: .*byte offset [0-9]" "$WORK/cut.log" ||
  fail "no warning naming the offset: $(cat "$WORK/cut.log")"
grep -q "^all"$'\t'"narx"$'\t' "$WORK/cut.tsv" || fail "no report from what the damaged trace held"

# Only a server trace: no worker steps, exit 65 and nothing on stdout.
rc=0
"$TOOL" "$WORK/server.trace" >"$WORK/out" 2>"$WORK/none.log" || rc=$?
expect_exit 65 "$rc" "a trace without workers"
grep -q "^dmlps-predict: error: no worker steps" "$WORK/none.log" || fail "no error line: $(cat "$WORK/none.log")"
[ ! -s "$WORK/out" ] || fail "output without worker steps"

# A missing file: exit 66, one error line, no output.
rc=0
"$TOOL" "$WORK/w0.trace" "$WORK/missing.trace" >"$WORK/out" 2>"$WORK/missing.log" || rc=$?
expect_exit 66 "$rc" "a missing file"
grep -q "^dmlps-predict: error: .*missing.trace" "$WORK/missing.log" || fail "no error line for the missing file"
[ ! -s "$WORK/out" ] || fail "output for a missing file"

# A bad command line: exit 64, every problem reported at once.
rc=0
"$TOOL" --predictors narx,lstm --format xml --plan -1 --arima-order 1,2 --narx-lags 0 \
  "$WORK/w0.trace" >"$WORK/out" 2>"$WORK/bad.log" || rc=$?
expect_exit 64 "$rc" "bad flags"
[ "$(grep -c '^dmlps-predict: error:' "$WORK/bad.log")" -eq 5 ] ||
  fail "not every problem reported: $(cat "$WORK/bad.log")"
grep -q "unknown speed predictor 'lstm'" "$WORK/bad.log" || fail "the unknown predictor is not named"
rc=0
"$TOOL" --predictors ema,ema "$WORK/w0.trace" >/dev/null 2>&1 || rc=$?
expect_exit 64 "$rc" "a predictor named twice"
rc=0
"$TOOL" --arima-order 8,2,8 --arima-window 30 "$WORK/w0.trace" >/dev/null 2>"$WORK/window.log" || rc=$?
expect_exit 64 "$rc" "an ARIMA order that does not fit its window"
grep -q "window" "$WORK/window.log" || fail "the window is not named: $(cat "$WORK/window.log")"
"$TOOL" --help | grep -q -- "--predictors" || fail "--help does not list --predictors"
echo "ok: dmlps-predict on a real run's traces"
