# A joined worker whose every push is broken (a float short, NaN, Inf, a
# misframed payload, a header lying about the size; streamed: a chunk out of
# order, with NaN, or a float short) is refused push by push;
# its steps still count so BSP's barrier never stalls, the model is never
# touched by its data, and the real worker trains the model to the target.
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 4000 --eval-every 25
"$TEST_BIN/dmlps-test-peer" bad-worker "$ENDPOINT" >"$WORK/peer.out" 2>"$WORK/peer.log" &
peer=$!
CHILDREN+=("$peer")
start_worker good
good=$WORKER_PID
wait_for "$SERVER_PID" 300
rc=$RC
expect_exit 0 "$rc" "dmlps-server with a bad worker"
wait_for "$peer" 30
expect_exit 0 "$RC" "bad worker (was it stopped and refused?)"
wait_for "$good" 30
expect_exit 0 "$RC" "good worker"
for why in "NaN or infinite" "not a whole number of floats" "parameters, the model has" "floats, expected" \
  "chunk 1 contains NaN or infinite values; that chunk is left out" "expected chunk 1 of 4" \
  "chunk 2: .* floats, expected"; do
  grep -q -- "$why" "$WORK/server.log" || fail "no refusal mentioning '$why'"
done
grep -q "pushes refused" "$WORK/peer.out" || fail "the bad worker was not stopped"
echo "ok: $(cat "$WORK/peer.out"); accuracy $(last_accuracy)"
