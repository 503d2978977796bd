# A peer sending malformed messages (random bytes, truncated headers, another
# protocol version, unknown types, pushes before joining) gets an Error for
# each, and the server still trains the real workers to the target.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 --eval-every 25
"$TEST_BIN/dmlps-test-peer" garbage "$ENDPOINT" >"$WORK/peer.out" 2>"$WORK/peer.log" &
peer=$!
CHILDREN+=("$peer")
wait_for "$peer" 60
rc=$RC
expect_exit 0 "$rc" "garbage peer (did every malformed message get an Error?)"
grep -q "9 of 9 malformed messages refused" "$WORK/peer.out" || fail "not every message was refused"
grep -q "peer speaks protocol version" "$WORK/peer.out" || fail "no version error was reported"
kill -0 "$SERVER_PID" || fail "the server died"
start_worker w0
w0=$WORKER_PID
start_worker w1
w1=$WORKER_PID
wait_for "$SERVER_PID" 300
rc=$RC
expect_exit 0 "$rc" "dmlps-server after garbage"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker 1"
grep -q "refused a message from peer" "$WORK/server.log" || fail "the server logged no refusal"
echo "ok: garbage refused, run finished at accuracy $(last_accuracy)"
