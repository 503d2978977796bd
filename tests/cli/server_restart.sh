# kill -9 the server mid-run and start it again with --resume: the workers
# notice, reconnect on their own, and training goes on from the
# checkpoint's iteration (not from zero) to the target. Prints the
# iterations lost to the fault (done after the last checkpoint, redone).
. "$(dirname "$0")/lib.sh"
args=(--workers 2 --policy bsp --model softmax --batch 32 --lr 0.02 --target-accuracy 0.79
      --eval-every 10 --max-iterations 4000 --max-seconds 100 --heartbeat-ms 200
      --worker-timeout 5 --checkpoint "$WORK/run.ckpt" --checkpoint-every 20)
start_server "${args[@]}"
wargs=(--heartbeat-ms 200 --server-timeout 1 --reconnect-timeout 30 --delay-ms 3)
start_workers 2 w "${wargs[@]}"
wait_log "$WORK/server.log" "checkpoint of iteration [1-9][0-9]* written" 60
wait_iteration 70 60
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
saved=$(sed -n 's/.*checkpoint of iteration \([0-9]*\) written.*/\1/p' "$WORK/server.log" | tail -n 1)
# The iteration the run had reached: at least its last evaluation or checkpoint.
killed_at=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
[ "$saved" -gt "$killed_at" ] && killed_at=$saved
[ -s "$WORK/run.ckpt" ] || fail "no checkpoint file"

# Back on the same address, from the checkpoint.
restart_server "${args[@]}" --resume "$WORK/run.ckpt" --report "$WORK/report"
wait_ok 120 "resumed dmlps-server" "$SERVER_PID"
wait_ok 30 "worker" "${WORKERS[@]}"
# The kill may land after a checkpoint's rename but before its log line, so
# the file can hold a later iteration than the last one logged.
resumed=$(sed -n "s|.*resuming from $WORK/run.ckpt: iteration \([0-9]*\),.*|\1|p" "$WORK/server.log")
[ -n "$resumed" ] || fail "the server did not say which iteration it resumed from"
[ "$resumed" -ge "$saved" ] && [ "$resumed" -gt 0 ] && [ $((resumed % 20)) -eq 0 ] ||
  fail "the server resumed from iteration $resumed, not a checkpoint at or after $saved"
saved=$resumed
[ "$saved" -gt "$killed_at" ] && killed_at=$saved
grep -q "training goes on from iteration $saved" "$WORK/server.log" || fail "training did not go on"
[ "$(report_value "$WORK/report" resumed_iteration)" = "$saved" ] || fail "resumed_iteration"
first=$(sed -n 2p "$WORK/server.tsv" | cut -f 2)
[ "$first" = "$saved" ] || fail "the first evaluation is at iteration $first, not $saved"
for name in w0 w1; do
  grep -q "rejoined the server at $ENDPOINT" "$WORK/$name.log" || fail "$name did not rejoin"
done
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
echo "ok: killed at iteration >= $killed_at, resumed from $saved (>= $((killed_at - saved))" \
  "iterations lost), accuracy at resume $(sed -n 2p "$WORK/server.tsv" | cut -f 3)," \
  "target $(report_value "$WORK/report" accuracy) at iteration" \
  "$(report_value "$WORK/report" iterations_to_target)"
