#!/usr/bin/env bash
# dmlps-trace on the checked-in small trace: every subcommand prints what it
# should, a damaged trace gives a warning, what it held and exit 65, and bad
# input or a bad command line get their exit codes.
source "$(dirname "$0")/lib.sh"

SRC=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TRACE=$SRC/tests/data/small.trace
TOOL=$BIN/dmlps-trace
[ -f "$TRACE" ] || fail "missing $TRACE"

# summary: time to accuracy, the worker table and the straggler verdict.
rc=0
"$TOOL" summary "$TRACE" >"$WORK/summary" 2>"$WORK/summary.log" || rc=$?
expect_exit 0 "$rc" "summary"
grep -q "time to accuracy 1.620 s" "$WORK/summary" || fail "summary lacks the time to accuracy"
grep -q "^straggler: worker-1 deterministic" "$WORK/summary" || fail "summary lacks the straggler"
grep -Eq "^worker-0 +16 +512 " "$WORK/summary" || fail "summary lacks worker-0's row"
[ ! -s "$WORK/summary.log" ] || fail "summary wrote to stderr: $(cat "$WORK/summary.log")"
"$TOOL" summary --format tsv "$TRACE" >"$WORK/summary.tsv" || fail "summary --format tsv failed"
head -n 1 "$WORK/summary.tsv" | grep -q $'^node\tsteps\tsamples' ||
  fail "summary --format tsv lacks its header"

# The same trace from standard input gives the same summary, and from a
# path with a comma in it (a list of files is not split at commas).
"$TOOL" summary - <"$TRACE" | cmp -s - "$WORK/summary" || fail "summary of stdin differs"
cp "$TRACE" "$WORK/run,1.trace"
"$TOOL" summary "$WORK/run,1.trace" 2>"$WORK/comma.log" | cmp -s - "$WORK/summary" ||
  fail "summary of a path with a comma differs: $(cat "$WORK/comma.log")"

# merge | chrome: valid JSON with the events.
"$TOOL" merge "$TRACE" "$TRACE" >"$WORK/merged.trace" || fail "merge failed"
"$TOOL" chrome - <"$WORK/merged.trace" >"$WORK/run.json" || fail "chrome failed"
if command -v python3 >/dev/null; then
  python3 -m json.tool "$WORK/run.json" >/dev/null || fail "chrome output is not JSON"
  "$TOOL" summary --format json "$TRACE" | python3 -m json.tool >/dev/null ||
    fail "summary --format json is not JSON"
else
  echo "python3 not found: checking the JSON by grep only"
fi
grep -q '"traceEvents"' "$WORK/run.json" || fail "chrome output lacks traceEvents"
grep -q '"ph":"X"' "$WORK/run.json" || fail "chrome output lacks spans"
grep -q '"ph":"f","bp":"e"' "$WORK/run.json" || fail "chrome output lacks flow arrows"

# tsv: the header, then one line per record (133 in the fixture).
"$TOOL" tsv "$TRACE" >"$WORK/records.tsv" || fail "tsv failed"
head -n 1 "$WORK/records.tsv" | grep -q $'^t_us\tnode\tlane\tkind\tname\tdur_us\targs$' ||
  fail "tsv lacks its header"
[ "$(wc -l <"$WORK/records.tsv")" -eq 134 ] || fail "tsv has $(wc -l <"$WORK/records.tsv") lines, expected 134"

# A truncated copy: a warning naming the offset, the summary anyway, exit 65.
head -c 5000 "$TRACE" >"$WORK/cut.trace"
rc=0
"$TOOL" summary "$WORK/cut.trace" >"$WORK/cut.summary" 2>"$WORK/cut.log" || rc=$?
expect_exit 65 "$rc" "summary of a truncated trace"
grep -q "^dmlps-trace: warning: .*cut.trace: truncated record at byte offset [0-9]" \
  "$WORK/cut.log" || fail "no warning naming the offset: $(cat "$WORK/cut.log")"
grep -q "^worker-0 " "$WORK/cut.summary" || fail "no summary of what the truncated trace held"

# A missing file: exit 66 and one error line.
rc=0
"$TOOL" summary "$WORK/missing.trace" >"$WORK/out" 2>"$WORK/missing.log" || rc=$?
expect_exit 66 "$rc" "summary of a missing file"
grep -q "^dmlps-trace: error: .*missing.trace" "$WORK/missing.log" || fail "no error line"
[ ! -s "$WORK/out" ] || fail "output for a missing file"

# A bad command line: exit 64.
rc=0
"$TOOL" frobnicate "$TRACE" >/dev/null 2>"$WORK/bad.log" || rc=$?
expect_exit 64 "$rc" "an unknown subcommand"
grep -q "^dmlps-trace: error: unknown subcommand 'frobnicate'" "$WORK/bad.log" ||
  fail "no error line for the unknown subcommand"
rc=0
"$TOOL" plot --kind pie "$TRACE" >/dev/null 2>&1 || rc=$?
expect_exit 64 "$rc" "an unknown plot kind"
rc=0
"$TOOL" >/dev/null 2>&1 || rc=$?
expect_exit 64 "$rc" "no subcommand"
"$TOOL" --help | grep -q "^  chrome" || fail "--help does not list the subcommands"

# A run whose batch never changed: --kind batch says so instead of drawing
# flat lines; the others say what they show.
rc=0
"$TOOL" plot --kind batch "$TRACE" >"$WORK/batch.gp" 2>"$WORK/batch.log" || rc=$?
expect_exit 65 "$rc" "plot --kind batch of a fixed-batch run"
grep -q "^dmlps-trace: error: the batch size stayed 32 on every worker under policy bsp" "$WORK/batch.log" ||
  fail "plot --kind batch does not say the batch was fixed: $(cat "$WORK/batch.log")"
[ ! -s "$WORK/batch.gp" ] || fail "plot --kind batch drew a chart of a fixed batch"
"$TOOL" plot --kind tta "$TRACE" | grep -q 'title "target 0.5"' || fail "the tta plot lacks the target line"
"$TOOL" plot --kind gantt "$TRACE" | grep -q 'What each worker did (all 1.6 s)' ||
  fail "the gantt title does not say it shows all 1.6 s"
"$TOOL" plot --kind gantt --window 0.5 "$TRACE" | grep -q 'What each worker did (first 0.5 s)' ||
  fail "the gantt title does not say it shows the first 0.5 s"

# gnuplot accepts every plot, when it is installed.
if command -v gnuplot >/dev/null; then
  for kind in tta gantt wait; do
    "$TOOL" plot --kind "$kind" --term dumb "$TRACE" >"$WORK/$kind.gp" || fail "plot $kind failed"
    gnuplot "$WORK/$kind.gp" >"$WORK/$kind.txt" 2>"$WORK/$kind.log" ||
      fail "gnuplot rejects the $kind plot: $(cat "$WORK/$kind.log")"
  done
  "$TOOL" plot --kind gantt --term dumb "$TRACE" | gnuplot >/dev/null 2>&1 ||
    fail "gnuplot rejects the gantt plot from a pipe"
else
  echo "gnuplot not found: skipping the gnuplot checks"
fi
echo "dmlps-trace: ok"
