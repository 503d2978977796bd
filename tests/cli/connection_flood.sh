# A burst of idle connections far beyond --max-connections: they finish the
# ZeroMQ handshake and then never say Hello. Workers that come afterwards
# must still get in (each takes the place of the oldest idle connection
# that has been open for a second), and the run completes.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 --max-connections 4
"$TEST_BIN/dmlps-attack-peer" idle "$ENDPOINT" 40 8 >"$WORK/idle.out" 2>"$WORK/idle.log" &
peer=$!
CHILDREN+=("$peer")
wait_log "$WORK/server.log" "too many connections" 20
sleep 1.5
start_worker w0
w0=$WORKER_PID
start_worker w1
w1=$WORKER_PID
# Refused at the handshake, a worker would wait for an answer in vain.
wait_log "$WORK/server.log" "worker 0 joined" 30
wait_log "$WORK/server.log" "worker 1 joined" 30
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server after the flood of idle connections"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker 1"
wait_for "$peer" 30
expect_exit 0 "$RC" "the idle peer"
grep -q "closed the connection from 127.0.0.1:[0-9]*: it has not joined in [0-9]* ms" \
  "$WORK/server.log" || fail "the server did not log the idle connection it closed"
echo "ok: run finished at accuracy $(last_accuracy)"
