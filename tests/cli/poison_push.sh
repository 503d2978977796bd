# A joined worker whose first push carries 64 samples of values 1e37 (finite,
# but their weighted sum overflows a float) and whose second claims a million
# samples: the first update is refused whole and the model stays finite, the
# second push is refused for its weight, and the real worker still trains
# the model to the target.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy bsp --batch 64 --target-accuracy 0.80 --max-iterations 4000 \
  --eval-every 25
"$TEST_BIN/dmlps-hostile-worker" poison "$ENDPOINT" 280 \
  >"$WORK/peer.out" 2>"$WORK/peer.log" &
peer=$!
CHILDREN+=("$peer")
start_worker good
good=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server with a poisoning worker"
wait_for "$peer" 30
expect_exit 0 "$RC" "poisoning worker (was it stopped?)"
wait_for "$good" 30
expect_exit 0 "$RC" "good worker"
grep -q "update 1 refused: it would make the model non-finite" "$WORK/server.log" ||
  fail "the overflowing update was not refused"
grep -q "push claims 1000000 samples, more than the 64 it was given" "$WORK/server.log" ||
  fail "the overweight push was not refused"
grep -q "reached accuracy" "$WORK/server.log" || fail "the model did not reach the target"
echo "ok: $(cat "$WORK/peer.out"); accuracy $(last_accuracy)"
