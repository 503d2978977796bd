# A checkpoint of an external model records its layout; --resume takes the
# layout from it and refuses workers announcing another one, and a run of
# another model refuses the checkpoint. Without an evaluator an external
# run logs no accuracy, and --target-accuracy is a usage error (sharded
# external runs: sharded_external.sh).
. "$(dirname "$0")/lib.sh"
"$BIN/dmlps-server" --model external --target-accuracy 0.8 2>"$WORK/usage.log" && RC=0 || RC=$?
expect_exit 64 "$RC" "--target-accuracy without --evaluator"
grep -q "needs --evaluator: the server cannot compute an external model's accuracy" \
  "$WORK/usage.log" || fail "the usage error does not say why"

start_server --workers 1 --model external --policy bsp --max-iterations 100 \
  --checkpoint "$WORK/run.ckpt" --checkpoint-every 20
start_worker w0 --model softmax --announce-layout
wait_ok 60 "dmlps-server" "$SERVER_PID"
wait_ok 30 "dmlps-worker" "$WORKER_PID"
grep -q "this run logs no accuracy" "$WORK/server.log" || fail "no word on the missing evaluator"
[ "$(wc -l <"$WORK/server.tsv")" -eq 1 ] || fail "evaluations without an evaluator"
grep -q "checkpoint of iteration 100 written" "$WORK/server.log" || fail "no final checkpoint"
grep -qa "fc0.weight" "$WORK/run.ckpt" || fail "the checkpoint records no layout"

# A built-in model refuses the external checkpoint.
"$BIN/dmlps-server" --model softmax --resume "$WORK/run.ckpt" 2>"$WORK/builtin.log" && RC=0 ||
  RC=$?
[ "$RC" -ne 0 ] || fail "a softmax run resumed an external model's checkpoint"
grep -q "external" "$WORK/builtin.log" || fail "the refusal does not name the checkpoint's model"

mv "$WORK/server.log" "$WORK/server-1.log"
start_server --workers 1 --model external --policy bsp --max-iterations 200 \
  --resume "$WORK/run.ckpt" --report "$WORK/report"
wait_log "$WORK/server.log" "resuming from $WORK/run.ckpt: iteration 100" 30
"$BIN/dmlps-worker" --server "$ENDPOINT" --model mlp:16 --announce-layout \
  2>"$WORK/mismatch.log" && fail "a worker of another layout joined the resumed run"
grep -qF "tensor 0 'fc0.weight': shape [16,784], the model has [10,784]" "$WORK/mismatch.log" ||
  fail "the refusal does not name the first difference from the checkpoint's layout"
start_worker w1 --model softmax --announce-layout
wait_ok 60 "resumed dmlps-server" "$SERVER_PID"
wait_ok 30 "dmlps-worker after resume" "$WORKER_PID"
[ "$(report_value "$WORK/report" resumed_iteration)" = 100 ] || fail "resumed_iteration"
[ "$(report_value "$WORK/report" iterations)" = 200 ] || fail "the resumed run did not go on"

# An external run refuses a built-in model's checkpoint.
start_server --workers 1 --model softmax --max-iterations 20 --checkpoint "$WORK/soft.ckpt" \
  --checkpoint-every 10
start_worker w2 --model softmax
wait_ok 60 "softmax dmlps-server" "$SERVER_PID"
wait_ok 30 "softmax dmlps-worker" "$WORKER_PID"
"$BIN/dmlps-server" --model external --resume "$WORK/soft.ckpt" 2>"$WORK/soft.log" && RC=0 ||
  RC=$?
[ "$RC" -ne 0 ] || fail "an external run resumed a softmax checkpoint"
grep -q "records no layout" "$WORK/soft.log" || fail "the refusal does not say why"
echo "ok: checkpoint with layout, resumed from iteration 100 to 200"
