# Hostile input: a rogue peer sends messages over --max-message-bytes, a
# message of too many frames and a frame over the limit; then, once one real
# worker has joined (the server waits for the second, so the run cannot end
# before the flood does), a flood of new identities far beyond
# --max-connections, all at once. The server answers or refuses each, logs
# it, remembers none of them, still admits the second worker, and trains
# both to the target.
. "$(dirname "$0")/lib.sh"
limit=2000000
start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 --max-message-bytes "$limit" --max-connections 6

"$TEST_BIN/dmlps-test-peer" oversized "$ENDPOINT" "$limit" >"$WORK/oversized.out" 2>"$WORK/oversized.log" &
peer=$!
CHILDREN+=("$peer")
wait_for "$peer" 60
expect_exit 0 "$RC" "oversized peer (was each message refused?)"
grep -q "message over the limit: refused: message of [0-9]* bytes (at most $limit" "$WORK/oversized.out" ||
  fail "the message over the limit was not refused with its size"
grep -q "too many frames: refused: message of 1035 frames" "$WORK/oversized.out" ||
  fail "the message of too many frames was not refused"

start_worker w0
w0=$WORKER_PID
for _ in $(seq 300); do
  grep -q "worker 0 joined" "$WORK/server.log" && break
  sleep 0.1
done
grep -q "worker 0 joined" "$WORK/server.log" || fail "worker 0 did not join within 30 s"

"$TEST_BIN/dmlps-test-peer" flood "$ENDPOINT" 60 >"$WORK/flood.out" 2>"$WORK/flood.log" &
peer=$!
CHILDREN+=("$peer")
wait_for "$peer" 60
expect_exit 0 "$RC" "flood peer (did every connection get an answer?)"
read -r answered _ _ _ _ refused _ <"$WORK/flood.out"
[ "$answered" -le 6 ] || fail "$answered flood connections reached the server, over the limit of 6"
[ "$refused" -ge 54 ] || fail "only $refused flood connections were refused"
grep -q "refused a connection from address .*too many connections" "$WORK/server.log" ||
  fail "the server did not log the refused connections"
[ "$(grep -c "too many connections" "$WORK/server.log")" -le 2 ] ||
  fail "the refused connections flooded the log"
kill -0 "$SERVER_PID" || fail "the server died"

start_worker w1
w1=$WORKER_PID

wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server after the hostile peers"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker 1"
echo "ok: $(cat "$WORK/flood.out"); run finished at accuracy $(last_accuracy)"
