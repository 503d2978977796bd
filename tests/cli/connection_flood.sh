# Connection floods far beyond --max-connections, of connections that finish
# the ZeroMQ handshake and then never say Hello. Workers that come during
# or after them must still get in, and the run completes:
# - idle: a burst of 40 held open; each worker takes the place of the
#   oldest that has been open for a second;
# - churn: 20 from another address (127.0.0.2), each closed and opened
#   again every 50 ms, so that none is ever a second old; the host holding
#   the most connections that have not joined gives way to the workers'
#   host, and the log names it.
. "$(dirname "$0")/lib.sh"
for flood in idle churn; do
  start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
    --eval-every 25 --max-connections 4
  if [ "$flood" = idle ]; then
    "$TEST_BIN/dmlps-attack-peer" idle "$ENDPOINT" 40 8 >"$WORK/flood.out" 2>"$WORK/flood.log" &
  else
    "$TEST_BIN/dmlps-attack-peer" churn "tcp://127.0.0.2:0;127.0.0.1:${ENDPOINT##*:}" 20 40 \
      >"$WORK/flood.out" 2>"$WORK/flood.log" &
  fi
  peer=$!
  CHILDREN+=("$peer")
  wait_log "$WORK/server.log" "too many connections" 20
  [ "$flood" = idle ] && sleep 1.5
  start_worker w0
  w0=$WORKER_PID
  start_worker w1
  w1=$WORKER_PID
  # Refused at the handshake, a worker would wait for an answer in vain.
  wait_log "$WORK/server.log" "worker 0 joined" 30
  wait_log "$WORK/server.log" "worker 1 joined" 30
  if [ "$flood" = churn ]; then
    kill -0 "$peer" 2>/dev/null || fail "churn: the flood ended before the workers joined"
  fi
  wait_for "$SERVER_PID" 300
  expect_exit 0 "$RC" "dmlps-server after the $flood flood"
  wait_for "$w0" 30
  expect_exit 0 "$RC" "worker 0"
  wait_for "$w1" 30
  expect_exit 0 "$RC" "worker 1"
  if [ "$flood" = idle ]; then
    wait_for "$peer" 30
    expect_exit 0 "$RC" "the idle peer"
    grep -q "closed the connection from 127.0.0.1:[0-9]*: it has not joined in [0-9]* ms" \
      "$WORK/server.log" || fail "the server did not log the idle connection it closed"
  else
    kill "$peer"
    wait "$peer" 2>/dev/null || true
    line=$(grep -m 1 "127.0.0.2 holds [0-9]* of the [0-9]* connections that have not joined" \
      "$WORK/server.log") || fail "churn: the server did not name the flooding address"
    echo "${line#*warning: }"
  fi
  echo "ok: $flood flood: run finished at accuracy $(last_accuracy)"
  rm -f "$WORK"/*.log "$WORK"/*.tsv
done
