# kill -9 a CURVE server mid-run and start it again with --resume and the
# same keys: the CURVE workers notice, rejoin over CURVE on their own (a
# rejoin without their keys would be refused at the handshake until
# --reconnect-timeout), and training goes on from the checkpoint to the
# target.
. "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/allowed"
"$BIN/dmlps-keygen" -q "$WORK/server" "$WORK/allowed/w0" "$WORK/allowed/w1" >/dev/null
args=(--workers 2 --policy bsp --model softmax --batch 32 --lr 0.02 --target-accuracy 0.79
      --eval-every 10 --max-iterations 4000 --max-seconds 100 --heartbeat-ms 200
      --worker-timeout 5 --checkpoint "$WORK/run.ckpt" --checkpoint-every 20
      --curve-secret "$WORK/server.key" --curve-allow "$WORK/allowed")
start_server "${args[@]}"
grep -q "CURVE on: .*2 worker keys admitted" "$WORK/server.log" ||
  fail "the server did not turn CURVE on"
wargs=(--heartbeat-ms 200 --server-timeout 1 --reconnect-timeout 30 --delay-ms 3
       --curve-server-key "$WORK/server.pub")
start_worker w0 "${wargs[@]}" --curve-secret "$WORK/allowed/w0.key"
w0=$WORKER_PID
start_worker w1 "${wargs[@]}" --curve-secret "$WORK/allowed/w1.key"
w1=$WORKER_PID
wait_log "$WORK/server.log" "checkpoint of iteration [1-9][0-9]* written" 60
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
[ -s "$WORK/run.ckpt" ] || fail "no checkpoint file"

# Back on the same address, from the checkpoint, with the same keys.
restart_server "${args[@]}" --resume "$WORK/run.ckpt" --report "$WORK/report"
# The workers first: one that cannot rejoin gives up after --reconnect-timeout.
for w in "$w0" "$w1"; do
  wait_for "$w" 120
  expect_exit 0 "$RC" "worker $w"
done
wait_for "$SERVER_PID" 30
expect_exit 0 "$RC" "resumed dmlps-server"
grep -q "refused a connection" "$WORK/server.log" && fail "a rejoin was refused"
for name in w0 w1; do
  grep -q "rejoined the server at $ENDPOINT" "$WORK/$name.log" || fail "$name did not rejoin"
done
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
echo "ok: both CURVE workers rejoined the restarted CURVE server; target" \
  "$(report_value "$WORK/report" accuracy) at iteration" \
  "$(report_value "$WORK/report" iterations_to_target)"
