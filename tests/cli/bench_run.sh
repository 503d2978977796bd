# The README's main job, shrunk: dmlps-bench run starts a real cluster per
# policy and repeat (server and workers as processes on loopback), policies
# interleaved, and tabulates medians; also its traces, formats and errors.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
small=(--workers 2 --slowdown 1,3 --batch 64 --lr 0.05 --eval-every 20 --max-seconds 120)

# Two policies, two runs each, to a target: TSV, logs kept, traces written.
"$bench" run "${small[@]}" --policies bsp,ssp:1 --target 0.75 --repeat 2 --format tsv \
  --out "$WORK/runs" --trace-dir "$WORK/traces" >"$WORK/table.tsv" 2>"$WORK/bench.log" ||
  fail "dmlps-bench run exited $?"
expect_tsv "$WORK/table.tsv" "$BENCH_TSV_HEADER" 2
# Every run reached the target, times are positive and ordered, ratios in [0, 1].
awk -F '\t' 'NR > 1 {
  if ($2 != 2 || $3 != 2) { print "runs/reached: " $0; bad = 1 }
  if (!($5 > 0 && $5 <= $4 && $4 <= $6)) { print "seconds: " $0; bad = 1 }
  if (!($7 > 0 && $8 >= $7 * 64)) { print "iterations/samples: " $0; bad = 1 }
  for (c = 9; c <= 11; c++) if (!($c >= 0 && $c <= 1)) { print "ratio column " c ": " $0; bad = 1 }
  if ($10 > $9) { print "min ratio above the mean: " $0; bad = 1 }
  if (!($13 >= 0.75 && $13 <= 1)) { print "accuracy: " $0; bad = 1 }
  if (!($14 > 0)) { print "speedup: " $0; bad = 1 }
  # mlp:128 has 101,770 parameters: every push carries 407 kB.
  if (!($15 >= $7 * 407080)) { print "bytes per worker: " $0; bad = 1 }
} END { exit bad }' "$WORK/table.tsv" || fail "implausible figures"
grep -q $'^bsp\t.*\t1\t[0-9.]*$' "$WORK/table.tsv" || fail "the first policy's speedup is not 1"
# The policies took turns: ssp:1's first run came before bsp's second.
grep -n "run [12]/2 \.\.\." "$WORK/bench.log" | sed 's/.*\] //' | tr '\n' ' ' |
  grep -q "bsp run 1/2 ... ssp:1 run 1/2 ... bsp run 2/2 ... ssp:1 run 2/2" ||
  fail "runs were not interleaved: $(grep -o '\] .* \.\.\.' "$WORK/bench.log" | tr '\n' ' ')"
# The flags reached the processes.
grep -q "policy ssp:1" "$WORK/runs/ssp-1-2/worker-0.log" || fail "ssp:1 did not reach the workers"
grep -q "batch 64" "$WORK/runs/bsp-1/worker-1.log" || fail "--batch did not reach the workers"
grep -q $'\t20\t' "$WORK/runs/bsp-1/server.tsv" || fail "--eval-every did not reach the server"
grep -q "^target_reached"$'\t'"1$" "$WORK/runs/bsp-2/report.tsv" || fail "no server report"
for f in server worker-0 worker-1; do
  [ -s "$WORK/traces/bsp-1/$f.trace" ] || fail "no trace $f in $WORK/traces/bsp-1"
done
"$BIN/dmlps-trace" summary "$WORK/traces/ssp-1-1/"*.trace >"$WORK/summary.txt" ||
  fail "the traces do not read back"
grep -q "worker-1" "$WORK/summary.txt" || fail "the trace summary has no worker-1"

# No target: every run counts, to its iteration limit; JSON and table forms.
"$bench" run "${small[@]}" --policies wbsp,abps --target 0 --max-iterations 30 --format json \
  >"$WORK/table.json" 2>"$WORK/bench2.log" || fail "dmlps-bench run --format json exited $?"
if command -v python3 >/dev/null; then
  python3 - "$WORK/table.json" <<'PY' || fail "bad JSON: $(cat "$WORK/table.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert [p["policy"] for p in doc["policies"]] == ["wbsp", "abps"], doc["policies"]
for p in doc["policies"]:
    assert p["runs"] == 1 and p["reached"] == 1, p
    assert p["iterations"]["median"] >= 30, p
    assert 0 <= p["compute_ratio_min"]["median"] <= p["compute_ratio_mean"]["median"] <= 1, p
assert len(doc["runs"]) == 2 and all(r["failure"] is None for r in doc["runs"]), doc["runs"]
PY
fi
# localsgd:H reaches the server as --local-steps H.
"$bench" run "${small[@]}" --policies localsgd:2 --target 0 --max-iterations 10 --format tsv \
  --out "$WORK/local-runs" >"$WORK/local.tsv" 2>"$WORK/local.log" || fail "localsgd:2 exited $?"
expect_tsv "$WORK/local.tsv" "$BENCH_TSV_HEADER" 1
grep -q "policy localsgd" "$WORK/local-runs/localsgd-2-1/worker-0.log" ||
  fail "localsgd did not reach the workers: $(ls "$WORK/local-runs")"
# dssp:LOW:HIGH and sync-switch:FRACTION reach the server as its flags.
"$bench" run "${small[@]}" --policies dssp:0:2,sync-switch:0.5 --target 0 --max-iterations 10 \
  --format tsv --out "$WORK/more-runs" >"$WORK/more.tsv" 2>"$WORK/more.log" ||
  fail "dssp:0:2,sync-switch:0.5 exited $?"
expect_tsv "$WORK/more.tsv" "$BENCH_TSV_HEADER" 2
grep -q "policy dssp:0-2" "$WORK/more-runs/dssp-0-2-1/worker-0.log" ||
  fail "dssp:0:2 did not reach the workers: $(ls "$WORK/more-runs")"
grep -q "policy switch done: bsp -> asp" "$WORK/more-runs/sync-switch-0.5-1/server.log" ||
  fail "sync-switch:0.5 did not switch: $(ls "$WORK/more-runs")"
"$bench" run "${small[@]}" --policies bsp --target 0 --max-iterations 10 >"$WORK/table.txt" \
  2>"$WORK/table.log" || fail "table format exited $?"
expect_table "$WORK/table.txt" "^2 workers, mlp:128" "^policy  *reached  *seconds to target"
# Without --out the logs go to a temporary folder: the log says so, and
# that it is removed when every run succeeds, as it then is.
logs=$(sed -n 's/.*; logs in \(.*\), removed at the end unless a run fails (--out DIR keeps them)$/\1/p' \
  "$WORK/table.log")
[ -n "$logs" ] || fail "the log does not say the temporary logs are removed: $(cat "$WORK/table.log")"
[ ! -e "$logs" ] || fail "$logs was not removed although every run succeeded"
# With --out the logs are kept where asked, and the log says only where.
grep -q "; logs in $WORK/runs\$" "$WORK/bench.log" || fail "the log does not name --out's folder"
grep -q "removed at the end" "$WORK/bench.log" && fail "the log says --out's folder is removed"

# A worker that dies: the run is reported failed with its log, nothing hangs,
# no process is left behind, and the exit status is 1.
mkdir -p "$WORK/broken"
ln -s "$BIN/dmlps-server" "$WORK/broken/dmlps-server"
printf '#!/bin/sh\necho "worker: cannot go on" >&2\nexit 70\n' >"$WORK/broken/dmlps-worker"
chmod +x "$WORK/broken/dmlps-worker"
rc=0
timeout 60 "$bench" run "${small[@]}" --policies bsp --bin "$WORK/broken" --out "$WORK/broken-runs" \
  --format tsv >"$WORK/broken.tsv" 2>"$WORK/broken.log" || rc=$?
expect_exit 1 "$rc" "dmlps-bench run with a dying worker"
grep -q "FAILED: worker [01] exited with status 70: worker: cannot go on" "$WORK/broken.log" ||
  fail "the failure is not explained: $(cat "$WORK/broken.log")"
grep -q $'^bsp\t1\t0\t-' "$WORK/broken.tsv" || fail "the failed run is not in the table"
if pgrep -f "$WORK/broken" >/dev/null; then fail "processes of the failed run are left"; fi

# --deterministic: each update summed in rank order, so that two BSP runs
# of three workers (whose sum in arrival order rounds differently from
# run to run) evaluate the same model at every evaluation.
"$bench" run --workers 3 --batch 64 --lr 0.05 --eval-every 10 --target 0 --max-iterations 40 \
  --policies bsp --repeat 2 --deterministic --out "$WORK/same" --format tsv \
  >"$WORK/same.tsv" 2>"$WORK/same.log" || fail "dmlps-bench run --deterministic exited $?"
cut -f2- "$WORK/same/bsp-1/server.tsv" >"$WORK/same-1"
cut -f2- "$WORK/same/bsp-2/server.tsv" >"$WORK/same-2"
[ "$(wc -l <"$WORK/same-1")" -ge 5 ] || fail "too few evaluations: $(cat "$WORK/same-1")"
cmp -s "$WORK/same-1" "$WORK/same-2" ||
  fail "two --deterministic runs differ: $(diff "$WORK/same-1" "$WORK/same-2" | head -4)"
# --seed-per-repeat: repeat 1 is seed 1's run again, repeat 2 seed 2's, another model.
"$bench" run --workers 3 --batch 64 --lr 0.05 --eval-every 10 --target 0 --max-iterations 40 \
  --policies bsp --repeat 2 --deterministic --seed-per-repeat --out "$WORK/seeds" --format tsv \
  >"$WORK/seeds.tsv" 2>"$WORK/seeds.log" || fail "dmlps-bench run --seed-per-repeat exited $?"
cut -f2- "$WORK/seeds/bsp-1/server.tsv" | cmp -s - "$WORK/same-1" ||
  fail "repeat 1 of --seed-per-repeat is not seed 1's run"
cut -f2- "$WORK/seeds/bsp-2/server.tsv" | cmp -s - "$WORK/same-2" &&
  fail "repeat 2 of --seed-per-repeat ran seed 1's model again"
grep -q "bsp run 2/2 (seed 2)" "$WORK/seeds.log" || fail "the log does not name repeat 2's seed"
# --shuffle: each repeat logs its order, and its runs go in that order.
"$bench" run --workers 2 --batch 64 --eval-every 10 --target 0 --max-iterations 10 \
  --policies bsp,asp,ssp:2 --repeat 2 --shuffle --format tsv \
  >"$WORK/shuffle.tsv" 2>"$WORK/shuffle.log" || fail "dmlps-bench run --shuffle exited $?"
for rep in 1 2; do
  logged=$(sed -n "s/.*repeat $rep\/2 in the order //p" "$WORK/shuffle.log")
  ran=$(sed -n "s/.*\] \([a-z:0-9]*\) run $rep\/2: .*/\1/p" "$WORK/shuffle.log" | paste -sd, | sed 's/,/, /g')
  [ -n "$logged" ] || fail "repeat $rep logs no order: $(cat "$WORK/shuffle.log")"
  [ "$logged" = "$ran" ] || fail "repeat $rep ran $ran, not the order logged ($logged)"
  [ "$(echo "$logged" | tr -d ' ' | tr ',' '\n' | LC_ALL=C sort | paste -sd,)" = asp,bsp,ssp:2 ] ||
    fail "repeat $rep's order is no permutation of the policies: $logged"
done
[ "$(cut -f1 "$WORK/shuffle.tsv" | paste -sd,)" = policy,bsp,asp,ssp:2 ] ||
  fail "--shuffle's table is not in the order of --policies: $(cat "$WORK/shuffle.tsv")"

# Bad input: one line each, exit 64, nothing run.
expect_usage() {
  local want=$1
  shift
  local rc=0
  "$bench" "$@" >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "dmlps-bench $*"
  grep -q -- "$want" "$WORK/err" || fail "dmlps-bench $*: no '$want' in: $(cat "$WORK/err")"
}
expect_usage "no subcommand"
expect_usage "unknown subcommand 'walk'" walk
expect_usage "'hsp': unknown" run --policies bsp,hsp
expect_usage "'ssp:x'" run --policies ssp:x
expect_usage "'lbbsp:lstm'" run --policies lbbsp:lstm
expect_usage "2 values for 3 workers" run --workers 3 --slowdown 1,2
expect_usage "unknown format 'xml'" run --format xml
expect_usage "RANK in \\[0, 3\\]" run --slowdown-schedule 7=0:1,10:4
expect_usage "dmlps-server not found in $WORK" run --bin "$WORK"
expect_usage "no end to a run" run --target 0 --max-seconds 0
echo "ok"
