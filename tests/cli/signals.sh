# SIGTERM ends a running server with 143 after telling its workers to stop;
# they exit 0. SIGINT to a worker waiting for its cluster ends it with 130,
# and the server, told so, counts it lost and waits for another.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy ssp --staleness 2
start_worker w0 --slowdown 2
w0=$WORKER_PID
start_worker w1
w1=$WORKER_PID
# Every wait is long enough for a sanitized build on a loaded machine.
wait_log "$WORK/server.log" "workers ready; training starts" 60
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
wait_log "$WORK/server.log" "joined" 60
kill -INT "$lone"
wait_for "$lone" 30
expect_exit 130 "$RC" "worker after SIGINT"
# The worker tells the server why it leaves: the server logs the loss and
# its rank is free again for the next worker; SIGTERM then ends the server.
wait_log "$WORK/server.log" "lost worker 0 .*worker interrupted" 60
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server ended the run for a lost worker"
kill -TERM "$SERVER_PID"
wait_for "$SERVER_PID" 30
expect_exit 143 "$RC" "server after SIGTERM"
echo "ok: signals end runs cleanly"
