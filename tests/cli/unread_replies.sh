# A joined peer that never reads its replies: it pulls and pushes for 15 s
# while the server's model replies to it pile up. The server must drop it
# once its send queue is full (naming it in the log), stay within a bounded
# memory, and train a real worker that joins afterwards.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy asp --model mlp:512 --target-accuracy 0.80 \
  --max-iterations 100000 --eval-every 100
before=$(server_rss)
"$TEST_BIN/dmlps-attack-peer" noread "$ENDPOINT" 15 >"$WORK/noread.out" 2>"$WORK/noread.log" &
peer=$!
CHILDREN+=("$peer")
watch_rss 15
peak=$RSS_PEAK
wait_for "$peer" 30
expect_exit 0 "$RC" "the peer that does not read"
echo "server RSS: $before MiB before, at most $peak MiB during the attack"
# Unbounded, the queued replies (1.6 MB each) grow it by about 200 MiB a second.
[ "$peak" -le $((before + 200)) ] || fail "the server grew from $before to $peak MiB"
grep -q "lost worker 0 (attack-peer:0): it does not read its replies" "$WORK/server.log" ||
  fail "the server did not drop the peer, by name, for not reading"

start_worker w0
w0=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server after the peer that does not read"
wait_for "$w0" 30
expect_exit 0 "$RC" "worker 0"
echo "ok: $(cat "$WORK/noread.out"); run finished at accuracy $(last_accuracy)"
