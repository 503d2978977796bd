# A real 2-worker run writes traces from every process; merged and turned
# into Chrome JSON they hold every worker's compute spans, the server's
# applies and evaluations, and the summary names the emulated straggler.
. "$(dirname "$0")/lib.sh"
WORKER_ARGS=()
start_server --workers 2 --policy bsp --max-iterations 150 --eval-every 50 --trace "$WORK/server.trace"
start_worker w0 --rank 0 --trace "$WORK/w0.trace"
w0=$WORKER_PID
start_worker w1 --rank 1 --slowdown 4 --trace "$WORK/w1.trace"
w1=$WORKER_PID
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "traced server"
wait_for "$w0" 30
expect_exit 0 "$RC" "traced worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "traced worker 1"
for f in server w0 w1; do [ -s "$WORK/$f.trace" ] || fail "no trace from $f"; done

"$BIN/dmlps-trace" merge "$WORK/server.trace" "$WORK/w0.trace" "$WORK/w1.trace" >"$WORK/merged.trace" ||
  fail "merge failed"
"$BIN/dmlps-trace" chrome - <"$WORK/merged.trace" >"$WORK/run.json" || fail "chrome failed"
if command -v python3 >/dev/null; then
  python3 - "$WORK/run.json" <<'PY' || fail "the Chrome JSON is not what it should be"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
steps = {}
for e in events:
    if e.get("ph") == "X" and e.get("name") == "step":
        steps[names[e["pid"]]] = steps.get(names[e["pid"]], 0) + 1
assert set(steps) == {"worker-0", "worker-1"}, steps
assert all(n >= 150 for n in steps.values()), steps
assert any(e.get("ph") == "X" and e.get("name") == "apply" for e in events)
assert any(e.get("ph") == "C" and e.get("name") == "accuracy" for e in events)
assert any(e.get("ph") == "C" and e.get("name") == "bytes_sent" for e in events)
pushes = [e for e in events if e.get("ph") == "X" and e.get("name") == "push"]
assert pushes and all(e["args"]["memory"] > 1 << 20 for e in pushes), "push spans lack memory"
assert any(e["args"]["cpu"] > 0 for e in pushes), "push spans lack CPU use"
print("chrome:", steps)
PY
else
  grep -q '"traceEvents"' "$WORK/run.json" || fail "no traceEvents in the Chrome JSON"
fi
"$BIN/dmlps-trace" summary "$WORK/server.trace" "$WORK/w0.trace" "$WORK/w1.trace" >"$WORK/summary.txt" || fail "summary failed"
cat "$WORK/summary.txt"
grep -q "worker-1" "$WORK/summary.txt" || fail "worker-1 missing from the summary"
grep -i "straggler" "$WORK/summary.txt" | grep -q "worker-1" || fail "worker-1 not reported as a straggler"
echo "ok: traced run merged, exported and summarised"
