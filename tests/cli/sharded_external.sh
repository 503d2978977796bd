# --model external on sharded servers: shard 0 learns the layout and the
# initial values from the first worker's Hello and sends each other shard
# the layout and its slice of those values when it registers, which it does
# only then. 1 shard and 2 shards, with 2 workers under BSP and
# --deterministic, end with the same model bit for bit (the slices started
# from the first worker's values), and a 2-shard run with an evaluator
# trains to its target. Checkpointed and resumed on every shard, 1 shard
# and 2 shards again end with the same model bit for bit.
. "$(dirname "$0")/lib.sh"

# run_cluster (lib.sh): 2 workers announcing softmax.
CLUSTER_WORKER_ARGS=(--model softmax --announce-layout)
same=(--model external --policy bsp --batch 32 --lr 0.02 --seed 7 --max-iterations 30 --deterministic)
run_cluster 1 2 one none "${same[@]}"
run_cluster 2 2 two none "${same[@]}"
[ "$(stat -c %s "$WORK/one.model")" -eq $((7850 * 4)) ] || fail "one.model is not 7850 floats"
grep -q "model external, 2 tensors, parameters \[3925, 7850) of 7850" "$WORK/two-shard-1.log" ||
  fail "shard 1 does not hold the second half of the external model: $(cat "$WORK/two-shard-1.log")"
cmp "$WORK/one.model" "$WORK/two.model" ||
  fail "1 shard and 2 shards of the external model ended with different models"
echo "1 shard and 2 shards of an external model: the same 7850 parameters bit for bit"

# Checkpointed: 25 iterations (checkpoints at 10 and 20), then every shard
# resumed from its own file to 40; the layout comes from the checkpoints.
run_cluster 1 2 onec save "${same[@]/30/25}"
run_cluster 1 2 onec resume "${same[@]/30/40}"
run_cluster 2 2 twoc save "${same[@]/30/25}"
run_cluster 2 2 twoc resume "${same[@]/30/40}"
grep -q "resuming from $WORK/twoc.ckpt.1: iteration 20, model version" "$WORK/twoc-shard-1.log" ||
  fail "shard 1 did not resume from iteration 20: $(cat "$WORK/twoc-shard-1.log")"
cmp "$WORK/onec.model" "$WORK/twoc.model" ||
  fail "resumed, 1 shard and 2 shards of the external model ended with different models"
cmp -s "$WORK/one.model" "$WORK/onec.model" && fail "40 iterations ended where 30 did"
echo "resumed from iteration 20: 1 shard and 2 shards of an external model end the same"

# To a target, scored by an evaluator process.
start_server --shard 0/2 --workers 2 --model external --evaluator --policy bsp --batch 32 \
  --lr 0.02 --target-accuracy 0.79 --eval-every 10 --max-iterations 20000 --max-seconds 100
start_shard 1 2
shard=$SHARD_PID
start_workers 2 w --model softmax --announce-layout
wait_log "$WORK/server.log" "training starts once the evaluator has joined" 30
finish_with_evaluator softmax "shard 0 of the external model" "$shard" "${WORKERS[@]}"
grep -q "connected to 2 server shards" "$WORK/w0.log" || fail "worker 0 did not use both shards"
expect_accuracy 0.79
echo "2 shards, external model: reached accuracy $ACCURACY: $(tail -n 1 "$WORK/server.tsv")"
