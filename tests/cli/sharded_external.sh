# --model external on sharded servers: shard 0 learns the layout and the
# initial values from the first worker's Hello and sends each other shard
# the layout and its slice of those values when it registers, which it does
# only then. 1 shard and 2 shards, with 2 workers under BSP and
# --deterministic, end with the same model bit for bit (the slices started
# from the first worker's values), and a 2-shard run with an evaluator
# trains to its target. Checkpointed and resumed on every shard, 1 shard
# and 2 shards again end with the same model bit for bit.
. "$(dirname "$0")/lib.sh"

# cluster SHARDS TAG CKPT SERVER-ARGS...: shard 0, SHARDS - 1 more and 2
# workers announcing softmax, to the end; TAG.model is the whole model
# saved. CKPT: none; save (every shard checkpoints to TAG.ckpt.K, every 10
# iterations); resume (the same, from TAG.ckpt.K).
cluster() {
  local shards=$1 tag=$2 ckpt=$3
  shift 3
  # ckpt_args K: shard K's checkpoint flags.
  ckpt_args() {
    [ "$ckpt" = none ] && return
    printf '%s\n' --checkpoint "$WORK/$tag.ckpt.$1"
    [ "$1" = 0 ] && printf '%s\n' --checkpoint-every 10
    [ "$ckpt" = resume ] && printf '%s\n' --resume "$WORK/$tag.ckpt.$1"
  }
  local flags
  mapfile -t flags < <(ckpt_args 0)
  start_server --shard "0/$shards" --workers 2 --model external --save-model "$WORK/$tag.0" \
    "${flags[@]}" "$@"
  CLUSTER_SHARDS=("$SERVER_PID")
  for ((k = 1; k < shards; k++)); do
    mapfile -t flags < <(ckpt_args "$k")
    "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard "$k/$shards" --coordinator "$ENDPOINT" \
      --save-model "$WORK/$tag.$k" "${flags[@]}" 2>"$WORK/$tag-shard-$k.log" &
    CLUSTER_SHARDS+=($!)
    CHILDREN+=($!)
  done
  CLUSTER_WORKERS=()
  for r in 0 1; do
    start_worker "$tag-worker-$r" --rank "$r" --model softmax --announce-layout
    CLUSTER_WORKERS+=("$WORKER_PID")
  done
  finish_cluster "$tag" "$shards"
}

same=(--policy bsp --batch 32 --lr 0.02 --seed 7 --max-iterations 30 --deterministic)
cluster 1 one none "${same[@]}"
cluster 2 two none "${same[@]}"
[ "$(stat -c %s "$WORK/one.model")" -eq $((7850 * 4)) ] || fail "one.model is not 7850 floats"
grep -q "model external, 2 tensors, parameters \[3925, 7850) of 7850" "$WORK/two-shard-1.log" ||
  fail "shard 1 does not hold the second half of the external model: $(cat "$WORK/two-shard-1.log")"
cmp "$WORK/one.model" "$WORK/two.model" ||
  fail "1 shard and 2 shards of the external model ended with different models"
echo "1 shard and 2 shards of an external model: the same 7850 parameters bit for bit"

# Checkpointed: 25 iterations (checkpoints at 10 and 20), then every shard
# resumed from its own file to 40; the layout comes from the checkpoints.
cluster 1 onec save "${same[@]/30/25}"
cluster 1 onec resume "${same[@]/30/40}"
cluster 2 twoc save "${same[@]/30/25}"
cluster 2 twoc resume "${same[@]/30/40}"
grep -q "resuming from $WORK/twoc.ckpt.1: iteration 20, model version" "$WORK/twoc-shard-1.log" ||
  fail "shard 1 did not resume from iteration 20: $(cat "$WORK/twoc-shard-1.log")"
cmp "$WORK/onec.model" "$WORK/twoc.model" ||
  fail "resumed, 1 shard and 2 shards of the external model ended with different models"
cmp -s "$WORK/one.model" "$WORK/onec.model" && fail "40 iterations ended where 30 did"
echo "resumed from iteration 20: 1 shard and 2 shards of an external model end the same"

# To a target, scored by an evaluator process.
start_server --shard 0/2 --workers 2 --model external --evaluator --policy bsp --batch 32 \
  --lr 0.02 --target-accuracy 0.79 --eval-every 10 --max-iterations 20000 --max-seconds 100
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  2>"$WORK/shard-1.log" &
shard=$!
CHILDREN+=("$shard")
start_worker w0 --model softmax --announce-layout
w0=$WORKER_PID
start_worker w1 --model softmax --announce-layout
w1=$WORKER_PID
wait_log "$WORK/server.log" "training starts once the evaluator has joined" 30
start_worker evaluator --model softmax --evaluator
ev=$WORKER_PID
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "shard 0 of the external model"
for pid in "$shard" "$w0" "$w1" "$ev"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "process $pid"
done
grep -q "connected to 2 server shards" "$WORK/w0.log" || fail "worker 0 did not use both shards"
acc=$(last_accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.79) }' || fail "final accuracy $acc is below 0.79"
echo "2 shards, external model: reached accuracy $acc: $(tail -n 1 "$WORK/server.tsv")"
