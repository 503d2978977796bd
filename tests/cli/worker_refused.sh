# While the server waits for --workers, a worker that cannot take part is
# named on the server's side, with why and how many workers are still to
# come: one asking for a rank outside the job (refused), one whose data does
# not fit the model (it leaves), once per reason however often it retries.
# Then two good workers still train the job.
. "$(dirname "$0")/lib.sh"

# Two classes of 4 features for the job; a label the model cannot hold.
for i in $(seq 40); do
  echo "$((i % 2)) 1:0.$((i % 7)) 2:1 3:0.$((i % 3)) 4:$((i % 2))"
done >"$WORK/good.svm"
cp "$WORK/good.svm" "$WORK/good.svm.t"
printf '20 1:0.5 3:1\n1 2:1\n' >"$WORK/bad.svm"
cp "$WORK/bad.svm" "$WORK/bad.svm.t"

start_server --workers 2 --model softmax --data "libsvm:$WORK/good.svm" --max-iterations 20 \
  --eval-every 10
start_worker outside --rank 7 --data "libsvm:$WORK/good.svm"
wait_for "$WORKER_PID" 30
[ "$RC" -ne 0 ] || fail "a worker asking for rank 7 of 2 was not refused"
start_worker baddata --data "libsvm:$WORK/bad.svm"
wait_for "$WORKER_PID" 30
[ "$RC" -ne 0 ] || fail "a worker with data the model cannot hold went on"
for _ in $(seq 50); do
  grep -q 'before training' "$WORK/server.log" && break
  sleep 0.1
done
grep -q "refused a message from peer .*: rank 7 is outside \[0, 1\]; still waiting for 2 of 2 workers$" \
  "$WORK/server.log" || fail "the server did not say whom it refused and why"
grep -q "lost worker 0 (.*) before training: .*class 20 .*; still waiting for 2 of 2 workers$" \
  "$WORK/server.log" || fail "the server did not say which worker left and why"
# A refused worker keeps knocking (heartbeats): said once per reason, not per message.
[ "$(grep -c 'rank 7 is outside' "$WORK/server.log")" -eq 1 ] ||
  fail "the refusal was said $(grep -c 'rank 7 is outside' "$WORK/server.log") times"

start_worker w0 --data "libsvm:$WORK/good.svm"
start_worker w1 --data "libsvm:$WORK/good.svm"
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server after the refusals"
grep "still waiting" "$WORK/server.log"
echo "ok"
