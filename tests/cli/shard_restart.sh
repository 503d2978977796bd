# A lost server shard does not end a job that checkpoints: 2 shards, 3
# workers under BSP, a checkpoint every 10 iterations; shard 1 is killed -9
# mid-run and restarted with --resume of its own checkpoint. Shard 0 notices,
# tells the workers and shard 1's peers to go back to the last checkpoint,
# starts over from its own on the same address, and the run reaches its
# target. Prints the iterations lost (the iteration reached before the kill
# minus the one resumed from) and the accuracy reached.
. "$(dirname "$0")/lib.sh"

start_checkpointing_shards 50
shard=$SHARD_PID
wait_log "$WORK/shard-1.log" "checkpoint of iteration [1-9][0-9]* written" 30
wait_iteration 20 30
kill -9 "$shard"
wait "$shard" 2>/dev/null || true
# Shard 0 notices within --worker-timeout and goes back; shard 1 comes back.
wait_log "$WORK/server.log" "goes back to its last checkpoint" 10
killed_at=$(sed -n 's/.* at iteration \([0-9]*\); the job goes back.*/\1/p' "$WORK/server.log")
[ -n "$killed_at" ] || fail "shard 0 did not say which iteration it had reached"
mv "$WORK/shard-1.log" "$WORK/shard-1-killed.log"
start_shard 1 2 "${SHARD1_ARGS[@]}" --resume "$WORK/ckpt.1"
wait_ok 45 "dmlps-server --shard 0/2 after shard 1 came back" "$SERVER_PID"
wait_ok 20 "a member of the job" "$SHARD_PID" "${WORKERS[@]}"
resumed=$(sed -n "s|.*resuming from $WORK/ckpt.0: iteration \([0-9]*\),.*|\1|p" "$WORK/server.log")
[ -n "$resumed" ] || fail "shard 0 did not go back to its checkpoint"
grep -qE "resuming from $WORK/ckpt.1( \(the file before it\))?: iteration $resumed," \
  "$WORK/shard-1.log" ||
  fail "shard 1 did not resume iteration $resumed: $(grep resum "$WORK/shard-1.log")"
grep -q "training goes on from iteration $resumed" "$WORK/server.log" || fail "training did not go on"
for r in 0 1 2; do
  grep -q "rejoined the server" "$WORK/w$r.log" || fail "worker $r did not rejoin"
done
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
[ "$resumed" -le "$killed_at" ] && [ $((killed_at - resumed)) -le 20 ] ||
  fail "resumed from $resumed, reached $killed_at: more than a checkpoint interval or two lost"
echo "shard 1 lost at iteration $killed_at, the job resumed from $resumed" \
  "($((killed_at - resumed)) iterations lost); accuracy $(report_value "$WORK/report" accuracy)" \
  "at iteration $(report_value "$WORK/report" iterations_to_target)"
