# Checkpoints of sharded servers. Every shard writes its own file at the
# version shard 0 decides; all shards stopped and started again with
# --resume go on from the saved iteration: the model a 2-shard run resumed
# reaches is bit for bit the one a 1-shard run resumed reaches
# (--deterministic), and a resumed 2-shard run trains to a target. A file of
# another shard, shard count or version is refused with one line (exit 65).
. "$(dirname "$0")/lib.sh"

# run_cluster (lib.sh): 3 workers; each shard checkpoints (save) or goes on
# from its checkpoint (resume).
same=(--policy bsp --model mlp:32 --batch 32 --seed 11 --eval-every 10 --deterministic)
# 25 iterations, checkpoints at 10 and 20; then 20 more from iteration 20.
run_cluster 1 3 one save "${same[@]}" --max-iterations 25
run_cluster 1 3 one resume "${same[@]}" --max-iterations 40
grep -q "resuming from $WORK/one.ckpt.0: iteration 20," "$WORK/server.log" ||
  fail "1 shard did not resume from iteration 20: $(grep resum "$WORK/server.log")"
run_cluster 2 3 two save "${same[@]}" --max-iterations 25
grep -q "checkpoint of iteration 20 written to $WORK/two.ckpt.1" "$WORK/two-shard-1.log" ||
  fail "shard 1 did not write its checkpoint of iteration 20"
cp "$WORK/two.ckpt.1" "$WORK/two.ckpt.1.at20"
run_cluster 2 3 two resume "${same[@]}" --max-iterations 40
grep -q "resuming from $WORK/two.ckpt.0: iteration 20," "$WORK/server.log" ||
  fail "shard 0 did not resume from iteration 20"
grep -q "resuming from $WORK/two.ckpt.1: iteration 20, model version" "$WORK/two-shard-1.log" ||
  fail "shard 1 did not resume from iteration 20: $(cat "$WORK/two-shard-1.log")"
grep -q "training goes on from iteration 20" "$WORK/server.log" || fail "training did not go on"
params=$((784 * 32 + 32 + 32 * 10 + 10))
[ "$(stat -c %s "$WORK/one.model")" -eq $((params * 4)) ] || fail "one.model is not $params floats"
cmp "$WORK/one.model" "$WORK/two.model" ||
  fail "resumed, 1 shard and 2 shards ended with different models"
echo "resumed from iteration 20: 1 shard and 2 shards end with the same $params parameters"

# A checkpoint every iteration of a model whose slices are sent in chunks:
# a shard's checkpoint waits for the replies still streaming, and writes its
# file when they are out (it used to write through a dead stack frame then).
EVERY=1 run_cluster 2 3 big save --policy bsp --model mlp:1024 --batch 32 --seed 3 --eval-every 100 \
  --max-iterations 80
# One at the end of each iteration before the limit: 79.
written=$(grep -c "checkpoint of iteration .* written to $WORK/big.ckpt.1" "$WORK/big-shard-1.log")
[ "$written" -eq 79 ] || fail "shard 1 wrote $written checkpoints, not 79"
grep -q "checkpoint of iteration 79 written to $WORK/big.ckpt.0" "$WORK/server.log" ||
  fail "shard 0 did not write its checkpoint of iteration 79"
echo "2 shards of mlp:1024 checkpointed every iteration: shard 1 wrote $written files"

# --- Files that do not fit are refused with one line, exit 65.
expect_refused() {
  local what=$1 want=$2
  wait_for "$SHARD_PID" 20
  expect_exit 65 "$RC" "$what"
  grep -q "$want" "$WORK/shard-1.log" || fail "$what: $(cat "$WORK/shard-1.log")"
  [ "$(grep -c 'error' "$WORK/shard-1.log")" -eq 1 ] || fail "$what: not one line"
}
# Shard 0's file given to shard 1: refused before it registers.
start_server --shard 0/2 --workers 1 --model mlp:32 --max-seconds 30
start_shard 1 2 --resume "$WORK/two.ckpt.0"
expect_refused "shard 0's checkpoint on shard 1" "the checkpoint of server shard 0/2, this is shard 1/2"
# Shard 1 of 2's file given to shard 1 of 3.
start_shard 1 3 --resume "$WORK/two.ckpt.1"
expect_refused "a 2-shard checkpoint on shard 1/3" "the checkpoint of server shard 1/2, this is shard 1/3"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
# Another model: shard 0 of mlp:16 and shard 1 with its mlp:32 file.
start_server --shard 0/2 --workers 1 --model mlp:16 --max-seconds 30
start_shard 1 2 --resume "$WORK/two.ckpt.1"
expect_refused "an mlp:32 checkpoint on an mlp:16 job" "a checkpoint of model mlp:32"
wait_for "$SERVER_PID" 20
expect_exit 69 "$RC" "shard 0 of a shard that gave up"
# Another version than shard 0's: shard 0 at iteration 40, shard 1 at 20.
start_server --shard 0/2 --workers 1 "${same[@]}" --resume "$WORK/two.ckpt.0" --max-seconds 30
start_shard 1 2 --resume "$WORK/two.ckpt.1.at20"
expect_refused "a checkpoint of another version" "shard 0 resumed version"
wait_for "$SERVER_PID" 20
# --checkpoint-every is shard 0's.
RC=0
"$BIN/dmlps-server" --shard 1/2 --coordinator "$ENDPOINT" --checkpoint "$WORK/x" \
  --checkpoint-every 5 2>"$WORK/usage.err" || RC=$?
expect_exit 64 "$RC" "--checkpoint-every on shard 1"
grep -q -- "--checkpoint-every is for shard 0" "$WORK/usage.err" || fail "$(cat "$WORK/usage.err")"

# --- Stopped and resumed, a 2-shard run trains to a target.
# softmax_job PART SHARD-1-ARGS -- SHARD-0-ARGS...: 2 shards, 2 workers, to the end.
softmax_job() {
  local part=$1 shard1=$2
  shift 2
  start_server --shard 0/2 --workers 2 --policy bsp --model softmax --batch 32 --lr 0.02 \
    --eval-every 10 "$@"
  local pids=("$SERVER_PID")
  # shellcheck disable=SC2086
  start_shard 1 2 $shard1
  pids+=("$SHARD_PID")
  for w in t0 t1; do
    start_worker "$w"
    pids+=("$WORKER_PID")
  done
  for pid in "${pids[@]}"; do
    wait_for "$pid" 120
    expect_exit 0 "$RC" "$part (pid $pid)"
  done
}
softmax_job "first part" "--checkpoint $WORK/t.ckpt.1" --checkpoint "$WORK/t.ckpt.0" \
  --checkpoint-every 20 --max-iterations 60
softmax_job "resumed part" "--resume $WORK/t.ckpt.1" --resume "$WORK/t.ckpt.0" \
  --target-accuracy 0.8 --max-iterations 2000 --report "$WORK/report"
grep -q "training goes on from iteration 60" "$WORK/server.log" || fail "did not go on from 60"
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
echo "2 shards resumed from iteration 60: accuracy $(report_value "$WORK/report" accuracy)" \
  "at iteration $(report_value "$WORK/report" iterations_to_target)"
