# A peer that sends one multipart message that never ends: 256 KiB frames,
# each under the frame limit, each flagged "more", for 10 s (about 1 GB).
# ZeroMQ holds such a message unseen until its last frame, so the server
# must close the connection once it passes the limit on what a connection
# may send ahead of its whole messages, naming its address in the log, stay
# within a bounded memory while the peer reconnects and goes on, and train a
# real worker afterwards.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy asp --model mlp:512 --target-accuracy 0.80 \
  --max-iterations 100000 --eval-every 100
before=$(server_rss)
"$TEST_BIN/dmlps-attack-peer" stream "$ENDPOINT" 10 >"$WORK/stream.out" 2>"$WORK/stream.log" &
peer=$!
CHILDREN+=("$peer")
watch_rss 10
peak=$RSS_PEAK
wait_for "$peer" 30
expect_exit 0 "$RC" "the peer sending an endless message"
echo "server RSS: $before MiB before, at most $peak MiB during the attack"
# Unbounded, the server holds every byte of it: about 1 GB.
[ "$peak" -le $((before + 150)) ] || fail "the server grew from $before to $peak MiB"
grep -q "closed the connection from 127.0.0.1:[0-9]*: it sent [0-9]* bytes that make no whole message" \
  "$WORK/server.log" || fail "the server did not close the connection, naming it"

start_worker w0
w0=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server after the endless message"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
echo "ok: $(cat "$WORK/stream.out"); run finished at accuracy $(last_accuracy)"
