#!/usr/bin/env bash
# The server's optimizer flags (docs/optimizers.md) train a real cluster, a
# loss target stops it, and what torch.optim would refuse is refused before
# anything starts, each with a line that names the flag.
. "$(dirname "$0")/lib.sh"

# AdamW with decoupled weight decay except on biases, warmup then cosine,
# clipping, to a loss target: exit 0 once an evaluation's loss is at most 0.75.
start_server --workers 2 --model softmax --policy bsp --optimizer adamw --lr 0.003 \
  --betas 0.9,0.99 --weight-decay 0.01 --param-group '*.bias:weight_decay=0' \
  --clip-grad-norm 5 --lr-schedule cosine:400:0.1 --warmup 20 --target-loss 0.75 \
  --max-iterations 2000 --eval-every 20
start_worker w0
w0=$WORKER_PID
start_worker w1
w1=$WORKER_PID
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server to --target-loss"
wait_for "$w0" 30
wait_for "$w1" 30
grep -qF "optimizer: adamw lr=0.003 betas=0.9,0.99 eps=1e-08 weight_decay=0.01 group *.bias:weight_decay=0, schedule cosine:400:0.1 after 20 warmup steps, gradient norm clipped to 5" \
  "$WORK/server.log" || fail "the log does not describe the optimizer"
grep -q "reached loss" "$WORK/server.log" || fail "the server did not report the loss target"
grep -q "target loss reached" "$WORK/w0.log" || fail "the workers were not told which target"
loss=$(tail -n 1 "$WORK/server.tsv" | cut -f 4)
awk -v l="$loss" 'BEGIN { exit !(l <= 0.75) }' || fail "the last loss $loss is above 0.75"
echo "reached loss $loss: $(tail -n 1 "$WORK/server.tsv")"

# A loss target missed: exit 1, and the log says so.
mv "$WORK/server.log" "$WORK/server-1.log"
start_server --workers 1 --model softmax --optimizer sgd --momentum 0.9 --nesterov \
  --weight-decay 1e-4 --lr-schedule step:5:0.5 --target-loss 0.01 --max-iterations 30 \
  --eval-every 10
start_worker w2
wait_for "$SERVER_PID" 60
expect_exit 1 "$RC" "dmlps-server missing its --target-loss"
grep -q "target loss 0.01 not reached" "$WORK/server.log" || fail "no word on the missed target"

# Refused before anything starts: exit 64 and the flag named.
refuse() {
  local want=$1
  shift
  "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' "$@" >/dev/null 2>"$WORK/refused.log" && RC=0 ||
    RC=$?
  expect_exit 64 "$RC" "dmlps-server $*"
  grep -qF -- "$want" "$WORK/refused.log" || fail "dmlps-server $*: no '$want' in: $(cat "$WORK/refused.log")"
  [ "$(grep -c 'error' "$WORK/refused.log")" -ge 1 ] || fail "dmlps-server $*: no error line"
}
refuse "--optimizer must be sgd, adam or adamw" --optimizer lion
refuse "--momentum is sgd's" --optimizer adamw --momentum 0.9
refuse "--nesterov needs --momentum above 0" --momentum 0 --nesterov
refuse "--betas must be two numbers" --optimizer adam --betas 0.9
refuse "--betas must both be in [0, 1)" --optimizer adam --betas 0.9,1.5
refuse "--lr-schedule: " --lr-schedule cosine:0
refuse "--lr-schedule: " --lr-schedule warm
refuse "--param-group 'x': expected" --param-group x
refuse "--param-group: no group given" --param-group ''
refuse "steps the model with its outer Nesterov SGD" --policy localsgd --optimizer adam
refuse "--target-loss" --target-loss -1
refuse "--target-loss with --model external needs --evaluator" --model external --target-loss 1

# A group that matches no tensor of the model is a configuration error that
# lists the model's tensors (exit 78), found once the model is known.
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --model mlp:16 \
  --param-group '*.biass:weight_decay=0' >/dev/null 2>"$WORK/group.log" && RC=0 || RC=$?
expect_exit 78 "$RC" "a group matching no tensor"
grep -qF "no tensor of the model matches (its tensors: fc0.weight, fc0.bias, fc1.weight, fc1.bias)" \
  "$WORK/group.log" || fail "the refusal does not list the tensors: $(cat "$WORK/group.log")"
echo "ok: optimizer flags train to a loss target and refuse what they cannot do"
