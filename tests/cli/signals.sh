# SIGTERM ends a running server with 143 after telling its workers to stop;
# they exit 0. SIGINT to a worker waiting for its cluster ends it with 130,
# and the server, told so, counts it lost and waits for another.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy ssp --staleness 2
start_worker w0 --slowdown 2
w0=$WORKER_PID
start_worker w1
w1=$WORKER_PID
for _ in $(seq 300); do grep -q "workers ready; training starts" "$WORK/server.log" && break; sleep 0.1; done
grep -q "workers ready; training starts" "$WORK/server.log" || fail "training did not start"
sleep 1
kill -TERM "$SERVER_PID"
wait_for "$SERVER_PID" 30
expect_exit 143 "$RC" "server after SIGTERM"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0 after the server stopped"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker 1 after the server stopped"
grep -q "server interrupted" "$WORK/w0.log" || fail "the worker was not told why"

start_server --workers 3
start_worker lone
lone=$WORKER_PID
for _ in $(seq 100); do grep -q "joined" "$WORK/server.log" && break; sleep 0.1; done
kill -INT "$lone"
wait_for "$lone" 30
expect_exit 130 "$RC" "worker after SIGINT"
# The worker tells the server why it leaves: the server logs the loss and
# its rank is free again for the next worker; SIGTERM then ends the server.
for _ in $(seq 100); do grep -q "lost worker 0 .*worker interrupted" "$WORK/server.log" && break; sleep 0.1; done
grep -q "lost worker 0 .*worker interrupted" "$WORK/server.log" || fail "no reason given"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server ended the run for a lost worker"
kill -TERM "$SERVER_PID"
wait_for "$SERVER_PID" 30
expect_exit 143 "$RC" "server after SIGTERM"
echo "ok: signals end runs cleanly"
