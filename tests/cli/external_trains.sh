# A server of --model external learns the model from the first of 2
# workers that announce softmax's layout; an evaluator process scores the
# snapshots, and the run reaches its target accuracy as with a built-in
# model. A worker announcing another layout, or none, is refused with the
# first difference and exits with one line.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --model external --evaluator --policy bsp --batch 32 --lr 0.02 \
  --target-accuracy 0.79 --eval-every 10 --max-iterations 20000 --max-seconds 100 \
  --report "$WORK/report"
start_worker w0 --model softmax --announce-layout
w0=$WORKER_PID
wait_log "$WORK/server.log" "announced the external model: 2 tensors, 7850 parameters" 30

# Refused before the run starts: another layout, no layout.
"$BIN/dmlps-worker" --server "$ENDPOINT" --model mlp:16 --announce-layout \
  2>"$WORK/mismatch.log" && fail "a worker of another layout was admitted"
grep -q "error: the server refused this worker: the worker's layout is not the external" \
  "$WORK/mismatch.log" || fail "no refusal in the mismatching worker's message"
grep -qF "tensor 0 'fc0.weight': shape [16,784], the model has [10,784]" "$WORK/mismatch.log" ||
  fail "the refusal does not name the first difference"
[ "$(grep -c error "$WORK/mismatch.log")" -eq 1 ] || fail "more than one error line"
"$BIN/dmlps-worker" --server "$ENDPOINT" --model softmax 2>"$WORK/silent.log" &&
  fail "a worker announcing no layout was admitted"
grep -q "it announces none" "$WORK/silent.log" || fail "no reason for a worker without layout"

start_worker w1 --model softmax --announce-layout
w1=$WORKER_PID
wait_log "$WORK/server.log" "training starts once the evaluator has joined" 30
finish_with_evaluator softmax "dmlps-server" "$w0" "$w1"
grep -q "evaluating snapshots of the server at .* (model external, 7850 parameters)" \
  "$WORK/evaluator.log" || fail "the evaluator did not say what it evaluates"
grep -q "stopped by the server (.*): [1-9][0-9]* snapshots" \
  "$WORK/evaluator.log" || fail "the evaluator was not stopped by the server"
head -n 1 "$WORK/server.tsv" | grep -q $'^seconds\titeration\taccuracy\tloss$' ||
  fail "the TSV header is missing"
expect_accuracy 0.79
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
# Stamped with the snapshot's time: the TSV's seconds never exceed the run's.
awk -F '\t' -v end="$(report_value "$WORK/report" seconds)" \
  'NR > 1 && $1 > end + 0.001 { exit 1 }' "$WORK/server.tsv" ||
  fail "an evaluation is stamped after the run's end"
echo "reached accuracy $ACCURACY: $(tail -n 1 "$WORK/server.tsv")"
