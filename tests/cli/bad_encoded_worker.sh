# Under --push-codec int8 a joined worker whose every encoded push is broken
# (a byte short, dense, another codec, a NaN scale, a header lying about its
# bytes, chunks announced, a scale out of range) is refused push by push,
# never crashing the server or touching the model; its steps still count,
# and the real worker trains the model to the target. The peer's first model
# comes whole and the later ones as encoded changes (--pull-codec int8).
. "$(dirname "$0")/lib.sh"
start_server --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 4000 --eval-every 25 \
  --push-codec int8 --pull-codec int8
"$TEST_BIN/dmlps-test-peer" bad-encoded-worker "$ENDPOINT" >"$WORK/peer.out" 2>"$WORK/peer.log" &
peer=$!
CHILDREN+=("$peer")
start_worker good
good=$WORKER_PID
wait_for "$SERVER_PID" 300
expect_exit 0 "$RC" "dmlps-server with a bad encoded worker"
wait_for "$peer" 30
expect_exit 0 "$RC" "bad encoded worker (was it stopped and refused?)"
wait_for "$good" 30
expect_exit 0 "$RC" "good worker"
for why in "one frame of" "push is dense; this job's pushes are encoded in int8" \
  "push is encoded in 'fp16'" "int8: " "an encoded push comes inline, not in chunks"; do
  grep -q -- "$why" "$WORK/server.log" || fail "no refusal mentioning '$why'"
done
grep -Eq "pushes refused, [1-9][0-9]* models encoded" "$WORK/peer.out" ||
  fail "the bad worker was not stopped, or got no encoded model: $(cat "$WORK/peer.out")"
echo "ok: $(cat "$WORK/peer.out"); accuracy $(last_accuracy)"
