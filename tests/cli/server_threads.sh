# dmlps-server --threads: one worker trains mlp:512 (1.6 MB, two chunks of
# the model) under BSP; with 2 threads the server's sums and steps are bit
# for bit those of 1 thread, so the run ends at the same evaluation.
. "$(dirname "$0")/lib.sh"

# train THREADS: 40 iterations; the last evaluation's iteration, accuracy and
# loss go to $WORK/final-THREADS.
train() {
  start_server --workers 1 --policy bsp --model mlp:512 --max-iterations 40 --eval-every 20 \
    --threads "$1"
  start_worker "worker-$1"
  local worker=$WORKER_PID
  wait_for "$SERVER_PID" 120
  expect_exit 0 "$RC" "dmlps-server --threads $1"
  wait_for "$worker" 30
  expect_exit 0 "$RC" "dmlps-worker against --threads $1"
  tail -n 1 "$WORK/server.tsv" | cut -f 2-4 >"$WORK/final-$1"
  cat "$WORK/final-$1"
}

train 1
train 2
[ "$(cut -f 1 "$WORK/final-1")" = 40 ] || fail "the last evaluation is not of iteration 40"
cmp -s "$WORK/final-1" "$WORK/final-2" ||
  fail "1 and 2 threads end apart: $(cat "$WORK/final-1") vs $(cat "$WORK/final-2")"
echo "ok: 1 and 2 server threads end at the same evaluation"
