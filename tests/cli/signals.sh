# SIGTERM ends a running server with 143 after telling its workers to stop;
# they exit 0. SIGINT to a worker waiting for its cluster ends it with 130,
# and the server, told so, ends the run with 1 instead of waiting forever.
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
# The worker tells the server why it leaves, so the server does not wait for
# it forever: the run is lost (exit 1) with the reason on stderr.
wait_for "$SERVER_PID" 30
expect_exit 1 "$RC" "server that lost a worker"
grep -q "error: lost worker 0: worker interrupted" "$WORK/server.log" || fail "no reason given"
echo "ok: signals end runs cleanly"
