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
attack_rss 10 "$SERVER_PID" "the peer sending an endless message" stream "$ENDPOINT" 10
# Unbounded, the server holds every byte of it: about 1 GB.
expect_rss_within 150 "the server"
grep -q "closed the connection from 127.0.0.1:[0-9]*: it sent [0-9]* bytes that make no whole message" \
  "$WORK/server.log" || fail "the server did not close the connection, naming it"

train_one_worker 300 "the endless message"
echo "ok: $(cat "$WORK/attack.out"); run finished at accuracy $(last_accuracy)"
