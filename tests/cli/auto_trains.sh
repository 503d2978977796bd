# A 4-worker cluster under --policy auto, the last worker 4x slower than the
# rest, trains mlp:128 on the full Fashion-MNIST to 0.84 test accuracy:
# started under BSP (bsp first in --candidates), it measures the
# straggler and decides, logs and traces, to switch away from BSP
# (docs/auto.md). Then an even cluster under the default
# candidates (it starts under backup:2, where the job's table says auto
# goes on it): it does not flap. Bad candidates
# are refused.
. "$(dirname "$0")/lib.sh"
SLOW_WORKER_ARGS=(--slowdown 4)
train_to_target 4 0.84 --policy auto --candidates bsp,backup:1,ssp:3,lbbsp --model mlp:128 \
  --batch 256 --max-iterations 4000 --eval-every 25 --trace "$WORK/server.trace"
grep -q "policy auto" "$WORK/worker-0.log" || fail "the workers did not run auto"
grep -qE "policy decision at iteration [0-9]+: bsp -> [a-z]" "$WORK/server.log" ||
  fail "no decision logged"
grep -E "policy decision at iteration [0-9]+: bsp -> " "$WORK/server.log" >"$WORK/from-bsp" || true
grep -qv "bsp -> bsp" "$WORK/from-bsp" || fail "no decision away from bsp: $(grep 'policy decision' "$WORK/server.log" | head -3)"
grep -q "policy switch done: bsp -> " "$WORK/server.log" || fail "the switch was not done"
"$BIN/dmlps-trace" summary "$WORK/server.trace" >"$WORK/summary" || fail "summary failed"
grep -qE "^  decision at .*: bsp -> (backup:1|lbbsp|ssp:3) \(switch" "$WORK/summary" ||
  fail "the summary lists no switching decision: $(head -5 "$WORK/summary")"
"$BIN/dmlps-trace" chrome "$WORK/server.trace" >"$WORK/chrome.json" || fail "chrome view failed"
grep -q '"name":"policy decision"' "$WORK/chrome.json" || fail "no decision instant in Chrome view"
grep -q '"predicted":"bsp=' "$WORK/chrome.json" || fail "the decision instant lacks its predictions"

# Even: no straggler, the default candidates (it starts under backup:2).
mv "$WORK/server.log" "$WORK/straggler-server.log"
SLOW_WORKER_ARGS=()
train_to_target 4 0.84 --policy auto --model mlp:128 --batch 256 --max-iterations 4000 \
  --eval-every 25
grep -qE "policy decision at iteration [0-9]+: backup:2 -> " "$WORK/server.log" ||
  fail "no decision under backup:2 on the even cluster: $(grep 'policy decision' "$WORK/server.log" | head -3)"
# On a host shared with other work the workers' steps drift (a worker
# waits for a core), and a decision may follow what it measured; the rule
# still must not flap (a switch pays for itself twice, a gain under 1.5x
# must be read at two decisions 10 iterations apart, BSP must be predicted
# 1.25x as fast, each return 1.25x more than the last): it stays under
# backup:2, and a burst that outlasts two readings may take it away and
# back: at most three switches, only to candidates.
switches=$(grep -c "policy switch done" "$WORK/server.log" || true)
[ "$switches" -le 3 ] || fail "$switches switches on an even cluster"
if grep "policy switch done" "$WORK/server.log" | grep -qvE -- "-> (bsp|backup:[123]|ssp:3|lbbsp) "; then
  fail "a switch outside the candidates: $(grep 'policy switch done' "$WORK/server.log")"
fi

# Candidates it cannot switch into live, and --candidates without auto:
# one line each, exit 64.
rc=0
timeout 60 "$BIN/dmlps-server" --policy auto --candidates bsp,wbsp >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "--candidates bsp,wbsp"
[ "$(grep -c 'error:' "$WORK/err")" -eq 1 ] || fail "not one line: $(cat "$WORK/err")"
grep -q "cannot switch into 'wbsp' live" "$WORK/err" || fail "wbsp: $(cat "$WORK/err")"
rc=0
timeout 60 "$BIN/dmlps-server" --policy bsp --candidates bsp,lbbsp >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "--candidates without auto"
grep -q "candidates applies only to --policy auto" "$WORK/err" || fail "$(cat "$WORK/err")"
echo "ok"
