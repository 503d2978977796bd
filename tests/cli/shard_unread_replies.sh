# A joined peer that reads server shard 0's replies but never shard 1's: it
# pulls and pushes for 15 s while shard 1's slices of the model pile up for
# it. Shard 1 bounds its send queue by its slice's size, which it learns
# only after it binds, as shard 0 does by the model's: it must drop the peer
# once that queue is full (naming it in its log) and stay within a bounded
# memory; a real worker then trains to the target.
. "$(dirname "$0")/lib.sh"
start_server --shard 0/2 --workers 1 --policy asp --model mlp:512 --target-accuracy 0.80 \
  --max-iterations 100000 --eval-every 100
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  2>"$WORK/shard-1.log" &
shard=$!
CHILDREN+=("$shard")
wait_log "$WORK/server.log" "server shard 1 .* registered" 30
wait_log "$WORK/shard-1.log" "parameters \[" 30
rss() { awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$shard/status"; }
before=$(rss)
"$TEST_BIN/dmlps-attack-peer" noread-shard "$ENDPOINT" 15 >"$WORK/noread.out" \
  2>"$WORK/noread.log" &
peer=$!
CHILDREN+=("$peer")
peak=$before
for _ in $(seq 30); do
  sleep 0.5
  kill -0 "$shard" 2>/dev/null || fail "shard 1 died during the attack"
  now=$(rss)
  if [ "$now" -gt "$peak" ]; then peak=$now; fi
done
wait_for "$peer" 30
expect_exit 0 "$RC" "the peer that does not read shard 1's replies"
echo "shard 1 RSS: $before MiB before, at most $peak MiB during the attack"
# Unbounded, the queued slices (0.8 MB each) grow it by about 100 MiB a second.
[ "$peak" -le $((before + 200)) ] || fail "shard 1 grew from $before to $peak MiB"
grep -q "shard 1: dropped worker 0: it does not read its replies" "$WORK/shard-1.log" ||
  fail "shard 1 did not drop the peer, by name, for not reading"

start_worker w0
w0=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "shard 0 after the peer that does not read"
wait_for "$shard" 60
expect_exit 0 "$RC" "shard 1 after the peer that does not read"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
echo "ok: $(cat "$WORK/noread.out"); run finished at accuracy $(last_accuracy)"
