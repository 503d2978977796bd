# A worker with no server to talk to exits 69 with a one-line error, on TCP
# and on IPC, within its --connect-timeout.
. "$(dirname "$0")/lib.sh"
# A loopback port that nothing listens on: bind one, note it, let it go.
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/ep" --workers 1 \
  >/dev/null 2>"$WORK/probe.log" &
probe=$!
CHILDREN+=("$probe")
for _ in $(seq 100); do [ -s "$WORK/ep" ] && break; sleep 0.1; done
addr=$(cat "$WORK/ep")
kill "$probe"
wait "$probe" 2>/dev/null || true
for server in "$addr" "ipc://$WORK/nobody.sock"; do
  start=$(date +%s)
  rc=0
  "$BIN/dmlps-worker" --server "$server" --connect-timeout 1 2>"$WORK/worker.log" || rc=$?
  took=$(($(date +%s) - start))
  expect_exit 69 "$rc" "worker against $server"
  grep -q "dmlps-worker: error: no server answered at $server within 1 s" "$WORK/worker.log" ||
    fail "unexpected message: $(cat "$WORK/worker.log")"
  [ "$(wc -l <"$WORK/worker.log")" -eq 1 ] || fail "more than one line of error"
  [ "$took" -le 5 ] || fail "took $took s to give up"
done
echo "ok: exit 69 on TCP and IPC"
