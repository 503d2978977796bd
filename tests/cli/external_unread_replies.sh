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
attack_rss 15 "$SERVER_PID" "the peer that does not read" \
  noread-external "$ENDPOINT" 15 mlp:512
grep -q "lost worker 2 (attack-peer:0): it does not read its replies (send queue is full)" \
  "$WORK/server.log" || fail "the server did not drop the peer, by name, for its full send queue"

# The queue's two replies may hold three versions of the model (a reply's
# chunks share theirs), a fourth may be on its way; 16 MiB more for the
# allocator and ZeroMQ's buffers. The peer sends only pulls: nothing of it
# waits unread. With the queue bound of the largest message (what the
# listener had before the model was known) the server grows by about 33
# replies; unbounded, by hundreds of MiB a second.
expect_rss_within $((4 * 4 * params / 1048576 + 16)) "the server"

# The workers train on through the attack and after it: the run ends at
# its time limit, and their pace after the peer joined is at least a tenth
# of theirs before (a server stuck on the peer would make none).
wait_ok 60 "dmlps-server after the peer that does not read" "$SERVER_PID"
wait_ok 30 "worker" "$w0" "$w1"
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
echo "ok: $(cat "$WORK/attack.out")"
