# Under token scheduling a straggler profile's delays come once an
# iteration, as under the other policies: with --round-robin-ms, in
# iteration t only the worker of rank t mod N sleeps, however many tokens
# each worker trains in it (docs/algorithms-stragglers.md, "Emulating heterogeneity").
. "$(dirname "$0")/lib.sh"
start_server --workers 4 --policy token --batch 64 --token-size 16 --model softmax \
  --max-iterations 20
pids=()
for r in 0 1 2 3; do
  start_worker "worker-$r" --round-robin-ms 40
  pids+=("$WORKER_PID")
done
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server"
for pid in "${pids[@]}"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "dmlps-worker"
done
# 20 iterations: each rank is the straggler of 5, 40 ms each: 0.2 s. A delay
# drawn once a token would give each worker about one a token of its turn.
for r in 0 1 2 3; do
  straggle=$(sed -n "s/.*worker $r: .*straggle \([0-9.]*\) s.*/\1/p" "$WORK/server.log")
  [ -n "$straggle" ] || fail "no totals for worker $r in the server's log"
  awk -v s="$straggle" 'BEGIN { exit !(s >= 0.15 && s <= 0.25) }' ||
    fail "worker $r straggled $straggle s, not 5 x 40 ms"
done
echo "ok"
