# A shard beyond 0 killed (kill -9) while the job checkpoints every
# iteration, so mid-checkpoint: shard 0 goes back to its last checkpoint,
# and shard 1, restarted with --resume, takes the version shard 0 went
# back to. Killed again and not restarted, it does not leave shard 0
# waiting forever: after --rejoin-timeout shard 0 stops the workers and
# exits 69, saying which shard did not come back.
. "$(dirname "$0")/lib.sh"

shard1=(--heartbeat-ms 100 --worker-timeout 5 --checkpoint "$WORK/ckpt.1")
start_server --shard 0/2 --workers 2 --policy bsp --model mlp:128 --batch 16 --eval-every 50 \
  --max-seconds 60 --heartbeat-ms 100 --worker-timeout 2 --checkpoint "$WORK/ckpt.0" \
  --checkpoint-every 1 --rejoin-timeout 10
start_shard 1 2 "${shard1[@]}"
shard=$SHARD_PID
workers=()
for r in 0 1; do
  start_worker "w$r" --heartbeat-ms 100 --server-timeout 10 --reconnect-timeout 30
  workers+=("$WORKER_PID")
done
wait_log "$WORK/shard-1.log" "checkpoint of iteration [0-9]+ written" 30
sleep 0.5
kill -9 "$shard"
wait "$shard" 2>/dev/null || true
wait_log "$WORK/server.log" "goes back to its last checkpoint" 10
# Restarted once shard 0 listens again: a Hello sent to the run that is
# closing would be lost with it.
for _ in $(seq 300); do
  [ "$(grep -c 'waiting for the other shards' "$WORK/server.log")" -ge 2 ] && break
  sleep 0.1
done
mv "$WORK/shard-1.log" "$WORK/shard-1-killed.log"
start_shard 1 2 "${shard1[@]}" --resume "$WORK/ckpt.1"
shard=$SHARD_PID
wait_log "$WORK/server.log" "training goes on from iteration" 30
resumed=$(sed -n "s|.*resuming from $WORK/ckpt.0: iteration \([0-9]*\),.*|\1|p" "$WORK/server.log")
grep -qE "resuming from $WORK/ckpt.1( \(the file before it\))?: iteration $resumed," \
  "$WORK/shard-1.log" || fail "shard 1 did not resume iteration $resumed: $(cat "$WORK/shard-1.log")"
echo "shard 1 killed mid-checkpoint; the job went back to iteration $resumed" \
  "$(grep -o '(the file before it)' "$WORK/shard-1.log" || true)"

# Killed again, for good: shard 0 gives up 10 s after it went back (long
# enough that a loaded host restarts shard 1 in time above).
wait_log "$WORK/shard-1.log" "checkpoint of iteration [0-9]+ written" 30
kill -9 "$shard"
wait "$shard" 2>/dev/null || true
start=$(date +%s)
wait_for "$SERVER_PID" 30
expect_exit 69 "$RC" "shard 0 whose lost shard did not come back"
took=$(($(date +%s) - start))
grep -q "error: the job did not come back within --rejoin-timeout 10 s of going back to $WORK/ckpt.0: server shard 1 did not join again" \
  "$WORK/server.log" || fail "no line saying shard 1 did not come back: $(tail -n 5 "$WORK/server.log")"
for pid in "${workers[@]}"; do
  wait_for "$pid" 20
done
echo "shard 1 not restarted: shard 0 exited 69 after $took s"
