# A 3-worker cluster under post-localsgd trains mlp:128 for 40 rounds: 20 of
# one local step each (mini-batch SGD), then, once half the run is done
# (--switch-at 0.5 of --max-iterations), 20 of H = 4. The switch is logged
# once, at iteration 20; each worker's local steps add up to that; the model
# learns.
. "$(dirname "$0")/lib.sh"
start_server --workers 3 --policy post-localsgd --local-steps 4 --switch-at 0.5 \
  --max-iterations 40 --eval-every 10 --model mlp:128
start_workers 3 worker-
wait_ok 300 dmlps-server "$SERVER_PID"
wait_ok 30 dmlps-worker "${WORKERS[@]}"
[ "$(grep -c "policy switch done" "$WORK/server.log")" -eq 1 ] ||
  fail "not one switch: $(grep "policy switch" "$WORK/server.log")"
grep -q "policy switch done: localsgd:1 -> localsgd:4 at iteration 20 " "$WORK/server.log" ||
  fail "the switch: $(grep "policy switch" "$WORK/server.log")"
# 20 rounds of 1 step and 20 of 4; a worker may start one round more while
# the last snapshot is evaluated.
for r in 0 1 2; do
  steps=$(grep -oE "[0-9]+ steps," "$WORK/worker-$r.log" | tail -n 1 | cut -d ' ' -f 1)
  [ -n "$steps" ] || fail "worker-$r logged no step count"
  awk -v s="$steps" 'BEGIN { exit !(s >= 100 && s <= 104) }' ||
    fail "worker-$r took $steps local steps, not 20 + 20 * 4"
done
acc=$(last_accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "final accuracy $acc is below 0.6"
echo "post-localsgd: switched at iteration 20, accuracy $acc"
