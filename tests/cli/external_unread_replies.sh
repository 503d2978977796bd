# A peer joins the running job of an external model and never reads its
# replies: for 15 s it pulls (each pull earns the model, which the two
# workers' pushes keep changing). The send queue of a peer that connects
# after the model is known holds two replies of the model, as a built-in
# model's does (docs/security.md): the server must drop the peer once that
# queue is full (naming it in the log), keep its memory within what the
# queue holds, and go on training the workers.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --model external --policy asp --max-iterations 100000000 \
  --max-seconds 22 --report "$WORK/report"
start_worker w0 --model mlp:512 --announce-layout
w0=$WORKER_PID
wait_log "$WORK/server.log" "announced the external model" 30
start_worker w1 --model mlp:512 --announce-layout
w1=$WORKER_PID
wait_log "$WORK/server.log" "all 2 workers ready; training starts" 60
params=$(sed -n 's/.*announced the external model: [0-9]* tensors, \([0-9]*\) parameters.*/\1/p' \
  "$WORK/server.log")
sleep 1
before=$(server_rss)
"$TEST_BIN/dmlps-attack-peer" noread-external "$ENDPOINT" 15 mlp:512 >"$WORK/noread.out" \
  2>"$WORK/noread.log" &
peer=$!
CHILDREN+=("$peer")
watch_rss 15
peak=$RSS_PEAK
wait_for "$peer" 30
expect_exit 0 "$RC" "the peer that does not read"
grep -q "lost worker 2 (attack-peer:0): it does not read its replies (send queue is full)" \
  "$WORK/server.log" || fail "the server did not drop the peer, by name, for its full send queue"

# The queue's two replies may hold three versions of the model (a reply's
# chunks share theirs), a fourth may be on its way; 16 MiB more for the
# allocator and ZeroMQ's buffers. The peer sends only pulls: nothing of it
# waits unread. With the queue bound of the largest message (what the
# listener had before the model was known) the server grows by about 33
# replies; unbounded, by hundreds of MiB a second.
bound=$((before + 4 * 4 * params / 1048576 + 16))
echo "server RSS: $before MiB before, at most $peak MiB during the attack (bound $bound MiB)"
[ "$peak" -le "$bound" ] || fail "the server grew from $before to $peak MiB (bound $bound MiB)"

# The workers train on through the attack and after it: the run ends at
# its time limit, and their pace after the peer joined is at least a tenth
# of theirs before (a server stuck on the peer would make none).
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server after the peer that does not read"
for pid in "$w0" "$w1"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "worker $pid"
done
seconds() { sed -n "s/^\([0-9:.]*\) .*$1.*/\1/p" "$WORK/server.log" | head -n 1 |
  awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }'; }
started=$(seconds "workers ready; training starts")
joined=$(seconds "worker 2 (attack-peer:0) trains from")
at_join=$(sed -n 's/.*worker 2 (attack-peer:0) trains from iteration \([0-9]*\);.*/\1/p' \
  "$WORK/server.log")
run=$(report_value "$WORK/report" seconds)
iterations=$(report_value "$WORK/report" iterations)
awk -v s="$started" -v j="$joined" -v r="$run" -v a="$at_join" -v n="$iterations" 'BEGIN {
  before = j - s; if (before < 0) before += 86400  # past midnight
  pace_before = a / before; pace_after = (n - a) / (r - before)
  printf "pace: %.0f iterations/s before the peer, %.0f after (%d iterations in all)\n",
    pace_before, pace_after, n
  exit !(pace_after >= pace_before / 10)
}' || fail "the workers stalled after the peer joined"
echo "ok: $(cat "$WORK/noread.out")"
