# A joined peer that never reads its replies: it pulls and pushes for 15 s
# while the server's model replies to it pile up. The server must drop it
# once its send queue is full (naming it in the log), stay within a bounded
# memory, and train a real worker that joins afterwards.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy asp --model mlp:512 --target-accuracy 0.80 \
  --max-iterations 100000 --eval-every 100
attack_rss 15 "$SERVER_PID" "the peer that does not read" noread "$ENDPOINT" 15
# Unbounded, the queued replies (1.6 MB each) grow it by about 200 MiB a second.
expect_rss_within 200 "the server"
grep -q "lost worker 0 (attack-peer:0): it does not read its replies" "$WORK/server.log" ||
  fail "the server did not drop the peer, by name, for not reading"

train_one_worker 300 "the peer that does not read"
echo "ok: $(cat "$WORK/attack.out"); run finished at accuracy $(last_accuracy)"
