# Under every policy, kill -9 one of 4 workers mid-run: the server declares
# it lost as its connection closes, long before --worker-timeout (30 s)
# would see its silence, the policy goes on with the other three
# (nothing waits for the lost one), and the run reaches the target. One line
# per policy: accuracy reached, iteration of the kill and of the target.
. "$(dirname "$0")/lib.sh"
common=(--workers 4 --model softmax --batch 32 --lr 0.02 --target-accuracy 0.79 --eval-every 10
        --max-iterations 4000 --max-seconds 100 --heartbeat-ms 100 --worker-timeout 30)
# Steps of 12 ms or more: the run to the target goes on after the kill,
# even under asp, whose pushes each count.
wargs=(--heartbeat-ms 100 --delay-ms 12)
for policy in ${POLICIES:-bsp asp ssp backup wbsp wbsp-overlap abps lbbsp token}; do
  extra=()
  case $policy in
    abps) extra=(--chunk 8) ;;
    token) extra=(--token-size 16) ;;
  esac
  start_server "${common[@]}" --policy "$policy" "${extra[@]}" --report "$WORK/report"
  pids=()
  for r in 0 1 2 3; do
    start_worker "worker-$r" "${wargs[@]}"
    pids+=("$WORKER_PID")
  done
  wait_iteration 20 60
  killed_at=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
  kill -9 "${pids[3]}"
  wait_for "$SERVER_PID" 120
  expect_exit 0 "$RC" "dmlps-server under $policy with a worker killed"
  for r in 0 1 2; do
    wait_for "${pids[$r]}" 30
    expect_exit 0 "$RC" "worker $r under $policy"
  done
  wait "${pids[3]}" 2>/dev/null || true
  # Lost as its connection closed, or as a reply to a pull it sent just
  # before the kill found the connection gone.
  grep -qE "lost worker .*(its connection closed|does not read its replies \(send failed: Host unreachable\)); going on with 3 live workers" \
    "$WORK/server.log" || fail "$policy: the loss was not reported"
  [ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "$policy: target not reached"
  [ "$(report_value "$WORK/report" workers_lost)" = 1 ] || fail "$policy: workers_lost is not 1"
  target_at=$(report_value "$WORK/report" iterations_to_target)
  [ "$target_at" -gt "$killed_at" ] || fail "$policy: the target was reached before the kill"
  echo "$policy: accuracy $(report_value "$WORK/report" accuracy), killed at iteration" \
    "$killed_at, target at iteration $target_at"
done
