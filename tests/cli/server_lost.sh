# A worker whose server is killed and never comes back keeps retrying, then
# exits 69 with a one-line error within --server-timeout + --reconnect-timeout.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --model softmax --batch 32 --eval-every 10 --heartbeat-ms 200
start_worker w0 --heartbeat-ms 200 --server-timeout 1 --reconnect-timeout 3 --delay-ms 2
w0=$WORKER_PID
wait_iteration 10 60
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start=$(date +%s)
wait_for "$w0" 15
took=$(($(date +%s) - start))
expect_exit 69 "$RC" "worker without a server"
grep -q "reconnecting for up to 3 s" "$WORK/w0.log" || fail "the worker did not try to reconnect"
grep -q "dmlps-worker: error: the server at $ENDPOINT did not come back within 3 s" "$WORK/w0.log" ||
  fail "unexpected message: $(tail -n 2 "$WORK/w0.log")"
[ "$(grep -c "error:" "$WORK/w0.log")" -eq 1 ] || fail "more than one line of error"
[ "$took" -le 8 ] || fail "took $took s to give up"
echo "ok: exit 69 after $took s"
