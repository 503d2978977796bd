# CURVE: a worker whose key the server lists trains to the target over an
# encrypted connection; workers with an unknown key, with no key, or
# without the server's real key are refused at the handshake, never reach
# the server (no push, no pull), and exit with a clear error within their
# timeout, while the run goes on.
. "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/allowed" "$WORK/other"
"$BIN/dmlps-keygen" -q "$WORK/server" "$WORK/allowed/w0" "$WORK/other/stranger" >/dev/null
start_server --workers 1 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 --curve-secret "$WORK/server.key" --curve-allow "$WORK/allowed"
grep -q "CURVE on: .*1 worker key admitted" "$WORK/server.log" || fail "the server did not turn CURVE on"

# An unknown key, twice: refused both times, logged once.
for attempt in 1 2; do
  start_worker "stranger-$attempt" --curve-secret "$WORK/other/stranger.key" \
    --curve-server-key "$WORK/server.pub" --connect-timeout 20
  wait_for "$WORKER_PID" 30
  expect_exit 78 "$RC" "worker with an unknown key"
  grep -q "refused this client's key" "$WORK/stranger-$attempt.log" ||
    fail "the stranger was not told why: $(cat "$WORK/stranger-$attempt.log")"
done
stranger_key=$(grep -v '^#' "$WORK/other/stranger.pub")
[ "$(grep -cF "refused a connection from key $stranger_key" "$WORK/server.log")" -eq 1 ] ||
  fail "the refusal of the stranger's key was not logged exactly once"

# No key at all.
start_worker plain --connect-timeout 20
wait_for "$WORKER_PID" 30
expect_exit 78 "$RC" "worker without a key"
grep -q "requires CURVE" "$WORK/plain.log" || fail "the plain worker was not told why"

# The right own key but a wrong server key: the handshake cannot complete.
start_worker lost --curve-secret "$WORK/allowed/w0.key" \
  --curve-server-key "$WORK/other/stranger.pub" --connect-timeout 20
wait_for "$WORKER_PID" 30
[ "$RC" -eq 78 ] || [ "$RC" -eq 69 ] || fail "worker with a wrong server key: exit $RC"

# Nobody got in: no worker joined, no message was refused at the protocol level.
grep -q "joined from" "$WORK/server.log" && fail "a refused worker joined"
grep -q "refused a message" "$WORK/server.log" && fail "a refused worker's message reached the server"

# The listed worker trains, and the server's key may also be given inline.
server_key=$(grep -v '^#' "$WORK/server.pub")
start_worker w0 --curve-secret "$WORK/allowed/w0.key" --curve-server-key "$server_key"
wait_ok 300 "dmlps-server" "$SERVER_PID"
wait_ok 30 "the allowed worker" "$WORKER_PID"
grep -q "reached accuracy" "$WORK/server.log" || fail "the target was not reached"
echo "ok: refused 4 intruders, trained to $(last_accuracy) over CURVE"
