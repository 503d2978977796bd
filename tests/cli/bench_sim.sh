# dmlps-bench sim on a tiny job: the table run prints, in each format, with
# sane figures; the same flags give the same table; bad flags exit 64.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
# A fixed compute cost: no timing, so two runs must agree to the digit.
tiny=(--workers 4 --model softmax --batch 16 --lr 0.1 --eval-every 5 --target 0.6
      --max-seconds 30 --compute-cost 50,2)

"$bench" sim "${tiny[@]}" --policies bsp,ssp:1,wbsp,abps --format tsv >"$WORK/table.tsv" \
  2>"$WORK/sim.log" || fail "dmlps-bench sim exited $?"
expect_tsv "$WORK/table.tsv" "$BENCH_TSV_HEADER" 4
awk -F '\t' 'NR > 1 {
  if ($2 != 1 || $3 != 1) { print "runs/reached: " $0; bad = 1 }
  if (!($4 > 0 && $4 == $5 && $5 == $6)) { print "seconds: " $0; bad = 1 }
  if (!($7 > 0 && $8 > 0)) { print "iterations/samples: " $0; bad = 1 }
  for (c = 9; c <= 11; c++) if (!($c >= 0 && $c <= 1)) { print "ratio column " c ": " $0; bad = 1 }
  if ($10 > $9) { print "min ratio above the mean: " $0; bad = 1 }
  if (!($13 >= 0.6 && $13 <= 1)) { print "accuracy: " $0; bad = 1 }
  if (!($14 > 0)) { print "speedup: " $0; bad = 1 }
} END { exit bad }' "$WORK/table.tsv" || fail "implausible figures"
grep -q "simulated in" "$WORK/sim.log" || fail "no progress on stderr: $(cat "$WORK/sim.log")"

# Deterministic: the same flags, the same numbers.
"$bench" sim "${tiny[@]}" --policies bsp,ssp:1,wbsp,abps --format tsv >"$WORK/again.tsv" \
  2>/dev/null || fail "second run exited $?"
cmp -s "$WORK/table.tsv" "$WORK/again.tsv" || fail "the same flags gave another table"

# JSON, with noise, on shared cores, with the cost timed at start.
"$bench" sim --workers 3 --model softmax --batch 16 --eval-every 5 --target 0 \
  --max-iterations 20 --policies backup:1,token --jitter 0.3 --heavy-tail 3 --shared-cores 2 \
  --link-gbps 1 --latency-us 100 --repeat 2 --format json >"$WORK/table.json" \
  2>"$WORK/json.log" || fail "dmlps-bench sim --format json exited $?"
grep -q "step of .* samples" "$WORK/json.log" || fail "no calibration logged"
if command -v python3 >/dev/null; then
  python3 - "$WORK/table.json" <<'PY' || fail "bad JSON: $(cat "$WORK/table.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["title"].startswith("simulated: 3 workers"), doc["title"]
assert [p["policy"] for p in doc["policies"]] == ["backup:1", "token"], doc["policies"]
for p in doc["policies"]:
    assert p["runs"] == 2 and p["reached"] == 2, p
    assert p["iterations"]["median"] >= 20, p
    assert p["seconds_to_target"]["min"] > 0, p
    assert 0 <= p["compute_ratio_min"]["median"] <= p["compute_ratio_mean"]["median"] <= 1, p
assert len(doc["runs"]) == 4 and all(r["failure"] is None for r in doc["runs"]), doc["runs"]
# Repeats draw their noise afresh.
times = [r["seconds"] for r in doc["runs"] if r["policy"] == "token"]
assert times[0] != times[1], times
PY
fi

# JSON's ran_under: sync-switch runs BSP, then ASP, the two spans adding
# up to the run's iterations; a policy that does not switch lists none.
"$bench" sim "${tiny[@]}" --target 0 --max-iterations 40 --policies bsp,sync-switch:0.5 \
  --format json >"$WORK/switch.json" 2>/dev/null || fail "sync-switch --format json exited $?"
/usr/bin/python3 - "$WORK/switch.json" <<'PY' || fail "ran_under: $(cat "$WORK/switch.json")"
import json, sys
bsp, switch = json.load(open(sys.argv[1]))["runs"]
assert bsp["ran_under"] == [], bsp
spans = switch["ran_under"]
assert [s["policy"] for s in spans] == ["bsp", "asp"], spans
assert all(s["iterations"] > 0 for s in spans), spans
assert sum(s["iterations"] for s in spans) == switch["iterations"] == 40, (spans, switch)
PY

# The table form has a title and a header.
"$bench" sim "${tiny[@]}" --policies bsp >"$WORK/table.txt" 2>/dev/null ||
  fail "table format exited $?"
expect_table "$WORK/table.txt" "^simulated: 4 workers, softmax" "^policy  *reached  *seconds to target"

# Time slices on shared cores: a job has a whole core or none, so the
# times change; BSP's math does not (it reaches the target in as many
# iterations).
"$bench" sim "${tiny[@]}" --policies bsp --shared-cores 2 --format tsv >"$WORK/shared.tsv" \
  2>/dev/null || fail "--shared-cores 2 exited $?"
"$bench" sim "${tiny[@]}" --policies bsp --shared-cores 2 --cpu-slice-ms 1.5 --format tsv \
  >"$WORK/sliced.tsv" 2>/dev/null || fail "--cpu-slice-ms 1.5 exited $?"
[ "$(cut -f3,7 "$WORK/sliced.tsv")" = "$(cut -f3,7 "$WORK/shared.tsv")" ] ||
  fail "time slices changed BSP's iterations: $(cat "$WORK/shared.tsv" "$WORK/sliced.tsv")"
cmp -s "$WORK/shared.tsv" "$WORK/sliced.tsv" && fail "time slices changed nothing"

# Preempting on wake-up: four workers under backup:3 on two cores, steps
# of 4.4 ms. Without it the workers stay in step, each round's closer
# first of four that all started together and the other three late; with
# it the closer, waking, takes a core from one mid-step, and the late
# pushes per round fall (docs/simulator-cores.md).
wasted_per_round() {
  "$bench" sim --workers 4 --model softmax --batch 256 --slowdown 1 --max-iterations 60 \
    --eval-every 1000 --target 0 --compute-cost 50,17 --policies backup:3 --shared-cores 2 \
    --cpu-slice-ms 6 "$@" --format tsv 2>/dev/null |
    awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
      { printf "%.2f", $h["wasted_samples"] / 256 / $h["iterations"] }'
}
in_step=$(wasted_per_round) || fail "backup:3 with time slices exited $?"
preempted=$(wasted_per_round --cpu-wake-preempts) || fail "--cpu-wake-preempts exited $?"
awk -v a="$in_step" 'BEGIN { exit !(a > 2.8) }' ||
  fail "without preemption, $in_step late pushes a round, not about 3"
awk -v a="$preempted" 'BEGIN { exit !(a < 2.4) }' ||
  fail "preempting on wake-up left $preempted late pushes a round (without: $in_step)"

# A credit on wake-up: the closers of a backup round, woken by the new
# model, run their steps before the late pushes that the round drops get
# their turn; BSP's rounds, which wait for every push, stay as long
# (docs/simulator-cores.md). Milliseconds per iteration, backup:3 then BSP.
ms_per_iteration() {
  "$bench" sim --workers 4 --model softmax --batch 256 --slowdown 1 --max-iterations 60 \
    --eval-every 1000 --target 0 --compute-cost 50,17 --policies backup:3,bsp --shared-cores 2 \
    --cpu-slice-ms 3 --cpu-wake-preempts "$@" --format tsv 2>/dev/null |
    awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
      { printf "%.3f ", 1000 * $h["seconds_median"] / $h["iterations"] }'
}
read -r b3 bsp <<<"$(ms_per_iteration)" || fail "backup:3 and bsp preempting exited"
read -r b3_credit bsp_credit <<<"$(ms_per_iteration --cpu-wake-credit-ms 6)" ||
  fail "--cpu-wake-credit-ms 6 exited"
echo "ms per iteration without a credit: backup:3 $b3, bsp $bsp; with 6 ms: $b3_credit, $bsp_credit"
awk -v a="$b3_credit" -v b="$b3" 'BEGIN { exit !(a < 0.8 * b) }' ||
  fail "a 6 ms credit left backup:3 at $b3_credit ms an iteration (without: $b3)"
awk -v a="$bsp_credit" -v b="$bsp" 'BEGIN { exit !(a > 0.95 * b && a < 1.05 * b) }' ||
  fail "a 6 ms credit moved BSP to $bsp_credit ms an iteration (without: $bsp)"

# Bad input: one line each, exit 64, nothing run.
expect_usage() {
  local want=$1
  shift
  local rc=0
  "$bench" sim "$@" >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "dmlps-bench sim $*"
  grep -q -- "$want" "$WORK/err" || fail "dmlps-bench sim $*: no '$want' in: $(cat "$WORK/err")"
}
expect_usage "--link-gbps" --link-gbps -1
expect_usage "--latency-us" --latency-us fast
expect_usage "--shared-cores" --shared-cores -2
expect_usage "--jitter" --jitter 0.1,0.2
expect_usage "--heavy-tail must be 0 (none) or above 1" --heavy-tail 0.5
expect_usage "--compute-cost must be A,C" --compute-cost 5
expect_usage "'hsp': unknown" --policies bsp,hsp
expect_usage "--bin does not apply to sim" --bin /tmp
expect_usage "localsgd:H needs a number H" --policies localsgd:x
expect_usage "--shards" --shards 0
expect_usage "--sim-threads" --sim-threads 0
expect_usage "--cpu-slice-ms: needs --shared-cores" --cpu-slice-ms 1.5
expect_usage "--cpu-slice-ms" --shared-cores 2 --cpu-slice-ms -1
expect_usage "--cpu-wake-preempts: needs --cpu-slice-ms" --shared-cores 2 --cpu-wake-preempts
expect_usage "--cpu-wake-credit-ms: needs --cpu-slice-ms" --shared-cores 2 --cpu-wake-credit-ms 6
expect_usage "--cpu-wake-credit-ms" --shared-cores 2 --cpu-slice-ms 3 --cpu-wake-credit-ms -1

# The threads computing gradients change nothing; server shards keep the math
# (the same accuracy) and change only the time.
"$bench" sim "${tiny[@]}" --policies bsp,abps --sim-threads 2 --format tsv >"$WORK/two.tsv" \
  2>/dev/null || fail "--sim-threads 2 exited $?"
"$bench" sim "${tiny[@]}" --policies bsp,abps --sim-threads 1 --format tsv >"$WORK/one.tsv" \
  2>/dev/null || fail "--sim-threads 1 exited $?"
cmp -s "$WORK/one.tsv" "$WORK/two.tsv" || fail "1 and 2 threads gave other tables"
"$bench" sim "${tiny[@]}" --policies bsp --shards 4 --format tsv >"$WORK/sharded.tsv" \
  2>/dev/null || fail "--shards 4 exited $?"
"$bench" sim "${tiny[@]}" --policies bsp --format tsv >"$WORK/single.tsv" 2>/dev/null ||
  fail "one shard exited $?"
[ "$(cut -f7,13 "$WORK/sharded.tsv")" = "$(cut -f7,13 "$WORK/single.tsv")" ] ||
  fail "sharding changed the accuracy: $(cat "$WORK/sharded.tsv" "$WORK/single.tsv")"

# The local-SGD policies have rows of their own, DyLU's too.
"$bench" sim "${tiny[@]}" --policies localsgd:4,async-localsgd:4,async-localsgd-dylu:4 \
  --format tsv >"$WORK/local.tsv" 2>/dev/null || fail "local-SGD policies: exited $?"
expect_tsv "$WORK/local.tsv" "$BENCH_TSV_HEADER" 3
awk -F '\t' 'NR > 1 && !($7 > 0 && $8 > 0) { print; bad = 1 } END { exit bad }' \
  "$WORK/local.tsv" || fail "a local-SGD policy trained nothing"

# dssp and sync-switch have rows of their own, with and without parameters.
"$bench" sim "${tiny[@]}" --policies dssp,dssp:0:2,sync-switch,sync-switch:0.5,sync-switch:online \
  --format tsv >"$WORK/switch.tsv" 2>/dev/null || fail "dssp and sync-switch rows: exited $?"
expect_tsv "$WORK/switch.tsv" "$BENCH_TSV_HEADER" 5
awk -F '\t' 'NR > 1 && !($2 == 1 && $3 == 1 && $7 > 0) { print; bad = 1 } END { exit bad }' \
  "$WORK/switch.tsv" || fail "a dssp or sync-switch row did not reach the target"
cut -f1 "$WORK/switch.tsv" | tr '\n' ' ' |
  grep -q "^policy dssp dssp:0:2 sync-switch sync-switch:0.5 sync-switch:online $" ||
  fail "rows: $(cut -f1 "$WORK/switch.tsv" | tr '\n' ' ')"
expect_usage "dssp:LOW:HIGH needs two whole numbers" --policies dssp:1
expect_usage "sync-switch:FRACTION needs a number" --policies sync-switch:soon
expect_usage "switch-at in \[0, 1\]" --policies sync-switch:2

# Delayed momentum under SSP (docs/algorithms.md, "ASP"): the server steps
# another optimizer, which the title names, and SSP's stale pushes no
# longer each take a momentum step: it reaches the target sooner.
mom=(--workers 4 --model softmax --batch 256 --eval-every 10 --target 0.8 --max-iterations 1000
     --max-seconds 300 --compute-cost 50,12.4 --policies ssp:3)
"$bench" sim "${mom[@]}" --format tsv >"$WORK/every.tsv" 2>/dev/null || fail "ssp:3: exited $?"
"$bench" sim "${mom[@]}" --momentum-every 4 --format table >"$WORK/delayed.txt" 2>/dev/null ||
  fail "ssp:3 --momentum-every 4 (table): exited $?"
grep -q "momentum every 4 pushes" "$WORK/delayed.txt" ||
  fail "the title does not say so: $(head -n 2 "$WORK/delayed.txt")"
"$bench" sim "${mom[@]}" --momentum-every 4 --format tsv >"$WORK/delayed.tsv" 2>/dev/null ||
  fail "ssp:3 --momentum-every 4: exited $?"
every=$(awk -F '\t' 'NR == 2 && $3 == 1 { print $7 }' "$WORK/every.tsv")
delayed=$(awk -F '\t' 'NR == 2 && $3 == 1 { print $7 }' "$WORK/delayed.tsv")
[ -n "$every" ] && [ -n "$delayed" ] ||
  fail "a run missed the target: $(cat "$WORK/every.tsv" "$WORK/delayed.tsv")"
[ "$delayed" -lt "$every" ] ||
  fail "delayed momentum took $delayed iterations, momentum at every push $every"
expect_usage "momentum-every applies to asp, ssp, async-localsgd or dssp" --policies bsp,wbsp \
  --momentum-every 4
echo "ok"
