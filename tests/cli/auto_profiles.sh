# auto-profiles.sh, shrunk to two profiles in the simulator: each fixed
# policy's median per profile, the best, auto's and their ratio, the
# totals, both criteria as PASS or FAIL, the policy auto ran the most (from
# the JSON tables kept) and the confusion table; --summary re-reads the
# tables, and refuses when one is missing, keeping the summary it had.
. "$(dirname "$0")/lib.sh"
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/auto-profiles.sh"
"$script" --bin "$BIN" --repeat 1 --sim 4 --profiles none,slow --out "$WORK/out" -- \
  --target 0 --max-iterations 40 --model softmax --batch 16 --eval-every 10 \
  --compute-cost 50,12.4 >"$WORK/summary" 2>"$WORK/err" || fail "auto-profiles.sh exited $?: $(tail -3 "$WORK/err")"
cat "$WORK/summary"
for profile in none slow; do
  grep -qE "^$profile +([0-9.]+ +){4}(bsp|backup:1|ssp:3|lbbsp) +[0-9.]+ +[0-9.]+ +[0-9.]+ +(yes|NO) +(bsp|backup:1|ssp:3|lbbsp) " \
    "$WORK/summary" || fail "no summary row for $profile"
done
grep -qE "^total +([0-9.]+ +){4}[0-9.]+$" "$WORK/summary" || fail "no totals row"
# The policy auto ran most is the one of the most iterations in its runs'
# ran_under, which starts with backup:1 (where auto starts on four workers)
# and adds up to the run.
for profile in none slow; do
  most=$(/usr/bin/python3 - "$WORK/out/sim-4-$profile.json" <<'PY'
import json, sys
ran = {}
for run in json.load(open(sys.argv[1]))["runs"]:
    if run["policy"] != "auto":
        continue
    spans = run["ran_under"]
    assert spans and spans[0]["policy"] == "backup:1", spans
    assert sum(s["iterations"] for s in spans) == run["iterations"], run
    for s in spans:
        ran[s["policy"]] = ran.get(s["policy"], 0) + s["iterations"]
print(max(ran, key=lambda p: (ran[p], p)))  # ties as stats.py breaks them
PY
  ) || fail "auto's ran_under in sim-4-$profile.json"
  grep -qE "^$profile +.* (yes|NO) +$most " "$WORK/summary" || fail "auto ran $most most under $profile"
done
grep -qE "^criterion: auto within 1.1x .*: (PASS|FAIL)$" "$WORK/summary" || fail "no 1.1x criterion"
grep -qE "^criterion: auto's total below .*: (PASS|FAIL)$" "$WORK/summary" || fail "no total criterion"
grep -qE "^auto chose the best or one within 5% of it in [0-2] of 2 cases$" "$WORK/summary" ||
  fail "no count of right choices"
grep -q "^confusion" "$WORK/summary" || fail "no confusion table"

# --summary: the same summary from the tables kept, no runs.
cp "$WORK/out/sim-4-summary.txt" "$WORK/first"
"$script" --bin "$BIN" --sim 4 --profiles none,slow --out "$WORK/out" --summary >"$WORK/again" ||
  fail "--summary exited $?"
diff "$WORK/first" "$WORK/out/sim-4-summary.txt" || fail "--summary differs"
rc=0
"$script" --bin "$BIN" --sim 4 --profiles delay --out "$WORK/out" --summary >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 66 "$rc" "--summary without the delay table"
grep -q "no table .*sim-4-delay.json" "$WORK/err" || fail "unclear error: $(cat "$WORK/err")"
cmp -s "$WORK/first" "$WORK/out/sim-4-summary.txt" || fail "a refused --summary changed the summary kept"

# With -v the simulator logs auto's decisions as the server does.
"$BIN/dmlps-bench" sim -v --workers 4 --policies auto --slowdown 1,1,1,4 --target 0 \
  --max-iterations 30 --model softmax --batch 16 --compute-cost 50,12.4 >/dev/null 2>"$WORK/sim.log" ||
  fail "sim -v exited $?: $(tail -3 "$WORK/sim.log")"
grep -qE "auto \(1/1\): at [0-9.]+ virtual s, policy decision at iteration [0-9]+: backup:1 -> [a-z:0-9]+ \(.*\); measured: steps ms .*worker-3 steadily" \
  "$WORK/sim.log" || fail "no decision logged: $(grep -c decision "$WORK/sim.log")"
echo "ok"
