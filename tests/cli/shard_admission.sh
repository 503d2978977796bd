# A rogue peer against server shard 1 of 2: it says Hello there claiming a
# worker's rank, once the rank a real worker holds and once a rank nobody
# holds yet, without the ticket shard 0 gives each worker it admits. Shard 1
# must welcome neither (it refuses each once shard 0 has not vouched for it
# within 10 s), must cut off a message that never ends, and the run trains
# to the target with the real workers.
. "$(dirname "$0")/lib.sh"
start_server --shard 0/2 --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  --endpoint-file "$WORK/shard-1.endpoint" 2>"$WORK/shard-1.log" &
shard=$!
CHILDREN+=("$shard")
for _ in $(seq 300); do
  [ -s "$WORK/shard-1.endpoint" ] && break
  sleep 0.1
done
[ -s "$WORK/shard-1.endpoint" ] || fail "shard 1 did not listen within 30 s"
shard_endpoint=$(cat "$WORK/shard-1.endpoint")

start_worker w0 --rank 0
w0=$WORKER_PID
wait_log "$WORK/server.log" "worker 0 joined" 30
claims=()
for rank in 0 1; do
  "$TEST_BIN/dmlps-attack-peer" claim "$shard_endpoint" "$rank" >"$WORK/claim-$rank.out" \
    2>"$WORK/claim-$rank.log" &
  claims+=($!)
  CHILDREN+=($!)
done
for rank in 0 1; do
  wait_for "${claims[$rank]}" 30
  expect_exit 0 "$RC" "the peer claiming rank $rank"
  grep -q "^refused: shard 0 has not admitted it as worker $rank" "$WORK/claim-$rank.out" ||
    fail "shard 1 did not refuse the claim on rank $rank: $(cat "$WORK/claim-$rank.out")"
done

# Shard 1 bounds what one connection may send ahead of its whole messages
# by its slice's size, as shard 0 does: a message that never ends is cut
# off long before the 640 MB this peer sends.
"$TEST_BIN/dmlps-attack-peer" stream "$shard_endpoint" 5 >"$WORK/stream.out" 2>"$WORK/stream.log" &
peer=$!
CHILDREN+=("$peer")
wait_for "$peer" 30
expect_exit 0 "$RC" "the peer sending an endless message to shard 1"
grep -q "closed the connection from 127.0.0.1:[0-9]*: it sent [0-9]* bytes that make no whole message" \
  "$WORK/shard-1.log" || fail "shard 1 did not close the connection of the endless message"

start_worker w1 --rank 1
w1=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "shard 0 after the rogue peer"
wait_for "$shard" 60
expect_exit 0 "$RC" "shard 1 after the rogue peer"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker 1"
echo "ok: rank 0: $(cat "$WORK/claim-0.out"); rank 1: $(cat "$WORK/claim-1.out"); run finished at accuracy $(last_accuracy)"
