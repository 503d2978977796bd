# Routing-id squatting: a peer connects DEALERs whose ids are those a ROUTER
# would number its anonymous peers with if its counter were predictable,
# then one with no id (which libzmq would number into a taken id and abort
# on). The server must survive, and a real worker still trains.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy asp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 --max-connections 40

"$TEST_BIN/dmlps-attack-peer" squat "$ENDPOINT" 32 >"$WORK/squat.out" 2>"$WORK/squat.log" &
peer=$!
CHILDREN+=("$peer")
wait_for "$peer" 30
expect_exit 0 "$RC" "squatting peer"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server died under the squatting peer"

"$TEST_BIN/dmlps-attack-peer" squat "$ENDPOINT" 8 >>"$WORK/squat.out" 2>>"$WORK/squat.log" &
peer=$!
CHILDREN+=("$peer")
sleep 0.3
start_worker w0
w0=$WORKER_PID
wait_for "$peer" 30
expect_exit 0 "$RC" "squatting peer"
# Aborted (134) when a worker joining among squatted ids kills it.
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server after the squatting peer"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
echo "ok: $(tr '\n' ' ' <"$WORK/squat.out"); run finished at accuracy $(last_accuracy)"
