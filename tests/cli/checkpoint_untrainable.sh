# A checkpoint that passes every check of its file but holds a model that
# cannot train is refused at --resume with one line and exit 65: values
# beyond --resume-max-value (1e12 by default), on one server and on either
# shard of two; and, with the bound off, a model whose first evaluation
# after the resume gives a loss that is not finite stops there, exit 65,
# rather than train on with every update refused.
. "$(dirname "$0")/lib.sh"

write_good_checkpoint 20
craft_checkpoint "$WORK/good.ckpt" "$WORK/params.ckpt" params=1e30
craft_checkpoint "$WORK/good.ckpt" "$WORK/momentum.ckpt" momentum=3e38
craft_checkpoint "$WORK/good.ckpt" "$WORK/overflow.ckpt" params=3e38

# one_line LOG WANT WHAT: LOG has one error line, and it says WANT.
one_line() {
  grep -q "^dmlps-server: error: .*$2" "$1" || fail "$3: no '$2' in: $(cat "$1")"
  [ "$(grep -c "error" "$1")" -eq 1 ] || fail "$3: more than one line of error: $(cat "$1")"
}
refused() {  # FILE WANT ARGS...
  local file=$1 want=$2 rc=0
  shift 2
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --workers 1 --model softmax \
    --batch 32 --resume "$file" "$@" >/dev/null 2>"$WORK/resume.log" || rc=$?
  expect_exit 65 "$rc" "dmlps-server --resume $(basename "$file") $*"
  one_line "$WORK/resume.log" "$want" "$(basename "$file")"
}
refused "$WORK/params.ckpt" "params.ckpt: parameter 0 is 1e+30, beyond --resume-max-value 1e+12: a model that cannot train"
refused "$WORK/momentum.ckpt" "momentum.ckpt: optimizer state value 0 is 3e+38, beyond --resume-max-value 1e+12"
refused "$WORK/params.ckpt" "beyond --resume-max-value 1e+29" --resume-max-value 1e29
echo "values beyond the bound refused: $(sed 's/^dmlps-server: error: //' "$WORK/resume.log")"

# With the bound off, 3e38 everywhere overflows on its way to a loss: the
# first evaluation (of the model as resumed) stops the run and the worker.
resume_and_train() {  # FILE ARGS...
  local file=$1
  shift
  start_server --workers 1 --model softmax --batch 32 --resume "$file" --max-iterations 2000 \
    --eval-every 10 "$@"
  start_worker w1
  wait_for "$SERVER_PID" 60
}
resume_and_train "$WORK/overflow.ckpt" --resume-max-value 0
expect_exit 65 "$RC" "dmlps-server resuming a model that overflows"
one_line "$WORK/server.log" \
  "overflow.ckpt: the model resumed has a loss of .* on the test set (iteration 20): a model that cannot train; training stopped" \
  "the overflowing model"
wait_for "$WORKER_PID" 30
grep -q "training stopped" "$WORK/w1.log" || fail "the worker was not told: $(cat "$WORK/w1.log")"
[ "$(awk -F '\t' 'NR > 1 { n++ } END { print n + 0 }' "$WORK/server.tsv")" -le 2 ] ||
  fail "it trained on: $(cat "$WORK/server.tsv")"
echo "a model overflowing at its first evaluation stopped: $(grep -o 'the model resumed.*' "$WORK/server.log")"
# The good file trains on (the check does not refuse a sane model).
resume_and_train "$WORK/good.ckpt" --max-iterations 40
expect_exit 0 "$RC" "dmlps-server resuming the good checkpoint"

# --- Sharded: each shard checks its own file.
shards_run() {  # TAG RESUME SHARD0-ARGS -- SHARD1-ARGS
  local tag=$1 resume=$2 s0=() s1=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do s0+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  s1=("$@")
  local from0=() from1=()
  if [ "$resume" = 1 ]; then
    from0=(--resume "$WORK/$tag.ckpt.0")
    from1=(--resume "$WORK/$tag.ckpt.1")
  fi
  start_server --shard 0/2 --workers 1 --model softmax --batch 32 --eval-every 10 \
    --heartbeat-ms 100 --worker-timeout 2 "${from0[@]}" "${s0[@]}"
  start_shard 1 2 --heartbeat-ms 100 --worker-timeout 2 "${from1[@]}" "${s1[@]}"
  start_worker w1
}
shards_run s 0 --checkpoint "$WORK/s.ckpt.0" --checkpoint-every 10 --max-iterations 20 -- \
  --checkpoint "$WORK/s.ckpt.1"
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "the sharded run writing checkpoints"
wait_for "$SHARD_PID" 30
cp "$WORK/s.ckpt.0" "$WORK/good.ckpt.0"
cp "$WORK/s.ckpt.1" "$WORK/good.ckpt.1"
# Shard 1's file beyond the bound: shard 1 refuses it (65), shard 0 ends (69).
craft_checkpoint "$WORK/good.ckpt.1" "$WORK/s.ckpt.1" params=1e30
shards_run s 1
wait_for "$SHARD_PID" 30
expect_exit 65 "$RC" "shard 1 resuming 1e30"
one_line "$WORK/shard-1.log" "s.ckpt.1: parameter 0 is 1e+30, beyond --resume-max-value 1e+12" "shard 1"
wait_for "$SERVER_PID" 30
expect_exit 69 "$RC" "shard 0 of a shard that refused its file"
# Shard 0's file beyond it: shard 0 refuses it before it listens (65).
craft_checkpoint "$WORK/good.ckpt.0" "$WORK/s.ckpt.0" momentum=3e38
cp "$WORK/good.ckpt.1" "$WORK/s.ckpt.1"
rc=0
timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 0/2 --workers 1 --model softmax \
  --batch 32 --resume "$WORK/s.ckpt.0" >/dev/null 2>"$WORK/resume.log" || rc=$?
expect_exit 65 "$rc" "shard 0 resuming a momentum of 3e38"
one_line "$WORK/resume.log" "s.ckpt.0: optimizer state value 0 is 3e+38, beyond --resume-max-value" "shard 0"
# With the bound off on both, shard 1's slice at 3e38 makes the whole
# model's first loss NaN: shard 0 stops the run (65) and shard 1 with it.
cp "$WORK/good.ckpt.0" "$WORK/s.ckpt.0"
craft_checkpoint "$WORK/good.ckpt.1" "$WORK/s.ckpt.1" params=3e38
shards_run s 1 --max-iterations 2000 --resume-max-value 0 -- --resume-max-value 0
wait_for "$SERVER_PID" 60
expect_exit 65 "$RC" "shard 0 evaluating a model that overflows"
one_line "$WORK/server.log" "s.ckpt.0: the model resumed has a loss of .* on the test set (iteration [0-9]*)" "sharded"
wait_for "$SHARD_PID" 30
echo "ok: sharded, each shard refuses its own file beyond the bound; an overflowing slice stops the run"
