# --min-workers: with 2 of 2 needed and one killed, training holds (nothing
# fails); a new worker joins the running job, is given the lost worker's
# rank, the current model and a shard, training goes on, the newcomer's
# pushes count, and the run reaches the target. A third worker joining on
# top gets a new rank and contributes too.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --min-workers 2 --policy bsp --model softmax --batch 32 --lr 0.02 \
  --target-accuracy 0.81 --eval-every 10 --max-iterations 4000 --max-seconds 100 \
  --heartbeat-ms 200 --worker-timeout 1.5 --report "$WORK/report"
wargs=(--heartbeat-ms 200 --delay-ms 4)
start_worker w0 "${wargs[@]}"
w0=$WORKER_PID
start_worker w1 "${wargs[@]}"
w1=$WORKER_PID
wait_iteration 10 60
kill -9 "$w1"
wait_log "$WORK/server.log" "training holds: 1 live worker, fewer than --min-workers 2" 20
lost=$(sed -n 's/.*lost worker \([0-9]*\) .*/\1/p' "$WORK/server.log" | head -n 1)
held_at=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
sleep 1
# Held: no evaluation moves past the iteration where it stopped (one more
# round may close with the survivor's push).
now=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
[ "$now" -le $((held_at + 10)) ] || fail "training went on below --min-workers ($held_at -> $now)"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server gave up below --min-workers"
start_worker w2 "${wargs[@]}"
w2=$WORKER_PID
wait_log "$WORK/server.log" "worker $lost joins the running job" 30
wait_log "$WORK/server.log" "training goes on with 2 live workers" 60
start_worker w3 "${wargs[@]}"
w3=$WORKER_PID
wait_log "$WORK/server.log" "worker 2 joins the running job" 30
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server"
for w in "$w0" "$w2" "$w3"; do
  wait_for "$w" 30
  expect_exit 0 "$RC" "worker $w"
done
wait "$w1" 2>/dev/null || true
grep -q "worker $lost of 2: policy bsp" "$WORK/w2.log" || fail "the newcomer did not get rank $lost"
grep -q "worker 2 of 2: policy bsp" "$WORK/w3.log" || fail "the third worker did not get rank 2"
for name in w2 w3; do
  steps=$(sed -n 's/.*stopped by the server (.*): \([0-9]*\) steps.*/\1/p' "$WORK/$name.log")
  [ "${steps:-0}" -gt 0 ] || fail "$name made no steps"
done
for rank in "$lost" 2; do
  grep -qE "worker $rank: [1-9][0-9]* steps, [1-9][0-9]* samples" "$WORK/server.log" ||
    fail "the server counted no pushes from worker $rank"
done
[ "$(report_value "$WORK/report" workers_joined)" = 2 ] || fail "workers_joined is not 2"
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
echo "ok: held at iteration $held_at, accuracy $(report_value "$WORK/report" accuracy) at" \
  "iteration $(report_value "$WORK/report" iterations_to_target);" \
  "newcomers: $(grep -oE "worker ($lost|2): [0-9]+ steps" "$WORK/server.log" | tr '\n' ' ')"
